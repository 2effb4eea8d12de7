/* Runtime-shaped scenarios: no-runtime (a capture without allocator events,
 * as with XLA_PYTHON_CLIENT_ALLOCATOR=cuda_async) and multi-host (a run
 * directory of two hosts).  Both run one small MLP step whose figures are
 * in tests/scenarios/<name>.json. */
#include "scenarios.h"

#include <stdio.h>

/* jit_mlp_step: Adam state over W f32[4096,4096] (donated) and a batch
 * f32[512,4096]; temp: h (forward), dh and the gradient (backward). */
static int small_step(mk_scn *s)
{
	hb_module *m = hb_new("jit_mlp_step", 901);
	hb_arr wa = hb_a(ET_F32, 2, 4096, 4096), xa = hb_a(ET_F32, 2, 512, 4096);
	static const char *const which[3] = { "state.params['w']", "state.opt_state.mu['w']", "state.opt_state.nu['w']" };
	int64_t p[3], ops[4];
	for (int c = 0; c < 3; c++) {
		hb_meta md = mk_meta(NULL, which[c], NULL, NULL, 0);
		char nm[32];
		snprintf(nm, sizeof nm, "Arg_%d.%d", c, c + 1);
		p[c] = mk_param(m, nm, wa, &md);
	}
	hb_meta md = mk_meta(NULL, "batch", NULL, NULL, 0);
	int64_t x = mk_param(m, "Arg_3.4", xa, &md);
	ops[0] = x;
	ops[1] = p[0];
	md = mk_meta("dot_general", "jit(mlp_step)/jvp(mlp)/dense/dot_general", "mlp.py", "mlp", 12);
	int64_t h = mk_tfusion(m, "gemm_fusion_dot_general", "kCustom", "dot", xa, ops, 2, &md, NULL);
	md = mk_meta("reduce_sum", "jit(mlp_step)/jvp(mlp)/reduce_sum", "mlp.py", "loss_fn", 20);
	int64_t loss = hb_fusion(m, "input_reduce_fusion", "kInput", "reduce", NULL, hb_a(ET_F32, 0), &h, 1, &md);
	hb_alloc_output(m, hb_buffer(m, loss, -1, HB_OUTPUT));
	ops[0] = h;
	ops[1] = x;
	md = mk_meta("sub", "jit(mlp_step)/transpose(jvp(mlp))/sub", "mlp.py", "loss_fn", 20);
	int64_t dh = mk_tfusion(m, "loop_subtract_fusion", "kLoop", "subtract", xa, ops, 2, &md, NULL);
	ops[0] = x;
	ops[1] = dh;
	md = mk_meta("dot_general", "jit(mlp_step)/transpose(jvp(mlp))/dense/dot_general", "mlp.py", "mlp", 12);
	int64_t g = mk_tfusion(m, "gemm_fusion_dot_general.1", "kCustom", "dot", wa, ops, 2, &md, NULL);
	static const char *const root[3] = { "subtract", "add", "add" };
	int64_t outs[4];
	for (int c = 0; c < 3; c++) {
		int64_t uops[4] = { p[0], p[1], p[2], g };
		char nm[48];
		snprintf(nm, sizeof nm, "loop_%s_fusion.%d", root[c], c);
		md = mk_meta(c ? "add" : "sub", "jit(mlp_step)/sub", "optax/_src/transform.py", "update_fn", 121 + c);
		outs[c] = mk_afusion(m, nm, root[c], wa, uops, 4, &md);
		hb_io_alias(m, c, c);
	}
	outs[3] = loss;
	mk_root(m, outs, 4);
	return mk_add_module(s, m, "mlp_step", 0);
}

/* The state and a batch put on every device, then the steps; prefetch > 0
 * puts one more array of that many bytes (f32[8,4096,4096], 512 MiB) on
 * every device after them, kept to the end. */
static void run_steps_with(mk_scn *s, int mod, int steps, int scale, int64_t prefetch)
{
	for (int c = 0; c < 3; c++)
		mk_put(s, -1, 4096ll * 4096 * 4, "f32[4096,4096]");
	mk_put(s, -1, 512ll * 4096 * 4, "f32[512,4096]");
	if (prefetch > 0)
		mk_put(s, -1, prefetch, "f32[8,4096,4096]");
	for (int k = 0; k < steps; k++) {
		for (int i = 0; i < scale; i++)
			mk_py(s, "$mlp.py:40 train_loop", 20 * 1000);
		mk_gap(s, 100 * 1000);
		int r = mk_exec(s, mod, -1, 0);
		for (int d = 0; d < s->ndev; d++)
			mk_free(s, r + d * s->mods[mod].nresults);
	}
	mk_py(s, "$profiler.py:213 stop_trace", 50 * 1000);
}

