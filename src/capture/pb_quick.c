/* The quick reader of protobuf-c messages (pb_quick.h).  Where it answers,
 * it answers as protobuf-c 1.4's protobuf_c_message_unpack: the last of a
 * singular field's values, a repeated scalar's packed and unpacked values
 * in their order, an int32 or enum as the low 32 bits of its varint, a bool
 * true for any non-zero varint, a string copied and NUL-terminated, bytes
 * copied (NULL when empty). */
#include "capture/pb_quick.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "capture/wire.h"

/* ---- blocks ------------------------------------------------------------- */

/* Blocks double from 4 KiB to 1 MiB: most messages are small (and the
 * check, run hundreds of thousands of times by the fuzz target, unpacks
 * small inputs), a module's computations are not. */
enum { BLOCK_FIRST = 1 << 12, BLOCK_MAX = 1 << 20 };

struct xpf_pb_blocks {
	struct xpf_pb_blocks *next;
	size_t used, size;
	_Alignas(max_align_t) unsigned char data[];
};

static void *blocks_alloc(void *ctx, size_t n)
{
	xpf_pb_blocks **blocks = ctx, *b = *blocks;
	n = (n + _Alignof(max_align_t) - 1) & ~(_Alignof(max_align_t) - 1);
	if (b == NULL || b->size - b->used < n) {
		size_t size = b == NULL           ? BLOCK_FIRST :
			      b->size < BLOCK_MAX ? 2 * b->size :
						    BLOCK_MAX;
		if (size < n)
			size = n;
		b = malloc(sizeof *b + size);
		if (b == NULL)
			return NULL;
		*b = (xpf_pb_blocks){ *blocks, 0, size };
		*blocks = b;
	}
	void *p = b->data + b->used;
	b->used += n;
	return p;
}

static void blocks_keep(void *ctx, void *p)
{
	(void)ctx;
	(void)p;
}

ProtobufCAllocator xpf_pb_blocks_allocator(xpf_pb_blocks **blocks)
{
	return (ProtobufCAllocator){ blocks_alloc, blocks_keep, blocks };
}

static void *budget_alloc(void *ctx, size_t n)
{
	xpf_pb_budget *b = ctx;
	if (n > b->left) {
		b->over = true;
		return NULL;
	}
	b->left -= n;
	return blocks_alloc(b->blocks, n);
}

ProtobufCAllocator xpf_pb_budget_allocator(xpf_pb_budget *b)
{
	return (ProtobufCAllocator){ budget_alloc, blocks_keep, b };
}

void xpf_pb_blocks_free(xpf_pb_blocks **blocks)
{
	while (*blocks) {
		xpf_pb_blocks *next = (*blocks)->next;
		free(*blocks);
		*blocks = next;
	}
}

/* ---- the quick reader ---------------------------------------------------- */

enum {
	QUICK_FIELDS = 64, /* fields of a message's descriptor, at most */
	QUICK_NUMS = 128,  /* field numbers found by table (others: protobuf-c's search) */
	QUICK_DESCS = 64,  /* message types prepared, at most */
	QUICK_DEPTH = 64,  /* messages inside messages: below the check's shape limit */
};

/* A message type prepared for the quick reader, once: each field's place
 * by number, its element size, and the types of its messages. */
typedef struct qfield {
	const ProtobufCFieldDescriptor *f;
	const struct qdesc *sub; /* a message field's type */
	size_t size;             /* an element's size; 0: a type left to protobuf-c */
	bool packable, repeated;
} qfield;

typedef struct qdesc {
	const ProtobufCMessageDescriptor *d;
	uint8_t place[QUICK_NUMS]; /* 1 + the field's place in d, 0: unknown */
	qfield fields[QUICK_FIELDS];
	uint8_t rep[QUICK_FIELDS]; /* the places of the repeated fields */
	unsigned nrep;
} qdesc;

static struct {
	pthread_mutex_t lock;
	qdesc descs[QUICK_DESCS];
	size_t n;
} prepared = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* The size of one element of a field of type t; 0 for a type the HloProto
 * does not use (left to protobuf-c). */
static size_t elt_size(ProtobufCType t)
{
	switch (t) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_ENUM: return sizeof(int32_t);
	case PROTOBUF_C_TYPE_INT64: return sizeof(int64_t);
	case PROTOBUF_C_TYPE_BOOL: return sizeof(protobuf_c_boolean);
	case PROTOBUF_C_TYPE_STRING: return sizeof(char *);
	case PROTOBUF_C_TYPE_BYTES: return sizeof(ProtobufCBinaryData);
	case PROTOBUF_C_TYPE_MESSAGE: return sizeof(ProtobufCMessage *);
	default: return 0;
	}
}

