/* The diagnosis: which module, what capacity (SPEC §5.1), and the finding
 * builders the rules use.  The rules themselves are in diag_rules_*.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/diagnosis/diag_priv.h"
#include "common/alloc.h"

const char *xpf_tag_name(enum xpf_tag t)
{
	switch (t) {
	case XPF_TAG_READ: return "read";
	case XPF_TAG_MEASURED: return "measured";
	case XPF_TAG_INFERRED: return "inferred";
	}
	return "?";
}

const xpf_plan *xpf_diag_plan(xpf_host *h, long m)
{
	const xpf_plan *p = NULL;
	xpf_error e = { 0 };

	if (m < 0 || (size_t)m >= h->nmodules)
		return NULL;
	if (xpf_host_plan(h, (size_t)m, &p, &e) != XPF_OK) {
		/* the plan's own files report the error; --cat and --export of
		 * a file made without it say so in their exit status */
		xpf_host_note_error(h, &e);
		return NULL;
	}
	return p;
}

/* ---- findings ----------------------------------------------------------- */

/* Most important first: the verdict, what explains it, what else holds
 * memory, then evidence and context. */
static const char *const code_order[] = {
	"plan-exceeds-pool",
	"plan",
	"unexplained-oom",
	"foreign-live-arrays",
	"growth-per-execution",
	"compile-oom",
	"near-fit",
	"temp-fragmentation",
	"mostly-forward",
	"mostly-backward",
	"mostly-workspace",
	"no-donation",
	"param-layout-copy",
	"param-convert-copy",
	"silent-upcast",
	"retrace",
	"allocator-retry",
	"never-launched",
	"xla-remat",
	"compile-time-peak",
	"fits",
	"missing-plan",
	"missing-runtime",
};

static int code_rank(const char *code)
{
	for (size_t i = 0; i < sizeof code_order / sizeof code_order[0]; i++)
		if (strcmp(code_order[i], code) == 0)
			return (int)i;
	return 100;
}

xpf_finding *xpf_diag_add(xpf_diag_ctx *c, const char *code, enum xpf_tag tag, long module)
{
	xpf_diagnosis *d = c->d;

	if (d->nfindings == c->cap_findings) {
		c->cap_findings = c->cap_findings ? 2 * c->cap_findings : 8;
		d->findings = realloc(d->findings, c->cap_findings * sizeof *d->findings);
		if (d->findings == NULL)
			abort();
	}
	xpf_finding *f = &d->findings[d->nfindings++];
	memset(f, 0, sizeof *f);
	f->code = code;
	f->tag = tag;
	f->module = module;
	f->rank = code_rank(code);
	return f;
}

void xpf_diag_num(xpf_finding *f, const char *key, uint64_t v)
{
	if (f->nfigs == XPF_DIAG_MAX_FIGS)
		return;
	xpf_diag_fig *g = &f->figs[f->nfigs++];
	g->key = key;
	g->value = v;
}

void xpf_diag_str(xpf_finding *f, const char *key, const char *fmt, ...)
{
	va_list ap;

	if (f->nfigs == XPF_DIAG_MAX_FIGS)
		return;
	xpf_diag_fig *g = &f->figs[f->nfigs++];
	g->key = key;
	g->is_text = true;
	va_start(ap, fmt);
	vsnprintf(g->text, sizeof g->text, fmt, ap);
	va_end(ap);
}

void xpf_diag_evidence(xpf_finding *f, const char *fmt, ...)
{
	xpf_buf b = XPF_BUF_INIT;
	va_list ap;
	char tmp[1024];

	if (f->nevidence == XPF_DIAG_MAX_EVIDENCE)
		return;
	va_start(ap, fmt);
	vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	for (size_t i = 0; i < f->nevidence; i++)
		if (strcmp(f->evidence[i], tmp) == 0)
			return;
	xpf_buf_adds(&b, tmp);
	f->evidence[f->nevidence++] = xpf_buf_detach(&b, NULL);
}

/* A fix saving lo to hi bytes (hi > lo: a range) of a step that needs
 * need (0: no verdict); the verdict against the capacity is "fits" or
 * "not enough" only where the whole range agrees, else "may fit". */
