/* The report tree: one model served three ways (--cat, --export, the mount).
 *
 * Nodes are directories, files and symlinks.  A file has a render function
 * that writes its whole content into an xpf_buf; the tree renders a file the
 * first time anybody asks (lookup, getattr, open, --cat) and keeps the bytes,
 * so sizes are exact and every reader sees the same bytes.  A directory may
 * have a populate function that adds its children on first listing (e.g.
 * runtime/executions/ needs the runtime decoded).  Renderers and populate
 * functions run at most once per node, even when threads race.
 *
 * Inode numbers are assigned in creation order (root = 1).  Because the tree
 * is built deterministically from the capture and directories populate in a
 * fixed order, a node keeps its number for the life of the mount.
 *
 * Layering: the tree sits above the analyses (src/analysis), which know
 * hosts and captures but not nodes, files or paths; this layer decides what
 * is where.  Nothing here includes FUSE headers or calls protobuf_c_*. */
#ifndef XPF_REPORT_H
#define XPF_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/host.h"
#include "capture/capture.h"
#include "capture/input.h"
#include "common/buf.h"
#include "common/error.h"
#include "common/lazy.h"

typedef struct xpf_report xpf_report;
typedef struct xpf_node xpf_node;

enum xpf_node_type { XPF_NODE_DIR, XPF_NODE_FILE, XPF_NODE_LINK };

/* A file the tree makes: write its whole content into out.  Return XPF_OK
 * or an error code with err set (the mount turns it into EIO and a
 * capture/errors.txt line). */
typedef int (*xpf_render_fn)(xpf_host *h, const xpf_node *n, xpf_buf *out, xpf_error *err);
/* Add the children of dir (called once, on first listing or lookup). */
typedef int (*xpf_populate_fn)(xpf_host *h, xpf_node *dir, xpf_error *err);

struct xpf_node {
	enum xpf_node_type type;
	char *name;
	xpf_node *parent;
	uint64_t ino;
	xpf_host *host;            /* whose data the node shows (NULL: cross-host) */
	long arg;                  /* renderer argument: module index, execution n, ... */
	xpf_render_fn render;      /* files the tree makes (README, index.tsv, ...) */
	xpf_content_fn content_fn; /* files an analysis makes (diagnosis.txt, ...) */
	xpf_populate_fn populate;  /* directories; NULL if built eagerly */
	/* made even after the capture changed (capture/errors.txt says why);
	 * every other file then gives EIO (SPEC §6) */
	bool after_change;
	/* small and quick to make (an execution's files): a listing of its
	 * folder makes it and gives its size (readdirplus), which saves a
	 * lookup a file in a walk of the tree */
	bool made_when_listed;
	/* private to report.c */
	xpf_report *report;
	size_t nkids, capkids;
	xpf_node **kids;
	xpf_node **by_name; /* kids sorted by name, made once they are all there */
	xpf_lazy content;   /* rendered bytes (files) / populated (dirs) */
	size_t content_len;
	/* the cache of rendered files (report.c; under the report's cache lock) */
	unsigned pins; /* readers holding the bytes (xpf_node_pin) */
	bool cached;   /* counted in the cache, on its LRU list */
	xpf_node *lru_prev, *lru_next;
};

int xpf_report_open(xpf_input *in, const xpf_options *opt, xpf_report **out, xpf_error *err);
/* With a baseline (--base, SPEC §8): in's tree, plus base/ (the baseline's
 * own tree, its own report) and compare/.  base may be NULL (then it is
 * xpf_report_open).  Neither input is freed by the report. */
int xpf_report_open_compare(xpf_input *in, xpf_input *base, const xpf_options *opt,
			    xpf_report **out, xpf_error *err);
/* The baseline's report, or NULL without one.  Its hosts are its own
 * (xpf_report_host); its nodes live in the report that holds it. */
xpf_report *xpf_report_base(xpf_report *r);
/* Does not free the input. */
void xpf_report_free(xpf_report *r);
xpf_node *xpf_report_root(xpf_report *r);
xpf_input *xpf_report_input(xpf_report *r);
size_t xpf_report_nhosts(xpf_report *r);
xpf_host *xpf_report_host(xpf_report *r, size_t i);

/* Building (for tree builders and populate functions). */
xpf_node *xpf_node_dir(xpf_node *parent, const char *name, xpf_populate_fn populate, long arg);
xpf_node *xpf_node_file(xpf_node *parent, const char *name, xpf_render_fn render, long arg);
/* A file whose bytes an analysis makes from the node's host and arg. */
xpf_node *xpf_node_file_of(xpf_node *parent, const char *name, xpf_content_fn content, long arg);
/* A symlink whose target is rendered on first access (render writes the
 * target path, relative to the link's directory). */
