/* One allocator event and one execution as records: the stats of an
 * allocator event read into a site and an event, an execution made from
 * the host event at its root. */
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

enum {
	AS_ALLOCATOR_NAME,
	AS_INDEX_ON_HOST,
	AS_DEVICE_ORDINAL,
	AS_BYTES_RESERVED,
	AS_BYTES_ALLOCATED,
	AS_BYTES_AVAILABLE,
	AS_PEAK_BYTES_IN_USE,
	AS_REQUESTED_BYTES,
	AS_ALLOCATION_BYTES,
	AS_ADDR,
	AS_SHAPE,
	AS_N
};
static const char *const alloc_stat_names[AS_N] = {
	"allocator_name",
	"index_on_host",
	"device_ordinal",
	"bytes_reserved",
	"bytes_allocated",
	"bytes_available",
	"peak_bytes_in_use",
	"requested_bytes",
	"allocation_bytes",
	"addr",
	"shape",
};

/* Space or array p of n_used records grown to cap records: an array from
 * then on (*map_len 0). */
static void *mapped_grow(void *p, size_t *map_len, size_t n_used, size_t cap, size_t size)
{
	if (!*map_len)
		return xpf_realloc_array(p, cap, size);
	void *a = xpf_realloc_array(NULL, cap, size);
	memcpy(a, p, n_used * size);
	xpf_big_free(p, *map_len);
	*map_len = 0;
	return a;
}

/* Space for the events of n host events, mapped once (each host event
 * makes at most one, so n bounds what a scan can find and the array never
 * moves), or an array that grows when it cannot be mapped. */
void xpf_rt_events_map(struct scan *s, size_t n)
{
	struct xpf_rt_priv *pv = s->rt->priv;
	s->rt->events = xpf_map_huge(n, sizeof *s->rt->events, &pv->events_map_len);
	s->cap_events = s->rt->events ? n : 0;
}

/* Millions of events: each byte of one is MiBs of memory to allocate. */
_Static_assert(sizeof(xpf_rt_event) <= 40, "xpf_rt_event grew past 40 bytes");
/* And hundreds of thousands of executions (their times in ps only). */
_Static_assert(sizeof(xpf_rt_execution) <= 112, "xpf_rt_execution grew past 112 bytes");

/* A capacity for n records grown from cap: at least doubled, at least 64. */
static size_t grown_cap(size_t cap, size_t n) { return n > 2 * cap ? (n > 64 ? n : 64) : 2 * cap; }

/* Space for n events in all: an array that at least doubles when the mapped array
 * (which bounds the events read) is full. */
void xpf_rt_events_reserve(struct scan *s, size_t n)
{
	xpf_runtime *rt = s->rt;
	if (n <= s->cap_events)
		return;
	size_t c = grown_cap(s->cap_events, n);
	rt->events = mapped_grow(rt->events, &rt->priv->events_map_len, rt->nevents, c,
				 sizeof *rt->events);
	s->cap_events = c;
}

/* A zeroed event at the end of the runtime's. */
static xpf_rt_event *push_event(struct scan *s)
{
	xpf_runtime *rt = s->rt;
	size_t n = rt->nevents;
	xpf_rt_events_reserve(s, n + 1);
	memset(&rt->events[n], 0, sizeof *rt->events);
	rt->nevents = n + 1;
	return &rt->events[n];
}

/* Fill s's alloc_want from the plane's stat metadata (a stat beyond what
 * the set holds is not read: a capture names each stat once). */
void xpf_rt_alloc_stat_ids(struct scan *s)
{
	memset(&s->alloc_want, 0, sizeof s->alloc_want);
	for (unsigned k = 0; k < AS_N; k++)
		xpf_stat_want_add(&s->alloc_want, s->p, alloc_stat_names[k], k);
}

int64_t xpf_rt_rel_ps(int64_t line_ts_ns, int64_t base, int64_t off_ps)
{
	__int128 v = ((__int128)line_ts_ns - base) * 1000 + off_ps;
	return v > REL_PS_MAX ? REL_PS_MAX : v < -REL_PS_MAX ? -REL_PS_MAX : (int64_t)v;
}

/* More allocators than a runtime holds (the same words whichever thread
 * finds it out). */
int xpf_rt_too_many_allocators(const struct scan *s, xpf_error *err)
{
	return xpf_fail(err, XPF_EMALFORMED, "%s: more than %d allocators: not supported",
			xpf_capture_label(s->h->cap), XPF_RT_MAX_ALLOCATORS);
}

