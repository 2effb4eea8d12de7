/* Comparing a capture with a baseline (see compare.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/compare/compare.h"
#include "analysis/paths.h"
#include "common/alloc.h"
#include "common/intern.h"
#include "common/map.h"

const char *const xpf_cmp_fig_names[XPF_CMP_NFIGS] = {
	"parameters_bytes", "non_aliased_outputs_bytes",
	"temp_bytes",       "heap_peak_bytes",
	"need_bytes",       "executions",
};

const char *xpf_cmp_how_name(enum xpf_cmp_how how)
{
	static const char *const names[] = { "name", "shapes", "order", "new", "gone" };
	return (unsigned)how < sizeof names / sizeof names[0] ? names[how] : "?";
}

size_t xpf_cmp_stem_len(const char *name)
{
	size_t n = strlen(name);
	if (n < 3 || name[n - 1] != ')')
		return n;
	size_t k = n - 1;
	while (k > 0 && name[k - 1] >= '0' && name[k - 1] <= '9')
		k--;
	if (k == n - 1 || k == 0 || name[k - 1] != '(')
		return n;
	return k - 1;
}

bool xpf_cmp_delta_pct(uint64_t before, uint64_t after, char out[32])
{
	if (before == 0)
		return false;
	uint64_t d = after >= before ? after - before : before - after;
	unsigned __int128 num = (unsigned __int128)d * 1000 + before / 2;
	unsigned __int128 t = num / before;
	unsigned long long tt =
		t > (unsigned __int128)UINT64_MAX ? UINT64_MAX : (unsigned long long)t;
	snprintf(out, 32, "%s%llu.%llu", after >= before ? "+" : "-", tt / 10, tt % 10);
	return true;
}

void xpf_cmp_delta_text(uint64_t before, uint64_t after, xpf_buf *out)
{
	char hb[32], pc[32];
	uint64_t d = after >= before ? after - before : before - after;
	const char *sign = after >= before ? "+" : "-";
	xpf_buf_printf(out, "%s%s (%s%llu bytes", sign, xpf_human(d, hb), sign,
		       (unsigned long long)d);
	if (xpf_cmp_delta_pct(before, after, pc))
		xpf_buf_printf(out, ", %s%%", pc);
	xpf_buf_addc(out, ')');
}

/* ---- sides -------------------------------------------------------------- */

/* Executions per module, as modules/index.tsv counts them; NULL when the
 * capture has no host plane (the column is empty there too). */
static size_t *count_executions(const xpf_host *h, const xpf_runtime *rt)
{
	if (rt == NULL || !rt->has_host_plane)
		return NULL;
	size_t *n = xpf_calloc(h->nmodules ? h->nmodules : 1, sizeof *n);
	for (size_t i = 0; i < rt->nexecutions; i++) {
		long m = rt->executions[i].module;
		if (m >= 0 && (size_t)m < h->nmodules)
			n[m]++;
	}
	return n;
}

/* A module whose plan cannot be read has no plan figures (its own files
 * give EIO and capture/errors.txt says why). */
static void module_figs(xpf_host *h, long m, const size_t *execs, xpf_cmp_figs *f)
{
	memset(f, 0, sizeof *f);
	if (m < 0)
		return;
	const xpf_plan *p;
	xpf_error e = { 0 };
	if (xpf_host_plan(h, (size_t)m, &p, &e) != XPF_OK)
		xpf_host_note_error(h, &e);
	else if (p->has_assignment) {
		f->has_plan = true;
		f->v[XPF_CMP_PARAMETERS] = p->parameters_bytes;
		f->v[XPF_CMP_NON_ALIASED] = p->non_aliased_outputs_bytes;
		f->v[XPF_CMP_TEMP] = p->temp_bytes;
		f->v[XPF_CMP_HEAP_PEAK] = p->heap_peak_bytes;
		f->v[XPF_CMP_NEED] = p->need_bytes;
	}
	if (execs) {
		f->has_executions = true;
		f->v[XPF_CMP_EXECUTIONS] = execs[m];
	}
}

/* Whether a device pool has allocator events (as diag_rules_missing.c). */
static bool has_pool_events(const xpf_runtime *rt)
{
	bool pool = false;
	for (size_t a = 0; rt && a < rt->nallocators; a++)
		pool |= rt->allocators[a].is_pool;
	return rt && rt->has_events && pool;
}

/* In use at the start of the focus module's executions on the device the
 * diagnosis read: the last one's, and the mean rise from the first. */
static void side_runtime(xpf_cmp_side *s)
{
	const xpf_runtime *rt = s->rt;
	const xpf_diagnosis *d = s->d;
	if (s->focus >= 0 && rt == NULL)
		s->in_use_unknown = xpf_capture_is_hlo_only(s->h->cap) ?
					    "a bare HloProto, no allocator events" :
					    "its runtime cannot be read";
	if (rt == NULL || d == NULL)
		return;
	if (d->allocator >= 0 && (size_t)d->allocator < rt->nallocators) {
		s->has_pool = true;
		s->pool = &rt->allocators[d->allocator];
	}
	if (s->focus < 0)
		return;
	s->in_use_unknown = has_pool_events(rt) ? "it did not run" : "no allocator events";
	long first = -1, last = -1;
	size_t k = 0;
	for (size_t i = 0; i < rt->nexecutions; i++) {
		const xpf_rt_execution *x = &rt->executions[i];
		if (x->module != s->focus || !x->in_use_known ||
		    (d->device >= 0 && x->device != d->device))
			continue;
		if (first < 0)
			first = (long)i;
		last = (long)i;
		k++;
	}
	if (last < 0)
		return;
	s->in_use_unknown = NULL;
	s->has_in_use = true;
	s->in_use_bytes = rt->executions[last].in_use_at_start_bytes;
	if (k >= 2) {
		s->has_growth = true;
		s->growth_bytes = xpf_diff_u64(rt->executions[last].in_use_at_start_bytes,
					       rt->executions[first].in_use_at_start_bytes) /
				  (int64_t)(k - 1);
	}
}

