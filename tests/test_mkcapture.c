/* The scenario captures carry the figures their tests/scenarios/<name>.json
 * claims: every figure is recomputed here from the written file, decoded
 * with protobuf-c (allocation sizes summed by kind, the heap-simulator trace
 * replayed with XProf's rules, allocator events replayed in time order),
 * and the diagnosis codes are re-derived from those figures with the
 * thresholds of SPEC §5.2.  Each scenario's "variants" are written too and
 * compared with its default capture: the shape changed as the variant says,
 * the allocator events and kernels did not (test_variant). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "common/buf.h"
#include "hlo.pb-c.h"
#include "xplane.pb-c.h"

#define MIB (1024ll * 1024)

static const char *build_dir, *src_dir;

/* ---------------- helpers ---------------- */

static uint8_t *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *p = malloc((size_t)len + 1);
	assert_non_null(p);
	assert_int_equal(fread(p, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	*n = (size_t)len;
	return p;
}

static const char *stat_name(const Tensorflow__Profiler__XPlane *p, int64_t id)
{
	for (size_t i = 0; i < p->n_stat_metadata; i++)
		if (p->stat_metadata[i]->key == id && p->stat_metadata[i]->value)
			return p->stat_metadata[i]->value->name;
	return "";
}

static const char *event_name(const Tensorflow__Profiler__XPlane *p, int64_t id)
{
	for (size_t i = 0; i < p->n_event_metadata; i++)
		if (p->event_metadata[i]->key == id && p->event_metadata[i]->value)
			return p->event_metadata[i]->value->name;
	return "";
}

static const Tensorflow__Profiler__XStat *find_stat(const Tensorflow__Profiler__XPlane *p,
	Tensorflow__Profiler__XStat **st, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(stat_name(p, st[i]->metadata_id), name) == 0)
			return st[i];
	return NULL;
}

/* The text of plane p's own stat name ("" when absent). */
static const char *plane_text(const Tensorflow__Profiler__XPlane *p, const char *name)
{
	const Tensorflow__Profiler__XStat *s = find_stat(p, p->stats, p->n_stats, name);
	if (s == NULL)
		return "";
	if (s->value_case == TENSORFLOW__PROFILER__XSTAT__VALUE_REF_VALUE)
		return stat_name(p, (int64_t)s->ref_value);
	return s->value_case == TENSORFLOW__PROFILER__XSTAT__VALUE_STR_VALUE ? s->str_value : "";
}

static int64_t stat_int(const Tensorflow__Profiler__XStat *s)
{
	assert_non_null(s);
	switch (s->value_case) {
	case TENSORFLOW__PROFILER__XSTAT__VALUE_INT64_VALUE: return s->int64_value;
	case TENSORFLOW__PROFILER__XSTAT__VALUE_UINT64_VALUE: return (int64_t)s->uint64_value;
	default: fail_msg("stat is not an integer"); return 0;
	}
}

static const Tensorflow__Profiler__XPlane *plane(const Tensorflow__Profiler__XSpace *x, const char *name)
{
	for (size_t i = 0; i < x->n_planes; i++)
		if (strcmp(x->planes[i]->name, name) == 0)
			return x->planes[i];
	return NULL;
}

static json_int_t jint(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	assert_true(json_is_integer(v));
	return json_integer_value(v);
}

static int has(json_t *o, const char *k) { return json_object_get(o, k) != NULL; }

/* ---------------- plan ---------------- */

typedef struct plan_fig {
	int64_t params, params_count, donated, donated_count, outputs, non_aliased, constants, temp;
	int64_t sim_peak, heap_peak, need, remat, rows;
	int64_t role[6]; /* parameter output workspace backward forward other */
	int64_t matching; /* outputs matching parameters in shape and dtype */
	int64_t layout_copy, convert_copy;
	int peak_shape_count;
} plan_fig;

enum { R_PARAM, R_OUTPUT, R_WS, R_BWD, R_FWD, R_OTHER };

static const Xla__HloInstructionProto *instr_by_id(const Xla__HloModuleProto *m, int64_t id,
	const Xla__HloComputationProto **comp)
{
	for (size_t c = 0; c < m->n_computations; c++)
		for (size_t i = 0; i < m->computations[c]->n_instructions; i++)
			if (m->computations[c]->instructions[i]->id == id) {
				if (comp)
					*comp = m->computations[c];
				return m->computations[c]->instructions[i];
			}
	return NULL;
}

static const Xla__ShapeProto *leaf_shape(const Xla__HloInstructionProto *x, const Xla__LogicalBufferProto *lb)
{
	const Xla__ShapeProto *s = x->shape;
	for (size_t i = 0; i < lb->defined_at->n_shape_index; i++)
		s = s->tuple_shapes[lb->defined_at->shape_index[i]];
	return s;
}

static void shape_str(const Xla__ShapeProto *s, char *out, size_t n)
{
	static const char *const names[] = { [XLA__PRIMITIVE_TYPE__F32] = "f32", [XLA__PRIMITIVE_TYPE__BF16] = "bf16",
		[XLA__PRIMITIVE_TYPE__S32] = "s32", [XLA__PRIMITIVE_TYPE__S8] = "s8", [XLA__PRIMITIVE_TYPE__U8] = "u8",
		[XLA__PRIMITIVE_TYPE__PRED] = "pred", [XLA__PRIMITIVE_TYPE__F16] = "f16" };
	size_t k = (size_t)snprintf(out, n, "%s[", (size_t)s->element_type < 17 && names[s->element_type]
		? names[s->element_type] : "?");
	for (size_t i = 0; i < s->n_dimensions && k < n; i++)
		k += (size_t)snprintf(out + k, n - k, "%s%lld", i ? "," : "", (long long)s->dimensions[i]);
	snprintf(out + k, n > k ? n - k : 0, "]");
}

static int64_t elements(const Xla__ShapeProto *s)
{
	int64_t n = 1;
	for (size_t i = 0; i < s->n_dimensions; i++)
		n *= s->dimensions[i];
	return n;
}

static int same_shape(const Xla__ShapeProto *a, const Xla__ShapeProto *b)
{
	if (a->element_type != b->element_type || a->n_dimensions != b->n_dimensions)
		return 0;
	for (size_t i = 0; i < a->n_dimensions; i++)
		if (a->dimensions[i] != b->dimensions[i])
			return 0;
	return 1;
}

/* The fused root opcode of a fusion (looking through bitcast). */
static const char *fused_root(const Xla__HloModuleProto *m, const Xla__HloInstructionProto *x)
{
	if (strcmp(x->opcode, "fusion") != 0 || x->n_called_computation_ids == 0)
		return x->opcode;
	for (size_t c = 0; c < m->n_computations; c++)
		if (m->computations[c]->id == x->called_computation_ids[0]) {
			const Xla__HloInstructionProto *r = instr_by_id(m, m->computations[c]->root_id, NULL);
			while (r && strcmp(r->opcode, "bitcast") == 0 && r->n_operand_ids)
				r = instr_by_id(m, r->operand_ids[0], NULL);
			return r ? r->opcode : "";
		}
	return "";
}

