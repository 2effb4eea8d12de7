#include "hlo_build.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

typedef struct hb_ins {
	char *name;
	char *opcode;
	int64_t id;
	int comp;
	int is_tuple;
	int nleaf;
	hb_arr *leaf; /* nleaf arrays; for an array result one leaf */
	hb_meta meta; /* strings owned */
	int frame;    /* stack frame id, 0 = none */
	int64_t *ops;
	int nops;
	int64_t called[2];
	int ncalled;
	int64_t param_no;
	int64_t tuple_index;
	char *fusion_kind;
	char *cc_target;
	int pos; /* position in the entry schedule, -1 elsewhere */
	int64_t trip_count; /* a while loop's known trip count, 0 none */
	int *bufs; /* buffer per leaf (-1 none) plus [nleaf] for {} of tuples */
	int *carried;
	int ncarried;
} hb_ins;

typedef struct hb_comp {
	char *name;
	int64_t id;
	int is_fusion;
	int *ins; /* indices into m->ins */
	int n, cap;
	int64_t root_id;
} hb_comp;

typedef struct hb_lbuf {
	int t0, t1; /* trace event range of the region (roots only) */
	int ins;
	int index;
	int64_t size;
	int role;
	int share;
	int until_pos;
	int last_use;
	int alloc;
	int64_t offset;
} hb_lbuf;

typedef struct hb_frame {
	char *file, *function;
	int line;
} hb_frame;

struct hb_module {
	char *name;
	uint64_t program_id;
	hb_ins *ins;
	int nins, capins;
	hb_comp *comps;
	int ncomps;
	int entry;
	int nparams; /* entry parameters */
	int64_t root_id;
	hb_lbuf *bufs;
	int nbufs, capbufs;
	int *param_allocs; /* buffers, in call order */
	int nparam_allocs;
	int *out_allocs;
	int nout_allocs;
	struct { int out; int param; } alias[512];
	int nalias;
	hb_frame *frames;
	int nframes;
	int bump;
	int uniq;
	/* filled by hb_encode */
	int64_t temp_size;
};

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p)
		abort();
	return p;
}

static char *xstrdup(const char *s)
{
	if (!s)
		return NULL;
	char *d = strdup(s);
	if (!d)
		abort();
	return d;
}

hb_arr hb_a(int et, int nd, ...)
{
	hb_arr a;
	va_list ap;
	memset(&a, 0, sizeof a);
	a.et = et;
	a.nd = nd;
	va_start(ap, nd);
	for (int i = 0; i < nd; i++)
		a.dims[i] = va_arg(ap, int);
	va_end(ap);
	return a;
}

static int et_bytes(int et)
{
	switch (et) {
	case ET_PRED: case ET_S8: case ET_U8: return 1;
	case ET_F16: case ET_BF16: return 2;
	case ET_S32: case ET_F32: return 4;
	default: return 8;
	}
}

static const char *et_name(int et)
{
	switch (et) {
	case ET_PRED: return "pred";
	case ET_S8: return "s8";
	case ET_U8: return "u8";
	case ET_F16: return "f16";
	case ET_BF16: return "bf16";
	case ET_S32: return "s32";
	case ET_F32: return "f32";
	default: return "tuple";
	}
}

int64_t hb_arr_bytes(const hb_arr *a)
{
	int64_t n = et_bytes(a->et);
	for (int i = 0; i < a->nd; i++)
		n *= a->dims[i];
	return n;
}

void hb_arr_str(const hb_arr *a, char *out, size_t n)
{
	size_t k = (size_t)snprintf(out, n, "%s[", et_name(a->et));
	for (int i = 0; i < a->nd && k < n; i++)
		k += (size_t)snprintf(out + k, n - k, "%s%lld", i ? "," : "", (long long)a->dims[i]);
	if (k < n)
		snprintf(out + k, n - k, "]");
}

static int new_comp(hb_module *m, const char *name, int is_fusion)
{
	m->comps = xrealloc(m->comps, (size_t)(m->ncomps + 1) * sizeof *m->comps);
	hb_comp *c = &m->comps[m->ncomps];
	memset(c, 0, sizeof *c);
	c->name = xstrdup(name);
	c->id = m->ncomps + 1;
	c->is_fusion = is_fusion;
	return m->ncomps++;
}

hb_module *hb_new(const char *name, uint64_t program_id)
{
	hb_module *m = calloc(1, sizeof *m);
	char buf[64];
	if (!m)
		abort();
	m->name = xstrdup(name);
	m->program_id = program_id;
	snprintf(buf, sizeof buf, "main.%llu", (unsigned long long)(program_id % 1000 + 7));
	m->entry = new_comp(m, buf, 0);
	return m;
}

void hb_free(hb_module *m)
{
	if (!m)
		return;
	for (int i = 0; i < m->nins; i++) {
		hb_ins *x = &m->ins[i];
		free(x->name);
		free(x->opcode);
		free(x->leaf);
		free((char *)x->meta.op_type);
		free((char *)x->meta.op_name);
		free((char *)x->meta.file);
		free((char *)x->meta.function);
		free(x->ops);
		free(x->fusion_kind);
		free(x->cc_target);
		free(x->bufs);
		free(x->carried);
	}
	for (int i = 0; i < m->ncomps; i++) {
		free(m->comps[i].name);
		free(m->comps[i].ins);
	}
	for (int i = 0; i < m->nframes; i++) {
		free(m->frames[i].file);
		free(m->frames[i].function);
	}
	free(m->frames);
	free(m->ins);
	free(m->comps);
	free(m->bufs);
	free(m->param_allocs);
	free(m->out_allocs);
	free(m->name);
	free(m);
}