/* A runtime that cannot be read leaves the runtime figures out (runtime/
 * gives EIO, capture/errors.txt says why); so does a failed diagnosis. */
static void side_open(xpf_cmp_side *s, xpf_host *h)
{
	xpf_error e = { 0 };
	s->h = h;
	s->focus = -1;
	s->prefix = s->h->path;
	if (!xpf_capture_is_hlo_only(h->cap) && xpf_host_runtime(h, &s->rt, &e) != XPF_OK) {
		xpf_host_note_error(h, &e);
		s->rt = NULL;
	}
	if (xpf_host_diagnosis(h, &s->d, &s->d_err) != XPF_OK)
		s->d = NULL;
}

/* ---- matching ------------------------------------------------------------- */

static const char *mod_name(const xpf_host *h, long m)
{
	return xpf_capture_module(h->cap, (size_t)m)->name;
}

/* The entry parameter shapes ("f32[8,128]{1,0};s32[]"), interned, or NULL
 * when the plan cannot be read.  The plan is the one every figure of the
 * comparison reads (module_figs), made once per module and kept by its host:
 * the shapes cost no decoding of their own. */
static const char *param_shapes(xpf_host *h, long m, xpf_intern *set, xpf_buf *b)
{
	const xpf_plan *p;
	xpf_error e = { 0 };
	if (xpf_host_plan(h, (size_t)m, &p, &e) != XPF_OK)
		return NULL;
	b->len = 0;
	for (size_t i = 0; i < p->nparams; i++)
		xpf_buf_printf(b, "%s%s", i ? ";" : "", p->params[i].shape);
	return xpf_intern_get(set, b->data, b->len);
}

static void add_pair(xpf_compare *c, long b, long a, enum xpf_cmp_how how)
{
	xpf_cmp_module *p = &c->modules[c->nmodules++];
	p->base = b;
	p->after = a;
	p->how = how;
}

/* Each side's modules by stem: group g's modules of side s are
 * at[s][first[s][g] .. first[s][g + 1]), in module order. */
struct stem_groups {
	size_t ngroups;
	size_t *first[2];
	long *at[2];
};

static void group_by_stem(xpf_host *const h[2], struct stem_groups *sg)
{
	xpf_intern *stems = xpf_intern_new();
	xpf_map of_stem;
	size_t *group[2];
	xpf_map_init(&of_stem, 2 * (h[0]->nmodules + h[1]->nmodules) + 2);
	sg->ngroups = 0;
	for (int s = 0; s < 2; s++) {
		group[s] = xpf_malloc((h[s]->nmodules ? h[s]->nmodules : 1) * sizeof *group[s]);
		for (size_t m = 0; m < h[s]->nmodules; m++) {
			const char *name = xpf_capture_module(h[s]->cap, m)->name;
			const char *stem = xpf_intern_get(stems, name, xpf_cmp_stem_len(name));
			int64_t g = of_stem.s[xpf_map_find(&of_stem, (uintptr_t)stem, 0)].val;
			if (g < 0) {
				g = (int64_t)sg->ngroups++;
				xpf_map_put(&of_stem, (uintptr_t)stem, 0, g);
			}
			group[s][m] = (size_t)g;
		}
	}
	for (int s = 0; s < 2; s++) { /* a counting sort: module order kept in a group */
		sg->first[s] = xpf_calloc(sg->ngroups + 1, sizeof *sg->first[s]);
		sg->at[s] = xpf_malloc((h[s]->nmodules ? h[s]->nmodules : 1) * sizeof *sg->at[s]);
		for (size_t m = 0; m < h[s]->nmodules; m++)
			sg->first[s][group[s][m] + 1]++;
		for (size_t g = 0; g < sg->ngroups; g++)
			sg->first[s][g + 1] += sg->first[s][g];
		size_t *next = xpf_malloc((sg->ngroups ? sg->ngroups : 1) * sizeof *next);
		memcpy(next, sg->first[s], sg->ngroups * sizeof *next);
		for (size_t m = 0; m < h[s]->nmodules; m++)
			sg->at[s][next[group[s][m]]++] = (long)m;
		free(next);
		free(group[s]);
	}
	xpf_map_free(&of_stem);
	xpf_intern_free(stems);
}

/* One group's pairs: one module on each side pairs by name; else by equal
 * parameter shapes (each after module, in order, with the first baseline
 * module of its shapes not taken), then in order (with the first not
 * taken).  A baseline module is taken in the shapes pass only by that pass,
 * so a list per shape, taken from its front, gives the first one not taken. */
