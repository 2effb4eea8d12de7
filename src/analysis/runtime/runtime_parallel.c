/* The runtime's runner: jobs shared out between threads, two steps side by
 * side, and the host lines read in chunks by several scans whose records
 * are then merged in line order, so that the result is what one pass over
 * every line makes.  The build's other files start no thread. */
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/runtime/runtime.h"
#include "analysis/runtime/runtime_priv.h"
#include "common/alloc.h"
#include "common/intern.h"
#include "common/lazy.h"
#include "common/map.h"
#include "common/runs.h"

/* How many threads the scans use: opt->threads (at most
 * MAX_SCAN_THREADS), or the online CPUs when 0; never more than njobs. */
size_t xpf_rt_threads(const xpf_rt_options *opt, size_t njobs)
{
	long c = opt->threads > 0 ? opt->threads : sysconf(_SC_NPROCESSORS_ONLN);
	size_t n = c > 1 ? (size_t)c : 1;
	if (n > MAX_SCAN_THREADS)
		n = MAX_SCAN_THREADS;
	return n < njobs ? n : njobs;
}

/* Jobs 0..n-1 shared out between nt threads (this one among them), each
 * taking the next from a counter, the largest first (size[k]: job k's
 * bytes), so that a big one is not left for last while the other threads
 * idle (size NULL: in order); fn(ctx, k, w), w a window of the thread's own
 * for reading planes. */
struct job_size {
	uint64_t size;
	size_t k;
};

struct jobs {
	size_t n, next;
	const struct job_size *order; /* the jobs, largest first */
	pthread_mutex_t mu;
	void (*fn)(void *ctx, size_t k, xpf_window *w);
	void *ctx;
};

static void *jobs_worker(void *arg)
{
	struct jobs *j = arg;
	xpf_window w = { 0 };
	for (;;) {
		pthread_mutex_lock(&j->mu);
		size_t k = j->next++;
		pthread_mutex_unlock(&j->mu);
		if (k >= j->n)
			break;
		j->fn(j->ctx, j->order[k].k, &w);
	}
	xpf_window_release(&w);
	return NULL;
}

static int job_size_cmp(const void *a, const void *b)
{
	const struct job_size *x = a, *y = b;
	if (x->size != y->size)
		return x->size > y->size ? -1 : 1;
	return x->k < y->k ? -1 : x->k > y->k;
}

void xpf_rt_run_jobs(size_t n, const uint64_t *size, size_t nt,
		     void (*fn)(void *ctx, size_t k, xpf_window *w), void *ctx)
{
	struct job_size *order = xpf_realloc_array(NULL, n ? n : 1, sizeof *order);
	for (size_t k = 0; k < n; k++)
		order[k] = (struct job_size){ size ? size[k] : 0, k };
	xpf_qsort(order, n, sizeof *order, job_size_cmp);
	struct jobs j = { n, 0, order, PTHREAD_MUTEX_INITIALIZER, fn, ctx };
	pthread_t tid[MAX_SCAN_THREADS]; /* nt <= MAX_SCAN_THREADS (xpf_rt_threads) */
	size_t started = 0;
	for (size_t t = 1; t < nt; t++)
		if (pthread_create(&tid[started], NULL, jobs_worker, &j) == 0)
			started++;
	jobs_worker(&j);
	for (size_t t = 0; t < started; t++)
		pthread_join(tid[t], NULL);
	pthread_mutex_destroy(&j.mu);
	free(order);
}

struct beside {
	void (*fn)(void *);
	void *ctx;
};

static void *beside_run(void *arg)
{
	struct beside *b = arg;
	b->fn(b->ctx);
	return NULL;
}

void xpf_rt_beside(size_t threads, void (*a)(void *), void *actx, void (*b)(void *), void *bctx)
{
	struct beside other = { b, bctx };
	pthread_t tid;
	bool two = threads > 1 && pthread_create(&tid, NULL, beside_run, &other) == 0;
	a(actx);
	if (two)
		pthread_join(tid, NULL);
	else
		b(bctx);
}

/* ---- the host lines, shared out between threads ------------------------- */

