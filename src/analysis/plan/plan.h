/* The plan of a module: what XLA's buffer assignment reserved, and what is
 * live at the heap peak (SPEC §4.1, §4.2; reference §3.6, §5, §10).  Owned by
 * plan.c (decoding the instructions), plan_assign.c (buffers, allocations,
 * kinds), plan_heap.c (heap simulation), plan_roles.c (roles, sources),
 * plan_dups.c (parameter duplicates) and plan_tree.c (the files).
 *
 * A plan is computed on first use from the module's HloProto and kept in the
 * host (h->plans[m]); it is immutable afterwards and safe to read from any
 * thread.  Every pointer inside it stays valid until the host's report is
 * freed; it holds no pointer into the HloProto, which is unpacked a
 * computation at a time while the plan is built and freed after.  Strings typed `const char *` are never NULL ("" when absent).
 *
 * Memory colours (reference §3.6.1, SPEC §4.1): 0 device memory; on GPU 1
 * collective memory and 2 a separate temp colour; 5 host memory; on TPU
 * only colour 0 is device memory (HBM), the others are on-chip spaces.
 * "Device" figures below (parameters, outputs, temp, need, heap peak) count
 * the device colours (xpf_plan_device_color); `total_bytes` and `kind_bytes`
 * count all colours, and `colors[]` lists each colour present with its own
 * breakdown. */
#ifndef XPF_PLAN_H
#define XPF_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/host.h"

#define XPF_HOST_COLOR 5

/* The kind of a buffer allocation: first match in this order (SPEC §4.1). */
enum xpf_kind {
	XPF_KIND_PARAMETER = 0, /* is_entry_computation_parameter */
	XPF_KIND_OUTPUT,        /* maybe_live_out */
	XPF_KIND_THREAD_LOCAL,  /* is_thread_local */
	XPF_KIND_CONSTANT,      /* is_constant */
	XPF_KIND_TEMP,          /* everything else (tuples included) */
	XPF_NKINDS
};

/* The role of a buffer live at the heap peak: first match (SPEC §4.1).
 * (Spelled XPF_PLAN_ROLE_*: runtime.h's enum xpf_rt_role owns XPF_ROLE_*.) */
enum xpf_role {
	XPF_PLAN_ROLE_PARAMETER = 0,
	XPF_PLAN_ROLE_OUTPUT,
	XPF_PLAN_ROLE_WORKSPACE, /* custom-call / custom fusion output of s8/u8 */
	XPF_PLAN_ROLE_BACKWARD,  /* op_name has "transpose(" */
	XPF_PLAN_ROLE_FORWARD,   /* op_name has "jvp(": kept for the backward pass */
	XPF_PLAN_ROLE_OTHER,
	XPF_NROLES
};

const char *xpf_kind_name(enum xpf_kind k); /* "parameter", "thread-local", ... */
const char *xpf_role_name(enum xpf_role r); /* "parameter", "forward", ... */

/* One HLO instruction of the module (every computation, fused ones too). */
typedef struct xpf_plan_instr {
	int64_t id; /* HloInstructionProto.id (opaque key) */
	const char *name;
	const char *opcode;
	const char *computation; /* name of the computation holding it */
	int64_t computation_id;
	bool in_entry;           /* in the entry computation */
	bool in_fusion;          /* in a fusion body */
	bool remat;              /* ".remat" in the name (reference §8.3) */
	const char *op_name;     /* metadata.op_name */
	const char *source;      /* "file:line", else the first stack frame
				     "file:line:col", else "" */
	const char *shape;       /* "f32[8,128]{1,0}", tuples "(f32[2], s32[])" */
	const char *dtype;       /* "f32", "tuple", ... */
	const char *fusion_kind; /* "kCustom", ...; "" */
	/* a while loop's known trip count (backend_config
	   "known_trip_count"; jax.lax.scan over n layers: n), else 0 */
	int64_t trip_count;
	/* position in its computation's schedule (HloScheduleProto), -1
	   when the module carries none: program order, where the proto's
	   instruction order is only a post-order */
	long order;
	/* metadata: the Python stack (reference §3.7), or file and line */
	int32_t stack_frame_id;
	int32_t source_line;
	const char *source_file;
} xpf_plan_instr;

