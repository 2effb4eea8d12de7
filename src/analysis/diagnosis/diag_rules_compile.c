/* compile-oom (SPEC §5.2): the program ran out of memory while XLA
 * compiled a step.  XLA's GEMM autotuner allocates scratch buffers of the
 * step's shapes to try kernels; when the pool is full they fail ("Failed to
 * get configs ... Out of memory") and the compilation stops, leaving no
 * module in the capture.  What the capture holds: the compile events, the
 * autotuner's runs and allocations (runtime/compiles.tsv), what was live
 * when it began, and the earlier module of the same function, if any. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/diagnosis/diag_priv.h"
#include "analysis/paths.h"
#include "common/alloc.h"

/* The module of the same function that ran most (an earlier compile of it
 * for other shapes: the failed one is a retrace), or -1; *runs: its
 * executions. */
static long earlier_module(const xpf_diag_ctx *c, const char *fn, uint32_t *runs)
{
	const xpf_runtime *rt = c->rt;
	size_t nm = xpf_capture_nmodules(c->h->cap), len = fn ? strlen(fn) : 0;
	long best = -1;
	*runs = 0;
	for (size_t m = 0; m < nm && fn; m++) {
		const char *name = xpf_capture_module(c->h->cap, m)->name;
		if (strncmp(name, fn, len) != 0 || (name[len] != '(' && name[len] != '\0'))
			continue;
		uint32_t n = 0;
		for (size_t x = 0; x < rt->nexecutions; x++)
			n += rt->executions[x].module == (int32_t)m;
		if (best < 0 || n > *runs) {
			best = (long)m;
			*runs = n;
		}
	}
	return best;
}

/* "; in use when it began: 2.25 GiB, the largest: <origin> 1.75 GiB, ..." */
static void live_text(const xpf_diag_ctx *c, const xpf_rt_compile *k, xpf_buf *b)
{
	char h1[32];
	if (!k->in_use_known)
		return;
	xpf_buf_printf(b, "; in use when it began: %s", xpf_human(k->in_use_at_start_bytes, h1));
	xpf_rt_block *bl;
	size_t nb;
	xpf_runtime_live_before(c->rt, k->allocator, k->start_ps, true, k->in_use_at_start_bytes,
				&bl, &nb);
	/* blocks come sorted by origin: sum each origin, then the largest 3 */
	struct {
		const char *text;
		uint64_t bytes;
	} top[3] = { { NULL, 0 } };
	for (size_t i = 0; i < nb;) {
		size_t j = i;
		uint64_t sum = 0;
		for (; j < nb && strcmp(bl[j].origin_text, bl[i].origin_text) == 0; j++)
			sum += bl[j].bytes;
		for (int t = 0; t < 3; t++)
			if (sum > top[t].bytes) {
				memmove(&top[t + 1], &top[t], (size_t)(2 - t) * sizeof top[0]);
				top[t].text = bl[i].origin_text;
				top[t].bytes = sum;
				break;
			}
		i = j;
	}
	for (int t = 0; t < 3 && top[t].text; t++)
		xpf_buf_printf(b, "%s%s %s", t ? ", " : ", the largest: ", top[t].text,
			       xpf_human(top[t].bytes, h1));
	xpf_rt_blocks_free(bl, nb);
}

/* Is shape the data input's but for its leading dimension (the same dtype
 * and trailing dimensions)?  *lead: that dimension. */
static bool lead_differs(const char *shape, const xpf_plan_param *in, uint64_t *lead)
{
	uint64_t a[8], b[8];
	size_t na = strcspn(shape, "["), nb = strcspn(in->shape, "[");
	int n = xpf_diag_shape_dims(shape, a);
	if (na != nb || strncmp(shape, in->shape, na) != 0 || n < 1 ||
	    xpf_diag_shape_dims(in->shape, b) != n || a[0] == b[0] ||
	    memcmp(a + 1, b + 1, (size_t)(n - 1) * sizeof *a) != 0)
		return false;
	*lead = a[0];
	return true;
}

/* The shapes a live block shows: its allocation's, a device put's
 * "(f32[32768,1024])", or the outputs of the module that made it. */
