/* modules/<dir>/heap.svg: the module's heap over program order.
 *
 * The curve is the plan's simulated heap (xpf_plan.steps: heap + indefinite
 * allocations after each heap-simulator event).  The plan gives roles only
 * for buffers live at the peak, so the split by role at other steps is
 * inferred here: indefinite allocations keep their role at the peak; temp
 * buffers are counted live over [start, end] of their simulated lifetime,
 * role by role, and that split is scaled to the step's temp bytes (sharing
 * makes the raw sum differ).  At the peak step the split is the plan's own
 * role_bytes, exactly.
 *
 * Steps are aggregated into at most PLOT_W columns: each column shows the
 * step with the most bytes among those it covers (max per bucket), so the
 * peak is never averaged away. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/plan/plan.h"
#include "tree/render/svg.h"

#define W 1200
#define H 700
#define X0 92.0
#define X1 872.0
#define Y0 64.0
#define Y1 612.0
#define PLOT_W 780
#define HOVER_BANDS 100
#define PANEL_X 892.0
#define TOP_BUFFERS 10

/* Bottom to top of the stack. */
static const char *const role_color[XPF_NROLES] = {
	[XPF_PLAN_ROLE_PARAMETER] = "#4e79a7", [XPF_PLAN_ROLE_OUTPUT] = "#59a14f",
	[XPF_PLAN_ROLE_WORKSPACE] = "#edc948", [XPF_PLAN_ROLE_BACKWARD] = "#b07aa1",
	[XPF_PLAN_ROLE_FORWARD] = "#f28e2b",   [XPF_PLAN_ROLE_OTHER] = "#9da5ad",
};

static bool has(const char *s, const char *needle) { return s && strstr(s, needle) != NULL; }

/* The role of a temp buffer (SPEC §4.1 rules, minus parameter/output,
 * which are allocation kinds and never temp). */
static enum xpf_role buffer_role(const xpf_plan_buffer *b)
{
	const xpf_plan_instr *in = b->instr;
	if (!in)
		return XPF_PLAN_ROLE_OTHER;
	bool custom = in->opcode &&
		      (strcmp(in->opcode, "custom-call") == 0 ||
		       (strcmp(in->opcode, "fusion") == 0 && has(in->fusion_kind, "Custom")));
	if (custom && b->dtype && (strcmp(b->dtype, "s8") == 0 || strcmp(b->dtype, "u8") == 0))
		return XPF_PLAN_ROLE_WORKSPACE;
	if (has(in->op_name, "transpose("))
		return XPF_PLAN_ROLE_BACKWARD;
	if (has(in->op_name, "jvp("))
		return XPF_PLAN_ROLE_FORWARD;
	for (size_t i = 0; i < b->naliases; i++) {
		const xpf_plan_instr *a = b->aliases[i];
		if (a && has(a->op_name, "transpose("))
			return XPF_PLAN_ROLE_BACKWARD;
		if (a && has(a->op_name, "jvp("))
			return XPF_PLAN_ROLE_FORWARD;
	}
	return XPF_PLAN_ROLE_OTHER;
}

typedef struct column {
	size_t first, last; /* steps covered */
	size_t at;          /* the step with the most bytes */
	uint64_t bytes;
	double role[XPF_NROLES];
} column;

