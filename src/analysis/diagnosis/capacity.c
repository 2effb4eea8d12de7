/* Which pool a module's heap is drawn against (capacity.h). */
#include "analysis/diagnosis/capacity.h"

#include <stdio.h>

#include "analysis/diagnosis/diagnosis.h"
#include "analysis/runtime/runtime.h"

/* Without allocator events, the diagnosis may still know the pool (e.g.
 * 0.75 x the device's memory_size). */
static uint64_t diagnosis_pool(xpf_host *h, char what[128])
{
	const xpf_diagnosis *d;
	xpf_error e = { 0 };
	if (xpf_host_diagnosis(h, &d, &e) != XPF_OK || d->capacity_bytes == 0)
		return 0;
	snprintf(what, 128, "capacity from the diagnosis (%s)",
		 d->capacity_source ? d->capacity_source : "inferred");
	return d->capacity_bytes;
}

/* The allocator of the largest capacity among module m's executions, else
 * among the device pools; -1 when none. */
static long largest_pool(const xpf_runtime *rt, long m)
{
	long best = -1;
	for (size_t i = 0; i < rt->nexecutions; i++) {
		const xpf_rt_execution *x = &rt->executions[i];
		if (x->module != m || x->allocator < 0 || (size_t)x->allocator >= rt->nallocators)
			continue;
		if (best < 0 || rt->allocators[x->allocator].capacity_bytes >
					rt->allocators[best].capacity_bytes)
			best = x->allocator;
	}
	if (best >= 0)
		return best;
	for (size_t i = 0; i < rt->nallocators; i++) {
		if (!rt->allocators[i].is_pool)
			continue;
		if (best < 0 || rt->allocators[i].capacity_bytes > rt->allocators[best].capacity_bytes)
			best = (long)i;
	}
	return best;
}

uint64_t xpf_module_pool(xpf_host *h, long m, char what[128])
{
	what[0] = '\0';
	if (h->opt && h->opt->capacity) {
		snprintf(what, 128, "capacity given with --capacity");
		return h->opt->capacity;
	}
	const xpf_runtime *rt;
	xpf_error e = { 0 };
	if (xpf_capture_nplanes(h->cap) == 0)
		return 0;
	if (xpf_host_runtime(h, &rt, &e) != XPF_OK)
		return diagnosis_pool(h, what);
	long best = largest_pool(rt, m);
	if (best < 0 || rt->allocators[best].capacity_bytes == 0)
		return diagnosis_pool(h, what);
	snprintf(what, 128, "%s capacity (measured: in use + bytes_available)",
		 rt->allocators[best].name);
	return rt->allocators[best].capacity_bytes;
}
