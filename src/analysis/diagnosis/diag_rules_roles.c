/* What fills the heap peak when the focus step does not fit or nearly
 * does (SPEC §5.2): mostly-forward, mostly-backward, mostly-workspace, with
 * the fixes that shrink that role. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/diagnosis/diag_priv.h"
#include "analysis/paths.h"
#include "common/alloc.h"

static const char *peak_shape(const xpf_plan_peak *r)
{
	return r->buffer && r->buffer->shape ? r->buffer->shape : "";
}

static const char *peak_source(const xpf_plan_peak *r)
{
	return r->buffer && r->buffer->instr ? r->buffer->instr->source : "";
}

static const char *peak_opname(const xpf_plan_peak *r)
{
	return r->buffer && r->buffer->instr ? r->buffer->instr->op_name : "";
}

/* The last component of an op_name ("jit(f)/jvp(attn)/softmax" -> "softmax"). */
static const char *op_tail(const char *op)
{
	const char *s = strrchr(op, '/');
	return s ? s + 1 : op;
}

/* The largest group of peak rows of one role with the same shape and
 * source line: its count, bytes, and a representative row. */
struct group {
	size_t count;
	uint64_t bytes;
	const xpf_plan_peak *row;
};

/* Are any of the role's B*H*S*S-shaped buffers at the peak f32? */
static bool sq_f32(const xpf_plan *p, enum xpf_role role)
{
	for (size_t i = 0; i < p->npeak; i++)
		if (p->peak[i].role == role && xpf_diag_square_seq(peak_shape(&p->peak[i]), 0) &&
		    p->peak[i].buffer && strcmp(p->peak[i].buffer->dtype, "f32") == 0)
			return true;
	return false;
}

/* What the fused-attention fix says of the dtype: the cuDNN kernel takes
 * bf16/fp16; f32 scores of f32 parameters need q, k, v cast, but f32
 * scores of bf16 parameters come from a promotion (silent-upcast). */
static const char *fused_dtype_words(const xpf_plan *p)
{
	if (!sq_f32(p, XPF_PLAN_ROLE_FORWARD))
		return "";
	const char *dt = xpf_diag_param_dtype(p);
	if (strcmp(dt, "bf16") == 0 || strcmp(dt, "f16") == 0)
		return "; they are f32 although the parameters are low precision (a promotion: see silent-upcast), and the cuDNN kernel takes bf16/fp16: keep the scores in the parameters' dtype first";
	return "; they are f32 here, and the cuDNN kernel takes bf16/fp16: cast q, k, v to bf16 first";
}

/* One peak row of a role, keyed for grouping by shape and source. */
struct group_key {
	const char *shape, *source;
	size_t i;
};

static int cmp_group_key(const void *a, const void *b)
{
	const struct group_key *x = a, *y = b;
	int c = strcmp(x->shape, y->shape);
	if (c == 0)
		c = strcmp(x->source, y->source);
	return c ? c : (x->i > y->i) - (x->i < y->i);
}

/* The role's rows of one shape and source with the most bytes (ties: the
 * group met first in peak order).  Sorted, not compared pairwise: a big
 * module has tens of thousands of peak rows. */
static struct group largest_group(const xpf_plan *p, enum xpf_role role)
{
	struct group best = { 0 };
	size_t n = 0;
	struct group_key *k = xpf_malloc((p->npeak ? p->npeak : 1) * sizeof *k);
	for (size_t i = 0; i < p->npeak; i++)
		if (p->peak[i].role == role)
			k[n++] = (struct group_key){ peak_shape(&p->peak[i]),
						     peak_source(&p->peak[i]), i };
	xpf_qsort(k, n, sizeof *k, cmp_group_key);
	for (size_t a = 0, b; a < n; a = b) {
		struct group g = { 0, 0, &p->peak[k[a].i] };
		for (b = a; b < n && strcmp(k[b].shape, k[a].shape) == 0 &&
			    strcmp(k[b].source, k[a].source) == 0;
		     b++) {
			g.count++;
			g.bytes += p->peak[k[b].i].bytes;
		}
		if (g.bytes > best.bytes || (g.bytes == best.bytes && best.row && g.row < best.row))
			best = g;
	}
	free(k);
	return best;
}

