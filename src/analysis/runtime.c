/* The runtime, part 1: scanning the capture (SPEC §4.3; reference §6, §7).
 *
 * The model: `/host:CPU` is read one line at a time.  A line whose events
 * are already in (start, longest first) order -- the usual case -- is nested
 * as it is read (scan_line_stream: memory for the open events and a few per
 * execution, not per event); otherwise its events are copied into a reusable
 * array, sorted by (start, longest first), and nested with a stack (events on one line nest by time and never partially
 * overlap), which gives every event its parent.  From the nesting we take,
 * for each allocator event, the host event around it, the transfer around
 * it and the execution around it; for each execution root, what it
 * contains.  Times are picoseconds relative to the capture's time base, so
 * events of different lines are compared by absolute time.  Nothing is kept
 * per host event beyond the line being read; only allocator events,
 * executions and retries are kept.
 *
 * runtime_exec.c then links executions to modules and derives the figures. */
#include <inttypes.h>
#include <pthread.h>
#include <sys/mman.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analysis/runtime.h"

#include "analysis/runtime_priv.h"
#include "common/alloc.h"
#include "common/intern.h"
#include "common/map.h"
#include "common/runs.h"

/* ---- small helpers ---------------------------------------------------- */

const char *xpf_launched_name(enum xpf_launched l)
{
	return l == XPF_LAUNCHED_YES ? "yes" : l == XPF_LAUNCHED_NO ? "no" : "unknown";
}

const char *xpf_link_name(enum xpf_link l)
{
	static const char *names[] = { "ambiguous", "program_id", "name", "requested_bytes",
				       "pjit", "kernels" };
	return (unsigned)l < sizeof names / sizeof *names ? names[l] : "ambiguous";
}

/* ---- names ---------------------------------------------------------- */

enum {
	F_ALLOC = 1 << 0,
	F_DEALLOC = 1 << 1,
	F_EXEC = 1 << 2,      /* execute family */
	F_ANCHOR = 1 << 3,    /* makes its outermost execute-family ancestor an execution */
	F_PERDEV = 1 << 4,    /* "[<i>] ..." */
	F_BUILD = 1 << 5,
	F_RETRY = 1 << 6,
	F_PJIT = 1 << 7,
	F_TRANSFER = 1 << 8,
	F_GPUMOD = 1 << 9,    /* "<module>:XLA GPU module" */
	F_THUNKS = 1 << 10,   /* GpuExecutable::ExecuteThunks */
	F_NOT_THUNK = 1 << 11, /* bookkeeping inside an execution, not a thunk run */
};

static const char *const transfer_names[] = {
	"DevicePut", "DevicePutWithSharding", "batched_copy_array_to_devices_with_sharding",
	"H2D Dispatch", "device_put", "TransferToDevice", "TransferLiteralToDevice",
};
static const char *const transfer_parts[] = {
	"BufferFromHost", "LinearizeInto", "CopyToMemorySpace", "CreateUninitializedBuffer",
	"CopyToDevice", "TransferToInfeed", "$api.py", "device_put",
};

static int perdev_prefix(const char *name, const char **rest)
{
	*rest = name;
	if (name[0] != '[')
		return -1;
	const char *p = name + 1;
	long v = 0;
	if (*p < '0' || *p > '9')
		return -1;
	while (*p >= '0' && *p <= '9' && v < 1000000)
		v = v * 10 + (*p++ - '0');
	if (p[0] != ']' || p[1] != ' ')
		return -1;
	*rest = p + 2;
	return (int)v;
}

static bool ends_with(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);
	return n >= m && memcmp(s + n - m, suf, m) == 0;
}

static unsigned classify(const char *name, int *dev)
{
	const char *rest;
	unsigned f = 0;
	*dev = perdev_prefix(name, &rest);
	if (strcmp(name, "MemoryAllocation") == 0)
		return F_ALLOC;
	if (strcmp(name, "MemoryDeallocation") == 0)
		return F_DEALLOC;
	/* the buffer set-up: the old client allocates all of an execution's
	 * buffers in Build buffer allocations, the new one its outputs first
	 * in AllocateOutputBuffersWithInputReuse */
	if (strcmp(name, "Build buffer allocations") == 0 || strncmp(name, "AllocateOutputBuffers", 21) == 0)
		return F_BUILD;
	if (strcmp(name, "AllocatorRetry::AllocateRaw") == 0)
		return F_RETRY;
	if (strncmp(name, "PjitFunction(", 13) == 0)
		return F_PJIT;
	if (strstr(rest, "Executable::Execute") || strstr(rest, "Executable::EnqueueExecution") ||
	    strncmp(rest, "PJRT_LoadedExecutable_Execute", 29) == 0)
		f |= F_EXEC;
	if (*dev >= 0)
		f |= F_PERDEV;
	if (strncmp(rest, "GpuExecutable::ExecuteThunks", 28) == 0)
		f |= F_THUNKS | F_ANCHOR;
	if (ends_with(name, ":XLA GPU module"))
		f |= F_GPUMOD | F_ANCHOR;
	/* the old client's helper, the new client's one-device helper */
	if ((f & F_EXEC) && ((f & F_PERDEV) || ends_with(rest, "ExecuteHelper") ||
			     ends_with(rest, "ExecuteHelperOnSingleDevice")))
		f |= F_ANCHOR;
	for (size_t i = 0; i < sizeof transfer_names / sizeof *transfer_names; i++)
		if (strcmp(name, transfer_names[i]) == 0)
			f |= F_TRANSFER;
	for (size_t i = 0; i < sizeof transfer_parts / sizeof *transfer_parts; i++)
		if (strstr(name, transfer_parts[i]))
			f |= F_TRANSFER;
	if (strncmp(name, "Thunks::", 8) == 0 || strcmp(name, "Resolve constant globals") == 0 ||
	    strncmp(name, "ComputeSemaphoreAcquire", 23) == 0)
		f |= F_NOT_THUNK;
	return f;
}

/* ---- allocators ------------------------------------------------------- */

static int natural_cmp(const char *a, const char *b)
{
	while (*a && *b) {
		if (*a >= '0' && *a <= '9' && *b >= '0' && *b <= '9') {
			char *ea, *eb;
			unsigned long long x = strtoull(a, &ea, 10), y = strtoull(b, &eb, 10);
			if (x != y)
				return x < y ? -1 : 1;
			a = ea;
			b = eb;
			continue;
		}
		if (*a != *b)
			return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
		a++;
		b++;
	}
	return *a ? 1 : *b ? -1 : 0;
}

/* The index of allocator name in rt, added when new; -1 when it would be
 * one more than XPF_RT_MAX_ALLOCATORS. */
/* An allocator name's ordinal as a device: one above what an execution
 * keeps (xpf_rt_device16; "GPU_-1_bfc" reads as 4294967295) is unknown. */
static int allocator_ordinal(unsigned d)
{
	return d <= INT16_MAX ? (int)d : -1;
}

static int find_allocator(xpf_runtime *rt, size_t *cap, const char *name, bool by_index)
{
	for (size_t i = 0; i < rt->nallocators; i++)
		if (strcmp(rt->allocators[i].name, name) == 0)
			return (int)i;
	if (rt->nallocators >= XPF_RT_MAX_ALLOCATORS)
		return -1;
	size_t old_cap = *cap;
	xpf_rt_allocator *a = XPF_VEC_PUSH(rt->allocators, rt->nallocators, *cap);
	if (*cap != old_cap)
		rt->priv->peak = xpf_realloc_array(rt->priv->peak, *cap, sizeof *rt->priv->peak);
	memset(&rt->priv->peak[rt->nallocators - 1], 0, sizeof *rt->priv->peak);
	memset(a, 0, sizeof *a);
	a->name = xpf_strdup(name);
	a->keyed_by_index = by_index;
	a->device = -1;
	a->peak_event = -1;
	a->capacity_lo_bytes = UINT64_MAX;
	unsigned d;
	int used = 0;
	if (sscanf(name, "GPU_%u_bfc%n", &d, &used) == 1 && name[used] == '\0') {
		a->device = allocator_ordinal(d);
		a->is_pool = true;
	} else if (sscanf(name, "tpu:%u%n", &d, &used) == 1 && name[used] == '\0') {
		a->device = allocator_ordinal(d);
		a->is_pool = true;
	} else if (sscanf(name, "GPU_collectivememory_%u_bfc%n", &d, &used) == 1 &&
		   name[used] == '\0') {
		a->device = allocator_ordinal(d);
	}
	return (int)(rt->nallocators - 1);
}

/* ---- one line ---------------------------------------------------------- */

/* An event head of an unordered line and its times (ps from the base), to
 * be sorted into the order scan_line_stream nests in. */
struct order_head {
	xpf_event_head h;
	int64_t t0, t1;
};


struct scan {
	xpf_host *h;
	xpf_runtime *rt;
	const xpf_plane *p;
	int64_t base;
	size_t cap_alloc, cap_events, cap_exec, cap_retry;
	struct order_head *oh;   /* an unordered line's heads, sorted */
	size_t noh, capoh;
	/* classify() of each event metadata of p, by index (UINT_MAX: not yet):
	 * names repeat, so each is classified once, not once per event. */
	unsigned *md_flags;
	int *md_dev;
	/* The host lines are read through this (see xpf_window). */
	xpf_window win;
	/* the runtime's line_t0/line_t1 (shared by the threads: each writes
	 * its own lines) */
	int64_t *line_t0, *line_t1;
	/* bytes_available of the line's allocator events, in order */
	uint64_t *avail;
	size_t navail, capavail;
	/* The bytes of a line's knode events (scan_line_stream). */
	uint8_t *kbuf;
	size_t kbuf_n, kbuf_cap;
	/* read_alloc's stats: their metadata ids on p, and which each is. */
	int64_t alloc_ids[64];
	uint8_t alloc_code[64];
	size_t nalloc_ids;
	uint8_t code_of_id[128];  /* alloc_code of the ids below 128; AS_N: none */
	xpf_pick alloc_pick;     /* of alloc_ids */
	/* shapes kept once each (intern) */
	xpf_intern *interned;
	int last_alloc;          /* the allocator of the last event read, or -1 */
	size_t last_alloc_len;   /* its name's length */
};

/* The allocator-event stats read_alloc reads, in alloc_stat_names order. */
enum {
	AS_ALLOCATOR_NAME, AS_INDEX_ON_HOST, AS_DEVICE_ORDINAL, AS_BYTES_RESERVED,
	AS_BYTES_ALLOCATED, AS_BYTES_AVAILABLE, AS_PEAK_BYTES_IN_USE, AS_REQUESTED_BYTES,
	AS_ALLOCATION_BYTES, AS_ADDR, AS_SHAPE, AS_N
};
static const char *const alloc_stat_names[AS_N] = {
	"allocator_name", "index_on_host", "device_ordinal", "bytes_reserved",
	"bytes_allocated", "bytes_available", "peak_bytes_in_use", "requested_bytes",
	"allocation_bytes", "addr", "shape",
};

/* A copy of s[0..n) kept by the runtime, the same pointer for the same
 * bytes (shapes and module names: a few distinct ones, millions of events
 * and executions).  Each scan (one a thread) has its own set; the runtime
 * keeps them all (keep_interns). */
static const char *intern(struct scan *sc, const char *str, size_t n)
{
	if (sc->interned == NULL)
		sc->interned = xpf_intern_new();
	return xpf_intern_get(sc->interned, str, n);
}

static bool same_site(const xpf_rt_site *a, const xpf_rt_site *b)
{
	return a->bytes == b->bytes && a->requested_bytes == b->requested_bytes &&
	       a->shape == b->shape && a->enclosing_md == b->enclosing_md &&
	       a->transfer_md == b->transfer_md && a->has_bytes == b->has_bytes &&
	       a->has_requested == b->has_requested && a->allocator == b->allocator;
}

/* The index in rt->sites of a site like *want (its shape interned by the
 * runtime's scan), added when new.  The map holds a hash of each; a slot
 * whose site differs (a collision of 128 bits, which a crafted capture can
 * make at will) keeps its own: the site is added again, unmapped (keeping
 * sites once saves memory; it means nothing), and no search grows with
 * the sites. */
/* A site's hash, the two halves of its key in pv->site_map. */
static void site_hash(const xpf_rt_site *w, uint64_t *a, uint64_t *b)
{
	*a = w->bytes * 0x9E3779B97F4A7C15ull ^ w->requested_bytes ^
	     (uint64_t)(uint16_t)w->allocator << 40 ^
	     (uint64_t)w->has_bytes << 62 ^ (uint64_t)w->has_requested << 63;
	*b = (uint64_t)(uintptr_t)w->shape * 0xC2B2AE3D27D4EB4Full ^
	     ((uint64_t)w->enclosing_md << 32 | w->transfer_md);
}

/* Site i into the map, unless a site of its hash is there (site_of). */
static void site_map_add(xpf_runtime *rt, uint32_t i)
{
	struct xpf_rt_priv *pv = rt->priv;
	if (pv->site_map.cap == 0)
		xpf_map_init(&pv->site_map, 64);
	uint64_t a, b;
	site_hash(&rt->sites[i], &a, &b);
	if (pv->site_map.s[xpf_map_find(&pv->site_map, a, b)].val < 0)
		xpf_map_put(&pv->site_map, a, b, (int64_t)i);
}

