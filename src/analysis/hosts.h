/* The hosts of one run directory side by side (SPEC §8): hosts.tsv at the
 * top of a multi-host report, and the host-skew findings of the cross-host
 * diagnosis.txt / diagnosis.json.
 *
 * Every figure comes from the hosts' own diagnoses (computed on first use
 * and cached by each host), so a row of hosts.tsv says what that host's
 * diagnosis.txt and runtime/allocators.tsv say. */
#ifndef XPF_HOSTS_H
#define XPF_HOSTS_H

#include <jansson.h>

#include "analysis/host.h"
#include "common/buf.h"

/* hosts.tsv of hosts[0..n): one row per host, in that order. */
void xpf_hosts_tsv(xpf_host *hosts, size_t n, xpf_buf *out);

/* The host-skew findings, largest difference first: appended to out as
 * diagnosis.txt lines, or to findings (a JSON array) as objects shaped as
 * diagnosis.json's findings, each with "host" and "median_host". */
void xpf_hosts_skew_txt(xpf_host *hosts, size_t n, xpf_buf *out);
void xpf_hosts_skew_json(xpf_host *hosts, size_t n, json_t *findings);

#endif