static void plan_figures(const Xla__HloProto *h, plan_fig *f, const char *shape, const char *source)
{
	const Xla__HloModuleProto *m = h->hlo_module;
	const Xla__BufferAssignmentProto *ba = h->buffer_assignment;
	int64_t indefinite = 0;
	int n_indef = 0;
	memset(f, 0, sizeof *f);
	assert_non_null(ba);

	/* allocations by kind (first match: parameter, output, thread-local, constant, temp) */
	int64_t *buf_alloc = calloc(ba->n_logical_buffers + 1, sizeof *buf_alloc);
	for (size_t a = 0; a < ba->n_buffer_allocations; a++) {
		const Xla__BufferAllocationProto *al = ba->buffer_allocations[a];
		if (al->color != 0)
			continue;
		for (size_t k = 0; k < al->n_assigned; k++)
			for (size_t b = 0; b < ba->n_logical_buffers; b++)
				if (ba->logical_buffers[b]->id == al->assigned[k]->logical_buffer_id)
					buf_alloc[b] = (int64_t)a + 1;
		if (al->is_entry_computation_parameter) {
			f->params += al->size;
			f->params_count++;
			int donated = 0;
			if (m->input_output_alias)
				for (size_t e = 0; e < m->input_output_alias->n_entries; e++)
					if (m->input_output_alias->entries[e]->parameter_number == al->parameter_number)
						donated = 1;
			if (donated) {
				f->donated += al->size;
				f->donated_count++;
			}
			if (al->maybe_live_out)
				f->outputs += al->size;
		} else if (al->maybe_live_out) {
			f->outputs += al->size;
			f->non_aliased += al->size;
		} else if (al->is_thread_local) {
		} else if (al->is_constant) {
			f->constants += al->size;
		} else {
			f->temp += al->size;
		}
		if (al->is_entry_computation_parameter || al->maybe_live_out || al->is_thread_local || al->is_constant) {
			indefinite += al->size;
			n_indef++;
			f->role[al->is_entry_computation_parameter ? R_PARAM : R_OUTPUT] += al->size;
		}
	}
	f->need = f->params + f->non_aliased + f->temp + f->constants;

	/* heap trace: the one bound to a temp allocation, replayed with XProf's rules */
	const Xla__HeapSimulatorTrace *tr = NULL;
	for (size_t t = 0; t < ba->n_heap_simulator_traces && !tr; t++) {
		const Xla__HeapSimulatorTrace *c = ba->heap_simulator_traces[t];
		if (!c->n_events)
			continue;
		for (size_t b = 0; b < ba->n_logical_buffers; b++)
			if (ba->logical_buffers[b]->id == c->events[0]->buffer_id && buf_alloc[b]) {
				const Xla__BufferAllocationProto *al = ba->buffer_allocations[buf_alloc[b] - 1];
				if (!al->is_entry_computation_parameter && !al->maybe_live_out)
					tr = c;
			}
	}
	assert_non_null(tr);
	size_t nb = ba->n_logical_buffers;
	int64_t *canon = malloc(nb * sizeof *canon), *refc = calloc(nb, sizeof *refc);
	int64_t *occupant = malloc(nb * sizeof *occupant);
	char *live = calloc(nb, 1), *peak_live = calloc(nb, 1);
	int64_t *peak_occ = malloc(nb * sizeof *peak_occ);
	for (size_t b = 0; b < nb; b++)
		canon[b] = occupant[b] = (int64_t)b;
#define BIDX(X) ({ size_t _k = 0; while (_k < nb && ba->logical_buffers[_k]->id != (X)) _k++; assert_true(_k < nb); _k; })
	int64_t heap = 0, peak = 0;
	for (size_t e = 0; e < tr->n_events; e++) {
		const Xla__HeapSimulatorTrace__Event *ev = tr->events[e];
		size_t b = BIDX(ev->buffer_id);
		if (ev->kind == XLA__HEAP_SIMULATOR_TRACE__EVENT__KIND__ALLOC) {
			refc[b]++;
			live[b] = 1;
			heap += ba->logical_buffers[b]->size;
			if (heap > peak) {
				peak = heap;
				memcpy(peak_live, live, nb);
				memcpy(peak_occ, occupant, nb * sizeof *occupant);
			}
		} else if (ev->kind == XLA__HEAP_SIMULATOR_TRACE__EVENT__KIND__FREE) {
			size_t r = (size_t)canon[b];
			while ((size_t)canon[r] != r)
				r = (size_t)canon[r];
			assert_true(refc[r] > 0);
			if (--refc[r] == 0) {
				heap -= ba->logical_buffers[r]->size;
				live[r] = 0;
			}
			assert_true(heap >= 0);
		} else {
			size_t c = BIDX(ev->share_with_canonical_id), r = c;
			while ((size_t)canon[r] != r)
				r = (size_t)canon[r];
			canon[b] = (int64_t)r;
			occupant[r] = (int64_t)b;
			if (++refc[r] == 1) {
				heap += ba->logical_buffers[r]->size;
				live[r] = 1;
			}
		}
	}
	f->sim_peak = peak;
	f->heap_peak = peak + indefinite;
	f->rows = n_indef;

	/* roles of the temp buffers live at the peak (the current sharer) */
	for (size_t b = 0; b < nb; b++) {
		if (!peak_live[b])
			continue;
		f->rows++;
		const Xla__LogicalBufferProto *lb = ba->logical_buffers[peak_occ[b]];
		const Xla__HloComputationProto *comp = NULL;
		const Xla__HloInstructionProto *x = instr_by_id(m, lb->defined_at->instruction_id, &comp);
		assert_non_null(x);
		const Xla__ShapeProto *s = leaf_shape(x, lb);
		const char *on = x->metadata ? x->metadata->op_name : "";
		int role;
		int lib = strcmp(x->opcode, "custom-call") == 0 ||
			  (strcmp(x->opcode, "fusion") == 0 && strcmp(x->fusion_kind, "kCustom") == 0);
		if (lib && (s->element_type == XLA__PRIMITIVE_TYPE__S8 || s->element_type == XLA__PRIMITIVE_TYPE__U8))
			role = R_WS;
		else if (strstr(on, "transpose("))
			role = R_BWD;
		else if (strstr(on, "jvp("))
			role = R_FWD;
		else
			role = R_OTHER;
		f->role[role] += ba->logical_buffers[b]->size;
		if (shape) {
			char str[128], src[160];
			shape_str(s, str, sizeof str);
			snprintf(src, sizeof src, "%s:%d", x->metadata ? x->metadata->source_file : "",
				x->metadata ? x->metadata->source_line : 0);
			if (strcmp(str, shape) == 0 && strcmp(src, source) == 0)
				f->peak_shape_count++;
		}
		/* layout / dtype copies of entry parameters (reference §10), simplified */
		if (comp && comp->id == m->entry_computation_id && x->n_operand_ids == 1) {
			const Xla__HloInstructionProto *p = instr_by_id(m, x->operand_ids[0], NULL);
			const char *root = fused_root(m, x);
			if (p && strcmp(p->opcode, "parameter") == 0 && elements(p->shape) == elements(s)) {
				if ((strcmp(root, "transpose") == 0 || strcmp(root, "copy") == 0) &&
				    p->shape->element_type == s->element_type)
					f->layout_copy += ba->logical_buffers[b]->size;
				if (strcmp(root, "convert") == 0 && p->shape->element_type != s->element_type)
					f->convert_copy += ba->logical_buffers[b]->size;
			}
		}
	}
#undef BIDX
	/* remat */
	for (size_t c = 0; c < m->n_computations; c++)
		for (size_t i = 0; i < m->computations[c]->n_instructions; i++)
			if (strstr(m->computations[c]->instructions[i]->name, ".remat"))
				f->remat++;
	/* outputs that match parameters in shape and dtype (each parameter once) */
	const Xla__HloComputationProto *entry = NULL;
	for (size_t c = 0; c < m->n_computations; c++)
		if (m->computations[c]->id == m->entry_computation_id)
			entry = m->computations[c];
	assert_non_null(entry);
	const Xla__HloInstructionProto *root = instr_by_id(m, entry->root_id, NULL);
	char *used = calloc(entry->n_instructions, 1);
	for (size_t o = 0; root && o < root->n_operand_ids; o++) {
		const Xla__HloInstructionProto *ox = instr_by_id(m, root->operand_ids[o], NULL);
		for (size_t i = 0; i < entry->n_instructions; i++) {
			const Xla__HloInstructionProto *p = entry->instructions[i];
			if (!used[i] && strcmp(p->opcode, "parameter") == 0 && same_shape(p->shape, ox->shape)) {
				used[i] = 1;
				int64_t bytes = elements(p->shape);
				switch (p->shape->element_type) {
				case XLA__PRIMITIVE_TYPE__F32: case XLA__PRIMITIVE_TYPE__S32: bytes *= 4; break;
				case XLA__PRIMITIVE_TYPE__BF16: case XLA__PRIMITIVE_TYPE__F16: bytes *= 2; break;
				default: break;
				}
				f->matching += bytes;
				break;
			}
		}
	}
	free(used);
	free(buf_alloc);
	free(canon);
	free(refc);
	free(occupant);
	free(live);
	free(peak_live);
	free(peak_occ);
}

/* ---------------- runtime ---------------- */

typedef struct aev {
	int64_t t;
	int is_free;
	int64_t alloc, res, avail, peak, req, abytes;
	uint64_t addr;
	size_t line;
	int result_of; /* execution index (0-based) whose Build span holds it, -1 */
} aev;

typedef struct span {
	int64_t t0, t1;
	const char *name;
	size_t line;
} span;

typedef struct rt_fig {
	int nevents;
	int64_t capacity, pre, peak_window, peak_time, memory_size;
	int allocs, frees;
	int nexec;
	int64_t start[256], end[256];
	int launched[256];
	int64_t in_use_start[256];
	int retries;
	int64_t retry_max;
	int64_t earlier_results_live; /* at the last execution's start */
	int64_t first_any; /* start of the first execution of any module */
	int64_t failed_compile_peak; /* the most in use during a compilation of a function no
					module has (a failed one), -1: none */
	span *spans;
	size_t nspans;
} rt_fig;

