#include "buf.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void xpf_buf_reserve(xpf_buf *b, size_t extra)
{
	size_t need = b->len + extra + 1;
	if (need < b->len) /* overflow */
		abort();
	if (need <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	char *p = realloc(b->data, cap);
	if (p == NULL)
		abort();
	b->data = p;
	b->cap = cap;
}

void xpf_buf_add(xpf_buf *b, const void *p, size_t n)
{
	xpf_buf_reserve(b, n);
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void xpf_buf_adds(xpf_buf *b, const char *s) { xpf_buf_add(b, s, strlen(s)); }

void xpf_buf_addc(xpf_buf *b, char c) { xpf_buf_add(b, &c, 1); }

/* Formatted into the room the buffer has; formatted again only when it did
 * not fit (renderers call this millions of times on a big capture, mostly
 * for a few bytes). */
void xpf_buf_printf(xpf_buf *b, const char *fmt, ...)
{
	va_list ap;
	if (b->cap < b->len + 64)
		xpf_buf_reserve(b, 64);
	size_t room = b->cap - b->len;
	va_start(ap, fmt);
	int n = vsnprintf(b->data + b->len, room, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->data[b->len] = '\0';
		return;
	}
	if ((size_t)n >= room) {
		xpf_buf_reserve(b, (size_t)n);
		va_start(ap, fmt);
		vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	b->len += (size_t)n;
}

void xpf_buf_add_i64(xpf_buf *b, int64_t v)
{
	char t[24];
	size_t k = sizeof t;
	uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;
	do {
		t[--k] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		t[--k] = '-';
	xpf_buf_add(b, t + k, sizeof t - k);
}

void xpf_buf_reset(xpf_buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

void xpf_buf_release(xpf_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

char *xpf_buf_detach(xpf_buf *b, size_t *len)
{
	char *p = b->data;
	if (p == NULL) {
		p = malloc(1);
		if (p == NULL)
			abort();
		p[0] = '\0';
	}
	if (len)
		*len = b->len;
	b->data = NULL;
	b->len = b->cap = 0;
	return p;
}

/* The escape of control character c in a name (SPEC §3): \t \n \r, else
 * \xHH, written into esc (5 bytes); its length. */
static size_t control_escape(unsigned char c, char esc[5])
{
	switch (c) {
	case '\t': memcpy(esc, "\\t", 2); return 2;
	case '\n': memcpy(esc, "\\n", 2); return 2;
	case '\r': memcpy(esc, "\\r", 2); return 2;
	}
	snprintf(esc, 5, "\\x%02x", c);
	return 4;
}

static bool is_control(unsigned char c) { return c < 0x20 || c == 0x7f; }

/* s[0..n) with its control characters escaped, and backslashes too when
 * tsv (so that a TSV reader can undo it). */
static void add_escaped(xpf_buf *b, const char *s, size_t n, bool tsv)
{
	size_t start = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		char esc[5] = "\\\\";
		size_t el = 2;
		if (is_control(c))
			el = control_escape(c, esc);
		else if (!tsv || c != '\\')
			continue;
		xpf_buf_add(b, s + start, i - start);
		xpf_buf_add(b, esc, el);
		start = i + 1;
	}
	xpf_buf_add(b, s + start, n - start);
}

void xpf_buf_tsvn(xpf_buf *b, const char *s, size_t n)
{
	if (s)
		add_escaped(b, s, n, true);
}

void xpf_buf_tsv(xpf_buf *b, const char *s)
{
	if (s)
		xpf_buf_tsvn(b, s, strlen(s));
}

void xpf_buf_text(xpf_buf *b, const char *s)
{
	if (s)
		add_escaped(b, s, strlen(s), false);
}

void xpf_buf_json_str(xpf_buf *b, const char *s)
{
	xpf_buf_addc(b, '"');
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		switch (*p) {
		case '"': xpf_buf_adds(b, "\\\""); break;
		case '\\': xpf_buf_adds(b, "\\\\"); break;
		case '\n': xpf_buf_adds(b, "\\n"); break;
		case '\t': xpf_buf_adds(b, "\\t"); break;
		case '\r': xpf_buf_adds(b, "\\r"); break;
		default:
			if (*p < 0x20)
				xpf_buf_printf(b, "\\u%04x", *p);
			else
				xpf_buf_addc(b, (char)*p);
		}
	}
	xpf_buf_addc(b, '"');
}

char *xpf_human(uint64_t v, char out[32])
{
	static const char *units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	if (v < 1024) {
		snprintf(out, 32, "%llu B", (unsigned long long)v);
		return out;
	}
	/* Integer arithmetic so rounding is the same everywhere. */
	int u = 0;
	uint64_t div = 1024;
	while (u < 5 && v / div >= 1024) {
		div *= 1024;
		u++;
	}
	int decimals = u >= 2 ? 2 : 1;
	unsigned long long scale = decimals == 2 ? 100 : 10;
	/* round half up of v*scale/div without overflow */
	unsigned __int128 num = (unsigned __int128)v * scale + div / 2;
	unsigned long long q = (unsigned long long)(num / div);
	if (q / scale >= 1024 && u < 5) { /* rounding crossed into the next unit */
		div *= 1024;
		u++;
		decimals = 2;
		scale = 100;
		num = (unsigned __int128)v * scale + div / 2;
		q = (unsigned long long)(num / div);
	}
	snprintf(out, 32, "%llu.%0*llu %s", q / scale, decimals, q % scale, units[u]);
	return out;
}

char *xpf_pct(uint64_t part, uint64_t whole, char out[32])
{
	if (whole == 0) {
		snprintf(out, 32, "0.0");
		return out;
	}
	unsigned __int128 num = (unsigned __int128)part * 1000 + whole / 2;
	unsigned long long t = (unsigned long long)(num / whole);
	snprintf(out, 32, "%llu.%llu", t / 10, t % 10);
	return out;
}

int xpf_mul_u64(uint64_t a, uint64_t b, uint64_t *out)
{
	if (a != 0 && b > UINT64_MAX / a)
		return -1;
	*out = a * b;
	return 0;
}
