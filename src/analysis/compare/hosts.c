/* hosts.tsv and the host-skew findings of a run directory (SPEC §8).
 *
 * A host is skewed when its need or its peak in use differs from the
 * median host's by at least 5% of the median's and at least 256 MiB.  The
 * median host is the lower median of the hosts that have the figure: an
 * actual host, so that what differs can be read off two trees (its plan,
 * or the blocks live at the start of its focus execution).  A need that
 * differs is reported before a peak that differs, since a bigger plan
 * raises the peak too; one finding per host. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/diagnosis/diag_priv.h"
#include "analysis/compare/hosts.h"
#include "analysis/paths.h"
#include "common/alloc.h"

#define SKEW_MIN_BYTES (256ull * XPF_MIB)
#define SKEW_MIN_PCT 5

enum { FIG_NEED, FIG_PEAK, NFIGS };

static const char *const fig_words[NFIGS] = { "need", "peak in use" };
static const char *const fig_keys[NFIGS] = { "need_bytes", "peak_in_use_bytes" };
static const char *const median_keys[NFIGS] = { "median_need_bytes", "median_peak_in_use_bytes" };

/* One host's figures, from its own diagnosis. */
typedef struct host_row {
	xpf_host *h;
	char *dir;
	const xpf_diagnosis *d; /* NULL: its diagnosis failed */
	const xpf_runtime *rt;  /* NULL: no runtime */
	const char *allocator;  /* the focus allocator's name; NULL: none */
	bool known[NFIGS];
	uint64_t fig[NFIGS];
} host_row;

typedef struct skew {
	size_t host, median;
	int fig;
	uint64_t diff;
	bool above;
} skew;

/* The host's folder name: the last part of its path in the tree
 * ("hosts/<dir>/"), else its name. */
static char *host_dir(const xpf_host *h)
{
	const char *p = h->path ? h->path : "";
	size_t n = strlen(p);
	while (n && p[n - 1] == '/')
		n--;
	if (n == 0)
		return xpf_strdup(h->name);
	size_t b = n;
	while (b && p[b - 1] != '/')
		b--;
	return xpf_strndup(p + b, n - b);
}

static void row_fill(xpf_host *h, host_row *w)
{
	xpf_error e = { 0 };
	memset(w, 0, sizeof *w);
	w->h = h;
	w->dir = host_dir(h);
	if (xpf_host_diagnosis(h, &w->d, &e) != XPF_OK) {
		w->d = NULL;
		return;
	}
	if (w->d->module >= 0) {
		w->fig[FIG_NEED] = xpf_module_need(h, w->d->module);
		w->known[FIG_NEED] = w->fig[FIG_NEED] > 0;
	}
	if (w->d->allocator >= 0 && xpf_host_runtime(h, &w->rt, &e) == XPF_OK) {
		const xpf_rt_allocator *a = &w->rt->allocators[w->d->allocator];
		w->allocator = a->name;
		w->fig[FIG_PEAK] = a->peak_in_window_bytes;
		w->known[FIG_PEAK] = true;
	} else {
		w->rt = NULL;
	}
}

static host_row *rows_of(xpf_host *hosts, size_t n)
{
	host_row *w = xpf_calloc(n ? n : 1, sizeof *w);
	for (size_t i = 0; i < n; i++)
		row_fill(&hosts[i], &w[i]);
	return w;
}

/* ---- the median host and the skews ----------------------------------------- */

struct ranked {
	uint64_t v;
	size_t i;
};