static void run_steps(mk_scn *s, int mod, int steps, int scale)
{
	run_steps_with(s, mod, steps, scale, 0);
}

void mk_build_no_runtime(mk_scn *s, int host, int scale)
{
	(void)host;
	mk_scn_init(s, "gpu-node-0", 1, 17179869184ull, 12884901888ll);
	s->device_name = "Tesla V100-SXM2-16GB";
	s->vendor = "Nvidia";
	s->scale = scale;
	s->no_runtime = 1; /* XLA_PYTHON_CLIENT_ALLOCATOR=cuda_async: no BFC events */
	run_steps(s, small_step(s), 2, scale);
}

/* A run directory of two hosts: OUT/worker-0.xplane.pb, OUT/worker-1.xplane.pb. */
void mk_build_multi_host(mk_scn *s, int host, int scale);
void mk_build_multi_host(mk_scn *s, int host, int scale)
{
	mk_scn_init(s, host ? "worker-1" : "worker-0", 2, 85899345920ull, 64424509440ll);
	s->device_name = "NVIDIA H100 80GB HBM3";
	s->vendor = "Nvidia";
	s->scale = scale;
	run_steps(s, small_step(s), 3, scale);
}

/* A run directory of four hosts running the multi-host step, of which
 * worker-2 alone holds an extra prefetched batch (a device_put of
 * f32[8,4096,4096], 512 MiB, on each device) through every step: the
 * host-skew of the cross-host diagnosis. */
void mk_build_multi_host_prefetch(mk_scn *s, int host, int scale);
void mk_build_multi_host_prefetch(mk_scn *s, int host, int scale)
{
	static const char *const names[4] = { "worker-0", "worker-1", "worker-2", "worker-3" };
	mk_scn_init(s, names[host & 3], 2, 85899345920ull, 64424509440ll);
	s->device_name = "NVIDIA H100 80GB HBM3";
	s->vendor = "Nvidia";
	s->scale = scale;
	run_steps_with(s, small_step(s), 3, scale, host == 2 ? 8ll * 4096 * 4096 * 4 : 0);
}

/* eager: a program run op by op (no jit around the step), as JAX does
 * outside jit: every jnp call is its own small module (jit_add(N),
 * jit_multiply(N), jit_dot_general(N)) executed once, and the program
 * keeps every intermediate result.  Five device_put inputs f32[4096,4096]
 * (64 MiB each) and 39 op modules, each one output f32[4096,4096], fill
 * the pool; the 40th module, jit_einsum (f32 product as a temp block,
 * bf16 output), gets its output but not its temp block: the memory is
 * held by the outputs of 39 modules, not by any one module's plan. */
#define EAGER_OPS 39
static int eager_op(mk_scn *s, int k)
{
	static const char *const kind[3] = { "add", "multiply", "dot_general" };
	static const char *const root[3] = { "add", "multiply", "dot" };
	const int c = k % 3;
	char name[64];
	snprintf(name, sizeof name, "jit_%s", kind[c]);
	hb_module *m = hb_new(name, 1000 + 2 * (uint64_t)k);
	hb_arr a = hb_a(ET_F32, 2, 4096, 4096);
	hb_meta md = mk_meta(NULL, "x", NULL, NULL, 0);
	int64_t ops[2];
	ops[0] = mk_param(m, "Arg_0.1", a, &md);
	md = mk_meta(NULL, "y", NULL, NULL, 0);
	ops[1] = mk_param(m, "Arg_1.2", a, &md);
	char opn[64];
	snprintf(opn, sizeof opn, "jit(%s)/%s", kind[c], kind[c]);
	md = mk_meta(kind[c], opn, "eager.py", "main", 30 + k);
	snprintf(name, sizeof name, "%s_fusion", c == 2 ? "gemm" : c ? "loop_multiply" : "loop_add");
	int64_t out = mk_ofusion(m, name, root[c], a, ops, 2, &md);
	mk_root(m, &out, 1);
	return mk_add_module(s, m, kind[c], 0);
}

