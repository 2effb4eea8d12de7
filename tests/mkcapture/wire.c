#include "wire.h"

#include <stdlib.h>
#include <string.h>

#define SINK_BUF (4u << 20)

size_t w_varint_len(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

void w_varint(xpf_buf *b, uint64_t v)
{
	unsigned char tmp[10];
	size_t n = 0;
	while (v >= 0x80) {
		tmp[n++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	tmp[n++] = (unsigned char)v;
	xpf_buf_add(b, tmp, n);
}

void w_tag(xpf_buf *b, int field, int wt)
{
	w_varint(b, ((uint64_t)field << 3) | (uint64_t)wt);
}

void w_i64(xpf_buf *b, int field, int64_t v)
{
	w_tag(b, field, WT_VARINT);
	w_varint(b, (uint64_t)v);
}

void w_i64z(xpf_buf *b, int field, int64_t v)
{
	if (v != 0)
		w_i64(b, field, v);
}

void w_u64(xpf_buf *b, int field, uint64_t v)
{
	w_tag(b, field, WT_VARINT);
	w_varint(b, v);
}

void w_bool(xpf_buf *b, int field, int v)
{
	if (v)
		w_i64(b, field, 1);
}

void w_dbl(xpf_buf *b, int field, double v)
{
	unsigned char tmp[8];
	uint64_t u;
	memcpy(&u, &v, 8);
	for (int i = 0; i < 8; i++)
		tmp[i] = (unsigned char)(u >> (8 * i));
	w_tag(b, field, WT_I64);
	xpf_buf_add(b, tmp, 8);
}

void w_len_hdr(xpf_buf *b, int field, uint64_t len)
{
	w_tag(b, field, WT_LEN);
	w_varint(b, len);
}

uint64_t w_len_field_size(int field, uint64_t len)
{
	return w_varint_len(((uint64_t)field << 3) | WT_LEN) + w_varint_len(len) + len;
}

void w_bytes(xpf_buf *b, int field, const void *p, size_t n)
{
	w_len_hdr(b, field, n);
	if (n)
		xpf_buf_add(b, p, n);
}

void w_str(xpf_buf *b, int field, const char *s)
{
	w_bytes(b, field, s, strlen(s));
}

void w_strz(xpf_buf *b, int field, const char *s)
{
	if (s && *s)
		w_str(b, field, s);
}

void w_msg(xpf_buf *b, int field, const xpf_buf *child)
{
	w_bytes(b, field, child->data, child->len);
}

void w_packed(xpf_buf *b, int field, const int64_t *v, size_t n)
{
	size_t len = 0;
	if (n == 0)
		return;
	for (size_t i = 0; i < n; i++)
		len += w_varint_len((uint64_t)v[i]);
	w_len_hdr(b, field, len);
	for (size_t i = 0; i < n; i++)
		w_varint(b, (uint64_t)v[i]);
}

static void sink_drain(w_sink *s)
{
	if (s->len && fwrite(s->buf, 1, s->len, s->f) != s->len)
		s->err = 1;
	s->len = 0;
}

unsigned char *sink_reserve(w_sink *s, size_t n)
{
	if (!s->buf) {
		s->cap = n > SINK_BUF ? n : SINK_BUF;
		s->buf = malloc(s->cap);
		if (!s->buf)
			abort();
		s->len = 0;
	}
	if (s->cap - s->len < n) {
		sink_drain(s);
		if (s->cap < n) {
			free(s->buf);
			s->cap = n;
			s->buf = malloc(n);
			if (!s->buf)
				abort();
		}
	}
	return s->buf + s->len;
}

void sink_commit(w_sink *s, unsigned char *end)
{
	size_t k = (size_t)(end - (s->buf + s->len));
	s->len += k;
	s->n += k;
}

void sink_put(w_sink *s, const void *p, size_t n)
{
	if (!s->f) {
		s->n += n;
		return;
	}
	if (n >= SINK_BUF) {
		if (s->buf)
			sink_drain(s);
		s->n += n;
		if (fwrite(p, 1, n, s->f) != n)
			s->err = 1;
		return;
	}
	unsigned char *d = sink_reserve(s, n);
	if (n)
		memcpy(d, p, n);
	sink_commit(s, d + n);
}

int sink_flush(w_sink *s)
{
	if (s->f && s->buf)
		sink_drain(s);
	free(s->buf);
	s->buf = NULL;
	s->cap = s->len = 0;
	return s->err ? -1 : 0;
}

void sink_buf(w_sink *s, const xpf_buf *b)
{
	sink_put(s, b->data, b->len);
}
