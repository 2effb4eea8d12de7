/* compare/ (SPEC §8, --base): what changed against the baseline.
 *
 * One after-host makes compare/ hold the files; several make
 * compare/hosts/<host>/ for each, compared with the baseline's host of
 * the same name (else of the same position, else its first).  A file's
 * node carries its after-host (n->host), which keeps the comparison
 * (compare.c, xpf_host_compare): made by the first file read, shared by
 * the others. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "analysis/paths.h"
#include "tree/report.h"
#include "analysis/compare/compare.h"
#include "common/alloc.h"
#include "tree/render/json_text.h"

/* The pair's comparison, made once (xpf_tree_compare gave h its baseline). */
static int get(xpf_host *h, const xpf_compare **c, xpf_error *err)
{
	return xpf_host_compare(h, c, err);
}

static const char *mod_name(const xpf_cmp_side *s, long m)
{
	return m >= 0 ? xpf_capture_module(s->h->cap, (size_t)m)->name : NULL;
}

static void put_signed_delta(xpf_buf *out, uint64_t before, uint64_t after)
{
	if (after >= before)
		xpf_buf_printf(out, "%llu", (unsigned long long)(after - before));
	else
		xpf_buf_printf(out, "-%llu", (unsigned long long)(before - after));
}

/* ---- diagnosis.txt / .json ------------------------------------------------ */

/* Names from the captures (labels, modules, host folders in the paths)
 * reach compare/diagnosis.txt escaped (SPEC §3); its JSON twin takes them
 * as they are (jansson escapes, xpf_json_text makes them UTF-8). */
static void nothing_line(const xpf_compare *c, xpf_buf *out)
{
	const xpf_cmp_side *b = &c->side[0], *a = &c->side[1];
	xpf_buf n1 = XPF_BUF_INIT, n2 = XPF_BUF_INIT, n3 = XPF_BUF_INIT;
	xpf_buf_printf(out,
		       "[read] nothing-changed: %s against the baseline %s: the same %zu module%s, "
		       "the same figures and findings (every delta 0)",
		       xpf_text_of(&n1, xpf_capture_label(a->h->cap)),
		       xpf_text_of(&n2, xpf_capture_label(b->h->cap)), c->nmatched,
		       c->nmatched == 1 ? "" : "s");
	xpf_buf_printf(out, " -> %sdiagnosis.txt, %sdiagnosis.txt, %smodules.tsv\n",
		       xpf_text_of(&n1, b->prefix), xpf_text_of(&n2, a->prefix),
		       xpf_text_of(&n3, c->dir));
	xpf_buf_release(&n1);
	xpf_buf_release(&n2);
	xpf_buf_release(&n3);
}

static int render_txt(xpf_host *h, const xpf_node *n, xpf_buf *out, xpf_error *err)
{
	const xpf_compare *c;
	char h1[32], h2[32];
	int rc = get(h, &c, err);
	if (rc != XPF_OK)
		return rc;
	if (c->nchanges == 0) {
		nothing_line(c, out);
		return XPF_OK;
	}
	const xpf_cmp_side *b = &c->side[0], *a = &c->side[1];
	xpf_buf n1 = XPF_BUF_INIT, n2 = XPF_BUF_INIT;
	xpf_buf_printf(out, "# %s against the baseline %s",
		       xpf_text_of(&n1, xpf_capture_label(a->h->cap)),
		       xpf_text_of(&n2, xpf_capture_label(b->h->cap)));
	if (a->focus >= 0 || b->focus >= 0)
		xpf_buf_printf(out, "; focus %s <- %s",
			       a->focus >= 0 ? xpf_text_of(&n1, mod_name(a, a->focus)) : "(none)",
			       b->focus >= 0 ? xpf_text_of(&n2, mod_name(b, b->focus)) : "(none)");
	xpf_buf_release(&n1);
	xpf_buf_release(&n2);
	if (c->focus_pair >= 0 && c->modules[c->focus_pair].base >= 0 &&
	    c->modules[c->focus_pair].after >= 0)
		xpf_buf_printf(out, " (matched by %s)",
			       xpf_cmp_how_name(c->modules[c->focus_pair].how));
	if (a->d && b->d && (a->d->capacity_bytes || b->d->capacity_bytes))
		xpf_buf_printf(out, "; capacity %s -> %s", xpf_human(b->d->capacity_bytes, h1),
			       xpf_human(a->d->capacity_bytes, h2));
	xpf_buf_printf(out, "; %zu modules matched, %zu new, %zu gone\n", c->nmatched, c->nnew,
		       c->ngone);
	for (size_t i = 0; i < c->nchanges; i++) {
		const xpf_cmp_change *ch = &c->changes[i];
		xpf_buf_printf(out, "[%s] %s: ", xpf_tag_name(ch->tag), ch->code);
		xpf_buf_text(out, ch->text);
		for (size_t j = 0; j < ch->nevidence; j++) {
			xpf_buf_adds(out, j ? ", " : " -> ");
			xpf_buf_text(out, ch->evidence[j]);
		}
		xpf_buf_addc(out, '\n');
	}
	return XPF_OK;
}

