#include "common/lazy.h"

#include <stdlib.h>
#include <string.h>

void xpf_lazy_init(xpf_lazy *l)
{
	memset(l, 0, sizeof *l);
	pthread_mutex_init(&l->mu, NULL);
}

int xpf_lazy_get(xpf_lazy *l, xpf_lazy_fn fn, void *ctx, void **out, xpf_error *err)
{
	/* computed: no lock (the value was written before state, released) */
	if (__atomic_load_n(&l->state, __ATOMIC_ACQUIRE) == 1) {
		if (out)
			*out = l->value;
		return XPF_OK;
	}
	pthread_mutex_lock(&l->mu);
	if (l->state == 0) {
		xpf_error e = { 0 };
		void *v = NULL;
		int rc = fn(ctx, &v, &e);
		if (rc != XPF_OK) {
			if (e.code == XPF_OK)
				xpf_fail(&e, rc, "internal error");
			l->err = malloc(sizeof *l->err);
			if (l->err == NULL)
				abort();
			*l->err = e;
			__atomic_store_n(&l->state, 2, __ATOMIC_RELAXED); /* read under the lock */
		} else {
			l->value = v;
			__atomic_store_n(&l->state, 1, __ATOMIC_RELEASE);
		}
	}
	int rc = XPF_OK;
	if (l->state == 2) {
		rc = l->err->code;
		if (err && err->code == XPF_OK)
			*err = *l->err;
	} else if (out) {
		*out = l->value;
	}
	pthread_mutex_unlock(&l->mu);
	return rc;
}

int xpf_lazy_state(xpf_lazy *l) { return __atomic_load_n(&l->state, __ATOMIC_ACQUIRE); }

bool xpf_lazy_forget(xpf_lazy *l, void (*free_fn)(void *))
{
	pthread_mutex_lock(&l->mu);
	bool was = l->state == 1;
	if (was) {
		if (free_fn && l->value)
			free_fn(l->value);
		l->value = NULL;
		__atomic_store_n(&l->state, 0, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&l->mu);
	return was;
}

void xpf_lazy_release(xpf_lazy *l, void (*free_fn)(void *))
{
	if (l->state == 1 && free_fn && l->value)
		free_fn(l->value);
	l->value = NULL;
	l->state = 0;
	free(l->err);
	l->err = NULL;
	pthread_mutex_destroy(&l->mu);
}
