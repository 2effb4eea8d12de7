/* capture/: what the capture itself holds (planes, devices, errors). */
#include <stdio.h>
#include <string.h>

#include "analysis/diagnosis/diagnosis.h"
#include "analysis/plan/plan.h"
#include "analysis/paths.h"
#include "tree/report.h"
#include "analysis/runtime/runtime.h"

static int render_planes(xpf_host *h, const xpf_node *n, xpf_buf *out, xpf_error *err)
{
	xpf_buf_adds(out, "index\tid\tname\tlines\tevents\tevent_metadata\tstat_metadata\tbytes\n");
	for (size_t i = 0; i < xpf_capture_nplanes(h->cap); i++) {
		const xpf_plane *p;
		int rc = xpf_capture_plane(h->cap, i, &p, err);
		if (rc != XPF_OK)
			return rc;
		xpf_buf_printf(out, "%zu\t%lld\t", i, (long long)p->id);
		xpf_buf_tsv(out, p->name);
		xpf_buf_printf(out, "\t%zu\t%llu\t%zu\t%zu\t%llu\n", p->nlines,
			       (unsigned long long)p->nevents, p->n_event_md, p->n_stat_md,
			       (unsigned long long)p->length);
	}
	return XPF_OK;
}

static void put_text_stat(const xpf_plane *p, const char *name, xpf_buf *out, xpf_error *err)
{
	xpf_stat st;
	xpf_str s;
	if (xpf_plane_stat(p, name, &st, err) == 1 && xpf_stat_text(&st, &s))
		xpf_buf_tsvn(out, s.p, s.n);
}

static void put_num_stat(const xpf_plane *p, const char *name, xpf_buf *out, xpf_error *err)
{
	xpf_stat st;
	uint64_t v;
	if (xpf_plane_stat(p, name, &st, err) == 1 && xpf_stat_u64(&st, &v))
		xpf_buf_printf(out, "%llu", (unsigned long long)v);
}

static int render_devices(xpf_host *h, const xpf_node *n, xpf_buf *out, xpf_error *err)
{
	xpf_buf_adds(out,
		     "plane\tname\tdevice_name\tvendor\tmemory_bytes\tmemory_human\tcores\tcompute_capability\n");
	for (size_t i = 0; i < xpf_capture_nplanes(h->cap); i++) {
		const xpf_plane_head *hd = xpf_capture_plane_head(h->cap, i);
		if (strncmp(hd->name, "/device:", 8) != 0)
			continue;
		const xpf_plane *p;
		int rc = xpf_capture_plane_meta(h->cap, i, &p, err); /* its stats only */
		if (rc != XPF_OK)
			return rc;
		xpf_error e2 = { 0 };
		xpf_buf_printf(out, "%zu\t", i);
		xpf_buf_tsv(out, p->name);
		xpf_buf_addc(out, '\t');
		xpf_str dn;
		if (xpf_diag_device_name(p, &dn, &e2))
			xpf_buf_tsvn(out, dn.p, dn.n);
		xpf_buf_addc(out, '\t');
		put_text_stat(p, "device_vendor", out, &e2);
		xpf_buf_addc(out, '\t');
		xpf_stat st;
		uint64_t mem;
		if (xpf_plane_stat(p, "memory_size", &st, &e2) == 1 && xpf_stat_u64(&st, &mem)) {
			char hb[32];
			xpf_buf_printf(out, "%llu\t%s", (unsigned long long)mem, xpf_human(mem, hb));
		} else {
			xpf_buf_addc(out, '\t');
		}
		xpf_buf_addc(out, '\t');
		put_num_stat(p, "core_count", out, &e2);
		xpf_buf_addc(out, '\t');
		uint64_t ma, mi;
		if (xpf_plane_stat(p, "compute_cap_major", &st, &e2) == 1 && xpf_stat_u64(&st, &ma) &&
		    xpf_plane_stat(p, "compute_cap_minor", &st, &e2) == 1 && xpf_stat_u64(&st, &mi))
			xpf_buf_printf(out, "%llu.%llu", (unsigned long long)ma,
				       (unsigned long long)mi);
		xpf_buf_addc(out, '\n');
		if (e2.code != XPF_OK) {
			*err = e2;
			return e2.code;
		}
	}
	return XPF_OK;
}