static int eager_einsum(mk_scn *s)
{
	hb_module *m = hb_new("jit_einsum", 1100);
	hb_arr a = hb_a(ET_F32, 2, 4096, 4096);
	hb_meta md = mk_meta(NULL, "x", NULL, NULL, 0);
	int64_t ops[2];
	ops[0] = mk_param(m, "Arg_0.1", a, &md);
	md = mk_meta(NULL, "w", NULL, NULL, 0);
	ops[1] = mk_param(m, "Arg_1.2", a, &md);
	md = mk_meta("dot_general", "jit(einsum)/jit(_einsum)/dot_general", "eager.py", "main", 80);
	int64_t t = mk_tfusion(m, "gemm_fusion_dot_general", "kCustom", "dot", a, ops, 2, &md, NULL);
	md = mk_meta("convert_element_type", "jit(einsum)/jit(_einsum)/convert_element_type", "eager.py", "main", 80);
	int64_t out = mk_ofusion(m, "loop_convert_fusion", "convert", hb_a(ET_BF16, 2, 4096, 4096), &t, 1, &md);
	mk_root(m, &out, 1);
	return mk_add_module(s, m, "einsum", 0);
}

void mk_build_eager(mk_scn *s, int host, int scale);
void mk_build_eager(mk_scn *s, int host, int scale)
{
	(void)host;
	mk_scn_init(s, "gpu-node-0", 1, MK_POOL_MEMORY, MK_POOL_CAPACITY);
	s->scale = scale;
	int ops[EAGER_OPS];
	for (int k = 0; k < EAGER_OPS; k++)
		ops[k] = eager_op(s, k);
	int einsum = eager_einsum(s);
	for (int i = 0; i < 5; i++)
		mk_put(s, -1, 4096ll * 4096 * 4, "f32[4096,4096]");
	for (int k = 0; k < EAGER_OPS; k++) {
		for (int i = 0; i < scale; i++)
			mk_py(s, "$eager.py:30 main", 5 * 1000);
		mk_gap(s, 20 * 1000);
		mk_exec(s, ops[k], -1, 0); /* every result is kept */
	}
	mk_py(s, "$eager.py:80 main", 5 * 1000);
	mk_gap(s, 20 * 1000);
	mk_exec(s, einsum, 2, 1000ll * 1000 * 1000); /* the temp block does not fit */
	mk_py(s, "$profiler.py:213 stop_trace", 50 * 1000);
}

/* retrace-oom: JAX compiles train_step again for a new input shape.  A
 * two-layer MLP step (weights w1, w2 f32[8192,8192], 256 MiB each,
 * donated: the new weights alias them) runs three times as
 * jit_train_step(12) on batches x f32[8,1024,8192]; then the last batch is
 * twice as large, JAX compiles jit_train_step(19) for f32[16,1024,8192],
 * and that execution allocates its non-aliased outputs (per-example loss
 * f32[16], loss, tuple table), waits in AllocatorRetry for its 2 GiB temp
 * block and never launches.  Both modules bear one host name (PjitFunction
 * (train_step), <name>:XLA GPU module), so only the requested bytes (64 B
 * first, where (12) asks 32 B) tell which one failed.  The forward
 * activations kept for the backward pass (jvp) are 3 of the 4 temp
 * buffers at the heap peak; the temp block is the placement's extent, equal
 * to the simulated peak (no fragmentation).  Figures: retrace-oom.json. */
