/* The failure itself (SPEC §5.2): allocator-retry, never-launched, and
 * unexplained-oom when the capture shows an OOM that no finding explains
 * (the request that failed and the fragmentation then: diag_fail.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/diagnosis/diag_priv.h"
#include "analysis/paths.h"
#include "common/alloc.h"

/* ---- allocator-retry, never-launched -------------------------------------- */

void xpf_rule_retry(xpf_diag_ctx *c)
{
	const xpf_runtime *rt = c->rt;
	char h1[32];

	if (rt->nretries == 0)
		return;
	size_t longest = 0;
	int64_t total = 0;
	for (size_t i = 0; i < rt->nretries; i++) {
		total += rt->retries[i].duration_ns;
		if (rt->retries[i].duration_ns > rt->retries[longest].duration_ns)
			longest = i;
	}
	const xpf_rt_retry *r = &rt->retries[longest];
	xpf_finding *f = xpf_diag_add(c, "allocator-retry", XPF_TAG_MEASURED, c->d->module);
	xpf_buf b = XPF_BUF_INIT;
	xpf_buf_printf(&b, "%zu AllocatorRetry::AllocateRaw wait%s, longest %.1f s at %lld ns",
		       rt->nretries, rt->nretries == 1 ? "" : "s", (double)r->duration_ns / 1e9,
		       (long long)r->time_ns);
	if (r->allocator >= 0)
		xpf_buf_printf(&b, " on %s", rt->allocators[r->allocator].name);
	if (r->execution >= 0) {
		const xpf_rt_execution *x = &rt->executions[r->execution];
		if (x->module >= 0)
			xpf_buf_printf(&b, "; inside %s execution %u (n %u), launched: %s",
				       xpf_capture_module(c->h->cap, x->module)->name,
				       x->module_execution, x->n, xpf_launched_name(x->launched));
		else
			xpf_buf_printf(&b,
				       "; inside execution n %u (not linked to one module: see its candidates), launched: %s",
				       x->n, xpf_launched_name(x->launched));
		const xpf_plan *p = xpf_diag_plan(c->h, x->module);
		const xpf_plan_alloc *fr =
			r->execution == c->d->execution && c->p ? xpf_diag_failed_request(c) : NULL;
		if (fr)
			xpf_buf_printf(&b,
				       "; the request that failed: allocation %lld, %s (from the events)",
				       (long long)fr->index, xpf_human(fr->bytes, h1));
		else if (p && p->has_assignment)
			xpf_buf_printf(&b,
				       "; the failed request is usually its temp block (%s) or an output",
				       xpf_human(p->temp_bytes, h1));
	}
	if (r->allocator == c->d->allocator)
		xpf_diag_frag_text(c, f, (int64_t)r->time_ns * 1000, &b);
	xpf_buf_adds(&b, "; the OOM happened inside the capture (evidence only)");
	xpf_diag_text(f, &b);
	xpf_diag_num(f, "count", rt->nretries);
	xpf_diag_num(f, "longest_ns", (uint64_t)r->duration_ns);
	xpf_diag_num(f, "total_ns", (uint64_t)total);
	xpf_diag_evidence(f, XPF_EV_RUNTIME(XPF_F_RETRIES_TSV));
	if (r->execution >= 0)
		xpf_diag_evidence(f, XPF_EV_EXECUTION(XPF_F_SUMMARY_TXT),
				  rt->executions[r->execution].n);
}

/* Outputs of other modules' executions live when execution x started,
 * one figure per module: memory held by other modules, named as such. */
