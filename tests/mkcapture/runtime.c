#include "runtime.h"

#include <stdlib.h>
#include <string.h>

#include "xspace.h"

#define US 1000ll
#define KERNEL_LAG_NS (30 * US)
#define KERNEL_NS (5 * US)
#define THUNK_NS (3 * US)
#define ALLOC_NS (3 * US)
#define MiB_ (1024ll * 1024)
#define GiB_ (1024 * MiB_)

const mk_variant mk_variants[] = {
	{ "new-client", MK_V_NEW_CLIENT,
	  "CommonPjRtLoadedExecutable::Execute (<module>) and ExecuteHelperOnSingleDevice; outputs allocated in "
	  "AllocateOutputBuffersWithInputReuse before <module>:XLA GPU module" },
	{ "capi", MK_V_CAPI,
	  "the C-API plugin pair PJRT_LoadedExecutable_Execute linkage > PJRT_LoadedExecutable_Execute around "
	  "every execution" },
	{ "frees-after", MK_V_FREES_AFTER,
	  "a failed set-up's frees come after Build buffer allocations (or AllocateOutputBuffers...) ended" },
	{ "events-after", MK_V_EVENTS_AFTER,
	  "after a failure: a host event inside the execution after the frees, Python reraise/cache_miss events" },
	{ "no-optional-stats", MK_V_NO_OPTIONAL_STATS,
	  "no fragmentation, peak_bytes_in_use, data_type, shape, id; no module_name on thunks; no kernel_details" },
	{ "shuffle", MK_V_SHUFFLE,
	  "host lines in reverse order with other thread ids; allocator and kernel lines' events written last first" },
	{ "nvidia", MK_V_NVIDIA,
	  "the device planes say device_vendor Nvidia, NVIDIA H100 80GB HBM3, compute capability 9.0" },
	{ "autotune", MK_V_AUTOTUNE,
	  "today's JAX's compilations: before each module's first call, a compile event on a python3 line and "
	  "3 autotuner runs (bare [0] GpuExecutable::ExecuteThunks) on a tf_pjrt_compile_thread_pool line" },
	{ "scope-tree", MK_V_SCOPE_TREE,
	  "a /host:__ScopeRangeCallStack__ plane after /host:metadata, as today's GPU tracer writes it: "
	  "plane stats whose metadata_id is a scope's id (no stat metadata) and whose value its parent's" },
	{ "kept-batch", MK_V_KEPT_BATCH,
	  "retrace scenarios: the script still holds its last batch (an iterator's prefetch) when it calls the "
	  "step with the new shape, so both compilations' arguments are live at that call" },
	{ "python-main", MK_V_PY_MAIN,
	  "--job: the Python tracer's call tree on the main thread's line, its calls between the host "
	  "events (post-processing merges /host:python-tracer into /host:CPU by thread)" },
};
const int mk_nvariants = (int)(sizeof mk_variants / sizeof mk_variants[0]);

int mk_parse_variants(const char *list, unsigned *flags, char *bad, size_t nbad)
{
	const char *p = list;
	*flags = 0;
	while (*p) {
		size_t n = strcspn(p, ",");
		int k;
		for (k = 0; k < mk_nvariants; k++)
			if (strlen(mk_variants[k].name) == n && strncmp(mk_variants[k].name, p, n) == 0)
				break;
		if (k == mk_nvariants) {
			snprintf(bad, nbad, "%.*s", (int)n, p);
			return -1;
		}
		*flags |= mk_variants[k].flag;
		p += n;
		if (*p == ',')
			p++;
	}
	return 0;
}

void mk_scn_init(mk_scn *s, const char *host, int ndev, uint64_t memory_size, int64_t capacity)
{
	unsigned variants = s->variants;
	memset(s, 0, sizeof *s);
	s->variants = variants;
	s->host = host;
	s->ndev = ndev;
	s->memory_size = memory_size;
	s->capacity = capacity;
	s->device_name = "AMD Instinct MI355X";
	s->vendor = "AMD";
	s->t = 2000 * US;
	s->scale = 1;
}

void mk_scn_release(mk_scn *s)
{
	for (int i = 0; i < s->nmods; i++) {
		hb_free(s->mods[i].hb);
		xpf_buf_release(&s->mods[i].hlo);
		free(s->mods[i].kthunks);
	}
	for (int i = 0; i < s->nmany; i++)
		xpf_buf_release(&s->many[i].hlo);
	free(s->many);
	free(s->acts);
	free(s->tmpl);
	memset(s, 0, sizeof *s);
}

int mk_add_module(mk_scn *s, hb_module *m, const char *fn, int64_t temp_size)
{
	if (s->nmods >= MK_MAX_MODULES)
		abort();
	mk_modinfo *mi = &s->mods[s->nmods];
	memset(mi, 0, sizeof *mi);
	mi->hb = m;
	mi->fn = fn;
	hb_encode(m, temp_size, &mi->hlo, &mi->stats);
	mi->nallocs = hb_runtime_allocs(m, mi->allocs, MK_MAX_RT_ALLOCS);
	for (int i = 0; i < mi->nallocs; i++)
		mi->nresults += mi->allocs[i].is_result;
	mi->nthunks = hb_thunks(m, mi->thunks, MK_MAX_THUNKS);
	return s->nmods++;
}

static mk_act *new_act(mk_scn *s, int kind)
{
	if (s->nacts == s->capacts) {
		s->capacts = s->capacts ? s->capacts * 2 : 256;
		s->acts = realloc(s->acts, (size_t)s->capacts * sizeof *s->acts);
		if (!s->acts)
			abort();
	}
	mk_act *a = &s->acts[s->nacts++];
	memset(a, 0, sizeof *a);
	a->kind = kind;
	a->t_ns = s->t;
	a->fail_at = -1;
	a->leader = 1;
	return a;
}

void mk_gap(mk_scn *s, int64_t ns) { s->t += ns; }

int mk_put(mk_scn *s, int dev, int64_t bytes, const char *shape)
{
	int first = s->nhandles;
	for (int d = 0; d < s->ndev; d++) {
		if (dev >= 0 && d != dev)
			continue;
		mk_act *a = new_act(s, ACT_PUT);
		a->dev = d;
		a->leader = dev >= 0 || d == 0;
		a->dur_ns = 40 * US;
		a->bytes = bytes;
		a->handle = s->nhandles++;
		snprintf(a->name, sizeof a->name, "%s", shape);
	}
	s->t += 40 * US + 10 * US;
	return first;
}

/* Offsets inside an execution, shared by the host and device lines. */
typedef struct exec_layout {
	int64_t build_start, build_end, thunks_start, thunks_end, module_end, end;
	int nalloc; /* allocations attempted successfully */
} exec_layout;

static void layout(const mk_modinfo *mi, int fail_at, int64_t retry_ns, exec_layout *l)
{
	l->build_start = 8 * US;
	l->nalloc = fail_at < 0 ? mi->nallocs : fail_at;
	if (fail_at >= 0) {
		/* allocations, the retry wait, then the allocated ones freed again */
		l->build_end = l->build_start + (1 + 2 * (int64_t)l->nalloc) * ALLOC_NS + retry_ns + 2 * US;
		l->thunks_start = l->thunks_end = l->module_end = l->build_end + 1 * US;
		l->end = l->module_end + 3 * US;
		return;
	}
	l->build_end = l->build_start + (1 + (int64_t)l->nalloc) * ALLOC_NS;
	l->thunks_start = l->build_end + 4 * US;
	l->thunks_end = l->thunks_start + (1 + (int64_t)mi->nthunks) * THUNK_NS;
	l->module_end = l->thunks_end + (2 + (int64_t)mi->nallocs) * ALLOC_NS;
	l->end = l->module_end + 3 * US;
}

int64_t mk_exec_duration(const mk_scn *s, int module, int fail_at, int64_t retry_ns)
{
	exec_layout l;
	const mk_modinfo *mi = &s->mods[module];
	layout(mi, fail_at, retry_ns, &l);
	if (fail_at >= 0)
		return l.end;
	int64_t kend = l.thunks_start + KERNEL_LAG_NS +
		(int64_t)(mi->nkernels ? mi->nkernels : mi->nthunks) * KERNEL_NS;
	return kend > l.end ? kend : l.end;
}

int mk_exec(mk_scn *s, int module, int fail_at, int64_t retry_ns)
{
	int first = s->nhandles;
	for (int d = 0; d < s->ndev; d++) {
		mk_act *a = new_act(s, ACT_EXEC);
		a->dev = d;
		a->leader = d == 0;
		a->module = module;
		a->fail_at = fail_at;
		a->retry_ns = retry_ns;
		a->handle = s->nhandles;
		s->nhandles += s->mods[module].nresults;
	}
	s->t += mk_exec_duration(s, module, fail_at, retry_ns) + 20 * US;
	return first;
}