static int aev_cmp(const void *a, const void *b)
{
	const aev *x = a, *y = b;
	return x->t < y->t ? -1 : x->t > y->t;
}

/* Whether the allocations inside the Build spans of execution span s are
 * the module's runtime allocation sizes in index order (all, or a prefix). */
static int build_matches(const rt_fig *r, const aev *ev, size_t nev, const span *s, const Xla__HloProto *h)
{
	const Xla__BufferAssignmentProto *ba = h->buffer_assignment;
	for (size_t k = 0; k < r->nspans; k++) {
		const span *b = &r->spans[k];
		if (strcmp(b->name, "Build buffer allocations") || b->line != s->line || b->t0 < s->t0 || b->t1 > s->t1)
			continue;
		size_t ai = 0;
		for (size_t q = 0; q < nev; q++) {
			if (ev[q].line != s->line || ev[q].t < b->t0 || ev[q].t > b->t1 || ev[q].is_free)
				continue;
			while (ai < ba->n_buffer_allocations &&
			       (ba->buffer_allocations[ai]->is_entry_computation_parameter ||
				ba->buffer_allocations[ai]->is_constant || ba->buffer_allocations[ai]->size == 0))
				ai++;
			if (ai >= ba->n_buffer_allocations || ev[q].req != ba->buffer_allocations[ai]->size)
				return 0;
			ai++;
		}
	}
	return 1;
}

/* shared: other modules bear the module's name (a retrace); their
 * executions, told apart by their requested bytes, are not the module's. */
/* The compilations whose function has no module in the metadata (SPEC
 * 5.2 compile-oom): the most in use on GPU_0_bfc while one ran, from the
 * events (ev, in time order) and the in use before it. */
static void failed_compiles(const Tensorflow__Profiler__XSpace *xs, rt_fig *r, const aev *ev, size_t nev)
{
	const Tensorflow__Profiler__XPlane *md = plane(xs, "/host:metadata");
	const char *pre = "PjRtCApiClient::CompileAndLoad(";
	r->failed_compile_peak = -1;
	for (size_t i = 0; i < r->nspans; i++) {
		const span *c = &r->spans[i];
		if (strncmp(c->name, pre, strlen(pre)) != 0)
			continue;
		char fn[160];
		snprintf(fn, sizeof fn, "%.*s(", (int)(strlen(c->name) - strlen(pre) - 1), c->name + strlen(pre));
		int made = 0;
		for (size_t k = 0; md && k < md->n_event_metadata; k++)
			made |= md->event_metadata[k]->value &&
				strncmp(md->event_metadata[k]->value->name, fn, strlen(fn)) == 0;
		if (made)
			continue;
		int64_t peak = 0;
		for (size_t k = 0; k < nev && ev[k].t <= c->t1; k++)
			if (ev[k].t >= c->t0 || k + 1 == nev || ev[k + 1].t >= c->t0)
				peak = ev[k].alloc + ev[k].res > peak ? ev[k].alloc + ev[k].res : peak;
		if (peak > r->failed_compile_peak)
			r->failed_compile_peak = peak;
	}
}

static void runtime_figures(const Tensorflow__Profiler__XSpace *xs, const char *module,
	const Xla__HloProto *h, rt_fig *r, int shared)
{
	const Tensorflow__Profiler__XPlane *cpu = plane(xs, "/host:CPU");
	const Tensorflow__Profiler__XPlane *gpu = plane(xs, "/device:GPU:0");
	char modspan[256];
	aev *ev = NULL;
	size_t nev = 0, cap = 0;
	memset(r, 0, sizeof *r);
	assert_non_null(cpu);
	assert_non_null(gpu);
	const Tensorflow__Profiler__XStat *ms = find_stat(gpu, gpu->stats, gpu->n_stats, "memory_size");
	assert_non_null(ms);
	assert_int_equal(ms->value_case, TENSORFLOW__PROFILER__XSTAT__VALUE_UINT64_VALUE);
	r->memory_size = (int64_t)ms->uint64_value;
	snprintf(modspan, sizeof modspan, "%s:XLA GPU module", module);

	for (size_t l = 0; l < cpu->n_lines; l++) {
		const Tensorflow__Profiler__XLine *ln = cpu->lines[l];
		for (size_t e = 0; e < ln->n_events; e++) {
			const Tensorflow__Profiler__XEvent *x = ln->events[e];
			const char *name = event_name(cpu, x->metadata_id);
			int64_t t = ln->timestamp_ns + x->offset_ps / 1000;
			if (x->duration_ps > 0) {
				r->spans = realloc(r->spans, (r->nspans + 1) * sizeof *r->spans);
				r->spans[r->nspans++] = (span){ t, t + x->duration_ps / 1000, name, l };
			}
			if (strcmp(name, "MemoryAllocation") && strcmp(name, "MemoryDeallocation"))
				continue;
			const Tensorflow__Profiler__XStat *an = find_stat(cpu, x->stats, x->n_stats, "allocator_name");
			assert_non_null(an);
			assert_int_equal(an->value_case, TENSORFLOW__PROFILER__XSTAT__VALUE_REF_VALUE);
			if (strcmp(stat_name(cpu, (int64_t)an->ref_value), "GPU_0_bfc") != 0)
				continue;
			if (nev == cap) {
				cap = cap ? cap * 2 : 256;
				ev = realloc(ev, cap * sizeof *ev);
			}
			aev *a = &ev[nev++];
			a->t = t;
			a->line = l;
			a->is_free = name[6] == 'D';
			a->alloc = stat_int(find_stat(cpu, x->stats, x->n_stats, "bytes_allocated"));
			a->res = stat_int(find_stat(cpu, x->stats, x->n_stats, "bytes_reserved"));
			a->avail = stat_int(find_stat(cpu, x->stats, x->n_stats, "bytes_available"));
			a->peak = stat_int(find_stat(cpu, x->stats, x->n_stats, "peak_bytes_in_use"));
			a->req = stat_int(find_stat(cpu, x->stats, x->n_stats, "requested_bytes"));
			a->abytes = stat_int(find_stat(cpu, x->stats, x->n_stats, "allocation_bytes"));
			a->addr = (uint64_t)stat_int(find_stat(cpu, x->stats, x->n_stats, "addr"));
			a->result_of = -1;
		}
	}
	if (nev)
		qsort(ev, nev, sizeof *ev, aev_cmp);
	r->nevents = (int)nev;

	/* executions of the module that touch GPU_0_bfc, in start order */
	r->first_any = INT64_MAX;
	for (size_t i = 0; i < r->nspans; i++) {
		const span *s = &r->spans[i];
		size_t nl = strlen(s->name);
		if (nl > 15 && strcmp(s->name + nl - 15, ":XLA GPU module") == 0 && s->t0 < r->first_any)
			r->first_any = s->t0;
		if (strcmp(s->name, modspan) != 0)
			continue;
		if (shared && !build_matches(r, ev, nev, s, h))
			continue; /* the other compilation's */
		int mine = 0;
		for (size_t k = 0; k < nev; k++)
			if (ev[k].line == s->line && ev[k].t >= s->t0 && ev[k].t <= s->t1)
				mine = 1;
		for (size_t k = 0; k < r->nspans; k++)
			if (strcmp(r->spans[k].name, "AllocatorRetry::AllocateRaw") == 0 && r->spans[k].line == s->line &&
			    r->spans[k].t0 >= s->t0 && r->spans[k].t1 <= s->t1)
				mine = 1;
		if (!mine || r->nexec >= 256)
			continue;
		int n = r->nexec++;
		r->start[n] = s->t0;
		r->end[n] = s->t1;
		for (size_t k = 0; k < r->nspans; k++)
			if (strcmp(r->spans[k].name, "GpuExecutable::ExecuteThunks") == 0 && r->spans[k].line == s->line &&
			    r->spans[k].t0 >= s->t0 && r->spans[k].t1 <= s->t1)
				r->launched[n] = 1;
		/* the allocations of its Build buffer allocations: the module's
		 * runtime allocations in index order (all, or a prefix) */
		for (size_t k = 0; k < r->nspans; k++) {
			const span *b = &r->spans[k];
			if (strcmp(b->name, "Build buffer allocations") || b->line != s->line || b->t0 < s->t0 || b->t1 > s->t1)
				continue;
			size_t ai = 0;
			const Xla__BufferAssignmentProto *ba = h->buffer_assignment;
			for (size_t q = 0; q < nev; q++) {
				if (ev[q].line != s->line || ev[q].t < b->t0 || ev[q].t > b->t1 || ev[q].is_free)
					continue;
				while (ai < ba->n_buffer_allocations &&
				       (ba->buffer_allocations[ai]->is_entry_computation_parameter ||
					ba->buffer_allocations[ai]->is_constant || ba->buffer_allocations[ai]->size == 0))
					ai++;
				assert_true(ai < ba->n_buffer_allocations);
				assert_int_equal(ev[q].req, ba->buffer_allocations[ai]->size);
				ev[q].result_of = ba->buffer_allocations[ai]->maybe_live_out &&
					!ba->buffer_allocations[ai]->is_tuple ? n : -1;
				ai++;
			}
		}
	}
	/* sort executions by start */
	for (int i = 1; i < r->nexec; i++)
		for (int j = i; j > 0 && r->start[j] < r->start[j - 1]; j--) {
			int64_t t = r->start[j]; r->start[j] = r->start[j - 1]; r->start[j - 1] = t;
			t = r->end[j]; r->end[j] = r->end[j - 1]; r->end[j - 1] = t;
			int l = r->launched[j]; r->launched[j] = r->launched[j - 1]; r->launched[j - 1] = l;
		}
	if (r->nexec > 0 && gpu)
		for (int n = 0; n < r->nexec; n++) {
			/* a kernel of the module on GPU:0 after the start also proves a launch */
			int64_t next = n + 1 < r->nexec ? r->start[n + 1] : INT64_MAX;
			for (size_t l = 0; l < gpu->n_lines; l++)
				for (size_t e = 0; e < gpu->lines[l]->n_events; e++) {
					const Tensorflow__Profiler__XEvent *x = gpu->lines[l]->events[e];
					int64_t t = gpu->lines[l]->timestamp_ns + x->offset_ps / 1000;
					const Tensorflow__Profiler__XStat *hm = find_stat(gpu, x->stats, x->n_stats, "hlo_module");
					if (t > r->start[n] && t < next && hm && strcmp(stat_name(gpu, (int64_t)hm->ref_value), module) == 0)
						r->launched[n] |= 2;
				}
		}

	/* replay: capacity, in-use bookkeeping, peak monotone, addresses */
	uint64_t *live = calloc(nev + 1, sizeof *live);
	int64_t *live_bytes = calloc(nev + 1, sizeof *live_bytes);
	int *live_res = calloc(nev + 1, sizeof *live_res);
	size_t nlive = 0;
	int64_t in_use = 0, lpeak = 0;
	for (size_t k = 0; k < nev; k++) {
		aev *a = &ev[k];
		if (k == 0) {
			r->capacity = a->alloc + a->res + a->avail;
			r->pre = a->is_free ? a->alloc + a->abytes : a->alloc - a->abytes;
			in_use = r->pre;
		}
		assert_int_equal(a->alloc + a->res + a->avail, r->capacity);
		assert_true(a->req <= a->abytes);
		assert_true(a->peak >= lpeak);
		assert_true(a->peak >= a->alloc + a->res);
		lpeak = a->peak;
		if (a->is_free) {
			size_t i;
			for (i = 0; i < nlive && live[i] != a->addr; i++)
				;
			assert_true(i < nlive);
			assert_int_equal(live_bytes[i], a->abytes);
			live[i] = live[nlive - 1];
			live_bytes[i] = live_bytes[nlive - 1];
			live_res[i] = live_res[nlive - 1];
			nlive--;
			in_use -= a->abytes;
			r->frees++;
		} else {
			for (size_t i = 0; i < nlive; i++)
				assert_true(live[i] != a->addr);
			live[nlive] = a->addr;
			live_bytes[nlive] = a->abytes;
			live_res[nlive] = a->result_of;
			nlive++;
			in_use += a->abytes;
			r->allocs++;
		}
		assert_int_equal(in_use, a->alloc);
		if (a->alloc + a->res > r->peak_window) {
			r->peak_window = a->alloc + a->res;
			r->peak_time = a->t;
		}
		for (int n = 0; n < r->nexec; n++)
			if (a->t < r->start[n] && (k + 1 == nev || ev[k + 1].t >= r->start[n]))
				r->in_use_start[n] = a->alloc + a->res;
		if (r->nexec && a->t < r->start[r->nexec - 1] && (k + 1 == nev || ev[k + 1].t >= r->start[r->nexec - 1])) {
			r->earlier_results_live = 0;
			for (size_t i = 0; i < nlive; i++)
				if (live_res[i] >= 0)
					r->earlier_results_live += live_bytes[i];
		}
	}
	for (size_t i = 0; i < r->nspans; i++)
		if (strcmp(r->spans[i].name, "AllocatorRetry::AllocateRaw") == 0) {
			r->retries++;
			if (r->spans[i].t1 - r->spans[i].t0 > r->retry_max)
				r->retry_max = r->spans[i].t1 - r->spans[i].t0;
		}
	free(live);
	free(live_bytes);
	free(live_res);
	failed_compiles(xs, r, ev, nev);
	free(ev);
}

