/* The runtime, part 2: executions (SPEC §4.3).  Numbering, the link to
 * modules (rule order: program id, name, requested_bytes, PjitFunction,
 * kernels), in use at the start, `launched`, the join to the plan, what was
 * live at each start and the host events between executions. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/runtime.h"
#include "analysis/runtime_priv.h"

static int64_t floor_ns(int64_t ps)
{
	return ps >= 0 ? ps / 1000 : -((-ps + 999) / 1000);
}

/* ---- ordering --------------------------------------------------------- */

static const xpf_runtime *sort_rt;

static int exec_cmp(const void *a, const void *b)
{
	const xpf_rt_execution *x = &sort_rt->executions[*(const size_t *)a];
	const xpf_rt_execution *y = &sort_rt->executions[*(const size_t *)b];
	if (x->start_ps != y->start_ps)
		return x->start_ps < y->start_ps ? -1 : 1;
	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

#define PERMUTE(arr, ord, n, type)                                  \
	do {                                                        \
		type *tmp_ = malloc(((n) ? (n) : 1) * sizeof *tmp_); \
		if (!tmp_)                                          \
			abort();                                    \
		for (size_t i_ = 0; i_ < (n); i_++)                 \
			tmp_[i_] = (arr)[(ord)[i_]];                \
		memcpy((arr), tmp_, (n) * sizeof *tmp_);            \
		free(tmp_);                                         \
	} while (0)

static void order_executions(xpf_runtime *rt)
{
	size_t n = rt->nexecutions;
	if (n == 0)
		return;
	struct xpf_rt_priv *pv = rt->priv;
	size_t *ord = malloc(n * sizeof *ord);
	long *inv = malloc(n * sizeof *inv);
	if (!ord || !inv)
		abort();
	for (size_t i = 0; i < n; i++)
		ord[i] = i;
	/* qsort has no context argument; the runtime is built under its lazy
	 * slot's lock, but two hosts may build at once, so guard the global. */
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_lock(&mu);
	sort_rt = rt;
	xpf_qsort(ord, n, sizeof *ord, exec_cmp);
	sort_rt = NULL;
	pthread_mutex_unlock(&mu);
	for (size_t i = 0; i < n; i++)
		inv[ord[i]] = (long)i;
	PERMUTE(rt->executions, ord, n, xpf_rt_execution);
	PERMUTE(pv->exec_program_id, ord, n, int64_t);
	PERMUTE(pv->exec_pjit, ord, n, const char *);
	PERMUTE(pv->exec_thunk, ord, n, bool);
	PERMUTE(pv->exec_retry_end, ord, n, bool);
	for (size_t i = 0; i < rt->nevents; i++)
		if (rt->events[i].execution >= 0)
			rt->events[i].execution = inv[rt->events[i].execution];
	for (size_t i = 0; i < rt->nretries; i++)
		if (rt->retries[i].execution >= 0)
			rt->retries[i].execution = inv[rt->retries[i].execution];
	free(ord);
	free(inv);
}

/* ---- the plan's side of the join ----------------------------------------- */

/* The buffer allocations an execution allocates (not parameters, constants
 * or thread-local ones), in index order.  NULL ba: none. */
static const Xla__BufferAssignmentProto *module_ba(xpf_host *h, long m)
{
	const Xla__HloProto *hp;
	xpf_error e = { 0 };
	if (m < 0 || xpf_capture_module_hlo(h->cap, (size_t)m, &hp, &e) != XPF_OK)
		return NULL;
	return hp->buffer_assignment;
}

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

/* Does module m's allocation list explain the requested sizes seen? */
static bool bytes_match(xpf_host *h, long m, const uint64_t *seen, size_t nseen, bool partial)
{
	const Xla__BufferAssignmentProto *ba = module_ba(h, m);
	if (!ba || nseen == 0)
		return false;
	uint64_t *want = malloc((ba->n_buffer_allocations + 1) * sizeof *want);
	if (!want)
		abort();
	size_t nw = 0;
	for (size_t i = 0; i < ba->n_buffer_allocations; i++)
		if (allocated_at_run(ba->buffer_allocations[i]))
			want[nw++] = (uint64_t)ba->buffer_allocations[i]->size;
	bool ok;
	if (partial) {
		ok = nseen <= nw;
		for (size_t i = 0; ok && i < nseen; i++)
			ok = want[i] == seen[i];
	} else {
		ok = nseen == nw;
		if (ok) {
			uint64_t *s2 = malloc(nseen * sizeof *s2);
			if (!s2)
				abort();
			memcpy(s2, seen, nseen * sizeof *s2);
			xpf_qsort(s2, nseen, sizeof *s2, u64_cmp);
			xpf_qsort(want, nw, sizeof *want, u64_cmp);
			ok = memcmp(s2, want, nw * sizeof *want) == 0;
			free(s2);
		}
	}
	free(want);
	return ok;
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

static void link_execution(xpf_host *h, xpf_runtime *rt, size_t xi, const uint64_t *seen,
			   size_t nseen)
{
	struct xpf_rt_priv *pv = rt->priv;
	xpf_rt_execution *x = &rt->executions[xi];
	size_t nm = h->nmodules;
	if (nm == 0)
		return;
	bool *cand = malloc(nm * sizeof *cand), *hit = malloc(nm * sizeof *hit);
	if (!cand || !hit)
		abort();
	for (size_t m = 0; m < nm; m++)
		cand[m] = true;
	long r;

	if (pv->exec_program_id[xi] >= 0) {
		for (size_t m = 0; m < nm; m++)
			hit[m] = xpf_capture_module(h->cap, m)->program_id == (uint64_t)pv->exec_program_id[xi];
		if (narrow(cand, hit, nm) && (r = only(cand, nm)) >= 0) {
			x->module = r;
			x->link = XPF_LINK_PROGRAM_ID;
			goto out;
		}
	}
	if (x->host_name) {
		for (size_t m = 0; m < nm; m++)
			hit[m] = name_names(h, pv, m, x->host_name);
		if (narrow(cand, hit, nm) && (r = only(cand, nm)) >= 0) {
			x->module = r;
			x->link = XPF_LINK_NAME;
			goto out;
		}
	}
	if (nseen > 0) {
		for (size_t m = 0; m < nm; m++)
			hit[m] = cand[m] && bytes_match(h, (long)m, seen, nseen, false);
		size_t k = narrow(cand, hit, nm);
		if (k == 0 && x->stopped_in_build) {
			for (size_t m = 0; m < nm; m++)
				hit[m] = cand[m] && bytes_match(h, (long)m, seen, nseen, true);
			k = narrow(cand, hit, nm);
		}
		if (k && (r = only(cand, nm)) >= 0) {
			x->module = r;
			x->link = XPF_LINK_BYTES;
			goto out;
		}
	}
	if (pv->exec_pjit[xi]) {
		const char *f = pv->exec_pjit[xi] + strlen("PjitFunction(");
		size_t fl = strlen(f);
		if (fl > 0 && f[fl - 1] == ')')
			fl--;
		for (size_t m = 0; m < nm; m++) {
			const char *b = pv->base[m];
			hit[m] = strncmp(b, "jit_", 4) == 0 && strlen(b + 4) == fl &&
				 strncmp(b + 4, f, fl) == 0;
		}
		if (narrow(cand, hit, nm) && (r = only(cand, nm)) >= 0) {
			x->module = r;
			x->link = XPF_LINK_PJIT;
			goto out;
		}
	}
	if (x->device >= 0) {
		long km = xpf_rt_first_kernel_module(pv, x->device, x->start_ps);
		if (km >= 0 && cand[km]) {
			x->module = km;
			x->link = XPF_LINK_KERNELS;
		}
	}
out:
	free(cand);
	free(hit);
}

/* ---- per-allocator event index ------------------------------------------- */

struct by_alloc {
	size_t *n;
	size_t **idx;   /* event indexes of each allocator, in time order */
};

static void by_alloc_init(const xpf_runtime *rt, struct by_alloc *b)
{
	size_t na = rt->nallocators ? rt->nallocators : 1;
	b->n = calloc(na, sizeof *b->n);
	b->idx = calloc(na, sizeof *b->idx);
	if (!b->n || !b->idx)
		abort();
	for (size_t a = 0; a < rt->nallocators; a++) {
		b->idx[a] = malloc((rt->allocators[a].nevents + 1) * sizeof **b->idx);
		if (!b->idx[a])
			abort();
	}
	for (size_t i = 0; i < rt->nevents; i++) {
		int a = rt->events[i].allocator;
		b->idx[a][b->n[a]++] = i;
	}
}

static void by_alloc_release(const xpf_runtime *rt, struct by_alloc *b)
{
	for (size_t a = 0; a < rt->nallocators; a++)
		free(b->idx[a]);
	free(b->idx);
	free(b->n);
}

/* Index in b->idx[a] of the first event with t_ps >= t. */
static size_t first_at(const xpf_runtime *rt, const struct by_alloc *b, int a, int64_t t)
{
	size_t lo = 0, hi = b->n[a];
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (rt->events[b->idx[a][mid]].t_ps < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int pool_allocator(const xpf_runtime *rt, int device)
{
	for (size_t a = 0; a < rt->nallocators; a++)
		if (rt->allocators[a].is_pool && rt->allocators[a].device == device)
			return (int)a;
	return -1;
}

/* ---- the join to the plan ------------------------------------------------ */

static void join_plan(xpf_host *h, xpf_runtime *rt, size_t xi, const size_t *evs, size_t nev)
{
	xpf_rt_execution *x = &rt->executions[xi];
	const Xla__BufferAssignmentProto *ba = module_ba(h, x->module);
	if (!ba || nev == 0)
		return;
	bool *used = calloc(ba->n_buffer_allocations + 1, sizeof *used);
	x->matched = calloc(nev, sizeof *x->matched);
	if (!used || !x->matched)
		abort();
	for (size_t k = 0; k < nev; k++) {
		xpf_rt_event *e = &rt->events[evs[k]];
		for (size_t i = 0; i < ba->n_buffer_allocations; i++) {
			const Xla__BufferAllocationProto *a = ba->buffer_allocations[i];
			if (used[i] || !allocated_at_run(a) || (uint64_t)a->size != e->requested_bytes)
				continue;
			used[i] = true;
			e->buffer_allocation = (long)i;
			e->role = a->maybe_live_out ? XPF_RT_ROLE_OUTPUT : XPF_RT_ROLE_TEMP;
			xpf_rt_match *mt = &x->matched[x->nmatched++];
			mt->event = (long)evs[k];
			mt->buffer_allocation = (long)i;
			mt->role = e->role;
			if (e->role == XPF_RT_ROLE_OUTPUT)
				x->output_bytes += e->bytes;
			else
				x->temp_bytes += e->bytes;
			break;
		}
	}
	free(used);
}

/* ---- finishing ------------------------------------------------------------ */

int xpf_rt_finish_executions(xpf_host *h, xpf_runtime *rt, xpf_error *err)
{
	struct xpf_rt_priv *pv = rt->priv;
	order_executions(rt);
	size_t nx = rt->nexecutions;

	/* Each execution's own allocator events (nested on its line). */
	size_t *first = calloc(nx + 1, sizeof *first), *cnt = calloc(nx + 1, sizeof *cnt);
	size_t *evs = malloc((rt->nevents + 1) * sizeof *evs);
	if (!first || !cnt || !evs)
		abort();
	for (size_t i = 0; i < rt->nevents; i++)
		if (rt->events[i].execution >= 0)
			cnt[rt->events[i].execution]++;
	for (size_t x = 1; x <= nx; x++)
		first[x] = first[x - 1] + cnt[x - 1];
	memset(cnt, 0, (nx + 1) * sizeof *cnt);
	for (size_t i = 0; i < rt->nevents; i++) {
		long x = rt->events[i].execution;
		if (x >= 0)
			evs[first[x] + cnt[x]++] = i;
	}

	size_t npool = 0;
	int single_pool = -1;
	for (size_t a = 0; a < rt->nallocators; a++)
		if (rt->allocators[a].is_pool) {
			npool++;
			single_pool = rt->allocators[a].device;
		}

	uint64_t *seen = malloc((rt->nevents + 1) * sizeof *seen);
	size_t *build_evs = malloc((rt->nevents + 1) * sizeof *build_evs);
	if (!seen || !build_evs)
		abort();
	for (size_t xi = 0; xi < nx; xi++) {
		xpf_rt_execution *x = &rt->executions[xi];
		x->n = xi + 1;
		x->start_ns = floor_ns(x->start_ps);
		x->end_ns = floor_ns(x->end_ps);
		size_t nseen = 0;
		for (size_t k = 0; k < cnt[xi]; k++) {
			xpf_rt_event *e = &rt->events[evs[first[xi] + k]];
			const xpf_rt_allocator *a = &rt->allocators[e->allocator];
			if (x->device < 0 && a->is_pool && e->kind == XPF_RT_ALLOC)
				x->device = a->device;
		}
		if (x->device < 0 && npool == 1)
			x->device = single_pool;
		x->allocator = x->device >= 0 ? pool_allocator(rt, x->device) : -1;
		for (size_t k = 0; k < cnt[xi]; k++) {
			size_t i = evs[first[xi] + k];
			xpf_rt_event *e = &rt->events[i];
			if (e->kind != XPF_RT_ALLOC || !e->in_build ||
			    (x->allocator >= 0 && e->allocator != x->allocator))
				continue;
			build_evs[nseen] = i;
			seen[nseen++] = e->requested_bytes;
		}
		link_execution(h, rt, xi, seen, nseen);
		join_plan(h, rt, xi, build_evs, nseen);
		for (size_t k = 0; k < cnt[xi]; k++) {
			xpf_rt_event *e = &rt->events[evs[first[xi] + k]];
			if (e->kind == XPF_RT_ALLOC && e->role == XPF_RT_ROLE_NONE)
				e->role = XPF_RT_ROLE_EXEC_OTHER;
		}
	}
	free(seen);
	free(build_evs);
	free(first);
	free(cnt);
	free(evs);

	/* Numbers per (module, device); in use; growth; launched. */
	struct by_alloc b;
	by_alloc_init(rt, &b);
	for (size_t xi = 0; xi < nx; xi++) {
		xpf_rt_execution *x = &rt->executions[xi];
		if (x->module >= 0) {
			for (size_t k = xi; k-- > 0;) {
				const xpf_rt_execution *y = &rt->executions[k];
				if (y->module == x->module && y->device == x->device) {
					x->prev = (long)k;
					x->module_execution = y->module_execution + 1;
					break;
				}
			}
			if (x->prev < 0)
				x->module_execution = 1;
		}
		int a = x->allocator;
		if (a >= 0 && b.n[a] > 0) {
			size_t i0 = first_at(rt, &b, a, x->start_ps);
			x->in_use_known = true;
			x->in_use_at_start_bytes = i0 > 0 ? rt->events[b.idx[a][i0 - 1]].in_use_after :
							    rt->allocators[a].first_in_use_bytes;
			x->peak_during_bytes = x->in_use_at_start_bytes;
			for (size_t k = i0; k < b.n[a]; k++) {
				const xpf_rt_event *e = &rt->events[b.idx[a][k]];
				if (e->t_ps > x->end_ps)
					break;
				if (e->kind == XPF_RT_ALLOC)
					x->allocations++;
				else
					x->deallocations++;
				if (e->in_use_after > x->peak_during_bytes)
					x->peak_during_bytes = e->in_use_after;
			}
		}
		if (x->prev >= 0 && x->in_use_known && rt->executions[x->prev].in_use_known)
			x->growth_bytes = (int64_t)x->in_use_at_start_bytes -
					  (int64_t)rt->executions[x->prev].in_use_at_start_bytes;
	}
	by_alloc_release(rt, &b);

	for (size_t xi = 0; xi < nx; xi++) {
		xpf_rt_execution *x = &rt->executions[xi];
		if (x->launched == XPF_LAUNCHED_YES)
			continue;
		if (pv->exec_thunk[xi]) {
			x->launched = XPF_LAUNCHED_YES;
			continue;
		}
		int64_t until = INT64_MAX;
		for (size_t k = xi + 1; k < nx; k++) {
			const xpf_rt_execution *y = &rt->executions[k];
			if (y->device == x->device && (x->module < 0 || y->module == x->module)) {
				until = y->start_ps;
				break;
			}
		}
		bool after;
		if (xpf_rt_has_kernel(pv, x->device, x->module, x->start_ps, until, &after))
			x->launched = XPF_LAUNCHED_YES;
		else if (x->stopped_in_build || pv->exec_retry_end[xi])
			x->launched = XPF_LAUNCHED_NO;
		else if (after && x->module >= 0)
			x->launched = XPF_LAUNCHED_NO;
		else
			x->launched = XPF_LAUNCHED_UNKNOWN;
	}

	/* Retries: the allocator of the execution when the wait had none. */
	for (size_t i = 0; i < rt->nretries; i++) {
		xpf_rt_retry *r = &rt->retries[i];
		if (r->allocator < 0 && r->execution >= 0)
			r->allocator = rt->executions[r->execution].allocator;
	}

	long fm = xpf_runtime_focus(h, rt);
	if (fm >= 0) {
		long last = -1, before = -1;
		int dev = -2;
		for (size_t xi = nx; xi-- > 0;) {
			const xpf_rt_execution *x = &rt->executions[xi];
			if (x->module != fm || (dev != -2 && x->device != dev))
				continue;
			if (last < 0) {
				last = (long)xi;
				dev = x->device;
			} else {
				before = (long)xi;
				break;
			}
		}
		rt->between.module = fm;
		rt->between.device = dev;
		if (before >= 0) {
			int rc = xpf_runtime_between(h, rt, (size_t)before, (size_t)last, &rt->between, err);
			if (rc != XPF_OK)
				return rc;
		}
	}
	return XPF_OK;
}

/* ---- focus, between ------------------------------------------------------- */

long xpf_runtime_focus(const xpf_host *h, const xpf_runtime *rt)
{
	if (h->opt && h->opt->module) {
		for (size_t m = 0; m < h->nmodules; m++)
			if (strcmp(xpf_capture_module(h->cap, m)->name, h->opt->module) == 0 ||
			    strcmp(h->module_dirs[m], h->opt->module) == 0)
				return (long)m;
	}
	for (size_t xi = rt->nexecutions; xi-- > 0;)
		if (rt->executions[xi].launched == XPF_LAUNCHED_NO && rt->executions[xi].module >= 0)
			return rt->executions[xi].module;
	/* The most executed module; ties go to the one that ran last. */
	size_t *count = calloc(h->nmodules ? h->nmodules : 1, sizeof *count);
	if (count == NULL)
		abort();
	for (size_t k = 0; k < rt->nexecutions; k++) {
		long m = rt->executions[k].module;
		if (m >= 0 && (size_t)m < h->nmodules)
			count[m]++;
	}
	long best = -1;
	size_t best_n = 0;
	for (size_t xi = rt->nexecutions; xi-- > 0;) {
		long m = rt->executions[xi].module;
		if (m < 0 || (size_t)m >= h->nmodules)
			continue;
		if (count[m] > best_n) {
			best_n = count[m];
			best = m;
		}
	}
	free(count);
	return best;
}

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
	out->from_ns = a->end_ns;
	out->to_ns = b->start_ns;
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
	for (size_t l = 0; l < p->nlines; l++) {
		xpf_event_iter it;
		xpf_event_head ev;
		xpf_events_begin(p, l, &it);
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
			free(v);
			return err->code;
		}
	}
	if (n)
		xpf_qsort(v, n, sizeof *v, nd_cmp);
	size_t rcap = 0;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		int64_t tot = 0;
		while (j < n && strcmp(v[j].name, v[i].name) == 0)
			tot += v[j++].dur_ps;
		xpf_rt_between_row *r = XPF_VEC_PUSH(out->rows, out->nrows, rcap);
		r->name = xpf_rt_strdup(v[i].name);
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
			xpf_buf_printf(t, "%s of %s execution %zu", out ? "outputs" : "temp",
				       pv->module_names[x->module], x->module_execution);
		else
			xpf_buf_printf(t, "%s of %s execution %zu", out ? "outputs" : "temp",
				       x->host_name ? x->host_name : "an ambiguous module", x->n);
	} else if (e->transfer) {
		blk->origin = XPF_ORIGIN_TRANSFER;
		xpf_buf_adds(t, e->transfer);
		if (e->shape)
			xpf_buf_printf(t, "(%s)", e->shape);
	} else if (e->enclosing) {
		blk->origin = XPF_ORIGIN_HOST_EVENT;
		xpf_buf_adds(t, e->enclosing);
		if (e->shape)
			xpf_buf_printf(t, "(%s)", e->shape);
	} else {
		blk->origin = XPF_ORIGIN_HOST_EVENT;
		xpf_buf_adds(t, "outside any host event");
		if (e->shape)
			xpf_buf_printf(t, "(%s)", e->shape);
	}
	blk->origin_text = xpf_rt_strdup(t->data ? t->data : "");
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
	for (size_t i = 0; i < rt->nevents; i++) {
		const xpf_rt_event *e = &rt->events[i];
		if (e->t_ps >= x->start_ps)
			break;
		if (e->allocator != a || e->kind != XPF_RT_ALLOC)
			continue;
		if (e->match >= 0 && rt->events[e->match].t_ps < x->start_ps)
			continue;
		xpf_rt_block *b = XPF_VEC_PUSH(v, n, cap);
		memset(b, 0, sizeof *b);
		origin_of(rt, e, b, &t);
		b->addr = e->addr;
		b->bytes = e->bytes;
		b->requested_bytes = e->requested_bytes;
		b->event = (long)i;
		b->host_event = e->enclosing;
		b->shape = e->shape;
		sum += e->bytes;
	}
	xpf_buf_release(&t);
	if (x->in_use_known && x->in_use_at_start_bytes > sum) {
		xpf_rt_block *b = XPF_VEC_PUSH(v, n, cap);
		memset(b, 0, sizeof *b);
		b->origin = XPF_ORIGIN_BEFORE;
		b->origin_text = xpf_rt_strdup("allocated before the capture started");
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
