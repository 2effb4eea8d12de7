/* What the runtime shows holding memory (SPEC §5.2): growth-per-execution
 * (a reference kept across steps), foreign-live-arrays (arrays the step
 * does not own) and compile-time-peak. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/diagnosis/diag_priv.h"
#include "analysis/paths.h"
#include "common/alloc.h"
#include "common/buf.h"

/* Is a host event name a likely holder of references (a Python container)? */
static bool holder_like(const char *name)
{
	static const char *const words[] = { "append", "extend", "insert", "setitem",
					     "list",   "dict",   NULL };
	for (int i = 0; words[i]; i++)
		if (strstr(name, words[i]))
			return true;
	return false;
}

/* "; kept each step: f32[2048,2048] of fusion.3 (train.py:40), ..." the
 * largest non-aliased outputs of p: what a leak of its outputs holds. */
static void kept_outputs(const xpf_plan *p, xpf_buf *b)
{
	const xpf_plan_output *top[3] = { NULL, NULL, NULL };
	for (size_t i = 0; p && i < p->noutputs; i++) {
		const xpf_plan_output *o = &p->outputs[i];
		if (o->alloc->is_tuple || o->buffer == NULL)
			continue;
		for (int k = 0; k < 3; k++)
			if (top[k] == NULL || o->alloc->bytes > top[k]->alloc->bytes) {
				for (int j = 2; j > k; j--)
					top[j] = top[j - 1];
				top[k] = o;
				break;
			}
	}
	char h1[32];
	for (int k = 0; k < 3 && top[k]; k++) {
		const xpf_plan_instr *in = top[k]->buffer->instr;
		xpf_buf_printf(b, "%s%s %s",
			       k ? ", " : "; kept each step, the largest: ", top[k]->shape,
			       xpf_human(top[k]->alloc->bytes, h1));
		if (in)
			xpf_buf_printf(b, " of %s%s%s%s", in->name, *in->source ? " (" : "",
				       in->source, *in->source ? ")" : "");
	}
}

static void between_text(const xpf_rt_between *bt, xpf_buf *b)
{
	size_t shown = 0;
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < bt->nrows && shown < 5; i++) {
			const xpf_rt_between_row *r = &bt->rows[i];
			if (holder_like(r->name) != (pass == 0))
				continue;
			/* the Python tracer names a builtin method $<unknown> <name> */
			bool append = strcmp(r->name, "$<unknown> append") == 0;
			xpf_buf_printf(b, "%s%s%s x%llu", shown ? ", " : "", r->name,
				       append ? " (list.append)" : "", (unsigned long long)r->count);
			shown++;
		}
	if (bt->nrows > shown)
		xpf_buf_printf(b, ", ... (%zu names)", bt->nrows);
}

/* The executions of module m on the device of execution x0 (its first
 * there), from x0 on, whose in-use at start is known: at most max. */
static size_t runs_on_device(const xpf_runtime *rt, long m, size_t x0, size_t *idx, size_t max)
{
	size_t n = 0;
	for (size_t x = x0; x < rt->nexecutions && n < max; x++) {
		const xpf_rt_execution *e = &rt->executions[x];
		if (e->module == m && e->device == rt->executions[x0].device && e->in_use_known)
			idx[n++] = x;
	}
	return n;
}

/* Does the in-use at the start of executions idx[0..n) rise at every
 * step by about the same amount (each step within 5% of the mean, the
 * mean at least 1 MiB)?  *mean: the mean step. */
static bool steady_growth(const xpf_runtime *rt, const size_t *idx, size_t n, uint64_t *mean)
{
	bool rising = true;
	uint64_t total = 0;
	for (size_t i = 1; i < n && rising; i++) {
		uint64_t a = rt->executions[idx[i - 1]].in_use_at_start_bytes;
		uint64_t z = rt->executions[idx[i]].in_use_at_start_bytes;
		rising = z > a;
		total += z - a;
	}
	if (!rising)
		return false;
	*mean = total / (n - 1);
	bool steady = *mean >= XPF_MIB;
	for (size_t i = 1; i < n && steady; i++) {
		uint64_t r = rt->executions[idx[i]].in_use_at_start_bytes -
			     rt->executions[idx[i - 1]].in_use_at_start_bytes;
		uint64_t dev = r > *mean ? r - *mean : *mean - r;
		steady = dev * 20 <= *mean;
	}
	return steady;
}

/* "; host events between the last two executions: ..." of module m (the
 * diagnosis has them already when m is the focus module). */