static void match_group(xpf_host *const h[2], size_t g, const long *b, size_t nb, const long *a,
			size_t na, long *of_after, enum xpf_cmp_how *how, bool *taken,
			xpf_intern *shapes, xpf_map *by_shape, long *next_same, xpf_buf *scratch)
{
	if (na == 0 || nb == 0)
		return;
	if (na == 1 && nb == 1) {
		of_after[a[0]] = b[0];
		how[a[0]] = XPF_CMP_NAME;
		taken[b[0]] = true;
		return;
	}
	/* baseline modules by (shapes, group): the first in by_shape, the next
	 * in next_same */
	for (size_t k = nb; k-- > 0;) {
		const char *sb = param_shapes(h[0], b[k], shapes, scratch);
		if (sb == NULL)
			continue;
		int64_t old = xpf_map_put(by_shape, (uintptr_t)sb, g, b[k]);
		next_same[b[k]] = old;
	}
	for (size_t k = 0; k < na; k++) {
		const char *sa = param_shapes(h[1], a[k], shapes, scratch);
		if (sa == NULL)
			continue;
		size_t i = xpf_map_find(by_shape, (uintptr_t)sa, g);
		if (by_shape->s[i].val < 0)
			continue;
		long m = (long)by_shape->s[i].val;
		of_after[a[k]] = m;
		how[a[k]] = XPF_CMP_SHAPES;
		taken[m] = true;
		if (next_same[m] >= 0)
			by_shape->s[i].val = next_same[m];
		else
			xpf_map_del(by_shape, i);
	}
	size_t j = 0;
	for (size_t k = 0; k < na; k++) {
		if (of_after[a[k]] >= 0)
			continue;
		while (j < nb && taken[b[j]])
			j++;
		if (j == nb)
			break;
		of_after[a[k]] = b[j];
		how[a[k]] = XPF_CMP_ORDER;
		taken[b[j]] = true;
	}
}

/* Matching in time linear in the modules (SPEC §8): modules grouped by
 * stem once, each module's shapes made at most once; a capture of
 * thousands of modules of one name (a retracing loop, eager op-by-op
 * programs) would otherwise compare every pair. */
static void match_modules(xpf_compare *c)
{
	xpf_host *h[2] = { c->side[0].h, c->side[1].h };
	size_t nb = h[0]->nmodules, na = h[1]->nmodules;
	long *of_after = xpf_malloc((na ? na : 1) * sizeof *of_after);
	enum xpf_cmp_how *how = xpf_malloc((na ? na : 1) * sizeof *how);
	bool *taken = xpf_calloc(nb ? nb : 1, sizeof *taken);
	long *next_same = xpf_malloc((nb ? nb : 1) * sizeof *next_same);
	for (size_t a = 0; a < na; a++)
		of_after[a] = -1;
	struct stem_groups sg;
	group_by_stem(h, &sg);
	xpf_intern *shapes = xpf_intern_new();
	xpf_buf scratch = XPF_BUF_INIT;
	xpf_map by_shape;
	xpf_map_init(&by_shape, 2 * nb + 2);
	for (size_t g = 0; g < sg.ngroups; g++)
		match_group(h, g, sg.at[0] + sg.first[0][g], sg.first[0][g + 1] - sg.first[0][g],
			    sg.at[1] + sg.first[1][g], sg.first[1][g + 1] - sg.first[1][g],
			    of_after, how, taken, shapes, &by_shape, next_same, &scratch);
	xpf_map_free(&by_shape);
	xpf_buf_release(&scratch);
	xpf_intern_free(shapes);
	for (int s = 0; s < 2; s++) {
		free(sg.first[s]);
		free(sg.at[s]);
	}
	c->modules = xpf_calloc(na + nb + 1, sizeof *c->modules);
	for (size_t a = 0; a < na; a++)
		if (of_after[a] >= 0)
			add_pair(c, of_after[a], (long)a, how[a]);
	c->nmatched = c->nmodules;
	for (size_t a = 0; a < na; a++)
		if (of_after[a] < 0)
			add_pair(c, -1, (long)a, XPF_CMP_NEW);
	c->nnew = c->nmodules - c->nmatched;
	for (size_t b = 0; b < nb; b++)
		if (!taken[b])
			add_pair(c, (long)b, -1, XPF_CMP_GONE);
	c->ngone = c->nmodules - c->nmatched - c->nnew;
	free(of_after);
	free(how);
	free(taken);
	free(next_same);
}

/* The compared modules: after's focus and its match; else the baseline's
 * focus and its match. */
static void choose_focus(xpf_compare *c)
{
	const xpf_diagnosis *db = c->side[0].d, *da = c->side[1].d;
	c->focus_pair = -1;
	for (size_t i = 0; i < c->nmodules && da && da->module >= 0; i++)
		if (c->modules[i].after == da->module)
			c->focus_pair = (long)i;
	if ((c->focus_pair < 0 || c->modules[c->focus_pair].base < 0) && db && db->module >= 0)
		for (size_t i = 0; i < c->nmodules; i++)
			if (c->modules[i].base == db->module && c->modules[i].after >= 0)
				c->focus_pair = (long)i;
	if (c->focus_pair >= 0) {
		c->side[0].focus = c->modules[c->focus_pair].base;
		c->side[1].focus = c->modules[c->focus_pair].after;
	} else {
		c->side[0].focus = db ? db->module : -1;
		c->side[1].focus = da ? da->module : -1;
	}
	for (int s = 0; s < 2; s++) {
		xpf_cmp_side *sd = &c->side[s];
		xpf_error e = { 0 };
		if (sd->focus >= 0 && xpf_host_plan(sd->h, (size_t)sd->focus, &sd->plan, &e) != XPF_OK)
			sd->plan = NULL;
		if (sd->plan && !sd->plan->has_assignment)
			sd->plan = NULL;
		side_runtime(sd);
	}
}

