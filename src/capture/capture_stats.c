/* Stats: the one stat reader, xpf_stats_next (capture.h).  A stat written
 * as every writer writes it is read in one quick pass over its bytes;
 * anything that pass does not vouch for is read again by the reference
 * decoder, which says what is wrong and where. */
#include "capture/capture_priv.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* ---- values ----------------------------------------------------------- */

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

/* ---- wanted stats ----------------------------------------------------- */

bool xpf_stat_want_add(xpf_stat_want *w, const xpf_plane *p, const char *name, unsigned tag)
{
	bool fits = true;
	for (size_t i = 0; i < p->n_stat_md; i++) {
		int64_t id = p->stat_md[i].id;
		if (strcmp(p->stat_md[i].name, name) != 0)
			continue;
		if (w->n == XPF_STAT_WANT_MAX) {
			fits = false;
			continue;
		}
		w->ids[w->n] = id;
		w->tags[w->n++] = (uint8_t)tag;
		if (id >= 0 && id < 128)
			w->small[id] = (uint8_t)(tag + 1);
	}
	return fits;
}

/* ---- where they are --------------------------------------------------- */

static void stat_iter_init(const xpf_plane *p, const uint8_t *msg, uint64_t off, size_t len,
			   uint32_t field, xpf_stat_iter *it)
{
	it->plane = p;
	it->want = NULL;
	it->p = msg;
	it->end = msg + len;
	it->base = msg;
	it->base_off = off;
	it->field = field;
	it->where = NULL;
	it->line = it->event = -1;
	it->next_index = 0;
	it->scope_tree = false;
}

void xpf_stats_of_event(const xpf_plane *p, const xpf_event *ev, const xpf_stat_want *want,
			xpf_stat_iter *it)
{
	stat_iter_init(p, ev->msg, ev->offset, ev->msg_len, XEVENT_STATS, it);
	it->want = want;
	it->where = "event";
	it->line = (long)ev->line;
	it->event = (long)ev->index;
}

void xpf_stats_of_plane(const xpf_plane *p, xpf_stat_iter *it)
{
	stat_iter_init(p, p->cap->data + p->offset, p->offset, (size_t)p->length, XPLANE_STATS, it);
	it->where = "plane stats";
	it->scope_tree = strcmp(p->name, XPF_SCOPE_TREE_PLANE) == 0;
}

void xpf_stats_of_event_md(const xpf_plane *p, const xpf_event_md *md, xpf_stat_iter *it)
{
	stat_iter_init(p, p->cap->data + md->offset, md->offset, (size_t)md->length,
		       XEVENT_MD_STATS, it);
	it->where = "event metadata";
}

/* Whether a stat whose id names no stat metadata is an edge of the scope
 * tree (capture.h, XPF_SCOPE_TREE_PLANE): one of that plane's own stats,
 * with a number (the parent's id) for its value. */
static inline bool scope_edge(const xpf_stat_iter *it, enum xpf_stat_kind kind)
{
	return it->scope_tree && (kind == XPF_STAT_I64 || kind == XPF_STAT_U64);
}

/* ---- the reference decoder -------------------------------------------- */

static void stat_where(const xpf_stat_iter *it, size_t idx, char *out, size_t n)
{
	plane_where(it->plane->cap, it->plane->index, out, n);
	size_t l = strlen(out);
	if (it->line >= 0)
		snprintf(out + l, n - l, ", line %ld, event %ld, stat %zu", it->line, it->event, idx);
	else
		snprintf(out + l, n - l, ", %s, stat %zu", it->where ? it->where : "stats", idx);
}

/* The next XStat message of the iterator's field into *f: 1, 0 at the end,
 * -1 malformed (err set). */
