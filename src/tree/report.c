/* The report tree's nodes (see report.h for the model): made, listed,
 * looked up, rendered on first read and cached; safe names.  Which nodes a
 * report has is tree.c's. */
#include "tree/report_priv.h"
#include "common/alloc.h"
#include "common/intern.h"
#include "common/map.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

xpf_node *xpf_node_new(xpf_report *r, xpf_node *parent, enum xpf_node_type type, const char *name)
{
	xpf_node *n = xpf_malloc(sizeof *n);
	memset(n, 0, sizeof *n);
	n->type = type;
	n->name = xpf_strdup(name);
	n->parent = parent;
	n->report = r;
	n->host = parent ? parent->host : NULL;
	xpf_lazy_init(&n->content);
	xpf_report *t = r->top;
	pthread_mutex_lock(&t->ino_mu);
	if (t->nnodes == t->capnodes) {
		t->capnodes = t->capnodes ? t->capnodes * 2 : 64;
		t->nodes = xpf_realloc_array(t->nodes, t->capnodes, sizeof *t->nodes);
	}
	t->nodes[t->nnodes++] = n;
	n->ino = t->nnodes;
	pthread_mutex_unlock(&t->ino_mu);
	if (parent) {
		/* lookups search the children sorted once (populate_fn): a
		 * directory is complete before anybody looks in it */
		if (xpf_lazy_state(&parent->content) != XPF_LAZY_NOT_YET)
			abort();
		if (parent->nkids == parent->capkids) {
			parent->capkids = parent->capkids ? parent->capkids * 2 : 8;
			parent->kids = xpf_realloc_array(parent->kids, parent->capkids,
							 sizeof *parent->kids);
		}
		parent->kids[parent->nkids++] = n;
	}
	return n;
}

xpf_node *xpf_node_dir(xpf_node *parent, const char *name, xpf_populate_fn populate, long arg)
{
	xpf_node *n = xpf_node_new(parent->report, parent, XPF_NODE_DIR, name);
	n->populate = populate;
	n->arg = arg;
	return n;
}

xpf_node *xpf_node_file(xpf_node *parent, const char *name, xpf_render_fn render, long arg)
{
	xpf_node *n = xpf_node_new(parent->report, parent, XPF_NODE_FILE, name);
	n->render = render;
	n->arg = arg;
	return n;
}

xpf_node *xpf_node_file_of(xpf_node *parent, const char *name, xpf_content_fn content, long arg)
{
	xpf_node *n = xpf_node_new(parent->report, parent, XPF_NODE_FILE, name);
	n->content_fn = content;
	n->arg = arg;
	return n;
}

xpf_node *xpf_node_link_lazy(xpf_node *parent, const char *name, xpf_render_fn render, long arg)
{
	xpf_node *n = xpf_node_new(parent->report, parent, XPF_NODE_LINK, name);
	n->render = render;
	n->arg = arg;
	return n;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp((*(xpf_node *const *)a)->name, (*(xpf_node *const *)b)->name);
}

/* A directory's children (its populate function's, else those it was
 * built with), and their index by name: runtime/executions/ holds one
 * folder per execution, and a walk looks up every one. */
static int populate_fn(void *ctx, void **value, xpf_error *err)
{
	xpf_node *dir = ctx;
	*value = dir;
	if (dir->populate != NULL) {
		int rc = dir->populate(dir->host, dir, err);
		if (rc != XPF_OK)
			return rc;
	}
	dir->by_name = xpf_malloc((dir->nkids ? dir->nkids : 1) * sizeof *dir->by_name);
	if (dir->nkids)
		memcpy(dir->by_name, dir->kids, dir->nkids * sizeof *dir->kids);
	xpf_qsort(dir->by_name, dir->nkids, sizeof *dir->by_name, name_cmp);
	return XPF_OK;
}

int xpf_node_children(xpf_node *dir, xpf_node ***kids, size_t *n, xpf_error *err)
{
	if (dir->type != XPF_NODE_DIR)
		return xpf_fail(err, XPF_EUSAGE, "%s: not a directory", dir->name);
	int rc = xpf_lazy_get(&dir->content, populate_fn, dir, NULL, err);
	if (rc != XPF_OK)
		return rc;
	*kids = dir->kids;
	*n = dir->nkids;
	return XPF_OK;
}

