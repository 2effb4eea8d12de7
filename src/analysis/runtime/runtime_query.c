/* Queries of a built runtime: the first event at a time, an execution's
 * candidate modules, the host events between two executions, the blocks
 * live at an execution's start (the last few kept). */
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/runtime/runtime.h"
#include "analysis/runtime/runtime_priv.h"
#include "common/alloc.h"
#include "common/bisect.h"
#include "common/intern.h"
#include "common/lazy.h"
#include "common/map.h"
#include "common/runs.h"

static bool event_below(const void *e, const void *t_ps)
{
	return ((const xpf_rt_event *)e)->t_ps < *(const int64_t *)t_ps;
}

size_t xpf_rt_first_event_at(const xpf_runtime *rt, int64_t t_ps)
{
	return xpf_lower_bound(&t_ps, rt->events, rt->nevents, sizeof *rt->events, event_below);
}

static bool candidate_below(const void *c, const void *xi)
{
	return ((const xpf_rt_candidate *)c)->execution < *(const size_t *)xi;
}

size_t xpf_rt_candidates(const xpf_runtime *rt, size_t xi, const xpf_rt_candidate **first)
{
	size_t lo = xpf_lower_bound(&xi, rt->candidates, rt->ncandidates, sizeof *rt->candidates,
				    candidate_below);
	size_t n = 0;
	while (lo + n < rt->ncandidates && rt->candidates[lo + n].execution == xi)
		n++;
	*first = rt->candidates + lo;
	return n;
}

/* ---- between ------------------------------------------------------------- */

struct name_dur {
	const char *name;
	int64_t dur_ps;
};

static int nd_cmp(const void *a, const void *b)
{
	return strcmp(((const struct name_dur *)a)->name, ((const struct name_dur *)b)->name);
}

static int row_cmp(const void *a, const void *b)
{
	const xpf_rt_between_row *x = a, *y = b;
	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The events of [it) that lie within [t0, t1] (line base lb_ps) into *v. */
static int between_events(xpf_event_iter *it, const xpf_plane *p, int64_t lb_ps, int64_t t0,
			  int64_t t1, struct name_dur **v, size_t *n, size_t *cap, xpf_error *err)
{
	xpf_event ev;
	int rc;
	while ((rc = xpf_events_next(it, &ev, err)) == 1) {
		int64_t e0 = lb_ps + ev.offset_ps;
		int64_t e1 = e0 + (ev.duration_ps > 0 ? ev.duration_ps : 0);
		if (e0 < t0 || e1 > t1)
			continue;
		struct name_dur *d = XPF_VEC_PUSH(*v, *n, *cap);
		d->name = p->event_md[ev.md].name;
		d->dur_ps = e1 - e0;
	}
	return rc < 0 ? err->code : XPF_OK;
}

/* The events of line l of p within [t0, t1] into *v: the line's pieces that
 * overlap the window only, when it has pieces. */
static int between_line(const struct xpf_rt_priv *pv, const xpf_plane *p, size_t l, int64_t base,
			int64_t t0, int64_t t1, xpf_window *w, struct name_dur **v, size_t *n,
			size_t *cap, xpf_error *err)
{
	/* a line whose events all end before the window or all start after
	 * it holds none of it */
	if (pv->line_t0 && l < pv->nlines && (pv->line_t1[l] < t0 || pv->line_t0[l] > t1))
		return XPF_OK;
	int64_t lb_ps = (p->lines[l].timestamp_ns - base) * 1000;
	const struct xpf_rt_pieces *pc = pv->pieces && l < pv->nlines ? pv->pieces[l] : NULL;
	xpf_event_iter it;
	if (pc == NULL) {
		xpf_events_begin(p, l, w, &it);
		return between_events(&it, p, lb_ps, t0, t1, v, n, cap, err);
	}
	for (size_t k = 0; k < pc->n; k++) {
		if (pc->t1[k] < t0 || pc->t0[k] > t1)
			continue; /* and a piece the scan did not reach has no events */
		uint64_t end = k + 1 < pc->n ? pc->at[k + 1].offset : UINT64_MAX;
		xpf_events_begin_at(p, l, pc->at[k], end, w, &it);
		int rc = between_events(&it, p, lb_ps, t0, t1, v, n, cap, err);
		if (rc != XPF_OK)
			return rc;
	}
	return XPF_OK;
}

int xpf_runtime_between(xpf_host *h, const xpf_runtime *rt, size_t from, size_t to,
			xpf_rt_between *out, xpf_error *err)
{
	const xpf_rt_execution *a = &rt->executions[from], *b = &rt->executions[to];
	out->from_execution = (long)from;
	out->to_execution = (long)to;
	out->from_ns = xpf_rt_x_end_ns(a);
	out->to_ns = xpf_rt_x_start_ns(b);
	out->nrows = 0;
	out->rows = NULL;
	long pi = xpf_capture_find_plane(h->cap, "/host:CPU");
	if (pi < 0 || a->end_ps > b->start_ps)
		return XPF_OK;
	const xpf_plane *p;
	int rc = xpf_capture_plane(h->cap, (size_t)pi, &p, err);
	if (rc != XPF_OK)
		return rc;
	int64_t base;
	rc = xpf_capture_time_base(h->cap, &base, err);
	if (rc != XPF_OK)
		return rc;
	struct name_dur *v = NULL;
	size_t n = 0, cap = 0;
	xpf_window w = { 0 };
	for (size_t l = 0; l < p->nlines && rc == XPF_OK; l++)
		rc = between_line(rt->priv, p, l, base, a->end_ps, b->start_ps, &w, &v, &n, &cap,
				  err);
	xpf_window_release(&w);
	if (rc != XPF_OK) {
		free(v);
		return rc;
	}
	if (n)
		xpf_qsort(v, n, sizeof *v, nd_cmp);
	size_t rcap = 0;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		int64_t tot = 0;
		while (j < n && strcmp(v[j].name, v[i].name) == 0)
			tot += v[j++].dur_ps;
		xpf_rt_between_row *r = XPF_VEC_PUSH(out->rows, out->nrows, rcap);
		r->name = xpf_strdup(v[i].name);
		r->count = j - i;
		r->total_ns = tot / 1000;
		i = j;
	}
	free(v);
	if (out->nrows)
		xpf_qsort(out->rows, out->nrows, sizeof *out->rows, row_cmp);
	return XPF_OK;
}

