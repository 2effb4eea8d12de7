/* plan.json and summary.txt: the same figures, for programs and for people
 * (SPEC §4.1).  Every figure is tagged: read (stored in the plan, or
 * computed exactly from it: sums, the replayed heap-simulator trace) or
 * inferred (roles and duplicates: heuristics on names). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tree/render/render.h"
#include "tree/render/json_text.h"

static json_t *jbytes(uint64_t v)
{
	return json_integer((json_int_t)(v > INT64_MAX ? INT64_MAX : v));
}

static json_t *jpct(uint64_t part, uint64_t whole)
{
	char pc[32];
	return json_real(atof(xpf_pct(part, whole, pc)));
}

static json_t *jstr(const char *s) { return xpf_json_text(s); }

static const char *instr_or_empty(const xpf_plan_buffer *b)
{
	return b && b->instr ? b->instr->name : "";
}

static json_t *peak_row(const xpf_plan *p, size_t i)
{
	const xpf_plan_peak *r = &p->peak[i];
	const xpf_plan_buffer *b = r->buffer;
	const xpf_plan_instr *in = b ? b->instr : NULL;
	char hb[32];
	json_t *o = json_object();
	json_object_set_new(o, "rank", json_integer((json_int_t)i + 1));
	json_object_set_new(o, "bytes", jbytes(r->bytes));
	json_object_set_new(o, "human", jstr(xpf_human(r->bytes, hb)));
	json_object_set_new(o, "share_pct", jpct(r->bytes, p->heap_peak_bytes));
	json_object_set_new(o, "kind", jstr(xpf_kind_name(r->kind)));
	json_object_set_new(o, "role", jstr(xpf_role_name(r->role)));
	json_object_set_new(o, "dtype", jstr(b ? b->dtype : ""));
	json_object_set_new(o, "shape", jstr(b ? b->shape : ""));
	json_object_set_new(o, "instruction", jstr(in ? in->name : ""));
	json_object_set_new(o, "opcode", jstr(in ? in->opcode : ""));
	json_object_set_new(o, "op_name", jstr(in ? in->op_name : ""));
	json_object_set_new(o, "source", jstr(in ? in->source : ""));
	json_object_set_new(o, "allocation", r->alloc ? json_integer(r->alloc->index) : json_null());
	json_object_set_new(o, "offset", jbytes(r->offset));
	json_object_set_new(o, "logical_buffer", b ? json_integer(b->id) : json_null());
	return o;
}

static json_t *kinds_obj(const uint64_t *bytes, const size_t *count)
{
	json_t *o = json_object();
	for (int k = 0; k < XPF_NKINDS; k++) {
		json_t *e = json_object();
		json_object_set_new(e, "bytes", jbytes(bytes[k]));
		if (count)
			json_object_set_new(e, "count", json_integer((json_int_t)count[k]));
		json_object_set_new(o, xpf_kind_name(k), e);
	}
	return o;
}

static void set_tags(json_t *root)
{
	static const char *const read_keys[] = {
		"total_bytes",        "kinds",      "colors",
		"parameters",         "outputs",    "constants_bytes",
		"thread_local_bytes", "host_bytes", "temp",
		"heap_peak",          "need_bytes", "remat_instructions",
		"peak_buffers",
	};
	json_t *t = json_object();
	for (size_t i = 0; i < sizeof read_keys / sizeof read_keys[0]; i++)
		json_object_set_new(t, read_keys[i], json_string("read"));
	json_object_set_new(t, "heap_peak.roles", json_string("inferred"));
	json_object_set_new(t, "peak_buffers.role", json_string("inferred"));
	json_object_set_new(t, "outputs.reusable_bytes", json_string("inferred"));
	json_object_set_new(t, "duplicates", json_string("inferred"));
	json_object_set_new(root, "tags", t);
}

/* One entry per memory colour, with its kinds. */
static json_t *colors_arr(const xpf_plan *p)
{
	json_t *cols = json_array();
	for (size_t i = 0; i < p->ncolors; i++) {
		const xpf_plan_color *c = &p->colors[i];
		json_t *e = json_object();
		json_object_set_new(e, "color", json_integer(c->color));
		json_object_set_new(e, "memory", jstr(c->what));
		/* counted in parameters, outputs, temp, need and the heap peak */
		json_object_set_new(e, "device_figures",
				    json_boolean(xpf_plan_device_color(p, c->color)));
		json_object_set_new(e, "bytes", jbytes(c->bytes));
		json_object_set_new(e, "allocations", json_integer((json_int_t)c->nallocs));
		json_object_set_new(e, "kinds", kinds_obj(c->kind_bytes, NULL));
		json_array_append_new(cols, e);
	}
	return cols;
}

