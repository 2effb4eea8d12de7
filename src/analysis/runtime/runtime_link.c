/* The runtime, link: executions to modules (SPEC §4.3 rule order: program
 * id, name, requested_bytes, PjitFunction, kernels; then, for what is left
 * ambiguous, the arguments live at the start), the join of their
 * Build buffer allocations to the plan, numbering per module, `launched`.
 *
 * A big capture has hundreds of thousands of executions, so nothing here
 * works per execution over all executions or events: each module's plan is
 * read once, and "the previous (next) execution of the same module on the
 * same device" comes from a table filled walking backward. */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/plan/plan.h"
#include "analysis/runtime/runtime.h"
#include "analysis/runtime/runtime_priv.h"
#include "common/alloc.h"
#include "common/bisect.h"
#include "common/intern.h"
#include "common/lazy.h"
#include "common/map.h"
#include "common/runs.h"

/* ---- the plan's side of the join ----------------------------------------- */

static bool allocated_at_run(const xpf_plan_alloc *a)
{
	return !a->is_parameter && !a->is_constant && !a->is_thread_local && a->bytes > 0;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* A module's plan as the join reads it, read on first use: the buffer
 * allocations an execution allocates (not parameters, constants or
 * thread-local ones), in index order, and their sizes sorted. */
struct mod_plan {
	xpf_lazy read;        /* mod_plan_read, once */
	const xpf_plan *plan; /* NULL: no buffer assignment */
	size_t nrun;
	size_t *run;      /* indexes in buffer_allocations */
	uint64_t *size;   /* [nrun] their sizes, in index order */
	uint64_t *sorted; /* [nrun] the same, sorted */
};

/* The modules' plans as the join reads them, each read by whichever of
 * the join's threads asks first. */
struct mod_plans {
	struct mod_plan *m;
	size_t n;
};

struct mod_plan_ask {
	xpf_host *h;
	struct mod_plan *p;
	long m;
};

/* xpf_lazy_fn: module m's plan as the join reads it (none without a buffer
 * assignment, or when the HloProto does not decode: p->plan NULL); never
 * fails. */
static int mod_plan_read(void *ctx, void **value, xpf_error *err)
{
	const struct mod_plan_ask *a = ctx;
	struct mod_plan *p = a->p;
	const xpf_plan *pl;
	xpf_error e = { 0 };
	(void)err;
	*value = p;
	if (a->h->plan_of(a->h, (size_t)a->m, &pl, &e) != XPF_OK || !pl->has_assignment)
		return XPF_OK;
	p->plan = pl;
	p->run = xpf_realloc_array(NULL, pl->nallocs, sizeof *p->run);
	p->size = xpf_realloc_array(NULL, pl->nallocs, sizeof *p->size);
	p->sorted = xpf_realloc_array(NULL, pl->nallocs, sizeof *p->sorted);
	for (size_t i = 0; i < pl->nallocs; i++)
		if (allocated_at_run(&pl->allocs[i])) {
			p->run[p->nrun] = i;
			p->size[p->nrun++] = pl->allocs[i].bytes;
		}
	memcpy(p->sorted, p->size, p->nrun * sizeof *p->sorted);
	xpf_qsort(p->sorted, p->nrun, sizeof *p->sorted, u64_cmp);
	return XPF_OK;
}

static const struct mod_plan *mod_plan(xpf_host *h, struct mod_plans *mp, long m)
{
	struct mod_plan_ask a = { h, &mp->m[m], m };
	void *p = a.p;
	(void)xpf_lazy_get(&a.p->read, mod_plan_read, &a, &p, NULL);
	return p;
}

static void mod_plans_init(struct mod_plans *mp, size_t n)
{
	mp->m = xpf_calloc(n ? n : 1, sizeof *mp->m);
	mp->n = n;
	for (size_t m = 0; m < n; m++)
		xpf_lazy_init(&mp->m[m].read);
}

static void mod_plans_free(struct mod_plans *mp)
{
	for (size_t m = 0; m < mp->n; m++) {
		xpf_lazy_release(&mp->m[m].read, NULL);
		free(mp->m[m].run);
		free(mp->m[m].size);
		free(mp->m[m].sorted);
	}
	free(mp->m);
}

/* The requested sizes seen in an execution's Build buffer allocations:
 * in order, and sorted (filled on first use). */
struct seen {
	const uint64_t *v;
	size_t n;
	uint64_t *sorted;
	bool have_sorted;
};

/* Does module m's allocation list explain the requested sizes seen? */
static bool bytes_match(xpf_host *h, struct mod_plans *mp, long m, struct seen *s, bool partial)
{
	const struct mod_plan *p = mod_plan(h, mp, m);
	if (!p->plan || s->n == 0)
		return false;
	if (partial)
		return s->n <= p->nrun && memcmp(s->v, p->size, s->n * sizeof *s->v) == 0;
	if (s->n != p->nrun)
		return false;
	if (!s->have_sorted) {
		memcpy(s->sorted, s->v, s->n * sizeof *s->v);
		xpf_qsort(s->sorted, s->n, sizeof *s->sorted, u64_cmp);
		s->have_sorted = true;
	}
	return memcmp(s->sorted, p->sorted, s->n * sizeof *s->sorted) == 0;
}

/* ---- linking ------------------------------------------------------------ */

bool xpf_rt_name_names(xpf_host *h, const struct xpf_rt_priv *pv, size_t m, const char *n)
{
	const char *full = xpf_capture_module(h->cap, m)->name;
	if (strcmp(n, full) == 0 || strcmp(n, pv->base[m]) == 0)
		return true;
	/* "…Execute (<exe name>)": the executable name starts with the module's */
	size_t bl = strlen(pv->base[m]);
	return strncmp(n, pv->base[m], bl) == 0 && (n[bl] == '(' || n[bl] == '.' || n[bl] == ' ');
}

/* Narrow cand[] (flags) by a predicate's results; returns how many are left
 * if the rule matched at least one, else leaves cand untouched and returns 0. */
static size_t narrow(bool *cand, const bool *hit, size_t nm)
{
	size_t n = 0;
	for (size_t m = 0; m < nm; m++)
		n += cand[m] && hit[m];
	if (n == 0)
		return 0;
	for (size_t m = 0; m < nm; m++)
		cand[m] = cand[m] && hit[m];
	return n;
}

static long only(const bool *cand, size_t nm)
{
	long r = -1;
	for (size_t m = 0; m < nm; m++)
		if (cand[m]) {
			if (r >= 0)
				return -1;
			r = (long)m;
		}
	return r;
}

/* The rules of what the host side names (program_id, then the name) for
 * execution xi: the module and how (*link), or -1 with cand narrowed for
 * the rules after (*named: a rule named at least one module).  cand, hit:
 * scratch of h->nmodules flags each. */
static long link_host_side(xpf_host *h, const xpf_runtime *rt, size_t xi, bool *cand, bool *hit,
			   enum xpf_link *link, bool *named)
{
	struct xpf_rt_priv *pv = rt->priv;
	const xpf_rt_execution *x = &rt->executions[xi];
	size_t nm = h->nmodules;
	for (size_t m = 0; m < nm; m++)
		cand[m] = true;
	long r;
	if (pv->xb[xi].program_id >= 0) {
		for (size_t m = 0; m < nm; m++)
			hit[m] = xpf_capture_module(h->cap, m)->program_id ==
				 (uint64_t)pv->xb[xi].program_id;
		size_t k = narrow(cand, hit, nm);
		*named |= k > 0;
		if (k && (r = only(cand, nm)) >= 0) {
			*link = XPF_LINK_PROGRAM_ID;
			return r;
		}
	}
	if (x->host_name) {
		for (size_t m = 0; m < nm; m++)
			hit[m] = xpf_rt_name_names(h, pv, m, x->host_name);
		size_t k = narrow(cand, hit, nm);
		*named |= k > 0;
		if (k && (r = only(cand, nm)) >= 0) {
			*link = XPF_LINK_NAME;
			return r;
		}
	}
	return -1;
}

/* The ambiguous executions' candidates, kept in cv: the modules left by
 * the rules when one of them named any (named; cand narrowed, possibly to
 * every module of the capture: two compilations of one name), else none. */
struct cand_vec {
	xpf_rt_candidate *v;
	size_t n, cap;
};

static void keep_candidates(size_t xi, const bool *cand, size_t nm, bool named, struct cand_vec *cv)
{
	if (!named) /* no rule named any module */
		return;
	for (size_t m = 0; m < nm; m++)
		if (cand[m]) {
			xpf_rt_candidate *c = XPF_VEC_PUSH(cv->v, cv->n, cv->cap);
			c->execution = (uint32_t)xi;
			c->module = (int32_t)m;
		}
}

/* cand, hit: scratch of h->nmodules flags each. */
static void link_execution(xpf_host *h, xpf_runtime *rt, struct mod_plans *mp, size_t xi,
			   struct seen *seen, bool *cand, bool *hit, struct cand_vec *cv)
{
	struct xpf_rt_priv *pv = rt->priv;
	xpf_rt_execution *x = &rt->executions[xi];
	size_t nm = h->nmodules;
	if (nm == 0)
		return;
	enum xpf_link link;
	bool named = false;
	long r = link_host_side(h, rt, xi, cand, hit, &link, &named);
	if (r >= 0) {
		x->module = r;
		x->link = (uint8_t)link;
		return;
	}
	if (seen->n > 0) {
		for (size_t m = 0; m < nm; m++)
			hit[m] = cand[m] && bytes_match(h, mp, (long)m, seen, false);
		size_t k = narrow(cand, hit, nm);
		if (k == 0 && x->stopped_in_build) {
			for (size_t m = 0; m < nm; m++)
				hit[m] = cand[m] && bytes_match(h, mp, (long)m, seen, true);
			k = narrow(cand, hit, nm);
		}
		named |= k > 0;
		if (k && (r = only(cand, nm)) >= 0) {
			x->module = r;
			x->link = XPF_LINK_BYTES;
			return;
		}
	}
	if (pv->xb[xi].pjit) {
		const char *f = pv->xb[xi].pjit + strlen("PjitFunction(");
		size_t fl = strlen(f);
		if (fl > 0 && f[fl - 1] == ')')
			fl--;
		for (size_t m = 0; m < nm; m++) {
			const char *b = pv->base[m];
			hit[m] = strncmp(b, "jit_", 4) == 0 && strlen(b + 4) == fl &&
				 strncmp(b + 4, f, fl) == 0;
		}
		size_t k = narrow(cand, hit, nm);
		named |= k > 0;
		if (k && (r = only(cand, nm)) >= 0) {
			x->module = r;
			x->link = XPF_LINK_PJIT;
			return;
		}
	}
	if (x->device >= 0) {
		long km = xpf_rt_first_kernel_module(pv, x->device, x->start_ps);
		if (km >= 0 && cand[km]) {
			x->module = km;
			x->link = XPF_LINK_KERNELS;
			return;
		}
	}
	keep_candidates(xi, cand, nm, named, cv);
}

void xpf_rt_kernels_wanted(xpf_host *h, xpf_runtime *rt, bool *want)
{
	struct xpf_rt_priv *pv = rt->priv;
	size_t nm = h->nmodules;
	bool *cand = xpf_calloc(nm ? 2 * nm : 1, sizeof *cand), *hit = cand + nm;
	/* executions come in runs of one name and program_id: the last
	 * answer of the host-side rules is kept */
	const char *last_name = NULL;
	int64_t last_pid = -1;
	bool last_named = false, have_last = false;
	for (size_t xi = 0; xi < rt->nexecutions; xi++) {
		const xpf_rt_execution *x = &rt->executions[xi];
		bool launched = x->launched == XPF_LAUNCHED_YES || pv->xb[xi].thunk;
		if (nm == 0 && launched)
			continue; /* no module to link, nothing to ask */
		if (!have_last || x->host_name != last_name || pv->xb[xi].program_id != last_pid) {
			enum xpf_link link;
			bool named = false;
			last_named =
				nm > 0 && link_host_side(h, rt, xi, cand, hit, &link, &named) >= 0;
			last_name = x->host_name;
			last_pid = pv->xb[xi].program_id;
			have_last = true;
		}
		if (launched && (last_named || nm == 0))
			continue;
		if (x->device >= 0 && (size_t)x->device < pv->ndev) {
			want[x->device] = true;
		} else if (x->device < 0) { /* its device is found later */
			for (size_t d = 0; d < pv->ndev; d++)
				want[d] = true;
			break;
		}
	}
	free(cand);
}

/* ---- the join to the plan ------------------------------------------------ */

/* Scratch of join_plan: a flag per buffer allocation of the largest plan
 * met, all false between calls. */
struct used {
	bool *v;
	size_t n;
};

/* Execution xi's Build buffer allocation events (evs) and their requested
 * sizes (req), each array of f->maxcnt + 1; their count. */
static size_t build_events(const xpf_runtime *rt, const struct xpf_rt_finish *f, size_t xi,
			   size_t *evs, uint64_t *req)
{
	const xpf_rt_execution *x = &rt->executions[xi];
	const idx32 *mine = &f->own[xi ? f->xend[xi - 1] : 0];
	size_t cnt = (size_t)(&f->own[f->xend[xi]] - mine), n = 0;
	for (size_t k = 0; k < cnt; k++) {
		const xpf_rt_event *e = &rt->events[mine[k]];
		if (e->kind != XPF_RT_ALLOC || !e->in_build ||
		    (x->allocator >= 0 && xpf_rt_ev_allocator(rt, e) != x->allocator))
			continue;
		evs[n] = mine[k];
		req[n++] = xpf_rt_ev_requested(rt, e);
	}
	return n;
}

/* evs: the execution's Build buffer allocation events; the events it
 * matches get their buffer_allocation and role. */
static void join_plan(xpf_host *h, xpf_runtime *rt, struct mod_plans *mp, size_t xi,
		      const size_t *evs, size_t nev, struct used *u)
{
	xpf_rt_execution *x = &rt->executions[xi];
	if (x->module < 0 || nev == 0)
		return;
	const struct mod_plan *p = mod_plan(h, mp, x->module);
	if (!p->plan)
		return;
	if (p->plan->nallocs + 1 > u->n) {
		free(u->v);
		u->n = p->plan->nallocs + 1;
		u->v = xpf_calloc(u->n, sizeof *u->v);
	}
	bool *used = u->v;
	size_t nmt = 0;
	for (size_t k = 0; k < nev; k++) {
		xpf_rt_event *e = &rt->events[evs[k]];
		for (size_t j = 0; j < p->nrun; j++) {
			size_t i = p->run[j];
			if (used[i] || p->size[j] != xpf_rt_ev_requested(rt, e) ||
			    i >= (size_t)XPF_RT_MAX_BUFFER_ALLOCATIONS) /* not held in 27 bits */
				continue;
			const xpf_plan_alloc *a = &p->plan->allocs[i];
			used[i] = true;
			e->buffer_allocation = (long)i;
			e->role = a->maybe_live_out ? XPF_RT_ROLE_OUTPUT : XPF_RT_ROLE_TEMP;
			nmt++;
			if (e->role == XPF_RT_ROLE_OUTPUT)
				x->output_bytes += xpf_rt_ev_bytes(rt, e);
			else
				x->temp_bytes += xpf_rt_ev_bytes(rt, e);
			break;
		}
	}
	for (size_t k = 0; k < nev; k++) /* used[] back to all false */
		if (rt->events[evs[k]].buffer_allocation >= 0)
			used[rt->events[evs[k]].buffer_allocation] = false;
	x->nmatched = nmt;
}

/* For each execution, the next one in index (start) order with the same
 * (module, device), or with the same device when any_module; nx: none.
 * One walk backward, remembering the last execution seen of each key. */
static idx32 *next_same(const xpf_runtime *rt, bool any_module)
{
	size_t nx = rt->nexecutions;
	idx32 *next = xpf_realloc_array(NULL, nx ? nx : 1, sizeof *next);
	xpf_map last;
	xpf_map_init(&last, 8);
	for (size_t xi = nx; xi-- > 0;) {
		const xpf_rt_execution *x = &rt->executions[xi];
		int64_t k = xpf_map_put(&last, any_module ? 0 : (uint32_t)x->module,
					(uint32_t)x->device, (int64_t)xi);
		next[xi] = k < 0 ? (idx32)nx : (idx32)k;
	}
	xpf_map_free(&last);
	return next;
}

/* Link and join executions [from, to): each writes only its own fields
 * and its own events', so two ranges run side by side. */
struct join_range {
	xpf_host *h;
	xpf_runtime *rt;
	struct mod_plans *mp;
	const struct xpf_rt_finish *f;
	size_t from, to;
	struct cand_vec cands; /* the range's ambiguous executions' candidates */
};

static void join_range_run(void *arg)
{
	struct join_range *j = arg;
	xpf_host *h = j->h;
	xpf_runtime *rt = j->rt;
	size_t nm = h->nmodules, maxcnt = j->f->maxcnt;
	uint64_t *seen_v = xpf_realloc_array(NULL, maxcnt + 1, sizeof *seen_v);
	uint64_t *seen_sorted = xpf_realloc_array(NULL, maxcnt + 1, sizeof *seen_sorted);
	size_t *build_evs = xpf_realloc_array(NULL, maxcnt + 1, sizeof *build_evs);
	bool *cand = xpf_calloc(nm, sizeof *cand), *hit = xpf_calloc(nm, sizeof *hit);
	struct used used = { NULL, 0 };
	for (size_t xi = j->from; xi < j->to; xi++) {
		xpf_rt_execution *x = &rt->executions[xi];
		size_t nseen = build_events(rt, j->f, xi, build_evs, seen_v);
		struct seen seen = { seen_v, nseen, seen_sorted, false };
		link_execution(h, rt, j->mp, xi, &seen, cand, hit, &j->cands);
		if (x->module >= 0 && nseen > 0)
			join_plan(h, rt, j->mp, xi, build_evs, nseen, &used);
	}
	free(used.v);
	free(seen_v);
	free(seen_sorted);
	free(build_evs);
	free(cand);
	free(hit);
}

/* The two ranges' candidates as the runtime's (the first range's
 * executions come before the second's: still sorted). */
static void join_candidates(xpf_runtime *rt, struct join_range *jr)
{
	size_t n0 = jr[0].cands.n, n1 = jr[1].cands.n;
	rt->ncandidates = n0 + n1;
	rt->candidates =
		xpf_realloc_array(jr[0].cands.v, n0 + n1 ? n0 + n1 : 1, sizeof *rt->candidates);
	if (n1)
		memcpy(rt->candidates + n0, jr[1].cands.v, n1 * sizeof *rt->candidates);
	free(jr[1].cands.v);
}

/* ---- the last rule: the arguments live at the start ------------------- */

static bool u64_below(const void *item, const void *key)
{
	return *(const uint64_t *)item < *(const uint64_t *)key;
}

/* Is every entry parameter of pl (its bytes) among the live sizes (sorted;
 * each block serves one parameter)?  used: scratch of nlive flags. */
static bool params_live(const xpf_plan *pl, const uint64_t *live, size_t nlive, bool *used)
{
	memset(used, 0, nlive * sizeof *used);
	for (size_t i = 0; i < pl->nparams; i++) {
		uint64_t b = pl->params[i].bytes;
		if (b == 0)
			continue;
		size_t k = xpf_lower_bound(&b, live, nlive, sizeof *live, u64_below);
		while (k < nlive && live[k] == b && used[k])
			k++;
		if (k == nlive || live[k] != b)
			return false;
		used[k] = true;
	}
	return true;
}

/* Among execution xi's candidates c[0..n), the one module whose every
 * parameter has a block of its size live on the device when xi starts, or
 * -1 (none, several, or a candidate without a plan: it cannot be ruled
 * out). */
static long params_pick(xpf_host *h, const xpf_runtime *rt, struct mod_plans *mp, size_t xi,
			const xpf_rt_candidate *c, size_t n)
{
	xpf_rt_block *bl;
	size_t nb;
	long pick = -1;
	if (xpf_runtime_live_at(rt, xi, &bl, &nb, NULL) != XPF_OK)
		return -1;
	uint64_t *live = xpf_realloc_array(NULL, nb ? nb : 1, sizeof *live);
	bool *used = xpf_calloc(nb ? nb : 1, sizeof *used);
	for (size_t i = 0; i < nb; i++) /* the array's size, not BFC's rounding */
		live[i] = bl[i].has_requested ? bl[i].requested_bytes : bl[i].bytes;
	xpf_qsort(live, nb, sizeof *live, u64_cmp);
	for (size_t k = 0; k < n; k++) {
		const struct mod_plan *p = mod_plan(h, mp, c[k].module);
		bool hit = !p->plan || params_live(p->plan, live, nb, used);
		if (hit && (pick >= 0 || !p->plan)) {
			pick = -1;
			break;
		}
		if (hit)
			pick = c[k].module;
	}
	free(used);
	free(live);
	xpf_rt_blocks_free(bl, nb);
	return pick;
}

/* SPEC §4.3's rules leave a retrace's failed call ambiguous when what it
 * allocated before failing is a prefix of both compilations' sizes (issue
 * 37): then its arguments tell, as they are live on its device when it
 * starts.  Each ambiguous execution linked so is joined to its plan and
 * leaves the candidates. */
static void link_by_parameters(xpf_host *h, xpf_runtime *rt, struct mod_plans *mp,
			       const struct xpf_rt_finish *f)
{
	size_t w = 0, maxcnt = f->maxcnt + 1;
	size_t *evs = xpf_realloc_array(NULL, maxcnt, sizeof *evs);
	uint64_t *req = xpf_realloc_array(NULL, maxcnt, sizeof *req);
	struct used used = { NULL, 0 };
	for (size_t i = 0, j; i < rt->ncandidates; i = j) {
		size_t xi = rt->candidates[i].execution;
		for (j = i; j < rt->ncandidates && rt->candidates[j].execution == xi; j++)
			;
		long m = params_pick(h, rt, mp, xi, &rt->candidates[i], j - i);
		if (m < 0) {
			memmove(&rt->candidates[w], &rt->candidates[i],
				(j - i) * sizeof *rt->candidates);
			w += j - i;
			continue;
		}
		rt->executions[xi].module = m;
		rt->executions[xi].link = XPF_LINK_PARAMETERS;
		join_plan(h, rt, mp, xi, evs, build_events(rt, f, xi, evs, req), &used);
	}
	rt->ncandidates = w;
	free(used.v);
	free(evs);
	free(req);
}

/* Step 3, after the kernel scans: link to modules (the last rule reads the
 * kernels), join to the plans, number per module, launched, between. */
int xpf_rt_finish_end(xpf_host *h, xpf_runtime *rt, struct xpf_rt_finish *f, xpf_error *err)
{
	struct xpf_rt_priv *pv = rt->priv;
	size_t nx = rt->nexecutions;
	struct mod_plans mp;
	mod_plans_init(&mp, h->nmodules);
	/* two ranges of about as many events each, on two threads */
	size_t half = 0;
	while (half < nx && (size_t)f->xend[half] * 2 < (nx ? (size_t)f->xend[nx - 1] : 0))
		half++;
	struct join_range jr[2] = { { h, rt, &mp, f, 0, half, { NULL, 0, 0 } },
				    { h, rt, &mp, f, half, nx, { NULL, 0, 0 } } };
	xpf_rt_beside(half > 0 && half < nx ? f->threads : 1, join_range_run, &jr[0],
		      join_range_run, &jr[1]);
	join_candidates(rt, jr);
	link_by_parameters(h, rt, &mp, f);
	mod_plans_free(&mp);
	xpf_rt_finish_release(f);

	/* prev: the execution before of the same module on the same device;
	 * numbers per (module, device); growth */
	idx32 *next_md = next_same(rt, false);
	for (size_t xi = 0; xi < nx; xi++)
		if (next_md[xi] < nx && rt->executions[xi].module >= 0)
			rt->executions[next_md[xi]].prev = (long)xi;
	for (size_t xi = 0; xi < nx; xi++) {
		xpf_rt_execution *x = &rt->executions[xi];
		if (x->module >= 0)
			x->module_execution =
				x->prev >= 0 ? rt->executions[x->prev].module_execution + 1 : 1;
	}

	/* launched: any kernel of the module before its next execution on the
	 * device (any execution there when the module is unknown). */
	idx32 *next_dev = next_same(rt, true);
	for (size_t xi = nx; xi-- > 0;) {
		xpf_rt_execution *x = &rt->executions[xi];
		size_t k = x->module < 0 ? next_dev[xi] : next_md[xi];
		int64_t until = k < nx ? rt->executions[k].start_ps : INT64_MAX;
		if (x->launched == XPF_LAUNCHED_YES)
			continue;
		if (pv->xb[xi].thunk) {
			x->launched = XPF_LAUNCHED_YES;
			continue;
		}
		bool after;
		if (xpf_rt_has_kernel(pv, x->device, x->module, x->start_ps, until, &after))
			x->launched = XPF_LAUNCHED_YES;
		else if (x->stopped_in_build || pv->xb[xi].retried)
			x->launched = XPF_LAUNCHED_NO;
		else if (after && x->module >= 0)
			x->launched = XPF_LAUNCHED_NO;
		else
			x->launched = XPF_LAUNCHED_UNKNOWN;
	}
	free(next_md);
	free(next_dev);

	/* Retries: the allocator of the execution when the wait had none. */
	for (size_t i = 0; i < rt->nretries; i++) {
		xpf_rt_retry *r = &rt->retries[i];
		if (r->allocator < 0 && r->execution >= 0)
			r->allocator = rt->executions[r->execution].allocator;
	}

	return XPF_OK;
}
