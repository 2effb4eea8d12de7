/* runtime/: placeholder until the runtime lands (issue 5). */
#include "analysis/runtime.h"

void xpf_runtime_free(void *rt) { (void)rt; }

void xpf_tree_runtime(xpf_host *h, xpf_node *dir) { (void)h; (void)dir; }