const char *hb_name(const hb_module *m) { return m->name; }
uint64_t hb_program_id(const hb_module *m) { return m->program_id; }

static int ins_index(const hb_module *m, int64_t id)
{
	int k = (int)(id & 0xffffffff) - 1;
	if (k < 0 || k >= m->nins || m->ins[k].id != id)
		abort();
	return k;
}

static int frame_for(hb_module *m, const hb_meta *meta)
{
	if (!meta || !meta->file)
		return 0;
	for (int i = 0; i < m->nframes; i++)
		if (strcmp(m->frames[i].file, meta->file) == 0 && m->frames[i].line == meta->line &&
		    strcmp(m->frames[i].function, meta->function ? meta->function : "<module>") == 0)
			return i + 2; /* frame 1 is the caller (train loop) */
	m->frames = xrealloc(m->frames, (size_t)(m->nframes + 1) * sizeof *m->frames);
	m->frames[m->nframes].file = xstrdup(meta->file);
	m->frames[m->nframes].function = xstrdup(meta->function ? meta->function : "<module>");
	m->frames[m->nframes].line = meta->line;
	m->nframes++;
	return m->nframes + 1;
}

static hb_ins *add_ins(hb_module *m, int comp, const char *name, const char *opcode,
	const hb_arr *leaves, int nleaf, int is_tuple, const int64_t *ops, int nops,
	const hb_meta *meta)
{
	if (m->nins == m->capins) {
		m->capins = m->capins ? m->capins * 2 : 256;
		m->ins = xrealloc(m->ins, (size_t)m->capins * sizeof *m->ins);
	}
	int k = m->nins++;
	hb_ins *x = &m->ins[k];
	memset(x, 0, sizeof *x);
	x->name = xstrdup(name);
	x->opcode = xstrdup(opcode);
	x->comp = comp;
	x->id = (m->comps[comp].id << 32) | (int64_t)(k + 1);
	x->is_tuple = is_tuple;
	x->nleaf = nleaf;
	x->leaf = xrealloc(NULL, (size_t)(nleaf ? nleaf : 1) * sizeof *x->leaf);
	if (nleaf)
		memcpy(x->leaf, leaves, (size_t)nleaf * sizeof *leaves);
	x->bufs = xrealloc(NULL, (size_t)(nleaf + 1) * sizeof *x->bufs);
	for (int i = 0; i <= nleaf; i++)
		x->bufs[i] = -1;
	if (nops) {
		x->ops = xrealloc(NULL, (size_t)nops * sizeof *ops);
		memcpy(x->ops, ops, (size_t)nops * sizeof *ops);
	}
	x->nops = nops;
	x->pos = -1;
	if (meta) {
		x->meta.op_type = xstrdup(meta->op_type);
		x->meta.op_name = xstrdup(meta->op_name);
		x->meta.file = xstrdup(meta->file);
		x->meta.function = xstrdup(meta->function);
		x->meta.line = meta->line;
		x->frame = frame_for(m, meta);
	}
	hb_comp *c = &m->comps[comp];
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 16;
		c->ins = xrealloc(c->ins, (size_t)c->cap * sizeof *c->ins);
	}
	c->ins[c->n++] = k;
	c->root_id = x->id;
	if (comp == m->entry)
		x->pos = c->n - 1;
	return x;
}

static const hb_arr *leaf0(const hb_module *m, int64_t id)
{
	return &m->ins[ins_index(m, id)].leaf[0];
}

int64_t hb_param(hb_module *m, const char *name, hb_arr a, const hb_meta *meta)
{
	hb_ins *x = add_ins(m, m->entry, name, "parameter", &a, 1, 0, NULL, 0, meta);
	x->param_no = m->nparams++;
	return x->id;
}

int64_t hb_fusion(hb_module *m, const char *name, const char *kind, const char *root,
	const char *comp_name, hb_arr a, const int64_t *ops, int nops, const hb_meta *meta)
{
	char cname[160], pname[32];
	int64_t fops[16];
	if (comp_name)
		snprintf(cname, sizeof cname, "%s", comp_name);
	else
		snprintf(cname, sizeof cname, "fused_computation.%d", m->uniq++);
	int c = new_comp(m, cname, 1);
	for (int i = 0; i < nops && i < 16; i++) {
		snprintf(pname, sizeof pname, "param_%d.%d", i, m->uniq++);
		hb_ins *p = add_ins(m, c, pname, "parameter", leaf0(m, ops[i]), 1, 0, NULL, 0, NULL);
		p->param_no = i;
		fops[i] = p->id;
	}
	snprintf(pname, sizeof pname, "%s.%d", root, m->uniq++);
	hb_ins *r = add_ins(m, c, pname, root, &a, 1, 0, fops, nops < 16 ? nops : 16, meta);
	(void)r;
	hb_ins *x = add_ins(m, m->entry, name, "fusion", &a, 1, 0, ops, nops, meta);
	x->fusion_kind = xstrdup(kind);
	x->called[0] = m->comps[c].id;
	x->ncalled = 1;
	return x->id;
}

int64_t hb_custom_call(hb_module *m, const char *name, const char *target, hb_arr a,
	int64_t ws_bytes, const int64_t *ops, int nops, const hb_meta *meta)
{
	hb_ins *x;
	if (ws_bytes > 0) {
		hb_arr leaves[2] = { a, hb_a(ET_S8, 1, (int)ws_bytes) };
		x = add_ins(m, m->entry, name, "custom-call", leaves, 2, 1, ops, nops, meta);
	} else {
		x = add_ins(m, m->entry, name, "custom-call", &a, 1, 0, ops, nops, meta);
	}
	x->cc_target = xstrdup(target);
	return x->id;
}

