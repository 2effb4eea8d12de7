/* The plan's memory and names: every value of a plan lives in its arena
 * (freed at once with the plan), and its strings are interned there.  The
 * other plan files build on this one; it needs none of them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/plan/plan_priv.h"
#include "common/alloc.h"

/* ---- arena ------------------------------------------------------------ */

void *xpf_arena_alloc(xpf_arena *a, size_t n)
{
	if (a->n == a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 64;
		void **p = realloc(a->ptrs, cap * sizeof *p);
		if (p == NULL)
			abort();
		a->ptrs = p;
		a->cap = cap;
	}
	void *m = calloc(1, n ? n : 1);
	if (m == NULL)
		abort();
	a->ptrs[a->n++] = m;
	return m;
}

void *xpf_arena_array(xpf_arena *a, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size)
		abort();
	return xpf_arena_alloc(a, n * size);
}

char *xpf_arena_buf(xpf_arena *a, xpf_buf *b)
{
	size_t len;
	if (b->data == NULL)
		xpf_buf_adds(b, "");
	char *s = xpf_buf_detach(b, &len);
	xpf_arena_alloc(a, 0);
	free(a->ptrs[a->n - 1]);
	a->ptrs[a->n - 1] = s;
	return s;
}

void xpf_arena_release(xpf_arena *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->ptrs[i]);
	free(a->ptrs);
	memset(a, 0, sizeof *a);
}

/* ---- names ------------------------------------------------------------ */

const char *xpf_kind_name(enum xpf_kind k)
{
	static const char *const names[XPF_NKINDS] = {
		"parameter", "output", "thread-local", "constant", "temp",
	};
	return (unsigned)k < XPF_NKINDS ? names[k] : "?";
}

const char *xpf_role_name(enum xpf_role r)
{
	static const char *const names[XPF_NROLES] = {
		"parameter", "output", "workspace", "backward", "forward", "other",
	};
	return (unsigned)r < XPF_NROLES ? names[r] : "?";
}

/* ---- instructions ----------------------------------------------------- */

const char *xpf_plan_str(xpf_plan *p, const char *s)
{
	return xpf_intern_get(((plan_priv *)p->priv)->strings, s, strlen(s));
}
