/* Protobuf wire-format writing for the scenario capture builder.
 *
 * Small messages (an HloProto, a metadata entry, one event) are encoded into
 * an xpf_buf and nested with w_msg().  Big messages (a plane with millions of
 * events) are never held in memory: they are produced twice by a
 * deterministic generator, first into a counting sink to learn the length
 * prefix, then into a writing sink (see xspace.h). */
#ifndef MK_WIRE_H
#define MK_WIRE_H

#include <stdint.h>
#include <stdio.h>

#include "common/buf.h"

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2 };

size_t w_varint_len(uint64_t v);
void w_varint(xpf_buf *b, uint64_t v);
void w_tag(xpf_buf *b, int field, int wt);
/* Scalar fields; the *z variants skip zero values as proto3 writers do. */
void w_i64(xpf_buf *b, int field, int64_t v);
void w_i64z(xpf_buf *b, int field, int64_t v);
void w_u64(xpf_buf *b, int field, uint64_t v);
void w_bool(xpf_buf *b, int field, int v);
void w_dbl(xpf_buf *b, int field, double v);
void w_str(xpf_buf *b, int field, const char *s);
void w_strz(xpf_buf *b, int field, const char *s); /* skips NULL and "" */
void w_bytes(xpf_buf *b, int field, const void *p, size_t n);
void w_msg(xpf_buf *b, int field, const xpf_buf *child);
void w_packed(xpf_buf *b, int field, const int64_t *v, size_t n);
/* Header of a length-delimited field whose body is written separately. */
void w_len_hdr(xpf_buf *b, int field, uint64_t len);
uint64_t w_len_field_size(int field, uint64_t len);

/* Output sink: counts bytes, or counts and writes them to f through its
 * own buffer (allocated on first use; sink_flush() writes it out and frees
 * it, so call it before closing f). */
typedef struct w_sink {
	FILE *f; /* NULL: count only */
	uint64_t n;
	int err;
	unsigned char *buf;
	size_t len, cap;
} w_sink;

void sink_put(w_sink *s, const void *p, size_t n);
void sink_buf(w_sink *s, const xpf_buf *b);
/* Room for at least n bytes at the end of the buffer (writing sinks only);
 * sink_commit() then accounts for the bytes actually written there. */
unsigned char *sink_reserve(w_sink *s, size_t n);
void sink_commit(w_sink *s, unsigned char *end);
/* Write out what is buffered; returns -1 when any write failed. */
int sink_flush(w_sink *s);

/* A varint at p; returns the end. */
static inline unsigned char *w_pvarint(unsigned char *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	*p++ = (unsigned char)v;
	return p;
}

static inline size_t w_vlen(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

#endif
