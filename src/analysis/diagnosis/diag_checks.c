/* checks.txt: the self-consistency checks a careful engineer runs before
 * trusting the figures.  One line per check: STATUS<TAB>name<TAB>figures,
 * STATUS one of PASS, WARN (explained), FAIL (a bug or a broken capture). */
#include <stdio.h>
#include <string.h>

#include "analysis/diagnosis/diag_priv.h"
#include "common/alloc.h"

/* The figures hold names from the capture (allocators, modules): escaped
 * here, the one writer of a line, so that a name cannot break it (SPEC §3). */
static void line(xpf_buf *out, const char *status, const char *name, xpf_buf *fig)
{
	xpf_buf_printf(out, "%s\t%s\t", status, name);
	xpf_buf_text(out, fig->data);
	xpf_buf_addc(out, '\n');
	xpf_buf_reset(fig);
}

static uint64_t kinds_sum(const xpf_plan *p)
{
	uint64_t sum = 0;
	for (int k = 0; k < XPF_NKINDS; k++)
		sum += p->kind_bytes[k];
	return sum;
}

static uint64_t peak_rows_sum(const xpf_plan *p)
{
	uint64_t rows = 0;
	for (size_t i = 0; i < p->npeak; i++)
		rows += p->peak[i].bytes;
	return rows;
}

/* Every module's plan against its own totals: how many disagree, and the
 * first that does (-1: none). */
struct plan_tally {
	size_t nplans, bad_kinds, bad_peak, bad_heap, missing;
	long first_kinds, first_peak;
};

static struct plan_tally tally_plans(xpf_host *h)
{
	struct plan_tally t = { .first_kinds = -1, .first_peak = -1 };
	for (size_t m = 0; m < h->nmodules; m++) {
		const xpf_plan *p = xpf_diag_plan(h, (long)m);
		if (p == NULL || !p->has_assignment) {
			t.missing++;
			continue;
		}
		t.nplans++;
		if (kinds_sum(p) != p->total_bytes) {
			if (t.first_kinds < 0)
				t.first_kinds = (long)m;
			t.bad_kinds++;
		}
		if (peak_rows_sum(p) != p->heap_peak_bytes) {
			if (t.first_peak < 0)
				t.first_peak = (long)m;
			t.bad_peak++;
		}
		if (p->simulated && p->simulated_peak_bytes > p->temp_bytes)
			t.bad_heap++;
	}
	return t;
}

static void check_plans(xpf_host *h, const xpf_diagnosis *d, xpf_buf *out)
{
	xpf_buf f = XPF_BUF_INIT;
	char h1[32], h2[32], h3[32];
	struct plan_tally t = tally_plans(h);

	if (h->nmodules == 0) {
		xpf_buf_adds(&f, "no modules in the capture: no plan to check");
		line(out, "WARN", "kinds-sum-to-total", &f);
		xpf_buf_release(&f);
		return;
	}
	xpf_buf_printf(&f,
		       "%zu of %zu modules with buffer assignment: parameter + output + thread-local + constant + temp = total bytes",
		       t.nplans, h->nmodules);
	if (t.bad_kinds) {
		const xpf_plan *p = xpf_diag_plan(h, t.first_kinds);
		xpf_buf_printf(&f, "; %zu differ, e.g. %s: kinds %llu vs total %llu", t.bad_kinds,
			       p->module, (unsigned long long)kinds_sum(p),
			       (unsigned long long)p->total_bytes);
	}
	line(out, t.bad_kinds ? "FAIL" : "PASS", "kinds-sum-to-total", &f);

	xpf_buf_printf(&f, "%zu modules: the rows of peak_buffers.tsv sum to the heap peak",
		       t.nplans);
	if (t.bad_peak) {
		const xpf_plan *p = xpf_diag_plan(h, t.first_peak);
		xpf_buf_printf(&f, "; %zu differ, e.g. %s: rows %llu vs heap peak %llu", t.bad_peak,
			       p->module, (unsigned long long)peak_rows_sum(p),
			       (unsigned long long)p->heap_peak_bytes);
	}
	line(out, t.bad_peak ? "FAIL" : "PASS", "peak-rows-sum-to-heap-peak", &f);

	if (t.bad_heap) {
		xpf_buf_printf(&f, "%zu modules simulate a temp peak above their temp block",
			       t.bad_heap);
		line(out, "WARN", "simulated-peak-within-temp", &f);
	}
	if (t.missing) {
		xpf_buf_printf(&f,
			       "%zu of %zu modules have no buffer assignment (see their summary.txt)",
			       t.missing, h->nmodules);
		line(out, "WARN", "modules-without-plan", &f);
	}

	const xpf_plan *p = xpf_diag_plan(h, d->module);
	if (p && p->has_assignment && p->fragmentation_bytes != 0) {
		xpf_buf_printf(&f, "%s: temp block %s, simulated peak %s, fragmentation %s",
			       p->module, xpf_human(p->temp_bytes, h1),
			       xpf_human(p->simulated_peak_bytes, h2),
			       xpf_human(p->fragmentation_bytes, h3));
		line(out, "PASS", "temp-block-vs-simulated-peak", &f);
	}
	xpf_buf_release(&f);
}