static bool block_lead(const xpf_diag_ctx *c, const xpf_rt_block *bl, const xpf_plan_param *in,
		       uint64_t *lead)
{
	if (bl->shape && lead_differs(bl->shape, in, lead))
		return true;
	const char *t = bl->host_event ? strchr(bl->host_event, '(') : NULL;
	if (t && lead_differs(t + 1, in, lead))
		return true;
	if (bl->origin != XPF_ORIGIN_OUTPUTS || bl->execution < 0)
		return false;
	const xpf_plan *q = xpf_diag_plan(c->h, c->rt->executions[bl->execution].module);
	for (size_t i = 0; q && i < q->noutputs; i++)
		if (q->outputs[i].shape && lead_differs(q->outputs[i].shape, in, lead))
			return true;
	return false;
}

/* The batch the failed compile was for: the newest array live when it
 * began shaped like the earlier step's data input but for its leading
 * dimension (SPEC §5.2: "its need scaled by the new shapes"); 0 if none. */
static uint64_t new_batch(const xpf_diag_ctx *c, const xpf_rt_compile *k, const xpf_plan_param *in)
{
	xpf_rt_block *bl;
	size_t nb;
	uint64_t lead = 0;
	long newest = -1;
	xpf_runtime_live_before(c->rt, k->allocator, k->start_ps, k->in_use_known,
				k->in_use_at_start_bytes, &bl, &nb);
	for (size_t i = 0; i < nb; i++) {
		uint64_t l;
		if (bl[i].event > newest && block_lead(c, &bl[i], in, &l)) {
			newest = bl[i].event;
			lead = l;
		}
	}
	xpf_rt_blocks_free(bl, nb);
	return lead;
}

/* The outputs with a row per example (per-example losses): leading
 * dimension the batch, not an updated parameter. */
static uint64_t batch_outputs(const xpf_plan *p, uint64_t batch)
{
	uint64_t n = 0, d[8];
	for (size_t i = 0; i < p->noutputs; i++) {
		const xpf_plan_output *o = &p->outputs[i];
		if (o->shape && o->alloc && o->matches == NULL &&
		    xpf_diag_shape_dims(o->shape, d) >= 1 && d[0] == batch)
			n += o->alloc->bytes;
	}
	return n;
}

/* "; at batch 32768 (64x; f32[32768,1024] was live) the step would need
 * about 4.10-6.20 GiB of 2.80 GiB: it would not fit even if it compiled":
 * the earlier need plus what scales with the batch, from the forward-kept
 * activations (at least) to every activation (at most), and the input. */
static void scaled_need(const xpf_diag_ctx *c, xpf_finding *f, const xpf_rt_compile *k,
			const xpf_plan *p, uint64_t cap, xpf_buf *b)
{
	xpf_diag_scale s;
	xpf_diag_find_scale(p, &s);
	uint64_t nbatch = s.input ? new_batch(c, k, s.input) : 0;
	if (nbatch <= s.batch || s.batch == 0) {
		xpf_buf_adds(b, "; the new shapes need more, by as much as their buffers grow");
		return;
	}
	long double g = (long double)nbatch / (long double)s.batch - 1;
	uint64_t io = s.input->bytes + batch_outputs(p, s.batch);
	uint64_t lo = p->need_bytes + (uint64_t)((long double)(s.fwd + io) * g);
	uint64_t hi = p->need_bytes + (uint64_t)((long double)(s.act + io) * g);
	char h1[32], h2[32], h3[32];
	xpf_buf_printf(b,
		       "; its data input %.*s has %" PRIu64
		       " rows now (an array of that shape was live when the compile began): at batch %" PRIu64
		       " the step would need about %s",
		       (int)strcspn(s.input->shape, "{"), s.input->shape, nbatch, nbatch,
		       xpf_human(lo, h1));
	if (hi > lo)
		xpf_buf_printf(b, " to %s", xpf_human(hi, h2));
	xpf_buf_printf(b, " of %s: %s", xpf_human(cap, h3),
		       lo > cap ? "it would not fit even if it compiled" :
		       hi > cap ? "it may not fit even if it compiled" :
				  "it would fit once compiled: the autotuner's scratch is what failed");
	xpf_diag_num(f, "new_batch", nbatch);
	xpf_diag_num(f, "scaled_need_low_bytes", lo);
	xpf_diag_num(f, "scaled_need_high_bytes", hi);
}