xpf_node *xpf_node_link_lazy(xpf_node *parent, const char *name, xpf_render_fn render, long arg);
/* The symlink's target (rendered once). */
int xpf_node_readlink(xpf_node *link, const char **target, xpf_error *err);

/* Browsing (thread-safe).  Children come in creation order. */
int xpf_node_children(xpf_node *dir, xpf_node ***kids, size_t *n, xpf_error *err);
/* 0 and *out set, or XPF_EUSAGE-free "not found": returns XPF_OK with
 * *out = NULL when the name is absent. */
int xpf_node_lookup(xpf_node *dir, const char *name, xpf_node **out, xpf_error *err);
/* "a/b/c" relative to the root ("" or "/" is the root); *out NULL if absent.
 * Does not follow a symlink in the last component; follows them before. */
int xpf_report_resolve(xpf_report *r, const char *path, xpf_node **out, xpf_error *err);
/* The same, following a symlink in the last component too (what cat opens). */
int xpf_report_resolve_target(xpf_report *r, const char *path, xpf_node **out, xpf_error *err);
/* The file's bytes (rendered on first use).  For one thread at a time
 * (--cat, --export, tests): valid until the report is freed, or until a
 * pinned read (below) drops them from the cache. */
int xpf_node_content(xpf_node *file, const char **data, size_t *len, xpf_error *err);
/* The mount's reads (SPEC §6: memory stays bounded): the file's bytes,
 * rendered if they are not in the cache, held until xpf_node_unpin.  An
 * unpin drops the least recently used unpinned files, but the most recent,
 * while the cache holds more than its limit (they render again, the same
 * bytes, when asked). */
int xpf_node_pin(xpf_node *file, const char **data, size_t *len, xpf_error *err);
void xpf_node_unpin(xpf_node *file);
/* The cache's limit in bytes (default 64 MiB; 0: no limit) and what it
 * holds now. */
void xpf_report_set_cache_limit(xpf_report *r, size_t bytes);
size_t xpf_report_cache_bytes(xpf_report *r);
/* Drop a rendered file's bytes; the next reader renders them again (same
 * bytes: rendering is deterministic).  For --export, which reads every file
 * once: without it the whole tree stays in memory.  The caller must be the
 * only one using the node (no concurrent readers, no pointer kept). */
void xpf_node_forget(xpf_node *file);
xpf_node *xpf_report_node_by_ino(xpf_report *r, uint64_t ino);
/* "modules/x/plan.json" (relative to the report root). */
void xpf_node_path(const xpf_node *n, xpf_buf *out);

/* The folder that shows host h (its tree root). */
xpf_node *xpf_report_host_root(xpf_report *r, const xpf_host *h);
/* capture/errors.txt (tree.c): rendered even after the capture shrank. */
/* The first error any host noted while rendering (xpf_host_note_error),
 * into *out: false when none (for --cat and --export, which say it on
 * stderr).  capture/errors.txt does not list these: it computes what every
 * file needs itself, so that it names every broken part whichever file was
 * read first (and stays the same bytes). */
bool xpf_report_first_late_error(xpf_report *r, xpf_error *out);

/* The builders of each part of a host's tree, one per analysis module. */
void xpf_tree_capture(xpf_host *h, xpf_node *dir); /* capture/ (tree.c) */
void xpf_tree_modules(xpf_host *h, xpf_node *dir); /* modules/ (plan_tree.c) */
void xpf_tree_runtime(xpf_host *h, xpf_node *dir); /* runtime/ (runtime_tree.c) */
void xpf_tree_root(xpf_host *h,
		   xpf_node *root); /* README, diagnosis.*, summary.txt, checks.txt, focus (diag_tree.c) */
/* The top of a multi-host report: hosts/<host>/ exist already; this adds the
 * cross-host files (diag_tree.c). */
void xpf_tree_cross(xpf_report *r, xpf_node *root);
/* compare/ of a report with a baseline (compare_tree.c). */
void xpf_tree_compare(xpf_report *r, xpf_node *dir);

/* Safe, unique directory names for modules (SPEC §3): '/' and control
 * characters become '_', "." ".." and "" are renamed, names are cut to 255
 * bytes on a UTF-8 boundary, collisions get " (2)", " (3)", and so do names
 * equal to one of reserved (NULL-terminated, may be NULL: the fixed files
 * beside the directories).  Linear in n.  Returns n malloc'd strings. */
char **xpf_safe_names(const char *const *names, size_t n, const char *const *reserved);

#endif
