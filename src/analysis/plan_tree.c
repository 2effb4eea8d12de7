/* modules/: placeholder until the plan lands (issue 4). */
#include "analysis/plan.h"

void xpf_plan_free(void *plan) { (void)plan; }

void xpf_tree_modules(xpf_host *h, xpf_node *dir)
{
	for (size_t m = 0; m < h->nmodules; m++)
		xpf_node_dir(dir, h->module_dirs[m], NULL, (long)m);
}