/* ---- peak buffers, allocators ---------------------------------------------- */

static int group_key_cmp(const xpf_cmp_group *x, const xpf_cmp_group *y)
{
	int r;
	if (x->role != y->role)
		return x->role < y->role ? -1 : 1;
	if ((r = strcmp(x->dtype, y->dtype)) != 0)
		return r;
	if ((r = strcmp(x->shape, y->shape)) != 0)
		return r;
	return strcmp(x->source, y->source);
}

static uint64_t group_change(const xpf_cmp_group *g)
{
	return g->bytes[1] >= g->bytes[0] ? g->bytes[1] - g->bytes[0] : g->bytes[0] - g->bytes[1];
}

static int group_cmp(const void *a, const void *b)
{
	const xpf_cmp_group *x = a, *y = b;
	uint64_t dx = group_change(x), dy = group_change(y);
	if (dx != dy)
		return dx > dy ? -1 : 1;
	uint64_t mx = x->bytes[0] > x->bytes[1] ? x->bytes[0] : x->bytes[1];
	uint64_t my = y->bytes[0] > y->bytes[1] ? y->bytes[0] : y->bytes[1];
	if (mx != my)
		return mx > my ? -1 : 1;
	return group_key_cmp(x, y);
}

static int group_key_qcmp(const void *a, const void *b) { return group_key_cmp(a, b); }

/* Each peak buffer of both sides as a group of its own, sorted by key and
 * merged: a focus module may have thousands of distinct keys. */
static void group_peaks(xpf_compare *c)
{
	size_t n = 0;
	for (int s = 0; s < 2; s++)
		n += c->side[s].plan ? c->side[s].plan->npeak : 0;
	xpf_cmp_group *one = xpf_calloc(n + 1, sizeof *one);
	size_t k = 0;
	for (int s = 0; s < 2; s++) {
		const xpf_plan *p = c->side[s].plan;
		for (size_t i = 0; p && i < p->npeak; i++) {
			const xpf_plan_peak *r = &p->peak[i];
			const xpf_plan_buffer *b = r->buffer;
			xpf_cmp_group *g = &one[k++];
			*g = (xpf_cmp_group){ .role = r->role,
					      .dtype = b ? b->dtype : "",
					      .shape = b ? b->shape : "",
					      .source = b && b->instr ? b->instr->source : "" };
			g->count[s] = 1;
			g->bytes[s] = r->bytes;
		}
	}
	xpf_qsort(one, n, sizeof *one, group_key_qcmp);
	c->groups = xpf_calloc(n + 1, sizeof *c->groups);
	for (size_t i = 0; i < n; i++) {
		xpf_cmp_group *g = c->ngroups ? &c->groups[c->ngroups - 1] : NULL;
		if (g == NULL || group_key_cmp(g, &one[i]) != 0) {
			c->groups[c->ngroups++] = one[i];
			continue;
		}
		for (int s = 0; s < 2; s++) {
			g->count[s] += one[i].count[s];
			g->bytes[s] += one[i].bytes[s];
		}
	}
	free(one);
	xpf_qsort(c->groups, c->ngroups, sizeof *c->groups, group_cmp);
}

static int alloc_cmp(const void *a, const void *b)
{
	return strcmp(((const xpf_cmp_alloc *)a)->name, ((const xpf_cmp_alloc *)b)->name);
}

static void match_allocators(xpf_compare *c)
{
	size_t cap = 0;
	for (int s = 0; s < 2; s++)
		cap += c->side[s].rt ? c->side[s].rt->nallocators : 0;
	c->allocs = xpf_calloc(cap + 1, sizeof *c->allocs);
	for (int s = 0; s < 2; s++) {
		const xpf_runtime *rt = c->side[s].rt;
		for (size_t i = 0; rt && i < rt->nallocators; i++) {
			xpf_cmp_alloc *a = NULL;
			for (size_t k = 0; k < c->nallocs && a == NULL; k++)
				if (strcmp(c->allocs[k].name, rt->allocators[i].name) == 0)
					a = &c->allocs[k];
			if (a == NULL) {
				a = &c->allocs[c->nallocs++];
				a->name = rt->allocators[i].name;
			}
			a->a[s] = &rt->allocators[i];
		}
	}
	xpf_qsort(c->allocs, c->nallocs, sizeof *c->allocs, alloc_cmp);
}

/* ---- the changes that matter ------------------------------------------------- */

static xpf_cmp_change *change_new(xpf_compare *c, const char *code, enum xpf_tag tag)
{
	c->changes = xpf_realloc_array(c->changes, c->nchanges + 1, sizeof *c->changes);
	xpf_cmp_change *ch = &c->changes[c->nchanges++];
	memset(ch, 0, sizeof *ch);
	ch->code = code;
	ch->tag = tag;
	return ch;
}

