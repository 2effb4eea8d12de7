/* The diagnosis (SPEC §5).  Owned by diagnosis.c. */
#ifndef XPF_DIAGNOSIS_H
#define XPF_DIAGNOSIS_H

#include "analysis/report.h"

typedef struct xpf_diagnosis xpf_diagnosis;

int xpf_host_diagnosis(xpf_host *h, const xpf_diagnosis **out, xpf_error *err);
void xpf_diagnosis_free(void *d);

#endif
