/* runtime/: the allocator's events and the executions, rendered (SPEC §3,
 * §4.3).  The files exist whatever the capture holds, so the tree's shape
 * is known without decoding anything; the runtime is computed on the first
 * read of any of them.  runtime/executions/ is populated on first listing,
 * one directory per execution. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/paths.h"
#include "tree/report.h"
#include "analysis/diagnosis/diagnosis.h"
#include "tree/render/pprof.h"
#include "analysis/runtime/runtime.h"
#include "tree/render/svg.h"
#include "tree/render/trace_json.h"
#include "common/alloc.h"

static const char *module_name(const xpf_host *h, const xpf_rt_execution *x)
{
	if (x->module >= 0)
		return xpf_capture_module(h->cap, (size_t)x->module)->name;
	return NULL;
}

static const char *alloc_name(const xpf_runtime *rt, int a)
{
	return a >= 0 ? rt->allocators[a].name : NULL;
}

static void put_u64(xpf_buf *out, uint64_t v) { xpf_buf_printf(out, "%" PRIu64, v); }

/* ---- summary.txt -------------------------------------------------------- */

static void summary_no_events(const xpf_runtime *rt, xpf_buf *out)
{
	xpf_buf_adds(out, "allocator events: none");
	xpf_buf_adds(out, rt->has_host_plane ? " (the /host:CPU plane holds no MemoryAllocation or "
					       "MemoryDeallocation events)\n" :
					       " (the capture has no /host:CPU plane)\n");
	xpf_buf_adds(out,
		     "  The BFC allocator emits them (JAX's default GPU allocator, "
		     "XLA_PYTHON_CLIENT_ALLOCATOR=default or bfc);\n"
		     "  cuda_async, vmm and platform allocators do not.  To capture them: run with the BFC\n"
		     "  allocator and the host tracer on (jax.profiler.trace / start_trace with the default\n"
		     "  host_tracer_level of 2 or more), then save the capture again.\n"
		     "  Without them, in-use bytes, live blocks and retries are unknown; the plan (modules/)\n"
		     "  is still complete.\n");
}

/* Each allocator: capacity, peaks, counts, what is in use at the end. */
static void summary_allocators(const xpf_runtime *rt, xpf_buf *out)
{
	char h1[32], h2[32], h3[32];
	xpf_buf nb = XPF_BUF_INIT;
	xpf_buf_printf(out, "allocators: %zu, keyed by %s\n", rt->nallocators,
		       rt->keyed_by_index ? "index_on_host (TPU style, named tpu:<n>)" :
					    "allocator_name");
	for (size_t i = 0; i < rt->nallocators; i++) {
		const xpf_rt_allocator *a = &rt->allocators[i];
		xpf_buf_printf(out,
			       "  %s%s: capacity %s, peak in window %s at %" PRId64
			       " ns, lifetime peak %s [measured]\n",
			       xpf_text_of(&nb, a->name),
			       a->is_pool     ? " (device pool)" :
			       a->device >= 0 ? " (collective)" :
						" (host)",
			       xpf_human(a->capacity_bytes, h1),
			       xpf_human(a->peak_in_window_bytes, h2), a->peak_ns,
			       xpf_human(a->lifetime_peak_bytes, h3));
		xpf_buf_printf(out, "    %" PRIu64 " allocations, %" PRIu64 " deallocations",
			       a->allocations, a->deallocations);
		if (a->unmatched_deallocations)
			xpf_buf_printf(out,
				       ", %" PRIu64 " deallocations of blocks allocated before the "
				       "capture (%s)",
				       a->unmatched_deallocations,
				       xpf_human(a->unmatched_deallocated_bytes, h1));
		xpf_buf_printf(out,
			       "; in use at the end %s, of which %s in %" PRIu64
			       " blocks allocated during the capture [measured]\n",
			       xpf_human(a->live_at_end_bytes, h1),
			       xpf_human(a->seen_live_at_end_bytes, h2), a->seen_live_at_end_blocks);
	}
	xpf_buf_release(&nb);
}

