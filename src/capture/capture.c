/* Capture decoding.  See capture.h for the model (mapped once, indexed
 * lazily, streamed).  Only HloProtos go through protobuf-c; the XSpace is
 * read with our own bounded wire reader (wire.c) so that a 1 GiB capture is
 * never materialised as structs and every error can say where it is. */
#include "capture/capture.h"

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

#include "capture/wire.h"
#include "common/alloc.h"
#include "common/intern.h"
#include "common/lazy.h"

#define MAX_SHAPE_DEPTH 64

struct xpf_stat_md {
	int64_t id;
	const char *name;
	uint64_t offset;   /* of its map entry in the file (for messages) */
};

struct xpf_capture {
	char *label;
	const uint8_t *data;
	size_t size;
	void *map;        /* non-NULL when we mapped the file */
	size_t map_len;
	int fd;           /* the file, for xpf_window reads; -1: none */
	atomic_uint shrunk; /* faults past the file's new end (SIGBUS) */
	bool hlo_only;

	size_t nplanes;
	xpf_plane_head *heads;
	xpf_lazy *planes; /* nplanes: xpf_plane * */
	xpf_lazy *firsts; /* nplanes: xpf_plane * without its lines
			     (xpf_capture_plane_meta), made when the plane's
			     own index is not */

	size_t nstr[5];
	char **str[5];

	size_t nmodules;
	xpf_module_ref *modules;
	xpf_lazy *hlos;   /* nmodules: Xla__HloProto * */
};

/* ---- small helpers ---------------------------------------------------- */

bool xpf_str_eq(xpf_str s, const char *lit)
{
	size_t n = strlen(lit);
	return s.n == n && memcmp(s.p, lit, n) == 0;
}

char *xpf_str_dup(xpf_str s)
{
	return xpf_strndup(s.p, s.n);
}

static uint64_t off_of(const xpf_capture *c, const uint8_t *p)
{
	return (uint64_t)(p - c->data);
}

/* "plane 3 '/host:CPU'" */
static void plane_where(const xpf_capture *c, size_t i, char *out, size_t n)
{
	const char *name = i < c->nplanes && c->heads[i].name ? c->heads[i].name : "";
	snprintf(out, n, "plane %zu '%s'", i, name);
}

static int wire_fail(xpf_error *err, const xpf_capture *c, const char *where, int st,
		     const wire_field *f, const uint8_t *at)
{
	if (st == WIRE_PAST_END && f->data) {
		bool past_file = f->len > (size_t)(c->data + c->size - f->data);
		return xpf_fail(err, XPF_EMALFORMED,
				"%s: malformed capture: %s: field %u: length %zu past end of %s (byte %llu)",
				c->label, where, f->num, f->len,
				past_file ? "file" : "its message",
				(unsigned long long)off_of(c, f->at));
	}
	return xpf_fail(err, XPF_EMALFORMED, "%s: malformed capture: %s: %s (byte %llu)", c->label,
			where, wire_strerror(st), (unsigned long long)off_of(c, at));
}

/* ---- stats ------------------------------------------------------------ */

bool xpf_stat_i64(const xpf_stat *s, int64_t *out)
{
	switch (s->kind) {
	case XPF_STAT_I64: *out = s->i; return true;
	case XPF_STAT_U64:
		if (s->u > INT64_MAX)
			return false;
		*out = (int64_t)s->u;
		return true;
	case XPF_STAT_DOUBLE:
		if (!(s->d >= -9.2e18 && s->d <= 9.2e18) || s->d != (double)(int64_t)s->d)
			return false;
		*out = (int64_t)s->d;
		return true;
	default: return false;
	}
}

bool xpf_stat_u64(const xpf_stat *s, uint64_t *out)
{
	switch (s->kind) {
	case XPF_STAT_U64: *out = s->u; return true;
	case XPF_STAT_I64:
		if (s->i < 0)
			return false;
		*out = (uint64_t)s->i;
		return true;
	case XPF_STAT_DOUBLE:
		if (!(s->d >= 0 && s->d <= 1.8e19) || s->d != (double)(uint64_t)s->d)
			return false;
		*out = (uint64_t)s->d;
		return true;
	default: return false;
	}
}

bool xpf_stat_f64(const xpf_stat *s, double *out)
{
	switch (s->kind) {
	case XPF_STAT_DOUBLE: *out = s->d; return true;
	case XPF_STAT_I64: *out = (double)s->i; return true;
	case XPF_STAT_U64: *out = (double)s->u; return true;
	default: return false;
	}
}

bool xpf_stat_text(const xpf_stat *s, xpf_str *out)
{
	if (s->kind == XPF_STAT_STR || s->kind == XPF_STAT_REF) {
		*out = s->s;
		return true;
	}
	return false;
}

/* Event and stat metadata are arrays of records that start with their
 * int64 id, sorted by it: one comparison and one search serve both. */
static int64_t leading_id(const void *rec)
{
	int64_t id;
	memcpy(&id, rec, sizeof id);
	return id;
}

static int cmp_leading_id(const void *a, const void *b)
{
	int64_t x = leading_id(a), y = leading_id(b);
	return x < y ? -1 : x > y;
}

