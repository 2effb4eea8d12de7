/* runtime/memory.trace.json (SPEC §9): memory over time as Chrome
 * trace-event JSON ({"traceEvents": [...]}), which Perfetto
 * (ui.perfetto.dev) and chrome://tracing open:
 *  - pid 1 "allocators": one counter track per allocator, the bytes in use
 *    after each event (events.tsv's in_use_after_bytes); an event that leaves
 *    the figure as the previous one left it adds no point.  A capture of
 *    millions of events still has more points than a browser can load, so
 *    past XPF_TRACE_MAX_POINTS an allocator's points are thinned (see
 *    xpf_trace_thinner) and "otherData" says so;
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

void xpf_trace_thin_init(xpf_trace_thinner *t, size_t npoints, int64_t t_first, int64_t t_last,
			 size_t budget)
{
	size_t buckets = budget / 3 ? budget / 3 : 1;
	uint64_t span = t_last > t_first ? (uint64_t)t_last - (uint64_t)t_first : 0;
	*t = (xpf_trace_thinner){ .thin = npoints > budget, .t0 = t_first, .bucket = -1 };
	/* a width just over span/buckets puts the last point in the last interval */
	t->width = (int64_t)(span / buckets + 1);
}

/* The interval's lowest, highest and last points in the order they came,
 * each once. */
static size_t thin_flush(const xpf_trace_thinner *t, xpf_trace_point out[3])
{
	const xpf_trace_point *p[3] = { &t->lo, &t->hi, &t->last };
	size_t seq[3] = { t->lo_seq, t->hi_seq, t->last_seq }, n = 0;
	for (size_t k = 0; k < 3; k++) { /* by arrival, each arrival once */
		size_t best = 3;
		for (size_t j = 0; j < 3; j++)
			if (seq[j] != SIZE_MAX && (best == 3 || seq[j] < seq[best]))
				best = j;
		if (best == 3)
			break;
		size_t s = seq[best];
		out[n++] = *p[best];
		for (size_t j = 0; j < 3; j++)
			if (seq[j] == s)
				seq[j] = SIZE_MAX;
	}
	return n;
}

size_t xpf_trace_thin_push(xpf_trace_thinner *t, xpf_trace_point p, xpf_trace_point out[3])
{
	if (!t->thin) {
		out[0] = p;
		return 1;
	}
	int64_t b = (int64_t)(((uint64_t)p.t_ns - (uint64_t)t->t0) / (uint64_t)t->width);
	size_t n = 0, seq = t->seq++;
	if (b != t->bucket) {
		if (t->bucket >= 0)
			n = thin_flush(t, out);
		t->bucket = b;
		t->lo = t->hi = p;
		t->lo_seq = t->hi_seq = seq;
	} else if (p.bytes < t->lo.bytes) {
		t->lo = p;
		t->lo_seq = seq;
	} else if (p.bytes > t->hi.bytes) {
		t->hi = p;
		t->hi_seq = seq;
	}
	t->last = p;
	t->last_seq = seq;
	return n;
}

size_t xpf_trace_thin_end(xpf_trace_thinner *t, xpf_trace_point out[3])
{
	size_t n = t->thin && t->bucket >= 0 ? thin_flush(t, out) : 0;
	t->bucket = -1;
	return n;
}

static void put_counter(xpf_buf *out, const char *allocator, xpf_trace_point p)
{
	xpf_buf_adds(out, "{\"ph\":\"C\",\"pid\":1,\"tid\":0,\"name\":");
	xpf_buf_json_str(out, allocator);
	put_us(out, "ts", p.t_ns);
	xpf_buf_printf(out, ",\"args\":{\"in_use_bytes\":%" PRIu64 "}},\n", p.bytes);
}

/* Each allocator's counter points: the events that change its figure. */
typedef struct {
	size_t n;
	int64_t first, last; /* times of its first and last point */
	bool seen;
	uint64_t bytes; /* its figure after the last event */
	xpf_trace_thinner thin;
} counter_track;

/* Whether event e changes its allocator's figure (and notes it). */
static bool changes(counter_track *c, const xpf_rt_event *e)
{
	if (c->seen && c->bytes == e->in_use_after)
		return false;
	c->seen = true;
	c->bytes = e->in_use_after;
	return true;
}

/* First pass: how many points each allocator has, and over what time. */
static size_t count_points(const xpf_runtime *rt, counter_track *tr)
{
	size_t total = 0;
	for (size_t i = 0; i < rt->nevents; i++) {
		const xpf_rt_event *e = &rt->events[i];
		counter_track *c = &tr[xpf_rt_ev_allocator(rt, e)];
		if (!changes(c, e))
			continue;
		if (c->n++ == 0)
			c->first = xpf_rt_ev_ns(e);
		c->last = xpf_rt_ev_ns(e);
		total++;
	}
	return total;
}

static void put_counters(const xpf_runtime *rt, counter_track *tr, xpf_buf *out)
{
	xpf_trace_point pts[3];
	for (size_t i = 0; i < rt->nevents; i++) {
		const xpf_rt_event *e = &rt->events[i];
		int a = xpf_rt_ev_allocator(rt, e);
		if (!changes(&tr[a], e))
			continue;
		xpf_trace_point p = { xpf_rt_ev_ns(e), e->in_use_after };
		size_t n = xpf_trace_thin_push(&tr[a].thin, p, pts);
		for (size_t k = 0; k < n; k++)
			put_counter(out, rt->allocators[a].name, pts[k]);
	}
	for (size_t a = 0; a < rt->nallocators; a++) {
		size_t n = xpf_trace_thin_end(&tr[a].thin, pts);
		for (size_t k = 0; k < n; k++)
			put_counter(out, rt->allocators[a].name, pts[k]);
	}
}

int xpf_render_trace_json(xpf_host *h, long arg, xpf_buf *out, xpf_error *err)
{
	const xpf_runtime *rt;
	int rc = xpf_host_runtime(h, &rt, err);
	if (rc != XPF_OK)
		return rc;
	size_t na = rt->nallocators ? rt->nallocators : 1, tracks = 0;
	counter_track *tr = xpf_calloc(na, sizeof *tr);
	size_t total = count_points(rt, tr);
	for (size_t a = 0; a < rt->nallocators; a++)
		tracks += tr[a].n > 0;
	size_t budget = XPF_TRACE_MAX_POINTS / (tracks ? tracks : 1), thinned = 0;
	for (size_t a = 0; a < rt->nallocators; a++) {
		xpf_trace_thin_init(&tr[a].thin, tr[a].n, tr[a].first, tr[a].last, budget);
		tr[a].seen = false;
		thinned += tr[a].thin.thin;
	}
	xpf_buf_adds(out, "{\"displayTimeUnit\":\"ns\",");
	if (thinned)
		xpf_buf_printf(out,
			       "\"otherData\":{\"counter_points\":\"%zu points, more than %zu: the "
			       "time range of %zu allocators cut into %zu intervals each, which keep "
			       "their lowest, highest and last point\"},",
			       total, XPF_TRACE_MAX_POINTS, thinned, budget / 3 ? budget / 3 : 1);
	xpf_buf_adds(out, "\"traceEvents\":[\n");
	put_process(out, 1, "allocators (bytes in use)");
	put_process(out, 2, "executions");
	put_process(out, 3, "AllocatorRetry waits");
	put_counters(rt, tr, out);
	free(tr);

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
