/* runtime/timeline.svg: bytes in use over time per allocator.
 *
 * Each allocator's line is "in use after each event" (allocated + reserved,
 * SPEC §4.3), aggregated into one column per pixel: a column shows the most
 * bytes in use at any moment inside it (the value entering the column and
 * every event's), so short spikes survive aggregation.  Device pools come
 * first and get the strong colours; their capacity is a dashed line.
 *
 * Executions are shaded spans labelled "<module> #<k>" (k = the execution
 * of that module on its device) with a dot where each started, at the bytes
 * in use then, so growth from one execution to the next shows as rising
 * dots.  AllocatorRetry waits are red marks along the top.  Spans and marks
 * closer than a few pixels are merged (their hover text says how many), so
 * a capture with thousands of executions still gives a small file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/runtime.h"
#include "analysis/svg.h"

#define W 1200
#define H 700
#define X0 92.0
#define X1 952.0
#define Y0 84.0
#define Y1 612.0
#define PLOT_W 860
#define PANEL_X 968.0
#define MAX_SPANS 120
#define MAX_LINES 16

static const char *const line_color[] = {
	"#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#17becf",
	"#e377c2", "#bcbd22", "#393b79", "#637939", "#7f7f7f",
};
#define NCOLORS (sizeof line_color / sizeof line_color[0])
static const char *const span_color[] = { "#dbe9f6", "#fde4c8", "#dcefd6", "#ece0f1", "#f9dede" };
#define NSPAN (sizeof span_color / sizeof span_color[0])

typedef struct ctx {
	const xpf_runtime *rt;
	const char *const *names;
	size_t nmodules;
	int64_t t0, t1;
	double top;        /* y axis maximum (bytes) */
	size_t *order;     /* allocators in drawing order (sort_allocs) */
	int *color_of;     /* allocator -> its rank in that order */
	size_t nlines;     /* the allocators drawn: the first MAX_LINES */
	double capmax;     /* the largest pool capacity, 0: none */
	bool cap_on_scale; /* it fits the y axis: capacities are lines */
} ctx;

static double xt(const ctx *c, int64_t t)
{
	if (t < c->t0)
		t = c->t0;
	if (t > c->t1)
		t = c->t1;
	return X0 + (X1 - X0) * (double)(t - c->t0) / (double)(c->t1 - c->t0);
}

static double yb(const ctx *c, double v) { return Y1 - (Y1 - Y0) * v / c->top; }

static const char *module_name(const ctx *c, long m, char buf[32])
{
	if (m >= 0 && (size_t)m < c->nmodules && c->names && c->names[m])
		return c->names[m];
	if (m < 0)
		return "ambiguous module";
	snprintf(buf, 32, "module %ld", m);
	return buf;
}

/* Whether allocator a is drawn after b: pools first, by device, then by name. */
static bool draws_after(const xpf_runtime *rt, size_t a, size_t b)
{
	const xpf_rt_allocator *x = &rt->allocators[a], *y = &rt->allocators[b];
	if (x->is_pool != y->is_pool)
		return !x->is_pool;
	if (x->device != y->device)
		return x->device > y->device;
	return strcmp(x->name, y->name) > 0;
}

static void exec_title(xpf_buf *out, const ctx *c, const xpf_rt_execution *x)
{
	char mb[32], d1[48], d2[48], hb[32];
	xpf_buf_printf(out, "execution %u: ", x->n);
	xpf_svg_esc(out, module_name(c, x->module, mb), 200);
	if (x->module_execution)
		xpf_buf_printf(out, " #%u", x->module_execution);
	if (x->device >= 0)
		xpf_buf_printf(out, " on device %d", x->device);
	xpf_buf_printf(out, ", %lld\xE2\x80\x93%lld ns (%s at %s), launched %s",
		       (long long)xpf_rt_x_start_ns(x), (long long)xpf_rt_x_end_ns(x),
		       xpf_svg_human_ns(xpf_rt_x_end_ns(x) - xpf_rt_x_start_ns(x), d1),
		       xpf_svg_human_ns(xpf_rt_x_start_ns(x), d2), xpf_launched_name(x->launched));
	if (x->in_use_known) {
		xpf_buf_adds(out, ", in use at start ");
		xpf_svg_bytes_text(out, x->in_use_at_start_bytes);
		int64_t g = xpf_rt_x_growth(c->rt, x);
		if (x->prev >= 0)
			xpf_buf_printf(out, ", growth since #%u %s%lld bytes (%s%s)",
				       x->module_execution ? x->module_execution - 1 : 0,
				       g >= 0 ? "+" : "", (long long)g, g >= 0 ? "+" : "-",
				       xpf_human((uint64_t)(g >= 0 ? g : -g), hb));
	}
	if (x->peak_during_bytes) {
		xpf_buf_adds(out, ", peak during ");
		xpf_svg_bytes_text(out, x->peak_during_bytes);
	}
	if (x->stopped_in_build)
		xpf_buf_adds(out, ", stopped while allocating its buffers");
}

