/* --check: decode everything and print a short summary. */
#ifndef XPF_CHECK_H
#define XPF_CHECK_H

#include <stdio.h>

#include "capture/input.h"

/* Returns the exit status (0, or the first error's code). */
int xpf_check(xpf_input *in, FILE *out, xpf_error *err);

#endif