/* The executions: how many were launched, per module the bytes in use at
 * the start of the first eight, and those never launched. */
static void summary_executions(xpf_host *h, const xpf_runtime *rt, xpf_buf *out)
{
	char h1[32];
	xpf_buf nb = XPF_BUF_INIT;
	size_t launched[3] = { 0, 0, 0 }, ambiguous = 0;
	for (size_t i = 0; i < rt->nexecutions; i++) {
		launched[rt->executions[i].launched]++;
		ambiguous += rt->executions[i].module < 0;
	}
	xpf_buf_printf(out,
		       "executions: %zu (launched: %zu yes, %zu no, %zu unknown; %zu not linked to "
		       "one module)\n",
		       rt->nexecutions, launched[XPF_LAUNCHED_YES], launched[XPF_LAUNCHED_NO],
		       launched[XPF_LAUNCHED_UNKNOWN], ambiguous);
	for (size_t m = 0; m < h->nmodules; m++) {
		size_t cnt = 0;
		for (size_t i = 0; i < rt->nexecutions; i++)
			cnt += rt->executions[i].module == (long)m;
		if (!cnt)
			continue;
		xpf_buf_printf(out, "  %s: %zu executions; in use at start:",
			       xpf_text_of(&nb, xpf_capture_module(h->cap, m)->name), cnt);
		size_t shown = 0;
		for (size_t i = 0; i < rt->nexecutions && shown < 8; i++) {
			const xpf_rt_execution *x = &rt->executions[i];
			if (x->module != (long)m || !x->in_use_known)
				continue;
			xpf_buf_printf(out, "%s %s", shown ? "," : "",
				       xpf_human(x->in_use_at_start_bytes, h1));
			shown++;
		}
		if (shown < cnt)
			xpf_buf_adds(out, shown ? ", …" : " unknown");
		xpf_buf_adds(out, " [measured]\n");
	}
	for (size_t i = 0; i < rt->nexecutions; i++) {
		const xpf_rt_execution *x = &rt->executions[i];
		if (x->launched == XPF_LAUNCHED_NO)
			xpf_buf_printf(out,
				       "  never launched: execution %u (%s execution %u, device %d)%s\n",
				       x->n,
				       module_name(h, x) ? xpf_text_of(&nb, module_name(h, x)) :
							   "ambiguous",
				       x->module_execution, x->device,
				       x->stopped_in_build ? ", stopped in Build buffer allocations" :
							     "");
	}
	xpf_buf_release(&nb);
}

static void summary_retries(const xpf_runtime *rt, xpf_buf *out)
{
	xpf_buf nb = XPF_BUF_INIT;
	xpf_buf_printf(out, "allocator retries: %zu\n", rt->nretries);
	for (size_t i = 0; i < rt->nretries; i++) {
		const xpf_rt_retry *r = &rt->retries[i];
		xpf_buf_printf(out, "  at %" PRId64 " ns: waited %" PRId64 " ns on %s", r->time_ns,
			       r->duration_ns,
			       alloc_name(rt, r->allocator) ?
				       xpf_text_of(&nb, alloc_name(rt, r->allocator)) :
				       "an unknown allocator");
		if (r->execution >= 0)
			xpf_buf_printf(out, " in execution %u (launched: %s)",
				       rt->executions[r->execution].n,
				       xpf_launched_name(rt->executions[r->execution].launched));
		xpf_buf_adds(out, " [measured]\n");
	}
	xpf_buf_release(&nb);
}

/* The host events between the focus module's last two executions
 * (between.tsv), or why there are none. */
