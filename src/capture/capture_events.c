/* Events: the read windows of big scans and the one event reader,
 * xpf_events_next (capture.h).  It reads an event's head in one quick pass
 * over its bytes; anything that pass does not vouch for is read again by
 * the reference decoder, which says what is wrong and where. */
#include "capture/capture_priv.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/alloc.h"

/* ---- windows ---------------------------------------------------------- */

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

void xpf_events_begin(const xpf_plane *p, size_t line, xpf_window *w, xpf_event_iter *it)
{
	xpf_event_pos start = { line < p->nlines ? p->lines[line].offset : 0, 0 };
	xpf_events_begin_at(p, line, start, UINT64_MAX, w, it);
}

void xpf_events_begin_at(const xpf_plane *p, size_t line, xpf_event_pos pos, uint64_t end,
			 xpf_window *w, xpf_event_iter *it)
{
	it->plane = p;
	it->line = line;
	it->next_index = pos.index;
	it->w = NULL;
	it->line_end = 0;
	it->p = it->end = NULL;
	if (line >= p->nlines)
		return;
	const xpf_line *ln = &p->lines[line];
	uint64_t off = pos.offset;
	it->line_end = end < ln->offset + ln->length ? end : ln->offset + ln->length;
	if (off < ln->offset || off > it->line_end)
		return; /* not a position on this line: no events */
	if (w && p->cap->fd >= 0 && xpf_cap_window_at(p->cap, w, off, 0, p->offset + p->length)) {
		it->w = w;
		it->p = w->buf + (off - w->off);
		uint64_t wend = w->off + w->len < it->line_end ? w->off + w->len : it->line_end;
		it->end = w->buf + (wend - w->off);
		return;
	}
	it->p = p->cap->data + off;
	it->end = p->cap->data + it->line_end;
}

xpf_event_pos xpf_events_pos(const xpf_event_iter *it)
{
	xpf_event_pos pos = { it->line_end, it->next_index };
	if (it->p)
		pos.offset = it->w ? iter_off(it) : off_of(it->plane->cap, it->p);
	return pos;
}

/* ---- the reference decoder -------------------------------------------- */

static void event_where(const xpf_event_iter *it, size_t idx, char *out, size_t n)
{
	plane_where(it->plane->cap, it->plane->index, out, n);
	size_t l = strlen(out);
	snprintf(out + l, n - l, ", line %zu, event %zu", it->line, idx);
}

/* The iterator's next event, every field through the general wire reader,
 * through the mapping: what xpf_events_next gives, or its error worded. */
static int events_next_ref(xpf_event_iter *it, xpf_event *ev, xpf_error *err)
{
	const xpf_plane *pl = it->plane;
	const xpf_capture *c = pl->cap;
	char where[400];
	wire_field f, g;
	int rc;
	if (it->w)
		events_to_map(it);
	do {
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
	} while (!(f.num == XLINE_EVENTS && f.wt == WT_LEN));
	size_t idx = it->next_index++;
	uint64_t offset = off_of(c, f.data);
	int64_t v[XEVENT_NUM_OCCURRENCES + 1] = { 0 }; /* by field number */
	const uint8_t *q = f.data, *e = f.data + f.len;
	while ((rc = wire_next(&q, e, &g)) == WIRE_OK)
		if (g.wt == WT_VARINT && g.num <= XEVENT_NUM_OCCURRENCES)
			v[g.num] = (int64_t)g.v;
	const char *bad = NULL;
	const xpf_event_md *md = NULL;
	int64_t base = pl->lines[it->line].timestamp_ns, end_ps, t;
	if (rc == WIRE_END && (md = event_md(pl, v[XEVENT_METADATA_ID])) == NULL)
		bad = "dangling event metadata id";
	else if (rc == WIRE_END &&
		 (v[XEVENT_DURATION_PS] < 0 ||
		  __builtin_add_overflow(v[XEVENT_OFFSET_PS], v[XEVENT_DURATION_PS], &end_ps) ||
		  __builtin_add_overflow(base, floor_div1000(v[XEVENT_OFFSET_PS]), &t) ||
		  __builtin_add_overflow(base, floor_div1000(end_ps), &t)))
		bad = "time out of range";
	if (rc != WIRE_END || bad) {
		event_where(it, idx, where, sizeof where);
		if (rc != WIRE_END)
			wire_fail(err, c, where, rc, &g, q);
		else if (md == NULL)
			xpf_fail(err, XPF_EMALFORMED,
				 "%s: malformed capture: %s: %s %lld (byte %llu)", c->label, where,
				 bad, (long long)v[XEVENT_METADATA_ID], (unsigned long long)offset);
		else
			xpf_fail(err, XPF_EMALFORMED,
				 "%s: malformed capture: %s: %s (line base %lld ns, offset %lld ps, duration %lld ps) (byte %llu)",
				 c->label, where, bad, (long long)base,
				 (long long)v[XEVENT_OFFSET_PS], (long long)v[XEVENT_DURATION_PS],
				 (unsigned long long)offset);
		it->p = NULL;
		return -1;
	}
	*ev = (xpf_event){ .line = it->line,
			   .index = idx,
			   .md = (size_t)(md - pl->event_md),
			   .name = md->name,
			   .offset_ps = v[XEVENT_OFFSET_PS],
			   .duration_ps = v[XEVENT_DURATION_PS],
			   .msg = f.data,
			   .msg_len = f.len,
			   .offset = offset };
	return 1;
}

