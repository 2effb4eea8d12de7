/* runtime/memory.trace.json (SPEC §9): memory over time as Chrome
 * trace-event JSON ({"traceEvents": [...]}), which Perfetto
 * (ui.perfetto.dev) and chrome://tracing open:
 *  - pid 1 "allocators": one counter track per allocator, the bytes in use
 *    after each event (events.tsv's in_use_after_bytes); an event that leaves
 *    the figure as the previous one left it adds no point, which keeps a
 *    capture of millions of events to the points that draw the curve;
 *  - pid 2 "executions": one complete event ("X") per execution, on the
 *    track of its device, args module, n, launched;
 *  - pid 3 "AllocatorRetry waits": one instant event ("i") per wait, on the
 *    track of its thread.
 * Times ("ts", "dur") are microseconds from the profile start, written with
 * three decimals so that they are the report's integer nanoseconds exactly.
 * One event a line, so that grep and head work too. */
#include <inttypes.h>
#include <stdlib.h>

#include "analysis/runtime.h"
#include "analysis/trace_json.h"
#include "common/alloc.h"

static void put_us(xpf_buf *out, const char *key, int64_t ns)
{
	uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
	xpf_buf_printf(out, ",\"%s\":%s%" PRIu64 ".%03u", key, ns < 0 ? "-" : "", a / 1000,
		       (unsigned)(a % 1000));
}

static void put_process(xpf_buf *out, int pid, const char *name)
{
	xpf_buf_printf(out,
		       "{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":",
		       pid);
	xpf_buf_json_str(out, name);
	xpf_buf_adds(out, "}},\n");
}

int xpf_render_trace_json(xpf_host *h, long arg, xpf_buf *out, xpf_error *err)
{
	const xpf_runtime *rt;
	int rc = xpf_host_runtime(h, &rt, err);
	if (rc != XPF_OK)
		return rc;
	xpf_buf_adds(out, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
	put_process(out, 1, "allocators (bytes in use)");
	put_process(out, 2, "executions");
	put_process(out, 3, "AllocatorRetry waits");

	uint64_t *last = xpf_calloc(rt->nallocators ? rt->nallocators : 1, sizeof *last);
	bool *seen = xpf_calloc(rt->nallocators ? rt->nallocators : 1, sizeof *seen);
	for (size_t i = 0; i < rt->nevents; i++) {
		const xpf_rt_event *e = &rt->events[i];
		int a = xpf_rt_ev_allocator(rt, e);
		if (seen[a] && last[a] == e->in_use_after)
			continue;
		seen[a] = true;
		last[a] = e->in_use_after;
		xpf_buf_adds(out, "{\"ph\":\"C\",\"pid\":1,\"tid\":0,\"name\":");
		xpf_buf_json_str(out, rt->allocators[a].name);
		put_us(out, "ts", xpf_rt_ev_ns(e));
		xpf_buf_printf(out, ",\"args\":{\"in_use_bytes\":%" PRIu64 "}},\n", e->in_use_after);
	}
	free(last);
	free(seen);

	for (size_t i = 0; i < rt->nexecutions; i++) {
		const xpf_rt_execution *x = &rt->executions[i];
		const char *m = x->module >= 0 && (size_t)x->module < h->nmodules ?
					xpf_capture_module(h->cap, (size_t)x->module)->name :
					"ambiguous";
		xpf_buf_printf(out, "{\"ph\":\"X\",\"pid\":2,\"tid\":%d,\"name\":", x->device);
		xpf_buf_json_str(out, m);
		put_us(out, "ts", xpf_rt_x_start_ns(x));
		put_us(out, "dur", xpf_rt_x_end_ns(x) - xpf_rt_x_start_ns(x));
		xpf_buf_adds(out, ",\"args\":{\"module\":");
		xpf_buf_json_str(out, m);
		xpf_buf_printf(out, ",\"n\":%u,\"launched\":\"%s\",\"device\":%d}},\n", x->n,
			       xpf_launched_name(x->launched), x->device);
	}

	for (size_t i = 0; i < rt->nretries; i++) {
		const xpf_rt_retry *r = &rt->retries[i];
		xpf_buf_printf(out,
			       "{\"ph\":\"i\",\"s\":\"t\",\"pid\":3,\"tid\":%" PRId64
			       ",\"name\":\"AllocatorRetry wait\"",
			       r->thread);
		put_us(out, "ts", r->time_ns);
		xpf_buf_printf(out, ",\"args\":{\"duration_ns\":%" PRId64 ",\"allocator\":",
			       r->duration_ns);
		xpf_buf_json_str(out, r->allocator >= 0 ? rt->allocators[r->allocator].name : "");
		if (r->execution >= 0)
			xpf_buf_printf(out, ",\"execution\":%u", rt->executions[r->execution].n);
		xpf_buf_adds(out, "}},\n");
	}
	/* the process list ends every line with a comma: close with an event
	 * that names the thread of the counters */
	xpf_buf_adds(out,
		     "{\"ph\":\"M\",\"pid\":1,\"tid\":0,\"name\":\"thread_name\",\"args\":{\"name\":\"bytes in use\"}}\n]}\n");
	return XPF_OK;
}
