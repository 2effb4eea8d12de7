/* The SVG writer shared by heap.svg and timeline.svg (see svg.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tree/render/svg.h"

void xpf_svg_begin(xpf_buf *b, int width, int height, const char *title)
{
	xpf_buf_printf(b,
		       "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		       "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		       "viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Arial, Helvetica, sans-serif\" "
		       "font-size=\"12\">\n",
		       width, height, width, height);
	xpf_buf_adds(b, "<title>");
	xpf_svg_esc(b, title, 0);
	xpf_buf_adds(b, "</title>\n<style>"
			"text{fill:#222}"
			".h{font-size:16px;font-weight:bold}"
			".sub{font-size:12px;fill:#444}"
			".ax{font-size:11px;fill:#555}"
			".axn{font-size:12px;fill:#333}"
			".lg{font-size:12px}"
			".sm{font-size:11px;fill:#333}"
			".pk{font-size:12px;font-weight:bold;fill:#b00000}"
			".pki{font-size:11px;fill:#b00000}"
			".cap{font-size:12px;font-weight:bold;fill:#c00}"
			".grid{stroke:#e6e6e6;stroke-width:1}"
			"</style>\n");
	xpf_buf_printf(b, "<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", width, height);
}

void xpf_svg_end(xpf_buf *b) { xpf_buf_adds(b, "</svg>\n"); }

/* Length of the valid UTF-8 sequence at s (1..4) and its code point, or 0
 * when the bytes are not valid UTF-8 (overlong, surrogate, > U+10FFFF). */
