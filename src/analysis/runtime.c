/* The runtime: what the allocator really did, execution by execution
 * (SPEC §4.3).  This file runs the stages in order, each taking what the
 * one before made:
 *
 *   runtime_classify.c  event names -> kinds
 *   runtime_scan.c      a host line -> events, executions, retries
 *                       (runtime_event.c: one event or execution as records;
 *                       runtime_sites.c: allocators and sites, kept once)
 *   runtime_parallel.c  the host lines in chunks on threads, merged
 *   runtime_order.c     events in time order, replayed: the live index;
 *                       executions in order with their events
 *   runtime_kernels.c   the device index (kernels between execution starts)
 *   runtime_link.c      executions -> modules, the join to the plan
 *   runtime_query.c     live_at, between and other reads of the result */
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/runtime.h"
#include "analysis/runtime_priv.h"
#include "common/alloc.h"
#include "common/intern.h"
#include "common/lazy.h"
#include "common/map.h"
#include "common/runs.h"

/* ---- small helpers ---------------------------------------------------- */

const char *xpf_launched_name(enum xpf_launched l)
{
	return l == XPF_LAUNCHED_YES ? "yes" : l == XPF_LAUNCHED_NO ? "no" : "unknown";
}

const char *xpf_link_name(enum xpf_link l)
{
	static const char *names[] = { "ambiguous", "program_id", "name", "requested_bytes",
				       "pjit", "kernels" };
	return (unsigned)l < sizeof names / sizeof *names ? names[l] : "ambiguous";
}


/* Beside the kernel scans: the events ordered and replayed, then what the
 * executions need of them. */
struct order_job {
	xpf_runtime *rt;
	struct xpf_rt_finish *fin;
};

static void *order_worker(void *arg)
{
	struct order_job *o = arg;
	xpf_rt_order_and_replay(o->rt);
	xpf_rt_finish_events(o->rt, o->fin);
	return NULL;
}

/* The executions sorted (xpf_rt_finish_begin) while the events are, and
 * the pages of their event lists faulted in. */
static void *begin_worker(void *arg)
{
	struct order_job *o = arg;
	xpf_rt_finish_begin(o->rt, o->fin);
	xpf_rt_finish_warm(o->fin, o->rt);
	return NULL;
}

/* Whether the build reads plane i's lines before the finish: /host:CPU's
 * and a TPU plane's (its XLA Modules line); a GPU plane's only when its
 * kernels are read (kdev_compute), any other plane's never. */
static bool lines_read(const xpf_host *h, size_t i)
{
	unsigned d;
	bool tpu;
	return strcmp(xpf_capture_plane_head(h->cap, i)->name, "/host:CPU") == 0 ||
	       (xpf_rt_device_plane(h, i, &d, &tpu) && tpu);
}

static void index_job_run(void *ctx, size_t k, xpf_window *w)
{
	xpf_host *h = ctx;
	const xpf_plane *p;
	(void)w;
	if (lines_read(h, k))
		(void)xpf_capture_plane(h->cap, k, &p, NULL);
	else /* for the time base (and the devices' stats) */
		(void)xpf_capture_plane_meta(h->cap, k, &p, NULL);
}

/* Every plane indexed (the lines kept of those the build reads, see
 * lines_read; the time base needs every plane's), on as many threads as
 * there are CPUs.  Errors stay with the planes and are met again, in plane
 * order, by whoever asks next. */
static void index_planes(xpf_host *h)
{
	size_t n = xpf_capture_nplanes(h->cap);
	uint64_t *size = xpf_realloc_array(NULL, n ? n : 1, sizeof *size);
	for (size_t k = 0; k < n; k++)
		size[k] = xpf_capture_plane_head(h->cap, k)->length;
	xpf_rt_run_jobs(n, size, xpf_rt_threads(n, NULL), index_job_run, h);
	free(size);
}

