/* Errors a host's analyses find late (while a file is rendered), kept for
 * --cat and --export to report: any stage may note one, so this depends
 * on nothing but the host's struct. */
#include "analysis/host.h"

void xpf_host_note_error(xpf_host *h, const xpf_error *err)
{
	pthread_mutex_lock(&h->err_mu);
	if (h->first_late.code == XPF_OK && err && err->code != XPF_OK)
		h->first_late = *err;
	pthread_mutex_unlock(&h->err_mu);
}

bool xpf_host_late_error(xpf_host *h, xpf_error *out)
{
	pthread_mutex_lock(&h->err_mu);
	bool got = h->first_late.code != XPF_OK;
	if (got)
		*out = h->first_late;
	pthread_mutex_unlock(&h->err_mu);
	return got;
}
