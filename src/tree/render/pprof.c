/* The pprof profile writer and the two profiles of the tree (pprof.h).
 * The profile (proto/profile.proto) is written straight to protobuf's wire
 * format: a live set's profile has a sample per block, and building
 * protobuf-c's structs (five allocations a sample) and packing them was
 * most of the cost of a walk of the tree (bench/README).  Fields go out in
 * number order, proto3's zero scalars left out and repeated scalars
 * packed, as protobuf-c writes them; zlib writes the gzip stream. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "analysis/plan/plan.h"
#include "tree/render/pprof.h"
#include "analysis/runtime/runtime.h"
#include "common/alloc.h"
#include "common/intern.h"
#include "common/map.h"

struct pb_function {
	int64_t name, filename;
};

struct pb_location {
	uint64_t function_id;
	int64_t line, column;
};

struct xpf_pprof {
	xpf_intern *strs; /* the string table's bytes */
	xpf_map str_ids;  /* interned pointer -> string index */
	const char **table;
	size_t ntable, captable;
	xpf_map fn_ids; /* (name, file) -> function id */
	struct pb_function *fns;
	size_t nfns, capfns;
	xpf_map loc_ids; /* (function id, line:column) -> location id */
	struct pb_location *locs;
	size_t nlocs, caplocs;
	xpf_buf samples;     /* the samples, each as field 2 of the Profile */
	xpf_buf stack;       /* the last sample's location_id field */
	xpf_buf labels;      /* the last sample's label fields */
	int64_t types[2][2]; /* sample types (type, unit): space/bytes, objects/count */
};

/* ---- protobuf's wire format -------------------------------------------- */

enum { WIRE_VARINT = 0, WIRE_LEN = 2 };

/* Written in place: a profile is mostly varints of a byte or two. */
static void put_varint(xpf_buf *b, uint64_t v)
{
	if (b->len + 11 > b->cap)
		xpf_buf_reserve(b, 10);
	uint8_t *d = (uint8_t *)b->data + b->len;
	size_t n = 0;
	for (; v > 0x7f; v >>= 7)
		d[n++] = (uint8_t)(v | 0x80);
	d[n++] = (uint8_t)v;
	b->len += n;
	b->data[b->len] = '\0';
}

static void put_tag(xpf_buf *b, unsigned field, unsigned wire)
{
	put_varint(b, (uint64_t)field << 3 | wire);
}

/* A proto3 int64/uint64 field: left out when 0. */
static void put_int(xpf_buf *b, unsigned field, uint64_t v)
{
	if (v == 0)
		return;
	put_tag(b, field, WIRE_VARINT);
	put_varint(b, v);
}

static void put_bytes(xpf_buf *b, unsigned field, const void *data, size_t n)
{
	put_tag(b, field, WIRE_LEN);
	put_varint(b, n);
	xpf_buf_add(b, data, n);
}

static size_t varint_size(uint64_t v)
{
	size_t n = 1;
	while (v > 0x7f) {
		v >>= 7;
		n++;
	}
	return n;
}

/* A message of two int64 fields 1 and 2 (a ValueType's type and unit, a
 * Label's key and str) as field `field`. */
static void put_pair(xpf_buf *b, unsigned field, uint64_t x, uint64_t y)
{
	put_tag(b, field, WIRE_LEN);
	put_varint(b, (x ? 1 + varint_size(x) : 0) + (y ? 1 + varint_size(y) : 0));
	put_int(b, 1, x);
	put_int(b, 2, y);
}

/* ---- building a profile ------------------------------------------------ */

static int64_t str_id(xpf_pprof *p, const char *s)
{
	const char *k = xpf_intern_get(p->strs, s ? s : "", s ? strlen(s) : 0);
	size_t i = xpf_map_find(&p->str_ids, (uint64_t)(uintptr_t)k, 0);
	if (p->str_ids.s[i].val >= 0)
		return p->str_ids.s[i].val;
	int64_t id = (int64_t)p->ntable;
	*XPF_VEC_PUSH(p->table, p->ntable, p->captable) = k;
	xpf_map_put(&p->str_ids, (uint64_t)(uintptr_t)k, 0, id);
	return id;
}

xpf_pprof *xpf_pprof_new(void)
{
	xpf_pprof *p = xpf_calloc(1, sizeof *p);
	p->strs = xpf_intern_new();
	xpf_map_init(&p->str_ids, 64);
	xpf_map_init(&p->fn_ids, 64);
	xpf_map_init(&p->loc_ids, 64);
	p->samples = (xpf_buf)XPF_BUF_INIT;
	p->stack = (xpf_buf)XPF_BUF_INIT;
	p->labels = (xpf_buf)XPF_BUF_INIT;
	str_id(p, ""); /* index 0 is "" (the format's rule) */
	static const char *const names[2][2] = { { "space", "bytes" }, { "objects", "count" } };
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 2; j++)
			p->types[i][j] = str_id(p, names[i][j]);
	return p;
}

