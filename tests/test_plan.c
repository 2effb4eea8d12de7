/* The plan (issue 4): a hand-built HloProto whose every figure is worked out
 * by hand below, and the real captures of ../shared/captures (figures from
 * its README, read there with an independent decoder), where every module's
 * plan must also pass the invariants of SPEC §4.1/§4.2. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "analysis/plan/plan.h"
#include "tree/report.h"
#include "capture/capture.h"
#include "capture/input.h"
#include "common/buf.h"
#include "jax_h200.h"
#include "test_group.h"
#include "test_util.h"

/* ---- a small allocator for hand-built protos -------------------------- */

static void *mem[4096];
static size_t nmem;

static void *zalloc(size_t n)
{
	void *p = calloc(1, n);
	assert_non_null(p);
	assert_true(nmem < sizeof mem / sizeof mem[0]);
	mem[nmem++] = p;
	return p;
}

static void free_all(void)
{
	while (nmem)
		free(mem[--nmem]);
}

static int64_t *ints(size_t n, const int64_t *v)
{
	int64_t *p = zalloc((n ? n : 1) * sizeof *p);
	if (n)
		memcpy(p, v, n * sizeof *p);
	return p;
}

static Xla__ShapeProto *array(int type, size_t ndims, const int64_t *dims, int64_t bits)
{
	Xla__ShapeProto *s = zalloc(sizeof *s);
	xla__shape_proto__init(s);
	s->element_type = type;
	s->n_dimensions = ndims;
	s->dimensions = ints(ndims, dims);
	Xla__LayoutProto *l = zalloc(sizeof *l);
	xla__layout_proto__init(l);
	l->n_minor_to_major = ndims;
	l->minor_to_major = zalloc((ndims ? ndims : 1) * sizeof(int64_t));
	for (size_t i = 0; i < ndims; i++)
		l->minor_to_major[i] = (int64_t)(ndims - 1 - i);
	l->element_size_in_bits = bits;
	s->layout = l;
	return s;
}

static Xla__ShapeProto *tuple2(Xla__ShapeProto *a, Xla__ShapeProto *b)
{
	Xla__ShapeProto *s = zalloc(sizeof *s);
	xla__shape_proto__init(s);
	s->element_type = XLA__PRIMITIVE_TYPE__TUPLE;
	s->n_tuple_shapes = 2;
	s->tuple_shapes = zalloc(2 * sizeof *s->tuple_shapes);
	s->tuple_shapes[0] = a;
	s->tuple_shapes[1] = b;
	return s;
}

static Xla__HloInstructionProto *instr(int64_t id, const char *name, const char *opcode,
				       Xla__ShapeProto *shape, const char *op_name,
				       size_t nops, const int64_t *ops)
{
	Xla__HloInstructionProto *in = zalloc(sizeof *in);
	xla__hlo_instruction_proto__init(in);
	in->id = id;
	in->name = (char *)name;
	in->opcode = (char *)opcode;
	in->shape = shape;
	in->n_operand_ids = nops;
	in->operand_ids = ints(nops, ops);
	Xla__OpMetadata *md = zalloc(sizeof *md);
	xla__op_metadata__init(md);
	md->op_name = (char *)(op_name ? op_name : "");
	in->metadata = md;
	return in;
}

static Xla__LogicalBufferProto *lbuf(int64_t id, int64_t size, int64_t instr_id,
				     const char *instr_name, int64_t index)
{
	Xla__LogicalBufferProto *b = zalloc(sizeof *b);
	xla__logical_buffer_proto__init(b);
	b->id = id;
	b->size = size;
	Xla__LogicalBufferProto__Location *l = zalloc(sizeof *l);
	xla__logical_buffer_proto__location__init(l);
	l->instruction_id = instr_id;
	l->instruction_name = (char *)(instr_name ? instr_name : "");
	if (index >= 0) {
		l->n_shape_index = 1;
		l->shape_index = ints(1, &index);
	}
	b->defined_at = l;
	return b;
}

static Xla__BufferAllocationProto *alloc(int64_t index, int64_t size, size_t n,
					 const int64_t *bufs, const int64_t *offsets)
{
	Xla__BufferAllocationProto *a = zalloc(sizeof *a);
	xla__buffer_allocation_proto__init(a);
	a->index = index;
	a->size = size;
	a->n_assigned = n;
	a->assigned = zalloc((n ? n : 1) * sizeof *a->assigned);
	for (size_t i = 0; i < n; i++) {
		a->assigned[i] = zalloc(sizeof **a->assigned);
		xla__buffer_allocation_proto__assigned__init(a->assigned[i]);
		a->assigned[i]->logical_buffer_id = bufs[i];
		a->assigned[i]->offset = offsets ? offsets[i] : 0;
	}
	return a;
}

static Xla__HeapSimulatorTrace__Event *event(int kind, int64_t buf, int64_t share, const char *in)
{
	Xla__HeapSimulatorTrace__Event *e = zalloc(sizeof *e);
	xla__heap_simulator_trace__event__init(e);
	e->kind = kind;
	e->buffer_id = buf;
	e->share_with_canonical_id = share;
	e->instruction_name = (char *)in;
	return e;
}

#define E(i) (((int64_t)2 << 32) | (i))  /* new-generation ids: computation 2 */
#define F(i) (((int64_t)1 << 32) | (i))  /* computation 1 (a fusion body) */
#define ALLOC XLA__HEAP_SIMULATOR_TRACE__EVENT__KIND__ALLOC
#define FREE XLA__HEAP_SIMULATOR_TRACE__EVENT__KIND__FREE
#define SHARE XLA__HEAP_SIMULATOR_TRACE__EVENT__KIND__SHARE_WITH