static const void *find_id(const void *base, size_t n, size_t size, int64_t id)
{
	const char *v = base;
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (leading_id(v + mid * size) < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && leading_id(v + lo * size) == id ? v + lo * size : NULL;
}

/* A direct table over the ids of n records (sorted by id) when they are
 * dense enough: at most 4 slots per record plus 1024. */
static void id_table_build(struct xpf_id_table *t, const void *base, size_t n, size_t size)
{
	t->slot = NULL;
	t->n = 0;
	t->lo = 0;
	if (n == 0 || n >= UINT32_MAX)
		return;
	const char *v = base;
	int64_t lo = leading_id(v), hi = leading_id(v + (n - 1) * size);
	uint64_t span = (uint64_t)hi - (uint64_t)lo;
	if (hi < lo || span >= 4 * (uint64_t)n + 1024)
		return;
	t->lo = lo;
	t->n = (size_t)span + 1;
	t->slot = xpf_calloc(t->n, sizeof *t->slot);
	for (size_t i = 0; i < n; i++)
		t->slot[(uint64_t)leading_id(v + i * size) - (uint64_t)lo] = (uint32_t)i + 1;
}

static inline const void *id_lookup(const struct xpf_id_table *t, const void *base, size_t n,
				    size_t size, int64_t id)
{
	if (t->slot) {
		uint64_t i = (uint64_t)id - (uint64_t)t->lo;
		if (i >= t->n || t->slot[i] == 0)
			return NULL;
		return (const char *)base + (size_t)(t->slot[i] - 1) * size;
	}
	return find_id(base, n, size, id);
}

/* Inlined where millions of events are read. */
static inline const xpf_event_md *event_md(const xpf_plane *p, int64_t id)
{
	return id_lookup(&p->event_md_by_id, p->event_md, p->n_event_md, sizeof *p->event_md, id);
}

const xpf_event_md *xpf_plane_event_md(const xpf_plane *p, int64_t id)
{
	return event_md(p, id);
}

/* Inlined where millions of events and stats are read. */
static inline const char *stat_name(const xpf_plane *p, int64_t id)
{
	const struct xpf_stat_md *m =
		id_lookup(&p->stat_md_by_id, p->stat_md, p->n_stat_md, sizeof *p->stat_md, id);
	return m ? m->name : NULL;
}

const char *xpf_plane_stat_name(const xpf_plane *p, int64_t id)
{
	return stat_name(p, id);
}

int64_t xpf_plane_stat_id(const xpf_plane *p, const char *name)
{
	for (size_t i = 0; i < p->n_stat_md; i++)
		if (strcmp(p->stat_md[i].name, name) == 0)
			return p->stat_md[i].id;
	return -1;
}

static void stat_iter_init(const xpf_plane *p, const uint8_t *msg, uint64_t off, size_t len,
			   uint32_t field, xpf_stat_iter *it)
{
	it->plane = p;
	it->p = msg;
	it->end = msg + len;
	it->base = msg;
	it->base_off = off;
	it->field = field;
	it->where = NULL;
	it->line = it->event = -1;
	it->next_index = 0;
}

void xpf_stats_of_event(const xpf_plane *p, const xpf_event *ev, xpf_stat_iter *it)
{
	stat_iter_init(p, ev->msg, ev->offset, ev->msg_len, 4, it);
	it->where = "event";
	it->line = (long)ev->line;
	it->event = (long)ev->index;
}

void xpf_stats_of_plane(const xpf_plane *p, xpf_stat_iter *it)
{
	stat_iter_init(p, p->cap->data + p->offset, p->offset, (size_t)p->length, 6, it);
	it->where = "plane stats";
}

void xpf_stats_of_event_md(const xpf_plane *p, const xpf_event_md *md, xpf_stat_iter *it)
{
	stat_iter_init(p, p->cap->data + md->offset, md->offset, (size_t)md->length, 5, it);
	it->where = "event metadata";
}

static void stat_where(const xpf_stat_iter *it, size_t idx, char *out, size_t n)
{
	plane_where(it->plane->cap, it->plane->index, out, n);
	size_t l = strlen(out);
	if (it->line >= 0)
		snprintf(out + l, n - l, ", line %ld, event %ld, stat %zu", it->line, it->event, idx);
	else
		snprintf(out + l, n - l, ", %s, stat %zu", it->where ? it->where : "stats", idx);
}

static int stats_next(xpf_stat_iter *it, xpf_stat *st, xpf_error *err)
{
	const xpf_plane *pl = it->plane;
	const xpf_capture *c = pl->cap;
	char where[600];
	wire_field f;
	int rc;

	for (;;) {
		const uint8_t *at = it->p;
		rc = wire_next(&it->p, it->end, &f);
		if (rc == WIRE_END)
			return 0;
		if (rc != WIRE_OK) {
			stat_where(it, it->next_index, where, sizeof where);
			wire_fail(err, c, where, rc, &f, at);
			return -1;
		}
		if (f.num == it->field && f.wt == WT_LEN)
			break;
	}
	size_t idx = it->next_index++;
	memset(st, 0, sizeof *st);
	st->name = "";
	const uint8_t *q = f.data, *e = f.data + f.len;
	wire_field g;
	bool has_md = false;
	while ((rc = wire_next(&q, e, &g)) == WIRE_OK) {
		switch (g.num) {
		case 1: st->metadata_id = (int64_t)g.v; has_md = true; break;
		case 2: if (g.wt == WT_I64) { memcpy(&st->d, &g.v, 8); st->kind = XPF_STAT_DOUBLE; } break;
		case 3: if (g.wt == WT_VARINT) { st->u = g.v; st->kind = XPF_STAT_U64; } break;
		case 4: if (g.wt == WT_VARINT) { st->i = (int64_t)g.v; st->kind = XPF_STAT_I64; } break;
		case 5: if (g.wt == WT_LEN) { st->s.p = (const char *)g.data; st->s.n = g.len; st->kind = XPF_STAT_STR; } break;
		case 6: if (g.wt == WT_LEN) { st->s.p = (const char *)g.data; st->s.n = g.len; st->kind = XPF_STAT_BYTES; } break;
		case 7: if (g.wt == WT_VARINT) { st->u = g.v; st->kind = XPF_STAT_REF; } break;
		}
	}
	/* `where` is formatted only on failure: this runs once per stat. */
	if (rc != WIRE_END) {
		stat_where(it, idx, where, sizeof where);
		wire_fail(err, c, where, rc, &g, q);
		return -1;
	}
	(void)has_md;
	const char *nm = xpf_plane_stat_name(pl, st->metadata_id);
	if (nm == NULL) {
		stat_where(it, idx, where, sizeof where);
		xpf_fail(err, XPF_EMALFORMED, "%s: malformed capture: %s: dangling stat metadata id %lld (byte %llu)",
			 c->label, where, (long long)st->metadata_id,
			 (unsigned long long)off_of(c, f.data));
		return -1;
	}
	st->name = nm;
	if (st->kind == XPF_STAT_REF) {
		const char *v = st->u <= INT64_MAX ? xpf_plane_stat_name(pl, (int64_t)st->u) : NULL;
		if (v == NULL) {
			stat_where(it, idx, where, sizeof where);
			xpf_fail(err, XPF_EMALFORMED,
				 "%s: malformed capture: %s '%s': dangling ref_value %llu (byte %llu)", c->label, where,
				 nm, (unsigned long long)st->u, (unsigned long long)off_of(c, f.data));
			return -1;
		}
		st->s.p = v;
		st->s.n = strlen(v);
	}
	return 1;
}

/* Point a stat iterator reading through a window at the mapping instead. */
static void stats_to_map(xpf_stat_iter *it)
{
	const uint8_t *data = it->plane->cap->data;
	const uint8_t *p = data + it->base_off + (uint64_t)(it->p - it->base);
	const uint8_t *end = data + it->base_off + (uint64_t)(it->end - it->base);
	it->p = p;
	it->end = end;
	it->base = data + it->base_off;
}

int xpf_stats_next(xpf_stat_iter *it, xpf_stat *st, xpf_error *err)
{
	if (it->base == it->plane->cap->data + it->base_off)
		return stats_next(it, st, err);
	/* Through a window: a failure is worded (offsets) from the mapping. */
	xpf_stat_iter save = *it;
	int rc = stats_next(it, st, NULL);
	if (rc >= 0)
		return rc;
	*it = save;
	stats_to_map(it);
	return stats_next(it, st, err);
}

static int find_stat(xpf_stat_iter *it, const char *name, xpf_stat *out, xpf_error *err)
{
	int rc;
	while ((rc = xpf_stats_next(it, out, err)) == 1)
		if (strcmp(out->name, name) == 0)
			return 1;
	return rc;
}

int xpf_event_stat(const xpf_plane *p, const xpf_event *ev, const char *name, xpf_stat *out,
		   xpf_error *err)
{
	xpf_stat_iter it;
	xpf_stats_of_event(p, ev, &it);
	return find_stat(&it, name, out, err);
}

int xpf_plane_stat(const xpf_plane *p, const char *name, xpf_stat *out, xpf_error *err)
{
	xpf_stat_iter it;
	xpf_stats_of_plane(p, &it);
	return find_stat(&it, name, out, err);
}

/* ---- events ----------------------------------------------------------- */

void xpf_events_begin(const xpf_plane *p, size_t line, xpf_event_iter *it)
{
	it->plane = p;
	it->line = line;
	it->next_index = 0;
	it->w = NULL;
	it->line_end = 0;
	if (line < p->nlines) {
		it->p = p->cap->data + p->lines[line].offset;
		it->end = it->p + p->lines[line].length;
		it->line_end = p->lines[line].offset + p->lines[line].length;
	} else {
		it->p = it->end = NULL;
	}
}

void xpf_window_release(xpf_window *w)
{
	free(w->buf);
	memset(w, 0, sizeof *w);
}

#define WINDOW_CAP ((size_t)1 << 20)

/* Read the capture's bytes [off, end) into w, as many as fit (end: the
 * end of the plane being walked, whose next bytes are read next, mostly):
 * false when there is no file or it cannot be read (the caller uses the
 * mapping). */
static bool window_fill(const xpf_capture *c, xpf_window *w, uint64_t off, uint64_t end)
{
	if (c->fd < 0 || off > end || end > c->size)
		return false;
	if (w->buf == NULL) {
		w->cap = WINDOW_CAP;
		w->buf = xpf_malloc(w->cap);
	}
	size_t n = end - off < w->cap ? (size_t)(end - off) : w->cap, got = 0;
	while (got < n) {
		ssize_t r = pread(c->fd, w->buf + got, n - got, (off_t)(off + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			w->len = 0;
			return false;
		}
		got += (size_t)r;
	}
	w->off = off;
	w->len = n;
	return true;
}

/* The bytes [off, off + n) of the capture through w, refilled from off when
 * they are not all there; NULL when they cannot be (n over the window). */
static const uint8_t *window_at(const xpf_capture *c, xpf_window *w, uint64_t off, size_t n,
				uint64_t end)
{
	if (w->buf && off >= w->off && off - w->off + n <= w->len)
		return w->buf + (off - w->off);
	if (!window_fill(c, w, off, end) || n > w->len)
		return NULL;
	return w->buf;
}

static uint64_t iter_off(const xpf_event_iter *it)
{
	return it->w->off + (uint64_t)(it->p - it->w->buf);
}

/* Leave the window: the rest of the line through the mapping. */
static void events_to_map(xpf_event_iter *it)
{
	const uint8_t *data = it->plane->cap->data;
	it->p = data + iter_off(it);
	it->end = data + it->line_end;
	it->w = NULL;
}

/* Refill the window from the iterator's position; false: no progress
 * possible (the window already starts there, or no file). */
static bool events_refill(xpf_event_iter *it)
{
	const xpf_plane *p = it->plane;
	uint64_t cur = iter_off(it), left = p->offset + p->length - cur;
	if (cur == it->w->off && it->w->len == (left < it->w->cap ? left : it->w->cap))
		return false;
	if (!window_fill(p->cap, it->w, cur, p->offset + p->length))
		return false;
	it->p = it->w->buf;
	it->end = it->w->buf + (it->w->len < it->line_end - cur ? it->w->len : it->line_end - cur);
	return true;
}

void xpf_events_begin_window(const xpf_plane *p, size_t line, xpf_event_iter *it, xpf_window *w)
{
	xpf_events_begin(p, line, it);
	if (it->p == NULL || p->cap->fd < 0)
		return;
	uint64_t off = p->lines[line].offset;
	if (!window_at(p->cap, w, off, 0, p->offset + p->length))
		return;
	it->w = w;
	it->p = w->buf + (off - w->off);
	uint64_t wend = w->off + w->len < it->line_end ? w->off + w->len : it->line_end;
	it->end = w->buf + (wend - w->off);
}

static void event_where(const xpf_event_iter *it, size_t idx, char *out, size_t n)
{
	plane_where(it->plane->cap, it->plane->index, out, n);
	size_t l = strlen(out);
	snprintf(out + l, n - l, ", line %zu, event %zu", it->line, idx);
}

/* floor(a / 1000) for signed a */
static int64_t floor_div1000(int64_t a)
{
	int64_t q = a / 1000;
	if (a % 1000 < 0)
		q--;
	return q;
}

int xpf_events_next(xpf_event_iter *it, xpf_event *ev, xpf_error *err)
{
	const xpf_plane *pl = it->plane;
	const xpf_capture *c = pl->cap;
	char where[400];
	wire_field f;
	int rc;

	if (it->p == NULL)
		return 0;
	if (it->w)
		events_to_map(it);
	for (;;) {
		const uint8_t *at = it->p;
		rc = wire_next(&it->p, it->end, &f);
		if (rc == WIRE_END)
			return 0;
		if (rc != WIRE_OK) {
			event_where(it, it->next_index, where, sizeof where);
			wire_fail(err, c, where, rc, &f, at);
			it->p = NULL;
			return -1;
		}
		if (f.num == 4 && f.wt == WT_LEN)
			break;
	}
	memset(ev, 0, sizeof *ev);
	ev->index = it->next_index++;
	ev->line = it->line;
	ev->msg = f.data;
	ev->msg_len = f.len;
	ev->offset = off_of(c, f.data);
	const uint8_t *q = f.data, *e = f.data + f.len;
	wire_field g;
	while ((rc = wire_next(&q, e, &g)) == WIRE_OK) {
		if (g.wt != WT_VARINT)
			continue;
		switch (g.num) {
		case 1: ev->metadata_id = (int64_t)g.v; break;
		case 2: ev->offset_ps = (int64_t)g.v; break;
		case 3: ev->duration_ps = (int64_t)g.v; break;
		case 5: ev->num_occurrences = (int64_t)g.v; break;
		}
	}
	if (rc != WIRE_END) {
		event_where(it, ev->index, where, sizeof where);
		wire_fail(err, c, where, rc, &g, q);
		it->p = NULL;
		return -1;
	}
	const xpf_event_md *md = xpf_plane_event_md(pl, ev->metadata_id);
	if (md == NULL) {
		event_where(it, ev->index, where, sizeof where);
		xpf_fail(err, XPF_EMALFORMED, "%s: malformed capture: %s: dangling event metadata id %lld (byte %llu)",
			 c->label, where, (long long)ev->metadata_id,
			 (unsigned long long)ev->offset);
		it->p = NULL;
		return -1;
	}
	ev->name = md->name;
	int64_t base = pl->lines[it->line].timestamp_ns;
	int64_t end_ps;
	if (ev->duration_ps < 0 || __builtin_add_overflow(ev->offset_ps, ev->duration_ps, &end_ps) ||
	    __builtin_add_overflow(base, floor_div1000(ev->offset_ps), &ev->start_ns) ||
	    __builtin_add_overflow(base, floor_div1000(end_ps), &ev->end_ns)) {
		event_where(it, ev->index, where, sizeof where);
		xpf_fail(err, XPF_EMALFORMED,
			 "%s: malformed capture: %s: time out of range (line base %lld ns, offset %lld ps, duration %lld ps) (byte %llu)",
			 c->label, where, (long long)base, (long long)ev->offset_ps,
			 (long long)ev->duration_ps, (unsigned long long)ev->offset);
		it->p = NULL;
		return -1;
	}
	return 1;
}

/* Lines repeat a few names (threads, streams) hundreds of thousands of
 * times: each is kept once per plane.  A NUL-terminated copy of s[0..n)
 * ("" for NULL), owned by p. */
static const char *plane_name(xpf_plane *p, const uint8_t *s, size_t n)
{
	if (p->line_names == NULL)
		p->line_names = xpf_intern_new();
	return xpf_intern_get(p->line_names, s, s ? n : 0);
}

/* ---- plane index ------------------------------------------------------ */

/* Drop what a walk indexed, for another walk. */
static void plane_clear(xpf_plane *p)
{
	xpf_intern_free(p->line_names);
	p->line_names = NULL;
	for (size_t i = 0; i < p->n_event_md; i++) {
		free((char *)p->event_md[i].name);
	}
	for (size_t i = 0; i < p->n_stat_md; i++)
		free((char *)p->stat_md[i].name);
	p->nlines = p->n_event_md = p->n_stat_md = 0;
	p->nevents = 0;
}

static void plane_free(void *v)
{
	xpf_plane *p = v;
	if (p == NULL)
		return;
	plane_clear(p);
	xpf_big_free(p->lines, p->lines_map_len);
	free(p->event_md);
	free(p->stat_md);
	free(p->event_md_by_id.slot);
	free(p->stat_md_by_id.slot);
	free(p);
}

struct plane_ctx {
	xpf_capture *c;
	size_t i;
	bool lineless;  /* lines walked for their events and times, not kept */
};

static int index_line(xpf_capture *c, xpf_plane *p, const wire_field *lf, xpf_line *ln,
		      xpf_error *err)
{
	char where[400];
	const uint8_t *q = lf->data, *e = lf->data + lf->len;
	wire_field g;
	int rc;
	memset(ln, 0, sizeof *ln);
	ln->offset = off_of(c, lf->data);
	ln->length = lf->len;
	const uint8_t *name = NULL;
	size_t name_n = 0;
	for (;;) {
		const uint8_t *at = q;
		/* Events (field 4, LEN) are nearly all of a line: counted and
		 * skipped by their length without the general reader. */
		if (q < e && *q == 0x22) {
			const uint8_t *r = q + 1;
			uint64_t n;
			if (wire_varint(&r, e, &n) == WIRE_OK && n <= (uint64_t)(e - r)) {
				q = r + n;
				ln->nevents++;
				continue;
			}
		}
		rc = wire_next(&q, e, &g);
		if (rc == WIRE_END)
			break;
		if (rc != WIRE_OK) {
			plane_where(c, p->index, where, 300);
			snprintf(where + strlen(where), sizeof where - strlen(where),
				 ", line %zu, event %zu", (size_t)(ln - p->lines), ln->nevents);
			return wire_fail(err, c, where, rc, &g, at);
		}
		switch (g.num) {
		case 1: if (g.wt == WT_VARINT) ln->id = (int64_t)g.v; break;
		case 2: if (g.wt == WT_LEN) { name = g.data; name_n = g.len; } break;
		case 3: if (g.wt == WT_VARINT) ln->timestamp_ns = (int64_t)g.v; break;
		case 4: if (g.wt == WT_LEN) ln->nevents++; break;
		}
	}
	ln->name = plane_name(p, name, name_n);
	p->nevents += ln->nevents;
	return XPF_OK;
}

/* A map entry: key (1, varint) and value (2, message). */
static int map_entry(const wire_field *f, int64_t *key, bool *has_key, const uint8_t **val,
		     size_t *val_n, wire_field *bad, const uint8_t **bad_at)
{
	const uint8_t *q = f->data, *e = f->data + f->len;
	wire_field g;
	int rc;
	*has_key = false;
	*val = NULL;
	*val_n = 0;
	for (;;) {
		*bad_at = q;
		rc = wire_next(&q, e, &g);
		if (rc == WIRE_END)
			return WIRE_OK;
		if (rc != WIRE_OK) {
			*bad = g;
			return rc;
		}
		if (g.num == 1 && g.wt == WT_VARINT) {
			*key = (int64_t)g.v;
			*has_key = true;
		} else if (g.num == 2 && g.wt == WT_LEN) {
			*val = g.data;
			*val_n = g.len;
		}
	}
}

struct plane_caps {
	size_t lines, emd, smd;
};

/* One event (field 4) or stat (field 5) metadata map entry of plane p. */
static int plane_md_entry(xpf_capture *c, xpf_plane *p, const wire_field *f, const char *where,
			  struct plane_caps *caps, xpf_error *err)
{
	const char *kind = f->num == 4 ? "event" : "stat";
	char w2[500];
	int64_t key = 0;
	bool has_key;
	const uint8_t *val, *bad_at;
	size_t val_n;
	wire_field g;
	int rc = map_entry(f, &key, &has_key, &val, &val_n, &g, &bad_at);
	if (rc != WIRE_OK) {
		snprintf(w2, sizeof w2, "%s, %s metadata entry", where, kind);
		return wire_fail(err, c, w2, rc, &g, bad_at);
	}
	/* The value: id (1), name (2). */
	int64_t id = 0;
	const uint8_t *nm = NULL, *r = val, *re = val ? val + val_n : NULL;
	size_t nm_n = 0;
	while (val) {
		const uint8_t *gat = r;
		rc = wire_next(&r, re, &g);
		if (rc == WIRE_END)
			break;
		if (rc != WIRE_OK) {
			snprintf(w2, sizeof w2, "%s, %s metadata %lld", where, kind, (long long)key);
			return wire_fail(err, c, w2, rc, &g, gat);
		}
		if (g.num == 1 && g.wt == WT_VARINT) {
			id = (int64_t)g.v;
		} else if (g.num == 2 && g.wt == WT_LEN) {
			nm = g.data;
			nm_n = g.len;
		}
	}
	if (!has_key)
		key = id;
	char *name = xpf_strndup(nm ? nm : (const uint8_t *)"", nm_n);
	if (f->num == 4) {
		xpf_event_md *m = XPF_VEC_PUSH(p->event_md, p->n_event_md, caps->emd);
		m->id = key;
		m->name = name;
		m->offset = val ? off_of(c, val) : off_of(c, f->data);
		m->length = val ? val_n : 0;
	} else {
		struct xpf_stat_md *m = XPF_VEC_PUSH(p->stat_md, p->n_stat_md, caps->smd);
		m->id = key;
		m->name = name;
		m->offset = val ? off_of(c, val) : off_of(c, f->data);
	}
	return XPF_OK;
}

/* Line field of p at the capture's bytes [off, off + len), read through w:
 * the index index_line makes; false on anything unusual (index_line on the
 * mapping then words it). */
static bool index_line_window(xpf_capture *c, xpf_plane *p, xpf_window *w, uint64_t off,
			      uint64_t len, xpf_line *ln)
{
	uint64_t o = off, e = off + len;
	memset(ln, 0, sizeof *ln);
	ln->offset = off;
	ln->length = len;
	uint64_t name_o = 0, name_n = 0;
	bool has_name = false;
	while (o < e) {
		size_t avail = e - o < 24 ? (size_t)(e - o) : 24;
		const uint8_t *q0 = window_at(c, w, o, avail, p->offset + p->length);
		if (q0 == NULL)
			return false;
		/* the window holds at least avail bytes from q0, often more */
		const uint8_t *q = q0, *qe = w->buf + w->len;
		/* events: nearly all of a line; counted and skipped in a tight loop
		 * while they lie whole in the window and in the line */
		const uint8_t *lim = qe - q0 < (ptrdiff_t)(e - o) ? qe : q0 + (e - o);
		while (q < lim && *q == 0x22) {
			const uint8_t *r = q + 1;
			uint64_t n;
			if (wire_varint(&r, lim, &n) != WIRE_OK || n > (uint64_t)(lim - r))
				break;
			q = r + n;
			ln->nevents++;
		}
		if (q != q0) {
			o += (uint64_t)(q - q0);
			continue;
		}
		uint64_t tag, v;
		if (wire_varint(&q, qe, &tag) != WIRE_OK || (tag >> 3) == 0 || (tag >> 3) > 0x1fffffff)
			return false;
		uint32_t num = (uint32_t)(tag >> 3);
		int wt = (int)(tag & 7);
		if (wt == WT_LEN) {
			if (wire_varint(&q, qe, &v) != WIRE_OK)
				return false;
			uint64_t d = o + (uint64_t)(q - q0);
			if (d > e || v > e - d)
				return false;
			if (num == 4) {
				ln->nevents++;
			} else if (num == 2) {
				name_o = d;
				name_n = v;
				has_name = true;
			}
			o = d + v;
			continue;
		}
		wire_field g;
		const uint8_t *r = q0;
		if (wire_next(&r, q0 + avail, &g) != WIRE_OK)
			return false;
		if (g.wt == WT_VARINT) {
			switch (g.num) {
			case 1: ln->id = (int64_t)g.v; break;
			case 3: ln->timestamp_ns = (int64_t)g.v; break;
			}
		}
		o += (uint64_t)(r - q0);
	}
	const uint8_t *nm = has_name && name_n ?
		window_at(c, w, name_o, (size_t)name_n, p->offset + p->length) : NULL;
	if (has_name && name_n && !nm)
		return false;
	ln->name = plane_name(p, nm, nm ? (size_t)name_n : 0);
	return true;
}

/* Line ln into p's earliest timestamp of a line holding events (first_ts). */
static void first_ts_take(xpf_plane *p, const xpf_line *ln)
{
	if (ln->nevents && (!p->has_first_ts || ln->timestamp_ns < p->first_ts)) {
		p->first_ts = ln->timestamp_ns;
		p->has_first_ts = true;
	}
}

/* plane_build's walk of the plane's fields through a window (big planes,
 * see xpf_window); false on anything unusual: plane_build then clears p
 * and walks the mapping instead (which words any error). */
static bool plane_walk_window(xpf_capture *c, xpf_plane *p, struct plane_caps *caps,
			      bool lineless)
{
	xpf_window w = { 0 };
	uint64_t o = p->offset, e = p->offset + p->length;
	bool ok = true;
	/* A big plane's lines: a room on huge pages that never moves, for as
	 * many as its bytes could hold (a line takes at least two); pages are
	 * touched as lines come.  Hundreds of thousands of lines on 4 KiB pages
	 * that a realloc grows cost more (bench/README, "Memory is time").
	 * Planes of 64 MiB and more only: a room holds at least a 2 MiB page,
	 * which a capture of many small planes must not cost each. */
	if (!lineless && !p->lines && p->length >= ((uint64_t)64 << 20) &&
	    p->length / 2 < SIZE_MAX / sizeof *p->lines) {
		size_t bound = (size_t)(p->length / 2) + 1;
		p->lines = xpf_map_huge(bound, sizeof *p->lines, &p->lines_map_len);
		caps->lines = p->lines ? bound : 0;
	}
	while (ok && o < e) {
		size_t avail = e - o < 24 ? (size_t)(e - o) : 24;
		const uint8_t *q0 = window_at(c, &w, o, avail, e), *q = q0;
		uint64_t tag, v;
		if (q0 == NULL || wire_varint(&q, q0 + avail, &tag) != WIRE_OK || (tag >> 3) == 0 ||
		    (tag >> 3) > 0x1fffffff) {
			ok = false;
			break;
		}
		if ((tag & 7) != WT_LEN) {
			wire_field g;
			const uint8_t *r = q0;
			if (wire_next(&r, q0 + avail, &g) != WIRE_OK)
				ok = false;
			o += (uint64_t)(r - q0);
			continue;
		}
		if (wire_varint(&q, q0 + avail, &v) != WIRE_OK || v > e - (o + (uint64_t)(q - q0))) {
			ok = false;
			break;
		}
		uint64_t d = o + (uint64_t)(q - q0);
		uint32_t num = (uint32_t)(tag >> 3);
		if (num == 3 && lineless) {
			xpf_line ln;
			if (!index_line_window(c, p, &w, d, v, &ln)) {
				ok = false;
				break;
			}
			p->nevents += ln.nevents;
			first_ts_take(p, &ln);
		} else if (num == 3) {
			xpf_line *ln = XPF_VEC_PUSH(p->lines, p->nlines, caps->lines);
			if (!index_line_window(c, p, &w, d, v, ln)) {
				p->nlines--;
				ok = false;
				break;
			}
			p->nevents += ln->nevents;
		} else if (num == 4 || num == 5) {
			/* metadata: small, read where it lies */
			wire_field f = { .num = num, .wt = WT_LEN, .data = c->data + d, .len = (size_t)v,
					 .at = c->data + o };
			if (plane_md_entry(c, p, &f, "", caps, NULL) != XPF_OK) {
				ok = false;
				break;
			}
		}
		o = d + v;
	}
	xpf_window_release(&w);
	return ok;
}

static int plane_build(void *ctxv, void **out, xpf_error *err)
{
	struct plane_ctx *ctx = ctxv;
	xpf_capture *c = ctx->c;
	const xpf_plane_head *h = &c->heads[ctx->i];
	char where[400];
	xpf_plane *p = xpf_calloc(1, sizeof *p);
	struct plane_caps caps = { 0, 0, 0 };
	int rc;

	p->cap = c;
	p->index = ctx->i;
	p->id = h->id;
	p->name = h->name;
	p->offset = h->offset;
	p->length = h->length;
	plane_where(c, ctx->i, where, sizeof where);

	/* Through a window (see xpf_window); the mapping when that fails. */
	if (c->fd >= 0) {
		if (plane_walk_window(c, p, &caps, ctx->lineless))
			goto done;
		plane_clear(p);
		p->has_first_ts = false; /* the mapping's walk below keeps the lines */
	}
	const uint8_t *q = c->data + h->offset, *e = q + h->length;
	wire_field f;
	for (;;) {
		const uint8_t *at = q;
		rc = wire_next(&q, e, &f);
		if (rc == WIRE_END)
			break;
		if (rc != WIRE_OK) {
			wire_fail(err, c, where, rc, &f, at);
			goto fail;
		}
		if (f.wt != WT_LEN)
			continue;
		if (f.num == 3) {
			if (index_line(c, p, &f, XPF_VEC_PUSH(p->lines, p->nlines, caps.lines), err) != XPF_OK)
				goto fail;
		} else if (f.num == 4 || f.num == 5) {
			if (plane_md_entry(c, p, &f, where, &caps, err) != XPF_OK)
				goto fail;
		}
	}
done:
	if (p->n_event_md)
		qsort(p->event_md, p->n_event_md, sizeof *p->event_md, cmp_leading_id);
	if (p->n_stat_md)
		qsort(p->stat_md, p->n_stat_md, sizeof *p->stat_md, cmp_leading_id);
	for (size_t i = 1; i < p->n_event_md; i++)
		if (p->event_md[i].id == p->event_md[i - 1].id) {
			xpf_fail(err, XPF_EMALFORMED, "%s: malformed capture: %s: duplicate event metadata id %lld (byte %llu)",
				 c->label, where, (long long)p->event_md[i].id,
				 (unsigned long long)p->event_md[i].offset);
			goto fail;
		}
	for (size_t i = 1; i < p->n_stat_md; i++)
		if (p->stat_md[i].id == p->stat_md[i - 1].id) {
			xpf_fail(err, XPF_EMALFORMED, "%s: malformed capture: %s: duplicate stat metadata id %lld (byte %llu)",
				 c->label, where, (long long)p->stat_md[i].id,
				 (unsigned long long)p->stat_md[i].offset);
			goto fail;
		}
	id_table_build(&p->event_md_by_id, p->event_md, p->n_event_md, sizeof *p->event_md);
	id_table_build(&p->stat_md_by_id, p->stat_md, p->n_stat_md, sizeof *p->stat_md);
	/* for xpf_capture_time_base, while the lines are warm (and beside the
	 * other planes' indexes, not after them all) */
	for (size_t l = 0; l < p->nlines; l++)
		first_ts_take(p, &p->lines[l]);
	*out = p;
	return XPF_OK;
fail:
	plane_free(p);
	return err && err->code ? err->code : XPF_EMALFORMED;
}

int xpf_capture_plane(xpf_capture *c, size_t i, const xpf_plane **out, xpf_error *err)
{
	if (i >= c->nplanes)
		return xpf_fail(err, XPF_EUSAGE, "%s: no plane %zu", c->label, i);
	struct plane_ctx ctx = { c, i, false };
	void *v = NULL;
	int rc = xpf_lazy_get(&c->planes[i], plane_build, &ctx, &v, err);
	if (rc == XPF_OK)
		*out = v;
	return rc;
}

int xpf_capture_plane_meta(xpf_capture *c, size_t i, const xpf_plane **out, xpf_error *err)
{
	if (i >= c->nplanes)
		return xpf_fail(err, XPF_EUSAGE, "%s: no plane %zu", c->label, i);
	void *v = NULL;
	struct plane_ctx ctx = { c, i, false };
	/* its index when made (no walk), else a walk keeping no lines */
	xpf_lazy *l = &c->planes[i];
	if (xpf_lazy_state(l) != XPF_LAZY_DONE) {
		l = &c->firsts[i];
		ctx.lineless = true;
	}
	int rc = xpf_lazy_get(l, plane_build, &ctx, &v, err);
	if (rc == XPF_OK)
		*out = v;
	return rc;
}

int xpf_capture_plane_first_ts(xpf_capture *c, size_t i, bool *has, int64_t *ts, xpf_error *err)
{
	const xpf_plane *p;
	int rc = xpf_capture_plane_meta(c, i, &p, err);
	if (rc != XPF_OK)
		return rc;
	*has = p->has_first_ts;
	*ts = p->first_ts;
	return XPF_OK;
}

/* ---- opening ---------------------------------------------------------- */

static void push_str(xpf_capture *c, int which, const uint8_t *p, size_t n)
{
	c->str[which] = xpf_realloc_array(c->str[which], c->nstr[which] + 1, sizeof(char *));
	c->str[which][c->nstr[which]++] = xpf_strndup(p, n);
}

static bool known_plane(const char *name)
{
	return strncmp(name, "/host:", 6) == 0 || strncmp(name, "/device:", 8) == 0 ||
	       strcmp(name, "Task Environment") == 0 || strncmp(name, "/gpu:", 5) == 0 ||
	       strncmp(name, "/tpu:", 5) == 0;
}

static int index_modules(xpf_capture *c, xpf_error *err);

/* What a file whose first bytes do not decode as protobuf looks like, or
 * NULL: nothing we know. */
static const char *first_bytes_kind(const uint8_t *p, size_t n)
{
	if (n >= 2 && p[0] == 0x1f && p[1] == 0x8b)
		return "a gzip file (*.trace.json.gz is the trace viewer's copy; give the .xplane.pb beside it)";
	/* (JSON after white space decodes as a field or two first: white
	 * space is tag bytes) */
	if (n >= 1 && (p[0] == '{' || p[0] == '['))
		return "JSON text, not an XSpace protobuf";
	return NULL;
}

static int open_xspace(xpf_capture *c, xpf_error *err)
{
	const uint8_t *q = c->data, *e = c->data + c->size;
	wire_field f;
	int rc;
	size_t cap = 0;

	if (c->size == 0)
		return xpf_fail(err, XPF_EMALFORMED, "%s: not a capture: empty file", c->label);
	for (;;) {
		const uint8_t *at = q;
		rc = wire_next(&q, e, &f);
		if (rc == WIRE_END)
			break;
		if (rc != WIRE_OK) {
			char where[64];
			if (f.num)
				snprintf(where, sizeof where, "XSpace, field %u", f.num);
			else /* the tag itself is bad */
				snprintf(where, sizeof where, "XSpace");
			/* the first field's tag is none of an XSpace's (planes,
			 * errors, warnings, hostnames): another kind of file */
			if (at == c->data && c->data[0] != 0x0a && c->data[0] != 0x12 &&
			    c->data[0] != 0x1a && c->data[0] != 0x22) {
				const char *kind = first_bytes_kind(c->data, c->size);
				if (kind)
					return xpf_fail(err, XPF_EMALFORMED, "%s: not a capture: %s",
							c->label, kind);
				return xpf_fail(err, XPF_EMALFORMED,
						"%s: not a capture: its first bytes do not decode as an XSpace (%s: %s, byte 0)",
						c->label, where, wire_strerror(rc));
			}
			if (rc == WIRE_PAST_END && f.data)
				return xpf_fail(err, XPF_EMALFORMED,
						"%s: malformed capture: XSpace, field %u: length %zu past end of file (byte %llu)%s",
						c->label, f.num, f.len, (unsigned long long)off_of(c, at),
						f.num == 1 ? ": the file ends inside a plane (cut short, or a corrupt length)" : "");
			return xpf_fail(err, XPF_EMALFORMED, "%s: malformed capture: %s: %s (byte %llu)",
					c->label, where, wire_strerror(rc),
					(unsigned long long)off_of(c, at));
		}
		if (f.num == 1 && f.wt == WT_LEN) {
			if (c->nplanes == cap) {
				cap = cap ? cap * 2 : 8;
				c->heads = xpf_realloc_array(c->heads, cap, sizeof *c->heads);
			}
			xpf_plane_head *h = &c->heads[c->nplanes++];
			memset(h, 0, sizeof *h);
			h->offset = off_of(c, f.data);
			h->length = f.len;
		} else if (f.num >= 2 && f.num <= 4 && f.wt == WT_LEN) {
			push_str(c, (int)f.num, f.data, f.len);
		}
	}
	/* Every plane's framing and name. */
	size_t named = 0, known = 0;
	for (size_t i = 0; i < c->nplanes; i++) {
		xpf_plane_head *h = &c->heads[i];
		const uint8_t *r = c->data + h->offset, *re = r + h->length;
		const uint8_t *nm = NULL;
		size_t nm_n = 0;
		for (;;) {
			const uint8_t *at = r;
			rc = wire_next(&r, re, &f);
			if (rc == WIRE_END)
				break;
			if (rc != WIRE_OK) {
				if (h->name == NULL)
					h->name = xpf_strndup(nm ? nm : (const uint8_t *)"", nm_n);
				char where[400];
				plane_where(c, i, where, sizeof where);
				if (rc == WIRE_PAST_END && f.data)
					return xpf_fail(err, XPF_EMALFORMED,
							"%s: malformed capture: %s: field %u: length %zu past end of plane (byte %llu)",
							c->label, where, f.num, f.len,
							(unsigned long long)off_of(c, at));
				return xpf_fail(err, XPF_EMALFORMED, "%s: malformed capture: %s: %s (byte %llu)",
						c->label, where, wire_strerror(rc),
						(unsigned long long)off_of(c, at));
			}
			if (f.num == 1 && f.wt == WT_VARINT)
				h->id = (int64_t)f.v;
			else if (f.num == 2 && f.wt == WT_LEN) {
				nm = f.data;
				nm_n = f.len;
			}
			/* Writers emit fields in number order: once the name is
			 * read and the lines begin, the rest of the plane is
			 * validated when it is first indexed (plane_build), so
			 * that opening a GB capture touches only its plane headers. */
			if (nm && f.num >= 3)
				break;
		}
		if (nm && !wire_utf8(nm, nm_n))
			return xpf_fail(err, XPF_EMALFORMED,
					"%s: not a capture: plane %zu: name is not valid UTF-8 (byte %llu)",
					c->label, i, (unsigned long long)off_of(c, nm));
		if (nm && memchr(nm, '\0', nm_n))
			return xpf_fail(err, XPF_EMALFORMED,
					"%s: not a capture: plane %zu: name contains NUL (byte %llu)",
					c->label, i, (unsigned long long)off_of(c, nm));
		h->name = xpf_strndup(nm ? nm : (const uint8_t *)"", nm_n);
		if (nm_n)
			named++;
		if (known_plane(h->name))
			known++;
	}
	if (c->nplanes == 0)
		return xpf_fail(err, XPF_EMALFORMED, "%s: not a capture: no planes (not an XSpace)", c->label);
	if (named == 0)
		return xpf_fail(err, XPF_EMALFORMED,
				"%s: not a capture: %zu plane(s), none named (a different protobuf message, not an XSpace)",
				c->label, c->nplanes);
	if (known == 0)
		return xpf_fail(err, XPF_EMALFORMED,
				"%s: not a capture: no /host: or /device: plane (first plane '%s'%s)",
				c->label, c->heads[0].name,
				/* an HloProto reads as planes named after its entry computation */
				c->heads[0].name[0] != '/' ?
					"; an HloProto? xplanefs reads one named *.hlo.pb or *.hlo_proto.pb" : "");
	c->planes = xpf_calloc(c->nplanes, sizeof *c->planes);
	c->firsts = xpf_calloc(c->nplanes, sizeof *c->firsts);
	for (size_t i = 0; i < c->nplanes; i++) {
		xpf_lazy_init(&c->planes[i]);
		xpf_lazy_init(&c->firsts[i]);
	}
	return index_modules(c, err);
}

static int index_modules(xpf_capture *c, xpf_error *err)
{
	size_t cap = 0;
	for (size_t pi = 0; pi < c->nplanes; pi++) {
		if (strcmp(c->heads[pi].name, "/host:metadata") != 0)
			continue;
		const xpf_plane *p;
		int rc = xpf_capture_plane(c, pi, &p, err);
		if (rc != XPF_OK)
			return rc;
		int64_t hlo_id = xpf_plane_stat_id(p, "Hlo Proto");
		for (size_t k = 0; k < p->n_event_md; k++) {
			const xpf_event_md *md = &p->event_md[k];
			xpf_stat_iter it;
			xpf_stat st;
			bool has_hlo = false, has_pid = false;
			uint64_t pid = 0;
			const uint8_t *hlo = NULL;
			size_t hlo_len = 0;
			if (hlo_id < 0)
				continue;
			xpf_stats_of_event_md(p, md, &it);
			while ((rc = xpf_stats_next(&it, &st, err)) == 1) {
				if (strcmp(st.name, "Hlo Proto") == 0 && st.kind == XPF_STAT_BYTES &&
				    !has_hlo) {
					has_hlo = true;
					hlo = (const uint8_t *)st.s.p;
					hlo_len = st.s.n;
				} else if (strcmp(st.name, "program_id") == 0 && !has_pid) {
					has_pid = xpf_stat_u64(&st, &pid);
					if (!has_pid && st.kind == XPF_STAT_I64) {
						pid = (uint64_t)st.i;
						has_pid = true;
					}
				}
			}
			if (rc < 0)
				return err ? err->code : XPF_EMALFORMED;
			if (!has_hlo)
				continue;
			if (!has_pid)
				pid = (uint64_t)md->id;
			/* First entry per program id wins (reference §4.3). */
			bool dup = false;
			for (size_t j = 0; j < c->nmodules; j++)
				if (c->modules[j].program_id == pid) {
					dup = true;
					break;
				}
			if (dup)
				continue;
			if (!wire_utf8((const uint8_t *)md->name, strlen(md->name)))
				return xpf_fail(err, XPF_EMALFORMED,
						"%s: malformed capture: /host:metadata: module name is not valid UTF-8 (byte %llu)",
						c->label, (unsigned long long)md->offset);
			if (c->nmodules == cap) {
				cap = cap ? cap * 2 : 16;
				c->modules = xpf_realloc_array(c->modules, cap, sizeof *c->modules);
			}
			xpf_module_ref *m = &c->modules[c->nmodules++];
			m->name = md->name;
			m->program_id = pid;
			m->has_hlo = true;
			m->hlo = hlo;
			m->hlo_len = hlo_len;
			m->hlo_offset = off_of(c, hlo);
		}
	}
	c->hlos = xpf_calloc(c->nmodules, sizeof *c->hlos);
	for (size_t i = 0; i < c->nmodules; i++)
		xpf_lazy_init(&c->hlos[i]);
	return XPF_OK;
}

/* ---- a capture that shrinks under its mapping ---------------------------
 *
 * A file truncated while mapped (`cp new.pb capture.pb` truncates first)
 * raises SIGBUS on a read past its new end: the daemon would die and leave
 * a stale mount.  Our mappings are registered here; the handler maps zero
 * pages over the rest of the faulting mapping, counts the fault on its
 * capture and returns, so the read goes on over zeros.  The report layer
 * then refuses every file not made before (SPEC §6: EIO, a line in
 * capture/errors.txt).  mmap is async-signal-safe on Linux. */

#define MAX_MAPPINGS 64
struct mapping {
	_Atomic uintptr_t lo, hi;  /* [lo, hi) page-rounded; 0, 0: free slot */
	xpf_capture *_Atomic cap;
};
static struct mapping mappings[MAX_MAPPINGS];
static pthread_mutex_t mappings_mu = PTHREAD_MUTEX_INITIALIZER;
static bool sigbus_installed;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	uintptr_t a = (uintptr_t)si->si_addr, page = (uintptr_t)sysconf(_SC_PAGESIZE);
	for (size_t i = 0; i < MAX_MAPPINGS; i++) {
		uintptr_t lo = atomic_load(&mappings[i].lo), hi = atomic_load(&mappings[i].hi);
		if (a < lo || a >= hi)
			continue;
		uintptr_t from = a & ~(page - 1);
		if (mmap((void *)from, hi - from, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
		    MAP_FAILED)
			break;
		atomic_fetch_add(&atomic_load(&mappings[i].cap)->shrunk, 1);
		return;
	}
	signal(sig, SIG_DFL);  /* not ours: the default, a crash */
	raise(sig);
}

static void mapping_add(xpf_capture *c)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	pthread_mutex_lock(&mappings_mu);
	if (!sigbus_installed) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_sigaction = on_sigbus;
		sa.sa_flags = SA_SIGINFO;
		sigemptyset(&sa.sa_mask);
		sigbus_installed = sigaction(SIGBUS, &sa, NULL) == 0;
	}
	for (size_t i = 0; i < MAX_MAPPINGS; i++)
		if (atomic_load(&mappings[i].hi) == 0) {
			atomic_store(&mappings[i].cap, c);
			atomic_store(&mappings[i].lo, (uintptr_t)c->map);
			atomic_store(&mappings[i].hi, ((uintptr_t)c->map + c->map_len + page - 1) & ~(page - 1));
			break;
		}
	pthread_mutex_unlock(&mappings_mu);
}