int64_t hb_op(hb_module *m, const char *name, const char *opcode, hb_arr a,
	const int64_t *ops, int nops, const hb_meta *meta)
{
	return add_ins(m, m->entry, name, opcode, &a, 1, 0, ops, nops, meta)->id;
}

int64_t hb_gte(hb_module *m, const char *name, int64_t tuple, int index)
{
	const hb_ins *t = &m->ins[ins_index(m, tuple)];
	hb_arr a = t->leaf[index];
	hb_ins *x = add_ins(m, m->entry, name, "get-tuple-element", &a, 1, 0, &tuple, 1, NULL);
	x->tuple_index = index;
	return x->id;
}

static int64_t tuple_in(hb_module *m, int comp, const char *name, const int64_t *ops, int nops)
{
	hb_arr *leaves = xrealloc(NULL, (size_t)(nops ? nops : 1) * sizeof *leaves);
	for (int i = 0; i < nops; i++)
		leaves[i] = *leaf0(m, ops[i]);
	int64_t id = add_ins(m, comp, name, "tuple", leaves, nops, 1, ops, nops, NULL)->id;
	free(leaves);
	return id;
}

int64_t hb_tuple(hb_module *m, const char *name, const int64_t *ops, int nops)
{
	return tuple_in(m, m->entry, name, ops, nops);
}

int64_t hb_while(hb_module *m, const char *name, int64_t init, const hb_arr *state, int n,
	const hb_meta *meta, const hb_meta *body_meta)
{
	char nm[160];
	int64_t gtes[64], outs[64];
	snprintf(nm, sizeof nm, "region_1.%d", m->uniq++);
	int body = new_comp(m, nm, 0);
	snprintf(nm, sizeof nm, "region_2.%d", m->uniq++);
	int cond = new_comp(m, nm, 0);
	hb_arr tup = { ET_TUPLE, 0, { 0 } };
	(void)tup;

	/* body: parameter, one get-tuple-element per element, an update per
	 * element, root tuple */
	snprintf(nm, sizeof nm, "wide_param.%d", m->uniq++);
	hb_ins *p = add_ins(m, body, nm, "parameter", state, n, 1, NULL, 0, NULL);
	int64_t pid = p->id;
	for (int i = 0; i < n && i < 64; i++) {
		snprintf(nm, sizeof nm, "get-tuple-element.%d", m->uniq++);
		hb_ins *g = add_ins(m, body, nm, "get-tuple-element", &state[i], 1, 0, &pid, 1, NULL);
		g->tuple_index = i;
		gtes[i] = g->id;
	}
	for (int i = 0; i < n && i < 64; i++) {
		const char *opc = state[i].et == ET_S32 && state[i].nd == 0 ? "add" : "dynamic-update-slice";
		snprintf(nm, sizeof nm, "%s.%d", opc, m->uniq++);
		outs[i] = add_ins(m, body, nm, opc, &state[i], 1, 0, &gtes[i], 1, body_meta)->id;
	}
	snprintf(nm, sizeof nm, "tuple.%d", m->uniq++);
	tuple_in(m, body, nm, outs, n < 64 ? n : 64);

	snprintf(nm, sizeof nm, "cond_param.%d", m->uniq++);
	p = add_ins(m, cond, nm, "parameter", state, n, 1, NULL, 0, NULL);
	pid = p->id;
	snprintf(nm, sizeof nm, "get-tuple-element.%d", m->uniq++);
	hb_arr s32 = hb_a(ET_S32, 0);
	hb_ins *g = add_ins(m, cond, nm, "get-tuple-element", &s32, 1, 0, &pid, 1, NULL);
	int64_t cops[2] = { g->id, 0 };
	snprintf(nm, sizeof nm, "constant.%d", m->uniq++);
	cops[1] = add_ins(m, cond, nm, "constant", &s32, 1, 0, NULL, 0, NULL)->id;
	snprintf(nm, sizeof nm, "compare.%d", m->uniq++);
	hb_arr pred = hb_a(ET_PRED, 0);
	add_ins(m, cond, nm, "compare", &pred, 1, 0, cops, 2, body_meta);

	hb_ins *w = add_ins(m, m->entry, name, "while", state, n, 1, &init, 1, meta);
	w->called[0] = m->comps[cond].id;
	w->called[1] = m->comps[body].id;
	w->ncalled = 2;
	return w->id;
}

void hb_set_trip_count(hb_module *m, int64_t while_id, int64_t n)
{
	m->ins[ins_index(m, while_id)].trip_count = n;
}

int64_t hb_root_tuple(hb_module *m, const int64_t *ops, int nops)
{
	char nm[64];
	snprintf(nm, sizeof nm, "tuple.%d", m->uniq++);
	m->root_id = hb_tuple(m, nm, ops, nops);
	return m->root_id;
}

int hb_buffer(hb_module *m, int64_t instr, int index, int role)
{
	int k = ins_index(m, instr);
	hb_ins *x = &m->ins[k];
	if (m->nbufs == m->capbufs) {
		m->capbufs = m->capbufs ? m->capbufs * 2 : 256;
		m->bufs = xrealloc(m->bufs, (size_t)m->capbufs * sizeof *m->bufs);
	}
	hb_lbuf *b = &m->bufs[m->nbufs];
	memset(b, 0, sizeof *b);
	b->ins = k;
	b->index = index;
	b->role = role;
	b->share = -1;
	b->until_pos = -1;
	b->alloc = -1;
	if (index < 0 && x->is_tuple)
		b->size = 8 * (int64_t)x->nleaf;
	else
		b->size = hb_arr_bytes(&x->leaf[index < 0 ? 0 : index]);
	x->bufs[index < 0 ? x->nleaf : index] = m->nbufs;
	return m->nbufs++;
}

