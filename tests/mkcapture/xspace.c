#include "xspace.h"

#include <stdlib.h>
#include <string.h>

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static void intern_grow(xp_intern *t)
{
	size_t ns = t->nslots ? t->nslots * 2 : 256;
	int64_t *slots = calloc(ns, sizeof *slots);
	if (!slots)
		abort();
	for (size_t i = 0; i < t->n; i++) {
		size_t j = hash_str(t->names[i]) & (ns - 1);
		while (slots[j])
			j = (j + 1) & (ns - 1);
		slots[j] = (int64_t)i + 1;
	}
	free(t->slots);
	t->slots = slots;
	t->nslots = ns;
}

int64_t xp_intern_id(xp_intern *t, const char *name)
{
	if ((t->n + 1) * 2 > t->nslots)
		intern_grow(t);
	size_t j = hash_str(name) & (t->nslots - 1);
	while (t->slots[j]) {
		if (strcmp(t->names[t->slots[j] - 1], name) == 0)
			return t->slots[j];
		j = (j + 1) & (t->nslots - 1);
	}
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 64;
		t->names = realloc(t->names, t->cap * sizeof *t->names);
		if (!t->names)
			abort();
	}
	t->names[t->n] = strdup(name);
	if (!t->names[t->n])
		abort();
	t->n++;
	t->slots[j] = (int64_t)t->n;
	return (int64_t)t->n;
}

void xp_intern_release(xp_intern *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->names[i]);
	free(t->names);
	free(t->slots);
	memset(t, 0, sizeof *t);
}

void xp_plane_init(xp_plane *p, int64_t id, const char *name)
{
	memset(p, 0, sizeof *p);
	p->id = id;
	p->name = name;
}

void xp_plane_release(xp_plane *p)
{
	xp_intern_release(&p->ev);
	xp_intern_release(&p->st);
	xpf_buf_release(&p->stats);
	xpf_buf_release(&p->ev_extra);
}

static void plane_stat_hdr(xp_plane *p, xpf_buf *m, const char *name)
{
	w_i64(m, 1, xp_intern_id(&p->st, name));
}

void xp_plane_stat_u64(xp_plane *p, const char *name, uint64_t v)
{
	xpf_buf m = XPF_BUF_INIT;
	plane_stat_hdr(p, &m, name);
	w_u64(&m, 3, v);
	w_msg(&p->stats, 6, &m);
	xpf_buf_release(&m);
}

void xp_plane_stat_i64(xp_plane *p, const char *name, int64_t v)
{
	xpf_buf m = XPF_BUF_INIT;
	plane_stat_hdr(p, &m, name);
	w_i64(&m, 4, v);
	w_msg(&p->stats, 6, &m);
	xpf_buf_release(&m);
}

void xp_plane_stat_str(xp_plane *p, const char *name, const char *v)
{
	xpf_buf m = XPF_BUF_INIT;
	plane_stat_hdr(p, &m, name);
	w_str(&m, 5, v);
	w_msg(&p->stats, 6, &m);
	xpf_buf_release(&m);
}

void xp_plane_stat_raw_i64(xp_plane *p, int64_t id, int64_t v)
{
	xpf_buf m = XPF_BUF_INIT;
	w_i64(&m, 1, id);
	w_i64(&m, 4, v);
	w_msg(&p->stats, 6, &m);
	xpf_buf_release(&m);
}

void xp_plane_hlo_proto(xp_plane *p, const char *name, const xpf_buf *hlo, uint64_t program_id)
{
	int64_t id = xp_intern_id(&p->ev, name);
	xpf_buf md = XPF_BUF_INIT, st = XPF_BUF_INIT, ent = XPF_BUF_INIT;

	w_i64(&md, 1, id);
	w_str(&md, 2, name);
	w_str(&md, 4, name);
	w_i64(&st, 1, xp_intern_id(&p->st, "Hlo Proto"));
	w_bytes(&st, 6, hlo->data, hlo->len);
	w_msg(&md, 5, &st);
	xpf_buf_reset(&st);
	w_i64(&st, 1, xp_intern_id(&p->st, "program_id"));
	w_u64(&st, 3, program_id);
	w_msg(&md, 5, &st);
	w_i64(&ent, 1, id);
	w_msg(&ent, 2, &md);
	w_msg(&p->ev_extra, 4, &ent);
	p->ev_extra_n = id;
	xpf_buf_release(&md);
	xpf_buf_release(&st);
	xpf_buf_release(&ent);
}

int64_t xp_ev_meta(xp_emit *e, const char *name)
{
	return xp_intern_id(&e->plane->ev, name);
}

int64_t xp_st_meta(xp_emit *e, const char *name)
{
	return xp_intern_id(&e->plane->st, name);
}