static void add_fix(xpf_diag_ctx *c, xpf_finding *f, uint64_t lo, uint64_t hi, uint64_t need,
		    const char *cost, const char *text)
{
	xpf_buf b = XPF_BUF_INIT, cb = XPF_BUF_INIT;
	char h1[32], h2[32], h3[32];
	uint64_t cap = c->d->capacity_bytes;
	uint64_t most = xpf_sub0(need, lo), least = xpf_sub0(need, hi > lo ? hi : lo);

	if (f->nfixes == XPF_DIAG_MAX_FIXES)
		return;
	xpf_buf_adds(&b, text);
	if (need != 0 && most != 0 && cap != 0) {
		char range[80];
		if (least == most)
			snprintf(range, sizeof range, "%s", xpf_human(most, h1));
		else
			snprintf(range, sizeof range, "%s to %s", xpf_human(least, h1),
				 xpf_human(most, h2));
		if (most <= cap)
			xpf_buf_printf(&b, "; the step would then need %s <= capacity %s: fits",
				       range, xpf_human(cap, h3));
		else if (least > cap)
			xpf_buf_printf(&b,
				       "; the step would still need %s > capacity %s: not enough on its own",
				       range, xpf_human(cap, h3));
		else
			xpf_buf_printf(&b,
				       "; the step would then need %s against capacity %s: it may fit (an estimate; confirm with memory_analysis())",
				       range, xpf_human(cap, h3));
	}
	xpf_buf_adds(&cb, cost);
	xpf_diag_fix *x = &f->fixes[f->nfixes++];
	x->text = xpf_buf_detach(&b, NULL);
	x->saving_bytes = lo;
	x->saving_max_bytes = hi > lo ? hi : 0;
	x->cost = xpf_buf_detach(&cb, NULL);
}

void xpf_diag_addfix(xpf_diag_ctx *c, xpf_finding *f, uint64_t saving, uint64_t need_after,
		     const char *cost, const char *fmt, ...)
{
	va_list ap;
	char tmp[2048];
	va_start(ap, fmt);
	vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	add_fix(c, f, saving, saving, need_after ? need_after + saving : 0, cost, tmp);
}

void xpf_diag_addfix_range(xpf_diag_ctx *c, xpf_finding *f, uint64_t lo, uint64_t hi, uint64_t need,
			   const char *cost, const char *fmt, ...)
{
	va_list ap;
	char tmp[2048];
	va_start(ap, fmt);
	vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	add_fix(c, f, lo, hi, need, cost, tmp);
}

void xpf_diag_text(xpf_finding *f, xpf_buf *b)
{
	free(f->text);
	f->text = xpf_buf_detach(b, NULL);
}

const xpf_finding *xpf_diag_find(const xpf_diagnosis *d, const char *code)
{
	for (size_t i = 0; i < d->nfindings; i++)
		if (strcmp(d->findings[i].code, code) == 0)
			return &d->findings[i];
	return NULL;
}

/* ---- devices -------------------------------------------------------------- */

bool xpf_diag_device_name(const xpf_plane *p, xpf_str *out, xpf_error *err)
{
	xpf_stat st;
	return (xpf_plane_stat(p, "gpu_device_name", &st, err) == 1 && xpf_stat_text(&st, out)) ||
	       (xpf_plane_stat(p, "device_type_string", &st, err) == 1 && xpf_stat_text(&st, out));
}

/* The stats of device dev's plane (dev < 0: each device plane in turn,
 * from *from); NULL when there is none more. */
static const xpf_plane *device_plane(xpf_host *h, int dev, size_t *from)
{
	for (size_t i = *from; i < xpf_capture_nplanes(h->cap); i++) {
		const xpf_plane_head *hd = xpf_capture_plane_head(h->cap, i);
		if (strncmp(hd->name, "/device:", 8) != 0)
			continue;
		if (dev >= 0) {
			/* "/device:GPU:3", "/device:TPU:3", "/device:GPU:3 (pid 7)" */
			const char *colon = strrchr(hd->name, ':');
			const char *q = hd->name + 8;
			const char *c2 = strchr(q, ':');
			if (colon == NULL || c2 == NULL || atoi(c2 + 1) != dev)
				continue;
		}
		const xpf_plane *p;
		xpf_error e = { 0 };
		if (xpf_capture_plane_meta(h->cap, i, &p, &e) != XPF_OK) /* its stats only */
			continue;
		*from = i + 1;
		return p;
	}
	*from = xpf_capture_nplanes(h->cap);
	return NULL;
}

