/* The runtime, order and replay: the allocator events sorted by time and
 * replayed (matches, per-allocator figures, the live index of
 * xpf_runtime_live_at); the executions sorted by (start, device, line),
 * each given its events, device, in use at start and peak during. */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/runtime/runtime.h"
#include "analysis/runtime/runtime_priv.h"
#include "common/alloc.h"
#include "common/intern.h"
#include "common/lazy.h"
#include "common/map.h"
#include "common/runs.h"

/* ---- building ----------------------------------------------------------- */

/* Sort the allocator events by time, keeping scan order (line, then place
 * in line) among equal times.  They come as runs already in that order
 * (each line's events, lines in order), so a merge of the runs makes the
 * permutation (4 bytes an event), applied in place after: the events are
 * big, and a sorted copy of them would double the memory. */
static bool event_before(const void *ctx, size_t i, size_t j)
{
	const xpf_rt_event *ev = ctx;
	return ev[i].t_ps < ev[j].t_ps || (ev[i].t_ps == ev[j].t_ps && i < j);
}

/* xpf_perm_apply's moves of events (spare: place n). */
struct event_moves {
	xpf_rt_event *ev;
	size_t n;
	xpf_rt_event spare;
};

static void event_move(void *ctx, size_t to, size_t from)
{
	struct event_moves *m = ctx;
	*(to == m->n ? &m->spare : &m->ev[to]) = from == m->n ? m->spare : m->ev[from];
}

/* The events sorted; the permutation is returned (*perm_len bytes mapped,
 * 0: malloc'd; NULL when there are no events): it holds one place an event,
 * and the replay lays the live index in it. */
static uint32_t *sort_events(xpf_rt_event *ev, size_t n, size_t *perm_len)
{
	*perm_len = 0;
	if (n == 0) /* nothing to sort (and no 2 MiB to map for it) */
		return NULL;
	uint32_t *perm = xpf_big_calloc(n, sizeof *perm, perm_len);
	xpf_runs_merge(n, event_before, ev, perm);
	struct event_moves m = { ev, n, { 0 } };
	xpf_perm_apply(n, perm, event_move, &m);
	return perm;
}

/* The replay's live index (xpf_rt_priv.live_*) as it is made: allocator
 * a's events go to live_ev[live_beg[a] + k] (fill[a] is k), the
 * allocations of block j of them are live until
 * live_blk_end[live_blk_beg[a] + j]. */
struct live_index {
	uint32_t *ev;
	size_t *beg, *blk_beg, *fill;
	int64_t *blk_end;
};

/* Allocator a's event k, an allocation, is live until t (INT64_MAX: never
 * freed). */
static void live_until(struct live_index *li, size_t a, uint64_t k, int64_t t)
{
	int64_t *end = &li->blk_end[li->blk_beg[a] + k / XPF_RT_LIVE_BLOCK];
	*end = t > *end ? t : *end;
}

/* The live index laid out in perm (perm_len bytes, 0: malloc'd; NULL:
 * none), which holds as many places as there are events: each allocator's
 * events are counted first, so that its list is written in place, with no
 * array grown and copied.  xpf_rt_finish_events reads it as each
 * allocator's events in time order. */
static void live_index_begin(xpf_runtime *rt, struct live_index *li, uint32_t *perm, size_t perm_len)
{
	struct xpf_rt_priv *pv = rt->priv;
	size_t na = rt->nallocators;
	li->beg = xpf_calloc(na + 1, sizeof *li->beg);
	li->blk_beg = xpf_calloc(na + 1, sizeof *li->blk_beg);
	li->fill = xpf_calloc(na ? na : 1, sizeof *li->fill);
	for (size_t i = 0; i < rt->nevents; i++)
		li->beg[xpf_rt_ev_allocator(rt, &rt->events[i]) + 1]++;
	for (size_t a = 0; a < na; a++) {
		size_t n = li->beg[a + 1];
		li->beg[a + 1] = li->beg[a] + n;
		li->blk_beg[a + 1] = li->blk_beg[a] + (n + XPF_RT_LIVE_BLOCK - 1) / XPF_RT_LIVE_BLOCK;
	}
	li->ev = perm ? perm : xpf_malloc(sizeof *li->ev);
	pv->live_ev_map_len = perm ? perm_len : 0;
	li->blk_end = xpf_realloc_array(NULL, li->blk_beg[na] + 1, sizeof *li->blk_end);
	for (size_t b = 0; b < li->blk_beg[na]; b++)
		li->blk_end[b] = INT64_MIN;
}

/* The index kept (its lists fill the mapped array: one place an event). */
static void live_index_end(struct xpf_rt_priv *pv, struct live_index *li)
{
	pv->live_ev = li->ev;
	pv->live_beg = li->beg;
	pv->live_blk_beg = li->blk_beg;
	pv->live_blk_end = li->blk_end;
	free(li->fill);
}

