/* The runtime, part 2: executions (SPEC §4.3).  Numbering, the link to
 * modules (rule order: program id, name, requested_bytes, PjitFunction,
 * kernels), in use at the start, `launched`, the join to the plan, what was
 * live at each start and the host events between executions.
 *
 * A big capture has hundreds of thousands of executions and millions of
 * allocator events, so nothing here works per execution over all
 * executions or all events: the events are read once into compact
 * per-allocator arrays, each module's plan is read once, and "the previous
 * (next) execution of the same module on the same device" comes from a
 * table filled walking forward (backward). */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/runtime.h"
#include "analysis/runtime_priv.h"
#include "common/alloc.h"
#include "common/lazy.h"
#include "common/map.h"
#include "common/runs.h"

/* ---- ordering --------------------------------------------------------- */

/* Event and execution indexes in the scratch arrays below: 32 bits, to keep
 * them small (fresh memory is what costs most here: every page is a fault).
 * 4G events would take 600 GB of xpf_rt_event before getting here. */
typedef uint32_t idx32;


/* An execution's sort key: (start, device, line), then its index. */
struct exec_key {
	int64_t start_ps;
	int32_t device;
	uint32_t line;
	idx32 i;
};

static int key_cmp(const void *a, const void *b)
{
	const struct exec_key *x = a, *y = b;
	if (x->start_ps != y->start_ps)
		return x->start_ps < y->start_ps ? -1 : 1;
	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

static struct exec_key exec_key_of(const xpf_rt_execution *ex, size_t i)
{
	return (struct exec_key){ ex[i].start_ps, ex[i].device, ex[i].line, (idx32)i };
}

/* The merge compares the executions where they lie: a copy of their keys
 * (24 B each) was 6.6 MB of fresh pages on the bench's 1 GiB capture. */
static bool key_before(const void *ctx, size_t i, size_t j)
{
	const xpf_rt_execution *ex = ctx;
	struct exec_key a = exec_key_of(ex, i), b = exec_key_of(ex, j);
	return key_cmp(&a, &b) < 0;
}

/* xpf_perm_apply's moves of executions with their xpf_rt_xbuild (spare:
 * place n). */
struct exec_moves {
	xpf_rt_execution *ex;
	struct xpf_rt_xbuild *xb;
	size_t n;
	xpf_rt_execution spare_x;
	struct xpf_rt_xbuild spare_b;
};

static void exec_move(void *ctx, size_t to, size_t from)
{
	struct exec_moves *m = ctx;
	*(to == m->n ? &m->spare_x : &m->ex[to]) = from == m->n ? m->spare_x : m->ex[from];
	*(to == m->n ? &m->spare_b : &m->xb[to]) = from == m->n ? m->spare_b : m->xb[from];
}

/* Sort the executions (and their xpf_rt_xbuild) by (start, device, line,
 * scan order): they come as runs in that order (a line's), merged.  Returns
 * the old index -> new index map, or NULL when they were in order already
 * (nothing moved).  The caller renumbers the events' `execution`; the
 * retries' are renumbered here. */
static idx32 *order_executions(xpf_runtime *rt)
{
	size_t n = rt->nexecutions;
	struct xpf_rt_priv *pv = rt->priv;
	xpf_rt_execution *ex = rt->executions;
	size_t k = 1;
	for (; k < n; k++) {
		struct exec_key a = exec_key_of(ex, k - 1), b = exec_key_of(ex, k);
		if (key_cmp(&a, &b) > 0)
			break;
	}
	if (k >= n)
		return NULL;

	size_t perm_len;
	uint32_t *ord = xpf_big_calloc(n, sizeof *ord, &perm_len);
	xpf_runs_merge(n, key_before, ex, ord);
	idx32 *inv = xpf_realloc_array(NULL, n, sizeof *inv);
	for (size_t i = 0; i < n; i++)
		inv[ord[i]] = (idx32)i;

	struct exec_moves m = { ex, pv->xb, n, { 0 }, { 0 } };
	xpf_perm_apply(n, ord, exec_move, &m);
	xpf_big_free(ord, perm_len);
	for (size_t i = 0; i < rt->nretries; i++)
		if (rt->retries[i].execution >= 0)
			rt->retries[i].execution = inv[rt->retries[i].execution];
	return inv;
}

/* ---- the plan's side of the join ----------------------------------------- */

static bool allocated_at_run(const Xla__BufferAllocationProto *a)
{
	return !a->is_entry_computation_parameter && !a->is_constant && !a->is_thread_local &&
	       a->size > 0;
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
	const Xla__BufferAssignmentProto *ba; /* NULL: none */
	size_t nrun;
	size_t *run;          /* indexes in buffer_allocations */
	uint64_t *size;       /* [nrun] their sizes, in index order */
	uint64_t *sorted;     /* [nrun] the same, sorted */
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
 * assignment: p->ba NULL); never fails. */
static int mod_plan_read(void *ctx, void **value, xpf_error *err)
{
	const struct mod_plan_ask *a = ctx;
	struct mod_plan *p = a->p;
	const Xla__HloProto *hp;
	xpf_error e = { 0 };
	(void)err;
	*value = p;
	if (xpf_capture_module_hlo(a->h->cap, (size_t)a->m, &hp, &e) != XPF_OK || !hp->buffer_assignment)
		return XPF_OK;
	const Xla__BufferAssignmentProto *ba = hp->buffer_assignment;
	p->ba = ba;
	p->run = xpf_realloc_array(NULL, ba->n_buffer_allocations, sizeof *p->run);
	p->size = xpf_realloc_array(NULL, ba->n_buffer_allocations, sizeof *p->size);
	p->sorted = xpf_realloc_array(NULL, ba->n_buffer_allocations, sizeof *p->sorted);
	for (size_t i = 0; i < ba->n_buffer_allocations; i++)
		if (allocated_at_run(ba->buffer_allocations[i])) {
			p->run[p->nrun] = i;
			p->size[p->nrun++] = (uint64_t)ba->buffer_allocations[i]->size;
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
	if (!p->ba || s->n == 0)
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

static bool name_names(xpf_host *h, const struct xpf_rt_priv *pv, size_t m, const char *n)
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
			hit[m] = xpf_capture_module(h->cap, m)->program_id == (uint64_t)pv->xb[xi].program_id;
		size_t k = narrow(cand, hit, nm);
		*named |= k > 0;
		if (k && (r = only(cand, nm)) >= 0) {
			*link = XPF_LINK_PROGRAM_ID;
			return r;
		}
	}
	if (x->host_name) {
		for (size_t m = 0; m < nm; m++)
			hit[m] = name_names(h, pv, m, x->host_name);
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

size_t xpf_rt_first_event_at(const xpf_runtime *rt, int64_t t_ps)
{
	size_t lo = 0, hi = rt->nevents;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (rt->events[mid].t_ps < t_ps)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

size_t xpf_rt_candidates(const xpf_runtime *rt, size_t xi, const xpf_rt_candidate **first)
{
	size_t lo = 0, hi = rt->ncandidates;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (rt->candidates[mid].execution < xi)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t n = 0;
	while (lo + n < rt->ncandidates && rt->candidates[lo + n].execution == xi)
		n++;
	*first = rt->candidates + lo;
	return n;
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
			last_named = nm > 0 && link_host_side(h, rt, xi, cand, hit, &link, &named) >= 0;
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

/* evs: the execution's Build buffer allocation events; used: scratch, one
 * flag per buffer allocation of the largest plan, all false (and left so);
 * the events it matches get their buffer_allocation and role. */
static void join_plan(xpf_host *h, xpf_runtime *rt, struct mod_plans *mp, size_t xi,
		      const size_t *evs, size_t nev, bool *used)
{
	xpf_rt_execution *x = &rt->executions[xi];
	if (x->module < 0 || nev == 0)
		return;
	const struct mod_plan *p = mod_plan(h, mp, x->module);
	if (!p->ba)
		return;
	size_t nmt = 0;
	for (size_t k = 0; k < nev; k++) {
		xpf_rt_event *e = &rt->events[evs[k]];
		for (size_t j = 0; j < p->nrun; j++) {
			size_t i = p->run[j];
			if (used[i] || p->size[j] != xpf_rt_ev_requested(rt, e) ||
			    i >= (size_t)XPF_RT_MAX_BUFFER_ALLOCATIONS) /* not held in 27 bits */
				continue;
			const Xla__BufferAllocationProto *a = p->ba->buffer_allocations[i];
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

/* ---- per-allocator events, executions by (module, device) ---------------- */

static int pool_allocator(const xpf_runtime *rt, int device)
{
	for (size_t a = 0; a < rt->nallocators; a++)
		if (rt->allocators[a].is_pool && rt->allocators[a].device == device)
			return (int)a;
	return -1;
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

/* ---- finishing ------------------------------------------------------------ */

/* Step 1, before the events are ordered or beside their order (it touches
 * none of their fields): the executions sorted (the kernels' bucket times
 * are cut at their starts when a device's kernels are first read,
 * runtime.c), and their event lists allocated. */
void xpf_rt_finish_begin(xpf_runtime *rt, struct xpf_rt_finish *f)
{
	memset(f, 0, sizeof *f);
	if (rt->nexecutions >= UINT32_MAX || rt->nevents >= UINT32_MAX)
		abort();
	f->inv = order_executions(rt);
	/* the executions' event lists (xpf_rt_finish_events), as many places
	 * as events at most; their pages touched as they fill, or beforehand
	 * by xpf_rt_finish_warm */
	f->xend = xpf_big_calloc(rt->nexecutions + 1, sizeof *f->xend, &f->xend_len);
	f->own = xpf_big_calloc(rt->nevents + 1, sizeof *f->own, &f->own_len);
}

void xpf_rt_finish_warm(struct xpf_rt_finish *f, const xpf_runtime *rt)
{
	/* a write a page: the kernel's fresh zeroed page for each (or a huge
	 * one for 512 of them) */
	const size_t page = 4096;
	uint8_t *b[2] = { (uint8_t *)f->xend, (uint8_t *)f->own };
	size_t n[2] = { (rt->nexecutions + 1) * sizeof *f->xend, (rt->nevents + 1) * sizeof *f->own };
	for (int k = 0; k < 2; k++)
		for (size_t o = 0; o < n[k]; o += page)
			((volatile uint8_t *)b[k])[o] = 0;
}

/* Step 2, once the events are ordered and replayed (nothing here reads a
 * kernel, so it runs beside the kernel scans). */
void xpf_rt_finish_events(xpf_runtime *rt, struct xpf_rt_finish *f)
{
	size_t nx = rt->nexecutions, na = rt->nallocators, ne = rt->nevents;

	/* Two passes over the events.  The first renumbers their executions,
	 * counts each execution's, and marks allocations inside an execution
	 * as "other" (join_plan overwrites those it matches to the plan); the
	 * second lists each execution's own events (nested on its line) in
	 * event (time) order.  Each allocator's are the replay's live index. */
	struct xpf_rt_priv *pv = rt->priv;
	idx32 *inv = f->inv;
	idx32 *xend = f->xend; /* counts, then ends */
	for (size_t i = 0; i < ne; i++) {
		xpf_rt_event *e = &rt->events[i];
		long x = e->execution;
		if (x >= 0) {
			if (inv)
				e->execution = x = inv[x];
			xend[x]++;
			if (e->kind == XPF_RT_ALLOC && e->role == XPF_RT_ROLE_NONE)
				e->role = XPF_RT_ROLE_EXEC_OTHER;
		}
	}
	free(inv);
	f->inv = NULL;
	size_t nown = 0;
	for (size_t x = 0; x < nx; x++) {
		size_t c = xend[x];
		f->maxcnt = c > f->maxcnt ? c : f->maxcnt;
		xend[x] = (idx32)nown;     /* start, advanced to the end by the fill */
		nown += c;
	}
	idx32 *own = f->own;
	for (size_t i = 0; i < ne; i++) {
		const xpf_rt_event *e = &rt->events[i];
		if (e->execution >= 0)
			own[xend[e->execution]++] = (idx32)i;
	}
	const uint32_t *aev = pv->live_ev;
	const size_t *abeg = pv->live_beg, *aend = pv->live_beg + 1;

	/* Each execution's device: its first allocation on a device pool (the
	 * only pool's when there is one). */
	size_t npool = 0;
	int single_pool = -1;
	for (size_t a = 0; a < na; a++)
		if (rt->allocators[a].is_pool) {
			npool++;
			single_pool = rt->allocators[a].device;
		}
	for (size_t xi = 0; xi < nx; xi++) {
		xpf_rt_execution *x = &rt->executions[xi];
		const idx32 *mine = &own[xi ? xend[xi - 1] : 0];
		size_t cnt = (size_t)(&own[xend[xi]] - mine);
		x->n = xi + 1;
		for (size_t k = 0; k < cnt && x->device < 0; k++) {
			const xpf_rt_event *e = &rt->events[mine[k]];
			const xpf_rt_allocator *al = &rt->allocators[xpf_rt_ev_allocator(rt, e)];
			if (al->is_pool && e->kind == XPF_RT_ALLOC)
				x->device = xpf_rt_device16(al->device);
		}
		if (x->device < 0 && npool == 1)
			x->device = xpf_rt_device16(single_pool);
		x->allocator = (int16_t)(x->device >= 0 ? pool_allocator(rt, x->device) : -1);
	}

	/* In use at the start, the peak during, the events in it.  The
	 * executions are in start order, so each allocator's first event at or
	 * after a start only moves forward.  Allocator a's events are
	 * aev[abeg[a] .. aend[a]); cursor[a]: the first at or after the last
	 * start asked. */
	size_t *cursor = xpf_calloc(na + 1, sizeof *cursor);
	memcpy(cursor, abeg, na * sizeof *cursor);
	for (size_t xi = 0; xi < nx; xi++) {
		xpf_rt_execution *x = &rt->executions[xi];
		int a = x->allocator;
		size_t n = a >= 0 ? aend[a] : 0, i0 = a >= 0 ? cursor[a] : 0;
		if (a >= 0 && abeg[a] < n) {
			const xpf_rt_event *ev = rt->events;
			while (i0 < n && ev[aev[i0]].t_ps < x->start_ps)
				i0++;
			cursor[a] = i0;
			x->in_use_known = true;
			x->in_use_at_start_bytes = i0 > abeg[a] ? ev[aev[i0 - 1]].in_use_after :
								  rt->allocators[a].first_in_use_bytes;
			uint64_t peak = x->in_use_at_start_bytes;
			size_t k = i0, nalloc = 0;
			for (; k < n && ev[aev[k]].t_ps <= x->end_ps; k++) {
				const xpf_rt_event *e = &ev[aev[k]];
				nalloc += e->kind == XPF_RT_ALLOC;
				if (e->in_use_after > peak)
					peak = e->in_use_after;
			}
			x->peak_during_bytes = peak;
			x->allocations += nalloc;
			x->deallocations += (k - i0) - nalloc;
		}
	}
	free(cursor);
}

void xpf_rt_finish_release(struct xpf_rt_finish *f)
{
	free(f->inv);
	xpf_big_free(f->xend, f->xend_len);
	xpf_big_free(f->own, f->own_len);
	memset(f, 0, sizeof *f);
}

/* Link and join executions [from, to): each writes only its own fields
 * and its own events', so two ranges run side by side. */
struct join_range {
	xpf_host *h;
	xpf_runtime *rt;
	struct mod_plans *mp;
	const struct xpf_rt_finish *f;
	size_t from, to;
	struct cand_vec cands;   /* the range's ambiguous executions' candidates */
};

static void *join_range_run(void *arg)
{
	struct join_range *j = arg;
	xpf_host *h = j->h;
	xpf_runtime *rt = j->rt;
	size_t nm = h->nmodules, maxcnt = j->f->maxcnt, maxba = 0;
	const idx32 *xend = j->f->xend, *own = j->f->own;
	uint64_t *seen_v = xpf_realloc_array(NULL, maxcnt + 1, sizeof *seen_v);
	uint64_t *seen_sorted = xpf_realloc_array(NULL, maxcnt + 1, sizeof *seen_sorted);
	size_t *build_evs = xpf_realloc_array(NULL, maxcnt + 1, sizeof *build_evs);
	bool *cand = xpf_calloc(nm, sizeof *cand), *hit = xpf_calloc(nm, sizeof *hit);
	bool *used = NULL;
	for (size_t xi = j->from; xi < j->to; xi++) {
		xpf_rt_execution *x = &rt->executions[xi];
		const idx32 *mine = &own[xi ? xend[xi - 1] : 0];
		size_t cnt = (size_t)(&own[xend[xi]] - mine);
		size_t nseen = 0;
		for (size_t k = 0; k < cnt; k++) {
			const xpf_rt_event *e = &rt->events[mine[k]];
			if (e->kind != XPF_RT_ALLOC || !e->in_build ||
			    (x->allocator >= 0 && xpf_rt_ev_allocator(rt, e) != x->allocator))
				continue;
			build_evs[nseen] = mine[k];
			seen_v[nseen++] = xpf_rt_ev_requested(rt, e);
		}
		struct seen seen = { seen_v, nseen, seen_sorted, false };
		link_execution(h, rt, j->mp, xi, &seen, cand, hit, &j->cands);
		if (x->module >= 0 && nseen > 0) {
			const struct mod_plan *p = mod_plan(h, j->mp, x->module);
			if (p->ba && p->ba->n_buffer_allocations + 1 > maxba) {
				free(used);
				maxba = p->ba->n_buffer_allocations + 1;
				used = xpf_calloc(maxba, sizeof *used);
			}
			join_plan(h, rt, j->mp, xi, build_evs, nseen, used);
		}
	}
	free(used);
	free(seen_v);
	free(seen_sorted);
	free(build_evs);
	free(cand);
	free(hit);
	return NULL;
}

/* The two ranges' candidates as the runtime's (the first range's
 * executions come before the second's: still sorted). */
static void join_candidates(xpf_runtime *rt, struct join_range *jr)
{
	size_t n0 = jr[0].cands.n, n1 = jr[1].cands.n;
	rt->ncandidates = n0 + n1;
	rt->candidates = xpf_realloc_array(jr[0].cands.v, n0 + n1 ? n0 + n1 : 1, sizeof *rt->candidates);
	if (n1)
		memcpy(rt->candidates + n0, jr[1].cands.v, n1 * sizeof *rt->candidates);
	free(jr[1].cands.v);
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
	pthread_t tid;
	bool two = f->threads > 1 && half > 0 && half < nx &&
		   pthread_create(&tid, NULL, join_range_run, &jr[1]) == 0;
	join_range_run(&jr[0]);
	if (two)
		pthread_join(tid, NULL);
	else
		join_range_run(&jr[1]);
	mod_plans_free(&mp);
	xpf_rt_finish_release(f);
	join_candidates(rt, jr);

	/* prev: the execution before of the same module on the same device;
	 * numbers per (module, device); growth */
	idx32 *next_md = next_same(rt, false);
	for (size_t xi = 0; xi < nx; xi++)
		if (next_md[xi] < nx && rt->executions[xi].module >= 0)
			rt->executions[next_md[xi]].prev = (long)xi;
	for (size_t xi = 0; xi < nx; xi++) {
		xpf_rt_execution *x = &rt->executions[xi];
		if (x->module >= 0)
			x->module_execution = x->prev >= 0 ?
				rt->executions[x->prev].module_execution + 1 : 1;
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

/* ---- between ------------------------------------------------------------- */

struct name_dur {
	const char *name;
	int64_t dur_ps;
};

static int nd_cmp(const void *a, const void *b)
{
	return strcmp(((const struct name_dur *)a)->name, ((const struct name_dur *)b)->name);
}

static int row_cmp(const void *a, const void *b)
{
	const xpf_rt_between_row *x = a, *y = b;
	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(x->name, y->name);
}

int xpf_runtime_between(xpf_host *h, const xpf_runtime *rt, size_t from, size_t to,
			xpf_rt_between *out, xpf_error *err)
{
	const xpf_rt_execution *a = &rt->executions[from], *b = &rt->executions[to];
	out->from_execution = (long)from;
	out->to_execution = (long)to;
	out->from_ns = xpf_rt_x_end_ns(a);
	out->to_ns = xpf_rt_x_start_ns(b);
	out->nrows = 0;
	out->rows = NULL;
	long pi = xpf_capture_find_plane(h->cap, "/host:CPU");
	if (pi < 0 || a->end_ps > b->start_ps)
		return XPF_OK;
	const xpf_plane *p;
	int rc = xpf_capture_plane(h->cap, (size_t)pi, &p, err);
	if (rc != XPF_OK)
		return rc;
	int64_t base;
	rc = xpf_capture_time_base(h->cap, &base, err);
	if (rc != XPF_OK)
		return rc;
	struct name_dur *v = NULL;
	size_t n = 0, cap = 0;
	xpf_window w = { 0 };
	const struct xpf_rt_priv *pv = rt->priv;
	for (size_t l = 0; l < p->nlines; l++) {
		xpf_event_iter it;
		xpf_event_head ev;
		/* a line whose events all end before the window or all start
		 * after it holds none of it */
		if (pv->line_t0 && l < pv->nlines &&
		    (pv->line_t1[l] < a->end_ps || pv->line_t0[l] > b->start_ps))
			continue;
		xpf_events_begin_window(p, l, &it, &w);
		while ((rc = xpf_events_next_head(&it, &ev, err)) == 1) {
			int64_t t0 = (p->lines[l].timestamp_ns - base) * 1000 + ev.offset_ps;
			int64_t t1 = t0 + (ev.duration_ps > 0 ? ev.duration_ps : 0);
			if (t0 < a->end_ps || t1 > b->start_ps)
				continue;
			struct name_dur *d = XPF_VEC_PUSH(v, n, cap);
			d->name = p->event_md[ev.md].name;
			d->dur_ps = t1 - t0;
		}
		if (rc < 0) {
			xpf_window_release(&w);
			free(v);
			return err->code;
		}
	}
	xpf_window_release(&w);
	if (n)
		xpf_qsort(v, n, sizeof *v, nd_cmp);
	size_t rcap = 0;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		int64_t tot = 0;
		while (j < n && strcmp(v[j].name, v[i].name) == 0)
			tot += v[j++].dur_ps;
		xpf_rt_between_row *r = XPF_VEC_PUSH(out->rows, out->nrows, rcap);
		r->name = xpf_strdup(v[i].name);
		r->count = j - i;
		r->total_ns = tot / 1000;
		i = j;
	}
	free(v);
	if (out->nrows)
		xpf_qsort(out->rows, out->nrows, sizeof *out->rows, row_cmp);
	return XPF_OK;
}

void xpf_rt_between_release(xpf_rt_between *b)
{
	for (size_t i = 0; i < b->nrows; i++)
		free(b->rows[i].name);
	free(b->rows);
	b->rows = NULL;
	b->nrows = 0;
}

/* ---- live at an execution's start ------------------------------------------ */

static int block_cmp(const void *a, const void *b)
{
	const xpf_rt_block *x = a, *y = b;
	int c = strcmp(x->origin_text, y->origin_text);
	if (c)
		return c;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void origin_of(const xpf_runtime *rt, const xpf_rt_event *e, xpf_rt_block *blk, xpf_buf *t)
{
	const struct xpf_rt_priv *pv = rt->priv;
	xpf_buf_reset(t);
	blk->execution = -1;
	if (e->execution >= 0) {
		const xpf_rt_execution *x = &rt->executions[e->execution];
		bool out = e->role == XPF_RT_ROLE_OUTPUT || (e->role != XPF_RT_ROLE_TEMP && !e->in_build);
		blk->origin = out ? XPF_ORIGIN_OUTPUTS : XPF_ORIGIN_TEMP;
		blk->execution = e->execution;
		if (x->module >= 0)
			xpf_buf_printf(t, "%s of %s execution %u", out ? "outputs" : "temp",
				       pv->module_names[x->module], x->module_execution);
		else
			xpf_buf_printf(t, "%s of %s execution %u", out ? "outputs" : "temp",
				       x->host_name ? x->host_name : "an ambiguous module", x->n);
	} else {
		/* the transfer around it, else the host event, then its shape */
		const char *tr = xpf_rt_ev_transfer(rt, e), *in = xpf_rt_ev_enclosing(rt, e);
		const char *shape = xpf_rt_ev_shape(rt, e);
		blk->origin = tr ? XPF_ORIGIN_TRANSFER : XPF_ORIGIN_HOST_EVENT;
		xpf_buf_adds(t, tr ? tr : in ? in : "outside any host event");
		if (shape)
			xpf_buf_printf(t, "(%s)", shape);
	}
	blk->origin_text = xpf_strdup(t->data ? t->data : "");
}

int xpf_runtime_live_at(const xpf_runtime *rt, size_t xi, xpf_rt_block **out, size_t *nout,
			xpf_error *err)
{
	(void)err;
	*out = NULL;
	*nout = 0;
	if (xi >= rt->nexecutions)
		return XPF_OK;
	const xpf_rt_execution *x = &rt->executions[xi];
	int a = x->allocator;
	if (a < 0)
		return XPF_OK;
	xpf_rt_block *v = NULL;
	size_t n = 0, cap = 0;
	uint64_t sum = 0;
	xpf_buf t = XPF_BUF_INIT;
	/* a's allocations before the start not freed before it, in event
	 * order, skipping the blocks of them all freed before it */
	const struct xpf_rt_priv *pv = rt->priv;
	bool idx = pv && pv->live_beg; /* else (a runtime made by hand) every event */
	size_t lo = idx ? pv->live_beg[a] : 0, hi = idx ? pv->live_beg[a + 1] : rt->nevents;
	for (size_t j = lo; j < hi; j++) {
		if (idx && (j - lo) % XPF_RT_LIVE_BLOCK == 0 &&
		    pv->live_blk_end[pv->live_blk_beg[a] + (j - lo) / XPF_RT_LIVE_BLOCK] < x->start_ps) {
			j += XPF_RT_LIVE_BLOCK - 1;
			continue;
		}
		size_t i = idx ? pv->live_ev[j] : j;
		const xpf_rt_event *e = &rt->events[i];
		if (e->t_ps >= x->start_ps)
			break;
		if (xpf_rt_ev_allocator(rt, e) != a || e->kind != XPF_RT_ALLOC)
			continue;
		if (e->match >= 0 && rt->events[e->match].t_ps < x->start_ps)
			continue;
		xpf_rt_block *b = XPF_VEC_PUSH(v, n, cap);
		memset(b, 0, sizeof *b);
		origin_of(rt, e, b, &t);
		b->addr = e->addr;
		b->bytes = xpf_rt_ev_bytes(rt, e);
		b->requested_bytes = xpf_rt_ev_requested(rt, e);
		b->has_requested = xpf_rt_ev_has_requested(rt, e);
		b->event = (long)i;
		b->host_event = xpf_rt_ev_enclosing(rt, e);
		b->shape = xpf_rt_ev_shape(rt, e);
		sum += xpf_rt_ev_bytes(rt, e);
	}
	xpf_buf_release(&t);
	if (x->in_use_known && x->in_use_at_start_bytes > sum) {
		xpf_rt_block *b = XPF_VEC_PUSH(v, n, cap);
		memset(b, 0, sizeof *b);
		b->origin = XPF_ORIGIN_BEFORE;
		/* TPU allocators count bytes_reserved (the loaded programs'
		 * memory) in use: that is no block either */
		b->origin_text = xpf_strdup(rt->allocators[a].is_pool && rt->allocators[a].keyed_by_index ?
			"reserved (bytes_reserved: loaded programs) or allocated before the capture started" :
			"allocated before the capture started");
		b->bytes = x->in_use_at_start_bytes - sum;
		b->event = -1;
		b->execution = -1;
	}
	if (n)
		xpf_qsort(v, n, sizeof *v, block_cmp);
	*out = v;
	*nout = n;
	return XPF_OK;
}

void xpf_rt_blocks_free(xpf_rt_block *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(b[i].origin_text);
	free(b);
}