/* XPF_PHASES=1 prints when each phase of the build ends (seconds since it
 * began) on stderr: how bench/README.md's "Where the time goes" is read. */
struct phases {
	bool on;
	struct timespec t0;
};

static void phase(const struct phases *ph, const char *what)
{
	if (!ph->on)
		return;
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	long anon_kb = -1;
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "RssAnon: %ld", &anon_kb) == 1)
			break;
	if (f)
		fclose(f);
	long huge_kb = -1;
	f = fopen("/proc/self/smaps_rollup", "r");
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "AnonHugePages: %ld", &huge_kb) == 1)
			break;
	if (f)
		fclose(f);
	fprintf(stderr, "xplanefs: runtime phase %-8s %.3f s, RssAnon %ld MiB (%ld on huge pages)\n",
		what, (double)(t.tv_sec - ph->t0.tv_sec) + (double)(t.tv_nsec - ph->t0.tv_nsec) * 1e-9,
		anon_kb / 1024, huge_kb / 1024);
}

/* Every execution is made from one event: of /host:CPU, or of a TPU
 * plane's XLA Modules line.  (Planes that fail to index count nothing:
 * their scan fails.) */
static size_t exec_bound(const xpf_host *h)
{
	size_t n = 0;
	for (size_t i = 0; i < xpf_capture_nplanes(h->cap); i++) {
		unsigned d;
		bool tpu;
		const xpf_plane *p;
		if ((strcmp(xpf_capture_plane_head(h->cap, i)->name, "/host:CPU") == 0 ||
		     (xpf_rt_device_plane(h, i, &d, &tpu) && tpu)) &&
		    xpf_capture_plane(h->cap, i, &p, NULL) == XPF_OK)
			n += p->nevents;
	}
	return n;
}

