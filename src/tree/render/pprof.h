/* pprof profiles (SPEC §9): the buffers live at a module's heap peak
 * (modules/<dir>/peak.pb.gz) and the blocks live when an execution started
 * (runtime/executions/<n>/live.pb.gz), as gzip'd perftools.profiles.Profile
 * messages (proto/profile.proto), so that `pprof -top`, `pprof -http` and
 * `go tool pprof` show memory by Python stack.
 *
 * Both have the sample types space/bytes and objects/count, one sample per
 * buffer (block) whose values are {bytes, 1}, so the samples' bytes sum to
 * the heap peak (the live bytes) exactly.  Output is deterministic: strings,
 * functions and locations are numbered in order of first use, and the gzip
 * header carries no time. */
#ifndef XPF_PPROF_H
#define XPF_PPROF_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/host.h"

typedef struct xpf_pprof xpf_pprof;

xpf_pprof *xpf_pprof_new(void);
void xpf_pprof_free(xpf_pprof *p);
/* The id of the location of one frame: function in file at line:column
 * (file "" and line 0 when unknown); the same id for the same frame. */
uint64_t xpf_pprof_frame(xpf_pprof *p, const char *function, const char *file, int64_t line,
			 int64_t column);
/* One sample of `bytes` at the stack locs[0..nlocs) (locs[0] the innermost
 * frame), with string labels kv[0..2*nkv): key, value, key, value...  A
 * NULL or "" value leaves its label out.  The arrays are copied. */
void xpf_pprof_sample(xpf_pprof *p, const uint64_t *locs, size_t nlocs, uint64_t bytes,
		      const char *const *kv, size_t nkv);
/* Another sample of `bytes` with the last sample's stack and labels (a live
 * set's blocks come in runs of one origin). */
void xpf_pprof_sample_again(xpf_pprof *p, uint64_t bytes);
/* The profile, packed and gzip'd, appended to out. */
int xpf_pprof_write_gz(xpf_pprof *p, xpf_buf *out, xpf_error *err);

/* Renderers (tree builders register them). */
int xpf_render_peak_pprof(xpf_host *h, long arg, xpf_buf *out, xpf_error *err);
int xpf_render_live_pprof(xpf_host *h, long arg, xpf_buf *out, xpf_error *err);

#endif