/* The module, by hand:
 *   p0 = f32[1024,512] parameter(0)           donated (input_output_alias)
 *   p1 = s4[100]{0:E(4)} parameter(1)          64 bytes padded, 50 unpadded
 *   t  = f32[512,1024] fusion(p0), calls a transpose   "jvp(" -> forward
 *   c  = bf16[1024,512] convert(p0), named "convert.1.remat", located by the
 *        deprecated instruction_name                    "transpose(" -> backward
 *   ws = (f32[1024], s8[4096]) custom-call(p1)          s8 part -> workspace
 *   root = (f32[512,1024], bf16[1024,512]) tuple(t, c)   16-byte output tuple
 * Temp trace (4,000,000-byte block):
 *   0 ALLOC t 2097152, 1 ALLOC ws{0} 4096, 2 FREE ws{0}, 3 ALLOC c 1048576,
 *   4 SHARE_WITH ws{1} -> ws{0} (re-adds 4096: peak 3149824), 5.. FREEs. */
static Xla__HloProto *hand_module(void)
{
	int64_t d1[] = { 1024, 512 }, d2[] = { 512, 1024 }, d3[] = { 100 }, d4[] = { 1024 },
		d5[] = { 4096 };
	Xla__HloComputationProto *fused = zalloc(sizeof *fused), *entry = zalloc(sizeof *entry);
	xla__hlo_computation_proto__init(fused);
	xla__hlo_computation_proto__init(entry);
	fused->id = 1;
	fused->name = "fused_transpose";
	fused->is_fusion_computation = 1;
	fused->n_instructions = 2;
	fused->instructions = zalloc(2 * sizeof(void *));
	fused->instructions[0] = instr(F(1), "param_0", "parameter",
				       array(XLA__PRIMITIVE_TYPE__F32, 2, d1, 0), NULL, 0, NULL);
	int64_t fo[] = { F(1) };
	fused->instructions[1] = instr(F(2), "transpose.3", "transpose",
				       array(XLA__PRIMITIVE_TYPE__F32, 2, d2, 0), NULL, 1, fo);
	fused->root_id = F(2);

	entry->id = 2;
	entry->name = "main.9";
	entry->n_instructions = 6;
	entry->instructions = zalloc(6 * sizeof(void *));
	Xla__HloInstructionProto **ei = entry->instructions;
	ei[0] = instr(E(1), "p0", "parameter", array(XLA__PRIMITIVE_TYPE__F32, 2, d1, 0), "w", 0, NULL);
	ei[0]->parameter_number = 0;
	ei[1] = instr(E(2), "p1", "parameter", array(XLA__PRIMITIVE_TYPE__S4, 1, d3, 4), "q", 0, NULL);
	ei[1]->parameter_number = 1;
	int64_t op0[] = { E(1) }, op1[] = { E(2) }, op2[] = { E(3), E(4) };
	ei[2] = instr(E(3), "wrapped_transpose.5", "fusion", array(XLA__PRIMITIVE_TYPE__F32, 2, d2, 0),
		      "jit(f)/jvp(dense)/transpose", 1, op0);
	int64_t called = 1;
	ei[2]->n_called_computation_ids = 1;
	ei[2]->called_computation_ids = ints(1, &called);
	ei[2]->fusion_kind = "kLoop";
	ei[3] = instr(E(4), "convert.1.remat", "convert", array(XLA__PRIMITIVE_TYPE__BF16, 2, d1, 0),
		      "jit(f)/transpose(jvp(dense))/convert_element_type", 1, op0);
	ei[4] = instr(E(5), "cublas-gemm.1", "custom-call",
		      tuple2(array(XLA__PRIMITIVE_TYPE__F32, 1, d4, 0),
			     array(XLA__PRIMITIVE_TYPE__S8, 1, d5, 0)), "jit(f)/dot_general", 1, op1);
	ei[5] = instr(E(6), "tuple.7", "tuple",
		      tuple2(array(XLA__PRIMITIVE_TYPE__F32, 2, d2, 0),
			     array(XLA__PRIMITIVE_TYPE__BF16, 2, d1, 0)), NULL, 2, op2);
	entry->root_id = E(6);

	Xla__HloModuleProto *mod = zalloc(sizeof *mod);
	xla__hlo_module_proto__init(mod);
	/* sources: the transpose only through a stack frame (current JAX), the
	 * convert through source_file/source_line (older JAX) */
	Xla__StackFrameIndexProto *sf = zalloc(sizeof *sf);
	xla__stack_frame_index_proto__init(sf);
	static char *files[] = { "model.py", "train.py" };
	sf->n_file_names = 2;
	sf->file_names = files;
	Xla__StackFrameIndexProto__FileLocation *fl = zalloc(sizeof *fl);
	xla__stack_frame_index_proto__file_location__init(fl);
	fl->file_name_id = 2;
	fl->line = 31;
	fl->column = 7;
	sf->n_file_locations = 1;
	sf->file_locations = zalloc(sizeof(void *));
	sf->file_locations[0] = fl;
	Xla__StackFrameIndexProto__StackFrame *fr = zalloc(sizeof *fr);
	xla__stack_frame_index_proto__stack_frame__init(fr);
	fr->file_location_id = 1;
	sf->n_stack_frames = 1;
	sf->stack_frames = zalloc(sizeof(void *));
	sf->stack_frames[0] = fr;
	mod->stack_frame_index = sf;
	ei[2]->metadata->stack_frame_id = 1;
	ei[3]->metadata->source_file = "model.py";
	ei[3]->metadata->source_line = 12;
	mod->name = "jit_f";
	mod->entry_computation_name = "main.9";
	mod->entry_computation_id = 2;
	mod->n_computations = 2;
	mod->computations = zalloc(2 * sizeof(void *));
	mod->computations[0] = fused;
	mod->computations[1] = entry;
	Xla__HloInputOutputAliasProto *io = zalloc(sizeof *io);
	xla__hlo_input_output_alias_proto__init(io);
	io->n_entries = 1;
	io->entries = zalloc(sizeof(void *));
	io->entries[0] = zalloc(sizeof **io->entries);
	xla__hlo_input_output_alias_proto__alias_entry_proto__init(io->entries[0]);
	io->entries[0]->parameter_number = 0;
	mod->input_output_alias = io;

	Xla__BufferAssignmentProto *ba = zalloc(sizeof *ba);
	xla__buffer_assignment_proto__init(ba);
	ba->n_logical_buffers = 7;
	ba->logical_buffers = zalloc(7 * sizeof(void *));
	ba->logical_buffers[0] = lbuf(10, 2097152, E(1), NULL, -1);
	ba->logical_buffers[1] = lbuf(11, 64, E(2), NULL, -1);
	ba->logical_buffers[2] = lbuf(12, 2097152, E(3), NULL, -1);
	ba->logical_buffers[3] = lbuf(13, 1048576, 0, "convert.1.remat", -1);
	ba->logical_buffers[4] = lbuf(14, 4096, E(5), NULL, 0);
	ba->logical_buffers[5] = lbuf(15, 4096, E(5), NULL, 1);
	ba->logical_buffers[6] = lbuf(16, 16, E(6), NULL, -1);

	ba->n_buffer_allocations = 4;
	ba->buffer_allocations = zalloc(4 * sizeof(void *));
	int64_t b0[] = { 10 }, b1[] = { 11 }, b2[] = { 16 }, b3[] = { 12, 13, 14, 15 },
		o3[] = { 0, 2097152, 3145728, 3145728 };
	Xla__BufferAllocationProto **a = ba->buffer_allocations;
	a[0] = alloc(0, 2097152, 1, b0, NULL);
	a[0]->is_entry_computation_parameter = 1;
	a[0]->parameter_number = 0;
	a[1] = alloc(1, 64, 1, b1, NULL);
	a[1]->is_entry_computation_parameter = 1;
	a[1]->parameter_number = 1;
	a[2] = alloc(2, 16, 1, b2, NULL);
	a[2]->maybe_live_out = 1;
	a[2]->is_tuple = 1;
	a[3] = alloc(3, 4000000, 4, b3, o3);

	Xla__HeapSimulatorTrace *tr = zalloc(sizeof *tr);
	xla__heap_simulator_trace__init(tr);
	tr->n_events = 8;
	tr->events = zalloc(8 * sizeof(void *));
	tr->events[0] = event(ALLOC, 12, 0, "wrapped_transpose.5");
	tr->events[1] = event(ALLOC, 14, 0, "cublas-gemm.1");
	tr->events[2] = event(FREE, 14, 0, "cublas-gemm.1");
	tr->events[3] = event(ALLOC, 13, 0, "convert.1.remat");
	tr->events[4] = event(SHARE, 15, 14, "cublas-gemm.1");
	tr->events[5] = event(FREE, 12, 0, "tuple.7");
	tr->events[6] = event(FREE, 13, 0, "tuple.7");
	tr->events[7] = event(FREE, 15, 0, "tuple.7");
	ba->n_heap_simulator_traces = 1;
	ba->heap_simulator_traces = zalloc(sizeof(void *));
	ba->heap_simulator_traces[0] = tr;

	Xla__HloProto *hlo = zalloc(sizeof *hlo);
	xla__hlo_proto__init(hlo);
	hlo->hlo_module = mod;
	hlo->buffer_assignment = ba;
	return hlo;
}