/* d prepared, with every message type under it (prepared.lock held);
 * NULL when there are too many types or fields. */
static const qdesc *prepare(const ProtobufCMessageDescriptor *d)
{
	for (size_t i = 0; i < prepared.n; i++)
		if (prepared.descs[i].d == d)
			return &prepared.descs[i];
	if (prepared.n == QUICK_DESCS || d->n_fields > QUICK_FIELDS)
		return NULL;
	qdesc *q = &prepared.descs[prepared.n++];
	memset(q, 0, sizeof *q);
	q->d = d;
	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		qfield *x = &q->fields[i];
		x->f = f;
		x->size = (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) ||
					  (f->label != PROTOBUF_C_LABEL_NONE &&
					   f->label != PROTOBUF_C_LABEL_REPEATED) ?
				  0 :
				  elt_size(f->type);
		x->packable = f->type != PROTOBUF_C_TYPE_STRING &&
			      f->type != PROTOBUF_C_TYPE_BYTES && f->type != PROTOBUF_C_TYPE_MESSAGE;
		x->repeated = f->label == PROTOBUF_C_LABEL_REPEATED;
		if (x->repeated)
			q->rep[q->nrep++] = (uint8_t)i;
		if (f->id < QUICK_NUMS)
			q->place[f->id] = (uint8_t)(i + 1);
	}
	for (unsigned i = 0; i < d->n_fields; i++)
		if (q->fields[i].size && d->fields[i].type == PROTOBUF_C_TYPE_MESSAGE &&
		    (q->fields[i].sub = prepare(d->fields[i].descriptor)) == NULL)
			q->fields[i].size = 0;
	return q;
}

static const qdesc *prepared_of(const ProtobufCMessageDescriptor *d)
{
	pthread_mutex_lock(&prepared.lock);
	const qdesc *q = prepare(d);
	pthread_mutex_unlock(&prepared.lock);
	return q;
}

/* A field's tag at *p, of at most four bytes (protobuf-c reads five, and
 * drops the high bits of a fifth: those tags are left to it). */
static inline bool quick_tag(const uint8_t **p, const uint8_t *e, uint32_t *num, unsigned *wt)
{
	const uint8_t *q = *p;
	uint32_t t = 0;
	for (ptrdiff_t i = 0; i < 4 && i < e - q; i++) {
		t |= (uint32_t)(q[i] & 0x7f) << (7 * i);
		if (q[i] < 0x80) {
			*num = t >> 3;
			*wt = t & 7;
			*p = q + i + 1;
			return *num != 0;
		}
	}
	return false;
}

/* A field's value at *p, of wire type wt: a varint into *v, or a payload
 * [*data, *data + *len).  false: not one protobuf-c reads alike (a group, a
 * varint whose tenth byte is over 1, a length of over five bytes or over
 * INT_MAX) or past e. */
static inline bool quick_value(const uint8_t **p, const uint8_t *e, unsigned wt, uint64_t *v,
			       const uint8_t **data, size_t *len)
{
	const uint8_t *q = *p;
	uint64_t n;
	switch (wt) {
	case WT_VARINT: return wire_varint(p, e, v) == WIRE_OK;
	case WT_I64:
	case WT_I32:
		n = wt == WT_I64 ? 8 : 4;
		if ((uint64_t)(e - q) < n)
			return false;
		*p = q + n;
		return true;
	case WT_LEN:
		if (wire_varint(&q, e, &n) != WIRE_OK || q - *p > 5 || n > INT_MAX ||
		    n > (uint64_t)(e - q))
			return false;
		*data = q;
		*len = (size_t)n;
		*p = q + n;
		return true;
	default: return false;
	}
}

/* The next field at *p: its tag and value, and its entry in q (NULL: a
 * field q does not know). */
static inline bool quick_next(const qdesc *q, const uint8_t **p, const uint8_t *e, const qfield **x,
			      unsigned *wt, uint64_t *v, const uint8_t **data, size_t *len)
{
	uint32_t num;
	if (!quick_tag(p, e, &num, wt) || !quick_value(p, e, *wt, v, data, len))
		return false;
	if (num < QUICK_NUMS) {
		*x = q->place[num] ? &q->fields[q->place[num] - 1] : NULL;
	} else {
		const ProtobufCFieldDescriptor *f =
			protobuf_c_message_descriptor_get_field(q->d, num);
		*x = f ? &q->fields[f - q->d->fields] : NULL;
	}
	return true;
}