static void evidence(xpf_cmp_change *ch, const xpf_cmp_side *s, const char *what, long m)
{
	if (ch->nevidence >= sizeof ch->evidence / sizeof ch->evidence[0])
		return;
	xpf_buf b = XPF_BUF_INIT;
	if (m >= 0)
		xpf_buf_printf(&b, "%smodules/%s/%s", s->prefix, s->h->module_dirs[m], what);
	else
		xpf_buf_printf(&b, "%s%s", s->prefix, what);
	ch->evidence[ch->nevidence++] = xpf_buf_detach(&b, NULL);
}

static void both_evidence(xpf_cmp_change *ch, const xpf_compare *c, const char *what, bool in_module)
{
	for (int s = 0; s < 2; s++)
		if (!in_module || c->side[s].focus >= 0)
			evidence(ch, &c->side[s], what, in_module ? c->side[s].focus : -1);
}

static const char *focus_stem(const xpf_compare *c, size_t *len)
{
	const xpf_cmp_side *s = c->side[1].focus >= 0 ? &c->side[1] : &c->side[0];
	const char *n = s->focus >= 0 ? mod_name(s->h, s->focus) : "";
	*len = xpf_cmp_stem_len(n);
	return n;
}

/* "<what> of jit_step: 3.41 GiB -> 0 B: -3.41 GiB (-3664773120 bytes, -100.0%)" */
static void figure_change(xpf_compare *c, const char *code, enum xpf_tag tag, const char *what,
			  uint64_t before, uint64_t after, const char *file, bool in_module)
{
	if (before == after)
		return;
	char h1[32], h2[32];
	size_t sl;
	const char *stem = focus_stem(c, &sl);
	xpf_cmp_change *ch = change_new(c, code, tag);
	xpf_buf b = XPF_BUF_INIT;
	if (in_module)
		xpf_buf_printf(&b, "%s of %.*s: ", what, (int)sl, stem);
	else
		xpf_buf_printf(&b, "%s: ", what);
	xpf_buf_printf(&b, "%s -> %s: ", xpf_human(before, h1), xpf_human(after, h2));
	xpf_cmp_delta_text(before, after, &b);
	ch->text = xpf_buf_detach(&b, NULL);
	ch->has_figs = true;
	ch->before = before;
	ch->after = after;
	both_evidence(ch, c, file, in_module);
}

static void put_signed(xpf_buf *b, bool neg, uint64_t u)
{
	char hb[32];
	xpf_buf_printf(b, "%s%s", neg ? "-" : u ? "+" : "", xpf_human(u, hb));
}

/* The mean rise of in use from one execution of the focus module to the
 * next, on both sides: 0 for a side where it ran once.  A side where in
 * use is not known at all (no allocator events, a bare HloProto, a runtime
 * that cannot be read, a module that did not run) gives no change: a
 * rise on the other side is said beside "unknown", with no figures. */
static void growth_change(xpf_compare *c)
{
	const xpf_cmp_side *b = &c->side[0], *a = &c->side[1];
	if (!b->has_in_use && !a->has_in_use)
		return;
	size_t sl;
	const char *stem = focus_stem(c, &sl);
	xpf_buf t = XPF_BUF_INIT;
	xpf_buf_printf(&t, "in use at the start of %.*s's executions, mean rise per execution: ",
		       (int)sl, stem);
	if (!b->has_in_use || !a->has_in_use) {
		const xpf_cmp_side *known = b->has_in_use ? b : a, *other = b->has_in_use ? a : b;
		int64_t g = known->has_growth ? known->growth_bytes : 0;
		if (g == 0 || other->in_use_unknown == NULL) {
			xpf_buf_release(&t);
			return;
		}
		for (int s = 0; s < 2; s++) {
			if (&c->side[s] == known)
				put_signed(&t, g < 0, xpf_abs_i64(g));
			else
				xpf_buf_printf(&t, "unknown (%s)", other->in_use_unknown);
			xpf_buf_adds(&t, s ? "" : " -> ");
		}
		xpf_cmp_change *ch = change_new(c, "growth-per-execution", XPF_TAG_MEASURED);
		ch->text = xpf_buf_detach(&t, NULL);
		both_evidence(ch, c, "runtime/executions.tsv", false);
		return;
	}
	int64_t gb = b->has_growth ? b->growth_bytes : 0, ga = a->has_growth ? a->growth_bytes : 0;
	if (gb == ga) {
		xpf_buf_release(&t);
		return;
	}
	xpf_cmp_change *ch = change_new(c, "growth-per-execution", XPF_TAG_MEASURED);
	put_signed(&t, gb < 0, xpf_abs_i64(gb));
	xpf_buf_adds(&t, b->has_growth ? "" : " (it ran once)");
	xpf_buf_adds(&t, " -> ");
	put_signed(&t, ga < 0, xpf_abs_i64(ga));
	xpf_buf_adds(&t, a->has_growth ? ": " : " (it ran once): ");
	/* ga - gb, exact: its magnitude is below 2^64 */
	bool neg = ga < gb;
	uint64_t u = neg ? (uint64_t)gb - (uint64_t)ga : (uint64_t)ga - (uint64_t)gb;
	put_signed(&t, neg, u);
	xpf_buf_printf(&t, " (%s%llu bytes", neg ? "-" : "+", (unsigned long long)u);
	char pc[32];
	if (gb > 0 && ga >= 0 && xpf_cmp_delta_pct((uint64_t)gb, (uint64_t)ga, pc))
		xpf_buf_printf(&t, ", %s%%", pc);
	xpf_buf_addc(&t, ')');
	ch->text = xpf_buf_detach(&t, NULL);
	ch->has_figs = true;
	ch->signed_figs = true;
	ch->before = (uint64_t)gb;
	ch->after = (uint64_t)ga;
	both_evidence(ch, c, XPF_EV_RUNTIME(XPF_F_EXECUTIONS_TSV), false);
}

