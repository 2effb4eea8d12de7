/* Protobuf wire format, read straight from memory.  Every read is bounded by
 * the end pointer; nothing trusts a length or a count. */
#ifndef XPF_WIRE_H
#define XPF_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_SGROUP = 3, WT_EGROUP = 4, WT_I32 = 5 };

typedef struct wire_field {
	uint32_t num; /* 0 when the tag itself could not be read */
	int wt;
	uint64_t v;          /* VARINT, I64, I32 */
	const uint8_t *data; /* LEN */
	size_t len;          /* LEN */
	const uint8_t *at;   /* where the tag starts */
} wire_field;

enum wire_status {
	WIRE_OK = 1,
	WIRE_END = 0,
	WIRE_BAD_VARINT = -1,   /* truncated or over-long varint */
	WIRE_PAST_END = -2,     /* a length runs past the end */
	WIRE_BAD_WIRETYPE = -3, /* groups or wire types 6/7 */
	WIRE_BAD_TAG = -4,      /* field number 0 */
};

/* A varint at *p (at most 10 bytes, the tenth 0 or 1, not past end): its
 * value in *out and *p moved past it, or WIRE_BAD_VARINT.  Inline: the
 * scans read hundreds of millions. */
static inline int wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
	const uint8_t *q = *p;
	if (q < end && *q < 0x80) { /* tags, ids, small lengths */
		*out = *q;
		*p = q + 1;
		return WIRE_OK;
	}
	size_t left = q < end ? (size_t)(end - q) : 0, lim = left < 10 ? left : 10;
	uint64_t x = 0;
	for (size_t i = 0; i < lim; i++) {
		uint8_t b = q[i];
		x |= (uint64_t)(b & 0x7f) << (7 * i);
		if (b < 0x80) {
			if (i == 9 && b > 1)
				break;
			*out = x;
			*p = q + i + 1;
			return WIRE_OK;
		}
	}
	return WIRE_BAD_VARINT;
}
/* The 8 bytes at q as a little-endian value (fixed64, double). */
static inline uint64_t wire_le64(const uint8_t *q)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | q[i];
	return v;
}

/* Read the next field at *p; advance *p past it. */
int wire_next(const uint8_t **p, const uint8_t *end, wire_field *f);
const char *wire_strerror(int status);
/* Valid UTF-8 (no overlongs, no surrogates). */
bool wire_utf8(const uint8_t *s, size_t n);

#endif