static int build(xpf_host *h, xpf_runtime *rt, xpf_error *err)
{
	const char *pv_env = getenv("XPF_PHASES");
	struct phases ph = { pv_env && *pv_env && strcmp(pv_env, "0") != 0, { 0, 0 } };
	clock_gettime(CLOCK_MONOTONIC, &ph.t0);
	struct scan s;
	memset(&s, 0, sizeof s);
	s.h = h;
	s.rt = rt;
	s.last_alloc = -1;
	index_planes(h);
	phase(&ph, "index");
	int rc = xpf_capture_time_base(h->cap, &s.base, err);
	if (rc != XPF_OK)
		return rc;
	struct xpf_rt_priv *pv = rt->priv;
	xpf_rt_exec_rooms(&s, exec_bound(h));
	pv->nmodules = h->nmodules;
	pv->base = calloc(h->nmodules ? h->nmodules : 1, sizeof *pv->base);
	pv->module_names = calloc(h->nmodules ? h->nmodules : 1, sizeof *pv->module_names);
	if (!pv->base || !pv->module_names)
		abort();
	for (size_t m = 0; m < h->nmodules; m++) {
		const char *n = xpf_capture_module(h->cap, m)->name;
		size_t len = strlen(n);
		pv->module_names[m] = n;
		if (len > 2 && n[len - 1] == ')') {
			size_t k = len - 1;
			while (k > 0 && n[k - 1] >= '0' && n[k - 1] <= '9')
				k--;
			if (k > 1 && k < len - 1 && n[k - 1] == '(')
				len = k - 1;
		}
		pv->base[m] = strndup(n, len);
		if (!pv->base[m])
			abort();
	}

	long pi = xpf_capture_find_plane(h->cap, "/host:CPU");
	if (pi >= 0) {
		rt->has_host_plane = true;
		rc = xpf_capture_plane(h->cap, (size_t)pi, &s.p, err);
		if (rc != XPF_OK)
			goto out;
		rt->host_plane = s.p;
		/* an event without an execution keeps its line in `execution`
		 * (-2 - line): in 32 bits */
		if (s.p->nlines > (size_t)INT32_MAX - 1) {
			rc = xpf_fail(err, XPF_EMALFORMED, "%s: /host:CPU has more than %d lines: not supported",
				      xpf_capture_label(h->cap), INT32_MAX - 1);
			goto out;
		}
		size_t nmd = s.p->n_event_md ? s.p->n_event_md : 1;
		s.md_flags = malloc(nmd * sizeof *s.md_flags);
		s.md_dev = malloc(nmd * sizeof *s.md_dev);
		if (!s.md_flags || !s.md_dev)
			abort();
		for (size_t k = 0; k < nmd; k++)
			s.md_flags[k] = UINT_MAX;
		xpf_rt_alloc_stat_ids(&s);
		pv->nlines = s.p->nlines;
		/* each line's set by its scan (xpf_rt_scan_line), on the threads: their
		 * 2.7 MB of fresh 4 KiB pages on the 1 GiB capture were ~11 ms
		 * on one core before the scan when set here */
		pv->line_t0 = xpf_realloc_array(NULL, pv->nlines ? pv->nlines : 1, sizeof *pv->line_t0);
		pv->line_t1 = xpf_realloc_array(NULL, pv->nlines ? pv->nlines : 1, sizeof *pv->line_t1);
		s.line_t0 = pv->line_t0;
		s.line_t1 = pv->line_t1;
		xpf_rt_events_room(&s, s.p->nevents);
		size_t nchunks;
		rc = xpf_rt_scan_host(&s, &nchunks, &rt->host_chunks_by_others, err);
		phase(&ph, "host");
		if (ph.on)
			fprintf(stderr, "xplanefs: runtime host lines: %zu, read in %zu chunk(s), %zu by other threads; "
				"%zu allocator events at %zu sites, %zu executions\n",
				s.p->nlines, nchunks, rt->host_chunks_by_others, rt->nevents, rt->nsites,
				rt->nexecutions);
		if (rc != XPF_OK)
			goto out;
	}
	/* Every execution made (the TPU ones now).  When the finish will ask
	 * for some devices' kernels: the executions sorted, then side by side
	 * the kernel scans of those devices (they write only the buckets) and
	 * the events' order, replay and what the executions need of them
	 * (events, allocators, retries, executions).  Else the executions'
	 * sort is what goes beside the events' order and replay.
	 * XPF_KERNELS=all reads every device's kernels there, =ask none (each
	 * on the finish's first ask): for tests, the same tree either way. */
	rc = xpf_rt_devices_prepare(&s, err);
	if (rc != XPF_OK)
		goto out;
	bool *want = xpf_calloc(pv->ndev ? pv->ndev : 1, sizeof *want);
	const char *kenv = getenv("XPF_KERNELS");
	if (kenv && strcmp(kenv, "all") == 0)
		memset(want, 1, pv->ndev * sizeof *want);
	else if (!(kenv && strcmp(kenv, "ask") == 0))
		xpf_rt_kernels_wanted(h, rt, want); /* (the executions' order does not matter) */
	size_t nwant = 0;
	for (size_t d = 0; d < pv->ndev; d++)
		nwant += want[d] && pv->kdev[d].nplanes;
	size_t threads = xpf_rt_threads(2, NULL);
	struct xpf_rt_finish fin;
	struct order_job oj = { rt, &fin };
	pthread_t ot;
	bool ordering = false;
	if (nwant) {
		xpf_rt_finish_begin(rt, &fin);
		fin.threads = threads;
		ordering = threads > 1 && pthread_create(&ot, NULL, order_worker, &oj) == 0;
		if (!ordering)
			order_worker(&oj);
	} else {
		/* no kernels to read first: the executions sorted on the second
		 * core beside the events' order and replay (they share no field) */
		bool two = threads > 1 && pthread_create(&ot, NULL, begin_worker, &oj) == 0;
		xpf_rt_order_and_replay(rt);
		if (two)
			pthread_join(ot, NULL);
		else
			xpf_rt_finish_begin(rt, &fin);
		fin.threads = threads;
		xpf_rt_finish_events(rt, &fin);
	}
	xpf_rt_devices_run(pv, want);
	free(want);
	phase(&ph, "devices");
	if (ordering)
		pthread_join(ot, NULL);
	xpf_map_free(&pv->site_map); /* the replay made the last site */
	phase(&ph, "order");
	rc = xpf_rt_kernels_error(pv, err);       /* those read beforehand */
	if (rc == XPF_OK)
		rc = xpf_rt_finish_end(h, rt, &fin, err);
	if (rc == XPF_OK)
		rc = xpf_rt_kernels_error(pv, err);   /* and those asked for there */
	xpf_rt_finish_release(&fin);
	phase(&ph, "finish");
	if (ph.on) {
		size_t nread = 0, nplanes = 0;
		for (size_t d = 0; d < pv->ndev; d++) {
			nplanes += pv->kdev[d].nplanes > 0;
			nread += pv->kdev[d].nplanes && xpf_lazy_state(&pv->kdev[d].read) != XPF_LAZY_NOT_YET;
		}
		fprintf(stderr, "xplanefs: runtime kernels of %zu of %zu device(s) read before the finish, %zu more when it asked\n",
			nwant, nplanes, nread - nwant);
	}
out:
	free(s.oh);
	free(s.md_flags);
	free(s.md_dev);
	xpf_rt_keep_interns(rt->priv, &s.interned);
	free(s.kbuf);
	free(s.avail);
	xpf_window_release(&s.win);
	return rc;
}