/* The distance in pixels under which neighbouring executions share one
 * span: doubled from 1 until at most MAX_SPANS spans remain. */
static double span_gap(const ctx *c, size_t *nspans)
{
	const xpf_runtime *rt = c->rt;
	double gap = 1;
	for (;;) {
		size_t n = 0;
		double end = -1e9;
		for (size_t i = 0; i < rt->nexecutions; i++) {
			double a = xt(c, xpf_rt_x_start_ns(&rt->executions[i]));
			if (a > end + gap || n == 0)
				n++;
			double b = xt(c, xpf_rt_x_end_ns(&rt->executions[i]));
			if (b > end)
				end = b;
		}
		if (n <= MAX_SPANS) {
			*nspans = n;
			return gap;
		}
		gap *= 2;
	}
}

/* The span that starts at execution i: the index past its last execution,
 * and its right edge in *end. */
static size_t span_end(const ctx *c, size_t i, double gap, double *end)
{
	const xpf_runtime *rt = c->rt;
	*end = xt(c, xpf_rt_x_end_ns(&rt->executions[i]));
	size_t j = i + 1;
	while (j < rt->nexecutions && xt(c, xpf_rt_x_start_ns(&rt->executions[j])) <= *end + gap) {
		double b = xt(c, xpf_rt_x_end_ns(&rt->executions[j]));
		if (b > *end)
			*end = b;
		j++;
	}
	return j;
}

/* Hover text of a span of executions i..j-1 (several): each module once,
 * up to six, with its count. */
static void span_title(xpf_buf *out, const ctx *c, size_t i, size_t j)
{
	const xpf_runtime *rt = c->rt;
	const xpf_rt_execution *first = &rt->executions[i], *last = &rt->executions[j - 1];
	char mb[32];
	xpf_buf_printf(out, "executions %u\xE2\x80\x93%u (%zu): ", first->n, last->n, j - i);
	size_t shown = 0;
	for (size_t k = i; k < j && shown < 6; k++) {
		bool seen = false;
		for (size_t q = i; q < k && !seen; q++)
			seen = rt->executions[q].module == rt->executions[k].module;
		if (seen)
			continue;
		size_t cnt = 0;
		for (size_t q = k; q < j; q++)
			cnt += rt->executions[q].module == rt->executions[k].module;
		if (shown++)
			xpf_buf_adds(out, ", ");
		xpf_svg_esc(out, module_name(c, rt->executions[k].module, mb), 120);
		xpf_buf_printf(out, " \xC3\x97%zu", cnt);
	}
	xpf_buf_printf(out, ", %lld\xE2\x80\x93%lld ns", (long long)xpf_rt_x_start_ns(first),
		       (long long)xpf_rt_x_end_ns(last));
}

/* The label of a span: "<module> #k" for one execution; for several, the
 * same #k on many devices, one module's count, or just how many. */
static void span_label(const ctx *c, size_t i, size_t j, char lab[300])
{
	const xpf_runtime *rt = c->rt;
	const xpf_rt_execution *first = &rt->executions[i];
	long mod = first->module;
	char mb[32];
	if (j - i == 1) {
		snprintf(lab, 300, "%s #%u", module_name(c, mod, mb), first->module_execution);
		return;
	}
	bool one = true;
	for (size_t k = i + 1; k < j && one; k++)
		one = rt->executions[k].module == mod;
	bool same_k = one;
	for (size_t k = i + 1; k < j && same_k; k++)
		same_k = rt->executions[k].module_execution == first->module_execution;
	if (same_k && first->module_execution)
		snprintf(lab, 300, "%s #%u on %zu devices", module_name(c, mod, mb),
			 first->module_execution, j - i);
	else if (one)
		snprintf(lab, 300, "%s \xC3\x97%zu", module_name(c, mod, mb), j - i);
	else
		snprintf(lab, 300, "%zu executions", j - i);
}

/* One span: a shaded rectangle with its hover text, and its label above the
 * plot, on one of two rows (g, the span's number, alternates them), cut to
 * "#k" or left out where it does not fit. */
