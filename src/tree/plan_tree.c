/* modules/: index.tsv and, per module, the files of its plan (SPEC §3,
 * §4.1, §4.2).  Directories and file nodes are made at once; a module's plan
 * is decoded only when one of its files is first rendered. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/paths.h"
#include "tree/report.h"
#include "analysis/plan/plan.h"
#include "tree/render/render.h"
#include "tree/render/pprof.h"
#include "analysis/runtime/runtime.h"
#include "tree/render/svg.h"

static int get_plan(xpf_host *h, long arg, const xpf_plan **p, xpf_error *err)
{
	return xpf_host_plan(h, (size_t)arg, p, err);
}

static int render_heap_svg(xpf_host *h, long arg, xpf_buf *out, xpf_error *err)
{
	const xpf_plan *p;
	int rc = get_plan(h, arg, &p, err);
	if (rc != XPF_OK)
		return rc;
	char what[128];
	xpf_svg_capacity cap = { xpf_module_pool(h, arg, what), NULL };
	cap.what = what[0] ? what : NULL;
	xpf_svg_heap(p, &cap, out);
	return XPF_OK;
}

/* The tables' header lines (SPEC §3, §4.2). */
static const char HDR_PEAK[] =
	"rank\tbytes\thuman\tshare_pct\tkind\trole\tdtype\tshape\tinstruction\topcode"
	"\top_name\tsource\tallocation\toffset\tlogical_buffer\n";
static const char HDR_BUFFERS[] =
	"logical_buffer\tbytes\tunpadded_bytes\tcolor\tallocation\toffset\tkind"
	"\tinstruction\tshape_index\topcode\tdtype\tshape\tstart_step\tend_step"
	"\top_name\tsource\n";
static const char HDR_ALLOCS[] =
	"index\tbytes\thuman\tkind\tcolor\tparameter_number\tparameter_shape_index"
	"\tdonated\tdonor_only\tmaybe_live_out\tis_tuple\tlogical_buffers"
	"\tlargest_instruction\n";
static const char HDR_HEAP[] = "step\tinstruction\tbytes\tunpadded_bytes\n";
static const char HDR_SOURCE[] = "source\tbytes\thuman\tshare_pct\tbuffers\n";

/* A module without buffer assignment still gets each table's header line
 * (SPEC §4: the first line is the header); why it is empty is said in its
 * summary.txt and plan.json. */
static bool say_missing(const xpf_plan *p, xpf_buf *out, const char *header)
{
	if (p->has_assignment)
		return false;
	xpf_buf_adds(out, header);
	return true;
}

static const char *instr_name(const xpf_plan_buffer *b)
{
	return b && b->instr ? b->instr->name : "";
}

/* ---- peak_buffers.tsv ------------------------------------------------- */

void xpf_plan_peak_row_tsv(const xpf_plan *p, size_t i, xpf_buf *out)
{
	const xpf_plan_peak *r = &p->peak[i];
	const xpf_plan_buffer *b = r->buffer;
	char hb[32], pc[32];
	xpf_buf_printf(out, "%zu\t%llu\t%s\t%s\t%s\t%s\t", i + 1, (unsigned long long)r->bytes,
		       xpf_human(r->bytes, hb), xpf_pct(r->bytes, p->heap_peak_bytes, pc),
		       xpf_kind_name(r->kind), xpf_role_name(r->role));
	xpf_buf_tsv(out, b ? b->dtype : "");
	xpf_buf_addc(out, '\t');
	xpf_buf_tsv(out, b ? b->shape : "");
	xpf_buf_addc(out, '\t');
	xpf_buf_tsv(out, instr_name(b));
	xpf_buf_addc(out, '\t');
	xpf_buf_tsv(out, b && b->instr ? b->instr->opcode : "");
	xpf_buf_addc(out, '\t');
	xpf_buf_tsv(out, b && b->instr ? b->instr->op_name : "");
	xpf_buf_addc(out, '\t');
	xpf_buf_tsv(out, b && b->instr ? b->instr->source : "");
	xpf_buf_addc(out, '\t');
	if (r->alloc)
		xpf_buf_printf(out, "%lld", (long long)r->alloc->index);
	xpf_buf_printf(out, "\t%llu\t", (unsigned long long)r->offset);
	if (b)
		xpf_buf_printf(out, "%lld", (long long)b->id);
	xpf_buf_addc(out, '\n');
}

