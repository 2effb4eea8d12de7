/* --lm SPEC: the train step of a small transformer LM, shaped like
 * jax-h200's scen.py (lm_loss, block, sgd), at sizes and in forms the
 * real captures do not cover, so that tests can hold the advice to
 * captures its rules were not fitted to (issue 37).
 *
 * SPEC is a comma-separated list (defaults in brackets):
 *   layers=N [4], batch=B [4], seq=S [512], dim=D [256], heads=H [4],
 *   vocab=V [4096], capacity=BYTES [2.79 GiB; K, M, G suffixes],
 *   loop | scan | flax [loop]: the layers in a Python for loop over
 *     params['layers'][i], in jax.lax.scan over stacked params['layers']
 *     (a while loop with its trip count), or as Flax modules Block_<i>;
 *   dtype=f32|bf16 [f32]: the parameters' and activations' dtype;
 *   upcast: (bf16) the scores are made f32 at their line, as
 *     `/ np.sqrt(dh)` does, and what follows stays f32;
 *   remat: each block checkpointed: the forward pass keeps the blocks'
 *     inputs, the backward pass recomputes one block at a time;
 *   foreign=BYTES [0]: another array (f32, a dataset) put on the device
 *     after the parameters;
 *   pre: the parameters and that array put before the capture started
 *     (no events of them: in use before the first event).
 * The parameters are donated (SGD updates them in place); the step fails
 * on its temp block (AllocatorRetry, never launched) when its need and
 * the foreign array exceed the capacity, else it runs twice. */
#include "scenarios.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCEN "/home/user/lm/scen.py"
#define FLAX "/opt/flax/linen/attention.py"
#define NW 6 /* weights per layer: wq, wk, wv, wo, w1, w2 */