/* errors.txt once the capture changed under us (SPEC §6). */
static int changed_errors(xpf_capture *c, xpf_buf *out)
{
	xpf_buf_reset(out);
	xpf_buf_adds(out, "# The capture's own errors and warnings (XSpace), then what xplanefs found\n"
			  "# decoding every plane, event, stat and module.\n"
			  "capture changed: ");
	xpf_buf_text(out, xpf_capture_label(c));
	xpf_buf_adds(out,
		     " changed while mounted (rewritten, truncated, touched or replaced); files made before keep their bytes, the others give EIO; unmount and mount it again\n");
	return XPF_OK;
}

static int render_errors(xpf_host *h, const xpf_node *n, xpf_buf *out, xpf_error *err)
{
	xpf_capture *c = h->cap;
	if (xpf_capture_changed(c)) /* its bytes are gone: decode nothing */
		return changed_errors(c, out);
	xpf_buf_adds(out, "# The capture's own errors and warnings (XSpace), then what xplanefs found\n"
			  "# decoding every plane, event, stat and module.\n");
	for (size_t i = 0; i < xpf_capture_nstrings(c, 2); i++) {
		xpf_buf_adds(out, "capture error: ");
		xpf_buf_tsv(out, xpf_capture_string(c, 2, i));
		xpf_buf_addc(out, '\n');
	}
	for (size_t i = 0; i < xpf_capture_nstrings(c, 3); i++) {
		xpf_buf_adds(out, "capture warning: ");
		xpf_buf_tsv(out, xpf_capture_string(c, 3, i));
		xpf_buf_addc(out, '\n');
	}
	xpf_error e2 = { 0 };
	if (xpf_capture_validate(c, &e2) != XPF_OK) {
		xpf_buf_adds(out, "decoder error: ");
		xpf_buf_text(out, e2.msg);
		xpf_buf_addc(out, '\n');
	} else {
		xpf_buf_adds(out, "decoder: every plane, event, stat and module decodes\n");
	}
	/* Failures of modules decoded separately (each module's plan). */
	for (size_t m = 0; m < xpf_capture_nmodules(c); m++) {
		xpf_error e3 = { 0 };
		if (xpf_capture_module_check(c, m, &e3) != XPF_OK && strcmp(e3.msg, e2.msg) != 0) {
			xpf_buf_adds(out, "decoder error: ");
			xpf_buf_text(out, e3.msg);
			xpf_buf_addc(out, '\n');
		}
	}
	/* The analyses that files depend on: computed now (once, cached), so
	 * that this file names every part that gives EIO, whichever file is
	 * read first. */
	for (size_t m = 0; m < h->nmodules; m++) {
		const xpf_plan *pl;
		xpf_error e3 = { 0 };
		if (xpf_host_plan(h, m, &pl, &e3) != XPF_OK) {
			xpf_buf_adds(out, "plan error: modules/");
			xpf_buf_tsv(out, h->module_dirs[m]);
			xpf_buf_adds(out, ": ");
			xpf_buf_text(out, e3.msg);
			xpf_buf_addc(out, '\n');
		}
	}
	if (!xpf_capture_is_hlo_only(c)) {
		const xpf_runtime *rt;
		xpf_error e4 = { 0 };
		if (xpf_host_runtime(h, &rt, &e4) != XPF_OK) {
			xpf_buf_adds(out, "runtime error: runtime/: ");
			xpf_buf_text(out, e4.msg);
			xpf_buf_addc(out, '\n');
		}
	}
	if (h->nmodules || !xpf_capture_is_hlo_only(c)) {
		const xpf_diagnosis *d;
		xpf_error e5 = { 0 };
		if (xpf_host_diagnosis(h, &d, &e5) != XPF_OK) {
			xpf_buf_adds(out, "diagnosis error: diagnosis.txt: ");
			xpf_buf_text(out, e5.msg);
			xpf_buf_addc(out, '\n');
		} else if (d->between_error.code != XPF_OK) {
			xpf_buf_adds(out, "runtime error: runtime/between.tsv: ");
			xpf_buf_tsv(out, d->between_error.msg);
			xpf_buf_addc(out, '\n');
		}
	}
	(void)err;
	if (xpf_capture_changed(c)) /* it changed while we decoded */
		return changed_errors(c, out);
	return XPF_OK;
}

void xpf_tree_capture(xpf_host *h, xpf_node *dir)
{
	xpf_node_file(dir, XPF_F_PLANES_TSV, render_planes, 0);
	xpf_node_file(dir, XPF_F_DEVICES_TSV, render_devices, 0);
	xpf_node_file(dir, XPF_F_ERRORS_TXT, render_errors, 0)->after_change = true;
}