static void co_resident(xpf_diag_ctx *c, size_t x, xpf_buf *b)
{
	const xpf_runtime *rt = c->rt;
	xpf_rt_block *blocks = NULL;
	size_t nb = 0, shown = 0;
	xpf_error e = { 0 };
	char h1[32];

	if (xpf_runtime_live_at(rt, x, &blocks, &nb, &e) != XPF_OK)
		return;
	long self = rt->executions[x].module;
	for (size_t i = 0; i < nb; i++) {
		const xpf_rt_block *bl = &blocks[i];
		if (bl->origin != XPF_ORIGIN_OUTPUTS || bl->execution < 0)
			continue;
		long m = rt->executions[bl->execution].module;
		if (m == self || m < 0)
			continue;
		bool seen = false;
		for (size_t j = 0; j < i && !seen; j++)
			seen = blocks[j].origin == XPF_ORIGIN_OUTPUTS && blocks[j].execution >= 0 &&
			       rt->executions[blocks[j].execution].module == m;
		if (seen)
			continue;
		uint64_t bytes = 0;
		for (size_t j = i; j < nb; j++)
			if (blocks[j].origin == XPF_ORIGIN_OUTPUTS && blocks[j].execution >= 0 &&
			    rt->executions[blocks[j].execution].module == m)
				bytes += blocks[j].bytes;
		if (shown < 5) /* an eager program has hundreds: the largest are in live.tsv */
			xpf_buf_printf(b, "%s%s %s",
				       shown ? ", " : "; co-resident outputs of other modules: ",
				       xpf_capture_module(c->h->cap, (size_t)m)->name,
				       xpf_human(bytes, h1));
		shown++;
	}
	if (shown > 5)
		xpf_buf_printf(b, ", ... (%zu modules: runtime/executions/%u/live.tsv)", shown,
			       rt->executions[x].n);
	xpf_rt_blocks_free(blocks, nb);
}

/* The latest execution that never launched and could not be linked to
 * one module: named by its candidates. */
static void never_ambiguous(xpf_diag_ctx *c)
{
	const xpf_runtime *rt = c->rt;
	long lastx = -1;
	size_t count = 0;
	for (size_t x = 0; x < rt->nexecutions; x++)
		if (rt->executions[x].module < 0 && rt->executions[x].launched == XPF_LAUNCHED_NO) {
			count++;
			lastx = (long)x;
		}
	if (count == 0)
		return;
	const xpf_rt_execution *x = &rt->executions[lastx];
	xpf_finding *f = xpf_diag_add(c, "never-launched", XPF_TAG_MEASURED, -1);
	xpf_buf b = XPF_BUF_INIT;
	xpf_buf_printf(&b,
		       "%zu execution%s not linked to one module never launched a kernel; the last: n %u on device %d, candidates: ",
		       count, count == 1 ? "" : "s", x->n, x->device);
	const xpf_rt_candidate *cd;
	size_t n = xpf_rt_candidates(rt, (size_t)lastx, &cd);
	for (size_t k = 0; k < n; k++)
		xpf_buf_printf(&b, "%s%s", k ? ", " : "",
			       xpf_capture_module(c->h->cap, (size_t)cd[k].module)->name);
	if (n == 0)
		xpf_buf_adds(&b, "none named by the host events");
	xpf_diag_text(f, &b);
	xpf_diag_num(f, "count", count);
	xpf_diag_num(f, "execution", x->n);
	xpf_diag_evidence(f, XPF_EV_EXECUTION(XPF_F_SUMMARY_TXT), x->n);
}

void xpf_rule_never(xpf_diag_ctx *c)
{
	const xpf_runtime *rt = c->rt;
	xpf_host *h = c->h;

	for (size_t m = 0; m < h->nmodules; m++) {
		size_t count = 0;
		long lastx = -1;
		for (size_t x = 0; x < rt->nexecutions; x++)
			if (rt->executions[x].module == (long)m &&
			    rt->executions[x].launched == XPF_LAUNCHED_NO) {
				count++;
				lastx = (long)x;
			}
		if (count == 0)
			continue;
		const xpf_rt_execution *x = &rt->executions[lastx];
		xpf_finding *f = xpf_diag_add(c, "never-launched", XPF_TAG_MEASURED, (long)m);
		xpf_buf b = XPF_BUF_INIT;
		xpf_buf_printf(&b,
			       "%zu execution%s of %s never launched a kernel; the last: execution %u (n %u) on device %d%s",
			       count, count == 1 ? "" : "s", xpf_capture_module(h->cap, m)->name,
			       x->module_execution, x->n, x->device,
			       x->stopped_in_build ? ", stopped while allocating its buffers" : "");
		co_resident(c, (size_t)lastx, &b);
		xpf_diag_text(f, &b);
		xpf_diag_num(f, "count", count);
		xpf_diag_num(f, "execution", x->n);
		xpf_diag_num(f, "module_execution", x->module_execution);
		xpf_diag_evidence(f, XPF_EV_RUNTIME(XPF_F_EXECUTIONS_TSV));
		xpf_diag_evidence(f, XPF_EV_EXECUTION(XPF_F_SUMMARY_TXT), x->n);
	}
	never_ambiguous(c);
}