/* Capacity = in use + available should not change while the pool lives. */
static void check_capacity_constant(const xpf_runtime *rt, xpf_buf *f, xpf_buf *out)
{
	char h1[32];
	for (size_t a = 0; a < rt->nallocators; a++) {
		const xpf_rt_allocator *al = &rt->allocators[a];
		uint64_t lo = al->capacity_lo_bytes, hi = al->capacity_hi_bytes;
		if (hi == 0)
			continue;
		if (lo == hi)
			xpf_buf_printf(f, "%s: in use + available = %llu (%s) at every event",
				       al->name, (unsigned long long)lo, xpf_human(lo, h1));
		else
			xpf_buf_printf(f, "%s: in use + available varies from %llu to %llu (%s): %s",
				       al->name, (unsigned long long)lo, (unsigned long long)hi,
				       xpf_human(hi - lo, h1),
				       al->is_pool ?
					       "the pool grew (allow_growth / no preallocation) or bytes are reserved" :
					       "a growing host allocator");
		line(out, lo == hi ? "PASS" : "WARN", "capacity-constant", f);
	}
}

static void check_unmatched(const xpf_runtime *rt, xpf_buf *f, xpf_buf *out)
{
	for (size_t a = 0; a < rt->nallocators; a++) {
		const xpf_rt_allocator *al = &rt->allocators[a];
		if (al->unmatched_deallocations == 0) {
			xpf_buf_printf(f,
				       "%s: every one of %llu deallocations matches a seen allocation",
				       al->name, (unsigned long long)al->deallocations);
			line(out, "PASS", "unmatched-deallocations", f);
		} else {
			xpf_buf_printf(f,
				       "%s: %llu of %llu deallocations (%llu bytes) free blocks allocated before the capture started",
				       al->name, (unsigned long long)al->unmatched_deallocations,
				       (unsigned long long)al->deallocations,
				       (unsigned long long)al->unmatched_deallocated_bytes);
			line(out, "WARN", "unmatched-deallocations", f);
		}
	}
}

static void check_lifetime_peak(const xpf_runtime *rt, xpf_buf *f, xpf_buf *out)
{
	char h1[32], h2[32];
	for (size_t a = 0; a < rt->nallocators; a++) {
		const xpf_rt_allocator *al = &rt->allocators[a];
		if (al->lifetime_peak_bytes > al->peak_in_window_bytes) {
			xpf_buf_printf(f,
				       "%s: lifetime peak %llu (%s) above the in-window peak %llu (%s): the pool peaked before the capture (compilation, autotuning or earlier steps)",
				       al->name, (unsigned long long)al->lifetime_peak_bytes,
				       xpf_human(al->lifetime_peak_bytes, h1),
				       (unsigned long long)al->peak_in_window_bytes,
				       xpf_human(al->peak_in_window_bytes, h2));
			line(out, "WARN", "lifetime-peak-vs-window", f);
		} else if (al->lifetime_peak_bytes < al->peak_in_window_bytes) {
			xpf_buf_printf(f,
				       "%s: lifetime peak %llu below the in-window peak %llu: in use counts reserved bytes that peak_bytes_in_use does not",
				       al->name, (unsigned long long)al->lifetime_peak_bytes,
				       (unsigned long long)al->peak_in_window_bytes);
			line(out, "WARN", "lifetime-peak-vs-window", f);
		} else {
			xpf_buf_printf(f, "%s: lifetime peak = in-window peak = %llu", al->name,
				       (unsigned long long)al->peak_in_window_bytes);
			line(out, "PASS", "lifetime-peak-vs-window", f);
		}
	}
}

