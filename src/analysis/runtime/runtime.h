/* The runtime: what the allocator really did, execution by execution
 * (SPEC §4.3; reference §6, §7).
 *
 * Computed once per host on first use (xpf_host_runtime) from the
 * `/host:CPU` plane's allocator events (MemoryAllocation /
 * MemoryDeallocation), the execute-family host events around them, and the
 * device planes' kernels (for `launched`).  The result is owned by the host
 * and stays valid, unchanged, until xpf_host_release(); every pointer inside
 * it (names, arrays) lives as long.  Everything is read-only after it is
 * built, so any number of threads may read it.
 *
 * Time: every *_ns is integer nanoseconds relative to the capture's time
 * base (xpf_capture_time_base); *_ps fields are picoseconds relative to the
 * same base, used for ordering (events of different lines are compared only
 * by absolute time).
 *
 * Indexes: allocator, event and execution fields that refer to another
 * element hold its 0-based index in the arrays below, or -1 for "none".
 * Module fields hold an index into the host's modules (xpf_capture_module),
 * or -1. */
#ifndef XPF_RUNTIME_H
#define XPF_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/host.h"

/* One allocator, as named by its events. */
typedef struct xpf_rt_allocator {
	char *name;                    /* "GPU_0_bfc", "xla_gpu_host_bfc", "tpu:0" */
	bool keyed_by_index;           /* TPU style: no allocator_name, named after index_on_host */
	int device;                    /* device ordinal (GPU_<d>_bfc, tpu:<d>), else -1 */
	bool is_pool;                  /* a device allocator: GPU_<d>_bfc or tpu:<d>; host
				  and collective allocators never are */
	uint64_t capacity_bytes;       /* in use + bytes_available, at the in-window peak */
	uint64_t peak_in_window_bytes; /* max over events of in use (allocated + reserved) */
	int64_t peak_ns;               /* when the in-window peak happened (first one) */
	long peak_event;               /* its event index */
	uint64_t lifetime_peak_bytes;  /* max `peak_bytes_in_use` */
	uint64_t allocations, deallocations;
	uint64_t unmatched_deallocations; /* deallocations whose allocation was not seen */
	uint64_t unmatched_deallocated_bytes;
	uint64_t live_at_end_bytes;      /* in use after the allocator's last event */
	uint64_t seen_live_at_end_bytes; /* seen allocations never freed (bytes) */
	uint64_t seen_live_at_end_blocks;
	uint64_t first_in_use_bytes; /* in use before the first event (after it,
					  minus/plus its own bytes) */
	size_t nevents;
	uint64_t capacity_lo_bytes, capacity_hi_bytes; /* min / max over its events of
							  in use + available */
} xpf_rt_allocator;

enum xpf_rt_kind { XPF_RT_ALLOC = 0, XPF_RT_DEALLOC = 1 };

/* What a seen allocation was for (set for allocation events). */
enum xpf_rt_role {
	XPF_RT_ROLE_NONE = 0,   /* outside every execution */
	XPF_RT_ROLE_TEMP,       /* the temp block (or another non-output buffer
				  allocation) of an execution */
	XPF_RT_ROLE_OUTPUT,     /* an output of an execution */
	XPF_RT_ROLE_EXEC_OTHER, /* inside an execution, not matched to the plan */
};

/* One allocator event.  Events are sorted by (time, line, index in line).
 * Millions of them on a long capture: keep it small (indexes are 32-bit:
 * a capture holds fewer than 2^31 events of a kind), 40 bytes. */
typedef struct xpf_rt_event {
	int64_t t_ps; /* its time: see xpf_rt_ev_ns() */
	uint64_t addr;
	uint64_t in_use_after;          /* bytes_allocated + bytes_reserved after the event */
	uint32_t site;                  /* its allocator, size, what it asked for and
				      the host events around it: rt->sites[site]
				      (xpf_rt_ev_allocator, xpf_rt_ev_bytes, ...) */
	int32_t match;                  /* alloc: its deallocation; dealloc: its
				      allocation; -1 if not seen */
	int32_t execution;              /* the execution it happened in, or -1 */
	int32_t buffer_allocation : 27; /* matched BufferAllocationProto index
					   (below XPF_RT_MAX_BUFFER_ALLOCATIONS), or -1 */
	uint32_t kind : 1;              /* enum xpf_rt_kind */
	uint32_t role : 3;              /* enum xpf_rt_role */
	uint32_t in_build : 1;          /* inside that execution's `Build buffer allocations` */
} xpf_rt_event;

