/* The plan of a module, decoded from its HloProto (SPEC §4.1; reference §3,
 * §5).  This file indexes the instructions (the first pass, a
 * computation unpacked at a time), then builds the plan in stages and
 * frees it: plan_assign.c reads the buffer assignment
 * (buffers, allocations and their kinds and colours, parameters, donation
 * and outputs), plan_heap.c simulates the heap, plan_roles.c and
 * plan_dups.c classify what is live at the peak. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/plan/plan_priv.h"
#include "common/alloc.h"

/* "file:line", else the innermost stack frame "file:line:col" (reference
 * §8.4, xprof's order). */
static const char *source_of(xpf_plan *p, const Xla__HloModuleProto *mod, const Xla__OpMetadata *md,
			     xpf_buf *b)
{
	if (md == NULL)
		return "";
	xpf_buf_reset(b);
	if (md->source_file && md->source_file[0]) {
		xpf_buf_adds(b, md->source_file);
		xpf_buf_addc(b, ':');
		xpf_buf_add_i64(b, md->source_line);
		return xpf_plan_str(p, b->data);
	}
	const Xla__StackFrameIndexProto *sf = mod->stack_frame_index;
	int32_t id = md->stack_frame_id;
	if (sf == NULL || id <= 0 || (size_t)id > sf->n_stack_frames)
		return "";
	int32_t loc = sf->stack_frames[id - 1]->file_location_id;
	if (loc <= 0 || (size_t)loc > sf->n_file_locations)
		return "";
	const Xla__StackFrameIndexProto__FileLocation *fl = sf->file_locations[loc - 1];
	const char *file = "?";
	if (fl->file_name_id > 0 && (size_t)fl->file_name_id <= sf->n_file_names)
		file = sf->file_names[fl->file_name_id - 1];
	xpf_buf_printf(b, "%s:%d:%d", file, fl->line, fl->column);
	return xpf_plan_str(p, b->data);
}

/* A while loop's known trip count from its backend_config, JSON such as
 * {"known_trip_count":{"n":"4"}} (XLA's WhileLoopBackendConfig); 0 when
 * it has none. */
