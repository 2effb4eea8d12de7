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
 *    track of its device, args module, n, launched.  Past
 *    XPF_TRACE_MAX_SPANS executions (hundreds of thousands of small steps)
 *    each device's time range is cut into intervals and the executions
 *    that start in one become one span (see put_spans), and "otherData"
 *    says so;
 *  - pid 3 "AllocatorRetry waits": one instant event ("i") per wait, on the
 *    track of its thread.
 * Times ("ts", "dur") are microseconds from the profile start, written with
 * three decimals so that they are the report's integer nanoseconds exactly.
 * One event a line, so that grep and head work too. */
#include <inttypes.h>
#include <stdlib.h>

#include "analysis/runtime/runtime.h"
#include "tree/render/trace_json.h"
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

/* The module's name of execution x, or "ambiguous". */
static const char *x_module(const xpf_host *h, const xpf_rt_execution *x)
{
	return x->module >= 0 && (size_t)x->module < h->nmodules ?
		       xpf_capture_module(h->cap, (size_t)x->module)->name :
		       "ambiguous";
}

static void put_span(const xpf_host *h, const xpf_rt_execution *x, xpf_buf *out)
{
	const char *m = x_module(h, x);
	xpf_buf_printf(out, "{\"ph\":\"X\",\"pid\":2,\"tid\":%d,\"name\":", x->device);
	xpf_buf_json_str(out, m);
	put_us(out, "ts", xpf_rt_x_start_ns(x));
	put_us(out, "dur", xpf_rt_x_end_ns(x) - xpf_rt_x_start_ns(x));
	xpf_buf_adds(out, ",\"args\":{\"module\":");
	xpf_buf_json_str(out, m);
	xpf_buf_printf(out, ",\"n\":%u,\"launched\":\"%s\",\"device\":%d}},\n", x->n,
		       xpf_launched_name(x->launched), x->device);
}

/* The executions of one device that start in one interval, merged. */
typedef struct {
	int device;
	int64_t t0, width; /* the device's first start; an interval's width */
	int64_t bucket;    /* the interval gathered; -1: none yet */
	size_t first, last, count, never;
	int64_t end; /* the latest end of its executions */
	bool one_module, one_launched;
} span_group;

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* The index of device in the sorted distinct devices dev[nd]. */
static size_t dev_slot(const int *dev, size_t nd, int device)
{
	const int *k = bsearch(&device, dev, nd, sizeof *dev, cmp_int);
	return (size_t)(k - dev);
}

static void flush_group(const xpf_host *h, const xpf_runtime *rt, span_group *g, xpf_buf *out)
{
	if (g->count == 0)
		return;
	const xpf_rt_execution *a = &rt->executions[g->first], *z = &rt->executions[g->last];
	if (g->count == 1) {
		put_span(h, a, out);
	} else {
		const char *m = g->one_module ? x_module(h, a) : "several modules";
		xpf_buf_printf(out, "{\"ph\":\"X\",\"pid\":2,\"tid\":%d,\"name\":", g->device);
		if (g->one_module)
			xpf_buf_json_str(out, m);
		else
			xpf_buf_printf(out, "\"%zu executions\"", g->count);
		put_us(out, "ts", xpf_rt_x_start_ns(a));
		put_us(out, "dur", g->end - xpf_rt_x_start_ns(a));
		xpf_buf_adds(out, ",\"args\":{\"module\":");
		xpf_buf_json_str(out, m);
		xpf_buf_printf(out,
			       ",\"n\":%u,\"last_n\":%u,\"executions\":%zu,\"never_launched\":%zu,"
			       "\"launched\":\"%s\",\"device\":%d}},\n",
			       a->n, z->n, g->count, g->never,
			       g->one_launched ? xpf_launched_name(a->launched) : "mixed", g->device);
	}
	g->count = g->never = 0;
}

/* Past max_spans executions: each device's time range (its first to its
 * last start) cut into max_spans / devices intervals; the executions that
 * start in one interval become one span from the first start to the
 * latest end, named by their module (or "N executions" when they are of
 * several), args n and last_n (the first and last execution), executions,
 * never_launched, launched ("mixed" when they differ).  An interval of
 * one execution keeps its own span.  So the file holds at most max_spans
 * spans (plus one per device for rounding). */
