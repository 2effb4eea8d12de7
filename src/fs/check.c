#include "fs/check.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/buf.h"

struct alloc_count {
	char name[128];
	uint64_t allocs, deallocs;
	uint64_t max_peak;
	bool keyed_by_index;
};

static struct alloc_count *find_alloc(struct alloc_count **v, size_t *n, const char *name)
{
	for (size_t i = 0; i < *n; i++)
		if (strcmp((*v)[i].name, name) == 0)
			return &(*v)[i];
	*v = xpf_realloc_array(*v, *n + 1, sizeof **v);
	struct alloc_count *a = &(*v)[(*n)++];
	memset(a, 0, sizeof *a);
	snprintf(a->name, sizeof a->name, "%s", name);
	return a;
}

static int count_allocators(xpf_capture *c, FILE *out, xpf_error *err)
{
	long pi = xpf_capture_find_plane(c, "/host:CPU");
	if (pi < 0) {
		fprintf(out, "  allocator events: none (no /host:CPU plane)\n");
		return XPF_OK;
	}
	const xpf_plane *p;
	int rc = xpf_capture_plane(c, (size_t)pi, &p, err);
	if (rc != XPF_OK)
		return rc;
	struct alloc_count *v = NULL;
	size_t n = 0;
	for (size_t l = 0; l < p->nlines; l++) {
		xpf_event_iter it;
		xpf_event ev;
		xpf_events_begin(p, l, &it);
		while ((rc = xpf_events_next(&it, &ev, err)) == 1) {
			bool is_a = strcmp(ev.name, "MemoryAllocation") == 0;
			bool is_d = strcmp(ev.name, "MemoryDeallocation") == 0;
			if (!is_a && !is_d)
				continue;
			xpf_stat_iter sit;
			xpf_stat st;
			char name[128] = "";
			char idx[64] = "";
			uint64_t peak = 0;
			xpf_stats_of_event(p, &ev, &sit);
			while ((rc = xpf_stats_next(&sit, &st, err)) == 1) {
				xpf_str s;
				uint64_t u;
				if (strcmp(st.name, "allocator_name") == 0 && xpf_stat_text(&st, &s))
					snprintf(name, sizeof name, "%.*s", (int)s.n, s.p);
				else if (strcmp(st.name, "index_on_host") == 0 && xpf_stat_u64(&st, &u))
					snprintf(idx, sizeof idx, "tpu:%llu", (unsigned long long)u);
				else if (strcmp(st.name, "peak_bytes_in_use") == 0 && xpf_stat_u64(&st, &u))
					peak = u;
			}
			if (rc < 0)
				goto fail;
			struct alloc_count *a = find_alloc(&v, &n, name[0] ? name : idx[0] ? idx : "(unnamed)");
			a->keyed_by_index = !name[0] && idx[0];
			if (is_a)
				a->allocs++;
			else
				a->deallocs++;
			if (peak > a->max_peak)
				a->max_peak = peak;
		}
		if (rc < 0)
			goto fail;
	}
	if (n == 0)
		fprintf(out, "  allocator events: none (the BFC allocator emits them; cuda_async and others do not)\n");
	for (size_t i = 0; i < n; i++) {
		char hb[32];
		fprintf(out, "  allocator %s%s: %" PRIu64 " allocations, %" PRIu64
			" deallocations, max peak_bytes_in_use %" PRIu64 " (%s)\n",
			v[i].name, v[i].keyed_by_index ? " (keyed by index_on_host)" : "", v[i].allocs,
			v[i].deallocs, v[i].max_peak, xpf_human(v[i].max_peak, hb));
	}
	free(v);
	return XPF_OK;
fail:
	free(v);
	return err->code;
}

static int check_host(const xpf_input_host *h, FILE *out, xpf_error *err)
{
	xpf_capture *c = h->cap;
	char hb[32];
	fprintf(out, "host %s: %s, %" PRIu64 " bytes\n", h->name, h->path, xpf_capture_size(c));
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
			fprintf(out, "    %zu %s: %zu lines, %" PRIu64 " events\n", i, p->name, p->nlines,
				p->nevents);
			if (strncmp(p->name, "/device:", 8) == 0) {
				xpf_stat st;
				uint64_t mem;
				if (xpf_plane_stat(p, "memory_size", &st, err) == 1 && xpf_stat_u64(&st, &mem))
					fprintf(out, "      memory_size %" PRIu64 " (%s)\n", mem, xpf_human(mem, hb));
			}
		}
		for (size_t i = 0; i < xpf_capture_nstrings(c, 2); i++)
			fprintf(out, "  capture error: %s\n", xpf_capture_string(c, 2, i));
	}
	fprintf(out, "  modules: %zu\n", xpf_capture_nmodules(c));
	for (size_t m = 0; m < xpf_capture_nmodules(c); m++) {
		const Xla__HloProto *hp;
		rc = xpf_capture_module_hlo(c, m, &hp, err);
		if (rc != XPF_OK)
			return rc;
		const Xla__BufferAssignmentProto *ba = hp->buffer_assignment;
		uint64_t total = 0;
		for (size_t a = 0; ba && a < ba->n_buffer_allocations; a++)
			if (ba->buffer_allocations[a]->size > 0)
				total += (uint64_t)ba->buffer_allocations[a]->size;
		if (ba)
			fprintf(out, "    %s: program_id %" PRIu64 ", buffer assignment yes: %zu allocations, %zu logical buffers, %" PRIu64 " bytes\n",
				xpf_capture_module(c, m)->name, xpf_capture_module(c, m)->program_id,
				ba->n_buffer_allocations, ba->n_logical_buffers, total);
		else
			fprintf(out, "    %s: program_id %" PRIu64 ", buffer assignment no\n",
				xpf_capture_module(c, m)->name, xpf_capture_module(c, m)->program_id);
	}
	if (!xpf_capture_is_hlo_only(c))
		return count_allocators(c, out, err);
	return XPF_OK;
}

int xpf_check(xpf_input *in, FILE *out, xpf_error *err)
{
	fprintf(out, "%s: %zu host(s)%s%s\n", in->path, in->nhosts,
		in->run_name ? ", run " : "", in->run_name ? in->run_name : "");
	for (size_t i = 0; i < in->nhosts; i++) {
		int rc = check_host(&in->hosts[i], out, err);
		if (rc != XPF_OK)
			return rc;
	}
	fprintf(out, "ok\n");
	return XPF_OK;
}