/* Per-role bytes of each column's representative step. */
static void split_roles(const xpf_plan *p, column *cols, size_t ncols)
{
	size_t n = p->nsteps;
	double indef[XPF_NROLES] = { 0 };
	double indef_sum = 0;
	for (size_t i = 0; i < p->npeak; i++) {
		const xpf_plan_peak *pk = &p->peak[i];
		if (pk->alloc && pk->alloc->indefinite) {
			indef[pk->role] += (double)pk->bytes;
			indef_sum += (double)pk->bytes;
		}
	}
	if (indef_sum == 0 && p->indefinite_bytes) {
		indef[XPF_PLAN_ROLE_OTHER] = (double)p->indefinite_bytes;
		indef_sum = (double)p->indefinite_bytes;
	}

	/* Roles of temp buffers: the plan's where the buffer is at the peak. */
	enum xpf_role *role = calloc(p->nbuffers ? p->nbuffers : 1, sizeof *role);
	int64_t *diff = calloc((n + 1) * XPF_NROLES, sizeof *diff);
	if (!role || !diff)
		abort();
	for (size_t i = 0; i < p->nbuffers; i++)
		role[i] = buffer_role(&p->buffers[i]);
	for (size_t i = 0; i < p->npeak; i++) {
		const xpf_plan_peak *pk = &p->peak[i];
		if (pk->buffer && !(pk->alloc && pk->alloc->indefinite) &&
		    pk->buffer >= p->buffers && pk->buffer < p->buffers + p->nbuffers)
			role[pk->buffer - p->buffers] = pk->role;
	}
	for (size_t i = 0; i < p->nbuffers; i++) {
		const xpf_plan_buffer *b = &p->buffers[i];
		if (b->start < 0 || (size_t)b->start >= n || !xpf_plan_device_color(p, b->color))
			continue;
		if (b->alloc >= 0 && (size_t)b->alloc < p->nallocs && p->allocs[b->alloc].indefinite)
			continue;
		size_t s = (size_t)b->start;
		size_t e = b->end >= b->start ? (size_t)b->end : s;
		if (e >= n)
			e = n - 1;
		diff[s * XPF_NROLES + role[i]] += (int64_t)b->bytes;
		diff[(e + 1) * XPF_NROLES + role[i]] -= (int64_t)b->bytes;
	}

	int64_t live[XPF_NROLES] = { 0 };
	size_t c = 0;
	for (size_t s = 0; s < n && c < ncols; s++) {
		for (int r = 0; r < XPF_NROLES; r++)
			live[r] += diff[s * XPF_NROLES + r];
		while (c < ncols && cols[c].at == s) {
			column *col = &cols[c++];
			if (p->peak_position >= 0 && (size_t)p->peak_position == s && p->npeak) {
				for (int r = 0; r < XPF_NROLES; r++)
					col->role[r] = (double)p->role_bytes[r];
				continue;
			}
			double total = (double)col->bytes;
			double in = indef_sum < total ? indef_sum : total;
			double temp = total - in;
			double lsum = 0;
			for (int r = 0; r < XPF_NROLES; r++)
				lsum += live[r] > 0 ? (double)live[r] : 0;
			for (int r = 0; r < XPF_NROLES; r++) {
				col->role[r] = indef_sum > 0 ? indef[r] * in / indef_sum : 0;
				if (lsum > 0 && live[r] > 0)
					col->role[r] += temp * (double)live[r] / lsum;
			}
			if (lsum == 0)
				col->role[XPF_PLAN_ROLE_OTHER] += temp;
		}
	}
	free(diff);
	free(role);
}

static double ypos(double v, double top) { return Y1 - (Y1 - Y0) * v / top; }

static double xcol(size_t c, size_t ncols) { return X0 + (X1 - X0) * (double)c / (double)ncols; }

/* Extend a step path to column c at height y10 (tenths of a pixel) when it
 * differs from *cur. */
static void step_to(xpf_buf *out, size_t c, size_t ncols, long y10, long *cur)
{
	if (y10 == *cur)
		return;
	xpf_svg_hv(out, xcol(c, ncols), (double)y10 / 10);
	*cur = y10;
}

static void title_bytes(xpf_buf *b, const char *what, uint64_t bytes)
{
	xpf_buf_adds(b, "<title>");
	xpf_svg_esc(b, what, 0);
	xpf_svg_bytes_text(b, bytes);
	xpf_buf_adds(b, "</title>");
}

static void swatch(xpf_buf *b, double x, double y, const char *color)
{
	xpf_buf_adds(b, "<rect x=\"");
	xpf_svg_num(b, x);
	xpf_buf_adds(b, "\" y=\"");
	xpf_svg_num(b, y - 10);
	xpf_buf_printf(b, "\" width=\"12\" height=\"12\" fill=\"%s\"/>", color);
}