int hb_buffer_of(const hb_module *m, int64_t instr)
{
	const hb_ins *x = &m->ins[ins_index(m, instr)];
	return x->bufs[x->nleaf];
}

void hb_share(hb_module *m, int b, int canonical) { m->bufs[b].share = canonical; }

void hb_live_until(hb_module *m, int b, int64_t instr)
{
	m->bufs[b].until_pos = m->ins[ins_index(m, instr)].pos;
}

void hb_alloc_param(hb_module *m, int b)
{
	m->param_allocs = xrealloc(m->param_allocs, (size_t)(m->nparam_allocs + 1) * sizeof(int));
	m->param_allocs[m->nparam_allocs++] = b;
}

void hb_alloc_output(hb_module *m, int b)
{
	m->out_allocs = xrealloc(m->out_allocs, (size_t)(m->nout_allocs + 1) * sizeof(int));
	m->out_allocs[m->nout_allocs++] = b;
}

void hb_io_alias(hb_module *m, int out_index, int param_no)
{
	if (m->nalias >= 512)
		abort();
	m->alias[m->nalias].out = out_index;
	m->alias[m->nalias].param = param_no;
	m->nalias++;
}

void hb_set_bump_placement(hb_module *m, int on) { m->bump = on; }

/* ---- carried values and lifetimes ---- */

static int transparent(const hb_ins *x)
{
	return strcmp(x->opcode, "get-tuple-element") == 0 || strcmp(x->opcode, "bitcast") == 0 ||
	       strcmp(x->opcode, "tuple") == 0;
}

static void carry_add(hb_ins *x, int b)
{
	if (b < 0)
		return;
	x->carried = xrealloc(x->carried, (size_t)(x->ncarried + 1) * sizeof(int));
	x->carried[x->ncarried++] = b;
}

static void compute_carried(hb_module *m)
{
	hb_comp *e = &m->comps[m->entry];
	for (int i = 0; i < e->n; i++) {
		hb_ins *x = &m->ins[e->ins[i]];
		free(x->carried);
		x->carried = NULL;
		x->ncarried = 0;
		if (strcmp(x->opcode, "get-tuple-element") == 0) {
			hb_ins *t = &m->ins[ins_index(m, x->ops[0])];
			int k = (int)x->tuple_index;
			if (t->is_tuple && k < t->nleaf && t->bufs[k] >= 0)
				carry_add(x, t->bufs[k]);
			else if (strcmp(t->opcode, "tuple") == 0) {
				hb_ins *o = &m->ins[ins_index(m, t->ops[k])];
				for (int j = 0; j < o->ncarried; j++)
					carry_add(x, o->carried[j]);
			}
		} else if (strcmp(x->opcode, "bitcast") == 0) {
			hb_ins *o = &m->ins[ins_index(m, x->ops[0])];
			for (int j = 0; j < o->ncarried; j++)
				carry_add(x, o->carried[j]);
		} else if (strcmp(x->opcode, "tuple") == 0) {
			for (int k = 0; k < x->nops; k++) {
				hb_ins *o = &m->ins[ins_index(m, x->ops[k])];
				for (int j = 0; j < o->ncarried; j++)
					carry_add(x, o->carried[j]);
			}
			carry_add(x, x->bufs[x->nleaf]);
		} else {
			for (int k = 0; k <= x->nleaf; k++)
				carry_add(x, x->bufs[k]);
		}
	}
}

static void compute_lifetimes(hb_module *m)
{
	hb_comp *e = &m->comps[m->entry];
	for (int b = 0; b < m->nbufs; b++) {
		m->bufs[b].last_use = m->ins[m->bufs[b].ins].pos;
		if (m->bufs[b].until_pos > m->bufs[b].last_use)
			m->bufs[b].last_use = m->bufs[b].until_pos;
	}
	for (int i = 0; i < e->n; i++) {
		hb_ins *x = &m->ins[e->ins[i]];
		if (transparent(x))
			continue;
		for (int k = 0; k < x->nops; k++) {
			hb_ins *o = &m->ins[ins_index(m, x->ops[k])];
			for (int j = 0; j < o->ncarried; j++) {
				hb_lbuf *b = &m->bufs[o->carried[j]];
				if (b->last_use < x->pos)
					b->last_use = x->pos;
			}
		}
	}
}

/* ---- trace + placement ---- */

enum { EV_ALLOC = 0, EV_FREE = 1, EV_SHARE = 2 };
typedef struct tev { int kind, buf, share, ins; } tev;

typedef struct live { int64_t off, size; int buf; } live;

static int root_of(const hb_module *m, int b)
{
	while (m->bufs[b].share >= 0)
		b = m->bufs[b].share;
	return b;
}

static int64_t place(live *lv, int nlv, int64_t size, int bump, int64_t *extent)
{
	int64_t need = (size + 255) & ~(int64_t)255, off = 0;
	if (bump) {
		off = *extent;
	} else {
		/* lv sorted by offset */
		for (int i = 0; i < nlv; i++) {
			if (lv[i].off - off >= need)
				break;
			int64_t end = (lv[i].off + lv[i].size + 255) & ~(int64_t)255;
			if (end > off)
				off = end;
		}
	}
	if (off + size > *extent)
		*extent = off + size;
	if (bump)
		*extent = (*extent + 255) & ~(int64_t)255;
	return off;
}

