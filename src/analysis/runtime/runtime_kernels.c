/* The device index: per device, which kernels ran in each interval
 * between execution starts, for `launched` and the kernels link rule. */
#include <inttypes.h>
#include <limits.h>
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

/* ---- device planes ---------------------------------------------------- */

static long module_by_program_id(xpf_host *h, uint64_t pid)
{
	for (size_t m = 0; m < h->nmodules; m++)
		if (xpf_capture_module(h->cap, m)->program_id == pid)
			return (long)m;
	return -1;
}

static long module_by_hlo_name(xpf_host *h, const struct xpf_rt_priv *pv, xpf_str name)
{
	long found = -1;
	for (size_t m = 0; m < h->nmodules; m++) {
		const char *full = xpf_capture_module(h->cap, m)->name;
		if (xpf_str_eq(name, full) || xpf_str_eq(name, pv->base[m])) {
			if (found >= 0)
				return -1;
			found = (long)m;
		}
	}
	return found;
}

static int kpair_cmp(const void *a, const void *b)
{
	const struct xpf_rt_kpair *x = a, *y = b;
	if (x->module != y->module)
		return x->module < y->module ? -1 : 1;
	return x->bucket < y->bucket ? -1 : x->bucket > y->bucket;
}

static bool time_at_or_below(const void *time, const void *t)
{
	return *(const int64_t *)time <= *(const int64_t *)t;
}

static bool time_below(const void *time, const void *t)
{
	return *(const int64_t *)time < *(const int64_t *)t;
}

/* Index of the last time <= t, or -1. */
static long bucket_of(const struct xpf_rt_priv *pv, int64_t t)
{
	size_t after =
		xpf_lower_bound(&t, pv->times, pv->ntimes, sizeof *pv->times, time_at_or_below);
	return (long)after - 1;
}

/* Index of the first time >= t (ntimes if none). */
static size_t time_index(const struct xpf_rt_priv *pv, int64_t t)
{
	return xpf_lower_bound(&t, pv->times, pv->ntimes, sizeof *pv->times, time_below);
}

/* A (module, bucket) pair to look up, in the caller's own types. */
struct kpair_key {
	long module;
	size_t bucket;
};

static bool kpair_below(const void *pair, const void *key)
{
	const struct xpf_rt_kpair *q = pair;
	const struct kpair_key *k = key;
	return q->module < k->module || (q->module == k->module && q->bucket < k->bucket);
}

/* Device dev's kernels, read on this first ask; NULL: no plane, or its
 * read failed (xpf_rt_kernels_error tells). */
static const struct xpf_rt_kdev *kdev_of(struct xpf_rt_priv *pv, int dev)
{
	if (dev < 0 || (size_t)dev >= pv->ndev || pv->kdev[dev].nplanes == 0 ||
	    xpf_rt_kernels_read(pv, (size_t)dev, NULL) != XPF_OK || pv->kdev[dev].first_t == NULL)
		return NULL;
	return &pv->kdev[dev];
}

long xpf_rt_first_kernel_module(struct xpf_rt_priv *pv, int dev, int64_t t)
{
	const struct xpf_rt_kdev *k = kdev_of(pv, dev);
	if (k == NULL)
		return -1;
	size_t b = k->next_mod[time_index(pv, t)];
	return b < pv->ntimes ? k->first_mod[b] : -1;
}

bool xpf_rt_has_kernel(struct xpf_rt_priv *pv, int dev, long module, int64_t from, int64_t to,
		       bool *any_after)
{
	*any_after = false;
	const struct xpf_rt_kdev *k = kdev_of(pv, dev);
	if (k == NULL)
		return false;
	size_t nb = pv->ntimes, i = time_index(pv, from);
	size_t j = to == INT64_MAX ? nb : time_index(pv, to);
	*any_after = k->any_before[nb] > k->any_before[i];
	if (j <= i)
		return false;
	if (module < 0)
		return k->any_before[j] > k->any_before[i];
	struct kpair_key key = { module, i };
	size_t lo = xpf_lower_bound(&key, k->pairs, k->npairs, sizeof *k->pairs, kpair_below);
	return lo < k->npairs && k->pairs[lo].module == module && k->pairs[lo].bucket < j;
}

/* Space for devices 0..d in pv->kdev (before the kernel scans start: they
 * only fill their own device's entry; kdev_ready then readies the reads). */