static int render_peak(xpf_host *h, long arg, xpf_buf *out, xpf_error *err)
{
	const xpf_plan *p;
	int rc = get_plan(h, arg, &p, err);
	if (rc != XPF_OK)
		return rc;
	if (say_missing(p, out, HDR_PEAK))
		return XPF_OK;
	xpf_buf_adds(out, HDR_PEAK);
	for (size_t i = 0; i < p->npeak; i++)
		xpf_plan_peak_row_tsv(p, i, out);
	return XPF_OK;
}

/* ---- buffers.tsv, allocations.tsv, heap.tsv, instructions.tsv --------- */

static int render_buffers(xpf_host *h, long arg, xpf_buf *out, xpf_error *err)
{
	const xpf_plan *p;
	int rc = get_plan(h, arg, &p, err);
	if (rc != XPF_OK)
		return rc;
	if (say_missing(p, out, HDR_BUFFERS))
		return XPF_OK;
	xpf_buf_adds(out, HDR_BUFFERS);
	for (size_t i = 0; i < p->nbuffers; i++) {
		const xpf_plan_buffer *b = &p->buffers[i];
		const xpf_plan_alloc *al = b->alloc >= 0 ? &p->allocs[b->alloc] : NULL;
		xpf_buf_printf(out, "%lld\t%llu\t%llu\t%lld\t", (long long)b->id,
			       (unsigned long long)b->bytes, (unsigned long long)b->unpadded_bytes,
			       (long long)b->color);
		if (al)
			xpf_buf_printf(out, "%lld", (long long)al->index);
		xpf_buf_printf(out, "\t%llu\t%s\t", (unsigned long long)b->offset,
			       al ? xpf_kind_name(al->kind) : "");
		xpf_buf_tsv(out, instr_name(b));
		xpf_buf_addc(out, '\t');
		xpf_buf_tsv(out, b->shape_index);
		xpf_buf_addc(out, '\t');
		xpf_buf_tsv(out, b->instr ? b->instr->opcode : "");
		xpf_buf_addc(out, '\t');
		xpf_buf_tsv(out, b->dtype);
		xpf_buf_addc(out, '\t');
		xpf_buf_tsv(out, b->shape);
		xpf_buf_addc(out, '\t');
		if (b->start >= 0)
			xpf_buf_printf(out, "%ld\t%ld", b->start, b->end);
		else
			xpf_buf_addc(out, '\t');
		xpf_buf_addc(out, '\t');
		xpf_buf_tsv(out, b->instr ? b->instr->op_name : "");
		xpf_buf_addc(out, '\t');
		xpf_buf_tsv(out, b->instr ? b->instr->source : "");
		xpf_buf_addc(out, '\n');
	}
	return XPF_OK;
}

static int render_allocs(xpf_host *h, long arg, xpf_buf *out, xpf_error *err)
{
	const xpf_plan *p;
	int rc = get_plan(h, arg, &p, err);
	if (rc != XPF_OK)
		return rc;
	if (say_missing(p, out, HDR_ALLOCS))
		return XPF_OK;
	xpf_buf_adds(out, HDR_ALLOCS);
	for (size_t i = 0; i < p->nallocs; i++) {
		const xpf_plan_alloc *a = &p->allocs[i];
		char hb[32];
		xpf_buf_printf(out, "%lld\t%llu\t%s\t%s\t%lld\t", (long long)a->index,
			       (unsigned long long)a->bytes, xpf_human(a->bytes, hb),
			       xpf_kind_name(a->kind), (long long)a->color);
		if (a->is_parameter)
			xpf_buf_printf(out, "%lld", (long long)a->parameter_number);
		xpf_buf_addc(out, '\t');
		xpf_buf_tsv(out, a->parameter_shape_index);
		xpf_buf_printf(out, "\t%s\t%s\t%s\t%s\t%zu\t",
			       a->is_parameter ? (a->donated ? "yes" : "no") : "",
			       a->is_parameter ? (a->donor_only ? "yes" : "no") : "",
			       a->maybe_live_out ? "yes" : "no", a->is_tuple ? "yes" : "no",
			       a->nbuffers);
		xpf_buf_tsv(out, a->largest >= 0 ? instr_name(&p->buffers[a->largest]) : "");
		xpf_buf_addc(out, '\n');
	}
	return XPF_OK;
}