/* ---------------- diagnosis codes (SPEC §5.2 thresholds) ---------------- */

static json_t *derive_codes(const plan_fig *p, const rt_fig *r, int64_t capacity)
{
	json_t *c = json_array();
	int exceeds = p->need > capacity;
	int near = !exceeds && p->need * 100 >= capacity * 95;
	if (r->nevents == 0)
		json_array_append_new(c, json_string("missing-runtime"));
	if (exceeds)
		json_array_append_new(c, json_string("plan-exceeds-pool"));
	if (exceeds || near) {
		int best = R_FWD;
		if (p->role[R_BWD] > p->role[best]) best = R_BWD;
		if (p->role[R_WS] > p->role[best]) best = R_WS;
		if (p->role[best] * 4 >= p->heap_peak)
			json_array_append_new(c, json_string(best == R_FWD ? "mostly-forward" :
				best == R_BWD ? "mostly-backward" : "mostly-workspace"));
	}
	if (r->nexec >= 3) {
		int rising = 1;
		int64_t sum = r->in_use_start[r->nexec - 1] - r->in_use_start[0];
		double mean = (double)sum / (r->nexec - 1);
		for (int n = 1; n < r->nexec; n++) {
			double d = (double)(r->in_use_start[n] - r->in_use_start[n - 1]);
			if (d <= 0 || d < mean * 0.95 || d > mean * 1.05)
				rising = 0;
		}
		if (rising && mean >= MIB)
			json_array_append_new(c, json_string("growth-per-execution"));
	}
	if (p->params_count > 0 && p->donated_count == 0 && p->matching >= MIB)
		json_array_append_new(c, json_string("no-donation"));
	if (r->nexec > 0 && r->nevents > 0) {
		int64_t foreign = r->in_use_start[r->nexec - 1] - p->params - r->earlier_results_live;
		if (foreign > 0 && (foreign * 10 >= capacity || (p->need <= capacity && p->need + foreign > capacity)))
			json_array_append_new(c, json_string("foreign-live-arrays"));
	}
	if (r->retries)
		json_array_append_new(c, json_string("allocator-retry"));
	int never = 0;
	for (int n = 0; n < r->nexec; n++)
		if (!r->launched[n])
			never = 1;
	if (never)
		json_array_append_new(c, json_string("never-launched"));
	if (p->remat)
		json_array_append_new(c, json_string("xla-remat"));
	int64_t frag = p->temp - p->sim_peak;
	if (frag * 10 >= p->temp && frag >= 64 * MIB)
		json_array_append_new(c, json_string("temp-fragmentation"));
	if (p->layout_copy >= MIB)
		json_array_append_new(c, json_string("param-layout-copy"));
	if (p->convert_copy >= MIB)
		json_array_append_new(c, json_string("param-convert-copy"));
	if (near)
		json_array_append_new(c, json_string("near-fit"));
	if (r->nevents && r->nexec && r->peak_time < r->first_any)
		json_array_append_new(c, json_string("compile-time-peak"));
	/* a compilation that never made its module while the pool was at
	 * least 80% in use */
	int compile_oom = r->failed_compile_peak >= 0 && r->failed_compile_peak >= capacity / 5 * 4;
	if (compile_oom)
		json_array_append_new(c, json_string("compile-oom"));
	/* SPEC 5.2: a program that failed (a retry, a call that never
	 * launched, a compilation) gets no fits line */
	if (!exceeds && !near && !r->retries && !never && !compile_oom)
		json_array_append_new(c, json_string("fits"));
	return c;
}

static int code_in(json_t *arr, const char *code)
{
	size_t i;
	json_t *v;
	json_array_foreach(arr, i, v)
		if (strcmp(json_string_value(v), code) == 0)
			return 1;
	return 0;
}

/* ---------------- one capture file against the JSON ---------------- */

/* Entry parameter allocations of two modules differ (in count or a size):
 * different entry parameter shapes. */