/* The host lines are cut into chunks of about the same bytes, which the
 * threads take in turn, so that a slower thread takes fewer (two fixed
 * halves could leave one thread working alone).  The first thread takes chunks from the
 * front and reads them straight into the main runtime; the others take
 * them from the back into runtimes of their own, appended to the main one
 * in line order at the end (about half the records copied, as with two
 * halves), so that every array is what one pass over all lines makes. */
struct host_chunk {
	size_t from, to;                         /* its lines */
	size_t thread;                           /* who read it (0: into the main runtime) */
	size_t ev0, ev1, x0, x1, r0, r1, c0, c1; /* its records in that thread's arrays */
	size_t nalloc;                           /* the thread's allocators when it ended */
	struct xpf_rt_scan_peak *peak;           /* its own in-window peaks, per allocator */
	int rc;
	xpf_error err;
};

struct host_thread {
	struct scan s; /* thread 0: the main scan's copy, unused */
	xpf_runtime rt;
	struct xpf_rt_priv pv;
	int *amap;      /* its allocators' indexes in the main runtime (-1: not yet) */
	uint32_t *smap; /* its sites' indexes in the main runtime (UINT32_MAX: not yet) */
};

struct host_work {
	struct scan *main;
	struct host_chunk *ch;
	size_t lo, hi; /* the chunks not taken yet: [lo, hi) */
	pthread_mutex_t mu;
	struct host_thread *th;
	/* opt.share_small (tests): the first thread takes its first chunk
	 * once each other thread started has taken one (or found none), so
	 * that chunks are read by other threads even on a small capture and
	 * a loaded machine, where the first thread could read them all
	 * before the others run: what tests/ compare is then the merge */
	pthread_cond_t took;
	size_t nstarted, ntook;
	bool wait;
};

struct host_worker_arg {
	struct host_work *w;
	size_t t;
};

static int scan_lines(struct scan *s, size_t from, size_t to, xpf_error *err)
{
	for (size_t l = from; l < to; l++) {
		int rc = xpf_rt_scan_line(s, l, err);
		if (rc != XPF_OK)
			return rc;
	}
	return XPF_OK;
}

static void *host_worker(void *arg)
{
	struct host_worker_arg *wa = arg;
	struct host_work *w = wa->w;
	struct host_thread *th = &w->th[wa->t];
	for (bool first = true;; first = false) {
		pthread_mutex_lock(&w->mu);
		while (first && wa->t == 0 && w->wait && w->ntook < w->nstarted)
			pthread_cond_wait(&w->took, &w->mu);
		bool got = w->lo < w->hi;
		size_t k = 0;
		if (got)
			k = wa->t == 0 ? w->lo++ : --w->hi;
		if (first && wa->t != 0) {
			w->ntook++;
			pthread_cond_signal(&w->took);
		}
		pthread_mutex_unlock(&w->mu);
		if (!got)
			break;
		struct host_chunk *c = &w->ch[k];
		c->thread = wa->t;
		if (wa->t == 0) {
			c->rc = scan_lines(w->main, c->from, c->to, &c->err);
			continue;
		}
		c->ev0 = th->rt.nevents;
		c->x0 = th->rt.nexecutions;
		c->r0 = th->rt.nretries;
		c->c0 = th->rt.ncompiles;
		for (size_t a = 0; a < th->rt.nallocators; a++)
			th->pv.peak[a].set = false; /* the chunk's own peaks */
		c->rc = scan_lines(&th->s, c->from, c->to, &c->err);
		c->ev1 = th->rt.nevents;
		c->x1 = th->rt.nexecutions;
		c->r1 = th->rt.nretries;
		c->c1 = th->rt.ncompiles;
		c->nalloc = th->rt.nallocators;
		c->peak = xpf_realloc_array(NULL, c->nalloc ? c->nalloc : 1, sizeof *c->peak);
		if (c->nalloc)
			memcpy(c->peak, th->pv.peak, c->nalloc * sizeof *c->peak);
	}
	return NULL;
}
/* n bytes at byte off of mapped array or array *src (*map_len bytes; 0: an array)
 * to dst.  A mapped array is copied out from the top down (a thread's chunks lie in
 * it in the reverse of line order): its whole 2 MiB steps from off up, all
 * copied now, are given back (*map_len shrinks to what is left, *src NULL
 * once nothing is), so that their pages back the next copies; xpf_big_free
 * frees the rest. */