static int next_stat_field(xpf_stat_iter *it, wire_field *f, xpf_error *err)
{
	for (;;) {
		const uint8_t *at = it->p;
		int rc = wire_next(&it->p, it->end, f);
		if (rc == WIRE_END)
			return 0;
		if (rc != WIRE_OK) {
			char where[600];
			stat_where(it, it->next_index, where, sizeof where);
			wire_fail(err, it->plane->cap, where, rc, f, at);
			return -1;
		}
		if (f->num == it->field && f->wt == WT_LEN)
			return 1;
	}
}

/* One field of an XStat into st (the last value field wins, as protobuf
 * reads a oneof); fields of another wire type are skipped. */
static void stat_field(const wire_field *g, xpf_stat *st)
{
	switch (g->num) {
	case XSTAT_METADATA_ID: st->metadata_id = (int64_t)g->v; break;
	case XSTAT_DOUBLE:
		if (g->wt == WT_I64) {
			memcpy(&st->d, &g->v, 8);
			st->kind = XPF_STAT_DOUBLE;
		}
		break;
	case XSTAT_UINT64:
	case XSTAT_REF:
		if (g->wt == WT_VARINT) {
			st->u = g->v;
			st->kind = g->num == XSTAT_UINT64 ? XPF_STAT_U64 : XPF_STAT_REF;
		}
		break;
	case XSTAT_INT64:
		if (g->wt == WT_VARINT) {
			st->i = (int64_t)g->v;
			st->kind = XPF_STAT_I64;
		}
		break;
	case XSTAT_STR:
	case XSTAT_BYTES:
		if (g->wt == WT_LEN) {
			st->s.p = (const char *)g->data;
			st->s.n = g->len;
			st->kind = g->num == XSTAT_STR ? XPF_STAT_STR : XPF_STAT_BYTES;
		}
		break;
	}
}

/* st's name, and a reference's text, from the plane's stat metadata:
 * false (err set) when either names none.  f: the XStat, for messages. */
static bool stat_names(xpf_stat_iter *it, size_t idx, const wire_field *f, xpf_stat *st,
		       xpf_error *err)
{
	const xpf_plane *pl = it->plane;
	const xpf_capture *c = pl->cap;
	char where[600];
	const char *nm = stat_name(pl, st->metadata_id);
	if (nm == NULL && scope_edge(it, st->kind))
		nm = XPF_STAT_SCOPE_PARENT;
	if (nm == NULL) {
		stat_where(it, idx, where, sizeof where);
		xpf_fail(err, XPF_EMALFORMED,
			 "%s: malformed capture: %s: dangling stat metadata id %lld (byte %llu)",
			 c->label, where, (long long)st->metadata_id,
			 (unsigned long long)off_of(c, f->data));
		return false;
	}
	st->name = nm;
	if (st->kind != XPF_STAT_REF)
		return true;
	const char *v = st->u <= INT64_MAX ? stat_name(pl, (int64_t)st->u) : NULL;
	if (v == NULL) {
		stat_where(it, idx, where, sizeof where);
		xpf_fail(err, XPF_EMALFORMED,
			 "%s: malformed capture: %s '%s': dangling ref_value %llu (byte %llu)",
			 c->label, where, nm, (unsigned long long)st->u,
			 (unsigned long long)off_of(c, f->data));
		return false;
	}
	st->s.p = v;
	st->s.n = strlen(v);
	return true;
}

