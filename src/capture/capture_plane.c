/* Planes: the lazy index of a plane's lines and metadata (capture.h). */
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

static int cmp_leading_id(const void *a, const void *b)
{
	int64_t x = leading_id(a), y = leading_id(b);
	return x < y ? -1 : x > y;
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

/* Lines repeat a few names (threads, streams) hundreds of thousands of
 * times: each is kept once per plane.  A NUL-terminated copy of s[0..n)
 * ("" for NULL), owned by p. */
static const char *plane_name(xpf_plane *p, const uint8_t *s, size_t n)
{
	struct plane_index *ix = index_of(p);
	if (ix->line_names == NULL)
		ix->line_names = xpf_intern_new();
	return xpf_intern_get(ix->line_names, s, s ? n : 0);
}

/* ---- plane index ------------------------------------------------------ */

/* The event of index `index` on line `line` starts at byte off: a mark
 * when index is a multiple of XPF_LINE_MARK (see xpf_line_marks). */
static inline void mark_event(xpf_plane *p, long line, size_t index, uint64_t off)
{
	if (line < 0 || index == 0 || index % XPF_LINE_MARK != 0)
		return;
	struct plane_index *ix = index_of(p);
	struct line_marks *m = ix->nmarks ? &ix->marks[ix->nmarks - 1] : NULL;
	if (m == NULL || m->line != line) {
		m = XPF_VEC_PUSH(ix->marks, ix->nmarks, ix->capmarks);
		*m = (struct line_marks){ line, 0, 0, NULL };
		*XPF_VEC_PUSH(m->at, m->n, m->cap) = (xpf_event_pos){ p->lines[line].offset, 0 };
	}
	*XPF_VEC_PUSH(m->at, m->n, m->cap) = (xpf_event_pos){ off, index };
}

size_t xpf_line_marks(const xpf_plane *p, size_t line, const xpf_event_pos **at)
{
	const struct plane_index *ix = index_of_const(p);
	const struct line_marks *m = find_id(ix->marks, ix->nmarks, sizeof *m, (int64_t)line);
	*at = m ? m->at : NULL;
	return m ? m->n : 0;
}

/* Drop what a walk indexed, for another walk. */
static void plane_clear(xpf_plane *p)
{
	struct plane_index *ix = index_of(p);
	for (size_t i = 0; i < ix->nmarks; i++)
		free(ix->marks[i].at);
	free(ix->marks);
	ix->marks = NULL;
	ix->nmarks = ix->capmarks = 0;
	xpf_intern_free(index_of(p)->line_names);
	index_of(p)->line_names = NULL;
	for (size_t i = 0; i < p->n_event_md; i++) {
		free((char *)p->event_md[i].name);
	}
	for (size_t i = 0; i < p->n_stat_md; i++)
		free((char *)p->stat_md[i].name);
	p->nlines = p->n_event_md = p->n_stat_md = 0;
	p->nevents = 0;
}

void xpf_cap_plane_free(void *v)
{
	xpf_plane *p = v;
	if (p == NULL)
		return;
	struct plane_index *ix = index_of(p);
	plane_clear(p);
	xpf_big_free(p->lines, ix->lines_map_len);
	free(p->event_md);
	free(p->stat_md);
	free(ix->event_md_by_id.slot);
	free(ix->stat_md_by_id.slot);
	free(ix);
}

struct plane_ctx {
	xpf_capture *c;
	size_t i;
	bool lineless; /* lines walked for their events and times, not kept */
};

static int index_line(xpf_capture *c, xpf_plane *p, const wire_field *lf, xpf_line *ln, xpf_error *err)
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
		if (q < e && *q == TAG_XLINE_EVENTS) {
			const uint8_t *r = q + 1;
			uint64_t n;
			if (wire_varint(&r, e, &n) == WIRE_OK && n <= (uint64_t)(e - r)) {
				mark_event(p, ln - p->lines, ln->nevents, off_of(c, q));
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
		case XLINE_ID:
			if (g.wt == WT_VARINT)
				ln->id = (int64_t)g.v;
			break;
		case XLINE_NAME:
			if (g.wt == WT_LEN) {
				name = g.data;
				name_n = g.len;
			}
			break;
		case XLINE_TIMESTAMP_NS:
			if (g.wt == WT_VARINT)
				ln->timestamp_ns = (int64_t)g.v;
			break;
		case XLINE_EVENTS:
			if (g.wt == WT_LEN) {
				mark_event(p, ln - p->lines, ln->nevents, off_of(c, at));
				ln->nevents++;
			}
			break;
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
		if (g.num == MAP_KEY && g.wt == WT_VARINT) {
			*key = (int64_t)g.v;
			*has_key = true;
		} else if (g.num == MAP_VALUE && g.wt == WT_LEN) {
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
	const char *kind = f->num == XPLANE_EVENT_MD ? "event" : "stat";
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
	/* The value, an XEventMetadata or an XStatMetadata: its id and name. */
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
		if (g.num == XEVENT_MD_ID && g.wt == WT_VARINT) {
			id = (int64_t)g.v;
		} else if (g.num == XEVENT_MD_NAME && g.wt == WT_LEN) {
			nm = g.data;
			nm_n = g.len;
		}
	}
	if (!has_key)
		key = id;
	char *name = xpf_strndup(nm ? nm : (const uint8_t *)"", nm_n);
	if (f->num == XPLANE_EVENT_MD) {
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
			      uint64_t len, xpf_line *ln, long line)
{
	uint64_t o = off, e = off + len;
	memset(ln, 0, sizeof *ln);
	ln->offset = off;
	ln->length = len;
	uint64_t name_o = 0, name_n = 0;
	bool has_name = false;
	while (o < e) {
		size_t avail = e - o < 24 ? (size_t)(e - o) : 24;
		const uint8_t *q0 = xpf_cap_window_at(c, w, o, avail, p->offset + p->length);
		if (q0 == NULL)
			return false;
		/* the window holds at least avail bytes from q0, often more */
		const uint8_t *q = q0, *qe = w->buf + w->len;
		/* events: nearly all of a line; counted and skipped in a tight loop
		 * while they lie whole in the window and in the line */
		const uint8_t *lim = qe - q0 < (ptrdiff_t)(e - o) ? qe : q0 + (e - o);
		while (q < lim && *q == TAG_XLINE_EVENTS) {
			const uint8_t *r = q + 1;
			uint64_t n;
			if (wire_varint(&r, lim, &n) != WIRE_OK || n > (uint64_t)(lim - r))
				break;
			mark_event(p, line, ln->nevents, o + (uint64_t)(q - q0));
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
			if (num == XLINE_EVENTS) {
				mark_event(p, line, ln->nevents, o);
				ln->nevents++;
			} else if (num == XLINE_NAME) {
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
			case XLINE_ID: ln->id = (int64_t)g.v; break;
			case XLINE_TIMESTAMP_NS: ln->timestamp_ns = (int64_t)g.v; break;
			}
		}
		o += (uint64_t)(r - q0);
	}
	const uint8_t *nm = has_name && name_n ? xpf_cap_window_at(c, w, name_o, (size_t)name_n,
								   p->offset + p->length) :
						 NULL;
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
static bool plane_walk_window(xpf_capture *c, xpf_plane *p, struct plane_caps *caps, bool lineless)
{
	xpf_window w = { 0 };
	uint64_t o = p->offset, e = p->offset + p->length;
	bool ok = true;
	/* A big plane's lines: one mapping on huge pages that never moves, for
	 * as many lines as its bytes could hold (a line takes at least two);
	 * pages are touched as lines come, where a growing array would copy
	 * hundreds of thousands of lines.  Planes of 64 MiB and more only: a
	 * mapping takes at least a 2 MiB page, which a capture of many small
	 * planes must not cost each. */
	if (!lineless && !p->lines && p->length >= ((uint64_t)64 << 20) &&
	    p->length / 2 < SIZE_MAX / sizeof *p->lines) {
		size_t bound = (size_t)(p->length / 2) + 1;
		p->lines = xpf_map_huge(bound, sizeof *p->lines, &index_of(p)->lines_map_len);
		caps->lines = p->lines ? bound : 0;
	}
	while (ok && o < e) {
		size_t avail = e - o < 24 ? (size_t)(e - o) : 24;
		const uint8_t *q0 = xpf_cap_window_at(c, &w, o, avail, e), *q = q0;
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
		if (num == XPLANE_LINES && lineless) {
			xpf_line ln;
			if (!index_line_window(c, p, &w, d, v, &ln, -1)) {
				ok = false;
				break;
			}
			p->nevents += ln.nevents;
			first_ts_take(p, &ln);
		} else if (num == XPLANE_LINES) {
			xpf_line *ln = XPF_VEC_PUSH(p->lines, p->nlines, caps->lines);
			if (!index_line_window(c, p, &w, d, v, ln, (long)(p->nlines - 1))) {
				p->nlines--;
				ok = false;
				break;
			}
			p->nevents += ln->nevents;
		} else if (num == XPLANE_EVENT_MD || num == XPLANE_STAT_MD) {
			/* metadata: small, read where it lies */
			wire_field f = { .num = num,
					 .wt = WT_LEN,
					 .data = c->data + d,
					 .len = (size_t)v,
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
	struct plane_index *ix = xpf_calloc(1, sizeof *ix);
	xpf_plane *p = &ix->pub;
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
		if (f.num == XPLANE_LINES) {
			if (index_line(c, p, &f, XPF_VEC_PUSH(p->lines, p->nlines, caps.lines),
				       err) != XPF_OK)
				goto fail;
		} else if (f.num == XPLANE_EVENT_MD || f.num == XPLANE_STAT_MD) {
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
			xpf_fail(err, XPF_EMALFORMED,
				 "%s: malformed capture: %s: duplicate event metadata id %lld (byte %llu)",
				 c->label, where, (long long)p->event_md[i].id,
				 (unsigned long long)p->event_md[i].offset);
			goto fail;
		}
	for (size_t i = 1; i < p->n_stat_md; i++)
		if (p->stat_md[i].id == p->stat_md[i - 1].id) {
			xpf_fail(err, XPF_EMALFORMED,
				 "%s: malformed capture: %s: duplicate stat metadata id %lld (byte %llu)",
				 c->label, where, (long long)p->stat_md[i].id,
				 (unsigned long long)p->stat_md[i].offset);
			goto fail;
		}
	id_table_build(&ix->event_md_by_id, p->event_md, p->n_event_md, sizeof *p->event_md);
	id_table_build(&ix->stat_md_by_id, p->stat_md, p->n_stat_md, sizeof *p->stat_md);
	/* for xpf_capture_time_base, while the lines were just read (not in a
	 * pass over every plane afterwards) */
	for (size_t l = 0; l < p->nlines; l++)
		first_ts_take(p, &p->lines[l]);
	*out = p;
	return XPF_OK;
fail:
	xpf_cap_plane_free(p);
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
