/* runtime/memory.trace.json: memory over time as Chrome trace-event JSON
 * for Perfetto (SPEC §9; the format is described in trace_json.c). */
#ifndef XPF_TRACE_JSON_H
#define XPF_TRACE_JSON_H

#include "analysis/host.h"

/* The counter points the file holds at most, over all allocators: about
 * 90 MB of JSON, which Perfetto opens; past it points are thinned. */
#define XPF_TRACE_MAX_POINTS ((size_t)1 << 20)

/* The execution spans it holds at most (about 200 bytes each: 13 MB);
 * past it they are merged (xpf_trace_spans). */
#define XPF_TRACE_MAX_SPANS ((size_t)1 << 16)

int xpf_render_trace_json(xpf_host *h, long arg, xpf_buf *out, xpf_error *err);

/* The execution spans of rt into out, one a line: one per execution up to
 * max_spans executions; past it those of one device that start in one of
 * max_spans / devices equal intervals of its time range become one span
 * (trace_json.c says what it holds). */
struct xpf_runtime;
void xpf_trace_spans(const xpf_host *h, const struct xpf_runtime *rt, size_t max_spans, xpf_buf *out);

/* One allocator's counter points, thinned when there are more than a
 * budget: its time range is cut into budget/3 equal intervals and each
 * interval keeps its lowest, highest and last point (in time order), so
 * every point written is one of the capture's, the peak and every level
 * held across an interval's end are exact.  Under the budget every point
 * is kept.  Points are pushed in time order; each push and the end hand
 * back the points to write now (at most 3). */
typedef struct {
	int64_t t_ns;
	uint64_t bytes;
} xpf_trace_point;

typedef struct {
	bool thin;                            /* more points than the budget */
	int64_t t0, width;                    /* the first point's time; an interval's width */
	int64_t bucket;                       /* the interval being gathered; -1 before the first */
	xpf_trace_point lo, hi, last;         /* its lowest, highest and last points */
	size_t lo_seq, hi_seq, last_seq, seq; /* their arrivals; the next one */
} xpf_trace_thinner;

void xpf_trace_thin_init(xpf_trace_thinner *t, size_t npoints, int64_t t_first, int64_t t_last,
			 size_t budget);
size_t xpf_trace_thin_push(xpf_trace_thinner *t, xpf_trace_point p, xpf_trace_point out[3]);
size_t xpf_trace_thin_end(xpf_trace_thinner *t, xpf_trace_point out[3]);

#endif
