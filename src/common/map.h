/* A map from a two-part key (a, b) to a value >= 0: open addressing with
 * linear probing, the capacity a power of two, doubled when half full.  For
 * tables walked millions of times (the replay's live allocations by address
 * and allocator) and small ones (the last execution of each module and
 * device); find is inline for the first. */
#ifndef XPF_MAP_H
#define XPF_MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct xpf_map_slot {
	uint64_t a, b;
	int64_t val; /* -1: empty */
} xpf_map_slot;

typedef struct xpf_map {
	size_t cap, n;
	xpf_map_slot *s;
} xpf_map;

/* An empty map with room for cap / 2 entries (cap rounded up to a power of
 * two, at least 2) before it grows. */
void xpf_map_init(xpf_map *m, size_t cap);
void xpf_map_free(xpf_map *m);

static inline size_t xpf_map_hash(uint64_t a, uint64_t b, size_t cap)
{
	uint64_t x = a * 0x9E3779B97F4A7C15ull ^ b * 0xC2B2AE3D27D4EB4Full;
	x ^= x >> 29;
	return (size_t)(x & (cap - 1));
}

/* The slot of (a, b), or the empty slot where it would go. */
static inline size_t xpf_map_find(const xpf_map *m, uint64_t a, uint64_t b)
{
	size_t i = xpf_map_hash(a, b, m->cap);
	while (m->s[i].val != -1 && !(m->s[i].a == a && m->s[i].b == b))
		i = (i + 1) & (m->cap - 1);
	return i;
}

/* Map (a, b) to v (>= 0): the value it replaces, or -1. */
int64_t xpf_map_put(xpf_map *m, uint64_t a, uint64_t b, int64_t v);
/* Empty slot i (an entry's, from xpf_map_find). */
void xpf_map_del(xpf_map *m, size_t i);

#endif
