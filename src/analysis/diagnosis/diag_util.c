/* What every rule uses (diag_rules_*.c): the finding builders (a finding,
 * its figures, evidence and fixes, ranked in SPEC §5.2's order), the plans
 * of other modules, and small text helpers.  Rules call these, never each
 * other or diagnosis.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/diagnosis/diag_priv.h"
#include "common/alloc.h"

/* "f32[8,128]{1,0}" -> "f32[8,128]" (the layout is noise in a sentence). */
void xpf_diag_put_shape(xpf_buf *b, const char *shape)
{
	const char *brace = shape[0] == '(' ? NULL : strchr(shape, '{');
	xpf_buf_add(b, shape, brace ? (size_t)(brace - shape) : strlen(shape));
}

/* tsl's HumanReadableNumBytes, as XLA's OOM messages print sizes (reference
 * §9): "<n>B", one decimal for KiB, two for MiB and above, no space. */
const char *xpf_diag_tsl_human(uint64_t v, char out[32])
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	if (v < 1024) {
		snprintf(out, 32, "%lluB", (unsigned long long)v);
		return out;
	}
	long double x = (long double)v / 1024.0L;
	int u = 0;
	while (x >= 1024.0L && u < 5) {
		x /= 1024.0L;
		u++;
	}
	snprintf(out, 32, u == 0 ? "%.1Lf%s" : "%.2Lf%s", x, units[u]);
	return out;
}

int xpf_diag_shape_dims(const char *shape, uint64_t dims[8])
{
	const char *p = shape ? strchr(shape, '[') : NULL;
	int n = 0;
	if (p == NULL || shape[0] == '(')
		return 0;
	p++;
	while (*p && *p != ']' && n < 8) {
		char *end;
		unsigned long long v = strtoull(p, &end, 10);
		if (end == p)
			return 0;
		dims[n++] = v;
		p = end;
		if (*p == ',')
			p++;
	}
	return n;
}

bool xpf_diag_square_seq(const char *shape, uint64_t seq)
{
	uint64_t d[8];
	int n = xpf_diag_shape_dims(shape, d);
	if (n < 3 || d[n - 1] != d[n - 2])
		return false;
	return seq ? d[n - 1] == seq : d[n - 1] >= 128;
}

const char *xpf_diag_param_dtype(const xpf_plan *p)
{
	static const char *const floats[] = { "f32", "bf16", "f16", "f64" };
	uint64_t bytes[4] = { 0 };
	int best = -1;
	for (size_t i = 0; i < p->nparams; i++)
		for (int k = 0; k < 4; k++)
			if (strcmp(p->params[i].dtype, floats[k]) == 0)
				bytes[k] += p->params[i].bytes;
	for (int k = 0; k < 4; k++)
		if (bytes[k] && (best < 0 || bytes[k] > bytes[best]))
			best = k;
	return best < 0 ? "" : floats[best];
}

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
	if (h->plan_of(h, (size_t)m, &p, &e) != XPF_OK) {
		/* the plan's own files report the error; --cat and --export of
		 * a file made without it say so in their exit status */
		xpf_host_note_error(h, &e);
		return NULL;
	}
	return p;
}

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
 * need (0: no verdict), its text fmt with ap; the verdict against the
 * capacity is "fits" or "not enough" only where the whole range agrees,
 * else "may fit". */
static void add_fix(xpf_diag_ctx *c, xpf_finding *f, uint64_t lo, uint64_t hi, uint64_t need,
		    const char *cost, const char *fmt, va_list ap)
{
	xpf_buf b = XPF_BUF_INIT, cb = XPF_BUF_INIT;
	char h1[32], h2[32], h3[32], text[2048];
	uint64_t cap = c->d->capacity_bytes;
	uint64_t most = xpf_sub0(need, lo), least = xpf_sub0(need, hi > lo ? hi : lo);

	if (f->nfixes == XPF_DIAG_MAX_FIXES)
		return;
	vsnprintf(text, sizeof text, fmt, ap);
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
	va_start(ap, fmt);
	add_fix(c, f, saving, saving, need_after ? need_after + saving : 0, cost, fmt, ap);
	va_end(ap);
}

void xpf_diag_addfix_range(xpf_diag_ctx *c, xpf_finding *f, uint64_t lo, uint64_t hi, uint64_t need,
			   const char *cost, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	add_fix(c, f, lo, hi, need, cost, fmt, ap);
	va_end(ap);
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

/* The last compilation that ran out of memory, or NULL. */
const xpf_rt_compile *xpf_diag_failed_compile(const xpf_runtime *rt)
{
	for (size_t i = rt->ncompiles; i-- > 0;)
		if (xpf_rt_compile_oom(rt, &rt->compiles[i]))
			return &rt->compiles[i];
	return NULL;
}

bool xpf_diag_compile_oom_shown(const xpf_runtime *rt)
{
	return xpf_diag_failed_compile(rt) != NULL;
}

bool xpf_diag_short_or_near(const xpf_diag_ctx *c)
{
	const xpf_plan *p = c->p;
	uint64_t cap = c->d->capacity_bytes;
	return p != NULL && p->has_assignment && cap != 0 && p->need_bytes >= cap / 20 * 19;
}