static int render_heap(xpf_host *h, long arg, xpf_buf *out, xpf_error *err)
{
	const xpf_plan *p;
	int rc = get_plan(h, arg, &p, err);
	if (rc != XPF_OK)
		return rc;
	if (say_missing(p, out, HDR_HEAP))
		return XPF_OK;
	xpf_buf_adds(out, HDR_HEAP);
	if (!p->simulated) /* only indefinite allocations: summary.txt says so */
		return XPF_OK;
	for (size_t i = 0; i < p->nsteps; i++) {
		xpf_buf_printf(out, "%zu\t", i);
		xpf_buf_tsv(out, p->steps[i].instruction);
		xpf_buf_printf(out, "\t%llu\t%llu\n", (unsigned long long)p->steps[i].bytes,
			       (unsigned long long)p->steps[i].unpadded_bytes);
	}
	return XPF_OK;
}

static int render_instrs(xpf_host *h, long arg, xpf_buf *out, xpf_error *err)
{
	const xpf_plan *p;
	int rc = get_plan(h, arg, &p, err);
	if (rc != XPF_OK)
		return rc;
	if (p->ninstrs == 0) {
		xpf_buf_printf(out, "module %s has no HLO instructions in this capture: %s.\n",
			       p->module, p->missing[0] ? p->missing : "the module is empty");
		return XPF_OK;
	}
	xpf_buf_adds(out, "computation\tid\tname\topcode\tshape\top_name\tsource\n");
	for (size_t i = 0; i < p->ninstrs; i++) {
		const xpf_plan_instr *x = &p->instrs[i];
		xpf_buf_tsv(out, x->computation);
		xpf_buf_printf(out, "\t%lld\t", (long long)x->id);
		xpf_buf_tsv(out, x->name);
		xpf_buf_addc(out, '\t');
		xpf_buf_tsv(out, x->opcode);
		xpf_buf_addc(out, '\t');
		xpf_buf_tsv(out, x->shape);
		xpf_buf_addc(out, '\t');
		xpf_buf_tsv(out, x->op_name);
		xpf_buf_addc(out, '\t');
		xpf_buf_tsv(out, x->source);
		xpf_buf_addc(out, '\n');
	}
	return XPF_OK;
}

/* ---- by_source.tsv ---------------------------------------------------- */

typedef struct src_row {
	const char *source;
	uint64_t bytes;
	size_t buffers;
} src_row;

static int cmp_src(const void *a, const void *b)
{
	const src_row *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return strcmp(x->source, y->source);
}

static int cmp_src_name(const void *a, const void *b)
{
	return strcmp(((const src_row *)a)->source, ((const src_row *)b)->source);
}

static int render_by_source(xpf_host *h, long arg, xpf_buf *out, xpf_error *err)
{
	const xpf_plan *p;
	int rc = get_plan(h, arg, &p, err);
	if (rc != XPF_OK)
		return rc;
	if (say_missing(p, out, HDR_SOURCE))
		return XPF_OK;
	src_row *rows = calloc(p->npeak ? p->npeak : 1, sizeof *rows);
	size_t nrows = 0;
	if (rows == NULL)
		abort();
	/* one row per peak buffer, sorted by source, then each source's rows
	 * summed into its first */
	for (size_t i = 0; i < p->npeak; i++) {
		const xpf_plan_buffer *b = p->peak[i].buffer;
		rows[i] = (src_row){ b && b->instr ? b->instr->source : "", p->peak[i].bytes, 1 };
	}
	xpf_qsort(rows, p->npeak, sizeof *rows, cmp_src_name);
	for (size_t i = 0; i < p->npeak; i++) {
		if (nrows && strcmp(rows[nrows - 1].source, rows[i].source) == 0) {
			rows[nrows - 1].bytes += rows[i].bytes;
			rows[nrows - 1].buffers++;
		} else {
			rows[nrows++] = rows[i];
		}
	}
	xpf_qsort(rows, nrows, sizeof *rows, cmp_src);
	xpf_buf_adds(out, HDR_SOURCE);
	for (size_t k = 0; k < nrows; k++) {
		char hb[32], pc[32];
		xpf_buf_tsv(out, rows[k].source);
		xpf_buf_printf(out, "\t%llu\t%s\t%s\t%zu\n", (unsigned long long)rows[k].bytes,
			       xpf_human(rows[k].bytes, hb),
			       xpf_pct(rows[k].bytes, p->heap_peak_bytes, pc), rows[k].buffers);
	}
	free(rows);
	return XPF_OK;
}

/* ---- plan.json, summary.txt ------------------------------------------- */

static int render_json(xpf_host *h, long arg, xpf_buf *out, xpf_error *err)
{
	const xpf_plan *p;
	int rc = get_plan(h, arg, &p, err);
	if (rc != XPF_OK)
		return rc;
	return xpf_plan_json(p, out, err);
}

