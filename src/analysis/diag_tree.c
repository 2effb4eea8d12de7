/* Root files: placeholder until the diagnosis lands (issue 6). */
#include "analysis/diagnosis.h"

void xpf_diagnosis_free(void *d) { (void)d; }

void xpf_tree_root(xpf_host *h, xpf_node *root) { (void)h; (void)root; }

void xpf_tree_cross(xpf_report *r, xpf_node *root) { (void)r; (void)root; }
