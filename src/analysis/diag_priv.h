/* Shared by diagnosis.c, diag_rules.c, diag_checks.c, diag_render.c and
 * diag_tree.c only. */
#ifndef XPF_DIAG_PRIV_H
#define XPF_DIAG_PRIV_H

#include <jansson.h>

#include "analysis/diagnosis.h"
#include "analysis/plan.h"
/* runtime.h's enum xpf_rt_role reuses the enumerator name XPF_ROLE_OUTPUT
 * that plan.h's enum xpf_role already defines; inside the diagnosis the
 * runtime's one is spelled XPF_RT_ROLE_OUTPUT_ (we never use it). */
#define XPF_ROLE_OUTPUT XPF_RT_ROLE_OUTPUT_
#include "analysis/runtime.h"
#undef XPF_ROLE_OUTPUT

#define XPF_MIB (1024ull * 1024ull)

/* The state of computing one diagnosis. */
typedef struct xpf_diag_ctx {
	xpf_host *h;
	xpf_diagnosis *d;
	const xpf_runtime *rt;    /* NULL when it could not be computed */
	const xpf_plan *p;        /* the focus plan, NULL when none */
	const char *dir;          /* the focus module's directory name */
	size_t cap_findings;
	long focus_x;             /* the execution the module was chosen by
				     (an ambiguous one that failed), or -1 */
} xpf_diag_ctx;

/* Plan of module m, or NULL (error noted in capture/errors.txt). */
const xpf_plan *xpf_diag_plan(xpf_host *h, long m);

/* Findings. */
xpf_finding *xpf_diag_add(xpf_diag_ctx *c, const char *code, enum xpf_tag tag, long module);
void xpf_diag_num(xpf_finding *f, const char *key, uint64_t v);
void xpf_diag_str(xpf_finding *f, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void xpf_diag_evidence(xpf_finding *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* A fix; the text gets the capacity check appended when need_after is
 * non-zero and a capacity is known. */
void xpf_diag_addfix(xpf_diag_ctx *c, xpf_finding *f, uint64_t saving, uint64_t need_after,
		  const char *cost, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
void xpf_diag_text(xpf_finding *f, xpf_buf *b);  /* takes b's bytes */

/* The rules (diag_rules.c), each adding its findings when they apply. */
void xpf_rules_plan(xpf_diag_ctx *c);
void xpf_rules_runtime(xpf_diag_ctx *c);
void xpf_rules_missing(xpf_diag_ctx *c);
/* After the others: unexplained-oom when the capture shows an OOM (a retry
 * or an execution that never launched) and no finding explains it. */
void xpf_rules_oom(xpf_diag_ctx *c);
/* Does the capture show an OOM: an AllocatorRetry wait, or an execution
 * with launched = no? */
bool xpf_diag_oom_shown(const xpf_runtime *rt);

/* Rendering helpers (diag_render.c). */
void xpf_diag_finding_line(const xpf_finding *f, xpf_buf *out, const char *indent);
/* The length of text's first clause: up to its first "; " outside
 * parentheses, brackets and quotes (the whole text when none). */
size_t xpf_diag_clause_len(const char *text);
json_t *xpf_diag_json(xpf_host *h, const xpf_diagnosis *d);  /* new reference */

/* Humans: "3.72 GiB (3,994,091,520 bytes)" is too long for one line, so
 * text uses xpf_human and the exact bytes go into figures. */
const char *xpf_diag_h(uint64_t v, char out[32]);

#endif