uint64_t xpf_diag_device_memory(xpf_host *h, int dev)
{
	size_t from = 0;
	for (const xpf_plane *p; (p = device_plane(h, dev, &from)) != NULL;) {
		xpf_error e = { 0 };
		xpf_stat st;
		uint64_t mem;
		if (xpf_plane_stat(p, "memory_size", &st, &e) == 1 && xpf_stat_u64(&st, &mem) && mem)
			return mem;
	}
	return 0;
}

bool xpf_diag_device_is_amd(xpf_host *h, int dev)
{
	size_t from = 0;
	const xpf_plane *p = device_plane(h, dev, &from);
	xpf_error e = { 0 };
	xpf_stat st;
	xpf_str v;
	return p && xpf_plane_stat(p, "device_vendor", &st, &e) == 1 && xpf_stat_text(&st, &v) &&
	       xpf_str_eq(v, "AMD");
}

/* ---- module choice (SPEC §5.1) -------------------------------------------- */

/* --module NAME: a module's full name ("jit_step(12)"), its directory
 * name, or its name without the program id when one module alone has it
 * ("jit_step"); -1 when none matches, -2 when several do. */
static long module_by_name(xpf_host *h, const char *name)
{
	size_t n = strlen(name);
	long found = -1;
	for (size_t m = 0; m < h->nmodules; m++)
		if (strcmp(xpf_capture_module(h->cap, m)->name, name) == 0 ||
		    strcmp(h->module_dirs[m], name) == 0)
			return (long)m;
	for (size_t m = 0; m < h->nmodules; m++) {
		const char *full = xpf_capture_module(h->cap, m)->name;
		if (strncmp(full, name, n) == 0 && full[n] == '(')
			found = found == -1 ? (long)m : -2;
	}
	return found;
}

uint64_t xpf_module_need(xpf_host *h, long m)
{
	const xpf_plan *p = xpf_diag_plan(h, m);
	return p && p->has_assignment ? p->need_bytes : 0;
}

/* Last execution of module m (on device dev when dev >= 0), or -1. */
static long last_execution(const xpf_runtime *rt, long m, int dev)
{
	long last = -1;
	if (rt == NULL)
		return -1;
	for (size_t x = 0; x < rt->nexecutions; x++) {
		const xpf_rt_execution *e = &rt->executions[x];
		if (e->module == m && (dev < 0 || e->device == dev))
			last = (long)x;
	}
	return last;
}

/* The biggest module by need (only those that ran when rt is given), or -1. */
static long biggest_module(xpf_host *h, const xpf_runtime *rt)
{
	long best = -1;
	uint64_t best_need = 0;
	for (size_t m = 0; m < h->nmodules; m++) {
		if (rt && last_execution(rt, (long)m, -1) < 0)
			continue;
		uint64_t need = xpf_module_need(h, (long)m);
		if (best < 0 || need > best_need) {
			best_need = need;
			best = (long)m;
		}
	}
	return best;
}

/* The candidate of ambiguous execution x with the largest need, or -1. */
static long largest_candidate(xpf_host *h, const xpf_runtime *rt, size_t x)
{
	long best = -1;
	uint64_t best_need = 0;
	const xpf_rt_candidate *cd;
	size_t n = xpf_rt_candidates(rt, x, &cd);
	for (size_t k = 0; k < n; k++) {
		long m = cd[k].module;
		uint64_t need = xpf_module_need(h, m);
		if (best < 0 || need > best_need) {
			best_need = need;
			best = m;
		}
	}
	return best;
}

/* The latest execution that never launched and is the last of its module
 * (an ambiguous one: of its candidates), or -1; *m its module.  One walk
 * back: the first execution of a module met is its last. */