static json_t *jint(uint64_t v)
{
	return json_integer(v > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)v);
}

static json_t *jdelta(uint64_t before, uint64_t after)
{
	if (after >= before)
		return jint(after - before);
	uint64_t d = before - after;
	return json_integer(d > (uint64_t)INT64_MAX ? INT64_MIN : -(json_int_t)d);
}

static json_t *jside(const xpf_cmp_side *s)
{
	json_t *o = json_object();
	json_object_set_new(o, "capture", xpf_json_text(xpf_capture_label(s->h->cap)));
	json_object_set_new(o, "module",
			    s->focus >= 0 ? xpf_json_text(mod_name(s, s->focus)) : json_null());
	json_object_set_new(o, "module_dir",
			    s->focus >= 0 ? xpf_json_text(s->h->module_dirs[s->focus]) : json_null());
	json_object_set_new(o, "tree", xpf_json_text(s->prefix));
	json_object_set_new(o, "capacity_bytes", jint(s->d ? s->d->capacity_bytes : 0));
	json_object_set_new(o, "need_bytes", s->plan ? jint(s->plan->need_bytes) : json_null());
	json_t *codes = json_array();
	for (size_t i = 0; s->d && i < s->d->nfindings; i++)
		json_array_append_new(codes, xpf_json_text(s->d->findings[i].code));
	json_object_set_new(o, "codes", codes);
	return o;
}

