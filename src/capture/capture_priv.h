/* What the capture layer's files share (capture.c opens and maps,
 * capture_plane.c indexes planes, capture_events.c reads events,
 * capture_stats.c their stats, capture_hlo.c unpacks HloProtos).  Not for other layers. */
#ifndef XPF_CAPTURE_PRIV_H
#define XPF_CAPTURE_PRIV_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/types.h>

#include "capture/capture.h"
#include "capture/wire.h"
#include "common/bisect.h"
#include "common/error.h"
#include "common/lazy.h"

struct xpf_capture {
	char *label;
	const uint8_t *data;
	size_t size;
	void *map; /* non-NULL when we mapped the file */
	size_t map_len;
	int fd;                       /* the bytes (the file, or the copy a gzip'd one
					 decompressed to), for xpf_window reads; -1: none */
	int gz_fd;                    /* a gzip'd capture's own file, watched; -1: fd is */
	atomic_uint shrunk;           /* faults past the file's new end (SIGBUS) */
	atomic_bool changed;          /* its size or mtime changed (xpf_capture_changed) */
	uint64_t file_size;           /* the file's size when it was opened */
	struct timespec opened_mtime; /* the file's mtime when it was opened */
	/* The file's absolute path (a daemon leaves its folder) and its device
	 * and inode when it was opened: another file there now (replaced,
	 * renamed over) is a change too.  NULL: not looked at. */
	char *real_path;
	dev_t dev;
	ino_t ino;
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
};

static inline uint64_t off_of(const xpf_capture *c, const uint8_t *p)
{
	return (uint64_t)(p - c->data);
}

/* "plane 3 '/host:CPU'" */
static inline void plane_where(const xpf_capture *c, size_t i, char *out, size_t n)
{
	const char *name = i < c->nplanes && c->heads[i].name ? c->heads[i].name : "";
	snprintf(out, n, "plane %zu '%s'", i, name);
}

static inline int wire_fail(xpf_error *err, const xpf_capture *c, const char *where, int st,
			    const wire_field *f, const uint8_t *at)
{
	if (st == WIRE_PAST_END && f->data) {
		bool past_file = f->len > (size_t)(c->data + c->size - f->data);
		return xpf_fail(err, XPF_EMALFORMED,
				"%s: malformed capture: %s: field %u: length %zu past end of %s (byte %llu)",
				c->label, where, f->num, f->len, past_file ? "file" : "its message",
				(unsigned long long)off_of(c, f->at));
	}
	return xpf_fail(err, XPF_EMALFORMED, "%s: malformed capture: %s: %s (byte %llu)", c->label,
			where, wire_strerror(st), (unsigned long long)off_of(c, at));
}

/* Metadata by id without a search when the ids are dense: index + 1 of
 * the id lo + i, 0 when absent; slot NULL: search. */
struct xpf_id_table {
	int64_t lo;
	size_t n;
	uint32_t *slot;
};

/* A plane's index: the xpf_plane that capture.h shows, and what the
 * capture layer keeps beside it.  Every xpf_plane is the first member of
 * one of these (plane_build allocates them). */
/* The marks of one line of more than XPF_LINE_MARK events
 * (xpf_line_marks). */
struct line_marks {
	int64_t line; /* first: found by find_id */
	size_t n, cap;
	xpf_event_pos *at;
};

struct plane_index {
	xpf_plane pub;
	struct xpf_id_table event_md_by_id, stat_md_by_id;
	struct xpf_intern *line_names; /* each line name kept once */
	size_t lines_map_len; /* lines is mapped (xpf_map_huge) of this many bytes; 0: malloc'd */
	struct line_marks *marks; /* by line, ascending */
	size_t nmarks, capmarks;
};

static inline struct plane_index *index_of(xpf_plane *p) { return (struct plane_index *)p; }

static inline const struct plane_index *index_of_const(const xpf_plane *p)
{
	return (const struct plane_index *)p;
}

/* Event and stat metadata are arrays of records that start with their
 * int64 id, sorted by it: one comparison and one search serve both. */
static inline int64_t leading_id(const void *rec)
{
	int64_t id;
	memcpy(&id, rec, sizeof id);
	return id;
}

static inline bool id_below(const void *rec, const void *id)
{
	return leading_id(rec) < *(const int64_t *)id;
}

