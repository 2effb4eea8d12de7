/* Shared between runtime*.c only: the scratch state of building a runtime. */
#ifndef XPF_RUNTIME_PRIV_H
#define XPF_RUNTIME_PRIV_H

#include "analysis/runtime/runtime.h"
#include "common/intern.h"
#include "common/lazy.h"
#include "common/map.h"

/* The kernels of one device plane, for `launched` and the kernels link
 * rule.  Those only ever ask about kernels at or after an execution's start
 * and before another's, so instead of every kernel (millions on a big
 * capture) we keep, per bucket b of the time axis cut at the execution
 * starts (times[b] <= t < times[b + 1], the last bucket open-ended):
 * whether it holds a kernel, its earliest kernel that names a module, and
 * which modules it holds. */
struct xpf_rt_kpair {
	int32_t module;
	uint32_t bucket;
};

struct xpf_rt_kdev {
	int64_t *first_t;           /* [nb] earliest kernel with a module; INT64_MAX: none */
	int32_t *first_mod;         /* [nb] its module (-1: none) */
	uint32_t *any_before;       /* [nb + 1] how many buckets before b hold a kernel */
	uint32_t *next_mod;         /* [nb + 1] first bucket >= b with first_mod >= 0, else nb */
	struct xpf_rt_kpair *pairs; /* (module >= 0, bucket) present, sorted, unique */
	size_t npairs, cappairs;
	/* Its planes (capture plane indexes, in order; usually one), read
	 * into the fields above on the first ask (xpf_rt_kernels_read): a
	 * device whose executions never ask is never read. */
	size_t *planes;
	bool *tpu;
	size_t nplanes;
	size_t failed_plane;    /* when reading them failed: which */
	struct xpf_rt_priv *pv; /* back, for the read */
	xpf_lazy read;
};

struct xpf_rt_xbuild {
	int64_t program_id; /* -1: none seen on the host side */
	const char *pjit;   /* "PjitFunction(f)" around it, or NULL */
	bool thunk;         /* a thunk event nested in it */
	bool retried;       /* an AllocatorRetry wait inside it */
};

/* An allocator's in-window peak as the scan meets its events (scan order):
 * bytes_available then, which the events do not keep (capacity_bytes). */
struct xpf_rt_scan_peak {
	uint64_t in_use, available;
	int64_t t_ps;
	bool set;
};

/* An execution's device as it keeps it: an ordinal above 32767 (none real)
 * counts as unknown. */
static inline int16_t xpf_rt_device16(int d) { return d >= 0 && d <= INT16_MAX ? (int16_t)d : -1; }

/* Blocks of an allocator's events that xpf_runtime_live_at skips whole
 * when no allocation of them is live at the time asked
 * (xpf_rt_priv.live_blk_end). */
#define XPF_RT_LIVE_BLOCK 256

/* A long host line cut into pieces at its marks (xpf_line_marks), piece k
 * the XPF_LINE_MARK events from mark k in the order of the file: the
 * earliest start and latest end of its events (as line_t0/line_t1; a piece
 * the scan did not reach: INT64_MAX / INT64_MIN), so that a walk of a time
 * window reads only the pieces that overlap it (xpf_runtime_between). */
struct xpf_rt_pieces {
	size_t n;
	const xpf_event_pos *at; /* piece k starts at at[k] (the plane's marks) */
	int64_t *t0, *t1;
};

