/* Comparing a capture with a baseline (SPEC §8, `--base`): which module of
 * one is which of the other, and the figures of both sides with their
 * changes.  Owned by compare.c (matching, figures, the changes that
 * matter) and compare_tree.c (compare/ and its files).
 *
 * A comparison is built once per pair of hosts, from the two hosts' plans,
 * runtimes and diagnoses, and kept by the host compared (xpf_host_compare):
 * every compare/ file of the pair reads the same one.  Pointers inside
 * borrow from the hosts and live until xpf_host_release().
 *
 * Matching: a module's name without its program id (`jit_step(2811)` and
 * `jit_step(3020)` are both `jit_step`); several of one name on a side are
 * paired by their entry parameter shapes, then in module order; the rest
 * are new (only after) or gone (only in the baseline).  In time linear in
 * the modules (grouped by that name once), each module's shapes made once. */
#ifndef XPF_COMPARE_H
#define XPF_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/diagnosis/diagnosis.h"
#include "analysis/plan/plan.h"
#include "analysis/host.h"
#include "analysis/runtime/runtime.h"

/* How a pair was made. */
enum xpf_cmp_how { XPF_CMP_NAME = 0, XPF_CMP_SHAPES, XPF_CMP_ORDER, XPF_CMP_NEW, XPF_CMP_GONE };
const char *xpf_cmp_how_name(enum xpf_cmp_how how); /* "name" "shapes" "order" "new" "gone" */

/* A module's figures as modules/index.tsv gives them. */
enum {
	XPF_CMP_PARAMETERS = 0,
	XPF_CMP_NON_ALIASED,
	XPF_CMP_TEMP,
	XPF_CMP_HEAP_PEAK,
	XPF_CMP_NEED,
	XPF_CMP_EXECUTIONS,
	XPF_CMP_NFIGS
};
extern const char *const xpf_cmp_fig_names[XPF_CMP_NFIGS]; /* "parameters_bytes", ..., "executions" */

typedef struct xpf_cmp_figs {
	bool has_plan;       /* the plan's figures are there */
	bool has_executions; /* the runtime counted executions */
	uint64_t v[XPF_CMP_NFIGS];
} xpf_cmp_figs;

typedef struct xpf_cmp_module {
	long base, after; /* module indexes; -1 on the side it is missing */
	enum xpf_cmp_how how;
	xpf_cmp_figs fb, fa; /* base's and after's figures */
} xpf_cmp_module;

/* One side of the comparison. */
typedef struct xpf_cmp_side {
	xpf_host *h;
	const char *prefix;     /* its tree from the report root: "" or "base/" or "hosts/x/" */
	const xpf_diagnosis *d; /* NULL when it failed (err says why) */
	xpf_error d_err;
	const xpf_runtime *rt; /* NULL: no runtime */
	long focus;            /* the compared module, -1 when none */
	const xpf_plan *plan;  /* its plan, NULL when none or failed */
	/* the focus module's executions on the diagnosis' device */
	bool has_in_use; /* its last execution's in use at start is known */
	uint64_t in_use_bytes;
	bool has_growth;      /* at least two executions with in use known */
	int64_t growth_bytes; /* mean rise per execution (rounded toward 0) */
	/* Why in use is not known (has_in_use false) while a module is
	 * compared: "no allocator events", "its runtime cannot be read", ...;
	 * NULL otherwise.  Static. */
	const char *in_use_unknown;
	bool has_pool; /* the pool allocator is known */
	const xpf_rt_allocator *pool;
} xpf_cmp_side;

/* The focus modules' buffers at the heap peak, grouped (peak_buffers.tsv). */
typedef struct xpf_cmp_group {
	enum xpf_role role;
	const char *dtype, *shape, *source;
	uint64_t count[2], bytes[2]; /* [0] base, [1] after */
} xpf_cmp_group;

/* An allocator of either side, by name. */
typedef struct xpf_cmp_alloc {
	const char *name;
	const xpf_rt_allocator *a[2]; /* [0] base, [1] after; NULL: absent */
} xpf_cmp_alloc;

/* One change that matters (compare/diagnosis.*), most important first. */
typedef struct xpf_cmp_change {
	const char *code; /* static */
	enum xpf_tag tag;
	char *text;
	bool has_figs;    /* before/after bytes below mean something */
	bool signed_figs; /* growth: the figures are int64 */
	uint64_t before, after;
	size_t nevidence;
	char *evidence[4];
} xpf_cmp_change;

typedef struct xpf_compare {
	char *dir;            /* this pair's compare/ files from the report root: "compare/" */
	xpf_cmp_side side[2]; /* [0] base, [1] after */
	size_t nmodules;      /* matched (after's order), then new, then gone */
	xpf_cmp_module *modules;
	size_t nmatched, nnew, ngone;
	long focus_pair; /* index in modules of the focus pair, or -1 */
	size_t ngroups;  /* by |bytes change| largest first, then key */
	xpf_cmp_group *groups;
	size_t nallocs; /* by name */
	xpf_cmp_alloc *allocs;
	size_t nchanges; /* 0: nothing changed */
	xpf_cmp_change *changes;
} xpf_compare;

/* Compare after with base.  Never fails: a plan or runtime that cannot be
 * read leaves its figures out (noted in its host, as its own files give
 * EIO), and a diagnosis that failed leaves side[].d NULL.  dir: where the
 * pair's compare/ files are, from the report root ("compare/"), for the
 * evidence paths. */
void xpf_compare_build(xpf_host *base, xpf_host *after, const char *dir, xpf_compare *out);
void xpf_compare_release(xpf_compare *c);
/* Release and free a comparison xpf_host_compare made (an xpf_lazy's value). */
void xpf_compare_free(void *c);

/* Compare h with base from now on; dir as for xpf_compare_build.  The
 * tree's, before any file asks (not thread-safe). */
void xpf_host_set_base(xpf_host *h, xpf_host *base, const char *dir);
/* h compared with its baseline, made on the first call and kept until
 * xpf_host_release(h) (any number of threads may ask); fails only when
 * h has no baseline. */
int xpf_host_compare(xpf_host *h, const xpf_compare **out, xpf_error *err);

/* A module's name without its program id: the length of "jit_step" in
 * "jit_step(2811)" (the whole name when it has no "(digits)" suffix). */
size_t xpf_cmp_stem_len(const char *name);

/* A signed change in words: "+104.0 MiB (+109051904 bytes, +50.0%)"; the
 * percent is left out when before is 0. */
void xpf_cmp_delta_text(uint64_t before, uint64_t after, xpf_buf *out);
/* The percent alone ("+50.0", "-100.0"); false when before is 0. */
bool xpf_cmp_delta_pct(uint64_t before, uint64_t after, char out[32]);

#endif
