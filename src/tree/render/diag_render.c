/* diagnosis.txt, diagnosis.json, summary.txt, checks.txt: renderings of the
 * host's diagnosis (computed once, see diagnosis.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tree/render/render.h"
#include "common/alloc.h"
#include "tree/render/json_text.h"

static const char *module_name(xpf_host *h, long m)
{
	return m >= 0 ? xpf_capture_module(h->cap, (size_t)m)->name : NULL;
}

size_t xpf_diag_clause_len(const char *text)
{
	int depth = 0;
	bool quoted = false;
	for (const char *c = text; *c; c++) {
		if (*c == '"')
			quoted = !quoted;
		else if (!quoted && (*c == '(' || *c == '['))
			depth++;
		else if (!quoted && (*c == ')' || *c == ']') && depth > 0)
			depth--;
		else if (!quoted && depth == 0 && c[0] == ';' && c[1] == ' ')
			return (size_t)(c - text);
	}
	return strlen(text);
}

/* SPEC 5.3 (readable): no line of diagnosis.txt wider than this but the
 * evidence lists; a longer clause (a list of figures, a long name) goes on
 * on lines of its own, indented deeper. */
#define DIAG_WIDTH 160

/* Where to cut the n bytes of s so that the part before fits width: after
 * the last ", " outside parentheses, brackets and quotes, else ": ", else
 * " ", else ", " or " " at any depth; 0 when no cut fits. */
static size_t wrap_at(const char *s, size_t n, size_t width)
{
	size_t best[5] = { 0 };
	int depth = 0;
	bool quoted = false;
	for (size_t i = 0; i + 1 < n && i < width; i++) {
		char c = s[i];
		if (c == '"')
			quoted = !quoted;
		else if (!quoted && (c == '(' || c == '['))
			depth++;
		else if (!quoted && (c == ')' || c == ']') && depth > 0)
			depth--;
		bool top = depth == 0 && !quoted;
		if (s[i + 1] != ' ')
			continue;
		if (c == ',')
			best[top ? 0 : 3] = i + 1;
		else if (c == ':' && top)
			best[1] = i + 1;
		if (c != ' ')
			best[top ? 2 : 4] = i + 1;
	}
	for (int k = 0; k < 5; k++)
		if (best[k] > width / 3)
			return best[k];
	return 0;
}

/* The n bytes of s, starting at column col: wrapped at DIAG_WIDTH onto
 * lines indented by indent and eight spaces. */
static void put_wrapped(xpf_buf *out, const char *s, size_t n, size_t col, const char *indent)
{
	for (;;) {
		size_t cut = col + n > DIAG_WIDTH ?
				     wrap_at(s, n, DIAG_WIDTH > col ? DIAG_WIDTH - col : 0) :
				     0;
		char *part = xpf_strndup(s, cut ? cut : n);
		xpf_buf_text(out, part);
		free(part);
		if (cut == 0)
			return;
		xpf_buf_printf(out, "\n%s        ", indent);
		col = strlen(indent) + 8;
		while (cut < n && s[cut] == ' ')
			cut++;
		s += cut;
		n -= cut;
	}
}

/* One header line: prefix and b's text (then reset), wrapped. */
static void header_line(xpf_buf *out, xpf_buf *b, const char *prefix)
{
	xpf_buf_adds(out, prefix);
	put_wrapped(out, b->data, b->len, strlen(prefix), "#");
	xpf_buf_addc(out, '\n');
	xpf_buf_reset(b);
}

/* The header: what was read, the focus and the capacity, each on a
 * comment line of its own (wrapped like the findings). */
static void header(xpf_host *h, const xpf_diagnosis *d, xpf_buf *out)
{
	char h1[32], h2[32], pc[32];
	xpf_buf b = XPF_BUF_INIT;
	xpf_buf_printf(&b, "%s", xpf_capture_label(h->cap));
	if (d->module >= 0)
		xpf_buf_printf(&b, ": focus %s (%s)", module_name(h, d->module), d->module_why);
	header_line(out, &b, "# ");
	if (d->capacity_bytes) {
		xpf_buf_printf(&b, "capacity %s [%s] from %s", xpf_human(d->capacity_bytes, h1),
			       xpf_tag_name(d->capacity_tag), d->capacity_source);
		header_line(out, &b, "# ");
	}
	if (d->fraction_set) {
		xpf_buf_printf(&b, "that is %s%% of the device's %s, not JAX's default 75%%: %s",
			       xpf_pct(d->capacity_bytes, d->memory_bytes, pc),
			       xpf_human(d->memory_bytes, h2),
			       h->nmodules ?
				       "the memory fraction is set" :
				       "the memory fraction is set (or TensorFlow, which sizes its pool itself)");
		header_line(out, &b, "#     ");
	}
	xpf_buf_release(&b);
}

