/* Does the focus step fit its pool (SPEC §5.2): plan (no capacity known),
 * plan-exceeds-pool, near-fit or fits.  What fills the heap peak when it
 * does not fit is diag_rules_roles.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/diagnosis/diag_priv.h"
#include "analysis/paths.h"
#include "common/alloc.h"

/* "parameter 12.0% (1.5 GiB), temp ..." the roles at the heap peak, largest
 * first. */
static void role_split(const xpf_plan *p, xpf_buf *b)
{
	bool done[XPF_NROLES] = { false };
	char h1[32], pc[32];
	for (int k = 0; k < XPF_NROLES; k++) {
		int best = -1;
		for (int r = 0; r < XPF_NROLES; r++)
			if (!done[r] && p->role_bytes[r] &&
			    (best < 0 || p->role_bytes[r] > p->role_bytes[best]))
				best = r;
		if (best < 0)
			break;
		done[best] = true;
		xpf_buf_printf(b, "%s%s %s%% (%s)", k ? ", " : "", xpf_role_name(best),
			       xpf_pct(p->role_bytes[best], p->heap_peak_bytes, pc),
			       xpf_human(p->role_bytes[best], h1));
	}
}

static const char *const role_fig[XPF_NROLES] = {
	"role_parameter_bytes", "role_output_bytes",  "role_workspace_bytes",
	"role_backward_bytes",  "role_forward_bytes", "role_other_bytes",
};

/* ---- plan, plan-exceeds-pool, near-fit, fits --------------------------- */

static enum xpf_tag verdict_tag(const xpf_diag_ctx *c)
{
	return c->d->capacity_tag == XPF_TAG_MEASURED ? XPF_TAG_MEASURED : XPF_TAG_READ;
}

/* What every verdict against a capacity ends with, so that the three read
 * alike: the need, the capacity and the gap between them (gap_key: short
 * by or to spare), the plan, its peak rows where the text splits the peak
 * by role (peak_rows), and the allocators where the pool was seen. */
static void verdict_tail(xpf_diag_ctx *c, xpf_finding *f, const char *gap_key, bool peak_rows)
{
	uint64_t need = c->p->need_bytes, cap = c->d->capacity_bytes;
	xpf_diag_num(f, "need_bytes", need);
	xpf_diag_num(f, "capacity_bytes", cap);
	xpf_diag_num(f, gap_key, need > cap ? need - cap : cap - need);
	xpf_diag_evidence(f, XPF_EV_MODULE(XPF_F_PLAN_JSON), c->dir);
	if (peak_rows)
		xpf_diag_evidence(f, XPF_EV_MODULE(XPF_F_PEAK_BUFFERS_TSV), c->dir);
	if (c->d->allocator >= 0)
		xpf_diag_evidence(f, XPF_EV_RUNTIME(XPF_F_ALLOCATORS_TSV));
}

/* What the need is made of, as figures: its parts, the heap peak, the
 * request that failed (fr, or NULL) and the roles at the peak, in the
 * order the texts of plan and plan-exceeds-pool give them. */
static void make_up_figures(xpf_finding *f, const xpf_plan *p, const xpf_plan_alloc *fr)
{
	xpf_diag_num(f, "parameters_bytes", p->parameters_bytes);
	xpf_diag_num(f, "non_aliased_outputs_bytes", p->non_aliased_outputs_bytes);
	xpf_diag_num(f, "temp_bytes", p->temp_bytes);
	xpf_diag_num(f, "constants_bytes", p->constants_bytes);
	xpf_diag_num(f, "heap_peak_bytes", p->heap_peak_bytes);
	if (fr) {
		xpf_diag_num(f, "failed_request_bytes", fr->bytes);
		xpf_diag_num(f, "failed_allocation", (uint64_t)fr->index);
	}
	for (int r = 0; r < XPF_NROLES; r++)
		xpf_diag_num(f, role_fig[r], p->role_bytes[r]);
}

/* The memory fraction that would fit the step, as a fix after the program
 * fixes, when the device has the memory for it. */