static void draw_span(xpf_buf *out, const ctx *c, size_t i, size_t j, double end, size_t g,
		      bool single)
{
	const xpf_rt_execution *first = &c->rt->executions[i];
	double a = xt(c, xpf_rt_x_start_ns(first));
	double w = end - a < 1 ? 1 : end - a;
	long mod = first->module;
	const char *fill = span_color[(mod < 0 ? NSPAN - 1 : (size_t)mod) % NSPAN];
	xpf_buf_adds(out, "<g><title>");
	if (j - i == 1)
		exec_title(out, c, first);
	else
		span_title(out, c, i, j);
	xpf_buf_printf(out, "</title><rect fill=\"%s\" fill-opacity=\"%s\"", fill,
		       j - i == 1 ? "0.7" : "0.35");
	xpf_svg_rect_at(out, a, Y0, w, Y1 - Y0);
	xpf_buf_adds(out, "/>");
	char lab[300];
	span_label(c, i, j, lab);
	double width = single ? w + 6 : w;
	size_t fit = (size_t)(width / 6.5);
	if (fit < strlen(lab) && first->module_execution &&
	    (j - i == 1 || strstr(lab, " devices") != NULL))
		snprintf(lab, sizeof lab, "#%u", first->module_execution);
	if (fit >= 5 || fit >= strlen(lab)) {
		xpf_buf_adds(out, "<text class=\"sm\" x=\"");
		xpf_svg_num(out, a + 1);
		xpf_buf_adds(out, "\" y=\"");
		xpf_svg_num(out, Y0 - 6 - (g % 2) * 13);
		xpf_buf_adds(out, "\">");
		xpf_svg_esc(out, lab, fit);
		xpf_buf_adds(out, "</text>");
	}
	xpf_buf_adds(out, "</g>\n");
}

static void draw_executions(xpf_buf *out, const ctx *c)
{
	const xpf_runtime *rt = c->rt;
	if (rt->nexecutions == 0)
		return;
	size_t nspans;
	double gap = span_gap(c, &nspans);
	bool single = nspans == rt->nexecutions;
	size_t g = 0;
	for (size_t i = 0, j; i < rt->nexecutions; i = j, g++) {
		double end;
		j = span_end(c, i, gap, &end);
		draw_span(out, c, i, j, end, g, single);
	}
	if (single)
		return;
	/* merged spans hide where each execution starts: a short tick at each start */
	xpf_buf_adds(out, "<path stroke=\"#555\" stroke-width=\"1\" d=\"");
	long lastpx = -1;
	for (size_t k = 0; k < rt->nexecutions; k++) {
		long px = (long)(xt(c, xpf_rt_x_start_ns(&rt->executions[k])) + 0.5);
		if (px == lastpx)
			continue;
		lastpx = px;
		xpf_buf_printf(out, "M%ld %dv-7", px, (int)Y1);
	}
	xpf_buf_adds(out, "\"><title>the start of each execution</title></path>\n");
}

static void draw_start_dots(xpf_buf *out, const ctx *c)
{
	const xpf_runtime *rt = c->rt;
	double last_x = -10;
	for (size_t i = 0; i < rt->nexecutions; i++) {
		const xpf_rt_execution *x = &rt->executions[i];
		if (!x->in_use_known || x->allocator < 0)
			continue;
		double px = xt(c, xpf_rt_x_start_ns(x));
		if (rt->nexecutions > MAX_SPANS && px < last_x + (X1 - X0) / MAX_SPANS)
			continue;
		last_x = px;
		xpf_buf_adds(out, "<circle r=\"3\" stroke=\"#fff\" fill=\"");
		xpf_buf_adds(out, line_color[c->color_of[x->allocator] % NCOLORS]);
		xpf_buf_adds(out, "\" cx=\"");
		xpf_svg_num(out, px);
		xpf_buf_adds(out, "\" cy=\"");
		xpf_svg_num(out, yb(c, (double)x->in_use_at_start_bytes));
		xpf_buf_adds(out, "\"><title>");
		exec_title(out, c, x);
		xpf_buf_adds(out, "</title></circle>\n");
	}
}

static void draw_retries(xpf_buf *out, const ctx *c)
{
	const xpf_runtime *rt = c->rt;
	char d1[48];
	size_t i = 0;
	while (i < rt->nretries) {
		const xpf_rt_retry *r = &rt->retries[i];
		double a = xt(c, r->time_ns), end = xt(c, r->time_ns + r->duration_ns);
		size_t j = i + 1;
		int64_t total = r->duration_ns;
		while (j < rt->nretries && xt(c, rt->retries[j].time_ns) <= end + 3) {
			double b = xt(c, rt->retries[j].time_ns + rt->retries[j].duration_ns);
			if (b > end)
				end = b;
			total += rt->retries[j].duration_ns;
			j++;
		}
		xpf_buf_adds(out, "<g><title>");
		if (j - i == 1) {
			xpf_buf_printf(out,
				       "AllocatorRetry::AllocateRaw wait at %lld ns for %lld ns (%s)",
				       (long long)r->time_ns, (long long)r->duration_ns,
				       xpf_svg_human_ns(r->duration_ns, d1));
			if (r->allocator >= 0 && (size_t)r->allocator < rt->nallocators) {
				xpf_buf_adds(out, " on ");
				xpf_svg_esc(out, rt->allocators[r->allocator].name, 100);
			}
			if (r->execution >= 0 && (size_t)r->execution < rt->nexecutions)
				xpf_buf_printf(out, " in execution %u",
					       rt->executions[r->execution].n);
		} else {
			xpf_buf_printf(out,
				       "%zu AllocatorRetry::AllocateRaw waits from %lld ns, %lld ns (%s) in all",
				       j - i, (long long)r->time_ns, (long long)total,
				       xpf_svg_human_ns(total, d1));
		}
		double w = end - a < 2 ? 2 : end - a;
		xpf_buf_adds(out, "</title><rect fill=\"#d62728\" fill-opacity=\"0.08\"");
		xpf_svg_rect_at(out, a, Y0, w, Y1 - Y0);
		xpf_buf_adds(out, "/><rect fill=\"#d62728\"");
		xpf_svg_rect_at(out, a, Y0, w, 5);
		xpf_buf_adds(out, "/>");
		if (w > 160) {
			char lab[120];
			snprintf(lab, sizeof lab, "AllocatorRetry wait %s",
				 xpf_svg_human_ns(j - i == 1 ? r->duration_ns : total, d1));
			xpf_svg_text(out, a + 8, Y0 + 18, NULL, "cap", lab, 0);
		}
		xpf_buf_adds(out, "<path fill=\"#d62728\" d=\"M");
		xpf_svg_num(out, a - 5);
		xpf_buf_addc(out, ' ');
		xpf_svg_num(out, Y0);
		xpf_buf_adds(out, "h10l-5 9z\"/></g>\n");
		i = j;
	}
}