/* The focus module's executions against the plan's temp block: how many
 * allocated exactly it, how many were handed a bigger chunk for it
 * (padded: one of them), how many asked for another size (other: one). */
struct temp_match {
	size_t n, same, bigger, failed;
	long padded, other;
};

static struct temp_match match_temp(const xpf_diagnosis *d, const xpf_runtime *rt,
				    const xpf_plan *p, const uint64_t *asked)
{
	struct temp_match t = { .padded = -1, .other = -1 };
	/* BFC rounds every chunk up to 256 bytes. */
	uint64_t rounded = (p->temp_bytes + 255) / 256 * 256;
	for (size_t x = 0; x < rt->nexecutions; x++) {
		const xpf_rt_execution *e = &rt->executions[x];
		if (e->module != d->module || e->temp_bytes == 0)
			continue;
		t.n++;
		if (e->temp_bytes == p->temp_bytes || e->temp_bytes == rounded) {
			t.same++;
		} else if (asked[x] == p->temp_bytes && e->temp_bytes > rounded) {
			t.bigger++;
			t.padded = (long)x;
		} else {
			t.other = (long)x;
		}
	}
	for (size_t x = 0; x < rt->nexecutions; x++)
		t.failed += rt->executions[x].module == d->module &&
			    (rt->executions[x].launched == XPF_LAUNCHED_NO ||
			     rt->executions[x].stopped_in_build);
	return t;
}

/* The plan's temp block against what the runtime asked for. */
static void check_plan_temp(const xpf_diagnosis *d, const xpf_runtime *rt, const xpf_plan *p,
			    xpf_buf *f, xpf_buf *out)
{
	/* what each execution asked for its temp allocations (temp_bytes
	 * is what the allocator handed out) */
	uint64_t *asked = xpf_calloc(rt->nexecutions ? rt->nexecutions : 1, sizeof *asked);
	for (size_t i = 0; i < rt->nevents; i++) {
		const xpf_rt_event *ev = &rt->events[i];
		if (ev->role == XPF_RT_ROLE_TEMP && ev->execution >= 0)
			asked[ev->execution] += xpf_rt_ev_requested(rt, ev);
	}
	struct temp_match t = match_temp(d, rt, p, asked);
	if (t.n == 0 && t.failed) {
		xpf_buf_printf(f,
			       "%s: plan temp %llu; its %zu execution%s stopped before the temp block was allocated (never launched): nothing to compare",
			       p->module, (unsigned long long)p->temp_bytes, t.failed,
			       t.failed == 1 ? "" : "s");
		line(out, "PASS", "plan-vs-runtime-temp", f);
	} else if (t.n == 0) {
		xpf_buf_printf(f,
			       "%s: no execution with a matched temp allocation to compare with the plan's %llu%s",
			       p->module, (unsigned long long)p->temp_bytes,
			       rt->keyed_by_index ?
				       " (TPU reserves a program's memory when it loads, not per execution)" :
				       "");
		line(out, "WARN", "plan-vs-runtime-temp", f);
	} else {
		xpf_buf_printf(f,
			       "%s: plan temp %llu; %zu of %zu executions allocated exactly that (or its 256-byte rounding)",
			       p->module, (unsigned long long)p->temp_bytes, t.same, t.n);
		if (t.bigger) {
			const xpf_rt_execution *e = &rt->executions[t.padded];
			xpf_buf_printf(f,
				       "; %zu asked for exactly that but %s handed a bigger chunk, e.g. execution %u: %llu (BFC hands out a free chunk whole when it is under twice the request and splitting it would leave under 128 MiB)",
				       t.bigger, t.bigger == 1 ? "was" : "were", e->n,
				       (unsigned long long)e->temp_bytes);
		}
		if (t.other >= 0) {
			const xpf_rt_execution *e = &rt->executions[t.other];
			xpf_buf_printf(f,
				       "; %zu asked for other temp sizes, e.g. execution %u: %llu asked, %llu handed out (it stopped before its whole temp block, or ran another shape)",
				       t.n - t.same - t.bigger, e->n,
				       (unsigned long long)asked[t.other],
				       (unsigned long long)e->temp_bytes);
		}
		line(out, t.same == t.n ? "PASS" : "WARN", "plan-vs-runtime-temp", f);
	}
	free(asked);
}