static int cmp_placement(const void *a, const void *b, void *ctx)
{
	const hb_module *m = ctx;
	int x = *(const int *)a, y = *(const int *)b;
	if (m->bufs[x].size != m->bufs[y].size)
		return m->bufs[x].size > m->bufs[y].size ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* XLA's GPU heap (GlobalDecreasingSizeBestFitHeap): regions in decreasing
 * size, each at the lowest 256-aligned offset that overlaps no placed
 * region whose lifetime overlaps its own.  Sharers take their root's offset. */
static int64_t place_best_fit(hb_module *m)
{
	int *order = malloc((size_t)m->nbufs * sizeof *order), n = 0;
	int64_t extent = 0;
	if (!order)
		abort();
	for (int b = 0; b < m->nbufs; b++)
		if (m->bufs[b].role == HB_TEMP && m->bufs[b].share < 0)
			order[n++] = b;
	qsort_r(order, (size_t)n, sizeof *order, cmp_placement, m); /* size desc, then id */
	live *pl = malloc((size_t)(n + 1) * sizeof *pl);
	if (!pl)
		abort();
	for (int i = 0; i < n; i++) {
		hb_lbuf *lb = &m->bufs[order[i]];
		int np = 0;
		for (int j = 0; j < i; j++) {
			hb_lbuf *o = &m->bufs[order[j]];
			if (o->t0 <= lb->t1 && lb->t0 <= o->t1) {
				int k = np++;
				while (k > 0 && pl[k - 1].off > o->offset) {
					pl[k] = pl[k - 1];
					k--;
				}
				pl[k].off = o->offset;
				pl[k].size = o->size;
			}
		}
		int64_t off = 0, need = (lb->size + 255) & ~(int64_t)255;
		for (int k = 0; k < np; k++) {
			if (pl[k].off - off >= need)
				break;
			int64_t end = (pl[k].off + pl[k].size + 255) & ~(int64_t)255;
			if (end > off)
				off = end;
		}
		lb->offset = off;
		if (off + lb->size > extent)
			extent = off + lb->size;
	}
	for (int b = 0; b < m->nbufs; b++)
		if (m->bufs[b].role == HB_TEMP && m->bufs[b].share >= 0)
			m->bufs[b].offset = m->bufs[root_of(m, b)].offset;
	free(pl);
	free(order);
	return extent;
}

/* The temp buffers grouped by key(b) in [0, nkeys) (those outside left
 * out), each group in buffer order: group k is list[start[k]..start[k + 1]).
 * The trace visits the buffers an instruction defines or last uses through
 * these, not through every buffer at every instruction. */
static void group_temps(const hb_module *m, int nkeys, int (*key)(const hb_lbuf *), int **start,
	int **list)
{
	int *st = calloc((size_t)nkeys + 1, sizeof *st), *ls = malloc(((size_t)m->nbufs + 1) * sizeof *ls);
	if (!st || !ls)
		abort();
	for (int b = 0; b < m->nbufs; b++) {
		int k = key(&m->bufs[b]);
		if (m->bufs[b].role == HB_TEMP && k >= 0 && k < nkeys)
			st[k + 1]++;
	}
	for (int k = 0; k < nkeys; k++)
		st[k + 1] += st[k];
	int *fill = malloc(((size_t)nkeys + 1) * sizeof *fill);
	if (!fill)
		abort();
	memcpy(fill, st, ((size_t)nkeys + 1) * sizeof *fill);
	for (int b = 0; b < m->nbufs; b++) {
		int k = key(&m->bufs[b]);
		if (m->bufs[b].role == HB_TEMP && k >= 0 && k < nkeys)
			ls[fill[k]++] = b;
	}
	free(fill);
	*start = st;
	*list = ls;
}

static int defining_ins(const hb_lbuf *b) { return b->ins; }
static int last_use(const hb_lbuf *b) { return b->last_use; }

static int build_trace(hb_module *m, tev **out, hb_stats *st)
{
	hb_comp *e = &m->comps[m->entry];
	tev *ev = NULL;
	int nev = 0, cap = 0;
	int *ref = calloc((size_t)m->nbufs + 1, sizeof(int));
	live *lv = calloc((size_t)m->nbufs + 1, sizeof(live));
	int nlv = 0;
	int64_t heap = 0, peak = 0, extent = 0;
	int *def_start, *defs, *use_start, *uses;
	if (!ref || !lv)
		abort();
	group_temps(m, m->nins, defining_ins, &def_start, &defs);
	group_temps(m, e->n, last_use, &use_start, &uses);

#define PUSH(K, B, S, I) do { \
		if (nev == cap) { cap = cap ? cap * 2 : 256; ev = xrealloc(ev, (size_t)cap * sizeof *ev); } \
		ev[nev].kind = (K); ev[nev].buf = (B); ev[nev].share = (S); ev[nev].ins = (I); nev++; \
	} while (0)

	for (int i = 0; i < e->n; i++) {
		int xi = e->ins[i];
		hb_ins *x = &m->ins[xi];
		for (int g = def_start[xi]; g < def_start[xi + 1]; g++) {
			int b = defs[g];
			hb_lbuf *lb = &m->bufs[b];
			if (lb->share >= 0) {
				int r = root_of(m, b);
				PUSH(EV_SHARE, b, lb->share, xi);
				lb->offset = m->bufs[r].offset;
				if (++ref[r] == 1)
					heap += m->bufs[r].size;
			} else {
				PUSH(EV_ALLOC, b, -1, xi);
				ref[b]++;
				heap += lb->size;
				lb->t0 = nev - 1;
				lb->t1 = 1 << 30;
				lb->offset = place(lv, nlv, lb->size, m->bump, &extent);
				int k = nlv;
				while (k > 0 && lv[k - 1].off > lb->offset) {
					lv[k] = lv[k - 1];
					k--;
				}
				lv[k].off = lb->offset;
				lv[k].size = lb->size;
				lv[k].buf = b;
				nlv++;
				if (heap > peak)
					peak = heap;
			}
		}
		for (int g = use_start[x->pos]; g < use_start[x->pos + 1]; g++) {
			int b = uses[g];
			PUSH(EV_FREE, b, -1, xi);
			int r = root_of(m, b);
			if (--ref[r] == 0) {
				heap -= m->bufs[r].size;
				m->bufs[r].t1 = nev - 1;
				for (int k = 0; k < nlv; k++)
					if (lv[k].buf == r) {
						memmove(&lv[k], &lv[k + 1], (size_t)(nlv - k - 1) * sizeof *lv);
						nlv--;
						break;
					}
			}
		}
	}
#undef PUSH
	if (!m->bump)
		extent = place_best_fit(m);
	free(ref);
	free(lv);
	free(def_start);
	free(defs);
	free(use_start);
	free(uses);
	st->sim_peak = peak;
	st->temp_extent = extent;
	*out = ev;
	return nev;
}