/* ---- invariants (SPEC §4.1, §4.2) -------------------------------------- */

static void check_invariants(const xpf_plan *p)
{
	if (!p->has_assignment) {
		assert_int_equal(p->npeak, 0);
		assert_true(p->missing[0] != '\0');
		return;
	}
	uint64_t sum = 0, colors = 0, allocs = 0;
	for (int k = 0; k < XPF_NKINDS; k++)
		sum += p->kind_bytes[k];
	for (size_t i = 0; i < p->ncolors; i++)
		colors += p->colors[i].bytes;
	for (size_t i = 0; i < p->nallocs; i++)
		allocs += p->allocs[i].bytes;
	assert_int_equal(sum, p->total_bytes);
	assert_int_equal(colors, p->total_bytes);
	assert_int_equal(allocs, p->total_bytes);
	assert_true(p->heap_peak_bytes <= p->total_bytes);
	assert_int_equal(p->heap_peak_bytes, p->simulated_peak_bytes + p->indefinite_bytes);
	assert_int_equal(p->need_bytes, p->parameters_bytes + p->non_aliased_outputs_bytes +
			 p->temp_bytes + p->constants_bytes);

	uint64_t rows = 0, roles = 0;
	for (size_t i = 0; i < p->npeak; i++) {
		rows += p->peak[i].bytes;
		assert_non_null(p->peak[i].buffer);
		if (p->peak[i].buffer->instr == NULL)
			fail_msg("%s: peak row %zu (buffer %lld) resolves to no instruction",
				 p->module, i + 1, (long long)p->peak[i].buffer->id);
		if (i > 0)
			assert_true(p->peak[i - 1].bytes >= p->peak[i].bytes);
	}
	for (int r = 0; r < XPF_NROLES; r++)
		roles += p->role_bytes[r];
	assert_int_equal(rows, p->heap_peak_bytes);
	assert_int_equal(roles, p->heap_peak_bytes);
	if (p->simulated)
		assert_int_equal(p->peak_position >= 0, p->simulated_peak_bytes > 0);
}