void mk_free(mk_scn *s, int handle)
{
	/* find the device of the handle (one device: no search, --job frees
	 * hundreds of results a step) */
	int dev = 0;
	for (int i = s->ndev == 1 ? -1 : s->nacts - 1; i >= 0; i--) {
		const mk_act *a = &s->acts[i];
		if (a->kind == ACT_PUT && a->handle == handle) {
			dev = a->dev;
			break;
		}
		if (a->kind == ACT_EXEC && handle >= a->handle &&
		    handle < a->handle + s->mods[a->module].nresults) {
			dev = a->dev;
			break;
		}
	}
	mk_act *a = new_act(s, ACT_FREE);
	a->dev = dev;
	a->handle = handle;
	s->t += 2 * US;
}

void mk_py(mk_scn *s, const char *name, int64_t dur_ns)
{
	mk_act *a = new_act(s, ACT_PY);
	a->dur_ns = dur_ns;
	snprintf(a->name, sizeof a->name, "%s", name);
	s->t += dur_ns + 1 * US;
}

#define RUN_NS (20 * US)

void mk_compile(mk_scn *s, const char *fn, int runs, int64_t scratch)
{
	mk_act *a = new_act(s, ACT_COMPILE);
	a->count = runs;
	a->bytes = scratch;
	a->dev = 0;
	a->dur_ns = (runs + 2) * RUN_NS;
	snprintf(a->name, sizeof a->name, "%s", fn);
	s->t += a->dur_ns + 5 * US;
}

int mk_pytree(mk_scn *s, int64_t events, int64_t dur_ns)
{
	mk_act *a = new_act(s, ACT_PYTREE);
	a->count = events;
	a->dur_ns = dur_ns;
	return s->nacts - 1;
}

/* ---- --scale: the prefix steps ---- */

int64_t mk_nacts_total(const mk_scn *s)
{
	return s->prefix_steps * s->ntmpl + s->nacts;
}

const mk_act *mk_act_at(const mk_scn *s, int64_t i, mk_act *tmp)
{
	int64_t np = s->prefix_steps * s->ntmpl;
	const mk_act *x;
	if (i >= np) {
		x = &s->acts[i - np];
		if (s->prefix_ns == 0)
			return x;
		*tmp = *x;
		tmp->t_ns += s->prefix_ns;
		return tmp;
	}
	int64_t k = i / s->ntmpl;
	*tmp = s->tmpl[i % s->ntmpl];
	tmp->t_ns += k * s->step_ns;
	tmp->handle += (int)(k * s->step_handles);
	return tmp;
}

#define AUX_STAGES 24

static int add_aux_module(mk_scn *s)
{
	static const char *const ops[8] = {
		"multiply", "add", "subtract", "divide", "maximum", "exponential", "tanh", "negate"
	};
	uint64_t pid = 1;
	char nm[64];
	for (int i = 0; i < s->nmods; i++)
		if (hb_program_id(s->mods[i].hb) >= pid)
			pid = hb_program_id(s->mods[i].hb) + 1;
	hb_module *m = hb_new("jit_preprocess", pid);
	hb_arr xa = hb_a(ET_BF16, 2, 512, 1024), fa = hb_a(ET_F32, 2, 512, 1024);
	hb_meta mp = { NULL, "batch", NULL, NULL, 0 };
	hb_meta mf = { "convert_element_type", "jit(preprocess)/convert_element_type", "input.py",
		"preprocess", 30 };
	int64_t x = hb_param(m, "Arg_0.1", xa, &mp);
	hb_alloc_param(m, hb_buffer(m, x, -1, HB_PARAM));
	int64_t v = hb_fusion(m, "loop_convert_fusion", "kLoop", "convert", NULL, fa, &x, 1, &mf);
	hb_buffer(m, v, -1, HB_TEMP);
	for (int i = 0; i < AUX_STAGES; i++) {
		char opn[96];
		hb_meta ms = mf;
		snprintf(nm, sizeof nm, "loop_%s_fusion.%d", ops[i % 8], i);
		snprintf(opn, sizeof opn, "jit(preprocess)/augment/%s", ops[i % 8]);
		ms.op_type = ops[i % 8];
		ms.op_name = opn;
		ms.line = 31 + i;
		v = hb_fusion(m, nm, "kLoop", ops[i % 8], NULL, fa, &v, 1, &ms);
		hb_buffer(m, v, -1, HB_TEMP);
	}
	hb_meta mr = { "reduce_sum", "jit(preprocess)/mean/reduce_sum", "input.py", "preprocess", 60 };
	int64_t mean = hb_fusion(m, "input_reduce_fusion", "kInput", "reduce", NULL, hb_a(ET_F32, 1, 1024),
		&v, 1, &mr);
	hb_alloc_output(m, hb_buffer(m, mean, -1, HB_OUTPUT));
	hb_meta mc = { "convert_element_type", "jit(preprocess)/convert_element_type", "input.py",
		"preprocess", 61 };
	int64_t out = hb_fusion(m, "loop_convert_fusion.1", "kLoop", "convert", NULL, xa, &v, 1, &mc);
	hb_alloc_output(m, hb_buffer(m, out, -1, HB_OUTPUT));
	int64_t outs[2] = { out, mean };
	int64_t r = hb_root_tuple(m, outs, 2);
	hb_alloc_output(m, hb_buffer(m, r, -1, HB_OUTPUT));
	return mk_add_module(s, m, "preprocess", 0);
}

void mk_scale_prefix(mk_scn *s)
{
	if (s->tmpl)
		return;
	int mod = add_aux_module(s);
	mk_act *orig = s->acts;
	int norig = s->nacts, cap = s->capacts;
	int64_t t0 = 2000 * US;
	if (norig && orig[0].t_ns < t0)
		t0 = orig[0].t_ns;
	s->base_t = s->t;
	s->base_handles = s->nhandles;
	s->acts = NULL;
	s->nacts = s->capacts = 0;
	s->t = t0;
	/* one step: next batch, put, preprocess, the batch and results dropped */
	mk_py(s, "$input.py:42 next_batch", 12 * US);
	int b = mk_put(s, -1, 1 * MiB_, "bf16[512,1024]");
	int r = mk_exec(s, mod, -1, 0);
	mk_py(s, "$input.py:47 <genexpr>", 4 * US);
	for (int d = 0; d < s->ndev; d++)
		mk_free(s, b + d);
	for (int d = 0; d < s->ndev; d++)
		for (int k = 0; k < s->mods[mod].nresults; k++)
			mk_free(s, r + d * s->mods[mod].nresults + k);
	mk_gap(s, 10 * US);
	s->step_ns = s->t - t0;
	s->step_handles = s->nhandles - s->base_handles;
	s->tmpl = s->acts;
	s->ntmpl = s->nacts;
	s->acts = orig;
	s->nacts = norig;
	s->capacts = cap;
	mk_set_prefix_steps(s, 0);
}

void mk_set_prefix_steps(mk_scn *s, int64_t steps)
{
	if (!s->tmpl)
		return;
	if ((int64_t)s->base_handles + steps * s->step_handles > 0x7fffffff)
		abort();
	s->prefix_steps = steps;
	s->prefix_ns = steps ? steps * s->step_ns + 100 * US : 0;
	s->t = s->base_t + s->prefix_ns;
	s->nhandles = s->base_handles + (int)(steps * s->step_handles);
}

void mk_add_big_module(mk_scn *s, int64_t n)
{
	enum { FAN = 8, NPARAM = 16 };
	static const char *const roots[6] = { "multiply", "add", "tanh", "exponential", "subtract", "convert" };
	uint64_t pid = 1;
	char nm[64], opn[96];
	int64_t params[NPARAM], prev[FAN];
	if (n < 100)
		n = 100;
	for (int i = 0; i < s->nmods; i++)
		if (hb_program_id(s->mods[i].hb) >= pid)
			pid = hb_program_id(s->mods[i].hb) + 1;
	hb_module *m = hb_new("jit_big_model", pid);
	for (int i = 0; i < NPARAM; i++) {
		hb_meta mp = { NULL, opn, NULL, NULL, 0 };
		snprintf(opn, sizeof opn, "params['layer_%d']['kernel']", i);
		snprintf(nm, sizeof nm, "Arg_%d.%d", i, i + 1);
		params[i] = hb_param(m, nm, hb_a(ET_BF16, 2, 1024, 1024), &mp);
		hb_alloc_param(m, hb_buffer(m, params[i], -1, HB_PARAM));
	}
	/* each fusion: itself, a fused computation of one parameter per operand and a root */
	int64_t nf = (n - NPARAM) / (FAN + 2), np = 0, last = params[0];
	for (int64_t f = 0; f < nf; f++) {
		int64_t ops[FAN];
		int nops = 0;
		ops[nops++] = params[f % NPARAM];
		for (int64_t k = 0; k < np && nops < FAN; k++)
			ops[nops++] = prev[(np - 1 - k) % FAN];
		for (; nops < FAN; nops++)
			ops[nops] = params[(f + nops) % NPARAM];
		const char *root = roots[f % 6];
		hb_meta mf = { root, opn, "model.py", "Block.__call__", 100 + (int)(f % 400) };
		snprintf(opn, sizeof opn, "jit(big_model)/layer_%lld/%s", (long long)(f / 12), root);
		snprintf(nm, sizeof nm, "loop_%s_fusion.%lld", root, (long long)f);
		int rows = 64 << (f % 5);
		last = hb_fusion(m, nm, "kLoop", root, NULL, hb_a(ET_BF16, 2, rows, 1024), ops, nops, &mf);
		hb_buffer(m, last, -1, HB_TEMP);
		prev[np % FAN] = last;
		np++;
	}
	hb_meta mo = { "copy", "jit(big_model)/copy", "model.py", "Model.__call__", 20 };
	int64_t out = hb_fusion(m, "loop_copy_fusion", "kLoop", "copy", NULL, hb_a(ET_BF16, 2, 64, 1024),
		&last, 1, &mo);
	hb_alloc_output(m, hb_buffer(m, out, -1, HB_OUTPUT));
	int64_t r = hb_root_tuple(m, &out, 1);
	hb_alloc_output(m, hb_buffer(m, r, -1, HB_OUTPUT));
	mk_add_module(s, m, "big_model", 0);
}

