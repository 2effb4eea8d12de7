/* What fits (SPEC §5.3): the step's batch and sequence length, the bytes
 * at the heap peak that scale with them, and the need at a smaller batch
 * or sequence, for "the largest batch that fits" and for the fixes that
 * shrink either.
 *
 * The batch is the leading dimension of the step's data inputs: the entry
 * parameters that are neither donated nor matched by an output of their
 * shape and dtype (a training step donates its state or returns it
 * updated, and returns gradients shaped like its weights), leaving out
 * scalars.  The leading dimension that holds the most of their bytes is
 * taken when it holds at least 3/4 of them (a PRNG key u32[2] beside the
 * batch does not hide it); otherwise no batch is named.  The sequence
 * length is the second dimension of such an input when it is an integer
 * [B, S] array (token ids) or any [B, S, D] array.
 *
 * What scales: the activations at the heap peak, the temp buffers that
 * are not shaped like a weight (a gradient, an optimizer temporary or a
 * converted copy of a weight stays at any batch); those whose last two
 * dimensions are S (attention scores, B*H*S*S) scale with S squared.
 * The need at a batch b < B is a range: at most the need less the
 * forward-kept activations' share (the backward pass's working set at the
 * peak kept as it is: XLA schedules a smaller step differently), at least
 * the need less every activation's share (which XLA's own
 * rematerialization approaches when it squeezes a step toward its memory
 * limit).  Likewise for a sequence length s < S. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/diagnosis/diag_priv.h"

/* The leading dimension of a data input, else 0. */
static uint64_t lead_of(const xpf_plan_param *x)
{
	uint64_t d[8];
	return xpf_diag_shape_dims(x->shape, d) >= 1 ? d[0] : 0;
}

/* Is parameter x data: neither donated nor returned in its shape? */
static bool is_data(const xpf_plan *p, const xpf_plan_param *x)
{
	uint64_t d[8];
	if (x->donated || xpf_diag_shape_dims(x->shape, d) < 1)
		return false;
	for (size_t i = 0; i < p->noutputs; i++)
		if (p->outputs[i].matches == x)
			return false;
	return true;
}

static bool is_integer(const char *dtype)
{
	return dtype[0] == 's' || dtype[0] == 'u' || strcmp(dtype, "pred") == 0;
}

/* B, and S where an input shows it; the input named in the text. */
static void find_batch(const xpf_plan *p, xpf_diag_scale *s)
{
	uint64_t all = 0, best = 0;
	for (size_t i = 0; i < p->nparams; i++)
		if (is_data(p, &p->params[i]))
			all += p->params[i].bytes;
	for (size_t i = 0; i < p->nparams; i++) {
		const xpf_plan_param *x = &p->params[i];
		uint64_t lead = lead_of(x), bytes = 0;
		if (!is_data(p, x) || lead < 1 || lead == s->batch)
			continue;
		for (size_t j = 0; j < p->nparams; j++)
			if (is_data(p, &p->params[j]) && lead_of(&p->params[j]) == lead)
				bytes += p->params[j].bytes;
		if (bytes > best) {
			best = bytes;
			s->batch = lead;
			s->input = x;
		}
	}
	if (best == 0 || best < all / 4 * 3) {
		s->batch = 0;
		s->input = NULL;
		return;
	}
	for (size_t i = 0; i < p->nparams; i++) {
		const xpf_plan_param *x = &p->params[i];
		uint64_t d[8];
		int n = xpf_diag_shape_dims(x->shape, d);
		if (is_data(p, x) && d[0] == s->batch &&
		    ((n == 2 && is_integer(x->dtype)) || n == 3) && d[1] >= 2) {
			s->seq = d[1];
			s->seq_input = x;
			return;
		}
	}
}

/* Is a temp row shaped like a weight (a parameter that is not data)? */
static bool weight_shaped(const xpf_plan *p, const char *shape)
{
	uint64_t a[8], b[8];
	int n = xpf_diag_shape_dims(shape, a);
	for (size_t i = 0; i < p->nparams; i++) {
		if (is_data(p, &p->params[i]) || xpf_diag_shape_dims(p->params[i].shape, b) != n)
			continue;
		if (memcmp(a, b, (size_t)n * sizeof *a) == 0)
			return true;
	}
	return false;
}

void xpf_diag_find_scale(const xpf_plan *p, xpf_diag_scale *s)
{
	memset(s, 0, sizeof *s);
	s->need = p->need_bytes;
	find_batch(p, s);
	for (size_t i = 0; i < p->npeak; i++) {
		const xpf_plan_peak *r = &p->peak[i];
		const char *shape = r->buffer ? r->buffer->shape : "";
		if (r->kind != XPF_KIND_TEMP || r->buffer == NULL || weight_shaped(p, shape))
			continue;
		bool sq = xpf_diag_square_seq(shape, s->seq);
		s->act += r->bytes;
		s->act_sq += sq ? r->bytes : 0;
		if (r->role == XPF_PLAN_ROLE_FORWARD) {
			s->fwd += r->bytes;
			s->fwd_sq += sq ? r->bytes : 0;
		}
	}
}

