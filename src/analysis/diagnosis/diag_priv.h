/* Shared by diagnosis.c, the rules (diag_rules_*.c, diag_util.c),
 * diag_checks.c, diag_render.c and the tree's diag_tree.c and hosts.c
 * only. */
#ifndef XPF_DIAG_PRIV_H
#define XPF_DIAG_PRIV_H

#include <jansson.h>

#include "analysis/diagnosis/diagnosis.h"
#include "analysis/plan/plan.h"
/* runtime.h's enum xpf_rt_role reuses the enumerator name XPF_ROLE_OUTPUT
 * that plan.h's enum xpf_role already defines; inside the diagnosis the
 * runtime's one is spelled XPF_RT_ROLE_OUTPUT_ (we never use it). */
#define XPF_ROLE_OUTPUT XPF_RT_ROLE_OUTPUT_
#include "analysis/runtime/runtime.h"
#undef XPF_ROLE_OUTPUT

#define XPF_MIB (1024ull * 1024ull)

/* The state of computing one diagnosis. */
typedef struct xpf_diag_ctx {
	xpf_host *h;
	xpf_diagnosis *d;
	const xpf_runtime *rt; /* NULL when it could not be computed */
	const xpf_plan *p;     /* the focus plan, NULL when none */
	const char *dir;       /* the focus module's directory name */
	size_t cap_findings;
	long focus_x; /* the execution the module was chosen by
				     (an ambiguous one that failed), or -1 */
} xpf_diag_ctx;