static void mapping_remove(const xpf_capture *c)
{
	pthread_mutex_lock(&mappings_mu);
	for (size_t i = 0; i < MAX_MAPPINGS; i++)
		if (atomic_load(&mappings[i].cap) == c) {
			atomic_store(&mappings[i].hi, 0);
			atomic_store(&mappings[i].lo, 0);
			atomic_store(&mappings[i].cap, NULL);
		}
	pthread_mutex_unlock(&mappings_mu);
}

unsigned xpf_capture_shrunk(xpf_capture *c)
{
	return atomic_load(&c->shrunk);
}

static int map_file(const char *path, xpf_capture *c, xpf_error *err)
{
	/* O_NONBLOCK: opening a FIFO must not wait for a writer (it is then
	 * refused below as not a regular file); no effect on a regular file */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return xpf_fail(err, XPF_EIO, "%s: cannot open: %s", path, strerror(errno));
	struct stat sb;
	if (fstat(fd, &sb) < 0) {
		int e = errno;
		close(fd);
		return xpf_fail(err, XPF_EIO, "%s: cannot stat: %s", path, strerror(e));
	}
	if (!S_ISREG(sb.st_mode)) {
		close(fd);
		return xpf_fail(err, XPF_EIO, "%s: not a regular file", path);
	}
	c->size = (size_t)sb.st_size;
	if (c->size > 0) {
		void *m = mmap(NULL, c->size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m == MAP_FAILED) {
			int e = errno;
			close(fd);
			return xpf_fail(err, XPF_EIO, "%s: cannot map: %s", path, strerror(e));
		}
		c->map = m;
		c->map_len = c->size;
		c->data = m;
		mapping_add(c);
	} else {
		c->data = (const uint8_t *)"";
	}
	c->fd = fd;
	return XPF_OK;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s && s[1] ? s + 1 : path;
}