static long failed_execution(xpf_host *h, const xpf_runtime *rt, long *m)
{
	bool *later = xpf_calloc(h->nmodules ? h->nmodules : 1, sizeof *later);
	long found = -1;
	*m = -1;
	for (size_t x = rt->nexecutions; x-- > 0 && found < 0;) {
		const xpf_rt_execution *e = &rt->executions[x];
		bool last = e->module >= 0 && !later[e->module];
		if (e->module >= 0)
			later[e->module] = true;
		if (e->launched != XPF_LAUNCHED_NO)
			continue;
		if (last)
			*m = e->module;
		else if (e->module < 0)
			*m = largest_candidate(h, rt, x);
		if (*m >= 0)
			found = (long)x;
	}
	free(later);
	return found;
}

/* SPEC §5.1 without --module: *m and why it was chosen (static text);
 * *x the focus execution when that choice names one, else -1. */
static const char *pick_module(const xpf_diag_ctx *c, long *m, long *x)
{
	xpf_host *h = c->h;
	const xpf_runtime *rt = c->rt;
	*x = -1;
	if (rt != NULL) {
		if ((*x = failed_execution(h, rt, m)) >= 0)
			return rt->executions[*x].module >= 0 ?
				       "its last execution never launched" :
				       "the candidate with the largest need of an ambiguous execution that never launched";
		if ((*m = biggest_module(h, rt)) >= 0)
			return "the biggest module (by need) that ran";
	}
	*m = biggest_module(h, NULL);
	return c->d->runtime_error.code ? "the biggest module (the runtime could not be read)" :
					  "the biggest module (nothing ran in the capture)";
}

static void choose_module(xpf_diag_ctx *c)
{
	xpf_host *h = c->h;
	xpf_diagnosis *d = c->d;
	const char *miss = NULL;

	if (h->opt->module != NULL) {
		long m = module_by_name(h, h->opt->module);
		if (m >= 0) {
			d->module = m;
			d->module_why = xpf_strdup("chosen with --module");
			return;
		}
		miss = m == -2 ?
			       "--module matched several modules (give the full name: modules/index.tsv)" :
			       "--module matched no module (modules/index.tsv lists them)";
	}
	const char *why = pick_module(c, &d->module, &c->focus_x);
	if (d->module >= 0) {
		xpf_buf b = XPF_BUF_INIT;
		xpf_buf_printf(&b, "%s%s%s", miss ? miss : "", miss ? "; " : "", why);
		d->module_why = xpf_buf_detach(&b, NULL);
	}
}

/* ---- capacity (SPEC §5.1) ------------------------------------------------- */

/* The device's pool allocator (the busiest when several); without a
 * device (dev < 0), the busiest pool; -1 when none. */
static long busiest_pool(const xpf_runtime *rt, int dev)
{
	long best = -1;
	for (size_t a = 0; a < rt->nallocators; a++) {
		const xpf_rt_allocator *al = &rt->allocators[a];
		if (!al->is_pool)
			continue;
		if (dev >= 0 && al->device != dev)
			continue;
		if (best < 0 || al->peak_in_window_bytes > rt->allocators[best].peak_in_window_bytes)
			best = (long)a;
	}
	return best;
}

