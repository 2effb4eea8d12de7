/* Shapes: text, sizes and comparisons (reference §3.9). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/plan/plan_priv.h"

static const struct {
	const char *name;
	unsigned bits;
} dtypes[] = {
	[0] = { "invalid", 0 },     [1] = { "pred", 8 },        [2] = { "s8", 8 },
	[3] = { "s16", 16 },        [4] = { "s32", 32 },        [5] = { "s64", 64 },
	[6] = { "u8", 8 },          [7] = { "u16", 16 },        [8] = { "u32", 32 },
	[9] = { "u64", 64 },        [10] = { "f16", 16 },       [11] = { "f32", 32 },
	[12] = { "f64", 64 },       [13] = { "tuple", 0 },      [14] = { "opaque", 64 },
	[15] = { "c64", 64 },       [16] = { "bf16", 16 },      [17] = { "token", 0 },
	[18] = { "c128", 128 },     [19] = { "f8e5m2", 8 },     [20] = { "f8e4m3fn", 8 },
	[21] = { "s4", 4 },         [22] = { "u4", 4 },         [23] = { "f8e4m3b11fnuz", 8 },
	[24] = { "f8e5m2fnuz", 8 }, [25] = { "f8e4m3fnuz", 8 }, [26] = { "s2", 2 },
	[27] = { "u2", 2 },         [28] = { "f8e4m3", 8 },     [29] = { "f8e3m4", 8 },
	[30] = { "s1", 1 },         [31] = { "u1", 1 },         [32] = { "f4e2m1fn", 4 },
	[33] = { "f8e8m0fnu", 8 },  [34] = { "buffer", 0 },     [35] = { "f6e3m2fn", 6 },
	[36] = { "f6e2m3fn", 6 },
};
#define NDTYPES (sizeof dtypes / sizeof dtypes[0])

const char *xpf_dtype_name(int t)
{
	if (t < 0 || (size_t)t >= NDTYPES)
		return "?";
	return dtypes[t].name;
}

unsigned xpf_dtype_bits(int t)
{
	if (t < 0 || (size_t)t >= NDTYPES)
		return 0;
	return dtypes[t].bits;
}

static bool is_array(const Xla__ShapeProto *s)
{
	int t = s->element_type;
	return t != XLA__PRIMITIVE_TYPE__TUPLE && t != XLA__PRIMITIVE_TYPE__TOKEN &&
	       t != XLA__PRIMITIVE_TYPE__OPAQUE_TYPE && t != XLA__PRIMITIVE_TYPE__BUFFER &&
	       t != XLA__PRIMITIVE_TYPE__PRIMITIVE_TYPE_INVALID;
}

static void shape_text(const Xla__ShapeProto *s, bool with_layout, xpf_buf *out, int depth)
{
	if (s == NULL) {
		xpf_buf_adds(out, "?");
		return;
	}
	if (s->element_type == XLA__PRIMITIVE_TYPE__TUPLE) {
		xpf_buf_addc(out, '(');
		for (size_t i = 0; i < s->n_tuple_shapes; i++) {
			if (i)
				xpf_buf_adds(out, ", ");
			if (depth > 64)
				xpf_buf_adds(out, "...");
			else
				shape_text(s->tuple_shapes[i], with_layout, out, depth + 1);
		}
		xpf_buf_addc(out, ')');
		return;
	}
	if (s->element_type == XLA__PRIMITIVE_TYPE__BUFFER && s->n_tuple_shapes == 1) {
		xpf_buf_adds(out, "b(");
		shape_text(s->tuple_shapes[0], with_layout, out, depth + 1);
		xpf_buf_addc(out, ')');
		return;
	}
	xpf_buf_adds(out, xpf_dtype_name(s->element_type));
	if (!is_array(s))
		return;
	xpf_buf_addc(out, '[');
	for (size_t i = 0; i < s->n_dimensions; i++) {
		if (i)
			xpf_buf_addc(out, ',');
		if (i < s->n_is_dynamic_dimension && s->is_dynamic_dimension[i])
			xpf_buf_adds(out, "<=");
		xpf_buf_add_i64(out, s->dimensions[i]);
	}
	xpf_buf_addc(out, ']');
	const Xla__LayoutProto *l = s->layout;
	if (!with_layout || l == NULL || s->n_dimensions == 0)
		return;
	xpf_buf_addc(out, '{');
	for (size_t i = 0; i < l->n_minor_to_major; i++) {
		if (i)
			xpf_buf_addc(out, ',');
		xpf_buf_add_i64(out, l->minor_to_major[i]);
	}
	if (l->n_tiles || l->element_size_in_bits || l->memory_space)
		xpf_buf_addc(out, ':');
	for (size_t i = 0; i < l->n_tiles; i++) {
		xpf_buf_adds(out, "T(");
		for (size_t j = 0; j < l->tiles[i]->n_dimensions; j++) {
			if (j)
				xpf_buf_addc(out, ',');
			xpf_buf_add_i64(out, l->tiles[i]->dimensions[j]);
		}
		xpf_buf_addc(out, ')');
	}
	if (l->element_size_in_bits)
		xpf_buf_printf(out, "E(%lld)", (long long)l->element_size_in_bits);
	if (l->memory_space)
		xpf_buf_printf(out, "S(%lld)", (long long)l->memory_space);
	xpf_buf_addc(out, '}');
}

void xpf_shape_text(const Xla__ShapeProto *s, bool with_layout, xpf_buf *out)
{
	shape_text(s, with_layout, out, 0);
}

const Xla__ShapeProto *xpf_shape_at(const Xla__ShapeProto *s, const int64_t *index, size_t n)
{
	for (size_t i = 0; s && i < n; i++) {
		if (index[i] < 0 || (uint64_t)index[i] >= s->n_tuple_shapes)
			return NULL;
		s = s->tuple_shapes[index[i]];
	}
	return s;
}

uint64_t xpf_shape_elements(const Xla__ShapeProto *s)
{
	uint64_t n = 1;
	if (s == NULL || !is_array(s))
		return 0;
	for (size_t i = 0; i < s->n_dimensions; i++) {
		if (s->dimensions[i] < 0 || xpf_mul_u64(n, (uint64_t)s->dimensions[i], &n))
			return UINT64_MAX;
	}
	return n;
}

static uint64_t shape_bytes(const Xla__ShapeProto *s, int depth)
{
	if (s == NULL)
		return 0;
	switch (s->element_type) {
	case XLA__PRIMITIVE_TYPE__TUPLE: return 8 * (uint64_t)s->n_tuple_shapes;
	case XLA__PRIMITIVE_TYPE__TOKEN:
	case XLA__PRIMITIVE_TYPE__PRIMITIVE_TYPE_INVALID: return 0;
	case XLA__PRIMITIVE_TYPE__OPAQUE_TYPE: return 8;
	case XLA__PRIMITIVE_TYPE__BUFFER:
		if (s->n_tuple_shapes != 1 || depth > 64)
			return 0;
		return shape_bytes(s->tuple_shapes[0], depth + 1);
	default: break;
	}
	uint64_t n = xpf_shape_elements(s), bytes;
	if (n == UINT64_MAX)
		return UINT64_MAX;
	if (s->layout && s->layout->element_size_in_bits > 0) {
		uint64_t bits;
		if (xpf_mul_u64(n, (uint64_t)s->layout->element_size_in_bits, &bits))
			return UINT64_MAX;
		return bits / 8 + (bits % 8 != 0);
	}
	unsigned w = (xpf_dtype_bits(s->element_type) + 7) / 8;
	if (xpf_mul_u64(n, w, &bytes))
		return UINT64_MAX;
	return bytes;
}

uint64_t xpf_shape_bytes(const Xla__ShapeProto *s) { return shape_bytes(s, 0); }

bool xpf_shape_same(const Xla__ShapeProto *a, const Xla__ShapeProto *b)
{
	if (a == NULL || b == NULL || a->element_type != b->element_type || !is_array(a) ||
	    a->n_dimensions != b->n_dimensions)
		return false;
	for (size_t i = 0; i < a->n_dimensions; i++)
		if (a->dimensions[i] != b->dimensions[i])
			return false;
	return true;
}

bool xpf_shape_is_array(const Xla__ShapeProto *s) { return s != NULL && is_array(s); }

int xpf_shape_cmp(const Xla__ShapeProto *a, const Xla__ShapeProto *b)
{
	if (a->element_type != b->element_type)
		return a->element_type < b->element_type ? -1 : 1;
	if (a->n_dimensions != b->n_dimensions)
		return a->n_dimensions < b->n_dimensions ? -1 : 1;
	for (size_t i = 0; i < a->n_dimensions; i++)
		if (a->dimensions[i] != b->dimensions[i])
			return a->dimensions[i] < b->dimensions[i] ? -1 : 1;
	return 0;
}

bool xpf_layout_same(const Xla__ShapeProto *a, const Xla__ShapeProto *b)
{
	size_t na = a && a->layout ? a->layout->n_minor_to_major : 0;
	size_t nb = b && b->layout ? b->layout->n_minor_to_major : 0;
	if (na == 0 || nb == 0)
		return true; /* unknown: no evidence of a change */
	if (na != nb)
		return false;
	return memcmp(a->layout->minor_to_major, b->layout->minor_to_major, na * sizeof(int64_t)) ==
	       0;
}

const char *xpf_index_text(xpf_arena *a, const int64_t *index, size_t n)
{
	if (n == 0)
		return "";
	xpf_buf b = XPF_BUF_INIT;
	xpf_buf_addc(&b, '{');
	for (size_t i = 0; i < n; i++) {
		if (i)
			xpf_buf_addc(&b, ',');
		xpf_buf_add_i64(&b, index[i]);
	}
	xpf_buf_addc(&b, '}');
	return xpf_arena_buf(a, &b);
}