static int render_summary(xpf_host *h, long arg, xpf_buf *out, xpf_error *err)
{
	const xpf_plan *p;
	int rc = get_plan(h, arg, &p, err);
	if (rc != XPF_OK)
		return rc;
	xpf_plan_summary(p, h->opt ? h->opt->top : 25, out);
	return XPF_OK;
}

/* ---- index.tsv -------------------------------------------------------- */

/* Executions per module from the runtime (SPEC §4.3); NULL when the
 * capture has no allocator/execution events or the runtime failed (then
 * the column stays empty and capture/errors.txt says why). */
static size_t *count_executions(xpf_host *h)
{
	const xpf_runtime *rt = NULL;
	xpf_error e = { 0 };
	if (xpf_capture_is_hlo_only(h->cap))
		return NULL;
	if (xpf_host_runtime(h, &rt, &e) != XPF_OK) {
		xpf_host_note_error(h, &e);
		return NULL;
	}
	if (!rt->has_host_plane)
		return NULL;
	size_t *n = calloc(h->nmodules ? h->nmodules : 1, sizeof *n);
	if (n == NULL)
		abort();
	for (size_t i = 0; i < rt->nexecutions; i++) {
		long m = rt->executions[i].module;
		if (m >= 0 && (size_t)m < h->nmodules)
			n[m]++;
	}
	return n;
}

static int render_index(xpf_host *h, long arg, xpf_buf *out, xpf_error *err)
{
	size_t *execs = count_executions(h);
	xpf_buf_adds(out, "dir\tname\tprogram_id\tparameters_bytes\tdonated_bytes\toutputs_bytes"
			  "\tnon_aliased_outputs_bytes\ttemp_bytes\theap_peak_bytes\tneed_bytes"
			  "\texecutions\n");
	for (size_t m = 0; m < h->nmodules; m++) {
		const xpf_module_ref *ref = xpf_capture_module(h->cap, m);
		const xpf_plan *p = NULL;
		xpf_error e = { 0 };
		if (xpf_host_plan(h, m, &p, &e) != XPF_OK) {
			xpf_host_note_error(h, &e);
			p = NULL;
		}
		xpf_buf_tsv(out, h->module_dirs[m]);
		xpf_buf_addc(out, '\t');
		xpf_buf_tsv(out, ref->name);
		xpf_buf_printf(out, "\t%llu\t", (unsigned long long)ref->program_id);
		if (p && p->has_assignment)
			xpf_buf_printf(out, "%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t",
				       (unsigned long long)p->parameters_bytes,
				       (unsigned long long)p->donated_bytes,
				       (unsigned long long)p->outputs_bytes,
				       (unsigned long long)p->non_aliased_outputs_bytes,
				       (unsigned long long)p->temp_bytes,
				       (unsigned long long)p->heap_peak_bytes,
				       (unsigned long long)p->need_bytes);
		else
			xpf_buf_adds(out, "\t\t\t\t\t\t\t");
		if (execs)
			xpf_buf_printf(out, "%zu", execs[m]);
		xpf_buf_addc(out, '\n');
	}
	free(execs);
	(void)err;
	return XPF_OK;
}

void xpf_tree_modules(xpf_host *h, xpf_node *dir)
{
	static const struct {
		const char *name;
		xpf_content_fn fn;
	} files[] = {
		{ XPF_F_PLAN_JSON, render_json },
		{ XPF_F_SUMMARY_TXT, render_summary },
		{ XPF_F_PEAK_BUFFERS_TSV, render_peak },
		{ XPF_F_BUFFERS_TSV, render_buffers },
		{ XPF_F_ALLOCATIONS_TSV, render_allocs },
		{ XPF_F_HEAP_TSV, render_heap },
		{ XPF_F_HEAP_SVG, render_heap_svg },
		{ XPF_F_BY_SOURCE_TSV, render_by_source },
		{ XPF_F_INSTRUCTIONS_TSV, render_instrs },
		{ XPF_F_PEAK_PB_GZ, xpf_render_peak_pprof },
	};
	xpf_node_file_of(dir, XPF_F_INDEX_TSV, render_index, 0);
	for (size_t m = 0; m < h->nmodules; m++) {
		xpf_node *d = xpf_node_dir(dir, h->module_dirs[m], NULL, (long)m);
		for (size_t f = 0; f < sizeof files / sizeof files[0]; f++)
			xpf_node_file_of(d, files[f].name, files[f].fn, (long)m);
	}
}
