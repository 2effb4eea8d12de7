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

char *xpf_strdup(const char *s)
{
	return xpf_strndup(s ? s : "", s ? strlen(s) : 0);
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
