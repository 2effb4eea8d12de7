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
	if (b->len + n + 1 > b->cap || b->len + n < b->len)
		xpf_buf_reserve(b, n);
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void xpf_buf_adds(xpf_buf *b, const char *s) { xpf_buf_add(b, s, strlen(s)); }

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

/* v's digits at p; returns the end. */
static char *put_u64(char *p, uint64_t v)
{
	char t[20];
	size_t k = sizeof t;
	do {
		t[--k] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	memcpy(p, t + k, sizeof t - k);
	return p + (sizeof t - k);
}

/* The digits are written in place: a live.tsv row holds four numbers. */
void xpf_buf_add_i64(xpf_buf *b, int64_t v)
{
	if (b->len + 22 > b->cap)
		xpf_buf_reserve(b, 21);
	char *p = b->data + b->len;
	if (v < 0)
		*p++ = '-';
	p = put_u64(p, v < 0 ? -(uint64_t)v : (uint64_t)v);
	b->len = (size_t)(p - b->data);
	*p = '\0';
}

void xpf_buf_add_u64(xpf_buf *b, uint64_t v)
{
	if (b->len + 22 > b->cap)
		xpf_buf_reserve(b, 21);
	char *p = put_u64(b->data + b->len, v);
	b->len = (size_t)(p - b->data);
	*p = '\0';
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

/* The escape of control character or stray byte c in a name (SPEC §3):
 * \t \n \r, else \xHH, written into esc (5 bytes); its length. */
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

size_t xpf_utf8_len(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	if (n == 0)
		return 0;
	if (p[0] < 0x80)
		return 1;
	size_t len;
	uint32_t v, min;
	if ((p[0] & 0xE0) == 0xC0)
		len = 2, v = p[0] & 0x1F, min = 0x80;
	else if ((p[0] & 0xF0) == 0xE0)
		len = 3, v = p[0] & 0x0F, min = 0x800;
	else if ((p[0] & 0xF8) == 0xF0)
		len = 4, v = p[0] & 0x07, min = 0x10000;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return 0;
		v = v << 6 | (p[i] & 0x3F);
	}
	/* overlong forms, UTF-16 surrogates and past U+10FFFF are not UTF-8 */
	return v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF) ? 0 : len;
}

/* s[0..n) with its control characters and the bytes that are not UTF-8
 * escaped (\t \n \r, else \xHH), and backslashes too when tsv (so that
 * a TSV reader can undo it). */
static void add_escaped(xpf_buf *b, const char *s, size_t n, bool tsv)
{
	size_t start = 0;
	for (size_t i = 0; i < n;) {
		unsigned char c = (unsigned char)s[i];
		char esc[5] = "\\\\";
		size_t el = 2, k = 1;
		if (c >= 0x80 && (k = xpf_utf8_len(s + i, n - i)) != 0) {
			i += k;
			continue;
		}
		if (c >= 0x80 || is_control(c))
			el = control_escape(c, esc);
		else if (!tsv || c != '\\') {
			i++;
			continue;
		}
		xpf_buf_add(b, s + start, i - start);
		xpf_buf_add(b, esc, el);
		start = ++i;
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

void xpf_buf_textn(xpf_buf *b, const char *s, size_t n)
{
	if (s)
		add_escaped(b, s, n, false);
}

const char *xpf_text_of(xpf_buf *scratch, const char *s)
{
	xpf_buf_reset(scratch);
	xpf_buf_text(scratch, s);
	xpf_buf_add(scratch, "", 0); /* data is there even for "" */
	return scratch->data;
}

void xpf_buf_json_str(xpf_buf *b, const char *s)
{
	xpf_buf_addc(b, '"');
	const char *p = s ? s : "";
	size_t n = strlen(p);
	for (size_t i = 0; i < n;) {
		unsigned char c = (unsigned char)p[i];
		size_t k = c < 0x80 ? 1 : xpf_utf8_len(p + i, n - i);
		switch (k ? c : 0x80) {
		case '"': xpf_buf_adds(b, "\\\""); break;
		case '\\': xpf_buf_adds(b, "\\\\"); break;
		case '\n': xpf_buf_adds(b, "\\n"); break;
		case '\t': xpf_buf_adds(b, "\\t"); break;
		case '\r': xpf_buf_adds(b, "\\r"); break;
		case 0x80:
			xpf_buf_adds(b, XPF_REPLACEMENT);
			break; /* not UTF-8: JSON cannot hold it */
		default:
			if (c < 0x20)
				xpf_buf_printf(b, "\\u%04x", c);
			else
				xpf_buf_add(b, p + i, k);
		}
		i += k ? k : 1;
	}
	xpf_buf_addc(b, '"');
}

void xpf_buf_utf8(xpf_buf *b, const char *s)
{
	size_t n = s ? strlen(s) : 0, start = 0;
	for (size_t i = 0; i < n;) {
		size_t k = (unsigned char)s[i] < 0x80 ? 1 : xpf_utf8_len(s + i, n - i);
		if (k) {
			i += k;
			continue;
		}
		xpf_buf_add(b, s + start, i - start);
		xpf_buf_adds(b, XPF_REPLACEMENT);
		start = ++i;
	}
	xpf_buf_add(b, s ? s + start : "", n - start);
}

char *xpf_human(uint64_t v, char out[32])
{
	static const char *units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	if (v < 1024) {
		memcpy(put_u64(out, v), " B", 3);
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
	/* "%llu.%0*llu %s" without printf, which costs many times the
	 * digits: a walk writes this for every live block */
	char *p = put_u64(out, q / scale);
	*p++ = '.';
	if (decimals == 2)
		*p++ = (char)('0' + q % scale / 10);
	*p++ = (char)('0' + q % 10);
	*p++ = ' ';
	memcpy(p, units[u], 4);
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