static void kdev_grow(struct xpf_rt_priv *pv, size_t d)
{
	if (d < pv->ndev)
		return;
	size_t nd = d + 1;
	pv->kdev = xpf_realloc_array(pv->kdev, nd, sizeof *pv->kdev);
	memset(pv->kdev + pv->ndev, 0, (nd - pv->ndev) * sizeof *pv->kdev);
	pv->ndev = nd;
}

/* Plane i (ordinal d) is one of device d's. */
static void kdev_add_plane(struct xpf_rt_priv *pv, size_t d, size_t i, bool tpu)
{
	kdev_grow(pv, d);
	struct xpf_rt_kdev *k = &pv->kdev[d];
	k->planes = xpf_realloc_array(k->planes, k->nplanes + 1, sizeof *k->planes);
	k->tpu = xpf_realloc_array(k->tpu, k->nplanes + 1, sizeof *k->tpu);
	k->planes[k->nplanes] = i;
	k->tpu[k->nplanes++] = tpu;
}

/* Once pv->kdev stops moving: each device's read. */
static void kdev_ready(struct xpf_rt_priv *pv)
{
	for (size_t d = 0; d < pv->ndev; d++) {
		pv->kdev[d].pv = pv;
		xpf_lazy_init(&pv->kdev[d].read);
	}
}

void xpf_rt_kdev_free(struct xpf_rt_kdev *k)
{
	free(k->first_t);
	free(k->first_mod);
	free(k->any_before);
	free(k->next_mod);
	free(k->pairs);
	free(k->planes);
	free(k->tpu);
	if (k->pv)
		xpf_lazy_release(&k->read, NULL);
}

/* Device d's buckets, empty (allocated by its own kernel scan, so that the
 * scans of several devices allocate side by side). */
static void kdev_init(struct xpf_rt_priv *pv, size_t d)
{
	struct xpf_rt_kdev *k = &pv->kdev[d];
	if (k->first_t)
		return;
	size_t nb = pv->ntimes;
	k->first_t = malloc((nb + 1) * sizeof *k->first_t);
	k->first_mod = malloc((nb + 1) * sizeof *k->first_mod);
	k->any_before = calloc(nb + 1, sizeof *k->any_before);
	k->next_mod = malloc((nb + 1) * sizeof *k->next_mod);
	if (!k->first_t || !k->first_mod || !k->any_before || !k->next_mod)
		abort();
	for (size_t b = 0; b <= nb; b++) {
		k->first_t[b] = INT64_MAX;
		k->first_mod[b] = -1;
	}
}

/* After device d's scans: the prefix counts, next_mod, pairs sorted and
 * unique. */
static void kdev_finish(struct xpf_rt_priv *pv, size_t d)
{
	size_t nb = pv->ntimes;
	struct xpf_rt_kdev *k = &pv->kdev[d];
	if (!k->first_t)
		return;
	/* any_before[b] held "bucket b holds a kernel" */
	size_t run = 0;
	for (size_t b = 0; b <= nb; b++) {
		size_t has = b < nb ? k->any_before[b] : 0;
		k->any_before[b] = run;
		run += has != 0;
	}
	k->next_mod[nb] = nb;
	for (size_t b = nb; b-- > 0;)
		k->next_mod[b] = k->first_mod[b] >= 0 ? b : k->next_mod[b + 1];
	if (k->npairs)
		xpf_qsort(k->pairs, k->npairs, sizeof *k->pairs, kpair_cmp);
	size_t u = 0;
	for (size_t i = 0; i < k->npairs; i++)
		if (u == 0 || kpair_cmp(&k->pairs[u - 1], &k->pairs[i]) != 0)
			k->pairs[u++] = k->pairs[i];
	k->npairs = u;
}

/* One kernel at t of module m (-1: names none we know) on device d. */
static void add_kernel(struct xpf_rt_priv *pv, struct xpf_rt_kdev *k, long *bcache, int64_t t, long m)
{
	long b = *bcache;
	if (!(b >= 0 && pv->times[b] <= t && ((size_t)b + 1 == pv->ntimes || t < pv->times[b + 1])))
		b = *bcache = bucket_of(pv, t);
	if (b < 0) /* before every execution: nothing asks about it */
		return;
	k->any_before[b] = 1;
	if (m < 0)
		return;
	if (t < k->first_t[b]) {
		k->first_t[b] = t;
		k->first_mod[b] = m;
	}
	if (k->npairs && k->pairs[k->npairs - 1].module == m &&
	    k->pairs[k->npairs - 1].bucket == (size_t)b)
		return;
	struct xpf_rt_kpair *q = XPF_VEC_PUSH(k->pairs, k->npairs, k->cappairs);
	q->module = m;
	q->bucket = (size_t)b;
}

