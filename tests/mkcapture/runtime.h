/* The runtime side of a scenario: a script of timed actions (device puts,
 * executions, frees, Python-tracer events) replayed into the host and
 * device planes, with a BFC allocator simulated per device so that every
 * MemoryAllocation / MemoryDeallocation carries self-consistent figures. */
#ifndef MK_RUNTIME_H
#define MK_RUNTIME_H

#include <stdint.h>
#include <stdio.h>

#include "hlo_build.h"
#include "wire.h"

#define MK_MAX_MODULES 64
#define MK_MAX_DEVICES 8
#define MK_MAX_RT_ALLOCS 512
#define MK_MAX_THUNKS 512

typedef struct mk_modinfo {
	hb_module *hb;
	xpf_buf hlo;
	const char *fn; /* Python function name, for PjitFunction(<fn>) */
	hb_rt_alloc allocs[MK_MAX_RT_ALLOCS];
	int nallocs;
	int nresults;
	const char *thunks[MK_MAX_THUNKS];
	int nthunks;
	/* kernels on the stream per execution when not one per listed thunk
	 * (0: nthunks): --job's focus launches a kernel per top-level fusion,
	 * beyond the MK_MAX_THUNKS its host line lists; kthunks names them */
	const char **kthunks;
	int nkernels;
	hb_stats stats;
} mk_modinfo;

enum { ACT_PUT, ACT_EXEC, ACT_FREE, ACT_PY, ACT_PYTREE, ACT_COMPILE };

/* Variants (--variant): each changes only the shape of the events (names,
 * nesting, stats present, line order), never a figure: the allocator
 * events (times, requested and allocated bytes, addresses, in use) and the
 * kernels are the same with and without them.  See mk_variants[] and
 * tests/scenarios/README.md. */
enum {
	MK_V_NEW_CLIENT = 1u << 0,        /* CommonPjRtLoadedExecutable (XLA since 2026-02) */
	MK_V_CAPI = 1u << 1,              /* PJRT_LoadedExecutable_Execute [linkage] around executions */
	MK_V_FREES_AFTER = 1u << 2,       /* a failed set-up's frees after its span ended */
	MK_V_EVENTS_AFTER = 1u << 3,      /* host and Python events after a failure */
	MK_V_NO_OPTIONAL_STATS = 1u << 4, /* optional allocator, thunk and kernel stats absent */
	MK_V_SHUFFLE = 1u << 5,           /* host lines reversed, other thread ids, events unordered */
	MK_V_NVIDIA = 1u << 6,            /* the GPU planes an NVIDIA device's (vendor, name, compute cap) */
	MK_V_PY_MAIN = 1u << 7,           /* --job: the Python tracer's events on the main thread's line */
	MK_V_AUTOTUNE = 1u << 8,          /* each module compiled before its first call, with autotuner runs */
	MK_V_SCOPE_TREE = 1u << 9,        /* a /host:__ScopeRangeCallStack__ plane of scope-id stats */
	MK_V_KEPT_BATCH = 1u << 10,       /* retrace scenarios: the last batch still held at the new call */
};
typedef struct mk_variant {
	const char *name;
	unsigned flag;
	const char *summary;
} mk_variant;
extern const mk_variant mk_variants[];
extern const int mk_nvariants;
/* "new-client,frees-after" -> flags; -1 on an unknown name (*bad is set). */
int mk_parse_variants(const char *list, unsigned *flags, char *bad, size_t nbad);

typedef struct mk_act {
	int kind;
	int dev;
	int leader;     /* first of a group of per-device actions (main thread events) */
	int64_t t_ns;
	int64_t dur_ns;
	int module;     /* EXEC */
	int fail_at;    /* EXEC: runtime allocation that fails (-1 none) */
	int64_t retry_ns;
	int64_t bytes;  /* PUT */
	int handle;     /* PUT: new array; FREE: array freed; EXEC: first result */
	int64_t count;  /* PYTREE: events; COMPILE: autotuner runs */
	char name[96];  /* PY: event name; PUT: shape; COMPILE: the function (jit_f) */
} mk_act;

/* One of --modules' modules: its metadata name and HloProto. */
typedef struct mk_many {
	char name[128];
	uint64_t program_id;
	xpf_buf hlo;
} mk_many;

typedef struct mk_scn {
	unsigned variants; /* MK_V_*: kept by mk_scn_init, so set it before the build */
	const char *host;
	int ndev;
	uint64_t memory_size;
	int64_t capacity;
	int64_t pre_bytes[MK_MAX_DEVICES]; /* in use before the capture started */
	int no_runtime;                    /* no allocator events (cuda_async) */
	const char *device_name;
	const char *vendor;
	mk_modinfo mods[MK_MAX_MODULES];
	int nmods;
	mk_act *acts;
	int nacts, capacts;
	int nhandles;
	int64_t t; /* script cursor, ns */
	int scale;
	/* --scale: steps of a template (tmpl, one step of a small input-pipeline
	 * module) replayed before the script, whose times shift after them;
	 * see mk_scale_prefix(). */
	mk_act *tmpl;
	int ntmpl;
	int64_t prefix_steps, step_ns, prefix_ns, base_t;
	int step_handles, base_handles;
	/* --modules: small compiled modules that never run, beyond the
	 * MK_MAX_MODULES the script knows (mk_add_many_modules) */
	mk_many *many;
	int nmany;
} mk_scn;