int mk_add_many_modules(mk_scn *s, const char *spec, char *bad, size_t nbad)
{
	char *end;
	long long n = strtoll(spec, &end, 10);
	int unique = 0, reverse = 0;
	long long from = 0, broken = 0;
	char stem[64] = "jit_many";
	if (end == spec || n < 1 || n > 1000000) {
		snprintf(bad, nbad, "%s", spec);
		return -1;
	}
	for (const char *p = end; *p;) {
		if (*p++ != ',') {
			snprintf(bad, nbad, "%s", p - 1);
			return -1;
		}
		size_t k = strcspn(p, ",");
		if (k == 6 && strncmp(p, "unique", 6) == 0)
			unique = 1;
		else if (k == 7 && strncmp(p, "reverse", 7) == 0)
			reverse = 1;
		else if (k > 5 && strncmp(p, "from=", 5) == 0 && (from = strtoll(p + 5, NULL, 10)) >= 0 &&
			 from <= 1000000)
			;
		else if (k > 7 && strncmp(p, "broken=", 7) == 0 &&
			 (broken = strtoll(p + 7, NULL, 10)) >= 1 && broken <= 1000000)
			;
		else if (k > 5 && k - 5 < sizeof stem && strncmp(p, "stem=", 5) == 0)
			snprintf(stem, sizeof stem, "%.*s", (int)(k - 5), p + 5);
		else {
			snprintf(bad, nbad, "%.*s", (int)k, p);
			return -1;
		}
		p += k;
	}
	uint64_t pid = 1;
	for (int i = 0; i < s->nmods; i++)
		if (hb_program_id(s->mods[i].hb) >= pid)
			pid = hb_program_id(s->mods[i].hb) + 1;
	s->many = calloc((size_t)n, sizeof *s->many);
	if (s->many == NULL)
		abort();
	for (long long k = 0; k < n; k++) {
		long long dim = from + (reverse ? n - 1 - k : k) + 1;
		char nm[96];
		if (unique)
			snprintf(nm, sizeof nm, "%s_%lld", stem, k);
		else
			snprintf(nm, sizeof nm, "%s", stem);
		hb_module *m = hb_new(nm, pid + (uint64_t)k);
		hb_meta md = { NULL, "x", NULL, NULL, 0 };
		int64_t x = hb_param(m, "Arg_0.1", hb_a(ET_F32, 1, dim), &md);
		hb_alloc_param(m, hb_buffer(m, x, -1, HB_PARAM));
		hb_meta mo = { "add", "jit(many)/add", "many.py", "f", 10 };
		int64_t out = hb_fusion(m, "loop_add_fusion", "kLoop", "add", NULL, hb_a(ET_F32, 1, dim),
			&x, 1, &mo);
		hb_alloc_output(m, hb_buffer(m, out, -1, HB_OUTPUT));
		int64_t r = hb_root_tuple(m, &out, 1);
		hb_alloc_output(m, hb_buffer(m, r, -1, HB_OUTPUT));
		mk_many *e = &s->many[s->nmany++];
		hb_stats st;
		snprintf(e->name, sizeof e->name, "%s(%llu)", nm, (unsigned long long)(pid + (uint64_t)k));
		e->program_id = pid + (uint64_t)k;
		hb_encode(m, 0, &e->hlo, &st);
		hb_free(m);
		if (broken && k % broken == broken - 1)
			e->hlo.len /= 2; /* a field cut short: its plan cannot be read */
	}
	return 0;
}

/* --big-step: the step of a big real job is one module of hundreds of
 * thousands of instructions that runs, and it is the one the diagnosis
 * breaks down.  Its shape, per n instructions: ~n/10 loop fusions (each with
 * its fused computation of up to eight parameters and a root) chained
 * through temp buffers, as in mk_add_big_module; n/100 weight parameters
 * holding 72 GiB in all, the first 512 donated (a train state, so that its
 * need outweighs every scenario's plan while it still fits the 76 GiB pools
 * of scan-fits); n/400 small f32 parameters, each with an output of its
 * shape that is not aliased (the outputs-like-undonated-params hint).  Every
 * instruction, buffer and parameter count grows with n, so that the plan's
 * passes meet modules of every size.  It runs once, on every device, after
 * the scenario's script. */
void mk_add_big_step(mk_scn *s, int64_t n)
{
	int mod = mk_big_step_module(s, n, 400);
	mk_gap(s, 100 * US);
	mk_exec(s, mod, -1, 0);
}

int mk_big_step_module(mk_scn *s, int64_t n, int64_t per_output)
{
	enum { FAN = 8, NDONATED = 512 };
	static const char *const roots[6] = { "multiply", "add", "tanh", "exponential", "subtract", "convert" };
	int64_t nw = n / 100 > 16 ? n / 100 : 16, nb = n / per_output > 4 ? n / per_output : 4, np = 0;
	int64_t rows = 72 * GiB_ / (nw * 1024 * 2); /* bf16[rows,1024] weights */
	uint64_t pid = 1;
	char nm[64], opn[96];
	int64_t *params = malloc((size_t)(nw + nb) * sizeof *params), prev[FAN];
	int64_t *outs = malloc((size_t)(nw + nb + 1) * sizeof *outs);
	int nouts = 0;
	if (params == NULL || outs == NULL)
		abort();
	for (int i = 0; i < s->nmods; i++)
		if (hb_program_id(s->mods[i].hb) >= pid)
			pid = hb_program_id(s->mods[i].hb) + 1;
	hb_module *m = hb_new("jit_big_step", pid);
	for (int64_t i = 0; i < nw + nb; i++) {
		hb_meta mp = { NULL, opn, NULL, NULL, 0 };
		hb_arr a = i < nw ? hb_a(ET_BF16, 2, (int)rows, 1024) : hb_a(ET_F32, 1, 1024);
		snprintf(opn, sizeof opn, i < nw ? "params['layer_%lld']['kernel']" :
			 "params['layer_%lld']['scale']", (long long)(i < nw ? i : i - nw));
		snprintf(nm, sizeof nm, "Arg_%lld.%lld", (long long)i, (long long)i + 1);
		params[i] = hb_param(m, nm, a, &mp);
		hb_alloc_param(m, hb_buffer(m, params[i], -1, HB_PARAM));
	}
	int64_t nf = (n - 2 * nw - 3 * nb) / (FAN + 2), last = params[0];
	for (int64_t f = 0; f < nf; f++) {
		int64_t ops[FAN];
		int nops = 0;
		ops[nops++] = params[f % nw];
		for (int64_t k = 0; k < np && nops < FAN; k++)
			ops[nops++] = prev[(np - 1 - k) % FAN];
		for (; nops < FAN; nops++)
			ops[nops] = params[(f + nops) % nw];
		const char *root = roots[f % 6];
		hb_meta mf = { root, opn, "model.py", "Block.__call__", 100 + (int)(f % 400) };
		snprintf(opn, sizeof opn, "jit(big_step)/layer_%lld/%s", (long long)(f / 12), root);
		snprintf(nm, sizeof nm, "loop_%s_fusion.%lld", root, (long long)f);
		last = hb_fusion(m, nm, "kLoop", root, NULL, hb_a(ET_BF16, 2, 64 << (f % 5), 1024),
			ops, nops, &mf);
		hb_buffer(m, last, -1, HB_TEMP);
		prev[np % FAN] = last;
		np++;
	}
	/* the new weights (the first NDONATED in their parameters' memory), then
	 * the small outputs */
	for (int64_t i = 0; i < nw + nb; i++) {
		int64_t ops[2] = { params[i], last };
		hb_meta mu = { "add", "jit(big_step)/update/add", "optim.py", "apply_updates", 12 };
		snprintf(nm, sizeof nm, "loop_add_fusion.update.%lld", (long long)i);
		if (i < nw && i < NDONATED) {
			outs[nouts] = hb_fusion(m, nm, "kLoop", "add", NULL, hb_a(ET_BF16, 2, (int)rows, 1024),
				ops, 2, &mu);
			hb_buffer(m, outs[nouts], -1, HB_OUTPUT);
			hb_io_alias(m, nouts++, (int)i);
		} else if (i >= nw) {
			outs[nouts] = hb_fusion(m, nm, "kLoop", "add", NULL, hb_a(ET_F32, 1, 1024), ops, 2, &mu);
			hb_alloc_output(m, hb_buffer(m, outs[nouts++], -1, HB_OUTPUT));
		}
	}
	int64_t r = hb_root_tuple(m, outs, nouts);
	hb_alloc_output(m, hb_buffer(m, r, -1, HB_OUTPUT));
	free(params);
	free(outs);
	return mk_add_module(s, m, "big_step", 0);
}