/* The most buffer allocations of a module an event is matched to (its
 * index in 27 bits); the join leaves buffers past it unmatched. */
#define XPF_RT_MAX_BUFFER_ALLOCATIONS ((int32_t)1 << 26)

/* The most allocators a runtime holds: more is an error.  A capture has a
 * few a device; an event keeps its allocator in 16 bits, and a new name is
 * found by a search of every allocator, which this keeps cheap on a
 * capture that makes up a name an event. */
#define XPF_RT_MAX_ALLOCATORS 4095

/* An allocator event's size, what it asked for and the host events around
 * it, kept once for all the events alike: a long capture repeats a few
 * allocation sites millions of times, and every byte of an event is MiBs
 * of memory. */
typedef struct xpf_rt_site {
	uint64_t bytes; /* allocation_bytes (the chunk) */
	uint64_t requested_bytes;
	const char *shape; /* `shape` stat, or NULL; interned */
	/* The host events around it, as 1 + their event metadata index in the
	 * host plane (0: none): see xpf_rt_ev_enclosing / xpf_rt_ev_transfer. */
	uint32_t enclosing_md; /* innermost host event around it on its line */
	uint32_t transfer_md;  /* outermost transfer-family event around it
				      (DevicePut, BufferFromHost…) */
	uint32_t line;         /* its events' line in the /host:CPU plane */
	bool has_bytes;        /* allocation_bytes read, or (a free) taken from its match */
	bool has_requested;    /* requested_bytes read (TPU frees carry none) */
	int16_t allocator;     /* its events' allocator, < XPF_RT_MAX_ALLOCATORS */
} xpf_rt_site;

enum xpf_launched { XPF_LAUNCHED_UNKNOWN = 0, XPF_LAUNCHED_YES, XPF_LAUNCHED_NO };

/* How an execution was linked to its module (SPEC §4.3 rule order). */
enum xpf_link {
	XPF_LINK_AMBIGUOUS = 0,
	XPF_LINK_PROGRAM_ID, /* a program_id on the host side */
	XPF_LINK_NAME,       /* module_name / "<m>:XLA GPU module" / "Execute (<m>)" */
	XPF_LINK_BYTES,      /* requested_bytes in Build buffer allocations */
	XPF_LINK_PJIT,       /* enclosing PjitFunction(<f>) names jit_<f> */
	XPF_LINK_KERNELS,    /* program_id / hlo_module of the first kernels */
	XPF_LINK_PARAMETERS, /* of the candidates, the one whose parameters are all live */
};

/* One run of a module on one device. */
typedef struct xpf_rt_execution {
	int64_t start_ps, end_ps; /* in ns: xpf_rt_x_start_ns, xpf_rt_x_end_ns */
	const char *host_name;    /* the module name seen on the host side, or NULL */
	const char *event_name;   /* the outermost execute-family event */
	int64_t thread;
	uint64_t in_use_at_start_bytes;
	uint64_t peak_during_bytes;
	uint64_t temp_bytes, output_bytes; /* the matched bytes by role */
	uint32_t n;                        /* 1-based, in order of (start, device, line) */
	uint32_t module_execution;         /* 1-based per (module, device); 0 when ambiguous */
	uint32_t line;                     /* its line in /host:CPU; UINT32_MAX: none */
	uint32_t allocations, deallocations;
	uint32_t nmatched;     /* Build-buffer-allocation events matched to the
				      plan: those events with this execution, a
				      buffer_allocation and role TEMP or OUTPUT */
	int32_t module;        /* host module index, -1 when ambiguous */
	int32_t prev;          /* previous execution of the module on the device, or -1 */
	int16_t device;        /* -1 when unknown (an ordinal above 32767 too) */
	int16_t allocator;     /* the device allocator, or -1 */
	uint8_t link;          /* enum xpf_link */
	uint8_t launched;      /* enum xpf_launched */
	bool stopped_in_build; /* the last thing it did was allocate buffers */
	bool in_use_known;
} xpf_rt_execution;

/* A candidate module of an execution no rule linked to exactly one: every
 * module a rule named (SPEC §4.3).  Sorted by execution. */
typedef struct xpf_rt_candidate {
	uint32_t execution;
	int32_t module;
} xpf_rt_candidate;