static int utf8_char(const unsigned char *s, uint32_t *cp)
{
	unsigned c = s[0];
	int len;
	uint32_t v, min;
	if (c < 0x80) {
		*cp = c;
		return 1;
	} else if ((c & 0xE0) == 0xC0) {
		len = 2, v = c & 0x1F, min = 0x80;
	} else if ((c & 0xF0) == 0xE0) {
		len = 3, v = c & 0x0F, min = 0x800;
	} else if ((c & 0xF8) == 0xF0) {
		len = 4, v = c & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	for (int i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		v = (v << 6) | (s[i] & 0x3F);
	}
	if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
		return 0;
	*cp = v;
	return len;
}

static bool xml_allowed(uint32_t cp)
{
	return cp == 0x9 || cp == 0xA || cp == 0xD || (cp >= 0x20 && cp <= 0xD7FF) ||
	       (cp >= 0xE000 && cp <= 0xFFFD) || cp >= 0x10000;
}

void xpf_svg_esc(xpf_buf *b, const char *str, size_t max_chars)
{
	if (!str)
		return;
	const unsigned char *s = (const unsigned char *)str;
	size_t chars = 0;
	while (*s) {
		if (max_chars && chars + 1 >= max_chars) {
			/* the last character that fits: the ellipsis unless it ends the text */
			uint32_t cp2;
			int l2 = utf8_char(s, &cp2);
			if (s[l2 ? l2 : 1] != 0) {
				xpf_buf_adds(b, "\xE2\x80\xA6");
				return;
			}
		}
		uint32_t cp;
		int len = utf8_char(s, &cp);
		chars++;
		if (len == 0 || !xml_allowed(cp)) {
			xpf_buf_adds(b, "\xEF\xBF\xBD");
			s += len ? len : 1;
			continue;
		}
		switch (cp) {
		case '&': xpf_buf_adds(b, "&amp;"); break;
		case '<': xpf_buf_adds(b, "&lt;"); break;
		case '>': xpf_buf_adds(b, "&gt;"); break;
		case '"': xpf_buf_adds(b, "&quot;"); break;
		case '\'': xpf_buf_adds(b, "&apos;"); break;
		case '\t':
		case '\n':
		case '\r': xpf_buf_addc(b, ' '); break;
		default: xpf_buf_add(b, s, (size_t)len); break;
		}
		s += len;
	}
}

/* v rounded to `dec` decimals (0..4), written without locale. */
static void fmt_fixed(double v, int dec, char *out, size_t cap)
{
	if (!isfinite(v))
		v = 0;
	long long p = 1;
	for (int i = 0; i < dec; i++)
		p *= 10;
	double scaled = v * (double)p;
	if (scaled > 9e18)
		scaled = 9e18;
	if (scaled < -9e18)
		scaled = -9e18;
	long long t = llround(scaled);
	const char *sign = "";
	if (t < 0) {
		sign = "-";
		t = -t;
	}
	if (dec == 0)
		snprintf(out, cap, "%s%lld", sign, t);
	else
		snprintf(out, cap, "%s%lld.%0*lld", sign, t / p, dec, t % p);
}

void xpf_svg_num(xpf_buf *b, double v)
{
	if (!isfinite(v))
		v = 0;
	long long t = llround(v * 10.0);
	if (t == 0) {
		xpf_buf_addc(b, '0');
		return;
	}
	if (t < 0) {
		xpf_buf_addc(b, '-');
		t = -t;
	}
	if (t % 10)
		xpf_buf_printf(b, "%lld.%lld", t / 10, t % 10);
	else
		xpf_buf_printf(b, "%lld", t / 10);
}

void xpf_svg_rect_at(xpf_buf *b, double x, double y, double w, double h)
{
	xpf_buf_adds(b, " x=\"");
	xpf_svg_num(b, x);
	xpf_buf_adds(b, "\" y=\"");
	xpf_svg_num(b, y);
	xpf_buf_adds(b, "\" width=\"");
	xpf_svg_num(b, w);
	xpf_buf_adds(b, "\" height=\"");
	xpf_svg_num(b, h);
	xpf_buf_addc(b, '"');
}

void xpf_svg_line_at(xpf_buf *b, double x1, double y1, double x2, double y2)
{
	xpf_buf_adds(b, " x1=\"");
	xpf_svg_num(b, x1);
	xpf_buf_adds(b, "\" x2=\"");
	xpf_svg_num(b, x2);
	xpf_buf_adds(b, "\" y1=\"");
	xpf_svg_num(b, y1);
	xpf_buf_adds(b, "\" y2=\"");
	xpf_svg_num(b, y2);
	xpf_buf_addc(b, '"');
}

void xpf_svg_hv(xpf_buf *b, double x, double y)
{
	xpf_buf_addc(b, 'H');
	xpf_svg_num(b, x);
	xpf_buf_addc(b, 'V');
	xpf_svg_num(b, y);
}

void xpf_svg_cap_line(xpf_buf *b, const char *dashes, double x0, double x1, double y)
{
	xpf_buf_printf(b, "<line stroke=\"#d62728\" stroke-width=\"2\" stroke-dasharray=\"%s\"",
		       dashes);
	xpf_svg_line_at(b, x0, y, x1, y);
	xpf_buf_adds(b, "/>");
}

void xpf_svg_message(xpf_buf *b, double x0, double y0, double x1, double y1, const char *what,
		     size_t max_chars)
{
	xpf_buf_printf(b,
		       "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#f6f6f6\" "
		       "stroke=\"#ccc\"/>\n",
		       (int)x0, (int)y0, (int)(x1 - x0), (int)(y1 - y0));
	xpf_svg_text(b, (x0 + x1) / 2, (y0 + y1) / 2, "middle", "lg", what, max_chars);
}

void xpf_svg_text(xpf_buf *b, double x, double y, const char *anchor, const char *cls,
		  const char *text, size_t max_chars)
{
	xpf_buf_adds(b, "<text x=\"");
	xpf_svg_num(b, x);
	xpf_buf_adds(b, "\" y=\"");
	xpf_svg_num(b, y);
	xpf_buf_addc(b, '"');
	if (anchor && strcmp(anchor, "start") != 0)
		xpf_buf_printf(b, " text-anchor=\"%s\"", anchor);
	if (cls)
		xpf_buf_printf(b, " class=\"%s\"", cls);
	xpf_buf_addc(b, '>');
	xpf_svg_esc(b, text, max_chars);
	xpf_buf_adds(b, "</text>\n");
}

void xpf_svg_bytes_text(xpf_buf *b, uint64_t bytes)
{
	char hb[32];
	xpf_buf_printf(b, "%llu bytes (%s)", (unsigned long long)bytes, xpf_human(bytes, hb));
}

/* ---- axes ----------------------------------------------------------- */

static const char *const byte_sfx[] = { " B", " KiB", " MiB", " GiB", " TiB", " PiB" };
static const char *const ns_sfx[] = { " ns", " \xC2\xB5s", " ms", " s" };

void xpf_svg_ticks_make(xpf_svg_ticks *t, double max, int want, enum xpf_svg_unit unit)
{
	if (!isfinite(max) || max <= 0)
		max = 1;
	if (want < 2)
		want = 2;
	if (want > 10)
		want = 10;
	memset(t, 0, sizeof *t);
	t->unit = unit;
	t->scale = 1;
	t->suffix = "";
	if (unit == XPF_SVG_BYTES) {
		int k = 0;
		while (k < 5 && max / t->scale >= 1024)
			t->scale *= 1024, k++;
		t->suffix = byte_sfx[k];
	} else if (unit == XPF_SVG_NS) {
		int k = 0;
		while (k < 3 && max / t->scale >= 1000)
			t->scale *= 1000, k++;
		t->suffix = ns_sfx[k];
	}
	double mv = max / t->scale;
	double raw = mv / want;
	double e = pow(10, floor(log10(raw)));
	static const double nice[] = { 1, 2, 2.5, 5, 10 };
	double step = 10 * e;
	for (size_t i = 0; i < sizeof nice / sizeof nice[0]; i++) {
		if (nice[i] == 2.5 && unit != XPF_SVG_BYTES)
			continue;
		if (nice[i] * e >= raw * 0.999) {
			step = nice[i] * e;
			break;
		}
	}
	/* Bytes, nanoseconds and steps are integers in the base unit. */
	if (step * t->scale < 1)
		step = 1 / t->scale;
	t->step = step * t->scale;
	double n = ceil(max / t->step - 1e-9);
	if (n < 1)
		n = 1;
	t->n = (int)n + 1;
	t->top = n * t->step;
	t->decimals = 0;
	while (t->decimals < 3) {
		double f = step * pow(10, t->decimals);
		if (fabs(f - round(f)) < 1e-6)
			break;
		t->decimals++;
	}
}

void xpf_svg_tick_label(const xpf_svg_ticks *t, double v, char out[48])
{
	if (v == 0) {
		snprintf(out, 48, "0");
		return;
	}
	char num[40];
	fmt_fixed(v / t->scale, t->decimals, num, sizeof num);
	snprintf(out, 48, "%s%s", num, t->suffix);
}

char *xpf_svg_human_ns(int64_t ns, char out[48])
{
	char num[40];
	double a = fabs((double)ns);
	if (a < 1000) {
		snprintf(out, 48, "%lld ns", (long long)ns);
	} else if (a < 1e6) {
		fmt_fixed((double)ns / 1e3, 1, num, sizeof num);
		snprintf(out, 48, "%s \xC2\xB5s", num);
	} else if (a < 1e9) {
		fmt_fixed((double)ns / 1e6, 2, num, sizeof num);
		snprintf(out, 48, "%s ms", num);
	} else {
		fmt_fixed((double)ns / 1e9, 3, num, sizeof num);
		snprintf(out, 48, "%s s", num);
	}
	return out;
}

void xpf_svg_axes(xpf_buf *b, double x0, double y0, double x1, double y1, const xpf_svg_ticks *xt,
		  double x_origin, const xpf_svg_ticks *yt, const char *xlabel, const char *ylabel)
{
	char lab[48];
	xpf_buf_adds(b, "<g>\n");
	for (int i = 0; i < yt->n; i++) {
		double v = yt->step * i;
		double y = y1 - (y1 - y0) * v / yt->top;
		xpf_buf_adds(b, "<line class=\"grid\"");
		xpf_svg_line_at(b, x0, y, x1, y);
		xpf_buf_adds(b, "/>\n");
		xpf_svg_tick_label(yt, v, lab);
		xpf_svg_text(b, x0 - 6, y + 4, "end", "ax", lab, 0);
	}
	for (int i = 0; i < xt->n; i++) {
		double v = xt->step * i;
		double x = x0 + (x1 - x0) * v / xt->top;
		xpf_buf_adds(b, "<line stroke=\"#888\"");
		xpf_svg_line_at(b, x, y1, x, y1 + 4);
		xpf_buf_adds(b, "/>\n");
		xpf_svg_tick_label(xt, x_origin + v, lab);
		xpf_svg_text(b, x, y1 + 16, "middle", "ax", lab, 0);
	}
	xpf_buf_adds(b, "<path fill=\"none\" stroke=\"#666\" d=\"M");
	xpf_svg_num(b, x0);
	xpf_buf_addc(b, ' ');
	xpf_svg_num(b, y0);
	xpf_buf_adds(b, "V");
	xpf_svg_num(b, y1);
	xpf_buf_adds(b, "H");
	xpf_svg_num(b, x1);
	xpf_buf_adds(b, "\"/>\n");
	if (xlabel)
		xpf_svg_text(b, (x0 + x1) / 2, y1 + 34, "middle", "axn", xlabel, 0);
	if (ylabel) {
		xpf_buf_adds(b, "<text class=\"axn\" text-anchor=\"middle\" transform=\"translate(");
		xpf_svg_num(b, 16);
		xpf_buf_addc(b, ' ');
		xpf_svg_num(b, (y0 + y1) / 2);
		xpf_buf_adds(b, ") rotate(-90)\">");
		xpf_svg_esc(b, ylabel, 0);
		xpf_buf_adds(b, "</text>\n");
	}
	xpf_buf_adds(b, "</g>\n");
}