/* One logical buffer (an HLO value that got an allocation). */
typedef struct xpf_plan_buffer {
	int64_t id;              /* LogicalBufferProto.id */
	uint64_t bytes;          /* LogicalBufferProto.size (padded) */
	uint64_t unpadded_bytes; /* from the shape at its whole shape index,
				     default layout (reference §5.1 step 3) */
	int64_t color;
	const xpf_plan_instr *instr; /* defining instruction; NULL if unresolved */
	const char *shape_index;     /* "" or "{0,1}" */
	const char *dtype;           /* of the value at the shape index */
	const char *shape;           /* of the value at the shape index */
	long alloc;                  /* index into plan->allocs; -1 if none */
	uint64_t offset;             /* inside that allocation */
	/* Lifetime in the simulated program order (heap step numbers); -1 when
	 * the buffer appears in no simulated trace. */
	long start, end;
	size_t naliases; /* other positions sharing the buffer */
	const xpf_plan_instr **aliases;
} xpf_plan_buffer;

/* One buffer allocation (BufferAllocationProto). */
typedef struct xpf_plan_alloc {
	int64_t index;
	uint64_t bytes;
	enum xpf_kind kind;
	int64_t color;
	bool is_parameter, maybe_live_out, is_thread_local, is_constant, is_tuple;
	int64_t parameter_number;          /* -1 unless a parameter */
	const char *parameter_shape_index; /* "" or "{0}" */
	bool donated;                      /* in input_output_alias, or flagged */
	bool donor_only;                   /* in buffer_donor but in no alias */
	bool indefinite;                   /* parameter/output/thread-local/constant */
	size_t nbuffers;                   /* assigned logical buffers */
	size_t *buffers;                   /* indexes into plan->buffers */
	long largest;                      /* its largest buffer (index), or -1 */
} xpf_plan_alloc;

/* Bytes per colour, broken down by kind. */
typedef struct xpf_plan_color {
	int64_t color;
	const char *what; /* "device", "collective", "temp", "host", "other" */
	uint64_t bytes;
	size_t nallocs;
	uint64_t kind_bytes[XPF_NKINDS];
} xpf_plan_color;

/* One row of peak_buffers.tsv (SPEC §4.2): an indefinite allocation (named
 * after its largest buffer) or a temp buffer live at the peak (the current
 * sharer after SHARE_WITH).  Rows sum exactly to heap_peak_bytes. */
typedef struct xpf_plan_peak {
	uint64_t bytes; /* allocation bytes, or buffer bytes */
	uint64_t unpadded_bytes;
	enum xpf_kind kind;
	enum xpf_role role;
	const xpf_plan_buffer *buffer; /* representative buffer (NULL only for
					   an indefinite allocation with none) */
	const xpf_plan_alloc *alloc;
	uint64_t offset; /* of the buffer in the allocation */
} xpf_plan_peak;

/* One step of the simulated heap (heap.tsv): after the event. */
typedef struct xpf_plan_step {
	const char *instruction; /* the event's instruction_name */
	uint64_t bytes;          /* simulated heap + indefinite */
	uint64_t unpadded_bytes;
} xpf_plan_step;

/* An entry parameter (a leaf of the entry parameter shapes that has a
 * parameter allocation, or the parameter instruction itself). */
typedef struct xpf_plan_param {
	int64_t number;
	const char *shape_index; /* "" or "{1}" */
	uint64_t bytes;          /* allocation bytes */
	const char *shape, *dtype;
	int element_type; /* xla.PrimitiveType */
	uint64_t elements;
	bool donated;
	const xpf_plan_alloc *alloc;
	const xpf_plan_instr *instr; /* the parameter instruction */
} xpf_plan_param;

/* An output leaf: an output allocation, and the first undonated parameter
 * with the same shape and dtype that it could have reused (no-donation). */
typedef struct xpf_plan_output {
	const xpf_plan_alloc *alloc;
	const xpf_plan_buffer *buffer; /* its largest buffer */
	const char *shape, *dtype;
	const xpf_plan_param *matches; /* NULL: no match (each param used once) */
} xpf_plan_output;

/* A duplicate of an entry parameter made by a layout change or a dtype
 * conversion (reference §10), defined by a non-fusion instruction. */
enum xpf_dup_kind { XPF_DUP_LAYOUT, XPF_DUP_CONVERT };
typedef struct xpf_plan_dup {
	enum xpf_dup_kind kind;
	const xpf_plan_buffer *buffer; /* the copy's logical buffer */
	const xpf_plan_param *param;   /* the parameter it copies */
	bool at_peak;                  /* live at the heap peak */
} xpf_plan_dup;

