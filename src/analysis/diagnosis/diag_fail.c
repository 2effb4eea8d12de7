/* What failed, from the events (SPEC §5.3): the request that failed (the
 * first planned allocation of the failing execution that never came) and
 * the BFC fragmentation when it did.  Several rules name them (fit,
 * allocator-retry, unexplained-oom); none of them adds a finding here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/diagnosis/diag_priv.h"
#include "common/alloc.h"

/* ---- the BFC fragmentation stat (SPEC 5.3) ------------------------------- */

/* The `fragmentation` stat of allocator event i (free memory outside the
 * largest free chunk, as a fraction of the free memory; reference §6.1),
 * read back from its line: the runtime keeps no copy.  False when the
 * event carries none (other allocators, older captures) or is NaN. */
static bool event_frag(const xpf_diag_ctx *c, size_t i, double *out)
{
	const xpf_runtime *rt = c->rt;
	const xpf_rt_event *ev = &rt->events[i];
	const xpf_plane *pl = rt->host_plane;
	uint32_t l = xpf_rt_ev_line(rt, ev);
	int64_t base;
	xpf_error e = { 0 };
	if (pl == NULL || l >= pl->nlines || xpf_capture_time_base(c->h->cap, &base, &e) != XPF_OK)
		return false;
	xpf_event_iter it;
	xpf_event x;
	xpf_stat st;
	uint64_t addr;
	xpf_events_begin(pl, l, NULL, &it);
	while (xpf_events_next(&it, &x, &e) == 1) {
		__int128 t = ((__int128)pl->lines[l].timestamp_ns - base) * 1000 + x.offset_ps;
		if (t != ev->t_ps || strncmp(x.name, "Memory", 6) != 0 ||
		    xpf_event_stat(pl, &x, "addr", &st, &e) != 1 || !xpf_stat_u64(&st, &addr) ||
		    addr != ev->addr)
			continue;
		return xpf_event_stat(pl, &x, "fragmentation", &st, &e) == 1 &&
		       xpf_stat_f64(&st, out) && *out == *out;
	}
	return false;
}

/* The last event of allocator a strictly before t_ps, or -1. */
static long event_before(const xpf_runtime *rt, int a, int64_t t_ps)
{
	for (size_t i = xpf_rt_first_event_at(rt, t_ps); i-- > 0;)
		if (xpf_rt_ev_allocator(rt, &rt->events[i]) == a)
			return (long)i;
	return -1;
}

/* "; BFC fragmentation (free memory outside the largest free chunk): 12.5%
 * when the request failed, 3.0% at the pool's peak (2.75 GiB)" for the
 * focus allocator; the failure is the last event before fail_ps (0: none).
 * Nothing when the events carry no such stat. */
void xpf_diag_frag_text(const xpf_diag_ctx *c, xpf_finding *f, int64_t fail_ps, xpf_buf *b)
{
	const xpf_runtime *rt = c->rt;
	int a = c->d->allocator;
	double at_fail, at_peak;
	char h1[32];
	if (rt == NULL || a < 0)
		return;
	const xpf_rt_allocator *al = &rt->allocators[a];
	long fi = fail_ps ? event_before(rt, a, fail_ps) : -1;
	bool has_fail = fi >= 0 && event_frag(c, (size_t)fi, &at_fail);
	bool has_peak = al->peak_event >= 0 && event_frag(c, (size_t)al->peak_event, &at_peak);
	if (!has_fail && !has_peak)
		return;
	xpf_buf_printf(b, "; BFC fragmentation of %s (free memory outside its largest free chunk): ",
		       al->name);
	if (has_fail) {
		xpf_buf_printf(b, "%.1f%% when the request failed", at_fail * 100);
		xpf_diag_str(f, "fragmentation_at_failure_pct", "%.1f", at_fail * 100);
	}
	if (has_peak) {
		xpf_buf_printf(b, "%s%.1f%% at its peak (%s)", has_fail ? ", " : "", at_peak * 100,
			       xpf_human(al->peak_in_window_bytes, h1));
		xpf_diag_str(f, "fragmentation_at_peak_pct", "%.1f", at_peak * 100);
	}
}

/* ---- the request that failed (SPEC §5.3) --------------------------------- */

/* The request that failed (SPEC §5.3): the first planned run-time
 * allocation (not a parameter, constant or thread-local) of the focus
 * execution that never came (the events it did allocate name their plan
 * allocation), when that execution never launched; else NULL. */
const xpf_plan_alloc *xpf_diag_failed_request(const xpf_diag_ctx *c)
{
	const xpf_runtime *rt = c->rt;
	const xpf_plan *p = c->p;
	long x = c->d->execution;
	if (rt == NULL || x < 0 || rt->executions[x].launched != XPF_LAUNCHED_NO ||
	    rt->executions[x].module != c->d->module)
		return NULL;
	const xpf_rt_execution *e = &rt->executions[x];
	bool *came = calloc(p->nallocs ? p->nallocs : 1, sizeof *came);
	if (came == NULL)
		abort();
	for (size_t i = xpf_rt_first_event_at(rt, e->start_ps);
	     i < rt->nevents && rt->events[i].t_ps <= e->end_ps; i++) {
		const xpf_rt_event *ev = &rt->events[i];
		if (ev->execution == x && ev->kind == XPF_RT_ALLOC && ev->buffer_allocation >= 0 &&
		    (size_t)ev->buffer_allocation < p->nallocs)
			came[ev->buffer_allocation] = true;
	}
	const xpf_plan_alloc *first = NULL;
	for (size_t i = 0; i < p->nallocs && first == NULL; i++) {
		const xpf_plan_alloc *a = &p->allocs[i];
		if (!came[i] && a->bytes > 0 && xpf_plan_device_color(p, a->color) &&
		    (a->kind == XPF_KIND_OUTPUT || a->kind == XPF_KIND_TEMP))
			first = a;
	}
	free(came);
	return first;
}

/* "; the request that failed: ..., and what cannot help" */
void xpf_diag_failed_request_text(const xpf_diag_ctx *c, const xpf_plan_alloc *a, xpf_buf *b)
{
	const xpf_plan *p = c->p;
	const xpf_plan_buffer *buf = a->largest >= 0 ? &p->buffers[a->largest] : NULL;
	char tsl[32], h1[32], h2[32];
	bool block = a->kind == XPF_KIND_TEMP && a->bytes * 2 > p->temp_bytes;
	xpf_buf_printf(b,
		       "; the request that failed (execution %u's first planned allocation that never came): allocation %lld, %s, ",
		       c->rt->executions[c->d->execution].n, (long long)a->index,
		       xpf_human(a->bytes, h1));
	if (block)
		xpf_buf_adds(b, "the temp block");
	else if (buf)
		xpf_buf_printf(b, "%s %s of %s", a->kind == XPF_KIND_OUTPUT ? "output" : "temp",
			       buf->shape, buf->instr ? buf->instr->name : "?");
	else
		xpf_buf_adds(b, a->kind == XPF_KIND_OUTPUT ? "an output" : "a temp allocation");
	xpf_buf_printf(b, "; XLA says \"Out of memory while trying to allocate %s\"",
		       xpf_diag_tsl_human(a->bytes, tsl));
	uint64_t cap = c->d->capacity_bytes, mem = c->d->memory_bytes;
	if (mem && p->need_bytes > mem)
		xpf_buf_printf(b,
			       "; the need exceeds the device's memory (%s): no memory fraction can help",
			       xpf_human(mem, h2));
	else if (a->bytes > cap)
		xpf_buf_adds(b,
			     "; one request larger than the pool: freeing other arrays cannot help, only a smaller program or a larger pool");
}