static int param_sizes_differ(const Xla__HloProto *a, const Xla__HloProto *b)
{
	const Xla__BufferAssignmentProto *x = a->buffer_assignment, *y = b->buffer_assignment;
	size_t i = 0, j = 0;
	for (;;) {
		while (i < x->n_buffer_allocations && !x->buffer_allocations[i]->is_entry_computation_parameter)
			i++;
		while (j < y->n_buffer_allocations && !y->buffer_allocations[j]->is_entry_computation_parameter)
			j++;
		if (i == x->n_buffer_allocations || j == y->n_buffer_allocations)
			return (i == x->n_buffer_allocations) != (j == y->n_buffer_allocations);
		if (x->buffer_allocations[i]->size != y->buffer_allocations[j]->size)
			return 1;
		i++;
		j++;
	}
}

static void check_file(const char *path, json_t *doc)
{
	size_t n = 0;
	uint8_t *data = slurp(path, &n);
	assert_non_null(data);
	Tensorflow__Profiler__XSpace *xs = tensorflow__profiler__xspace__unpack(NULL, n, data);
	assert_non_null(xs);
	json_t *jp = json_object_get(doc, "plan"), *jr = json_object_get(doc, "runtime");
	const char *modname = json_string_value(json_object_get(jp, "module"));
	assert_non_null(modname);

	/* the module's metadata entry: name, Hlo Proto bytes, program_id uint64 */
	const Tensorflow__Profiler__XPlane *md = plane(xs, "/host:metadata");
	assert_non_null(md);
	Xla__HloProto *h = NULL;
	char modbase[256];
	snprintf(modbase, sizeof modbase, "%s", modname);
	*strrchr(modbase, '(') = 0;
	int shared = 0, retrace = 0;
	for (size_t i = 0; i < md->n_event_metadata; i++) {
		const Tensorflow__Profiler__XEventMetadata *em = md->event_metadata[i]->value;
		if (strcmp(em->name, modname) != 0) {
			/* another compilation of the same name: a retrace when its
			 * entry parameters differ */
			size_t bl = strlen(modbase);
			if (strncmp(em->name, modbase, bl) == 0 && em->name[bl] == '(')
				shared++;
			continue;
		}
		const Tensorflow__Profiler__XStat *hp = find_stat(md, em->stats, em->n_stats, "Hlo Proto");
		const Tensorflow__Profiler__XStat *pid = find_stat(md, em->stats, em->n_stats, "program_id");
		assert_non_null(hp);
		assert_non_null(pid);
		assert_int_equal(hp->value_case, TENSORFLOW__PROFILER__XSTAT__VALUE_BYTES_VALUE);
		assert_int_equal(pid->value_case, TENSORFLOW__PROFILER__XSTAT__VALUE_UINT64_VALUE);
		char ids[32];
		snprintf(ids, sizeof ids, "%llu", (unsigned long long)pid->uint64_value);
		assert_string_equal(ids, json_string_value(json_object_get(jp, "program_id")));
		h = xla__hlo_proto__unpack(NULL, hp->bytes_value.len, hp->bytes_value.data);
	}
	assert_non_null(h);
	assert_string_equal(h->hlo_module->name, modbase);
	for (size_t i = 0; shared && i < md->n_event_metadata; i++) {
		const Tensorflow__Profiler__XEventMetadata *em = md->event_metadata[i]->value;
		size_t bl = strlen(modbase);
		if (strcmp(em->name, modname) == 0 || strncmp(em->name, modbase, bl) != 0 || em->name[bl] != '(')
			continue;
		const Tensorflow__Profiler__XStat *hp = find_stat(md, em->stats, em->n_stats, "Hlo Proto");
		assert_non_null(hp);
		Xla__HloProto *o = xla__hlo_proto__unpack(NULL, hp->bytes_value.len, hp->bytes_value.data);
		assert_non_null(o);
		if (param_sizes_differ(h, o))
			retrace = 1;
		xla__hlo_proto__free_unpacked(o, NULL);
	}

	plan_fig p;
	json_t *ps = json_object_get(jp, "peak_shape");
	plan_figures(h, &p, ps ? json_string_value(json_object_get(ps, "shape")) : NULL,
		ps ? json_string_value(json_object_get(ps, "source")) : NULL);
#define EQ(key, val) do { if (has(jp, key)) assert_int_equal((val), jint(jp, key)); } while (0)
	EQ("parameters_bytes", p.params);
	EQ("parameters_count", p.params_count);
	EQ("donated_bytes", p.donated);
	EQ("donated_count", p.donated_count);
	EQ("outputs_bytes", p.outputs);
	EQ("non_aliased_outputs_bytes", p.non_aliased);
	EQ("outputs_matching_parameters_bytes", p.matching);
	EQ("constants_bytes", p.constants);
	EQ("temp_bytes", p.temp);
	EQ("simulated_peak_bytes", p.sim_peak);
	EQ("fragmentation_bytes", p.temp - p.sim_peak);
	EQ("heap_peak_bytes", p.heap_peak);
	EQ("need_bytes", p.need);
	EQ("remat_instructions", p.remat);
	EQ("peak_buffers", p.rows);
	EQ("layout_copy_bytes", p.layout_copy);
	EQ("convert_copy_bytes", p.convert_copy);
#undef EQ
	if (ps)
		assert_int_equal(p.peak_shape_count, jint(ps, "count"));
	json_t *roles = json_object_get(jp, "roles_bytes");
	if (roles) {
		static const char *const rn[6] = { "parameter", "output", "workspace", "backward", "forward", "other" };
		int64_t sum = 0;
		for (int i = 0; i < 6; i++) {
			assert_int_equal(p.role[i], jint(roles, rn[i]));
			sum += p.role[i];
		}
		assert_int_equal(sum, p.heap_peak);
	}
	char tmp[32];
	if (has(jp, "forward_pct"))
		assert_string_equal(xpf_pct((uint64_t)p.role[R_FWD], (uint64_t)p.heap_peak, tmp),
			json_string_value(json_object_get(jp, "forward_pct")));
	json_t *hu = json_object_get(jp, "human");
	if (hu && has(hu, "need"))
		assert_string_equal(xpf_human((uint64_t)p.need, tmp), json_string_value(json_object_get(hu, "need")));
	if (hu && has(hu, "temp"))
		assert_string_equal(xpf_human((uint64_t)p.temp, tmp), json_string_value(json_object_get(hu, "temp")));

	rt_fig r;
	runtime_figures(xs, modbase, h, &r, shared);
	int64_t capacity = r.nevents ? r.capacity : (int64_t)r.memory_size;
#define REQ(key, val) do { if (has(jr, key)) assert_int_equal((val), jint(jr, key)); } while (0)
	REQ("allocator_events", r.nevents);
	REQ("capacity_bytes", r.capacity);
	REQ("memory_size_bytes", r.memory_size);
	REQ("executions", r.nexec);
	REQ("allocations", r.allocs);
	REQ("deallocations", r.frees);
	REQ("peak_in_window_bytes", r.peak_window);
	REQ("allocated_before_capture_bytes", r.pre);
	REQ("retries", r.retries);
	REQ("retry_ns", r.retry_max);
	if (r.nexec) {
		REQ("in_use_at_start_first_bytes", r.in_use_start[0]);
		REQ("in_use_at_start_last_bytes", r.in_use_start[r.nexec - 1]);
		if (r.nexec > 1)
			REQ("growth_per_execution_bytes", (r.in_use_start[r.nexec - 1] - r.in_use_start[0]) / (r.nexec - 1));
	}
#undef REQ
	json_t *arr = json_object_get(jr, "in_use_at_start_bytes");
	if (arr) {
		assert_int_equal(json_array_size(arr), (size_t)r.nexec);
		for (int i = 0; i < r.nexec; i++)
			assert_int_equal(r.in_use_start[i], json_integer_value(json_array_get(arr, (size_t)i)));
	}
	arr = json_object_get(jr, "never_launched");
	if (arr) {
		size_t k = 0;
		for (int i = 0; i < r.nexec; i++)
			if (!r.launched[i]) {
				assert_true(k < json_array_size(arr));
				assert_int_equal(i + 1, json_integer_value(json_array_get(arr, k)));
				k++;
			}
		assert_int_equal(k, json_array_size(arr));
	}
	json_t *hr = json_object_get(jr, "human");
	if (hr && has(hr, "capacity"))
		assert_string_equal(xpf_human((uint64_t)r.capacity, tmp), json_string_value(json_object_get(hr, "capacity")));
	if (hr && has(hr, "growth") && r.nexec > 1)
		assert_string_equal(xpf_human((uint64_t)((r.in_use_start[r.nexec - 1] - r.in_use_start[0]) / (r.nexec - 1)), tmp),
			json_string_value(json_object_get(hr, "growth")));
	json_t *between = json_object_get(jr, "between");
	if (between && r.nexec >= 2) {
		const char *k;
		json_t *v;
		json_object_foreach(between, k, v) {
			int64_t cnt = 0;
			const Tensorflow__Profiler__XPlane *cpu = plane(xs, "/host:CPU");
			for (size_t l = 0; l < cpu->n_lines; l++)
				for (size_t e = 0; e < cpu->lines[l]->n_events; e++) {
					const Tensorflow__Profiler__XEvent *x = cpu->lines[l]->events[e];
					int64_t t = cpu->lines[l]->timestamp_ns + x->offset_ps / 1000;
					if (t >= r.end[r.nexec - 2] && t + x->duration_ps / 1000 <= r.start[r.nexec - 1] &&
					    strcmp(event_name(cpu, x->metadata_id), k) == 0)
						cnt++;
				}
			assert_int_equal(cnt, json_integer_value(v));
		}
	}

	/* the diagnosis codes the figures imply are exactly the documented ones */
	json_t *want = json_object_get(json_object_get(doc, "diagnosis"), "codes");
	json_t *got = derive_codes(&p, &r, capacity);
	if (retrace)
		json_array_append_new(got, json_string("retrace"));
	if (has(doc, "focus"))
		assert_string_equal(json_string_value(json_object_get(doc, "focus")), modname);
	size_t i;
	json_t *v;
	json_array_foreach(want, i, v)
		if (!code_in(got, json_string_value(v)))
			fail_msg("%s: documented code %s is not implied by the figures", path, json_string_value(v));
	json_array_foreach(got, i, v)
		if (!code_in(want, json_string_value(v)))
			fail_msg("%s: the figures imply code %s, not documented", path, json_string_value(v));
	json_decref(got);
	free(r.spans);
	xla__hlo_proto__free_unpacked(h, NULL);
	tensorflow__profiler__xspace__free_unpacked(xs, NULL);
	free(data);
}

