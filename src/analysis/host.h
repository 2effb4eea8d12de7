/* A host: one capture and the analyses computed from it, each once, on
 * first use.  This is the analyses' whole view of the world: they take a
 * host (or a capture) and return values; none of them knows the report
 * tree, its nodes or its files (src/tree does).
 *
 *   xpf_host_plan(h, m)     the plan of module m (plan.h)
 *   xpf_host_runtime(h)     what the allocator did (runtime.h)
 *   xpf_host_diagnosis(h)   the findings (diagnosis.h)
 *   xpf_host_compare(h)     what changed against its baseline host (compare.h)
 *
 * Each result is immutable once made and lives until xpf_host_release();
 * any number of threads may ask for it (the first one computes it). */
#ifndef XPF_HOST_H
#define XPF_HOST_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capture/capture.h"
#include "common/buf.h"
#include "common/error.h"
#include "common/lazy.h"

struct xpf_plan;

/* What the command line asks of the analyses. */
typedef struct xpf_options {
	const char *module; /* --module NAME, or NULL */
	uint64_t capacity;  /* --capacity BYTES, or 0 */
	int top;            /* --top N (default 25) */
	int device;         /* --device N, or -1 */
	const char *run;    /* --run NAME, or NULL */
	/* How to build the runtime (threads, kernels, phase reports: runtime.h);
	 * NULL: the defaults. */
	const struct xpf_rt_options *runtime;
} xpf_options;

#define XPF_OPTIONS_INIT                    \
	{                                   \
		NULL, 0, 25, -1, NULL, NULL \
	}

typedef struct xpf_host {
	const char *name; /* the host's name (file name without .xplane.pb) */
	xpf_capture *cap;
	const xpf_options *opt;
	size_t nmodules; /* xpf_capture_nmodules(cap) */
	/* Where findings point their evidence: the host's folder in the tree
	 * ("" for the root, else "hosts/<dir>/" ...) and each module's folder
	 * name under modules/ (safe and unique: SPEC §3).  Given by the tree
	 * at xpf_host_init; owned by the host. */
	char *path;
	char **module_dirs;
	/* Module m's plan (xpf_host_plan, set by xpf_host_init): how the
	 * stages after plan/ (runtime linking, the diagnosis) ask for plans,
	 * so that they depend on the plan stage's product and not on host.c,
	 * which runs them. */
	int (*plan_of)(struct xpf_host *h, size_t m, const struct xpf_plan **out, xpf_error *err);
	/* private: the analyses, each made once (host.c) */
	xpf_lazy *plans;    /* nmodules slots: struct xpf_plan * */
	xpf_lazy runtime;   /* struct xpf_runtime * */
	xpf_lazy diagnosis; /* struct xpf_diagnosis * */
	/* --base: the baseline host this one is compared with and where that
	 * comparison's files are, from the report root ("compare/"), given by
	 * the tree (xpf_host_set_base; base NULL: none); the comparison, made
	 * once for all of those files */
	struct xpf_host *base;
	char *compare_dir;
	xpf_lazy compare;       /* struct xpf_compare * */
	pthread_mutex_t err_mu; /* guards first_late */
	xpf_error first_late;   /* the first error found late (code 0: none) */
} xpf_host;

/* path and module_dirs are taken over (freed by xpf_host_release); both
 * may be NULL where no finding is asked for (--check). */
void xpf_host_init(xpf_host *h, const char *name, xpf_capture *cap, const xpf_options *opt,
		   char *path, char **module_dirs);
void xpf_host_release(xpf_host *h);

/* Record an error found late (while rendering), for --cat and --export to
 * say on stderr; the first one is kept. */
void xpf_host_note_error(xpf_host *h, const xpf_error *err);
/* The first error noted, into *out: false when none. */
bool xpf_host_late_error(xpf_host *h, xpf_error *out);

/* What a file shows, made from one host's analyses: the bytes into out.
 * arg picks what (a module index, an execution n, ...).  The tree serves
 * these as files (src/tree). */
typedef int (*xpf_content_fn)(xpf_host *h, long arg, xpf_buf *out, xpf_error *err);

#endif