/* "parameters", "outputs" and "temp". */
static void set_params_outputs_temp(json_t *o, const xpf_plan *p)
{
	json_t *pa = json_object();
	json_object_set_new(pa, "bytes", jbytes(p->parameters_bytes));
	json_object_set_new(pa, "count", json_integer((json_int_t)p->parameters_count));
	json_object_set_new(pa, "donated_bytes", jbytes(p->donated_bytes));
	json_object_set_new(pa, "donated_count", json_integer((json_int_t)p->donated_count));
	json_object_set_new(pa, "donor_only_bytes", jbytes(p->donor_only_bytes));
	json_object_set_new(pa, "donor_only_count", json_integer((json_int_t)p->donor_only_count));
	json_object_set_new(o, "parameters", pa);

	json_t *ou = json_object();
	json_object_set_new(ou, "bytes", jbytes(p->outputs_bytes));
	json_object_set_new(ou, "non_aliased_bytes", jbytes(p->non_aliased_outputs_bytes));
	json_object_set_new(ou, "reusable_bytes", jbytes(p->matching_output_bytes));
	json_object_set_new(o, "outputs", ou);

	json_t *te = json_object();
	json_object_set_new(te, "bytes", jbytes(p->temp_bytes));
	json_object_set_new(te, "heap_peak_bytes", jbytes(p->simulated_peak_bytes));
	json_object_set_new(te, "fragmentation_bytes", jbytes(p->fragmentation_bytes));
	json_object_set_new(te, "simulated", json_boolean(p->simulated));
	json_object_set_new(te, "traces", json_integer((json_int_t)p->ntraces));
	json_object_set_new(o, "temp", te);
}

static json_t *heap_peak_obj(const xpf_plan *p)
{
	json_t *hp = json_object();
	json_object_set_new(hp, "bytes", jbytes(p->heap_peak_bytes));
	json_object_set_new(hp, "unpadded_bytes", jbytes(p->heap_peak_unpadded_bytes));
	json_object_set_new(hp, "indefinite_bytes", jbytes(p->indefinite_bytes));
	json_object_set_new(hp, "position",
			    p->peak_position >= 0 ? json_integer(p->peak_position) : json_null());
	json_object_set_new(hp, "instruction", jstr(p->peak_instruction));
	json_t *roles = json_object();
	for (int r = 0; r < XPF_NROLES; r++) {
		json_t *e = json_object();
		json_object_set_new(e, "bytes", jbytes(p->role_bytes[r]));
		json_object_set_new(e, "pct", jpct(p->role_bytes[r], p->heap_peak_bytes));
		json_object_set_new(roles, xpf_role_name(r), e);
	}
	json_object_set_new(hp, "roles", roles);
	return hp;
}

static json_t *duplicates_obj(const xpf_plan *p)
{
	json_t *du = json_object();
	json_object_set_new(du, "layout_at_peak_bytes", jbytes(p->layout_dup_peak_bytes));
	json_object_set_new(du, "convert_at_peak_bytes", jbytes(p->convert_dup_peak_bytes));
	json_t *list = json_array();
	for (size_t i = 0; i < p->ndups; i++) {
		const xpf_plan_dup *d = &p->dups[i];
		json_t *e = json_object();
		json_object_set_new(e, "kind",
				    xpf_json_text(d->kind == XPF_DUP_LAYOUT ? "layout" : "convert"));
		json_object_set_new(e, "instruction", jstr(instr_or_empty(d->buffer)));
		json_object_set_new(e, "bytes", jbytes(d->buffer->bytes));
		json_object_set_new(e, "parameter", json_integer(d->param->number));
		json_object_set_new(e, "parameter_shape_index", jstr(d->param->shape_index));
		json_object_set_new(e, "at_peak", json_boolean(d->at_peak));
		json_array_append_new(list, e);
	}
	json_object_set_new(du, "buffers", list);
	return du;
}