static void describe_group(const struct group *g, xpf_buf *b)
{
	char h1[32];
	const char *src = peak_source(g->row), *op = peak_opname(g->row);
	xpf_buf_printf(b, "%zu x ", g->count);
	xpf_diag_put_shape(b, peak_shape(g->row));
	xpf_buf_printf(b, " (%s in all)", xpf_human(g->bytes, h1));
	if (*src)
		xpf_buf_printf(b, " at %s", src);
	if (*op)
		xpf_buf_printf(b, " (%s)", op_tail(op));
}

static const char *role_words(enum xpf_role r)
{
	switch (r) {
	case XPF_PLAN_ROLE_FORWARD: return "forward-kept (activations kept for the backward pass)";
	case XPF_PLAN_ROLE_BACKWARD: return "backward (gradients and their temporaries)";
	case XPF_PLAN_ROLE_WORKSPACE: return "library workspace (GEMM/conv scratch)";
	default: return xpf_role_name(r);
	}
}

/* The bytes of the role's peak rows shaped like B*H*S*S (attention
 * scores). */
static uint64_t square_seq_bytes(const xpf_plan *p, enum xpf_role role)
{
	uint64_t sq = 0;
	for (size_t i = 0; i < p->npeak; i++)
		if (p->peak[i].role == role && xpf_diag_square_seq(peak_shape(&p->peak[i]), 0))
			sq += p->peak[i].bytes;
	return sq;
}

/* The bytes of the role's f32 peak rows. */
static uint64_t f32_bytes(const xpf_plan *p, enum xpf_role role)
{
	uint64_t f32 = 0;
	for (size_t i = 0; i < p->npeak; i++)
		if (p->peak[i].role == role && p->peak[i].buffer &&
		    strcmp(p->peak[i].buffer->dtype, "f32") == 0)
			f32 += p->peak[i].bytes;
	return f32;
}

/* jax.checkpoint on each of k repeated blocks keeps the blocks' inputs and
 * recomputes one block at a time in the backward pass: what the blocks
 * keep beyond one block leaves the peak (the lower figure), up to all they
 * keep when the recomputed block's activations are not all live at once
 * (the upper).  No repeated block: little to gain, and the text says so. */
static void remat_fix(xpf_diag_ctx *c, xpf_finding *f, uint64_t rb)
{
	const xpf_plan *p = c->p;
	char h1[32], h2[32], h3[32], h4[32];
	xpf_diag_blocks bl;
	xpf_diag_find_blocks(p, &bl);
	uint64_t lo = bl.bytes - bl.one, hi = bl.bytes, need = p->need_bytes;
	const char *cost = "about one extra forward pass per step (~+30% step time)";
	xpf_diag_num(f, "blocks", bl.k);
	xpf_diag_num(f, "block_bytes", bl.bytes);
	switch (bl.how) {
	case XPF_BLOCKS_NAMES:
		xpf_diag_addfix_range(c, f, lo, hi, need, cost,
				      "wrap each %s (%zu blocks keep %s of the %s forward-kept) in jax.checkpoint, saving %s to %s; the backward pass holds one block's activations at a time; in Flax nn.remat, or a policy such as jax.checkpoint_policies.dots_with_no_batch_dims_saveable to keep the matmuls",
				      bl.name, bl.k, xpf_human(bl.bytes, h1), xpf_human(rb, h2),
				      xpf_human(lo, h3), xpf_human(hi, h4));
		return;
	case XPF_BLOCKS_LOOP:
		xpf_diag_addfix_range(c, f, lo, hi, need, cost,
				      "wrap the layer function the loop calls in jax.checkpoint (blk = jax.checkpoint(block); Flax: nn.remat), saving %s to %s: a Python loop over the %zu layers of %s runs lines %s once per layer, and what they make keeps %s of the %s forward-kept; the backward pass then holds one layer's activations at a time; a jax.checkpoint_policies policy such as dots_with_no_batch_dims_saveable keeps the matmuls",
				      xpf_human(lo, h3), xpf_human(hi, h4), bl.k, bl.layers,
				      bl.name, xpf_human(bl.bytes, h1), xpf_human(rb, h2));
		return;
	case XPF_BLOCKS_SCAN:
		if (bl.checkpointed) {
			/* what stays stacked is what the policy saves */
			xpf_diag_addfix(c, f, 0, 0, "more recomputation in the backward pass",
					"the scanned body is checkpointed already (the backward pass recomputes it); %s stacks %s of the %s forward-kept over %zu iterations: what its jax.checkpoint_policies policy saves, so only a stricter policy (nothing_saveable, or saving fewer names) shrinks it",
					bl.name, xpf_human(bl.bytes, h1), xpf_human(rb, h2), bl.k);
			return;
		}
		xpf_diag_addfix_range(c, f, lo, hi, need, cost,
				      "checkpoint the scanned body, saving %s to %s: jax.lax.scan(jax.checkpoint(body), ...) (Flax: nn.scan over nn.remat(Block)); %s stacks %s of the %s forward-kept on a leading dimension of %zu, the scan's length; the backward scan then recomputes one iteration's activations at a time; a jax.checkpoint_policies policy keeps what is cheap to store",
				      xpf_human(lo, h3), xpf_human(hi, h4), bl.name,
				      xpf_human(bl.bytes, h1), xpf_human(rb, h2), bl.k);
		return;
	case XPF_BLOCKS_NONE: break;
	}
	xpf_diag_addfix(c, f, 0, 0, "about one extra forward pass per step",
			"jax.checkpoint helps little here: the forward-kept buffers come from no repeated block (no layer_N/Block_N in the name stack, no line that makes the same buffer once per layer, no scan stacking them), so the whole forward would be recomputed and live again in the backward pass");
}