/* text's first clause where the line is (at column col), each further one
 * on a line of its own, indented by indent and four spaces (escaped: a
 * clause stays one line, or wraps, see put_wrapped). */
static void clauses(const char *t, size_t col, const char *indent, xpf_buf *out)
{
	size_t n = xpf_diag_clause_len(t);
	for (bool first = true;; first = false) {
		if (!first) {
			xpf_buf_printf(out, "\n%s    ", indent);
			col = strlen(indent) + 4;
		}
		put_wrapped(out, t, n, col, indent);
		if (t[n] == '\0')
			return;
		t += n + 2; /* past "; " */
		n = xpf_diag_clause_len(t);
	}
}

/* A fix of f: its text's clauses, its saving and cost (indent: f's). */
static void fix_lines(const xpf_diag_fix *x, const char *indent, xpf_buf *out)
{
	char h1[32], h2[32], deeper[64];
	size_t mark;
	snprintf(deeper, sizeof deeper, "%s    ", indent);
	xpf_buf_printf(out, "%s    [inferred] fix: ", indent);
	clauses(x->text, strlen(deeper) + strlen("[inferred] fix: "), deeper, out);
	mark = out->len;
	if (x->saving_max_bytes) /* an estimate's range */
		xpf_buf_printf(out, "\n%s        saves %s to %s (%llu to %llu bytes); cost: ", indent,
			       xpf_human(x->saving_bytes, h1), xpf_human(x->saving_max_bytes, h2),
			       (unsigned long long)x->saving_bytes,
			       (unsigned long long)x->saving_max_bytes);
	else if (x->saving_bytes) /* a fix that saves nothing says what it does in its text */
		xpf_buf_printf(out, "\n%s        saves %s (%llu bytes); cost: ", indent,
			       xpf_human(x->saving_bytes, h1), (unsigned long long)x->saving_bytes);
	else
		xpf_buf_printf(out, "\n%s        cost: ", indent);
	put_wrapped(out, x->cost, strlen(x->cost), out->len - mark - 1, deeper);
	xpf_buf_addc(out, '\n');
}

/* SPEC 5.3 (readable): the finding's first clause on its line (so grep
 * CODE finds the sentence that matters), each further clause and the
 * evidence on indented lines below, then the fixes; a fix that comes after
 * the program fixes (the memory fraction) only when last is set. */
static void finding_lines(const xpf_finding *f, xpf_buf *out, const char *indent, bool last)
{
	size_t mark = out->len;
	xpf_buf_printf(out, "%s[%s] %s: ", indent, xpf_tag_name(f->tag), f->code);
	clauses(f->text ? f->text : "", out->len - mark, indent, out);
	if (f->nevidence) {
		xpf_buf_printf(out, "\n%s    -> ", indent);
		for (size_t i = 0; i < f->nevidence; i++) {
			xpf_buf_adds(out, i ? ", " : "");
			xpf_buf_text(out, f->evidence[i]);
		}
	}
	xpf_buf_addc(out, '\n');
	for (size_t i = 0; i < f->nfixes; i++)
		if (!f->fixes[i].after_program || last)
			fix_lines(&f->fixes[i], indent, out);
}

void xpf_diag_finding_line(const xpf_finding *f, xpf_buf *out, const char *indent)
{
	finding_lines(f, out, indent, true);
}

/* SPEC 5.3: a larger pool comes after every program fix, so those fixes
 * (xpf_diag_fix.after_program) are rendered last, under their finding's
 * code (grep CODE still finds them). */
static void later_fixes(const xpf_diagnosis *d, xpf_buf *out)
{
	for (size_t i = 0; i < d->nfindings; i++) {
		const xpf_finding *f = &d->findings[i];
		bool head = false;
		for (size_t j = 0; j < f->nfixes; j++) {
			if (!f->fixes[j].after_program)
				continue;
			if (!head)
				xpf_buf_printf(out,
					       "# after the program fixes above, if still short (%s):\n",
					       f->code);
			head = true;
			fix_lines(&f->fixes[j], "", out);
		}
	}
}

