/* Compute-once values shared between threads (a module's plan, the
 * runtime, a rendered file).  The first caller computes; concurrent callers
 * wait; the result, or the error, is kept for everyone after.  Once
 * computed, a get takes no lock (the join asks for a module's plan once an
 * execution, hundreds of thousands of times). */
#ifndef XPF_LAZY_H
#define XPF_LAZY_H

#include <pthread.h>
#include <stdbool.h>

#include "common/error.h"

/* The error is kept out of line (malloc'd on failure only): a report has one
 * xpf_lazy per node, plane and module, and a 1 KiB message in each made a
 * hostile capture of many tiny planes or modules cost ~600x its size. */
typedef struct xpf_lazy {
	pthread_mutex_t mu;
	int state; /* 0 not yet, 1 done, 2 failed */
	void *value;
	xpf_error *err; /* when failed */
} xpf_lazy;

#define XPF_LAZY_INIT                                    \
	{                                                \
		PTHREAD_MUTEX_INITIALIZER, 0, NULL, NULL \
	}

void xpf_lazy_init(xpf_lazy *l);
/* fn computes *value from ctx; it runs at most once per xpf_lazy. */
typedef int (*xpf_lazy_fn)(void *ctx, void **value, xpf_error *err);
int xpf_lazy_get(xpf_lazy *l, xpf_lazy_fn fn, void *ctx, void **out, xpf_error *err);
/* Where l stands, without computing or waiting (an acquire load: a value
 * it says is done may be got, without a lock, by xpf_lazy_get). */
enum { XPF_LAZY_NOT_YET = 0, XPF_LAZY_DONE = 1, XPF_LAZY_FAILED = 2 };
int xpf_lazy_state(xpf_lazy *l);
/* Forget a computed value (free_fn, may be NULL, releases it), so that the
 * next get computes it again: true if there was one.  Not while another
 * thread may still hold the value a get gave. */
bool xpf_lazy_forget(xpf_lazy *l, void (*free_fn)(void *));
/* Destroy; free_fn (may be NULL) releases a computed value. */
void xpf_lazy_release(xpf_lazy *l, void (*free_fn)(void *));

#endif
