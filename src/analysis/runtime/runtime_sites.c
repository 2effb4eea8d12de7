/* Allocators and sites: the records allocator events share (their
 * allocator, size, shape and the host events around them), each kept once. */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/runtime/runtime.h"
#include "analysis/runtime/runtime_priv.h"
#include "common/alloc.h"
#include "common/intern.h"
#include "common/lazy.h"
#include "common/map.h"
#include "common/runs.h"

/* ---- allocators ------------------------------------------------------- */

static int natural_cmp(const char *a, const char *b)
{
	while (*a && *b) {
		if (*a >= '0' && *a <= '9' && *b >= '0' && *b <= '9') {
			char *ea, *eb;
			unsigned long long x = strtoull(a, &ea, 10), y = strtoull(b, &eb, 10);
			if (x != y)
				return x < y ? -1 : 1;
			a = ea;
			b = eb;
			continue;
		}
		if (*a != *b)
			return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
		a++;
		b++;
	}
	return *a ? 1 : *b ? -1 : 0;
}

/* The index of allocator name in rt, added when new; -1 when it would be
 * one more than XPF_RT_MAX_ALLOCATORS. */
/* An allocator name's ordinal as a device: one above what an execution
 * keeps (xpf_rt_device16; "GPU_-1_bfc" reads as 4294967295) is unknown. */
static int allocator_ordinal(unsigned d) { return d <= INT16_MAX ? (int)d : -1; }

int xpf_rt_find_allocator(xpf_runtime *rt, size_t *cap, const char *name, bool by_index)
{
	for (size_t i = 0; i < rt->nallocators; i++)
		if (strcmp(rt->allocators[i].name, name) == 0)
			return (int)i;
	if (rt->nallocators >= XPF_RT_MAX_ALLOCATORS)
		return -1;
	size_t old_cap = *cap;
	xpf_rt_allocator *a = XPF_VEC_PUSH(rt->allocators, rt->nallocators, *cap);
	if (*cap != old_cap)
		rt->priv->peak = xpf_realloc_array(rt->priv->peak, *cap, sizeof *rt->priv->peak);
	memset(&rt->priv->peak[rt->nallocators - 1], 0, sizeof *rt->priv->peak);
	memset(a, 0, sizeof *a);
	a->name = xpf_strdup(name);
	a->keyed_by_index = by_index;
	a->device = -1;
	a->peak_event = -1;
	a->capacity_lo_bytes = UINT64_MAX;
	unsigned d;
	int used = 0;
	if (sscanf(name, "GPU_%u_bfc%n", &d, &used) == 1 && name[used] == '\0') {
		a->device = allocator_ordinal(d);
		a->is_pool = true;
	} else if (sscanf(name, "tpu:%u%n", &d, &used) == 1 && name[used] == '\0') {
		a->device = allocator_ordinal(d);
		a->is_pool = true;
	} else if (sscanf(name, "GPU_collectivememory_%u_bfc%n", &d, &used) == 1 &&
		   name[used] == '\0') {
		a->device = allocator_ordinal(d);
	}
	return (int)(rt->nallocators - 1);
}

/* A copy of s[0..n) kept by the runtime, the same pointer for the same
 * bytes (shapes and module names: a few distinct ones, millions of events
 * and executions).  Each scan (one a thread) has its own set; the runtime
 * keeps them all (xpf_rt_keep_interns). */
const char *xpf_rt_intern(struct scan *sc, const char *str, size_t n)
{
	if (sc->interned == NULL)
		sc->interned = xpf_intern_new();
	return xpf_intern_get(sc->interned, str, n);
}

static bool same_site(const xpf_rt_site *a, const xpf_rt_site *b)
{
	return a->bytes == b->bytes && a->requested_bytes == b->requested_bytes &&
	       a->shape == b->shape && a->enclosing_md == b->enclosing_md &&
	       a->transfer_md == b->transfer_md && a->has_bytes == b->has_bytes &&
	       a->has_requested == b->has_requested && a->allocator == b->allocator &&
	       a->line == b->line;
}

/* The index in rt->sites of a site like *want (its shape interned by the
 * runtime's scan), added when new.  The map holds a hash of each; a slot
 * whose site differs (a collision of 128 bits, which a crafted capture can
 * make at will) keeps its own: the site is added again, unmapped (keeping
 * sites once saves memory; it means nothing), and no search grows with
 * the sites. */