void xpf_pprof_free(xpf_pprof *p)
{
	if (p == NULL)
		return;
	free(p->fns);
	free(p->locs);
	free(p->table);
	xpf_buf_release(&p->samples);
	xpf_buf_release(&p->stack);
	xpf_buf_release(&p->labels);
	xpf_map_free(&p->str_ids);
	xpf_map_free(&p->fn_ids);
	xpf_map_free(&p->loc_ids);
	xpf_intern_free(p->strs);
	free(p);
}

uint64_t xpf_pprof_frame(xpf_pprof *p, const char *function, const char *file, int64_t line,
			 int64_t column)
{
	int64_t name = str_id(p, function), fname = str_id(p, file);
	size_t i = xpf_map_find(&p->fn_ids, (uint64_t)name, (uint64_t)fname);
	uint64_t fid;
	if (p->fn_ids.s[i].val >= 0) {
		fid = (uint64_t)p->fn_ids.s[i].val;
	} else {
		*XPF_VEC_PUSH(p->fns, p->nfns, p->capfns) = (struct pb_function){ name, fname };
		fid = p->nfns; /* ids are nonzero */
		xpf_map_put(&p->fn_ids, (uint64_t)name, (uint64_t)fname, (int64_t)fid);
	}
	uint64_t where = (uint64_t)line << 32 ^ (uint32_t)column;
	i = xpf_map_find(&p->loc_ids, fid, where);
	if (p->loc_ids.s[i].val >= 0)
		return (uint64_t)p->loc_ids.s[i].val;
	*XPF_VEC_PUSH(p->locs, p->nlocs, p->caplocs) = (struct pb_location){ fid, line, column };
	xpf_map_put(&p->loc_ids, fid, where, (int64_t)p->nlocs);
	return p->nlocs;
}

void xpf_pprof_sample_again(xpf_pprof *p, uint64_t bytes)
{
	uint64_t v = bytes > INT64_MAX ? INT64_MAX : bytes;
	size_t nvalue = 2 + varint_size(v) + 1; /* tag, length, v, 1 */
	put_tag(&p->samples, 2, WIRE_LEN);
	put_varint(&p->samples, p->stack.len + nvalue + p->labels.len);
	xpf_buf_add(&p->samples, p->stack.data, p->stack.len);
	put_tag(&p->samples, 2, WIRE_LEN); /* value, packed: bytes, 1 */
	put_varint(&p->samples, varint_size(v) + 1);
	put_varint(&p->samples, v);
	put_varint(&p->samples, 1);
	xpf_buf_add(&p->samples, p->labels.data, p->labels.len);
}

void xpf_pprof_sample(xpf_pprof *p, const uint64_t *locs, size_t nlocs, uint64_t bytes,
		      const char *const *kv, size_t nkv)
{
	xpf_buf *s = &p->stack, *l = &p->labels;
	s->len = l->len = 0;
	if (nlocs) { /* location_id, packed */
		size_t n = 0;
		for (size_t i = 0; i < nlocs; i++)
			n += varint_size(locs[i]);
		put_tag(s, 1, WIRE_LEN);
		put_varint(s, n);
		for (size_t i = 0; i < nlocs; i++)
			put_varint(s, locs[i]);
	}
	for (size_t i = 0; i < nkv; i++) {
		if (!kv[2 * i + 1] || !kv[2 * i + 1][0])
			continue;
		/* the key's string first: ids are given in the order asked */
		uint64_t key = (uint64_t)str_id(p, kv[2 * i]);
		put_pair(l, 3, key, (uint64_t)str_id(p, kv[2 * i + 1]));
	}
	xpf_pprof_sample_again(p, bytes);
}

/* The Profile message: sample types, samples, locations, functions,
 * strings, period type and period. */