static int render_json(xpf_host *h, const xpf_node *n, xpf_buf *out, xpf_error *err)
{
	const xpf_compare *c;
	int rc = get(h, &c, err);
	if (rc != XPF_OK)
		return rc;
	json_t *root = json_object(), *arr = json_array(), *mods = json_object();
	json_t *nw = json_array(), *gone = json_array();
	json_object_set_new(root, "base", jside(&c->side[0]));
	json_object_set_new(root, "after", jside(&c->side[1]));
	json_object_set_new(root, "capture", xpf_json_text(xpf_capture_label(c->side[1].h->cap)));
	json_object_set_new(root, "module",
			    c->side[1].focus >= 0 ?
				    xpf_json_text(mod_name(&c->side[1], c->side[1].focus)) :
				    json_null());
	json_object_set_new(root, "match",
			    c->focus_pair >= 0 ?
				    xpf_json_text(xpf_cmp_how_name(c->modules[c->focus_pair].how)) :
				    json_null());
	json_object_set_new(root, "nothing_changed", json_boolean(c->nchanges == 0));
	for (size_t i = 0; i < c->nchanges; i++) {
		const xpf_cmp_change *ch = &c->changes[i];
		json_t *o = json_object(), *figs = json_object(), *ev = json_array();
		json_object_set_new(o, "code", xpf_json_text(ch->code));
		json_object_set_new(o, "tag", xpf_json_text(xpf_tag_name(ch->tag)));
		json_object_set_new(o, "text", xpf_json_text(ch->text));
		if (ch->has_figs && ch->signed_figs) {
			int64_t x = (int64_t)ch->before, y = (int64_t)ch->after;
			json_object_set_new(figs, "before_bytes", json_integer(x));
			json_object_set_new(figs, "after_bytes", json_integer(y));
			json_object_set_new(figs, "delta_bytes", json_integer(xpf_sub_i64(y, x)));
		} else if (ch->has_figs) {
			char pc[32];
			json_object_set_new(figs, "before_bytes", jint(ch->before));
			json_object_set_new(figs, "after_bytes", jint(ch->after));
			json_object_set_new(figs, "delta_bytes", jdelta(ch->before, ch->after));
			json_object_set_new(figs, "delta_pct",
					    xpf_cmp_delta_pct(ch->before, ch->after, pc) ?
						    xpf_json_text(pc) :
						    json_null());
		}
		for (size_t j = 0; j < ch->nevidence; j++)
			json_array_append_new(ev, xpf_json_text(ch->evidence[j]));
		json_object_set_new(o, "figures", figs);
		json_object_set_new(o, "evidence", ev);
		json_array_append_new(arr, o);
	}
	json_object_set_new(root, "changes", arr);
	for (size_t i = 0; i < c->nmodules; i++) {
		const xpf_cmp_module *m = &c->modules[i];
		if (m->how == XPF_CMP_NEW)
			json_array_append_new(nw, xpf_json_text(mod_name(&c->side[1], m->after)));
		else if (m->how == XPF_CMP_GONE)
			json_array_append_new(gone, xpf_json_text(mod_name(&c->side[0], m->base)));
	}
	json_object_set_new(mods, "matched", jint(c->nmatched));
	json_object_set_new(mods, "new", nw);
	json_object_set_new(mods, "gone", gone);
	json_object_set_new(root, "modules", mods);
	char *s = json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS);
	json_decref(root);
	if (s == NULL)
		return xpf_fail(err, XPF_EMALFORMED,
				"compare/diagnosis.json: cannot encode (invalid UTF-8 in a name?)");
	xpf_buf_adds(out, s);
	xpf_buf_addc(out, '\n');
	free(s);
	return XPF_OK;
}

/* ---- modules.tsv -------------------------------------------------------------- */

struct module_row {
	const char *name; /* after's name, else the baseline's */
	const xpf_cmp_module *m;
};

static uint64_t need_change(const xpf_cmp_module *m)
{
	if (!m->fb.has_plan || !m->fa.has_plan)
		return 0;
	uint64_t x = m->fb.v[XPF_CMP_NEED], y = m->fa.v[XPF_CMP_NEED];
	return x > y ? x - y : y - x;
}

static int group_of(const xpf_cmp_module *m)
{
	return m->how == XPF_CMP_NEW ? 1 : m->how == XPF_CMP_GONE ? 2 : 0;
}

static int module_row_cmp(const void *x, const void *y)
{
	const struct module_row *ra = x, *rb = y;
	const xpf_cmp_module *a = ra->m, *b = rb->m;
	if (group_of(a) != group_of(b))
		return group_of(a) < group_of(b) ? -1 : 1;
	uint64_t da = need_change(a), db = need_change(b);
	if (da != db)
		return da > db ? -1 : 1;
	int r = strcmp(ra->name, rb->name);
	if (r)
		return r;
	if (a->after != b->after)
		return a->after < b->after ? -1 : 1;
	return a->base < b->base ? -1 : a->base > b->base;
}