uint64_t mk_count_bytes(mk_scn *s)
{
	uint64_t n = 0;
	mk_write_xspace(s, NULL, &n, NULL);
	return n;
}

/* ---- metadata ids, looked up once per line ---- */

enum {
	E_ALLOC, E_DEALLOC, E_HELPER, E_BUILD, E_RETRY, E_RESOLVE, E_THUNKS, E_EXECUTE,
	E_DEVPUT, E_BATCHED, E_BFHB, E_NC_HELPER, E_NC_OUTPUTS, E_CAPI_LINK, E_CAPI, E_AFTER,
	E_PY_CACHE_MISS, E_PY_RERAISE, E_N
};
static const char *const ev_names[E_N] = {
	"MemoryAllocation", "MemoryDeallocation", "PjRtStreamExecutorLoadedExecutable::ExecuteHelper",
	"Build buffer allocations", "AllocatorRetry::AllocateRaw", "Resolve constant globals",
	"GpuExecutable::ExecuteThunks", "PjRtStreamExecutorLoadedExecutable::Execute", "DevicePut",
	"batched_copy_array_to_devices_with_sharding", "PjRtStreamExecutorClient::BufferFromHostBuffer",
	/* new-client */
	"CommonPjRtLoadedExecutable::ExecuteHelperOnSingleDevice", "AllocateOutputBuffersWithInputReuse",
	/* capi */
	"PJRT_LoadedExecutable_Execute linkage", "PJRT_LoadedExecutable_Execute",
	/* events-after: a generic bookkeeping event (not execute-family: the
	 * error path records none of its own), then the Python tracer's frames
	 * of the exception on its way out */
	"ScopedAnnotation", "$api.py:1212 cache_miss", "$traceback_util.py:175 reraise_with_filtered_traceback",
};
enum {
	S_ALLOCATOR, S_RESERVED, S_ALLOCATED, S_AVAILABLE, S_FRAG, S_PEAK, S_REQ, S_ABYTES, S_ADDR,
	S_ID, S_DTYPE, S_SHAPE, S_MODNAME, S_PT, S_P, S_CORR, S_KDET, S_TFOP, S_HLOMOD, S_PROGID,
	S_HLOOP, S_XLAMOD, S_N
};
static const char *const st_names[S_N] = {
	"allocator_name", "bytes_reserved", "bytes_allocated", "bytes_available", "fragmentation",
	"peak_bytes_in_use", "requested_bytes", "allocation_bytes", "addr", "id", "data_type", "shape",
	"module_name", "_pt", "_p", "correlation_id", "kernel_details", "tf_op", "hlo_module",
	"program_id", "hlo_op", "XlaModule:",
};

typedef struct mod_ids {
	int64_t mod_ev, pjit_ev, name_ref;
	int64_t nc_exec_ev, nc_dexec_ev; /* new-client: (<name>) and [<d>] ... (<name>) */
	int64_t *thunk_ev, *kern_ev, *det_ref, *hlo_ref; /* per thunk */
} mod_ids;

#define NAME_CACHE 8
typedef struct rt_ids {
	int64_t ev[E_N], st[S_N];
	int64_t alloc_ref;
	int64_t nc_thunks_ev; /* new-client: [<d>] GpuExecutable::ExecuteThunks */
	mod_ids mod[MK_MAX_MODULES];
	int64_t *py_ids; /* mk_pytree_emit's names */
	/* recently used free-form names (Python events, shapes) */
	char names[2][NAME_CACHE][96];
	int64_t name_id[2][NAME_CACHE];
	int name_next[2];
} rt_ids;

static void rt_ids_release(rt_ids *c)
{
	for (int m = 0; m < MK_MAX_MODULES; m++)
		free(c->mod[m].thunk_ev);
	free(c->py_ids);
	memset(c, 0, sizeof *c);
}

static int64_t EV(xp_emit *e, rt_ids *c, int k)
{
	return c->ev[k] ? c->ev[k] : (c->ev[k] = xp_ev_meta(e, ev_names[k]));
}

static int64_t ST(xp_emit *e, rt_ids *c, int k)
{
	return c->st[k] ? c->st[k] : (c->st[k] = xp_st_meta(e, st_names[k]));
}

/* table 0: event names, 1: stat names (ref values) */
static int64_t name_id(xp_emit *e, rt_ids *c, int table, const char *name)
{
	for (int i = 0; i < NAME_CACHE; i++)
		if (c->name_id[table][i] && strcmp(c->names[table][i], name) == 0)
			return c->name_id[table][i];
	int64_t id = table == 0 ? xp_ev_meta(e, name) : xp_st_meta(e, name);
	if (strlen(name) < sizeof c->names[table][0]) {
		int k = c->name_next[table]++ % NAME_CACHE;
		strcpy(c->names[table][k], name);
		c->name_id[table][k] = id;
	}
	return id;
}

static mod_ids *MOD(rt_ids *c, const mk_modinfo *mi, int module)
{
	mod_ids *m = &c->mod[module];
	if (!m->thunk_ev) {
		size_t n = (size_t)(mi->nkernels > mi->nthunks ? mi->nkernels : mi->nthunks) + 1;
		m->thunk_ev = calloc(4 * n, sizeof *m->thunk_ev);
		if (!m->thunk_ev)
			abort();
		m->kern_ev = m->thunk_ev + n;
		m->det_ref = m->kern_ev + n;
		m->hlo_ref = m->det_ref + n;
	}
	return m;
}

/* ---- BFC simulation ---- */

typedef struct blk {
	int64_t off, size;
	int handle;
} blk;

typedef struct bfc {
	const mk_scn *s;
	rt_ids *ids;
	int dev;
	char name[32];
	int64_t cap, in_use, peak;
	blk *b;
	int n, capb;
	int64_t *h_off; /* per handle: offset, -1 when not live */
	int64_t *h_size;
	int64_t *h_req;
} bfc;

static void bfc_init(bfc *a, const mk_scn *s, int dev, rt_ids *ids)
{
	memset(a, 0, sizeof *a);
	a->s = s;
	a->ids = ids;
	a->dev = dev;
	snprintf(a->name, sizeof a->name, "GPU_%d_bfc", dev);
	a->cap = s->capacity;
	a->in_use = s->pre_bytes[dev];
	a->peak = a->in_use;
	size_t nh = (size_t)s->nhandles + 1;
	a->h_off = malloc(nh * sizeof *a->h_off);
	a->h_size = calloc(nh, sizeof *a->h_size);
	a->h_req = calloc(nh, sizeof *a->h_req);
	if (!a->h_off || !a->h_size || !a->h_req)
		abort();
	for (size_t i = 0; i < nh; i++)
		a->h_off[i] = -1;
	a->capb = 64;
	a->b = malloc((size_t)a->capb * sizeof *a->b);
	if (!a->b)
		abort();
	if (a->in_use > 0) {
		a->b[0].off = 0;
		a->b[0].size = a->in_use;
		a->b[0].handle = -1;
		a->n = 1;
	}
}

static void bfc_release(bfc *a)
{
	free(a->b);
	free(a->h_off);
	free(a->h_size);
	free(a->h_req);
}

static int64_t round256(int64_t n)
{
	return n < 256 ? 256 : (n + 255) & ~(int64_t)255;
}

static uint64_t bfc_addr(const bfc *a, int64_t off)
{
	return 0x7f1c00000000ull + ((uint64_t)a->dev << 40) + (uint64_t)off;
}

/* First fit; returns the offset or -1 when no chunk is large enough. */
static int64_t bfc_find(const bfc *a, int64_t size)
{
	int64_t off = 0;
	for (int i = 0; i < a->n; i++) {
		if (a->b[i].off - off >= size)
			return off;
		off = a->b[i].off + a->b[i].size;
	}
	return a->cap - off >= size ? off : -1;
}