/* One allocator's line: max in use per column, carried across empty columns. */
static void draw_line(xpf_buf *out, const ctx *c, size_t a, const char *color)
{
	const xpf_runtime *rt = c->rt;
	double mx[PLOT_W], last[PLOT_W]; /* per column: the most in use, and after its last event */
	for (size_t k = 0; k < PLOT_W; k++)
		mx[k] = -1;
	double carry = (double)rt->allocators[a].first_in_use_bytes;
	for (size_t i = 0; i < rt->nevents; i++) {
		const xpf_rt_event *e = &rt->events[i];
		if (xpf_rt_ev_allocator(rt, e) != (int)a)
			continue;
		size_t k = (size_t)((xt(c, xpf_rt_ev_ns(e)) - X0) * PLOT_W / (X1 - X0));
		if (k >= PLOT_W)
			k = PLOT_W - 1;
		if (mx[k] < 0)
			mx[k] = carry;
		if ((double)e->in_use_after > mx[k])
			mx[k] = (double)e->in_use_after;
		carry = (double)e->in_use_after;
		last[k] = carry;
	}
	bool started = false;
	double cur = 0;
	long cy = 0;
	for (size_t k = 0; k < PLOT_W; k++) {
		double v;
		if (mx[k] >= 0)
			v = mx[k];
		else if (started)
			v = cur;
		else
			continue;
		long y10 = (long)(yb(c, v) * 10 + 0.5);
		double x = X0 + (X1 - X0) * (double)k / PLOT_W;
		if (!started) {
			xpf_buf_printf(out,
				       "<path fill=\"none\" stroke=\"%s\" stroke-width=\"%s\" d=\"M",
				       color,
				       rt->allocators[a].is_pool ? "1.6" :
								   "1.2\" stroke-dasharray=\"5 3");
			xpf_svg_num(out, x);
			xpf_buf_addc(out, ' ');
			xpf_svg_num(out, (double)y10 / 10);
			started = true;
		} else if (y10 != cy) {
			xpf_svg_hv(out, x, (double)y10 / 10);
		}
		cy = y10;
		if (mx[k] >= 0) {
			/* what is in use after the column: its last event */
			long ly = (long)(yb(c, last[k]) * 10 + 0.5);
			if (ly != cy) {
				xpf_svg_hv(out, X0 + (X1 - X0) * (double)(k + 1) / PLOT_W,
					   (double)ly / 10);
				cy = ly;
			}
			cur = last[k];
		}
	}
	if (started) {
		xpf_buf_addc(out, 'H');
		xpf_svg_num(out, X1);
		xpf_buf_adds(out, "\"/>\n");
	}
}

/* Span colours: which module each is, with its number of executions. */
static double legend_modules(xpf_buf *out, const ctx *c, double y)
{
	const xpf_runtime *rt = c->rt;
	char mb[32], line[300];
	size_t shown = 0;
	if (rt->nexecutions == 0)
		return y;
	xpf_svg_text(out, PANEL_X, y, NULL, "lg", "Executions (#k of the module)", 0);
	y += 18;
	for (size_t i = 0; i < rt->nexecutions && shown < NSPAN; i++) {
		long m = rt->executions[i].module;
		bool seen = false;
		for (size_t q = 0; q < i && !seen; q++)
			seen = rt->executions[q].module == m ||
			       (m >= 0 && rt->executions[q].module >= 0 &&
				(size_t)rt->executions[q].module % NSPAN == (size_t)m % NSPAN);
		if (seen)
			continue;
		size_t cnt = 0;
		for (size_t q = 0; q < rt->nexecutions; q++)
			cnt += rt->executions[q].module == m;
		xpf_buf_printf(out, "<rect x=\"%d\" y=\"", (int)PANEL_X);
		xpf_svg_num(out, y - 10);
		xpf_buf_printf(out, "\" width=\"14\" height=\"12\" fill=\"%s\"/>",
			       span_color[(m < 0 ? NSPAN - 1 : (size_t)m) % NSPAN]);
		snprintf(line, sizeof line, "%s \xC3\x97%zu", module_name(c, m, mb), cnt);
		xpf_svg_text(out, PANEL_X + 20, y, NULL, "sm", line, 32);
		y += 16;
		shown++;
	}
	return y + 4;
}

