/* Roles of the buffers live at the heap peak (SPEC §4.1): first match of
 * parameter, output, workspace, backward, forward, other.  The op_name test
 * follows JAX's name stack (reference §8.1): `transpose(` wraps the backward
 * pass, `jvp(` the forward pass whose results are kept for it. */
#include <string.h>

#include "analysis/plan/plan_priv.h"

static bool is_workspace(const xpf_plan_buffer *b)
{
	const xpf_plan_instr *in = b->instr;
	if (in == NULL)
		return false;
	bool library = strcmp(in->opcode, "custom-call") == 0 ||
		       (strcmp(in->opcode, "fusion") == 0 && strcmp(in->fusion_kind, "kCustom") == 0);
	return library && (strcmp(b->dtype, "s8") == 0 || strcmp(b->dtype, "u8") == 0);
}

static int role_of_op_name(const char *op_name)
{
	if (op_name == NULL)
		return -1;
	if (strstr(op_name, "transpose("))
		return XPF_PLAN_ROLE_BACKWARD;
	if (strstr(op_name, "jvp("))
		return XPF_PLAN_ROLE_FORWARD;
	return -1;
}

enum xpf_role xpf_plan_role_of(const xpf_plan *p, const xpf_plan_buffer *b, enum xpf_kind kind)
{
	(void)p;
	if (kind == XPF_KIND_PARAMETER)
		return XPF_PLAN_ROLE_PARAMETER;
	if (kind == XPF_KIND_OUTPUT)
		return XPF_PLAN_ROLE_OUTPUT;
	if (b == NULL)
		return XPF_PLAN_ROLE_OTHER;
	if (is_workspace(b))
		return XPF_PLAN_ROLE_WORKSPACE;
	int r = role_of_op_name(b->instr ? b->instr->op_name : NULL);
	for (size_t i = 0; r < 0 && i < b->naliases; i++)
		r = role_of_op_name(b->aliases[i]->op_name);
	return r < 0 ? XPF_PLAN_ROLE_OTHER : (enum xpf_role)r;
}

/* ---- the peak, by role -------------------------------------------------- */

static int cmp_peak(const void *a, const void *b)
{
	const xpf_plan_peak *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	const char *nx = x->buffer && x->buffer->instr ? x->buffer->instr->name : "";
	const char *ny = y->buffer && y->buffer->instr ? y->buffer->instr->name : "";
	int c = strcmp(nx, ny);
	if (c)
		return c;
	int64_t ix = x->alloc ? x->alloc->index : -1, iy = y->alloc ? y->alloc->index : -1;
	if (ix != iy)
		return ix < iy ? -1 : 1;
	int64_t bx = x->buffer ? x->buffer->id : -1, by = y->buffer ? y->buffer->id : -1;
	return bx < by ? -1 : bx > by;
}

void xpf_plan_peak_roles(xpf_plan *p)
{
	for (size_t i = 0; i < p->npeak; i++) {
		xpf_plan_peak *pk = &p->peak[i];
		pk->role = xpf_plan_role_of(p, pk->buffer, pk->kind);
		p->role_bytes[pk->role] += pk->bytes;
	}
	xpf_qsort(p->peak, p->npeak, sizeof *p->peak, cmp_peak);
}
