/* Copies of entry parameters made by a layout change or a dtype conversion
 * (reference §10; openxla/xla#26987): an instruction outside fusion bodies
 * that transposes, copies to another layout, or converts a value that is an
 * entry parameter seen through bitcast, copy, get-tuple-element, tuple and
 * while-loop parameter plumbing.  Its buffer sits in a temp allocation, or
 * borrows an output allocation before the output is written there (XLA
 * reuses an output's memory for values that die before it: the bf16
 * copies of f32 weights, in a step that returns their f32 gradients); the
 * diagnosis counts those live at the heap peak. */
#include <stdlib.h>
#include <string.h>

#include "analysis/plan/plan_priv.h"
#include "common/bisect.h"

#define MAX_DEPTH 64

typedef struct origin {
	const xpf_plan_instr *param; /* the entry parameter instruction */
	int64_t index[MAX_DEPTH];    /* shape index inside it */
	size_t nindex;
} origin;

static bool is_op(const xpf_plan_instr *in, const char *op) { return strcmp(in->opcode, op) == 0; }

static const xpf_plan_instr *operand(plan_src *s, const xpf_plan_instr *in, size_t k)
{
	const Xla__HloInstructionProto *ip = xpf_plan_proto(s, in);
	if (k >= ip->n_operand_ids)
		return NULL;
	return xpf_plan_instr_by_id(s->p, ip->operand_ids[k]);
}

/* While loops by the computations they call, so that a body's parameter
 * leads back to the loop's operand. */
typedef struct callee {
	int64_t comp;
	const xpf_plan_instr *caller;
} callee;

/* Computations by id, each with its root, so that a fusion finds its fused
 * root without scanning the module. */
typedef struct comp_root {
	int64_t comp;
	size_t order;               /* proto order: the first of a repeated id wins */
	const xpf_plan_instr *root; /* NULL if its root_id names no instruction */
} comp_root;

typedef struct dup_ctx {
	callee *whiles;
	size_t nwhiles;
	comp_root *comps;
	size_t ncomps;
	bool *at_peak;              /* by buffer index: a row of peak_buffers.tsv */
	const xpf_plan_instr *peak; /* the instruction at the heap peak, or NULL */
} dup_ctx;

static int cmp_callee(const void *a, const void *b)
{
	const callee *x = a, *y = b;
	if (x->comp != y->comp)
		return x->comp < y->comp ? -1 : 1;
	return x->caller < y->caller ? -1 : x->caller > y->caller;
}

static void index_whiles(const xpf_plan *p, plan_src *s, dup_ctx *c)
{
	size_t n = 0;
	for (size_t i = 0; i < p->ninstrs; i++)
		if (is_op(&p->instrs[i], "while"))
			n += xpf_plan_proto(s, &p->instrs[i])->n_called_computation_ids;
	c->whiles = calloc(n ? n : 1, sizeof *c->whiles);
	if (c->whiles == NULL)
		abort();
	for (size_t i = 0; i < p->ninstrs; i++) {
		const xpf_plan_instr *in = &p->instrs[i];
		if (!is_op(in, "while"))
			continue;
		const Xla__HloInstructionProto *ip = xpf_plan_proto(s, in);
		for (size_t k = 0; k < ip->n_called_computation_ids; k++)
			c->whiles[c->nwhiles++] = (callee){ ip->called_computation_ids[k], in };
	}
	if (c->nwhiles)
		xpf_qsort(c->whiles, c->nwhiles, sizeof *c->whiles, cmp_callee);
}

static bool callee_below(const void *x, const void *comp)
{
	return ((const callee *)x)->comp < *(const int64_t *)comp;
}

static const xpf_plan_instr *while_caller(const dup_ctx *c, int64_t comp)
{
	size_t lo = xpf_lower_bound(&comp, c->whiles, c->nwhiles, sizeof *c->whiles, callee_below);
	return lo < c->nwhiles && c->whiles[lo].comp == comp ? c->whiles[lo].caller : NULL;
}

/* Follow value `in` at shape index stack[0..n) (innermost last) back to an
 * entry parameter. */