/* One AllocatorRetry::AllocateRaw wait. */
typedef struct xpf_rt_retry {
	int64_t time_ns, duration_ns;
	int allocator; /* from the allocation that followed, the
				      enclosing execution's device, or -1 */
	int64_t thread;
	long execution; /* enclosing execution, or -1 */
} xpf_rt_retry;

/* One compilation seen in the window (SPEC §4.3): the outermost
 * compile-family host event on its line (`backend_compile_and_load`,
 * `PjRtCApiClient::CompileAndLoad(<f>)`, `...Client::Compile...`), with
 * the runs of XLA's GEMM autotuner made while it compiled: bare
 * `GpuExecutable::ExecuteThunks` events on `tf_pjrt_compile_thread_pool`
 * lines or inside a compile event, never executions.  Autotuner runs that
 * no compile event of the window holds (one that began before it) make a
 * compilation of their own, of an unknown function. */
typedef struct xpf_rt_compile {
	int64_t start_ps, end_ps;
	const char *function; /* "jit_train_step", or NULL when unknown */
	int64_t thread;       /* the compiling line's id (0: none) */
	uint32_t autotuner_runs;
	int32_t module;                 /* the module it made (host module index), -1: none */
	bool finished;                  /* a module of the function was made by it */
	bool retried;                   /* an AllocatorRetry wait inside it */
	int16_t allocator;              /* the device allocator its runs used, or -1 */
	uint64_t peak_in_use_bytes;     /* the most in use on that allocator while it ran */
	uint64_t largest_request_bytes; /* its largest allocation outside executions */
	uint64_t in_use_at_start_bytes; /* in use on that allocator when it began */
	uint64_t in_use_at_end_bytes;   /* in use on that allocator when it ended */
	bool in_use_known;              /* an event of that allocator before it began */
	/* private to the scan: an autotuner run still to be folded in */
	bool is_run;
} xpf_rt_compile;

/* Host events between two executions, by name (nested ones counted once each). */
typedef struct xpf_rt_between_row {
	char *name;
	uint64_t count;
	int64_t total_ns;
} xpf_rt_between_row;

typedef struct xpf_rt_between {
	long module; /* whose executions bound the window, -1: none */
	int device;
	long from_execution, to_execution; /* execution indexes, -1: none */
	int64_t from_ns, to_ns;
	size_t nrows; /* sorted by total_ns (largest first), then name */
	xpf_rt_between_row *rows;
} xpf_rt_between;

typedef struct xpf_runtime {
	bool has_host_plane; /* a /host:CPU plane exists */
	bool has_events;     /* at least one allocator event */
	bool keyed_by_index; /* TPU style (index_on_host) */
	size_t nallocators;  /* sorted by name */
	xpf_rt_allocator *allocators;
	size_t nevents;
	xpf_rt_event *events;
	size_t nsites;
	xpf_rt_site *sites; /* the events' sites (their `site`) */
	size_t nexecutions;
	xpf_rt_execution *executions;
	size_t nretries;
	xpf_rt_retry *retries;
	size_t ncompiles; /* in order of start */
	xpf_rt_compile *compiles;
	size_t ncandidates; /* the ambiguous executions' candidate modules */
	struct xpf_rt_candidate *candidates;
	size_t host_chunks_by_others; /* how many chunks of the host lines a
					 thread other than the first read (their
					 records merged): xpf_rt_progress, tests */
	const xpf_plane *host_plane;  /* the /host:CPU plane, or NULL */
	/* private to runtime*.c */
	struct xpf_rt_priv *priv;
} xpf_runtime;

/* A time in ps as integer ns: the floor of ps / 1000 (SPEC §4), for
 * events, executions and retries alike. */
static inline int64_t xpf_rt_floor_ns(int64_t ps)
{
	return ps >= 0 ? ps / 1000 : -((-ps + 999) / 1000);
}

/* An execution's start and end in integer ns. */
static inline int64_t xpf_rt_x_start_ns(const xpf_rt_execution *x)
{
	return xpf_rt_floor_ns(x->start_ps);
}

static inline int64_t xpf_rt_x_end_ns(const xpf_rt_execution *x)
{
	return xpf_rt_floor_ns(x->end_ps);
}

/* An execution's in use at start minus that of the one before of its module
 * on its device (prev), when both are known; else 0. */