static uint32_t site_of(xpf_runtime *rt, const xpf_rt_site *want)
{
	struct xpf_rt_priv *pv = rt->priv;
	if (pv->site_map.cap == 0)
		xpf_map_init(&pv->site_map, 64);
	uint64_t a, b;
	site_hash(want, &a, &b);
	size_t k = xpf_map_find(&pv->site_map, a, b);
	int64_t v = pv->site_map.s[k].val;
	if (v >= 0 && same_site(&rt->sites[v], want))
		return (uint32_t)v;
	/* at most one a read of an allocator event (fewer than 2^31; an
	 * unordered line's are read twice) and one a free the replay gives its
	 * match's bytes: an index of 32 bits always fits */
	if (rt->nsites >= UINT32_MAX)
		abort();
	*XPF_VEC_PUSH(rt->sites, rt->nsites, pv->cap_sites) = *want;
	if (v < 0)
		xpf_map_put(&pv->site_map, a, b, (int64_t)(rt->nsites - 1));
	return (uint32_t)(rt->nsites - 1);
}

/* The runtime keeps a scan's set of strings (its sites and executions
 * point into it). */
static void keep_interns(struct xpf_rt_priv *pv, xpf_intern **set)
{
	if (*set == NULL)
		return;
	pv->interns = xpf_realloc_array(pv->interns, pv->ninterns + 1, sizeof *pv->interns);
	pv->interns[pv->ninterns++] = *set;
	*set = NULL;
}

/* A candidate for an allocator's in-window peak, met after the ones taken
 * so far in scan order: taken when it has more in use, or as much but
 * earlier. */
static void peak_take(struct xpf_rt_scan_peak *pk, uint64_t in_use, int64_t t_ps,
		      uint64_t available)
{
	if (!pk->set || in_use > pk->in_use || (in_use == pk->in_use && t_ps < pk->t_ps)) {
		pk->set = true;
		pk->in_use = in_use;
		pk->t_ps = t_ps;
		pk->available = available;
	}
}

/* An event of allocator a (at t_ps, in use after it, available): the
 * capacity range, and bytes_available at the in-window peak, which replay
 * meets as the first event in time order (then scan order) with the most
 * in use, so: more in use, or as much but earlier.  Events come in scan
 * order here, chunks merged in line order (chunk_merge). */
static void scan_capacity(xpf_rt_allocator *a, struct xpf_rt_scan_peak *pk, int64_t t_ps,
			  uint64_t in_use, uint64_t available)
{
	uint64_t cap = in_use + available;
	if (cap < a->capacity_lo_bytes)
		a->capacity_lo_bytes = cap;
	if (cap > a->capacity_hi_bytes)
		a->capacity_hi_bytes = cap;
	peak_take(pk, in_use, t_ps, available);
}

/* Room or array p of n_used records grown to cap records: an array from
 * then on (*map_len 0). */
static void *room_grow(void *p, size_t *map_len, size_t n_used, size_t cap, size_t size)
{
	if (!*map_len)
		return xpf_realloc_array(p, cap, size);
	void *a = xpf_realloc_array(NULL, cap, size);
	memcpy(a, p, n_used * size);
	xpf_big_free(p, *map_len);
	*map_len = 0;
	return a;
}

/* Room for the events of n host events (each makes at most one; n bounds
 * what a scan can find), or an array that grows when it cannot be mapped.
 * A room never moves: a realloc that moves would touch fresh pages for a
 * whole copy. */
static void events_room(struct scan *s, size_t n)
{
	struct xpf_rt_priv *pv = s->rt->priv;
	s->rt->events = xpf_map_huge(n, sizeof *s->rt->events, &pv->events_map_len);
	s->cap_events = s->rt->events ? n : 0;
}

/* Millions of events: every byte of one is MiBs of fresh pages (a 1 GiB
 * capture's 1.6 M events at 80 bytes took 0.15 s more than at 64). */
_Static_assert(sizeof (xpf_rt_event) <= 40, "xpf_rt_event grew past 40 bytes");
/* And hundreds of thousands of executions (their times in ps only). */
_Static_assert(sizeof (xpf_rt_execution) <= 112, "xpf_rt_execution grew past 112 bytes");

/* A capacity for n records grown from cap: at least doubled, at least 64. */
static size_t grown_cap(size_t cap, size_t n)
{
	return n > 2 * cap ? (n > 64 ? n : 64) : 2 * cap;
}

/* Room for n events in all: an array that at least doubles when the room
 * (which bounds the events read) is full. */
static void events_reserve(struct scan *s, size_t n)
{
	xpf_runtime *rt = s->rt;
	if (n <= s->cap_events)
		return;
	size_t c = grown_cap(s->cap_events, n);
	rt->events = room_grow(rt->events, &rt->priv->events_map_len, rt->nevents, c, sizeof *rt->events);
	s->cap_events = c;
}

/* A zeroed event at the end of the runtime's. */
static xpf_rt_event *push_event(struct scan *s)
{
	xpf_runtime *rt = s->rt;
	size_t n = rt->nevents;
	events_reserve(s, n + 1);
	memset(&rt->events[n], 0, sizeof *rt->events);
	rt->nevents = n + 1;
	return &rt->events[n];
}

/* Fill s's alloc_ids/alloc_code from the plane's stat metadata. */
static void alloc_stat_ids(struct scan *s)
{
	s->nalloc_ids = 0;
	memset(s->code_of_id, AS_N, sizeof s->code_of_id);
	for (int k = 0; k < AS_N; k++) {
		int64_t ids[8];
		size_t n = xpf_plane_stat_ids(s->p, alloc_stat_names[k], ids, 8);
		for (size_t i = 0; i < n && i < 8 && s->nalloc_ids < 64; i++) {
			s->alloc_ids[s->nalloc_ids] = ids[i];
			s->alloc_code[s->nalloc_ids++] = (uint8_t)k;
			if (ids[i] >= 0 && ids[i] < 128 && s->code_of_id[ids[i]] == AS_N)
				s->code_of_id[ids[i]] = (uint8_t)k;
		}
	}
	xpf_pick_init(&s->alloc_pick, s->alloc_ids, s->nalloc_ids);
}

/* By start, longest first, then place in the line. */
static int order_cmp(const void *a, const void *b)
{
	const struct order_head *x = a, *y = b;
	if (x->t0 != y->t0)
		return x->t0 < y->t0 ? -1 : 1;
	if (x->t1 != y->t1)
		return x->t1 > y->t1 ? -1 : 1;
	return x->h.index < y->h.index ? -1 : x->h.index > y->h.index;
}

/* Times in ps relative to the base, clamped to +-2^61 so that a hostile
 * capture (line bases and offsets near INT64_MAX/MIN) cannot overflow here
 * or in the t0 + duration and end arithmetic after. */
#define REL_PS_MAX ((int64_t)1 << 61)
static int64_t rel_ps(int64_t line_ts_ns, int64_t base, int64_t off_ps)
{
	__int128 v = ((__int128)line_ts_ns - base) * 1000 + off_ps;
	return v > REL_PS_MAX ? REL_PS_MAX : v < -REL_PS_MAX ? -REL_PS_MAX : (int64_t)v;
}

/* A line's base in ps from the capture's, worked out once a line: an
 * event's time is then one addition, not rel_ps's 128-bit product (the same
 * figure: within +-2^61 both, an offset too, the sum cannot overflow and
 * meets the same clamp). */
struct line_base {
	int64_t ps;
	bool ok;         /* within +-REL_PS_MAX (else rel_ps an event) */
	int64_t ts_ns;   /* the line's timestamp_ns */
};

static struct line_base line_base_of(const struct scan *s, size_t line)
{
	int64_t ts = s->p->lines[line].timestamp_ns;
	__int128 b = ((__int128)ts - s->base) * 1000;
	bool ok = b >= -REL_PS_MAX && b <= REL_PS_MAX;
	return (struct line_base){ ok ? (int64_t)b : 0, ok, ts };
}

/* The start and end of event head ev of a line (its base lb), in ps
 * relative to the capture's base. */
static inline void head_times(const struct scan *s, const struct line_base *lb,
			      const xpf_event_head *ev, int64_t *t0, int64_t *t1)
{
	int64_t off = ev->offset_ps;
	if (lb->ok && off > -REL_PS_MAX && off < REL_PS_MAX) {
		int64_t v = lb->ps + off;
		*t0 = v > REL_PS_MAX ? REL_PS_MAX : v < -REL_PS_MAX ? -REL_PS_MAX : v;
	} else {
		*t0 = rel_ps(lb->ts_ns, s->base, off);
	}
	*t1 = *t0 + (ev->duration_ps > 0 ? (ev->duration_ps < REL_PS_MAX ? ev->duration_ps : REL_PS_MAX) : 0);
}

/* Widen line's time bounds (xpf_rt_priv.line_t0/t1) to [t0, t1]. */
static inline void line_bounds(struct scan *s, size_t line, int64_t t0, int64_t t1)
{
	int64_t *lo = &s->line_t0[line], *hi = &s->line_t1[line];
	if (t0 <= -REL_PS_MAX || t1 >= REL_PS_MAX) { /* clamped: not exact */
		*lo = INT64_MIN;
		*hi = INT64_MAX;
		return;
	}
	if (t0 < *lo)
		*lo = t0;
	if (t1 > *hi)
		*hi = t1;
}

/* classify() of event metadata k (named name), once per metadata. */
static unsigned md_class(struct scan *s, size_t k, const char *name)
{
	if (s->md_flags[k] == UINT_MAX)
		s->md_flags[k] = classify(name, &s->md_dev[k]);
	return s->md_flags[k];
}

/* More allocators than a runtime holds (the same words whichever thread
 * finds it out). */
static int too_many_allocators(const struct scan *s, xpf_error *err)
{
	return xpf_fail(err, XPF_EMALFORMED, "%s: more than %d allocators: not supported",
			xpf_capture_label(s->h->cap), XPF_RT_MAX_ALLOCATORS);
}

/* ev: the allocator event (flags: its class, t0: its start); enclosing and
 * transfer: the host event around it and the transfer-family event around
 * it, as 1 + their event metadata index (0: none). */
static int read_alloc(struct scan *s, const xpf_event *xev, const xpf_event_head *head,
		      unsigned flags, int64_t t0, uint32_t enclosing, uint32_t transfer,
		      size_t line, xpf_error *err)
{
	xpf_runtime *rt = s->rt;
	xpf_stat_iter it;
	xpf_stat st;
	xpf_raw_stat picked[16];
	int rc;
	/* the allocator's name: allocator_name up to a NUL, at most 255
	 * bytes, else "tpu:<index_on_host>" (TPU) */
	const char *np = NULL;
	size_t nn = 0;
	char ibuf[32];
	bool by_index = false;
	int64_t reserved = 0, allocated = 0, available = 0, peak = 0, req = 0, abytes = 0;
	bool has_req = false, has_abytes = false;
	uint64_t addr = 0;
	xpf_str shape = { NULL, 0 };
	/* the quick reading when it can vouch for the event (a reference to no
	 * stat metadata it cannot: the iterator words that), else the iterator */
	int np_ = head ? xpf_stats_pick(s->p, head, &s->alloc_pick, picked,
				       sizeof picked / sizeof *picked) : -1;
	for (int j = 0; j < np_; j++)
		if (picked[j].kind == XPF_STAT_REF && !xpf_stat_resolve(s->p, &picked[j], &st))
			np_ = -1;
	int next = 0;
	if (np_ < 0)
		xpf_stats_of_event(s->p, xev, &it);
	while ((rc = np_ >= 0 ? (next < np_ ? xpf_stat_resolve_by_id(s->p, &picked[next++], &st) : 0) :
		     xpf_stats_next_of(&it, s->alloc_ids, s->nalloc_ids, &st, err)) == 1) {
		xpf_str t;
		uint64_t u;
		unsigned code = AS_N;
		if (st.metadata_id >= 0 && st.metadata_id < 128) {
			code = s->code_of_id[st.metadata_id];
		} else {
			size_t k = 0;
			while (k < s->nalloc_ids && s->alloc_ids[k] != st.metadata_id)
				k++;
			code = k < s->nalloc_ids ? s->alloc_code[k] : AS_N;
		}
		switch (code) {
		case AS_ALLOCATOR_NAME:
			if (xpf_stat_text(&st, &t)) {
				np = t.p;
				nn = strnlen(t.p, t.n < 255 ? t.n : 255);
				by_index = false;
			}
			break;
		case AS_INDEX_ON_HOST:
		case AS_DEVICE_ORDINAL:
			if (xpf_stat_u64(&st, &u) && nn == 0) {
				nn = (size_t)snprintf(ibuf, sizeof ibuf, "tpu:%" PRIu64, u);
				np = ibuf;
				by_index = true;
			}
			break;
		case AS_BYTES_RESERVED: xpf_stat_i64(&st, &reserved); break;
		case AS_BYTES_ALLOCATED: xpf_stat_i64(&st, &allocated); break;
		case AS_BYTES_AVAILABLE: xpf_stat_i64(&st, &available); break;
		case AS_PEAK_BYTES_IN_USE: xpf_stat_i64(&st, &peak); break;
		case AS_REQUESTED_BYTES: has_req = xpf_stat_i64(&st, &req); break;
		case AS_ALLOCATION_BYTES: has_abytes = xpf_stat_i64(&st, &abytes); break;
		case AS_ADDR: xpf_stat_u64(&st, &addr); break;
		case AS_SHAPE: xpf_stat_text(&st, &shape); break;
		}
	}
	if (rc < 0)
		return err->code;
	if (nn == 0) {
		np = "(unnamed)";
		nn = 9;
	}
	if (by_index)
		rt->keyed_by_index = true;
	/* mostly the allocator of the event before */
	int a = s->last_alloc;
	if (!(a >= 0 && s->last_alloc_len == nn && memcmp(rt->allocators[a].name, np, nn) == 0)) {
		char name[256];
		memcpy(name, np, nn);
		name[nn] = '\0';
		a = find_allocator(rt, &s->cap_alloc, name, by_index);
		if (a < 0)
			return too_many_allocators(s, err);
		s->last_alloc = a;
		s->last_alloc_len = nn;
	}
	if (rt->nevents >= INT32_MAX)
		return xpf_fail(err, XPF_EMALFORMED,
				"%s: more than %d allocator events: not supported",
				xpf_capture_label(s->h->cap), INT32_MAX);
	xpf_rt_event *ev = push_event(s);
	ev->kind = (flags & F_ALLOC) ? XPF_RT_ALLOC : XPF_RT_DEALLOC;
	ev->t_ps = t0;
	ev->addr = addr;
	ev->in_use_after = (uint64_t)(allocated > 0 ? allocated : 0) + (uint64_t)(reserved > 0 ? reserved : 0);
	/* for scan_capacity once the line is read (events an unordered line
	 * made are dropped and read again) */
	*XPF_VEC_PUSH(s->avail, s->navail, s->capavail) = available > 0 ? (uint64_t)available : 0;
	if (peak > 0 && (uint64_t)peak > rt->allocators[a].lifetime_peak_bytes)
		rt->allocators[a].lifetime_peak_bytes = (uint64_t)peak;
	xpf_rt_site site = {
		.bytes = abytes > 0 ? (uint64_t)abytes : 0,
		.requested_bytes = req > 0 ? (uint64_t)req : 0,
		/* up to a NUL: printed as C strings, and re-interned so by a merge */
		.shape = shape.p ? intern(s, shape.p, strnlen(shape.p, shape.n)) : NULL,
		.enclosing_md = enclosing,
		.transfer_md = transfer,
		.has_bytes = has_abytes,
		.has_requested = has_req,
		.allocator = (int16_t)a,
	};
	ev->site = site_of(rt, &site);
	ev->match = -1;
	ev->execution = -2 - (int32_t)line; /* none yet: its line (fewer than INT32_MAX - 1, build) */
	ev->buffer_allocation = -1;
	return XPF_OK;
}