void xp_ev_begin_id(xp_emit *e, int64_t meta, int64_t t_ps, int64_t dur_ps)
{
	if (e->nev == e->cap) {
		e->cap = e->cap ? e->cap * 2 : 256;
		e->evs = realloc(e->evs, e->cap * sizeof *e->evs);
		if (!e->evs)
			abort();
	}
	xp_ev *ev = &e->evs[e->nev];
	ev->meta = meta;
	ev->t_ps = t_ps;
	ev->dur_ps = dur_ps;
	ev->st_off = e->arena.len;
	ev->st_len = 0;
	ev->seq = e->nev;
	e->nev++;
}

void xp_ev_begin(xp_emit *e, const char *name, int64_t t_ps, int64_t dur_ps)
{
	xp_ev_begin_id(e, xp_intern_id(&e->plane->ev, name), t_ps, dur_ps);
}

/* One XStat (XEvent field 4): metadata_id, then the value field `vf` with
 * wire type wt: a varint v, 8 bytes of v, or n bytes at p.  Counting runs
 * only add up the length. */
static void st_put(xp_emit *e, int64_t id, int vf, int wt, uint64_t v, const void *p, size_t n)
{
	size_t vlen = wt == WT_VARINT ? w_vlen(v) : wt == WT_I64 ? 8 : w_vlen(n) + n;
	size_t body = 1 + w_vlen((uint64_t)id) + 1 + vlen;
	size_t total = 1 + w_vlen(body) + body;
	xp_ev *ev = &e->evs[e->nev - 1];
	ev->st_len += total;
	if (e->counting)
		return;
	xpf_buf_reserve(&e->arena, total);
	unsigned char *q = (unsigned char *)e->arena.data + e->arena.len;
	*q++ = (4 << 3) | WT_LEN;
	q = w_pvarint(q, body);
	*q++ = (1 << 3) | WT_VARINT;
	q = w_pvarint(q, (uint64_t)id);
	*q++ = (unsigned char)((vf << 3) | wt);
	if (wt == WT_VARINT) {
		q = w_pvarint(q, v);
	} else if (wt == WT_I64) {
		for (int i = 0; i < 8; i++)
			*q++ = (unsigned char)(v >> (8 * i));
	} else {
		q = w_pvarint(q, n);
		memcpy(q, p, n);
		q += n;
	}
	e->arena.len += total;
}

void xp_st_i64_id(xp_emit *e, int64_t stat, int64_t v) { st_put(e, stat, 4, WT_VARINT, (uint64_t)v, NULL, 0); }
void xp_st_u64_id(xp_emit *e, int64_t stat, uint64_t v) { st_put(e, stat, 3, WT_VARINT, v, NULL, 0); }
void xp_st_ref_id(xp_emit *e, int64_t stat, int64_t ref) { st_put(e, stat, 7, WT_VARINT, (uint64_t)ref, NULL, 0); }

void xp_st_dbl_id(xp_emit *e, int64_t stat, double v)
{
	uint64_t u;
	memcpy(&u, &v, 8);
	st_put(e, stat, 2, WT_I64, u, NULL, 0);
}

void xp_st_i64(xp_emit *e, const char *name, int64_t v) { xp_st_i64_id(e, xp_st_meta(e, name), v); }
void xp_st_u64(xp_emit *e, const char *name, uint64_t v) { xp_st_u64_id(e, xp_st_meta(e, name), v); }
void xp_st_dbl(xp_emit *e, const char *name, double v) { xp_st_dbl_id(e, xp_st_meta(e, name), v); }

void xp_st_ref(xp_emit *e, const char *name, const char *v)
{
	int64_t ref = xp_intern_id(&e->plane->st, v); /* the value first, as before */
	xp_st_ref_id(e, xp_st_meta(e, name), ref);
}

void xp_st_str(xp_emit *e, const char *name, const char *v)
{
	st_put(e, xp_st_meta(e, name), 5, WT_LEN, 0, v, strlen(v));
}