static void put_profile(xpf_pprof *p, xpf_buf *b)
{
	xpf_buf m = XPF_BUF_INIT, l = XPF_BUF_INIT;
	for (int i = 0; i < 2; i++)
		put_pair(b, 1, (uint64_t)p->types[i][0], (uint64_t)p->types[i][1]);
	xpf_buf_add(b, p->samples.data, p->samples.len);
	for (size_t i = 0; i < p->nlocs; i++) {
		const struct pb_location *lo = &p->locs[i];
		l.len = m.len = 0;
		put_int(&l, 1, lo->function_id);
		put_int(&l, 2, (uint64_t)lo->line);
		put_int(&l, 3, (uint64_t)lo->column);
		put_int(&m, 1, i + 1);
		put_bytes(&m, 4, l.data, l.len);
		put_bytes(b, 4, m.data, m.len);
	}
	for (size_t i = 0; i < p->nfns; i++) {
		const struct pb_function *f = &p->fns[i];
		m.len = 0;
		put_int(&m, 1, i + 1);
		put_int(&m, 2, (uint64_t)f->name);
		put_int(&m, 3, (uint64_t)f->name); /* system_name */
		put_int(&m, 4, (uint64_t)f->filename);
		put_bytes(b, 5, m.data, m.len);
	}
	for (size_t i = 0; i < p->ntable; i++)
		put_bytes(b, 6, p->table[i], strlen(p->table[i]));
	put_pair(b, 11, (uint64_t)p->types[0][0], (uint64_t)p->types[0][1]);
	put_int(b, 12, 1); /* period */
	xpf_buf_release(&m);
	xpf_buf_release(&l);
}

/* gzip (RFC 1952) with zlib: windowBits 15 + 16 asks for the gzip wrapper,
 * whose header zlib writes with mtime 0, so the bytes are deterministic. */
static int gzip_into(const uint8_t *in, size_t n, xpf_buf *out, xpf_error *err)
{
	z_stream z;
	memset(&z, 0, sizeof z);
	if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return xpf_fail(err, XPF_EIO, "zlib: deflateInit2 failed");
	size_t bound = deflateBound(&z, (uLong)n);
	xpf_buf_reserve(out, bound + 1);
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)n;
	z.next_out = (Bytef *)out->data + out->len;
	z.avail_out = (uInt)bound;
	int rc = deflate(&z, Z_FINISH);
	size_t done = bound - z.avail_out;
	deflateEnd(&z);
	if (rc != Z_STREAM_END)
		return xpf_fail(err, XPF_EIO, "zlib: deflate failed (%d)", rc);
	out->len += done;
	out->data[out->len] = '\0';
	return XPF_OK;
}

int xpf_pprof_write_gz(xpf_pprof *p, xpf_buf *out, xpf_error *err)
{
	xpf_buf pb = XPF_BUF_INIT;
	put_profile(p, &pb);
	int rc = pb.len > UINT32_MAX / 2 ?
			 xpf_fail(err, XPF_EIO, "pprof profile of %zu bytes is too large to gzip",
				  pb.len) :
			 gzip_into((const uint8_t *)pb.data, pb.len, out, err);
	xpf_buf_release(&pb);
	return rc;
}

/* ---- modules/<dir>/peak.pb.gz ------------------------------------------ */

/* The stack of an instruction, innermost first: its Python frames
 * (OpMetadata.stack_frame_id, walked through parent_frame_id: reference
 * §3.7), else its op_name split on '/' (the innermost component first; the
 * leaf carries source_file:source_line when set), else its name. */
static size_t stack_of(xpf_pprof *pp, const Xla__HloModuleProto *mod, const xpf_plan_instr *in,
		       const char *fallback, uint64_t **locs, size_t *cap)
{
	size_t n = 0;
	const Xla__StackFrameIndexProto *sf = mod ? mod->stack_frame_index : NULL;
	int32_t id = in ? in->stack_frame_id : 0;
	/* a chain longer than the frames loops: stop there */
	for (size_t depth = 0;
	     sf && id > 0 && (size_t)id <= sf->n_stack_frames && depth < sf->n_stack_frames; depth++) {
		const Xla__StackFrameIndexProto__StackFrame *fr = sf->stack_frames[id - 1];
		int32_t loc = fr->file_location_id;
		if (loc > 0 && (size_t)loc <= sf->n_file_locations) {
			const Xla__StackFrameIndexProto__FileLocation *fl =
				sf->file_locations[loc - 1];
			const char *file = "", *fn = "";
			if (fl->file_name_id > 0 && (size_t)fl->file_name_id <= sf->n_file_names)
				file = sf->file_names[fl->file_name_id - 1];
			if (fl->function_name_id > 0 &&
			    (size_t)fl->function_name_id <= sf->n_function_names)
				fn = sf->function_names[fl->function_name_id - 1];
			*XPF_VEC_PUSH(*locs, n, *cap) =
				xpf_pprof_frame(pp, fn[0] ? fn : file, file, fl->line, fl->column);
		}
		id = fr->parent_frame_id;
	}
	if (n)
		return n;
	const char *op = in ? in->op_name : "";
	if (op[0]) {
		const char *end = op + strlen(op);
		while (end > op) {
			const char *s = end;
			while (s > op && s[-1] != '/')
				s--;
			if (s < end) {
				char *part = xpf_strndup(s, (size_t)(end - s));
				bool leaf = n == 0 && in->source_file[0];
				*XPF_VEC_PUSH(*locs, n, *cap) =
					xpf_pprof_frame(pp, part, leaf ? in->source_file : "",
							leaf ? in->source_line : 0, 0);
				free(part);
			}
			end = s > op ? s - 1 : op;
		}
		if (n)
			return n;
	}
	*XPF_VEC_PUSH(*locs, n, *cap) = xpf_pprof_frame(pp, in ? in->name : fallback, "", 0, 0);
	return n;
}