int xpf_render_diagnosis_txt(xpf_host *h, long arg, xpf_buf *out, xpf_error *err)
{
	const xpf_diagnosis *d;
	int rc = xpf_host_diagnosis(h, &d, err);
	if (rc != XPF_OK)
		return rc;
	header(h, d, out);
	for (size_t i = 0; i < d->nfindings; i++)
		finding_lines(&d->findings[i], out, "", false);
	later_fixes(d, out);
	bool fixes = false;
	for (size_t i = 0; i < d->nfindings; i++)
		fixes |= d->findings[i].nfixes > 0;
	if (fixes)
		xpf_buf_adds(out,
			     "# savings are estimates from the capture's bytes, not tried: confirm a fix with jax.jit(f).lower(...).compile().memory_analysis() on your side\n");
	return XPF_OK;
}

static json_t *jint(uint64_t v)
{
	return json_integer(v > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)v);
}

json_t *xpf_diag_json(xpf_host *h, const xpf_diagnosis *d)
{
	json_t *root = json_object();
	json_t *arr = json_array();
	char id[32];

	json_object_set_new(root, "capture", xpf_json_text(xpf_capture_label(h->cap)));
	json_object_set_new(root, "host", xpf_json_text(h->name ? h->name : ""));
	json_object_set_new(root, "module",
			    d->module >= 0 ? xpf_json_text(module_name(h, d->module)) : json_null());
	if (d->module >= 0) {
		snprintf(id, sizeof id, "%llu",
			 (unsigned long long)xpf_capture_module(h->cap, d->module)->program_id);
		json_object_set_new(root, "program_id", xpf_json_text(id));
		json_object_set_new(root, "module_dir", xpf_json_text(h->module_dirs[d->module]));
		json_object_set_new(root, "module_why", xpf_json_text(d->module_why));
	}
	json_object_set_new(root, "capacity_bytes", jint(d->capacity_bytes));
	json_object_set_new(root, "capacity_tag", xpf_json_text(xpf_tag_name(d->capacity_tag)));
	json_object_set_new(root, "capacity_source", xpf_json_text(d->capacity_source));
	json_object_set_new(root, "device_memory_bytes", jint(d->memory_bytes));
	json_object_set_new(root, "fraction_set", json_boolean(d->fraction_set));
	for (size_t i = 0; i < d->nfindings; i++) {
		const xpf_finding *f = &d->findings[i];
		json_t *o = json_object(), *figs = json_object(), *ev = json_array(),
		       *fx = json_array();
		json_object_set_new(o, "code", xpf_json_text(f->code));
		json_object_set_new(o, "tag", xpf_json_text(xpf_tag_name(f->tag)));
		json_object_set_new(o, "module",
				    f->module >= 0 ? xpf_json_text(module_name(h, f->module)) :
						     json_null());
		json_object_set_new(o, "text", xpf_json_text(f->text ? f->text : ""));
		for (size_t j = 0; j < f->nfigs; j++)
			json_object_set_new(figs, f->figs[j].key,
					    f->figs[j].is_text ? xpf_json_text(f->figs[j].text) :
								 jint(f->figs[j].value));
		for (size_t j = 0; j < f->nevidence; j++)
			json_array_append_new(ev, xpf_json_text(f->evidence[j]));
		for (size_t j = 0; j < f->nfixes; j++) {
			json_t *x = json_object();
			json_object_set_new(x, "text", xpf_json_text(f->fixes[j].text));
			json_object_set_new(x, "saving_bytes", jint(f->fixes[j].saving_bytes));
			if (f->fixes[j].saving_max_bytes)
				json_object_set_new(x, "saving_max_bytes",
						    jint(f->fixes[j].saving_max_bytes));
			json_object_set_new(x, "cost", xpf_json_text(f->fixes[j].cost));
			json_object_set_new(x, "tag", json_string("inferred"));
			json_array_append_new(fx, x);
		}
		json_object_set_new(o, "figures", figs);
		json_object_set_new(o, "evidence", ev);
		json_object_set_new(o, "fixes", fx);
		json_array_append_new(arr, o);
	}
	json_object_set_new(root, "findings", arr);
	return root;
}

int xpf_render_diagnosis_json(xpf_host *h, long arg, xpf_buf *out, xpf_error *err)
{
	const xpf_diagnosis *d;
	int rc = xpf_host_diagnosis(h, &d, err);
	if (rc != XPF_OK)
		return rc;
	json_t *root = xpf_diag_json(h, d);
	char *s = json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS);
	json_decref(root);
	if (s == NULL)
		return xpf_fail(err, XPF_EMALFORMED,
				"diagnosis.json: cannot encode (invalid UTF-8 in a name?)");
	xpf_buf_adds(out, s);
	xpf_buf_addc(out, '\n');
	free(s);
	return XPF_OK;
}

