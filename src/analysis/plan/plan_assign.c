/* The buffer assignment of a plan (SPEC §4.1; reference §3.6, §5): the
 * logical buffers and their aliases, the allocations sorted into kinds and
 * colours with the plan's totals, parameters with their donation, outputs
 * with the parameters they could have reused, and then (plan_heap.c,
 * plan_roles.c, plan_dups.c) the heap, the roles at its peak and the
 * duplicates.  It is the second stage of xpf_plan_build, run only when the
 * HloProto carries a buffer_assignment; plan.c does the first (the
 * instructions) and owns the plan. */
#include <stdlib.h>
#include <string.h>

#include "analysis/plan/plan_priv.h"
#include "common/alloc.h"
#include "common/bisect.h"

/* ---- buffers and allocations ------------------------------------------ */

/* A location names its instruction by id (current writers) or, in captures
 * from before 2022-07, by the deprecated instruction_name. */
static const xpf_plan_instr *location_instr(xpf_plan *p, xpf_arena *a,
					    const Xla__LogicalBufferProto__Location *loc)
{
	if (loc == NULL)
		return NULL;
	if (loc->instruction_name && loc->instruction_name[0]) {
		const xpf_plan_instr *in = xpf_plan_instr_by_name(p, a, loc->instruction_name);
		if (in)
			return in;
	}
	return xpf_plan_instr_by_id(p, loc->instruction_id);
}

static void index_buffers(xpf_plan *p, plan_src *s, xpf_arena *a)
{
	const Xla__BufferAssignmentProto *ba = s->ba;
	xpf_buf b = XPF_BUF_INIT;
	p->nbuffers = ba->n_logical_buffers;
	p->buffers = xpf_arena_array(a, p->nbuffers, sizeof *p->buffers);
	s->buffer_shape = xpf_calloc(p->nbuffers ? p->nbuffers : 1, sizeof *s->buffer_shape);
	for (size_t i = 0; i < p->nbuffers; i++) {
		const Xla__LogicalBufferProto *lb = ba->logical_buffers[i];
		xpf_plan_buffer *x = &p->buffers[i];
		x->id = lb->id;
		x->bytes = lb->size > 0 ? (uint64_t)lb->size : 0;
		x->color = lb->color;
		x->instr = location_instr(p, a, lb->defined_at);
		x->alloc = -1;
		x->start = x->end = -1;
		const int64_t *ix = lb->defined_at ? lb->defined_at->shape_index : NULL;
		size_t nix = lb->defined_at ? lb->defined_at->n_shape_index : 0;
		x->shape_index = xpf_index_text(a, ix, nix);
		const Xla__ShapeProto *sh =
			x->instr ? xpf_shape_at(xpf_plan_proto(s, x->instr)->shape, ix, nix) : NULL;
		s->buffer_shape[i] = sh;
		x->dtype = sh ? xpf_dtype_name(sh->element_type) : "";
		xpf_buf_reset(&b);
		if (sh)
			xpf_shape_text(sh, true, &b);
		x->shape = xpf_plan_str(p, b.data ? b.data : "");
		x->unpadded_bytes = sh ? xpf_shape_bytes(sh) : x->bytes;
	}
	xpf_buf_release(&b);
	((plan_priv *)p->priv)->buffer_by_id = xpf_plan_index_buffer_ids(p, p->nbuffers, a);

	/* aliases: count, then fill */
	size_t *count = calloc(p->nbuffers ? p->nbuffers : 1, sizeof *count);
	if (count == NULL)
		abort();
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < ba->n_buffer_aliases; i++) {
			const Xla__BufferAssignmentProto__BufferAlias *al = ba->buffer_aliases[i];
			const xpf_plan_buffer *cb = xpf_plan_buffer_by_id(p, al->source_buffer_id);
			const xpf_plan_instr *in = location_instr(p, a, al->location);
			if (cb == NULL || in == NULL)
				continue;
			xpf_plan_buffer *buf = &p->buffers[cb - p->buffers];
			if (pass == 0)
				count[cb - p->buffers]++;
			else
				buf->aliases[buf->naliases++] = in;
		}
		if (pass == 0)
			for (size_t i = 0; i < p->nbuffers; i++)
				p->buffers[i].aliases =
					xpf_arena_array(a, count[i], sizeof(xpf_plan_instr *));
	}
	free(count);
}