/* ---- an OOM nothing explains (SPEC §5.2) ------------------------------------ */

/* The execution that shows the OOM: the focus execution when it never
 * launched, else the latest that never launched, else the longest
 * retry's; -1 when the capture shows none. */
static long oom_execution(const xpf_diag_ctx *c)
{
	const xpf_runtime *rt = c->rt;
	long x = c->d->execution;
	if (x >= 0 && rt->executions[x].launched == XPF_LAUNCHED_NO)
		return x;
	for (size_t i = rt->nexecutions; i-- > 0;)
		if (rt->executions[i].launched == XPF_LAUNCHED_NO)
			return (long)i;
	long best = -1;
	for (size_t i = 0; i < rt->nretries; i++)
		if (rt->retries[i].execution >= 0 &&
		    (best < 0 || rt->retries[i].duration_ns > rt->retries[best].duration_ns))
			best = (long)i;
	return best >= 0 ? rt->retries[best].execution : -1;
}

/* One module's need against the capacity, for the candidates' list. */
static void need_vs(xpf_diag_ctx *c, long m, xpf_buf *b)
{
	const xpf_plan *p = xpf_diag_plan(c->h, m);
	char h1[32], h2[32];
	xpf_buf_printf(b, "%s ", xpf_capture_module(c->h->cap, (size_t)m)->name);
	if (p == NULL || !p->has_assignment)
		xpf_buf_adds(b, "(no plan)");
	else if (c->d->capacity_bytes)
		xpf_buf_printf(b, "needs %s of %s", xpf_human(p->need_bytes, h1),
			       xpf_human(c->d->capacity_bytes, h2));
	else
		xpf_buf_printf(b, "needs %s", xpf_human(p->need_bytes, h1));
}

static const char *const explains_oom[] = {
	"plan-exceeds-pool",    "near-fit",           "foreign-live-arrays",
	"growth-per-execution", "temp-fragmentation", "compile-oom",
};

void xpf_rule_unexplained_oom(xpf_diag_ctx *c)
{
	const xpf_runtime *rt = c->rt;
	xpf_diagnosis *d = c->d;
	if (rt == NULL || !rt->has_events || !xpf_diag_oom_shown(rt))
		return;
	for (size_t i = 0; i < sizeof explains_oom / sizeof *explains_oom; i++)
		if (xpf_diag_find(d, explains_oom[i]) != NULL)
			return;
	long x = oom_execution(c);
	xpf_finding *f = xpf_diag_add(c, "unexplained-oom", XPF_TAG_MEASURED, d->module);
	xpf_buf b = XPF_BUF_INIT;
	if (x < 0) {
		xpf_buf_printf(&b,
			       "%zu AllocatorRetry wait%s outside every execution: the capture shows an allocation that ran out of memory but not which step made it",
			       rt->nretries, rt->nretries == 1 ? "" : "s");
	} else {
		const xpf_rt_execution *e = &rt->executions[x];
		xpf_buf_printf(&b,
			       "execution %u on device %d ran out of memory (launched: %s) and no finding explains it; ",
			       e->n, e->device, xpf_launched_name(e->launched));
		if (e->module >= 0) {
			need_vs(c, e->module, &b);
		} else {
			const xpf_rt_candidate *cd;
			size_t n = xpf_rt_candidates(rt, (size_t)x, &cd);
			xpf_buf_printf(&b, "it could not be linked to one module; candidates: ");
			for (size_t k = 0; k < n; k++) {
				xpf_buf_adds(&b, k ? ", " : "");
				need_vs(c, cd[k].module, &b);
			}
			if (n == 0)
				xpf_buf_adds(&b, "none named by the host events");
		}
		xpf_diag_num(f, "execution", e->n);
		xpf_diag_evidence(f, XPF_EV_EXECUTION(XPF_F_SUMMARY_TXT), e->n);
	}
	xpf_buf_adds(&b,
		     "; what would say more: the module's buffer assignment (profile from before the first call), the allocator events of the device (the BFC allocator), the device's kernels");
	xpf_diag_text(f, &b);
	if (d->capacity_bytes)
		xpf_diag_num(f, "capacity_bytes", d->capacity_bytes);
	xpf_diag_evidence(f, XPF_EV_RUNTIME(XPF_F_EXECUTIONS_TSV));
	xpf_diag_evidence(f, XPF_EV_RUNTIME(XPF_F_RETRIES_TSV));
}
