/* The runtime (issue 5) against the real captures of ../shared/captures:
 * allocator counts and peaks equal the figures of its README (read there with
 * an independent decoder), executions are found and linked, and the files
 * of runtime/ are consistent with the model; the figures the README does
 * not give are read without xplanefs too (tests/figures/read-xspace.py, the
 * command that gives each written beside it); the scenario captures of
 * xplane-mkcapture carry the figures of their tests/scenarios/<name>.json
 * (read from there, never restated here).  The tests on real captures run
 * as their own group (`real`, test_group.h); each test skips, saying so,
 * where its capture is absent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "analysis/diagnosis/diagnosis.h"
#include "tree/report.h"
#include "analysis/runtime/runtime.h"
#include "capture/input.h"
#include "host_events.h"
#include "test_group.h"
#include "test_util.h"

/* The runtime options every report of this test builds with (XPF_THREADS). */
static xpf_rt_options rt_options = XPF_RT_OPTIONS_INIT;

struct fixture {
	xpf_input *in;
	xpf_report *r;
	xpf_host *h;
	const xpf_runtime *rt;
	xpf_options opt;
	json_t *scn;       /* a scenario's tests/scenarios/<name>.json, else NULL */
	json_t *scn_rt;    /* its "runtime" section */
};

/* Open the capture at path and compute its runtime. */
/* Runtimes built, and chunks of their host lines that threads other than
 * the first read (test_shared_out). */
static size_t nopened, nmerged;

static void open_path(struct fixture *f, const char *path)
{
	xpf_error err = { 0 };
	xpf_options opt = XPF_OPTIONS_INIT;
	opt.runtime = &rt_options;
	f->opt = opt;
	f->scn = f->scn_rt = NULL;
	assert_int_equal(xpf_input_open(path, NULL, &f->in, &err), XPF_OK);
	assert_int_equal(xpf_report_open(f->in, &f->opt, &f->r, &err), XPF_OK);
	f->h = xpf_report_host(f->r, 0);
	int rc = xpf_host_runtime(f->h, &f->rt, &err);
	if (rc != XPF_OK)
		fprintf(stderr, "runtime: %s\n", err.msg);
	assert_int_equal(rc, XPF_OK);
	nopened++;
	nmerged += f->rt->host_chunks_by_others;
}

/* Open a capture of the shared folder; false (and a skip message) if absent. */
static bool open_capture(struct fixture *f, const char *name)
{
	const char *path = xpf_t_capture(name);
	if (path == NULL)
		return false;
	open_path(f, path);
	return true;
}

/* `xplane-mkcapture ARGS PATH` into the temporary folder as NAME.xplane.pb
 * (path); false (and a skip message) where the builder is not built. */
static bool make_capture(const char *args, const char *name, char *path, size_t n)
{
	char out[512];
	snprintf(out, sizeof out, "%s.xplane.pb", name);
	const char *p = xpf_t_build(out, args);
	if (p == NULL)
		return false;
	snprintf(path, n, "%s", p);
	return true;
}

static bool open_scenario(struct fixture *f, const char *name)
{
	char path[8192], args[4096];
	snprintf(args, sizeof args, "'%s'", name);
	if (!make_capture(args, name, path, sizeof path))
		return false;
	const char *source = getenv("XPF_SOURCE");
	char jpath[4096];
	json_error_t je;
	snprintf(jpath, sizeof jpath, "%s/tests/scenarios/%s.json", source ? source : ".", name);
	json_t *scn = json_load_file(jpath, 0, &je);
	if (scn == NULL)
		fail_msg("%s:%d: %s (set XPF_SOURCE)", jpath, je.line, je.text);
	xpf_error err = { 0 };
	xpf_options opt = XPF_OPTIONS_INIT;
	opt.runtime = &rt_options;
	f->opt = opt;
	assert_int_equal(xpf_input_open(path, NULL, &f->in, &err), XPF_OK);
	assert_int_equal(xpf_report_open(f->in, &f->opt, &f->r, &err), XPF_OK);
	f->h = xpf_report_host(f->r, 0);
	int rc = xpf_host_runtime(f->h, &f->rt, &err);
	if (rc != XPF_OK)
		fprintf(stderr, "runtime: %s\n", err.msg);
	assert_int_equal(rc, XPF_OK);
	unlink(path);
	f->scn = scn;
	f->scn_rt = json_object_get(scn, "runtime");
	assert_non_null(f->scn_rt);
	return true;
}

static void close_capture(struct fixture *f)
{
	if (f->scn)
		json_decref(f->scn);
	f->scn = NULL;
	xpf_report_free(f->r);
	xpf_input_free(f->in);
}

static const xpf_rt_allocator *allocator(const xpf_runtime *rt, const char *name)
{
	for (size_t i = 0; i < rt->nallocators; i++)
		if (strcmp(rt->allocators[i].name, name) == 0)
			return &rt->allocators[i];
	fail_msg("allocator %s not found", name);
	return NULL;
}

static const char *file(struct fixture *f, const char *path)
{
	xpf_error err = { 0 };
	xpf_node *n;
	const char *data;
	size_t len;
	assert_int_equal(xpf_report_resolve(f->r, path, &n, &err), XPF_OK);
	if (n == NULL)
		fail_msg("%s: not in the tree", path);
	assert_int_equal(xpf_node_content(n, &data, &len, &err), XPF_OK);
	return data;
}