/* Parameter leaves (number, shape index) named by the module's
 * input_output_alias or buffer_donor entries, sorted, so that each parameter
 * allocation is looked up rather than compared with every entry. */
typedef struct param_leaf {
	int64_t number;
	const int64_t *index;
	size_t nindex;
} param_leaf;

typedef struct param_leaves {
	param_leaf *v;
	size_t n;
} param_leaves;

static int cmp_param_leaf(const void *a, const void *b)
{
	const param_leaf *x = a, *y = b;
	if (x->number != y->number)
		return x->number < y->number ? -1 : 1;
	if (x->nindex != y->nindex)
		return x->nindex < y->nindex ? -1 : 1;
	for (size_t i = 0; i < x->nindex; i++)
		if (x->index[i] != y->index[i])
			return x->index[i] < y->index[i] ? -1 : 1;
	return 0;
}

static void leaves_init(param_leaves *s, size_t cap)
{
	s->v = calloc(cap ? cap : 1, sizeof *s->v);
	s->n = 0;
	if (s->v == NULL)
		abort();
}

static void leaves_add(param_leaves *s, int64_t number, const int64_t *index, size_t nindex)
{
	s->v[s->n++] = (param_leaf){ number, index, nindex };
}

static bool leaves_have(const param_leaves *s, const Xla__BufferAllocationProto *ap)
{
	param_leaf key = { ap->parameter_number, ap->parameter_shape_index,
			   ap->n_parameter_shape_index };
	return s->n && bsearch(&key, s->v, s->n, sizeof *s->v, cmp_param_leaf) != NULL;
}

static void donation_leaves(const Xla__HloModuleProto *mod, param_leaves *aliased,
			    param_leaves *donors)
{
	const Xla__HloInputOutputAliasProto *io = mod->input_output_alias;
	const Xla__HloBufferDonorProto *d = mod->buffer_donor;
	leaves_init(aliased, io ? io->n_entries : 0);
	leaves_init(donors, d ? d->n_entries : 0);
	for (size_t i = 0; io && i < io->n_entries; i++) {
		const Xla__HloInputOutputAliasProto__AliasEntryProto *e = io->entries[i];
		leaves_add(aliased, e->parameter_number, e->parameter_shape_index,
			   e->n_parameter_shape_index);
	}
	for (size_t i = 0; d && i < d->n_entries; i++) {
		const Xla__HloBufferDonorProto__BufferDonorEntryProto *e = d->entries[i];
		leaves_add(donors, e->parameter_number, e->parameter_shape_index,
			   e->n_parameter_shape_index);
	}
	xpf_qsort(aliased->v, aliased->n, sizeof *aliased->v, cmp_param_leaf);
	xpf_qsort(donors->v, donors->n, sizeof *donors->v, cmp_param_leaf);
}

/* Colour names (reference §3.6.1): 1 and 2 mean collective and separate
 * temp memory on GPU only; a TPU module (tiled layouts) gets "other". */
static const char *color_what(int64_t c, bool tiled)
{
	switch (c) {
	case 0: return "device";
	case 1: return tiled ? "other" : "collective";
	case 2: return tiled ? "other" : "temp";
	case XPF_HOST_COLOR: return "host";
	default: return "other";
	}
}

static int cmp_color(const void *a, const void *b)
{
	int64_t x = ((const xpf_plan_color *)a)->color, y = ((const xpf_plan_color *)b)->color;
	return x < y ? -1 : x > y;
}