/* The stats of an allocator event that the runtime keeps. */
struct alloc_stats {
	const char *np; /* its allocator's name: allocator_name up to a NUL,
				    at most 255 bytes, else "tpu:<index_on_host>" */
	size_t nn;
	char ibuf[32]; /* the "tpu:<n>" name */
	bool by_index;
	int64_t reserved, allocated, available, peak, req, abytes;
	bool has_req, has_abytes;
	uint64_t addr;
	xpf_str shape;
};

static void alloc_stat(struct alloc_stats *a, int code, const xpf_stat *st)
{
	xpf_str t;
	uint64_t u;
	switch (code) {
	case AS_ALLOCATOR_NAME:
		if (xpf_stat_text(st, &t)) {
			a->np = t.p;
			a->nn = strnlen(t.p, t.n < 255 ? t.n : 255);
			a->by_index = false;
		}
		break;
	case AS_INDEX_ON_HOST:
	case AS_DEVICE_ORDINAL:
		if (xpf_stat_u64(st, &u) && a->nn == 0) {
			a->nn = (size_t)snprintf(a->ibuf, sizeof a->ibuf, "tpu:%" PRIu64, u);
			a->np = a->ibuf;
			a->by_index = true;
		}
		break;
	case AS_BYTES_RESERVED: xpf_stat_i64(st, &a->reserved); break;
	case AS_BYTES_ALLOCATED: xpf_stat_i64(st, &a->allocated); break;
	case AS_BYTES_AVAILABLE: xpf_stat_i64(st, &a->available); break;
	case AS_PEAK_BYTES_IN_USE: xpf_stat_i64(st, &a->peak); break;
	case AS_REQUESTED_BYTES: a->has_req = xpf_stat_i64(st, &a->req); break;
	case AS_ALLOCATION_BYTES: a->has_abytes = xpf_stat_i64(st, &a->abytes); break;
	case AS_ADDR: xpf_stat_u64(st, &a->addr); break;
	case AS_SHAPE: xpf_stat_text(st, &a->shape); break;
	}
}

/* The stats of allocator event ev into *a. */
static int read_alloc_stats(struct scan *s, const xpf_event *ev, struct alloc_stats *a, xpf_error *err)
{
	xpf_stat_iter it;
	xpf_stat st;
	int rc;
	xpf_stats_of_event(s->p, ev, &s->alloc_want, &it);
	while ((rc = xpf_stats_next(&it, &st, err)) == 1)
		alloc_stat(a, xpf_stat_want_tag(&s->alloc_want, st.metadata_id), &st);
	return rc < 0 ? err->code : XPF_OK;
}

/* The allocator named np[0..nn), mostly the one of the event before; -1
 * (err set) when it would be one too many. */
static int allocator_of(struct scan *s, const char *np, size_t nn, bool by_index, xpf_error *err)
{
	xpf_runtime *rt = s->rt;
	int a = s->last_alloc;
	if (a >= 0 && s->last_alloc_len == nn && memcmp(rt->allocators[a].name, np, nn) == 0)
		return a;
	char name[256];
	memcpy(name, np, nn);
	name[nn] = '\0';
	a = xpf_rt_find_allocator(rt, &s->cap_alloc, name, by_index);
	if (a < 0) {
		xpf_rt_too_many_allocators(s, err);
		return -1;
	}
	s->last_alloc = a;
	s->last_alloc_len = nn;
	return a;
}

/* ev: the allocator event (flags: its class, t0: its start); enclosing and
 * transfer: the host event around it and the transfer-family event around
 * it, as 1 + their event metadata index (0: none). */
