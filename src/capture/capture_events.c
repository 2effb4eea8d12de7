/* Events: the reference reader (xpf_events_next), the read windows of big
 * scans, and the quick readers that run over millions of events
 * (capture.h). */
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
const uint8_t *xpf_cap_window_at(const xpf_capture *c, xpf_window *w, uint64_t off, size_t n,
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
	if (!xpf_cap_window_at(p->cap, w, off, 0, p->offset + p->length))
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
		xpf_fail(err, XPF_EMALFORMED,
			 "%s: malformed capture: %s: dangling event metadata id %lld (byte %llu)",
			 c->label, where, (long long)ev->metadata_id, (unsigned long long)ev->offset);
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

/* ---- the quick readers of the big scans ------------------------------ */

/* The next field `num` (wire type LEN) of a repeated-message run starting
 * at *p: its bytes in *data and *len, *p moved past it.  WIRE_OK, WIRE_END, or an
 * error (the caller then redoes the work the slow way for the message). */
static inline int next_len_field(const uint8_t **p, const uint8_t *end, uint32_t num,
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

/* r read from nothing yet: no id, no value.  Field by field rather than
 * with a compound literal (which clears the whole struct): this runs for
 * every stat read. */
static inline void raw_clear(xpf_raw_stat *r)
{
	r->metadata_id = r->i = 0;
	r->u = r->dbits = 0;
	r->s.p = NULL;
	r->s.n = 0;
	r->kind = XPF_STAT_NONE;
}

/* A stat's number or reference (uint64_value, int64_value or ref_value)
 * into r, as its last value field. */
static inline void raw_set_varint(xpf_raw_stat *r, uint8_t tag, uint64_t x)
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
static inline void raw_set_text(xpf_raw_stat *r, uint8_t tag, const uint8_t *p, size_t n)
{
	r->s.p = (const char *)p;
	r->s.n = n;
	r->kind = tag == TAG_XSTAT_STR ? XPF_STAT_STR : XPF_STAT_BYTES;
}

/* A stat's double_value from its 8 bytes at p into r. */
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
		case TAG_XSTAT_METADATA_ID: /* metadata_id */
			q++;
			if (wire_varint(&q, e, &x) != WIRE_OK)
				return false;
			r->metadata_id = (int64_t)x;
			continue;
		case TAG_XSTAT_DOUBLE: /* double_value */
			if (e - q < 9)
				return false;
			raw_set_double(r, q + 1);
			q += 9;
			continue;
		case TAG_XSTAT_UINT64:
		case TAG_XSTAT_INT64:
		case TAG_XSTAT_REF: { /* uint64, int64, ref */
			uint8_t t = *q++;
			if (wire_varint(&q, e, &x) != WIRE_OK)
				return false;
			raw_set_varint(r, t, x);
			continue;
		}
		case TAG_XSTAT_STR:
		case TAG_XSTAT_BYTES: { /* str, bytes */
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
		case 2:
			if (g.wt == WT_I64) {
				r->dbits = g.v;
				r->kind = XPF_STAT_DOUBLE;
			}
			break;
		case 3:
			if (g.wt == WT_VARINT) {
				r->u = g.v;
				r->kind = XPF_STAT_U64;
			}
			break;
		case 4:
			if (g.wt == WT_VARINT) {
				r->i = (int64_t)g.v;
				r->kind = XPF_STAT_I64;
			}
			break;
		case 5:
			if (g.wt == WT_LEN) {
				r->s.p = (const char *)g.data;
				r->s.n = g.len;
				r->kind = XPF_STAT_STR;
			}
			break;
		case 6:
			if (g.wt == WT_LEN) {
				r->s.p = (const char *)g.data;
				r->s.n = g.len;
				r->kind = XPF_STAT_BYTES;
			}
			break;
		case 7:
			if (g.wt == WT_VARINT) {
				r->u = g.v;
				r->kind = XPF_STAT_REF;
			}
			break;
		}
	}
	return true;
}

/* r as an xpf_stat named name (a reference's text not looked up). */
static inline void stat_of_raw(const xpf_raw_stat *r, const char *name, xpf_stat *st)
{
	double d;
	memcpy(&d, &r->dbits, 8);
	*st = (xpf_stat){ .metadata_id = r->metadata_id,
			  .name = name,
			  .kind = r->kind,
			  .d = d,
			  .u = r->u,
			  .i = r->i,
			  .s = r->s };
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
	if (e - q < 3 || q[0] != TAG_XSTAT_METADATA_ID || (q[1] & 0x80))
		return -1;
	int64_t id = q[1];
	uint64_t x;
	q += 2;
	uint8_t t = *q++;
	switch (t) {
	case TAG_XSTAT_UINT64:
	case TAG_XSTAT_INT64:
	case TAG_XSTAT_REF:
		if (wire_varint(&q, e, &x) != WIRE_OK || q != e)
			return -1;
		raw_clear(r);
		raw_set_varint(r, t, x);
		break;
	case TAG_XSTAT_STR:
	case TAG_XSTAT_BYTES:
		if (wire_varint(&q, e, &x) != WIRE_OK || x != (uint64_t)(e - q))
			return -1;
		raw_clear(r);
		raw_set_text(r, t, q, (size_t)x);
		break;
	case TAG_XSTAT_DOUBLE:
		if (e - q != 8)
			return -1;
		raw_clear(r);
		raw_set_double(r, q);
		break;
	default: return -1;
	}
	r->metadata_id = id;
	return id;
}

