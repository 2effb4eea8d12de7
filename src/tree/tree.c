/* Which nodes a report has (SPEC §3): each host's tree (the root, capture/,
 * modules/, runtime/: the *_tree.c files), the cross-host files of a run
 * directory, base/ and compare/ with a baseline. */
#include <stdlib.h>
#include <string.h>

#include "analysis/paths.h"
#include "tree/report_priv.h"
#include "common/alloc.h"

/* Host i of r, shown in folder root: the host and its tree. */
static void host_build(xpf_report *r, size_t i, xpf_node *root)
{
	xpf_host *h = &r->hosts[i];
	xpf_capture *cap = r->in->hosts[i].cap;
	size_t n = xpf_capture_nmodules(cap);
	const char **names = xpf_malloc((n ? n : 1) * sizeof *names);
	for (size_t m = 0; m < n; m++)
		names[m] = xpf_capture_module(cap, m)->name;
	/* modules/ also holds index.tsv (plan_tree.c) */
	static const char *const beside_modules[] = { "index.tsv", NULL };
	char **dirs = xpf_safe_names(names, n, beside_modules);
	free(names);
	xpf_buf path = XPF_BUF_INIT;
	xpf_node_path(root, &path);
	if (path.len)
		xpf_buf_addc(&path, '/');
	xpf_host_init(h, r->in->hosts[i].name, cap, &r->opt, xpf_buf_detach(&path, NULL), dirs);
	r->host_roots[i] = root;
	root->host = h;
	xpf_tree_root(h, root);
	xpf_tree_capture(h, xpf_node_dir(root, XPF_D_CAPTURE, NULL, 0));
	xpf_tree_modules(h, xpf_node_dir(root, XPF_D_MODULES, NULL, 0));
	xpf_tree_runtime(h, xpf_node_dir(root, XPF_D_RUNTIME, NULL, 0));
}

/* The hosts of in and their trees under root (a report's own root, or
 * base/ of the report that holds it). */
static void report_build(xpf_report *r, xpf_input *in, const xpf_options *opt, xpf_node *root)
{
	r->in = in;
	r->opt = *opt;
	r->nhosts = in->nhosts;
	r->hosts = xpf_malloc((in->nhosts ? in->nhosts : 1) * sizeof *r->hosts);
	r->host_roots = xpf_malloc((in->nhosts ? in->nhosts : 1) * sizeof *r->host_roots);
	r->root = root;
	if (in->nhosts == 1) {
		host_build(r, 0, root);
		return;
	}
	xpf_node *hosts = xpf_node_dir(root, XPF_D_HOSTS, NULL, 0);
	hosts->host = NULL;
	const char **names = xpf_malloc((in->nhosts ? in->nhosts : 1) * sizeof *names);
	for (size_t i = 0; i < in->nhosts; i++)
		names[i] = in->hosts[i].name;
	char **safe = xpf_safe_names(names, in->nhosts, NULL);
	for (size_t i = 0; i < in->nhosts; i++) {
		host_build(r, i, xpf_node_dir(hosts, safe[i], NULL, 0));
		free(safe[i]);
	}
	free(safe);
	free(names);
	xpf_tree_cross(r, root);
}

static xpf_report *report_new(xpf_report *top)
{
	xpf_report *r = xpf_malloc(sizeof *r);
	memset(r, 0, sizeof *r);
	r->top = top ? top : r;
	pthread_mutex_init(&r->ino_mu, NULL);
	pthread_mutex_init(&r->cache_mu, NULL);
	r->cache_limit = CACHE_LIMIT_DEFAULT;
	return r;
}

int xpf_report_open(xpf_input *in, const xpf_options *opt, xpf_report **out, xpf_error *err)
{
	return xpf_report_open_compare(in, NULL, opt, out, err);
}

int xpf_report_open_compare(xpf_input *in, xpf_input *base, const xpf_options *opt,
			    xpf_report **out, xpf_error *err)
{
	xpf_report *r = report_new(NULL);
	xpf_node *root = xpf_node_new(r, NULL, XPF_NODE_DIR, "");
	report_build(r, in, opt, root);
	if (base) {
		/* base/ belongs to the baseline's report, so that its cross-host
		 * files (n->report) read the baseline's hosts. */
		r->base = report_new(r);
		xpf_node *broot = xpf_node_new(r->base, root, XPF_NODE_DIR, "base");
		broot->host = NULL;
		report_build(r->base, base, opt, broot);
		xpf_node *cmp = xpf_node_dir(root, XPF_D_COMPARE, NULL, 0);
		cmp->host = NULL;
		xpf_tree_compare(r, cmp);
	}
	(void)err;
	*out = r;
	return XPF_OK;
}
