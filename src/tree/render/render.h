/* The renderers of the analyses' files that are not TSV rows of a node:
 * diagnosis.txt / .json, summary.txt, checks.txt (diag_render.c), plan.json
 * and a module's summary (plan_json.c); the pictures (svg.h), pprof
 * (pprof.h) and the trace (trace_json.h) have their own headers.  They read
 * the analyses' structs and compute nothing of their own. */
#ifndef XPF_RENDER_H
#define XPF_RENDER_H

#include <jansson.h>
#include <stddef.h>

#include "analysis/diagnosis/diagnosis.h"
#include "analysis/host.h"
#include "analysis/plan/plan.h"
#include "common/buf.h"
#include "common/error.h"

/* diag_render.c */
int xpf_render_diagnosis_txt(xpf_host *h, long arg, xpf_buf *out, xpf_error *err);
int xpf_render_diagnosis_json(xpf_host *h, long arg, xpf_buf *out, xpf_error *err);
int xpf_render_summary(xpf_host *h, long arg, xpf_buf *out, xpf_error *err);
int xpf_render_checks(xpf_host *h, long arg, xpf_buf *out, xpf_error *err);
/* One finding's diagnosis.txt lines (its fixes under it), each line
 * after indent. */
void xpf_diag_finding_line(const xpf_finding *f, xpf_buf *out, const char *indent);
/* The length of text's first clause: up to its first "; " outside
 * parentheses, brackets and quotes (the whole text when none). */
size_t xpf_diag_clause_len(const char *text);
json_t *xpf_diag_json(xpf_host *h, const xpf_diagnosis *d); /* new reference */

/* plan_json.c, plan_tree.c */
int xpf_plan_json(const xpf_plan *p, xpf_buf *out, xpf_error *err);
void xpf_plan_summary(const xpf_plan *p, int top, xpf_buf *out);
void xpf_plan_peak_row_tsv(const xpf_plan *p, size_t i, xpf_buf *out);

#endif
