/* A set of strings, each kept once: the same pointer for the same bytes.
 * For names and shapes that a long capture repeats millions of times.  Not
 * thread-safe: one set per thread. */
#ifndef XPF_INTERN_H
#define XPF_INTERN_H

#include <stddef.h>

typedef struct xpf_intern xpf_intern;

xpf_intern *xpf_intern_new(void);
/* A NUL-terminated copy of s[0..n) ("" for n == 0), owned by the set and
 * valid until xpf_intern_free; the same pointer for the same n bytes. */
const char *xpf_intern_get(xpf_intern *set, const void *s, size_t n);
/* How many strings the set holds (one more after a get of new bytes). */
size_t xpf_intern_count(const xpf_intern *set);
void xpf_intern_free(xpf_intern *set);

#endif