static int ev_cmp(const void *a, const void *b)
{
	const xp_ev *x = a, *y = b;
	if (x->t_ps != y->t_ps)
		return x->t_ps < y->t_ps ? -1 : 1;
	if (x->dur_ps != y->dur_ps)
		return x->dur_ps > y->dur_ps ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static size_t ev_body_len(const xp_emit *e, const xp_ev *ev)
{
	size_t n = 1 + w_vlen((uint64_t)ev->meta) + 1 + w_vlen((uint64_t)(ev->t_ps - e->base_ps)) + ev->st_len;
	if (ev->dur_ps)
		n += 1 + w_vlen((uint64_t)ev->dur_ps);
	return n;
}

void xp_flush(xp_emit *e)
{
	if (e->counting) {
		/* lengths do not depend on the order */
		for (size_t i = 0; i < e->nev; i++) {
			size_t body = ev_body_len(e, &e->evs[i]);
			e->sink->n += 1 + w_vlen(body) + body;
		}
		goto done;
	}
	if (e->reverse && !e->final)
		return; /* the whole line is collected, then written backwards */
	for (size_t i = 1; i < e->nev; i++)
		if (ev_cmp(&e->evs[i - 1], &e->evs[i]) > 0) {
			qsort(e->evs, e->nev, sizeof *e->evs, ev_cmp);
			break;
		}
	for (size_t k = 0; k < e->nev; k++) {
		const xp_ev *ev = &e->evs[e->reverse ? e->nev - 1 - k : k];
		size_t body = ev_body_len(e, ev);
		unsigned char *q = sink_reserve(e->sink, 1 + 10 + body);
		*q++ = (4 << 3) | WT_LEN;
		q = w_pvarint(q, body);
		*q++ = (1 << 3) | WT_VARINT;
		q = w_pvarint(q, (uint64_t)ev->meta);
		*q++ = (2 << 3) | WT_VARINT;
		q = w_pvarint(q, (uint64_t)(ev->t_ps - e->base_ps));
		if (ev->dur_ps) {
			*q++ = (3 << 3) | WT_VARINT;
			q = w_pvarint(q, (uint64_t)ev->dur_ps);
		}
		if (ev->st_len) {
			memcpy(q, e->arena.data + ev->st_off, ev->st_len);
			q += ev->st_len;
		}
		sink_commit(e->sink, q);
	}
done:
	e->events_total += e->nev;
	e->nev = 0;
	e->arena.len = 0;
}

static void line_header(xpf_buf *h, const xp_line *l)
{
	w_i64z(h, 1, l->id);
	w_strz(h, 2, l->name);
	w_i64z(h, 3, l->timestamp_ns);
}

static void line_trailer(xpf_buf *h, const xp_line *l)
{
	w_i64z(h, 9, l->duration_ps);
}

static uint64_t run_line(xp_plane *p, xp_line *l, w_sink *s)
{
	xp_emit e;
	memset(&e, 0, sizeof e);
	e.plane = p;
	e.sink = s;
	e.base_ps = l->timestamp_ns * 1000;
	e.counting = s->f == NULL;
	e.reverse = l->reverse;
	if (l->gen)
		l->gen(l->ctx, &e);
	e.final = 1;
	xp_flush(&e);
	free(e.evs);
	xpf_buf_release(&e.arena);
	xpf_buf_release(&e.scratch);
	return e.events_total;
}

static void metadata_maps(xp_plane *p, xpf_buf *out)
{
	xpf_buf md = XPF_BUF_INIT, ent = XPF_BUF_INIT;
	xpf_buf_add(out, p->ev_extra.data, p->ev_extra.len);
	for (size_t i = (size_t)p->ev_extra_n; i < p->ev.n; i++) {
		xpf_buf_reset(&md);
		xpf_buf_reset(&ent);
		w_i64(&md, 1, (int64_t)i + 1);
		w_str(&md, 2, p->ev.names[i]);
		w_i64(&ent, 1, (int64_t)i + 1);
		w_msg(&ent, 2, &md);
		w_msg(out, 4, &ent);
	}
	for (size_t i = 0; i < p->st.n; i++) {
		xpf_buf_reset(&md);
		xpf_buf_reset(&ent);
		w_i64(&md, 1, (int64_t)i + 1);
		w_str(&md, 2, p->st.names[i]);
		w_i64(&ent, 1, (int64_t)i + 1);
		w_msg(&ent, 2, &md);
		w_msg(out, 5, &ent);
	}
	xpf_buf_release(&md);
	xpf_buf_release(&ent);
}

uint64_t xp_write_plane(w_sink *out, xp_plane *p, xp_line *lines, size_t nlines)
{
	xpf_buf head = XPF_BUF_INIT, tmp = XPF_BUF_INIT, meta = XPF_BUF_INIT;
	uint64_t total = 0, nev = 0;

	/* Counting run: line body lengths, and every name interned. */
	for (size_t i = 0; i < nlines; i++) {
		w_sink count = { 0 };
		run_line(p, &lines[i], &count);
		xpf_buf_reset(&tmp);
		line_header(&tmp, &lines[i]);
		line_trailer(&tmp, &lines[i]);
		lines[i].body_len = tmp.len + count.n;
		total += w_len_field_size(3, lines[i].body_len);
	}
	w_i64z(&head, 1, p->id);
	w_str(&head, 2, p->name);
	metadata_maps(p, &meta);
	total += head.len + meta.len + p->stats.len;

	xpf_buf_reset(&tmp);
	w_len_hdr(&tmp, 1, total);
	sink_buf(out, &tmp);
	sink_buf(out, &head);
	for (size_t i = 0; i < nlines; i++) {
		xpf_buf_reset(&tmp);
		w_len_hdr(&tmp, 3, lines[i].body_len);
		line_header(&tmp, &lines[i]);
		sink_buf(out, &tmp);
		nev += run_line(p, &lines[i], out);
		xpf_buf_reset(&tmp);
		line_trailer(&tmp, &lines[i]);
		sink_buf(out, &tmp);
	}
	/* Names interned during the writing run would break the prefixes. */
	xpf_buf_reset(&tmp);
	metadata_maps(p, &tmp);
	if (tmp.len != meta.len)
		abort();
	sink_buf(out, &meta);
	sink_buf(out, &p->stats);
	xpf_buf_release(&head);
	xpf_buf_release(&tmp);
	xpf_buf_release(&meta);
	return nev;
}
