/* What the capture lacks (SPEC §5.2): missing-plan, missing-runtime. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/diagnosis/diag_priv.h"
#include "analysis/paths.h"
#include "common/alloc.h"

/* Does the capture hold a TPU device plane? */
static bool on_tpu(xpf_host *h)
{
	for (size_t i = 0; i < xpf_capture_nplanes(h->cap); i++)
		if (strncmp(xpf_capture_plane_head(h->cap, i)->name, "/device:TPU:", 12) == 0)
			return true;
	return false;
}

/* A TensorFlow capture: its GPU host allocator is TensorFlow's
 * gpu_host_bfc (JAX's is xla_gpu_host_bfc). */
static bool tensorflow_like(const xpf_runtime *rt)
{
	for (size_t a = 0; rt && a < rt->nallocators; a++)
		if (strcmp(rt->allocators[a].name, "gpu_host_bfc") == 0)
			return true;
	return false;
}

void xpf_rule_missing(xpf_diag_ctx *c)
{
	xpf_host *h = c->h;
	const xpf_runtime *rt = c->rt;
	const xpf_diagnosis *d = c->d;
	char h1[32], h2[32];
	xpf_buf b = XPF_BUF_INIT;

	if (h->nmodules == 0) {
		xpf_finding *f = xpf_diag_add(c, "missing-plan", XPF_TAG_READ, -1);
		if (tensorflow_like(rt))
			xpf_buf_adds(&b,
				     "no HloProto in the /host:metadata plane: no XLA module was compiled while profiling, so there is no plan to break down; a TensorFlow capture (its host allocator is gpu_host_bfc): TensorFlow without XLA has no plan; compile with XLA (tf.function(jit_compile=True)) and start the profile before the first step");
		else
			xpf_buf_adds(&b,
				     "no HloProto in the /host:metadata plane: no XLA module was compiled while profiling (a TensorFlow capture without XLA, or a JAX capture started after compilation), so there is no plan to break down; start the profile before the first call of the jitted function");
		if (d->allocator >= 0) {
			const xpf_rt_allocator *a = &rt->allocators[d->allocator];
			xpf_buf_printf(&b, "; the runtime still shows %s peaking at %s of %s",
				       a->name, xpf_human(a->peak_in_window_bytes, h1),
				       xpf_human(a->capacity_bytes, h2));
		}
		xpf_diag_text(f, &b);
		xpf_diag_num(f, "modules", 0);
		xpf_diag_evidence(f, XPF_EV_CAPTURE(XPF_F_PLANES_TSV));
		if (d->allocator >= 0) {
			xpf_diag_num(f, "peak_in_window_bytes",
				     rt->allocators[d->allocator].peak_in_window_bytes);
			xpf_diag_num(f, "capacity_bytes",
				     rt->allocators[d->allocator].capacity_bytes);
			xpf_diag_evidence(f, XPF_EV_RUNTIME(XPF_F_ALLOCATORS_TSV));
		}
	} else if (c->p == NULL || !c->p->has_assignment) {
		xpf_finding *f = xpf_diag_add(c, "missing-plan", XPF_TAG_READ, d->module);
		xpf_buf_printf(&b,
			       "%s has no buffer assignment: %s; without it there is no need, heap peak or role split (JAX records it when the profile covers the compilation)",
			       xpf_capture_module(h->cap, d->module)->name,
			       c->p && c->p->missing && *c->p->missing ?
				       c->p->missing :
				       "its plan could not be read (see capture/errors.txt)");
		xpf_diag_text(f, &b);
		xpf_diag_evidence(f, XPF_EV_MODULE(XPF_F_SUMMARY_TXT), c->dir);
	} else if (!c->p->simulated) {
		xpf_finding *f = xpf_diag_add(c, "missing-plan", XPF_TAG_READ, d->module);
		xpf_buf_printf(&b,
			       "%s has a buffer assignment but no heap-simulator trace%s; totals only, so the heap peak counts only the indefinite allocations (%s) and there is no role split at the peak",
			       c->p->module, on_tpu(h) ? " (usual on TPU)" : "",
			       xpf_human(c->p->heap_peak_bytes, h1));
		xpf_diag_text(f, &b);
		xpf_diag_evidence(f, XPF_EV_MODULE(XPF_F_PLAN_JSON), c->dir);
	}

	if (xpf_capture_is_hlo_only(h->cap)) {
		xpf_finding *f = xpf_diag_add(c, "missing-runtime", XPF_TAG_READ, -1);
		xpf_buf_adds(&b,
			     "a bare HloProto: the plan only, no allocator events, executions or device; give the pool size with --capacity, or capture with jax.profiler.trace to see the runtime");
		xpf_diag_text(f, &b);
		xpf_diag_evidence(f, XPF_EV_RUNTIME(XPF_F_SUMMARY_TXT));
		return;
	}
	bool pool = false; /* a device allocator has events */
	for (size_t a = 0; rt && a < rt->nallocators; a++)
		pool |= rt->allocators[a].is_pool;
	if (rt == NULL || !rt->has_events || !pool) {
		xpf_finding *f = xpf_diag_add(c, "missing-runtime", XPF_TAG_READ, -1);
		if (rt && rt->has_events && !d->runtime_error.code)
			xpf_buf_adds(&b,
				     "allocator events of host allocators only (xla_gpu_host_bfc), none of the device's pool (GPU_<d>_bfc): only the BFC allocator emits them (XLA_PYTHON_CLIENT_ALLOCATOR=default or bfc; cuda_async, platform and vmm do not); without them there is no in-use, growth or live arrays on the device, only the plan and the executions");
		else if (d->runtime_error.code)
			xpf_buf_printf(&b,
				       "the allocator events and executions could not be read: %s; without them there is no capacity, in-use, growth or live arrays, only the plan",
				       d->runtime_error.msg);
		else
			xpf_buf_adds(&b,
				     rt && rt->has_host_plane ?
					     "no MemoryAllocation/MemoryDeallocation events on /host:CPU; only the BFC allocator emits them (XLA_PYTHON_CLIENT_ALLOCATOR=default or bfc; cuda_async, platform and vmm do not), at host tracer level 2 or more (the default); without them there is no capacity, in-use, growth or live arrays, only the plan" :
					     "no /host:CPU plane: the host tracer was off (host_tracer_level 0), so there are no allocator events or executions; capture with jax.profiler.trace and the BFC allocator to see the runtime");
		if (d->capacity_bytes)
			xpf_buf_printf(&b, "; capacity taken from %s: %s", d->capacity_source,
				       xpf_human(d->capacity_bytes, h1));
		xpf_diag_text(f, &b);
		xpf_diag_evidence(f, d->runtime_error.code ? XPF_EV_CAPTURE(XPF_F_ERRORS_TXT) :
							     XPF_EV_RUNTIME(XPF_F_SUMMARY_TXT));
	} else if (rt->nexecutions == 0 && h->nmodules > 0) {
		xpf_finding *f = xpf_diag_add(c, "missing-runtime", XPF_TAG_MEASURED, -1);
		xpf_buf_printf(&b,
			       "%zu allocator events but no execution of any module could be found (TPU captures carry no execute events on the host): no in-use at step start, growth or never-launched; the allocators' peaks are in runtime/allocators.tsv",
			       rt->nevents);
		xpf_diag_text(f, &b);
		xpf_diag_num(f, "events", rt->nevents);
		xpf_diag_evidence(f, XPF_EV_RUNTIME(XPF_F_ALLOCATORS_TSV));
	}
}