int xpf_render_checks(xpf_host *h, long arg, xpf_buf *out, xpf_error *err)
{
	const xpf_diagnosis *d;
	int rc = xpf_host_diagnosis(h, &d, err);
	if (rc != XPF_OK)
		return rc;
	xpf_diag_checks(h, d, out);
	return XPF_OK;
}

/* ---- summary.txt ------------------------------------------------------------ */

/* A stat's text (not NUL-terminated) as xpf_buf_text writes a name. */
static void add_text(xpf_buf *out, const char *s, size_t n)
{
	char *z = xpf_str_dup((xpf_str){ s, n });
	xpf_buf_text(out, z);
	free(z);
}

static void text_stat(const xpf_plane *p, const char *name, xpf_buf *out)
{
	xpf_stat st;
	xpf_str s;
	xpf_error e = { 0 };
	if (xpf_plane_stat(p, name, &st, &e) == 1 && xpf_stat_text(&st, &s))
		add_text(out, s.p, s.n);
	else
		xpf_buf_adds(out, "?");
}

static void summary_devices(xpf_host *h, xpf_buf *out)
{
	size_t ndev = 0;
	char h1[32];
	for (size_t i = 0; i < xpf_capture_nplanes(h->cap); i++)
		ndev += strncmp(xpf_capture_plane_head(h->cap, i)->name, "/device:", 8) == 0;
	xpf_buf_printf(out, "devices: %zu\n", ndev);
	for (size_t i = 0; i < xpf_capture_nplanes(h->cap); i++) {
		const xpf_plane_head *hd = xpf_capture_plane_head(h->cap, i);
		const xpf_plane *p;
		xpf_error e = { 0 };
		xpf_stat st;
		uint64_t mem;
		if (strncmp(hd->name, "/device:", 8) != 0 ||
		    xpf_capture_plane_meta(h->cap, i, &p, &e) != XPF_OK) /* its stats only */
			continue;
		xpf_str dn;
		xpf_buf_adds(out, "  ");
		xpf_buf_text(out, hd->name);
		xpf_buf_adds(out, ": name ");
		if (xpf_diag_device_name(p, &dn, &e))
			add_text(out, dn.p, dn.n);
		else
			xpf_buf_adds(out, "?");
		xpf_buf_adds(out, ", vendor ");
		text_stat(p, "device_vendor", out);
		if (xpf_plane_stat(p, "memory_size", &st, &e) == 1 && xpf_stat_u64(&st, &mem))
			xpf_buf_printf(out, ", HBM %s (%llu bytes) [read]", xpf_human(mem, h1),
				       (unsigned long long)mem);
		else
			xpf_buf_adds(out, ", HBM unknown");
		xpf_buf_addc(out, '\n');
	}
}

static void summary_allocators(const xpf_runtime *rt, xpf_buf *out)
{
	char h1[32], h2[32], h3[32];
	if (rt == NULL || !rt->has_events) {
		xpf_buf_adds(out,
			     "allocators: none (no allocator events; see runtime/summary.txt)\n");
		return;
	}
	xpf_buf_printf(out, "allocators: %zu\n", rt->nallocators);
	for (size_t a = 0; a < rt->nallocators; a++) {
		const xpf_rt_allocator *al = &rt->allocators[a];
		xpf_buf_adds(out, "  ");
		xpf_buf_text(out, al->name);
		xpf_buf_printf(out,
			       "%s: capacity %s, peak in window %s, lifetime peak %s, %llu allocations, %llu deallocations [measured]\n",
			       al->is_pool ? " (device pool)" : "", xpf_human(al->capacity_bytes, h1),
			       xpf_human(al->peak_in_window_bytes, h2),
			       xpf_human(al->lifetime_peak_bytes, h3),
			       (unsigned long long)al->allocations,
			       (unsigned long long)al->deallocations);
	}
}

/* One module's line: its plan's totals and how often it ran. */
static void summary_module(xpf_host *h, const xpf_diagnosis *d, const xpf_runtime *rt, long m,
			   xpf_buf *out)
{
	char h1[32], h2[32], h3[32], h4[32], h5[32];
	const xpf_plan *p = xpf_diag_plan(h, m);
	size_t nx = 0;
	for (size_t x = 0; rt && x < rt->nexecutions; x++)
		nx += rt->executions[x].module == m;
	xpf_buf_adds(out, "  ");
	xpf_buf_text(out, module_name(h, m));
	xpf_buf_adds(out, m == d->module ? " (focus): " : ": ");
	if (p && p->has_assignment)
		xpf_buf_printf(out,
			       "need %s, parameters %s, outputs %s, temp %s, heap peak %s [read]",
			       xpf_human(p->need_bytes, h1), xpf_human(p->parameters_bytes, h2),
			       xpf_human(p->outputs_bytes, h3), xpf_human(p->temp_bytes, h4),
			       xpf_human(p->heap_peak_bytes, h5));
	else
		xpf_buf_adds(out, "no buffer assignment");
	xpf_buf_printf(out, ", %zu executions\n", nx);
}

