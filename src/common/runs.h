/* The order of items that come as runs already in order (a line's
 * allocator events, a line's executions): a k-way merge whose heap holds a
 * run only once its first item is due, when the runs come in the order of
 * their first items (as the lines of a long capture do: of 100k+ runs, a
 * few overlap at any time, so the heap is a few levels deep, not 17), and
 * every run from the start otherwise.  Inline, so that each caller's
 * `before` is inlined in its loop. */
#ifndef XPF_RUNS_H
#define XPF_RUNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/alloc.h"

/* Item i goes before item j: a strict total order (no two items tie). */
typedef bool (*xpf_before_fn)(const void *ctx, size_t i, size_t j);

static inline void xpf_runs_down_(size_t *heap, size_t n, size_t i, const size_t *at,
				  xpf_before_fn before, const void *ctx)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		if (l < n && before(ctx, at[heap[l]], at[heap[m]]))
			m = l;
		if (l + 1 < n && before(ctx, at[heap[l + 1]], at[heap[m]]))
			m = l + 1;
		if (m == i)
			return;
		size_t t = heap[i];
		heap[i] = heap[m];
		heap[m] = t;
		i = m;
	}
}

/* The order of items 0..n-1 (n < 2^32) by before: perm[k] is the item at
 * place k.  The runs are cut where an item goes before the one ahead of it;
 * any cut gives the same order (no two items tie). */
static inline void xpf_runs_merge(size_t n, xpf_before_fn before, const void *ctx, uint32_t *perm)
{
	if (n == 0)
		return;
	size_t nr = 0, cr = 0, *start = NULL;
	for (size_t i = 0; i < n; i++)
		if (i == 0 || before(ctx, i, i - 1))
			*XPF_VEC_PUSH(start, nr, cr) = i;
	*XPF_VEC_PUSH(start, nr, cr) = n;
	nr--; /* start[nr] == n ends the last run */
	size_t *at = xpf_calloc(nr, sizeof *at), *heap = xpf_calloc(nr, sizeof *heap);
	for (size_t r = 0; r < nr; r++)
		at[r] = start[r];
	size_t hn = 0, next = 0;
	for (size_t r = 1; r < nr; r++)
		if (before(ctx, start[r], start[r - 1])) {
			/* not in the order of their first items: all in the heap */
			for (next = 0; next < nr; next++)
				heap[hn++] = next;
			for (size_t i = hn / 2; i-- > 0;)
				xpf_runs_down_(heap, hn, i, at, before, ctx);
			break;
		}
	for (size_t k = 0; k < n; k++) {
		/* A run not yet in the heap starts after the heap's first item,
		 * and what the heap gives only goes forward in the order: a run
		 * joins before the first item it could precede is given. */
		while (next < nr && (hn == 0 || before(ctx, start[next], at[heap[0]]))) {
			size_t i = hn++;
			heap[i] = next++;
			while (i > 0 && before(ctx, at[heap[i]], at[heap[(i - 1) / 2]])) {
				size_t p = (i - 1) / 2, t = heap[i];
				heap[i] = heap[p];
				heap[p] = t;
				i = p;
			}
		}
		size_t r = heap[0];
		perm[k] = (uint32_t)at[r]++;
		if (at[r] == start[r + 1])
			heap[0] = heap[--hn];
		xpf_runs_down_(heap, hn, 0, at, before, ctx);
	}
	free(heap);
	free(at);
	free(start);
}

/* Move item `from` to place `to`; place n (one past the items) is a spare
 * that holds the item a cycle starts with. */
typedef void (*xpf_move_fn)(void *ctx, size_t to, size_t from);

/* Items 0..n-1 put in place in the order perm gives (place k takes the item
 * at perm[k], as xpf_runs_merge makes it), cycle by cycle, each item moved
 * once: the items are big, and a sorted copy would double the memory.
 * perm ends as the identity. */
static inline void xpf_perm_apply(size_t n, uint32_t *perm, xpf_move_fn move, void *ctx)
{
	for (size_t i = 0; i < n; i++) {
		if (perm[i] == i)
			continue;
		move(ctx, n, i);
		size_t j = i;
		while (perm[j] != i) {
			size_t from = perm[j];
			move(ctx, j, from);
			perm[j] = (uint32_t)j;
			j = from;
		}
		move(ctx, j, n);
		perm[j] = (uint32_t)j;
	}
}

#endif
