/* Reading a profiler capture (an XSpace protobuf, reference §1–§4).
 *
 * The model: the file is mapped read-only and never copied (a gzip'd one
 * is decompressed once, into an anonymous file mapped the same way).  Opening scans
 * only the XSpace framing (where each plane starts and ends, its id and name)
 * and indexes the `/host:metadata` plane's modules, so that the tree's shape
 * is known at once even for GBs.  Everything else is decoded on demand:
 *  - xpf_capture_plane() indexes one plane (metadata maps, line headers) the
 *    first time it is asked for and keeps the index;
 *  - events and stats are streamed straight from the file's bytes by the
 *    two readers below, xpf_events_next and xpf_stats_next (no per-event
 *    allocation);
 *  - xpf_capture_module_hlo() unpacks one module's HloProto with protobuf-c,
 *    a part at a time, for the caller to free.
 * All of these are safe to call from several threads at once.
 *
 * Lifetimes: every pointer handed out (names, xpf_str values, planes) but
 * the HloProto parts stays valid until xpf_capture_free().  Strings typed `const
 * char *` are NUL-terminated copies; `xpf_str` values point into the mapped
 * file and are not NUL-terminated.
 *
 * Errors say what and where: "plane 3 '/host:CPU', line 2, event 17: length
 * 4294967295 past end of file (byte 123456)". */
#ifndef XPF_CAPTURE_H
#define XPF_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "hlo.pb-c.h"

typedef struct xpf_capture xpf_capture;

typedef struct xpf_str {
	const char *p;
	size_t n;
} xpf_str;

bool xpf_str_eq(xpf_str s, const char *lit);
/* malloc'd NUL-terminated copy (abort on OOM). */
char *xpf_str_dup(xpf_str s);

/* ---- stats ---------------------------------------------------------- */

enum xpf_stat_kind {
	XPF_STAT_NONE = 0, /* no value set */
	XPF_STAT_DOUBLE,
	XPF_STAT_U64,
	XPF_STAT_I64,
	XPF_STAT_STR,   /* str_value */
	XPF_STAT_BYTES, /* bytes_value */
	XPF_STAT_REF,   /* ref_value, already resolved into .s */
};

typedef struct xpf_stat {
	int64_t metadata_id;
	const char *name; /* the stat metadata's name */
	enum xpf_stat_kind kind;
	double d;
	uint64_t u; /* U64, and REF (the referenced id) */
	int64_t i;
	xpf_str s; /* STR, BYTES, REF (the referenced metadata's name) */
} xpf_stat;

/* Numeric value of any numeric kind (a double only when integral and in
 * range).  Return false when the stat holds no number. */
bool xpf_stat_i64(const xpf_stat *s, int64_t *out);
bool xpf_stat_u64(const xpf_stat *s, uint64_t *out);
/* A number as a double (double, int64 or uint64 value). */
bool xpf_stat_f64(const xpf_stat *s, double *out);
/* String value: str_value or ref_value.  False otherwise. */
bool xpf_stat_text(const xpf_stat *s, xpf_str *out);

/* ---- planes, lines ------------------------------------------------- */

/* One XLine (its display_name and duration_ps are not kept: nothing reads
 * them, and a long capture has hundreds of thousands of lines). */
typedef struct xpf_line {
	int64_t id;
	const char *name;
	int64_t timestamp_ns;
	size_t nevents;
	uint64_t offset, length; /* the XLine message's bytes in the file */
} xpf_line;

typedef struct xpf_event_md {
	int64_t id;
	const char *name;        /* (display_name is not kept: nothing reads it) */
	uint64_t offset, length; /* the XEventMetadata message in the file */
} xpf_event_md;

typedef struct xpf_stat_md {
	int64_t id;
	const char *name;
	uint64_t offset; /* the XStatMetadata message (or its map entry) in the file */
} xpf_stat_md;

typedef struct xpf_plane {
	size_t index; /* position in the XSpace (0-based) */
	int64_t id;
	const char *name;
	uint64_t offset, length; /* the XPlane message in the file */
	size_t nlines;
	xpf_line *lines;
	size_t n_event_md; /* sorted by id */
	xpf_event_md *event_md;
	size_t n_stat_md; /* sorted by id */
	xpf_stat_md *stat_md;
	uint64_t nevents;  /* over all lines */
	bool has_first_ts; /* a line holds events; */
	int64_t first_ts;  /* then the earliest timestamp_ns of such a line */
	struct xpf_capture *cap;
} xpf_plane;

/* ---- events and their stats ---------------------------------------- */