static double bfc_frag(const bfc *a)
{
	int64_t off = 0, largest = 0, free_b = a->cap - a->in_use;
	for (int i = 0; i < a->n; i++) {
		if (a->b[i].off - off > largest)
			largest = a->b[i].off - off;
		off = a->b[i].off + a->b[i].size;
	}
	if (a->cap - off > largest)
		largest = a->cap - off;
	if (free_b <= 0)
		return 0;
	return (double)(free_b - largest) / (double)free_b;
}

static void alloc_stats(xp_emit *e, const bfc *a, int64_t req, int64_t size, int64_t off,
	const char *shape)
{
	rt_ids *c = a->ids;
	double frag = bfc_frag(a);
	if (!c->alloc_ref)
		c->alloc_ref = xp_st_meta(e, a->name); /* the value is interned before the key */
	xp_st_ref_id(e, ST(e, c, S_ALLOCATOR), c->alloc_ref);
	xp_st_i64_id(e, ST(e, c, S_RESERVED), 0);
	xp_st_i64_id(e, ST(e, c, S_ALLOCATED), a->in_use);
	xp_st_i64_id(e, ST(e, c, S_AVAILABLE), a->cap - a->in_use);
	if (a->s->variants & MK_V_NO_OPTIONAL_STATS) {
		/* the stats a reader may not count on: fragmentation, peak, id,
		 * data_type, shape */
		xp_st_i64_id(e, ST(e, c, S_REQ), req);
		xp_st_i64_id(e, ST(e, c, S_ABYTES), size);
		xp_st_i64_id(e, ST(e, c, S_ADDR), (int64_t)bfc_addr(a, off));
		return;
	}
	if (frag == 0)
		xp_st_i64_id(e, ST(e, c, S_FRAG), 0);
	else
		xp_st_dbl_id(e, ST(e, c, S_FRAG), frag);
	xp_st_i64_id(e, ST(e, c, S_PEAK), a->peak);
	xp_st_i64_id(e, ST(e, c, S_REQ), req);
	xp_st_i64_id(e, ST(e, c, S_ABYTES), size);
	xp_st_i64_id(e, ST(e, c, S_ADDR), (int64_t)bfc_addr(a, off));
	xp_st_i64_id(e, ST(e, c, S_ID), 0);
	xp_st_i64_id(e, ST(e, c, S_DTYPE), 0);
	if (shape && *shape) {
		int64_t r = name_id(e, c, 1, shape);
		xp_st_ref_id(e, ST(e, c, S_SHAPE), r);
	}
}

/* Allocate `req` bytes for handle h (h < 0: scratch, returned offset is the
 * key) at time t.  Aborts when the scenario's plan does not match the pool. */
static int64_t bfc_alloc(bfc *a, xp_emit *e, int64_t t, int h, int64_t req, const char *shape)
{
	int64_t size = round256(req);
	int64_t off = bfc_find(a, size);
	if (off < 0) {
		fprintf(stderr, "xplane-mkcapture: %s: %s out of memory for %lld bytes (in use %lld)\n",
			a->s->host, a->name, (long long)req, (long long)a->in_use);
		abort();
	}
	if (a->n == a->capb) {
		a->capb *= 2;
		a->b = realloc(a->b, (size_t)a->capb * sizeof *a->b);
		if (!a->b)
			abort();
	}
	int k = a->n;
	while (k > 0 && a->b[k - 1].off > off) {
		a->b[k] = a->b[k - 1];
		k--;
	}
	a->b[k].off = off;
	a->b[k].size = size;
	a->b[k].handle = h;
	a->n++;
	a->in_use += size;
	if (a->in_use > a->peak)
		a->peak = a->in_use;
	if (h >= 0) {
		a->h_off[h] = off;
		a->h_size[h] = size;
		a->h_req[h] = req;
	}
	if (e && !a->s->no_runtime) {
		xp_ev_begin_id(e, EV(e, a->ids, E_ALLOC), t * 1000, 0);
		alloc_stats(e, a, req, size, off, shape);
	}
	return off;
}

static void bfc_free_off(bfc *a, xp_emit *e, int64_t t, int64_t off, int64_t req)
{
	int k;
	for (k = a->n - 1; k >= 0; k--)
		if (a->b[k].off == off)
			break;
	if (k < 0)
		abort();
	int64_t size = a->b[k].size;
	memmove(&a->b[k], &a->b[k + 1], (size_t)(a->n - k - 1) * sizeof *a->b);
	a->n--;
	a->in_use -= size;
	if (e && !a->s->no_runtime) {
		xp_ev_begin_id(e, EV(e, a->ids, E_DEALLOC), t * 1000, 0);
		alloc_stats(e, a, req, size, off, NULL);
	}
}

static int bfc_fits(const bfc *a, int64_t req)
{
	return bfc_find(a, round256(req)) >= 0;
}

/* ---- line generators ---- */

typedef struct line_ctx {
	mk_scn *s;
	int role; /* 0 main thread, 1 device thread, 2 python, 3 device stream,
		     4 python3 (compiles), 5 compile pool */
	int dev;
	rt_ids *ids;
} line_ctx;

static int dev_line_is_main(const mk_scn *s) { return s->ndev == 1; }

static void span_id(xp_emit *e, int64_t id, int64_t t0, int64_t t1)
{
	xp_ev_begin_id(e, id, t0 * 1000, (t1 - t0) * 1000);
}

/* The execution on its device's line.  Old client (default):
 *   ExecuteHelper > <module>:XLA GPU module > Build buffer allocations
 *   (every runtime allocation, in index order), Resolve constant globals,
 *   GpuExecutable::ExecuteThunks > thunks.
 * new-client: [<d>] CommonPjRtLoadedExecutable::Execute (<module>) (several
 *   devices) > ExecuteHelperOnSingleDevice > AllocateOutputBuffersWithInputReuse
 *   (the results), then <module>:XLA GPU module > Build buffer allocations
 *   (the rest: root tuple table, temp block).  The allocations keep the
 *   builder's index order and times: the modules list their results before
 *   the tuple table and the temp block (hb_runtime_allocs), which is the new
 *   client's order too, so the outputs-then-rest split cuts that order in
 *   two without reordering it (a module that interleaved them would abort
 *   here rather than change the requested_bytes sequence).
 * A failed set-up (fail_at >= 0): the allocations before fail_at, an
 *   AllocatorRetry wait, then the allocated ones freed again in reverse,
 *   inside the span that failed (Build, or AllocateOutputBuffers... when an
 *   output fails under new-client); frees-after ends that span (and the
 *   module span) right after the wait, the frees following inside the
 *   helper; events-after adds a short host event after the frees. */