/* p->colors: each colour of an allocation once, ascending. */
static void index_colors(xpf_plan *p, const Xla__BufferAssignmentProto *ba, xpf_arena *a)
{
	p->colors = xpf_arena_array(a, p->nallocs, sizeof *p->colors);
	for (size_t i = 0; i < p->nallocs; i++)
		p->colors[i].color = ba->buffer_allocations[i]->color;
	xpf_qsort(p->colors, p->nallocs, sizeof *p->colors, cmp_color);
	for (size_t i = 0; i < p->nallocs; i++)
		if (p->ncolors == 0 || p->colors[p->ncolors - 1].color != p->colors[i].color)
			p->colors[p->ncolors++].color = p->colors[i].color;
	for (size_t i = 0; i < p->ncolors; i++)
		p->colors[i].what = color_what(p->colors[i].color, p->tpu);
}

static xpf_plan_color *color_slot(xpf_plan *p, int64_t c)
{
	xpf_plan_color key = { .color = c };
	return bsearch(&key, p->colors, p->ncolors, sizeof *p->colors, cmp_color);
}

static void index_allocs(xpf_plan *p, const Xla__HloModuleProto *mod,
			 const Xla__BufferAssignmentProto *ba, xpf_arena *a)
{
	param_leaves aliased, donors;
	p->nallocs = ba->n_buffer_allocations;
	p->allocs = xpf_arena_array(a, p->nallocs, sizeof *p->allocs);
	index_colors(p, ba, a);
	donation_leaves(mod, &aliased, &donors);
	for (size_t i = 0; i < p->nallocs; i++) {
		const Xla__BufferAllocationProto *ap = ba->buffer_allocations[i];
		xpf_plan_alloc *x = &p->allocs[i];
		x->index = ap->index;
		x->bytes = ap->size > 0 ? (uint64_t)ap->size : 0;
		x->color = ap->color;
		x->is_parameter = ap->is_entry_computation_parameter;
		x->maybe_live_out = ap->maybe_live_out;
		x->is_thread_local = ap->is_thread_local;
		x->is_constant = ap->is_constant;
		x->is_tuple = ap->is_tuple;
		x->parameter_number = x->is_parameter ? ap->parameter_number : -1;
		x->parameter_shape_index = x->is_parameter ?
						   xpf_index_text(a, ap->parameter_shape_index,
								  ap->n_parameter_shape_index) :
						   "";
		if (x->is_parameter) {
			x->donated =
				ap->is_parameter_aliased_with_output || leaves_have(&aliased, ap);
			x->donor_only = !x->donated && leaves_have(&donors, ap);
		}
		x->kind = x->is_parameter    ? XPF_KIND_PARAMETER :
			  x->maybe_live_out  ? XPF_KIND_OUTPUT :
			  x->is_thread_local ? XPF_KIND_THREAD_LOCAL :
			  x->is_constant     ? XPF_KIND_CONSTANT :
					       XPF_KIND_TEMP;
		/* thread-local allocations live for the whole program too, but
		 * XLA's peak_memory_in_bytes leaves them out (SPEC §4.1: they
		 * are reported apart, as thread_local_bytes) */
		x->indefinite = x->kind != XPF_KIND_TEMP && x->kind != XPF_KIND_THREAD_LOCAL;
		x->largest = -1;
		x->buffers = xpf_arena_array(a, ap->n_assigned, sizeof *x->buffers);
		for (size_t k = 0; k < ap->n_assigned; k++) {
			const Xla__BufferAllocationProto__Assigned *as = ap->assigned[k];
			const xpf_plan_buffer *cb = xpf_plan_buffer_by_id(p, as->logical_buffer_id);
			if (cb == NULL)
				continue;
			size_t bi = (size_t)(cb - p->buffers);
			p->buffers[bi].alloc = (long)i;
			p->buffers[bi].offset = as->offset > 0 ? (uint64_t)as->offset : 0;
			x->buffers[x->nbuffers++] = bi;
			if (x->largest < 0 || cb->bytes > p->buffers[x->largest].bytes)
				x->largest = (long)bi;
		}

		xpf_plan_color *col = color_slot(p, x->color);
		col->bytes += x->bytes;
		col->nallocs++;
		col->kind_bytes[x->kind] += x->bytes;
		p->total_bytes += x->bytes;
		p->kind_bytes[x->kind] += x->bytes;
		p->kind_count[x->kind]++;
		if (x->color == XPF_HOST_COLOR)
			p->host_bytes += x->bytes;
		if (!xpf_plan_device_color(p, x->color))
			continue;
		if (x->is_parameter) {
			p->parameters_bytes += x->bytes;
			p->parameters_count++;
			if (x->donated) {
				p->donated_bytes += x->bytes;
				p->donated_count++;
			}
			if (x->donor_only) {
				p->donor_only_bytes += x->bytes;
				p->donor_only_count++;
			}
		}
		if (x->maybe_live_out)
			p->outputs_bytes += x->bytes;
		switch (x->kind) {
		case XPF_KIND_OUTPUT: p->non_aliased_outputs_bytes += x->bytes; break;
		case XPF_KIND_CONSTANT: p->constants_bytes += x->bytes; break;
		case XPF_KIND_THREAD_LOCAL: p->thread_local_bytes += x->bytes; break;
		case XPF_KIND_TEMP: p->temp_bytes += x->bytes; break;
		default: break;
		}
		if (x->indefinite)
			p->indefinite_bytes += x->bytes;
	}
	p->need_bytes = p->parameters_bytes + p->non_aliased_outputs_bytes + p->temp_bytes +
			p->constants_bytes;
	free(aliased.v);
	free(donors.v);
}

