/* The hosts of one run directory side by side (SPEC §8): hosts.tsv at the
 * top of a multi-host report, and the host-skew findings of the cross-host
 * diagnosis.txt / diagnosis.json.
 *
 * Every figure comes from the hosts' own diagnoses (computed on first use
 * and cached by each host), so a row of hosts.tsv says what that host's
 * diagnosis.txt and runtime/allocators.tsv say. */
#ifndef XPF_HOSTS_H
#define XPF_HOSTS_H

#include <stdbool.h>
#include <stdint.h>

#include "analysis/diagnosis/diagnosis.h"
#include "analysis/host.h"

/* One host's row of hosts.tsv. */
typedef struct xpf_host_row {
	const xpf_host *h;
	char *dir;              /* its folder: hosts/<dir>/ */
	const xpf_diagnosis *d; /* NULL: its diagnosis failed */
	const char *module;     /* the focus module's name, or NULL */
	bool need_known, peak_known;
	uint64_t need_bytes, peak_in_use_bytes;
	const char *allocator; /* the focus allocator's name, or NULL */
	bool skewed;           /* it has a host-skew finding */
} xpf_host_row;

/* A host-skew finding: rows[host] against the median host rows[median]. */
typedef struct xpf_host_skew {
	size_t host, median;
	xpf_finding finding;
} xpf_host_skew;

/* hosts[0..n) side by side: a row each, in that order, and the skews,
 * largest difference first. */
typedef struct xpf_hosts {
	xpf_host_row *rows;
	size_t nrows;
	xpf_host_skew *skews;
	size_t nskews;
} xpf_hosts;

void xpf_hosts_analyse(xpf_host *hosts, size_t n, xpf_hosts *out);
void xpf_hosts_release(xpf_hosts *x);

#endif
