/* The runtime: what the allocator really did, execution by execution
 * (SPEC §4.3).  This file runs the stages in order, each taking what the
 * one before made:
 *
 *   runtime_classify.c  event names -> kinds
 *   runtime_scan.c      a host line -> events, executions, retries, compiles
 *                       (runtime_event.c: one event or execution as records;
 *                       runtime_sites.c: allocators and sites, kept once)
 *   runtime_parallel.c  the runner: the host lines in chunks on threads,
 *                       merged; steps side by side (xpf_rt_beside)
 *   runtime_order.c     events in time order, replayed: the live index;
 *                       executions in order with their events
 *   runtime_kernels.c   the device index (kernels between execution starts)
 *   runtime_link.c      executions -> modules, the join to the plan
 *   runtime_compile.c   compilations: autotuner runs folded in, modules made
 *   runtime_query.c     live_at, between and other reads of the result */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/plan/plan.h"
#include "analysis/runtime/runtime.h"
#include "analysis/runtime/runtime_priv.h"
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
	static const char *names[] = { "ambiguous", "program_id", "name",      "requested_bytes",
				       "pjit",      "kernels",    "parameters" };
	return (unsigned)l < sizeof names / sizeof *names ? names[l] : "ambiguous";
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
static void index_planes(xpf_host *h, const xpf_rt_options *opt)
{
	size_t n = xpf_capture_nplanes(h->cap);
	uint64_t *size = xpf_realloc_array(NULL, n ? n : 1, sizeof *size);
	for (size_t k = 0; k < n; k++)
		size[k] = xpf_capture_plane_head(h->cap, k)->length;
	xpf_rt_run_jobs(n, size, xpf_rt_threads(opt, n), index_job_run, h);
	free(size);
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

/* A build in progress: the scan of the host lines, and what the caller
 * hears of each phase (xpf_rt_options.phase). */
struct build {
	xpf_host *h;
	xpf_runtime *rt;
	struct scan s;
	struct timespec t0;
	xpf_rt_progress prog;
};

static void phase_end(struct build *b, const char *what)
{
	const xpf_rt_options *o = &b->rt->priv->opt;
	if (!o->phase)
		return;
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	b->prog.phase = what;
	b->prog.seconds =
		(double)(t.tv_sec - b->t0.tv_sec) + (double)(t.tv_nsec - b->t0.tv_nsec) * 1e-9;
	b->prog.nevents = b->rt->nevents;
	b->prog.nsites = b->rt->nsites;
	b->prog.nexecutions = b->rt->nexecutions;
	b->prog.host_chunks_by_others = b->rt->host_chunks_by_others;
	o->phase(o->phase_ctx, &b->prog);
}

/* The modules' names and base names ("jit_f" for "jit_f(12)"), which the
 * link and the kernels compare with what events name. */
static void module_names(xpf_host *h, struct xpf_rt_priv *pv)
{
	pv->nmodules = h->nmodules;
	pv->base = xpf_calloc(h->nmodules ? h->nmodules : 1, sizeof *pv->base);
	pv->module_names = xpf_calloc(h->nmodules ? h->nmodules : 1, sizeof *pv->module_names);
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
}

/* ---- plans beside the host scan ---------------------------------------- */

/* The plans of the modules the host plane names as run (an event named
 * `<module>:XLA GPU module` or `...Execute (<module>)`), built beside the
 * host scan when there are two threads: the link and the diagnosis ask for
 * them next, and a real job's host scan reads its one long Python-tracer
 * line on one core.  "Names" is the link's name rule on the module name an
 * event's own name carries.  A module the host plane does not name is left
 * to whoever asks (a big one that never ran stays unbuilt), and so is
 * every module with one thread. */
struct plans_beside {
	xpf_host *h;
	size_t *mods, n;
};

static void build_plans(void *arg)
{
	struct plans_beside *pb = arg;
	for (size_t i = 0; i < pb->n; i++) {
		const xpf_plan *p;
		xpf_error e = { 0 }; /* kept by the plan's lazy for whoever asks */
		(void)pb->h->plan_of(pb->h, pb->mods[i], &p, &e);
	}
}

static void plans_named(struct plans_beside *pb, struct build *b)
{
	const xpf_plane *p = b->s.p;
	struct xpf_rt_priv *pv = b->rt->priv;
	*pb = (struct plans_beside){ .h = b->h };
	if (xpf_rt_threads(&pv->opt, 2) < 2 || b->h->nmodules == 0)
		return;
	pb->mods = xpf_calloc(b->h->nmodules, sizeof *pb->mods);
	bool *named = xpf_calloc(b->h->nmodules, sizeof *named);
	for (size_t k = 0; k < p->n_event_md; k++) {
		int dev;
		size_t len;
		const char *name = p->event_md[k].name ? p->event_md[k].name : "";
		const char *in = xpf_rt_name_in_event_name(name, xpf_rt_classify(name, &dev), &len);
		char *mod = in ? strndup(in, len) : NULL;
		for (size_t m = 0; mod && m < b->h->nmodules; m++)
			named[m] |= xpf_rt_name_names(b->h, pv, m, mod);
		free(mod);
	}
	for (size_t m = 0; m < b->h->nmodules; m++)
		if (named[m])
			pb->mods[pb->n++] = m;
	free(named);
}

/* The host scan as a step of the runner. */
struct host_step {
	struct build *b;
	int rc;
	xpf_error *err;
};

static void host_scan(void *arg)
{
	struct host_step *hs = arg;
	struct build *b = hs->b;
	hs->rc = xpf_rt_scan_host(&b->s, &b->prog.host_chunks, &b->rt->host_chunks_by_others,
				  hs->err);
}

/* The pieces of p's lines that have marks (NULL: none), their bounds set by
 * the lines' scans. */
static struct xpf_rt_pieces **pieces_new(const xpf_plane *p)
{
	struct xpf_rt_pieces **v = NULL;
	for (size_t l = 0; l < p->nlines; l++) {
		const xpf_event_pos *at;
		size_t nmarks = xpf_line_marks(p, l, &at);
		if (nmarks == 0)
			continue;
		if (v == NULL)
			v = xpf_calloc(p->nlines, sizeof *v);
		struct xpf_rt_pieces *pc = xpf_calloc(1, sizeof *pc);
		pc->n = nmarks;
		pc->at = at;
		pc->t0 = xpf_realloc_array(NULL, pc->n, sizeof *pc->t0);
		pc->t1 = xpf_realloc_array(NULL, pc->n, sizeof *pc->t1);
		v[l] = pc;
	}
	return v;
}

static void pieces_free(struct xpf_rt_pieces **v, size_t nlines)
{
	for (size_t l = 0; v && l < nlines; l++) {
		if (v[l] == NULL)
			continue;
		free(v[l]->t0);
		free(v[l]->t1);
		free(v[l]);
	}
	free(v);
}

/* The /host:CPU plane's lines scanned (none: nothing to do). */
static int scan_host_plane(struct build *b, xpf_error *err)
{
	xpf_host *h = b->h;
	xpf_runtime *rt = b->rt;
	struct scan *s = &b->s;
	struct xpf_rt_priv *pv = rt->priv;
	long pi = xpf_capture_find_plane(h->cap, "/host:CPU");
	if (pi < 0)
		return XPF_OK;
	rt->has_host_plane = true;
	for (size_t i = 0; i < xpf_capture_nplanes(h->cap); i++) {
		unsigned d;
		bool tpu;
		s->tpu_modules |= xpf_rt_device_plane(h, i, &d, &tpu) && tpu;
	}
	int rc = xpf_capture_plane(h->cap, (size_t)pi, &s->p, err);
	if (rc != XPF_OK)
		return rc;
	rt->host_plane = s->p;
	/* sites and executions keep their line in 32 bits */
	if (s->p->nlines > (size_t)INT32_MAX - 1)
		return xpf_fail(err, XPF_EMALFORMED,
				"%s: /host:CPU has more than %d lines: not supported",
				xpf_capture_label(h->cap), INT32_MAX - 1);
	size_t nmd = s->p->n_event_md ? s->p->n_event_md : 1;
	s->md_flags = xpf_realloc_array(NULL, nmd, sizeof *s->md_flags);
	s->md_dev = xpf_realloc_array(NULL, nmd, sizeof *s->md_dev);
	for (size_t k = 0; k < nmd; k++)
		s->md_flags[k] = UINT_MAX;
	xpf_rt_alloc_stat_ids(s);
	pv->nlines = s->p->nlines;
	/* each line's bounds are set by its own scan, on the threads */
	pv->line_t0 = xpf_realloc_array(NULL, pv->nlines ? pv->nlines : 1, sizeof *pv->line_t0);
	pv->line_t1 = xpf_realloc_array(NULL, pv->nlines ? pv->nlines : 1, sizeof *pv->line_t1);
	s->line_t0 = pv->line_t0;
	s->line_t1 = pv->line_t1;
	pv->pieces = pieces_new(s->p);
	s->pieces = pv->pieces;
	xpf_rt_events_map(s, s->p->nevents);
	struct plans_beside pb;
	plans_named(&pb, b);
	struct host_step hs = { b, XPF_OK, err };
	xpf_rt_beside(pb.n ? 2 : 1, host_scan, &hs, build_plans, &pb);
	free(pb.mods);
	b->prog.plans_beside = pb.n;
	b->prog.host_lines = s->p->nlines;
	phase_end(b, "host");
	return hs.rc;
}

/* Which devices' kernels are read before the link (want[d]): as the
 * options say, by default those the link will ask about.  Their count. */
static size_t kernels_wanted(struct build *b, bool *want)
{
	struct xpf_rt_priv *pv = b->rt->priv;
	if (pv->opt.kernels == XPF_RT_KERNELS_ALL)
		memset(want, 1, pv->ndev * sizeof *want);
	else if (pv->opt.kernels == XPF_RT_KERNELS_WANTED)
		xpf_rt_kernels_wanted(b->h, b->rt, want); /* (the executions' order does not matter) */
	size_t nwant = 0;
	for (size_t d = 0; d < pv->ndev; d++)
		nwant += want[d] && pv->kdev[d].nplanes;
	return nwant;
}

/* The order and the device reads as steps of the runner. */
struct order_step {
	struct build *b;
	struct xpf_rt_finish *fin;
	const bool *want;
};

static void replay_step(void *arg)
{
	struct order_step *o = arg;
	xpf_rt_order_and_replay(o->b->rt);
}

static void begin_step(void *arg)
{
	struct order_step *o = arg;
	xpf_rt_finish_begin(o->b->rt, o->fin);
}

static void order_step(void *arg)
{
	struct order_step *o = arg;
	xpf_rt_order_and_replay(o->b->rt);
	xpf_rt_finish_events(o->b->rt, o->fin);
}

static void devices_step(void *arg)
{
	struct order_step *o = arg;
	xpf_rt_devices_run(o->b->rt->priv, o->want);
	phase_end(o->b, "devices");
}

/* The events ordered and replayed, the executions ordered with their
 * events, the kernels of the devices in want read: the kernel reads
 * beside the order when there are some (they write only the kernels'
 * buckets), else the executions' sort beside the replay (they share no
 * field). */
static void order_and_devices(struct build *b, const bool *want, size_t nwant,
			      struct xpf_rt_finish *fin)
{
	xpf_runtime *rt = b->rt;
	struct xpf_rt_priv *pv = rt->priv;
	size_t threads = xpf_rt_threads(&pv->opt, 2);
	struct order_step o = { b, fin, want };
	if (nwant) {
		xpf_rt_finish_begin(rt, fin);
		fin->threads = threads;
		xpf_rt_kernel_times(pv, rt); /* before any device's kernels are read */
		xpf_rt_beside(threads, devices_step, &o, order_step, &o);
	} else {
		xpf_rt_beside(threads, replay_step, &o, begin_step, &o);
		fin->threads = threads;
		xpf_rt_kernel_times(pv, rt);
		xpf_rt_finish_events(rt, fin);
		devices_step(&o);
	}
	xpf_map_free(&pv->site_map); /* the replay made the last site */
	phase_end(b, "order");
}

/* After the order: the link, with the kernels' errors of those read before
 * it and of those it asked for. */
static int link(struct build *b, size_t nwant, struct xpf_rt_finish *fin, xpf_error *err)
{
	struct xpf_rt_priv *pv = b->rt->priv;
	int rc = xpf_rt_kernels_error(pv, err);
	if (rc == XPF_OK)
		rc = xpf_rt_finish_end(b->h, b->rt, fin, err);
	if (rc == XPF_OK)
		rc = xpf_rt_kernels_error(pv, err);
	if (rc == XPF_OK)
		xpf_rt_compiles_finish(b->h, b->rt);
	xpf_rt_finish_release(fin);
	size_t nread = 0, nplanes = 0;
	for (size_t d = 0; d < pv->ndev; d++) {
		nplanes += pv->kdev[d].nplanes > 0;
		nread += pv->kdev[d].nplanes && xpf_lazy_state(&pv->kdev[d].read) != XPF_LAZY_NOT_YET;
	}
	b->prog.kernel_devices = nplanes;
	b->prog.kernel_devices_before = nwant;
	b->prog.kernel_devices_asked = nread - nwant;
	phase_end(b, "finish");
	return rc;
}

/* The stages in order (see the top of this file). */
static int build(struct build *b, xpf_error *err)
{
	xpf_host *h = b->h;
	xpf_runtime *rt = b->rt;
	struct xpf_rt_priv *pv = rt->priv;
	clock_gettime(CLOCK_MONOTONIC, &b->t0);
	b->s.h = h;
	b->s.rt = rt;
	b->s.last_alloc = -1;
	index_planes(h, &pv->opt);
	phase_end(b, "index");
	int rc = xpf_capture_time_base(h->cap, &b->s.base, err);
	if (rc != XPF_OK)
		return rc;
	xpf_rt_exec_map(&b->s, exec_bound(h));
	module_names(h, pv);
	rc = scan_host_plane(b, err);
	if (rc == XPF_OK)
		rc = xpf_rt_devices_prepare(&b->s, err);
	if (rc != XPF_OK)
		return rc;
	bool *want = xpf_calloc(pv->ndev ? pv->ndev : 1, sizeof *want);
	size_t nwant = kernels_wanted(b, want);
	struct xpf_rt_finish fin;
	order_and_devices(b, want, nwant, &fin);
	free(want);
	return link(b, nwant, &fin, err);
}

static void build_release(struct build *b)
{
	free(b->s.oh);
	free(b->s.md_flags);
	free(b->s.md_dev);
	xpf_rt_keep_interns(b->rt->priv, &b->s.interned);
	free(b->s.kbuf);
	xpf_rt_scan_release(&b->s);
	free(b->s.avail);
	xpf_window_release(&b->s.win);
}

int xpf_runtime_build(xpf_host *h, const xpf_rt_options *opt, xpf_runtime **out, xpf_error *err)
{
	xpf_runtime *rt = xpf_calloc(1, sizeof *rt);
	rt->priv = xpf_calloc(1, sizeof *rt->priv);
	rt->priv->opt = *opt;
	struct build b;
	memset(&b, 0, sizeof b);
	b.h = h;
	b.rt = rt;
	int rc = build(&b, err);
	build_release(&b);
	rt->priv->live_cache = xpf_rt_live_cache_new();
	if (rc != XPF_OK) {
		xpf_runtime_free(rt);
		return rc;
	}
	*out = rt;
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
	free(rt->compiles);
	free(rt->candidates);
	struct xpf_rt_priv *pv = rt->priv;
	if (pv) {
		for (size_t d = 0; d < pv->ndev; d++)
			xpf_rt_kdev_free(&pv->kdev[d]);
		free(pv->kdev);
		free(pv->times);
		free(pv->peak);
		xpf_big_free(pv->xb, pv->xb_map_len);
		free(pv->line_t0);
		free(pv->line_t1);
		pieces_free(pv->pieces, pv->nlines);
		for (size_t i = 0; i < pv->ninterns; i++)
			xpf_intern_free(pv->interns[i]);
		free(pv->interns);
		xpf_map_free(&pv->site_map);
		xpf_rt_live_cache_free(pv->live_cache);
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