static inline const void *find_id(const void *base, size_t n, size_t size, int64_t id)
{
	const char *v = base;
	size_t lo = xpf_lower_bound(&id, base, n, size, id_below);
	return lo < n && leading_id(v + lo * size) == id ? v + lo * size : NULL;
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

/* Event metadata by id, NULL when absent; inlined where millions of
 * events are read. */
static inline const xpf_event_md *event_md(const xpf_plane *p, int64_t id)
{
	return id_lookup(&index_of_const(p)->event_md_by_id, p->event_md, p->n_event_md,
			 sizeof *p->event_md, id);
}

/* A stat metadata's name by id, NULL when absent; inlined where millions
 * of stats are read. */
static inline const char *stat_name(const xpf_plane *p, int64_t id)
{
	const struct xpf_stat_md *m = id_lookup(&index_of_const(p)->stat_md_by_id, p->stat_md,
						p->n_stat_md, sizeof *p->stat_md, id);
	return m ? m->name : NULL;
}

/* Field numbers of the XSpace messages (reference §2; proto/xplane.proto). */
enum {
	XSPACE_PLANES = 1,
	XSPACE_ERRORS = 2,
	XSPACE_WARNINGS = 3,
	XSPACE_HOSTNAMES = 4,
	XPLANE_ID = 1,
	XPLANE_NAME = 2,
	XPLANE_LINES = 3,
	XPLANE_EVENT_MD = 4, /* map<int64, XEventMetadata> */
	XPLANE_STAT_MD = 5,  /* map<int64, XStatMetadata> */
	XPLANE_STATS = 6,
	MAP_KEY = 1, /* of a map entry */
	MAP_VALUE = 2,
	XLINE_ID = 1,
	XLINE_NAME = 2,
	XLINE_TIMESTAMP_NS = 3,
	XLINE_EVENTS = 4,
	XEVENT_METADATA_ID = 1,
	XEVENT_OFFSET_PS = 2,
	XEVENT_DURATION_PS = 3,
	XEVENT_STATS = 4,
	XEVENT_NUM_OCCURRENCES = 5,
	XEVENT_MD_ID = 1,
	XEVENT_MD_NAME = 2,
	XEVENT_MD_STATS = 5,
	XSTAT_MD_ID = 1,
	XSTAT_MD_NAME = 2,
	XSTAT_METADATA_ID = 1,
	XSTAT_DOUBLE = 2,
	XSTAT_UINT64 = 3,
	XSTAT_INT64 = 4,
	XSTAT_STR = 5,
	XSTAT_BYTES = 6,
	XSTAT_REF = 7,
};

/* The one-byte tags (field number << 3 | wire type) of the fields the
 * fast paths test by their first byte: every number here is below 16. */
#define XPF_TAG(num, wt) ((uint8_t)((num) << 3 | (wt)))
enum {
	TAG_XSPACE_PLANES = XPF_TAG(XSPACE_PLANES, WT_LEN),
	TAG_XSPACE_ERRORS = XPF_TAG(XSPACE_ERRORS, WT_LEN),
	TAG_XSPACE_WARNINGS = XPF_TAG(XSPACE_WARNINGS, WT_LEN),
	TAG_XSPACE_HOSTNAMES = XPF_TAG(XSPACE_HOSTNAMES, WT_LEN),
	TAG_XLINE_EVENTS = XPF_TAG(XLINE_EVENTS, WT_LEN),
	TAG_XEVENT_METADATA_ID = XPF_TAG(XEVENT_METADATA_ID, WT_VARINT),
	TAG_XEVENT_OFFSET_PS = XPF_TAG(XEVENT_OFFSET_PS, WT_VARINT),
	TAG_XEVENT_DURATION_PS = XPF_TAG(XEVENT_DURATION_PS, WT_VARINT),
	TAG_XEVENT_STATS = XPF_TAG(XEVENT_STATS, WT_LEN),
	TAG_XEVENT_NUM_OCCURRENCES = XPF_TAG(XEVENT_NUM_OCCURRENCES, WT_VARINT),
	TAG_XSTAT_METADATA_ID = XPF_TAG(XSTAT_METADATA_ID, WT_VARINT),
	TAG_XSTAT_DOUBLE = XPF_TAG(XSTAT_DOUBLE, WT_I64),
	TAG_XSTAT_UINT64 = XPF_TAG(XSTAT_UINT64, WT_VARINT),
	TAG_XSTAT_INT64 = XPF_TAG(XSTAT_INT64, WT_VARINT),
	TAG_XSTAT_STR = XPF_TAG(XSTAT_STR, WT_LEN),
	TAG_XSTAT_BYTES = XPF_TAG(XSTAT_BYTES, WT_LEN),
	TAG_XSTAT_REF = XPF_TAG(XSTAT_REF, WT_VARINT),
};

/* The next field `num` (wire type LEN) of a repeated-message run starting
 * at *p: its bytes in *data and *len, *p moved past it.  WIRE_OK, WIRE_END,
 * or an error (the caller then has the reference reader word it). */
static inline int next_len_field(const uint8_t **p, const uint8_t *end, uint32_t num,
				 const uint8_t **data, size_t *len)
{
	const uint8_t *q = *p;
	uint8_t want = num < 16 ? XPF_TAG(num, WT_LEN) : 0;
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

/* floor(a / 1000) for signed a */
static inline int64_t floor_div1000(int64_t a)
{
	int64_t q = a / 1000;
	if (a % 1000 < 0)
		q--;
	return q;
}

/* Between the files (capture_*.c). */
void xpf_cap_plane_free(void *plane);
int xpf_cap_map_file(const char *path, xpf_capture *c, xpf_error *err);
/* gunzip.c: whether fd's file begins as gzip does; its stream decompressed
 * into a new anonymous file *out of *size bytes (label names it in
 * messages). */
bool xpf_cap_is_gzip(int fd);
int xpf_cap_gunzip(int in, const char *label, int *out, uint64_t *size, xpf_error *err);
const char *xpf_cap_base_name(const char *path);
/* A capture with no file yet, its label a copy of label. */
xpf_capture *xpf_cap_new(const char *label);
const uint8_t *xpf_cap_window_at(const xpf_capture *c, xpf_window *w, uint64_t off, size_t n,
				 uint64_t end);

#endif