void xpf_trace_spans(const xpf_host *h, const xpf_runtime *rt, size_t max_spans, xpf_buf *out)
{
	if (rt->nexecutions <= max_spans) {
		for (size_t i = 0; i < rt->nexecutions; i++)
			put_span(h, &rt->executions[i], out);
		return;
	}
	int *dev = xpf_malloc(rt->nexecutions * sizeof *dev);
	size_t nd = 0;
	for (size_t i = 0; i < rt->nexecutions; i++)
		dev[i] = rt->executions[i].device;
	xpf_qsort(dev, rt->nexecutions, sizeof *dev, cmp_int);
	for (size_t i = 0; i < rt->nexecutions; i++)
		if (nd == 0 || dev[nd - 1] != dev[i])
			dev[nd++] = dev[i];
	span_group *g = xpf_calloc(nd, sizeof *g);
	int64_t *hi = xpf_calloc(nd, sizeof *hi);
	size_t per = max_spans / nd ? max_spans / nd : 1;
	for (size_t d = 0; d < nd; d++) {
		g[d] = (span_group){ .device = dev[d], .bucket = -1, .t0 = INT64_MAX };
		hi[d] = INT64_MIN;
	}
	for (size_t i = 0; i < rt->nexecutions; i++) { /* each device's time range */
		const xpf_rt_execution *x = &rt->executions[i];
		size_t d = dev_slot(dev, nd, x->device);
		int64_t t = xpf_rt_x_start_ns(x);
		g[d].t0 = t < g[d].t0 ? t : g[d].t0;
		hi[d] = t > hi[d] ? t : hi[d];
	}
	for (size_t d = 0; d < nd; d++)
		g[d].width = (int64_t)(((uint64_t)hi[d] - (uint64_t)g[d].t0) / per + 1);
	for (size_t i = 0; i < rt->nexecutions; i++) {
		const xpf_rt_execution *x = &rt->executions[i];
		span_group *k = &g[dev_slot(dev, nd, x->device)];
		int64_t t = xpf_rt_x_start_ns(x);
		int64_t b = (int64_t)(((uint64_t)t - (uint64_t)k->t0) / (uint64_t)k->width);
		if (b != k->bucket || k->count == 0) {
			flush_group(h, rt, k, out);
			k->bucket = b;
			k->first = i;
			k->end = xpf_rt_x_end_ns(x);
			k->one_module = k->one_launched = true;
		}
		const xpf_rt_execution *a = &rt->executions[k->first];
		k->one_module &= x->module == a->module;
		k->one_launched &= x->launched == a->launched;
		k->end = xpf_rt_x_end_ns(x) > k->end ? xpf_rt_x_end_ns(x) : k->end;
		k->never += x->launched == XPF_LAUNCHED_NO;
		k->last = i;
		k->count++;
	}
	for (size_t d = 0; d < nd; d++)
		flush_group(h, rt, &g[d], out);
	free(hi);
	free(g);
	free(dev);
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
	if (thinned || rt->nexecutions > XPF_TRACE_MAX_SPANS)
		xpf_buf_adds(out, "\"otherData\":{");
	if (thinned)
		xpf_buf_printf(out,
			       "\"counter_points\":\"%zu points, more than %zu: the "
			       "time range of %zu allocators cut into %zu intervals each, which keep "
			       "their lowest, highest and last point\"%s",
			       total, XPF_TRACE_MAX_POINTS, thinned, budget / 3 ? budget / 3 : 1,
			       rt->nexecutions > XPF_TRACE_MAX_SPANS ? "," : "");
	if (rt->nexecutions > XPF_TRACE_MAX_SPANS)
		xpf_buf_printf(out,
			       "\"execution_spans\":\"%zu executions, more than %zu: each device's "
			       "time range cut into intervals, the executions that start in one "
			       "merged into one span (args executions, n to last_n, never_launched)\"",
			       rt->nexecutions, XPF_TRACE_MAX_SPANS);
	if (thinned || rt->nexecutions > XPF_TRACE_MAX_SPANS)
		xpf_buf_adds(out, "},");
	xpf_buf_adds(out, "\"traceEvents\":[\n");
	put_process(out, 1, "allocators (bytes in use)");
	put_process(out, 2, "executions");
	put_process(out, 3, "AllocatorRetry waits");
	put_counters(rt, tr, out);
	free(tr);

	xpf_trace_spans(h, rt, XPF_TRACE_MAX_SPANS, out);

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
