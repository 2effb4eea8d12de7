/* A growable byte buffer, and the formatting helpers every renderer shares
 * (TSV fields, IEC byte counts, percentages).
 *
 * Allocation failure aborts: the tool cannot do anything useful without
 * memory and every caller would otherwise need the same check. */
#ifndef XPF_BUF_H
#define XPF_BUF_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct xpf_buf {
	char *data; /* NUL-terminated after every append; owned */
	size_t len;
	size_t cap;
} xpf_buf;

#define XPF_BUF_INIT       \
	{                  \
		NULL, 0, 0 \
	}

void xpf_buf_reserve(xpf_buf *b, size_t extra);
void xpf_buf_add(xpf_buf *b, const void *p, size_t n);
void xpf_buf_adds(xpf_buf *b, const char *s);
/* One byte; inline, as renderers write a tab or a newline after most
 * fields. */
static inline void xpf_buf_addc(xpf_buf *b, char c)
{
	if (b->len + 2 > b->cap)
		xpf_buf_reserve(b, 1);
	b->data[b->len++] = c;
	b->data[b->len] = '\0';
}
void xpf_buf_printf(xpf_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* v in decimal: what xpf_buf_printf(b, "%lld", v) writes, for the loops
 * that write millions of numbers (a shape's dimensions), where printf's
 * parsing of its format costs many times the digits. */
void xpf_buf_add_i64(xpf_buf *b, int64_t v);
void xpf_buf_add_u64(xpf_buf *b, uint64_t v);
void xpf_buf_reset(xpf_buf *b);
void xpf_buf_release(xpf_buf *b);
/* Hand the bytes to the caller (free() them); b is left empty. */
char *xpf_buf_detach(xpf_buf *b, size_t *len);

/* Names from the capture are bytes: every writer of a report file puts
 * them through one of the functions below, so that a name cannot break a
 * line, send a terminal escape or make a file that is not UTF-8 (SPEC §3).
 * In text and TSV a byte that does not begin a valid UTF-8 character is
 * written as \xHH, as control characters are; JSON, which must be UTF-8,
 * gets U+FFFD for it. */

/* TSV: one field, with tab, newline, carriage return and backslash escaped
 * as \t \n \r \\ and any other control character or stray byte as \xHH
 * (SPEC §3, §4).  NULL writes nothing (a missing value). */
void xpf_buf_tsv(xpf_buf *b, const char *s);
void xpf_buf_tsvn(xpf_buf *b, const char *s, size_t n);
/* A name from the capture in a line of text: its control characters and
 * stray bytes escaped as in TSV (backslashes kept), so that it stays on
 * its line and sends no terminal escapes (SPEC §3).  NULL writes nothing. */
void xpf_buf_text(xpf_buf *b, const char *s);
void xpf_buf_textn(xpf_buf *b, const char *s, size_t n);
/* The same into scratch (emptied first), returned NUL-terminated: for a
 * name among the arguments of xpf_buf_printf (one scratch per name; NULL
 * gives ""). */
const char *xpf_text_of(xpf_buf *scratch, const char *s);

/* JSON string literal with quotes (for hand-written JSON); a stray byte
 * becomes U+FFFD. */
void xpf_buf_json_str(xpf_buf *b, const char *s);
/* s with each stray byte replaced by U+FFFD: valid UTF-8, for a JSON
 * library that refuses anything else (xpf_json_text). */
void xpf_buf_utf8(xpf_buf *b, const char *s);
#define XPF_REPLACEMENT "\xEF\xBF\xBD" /* U+FFFD in UTF-8 */
/* The length of the valid UTF-8 character at s[0..n) (1 to 4), or 0 when
 * s[0] begins none (a stray byte: a continuation byte, an overlong form, a
 * surrogate, past U+10FFFF, cut short by n). */
size_t xpf_utf8_len(const char *s, size_t n);

/* IEC units (SPEC §4): "512 B", "1.5 KiB", "104.0 MiB", "3.41 GiB". */
char *xpf_human(uint64_t bytes, char out[32]);
/* Percentage with one decimal of part/whole ("81.6"); "0.0" when whole is 0. */
char *xpf_pct(uint64_t part, uint64_t whole, char out[32]);

/* Checked multiplication: 0 on success, -1 on overflow. */
int xpf_mul_u64(uint64_t a, uint64_t b, uint64_t *out);

/* Signed figures from byte counts that may pass 2^63 (in use is allocated
 * + reserved, two int64 stats): a - b saturated to the int64 range, never
 * a signed overflow. */
static inline int64_t xpf_diff_u64(uint64_t a, uint64_t b)
{
	if (a >= b)
		return a - b > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)(a - b);
	return b - a > (uint64_t)INT64_MAX ? INT64_MIN : -(int64_t)(b - a);
}
/* a - b of signed figures, saturated. */
static inline int64_t xpf_sub_i64(int64_t a, int64_t b)
{
	int64_t r;
	if (__builtin_sub_overflow(a, b, &r))
		return b < 0 ? INT64_MAX : INT64_MIN;
	return r;
}
/* |v|, INT64_MIN included. */
static inline uint64_t xpf_abs_i64(int64_t v)
{
	return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
}

/* qsort that accepts an empty (NULL, 0) array: qsort(NULL, 0) is undefined. */
static inline void xpf_qsort(void *base, size_t n, size_t size,
			     int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

#endif
