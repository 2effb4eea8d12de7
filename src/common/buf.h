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
void xpf_buf_addc(xpf_buf *b, char c);
void xpf_buf_printf(xpf_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* v in decimal: what xpf_buf_printf(b, "%lld", v) writes, for the loops
 * that write millions of numbers (a shape's dimensions), where printf's
 * parsing of its format costs many times the digits. */
void xpf_buf_add_i64(xpf_buf *b, int64_t v);
void xpf_buf_reset(xpf_buf *b);
void xpf_buf_release(xpf_buf *b);
/* Hand the bytes to the caller (free() them); b is left empty. */
char *xpf_buf_detach(xpf_buf *b, size_t *len);

/* TSV: one field, with tab, newline, carriage return and backslash escaped
 * as \t \n \r \\ and any other control character as \xHH (SPEC §3, §4).
 * NULL writes nothing (a missing value). */
void xpf_buf_tsv(xpf_buf *b, const char *s);
void xpf_buf_tsvn(xpf_buf *b, const char *s, size_t n);
/* A name from the capture in a line of text: its control characters
 * escaped as in TSV (backslashes kept), so that it stays on its line and
 * sends no terminal escapes (SPEC §3).  NULL writes nothing. */
void xpf_buf_text(xpf_buf *b, const char *s);

/* JSON string literal with quotes (for hand-written JSON). */
void xpf_buf_json_str(xpf_buf *b, const char *s);

/* IEC units (SPEC §4): "512 B", "1.5 KiB", "104.0 MiB", "3.41 GiB". */
char *xpf_human(uint64_t bytes, char out[32]);
/* Percentage with one decimal of part/whole ("81.6"); "0.0" when whole is 0. */
char *xpf_pct(uint64_t part, uint64_t whole, char out[32]);

/* Checked multiplication: 0 on success, -1 on overflow. */
int xpf_mul_u64(uint64_t a, uint64_t b, uint64_t *out);

/* qsort that accepts an empty (NULL, 0) array: qsort(NULL, 0) is undefined. */
static inline void xpf_qsort(void *base, size_t n, size_t size,
			     int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

#endif