/* One XEvent.  Its times are offset_ps from its line's timestamp_ns; the
 * reader has checked that offset_ps + duration_ps and their ns on the line
 * fit in int64 (SPEC §6: a capture's numbers are not trusted). */
typedef struct xpf_event {
	size_t line;      /* index of its line in the plane */
	size_t index;     /* within its line */
	size_t md;        /* its metadata, plane->event_md[md] */
	const char *name; /* plane->event_md[md].name */
	int64_t offset_ps;
	int64_t duration_ps; /* >= 0 */
	const uint8_t *msg;  /* the XEvent message bytes (for its stats) */
	size_t msg_len;
	uint64_t offset; /* msg's offset in the capture */
} xpf_event;

/* A buffer that big scans read the capture through (pread), reused from one
 * line to the next, instead of touching the mapping: on virtual machines
 * whose page-table walks are costly, reading through the mapping costs
 * several times a pread of the same bytes.  Zero-initialise; release with
 * xpf_window_release. */
typedef struct xpf_window {
	uint8_t *buf;
	size_t cap;
	uint64_t off; /* the capture's bytes [off, off + len) are in buf */
	size_t len;
} xpf_window;
void xpf_window_release(xpf_window *w);

/* The events of one line, in the order of the file.  The fields are the
 * reader's own state: begin it with xpf_events_begin, then only read it
 * through xpf_events_next. */
typedef struct xpf_event_iter {
	const xpf_plane *plane;
	size_t line;
	const uint8_t *p, *end;
	size_t next_index;
	xpf_window *w;     /* non-NULL: p and end point into w->buf */
	uint64_t line_end; /* the line's end in the capture */
} xpf_event_iter;

/* Line `line` of p, read through w (see xpf_window) or, with w NULL (or a
 * capture without a file, xpf_capture_open_mem), through the mapping.
 * Through a window, what an event holds (msg, its stats' strings) points
 * into w->buf and is valid only until the iterator's next call: copy what
 * is kept (ev.offset says where the bytes are in the capture). */
void xpf_events_begin(const xpf_plane *p, size_t line, xpf_window *w, xpf_event_iter *it);
/* 1: *ev filled; 0: end of the line; -1: malformed (err set, with where). */
int xpf_events_next(xpf_event_iter *it, xpf_event *ev, xpf_error *err);

/* Where an iterator stands: the index of the event xpf_events_next reads
 * next and the capture offset to read it from.  A reader that walks a long
 * line once can note a few of these and come back to a part of the line
 * without reading it all again. */
typedef struct xpf_event_pos {
	uint64_t offset;
	size_t index;
} xpf_event_pos;
xpf_event_pos xpf_events_pos(const xpf_event_iter *it);
/* Every XPF_LINE_MARK-th event of a long line, noted by the plane's index
 * (which walks every event anyway): a reader can start at a mark, and a
 * line can be read in parts side by side.  The marks of line `line`
 * (mark k: event k * XPF_LINE_MARK, mark 0 the line's start) into *at;
 * their count, 0 for a line of at most XPF_LINE_MARK events. */
#define XPF_LINE_MARK ((size_t)1 << 12)
size_t xpf_line_marks(const xpf_plane *p, size_t line, const xpf_event_pos **at);

/* The events of line `line` from pos (one of xpf_events_pos's answers on
 * that line) up to the capture offset end (another, or the line's end):
 * as xpf_events_begin otherwise. */
void xpf_events_begin_at(const xpf_plane *p, size_t line, xpf_event_pos pos, uint64_t end,
			 xpf_window *w, xpf_event_iter *it);

/* The stats a reader wants of millions of events, by name, prepared once
 * for a plane: each stat metadata id with one of those names and the tag
 * the reader gave the name.  Zero-initialise, then add names. */
#define XPF_STAT_WANT_MAX 64
typedef struct xpf_stat_want {
	uint8_t small[128]; /* by id below 128: 1 + its tag; 0: not wanted */
	size_t n;           /* ids[0..n), tags[0..n): every wanted id */
	int64_t ids[XPF_STAT_WANT_MAX];
	uint8_t tags[XPF_STAT_WANT_MAX];
} xpf_stat_want;
/* Want p's stats named name, tagged tag (below 255): false when more ids
 * have that name than the set has room for (those that fit are added). */