void xpf_diag_scale_saving(const xpf_diag_scale *s, bool seq, uint64_t num, uint64_t den,
			   uint64_t *lo, uint64_t *hi)
{
	long double f = (long double)num / (long double)den, f2 = seq ? f * f : f;
	long double l =
		(long double)s->fwd_sq * (1 - f2) + (long double)(s->fwd - s->fwd_sq) * (1 - f);
	long double h =
		(long double)s->act_sq * (1 - f2) + (long double)(s->act - s->act_sq) * (1 - f);
	*lo = (uint64_t)l;
	*hi = (uint64_t)h;
}

/* The largest size (a multiple of unit below full) whose need fits cap,
 * at most (*hi) and at least (*lo); 0 when none does. */
static void largest(const xpf_diag_scale *s, bool seq, uint64_t full, uint64_t unit, uint64_t cap,
		    uint64_t *lo, uint64_t *hi)
{
	*lo = *hi = 0;
	for (uint64_t v = (full - 1) / unit * unit; v >= unit; v -= unit) {
		uint64_t a, b;
		xpf_diag_scale_saving(s, seq, v, full, &a, &b);
		if (*hi == 0 && xpf_sub0(s->need, b) <= cap)
			*hi = v;
		if (*lo == 0 && xpf_sub0(s->need, a) <= cap)
			*lo = v;
		if (*lo)
			break;
	}
}

void xpf_diag_largest_batch(const xpf_diag_scale *s, uint64_t cap, uint64_t *lo, uint64_t *hi)
{
	*lo = *hi = 0;
	if (s->batch >= 2)
		largest(s, false, s->batch, 1, cap, lo, hi);
}

void xpf_diag_largest_seq(const xpf_diag_scale *s, uint64_t cap, uint64_t *lo, uint64_t *hi)
{
	/* steps of S/16 rounded down to a power of two (128 at S 2048) */
	uint64_t unit = 1;
	*lo = *hi = 0;
	if (s->seq < 2)
		return;
	while (unit * 2 <= s->seq / 16)
		unit *= 2;
	largest(s, true, s->seq, unit, cap, lo, hi);
}

/* "tokens s32[4,2048]" */
static void put_input(xpf_buf *b, const xpf_plan_param *x)
{
	if (x->instr && x->instr->op_name[0])
		xpf_buf_printf(b, "%s ", x->instr->op_name);
	xpf_diag_put_shape(b, x->shape);
}

/* least: the need at the smallest size, by every activation's share */
static void put_range(xpf_buf *b, const char *what, uint64_t lo, uint64_t hi, uint64_t now,
		      const char *dim, const xpf_plan_param *in, uint64_t least)
{
	char h1[32];
	xpf_buf_printf(b, "; largest %s that fits: ", what);
	if (hi == 0)
		xpf_buf_printf(b,
			       "none smaller: even the smallest would need about %s, by these estimates",
			       xpf_human(least, h1));
	else if (lo == hi)
		xpf_buf_printf(b, "%llu", (unsigned long long)hi);
	else if (lo == 0)
		xpf_buf_printf(b, "at most %llu", (unsigned long long)hi);
	else
		xpf_buf_printf(b, "%llu to %llu", (unsigned long long)lo, (unsigned long long)hi);
	xpf_buf_printf(b, " (this step's: %llu, the %s dimension of ", (unsigned long long)now, dim);
	put_input(b, in);
	xpf_buf_adds(b, ")");
	if (hi > lo)
		xpf_buf_printf(b,
			       "; %llu only if XLA's own rematerialization squeezes the step, as it does near its memory limit",
			       (unsigned long long)hi);
}

void xpf_diag_what_fits(const xpf_diag_ctx *c, xpf_finding *f, xpf_buf *b)
{
	const xpf_plan *p = c->p;
	uint64_t cap = c->d->capacity_bytes, lo, hi, lo0, hi0;
	xpf_diag_scale s;
	if (p == NULL || cap == 0 || p->need_bytes <= cap)
		return;
	xpf_diag_find_scale(p, &s);
	if (s.batch >= 2) {
		xpf_diag_largest_batch(&s, cap, &lo, &hi);
		xpf_diag_scale_saving(&s, false, 1, s.batch, &lo0, &hi0);
		put_range(b, "batch", lo, hi, s.batch, "leading", s.input, xpf_sub0(s.need, hi0));
		xpf_diag_num(f, "batch", s.batch);
		xpf_diag_num(f, "largest_batch_min", lo);
		xpf_diag_num(f, "largest_batch_max", hi);
	}
	if (s.seq >= 2) {
		xpf_diag_largest_seq(&s, cap, &lo, &hi);
		xpf_diag_scale_saving(&s, true, 1, s.seq, &lo0, &hi0);
		put_range(b, "sequence length", lo, hi, s.seq, "second", s.seq_input,
			  xpf_sub0(s.need, hi0));
		xpf_diag_num(f, "sequence", s.seq);
		xpf_diag_num(f, "largest_sequence_min", lo);
		xpf_diag_num(f, "largest_sequence_max", hi);
	}
}
