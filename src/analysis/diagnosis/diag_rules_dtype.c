/* silent-upcast (SPEC §5.3): the parameters are bf16 or f16, but the
 * largest buffers at the heap peak are f32, made by one source line.  A
 * Python/NumPy float64 scalar or an f32 constant in that line promotes the
 * computation (x / np.sqrt(d) with x bf16 gives f32), and everything
 * computed from it after stays f32: in the compute dtype those buffers
 * would take half. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/diagnosis/diag_priv.h"
#include "analysis/paths.h"
#include "common/alloc.h"

static bool is_temp(const xpf_plan_peak *r)
{
	return r->kind == XPF_KIND_TEMP && r->buffer && r->buffer->instr;
}

static bool is_f32(const xpf_plan_peak *r) { return strcmp(r->buffer->dtype, "f32") == 0; }

static int cmp_source(const void *a, const void *b)
{
	const xpf_plan_peak *x = *(const xpf_plan_peak *const *)a,
			    *y = *(const xpf_plan_peak *const *)b;
	int c = strcmp(x->buffer->instr->source, y->buffer->instr->source);
	return c ? c : (x > y) - (x < y);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The source lines where the forward pass converts to f32, sorted. */
static const char **upcast_lines(const xpf_plan *p, size_t *n)
{
	const char **v = xpf_malloc((p->ninstrs ? p->ninstrs : 1) * sizeof *v);
	*n = 0;
	for (size_t i = 0; i < p->ninstrs; i++) {
		const xpf_plan_instr *in = &p->instrs[i];
		if (strcmp(in->opcode, "convert") == 0 && strcmp(in->dtype, "f32") == 0 &&
		    in->source[0] && strstr(in->op_name, "jvp(") &&
		    !strstr(in->op_name, "transpose("))
			v[(*n)++] = in->source;
	}
	xpf_qsort(v, *n, sizeof *v, cmp_str);
	return v;
}

/* The line of the f32 temp buffers at the heap peak (sorted by source, not
 * compared pairwise: a big module has tens of thousands of rows): among
 * the lines where the forward pass converts to f32, the one with the most
 * f32 bytes.  A line that makes f32 without a convert does so from f32
 * operands (the promotion was earlier) or on purpose (a dot's
 * preferred_element_type).  `all`: the f32 temp bytes at the peak, from
 * every line. */
struct line {
	const char *source;
	uint64_t f32, all;
	size_t count, all_count;
	const xpf_plan_peak *largest;
};

static struct line f32_line(const xpf_plan *p)
{
	struct line best = { 0 };
	size_t nup;
	const char **up = upcast_lines(p, &nup);
	const xpf_plan_peak **r = xpf_malloc((p->npeak ? p->npeak : 1) * sizeof *r);
	size_t n = 0;
	for (size_t i = 0; i < p->npeak; i++)
		if (is_temp(&p->peak[i])) {
			r[n++] = &p->peak[i];
			if (is_f32(&p->peak[i])) {
				best.all += p->peak[i].bytes;
				best.all_count++;
			}
		}
	xpf_qsort(r, n, sizeof *r, cmp_source);
	for (size_t a = 0, b; a < n; a = b) {
		const char *src = r[a]->buffer->instr->source;
		struct line l = { .source = src };
		bool converts = nup && bsearch(&src, up, nup, sizeof *up, cmp_str) != NULL;
		for (b = a; b < n && strcmp(r[b]->buffer->instr->source, src) == 0; b++) {
			if (!is_f32(r[b]))
				continue;
			l.f32 += r[b]->bytes;
			l.count++;
			if (l.largest == NULL || r[b]->bytes > l.largest->bytes)
				l.largest = r[b];
		}
		if (converts && l.f32 > best.f32) {
			l.all = best.all;
			l.all_count = best.all_count;
			best = l;
		}
	}
	free(r);
	free(up);
	return best;
}

/* The convert to f32 at src in the forward pass: where the promotion
 * happens, or NULL. */