/* ---- parameters and outputs ------------------------------------------- */

/* The entry computation's parameter instructions by number (NULL where a
 * number has none); n is one past the largest number. */
static int64_t entry_param_number(plan_src *s, const xpf_plan_instr *x)
{
	if (!x->in_entry || strcmp(x->opcode, "parameter") != 0)
		return -1;
	return xpf_plan_proto(s, x)->parameter_number;
}

static const xpf_plan_instr **entry_params(const xpf_plan *p, plan_src *s, size_t *n)
{
	size_t max = 0;
	for (size_t i = 0; i < p->ninstrs; i++) {
		int64_t k = entry_param_number(s, &p->instrs[i]);
		if (k >= 0 && (uint64_t)k < p->ninstrs && (size_t)k + 1 > max)
			max = (size_t)k + 1;
	}
	const xpf_plan_instr **by = calloc(max ? max : 1, sizeof *by);
	if (by == NULL)
		abort();
	for (size_t i = 0; i < p->ninstrs; i++) {
		int64_t k = entry_param_number(s, &p->instrs[i]);
		if (k >= 0 && (uint64_t)k < max && by[k] == NULL)
			by[k] = &p->instrs[i];
	}
	*n = max;
	return by;
}

int xpf_plan_cmp_param(const void *a, const void *b)
{
	const xpf_plan_param *x = a, *y = b;
	if (x->number != y->number)
		return x->number < y->number ? -1 : 1;
	return strcmp(x->shape_index, y->shape_index);
}

/* An undonated parameter an output could reuse: the candidates sorted by
 * shape, then by position in p->params, so that the outputs take each
 * shape's run from its front, as a scan of p->params in order would. */
typedef struct candidate {
	const Xla__ShapeProto *shape;
	size_t param;
} candidate;

static int cmp_candidate(const void *a, const void *b)
{
	const candidate *x = a, *y = b;
	int c = xpf_shape_cmp(x->shape, y->shape);
	if (c)
		return c;
	return x->param < y->param ? -1 : x->param > y->param;
}

static bool shape_below(const void *x, const void *s)
{
	return xpf_shape_cmp(((const candidate *)x)->shape, s) < 0;
}

/* The first candidate of shape s (the start of its run), or n. */
static size_t shape_run(const candidate *c, size_t n, const Xla__ShapeProto *s)
{
	size_t lo = xpf_lower_bound(s, c, n, sizeof *c, shape_below);
	return lo < n && xpf_shape_cmp(c[lo].shape, s) == 0 ? lo : n;
}

const Xla__ShapeProto *xpf_plan_param_shape(plan_src *s, const xpf_plan_param *x)
{
	const xpf_plan_alloc *al = x->alloc;
	const Xla__BufferAllocationProto *ap = s->ba->buffer_allocations[al - s->p->allocs];
	const Xla__ShapeProto *sh =
		x->instr ? xpf_shape_at(xpf_plan_proto(s, x->instr)->shape,
					ap->parameter_shape_index, ap->n_parameter_shape_index) :
			   NULL;
	if (sh == NULL && al->largest >= 0)
		sh = s->buffer_shape[al->largest];
	return sh;
}

