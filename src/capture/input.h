/* What CAPTURE on the command line can be (SPEC §2), resolved to one or more
 * opened host captures:
 *  - a `.xplane.pb` file                     → one host;
 *  - a run directory of `<host>.xplane.pb`   → one host per file (sorted);
 *  - a logdir with `plugins/profile/<run>/`  → the newest run, or `run`;
 *  - a bare `xla.HloProto` file              → one plan-only "host".
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
	char *name; /* host name: the file name without .xplane.pb */
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

int xpf_input_open(const char *path, const char *run, xpf_input **out, xpf_error *err);
void xpf_input_free(xpf_input *in);

#endif