bool xpf_stat_want_add(xpf_stat_want *w, const xpf_plane *p, const char *name, unsigned tag);
/* The tag a wanted id was added with; -1 when it is not wanted. */
static inline int xpf_stat_want_tag(const xpf_stat_want *w, int64_t id)
{
	if (id >= 0 && id < 128)
		return (int)w->small[id] - 1;
	for (size_t k = 0; k < w->n; k++)
		if (w->ids[k] == id)
			return w->tags[k];
	return -1;
}

/* The stats of an event, of a plane, or of an event metadata, in the order
 * of the file.  The fields are the reader's own state, as for
 * xpf_event_iter. */
typedef struct xpf_stat_iter {
	const xpf_plane *plane;
	const xpf_stat_want *want; /* NULL: every stat */
	const uint8_t *p, *end;
	const uint8_t *base; /* p - base + base_off is p's offset in the capture */
	uint64_t base_off;
	uint32_t field;    /* the repeated XStat field number in the message */
	const char *where; /* for error messages */
	long line, event;  /* for error messages; -1 when not an event's stats */
	size_t next_index;
	bool scope_tree; /* the stats of XPF_SCOPE_TREE_PLANE */
} xpf_stat_iter;

/* The plane where the GPU tracer keeps its tree of scope ranges (tsl's
 * kScopeRangeIdTreePlaneName).  It writes each edge as a plane-level stat
 * whose metadata_id is the child scope's id and whose integer value is
 * the parent's, with no stat metadata for those ids: such a stat is read
 * with the name XPF_STAT_SCOPE_PARENT, not refused as dangling.  A stat of
 * that plane whose id has metadata (process_id) reads as any other. */
#define XPF_SCOPE_TREE_PLANE "/host:__ScopeRangeCallStack__"
#define XPF_STAT_SCOPE_PARENT "scope parent id"

/* With want, only the stats it wants are given: the others are checked as
 * bytes, not for a known metadata id (SPEC §6: a fault fails only what
 * needs the part; xplanefs --check and capture/errors.txt still name such
 * a stat).  Without, every stat. */
void xpf_stats_of_event(const xpf_plane *p, const xpf_event *ev, const xpf_stat_want *want,
			xpf_stat_iter *it);
void xpf_stats_of_plane(const xpf_plane *p, xpf_stat_iter *it);
void xpf_stats_of_event_md(const xpf_plane *p, const xpf_event_md *md, xpf_stat_iter *it);
/* 1: *st filled; 0: end; -1: malformed (err set, with where). */
int xpf_stats_next(xpf_stat_iter *it, xpf_stat *st, xpf_error *err);
/* The first stat of that name: 1 found, 0 absent, -1 malformed. */
int xpf_event_stat(const xpf_plane *p, const xpf_event *ev, const char *name, xpf_stat *out,
		   xpf_error *err);
int xpf_plane_stat(const xpf_plane *p, const char *name, xpf_stat *out, xpf_error *err);

/* ---- the capture ---------------------------------------------------- */

typedef struct xpf_plane_head {
	int64_t id;
	const char *name;
	uint64_t offset, length;
} xpf_plane_head;

typedef struct xpf_module_ref {
	const char *name;    /* the metadata name, e.g. "jit_train_step(123)" */
	uint64_t program_id; /* `program_id` stat, else the entry's id */
	bool has_hlo;
	const uint8_t *hlo; /* serialized xla.HloProto, in the mapping */
	size_t hlo_len;
	uint64_t hlo_offset;
} xpf_module_ref;

/* Open a `.xplane.pb` (kind XSPACE) read-only.  Validates the XSpace framing,
 * every plane's framing and name, and the metadata plane's modules; refuses a
 * protobuf that is not an XSpace (exit 3).  A gzip'd file (by its first
 * bytes) is decompressed once into an anonymous file, which is mapped
 * instead: read as the file it decompresses to, its label without .gz. */
int xpf_capture_open(const char *path, xpf_capture **out, xpf_error *err);
/* Open a bare xla.HloProto file as a capture with no planes and one module. */
int xpf_capture_open_hlo(const char *path, xpf_capture **out, xpf_error *err);
/* Same, over bytes already in memory (tests, fuzzing); not copied. */
int xpf_capture_open_mem(const void *data, size_t len, const char *label, xpf_capture **out,
			 xpf_error *err);
void xpf_capture_free(xpf_capture *c);

const char *xpf_capture_label(const xpf_capture *c); /* file name for messages */
/* How many reads faulted past the file's end since it was mapped (it was
 * truncated under us: those reads saw zeros); 0: the file is whole. */