/* Forward-kept bytes rb (sq of them B*H*S*S): rematerialise, shrink the
 * batch or the sequence, fuse attention. */
static void forward_fixes(xpf_diag_ctx *c, xpf_finding *f, uint64_t rb, uint64_t sq)
{
	const xpf_plan *p = c->p;
	uint64_t need = p->need_bytes, lo, hi;
	char h1[32], h2[32], h3[32], h4[32];
	xpf_diag_scale sc;
	remat_fix(c, f, rb);
	/* SPEC 5.3 (what fits): halving the batch or the sequence is a range,
	 * the forward-kept activations' share up to every activation's */
	xpf_diag_find_scale(p, &sc);
	xpf_diag_scale_saving(&sc, false, 1, 2, &lo, &hi);
	xpf_diag_addfix_range(c, f, lo, hi, need,
			      "twice the steps per update (same result with gradient accumulation)",
			      "halve the micro-batch and accumulate gradients over 2 micro-batches: activations scale with the batch, saving %s to %s",
			      xpf_human(lo, h1), xpf_human(hi, h2));
	xpf_diag_scale_saving(&sc, true, 1, 2, &lo, &hi);
	if (sc.act_sq)
		xpf_diag_addfix_range(c, f, lo, hi, need, "fewer tokens of context per step",
				      "halve the sequence length: S*S buffers shrink 4x (%s -> %s) and the rest of the activations 2x, saving %s to %s",
				      xpf_human(sc.act_sq, h1), xpf_human(sc.act_sq / 4, h2),
				      xpf_human(lo, h3), xpf_human(hi, h4));
	else
		xpf_diag_addfix_range(c, f, lo, hi, need, "fewer tokens of context per step",
				      "halve the sequence length: the activations shrink 2x, saving %s to %s",
				      xpf_human(lo, h3), xpf_human(hi, h4));
	if (sq)
		xpf_diag_addfix(c, f, sq, xpf_sub0(need, sq),
				"a fused-attention kernel must exist for the shapes and dtype",
				"use fused attention (jax.nn.dot_product_attention(..., implementation='cudnn')) and check that the B*H*S*S buffers (%s) leave the plan%s",
				xpf_human(sq, h1), fused_dtype_words(p));
}