static bool trace(plan_src *s, const dup_ctx *c, const xpf_plan_instr *in, int64_t *stack, size_t n,
		  int depth, origin *o)
{
	if (in == NULL || depth > MAX_DEPTH)
		return false;
	if (is_op(in, "parameter")) {
		if (in->in_entry) {
			o->param = in;
			o->nindex = 0;
			for (size_t i = n; i > 0; i--)
				o->index[o->nindex++] = stack[i - 1];
			return true;
		}
		return trace(s, c, while_caller(c, in->computation_id), stack, n, depth + 1, o);
	}
	if (is_op(in, "while"))
		return trace(s, c, operand(s, in, 0), stack, n, depth + 1, o);
	if (is_op(in, "bitcast") || is_op(in, "copy"))
		return trace(s, c, operand(s, in, 0), stack, n, depth + 1, o);
	if (is_op(in, "get-tuple-element")) {
		if (n >= MAX_DEPTH)
			return false;
		stack[n] = xpf_plan_proto(s, in)->tuple_index;
		return trace(s, c, operand(s, in, 0), stack, n + 1, depth + 1, o);
	}
	if (is_op(in, "tuple") && n > 0) {
		int64_t k = stack[n - 1];
		if (k < 0)
			return false;
		return trace(s, c, operand(s, in, (size_t)k), stack, n - 1, depth + 1, o);
	}
	return false;
}