static void draw_panel(xpf_buf *out, const xpf_plan *p)
{
	char hb[32], pct[32], line[256];
	double y = Y0 + 4;
	xpf_svg_text(out, PANEL_X, y, NULL, "lg", "Role of the bytes at the peak", 0);
	y += 20;
	for (int r = XPF_NROLES - 1; r >= 0; r--) {
		xpf_buf_adds(out, "<g>");
		snprintf(line, sizeof line, "%s at the peak: ", xpf_role_name(r));
		title_bytes(out, line, p->role_bytes[r]);
		swatch(out, PANEL_X, y, role_color[r]);
		snprintf(line, sizeof line, "%s", xpf_role_name(r));
		xpf_svg_text(out, PANEL_X + 18, y, NULL, "lg", line, 0);
		snprintf(line, sizeof line, "%s  %s%%", xpf_human(p->role_bytes[r], hb),
			 xpf_pct(p->role_bytes[r], p->heap_peak_bytes, pct));
		xpf_svg_text(out, W - 12, y, "end", "lg", line, 0);
		xpf_buf_adds(out, "</g>\n");
		y += 18;
	}
	y += 14;
	snprintf(line, sizeof line, "Largest buffers at the peak (of %zu)", p->npeak);
	xpf_svg_text(out, PANEL_X, y, NULL, "lg", line, 0);
	y += 18;
	size_t top = p->npeak < TOP_BUFFERS ? p->npeak : TOP_BUFFERS;
	for (size_t i = 0; i < top; i++) {
		const xpf_plan_peak *pk = &p->peak[i];
		const xpf_plan_buffer *bf = pk->buffer;
		const char *instr = bf && bf->instr ? bf->instr->name : "";
		const char *shape = bf ? bf->shape : "";
		xpf_buf_adds(out, "<g><title>");
		xpf_buf_printf(out, "#%zu: ", i + 1);
		xpf_svg_bytes_text(out, pk->bytes);
		xpf_buf_printf(out, ", %s%% of the peak, %s, %s, ",
			       xpf_pct(pk->bytes, p->heap_peak_bytes, pct), xpf_kind_name(pk->kind),
			       xpf_role_name(pk->role));
		xpf_svg_esc(out, shape, 200);
		xpf_buf_adds(out, ", ");
		xpf_svg_esc(out, instr, 200);
		if (bf && bf->instr && bf->instr->op_name[0]) {
			xpf_buf_adds(out, ", ");
			xpf_svg_esc(out, bf->instr->op_name, 300);
		}
		if (bf && bf->instr && bf->instr->source[0]) {
			xpf_buf_adds(out, " at ");
			xpf_svg_esc(out, bf->instr->source, 200);
		}
		xpf_buf_adds(out, "</title>");
		swatch(out, PANEL_X, y, role_color[pk->role]);
		snprintf(line, sizeof line, "%s  %s", xpf_human(pk->bytes, hb),
			 xpf_role_name(pk->role));
		xpf_svg_text(out, PANEL_X + 18, y, NULL, "lg", line, 0);
		xpf_svg_text(out, PANEL_X + 18, y + 14, NULL, "sm",
			     instr[0] ? instr : "(allocation)", 42);
		xpf_buf_adds(out, "</g>\n");
		y += 34;
	}
	if (p->npeak > top) {
		uint64_t rest = 0;
		for (size_t i = top; i < p->npeak; i++)
			rest += p->peak[i].bytes;
		snprintf(line, sizeof line, "+ %zu more: %s (peak_buffers.tsv)", p->npeak - top,
			 xpf_human(rest, hb));
		xpf_svg_text(out, PANEL_X, y, NULL, "sm", line, 0);
	}
}

/* The empty picture: why there is no curve, and what the plan still says. */
static void draw_no_heap(xpf_buf *out, const xpf_plan *p)
{
	char hb[32], line[512];
	snprintf(line, sizeof line, "no heap to draw: %s",
		 !p->has_assignment ?
			 (p->missing && p->missing[0] ? p->missing :
							"the module has no buffer assignment") :
			 "the buffer assignment has no heap-simulator trace");
	xpf_svg_message(out, X0, Y0, X1, Y1, line, 120);
	if (p->has_assignment) {
		snprintf(line, sizeof line, "heap peak %s (%llu bytes) = indefinite allocations",
			 xpf_human(p->heap_peak_bytes, hb), (unsigned long long)p->heap_peak_bytes);
		xpf_svg_text(out, 12, 44, NULL, "sub", line, 0);
		draw_panel(out, p);
	}
}

/* What the drawing steps share once the columns and the scale are known. */
typedef struct heap_ctx {
	const xpf_plan *p;
	size_t n; /* steps */
	column *cols;
	size_t ncols;
	uint64_t ymax;     /* the most bytes of any column */
	uint64_t capb;     /* the capacity, 0: none */
	bool cap_on_scale; /* the capacity fits the y axis, drawn as a line */
	double top;        /* the y axis maximum */
} heap_ctx;

static double ycap(const heap_ctx *hc) { return ypos((double)hc->capb, hc->top); }