struct xpf_rt_priv {
	xpf_rt_options opt; /* what the build was asked (xpf_runtime_build) */
	/* Per allocator, in the order the scan found them (before the sort
	 * by name): its peak as scanned. */
	struct xpf_rt_scan_peak *peak;
	/* Per device (index = ordinal): its kernels, by bucket of times[]. */
	size_t ndev;
	struct xpf_rt_kdev *kdev;
	xpf_host *host;    /* what a device's kernels are read from, */
	int64_t time_base; /* and the time base (the runtime's build) */
	int64_t *times;    /* sorted, unique: every execution start, handed to
				the kernels once the executions are sorted
				(xpf_rt_kernel_times) */
	size_t ntimes;     /* = the number of buckets */
	/* Per execution, what building it needs beside rt->executions (a mapped array
	 * of xb_map_len bytes, see xpf_rt_exec_map, when not 0) */
	struct xpf_rt_xbuild *xb;
	size_t xb_map_len;
	/* Module base names ("jit_f" for "jit_f(12)"), malloc'd. */
	char **base;
	const char **module_names; /* the capture's, not owned */
	/* Per /host:CPU line: the earliest start and latest end of its events
	 * (ps from the base; INT64_MAX / INT64_MIN for a line without events,
	 * INT64_MIN / INT64_MAX when a time was out of range), so that a walk
	 * of a time window skips the lines outside it.  NULL: none. */
	int64_t *line_t0, *line_t1;
	size_t nlines;
	/* Per /host:CPU line with marks, its pieces (NULL: a line without, or
	 * none of the lines): a Python tracer's line holds nearly all of a big
	 * job's host events, and a window of time is a small part of it. */
	struct xpf_rt_pieces **pieces;
	/* rt->events and rt->executions are mapped arrays of this many bytes
	 * (xpf_rt_events_map, xpf_rt_exec_map), not malloc'd, when not 0. */
	size_t events_map_len, exec_map_len;
	/* Allocator a's events (allocations and frees) in time order are
	 * live_ev[live_beg[a] .. live_beg[a + 1]), cut in blocks of
	 * XPF_RT_LIVE_BLOCK; live_blk_end[live_blk_beg[a] + k] is the latest
	 * time an allocation of block k of a is still live (its latest free,
	 * INT64_MAX when one is never freed; INT64_MIN: none), so that
	 * xpf_runtime_live_at skips a block dead before a time.  Made by the
	 * replay (runtime.c), which matches the frees; xpf_rt_finish_events
	 * walks each allocator's events in it. */
	uint32_t *live_ev; /* a mapped array of live_ev_map_len bytes (0: malloc'd) */
	size_t live_ev_map_len;
	size_t *live_beg, *live_blk_beg;
	int64_t *live_blk_end;
	/* The last live sets made at executions' starts (runtime_query.c),
	 * set once the build is done: NULL while the link still numbers the
	 * executions their texts name. */
	struct xpf_rt_live_cache *live_cache;
	/* Sets of interned strings (shapes, module and span names) the events
	 * and executions point into, one a scan (keep_interns). */
	struct xpf_intern **interns;
	size_t ninterns;
	/* rt->sites by a hash of each (site_of; a slot's site is checked) */
	xpf_map site_map;
	size_t cap_sites;
	size_t nmodules;
};

/* runtime_exec.c: the executions finished after the scan, in three steps
 * (runtime.c's build runs the second beside the kernel scans):
 * xpf_rt_finish_begin sorts them (start, device, line) before the events
 * are ordered, or beside their order when no kernels are read first, and
 * allocates their event lists (the kernels' buckets are cut at their
 * starts when a device's kernels are first read); xpf_rt_finish_events,
 * once the events are ordered and replayed, numbers them, lists each
 * one's events, finds their devices, in use at start and the peak during
 * (from the replay's per-allocator lists); xpf_rt_finish_end, after the
 * kernel scans, links them to modules, joins them to the plans, numbers
 * them per module and finds launched.  xpf_rt_finish_release frees what
 * a step left for the next when the build stops early. */
struct xpf_rt_finish {
	uint32_t *inv;            /* old execution index -> new, NULL: unmoved */
	uint32_t *xend, *own;     /* each execution's events: own[xend[x-1] .. xend[x]) */
	size_t xend_len, own_len; /* their xpf_big_calloc lengths */
	size_t maxcnt;            /* the most events of one execution */
	size_t threads;           /* how many xpf_rt_finish_end may use (set by the caller) */
};
void xpf_rt_finish_begin(xpf_runtime *rt, struct xpf_rt_finish *f);
void xpf_rt_finish_events(xpf_runtime *rt, struct xpf_rt_finish *f);
int xpf_rt_finish_end(xpf_host *h, xpf_runtime *rt, struct xpf_rt_finish *f, xpf_error *err);
void xpf_rt_finish_release(struct xpf_rt_finish *f);

