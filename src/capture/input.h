/* What CAPTURE on the command line can be (SPEC §2), resolved to one or more
 * opened host captures:
 *  - a `.xplane.pb` file                     → one host;
 *  - a run directory of `<host>.xplane.pb`   → one host per file (sorted);
 *  - a logdir with `plugins/profile/<run>/`  → the newest run, or `run`;
 *  - a bare `xla.HloProto` file              → one plan-only "host";
 *  - any of these files gzip'd (`.xplane.pb.gz`, `.hlo.pb.gz`; told by
 *    their first bytes, read as the file they decompress to: capture.c).
 * `.xplane.riegeli` gives XPF_EUNSUPPORTED. */
#ifndef XPF_INPUT_H
#define XPF_INPUT_H

#include <stddef.h>

#include "capture/capture.h"

enum xpf_input_kind {
	XPF_INPUT_FILE,
	XPF_INPUT_RUNDIR,
	XPF_INPUT_HLO,
};

typedef struct xpf_input_host {
	char *name; /* host name: the file name without .xplane.pb(.gz) */
	char *path;
	xpf_capture *cap;
} xpf_input_host;

typedef struct xpf_input {
	enum xpf_input_kind kind;
	char *path;     /* as given */
	char *run_dir;  /* the directory the hosts came from, or NULL */
	char *run_name; /* the logdir run chosen, or NULL */
	size_t nhosts;
	xpf_input_host *hosts;
} xpf_input;

/* run: which run of a logdir (NULL: the newest); a run given for what is
 * not a logdir is a usage error (XPF_EUSAGE), not ignored. */
int xpf_input_open(const char *path, const char *run, xpf_input **out, xpf_error *err);
/* The same, and without run: the newest run older than before (when not
 * NULL; a baseline in the same logdir), XPF_EUSAGE when there is none. */
int xpf_input_open_run(const char *path, const char *run, const char *before, xpf_input **out,
		       xpf_error *err);
void xpf_input_free(xpf_input *in);
/* A capture file's name without its folder and its kind's suffix
 * (`.xplane.pb.gz`, `.xplane.pb`, `.hlo.pb`, ...): a host's name, a mount
 * point's; malloc'd. */
char *xpf_input_stem(const char *file);

#endif