static inline int64_t xpf_rt_x_growth(const xpf_runtime *rt, const xpf_rt_execution *x)
{
	if (x->prev < 0 || !x->in_use_known || !rt->executions[x->prev].in_use_known)
		return 0;
	return xpf_diff_u64(x->in_use_at_start_bytes, rt->executions[x->prev].in_use_at_start_bytes);
}

/* An allocator event's time in integer ns. */
static inline int64_t xpf_rt_ev_ns(const xpf_rt_event *e) { return xpf_rt_floor_ns(e->t_ps); }

/* An allocator event's allocation_bytes (0 when it has none). */
static inline uint64_t xpf_rt_ev_bytes(const xpf_runtime *rt, const xpf_rt_event *e)
{
	return rt->sites[e->site].bytes;
}

/* Whether it has them: read, or (a free) taken from its match. */
static inline bool xpf_rt_ev_has_bytes(const xpf_runtime *rt, const xpf_rt_event *e)
{
	return rt->sites[e->site].has_bytes;
}

/* Its requested_bytes (0 when it has none). */
static inline uint64_t xpf_rt_ev_requested(const xpf_runtime *rt, const xpf_rt_event *e)
{
	return rt->sites[e->site].requested_bytes;
}

/* Whether it carried requested_bytes (TPU frees carry none). */
static inline bool xpf_rt_ev_has_requested(const xpf_runtime *rt, const xpf_rt_event *e)
{
	return rt->sites[e->site].has_requested;
}

/* Its `shape` stat, or NULL. */
static inline const char *xpf_rt_ev_shape(const xpf_runtime *rt, const xpf_rt_event *e)
{
	return rt->sites[e->site].shape;
}

/* The name of the innermost host event around an allocator event, or NULL. */
static inline const char *xpf_rt_ev_enclosing(const xpf_runtime *rt, const xpf_rt_event *e)
{
	uint32_t md = rt->sites[e->site].enclosing_md;
	return md && rt->host_plane ? rt->host_plane->event_md[md - 1].name : NULL;
}

/* The name of the outermost transfer-family event around it, or NULL. */
static inline const char *xpf_rt_ev_transfer(const xpf_runtime *rt, const xpf_rt_event *e)
{
	uint32_t md = rt->sites[e->site].transfer_md;
	return md && rt->host_plane ? rt->host_plane->event_md[md - 1].name : NULL;
}

/* An allocator event's allocator (an index in rt->allocators). */
static inline int xpf_rt_ev_allocator(const xpf_runtime *rt, const xpf_rt_event *e)
{
	return rt->sites[e->site].allocator;
}

/* An allocator event's line in the /host:CPU plane (its site's). */
static inline uint32_t xpf_rt_ev_line(const xpf_runtime *rt, const xpf_rt_event *e)
{
	return rt->sites[e->site].line;
}

/* The id (OS thread id) of an allocator event's line. */
static inline int64_t xpf_rt_ev_thread(const xpf_runtime *rt, const xpf_rt_event *e)
{
	uint32_t l = xpf_rt_ev_line(rt, e);
	return rt->host_plane && l < rt->host_plane->nlines ? rt->host_plane->lines[l].id : 0;
}

/* How the runtime is built.  The analysis layer reads no environment:
 * fs/main.c fills these (XPF_THREADS, XPF_KERNELS, XPF_PHASES) and tests set
 * them directly.  No option changes a byte of the result. */
enum xpf_rt_kernels {
	XPF_RT_KERNELS_WANTED = 0, /* before the link, the devices it will ask
				      about; any other on its first ask */
	XPF_RT_KERNELS_ALL,        /* every device before the link */
	XPF_RT_KERNELS_ASK,        /* none before: each on the link's first ask */
};

/* What the build has done when a phase ends (xpf_rt_options.phase). */
typedef struct xpf_rt_progress {
	const char *phase; /* "index", "host", "devices", "order", "finish" */
	double seconds;    /* since the build began (monotonic clock) */
	size_t host_lines, host_chunks, host_chunks_by_others;
	size_t nevents, nsites, nexecutions;
	size_t plans_beside; /* at "host": modules whose plans a thread built
				beside the scan (runtime.c) */
	/* at "finish": devices with kernel planes, those read before the link,
	   and those read when it asked */
	size_t kernel_devices, kernel_devices_before, kernel_devices_asked;
} xpf_rt_progress;

