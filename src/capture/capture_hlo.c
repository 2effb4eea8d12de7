/* HloProtos: read by the quick reader (pb_quick.h), or by protobuf-c where
 * it does not vouch for one, after a check of their nesting on the wire
 * (protobuf-c has no depth limit); bare HloProto files. */
#include "capture/capture_priv.h"
#include "capture/pb_quick.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "common/intern.h"

#define MAX_SHAPE_DEPTH 64

/* ---- HloProto --------------------------------------------------------- */

enum msg_kind { M_HLO, M_MODULE, M_COMP, M_INSTR, M_PSHAPE, M_SHAPE, M_OTHER };

static enum msg_kind child_kind(enum msg_kind k, uint32_t num)
{
	switch (k) {
	case M_HLO: return num == 1 ? M_MODULE : M_OTHER;
	case M_MODULE: return num == 3 ? M_COMP : num == 4 ? M_PSHAPE : M_OTHER;
	case M_COMP: return num == 2 ? M_INSTR : num == 4 ? M_PSHAPE : M_OTHER;
	case M_INSTR: return num == 3 ? M_SHAPE : M_OTHER;
	case M_PSHAPE: return num == 1 || num == 2 ? M_SHAPE : M_OTHER;
	case M_SHAPE: return num == 4 ? M_SHAPE : M_OTHER;
	default: return M_OTHER;
	}
}

/* Walk the messages that can nest shapes and bound the depth (protobuf-c
 * recurses without limit; ShapeProto.tuple_shapes is recursive). */
static int hlo_depth_check(const xpf_capture *c, const char *what, const uint8_t *p,
			   const uint8_t *e, enum msg_kind k, int depth, xpf_error *err)
{
	wire_field f;
	int rc;
	if (depth > MAX_SHAPE_DEPTH)
		return xpf_fail(err, XPF_EMALFORMED,
				"%s: malformed capture: %s: shapes nested deeper than %d levels (byte %llu)",
				c->label, what, MAX_SHAPE_DEPTH, (unsigned long long)off_of(c, p));
	for (;;) {
		const uint8_t *at = p;
		rc = wire_next(&p, e, &f);
		if (rc == WIRE_END)
			return XPF_OK;
		if (rc != WIRE_OK)
			return wire_fail(err, c, what, rc, &f, at);
		if (f.wt != WT_LEN)
			continue;
		enum msg_kind ck = child_kind(k, f.num);
		if (ck == M_OTHER)
			continue;
		rc = hlo_depth_check(c, what, f.data, f.data + f.len, ck,
				     depth + (ck == M_SHAPE && k == M_SHAPE), err);
		if (rc != XPF_OK)
			return rc;
	}
}

/* A module's HloProto in parts: the HloProto less the computations (the
 * head), and each computation unpacked when asked, so that a module of
 * hundreds of thousands of instructions is never whole in memory.  Or, for
 * tests, a whole HloProto already in memory (c NULL). */
struct xpf_hlo {
	const xpf_capture *c;
	const uint8_t *at; /* the HloProto's bytes, for messages */
	size_t len;
	bool checked; /* its nesting (hlo_depth_check) */
	char what[600];
	const Xla__HloProto *head;
	xpf_pb_blocks *head_blocks;
	size_t ncomps;
	const uint8_t **comp_at; /* each computation's bytes */
	size_t *comp_len;
	Xla__HloComputationProto **comp; /* unpacked ones, NULL until asked */
	xpf_pb_blocks **comp_blocks;
};

static void put_varint(xpf_buf *b, uint64_t v)
{
	while (v >= 0x80) {
		xpf_buf_addc(b, (char)((v & 0x7f) | 0x80));
		v >>= 7;
	}
	xpf_buf_addc(b, (char)v);
}

static void add_comp(xpf_hlo *h, const uint8_t *p, size_t n)
{
	size_t cap = h->ncomps;
	if ((cap & (cap - 1)) == 0) { /* 0 or a power of two: grow */
		cap = cap ? 2 * cap : 16;
		h->comp_at = xpf_realloc_array(h->comp_at, cap, sizeof *h->comp_at);
		h->comp_len = xpf_realloc_array(h->comp_len, cap, sizeof *h->comp_len);
	}
	h->comp_at[h->ncomps] = p;
	h->comp_len[h->ncomps++] = n;
}

