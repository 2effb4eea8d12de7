#include "common/alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

void *xpf_malloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (p == NULL)
		abort();
	return p;
}

void *xpf_calloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (p == NULL)
		abort();
	return p;
}

void *xpf_realloc_array(void *p, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size)
		abort();
	p = realloc(p, (n && size) ? n * size : 1);
	if (p == NULL)
		abort();
	return p;
}

char *xpf_strndup(const void *p, size_t n)
{
	char *s = xpf_malloc(n + 1);
	if (n)
		memcpy(s, p, n);
	s[n] = '\0';
	return s;
}

char *xpf_strdup(const char *s) { return xpf_strndup(s ? s : "", s ? strlen(s) : 0); }

void xpf_grow(void **arr, size_t *cap, size_t elem)
{
	size_t ncap = *cap ? *cap * 2 : 4; /* small: many inputs hold many tiny arrays */
	*arr = xpf_realloc_array(*arr, ncap, elem);
	*cap = ncap;
}

void xpf_advise_huge(void *p, size_t n)
{
#ifdef MADV_HUGEPAGE
	const uintptr_t huge = (uintptr_t)2 << 20;
	uintptr_t a = ((uintptr_t)p + huge - 1) & ~(huge - 1), e = ((uintptr_t)p + n) & ~(huge - 1);
	if (e > a)
		(void)madvise((void *)a, e - a, MADV_HUGEPAGE);
#else
	(void)p;
	(void)n;
#endif
}

void *xpf_map_huge(size_t count, size_t size, size_t *len)
{
	const size_t huge = (size_t)2 << 20;
	*len = 0;
	if (size == 0 || count > (SIZE_MAX / 2 - huge) / size)
		return NULL;
	size_t n = count * size;
	if (n < ((size_t)1 << 20))
		return NULL;
	size_t l = (n + huge - 1) & ~(huge - 1);
	uint8_t *p = mmap(NULL, l + huge, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	uint8_t *a = (uint8_t *)(((uintptr_t)p + huge - 1) & ~(uintptr_t)(huge - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	munmap(a + l, (size_t)(p + huge - a));
	xpf_advise_huge(a, l);
	*len = l;
	return a;
}

void *xpf_big_calloc(size_t n, size_t size, size_t *len)
{
	void *p = xpf_map_huge(n, size, len);
	return p ? p : xpf_calloc(n, size); /* which aborts when n * size overflows */
}

void xpf_big_free(void *p, size_t len)
{
	if (len)
		munmap(p, len);
	else
		free(p);
}