static bool has_code(const xpf_diagnosis *d, const char *code)
{
	return d && xpf_diag_find(d, code) != NULL;
}

/* Codes of one side that the other lacks, in the side's order. */
static void code_change(xpf_compare *c, int from, const char *code, const char *verb)
{
	const xpf_diagnosis *d = c->side[from].d, *o = c->side[1 - from].d;
	if (d == NULL)
		return;
	xpf_buf t = XPF_BUF_INIT;
	size_t n = 0;
	for (size_t i = 0; i < d->nfindings; i++) {
		const char *k = d->findings[i].code;
		bool seen = false;
		for (size_t j = 0; j < i && !seen; j++)
			seen = strcmp(d->findings[j].code, k) == 0;
		if (seen || has_code(o, k))
			continue;
		xpf_buf_printf(&t, "%s%s", n++ ? ", " : "", k);
	}
	if (n == 0) {
		xpf_buf_release(&t);
		return;
	}
	xpf_cmp_change *ch = change_new(c, code, XPF_TAG_INFERRED);
	xpf_buf b = XPF_BUF_INIT;
	xpf_buf_printf(&b, "%zu finding%s %s: ", n, n == 1 ? "" : "s", verb);
	xpf_buf_add(&b, t.data, t.len);
	xpf_buf_release(&t);
	ch->text = xpf_buf_detach(&b, NULL);
	evidence(ch, &c->side[from], "diagnosis.txt", -1);
}

/* The verdict: the focus module's need against the capacity, before and after. */
static void fit_change(xpf_compare *c)
{
	const xpf_cmp_side *b = &c->side[0], *a = &c->side[1];
	if (b->plan == NULL && a->plan == NULL)
		return;
	uint64_t nb = b->plan ? b->plan->need_bytes : 0, na = a->plan ? a->plan->need_bytes : 0;
	uint64_t cb = b->d ? b->d->capacity_bytes : 0, ca = a->d ? a->d->capacity_bytes : 0;
	bool fit_b = nb <= cb, fit_a = na <= ca;
	const char *code;
	if (b->plan == NULL || a->plan == NULL)
		code = "need";
	else if (cb == 0 || ca == 0)
		code = "need";
	else
		code = fit_b && fit_a ? "still-fits" :
		       fit_a          ? "fits-now" :
		       fit_b          ? "short-now" :
					"still-short";
	char h1[32], h2[32], h3[32];
	size_t sl;
	const char *stem = focus_stem(c, &sl);
	xpf_buf t = XPF_BUF_INIT;
	if (strcmp(code, "fits-now") == 0 || strcmp(code, "still-fits") == 0)
		xpf_buf_printf(&t, "%.*s %s, %s <= %s (headroom %s)", (int)sl, stem,
			       code[0] == 'f' ? "fits now" : "still fits", xpf_human(na, h1),
			       xpf_human(ca, h2), xpf_human(ca - na, h3));
	else if (strcmp(code, "short-now") == 0 || strcmp(code, "still-short") == 0)
		xpf_buf_printf(&t, "%.*s %s by %s, %s > %s", (int)sl, stem,
			       code[1] == 'h' ? "is short now" : "still short",
			       xpf_human(na - ca, h1), xpf_human(na, h2), xpf_human(ca, h3));
	else
		xpf_buf_printf(&t, "%.*s needs %s", (int)sl, stem, xpf_human(na, h1));
	if (b->plan) {
		xpf_buf_printf(&t, "; before: needed %s", xpf_human(nb, h1));
		if (cb)
			xpf_buf_printf(&t, " %s %s", nb <= cb ? "<=" : ">", xpf_human(cb, h2));
		if (cb && nb > cb)
			xpf_buf_printf(&t, ", short by %s", xpf_human(nb - cb, h3));
		else if (cb)
			xpf_buf_printf(&t, ", headroom %s", xpf_human(cb - nb, h3));
	}
	if (a->plan && b->plan && nb == na) {
		xpf_buf_adds(&t, "; need unchanged");
	} else if (a->plan && b->plan) {
		xpf_buf_adds(&t, "; need ");
		xpf_cmp_delta_text(nb, na, &t);
	}
	if (cb != ca && cb && ca) {
		xpf_buf_adds(&t, "; capacity ");
		xpf_cmp_delta_text(cb, ca, &t);
	}
	/* A capacity that is not a pool's, because the runtime cannot be read
	 * or has no pool's events, says so: else a change of capacity would
	 * read as the job's. */
	bool broken[2] = { false, false };
	for (int s = 0; s < 2; s++) {
		const xpf_cmp_side *sd = &c->side[s];
		const xpf_diagnosis *d = sd->d;
		if (d == NULL || d->capacity_bytes == 0 || xpf_capture_is_hlo_only(sd->h->cap))
			continue;
		broken[s] = d->runtime_error.code != 0;
		if (broken[s] || !has_pool_events(sd->rt))
			xpf_buf_printf(&t, "; %s %s, so its capacity is from %s",
				       s ? "this capture" : "the baseline",
				       broken[s] ?
					       "has a runtime that cannot be read (capture/errors.txt)" :
					       "has no allocator events of a device pool",
				       d->capacity_source);
	}
	enum xpf_tag tag = a->d && a->d->capacity_bytes ? a->d->capacity_tag : XPF_TAG_READ;
	xpf_cmp_change *ch = change_new(c, code, tag);
	ch->text = xpf_buf_detach(&t, NULL);
	ch->has_figs = b->plan && a->plan;
	ch->before = nb;
	ch->after = na;
	both_evidence(ch, c, "plan.json", true);
	evidence(ch, a, "diagnosis.txt", -1);
	for (int s = 0; s < 2; s++)
		if (broken[s])
			evidence(ch, &c->side[s], "capture/errors.txt", -1);
}