static int retrace_step(mk_scn *s, uint64_t program_id, int batch, int per_example)
{
	hb_module *m = hb_new("jit_train_step", program_id);
	hb_arr w = hb_a(ET_F32, 2, 8192, 8192), act = hb_a(ET_F32, 3, batch, 1024, 8192);
	hb_meta md = mk_meta(NULL, "params['w1']", NULL, NULL, 0);
	int64_t w1 = mk_param(m, "Arg_0.1", w, &md);
	md = mk_meta(NULL, "params['w2']", NULL, NULL, 0);
	int64_t w2 = mk_param(m, "Arg_1.2", w, &md);
	md = mk_meta(NULL, "x", NULL, NULL, 0);
	int64_t x = mk_param(m, "Arg_2.3", act, &md);
	int64_t ops[2];

	/* forward: a1 and h1 are kept for the backward pass, a2 for the loss's */
	ops[0] = x;
	ops[1] = w1;
	md = mk_meta("dot_general", "jit(train_step)/jvp(mlp)/dense_1/dot_general", "train.py", "mlp", 21);
	int64_t a1 = mk_tfusion(m, "gemm_fusion_dot_general", "kCustom", "dot", act, ops, 2, &md, NULL);
	md = mk_meta("tanh", "jit(train_step)/jvp(mlp)/gelu/tanh", "train.py", "mlp", 22);
	int64_t h1 = mk_tfusion(m, "loop_tanh_fusion", "kLoop", "tanh", act, &a1, 1, &md, NULL);
	ops[0] = h1;
	ops[1] = w2;
	md = mk_meta("dot_general", "jit(train_step)/jvp(mlp)/dense_2/dot_general", "train.py", "mlp", 23);
	int64_t a2 = mk_tfusion(m, "gemm_fusion_dot_general.1", "kCustom", "dot", act, ops, 2, &md, NULL);
	int64_t pel = -1, loss;
	if (per_example) {
		md = mk_meta("reduce_sum", "jit(train_step)/jvp(loss_fn)/reduce_sum", "train.py", "loss_fn", 30);
		pel = mk_ofusion(m, "input_reduce_fusion", "reduce", hb_a(ET_F32, 1, batch), &a2, 1, &md);
		md = mk_meta("reduce_sum", "jit(train_step)/jvp(loss_fn)/mean/reduce_sum", "train.py", "loss_fn", 31);
		loss = mk_ofusion(m, "input_reduce_fusion.1", "reduce", hb_a(ET_F32, 0), &pel, 1, &md);
	} else {
		/* the mean loss straight from a2: no output depends on the batch */
		md = mk_meta("reduce_sum", "jit(train_step)/jvp(loss_fn)/mean/reduce_sum", "train.py", "loss_fn", 31);
		loss = mk_ofusion(m, "input_reduce_fusion", "reduce", hb_a(ET_F32, 0), &a2, 1, &md);
	}

	/* backward */
	md = mk_meta("mul", "jit(train_step)/transpose(jvp(loss_fn))/mul", "train.py", "loss_fn", 30);
	int64_t da2 = mk_tfusion(m, "loop_multiply_fusion", "kLoop", "multiply", act, &a2, 1, &md, NULL);
	ops[0] = h1;
	ops[1] = da2;
	md = mk_meta("dot_general", "jit(train_step)/transpose(jvp(mlp))/dense_2/dot_general", "train.py", "mlp", 23);
	int64_t dw2 = mk_tfusion(m, "gemm_fusion_dot_general.2", "kCustom", "dot", w, ops, 2, &md, NULL);
	ops[0] = da2;
	ops[1] = w2;
	int64_t dh1 = mk_tfusion(m, "gemm_fusion_dot_general.3", "kCustom", "dot", act, ops, 2, &md, NULL);
	ops[0] = w2;
	ops[1] = dw2;
	md = mk_meta("sub", "jit(train_step)/sgd/sub", "train.py", "train_step", 40);
	int64_t nw2 = mk_afusion(m, "loop_subtract_fusion", "subtract", w, ops, 2, &md);
	ops[0] = dh1;
	ops[1] = a1;
	md = mk_meta("mul", "jit(train_step)/transpose(jvp(mlp))/gelu/mul", "train.py", "mlp", 22);
	int64_t da1 = mk_tfusion(m, "loop_multiply_fusion.1", "kLoop", "multiply", act, ops, 2, &md, NULL);
	ops[0] = x;
	ops[1] = da1;
	md = mk_meta("dot_general", "jit(train_step)/transpose(jvp(mlp))/dense_1/dot_general", "train.py", "mlp", 21);
	int64_t dw1 = mk_tfusion(m, "gemm_fusion_dot_general.4", "kCustom", "dot", w, ops, 2, &md, NULL);
	ops[0] = w1;
	ops[1] = dw1;
	md = mk_meta("sub", "jit(train_step)/sgd/sub", "train.py", "train_step", 40);
	int64_t nw1 = mk_afusion(m, "loop_subtract_fusion.1", "subtract", w, ops, 2, &md);

	int64_t outs[4] = { nw1, nw2, loss, pel };
	hb_io_alias(m, 0, 0);
	hb_io_alias(m, 1, 1);
	mk_root(m, outs, per_example ? 4 : 3);
	return mk_add_module(s, m, "train_step", 0);
}

/* The script of both retrace scenarios; per_example: the modules also
 * output the per-example loss f32[B] (first of the runtime allocations). */