static json_t *plan_obj(const xpf_plan *p)
{
	char id[32];
	json_t *o = json_object();
	snprintf(id, sizeof id, "%llu", (unsigned long long)p->program_id);
	json_object_set_new(o, "module", jstr(p->module));
	json_object_set_new(o, "hlo_module", jstr(p->hlo_name));
	json_object_set_new(o, "program_id", xpf_json_text(id));
	json_object_set_new(o, "buffer_assignment", json_boolean(p->has_assignment));
	json_object_set_new(o, "remat_instructions", json_integer((json_int_t)p->remat_instructions));
	json_object_set_new(o, "instructions", json_integer((json_int_t)p->ninstrs));
	if (!p->has_assignment) {
		json_object_set_new(o, "missing", jstr(p->missing));
		return o;
	}
	json_object_set_new(o, "allocations", json_integer((json_int_t)p->nallocs));
	json_object_set_new(o, "logical_buffers", json_integer((json_int_t)p->nbuffers));
	json_object_set_new(o, "total_bytes", jbytes(p->total_bytes));
	json_object_set_new(o, "kinds", kinds_obj(p->kind_bytes, p->kind_count));
	json_object_set_new(o, "colors", colors_arr(p));
	set_params_outputs_temp(o, p);
	json_object_set_new(o, "constants_bytes", jbytes(p->constants_bytes));
	json_object_set_new(o, "thread_local_bytes", jbytes(p->thread_local_bytes));
	json_object_set_new(o, "host_bytes", jbytes(p->host_bytes));
	json_object_set_new(o, "heap_peak", heap_peak_obj(p));
	json_object_set_new(o, "need_bytes", jbytes(p->need_bytes));
	json_object_set_new(o, "duplicates", duplicates_obj(p));
	json_t *pb = json_array();
	for (size_t i = 0; i < p->npeak; i++)
		json_array_append_new(pb, peak_row(p, i));
	json_object_set_new(o, "peak_buffers", pb);
	set_tags(o);
	return o;
}

int xpf_plan_json(const xpf_plan *p, xpf_buf *out, xpf_error *err)
{
	json_t *o = plan_obj(p);
	char *s = json_dumps(o, JSON_SORT_KEYS | JSON_INDENT(2) | JSON_REAL_PRECISION(4));
	json_decref(o);
	if (s == NULL)
		return xpf_fail(err, XPF_EMALFORMED, "module '%s': cannot write plan.json",
				p->module);
	xpf_buf_adds(out, s);
	xpf_buf_addc(out, '\n');
	free(s);
	return XPF_OK;
}

/* ---- summary.txt ------------------------------------------------------ */

static void line(xpf_buf *out, const char *what, uint64_t bytes, const char *tag, const char *more)
{
	char hb[32];
	xpf_buf_printf(out, "  %-28s %16llu  %-10s  [%s]%s%s\n", what, (unsigned long long)bytes,
		       xpf_human(bytes, hb), tag, more && more[0] ? "  " : "", more ? more : "");
}

/* The buffer assignment by memory colour and by kind. */
static void summary_colors_kinds(const xpf_plan *p, xpf_buf *out)
{
	char hb[32], more[256];
	xpf_buf_printf(out,
		       "buffer assignment: %zu allocations, %zu logical buffers, "
		       "%llu bytes (%s) in all colours [read]\n\n",
		       p->nallocs, p->nbuffers, (unsigned long long)p->total_bytes,
		       xpf_human(p->total_bytes, hb));
	xpf_buf_adds(out, "memory colours:\n");
	for (size_t i = 0; i < p->ncolors; i++) {
		char what[64];
		snprintf(what, sizeof what, "colour %lld (%s)", (long long)p->colors[i].color,
			 p->colors[i].what);
		snprintf(more, sizeof more, "%zu allocations", p->colors[i].nallocs);
		line(out, what, p->colors[i].bytes, "read", more);
	}
	xpf_buf_adds(out, "kinds (all colours):\n");
	for (int k = 0; k < XPF_NKINDS; k++) {
		snprintf(more, sizeof more, "%zu allocations", p->kind_count[k]);
		line(out, xpf_kind_name(k), p->kind_bytes[k], "read", more);
	}
}

/* Device memory: what the module needs, and the heap. */
static void summary_device_heap(const xpf_plan *p, xpf_buf *out)
{
	char pc[32], more[256];
	xpf_buf more_name = XPF_BUF_INIT;
	xpf_buf_adds(out, "\ndevice memory (every colour but host memory, 5):\n");
	snprintf(more, sizeof more, "%zu allocations; donated %llu bytes in %zu",
		 p->parameters_count, (unsigned long long)p->donated_bytes, p->donated_count);
	line(out, "parameters", p->parameters_bytes, "read", more);
	if (p->donor_only_count) {
		snprintf(more, sizeof more, "%zu allocations", p->donor_only_count);
		line(out, "buffer donors without alias", p->donor_only_bytes, "read", more);
	}
	line(out, "outputs", p->outputs_bytes, "read", NULL);
	line(out, "non-aliased outputs", p->non_aliased_outputs_bytes, "read", "need new memory");
	line(out, "constants", p->constants_bytes, "read", NULL);
	line(out, "thread-local", p->thread_local_bytes, "read", NULL);
	line(out, "temp (planned block)", p->temp_bytes, "read", NULL);
	line(out, "need", p->need_bytes, "read",
	     "parameters + non-aliased outputs + temp + constants");
	if (p->host_bytes)
		line(out, "host memory (colour 5)", p->host_bytes, "read", NULL);

	xpf_buf_adds(out, "\nheap:\n");
	if (p->simulated) {
		snprintf(more, sizeof more, "%zu trace(s), %zu steps", p->ntraces, p->nsteps);
		line(out, "simulated temp peak", p->simulated_peak_bytes, "read", more);
	} else {
		line(out, "simulated temp peak", 0, "read", "no heap-simulator trace");
	}
	line(out, "indefinite allocations", p->indefinite_bytes, "read", NULL);
	xpf_buf at = XPF_BUF_INIT;
	if (p->peak_position >= 0)
		xpf_buf_printf(&at, "at step %ld (%s)", p->peak_position,
			       xpf_text_of(&more_name, p->peak_instruction));
	line(out, "heap peak", p->heap_peak_bytes, "read", at.data);
	xpf_buf_release(&at);
	line(out, "heap peak, unpadded", p->heap_peak_unpadded_bytes, "read", NULL);
	snprintf(more, sizeof more, "%s%% of the temp block",
		 xpf_pct(p->fragmentation_bytes, p->temp_bytes, pc));
	line(out, "temp fragmentation", p->fragmentation_bytes, "read", more);
	xpf_buf_release(&more_name);
}