/* The bytes of the HloProto at [p, e) less the computations of its
 * hlo_module (HloModuleProto field 3), whose places go to h.  Everything
 * else is copied as it is, so that protobuf-c reads the head exactly as it
 * would read it inside the whole (a field of the wrong wire type fails
 * alike).  false: the framing of those two levels is broken (as
 * hlo_depth_check, which walks them alike, says). */
static bool split_hlo(xpf_hlo *h, const uint8_t *p, const uint8_t *e, xpf_buf *head)
{
	xpf_buf mod = XPF_BUF_INIT;
	wire_field f;
	int rc, rc2 = WIRE_END;
	while ((rc = wire_next(&p, e, &f)) == WIRE_OK) {
		if (f.num != 1 || f.wt != WT_LEN) {
			xpf_buf_add(head, f.at, (size_t)(p - f.at));
			continue;
		}
		const uint8_t *q = f.data, *qe = f.data + f.len;
		wire_field g;
		xpf_buf_reset(&mod);
		while ((rc2 = wire_next(&q, qe, &g)) == WIRE_OK) {
			if (g.num == 3 && g.wt == WT_LEN)
				add_comp(h, g.data, g.len);
			else
				xpf_buf_add(&mod, g.at, (size_t)(q - g.at));
		}
		if (rc2 != WIRE_END)
			break;
		put_varint(head, (1 << 3) | WT_LEN);
		put_varint(head, mod.len);
		if (mod.len)
			xpf_buf_add(head, mod.data, mod.len);
	}
	xpf_buf_release(&mod);
	return rc == WIRE_END && rc2 == WIRE_END;
}

static int hlo_fail(const xpf_hlo *h, xpf_error *err)
{
	return xpf_fail(err, XPF_EMALFORMED,
			"%s: malformed capture: %s: HloProto does not decode (byte %llu)",
			h->c->label, h->what, (unsigned long long)off_of(h->c, h->at));
}

/* The whole HloProto's nesting checked, once, before protobuf-c reads any of
 * it (it recurses without limit).  The quick reader needs no check: it
 * stops at a depth below the check's limit. */
static int hlo_checked(xpf_hlo *h, xpf_error *err)
{
	if (h->checked)
		return XPF_OK;
	int rc = hlo_depth_check(h->c, h->what, h->at, h->at + h->len, M_HLO, 0, err);
	h->checked = rc == XPF_OK;
	return rc;
}

/* What one part of an HloProto (its head, or a computation) of n bytes
 * may take unpacked: UNPACK_TIMES times its bytes, and UNPACK_ROOM more
 * for a small one (a computation of a few instructions takes a few KiB
 * of structs).  The real HloProtos we have take at most 8.8 times their
 * bytes for a part of over a KiB (8 times plus 1.8 KiB for any part); a
 * part of empty messages (instructions of 2 bytes on the wire, each a
 * 176-byte struct) would take ~90 times, and the plan ~130 bytes more an
 * instruction: such a part is refused. */
enum { UNPACK_TIMES = 16, UNPACK_ROOM = 64 << 10 };

static int budget_fail(const xpf_hlo *h, const ProtobufCMessageDescriptor *d, const uint8_t *p,
		       size_t n, xpf_error *err)
{
	return xpf_fail(err, XPF_EMALFORMED,
			"%s: malformed capture: %s: %s of %zu bytes would take more than %d times its size in memory (parts of no bytes, such as empty instructions): refused (byte %llu)",
			h->c->label, h->what,
			d == &xla__hlo_computation_proto__descriptor ?
				"a computation" :
				"its HloProto less the computations",
			n, UNPACK_TIMES,
			(unsigned long long)off_of(h->c, d == &xla__hlo_computation_proto__descriptor ?
								 p :
								 h->at));
}