/* Device dev's kernels (runtime.c), read on the first ask (the build reads
 * those xpf_rt_kernels_wanted names beforehand, side by side); a failed
 * read answers "none" and is told by xpf_rt_kernels_error. */
/* The module of the first kernel at or after t that names one, or -1. */
long xpf_rt_first_kernel_module(struct xpf_rt_priv *pv, int dev, int64_t t);
/* A kernel in [from, to) of that module (any kernel when module < 0);
 * *any_after: any kernel at all at or after from. */
bool xpf_rt_has_kernel(struct xpf_rt_priv *pv, int dev, long module, int64_t from, int64_t to,
		       bool *any_after);
/* Device d's kernels read now (once), or their error. */
int xpf_rt_kernels_read(struct xpf_rt_priv *pv, size_t d, xpf_error *err);
/* The error of the first plane (in capture order) whose kernels failed to
 * read, or XPF_OK. */
int xpf_rt_kernels_error(struct xpf_rt_priv *pv, xpf_error *err);
/* runtime_exec.c: which devices' kernels the finish may ask about
 * (want[d], d < pv->ndev), from what the executions hold before the
 * finish: those whose launched is not settled by the host (a thunk in it,
 * a TPU module) or whose module the host side does not name; every device
 * for such an execution of no known device yet. */
void xpf_rt_kernels_wanted(xpf_host *h, xpf_runtime *rt, bool *want);

/* ---- the stages' interfaces ------------------------------------------- */

/* Event and execution indexes in the scratch arrays of the order and link
 * stages: 32 bits (a capture holds fewer than 2^32 of either). */
typedef uint32_t idx32;

/* runtime_classify.c: what an event name is (F_* below). */
enum {
	F_ALLOC = 1 << 0,
	F_DEALLOC = 1 << 1,
	F_EXEC = 1 << 2,   /* execute family */
	F_ANCHOR = 1 << 3, /* makes its outermost execute-family ancestor an execution */
	F_PERDEV = 1 << 4, /* "[<i>] ..." */
	F_BUILD = 1 << 5,
	F_RETRY = 1 << 6,
	F_PJIT = 1 << 7,
	F_TRANSFER = 1 << 8,
	F_GPUMOD = 1 << 9,     /* "<module>:XLA GPU module" */
	F_THUNKS = 1 << 10,    /* GpuExecutable::ExecuteThunks */
	F_NOT_THUNK = 1 << 11, /* bookkeeping inside an execution, not a thunk run */
	F_COMPILE = 1 << 12,   /* a compilation (backend_compile..., ...Client::Compile...) */
};

static const char *const transfer_names[] = {
	"DevicePut",
	"DevicePutWithSharding",
	"batched_copy_array_to_devices_with_sharding",
	"H2D Dispatch",
	"device_put",
	"TransferToDevice",
	"TransferLiteralToDevice",
};
static const char *const transfer_parts[] = {
	"BufferFromHost", "LinearizeInto",    "CopyToMemorySpace", "CreateUninitializedBuffer",
	"CopyToDevice",   "TransferToInfeed", "$api.py",           "device_put",
};

/* The kinds of name (F_*) of name; *dev: its "[<i>] " device prefix, or -1. */
unsigned xpf_rt_classify(const char *name, int *dev);
/* The module name an event's own name carries (`<m>:XLA GPU module`,
 * `...Execute (<m>)`; flags: its xpf_rt_classify): a pointer into name and
 * its length, or NULL when the name carries none (runtime_event.c). */
const char *xpf_rt_name_in_event_name(const char *name, unsigned flags, size_t *len);
/* Whether host name n names module m (SPEC §4.3's name rule, runtime_link.c). */
bool xpf_rt_name_names(xpf_host *h, const struct xpf_rt_priv *pv, size_t m, const char *n);
/* The device of a "[<i>] ..." name (*rest: after the prefix), or -1. */
int xpf_rt_perdev_prefix(const char *name, const char **rest);
/* An event of kinds flags under one of parent_flags is a thunk run: what
 * `<module>:XLA GPU module` / ExecuteThunks run once the buffers are
 * allocated (one event per HLO instruction), as opposed to the set-up
 * events that also nest in them.  (Inline: the scan asks for every host
 * event.) */