/* Text of a string stat of a span, kept in the runtime; NULL if absent. */
static const char *span_text(struct scan *s, const xpf_event *ev, const char *stat, xpf_error *err)
{
	xpf_stat st;
	xpf_str t;
	if (xpf_event_stat(s->p, ev, stat, &st, err) == 1 && xpf_stat_text(&st, &t))
		return intern(s, t.p, t.n);
	return NULL;
}

/* The module name a host event names, or NULL. */
static const char *host_module_name(struct scan *s, const xpf_event *ev, unsigned flags,
				    xpf_error *err)
{
	const char *rest;
	perdev_prefix(ev->name, &rest);
	if (flags & F_GPUMOD)
		return intern(s, ev->name, strlen(ev->name) - strlen(":XLA GPU module"));
	if (flags & F_THUNKS)
		return span_text(s, ev, "module_name", err);
	if (flags & F_EXEC) {
		const char *o = strstr(rest, "Execute");
		o = o ? strstr(o, " (") : NULL;
		const char *c = o ? strrchr(o, ')') : NULL;
		if (o && c && c > o + 2)
			return intern(s, o + 2, (size_t)(c - o - 2));
		return span_text(s, ev, "name", err);
	}
	return NULL;
}

/* A thunk: what `<module>:XLA GPU module` / ExecuteThunks run once the
 * buffers are allocated (one event per HLO instruction), as opposed to the
 * set-up events that also nest in them. */
static bool thunk_of(unsigned parent_flags, unsigned flags)
{
	return (parent_flags & (F_GPUMOD | F_THUNKS)) &&
	       !(flags & (F_GPUMOD | F_THUNKS | F_ALLOC | F_DEALLOC | F_BUILD | F_RETRY | F_EXEC |
			  F_NOT_THUNK));
}

/* Room for n executions (and their xpf_rt_xbuild) in all: arrays that at
 * least double when the rooms (bounded by the events read) are full. */
static void exec_reserve(struct scan *s, size_t n)
{
	xpf_runtime *rt = s->rt;
	struct xpf_rt_priv *pv = rt->priv;
	if (n <= s->cap_exec)
		return;
	size_t c = grown_cap(s->cap_exec, n);
	rt->executions = room_grow(rt->executions, &pv->exec_map_len, rt->nexecutions, c,
				   sizeof *rt->executions);
	pv->xb = room_grow(pv->xb, &pv->xb_map_len, rt->nexecutions, c, sizeof *pv->xb);
	s->cap_exec = c;
}

/* A zeroed execution at the end of the runtime's (its xpf_rt_xbuild grown
 * with it): its index. */
static size_t push_execution(struct scan *s)
{
	xpf_runtime *rt = s->rt;
	size_t n = rt->nexecutions;
	exec_reserve(s, n + 1);
	memset(&rt->executions[n], 0, sizeof *rt->executions);
	rt->nexecutions = n + 1;
	return n;
}

/* Rooms for up to n executions and their xpf_rt_xbuild (n: the events the
 * scan reads, each makes at most one), or arrays that grow when they
 * cannot be mapped. */
static void exec_rooms(struct scan *s, size_t n)
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
static size_t new_execution(struct scan *s, uint32_t line, int64_t thread, const char *name,
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

/* What the walk over an execution's subtree has seen so far. */
struct exec_walk {
	const char *name_gpumod, *name_thunks, *name_exec;
	int64_t build_end;
};

/* One event of execution xi's subtree: its device, names, program id,
 * where its buffer set-up ends. */
static void exec_walk_event(struct scan *s, size_t xi, struct exec_walk *w, const xpf_event *ev,
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
		    xpf_event_stat(s->p, ev, "program_id", &st, err) == 1 &&
		    xpf_stat_i64(&st, &pid))
			pv->xb[xi].program_id = pid;
	}
	if (flags & F_BUILD)
		w->build_end = t1;
}

/* The walk is over; last_kind: where its last step was (2 in a retry, 1
 * in a build, 0); retried: an AllocatorRetry wait inside it. */
static int exec_walk_end(struct scan *s, size_t xi, const struct exec_walk *w, int last_kind,
			 bool retried, xpf_error *err)
{
	struct xpf_rt_priv *pv = s->rt->priv;
	xpf_rt_execution *x = &s->rt->executions[xi];
	if (err->code != XPF_OK)
		return err->code;
	x->host_name = w->name_gpumod ? w->name_gpumod : w->name_thunks ? w->name_thunks : w->name_exec;
	x->stopped_in_build = w->build_end >= 0 && !pv->xb[xi].thunk && (last_kind != 0 || retried);
	pv->xb[xi].retried = retried;
	return XPF_OK;
}

/* ---- one line, streaming ------------------------------------------------ */

/* The usual case: the line's events are already in the order the sort above
 * would put them (by start, longest first), so they are nested as they are
 * read, with a stack of the open events only.  Kept beyond its end is a
 * node for each event that can make or name an execution or that can hold
 * its buffer set-up (execute family, per-device, anchors, Build buffer
 * allocations): a few per execution.  Other events only leave their mark on
 * the nearest such node around them (the last event under it, a thunk under
 * it).  Which nodes are executions is settled at the end of the line, with
 * the same rules as scan_line_sorted, and the allocator events and retries
 * read on the way get their execution then. */
struct knode {
	xpf_event ev;     /* its msg in scan.kbuf from kbuf_at, once the line is read */
	size_t kbuf_at;
	int64_t t0, t1;
	unsigned flags;
	int dev;
	long parent;      /* nearest node strictly around it, or -1 */
	const char *pjit; /* nearest PjitFunction around it: its name */
	size_t last_seq;  /* the last step whose nearest node (or self) this is */
	int last_kind;    /* its kind: 2 in a retry, 1 in a build, 0 */
	bool thunk;       /* itself a thunk, or a thunk whose nearest node this is */
	bool retried;     /* itself a retry, or a retry whose nearest node this is */
	bool mark;
	long root;
	long xid;
};

struct frame {
	int64_t t0, t1;
	unsigned flags;
	const char *name;
	long node;            /* nearest node around it, or self */
	long build;           /* nearest Build buffer allocations node, or self */
	uint32_t md1;         /* 1 + its event metadata index */
	uint32_t transfer;    /* outermost transfer around it, or self: 1 + its
				 metadata index, 0: none */
	const char *pjit;     /* nearest PjitFunction strictly around it */
	bool retry;           /* in (or is) an AllocatorRetry */
};

struct pending {
	size_t index; /* into rt->events or rt->retries */
	long node;    /* nearest node around it */
	long build;
	bool has_alloc; /* retries: a later allocation on this line */
	int64_t alloc_t0;
};

/* add_execution over the nodes: node r is an execution. */
static int add_execution_node(struct scan *s, size_t line, struct knode *nd, size_t nn, long r,
			      xpf_error *err)
{
	struct knode *root = &nd[r];
	size_t xi = new_execution(s, (uint32_t)line, s->p->lines[line].id, root->ev.name, root->dev,
				  root->t0, root->t1, root->pjit);
	struct exec_walk w = { NULL, NULL, NULL, -1 };
	size_t last_seq = root->last_seq;
	int last_kind = root->last_kind;
	bool retried = false;
	for (size_t j = (size_t)r; j < nn && nd[j].t0 <= root->t1; j++) {
		struct knode *e = &nd[j];
		if ((long)j != r && e->root != r)
			continue;
		exec_walk_event(s, xi, &w, &e->ev, e->flags, e->dev, e->t1, err);
		if (e->thunk)
			s->rt->priv->xb[xi].thunk = true;
		retried = retried || e->retried;
		if (e->last_seq >= last_seq) {
			last_seq = e->last_seq;
			last_kind = e->last_kind;
		}
	}
	return exec_walk_end(s, xi, &w, last_kind, retried, err);
}

/* scan_line_stream's answer when the line is not in order: nothing made but
 * allocator events, retries and allocators, for scan_line to drop or keep. */
#define SCAN_UNORDERED (-1)