static int compute(void *ctx, void **value, xpf_error *err)
{
	xpf_host *h = ctx;
	xpf_runtime *rt = calloc(1, sizeof *rt);
	if (!rt)
		abort();
	rt->priv = calloc(1, sizeof *rt->priv);
	if (!rt->priv)
		abort();
	rt->priv->rt = rt;
	int rc = build(h, rt, err);
	if (rc != XPF_OK) {
		xpf_runtime_free(rt);
		return rc;
	}
	*value = rt;
	return XPF_OK;
}

int xpf_host_runtime(xpf_host *h, const xpf_runtime **out, xpf_error *err)
{
	void *v;
	int rc = xpf_lazy_get(&h->runtime, compute, h, &v, err);
	if (rc != XPF_OK)
		return rc;
	*out = v;
	return XPF_OK;
}

void xpf_runtime_free(void *p)
{
	xpf_runtime *rt = p;
	if (rt == NULL)
		return;
	for (size_t a = 0; a < rt->nallocators; a++)
		free(rt->allocators[a].name);
	free(rt->allocators);
	xpf_big_free(rt->events, rt->priv ? rt->priv->events_map_len : 0);
	free(rt->sites);
	xpf_big_free(rt->executions, rt->priv ? rt->priv->exec_map_len : 0);
	free(rt->retries);
	free(rt->candidates);
	struct xpf_rt_priv *pv = rt->priv;
	if (pv) {
		for (size_t d = 0; d < pv->ndev; d++)
			xpf_rt_kdev_free(&pv->kdev[d]);
		free(pv->kdev);
		free(pv->times);
		if (pv->devices_ready)
			xpf_lazy_release(&pv->times_made, NULL);
		free(pv->peak);
		xpf_big_free(pv->xb, pv->xb_map_len);
		free(pv->line_t0);
		free(pv->line_t1);
		for (size_t i = 0; i < pv->ninterns; i++)
			xpf_intern_free(pv->interns[i]);
		free(pv->interns);
		xpf_map_free(&pv->site_map);
		xpf_big_free(pv->live_ev, pv->live_ev_map_len);
		free(pv->live_beg);
		free(pv->live_blk_beg);
		free(pv->live_blk_end);
		for (size_t m = 0; m < pv->nmodules; m++)
			free(pv->base[m]);
		free(pv->base);
		free(pv->module_names);
		free(pv);
	}
	free(rt);
}