static const xpf_plan_instr *promotion_at(const xpf_plan *p, const char *src)
{
	for (size_t i = 0; i < p->ninstrs; i++) {
		const xpf_plan_instr *in = &p->instrs[i];
		if (strcmp(in->opcode, "convert") == 0 && strcmp(in->dtype, "f32") == 0 &&
		    strcmp(in->source, src) == 0 && strstr(in->op_name, "jvp(") &&
		    !strstr(in->op_name, "transpose("))
			return in;
	}
	return NULL;
}

void xpf_rule_upcast(xpf_diag_ctx *c)
{
	const xpf_plan *p = c->p;
	char h1[32], h2[32], h3[32], h4[32];
	if (p == NULL || !p->has_assignment || p->heap_peak_bytes == 0)
		return;
	const char *dt = xpf_diag_param_dtype(p);
	if (strcmp(dt, "bf16") != 0 && strcmp(dt, "f16") != 0)
		return;
	/* the line where the forward pass converts to f32, and its f32 bytes
	 * matter: 10% of the heap peak */
	struct line l = f32_line(p);
	if (l.largest == NULL || l.f32 < XPF_MIB || l.f32 * 10 < p->heap_peak_bytes)
		return;
	const char *src = l.source;
	const xpf_plan_peak *top = l.largest;
	size_t n = l.count, all_n = l.all_count;
	uint64_t bytes = l.f32, all = l.all;
	xpf_finding *f = xpf_diag_add(c, "silent-upcast", XPF_TAG_INFERRED, c->d->module);
	xpf_buf b = XPF_BUF_INIT;
	xpf_buf_printf(&b,
		       "the parameters are %s, but %zu f32 buffer%s at the heap peak (%s, %s%% of it) come from one line: %s, such as ",
		       dt, n, n == 1 ? "" : "s", xpf_human(bytes, h1),
		       xpf_pct(bytes, p->heap_peak_bytes, h2), src);
	xpf_diag_put_shape(&b, top->buffer->shape);
	xpf_buf_printf(&b, " (%s)", top->buffer->instr->name);
	const xpf_plan_instr *cv = promotion_at(p, src);
	if (cv)
		xpf_buf_printf(&b, "; XLA converts to f32 there (%s, %s)", cv->name, cv->op_name);
	xpf_buf_printf(&b,
		       "; a Python/NumPy float64 scalar or an f32 constant in that line promotes the computation (x / np.sqrt(d) of a %s x is f32), and what is computed from it stays f32: %s of f32 activations at the peak in all",
		       dt, xpf_human(all, h1));
	xpf_diag_text(f, &b);
	xpf_diag_num(f, "f32_bytes", bytes);
	xpf_diag_num(f, "f32_count", n);
	xpf_diag_num(f, "f32_all_bytes", all);
	xpf_diag_num(f, "f32_all_count", all_n);
	xpf_diag_str(f, "source", "%.63s", src);
	xpf_diag_str(f, "parameters_dtype", "%s", dt);
	xpf_diag_evidence(f, XPF_EV_MODULE(XPF_F_PEAK_BUFFERS_TSV), c->dir);
	xpf_diag_evidence(f, XPF_EV_MODULE(XPF_F_INSTRUCTIONS_TSV), c->dir);
	xpf_diag_addfix_range(c, f, bytes / 2, all / 2, p->need_bytes,
			      "none in memory; check that the computation is accurate enough in the lower precision",
			      "keep that line in %s: scale by a Python float or a value of x's dtype (x / math.sqrt(d), x * jnp.asarray(d ** -0.5, x.dtype)), not a NumPy float64 or an f32 array, saving %s to %s: its f32 buffers at the peak halve (%s -> %s), and so does what the promotion spread to after it",
			      dt, xpf_human(bytes / 2, h1), xpf_human(all / 2, h2),
			      xpf_human(bytes, h3), xpf_human(bytes / 2, h4));
}