/* Each column's steps, and the step that represents it: the one with the
 * most bytes, so the peak is never averaged away. */
static column *make_columns(const xpf_plan *p, size_t ncols, uint64_t *ymax)
{
	size_t n = p->nsteps;
	column *cols = calloc(ncols, sizeof *cols);
	if (!cols)
		abort();
	*ymax = 0;
	for (size_t c = 0; c < ncols; c++) {
		column *col = &cols[c];
		col->first = c * n / ncols;
		col->last = (c + 1) * n / ncols - 1;
		col->at = col->first;
		for (size_t s = col->first; s <= col->last; s++)
			if (p->steps[s].bytes > p->steps[col->at].bytes)
				col->at = s;
		/* the peak step represents its column, whatever ties say */
		if (p->peak_position >= (long)col->first && p->peak_position <= (long)col->last &&
		    p->steps[p->peak_position].bytes >= p->steps[col->at].bytes)
			col->at = (size_t)p->peak_position;
		col->bytes = p->steps[col->at].bytes;
		if (col->bytes > *ymax)
			*ymax = col->bytes;
	}
	return cols;
}

static void draw_subtitle(xpf_buf *out, const heap_ctx *hc)
{
	const xpf_plan *p = hc->p;
	char hb[32], hb2[32], hb3[32];
	xpf_buf sub = XPF_BUF_INIT;
	xpf_buf_printf(&sub, "peak %s at step %ld of %zu", xpf_human(p->heap_peak_bytes, hb),
		       p->peak_position, hc->n);
	xpf_buf_printf(&sub, " \xC2\xB7 temp %s \xC2\xB7 parameters %s \xC2\xB7 need %s",
		       xpf_human(p->temp_bytes, hb), xpf_human(p->parameters_bytes, hb2),
		       xpf_human(p->need_bytes, hb3));
	if (hc->capb)
		xpf_buf_printf(&sub, " \xC2\xB7 capacity %s", xpf_human(hc->capb, hb));
	if (hc->n > hc->ncols)
		xpf_buf_printf(&sub, " \xC2\xB7 %zu steps per column (max shown)",
			       (hc->n + hc->ncols - 1) / hc->ncols);
	xpf_svg_text(out, 12, 44, NULL, "sub", sub.data, 0);
	xpf_buf_release(&sub);
}

/* The y ticks (which set hc->top) and the axes; x runs on steps, its ticks
 * placed by value, and the plot spans exactly n steps. */
static void draw_axes(xpf_buf *out, heap_ctx *hc)
{
	double scale_max = (double)hc->ymax;
	if (hc->cap_on_scale && hc->capb > hc->ymax)
		scale_max = (double)hc->capb;
	xpf_svg_ticks yt, xt;
	xpf_svg_ticks_make(&yt, scale_max * 1.06, 8, XPF_SVG_BYTES);
	xpf_svg_ticks_make(&xt, (double)hc->n, 10, XPF_SVG_COUNT);
	hc->top = yt.top;
	xt.top = (double)hc->n;
	xt.n = (int)((double)hc->n / xt.step) + 1;
	xpf_svg_axes(out, X0, Y0, X1, Y1, &xt, 0, &yt, "program order (heap-simulator step)",
		     "bytes in use (heap + parameters, outputs, constants)");
}

/* The stack, drawn top role first so each layer paints over the sum above
 * it, then the outline of the total. */
static void draw_stack(xpf_buf *out, const heap_ctx *hc)
{
	const column *cols = hc->cols;
	size_t ncols = hc->ncols;
	for (int r = XPF_NROLES - 1; r >= 0; r--) {
		bool any = false;
		for (size_t c = 0; c < ncols && !any; c++)
			any = cols[c].role[r] > 0;
		if (!any)
			continue;
		xpf_buf_printf(out, "<path fill=\"%s\" d=\"M", role_color[r]);
		xpf_svg_num(out, X0);
		xpf_buf_addc(out, ' ');
		xpf_svg_num(out, Y1);
		long cur = (long)(Y1 * 10 + 0.5);
		for (size_t c = 0; c < ncols; c++) {
			double cum = 0;
			for (int k = 0; k <= r; k++)
				cum += cols[c].role[k];
			step_to(out, c, ncols, (long)(ypos(cum, hc->top) * 10 + 0.5), &cur);
		}
		xpf_buf_adds(out, "H");
		xpf_svg_num(out, X1);
		xpf_buf_adds(out, "V");
		xpf_svg_num(out, Y1);
		xpf_buf_adds(out, "Z\"/>\n");
	}
	xpf_buf_adds(out, "<path fill=\"none\" stroke=\"#222\" stroke-width=\"1\" d=\"M");
	xpf_svg_num(out, X0);
	xpf_buf_addc(out, ' ');
	long cur = (long)(ypos((double)cols[0].bytes, hc->top) * 10 + 0.5);
	xpf_svg_num(out, (double)cur / 10);
	for (size_t c = 1; c < ncols; c++)
		step_to(out, c, ncols, (long)(ypos((double)cols[c].bytes, hc->top) * 10 + 0.5), &cur);
	xpf_buf_adds(out, "H");
	xpf_svg_num(out, X1);
	xpf_buf_adds(out, "\"/>\n");
}