static void summary_between(xpf_host *h, const xpf_runtime *rt, const xpf_diagnosis *d, xpf_buf *out)
{
	const xpf_rt_between *b = &d->between;
	xpf_buf nb = XPF_BUF_INIT;
	const char *name =
		b->module >= 0 ?
			xpf_text_of(&nb, xpf_capture_module(h->cap, (size_t)b->module)->name) :
			NULL;
	if (b->module >= 0 && b->from_execution >= 0) {
		uint64_t cnt = 0;
		for (size_t i = 0; i < b->nrows; i++)
			cnt += b->rows[i].count;
		xpf_buf_printf(out,
			       "between the last two executions of %s on device %d (executions %u and %u, "
			       "%" PRId64 " to %" PRId64 " ns): %" PRIu64
			       " host events of %zu kinds (between.tsv)\n",
			       name, b->device, rt->executions[b->from_execution].n,
			       rt->executions[b->to_execution].n, b->from_ns, b->to_ns, cnt,
			       b->nrows);
	} else if (b->module >= 0) {
		if (d->between_error.code != XPF_OK)
			xpf_buf_printf(out,
				       "between: the host events after %s's executions could not be read (capture/errors.txt)\n",
				       name);
		else if (d->execution < 0)
			xpf_buf_printf(out,
				       "between: %s, the focus, did not run in the capture; between.tsv is empty\n",
				       name);
		else
			xpf_buf_printf(out,
				       "between: %s ran fewer than two times on one device; between.tsv is empty\n",
				       name);
	}
	xpf_buf_release(&nb);
}

static int render_summary(xpf_host *h, const xpf_node *n, xpf_buf *out, xpf_error *err)
{
	const xpf_runtime *rt;
	int rc = xpf_host_runtime(h, &rt, err);
	if (rc != XPF_OK)
		return rc;
	xpf_buf_adds(out,
		     "# What the allocator did (measured: from the capture's allocator and execution events).\n");
	if (!rt->has_events)
		summary_no_events(rt, out);
	else
		summary_allocators(rt, out);
	summary_executions(h, rt, out);
	summary_retries(rt, out);
	const xpf_diagnosis *d;
	rc = xpf_host_diagnosis(h, &d, err);
	if (rc != XPF_OK)
		return rc;
	summary_between(h, rt, d, out);
	(void)n;
	return XPF_OK;
}

/* ---- TSV files ---------------------------------------------------------- */

static int render_allocators(xpf_host *h, const xpf_node *n, xpf_buf *out, xpf_error *err)
{
	const xpf_runtime *rt;
	int rc = xpf_host_runtime(h, &rt, err);
	if (rc != XPF_OK)
		return rc;
	xpf_buf_adds(out,
		     "allocator\tcapacity_bytes\tpeak_in_window_bytes\tlifetime_peak_bytes\tallocations"
		     "\tdeallocations\tunmatched_deallocations\tlive_at_end_bytes\tdevice\tpool\tkeyed_by"
		     "\tpeak_in_window_human\tpeak_ns\tseen_live_at_end_bytes\tseen_live_at_end_blocks\n");
	for (size_t i = 0; i < rt->nallocators; i++) {
		const xpf_rt_allocator *a = &rt->allocators[i];
		char hb[32];
		xpf_buf_tsv(out, a->name);
		xpf_buf_printf(out,
			       "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64
			       "\t%" PRIu64 "\t%" PRIu64 "\t",
			       a->capacity_bytes, a->peak_in_window_bytes, a->lifetime_peak_bytes,
			       a->allocations, a->deallocations, a->unmatched_deallocations,
			       a->live_at_end_bytes);
		if (a->device >= 0)
			xpf_buf_printf(out, "%d", a->device);
		xpf_buf_printf(out, "\t%s\t%s\t%s\t%" PRId64 "\t%" PRIu64 "\t%" PRIu64 "\n",
			       a->is_pool ? "yes" : "no",
			       a->keyed_by_index ? "index_on_host" : "allocator_name",
			       xpf_human(a->peak_in_window_bytes, hb), a->peak_ns,
			       a->seen_live_at_end_bytes, a->seen_live_at_end_blocks);
	}
	(void)n;
	return XPF_OK;
}

static const char *role_name(enum xpf_rt_role r)
{
	switch (r) {
	case XPF_RT_ROLE_TEMP: return "temp";
	case XPF_RT_ROLE_OUTPUT: return "output";
	case XPF_RT_ROLE_EXEC_OTHER: return "execution";
	default: return NULL;
	}
}