static void offer_fraction(xpf_diag_ctx *c, xpf_finding *f, uint64_t need)
{
	const xpf_diagnosis *d = c->d;
	char h1[32], h2[32];
	if (d->memory_bytes == 0 || d->capacity_tag != XPF_TAG_MEASURED)
		return;
	/* Leave 5% of the device to the runtime and the libraries. */
	uint64_t usable = d->memory_bytes / 20 * 19;
	if (need <= usable) {
		unsigned frac = (unsigned)((need * 100 + d->memory_bytes - 1) / d->memory_bytes) + 2;
		if (frac > 95)
			frac = 95;
		uint64_t pool = d->memory_bytes / 100 * frac;
		/* SPEC 5.3: capacity is not a saving; it comes after the
		 * program fixes, with what it takes from outside the pool */
		char h3[32];
		size_t nfix = f->nfixes;
		xpf_diag_addfix(c, f, 0, 0,
				d->amd ? "the memory the HIP runtime, MIOpen/hipBLASLt workspaces and RCCL need outside the pool; try the program fixes first" :
					 "the memory the CUDA context, cuDNN/cuBLAS workspaces and NCCL need outside the pool; try the program fixes first",
				"after the program fixes, if still short: XLA_PYTHON_CLIENT_MEM_FRACTION=.%02u adds %s to the pool (not a saving); the device has %s and the step needs %s%s",
				frac, xpf_human(xpf_sub0(pool, d->capacity_bytes), h3),
				xpf_human(d->memory_bytes, h1), xpf_human(need, h2),
				d->fraction_set ?
					" (the capacity is not 75% of the device: the fraction is set already)" :
					"");
		if (f->nfixes > nfix)
			f->fixes[nfix].after_program = true;
	}
}

/* SPEC 5.2 `plan`: no capacity is known (a bare HloProto without
 * --capacity): what takes the memory, so the plan alone still answers. */
static void rule_plan_only(xpf_diag_ctx *c)
{
	const xpf_plan *p = c->p;
	char h1[32], h2[32], h3[32], h4[32], h5[32];
	xpf_buf b = XPF_BUF_INIT;
	xpf_finding *f = xpf_diag_add(c, "plan", XPF_TAG_READ, c->d->module);
	xpf_buf_printf(&b,
		       "%s needs %s: parameters %s + non-aliased outputs %s + temp %s + constants %s",
		       p->module, xpf_human(p->need_bytes, h1), xpf_human(p->parameters_bytes, h2),
		       xpf_human(p->non_aliased_outputs_bytes, h3), xpf_human(p->temp_bytes, h4),
		       xpf_human(p->constants_bytes, h5));
	if (p->simulated || p->npeak) {
		xpf_buf_printf(&b, "; at the heap peak (%s): ", xpf_human(p->heap_peak_bytes, h1));
		role_split(p, &b);
	}
	xpf_buf_adds(&b,
		     "; no capacity is known: give the pool with --capacity BYTES (JAX's GPU pool is 75% of the device memory by default)");
	xpf_diag_text(f, &b);
	xpf_diag_num(f, "need_bytes", p->need_bytes);
	make_up_figures(f, p, NULL);
	xpf_diag_evidence(f, XPF_EV_MODULE(XPF_F_PLAN_JSON), c->dir);
	xpf_diag_evidence(f, XPF_EV_MODULE(XPF_F_PEAK_BUFFERS_TSV), c->dir);
}

/* The exceeds text: the need against the capacity, what it is made of, the
 * roles at the heap peak, and the request that failed (fr, or NULL). */