unsigned xpf_capture_shrunk(xpf_capture *c);
/* Whether the file changed since it was opened (SPEC §6): it shrank under
 * us (above), or its size or modification time is no longer what it was
 * (rewritten in place, with no read past its end: its bytes are another
 * capture's, which decode as garbage), or its path names another file now
 * (replaced: what the mount shows is no longer what is there).  Looks at
 * the file (fstat, stat of its path) until it finds a change, then stays
 * true: for a gzip'd one, the .gz itself (its copy never changes).  False
 * for captures opened from memory. */
bool xpf_capture_changed(xpf_capture *c);
/* The same without looking at the file: a change found before. */
bool xpf_capture_changed_seen(xpf_capture *c);
uint64_t xpf_capture_size(const xpf_capture *c);
bool xpf_capture_is_hlo_only(const xpf_capture *c);

size_t xpf_capture_nplanes(const xpf_capture *c);
const xpf_plane_head *xpf_capture_plane_head(const xpf_capture *c, size_t i);
/* Index of the first plane with that name, or -1. */
long xpf_capture_find_plane(const xpf_capture *c, const char *name);
/* Index plane i (once; later calls return the same object). */
int xpf_capture_plane(xpf_capture *c, size_t i, const xpf_plane **out, xpf_error *err);

/* XSpace.errors / warnings / hostnames (decoded at open). */
size_t xpf_capture_nstrings(const xpf_capture *c, int which /* 2 errors, 3 warnings, 4 hostnames */);
const char *xpf_capture_string(const xpf_capture *c, int which, size_t i);

size_t xpf_capture_nmodules(const xpf_capture *c);
const xpf_module_ref *xpf_capture_module(const xpf_capture *c, size_t i);
/* Module i's HloProto, unpacked in parts so that a module of hundreds of
 * thousands of instructions (its unpacked structs several times its bytes)
 * is never whole in memory: the head (the HloProto less its computations:
 * module fields, schedule, buffer assignment) at once, each computation when
 * asked.  Checks nesting depth on the wire first (protobuf-c has no limit).
 * Not cached: each call unpacks anew; the caller frees with xpf_hlo_free. */
typedef struct xpf_hlo xpf_hlo;
int xpf_capture_module_hlo(xpf_capture *c, size_t i, xpf_hlo **out, xpf_error *err);
/* Does all of module i's HloProto decode (each part unpacked, then freed)? */
int xpf_capture_module_check(xpf_capture *c, size_t i, xpf_error *err);
/* An HloProto already in memory, read through the same calls (tests); it
 * must outlive the handle. */
xpf_hlo *xpf_hlo_of(const Xla__HloProto *whole);
/* The head: hlo_module lists no computations, except under xpf_hlo_of,
 * where it is the whole proto; read computations with the calls below. */
const Xla__HloProto *xpf_hlo_head(const xpf_hlo *h);
size_t xpf_hlo_ncomputations(const xpf_hlo *h);
/* Computation k (< ncomputations), unpacked on first ask and kept until
 * xpf_hlo_drop or xpf_hlo_free; the same error as the whole would give. */
int xpf_hlo_computation(xpf_hlo *h, size_t k, const Xla__HloComputationProto **out, xpf_error *err);
void xpf_hlo_drop(xpf_hlo *h, size_t k);
/* Every computation decodes (those not kept are unpacked and dropped). */
int xpf_hlo_check(xpf_hlo *h, xpf_error *err);
void xpf_hlo_free(xpf_hlo *h);

/* Earliest timestamp_ns of a line holding events, over every plane (the
 * time origin of reports); 0 if there is none.  Each plane's from
 * xpf_capture_plane_first_ts. */
int xpf_capture_time_base(xpf_capture *c, int64_t *out, xpf_error *err);
/* Plane i for its stats, metadata, event count and first_ts, not its lines:
 * its index (xpf_capture_plane) when made, else the same walk keeping no
 * lines (nlines 0; once, kept), with the same errors.  The time base needs
 * every plane's first_ts and the diagnosis the devices' stats, where a
 * runtime reads only some planes' lines. */
int xpf_capture_plane_meta(xpf_capture *c, size_t i, const xpf_plane **out, xpf_error *err);
/* Plane i's earliest timestamp_ns of a line holding events (*has: there is
 * one; xpf_plane.first_ts of xpf_capture_plane_meta). */
int xpf_capture_plane_first_ts(xpf_capture *c, size_t i, bool *has, int64_t *ts, xpf_error *err);

/* Decode and validate everything (every plane, line, event, stat and
 * module); used by --check and capture/errors.txt. */
int xpf_capture_validate(xpf_capture *c, xpf_error *err);

#endif
