/* compile-oom (SPEC §5.2): the program ran out of memory while XLA
 * compiled a step.  XLA's GEMM autotuner allocates scratch buffers of the
 * step's shapes to try kernels; when the pool is full they fail ("Failed to
 * get configs ... Out of memory") and the compilation stops, leaving no
 * module in the capture.  What the capture holds: the compile events, the
 * autotuner's runs and allocations (runtime/compiles.tsv), what was live
 * when it began, and the earlier module of the same function, if any. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/diag_priv.h"
#include "common/alloc.h"

/* The last compilation that ran out of memory, or NULL. */
static const xpf_rt_compile *failed_compile(const xpf_runtime *rt)
{
	for (size_t i = rt->ncompiles; i-- > 0;)
		if (xpf_rt_compile_oom(rt, &rt->compiles[i]))
			return &rt->compiles[i];
	return NULL;
}

bool xpf_diag_compile_oom_shown(const xpf_runtime *rt) { return failed_compile(rt) != NULL; }

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
	const xpf_rt_compile *k = failed_compile(rt);
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
		if (p && p->has_assignment)
			xpf_buf_printf(&b,
				       " and needs %s of %s; the new shapes need more, by as much as their buffers grow",
				       xpf_human(p->need_bytes, h1), xpf_human(cap, h2));
	}
	xpf_diag_text(f, &b);
	xpf_diag_num(f, "capacity_bytes", cap);
	xpf_diag_num(f, "peak_in_use_bytes", k->peak_in_use_bytes);
	xpf_diag_num(f, "largest_request_bytes", k->largest_request_bytes);
	if (k->in_use_known)
		xpf_diag_num(f, "in_use_at_start_bytes", k->in_use_at_start_bytes);
	xpf_diag_num(f, "autotuner_runs", k->autotuner_runs);
	xpf_diag_str(f, "function", "%s", fn);
	xpf_diag_evidence(f, "runtime/compiles.tsv");
	xpf_diag_evidence(f, "runtime/events.tsv");
	compile_fixes(c, f, k, em);
}
