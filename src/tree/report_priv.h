/* The report's own struct, shared by report.c (the nodes) and tree.c
 * (which nodes a report has); nothing outside src/tree sees it. */
#ifndef XPF_REPORT_PRIV_H
#define XPF_REPORT_PRIV_H

#include <pthread.h>

#include "tree/report.h"

struct xpf_report {
	xpf_input *in;
	xpf_options opt;
	size_t nhosts;
	xpf_host *hosts;
	xpf_node **host_roots; /* the folder of each host (the root on one host) */
	xpf_node *root;
	/* With --base (SPEC §8): the baseline's report, whose tree hangs at
	 * base/; its nodes take their inode numbers from, and are freed with,
	 * the report that holds it (`top`; a report without one is its own). */
	xpf_report *base;
	xpf_report *top;
	pthread_mutex_t ino_mu;
	size_t nnodes, capnodes;
	xpf_node **nodes; /* by ino - 1 */
	/* Rendered files read through pins, most recent first (the top
	 * report's: a baseline's nodes use it too). */
	pthread_mutex_t cache_mu;
	size_t cache_bytes, cache_limit;
	size_t evicted_bytes; /* since memory was last given back */
	xpf_node *lru_head, *lru_tail;
};

/* The kernel keeps the pages it read of a file (keep_cache): the daemon's
 * copy serves a file's lookup, open and reads, which come together, and
 * the pieces of a big one; what a walk reads once need not stay.  The
 * limit is beside the runtime and the plans, which stay (SPEC §6). */
#define CACHE_LIMIT_DEFAULT ((size_t)64 << 20)

/* A node of r under parent (NULL: the root), with the next inode number. */
xpf_node *xpf_node_new(xpf_report *r, xpf_node *parent, enum xpf_node_type type, const char *name);

#endif