/* ---- encoding ---- */

static void enc_arr(xpf_buf *b, const hb_arr *a)
{
	int64_t mtm[6];
	xpf_buf lay = XPF_BUF_INIT;
	w_i64(b, 2, a->et);
	w_packed(b, 3, a->dims, (size_t)a->nd);
	for (int i = 0; i < a->nd; i++)
		mtm[i] = a->nd - 1 - i;
	w_packed(&lay, 1, mtm, (size_t)a->nd);
	w_msg(b, 5, &lay);
	xpf_buf_release(&lay);
}

static void enc_shape(xpf_buf *b, const hb_ins *x)
{
	if (!x->is_tuple) {
		enc_arr(b, &x->leaf[0]);
		return;
	}
	xpf_buf t = XPF_BUF_INIT;
	w_i64(b, 2, ET_TUPLE);
	for (int i = 0; i < x->nleaf; i++) {
		xpf_buf_reset(&t);
		enc_arr(&t, &x->leaf[i]);
		w_msg(b, 4, &t);
	}
	xpf_buf_release(&t);
}

static void enc_ins(xpf_buf *b, const hb_ins *x)
{
	xpf_buf t = XPF_BUF_INIT;
	w_str(b, 1, x->name);
	w_str(b, 2, x->opcode);
	enc_shape(&t, x);
	w_msg(b, 3, &t);
	xpf_buf_reset(&t);
	w_strz(&t, 1, x->meta.op_type);
	w_strz(&t, 2, x->meta.op_name);
	w_strz(&t, 3, x->meta.file);
	w_i64z(&t, 4, x->meta.line);
	w_i64z(&t, 15, x->frame);
	w_msg(b, 7, &t);
	if (strcmp(x->opcode, "parameter") == 0)
		w_i64(b, 9, x->param_no);
	w_strz(b, 11, x->fusion_kind);
	if (strcmp(x->opcode, "get-tuple-element") == 0)
		w_i64z(b, 13, x->tuple_index);
	w_strz(b, 28, x->cc_target);
	w_i64(b, 35, x->id);
	w_packed(b, 36, x->ops, (size_t)x->nops);
	w_packed(b, 38, x->called, (size_t)x->ncalled);
	if (x->cc_target)
		w_str(b, 43, "{\"operation_queue_id\":\"0\",\"wait_on_operation_queues\":[]}");
	if (x->trip_count > 0) {
		char cfg[96];
		snprintf(cfg, sizeof cfg, "{\"known_trip_count\":{\"n\":\"%lld\"}}",
			 (long long)x->trip_count);
		w_str(b, 43, cfg);
	}
	xpf_buf_release(&t);
}

static void enc_comp(xpf_buf *b, const hb_module *m, const hb_comp *c)
{
	xpf_buf t = XPF_BUF_INIT;
	w_str(b, 1, c->name);
	for (int i = 0; i < c->n; i++) {
		xpf_buf_reset(&t);
		enc_ins(&t, &m->ins[c->ins[i]]);
		w_msg(b, 2, &t);
	}
	w_i64(b, 5, c->id);
	w_i64(b, 6, c->root_id);
	w_bool(b, 7, c->is_fusion);
	xpf_buf_release(&t);
}

static void enc_location(xpf_buf *b, const hb_module *m, int ins, int index)
{
	if (index >= 0) {
		int64_t k = index;
		w_packed(b, 3, &k, 1);
	}
	w_i64(b, 4, m->ins[ins].id);
}

static void enc_frames(xpf_buf *b, const hb_module *m)
{
	xpf_buf t = XPF_BUF_INIT;
	/* file 1 / function 1 / location 1 / frame 1: the caller, train.py main */
	w_str(b, 1, "train.py");
	for (int i = 0; i < m->nframes; i++)
		w_str(b, 1, m->frames[i].file);
	w_str(b, 2, "main");
	for (int i = 0; i < m->nframes; i++)
		w_str(b, 2, m->frames[i].function);
	for (int i = 0; i <= m->nframes; i++) {
		xpf_buf_reset(&t);
		w_i64(&t, 1, i + 1);
		w_i64(&t, 2, i + 1);
		w_i64(&t, 3, i == 0 ? 212 : m->frames[i - 1].line);
		w_i64(&t, 4, i == 0 ? 18 : 12);
		w_msg(b, 3, &t);
	}
	for (int i = 0; i <= m->nframes; i++) {
		xpf_buf_reset(&t);
		w_i64(&t, 1, i + 1);
		w_i64z(&t, 2, i == 0 ? 0 : 1);
		w_msg(b, 4, &t);
	}
	xpf_buf_release(&t);
}

static int out_buffer(const hb_module *m, int out_index)
{
	const hb_ins *r = &m->ins[ins_index(m, m->root_id)];
	const hb_ins *o = &m->ins[ins_index(m, r->ops[out_index])];
	return o->ncarried ? o->carried[0] : -1;
}