static int render_modules(xpf_host *h, const xpf_node *n, xpf_buf *out, xpf_error *err)
{
	const xpf_compare *c;
	int rc = get(h, &c, err);
	if (rc != XPF_OK)
		return rc;
	xpf_buf_adds(out, "name\tmatch\tbase_dir\tdir");
	for (int f = 0; f < XPF_CMP_NFIGS; f++)
		xpf_buf_printf(out, "\tbase_%s\t%s\tdelta_%s", xpf_cmp_fig_names[f],
			       xpf_cmp_fig_names[f], xpf_cmp_fig_names[f]);
	xpf_buf_addc(out, '\n');
	struct module_row *rows = xpf_malloc((c->nmodules ? c->nmodules : 1) * sizeof *rows);
	for (size_t i = 0; i < c->nmodules; i++) {
		const xpf_cmp_module *m = &c->modules[i];
		rows[i].m = m;
		rows[i].name = m->after >= 0 ? mod_name(&c->side[1], m->after) :
					       mod_name(&c->side[0], m->base);
	}
	xpf_qsort(rows, c->nmodules, sizeof *rows, module_row_cmp);
	for (size_t i = 0; i < c->nmodules; i++) {
		const xpf_cmp_module *m = rows[i].m;
		const char *name = rows[i].name;
		xpf_buf_tsvn(out, name, xpf_cmp_stem_len(name));
		xpf_buf_printf(out, "\t%s\t", xpf_cmp_how_name(m->how));
		if (m->base >= 0)
			xpf_buf_tsv(out, c->side[0].h->module_dirs[m->base]);
		xpf_buf_addc(out, '\t');
		if (m->after >= 0)
			xpf_buf_tsv(out, c->side[1].h->module_dirs[m->after]);
		for (int f = 0; f < XPF_CMP_NFIGS; f++) {
			bool hb = f == XPF_CMP_EXECUTIONS ? m->fb.has_executions : m->fb.has_plan;
			bool ha = f == XPF_CMP_EXECUTIONS ? m->fa.has_executions : m->fa.has_plan;
			xpf_buf_addc(out, '\t');
			if (hb)
				xpf_buf_printf(out, "%llu", (unsigned long long)m->fb.v[f]);
			xpf_buf_addc(out, '\t');
			if (ha)
				xpf_buf_printf(out, "%llu", (unsigned long long)m->fa.v[f]);
			xpf_buf_addc(out, '\t');
			if (hb && ha)
				put_signed_delta(out, m->fb.v[f], m->fa.v[f]);
		}
		xpf_buf_addc(out, '\n');
	}
	free(rows);
	return XPF_OK;
}

/* ---- peak_buffers.tsv, allocators.tsv ---------------------------------------- */

static int render_peak(xpf_host *h, const xpf_node *n, xpf_buf *out, xpf_error *err)
{
	const xpf_compare *c;
	char hb[32];
	int rc = get(h, &c, err);
	if (rc != XPF_OK)
		return rc;
	xpf_buf_adds(out,
		     "role\tdtype\tshape\tsource\tbase_count\tcount\tdelta_count\tbase_bytes\tbytes"
		     "\tdelta_bytes\tdelta_human\n");
	for (size_t i = 0; i < c->ngroups; i++) {
		const xpf_cmp_group *g = &c->groups[i];
		xpf_buf_printf(out, "%s\t", xpf_role_name(g->role));
		xpf_buf_tsv(out, g->dtype);
		xpf_buf_addc(out, '\t');
		xpf_buf_tsv(out, g->shape);
		xpf_buf_addc(out, '\t');
		xpf_buf_tsv(out, g->source);
		xpf_buf_printf(out, "\t%llu\t%llu\t", (unsigned long long)g->count[0],
			       (unsigned long long)g->count[1]);
		put_signed_delta(out, g->count[0], g->count[1]);
		xpf_buf_printf(out, "\t%llu\t%llu\t", (unsigned long long)g->bytes[0],
			       (unsigned long long)g->bytes[1]);
		put_signed_delta(out, g->bytes[0], g->bytes[1]);
		uint64_t d = g->bytes[1] >= g->bytes[0] ? g->bytes[1] - g->bytes[0] :
							  g->bytes[0] - g->bytes[1];
		xpf_buf_printf(out, "\t%s%s\n",
			       d == 0                    ? "" :
			       g->bytes[1] > g->bytes[0] ? "+" :
							   "-",
			       xpf_human(d, hb));
	}
	return XPF_OK;
}