static int render_events(xpf_host *h, const xpf_node *n, xpf_buf *out, xpf_error *err)
{
	const xpf_runtime *rt;
	int rc = xpf_host_runtime(h, &rt, err);
	if (rc != XPF_OK)
		return rc;
	xpf_buf_reserve(out, rt->nevents * 128 + 256);
	xpf_buf_adds(out,
		     "time_ns\tallocator\tkind\tbytes\trequested_bytes\taddr\tin_use_after_bytes\tthread"
		     "\thost_event\texecution\trole\tbuffer_allocation\tshape\n");
	for (size_t i = 0; i < rt->nevents; i++) {
		const xpf_rt_event *e = &rt->events[i];
		xpf_buf_printf(out, "%" PRId64 "\t", xpf_rt_ev_ns(e));
		xpf_buf_tsv(out, rt->allocators[xpf_rt_ev_allocator(rt, e)].name);
		xpf_buf_printf(out, "\t%s\t", e->kind == XPF_RT_ALLOC ? "alloc" : "free");
		if (xpf_rt_ev_has_bytes(rt, e)) /* missing values are empty */
			xpf_buf_printf(out, "%" PRIu64, xpf_rt_ev_bytes(rt, e));
		xpf_buf_addc(out, '\t');
		if (xpf_rt_ev_has_requested(rt, e))
			xpf_buf_printf(out, "%" PRIu64, xpf_rt_ev_requested(rt, e));
		xpf_buf_printf(out, "\t%" PRIu64 "\t%" PRIu64 "\t%" PRId64 "\t", e->addr,
			       e->in_use_after, xpf_rt_ev_thread(rt, e));
		xpf_buf_tsv(out, xpf_rt_ev_enclosing(rt, e));
		xpf_buf_addc(out, '\t');
		if (e->execution >= 0)
			xpf_buf_printf(out, "%u", rt->executions[e->execution].n);
		xpf_buf_addc(out, '\t');
		xpf_buf_tsv(out, e->kind == XPF_RT_ALLOC ? role_name(e->role) : NULL);
		xpf_buf_addc(out, '\t');
		if (e->buffer_allocation >= 0)
			xpf_buf_printf(out, "%ld", (long)e->buffer_allocation);
		xpf_buf_addc(out, '\t');
		xpf_buf_tsv(out, xpf_rt_ev_shape(rt, e));
		xpf_buf_addc(out, '\n');
	}
	(void)n;
	return XPF_OK;
}

static void put_execution_row(xpf_host *h, const xpf_runtime *rt, const xpf_rt_execution *x,
			      xpf_buf *out)
{
	char hb[32];
	xpf_buf_printf(out, "%u\t", x->n);
	if (x->device >= 0)
		xpf_buf_printf(out, "%d", x->device);
	xpf_buf_addc(out, '\t');
	xpf_buf_tsv(out, module_name(h, x) ? module_name(h, x) : "ambiguous");
	xpf_buf_addc(out, '\t');
	if (x->module_execution)
		xpf_buf_printf(out, "%u", x->module_execution);
	xpf_buf_printf(out, "\t%" PRId64 "\t%" PRId64 "\t%s\t", xpf_rt_x_start_ns(x),
		       xpf_rt_x_end_ns(x), xpf_launched_name(x->launched));
	if (x->in_use_known)
		put_u64(out, x->in_use_at_start_bytes);
	xpf_buf_addc(out, '\t');
	if (x->in_use_known)
		put_u64(out, x->peak_during_bytes);
	xpf_buf_printf(out, "\t%u\t%u\t", x->allocations, x->deallocations);
	if (x->in_use_known)
		xpf_buf_adds(out, xpf_human(x->in_use_at_start_bytes, hb));
	xpf_buf_addc(out, '\t');
	if (x->prev >= 0 && x->in_use_known)
		xpf_buf_printf(out, "%" PRId64, xpf_rt_x_growth(rt, x));
	xpf_buf_printf(out, "\t%s\t", xpf_link_name(x->link));
	xpf_buf_tsv(out, x->host_name);
	xpf_buf_printf(out, "\t%" PRIu64 "\t%" PRIu64 "\t", x->temp_bytes, x->output_bytes);
	xpf_buf_tsv(out, alloc_name(rt, x->allocator));
	xpf_buf_addc(out, '\t');
	xpf_buf_tsv(out, x->event_name);
	xpf_buf_addc(out, '\n');
}