static int scan_line_stream(struct scan *s, size_t line, const struct order_head *sorted,
			    size_t nsorted, xpf_error *err)
{
	const xpf_plane *p = s->p;
	xpf_runtime *rt = s->rt;
	xpf_event_iter it;
	xpf_event_head ev;
	int rc;
	struct knode *nd = NULL;
	struct frame *st = NULL;
	struct pending *pa_ev = NULL, *pa_re = NULL;
	size_t nn = 0, cn = 0, ns = 0, cs = 0, nae = 0, cae = 0, nar = 0, car = 0, waiting = 0;
	size_t seq = 0;
	s->kbuf_n = 0;
	int64_t pt0 = 0, pt1 = 0, t1max = INT64_MIN;
	const struct line_base lb = line_base_of(s, line);
	if (!sorted)
		xpf_events_begin_window(p, line, &it, &s->win);
	for (;;) {
		if (!sorted) {
			if ((rc = xpf_events_next_head(&it, &ev, err)) != 1)
				break;
		} else if (seq < nsorted) {
			ev = sorted[seq].h;
		} else {
			rc = 0;
			break;
		}
		size_t i = seq++;
		int64_t t0, t1;
		head_times(s, &lb, &ev, &t0, &t1);
		line_bounds(s, line, t0, t1);
		/* not in the order scan_line_sorted's sort would give */
		if (i > 0 && !(t0 > pt0 || (t0 == pt0 && t1 <= pt1))) {
			rc = SCAN_UNORDERED;
			goto out;
		}
		pt0 = t0;
		pt1 = t1;
		t1max = t1 > t1max ? t1 : t1max; /* rt->end_ns at the end */
		size_t k = ev.md;
		const char *name = p->event_md[k].name;
		unsigned flags = md_class(s, k, name);
		while (ns > 0 && !(t0 < st[ns - 1].t1 ||
				   (t0 == st[ns - 1].t0 && t1 <= st[ns - 1].t1 && st[ns - 1].t1 > st[ns - 1].t0)))
			ns--;
		const struct frame *pa = ns > 0 ? &st[ns - 1] : NULL;
		long knode = pa ? pa->node : -1, bnode = pa ? pa->build : -1;
		bool retry = (flags & F_RETRY) || (pa && pa->retry);
		int kind = retry ? 2 : ((flags & F_BUILD) || bnode >= 0) ? 1 : 0;
		const char *pjit = pa ? ((pa->flags & F_PJIT) ? pa->name : pa->pjit) : NULL;
		bool thunk = pa && thunk_of(pa->flags, flags);
		/* A step of the execution around it: what it does after a failed
		 * set-up (freeing the part of the set it had, error and Python
		 * events, SPEC §4.3) is none. */
		bool step = !(flags & F_DEALLOC) && (flags != 0 || thunk || kind != 0);
		uint32_t transfer = pa && pa->transfer ? pa->transfer :
				    (flags & F_TRANSFER) ? (uint32_t)k + 1 : 0;
		uint32_t enclosing = pa ? pa->md1 : 0;
		long self = knode;
		if (flags & (F_EXEC | F_PERDEV | F_ANCHOR | F_BUILD)) {
			struct knode *n = XPF_VEC_PUSH(nd, nn, cn);
			xpf_event_of_head(p, line, &ev, &n->ev);
			/* read after the line: a copy of its bytes (the window moves
			 * on; the mapping is costly to touch) */
			if (s->kbuf_n + ev.msg_len > s->kbuf_cap) {
				s->kbuf_cap = (s->kbuf_n + ev.msg_len) * 2 + 4096;
				s->kbuf = xpf_realloc_array(s->kbuf, s->kbuf_cap, 1);
			}
			memcpy(s->kbuf + s->kbuf_n, ev.msg, ev.msg_len);
			n->kbuf_at = s->kbuf_n;
			s->kbuf_n += ev.msg_len;
			n->t0 = t0;
			n->t1 = t1;
			n->flags = flags;
			n->dev = s->md_dev[k];
			n->parent = knode;
			n->pjit = pjit;
			n->last_seq = i;
			n->last_kind = kind;
			n->thunk = thunk;
			n->retried = retry;
			n->mark = false;
			n->root = -1;
			n->xid = -1;
			self = (long)nn - 1;
		} else if (knode >= 0) {
			if (step) {
				nd[knode].last_seq = i;
				nd[knode].last_kind = kind;
			}
			if (thunk)
				nd[knode].thunk = true;
			if (retry)
				nd[knode].retried = true;
		}
		if (flags & (F_ALLOC | F_DEALLOC)) {
			xpf_event full;
			xpf_event_of_head(p, line, &ev, &full);
			rc = read_alloc(s, &full, &ev, flags, t0, enclosing, transfer, line, err);
			if (rc != XPF_OK)
				goto out;
			struct pending *q = XPF_VEC_PUSH(pa_ev, nae, cae);
			q->index = rt->nevents - 1;
			q->node = knode;
			q->build = bnode;
			if (flags & F_ALLOC)
				for (; waiting < nar; waiting++) {
					pa_re[waiting].has_alloc = true;
					pa_re[waiting].alloc_t0 = t0;
				}
		} else if (flags & F_RETRY) {
			xpf_rt_retry *r = XPF_VEC_PUSH(rt->retries, rt->nretries, s->cap_retry);
			r->time_ns = xpf_rt_floor_ns(t0);
			r->duration_ns = (t1 - t0) / 1000;
			r->thread = p->lines[line].id;
			r->execution = -1;
			r->allocator = -1;
			struct pending *q = XPF_VEC_PUSH(pa_re, nar, car);
			q->index = rt->nretries - 1;
			q->node = knode;
			q->has_alloc = false;
		}
		if (t1 > t0 || (flags & (F_EXEC | F_BUILD | F_RETRY | F_PJIT | F_TRANSFER | F_ANCHOR))) {
			struct frame *f = XPF_VEC_PUSH(st, ns, cs);
			f->t0 = t0;
			f->t1 = t1;
			f->flags = flags;
			f->name = name;
			f->md1 = (uint32_t)k + 1;
			f->node = self;
			f->build = (flags & F_BUILD) ? self : bnode;
			f->transfer = transfer;
			f->pjit = pjit;
			f->retry = retry;
		}
	}
	if (rc < 0) {
		rc = err->code;
		goto out;
	}
	rc = XPF_OK;

	for (size_t i = 0; i < nn; i++)
		nd[i].ev.msg = s->kbuf + nd[i].kbuf_at;

	/* Execution roots, as in scan_line_sorted. */
	for (size_t i = 0; i < nn; i++) {
		struct knode *e = &nd[i];
		if (!(e->flags & F_ANCHOR))
			continue;
		long r = (e->flags & F_EXEC) ? (long)i : -1, pd = (e->flags & F_PERDEV) ? (long)i : -1;
		for (long a = e->parent; a >= 0; a = nd[a].parent) {
			if (nd[a].flags & F_EXEC)
				r = a;
			if (nd[a].flags & F_PERDEV)
				pd = a;
		}
		if (r < 0)
			r = (long)i;
		if (pd >= 0 && pd != r) {
			for (size_t j = (size_t)r + 1; j < nn && nd[j].t0 < nd[r].t1; j++)
				if ((nd[j].flags & F_PERDEV) && nd[j].dev != nd[pd].dev) {
					r = pd;
					break;
				}
		}
		nd[r].mark = true;
	}
	for (size_t i = 0; i < nn; i++)
		nd[i].root = nd[i].mark ? (long)i : nd[i].parent >= 0 ? nd[nd[i].parent].root : -1;
	for (size_t i = 0; i < nn; i++)
		if (nd[i].root == (long)i) {
			rc = add_execution_node(s, line, nd, nn, (long)i, err);
			if (rc != XPF_OK)
				goto out;
			nd[i].xid = (long)rt->nexecutions - 1;
		}
	for (size_t q = 0; q < nae; q++) {
		long root = pa_ev[q].node >= 0 ? nd[pa_ev[q].node].root : -1;
		long x = root >= 0 ? nd[root].xid : -1;
		xpf_rt_event *re = &rt->events[pa_ev[q].index];
		re->execution = x >= 0 ? (int32_t)x : -2 - (int32_t)line;
		re->in_build = x >= 0 && pa_ev[q].build >= 0 && nd[pa_ev[q].build].root == root;
	}
	for (size_t q = 0; q < nar; q++) {
		long root = pa_re[q].node >= 0 ? nd[pa_re[q].node].root : -1;
		xpf_rt_retry *r = &rt->retries[pa_re[q].index];
		r->execution = root >= 0 ? nd[root].xid : -1;
		if (!pa_re[q].has_alloc)
			continue;
		/* this line's events are the last read */
		size_t first = nae ? pa_ev[0].index : rt->nevents;
		for (size_t e = rt->nevents; e-- > first;) {
			if (rt->events[e].t_ps == pa_re[q].alloc_t0 && rt->events[e].kind == XPF_RT_ALLOC) {
				r->allocator = xpf_rt_ev_allocator(rt, &rt->events[e]);
				break;
			}
		}
	}
out:
	/* the latest end of the events read (floor is monotonic: the floor of
	 * the latest is the latest floor) */
	if (t1max != INT64_MIN && xpf_rt_floor_ns(t1max) > rt->end_ns)
		rt->end_ns = xpf_rt_floor_ns(t1max);
	free(nd);
	free(st);
	free(pa_ev);
	free(pa_re);
	return rc;
}

/* A line read (rc): its allocator events from index first on go to their
 * allocators' capacity figures. */
static int line_done(struct scan *s, size_t first, int rc)
{
	if (rc != XPF_OK)
		return rc;
	xpf_runtime *rt = s->rt;
	for (size_t i = first; i < rt->nevents && i - first < s->navail; i++) {
		const xpf_rt_event *e = &rt->events[i];
		int a = xpf_rt_ev_allocator(rt, e);
		scan_capacity(&rt->allocators[a], &rt->priv->peak[a], e->t_ps, e->in_use_after,
			      s->avail[i - first]);
	}
	return rc;
}

/* A line whose events are not in the order the stream nests in: its heads
 * (read through the mapping, which stays) sorted into that order, then
 * streamed. */
static int scan_line_sorted(struct scan *s, size_t line, xpf_error *err)
{
	xpf_event_iter it;
	xpf_event_head h;
	int rc;
	s->noh = 0;
	const struct line_base lb = line_base_of(s, line);
	xpf_events_begin(s->p, line, &it);
	while ((rc = xpf_events_next_head(&it, &h, err)) == 1) {
		struct order_head *o = XPF_VEC_PUSH(s->oh, s->noh, s->capoh);
		o->h = h;
		head_times(s, &lb, &h, &o->t0, &o->t1);
	}
	if (rc < 0)
		return err->code;
	if (s->noh)
		xpf_qsort(s->oh, s->noh, sizeof *s->oh, order_cmp);
	return scan_line_stream(s, line, s->oh, s->noh, err);
}

static int scan_line(struct scan *s, size_t line, xpf_error *err)
{
	size_t nevents = s->rt->nevents, nretries = s->rt->nretries;
	s->line_t0[line] = INT64_MAX;
	s->line_t1[line] = INT64_MIN;
	s->navail = 0;
	int rc = scan_line_stream(s, line, NULL, 0, err);
	if (rc != SCAN_UNORDERED)
		return line_done(s, nevents, rc);
	/* Drop what the stream read of the line before it found it out of
	 * order (no execution is made before the end) and sort it instead;
	 * allocators it found are found again. */
	s->rt->nevents = nevents;
	s->rt->nretries = nretries;
	s->line_t0[line] = INT64_MAX;
	s->line_t1[line] = INT64_MIN;
	s->navail = 0;
	return line_done(s, nevents, scan_line_sorted(s, line, err));
}

/* ---- device planes ---------------------------------------------------- */

static bool id_in(int64_t id, const int64_t *ids, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (ids[i] == id)
			return true;
	return false;
}

static long module_by_program_id(xpf_host *h, uint64_t pid)
{
	for (size_t m = 0; m < h->nmodules; m++)
		if (xpf_capture_module(h->cap, m)->program_id == pid)
			return (long)m;
	return -1;
}

static long module_by_hlo_name(xpf_host *h, const struct xpf_rt_priv *pv, xpf_str name)
{
	long found = -1;
	for (size_t m = 0; m < h->nmodules; m++) {
		const char *full = xpf_capture_module(h->cap, m)->name;
		if (xpf_str_eq(name, full) || xpf_str_eq(name, pv->base[m])) {
			if (found >= 0)
				return -1;
			found = (long)m;
		}
	}
	return found;
}

static int kpair_cmp(const void *a, const void *b)
{
	const struct xpf_rt_kpair *x = a, *y = b;
	if (x->module != y->module)
		return x->module < y->module ? -1 : 1;
	return x->bucket < y->bucket ? -1 : x->bucket > y->bucket;
}

