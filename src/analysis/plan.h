/* The plan of a module: what XLA's buffer assignment reserved, and what is
 * live at the heap peak (SPEC §4.1, §4.2).  Owned by plan.c. */
#ifndef XPF_PLAN_H
#define XPF_PLAN_H

#include "analysis/report.h"

typedef struct xpf_plan xpf_plan;

/* Module m's plan, computed on first use and cached in the host. */
int xpf_host_plan(xpf_host *h, size_t m, const xpf_plan **out, xpf_error *err);
void xpf_plan_free(void *plan);

#endif