static void exceeds_text(const xpf_diag_ctx *c, const xpf_plan_alloc *fr, xpf_buf *b)
{
	const xpf_plan *p = c->p;
	uint64_t need = p->need_bytes, cap = c->d->capacity_bytes;
	char h1[32], h2[32], h3[32], h4[32], h5[32], h6[32];
	xpf_buf_printf(b,
		       "%s needs %s > capacity %s (short by %s); parameters %s + non-aliased outputs (outputs that need new memory) %s + temp %s",
		       p->module, xpf_human(need, h1), xpf_human(cap, h2),
		       xpf_human(need - cap, h3), xpf_human(p->parameters_bytes, h4),
		       xpf_human(p->non_aliased_outputs_bytes, h5), xpf_human(p->temp_bytes, h6));
	if (p->constants_bytes)
		xpf_buf_printf(b, " + constants %s", xpf_human(p->constants_bytes, h1));
	if (p->simulated || p->npeak) {
		xpf_buf_printf(b, "; at the heap peak (%s", xpf_human(p->heap_peak_bytes, h1));
		if (p->peak_instruction && *p->peak_instruction)
			xpf_buf_printf(b, ", at %s", p->peak_instruction);
		xpf_buf_adds(b, "): ");
		role_split(p, b);
	} else {
		xpf_buf_adds(b, "; no heap-simulator trace, so no role split at the peak");
	}
	if (fr)
		xpf_diag_failed_request_text(c, fr, b);
	else if (p->temp_bytes) {
		char tsl[32];
		xpf_buf_printf(b,
			       "; an OOM error names the first request that did not fit, most often the temp block: \"Out of memory while trying to allocate %s\" (or %llu bytes)",
			       xpf_diag_tsl_human(p->temp_bytes, tsl),
			       (unsigned long long)p->temp_bytes);
	}
}

static void rule_exceeds(xpf_diag_ctx *c)
{
	xpf_buf b = XPF_BUF_INIT;
	xpf_finding *f = xpf_diag_add(c, "plan-exceeds-pool", verdict_tag(c), c->d->module);
	const xpf_plan_alloc *fr = xpf_diag_failed_request(c);
	exceeds_text(c, fr, &b);
	xpf_diag_what_fits(c, f, &b);
	xpf_diag_text(f, &b);
	verdict_tail(c, f, "excess_bytes", true);
	make_up_figures(f, c->p, fr);
	offer_fraction(c, f, c->p->need_bytes);
}

static void rule_near_fit(xpf_diag_ctx *c)
{
	const xpf_plan *p = c->p;
	const xpf_diagnosis *d = c->d;
	uint64_t need = p->need_bytes, cap = d->capacity_bytes;
	char h1[32], h2[32], h3[32], h4[32];
	xpf_buf b = XPF_BUF_INIT;
	xpf_finding *f = xpf_diag_add(c, "near-fit", verdict_tag(c), d->module);
	xpf_buf_printf(&b,
		       "%s needs %s of capacity %s: a margin of only %s (%s%%); BFC needs contiguous chunks, so a near-fit can still fail through fragmentation",
		       p->module, xpf_human(need, h1), xpf_human(cap, h2),
		       xpf_human(cap - need, h3), xpf_pct(cap - need, cap, h4));
	xpf_diag_frag_text(c, f, 0, &b);
	xpf_diag_text(f, &b);
	verdict_tail(c, f, "margin_bytes", false);
	offer_fraction(c, f, need);
}

static void rule_fits(xpf_diag_ctx *c)
{
	const xpf_plan *p = c->p;
	const xpf_diagnosis *d = c->d;
	uint64_t need = p->need_bytes, cap = d->capacity_bytes;
	char h1[32], h2[32], h3[32], h4[32], h5[32];
	xpf_buf b = XPF_BUF_INIT;
	xpf_finding *f = xpf_diag_add(c, "fits", verdict_tag(c), d->module);
	xpf_buf_printf(&b, "%s needs %s of capacity %s: headroom %s (%s%%)", p->module,
		       xpf_human(need, h1), xpf_human(cap, h2), xpf_human(cap - need, h3),
		       xpf_pct(cap - need, cap, h4));
	if (d->capacity_tag == XPF_TAG_READ && d->memory_bytes == cap)
		xpf_buf_printf(&b,
			       " (capacity = the device's memory_size; JAX's GPU pool is 75%% of it by default: %s)",
			       xpf_human(cap / 4 * 3, h5));
	xpf_diag_text(f, &b);
	verdict_tail(c, f, "headroom_bytes", false);
}

void xpf_rule_fit(xpf_diag_ctx *c)
{
	const xpf_plan *p = c->p;
	uint64_t cap = c->d->capacity_bytes;

	if (p == NULL || !p->has_assignment)
		return;
	if (cap == 0)
		rule_plan_only(c);
	else if (p->need_bytes > cap)
		rule_exceeds(c);
	else if (xpf_diag_short_or_near(c))
		rule_near_fit(c);
	else
		rule_fits(c);
}
