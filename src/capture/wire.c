#include "capture/wire.h"

int wire_next(const uint8_t **p, const uint8_t *end, wire_field *f)
{
	if (*p >= end)
		return WIRE_END;
	const uint8_t *q = *p;
	uint64_t tag;
	f->at = q;
	f->num = 0; /* until the tag is read: no field to name */
	int rc;
	if (*q < 0x80) {
		tag = *q++;
	} else {
		rc = wire_varint(&q, end, &tag);
		if (rc != WIRE_OK)
			return rc;
	}
	if ((tag >> 3) == 0 || (tag >> 3) > 0x1fffffff)
		return WIRE_BAD_TAG;
	f->num = (uint32_t)(tag >> 3);
	f->wt = (int)(tag & 7);
	f->data = NULL;
	f->len = 0;
	f->v = 0;
	switch (f->wt) {
	case WT_VARINT:
		rc = wire_varint(&q, end, &f->v);
		if (rc != WIRE_OK)
			return rc;
		break;
	case WT_I64:
		if (end - q < 8)
			return WIRE_PAST_END;
		f->v = wire_le64(q);
		q += 8;
		break;
	case WT_I32:
		if (end - q < 4)
			return WIRE_PAST_END;
		f->v = (uint64_t)q[0] | (uint64_t)q[1] << 8 | (uint64_t)q[2] << 16 |
		       (uint64_t)q[3] << 24;
		q += 4;
		break;
	case WT_LEN: {
		uint64_t len;
		rc = wire_varint(&q, end, &len);
		if (rc != WIRE_OK)
			return rc;
		if (len > (uint64_t)(end - q)) {
			f->len = len > SIZE_MAX ? SIZE_MAX : (size_t)len;
			f->data = q;
			return WIRE_PAST_END;
		}
		f->data = q;
		f->len = (size_t)len;
		q += len;
		break;
	}
	default: return WIRE_BAD_WIRETYPE;
	}
	*p = q;
	return WIRE_OK;
}

const char *wire_strerror(int status)
{
	switch (status) {
	case WIRE_BAD_VARINT: return "truncated or over-long varint";
	case WIRE_PAST_END: return "length past end";
	case WIRE_BAD_WIRETYPE: return "unsupported wire type";
	case WIRE_BAD_TAG: return "invalid field number (0, or above 2^29 - 1)";
	}
	return "wire error";
}

bool wire_utf8(const uint8_t *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		uint8_t c = s[i];
		if (c < 0x80) {
			i++;
			continue;
		}
		size_t k;
		uint32_t cp;
		if ((c & 0xe0) == 0xc0) {
			k = 1;
			cp = c & 0x1f;
		} else if ((c & 0xf0) == 0xe0) {
			k = 2;
			cp = c & 0x0f;
		} else if ((c & 0xf8) == 0xf0) {
			k = 3;
			cp = c & 0x07;
		} else {
			return false;
		}
		if (n - i <= k)
			return false;
		for (size_t j = 1; j <= k; j++) {
			if ((s[i + j] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (s[i + j] & 0x3f);
		}
		if ((k == 1 && cp < 0x80) || (k == 2 && cp < 0x800) || (k == 3 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += k + 1;
	}
	return true;
}