/* The events in time order: each allocator's in use before its first event,
 * peak, counts; each free matched to the live allocation at its address
 * (match, both ways); what was never freed; and the live index
 * (struct live_index).  Its map (address, allocator) -> the live allocation holds
 * the live allocations only (thousands where the events are millions: a map
 * sized by the events would be mostly empty); a value is
 * the allocation's event index, its place in its allocator's live list
 * above bit 32. */
static void replay(xpf_runtime *rt, const uint64_t *peak_avail, uint32_t *perm, size_t perm_len)
{
	xpf_map m;
	xpf_map_init(&m, 1024);
	struct live_index li;
	live_index_begin(rt, &li, perm, perm_len);
	for (size_t i = 0; i < rt->nevents; i++) {
		xpf_rt_event *e = &rt->events[i];
		int al = xpf_rt_ev_allocator(rt, e);
		xpf_rt_allocator *a = &rt->allocators[al];
		uint64_t bytes = xpf_rt_ev_bytes(rt, e);
		if (a->nevents == 0) {
			a->first_in_use_bytes =
				e->kind == XPF_RT_ALLOC ?
					(e->in_use_after >= bytes ? e->in_use_after - bytes : 0) :
					e->in_use_after + bytes;
		}
		a->nevents++;
		if (e->in_use_after > a->peak_in_window_bytes || a->peak_event < 0) {
			a->peak_in_window_bytes = e->in_use_after;
			a->peak_event = (long)i;
			a->peak_ns = xpf_rt_ev_ns(e);
			a->capacity_bytes = e->in_use_after + peak_avail[al];
		}
		a->live_at_end_bytes = e->in_use_after;
		uint64_t place = li.fill[al]++;
		li.ev[li.beg[al] + place] = (uint32_t)i;
		if (e->kind == XPF_RT_ALLOC) {
			a->allocations++;
			int64_t old =
				xpf_map_put(&m, e->addr, (uint64_t)al, (int64_t)(place << 32 | i));
			if (old >= 0) { /* an address reused without a seen free */
				const xpf_rt_event *o = &rt->events[old & 0xffffffff];
				rt->events[old & 0xffffffff].match = -1;
				live_until(&li, (size_t)al, (uint64_t)old >> 32, INT64_MAX);
				a->seen_live_at_end_bytes += xpf_rt_ev_bytes(rt, o);
				a->seen_live_at_end_blocks++;
			}
		} else {
			a->deallocations++;
			size_t k = xpf_map_find(&m, e->addr, (uint64_t)al);
			int64_t v = m.s[k].val;
			if (v >= 0) {
				size_t vi = (size_t)(v & 0xffffffff);
				e->match = (int32_t)vi;
				rt->events[vi].match = (int32_t)i;
				live_until(&li, (size_t)al, (uint64_t)v >> 32, e->t_ps);
				if (bytes == 0) { /* its match's, at its own site */
					xpf_rt_site w = rt->sites[e->site];
					w.bytes = xpf_rt_ev_bytes(rt, &rt->events[vi]);
					w.has_bytes = xpf_rt_ev_has_bytes(rt, &rt->events[vi]);
					e->site = xpf_rt_site_of(rt, &w);
				}
				xpf_map_del(&m, k);
			} else {
				a->unmatched_deallocations++;
				a->unmatched_deallocated_bytes += bytes;
			}
		}
	}
	/* what is still live was never freed */
	for (size_t k = 0; k < m.cap; k++) {
		int64_t v = m.s[k].val;
		if (v < 0)
			continue;
		size_t al = (size_t)m.s[k].b;
		live_until(&li, al, (uint64_t)v >> 32, INT64_MAX);
		rt->allocators[al].seen_live_at_end_bytes +=
			xpf_rt_ev_bytes(rt, &rt->events[v & 0xffffffff]);
		rt->allocators[al].seen_live_at_end_blocks++;
	}
	xpf_map_free(&m);
	live_index_end(rt->priv, &li);
}

/* Sort the events in time order (keeping each line's order), the
 * allocators by name, and replay them: matches and allocator figures. */
void xpf_rt_order_and_replay(xpf_runtime *rt)
{
	rt->has_events = rt->nevents > 0;
	/* Sort events in time order, keeping each line's order; remember the
	 * allocator order so indexes can be remapped after sorting by name. */
	size_t perm_len;
	uint32_t *perm = sort_events(rt->events, rt->nevents, &perm_len);
	int *remap = xpf_realloc_array(NULL, rt->nallocators + 1, sizeof *remap);
	for (size_t a = 0; a < rt->nallocators; a++)
		rt->allocators[a].nevents = a; /* old index, temporarily */
	if (rt->nallocators)
		xpf_qsort(rt->allocators, rt->nallocators, sizeof *rt->allocators,
			  xpf_rt_allocator_cmp);
	for (size_t a = 0; a < rt->nallocators; a++) {
		remap[rt->allocators[a].nevents] = (int)a;
		rt->allocators[a].nevents = 0;
	}
	/* bytes_available at each allocator's peak, by its new index */
	uint64_t *peak_avail = xpf_calloc(rt->nallocators + 1, sizeof *peak_avail);
	for (size_t a = 0; a < rt->nallocators; a++)
		peak_avail[remap[a]] = rt->priv->peak[a].available;
	/* the events' allocators are their sites': renumbered there, and the
	 * sites' map made again (a site's hash holds its allocator) */
	xpf_map_free(&rt->priv->site_map);
	memset(&rt->priv->site_map, 0, sizeof rt->priv->site_map);
	for (size_t i = 0; i < rt->nsites; i++) {
		rt->sites[i].allocator = (int16_t)remap[rt->sites[i].allocator];
		xpf_rt_site_map_add(rt, (uint32_t)i);
	}
	for (size_t i = 0; i < rt->nretries; i++)
		if (rt->retries[i].allocator >= 0)
			rt->retries[i].allocator = remap[rt->retries[i].allocator];
	free(remap);
	replay(rt, peak_avail, perm, perm_len);
	free(peak_avail);
}

