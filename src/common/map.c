#include "common/map.h"

#include "common/alloc.h"

#include <stdlib.h>

void xpf_map_init(xpf_map *m, size_t cap)
{
	size_t c = 2;
	while (c < cap)
		c *= 2;
	m->cap = c;
	m->n = 0;
	m->s = xpf_realloc_array(NULL, c, sizeof *m->s);
	for (size_t i = 0; i < c; i++)
		m->s[i].val = -1;
}

void xpf_map_free(xpf_map *m)
{
	free(m->s);
	m->s = NULL;
	m->cap = m->n = 0;
}

int64_t xpf_map_put(xpf_map *m, uint64_t a, uint64_t b, int64_t v)
{
	if ((m->n + 1) * 2 > m->cap) {
		xpf_map g;
		xpf_map_init(&g, m->cap * 2);
		for (size_t k = 0; k < m->cap; k++)
			if (m->s[k].val != -1)
				g.s[xpf_map_find(&g, m->s[k].a, m->s[k].b)] = m->s[k];
		g.n = m->n;
		free(m->s);
		*m = g;
	}
	size_t i = xpf_map_find(m, a, b);
	int64_t old = m->s[i].val;
	if (old == -1) {
		m->s[i].a = a;
		m->s[i].b = b;
		m->n++;
	}
	m->s[i].val = v;
	return old;
}

/* Moves back the entries after i that would no longer be found (Knuth's
 * algorithm R). */
void xpf_map_del(xpf_map *m, size_t i)
{
	for (size_t j = i;;) {
		j = (j + 1) & (m->cap - 1);
		if (m->s[j].val == -1)
			break;
		size_t h = xpf_map_hash(m->s[j].a, m->s[j].b, m->cap);
		if (i < j ? (h <= i || h > j) : (h <= i && h > j)) {
			m->s[i] = m->s[j];
			i = j;
		}
	}
	m->s[i].val = -1;
	m->n--;
}
