/* The diagnosis (SPEC §5): which module, what capacity, and the findings
 * with their figures, evidence and fixes.  Computed by diagnosis.c (module
 * choice, capacity) and the rules (diag_rules_*.c); rendered by
 * diag_render.c (diagnosis.txt/.json, summary.txt, checks.txt) and
 * diag_checks.c; the tree's diag_tree.c places the files.
 *
 * A diagnosis is computed once per host on first use (xpf_host_diagnosis)
 * and cached in h->diagnosis; it is immutable afterwards, safe to read from
 * any thread, and every pointer inside it lives until xpf_host_release().
 * It never fails for lack of data: a capture without plan or runtime gets
 * missing-plan / missing-runtime findings instead. */
#ifndef XPF_DIAGNOSIS_H
#define XPF_DIAGNOSIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/host.h"
#include "analysis/runtime/runtime.h"
#include "analysis/plan/plan.h"

/* Where a figure came from (SPEC §4). */
enum xpf_tag { XPF_TAG_READ = 0, XPF_TAG_MEASURED, XPF_TAG_INFERRED };
const char *xpf_tag_name(enum xpf_tag t); /* "read" "measured" "inferred" */

#define XPF_DIAG_MAX_FIGS 24
#define XPF_DIAG_MAX_EVIDENCE 6
#define XPF_DIAG_MAX_FIXES 6

/* One figure of a finding: a number (JSON integer) or a text (JSON string:
 * percentages "81.6", ratios "1.00", ids). */
typedef struct xpf_diag_fig {
	const char *key; /* static: "need_bytes", "count", ... */
	bool is_text;
	uint64_t value;
	char text[40];
} xpf_diag_fig;

typedef struct xpf_diag_fix {
	char *text;
	uint64_t saving_bytes;
	uint64_t saving_max_bytes; /* an estimate's range: saving_bytes to
				      this (0: a single figure) */
	char *cost;
	bool after_program; /* SPEC 5.3: a larger pool, rendered after
				     every program fix of the diagnosis */
} xpf_diag_fix;             /* always tagged inferred */

typedef struct xpf_finding {
	const char *code; /* SPEC §5.2, static */
	enum xpf_tag tag;
	long module; /* host module index, or -1 */
	char *text;
	size_t nfigs;
	xpf_diag_fig figs[XPF_DIAG_MAX_FIGS];
	size_t nevidence;
	char *evidence[XPF_DIAG_MAX_EVIDENCE]; /* paths relative to the host root */
	size_t nfixes;
	xpf_diag_fix fixes[XPF_DIAG_MAX_FIXES];
	int rank; /* ordering: most important first */
} xpf_finding;

typedef struct xpf_diagnosis {
	long module;             /* the focus module (SPEC §5.1), -1 if none */
	char *module_why;        /* how it was chosen */
	long execution;          /* its last execution (0-based), or -1 */
	int device;              /* the device read, or -1 */
	int allocator;           /* the pool allocator read, or -1 */
	uint64_t capacity_bytes; /* 0 when unknown */
	enum xpf_tag capacity_tag;
	char *capacity_source; /* "GPU_0_bfc", "--capacity", "memory_size of /device:GPU:0" */
	uint64_t memory_bytes; /* the device's memory_size, 0 when absent */
	bool amd;              /* the device's vendor is AMD (ROCm): its libraries' names */
	bool fraction_set;     /* capacity is not 0.75 × memory_size (±1%) */
	/* host events between the focus module's last two executions on the
	 * focus execution's device (runtime/between.tsv): module -1 without a
	 * focus, from_execution -1 when it did not run twice there */
	xpf_rt_between between;
	xpf_error between_error; /* why it could not be read (code 0: it could) */
	xpf_error runtime_error; /* why the runtime could not be read (code 0: it could) */
	size_t nfindings;        /* most important first */
	xpf_finding *findings;
} xpf_diagnosis;

/* Module m's need (SPEC §4.1), 0 when it has no buffer assignment. */
uint64_t xpf_module_need(xpf_host *h, long m);

/* The host's diagnosis (computed on first use; owned by the host). */
int xpf_host_diagnosis(xpf_host *h, const xpf_diagnosis **out, xpf_error *err);
/* The findings for a host (what xpf_host_diagnosis keeps): its plans and
 * runtime are asked of the host. */
int xpf_diagnose(xpf_host *h, const xpf_runtime *rt, const xpf_error *rt_err, xpf_diagnosis **out,
		 xpf_error *err);
void xpf_diagnosis_free(void *d);
/* Plan of module m, or NULL (error noted in capture/errors.txt). */
const xpf_plan *xpf_diag_plan(xpf_host *h, long m);

/* Checks (diag_checks.c): append checks.txt lines for the host to out. */
void xpf_diag_checks(xpf_host *h, const xpf_diagnosis *d, xpf_buf *out);

/* The device plane's memory_size for device d (d < 0: the first device
 * plane that has one); 0 when absent. */
uint64_t xpf_diag_device_memory(xpf_host *h, int d);
/* Whether that device plane's device_vendor is "AMD" (absent: false). */
bool xpf_diag_device_is_amd(xpf_host *h, int d);
/* A device plane's device name: its gpu_device_name stat (GPU), else its
 * device_type_string ("TPU v6 Lite"); false when it has neither.  Errors
 * reading them go to *err (kept when already set). */
bool xpf_diag_device_name(const xpf_plane *p, xpf_str *out, xpf_error *err);

/* A finding by code, or NULL. */
const xpf_finding *xpf_diag_find(const xpf_diagnosis *d, const char *code);

/* The pool a module ran in, the capacity its heap picture is drawn
 * against: --capacity if given, else the largest capacity of the device
 * allocators module m's executions used, else of any device pool, else
 * the diagnosis's; 0 when none is known.  what says which, in words (for
 * the picture's legend).  Never fails: a runtime that cannot be computed
 * gives the diagnosis's figure or none. */
uint64_t xpf_module_pool(xpf_host *h, long m, char what[128]);

#endif