/* A label dx beside x at height y, to the left when x is right of the
 * middle, with a white halo that keeps it readable over the lines. */
static void halo_label(xpf_buf *out, bool bold, double x, double dx, double y, const char *text,
		       size_t max_chars)
{
	bool right = x > (X0 + X1) / 2;
	xpf_buf_printf(out,
		       "<text class=\"lg\"%s stroke=\"#fff\" stroke-width=\"3\" "
		       "paint-order=\"stroke\"%s x=\"",
		       bold ? " font-weight=\"bold\"" : "", right ? " text-anchor=\"end\"" : "");
	xpf_svg_num(out, right ? x - dx : x + dx);
	xpf_buf_adds(out, "\" y=\"");
	xpf_svg_num(out, y);
	xpf_buf_adds(out, "\">");
	xpf_svg_esc(out, text, max_chars);
	xpf_buf_adds(out, "</text>");
}

/* The module with the most executions on one device: a dashed line through
 * the bytes in use at each start, and the growth from the first to the last. */
static void draw_growth(xpf_buf *out, const ctx *c)
{
	const xpf_runtime *rt = c->rt;
	long best = -1;
	size_t best_n = 0;
	for (size_t i = 0; i < rt->nexecutions; i++) {
		const xpf_rt_execution *x = &rt->executions[i];
		if (x->module < 0 || !x->in_use_known || x->allocator < 0 ||
		    x->module_execution < best_n)
			continue;
		if (x->module_execution > best_n || best < 0) {
			best_n = x->module_execution;
			best = (long)i;
		}
	}
	if (best < 0 || best_n < 3)
		return;
	const xpf_rt_execution *lastx = &rt->executions[best];
	const xpf_rt_execution *firstx = NULL;
	xpf_buf_printf(out,
		       "<path fill=\"none\" stroke=\"%s\" stroke-width=\"1\" "
		       "stroke-dasharray=\"2 3\" d=\"",
		       line_color[c->color_of[lastx->allocator] % NCOLORS]);
	double last_px = -100;
	for (size_t i = 0; i <= (size_t)best; i++) {
		const xpf_rt_execution *x = &rt->executions[i];
		if (x->module != lastx->module || x->device != lastx->device || !x->in_use_known)
			continue;
		double px = xt(c, xpf_rt_x_start_ns(x));
		if (firstx && i != (size_t)best && px < last_px + 4)
			continue;
		xpf_buf_addc(out, firstx ? 'L' : 'M');
		xpf_svg_num(out, px);
		xpf_buf_addc(out, ' ');
		xpf_svg_num(out, yb(c, (double)x->in_use_at_start_bytes));
		if (!firstx)
			firstx = x;
		last_px = px;
	}
	xpf_buf_adds(out, "\"/>\n");
	if (!firstx || firstx == lastx)
		return;
	int64_t g = (int64_t)lastx->in_use_at_start_bytes - (int64_t)firstx->in_use_at_start_bytes;
	char hb[32], mb[32], line[300];
	snprintf(line, sizeof line, "%s%s from #%u to #%u", g >= 0 ? "+" : "-",
		 xpf_human((uint64_t)(g >= 0 ? g : -g), hb), firstx->module_execution,
		 lastx->module_execution);
	double x = xt(c, xpf_rt_x_start_ns(lastx)), y = yb(c, (double)lastx->in_use_at_start_bytes);
	xpf_buf_adds(out, "<g><title>");
	xpf_svg_esc(out, module_name(c, lastx->module, mb), 200);
	xpf_buf_printf(out, " on device %d: in use at the start of execution #%u ", lastx->device,
		       firstx->module_execution);
	xpf_svg_bytes_text(out, firstx->in_use_at_start_bytes);
	xpf_buf_printf(out, ", of #%u ", lastx->module_execution);
	xpf_svg_bytes_text(out, lastx->in_use_at_start_bytes);
	xpf_buf_printf(out, ": growth %s%lld bytes</title>", g >= 0 ? "+" : "", (long long)g);
	halo_label(out, true, x, 6, y + 18, line, 0);
	xpf_buf_adds(out, "</g>\n");
}

