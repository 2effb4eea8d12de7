/* The diagnosis of one host: which module, what capacity (SPEC §5.1),
 * then the rules of the table below in turn (diag_rules_*.c), each adding
 * findings through diag_util.c; the findings sorted in SPEC §5.2's order. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/diagnosis/diag_priv.h"
#include "common/alloc.h"

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

static void rule_layout_copies(xpf_diag_ctx *c) { xpf_rule_param_copies(c, XPF_DUP_LAYOUT); }
static void rule_convert_copies(xpf_diag_ctx *c) { xpf_rule_param_copies(c, XPF_DUP_CONVERT); }

/* The rules, in the order they add findings (sorted afterwards).  Each
 * reads the analysed host (xpf_diag_ctx) and only adds findings; none
 * calls another.  unexplained-oom comes last: it reads what the others
 * found.  events: the rule needs the allocator's events. */
static const struct {
	void (*run)(xpf_diag_ctx *c);
	bool events;
} rules[] = {
	{ xpf_rule_fit, false },             /* plan-exceeds-pool, near-fit, fits, plan */
	{ xpf_rule_roles, false },           /* mostly-forward/backward/workspace */
	{ xpf_rule_donation, false },        /* no-donation */
	{ rule_layout_copies, false },       /* param-layout-copy */
	{ rule_convert_copies, false },      /* param-convert-copy */
	{ xpf_rule_upcast, false },          /* silent-upcast */
	{ xpf_rule_remat_frag, false },      /* xla-remat, temp-fragmentation */
	{ xpf_rule_retrace, false },         /* retrace */
	{ xpf_rule_growth, true },           /* growth-per-execution */
	{ xpf_rule_foreign, true },          /* foreign-live-arrays */
	{ xpf_rule_retry, true },            /* allocator-retry */
	{ xpf_rule_never, true },            /* never-launched */
	{ xpf_rule_compile_peak, true },     /* compile-time-peak */
	{ xpf_rule_compile_oom, true },      /* compile-oom */
	{ xpf_rule_missing, false },         /* missing-plan, missing-runtime */
	{ xpf_rule_unexplained_oom, false }, /* unexplained-oom */
};

static void run_rules(xpf_diag_ctx *c)
{
	bool events = c->rt != NULL && c->rt->has_events;
	for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
		if (events || !rules[i].events)
			rules[i].run(c);
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

int xpf_diagnose(xpf_host *h, const xpf_runtime *rt, const xpf_error *rt_err, xpf_diagnosis **out,
		 xpf_error *err)
{
	xpf_diagnosis *d = calloc(1, sizeof *d);
	xpf_diag_ctx c = { 0 };
	c.focus_x = -1;

	if (d == NULL)
		abort();
	c.h = h;
	c.d = d;
	c.rt = rt;
	if (rt_err && rt_err->code != 0)
		d->runtime_error = *rt_err;
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

/* ---- the pool a module ran in (heap.svg's scale) ------------------------ */

/* Without allocator events, the diagnosis may still know the pool (e.g.
 * 0.75 x the device's memory_size). */
static uint64_t diagnosis_pool(xpf_host *h, char what[128])
{
	const xpf_diagnosis *d;
	xpf_error e = { 0 };
	if (xpf_host_diagnosis(h, &d, &e) != XPF_OK || d->capacity_bytes == 0)
		return 0;
	snprintf(what, 128, "capacity from the diagnosis (%s)",
		 d->capacity_source ? d->capacity_source : "inferred");
	return d->capacity_bytes;
}

/* The allocator of the largest capacity among module m's executions, else
 * among the device pools; -1 when none. */
static long largest_pool(const xpf_runtime *rt, long m)
{
	long best = -1;
	for (size_t i = 0; i < rt->nexecutions; i++) {
		const xpf_rt_execution *x = &rt->executions[i];
		if (x->module != m || x->allocator < 0 || (size_t)x->allocator >= rt->nallocators)
			continue;
		if (best < 0 || rt->allocators[x->allocator].capacity_bytes >
					rt->allocators[best].capacity_bytes)
			best = x->allocator;
	}
	if (best >= 0)
		return best;
	for (size_t i = 0; i < rt->nallocators; i++) {
		if (!rt->allocators[i].is_pool)
			continue;
		if (best < 0 || rt->allocators[i].capacity_bytes > rt->allocators[best].capacity_bytes)
			best = (long)i;
	}
	return best;
}

uint64_t xpf_module_pool(xpf_host *h, long m, char what[128])
{
	what[0] = '\0';
	if (h->opt && h->opt->capacity) {
		snprintf(what, 128, "capacity given with --capacity");
		return h->opt->capacity;
	}
	const xpf_runtime *rt;
	xpf_error e = { 0 };
	if (xpf_capture_nplanes(h->cap) == 0)
		return 0;
	if (xpf_host_runtime(h, &rt, &e) != XPF_OK)
		return diagnosis_pool(h, what);
	long best = largest_pool(rt, m);
	if (best < 0 || rt->allocators[best].capacity_bytes == 0)
		return diagnosis_pool(h, what);
	snprintf(what, 128, "%s capacity (measured: in use + bytes_available)",
		 rt->allocators[best].name);
	return rt->allocators[best].capacity_bytes;
}