int xpf_capture_open_mem(const void *data, size_t len, const char *label, xpf_capture **out,
			 xpf_error *err)
{
	xpf_capture *c = xpf_calloc(1, sizeof *c);
	c->fd = -1;
	c->label = xpf_strndup(label, strlen(label));
	c->data = len ? data : (const uint8_t *)"";
	c->size = len;
	int rc = open_xspace(c, err);
	if (rc != XPF_OK) {
		xpf_capture_free(c);
		return rc;
	}
	*out = c;
	return XPF_OK;
}

int xpf_capture_open(const char *path, xpf_capture **out, xpf_error *err)
{
	xpf_capture *c = xpf_calloc(1, sizeof *c);
	c->fd = -1;
	c->label = xpf_strndup(base_name(path), strlen(base_name(path)));
	int rc = map_file(path, c, err);
	if (rc == XPF_OK)
		rc = open_xspace(c, err);
	if (rc != XPF_OK) {
		xpf_capture_free(c);
		return rc;
	}
	*out = c;
	return XPF_OK;
}

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
				"%s: malformed capture: %s: shapes nested deeper than %d levels (byte %llu)", c->label,
				what, MAX_SHAPE_DEPTH, (unsigned long long)off_of(c, p));
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

static void hlo_free(void *v)
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
		hlo_free(u);
		return xpf_fail(err, XPF_EMALFORMED, "%s: malformed capture: %s: HloProto does not decode (byte %llu)",
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
	c->label = xpf_strndup(base_name(path), strlen(base_name(path)));
	c->hlo_only = true;
	int rc = map_file(path, c, err);
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
		hlo_free(u);
		rc = xpf_fail(err, XPF_EMALFORMED, "%s: not an HloProto: no named hlo_module", c->label);
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

void xpf_capture_free(xpf_capture *c)
{
	if (c == NULL)
		return;
	for (size_t i = 0; i < c->nmodules && c->hlos; i++)
		xpf_lazy_release(&c->hlos[i], hlo_free);
	if (c->hlo_only && c->modules)
		free((char *)c->modules[0].name);
	free(c->hlos);
	free(c->modules);
	for (size_t i = 0; c->planes && i < c->nplanes; i++)
		xpf_lazy_release(&c->planes[i], plane_free);
	free(c->planes);
	for (size_t i = 0; c->firsts && i < c->nplanes; i++)
		xpf_lazy_release(&c->firsts[i], plane_free);
	free(c->firsts);
	for (size_t i = 0; i < c->nplanes; i++)
		free((char *)c->heads[i].name);
	free(c->heads);
	for (int w = 0; w < 5; w++) {
		for (size_t i = 0; i < c->nstr[w]; i++)
			free(c->str[w][i]);
		free(c->str[w]);
	}
	if (c->map) {
		mapping_remove(c);
		munmap(c->map, c->map_len);
	}
	if (c->fd >= 0)
		close(c->fd);
	free(c->label);
	free(c);
}

/* ---- accessors -------------------------------------------------------- */

const char *xpf_capture_label(const xpf_capture *c) { return c->label; }
uint64_t xpf_capture_size(const xpf_capture *c) { return c->size; }
bool xpf_capture_is_hlo_only(const xpf_capture *c) { return c->hlo_only; }
size_t xpf_capture_nplanes(const xpf_capture *c) { return c->nplanes; }
size_t xpf_capture_nmodules(const xpf_capture *c) { return c->nmodules; }

const xpf_plane_head *xpf_capture_plane_head(const xpf_capture *c, size_t i)
{
	return i < c->nplanes ? &c->heads[i] : NULL;
}

long xpf_capture_find_plane(const xpf_capture *c, const char *name)
{
	for (size_t i = 0; i < c->nplanes; i++)
		if (strcmp(c->heads[i].name, name) == 0)
			return (long)i;
	return -1;
}

size_t xpf_capture_nstrings(const xpf_capture *c, int which)
{
	return which >= 2 && which <= 4 ? c->nstr[which] : 0;
}

const char *xpf_capture_string(const xpf_capture *c, int which, size_t i)
{
	return which >= 2 && which <= 4 && i < c->nstr[which] ? c->str[which][i] : NULL;
}

const xpf_module_ref *xpf_capture_module(const xpf_capture *c, size_t i)
{
	return i < c->nmodules ? &c->modules[i] : NULL;
}

int xpf_capture_time_base(xpf_capture *c, int64_t *out, xpf_error *err)
{
	bool any = false;
	int64_t best = 0;
	for (size_t i = 0; i < c->nplanes; i++) {
		bool has;
		int64_t ts;
		int rc = xpf_capture_plane_first_ts(c, i, &has, &ts, err);
		if (rc != XPF_OK)
			return rc;
		if (has && (!any || ts < best)) {
			best = ts;
			any = true;
		}
	}
	*out = any ? best : 0;
	return XPF_OK;
}

int xpf_capture_validate(xpf_capture *c, xpf_error *err)
{
	for (size_t i = 0; i < c->nplanes; i++) {
		const xpf_plane *p;
		int rc = xpf_capture_plane(c, i, &p, err);
		if (rc != XPF_OK)
			return rc;
		xpf_stat_iter sit;
		xpf_stat st;
		xpf_stats_of_plane(p, &sit);
		while ((rc = xpf_stats_next(&sit, &st, err)) == 1)
			;
		if (rc < 0)
			return err->code;
		for (size_t k = 0; k < p->n_event_md; k++) {
			xpf_stats_of_event_md(p, &p->event_md[k], &sit);
			while ((rc = xpf_stats_next(&sit, &st, err)) == 1)
				;
			if (rc < 0)
				return err->code;
		}
		for (size_t l = 0; l < p->nlines; l++) {
			xpf_event_iter it;
			xpf_event ev;
			xpf_events_begin(p, l, &it);
			while ((rc = xpf_events_next(&it, &ev, err)) == 1) {
				xpf_stats_of_event(p, &ev, &sit);
				while ((rc = xpf_stats_next(&sit, &st, err)) == 1)
					;
				if (rc < 0)
					return err->code;
			}
			if (rc < 0)
				return err->code;
		}
	}
	for (size_t i = 0; i < c->nmodules; i++) {
		const Xla__HloProto *h;
		int rc = xpf_capture_module_hlo(c, i, &h, err);
		if (rc != XPF_OK)
			return rc;
	}
	return XPF_OK;
}

/* ---- hot loops ----------------------------------------------------------- */

/* The next field `num` (wire type LEN) of a repeated-message run starting
 * at *p: its bytes in *data and *len, *p moved past it.  WIRE_OK, WIRE_END, or an
 * error (the caller then redoes the work the slow way for the message). */
static inline int hot_next_len(const uint8_t **p, const uint8_t *end, uint32_t num,
			       const uint8_t **data, size_t *len)
{
	const uint8_t *q = *p;
	uint8_t want = num < 16 ? (uint8_t)(num << 3 | WT_LEN) : 0;
	for (;;) {
		if (q >= end)
			return WIRE_END;
		if (want && *q == want) {
			uint64_t n;
			q++;
			int rc = wire_varint(&q, end, &n);
			if (rc != WIRE_OK)
				return rc;
			if (n > (uint64_t)(end - q))
				return WIRE_PAST_END;
			*data = q;
			*len = (size_t)n;
			*p = q + n;
			return WIRE_OK;
		}
		wire_field f;
		int rc = wire_next(&q, end, &f);
		if (rc != WIRE_OK)
			return rc;
		if (f.num == num && f.wt == WT_LEN) {
			*data = f.data;
			*len = f.len;
			*p = q;
			return WIRE_OK;
		}
	}
}

static bool id_in(int64_t id, const int64_t *ids, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (ids[i] == id)
			return true;
	return false;
}

void xpf_pick_init(xpf_pick *w, const int64_t *ids, size_t n)
{
	w->bit[0] = w->bit[1] = 0;
	w->ids = ids;
	w->n = n;
	for (size_t i = 0; i < n; i++)
		if (ids[i] >= 0 && ids[i] < 128)
			w->bit[ids[i] >> 6] |= (uint64_t)1 << (ids[i] & 63);
}

static inline bool pick_has(const xpf_pick *w, int64_t id)
{
	if (id >= 0 && id < 128)
		return (w->bit[id >> 6] >> (id & 63)) & 1;
	return id_in(id, w->ids, w->n);
}


/* r read from nothing yet: no id, no value.  Field by field: a compound
 * literal clears the whole struct, which is hot here (bench/README). */
static inline void raw_clear(xpf_raw_stat *r)
{
	r->metadata_id = r->i = 0;
	r->u = r->dbits = 0;
	r->s.p = NULL;
	r->s.n = 0;
	r->kind = XPF_STAT_NONE;
}

/* A stat's number or reference (value tag 0x18 uint64, 0x20 int64, 0x38
 * ref) into r, as its last value field. */
static inline void raw_set_varint(xpf_raw_stat *r, uint8_t tag, uint64_t x)
{
	r->kind = tag == 0x20 ? XPF_STAT_I64 : tag == 0x18 ? XPF_STAT_U64 : XPF_STAT_REF;
	if (tag == 0x20)
		r->i = (int64_t)x;
	else
		r->u = x;
}

/* A stat's string or bytes (value tag 0x2a str, 0x32 bytes) into r. */
static inline void raw_set_text(xpf_raw_stat *r, uint8_t tag, const uint8_t *p, size_t n)
{
	r->s.p = (const char *)p;
	r->s.n = n;
	r->kind = tag == 0x2a ? XPF_STAT_STR : XPF_STAT_BYTES;
}

/* A stat's double (value tag 0x11) from its 8 bytes at p into r. */
static inline void raw_set_double(xpf_raw_stat *r, const uint8_t *p)
{
	r->dbits = wire_le64(p);
	r->kind = XPF_STAT_DOUBLE;
}

/* One XStat message [q, e) as xpf_stats_next reads it (every value field:
 * the last of its field seen, whatever the final kind); false when it is
 * malformed or unusual (the caller then asks xpf_stats_next). */
static inline bool parse_stat(const uint8_t *q, const uint8_t *e, xpf_raw_stat *r)
{
	uint64_t x;
	raw_clear(r);
	while (q < e) {
		wire_field g;
		switch (*q) {
		case 0x08: /* metadata_id */
			q++;
			if (wire_varint(&q, e, &x) != WIRE_OK)
				return false;
			r->metadata_id = (int64_t)x;
			continue;
		case 0x11: /* double_value */
			if (e - q < 9)
				return false;
			raw_set_double(r, q + 1);
			q += 9;
			continue;
		case 0x18: case 0x20: case 0x38: { /* uint64, int64, ref */
			uint8_t t = *q++;
			if (wire_varint(&q, e, &x) != WIRE_OK)
				return false;
			raw_set_varint(r, t, x);
			continue;
		}
		case 0x2a: case 0x32: { /* str, bytes */
			uint8_t t = *q++;
			if (wire_varint(&q, e, &x) != WIRE_OK || x > (uint64_t)(e - q))
				return false;
			raw_set_text(r, t, q, (size_t)x);
			q += x;
			continue;
		}
		}
		if (wire_next(&q, e, &g) != WIRE_OK)
			return false;
		switch (g.num) {
		case 1: r->metadata_id = (int64_t)g.v; break;
		case 2: if (g.wt == WT_I64) { r->dbits = g.v; r->kind = XPF_STAT_DOUBLE; } break;
		case 3: if (g.wt == WT_VARINT) { r->u = g.v; r->kind = XPF_STAT_U64; } break;
		case 4: if (g.wt == WT_VARINT) { r->i = (int64_t)g.v; r->kind = XPF_STAT_I64; } break;
		case 5: if (g.wt == WT_LEN) { r->s.p = (const char *)g.data; r->s.n = g.len; r->kind = XPF_STAT_STR; } break;
		case 6: if (g.wt == WT_LEN) { r->s.p = (const char *)g.data; r->s.n = g.len; r->kind = XPF_STAT_BYTES; } break;
		case 7: if (g.wt == WT_VARINT) { r->u = g.v; r->kind = XPF_STAT_REF; } break;
		}
	}
	return true;
}

/* r as an xpf_stat named name (a reference's text not looked up). */
static inline void stat_of_raw(const xpf_raw_stat *r, const char *name, xpf_stat *st)
{
	double d;
	memcpy(&d, &r->dbits, 8);
	*st = (xpf_stat){ .metadata_id = r->metadata_id, .name = name, .kind = r->kind, .d = d,
			  .u = r->u, .i = r->i, .s = r->s };
}

bool xpf_stat_resolve(const xpf_plane *pl, const xpf_raw_stat *r, xpf_stat *st)
{
	const char *nm = stat_name(pl, r->metadata_id), *rv = NULL;
	if (r->kind == XPF_STAT_REF)
		rv = r->u <= INT64_MAX ? stat_name(pl, (int64_t)r->u) : NULL;
	if (nm == NULL || (r->kind == XPF_STAT_REF && rv == NULL))
		return false;
	stat_of_raw(r, nm, st);
	if (r->kind == XPF_STAT_REF) {
		st->s.p = rv;
		st->s.n = strlen(rv);
	}
	return true;
}

bool xpf_stat_resolve_by_id(const xpf_plane *pl, const xpf_raw_stat *r, xpf_stat *st)
{
	if (r->kind == XPF_STAT_REF)
		return xpf_stat_resolve(pl, r, st);
	stat_of_raw(r, "", st);
	return true;
}

/* Stat [q, e) when it is written as every writer does, one id field
 * (below 128) then one value field: its metadata id, and into *r what
 * parse_stat would read; -1 otherwise (then parse_stat reads it). */
static inline int64_t plain_stat(const uint8_t *q, const uint8_t *e, xpf_raw_stat *r)
{
	if (e - q < 3 || q[0] != 0x08 || (q[1] & 0x80))
		return -1;
	int64_t id = q[1];
	uint64_t x;
	q += 2;
	uint8_t t = *q++;
	switch (t) {
	case 0x18: case 0x20: case 0x38:
		if (wire_varint(&q, e, &x) != WIRE_OK || q != e)
			return -1;
		raw_clear(r);
		raw_set_varint(r, t, x);
		break;
	case 0x2a: case 0x32:
		if (wire_varint(&q, e, &x) != WIRE_OK || x != (uint64_t)(e - q))
			return -1;
		raw_clear(r);
		raw_set_text(r, t, q, (size_t)x);
		break;
	case 0x11:
		if (e - q != 8)
			return -1;
		raw_clear(r);
		raw_set_double(r, q);
		break;
	default:
		return -1;
	}
	r->metadata_id = id;
	return id;
}

/* Stat [q, e) for pick w: 1 read into *r (a wanted one), 0 not wanted,
 * -1 malformed or unusual (the pick cannot vouch).  A plainly written one
 * is decoded once. */
static inline int pick_stat(const uint8_t *q, const uint8_t *e, const xpf_pick *w,
			    xpf_raw_stat *r)
{
	int64_t id = plain_stat(q, e, r);
	if (id >= 0)
		return pick_has(w, id) ? 1 : 0;
	if (!parse_stat(q, e, r))
		return -1;
	return pick_has(w, r->metadata_id) ? 1 : 0;
}

/* xpf_events_next_head, and with a pick that of xpf_stats_pick in the
 * same pass over the event's bytes (*np: its result). */
static inline __attribute__((always_inline)) int
next_head(xpf_event_iter *it, xpf_event_head *h, const xpf_pick *pick, xpf_raw_stat *out,
	  size_t max, int *np, xpf_error *err)
{
	const xpf_plane *pl = it->plane;
	int k = 0;
	if (it->p == NULL)
		return 0;
	const uint8_t *p, *data;
	size_t len;
	int rc;
	if (it->w && (size_t)(it->end - it->p) < 4096 && it->w->off + it->w->len < it->line_end &&
	    !events_refill(it))
		events_to_map(it);
	for (;;) {
		p = it->p;
		rc = hot_next_len(&p, it->end, 4, &data, &len);
		if (rc == WIRE_OK || !it->w)
			break;
		/* past the window's end: refill there, or the mapping says */
		if (it->w->off + it->w->len >= it->line_end) {
			if (rc == WIRE_END)
				break;
			events_to_map(it);
		} else if (!events_refill(it)) {
			events_to_map(it);
		}
	}
	if (rc == WIRE_END) {
		it->p = p;
		return 0;
	}
	if (rc != WIRE_OK)
		goto slow;
	int64_t v[6] = { 0, 0, 0, 0, 0, 0 }; /* by field number 1, 2, 3, 5 */
	const uint8_t *q = data, *e = data + len;
	while (q < e) {
		uint8_t t = *q;
		uint64_t x;
		if (t == 0x08 || t == 0x10 || t == 0x18 || t == 0x28) {
			q++;
			if (wire_varint(&q, e, &x) != WIRE_OK)
				goto slow;
			v[t >> 3] = (int64_t)x;
			continue;
		}
		if (!pick && t == 0x22 && q + 1 < e && q[1] < 0x80 && q[1] <= e - q - 2) {
			q += 2 + q[1]; /* a stat of fewer than 128 bytes: skipped */
			continue;
		}
		if (t == 0x22 && e - q >= 6 && (q[1] == 4 || q[1] == 5) && q[2] == 0x08 && q[3] < 0x80 &&
		    (q[4] == 0x38 || q[4] == 0x18 || q[4] == 0x20) && e - q >= 2 + q[1] &&
		    (q[1] == 4 ? q[5] < 0x80 : q[5] >= 0x80 && q[6] < 0x80)) {
			/* the commonest stats, four or five bytes: an id and a
			 * number or reference of one or two bytes, read here as
			 * pick_stat would */
			if (pick && k >= 0 && pick_has(pick, q[3])) {
				uint64_t val = q[1] == 4 ? q[5] : (uint64_t)(q[5] & 0x7f) | (uint64_t)q[6] << 7;
				xpf_raw_stat spare, *r = (size_t)k < max ? &out[k] : &spare;
				raw_clear(r);
				r->metadata_id = q[3];
				raw_set_varint(r, q[4], val);
				k = r == &spare ? -1 : k + 1;
			}
			q += 2 + q[1];
			continue;
		}
		if (t == 0x22) { /* a stat: skipped, or picked */
			q++;
			if (wire_varint(&q, e, &x) != WIRE_OK || x > (uint64_t)(e - q))
				goto slow;
			if (pick && k >= 0) {
				/* into the next slot (no copy); one past max means
				 * the pick cannot vouch */
				xpf_raw_stat spare, *r = (size_t)k < max ? &out[k] : &spare;
				int got = pick_stat(q, q + x, pick, r);
				k = got < 0 || (got && r == &spare) ? -1 : k + got;
			}
			q += x;
			continue;
		}
		wire_field g;
		if (wire_next(&q, e, &g) != WIRE_OK)
			goto slow;
		if (g.wt == WT_VARINT && g.num <= 5 && g.num != 4)
			v[g.num] = (int64_t)g.v;
		k = -1; /* unusual: the pick is left to xpf_stats_next_of */
	}
	const xpf_event_md *md = event_md(pl, v[1]);
	if (md == NULL)
		goto slow;
	int64_t base = pl->lines[it->line].timestamp_ns, end_ps, t;
	/* offset and duration below 2^61 and a base within +-2^61 cannot
	 * overflow (nor can their ns): only other values need the checks */
	const uint64_t lim = (uint64_t)1 << 61;
	if (!((uint64_t)v[2] < lim && (uint64_t)v[3] < lim && (uint64_t)base + lim < 2 * lim) &&
	    (v[3] < 0 || __builtin_add_overflow(v[2], v[3], &end_ps) ||
	     __builtin_add_overflow(base, floor_div1000(v[2]), &t) ||
	     __builtin_add_overflow(base, floor_div1000(end_ps), &t)))
		goto slow;
	h->index = it->next_index++;
	h->md = (size_t)(md - pl->event_md);
	h->metadata_id = v[1];
	h->offset_ps = v[2];
	h->duration_ps = v[3];
	h->num_occurrences = v[5];
	h->msg = data;
	h->msg_len = len;
	h->offset = it->w ? it->w->off + (uint64_t)(data - it->w->buf) : off_of(pl->cap, data);
	it->p = p;
	if (np)
		*np = k;
	return 1;
slow:;
	if (np)
		*np = -1;
	/* Malformed (or unusual): the reference decoder says what and where. */
	xpf_event ev;
	rc = xpf_events_next(it, &ev, err);
	if (rc != 1)
		return rc;
	h->index = ev.index;
	h->md = (size_t)(xpf_plane_event_md(pl, ev.metadata_id) - pl->event_md);
	h->metadata_id = ev.metadata_id;
	h->offset_ps = ev.offset_ps;
	h->duration_ps = ev.duration_ps;
	h->num_occurrences = ev.num_occurrences;
	h->msg = ev.msg;
	h->msg_len = ev.msg_len;
	h->offset = ev.offset;
	return 1;
}

int xpf_events_next_head(xpf_event_iter *it, xpf_event_head *h, xpf_error *err)
{
	return next_head(it, h, NULL, NULL, 0, NULL, err);
}

int xpf_events_next_pick(xpf_event_iter *it, xpf_event_head *h, const xpf_pick *pick,
			 xpf_raw_stat *out, size_t max, int *np, xpf_error *err)
{
	return next_head(it, h, pick, out, max, np, err);
}

void xpf_event_of_head(const xpf_plane *p, size_t line, const xpf_event_head *h, xpf_event *ev)
{
	memset(ev, 0, sizeof *ev);
	ev->line = line;
	ev->index = h->index;
	ev->metadata_id = h->metadata_id;
	ev->name = p->event_md[h->md].name;
	ev->offset_ps = h->offset_ps;
	ev->duration_ps = h->duration_ps;
	ev->num_occurrences = h->num_occurrences;
	int64_t base = p->lines[line].timestamp_ns;
	ev->start_ns = base + floor_div1000(h->offset_ps);
	ev->end_ns = base + floor_div1000(h->offset_ps + h->duration_ps);
	ev->msg = h->msg;
	ev->msg_len = h->msg_len;
	ev->offset = h->offset;
}

int xpf_stats_next_of(xpf_stat_iter *it, const int64_t *ids, size_t n, xpf_stat *st,
		      xpf_error *err)
{
	const xpf_plane *pl = it->plane;
	for (;;) {
		const uint8_t *at = it->p, *p = it->p, *data;
		size_t len;
		int rc = hot_next_len(&p, it->end, it->field, &data, &len);
		if (rc == WIRE_END) {
			it->p = p;
			return 0;
		}
		xpf_raw_stat r;
		if (rc != WIRE_OK || !parse_stat(data, data + len, &r))
			goto slow;
		if (!id_in(r.metadata_id, ids, n)) { /* not read: not checked */
			it->p = p;
			it->next_index++;
			continue;
		}
		/* a wanted one: what xpf_stats_next gives */
		if (!xpf_stat_resolve(pl, &r, st))
			goto slow;
		it->p = p;
		it->next_index++;
		return 1;
	slow:
		it->p = at;
		rc = xpf_stats_next(it, st, err);
		if (rc != 1)
			return rc;
		if (id_in(st->metadata_id, ids, n))
			return 1;
	}
}

int xpf_stats_pick(const xpf_plane *pl, const xpf_event_head *h, const xpf_pick *pick,
		   xpf_raw_stat *out, size_t max)
{
	(void)pl; /* ids are looked up by the caller (xpf_stat_resolve) */
	const uint8_t *q = h->msg, *e = h->msg + h->msg_len;
	size_t k = 0;
	while (q < e) {
		uint8_t t = *q;
		uint64_t x;
		if (t == 0x22) { /* a stat */
			q++;
			if (wire_varint(&q, e, &x) != WIRE_OK || x > (uint64_t)(e - q))
				return -1;
			/* into the next slot (no copy); one past max: cannot vouch */
			xpf_raw_stat spare, *r = k < max ? &out[k] : &spare;
			int got = pick_stat(q, q + x, pick, r);
			q += x;
			if (got < 0 || (got && r == &spare))
				return -1;
			k += (size_t)got;
			continue;
		}
		if (t == 0x08 || t == 0x10 || t == 0x18 || t == 0x28) { /* the head's varints */
			q++;
			if (wire_varint(&q, e, &x) != WIRE_OK)
				return -1;
			continue;
		}
		return -1;
	}
	return (int)k;
}

size_t xpf_plane_stat_ids(const xpf_plane *p, const char *name, int64_t *out, size_t max)
{
	size_t k = 0;
	for (size_t i = 0; i < p->n_stat_md; i++)
		if (strcmp(p->stat_md[i].name, name) == 0) {
			if (k < max)
				out[k] = p->stat_md[i].id;
			k++;
		}
	return k;
}
