/* The one place where each analysis of a host is computed, once. */
#include "analysis/host.h"
#include "analysis/diagnosis/diagnosis.h"
#include "analysis/plan/plan.h"
#include "analysis/runtime/runtime.h"
#include "analysis/compare/compare.h"
#include "common/alloc.h"

#include <stdlib.h>
#include <string.h>

void xpf_host_init(xpf_host *h, const char *name, xpf_capture *cap, const xpf_options *opt,
		   char *path, char **module_dirs)
{
	memset(h, 0, sizeof *h);
	h->name = name;
	h->cap = cap;
	h->opt = opt;
	h->path = path;
	h->module_dirs = module_dirs;
	h->nmodules = xpf_capture_nmodules(cap);
	h->plan_of = xpf_host_plan;
	h->plans = xpf_malloc((h->nmodules ? h->nmodules : 1) * sizeof *h->plans);
	for (size_t m = 0; m < h->nmodules; m++)
		xpf_lazy_init(&h->plans[m]);
	xpf_lazy_init(&h->runtime);
	xpf_lazy_init(&h->diagnosis);
	xpf_lazy_init(&h->compare);
	pthread_mutex_init(&h->err_mu, NULL);
}

void xpf_host_release(xpf_host *h)
{
	/* the comparison borrows this host's analyses (and the baseline's,
	 * which it never reads when freed): it goes first */
	xpf_lazy_release(&h->compare, xpf_compare_free);
	free(h->compare_dir);
	for (size_t m = 0; m < h->nmodules; m++) {
		xpf_lazy_release(&h->plans[m], xpf_plan_free);
		if (h->module_dirs)
			free(h->module_dirs[m]);
	}
	free(h->plans);
	free(h->module_dirs);
	free(h->path);
	/* the diagnosis reads the runtime: it goes first */
	xpf_lazy_release(&h->diagnosis, xpf_diagnosis_free);
	xpf_lazy_release(&h->runtime, xpf_runtime_free);
	pthread_mutex_destroy(&h->err_mu);
}

/* ---- each analysis, made on first use ----------------------------------- */

typedef struct plan_job {
	xpf_host *h;
	size_t m;
} plan_job;

static int make_plan(void *ctx, void **value, xpf_error *err)
{
	plan_job *j = ctx;
	xpf_plan *p = NULL;
	int rc = xpf_plan_build_module(j->h->cap, j->m, &p, err);
	*value = p;
	return rc;
}

int xpf_host_plan(xpf_host *h, size_t m, const xpf_plan **out, xpf_error *err)
{
	if (m >= h->nmodules)
		return xpf_fail(err, XPF_EUSAGE, "module %zu does not exist", m);
	plan_job j = { h, m };
	void *v = NULL;
	int rc = xpf_lazy_get(&h->plans[m], make_plan, &j, &v, err);
	if (rc == XPF_OK)
		*out = v;
	return rc;
}

static int make_runtime(void *ctx, void **value, xpf_error *err)
{
	xpf_host *h = ctx;
	static const xpf_rt_options defaults = XPF_RT_OPTIONS_INIT;
	xpf_runtime *rt = NULL;
	int rc = xpf_runtime_build(h, h->opt && h->opt->runtime ? h->opt->runtime : &defaults, &rt,
				   err);
	*value = rt;
	return rc;
}

int xpf_host_runtime(xpf_host *h, const xpf_runtime **out, xpf_error *err)
{
	void *v = NULL;
	int rc = xpf_lazy_get(&h->runtime, make_runtime, h, &v, err);
	if (rc == XPF_OK)
		*out = v;
	return rc;
}

/* The diagnosis reads the runtime (none for a bare HloProto; when it
 * failed, the diagnosis says so and goes on with the plans). */
static int make_diagnosis(void *ctx, void **value, xpf_error *err)
{
	xpf_host *h = ctx;
	xpf_diagnosis *d = NULL;
	const xpf_runtime *rt = NULL;
	xpf_error e = { 0 };
	if (xpf_capture_nplanes(h->cap) > 0 && xpf_host_runtime(h, &rt, &e) != XPF_OK) {
		xpf_host_note_error(h, &e);
		rt = NULL;
	}
	int rc = xpf_diagnose(h, rt, &e, &d, err);
	*value = d;
	return rc;
}

int xpf_host_diagnosis(xpf_host *h, const xpf_diagnosis **out, xpf_error *err)
{
	void *v = NULL;
	int rc = xpf_lazy_get(&h->diagnosis, make_diagnosis, h, &v, err);
	if (rc == XPF_OK)
		*out = v;
	return rc;
}

void xpf_host_set_base(xpf_host *h, xpf_host *base, const char *dir)
{
	h->base = base;
	free(h->compare_dir);
	h->compare_dir = xpf_strdup(dir);
}

static int make_compare(void *ctx, void **value, xpf_error *err)
{
	xpf_host *h = ctx;
	xpf_compare *c = xpf_malloc(sizeof *c);
	xpf_compare_build(h->base, h, h->compare_dir, c);
	*value = c;
	(void)err;
	return XPF_OK;
}

int xpf_host_compare(xpf_host *h, const xpf_compare **out, xpf_error *err)
{
	if (h->base == NULL)
		return xpf_fail(err, XPF_EUSAGE, "no baseline to compare with");
	void *v = NULL;
	int rc = xpf_lazy_get(&h->compare, make_compare, h, &v, err);
	if (rc == XPF_OK)
		*out = v;
	return rc;
}