static void choose_capacity(xpf_diag_ctx *c)
{
	xpf_host *h = c->h;
	xpf_diagnosis *d = c->d;
	const xpf_runtime *rt = c->rt;
	int want = h->opt->device;

	d->execution = -1;
	d->device = -1;
	d->allocator = -1;
	if (rt != NULL && d->module >= 0) {
		d->execution = last_execution(rt, d->module, want);
		if (d->execution < 0 && want >= 0)
			d->execution = last_execution(rt, d->module, -1);
		/* chosen by an ambiguous execution that failed: that one */
		if (c->focus_x >= 0 && rt->executions[c->focus_x].module < 0 &&
		    (want < 0 || rt->executions[c->focus_x].device == want))
			d->execution = c->focus_x;
	}
	if (d->execution >= 0) {
		const xpf_rt_execution *e = &rt->executions[d->execution];
		d->device = e->device;
		if (e->allocator >= 0 && rt->allocators[e->allocator].is_pool)
			d->allocator = e->allocator;
	}
	if (want >= 0)
		d->device = want;
	bool want_missing = false; /* --device names a device without a pool */
	if (rt != NULL && rt->has_events && (d->allocator < 0 || want >= 0)) {
		long best = busiest_pool(rt, d->device);
		if (best >= 0)
			d->allocator = (int)best;
		else if (want >= 0)
			want_missing = true;
	}
	if (d->allocator >= 0 && d->device < 0)
		d->device = rt->allocators[d->allocator].device;
	d->memory_bytes = xpf_diag_device_memory(h, d->device);
	d->amd = xpf_diag_device_is_amd(h, d->device);

	xpf_buf src = XPF_BUF_INIT;
	if (d->allocator >= 0 && rt->allocators[d->allocator].capacity_bytes) {
		d->capacity_bytes = rt->allocators[d->allocator].capacity_bytes;
		d->capacity_tag = XPF_TAG_MEASURED;
		xpf_buf_printf(&src, "allocator %s (in use + available)",
			       rt->allocators[d->allocator].name);
		if (want_missing)
			xpf_buf_printf(&src,
				       "; --device %d has no pool allocator in the capture (runtime/allocators.tsv)",
				       want);
		if (h->opt->capacity)
			xpf_buf_adds(&src, "; --capacity is read only without allocator events");
	} else if (h->opt->capacity) {
		d->capacity_bytes = h->opt->capacity;
		d->capacity_tag = XPF_TAG_READ;
		xpf_buf_adds(&src, "--capacity");
	} else if (d->memory_bytes) {
		d->capacity_bytes = d->memory_bytes;
		d->capacity_tag = XPF_TAG_READ;
		xpf_buf_adds(&src,
			     "the device plane's memory_size (JAX's GPU pool is 75% of it by default)");
	} else {
		xpf_buf_adds(&src,
			     "unknown (no allocator events, no --capacity, no device memory_size)");
	}
	d->capacity_source = xpf_buf_detach(&src, NULL);
	if (d->capacity_tag == XPF_TAG_MEASURED && d->memory_bytes) {
		/* 0.75 × memory ± 1%: |cap − 0.75 mem| > 0.0075 mem */
		long double want75 = 0.75L * (long double)d->memory_bytes;
		long double diff = (long double)d->capacity_bytes - want75;
		if (diff < 0)
			diff = -diff;
		d->fraction_set = diff > 0.01L * want75;
	}
}

/* ---- between (SPEC §4.3) --------------------------------------------------- */

/* The host events between the focus execution and the one before it of the
 * same module on the same device. */
static void choose_between(xpf_diag_ctx *c)
{
	xpf_diagnosis *d = c->d;
	const xpf_runtime *rt = c->rt;
	xpf_rt_between *b = &d->between;
	xpf_error e = { 0 };

	b->module = d->module;
	b->device = -1;
	b->from_execution = b->to_execution = -1;
	if (rt == NULL || d->execution < 0)
		return;
	const xpf_rt_execution *to = &rt->executions[d->execution];
	b->device = to->device;
	if (to->prev >= 0 &&
	    xpf_runtime_between(c->h, rt, (size_t)to->prev, (size_t)d->execution, b, &e) != XPF_OK) {
		xpf_host_note_error(c->h, &e);
		d->between_error = e;
		b->from_execution = b->to_execution = -1;
	}
}

/* ---- the whole diagnosis ---------------------------------------------------- */

bool xpf_diag_oom_shown(const xpf_runtime *rt)
{
	if (rt->nretries > 0 || xpf_diag_compile_oom_shown(rt))
		return true;
	for (size_t x = 0; x < rt->nexecutions; x++)
		if (rt->executions[x].launched == XPF_LAUNCHED_NO)
			return true;
	return false;
}

static void finding_free(xpf_finding *f)
{
	free(f->text);
	for (size_t j = 0; j < f->nevidence; j++)
		free(f->evidence[j]);
	for (size_t j = 0; j < f->nfixes; j++) {
		free(f->fixes[j].text);
		free(f->fixes[j].cost);
	}
}