/* The modules, the biggest by need first, up to --top. */
static void summary_modules(xpf_host *h, const xpf_diagnosis *d, const xpf_runtime *rt, xpf_buf *out)
{
	size_t with = 0;
	for (size_t m = 0; m < h->nmodules; m++) {
		const xpf_plan *p = xpf_diag_plan(h, (long)m);
		with += p && p->has_assignment;
	}
	xpf_buf_printf(out, "modules: %zu (%zu with buffer assignment)\n", h->nmodules, with);
	size_t top = h->opt->top > 0 ? (size_t)h->opt->top : 25;
	bool *shown = xpf_calloc(h->nmodules ? h->nmodules : 1, sizeof *shown);
	for (size_t k = 0; k < top && k < h->nmodules; k++) {
		long best = -1;
		uint64_t bn = 0;
		for (size_t m = 0; m < h->nmodules; m++) {
			uint64_t need = xpf_module_need(h, (long)m);
			if (!shown[m] && (best < 0 || need > bn)) {
				best = (long)m;
				bn = need;
			}
		}
		shown[best] = true;
		summary_module(h, d, rt, best, out);
	}
	if (h->nmodules > top)
		xpf_buf_printf(out, "  ... %zu more in modules/index.tsv\n", h->nmodules - top);
	free(shown);
}

static void summary_executions(const xpf_diagnosis *d, const xpf_runtime *rt, xpf_buf *out)
{
	if (rt && rt->has_host_plane) {
		size_t amb = 0, never = 0;
		for (size_t x = 0; x < rt->nexecutions; x++) {
			amb += rt->executions[x].module < 0;
			never += rt->executions[x].launched == XPF_LAUNCHED_NO;
		}
		xpf_buf_printf(out,
			       "executions: %zu (%zu never launched, %zu ambiguous) [measured]\n",
			       rt->nexecutions, never, amb);
		if (rt->nretries)
			xpf_buf_printf(out, "allocator retries: %zu\n", rt->nretries);
	} else {
		xpf_buf_printf(out, "executions: none recorded (%s)\n",
			       d->runtime_error.code ?
				       "the runtime could not be read: capture/errors.txt" :
				       "no /host:CPU plane");
	}
}

int xpf_render_summary(xpf_host *h, long arg, xpf_buf *out, xpf_error *err)
{
	const xpf_diagnosis *d;
	const xpf_runtime *rt = NULL;
	xpf_error e = { 0 };
	char h1[32];
	int rc = xpf_host_diagnosis(h, &d, err);
	if (rc != XPF_OK)
		return rc;
	if (!xpf_capture_is_hlo_only(h->cap) && xpf_host_runtime(h, &rt, &e) != XPF_OK)
		rt = NULL;

	xpf_buf_adds(out, "host: ");
	xpf_buf_text(out, h->name ? h->name : "?");
	xpf_buf_adds(out, "\ncapture: ");
	xpf_buf_text(out, xpf_capture_label(h->cap));
	xpf_buf_printf(out, " (%llu bytes)\n", (unsigned long long)xpf_capture_size(h->cap));
	summary_devices(h, out);
	summary_allocators(rt, out);
	if (d->capacity_bytes) {
		xpf_buf_printf(out, "capacity: %s (%llu bytes) [%s] from ",
			       xpf_human(d->capacity_bytes, h1),
			       (unsigned long long)d->capacity_bytes, xpf_tag_name(d->capacity_tag));
		xpf_buf_text(out, d->capacity_source);
		xpf_buf_printf(out, "%s\n",
			       d->fraction_set ?
				       "; not 75% of the device memory: the memory fraction is set" :
				       "");
	} else
		xpf_buf_adds(out, "capacity: unknown (give it with --capacity BYTES)\n");
	summary_modules(h, d, rt, out);
	summary_executions(d, rt, out);
	if (d->module >= 0)
		xpf_buf_printf(out, "focus: modules/%s (%s)\n", h->module_dirs[d->module],
			       d->module_why);
	xpf_buf_printf(out, "findings: %zu (diagnosis.txt)", d->nfindings);
	for (size_t i = 0; i < d->nfindings; i++)
		xpf_buf_printf(out, "%s%s", i ? ", " : ": ", d->findings[i].code);
	xpf_buf_addc(out, '\n');
	return XPF_OK;
}