static void growth_between(const xpf_diag_ctx *c, long m, size_t from, size_t to, xpf_buf *b)
{
	xpf_rt_between bt = { 0 };
	xpf_error e = { 0 };
	bool have_bt = false;
	const xpf_rt_between *fb = &c->d->between;
	if (fb->module == m && fb->from_execution == (long)from && fb->to_execution == (long)to) {
		bt = *fb;
		have_bt = true;
	} else if (xpf_runtime_between(c->h, c->rt, from, to, &bt, &e) == XPF_OK) {
		have_bt = true;
	} else {
		memset(&bt, 0, sizeof bt);
	}
	if (have_bt && bt.nrows) {
		xpf_buf_adds(b, "; host events between the last two executions: ");
		between_text(&bt, b);
	}
	if (have_bt && bt.rows != fb->rows)
		xpf_rt_between_release(&bt);
}

static void growth_fixes(xpf_diag_ctx *c, xpf_finding *f, uint64_t kept, uint64_t mean)
{
	char h1[32];
	xpf_diag_addfix(c, f, kept, 0,
			"none; keep only what you need (e.g. a Python float via .item())",
			"drop the reference that keeps each step's outputs (the container filled between steps: fetch or reduce inside the loop, not after it), freeing the %s kept so far; confirm with len(jax.live_arrays()) growing per step",
			xpf_human(kept, h1));
	xpf_diag_addfix(c, f, kept, 0, "a reduction inside the jitted step",
			"reduce inside the step (return a norm or a scalar, not the whole tree), so nothing of size %s survives the step",
			xpf_human(mean, h1));
	xpf_diag_addfix(c, f, kept, 0, "a device-to-host copy per step",
			"move what must be kept to the host with jax.device_get, freeing %s of device memory",
			xpf_human(kept, h1));
	xpf_diag_addfix(c, f, 0, 0, "none; it only delays the OOM",
			"a bigger pool (XLA_PYTHON_CLIENT_MEM_FRACTION) only delays the OOM by (extra bytes) / %s executions",
			xpf_human(mean, h1));
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The median rise of in use from one execution to the next: what one step
 * keeps, without a first step's one-off allocation (a PRNG key) that the
 * mean would spread over every step. */
static uint64_t median_rise(const xpf_runtime *rt, const size_t *idx, size_t n)
{
	uint64_t *r = xpf_calloc(n, sizeof *r);
	for (size_t i = 1; i < n; i++)
		r[i - 1] = rt->executions[idx[i]].in_use_at_start_bytes -
			   rt->executions[idx[i - 1]].in_use_at_start_bytes;
	xpf_qsort(r, n - 1, sizeof *r, u64_cmp);
	uint64_t med = r[(n - 1) / 2];
	free(r);
	return med;
}

/* The finding for module m, whose executions idx[0..n) grow steadily. */
static void growth_finding(xpf_diag_ctx *c, size_t m, const size_t *idx, size_t n)
{
	const xpf_runtime *rt = c->rt;
	uint64_t mean = median_rise(rt, idx, n); /* per execution */
	char h1[32], h2[32], h3[32], h4[32], h5[32];
	const xpf_rt_execution *first = &rt->executions[idx[0]];
	const xpf_rt_execution *last = &rt->executions[idx[n - 1]];
	const xpf_plan *p = xpf_diag_plan(c->h, (long)m);
	uint64_t na = p && p->has_assignment ? p->non_aliased_outputs_bytes : 0;
	xpf_finding *f = xpf_diag_add(c, "growth-per-execution", XPF_TAG_MEASURED, (long)m);
	xpf_buf b = XPF_BUF_INIT;
	xpf_buf_printf(&b,
		       "in use at the start of %s's executions %u..%u on device %d grows %s -> %s, +%s per execution",
		       xpf_capture_module(c->h->cap, m)->name, first->module_execution,
		       last->module_execution, first->device,
		       xpf_human(first->in_use_at_start_bytes, h1),
		       xpf_human(last->in_use_at_start_bytes, h2), xpf_human(mean, h3));
	if (na) {
		double ratio = (double)mean / (double)na;
		xpf_buf_printf(&b, "; that is %.2fx the non-aliased outputs (%s)", ratio,
			       xpf_human(na, h4));
		xpf_diag_str(f, "ratio_to_non_aliased_outputs", "%.2f", ratio);
		if (ratio > 0.95 && ratio < 1.05) {
			xpf_buf_adds(&b,
				     ": each step's outputs stay alive (a reference kept across steps)");
			kept_outputs(p, &b);
		}
	}
	growth_between(c, (long)m, idx[n - 2], idx[n - 1], &b);
	uint64_t kept = last->in_use_at_start_bytes - first->in_use_at_start_bytes;
	uint64_t cap = c->d->capacity_bytes;
	if (cap && p && p->has_assignment) {
		uint64_t left = xpf_sub0(cap, last->in_use_at_start_bytes);
		left = xpf_sub0(left, p->non_aliased_outputs_bytes + p->temp_bytes);
		xpf_buf_printf(&b,
			       "; at this rate the remaining %s of the pool lasts about %llu more executions",
			       xpf_human(left, h5), (unsigned long long)(left / mean));
	}
	xpf_diag_text(f, &b);
	xpf_diag_num(f, "growth_bytes", mean);
	xpf_diag_num(f, "non_aliased_outputs_bytes", na);
	xpf_diag_num(f, "first_in_use_bytes", first->in_use_at_start_bytes);
	xpf_diag_num(f, "last_in_use_bytes", last->in_use_at_start_bytes);
	xpf_diag_num(f, "kept_bytes", kept);
	xpf_diag_num(f, "executions", n);
	xpf_diag_evidence(f, XPF_EV_RUNTIME(XPF_F_EXECUTIONS_TSV));
	xpf_diag_evidence(f, XPF_EV_RUNTIME(XPF_F_BETWEEN_TSV));
	xpf_diag_evidence(f, XPF_EV_EXECUTION(XPF_F_LIVE_TSV), last->n);
	growth_fixes(c, f, kept, mean);
}

/* Each module's first device whose executions (three or more) start with
 * steadily more in use. */
void xpf_rule_growth(xpf_diag_ctx *c)
{
	const xpf_runtime *rt = c->rt;
	size_t idx[4096];

	for (size_t m = 0; m < c->h->nmodules; m++) {
		bool done = false;
		for (size_t dv = 0; dv < rt->nexecutions && !done; dv++) {
			/* Each (module, device) pair once: start from its first execution. */
			const xpf_rt_execution *e0 = &rt->executions[dv];
			if (e0->module != (long)m || e0->prev >= 0)
				continue;
			size_t n = runs_on_device(rt, (long)m, dv, idx, 4096);
			uint64_t mean;
			if (n < 3 || !steady_growth(rt, idx, n, &mean))
				continue;
			done = true;
			growth_finding(c, m, idx, n);
		}
	}
}

/* "f32[8,128]{1,0}" and "f32[8,128]" name the same array. */
static bool same_shape_text(const char *a, const char *b)
{
	size_t na = strcspn(a, "{"), nb = strcspn(b, "{");
	return na == nb && strncmp(a, b, na) == 0;
}

static bool param_block(const xpf_plan *p, const xpf_rt_block *bl, bool *used)
{
	for (size_t i = 0; i < p->nparams; i++) {
		const xpf_plan_param *pp = &p->params[i];
		if (used[i] || pp->shape == NULL || !same_shape_text(pp->shape, bl->shape) ||
		    bl->bytes < pp->bytes)
			continue;
		used[i] = true;
		return true;
	}
	return false;
}

struct origin_sum {
	const char *text;
	uint64_t bytes;
	size_t blocks;
};

static int origin_cmp(const void *a, const void *b)
{
	const struct origin_sum *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return strcmp(x->text, y->text);
}

/* What was in use when the focus execution started, by holder. */
struct holders {
	uint64_t own;          /* outputs of the module's own earlier executions */
	struct origin_sum *os; /* the rest (not the module's parameters) by origin */
	size_t nos;
	long *mods;           /* other modules whose outputs were live */
	char (*modtext)[300]; /* "outputs of <module>": their origin texts */
	size_t nmods;
	uint64_t mod_out; /* the bytes of those outputs */
};

static void holders_free(struct holders *w)
{
	free(w->modtext);
	free(w->mods);
	free(w->os);
}

/* Outputs of another module's executions: one origin per module, so that
 * an eager program's many small results add up. */
static const char *module_origin(const xpf_diag_ctx *c, struct holders *w, long om)
{
	size_t j = 0;
	while (j < w->nmods && w->mods[j] != om)
		j++;
	if (j == w->nmods) {
		w->mods[j] = om;
		snprintf(w->modtext[j], sizeof w->modtext[j], "outputs of %s",
			 xpf_capture_module(c->h->cap, (size_t)om)->name);
		w->nmods++;
	}
	return w->modtext[j];
}

static void add_origin(struct holders *w, const char *text, uint64_t bytes)
{
	size_t k = 0;
	while (k < w->nos && strcmp(w->os[k].text, text) != 0)
		k++;
	if (k == w->nos) {
		w->os[k].text = text;
		w->nos++;
	}
	w->os[k].bytes += bytes;
	w->os[k].blocks++;
}

/* The parameter bytes no live block showed: arrays the step takes that
 * were put on the device before the capture started. */
static uint64_t unseen_params(const xpf_plan *p, const bool *used)
{
	uint64_t n = 0;
	for (size_t i = 0; i < p->nparams; i++)
		if (!used[i])
			n += p->params[i].bytes;
	return n;
}

/* What was in use before the capture started, less the step's own
 * arguments among it: keeping those on the host saves nothing (issue 37). */
static void add_before(struct holders *w, const xpf_rt_block *bl, uint64_t params)
{
	uint64_t rest = xpf_sub0(bl->bytes, params);
	if (rest)
		add_origin(w, bl->origin_text ? bl->origin_text : "?", rest);
}

/* The live blocks by holder (origins sorted, largest first). */
static void collect_holders(const xpf_diag_ctx *c, const xpf_rt_block *blocks, size_t nb,
			    struct holders *w)
{
	const xpf_runtime *rt = c->rt;
	const xpf_plan *p = c->p;
	memset(w, 0, sizeof *w);
	w->os = xpf_calloc(nb ? nb : 1, sizeof *w->os);
	w->mods = xpf_calloc(nb ? nb : 1, sizeof *w->mods);
	w->modtext = xpf_calloc(nb ? nb : 1, sizeof *w->modtext);
	bool *used = xpf_calloc(p && p->nparams ? p->nparams : 1, sizeof *used);
	const xpf_rt_block *before = NULL;
	for (size_t i = 0; i < nb; i++) {
		const xpf_rt_block *bl = &blocks[i];
		if (bl->origin == XPF_ORIGIN_BEFORE) {
			before = bl;
			continue;
		}
		long om = bl->origin == XPF_ORIGIN_OUTPUTS && bl->execution >= 0 ?
				  rt->executions[bl->execution].module :
				  -1;
		if (bl->origin == XPF_ORIGIN_OUTPUTS && bl->execution >= 0 && om == c->d->module) {
			w->own += bl->bytes;
			continue;
		}
		/* A block shaped like one of the module's parameters is that
		 * parameter (each used once): not a foreign origin. */
		if (p && bl->shape && param_block(p, bl, used))
			continue;
		const char *t = bl->origin_text ? bl->origin_text : "?";
		if (om >= 0) {
			w->mod_out += bl->bytes;
			t = module_origin(c, w, om);
		}
		add_origin(w, t, bl->bytes);
	}
	if (before)
		add_before(w, before, p ? unseen_params(p, used) : 0);
	free(used);
	xpf_qsort(w->os, w->nos, sizeof *w->os, origin_cmp);
}

/* How many modules ran at all. */
static size_t modules_that_ran(const xpf_diag_ctx *c)
{
	const xpf_runtime *rt = c->rt;
	size_t ran = 0;
	for (size_t m = 0; m < c->h->nmodules; m++)
		for (size_t k = 0; k < rt->nexecutions; k++)
			if (rt->executions[k].module == (long)m) {
				ran++;
				break;
			}
	return ran;
}

/* The figures of foreign-live-arrays; other: what is in use besides the
 * module's parameters, own outputs and reservation. */
struct foreign {
	uint64_t in_use, params, need, reserved, other;
	bool pushes; /* other pushes a step that fits over the pool */
};

/* The text: what was in use, its largest origins; *before: one of them
 * was allocated before the capture. */
static void foreign_text(const xpf_diag_ctx *c, const struct holders *w, const struct foreign *fo,
			 bool *before, xpf_buf *b)
{
	const xpf_rt_execution *x = &c->rt->executions[c->d->execution];
	uint64_t cap = c->d->capacity_bytes;
	char h1[32], h2[32], h3[32], h4[32], h5[32];
	xpf_buf_printf(b,
		       "when %s execution %u started, %s was in use: %s besides its parameters (%s)",
		       c->p ? c->p->module : "the module", x->module_execution,
		       xpf_human(fo->in_use, h1), xpf_human(fo->other, h2),
		       xpf_human(fo->params, h3));
	if (w->own)
		xpf_buf_printf(b, " and the outputs of its own earlier executions (%s)",
			       xpf_human(w->own, h4));
	if (fo->reserved)
		xpf_buf_printf(b, " and the program's reservation (about its need, %s)",
			       xpf_human(fo->reserved, h4));
	xpf_buf_printf(b, "; that is %s%% of the capacity %s", xpf_pct(fo->other, cap, h4),
		       xpf_human(cap, h5));
	if (fo->pushes)
		xpf_buf_adds(b, ", enough to push the step over the pool");
	xpf_buf_adds(b, "; largest origins: ");
	*before = false;
	for (size_t i = 0; i < w->nos && i < 4; i++) {
		xpf_buf_printf(b, "%s%s %s", i ? ", " : "", w->os[i].text,
			       xpf_human(w->os[i].bytes, h1));
		*before |= strstr(w->os[i].text, "before the capture") != NULL;
	}
	size_t ran = modules_that_ran(c);
	if (ran >= 10)
		xpf_buf_printf(b,
			       "; %zu modules ran (an eager or many-jit program): what holds memory is in the runtime, not in one plan",
			       ran);
	/* Many modules' results held together (an eager program keeps each
	 * op's result): say what they add up to. */
	if (w->nmods >= 2)
		xpf_buf_printf(b,
			       "; the outputs of %zu other modules' executions hold %s (%s%% of what is in use)",
			       w->nmods, xpf_human(w->mod_out, h1),
			       xpf_pct(w->mod_out, fo->in_use, h2));
}

static void foreign_fixes(xpf_diag_ctx *c, xpf_finding *f, const struct holders *w,
			  const struct foreign *fo, bool before)
{
	uint64_t need = fo->need, other = fo->other;
	char h1[32];
	uint64_t big = w->nos ? w->os[0].bytes : 0;
	if (w->nos) {
		xpf_diag_addfix(c, f, big, need ? xpf_sub0(need + other, big) : 0,
				"host-to-device traffic per step",
				"keep %s (%s) on the host and stream it in per step", w->os[0].text,
				xpf_human(big, h1));
		xpf_diag_addfix(c, f, big / 2, need ? xpf_sub0(need + other, big / 2) : 0,
				"precision of that data",
				"store %s in a smaller dtype (e.g. bf16 instead of f32: saves about %s)",
				w->os[0].text, xpf_human(big / 2, h1));
	}
	if (w->nmods >= 2 && w->mod_out * 2 >= other)
		xpf_diag_addfix(c, f, w->mod_out, need ? xpf_sub0(need + other, w->mod_out) : 0,
				"one compilation of the whole sequence; or none, if the results are no longer needed",
				"drop the results of earlier ops once used (del them, or let them go out of scope), or put the op-by-op sequence under one jax.jit so that XLA frees the intermediates inside one module: up to %s held by the outputs of %zu modules",
				xpf_human(w->mod_out, h1), w->nmods);
	xpf_diag_addfix(c, f, other, need ? need : 0, "none, if the arrays are no longer needed",
			"free the arrays that are not needed by the step (del them and drop every reference), up to %s",
			xpf_human(other, h1));
	if (before)
		xpf_diag_addfix(c, f, 0, 0, "a new capture",
				"start the profile earlier (before the data is put on the device) to name what was allocated before the capture started");
}

static void foreign_finding(xpf_diag_ctx *c, const struct holders *w, const struct foreign *fo)
{
	const xpf_diagnosis *d = c->d;
	xpf_finding *f = xpf_diag_add(c, "foreign-live-arrays", XPF_TAG_MEASURED, d->module);
	xpf_buf b = XPF_BUF_INIT;
	bool before;
	foreign_text(c, w, fo, &before, &b);
	xpf_diag_text(f, &b);
	xpf_diag_num(f, "in_use_bytes", fo->in_use);
	xpf_diag_num(f, "parameters_bytes", fo->params);
	xpf_diag_num(f, "own_outputs_bytes", w->own);
	xpf_diag_num(f, "foreign_bytes", fo->other);
	xpf_diag_num(f, "capacity_bytes", d->capacity_bytes);
	if (w->nos)
		xpf_diag_num(f, "largest_origin_bytes", w->os[0].bytes);
	if (w->nmods >= 2) {
		xpf_diag_num(f, "other_modules_outputs_bytes", w->mod_out);
		xpf_diag_num(f, "other_modules_count", w->nmods);
	}
	xpf_diag_evidence(f, XPF_EV_EXECUTION(XPF_F_LIVE_TSV), c->rt->executions[d->execution].n);
	xpf_diag_evidence(f, XPF_EV_RUNTIME(XPF_F_EXECUTIONS_TSV));
	foreign_fixes(c, f, w, fo, before);
}

/* Arrays the focus step does not own, in use when it started: a finding
 * when they take 10% of the capacity or push a step that fits over it. */
void xpf_rule_foreign(xpf_diag_ctx *c)
{
	const xpf_runtime *rt = c->rt;
	const xpf_diagnosis *d = c->d;
	const xpf_plan *p = c->p;

	if (d->execution < 0 || d->capacity_bytes == 0)
		return;
	const xpf_rt_execution *x = &rt->executions[d->execution];
	if (!x->in_use_known)
		return;
	xpf_rt_block *blocks = NULL;
	size_t nb = 0;
	xpf_error e = { 0 };
	if (xpf_runtime_live_at(rt, (size_t)d->execution, &blocks, &nb, &e) != XPF_OK)
		return;
	struct holders w;
	collect_holders(c, blocks, nb, &w);
	struct foreign fo = { .in_use = x->in_use_at_start_bytes };
	fo.params = p && p->has_assignment ? p->parameters_bytes : 0;
	fo.need = p && p->has_assignment ? p->need_bytes : 0;
	fo.other = xpf_sub0(xpf_sub0(fo.in_use, fo.params), w.own);
	/* TPU allocators count the loaded program's reservation (bytes_reserved)
	 * in use: the step's own memory, not foreign arrays. */
	fo.reserved = rt->keyed_by_index ? fo.need : 0;
	fo.other = xpf_sub0(fo.other, fo.reserved);
	/* Over the pool only counts when the step alone would fit: otherwise
	 * plan-exceeds-pool says it all. */
	fo.pushes = fo.need && fo.need <= d->capacity_bytes && fo.need + fo.other > d->capacity_bytes;
	if (fo.other != 0 && (fo.other * 10 >= d->capacity_bytes || fo.pushes))
		foreign_finding(c, &w, &fo);
	holders_free(&w);
	xpf_rt_blocks_free(blocks, nb);
}

void xpf_rule_compile_peak(xpf_diag_ctx *c)
{
	const xpf_runtime *rt = c->rt;
	const xpf_diagnosis *d = c->d;
	char h1[32], h2[32];

	if (d->allocator < 0)
		return;
	const xpf_rt_allocator *a = &rt->allocators[d->allocator];
	long first = -1;
	for (size_t x = 0; x < rt->nexecutions && first < 0; x++)
		if (rt->executions[x].allocator == d->allocator ||
		    (rt->executions[x].device == a->device && a->device >= 0))
			first = (long)x;
	if (first < 0 || a->peak_in_window_bytes == 0 ||
	    a->peak_ns >= xpf_rt_x_start_ns(&rt->executions[first]))
		return;
	uint64_t later = 0;
	for (size_t x = 0; x < rt->nexecutions; x++)
		if (rt->executions[x].allocator == d->allocator &&
		    rt->executions[x].peak_during_bytes > later)
			later = rt->executions[x].peak_during_bytes;
	xpf_finding *f = xpf_diag_add(c, "compile-time-peak", XPF_TAG_MEASURED, -1);
	xpf_buf b = XPF_BUF_INIT;
	xpf_buf_printf(&b,
		       "%s peaked at %s at %lld ns, before the first execution (%lld ns): a compile/autotune peak, not the step's",
		       a->name, xpf_human(a->peak_in_window_bytes, h1), (long long)a->peak_ns,
		       (long long)xpf_rt_x_start_ns(&rt->executions[first]));
	if (later)
		xpf_buf_printf(&b, "; the executions peak at %s", xpf_human(later, h2));
	xpf_diag_text(f, &b);
	xpf_diag_num(f, "peak_in_window_bytes", a->peak_in_window_bytes);
	xpf_diag_num(f, "executions_peak_bytes", later);
	xpf_diag_num(f, "peak_ns", (uint64_t)a->peak_ns);
	xpf_diag_evidence(f, XPF_EV_RUNTIME(XPF_F_ALLOCATORS_TSV));
	xpf_diag_evidence(f, XPF_EV_RUNTIME(XPF_F_EVENTS_TSV));
}
