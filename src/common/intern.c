#include "common/intern.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"

/* Strings live in chunks that never move; the table (open addressing, a
 * power of two, at most half full) points at them, each preceded by its
 * length so that the table can be rebuilt without the caller. */
struct chunk {
	struct chunk *next;
	size_t used, cap;
	char data[];
};

struct xpf_intern {
	const char **slot;
	size_t n, cap;
	struct chunk *chunks;
};

/* Eight bytes a step, then the rest one by one; the last shift brings the
 * high bits, which the multiplications mix, down to the table's index.  (A
 * plan interns a name, a shape and a source of tens of bytes for each of
 * hundreds of thousands of instructions.) */
static uint64_t hash(const void *s, size_t n)
{
	const uint8_t *p = s;
	uint64_t h = 1469598103934665603ull ^ n;
	for (; n >= 8; p += 8, n -= 8) {
		uint64_t w;
		memcpy(&w, p, sizeof w);
		h = (h ^ w) * 0x9E3779B97F4A7C15ull;
		h ^= h >> 32;
	}
	for (; n > 0; p++, n--)
		h = (h ^ *p) * 1099511628211ull;
	return h ^ (h >> 29);
}

static size_t len_of(const char *v)
{
	size_t n;
	memcpy(&n, v - sizeof n, sizeof n);
	return n;
}

xpf_intern *xpf_intern_new(void) { return xpf_calloc(1, sizeof(xpf_intern)); }

static const char *keep(xpf_intern *set, const void *s, size_t n)
{
	size_t need = sizeof n + n + 1;
	struct chunk *c = set->chunks;
	if (c == NULL || c->cap - c->used < need + sizeof(size_t)) {
		/* chunks double from small to 64 KiB: a capture may hold a
		 * hundred thousand planes of one line name each */
		size_t cap = c == NULL ? 256 : c->cap < 32768 ? 2 * c->cap : 65536;
		if (cap < need + sizeof(size_t))
			cap = need + sizeof(size_t);
		c = xpf_malloc(sizeof *c + cap);
		c->used = 0;
		c->cap = cap;
		c->next = set->chunks;
		set->chunks = c;
	}
	/* keep the length aligned for memcpy-free reads on any platform */
	c->used = (c->used + sizeof(size_t) - 1) & ~(sizeof(size_t) - 1);
	char *d = c->data + c->used;
	memcpy(d, &n, sizeof n);
	if (n)
		memcpy(d + sizeof n, s, n);
	d[sizeof n + n] = '\0';
	c->used += need;
	return d + sizeof n;
}

const char *xpf_intern_get(xpf_intern *set, const void *s, size_t n)
{
	if (n == 0)
		s = "";
	if (2 * (set->n + 1) > set->cap) {
		size_t cap = set->cap ? 2 * set->cap : 16;
		const char **t = xpf_calloc(cap, sizeof *t);
		for (size_t i = 0; i < set->cap; i++) {
			const char *v = set->slot[i];
			if (v == NULL)
				continue;
			size_t j = (size_t)hash(v, len_of(v)) & (cap - 1);
			while (t[j])
				j = (j + 1) & (cap - 1);
			t[j] = v;
		}
		free(set->slot);
		set->slot = t;
		set->cap = cap;
	}
	size_t j = (size_t)hash(s, n) & (set->cap - 1);
	for (; set->slot[j]; j = (j + 1) & (set->cap - 1)) {
		const char *v = set->slot[j];
		if (len_of(v) == n && memcmp(v, s, n) == 0)
			return v;
	}
	const char *v = keep(set, s, n);
	set->slot[j] = v;
	set->n++;
	return v;
}

size_t xpf_intern_count(const xpf_intern *set) { return set->n; }

void xpf_intern_free(xpf_intern *set)
{
	if (set == NULL)
		return;
	while (set->chunks) {
		struct chunk *c = set->chunks;
		set->chunks = c->next;
		free(c);
	}
	free(set->slot);
	free(set);
}
