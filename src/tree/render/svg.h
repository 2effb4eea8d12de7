/* A small SVG writer for the report's pictures (heap.svg, timeline.svg).
 *
 * Everything writes into an xpf_buf.  Output is deterministic: numbers are
 * formatted with integer arithmetic (no locale, no %g), text is escaped for
 * XML 1.0 (markup characters, control characters and invalid UTF-8 are
 * replaced), and nothing depends on time or addresses.
 *
 * Pictures are pure functions of a plan or a runtime (xpf_svg_heap,
 * xpf_svg_timeline); the render functions hooked into the tree only fetch
 * those and call them.  Both aggregate into at most XPF_SVG_MAX_COLUMNS
 * columns (the maximum per column), so a 100,000-step heap or a million
 * allocator events still make a file of tens of KB. */
#ifndef XPF_SVG_H
#define XPF_SVG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

#define XPF_SVG_MAX_COLUMNS 1000

/* ---- writer --------------------------------------------------------- */

/* <?xml…?><svg …> with a white background, the given size and <title>. */
void xpf_svg_begin(xpf_buf *b, int width, int height, const char *title);
void xpf_svg_end(xpf_buf *b);
/* XML text / attribute value: & < > " ' escaped; bytes that are not valid
 * UTF-8 or not allowed in XML 1.0 become U+FFFD.  NULL writes nothing.  At
 * most max_chars characters are written ("…" marks a cut); 0: no limit. */
void xpf_svg_esc(xpf_buf *b, const char *s, size_t max_chars);
/* A coordinate with at most one decimal ("12", "12.5", "-3.1"). */
void xpf_svg_num(xpf_buf *b, double v);
/* <text x y [anchor] [class]>escaped text</text>.  anchor: "start" (NULL),
 * "middle", "end". */
void xpf_svg_text(xpf_buf *b, double x, double y, const char *anchor, const char *cls,
		  const char *text, size_t max_chars);
/* <title>bytes as "123 bytes (1.2 KiB)"</title> pieces, for hover text. */
void xpf_svg_bytes_text(xpf_buf *b, uint64_t bytes);
/* ` x="x" y="y" width="w" height="h"`: where a <rect> is. */
void xpf_svg_rect_at(xpf_buf *b, double x, double y, double w, double h);
/* ` x1="x1" x2="x2" y1="y1" y2="y2"`: where a <line> is. */
void xpf_svg_line_at(xpf_buf *b, double x1, double y1, double x2, double y2);
/* "H<x>V<y>": a step path's move across to x, then up or down to y. */
void xpf_svg_hv(xpf_buf *b, double x, double y);
/* A capacity: a red <line> from x0 to x1 at height y, dashed ("8 4"). */
void xpf_svg_cap_line(xpf_buf *b, const char *dashes, double x0, double x1, double y);
/* In place of a plot with nothing to draw: a grey box [x0,x1]×[y0,y1] (whole
 * pixels) with `what` in its middle, cut to max_chars. */
void xpf_svg_message(xpf_buf *b, double x0, double y0, double x1, double y1, const char *what,
		     size_t max_chars);

/* ---- axes ----------------------------------------------------------- */

enum xpf_svg_unit {
	XPF_SVG_BYTES, /* IEC: B, KiB, MiB, GiB, TiB */
	XPF_SVG_NS,    /* ns, µs, ms, s */
	XPF_SVG_COUNT, /* plain integers (program order steps) */
};

typedef struct xpf_svg_ticks {
	double step; /* between ticks, in the value's own unit */
	double top;  /* the axis maximum: a multiple of step >= max */
	int n;       /* ticks 0, step, …, top: n = top/step + 1 */
	enum xpf_svg_unit unit;
	double scale;       /* the label unit (1024^k bytes, 1000^k ns) */
	const char *suffix; /* " MiB", " ms", "" */
	int decimals;       /* in labels */
} xpf_svg_ticks;

/* Ticks for 0..max with about `want` intervals (2..10), on 1-2-5 steps of
 * the human unit that max falls in (2.5 too for bytes): 0, 512 MiB, 1.0 GiB... */
void xpf_svg_ticks_make(xpf_svg_ticks *t, double max, int want, enum xpf_svg_unit unit);
/* The label of value v on that axis ("1.5 GiB", "20 ms", "3000"). */
void xpf_svg_tick_label(const xpf_svg_ticks *t, double v, char out[48]);
/* A duration/time in ns for people: "850 ns", "12.5 µs", "3.20 ms", "1.234 s". */
char *xpf_svg_human_ns(int64_t ns, char out[48]);

/* Draw a y axis (left of x0, gridlines across to x1) and an x axis (below
 * y1) for a plot box [x0,x1]×[y0,y1] with the given ticks; `xlabel` and
 * `ylabel` are the axis names.  x ticks start at x_origin (the value at
 * x0). */
void xpf_svg_axes(xpf_buf *b, double x0, double y0, double x1, double y1, const xpf_svg_ticks *xt,
		  double x_origin, const xpf_svg_ticks *yt, const char *xlabel, const char *ylabel);

/* ---- the pictures --------------------------------------------------- */

struct xpf_plan;
struct xpf_runtime;

/* Where the capacity line of a heap picture comes from. */
typedef struct xpf_svg_capacity {
	uint64_t bytes;   /* 0: none */
	const char *what; /* "GPU_0_bfc capacity (measured)", "--capacity" */
} xpf_svg_capacity;

/* heap.svg of one plan. */
void xpf_svg_heap(const struct xpf_plan *p, const xpf_svg_capacity *cap, xpf_buf *out);
/* timeline.svg of a runtime; module_name(i) names host module i (NULL: "module <i>"). */
void xpf_svg_timeline(const struct xpf_runtime *rt, const char *const *module_names,
		      size_t nmodules, xpf_buf *out);

#endif
