/* runtime/timeline.svg, what happened along the time axis: executions as
 * shaded spans labelled "<module> #<k>" (k = the execution of that module
 * on its device) with a dot where each started, at the bytes in use then,
 * so growth from one execution to the next shows as rising dots (and the
 * module run most often gets a dashed growth line); AllocatorRetry waits
 * as red marks along the top.  Spans and marks closer than a few pixels
 * are merged (their hover text says how many), so a capture with thousands
 * of executions still gives a small file.  Apart from svg_timeline.c
 * because these merging and labelling rules are their own; that file
 * decides when each layer is drawn. */
#include <stdio.h>
#include <string.h>

#include "tree/render/svg_timeline_priv.h"

static const char *const span_color[] = { "#dbe9f6", "#fde4c8", "#dcefd6", "#ece0f1", "#f9dede" };
#define NSPAN (sizeof span_color / sizeof span_color[0])

static const char *module_name(const tl_ctx *c, long m, char buf[32])
{
	if (m >= 0 && (size_t)m < c->nmodules && c->names && c->names[m])
		return c->names[m];
	if (m < 0)
		return "ambiguous module";
	snprintf(buf, 32, "module %ld", m);
	return buf;
}

static void exec_title(xpf_buf *out, const tl_ctx *c, const xpf_rt_execution *x)
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
				       xpf_human(xpf_abs_i64(g), hb));
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
static double span_gap(const tl_ctx *c, size_t *nspans)
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
static size_t span_end(const tl_ctx *c, size_t i, double gap, double *end)
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
static void span_title(xpf_buf *out, const tl_ctx *c, size_t i, size_t j)
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
static void span_label(const tl_ctx *c, size_t i, size_t j, char lab[300])
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
static void draw_span(xpf_buf *out, const tl_ctx *c, size_t i, size_t j, double end, size_t g,
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

void xpf_tl_draw_executions(xpf_buf *out, const tl_ctx *c)
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

void xpf_tl_draw_start_dots(xpf_buf *out, const tl_ctx *c)
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

void xpf_tl_draw_retries(xpf_buf *out, const tl_ctx *c)
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

/* Span colours: which module each is, with its number of executions. */
double xpf_tl_legend_modules(xpf_buf *out, const tl_ctx *c, double y)
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

/* The module with the most executions on one device: a dashed line through
 * the bytes in use at each start, and the growth from the first to the last. */
void xpf_tl_draw_growth(xpf_buf *out, const tl_ctx *c)
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
	xpf_tl_halo_label(out, true, x, 6, y + 18, line, 0);
	xpf_buf_adds(out, "</g>\n");
}