static int ranked_cmp(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;
	if (x->v != y->v)
		return x->v < y->v ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/* The lower median host of a figure; -1 when fewer than two hosts have it. */
static long median_host(const host_row *w, size_t n, int fig)
{
	struct ranked *r = calloc(n ? n : 1, sizeof *r);
	size_t k = 0;
	if (r == NULL)
		abort();
	for (size_t i = 0; i < n; i++)
		if (w[i].known[fig])
			r[k++] = (struct ranked){ w[i].fig[fig], i };
	qsort(r, k, sizeof *r, ranked_cmp);
	long m = k >= 2 ? (long)r[(k - 1) / 2].i : -1;
	free(r);
	return m;
}

static bool skewed(uint64_t v, uint64_t med, uint64_t *diff)
{
	*diff = v > med ? v - med : med - v;
	return *diff >= SKEW_MIN_BYTES &&
	       (unsigned __int128)*diff * 100 >= (unsigned __int128)med * SKEW_MIN_PCT;
}

static int skew_cmp(const void *a, const void *b)
{
	const skew *x = a, *y = b;
	if (x->diff != y->diff)
		return x->diff > y->diff ? -1 : 1;
	return x->host < y->host ? -1 : x->host > y->host;
}

/* The skews, largest difference first: at most one per host. */
static size_t find_skews(const host_row *w, size_t n, skew **out)
{
	long med[NFIGS];
	size_t k = 0;
	*out = calloc(n ? n : 1, sizeof **out);
	if (*out == NULL)
		abort();
	for (int f = 0; f < NFIGS; f++)
		med[f] = median_host(w, n, f);
	for (size_t i = 0; i < n; i++)
		for (int f = 0; f < NFIGS; f++) {
			uint64_t diff;
			if (med[f] < 0 || (size_t)med[f] == i || !w[i].known[f] ||
			    !skewed(w[i].fig[f], w[med[f]].fig[f], &diff))
				continue;
			(*out)[k++] =
				(skew){ i, (size_t)med[f], f, diff, w[i].fig[f] > w[med[f]].fig[f] };
			break;
		}
	qsort(*out, k, sizeof **out, skew_cmp);
	return k;
}

/* ---- what differs ----------------------------------------------------------- */

typedef struct origin {
	const char *text;
	uint64_t bytes;
	enum xpf_origin kind; /* of its first block */
} origin;

/* The blocks live at the start of the host's focus execution, summed by
 * origin (xpf_runtime_live_at sorts them by origin text, so equal origins
 * are adjacent and the sums come out sorted). */
static size_t origins_at(const host_row *w, xpf_rt_block **blocks, size_t *nb, origin **out)
{
	xpf_error e = { 0 };
	size_t k = 0;
	*blocks = NULL;
	*nb = 0;
	*out = NULL;
	if (w->rt == NULL || w->d->execution < 0 || !w->rt->executions[w->d->execution].in_use_known ||
	    xpf_runtime_live_at(w->rt, (size_t)w->d->execution, blocks, nb, &e) != XPF_OK)
		return 0;
	*out = calloc(*nb ? *nb : 1, sizeof **out);
	if (*out == NULL)
		abort();
	for (size_t i = 0; i < *nb; i++) {
		const char *t = (*blocks)[i].origin_text ? (*blocks)[i].origin_text : "";
		if (k == 0 || strcmp((*out)[k - 1].text, t) != 0)
			(*out)[k++] = (origin){ t, 0, (*blocks)[i].origin };
		(*out)[k - 1].bytes += (*blocks)[i].bytes;
	}
	return k;
}

/* The origin whose bytes differ most in the skew's direction: *more on the
 * side above, *less on the other. */
static const origin *origin_diff(const origin *a, size_t na, const origin *b, size_t nb, bool above,
				 uint64_t *more, uint64_t *less)
{
	const origin *best = NULL;
	uint64_t best_d = 0;
	size_t i = 0, j = 0;
	while (i < na || j < nb) {
		int c = i == na ? 1 : j == nb ? -1 : strcmp(a[i].text, b[j].text);
		uint64_t x = c <= 0 ? a[i].bytes : 0, y = c >= 0 ? b[j].bytes : 0;
		const origin *t = c <= 0 ? &a[i] : &b[j];
		uint64_t hi = above ? x : y, lo = above ? y : x;
		if (hi > lo && hi - lo > best_d) {
			best_d = hi - lo;
			best = t;
			*more = hi;
			*less = lo;
		}
		i += c <= 0;
		j += c >= 0;
	}
	return best;
}

static const char *module_of(const host_row *w)
{
	return w->d->module >= 0 ? xpf_capture_module(w->h->cap, (size_t)w->d->module)->name :
				   "(no module)";
}

static void execution_evidence(const host_row *w, xpf_finding *f)
{
	if (w->rt && w->d->execution >= 0)
		xpf_diag_evidence(f, XPF_EV_HOST(XPF_EV_EXECUTION(XPF_F_LIVE_TSV)), w->dir,
				  w->rt->executions[w->d->execution].n);
}

static void plan_evidence(const host_row *w, xpf_finding *f)
{
	if (w->d->module >= 0)
		xpf_diag_evidence(f, XPF_EV_HOST(XPF_EV_MODULE(XPF_F_PLAN_JSON)), w->dir,
				  w->h->module_dirs[w->d->module]);
}

/* "jit_f(1) execution 3" when both hosts' focus executions are that,
 * else each with its host. */
static void focus_executions(const host_row *s, const host_row *m, xpf_buf *b)
{
	const xpf_rt_execution *x = &s->rt->executions[s->d->execution];
	const xpf_rt_execution *y = &m->rt->executions[m->d->execution];
	if (strcmp(module_of(s), module_of(m)) == 0 && x->module_execution == y->module_execution)
		xpf_buf_printf(b, "%s execution %u", module_of(s), x->module_execution);
	else
		xpf_buf_printf(b,
			       "the focus execution (%s execution %u on %s, %s execution %u on %s)",
			       module_of(s), x->module_execution, s->dir, module_of(m),
			       y->module_execution, m->dir);
}

/* A peak that differs: the origin of live blocks that differs most. */
static void peak_differs(const host_row *s, const host_row *m, bool above, xpf_finding *f, xpf_buf *b)
{
	xpf_rt_block *sb = NULL, *mb = NULL;
	size_t nsb = 0, nmb = 0, nso = 0, nmo = 0;
	origin *so = NULL, *mo = NULL;
	/* what was live can be compared only at both focus executions */
	if (s->rt && m->rt && s->d->execution >= 0 && m->d->execution >= 0) {
		nso = origins_at(s, &sb, &nsb, &so);
		nmo = origins_at(m, &mb, &nmb, &mo);
	}
	uint64_t more = 0, less = 0;
	const origin *t = origin_diff(so, nso, mo, nmo, above, &more, &less);
	const host_row *hi = above ? s : m, *lo = above ? m : s;
	char h1[32], h2[32];

	if (t != NULL) {
		xpf_buf_adds(b, "; what differs most: at the start of ");
		focus_executions(s, m, b);
		xpf_buf_printf(b, ", %s holds %s (%llu bytes) of ", hi->dir,
			       xpf_human(more - less, h1), (unsigned long long)(more - less));
		xpf_buf_text(b, t->text);
		if (t->kind == XPF_ORIGIN_TRANSFER)
			xpf_buf_adds(b,
				     " (a transfer from the host: jax.device_put or an input pipeline's prefetch)");
		if (less == 0)
			xpf_buf_printf(b, " that %s lacks", lo->dir);
		else
			xpf_buf_printf(b, " (%s on %s, %s on %s)", xpf_human(more, h1), hi->dir,
				       xpf_human(less, h2), lo->dir);
		xpf_diag_num(f, "origin_bytes", more - less);
		execution_evidence(s, f);
		execution_evidence(m, f);
	} else {
		xpf_buf_printf(b,
			       "; what differs: not the blocks live at the start of %s's last execution: "
			       "compare peak_during_bytes in runtime/executions.tsv",
			       module_of(s));
	}
	xpf_rt_blocks_free(sb, nsb);
	xpf_rt_blocks_free(mb, nmb);
	free(so);
	free(mo);
}

/* A need that differs: another focus module, or the parts of one plan. */
static void need_differs(const host_row *s, const host_row *m, xpf_finding *f, xpf_buf *b)
{
	const char *sn = module_of(s), *mn = module_of(m);
	const char *sp = strrchr(sn, '('), *mp = strrchr(mn, '(');
	size_t sl = sp ? (size_t)(sp - sn) : strlen(sn), ml = mp ? (size_t)(mp - mn) : strlen(mn);
	const xpf_plan *ps = xpf_diag_plan(s->h, s->d->module),
		       *pm = xpf_diag_plan(m->h, m->d->module);
	char h[6][32];

	if (sl != ml || strncmp(sn, mn, sl) != 0)
		xpf_buf_printf(b, "; what differs: the focus module, %s on %s, %s on %s", sn,
			       s->dir, mn, m->dir);
	else if (ps && pm)
		xpf_buf_printf(b,
			       "; what differs: the plan of %s on %s vs %s on %s: parameters %s vs %s, "
			       "non-aliased outputs %s vs %s, temp %s vs %s",
			       sn, s->dir, mn, m->dir, xpf_human(ps->parameters_bytes, h[0]),
			       xpf_human(pm->parameters_bytes, h[1]),
			       xpf_human(ps->non_aliased_outputs_bytes, h[2]),
			       xpf_human(pm->non_aliased_outputs_bytes, h[3]),
			       xpf_human(ps->temp_bytes, h[4]), xpf_human(pm->temp_bytes, h[5]));
	plan_evidence(s, f);
	plan_evidence(m, f);
}

static void skew_finding(const host_row *w, const skew *k, xpf_finding *f)
{
	const host_row *s = &w[k->host], *m = &w[k->median];
	uint64_t v = s->fig[k->fig], mv = m->fig[k->fig];
	char h1[32], h2[32], h3[32], pct[32];
	xpf_buf b = XPF_BUF_INIT;

	memset(f, 0, sizeof *f);
	f->code = "host-skew";
	f->tag = k->fig == FIG_NEED ? XPF_TAG_READ : XPF_TAG_MEASURED;
	f->module = s->d->module;
	xpf_buf_printf(&b, "%s: %s %s, %s (%llu bytes, %s%%) %s the median host %s's %s", s->dir,
		       fig_words[k->fig], xpf_human(v, h1), xpf_human(k->diff, h2),
		       (unsigned long long)k->diff, xpf_pct(k->diff, mv, pct),
		       k->above ? "above" : "below", m->dir, xpf_human(mv, h3));
	xpf_diag_num(f, fig_keys[k->fig], v);
	xpf_diag_num(f, median_keys[k->fig], mv);
	xpf_diag_num(f, "difference_bytes", k->diff);
	xpf_diag_str(f, "difference_pct", "%s", pct);
	xpf_diag_evidence(f, "hosts.tsv");
	if (k->fig == FIG_NEED)
		need_differs(s, m, f, &b);
	else
		peak_differs(s, m, k->above, f, &b);
	xpf_diag_text(f, &b);
}

static void finding_release(xpf_finding *f)
{
	free(f->text);
	for (size_t i = 0; i < f->nevidence; i++)
		free(f->evidence[i]);
}

/* ---- the analysis handed to the renderers ---------------------------------- */

void xpf_hosts_analyse(xpf_host *hosts, size_t n, xpf_hosts *out)
{
	memset(out, 0, sizeof *out);
	host_row *w = rows_of(hosts, n);
	skew *k;
	size_t nk = find_skews(w, n, &k);
	out->rows = xpf_calloc(n ? n : 1, sizeof *out->rows);
	out->nrows = n;
	for (size_t i = 0; i < n; i++) {
		xpf_host_row *r = &out->rows[i];
		r->h = w[i].h;
		r->dir = w[i].dir;
		r->d = w[i].d;
		r->module = w[i].d && w[i].d->module >= 0 ? module_of(&w[i]) : NULL;
		r->need_known = w[i].known[FIG_NEED];
		r->need_bytes = w[i].fig[FIG_NEED];
		r->peak_known = w[i].known[FIG_PEAK];
		r->peak_in_use_bytes = w[i].fig[FIG_PEAK];
		r->allocator = w[i].allocator;
	}
	out->skews = xpf_calloc(nk ? nk : 1, sizeof *out->skews);
	out->nskews = nk;
	for (size_t i = 0; i < nk; i++) {
		xpf_host_skew *x = &out->skews[i];
		x->host = k[i].host;
		x->median = k[i].median;
		skew_finding(w, &k[i], &x->finding);
		out->rows[k[i].host].skewed = true;
	}
	free(k);
	free(w); /* the dirs now belong to out->rows */
}

void xpf_hosts_release(xpf_hosts *x)
{
	for (size_t i = 0; i < x->nskews; i++)
		finding_release(&x->skews[i].finding);
	for (size_t i = 0; i < x->nrows; i++)
		free(x->rows[i].dir);
	free(x->skews);
	free(x->rows);
	memset(x, 0, sizeof *x);
}