/* The scenario as one host of its run directory sees it: "runtime" with
 * that host's "host_runtime" figures in place of the shared ones (a new
 * reference). */
static json_t *host_doc(json_t *doc, const char *host)
{
	json_t *own = json_deep_copy(doc);
	json_t *over = json_object_get(json_object_get(doc, "host_runtime"), host);
	if (over)
		assert_int_equal(json_object_update(json_object_get(own, "runtime"), over), 0);
	return own;
}

static void test_scenario(void **state)
{
	const char *name = *state;
	char path[4096], cmd[8192], dir[] = "/tmp/xpf-mkcapture-XXXXXX";
	json_error_t jerr;

	snprintf(path, sizeof path, "%s/tests/scenarios/%s.json", src_dir, name);
	json_t *doc = json_load_file(path, 0, &jerr);
	if (!doc)
		fail_msg("%s:%d: %s", path, jerr.line, jerr.text);
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/out.xplane.pb", dir);
	snprintf(cmd, sizeof cmd, "'%s/tests/mkcapture/xplane-mkcapture' '%s' '%s'", build_dir, name, path);
	assert_int_equal(system(cmd), 0);
	json_t *hosts = json_object_get(doc, "hosts");
	if (hosts) {
		size_t i;
		json_t *v;
		json_array_foreach(hosts, i, v) {
			char hp[4200];
			snprintf(hp, sizeof hp, "%s/%s.xplane.pb", path, json_string_value(v));
			json_t *own = host_doc(doc, json_string_value(v));
			check_file(hp, own);
			json_decref(own);
			unlink(hp);
		}
		rmdir(path);
	} else {
		check_file(path, doc);
		unlink(path);
	}
	rmdir(dir);
	json_decref(doc);
}

/* ---------------- variants: another shape, the same figures ---------------- */

/* One host or device event, flattened. */
/* A line the autotune variant adds: the compilations' python3 line and
 * their compile-pool line. */
static int compile_line(const Tensorflow__Profiler__XLine *l)
{
	return strcmp(l->name, "python3") == 0 ||
	       strncmp(l->name, "tf_pjrt_compile_thread_pool", 27) == 0;
}

typedef struct vev {
	size_t line;
	const char *name;
	int64_t t0, t1; /* ns */
	const Tensorflow__Profiler__XEvent *x;
} vev;

typedef struct vcap {
	uint8_t *data;
	Tensorflow__Profiler__XSpace *xs;
	const Tensorflow__Profiler__XPlane *cpu;
	vev *ev;
	size_t nev;
	/* allocator events in time order: t, free, name, req, alloc bytes, addr, in use, available */
	int64_t (*alloc)[8];
	size_t nalloc;
	int64_t kernels, kernel_t_sum;
} vcap;

static int alloc_cmp(const void *a, const void *b)
{
	const int64_t *x = a, *y = b;
	for (int i = 0; i < 8; i++)
		if (x[i] != y[i])
			return x[i] < y[i] ? -1 : 1;
	return 0;
}

static void vcap_load(vcap *c, const char *scenario, const char *variant)
{
	char dir[] = "/tmp/xpf-mkvariant-XXXXXX", path[4200], cmd[8800];
	size_t n = 0;
	memset(c, 0, sizeof *c);
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/out.xplane.pb", dir);
	snprintf(cmd, sizeof cmd, "'%s/tests/mkcapture/xplane-mkcapture' '%s' %s%s%s '%s'", build_dir, scenario,
		variant ? "--variant '" : "", variant ? variant : "", variant ? "'" : "", path);
	assert_int_equal(system(cmd), 0);
	c->data = slurp(path, &n);
	assert_non_null(c->data);
	unlink(path);
	rmdir(dir);
	c->xs = tensorflow__profiler__xspace__unpack(NULL, n, c->data);
	assert_non_null(c->xs);
	c->cpu = plane(c->xs, "/host:CPU");
	assert_non_null(c->cpu);
	const Tensorflow__Profiler__XPlane *cpu = c->cpu;
	for (size_t l = 0; l < cpu->n_lines; l++)
		for (size_t e = 0; e < cpu->lines[l]->n_events; e++) {
			const Tensorflow__Profiler__XEvent *x = cpu->lines[l]->events[e];
			int64_t t = cpu->lines[l]->timestamp_ns + x->offset_ps / 1000;
			c->ev = realloc(c->ev, (c->nev + 1) * sizeof *c->ev);
			c->ev[c->nev++] = (vev){ l, event_name(cpu, x->metadata_id), t, t + x->duration_ps / 1000, x };
			const char *nm = c->ev[c->nev - 1].name;
			if (strcmp(nm, "MemoryAllocation") && strcmp(nm, "MemoryDeallocation"))
				continue;
			const Tensorflow__Profiler__XStat *an = find_stat(cpu, x->stats, x->n_stats, "allocator_name");
			assert_non_null(an);
			c->alloc = realloc(c->alloc, (c->nalloc + 1) * sizeof *c->alloc);
			int64_t *a = c->alloc[c->nalloc++];
			a[0] = t;
			a[1] = nm[6] == 'D';
			a[2] = (int64_t)strlen(stat_name(cpu, (int64_t)an->ref_value)) * 1000 +
				(unsigned char)stat_name(cpu, (int64_t)an->ref_value)[4]; /* GPU_<d>_bfc */
			a[3] = stat_int(find_stat(cpu, x->stats, x->n_stats, "requested_bytes"));
			a[4] = stat_int(find_stat(cpu, x->stats, x->n_stats, "allocation_bytes"));
			a[5] = stat_int(find_stat(cpu, x->stats, x->n_stats, "addr"));
			a[6] = stat_int(find_stat(cpu, x->stats, x->n_stats, "bytes_allocated"));
			a[7] = stat_int(find_stat(cpu, x->stats, x->n_stats, "bytes_available"));
		}
	if (c->nalloc)
		qsort(c->alloc, c->nalloc, sizeof *c->alloc, alloc_cmp);
	for (size_t p = 0; p < c->xs->n_planes; p++) {
		const Tensorflow__Profiler__XPlane *d = c->xs->planes[p];
		if (strncmp(d->name, "/device:", 8) != 0)
			continue;
		for (size_t l = 0; l < d->n_lines; l++)
			for (size_t e = 0; e < d->lines[l]->n_events; e++) {
				c->kernels++;
				c->kernel_t_sum += d->lines[l]->timestamp_ns + d->lines[l]->events[e]->offset_ps / 1000;
			}
	}
}

static void vcap_free(vcap *c)
{
	free(c->ev);
	free(c->alloc);
	tensorflow__profiler__xspace__free_unpacked(c->xs, NULL);
	free(c->data);
}

