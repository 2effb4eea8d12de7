/* --job N: the shape of a big real job (issue 25), for the benchmark.
 *
 * The capture issue 25 describes (1 GiB) holds one GPU plane of 5.6 M
 * kernels, 20 M host events, most of them the Python tracer's on the python
 * thread's line, 169 k allocator events and 28 k executions; its step is one
 * module of ~375 k instructions that runs and is the focus.  Per step here:
 *
 *   - the focus (mk_big_step_module with JOB_OUTPUTS small unaliased
 *     outputs, one per 1,000 instructions at 375 k, so that a step's
 *     allocator events do not depend on n): its results allocated, the
 *     previous step's freed; one kernel per top-level fusion on the stream
 *     (~n/10), of which its host line lists the first MK_MAX_THUNKS as
 *     thunks;
 *   - JOB_SMALL executions of four small modules whose one output is
 *     donated (an allocation and a free each: the root tuple's table);
 *   - JOB_TRACER events of the Python tracer over the step: train_step,
 *     function calls of ~1,000 names, each with three builtin calls.
 *
 * So 150 steps of a 375 k-instruction focus hold ~28 k executions, ~169 k
 * allocator events, ~5.6 M kernels and ~20 M host events (19.5 M of the
 * tracer): the counts.  --size picks the number of steps. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scenarios.h"
#include "xspace.h"

#define US 1000ll
#define JOB_SMALL 186
#define JOB_TRACER 130000
#define JOB_OUTPUTS 375
#define PY_FUNCS 997
#define PY_BUILTINS 12

static const char *const small_fn[4] = { "update_metrics", "accumulate_loss", "next_rng", "clip_scale" };

static int add_small(mk_scn *s, const char *fn, uint64_t pid)
{
	char nm[64], opn[96];
	snprintf(nm, sizeof nm, "jit_%s", fn);
	hb_module *m = hb_new(nm, pid);
	hb_meta mp = { NULL, "state", NULL, NULL, 0 };
	int64_t p = mk_param(m, "Arg_0.1", hb_a(ET_F32, 1, 1024), &mp);
	snprintf(opn, sizeof opn, "jit(%s)/add", fn);
	hb_meta mf = mk_meta("add", opn, "metrics.py", fn, 31);
	int64_t o = mk_afusion(m, "loop_add_fusion", "add", hb_a(ET_F32, 1, 1024), &p, 1, &mf);
	hb_io_alias(m, 0, 0);
	mk_root(m, &o, 1);
	return mk_add_module(s, m, fn, 0);
}

/* mk_build_job adds the focus first, then the four small modules */
enum { BIG_MOD = 0, SMALL_MOD = 1 };

void mk_build_job(mk_scn *s, int64_t n)
{
	uint64_t pid = 9001;
	mk_scn_init(s, "gpu-node-0", 1, 85899345920ull, 81604378624ll);
	s->device_name = "NVIDIA H100 80GB HBM3";
	s->vendor = "Nvidia";
	if (mk_big_step_module(s, n, n / JOB_OUTPUTS > 1 ? n / JOB_OUTPUTS : 1) != BIG_MOD)
		abort();
	mk_modinfo *mi = &s->mods[BIG_MOD];
	int64_t max = mi->stats.n_instructions;
	const char **names = malloc((size_t)max * sizeof *names);
	if (names == NULL)
		abort();
	int nk = hb_thunks(mi->hb, names, (int)max);
	if (nk > mi->nthunks) {
		mi->kthunks = names;
		mi->nkernels = nk;
	} else {
		free(names);
	}
	for (int i = 0; i < 4; i++)
		if (add_small(s, small_fn[i], pid + (uint64_t)i) != SMALL_MOD + i)
			abort();
}

void mk_job_script(mk_scn *s, int64_t steps)
{
	s->nacts = 0;
	s->nhandles = 0;
	s->t = 2000 * US;
	int prev = -1, nres = s->mods[BIG_MOD].nresults;
	for (int64_t k = 0; k < steps; k++) {
		int64_t t0 = s->t;
		int py = mk_pytree(s, JOB_TRACER, 0);
		for (int i = 0; i < JOB_SMALL / 2; i++)
			mk_exec(s, SMALL_MOD + i % 4, -1, 0);
		int r = mk_exec(s, BIG_MOD, -1, 0);
		for (int i = JOB_SMALL / 2; i < JOB_SMALL; i++)
			mk_exec(s, SMALL_MOD + i % 4, -1, 0);
		for (int i = 0; prev >= 0 && i < nres; i++)
			mk_free(s, prev + i);
		prev = r;
		mk_gap(s, 50 * US);
		s->acts[py].dur_ns = s->t - t0 - 1 * US;
	}
}