/* A scalar of type t (a varint's value v) stored at `at`. */
static inline void put_scalar(ProtobufCType t, uint64_t v, void *at)
{
	if (t == PROTOBUF_C_TYPE_INT64)
		*(int64_t *)at = (int64_t)v;
	else if (t == PROTOBUF_C_TYPE_BOOL)
		*(protobuf_c_boolean *)at = v != 0;
	else
		*(int32_t *)at = (int32_t)(uint32_t)v;
}

static void *quick_alloc(ProtobufCAllocator *a, size_t n)
{
	return a->alloc(a->allocator_data, n ? n : 1);
}

static ProtobufCMessage *quick_message(const qdesc *q, ProtobufCAllocator *a, const uint8_t *p,
				       const uint8_t *e, int depth);

/* A string, bytes or a message (payload [data, data + len)) stored at `at`. */
static bool put_len(const qfield *x, ProtobufCAllocator *a, const uint8_t *data, size_t len,
		    void *at, int depth)
{
	if (x->f->type == PROTOBUF_C_TYPE_STRING) {
		char *s = quick_alloc(a, len + 1);
		if (s == NULL)
			return false;
		memcpy(s, data, len);
		s[len] = '\0';
		*(char **)at = s;
	} else if (x->f->type == PROTOBUF_C_TYPE_BYTES) {
		ProtobufCBinaryData *b = at;
		b->len = len;
		b->data = NULL;
		if (len && (b->data = quick_alloc(a, len)) == NULL)
			return false;
		if (len)
			memcpy(b->data, data, len);
	} else {
		ProtobufCMessage *m = quick_message(x->sub, a, data, data + len, depth + 1);
		if (m == NULL)
			return false;
		*(ProtobufCMessage **)at = m;
	}
	return true;
}

/* A repeated field's value (wire type wt) appended to its array of room
 * `room`: each varint of a packed payload, or one value. */
static bool put_repeated(const qfield *x, ProtobufCAllocator *a, ProtobufCMessage *m, unsigned wt,
			 uint64_t v, const uint8_t *data, size_t len, size_t room, int depth)
{
	const ProtobufCFieldDescriptor *f = x->f;
	size_t *n = (size_t *)((char *)m + f->quantifier_offset);
	char *arr = *(char **)((char *)m + f->offset);
	if (x->packable && wt == WT_LEN) {
		const uint8_t *q = data, *qe = data + len;
		while (q < qe) {
			if (*n == room || wire_varint(&q, qe, &v) != WIRE_OK)
				return false;
			put_scalar(f->type, v, arr + (*n)++ * x->size);
		}
		return true;
	}
	if (*n == room || wt != (x->packable ? WT_VARINT : WT_LEN))
		return false;
	if (x->packable) {
		put_scalar(f->type, v, arr + (*n)++ * x->size);
		return true;
	}
	return put_len(x, a, data, len, arr + (*n)++ * x->size, depth);
}

/* A singular field's value (wire type wt), the last one given winning; a
 * message given twice (which protobuf-c merges) is left to protobuf-c. */
static bool put_single(const qfield *x, ProtobufCAllocator *a, ProtobufCMessage *m, unsigned wt,
		       uint64_t v, const uint8_t *data, size_t len, int depth)
{
	void *at = (char *)m + x->f->offset;
	if (x->packable) {
		if (wt != WT_VARINT)
			return false;
		put_scalar(x->f->type, v, at);
		return true;
	}
	if (wt != WT_LEN || (x->f->type == PROTOBUF_C_TYPE_MESSAGE && *(void **)at != NULL))
		return false;
	return put_len(x, a, data, len, at, depth);
}

/* The number of varints in a packed payload, its last one ended. */
static bool count_varints(const uint8_t *data, size_t len, size_t *n)
{
	size_t k = 0;
	for (size_t i = 0; i < len; i++)
		k += data[i] < 0x80;
	*n = k;
	return len == 0 || data[len - 1] < 0x80;
}

/* The first pass: each repeated field's count into count[] (by place in
 * the descriptor), and its array made for it. */
static bool count_repeated(const qdesc *q, ProtobufCAllocator *a, ProtobufCMessage *m,
			   const uint8_t *p, const uint8_t *e, size_t *count)
{
	const qfield *x;
	unsigned wt;
	uint64_t v;
	const uint8_t *data = NULL;
	size_t len = 0, k;
	for (unsigned i = 0; i < q->nrep; i++)
		count[q->rep[i]] = 0;
	while (p < e) {
		if (!quick_next(q, &p, e, &x, &wt, &v, &data, &len))
			return false;
		if (x == NULL || !x->repeated)
			continue;
		if (x->packable && wt == WT_LEN) {
			if (!count_varints(data, len, &k))
				return false;
			count[x - q->fields] += k;
		} else {
			count[x - q->fields]++;
		}
	}
	for (unsigned i = 0; i < q->nrep; i++) {
		const qfield *r = &q->fields[q->rep[i]];
		size_t c = count[q->rep[i]];
		if (c == 0)
			continue;
		if (r->size == 0 || c > SIZE_MAX / r->size)
			return false;
		void *arr = quick_alloc(a, c * r->size);
		if (arr == NULL)
			return false;
		*(void **)((char *)m + r->f->offset) = arr;
	}
	return true;
}