/* Backward bytes rb: shard, accumulate, or keep the gradients in bf16. */
static void backward_fixes(xpf_diag_ctx *c, xpf_finding *f, uint64_t rb)
{
	const xpf_plan *p = c->p;
	uint64_t need = p->need_bytes;
	char h1[32], h2[32];
	uint64_t s = rb / 2;
	xpf_diag_addfix(c, f, s, xpf_sub0(need, s), "collectives per step; needs a second device",
			"shard parameters and gradients (FSDP) over 2 devices or more: the backward bytes at least halve, saving about %s",
			xpf_human(s, h1));
	xpf_diag_addfix(c, f, s, xpf_sub0(need, s), "twice the steps per update",
			"accumulate gradients over 2 micro-batches: the backward temporaries of each micro-batch halve, saving about %s",
			xpf_human(s, h1));
	uint64_t f32 = f32_bytes(p, XPF_PLAN_ROLE_BACKWARD);
	if (f32)
		xpf_diag_addfix(c, f, f32 / 2, xpf_sub0(need, f32 / 2),
				"less precision in the gradients",
				"look for f32 copies of bf16 gradients: %s of the backward bytes at the peak are f32; in bf16 they would save %s",
				xpf_human(f32, h1), xpf_human(f32 / 2, h2));
}

/* The finding's text and figures: the role's share of the heap peak, its
 * largest group of like buffers, its B*H*S*S bytes sq (forward only). */
static void mostly_text(xpf_diag_ctx *c, xpf_finding *f, enum xpf_role role, uint64_t sq)
{
	const xpf_plan *p = c->p;
	uint64_t rb = p->role_bytes[role];
	char h1[32], h2[32], h3[32];
	xpf_buf b = XPF_BUF_INIT;
	struct group g = largest_group(p, role);
	xpf_buf_printf(&b, "%s%% of the heap peak (%s of %s) is %s",
		       xpf_pct(rb, p->heap_peak_bytes, h1), xpf_human(rb, h2),
		       xpf_human(p->heap_peak_bytes, h3), role_words(role));
	if (g.row) {
		xpf_buf_adds(&b, "; the largest: ");
		describe_group(&g, &b);
	}
	if (role == XPF_PLAN_ROLE_FORWARD && sq)
		xpf_buf_printf(&b, "; %s of it in B*H*S*S-shaped buffers", xpf_human(sq, h1));
	xpf_diag_text(f, &b);
	xpf_diag_str(f, "share_pct", "%s", xpf_pct(rb, p->heap_peak_bytes, h1));
	xpf_diag_num(f, "role_bytes", rb);
	xpf_diag_num(f, "heap_peak_bytes", p->heap_peak_bytes);
	if (g.row) {
		xpf_diag_num(f, "largest_group_bytes", g.bytes);
		xpf_diag_num(f, "largest_group_count", g.count);
		xpf_diag_str(f, "largest_group_shape", "%.39s", peak_shape(g.row));
	}
	if (role == XPF_PLAN_ROLE_FORWARD)
		xpf_diag_num(f, "square_seq_bytes", sq);
}

void xpf_rule_roles(xpf_diag_ctx *c)
{
	const xpf_plan *p = c->p;
	if (!xpf_diag_short_or_near(c))
		return;
	/* The largest of forward / backward / workspace, if it holds >= 25%. */
	static const enum xpf_role three[] = { XPF_PLAN_ROLE_FORWARD, XPF_PLAN_ROLE_BACKWARD,
					       XPF_PLAN_ROLE_WORKSPACE };
	int best = -1;
	for (int i = 0; i < 3; i++)
		if (best < 0 || p->role_bytes[three[i]] > p->role_bytes[three[best]])
			best = i;
	enum xpf_role role = three[best];
	uint64_t rb = p->role_bytes[role];
	if (p->heap_peak_bytes == 0 || rb == 0 || rb * 4 < p->heap_peak_bytes)
		return;
	static const char *const codes[] = { "mostly-forward", "mostly-backward", "mostly-workspace" };
	xpf_finding *f = xpf_diag_add(c, codes[best], XPF_TAG_INFERRED, c->d->module);
	uint64_t sq = square_seq_bytes(p, role);
	mostly_text(c, f, role, sq);
	xpf_diag_evidence(f, XPF_EV_MODULE(XPF_F_PEAK_BUFFERS_TSV), c->dir);
	xpf_diag_evidence(f, XPF_EV_MODULE(XPF_F_BY_SOURCE_TSV), c->dir);
	if (role == XPF_PLAN_ROLE_FORWARD)
		forward_fixes(c, f, rb, sq);
	else if (role == XPF_PLAN_ROLE_BACKWARD)
		backward_fixes(c, f, rb);
}
