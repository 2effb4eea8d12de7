/* The pool a module ran in: the capacity its heap picture is drawn against. */
#ifndef XPF_CAPACITY_H
#define XPF_CAPACITY_H

#include <stdint.h>

#include "analysis/host.h"

/* --capacity if given, else the largest capacity of the device allocators
 * module m's executions used, else of any device pool, else the
 * diagnosis's; 0 when none is known.  what says which, in words (for the
 * picture's legend).  Never fails: a runtime that cannot be computed gives
 * the diagnosis's figure or none. */
uint64_t xpf_module_pool(xpf_host *h, long m, char what[128]);

#endif
