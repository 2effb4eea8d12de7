/* The three golden cases of the debugging guide's measured reference:
 * attention-too-big, grads-kept and no-donation.  The figures each one is
 * built to carry are in tests/scenarios/<name>.json, with the arithmetic. */
#include "scenarios.h"

#include <stdio.h>
#include <string.h>

#define MODEL "model.py"
#define TRAIN "train.py"

static char nm[32][128];
static int nmi;
/* printf into a rotating static buffer (names are copied by the builder) */
static const char *f(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#include <stdarg.h>
static const char *f(const char *fmt, ...)
{
	va_list ap;
	char *b = nm[nmi++ & 31];
	va_start(ap, fmt);
	vsnprintf(b, 128, fmt, ap);
	va_end(ap);
	return b;
}

/* Adam state (p, m, v) over `nw` weights: params are p[0..nw), m, v. */
typedef struct state3 {
	int nw;
	int64_t p[3][40];
	hb_arr a[40];
} state3;

static void add_state(hb_module *m, state3 *st, const char *const *names, int *argn)
{
	static const char *const which[3] = { "params", "opt_state.mu", "opt_state.nu" };
	for (int c = 0; c < 3; c++)
		for (int i = 0; i < st->nw; i++) {
			hb_meta md = mk_meta(NULL, f("state.%s%s", which[c], names[i]), NULL, NULL, 0);
			st->p[c][i] = mk_param(m, f("Arg_%d.%d", *argn, *argn + 1), st->a[i], &md);
			(*argn)++;
		}
}

/* Adam update of weight i from gradient g: new p, m, v (aliased outputs). */
static void adam(hb_module *m, const state3 *st, int i, int64_t g, const char *fn, int64_t *outs,
	int *nout, int *uniq)
{
	static const char *const root[3] = { "subtract", "add", "add" };
	for (int c = 0; c < 3; c++) {
		int64_t ops[4] = { st->p[0][i], st->p[1][i], st->p[2][i], g };
		hb_meta md = mk_meta(c ? "add" : "sub", f("jit(%s)/%s", fn,
			c == 0 ? "sub" : c == 1 ? "mul" : "integer_pow"), "optax/_src/transform.py", "update_fn", 121 + c);
		int64_t id = mk_afusion(m, f("loop_%s_fusion.%d", root[c], (*uniq)++), root[c], st->a[i], ops, 4, &md);
		outs[(*nout)++] = id;
	}
}

/* ------------------------------------------------------------------ */
/* attention-too-big                                                   */

static void attention_too_big(mk_scn *s, int host, int scale)
{
	(void)host;
	mk_scn_init(s, "gpu-node-0", 1, MK_POOL_MEMORY, MK_POOL_CAPACITY);
	s->scale = scale;
	hb_module *m = hb_new("jit_step", 2811);
	state3 st = { 0 };
	const char *wn[40];
	static const char *const lw[6] = { "wq", "wk", "wv", "wo", "w1", "w2" };
	int argn = 0, uniq = 100, b;
	const int L = 5;

	for (int l = 0; l < L; l++)
		for (int k = 0; k < 6; k++) {
			wn[st.nw] = f("['block_%d']['%s']", l, lw[k]);
			st.a[st.nw++] = k < 4 ? hb_a(ET_F32, 2, 512, 512) : k == 4 ? hb_a(ET_F32, 2, 512, 2048)
										  : hb_a(ET_F32, 2, 2048, 512);
		}
	wn[st.nw] = "['embed']";
	st.a[st.nw++] = hb_a(ET_F32, 2, 22528, 512);
	char wnames[40][64];
	for (int i = 0; i < st.nw; i++) {
		snprintf(wnames[i], sizeof wnames[i], "%s", wn[i]);
		wn[i] = wnames[i];
	}
	add_state(m, &st, wn, &argn);
	hb_meta md = mk_meta(NULL, "batch['tokens']", NULL, NULL, 0);
	int64_t tokens = mk_param(m, f("Arg_%d.%d", argn, argn + 1), hb_a(ET_S32, 2, 8, 1024), &md);
	argn++;
	md = mk_meta(NULL, "batch['targets']", NULL, NULL, 0);
	int64_t targets = mk_param(m, f("Arg_%d.%d", argn, argn + 1), hb_a(ET_S32, 2, 8, 1024), &md);
	argn++;
	const int E = st.nw - 1;
	hb_arr act512 = hb_a(ET_F32, 3, 8, 1024, 512), act2048 = hb_a(ET_F32, 3, 8, 1024, 2048);
	const int64_t WS = 64 * MiB; /* hipBLASLt workspace on gfx950 */

	/* forward: kept activations per block: ln, q, k, v, probs, attn_out, pre, act */
	int64_t ops[8];
	ops[0] = st.p[0][E];
	ops[1] = tokens;
	md = mk_meta("take", "jit(step)/jvp(model)/embed/take", MODEL, "Embed.__call__", 31);
	int64_t x = mk_tfusion(m, "loop_gather_fusion", "kLoop", "gather", act512, ops, 2, &md, &b);
	int64_t x0 = x;
	int64_t ln[5], q[5], k[5], v[5], probs[5], ao[5], pre[5], act[5];
	for (int l = 0; l < L; l++) {
		const int64_t *w = &st.p[0][6 * l];
		md = mk_meta("reduce_sum", f("jit(step)/jvp(model)/block_%d/ln/reduce_sum", l), MODEL, "Block.__call__", 44);
		ln[l] = mk_tfusion(m, f("input_reduce_fusion.%d", uniq++), "kInput", "reduce", act512, &x, 1, &md, NULL);
		md = mk_meta("dot_general", f("jit(step)/jvp(model)/block_%d/attn/q/dot_general", l), MODEL, "Attention.__call__", 48);
		q[l] = mk_gemm(m, f("custom-call.%d", uniq++), act512, WS, ln[l], w[0], &md, NULL);
		md.op_name = f("jit(step)/jvp(model)/block_%d/attn/k/dot_general", l);
		md.line = 49;
		k[l] = mk_gemm(m, f("custom-call.%d", uniq++), act512, WS, ln[l], w[1], &md, NULL);
		md.op_name = f("jit(step)/jvp(model)/block_%d/attn/v/dot_general", l);
		md.line = 50;
		v[l] = mk_gemm(m, f("custom-call.%d", uniq++), act512, WS, ln[l], w[2], &md, NULL);
		ops[0] = q[l];
		ops[1] = k[l];
		md = mk_meta("exp", f("jit(step)/jvp(model)/block_%d/attn/softmax", l), MODEL, "Attention.__call__", 57);
		probs[l] = mk_tfusion(m, f("loop_exponential_fusion.%d", uniq++), "kLoop", "exponential",
			hb_a(ET_F32, 4, 8, 8, 1024, 1024), ops, 2, &md, NULL);
		md = mk_meta("dot_general", f("jit(step)/jvp(model)/block_%d/attn/dot_general", l), MODEL, "Attention.__call__", 58);
		ao[l] = mk_gemm(m, f("custom-call.%d", uniq++), act512, WS, probs[l], v[l], &md, NULL);
		md = mk_meta("dot_general", f("jit(step)/jvp(model)/block_%d/attn/out/dot_general", l), MODEL, "Attention.__call__", 60);
		int64_t o = mk_gemm(m, f("custom-call.%d", uniq++), act512, WS, ao[l], w[3], &md, NULL);
		md = mk_meta("dot_general", f("jit(step)/jvp(model)/block_%d/mlp/up/dot_general", l), MODEL, "Mlp.__call__", 66);
		pre[l] = mk_gemm(m, f("custom-call.%d", uniq++), act2048, WS, ln[l], w[4], &md, NULL);
		md = mk_meta("tanh", f("jit(step)/jvp(model)/block_%d/mlp/gelu/tanh", l), MODEL, "Mlp.__call__", 67);
		act[l] = mk_tfusion(m, f("loop_tanh_fusion.%d", uniq++), "kLoop", "tanh", act2048, &pre[l], 1, &md, NULL);
		md = mk_meta("dot_general", f("jit(step)/jvp(model)/block_%d/mlp/down/dot_general", l), MODEL, "Mlp.__call__", 68);
		int64_t mo = mk_gemm(m, f("custom-call.%d", uniq++), act512, WS, act[l], w[5], &md, NULL);
		ops[0] = x;
		ops[1] = o;
		ops[2] = mo;
		md = mk_meta("add", f("jit(step)/jvp(model)/block_%d/add", l), MODEL, "Block.__call__", 70);
		x = mk_tfusion(m, f("loop_add_fusion.%d", uniq++), "kLoop", "add", act512, ops, 3, &md, NULL);
	}
	md = mk_meta("reduce_sum", "jit(step)/jvp(model)/ln_f/reduce_sum", MODEL, "Model.__call__", 75);
	int64_t lnf = mk_tfusion(m, f("input_reduce_fusion.%d", uniq++), "kInput", "reduce", act512, &x, 1, &md, NULL);
	/* an XLA-made layout copy without a name stack: role "other" */
	int64_t cp = hb_op(m, "copy.5", "copy", hb_a(ET_BF16, 3, 8, 1024, 1536), &tokens, 1, NULL);
	int cpb = hb_buffer(m, cp, -1, HB_TEMP);
	md = mk_meta("dot_general", "jit(step)/jvp(model)/lm_head/dot_general", MODEL, "Model.__call__", 78);
	int64_t logits = mk_gemm(m, f("custom-call.%d", uniq++), hb_a(ET_F32, 3, 8, 1024, 22528), WS, lnf,
		st.p[0][E], &md, NULL);
	ops[0] = logits;
	ops[1] = targets;
	md = mk_meta("reduce_sum", "jit(step)/jvp(model)/loss/reduce_sum", TRAIN, "loss_fn", 24);
	int64_t loss = hb_fusion(m, f("input_reduce_fusion.%d", uniq++), "kInput", "reduce", NULL,
		hb_a(ET_F32, 0), ops, 2, &md);
	hb_alloc_output(m, hb_buffer(m, loss, -1, HB_OUTPUT));

	/* backward; the peak is at dlogits (forward kept + copy.5 + dlogits) */
	md = mk_meta("sub", "jit(step)/transpose(jvp(model))/loss/sub", TRAIN, "loss_fn", 24);
	int64_t dlogits = mk_tfusion(m, f("loop_subtract_fusion.%d", uniq++), "kLoop", "subtract",
		hb_a(ET_BF16, 3, 8, 1024, 22528), ops, 2, &md, NULL);
	int64_t grads[40];
	md = mk_meta("dot_general", "jit(step)/transpose(jvp(model))/lm_head/dot_general", MODEL, "Model.__call__", 78);
	int64_t dx = mk_gemm(m, f("custom-call.%d", uniq++), act512, WS, dlogits, st.p[0][E], &md, NULL);
	int64_t demb = mk_gemm(m, f("custom-call.%d", uniq++), st.a[E], WS, dlogits, lnf, &md, NULL);
	hb_live_until(m, cpb, dx);
	(void)cp;
	int remat = 0;
	for (int l = L - 1; l >= 0; l--) {
		const int64_t *w = &st.p[0][6 * l];
		/* XLA's rematerialization recomputed these during the backward pass */
		int64_t r = act[l];
		int nr = l == 0 ? 17 : 18;
		for (int i = 0; i < nr; i++, remat++) {
			md = mk_meta("tanh", f("jit(step)/jvp(model)/block_%d/mlp/gelu/tanh", l), MODEL, "Mlp.__call__", 67);
			r = mk_tfusion(m, f("fusion.%d.remat%s", 300 + remat, i % 5 == 4 ? "2" : ""), "kLoop", "tanh",
				hb_a(ET_F32, 3, 8, 8, 1024), &r, 1, &md, NULL);
		}
		md = mk_meta("dot_general", f("jit(step)/transpose(jvp(model))/block_%d/mlp/down/dot_general", l), MODEL, "Mlp.__call__", 68);
		int64_t dact = mk_gemm(m, f("custom-call.%d", uniq++), act2048, WS, dx, w[5], &md, &b);
		grads[6 * l + 5] = mk_gemm(m, f("custom-call.%d", uniq++), st.a[6 * l + 5], WS, act[l], dx, &md, NULL);
		ops[0] = dact;
		ops[1] = pre[l];
		ops[2] = r;
		md = mk_meta("mul", f("jit(step)/transpose(jvp(model))/block_%d/mlp/gelu/mul", l), MODEL, "Mlp.__call__", 67);
		int db;
		int64_t dpre = mk_tfusion(m, f("loop_multiply_fusion.%d", uniq++), "kLoop", "multiply", act2048, ops, 3, &md, &db);
		hb_share(m, db, b);
		md = mk_meta("dot_general", f("jit(step)/transpose(jvp(model))/block_%d/mlp/up/dot_general", l), MODEL, "Mlp.__call__", 66);
		grads[6 * l + 4] = mk_gemm(m, f("custom-call.%d", uniq++), st.a[6 * l + 4], WS, ln[l], dpre, &md, NULL);
		int64_t dln = mk_gemm(m, f("custom-call.%d", uniq++), act512, WS, dpre, w[4], &md, NULL);
		md = mk_meta("dot_general", f("jit(step)/transpose(jvp(model))/block_%d/attn/out/dot_general", l), MODEL, "Attention.__call__", 60);
		grads[6 * l + 3] = mk_gemm(m, f("custom-call.%d", uniq++), st.a[6 * l + 3], WS, ao[l], dx, &md, NULL);
		int64_t dao = mk_gemm(m, f("custom-call.%d", uniq++), act512, WS, dx, w[3], &md, NULL);
		md = mk_meta("dot_general", f("jit(step)/transpose(jvp(model))/block_%d/attn/dot_general", l), MODEL, "Attention.__call__", 58);
		int64_t dprobs = mk_gemm(m, f("custom-call.%d", uniq++), hb_a(ET_F32, 4, 8, 8, 1024, 1024), WS, dao, v[l], &md, &b);
		int64_t dv = mk_gemm(m, f("custom-call.%d", uniq++), act512, WS, probs[l], dao, &md, NULL);
		ops[0] = dprobs;
		ops[1] = probs[l];
		md = mk_meta("mul", f("jit(step)/transpose(jvp(model))/block_%d/attn/softmax/mul", l), MODEL, "Attention.__call__", 57);
		int64_t dsc = mk_tfusion(m, f("loop_multiply_fusion.%d", uniq++), "kLoop", "multiply",
			hb_a(ET_F32, 4, 8, 8, 1024, 1024), ops, 2, &md, &db);
		hb_share(m, db, b);
		md = mk_meta("dot_general", f("jit(step)/transpose(jvp(model))/block_%d/attn/q/dot_general", l), MODEL, "Attention.__call__", 48);
		int64_t dq = mk_gemm(m, f("custom-call.%d", uniq++), act512, WS, dsc, k[l], &md, NULL);
		md.line = 49;
		md.op_name = f("jit(step)/transpose(jvp(model))/block_%d/attn/k/dot_general", l);
		int64_t dk = mk_gemm(m, f("custom-call.%d", uniq++), act512, WS, dsc, q[l], &md, NULL);
		md.line = 48;
		grads[6 * l + 0] = mk_gemm(m, f("custom-call.%d", uniq++), st.a[6 * l], WS, ln[l], dq, &md, NULL);
		grads[6 * l + 1] = mk_gemm(m, f("custom-call.%d", uniq++), st.a[6 * l + 1], WS, ln[l], dk, &md, NULL);
		grads[6 * l + 2] = mk_gemm(m, f("custom-call.%d", uniq++), st.a[6 * l + 2], WS, ln[l], dv, &md, NULL);
		ops[0] = dx;
		ops[1] = dln;
		ops[2] = dq;
		ops[3] = dk;
		ops[4] = dv;
		ops[5] = l == 0 ? x0 : ln[l];
		md = mk_meta("add_any", f("jit(step)/transpose(jvp(model))/block_%d/ln/add_any", l), MODEL, "Block.__call__", 44);
		dx = mk_tfusion(m, f("loop_add_fusion.%d", uniq++), "kLoop", "add", act512, ops, 6, &md, NULL);
	}
	ops[0] = demb;
	ops[1] = dx;
	ops[2] = tokens;
	md = mk_meta("scatter-add", "jit(step)/transpose(jvp(model))/embed/scatter-add", MODEL, "Embed.__call__", 31);
	grads[E] = mk_tfusion(m, f("scatter_fusion.%d", uniq++), "kInput", "scatter", st.a[E], ops, 3, &md, &b);

	int64_t outs[128];
	int nout = 0;
	for (int i = 0; i < st.nw; i++)
		adam(m, &st, i, grads[i], "step", outs, &nout, &uniq);
	/* new state order is p..., m..., v...: reorder the aliases to match */
	int64_t ordered[128];
	for (int c = 0; c < 3; c++)
		for (int i = 0; i < st.nw; i++)
			ordered[c * st.nw + i] = outs[3 * i + c];
	ordered[3 * st.nw] = loss;
	for (int c = 0; c < 3; c++)
		for (int i = 0; i < st.nw; i++)
			hb_io_alias(m, c * st.nw + i, c * st.nw + i);
	mk_root(m, ordered, 3 * st.nw + 1);

	int mod = mk_add_module(s, m, "step", 3495 * MiB);

	/* runtime: the state and the batch are put on the device, then the
	 * step runs out of memory on its temp block */
	const char *pshape[3] = { "p", "m", "v" };
	(void)pshape;
	char shp[96];
	for (int c = 0; c < 3; c++)
		for (int i = 0; i < st.nw; i++) {
			hb_arr_str(&st.a[i], shp, sizeof shp);
			mk_put(s, 0, hb_arr_bytes(&st.a[i]), shp);
		}
	mk_put(s, 0, 8 * 1024 * 4, "s32[8,1024]");
	mk_put(s, 0, 8 * 1024 * 4, "s32[8,1024]");
	for (int i = 0; i < 3 * scale; i++)
		mk_py(s, "$train.py:88 train_loop", 30 * 1000);
	mk_gap(s, 200 * 1000);
	mk_exec(s, mod, 2, 10000000000ll);
	mk_py(s, "$profiler.py:213 stop_trace", 50 * 1000);
}

/* ------------------------------------------------------------------ */
/* grads-kept                                                          */

static void grads_kept(mk_scn *s, int host, int scale, int foreign)
{
	(void)host;
	mk_scn_init(s, "gpu-node-0", 1, MK_POOL_MEMORY, MK_POOL_CAPACITY);
	if (foreign)
		s->pre_bytes[0] = 64 * MiB; /* allocated before the capture started */
	s->scale = scale;
	hb_module *m = hb_new("jit_step", 3054);
	state3 st = { 0 };
	const char *wn[3] = { "['dense_0']['kernel']", "['dense_1']['kernel']", "['dense_2']['kernel']" };
	int argn = 0, uniq = 10, b;
	st.nw = 3;
	st.a[0] = hb_a(ET_F32, 2, 1024, 16384);
	st.a[1] = hb_a(ET_F32, 2, 16384, 512);
	st.a[2] = hb_a(ET_F32, 2, 512, 4096);
	add_state(m, &st, wn, &argn);
	hb_meta md = mk_meta(NULL, "batch['x']", NULL, NULL, 0);
	int64_t xb = mk_param(m, f("Arg_%d.%d", argn, argn + 1), hb_a(ET_BF16, 2, 2048, 1024), &md);
	int64_t ops[8];
	hb_arr h1a = hb_a(ET_F32, 2, 2048, 16384), h2a = hb_a(ET_F32, 2, 2048, 512),
	       lga = hb_a(ET_F32, 2, 2048, 4096);

	/* input normalisation in f32 (not a bare convert of the parameter) */
	md = mk_meta("div", "jit(step)/jvp(mlp)/normalize/div", MODEL, "Mlp.__call__", 20);
	int64_t x32 = mk_tfusion(m, "loop_divide_fusion", "kLoop", "divide", hb_a(ET_F32, 2, 2048, 1024), &xb, 1, &md, NULL);
	md = mk_meta("dot_general", "jit(step)/jvp(mlp)/dense_0/dot_general", MODEL, "Mlp.__call__", 22);
	ops[0] = x32;
	ops[1] = st.p[0][0];
	int64_t h1 = mk_tfusion(m, "gemm_fusion_dot_general.1", "kCustom", "dot", h1a, ops, 2, &md, NULL);
	md = mk_meta("tanh", "jit(step)/jvp(mlp)/gelu/tanh", MODEL, "Mlp.__call__", 23);
	int64_t a1 = mk_tfusion(m, "loop_tanh_fusion", "kLoop", "tanh", h1a, &h1, 1, &md, NULL);
	md = mk_meta("dot_general", "jit(step)/jvp(mlp)/dense_1/dot_general", MODEL, "Mlp.__call__", 24);
	ops[0] = a1;
	ops[1] = st.p[0][1];
	int64_t h2 = mk_tfusion(m, "gemm_fusion_dot_general.2", "kCustom", "dot", h2a, ops, 2, &md, NULL);
	md = mk_meta("tanh", "jit(step)/jvp(mlp)/gelu/tanh", MODEL, "Mlp.__call__", 25);
	int64_t a2 = mk_tfusion(m, "loop_tanh_fusion.1", "kLoop", "tanh", h2a, &h2, 1, &md, NULL);
	md = mk_meta("dot_general", "jit(step)/jvp(mlp)/dense_2/dot_general", MODEL, "Mlp.__call__", 26);
	ops[0] = a2;
	ops[1] = st.p[0][2];
	int64_t lg = mk_tfusion(m, "gemm_fusion_dot_general.3", "kCustom", "dot", lga, ops, 2, &md, NULL);
	md = mk_meta("log_softmax", "jit(step)/jvp(mlp)/log_softmax", TRAIN, "loss_fn", 31);
	int64_t lp = mk_tfusion(m, "loop_reduce_fusion", "kLoop", "reduce", lga, &lg, 1, &md, NULL);
	md = mk_meta("reduce_sum", "jit(step)/jvp(mlp)/reduce_sum", TRAIN, "loss_fn", 32);
	int64_t loss = hb_fusion(m, "input_reduce_fusion", "kInput", "reduce", NULL, hb_a(ET_F32, 0), &lp, 1, &md);
	hb_alloc_output(m, hb_buffer(m, loss, -1, HB_OUTPUT));
	/* backward: the peak is dlogits (everything forward + dlogits = 368 MiB) */
	ops[0] = lg;
	ops[1] = lp;
	md = mk_meta("sub", "jit(step)/transpose(jvp(mlp))/log_softmax/sub", TRAIN, "loss_fn", 31);
	int64_t dlg = mk_tfusion(m, "loop_subtract_fusion", "kLoop", "subtract", lga, ops, 2, &md, NULL);
	md = mk_meta("dot_general", "jit(step)/transpose(jvp(mlp))/dense_2/dot_general", MODEL, "Mlp.__call__", 26);
	ops[0] = a2;
	ops[1] = dlg;
	int64_t g2 = mk_tfusion(m, "gemm_fusion_dot_general.4", "kCustom", "dot", st.a[2], ops, 2, &md, NULL);
	ops[0] = dlg;
	ops[1] = st.p[0][2];
	int64_t da2 = mk_tfusion(m, "gemm_fusion_dot_general.5", "kCustom", "dot", h2a, ops, 2, &md, &b);
	ops[0] = da2;
	ops[1] = h2;
	md = mk_meta("mul", "jit(step)/transpose(jvp(mlp))/gelu/mul", MODEL, "Mlp.__call__", 25);
	int db;
	int64_t dh2 = mk_tfusion(m, "loop_multiply_fusion", "kLoop", "multiply", h2a, ops, 2, &md, &db);
	hb_share(m, db, b);
	md = mk_meta("dot_general", "jit(step)/transpose(jvp(mlp))/dense_1/dot_general", MODEL, "Mlp.__call__", 24);
	ops[0] = a1;
	ops[1] = dh2;
	int64_t g1 = mk_tfusion(m, "gemm_fusion_dot_general.6", "kCustom", "dot", st.a[1], ops, 2, &md, NULL);
	ops[0] = dh2;
	ops[1] = st.p[0][1];
	int64_t da1 = mk_tfusion(m, "gemm_fusion_dot_general.7", "kCustom", "dot", h1a, ops, 2, &md, &b);
	ops[0] = da1;
	ops[1] = h1;
	md = mk_meta("mul", "jit(step)/transpose(jvp(mlp))/gelu/mul", MODEL, "Mlp.__call__", 23);
	int64_t dh1 = mk_tfusion(m, "loop_multiply_fusion.1", "kLoop", "multiply", h1a, ops, 2, &md, &db);
	hb_share(m, db, b);
	md = mk_meta("dot_general", "jit(step)/transpose(jvp(mlp))/dense_0/dot_general", MODEL, "Mlp.__call__", 22);
	ops[0] = x32;
	ops[1] = dh1;
	int64_t g0 = mk_tfusion(m, "gemm_fusion_dot_general.8", "kCustom", "dot", st.a[0], ops, 2, &md, NULL);

	/* outputs: new state (donated), the gradients (returned), the loss */
	int64_t gr[3] = { g0, g1, g2 }, outs[16], grads_out[3];
	int nout = 0;
	for (int i = 0; i < 3; i++)
		adam(m, &st, i, gr[i], "step", outs, &nout, &uniq);
	for (int i = 0; i < 3; i++) {
		md = mk_meta("copy", "jit(step)/copy", TRAIN, "step", 40);
		grads_out[i] = mk_ofusion(m, f("loop_copy_fusion.%d", i), "copy", st.a[i], &gr[i], 1, &md);
	}
	int64_t ordered[16];
	int n = 0;
	for (int c = 0; c < 3; c++)
		for (int i = 0; i < 3; i++)
			ordered[n++] = outs[3 * i + c];
	for (int i = 0; i < 3; i++)
		ordered[n++] = grads_out[i];
	ordered[n++] = loss;
	for (int i = 0; i < 9; i++)
		hb_io_alias(m, i, i);
	mk_root(m, ordered, n);
	int mod = mk_add_module(s, m, "step", 368 * MiB);

	/* runtime: state, then per step a new batch, the step, and the
	 * gradients appended to a Python list (never freed) */
	char shp[96];
	for (int c = 0; c < 3; c++)
		for (int i = 0; i < 3; i++) {
			hb_arr_str(&st.a[i], shp, sizeof shp);
			mk_put(s, 0, hb_arr_bytes(&st.a[i]), shp);
		}
	int batch = mk_put(s, 0, 4 * MiB, "bf16[2048,1024]");
	if (foreign) {
		/* two good steps (results dropped), then a dataset put on the
		 * device takes the room and the third step runs out of memory */
		for (int k = 0; k < 2; k++) {
			mk_gap(s, 100 * 1000);
			int r = mk_exec(s, mod, -1, 0);
			for (int i = 0; i < 4; i++)
				mk_free(s, r + i);
			for (int i = 0; i < scale; i++)
				mk_py(s, "$train.py:88 train_loop", 20 * 1000);
		}
		mk_put(s, 0, 2048 * MiB, "f32[524288,1024]");
		mk_py(s, "$data.py:17 load_eval_set", 40 * 1000);
		mk_gap(s, 100 * 1000);
		/* runtime allocations: loss, 3 gradients, tuple, temp: the temp fails */
		mk_exec(s, mod, 5, 3000000000ll);
		mk_py(s, "$profiler.py:213 stop_trace", 50 * 1000);
		(void)batch;
		return;
	}
	for (int k = 0; k < 10; k++) {
		mk_gap(s, 100 * 1000);
		int r = mk_exec(s, mod, -1, 0);
		/* results: loss 0 (freed once printed), grads 1..3 (kept) */
		mk_py(s, "$builtins float", 20 * 1000);
		mk_free(s, r);
		for (int i = 0; i < scale; i++)
			mk_py(s, "$<unknown> append", 8 * 1000);
		mk_py(s, "$train.py:61 next_batch", 40 * 1000);
		if (k < 9) {
			int nb = mk_put(s, 0, 4 * MiB, "bf16[2048,1024]");
			mk_free(s, batch);
			batch = nb;
		}
	}
	mk_py(s, "$profiler.py:213 stop_trace", 50 * 1000);
}

/* ------------------------------------------------------------------ */
/* no-donation                                                         */

static void no_donation(mk_scn *s, int host, int scale)
{
	(void)host;
	mk_scn_init(s, "gpu-node-0", 1, MK_POOL_MEMORY, MK_POOL_CAPACITY);
	s->scale = scale;
	/* An off-policy RL step: (params, opt_state, replay) -> new ones, with
	 * the replay buffer updated by dynamic-update-slice.  Nothing is
	 * donated, so every output needs memory of its own. */
	hb_module *m = hb_new("jit_train_step", 1187);
	state3 st = { 0 };
	const char *wn[3] = { "['dense_0']", "['dense_1']", "['head']" };
	int argn = 0, uniq = 10;
	st.nw = 3;
	st.a[0] = hb_a(ET_F32, 2, 384, 4096);
	st.a[1] = hb_a(ET_F32, 2, 4096, 1024);
	st.a[2] = hb_a(ET_F32, 2, 1024, 256);
	add_state(m, &st, wn, &argn);
	static const char *const rn[5] = { "obs", "actions", "rewards", "discounts", "dones" };
	hb_arr ra[5] = { hb_a(ET_F32, 2, 1048576, 384), hb_a(ET_F32, 2, 1048576, 72), hb_a(ET_F32, 1, 1048576),
			 hb_a(ET_F32, 1, 1048576), hb_a(ET_U8, 1, 1048576) };
	/* the new transitions: obs, actions, and (reward, discount, done, pad) */
	static const char *const tn[3] = { "obs", "actions", "scalars" };
	hb_arr na[3] = { hb_a(ET_F32, 2, 16, 384), hb_a(ET_F32, 2, 16, 72), hb_a(ET_F32, 2, 16, 4) };
	int64_t rp[5], np[3];
	hb_meta md;
	for (int i = 0; i < 5; i++) {
		md = mk_meta(NULL, f("replay.%s", rn[i]), NULL, NULL, 0);
		rp[i] = mk_param(m, f("Arg_%d.%d", argn, argn + 1), ra[i], &md);
		argn++;
	}
	for (int i = 0; i < 3; i++) {
		md = mk_meta(NULL, f("transition.%s", tn[i]), NULL, NULL, 0);
		np[i] = mk_param(m, f("Arg_%d.%d", argn, argn + 1), na[i], &md);
		argn++;
	}
	md = mk_meta(NULL, "indices", NULL, NULL, 0);
	int64_t idx = mk_param(m, f("Arg_%d.%d", argn, argn + 1), hb_a(ET_S32, 1, 4096), &md);
	hb_arr h1a = hb_a(ET_F32, 2, 4096, 4096), h2a = hb_a(ET_F32, 2, 4096, 1024), qa = hb_a(ET_F32, 2, 4096, 256);
	int64_t ops[8];
	int b, db;

	ops[0] = rp[0];
	ops[1] = idx;
	md = mk_meta("gather", "jit(train_step)/replay/sample/gather", "agent.py", "sample", 41);
	int64_t ob = mk_tfusion(m, "loop_gather_fusion", "kLoop", "gather", hb_a(ET_F32, 2, 4096, 384), ops, 2, &md, NULL);
	ops[0] = rp[2];
	md = mk_meta("gather", "jit(train_step)/replay/sample/gather", "agent.py", "sample", 42);
	int64_t rb = mk_tfusion(m, "loop_gather_fusion.1", "kLoop", "gather", hb_a(ET_F32, 1, 4096), ops, 2, &md, NULL);
	md = mk_meta("dot_general", "jit(train_step)/jvp(q_net)/dense_0/dot_general", "agent.py", "QNet.__call__", 18);
	ops[0] = ob;
	ops[1] = st.p[0][0];
	int64_t h1 = mk_tfusion(m, "gemm_fusion_dot_general", "kCustom", "dot", h1a, ops, 2, &md, NULL);
	md = mk_meta("max", "jit(train_step)/jvp(q_net)/relu/max", "agent.py", "QNet.__call__", 19);
	int64_t a1 = mk_tfusion(m, "loop_maximum_fusion", "kLoop", "maximum", h1a, &h1, 1, &md, NULL);
	md = mk_meta("dot_general", "jit(train_step)/jvp(q_net)/dense_1/dot_general", "agent.py", "QNet.__call__", 20);
	ops[0] = a1;
	ops[1] = st.p[0][1];
	int64_t h2 = mk_tfusion(m, "gemm_fusion_dot_general.1", "kCustom", "dot", h2a, ops, 2, &md, NULL);
	md = mk_meta("max", "jit(train_step)/jvp(q_net)/relu/max", "agent.py", "QNet.__call__", 21);
	int64_t a2 = mk_tfusion(m, "loop_maximum_fusion.1", "kLoop", "maximum", h2a, &h2, 1, &md, NULL);
	md = mk_meta("dot_general", "jit(train_step)/jvp(q_net)/head/dot_general", "agent.py", "QNet.__call__", 22);
	ops[0] = a2;
	ops[1] = st.p[0][2];
	int64_t q = mk_tfusion(m, "gemm_fusion_dot_general.2", "kCustom", "dot", qa, ops, 2, &md, NULL);
	ops[0] = q;
	ops[1] = rb;
	md = mk_meta("reduce_sum", "jit(train_step)/jvp(q_net)/td/reduce_sum", "agent.py", "loss_fn", 55);
	int64_t loss = hb_fusion(m, "input_reduce_fusion", "kInput", "reduce", NULL, hb_a(ET_F32, 0), ops, 2, &md);
	hb_buffer(m, loss, -1, HB_OUTPUT);
	md = mk_meta("sub", "jit(train_step)/transpose(jvp(q_net))/td/sub", "agent.py", "loss_fn", 55);
	int64_t dq = mk_tfusion(m, "loop_subtract_fusion", "kLoop", "subtract", qa, ops, 2, &md, NULL);
	md = mk_meta("dot_general", "jit(train_step)/transpose(jvp(q_net))/head/dot_general", "agent.py", "QNet.__call__", 22);
	ops[0] = a2;
	ops[1] = dq;
	int64_t g2 = mk_tfusion(m, "gemm_fusion_dot_general.3", "kCustom", "dot", st.a[2], ops, 2, &md, NULL);
	ops[0] = dq;
	ops[1] = st.p[0][2];
	int64_t da2 = mk_tfusion(m, "gemm_fusion_dot_general.4", "kCustom", "dot", h2a, ops, 2, &md, &b);
	ops[0] = da2;
	ops[1] = a2;
	md = mk_meta("select_n", "jit(train_step)/transpose(jvp(q_net))/relu/select_n", "agent.py", "QNet.__call__", 21);
	int64_t dh2 = mk_tfusion(m, "loop_select_fusion", "kLoop", "select", h2a, ops, 2, &md, &db);
	hb_share(m, db, b);
	md = mk_meta("dot_general", "jit(train_step)/transpose(jvp(q_net))/dense_1/dot_general", "agent.py", "QNet.__call__", 20);
	ops[0] = a1;
	ops[1] = dh2;
	int64_t g1 = mk_tfusion(m, "gemm_fusion_dot_general.5", "kCustom", "dot", st.a[1], ops, 2, &md, NULL);
	ops[0] = dh2;
	ops[1] = st.p[0][1];
	int64_t da1 = mk_tfusion(m, "gemm_fusion_dot_general.6", "kCustom", "dot", h1a, ops, 2, &md, &b);
	ops[0] = da1;
	ops[1] = a1;
	md = mk_meta("select_n", "jit(train_step)/transpose(jvp(q_net))/relu/select_n", "agent.py", "QNet.__call__", 19);
	int64_t dh1 = mk_tfusion(m, "loop_select_fusion.1", "kLoop", "select", h1a, ops, 2, &md, &db);
	hb_share(m, db, b);
	md = mk_meta("dot_general", "jit(train_step)/transpose(jvp(q_net))/dense_0/dot_general", "agent.py", "QNet.__call__", 18);
	ops[0] = ob;
	ops[1] = dh1;
	int64_t g0 = mk_tfusion(m, "gemm_fusion_dot_general.7", "kCustom", "dot", st.a[0], ops, 2, &md, NULL);

	int64_t gr[3] = { g0, g1, g2 }, outs[16], ordered[24];
	int nout = 0, n = 0;
	for (int i = 0; i < 3; i++)
		adam(m, &st, i, gr[i], "train_step", outs, &nout, &uniq);
	for (int c = 0; c < 3; c++)
		for (int i = 0; i < 3; i++)
			ordered[n++] = outs[3 * i + c];
	for (int i = 0; i < 5; i++) {
		ops[0] = rp[i];
		ops[1] = np[i < 2 ? i : 2];
		ops[2] = idx;
		md = mk_meta("dynamic_update_slice", "jit(train_step)/replay/add/dynamic_update_slice",
			"agent.py", "ReplayBuffer.add", 77);
		ordered[n++] = mk_afusion(m, f("loop_dynamic_update_slice_fusion.%d", i), "dynamic-update-slice",
			ra[i], ops, 3, &md);
	}
	ordered[n++] = loss;
	/* no donation: every output gets an allocation of its own, in order */
	for (int i = 0; i < n; i++)
		hb_alloc_output(m, hb_buffer_of(m, ordered[i]));
	mk_root(m, ordered, n);
	int mod = mk_add_module(s, m, "train_step", 172 * MiB);

	char shp[96];
	for (int c = 0; c < 3; c++)
		for (int i = 0; i < 3; i++) {
			hb_arr_str(&st.a[i], shp, sizeof shp);
			mk_put(s, 0, hb_arr_bytes(&st.a[i]), shp);
		}
	for (int i = 0; i < 5; i++) {
		hb_arr_str(&ra[i], shp, sizeof shp);
		mk_put(s, 0, hb_arr_bytes(&ra[i]), shp);
	}
	for (int i = 0; i < 3; i++) {
		hb_arr_str(&na[i], shp, sizeof shp);
		mk_put(s, 0, hb_arr_bytes(&na[i]), shp);
	}
	mk_put(s, 0, 4096 * 4, "s32[4096]");
	for (int i = 0; i < 3 * scale; i++)
		mk_py(s, "$agent.py:120 train_loop", 30 * 1000);
	mk_gap(s, 200 * 1000);
	/* outputs in order: the new p, m, v (9 arrays) fit; the replay
	 * buffer's new obs (1,536 MiB) does not */
	mk_exec(s, mod, 9, 2000000000ll);
	mk_py(s, "$profiler.py:213 stop_trace", 50 * 1000);
}

void mk_build_attention_too_big(mk_scn *s, int host, int scale) { attention_too_big(s, host, scale); }
void mk_build_grads_kept(mk_scn *s, int host, int scale) { grads_kept(s, host, scale, 0); }
void mk_build_foreign_arrays(mk_scn *s, int host, int scale) { grads_kept(s, host, scale, 1); }
void mk_build_no_donation(mk_scn *s, int host, int scale) { no_donation(s, host, scale); }