/* The in-window peak of each device pool (up to 4 labelled). */
static void draw_peaks(xpf_buf *out, const ctx *c)
{
	const xpf_runtime *rt = c->rt;
	char hb[32], d1[48], line[200];
	size_t labelled = 0;
	double last_y = -100;
	for (size_t k = 0; k < c->nlines; k++) {
		const xpf_rt_allocator *a = &rt->allocators[c->order[k]];
		if (!a->is_pool || a->peak_event < 0)
			continue;
		double x = xt(c, a->peak_ns), y = yb(c, (double)a->peak_in_window_bytes);
		xpf_buf_adds(out, "<g><title>");
		xpf_svg_esc(out, a->name, 100);
		xpf_buf_adds(out, " peak in window: ");
		xpf_svg_bytes_text(out, a->peak_in_window_bytes);
		xpf_buf_printf(out, " at %lld ns (%s)", (long long)a->peak_ns,
			       xpf_svg_human_ns(a->peak_ns, d1));
		if (a->capacity_bytes) {
			char pct[32];
			xpf_buf_printf(out, ", %s%% of its capacity ",
				       xpf_pct(a->peak_in_window_bytes, a->capacity_bytes, pct));
			xpf_svg_bytes_text(out, a->capacity_bytes);
		}
		xpf_buf_printf(out, "</title><path fill=\"%s\" stroke=\"#fff\" d=\"M",
			       line_color[k % NCOLORS]);
		xpf_svg_num(out, x);
		xpf_buf_addc(out, ' ');
		xpf_svg_num(out, y - 2);
		xpf_buf_adds(out, "l-6 -10h12z\"/>");
		if (labelled < 4 && (y < last_y - 14 || y > last_y + 14)) {
			snprintf(line, sizeof line, "%s peak %s", a->name,
				 xpf_human(a->peak_in_window_bytes, hb));
			halo_label(out, false, x, 8, y - 6, line, 60);
			labelled++;
			last_y = y;
		}
		xpf_buf_adds(out, "</g>\n");
	}
}

/* Widen [*t0, *t1] to hold [a, b]. */
static void widen(int64_t *t0, int64_t *t1, int64_t a, int64_t b)
{
	if (a < *t0)
		*t0 = a;
	if (b > *t1)
		*t1 = b;
}

/* The time window: every event, execution and retry, with a little space
 * on both sides so the first and last ones show. */
static void time_window(const xpf_runtime *rt, int64_t *t0, int64_t *t1)
{
	*t0 = INT64_MAX;
	*t1 = INT64_MIN;
	for (size_t i = 0; i < rt->nevents; i++)
		widen(t0, t1, xpf_rt_ev_ns(&rt->events[i]), xpf_rt_ev_ns(&rt->events[i]));
	for (size_t i = 0; i < rt->nexecutions; i++)
		widen(t0, t1, xpf_rt_x_start_ns(&rt->executions[i]),
		      xpf_rt_x_end_ns(&rt->executions[i]));
	for (size_t i = 0; i < rt->nretries; i++)
		widen(t0, t1, rt->retries[i].time_ns,
		      rt->retries[i].time_ns + rt->retries[i].duration_ns);
	int64_t span = *t1 - *t0;
	if (span <= 0)
		span = 1000;
	int64_t pad = span / 50 > 0 ? span / 50 : 1;
	*t0 = *t0 > pad ? *t0 - pad : 0;
	*t1 = *t0 + span + 2 * pad;
}

/* The drawing order of the allocators (an insertion sort: they are few, and
 * qsort_r is not C11) and the colour of each. */
static void order_allocators(ctx *c)
{
	const xpf_runtime *rt = c->rt;
	c->order = malloc((rt->nallocators ? rt->nallocators : 1) * sizeof *c->order);
	c->color_of = calloc(rt->nallocators ? rt->nallocators : 1, sizeof *c->color_of);
	if (!c->order || !c->color_of)
		abort();
	for (size_t i = 0; i < rt->nallocators; i++) {
		size_t j = i;
		for (; j > 0 && draws_after(rt, c->order[j - 1], i); j--)
			c->order[j] = c->order[j - 1];
		c->order[j] = i;
	}
	for (size_t i = 0; i < rt->nallocators; i++)
		c->color_of[c->order[i]] = (int)i;
	c->nlines = rt->nallocators < MAX_LINES ? rt->nallocators : MAX_LINES;
}