/* ---- the hand-built module --------------------------------------------- */

static void test_hand_module(void **state)
{
	(void)state;
	Xla__HloProto *hlo = hand_module();
	xpf_plan *p = NULL;
	xpf_error err = { 0 };
	assert_int_equal(xpf_plan_build(hlo, "jit_f(7)", 7, &p, &err), XPF_OK);
	check_invariants(p);

	assert_true(p->has_assignment);
	assert_int_equal(p->nallocs, 4);
	assert_int_equal(p->total_bytes, 2097152 + 64 + 16 + 4000000);
	assert_int_equal(p->kind_bytes[XPF_KIND_PARAMETER], 2097216);
	assert_int_equal(p->kind_count[XPF_KIND_PARAMETER], 2);
	assert_int_equal(p->kind_bytes[XPF_KIND_OUTPUT], 16);
	assert_int_equal(p->kind_bytes[XPF_KIND_TEMP], 4000000);
	assert_int_equal(p->parameters_bytes, 2097216);
	assert_int_equal(p->donated_bytes, 2097152);
	assert_int_equal(p->donated_count, 1);
	assert_int_equal(p->outputs_bytes, 16);
	assert_int_equal(p->non_aliased_outputs_bytes, 16);
	assert_int_equal(p->need_bytes, 2097216 + 16 + 4000000);

	/* heap: peak at the SHARE_WITH that re-adds the freed 4096-byte region */
	assert_true(p->simulated);
	assert_int_equal(p->nsteps, 8);
	assert_int_equal(p->simulated_peak_bytes, 2097152 + 1048576 + 4096);
	assert_int_equal(p->peak_position, 4);
	assert_string_equal(p->peak_instruction, "cublas-gemm.1");
	assert_int_equal(p->indefinite_bytes, 2097152 + 64 + 16);
	assert_int_equal(p->heap_peak_bytes, 3149824 + 2097232);
	assert_int_equal(p->fragmentation_bytes, 4000000 - 3149824);
	assert_int_equal(p->steps[4].bytes, 3149824 + 2097232);
	assert_int_equal(p->steps[7].bytes, 2097232);

	/* rows: 3 indefinite allocations + 3 live regions, the shared one shown
	 * as its current occupant (the s8 workspace) */
	assert_int_equal(p->npeak, 6);
	assert_int_equal(p->peak[0].bytes, 2097152);
	assert_int_equal(p->peak[0].role, XPF_PLAN_ROLE_PARAMETER); /* "p0" < "wrapped..." */
	assert_string_equal(p->peak[0].buffer->instr->name, "p0");
	assert_string_equal(p->peak[1].buffer->instr->name, "wrapped_transpose.5");
	assert_int_equal(p->peak[1].role, XPF_PLAN_ROLE_FORWARD);
	assert_string_equal(p->peak[2].buffer->instr->name, "convert.1.remat");
	assert_int_equal(p->peak[2].role, XPF_PLAN_ROLE_BACKWARD);
	assert_int_equal(p->peak[3].bytes, 4096);
	assert_int_equal(p->peak[3].buffer->id, 15);
	assert_string_equal(p->peak[3].buffer->shape_index, "{1}");
	assert_string_equal(p->peak[3].buffer->dtype, "s8");
	assert_int_equal(p->peak[3].role, XPF_PLAN_ROLE_WORKSPACE);
	assert_int_equal(p->peak[4].bytes, 64);
	assert_int_equal(p->peak[4].unpadded_bytes, 50); /* s4 packed: 100 × 4 bits */
	assert_string_equal(p->peak[5].buffer->instr->name, "tuple.7");
	assert_int_equal(p->peak[5].role, XPF_PLAN_ROLE_OUTPUT);
	assert_int_equal(p->role_bytes[XPF_PLAN_ROLE_PARAMETER], 2097216);
	assert_int_equal(p->role_bytes[XPF_PLAN_ROLE_FORWARD], 2097152);
	assert_int_equal(p->role_bytes[XPF_PLAN_ROLE_BACKWARD], 1048576);
	assert_int_equal(p->role_bytes[XPF_PLAN_ROLE_WORKSPACE], 4096);

	/* shapes, unpadded sizes through the whole shape index, sources */
	const xpf_plan_buffer *b = xpf_plan_buffer_by_id(p, 14);
	assert_non_null(b);
	assert_string_equal(b->shape, "f32[1024]{0}");
	assert_int_equal(b->unpadded_bytes, 4096);
	assert_int_equal(b->start, 1);
	assert_int_equal(b->end, 2);
	b = xpf_plan_buffer_by_id(p, 16);
	assert_string_equal(b->shape, "(f32[512,1024]{1,0}, bf16[1024,512]{1,0})");
	assert_int_equal(b->unpadded_bytes, 16);
	b = xpf_plan_buffer_by_id(p, 11);
	assert_string_equal(b->shape, "s4[100]{0:E(4)}");
	assert_int_equal(b->unpadded_bytes, 50);

	assert_string_equal(xpf_plan_instr_by_id(p, E(3))->source, "train.py:31:7");
	assert_string_equal(xpf_plan_instr_by_id(p, E(4))->source, "model.py:12");
	assert_string_equal(xpf_plan_instr_by_id(p, E(5))->source, "");

	assert_int_equal(p->remat_instructions, 1);
	assert_non_null(xpf_plan_instr_by_id(p, E(5)));
	assert_true(xpf_plan_instr_by_id(p, F(2))->in_fusion);
	assert_false(xpf_plan_instr_by_id(p, E(3))->in_fusion);

	/* parameters, outputs, duplicates (reference §10) */
	assert_int_equal(p->nparams, 2);
	assert_int_equal(p->params[0].number, 0);
	assert_true(p->params[0].donated);
	assert_string_equal(p->params[1].dtype, "s4");
	assert_int_equal(p->noutputs, 1);
	assert_null(p->outputs[0].matches);
	assert_int_equal(p->ndups, 2);
	assert_int_equal(p->layout_dup_peak_bytes, 2097152);
	assert_int_equal(p->convert_dup_peak_bytes, 1048576);
	for (size_t i = 0; i < p->ndups; i++) {
		assert_int_equal(p->dups[i].param->number, 0);
		assert_true(p->dups[i].at_peak);
	}
	xpf_plan_free(p);
	free_all();
}