static int64_t trip_count_of(const Xla__HloInstructionProto *in)
{
	static const char key[] = "\"known_trip_count\"";
	const char *s = (const char *)in->backend_config.data;
	size_t n = in->backend_config.len;
	if (s == NULL || strcmp(in->opcode, "while") != 0)
		return 0;
	const char *k = memmem(s, n, key, sizeof key - 1);
	if (k == NULL)
		return 0;
	const char *e = s + n, *q = k + sizeof key - 1;
	const char *nk = memmem(q, (size_t)(e - q), "\"n\"", 3);
	if (nk == NULL || nk - q > 8)
		return 0;
	q = nk + 3;
	while (q < e && (*q == ':' || *q == ' ' || *q == '"'))
		q++;
	int64_t v = 0;
	for (; q < e && *q >= '0' && *q <= '9' && v < INT64_MAX / 10 - 9; q++)
		v = v * 10 + (*q - '0');
	return v;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* The first pass over the computations, one unpacked at a time: the
 * instructions, and what marks the entry and the fusion bodies once all
 * are seen (older protos do not set is_fusion_computation: the callees of
 * fusion instructions are fused too). */
typedef struct instr_pass {
	size_t cap;             /* of p->instrs, s->comp, s->pos */
	const char **comp_name; /* by computation */
	bool *comp_fused;       /* by computation */
	int64_t *callees;       /* called by fusion instructions */
	size_t ncallees, callees_cap;
	xpf_buf b;
} instr_pass;

static void add_instr(xpf_plan *p, plan_src *s, instr_pass *ip, const Xla__HloComputationProto *cp,
		      size_t k, size_t i)
{
	const Xla__HloInstructionProto *in = cp->instructions[i];
	const Xla__OpMetadata *md = in->metadata;
	s->comp[p->ninstrs] = (uint32_t)k;
	s->pos[p->ninstrs] = (uint32_t)i;
	xpf_plan_instr *x = &p->instrs[p->ninstrs++];
	*x = (xpf_plan_instr){ .id = in->id, .computation_id = cp->id };
	x->name = xpf_plan_str(p, in->name);
	x->opcode = xpf_plan_str(p, in->opcode);
	x->computation = ip->comp_name[k];
	x->remat = strstr(in->name, ".remat") != NULL;
	x->op_name = md ? xpf_plan_str(p, md->op_name) : "";
	x->source = source_of(p, s->mod, md, &ip->b);
	xpf_buf_reset(&ip->b);
	xpf_shape_text(in->shape, true, &ip->b);
	x->shape = xpf_plan_str(p, ip->b.data ? ip->b.data : "");
	x->dtype = in->shape ? xpf_dtype_name(in->shape->element_type) : "";
	x->fusion_kind = xpf_plan_str(p, in->fusion_kind);
	x->trip_count = trip_count_of(in);
	x->order = -1;
	x->stack_frame_id = md ? md->stack_frame_id : 0;
	x->source_line = md ? md->source_line : 0;
	x->source_file = md ? xpf_plan_str(p, md->source_file) : "";
	if (in->shape && in->shape->layout && in->shape->layout->n_tiles)
		p->tpu = true;
	if (x->remat)
		p->remat_instructions++;
	if (strcmp(in->opcode, "fusion") == 0)
		for (size_t c = 0; c < in->n_called_computation_ids; c++)
			*XPF_VEC_PUSH(ip->callees, ip->ncallees, ip->callees_cap) =
				in->called_computation_ids[c];
}

static int64_t entry_id(const plan_src *s, const instr_pass *ip)
{
	for (size_t c = 0; c < s->ncomps; c++)
		if (s->mod->entry_computation_name[0] &&
		    strcmp(ip->comp_name[c], s->mod->entry_computation_name) == 0)
			return s->comp_id[c];
	for (size_t c = 0; c < s->ncomps; c++)
		if (s->comp_id[c] == s->mod->entry_computation_id)
			return s->comp_id[c];
	/* callees precede callers: the entry comes last */
	return s->ncomps ? s->comp_id[s->ncomps - 1] : -1;
}

static int pass_computations(xpf_plan *p, plan_src *s, instr_pass *ip, xpf_error *err)
{
	for (size_t k = 0; k < s->ncomps; k++) {
		const Xla__HloComputationProto *cp;
		int rc = xpf_hlo_computation(s->hlo, k, &cp, err);
		if (rc != XPF_OK)
			return rc;
		ip->comp_name[k] = xpf_plan_str(p, cp->name);
		ip->comp_fused[k] = cp->is_fusion_computation;
		s->comp_id[k] = cp->id;
		s->root_id[k] = cp->root_id;
		/* room for this computation's instructions, doubling: a plan keeps
		 * its instructions, and a module of a few (most of a capture's
		 * modules) should not keep room for a thousand */
		if (cp->n_instructions > ip->cap - p->ninstrs) {
			size_t cap = ip->cap ? ip->cap : 16;
			while (cap - p->ninstrs < cp->n_instructions)
				cap *= 2;
			ip->cap = cap;
			p->instrs = xpf_realloc_array(p->instrs, cap, sizeof *p->instrs);
			s->comp = xpf_realloc_array(s->comp, cap, sizeof *s->comp);
			s->pos = xpf_realloc_array(s->pos, cap, sizeof *s->pos);
		}
		for (size_t i = 0; i < cp->n_instructions; i++)
			add_instr(p, s, ip, cp, k, i);
		xpf_hlo_drop(s->hlo, k);
	}
	return XPF_OK;
}

static int index_instrs(xpf_plan *p, plan_src *s, xpf_arena *a, xpf_error *err)
{
	instr_pass ip = { 0 };
	s->ncomps = xpf_hlo_ncomputations(s->hlo);
	size_t nc = s->ncomps ? s->ncomps : 1;
	s->comp_id = xpf_calloc(nc, sizeof *s->comp_id);
	s->root_id = xpf_calloc(nc, sizeof *s->root_id);
	ip.comp_name = xpf_calloc(nc, sizeof *ip.comp_name);
	ip.comp_fused = xpf_calloc(nc, sizeof *ip.comp_fused);
	int rc = pass_computations(p, s, &ip, err);
	if (rc == XPF_OK && p->ninstrs && p->ninstrs < ip.cap) /* the plan keeps it: no room to spare */
		p->instrs = xpf_realloc_array(p->instrs, p->ninstrs, sizeof *p->instrs);
	if (rc == XPF_OK) {
		int64_t entry = entry_id(s, &ip);
		if (ip.ncallees)
			xpf_qsort(ip.callees, ip.ncallees, sizeof *ip.callees, cmp_i64);
		for (size_t k = 0; k < s->ncomps; k++)
			ip.comp_fused[k] |=
				ip.ncallees && bsearch(&s->comp_id[k], ip.callees, ip.ncallees,
						       sizeof *ip.callees, cmp_i64);
		for (size_t i = 0; i < p->ninstrs; i++) {
			p->instrs[i].in_entry = p->instrs[i].computation_id == entry;
			p->instrs[i].in_fusion = ip.comp_fused[s->comp[i]];
		}
	}
	/* the plan's arena frees the instructions from now on */
	if (p->instrs == NULL) {
		p->instrs = xpf_arena_array(a, 0, sizeof *p->instrs);
	} else {
		xpf_arena_alloc(a, 0);
		free(a->ptrs[a->n - 1]);
		a->ptrs[a->n - 1] = p->instrs;
	}
	if (rc != XPF_OK)
		p->ninstrs = 0;
	free(ip.comp_name);
	free(ip.comp_fused);
	free(ip.callees);
	xpf_buf_release(&ip.b);
	return rc;
}

/* Each scheduled instruction's position in its computation's sequence. */
static void schedule_order(xpf_plan *p, const Xla__HloModuleProto *mod)
{
	const Xla__HloScheduleProto *sc = mod->schedule;
	for (size_t k = 0; sc && k < sc->n_sequences; k++) {
		const Xla__HloScheduleProto__InstructionSequence *q = sc->sequences[k]->value;
		for (size_t i = 0; q && i < q->n_instruction_ids; i++) {
			const xpf_plan_instr *in = xpf_plan_instr_by_id(p, q->instruction_ids[i]);
			if (in && in->order < 0)
				p->instrs[in - p->instrs].order = (long)i;
		}
	}
}

/* ---- the plan --------------------------------------------------------- */

int xpf_plan_build_parts(xpf_hlo *hlo, const char *module, uint64_t program_id, xpf_plan **out,
			 xpf_error *err)
{
	plan_priv *pv = xpf_calloc(1, sizeof *pv);
	xpf_plan *p = xpf_calloc(1, sizeof *p);
	p->priv = pv;
	pv->strings = xpf_intern_new();
	xpf_arena *a = &pv->arena;
	const Xla__HloProto *head = xpf_hlo_head(hlo);
	plan_src s = { .p = p, .hlo = hlo, .mod = head->hlo_module, .ba = head->buffer_assignment };

	p->module = module;
	p->program_id = program_id;
	p->hlo_name = s.mod ? xpf_plan_str(p, s.mod->name) : "";
	p->peak_position = -1;
	p->peak_instruction = "";
	p->missing = "";
	int rc = s.mod ? index_instrs(p, &s, a, err) : XPF_OK;
	if (rc == XPF_OK) {
		pv->instr_by_id = xpf_plan_index_instr_ids(p, a);
		if (s.mod)
			schedule_order(p, s.mod);
		if (s.mod == NULL || s.ba == NULL) {
			p->missing =
				s.mod == NULL ?
					"the HloProto has no hlo_module" :
					"the HloProto carries no buffer_assignment (the executable "
					"did not register one: "
					"XLA_FLAGS=--xla_gpu_executable_embed_debug_info is off, "
					"or the backend does not export it)";
			pv->buffer_by_id = xpf_plan_index_buffer_ids(p, 0, a);
		} else {
			/* buffers and allocations, then the heap, what is live at
			 * its peak and in which role, the parameters' copies */
			xpf_plan_assignment(p, &s, a);
			rc = xpf_plan_simulate(p, s.ba, a, err);
			if (rc == XPF_OK) {
				xpf_plan_peak_roles(p);
				xpf_plan_find_dups(p, &s, a);
			}
		}
	}
	free(s.comp);
	free(s.pos);
	free(s.comp_id);
	free(s.root_id);
	free(s.buffer_shape);
	if (rc != XPF_OK) {
		xpf_plan_free(p);
		return rc;
	}
	*out = p;
	return XPF_OK;
}

int xpf_plan_build(const Xla__HloProto *hlo, const char *module, uint64_t program_id,
		   xpf_plan **out, xpf_error *err)
{
	xpf_hlo *h = xpf_hlo_of(hlo);
	int rc = xpf_plan_build_parts(h, module, program_id, out, err);
	xpf_hlo_free(h);
	return rc;
}

void xpf_plan_free(void *plan)
{
	xpf_plan *p = plan;
	if (p == NULL)
		return;
	plan_priv *pv = p->priv;
	if (pv) {
		xpf_arena_release(&pv->arena);
		xpf_intern_free(pv->strings);
		free(pv);
	}
	free(p);
}

int xpf_plan_build_module(xpf_capture *cap, size_t m, xpf_plan **out, xpf_error *err)
{
	const xpf_module_ref *ref = xpf_capture_module(cap, m);
	if (ref == NULL)
		return xpf_fail(err, XPF_EUSAGE, "module %zu does not exist", m);
	if (!ref->has_hlo) {
		static const Xla__HloProto empty = XLA__HLO_PROTO__INIT;
		int rc = xpf_plan_build(&empty, ref->name, ref->program_id, out, err);
		if (rc == XPF_OK)
			(*out)->missing = "the metadata entry carries no `Hlo Proto` stat";
		return rc;
	}
	xpf_hlo *hlo = NULL;
	int rc = xpf_capture_module_hlo(cap, m, &hlo, err);
	if (rc != XPF_OK)
		return rc;
	rc = xpf_plan_build_parts(hlo, ref->name, ref->program_id, out, err);
	xpf_hlo_free(hlo);
	return rc;
}