static char nm[64][192];
static int nmi;
static const char *f(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *f(const char *fmt, ...)
{
	va_list ap;
	char *b = nm[nmi++ & 63];
	va_start(ap, fmt);
	vsnprintf(b, sizeof nm[0], fmt, ap);
	va_end(ap);
	return b;
}

typedef struct lm {
	mk_lm_opt o;
	hb_module *m;
	int uniq;
	int pdt, adt; /* parameters' dtype; activations' (f32 after an upcast) */
	int64_t tokens, emb;
	int64_t w[64][NW]; /* per layer; scan: w[0] the stacked ones */
	hb_arr wa[NW];
	int nparams;
	hb_arr pa[2 + 64 * NW]; /* every parameter, for the device puts */
} lm;

/* What a block makes, in the order the forward pass makes it. */
enum { R_Q, R_K, R_V, R_S, R_P, R_O, R_X1, R_H, R_G, NRES };

typedef struct block {
	int64_t in; /* the block's input x */
	int64_t r[NRES];
	int rb[NRES]; /* their buffers */
	int64_t out;
} block;

static const char *prefix(const lm *c, int l, bool backward, bool recompute)
{
	if (c->o.form == MK_LM_FLAX)
		return f("jit(train_step)/%s/Block_%d%s", backward ? "transpose(jvp(LM))" : "jvp(LM)", l,
			 recompute ? "/checkpoint/rematted_computation" : "");
	if (recompute)
		return "jit(train_step)/transpose(jvp(jvp()))/checkpoint/rematted_computation";
	return backward ? "jit(train_step)/transpose(jvp())" : "jit(train_step)/jvp()";
}

static hb_meta meta(const lm *c, const char *pre, const char *op, int line)
{
	bool flax = c->o.form == MK_LM_FLAX;
	return mk_meta(op, f("%s/%s", pre, op), flax ? FLAX : SCEN, flax ? "Block.__call__" : "block",
		       flax ? line + 60 : line);
}

static hb_arr arr(int et, int nd, int64_t a, int64_t b, int64_t c, int64_t d)
{
	hb_arr x = hb_a(et, nd, (int)a, (int)b, (int)c, (int)d);
	return x;
}

/* One block's forward pass from x (at line numbers of scen.py's block). */
static block block_fwd(lm *c, int l, int64_t x, const int64_t *w, bool recompute)
{
	const mk_lm_opt *o = &c->o;
	const char *pre = prefix(c, l, recompute, recompute);
	int64_t B = o->batch, S = o->seq, D = o->dim, H = o->heads, F = 4 * o->dim;
	const int64_t WS = 1 * MiB;
	block k = { .in = x };
	hb_arr act = arr(c->adt, 3, B, S, D, 0);
	hb_meta md;
	for (int i = 0; i < 3; i++) {
		md = meta(c, pre, "dot_general", 74 + i);
		k.r[R_Q + i] =
			mk_gemm(c->m, f("custom-call.%d", c->uniq++), act, WS, x, w[i], &md, &k.rb[R_Q + i]);
	}
	/* the scores: with an upcast, bf16 from the dot, then f32 from the
	 * division by a float64 scalar (a convert at the same line) */
	md = meta(c, pre, "dot_general", 77);
	md.op_name = f("%s/bhqd,bhkd->bhqk/dot_general", pre);
	int sdt = c->adt;
	hb_arr sa = arr(sdt, 3, B * H, S, S, 0);
	int64_t s = mk_gemm(c->m, f("custom-call.%d", c->uniq++), sa, WS, k.r[R_Q], k.r[R_K], &md,
			    &k.rb[R_S]);
	if (o->upcast && sdt != ET_F32) {
		md = meta(c, pre, "convert_element_type", 77);
		sa.et = ET_F32;
		s = mk_tfusion(c->m, f("loop_convert_fusion.%d", c->uniq++), "kLoop", "convert", sa, &s, 1,
			       &md, &k.rb[R_S]);
		c->adt = ET_F32; /* what follows is f32 */
	}
	k.r[R_S] = s;
	md = meta(c, pre, "exp", 78);
	k.r[R_P] = mk_tfusion(c->m, f("loop_exponential_fusion.%d", c->uniq++), "kLoop", "exponential",
			      arr(sa.et, 4, B, H, S, S), &s, 1, &md, &k.rb[R_P]);
	act.et = c->adt;
	md = meta(c, pre, "dot_general", 79);
	md.op_name = f("%s/bhqk,bhkd->bhqd/dot_general", pre);
	k.r[R_O] = mk_gemm(c->m, f("custom-call.%d", c->uniq++), act, WS, k.r[R_P], k.r[R_V], &md,
			   &k.rb[R_O]);
	md = meta(c, pre, "dot_general", 80);
	int64_t ow = mk_gemm(c->m, f("custom-call.%d", c->uniq++), act, WS, k.r[R_O], w[3], &md, NULL);
	int64_t ops[2] = { x, ow };
	md = meta(c, pre, "add", 80);
	k.r[R_X1] = mk_tfusion(c->m, f("loop_add_fusion.%d", c->uniq++), "kLoop", "add", act, ops, 2,
			       &md, &k.rb[R_X1]);
	md = meta(c, pre, "dot_general", 81);
	k.r[R_H] = mk_gemm(c->m, f("custom-call.%d", c->uniq++), arr(c->adt, 2, B * S, F, 0, 0), WS,
			   k.r[R_X1], w[4], &md, &k.rb[R_H]);
	md = meta(c, pre, "mul", 81);
	k.r[R_G] = mk_tfusion(c->m, f("loop_multiply_tanh_fusion.%d", c->uniq++), "kLoop", "tanh",
			      arr(c->adt, 2, B * S, F, 0, 0), &k.r[R_H], 1, &md, &k.rb[R_G]);
	md = meta(c, pre, "dot_general", 81);
	int64_t mo = mk_gemm(c->m, f("custom-call.%d", c->uniq++), act, WS, k.r[R_G], w[5], &md, NULL);
	ops[0] = k.r[R_X1];
	ops[1] = mo;
	md = meta(c, pre, "add", 81);
	k.out = mk_tfusion(c->m, f("loop_add_fusion.%d", c->uniq++), "kLoop", "add", act, ops, 2, &md,
			   NULL);
	return k;
}

/* One block's backward pass: the gradients of its weights into g[], the
 * gradient of its input returned.  Every residual of k is an operand, so
 * it lives until here. */
static int64_t block_bwd(lm *c, int l, const block *k, int64_t dx, const int64_t *w, int64_t *g)
{
	const mk_lm_opt *o = &c->o;
	const char *pre = prefix(c, l, true, false);
	int64_t B = o->batch, S = o->seq, D = o->dim, H = o->heads, F = 4 * o->dim;
	const int64_t WS = 1 * MiB;
	hb_arr act = arr(c->adt, 3, B, S, D, 0), hf = arr(c->adt, 2, B * S, F, 0, 0);
	hb_meta md = meta(c, pre, "dot_general", 81);
	int64_t dg = mk_gemm(c->m, f("custom-call.%d", c->uniq++), hf, WS, dx, w[5], &md, NULL);
	g[5] = mk_gemm(c->m, f("custom-call.%d", c->uniq++), c->wa[5], WS, k->r[R_G], dx, &md, NULL);
	int64_t ops[4] = { dg, k->r[R_H] };
	md = meta(c, pre, "mul", 81);
	int64_t dh = mk_tfusion(c->m, f("loop_multiply_fusion.%d", c->uniq++), "kLoop", "multiply", hf,
				ops, 2, &md, NULL);
	md = meta(c, pre, "dot_general", 81);
	g[4] = mk_gemm(c->m, f("custom-call.%d", c->uniq++), c->wa[4], WS, k->r[R_X1], dh, &md, NULL);
	int64_t dx1 = mk_gemm(c->m, f("custom-call.%d", c->uniq++), act, WS, dh, w[4], &md, NULL);
	md = meta(c, pre, "dot_general", 80);
	g[3] = mk_gemm(c->m, f("custom-call.%d", c->uniq++), c->wa[3], WS, k->r[R_O], dx1, &md, NULL);
	int64_t dob = mk_gemm(c->m, f("custom-call.%d", c->uniq++), act, WS, dx1, w[3], &md, NULL);
	md = meta(c, pre, "dot_general", 79);
	md.op_name = f("%s/bhqk,bhkd->bhqd/dot_general", pre);
	hb_arr pa = c->o.upcast ? arr(ET_F32, 4, B, H, S, S) : arr(c->adt, 4, B, H, S, S);
	int64_t dp = mk_gemm(c->m, f("custom-call.%d", c->uniq++), pa, WS, dob, k->r[R_V], &md, NULL);
	ops[0] = dp;
	ops[1] = k->r[R_P];
	ops[2] = k->r[R_S];
	md = meta(c, pre, "mul", 78);
	int64_t ds = mk_tfusion(c->m, f("fusion.%d", c->uniq++), "kLoop", "multiply",
				arr(pa.et, 3, B * H, S, S, 0), ops, 3, &md, NULL);
	int64_t d[3];
	md = meta(c, pre, "dot_general", 77);
	md.op_name = f("%s/bhqd,bhkd->bhqk/dot_general", pre);
	d[0] = mk_gemm(c->m, f("custom-call.%d", c->uniq++), act, WS, ds, k->r[R_K], &md, NULL);
	d[1] = mk_gemm(c->m, f("custom-call.%d", c->uniq++), act, WS, ds, k->r[R_Q], &md, NULL);
	d[2] = mk_gemm(c->m, f("custom-call.%d", c->uniq++), act, WS, k->r[R_P], dob, &md, NULL);
	for (int i = 0; i < 3; i++) {
		md = meta(c, pre, "dot_general", 74 + i);
		g[i] = mk_gemm(c->m, f("custom-call.%d", c->uniq++), c->wa[i], WS, k->in, d[i], &md,
			       NULL);
	}
	int64_t sum[4] = { d[0], d[1], d[2], dx1 };
	md = meta(c, pre, "add_any", 81);
	return mk_tfusion(c->m, f("loop_add_fusion.%d", c->uniq++), "kLoop", "add", act, sum, 4, &md,
			  NULL);
}

/* SGD: the new weight in place of the old one (donated). */
static int64_t update(lm *c, int64_t p, int64_t g, hb_arr a)
{
	int64_t ops[2] = { p, g };
	hb_meta md = mk_meta("sub", "jit(train_step)/sub", SCEN, "sgd", 112);
	return mk_afusion(c->m, f("loop_subtract_fusion.%d", c->uniq++), "subtract", a, ops, 2, &md);
}

static int64_t new_param(lm *c, hb_arr a, const hb_meta *md)
{
	c->pa[c->nparams] = a;
	int64_t id = mk_param(c->m, f("Arg_%d.%d", c->nparams, c->nparams + 1), a, md);
	c->nparams++;
	return id;
}

static void params(lm *c)
{
	const mk_lm_opt *o = &c->o;
	static const char *const wn[NW] = { "wq", "wk", "wv", "wo", "w1", "w2" };
	int64_t D = o->dim, F = 4 * o->dim;
	c->wa[0] = c->wa[1] = c->wa[2] = c->wa[3] = arr(c->pdt, 2, D, D, 0, 0);
	c->wa[4] = arr(c->pdt, 2, D, F, 0, 0);
	c->wa[5] = arr(c->pdt, 2, F, D, 0, 0);
	hb_meta md = mk_meta(NULL, o->form == MK_LM_FLAX ? "params['params']['Embed_0']['embedding']" :
							   "params['emb']",
			     NULL, NULL, 0);
	c->emb = new_param(c, arr(c->pdt, 2, o->vocab, D, 0, 0), &md);
	for (int l = 0; l < (o->form == MK_LM_SCAN ? 1 : o->layers); l++)
		for (int i = 0; i < NW; i++) {
			hb_arr a = c->wa[i];
			if (o->form == MK_LM_SCAN) {
				a.nd = 3;
				a.dims[2] = a.dims[1];
				a.dims[1] = a.dims[0];
				a.dims[0] = o->layers;
				md.op_name = f("params['layers']['%s']", wn[i]);
			} else if (o->form == MK_LM_FLAX) {
				md.op_name = f("params['params']['Block_%d']['%s']['kernel']", l, wn[i]);
			} else {
				md.op_name = f("params['layers'][%d]['%s']", l, wn[i]);
			}
			c->w[l][i] = new_param(c, a, &md);
		}
	md.op_name = "tokens";
	c->tokens = new_param(c, arr(ET_S32, 2, o->batch, o->seq, 0, 0), &md);
}

/* The embedding, the logits and the loss (an output); *dx the gradient
 * of the last block's output, *demb the embedding's. */
static int64_t head(lm *c, int64_t x, int64_t *dx, int64_t *demb)
{
	const mk_lm_opt *o = &c->o;
	const int64_t WS = 1 * MiB;
	int64_t B = o->batch, S = o->seq, D = o->dim;
	hb_meta md = mk_meta("dot_general", "jit(train_step)/jvp()/dot_general", SCEN, "lm_loss", 94);
	hb_arr la = arr(ET_F32, 2, B * S, o->vocab, 0, 0);
	int64_t logits = mk_gemm(c->m, f("custom-call.%d", c->uniq++), la, WS, x, c->emb, &md, NULL);
	int64_t ops[2] = { logits, c->tokens };
	md = mk_meta("reduce_sum", "jit(train_step)/jvp()/reduce_sum", SCEN, "lm_loss", 96);
	int64_t loss = hb_fusion(c->m, f("input_reduce_fusion.%d", c->uniq++), "kInput", "reduce", NULL,
				 hb_a(ET_F32, 0), ops, 2, &md);
	hb_alloc_output(c->m, hb_buffer(c->m, loss, -1, HB_OUTPUT));
	md = mk_meta("sub", "jit(train_step)/transpose(jvp())/sub", SCEN, "lm_loss", 95);
	int64_t dl = mk_tfusion(c->m, f("loop_subtract_fusion.%d", c->uniq++), "kLoop", "subtract", la,
				ops, 2, &md, NULL);
	md = mk_meta("dot_general", "jit(train_step)/transpose(jvp())/dot_general", SCEN, "lm_loss", 94);
	*demb = mk_gemm(c->m, f("custom-call.%d", c->uniq++), arr(c->pdt, 2, o->vocab, D, 0, 0), WS, dl,
			x, &md, NULL);
	*dx = mk_gemm(c->m, f("custom-call.%d", c->uniq++), arr(c->adt, 3, B, S, D, 0), WS, dl, c->emb,
		      &md, NULL);
	return loss;
}

static int64_t embed(lm *c)
{
	const mk_lm_opt *o = &c->o;
	int64_t ops[2] = { c->emb, c->tokens };
	hb_meta md = mk_meta("gather", "jit(train_step)/jvp()/gather", SCEN, "lm_loss", 85);
	return mk_tfusion(c->m, "loop_gather_fusion", "kLoop", "gather",
			  arr(c->pdt, 3, o->batch, o->seq, o->dim, 0), ops, 2, &md, NULL);
}

/* The layers one after the other (a Python loop, or Flax's Block_<i>). */
static int unrolled(lm *c, int64_t *outs)
{
	const mk_lm_opt *o = &c->o;
	static block k[64];
	int64_t x = embed(c), dx, demb, g[NW];
	for (int l = 0; l < o->layers; l++) {
		k[l] = block_fwd(c, l, x, c->w[l], false);
		x = k[l].out;
	}
	int64_t loss = head(c, x, &dx, &demb);
	for (int l = o->layers - 1; l >= 0; l--) {
		block r = k[l];
		if (o->remat)
			r = block_fwd(c, l, k[l].in, c->w[l], true);
		dx = block_bwd(c, l, &r, dx, c->w[l], g);
		for (int i = 0; i < NW; i++)
			outs[1 + l * NW + i] = update(c, c->w[l][i], g[i], c->wa[i]);
	}
	outs[0] = update(c, c->emb, demb, arr(c->pdt, 2, o->vocab, o->dim, 0, 0));
	outs[1 + o->layers * NW] = loss;
	return 2 + o->layers * NW;
}

/* jax.lax.scan: a forward while loop that stacks the residuals (the
 * block's input only, with remat) on a leading dimension of the trip
 * count, read back by the backward while loop. */
static int scanned(lm *c, int64_t *outs)
{
	const mk_lm_opt *o = &c->o;
	int64_t L = o->layers, B = o->batch, S = o->seq, D = o->dim, H = o->heads, F = 4 * o->dim;
	int64_t x = embed(c);
	hb_arr st[NRES + 3];
	int64_t init[NRES + 3];
	int ib[NRES + 3], n = 0;
	st[n] = hb_a(ET_S32, 0);
	init[n] = mk_tfusion(c->m, f("loop_broadcast_fusion.%d", c->uniq++), "kLoop", "broadcast", st[n],
			     NULL, 0, NULL, &ib[n]);
	n++;
	st[n] = arr(c->adt, 3, B, S, D, 0);
	init[n] = x;
	ib[n] = hb_buffer_of(c->m, x);
	n++;
	hb_arr one[NRES + 1];
	one[0] = arr(c->adt, 3, B, S, D, 0); /* the block's input */
	int nres = 1;
	if (!o->remat) {
		one[nres++] = arr(c->adt, 3, B, S, D, 0); /* q */
		one[nres++] = arr(c->adt, 3, B, S, D, 0); /* k */
		one[nres++] = arr(c->adt, 3, B, S, D, 0); /* v */
		one[nres++] = arr(c->adt, 3, B * H, S, S, 0);
		one[nres++] = arr(c->adt, 4, B, H, S, S);
		one[nres++] = arr(c->adt, 3, B, S, D, 0); /* o */
		one[nres++] = arr(c->adt, 3, B, S, D, 0); /* x1 */
		one[nres++] = arr(c->adt, 2, B * S, F, 0, 0);
		one[nres++] = arr(c->adt, 2, B * S, F, 0, 0);
	}
	hb_meta md = mk_meta("broadcast_in_dim", "jit(train_step)/jvp()/broadcast_in_dim", SCEN, "lm_loss", 90);
	for (int r = 0; r < nres; r++, n++) {
		hb_arr a = one[r];
		for (int d = a.nd; d > 0; d--)
			a.dims[d] = a.dims[d - 1];
		a.dims[0] = L;
		a.nd++;
		st[n] = a;
		init[n] = mk_tfusion(c->m, f("loop_broadcast_fusion.%d", c->uniq++), "kLoop", "broadcast", a,
				     NULL, 0, &md, &ib[n]);
	}
	int64_t t = hb_tuple(c->m, f("tuple.%d", c->uniq++), init, n);
	md = mk_meta("while", "jit(train_step)/jvp()/while", SCEN, "lm_loss", 90);
	hb_meta body = mk_meta("dynamic_update_slice", "jit(train_step)/jvp()/while/body/dynamic_update_slice",
			       SCEN, "block", 77);
	int64_t w = hb_while(c->m, f("while.%d", c->uniq++), t, st, n, &md, &body);
	hb_set_trip_count(c->m, w, L);
	int lb[NRES + 3];
	for (int k = 0; k < n; k++) {
		lb[k] = hb_buffer(c->m, w, k, HB_TEMP);
		hb_share(c->m, lb[k], ib[k]);
	}
	int64_t xl = hb_gte(c->m, f("get-tuple-element.%d", c->uniq++), w, 1), dx, demb;
	int64_t loss = head(c, xl, &dx, &demb);
	/* with remat, one iteration's recomputed activations live while the
	 * backward scan runs */
	int64_t bops[NRES + 4];
	int nb = 0;
	bops[nb++] = dx;
	block r = { 0 };
	if (o->remat) {
		r = block_fwd(c, 0, dx, c->w[0], true);
		for (int i = 0; i < NRES; i++)
			bops[nb++] = r.r[i];
	}
	/* the backward scan: its carry and the stacked gradients */
	hb_arr bst[NW + 2];
	int64_t binit[NW + 2];
	int bib[NW + 2], m2 = 0;
	bst[m2] = hb_a(ET_S32, 0);
	md = mk_meta("broadcast_in_dim", "jit(train_step)/transpose(jvp())/broadcast_in_dim", SCEN, "lm_loss", 90);
	binit[m2] = mk_tfusion(c->m, f("loop_broadcast_fusion.%d", c->uniq++), "kLoop", "broadcast",
			       bst[m2], NULL, 0, NULL, &bib[m2]);
	m2++;
	int64_t dsum[NRES + 4];
	md = mk_meta("add_any", "jit(train_step)/transpose(jvp())/add_any", SCEN, "lm_loss", 90);
	for (int i = 0; i < nb; i++)
		dsum[i] = bops[i];
	bst[m2] = arr(c->adt, 3, B, S, D, 0);
	binit[m2] = mk_tfusion(c->m, f("loop_add_fusion.%d", c->uniq++), "kLoop", "add", bst[m2], dsum, nb,
			       &md, &bib[m2]);
	m2++;
	for (int i = 0; i < NW; i++, m2++) {
		hb_arr a = c->wa[i];
		a.nd = 3;
		a.dims[2] = a.dims[1];
		a.dims[1] = a.dims[0];
		a.dims[0] = L;
		bst[m2] = a;
		md = mk_meta("broadcast_in_dim", "jit(train_step)/transpose(jvp())/broadcast_in_dim", SCEN,
			     "lm_loss", 90);
		binit[m2] = mk_tfusion(c->m, f("loop_broadcast_fusion.%d", c->uniq++), "kLoop", "broadcast",
				       a, NULL, 0, &md, &bib[m2]);
	}
	t = hb_tuple(c->m, f("tuple.%d", c->uniq++), binit, m2);
	md = mk_meta("while", "jit(train_step)/transpose(jvp())/while", SCEN, "lm_loss", 90);
	body = mk_meta("dynamic_update_slice", o->remat ?
		"jit(train_step)/transpose(jvp())/while/body/eval_jaxpr/checkpoint/rematted_computation/dot_general" :
		"jit(train_step)/transpose(jvp())/while/body/eval_jaxpr/dot_general", SCEN, "block", 77);
	int64_t wb = hb_while(c->m, f("while.%d", c->uniq++), t, bst, m2, &md, &body);
	hb_set_trip_count(c->m, wb, L);
	for (int k = 0; k < m2; k++)
		hb_share(c->m, hb_buffer(c->m, wb, k, HB_TEMP), bib[k]);
	for (int k = 0; k < n; k++)
		hb_live_until(c->m, lb[k], wb);
	for (int i = 0; o->remat && i < NRES; i++)
		hb_live_until(c->m, r.rb[i], wb);
	int nout = 0;
	outs[nout++] = update(c, c->emb, demb, arr(c->pdt, 2, o->vocab, D, 0, 0));
	for (int i = 0; i < NW; i++) {
		int64_t g = hb_gte(c->m, f("get-tuple-element.%d", c->uniq++), wb, 2 + i);
		outs[nout++] = update(c, c->w[0][i], g, bst[2 + i]);
	}
	outs[nout++] = loss;
	return nout;
}

void mk_build_lm(mk_scn *s, const mk_lm_opt *o)
{
	static lm c; /* megabytes of names: not on the stack */
	memset(&c, 0, sizeof c);
	c.o = *o;
	c.uniq = 10;
	c.pdt = c.adt = o->bf16 ? ET_BF16 : ET_F32;
	mk_scn_init(s, "gpu-node-0", 1, MK_POOL_MEMORY, o->capacity);
	s->device_name = "NVIDIA H200";
	s->vendor = "Nvidia";
	c.m = hb_new("jit_train_step", 7000);
	params(&c);
	int64_t outs[2 + 64 * NW];
	int n = o->form == MK_LM_SCAN ? scanned(&c, outs) : unrolled(&c, outs);
	/* donation: output k (a new weight) reuses parameter k */
	for (int k = 0; k < n - 1; k++)
		hb_io_alias(c.m, k, k);
	mk_root(c.m, outs, n);
	int mod = mk_add_module(s, c.m, "train_step", 0);
	const mk_modinfo *mi = &s->mods[mod];
	int64_t pbytes = 0;
	for (int p = 0; p < c.nparams; p++) {
		char shp[96];
		hb_arr_str(&c.pa[p], shp, sizeof shp);
		pbytes += hb_arr_bytes(&c.pa[p]);
		if (!o->pre)
			mk_put(s, 0, hb_arr_bytes(&c.pa[p]), shp);
	}
	if (o->pre)
		s->pre_bytes[0] = pbytes + o->foreign;
	else if (o->foreign)
		mk_put(s, 0, o->foreign, f("f32[%lld]", (long long)(o->foreign / 4)));
	int64_t need = mi->stats.need;
	if (need + o->foreign > o->capacity) {
		mk_exec(s, mod, mi->nallocs - 1, 10000000000ll);
	} else {
		for (int k = 0; k < 2; k++) {
			mk_gap(s, 100 * 1000);
			mk_exec(s, mod, -1, 0);
		}
	}
	mk_py(s, "$profiler.py:213 stop_trace", 50 * 1000);
}

/* A size with an optional K, M or G suffix (binary); -1 if malformed. */
static int64_t size_of(const char *v)
{
	char *end;
	long long x = strtoll(v, &end, 10);
	int64_t mul = *end == 'K' ? 1024 : *end == 'M' ? MiB : *end == 'G' ? GiB : 1;
	if (end == v || x <= 0 || (mul > 1 ? end[1] != '\0' : *end != '\0'))
		return -1;
	return x * mul;
}

int mk_parse_lm(const char *spec, mk_lm_opt *o, char *bad, size_t nbad)
{
	static const struct {
		const char *key;
		size_t off;
		int64_t lo, hi;
	} sizes[] = {
		{ "batch", offsetof(mk_lm_opt, batch), 1, 4096 },
		{ "seq", offsetof(mk_lm_opt, seq), 8, 65536 },
		{ "dim", offsetof(mk_lm_opt, dim), 8, 65536 },
		{ "heads", offsetof(mk_lm_opt, heads), 1, 256 },
		{ "vocab", offsetof(mk_lm_opt, vocab), 8, 1 << 20 },
		{ "capacity", offsetof(mk_lm_opt, capacity), 1 << 20, 1ll << 50 },
		{ "foreign", offsetof(mk_lm_opt, foreign), 4, 1ll << 50 },
	};
	*o = (mk_lm_opt){ .layers = 4, .batch = 4, .seq = 512, .dim = 256, .heads = 4, .vocab = 4096,
			  .capacity = MK_POOL_CAPACITY };
	char buf[512];
	snprintf(buf, sizeof buf, "%s", spec);
	for (char *save = NULL, *it = strtok_r(buf, ",", &save); it; it = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(it, '=');
		bool ok = true;
		if (eq)
			*eq++ = '\0';
		if (strcmp(it, "loop") == 0 || strcmp(it, "scan") == 0 || strcmp(it, "flax") == 0)
			o->form = it[0] == 'l' ? MK_LM_LOOP : it[0] == 's' ? MK_LM_SCAN : MK_LM_FLAX;
		else if (strcmp(it, "upcast") == 0 || strcmp(it, "remat") == 0)
			*(it[0] == 'u' ? &o->upcast : &o->remat) = 1;
		else if (strcmp(it, "pre") == 0)
			o->pre = 1;
		else if (strcmp(it, "dtype") == 0 && eq)
			ok = (o->bf16 = strcmp(eq, "bf16") == 0) || strcmp(eq, "f32") == 0;
		else if (strcmp(it, "layers") == 0 && eq)
			ok = (o->layers = atoi(eq)) >= 1 && o->layers <= 64;
		else
			ok = false;
		for (size_t k = 0; !ok && eq && k < sizeof sizes / sizeof *sizes; k++) {
			int64_t v = strcmp(it, sizes[k].key) == 0 ? size_of(eq) : -1;
			if (v >= sizes[k].lo && v <= sizes[k].hi) {
				*(int64_t *)((char *)o + sizes[k].off) = v;
				ok = true;
			}
		}
		if (!ok) {
			snprintf(bad, nbad, "%s%s%s", it, eq ? "=" : "", eq ? eq : "");
			return -1;
		}
	}
	if (o->dim % o->heads != 0 || (o->upcast && !o->bf16)) {
		snprintf(bad, nbad, "%s", o->upcast ? "upcast (needs dtype=bf16)" : "dim (not a multiple of heads)");
		return -1;
	}
	return 0;
}
