#include "fs/check.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/runtime/runtime.h"
#include "common/buf.h"

/* Allocator event counts per allocator: the runtime's own accounting
 * (allocator_name, else tpu:<index_on_host>), not a second count. */
static int count_allocators(xpf_host *h, FILE *out, xpf_error *err)
{
	const xpf_runtime *rt;
	int rc = xpf_host_runtime(h, &rt, err);
	if (rc != XPF_OK)
		return rc;
	xpf_buf nb = XPF_BUF_INIT;
	if (rt->nallocators == 0)
		fprintf(out,
			"  allocator events: none (the BFC allocator emits them; cuda_async and others do not)\n");
	for (size_t i = 0; i < rt->nallocators; i++) {
		const xpf_rt_allocator *a = &rt->allocators[i];
		char hb[32];
		fprintf(out,
			"  allocator %s%s: %" PRIu64 " allocations, %" PRIu64
			" deallocations, max peak_bytes_in_use %" PRIu64 " (%s)\n",
			xpf_text_of(&nb, a->name),
			a->keyed_by_index ? " (keyed by index_on_host)" : "", a->allocations,
			a->deallocations, a->lifetime_peak_bytes,
			xpf_human(a->lifetime_peak_bytes, hb));
	}
	xpf_buf_release(&nb);
	return XPF_OK;
}

/* The planes and modules of capture c, as --check prints them. */
static int check_planes_modules(xpf_capture *c, FILE *out, xpf_buf *nb, xpf_error *err)
{
	char hb[32];
	int rc = xpf_capture_validate(c, err);
	if (rc != XPF_OK)
		return rc;
	if (!xpf_capture_is_hlo_only(c)) {
		fprintf(out, "  planes: %zu\n", xpf_capture_nplanes(c));
		for (size_t i = 0; i < xpf_capture_nplanes(c); i++) {
			const xpf_plane *p;
			rc = xpf_capture_plane(c, i, &p, err);
			if (rc != XPF_OK)
				return rc;
			fprintf(out, "    %zu %s: %zu lines, %" PRIu64 " events\n", i,
				xpf_text_of(nb, p->name), p->nlines, p->nevents);
			if (strncmp(p->name, "/device:", 8) == 0) {
				xpf_stat st;
				uint64_t mem;
				if (xpf_plane_stat(p, "memory_size", &st, err) == 1 &&
				    xpf_stat_u64(&st, &mem))
					fprintf(out, "      memory_size %" PRIu64 " (%s)\n", mem,
						xpf_human(mem, hb));
			}
		}
		for (size_t i = 0; i < xpf_capture_nstrings(c, 2); i++)
			fprintf(out, "  capture error: %s\n",
				xpf_text_of(nb, xpf_capture_string(c, 2, i)));
	}
	fprintf(out, "  modules: %zu\n", xpf_capture_nmodules(c));
	for (size_t m = 0; m < xpf_capture_nmodules(c); m++) {
		xpf_hlo *hlo = NULL;
		rc = xpf_capture_module_hlo(c, m, &hlo, err);
		if (rc == XPF_OK)
			rc = xpf_hlo_check(hlo, err);
		if (rc != XPF_OK) {
			xpf_hlo_free(hlo);
			return rc;
		}
		const Xla__BufferAssignmentProto *ba = xpf_hlo_head(hlo)->buffer_assignment;
		uint64_t total = 0;
		for (size_t a = 0; ba && a < ba->n_buffer_allocations; a++)
			if (ba->buffer_allocations[a]->size > 0)
				total += (uint64_t)ba->buffer_allocations[a]->size;
		if (ba)
			fprintf(out,
				"    %s: program_id %" PRIu64
				", buffer assignment yes: %zu allocations, %zu logical buffers, %" PRIu64
				" bytes\n",
				xpf_text_of(nb, xpf_capture_module(c, m)->name),
				xpf_capture_module(c, m)->program_id, ba->n_buffer_allocations,
				ba->n_logical_buffers, total);
		else
			fprintf(out, "    %s: program_id %" PRIu64 ", buffer assignment no\n",
				xpf_text_of(nb, xpf_capture_module(c, m)->name),
				xpf_capture_module(c, m)->program_id);
		xpf_hlo_free(hlo);
	}
	return XPF_OK;
}

static int check_host(const xpf_input_host *h, xpf_host *host, FILE *out, xpf_error *err)
{
	xpf_capture *c = h->cap;
	xpf_buf nb = XPF_BUF_INIT, pb = XPF_BUF_INIT;
	fprintf(out, "host %s: %s, %" PRIu64 " bytes\n", xpf_text_of(&nb, h->name),
		xpf_text_of(&pb, h->path), xpf_capture_size(c));
	xpf_buf_release(&pb);
	int rc = check_planes_modules(c, out, &nb, err);
	xpf_buf_release(&nb);
	if (rc == XPF_OK && !xpf_capture_is_hlo_only(c))
		return count_allocators(host, out, err);
	return rc;
}

int xpf_check(xpf_input *in, FILE *out, xpf_error *err)
{
	fprintf(out, "%s: %zu host(s)%s%s\n", in->path, in->nhosts, in->run_name ? ", run " : "",
		in->run_name ? in->run_name : "");
	xpf_options opt = XPF_OPTIONS_INIT;
	int rc = XPF_OK;
	for (size_t i = 0; i < in->nhosts && rc == XPF_OK; i++) {
		xpf_host host;
		xpf_host_init(&host, in->hosts[i].name, in->hosts[i].cap, &opt, NULL, NULL);
		rc = check_host(&in->hosts[i], &host, out, err);
		xpf_host_release(&host);
	}
	if (rc == XPF_OK)
		fprintf(out, "ok\n");
	return rc;
}