static const char executions_header[] =
	"n\tdevice\tmodule\tmodule_execution\tstart_ns\tend_ns\tlaunched\tin_use_at_start_bytes"
	"\tpeak_during_bytes\tallocations\tdeallocations\tin_use_at_start_human\tgrowth_bytes\tlink"
	"\thost_name\ttemp_bytes\toutput_bytes\tallocator\tevent\n";

static int render_executions(xpf_host *h, const xpf_node *n, xpf_buf *out, xpf_error *err)
{
	const xpf_runtime *rt;
	int rc = xpf_host_runtime(h, &rt, err);
	if (rc != XPF_OK)
		return rc;
	xpf_buf_adds(out, executions_header);
	for (size_t i = 0; i < rt->nexecutions; i++)
		put_execution_row(h, rt, &rt->executions[i], out);
	(void)n;
	return XPF_OK;
}

static int render_retries(xpf_host *h, const xpf_node *n, xpf_buf *out, xpf_error *err)
{
	const xpf_runtime *rt;
	int rc = xpf_host_runtime(h, &rt, err);
	if (rc != XPF_OK)
		return rc;
	xpf_buf_adds(out, "time_ns\tduration_ns\tallocator\tthread\texecution\tmodule\tlaunched\n");
	for (size_t i = 0; i < rt->nretries; i++) {
		const xpf_rt_retry *r = &rt->retries[i];
		xpf_buf_printf(out, "%" PRId64 "\t%" PRId64 "\t", r->time_ns, r->duration_ns);
		xpf_buf_tsv(out, alloc_name(rt, r->allocator));
		xpf_buf_printf(out, "\t%" PRId64 "\t", r->thread);
		if (r->execution >= 0) {
			const xpf_rt_execution *x = &rt->executions[r->execution];
			xpf_buf_printf(out, "%u\t", x->n);
			xpf_buf_tsv(out, module_name(h, x) ? module_name(h, x) : "ambiguous");
			xpf_buf_printf(out, "\t%s", xpf_launched_name(x->launched));
		} else {
			xpf_buf_adds(out, "\t\t");
		}
		xpf_buf_addc(out, '\n');
	}
	(void)n;
	return XPF_OK;
}

static int render_compiles(xpf_host *h, const xpf_node *n, xpf_buf *out, xpf_error *err)
{
	const xpf_runtime *rt;
	int rc = xpf_host_runtime(h, &rt, err);
	if (rc != XPF_OK)
		return rc;
	xpf_buf_adds(out,
		     "function\tmodule\tstart_ns\tend_ns\tfinished\tautotuner_runs\tallocator\t"
		     "peak_in_use_bytes\tlargest_request_bytes\tin_use_at_end_bytes\tretried\tthread\n");
	for (size_t i = 0; i < rt->ncompiles; i++) {
		const xpf_rt_compile *c = &rt->compiles[i];
		xpf_buf_tsv(out, c->function);
		xpf_buf_addc(out, '\t');
		xpf_buf_tsv(out, c->module >= 0 ? xpf_capture_module(h->cap, (size_t)c->module)->name :
						  NULL);
		xpf_buf_printf(out, "\t%" PRId64 "\t%" PRId64 "\t%s\t%u\t",
			       xpf_rt_floor_ns(c->start_ps), xpf_rt_floor_ns(c->end_ps),
			       c->finished ? "yes" : "no", c->autotuner_runs);
		xpf_buf_tsv(out, alloc_name(rt, c->allocator));
		xpf_buf_printf(out, "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%s\t%" PRId64 "\n",
			       c->peak_in_use_bytes, c->largest_request_bytes,
			       c->in_use_at_end_bytes, c->retried ? "yes" : "no", c->thread);
	}
	(void)n;
	return XPF_OK;
}

