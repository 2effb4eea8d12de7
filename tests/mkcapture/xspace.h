/* Streaming XSpace writer.
 *
 * A plane is written from line generators: callbacks that emit the line's
 * events in time order through xp_emit.  xp_write_plane() runs every
 * generator twice, first counting (to learn each line's and the plane's
 * length prefix), then writing; generators must therefore be deterministic
 * and restart from scratch on every call.  Event and stat metadata ids are
 * interned per plane in first-use order, so both runs give the same ids and
 * the metadata maps (written after the lines) are complete by then. */
#ifndef MK_XSPACE_H
#define MK_XSPACE_H

#include <stdint.h>

#include "wire.h"

typedef struct xp_intern {
	char **names; /* names[i] has id i + 1 */
	size_t n, cap;
	int64_t *slots; /* open addressing: id or 0 */
	size_t nslots;
} xp_intern;

int64_t xp_intern_id(xp_intern *t, const char *name);
void xp_intern_release(xp_intern *t);

typedef struct xp_plane {
	int64_t id;
	const char *name;
	xp_intern ev, st;
	xpf_buf stats;      /* encoded XStat messages for XPlane.stats (field 6) */
	xpf_buf ev_extra;   /* pre-encoded event_metadata map entries (field 4) */
	int64_t ev_extra_n; /* ids 1..n are taken by ev_extra */
} xp_plane;

void xp_plane_init(xp_plane *p, int64_t id, const char *name);
void xp_plane_release(xp_plane *p);
/* Plane-level stats. */
void xp_plane_stat_u64(xp_plane *p, const char *name, uint64_t v);
void xp_plane_stat_i64(xp_plane *p, const char *name, int64_t v);
void xp_plane_stat_str(xp_plane *p, const char *name, const char *v);
/* A plane-level stat whose metadata_id is id itself, with no stat metadata
 * (the scope-range tree's edges: child scope id -> parent scope id). */
void xp_plane_stat_raw_i64(xp_plane *p, int64_t id, int64_t v);
/* An XEventMetadata with stats `Hlo Proto` (bytes) and `program_id`
 * (uint64), as MetadataXPlaneBuilder writes it.  Call before any event. */
void xp_plane_hlo_proto(xp_plane *p, const char *name, const xpf_buf *hlo, uint64_t program_id);

/* Events of one line are collected in a batch, sorted by start (longer
 * first on ties, so parents precede children) and written by xp_flush. */
typedef struct xp_ev {
	int64_t meta;
	int64_t t_ps; /* absolute, picoseconds from the profile start */
	int64_t dur_ps;
	size_t st_off, st_len; /* encoded stats in the batch arena */
	size_t seq;
} xp_ev;

typedef struct xp_emit {
	xp_plane *plane;
	w_sink *sink;
	int64_t base_ps; /* line timestamp_ns * 1000 */
	xp_ev *evs;
	size_t nev, cap;
	xpf_buf arena;
	xpf_buf scratch;
	uint64_t events_total;
	int counting; /* the counting run: lengths only, nothing encoded */
	int reverse;  /* write the whole line's events in reverse start order */
	int final;    /* the line's last flush */
} xp_emit;

void xp_ev_begin(xp_emit *e, const char *name, int64_t t_ps, int64_t dur_ps);
void xp_st_i64(xp_emit *e, const char *name, int64_t v);
void xp_st_u64(xp_emit *e, const char *name, uint64_t v);
void xp_st_dbl(xp_emit *e, const char *name, double v);
void xp_st_ref(xp_emit *e, const char *name, const char *v);
void xp_st_str(xp_emit *e, const char *name, const char *v);
/* The same with metadata ids looked up once (xp_ev_meta / xp_st_meta give
 * the plane's id of a name, interning it on first use; callers that cache
 * ids must look them up where the name would first be used, so that ids
 * keep their first-use order). */
int64_t xp_ev_meta(xp_emit *e, const char *name);
int64_t xp_st_meta(xp_emit *e, const char *name);
void xp_ev_begin_id(xp_emit *e, int64_t meta, int64_t t_ps, int64_t dur_ps);
void xp_st_i64_id(xp_emit *e, int64_t stat, int64_t v);
void xp_st_u64_id(xp_emit *e, int64_t stat, uint64_t v);
void xp_st_dbl_id(xp_emit *e, int64_t stat, double v);
/* ref: a stat metadata id (xp_st_meta of the string) */
void xp_st_ref_id(xp_emit *e, int64_t stat, int64_t ref);
/* Sort and write the collected events; call whenever no later-emitted event
 * can start before the ones collected so far. */
void xp_flush(xp_emit *e);

typedef struct xp_line {
	int64_t id;
	const char *name;
	int64_t timestamp_ns;
	int64_t duration_ps;
	void (*gen)(void *ctx, xp_emit *e);
	void *ctx;
	int reverse; /* events written last first (XLine events need not be sorted) */
	uint64_t body_len; /* filled by the counting run */
} xp_line;

/* Write the plane as XSpace field 1 to out.  Returns the number of events. */
uint64_t xp_write_plane(w_sink *out, xp_plane *p, xp_line *lines, size_t nlines);

#endif