static int is_param_aliased(const hb_module *m, int64_t param_no)
{
	for (int i = 0; i < m->nalias; i++)
		if (m->alias[i].param == param_no)
			return 1;
	return 0;
}

void hb_encode(hb_module *m, int64_t temp_size, xpf_buf *out, hb_stats *st)
{
	xpf_buf mod = XPF_BUF_INIT, ba = XPF_BUF_INIT, t = XPF_BUF_INIT, u = XPF_BUF_INIT;
	tev *ev = NULL;
	int nev, idx = 0, temp_index;
	hb_stats local;
	if (!st)
		st = &local;
	memset(st, 0, sizeof *st);

	compute_carried(m);
	compute_lifetimes(m);
	nev = build_trace(m, &ev, st);
	if (temp_size == 0)
		temp_size = st->temp_extent;
	if (temp_size < st->temp_extent) {
		fprintf(stderr, "xplane-mkcapture: %s: temp size %lld below placement extent %lld\n",
			m->name, (long long)temp_size, (long long)st->temp_extent);
		abort();
	}
	m->temp_size = temp_size;
	st->n_instructions = m->nins;

	/* module */
	w_str(&mod, 1, m->name);
	w_str(&mod, 2, m->comps[m->entry].name);
	for (int c = 0; c < m->ncomps; c++)
		if (c != m->entry) {
			xpf_buf_reset(&t);
			enc_comp(&t, m, &m->comps[c]);
			w_msg(&mod, 3, &t);
		}
	xpf_buf_reset(&t);
	enc_comp(&t, m, &m->comps[m->entry]);
	w_msg(&mod, 3, &t);
	/* host program shape */
	xpf_buf_reset(&t);
	for (int i = 0; i < m->nins; i++)
		if (m->ins[i].comp == m->entry && strcmp(m->ins[i].opcode, "parameter") == 0) {
			xpf_buf_reset(&u);
			enc_arr(&u, &m->ins[i].leaf[0]);
			w_msg(&t, 1, &u);
		}
	xpf_buf_reset(&u);
	enc_shape(&u, &m->ins[ins_index(m, m->root_id)]);
	w_msg(&t, 2, &u);
	w_msg(&mod, 4, &t);
	w_i64(&mod, 5, (int64_t)m->program_id);
	w_i64(&mod, 6, m->comps[m->entry].id);
	/* schedule: every non-fusion computation */
	xpf_buf_reset(&t);
	for (int c = 0; c < m->ncomps; c++) {
		if (m->comps[c].is_fusion)
			continue;
		xpf_buf seq = XPF_BUF_INIT, ent = XPF_BUF_INIT;
		int64_t *ids = xrealloc(NULL, (size_t)(m->comps[c].n + 1) * sizeof *ids);
		for (int i = 0; i < m->comps[c].n; i++)
			ids[i] = m->ins[m->comps[c].ins[i]].id;
		w_packed(&seq, 1, ids, (size_t)m->comps[c].n);
		w_i64(&ent, 1, m->comps[c].id);
		w_msg(&ent, 2, &seq);
		w_msg(&t, 1, &ent);
		free(ids);
		xpf_buf_release(&seq);
		xpf_buf_release(&ent);
	}
	w_msg(&mod, 7, &t);
	/* input/output aliasing */
	xpf_buf_reset(&t);
	for (int i = 0; i < m->nalias; i++) {
		int64_t oi = m->alias[i].out;
		xpf_buf_reset(&u);
		w_packed(&u, 1, &oi, 1);
		w_i64z(&u, 2, m->alias[i].param);
		w_i64(&u, 4, 1); /* MAY_ALIAS */
		w_msg(&t, 1, &u);
	}
	if (m->nalias)
		w_msg(&mod, 8, &t);
	xpf_buf_reset(&t);
	enc_frames(&t, m);
	w_msg(&mod, 17, &t);
	w_str(&mod, 21, "gpu");

	/* aliased outputs live in the parameter's allocation */
	for (int i = 0; i < m->nalias; i++) {
		int ob = out_buffer(m, m->alias[i].out);
		for (int p = 0; p < m->nparam_allocs; p++) {
			int pb = m->param_allocs[p];
			if (m->ins[m->bufs[pb].ins].param_no == m->alias[i].param && ob >= 0)
				m->bufs[ob].alloc = -2 - p; /* marker: shares param allocation p */
		}
	}

	/* logical buffers (only those with an allocation: all of ours) */
	for (int b = 0; b < m->nbufs; b++) {
		xpf_buf_reset(&t);
		xpf_buf_reset(&u);
		w_i64(&t, 1, b + 1);
		w_i64(&t, 2, m->bufs[b].size);
		enc_location(&u, m, m->bufs[b].ins, m->bufs[b].index);
		w_msg(&t, 3, &u);
		w_msg(&ba, 1, &t);
	}
	/* buffer aliases: positions of get-tuple-element / bitcast / tuple */
	{
		hb_comp *e = &m->comps[m->entry];
		for (int i = 0; i < e->n; i++) {
			hb_ins *x = &m->ins[e->ins[i]];
			if (!transparent(x))
				continue;
			if (strcmp(x->opcode, "tuple") == 0) {
				for (int k = 0; k < x->nops; k++) {
					hb_ins *o = &m->ins[ins_index(m, x->ops[k])];
					if (o->ncarried != 1)
						continue;
					xpf_buf_reset(&t);
					xpf_buf_reset(&u);
					w_i64(&t, 1, o->carried[0] + 1);
					enc_location(&u, m, e->ins[i], k);
					w_msg(&t, 2, &u);
					w_msg(&ba, 2, &t);
				}
			} else if (x->ncarried == 1) {
				xpf_buf_reset(&t);
				xpf_buf_reset(&u);
				w_i64(&t, 1, x->carried[0] + 1);
				enc_location(&u, m, e->ins[i], -1);
				w_msg(&t, 2, &u);
				w_msg(&ba, 2, &t);
			}
		}
	}
	/* allocations: parameters, outputs, the temp block */
	st->need = temp_size;
	for (int p = 0; p < m->nparam_allocs; p++)
		st->need += m->bufs[m->param_allocs[p]].size;
	for (int o = 0; o < m->nout_allocs; o++)
		st->need += m->bufs[m->out_allocs[o]].size;
	st->heap_peak = st->sim_peak + st->need - temp_size;
	for (int p = 0; p < m->nparam_allocs; p++, idx++) {
		int b = m->param_allocs[p];
		hb_lbuf *lb = &m->bufs[b];
		int64_t pn = m->ins[lb->ins].param_no;
		int aliased = is_param_aliased(m, pn);
		xpf_buf_reset(&t);
		w_i64z(&t, 1, idx);
		w_i64(&t, 2, lb->size);
		w_bool(&t, 5, 1);
		w_i64z(&t, 6, pn);
		w_bool(&t, 7, aliased);
		for (int ob = 0; ob <= m->nbufs; ob++) {
			/* assigned sorted by logical buffer id */
			int which = ob == m->nbufs ? -1 : ob;
			if (which < 0)
				break;
			if (which != b && m->bufs[which].alloc != -2 - p)
				continue;
			xpf_buf_reset(&u);
			w_i64(&u, 1, which + 1);
			w_i64(&u, 3, m->bufs[which].size);
			w_msg(&t, 9, &u);
		}
		w_bool(&t, 13, aliased);
		w_msg(&ba, 3, &t);
	}
	for (int o = 0; o < m->nout_allocs; o++, idx++) {
		int b = m->out_allocs[o];
		hb_lbuf *lb = &m->bufs[b];
		xpf_buf_reset(&t);
		w_i64z(&t, 1, idx);
		w_i64(&t, 2, lb->size);
		w_bool(&t, 7, 1);
		xpf_buf_reset(&u);
		w_i64(&u, 1, b + 1);
		w_i64(&u, 3, lb->size);
		w_msg(&t, 9, &u);
		w_bool(&t, 11, lb->index < 0 && m->ins[lb->ins].is_tuple);
		w_msg(&ba, 3, &t);
	}
	temp_index = idx;
	xpf_buf_reset(&t);
	w_i64(&t, 1, idx);
	w_i64(&t, 2, temp_size);
	for (int b = 0; b < m->nbufs; b++) {
		if (m->bufs[b].role != HB_TEMP)
			continue;
		xpf_buf_reset(&u);
		w_i64(&u, 1, b + 1);
		w_i64z(&u, 2, m->bufs[b].offset);
		w_i64(&u, 3, m->bufs[b].size);
		w_msg(&t, 9, &u);
	}
	w_msg(&ba, 3, &t);
	/* the heap-simulator trace of the temp block */
	xpf_buf_reset(&t);
	for (int i = 0; i < nev; i++) {
		xpf_buf_reset(&u);
		w_i64z(&u, 1, ev[i].kind);
		w_i64(&u, 2, ev[i].buf + 1);
		w_str(&u, 3, m->comps[m->entry].name);
		w_str(&u, 4, m->ins[ev[i].ins].name);
		if (ev[i].kind == EV_SHARE)
			w_i64(&u, 5, ev[i].share + 1);
		w_msg(&t, 1, &u);
	}
	w_bool(&t, 2, 1);
	w_i64z(&t, 3, temp_index);
	w_msg(&ba, 4, &t);

	xpf_buf_reset(out);
	w_msg(out, 1, &mod);
	w_msg(out, 3, &ba);
	free(ev);
	xpf_buf_release(&mod);
	xpf_buf_release(&ba);
	xpf_buf_release(&t);
	xpf_buf_release(&u);
}