static int cmp_comp_root(const void *a, const void *b)
{
	const comp_root *x = a, *y = b;
	if (x->comp != y->comp)
		return x->comp < y->comp ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static void index_comps(const xpf_plan *p, const plan_src *s, dup_ctx *c)
{
	c->ncomps = s->ncomps;
	c->comps = calloc(c->ncomps ? c->ncomps : 1, sizeof *c->comps);
	if (c->comps == NULL)
		abort();
	for (size_t i = 0; i < c->ncomps; i++)
		c->comps[i] = (comp_root){ s->comp_id[i], i, xpf_plan_instr_by_id(p, s->root_id[i]) };
	xpf_qsort(c->comps, c->ncomps, sizeof *c->comps, cmp_comp_root);
}

static bool comp_root_below(const void *x, const void *comp)
{
	return ((const comp_root *)x)->comp < *(const int64_t *)comp;
}

/* The fused root's opcode, looking through bitcasts; NULL if none. */
static const xpf_plan_instr *fused_root(plan_src *s, const dup_ctx *c, const xpf_plan_instr *in)
{
	const Xla__HloInstructionProto *ip = xpf_plan_proto(s, in);
	if (ip->n_called_computation_ids == 0)
		return NULL;
	int64_t cid = ip->called_computation_ids[0];
	size_t lo = xpf_lower_bound(&cid, c->comps, c->ncomps, sizeof *c->comps, comp_root_below);
	if (lo == c->ncomps || c->comps[lo].comp != cid)
		return NULL;
	const xpf_plan_instr *r = c->comps[lo].root;
	for (int g = 0; r && is_op(r, "bitcast") && g < MAX_DEPTH; g++)
		r = operand(s, r, 0);
	return r;
}

static bool param_below(const void *x, const void *key) { return xpf_plan_cmp_param(x, key) < 0; }

/* The first parameter leaf at o (p->params is sorted by number, then shape
 * index). */
static const xpf_plan_param *param_at(plan_src *s, const origin *o, xpf_arena *a)
{
	const xpf_plan *p = s->p;
	xpf_plan_param key = { .number = xpf_plan_proto(s, o->param)->parameter_number,
			       .shape_index = xpf_index_text(a, o->index, o->nindex) };
	size_t lo = xpf_lower_bound(&key, p->params, p->nparams, sizeof *p->params, param_below);
	if (lo < p->nparams && xpf_plan_cmp_param(&p->params[lo], &key) == 0)
		return &p->params[lo];
	return NULL;
}

/* The instruction simulated at the heap peak: that of the buffer its step
 * allocates; NULL if none. */
static const xpf_plan_instr *peak_instr(const xpf_plan *p)
{
	for (size_t i = 0; p->peak_position >= 0 && i < p->nbuffers; i++)
		if (p->buffers[i].start == p->peak_position && p->buffers[i].instr &&
		    strcmp(p->buffers[i].instr->name, p->peak_instruction) == 0)
			return p->buffers[i].instr;
	return NULL;
}

static void mark_peak_rows(const xpf_plan *p, dup_ctx *c)
{
	c->at_peak = calloc(p->nbuffers ? p->nbuffers : 1, sizeof *c->at_peak);
	if (c->at_peak == NULL)
		abort();
	for (size_t i = 0; i < p->npeak; i++)
		if (p->peak[i].buffer)
			c->at_peak[p->peak[i].buffer - p->buffers] = true;
}

/* Is b, in an output allocation whose output is another buffer, what that
 * allocation holds at the heap peak: made at or before the peak's
 * instruction, and the output made after it (in the schedule; the heap
 * trace leaves such allocations out)?  False without a schedule. */
static bool borrowed_at_peak(const xpf_plan *p, const xpf_plan_instr *peak, const xpf_plan_buffer *b)
{
	const xpf_plan_alloc *al = &p->allocs[b->alloc];
	const xpf_plan_instr *out = al->largest >= 0 ? p->buffers[al->largest].instr : NULL;
	if (peak == NULL || out == NULL || b->instr == NULL || peak->order < 0 ||
	    b->instr->order < 0 || out->order < 0 || peak->computation_id != out->computation_id ||
	    b->instr->computation_id != out->computation_id)
		return false;
	return b->instr->order <= peak->order && peak->order < out->order;
}

static bool live_at_peak(const xpf_plan *p, const dup_ctx *c, const xpf_plan_buffer *b)
{
	if (c->at_peak[b - p->buffers])
		return true;
	if (p->allocs[b->alloc].kind == XPF_KIND_OUTPUT)
		return borrowed_at_peak(p, c->peak, b);
	return p->peak_position >= 0 && b->start >= 0 && b->start <= p->peak_position &&
	       b->end > p->peak_position;
}

/* A buffer a copy may sit in: a temp allocation, or an output allocation
 * whose output (its largest buffer) is another value. */
static bool copy_slot(const xpf_plan *p, const xpf_plan_buffer *b)
{
	if (b->alloc < 0)
		return false;
	const xpf_plan_alloc *al = &p->allocs[b->alloc];
	if (al->kind == XPF_KIND_TEMP)
		return true;
	return al->kind == XPF_KIND_OUTPUT && !al->is_parameter && al->largest >= 0 &&
	       &p->buffers[al->largest] != b && p->buffers[al->largest].bytes > b->bytes;
}

void xpf_plan_find_dups(xpf_plan *p, plan_src *s, xpf_arena *a)
{
	dup_ctx ctx = { 0 }, *c = &ctx;
	index_whiles(p, s, c);
	index_comps(p, s, c);
	mark_peak_rows(p, c);
	c->peak = peak_instr(p);
	p->dups = xpf_arena_array(a, p->nbuffers, sizeof *p->dups);
	for (size_t i = 0; i < p->nbuffers; i++) {
		const xpf_plan_buffer *b = &p->buffers[i];
		const xpf_plan_instr *x = b->instr;
		if (x == NULL || x->in_fusion || b->shape_index[0] || !copy_slot(p, b))
			continue;
		const xpf_plan_instr *op = x;
		if (is_op(x, "fusion"))
			op = fused_root(s, c, x);
		if (op == NULL)
			continue;
		bool layout = is_op(op, "transpose") || is_op(op, "copy");
		bool convert = is_op(op, "convert");
		if (!layout && !convert)
			continue;
		int64_t stack[MAX_DEPTH];
		origin o = { 0 };
		if (!trace(s, c, operand(s, x, 0), stack, 0, 0, &o))
			continue;
		const xpf_plan_param *pp = param_at(s, &o, a);
		const Xla__ShapeProto *ps = pp ? xpf_plan_param_shape(s, pp) : NULL;
		const Xla__ShapeProto *bs = s->buffer_shape[i];
		if (ps == NULL || bs == NULL || xpf_shape_elements(ps) != xpf_shape_elements(bs))
			continue;
		bool same_type = ps->element_type == bs->element_type;
		if (layout && !same_type)
			continue;
		if (convert && same_type)
			continue;
		if (layout && is_op(op, "copy") && xpf_shape_same(ps, bs) && xpf_layout_same(ps, bs))
			continue;
		xpf_plan_dup *d = &p->dups[p->ndups++];
		d->kind = layout ? XPF_DUP_LAYOUT : XPF_DUP_CONVERT;
		d->buffer = b;
		d->param = pp;
		d->at_peak = live_at_peak(p, c, b);
		if (d->at_peak) {
			if (layout)
				p->layout_dup_peak_bytes += b->bytes;
			else
				p->convert_dup_peak_bytes += b->bytes;
		}
	}
	free(ctx.whiles);
	free(ctx.comps);
	free(ctx.at_peak);
}