static void test_no_assignment(void **state)
{
	(void)state;
	Xla__HloProto *hlo = hand_module();
	hlo->buffer_assignment = NULL;
	xpf_plan *p = NULL;
	xpf_error err = { 0 };
	assert_int_equal(xpf_plan_build(hlo, "jit_f(7)", 7, &p, &err), XPF_OK);
	assert_false(p->has_assignment);
	assert_int_equal(p->ninstrs, 8);
	assert_int_equal(p->remat_instructions, 1);
	check_invariants(p);
	xpf_plan_free(p);
	free_all();
}

/* The files of a module without buffer assignment say so in a sentence. */
static void test_no_assignment_files(void **state)
{
	(void)state;
	static const xpf_options opt = XPF_OPTIONS_INIT;
	Xla__HloProto *hlo = hand_module();
	hlo->buffer_assignment = NULL;
	size_t len = xla__hlo_proto__get_packed_size(hlo);
	uint8_t *bytes = malloc(len);
	assert_non_null(bytes);
	xla__hlo_proto__pack(hlo, bytes);
	char path[] = "/tmp/xpf-test-plan-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, bytes, len), (ssize_t)len);
	close(fd);
	free(bytes);
	char hlo_path[64];
	snprintf(hlo_path, sizeof hlo_path, "%s.hlo.pb", path);
	assert_int_equal(rename(path, hlo_path), 0);

	xpf_input *in = NULL;
	xpf_report *r = NULL;
	xpf_error err = { 0 };
	if (xpf_input_open(hlo_path, NULL, &in, &err) != XPF_OK ||
	    xpf_report_open(in, &opt, &r, &err) != XPF_OK)
		fail_msg("%s", err.msg);
	static const char *const files[] = {
		"peak_buffers.tsv", "buffers.tsv", "allocations.tsv", "heap.tsv", "by_source.tsv",
	};
	xpf_host *h = xpf_report_host(r, 0);
	assert_int_equal(h->nmodules, 1);
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		char rel[512];
		xpf_node *n = NULL;
		const char *data;
		size_t dlen;
		snprintf(rel, sizeof rel, "modules/%s/%s", h->module_dirs[0], files[i]);
		assert_int_equal(xpf_report_resolve(r, rel, &n, &err), XPF_OK);
		assert_non_null(n);
		assert_int_equal(xpf_node_content(n, &data, &dlen, &err), XPF_OK);
		/* The header line and no rows: summary.txt says why. */
		assert_true(dlen > 0 && memchr(data, '\n', dlen) == data + dlen - 1);
		assert_non_null(strstr(data, "\tbytes\t"));
	}
	{
		xpf_node *sn = NULL;
		const char *sd;
		size_t sl;
		char srel[512];
		snprintf(srel, sizeof srel, "modules/%s/summary.txt", h->module_dirs[0]);
		assert_int_equal(xpf_report_resolve(r, srel, &sn, &err), XPF_OK);
		assert_int_equal(xpf_node_content(sn, &sd, &sl, &err), XPF_OK);
		assert_non_null(strstr(sd, "no buffer assignment"));
	}
	char rel[512];
	xpf_node *n = NULL;
	const char *data;
	size_t dlen;
	snprintf(rel, sizeof rel, "modules/%s/instructions.tsv", h->module_dirs[0]);
	assert_int_equal(xpf_report_resolve(r, rel, &n, &err), XPF_OK);
	assert_int_equal(xpf_node_content(n, &data, &dlen, &err), XPF_OK);
	assert_non_null(strstr(data, "main.9\t8589934595\twrapped_transpose.5\tfusion"));
	snprintf(rel, sizeof rel, "modules/%s/plan.json", h->module_dirs[0]);
	assert_int_equal(xpf_report_resolve(r, rel, &n, &err), XPF_OK);
	assert_int_equal(xpf_node_content(n, &data, &dlen, &err), XPF_OK);
	json_error_t je;
	json_t *doc = json_loadb(data, dlen, 0, &je);
	assert_non_null(doc);
	assert_true(json_is_false(json_object_get(doc, "buffer_assignment")));
	assert_int_equal(json_integer_value(json_object_get(doc, "remat_instructions")), 1);
	json_decref(doc);
	xpf_report_free(r);
	xpf_input_free(in);
	unlink(hlo_path);
	free_all();
}

/* ---- real captures ----------------------------------------------------- */



typedef struct opened {
	xpf_input *in;
	xpf_report *r;
	xpf_host *h;
} opened;

static void open_or_skip(const char *rel, opened *o)
{
	static const xpf_options opt = XPF_OPTIONS_INIT;
	const char *p = xpf_t_capture(rel);
	xpf_error err = { 0 };
	if (p == NULL)
		skip();
	if (xpf_input_open(p, NULL, &o->in, &err) != XPF_OK)
		fail_msg("%s", err.msg);
	if (xpf_report_open(o->in, &opt, &o->r, &err) != XPF_OK)
		fail_msg("%s", err.msg);
	o->h = xpf_report_host(o->r, 0);
}

