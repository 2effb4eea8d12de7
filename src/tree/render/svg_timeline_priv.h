/* Shared by the two files of runtime/timeline.svg only: svg_timeline.c
 * (the frame, the allocators, the legend) and svg_timeline_exec.c (the
 * executions and AllocatorRetry waits).  The picture's geometry, the
 * allocators' colours and the drawing state live here so that both place
 * things alike. */
#ifndef XPF_SVG_TIMELINE_PRIV_H
#define XPF_SVG_TIMELINE_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/runtime/runtime.h"
#include "tree/render/svg.h"

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

typedef struct tl_ctx {
	const xpf_runtime *rt;
	const char *const *names;
	size_t nmodules;
	int64_t t0, t1;
	double top;        /* y axis maximum (bytes) */
	size_t *order;     /* allocators in drawing order (order_allocators) */
	int *color_of;     /* allocator -> its rank in that order */
	size_t nlines;     /* the allocators drawn: the first MAX_LINES */
	double capmax;     /* the largest pool capacity, 0: none */
	bool cap_on_scale; /* it fits the y axis: capacities are lines */
} tl_ctx;

static inline double xt(const tl_ctx *c, int64_t t)
{
	if (t < c->t0)
		t = c->t0;
	if (t > c->t1)
		t = c->t1;
	return X0 + (X1 - X0) * (double)(t - c->t0) / (double)(c->t1 - c->t0);
}

static inline double yb(const tl_ctx *c, double v) { return Y1 - (Y1 - Y0) * v / c->top; }

/* svg_timeline_exec.c */
/* The executions: merged spans with their labels, and where merging hides
 * each start, a tick at each. */
void xpf_tl_draw_executions(xpf_buf *out, const tl_ctx *c);
/* A dot at the bytes in use where each execution started. */
void xpf_tl_draw_start_dots(xpf_buf *out, const tl_ctx *c);
/* The growth line of the module run most often on one device. */
void xpf_tl_draw_growth(xpf_buf *out, const tl_ctx *c);
/* AllocatorRetry waits: red marks along the top. */
void xpf_tl_draw_retries(xpf_buf *out, const tl_ctx *c);
/* The legend's span colours from y; returns the next y. */
double xpf_tl_legend_modules(xpf_buf *out, const tl_ctx *c, double y);

/* svg_timeline.c */
/* A label dx beside x at height y, with a white halo over the lines. */
void xpf_tl_halo_label(xpf_buf *out, bool bold, double x, double dx, double y, const char *text,
		       size_t max_chars);

#endif