void mk_scn_init(mk_scn *s, const char *host, int ndev, uint64_t memory_size, int64_t capacity);
void mk_scn_release(mk_scn *s);
/* Encode module m (temp block temp_size, 0 = placement extent) and register it. */
int mk_add_module(mk_scn *s, hb_module *m, const char *fn, int64_t temp_size);

/* --modules N[,unique][,reverse][,from=K][,broken=B][,stem=NAME]: n small
 * modules that never run, for matching modules (compare/): each one
 * parameter f32[K+k+1] (k = 0..n-1, or n-1..0 with reverse) and an output of
 * that shape; all named STEM(<id>) (default jit_many: several of one name,
 * paired by their parameter shapes), or with unique STEM_<k>(<id>); every
 * B-th one's HloProto cut in half (its plan cannot be read).
 * Returns 0, or -1 (*bad set) on a bad spec. */
int mk_add_many_modules(mk_scn *s, const char *spec, char *bad, size_t nbad);

/* Script.  Times advance a cursor; each call returns the action index. */
void mk_gap(mk_scn *s, int64_t ns);
/* Device put of an array on every device (or dev >= 0 only); returns the
 * handle of device 0's array (handles of other devices follow). */
int mk_put(mk_scn *s, int dev, int64_t bytes, const char *shape);
/* One execution of module on all devices; fail_at: index into the module's
 * runtime allocations that runs out of memory (-1 none).  Returns the handle
 * of device 0's first result (result r of device d: + d * nresults + r). */
int mk_exec(mk_scn *s, int module, int fail_at, int64_t retry_ns);
void mk_free(mk_scn *s, int handle);
void mk_py(mk_scn *s, const char *name, int64_t dur_ns);
/* A compilation of fn (the way today's JAX records one): a compile event
 * on the Python thread (backend_compile_and_load > PjRtCApiClient::
 * CompileAndLoad(fn)) and `runs` runs of XLA's GEMM autotuner on a
 * tf_pjrt_compile_thread_pool line, each a bare [0] GpuExecutable::
 * ExecuteThunks; with scratch > 0, each run's scratch buffer allocated on
 * device 0 outside every execution, and freed after it.  No module comes
 * of it: the scenario adds the module a compile makes, or none when the
 * compile fails. */
void mk_compile(mk_scn *s, const char *fn, int runs, int64_t scratch);
int64_t mk_exec_duration(const mk_scn *s, int module, int fail_at, int64_t retry_ns);

/* --scale: add the module jit_preprocess and a template step (a batch put
 * on every device, one execution, the batch and results freed, Python
 * events around it), replayed `steps` times before the scenario's script.
 * The script's own actions keep their order, handles and relative times,
 * so every per-execution figure of the scenario's modules is unchanged;
 * allocator-wide counts grow by the steps' events.  Call once; then
 * mk_set_prefix_steps() may change the count (it costs nothing: the steps
 * are generated while writing). */
void mk_scale_prefix(mk_scn *s);
void mk_set_prefix_steps(mk_scn *s, int64_t steps);
/* --big-module: a module of about n instructions (fusions with temp
 * buffers, a heap trace and buffer assignment of matching size), compiled
 * but never executed. */
void mk_add_big_module(mk_scn *s, int64_t n);
/* --big-step: a module of about n instructions that runs once after the
 * script and is the diagnosis's focus (the biggest by need that ran). */
void mk_add_big_step(mk_scn *s, int64_t n);
/* Its module alone (one small unaliased output per per_output instructions;
 * mk_add_big_step: 400); returns the module index. */
int mk_big_step_module(mk_scn *s, int64_t n, int64_t per_output);
/* --job (job.c): the shape of a big real job on one GPU: a focus module of
 * about n instructions that runs every step among small executions, with a
 * Python tracer's call tree; see job.c. */
void mk_build_job(mk_scn *s, int64_t n);
/* Its script of `steps` steps (any script before is dropped). */
void mk_job_script(mk_scn *s, int64_t steps);
/* The Python-tracer events of the script. */
int64_t mk_job_tracer_events(const mk_scn *s);
/* A Python-tracer call tree of `events` events over dur_ns from the cursor
 * on the python line; the cursor does not move (the tracer runs beside the
 * executions it dispatches).  Returns the action's index. */
int mk_pytree(mk_scn *s, int64_t events, int64_t dur_ns);
/* Its events (gen_python); *ids caches the names' metadata ids. */
struct xp_emit;
void mk_pytree_emit(struct xp_emit *e, int64_t **ids, const mk_act *x);
/* The same on a line with other events (MK_V_PY_MAIN), a stretch at a
 * time: begin emits the tree's root (train_step over the whole act);
 * until emits the calls (each with its builtins) that end by start_ps and
 * leaves out those that would overlap [start_ps, end_ps), so that the line
 * stays nested and in order. */
typedef struct mk_pycalls {
	int64_t t_ps, w, calls, g, left;
} mk_pycalls;
void mk_pycalls_begin(struct xp_emit *e, int64_t **ids, mk_pycalls *c, const mk_act *x);
void mk_pycalls_until(struct xp_emit *e, int64_t **ids, mk_pycalls *c, int64_t start_ps,
		      int64_t end_ps);
/* Actions in replay order: the prefix steps, then the script. */
int64_t mk_nacts_total(const mk_scn *s);
const mk_act *mk_act_at(const mk_scn *s, int64_t i, mk_act *tmp);
/* Bytes mk_write_xspace() would write. */
uint64_t mk_count_bytes(mk_scn *s);

/* Write the XSpace.  Returns 0 or -1 on an I/O error. */
int mk_write_xspace(mk_scn *s, FILE *f, uint64_t *bytes, uint64_t *events);

#endif
