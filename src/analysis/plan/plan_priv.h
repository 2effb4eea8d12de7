/* Internals shared by the plan's source files (plan*.c); not for other
 * modules. */
#ifndef XPF_PLAN_PRIV_H
#define XPF_PLAN_PRIV_H

#include <stdarg.h>

#include "analysis/plan/plan.h"
#include "common/buf.h"
#include "common/intern.h"

/* Everything a plan allocates hangs off its arena and goes in one free. */
typedef struct xpf_arena {
	void **ptrs;
	size_t n, cap;
} xpf_arena;

void *xpf_arena_alloc(xpf_arena *a, size_t n); /* zeroed; aborts on OOM */
void *xpf_arena_array(xpf_arena *a, size_t n, size_t size);
char *xpf_arena_buf(xpf_arena *a, xpf_buf *b); /* takes b's bytes */
void xpf_arena_release(xpf_arena *a);

/* Shapes (plan_shape.c). */
const char *xpf_dtype_name(int element_type); /* "f32"; "?" if unknown */
/* Bytes of one element before packing (reference §3.9 table); 0 if none. */
unsigned xpf_dtype_bits(int element_type);
/* "f32[8,128]{1,0}", tuples "(f32[8], s32[])" (with layout iff with_layout). */
void xpf_shape_text(const Xla__ShapeProto *s, bool with_layout, xpf_buf *out);
/* The sub-shape at a shape index, walking every level; NULL if it does not
 * exist. */
const Xla__ShapeProto *xpf_shape_at(const Xla__ShapeProto *s, const int64_t *index, size_t n);
/* ShapeUtil::ByteSizeOf with the default layout and 8-byte pointers, packed
 * sub-byte arrays when element_size_in_bits is set.  Saturates. */
uint64_t xpf_shape_bytes(const Xla__ShapeProto *s);
uint64_t xpf_shape_elements(const Xla__ShapeProto *s);
/* Same element type and dimensions (layouts ignored). */
bool xpf_shape_same(const Xla__ShapeProto *a, const Xla__ShapeProto *b);
bool xpf_layout_same(const Xla__ShapeProto *a, const Xla__ShapeProto *b);
/* An array (not a tuple, token, opaque or buffer); false for NULL. */
bool xpf_shape_is_array(const Xla__ShapeProto *s);
/* Orders arrays by element type, then dimensions: 0 iff xpf_shape_same. */
int xpf_shape_cmp(const Xla__ShapeProto *a, const Xla__ShapeProto *b);
/* "" or "{0,1}" */
const char *xpf_index_text(xpf_arena *a, const int64_t *index, size_t n);

/* Sorted (key, index) pairs: lookups by id or name in log time, and the
 * key beside the index so that sorting needs no context. */
typedef struct id_ix {
	int64_t id;
	size_t i;
} id_ix;

typedef struct name_ix {
	const char *name;
	size_t i;
} name_ix;

/* What a plan keeps beside its public fields (p->priv). */
typedef struct plan_priv {
	xpf_arena arena;
	xpf_intern *strings;    /* names, shapes, sources: each once */
	id_ix *instr_by_id;     /* instrs, by id */
	name_ix *instr_by_name; /* instrs, by name (NULL until first asked:
				   only captures from before 2022-07 name
				   instructions in their buffer assignment) */
	id_ix *buffer_by_id;    /* buffers, by id */
} plan_priv;

/* The indexes (plan_index.c), built once the arrays are filled. */
id_ix *xpf_plan_index_instr_ids(const xpf_plan *p, xpf_arena *a);
name_ix *xpf_plan_index_instr_names(const xpf_plan *p, xpf_arena *a);
id_ix *xpf_plan_index_buffer_ids(const xpf_plan *p, size_t n, xpf_arena *a);
/* The first instruction of that name, or NULL (the index by name built
 * in a on the first call). */
const xpf_plan_instr *xpf_plan_instr_by_name(xpf_plan *p, xpf_arena *a, const char *name);

/* Orders p->params: by number, then shape index (a qsort comparator). */
int xpf_plan_cmp_param(const void *a, const void *b);

/* s kept by the plan (one copy of each string). */
const char *xpf_plan_str(xpf_plan *p, const char *s);

/* What the build reads from the HloProto besides what the plan keeps: the
 * module in parts and where each instruction sits in it.  The computations
 * read again after the first pass (those holding the instructions that
 * define buffers, and what the duplicates trace) stay unpacked until the
 * build ends; the others are never whole in memory at once. */
typedef struct plan_src {
	const xpf_plan *p;
	xpf_hlo *hlo;
	const Xla__HloModuleProto *mod; /* the head's: no computations */
	const Xla__BufferAssignmentProto *ba;
	uint32_t *comp, *pos;                 /* by instruction: computation, index in it */
	size_t ncomps;                        /* computations, module order: */
	int64_t *comp_id, *root_id;           /* their ids and root_ids */
	const Xla__ShapeProto **buffer_shape; /* by buffer: at its shape index */
} plan_src;

/* The instruction's proto (its computation unpacked again if need be). */
const Xla__HloInstructionProto *xpf_plan_proto(plan_src *s, const xpf_plan_instr *in);
/* A parameter leaf's shape: the parameter instruction's at the
 * allocation's shape index, else its largest buffer's; NULL if none. */
const Xla__ShapeProto *xpf_plan_param_shape(plan_src *s, const xpf_plan_param *x);

/* Stages of xpf_plan_build, in order (plan.c runs them). */
/* plan_assign.c, after the instructions: buffers, allocations, parameters
 * and outputs. */
void xpf_plan_assignment(xpf_plan *p, plan_src *s, xpf_arena *a);
/* plan_heap.c: the heap simulation and what is live at its peak. */
int xpf_plan_simulate(xpf_plan *p, const Xla__BufferAssignmentProto *ba, xpf_arena *a,
		      xpf_error *err);
/* plan_roles.c: the role of each buffer live at the peak, the peak sorted. */
void xpf_plan_peak_roles(xpf_plan *p);
enum xpf_role xpf_plan_role_of(const xpf_plan *p, const xpf_plan_buffer *b, enum xpf_kind kind);
/* plan_dups.c: copies of the parameters (layout, dtype). */
void xpf_plan_find_dups(xpf_plan *p, plan_src *s, xpf_arena *a);

#endif