static void params_outputs(xpf_plan *p, plan_src *s, xpf_arena *a)
{
	xpf_buf b = XPF_BUF_INIT;
	size_t nby;
	const xpf_plan_instr **by = entry_params(p, s, &nby);
	p->params = xpf_arena_array(a, p->nallocs, sizeof *p->params);
	p->outputs = xpf_arena_array(a, p->nallocs, sizeof *p->outputs);
	for (size_t i = 0; i < p->nallocs; i++) {
		const xpf_plan_alloc *al = &p->allocs[i];
		if (!al->is_parameter || !xpf_plan_device_color(p, al->color))
			continue;
		xpf_plan_param *x = &p->params[p->nparams++];
		x->number = al->parameter_number;
		x->shape_index = al->parameter_shape_index;
		x->bytes = al->bytes;
		x->donated = al->donated;
		x->alloc = al;
		x->instr = al->parameter_number >= 0 && (uint64_t)al->parameter_number < nby ?
				   by[al->parameter_number] :
				   NULL;
		const Xla__ShapeProto *sh = xpf_plan_param_shape(s, x);
		xpf_buf_reset(&b);
		if (sh)
			xpf_shape_text(sh, true, &b);
		x->shape = xpf_plan_str(p, b.data ? b.data : "");
		x->element_type = sh ? (int)sh->element_type : 0;
		x->dtype = sh ? xpf_dtype_name(x->element_type) : "";
		x->elements = xpf_shape_elements(sh);
	}
	xpf_buf_release(&b);
	free(by);
	xpf_qsort(p->params, p->nparams, sizeof *p->params, xpf_plan_cmp_param);

	/* taken[r]: how many of the run starting at r are taken */
	candidate *cand = calloc(p->nparams ? p->nparams : 1, sizeof *cand);
	size_t ncand = 0, *taken = calloc(p->nparams ? p->nparams : 1, sizeof *taken);
	if (cand == NULL || taken == NULL)
		abort();
	for (size_t k = 0; k < p->nparams; k++) {
		const Xla__ShapeProto *sh = xpf_plan_param_shape(s, &p->params[k]);
		if (!p->params[k].donated && xpf_shape_is_array(sh))
			cand[ncand++] = (candidate){ sh, k };
	}
	xpf_qsort(cand, ncand, sizeof *cand, cmp_candidate);
	for (size_t i = 0; i < p->nallocs; i++) {
		const xpf_plan_alloc *al = &p->allocs[i];
		if (al->kind != XPF_KIND_OUTPUT || !xpf_plan_device_color(p, al->color))
			continue;
		xpf_plan_output *o = &p->outputs[p->noutputs++];
		o->alloc = al;
		o->buffer = al->largest >= 0 ? &p->buffers[al->largest] : NULL;
		o->shape = o->buffer ? o->buffer->shape : "";
		o->dtype = o->buffer ? o->buffer->dtype : "";
		const Xla__ShapeProto *sh = o->buffer ? s->buffer_shape[al->largest] : NULL;
		if (!xpf_shape_is_array(sh))
			continue;
		size_t r = shape_run(cand, ncand, sh);
		if (r == ncand)
			continue;
		size_t k = r + taken[r];
		if (k == ncand || xpf_shape_cmp(cand[k].shape, cand[r].shape) != 0)
			continue; /* every parameter of that shape is taken */
		taken[r]++;
		o->matches = &p->params[cand[k].param];
		p->matching_output_bytes += al->bytes;
	}
	free(cand);
	free(taken);
}

/* After the first pass: buffers, allocations, parameters and outputs. */
void xpf_plan_assignment(xpf_plan *p, plan_src *s, xpf_arena *a)
{
	p->has_assignment = true;
	index_buffers(p, s, a);
	index_allocs(p, s->mod, s->ba, a);
	params_outputs(p, s, a);
}