/* Index of the last time <= t, or -1. */
static long bucket_of(const struct xpf_rt_priv *pv, int64_t t)
{
	size_t lo = 0, hi = pv->ntimes;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (pv->times[mid] <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (long)lo - 1;
}

/* Index of the first time >= t (ntimes if none). */
static size_t time_index(const struct xpf_rt_priv *pv, int64_t t)
{
	size_t lo = 0, hi = pv->ntimes;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (pv->times[mid] < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Device dev's kernels, read on this first ask; NULL: no plane, or its
 * read failed (xpf_rt_kernels_error tells). */
static const struct xpf_rt_kdev *kdev_of(struct xpf_rt_priv *pv, int dev)
{
	if (dev < 0 || (size_t)dev >= pv->ndev || pv->kdev[dev].nplanes == 0 ||
	    xpf_rt_kernels_read(pv, (size_t)dev, NULL) != XPF_OK || pv->kdev[dev].first_t == NULL)
		return NULL;
	return &pv->kdev[dev];
}

long xpf_rt_first_kernel_module(struct xpf_rt_priv *pv, int dev, int64_t t)
{
	const struct xpf_rt_kdev *k = kdev_of(pv, dev);
	if (k == NULL)
		return -1;
	size_t b = k->next_mod[time_index(pv, t)];
	return b < pv->ntimes ? k->first_mod[b] : -1;
}

bool xpf_rt_has_kernel(struct xpf_rt_priv *pv, int dev, long module, int64_t from,
		       int64_t to, bool *any_after)
{
	*any_after = false;
	const struct xpf_rt_kdev *k = kdev_of(pv, dev);
	if (k == NULL)
		return false;
	size_t nb = pv->ntimes, i = time_index(pv, from);
	size_t j = to == INT64_MAX ? nb : time_index(pv, to);
	*any_after = k->any_before[nb] > k->any_before[i];
	if (j <= i)
		return false;
	if (module < 0)
		return k->any_before[j] > k->any_before[i];
	size_t lo = 0, hi = k->npairs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct xpf_rt_kpair *q = &k->pairs[mid];
		if (q->module < module || (q->module == module && q->bucket < i))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < k->npairs && k->pairs[lo].module == module && k->pairs[lo].bucket < j;
}

/* Room for devices 0..d in pv->kdev (before the kernel scans start: they
 * only fill their own device's entry; kdev_ready then readies the reads). */
static void kdev_room(struct xpf_rt_priv *pv, size_t d)
{
	if (d < pv->ndev)
		return;
	size_t nd = d + 1;
	pv->kdev = xpf_realloc_array(pv->kdev, nd, sizeof *pv->kdev);
	memset(pv->kdev + pv->ndev, 0, (nd - pv->ndev) * sizeof *pv->kdev);
	pv->ndev = nd;
}

/* Plane i (ordinal d) is one of device d's. */
static void kdev_add_plane(struct xpf_rt_priv *pv, size_t d, size_t i, bool tpu)
{
	kdev_room(pv, d);
	struct xpf_rt_kdev *k = &pv->kdev[d];
	k->planes = xpf_realloc_array(k->planes, k->nplanes + 1, sizeof *k->planes);
	k->tpu = xpf_realloc_array(k->tpu, k->nplanes + 1, sizeof *k->tpu);
	k->planes[k->nplanes] = i;
	k->tpu[k->nplanes++] = tpu;
}

/* Once pv->kdev stops moving: each device's read. */
static void kdev_ready(struct xpf_rt_priv *pv)
{
	xpf_lazy_init(&pv->times_made);
	pv->devices_ready = true;
	for (size_t d = 0; d < pv->ndev; d++) {
		pv->kdev[d].pv = pv;
		xpf_lazy_init(&pv->kdev[d].read);
	}
}

static void kdev_free(struct xpf_rt_kdev *k)
{
	free(k->first_t);
	free(k->first_mod);
	free(k->any_before);
	free(k->next_mod);
	free(k->pairs);
	free(k->planes);
	free(k->tpu);
	if (k->pv)
		xpf_lazy_release(&k->read, NULL);
}

/* Device d's buckets, empty (by its kernel scan: fresh pages cost, and the
 * scans run side by side). */
static void kdev_init(struct xpf_rt_priv *pv, size_t d)
{
	struct xpf_rt_kdev *k = &pv->kdev[d];
	if (k->first_t)
		return;
	size_t nb = pv->ntimes;
	k->first_t = malloc((nb + 1) * sizeof *k->first_t);
	k->first_mod = malloc((nb + 1) * sizeof *k->first_mod);
	k->any_before = calloc(nb + 1, sizeof *k->any_before);
	k->next_mod = malloc((nb + 1) * sizeof *k->next_mod);
	if (!k->first_t || !k->first_mod || !k->any_before || !k->next_mod)
		abort();
	for (size_t b = 0; b <= nb; b++) {
		k->first_t[b] = INT64_MAX;
		k->first_mod[b] = -1;
	}
}

/* After device d's scans: the prefix counts, next_mod, pairs sorted and
 * unique. */
static void kdev_finish(struct xpf_rt_priv *pv, size_t d)
{
	size_t nb = pv->ntimes;
	struct xpf_rt_kdev *k = &pv->kdev[d];
	if (!k->first_t)
		return;
	/* any_before[b] held "bucket b holds a kernel" */
	size_t run = 0;
	for (size_t b = 0; b <= nb; b++) {
		size_t has = b < nb ? k->any_before[b] : 0;
		k->any_before[b] = run;
		run += has != 0;
	}
	k->next_mod[nb] = nb;
	for (size_t b = nb; b-- > 0;)
		k->next_mod[b] = k->first_mod[b] >= 0 ? b : k->next_mod[b + 1];
	if (k->npairs)
		xpf_qsort(k->pairs, k->npairs, sizeof *k->pairs, kpair_cmp);
	size_t u = 0;
	for (size_t i = 0; i < k->npairs; i++)
		if (u == 0 || kpair_cmp(&k->pairs[u - 1], &k->pairs[i]) != 0)
			k->pairs[u++] = k->pairs[i];
	k->npairs = u;
}

/* One kernel at t of module m (-1: names none we know) on device d. */
static void add_kernel(struct xpf_rt_priv *pv, struct xpf_rt_kdev *k, long *bcache, int64_t t,
		       long m)
{
	long b = *bcache;
	if (!(b >= 0 && pv->times[b] <= t && ((size_t)b + 1 == pv->ntimes || t < pv->times[b + 1])))
		b = *bcache = bucket_of(pv, t);
	if (b < 0) /* before every execution: nothing asks about it */
		return;
	k->any_before[b] = 1;
	if (m < 0)
		return;
	if (t < k->first_t[b]) {
		k->first_t[b] = t;
		k->first_mod[b] = m;
	}
	if (k->npairs && k->pairs[k->npairs - 1].module == m &&
	    k->pairs[k->npairs - 1].bucket == (size_t)b)
		return;
	struct xpf_rt_kpair *q = XPF_VEC_PUSH(k->pairs, k->npairs, k->cappairs);
	q->module = m;
	q->bucket = (size_t)b;
}

/* Device planes: "/device:GPU:<d>" or "/device:TPU:<d>"; false otherwise.
 * A host numbers its devices from 0, each with its own plane, so an ordinal
 * is one of this capture's devices only below its number of planes: the
 * per-device arrays (pv->kdev, want[]) are sized by the ordinals, and a
 * name like "/device:GPU:10000000" in a 1 KB file must not size them (nor
 * "-1", which %u reads as 4294967295).  Such a plane is listed, not read. */
static bool device_plane(const xpf_host *h, size_t i, unsigned *d, bool *tpu)
{
	const char *pn = xpf_capture_plane_head(h->cap, i)->name;
	bool is_tpu = strncmp(pn, "/device:TPU:", 12) == 0;
	*tpu = false;
	if (!is_tpu && strncmp(pn, "/device:GPU:", 12) != 0)
		return false;
	size_t v = 0, np = xpf_capture_nplanes(h->cap);
	const char *q = pn + 12;
	if (*q < '0' || *q > '9')
		return false;
	for (; *q >= '0' && *q <= '9'; q++) {
		v = v * 10 + (size_t)(*q - '0');
		if (v >= np)
			return false;
	}
	*d = (unsigned)v;
	*tpu = is_tpu;
	return true;
}

/* A TPU plane's "XLA Modules" line: one execution per event. */
static int scan_modules_line(struct scan *s, const xpf_plane *p, size_t l, unsigned d,
			     xpf_error *err)
{
	xpf_runtime *rt = s->rt;
	struct xpf_rt_priv *pv = rt->priv;
	xpf_event_iter it;
	xpf_event_head eh;
	xpf_event ev;
	int rc;
	xpf_events_begin(p, l, &it);
	while ((rc = xpf_events_next_head(&it, &eh, err)) == 1) {
		int64_t t0 = rel_ps(p->lines[l].timestamp_ns, s->base, eh.offset_ps);
		xpf_event_of_head(p, l, &eh, &ev);
		size_t xi = new_execution(s, UINT32_MAX, p->lines[l].id, ev.name, (int)d, t0,
					  t0 + (ev.duration_ps > 0 ? ev.duration_ps : 0), NULL);
		xpf_rt_execution *x = &rt->executions[xi];
		x->host_name = ev.name;
		x->launched = XPF_LAUNCHED_YES;   /* the device ran it */
		pv->xb[xi].thunk = true;
		xpf_stat st;
		int64_t pid;
		if (xpf_event_stat(p, &ev, "program_id", &st, err) == 1 && xpf_stat_i64(&st, &pid))
			pv->xb[xi].program_id = pid;
	}
	return rc < 0 ? err->code : XPF_OK;
}

/* Two stats of a kind other than STR or BYTES that read the same. */
static bool same_number(const xpf_raw_stat *a, const xpf_raw_stat *b)
{
	return a->metadata_id == b->metadata_id && a->kind == b->kind && a->u == b->u &&
	       a->i == b->i && a->dbits == b->dbits;
}

/* The last program_id and hlo_module a kernel named, and their modules. */
struct kernel_cache {
	uint64_t pid;
	long pid_m;               /* -2: none */
	char mod[256];
	size_t mod_n;
	long mod_m;               /* -2: none */
};

/* The module a kernel's program_id (is_pid) or hlo_module stat names (-1:
 * none we know); *any: the stat holds a value of its kind. */
static long kernel_stat_module(xpf_host *h, struct xpf_rt_priv *pv, const xpf_stat *st,
			       bool is_pid, bool *any, struct kernel_cache *kc)
{
	uint64_t u;
	xpf_str t;
	*any = false;
	if (is_pid) {
		if (!xpf_stat_u64(st, &u))
			return -1;
		*any = true;
		if (kc->pid_m == -2 || u != kc->pid) {
			kc->pid = u;
			kc->pid_m = module_by_program_id(h, u);
		}
		return kc->pid_m;
	}
	if (!xpf_stat_text(st, &t))
		return -1;
	*any = true;
	/* kernels repeat their module's name */
	if (kc->mod_m != -2 && t.n == kc->mod_n && memcmp(t.p, kc->mod, t.n) == 0)
		return kc->mod_m;
	long m = module_by_hlo_name(h, pv, t);
	kc->mod_m = -2;
	if (t.n < sizeof kc->mod) {
		memcpy(kc->mod, t.p, t.n);
		kc->mod_n = t.n;
		kc->mod_m = m;
	}
	return m;
}

/* The kernels of device plane p (ordinal d) into its kdev, read through w. */
static int scan_kernels(struct xpf_rt_priv *pv, const xpf_plane *p, unsigned d, bool tpu,
			xpf_window *w, xpf_error *err)
{
	xpf_host *h = pv->host;
	int rc = XPF_OK;
	/* the stats a kernel is read for, by metadata id */
	int64_t ids[64];
	size_t npid = xpf_plane_stat_ids(p, "program_id", ids, 32);
	size_t nmod = xpf_plane_stat_ids(p, "hlo_module", ids + (npid < 32 ? npid : 32), 32);
	bool has_pid = npid > 0, has_mod = nmod > 0;
	bool by_id = npid <= 32 && nmod <= 32;
	size_t nids = by_id ? npid + nmod : 0;
	if (!has_pid && !has_mod)
		return XPF_OK;
	xpf_pick pick;
	xpf_pick_init(&pick, ids, nids);
	struct xpf_rt_kdev *kd = &pv->kdev[d];
	long bcache = -1;
	struct kernel_cache kc = { 0, -2, "", 0, -2 };
	/* the last program_id and hlo_module stats as read, and what they gave:
	 * kernels repeat them, so most are neither looked up nor resolved */
	struct { bool set; xpf_raw_stat raw; bool any; long m; } memo[2] = { { false }, { false } };
	for (size_t l = 0; l < p->nlines && rc >= 0; l++) {
		if (tpu && strcmp(p->lines[l].name, "XLA Modules") == 0)
			continue;
		xpf_event_iter it;
		xpf_event_head eh;
		xpf_event ev;
		xpf_raw_stat raw[8];
		int np = -1;
		xpf_events_begin_window(p, l, &it, w);
		while ((rc = by_id ? xpf_events_next_pick(&it, &eh, &pick, raw, 8, &np, err) :
				     xpf_events_next_head(&it, &eh, err)) == 1) {
			int64_t t0 = rel_ps(p->lines[l].timestamp_ns, pv->time_base, eh.offset_ps);
			xpf_stat_iter sit;
			xpf_stat st;
			long m = -1;
			bool any = false;
			if (np >= 0) { /* the quick reading vouched for the event's bytes */
				for (int k = 0; k < np; k++) {
					/* by id: ids[0..npid) are program_id's, the rest hlo_module's */
					int c = id_in(raw[k].metadata_id, ids, npid) ? 0 : 1;
					if (c == 1 && m >= 0)
						continue;
					bool plain = raw[k].kind != XPF_STAT_STR && raw[k].kind != XPF_STAT_BYTES;
					if (plain && memo[c].set && same_number(&memo[c].raw, &raw[k])) {
						any |= memo[c].any;
						if (memo[c].m >= 0)
							m = memo[c].m;
						continue;
					}
					if (!xpf_stat_resolve(p, &raw[k], &st)) {
						np = -1; /* an unknown id: the iterator words it */
						break;
					}
					bool a = false;
					long mk = kernel_stat_module(h, pv, &st, c == 0, &a, &kc);
					any |= a;
					if (mk >= 0)
						m = mk;
					memo[c].set = plain;
					memo[c].raw = raw[k];
					memo[c].any = a;
					memo[c].m = mk;
				}
			}
			if (np < 0) {
				m = -1;
				any = false;
				xpf_event_of_head(p, l, &eh, &ev);
				xpf_stats_of_event(p, &ev, &sit);
				while ((rc = by_id ? xpf_stats_next_of(&sit, ids, nids, &st, err) :
						     xpf_stats_next(&sit, &st, err)) == 1) {
					bool is_pid = by_id ? id_in(st.metadata_id, ids, npid) :
							      strcmp(st.name, "program_id") == 0;
					if (!is_pid && (m >= 0 || (!by_id && strcmp(st.name, "hlo_module") != 0)))
						continue;
					bool a = false;
					long mk = kernel_stat_module(h, pv, &st, is_pid, &a, &kc);
					any |= a;
					if (mk >= 0)
						m = mk;
				}
				if (rc < 0)
					break;
			}
			if (!any)
				continue;
			add_kernel(pv, kd, &bcache, t0, m);
		}
	}
	return rc < 0 ? err->code : XPF_OK;
}

#define MAX_SCAN_THREADS 8

/* How many threads the scans use: XPF_THREADS (1-8; it also drops the
 * minimum size below which the host lines are read by one thread, for
 * tests), else the online CPUs, at most MAX_SCAN_THREADS; never more than
 * njobs. */
static size_t scan_threads(size_t njobs, bool *forced)
{
	const char *env = getenv("XPF_THREADS");
	long c = env && *env ? strtol(env, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
	if (forced)
		*forced = env && *env;
	size_t n = c > 1 ? (size_t)c : 1;
	if (n > MAX_SCAN_THREADS)
		n = MAX_SCAN_THREADS;
	return n < njobs ? n : njobs;
}

/* Jobs 0..n-1 shared out between nt threads (this one among them), each
 * taking the next from a counter, the largest first (size[k]: job k's
 * bytes), so that a big one is not left for last while the other threads
 * idle (size NULL: in order); fn(ctx, k, w), w a window of the thread's own
 * for reading planes. */
struct job_size {
	uint64_t size;
	size_t k;
};

struct jobs {
	size_t n, next;
	const struct job_size *order;   /* the jobs, largest first */
	pthread_mutex_t mu;
	void (*fn)(void *ctx, size_t k, xpf_window *w);
	void *ctx;
};

static void *jobs_worker(void *arg)
{
	struct jobs *j = arg;
	xpf_window w = { 0 };
	for (;;) {
		pthread_mutex_lock(&j->mu);
		size_t k = j->next++;
		pthread_mutex_unlock(&j->mu);
		if (k >= j->n)
			break;
		j->fn(j->ctx, j->order[k].k, &w);
	}
	xpf_window_release(&w);
	return NULL;
}

static int job_size_cmp(const void *a, const void *b)
{
	const struct job_size *x = a, *y = b;
	if (x->size != y->size)
		return x->size > y->size ? -1 : 1;
	return x->k < y->k ? -1 : x->k > y->k;
}

static void run_jobs(size_t n, const uint64_t *size, size_t nt,
		     void (*fn)(void *ctx, size_t k, xpf_window *w), void *ctx)
{
	struct job_size *order = xpf_realloc_array(NULL, n ? n : 1, sizeof *order);
	for (size_t k = 0; k < n; k++)
		order[k] = (struct job_size){ size ? size[k] : 0, k };
	xpf_qsort(order, n, sizeof *order, job_size_cmp);
	struct jobs j = { n, 0, order, PTHREAD_MUTEX_INITIALIZER, fn, ctx };
	pthread_t tid[MAX_SCAN_THREADS]; /* nt <= MAX_SCAN_THREADS (scan_threads) */
	size_t started = 0;
	for (size_t t = 1; t < nt; t++)
		if (pthread_create(&tid[started], NULL, jobs_worker, &j) == 0)
			started++;
	jobs_worker(&j);
	for (size_t t = 0; t < started; t++)
		pthread_join(tid[t], NULL);
	pthread_mutex_destroy(&j.mu);
	free(order);
}

/* The kernels' buckets (xpf_lazy compute; ctx: the runtime's priv): every
 * execution's start once, in order, from the executions sorted by start
 * (xpf_rt_finish_begin) -- made by the first device's read, as only reads
 * and the queries after them use them. */
static int bucket_times(void *ctx, void **value, xpf_error *err)
{
	(void)err;
	struct xpf_rt_priv *pv = ctx;
	const xpf_runtime *rt = pv->rt;
	size_t n = rt->nexecutions, u = 0;
	int64_t *t = xpf_realloc_array(NULL, n + 1, sizeof *t);
	for (size_t k = 0; k < n; k++) {
		int64_t s = rt->executions[k].start_ps;
		if (u == 0 || t[u - 1] != s)
			t[u++] = s;
	}
	pv->times = t;
	pv->ntimes = u;
	*value = t;
	return XPF_OK;
}

/* Device d's kernels (xpf_lazy compute; ctx: its kdev): its planes in
 * capture order (two planes of one ordinal: their kernels at the same time
 * count as the first's), read through a window of this call's own. */
static int kdev_compute(void *ctx, void **value, xpf_error *err)
{
	struct xpf_rt_kdev *k = ctx;
	struct xpf_rt_priv *pv = k->pv;
	size_t d = (size_t)(k - pv->kdev);
	xpf_window w = { 0 };
	int rc = XPF_OK;
	void *tv;
	(void)xpf_lazy_get(&pv->times_made, bucket_times, pv, &tv, NULL);
	kdev_init(pv, d);
	for (size_t i = 0; i < k->nplanes && rc == XPF_OK; i++) {
		const xpf_plane *p;
		rc = xpf_capture_plane(pv->host->cap, k->planes[i], &p, err);
		if (rc == XPF_OK)
			rc = scan_kernels(pv, p, (unsigned)d, k->tpu[i], &w, err);
		if (rc != XPF_OK)
			k->failed_plane = k->planes[i];
	}
	xpf_window_release(&w);
	if (rc != XPF_OK)
		return rc;
	kdev_finish(pv, d);
	*value = k;
	return XPF_OK;
}

int xpf_rt_kernels_read(struct xpf_rt_priv *pv, size_t d, xpf_error *err)
{
	void *v;
	return xpf_lazy_get(&pv->kdev[d].read, kdev_compute, &pv->kdev[d], &v, err);
}

int xpf_rt_kernels_error(struct xpf_rt_priv *pv, xpf_error *err)
{
	long first = -1;
	for (size_t d = 0; d < pv->ndev; d++) {
		struct xpf_rt_kdev *k = &pv->kdev[d];
		if (k->nplanes && xpf_lazy_state(&k->read) == XPF_LAZY_FAILED &&
		    (first < 0 || k->failed_plane < pv->kdev[first].failed_plane))
			first = (long)d;
	}
	if (first < 0)
		return XPF_OK;
	/* its own message (err may hold one a caller let pass) */
	xpf_error e = { 0 };
	int rc = xpf_rt_kernels_read(pv, (size_t)first, &e);
	if (err)
		*err = e;
	return rc;
}

/* The devices whose kernels the finish will ask about, read side by side
 * before it asks (each on one thread). */
struct dev_jobs {
	struct xpf_rt_priv *pv;
	size_t *dev;
	size_t n;
};

static void dev_job_run(void *ctx, size_t k, xpf_window *w)
{
	(void)w; /* a device's read has a window of its own (it may run on demand) */
	struct dev_jobs *j = ctx;
	xpf_rt_kernels_read(j->pv, j->dev[k], NULL);
}

/* The device planes, in order on one thread: make the TPU executions (their
 * XLA Modules lines), give each device its planes. */
static int devices_prepare(struct scan *s, xpf_error *err)
{
	xpf_host *h = s->h;
	struct xpf_rt_priv *pv = s->rt->priv;
	size_t np = xpf_capture_nplanes(h->cap);
	pv->host = h;
	pv->time_base = s->base;
	for (size_t i = 0; i < np; i++) {
		unsigned d;
		bool tpu;
		if (!device_plane(h, i, &d, &tpu))
			continue;
		const xpf_plane *p;
		int rc = tpu ? xpf_capture_plane(h->cap, i, &p, err) : XPF_OK;
		for (size_t l = 0; rc == XPF_OK && tpu && l < p->nlines; l++)
			if (strcmp(p->lines[l].name, "XLA Modules") == 0)
				rc = scan_modules_line(s, p, l, d, err);
		if (rc != XPF_OK)
			return rc;
		kdev_add_plane(pv, d, i, tpu);
	}
	kdev_ready(pv);
	return XPF_OK;
}

/* Read the kernels of the devices in want (want[d], d < pv->ndev) on as
 * many threads, the largest first; what fails is told by
 * xpf_rt_kernels_error. */
static void devices_run(struct xpf_rt_priv *pv, const bool *want)
{
	struct dev_jobs j = { pv, xpf_realloc_array(NULL, pv->ndev ? pv->ndev : 1, sizeof *j.dev), 0 };
	uint64_t *size = xpf_realloc_array(NULL, pv->ndev ? pv->ndev : 1, sizeof *size);
	for (size_t d = 0; d < pv->ndev; d++) {
		if (!want[d] || pv->kdev[d].nplanes == 0)
			continue;
		size[j.n] = 0;
		for (size_t i = 0; i < pv->kdev[d].nplanes; i++)
			size[j.n] += xpf_capture_plane_head(pv->host->cap, pv->kdev[d].planes[i])->length;
		j.dev[j.n++] = d;
	}
	if (j.n)
		run_jobs(j.n, size, scan_threads(j.n, NULL), dev_job_run, &j);
	free(size);
	free(j.dev);
}

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

/* The events sorted; the permutation's room is returned (*room_len bytes,
 * 0: malloc'd; NULL when there are no events): its pages are warm, and the
 * replay lays the live index in it (replay). */
static uint32_t *sort_events(xpf_rt_event *ev, size_t n, size_t *room_len)
{
	*room_len = 0;
	if (n == 0) /* nothing to sort (and no 2 MiB to map for it) */
		return NULL;
	uint32_t *perm = xpf_big_calloc(n, sizeof *perm, room_len);
	xpf_runs_merge(n, event_before, ev, perm);
	struct event_moves m = { ev, n, { 0 } };
	xpf_perm_apply(n, perm, event_move, &m);
	return perm;
}

static int alloc_name_cmp(const void *a, const void *b)
{
	return natural_cmp(((const xpf_rt_allocator *)a)->name, ((const xpf_rt_allocator *)b)->name);
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

/* The live index laid out in room (room_len bytes, 0: malloc'd; NULL:
 * none), which holds as many places as there are events: each
 * allocator's events counted first, so that its list is written in place,
 * on pages the sort's permutation already touched (lists grown by realloc
 * and copied together after cost ~7 MiB of fresh 4 KiB pages on the
 * bench's 1 GiB capture, bench/README).  xpf_rt_finish_events reads it as
 * each allocator's events in time order. */
static void live_index_begin(xpf_runtime *rt, struct live_index *li, uint32_t *room,
			     size_t room_len)
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
	li->ev = room ? room : xpf_malloc(sizeof *li->ev);
	pv->live_ev_map_len = room ? room_len : 0;
	li->blk_end = xpf_realloc_array(NULL, li->blk_beg[na] + 1, sizeof *li->blk_end);
	for (size_t b = 0; b < li->blk_beg[na]; b++)
		li->blk_end[b] = INT64_MIN;
}

/* The index kept (its lists fill the room: one place an event). */
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
 * sized by the events would touch tens of MiB of fresh pages); a value is
 * the allocation's event index, its place in its allocator's live list
 * above bit 32. */
static void replay(xpf_runtime *rt, const uint64_t *peak_avail, uint32_t *room, size_t room_len)
{
	xpf_map m;
	xpf_map_init(&m, 1024);
	struct live_index li;
	live_index_begin(rt, &li, room, room_len);
	for (size_t i = 0; i < rt->nevents; i++) {
		xpf_rt_event *e = &rt->events[i];
		int al = xpf_rt_ev_allocator(rt, e);
		xpf_rt_allocator *a = &rt->allocators[al];
		uint64_t bytes = xpf_rt_ev_bytes(rt, e);
		if (a->nevents == 0) {
			a->first_in_use_bytes = e->kind == XPF_RT_ALLOC ?
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
			int64_t old = xpf_map_put(&m, e->addr, (uint64_t)al,
						  (int64_t)(place << 32 | i));
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
					e->site = site_of(rt, &w);
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
		rt->allocators[al].seen_live_at_end_bytes += xpf_rt_ev_bytes(rt, &rt->events[v & 0xffffffff]);
		rt->allocators[al].seen_live_at_end_blocks++;
	}
	xpf_map_free(&m);
	live_index_end(rt->priv, &li);
}

/* ---- the host lines, shared out between threads ------------------------- */

/* The host lines are cut into chunks of about the same bytes, which the
 * threads take in turn, so that a thread whose fresh pages come slower
 * takes fewer: two fixed halves left one thread alone
 * for up to a third of the scan.  The first thread takes chunks from the
 * front and reads them straight into the main runtime; the others take
 * them from the back into runtimes of their own, appended to the main one
 * in line order at the end (about half the records copied, as with two
 * halves), so that every array is what one pass over all lines makes. */
struct host_chunk {
	size_t from, to;                   /* its lines */
	size_t thread;                     /* who read it (0: into the main runtime) */
	size_t ev0, ev1, x0, x1, r0, r1;   /* its records in that thread's arrays */
	size_t nalloc;                     /* the thread's allocators when it ended */
	struct xpf_rt_scan_peak *peak;     /* its own in-window peaks, per allocator */
	int rc;
	xpf_error err;
};

struct host_thread {
	struct scan s;                     /* thread 0: the main scan's copy, unused */
	xpf_runtime rt;
	struct xpf_rt_priv pv;
	int *amap;            /* its allocators' indexes in the main runtime (-1: not yet) */
	uint32_t *smap;       /* its sites' indexes in the main runtime (UINT32_MAX: not yet) */
};

struct host_work {
	struct scan *main;
	struct host_chunk *ch;
	size_t lo, hi;        /* the chunks not taken yet: [lo, hi) */
	pthread_mutex_t mu;
	struct host_thread *th;
	/* XPF_THREADS set (tests): the first thread takes its first chunk
	 * once each other thread started has taken one (or found none), so
	 * that chunks are read by other threads even on a small capture and
	 * a loaded machine, where the first thread could read them all
	 * before the others run: what tests/ compare is then the merge */
	pthread_cond_t took;
	size_t nstarted, ntook;
	bool wait;
};

struct host_worker_arg {
	struct host_work *w;
	size_t t;
};

static int scan_lines(struct scan *s, size_t from, size_t to, xpf_error *err)
{
	for (size_t l = from; l < to; l++) {
		int rc = scan_line(s, l, err);
		if (rc != XPF_OK)
			return rc;
	}
	return XPF_OK;
}

static void *host_worker(void *arg)
{
	struct host_worker_arg *wa = arg;
	struct host_work *w = wa->w;
	struct host_thread *th = &w->th[wa->t];
	for (bool first = true;; first = false) {
		pthread_mutex_lock(&w->mu);
		while (first && wa->t == 0 && w->wait && w->ntook < w->nstarted)
			pthread_cond_wait(&w->took, &w->mu);
		bool got = w->lo < w->hi;
		size_t k = 0;
		if (got)
			k = wa->t == 0 ? w->lo++ : --w->hi;
		if (first && wa->t != 0) {
			w->ntook++;
			pthread_cond_signal(&w->took);
		}
		pthread_mutex_unlock(&w->mu);
		if (!got)
			break;
		struct host_chunk *c = &w->ch[k];
		c->thread = wa->t;
		if (wa->t == 0) {
			c->rc = scan_lines(w->main, c->from, c->to, &c->err);
			continue;
		}
		c->ev0 = th->rt.nevents;
		c->x0 = th->rt.nexecutions;
		c->r0 = th->rt.nretries;
		for (size_t a = 0; a < th->rt.nallocators; a++)
			th->pv.peak[a].set = false; /* the chunk's own peaks */
		c->rc = scan_lines(&th->s, c->from, c->to, &c->err);
		c->ev1 = th->rt.nevents;
		c->x1 = th->rt.nexecutions;
		c->r1 = th->rt.nretries;
		c->nalloc = th->rt.nallocators;
		c->peak = xpf_realloc_array(NULL, c->nalloc ? c->nalloc : 1, sizeof *c->peak);
		if (c->nalloc)
			memcpy(c->peak, th->pv.peak, c->nalloc * sizeof *c->peak);
	}
	return NULL;
}
/* n bytes at byte off of room or array *src (*map_len bytes; 0: an array)
 * to dst.  A room is copied out from the top down (a thread's chunks lie in
 * it in the reverse of line order): its whole 2 MiB steps from off up, all
 * copied now, are given back (*map_len shrinks to what is left, *src NULL
 * once nothing is), so that their pages back the next copies; xpf_big_free
 * frees the rest. */
static void room_copy_down(void *dst, void **src, size_t off, size_t n, size_t *map_len)
{
	const size_t step = (size_t)2 << 20;
	uint8_t *base = *src;
	if (n)
		memcpy(dst, base + off, n);
	if (!*map_len)
		return;
	size_t from = (off + step - 1) / step * step;
	if (from < *map_len) {
		munmap(base + from, *map_len - from);
		*map_len = from;
		if (from == 0)
			*src = NULL;
	}
}

/* Chunk c (read by thread th, not the first) appended to the main runtime
 * of s: false when that would hold more than XPF_RT_MAX_ALLOCATORS (the
 * runtime is then given up). */
static bool chunk_merge(struct scan *s, struct host_thread *th, const struct host_chunk *c)
{
	xpf_runtime *rt = s->rt, *br = &th->rt;
	struct xpf_rt_priv *pv = rt->priv, *bv = &th->pv;
	long xoff = (long)rt->nexecutions - (long)c->x0;
	size_t nx = rt->nexecutions + (c->x1 - c->x0);
	exec_reserve(s, nx); /* within the main rooms, which bound every host event */
	room_copy_down(rt->executions + rt->nexecutions, (void **)&br->executions,
		       c->x0 * sizeof *br->executions, (c->x1 - c->x0) * sizeof *br->executions,
		       &bv->exec_map_len);
	room_copy_down(pv->xb + rt->nexecutions, (void **)&bv->xb, c->x0 * sizeof *bv->xb,
		       (c->x1 - c->x0) * sizeof *bv->xb, &bv->xb_map_len);
	rt->nexecutions = nx;
	size_t e0 = rt->nevents, ne = rt->nevents + (c->ev1 - c->ev0);
	events_reserve(s, ne);
	room_copy_down(rt->events + e0, (void **)&br->events, c->ev0 * sizeof *br->events,
		       (c->ev1 - c->ev0) * sizeof *br->events, &bv->events_map_len);
	for (size_t k = e0; k < ne; k++) {
		xpf_rt_event *e = &rt->events[k];
		/* its site, its shape kept by the main scan's set and its
		 * allocator the main runtime's: one the main runtime has not met
		 * yet is met here, in line order, as one pass would meet it (the
		 * thread met its chunks back to front; an allocator's first event
		 * is the first of one of its sites) */
		uint32_t *sm = &th->smap[e->site];
		if (*sm == UINT32_MAX) {
			xpf_rt_site w = br->sites[e->site];
			int *m = &th->amap[w.allocator];
			if (*m < 0)
				*m = find_allocator(rt, &s->cap_alloc, br->allocators[w.allocator].name,
						    br->allocators[w.allocator].keyed_by_index);
			if (*m < 0)
				return false;
			w.allocator = (int16_t)*m; /* below XPF_RT_MAX_ALLOCATORS */
			if (w.shape)
				w.shape = intern(s, w.shape, strlen(w.shape));
			*sm = site_of(rt, &w);
		}
		e->site = *sm;
		if (e->execution >= 0)
			e->execution += (int32_t)xoff;
	}
	rt->nevents = ne;
	/* its peaks (an allocator with one has an event here) */
	for (size_t a = 0; a < c->nalloc; a++)
		if (c->peak[a].set && th->amap[a] >= 0)
			peak_take(&pv->peak[th->amap[a]], c->peak[a].in_use, c->peak[a].t_ps,
				  c->peak[a].available);
	if (c->r1 > c->r0) {
		size_t nr = rt->nretries + (c->r1 - c->r0);
		rt->retries = xpf_realloc_array(rt->retries, nr, sizeof *rt->retries);
		for (size_t i = c->r0; i < c->r1; i++) {
			xpf_rt_retry *r = &rt->retries[rt->nretries++];
			*r = br->retries[i];
			if (r->allocator >= 0)
				r->allocator = th->amap[r->allocator];
			if (r->execution >= 0)
				r->execution += xoff;
		}
		s->cap_retry = nr;
	}
	return true;
}

/* After the merge: what thread th (not the first) found about its
 * allocators as a whole, then its arrays given back. */
static void thread_done(struct scan *s, struct host_thread *th)
{
	xpf_runtime *rt = s->rt, *br = &th->rt;
	struct xpf_rt_priv *pv = rt->priv, *bv = &th->pv;
	for (size_t a = 0; a < br->nallocators; a++) {
		if (th->amap[a] < 0)
			continue;
		xpf_rt_allocator *m = &rt->allocators[th->amap[a]], *ba = &br->allocators[a];
		if (ba->lifetime_peak_bytes > m->lifetime_peak_bytes)
			m->lifetime_peak_bytes = ba->lifetime_peak_bytes;
		if (ba->capacity_lo_bytes < m->capacity_lo_bytes)
			m->capacity_lo_bytes = ba->capacity_lo_bytes;
		if (ba->capacity_hi_bytes > m->capacity_hi_bytes)
			m->capacity_hi_bytes = ba->capacity_hi_bytes;
	}
	for (size_t a = 0; a < br->nallocators; a++)
		free(br->allocators[a].name);
	free(br->allocators);
	free(br->sites);
	xpf_map_free(&bv->site_map);
	free(th->smap);
	free(bv->peak);
	rt->keyed_by_index |= br->keyed_by_index;
	if (br->end_ns > rt->end_ns)
		rt->end_ns = br->end_ns;
	/* what is left of the rooms (or the arrays) */
	xpf_big_free(br->events, bv->events_map_len);
	xpf_big_free(br->executions, bv->exec_map_len);
	xpf_big_free(bv->xb, bv->xb_map_len);
	free(br->retries);
	free(th->s.oh);
	keep_interns(pv, &th->s.interned);
	free(th->s.kbuf);
	free(th->s.avail);
	xpf_window_release(&th->s.win);
	free(th->amap);
}

/* Scan every host line, on up to as many threads as CPUs. */
static int scan_host(struct scan *s, size_t *nchunks_read, size_t *nby_others, xpf_error *err)
{
	const xpf_plane *p = s->p;
	/* classify every metadata now: the threads only read the table */
	for (size_t k = 0; k < p->n_event_md; k++)
		md_class(s, k, p->event_md[k].name);
	bool forced;
	size_t nt = scan_threads(p->nlines, &forced);
	uint64_t total = 0;
	for (size_t l = 0; l < p->nlines; l++)
		total += p->lines[l].length;
	*nchunks_read = 1;
	*nby_others = 0;
	if (nt < 2 || (!forced && total < ((uint64_t)8 << 20)))
		return scan_lines(s, 0, p->nlines, err);
	size_t nchunks = nt * 8 < p->nlines ? nt * 8 : p->nlines;
	struct host_chunk *ch = xpf_calloc(nchunks, sizeof *ch);
	size_t l = 0;
	uint64_t acc = 0;
	*nchunks_read = 0;
	for (size_t k = 0; k < nchunks; k++) {
		ch[k].from = l;
		uint64_t goal = total / nchunks * (k + 1);
		while (l < p->nlines && (k + 1 == nchunks || acc < goal))
			acc += p->lines[l++].length;
		ch[k].to = l;
		*nchunks_read += ch[k].to > ch[k].from;
	}
	struct host_thread *th = xpf_calloc(nt, sizeof *th);
	for (size_t t = 1; t < nt; t++) {
		struct host_thread *b = &th[t];
		b->s = *s;
		xpf_pick_init(&b->s.alloc_pick, b->s.alloc_ids, b->s.nalloc_ids);
		b->s.rt = &b->rt;
		b->rt.priv = &b->pv;
		b->pv.nmodules = s->rt->priv->nmodules;
		b->pv.base = s->rt->priv->base;
		b->pv.module_names = s->rt->priv->module_names;
		b->s.cap_alloc = b->s.cap_events = b->s.cap_exec = b->s.cap_retry = 0;
		/* rooms that bound every host event: a thread may take any chunk */
		events_room(&b->s, p->nevents);
		exec_rooms(&b->s, p->nevents);
		b->s.oh = NULL;
		b->s.noh = b->s.capoh = 0;
		memset(&b->s.win, 0, sizeof b->s.win);
		b->s.last_alloc = -1;
		b->s.interned = NULL;
		b->s.kbuf = NULL;
		b->s.kbuf_n = b->s.kbuf_cap = 0;
		b->s.avail = NULL;
		b->s.navail = b->s.capavail = 0;
	}
	struct host_work w = { s, ch, 0, nchunks, PTHREAD_MUTEX_INITIALIZER, th,
			       PTHREAD_COND_INITIALIZER, 0, 0, forced };
	struct host_worker_arg wa[MAX_SCAN_THREADS]; /* nt <= MAX_SCAN_THREADS (scan_threads) */
	pthread_t tid[MAX_SCAN_THREADS];
	bool started[MAX_SCAN_THREADS] = { false };
	for (size_t t = 0; t < nt; t++)
		wa[t] = (struct host_worker_arg){ &w, t };
	for (size_t t = 1; t < nt; t++) {
		started[t] = pthread_create(&tid[t], NULL, host_worker, &wa[t]) == 0;
		w.nstarted += started[t]; /* read by this thread only */
	}
	host_worker(&wa[0]);
	for (size_t t = 1; t < nt; t++)
		if (started[t])
			pthread_join(tid[t], NULL);
	pthread_mutex_destroy(&w.mu);
	pthread_cond_destroy(&w.took);
	for (size_t t = 1; t < nt; t++) {
		th[t].amap = xpf_realloc_array(NULL, th[t].rt.nallocators ? th[t].rt.nallocators : 1,
					       sizeof *th[t].amap);
		for (size_t a = 0; a < th[t].rt.nallocators; a++)
			th[t].amap[a] = -1;
		th[t].smap = xpf_realloc_array(NULL, th[t].rt.nsites ? th[t].rt.nsites : 1,
					       sizeof *th[t].smap);
		for (size_t r = 0; r < th[t].rt.nsites; r++)
			th[t].smap[r] = UINT32_MAX;
	}
	for (size_t k = 0; k < nchunks; k++)
		*nby_others += ch[k].thread != 0 && ch[k].to > ch[k].from;
	/* The first thread's chunks are the first ones, in place already; the
	 * others merged in line order up to the first error met in line order
	 * (a chunk's own, or more allocators than a runtime holds, which each
	 * thread alone may not have met). */
	int rc = XPF_OK;
	for (size_t k = 0; k < nchunks; k++) {
		if (rc == XPF_OK && ch[k].rc != XPF_OK) {
			*err = ch[k].err;
			rc = ch[k].rc;
		}
		if (rc == XPF_OK && ch[k].thread != 0 && !chunk_merge(s, &th[ch[k].thread], &ch[k]))
			rc = too_many_allocators(s, err);
		free(ch[k].peak);
	}
	for (size_t t = 1; t < nt; t++)
		thread_done(s, &th[t]);
	free(th);
	free(ch);
	return rc;
}

/* Sort the events in time order (keeping each line's order), the
 * allocators by name, and replay them: matches and allocator figures. */
static void order_and_replay(xpf_runtime *rt)
{
	rt->has_events = rt->nevents > 0;
	/* Sort events in time order, keeping each line's order; remember the
	 * allocator order so indexes can be remapped after sorting by name. */
	size_t room_len;
	uint32_t *room = sort_events(rt->events, rt->nevents, &room_len);
	int *remap = xpf_realloc_array(NULL, rt->nallocators + 1, sizeof *remap);
	for (size_t a = 0; a < rt->nallocators; a++)
		rt->allocators[a].nevents = a; /* old index, temporarily */
	if (rt->nallocators)
		xpf_qsort(rt->allocators, rt->nallocators, sizeof *rt->allocators, alloc_name_cmp);
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
		site_map_add(rt, (uint32_t)i);
	}
	for (size_t i = 0; i < rt->nretries; i++)
		if (rt->retries[i].allocator >= 0)
			rt->retries[i].allocator = remap[rt->retries[i].allocator];
	free(remap);
	replay(rt, peak_avail, room, room_len);
	free(peak_avail);
}

/* Beside the kernel scans: the events ordered and replayed, then what the
 * executions need of them. */
struct order_job {
	xpf_runtime *rt;
	struct xpf_rt_finish *fin;
};

static void *order_worker(void *arg)
{
	struct order_job *o = arg;
	order_and_replay(o->rt);
	xpf_rt_finish_events(o->rt, o->fin);
	return NULL;
}

/* The executions sorted (xpf_rt_finish_begin) while the events are, and
 * the pages of their event lists faulted in. */
static void *begin_worker(void *arg)
{
	struct order_job *o = arg;
	xpf_rt_finish_begin(o->rt, o->fin);
	xpf_rt_finish_warm(o->fin, o->rt);
	return NULL;
}

/* Whether the build reads plane i's lines before the finish: /host:CPU's
 * and a TPU plane's (its XLA Modules line); a GPU plane's only when its
 * kernels are read (kdev_compute), any other plane's never. */
static bool lines_read(const xpf_host *h, size_t i)
{
	unsigned d;
	bool tpu;
	return strcmp(xpf_capture_plane_head(h->cap, i)->name, "/host:CPU") == 0 ||
	       (device_plane(h, i, &d, &tpu) && tpu);
}

static void index_job_run(void *ctx, size_t k, xpf_window *w)
{
	xpf_host *h = ctx;
	const xpf_plane *p;
	(void)w;
	if (lines_read(h, k))
		(void)xpf_capture_plane(h->cap, k, &p, NULL);
	else /* for the time base (and the devices' stats) */
		(void)xpf_capture_plane_meta(h->cap, k, &p, NULL);
}

/* Every plane indexed (the lines kept of those the build reads, see
 * lines_read; the time base needs every plane's), on as many threads as
 * there are CPUs.  Errors stay with the planes and are met again, in plane
 * order, by whoever asks next. */
static void index_planes(xpf_host *h)
{
	size_t n = xpf_capture_nplanes(h->cap);
	uint64_t *size = xpf_realloc_array(NULL, n ? n : 1, sizeof *size);
	for (size_t k = 0; k < n; k++)
		size[k] = xpf_capture_plane_head(h->cap, k)->length;
	run_jobs(n, size, scan_threads(n, NULL), index_job_run, h);
	free(size);
}

/* XPF_PHASES=1 prints when each phase of the build ends (seconds since it
 * began) on stderr: how bench/README.md's "Where the time goes" is read. */
struct phases {
	bool on;
	struct timespec t0;
};

static void phase(const struct phases *ph, const char *what)
{
	if (!ph->on)
		return;
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	long anon_kb = -1;
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "RssAnon: %ld", &anon_kb) == 1)
			break;
	if (f)
		fclose(f);
	long huge_kb = -1;
	f = fopen("/proc/self/smaps_rollup", "r");
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "AnonHugePages: %ld", &huge_kb) == 1)
			break;
	if (f)
		fclose(f);
	fprintf(stderr, "xplanefs: runtime phase %-8s %.3f s, RssAnon %ld MiB (%ld on huge pages)\n",
		what, (double)(t.tv_sec - ph->t0.tv_sec) + (double)(t.tv_nsec - ph->t0.tv_nsec) * 1e-9,
		anon_kb / 1024, huge_kb / 1024);
}

