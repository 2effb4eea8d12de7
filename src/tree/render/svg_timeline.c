/* runtime/timeline.svg: bytes in use over time per allocator.
 *
 * Each allocator's line is "in use after each event" (allocated + reserved,
 * SPEC §4.3), aggregated into one column per pixel: a column shows the most
 * bytes in use at any moment inside it (the value entering the column and
 * every event's), so short spikes survive aggregation.  Device pools come
 * first and get the strong colours; their capacity is a dashed line.
 *
 * This file holds the frame (time window, drawing order, axes, subtitle),
 * what is drawn per allocator (lines, peaks, capacities, their legend) and
 * the order the layers are drawn in; svg_timeline_exec.c draws what
 * happened along the time axis (executions, AllocatorRetry waits), which
 * has its own merging rules. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tree/render/svg_timeline_priv.h"

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

/* One allocator's line: max in use per column, carried across empty columns. */
static void draw_line(xpf_buf *out, const tl_ctx *c, size_t a, const char *color)
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

/* A label dx beside x at height y, to the left when x is right of the
 * middle, with a white halo that keeps it readable over the lines. */
void xpf_tl_halo_label(xpf_buf *out, bool bold, double x, double dx, double y, const char *text,
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

/* The in-window peak of each device pool (up to 4 labelled). */
static void draw_peaks(xpf_buf *out, const tl_ctx *c)
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
			xpf_tl_halo_label(out, false, x, 8, y - 6, line, 60);
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
static void order_allocators(tl_ctx *c)
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
static void draw_subtitle(xpf_buf *out, const tl_ctx *c)
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
static void draw_axes(xpf_buf *out, tl_ctx *c)
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
static void draw_capacities(xpf_buf *out, const tl_ctx *c)
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
static double legend_allocators(xpf_buf *out, const tl_ctx *c, double y)
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
static void legend_marks(xpf_buf *out, const tl_ctx *c, double y)
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

	tl_ctx c = { .rt = rt, .names = module_names, .nmodules = nmodules };
	time_window(rt, &c.t0, &c.t1);
	order_allocators(&c);

	draw_subtitle(out, &c);
	xpf_tl_draw_executions(out, &c);
	draw_axes(out, &c);
	if (c.cap_on_scale)
		draw_capacities(out, &c);
	for (size_t k = c.nlines; k-- > 0;) /* pools last, over the host allocators */
		draw_line(out, &c, c.order[k], line_color[k % NCOLORS]);
	xpf_tl_draw_start_dots(out, &c);
	draw_peaks(out, &c);
	xpf_tl_draw_growth(out, &c);
	xpf_tl_draw_retries(out, &c);

	double y = legend_allocators(out, &c, Y0 + 4);
	y = xpf_tl_legend_modules(out, &c, y + 8);
	legend_marks(out, &c, y);
	free(c.order);
	free(c.color_of);
	xpf_svg_end(out);
}