/* The inferred part: roles at the peak, and hints. */
static void summary_roles_hints(const xpf_plan *p, xpf_buf *out)
{
	char pc[32], more[256];
	xpf_buf_adds(out, "\nroles at the heap peak:\n");
	for (int r = 0; r < XPF_NROLES; r++) {
		snprintf(more, sizeof more, "%s%%",
			 xpf_pct(p->role_bytes[r], p->heap_peak_bytes, pc));
		line(out, xpf_role_name(r), p->role_bytes[r], "inferred", more);
	}
	if (p->matching_output_bytes || p->layout_dup_peak_bytes || p->convert_dup_peak_bytes) {
		xpf_buf_adds(out, "\nhints:\n");
		if (p->matching_output_bytes)
			line(out, "outputs like undonated params", p->matching_output_bytes,
			     "inferred", "could reuse donated parameters");
		if (p->layout_dup_peak_bytes)
			line(out, "param layout copies at peak", p->layout_dup_peak_bytes,
			     "inferred", NULL);
		if (p->convert_dup_peak_bytes)
			line(out, "param dtype copies at peak", p->convert_dup_peak_bytes,
			     "inferred", NULL);
	}
}

/* The `top` largest buffers at the heap peak. */
static void summary_largest(const xpf_plan *p, int top, xpf_buf *out)
{
	char hb[32], pc[32];
	size_t n = p->npeak < (size_t)(top > 0 ? top : 0) ? p->npeak : (size_t)(top > 0 ? top : 0);
	xpf_buf_printf(out,
		       "\nlargest buffers at the heap peak (%zu of %zu; all in peak_buffers.tsv):\n",
		       n, p->npeak);
	for (size_t i = 0; i < n; i++) {
		const xpf_plan_peak *r = &p->peak[i];
		const xpf_plan_buffer *b = r->buffer;
		xpf_buf_printf(out, "  %3zu  %10s  %5s%%  %-9s %-9s ", i + 1,
			       xpf_human(r->bytes, hb), xpf_pct(r->bytes, p->heap_peak_bytes, pc),
			       xpf_kind_name(r->kind), xpf_role_name(r->role));
		xpf_buf_text(out, b && b->instr ? b->instr->name : "?");
		xpf_buf_addc(out, ' ');
		xpf_buf_text(out, b ? b->shape : "");
		if (b && b->instr && b->instr->source[0]) {
			xpf_buf_adds(out, "  ");
			xpf_buf_text(out, b->instr->source);
		}
		xpf_buf_addc(out, '\n');
	}
}

void xpf_plan_summary(const xpf_plan *p, int top, xpf_buf *out)
{
	xpf_buf n1 = XPF_BUF_INIT, n2 = XPF_BUF_INIT;
	xpf_buf_printf(out, "module %s (HLO module %s, program id %llu)\n",
		       xpf_text_of(&n1, p->module),
		       p->hlo_name[0] ? xpf_text_of(&n2, p->hlo_name) : "?",
		       (unsigned long long)p->program_id);
	xpf_buf_release(&n1);
	xpf_buf_release(&n2);
	xpf_buf_printf(out, "instructions: %zu, rematerialized by XLA: %zu [read]\n", p->ninstrs,
		       p->remat_instructions);
	if (!p->has_assignment) {
		xpf_buf_printf(out,
			       "no buffer assignment: %s.\n"
			       "Without it the plan (parameters, outputs, temp, heap peak) is unknown.\n",
			       p->missing);
		return;
	}
	summary_colors_kinds(p, out);
	summary_device_heap(p, out);
	summary_roles_hints(p, out);
	summary_largest(p, top, out);
}
