/* The runtime: allocator events and executions (SPEC §4.3).  Owned by
 * runtime.c. */
#ifndef XPF_RUNTIME_H
#define XPF_RUNTIME_H

#include "analysis/report.h"

typedef struct xpf_runtime xpf_runtime;

int xpf_host_runtime(xpf_host *h, const xpf_runtime **out, xpf_error *err);
void xpf_runtime_free(void *rt);

#endif