/* Device planes: "/device:GPU:<d>" or "/device:TPU:<d>"; false otherwise.
 * A host numbers its devices from 0, each with its own plane, so an ordinal
 * is one of this capture's devices only below its number of planes: the
 * per-device arrays (pv->kdev, want[]) are sized by the ordinals, and a
 * name like "/device:GPU:10000000" in a 1 KB file must not size them (nor
 * "-1", which %u reads as 4294967295).  Such a plane is listed, not read. */
bool xpf_rt_device_plane(const xpf_host *h, size_t i, unsigned *d, bool *tpu)
{
	const char *pn = xpf_capture_plane_head(h->cap, i)->name;
	bool is_tpu = strncmp(pn, "/device:TPU:", 12) == 0;
	*tpu = false;
	if (!is_tpu && strncmp(pn, "/device:GPU:", 12) != 0)
		return false;
	size_t v = 0, np = xpf_capture_nplanes(h->cap);
	const char *q = pn + 12;
	if (*q < '0' || *q > '9')
		return false;
	for (; *q >= '0' && *q <= '9'; q++) {
		v = v * 10 + (size_t)(*q - '0');
		if (v >= np)
			return false;
	}
	*d = (unsigned)v;
	*tpu = is_tpu;
	return true;
}

/* A TPU plane's "XLA Modules" line: one execution per event. */

/* Two stats of a kind other than STR or BYTES that read the same. */
static bool same_number(const xpf_stat *a, const xpf_stat *b)
{
	return a->metadata_id == b->metadata_id && a->kind == b->kind && a->u == b->u &&
	       a->i == b->i && memcmp(&a->d, &b->d, sizeof a->d) == 0;
}

/* The last program_id and hlo_module a kernel named, and their modules. */
struct kernel_cache {
	uint64_t pid;
	long pid_m; /* -2: none */
	char mod[256];
	size_t mod_n;
	long mod_m; /* -2: none */
};

/* The module a kernel's program_id (is_pid) or hlo_module stat names (-1:
 * none we know); *any: the stat holds a value of its kind. */
static long kernel_stat_module(xpf_host *h, struct xpf_rt_priv *pv, const xpf_stat *st, bool is_pid,
			       bool *any, struct kernel_cache *kc)
{
	uint64_t u;
	xpf_str t;
	*any = false;
	if (is_pid) {
		if (!xpf_stat_u64(st, &u))
			return -1;
		*any = true;
		if (kc->pid_m == -2 || u != kc->pid) {
			kc->pid = u;
			kc->pid_m = module_by_program_id(h, u);
		}
		return kc->pid_m;
	}
	if (!xpf_stat_text(st, &t))
		return -1;
	*any = true;
	/* kernels repeat their module's name */
	if (kc->mod_m != -2 && t.n == kc->mod_n && memcmp(t.p, kc->mod, t.n) == 0)
		return kc->mod_m;
	long m = module_by_hlo_name(h, pv, t);
	kc->mod_m = -2;
	if (t.n < sizeof kc->mod) {
		memcpy(kc->mod, t.p, t.n);
		kc->mod_n = t.n;
		kc->mod_m = m;
	}
	return m;
}

/* The two stats a kernel is read for, as tagged in kscan.want. */
enum { K_PROGRAM_ID, K_HLO_MODULE };

/* What the scan of one device plane's kernels carries from event to event. */
struct kscan {
	struct xpf_rt_priv *pv;
	const xpf_plane *p;
	xpf_stat_want want; /* program_id and hlo_module, by metadata id */
	bool by_id;         /* all their ids fit in want (else read by name) */
	struct kernel_cache kc;
	/* the last program_id and hlo_module stats read, and what they gave:
	 * kernels repeat them, so most are not looked up */
	struct {
		bool set;
		xpf_stat st;
		bool any;
		long m;
	} memo[2];
};