/* Invisible bands over groups of columns whose hover text gives the exact
 * figures of the group's largest step. */
static void draw_hover_bands(xpf_buf *out, const heap_ctx *hc)
{
	const xpf_plan *p = hc->p;
	const column *cols = hc->cols;
	size_t ncols = hc->ncols;
	size_t per = (ncols + HOVER_BANDS - 1) / HOVER_BANDS;
	xpf_buf_adds(out, "<g fill=\"#fff\" fill-opacity=\"0\">\n");
	for (size_t c = 0; c < ncols; c += per) {
		size_t e = c + per < ncols ? c + per : ncols;
		size_t at = cols[c].at;
		for (size_t k = c; k < e; k++)
			if (cols[k].bytes > p->steps[at].bytes)
				at = cols[k].at;
		xpf_buf_adds(out, "<rect x=\"");
		xpf_svg_num(out, xcol(c, ncols));
		xpf_buf_printf(out, "\" y=\"%d\" width=\"", (int)Y0);
		xpf_svg_num(out, xcol(e, ncols) - xcol(c, ncols));
		xpf_buf_printf(out, "\" height=\"%d\"><title>", (int)(Y1 - Y0));
		if (cols[c].first == cols[e - 1].last)
			xpf_buf_printf(out, "step %zu: ", cols[c].first);
		else
			xpf_buf_printf(out, "steps %zu\xE2\x80\x93%zu: max ", cols[c].first,
				       cols[e - 1].last);
		xpf_svg_bytes_text(out, p->steps[at].bytes);
		xpf_buf_printf(out, " at step %zu, ", at);
		xpf_svg_esc(out, p->steps[at].instruction, 120);
		xpf_buf_adds(out, "</title></rect>\n");
	}
	xpf_buf_adds(out, "</g>\n");
}

/* A dashed line where the capacity fits the scale; a note when it is
 * above it. */
static void draw_capacity(xpf_buf *out, const heap_ctx *hc, const char *what)
{
	char hb[32], hb2[32], line[512];
	xpf_buf_adds(out, "<g><title>");
	xpf_svg_esc(out, what, 0);
	xpf_buf_adds(out, ": ");
	xpf_svg_bytes_text(out, hc->capb);
	xpf_buf_adds(out, "</title>");
	if (hc->cap_on_scale) {
		double y = ycap(hc);
		xpf_svg_cap_line(out, "8 4", X0, X1, y);
		snprintf(line, sizeof line, "capacity %s", xpf_human(hc->capb, hb));
		xpf_svg_text(out, X0 + 6, y - 5, NULL, "cap", line, 0);
	} else {
		snprintf(line, sizeof line, "capacity %s: above this scale (the peak is %s%% of it)",
			 xpf_human(hc->capb, hb), xpf_pct(hc->ymax, hc->capb, hb2));
		xpf_svg_text(out, X0 + 6, Y0 + 14, NULL, "cap", line, 0);
	}
	xpf_buf_adds(out, "</g>\n");
}

/* The peak's two labels beside its marker at (x, y), on the side with more
 * space, moved below the capacity line when they would cross it.  A white
 * halo keeps them readable over the stack. */
