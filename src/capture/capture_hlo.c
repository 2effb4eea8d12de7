/* HloProtos: unpacked with protobuf-c after a check of their nesting on
 * the wire (protobuf-c has no depth limit); bare HloProto files. */
#include "capture/capture_priv.h"

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

/* An unpacked HloProto and the blocks it lives in.  protobuf-c makes one
 * allocation per message, string and repeated field (millions for a module
 * of hundreds of thousands of instructions, each with malloc's header);
 * taking them from large blocks instead needs less memory and frees the
 * whole proto at once.  Nothing is freed before that: what protobuf-c frees
 * while unpacking (its scratch for repeated fields) stays in its block. */
enum { HLO_BLOCK = 1 << 20 };

typedef struct hlo_block {
	struct hlo_block *next;
	size_t used, size;
	_Alignas(max_align_t) unsigned char data[];
} hlo_block;

typedef struct hlo_unpacked {
	Xla__HloProto *proto;
	hlo_block *blocks;
} hlo_unpacked;

static void *hlo_alloc(void *ctx, size_t n)
{
	hlo_unpacked *u = ctx;
	hlo_block *b = u->blocks;
	n = (n + _Alignof(max_align_t) - 1) & ~(_Alignof(max_align_t) - 1);
	if (b == NULL || b->size - b->used < n) {
		size_t size = n > HLO_BLOCK ? n : HLO_BLOCK;
		b = malloc(sizeof *b + size);
		if (b == NULL)
			return NULL;
		*b = (hlo_block){ u->blocks, 0, size };
		u->blocks = b;
	}
	void *p = b->data + b->used;
	b->used += n;
	return p;
}

static void hlo_keep(void *ctx, void *p)
{
	(void)ctx;
	(void)p;
}

void xpf_cap_hlo_free(void *v)
{
	hlo_unpacked *u = v;
	if (u == NULL)
		return;
	while (u->blocks) {
		hlo_block *next = u->blocks->next;
		free(u->blocks);
		u->blocks = next;
	}
	free(u);
}

static int unpack_hlo(const xpf_capture *c, const char *what, const uint8_t *p, size_t n,
		      hlo_unpacked **out, xpf_error *err)
{
	int rc = hlo_depth_check(c, what, p, p + n, M_HLO, 0, err);
	if (rc != XPF_OK)
		return rc;
	hlo_unpacked *u = xpf_calloc(1, sizeof *u);
	ProtobufCAllocator blocks = { hlo_alloc, hlo_keep, u };
	u->proto = xla__hlo_proto__unpack(&blocks, n, p);
	if (u->proto == NULL) {
		xpf_cap_hlo_free(u);
		return xpf_fail(err, XPF_EMALFORMED,
				"%s: malformed capture: %s: HloProto does not decode (byte %llu)",
				c->label, what, (unsigned long long)off_of(c, p));
	}
	*out = u;
	return XPF_OK;
}

struct hlo_ctx {
	xpf_capture *c;
	size_t i;
};

static int hlo_build(void *ctxv, void **out, xpf_error *err)
{
	struct hlo_ctx *ctx = ctxv;
	const xpf_module_ref *m = &ctx->c->modules[ctx->i];
	char what[600];
	snprintf(what, sizeof what, "module '%s'", m->name);
	hlo_unpacked *u = NULL;
	int rc = unpack_hlo(ctx->c, what, m->hlo, m->hlo_len, &u, err);
	if (rc == XPF_OK)
		*out = u;
	return rc;
}

int xpf_capture_module_hlo(xpf_capture *c, size_t i, const Xla__HloProto **out, xpf_error *err)
{
	if (i >= c->nmodules)
		return xpf_fail(err, XPF_EUSAGE, "%s: no module %zu", c->label, i);
	struct hlo_ctx ctx = { c, i };
	void *v = NULL;
	int rc = xpf_lazy_get(&c->hlos[i], hlo_build, &ctx, &v, err);
	if (rc == XPF_OK)
		*out = ((const hlo_unpacked *)v)->proto;
	return rc;
}

int xpf_capture_open_hlo(const char *path, xpf_capture **out, xpf_error *err)
{
	xpf_capture *c = xpf_calloc(1, sizeof *c);
	c->fd = -1;
	c->label = xpf_strndup(xpf_cap_base_name(path), strlen(xpf_cap_base_name(path)));
	c->hlo_only = true;
	int rc = xpf_cap_map_file(path, c, err);
	if (rc != XPF_OK)
		goto fail;
	/* no plane is read through a window: the mapping is enough */
	if (c->fd >= 0) {
		close(c->fd);
		c->fd = -1;
	}
	if (c->size == 0) {
		rc = xpf_fail(err, XPF_EMALFORMED, "%s: not an HloProto: empty file", c->label);
		goto fail;
	}
	hlo_unpacked *u = NULL;
	rc = unpack_hlo(c, "HloProto", c->data, c->size, &u, err);
	if (rc != XPF_OK)
		goto fail;
	const Xla__HloProto *h = u->proto;
	if (h->hlo_module == NULL || h->hlo_module->name[0] == '\0') {
		xpf_cap_hlo_free(u);
		rc = xpf_fail(err, XPF_EMALFORMED, "%s: not an HloProto: no named hlo_module",
			      c->label);
		goto fail;
	}
	c->modules = xpf_calloc(1, sizeof *c->modules);
	c->hlos = xpf_calloc(1, sizeof *c->hlos);
	xpf_lazy_init(&c->hlos[0]);
	c->nmodules = 1;
	char nm[600];
	/* A bare HloProto has no metadata entry: its module id is all there is. */
	snprintf(nm, sizeof nm, "%s(%lld)", h->hlo_module->name, (long long)h->hlo_module->id);
	c->modules[0].name = xpf_strndup(nm, strlen(nm));
	c->modules[0].program_id = (uint64_t)h->hlo_module->id;
	c->modules[0].has_hlo = true;
	c->modules[0].hlo = c->data;
	c->modules[0].hlo_len = c->size;
	c->hlos[0].state = 1;
	c->hlos[0].value = u;
	*out = c;
	return XPF_OK;
fail:
	xpf_capture_free(c);
	return rc;
}
