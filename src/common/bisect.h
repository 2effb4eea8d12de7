/* The bisection of a sorted array, for every lookup of one: events by
 * time, records by id, candidates by shape.  Inline, so that each caller's
 * `below` is inlined in its loop (some run once per event of a capture). */
#ifndef XPF_BISECT_H
#define XPF_BISECT_H

#include <stdbool.h>
#include <stddef.h>

/* Item goes before key: true for a first part of the items, false for the
 * rest. */
typedef bool (*xpf_below_fn)(const void *item, const void *key);

/* The first of the n items of `size` bytes at base that is not below key,
 * n when all are (the arguments of bsearch). */
static inline size_t xpf_lower_bound(const void *key, const void *base, size_t n, size_t size,
				     xpf_below_fn below)
{
	const char *v = base;
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (below(v + mid * size, key))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

#endif