/* A file of compare/ for this pair, from the report root. */
static char *cmp_file(const xpf_compare *c, const char *name)
{
	xpf_buf b = XPF_BUF_INIT;
	xpf_buf_printf(&b, "%s%s", c->dir, name);
	return xpf_buf_detach(&b, NULL);
}

static void modules_change(xpf_compare *c)
{
	const char *what[2] = { "gone (only in the baseline)", "new (only after)" };
	const char *codes[2] = { "modules-gone", "modules-new" };
	for (int s = 1; s >= 0; s--) {
		size_t n = s ? c->nnew : c->ngone;
		if (n == 0)
			continue;
		xpf_cmp_change *ch = change_new(c, codes[s], XPF_TAG_READ);
		xpf_buf t = XPF_BUF_INIT;
		xpf_buf_printf(&t, "%zu module%s %s: ", n, n == 1 ? "" : "s", what[s]);
		size_t k = 0;
		for (size_t i = 0; i < c->nmodules; i++) {
			const xpf_cmp_module *m = &c->modules[i];
			if (m->how != (s ? XPF_CMP_NEW : XPF_CMP_GONE))
				continue;
			if (k++ == 8) {
				xpf_buf_adds(&t, ", ...");
				break;
			}
			xpf_buf_printf(&t, "%s%s", k > 1 ? ", " : "",
				       mod_name(c->side[s].h, s ? m->after : m->base));
		}
		ch->text = xpf_buf_detach(&t, NULL);
		ch->evidence[ch->nevidence++] = cmp_file(c, "modules.tsv");
	}
}

/* Matched modules other than the focus whose need changed: how many, the
 * largest change. */
static void other_modules_change(xpf_compare *c)
{
	size_t n = 0;
	long big = -1;
	uint64_t bigd = 0;
	for (size_t i = 0; i < c->nmatched; i++) {
		const xpf_cmp_module *m = &c->modules[i];
		if ((long)i == c->focus_pair || !m->fb.has_plan || !m->fa.has_plan)
			continue;
		uint64_t x = m->fb.v[XPF_CMP_NEED], y = m->fa.v[XPF_CMP_NEED];
		if (x == y)
			continue;
		n++;
		uint64_t d = x > y ? x - y : y - x;
		if (big < 0 || d > bigd) {
			big = (long)i;
			bigd = d;
		}
	}
	if (n == 0)
		return;
	const xpf_cmp_module *m = &c->modules[big];
	char h1[32], h2[32];
	xpf_cmp_change *ch = change_new(c, "modules-changed", XPF_TAG_READ);
	xpf_buf t = XPF_BUF_INIT;
	xpf_buf_printf(&t,
		       "%zu other module%s need%s other bytes; the largest change: %s %s -> %s: ", n,
		       n == 1 ? "" : "s", n == 1 ? "s" : "", mod_name(c->side[1].h, m->after),
		       xpf_human(m->fb.v[XPF_CMP_NEED], h1), xpf_human(m->fa.v[XPF_CMP_NEED], h2));
	xpf_cmp_delta_text(m->fb.v[XPF_CMP_NEED], m->fa.v[XPF_CMP_NEED], &t);
	ch->text = xpf_buf_detach(&t, NULL);
	ch->has_figs = true;
	ch->before = m->fb.v[XPF_CMP_NEED];
	ch->after = m->fa.v[XPF_CMP_NEED];
	ch->evidence[ch->nevidence++] = cmp_file(c, "modules.tsv");
}

static bool figs_equal(const xpf_cmp_figs *x, const xpf_cmp_figs *y)
{
	return x->has_plan == y->has_plan && x->has_executions == y->has_executions &&
	       memcmp(x->v, y->v, sizeof x->v) == 0;
}

static bool alloc_equal(const xpf_rt_allocator *x, const xpf_rt_allocator *y)
{
	return x && y && x->capacity_bytes == y->capacity_bytes &&
	       x->peak_in_window_bytes == y->peak_in_window_bytes &&
	       x->lifetime_peak_bytes == y->lifetime_peak_bytes &&
	       x->live_at_end_bytes == y->live_at_end_bytes;
}