/* The message of descriptor d in [p, p + n) into *out, its parts in
 * *blocks, within its budget: read by the quick reader, or where it does
 * not vouch for it (pb_quick.h) by protobuf-c, after the check.  On an
 * error *blocks are freed. */
static int unpack(xpf_hlo *h, const ProtobufCMessageDescriptor *d, xpf_pb_blocks **blocks,
		  const uint8_t *p, size_t n, ProtobufCMessage **out, xpf_error *err)
{
	size_t limit = n > (SIZE_MAX - UNPACK_ROOM) / UNPACK_TIMES ? SIZE_MAX :
								     n * UNPACK_TIMES + UNPACK_ROOM;
	xpf_pb_budget b = { blocks, limit, false };
	ProtobufCAllocator a = xpf_pb_budget_allocator(&b);
	if ((*out = xpf_pb_quick(d, &a, p, n)) != NULL)
		return XPF_OK;
	xpf_pb_blocks_free(blocks);
	if (b.over && h->c)
		return budget_fail(h, d, p, n, err);
	int rc = hlo_checked(h, err);
	if (rc != XPF_OK)
		return rc;
	b = (xpf_pb_budget){ blocks, limit, false };
	if ((*out = protobuf_c_message_unpack(d, &a, n, p)) != NULL)
		return XPF_OK;
	xpf_pb_blocks_free(blocks);
	if (b.over && h->c)
		return budget_fail(h, d, p, n, err);
	return hlo_fail(h, err);
}

void xpf_hlo_free(xpf_hlo *h)
{
	if (h == NULL)
		return;
	if (h->c) {
		xpf_pb_blocks_free(&h->head_blocks);
		for (size_t k = 0; k < h->ncomps; k++)
			xpf_pb_blocks_free(&h->comp_blocks[k]);
	}
	free(h->comp_at);
	free(h->comp_len);
	free(h->comp);
	free(h->comp_blocks);
	free(h);
}

static int open_hlo(const xpf_capture *c, const char *what, const uint8_t *p, size_t n,
		    xpf_hlo **out, xpf_error *err)
{
	xpf_hlo *h = xpf_calloc(1, sizeof *h);
	h->c = c;
	h->at = p;
	h->len = n;
	snprintf(h->what, sizeof h->what, "%s", what);
	xpf_buf head = XPF_BUF_INIT;
	int rc = XPF_OK;
	if (!split_hlo(h, p, p + n, &head) && (rc = hlo_checked(h, err)) == XPF_OK)
		rc = hlo_fail(h, err); /* (the check walks what split_hlo walks) */
	h->comp = xpf_calloc(h->ncomps ? h->ncomps : 1, sizeof *h->comp);
	h->comp_blocks = xpf_calloc(h->ncomps ? h->ncomps : 1, sizeof *h->comp_blocks);
	ProtobufCMessage *m = NULL;
	if (rc == XPF_OK)
		rc = unpack(h, &xla__hlo_proto__descriptor, &h->head_blocks,
			    (const uint8_t *)head.data, head.len, &m, err);
	xpf_buf_release(&head);
	if (rc != XPF_OK) {
		xpf_hlo_free(h);
		return rc;
	}
	h->head = (const Xla__HloProto *)m;
	*out = h;
	return XPF_OK;
}

xpf_hlo *xpf_hlo_of(const Xla__HloProto *whole)
{
	xpf_hlo *h = xpf_calloc(1, sizeof *h);
	h->head = whole;
	h->ncomps = whole->hlo_module ? whole->hlo_module->n_computations : 0;
	h->comp = xpf_calloc(h->ncomps ? h->ncomps : 1, sizeof *h->comp);
	for (size_t k = 0; k < h->ncomps; k++)
		h->comp[k] = whole->hlo_module->computations[k];
	return h;
}

const Xla__HloProto *xpf_hlo_head(const xpf_hlo *h) { return h->head; }

size_t xpf_hlo_ncomputations(const xpf_hlo *h) { return h->ncomps; }