/* A program that failed gets no fits line (SPEC §5.2): that the step alone
 * would fit goes into the first finding (sorted), which says what failed. */
static void fits_into_failure(xpf_diagnosis *d)
{
	size_t k = 0;
	const char *said = NULL;
	for (size_t i = 0; i < d->nfindings; i++) {
		xpf_finding *f = &d->findings[i];
		if (strcmp(f->code, "fits") != 0) {
			d->findings[k++] = *f;
			continue;
		}
		said = f->text;
		f->text = NULL;
		finding_free(f);
	}
	d->nfindings = k;
	if (said == NULL)
		return;
	if (k > 0 && d->findings[0].text) {
		xpf_finding *f = &d->findings[0];
		size_t n = strlen(f->text), m = strlen(said);
		f->text = xpf_realloc_array(f->text, n + m + 32, 1);
		snprintf(f->text + n, m + 32, "; the step alone fits: %s", said);
	}
	free((char *)said);
}

/* The rules in the order they add findings (sorted afterwards). */
static void run_rules(xpf_diag_ctx *c)
{
	xpf_rule_fit(c);
	xpf_rule_roles(c);
	xpf_rule_donation(c);
	xpf_rule_param_copies(c, XPF_DUP_LAYOUT);
	xpf_rule_param_copies(c, XPF_DUP_CONVERT);
	xpf_rule_upcast(c);
	xpf_rule_remat_frag(c);
	xpf_rule_retrace(c);
	if (c->rt != NULL && c->rt->has_events) {
		xpf_rule_growth(c);
		xpf_rule_foreign(c);
		xpf_rule_retry(c);
		xpf_rule_never(c);
		xpf_rule_compile_peak(c);
		xpf_rule_compile_oom(c);
	}
	xpf_rule_missing(c);
	xpf_rule_unexplained_oom(c);
}

static int finding_cmp(const void *a, const void *b)
{
	const xpf_finding *x = a, *y = b;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (x->module != y->module)
		return x->module < y->module ? -1 : 1;
	return strcmp(x->text ? x->text : "", y->text ? y->text : "");
}

int xpf_diagnose(xpf_host *h, xpf_diagnosis **out, xpf_error *err)
{
	xpf_diagnosis *d = calloc(1, sizeof *d);
	xpf_diag_ctx c = { 0 };
	c.focus_x = -1;
	xpf_error e = { 0 };

	if (d == NULL)
		abort();
	c.h = h;
	c.d = d;
	if (xpf_capture_nplanes(h->cap) > 0 && xpf_host_runtime(h, &c.rt, &e) != XPF_OK) {
		xpf_host_note_error(h, &e);
		d->runtime_error = e;
		c.rt = NULL;
	}
	choose_module(&c);
	choose_capacity(&c);
	choose_between(&c);
	if (d->module >= 0) {
		c.p = xpf_diag_plan(h, d->module);
		c.dir = h->module_dirs[d->module];
	}
	run_rules(&c);
	/* SPEC §5.2: when nothing failed and the plan fits, fits comes first
	 * and the rest are hints; a program that failed gets no fits line */
	if (c.rt == NULL || !xpf_diag_oom_shown(c.rt))
		for (size_t i = 0; i < d->nfindings; i++)
			if (strcmp(d->findings[i].code, "fits") == 0)
				d->findings[i].rank = -1;
	xpf_qsort(d->findings, d->nfindings, sizeof *d->findings, finding_cmp);
	if (c.rt != NULL && xpf_diag_oom_shown(c.rt))
		fits_into_failure(d);
	/* checks.txt renders its checks itself (xpf_render_checks): they decode
	 * every module's plan, which diagnosis.txt does not need. */
	*out = d;
	(void)err;
	return XPF_OK;
}

void xpf_diagnosis_free(void *ptr)
{
	xpf_diagnosis *d = ptr;
	if (d == NULL)
		return;
	for (size_t i = 0; i < d->nfindings; i++)
		finding_free(&d->findings[i]);
	free(d->findings);
	free(d->capacity_source);
	free(d->module_why);
	xpf_rt_between_release(&d->between);
	free(d);
}