int hb_runtime_allocs(const hb_module *m, hb_rt_alloc *out, int max)
{
	int n = 0;
	for (int o = 0; o < m->nout_allocs && n < max; o++) {
		const hb_lbuf *lb = &m->bufs[m->out_allocs[o]];
		const hb_ins *x = &m->ins[lb->ins];
		hb_rt_alloc *a = &out[n++];
		memset(a, 0, sizeof *a);
		a->bytes = lb->size;
		a->is_result = !(lb->index < 0 && x->is_tuple);
		a->output_index = -1;
		if (a->is_result) {
			const hb_ins *r = &m->ins[ins_index(m, m->root_id)];
			for (int k = 0; k < r->nops; k++)
				if (out_buffer(m, k) == m->out_allocs[o])
					a->output_index = k;
			hb_arr_str(&x->leaf[lb->index < 0 ? 0 : lb->index], a->shape, sizeof a->shape);
		}
	}
	if (n < max && m->temp_size > 0) {
		memset(&out[n], 0, sizeof out[n]);
		out[n].bytes = m->temp_size;
		out[n].output_index = -1;
		n++;
	}
	return n;
}

int hb_thunks(const hb_module *m, const char **names, int max)
{
	const hb_comp *e = &m->comps[m->entry];
	int n = 0;
	for (int i = 0; i < e->n && n < max; i++) {
		const hb_ins *x = &m->ins[e->ins[i]];
		if (strcmp(x->opcode, "fusion") == 0 || strcmp(x->opcode, "custom-call") == 0 ||
		    strcmp(x->opcode, "while") == 0 || strcmp(x->opcode, "copy") == 0)
			names[n++] = x->name;
	}
	return n;
}
