/* The plan's lookups: instructions by id and by name, buffers by id. */
#include <stdint.h>
#include <string.h>

#include "analysis/plan/plan_priv.h"
#include "common/bisect.h"

/* Ties keep index order: a lookup finds the first of equal keys. */
static int cmp_id_ix(const void *a, const void *b)
{
	const id_ix *x = a, *y = b;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

static int cmp_name_ix(const void *a, const void *b)
{
	const name_ix *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	if (c)
		return c;
	return x->i < y->i ? -1 : x->i > y->i;
}

id_ix *xpf_plan_index_instr_ids(const xpf_plan *p, xpf_arena *a)
{
	id_ix *ix = xpf_arena_array(a, p->ninstrs, sizeof *ix);
	for (size_t i = 0; i < p->ninstrs; i++)
		ix[i] = (id_ix){ p->instrs[i].id, i };
	xpf_qsort(ix, p->ninstrs, sizeof *ix, cmp_id_ix);
	return ix;
}

name_ix *xpf_plan_index_instr_names(const xpf_plan *p, xpf_arena *a)
{
	name_ix *ix = xpf_arena_array(a, p->ninstrs, sizeof *ix);
	for (size_t i = 0; i < p->ninstrs; i++)
		ix[i] = (name_ix){ p->instrs[i].name, i };
	xpf_qsort(ix, p->ninstrs, sizeof *ix, cmp_name_ix);
	return ix;
}

id_ix *xpf_plan_index_buffer_ids(const xpf_plan *p, size_t n, xpf_arena *a)
{
	id_ix *ix = xpf_arena_array(a, n, sizeof *ix);
	for (size_t i = 0; i < n; i++)
		ix[i] = (id_ix){ p->buffers[i].id, i };
	xpf_qsort(ix, n, sizeof *ix, cmp_id_ix);
	return ix;
}

static bool id_below(const void *x, const void *id)
{
	return ((const id_ix *)x)->id < *(const int64_t *)id;
}

/* The index of the first pair of key id, or SIZE_MAX. */
static size_t find_id(const id_ix *ix, size_t n, int64_t id)
{
	size_t lo = xpf_lower_bound(&id, ix, n, sizeof *ix, id_below);
	return lo < n && ix[lo].id == id ? ix[lo].i : SIZE_MAX;
}

const xpf_plan_instr *xpf_plan_instr_by_id(const xpf_plan *p, int64_t id)
{
	size_t i = find_id(((const plan_priv *)p->priv)->instr_by_id, p->ninstrs, id);
	return i == SIZE_MAX ? NULL : &p->instrs[i];
}

static bool name_below(const void *x, const void *name)
{
	return strcmp(((const name_ix *)x)->name, name) < 0;
}

const xpf_plan_instr *xpf_plan_instr_by_name(xpf_plan *p, xpf_arena *a, const char *name)
{
	plan_priv *pv = p->priv;
	if (pv->instr_by_name == NULL)
		pv->instr_by_name = xpf_plan_index_instr_names(p, a);
	const name_ix *ix = pv->instr_by_name;
	size_t lo = xpf_lower_bound(name, ix, p->ninstrs, sizeof *ix, name_below);
	return lo < p->ninstrs && strcmp(ix[lo].name, name) == 0 ? &p->instrs[ix[lo].i] : NULL;
}

const xpf_plan_buffer *xpf_plan_buffer_by_id(const xpf_plan *p, int64_t id)
{
	size_t i = find_id(((const plan_priv *)p->priv)->buffer_by_id, p->nbuffers, id);
	return i == SIZE_MAX ? NULL : &p->buffers[i];
}

const Xla__HloInstructionProto *xpf_plan_proto(plan_src *s, const xpf_plan_instr *in)
{
	size_t i = (size_t)(in - s->p->instrs);
	const Xla__HloComputationProto *cp;
	/* it decoded in the first pass: only memory can run out now */
	if (xpf_hlo_computation(s->hlo, s->comp[i], &cp, NULL) != XPF_OK)
		abort();
	return cp->instructions[s->pos[i]];
}