static void peak_labels(xpf_buf *out, const heap_ctx *hc, double x, double y)
{
	const xpf_plan *p = hc->p;
	char hb[32], line[512];
	bool right = x > (X0 + X1) / 2;
	double ly = y - 22 < Y0 + 12 ? Y0 + 12 : y - 22;
	if (hc->cap_on_scale && hc->capb && ly > ycap(hc) - 34 && ly < ycap(hc) + 4)
		ly = ycap(hc) + 16;
	double space = right ? x - 8 - X0 : X1 - x - 8;
	size_t fit = space > 0 ? (size_t)(space / 7.4) : 0;
	snprintf(line, sizeof line, "peak %s at step %ld", xpf_human(p->heap_peak_bytes, hb),
		 p->peak_position);
	for (int k = 0; k < 2 && fit >= 8; k++) {
		const char *txt = k == 0 ? line : p->peak_instruction;
		if (!txt || !txt[0])
			break;
		xpf_buf_printf(out,
			       "<text stroke=\"#fff\" stroke-width=\"4\" paint-order=\"stroke\" "
			       "class=\"%s\" x=\"",
			       k == 0 ? "pk" : "pki");
		xpf_svg_num(out, right ? x - 8 : x + 8);
		xpf_buf_adds(out, "\" y=\"");
		xpf_svg_num(out, ly + 15 * k);
		xpf_buf_printf(out, "\"%s>", right ? " text-anchor=\"end\"" : "");
		xpf_svg_esc(out, txt, fit);
		xpf_buf_adds(out, "</text>");
	}
}

/* The heap peak: a dot on the curve, a dashed drop to the axis, labels. */
static void draw_peak(xpf_buf *out, const heap_ctx *hc)
{
	const xpf_plan *p = hc->p;
	size_t pc = (size_t)p->peak_position * hc->ncols / hc->n;
	double x = (xcol(pc, hc->ncols) + xcol(pc + 1, hc->ncols)) / 2;
	double y = ypos((double)p->steps[p->peak_position].bytes, hc->top);
	xpf_buf_adds(out, "<g><title>heap peak: ");
	xpf_svg_bytes_text(out, p->heap_peak_bytes);
	xpf_buf_printf(out, " (unpadded %llu) at step %ld, ",
		       (unsigned long long)p->heap_peak_unpadded_bytes, p->peak_position);
	xpf_svg_esc(out, p->peak_instruction, 200);
	xpf_buf_adds(out, "</title><line stroke=\"#b00000\" stroke-dasharray=\"3 3\"");
	xpf_svg_line_at(out, x, y, x, Y1);
	xpf_buf_adds(out, "/><circle r=\"4\" fill=\"#b00000\" cx=\"");
	xpf_svg_num(out, x);
	xpf_buf_adds(out, "\" cy=\"");
	xpf_svg_num(out, y);
	xpf_buf_adds(out, "\"/>");
	peak_labels(out, hc, x, y);
	xpf_buf_adds(out, "</g>\n");
}

void xpf_svg_heap(const xpf_plan *p, const xpf_svg_capacity *cap, xpf_buf *out)
{
	char line[512];
	snprintf(line, sizeof line, "heap of %s over program order", p->module);
	xpf_svg_begin(out, W, H, line);
	snprintf(line, sizeof line, "Heap of %s over program order", p->module);
	xpf_svg_text(out, 12, 24, NULL, "h", line, 110);
	if (!p->has_assignment || p->nsteps == 0) {
		draw_no_heap(out, p);
		xpf_svg_end(out);
		return;
	}

	heap_ctx hc = { .p = p, .n = p->nsteps };
	hc.ncols = hc.n < PLOT_W ? hc.n : PLOT_W;
	hc.cols = make_columns(p, hc.ncols, &hc.ymax);
	split_roles(p, hc.cols, hc.ncols);
	hc.capb = cap ? cap->bytes : 0;
	hc.cap_on_scale = hc.capb && (double)hc.capb <= 2.5 * (double)(hc.ymax ? hc.ymax : 1);

	draw_subtitle(out, &hc);
	draw_axes(out, &hc);
	draw_stack(out, &hc);
	draw_hover_bands(out, &hc);
	if (hc.capb)
		draw_capacity(out, &hc, cap->what ? cap->what : "capacity");
	if (p->peak_position >= 0 && (size_t)p->peak_position < hc.n)
		draw_peak(out, &hc);
	draw_panel(out, p);
	if (hc.n > hc.ncols || p->npeak) {
		xpf_svg_text(out, 12, H - 10, NULL, "sm",
			     "Split by role: the plan's at the peak; elsewhere inferred from buffer "
			     "lifetimes, scaled to each step's bytes.  Hover for exact figures.",
			     0);
	}
	free(hc.cols);
	xpf_svg_end(out);
}