/* The subtitle: the pool's story in one line. */
static void draw_subtitle(xpf_buf *out, const ctx *c)
{
	const xpf_runtime *rt = c->rt;
	char hb[32], hb2[32];
	xpf_buf sub = XPF_BUF_INIT;
	size_t npools = 0;
	for (size_t i = 0; i < rt->nallocators; i++)
		npools += rt->allocators[i].is_pool;
	xpf_buf_printf(&sub,
		       "%zu allocators (%zu device pools), %zu events, %zu executions, "
		       "%zu AllocatorRetry waits",
		       rt->nallocators, npools, rt->nevents, rt->nexecutions, rt->nretries);
	if (rt->nallocators && rt->allocators[c->order[0]].is_pool) {
		const xpf_rt_allocator *a = &rt->allocators[c->order[0]];
		xpf_buf_printf(&sub, " \xC2\xB7 %s peak %s", a->name,
			       xpf_human(a->peak_in_window_bytes, hb));
		if (a->capacity_bytes)
			xpf_buf_printf(&sub, " of %s", xpf_human(a->capacity_bytes, hb2));
	}
	xpf_svg_text(out, 12, 44, NULL, "sub", sub.data, 150);
	xpf_buf_release(&sub);
}

/* The axes.  y: up to the largest peak, or to the largest pool capacity
 * where it is within 2.5 times that (sets c->top, c->capmax,
 * c->cap_on_scale).  x: time since the window's start, ticks placed by value. */
static void draw_axes(xpf_buf *out, ctx *c)
{
	const xpf_runtime *rt = c->rt;
	double ymax = 0;
	for (size_t i = 0; i < rt->nallocators; i++) {
		const xpf_rt_allocator *a = &rt->allocators[i];
		if ((double)a->peak_in_window_bytes > ymax)
			ymax = (double)a->peak_in_window_bytes;
		if (a->is_pool && (double)a->capacity_bytes > c->capmax)
			c->capmax = (double)a->capacity_bytes;
	}
	c->cap_on_scale = c->capmax > 0 && c->capmax <= 2.5 * (ymax > 0 ? ymax : 1);
	xpf_svg_ticks ys, xs;
	xpf_svg_ticks_make(&ys, (c->cap_on_scale && c->capmax > ymax ? c->capmax : ymax) * 1.06, 8,
			   XPF_SVG_BYTES);
	c->top = ys.top;
	xpf_svg_ticks_make(&xs, (double)(c->t1 - c->t0), 10, XPF_SVG_NS);
	xs.top = (double)(c->t1 - c->t0);
	xs.n = (int)(xs.top / xs.step) + 1;
	char d1[48], line[512];
	if (c->t0 > 0)
		snprintf(line, sizeof line, "time (0 = %s after the profile start)",
			 xpf_svg_human_ns(c->t0, d1));
	else
		snprintf(line, sizeof line, "time from the profile start");
	xpf_svg_axes(out, X0, Y0, X1, Y1, &xs, 0, &ys, line, "bytes in use (allocated + reserved)");
}

/* Capacity lines: one per distinct pool capacity, labels stacked upwards. */
static void draw_capacities(xpf_buf *out, const ctx *c)
{
	const xpf_runtime *rt = c->rt;
	char hb[32], line[512];
	double drawn[MAX_LINES];
	size_t ndrawn = 0;
	for (size_t k = 0; k < rt->nallocators && ndrawn < MAX_LINES; k++) {
		const xpf_rt_allocator *a = &rt->allocators[c->order[k]];
		if (!a->is_pool || !a->capacity_bytes)
			continue;
		bool seen = false;
		for (size_t q = 0; q < ndrawn; q++)
			seen |= drawn[q] == (double)a->capacity_bytes;
		if (seen)
			continue;
		drawn[ndrawn++] = (double)a->capacity_bytes;
		double y = yb(c, (double)a->capacity_bytes);
		xpf_buf_adds(out, "<g><title>");
		xpf_svg_esc(out, a->name, 100);
		xpf_buf_adds(out, " capacity (in use + bytes_available at its peak): ");
		xpf_svg_bytes_text(out, a->capacity_bytes);
		xpf_buf_adds(out, "</title>");
		xpf_svg_cap_line(out, "8 4", X0, X1, y);
		snprintf(line, sizeof line, "%s capacity %s", a->name,
			 xpf_human(a->capacity_bytes, hb));
		xpf_svg_text(out, X1 - 4, y - 5 - 14.0 * (double)(ndrawn - 1), "end", "cap", line, 0);
		xpf_buf_adds(out, "</g>\n");
	}
}