/* A site's hash, the two halves of its key in pv->site_map. */
static void site_hash(const xpf_rt_site *w, uint64_t *a, uint64_t *b)
{
	*a = w->bytes * 0x9E3779B97F4A7C15ull ^ w->requested_bytes ^
	     (uint64_t)(uint16_t)w->allocator << 40 ^ (uint64_t)w->has_bytes << 62 ^
	     (uint64_t)w->has_requested << 63 ^ (uint64_t)w->line << 20;
	*b = (uint64_t)(uintptr_t)w->shape * 0xC2B2AE3D27D4EB4Full ^
	     ((uint64_t)w->enclosing_md << 32 | w->transfer_md);
}

/* Site i into the map, unless a site of its hash is there (xpf_rt_site_of). */
void xpf_rt_site_map_add(xpf_runtime *rt, uint32_t i)
{
	struct xpf_rt_priv *pv = rt->priv;
	if (pv->site_map.cap == 0)
		xpf_map_init(&pv->site_map, 64);
	uint64_t a, b;
	site_hash(&rt->sites[i], &a, &b);
	if (pv->site_map.s[xpf_map_find(&pv->site_map, a, b)].val < 0)
		xpf_map_put(&pv->site_map, a, b, (int64_t)i);
}

uint32_t xpf_rt_site_of(xpf_runtime *rt, const xpf_rt_site *want)
{
	struct xpf_rt_priv *pv = rt->priv;
	if (pv->site_map.cap == 0)
		xpf_map_init(&pv->site_map, 64);
	uint64_t a, b;
	site_hash(want, &a, &b);
	size_t k = xpf_map_find(&pv->site_map, a, b);
	int64_t v = pv->site_map.s[k].val;
	if (v >= 0 && same_site(&rt->sites[v], want))
		return (uint32_t)v;
	/* at most one a read of an allocator event (fewer than 2^31; an
	 * unordered line's are read twice) and one a free the replay gives its
	 * match's bytes: an index of 32 bits always fits */
	if (rt->nsites >= UINT32_MAX)
		abort();
	*XPF_VEC_PUSH(rt->sites, rt->nsites, pv->cap_sites) = *want;
	if (v < 0)
		xpf_map_put(&pv->site_map, a, b, (int64_t)(rt->nsites - 1));
	return (uint32_t)(rt->nsites - 1);
}

/* The runtime keeps a scan's set of strings (its sites and executions
 * point into it). */
void xpf_rt_keep_interns(struct xpf_rt_priv *pv, xpf_intern **set)
{
	if (*set == NULL)
		return;
	pv->interns = xpf_realloc_array(pv->interns, pv->ninterns + 1, sizeof *pv->interns);
	pv->interns[pv->ninterns++] = *set;
	*set = NULL;
}

/* A candidate for an allocator's in-window peak, met after the ones taken
 * so far in scan order: taken when it has more in use, or as much but
 * earlier. */
void xpf_rt_peak_take(struct xpf_rt_scan_peak *pk, uint64_t in_use, int64_t t_ps, uint64_t available)
{
	if (!pk->set || in_use > pk->in_use || (in_use == pk->in_use && t_ps < pk->t_ps)) {
		pk->set = true;
		pk->in_use = in_use;
		pk->t_ps = t_ps;
		pk->available = available;
	}
}

/* An event of allocator a (at t_ps, in use after it, available): the
 * capacity range, and bytes_available at the in-window peak, which replay
 * meets as the first event in time order (then scan order) with the most
 * in use, so: more in use, or as much but earlier.  Events come in scan
 * order here, chunks merged in line order (chunk_merge). */
void xpf_rt_scan_capacity(xpf_rt_allocator *a, struct xpf_rt_scan_peak *pk, int64_t t_ps,
			  uint64_t in_use, uint64_t available)
{
	uint64_t cap = in_use + available;
	if (cap < a->capacity_lo_bytes)
		a->capacity_lo_bytes = cap;
	if (cap > a->capacity_hi_bytes)
		a->capacity_hi_bytes = cap;
	xpf_rt_peak_take(pk, in_use, t_ps, available);
}

int xpf_rt_allocator_cmp(const void *a, const void *b)
{
	return natural_cmp(((const xpf_rt_allocator *)a)->name, ((const xpf_rt_allocator *)b)->name);
}