/* The diagnosis chooses the focus module whose executions bound the window;
 * the runtime is read first so that its errors are this file's. */
static int render_between(xpf_host *h, const xpf_node *n, xpf_buf *out, xpf_error *err)
{
	const xpf_runtime *rt;
	const xpf_diagnosis *d;
	int rc = xpf_host_runtime(h, &rt, err);
	if (rc == XPF_OK)
		rc = xpf_host_diagnosis(h, &d, err);
	if (rc != XPF_OK)
		return rc;
	if (d->between_error.code != XPF_OK)
		return xpf_fail(err, d->between_error.code, "%s", d->between_error.msg);
	xpf_buf_adds(out, "name\tcount\ttotal_ns\n");
	for (size_t i = 0; i < d->between.nrows; i++) {
		const xpf_rt_between_row *r = &d->between.rows[i];
		xpf_buf_tsv(out, r->name);
		xpf_buf_printf(out, "\t%" PRIu64 "\t%" PRId64 "\n", r->count, r->total_ns);
	}
	(void)n;
	return XPF_OK;
}

/* ---- executions/<n>/ ------------------------------------------------------ */

/* A TSV field repeated row after row (the blocks of one origin, of one
 * host event): escaped once while the name stays the same. */
struct tsv_memo {
	const char *name;
	xpf_buf escaped;
};

static void put_tsv_memo(xpf_buf *out, struct tsv_memo *m, const char *name)
{
	if (name != m->name || m->escaped.data == NULL) {
		xpf_buf_reset(&m->escaped);
		xpf_buf_add(&m->escaped, "", 0);
		xpf_buf_tsv(&m->escaped, name);
		m->name = name;
	}
	xpf_buf_add(out, m->escaped.data, m->escaped.len);
}

/* One row per live block: a walk of the tree writes millions of them, so
 * numbers go in without printf. */
static int render_live(xpf_host *h, const xpf_node *n, xpf_buf *out, xpf_error *err)
{
	const xpf_runtime *rt;
	int rc = xpf_host_runtime(h, &rt, err);
	if (rc != XPF_OK)
		return rc;
	xpf_rt_block *b;
	size_t nb;
	rc = xpf_runtime_live_at(rt, (size_t)n->arg, &b, &nb, err);
	if (rc != XPF_OK)
		return rc;
	struct tsv_memo origin = { NULL, XPF_BUF_INIT }, event = { NULL, XPF_BUF_INIT };
	xpf_buf_adds(out,
		     "origin\tbytes\thuman\trequested_bytes\taddr\tallocated_ns\thost_event\tshape\n");
	for (size_t i = 0; i < nb; i++) {
		char hb[32];
		put_tsv_memo(out, &origin, b[i].origin_text);
		xpf_buf_addc(out, '\t');
		xpf_buf_add_u64(out, b[i].bytes);
		xpf_buf_addc(out, '\t');
		xpf_buf_adds(out, xpf_human(b[i].bytes, hb));
		xpf_buf_addc(out, '\t');
		if (b[i].event >= 0) {
			if (b[i].has_requested)
				xpf_buf_add_u64(out, b[i].requested_bytes);
			xpf_buf_addc(out, '\t');
			xpf_buf_add_u64(out, b[i].addr);
			xpf_buf_addc(out, '\t');
			xpf_buf_add_i64(out, xpf_rt_ev_ns(&rt->events[b[i].event]));
		} else
			xpf_buf_adds(out, "\t\t");
		xpf_buf_addc(out, '\t');
		put_tsv_memo(out, &event, b[i].host_event);
		xpf_buf_addc(out, '\t');
		xpf_buf_tsv(out, b[i].shape);
		xpf_buf_addc(out, '\n');
	}
	xpf_buf_release(&origin.escaped);
	xpf_buf_release(&event.escaped);
	xpf_rt_blocks_free(b, nb);
	return XPF_OK;
}

