/* Shared between runtime*.c only: the scratch state of building a runtime. */
#ifndef XPF_RUNTIME_PRIV_H
#define XPF_RUNTIME_PRIV_H

#include "analysis/runtime.h"

/* A kernel on a device plane, for `launched` and the kernels link rule. */
struct xpf_rt_kernel {
	int64_t t_ps;
	long module;     /* host module index, or -1 */
};

struct xpf_rt_priv {
	/* Strings copied out of the capture (shapes, names): chunks that never
	 * move, freed with the runtime. */
	struct xpf_rt_chunk *strings;
	/* Per device (index = ordinal), kernels sorted by time. */
	size_t ndev;
	size_t *nkernels;
	struct xpf_rt_kernel **kernels;
	/* Per execution, while building: */
	int64_t *exec_program_id;     /* -1: none seen on the host side */
	const char **exec_pjit;       /* "PjitFunction(f)" around it, or NULL */
	bool *exec_thunk;             /* a thunk event nested in it */
	bool *exec_retry_end;         /* it ends inside an AllocatorRetry wait */
	/* Module base names ("jit_f" for "jit_f(12)"), malloc'd. */
	char **base;
	const char **module_names;    /* the capture's, not owned */
	size_t nmodules;
};

/* Growable arrays. */
#define XPF_VEC_PUSH(arr, n, cap) \
	(((n) == (cap) ? xpf_rt_grow((void **)&(arr), &(cap), sizeof *(arr)) : (void)0), \
	 &(arr)[(n)++])
void xpf_rt_grow(void **arr, size_t *cap, size_t elem);

char *xpf_rt_strdup(const char *s);
/* A NUL-terminated copy of s (n bytes) owned by the runtime. */
const char *xpf_rt_keep(struct xpf_rt_priv *pv, const char *s, size_t n);

/* runtime_exec.c: after the scan, link executions to modules, number them,
 * compute in use at start, launched, matches and the default between. */
int xpf_rt_finish_executions(xpf_host *h, xpf_runtime *rt, xpf_error *err);

#endif
