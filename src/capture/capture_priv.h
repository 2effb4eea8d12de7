/* What the capture layer's files share (capture.c opens and maps,
 * capture_plane.c indexes planes and reads stats, capture_events.c reads
 * events, capture_hlo.c unpacks HloProtos).  Not for other layers. */
#ifndef XPF_CAPTURE_PRIV_H
#define XPF_CAPTURE_PRIV_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "capture/capture.h"
#include "capture/wire.h"
#include "common/error.h"
#include "common/lazy.h"

struct xpf_stat_md {
	int64_t id;
	const char *name;
	uint64_t offset; /* of its map entry in the file (for messages) */
};

struct xpf_capture {
	char *label;
	const uint8_t *data;
	size_t size;
	void *map; /* non-NULL when we mapped the file */
	size_t map_len;
	int fd;             /* the file, for xpf_window reads; -1: none */
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

/* What a plane's index keeps beside its public fields. */
struct xpf_plane_private {
	struct xpf_id_table event_md_by_id, stat_md_by_id;
	struct xpf_intern *line_names; /* each line name kept once */
	size_t lines_map_len; /* lines is mapped (xpf_map_huge) of this many bytes; 0: malloc'd */
};

/* Event and stat metadata are arrays of records that start with their
 * int64 id, sorted by it: one comparison and one search serve both. */
static inline int64_t leading_id(const void *rec)
{
	int64_t id;
	memcpy(&id, rec, sizeof id);
	return id;
}

static inline const void *find_id(const void *base, size_t n, size_t size, int64_t id)
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
	return id_lookup(&p->priv->event_md_by_id, p->event_md, p->n_event_md, sizeof *p->event_md,
			 id);
}

/* Inlined where millions of events and stats are read. */
static inline const char *stat_name(const xpf_plane *p, int64_t id)
{
	const struct xpf_stat_md *m =
		id_lookup(&p->priv->stat_md_by_id, p->stat_md, p->n_stat_md, sizeof *p->stat_md, id);
	return m ? m->name : NULL;
}

/* The one-byte tags (field number << 3 | wire type) of the fields the
 * fast paths test by their first byte: every number here is below 16. */
#define XPF_TAG(num, wt) ((uint8_t)((num) << 3 | (wt)))
enum {
	TAG_XSPACE_PLANES = XPF_TAG(1, WT_LEN),
	TAG_XSPACE_ERRORS = XPF_TAG(2, WT_LEN),
	TAG_XSPACE_WARNINGS = XPF_TAG(3, WT_LEN),
	TAG_XSPACE_HOSTNAMES = XPF_TAG(4, WT_LEN),
	TAG_XLINE_EVENTS = XPF_TAG(4, WT_LEN),
	TAG_XEVENT_METADATA_ID = XPF_TAG(1, WT_VARINT),
	TAG_XEVENT_OFFSET_PS = XPF_TAG(2, WT_VARINT),
	TAG_XEVENT_DURATION_PS = XPF_TAG(3, WT_VARINT),
	TAG_XEVENT_STATS = XPF_TAG(4, WT_LEN),
	TAG_XEVENT_NUM_OCCURRENCES = XPF_TAG(5, WT_VARINT),
	TAG_XSTAT_METADATA_ID = XPF_TAG(1, WT_VARINT),
	TAG_XSTAT_DOUBLE = XPF_TAG(2, WT_I64),
	TAG_XSTAT_UINT64 = XPF_TAG(3, WT_VARINT),
	TAG_XSTAT_INT64 = XPF_TAG(4, WT_VARINT),
	TAG_XSTAT_STR = XPF_TAG(5, WT_LEN),
	TAG_XSTAT_BYTES = XPF_TAG(6, WT_LEN),
	TAG_XSTAT_REF = XPF_TAG(7, WT_VARINT),
};

/* Between the files (capture_*.c). */
void xpf_cap_plane_free(void *plane);
int xpf_cap_map_file(const char *path, xpf_capture *c, xpf_error *err);
const char *xpf_cap_base_name(const char *path);
const uint8_t *xpf_cap_window_at(const xpf_capture *c, xpf_window *w, uint64_t off, size_t n,
				 uint64_t end);

#endif