/* An ambiguous execution's candidates (SPEC §4.3), with their needs. */
static void exec_candidates(xpf_host *h, const xpf_runtime *rt, size_t xi, xpf_buf *out)
{
	const xpf_rt_candidate *cd;
	size_t n = xpf_rt_candidates(rt, xi, &cd);
	char h1[32];
	if (n == 0) {
		xpf_buf_adds(out, "candidates: none (no rule named a module)\n");
		return;
	}
	xpf_buf_printf(out, "candidates: %zu\n", n);
	for (size_t k = 0; k < n; k++) {
		uint64_t need = xpf_module_need(h, cd[k].module);
		xpf_buf_adds(out, "  ");
		xpf_buf_text(out, xpf_capture_module(h->cap, (size_t)cd[k].module)->name);
		if (need)
			xpf_buf_printf(out, ": needs %s (%" PRIu64 " bytes) [read]",
				       xpf_human(need, h1), need);
		xpf_buf_adds(out, "\n");
	}
}

static int render_exec_summary(xpf_host *h, const xpf_node *n, xpf_buf *out, xpf_error *err)
{
	const xpf_runtime *rt;
	int rc = xpf_host_runtime(h, &rt, err);
	if (rc != XPF_OK)
		return rc;
	const xpf_rt_execution *x = &rt->executions[n->arg];
	char h1[32], h2[32];
	xpf_buf nb = XPF_BUF_INIT;
	const char *m = module_name(h, x);
	xpf_buf_printf(out, "execution %u: %s", x->n, m ? xpf_text_of(&nb, m) : "ambiguous module");
	if (x->module_execution)
		xpf_buf_printf(out, " execution %u", x->module_execution);
	xpf_buf_printf(out, " on device %d\n", x->device);
	xpf_buf_printf(out, "linked by: %s%s%s%s\n", xpf_link_name(x->link),
		       x->host_name ? " (host side names " : "",
		       x->host_name ? xpf_text_of(&nb, x->host_name) : "", x->host_name ? ")" : "");
	if (x->module < 0)
		exec_candidates(h, rt, (size_t)n->arg, out);
	xpf_buf_printf(out, "host event: %s, thread %" PRId64 ", %" PRId64 " to %" PRId64 " ns\n",
		       xpf_text_of(&nb, x->event_name), x->thread, xpf_rt_x_start_ns(x),
		       xpf_rt_x_end_ns(x));
	xpf_buf_printf(out, "launched: %s%s\n", xpf_launched_name(x->launched),
		       x->stopped_in_build ? " (stopped in Build buffer allocations)" : "");
	if (x->in_use_known) {
		xpf_buf_printf(out, "in use at start: %s (%" PRIu64 " bytes) on %s [measured]\n",
			       xpf_human(x->in_use_at_start_bytes, h1), x->in_use_at_start_bytes,
			       xpf_text_of(&nb, alloc_name(rt, x->allocator)));
		xpf_buf_printf(out, "peak during: %s (%" PRIu64 " bytes) [measured]\n",
			       xpf_human(x->peak_during_bytes, h1), x->peak_during_bytes);
		int64_t g = xpf_rt_x_growth(rt, x);
		if (x->prev >= 0)
			xpf_buf_printf(out,
				       "growth since execution %u: %s%s (%" PRId64
				       " bytes) [measured]\n",
				       rt->executions[x->prev].n, g < 0 ? "-" : "+",
				       xpf_human(xpf_abs_i64(g), h2), g);
	} else {
		xpf_buf_adds(out, "in use at start: unknown (no allocator events for this device)\n");
	}
	xpf_buf_printf(out, "allocator events during it: %u allocations, %u deallocations\n",
		       x->allocations, x->deallocations);
	if (x->nmatched) {
		xpf_buf_printf(out, "joined to the plan: temp %s, outputs %s [measured]\n",
			       xpf_human(x->temp_bytes, h1), xpf_human(x->output_bytes, h2));
		/* its matched events, in event order: they lie within its span
		 * (nested in its host event), and events are sorted by time */
		size_t xi = (size_t)(x - rt->executions);
		for (size_t i = xpf_rt_first_event_at(rt, x->start_ps);
		     i < rt->nevents && rt->events[i].t_ps <= x->end_ps; i++) {
			const xpf_rt_event *e = &rt->events[i];
			if (e->execution != (int32_t)xi || e->buffer_allocation < 0)
				continue;
			xpf_buf_printf(out,
				       "  buffer allocation %ld (%s): %" PRIu64 " bytes at %" PRIu64
				       "\n",
				       (long)e->buffer_allocation,
				       e->role == XPF_RT_ROLE_OUTPUT ? "output" : "temp",
				       xpf_rt_ev_requested(rt, e), e->addr);
		}
	}
	xpf_rt_block *b;
	size_t nblocks;
	xpf_buf_release(&nb);
	rc = xpf_runtime_live_at(rt, (size_t)n->arg, &b, &nblocks, err);
	if (rc != XPF_OK)
		return rc;
	xpf_buf_adds(out, "live at start, by origin (live.tsv):\n");
	for (size_t i = 0; i < nblocks;) {
		size_t j = i;
		uint64_t sum = 0;
		while (j < nblocks && strcmp(b[j].origin_text, b[i].origin_text) == 0)
			sum += b[j++].bytes;
		xpf_buf_adds(out, "  ");
		xpf_buf_text(out, b[i].origin_text);
		xpf_buf_printf(out, ": %zu blocks, %s (%" PRIu64 " bytes)\n", j - i,
			       xpf_human(sum, h1), sum);
		i = j;
	}
	xpf_rt_blocks_free(b, nblocks);
	return XPF_OK;
}