static void check_runtime(xpf_host *h, const xpf_diagnosis *d, const xpf_runtime *rt, xpf_buf *out)
{
	xpf_buf f = XPF_BUF_INIT;

	if (rt == NULL || !rt->has_events) {
		xpf_buf_adds(&f, "no allocator events: the runtime checks do not apply");
		line(out, "WARN", "runtime-present", &f);
		xpf_buf_release(&f);
		return;
	}
	check_capacity_constant(rt, &f, out);
	check_unmatched(rt, &f, out);
	check_lifetime_peak(rt, &f, out);

	size_t amb = 0;
	for (size_t x = 0; x < rt->nexecutions; x++)
		amb += rt->executions[x].module < 0;
	xpf_buf_printf(&f, "%zu of %zu executions could not be linked to exactly one module", amb,
		       rt->nexecutions);
	line(out, amb ? "WARN" : "PASS", "ambiguous-executions", &f);

	const xpf_plan *p = xpf_diag_plan(h, d->module);
	if (p && p->has_assignment)
		check_plan_temp(d, rt, p, &f, out);
	xpf_buf_release(&f);
}

static void check_capacity(xpf_host *h, const xpf_diagnosis *d, xpf_buf *out)
{
	xpf_buf f = XPF_BUF_INIT;
	char h1[32], h2[32], pc[32];

	if (d->capacity_bytes == 0) {
		xpf_buf_adds(&f,
			     "no capacity: no allocator events, no --capacity, no device memory_size");
		line(out, "WARN", "capacity-known", &f);
	} else if (d->memory_bytes && d->capacity_tag == XPF_TAG_MEASURED) {
		xpf_buf_printf(&f, "capacity %llu (%s) is %s%% of the device memory %llu (%s)%s",
			       (unsigned long long)d->capacity_bytes,
			       xpf_human(d->capacity_bytes, h1),
			       xpf_pct(d->capacity_bytes, d->memory_bytes, pc),
			       (unsigned long long)d->memory_bytes, xpf_human(d->memory_bytes, h2),
			       d->fraction_set ?
				       ": not JAX's default 75%, so XLA_PYTHON_CLIENT_MEM_FRACTION (or _PREALLOCATE) is set" :
				       ": JAX's default 75%");
		if (d->fraction_set && h->nmodules == 0)
			xpf_buf_adds(&f,
				     " (or a TensorFlow capture: TensorFlow sizes its pool differently)");
		line(out, d->fraction_set ? "WARN" : "PASS", "capacity-fraction", &f);
	}
	xpf_buf_release(&f);
}

/* SPEC §5.2: a capture that shows an OOM gets a finding that explains it. */
static void check_oom(const xpf_diagnosis *d, const xpf_runtime *rt, xpf_buf *out)
{
	xpf_buf f = XPF_BUF_INIT;
	if (rt == NULL || !rt->has_events)
		return;
	if (!xpf_diag_oom_shown(rt)) {
		xpf_buf_adds(&f,
			     "no AllocatorRetry wait and no execution that never launched: nothing to explain");
		line(out, "PASS", "oom-explained", &f);
	} else {
		const char *code = d->nfindings ? d->findings[0].code : "none";
		bool unexplained = xpf_diag_find(d, "unexplained-oom") != NULL;
		if (unexplained)
			xpf_buf_adds(&f,
				     "the capture shows an OOM and no finding explains it (unexplained-oom in diagnosis.txt)");
		else
			xpf_buf_printf(&f, "the capture shows an OOM; explained by %s", code);
		line(out, unexplained ? "FAIL" : "PASS", "oom-explained", &f);
	}
	xpf_buf_release(&f);
}

void xpf_diag_checks(xpf_host *h, const xpf_diagnosis *d, xpf_buf *out)
{
	const xpf_runtime *rt = NULL;
	xpf_error e = { 0 };

	if (!xpf_capture_is_hlo_only(h->cap) && xpf_host_runtime(h, &rt, &e) != XPF_OK)
		rt = NULL;
	check_plans(h, d, out);
	if (!xpf_capture_is_hlo_only(h->cap))
		check_runtime(h, d, rt, out);
	check_capacity(h, d, out);
	check_oom(d, rt, out);
}