static int ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && strcmp(s + a - b, suffix) == 0;
}

static size_t count_named(const vcap *c, const char *prefix)
{
	size_t n = 0;
	for (size_t i = 0; i < c->nev; i++)
		n += strncmp(c->ev[i].name, prefix, strlen(prefix)) == 0;
	return n;
}

/* The innermost span named by `is` (a predicate on the name) on e's line
 * that holds e (inclusive), or NULL. */
static const vev *holder(const vcap *c, const vev *e, int (*is)(const char *))
{
	const vev *best = NULL;
	for (size_t i = 0; i < c->nev; i++) {
		const vev *s = &c->ev[i];
		if (s == e || s->line != e->line || s->t1 == s->t0 || !is(s->name) || s->t0 > e->t0 || s->t1 < e->t1)
			continue;
		if (!best || s->t1 - s->t0 < best->t1 - best->t0)
			best = s;
	}
	return best;
}

static int is_helper(const char *n) { return strstr(n, "ExecuteHelper") != NULL; }
static int is_setup(const char *n)
{
	return strcmp(n, "Build buffer allocations") == 0 || strcmp(n, "AllocateOutputBuffersWithInputReuse") == 0;
}
static int is_module_span(const char *n) { return ends_with(n, ":XLA GPU module"); }
static int is_capi(const char *n) { return strcmp(n, "PJRT_LoadedExecutable_Execute") == 0; }
static int is_capi_link(const char *n) { return strcmp(n, "PJRT_LoadedExecutable_Execute linkage") == 0; }
static int is_client_execute(const char *n)
{
	return strcmp(n, "PjRtStreamExecutorLoadedExecutable::Execute") == 0 ||
		strncmp(n, "CommonPjRtLoadedExecutable::Execute (", 37) == 0;
}

static int has_stat(const Tensorflow__Profiler__XPlane *p, const Tensorflow__Profiler__XEvent *x, const char *name)
{
	return find_stat(p, x->stats, x->n_stats, name) != NULL;
}

static int line_sorted(const Tensorflow__Profiler__XLine *l)
{
	for (size_t e = 1; e < l->n_events; e++)
		if (l->events[e]->offset_ps < l->events[e - 1]->offset_ps)
			return 0;
	return 1;
}

/* scope-tree: the plane after /host:metadata, each of its stats but
 * process_id an edge whose id (the child scope's) no stat metadata has and
 * whose int64 value is another scope's id (the root's parent aside). */
static void scope_tree_plane(const vcap *c, int want)
{
	const Tensorflow__Profiler__XPlane *p = plane(c->xs, "/host:__ScopeRangeCallStack__");
	if (!want) {
		assert_null(p);
		return;
	}
	assert_non_null(p);
	assert_ptr_equal(c->xs->planes[1], p);
	size_t edges = 0, roots = 0;
	for (size_t i = 0; i < p->n_stats; i++) {
		const Tensorflow__Profiler__XStat *st = p->stats[i];
		int named = 0, parent_known = 0;
		for (size_t k = 0; k < p->n_stat_metadata; k++)
			named += p->stat_metadata[k]->key == st->metadata_id;
		if (named)
			continue;
		assert_int_equal(st->value_case, TENSORFLOW__PROFILER__XSTAT__VALUE_INT64_VALUE);
		for (size_t k = 0; k < p->n_stats; k++)
			parent_known += p->stats[k]->metadata_id == st->int64_value;
		roots += !parent_known;
		edges++;
	}
	assert_true(edges >= 8);
	assert_int_equal(roots, 1);
	assert_int_equal(p->n_stats, edges + 1);
}