static void mapped_copy_down(void *dst, void **src, size_t off, size_t n, size_t *map_len)
{
	const size_t step = (size_t)2 << 20;
	uint8_t *base = *src;
	if (n)
		memcpy(dst, base + off, n);
	if (!*map_len)
		return;
	size_t from = (off + step - 1) / step * step;
	if (from < *map_len) {
		munmap(base + from, *map_len - from);
		*map_len = from;
		if (from == 0)
			*src = NULL;
	}
}

/* Chunk c (read by thread th, not the first) appended to the main runtime
 * of s: false when that would hold more than XPF_RT_MAX_ALLOCATORS (the
 * runtime is then given up). */
static bool chunk_merge(struct scan *s, struct host_thread *th, const struct host_chunk *c)
{
	xpf_runtime *rt = s->rt, *br = &th->rt;
	struct xpf_rt_priv *pv = rt->priv, *bv = &th->pv;
	long xoff = (long)rt->nexecutions - (long)c->x0;
	size_t nx = rt->nexecutions + (c->x1 - c->x0);
	xpf_rt_exec_reserve(s, nx); /* within the main mapped arrays, which bound every host event */
	mapped_copy_down(rt->executions + rt->nexecutions, (void **)&br->executions,
			 c->x0 * sizeof *br->executions, (c->x1 - c->x0) * sizeof *br->executions,
			 &bv->exec_map_len);
	mapped_copy_down(pv->xb + rt->nexecutions, (void **)&bv->xb, c->x0 * sizeof *bv->xb,
			 (c->x1 - c->x0) * sizeof *bv->xb, &bv->xb_map_len);
	rt->nexecutions = nx;
	size_t e0 = rt->nevents, ne = rt->nevents + (c->ev1 - c->ev0);
	xpf_rt_events_reserve(s, ne);
	mapped_copy_down(rt->events + e0, (void **)&br->events, c->ev0 * sizeof *br->events,
			 (c->ev1 - c->ev0) * sizeof *br->events, &bv->events_map_len);
	for (size_t k = e0; k < ne; k++) {
		xpf_rt_event *e = &rt->events[k];
		/* its site, its shape kept by the main scan's set and its
		 * allocator the main runtime's: one the main runtime has not met
		 * yet is met here, in line order, as one pass would meet it (the
		 * thread met its chunks back to front; an allocator's first event
		 * is the first of one of its sites) */
		uint32_t *sm = &th->smap[e->site];
		if (*sm == UINT32_MAX) {
			xpf_rt_site w = br->sites[e->site];
			int *m = &th->amap[w.allocator];
			if (*m < 0)
				*m = xpf_rt_find_allocator(rt, &s->cap_alloc,
							   br->allocators[w.allocator].name,
							   br->allocators[w.allocator].keyed_by_index);
			if (*m < 0)
				return false;
			w.allocator = (int16_t)*m; /* below XPF_RT_MAX_ALLOCATORS */
			if (w.shape)
				w.shape = xpf_rt_intern(s, w.shape, strlen(w.shape));
			*sm = xpf_rt_site_of(rt, &w);
		}
		e->site = *sm;
		if (e->execution >= 0)
			e->execution += (int32_t)xoff;
	}
	rt->nevents = ne;
	/* its peaks (an allocator with one has an event here) */
	for (size_t a = 0; a < c->nalloc; a++)
		if (c->peak[a].set && th->amap[a] >= 0)
			xpf_rt_peak_take(&pv->peak[th->amap[a]], c->peak[a].in_use, c->peak[a].t_ps,
					 c->peak[a].available);
	if (c->r1 > c->r0) {
		size_t nr = rt->nretries + (c->r1 - c->r0);
		rt->retries = xpf_realloc_array(rt->retries, nr, sizeof *rt->retries);
		for (size_t i = c->r0; i < c->r1; i++) {
			xpf_rt_retry *r = &rt->retries[rt->nretries++];
			*r = br->retries[i];
			if (r->allocator >= 0)
				r->allocator = th->amap[r->allocator];
			if (r->execution >= 0)
				r->execution += xoff;
		}
		s->cap_retry = nr;
	}
	for (size_t i = c->c0; i < c->c1; i++)
		*XPF_VEC_PUSH(rt->compiles, rt->ncompiles, s->cap_compile) = br->compiles[i];
	return true;
}