typedef struct xpf_rt_options {
	int threads;      /* for the scans, 1-8; 0: the online CPUs (at most 8) */
	bool share_small; /* share the host lines out between threads even
				      on a capture too small to gain (tests: the
				      merge is what they compare) */
	enum xpf_rt_kernels kernels;
	/* Called as each phase ends (NULL: not), from the building thread. */
	void (*phase)(void *ctx, const xpf_rt_progress *p);
	void *phase_ctx;
} xpf_rt_options;

#define XPF_RT_OPTIONS_INIT                                 \
	{                                                   \
		0, false, XPF_RT_KERNELS_WANTED, NULL, NULL \
	}

/* h's runtime built with opt: the caller owns it (xpf_runtime_free). */
int xpf_runtime_build(xpf_host *h, const xpf_rt_options *opt, xpf_runtime **out, xpf_error *err);

/* The host's runtime, built on first use with the host's options
 * (xpf_options.runtime) and kept (host.c). */
int xpf_host_runtime(xpf_host *h, const xpf_runtime **out, xpf_error *err);
void xpf_runtime_free(void *rt);

/* A block live at some moment, with where it came from. */
enum xpf_origin {
	XPF_ORIGIN_OUTPUTS = 0, /* outputs of <module> execution <k> */
	XPF_ORIGIN_TEMP,        /* temp of <module> execution <k> */
	XPF_ORIGIN_EXEC,        /* other allocation inside an execution */
	XPF_ORIGIN_TRANSFER,    /* <transfer event>(<shape>) */
	XPF_ORIGIN_HOST_EVENT,  /* allocated under another host event */
	XPF_ORIGIN_BEFORE,      /* allocated before the capture started */
};

typedef struct xpf_rt_block {
	enum xpf_origin origin;
	const char *origin_text; /* e.g. "outputs of jit_f(1) execution 2" */
	uint64_t addr;           /* 0 for the "before" remainder */
	uint64_t bytes;
	uint64_t requested_bytes;
	bool has_requested;     /* its event carried requested_bytes */
	long event;             /* allocation event, or -1 */
	long execution;         /* for OUTPUTS/TEMP/EXEC, else -1 */
	const char *host_event; /* the host event that allocated it, or NULL */
	const char *shape;
} xpf_rt_block;

/* Blocks live on execution x's device allocator when it started (x is the
 * 0-based index of executions[]), replayed by address from every event
 * strictly before the start, plus one XPF_ORIGIN_BEFORE block for in-use
 * bytes that no seen allocation explains.  Sorted by origin text, then bytes
 * (largest first), then address.  The caller frees with
 * xpf_rt_blocks_free(). */
int xpf_runtime_live_at(const xpf_runtime *rt, size_t x, xpf_rt_block **out, size_t *n,
			xpf_error *err);
void xpf_rt_blocks_free(xpf_rt_block *b, size_t n);
/* The same for allocator a just before time t_ps (in use then: in_use,
 * when known), e.g. when a compilation began. */
void xpf_runtime_live_before(const xpf_runtime *rt, int a, int64_t t_ps, bool in_use_known,
			     uint64_t in_use, xpf_rt_block **out, size_t *nout);
/* Did compilation c run out of memory (SPEC §5.2 compile-oom): it did not
 * finish, and an AllocatorRetry wait was inside it or its allocator's pool
 * was at least 80% in use while it ran. */
bool xpf_rt_compile_oom(const xpf_runtime *rt, const xpf_rt_compile *c);

/* Host events between the end of execution `from` and the start of
 * execution `to` (0-based indexes) on the /host:CPU plane.  Fills *out; the
 * caller releases with xpf_rt_between_release(). */
int xpf_runtime_between(xpf_host *h, const xpf_runtime *rt, size_t from, size_t to,
			xpf_rt_between *out, xpf_error *err);
void xpf_rt_between_release(xpf_rt_between *b);

/* Names for the enums, as written in the TSV files. */
const char *xpf_launched_name(enum xpf_launched l);
/* The first event at or after time t_ps (nevents: none); events are
 * sorted by time, so an execution's own follow it up to its end. */
size_t xpf_rt_first_event_at(const xpf_runtime *rt, int64_t t_ps);
/* Execution xi's candidate modules: *first of the returned count (0: none). */
size_t xpf_rt_candidates(const xpf_runtime *rt, size_t xi,
			 const xpf_rt_candidate **first); /* "yes" "no" "unknown" */
const char *xpf_link_name(enum xpf_link l);               /* "program_id" "name" ... "ambiguous" */

#endif
