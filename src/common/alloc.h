/* Allocation that cannot fail: out of memory aborts (the tool can do
 * nothing useful without memory, and every caller would need the same
 * check).  Counts are checked for overflow. */
#ifndef XPF_ALLOC_H
#define XPF_ALLOC_H

#include <stddef.h>

void *xpf_malloc(size_t n);
/* Zeroed; n == 0 still returns a unique pointer. */
void *xpf_calloc(size_t n, size_t size);
/* realloc of n elements of size bytes. */
void *xpf_realloc_array(void *p, size_t n, size_t size);
char *xpf_strdup(const char *s); /* NULL gives "" */
/* n bytes of p, NUL-terminated. */
char *xpf_strndup(const void *p, size_t n);

/* Push onto growable array arr of n elements with room for cap (doubling,
 * from 16): a pointer to the new last element, not zeroed. */
#define XPF_VEC_PUSH(arr, n, cap) \
	(((n) == (cap) ? xpf_grow((void **)&(arr), &(cap), sizeof *(arr)) : (void)0), &(arr)[(n)++])
void xpf_grow(void **arr, size_t *cap, size_t elem);

/* Ask for transparent huge pages over the whole 2 MiB pages inside
 * [p, p + n): big arrays that scans walk through (millions of events) then
 * cost a TLB entry and a page fault per 2 MiB instead of per 4 KiB.  A hint:
 * failures are ignored. */
void xpf_advise_huge(void *p, size_t n);

/* Address space of its own for count records of size bytes that never
 * moves: zeroed, 2 MiB aligned, asking for huge pages, backed as it is
 * touched (a 4 KiB page costs a fault each, a 2 MiB page one for all),
 * so what is touched rounds up to 2 MiB.  count may
 * be a bound far above what is used (MAP_NORESERVE: memory running out
 * shows when a page is touched, not here).  *len: what to give
 * xpf_big_free.  NULL below 1 MiB (not worth a 2 MiB page), when count *
 * size overflows or when it cannot be mapped. */
void *xpf_map_huge(size_t count, size_t size, size_t *len);
/* A big array (millions of records) of n elements of size bytes, zeroed:
 * xpf_map_huge, else (*len 0) xpf_calloc.  Aborts when n * size overflows. */
void *xpf_big_calloc(size_t n, size_t size, size_t *len);
/* Free either: len 0 is a malloc'd block. */
void xpf_big_free(void *p, size_t len);

#endif