static void retrace_run(mk_scn *s, int scale, int per_example)
{
	mk_scn_init(s, "gpu-node-0", 1, MK_POOL_MEMORY, MK_POOL_CAPACITY);
	s->scale = scale;
	int m12 = retrace_step(s, 12, 8, per_example), m19 = retrace_step(s, 19, 16, per_example);
	const int nout = per_example ? 2 : 1; /* the results the script frees */
	mk_put(s, 0, 256 * MiB, "f32[8192,8192]");
	mk_put(s, 0, 256 * MiB, "f32[8192,8192]");
	for (int k = 0; k < 3; k++) {
		int b = mk_put(s, 0, 256 * MiB, "f32[8,1024,8192]");
		for (int i = 0; i < scale; i++)
			mk_py(s, "$train.py:52 train_loop", 30 * 1000);
		mk_gap(s, 100 * 1000);
		/* runtime allocations: [per-example loss,] loss, tuple, temp */
		int r = mk_exec(s, m12, -1, 0);
		mk_py(s, "$builtins float", 20 * 1000);
		for (int o = 0; o < nout; o++)
			mk_free(s, r + o); /* [per-example loss,] loss */
		if (k < 2 || !(s->variants & MK_V_KEPT_BATCH))
			mk_free(s, b);
	}
	/* the last batch is larger: a new compilation, whose temp block (after
	 * the results and the tuple table) does not fit */
	mk_put(s, 0, 512 * MiB, "f32[16,1024,8192]");
	mk_py(s, "$train.py:52 train_loop", 30 * 1000);
	mk_gap(s, 200 * 1000);
	mk_exec(s, m19, nout + 1, 2000000000ll);
	mk_py(s, "$profiler.py:213 stop_trace", 50 * 1000);
}

void mk_build_retrace_oom(mk_scn *s, int host, int scale);
void mk_build_retrace_oom(mk_scn *s, int host, int scale)
{
	(void)host;
	retrace_run(s, scale, 1);
}

/* retrace-oom-ambiguous: retrace-oom without the per-example loss, so that
 * no output depends on the batch: both compilations allocate loss (4 B)
 * and the tuple table (24 B) before their temp blocks, and the failed
 * execution of (19), which stops at its temp block, requested a prefix of
 * both modules' sizes, and the host side names both.  Its arguments
 * tell: only (19)'s parameters (w1, w2, x of 512 MiB) are live at its
 * start, so the last rule links it (SPEC §4.3, issue 37).  With
 * --variant kept-batch the batch of 8 is live too, both modules'
 * arguments are, and it stays ambiguous, with candidates (12) and (19).
 * Figures: retrace-oom-ambiguous.json. */
void mk_build_retrace_oom_ambiguous(mk_scn *s, int host, int scale);
void mk_build_retrace_oom_ambiguous(mk_scn *s, int host, int scale)
{
	(void)host;
	retrace_run(s, scale, 0);
}

/* compile-oom: retrace-oom's program as today's JAX fails it.  The step
 * runs three times as jit_train_step(12); then the larger last batch is put
 * on the device (512 MiB, in use 1 GiB) and JAX compiles train_step for it:
 * XLA's GEMM autotuner tries 4 kernels, each with a 1.5 GiB scratch buffer
 * of the new shapes (in use 2.50 GiB = 89.6% of the pool), the fifth
 * scratch request fails (not an event: XLA names it in the error) and the
 * compilation stops: no module (19), no execution of it.  Figures:
 * compile-oom.json. */
void mk_build_compile_oom(mk_scn *s, int host, int scale);
void mk_build_compile_oom(mk_scn *s, int host, int scale)
{
	(void)host;
	mk_scn_init(s, "gpu-node-0", 1, MK_POOL_MEMORY, MK_POOL_CAPACITY);
	s->scale = scale;
	int m12 = retrace_step(s, 12, 8, 1);
	mk_put(s, 0, 256 * MiB, "f32[8192,8192]");
	mk_put(s, 0, 256 * MiB, "f32[8192,8192]");
	for (int k = 0; k < 3; k++) {
		int b = mk_put(s, 0, 256 * MiB, "f32[8,1024,8192]");
		mk_py(s, "$train.py:52 train_loop", 30 * 1000);
		mk_gap(s, 100 * 1000);
		int r = mk_exec(s, m12, -1, 0);
		mk_py(s, "$builtins float", 20 * 1000);
		mk_free(s, r);
		mk_free(s, r + 1);
		mk_free(s, b);
	}
	mk_put(s, 0, 512 * MiB, "f32[16,1024,8192]");
	mk_py(s, "$train.py:52 train_loop", 30 * 1000);
	mk_gap(s, 200 * 1000);
	mk_compile(s, "jit_train_step", 4, 1536 * MiB);
	mk_py(s, "$profiler.py:213 stop_trace", 50 * 1000);
}