/* After the merge: what thread th (not the first) found about its
 * allocators as a whole, then its arrays given back. */
static void thread_done(struct scan *s, struct host_thread *th)
{
	xpf_runtime *rt = s->rt, *br = &th->rt;
	struct xpf_rt_priv *pv = rt->priv, *bv = &th->pv;
	for (size_t a = 0; a < br->nallocators; a++) {
		if (th->amap[a] < 0)
			continue;
		xpf_rt_allocator *m = &rt->allocators[th->amap[a]], *ba = &br->allocators[a];
		if (ba->lifetime_peak_bytes > m->lifetime_peak_bytes)
			m->lifetime_peak_bytes = ba->lifetime_peak_bytes;
		if (ba->capacity_lo_bytes < m->capacity_lo_bytes)
			m->capacity_lo_bytes = ba->capacity_lo_bytes;
		if (ba->capacity_hi_bytes > m->capacity_hi_bytes)
			m->capacity_hi_bytes = ba->capacity_hi_bytes;
	}
	for (size_t a = 0; a < br->nallocators; a++)
		free(br->allocators[a].name);
	free(br->allocators);
	free(br->sites);
	xpf_map_free(&bv->site_map);
	free(th->smap);
	free(bv->peak);
	rt->keyed_by_index |= br->keyed_by_index;
	/* what is left of the mapped arrays (or the arrays) */
	xpf_big_free(br->events, bv->events_map_len);
	xpf_big_free(br->executions, bv->exec_map_len);
	xpf_big_free(bv->xb, bv->xb_map_len);
	free(br->retries);
	free(br->compiles);
	free(th->s.oh);
	xpf_rt_keep_interns(pv, &th->s.interned);
	free(th->s.kbuf);
	xpf_rt_scan_release(&th->s);
	free(th->s.avail);
	xpf_window_release(&th->s.win);
	free(th->amap);
}

/* The host lines cut into nchunks chunks of about the same bytes (total
 * in all); *nonempty: how many hold a line. */
static struct host_chunk *cut_chunks(const xpf_plane *p, size_t nchunks, uint64_t total,
				     size_t *nonempty)
{
	struct host_chunk *ch = xpf_calloc(nchunks, sizeof *ch);
	size_t l = 0;
	uint64_t acc = 0;
	*nonempty = 0;
	for (size_t k = 0; k < nchunks; k++) {
		ch[k].from = l;
		uint64_t goal = total / nchunks * (k + 1);
		while (l < p->nlines && (k + 1 == nchunks || acc < goal))
			acc += p->lines[l++].length;
		ch[k].to = l;
		*nonempty += ch[k].to > ch[k].from;
	}
	return ch;
}

/* Thread b (not the first): a scan like s's, into a runtime of its own. */
static void thread_init(const struct scan *s, struct host_thread *b)
{
	const xpf_plane *p = s->p;
	b->s = *s;
	b->s.rt = &b->rt;
	b->rt.priv = &b->pv;
	b->pv.nmodules = s->rt->priv->nmodules;
	b->pv.base = s->rt->priv->base;
	b->pv.module_names = s->rt->priv->module_names;
	b->s.cap_alloc = b->s.cap_events = b->s.cap_exec = b->s.cap_retry = b->s.cap_compile = 0;
	/* mapped arrays that bound every host event: a thread may take any chunk */
	xpf_rt_events_map(&b->s, p->nevents);
	xpf_rt_exec_map(&b->s, p->nevents);
	b->s.oh = NULL;
	b->s.noh = b->s.capoh = 0;
	memset(&b->s.win, 0, sizeof b->s.win);
	b->s.last_alloc = -1;
	b->s.interned = NULL;
	b->s.kbuf = NULL;
	b->s.stream = NULL;
	b->s.kbuf_n = b->s.kbuf_cap = 0;
	b->s.avail = NULL;
	b->s.navail = b->s.capavail = 0;
}