static int populate_executions(xpf_host *h, xpf_node *dir, xpf_error *err)
{
	const xpf_runtime *rt;
	int rc = xpf_host_runtime(h, &rt, err);
	if (rc != XPF_OK)
		return rc;
	for (size_t i = 0; i < rt->nexecutions; i++) {
		char name[32];
		snprintf(name, sizeof name, "%u", rt->executions[i].n);
		xpf_node *d = xpf_node_dir(dir, name, NULL, (long)i);
		xpf_node_file(d, XPF_F_LIVE_TSV, render_live, (long)i)->made_when_listed = true;
		xpf_node_file(d, XPF_F_SUMMARY_TXT, render_exec_summary, (long)i)->made_when_listed =
			true;
		xpf_node_file_of(d, XPF_F_LIVE_PB_GZ, xpf_render_live_pprof, (long)i)->made_when_listed =
			true;
	}
	return XPF_OK;
}

static int render_timeline_svg(xpf_host *h, long arg, xpf_buf *out, xpf_error *err)
{
	const xpf_runtime *rt;
	int rc = xpf_host_runtime(h, &rt, err);
	if (rc != XPF_OK)
		return rc;
	size_t nm = xpf_capture_nmodules(h->cap);
	const char **names = xpf_malloc((nm ? nm : 1) * sizeof *names);
	for (size_t i = 0; i < nm; i++)
		names[i] = xpf_capture_module(h->cap, i)->name;
	xpf_svg_timeline(rt, names, nm, out);
	free(names);
	return XPF_OK;
}

void xpf_tree_runtime(xpf_host *h, xpf_node *dir)
{
	(void)h;
	xpf_node_file(dir, XPF_F_SUMMARY_TXT, render_summary, 0);
	xpf_node_file(dir, XPF_F_ALLOCATORS_TSV, render_allocators, 0);
	xpf_node_file(dir, XPF_F_EVENTS_TSV, render_events, 0);
	xpf_node_file(dir, XPF_F_EXECUTIONS_TSV, render_executions, 0);
	xpf_node_dir(dir, XPF_D_EXECUTIONS, populate_executions, 0);
	xpf_node_file(dir, XPF_F_RETRIES_TSV, render_retries, 0);
	xpf_node_file(dir, XPF_F_COMPILES_TSV, render_compiles, 0);
	xpf_node_file(dir, XPF_F_BETWEEN_TSV, render_between, 0);
	xpf_node_file_of(dir, XPF_F_TIMELINE_SVG, render_timeline_svg, 0);
	xpf_node_file_of(dir, XPF_F_MEMORY_TRACE_JSON, xpf_render_trace_json, 0);
}