static void compile_fixes(xpf_diag_ctx *c, xpf_finding *f, const xpf_rt_compile *k, long em)
{
	char h1[32];
	if (k->in_use_known && k->in_use_at_start_bytes > 0)
		xpf_diag_addfix(c, f, 0, 0, "none, if the arrays are no longer needed",
				"free or shrink what is live before the compile (del arrays and drop every reference; %s was in use), so the autotuner's scratch fits",
				xpf_human(k->in_use_at_start_bytes, h1));
	xpf_diag_addfix(c, f, 0, 0, "none: the compiled step is cached for the later calls",
			"compile ahead: jax.jit(f).lower(*args).compile() before the big arrays are allocated (with jax.ShapeDtypeStruct arguments)");
	if (em >= 0)
		xpf_diag_addfix(c, f, 0, 0, "padding or a dropped last batch",
				"keep input shapes fixed (pad or drop the last batch): a new shape is a new compilation, and a larger one may not fit; find recompiles with jax.config.update('jax_log_compiles', True)");
	xpf_diag_addfix(c, f, 0, 0, "slower kernels for every step",
			"last resort: XLA_FLAGS=--xla_gpu_autotune_level=0 skips the autotuner's trial buffers");
}

void xpf_rule_compile_oom(xpf_diag_ctx *c)
{
	const xpf_runtime *rt = c->rt;
	const xpf_rt_compile *k = xpf_diag_failed_compile(rt);
	if (k == NULL)
		return;
	const char *fn = k->function ? k->function : "a step";
	uint64_t cap = k->allocator >= 0 ? rt->allocators[k->allocator].capacity_bytes : 0;
	uint32_t runs;
	long em = earlier_module(c, k->function, &runs);
	char h1[32], h2[32], h3[32];
	xpf_buf b = XPF_BUF_INIT;
	xpf_finding *f = xpf_diag_add(c, "compile-oom", XPF_TAG_MEASURED, em);
	xpf_buf_printf(&b,
		       "the compilation of %s ran out of memory and never finished (no module of it in the capture)",
		       fn);
	xpf_buf_printf(&b,
		       "; XLA's autotuner tried kernels %u time%s while the pool (%s) reached %s in use",
		       k->autotuner_runs, k->autotuner_runs == 1 ? "" : "s", xpf_human(cap, h1),
		       xpf_human(k->peak_in_use_bytes, h2));
	if (k->largest_request_bytes)
		xpf_buf_printf(&b, "; its largest request seen: %s",
			       xpf_human(k->largest_request_bytes, h3));
	if (k->retried)
		xpf_buf_adds(&b, "; an AllocatorRetry wait inside it");
	xpf_buf_adds(&b,
		     "; the request that failed is not an event: XLA names it in the error (\"Failed to get configs ... Out of memory while trying to allocate ...\")");
	live_text(c, k, &b);
	if (em >= 0) {
		const xpf_plan *p = xpf_diag_plan(c->h, em);
		xpf_buf_printf(&b, "; a retrace: %s, the same function, ran %u time%s before",
			       xpf_capture_module(c->h->cap, (size_t)em)->name, runs,
			       runs == 1 ? "" : "s");
		if (p && p->has_assignment) {
			xpf_buf_printf(&b, " and needs %s of %s", xpf_human(p->need_bytes, h1),
				       xpf_human(cap, h2));
			scaled_need(c, f, k, p, cap, &b);
		}
	}
	xpf_diag_text(f, &b);
	xpf_diag_num(f, "capacity_bytes", cap);
	xpf_diag_num(f, "peak_in_use_bytes", k->peak_in_use_bytes);
	xpf_diag_num(f, "largest_request_bytes", k->largest_request_bytes);
	if (k->in_use_known)
		xpf_diag_num(f, "in_use_at_start_bytes", k->in_use_at_start_bytes);
	xpf_diag_num(f, "autotuner_runs", k->autotuner_runs);
	xpf_diag_str(f, "function", "%s", fn);
	xpf_diag_evidence(f, XPF_EV_RUNTIME(XPF_F_COMPILES_TSV));
	xpf_diag_evidence(f, XPF_EV_RUNTIME(XPF_F_EVENTS_TSV));
	compile_fixes(c, f, k, em);
}