typedef struct xpf_plan {
	const char *module;   /* metadata name "jit_f(12)" */
	const char *hlo_name; /* HloModuleProto.name */
	uint64_t program_id;
	/* False when the module has no buffer assignment: only module,
	 * program_id, instrs and remat_instructions are filled, and
	 * `missing` says why. */
	bool has_assignment;
	const char *missing;

	size_t ninstrs; /* every computation, proto order */
	xpf_plan_instr *instrs;
	size_t nbuffers; /* proto order */
	xpf_plan_buffer *buffers;
	size_t nallocs; /* proto order */
	xpf_plan_alloc *allocs;
	size_t ncolors; /* ascending colour */
	xpf_plan_color *colors;

	/* All colours: the kinds sum exactly to total_bytes.  (read) */
	uint64_t total_bytes;
	uint64_t kind_bytes[XPF_NKINDS];
	size_t kind_count[XPF_NKINDS];

	/* TPU-style tiled layouts: only colour 0 is device memory */
	bool tpu;
	/* Device colours (xpf_plan_device_color).  (read) */
	uint64_t parameters_bytes;
	size_t parameters_count;
	uint64_t donated_bytes;
	size_t donated_count;
	uint64_t donor_only_bytes; /* buffer_donor without an alias */
	size_t donor_only_count;
	uint64_t outputs_bytes;
	uint64_t non_aliased_outputs_bytes; /* outputs that are not parameters */
	uint64_t constants_bytes;
	uint64_t thread_local_bytes;
	uint64_t temp_bytes;
	uint64_t host_bytes; /* colour 5, all kinds */
	/* parameters + non-aliased outputs + temp + constants.  (read) */
	uint64_t need_bytes;

	/* Heap simulation of the device colours' traces, in proto order, with
	 * XLA's rules (reference §5.4).  (read: computed from the stored
	 * traces, the same figure as XProf's for one trace) */
	bool simulated;            /* false: no trace; peak = indefinite */
	size_t ntraces;            /* traces simulated */
	uint64_t indefinite_bytes; /* Σ indefinite allocations (device) */
	uint64_t simulated_peak_bytes;
	uint64_t simulated_peak_unpadded_bytes;
	uint64_t heap_peak_bytes; /* simulated peak + indefinite */
	uint64_t heap_peak_unpadded_bytes;
	long peak_position;           /* step of the peak; -1 if none */
	const char *peak_instruction; /* instruction simulated at the peak */
	uint64_t fragmentation_bytes; /* temp − simulated peak (0 if below) */
	size_t nsteps;
	xpf_plan_step *steps;

	size_t npeak; /* sorted: bytes desc, then instruction */
	xpf_plan_peak *peak;
	uint64_t role_bytes[XPF_NROLES];

	size_t remat_instructions;

	size_t nparams; /* by (number, shape index) */
	xpf_plan_param *params;
	size_t noutputs; /* allocation order */
	xpf_plan_output *outputs;
	uint64_t matching_output_bytes; /* Σ outputs matching an undonated
					   parameter (no-donation saving) */
	size_t ndups;
	xpf_plan_dup *dups;
	uint64_t layout_dup_peak_bytes; /* Σ layout duplicates at the peak */
	uint64_t convert_dup_peak_bytes;

	void *priv; /* plan.c's arena */
} xpf_plan;

/* Does colour c count as device memory in plan p (GPU: all but host
 * memory; TPU: HBM, colour 0, only)? */
static inline bool xpf_plan_device_color(const xpf_plan *p, int64_t c)
{
	return p->tpu ? c == 0 : c != XPF_HOST_COLOR;
}

/* Module m's plan, computed on first use and cached in the host (the
 * returned plan is owned by the host).  A module without buffer assignment
 * still gets a plan (has_assignment false). */
int xpf_host_plan(xpf_host *h, size_t m, const xpf_plan **out, xpf_error *err);
/* Module m of a capture, decoded and planned (what xpf_host_plan keeps). */
int xpf_plan_build_module(xpf_capture *cap, size_t m, xpf_plan **out, xpf_error *err);
void xpf_plan_free(void *plan);

/* Build a plan from an HloProto in parts (xpf_plan_build_module), or from
 * one already in memory (tests).  The plan copies what it keeps. */
int xpf_plan_build_parts(xpf_hlo *hlo, const char *module, uint64_t program_id, xpf_plan **out,
			 xpf_error *err);
int xpf_plan_build(const Xla__HloProto *hlo, const char *module, uint64_t program_id,
		   xpf_plan **out, xpf_error *err);

/* Lookups (binary search; NULL when absent). */
const xpf_plan_instr *xpf_plan_instr_by_id(const xpf_plan *p, int64_t id);
const xpf_plan_buffer *xpf_plan_buffer_by_id(const xpf_plan *p, int64_t id);

#endif