/* The legend's allocators: colour, name, peak / capacity; returns the next y. */
static double legend_allocators(xpf_buf *out, const ctx *c, double y)
{
	const xpf_runtime *rt = c->rt;
	char hb[32], hb2[32], line[512];
	xpf_svg_text(out, PANEL_X, y, NULL, "lg", "Allocators (peak / capacity)", 0);
	y += 20;
	for (size_t k = 0; k < c->nlines; k++) {
		const xpf_rt_allocator *a = &rt->allocators[c->order[k]];
		xpf_buf_adds(out, "<g><title>");
		xpf_svg_esc(out, a->name, 100);
		xpf_buf_adds(out, ": peak in window ");
		xpf_svg_bytes_text(out, a->peak_in_window_bytes);
		xpf_buf_printf(out, " at %lld ns, capacity ", (long long)a->peak_ns);
		xpf_svg_bytes_text(out, a->capacity_bytes);
		xpf_buf_adds(out, ", live at end ");
		xpf_svg_bytes_text(out, a->live_at_end_bytes);
		xpf_buf_printf(out, ", %llu allocations, %llu deallocations</title>",
			       (unsigned long long)a->allocations,
			       (unsigned long long)a->deallocations);
		xpf_buf_printf(out, "<rect x=\"%d\" y=\"", (int)PANEL_X);
		xpf_svg_num(out, y - 6);
		xpf_buf_printf(out, "\" width=\"14\" height=\"3\" fill=\"%s\"/>",
			       line_color[k % NCOLORS]);
		xpf_svg_text(out, PANEL_X + 20, y, NULL, "lg", a->name, 28);
		snprintf(line, sizeof line, "%s / %s", xpf_human(a->peak_in_window_bytes, hb),
			 a->capacity_bytes ? xpf_human(a->capacity_bytes, hb2) : "?");
		xpf_svg_text(out, PANEL_X + 20, y + 14, NULL, "sm", line, 0);
		xpf_buf_adds(out, "</g>\n");
		y += 32;
	}
	if (rt->nallocators > c->nlines) {
		snprintf(line, sizeof line, "+ %zu more (allocators.tsv)",
			 rt->nallocators - c->nlines);
		xpf_svg_text(out, PANEL_X, y, NULL, "sm", line, 0);
		y += 18;
	}
	return y;
}

/* The legend's marks: start dots, retry waits, the capacity line. */
static void legend_marks(xpf_buf *out, const ctx *c, double y)
{
	char hb[32], line[512];
	xpf_buf_printf(out, "<circle r=\"3\" fill=\"%s\" cx=\"%d\" cy=\"", line_color[0],
		       (int)PANEL_X + 7);
	xpf_svg_num(out, y - 4);
	xpf_buf_adds(out, "\"/>");
	xpf_svg_text(out, PANEL_X + 20, y, NULL, "sm", "in use when it started", 0);
	y += 18;
	if (c->rt->nretries) {
		xpf_buf_adds(out, "<path fill=\"#d62728\" d=\"M");
		xpf_svg_num(out, PANEL_X + 2);
		xpf_buf_addc(out, ' ');
		xpf_svg_num(out, y - 10);
		xpf_buf_adds(out, "h10l-5 9z\"/>");
		xpf_svg_text(out, PANEL_X + 20, y, NULL, "sm", "AllocatorRetry wait", 0);
		y += 18;
	}
	if (!c->cap_on_scale && c->capmax > 0) {
		snprintf(line, sizeof line, "pool capacity %s:", xpf_human((uint64_t)c->capmax, hb));
		xpf_svg_text(out, PANEL_X, y + 4, NULL, "cap", line, 0);
		xpf_svg_text(out, PANEL_X, y + 20, NULL, "cap", "above this scale", 0);
	}
	if (c->cap_on_scale) {
		xpf_svg_cap_line(out, "4 2", PANEL_X, PANEL_X + 14, y - 4);
		xpf_svg_text(out, PANEL_X + 20, y, NULL, "sm", "pool capacity", 0);
	}
}

void xpf_svg_timeline(const xpf_runtime *rt, const char *const *module_names, size_t nmodules,
		      xpf_buf *out)
{
	xpf_svg_begin(out, W, H, "bytes in use over time per allocator");
	xpf_svg_text(out, 12, 24, NULL, "h", "Bytes in use over time, per allocator", 0);
	if (!rt->has_events) {
		xpf_svg_message(out, X0, Y0, X1, Y1,
				rt->has_host_plane ?
					"no allocator events in this capture (see runtime/summary.txt)" :
					"no /host:CPU plane in this capture: no allocator events",
				140);
		xpf_svg_end(out);
		return;
	}

	ctx c = { .rt = rt, .names = module_names, .nmodules = nmodules };
	time_window(rt, &c.t0, &c.t1);
	order_allocators(&c);

	draw_subtitle(out, &c);
	draw_executions(out, &c);
	draw_axes(out, &c);
	if (c.cap_on_scale)
		draw_capacities(out, &c);
	for (size_t k = c.nlines; k-- > 0;) /* pools last, over the host allocators */
		draw_line(out, &c, c.order[k], line_color[k % NCOLORS]);
	draw_start_dots(out, &c);
	draw_peaks(out, &c);
	draw_growth(out, &c);
	draw_retries(out, &c);

	double y = legend_allocators(out, &c, Y0 + 4);
	y = legend_modules(out, &c, y + 8);
	legend_marks(out, &c, y);
	free(c.order);
	free(c.color_of);
	xpf_svg_end(out);
}