static int stats_next_ref_at(xpf_stat_iter *it, xpf_stat *st, xpf_error *err)
{
	wire_field f, g;
	int rc = next_stat_field(it, &f, err);
	if (rc <= 0)
		return rc;
	size_t idx = it->next_index++;
	memset(st, 0, sizeof *st);
	st->name = "";
	const uint8_t *q = f.data, *e = f.data + f.len;
	while ((rc = wire_next(&q, e, &g)) == WIRE_OK)
		stat_field(&g, st);
	if (rc != WIRE_END) { /* `where` is formatted only on failure: this runs once per stat */
		char where[600];
		stat_where(it, idx, where, sizeof where);
		wire_fail(err, it->plane->cap, where, rc, &g, q);
		return -1;
	}
	if (it->want && xpf_stat_want_tag(it->want, st->metadata_id) < 0)
		return 1; /* not wanted: its ids are not looked up */
	return stat_names(it, idx, &f, st, err) ? 1 : -1;
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

/* The iterator's next stat, wanted or not, through the general wire
 * reader (the ids of a wanted one looked up). */
static int stats_next_ref(xpf_stat_iter *it, xpf_stat *st, xpf_error *err)
{
	if (it->base == it->plane->cap->data + it->base_off)
		return stats_next_ref_at(it, st, err);
	/* Through a window: a failure is worded (offsets) from the mapping. */
	xpf_stat_iter save = *it;
	int rc = stats_next_ref_at(it, st, NULL);
	if (rc >= 0)
		return rc;
	*it = save;
	stats_to_map(it);
	return stats_next_ref_at(it, st, err);
}

/* ---- the quick pass --------------------------------------------------- */

/* A stat as its bytes say, before its ids are looked up. */
struct raw_stat {
	int64_t metadata_id;
	enum xpf_stat_kind kind;
	uint64_t u;     /* U64, REF */
	int64_t i;      /* I64 */
	uint64_t dbits; /* DOUBLE: its bits */
	xpf_str s;      /* STR, BYTES */
};

/* r read from nothing yet: no id, no value.  Field by field rather than
 * with a compound literal (which clears the whole struct): this runs for
 * every stat read. */
static inline void raw_clear(struct raw_stat *r)
{
	r->metadata_id = r->i = 0;
	r->u = r->dbits = 0;
	r->s.p = NULL;
	r->s.n = 0;
	r->kind = XPF_STAT_NONE;
}

/* A stat's number or reference (uint64_value, int64_value or ref_value)
 * into r, as its last value field. */
static inline void raw_set_varint(struct raw_stat *r, uint8_t tag, uint64_t x)
{
	r->kind = tag == TAG_XSTAT_INT64  ? XPF_STAT_I64 :
		  tag == TAG_XSTAT_UINT64 ? XPF_STAT_U64 :
					    XPF_STAT_REF;
	if (tag == TAG_XSTAT_INT64)
		r->i = (int64_t)x;
	else
		r->u = x;
}

/* A stat's string or bytes (str_value, bytes_value) into r. */
static inline void raw_set_text(struct raw_stat *r, uint8_t tag, const uint8_t *p, size_t n)
{
	r->s.p = (const char *)p;
	r->s.n = n;
	r->kind = tag == TAG_XSTAT_STR ? XPF_STAT_STR : XPF_STAT_BYTES;
}

/* Stat [q, e) when it is written as every writer does, one id field
 * (below 128) then one value field, into *r; false otherwise. */
static inline bool plain_stat(const uint8_t *q, const uint8_t *e, struct raw_stat *r)
{
	if (e - q < 3 || q[0] != TAG_XSTAT_METADATA_ID || (q[1] & 0x80))
		return false;
	int64_t id = q[1];
	uint64_t x;
	q += 2;
	uint8_t t = *q++;
	raw_clear(r);
	switch (t) {
	case TAG_XSTAT_UINT64:
	case TAG_XSTAT_INT64:
	case TAG_XSTAT_REF:
		if (wire_varint(&q, e, &x) != WIRE_OK || q != e)
			return false;
		raw_set_varint(r, t, x);
		break;
	case TAG_XSTAT_STR:
	case TAG_XSTAT_BYTES:
		if (wire_varint(&q, e, &x) != WIRE_OK || x != (uint64_t)(e - q))
			return false;
		raw_set_text(r, t, q, (size_t)x);
		break;
	case TAG_XSTAT_DOUBLE:
		if (e - q != 8)
			return false;
		r->dbits = wire_le64(q);
		r->kind = XPF_STAT_DOUBLE;
		break;
	default: return false;
	}
	r->metadata_id = id;
	return true;
}

/* One XStat message [q, e) as the reference decoder reads it (every value
 * field: the last one seen wins), its fields by their one-byte tags; false
 * when it is malformed or has a field no writer writes. */
static bool tagged_stat(const uint8_t *q, const uint8_t *e, struct raw_stat *r)
{
	uint64_t x;
	raw_clear(r);
	while (q < e) {
		uint8_t t = *q++;
		switch (t) {
		case TAG_XSTAT_METADATA_ID:
			if (wire_varint(&q, e, &x) != WIRE_OK)
				return false;
			r->metadata_id = (int64_t)x;
			break;
		case TAG_XSTAT_DOUBLE:
			if (e - q < 8)
				return false;
			r->dbits = wire_le64(q);
			r->kind = XPF_STAT_DOUBLE;
			q += 8;
			break;
		case TAG_XSTAT_UINT64:
		case TAG_XSTAT_INT64:
		case TAG_XSTAT_REF:
			if (wire_varint(&q, e, &x) != WIRE_OK)
				return false;
			raw_set_varint(r, t, x);
			break;
		case TAG_XSTAT_STR:
		case TAG_XSTAT_BYTES:
			if (wire_varint(&q, e, &x) != WIRE_OK || x > (uint64_t)(e - q))
				return false;
			raw_set_text(r, t, q, (size_t)x);
			q += x;
			break;
		default: return false;
		}
	}
	return true;
}

/* r as the reference decoder gives it: false when an id names no stat
 * metadata (the reference decoder then words it). */
static inline bool stat_resolve(const xpf_stat_iter *it, const struct raw_stat *r, xpf_stat *st)
{
	const xpf_plane *pl = it->plane;
	const char *nm = stat_name(pl, r->metadata_id), *rv = NULL;
	if (nm == NULL && scope_edge(it, r->kind))
		nm = XPF_STAT_SCOPE_PARENT;
	if (r->kind == XPF_STAT_REF)
		rv = r->u <= INT64_MAX ? stat_name(pl, (int64_t)r->u) : NULL;
	if (nm == NULL || (r->kind == XPF_STAT_REF && rv == NULL))
		return false;
	double d;
	memcpy(&d, &r->dbits, 8);
	*st = (xpf_stat){ .metadata_id = r->metadata_id,
			  .name = nm,
			  .kind = r->kind,
			  .d = d,
			  .u = r->u,
			  .i = r->i,
			  .s = r->s };
	if (r->kind == XPF_STAT_REF) {
		st->s.p = rv;
		st->s.n = strlen(rv);
	}
	return true;
}

int xpf_stats_next(xpf_stat_iter *it, xpf_stat *st, xpf_error *err)
{
	for (;;) {
		const uint8_t *p = it->p, *data;
		size_t len;
		struct raw_stat r;
		int rc = next_len_field(&p, it->end, it->field, &data, &len);
		if (rc == WIRE_END) {
			it->p = p;
			return 0;
		}
		if (rc == WIRE_OK &&
		    (plain_stat(data, data + len, &r) || tagged_stat(data, data + len, &r))) {
			if (it->want && xpf_stat_want_tag(it->want, r.metadata_id) < 0) {
				it->p = p; /* not wanted: not looked up */
				it->next_index++;
				continue;
			}
			if (stat_resolve(it, &r, st)) {
				it->p = p;
				it->next_index++;
				return 1;
			}
		}
		rc = stats_next_ref(it, st, err);
		if (rc != 1 || !it->want || xpf_stat_want_tag(it->want, st->metadata_id) >= 0)
			return rc;
	}
}

/* ---- by name ---------------------------------------------------------- */

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
	xpf_stats_of_event(p, ev, NULL, &it);
	return find_stat(&it, name, out, err);
}

int xpf_plane_stat(const xpf_plane *p, const char *name, xpf_stat *out, xpf_error *err)
{
	xpf_stat_iter it;
	xpf_stats_of_plane(p, &it);
	return find_stat(&it, name, out, err);
}
