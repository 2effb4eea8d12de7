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
			l->state = 2;
		} else {
			l->value = v;
			l->state = 1;
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