/* ---- the quick pass --------------------------------------------------- */

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
		rc = next_len_field(after, it->end, XLINE_EVENTS, data, len);
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

/* The event message [q, e): its varints into v (by field number); its
 * stats skipped by their length (a stat of fewer than 128 bytes at once).
 * false: malformed, for the reference decoder to say where. */
static inline __attribute__((always_inline)) bool read_event_msg(const uint8_t *q, const uint8_t *e,
								 int64_t v[XEVENT_NUM_OCCURRENCES + 1])
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
		if (t == TAG_XEVENT_STATS && q + 1 < e && q[1] < 0x80 && q[1] <= e - q - 2) {
			q += 2 + q[1];
			continue;
		}
		wire_field g;
		if (wire_next(&q, e, &g) != WIRE_OK)
			return false;
		if (g.wt == WT_VARINT && g.num <= XEVENT_NUM_OCCURRENCES)
			v[g.num] = (int64_t)g.v;
	}
	return true;
}

/* Whether an event at offset_ps for duration_ps on a line that starts at
 * base (ns) has a start and an end in ns that fit (as the reference
 * decoder checks). */
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

int xpf_events_next(xpf_event_iter *it, xpf_event *ev, xpf_error *err)
{
	const xpf_plane *pl = it->plane;
	const uint8_t *p, *data;
	size_t len;
	int64_t v[XEVENT_NUM_OCCURRENCES + 1] = { 0 }; /* by field number */
	if (it->p == NULL)
		return 0;
	int rc = next_event_msg(it, &p, &data, &len);
	if (rc == WIRE_END) {
		it->p = p;
		return 0;
	}
	const xpf_event_md *md = NULL;
	if (rc == WIRE_OK && read_event_msg(data, data + len, v))
		md = event_md(pl, v[XEVENT_METADATA_ID]);
	if (md == NULL || !event_times_fit(pl->lines[it->line].timestamp_ns, v[XEVENT_OFFSET_PS],
					   v[XEVENT_DURATION_PS]))
		return events_next_ref(it, ev, err);
	ev->line = it->line;
	ev->index = it->next_index++;
	ev->md = (size_t)(md - pl->event_md);
	ev->name = md->name;
	ev->offset_ps = v[XEVENT_OFFSET_PS];
	ev->duration_ps = v[XEVENT_DURATION_PS];
	ev->msg = data;
	ev->msg_len = len;
	ev->offset = it->w ? it->w->off + (uint64_t)(data - it->w->buf) : off_of(pl->cap, data);
	it->p = p;
	return 1;
}