/* Which of the two stats st is (K_*), or -1. */
static int kernel_stat_kind(const struct kscan *ks, const xpf_stat *st)
{
	if (ks->by_id)
		return xpf_stat_want_tag(&ks->want, st->metadata_id);
	return strcmp(st->name, "program_id") == 0 ? K_PROGRAM_ID :
	       strcmp(st->name, "hlo_module") == 0 ? K_HLO_MODULE :
						     -1;
}

/* A kernel's module (*m, -1: none) and whether it names one at all (*any),
 * from its program_id (the last that names one) or else its hlo_module
 * stats: 0, or -1 malformed (err set). */
static int read_module(struct kscan *ks, const xpf_event *ev, long *m, bool *any, xpf_error *err)
{
	xpf_stat_iter sit;
	xpf_stat st;
	int rc;
	*m = -1;
	*any = false;
	xpf_stats_of_event(ks->p, ev, ks->by_id ? &ks->want : NULL, &sit);
	while ((rc = xpf_stats_next(&sit, &st, err)) == 1) {
		int c = kernel_stat_kind(ks, &st);
		if (c < 0 || (c == K_HLO_MODULE && *m >= 0))
			continue;
		bool plain = st.kind != XPF_STAT_STR && st.kind != XPF_STAT_BYTES;
		if (plain && ks->memo[c].set && same_number(&ks->memo[c].st, &st)) {
			*any |= ks->memo[c].any;
			if (ks->memo[c].m >= 0)
				*m = ks->memo[c].m;
			continue;
		}
		bool a = false;
		long mk = kernel_stat_module(ks->pv->host, ks->pv, &st, c == K_PROGRAM_ID, &a,
					     &ks->kc);
		*any |= a;
		if (mk >= 0)
			*m = mk;
		ks->memo[c].set = plain;
		ks->memo[c].st = st;
		ks->memo[c].any = a;
		ks->memo[c].m = mk;
	}
	return rc < 0 ? -1 : 0;
}

/* The kernels of device plane p (ordinal d) into its kdev, read through w. */
static int scan_kernels(struct xpf_rt_priv *pv, const xpf_plane *p, unsigned d, bool tpu,
			xpf_window *w, xpf_error *err)
{
	struct kscan *ks = xpf_calloc(1, sizeof *ks);
	ks->pv = pv;
	ks->p = p;
	ks->by_id = xpf_stat_want_add(&ks->want, p, "program_id", K_PROGRAM_ID) &&
		    xpf_stat_want_add(&ks->want, p, "hlo_module", K_HLO_MODULE);
	ks->kc = (struct kernel_cache){ 0, -2, "", 0, -2 };
	long bcache = -1;
	int rc = XPF_OK;
	for (size_t l = 0; l < p->nlines && rc >= 0 && (ks->want.n || !ks->by_id); l++) {
		if (tpu && strcmp(p->lines[l].name, "XLA Modules") == 0)
			continue;
		xpf_event_iter it;
		xpf_event ev;
		xpf_events_begin(p, l, w, &it);
		while ((rc = xpf_events_next(&it, &ev, err)) == 1) {
			long m = -1;
			bool any = false;
			if ((rc = read_module(ks, &ev, &m, &any, err)) < 0)
				break;
			if (any)
				add_kernel(pv, &pv->kdev[d], &bcache,
					   xpf_rt_rel_ps(p->lines[l].timestamp_ns, pv->time_base,
							 ev.offset_ps),
					   m);
		}
	}
	free(ks);
	return rc < 0 ? err->code : XPF_OK;
}

void xpf_rt_kernel_times(struct xpf_rt_priv *pv, const xpf_runtime *rt)
{
	size_t n = rt->nexecutions, u = 0;
	int64_t *t = xpf_realloc_array(NULL, n + 1, sizeof *t);
	for (size_t k = 0; k < n; k++) {
		int64_t s = rt->executions[k].start_ps;
		if (u == 0 || t[u - 1] != s)
			t[u++] = s;
	}
	free(pv->times);
	pv->times = t;
	pv->ntimes = u;
}

/* Device d's kernels (xpf_lazy compute; ctx: its kdev): its planes in
 * capture order (two planes of one ordinal: their kernels at the same time
 * count as the first's), read through a window of this call's own. */