int xpf_hlo_computation(xpf_hlo *h, size_t k, const Xla__HloComputationProto **out, xpf_error *err)
{
	if (h->comp[k] == NULL) {
		ProtobufCMessage *m;
		int rc = unpack(h, &xla__hlo_computation_proto__descriptor, &h->comp_blocks[k],
				h->comp_at[k], h->comp_len[k], &m, err);
		if (rc != XPF_OK)
			return rc;
		h->comp[k] = (Xla__HloComputationProto *)m;
	}
	*out = h->comp[k];
	return XPF_OK;
}

void xpf_hlo_drop(xpf_hlo *h, size_t k)
{
	if (h->c == NULL)
		return;
	xpf_pb_blocks_free(&h->comp_blocks[k]);
	h->comp[k] = NULL;
}

int xpf_hlo_check(xpf_hlo *h, xpf_error *err)
{
	for (size_t k = 0; k < h->ncomps; k++) {
		const Xla__HloComputationProto *cp;
		bool kept = h->comp[k] != NULL;
		int rc = xpf_hlo_computation(h, k, &cp, err);
		if (rc != XPF_OK)
			return rc;
		if (!kept)
			xpf_hlo_drop(h, k);
	}
	return XPF_OK;
}

int xpf_capture_module_hlo(xpf_capture *c, size_t i, xpf_hlo **out, xpf_error *err)
{
	if (i >= c->nmodules)
		return xpf_fail(err, XPF_EUSAGE, "%s: no module %zu", c->label, i);
	const xpf_module_ref *m = &c->modules[i];
	char what[600];
	if (c->hlo_only)
		snprintf(what, sizeof what, "HloProto");
	else
		snprintf(what, sizeof what, "module '%s'", m->name);
	return open_hlo(c, what, m->hlo, m->hlo_len, out, err);
}

int xpf_capture_module_check(xpf_capture *c, size_t i, xpf_error *err)
{
	xpf_hlo *h = NULL;
	int rc = xpf_capture_module_hlo(c, i, &h, err);
	if (rc == XPF_OK)
		rc = xpf_hlo_check(h, err);
	xpf_hlo_free(h);
	return rc;
}

int xpf_capture_open_hlo(const char *path, xpf_capture **out, xpf_error *err)
{
	xpf_capture *c = xpf_cap_new(xpf_cap_base_name(path));
	c->hlo_only = true;
	int rc = xpf_cap_map_file(path, c, err);
	if (rc != XPF_OK)
		goto fail;
	/* no plane is read through a window: the mapping is enough (nor is
	 * a bare HloProto's file watched) */
	if (c->fd >= 0) {
		close(c->fd);
		c->fd = -1;
	}
	if (c->gz_fd >= 0) {
		close(c->gz_fd);
		c->gz_fd = -1;
	}
	if (c->size == 0) {
		rc = xpf_fail(err, XPF_EMALFORMED, "%s: not an HloProto: empty file", c->label);
		goto fail;
	}
	xpf_hlo *h = NULL;
	rc = open_hlo(c, "HloProto", c->data, c->size, &h, err);
	if (rc == XPF_OK)
		rc = xpf_hlo_check(h, err);
	if (rc != XPF_OK) {
		xpf_hlo_free(h);
		goto fail;
	}
	const Xla__HloModuleProto *mod = h->head->hlo_module;
	if (mod == NULL || mod->name[0] == '\0') {
		xpf_hlo_free(h);
		rc = xpf_fail(err, XPF_EMALFORMED, "%s: not an HloProto: no named hlo_module",
			      c->label);
		goto fail;
	}
	c->modules = xpf_calloc(1, sizeof *c->modules);
	c->nmodules = 1;
	char nm[600];
	/* A bare HloProto has no metadata entry: its module id is all there is. */
	snprintf(nm, sizeof nm, "%s(%lld)", mod->name, (long long)mod->id);
	c->modules[0].name = xpf_strndup(nm, strlen(nm));
	c->modules[0].program_id = (uint64_t)mod->id;
	c->modules[0].has_hlo = true;
	c->modules[0].hlo = c->data;
	c->modules[0].hlo_len = c->size;
	xpf_hlo_free(h);
	*out = c;
	return XPF_OK;
fail:
	xpf_capture_free(c);
	return rc;
}