/* Every execution is made from one event: of /host:CPU, or of a TPU
 * plane's XLA Modules line.  (Planes that fail to index count nothing:
 * their scan fails.) */
static size_t exec_bound(const xpf_host *h)
{
	size_t n = 0;
	for (size_t i = 0; i < xpf_capture_nplanes(h->cap); i++) {
		unsigned d;
		bool tpu;
		const xpf_plane *p;
		if ((strcmp(xpf_capture_plane_head(h->cap, i)->name, "/host:CPU") == 0 ||
		     (device_plane(h, i, &d, &tpu) && tpu)) &&
		    xpf_capture_plane(h->cap, i, &p, NULL) == XPF_OK)
			n += p->nevents;
	}
	return n;
}

static int build(xpf_host *h, xpf_runtime *rt, xpf_error *err)
{
	const char *pv_env = getenv("XPF_PHASES");
	struct phases ph = { pv_env && *pv_env && strcmp(pv_env, "0") != 0, { 0, 0 } };
	clock_gettime(CLOCK_MONOTONIC, &ph.t0);
	struct scan s;
	memset(&s, 0, sizeof s);
	s.h = h;
	s.rt = rt;
	s.last_alloc = -1;
	index_planes(h);
	phase(&ph, "index");
	int rc = xpf_capture_time_base(h->cap, &s.base, err);
	if (rc != XPF_OK)
		return rc;
	struct xpf_rt_priv *pv = rt->priv;
	exec_rooms(&s, exec_bound(h));
	pv->nmodules = h->nmodules;
	pv->base = calloc(h->nmodules ? h->nmodules : 1, sizeof *pv->base);
	pv->module_names = calloc(h->nmodules ? h->nmodules : 1, sizeof *pv->module_names);
	if (!pv->base || !pv->module_names)
		abort();
	for (size_t m = 0; m < h->nmodules; m++) {
		const char *n = xpf_capture_module(h->cap, m)->name;
		size_t len = strlen(n);
		pv->module_names[m] = n;
		if (len > 2 && n[len - 1] == ')') {
			size_t k = len - 1;
			while (k > 0 && n[k - 1] >= '0' && n[k - 1] <= '9')
				k--;
			if (k > 1 && k < len - 1 && n[k - 1] == '(')
				len = k - 1;
		}
		pv->base[m] = strndup(n, len);
		if (!pv->base[m])
			abort();
	}

	long pi = xpf_capture_find_plane(h->cap, "/host:CPU");
	if (pi >= 0) {
		rt->has_host_plane = true;
		rc = xpf_capture_plane(h->cap, (size_t)pi, &s.p, err);
		if (rc != XPF_OK)
			goto out;
		rt->host_plane = s.p;
		/* an event without an execution keeps its line in `execution`
		 * (-2 - line): in 32 bits */
		if (s.p->nlines > (size_t)INT32_MAX - 1) {
			rc = xpf_fail(err, XPF_EMALFORMED, "%s: /host:CPU has more than %d lines: not supported",
				      xpf_capture_label(h->cap), INT32_MAX - 1);
			goto out;
		}
		size_t nmd = s.p->n_event_md ? s.p->n_event_md : 1;
		s.md_flags = malloc(nmd * sizeof *s.md_flags);
		s.md_dev = malloc(nmd * sizeof *s.md_dev);
		if (!s.md_flags || !s.md_dev)
			abort();
		for (size_t k = 0; k < nmd; k++)
			s.md_flags[k] = UINT_MAX;
		alloc_stat_ids(&s);
		pv->nlines = s.p->nlines;
		/* each line's set by its scan (scan_line), on the threads: their
		 * 2.7 MB of fresh 4 KiB pages on the 1 GiB capture were ~11 ms
		 * on one core before the scan when set here */
		pv->line_t0 = xpf_realloc_array(NULL, pv->nlines ? pv->nlines : 1, sizeof *pv->line_t0);
		pv->line_t1 = xpf_realloc_array(NULL, pv->nlines ? pv->nlines : 1, sizeof *pv->line_t1);
		s.line_t0 = pv->line_t0;
		s.line_t1 = pv->line_t1;
		events_room(&s, s.p->nevents);
		size_t nchunks;
		rc = scan_host(&s, &nchunks, &rt->host_chunks_by_others, err);
		phase(&ph, "host");
		if (ph.on)
			fprintf(stderr, "xplanefs: runtime host lines: %zu, read in %zu chunk(s), %zu by other threads; "
				"%zu allocator events at %zu sites, %zu executions\n",
				s.p->nlines, nchunks, rt->host_chunks_by_others, rt->nevents, rt->nsites,
				rt->nexecutions);
		if (rc != XPF_OK)
			goto out;
	}
	/* Every execution made (the TPU ones now).  When the finish will ask
	 * for some devices' kernels: the executions sorted, then side by side
	 * the kernel scans of those devices (they write only the buckets) and
	 * the events' order, replay and what the executions need of them
	 * (events, allocators, retries, executions).  Else the executions'
	 * sort is what goes beside the events' order and replay.
	 * XPF_KERNELS=all reads every device's kernels there, =ask none (each
	 * on the finish's first ask): for tests, the same tree either way. */
	rc = devices_prepare(&s, err);
	if (rc != XPF_OK)
		goto out;
	bool *want = xpf_calloc(pv->ndev ? pv->ndev : 1, sizeof *want);
	const char *kenv = getenv("XPF_KERNELS");
	if (kenv && strcmp(kenv, "all") == 0)
		memset(want, 1, pv->ndev * sizeof *want);
	else if (!(kenv && strcmp(kenv, "ask") == 0))
		xpf_rt_kernels_wanted(h, rt, want); /* (the executions' order does not matter) */
	size_t nwant = 0;
	for (size_t d = 0; d < pv->ndev; d++)
		nwant += want[d] && pv->kdev[d].nplanes;
	size_t threads = scan_threads(2, NULL);
	struct xpf_rt_finish fin;
	struct order_job oj = { rt, &fin };
	pthread_t ot;
	bool ordering = false;
	if (nwant) {
		xpf_rt_finish_begin(rt, &fin);
		fin.threads = threads;
		ordering = threads > 1 && pthread_create(&ot, NULL, order_worker, &oj) == 0;
		if (!ordering)
			order_worker(&oj);
	} else {
		/* no kernels to read first: the executions sorted on the second
		 * core beside the events' order and replay (they share no field) */
		bool two = threads > 1 && pthread_create(&ot, NULL, begin_worker, &oj) == 0;
		order_and_replay(rt);
		if (two)
			pthread_join(ot, NULL);
		else
			xpf_rt_finish_begin(rt, &fin);
		fin.threads = threads;
		xpf_rt_finish_events(rt, &fin);
	}
	devices_run(pv, want);
	free(want);
	phase(&ph, "devices");
	if (ordering)
		pthread_join(ot, NULL);
	xpf_map_free(&pv->site_map); /* the replay made the last site */
	phase(&ph, "order");
	rc = xpf_rt_kernels_error(pv, err);       /* those read beforehand */
	if (rc == XPF_OK)
		rc = xpf_rt_finish_end(h, rt, &fin, err);
	if (rc == XPF_OK)
		rc = xpf_rt_kernels_error(pv, err);   /* and those asked for there */
	xpf_rt_finish_release(&fin);
	phase(&ph, "finish");
	if (ph.on) {
		size_t nread = 0, nplanes = 0;
		for (size_t d = 0; d < pv->ndev; d++) {
			nplanes += pv->kdev[d].nplanes > 0;
			nread += pv->kdev[d].nplanes && xpf_lazy_state(&pv->kdev[d].read) != XPF_LAZY_NOT_YET;
		}
		fprintf(stderr, "xplanefs: runtime kernels of %zu of %zu device(s) read before the finish, %zu more when it asked\n",
			nwant, nplanes, nread - nwant);
	}
out:
	free(s.oh);
	free(s.md_flags);
	free(s.md_dev);
	keep_interns(rt->priv, &s.interned);
	free(s.kbuf);
	free(s.avail);
	xpf_window_release(&s.win);
	return rc;
}