static int kdev_compute(void *ctx, void **value, xpf_error *err)
{
	struct xpf_rt_kdev *k = ctx;
	struct xpf_rt_priv *pv = k->pv;
	size_t d = (size_t)(k - pv->kdev);
	xpf_window w = { 0 };
	int rc = XPF_OK;
	kdev_init(pv, d);
	for (size_t i = 0; i < k->nplanes && rc == XPF_OK; i++) {
		const xpf_plane *p;
		rc = xpf_capture_plane(pv->host->cap, k->planes[i], &p, err);
		if (rc == XPF_OK)
			rc = scan_kernels(pv, p, (unsigned)d, k->tpu[i], &w, err);
		if (rc != XPF_OK)
			k->failed_plane = k->planes[i];
	}
	xpf_window_release(&w);
	if (rc != XPF_OK)
		return rc;
	kdev_finish(pv, d);
	*value = k;
	return XPF_OK;
}

int xpf_rt_kernels_read(struct xpf_rt_priv *pv, size_t d, xpf_error *err)
{
	void *v;
	return xpf_lazy_get(&pv->kdev[d].read, kdev_compute, &pv->kdev[d], &v, err);
}

int xpf_rt_kernels_error(struct xpf_rt_priv *pv, xpf_error *err)
{
	long first = -1;
	for (size_t d = 0; d < pv->ndev; d++) {
		struct xpf_rt_kdev *k = &pv->kdev[d];
		if (k->nplanes && xpf_lazy_state(&k->read) == XPF_LAZY_FAILED &&
		    (first < 0 || k->failed_plane < pv->kdev[first].failed_plane))
			first = (long)d;
	}
	if (first < 0)
		return XPF_OK;
	/* its own message (err may hold one a caller let pass) */
	xpf_error e = { 0 };
	int rc = xpf_rt_kernels_read(pv, (size_t)first, &e);
	if (err)
		*err = e;
	return rc;
}

/* The devices whose kernels the finish will ask about, read side by side
 * before it asks (each on one thread). */
struct dev_jobs {
	struct xpf_rt_priv *pv;
	size_t *dev;
	size_t n;
};

static void dev_job_run(void *ctx, size_t k, xpf_window *w)
{
	(void)w; /* a device's read has a window of its own (it may run on demand) */
	struct dev_jobs *j = ctx;
	xpf_rt_kernels_read(j->pv, j->dev[k], NULL);
}

/* The device planes, in order on one thread: make the TPU executions (their
 * XLA Modules lines), give each device its planes. */
int xpf_rt_devices_prepare(struct scan *s, xpf_error *err)
{
	xpf_host *h = s->h;
	struct xpf_rt_priv *pv = s->rt->priv;
	size_t np = xpf_capture_nplanes(h->cap);
	pv->host = h;
	pv->time_base = s->base;
	for (size_t i = 0; i < np; i++) {
		unsigned d;
		bool tpu;
		if (!xpf_rt_device_plane(h, i, &d, &tpu))
			continue;
		const xpf_plane *p;
		int rc = tpu ? xpf_capture_plane(h->cap, i, &p, err) : XPF_OK;
		for (size_t l = 0; rc == XPF_OK && tpu && l < p->nlines; l++)
			if (strcmp(p->lines[l].name, "XLA Modules") == 0)
				rc = xpf_rt_scan_modules_line(s, p, l, d, err);
		if (rc != XPF_OK)
			return rc;
		kdev_add_plane(pv, d, i, tpu);
	}
	kdev_ready(pv);
	return XPF_OK;
}

/* Read the kernels of the devices in want (want[d], d < pv->ndev) on as
 * many threads, the largest first; what fails is told by
 * xpf_rt_kernels_error. */
void xpf_rt_devices_run(struct xpf_rt_priv *pv, const bool *want)
{
	struct dev_jobs j = { pv, xpf_realloc_array(NULL, pv->ndev ? pv->ndev : 1, sizeof *j.dev), 0 };
	uint64_t *size = xpf_realloc_array(NULL, pv->ndev ? pv->ndev : 1, sizeof *size);
	for (size_t d = 0; d < pv->ndev; d++) {
		if (!want[d] || pv->kdev[d].nplanes == 0)
			continue;
		size[j.n] = 0;
		for (size_t i = 0; i < pv->kdev[d].nplanes; i++)
			size[j.n] +=
				xpf_capture_plane_head(pv->host->cap, pv->kdev[d].planes[i])->length;
		j.dev[j.n++] = d;
	}
	if (j.n)
		xpf_rt_run_jobs(j.n, size, xpf_rt_threads(&pv->opt, j.n), dev_job_run, &j);
	free(size);
	free(j.dev);
}