/* ---- ordering --------------------------------------------------------- */

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

/* The merge compares the executions where they lie, with no copy of their
 * keys. */
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

/* ---- per-allocator events, executions by (module, device) ---------------- */

static int pool_allocator(const xpf_runtime *rt, int device)
{
	for (size_t a = 0; a < rt->nallocators; a++)
		if (rt->allocators[a].is_pool && rt->allocators[a].device == device)
			return (int)a;
	return -1;
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
	/* the executions' event lists (xpf_rt_finish_events): as many places
	 * as events at most */
	f->xend = xpf_big_calloc(rt->nexecutions + 1, sizeof *f->xend, &f->xend_len);
	f->own = xpf_big_calloc(rt->nevents + 1, sizeof *f->own, &f->own_len);
}

/* Step 2, once the events are ordered and replayed (nothing here reads a
 * kernel, so it runs beside the kernel scans). */
/* Two passes over the events.  The first renumbers their executions,
 * counts each execution's, and marks allocations inside an execution as
 * "other" (join_plan overwrites those it matches to the plan); the second
 * lists each execution's own events (nested on its line) in event (time)
 * order: execution x's are f->own[xend[x - 1] .. xend[x]). */
static void list_own_events(xpf_runtime *rt, struct xpf_rt_finish *f)
{
	size_t nx = rt->nexecutions, ne = rt->nevents;
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
		xend[x] = (idx32)nown; /* start, advanced to the end by the fill */
		nown += c;
	}
	for (size_t i = 0; i < ne; i++) {
		const xpf_rt_event *e = &rt->events[i];
		if (e->execution >= 0)
			f->own[xend[e->execution]++] = (idx32)i;
	}
}

/* Each execution's device: its first allocation on a device pool (the
 * only pool's when there is one); and that device's pool allocator. */
static void exec_devices(xpf_runtime *rt, const struct xpf_rt_finish *f)
{
	size_t npool = 0;
	int single_pool = -1;
	for (size_t a = 0; a < rt->nallocators; a++)
		if (rt->allocators[a].is_pool) {
			npool++;
			single_pool = rt->allocators[a].device;
		}
	for (size_t xi = 0; xi < rt->nexecutions; xi++) {
		xpf_rt_execution *x = &rt->executions[xi];
		const idx32 *mine = &f->own[xi ? f->xend[xi - 1] : 0];
		size_t cnt = (size_t)(&f->own[f->xend[xi]] - mine);
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
}

/* In use at each execution's start, the peak during it, the events in it.
 * The executions are in start order, so each allocator's first event at or
 * after a start only moves forward.  Allocator a's events are the replay's
 * live index, aev[abeg[a] .. aend[a]); cursor[a]: the first at or after the
 * last start asked. */
static void exec_in_use(xpf_runtime *rt)
{
	const struct xpf_rt_priv *pv = rt->priv;
	const uint32_t *aev = pv->live_ev;
	const size_t *abeg = pv->live_beg, *aend = pv->live_beg + 1;
	const xpf_rt_event *ev = rt->events;
	size_t na = rt->nallocators;
	size_t *cursor = xpf_calloc(na + 1, sizeof *cursor);
	memcpy(cursor, abeg, na * sizeof *cursor);
	for (size_t xi = 0; xi < rt->nexecutions; xi++) {
		xpf_rt_execution *x = &rt->executions[xi];
		int a = x->allocator;
		if (a < 0 || abeg[a] >= aend[a])
			continue;
		size_t n = aend[a], i0 = cursor[a];
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
	free(cursor);
}

void xpf_rt_finish_events(xpf_runtime *rt, struct xpf_rt_finish *f)
{
	list_own_events(rt, f);
	exec_devices(rt, f);
	exec_in_use(rt);
}

void xpf_rt_finish_release(struct xpf_rt_finish *f)
{
	free(f->inv);
	xpf_big_free(f->xend, f->xend_len);
	xpf_big_free(f->own, f->own_len);
	memset(f, 0, sizeof *f);
}