static size_t count_lines(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* The diagnosis's between (runtime/between.tsv), with its focus module. */
static const xpf_rt_between *focus_between(struct fixture *f)
{
	const xpf_diagnosis *d;
	xpf_error err = { 0 };
	assert_int_equal(xpf_host_diagnosis(f->h, &d, &err), XPF_OK);
	assert_int_equal(d->between.module, d->module);
	return &d->between;
}

/* Host events wholly inside [from, to] (ps from the time base), by name. */
struct between_row {
	const char *name;
	uint64_t count;
	int64_t ps;
};

struct between_ctx {
	int64_t from, to, base;
	struct between_row *row;
	size_t nr, cap;
};

static void between_event(const xpf_plane *p, size_t line, const xpf_event *ev, void *ctx)
{
	struct between_ctx *bc = ctx;
	int64_t t0 = (p->lines[line].timestamp_ns - bc->base) * 1000 + ev->offset_ps;
	int64_t t1 = t0 + (ev->duration_ps > 0 ? ev->duration_ps : 0);
	if (t0 < bc->from || t1 > bc->to)
		return;
	size_t k = 0;
	while (k < bc->nr && strcmp(bc->row[k].name, ev->name) != 0)
		k++;
	if (k == bc->nr) {
		if (bc->nr == bc->cap) {
			bc->cap = bc->cap ? 2 * bc->cap : 64;
			bc->row = realloc(bc->row, bc->cap * sizeof *bc->row);
			assert_non_null(bc->row);
		}
		bc->row[bc->nr++] = (struct between_row){ ev->name, 0, 0 };
	}
	bc->row[k].count++;
	bc->row[k].ps += t1 - t0;
}

/* between.tsv against a plain count: the focus module's last two executions
 * on its device bound the window (SPEC §4.3); every /host:CPU event wholly
 * inside it, read with the reference decoder, by name: how many and their
 * total duration. */
static void check_between(struct fixture *f)
{
	const xpf_runtime *rt = f->rt;
	const xpf_rt_between *bt = focus_between(f);
	long fm = bt->module, last = -1, before = -1;
	for (size_t x = rt->nexecutions; fm >= 0 && x-- > 0;) {
		const xpf_rt_execution *e = &rt->executions[x];
		if (e->module != fm || (last >= 0 && e->device != rt->executions[last].device))
			continue;
		if (last < 0) {
			last = (long)x;
		} else {
			before = (long)x;
			break;
		}
	}
	assert_int_equal(bt->to_execution, before >= 0 ? last : -1);
	assert_int_equal(bt->from_execution, before);
	if (before < 0) {
		assert_int_equal(bt->nrows, 0);
		return;
	}
	struct between_ctx bc = { rt->executions[before].end_ps, rt->executions[last].start_ps, 0,
				  NULL, 0, 0 };
	xpf_error err = { 0 };
	assert_int_equal(xpf_capture_time_base(f->h->cap, &bc.base, &err), XPF_OK);
	each_host_event(f->h->cap, between_event, &bc);
	struct between_row *row = bc.row;
	size_t nr = bc.nr;
	assert_int_equal(bt->nrows, nr);
	for (size_t k = 0; k < nr; k++) {
		size_t i = 0;
		while (i < bt->nrows && strcmp(bt->rows[i].name, row[k].name) != 0)
			i++;
		if (i == bt->nrows)
			fail_msg("between: %s (%" PRIu64 " events) is not a row", row[k].name, row[k].count);
		assert_int_equal(bt->rows[i].count, row[k].count);
		assert_int_equal(bt->rows[i].total_ns, row[k].ps / 1000);
	}
	free(row);
}

/* Invariants every capture must satisfy. */
static void check_invariants(struct fixture *f)
{
	const xpf_runtime *rt = f->rt;
	uint64_t na = 0, nd = 0;
	for (size_t i = 0; i < rt->nallocators; i++) {
		const xpf_rt_allocator *a = &rt->allocators[i];
		na += a->allocations;
		nd += a->deallocations;
		assert_true(a->unmatched_deallocations <= a->deallocations);
		assert_true(a->peak_in_window_bytes <= a->capacity_bytes);
	}
	assert_int_equal(na + nd, rt->nevents);
	for (size_t i = 1; i < rt->nevents; i++)
		assert_true(rt->events[i - 1].t_ps <= rt->events[i].t_ps);
	/* each allocation site is kept once: no two sites alike (the threads'
	 * merged into the first's) */
	for (size_t i = 0; i < rt->nevents; i++) {
		const xpf_rt_event *e = &rt->events[i];
		assert_true(e->site < rt->nsites);
		/* an event is on a host line, its execution's when it has one */
		assert_true(rt->host_plane && xpf_rt_ev_line(rt, e) < rt->host_plane->nlines);
		assert_true(e->execution >= -1);
		if (e->execution >= 0)
			assert_int_equal(xpf_rt_ev_line(rt, e), rt->executions[e->execution].line);
	}
	for (size_t r = 0; r < rt->nsites; r++) {
		const xpf_rt_site *q = &rt->sites[r];
		for (size_t k = 0; k < r; k++) {
			const xpf_rt_site *o = &rt->sites[k];
			assert_false(o->allocator == q->allocator &&
				     o->bytes == q->bytes && o->requested_bytes == q->requested_bytes &&
				     o->has_bytes == q->has_bytes && o->has_requested == q->has_requested &&
				     o->enclosing_md == q->enclosing_md && o->transfer_md == q->transfer_md &&
				     o->line == q->line &&
				     (o->shape == q->shape ||
				      (q->shape && o->shape && strcmp(o->shape, q->shape) == 0)));
		}
	}
	for (size_t i = 0; i < rt->nexecutions; i++) {
		const xpf_rt_execution *x = &rt->executions[i];
		assert_int_equal(x->n, i + 1);
		assert_true(xpf_rt_x_start_ns(x) <= xpf_rt_x_end_ns(x));
		if (i > 0)
			assert_true(rt->executions[i - 1].start_ps <= x->start_ps);
		if (x->in_use_known)
			assert_true(x->peak_during_bytes >= x->in_use_at_start_bytes);
		/* prev and the per-(module, device) number, searched plainly */
		long prev = -1;
		for (size_t j = i; x->module >= 0 && j-- > 0;)
			if (rt->executions[j].module == x->module && rt->executions[j].device == x->device) {
				prev = (long)j;
				break;
			}
		assert_int_equal(x->prev, prev);
		if (x->module >= 0)
			assert_int_equal(x->module_execution,
					 prev >= 0 ? rt->executions[prev].module_execution + 1 : 1);
		/* live.tsv explains exactly the in-use bytes at the start: the
		 * blocks seen allocated and not freed, plus one "before" row for
		 * what they leave unexplained (none when they already exceed it,
		 * as when frees were cut by the window) */
		xpf_rt_block *b;
		size_t nb;
		xpf_error err = { 0 };
		assert_int_equal(xpf_runtime_live_at(rt, i, &b, &nb, &err), XPF_OK);
		uint64_t sum = 0, seen = 0, nbefore = 0;
		for (size_t k = 0; k < nb; k++) {
			sum += b[k].bytes;
			if (b[k].origin == XPF_ORIGIN_BEFORE)
				nbefore++;
			else
				seen += b[k].bytes;
		}
		if (x->in_use_known && seen < x->in_use_at_start_bytes) {
			assert_int_equal(nbefore, 1);
			assert_int_equal(sum, x->in_use_at_start_bytes);
		} else {
			assert_int_equal(nbefore, 0);
		}
		/* the blocks seen against a walk of every event (live_at skips
		 * by its index): the device pool's allocations before the
		 * start whose free, if seen, is not before it */
		uint64_t want_seen = 0;
		for (size_t j = 0; x->allocator >= 0 && j < rt->nevents &&
				   rt->events[j].t_ps < x->start_ps; j++) {
			const xpf_rt_event *e = &rt->events[j];
			if (xpf_rt_ev_allocator(rt, e) == x->allocator && e->kind == XPF_RT_ALLOC &&
			    !(e->match >= 0 && rt->events[e->match].t_ps < x->start_ps))
				want_seen += xpf_rt_ev_bytes(rt, e);
		}
		assert_int_equal(seen, want_seen);
		xpf_rt_blocks_free(b, nb);
	}
	/* every file renders, TSVs have a header and one line per record */
	assert_int_equal(count_lines(file(f, "runtime/allocators.tsv")), rt->nallocators + 1);
	assert_int_equal(count_lines(file(f, "runtime/events.tsv")), rt->nevents + 1);
	assert_int_equal(count_lines(file(f, "runtime/executions.tsv")), rt->nexecutions + 1);
	assert_int_equal(count_lines(file(f, "runtime/retries.tsv")), rt->nretries + 1);
	assert_int_equal(count_lines(file(f, "runtime/between.tsv")), focus_between(f)->nrows + 1);
	check_between(f);
	assert_non_null(strstr(file(f, "runtime/summary.txt"), "allocator"));
	if (rt->nexecutions) {
		char p[64];
		snprintf(p, sizeof p, "runtime/executions/%zu/live.tsv", rt->nexecutions);
		assert_non_null(strstr(file(f, p), "origin\tbytes"));
		snprintf(p, sizeof p, "runtime/executions/%zu/summary.txt", rt->nexecutions);
		assert_non_null(strstr(file(f, p), "execution"));
	}
}

static long module_index(struct fixture *f, const char *name)
{
	for (size_t m = 0; m < f->h->nmodules; m++)
		if (strcmp(xpf_capture_module(f->h->cap, m)->name, name) == 0)
			return (long)m;
	fail_msg("module %s not found", name);
	return -1;
}

/* between.tsv's window: module name, the executions' numbers, the events. */
static void check_focus_between(struct fixture *f, const char *module, unsigned from_n,
				unsigned to_n, uint64_t events)
{
	const xpf_rt_between *bt = focus_between(f);
	assert_int_equal(bt->module, module_index(f, module));
	assert_true(bt->from_execution >= 0 && bt->to_execution >= 0);
	assert_int_equal(f->rt->executions[bt->from_execution].n, from_n);
	assert_int_equal(f->rt->executions[bt->to_execution].n, to_n);
	uint64_t count = 0;
	for (size_t i = 0; i < bt->nrows; i++)
		count += bt->rows[i].count;
	assert_int_equal(count, events);
}

/* jit_matmul(59)'s temp at each of its runs: every run asks for the plan's
 * temp, BFC hands one a whole bigger chunk, and checks.txt names it.  The
 * figures, read without xplanefs (python3 tests/figures/read-xspace.py WHAT
 * ../shared/captures/mi300x-jax08-attention.xplane.pb):
 *   allocations | grep 'jit_matmul(59)': its one temp allocation (no flag),
 *     134217728 bytes (the README's max requested_bytes of GPU_0_bfc), the
 *     only allocation of that size of any module;
 *   events | awk -F'\t' '$4 == "PJRT_LoadedExecutable_Execute" { print ++n, $2, $3 }':
 *     the 81 execute events; the three MemoryAllocation with
 *     requested_bytes=134217728 (events | grep
 *     'MemoryAllocation.*requested_bytes=134217728 ') fall in the 14th, 41st
 *     and 68th, with allocation_bytes 134217728, 251658240 and 134217728,
 *     and the kernels launched in each carry program_id=59 (events | awk
 *     -F'\t' '$2 >= START && $3 <= END' | grep -o 'program_id=[0-9]*'). */
static void check_attention_temp(struct fixture *f)
{
	static const struct {
		const char *n, *temp;
	} run[] = { { "14", "134217728" }, { "41", "251658240" }, { "68", "134217728" } };
	const char *x = file(f, "runtime/executions.tsv");
	for (size_t i = 0; i < sizeof run / sizeof *run; i++) {
		const struct tsv_want want[] = { { "module", "jit_matmul(59)" }, { "temp_bytes", run[i].temp } };
		assert_row(x, "n", run[i].n, want, sizeof want / sizeof *want);
	}
	assert_string_equal(tsv_field(file(f, "modules/index.tsv"), "name", "jit_matmul(59)", "temp_bytes"),
			    "134217728");
	const char *chk = line_from(file(f, "checks.txt"), "WARN\tplan-vs-runtime-temp\tjit_matmul(59): ");
	assert_non_null(strstr(chk, "plan temp 134217728"));
	assert_non_null(strstr(chk, "execution 41: 251658240 "));
}

static void test_attention(void **state)
{
	struct fixture f;
	(void)state;
	if (!open_capture(&f, "mi300x-jax08-attention.xplane.pb"))
		skip();
	const xpf_rt_allocator *g = allocator(f.rt, "GPU_0_bfc");
	assert_int_equal(g->allocations, 126);
	assert_int_equal(g->deallocations, 126);
	assert_int_equal(g->lifetime_peak_bytes, 595591680);
	assert_true(g->is_pool);
	assert_int_equal(g->device, 0);
	const xpf_rt_allocator *hb = allocator(f.rt, "xla_gpu_host_bfc");
	assert_int_equal(hb->allocations, 18);
	assert_int_equal(hb->deallocations, 18);
	assert_false(hb->is_pool);
	assert_false(f.rt->keyed_by_index);
	uint64_t maxreq = 0;
	for (size_t i = 0; i < f.rt->nevents; i++)
		if (xpf_rt_ev_requested(f.rt, &f.rt->events[i]) > maxreq)
			maxreq = xpf_rt_ev_requested(f.rt, &f.rt->events[i]);
	assert_int_equal(maxreq, 134217728);
	/* every execution names a module and ran (thunks nested in it): the
	 * 81 execute events each hold one `<module>:XLA GPU module` (python3
	 * tests/figures/read-xspace.py events CAPTURE | awk -F'\t' '$4 ~
	 * /:XLA GPU module$/' | wc -l) */
	assert_int_equal(f.rt->nexecutions, 81);
	for (size_t i = 0; i < f.rt->nexecutions; i++) {
		assert_true(f.rt->executions[i].module >= 0);
		assert_int_equal(f.rt->executions[i].launched, XPF_LAUNCHED_YES);
		assert_int_equal(f.rt->executions[i].device, 0);
	}
	/* the focus is the biggest module by need that ran (SPEC §5.1), not
	 * the most executed one (jit_matmul(19)); between its last two runs,
	 * from the end of the 41st execute event to the start of the 68th,
	 * 1397 host events (events CAPTURE | awk -F'\t' '$2 >= 26370925 &&
	 * $3 <= 30319000' | wc -l) */
	check_focus_between(&f, "jit_matmul(59)", 41, 68, 1397);
	check_attention_temp(&f);
	check_invariants(&f);
	close_capture(&f);
}

/* jit_dot(5)'s first two runs, executions 5 and 6: the first's row, and its
 * output live when the second starts.  The figures, read without xplanefs
 * (python3 tests/figures/read-xspace.py WHAT ../shared/captures/mi300x-jax08-gemm.xplane.pb):
 *   events | awk -F'\t' '$4 == "PJRT_LoadedExecutable_Execute"' | sed -n 5,6p:
 *     the 5th and 6th execute events, 1882853-1929063 and 1974183-2009053 ns;
 *   events | awk -F'\t' '$2 >= 1882853 && $3 <= 1929063': inside the 5th,
 *     the first launch of program_id=5 (the 6th holds the second: events |
 *     grep -n 'program_id=5$'), `jit_dot:XLA GPU module` (it ran),
 *     and one MemoryAllocation of GPU_0_bfc (requested and allocation_bytes
 *     131072, bytes_allocated=393216 bytes_reserved=0, at 1892213, addr
 *     140114051465728: `events | grep addr=140114051465728` frees it at
 *     2012403, after the 6th starts), the size of jit_dot(5)'s output
 *     (allocations | grep 'jit_dot(5)');
 *   events | grep GPU_0_bfc | awk -F'\t' '$2 < 1882853' | tail -1: in use
 *     when the 5th starts, bytes_allocated=262144 bytes_reserved=0 (before
 *     the 6th, '$2 < 1974183': that allocation, 393216). */
static void check_gemm_dot5(struct fixture *f)
{
	static const struct tsv_want x5[] = {
		{ "device", "0" },
		{ "module", "jit_dot(5)" },
		{ "module_execution", "1" },
		{ "start_ns", "1882853" },
		{ "end_ns", "1929063" },
		{ "launched", "yes" },
		{ "in_use_at_start_bytes", "262144" },
		{ "peak_during_bytes", "393216" },
		{ "allocations", "1" },
		{ "deallocations", "0" },
	};
	static const struct tsv_want x6[] = {
		{ "module", "jit_dot(5)" },
		{ "module_execution", "2" },
		{ "start_ns", "1974183" },
		{ "in_use_at_start_bytes", "393216" },
	};
	assert_row(file(f, "runtime/executions.tsv"), "n", "5", x5, sizeof x5 / sizeof *x5);
	assert_row(file(f, "runtime/executions.tsv"), "n", "6", x6, sizeof x6 / sizeof *x6);
	/* origin as SPEC §4.3 words it: outputs of <module> execution <k> */
	static const struct tsv_want out[] = {
		{ "origin", "outputs of jit_dot(5) execution 1" },
		{ "bytes", "131072" },
		{ "allocated_ns", "1892213" },
	};
	assert_row(file(f, "runtime/executions/6/live.tsv"), "addr", "140114051465728", out,
		   sizeof out / sizeof *out);
}

static void test_gemm(void **state)
{
	struct fixture f;
	(void)state;
	if (!open_capture(&f, "mi300x-jax08-gemm.xplane.pb"))
		skip();
	const xpf_rt_allocator *g = allocator(f.rt, "GPU_0_bfc");
	assert_int_equal(g->allocations, 69);
	assert_int_equal(g->deallocations, 69);
	assert_int_equal(g->lifetime_peak_bytes, 738197504);
	assert_int_equal(allocator(f.rt, "xla_gpu_host_bfc")->allocations, 12);
	assert_int_equal(allocator(f.rt, "xla_gpu_host_bfc")->deallocations, 12);
	/* 42 old-style PjRtStreamExecutorLoadedExecutable::Execute runs, 18 of
	 * them around `jit_dot:XLA GPU module` (python3
	 * tests/figures/read-xspace.py events CAPTURE | cut -f4 | sort | uniq -c) */
	assert_int_equal(f.rt->nexecutions, 42);
	long dot5 = module_index(&f, "jit_dot(5)"), conv1 = module_index(&f, "jit_convert_element_type(1)");
	const xpf_rt_execution *x = &f.rt->executions[0];
	assert_int_equal(x->module, conv1);
	assert_int_equal(x->link, XPF_LINK_NAME);
	assert_string_equal(x->host_name, "jit_convert_element_type");
	x = &f.rt->executions[4];
	assert_int_equal(x->module, dot5);
	assert_int_equal(x->module_execution, 1);
	assert_string_equal(x->host_name, "jit_dot");
	assert_int_equal(x->link, XPF_LINK_BYTES);
	assert_int_equal(x->in_use_at_start_bytes, 262144);
	assert_int_equal(f.rt->executions[6].module, dot5);
	assert_int_equal(f.rt->executions[6].module_execution, 3);
	size_t ndot = 0, yes = 0;
	for (size_t i = 0; i < f.rt->nexecutions; i++) {
		const xpf_rt_execution *y = &f.rt->executions[i];
		assert_true(y->module >= 0);
		yes += y->launched == XPF_LAUNCHED_YES;
		if (strncmp(xpf_capture_module(f.h->cap, (size_t)y->module)->name, "jit_dot(", 8) == 0) {
			ndot++;
			assert_string_equal(y->host_name, "jit_dot");
			assert_true(y->nmatched >= 1);
		}
	}
	assert_int_equal(ndot, 18);
	assert_int_equal(yes, 42);
	/* 13 host events from the end of the 27th execute event to the start
	 * of the 28th (events CAPTURE | awk -F'\t' '$2 >= 5636838 && $3 <=
	 * 6261229' | wc -l) */
	check_focus_between(&f, "jit_dot(49)", 27, 28, 13);
	check_gemm_dot5(&f);
	check_invariants(&f);
	close_capture(&f);
}

static void test_tf(void **state)
{
	struct fixture f;
	(void)state;
	if (!open_capture(&f, "tf-v100-multiworker.xplane.pb"))
		skip();
	const xpf_rt_allocator *a = allocator(f.rt, "GPU_4_bfc");
	assert_int_equal(a->allocations, 761);
	assert_int_equal(a->deallocations, 208);
	/* its largest peak_bytes_in_use (python3 tests/figures/read-xspace.py
	 * events CAPTURE | grep 'allocator_name=GPU_4_bfc ' | grep -o
	 * 'peak_bytes_in_use=[0-9]*' | sort -t= -k2n | tail -1) */
	assert_int_equal(a->lifetime_peak_bytes, 6208853760);
	/* the blocks never freed in the window are reported, not hidden */
	assert_true(a->live_at_end_bytes > 6000000000ull);
	assert_int_equal(a->seen_live_at_end_blocks, 761 - 208);
	a = allocator(f.rt, "GPU_6_bfc");
	assert_int_equal(a->allocations, 761);
	assert_int_equal(a->deallocations, 208);
	assert_int_equal(a->lifetime_peak_bytes, 6210111488);
	a = allocator(f.rt, "GPU_1_bfc");
	assert_int_equal(a->allocations, 19);
	assert_int_equal(a->deallocations, 0);
	a = allocator(f.rt, "gpu_host_bfc");
	assert_int_equal(a->allocations, 318);
	assert_int_equal(a->deallocations, 218);
	assert_false(a->is_pool);
	/* some host deallocations free blocks allocated before the window */
	assert_true(a->unmatched_deallocations > 0);
	assert_non_null(strstr(file(&f, "runtime/allocators.tsv"), "\tunmatched_deallocations\t"));
	assert_int_equal(f.rt->nexecutions, 0);
	check_invariants(&f);
	close_capture(&f);
}

/* Rows of the TPU capture's files.  The figures, read without xplanefs
 * (python3 tests/figures/read-xspace.py WHAT ../shared/captures/tpu-v6e-inference.xplane.pb):
 *   events | grep MemoryDeallocation | sort -t$'\t' -k2,2n | head -1: the
 *     first free, at 5353468373, index_on_host=0, addr=33550205952,
 *     bytes_allocated=67072 bytes_reserved=0, and no requested_bytes (no
 *     free has one: events | grep MemoryDeallocation | grep -c requested_bytes
 *     is 0); the allocation it frees (events | grep addr=33550205952, at
 *     5352747403) has allocation_bytes=512;
 *   events CAPTURE /device:TPU:<d> | awk -F'\t' '$1 == "XLA Modules"': the
 *     executions, 105 on TPU:0 and 103 on each other (414 in all); the last
 *     to start is TPU:1's, at 97167700625;
 *   events | grep 'index_on_host=1 ' | awk -F'\t' '$2 < 97167700625' |
 *     sort -t$'\t' -k2,2n | tail -1: tpu:1 when it starts, bytes_reserved=
 *     21491712000 (the README's "up to 21,491,712,000") and bytes_allocated=
 *     853248, which the blocks seen allocated explain: what no block
 *     explains is the reservation;
 *   planes: device_type_string=TPU v6 Lite on the four device planes (the
 *     README's "4× TPU v6 Lite"; no gpu_device_name). */
static void check_tpu_rows(struct fixture *f)
{
	static const struct tsv_want free1[] = {
		{ "allocator", "tpu:0" },
		{ "kind", "free" },
		{ "bytes", "512" },
		{ "requested_bytes", "" },
		{ "addr", "33550205952" },
		{ "in_use_after_bytes", "67072" },
	};
	assert_row(file(f, "runtime/events.tsv"), "time_ns", "5353468373", free1, sizeof free1 / sizeof *free1);
	static const struct tsv_want last[] = {
		{ "device", "1" },
		{ "start_ns", "97167700625" },
		{ "in_use_at_start_bytes", "21492565248" }, /* 21491712000 + 853248 */
	};
	assert_int_equal(f->rt->nexecutions, 414);
	assert_row(file(f, "runtime/executions.tsv"), "n", "414", last, sizeof last / sizeof *last);
	/* the one row with no address: what no block explains (SPEC §4.3) */
	const char *live = file(f, "runtime/executions/414/live.tsv");
	assert_non_null(strstr(tsv_field(live, "addr", "", "origin"), "allocated before the capture started"));
	assert_string_equal(tsv_field(live, "addr", "", "bytes"), "21491712000");
	const char *dev = file(f, "capture/devices.tsv");
	char name[32];
	for (int d = 0; d < 4; d++) {
		snprintf(name, sizeof name, "/device:TPU:%d", d);
		assert_string_equal(tsv_field(dev, "name", name, "device_name"), "TPU v6 Lite");
	}
	assert_non_null(strstr(file(f, "summary.txt"), "/device:TPU:3: name TPU v6 Lite,"));
}

static void test_tpu(void **state)
{
	struct fixture f;
	(void)state;
	if (!open_capture(&f, "tpu-v6e-inference.xplane.pb"))
		skip();
	assert_true(f.rt->keyed_by_index);
	uint64_t na = 0, nd = 0, peak = 0;
	for (size_t i = 0; i < f.rt->nallocators; i++) {
		const xpf_rt_allocator *a = &f.rt->allocators[i];
		assert_true(a->keyed_by_index);
		assert_int_equal(strncmp(a->name, "tpu:", 4), 0);
		na += a->allocations;
		nd += a->deallocations;
		if (a->lifetime_peak_bytes > peak)
			peak = a->lifetime_peak_bytes;
	}
	assert_int_equal(na, 453);
	assert_int_equal(nd, 453);
	assert_int_equal(peak, 16106341504ull);
	/* in use counts bytes_reserved: above the lifetime peak */
	assert_true(allocator(f.rt, "tpu:0")->peak_in_window_bytes > 16106341504ull);
	/* executions from the XLA Modules lines, linked by full name: 100
	 * events of jit_f on each device's (check_tpu_rows) */
	long jf = module_index(&f, "jit_f(12190760917235803885)");
	size_t njf = 0;
	for (size_t i = 0; i < f.rt->nexecutions; i++)
		njf += f.rt->executions[i].module == jf;
	assert_int_equal(njf, 400);
	/* counted once: device 0's XLA Modules line holds 105 events (issue
	 * 36); the host's TfrtTpuLoadedExecutable::Execute of two of them are
	 * the same runs, not executions of their own */
	size_t ndev0 = 0;
	for (size_t i = 0; i < f.rt->nexecutions; i++)
		ndev0 += f.rt->executions[i].device == 0;
	assert_int_equal(ndev0, 105);
	assert_non_null(strstr(file(&f, "runtime/summary.txt"), "keyed by index_on_host"));
	/* TPU frees carry no requested_bytes or allocation_bytes: empty in
	 * events.tsv (bytes comes from the matched allocation) */
	size_t nfree = 0;
	for (size_t i = 0; i < f.rt->nevents; i++) {
		const xpf_rt_event *e = &f.rt->events[i];
		assert_int_equal(xpf_rt_ev_has_requested(f.rt, e), e->kind == XPF_RT_ALLOC);
		nfree += e->kind == XPF_RT_DEALLOC;
	}
	assert_int_equal(nfree, 453);
	check_tpu_rows(&f);
	check_invariants(&f);
	close_capture(&f);
}

static void test_conv_run(void **state)
{
	struct fixture f;
	(void)state;
	if (!open_capture(&f, "mi300x-conv-run"))
		skip();
	uint64_t na = 0, nd = 0;
	size_t pools = 0;
	for (size_t i = 0; i < f.rt->nallocators; i++) {
		const xpf_rt_allocator *a = &f.rt->allocators[i];
		na += a->allocations;
		nd += a->deallocations;
		pools += a->is_pool;
		assert_int_equal(a->lifetime_peak_bytes, a->device == 0 ? 1737217024ull : 1739215104ull);
	}
	assert_int_equal(pools, 8);
	assert_int_equal(na, 230);
	assert_int_equal(nd, 230);
	/* one Execute fans out into per-device runs on eight threads; the
	 * device comes from the allocations in Build buffer allocations */
	long conv = module_index(&f, "jit_forward_3d_conv(15)");
	size_t per_dev[8] = { 0 };
	for (size_t i = 0; i < f.rt->nexecutions; i++) {
		const xpf_rt_execution *x = &f.rt->executions[i];
		if (x->module != conv)
			continue;
		assert_true(x->device >= 0 && x->device < 8);
		per_dev[x->device]++;
		assert_int_equal(x->module_execution, per_dev[x->device]);
		/* temp 572,026,880 + output 579,072,128 joined to the plan */
		assert_int_equal(x->nmatched, 2);
	}
	/* 10 Execute events; 80 `jit_forward_3d_conv:XLA GPU module` on the 8
	 * py_xla_execute threads (python3 tests/figures/read-xspace.py events
	 * CAPTURE/<host>.xplane.pb | cut -f1,4 | sort | uniq -c) */
	for (int d = 1; d < 8; d++)
		assert_int_equal(per_dev[d], 10);
	/* the run records kernels on few devices: no execution is taken for
	 * one that never launched (SPEC §4.3: only `no` counts), nor does the
	 * diagnosis say so */
	for (size_t i = 0; i < f.rt->nexecutions; i++)
		assert_int_not_equal(f.rt->executions[i].launched, XPF_LAUNCHED_NO);
	assert_null(strstr(file(&f, "diagnosis.txt"), "never-launched"));
	check_invariants(&f);
	close_capture(&f);
}

/* An integer of the scenario's "runtime" section (or of its "human"
 * part for a string: scn_str). */
static long long scn_int(struct fixture *f, const char *key)
{
	json_t *v = json_object_get(f->scn_rt, key);
	if (!json_is_integer(v))
		fail_msg("scenario runtime figure %s missing or not an integer", key);
	return json_integer_value(v);
}

static const char *scn_human(struct fixture *f, const char *key)
{
	json_t *v = json_object_get(json_object_get(f->scn_rt, "human"), key);
	if (!json_is_string(v))
		fail_msg("scenario runtime human.%s missing or not a string", key);
	return json_string_value(v);
}

/* The figures every scenario states: executions, in use at each start,
 * retries and the executions that never launched (one device). */
static void check_scenario_figures(struct fixture *f)
{
	const xpf_runtime *rt = f->rt;
	assert_int_equal(rt->nexecutions, scn_int(f, "executions"));
	json_t *arr = json_object_get(f->scn_rt, "in_use_at_start_bytes");
	if (arr) {
		assert_int_equal(json_array_size(arr), rt->nexecutions);
		for (size_t i = 0; i < rt->nexecutions; i++)
			assert_int_equal(rt->executions[i].in_use_at_start_bytes,
					 json_integer_value(json_array_get(arr, i)));
	}
	assert_int_equal(rt->nretries, scn_int(f, "retries"));
	arr = json_object_get(f->scn_rt, "never_launched");
	size_t k = 0;
	for (size_t i = 0; i < rt->nexecutions; i++)
		if (rt->executions[i].launched == XPF_LAUNCHED_NO) {
			assert_true(k < json_array_size(arr));
			assert_int_equal(i + 1, json_integer_value(json_array_get(arr, k)));
			k++;
		}
	assert_int_equal(k, json_array_size(arr));
}

/* A training loop that keeps every step's gradients in a Python list: in
 * use at the start of each step grows by the step's outputs. */
static void test_grads_kept(void **state)
{
	struct fixture f;
	(void)state;
	if (!open_scenario(&f, "grads-kept"))
		skip();
	const xpf_runtime *rt = f.rt;
	check_scenario_figures(&f);
	const long long growth = scn_int(&f, "growth_per_execution_bytes");
	assert_true(rt->nexecutions >= 3);
	const xpf_rt_execution *first = &rt->executions[0], *last = &rt->executions[rt->nexecutions - 1];
	assert_int_equal(first->module, last->module);
	assert_int_equal(first->in_use_at_start_bytes, scn_int(&f, "in_use_at_start_first_bytes"));
	assert_int_equal(last->in_use_at_start_bytes, scn_int(&f, "in_use_at_start_last_bytes"));
	for (size_t i = 1; i < rt->nexecutions; i++) {
		assert_int_equal(rt->executions[i].module_execution, i + 1);
		assert_int_equal(xpf_rt_x_growth(rt, &rt->executions[i]), growth);
		assert_int_equal(rt->executions[i].launched, XPF_LAUNCHED_YES);
	}
	/* what is live at the last start: the outputs of every earlier step */
	xpf_rt_block *b;
	size_t nb;
	xpf_error err = { 0 };
	assert_int_equal(xpf_runtime_live_at(rt, rt->nexecutions - 1, &b, &nb, &err), XPF_OK);
	uint64_t outputs = 0;
	for (size_t i = 0; i < nb; i++)
		if (b[i].origin == XPF_ORIGIN_OUTPUTS)
			outputs += b[i].bytes;
	assert_int_equal(outputs, (rt->nexecutions - 1) * (uint64_t)growth);
	xpf_rt_blocks_free(b, nb);
	char want[256];
	snprintf(want, sizeof want, "growth since execution 1: +%s (%lld bytes)", scn_human(&f, "growth"), growth);
	const char *sum2 = file(&f, "runtime/executions/2/summary.txt");
	if (strstr(sum2, want) == NULL)
		fail_msg("'%s' not in runtime/executions/2/summary.txt:\n%s", want, sum2);
	/* between the last two steps (check_invariants counts every row): the
	 * scenario's own host events there, the list.append too */
	const xpf_rt_between *bt = focus_between(&f);
	assert_int_equal(bt->from_execution, (long)rt->nexecutions - 2);
	assert_int_equal(bt->to_execution, (long)rt->nexecutions - 1);
	assert_int_equal(bt->nrows, 7);
	const char *k;
	json_t *v;
	const char *between = file(&f, "runtime/between.tsv");
	json_object_foreach(json_object_get(f.scn_rt, "between"), k, v) {
		snprintf(want, sizeof want, "%s\t%lld\t", k, (long long)json_integer_value(v));
		if (strstr(between, want) == NULL)
			fail_msg("'%s' not in runtime/between.tsv:\n%s", want, between);
	}
	assert_non_null(strstr(between, "append\t1\t"));
	check_invariants(&f);
	close_capture(&f);
}

/* An attention block too big for the pool: the temp allocation waits in
 * AllocatorRetry::AllocateRaw and the execution never launches. */
static void test_attention_too_big(void **state)
{
	struct fixture f;
	(void)state;
	if (!open_scenario(&f, "attention-too-big"))
		skip();
	const xpf_runtime *rt = f.rt;
	check_scenario_figures(&f);
	const char *alloc = json_string_value(json_object_get(f.scn_rt, "allocator"));
	assert_non_null(alloc);
	assert_int_equal(rt->nretries, 1);
	assert_int_equal(rt->retries[0].duration_ns, scn_int(&f, "retry_ns"));
	assert_true(rt->retries[0].execution >= 0);
	const xpf_rt_execution *x = &rt->executions[rt->retries[0].execution];
	assert_int_equal(x->launched, XPF_LAUNCHED_NO);
	assert_true(x->stopped_in_build);
	assert_true(x->module >= 0);
	assert_string_equal(rt->allocators[rt->retries[0].allocator].name, alloc);
	char want[256];
	snprintf(want, sizeof want, "\t%lld\t%s\t", scn_int(&f, "retry_ns"), alloc);
	assert_non_null(strstr(file(&f, "runtime/retries.tsv"), want));
	json_t *nl = json_object_get(f.scn_rt, "never_launched");
	assert_int_equal(json_array_size(nl), 1);
	snprintf(want, sizeof want, "never launched: execution %lld", (long long)json_integer_value(json_array_get(nl, 0)));
	assert_non_null(strstr(file(&f, "runtime/summary.txt"), want));
	check_invariants(&f);
	close_capture(&f);
}

/* Arrays put on the device outside the step take the room: the transfer
 * is the largest origin of what is live when the step starts. */
static void test_foreign_arrays(void **state)
{
	struct fixture f;
	(void)state;
	if (!open_scenario(&f, "foreign-arrays"))
		skip();
	const xpf_runtime *rt = f.rt;
	check_scenario_figures(&f);
	assert_true(rt->nexecutions >= 1);
	xpf_rt_block *b;
	size_t nb;
	xpf_error err = { 0 };
	assert_int_equal(xpf_runtime_live_at(rt, rt->nexecutions - 1, &b, &nb, &err), XPF_OK);
	assert_int_equal(nb, 12);
	size_t best = 0;
	for (size_t i = 1; i < nb; i++)
		if (b[i].bytes > b[best].bytes)
			best = i;
	assert_int_equal(b[best].origin, XPF_ORIGIN_TRANSFER);
	xpf_rt_blocks_free(b, nb);
	check_invariants(&f);
	close_capture(&f);
}

/* Two device planes of one ordinal (tests/bad's dev-dup-ordinal): a kernel of
 * each at the same time, naming jit_f(1) (the first plane) and jit_g(2) (the
 * second, bigger one), and an execution that names no module: the kernels
 * rule links it to the first plane's. */
static void test_dup_ordinal(void **state)
{
	struct fixture f;
	char path[4096];
	const char *src = getenv("XPF_SOURCE");
	(void)state;
	snprintf(path, sizeof path, "%s/tests/bad/cases/dev-dup-ordinal.xplane.pb", src ? src : ".");
	open_path(&f, path);
	assert_int_equal(f.rt->nexecutions, 1);
	assert_int_equal(f.rt->executions[0].module, module_index(&f, "jit_f(1)"));
	assert_int_equal(f.rt->executions[0].link, XPF_LINK_KERNELS);
	assert_int_equal(f.rt->executions[0].launched, XPF_LAUNCHED_YES);
	check_invariants(&f);
	close_capture(&f);
}

/* After the real group, only where XPF_THREADS is 2 or more (the suite's
 * runtime-threads-real; not a cmocka skip elsewhere, which scripts/test
 * would count): the invariants above held for runtimes whose host lines
 * were shared out.  At least one fixture must have had chunks read by
 * another thread and merged, or the run proved nothing about the merge.
 * (Not after the other group: its scenario captures are not counted, and
 * dev-dup-ordinal alone is never cut into chunks.) */
static void test_shared_out(void **state)
{
	(void)state;
	if (nopened == 0) {
		fprintf(stderr, "skip: no capture opened\n");
		skip();
	}
	fprintf(stderr, "%zu runtimes, %zu chunks of host lines read by other threads\n", nopened,
		nmerged);
	assert_true(nmerged > 0);
}

/* The shape of a big job (xplane-mkcapture --job): a Python tracer's line
 * of no event the runtime takes anything from, long enough to have pieces
 * (read light: only its bounds and its pieces' are kept), and the variant
 * with those calls on the execute events' line, around them (read light up
 * to the first execute, then nested from the last call at the top level
 * before it).  Both give the runtime's invariants, the same executions and
 * allocator events, and between.tsv equal to a plain count of every host
 * event in its window (read through the pieces). */
static void test_job_lines(void **state)
{
	(void)state;
	struct fixture f, g;
	char path[8192];
	if (!make_capture("--job 2000 --steps 3", "job", path, sizeof path))
		skip();
	open_path(&f, path);
	unlink(path);
	check_invariants(&f);
	check_between(&f);
	assert_true(focus_between(&f)->nrows > 0);
	if (!make_capture("--job 2000 --steps 3 --variant python-main", "job-python-main", path,
			  sizeof path))
		skip();
	open_path(&g, path);
	unlink(path);
	check_invariants(&g);
	check_between(&g);
	assert_int_equal(g.rt->nexecutions, f.rt->nexecutions);
	assert_int_equal(g.rt->nevents, f.rt->nevents);
	for (size_t i = 0; i < f.rt->nexecutions; i++) {
		assert_int_equal(g.rt->executions[i].start_ps, f.rt->executions[i].start_ps);
		assert_int_equal(g.rt->executions[i].module, f.rt->executions[i].module);
	}
	close_capture(&f);
	close_capture(&g);
}

int main(int argc, char **argv)
{
	/* XPF_THREADS (the suite's runtime-threads): the host lines shared out
	 * between that many threads even on these small captures, so that the
	 * tests check runtimes made by the merge */
	const char *t = getenv("XPF_THREADS");
	if (t && *t) {
		rt_options.threads = atoi(t);
		rt_options.share_small = true;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grads_kept),
		cmocka_unit_test(test_attention_too_big),
		cmocka_unit_test(test_foreign_arrays),
		cmocka_unit_test(test_dup_ordinal),
		cmocka_unit_test(test_job_lines),
	};
	const struct CMUnitTest real[] = {
		cmocka_unit_test(test_attention),
		cmocka_unit_test(test_gemm),
		cmocka_unit_test(test_tf),
		cmocka_unit_test(test_tpu),
		cmocka_unit_test(test_conv_run),
	};
	const struct CMUnitTest merged[] = {
		cmocka_unit_test(test_shared_out),
	};
	const char *threads = getenv("XPF_THREADS");
	bool want_real;
	int rc = xpf_test_group(argc, argv, &want_real);
	if (rc >= 0)
		return rc;
	if (!want_real) {
		rc = cmocka_run_group_tests_name("runtime", tests, NULL, NULL);
	} else {
		rc = cmocka_run_group_tests_name("runtime-real", real, NULL, NULL);
		if (threads && atoi(threads) >= 2)
			rc += cmocka_run_group_tests_name("runtime-merged", merged, NULL, NULL);
	}
	return rc;
}