static void emit_exec_device_part(mk_scn *s, xp_emit *e, bfc *a, const mk_act *x)
{
	const mk_modinfo *mi = &s->mods[x->module];
	const char *mname = hb_name(mi->hb);
	rt_ids *c = a->ids;
	mod_ids *mc = MOD(c, mi, x->module);
	exec_layout l;
	int64_t t = x->t_ns;
	int64_t offs[MK_MAX_RT_ALLOCS];
	const unsigned v = s->variants;
	const int nc = (v & MK_V_NEW_CLIENT) != 0, failed = x->fail_at >= 0;
	layout(mi, x->fail_at, x->retry_ns, &l);

	/* the failed set-up's span ends after the wait (frees-after) or after the frees */
	int64_t tr = t + l.build_start + (1 + (int64_t)l.nalloc) * ALLOC_NS; /* the retry wait */
	int64_t build_end = t + l.build_end, module_end = t + l.module_end;
	if (failed && (v & MK_V_FREES_AFTER)) {
		build_end = tr + x->retry_ns + 1 * US;
		module_end = build_end + US / 2;
	}
	if (nc && s->ndev > 1) {
		if (!mc->nc_dexec_ev) {
			char nm[320];
			snprintf(nm, sizeof nm, "[%d] CommonPjRtLoadedExecutable::Execute (%s)", a->dev, mname);
			mc->nc_dexec_ev = xp_ev_meta(e, nm);
		}
		span_id(e, mc->nc_dexec_ev, t + 3 * US, t + l.end - 3 * US / 2);
	}
	span_id(e, EV(e, c, nc ? E_NC_HELPER : E_HELPER), t + 4 * US, t + l.end - 2 * US);
	int module_span = 1;
	int64_t build_start = t + l.build_start, module_start = t + 6 * US;
	if (nc) {
		int nres = 0;
		while (nres < mi->nallocs && mi->allocs[nres].is_result)
			nres++;
		for (int i = nres; i < mi->nallocs; i++)
			if (mi->allocs[i].is_result) {
				fprintf(stderr, "xplane-mkcapture: %s: %s lists a result after a non-result allocation\n",
					s->host, mname);
				abort();
			}
		int64_t ao_end = t + l.build_start + (int64_t)nres * ALLOC_NS + 1 * US;
		if (failed && x->fail_at < nres) {
			ao_end = build_end; /* an output failed: the module never ran */
			module_span = 0;
		}
		span_id(e, EV(e, c, E_NC_OUTPUTS), t + 5 * US, ao_end);
		module_start = ao_end + US / 2;
		build_start = ao_end + 1 * US;
	}
	if (module_span) {
		if (!mc->mod_ev) {
			char nm[256];
			snprintf(nm, sizeof nm, "%s:XLA GPU module", mname);
			mc->mod_ev = xp_ev_meta(e, nm);
		}
		span_id(e, mc->mod_ev, module_start, module_end);
		span_id(e, EV(e, c, E_BUILD), build_start, build_end);
	}
	int r = 0;
	for (int i = 0; i < l.nalloc; i++) {
		const hb_rt_alloc *ra = &mi->allocs[i];
		int64_t ta = t + l.build_start + (1 + i) * ALLOC_NS;
		if (ra->is_result) {
			int h = x->handle + r++;
			offs[i] = bfc_alloc(a, e, ta, h, ra->bytes, NULL);
		} else {
			offs[i] = bfc_alloc(a, e, ta, -1, ra->bytes, NULL);
		}
	}
	if (failed) {
		if (bfc_fits(a, mi->allocs[x->fail_at].bytes)) {
			fprintf(stderr, "xplane-mkcapture: %s: planned failure of %s allocation %d fits\n",
				s->host, mname, x->fail_at);
			abort();
		}
		span_id(e, EV(e, c, E_RETRY), tr, tr + x->retry_ns);
		for (int i = l.nalloc - 1, k = 0; i >= 0; i--, k++) {
			int64_t td = tr + x->retry_ns + (1 + k) * ALLOC_NS;
			bfc_free_off(a, e, td, offs[i], mi->allocs[i].bytes);
		}
		for (int h = x->handle; h < x->handle + mi->nresults; h++)
			a->h_off[h] = -1;
		if (v & MK_V_EVENTS_AFTER) /* after the frees and the module span, inside the helper */
			span_id(e, EV(e, c, E_AFTER), t + l.end - 2800, t + l.end - 2300);
		xp_flush(e);
		return;
	}
	span_id(e, EV(e, c, E_RESOLVE), t + l.build_end + 1 * US, t + l.build_end + 3 * US);
	if (nc) {
		if (!c->nc_thunks_ev) {
			char nm[64];
			snprintf(nm, sizeof nm, "[%d] GpuExecutable::ExecuteThunks", a->dev);
			c->nc_thunks_ev = xp_ev_meta(e, nm);
		}
		span_id(e, c->nc_thunks_ev, t + l.thunks_start, t + l.thunks_end);
	} else {
		span_id(e, EV(e, c, E_THUNKS), t + l.thunks_start, t + l.thunks_end);
	}
	if (!(v & MK_V_NO_OPTIONAL_STATS)) {
		if (!mc->name_ref)
			mc->name_ref = xp_st_meta(e, mname);
		xp_st_ref_id(e, ST(e, c, S_MODNAME), mc->name_ref);
	}
	for (int i = 0; i < mi->nthunks; i++) {
		int64_t th = t + l.thunks_start + (1 + i) * THUNK_NS;
		if (!mc->thunk_ev[i])
			mc->thunk_ev[i] = xp_ev_meta(e, mi->thunks[i]);
		span_id(e, mc->thunk_ev[i], th, th + THUNK_NS / 2);
	}
	/* scratch (temp block, tuple tables) goes back when the execution ends */
	for (int i = 0, k = 0; i < mi->nallocs; i++) {
		if (mi->allocs[i].is_result)
			continue;
		int64_t td = t + l.thunks_end + (1 + k++) * ALLOC_NS;
		bfc_free_off(a, e, td, offs[i], mi->allocs[i].bytes);
	}
	xp_flush(e);
}

/* The main thread's part: PjitFunction(<fn>) > [capi: PJRT_LoadedExecutable_Execute
 * linkage > PJRT_LoadedExecutable_Execute >] the client's Execute. */
static void emit_exec_main_part(mk_scn *s, xp_emit *e, rt_ids *c, const mk_act *x, int64_t index)
{
	const mk_modinfo *mi = &s->mods[x->module];
	mod_ids *mc = MOD(c, mi, x->module);
	exec_layout l;
	layout(mi, x->fail_at, x->retry_ns, &l);
	if (!mc->pjit_ev) {
		char nm[160];
		snprintf(nm, sizeof nm, "PjitFunction(%s)", mi->fn);
		mc->pjit_ev = xp_ev_meta(e, nm);
	}
	span_id(e, mc->pjit_ev, x->t_ns, x->t_ns + l.end);
	if (s->variants & MK_V_CAPI) {
		span_id(e, EV(e, c, E_CAPI_LINK), x->t_ns + 1000, x->t_ns + l.end - 500);
		span_id(e, EV(e, c, E_CAPI), x->t_ns + 1500, x->t_ns + l.end - 750);
	}
	int64_t exec_ev;
	if (s->variants & MK_V_NEW_CLIENT) {
		if (!mc->nc_exec_ev) {
			char nm[320];
			snprintf(nm, sizeof nm, "CommonPjRtLoadedExecutable::Execute (%s)", hb_name(mi->hb));
			mc->nc_exec_ev = xp_ev_meta(e, nm);
		}
		exec_ev = mc->nc_exec_ev;
	} else {
		exec_ev = EV(e, c, E_EXECUTE);
	}
	span_id(e, exec_ev, x->t_ns + 2 * US, x->t_ns + l.end - 1 * US);
	xp_st_i64_id(e, ST(e, c, S_PT), 5);
	xp_st_u64_id(e, ST(e, c, S_P), (uint64_t)index * 7919u + 1);
}

static void emit_put(mk_scn *s, xp_emit *e, bfc *a, rt_ids *c, const mk_act *x, int main_part,
	int dev_part)
{
	int64_t t = x->t_ns;
	if (main_part && x->leader)
		span_id(e, EV(e, c, s->ndev > 1 ? E_BATCHED : E_DEVPUT), t, t + x->dur_ns);
	if (dev_part) {
		span_id(e, EV(e, c, E_BFHB), t + 5 * US, t + x->dur_ns - 5 * US);
		bfc_alloc(a, e, t + 8 * US, x->handle, x->bytes, x->name);
	}
}

/* Whether act x writes events on the main thread's line (dev_line: the
 * line of device c_dev's events too), and until when (from t_ns). */
static int on_main_line(const mk_act *x, int dev_line, int c_dev)
{
	switch (x->kind) {
	case ACT_PUT:
	case ACT_EXEC:
		return x->leader || (dev_line && x->dev == c_dev);
	case ACT_FREE:
		return dev_line && x->dev == c_dev;
	case ACT_COMPILE:
		return dev_line && x->dev == c_dev && x->bytes > 0;
	default:
		return 0;
	}
}

static int64_t main_act_end(const mk_scn *s, const mk_act *x)
{
	switch (x->kind) {
	case ACT_EXEC:
		return x->t_ns + mk_exec_duration(s, x->module, x->fail_at, x->retry_ns);
	case ACT_PUT:
	case ACT_COMPILE:
		return x->t_ns + x->dur_ns;
	default:
		return x->t_ns + 1 * US; /* a free: an instant */
	}
}

static void gen_host(void *vctx, xp_emit *e)
{
	line_ctx *c = vctx;
	mk_scn *s = c->s;
	int main_line = c->role == 0;
	int dev_line = c->role == 1 || (main_line && dev_line_is_main(s));
	int py_here = main_line && (s->variants & MK_V_PY_MAIN);
	mk_pycalls py = { 0 };
	bfc a;
	bfc_init(&a, s, c->dev, c->ids);
	int64_t nacts = mk_nacts_total(s);
	mk_act tmp;
	for (int64_t i = 0; i < nacts; i++) {
		const mk_act *x = mk_act_at(s, i, &tmp);
		if (py_here && x->kind == ACT_PYTREE) {
			mk_pycalls_until(e, &c->ids->py_ids, &py, INT64_MAX, INT64_MAX);
			mk_pycalls_begin(e, &c->ids->py_ids, &py, x);
		} else if (py_here && on_main_line(x, dev_line, c->dev)) {
			/* the calls before this act's events, none across them */
			mk_pycalls_until(e, &c->ids->py_ids, &py, x->t_ns * 1000,
					 main_act_end(s, x) * 1000);
		}
		switch (x->kind) {
		case ACT_PUT:
			if (dev_line && x->dev == c->dev)
				emit_put(s, e, &a, c->ids, x, main_line, 1);
			else if (main_line && x->leader)
				emit_put(s, e, &a, c->ids, x, 1, 0);
			break;
		case ACT_EXEC:
			if (main_line && x->leader)
				emit_exec_main_part(s, e, c->ids, x, i);
			if (dev_line && x->dev == c->dev)
				emit_exec_device_part(s, e, &a, x);
			break;
		case ACT_COMPILE:
			/* the autotuner's scratch, one buffer a run */
			for (int64_t k = 0; dev_line && x->dev == c->dev && x->bytes > 0 && k < x->count;
			     k++) {
				int64_t t = x->t_ns + (k + 1) * RUN_NS;
				int64_t off = bfc_alloc(&a, e, t + 1 * US, -1, x->bytes, NULL);
				bfc_free_off(&a, e, t + RUN_NS - 1 * US, off, x->bytes);
			}
			break;
		case ACT_FREE:
			if (dev_line && x->dev == c->dev) {
				if (a.h_off[x->handle] < 0)
					abort();
				bfc_free_off(&a, e, x->t_ns, a.h_off[x->handle], a.h_req[x->handle]);
				a.h_off[x->handle] = -1;
			}
			break;
		default:
			break;
		}
		if (e->nev)
			xp_flush(e);
	}
	if (py_here) {
		mk_pycalls_until(e, &c->ids->py_ids, &py, INT64_MAX, INT64_MAX);
		xp_flush(e);
	}
	bfc_release(&a);
}