static int render_allocators(xpf_host *h, const xpf_node *n, xpf_buf *out, xpf_error *err)
{
	static const char *const cols[] = { "capacity_bytes", "peak_in_window_bytes",
					    "lifetime_peak_bytes", "live_at_end_bytes" };
	const xpf_compare *c;
	int rc = get(h, &c, err);
	if (rc != XPF_OK)
		return rc;
	xpf_buf_adds(out, "allocator");
	for (size_t k = 0; k < 4; k++)
		xpf_buf_printf(out, "\tbase_%s\t%s\tdelta_%s", cols[k], cols[k], cols[k]);
	xpf_buf_addc(out, '\n');
	for (size_t i = 0; i < c->nallocs; i++) {
		const xpf_cmp_alloc *a = &c->allocs[i];
		xpf_buf_tsv(out, a->name);
		for (size_t k = 0; k < 4; k++) {
			uint64_t v[2] = { 0, 0 };
			for (int s = 0; s < 2; s++)
				if (a->a[s])
					v[s] = k == 0 ? a->a[s]->capacity_bytes :
					       k == 1 ? a->a[s]->peak_in_window_bytes :
					       k == 2 ? a->a[s]->lifetime_peak_bytes :
							a->a[s]->live_at_end_bytes;
			xpf_buf_addc(out, '\t');
			if (a->a[0])
				xpf_buf_printf(out, "%llu", (unsigned long long)v[0]);
			xpf_buf_addc(out, '\t');
			if (a->a[1])
				xpf_buf_printf(out, "%llu", (unsigned long long)v[1]);
			xpf_buf_addc(out, '\t');
			if (a->a[0] && a->a[1])
				put_signed_delta(out, v[0], v[1]);
		}
		xpf_buf_addc(out, '\n');
	}
	return XPF_OK;
}

/* ---- README, the tree --------------------------------------------------------- */

static const char readme[] =
	"compare/: what changed against the baseline capture given with --base (its own tree is base/).\n"
	"Modules are matched by name without the program id (jit_step(2811) <-> jit_step(3020)); several\n"
	"of one name by their entry parameter shapes, then in module order; the rest are new or gone.\n"
	"The compared (focus) module is this capture's focus and its match (else the baseline's focus).\n"
	"Deltas are after - base, in bytes (signed); percentages are of the baseline's figure, one decimal.\n"
	"With several hosts, compare/hosts/<host>/ holds these files for each host, compared with the\n"
	"baseline's host of the same name (else the same position, else the first).\n"
	"\n"
	"diagnosis.txt\n"
	"    the changes that matter, most important first: `[tag] code: text -> evidence paths`; the first\n"
	"    line (`# ...`) names both captures, the compared modules and the capacities.  Identical\n"
	"    captures give one line: `[read] nothing-changed: ...`.  Codes (stable):\n"
	"      fits-now / still-short / short-now / still-fits   the focus module's need against the capacity\n"
	"                           before and after (`fits now, 788.0 MiB <= 2.79 GiB`, `still short by N`);\n"
	"                           a capacity that is not a pool's (no allocator events, a runtime that\n"
	"                           cannot be read) says where it is from\n"
	"      need                 the same without a capacity on one side\n"
	"      codes-gone / codes-new   diagnosis codes that went away / appeared\n"
	"      peak-role            bytes of one role at the heap peak (forward-kept, backward, ...)\n"
	"      heap-peak, temp, non-aliased-outputs, parameters, donated   the focus module's plan figures\n"
	"      in-use-at-start      in use when the focus module's last execution started\n"
	"      growth-per-execution the mean rise of that in use from one execution to the next (0 where it\n"
	"                           ran once); on a side where in use is not known (no allocator events, a\n"
	"                           runtime that cannot be read) `unknown (why)`, with no figures\n"
	"      pool-peak            the pool allocator's peak in use in the window\n"
	"      modules-new / modules-gone / modules-changed   modules only after / only before / whose need changed\n"
	"    Each figure line: before -> after: delta human (delta bytes, delta %).\n"
	"diagnosis.json\n"
	"    {\"base\",\"after\": {capture, module, module_dir, tree, capacity_bytes, need_bytes, codes},\n"
	"     \"module\",\"match\",\"nothing_changed\",\"changes\": [{code, tag, text, figures: {before_bytes,\n"
	"     after_bytes, delta_bytes, delta_pct}, evidence}], \"modules\": {matched, new, gone}}\n"
	"modules.tsv\n"
	"    one row per module pair: name (without the id), match (name, shapes, order, new, gone),\n"
	"    base_dir, dir, then base_X, X, delta_X for X = parameters_bytes, non_aliased_outputs_bytes,\n"
	"    temp_bytes, heap_peak_bytes, need_bytes, executions (as each tree's modules/index.tsv);\n"
	"    matched first, by the need's change (largest first), then name; then new, then gone\n"
	"peak_buffers.tsv\n"
	"    the focus modules' buffers at the heap peak grouped by (role, dtype, shape, source):\n"
	"    base_count, count, delta_count, base_bytes, bytes, delta_bytes, delta_human; by the bytes'\n"
	"    change, largest first, then the larger side's bytes, then the key\n"
	"allocators.tsv\n"
	"    one row per allocator name of either side: base_X, X, delta_X for X = capacity_bytes,\n"
	"    peak_in_window_bytes, lifetime_peak_bytes, live_at_end_bytes (as runtime/allocators.tsv);\n"
	"    empty on the side that lacks it; by name\n";