/* Stat [q, e) for pick w: 1 read into *r (a wanted one), 0 not wanted,
 * -1 malformed or unusual (the caller then reads the event's stats with
 * xpf_stats_next_of).  A plainly written one is decoded once. */
static inline int pick_stat(const uint8_t *q, const uint8_t *e, const xpf_pick *w, xpf_raw_stat *r)
{
	int64_t id = plain_stat(q, e, r);
	if (id >= 0)
		return pick_has(w, id) ? 1 : 0;
	if (!parse_stat(q, e, r))
		return -1;
	return pick_has(w, r->metadata_id) ? 1 : 0;
}

/* Moves to the iterator's next event message (field 4 of the line):
 * WIRE_OK with the message in [*data, *data + *len) and *after just past
 * it, WIRE_END, or an error.  Through a window, it is refilled ahead when
 * less than a few KiB are left, and where the message does not fit; where
 * the window cannot be refilled, the rest of the line is read through the
 * mapping. */
static inline __attribute__((always_inline)) int next_event_msg(xpf_event_iter *it,
								const uint8_t **after,
								const uint8_t **data, size_t *len)
{
	int rc;
	if (it->w && (size_t)(it->end - it->p) < 4096 && it->w->off + it->w->len < it->line_end &&
	    !events_refill(it))
		events_to_map(it);
	for (;;) {
		*after = it->p;
		rc = next_len_field(after, it->end, 4, data, len);
		if (rc == WIRE_OK || !it->w)
			return rc;
		/* past the window's end: refill there, or the mapping says */
		if (it->w->off + it->w->len >= it->line_end) {
			if (rc == WIRE_END)
				return rc;
			events_to_map(it);
		} else if (!events_refill(it)) {
			events_to_map(it);
		}
	}
}

/* Whether the stat field at q (its tag, length, then the XStat) is of the
 * commonest kind, four or five bytes: an id below 128 and a number or
 * reference of one or two bytes. */
static inline bool is_small_stat(const uint8_t *q, const uint8_t *e)
{
	return e - q >= 6 && (q[1] == 4 || q[1] == 5) && q[2] == TAG_XSTAT_METADATA_ID &&
	       q[3] < 0x80 &&
	       (q[4] == TAG_XSTAT_REF || q[4] == TAG_XSTAT_UINT64 || q[4] == TAG_XSTAT_INT64) &&
	       e - q >= 2 + q[1] && (q[1] == 4 ? q[5] < 0x80 : q[5] >= 0x80 && q[6] < 0x80);
}

/* A small stat (is_small_stat) at q into out[*k] when the pick wants it,
 * read as pick_stat would.  *k: how many so far; -1 once the caller must
 * read the event's stats with xpf_stats_next_of (more than max wanted). */
static inline void pick_small_stat(const uint8_t *q, const xpf_pick *pick, xpf_raw_stat *out,
				   size_t max, int *k)
{
	if (*k < 0 || !pick_has(pick, q[3]))
		return;
	uint64_t val = q[1] == 4 ? q[5] : (uint64_t)(q[5] & 0x7f) | (uint64_t)q[6] << 7;
	xpf_raw_stat spare, *r = (size_t)*k < max ? &out[*k] : &spare;
	raw_clear(r);
	r->metadata_id = q[3];
	raw_set_varint(r, q[4], val);
	*k = r == &spare ? -1 : *k + 1;
}

/* The XStat [q, e) into out[*k] (no copy) when the pick wants it; *k as
 * for pick_small_stat, and -1 also for a stat malformed or unusual. */
static inline void pick_any_stat(const uint8_t *q, const uint8_t *e, const xpf_pick *pick,
				 xpf_raw_stat *out, size_t max, int *k)
{
	if (*k < 0)
		return;
	xpf_raw_stat spare, *r = (size_t)*k < max ? &out[*k] : &spare;
	int got = pick_stat(q, e, pick, r);
	*k = got < 0 || (got && r == &spare) ? -1 : *k + got;
}

/* The event message [q, e): its varints into v (by field number 1, 2, 3,
 * 5) and, with a pick, its wanted stats into out (*k as for
 * pick_small_stat; -1 also for a field no writer uses).  false: malformed,
 * for the reference decoder to say where. */
