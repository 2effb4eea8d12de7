/* The pprof profile writer and the two profiles of the tree (pprof.h).
 * The profile is built as protobuf-c structs of proto/profile.proto and
 * packed with the generated functions; zlib writes the gzip stream. */
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
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile pb_profile;
typedef Perftools__Profiles__Sample pb_sample;
typedef Perftools__Profiles__Label pb_label;
typedef Perftools__Profiles__Location pb_location;
typedef Perftools__Profiles__Line pb_line;
typedef Perftools__Profiles__Function pb_function;
typedef Perftools__Profiles__ValueType pb_value_type;

struct xpf_pprof {
	xpf_intern *strs; /* the string table's bytes */
	xpf_map str_ids;  /* interned pointer -> string index */
	char **table;
	size_t ntable, captable;
	xpf_map fn_ids; /* (name, file) -> function id */
	pb_function **fns;
	size_t nfns, capfns;
	xpf_map loc_ids; /* (function id, line:column) -> location id */
	pb_location **locs;
	size_t nlocs, caplocs;
	pb_sample **samples;
	size_t nsamples, capsamples;
	pb_value_type types[2];
	pb_value_type *type_ptrs[2];
};

static int64_t str_id(xpf_pprof *p, const char *s)
{
	const char *k = xpf_intern_get(p->strs, s ? s : "", s ? strlen(s) : 0);
	size_t i = xpf_map_find(&p->str_ids, (uint64_t)(uintptr_t)k, 0);
	if (p->str_ids.s[i].val >= 0)
		return p->str_ids.s[i].val;
	int64_t id = (int64_t)p->ntable;
	*XPF_VEC_PUSH(p->table, p->ntable, p->captable) = (char *)k;
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
	str_id(p, ""); /* index 0 is "" (the format's rule) */
	static const char *const names[2][2] = { { "space", "bytes" }, { "objects", "count" } };
	for (int i = 0; i < 2; i++) {
		perftools__profiles__value_type__init(&p->types[i]);
		p->types[i].type = str_id(p, names[i][0]);
		p->types[i].unit = str_id(p, names[i][1]);
		p->type_ptrs[i] = &p->types[i];
	}
	return p;
}

void xpf_pprof_free(xpf_pprof *p)
{
	if (p == NULL)
		return;
	for (size_t i = 0; i < p->nsamples; i++) {
		pb_sample *s = p->samples[i];
		free(s->location_id);
		free(s->value);
		if (s->n_label)
			free(s->label[0]);
		free(s->label);
		free(s);
	}
	for (size_t i = 0; i < p->nlocs; i++) {
		free(p->locs[i]->line[0]);
		free(p->locs[i]->line);
		free(p->locs[i]);
	}
	for (size_t i = 0; i < p->nfns; i++)
		free(p->fns[i]);
	free(p->samples);
	free(p->locs);
	free(p->fns);
	free(p->table);
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
		pb_function *f = xpf_malloc(sizeof *f);
		perftools__profiles__function__init(f);
		fid = f->id = p->nfns + 1; /* ids are nonzero */
		f->name = f->system_name = name;
		f->filename = fname;
		*XPF_VEC_PUSH(p->fns, p->nfns, p->capfns) = f;
		xpf_map_put(&p->fn_ids, (uint64_t)name, (uint64_t)fname, (int64_t)fid);
	}
	uint64_t where = (uint64_t)line << 32 ^ (uint32_t)column;
	i = xpf_map_find(&p->loc_ids, fid, where);
	if (p->loc_ids.s[i].val >= 0)
		return (uint64_t)p->loc_ids.s[i].val;
	pb_location *l = xpf_malloc(sizeof *l);
	pb_line *ln = xpf_malloc(sizeof *ln);
	perftools__profiles__location__init(l);
	perftools__profiles__line__init(ln);
	ln->function_id = fid;
	ln->line = line;
	ln->column = column;
	l->id = p->nlocs + 1;
	l->n_line = 1;
	l->line = xpf_malloc(sizeof *l->line);
	l->line[0] = ln;
	*XPF_VEC_PUSH(p->locs, p->nlocs, p->caplocs) = l;
	xpf_map_put(&p->loc_ids, fid, where, (int64_t)l->id);
	return l->id;
}

void xpf_pprof_sample(xpf_pprof *p, const uint64_t *locs, size_t nlocs, uint64_t bytes,
		      const char *const *kv, size_t nkv)
{
	pb_sample *s = xpf_malloc(sizeof *s);
	perftools__profiles__sample__init(s);
	s->n_location_id = nlocs;
	s->location_id = xpf_calloc(nlocs, sizeof *s->location_id);
	if (nlocs)
		memcpy(s->location_id, locs, nlocs * sizeof *locs);
	s->n_value = 2;
	s->value = xpf_calloc(2, sizeof *s->value);
	s->value[0] = bytes > INT64_MAX ? INT64_MAX : (int64_t)bytes;
	s->value[1] = 1;
	size_t nl = 0;
	for (size_t i = 0; i < nkv; i++)
		nl += kv[2 * i + 1] && kv[2 * i + 1][0];
	s->label = xpf_calloc(nl, sizeof *s->label);
	/* one block for the sample's labels (freed through label[0]) */
	pb_label *lb = nl ? xpf_calloc(nl, sizeof *lb) : NULL;
	for (size_t i = 0; i < nkv; i++) {
		if (!kv[2 * i + 1] || !kv[2 * i + 1][0])
			continue;
		pb_label *l = &lb[s->n_label];
		perftools__profiles__label__init(l);
		l->key = str_id(p, kv[2 * i]);
		l->str = str_id(p, kv[2 * i + 1]);
		s->label[s->n_label++] = l;
	}
	*XPF_VEC_PUSH(p->samples, p->nsamples, p->capsamples) = s;
}

/* gzip (RFC 1952) with zlib: windowBits 15 + 16 asks for the gzip wrapper,
 * whose header zlib writes with mtime 0, so the bytes are deterministic. */
static int gzip_into(const uint8_t *in, size_t n, xpf_buf *out, xpf_error *err)
{
	z_stream z;
	memset(&z, 0, sizeof z);
	if (deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
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
	pb_profile pr;
	perftools__profiles__profile__init(&pr);
	pr.n_sample_type = 2;
	pr.sample_type = p->type_ptrs;
	pr.period_type = &p->types[0];
	pr.period = 1;
	pr.n_sample = p->nsamples;
	pr.sample = p->samples;
	pr.n_location = p->nlocs;
	pr.location = p->locs;
	pr.n_function = p->nfns;
	pr.function = p->fns;
	pr.n_string_table = p->ntable;
	pr.string_table = p->table;
	size_t n = perftools__profiles__profile__get_packed_size(&pr);
	if (n > UINT32_MAX / 2)
		return xpf_fail(err, XPF_EIO, "pprof profile of %zu bytes is too large to gzip", n);
	uint8_t *bytes = xpf_malloc(n ? n : 1);
	perftools__profiles__profile__pack(&pr, bytes);
	int rc = gzip_into(bytes, n, out, err);
	free(bytes);
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
