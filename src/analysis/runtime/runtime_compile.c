/* The runtime, after the link: the compilations (SPEC §4.3).
 *
 * The scan leaves one record per outermost compile event and one per
 * autotuner run (runtime_scan.c's add_compiles).  Here each run is folded
 * into the compilation whose event holds it (the autotuner runs on the
 * compile threads while the Python thread waits in its compile event),
 * each compilation is given the module it made, and its figures are read
 * from the ordered allocator events: what the pool held while it ran, and
 * its largest request outside every execution (the autotuner's scratch). */
#include <stdlib.h>
#include <string.h>

#include "analysis/runtime/runtime.h"
#include "analysis/runtime/runtime_priv.h"
#include "common/alloc.h"
#include "common/buf.h"

const char *xpf_rt_compile_function(const char *name, size_t *len)
{
	const char *p = strstr(name, "Compile");
	if (p == NULL)
		return NULL;
	p = strchr(p, '(');
	if (p == NULL)
		return NULL;
	p++;
	const char *e = strrchr(p, ')');
	if (e == NULL || e == p)
		return NULL;
	*len = (size_t)(e - p);
	return p;
}

static int compile_cmp(const void *a, const void *b)
{
	const xpf_rt_compile *x = a, *y = b;
	if (x->start_ps != y->start_ps)
		return x->start_ps < y->start_ps ? -1 : 1;
	if (x->is_run != y->is_run)
		return x->is_run ? 1 : -1;
	if (x->end_ps != y->end_ps)
		return x->end_ps > y->end_ps ? -1 : 1;
	return x->thread < y->thread ? -1 : x->thread > y->thread;
}

/* Runs folded into the compilation that holds them (the latest-starting
 * one); runs no compilation holds make one of an unknown function per
 * stretch of them with no compilation starting between.  Sorted first. */
static void fold_runs(xpf_runtime *rt)
{
	xpf_rt_compile *c = rt->compiles;
	size_t n = 0;
	long open = -1; /* the unknown compilation taking runs now */
	for (size_t i = 0; i < rt->ncompiles; i++) {
		xpf_rt_compile r = c[i];
		if (!r.is_run) {
			c[n++] = r;
			open = -1;
			continue;
		}
		long into = -1;
		for (size_t k = n; k-- > 0;)
			if (c[k].start_ps <= r.start_ps && r.start_ps < c[k].end_ps) {
				into = (long)k;
				break;
			}
		if (into < 0 && open >= 0)
			into = open;
		if (into < 0) {
			r.is_run = false;
			r.autotuner_runs = 0;
			r.thread = 0;
			c[n] = r;
			open = into = (long)n++;
		}
		c[into].autotuner_runs++;
		if (r.end_ps > c[into].end_ps && c[into].function == NULL)
			c[into].end_ps = r.end_ps;
		c[into].retried |= r.retried;
	}
	rt->ncompiles = n;
}

/* Each compilation of a named function given the module of that name (base
 * name, pv->base) whose first execution comes first after it starts, of
 * those not given yet: the module it made.  Then a step compiled ahead and
 * never called (jax.jit(f).lower(...).compile()): the compilations of f
 * still without one take f's modules that never ran, earliest first.  None
 * left: it did not finish (a successful compile leaves its module in the
 * metadata). */