static inline bool xpf_rt_thunk_of(unsigned parent_flags, unsigned flags)
{
	return (parent_flags & (F_GPUMOD | F_THUNKS)) &&
	       !(flags & (F_GPUMOD | F_THUNKS | F_ALLOC | F_DEALLOC | F_BUILD | F_RETRY | F_EXEC |
			  F_NOT_THUNK));
}

/* Times in ps relative to the base, clamped to +-2^61 so that a hostile
 * capture (line bases and offsets near INT64_MAX/MIN) cannot overflow in
 * the t0 + duration and end arithmetic after. */
#define REL_PS_MAX ((int64_t)1 << 61)
int64_t xpf_rt_rel_ps(int64_t line_ts_ns, int64_t base, int64_t off_ps);

/* An event of an unordered line and its times (ps from the base), to be
 * sorted into the order scan_line_stream nests in. */
struct order_event {
	xpf_event ev;
	int64_t t0, t1;
};

struct scan {
	xpf_host *h;
	xpf_runtime *rt;
	const xpf_plane *p;
	int64_t base;
	size_t cap_alloc, cap_events, cap_exec, cap_retry, cap_compile;
	struct order_event *oh; /* an unordered line's events, sorted */
	size_t noh, capoh;
	/* classify() of each event metadata of p, by index (UINT_MAX: not yet):
	 * names repeat, so each is classified once, not once per event. */
	unsigned *md_flags;
	int *md_dev;
	/* The host lines are read through this (see xpf_window). */
	xpf_window win;
	/* the runtime's line_t0/line_t1 and pieces (shared by the threads:
	 * each writes its own lines) */
	int64_t *line_t0, *line_t1;
	struct xpf_rt_pieces **pieces;
	/* bytes_available of the line's allocator events, in order */
	uint64_t *avail;
	size_t navail, capavail;
	/* A line's scan in progress (runtime_scan.c), kept for the next. */
	struct stream *stream;
	/* The bytes of a line's knode events (scan_line_stream). */
	uint8_t *kbuf;
	size_t kbuf_n, kbuf_cap;
	/* read_alloc's stats on p, each tagged with which it is (AS_*) */
	xpf_stat_want alloc_want;
	/* shapes kept once each (intern) */
	xpf_intern *interned;
	bool tpu_modules;      /* TPU device planes: their XLA Modules lines give the executions */
	int last_alloc;        /* the allocator of the last event read, or -1 */
	size_t last_alloc_len; /* its name's length */
};

/* The allocator-event stats read_alloc reads, in alloc_stat_names order. */

/* runtime_sites.c: allocators and sites. */
int xpf_rt_find_allocator(xpf_runtime *rt, size_t *cap, const char *name, bool by_index);
int xpf_rt_allocator_cmp(const void *a, const void *b);
const char *xpf_rt_intern(struct scan *sc, const char *str, size_t n);
void xpf_rt_keep_interns(struct xpf_rt_priv *pv, xpf_intern **set);
uint32_t xpf_rt_site_of(xpf_runtime *rt, const xpf_rt_site *want);
void xpf_rt_site_map_add(xpf_runtime *rt, uint32_t i);
void xpf_rt_peak_take(struct xpf_rt_scan_peak *pk, uint64_t in_use, int64_t t_ps, uint64_t available);
void xpf_rt_scan_capacity(xpf_rt_allocator *a, struct xpf_rt_scan_peak *pk, int64_t t_ps,
			  uint64_t in_use, uint64_t available);

/* runtime_event.c: one allocator event, one execution. */
void xpf_rt_alloc_stat_ids(struct scan *s);
void xpf_rt_events_map(struct scan *s, size_t n);
void xpf_rt_events_reserve(struct scan *s, size_t n);
void xpf_rt_exec_map(struct scan *s, size_t n);
void xpf_rt_exec_reserve(struct scan *s, size_t n);
int xpf_rt_too_many_allocators(const struct scan *s, xpf_error *err);
int xpf_rt_read_alloc(struct scan *s, const xpf_event *ev, unsigned flags, int64_t t0,
		      uint32_t enclosing, uint32_t transfer, size_t line, xpf_error *err);
