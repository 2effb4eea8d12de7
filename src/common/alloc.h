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

/* Ask for transparent huge pages over the whole 2 MiB pages inside
 * [p, p + n): big arrays that scans walk through (millions of events) then
 * cost a TLB entry and a page fault per 2 MiB instead of per 4 KiB.  A hint:
 * failures are ignored. */
void xpf_advise_huge(void *p, size_t n);

#endif