static void give_modules(xpf_runtime *rt)
{
	struct xpf_rt_priv *pv = rt->priv;
	size_t nm = pv->nmodules;
	int64_t *first = xpf_calloc(nm ? nm : 1, sizeof *first);
	bool *given = xpf_calloc(nm ? nm : 1, sizeof *given);
	for (size_t m = 0; m < nm; m++)
		first[m] = INT64_MAX;
	for (size_t x = 0; x < rt->nexecutions; x++) {
		const xpf_rt_execution *e = &rt->executions[x];
		if (e->module >= 0 && (size_t)e->module < nm && e->start_ps < first[e->module])
			first[e->module] = e->start_ps;
	}
	for (int never_ran = 0; never_ran < 2; never_ran++)
		for (size_t i = 0; i < rt->ncompiles; i++) {
			xpf_rt_compile *c = &rt->compiles[i];
			if (c->function == NULL || c->module >= 0)
				continue;
			long best = -1;
			for (size_t m = 0; m < nm; m++) {
				bool ok = never_ran ?
						  first[m] == INT64_MAX :
						  first[m] != INT64_MAX && first[m] >= c->start_ps;
				if (!given[m] && ok && strcmp(pv->base[m], c->function) == 0 &&
				    (best < 0 || first[m] < first[best]))
					best = (long)m;
			}
			if (best >= 0) {
				given[best] = true;
				c->module = (int32_t)best;
				c->finished = true;
			}
		}
	free(first);
	free(given);
}

/* The device allocator of c: the pool allocator of the first allocation
 * outside every execution while it ran, else the only pool allocator. */
static int compile_allocator(const xpf_runtime *rt, const xpf_rt_compile *c)
{
	for (size_t e = xpf_rt_first_event_at(rt, c->start_ps);
	     e < rt->nevents && rt->events[e].t_ps <= c->end_ps; e++) {
		int a = xpf_rt_ev_allocator(rt, &rt->events[e]);
		if (rt->events[e].execution < 0 && rt->allocators[a].is_pool)
			return a;
	}
	int only = -1;
	for (size_t a = 0; a < rt->nallocators; a++)
		if (rt->allocators[a].is_pool) {
			if (only >= 0)
				return -1;
			only = (int)a;
		}
	return only;
}

static void compile_figures(const xpf_runtime *rt, xpf_rt_compile *c)
{
	int a = compile_allocator(rt, c);
	c->allocator = (int16_t)a;
	if (a < 0)
		return;
	size_t e = xpf_rt_first_event_at(rt, c->start_ps);
	/* in use when it began: after the allocator's last event before */
	for (size_t k = e; k-- > 0;)
		if (xpf_rt_ev_allocator(rt, &rt->events[k]) == a) {
			c->peak_in_use_bytes = c->in_use_at_end_bytes = rt->events[k].in_use_after;
			c->in_use_at_start_bytes = rt->events[k].in_use_after;
			c->in_use_known = true;
			break;
		}
	for (; e < rt->nevents && rt->events[e].t_ps <= c->end_ps; e++) {
		const xpf_rt_event *ev = &rt->events[e];
		if (xpf_rt_ev_allocator(rt, ev) != a)
			continue;
		c->in_use_at_end_bytes = ev->in_use_after;
		if (ev->in_use_after > c->peak_in_use_bytes)
			c->peak_in_use_bytes = ev->in_use_after;
		uint64_t req = xpf_rt_ev_has_requested(rt, ev) ? xpf_rt_ev_requested(rt, ev) :
								 xpf_rt_ev_bytes(rt, ev);
		if (ev->kind == XPF_RT_ALLOC && ev->execution < 0 && req > c->largest_request_bytes)
			c->largest_request_bytes = req;
	}
}

void xpf_rt_compiles_finish(xpf_host *h, xpf_runtime *rt)
{
	(void)h;
	if (rt->ncompiles == 0)
		return;
	xpf_qsort(rt->compiles, rt->ncompiles, sizeof *rt->compiles, compile_cmp);
	fold_runs(rt);
	give_modules(rt);
	for (size_t i = 0; i < rt->ncompiles; i++)
		compile_figures(rt, &rt->compiles[i]);
}

bool xpf_rt_compile_oom(const xpf_runtime *rt, const xpf_rt_compile *c)
{
	if (c->finished)
		return false;
	if (c->retried)
		return true;
	if (c->allocator < 0)
		return false;
	uint64_t cap = rt->allocators[c->allocator].capacity_bytes;
	/* 80%: a compilation that stopped while the pool was that full ran
	 * out of it (the autotuner's scratch requests are hundreds of MiB) */
	return cap > 0 && c->peak_in_use_bytes >= cap / 5 * 4;
}
