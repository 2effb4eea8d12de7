/* Builder of optimized-looking HLO modules with their buffer assignment.
 *
 * The scenario code adds instructions to the entry computation in schedule
 * order; fusions, custom-calls and while loops get their called
 * computations.  Buffers are then declared as parameter, output or temp;
 * hb_encode() derives the heap-simulator trace of the temp allocation from
 * the schedule (a value is allocated at its defining instruction and freed
 * after its last use, looking through get-tuple-element, bitcast and tuple),
 * places the temp buffers first-fit (or never reusing memory), and encodes
 * the whole xla.HloProto. */
#ifndef MK_HLO_BUILD_H
#define MK_HLO_BUILD_H

#include <stdint.h>

#include "common/buf.h"

enum {
	ET_PRED = 1, ET_S8 = 2, ET_S32 = 4, ET_U8 = 6, ET_F16 = 10, ET_F32 = 11,
	ET_TUPLE = 13, ET_BF16 = 16,
};

typedef struct hb_arr {
	int et;
	int nd;
	int64_t dims[6];
} hb_arr;

hb_arr hb_a(int et, int nd, ...); /* dims as int */
int64_t hb_arr_bytes(const hb_arr *a);
/* "f32[8,8,1024,1024]" */
void hb_arr_str(const hb_arr *a, char *out, size_t n);

typedef struct hb_meta {
	const char *op_type;
	const char *op_name;
	const char *file;     /* NULL: no source */
	const char *function; /* Python function of the frame */
	int line;
} hb_meta;

typedef struct hb_module hb_module;

hb_module *hb_new(const char *name, uint64_t program_id);
void hb_free(hb_module *m);
const char *hb_name(const hb_module *m);
uint64_t hb_program_id(const hb_module *m);

/* Entry-computation instructions (ids returned are HloInstructionProto.id). */
int64_t hb_param(hb_module *m, const char *name, hb_arr a, const hb_meta *meta);
/* A fusion with a fused computation of one parameter per operand and a root
 * of opcode `root` (e.g. "exponential", "transpose", "convert").  kind is
 * "kLoop", "kInput", "kOutput" or "kCustom"; comp_name may be NULL. */
int64_t hb_fusion(hb_module *m, const char *name, const char *kind, const char *root,
	const char *comp_name, hb_arr a, const int64_t *ops, int nops, const hb_meta *meta);
/* A library call returning (a, s8[ws_bytes]) when ws_bytes > 0, else a. */
int64_t hb_custom_call(hb_module *m, const char *name, const char *target, hb_arr a,
	int64_t ws_bytes, const int64_t *ops, int nops, const hb_meta *meta);
/* Any other instruction with one array result. */
int64_t hb_op(hb_module *m, const char *name, const char *opcode, hb_arr a,
	const int64_t *ops, int nops, const hb_meta *meta);
int64_t hb_gte(hb_module *m, const char *name, int64_t tuple, int index);
int64_t hb_tuple(hb_module *m, const char *name, const int64_t *ops, int nops);
/* A while loop whose state is the tuple `init` (from hb_tuple) of `n`
 * arrays; body and condition computations are generated. */
int64_t hb_while(hb_module *m, const char *name, int64_t init, const hb_arr *state, int n,
	const hb_meta *meta, const hb_meta *body_meta);
/* The while loop's known trip count, in its backend_config as XLA writes
 * it ({"known_trip_count":{"n":"<n>"}}: jax.lax.scan over n layers). */
void hb_set_trip_count(hb_module *m, int64_t while_id, int64_t n);
/* Set the entry root (a tuple of outputs); must be the last instruction. */
int64_t hb_root_tuple(hb_module *m, const int64_t *ops, int nops);

/* Buffers.  index -1 is the whole value ({}), k >= 0 the tuple element {k}. */
enum { HB_TEMP = 0, HB_PARAM, HB_OUTPUT };
int hb_buffer(hb_module *m, int64_t instr, int index, int role);
/* The buffer of instruction's whole value ({}), or -1. */
int hb_buffer_of(const hb_module *m, int64_t instr);
/* Buffer b reuses the memory of canonical (SHARE_WITH in the trace). */
void hb_share(hb_module *m, int b, int canonical);
/* b lives at least until instruction `instr` (program order). */
void hb_live_until(hb_module *m, int b, int64_t instr);
/* Entry-parameter allocation of parameter buffer b. */
void hb_alloc_param(hb_module *m, int b);
/* A maybe_live_out allocation holding output buffer b (is_tuple for the
 * root tuple's table). */
void hb_alloc_output(hb_module *m, int b);
/* Alias the root's output element out_index with parameter param_no
 * (donation): the parameter allocation becomes maybe_live_out. */
void hb_io_alias(hb_module *m, int out_index, int param_no);
/* Temp placement: first-fit reuse (default) or never reuse memory. */
void hb_set_bump_placement(hb_module *m, int on);

typedef struct hb_stats {
	int64_t temp_extent;   /* highest offset + size of the placed temp buffers */
	int64_t sim_peak;      /* peak of the generated trace */
	int64_t n_instructions;
	int64_t need;      /* parameter + output allocations + the temp block */
	int64_t heap_peak; /* sim_peak + parameter and output allocations */
} hb_stats;

/* Encode the HloProto; the temp allocation gets temp_size bytes (0: the
 * placement's extent).  Aborts if temp_size is below the extent. */
void hb_encode(hb_module *m, int64_t temp_size, xpf_buf *out, hb_stats *st);

/* Allocations the runtime creates per execution (not parameters, not
 * constants), in index order. */
typedef struct hb_rt_alloc {
	int64_t bytes;
	int is_result; /* a maybe_live_out array handed to the caller */
	int output_index; /* element of the root tuple, for results */
	char shape[96];
} hb_rt_alloc;
int hb_runtime_allocs(const hb_module *m, hb_rt_alloc *out, int max);
/* Top-level instructions that launch work (thunks), in schedule order. */
int hb_thunks(const hb_module *m, const char **names, int max);

#endif