size_t xpf_rt_new_execution(struct scan *s, uint32_t line, int64_t thread, const char *name,
			    int dev, int64_t t0, int64_t t1, const char *pjit);
/* What the walk over an execution's subtree has seen so far. */
struct exec_walk {
	const char *name_gpumod, *name_thunks, *name_exec;
	int64_t build_end;
};
void xpf_rt_exec_walk_event(struct scan *s, size_t xi, struct exec_walk *w, const xpf_event *ev,
			    unsigned flags, int dev, int64_t t1, xpf_error *err);
int xpf_rt_exec_walk_end(struct scan *s, size_t xi, const struct exec_walk *w, int last_kind,
			 bool retried, xpf_error *err);

/* xpf_rt_classify() of event metadata k (named name), once per metadata.
 * (Inline: the scan asks for every host event.) */
static inline unsigned xpf_rt_md_class(struct scan *s, size_t k, const char *name)
{
	if (s->md_flags[k] == UINT_MAX)
		s->md_flags[k] = xpf_rt_classify(name, &s->md_dev[k]);
	return s->md_flags[k];
}

/* runtime_scan.c: one host line into events, executions and retries. */
int xpf_rt_scan_line(struct scan *s, size_t line, xpf_error *err);
void xpf_rt_scan_release(struct scan *s);
int xpf_rt_scan_modules_line(struct scan *s, const xpf_plane *p, size_t l, unsigned d,
			     xpf_error *err);

/* runtime_compile.c: the compilations once the executions are linked:
 * autotuner runs folded into the compilation that holds them, each
 * compilation's module, and its figures from the ordered events. */
void xpf_rt_compiles_finish(xpf_host *h, xpf_runtime *rt);
/* The function a compile event's name carries (`...CompileAndLoad(<f>)`,
 * `...Compile(<f>)`): a pointer into name and its length, or NULL. */
const char *xpf_rt_compile_function(const char *name, size_t *len);

/* runtime_parallel.c, the runner: every thread of the build starts here
 * (jobs shared out, two steps side by side, the host lines in chunks);
 * with one thread each runs the same steps in order, with the same
 * result. */
#define MAX_SCAN_THREADS 8
size_t xpf_rt_threads(const xpf_rt_options *opt, size_t njobs);
void xpf_rt_run_jobs(size_t n, const uint64_t *size, size_t nt,
		     void (*fn)(void *ctx, size_t k, xpf_window *w), void *ctx);
/* a(actx) here and b(bctx) on a thread of its own when threads > 1 (and
 * one starts), else a then b; both done on return.  The two must share no
 * field they write. */
void xpf_rt_beside(size_t threads, void (*a)(void *), void *actx, void (*b)(void *), void *bctx);
int xpf_rt_scan_host(struct scan *s, size_t *nchunks_read, size_t *nby_others, xpf_error *err);

/* runtime_query.c: the cache of live sets, made at the end of the build. */
struct xpf_rt_live_cache *xpf_rt_live_cache_new(void);
void xpf_rt_live_cache_free(struct xpf_rt_live_cache *c);

/* runtime_order.c: the events in time order, replayed. */
void xpf_rt_order_and_replay(xpf_runtime *rt);

/* runtime_kernels.c: the device planes. */
bool xpf_rt_device_plane(const xpf_host *h, size_t i, unsigned *d, bool *tpu);
int xpf_rt_devices_prepare(struct scan *s, xpf_error *err);
void xpf_rt_devices_run(struct xpf_rt_priv *pv, const bool *want);
/* The executions' start times (pv->times) that the kernels are bucketed
 * by: once the executions are sorted by start, before any device read. */
void xpf_rt_kernel_times(struct xpf_rt_priv *pv, const xpf_runtime *rt);
void xpf_rt_kdev_free(struct xpf_rt_kdev *k);

#endif