int xpf_runtime_build(xpf_host *h, xpf_runtime **out, xpf_error *err)
{
	xpf_runtime *rt = calloc(1, sizeof *rt);
	if (!rt)
		abort();
	rt->priv = calloc(1, sizeof *rt->priv);
	if (!rt->priv)
		abort();
	rt->priv->rt = rt;
	int rc = build(h, rt, err);
	if (rc != XPF_OK) {
		xpf_runtime_free(rt);
		return rc;
	}
	*out = rt;
	return XPF_OK;
}

void xpf_runtime_free(void *p)
{
	xpf_runtime *rt = p;
	if (rt == NULL)
		return;
	for (size_t a = 0; a < rt->nallocators; a++)
		free(rt->allocators[a].name);
	free(rt->allocators);
	xpf_big_free(rt->events, rt->priv ? rt->priv->events_map_len : 0);
	free(rt->sites);
	xpf_big_free(rt->executions, rt->priv ? rt->priv->exec_map_len : 0);
	free(rt->retries);
	free(rt->candidates);
	struct xpf_rt_priv *pv = rt->priv;
	if (pv) {
		for (size_t d = 0; d < pv->ndev; d++)
			kdev_free(&pv->kdev[d]);
		free(pv->kdev);
		free(pv->times);
		if (pv->devices_ready)
			xpf_lazy_release(&pv->times_made, NULL);
		free(pv->peak);
		xpf_big_free(pv->xb, pv->xb_map_len);
		free(pv->line_t0);
		free(pv->line_t1);
		for (size_t i = 0; i < pv->ninterns; i++)
			xpf_intern_free(pv->interns[i]);
		free(pv->interns);
		xpf_map_free(&pv->site_map);
		xpf_big_free(pv->live_ev, pv->live_ev_map_len);
		free(pv->live_beg);
		free(pv->live_blk_beg);
		free(pv->live_blk_end);
		for (size_t m = 0; m < pv->nmodules; m++)
			free(pv->base[m]);
		free(pv->base);
		free(pv->module_names);
		free(pv);
	}
	free(rt);
}