int xpf_rt_read_alloc(struct scan *s, const xpf_event *xev, unsigned flags, int64_t t0,
		      uint32_t enclosing, uint32_t transfer, size_t line, xpf_error *err)
{
	xpf_runtime *rt = s->rt;
	struct alloc_stats st = { .shape = { NULL, 0 } };
	int rc = read_alloc_stats(s, xev, &st, err);
	if (rc != XPF_OK)
		return rc;
	if (st.nn == 0) {
		st.np = "(unnamed)";
		st.nn = 9;
	}
	if (st.by_index)
		rt->keyed_by_index = true;
	int a = allocator_of(s, st.np, st.nn, st.by_index, err);
	if (a < 0)
		return err->code;
	if (rt->nevents >= INT32_MAX)
		return xpf_fail(err, XPF_EMALFORMED,
				"%s: more than %d allocator events: not supported",
				xpf_capture_label(s->h->cap), INT32_MAX);
	xpf_rt_event *ev = push_event(s);
	ev->kind = (flags & F_ALLOC) ? XPF_RT_ALLOC : XPF_RT_DEALLOC;
	ev->t_ps = t0;
	ev->addr = st.addr;
	ev->in_use_after = (uint64_t)(st.allocated > 0 ? st.allocated : 0) +
			   (uint64_t)(st.reserved > 0 ? st.reserved : 0);
	/* for scan_capacity once the line is read (events an unordered line
	 * made are dropped and read again) */
	*XPF_VEC_PUSH(s->avail, s->navail, s->capavail) =
		st.available > 0 ? (uint64_t)st.available : 0;
	if (st.peak > 0 && (uint64_t)st.peak > rt->allocators[a].lifetime_peak_bytes)
		rt->allocators[a].lifetime_peak_bytes = (uint64_t)st.peak;
	xpf_rt_site site = {
		.bytes = st.abytes > 0 ? (uint64_t)st.abytes : 0,
		.requested_bytes = st.req > 0 ? (uint64_t)st.req : 0,
		/* up to a NUL: printed as C strings, and re-interned so by a merge */
		.shape = st.shape.p ? xpf_rt_intern(s, st.shape.p, strnlen(st.shape.p, st.shape.n)) :
				      NULL,
		.enclosing_md = enclosing,
		.transfer_md = transfer,
		.line = (uint32_t)line,
		.has_bytes = st.has_abytes,
		.has_requested = st.has_req,
		.allocator = (int16_t)a,
	};
	ev->site = xpf_rt_site_of(rt, &site);
	ev->match = -1;
	ev->execution = -1; /* none yet: the line's scan links it */
	ev->buffer_allocation = -1;
	return XPF_OK;
}

/* Text of a string stat of a span, kept in the runtime; NULL if absent. */
static const char *span_text(struct scan *s, const xpf_event *ev, const char *stat, xpf_error *err)
{
	xpf_stat st;
	xpf_str t;
	if (xpf_event_stat(s->p, ev, stat, &st, err) == 1 && xpf_stat_text(&st, &t))
		return xpf_rt_intern(s, t.p, t.n);
	return NULL;
}

const char *xpf_rt_name_in_event_name(const char *name, unsigned flags, size_t *len)
{
	const char *rest;
	xpf_rt_perdev_prefix(name, &rest);
	if (flags & F_GPUMOD) {
		*len = strlen(name) - strlen(":XLA GPU module");
		return name;
	}
	if (flags & F_EXEC) {
		const char *o = strstr(rest, "Execute");
		o = o ? strstr(o, " (") : NULL;
		const char *c = o ? strrchr(o, ')') : NULL;
		if (o && c && c > o + 2) {
			*len = (size_t)(c - o - 2);
			return o + 2;
		}
	}
	return NULL;
}

/* The module name a host event names, or NULL. */
static const char *host_module_name(struct scan *s, const xpf_event *ev, unsigned flags,
				    xpf_error *err)
{
	size_t n;
	const char *m = xpf_rt_name_in_event_name(ev->name, flags, &n);
	if (m)
		return xpf_rt_intern(s, m, n);
	if (flags & F_THUNKS)
		return span_text(s, ev, "module_name", err);
	if (flags & F_EXEC)
		return span_text(s, ev, "name", err);
	return NULL;
}

/* Space for n executions (and their xpf_rt_xbuild) in all: arrays that at
 * least double when the mapped arrays (bounded by the events read) are full. */
void xpf_rt_exec_reserve(struct scan *s, size_t n)
{
	xpf_runtime *rt = s->rt;
	struct xpf_rt_priv *pv = rt->priv;
	if (n <= s->cap_exec)
		return;
	size_t c = grown_cap(s->cap_exec, n);
	rt->executions = mapped_grow(rt->executions, &pv->exec_map_len, rt->nexecutions, c,
				     sizeof *rt->executions);
	pv->xb = mapped_grow(pv->xb, &pv->xb_map_len, rt->nexecutions, c, sizeof *pv->xb);
	s->cap_exec = c;
}

/* A zeroed execution at the end of the runtime's (its xpf_rt_xbuild grown
 * with it): its index. */