/* Findings. */
xpf_finding *xpf_diag_add(xpf_diag_ctx *c, const char *code, enum xpf_tag tag, long module);
void xpf_diag_num(xpf_finding *f, const char *key, uint64_t v);
void xpf_diag_str(xpf_finding *f, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void xpf_diag_evidence(xpf_finding *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A fix; the text gets the capacity check appended when need_after is
 * non-zero and a capacity is known. */
void xpf_diag_addfix(xpf_diag_ctx *c, xpf_finding *f, uint64_t saving, uint64_t need_after,
		     const char *cost, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* A fix whose saving is an estimate's range, lo to hi bytes, of a step
 * that needs need bytes now: the verdict says "fits" or "not enough" only
 * where the whole range agrees, else that it may fit. */
void xpf_diag_addfix_range(xpf_diag_ctx *c, xpf_finding *f, uint64_t lo, uint64_t hi, uint64_t need,
			   const char *cost, const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));
void xpf_diag_text(xpf_finding *f, xpf_buf *b); /* takes b's bytes */

/* The rules of SPEC §5.2, each adding its findings when they apply;
 * diagnosis.c runs them in order.  Thresholds are the spec's, so a user
 * can check why a code appears. */
/* diag_rules_fit.c: plan, plan-exceeds-pool, near-fit, fits. */
void xpf_rule_fit(xpf_diag_ctx *c);
/* Is the focus step short of its capacity, or within 5% of it? */
bool xpf_diag_short_or_near(const xpf_diag_ctx *c);
/* diag_rules_roles.c: mostly-forward, mostly-backward, mostly-workspace
 * (only when the step is short or near). */
void xpf_rule_roles(xpf_diag_ctx *c);
/* diag_rules_plan.c: what else the focus plan wastes. */
void xpf_rule_donation(xpf_diag_ctx *c);                             /* no-donation */
void xpf_rule_param_copies(xpf_diag_ctx *c, enum xpf_dup_kind kind); /* param-*-copy */
void xpf_rule_remat_frag(xpf_diag_ctx *c); /* xla-remat, temp-fragmentation */
void xpf_rule_retrace(xpf_diag_ctx *c);
/* diag_rules_dtype.c: silent-upcast. */
void xpf_rule_upcast(xpf_diag_ctx *c);
/* diag_rules_runtime.c: what the runtime shows holding memory (these and
 * allocator-retry, never-launched only with allocator events). */
void xpf_rule_growth(xpf_diag_ctx *c);       /* growth-per-execution */
void xpf_rule_foreign(xpf_diag_ctx *c);      /* foreign-live-arrays */
void xpf_rule_compile_peak(xpf_diag_ctx *c); /* compile-time-peak */
/* diag_rules_oom.c: the failure itself. */
void xpf_rule_retry(xpf_diag_ctx *c); /* allocator-retry */
void xpf_rule_never(xpf_diag_ctx *c); /* never-launched */
/* diag_rules_compile.c: compile-oom, and whether the capture shows one. */
void xpf_rule_compile_oom(xpf_diag_ctx *c);
bool xpf_diag_compile_oom_shown(const xpf_runtime *rt);
/* The last compilation that ran out of memory, or NULL. */
const xpf_rt_compile *xpf_diag_failed_compile(const xpf_runtime *rt);
/* After the others: unexplained-oom when the capture shows an OOM (a retry
 * or an execution that never launched) and no finding explains it. */
void xpf_rule_unexplained_oom(xpf_diag_ctx *c);
/* diag_rules_missing.c: missing-plan, missing-runtime. */
void xpf_rule_missing(xpf_diag_ctx *c);

/* Evidence of the failure, also used by diag_rules_fit.c (diag_rules_oom.c
 * says what each is). */
const xpf_plan_alloc *xpf_diag_failed_request(const xpf_diag_ctx *c);
void xpf_diag_failed_request_text(const xpf_diag_ctx *c, const xpf_plan_alloc *a, xpf_buf *b);
void xpf_diag_frag_text(const xpf_diag_ctx *c, xpf_finding *f, int64_t fail_ps, xpf_buf *b);

/* diag_blocks.c: the repeated blocks the forward-kept buffers at the heap
 * peak come from (SPEC 5.3): by name stack, by a Python loop's repeated
 * lines, by a scan's stacked residuals. */
enum xpf_blocks_how { XPF_BLOCKS_NONE = 0, XPF_BLOCKS_NAMES, XPF_BLOCKS_LOOP, XPF_BLOCKS_SCAN };
typedef struct xpf_diag_blocks {
	enum xpf_blocks_how how;
	size_t k;       /* blocks (layers); 0 when none repeats */
	uint64_t bytes; /* forward-kept bytes at the peak inside them */
	uint64_t one;   /* one block's share: bytes / k */
	/* NAMES: the name stack "jit(f)/jvp(m)/block_N"; LOOP: the lines
	 * that repeat, "dir/model.py:74-81"; SCAN: the while loop, with its
	 * op_name and source, or the name stack of the scan */
	char name[256];
	char layers[96];   /* LOOP: the parameters' layers "params['layers'][N]" */
	bool checkpointed; /* SCAN: the backward pass recomputes the body already */
} xpf_diag_blocks;
void xpf_diag_find_blocks(const xpf_plan *p, xpf_diag_blocks *out);

/* diag_scale.c: the batch B and sequence length S of the step and what
 * at the heap peak scales with them (SPEC 5.3 "What fits"). */
typedef struct xpf_diag_scale {
	uint64_t batch, seq;             /* B and S; 0 where no input shows them */
	const xpf_plan_param *input;     /* the data input B is read from */
	const xpf_plan_param *seq_input; /* the one S is read from */
	uint64_t fwd, fwd_sq;            /* forward-kept activations at the peak, their S*S ones */
	uint64_t act, act_sq;            /* every activation at the peak, its S*S ones */
	uint64_t need;
} xpf_diag_scale;
void xpf_diag_find_scale(const xpf_plan *p, xpf_diag_scale *s);
/* What leaves when the batch (seq false) or the sequence becomes num/den
 * of what it is: *lo the forward-kept activations' share, *hi every
 * activation's. */
void xpf_diag_scale_saving(const xpf_diag_scale *s, bool seq, uint64_t num, uint64_t den,
			   uint64_t *lo, uint64_t *hi);
/* The largest batch / sequence length whose need fits cap: *lo by the
 * forward-kept estimate, *hi by every activation's; 0 when none does. */
void xpf_diag_largest_batch(const xpf_diag_scale *s, uint64_t cap, uint64_t *lo, uint64_t *hi);
void xpf_diag_largest_seq(const xpf_diag_scale *s, uint64_t cap, uint64_t *lo, uint64_t *hi);
/* The "largest batch that fits: ..." clauses (and figures) of a step that
 * exceeds its capacity, appended to b. */
void xpf_diag_what_fits(const xpf_diag_ctx *c, xpf_finding *f, xpf_buf *b);

/* Text helpers (diag_util.c). */
/* The dimensions of "f32[8,8,1024,1024]{3,2,1,0}"; their count (<= 8), 0
 * for a tuple, a scalar or an unreadable shape. */
int xpf_diag_shape_dims(const char *shape, uint64_t dims[8]);
/* The floating dtype holding most of the entry parameters' bytes ("bf16"),
 * "" when none. */
const char *xpf_diag_param_dtype(const xpf_plan *p);
/* Is the buffer B*H*S*S-like: its last two dimensions S (S 0: equal and
 * at least 128)? */
bool xpf_diag_square_seq(const char *shape, uint64_t seq);
/* "f32[8,128]{1,0}" -> "f32[8,128]" (the layout is noise in a sentence). */
void xpf_diag_put_shape(xpf_buf *b, const char *shape);
/* A size as XLA's OOM messages print it: "1.50GiB". */
const char *xpf_diag_tsl_human(uint64_t v, char out[32]);

/* a - b, or 0 when b >= a: a saving never makes a need negative. */
static inline uint64_t xpf_sub0(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

/* Does the capture show an OOM: an AllocatorRetry wait, or an execution
 * with launched = no? */
bool xpf_diag_oom_shown(const xpf_runtime *rt);

#endif
