/* Plan-shaped scenarios: scan-fits (MaxText-like llama2-7b, 8 GPUs, FSDP,
 * fits), temp-fragmentation (a temp block twice its simulated peak),
 * layout-copy (transposed copies of entry parameters hoisted out of a loop)
 * and convert-copy (f32 parameters converted to bf16 up front).  The
 * figures each one carries, with the arithmetic, are in
 * tests/scenarios/<name>.json. */
#include "scenarios.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define H100_MEMORY 85899345920ull /* 80 GiB */

static char nm[32][160];
static int nmi;
static const char *f(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *f(const char *fmt, ...)
{
	va_list ap;
	char *b = nm[nmi++ & 31];
	va_start(ap, fmt);
	vsnprintf(b, sizeof nm[0], fmt, ap);
	va_end(ap);
	return b;
}

static void mk_h100(mk_scn *s, const char *host, int ndev, int64_t capacity, int scale)
{
	mk_scn_init(s, host, ndev, H100_MEMORY, capacity);
	s->device_name = "NVIDIA H100 80GB HBM3";
	s->vendor = "Nvidia";
	s->scale = scale;
}

/* Adam state (p, m, v) of nw weights as entry parameters. */
typedef struct adam_state {
	int nw;
	const char *name[16];
	hb_arr a[16];
	int64_t p[3][16];
} adam_state;

static void adam_params(hb_module *m, adam_state *st, int *argn)
{
	static const char *const which[3] = { "params", "opt_state.mu", "opt_state.nu" };
	for (int c = 0; c < 3; c++)
		for (int i = 0; i < st->nw; i++) {
			hb_meta md = mk_meta(NULL, f("state.%s%s", which[c], st->name[i]), NULL, NULL, 0);
			st->p[c][i] = mk_param(m, f("Arg_%d.%d", *argn, *argn + 1), st->a[i], &md);
			(*argn)++;
		}
}

/* The Adam update of every weight from its gradient g[i]; new p, m, v are
 * aliased with (donated into) the old ones.  Appends the outputs in root
 * order (p..., m..., v...) to outs and the aliases. */
static int adam_update(hb_module *m, const adam_state *st, const int64_t *g, const char *fn,
	int64_t *outs, int *uniq, int param0)
{
	static const char *const root[3] = { "subtract", "add", "add" };
	int64_t o[3][16];
	for (int i = 0; i < st->nw; i++)
		for (int c = 0; c < 3; c++) {
			int64_t ops[4] = { st->p[0][i], st->p[1][i], st->p[2][i], g[i] };
			hb_meta md = mk_meta(c ? "add" : "sub", f("jit(%s)/%s", fn,
				c == 0 ? "sub" : c == 1 ? "mul" : "integer_pow"), "optax/_src/transform.py",
				"update_fn", 121 + c);
			o[c][i] = mk_afusion(m, f("loop_%s_fusion.%d", root[c], (*uniq)++), root[c], st->a[i], ops, 4, &md);
		}
	int n = 0;
	for (int c = 0; c < 3; c++)
		for (int i = 0; i < st->nw; i++) {
			hb_io_alias(m, n, param0 + n);
			outs[n++] = o[c][i];
		}
	return n;
}

static void put_state(mk_scn *s, const adam_state *st)
{
	char shp[96];
	for (int c = 0; c < 3; c++)
		for (int i = 0; i < st->nw; i++) {
			hb_arr_str(&st->a[i], shp, sizeof shp);
			mk_put(s, -1, hb_arr_bytes(&st->a[i]), shp);
		}
}

/* ------------------------------------------------------------------ */
/* scan-fits: MaxText llama2-7b, 8 x H100 with FSDP, per-device batch 4 x
 * 4096; the scan over the 32 layers (while.50) keeps stacked activations
 * for the backward scan (while.51).  The pool is 95% of the device memory
 * (XLA_PYTHON_CLIENT_MEM_FRACTION=.95): the step fits with 4.7 GiB left. */

#define MT "MaxText/layers/llama2.py"
#define MTD "MaxText/layers/decoders.py"
#define MTR "MaxText/train.py"

static void scan_fits(mk_scn *s, int host, int scale)
{
	(void)host;
	mk_h100(s, "gpu-node-0", 8, 81604378624ll, scale);
	hb_module *m = hb_new("jit_train_step", 7719);
	adam_state st = { 0 };
	int argn = 0, uniq = 200, b;
	/* per-device FSDP shards (embed axis / 8) of the stacked weights */
	static const char *const wn[9] = {
		"['params']['decoder']['layers']['mlp']['wi_0']['kernel']",
		"['params']['decoder']['layers']['mlp']['wi_1']['kernel']",
		"['params']['decoder']['layers']['mlp']['wo']['kernel']",
		"['params']['decoder']['layers']['self_attention']['query']['kernel']",
		"['params']['decoder']['layers']['self_attention']['key']['kernel']",
		"['params']['decoder']['layers']['self_attention']['value']['kernel']",
		"['params']['decoder']['layers']['self_attention']['out']['kernel']",
		"['params']['token_embedder']['embedding']",
		"['params']['decoder']['logits_dense']['kernel']",
	};
	st.nw = 9;
	for (int i = 0; i < 9; i++)
		st.name[i] = wn[i];
	st.a[0] = st.a[1] = hb_a(ET_F32, 3, 512, 32, 11008);
	st.a[2] = hb_a(ET_F32, 3, 1376, 32, 4096);
	st.a[3] = st.a[4] = st.a[5] = st.a[6] = hb_a(ET_F32, 3, 512, 32, 4096);
	st.a[7] = hb_a(ET_F32, 2, 4000, 4096);
	st.a[8] = hb_a(ET_F32, 2, 512, 32000);
	adam_params(m, &st, &argn);
	hb_meta md = mk_meta(NULL, "batch['inputs']", NULL, NULL, 0);
	int64_t inputs = mk_param(m, f("Arg_%d.%d", argn, argn + 1), hb_a(ET_S32, 2, 4, 4096), &md);
	argn++;
	md = mk_meta(NULL, "batch['targets']", NULL, NULL, 0);
	int64_t targets = mk_param(m, f("Arg_%d.%d", argn, argn + 1), hb_a(ET_S32, 2, 4, 4096), &md);
	argn++;

	int64_t ops[8];
	hb_arr x_a = hb_a(ET_BF16, 3, 4, 4096, 4096);
	hb_arr big = hb_a(ET_BF16, 4, 32, 4, 4096, 11008), mid = hb_a(ET_BF16, 4, 32, 4, 4096, 4096);
	ops[0] = st.p[0][7];
	ops[1] = inputs;
	md = mk_meta("take", "jit(train_step)/jvp(Transformer)/decoder/token_embedder/take", "MaxText/layers/embeddings.py",
		"Embed.__call__", 97);
	int bx;
	int64_t x0 = mk_tfusion(m, "loop_gather_fusion", "kLoop", "gather", x_a, ops, 2, &md, &bx);
	/* the scan's stacked residuals, zero-initialised, then written per layer */
	int64_t init[7];
	int ib[7];
	hb_arr state[7];
	init[0] = x0;
	ib[0] = bx;
	state[0] = x_a;
	for (int k = 0; k < 6; k++) {
		md = mk_meta("broadcast_in_dim", "jit(train_step)/jvp(Transformer)/decoder/layers/broadcast_in_dim",
			MTD, "Decoder.__call__", 563);
		state[k + 1] = k < 2 ? big : mid;
		init[k + 1] = mk_tfusion(m, f("loop_broadcast_fusion.%d", k), "kLoop", "broadcast", state[k + 1], NULL, 0,
			&md, &ib[k + 1]);
	}
	int64_t t50 = hb_tuple(m, "tuple.50", init, 7);
	md = mk_meta("while", "jit(train_step)/jvp(Transformer)/decoder/layers/scan/while", MTD, "Decoder.__call__", 563);
	hb_meta body = mk_meta("dynamic_update_slice",
		"jit(train_step)/jvp(Transformer)/decoder/layers/scan/while/body/checkpoint/llama2_decoder_layer/dynamic_update_slice",
		MT, "LlamaDecoderLayer.__call__", 161);
	int64_t w50 = hb_while(m, "while.50", t50, state, 7, &md, &body);
	int lb50[7];
	for (int k = 0; k < 7; k++) {
		lb50[k] = hb_buffer(m, w50, k, HB_TEMP);
		hb_share(m, lb50[k], ib[k]);
	}
	int64_t carry = hb_gte(m, "get-tuple-element.50", w50, 0);

	md = mk_meta("reduce_sum", "jit(train_step)/jvp(Transformer)/decoder/decoder_norm/reduce_sum", MTD,
		"Decoder.__call__", 601);
	int nb;
	int64_t norm = mk_tfusion(m, "input_reduce_fusion", "kInput", "reduce", hb_a(ET_F32, 3, 4, 4096, 4096), &carry, 1,
		&md, &nb);
	ops[0] = norm;
	ops[1] = st.p[0][8];
	md = mk_meta("dot_general", "jit(train_step)/jvp(Transformer)/decoder/logits_dense/dot_general",
		"MaxText/layers/linears.py", "DenseGeneral.__call__", 136);
	int lgb;
	int64_t logits = mk_tfusion(m, "gemm_fusion_dot_general", "kCustom", "dot", hb_a(ET_BF16, 3, 4, 4096, 32000), ops,
		2, &md, &lgb);
	md = mk_meta("log_softmax", "jit(train_step)/jvp(Transformer)/log_softmax", MTR, "loss_fn", 281);
	int lsb;
	int64_t lsm = mk_tfusion(m, "loop_reduce_fusion", "kLoop", "reduce", hb_a(ET_F32, 3, 4, 4096, 32000), &logits, 1,
		&md, &lsb);
	ops[0] = lsm;
	ops[1] = targets;
	md = mk_meta("reduce_sum", "jit(train_step)/jvp(Transformer)/reduce_sum", MTR, "loss_fn", 284);
	int64_t loss = hb_fusion(m, "input_reduce_fusion.1", "kInput", "reduce", NULL, hb_a(ET_F32, 0), ops, 2, &md);
	hb_alloc_output(m, hb_buffer(m, loss, -1, HB_OUTPUT));

	/* backward */
	md = mk_meta("sub", "jit(train_step)/transpose(jvp(Transformer))/log_softmax/sub", MTR, "loss_fn", 281);
	int64_t dlogits = mk_tfusion(m, "loop_subtract_fusion", "kLoop", "subtract", hb_a(ET_BF16, 3, 4, 4096, 32000),
		ops, 2, &md, NULL);
	ops[0] = dlogits;
	ops[1] = st.p[0][8];
	md = mk_meta("dot_general", "jit(train_step)/transpose(jvp(Transformer))/decoder/logits_dense/dot_general",
		"MaxText/layers/linears.py", "DenseGeneral.__call__", 136);
	int dnb;
	int64_t dnorm = mk_tfusion(m, "gemm_fusion_dot_general.1", "kCustom", "dot", hb_a(ET_F32, 3, 4, 4096, 4096), ops,
		2, &md, &dnb);
	/* the FSDP all-gathers of two stacked weights, hoisted by XLA (no name stack) */
	int64_t ag1 = hb_op(m, "all-gather.12", "all-gather", hb_a(ET_BF16, 3, 32, 4096, 11008), &st.p[0][0], 1, NULL);
	int agb1 = hb_buffer(m, ag1, -1, HB_TEMP);
	int64_t ag2 = hb_op(m, "all-gather.13", "all-gather", hb_a(ET_BF16, 3, 32, 4096, 4096), &st.p[0][3], 1, NULL);
	int agb2 = hb_buffer(m, ag2, -1, HB_TEMP);
	/* gradient accumulators of the backward scan (mlp weights, f32) */
	int64_t t51ops[4];
	int ib51[4];
	hb_arr st51[4];
	t51ops[0] = dnorm;
	ib51[0] = dnb;
	st51[0] = hb_a(ET_F32, 3, 4, 4096, 4096);
	for (int k = 0; k < 3; k++) {
		md = mk_meta("broadcast_in_dim", "jit(train_step)/transpose(jvp(Transformer))/decoder/layers/broadcast_in_dim",
			MTD, "Decoder.__call__", 563);
		st51[k + 1] = hb_a(ET_F32, 3, 32, 4096, 11008);
		t51ops[k + 1] = mk_tfusion(m, f("loop_broadcast_fusion.%d", 6 + k), "kLoop", "broadcast", st51[k + 1], NULL, 0,
			&md, &ib51[k + 1]);
	}
	int64_t t51 = hb_tuple(m, "tuple.51", t51ops, 4);
	md = mk_meta("while", "jit(train_step)/transpose(jvp(Transformer))/decoder/layers/scan/while", MTD,
		"Decoder.__call__", 563);
	body = mk_meta("dynamic_update_slice",
		"jit(train_step)/transpose(jvp(Transformer))/decoder/layers/scan/while/body/checkpoint/llama2_decoder_layer/dynamic_update_slice",
		MT, "LlamaDecoderLayer.__call__", 161);
	int64_t w51 = hb_while(m, "while.51", t51, st51, 4, &md, &body);
	int64_t acc[4];
	for (int k = 0; k < 4; k++) {
		int lb = hb_buffer(m, w51, k, HB_TEMP);
		hb_share(m, lb, ib51[k]);
		acc[k] = hb_gte(m, f("get-tuple-element.%d", 51 + k), w51, k);
	}
	/* the forward residuals live until the backward scan */
	for (int k = 0; k < 7; k++)
		hb_live_until(m, lb50[k], w51);
	hb_live_until(m, nb, w51);
	hb_live_until(m, lgb, w51);
	hb_live_until(m, lsb, w51);
	hb_live_until(m, agb1, w51);
	hb_live_until(m, agb2, w51);

	/* gradients: reduce-scattered shards of the accumulators, the head's */
	int64_t g[9];
	for (int i = 0; i < 9; i++) {
		int64_t src = i < 3 ? acc[1 + i] : acc[0];
		md = mk_meta("reduce_scatter", "jit(train_step)/transpose(jvp(Transformer))/decoder/layers/reduce_scatter",
			MTD, "Decoder.__call__", 563);
		if (i == 8) {
			ops[0] = norm;
			ops[1] = dlogits;
			md = mk_meta("dot_general", "jit(train_step)/transpose(jvp(Transformer))/decoder/logits_dense/dot_general",
				"MaxText/layers/linears.py", "DenseGeneral.__call__", 136);
			g[i] = mk_tfusion(m, "gemm_fusion_dot_general.2", "kCustom", "dot", st.a[i], ops, 2, &md, &b);
		} else {
			g[i] = hb_op(m, f("reduce-scatter.%d", 30 + i), "reduce-scatter", st.a[i], &src, 1, &md);
			hb_buffer(m, g[i], -1, HB_TEMP);
		}
	}
	int64_t outs[40];
	int n = adam_update(m, &st, g, "train_step", outs, &uniq, 0);
	outs[n++] = loss;
	mk_root(m, outs, n);
	int mod = mk_add_module(s, m, "train_step", 66464805120ll);

	put_state(s, &st);
	int tok = mk_put(s, -1, 4 * 4096 * 4, "s32[4,4096]");
	int tgt = mk_put(s, -1, 4 * 4096 * 4, "s32[4,4096]");
	(void)tok;
	(void)tgt;
	for (int k = 0; k < 2; k++) {
		for (int i = 0; i < scale; i++)
			mk_py(s, "$train.py:742 train_loop", 40 * 1000);
		mk_gap(s, 100 * 1000);
		int r = mk_exec(s, mod, -1, 0);
		mk_py(s, "$train.py:790 record_scalar", 20 * 1000);
		for (int d = 0; d < s->ndev; d++)
			mk_free(s, r + d * s->mods[mod].nresults); /* the loss, once logged */
	}
	mk_py(s, "$profiler.py:213 stop_trace", 50 * 1000);
}

void mk_build_scan_fits(mk_scn *s, int host, int scale) { scan_fits(s, host, scale); }

/* ------------------------------------------------------------------ */
/* temp-fragmentation: a GPT-2 large (36 layers, stacked weights) train
 * step on a 16 GiB GPU whose temp block is packed without reuse: the block
 * is 9.19 GiB while at most 4.48 GiB of it is live at once (51.2%
 * fragmentation, as in the TPU thread).  The state (8.64 GiB) plus the
 * block do not fit the 15.48 GiB pool: the temp allocation fails. */

#define GPT "levanter/models/gpt2.py"
#define GPT_TEMP 9867732224ll /* 9.19 GiB */
#define GPT_MASK 42250        /* dropout-mask width: sets the simulated peak */

static void temp_fragmentation(mk_scn *s, int host, int scale)
{
	(void)host;
	mk_scn_init(s, "gpu-node-0", 1, 17179869184ull, 16621523456ll);
	s->device_name = "Tesla V100-SXM2-16GB";
	s->vendor = "Nvidia";
	s->scale = scale;
	hb_module *m = hb_new("jit_train_step", 163);
	hb_set_bump_placement(m, 1);
	adam_state st = { 0 };
	int argn = 0, uniq = 300;
	static const char *const wn[6] = { "['wte']", "['wpe']", "['blocks']['attn']['c_attn']",
		"['blocks']['attn']['c_proj']", "['blocks']['mlp']['c_fc']", "['blocks']['mlp']['c_proj']" };
	st.nw = 6;
	for (int i = 0; i < 6; i++)
		st.name[i] = wn[i];
	st.a[0] = hb_a(ET_F32, 2, 50304, 1280);
	st.a[1] = hb_a(ET_F32, 2, 1024, 1280);
	st.a[2] = hb_a(ET_F32, 3, 36, 1280, 3840);
	st.a[3] = hb_a(ET_F32, 3, 36, 1280, 1280);
	st.a[4] = hb_a(ET_F32, 3, 36, 1280, 5120);
	st.a[5] = hb_a(ET_F32, 3, 36, 5120, 1280);
	adam_params(m, &st, &argn);
	hb_meta md = mk_meta(NULL, "batch['input_ids']", NULL, NULL, 0);
	int64_t ids = mk_param(m, f("Arg_%d.%d", argn, argn + 1), hb_a(ET_S32, 2, 6, 1024), &md);
	argn++;
	md = mk_meta(NULL, "batch['targets']", NULL, NULL, 0);
	int64_t targets = mk_param(m, f("Arg_%d.%d", argn, argn + 1), hb_a(ET_S32, 2, 6, 1024), &md);
	argn++;
	const int L = 36;
	int64_t ops[8];
	int b;
	hb_arr xa = hb_a(ET_BF16, 3, 6, 1024, 1280), qa = hb_a(ET_BF16, 3, 6, 1024, 3840),
	       ha = hb_a(ET_BF16, 3, 6, 1024, 5120), fa = hb_a(ET_F32, 3, 6, 1024, 1280);

	ops[0] = st.p[0][0];
	ops[1] = st.p[0][1];
	ops[2] = ids;
	md = mk_meta("take", "jit(train_step)/jvp(Gpt2LMHeadModel)/embeddings/take", GPT, "Gpt2Embeddings.embed", 203);
	int x0b;
	int64_t x0 = mk_tfusion(m, "loop_gather_fusion", "kLoop", "gather", fa, ops, 3, &md, &x0b);
	md = mk_meta("lt", "jit(train_step)/jvp(Gpt2LMHeadModel)/embeddings/dropout/lt", GPT, "Gpt2Embeddings.embed", 206);
	int maskb;
	int64_t mask = mk_tfusion(m, "loop_compare_fusion", "kLoop", "compare", hb_a(ET_U8, 3, 6, 1024, GPT_MASK), &x0, 1,
		&md, &maskb);
	(void)mask;
	int64_t x = x0, h[36];
	for (int l = 0; l < L; l++) {
		ops[0] = x;
		ops[1] = st.p[0][2];
		md = mk_meta("dot_general", f("jit(train_step)/jvp(Gpt2LMHeadModel)/transformer/blocks/%d/attn/c_attn/dot_general", l),
			GPT, "Gpt2Attention.__call__", 141);
		int64_t qkv = mk_tfusion(m, f("gemm_fusion_dot_general.%d", uniq++), "kCustom", "dot", qa, ops, 2, &md, NULL);
		md = mk_meta("tanh", f("jit(train_step)/jvp(Gpt2LMHeadModel)/transformer/blocks/%d/mlp/gelu/tanh", l),
			GPT, "Gpt2Mlp.__call__", 98);
		ops[0] = qkv;
		ops[1] = st.p[0][4];
		h[l] = mk_tfusion(m, f("loop_tanh_fusion.%d", uniq++), "kLoop", "tanh", ha, ops, 2, &md, NULL);
		ops[0] = h[l];
		ops[1] = st.p[0][5];
		md = mk_meta("dot_general", f("jit(train_step)/jvp(Gpt2LMHeadModel)/transformer/blocks/%d/mlp/c_proj/dot_general", l),
			GPT, "Gpt2Mlp.__call__", 100);
		x = mk_tfusion(m, f("gemm_fusion_dot_general.%d", uniq++), "kCustom", "dot", xa, ops, 2, &md, NULL);
	}
	md = mk_meta("reduce_sum", "jit(train_step)/jvp(Gpt2LMHeadModel)/transformer/ln_f/reduce_sum", GPT,
		"Gpt2Transformer.__call__", 262);
	int finb;
	int64_t fin = mk_tfusion(m, "input_reduce_fusion", "kInput", "reduce", fa, &x, 1, &md, &finb);
	ops[0] = fin;
	ops[1] = st.p[0][0];
	md = mk_meta("dot_general", "jit(train_step)/jvp(Gpt2LMHeadModel)/lm_head/dot_general", GPT, "Gpt2LMHeadModel.__call__", 301);
	int64_t logits = mk_tfusion(m, "gemm_fusion_dot_general", "kCustom", "dot", hb_a(ET_BF16, 3, 6, 1024, 50304), ops, 2,
		&md, NULL);
	ops[0] = logits;
	ops[1] = targets;
	md = mk_meta("reduce_sum", "jit(train_step)/jvp(Gpt2LMHeadModel)/cross_entropy/reduce_sum", GPT, "compute_loss", 330);
	int64_t loss = hb_fusion(m, "input_reduce_fusion.1", "kInput", "reduce", NULL, hb_a(ET_F32, 0), ops, 2, &md);
	hb_alloc_output(m, hb_buffer(m, loss, -1, HB_OUTPUT));
	md = mk_meta("sub", "jit(train_step)/transpose(jvp(Gpt2LMHeadModel))/cross_entropy/sub", GPT, "compute_loss", 330);
	int dlb;
	int64_t dlogits = mk_tfusion(m, "loop_subtract_fusion", "kLoop", "subtract", hb_a(ET_BF16, 3, 6, 1024, 50304), ops, 2,
		&md, &dlb);
	ops[0] = dlogits;
	ops[1] = st.p[0][0];
	md = mk_meta("dot_general", "jit(train_step)/transpose(jvp(Gpt2LMHeadModel))/lm_head/dot_general", GPT,
		"Gpt2LMHeadModel.__call__", 301);
	int64_t dx = mk_tfusion(m, "gemm_fusion_dot_general.1", "kCustom", "dot", xa, ops, 2, &md, NULL);
	/* the gradients, bf16, zero-initialised at the start of the backward pass */
	int64_t G[6];
	int Gb[6];
	for (int i = 0; i < 6; i++) {
		hb_arr ga = st.a[i];
		ga.et = ET_BF16;
		md = mk_meta("broadcast_in_dim", "jit(train_step)/transpose(jvp(Gpt2LMHeadModel))/broadcast_in_dim", GPT,
			"Gpt2LMHeadModel.__call__", 301);
		G[i] = mk_tfusion(m, f("loop_broadcast_fusion.%d", i), "kLoop", "broadcast", ga, NULL, 0, &md, &Gb[i]);
	}
	/* the lm_head gradient accumulates into G[0] in place */
	ops[0] = G[0];
	ops[1] = dlogits;
	ops[2] = fin;
	md = mk_meta("dot_general", "jit(train_step)/transpose(jvp(Gpt2LMHeadModel))/lm_head/dot_general", GPT,
		"Gpt2LMHeadModel.__call__", 301);
	hb_arr g0a = st.a[0];
	g0a.et = ET_BF16;
	int64_t gw = mk_tfusion(m, "gemm_fusion_dot_general.2", "kCustom", "dot", g0a, ops, 3, &md, &b);
	hb_share(m, b, Gb[0]);
	G[0] = gw;
	int64_t d = dx;
	for (int l = L - 1; l >= 0; l--) {
		ops[0] = d;
		ops[1] = h[l];
		ops[2] = st.p[0][5];
		md = mk_meta("dot_general", f("jit(train_step)/transpose(jvp(Gpt2LMHeadModel))/transformer/blocks/%d/mlp/c_proj/dot_general", l),
			GPT, "Gpt2Mlp.__call__", 100);
		d = mk_tfusion(m, f("gemm_fusion_dot_general.%d", uniq++), "kCustom", "dot", qa, ops, 3, &md, NULL);
	}
	for (int i = 0; i < 6; i++) {
		hb_live_until(m, Gb[i], d);
	}
	hb_live_until(m, x0b, d);
	hb_live_until(m, finb, d);
	hb_live_until(m, maskb, d);
	hb_live_until(m, dlb, d);
	int64_t outs[40];
	/* the update reads the accumulated gradients (and the last backward value) */
	int64_t g[6];
	for (int i = 0; i < 6; i++)
		g[i] = G[i];
	int n = adam_update(m, &st, g, "train_step", outs, &uniq, 0);
	outs[n++] = loss;
	mk_root(m, outs, n);
	int mod = mk_add_module(s, m, "train_step", GPT_TEMP);

	put_state(s, &st);
	mk_put(s, 0, 6 * 1024 * 4, "s32[6,1024]");
	mk_put(s, 0, 6 * 1024 * 4, "s32[6,1024]");
	for (int i = 0; i < 3 * scale; i++)
		mk_py(s, "$train_lm.py:130 train_loop", 30 * 1000);
	mk_gap(s, 200 * 1000);
	/* runtime allocations: loss, tuple, then the 9.19 GiB temp block fails */
	mk_exec(s, mod, 2, 5000000000ll);
	mk_py(s, "$profiler.py:213 stop_trace", 50 * 1000);
}

void mk_build_temp_fragmentation(mk_scn *s, int host, int scale) { temp_fragmentation(s, host, scale); }

/* ------------------------------------------------------------------ */
/* layout-copy: LoRA fine-tuning of a llama-like 8B model on one H100
 * (openxla/xla#26987): layout assignment puts transposing copies of three
 * frozen stacked weights (wrapped_transpose.5, input_transpose_fusion.3,
 * wrapped_transpose.10) in the entry computation, where they feed the
 * gradient-accumulation loop while.7 and live through it. */

#define AXS "flax/core/axes_scan.py"

static void layout_copy(mk_scn *s, int host, int scale)
{
	(void)host;
	mk_h100(s, "gpu-node-0", 1, 64424509440ll, scale);
	hb_module *m = hb_new("jit_train_step", 5120);
	int argn = 0, uniq = 400;
	static const char *const bn[5] = { "['layers']['attn']['qkv']", "['layers']['attn']['out']",
		"['layers']['mlp']['wi']", "['layers']['mlp']['wo']", "['embed']" };
	hb_arr ba[5] = { hb_a(ET_BF16, 3, 32, 4096, 6144), hb_a(ET_BF16, 3, 32, 4096, 4096),
		hb_a(ET_BF16, 3, 32, 4096, 28672), hb_a(ET_BF16, 3, 32, 14336, 4096), hb_a(ET_BF16, 2, 128256, 4096) };
	int64_t base[5];
	hb_meta md;
	for (int i = 0; i < 5; i++) {
		md = mk_meta(NULL, f("frozen%s", bn[i]), NULL, NULL, 0);
		base[i] = mk_param(m, f("Arg_%d.%d", argn, argn + 1), ba[i], &md);
		argn++;
	}
	adam_state st = { 0 };
	st.nw = 2;
	st.name[0] = "['lora']['a']";
	st.name[1] = "['lora']['b']";
	st.a[0] = hb_a(ET_F32, 3, 32, 4096, 16);
	st.a[1] = hb_a(ET_F32, 3, 32, 16, 6144);
	adam_params(m, &st, &argn);
	md = mk_meta(NULL, "batch['tokens']", NULL, NULL, 0);
	int64_t tokens = mk_param(m, f("Arg_%d.%d", argn, argn + 1), hb_a(ET_S32, 2, 8, 2048), &md);
	argn++;
	md = mk_meta(NULL, "batch['targets']", NULL, NULL, 0);
	int64_t targets = mk_param(m, f("Arg_%d.%d", argn, argn + 1), hb_a(ET_S32, 2, 8, 2048), &md);
	argn++;
	(void)tokens;

	/* the transposed copies carry the metadata of the dynamic-slice in the
	 * scan body that wanted the other layout */
	const char *ds = "jit(train_step)/while/body/jvp(CausalLMTransformerModel.compute_logits)/transformer/while/body/dynamic_slice";
	md = mk_meta("dynamic_slice", ds, AXS, "scan_fn", 179);
	int64_t init[6];
	int ib[6];
	hb_arr state[6];
	init[3] = mk_tfusion(m, "wrapped_transpose.5", "kLoop", "transpose", hb_a(ET_BF16, 3, 32, 28672, 4096), &base[2], 1, &md,
		&ib[3]);
	init[4] = mk_tfusion(m, "input_transpose_fusion.3", "kInput", "transpose", hb_a(ET_BF16, 3, 32, 4096, 14336),
		&base[3], 1, &md, &ib[4]);
	init[5] = mk_tfusion(m, "wrapped_transpose.10", "kLoop", "transpose", hb_a(ET_BF16, 3, 32, 6144, 4096), &base[0], 1,
		&md, &ib[5]);
	/* accumulators of the LoRA gradients and the scan's residual stack */
	for (int k = 0; k < 2; k++) {
		md = mk_meta("broadcast_in_dim", "jit(train_step)/broadcast_in_dim", "train.py", "train_step", 88);
		state[k] = st.a[k];
		init[k] = mk_tfusion(m, f("loop_broadcast_fusion.%d", k), "kLoop", "broadcast", st.a[k], NULL, 0, &md, &ib[k]);
	}
	md = mk_meta("broadcast_in_dim",
		"jit(train_step)/while/body/jvp(CausalLMTransformerModel.compute_logits)/transformer/broadcast_in_dim", AXS,
		"scan_fn", 160);
	state[2] = hb_a(ET_BF16, 4, 32, 8, 2048, 4096);
	init[2] = mk_tfusion(m, "loop_broadcast_fusion.2", "kLoop", "broadcast", state[2], NULL, 0, &md, &ib[2]);
	state[3] = hb_a(ET_BF16, 3, 32, 28672, 4096);
	state[4] = hb_a(ET_BF16, 3, 32, 4096, 14336);
	state[5] = hb_a(ET_BF16, 3, 32, 6144, 4096);
	int64_t t7 = hb_tuple(m, "tuple.7", init, 6);
	md = mk_meta("while", "jit(train_step)/while", "train.py", "train_step", 90);
	hb_meta body = mk_meta("dynamic_slice", ds, AXS, "scan_fn", 179);
	int64_t w7 = hb_while(m, "while.7", t7, state, 6, &md, &body);
	int64_t g[2];
	for (int k = 0; k < 3; k++) {
		int lb = hb_buffer(m, w7, k, HB_TEMP);
		hb_share(m, lb, ib[k]);
	}
	for (int k = 0; k < 2; k++)
		g[k] = hb_gte(m, f("get-tuple-element.%d", 70 + k), w7, k);
	int64_t res = hb_gte(m, "get-tuple-element.72", w7, 2);
	int64_t ops[2] = { res, targets };
	md = mk_meta("reduce_sum", "jit(train_step)/reduce_sum", "train.py", "train_step", 95);
	int64_t loss = hb_fusion(m, "input_reduce_fusion", "kInput", "reduce", NULL, hb_a(ET_F32, 0), ops, 2, &md);
	hb_alloc_output(m, hb_buffer(m, loss, -1, HB_OUTPUT));
	int64_t outs[16];
	/* the LoRA state starts after the 5 frozen parameters */
	int n = adam_update(m, &st, g, "train_step", outs, &uniq, 5);
	outs[n++] = loss;
	mk_root(m, outs, n);
	int mod = mk_add_module(s, m, "train_step", 0);

	char shp[96];
	for (int i = 0; i < 5; i++) {
		hb_arr_str(&ba[i], shp, sizeof shp);
		mk_put(s, 0, hb_arr_bytes(&ba[i]), shp);
	}
	put_state(s, &st);
	mk_put(s, 0, 8 * 2048 * 4, "s32[8,2048]");
	mk_put(s, 0, 8 * 2048 * 4, "s32[8,2048]");
	for (int k = 0; k < 2; k++) {
		for (int i = 0; i < scale; i++)
			mk_py(s, "$train.py:140 train_loop", 30 * 1000);
		mk_gap(s, 100 * 1000);
		int r = mk_exec(s, mod, -1, 0);
		mk_free(s, r);
	}
	mk_py(s, "$profiler.py:213 stop_trace", 50 * 1000);
}

void mk_build_layout_copy(mk_scn *s, int host, int scale) { layout_copy(s, host, scale); }

/* ------------------------------------------------------------------ */
/* convert-copy: a GPT-2 medium step that keeps f32 parameters and computes
 * in bf16; XLA converts every weight up front (loop_convert_fusion,
 * wrapped_convert.N in the entry computation) and the copies stay live to
 * the backward pass, through the heap peak. */

static void convert_copy(mk_scn *s, int host, int scale)
{
	(void)host;
	mk_scn_init(s, "gpu-node-0", 1, 17179869184ull, 12884901888ll);
	s->device_name = "Tesla V100-SXM2-16GB";
	s->vendor = "Nvidia";
	s->scale = scale;
	hb_module *m = hb_new("jit_train_step", 4537);
	adam_state st = { 0 };
	int argn = 0, uniq = 500;
	static const char *const wn[6] = { "['wte']", "['wpe']", "['blocks']['attn']['c_attn']",
		"['blocks']['attn']['c_proj']", "['blocks']['mlp']['c_fc']", "['blocks']['mlp']['c_proj']" };
	st.nw = 6;
	for (int i = 0; i < 6; i++)
		st.name[i] = wn[i];
	st.a[0] = hb_a(ET_F32, 2, 50304, 1024);
	st.a[1] = hb_a(ET_F32, 2, 1024, 1024);
	st.a[2] = hb_a(ET_F32, 3, 24, 1024, 3072);
	st.a[3] = hb_a(ET_F32, 3, 24, 1024, 1024);
	st.a[4] = hb_a(ET_F32, 3, 24, 1024, 4096);
	st.a[5] = hb_a(ET_F32, 3, 24, 4096, 1024);
	adam_params(m, &st, &argn);
	hb_meta md = mk_meta(NULL, "batch['input_ids']", NULL, NULL, 0);
	int64_t ids = mk_param(m, f("Arg_%d.%d", argn, argn + 1), hb_a(ET_S32, 2, 8, 1024), &md);
	argn++;
	md = mk_meta(NULL, "batch['targets']", NULL, NULL, 0);
	int64_t targets = mk_param(m, f("Arg_%d.%d", argn, argn + 1), hb_a(ET_S32, 2, 8, 1024), &md);
	argn++;

	/* the bulk f32 -> bf16 conversion of every weight but wpe */
	static const int conv[5] = { 0, 2, 3, 4, 5 };
	int64_t c[6] = { 0 };
	int cb[6];
	for (int k = 0; k < 5; k++) {
		int i = conv[k];
		hb_arr a = st.a[i];
		a.et = ET_BF16;
		md = mk_meta("convert_element_type", "jit(train_step)/convert_element_type", "train.py", "train_step", 52);
		c[i] = mk_tfusion(m, k == 0 ? "loop_convert_fusion" : f("wrapped_convert.%d", k), "kLoop", "convert", a,
			&st.p[0][i], 1, &md, &cb[k]);
	}
	int64_t ops[4];
	ops[0] = c[0];
	ops[1] = ids;
	md = mk_meta("take", "jit(train_step)/jvp(Gpt2LMHeadModel)/embeddings/take", GPT, "Gpt2Embeddings.embed", 203);
	int x0b, hb_;
	int64_t x0 = mk_tfusion(m, "loop_gather_fusion", "kLoop", "gather", hb_a(ET_BF16, 3, 8, 1024, 1024), ops, 2, &md,
		&x0b);
	ops[0] = x0;
	ops[1] = c[2];
	ops[2] = c[4];
	md = mk_meta("tanh", "jit(train_step)/jvp(Gpt2LMHeadModel)/transformer/blocks/mlp/gelu/tanh", GPT, "Gpt2Mlp.__call__", 98);
	int64_t h = mk_tfusion(m, "loop_tanh_fusion", "kLoop", "tanh", hb_a(ET_BF16, 3, 8, 1024, 4096), ops, 3, &md, &hb_);
	ops[0] = h;
	ops[1] = c[0];
	md = mk_meta("dot_general", "jit(train_step)/jvp(Gpt2LMHeadModel)/lm_head/dot_general", GPT, "Gpt2LMHeadModel.__call__", 301);
	int64_t logits = mk_tfusion(m, "gemm_fusion_dot_general", "kCustom", "dot", hb_a(ET_BF16, 3, 8, 1024, 50304), ops, 2,
		&md, NULL);
	ops[0] = logits;
	ops[1] = targets;
	md = mk_meta("reduce_sum", "jit(train_step)/jvp(Gpt2LMHeadModel)/cross_entropy/reduce_sum", GPT, "compute_loss", 330);
	int64_t loss = hb_fusion(m, "input_reduce_fusion", "kInput", "reduce", NULL, hb_a(ET_F32, 0), ops, 2, &md);
	hb_alloc_output(m, hb_buffer(m, loss, -1, HB_OUTPUT));
	md = mk_meta("sub", "jit(train_step)/transpose(jvp(Gpt2LMHeadModel))/cross_entropy/sub", GPT, "compute_loss", 330);
	int64_t dlogits = mk_tfusion(m, "loop_subtract_fusion", "kLoop", "subtract", hb_a(ET_BF16, 3, 8, 1024, 50304), ops, 2,
		&md, NULL);
	/* gradients (f32), consumed by the update */
	int64_t g[6];
	md = mk_meta("dot_general", "jit(train_step)/transpose(jvp(Gpt2LMHeadModel))/lm_head/dot_general", GPT,
		"Gpt2LMHeadModel.__call__", 301);
	ops[0] = dlogits;
	ops[1] = c[0];
	int64_t dh = mk_tfusion(m, "gemm_fusion_dot_general.2", "kCustom", "dot", hb_a(ET_BF16, 3, 8, 1024, 4096), ops, 2,
		&md, NULL);
	static const int gi[5] = { 5, 4, 2, 3, 1 };
	for (int k = 0; k < 5; k++) {
		int i = gi[k];
		ops[0] = dh;
		ops[1] = i == 5 ? h : x0;
		md = mk_meta("dot_general", f("jit(train_step)/transpose(jvp(Gpt2LMHeadModel))/transformer/blocks/%s/dot_general",
			wn[i]), GPT, "Gpt2Block.__call__", 120 + k);
		g[i] = mk_tfusion(m, f("gemm_fusion_dot_general.%d", 3 + k), "kCustom", "dot", st.a[i], ops, 2, &md, NULL);
	}
	/* the head's gradient last: dlogits and h live to the end */
	ops[0] = dlogits;
	ops[1] = h;
	md = mk_meta("dot_general", "jit(train_step)/transpose(jvp(Gpt2LMHeadModel))/lm_head/dot_general", GPT,
		"Gpt2LMHeadModel.__call__", 301);
	g[0] = mk_tfusion(m, "gemm_fusion_dot_general.1", "kCustom", "dot", st.a[0], ops, 2, &md, NULL);
	for (int k = 0; k < 5; k++)
		hb_live_until(m, cb[k], g[0]);
	int64_t outs[24];
	int n = adam_update(m, &st, g, "train_step", outs, &uniq, 0);
	outs[n++] = loss;
	mk_root(m, outs, n);
	int mod = mk_add_module(s, m, "train_step", 0);

	put_state(s, &st);
	mk_put(s, 0, 8 * 1024 * 4, "s32[8,1024]");
	mk_put(s, 0, 8 * 1024 * 4, "s32[8,1024]");
	for (int k = 0; k < 3; k++) {
		for (int i = 0; i < scale; i++)
			mk_py(s, "$train_lm.py:130 train_loop", 30 * 1000);
		mk_gap(s, 100 * 1000);
		int r = mk_exec(s, mod, -1, 0);
		mk_free(s, r);
	}
	mk_py(s, "$profiler.py:213 stop_trace", 50 * 1000);
}

void mk_build_convert_copy(mk_scn *s, int host, int scale) { convert_copy(s, host, scale); }