/* Scan every host line, on up to as many threads as CPUs. */
int xpf_rt_scan_host(struct scan *s, size_t *nchunks_read, size_t *nby_others, xpf_error *err)
{
	const xpf_plane *p = s->p;
	/* classify every metadata now: the threads only read the table */
	for (size_t k = 0; k < p->n_event_md; k++)
		xpf_rt_md_class(s, k, p->event_md[k].name);
	bool forced = s->rt->priv->opt.share_small;
	size_t nt = xpf_rt_threads(&s->rt->priv->opt, p->nlines);
	uint64_t total = 0;
	for (size_t l = 0; l < p->nlines; l++)
		total += p->lines[l].length;
	*nchunks_read = 1;
	*nby_others = 0;
	if (nt < 2 || (!forced && total < ((uint64_t)8 << 20)))
		return scan_lines(s, 0, p->nlines, err);
	size_t nchunks = nt * 8 < p->nlines ? nt * 8 : p->nlines;
	struct host_chunk *ch = cut_chunks(p, nchunks, total, nchunks_read);
	struct host_thread *th = xpf_calloc(nt, sizeof *th);
	for (size_t t = 1; t < nt; t++)
		thread_init(s, &th[t]);
	struct host_work w = {
		s, ch, 0,     nchunks, PTHREAD_MUTEX_INITIALIZER, th, PTHREAD_COND_INITIALIZER,
		0, 0,  forced
	};
	struct host_worker_arg wa[MAX_SCAN_THREADS]; /* nt <= MAX_SCAN_THREADS (xpf_rt_threads) */
	pthread_t tid[MAX_SCAN_THREADS];
	bool started[MAX_SCAN_THREADS] = { false };
	for (size_t t = 0; t < nt; t++)
		wa[t] = (struct host_worker_arg){ &w, t };
	for (size_t t = 1; t < nt; t++) {
		started[t] = pthread_create(&tid[t], NULL, host_worker, &wa[t]) == 0;
		w.nstarted += started[t]; /* read by this thread only */
	}
	host_worker(&wa[0]);
	for (size_t t = 1; t < nt; t++)
		if (started[t])
			pthread_join(tid[t], NULL);
	pthread_mutex_destroy(&w.mu);
	pthread_cond_destroy(&w.took);
	for (size_t t = 1; t < nt; t++) {
		th[t].amap = xpf_realloc_array(NULL, th[t].rt.nallocators ? th[t].rt.nallocators : 1,
					       sizeof *th[t].amap);
		for (size_t a = 0; a < th[t].rt.nallocators; a++)
			th[t].amap[a] = -1;
		th[t].smap = xpf_realloc_array(NULL, th[t].rt.nsites ? th[t].rt.nsites : 1,
					       sizeof *th[t].smap);
		for (size_t r = 0; r < th[t].rt.nsites; r++)
			th[t].smap[r] = UINT32_MAX;
	}
	for (size_t k = 0; k < nchunks; k++)
		*nby_others += ch[k].thread != 0 && ch[k].to > ch[k].from;
	/* The first thread's chunks are the first ones, in place already; the
	 * others merged in line order up to the first error met in line order
	 * (a chunk's own, or more allocators than a runtime holds, which each
	 * thread alone may not have met). */
	int rc = XPF_OK;
	for (size_t k = 0; k < nchunks; k++) {
		if (rc == XPF_OK && ch[k].rc != XPF_OK) {
			*err = ch[k].err;
			rc = ch[k].rc;
		}
		if (rc == XPF_OK && ch[k].thread != 0 && !chunk_merge(s, &th[ch[k].thread], &ch[k]))
			rc = xpf_rt_too_many_allocators(s, err);
		free(ch[k].peak);
	}
	for (size_t t = 1; t < nt; t++)
		thread_done(s, &th[t]);
	free(th);
	free(ch);
	return rc;
}