void xpf_rt_between_release(xpf_rt_between *b)
{
	for (size_t i = 0; i < b->nrows; i++)
		free(b->rows[i].name);
	free(b->rows);
	b->rows = NULL;
	b->nrows = 0;
}

/* ---- live at an execution's start ------------------------------------------ */

static int block_cmp(const void *a, const void *b)
{
	const xpf_rt_block *x = a, *y = b;
	if (x->origin_text != y->origin_text) { /* one origin shares one text */
		int c = strcmp(x->origin_text, y->origin_text);
		if (c)
			return c;
	}
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The origin texts of one query, each written once: a live set holds
 * hundreds of blocks of a few origins (the outputs of the last steps), and
 * formatting a text per block was most of the query.  Texts are kept by
 * offset in `text` until the blocks are final (it moves as it grows). */
struct origins {
	xpf_map of_execution; /* (execution, is outputs) -> offset */
	xpf_map of_event;     /* (transfer or host event name, shape) -> offset */
	xpf_buf text;         /* the texts, each NUL-terminated */
	size_t *at;           /* the offset of each block's text */
	size_t nat, capat;
};

/* Block blk's origin (its kind and execution; its text's offset pushed on
 * o->at), from its allocation event e. */
static void origin_of(const xpf_runtime *rt, const xpf_rt_event *e, xpf_rt_block *blk,
		      struct origins *o)
{
	const struct xpf_rt_priv *pv = rt->priv;
	xpf_map *m;
	uint64_t ka, kb;
	blk->execution = -1;
	if (e->execution >= 0) {
		bool out = e->role == XPF_RT_ROLE_OUTPUT ||
			   (e->role != XPF_RT_ROLE_TEMP && !e->in_build);
		blk->origin = out ? XPF_ORIGIN_OUTPUTS : XPF_ORIGIN_TEMP;
		blk->execution = e->execution;
		m = &o->of_execution;
		ka = (uint64_t)e->execution;
		kb = out;
	} else {
		/* the transfer around it, else the host event, then its shape */
		const char *tr = xpf_rt_ev_transfer(rt, e), *in = xpf_rt_ev_enclosing(rt, e);
		blk->origin = tr ? XPF_ORIGIN_TRANSFER : XPF_ORIGIN_HOST_EVENT;
		m = &o->of_event;
		ka = (uint64_t)(uintptr_t)(tr ? tr : in);
		kb = (uint64_t)(uintptr_t)xpf_rt_ev_shape(rt, e);
	}
	size_t slot = xpf_map_find(m, ka, kb);
	int64_t at = m->s[slot].val;
	if (at < 0) {
		at = (int64_t)o->text.len;
		xpf_buf *t = &o->text;
		if (e->execution >= 0) {
			const xpf_rt_execution *x = &rt->executions[e->execution];
			const char *what = blk->origin == XPF_ORIGIN_OUTPUTS ? "outputs" : "temp";
			if (x->module >= 0)
				xpf_buf_printf(t, "%s of %s execution %u", what,
					       pv->module_names[x->module], x->module_execution);
			else
				xpf_buf_printf(t, "%s of %s execution %u", what,
					       x->host_name ? x->host_name : "an ambiguous module",
					       x->n);
		} else {
			const char *name = (const char *)(uintptr_t)ka,
				   *shape = xpf_rt_ev_shape(rt, e);
			xpf_buf_adds(t, name ? name : "outside any host event");
			if (shape)
				xpf_buf_printf(t, "(%s)", shape);
		}
		xpf_buf_add(t, "", 1); /* its NUL, kept */
		xpf_map_put(m, ka, kb, at);
	}
	*XPF_VEC_PUSH(o->at, o->nat, o->capat) = (size_t)at;
}

/* The blocks v[0..n) and their texts as one allocation of *size bytes
 * (xpf_rt_blocks_free frees it), the texts after the blocks. */
static xpf_rt_block *blocks_with_texts(xpf_rt_block *v, size_t n, const struct origins *o,
				       size_t *size)
{
	size_t head = n * sizeof *v;
	*size = head + o->text.len + 1;
	char *all = xpf_malloc(*size);
	if (n)
		memcpy(all, v, head);
	if (o->text.len)
		memcpy(all + head, o->text.data, o->text.len);
	xpf_rt_block *b = (xpf_rt_block *)(void *)all;
	for (size_t i = 0; i < o->nat; i++)
		b[i].origin_text = all + head + o->at[i];
	return b;
}

/* xpf_runtime_live_before, and the size of its one allocation. */
static void live_before(const xpf_runtime *rt, int a, int64_t t_ps, bool in_use_known,
			uint64_t in_use, xpf_rt_block **out, size_t *nout, size_t *size)
{
	*out = NULL;
	*nout = 0;
	*size = 0;
	if (a < 0)
		return;
	xpf_rt_block *v = NULL;
	size_t n = 0, cap = 0;
	uint64_t sum = 0;
	struct origins o = { .text = XPF_BUF_INIT };
	xpf_map_init(&o.of_execution, 16);
	xpf_map_init(&o.of_event, 16);
	/* a's allocations before the start not freed before it, in event
	 * order, skipping the blocks of them all freed before it */
	const struct xpf_rt_priv *pv = rt->priv;
	bool idx = pv && pv->live_beg; /* else (a runtime made by hand) every event */
	size_t lo = idx ? pv->live_beg[a] : 0, hi = idx ? pv->live_beg[a + 1] : rt->nevents;
	for (size_t j = lo; j < hi; j++) {
		if (idx && (j - lo) % XPF_RT_LIVE_BLOCK == 0 &&
		    pv->live_blk_end[pv->live_blk_beg[a] + (j - lo) / XPF_RT_LIVE_BLOCK] < t_ps) {
			j += XPF_RT_LIVE_BLOCK - 1;
			continue;
		}
		size_t i = idx ? pv->live_ev[j] : j;
		const xpf_rt_event *e = &rt->events[i];
		if (e->t_ps >= t_ps)
			break;
		if (xpf_rt_ev_allocator(rt, e) != a || e->kind != XPF_RT_ALLOC)
			continue;
		if (e->match >= 0 && rt->events[e->match].t_ps < t_ps)
			continue;
		xpf_rt_block *b = XPF_VEC_PUSH(v, n, cap);
		memset(b, 0, sizeof *b);
		origin_of(rt, e, b, &o);
		b->addr = e->addr;
		b->bytes = xpf_rt_ev_bytes(rt, e);
		b->requested_bytes = xpf_rt_ev_requested(rt, e);
		b->has_requested = xpf_rt_ev_has_requested(rt, e);
		b->event = (long)i;
		b->host_event = xpf_rt_ev_enclosing(rt, e);
		b->shape = xpf_rt_ev_shape(rt, e);
		sum += xpf_rt_ev_bytes(rt, e);
	}
	if (in_use_known && in_use > sum) {
		xpf_rt_block *b = XPF_VEC_PUSH(v, n, cap);
		memset(b, 0, sizeof *b);
		b->origin = XPF_ORIGIN_BEFORE;
		/* TPU allocators count bytes_reserved (the loaded programs'
		 * memory) in use: that is no block either */
		b->origin_text =
			rt->allocators[a].is_pool && rt->allocators[a].keyed_by_index ?
				"reserved (bytes_reserved: loaded programs) or allocated before the capture started" :
				"allocated before the capture started";
		b->bytes = in_use - sum;
		b->event = -1;
		b->execution = -1;
	}
	if (n) {
		xpf_rt_block *b = blocks_with_texts(v, n, &o, size);
		free(v);
		v = b;
		xpf_qsort(v, n, sizeof *v, block_cmp);
	}
	xpf_buf_release(&o.text);
	free(o.at);
	xpf_map_free(&o.of_execution);
	xpf_map_free(&o.of_event);
	*out = v;
	*nout = n;
}

void xpf_runtime_live_before(const xpf_runtime *rt, int a, int64_t t_ps, bool in_use_known,
			     uint64_t in_use, xpf_rt_block **out, size_t *nout)
{
	size_t size;
	live_before(rt, a, t_ps, in_use_known, in_use, out, nout, &size);
}

/* ---- the live sets at executions' starts, kept a while ------------------ */

/* The three files of an execution's folder (live.tsv, summary.txt,
 * live.pb.gz) are read one after another, by a walk of the tree, and each
 * asks for the same live set: the last few made are kept, and a caller
 * gets its own copy (one memcpy, the texts' pointers moved along). */
#define LIVE_KEPT 4

struct live_kept {
	size_t xi, n, size;
	char *all; /* NULL: an empty slot */
	uint64_t used;
};

struct xpf_rt_live_cache {
	pthread_mutex_t mu;
	struct live_kept set[LIVE_KEPT];
	uint64_t clock;
};

struct xpf_rt_live_cache *xpf_rt_live_cache_new(void)
{
	struct xpf_rt_live_cache *c = xpf_calloc(1, sizeof *c);
	pthread_mutex_init(&c->mu, NULL);
	return c;
}

void xpf_rt_live_cache_free(struct xpf_rt_live_cache *c)
{
	if (c == NULL)
		return;
	for (size_t i = 0; i < LIVE_KEPT; i++)
		free(c->set[i].all);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

/* A copy of the n blocks at from (size bytes, their texts after them) whose
 * texts point into the copy. */
static xpf_rt_block *blocks_copy(const char *from, size_t n, size_t size)
{
	char *to = xpf_malloc(size);
	memcpy(to, from, size);
	xpf_rt_block *b = (xpf_rt_block *)(void *)to;
	for (size_t i = 0; i < n; i++) /* a text outside (a literal) stays */
		if (b[i].origin_text >= from && b[i].origin_text < from + size)
			b[i].origin_text = to + (b[i].origin_text - from);
	return b;
}

static bool live_kept_get(struct xpf_rt_live_cache *c, size_t xi, xpf_rt_block **out, size_t *n)
{
	bool hit = false;
	pthread_mutex_lock(&c->mu);
	for (size_t i = 0; i < LIVE_KEPT && !hit; i++) {
		struct live_kept *k = &c->set[i];
		if (k->all && k->xi == xi) {
			*out = blocks_copy(k->all, k->n, k->size);
			*n = k->n;
			k->used = ++c->clock;
			hit = true;
		}
	}
	pthread_mutex_unlock(&c->mu);
	return hit;
}

/* Keep a copy of blocks b[0..n) (size bytes) in the least recently used
 * slot. */
static void live_kept_put(struct xpf_rt_live_cache *c, size_t xi, const xpf_rt_block *b, size_t n,
			  size_t size)
{
	xpf_rt_block *copy = blocks_copy((const char *)b, n, size);
	pthread_mutex_lock(&c->mu);
	struct live_kept *old = &c->set[0];
	for (size_t i = 1; i < LIVE_KEPT; i++)
		if (c->set[i].used < old->used)
			old = &c->set[i];
	char *gone = old->all;
	*old = (struct live_kept){ xi, n, size, (char *)copy, ++c->clock };
	pthread_mutex_unlock(&c->mu);
	free(gone);
}

int xpf_runtime_live_at(const xpf_runtime *rt, size_t xi, xpf_rt_block **out, size_t *nout,
			xpf_error *err)
{
	(void)err;
	*out = NULL;
	*nout = 0;
	if (xi >= rt->nexecutions)
		return XPF_OK;
	struct xpf_rt_live_cache *c = rt->priv ? rt->priv->live_cache : NULL;
	if (c && live_kept_get(c, xi, out, nout))
		return XPF_OK;
	const xpf_rt_execution *x = &rt->executions[xi];
	size_t size;
	live_before(rt, x->allocator, x->start_ps, x->in_use_known, x->in_use_at_start_bytes, out,
		    nout, &size);
	if (c && *nout)
		live_kept_put(c, xi, *out, *nout, size);
	return XPF_OK;
}

void xpf_rt_blocks_free(xpf_rt_block *b, size_t n)
{
	(void)n; /* the texts are in the blocks' allocation */
	free(b);
}