static void gen_python(void *vctx, xp_emit *e)
{
	line_ctx *c = vctx;
	int64_t nacts = mk_nacts_total(c->s);
	mk_act tmp;
	for (int64_t i = 0; i < nacts; i++) {
		const mk_act *x = mk_act_at(c->s, i, &tmp);
		if (x->kind == ACT_PY) {
			span_id(e, name_id(e, c->ids, 0, x->name), x->t_ns, x->t_ns + x->dur_ns);
			xp_flush(e);
		} else if (x->kind == ACT_PYTREE && !(c->s->variants & MK_V_PY_MAIN)) {
			mk_pytree_emit(e, &c->ids->py_ids, x);
			xp_flush(e);
		} else if (x->kind == ACT_EXEC && x->leader && x->fail_at >= 0 &&
			   (c->s->variants & MK_V_EVENTS_AFTER)) {
			/* the exception on its way out, right after the failure (the
			 * script leaves 20 us before its next action) */
			int64_t end = x->t_ns + mk_exec_duration(c->s, x->module, x->fail_at, x->retry_ns);
			span_id(e, EV(e, c->ids, E_PY_CACHE_MISS), end + 1 * US, end + 9 * US);
			span_id(e, EV(e, c->ids, E_PY_RERAISE), end + 2 * US, end + 8 * US);
			xp_flush(e);
		}
	}
}

/* A compilation act x opens (ACT_COMPILE, or with the autotune variant the
 * first call of a module, compiled just before it unless that would overlap
 * the compilation before): its window, runs and function; 0: none. */
#define COMPILE_LINE_TS 42400

typedef struct compile_win {
	int64_t t0, t1, runs;
	const char *fn;
} compile_win;

static int compile_of(const mk_scn *s, const mk_act *x, char *seen, int64_t *last_end,
		      compile_win *w)
{
	if (x->kind == ACT_COMPILE) {
		*w = (compile_win){ x->t_ns, x->t_ns + x->dur_ns, x->count, x->name };
	} else if ((s->variants & MK_V_AUTOTUNE) && x->kind == ACT_EXEC && x->leader &&
		   !seen[x->module]) {
		seen[x->module] = 1;
		*w = (compile_win){ x->t_ns - 5 * RUN_NS - 2 * US, x->t_ns - 2 * US, 3,
				    hb_name(s->mods[x->module].hb) };
	} else {
		return 0;
	}
	/* on lines based at the main line's base (COMPILE_LINE_TS): the
	 * capture's time base, so that no figure moves */
	if (w->t0 <= *last_end || w->t0 < COMPILE_LINE_TS + 2 * US)
		return 0;
	*last_end = w->t1;
	return 1;
}

static int has_compiles(const mk_scn *s)
{
	if (s->variants & MK_V_AUTOTUNE)
		return 1;
	for (int i = 0; i < s->nacts; i++)
		if (s->acts[i].kind == ACT_COMPILE)
			return 1;
	return 0;
}

/* The tf_pjrt_compile_thread_pool line: the autotuner's runs, each a bare
 * [0] GpuExecutable::ExecuteThunks of a one-fusion module of its own. */
static void gen_compile_pool(void *vctx, xp_emit *e)
{
	line_ctx *c = vctx;
	char seen[MK_MAX_MODULES] = { 0 };
	int64_t last_end = INT64_MIN, nacts = mk_nacts_total(c->s);
	mk_act tmp;
	compile_win w;
	for (int64_t i = 0; i < nacts; i++) {
		if (!compile_of(c->s, mk_act_at(c->s, i, &tmp), seen, &last_end, &w))
			continue;
		for (int64_t k = 0; k < w.runs; k++) {
			int64_t t = w.t0 + (k + 1) * RUN_NS;
			xp_ev_begin(e, "[0] GpuExecutable::ExecuteThunks", (t + 2 * US) * 1000,
				    (RUN_NS - 4 * US) * 1000);
			xp_st_str(e, "module_name", "gemm_fusion_dot.1");
			span_id(e, name_id(e, c->ids, 0, "gemm_fusion_dot.1:XLA GPU module"), t + 3 * US,
				t + RUN_NS - 3 * US);
			span_id(e, name_id(e, c->ids, 0, "custom-call.1"), t + 4 * US, t + RUN_NS - 4 * US);
		}
		xp_flush(e);
	}
}

/* The Python thread's side of each compilation (a line of its own here:
 * the main line's events stay as they are). */
static void gen_compile_py(void *vctx, xp_emit *e)
{
	line_ctx *c = vctx;
	char seen[MK_MAX_MODULES] = { 0 }, name[160];
	int64_t last_end = INT64_MIN, nacts = mk_nacts_total(c->s);
	mk_act tmp;
	compile_win w;
	for (int64_t i = 0; i < nacts; i++) {
		if (!compile_of(c->s, mk_act_at(c->s, i, &tmp), seen, &last_end, &w))
			continue;
		span_id(e, name_id(e, c->ids, 0, "backend_compile_and_load"), w.t0, w.t1);
		snprintf(name, sizeof name, "PjRtCApiClient::CompileAndLoad(%s)", w.fn);
		span_id(e, name_id(e, c->ids, 0, name), w.t0 + 1 * US, w.t1 - 1 * US);
		xp_flush(e);
	}
}

static void kernel_name(const char *thunk, char *out, size_t n)
{
	size_t k = 0;
	if (strncmp(thunk, "custom-call", 11) == 0 || strncmp(thunk, "cublas", 6) == 0) {
		snprintf(out, n, "Cijk_Alik_Bljk_BBS_BH_MT256x256x64_MI16x16x1_SN_1LDSB1_AFC1");
		return;
	}
	for (; thunk[k] && k + 1 < n; k++)
		out[k] = thunk[k] == '.' || thunk[k] == '-' ? '_' : thunk[k];
	out[k] = 0;
}

/* One kernel per thunk on the stream, in thunk order. */
static void gen_stream(void *vctx, xp_emit *e)
{
	line_ctx *c = vctx;
	mk_scn *s = c->s;
	rt_ids *ids = c->ids;
	uint64_t corr = 1000;
	int64_t nacts = mk_nacts_total(s);
	mk_act tmp;
	for (int64_t i = 0; i < nacts; i++) {
		const mk_act *x = mk_act_at(s, i, &tmp);
		if (x->kind != ACT_EXEC || x->dev != c->dev || x->fail_at >= 0)
			continue;
		const mk_modinfo *mi = &s->mods[x->module];
		mod_ids *mc = MOD(ids, mi, x->module);
		exec_layout l;
		layout(mi, x->fail_at, x->retry_ns, &l);
		int64_t t = x->t_ns + l.thunks_start + KERNEL_LAG_NS;
		const int nk = mi->nkernels ? mi->nkernels : mi->nthunks;
		const char *const *names = mi->nkernels ? mi->kthunks : mi->thunks;
		for (int k = 0; k < nk; k++) {
			if (!mc->kern_ev[k]) {
				char kn[160];
				kernel_name(names[k], kn, sizeof kn);
				mc->kern_ev[k] = xp_ev_meta(e, kn);
			}
			span_id(e, mc->kern_ev[k], t, t + KERNEL_NS - 1 * US);
			xp_st_u64_id(e, ST(e, ids, S_CORR), corr++);
			if (!(s->variants & MK_V_NO_OPTIONAL_STATS)) {
				if (!mc->det_ref[k]) {
					char det[128];
					snprintf(det, sizeof det,
						" grid:%d,1,1 block:256,1,1 private_mem:0 group_mem:0 occ_pct:0",
						64 << (k % 6));
					mc->det_ref[k] = xp_st_meta(e, det);
				}
				xp_st_ref_id(e, ST(e, ids, S_KDET), mc->det_ref[k]);
			}
			int64_t r = ST(e, ids, S_XLAMOD);
			xp_st_ref_id(e, ST(e, ids, S_TFOP), r);
			if (!mc->name_ref)
				mc->name_ref = xp_st_meta(e, hb_name(mi->hb));
			xp_st_ref_id(e, ST(e, ids, S_HLOMOD), mc->name_ref);
			xp_st_i64_id(e, ST(e, ids, S_PROGID), (int64_t)hb_program_id(mi->hb));
			if (!mc->hlo_ref[k])
				mc->hlo_ref[k] = xp_st_meta(e, names[k]);
			xp_st_ref_id(e, ST(e, ids, S_HLOOP), mc->hlo_ref[k]);
			t += KERNEL_NS;
		}
		xp_flush(e);
	}
}