int64_t mk_job_tracer_events(const mk_scn *s)
{
	int64_t n = 0;
	for (int i = 0; i < s->nacts; i++)
		if (s->acts[i].kind == ACT_PYTREE)
			n += s->acts[i].count;
	return n;
}

static void py_name(int k, char *out, size_t n)
{
	static const char *const files[8] = { "train.py", "trainer.py", "transform.py", "layers.py",
					      "tree_util.py", "pjit.py", "dispatch.py", "metrics.py" };
	static const char *const fns[16] = { "apply", "__call__", "update", "tree_map", "<lambda>",
					     "_get_batch", "record", "cache_miss", "flatten", "unflatten",
					     "__getattr__", "_check", "reshape", "split", "astype", "log_scalar" };
	static const char *const builtins[PY_BUILTINS] = { "isinstance", "len", "getattr", "hasattr",
							   "get", "items", "__enter__", "__exit__",
							   "perf_counter", "id", "hash", "iter" };
	if (k == 0)
		snprintf(out, n, "$train.py:57 train_step");
	else if (k <= PY_FUNCS)
		snprintf(out, n, "$%s:%d %s", files[k % 8], 20 + (k * 37) % 900, fns[(k / 8) % 16]);
	else
		snprintf(out, n, "$<unknown> %s", builtins[k - PY_FUNCS - 1]);
}

static int64_t py_id(xp_emit *e, int64_t **ids, int k)
{
	if (*ids == NULL && (*ids = calloc(1 + PY_FUNCS + PY_BUILTINS, sizeof **ids)) == NULL)
		abort();
	if ((*ids)[k] == 0) {
		char nm[96];
		py_name(k, nm, sizeof nm);
		(*ids)[k] = xp_ev_meta(e, nm);
	}
	return (*ids)[k];
}

/* train_step over the whole span; under it, calls of one function each with
 * three builtin calls (the last call may have fewer), in start order. */
void mk_pycalls_begin(xp_emit *e, int64_t **ids, mk_pycalls *c, const mk_act *x)
{
	int64_t t_ps = x->t_ns * 1000, dur_ps = x->dur_ns * 1000;
	*c = (mk_pycalls){ t_ps, 0, 0, 0, 0 };
	if (x->count <= 0)
		return;
	xp_ev_begin_id(e, py_id(e, ids, 0), t_ps, dur_ps);
	c->calls = (x->count - 1 + 3) / 4;
	c->left = x->count - 1;
	if (c->calls == 0)
		return;
	c->w = (dur_ps - 2000) / c->calls;
	if (c->w < 16)
		abort(); /* the step is too short for its tracer events */
}

void mk_pycalls_until(xp_emit *e, int64_t **ids, mk_pycalls *c, int64_t start_ps, int64_t end_ps)
{
	for (; c->g < c->calls; c->g++) {
		int64_t g = c->g, w = c->w, a = c->t_ps + 1000 + g * w;
		bool emit = a + w - w / 8 <= start_ps;
		if (!emit && a >= end_ps)
			return; /* after the other events: for a later stretch */
		if (emit)
			xp_ev_begin_id(e, py_id(e, ids, 1 + (int)((g * 7919) % PY_FUNCS)), a, w - w / 8);
		c->left--;
		for (int k = 0; k < 3 && c->left > 0; k++, c->left--)
			if (emit)
				xp_ev_begin_id(e, py_id(e, ids, 1 + PY_FUNCS + (int)((g * 3 + k) % PY_BUILTINS)),
					       a + (1 + 2 * k) * w / 8, w / 8);
	}
}

void mk_pytree_emit(xp_emit *e, int64_t **ids, const mk_act *x)
{
	mk_pycalls c;
	mk_pycalls_begin(e, ids, &c, x);
	mk_pycalls_until(e, ids, &c, INT64_MAX, INT64_MAX);
}