static size_t push_execution(struct scan *s)
{
	xpf_runtime *rt = s->rt;
	size_t n = rt->nexecutions;
	xpf_rt_exec_reserve(s, n + 1);
	memset(&rt->executions[n], 0, sizeof *rt->executions);
	rt->nexecutions = n + 1;
	return n;
}

/* Mapped arrays for up to n executions and their xpf_rt_xbuild (n: the events the
 * scan reads, each makes at most one), or arrays that grow when they
 * cannot be mapped. */
void xpf_rt_exec_map(struct scan *s, size_t n)
{
	xpf_runtime *rt = s->rt;
	struct xpf_rt_priv *pv = rt->priv;
	rt->executions = xpf_map_huge(n, sizeof *rt->executions, &pv->exec_map_len);
	pv->xb = xpf_map_huge(n, sizeof *pv->xb, &pv->xb_map_len);
	s->cap_exec = n;
	if (rt->executions && pv->xb)
		return;
	xpf_big_free(rt->executions, pv->exec_map_len);
	xpf_big_free(pv->xb, pv->xb_map_len);
	rt->executions = NULL;
	pv->xb = NULL;
	pv->exec_map_len = pv->xb_map_len = 0;
	s->cap_exec = 0;
}

/* A new execution of the event name (dev, [t0, t1]) on line: its index,
 * with nothing yet known of it beyond that. */
size_t xpf_rt_new_execution(struct scan *s, uint32_t line, int64_t thread, const char *name,
			    int dev, int64_t t0, int64_t t1, const char *pjit)
{
	xpf_runtime *rt = s->rt;
	struct xpf_rt_priv *pv = rt->priv;
	size_t xi = push_execution(s);
	xpf_rt_execution *x = &rt->executions[xi];
	x->device = xpf_rt_device16(dev);
	x->module = -1;
	x->allocator = -1;
	x->prev = -1;
	x->event_name = name;
	x->line = line;
	x->thread = thread;
	x->start_ps = t0;
	x->end_ps = t1;
	pv->xb[xi].program_id = -1;
	pv->xb[xi].pjit = pjit;
	pv->xb[xi].thunk = false;
	pv->xb[xi].retried = false;
	return xi;
}

/* One event of execution xi's subtree: its device, names, program id,
 * where its buffer set-up ends. */
void xpf_rt_exec_walk_event(struct scan *s, size_t xi, struct exec_walk *w, const xpf_event *ev,
			    unsigned flags, int dev, int64_t t1, xpf_error *err)
{
	struct xpf_rt_priv *pv = s->rt->priv;
	xpf_rt_execution *x = &s->rt->executions[xi];
	if (x->device < 0 && (flags & F_PERDEV))
		x->device = xpf_rt_device16(dev);
	if ((flags & F_GPUMOD) && !w->name_gpumod)
		w->name_gpumod = host_module_name(s, ev, flags, err);
	else if ((flags & F_THUNKS) && !w->name_thunks)
		w->name_thunks = host_module_name(s, ev, flags, err);
	else if ((flags & F_EXEC) && !w->name_exec)
		w->name_exec = host_module_name(s, ev, flags, err);
	if (flags & (F_EXEC | F_ANCHOR)) {
		xpf_stat st;
		int64_t pid;
		if (pv->xb[xi].program_id < 0 &&
		    xpf_event_stat(s->p, ev, "program_id", &st, err) == 1 && xpf_stat_i64(&st, &pid))
			pv->xb[xi].program_id = pid;
	}
	if (flags & F_BUILD)
		w->build_end = t1;
}

/* The walk is over; last_kind: where its last step was (2 in a retry, 1
 * in a build, 0); retried: an AllocatorRetry wait inside it. */
int xpf_rt_exec_walk_end(struct scan *s, size_t xi, const struct exec_walk *w, int last_kind,
			 bool retried, xpf_error *err)
{
	struct xpf_rt_priv *pv = s->rt->priv;
	xpf_rt_execution *x = &s->rt->executions[xi];
	if (err->code != XPF_OK)
		return err->code;
	x->host_name = w->name_gpumod ? w->name_gpumod :
		       w->name_thunks ? w->name_thunks :
					w->name_exec;
	x->stopped_in_build = w->build_end >= 0 && !pv->xb[xi].thunk && (last_kind != 0 || retried);
	pv->xb[xi].retried = retried;
	return XPF_OK;
}