int xpf_node_lookup(xpf_node *dir, const char *name, xpf_node **out, xpf_error *err)
{
	xpf_node **kids;
	size_t n;
	*out = NULL;
	int rc = xpf_node_children(dir, &kids, &n, err);
	if (rc != XPF_OK)
		return rc;
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(dir->by_name[mid]->name, name);
		if (c == 0) {
			*out = dir->by_name[mid];
			break;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return XPF_OK;
}

/* SPEC §6: once the capture changed under us (reads past its new end saw
 * zeros, or its bytes are another file's), a file not made before gives
 * EIO, and so does one whose rendering failed or read bytes meanwhile:
 * "malformed" would blame a capture that was whole; errors.txt says why. */
static int changed_fail(const xpf_node *f, xpf_error *err)
{
	return xpf_fail(err, XPF_EIO,
			"%s: the capture %s changed while mounted (rewritten, truncated, touched or replaced): files not read before give EIO; unmount and mount it again",
			f->name, xpf_capture_label(f->host->cap));
}

static int render_fn(void *ctx, void **value, xpf_error *err)
{
	xpf_node *f = ctx;
	xpf_buf b = XPF_BUF_INIT;
	bool guarded = f->host && !f->after_change;
	/* a change found before fails it now; one not yet seen is looked for
	 * once, after (a file is made from the bytes it read meanwhile) */
	if (guarded && xpf_capture_changed_seen(f->host->cap))
		return changed_fail(f, err);
	int rc = f->render     ? f->render(f->host, f, &b, err) :
		 f->content_fn ? f->content_fn(f->host, f->arg, &b, err) :
				 xpf_fail(err, XPF_EUSAGE, "%s: nothing to render", f->name);
	if (guarded && xpf_capture_changed(f->host->cap)) {
		xpf_buf_release(&b);
		if (err) /* not the capture's fault: it changed */
			*err = (xpf_error){ 0 };
		return changed_fail(f, err); /* made from zeros or new bytes, in part */
	}
	if (rc != XPF_OK) {
		xpf_buf_release(&b);
		if (f->host)
			xpf_host_note_error(f->host, err);
		return rc;
	}
	/* the cache counts content_len: hold no more than that (a buffer
	 * grows by doubling, and a walk's files would take up to twice the
	 * cache's limit) */
	f->content_len = b.len;
	*value = xpf_realloc_array(xpf_buf_detach(&b, NULL), f->content_len + 1, 1);
	return XPF_OK;
}

int xpf_node_content(xpf_node *f, const char **data, size_t *len, xpf_error *err)
{
	if (f->type == XPF_NODE_DIR)
		return xpf_fail(err, XPF_EUSAGE, "%s: is a directory", f->name);
	void *v = NULL;
	int rc = xpf_lazy_get(&f->content, render_fn, f, &v, err);
	if (rc != XPF_OK)
		return rc;
	*data = v;
	*len = f->content_len;
	return XPF_OK;
}

static void lru_unlink(xpf_report *t, xpf_node *n);

void xpf_node_forget(xpf_node *f)
{
	xpf_report *t = f->report->top;
	pthread_mutex_lock(&t->cache_mu);
	if (f->cached)
		lru_unlink(t, f);
	pthread_mutex_unlock(&t->cache_mu);
	if (f->type != XPF_NODE_FILE)
		return;
	if (xpf_lazy_forget(&f->content, free))
		f->content_len = 0;
}

/* ---- the cache of rendered files (SPEC §6) ---------------------------- */

static void lru_unlink(xpf_report *t, xpf_node *n)
{
	if (n->lru_prev)
		n->lru_prev->lru_next = n->lru_next;
	else
		t->lru_head = n->lru_next;
	if (n->lru_next)
		n->lru_next->lru_prev = n->lru_prev;
	else
		t->lru_tail = n->lru_prev;
	n->lru_prev = n->lru_next = NULL;
	n->cached = false;
	t->cache_bytes -= n->content_len;
}

static void lru_push(xpf_report *t, xpf_node *n)
{
	n->lru_prev = NULL;
	n->lru_next = t->lru_head;
	if (t->lru_head)
		t->lru_head->lru_prev = n;
	t->lru_head = n;
	if (t->lru_tail == NULL)
		t->lru_tail = n;
	n->cached = true;
	t->cache_bytes += n->content_len;
}

/* Files that may render again the same: a host's, while its capture is
 * whole (after it shrank, files made before keep their bytes: SPEC §6). */
static bool evictable(const xpf_node *n)
{
	return n->pins == 0 && n->host && !xpf_capture_changed_seen(n->host->cap);
}

/* Drop least recently used files while over the limit (cache_mu held).
 * A pinned file is skipped: its reader holds the bytes.  So is the most
 * recently used, even alone over the limit: a file is read a piece at a
 * time, and it would be made again for every piece.  True when enough was
 * dropped since the last time to give memory back (give_back, once
 * unlocked). */
static bool evict(xpf_report *t)
{
	xpf_node *n = t->lru_tail;
	while (n && n != t->lru_head && t->cache_limit && t->cache_bytes > t->cache_limit) {
		xpf_node *prev = n->lru_prev;
		if (evictable(n)) {
			t->evicted_bytes += n->content_len;
			lru_unlink(t, n);
			if (xpf_lazy_forget(&n->content, free))
				n->content_len = 0;
		}
		n = prev;
	}
	if (t->cache_limit == 0 || t->evicted_bytes < t->cache_limit / 4)
		return false;
	t->evicted_bytes = 0;
	return true;
}

/* glibc keeps what a thread's arena freed for that arena, and the mount's
 * threads take turns: a walk's files, made and dropped across them, would
 * leave the arenas holding about the cache's limit again, beside it. */
static void give_back(void)
{
#ifdef __GLIBC__
	malloc_trim(0);
#endif
}

int xpf_node_pin(xpf_node *f, const char **data, size_t *len, xpf_error *err)
{
	xpf_report *t = f->report->top;
	pthread_mutex_lock(&t->cache_mu);
	f->pins++;
	pthread_mutex_unlock(&t->cache_mu);
	int rc = xpf_node_content(f, data, len, err);
	pthread_mutex_lock(&t->cache_mu);
	if (rc != XPF_OK) {
		f->pins--;
	} else if (f->type == XPF_NODE_FILE) {
		if (f->cached)
			lru_unlink(t, f);
		lru_push(t, f);
	}
	pthread_mutex_unlock(&t->cache_mu);
	return rc;
}

void xpf_node_unpin(xpf_node *f)
{
	xpf_report *t = f->report->top;
	pthread_mutex_lock(&t->cache_mu);
	f->pins--;
	bool trim = evict(t);
	pthread_mutex_unlock(&t->cache_mu);
	if (trim)
		give_back();
}

void xpf_report_set_cache_limit(xpf_report *r, size_t bytes)
{
	pthread_mutex_lock(&r->top->cache_mu);
	r->top->cache_limit = bytes;
	bool trim = evict(r->top);
	pthread_mutex_unlock(&r->top->cache_mu);
	if (trim)
		give_back();
}

size_t xpf_report_cache_bytes(xpf_report *r)
{
	pthread_mutex_lock(&r->top->cache_mu);
	size_t n = r->top->cache_bytes;
	pthread_mutex_unlock(&r->top->cache_mu);
	return n;
}

int xpf_node_readlink(xpf_node *link, const char **target, xpf_error *err)
{
	size_t len;
	if (link->type != XPF_NODE_LINK)
		return xpf_fail(err, XPF_EUSAGE, "%s: not a symlink", link->name);
	return xpf_node_content(link, target, &len, err);
}

static int resolve(xpf_report *r, xpf_node *start, const char *path, bool follow_last, int depth,
		   xpf_node **out, xpf_error *err)
{
	xpf_node *cur = start;
	char *copy = xpf_strdup(path), *save = NULL;
	int rc = XPF_OK;
	*out = NULL;
	if (depth > 16) {
		free(copy);
		return xpf_fail(err, XPF_EUSAGE, "%s: too many levels of symbolic links", path);
	}
	char *tok = strtok_r(copy, "/", &save);
	while (tok) {
		char *next = strtok_r(NULL, "/", &save);
		if (strcmp(tok, ".") == 0) {
			/* stay */
		} else if (strcmp(tok, "..") == 0) {
			if (cur->parent)
				cur = cur->parent;
		} else {
			xpf_node *kid;
			if (cur->type != XPF_NODE_DIR) {
				cur = NULL;
				break;
			}
			rc = xpf_node_lookup(cur, tok, &kid, err);
			if (rc != XPF_OK || kid == NULL) {
				cur = NULL;
				break;
			}
			if (kid->type == XPF_NODE_LINK && (next || follow_last)) {
				const char *target;
				rc = xpf_node_readlink(kid, &target, err);
				if (rc != XPF_OK) {
					cur = NULL;
					break;
				}
				xpf_node *t;
				rc = resolve(r, target[0] == '/' ? r->root : cur, target, true,
					     depth + 1, &t, err);
				if (rc != XPF_OK || t == NULL) {
					cur = NULL;
					break;
				}
				kid = t;
			}
			cur = kid;
		}
		tok = next;
	}
	free(copy);
	*out = cur;
	return rc;
}

int xpf_report_resolve(xpf_report *r, const char *path, xpf_node **out, xpf_error *err)
{
	return resolve(r, r->root, path, false, 0, out, err);
}

int xpf_report_resolve_target(xpf_report *r, const char *path, xpf_node **out, xpf_error *err)
{
	return resolve(r, r->root, path, true, 0, out, err);
}

xpf_node *xpf_report_node_by_ino(xpf_report *r, uint64_t ino)
{
	xpf_node *n = NULL;
	pthread_mutex_lock(&r->ino_mu);
	if (ino >= 1 && ino <= r->nnodes)
		n = r->nodes[ino - 1];
	pthread_mutex_unlock(&r->ino_mu);
	return n;
}

void xpf_node_path(const xpf_node *n, xpf_buf *out)
{
	if (n == NULL || n->parent == NULL)
		return;
	xpf_node_path(n->parent, out);
	if (out->len)
		xpf_buf_addc(out, '/');
	xpf_buf_adds(out, n->name);
}

bool xpf_report_first_late_error(xpf_report *r, xpf_error *out)
{
	if (r->base && xpf_report_first_late_error(r->base, out))
		return true;
	for (size_t i = 0; i < r->nhosts; i++)
		if (xpf_host_late_error(&r->hosts[i], out))
			return true;
	return false;
}

/* ---- names ------------------------------------------------------------ */

static size_t utf8_cut(const char *s, size_t n, size_t max)
{
	if (n <= max)
		return n;
	size_t k = max;
	while (k > 0 && ((unsigned char)s[k] & 0xc0) == 0x80)
		k--;
	return k;
}

/* A name from the capture as a directory entry, before collisions: '/' and
 * control characters become '_', "." ".." "" are renamed.  malloc'd. */
static char *safe_base(const char *s)
{
	size_t len = strlen(s);
	char *d = xpf_malloc(len + 16);
	for (size_t k = 0; k < len; k++) {
		unsigned char c = (unsigned char)s[k];
		d[k] = c == '/' || c < 0x20 || c == 0x7f ? '_' : (char)c;
	}
	d[len] = '\0';
	if (len == 0)
		strcpy(d, "_empty_");
	else if (strcmp(d, ".") == 0)
		strcpy(d, "_dot_");
	else if (strcmp(d, "..") == 0)
		strcpy(d, "_dotdot_");
	return d;
}

/* Take name d in the set: false when it was taken already. */
static bool take(xpf_intern *taken, const char *d)
{
	size_t before = xpf_intern_count(taken);
	xpf_intern_get(taken, d, strlen(d));
	return xpf_intern_count(taken) != before;
}

/* Collisions get " (2)", " (3)", ... kept within 255 bytes.  The next k to
 * try is kept per base name (by its interned pointer): every k below it is
 * taken already and stays so, and a candidate " (k)" that fails is another
 * name's, so the whole search is linear in the number of names, not cubic
 * as a rescan of every earlier name for every k was. */
static char *unique_name(xpf_intern *taken, xpf_intern *bases, xpf_map *next_k, char *base)
{
	char *d = xpf_strdup(base);
	d[utf8_cut(d, strlen(d), 255)] = '\0';
	if (take(taken, d))
		return d;
	const char *key = xpf_intern_get(bases, base, strlen(base));
	size_t slot = xpf_map_find(next_k, (uintptr_t)key, 0);
	uint64_t k = next_k->s[slot].val >= 0 ? (uint64_t)next_k->s[slot].val : 2;
	for (;; k++) {
		char sfx[32];
		snprintf(sfx, sizeof sfx, " (%llu)", (unsigned long long)k);
		size_t keep = utf8_cut(base, strlen(base), 255 - strlen(sfx));
		free(d);
		d = xpf_malloc(keep + strlen(sfx) + 1);
		memcpy(d, base, keep);
		strcpy(d + keep, sfx);
		if (take(taken, d))
			break;
	}
	xpf_map_put(next_k, (uintptr_t)key, 0, (int64_t)(k + 1));
	return d;
}

char **xpf_safe_names(const char *const *names, size_t n, const char *const *reserved)
{
	char **out = xpf_malloc((n ? n : 1) * sizeof *out);
	xpf_intern *taken = xpf_intern_new(), *bases = xpf_intern_new();
	xpf_map next_k;
	xpf_map_init(&next_k, 16);
	for (size_t r = 0; reserved && reserved[r]; r++)
		take(taken, reserved[r]);
	for (size_t i = 0; i < n; i++) {
		char *base = safe_base(names[i] ? names[i] : "");
		out[i] = unique_name(taken, bases, &next_k, base);
		free(base);
	}
	xpf_map_free(&next_k);
	xpf_intern_free(bases);
	xpf_intern_free(taken);
	return out;
}

static void report_free_hosts(xpf_report *r)
{
	for (size_t i = 0; i < r->nhosts; i++)
		xpf_host_release(&r->hosts[i]);
	free(r->hosts);
	free(r->host_roots);
}

void xpf_report_free(xpf_report *r)
{
	if (r == NULL)
		return;
	if (r->base) {
		report_free_hosts(r->base);
		pthread_mutex_destroy(&r->base->ino_mu);
		pthread_mutex_destroy(&r->base->cache_mu);
		free(r->base);
	}
	report_free_hosts(r);
	for (size_t i = 0; i < r->nnodes; i++) {
		xpf_node *n = r->nodes[i];
		if (n->type != XPF_NODE_DIR)
			xpf_lazy_release(&n->content, free);
		else
			xpf_lazy_release(&n->content, NULL);
		free(n->name);
		free(n->kids);
		free(n->by_name);
		free(n);
	}
	free(r->nodes);
	pthread_mutex_destroy(&r->ino_mu);
	pthread_mutex_destroy(&r->cache_mu);
	free(r);
}

xpf_node *xpf_report_root(xpf_report *r) { return r->root; }
xpf_input *xpf_report_input(xpf_report *r) { return r->in; }
xpf_report *xpf_report_base(xpf_report *r) { return r->base; }
size_t xpf_report_nhosts(xpf_report *r) { return r->nhosts; }
xpf_host *xpf_report_host(xpf_report *r, size_t i) { return i < r->nhosts ? &r->hosts[i] : NULL; }

xpf_node *xpf_report_host_root(xpf_report *r, const xpf_host *h)
{
	for (xpf_report *x = r; x; x = x == r ? r->base : NULL)
		if (x->nhosts && h >= x->hosts && h < x->hosts + x->nhosts)
			return x->host_roots[h - x->hosts];
	return NULL;
}