static inline __attribute__((always_inline)) bool read_event_msg(const uint8_t *q, const uint8_t *e,
								 const xpf_pick *pick,
								 xpf_raw_stat *out, size_t max,
								 int64_t v[6], int *k)
{
	while (q < e) {
		uint8_t t = *q;
		uint64_t x;
		if (t == TAG_XEVENT_METADATA_ID || t == TAG_XEVENT_OFFSET_PS ||
		    t == TAG_XEVENT_DURATION_PS || t == TAG_XEVENT_NUM_OCCURRENCES) {
			q++;
			if (wire_varint(&q, e, &x) != WIRE_OK)
				return false;
			v[t >> 3] = (int64_t)x;
			continue;
		}
		if (!pick && t == TAG_XEVENT_STATS && q + 1 < e && q[1] < 0x80 && q[1] <= e - q - 2) {
			q += 2 + q[1]; /* a stat of fewer than 128 bytes: skipped */
			continue;
		}
		if (t == TAG_XEVENT_STATS && is_small_stat(q, e)) {
			if (pick)
				pick_small_stat(q, pick, out, max, k);
			q += 2 + q[1];
			continue;
		}
		if (t == TAG_XEVENT_STATS) { /* any other stat: skipped, or picked */
			q++;
			if (wire_varint(&q, e, &x) != WIRE_OK || x > (uint64_t)(e - q))
				return false;
			if (pick)
				pick_any_stat(q, q + x, pick, out, max, k);
			q += x;
			continue;
		}
		wire_field g;
		if (wire_next(&q, e, &g) != WIRE_OK)
			return false;
		if (g.wt == WT_VARINT && g.num <= 5 && g.num != 4)
			v[g.num] = (int64_t)g.v;
		*k = -1; /* unusual: the pick is left to xpf_stats_next_of */
	}
	return true;
}

/* Whether an event at offset_ps for duration_ps on a line that starts at
 * base (ns) has a start and an end in ns that xpf_events_next accepts. */
static inline bool event_times_fit(int64_t base, int64_t offset_ps, int64_t duration_ps)
{
	/* offset and duration below 2^61 and a base within +-2^61 cannot
	 * overflow (nor can their ns): only other values need the checks */
	const uint64_t lim = (uint64_t)1 << 61;
	int64_t end_ps, t;
	if ((uint64_t)offset_ps < lim && (uint64_t)duration_ps < lim && (uint64_t)base + lim < 2 * lim)
		return true;
	return !(duration_ps < 0 || __builtin_add_overflow(offset_ps, duration_ps, &end_ps) ||
		 __builtin_add_overflow(base, floor_div1000(offset_ps), &t) ||
		 __builtin_add_overflow(base, floor_div1000(end_ps), &t));
}

/* The event the quick reading did not take (malformed, or unusual) read by
 * the reference decoder, which says what and where when it is malformed. */
static inline __attribute__((always_inline)) int head_by_reference(xpf_event_iter *it,
								   xpf_event_head *h, int *np,
								   xpf_error *err)
{
	const xpf_plane *pl = it->plane;
	xpf_event ev;
	if (np)
		*np = -1;
	int rc = xpf_events_next(it, &ev, err);
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

/* xpf_events_next_head, and with a pick that of xpf_stats_pick in the
 * same pass over the event's bytes (*np: its result). */
static inline __attribute__((always_inline)) int next_head(xpf_event_iter *it, xpf_event_head *h,
							   const xpf_pick *pick, xpf_raw_stat *out,
							   size_t max, int *np, xpf_error *err)
{
	const xpf_plane *pl = it->plane;
	const uint8_t *p, *data;
	size_t len;
	int64_t v[6] = { 0, 0, 0, 0, 0, 0 }; /* by field number 1, 2, 3, 5 */
	int k = 0;
	if (it->p == NULL)
		return 0;
	int rc = next_event_msg(it, &p, &data, &len);
	if (rc == WIRE_END) {
		it->p = p;
		return 0;
	}
	const xpf_event_md *md = NULL;
	if (rc == WIRE_OK && read_event_msg(data, data + len, pick, out, max, v, &k))
		md = event_md(pl, v[1]);
	if (md == NULL || !event_times_fit(pl->lines[it->line].timestamp_ns, v[2], v[3]))
		return head_by_reference(it, h, np, err);
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

int xpf_stats_next_of(xpf_stat_iter *it, const int64_t *ids, size_t n, xpf_stat *st, xpf_error *err)
{
	const xpf_plane *pl = it->plane;
	for (;;) {
		const uint8_t *at = it->p, *p = it->p, *data;
		size_t len;
		int rc = next_len_field(&p, it->end, it->field, &data, &len);
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
		if (t == TAG_XEVENT_STATS) { /* a stat */
			q++;
			if (wire_varint(&q, e, &x) != WIRE_OK || x > (uint64_t)(e - q))
				return -1;
			/* into the next slot (no copy); one past max: -1, the
			 * caller reads them with xpf_stats_next_of */
			xpf_raw_stat spare, *r = k < max ? &out[k] : &spare;
			int got = pick_stat(q, q + x, pick, r);
			q += x;
			if (got < 0 || (got && r == &spare))
				return -1;
			k += (size_t)got;
			continue;
		}
		if (t == TAG_XEVENT_METADATA_ID || t == TAG_XEVENT_OFFSET_PS ||
		    t == TAG_XEVENT_DURATION_PS ||
		    t == TAG_XEVENT_NUM_OCCURRENCES) { /* the head's varints */
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