static ProtobufCMessage *quick_message(const qdesc *q, ProtobufCAllocator *a, const uint8_t *p,
				       const uint8_t *e, int depth)
{
	size_t count[QUICK_FIELDS];
	if (depth > QUICK_DEPTH)
		return NULL;
	ProtobufCMessage *m = quick_alloc(a, q->d->sizeof_message);
	if (m == NULL)
		return NULL;
	protobuf_c_message_init(q->d, m);
	if (q->nrep && !count_repeated(q, a, m, p, e, count))
		return NULL;
	const qfield *x;
	unsigned wt;
	uint64_t v = 0;
	const uint8_t *data = NULL;
	size_t len = 0;
	while (p < e) {
		if (!quick_next(q, &p, e, &x, &wt, &v, &data, &len))
			return NULL;
		if (x == NULL)
			continue; /* protobuf-c keeps it; nothing reads it */
		if (x->size == 0)
			return NULL;
		bool ok = x->repeated ? put_repeated(x, a, m, wt, v, data, len,
						     count[x - q->fields], depth) :
					put_single(x, a, m, wt, v, data, len, depth);
		if (!ok)
			return NULL;
	}
	return m;
}

ProtobufCMessage *xpf_pb_quick(const ProtobufCMessageDescriptor *d, ProtobufCAllocator *a,
			       const uint8_t *p, size_t n)
{
	const qdesc *q = prepared_of(d);
	if (n == 0)
		p = (const uint8_t *)""; /* (p + 0 on NULL) */
	return q ? quick_message(q, a, p, p + n, 0) : NULL;
}

/* ---- the check ---------------------------------------------------------- */

static bool same_value(const ProtobufCFieldDescriptor *f, const void *x, const void *y)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_STRING: return strcmp(*(char *const *)x, *(char *const *)y) == 0;
	case PROTOBUF_C_TYPE_BYTES: {
		const ProtobufCBinaryData *a = x, *b = y;
		return a->len == b->len && (a->len == 0 || memcmp(a->data, b->data, a->len) == 0);
	}
	case PROTOBUF_C_TYPE_MESSAGE: {
		const ProtobufCMessage *a = *(ProtobufCMessage *const *)x,
				       *b = *(ProtobufCMessage *const *)y;
		return (a == NULL) == (b == NULL) && (a == NULL || xpf_pb_same(a, b));
	}
	default: {
		size_t size = elt_size(f->type);
		return size && memcmp(x, y, size) == 0;
	}
	}
}

bool xpf_pb_same(const ProtobufCMessage *x, const ProtobufCMessage *y)
{
	const ProtobufCMessageDescriptor *d = x->descriptor;
	if (y->descriptor != d)
		return false;
	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const char *a = (const char *)x + f->offset, *b = (const char *)y + f->offset;
		if (f->label != PROTOBUF_C_LABEL_REPEATED) {
			if (!same_value(f, a, b))
				return false;
			continue;
		}
		size_t n = *(const size_t *)((const char *)x + f->quantifier_offset),
		       size = elt_size(f->type);
		if (n != *(const size_t *)((const char *)y + f->quantifier_offset))
			return false;
		for (size_t k = 0; k < n; k++)
			if (!same_value(f, *(char *const *)a + k * size, *(char *const *)b + k * size))
				return false;
	}
	return true;
}

int xpf_pb_quick_check(const ProtobufCMessageDescriptor *d, const uint8_t *p, size_t n)
{
	xpf_pb_blocks *blocks = NULL;
	ProtobufCAllocator a = xpf_pb_blocks_allocator(&blocks);
	ProtobufCMessage *q = xpf_pb_quick(d, &a, p, n);
	int rc = 0;
	if (q) {
		ProtobufCMessage *r = protobuf_c_message_unpack(d, NULL, n, p);
		rc = r && xpf_pb_same(q, r) ? 1 : -1;
		if (r)
			protobuf_c_message_free_unpacked(r, NULL);
	}
	xpf_pb_blocks_free(&blocks);
	return rc;
}