int xpf_render_peak_pprof(xpf_host *h, long arg, xpf_buf *out, xpf_error *err)
{
	const xpf_plan *p;
	int rc = xpf_host_plan(h, (size_t)arg, &p, err);
	if (rc != XPF_OK)
		return rc;
	/* the stack frames: in the head of the HloProto, which the plan does
	 * not keep */
	xpf_hlo *hlo = NULL;
	const Xla__HloModuleProto *mod = NULL;
	if (p->npeak) {
		rc = xpf_capture_module_hlo(h->cap, (size_t)arg, &hlo, err);
		if (rc != XPF_OK)
			return rc;
		mod = xpf_hlo_head(hlo)->hlo_module;
	}
	xpf_pprof *pp = xpf_pprof_new();
	uint64_t *locs = NULL;
	size_t cap = 0;
	for (size_t i = 0; i < p->npeak; i++) {
		const xpf_plan_peak *r = &p->peak[i];
		const xpf_plan_buffer *b = r->buffer;
		const xpf_plan_instr *in = b ? b->instr : NULL;
		char fallback[64];
		snprintf(fallback, sizeof fallback, "allocation %lld",
			 r->alloc ? (long long)r->alloc->index : -1LL);
		size_t nl = stack_of(pp, mod, in, fallback, &locs, &cap);
		const char *kv[] = {
			"role",        xpf_role_name(r->role), "kind",  xpf_kind_name(r->kind),
			"dtype",       b ? b->dtype : NULL,    "shape", b ? b->shape : NULL,
			"instruction", in ? in->name : NULL,
		};
		xpf_pprof_sample(pp, locs, nl, r->bytes, kv, sizeof kv / sizeof kv[0] / 2);
	}
	free(locs);
	xpf_hlo_free(hlo);
	rc = xpf_pprof_write_gz(pp, out, err);
	xpf_pprof_free(pp);
	return rc;
}

/* ---- runtime/executions/<n>/live.pb.gz --------------------------------- */

/* A block's stack: the host event that allocated it, inside its origin
 * ("outputs of jit_f(1) execution 2", "allocated before the capture
 * started"), so that pprof groups blocks by origin, then by event. */
int xpf_render_live_pprof(xpf_host *h, long arg, xpf_buf *out, xpf_error *err)
{
	const xpf_runtime *rt;
	int rc = xpf_host_runtime(h, &rt, err);
	if (rc != XPF_OK)
		return rc;
	xpf_rt_block *b;
	size_t nb;
	rc = xpf_runtime_live_at(rt, (size_t)arg, &b, &nb, err);
	if (rc != XPF_OK)
		return rc;
	xpf_pprof *pp = xpf_pprof_new();
	for (size_t i = 0; i < nb; i++) {
		if (i > 0 && b[i].host_event == b[i - 1].host_event &&
		    b[i].origin_text == b[i - 1].origin_text &&
		    b[i].execution == b[i - 1].execution) { /* the stack and labels of the last */
			xpf_pprof_sample_again(pp, b[i].bytes);
			continue;
		}
		uint64_t locs[2];
		locs[0] = xpf_pprof_frame(pp,
					  b[i].host_event && b[i].host_event[0] ? b[i].host_event :
										  "(no host event)",
					  "", 0, 0);
		locs[1] = xpf_pprof_frame(pp, b[i].origin_text, "", 0, 0);
		const char *module = NULL;
		if (b[i].execution >= 0 && (size_t)b[i].execution < rt->nexecutions) {
			long m = rt->executions[b[i].execution].module;
			if (m >= 0 && (size_t)m < h->nmodules)
				module = xpf_capture_module(h->cap, (size_t)m)->name;
		}
		const char *kv[] = { "origin", b[i].origin_text, "module", module };
		xpf_pprof_sample(pp, locs, 2, b[i].bytes, kv, 2);
	}
	xpf_rt_blocks_free(b, nb);
	rc = xpf_pprof_write_gz(pp, out, err);
	xpf_pprof_free(pp);
	return rc;
}