static void test_variant(void **state)
{
	const char *spec = *state; /* "<scenario> <variant,...>" */
	char scenario[128], variant[256];
	const char *sp = strchr(spec, ' ');
	assert_non_null(sp);
	snprintf(scenario, sizeof scenario, "%.*s", (int)(sp - spec), spec);
	snprintf(variant, sizeof variant, "%s", sp + 1);
	char list[sizeof variant + 2];
	snprintf(list, sizeof list, ",%s,", variant);
#define V(name) (strstr(list, "," name ",") != NULL)
	vcap a, b;
	vcap_load(&a, scenario, NULL);
	vcap_load(&b, scenario, variant);

	/* the figures: every allocator event (time, kind, allocator, requested
	 * and allocated bytes, address, in use, available) and every kernel */
	assert_true(a.nalloc > 0);
	assert_int_equal(a.nalloc, b.nalloc);
	for (size_t i = 0; i < a.nalloc; i++)
		for (int k = 0; k < 8; k++)
			if (a.alloc[i][k] != b.alloc[i][k])
				fail_msg("%s: allocator event %zu differs in field %d: %lld vs %lld", spec, i, k,
					(long long)a.alloc[i][k], (long long)b.alloc[i][k]);
	assert_int_equal(a.kernels, b.kernels);
	assert_int_equal(a.kernel_t_sum, b.kernel_t_sum);
	size_t retries = count_named(&a, "AllocatorRetry::AllocateRaw");
	assert_int_equal(retries, count_named(&b, "AllocatorRetry::AllocateRaw"));
	size_t helpers = count_named(&a, "PjRtStreamExecutorLoadedExecutable::ExecuteHelper");
	assert_true(helpers > 0);

	if (V("new-client")) {
		/* (the device puts keep their PjRtStreamExecutorClient:: event: the
		 * variant is about executions) */
		assert_int_equal(count_named(&b, "PjRtStreamExecutorLoadedExecutable"), 0);
		assert_int_equal(count_named(&b, "CommonPjRtLoadedExecutable::ExecuteHelperOnSingleDevice"), helpers);
		assert_int_equal(count_named(&b, "CommonPjRtLoadedExecutable::Execute ("),
			count_named(&a, "PjRtStreamExecutorLoadedExecutable::Execute") - helpers);
		assert_int_equal(count_named(&b, "AllocateOutputBuffersWithInputReuse"), helpers);
		/* the allocations the old client makes in Build are made in
		 * AllocateOutputBuffers... or Build, outputs first, and every one
		 * in AllocateOutputBuffers... is a result (never the temp block) */
		size_t in_a = 0, in_b = 0, in_ao = 0;
		for (size_t i = 0; i < a.nev; i++)
			if (strcmp(a.ev[i].name, "MemoryAllocation") == 0 && holder(&a, &a.ev[i], is_setup))
				in_a++;
		for (size_t i = 0; i < b.nev; i++) {
			const vev *e = &b.ev[i];
			if (strcmp(e->name, "MemoryAllocation") != 0)
				continue;
			const vev *s = holder(&b, e, is_setup);
			if (!s)
				continue;
			in_b++;
			if (s->name[0] == 'A') {
				in_ao++;
				for (size_t k = 0; k < b.nev; k++)
					if (strcmp(b.ev[k].name, "Build buffer allocations") == 0 &&
					    b.ev[k].line == e->line && holder(&b, &b.ev[k], is_helper) == holder(&b, e, is_helper))
						assert_true(s->t1 < b.ev[k].t0);
			}
		}
		assert_int_equal(in_a, in_b);
		assert_true(in_ao > 0);
	} else {
		assert_int_equal(count_named(&b, "CommonPjRt"), 0);
	}

	if (V("capi")) {
		size_t n = 0;
		for (size_t i = 0; i < b.nev; i++) {
			const vev *e = &b.ev[i];
			if (!is_client_execute(e->name))
				continue;
			const vev *c = holder(&b, e, is_capi);
			assert_non_null(c);
			assert_true(c->t0 < e->t0 && e->t1 < c->t1);
			const vev *k = holder(&b, c, is_capi_link);
			assert_non_null(k);
			assert_true(k->t0 < c->t0 && c->t1 < k->t1);
			n++;
		}
		assert_true(n > 0);
		assert_int_equal(count_named(&b, "PJRT_LoadedExecutable_Execute linkage"), n);
		assert_int_equal(count_named(&b, "PJRT_LoadedExecutable_Execute"), 2 * n);
	} else {
		assert_int_equal(count_named(&b, "PJRT_"), 0);
	}

	/* after a failure: where the frees of the partial set are */
	for (size_t i = 0; i < b.nev; i++) {
		const vev *r = &b.ev[i];
		if (strcmp(r->name, "AllocatorRetry::AllocateRaw") != 0)
			continue;
		const vev *set = holder(&b, r, is_setup), *h = holder(&b, r, is_helper);
		assert_non_null(set);
		assert_non_null(h);
		size_t frees = 0, scoped = 0;
		int64_t last_free = r->t1;
		for (size_t k = 0; k < b.nev; k++) {
			const vev *e = &b.ev[k];
			if (e->line != r->line || e->t0 < r->t1 || e->t1 > h->t1)
				continue;
			if (strcmp(e->name, "MemoryDeallocation") == 0) {
				frees++;
				if (V("frees-after")) /* after the set-up and the module span */
					assert_true(e->t0 > set->t1 && !holder(&b, e, is_setup) &&
						!holder(&b, e, is_module_span));
				else
					assert_true(e->t1 <= set->t1);
				if (e->t0 > last_free)
					last_free = e->t0;
			}
		}
		for (size_t k = 0; k < b.nev; k++) {
			const vev *e = &b.ev[k];
			if (strcmp(e->name, "ScopedAnnotation") == 0 && e->line == r->line && e->t0 > last_free &&
			    e->t1 <= h->t1)
				scoped++;
		}
		assert_true(frees > 0);
		assert_int_equal(scoped, V("events-after") ? 1 : 0);
	}
	if (V("events-after") && retries) {
		assert_int_equal(count_named(&b, "$traceback_util.py:175 reraise_with_filtered_traceback"), retries);
		assert_int_equal(count_named(&b, "$api.py:1212 cache_miss"), retries);
	} else {
		assert_int_equal(count_named(&b, "ScopedAnnotation"), 0);
		assert_int_equal(count_named(&b, "$traceback_util.py"), 0);
	}

	/* optional stats */
	static const char *const optional[] = { "fragmentation", "peak_bytes_in_use", "data_type", "shape", "id" };
	size_t opt_a = 0, opt_b = 0, mn_a = 0, mn_b = 0, kd_a = 0, kd_b = 0;
	for (int w = 0; w < 2; w++) {
		const vcap *c = w ? &b : &a;
		size_t *opt = w ? &opt_b : &opt_a, *mn = w ? &mn_b : &mn_a, *kd = w ? &kd_b : &kd_a;
		for (size_t i = 0; i < c->nev; i++) {
			const vev *e = &c->ev[i];
			if (strncmp(e->name, "Memory", 6) == 0)
				for (size_t k = 0; k < sizeof optional / sizeof optional[0]; k++)
					*opt += has_stat(c->cpu, e->x, optional[k]);
			if (ends_with(e->name, "GpuExecutable::ExecuteThunks") && !compile_line(c->cpu->lines[e->line]))
				*mn += has_stat(c->cpu, e->x, "module_name");
		}
		for (size_t p = 0; p < c->xs->n_planes; p++) {
			const Tensorflow__Profiler__XPlane *d = c->xs->planes[p];
			if (strncmp(d->name, "/device:", 8) == 0)
				for (size_t l = 0; l < d->n_lines; l++)
					for (size_t e = 0; e < d->lines[l]->n_events; e++)
						*kd += has_stat(d, d->lines[l]->events[e], "kernel_details");
		}
	}
	assert_true(opt_a > 0); /* (module_name and kernel_details need a launched execution) */
	if (V("no-optional-stats")) {
		assert_int_equal(opt_b, 0);
		assert_int_equal(mn_b, 0);
		assert_int_equal(kd_b, 0);
	} else {
		assert_int_equal(opt_b, opt_a);
		assert_int_equal(mn_b, mn_a);
		assert_int_equal(kd_b, kd_a);
	}

	/* line order, thread ids, event order */
	const Tensorflow__Profiler__XPlane *pa = a.cpu;
	/* autotune adds two lines (the compilations): b's others are a's */
	const Tensorflow__Profiler__XLine **bl = calloc(b.cpu->n_lines + 1, sizeof *bl);
	size_t nbl = 0, ncompile = 0, runs = 0;
	for (size_t l = 0; l < b.cpu->n_lines; l++) {
		if (!compile_line(b.cpu->lines[l])) {
			bl[nbl++] = b.cpu->lines[l];
			continue;
		}
		ncompile++;
		for (size_t e = 0; e < b.cpu->lines[l]->n_events; e++)
			runs += ends_with(event_name(b.cpu, b.cpu->lines[l]->events[e]->metadata_id),
					 "GpuExecutable::ExecuteThunks");
	}
	assert_int_equal(ncompile, V("autotune") ? 2 : 0);
	if (V("autotune"))
		assert_true(runs >= 3);
	assert_int_equal(pa->n_lines, nbl);
	size_t host_unsorted = 0, dev_unsorted = 0;
	for (size_t l = 0; l < nbl; l++)
		host_unsorted += !line_sorted(bl[l]);
	for (size_t p = 0; p < b.xs->n_planes; p++)
		if (strncmp(b.xs->planes[p]->name, "/device:", 8) == 0)
			for (size_t l = 0; l < b.xs->planes[p]->n_lines; l++)
				dev_unsorted += !line_sorted(b.xs->planes[p]->lines[l]);
	/* only these variants add or drop events */
	int same_events = !V("new-client") && !V("capi") && !(V("events-after") && retries);
	if (V("shuffle")) {
		for (size_t l = 0; l < pa->n_lines; l++) {
			const Tensorflow__Profiler__XLine *x = pa->lines[l], *y = bl[nbl - 1 - l];
			assert_int_equal(strcspn(x->name, "/"), strcspn(y->name, "/"));
			assert_memory_equal(x->name, y->name, strcspn(x->name, "/"));
			if (same_events)
				assert_int_equal(x->n_events, y->n_events);
			assert_true(x->id != y->id);
		}
		assert_true(host_unsorted >= 1); /* the allocator line */
		if (a.kernels >= 2)
			assert_true(dev_unsorted >= 1); /* a kernel line */
	} else {
		for (size_t l = 0; l < pa->n_lines; l++) {
			assert_string_equal(pa->lines[l]->name, bl[l]->name);
			assert_true(pa->lines[l]->id == bl[l]->id);
		}
		assert_int_equal(host_unsorted + dev_unsorted, 0);
	}
	free(bl);
	/* the device planes' vendor */
	for (size_t p = 0; p < b.xs->n_planes; p++)
		if (strncmp(b.xs->planes[p]->name, "/device:GPU:", 12) == 0)
			assert_string_equal(plane_text(b.xs->planes[p], "device_vendor"),
					    V("nvidia") ? "Nvidia" :
							  plane_text(plane(a.xs, b.xs->planes[p]->name),
								     "device_vendor"));
	scope_tree_plane(&b, V("scope-tree"));
#undef V
	vcap_free(&a);
	vcap_free(&b);
}

int main(void)
{
	static const char *const names[] = {
		"attention-too-big", "grads-kept", "no-donation", "scan-fits", "temp-fragmentation",
		"layout-copy", "convert-copy", "foreign-arrays", "no-runtime", "multi-host", "multi-host-prefetch", "eager",
		"retrace-oom", "retrace-oom-ambiguous",
	};
	/* every scenario, then every scenario x each of its "variants" */
	struct CMUnitTest tests[sizeof names / sizeof names[0] * 17];
	size_t n = 0;
	char path[4096];

	build_dir = getenv("XPF_BUILD");
	src_dir = getenv("XPF_SOURCE");
	if (!build_dir)
		build_dir = "build";
	if (!src_dir)
		src_dir = ".";
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		struct stat stt;
		snprintf(path, sizeof path, "%s/tests/scenarios/%s.json", src_dir, names[i]);
		if (stat(path, &stt) != 0)
			continue; /* a scenario not documented yet */
		tests[n].name = names[i];
		tests[n].test_func = test_scenario;
		tests[n].setup_func = NULL;
		tests[n].teardown_func = NULL;
		tests[n].initial_state = (void *)names[i];
		n++;
	}
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		json_error_t jerr;
		snprintf(path, sizeof path, "%s/tests/scenarios/%s.json", src_dir, names[i]);
		json_t *doc = json_load_file(path, 0, &jerr);
		if (!doc)
			continue;
		json_t *vs = json_object_get(doc, "variants"), *v;
		size_t k;
		json_array_foreach(vs, k, v) {
			if (n >= sizeof tests / sizeof tests[0] || !json_is_string(v))
				break;
			char *spec = malloc(strlen(names[i]) + strlen(json_string_value(v)) + 2);
			assert_non_null(spec);
			sprintf(spec, "%s %s", names[i], json_string_value(v));
			tests[n].name = spec;
			tests[n].test_func = test_variant;
			tests[n].setup_func = NULL;
			tests[n].teardown_func = NULL;
			tests[n].initial_state = spec;
			n++;
		}
		json_decref(doc);
	}
	int rc = _cmocka_run_group_tests("mkcapture", tests, n, NULL, NULL);
	for (size_t i = 0; i < n; i++) /* the variants' names were malloc'd */
		if (tests[i].test_func == test_variant)
			free((void *)tests[i].initial_state);
	return rc;
}