static void close_opened(opened *o)
{
	xpf_report_free(o->r);
	xpf_input_free(o->in);
}

static const xpf_plan *plan_named(opened *o, const char *name)
{
	xpf_error err = { 0 };
	for (size_t m = 0; m < o->h->nmodules; m++) {
		if (strcmp(xpf_capture_module(o->h->cap, m)->name, name) != 0)
			continue;
		const xpf_plan *p = NULL;
		if (xpf_host_plan(o->h, m, &p, &err) != XPF_OK)
			fail_msg("%s: %s", name, err.msg);
		return p;
	}
	fail_msg("module %s not found", name);
	return NULL;
}

/* Every module passes the invariants; returns how many have assignment. */
static size_t check_all(opened *o)
{
	size_t with = 0;
	for (size_t m = 0; m < o->h->nmodules; m++) {
		const xpf_plan *p = NULL;
		xpf_error err = { 0 };
		if (xpf_host_plan(o->h, m, &p, &err) != XPF_OK)
			fail_msg("module %zu: %s", m, err.msg);
		check_invariants(p);
		with += p->has_assignment;
	}
	return with;
}

static void test_attention(void **state)
{
	(void)state;
	opened o;
	open_or_skip("mi300x-jax08-attention.xplane.pb", &o);
	assert_int_equal(o.h->nmodules, 31);
	assert_int_equal(check_all(&o), 31);
	const xpf_plan *p = plan_named(&o, "jit_matmul(59)");
	assert_int_equal(p->nallocs, 7);
	assert_int_equal(p->total_bytes, 201326604);
	close_opened(&o);
}

static void test_gemm(void **state)
{
	(void)state;
	opened o;
	open_or_skip("mi300x-jax08-gemm.xplane.pb", &o);
	assert_int_equal(check_all(&o), 16);
	close_opened(&o);
}

static void test_conv_run(void **state)
{
	(void)state;
	static const uint64_t sizes[] = { 572026880, 6389760, 655360, 579072128 };
	opened o;
	open_or_skip("mi300x-conv-run", &o);
	assert_int_equal(check_all(&o), 8);
	const xpf_plan *p = plan_named(&o, "jit_forward_3d_conv(15)");
	assert_int_equal(p->nallocs, 4);
	assert_int_equal(p->nbuffers, 8);
	assert_int_equal(p->total_bytes, 1158144128);
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(p->allocs[i].bytes, sizes[i]);

	/* each sidecar is the same module: the same plan */
	const char *dir = xpf_t_capture("mi300x-conv-run");
	char dirpath[4096];
	snprintf(dirpath, sizeof dirpath, "%s", dir);
	DIR *d = opendir(dirpath);
	assert_non_null(d);
	struct dirent *de;
	size_t sidecars = 0;
	while ((de = readdir(d)) != NULL) {
		size_t n = strlen(de->d_name);
		if (n < 13 || strcmp(de->d_name + n - 13, ".hlo_proto.pb") != 0)
			continue;
		char path[8192];
		snprintf(path, sizeof path, "%s/%s", dirpath, de->d_name);
		xpf_capture *c = NULL;
		xpf_error err = { 0 };
		xpf_hlo *hlo = NULL;
		xpf_plan *sp = NULL;
		assert_int_equal(xpf_capture_open_hlo(path, &c, &err), XPF_OK);
		assert_int_equal(xpf_capture_module_hlo(c, 0, &hlo, &err), XPF_OK);
		assert_int_equal(xpf_plan_build_parts(hlo, de->d_name, 0, &sp, &err), XPF_OK);
		xpf_hlo_free(hlo);
		check_invariants(sp);
		assert_true(sp->has_assignment);
		/* "jit_forward_3d_conv_15_.hlo_proto.pb" -> "jit_forward_3d_conv(15)" */
		char name[512];
		snprintf(name, sizeof name, "%.*s", (int)(n - 14), de->d_name);
		char *us = strrchr(name, '_');
		assert_non_null(us);
		*us = '(';
		strcat(name, ")");
		const xpf_plan *xp = plan_named(&o, name);
		assert_int_equal(sp->total_bytes, xp->total_bytes);
		assert_int_equal(sp->nallocs, xp->nallocs);
		assert_int_equal(sp->heap_peak_bytes, xp->heap_peak_bytes);
		assert_int_equal(sp->need_bytes, xp->need_bytes);
		xpf_plan_free(sp);
		xpf_capture_free(c);
		sidecars++;
	}
	closedir(d);
	assert_int_equal(sidecars, 8);
	close_opened(&o);
}

static void test_tpu(void **state)
{
	(void)state;
	opened o;
	open_or_skip("tpu-v6e-inference.xplane.pb", &o);
	assert_int_equal(check_all(&o), 4);
	const xpf_plan *p = plan_named(&o, "jit_f(12190760917235803885)");
	assert_int_equal(p->program_id, 12190760917235803885ull);
	uint64_t c0 = 0, c5 = 0;
	bool c1 = false, c2 = false;
	for (size_t i = 0; i < p->ncolors; i++) {
		if (p->colors[i].color == 0)
			c0 = p->colors[i].bytes;
		if (p->colors[i].color == 5)
			c5 = p->colors[i].bytes;
		c1 |= p->colors[i].color == 1;
		c2 |= p->colors[i].color == 2;
	}
	assert_int_equal(c0, 21474934816ull);
	assert_int_equal(c5, 16106127360ull);
	assert_true(c1 && c2);
	assert_int_equal(p->host_bytes, 16106127360ull);
	close_opened(&o);
}