static int render_readme(xpf_host *h, const xpf_node *n, xpf_buf *out, xpf_error *err)
{
	xpf_buf_adds(out, readme);
	(void)h;
	(void)n;
	(void)err;
	return XPF_OK;
}

/* dir's files compare after-host h with the baseline's host base_host. */
static void files(xpf_report *r, xpf_node *dir, xpf_host *h, long base_host)
{
	xpf_buf path = XPF_BUF_INIT;
	xpf_node_path(dir, &path);
	xpf_buf_addc(&path, '/');
	xpf_host_set_base(h, xpf_report_host(xpf_report_base(r), (size_t)base_host), path.data);
	xpf_buf_release(&path);
	dir->host = h;
	xpf_node_file(dir, XPF_F_DIAGNOSIS_TXT, render_txt, base_host);
	xpf_node_file(dir, XPF_F_DIAGNOSIS_JSON, render_json, base_host);
	xpf_node_file(dir, XPF_F_MODULES_TSV, render_modules, base_host);
	xpf_node_file(dir, XPF_F_PEAK_BUFFERS_TSV, render_peak, base_host);
	xpf_node_file(dir, XPF_F_ALLOCATORS_TSV, render_allocators, base_host);
}

/* The baseline host compared with after's host i. */
static long base_host_of(xpf_report *r, size_t i)
{
	xpf_report *b = xpf_report_base(r);
	xpf_host *h = xpf_report_host(r, i);
	for (size_t k = 0; k < xpf_report_nhosts(b); k++) {
		const char *x = xpf_report_host(b, k)->name, *y = h->name;
		if (x && y && strcmp(x, y) == 0)
			return (long)k;
	}
	return i < xpf_report_nhosts(b) ? (long)i : 0;
}

void xpf_tree_compare(xpf_report *r, xpf_node *dir)
{
	xpf_node_file(dir, XPF_F_README, render_readme, 0);
	if (xpf_report_nhosts(r) == 1) {
		files(r, dir, xpf_report_host(r, 0), base_host_of(r, 0));
		return;
	}
	xpf_node *hosts = xpf_node_dir(dir, XPF_D_HOSTS, NULL, 0);
	for (size_t i = 0; i < xpf_report_nhosts(r); i++) {
		xpf_host *h = xpf_report_host(r, i);
		files(r, xpf_node_dir(hosts, xpf_report_host_root(r, h)->name, NULL, 0), h,
		      base_host_of(r, i));
	}
}