static void write_metadata(mk_scn *s, w_sink *out)
{
	xp_plane p;
	char nm[256];
	xp_plane_init(&p, 1, "/host:metadata");
	for (int i = 0; i < s->nmods; i++) {
		snprintf(nm, sizeof nm, "%s(%llu)", hb_name(s->mods[i].hb),
			(unsigned long long)hb_program_id(s->mods[i].hb));
		xp_plane_hlo_proto(&p, nm, &s->mods[i].hlo, hb_program_id(s->mods[i].hb));
	}
	for (int i = 0; i < s->nmany; i++)
		xp_plane_hlo_proto(&p, s->many[i].name, &s->many[i].hlo, s->many[i].program_id);
	xp_write_plane(out, &p, NULL, 0);
	xp_plane_release(&p);
}

/* The plane where the GPU tracer keeps its tree of scope ranges: each
 * edge a plane stat whose metadata_id is the child scope's id and whose
 * int64 value the parent's (ids of the size jax-h200's captures hold, a
 * thread's number in the high bits), and no stat metadata for them; beside
 * them a process_id with its metadata, as the real plane has. */
static void write_scope_tree(w_sink *out)
{
	enum { SCOPES = 40 };
	const int64_t base = 3096224743817856ll;
	xp_plane p;
	xp_plane_init(&p, 0, "/host:__ScopeRangeCallStack__");
	for (int64_t k = 1; k < SCOPES; k++) /* a chain, and a few siblings */
		xp_plane_stat_raw_i64(&p, base + k, base + (k % 7 == 0 ? k - 3 : k - 1));
	xp_plane_stat_i64(&p, "process_id", 5734);
	xp_write_plane(out, &p, NULL, 0);
	xp_plane_release(&p);
}

int mk_write_xspace(mk_scn *s, FILE *f, uint64_t *bytes, uint64_t *events)
{
	w_sink out = { 0 };
	uint64_t nev = 0;
	line_ctx ctx[MK_MAX_DEVICES + 4];
	xp_line lines[MK_MAX_DEVICES + 4];
	char names[MK_MAX_DEVICES + 4][64];
	int64_t end = s->t + 1000 * US;
	const int shuffle = (s->variants & MK_V_SHUFFLE) != 0;
	rt_ids *ids = calloc(MK_MAX_DEVICES + 4, sizeof *ids);
	if (!ids)
		abort();

	out.f = f;
	write_metadata(s, &out);
	if (s->variants & MK_V_SCOPE_TREE)
		write_scope_tree(&out);

	for (int d = 0; d < s->ndev; d++) {
		xp_plane p;
		char pname[32];
		snprintf(pname, sizeof pname, "/device:GPU:%d", d);
		xp_plane_init(&p, d + 2, pname);
		xp_plane_stat_i64(&p, "clock_rate", 2400000);
		xp_plane_stat_i64(&p, "core_count", 256);
		xp_plane_stat_u64(&p, "memory_bandwidth", 8000000000000ull);
		xp_plane_stat_u64(&p, "memory_size", s->memory_size);
		const int nvidia = (s->variants & MK_V_NVIDIA) != 0;
		xp_plane_stat_i64(&p, "compute_cap_major", 9);
		xp_plane_stat_i64(&p, "compute_cap_minor", nvidia ? 0 : 5);
		xp_plane_stat_str(&p, "device_vendor", nvidia ? "Nvidia" : s->vendor);
		xp_plane_stat_str(&p, "gpu_device_name", nvidia ? "NVIDIA H100 80GB HBM3" : s->device_name);
		ctx[0] = (line_ctx){ s, 3, d, &ids[0] };
		memset(&lines[0], 0, sizeof lines[0]);
		lines[0].id = 13 + d;
		snprintf(names[0], sizeof names[0], "Stream #%d(Kernel)", 13 + d);
		lines[0].name = names[0];
		lines[0].timestamp_ns = 1900 * US + 137 * d;
		lines[0].duration_ps = (end - lines[0].timestamp_ns) * 1000;
		lines[0].gen = gen_stream;
		lines[0].ctx = &ctx[0];
		lines[0].reverse = shuffle;
		nev += xp_write_plane(&out, &p, lines, 1);
		rt_ids_release(&ids[0]);
		xp_plane_release(&p);
	}

	{
		xp_plane p;
		int n = 0;
		xp_plane_init(&p, 100, "/host:CPU");
		/* lines sorted by name, as post-processing leaves them; shuffle:
		 * other (large, non-consecutive) thread ids, the lines in reverse
		 * order, the allocator lines' events written last first */
		ctx[n] = (line_ctx){ s, 0, 0, &ids[n] };
		memset(&lines[n], 0, sizeof lines[n]);
		lines[n].id = shuffle ? 3197823 : 22244;
		lines[n].name = shuffle ? "Host Threads/3197823" : "Host Threads/22244";
		lines[n].timestamp_ns = 42400;
		lines[n].duration_ps = (end - 42400) * 1000;
		lines[n].gen = gen_host;
		lines[n].ctx = &ctx[n];
		lines[n].reverse = shuffle;
		n++;
		ctx[n] = (line_ctx){ s, 2, 0, &ids[n] };
		memset(&lines[n], 0, sizeof lines[n]);
		lines[n].id = shuffle ? 6917529027641081857ll : 1085180131661504713ll;
		lines[n].name = "python";
		lines[n].timestamp_ns = 869971;
		lines[n].duration_ps = (end - 869971) * 1000;
		lines[n].gen = gen_python;
		lines[n].ctx = &ctx[n];
		n++;
		if (has_compiles(s)) {
			ctx[n] = (line_ctx){ s, 4, 0, &ids[n] };
			memset(&lines[n], 0, sizeof lines[n]);
			lines[n].id = 7050899146086073574ll;
			lines[n].name = "python3";
			lines[n].timestamp_ns = COMPILE_LINE_TS;
			lines[n].duration_ps = (end - COMPILE_LINE_TS) * 1000;
			lines[n].gen = gen_compile_py;
			lines[n].ctx = &ctx[n];
			n++;
			ctx[n] = (line_ctx){ s, 5, 0, &ids[n] };
			memset(&lines[n], 0, sizeof lines[n]);
			lines[n].id = -1291378713894232851ll;
			lines[n].name = "tf_pjrt_compile_thread_pool/-1291378713894232851";
			lines[n].timestamp_ns = COMPILE_LINE_TS;
			lines[n].duration_ps = (end - COMPILE_LINE_TS) * 1000;
			lines[n].gen = gen_compile_pool;
			lines[n].ctx = &ctx[n];
			n++;
		}
		if (s->ndev > 1)
			for (int d = 0; d < s->ndev; d++) {
				int64_t tid = shuffle ? 140737354103552ll + 1048583ll * d * (d + 3)
						      : 4747829982129071201ll + d;
				ctx[n] = (line_ctx){ s, 1, d, &ids[n] };
				memset(&lines[n], 0, sizeof lines[n]);
				lines[n].id = tid;
				lines[n].reverse = shuffle;
				snprintf(names[n], sizeof names[n], "tf_pjrt_thread_pool/%lld", (long long)tid);
				lines[n].name = names[n];
				lines[n].timestamp_ns = 707851 + 1013 * d;
				lines[n].duration_ps = (end - lines[n].timestamp_ns) * 1000;
				lines[n].gen = gen_host;
				lines[n].ctx = &ctx[n];
				n++;
			}
		if (shuffle)
			for (int i = 0, j = n - 1; i < j; i++, j--) {
				xp_line tl = lines[i];
				lines[i] = lines[j];
				lines[j] = tl;
			}
		nev += xp_write_plane(&out, &p, lines, (size_t)n);
		for (int i = 0; i < n; i++)
			rt_ids_release(&ids[i]);
		xp_plane_release(&p);
	}

	{
		xp_plane p;
		xp_plane_init(&p, 101, "Task Environment");
		xp_plane_stat_u64(&p, "profile_start_time", 1762412400000000000ull);
		xp_plane_stat_u64(&p, "profile_stop_time", 1762412400000000000ull + (uint64_t)end);
		xp_write_plane(&out, &p, NULL, 0);
		xp_plane_release(&p);
	}
	{
		xpf_buf hb = XPF_BUF_INIT;
		w_str(&hb, 4, s->host);
		w_sink *o = &out;
		sink_buf(o, &hb);
		xpf_buf_release(&hb);
	}
	free(ids);
	int rc = sink_flush(&out);
	if (bytes)
		*bytes = out.n;
	if (events)
		*events = nev;
	return rc;
}