static void test_tf_no_hlo(void **state)
{
	(void)state;
	opened o;
	open_or_skip("tf-v100-multiworker.xplane.pb", &o);
	assert_int_equal(o.h->nmodules, 0);
	close_opened(&o);
}

static void test_maxtext(void **state)
{
	(void)state;
	opened o;
	open_or_skip("hlo/h100-maxtext-jit_train_step.hlo.pb", &o);
	assert_int_equal(o.h->nmodules, 1);
	assert_int_equal(check_all(&o), 1);
	const xpf_plan *p = NULL;
	xpf_error err = { 0 };
	assert_int_equal(xpf_host_plan(o.h, 0, &p, &err), XPF_OK);
	assert_int_equal(p->nallocs, 202);
	assert_int_equal(p->nbuffers, 1732);
	assert_true(p->simulated);
	close_opened(&o);
}

/* ---- scenario captures (tests/scenarios/<name>.json) -------------------- */

static uint64_t jnum(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_integer(v))
		fail_msg("scenario figure %s is not an integer", key);
	return (uint64_t)json_integer_value(v);
}

/* Strip the layout: "f32[8,8]{1,0}" -> "f32[8,8]". */
static bool same_dims(const char *shape, const char *want)
{
	size_t n = strcspn(shape, "{");
	return strlen(want) == n && strncmp(shape, want, n) == 0;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* One host of a scenario capture against the "plan" section. */
static void check_scenario_host(const char *name, json_t *want, opened o)
{
	char hb[32], pc[32];
	assert_true(check_all(&o) > 0);
	const xpf_plan *p = plan_named(&o, json_string_value(json_object_get(want, "module")));
	char id[32];
	snprintf(id, sizeof id, "%llu", (unsigned long long)p->program_id);
	assert_string_equal(id, json_string_value(json_object_get(want, "program_id")));

	static const struct {
		const char *key;
		size_t off;
		bool is_size;
	} figs[] = {
#define FIG(k, f) { k, offsetof(xpf_plan, f), false }
#define CNT(k, f) { k, offsetof(xpf_plan, f), true }
		FIG("parameters_bytes", parameters_bytes), CNT("parameters_count", parameters_count),
		FIG("donated_bytes", donated_bytes), CNT("donated_count", donated_count),
		FIG("outputs_bytes", outputs_bytes),
		FIG("non_aliased_outputs_bytes", non_aliased_outputs_bytes),
		FIG("outputs_matching_parameters_bytes", matching_output_bytes),
		FIG("constants_bytes", constants_bytes), FIG("temp_bytes", temp_bytes),
		FIG("simulated_peak_bytes", simulated_peak_bytes),
		FIG("fragmentation_bytes", fragmentation_bytes),
		FIG("heap_peak_bytes", heap_peak_bytes), FIG("need_bytes", need_bytes),
		CNT("remat_instructions", remat_instructions), CNT("peak_buffers", npeak),
#undef FIG
#undef CNT
	};
	size_t checked = 0;
	for (size_t i = 0; i < sizeof figs / sizeof figs[0]; i++) {
		if (json_object_get(want, figs[i].key) == NULL)
			continue;
		const char *base = (const char *)p + figs[i].off;
		uint64_t got = figs[i].is_size ? *(const size_t *)base : *(const uint64_t *)base;
		if (got != jnum(want, figs[i].key))
			fail_msg("%s: %s = %llu, the scenario says %llu", name, figs[i].key,
				 (unsigned long long)got, (unsigned long long)jnum(want, figs[i].key));
		checked++;
	}
	assert_true(checked >= 5);

	json_t *roles = json_object_get(want, "roles_bytes");
	for (int k = 0; roles && k < XPF_NROLES; k++)
		if (p->role_bytes[k] != jnum(roles, xpf_role_name(k)))
			fail_msg("%s: role %s = %llu, the scenario says %llu", name, xpf_role_name(k),
				 (unsigned long long)p->role_bytes[k],
				 (unsigned long long)jnum(roles, xpf_role_name(k)));
	json_t *fp = json_object_get(want, "forward_pct");
	if (fp)
		assert_string_equal(xpf_pct(p->role_bytes[XPF_PLAN_ROLE_FORWARD], p->heap_peak_bytes, pc),
				    json_string_value(fp));
	json_t *human = json_object_get(want, "human");
	if (json_object_get(human, "need"))
		assert_string_equal(xpf_human(p->need_bytes, hb),
				    json_string_value(json_object_get(human, "need")));
	if (json_object_get(human, "temp"))
		assert_string_equal(xpf_human(p->temp_bytes, hb),
				    json_string_value(json_object_get(human, "temp")));
	json_t *ps = json_object_get(want, "peak_shape");
	if (ps) {
		const char *shape = json_string_value(json_object_get(ps, "shape"));
		const char *src = json_string_value(json_object_get(ps, "source"));
		size_t n = 0;
		for (size_t i = 0; i < p->npeak; i++) {
			const xpf_plan_buffer *b = p->peak[i].buffer;
			if (same_dims(b->shape, shape) && (!src || ends_with(b->instr->source, src)))
				n++;
		}
		assert_int_equal(n, jnum(ps, "count"));
	}
}

/* A scenario capture (a file, or a run directory of nhosts hosts, each
 * running the module of the "plan" section) against that section. */
static void check_scenario(const char *name, json_t *want, const char *capture, size_t nhosts)
{
	static const xpf_options opt = XPF_OPTIONS_INIT;
	xpf_input *in = NULL;
	xpf_report *r = NULL;
	xpf_error err = { 0 };
	if (xpf_input_open(capture, NULL, &in, &err) != XPF_OK ||
	    xpf_report_open(in, &opt, &r, &err) != XPF_OK)
		fail_msg("%s: %s", name, err.msg);
	assert_int_equal(xpf_report_nhosts(r), nhosts ? nhosts : 1);
	for (size_t i = 0; i < xpf_report_nhosts(r); i++) {
		opened o = { in, r, xpf_report_host(r, i) };
		check_scenario_host(name, want, o);
	}
	xpf_report_free(r);
	xpf_input_free(in);
}

/* The biggest module of a jax-h200 capture (by need): its step. */
static const xpf_plan *h200_step(opened *o, const char *name)
{
	static const xpf_options opt = XPF_OPTIONS_INIT;
	xpf_error err = { 0 };
	const char *path = xpf_h200(name);
	if (path == NULL)
		skip();
	if (xpf_input_open(path, NULL, &o->in, &err) != XPF_OK ||
	    xpf_report_open(o->in, &opt, &o->r, &err) != XPF_OK)
		fail_msg("%s: %s", path, err.msg);
	o->h = xpf_report_host(o->r, 0);
	const xpf_plan *best = NULL;
	for (size_t m = 0; m < o->h->nmodules; m++) {
		const xpf_plan *p = NULL;
		if (xpf_host_plan(o->h, m, &p, &err) != XPF_OK)
			fail_msg("%s: %s", name, err.msg);
		if (best == NULL || p->need_bytes > best->need_bytes)
			best = p;
	}
	assert_non_null(best);
	return best;
}

/* jax.lax.scan over 4 layers (jax-h200/scen.py; README: "stacked over the
 * 4 scanned layers"): the forward and the backward while loop of
 * attn-scan each carry their known trip count, 4, and nothing else does;
 * attn runs the same layers in a Python loop: no while at all.  The plans
 * are the steps XLA measured (facts.json's peak_memory_in_bytes). */
static void test_h200_trip_count(void **state)
{
	(void)state;
	opened o;
	const xpf_plan *p = h200_step(&o, "attn-scan");
	assert_int_equal(p->heap_peak_bytes, /* thread-local bytes apart, as XLA */
			 xpf_h200_fact("attn-scan", "peak_memory_in_bytes"));
	size_t whiles = 0;
	for (size_t i = 0; i < p->ninstrs; i++) {
		bool w = strcmp(p->instrs[i].opcode, "while") == 0;
		assert_int_equal(p->instrs[i].trip_count, w ? 4 : 0);
		whiles += w;
	}
	assert_int_equal(whiles, 2);
	close_opened(&o);
	p = h200_step(&o, "attn");
	for (size_t i = 0; i < p->ninstrs; i++)
		assert_string_not_equal(p->instrs[i].opcode, "while");
	close_opened(&o);
}

static void test_scenarios(void **state)
{
	(void)state;
	const char *build = getenv("XPF_BUILD"), *source = getenv("XPF_SOURCE");
	char gen[4096], dir[4096];
	if (build == NULL || source == NULL)
		skip();
	snprintf(gen, sizeof gen, "%s/tests/mkcapture/xplane-mkcapture", build);
	snprintf(dir, sizeof dir, "%s/tests/scenarios", source);
	if (access(gen, X_OK) != 0) {
		fprintf(stderr, "skipping: %s is not built\n", gen);
		skip();
	}
	char tmp[] = "/tmp/xpf-test-plan-XXXXXX";
	assert_non_null(mkdtemp(tmp));
	DIR *d = opendir(dir);
	if (d == NULL) {
		fprintf(stderr, "skipping: no %s\n", dir);
		rmdir(tmp);
		skip();
	}
	struct dirent *de;
	size_t n = 0;
	while ((de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);
		if (len < 6 || strcmp(de->d_name + len - 5, ".json") != 0)
			continue;
		char path[8192], name[256], out[8192], cmd[32768];
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		snprintf(name, sizeof name, "%.*s", (int)(len - 5), de->d_name);
		json_error_t je;
		json_t *doc = json_load_file(path, 0, &je);
		if (doc == NULL)
			fail_msg("%s:%d: %s", path, je.line, je.text);
		json_t *plan = json_object_get(doc, "plan");
		if (plan) {
			snprintf(out, sizeof out, "%s/%s", tmp, name);
			snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' >/dev/null", gen, name, out);
			assert_int_equal(system(cmd), 0);
			char file[8300];
			snprintf(file, sizeof file, "%s.xplane.pb", out);
			check_scenario(name, plan, access(file, R_OK) == 0 ? file : out,
				       json_array_size(json_object_get(doc, "hosts")));
			snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", out, file);
			assert_int_equal(system(cmd), 0);
			n++;
		}
		json_decref(doc);
	}
	closedir(d);
	rmdir(tmp);
	assert_int_equal(n, 14); /* one per JSON file in tests/scenarios */
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hand_module),
		cmocka_unit_test(test_no_assignment),
		cmocka_unit_test(test_no_assignment_files),
		cmocka_unit_test(test_scenarios),
	};
	const struct CMUnitTest real[] = {
		cmocka_unit_test(test_attention),
		cmocka_unit_test(test_gemm),
		cmocka_unit_test(test_conv_run),
		cmocka_unit_test(test_tpu),
		cmocka_unit_test(test_tf_no_hlo),
		cmocka_unit_test(test_maxtext),
		cmocka_unit_test(test_h200_trip_count),
	};
	bool want_real;
	int rc = xpf_test_group(argc, argv, &want_real);
	if (rc >= 0)
		return rc;
	if (want_real) {
		rc = cmocka_run_group_tests_name("plan-real", real, NULL, NULL);
		return rc;
	}
	return cmocka_run_group_tests_name("plan", tests, NULL, NULL);
}