/* Whether every figure compare/ shows is the same on both sides. */
static bool nothing_changed(const xpf_compare *c)
{
	if (c->nnew || c->ngone)
		return false;
	for (size_t i = 0; i < c->nmatched; i++)
		if (!figs_equal(&c->modules[i].fb, &c->modules[i].fa))
			return false;
	for (size_t i = 0; i < c->ngroups; i++)
		if (c->groups[i].bytes[0] != c->groups[i].bytes[1] ||
		    c->groups[i].count[0] != c->groups[i].count[1])
			return false;
	for (size_t i = 0; i < c->nallocs; i++)
		if (!alloc_equal(c->allocs[i].a[0], c->allocs[i].a[1]))
			return false;
	const xpf_cmp_side *b = &c->side[0], *a = &c->side[1];
	if ((b->d == NULL) != (a->d == NULL))
		return false;
	if (b->d && a->d && b->d->capacity_bytes != a->d->capacity_bytes)
		return false;
	return b->has_in_use == a->has_in_use && b->in_use_bytes == a->in_use_bytes &&
	       b->has_growth == a->has_growth && b->growth_bytes == a->growth_bytes;
}

static void find_changes(xpf_compare *c)
{
	const xpf_cmp_side *b = &c->side[0], *a = &c->side[1];
	fit_change(c);
	code_change(c, 0, "codes-gone", "went away");
	code_change(c, 1, "codes-new", "appeared");
	if (b->plan && a->plan) {
		static const enum xpf_role order[] = {
			XPF_PLAN_ROLE_FORWARD, XPF_PLAN_ROLE_BACKWARD,  XPF_PLAN_ROLE_WORKSPACE,
			XPF_PLAN_ROLE_OTHER,   XPF_PLAN_ROLE_PARAMETER, XPF_PLAN_ROLE_OUTPUT
		};
		static const char *const what[] = {
			"forward-kept bytes at the heap peak", "backward bytes at the heap peak",
			"workspace bytes at the heap peak",    "other bytes at the heap peak",
			"parameter bytes at the heap peak",    "output bytes at the heap peak",
		};
		for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
			figure_change(c, "peak-role", XPF_TAG_READ, what[i],
				      b->plan->role_bytes[order[i]], a->plan->role_bytes[order[i]],
				      "peak_buffers.tsv", true);
		figure_change(c, "heap-peak", XPF_TAG_READ, "heap peak", b->plan->heap_peak_bytes,
			      a->plan->heap_peak_bytes, "plan.json", true);
		figure_change(c, "temp", XPF_TAG_READ, "temp (the planned temp block)",
			      b->plan->temp_bytes, a->plan->temp_bytes, "plan.json", true);
		figure_change(c, "non-aliased-outputs", XPF_TAG_READ,
			      "non-aliased outputs (outputs that need new memory)",
			      b->plan->non_aliased_outputs_bytes,
			      a->plan->non_aliased_outputs_bytes, "plan.json", true);
		figure_change(c, "parameters", XPF_TAG_READ, "parameters", b->plan->parameters_bytes,
			      a->plan->parameters_bytes, "plan.json", true);
		figure_change(c, "donated", XPF_TAG_READ, "donated parameters",
			      b->plan->donated_bytes, a->plan->donated_bytes, "plan.json", true);
	}
	if (b->has_in_use && a->has_in_use)
		figure_change(c, "in-use-at-start", XPF_TAG_MEASURED,
			      "in use at the start of the focus module's last execution",
			      b->in_use_bytes, a->in_use_bytes,
			      XPF_EV_RUNTIME(XPF_F_EXECUTIONS_TSV), false);
	growth_change(c);
	if (b->has_pool && a->has_pool)
		figure_change(c, "pool-peak", XPF_TAG_MEASURED,
			      "the pool's peak in use (in the window)",
			      b->pool->peak_in_window_bytes, a->pool->peak_in_window_bytes,
			      XPF_EV_RUNTIME(XPF_F_ALLOCATORS_TSV), false);
	modules_change(c);
	other_modules_change(c);
	if (nothing_changed(c)) {
		for (size_t i = 0; i < c->nchanges; i++) {
			free(c->changes[i].text);
			for (size_t j = 0; j < c->changes[i].nevidence; j++)
				free(c->changes[i].evidence[j]);
		}
		free(c->changes);
		c->changes = NULL;
		c->nchanges = 0;
	}
}

void xpf_compare_build(xpf_host *base, xpf_host *after, const char *dir, xpf_compare *out)
{
	xpf_compare *c = out;
	memset(c, 0, sizeof *c);
	c->dir = xpf_strdup(dir);
	side_open(&c->side[0], base);
	side_open(&c->side[1], after);
	match_modules(c);
	size_t *eb = count_executions(base, c->side[0].rt),
	       *ea = count_executions(after, c->side[1].rt);
	for (size_t i = 0; i < c->nmodules; i++) {
		xpf_cmp_module *m = &c->modules[i];
		module_figs(base, m->base, eb, &m->fb);
		module_figs(after, m->after, ea, &m->fa);
	}
	free(eb);
	free(ea);
	choose_focus(c);
	group_peaks(c);
	match_allocators(c);
	find_changes(c);
}

void xpf_compare_release(xpf_compare *c)
{
	free(c->dir);
	free(c->modules);
	free(c->groups);
	free(c->allocs);
	for (size_t i = 0; i < c->nchanges; i++) {
		free(c->changes[i].text);
		for (size_t j = 0; j < c->changes[i].nevidence; j++)
			free(c->changes[i].evidence[j]);
	}
	free(c->changes);
	memset(c, 0, sizeof *c);
}

void xpf_compare_free(void *c)
{
	if (c == NULL)
		return;
	xpf_compare_release(c);
	free(c);
}
