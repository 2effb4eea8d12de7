/* The rules of SPEC §5.2: each looks at the focus plan, the runtime, or
 * both, and adds a finding with its figures, evidence and fixes when its
 * threshold is met.  Thresholds are the spec's, so a user can check why a
 * code appears. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/diag_priv.h"

#define PCT_OF(part, whole) ((whole) ? (double)(part) * 100.0 / (double)(whole) : 0.0)

static uint64_t sub0(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

/* Dimensions of "f32[8,8,1024,1024]{3,2,1,0}"; returns their count (<= 8). */
static int shape_dims(const char *shape, uint64_t dims[8])
{
	const char *p = shape ? strchr(shape, '[') : NULL;
	int n = 0;
	if (p == NULL || shape[0] == '(')
		return 0;
	p++;
	while (*p && *p != ']' && n < 8) {
		char *end;
		unsigned long long v = strtoull(p, &end, 10);
		if (end == p)
			return 0;
		dims[n++] = v;
		p = end;
		if (*p == ',')
			p++;
	}
	return n;
}

/* A B·H·S·S-like buffer: the last two dimensions equal and at least 128. */
static bool is_square_seq(const char *shape)
{
	uint64_t dims[8];
	int n = shape_dims(shape, dims);
	return n >= 3 && dims[n - 1] == dims[n - 2] && dims[n - 1] >= 128;
}

static const char *peak_shape(const xpf_plan_peak *r)
{
	return r->buffer && r->buffer->shape ? r->buffer->shape : "";
}

/* "f32[8,128]{1,0}" -> "f32[8,128]" (the layout is noise in a sentence). */
static void put_shape(xpf_buf *b, const char *shape)
{
	const char *brace = shape[0] == '(' ? NULL : strchr(shape, '{');
	xpf_buf_add(b, shape, brace ? (size_t)(brace - shape) : strlen(shape));
}

static const char *peak_source(const xpf_plan_peak *r)
{
	return r->buffer && r->buffer->instr ? r->buffer->instr->source : "";
}

static const char *peak_opname(const xpf_plan_peak *r)
{
	return r->buffer && r->buffer->instr ? r->buffer->instr->op_name : "";
}

/* The last component of an op_name ("jit(f)/jvp(attn)/softmax" -> "softmax"). */
static const char *op_tail(const char *op)
{
	const char *s = strrchr(op, '/');
	return s ? s + 1 : op;
}

/* The largest group of peak rows of one role with the same shape and
 * source line: its count, bytes, and a representative row. */
struct group {
	size_t count;
	uint64_t bytes;
	const xpf_plan_peak *row;
};

/* The repeated blocks forward-kept buffers come from (SPEC 5.3): the name
 * stack component `<prefix>_<n>` (block_3, layers_12) that the most
 * distinct n share among the role's rows at the peak. */
struct blocks {
	size_t k;             /* distinct blocks; 0: none repeated */
	uint64_t bytes;       /* the role's bytes inside them */
	char stack[160];      /* "jit(step)/jvp(model)/block_N" */
};

/* The first component of op that ends in _<digits>: its prefix length
 * (*start: where the component starts), or 0. */
static size_t block_component(const char *op, size_t *start, long *num)
{
	for (const char *c = op; *c;) {
		size_t n = strcspn(c, "/");
		const char *u = NULL;
		for (const char *q = c; q < c + n; q++)
			if (*q == '_')
				u = q;
		if (u && u > c && u + 1 < c + n && strspn(u + 1, "0123456789") == (size_t)(c + n - u - 1)) {
			*start = (size_t)(c - op);
			*num = strtol(u + 1, NULL, 10);
			return (size_t)(u - c);
		}
		c += n + (c[n] == '/');
	}
	return 0;
}

static int long_cmp(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return x < y ? -1 : x > y;
}

static struct blocks find_blocks(const xpf_plan *p, enum xpf_role role)
{
	struct blocks best = { 0 };
	long *nums = calloc(p->npeak ? p->npeak : 1, sizeof *nums);
	if (nums == NULL)
		abort();
	for (size_t i = 0; i < p->npeak; i++) {
		size_t st, pl;
		long num;
		const char *op = peak_opname(&p->peak[i]);
		if (p->peak[i].role != role || (pl = block_component(op, &st, &num)) == 0)
			continue;
		/* this prefix's rows: their numbers and bytes (each prefix once) */
		bool seen = false;
		for (size_t j = 0; j < i && !seen; j++) {
			size_t st2, pl2;
			long n2;
			const char *o2 = peak_opname(&p->peak[j]);
			seen = p->peak[j].role == role && (pl2 = block_component(o2, &st2, &n2)) == pl &&
			       strncmp(o2 + st2, op + st, pl) == 0;
		}
		if (seen)
			continue;
		size_t nn = 0;
		uint64_t bytes = 0;
		for (size_t j = i; j < p->npeak; j++) {
			size_t st2, pl2;
			long n2;
			const char *o2 = peak_opname(&p->peak[j]);
			if (p->peak[j].role == role && (pl2 = block_component(o2, &st2, &n2)) == pl &&
			    strncmp(o2 + st2, op + st, pl) == 0) {
				nums[nn++] = n2;
				bytes += p->peak[j].bytes;
			}
		}
		xpf_qsort(nums, nn, sizeof *nums, long_cmp);
		size_t k = nn ? 1 : 0;
		for (size_t j = 1; j < nn; j++)
			k += nums[j] != nums[j - 1];
		if (k > best.k || (k == best.k && bytes > best.bytes)) {
			best.k = k;
			best.bytes = bytes;
			snprintf(best.stack, sizeof best.stack, "%.*s_N", (int)(st + pl), op);
		}
	}
	free(nums);
	if (best.k < 2)
		best.k = 0;
	return best;
}

/* Are any of the role's B*H*S*S-shaped buffers at the peak f32? */
static bool sq_f32(const xpf_plan *p, enum xpf_role role)
{
	for (size_t i = 0; i < p->npeak; i++)
		if (p->peak[i].role == role && is_square_seq(peak_shape(&p->peak[i])) && p->peak[i].buffer &&
		    strcmp(p->peak[i].buffer->dtype, "f32") == 0)
			return true;
	return false;
}

static struct group largest_group(const xpf_plan *p, enum xpf_role role)
{
	struct group best = { 0 };
	for (size_t i = 0; i < p->npeak; i++) {
		const xpf_plan_peak *r = &p->peak[i];
		if (r->role != role)
			continue;
		bool seen = false;
		for (size_t j = 0; j < i && !seen; j++)
			seen = p->peak[j].role == role &&
			       strcmp(peak_shape(&p->peak[j]), peak_shape(r)) == 0 &&
			       strcmp(peak_source(&p->peak[j]), peak_source(r)) == 0;
		if (seen)
			continue;
		struct group g = { 0, 0, r };
		for (size_t j = i; j < p->npeak; j++)
			if (p->peak[j].role == role &&
			    strcmp(peak_shape(&p->peak[j]), peak_shape(r)) == 0 &&
			    strcmp(peak_source(&p->peak[j]), peak_source(r)) == 0) {
				g.count++;
				g.bytes += p->peak[j].bytes;
			}
		if (g.bytes > best.bytes)
			best = g;
	}
	return best;
}

static void describe_group(const struct group *g, xpf_buf *b)
{
	char h1[32];
	const char *src = peak_source(g->row), *op = peak_opname(g->row);
	xpf_buf_printf(b, "%zu x ", g->count);
	put_shape(b, peak_shape(g->row));
	xpf_buf_printf(b, " (%s in all)", xpf_human(g->bytes, h1));
	if (*src)
		xpf_buf_printf(b, " at %s", src);
	if (*op)
		xpf_buf_printf(b, " (%s)", op_tail(op));
}

static const char *role_words(enum xpf_role r)
{
	switch (r) {
	case XPF_PLAN_ROLE_FORWARD: return "forward-kept (activations kept for the backward pass)";
	case XPF_PLAN_ROLE_BACKWARD: return "backward (gradients and their temporaries)";
	case XPF_PLAN_ROLE_WORKSPACE: return "library workspace (GEMM/conv scratch)";
	default: return xpf_role_name(r);
	}
}

static void role_split(const xpf_plan *p, xpf_buf *b)
{
	bool done[XPF_NROLES] = { false };
	char h1[32], pc[32];
	for (int k = 0; k < XPF_NROLES; k++) {
		int best = -1;
		for (int r = 0; r < XPF_NROLES; r++)
			if (!done[r] && p->role_bytes[r] &&
			    (best < 0 || p->role_bytes[r] > p->role_bytes[best]))
				best = r;
		if (best < 0)
			break;
		done[best] = true;
		xpf_buf_printf(b, "%s%s %s%% (%s)", k ? ", " : "", xpf_role_name(best),
			       xpf_pct(p->role_bytes[best], p->heap_peak_bytes, pc),
			       xpf_human(p->role_bytes[best], h1));
	}
}

/* tsl's HumanReadableNumBytes, as XLA's OOM messages print sizes (reference
 * §9): "<n>B", one decimal for KiB, two for MiB and above, no space. */
static const char *tsl_human(uint64_t v, char out[32])
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	if (v < 1024) {
		snprintf(out, 32, "%lluB", (unsigned long long)v);
		return out;
	}
	long double x = (long double)v / 1024.0L;
	int u = 0;
	while (x >= 1024.0L && u < 5) {
		x /= 1024.0L;
		u++;
	}
	snprintf(out, 32, u == 0 ? "%.1Lf%s" : "%.2Lf%s", x, units[u]);
	return out;
}

static const char *const role_fig[XPF_NROLES] = {
	"role_parameter_bytes", "role_output_bytes", "role_workspace_bytes",
	"role_backward_bytes", "role_forward_bytes", "role_other_bytes",
};

/* ---- the BFC fragmentation stat (SPEC 5.3) ------------------------------- */

/* The `fragmentation` stat of allocator event i (free memory outside the
 * largest free chunk, as a fraction of the free memory; reference §6.1),
 * read back from its line: the runtime keeps no copy.  False when the
 * event carries none (other allocators, older captures) or is NaN. */
static bool event_frag(const xpf_diag_ctx *c, size_t i, double *out)
{
	const xpf_runtime *rt = c->rt;
	const xpf_rt_event *ev = &rt->events[i];
	const xpf_plane *pl = rt->host_plane;
	uint32_t l = xpf_rt_ev_line(rt, ev);
	int64_t base;
	xpf_error e = { 0 };
	if (pl == NULL || l >= pl->nlines || xpf_capture_time_base(c->h->cap, &base, &e) != XPF_OK)
		return false;
	xpf_event_iter it;
	xpf_event x;
	xpf_stat st;
	uint64_t addr;
	xpf_events_begin(pl, l, &it);
	while (xpf_events_next(&it, &x, &e) == 1) {
		__int128 t = ((__int128)pl->lines[l].timestamp_ns - base) * 1000 + x.offset_ps;
		if (t != ev->t_ps || strncmp(x.name, "Memory", 6) != 0 ||
		    xpf_event_stat(pl, &x, "addr", &st, &e) != 1 || !xpf_stat_u64(&st, &addr) || addr != ev->addr)
			continue;
		return xpf_event_stat(pl, &x, "fragmentation", &st, &e) == 1 && xpf_stat_f64(&st, out) &&
		       *out == *out;
	}
	return false;
}

/* The last event of allocator a strictly before t_ps, or -1. */
static long event_before(const xpf_runtime *rt, int a, int64_t t_ps)
{
	for (size_t i = xpf_rt_first_event_at(rt, t_ps); i-- > 0;)
		if (xpf_rt_ev_allocator(rt, &rt->events[i]) == a)
			return (long)i;
	return -1;
}

/* "; BFC fragmentation (free memory outside the largest free chunk): 12.5%
 * when the request failed, 3.0% at the pool's peak (2.75 GiB)" for the
 * focus allocator; the failure is the last event before fail_ps (0: none).
 * Nothing when the events carry no such stat. */
static void frag_text(const xpf_diag_ctx *c, xpf_finding *f, int64_t fail_ps, xpf_buf *b)
{
	const xpf_runtime *rt = c->rt;
	int a = c->d->allocator;
	double at_fail, at_peak;
	char h1[32];
	if (rt == NULL || a < 0)
		return;
	const xpf_rt_allocator *al = &rt->allocators[a];
	long fi = fail_ps ? event_before(rt, a, fail_ps) : -1;
	bool has_fail = fi >= 0 && event_frag(c, (size_t)fi, &at_fail);
	bool has_peak = al->peak_event >= 0 && event_frag(c, (size_t)al->peak_event, &at_peak);
	if (!has_fail && !has_peak)
		return;
	xpf_buf_printf(b, "; BFC fragmentation of %s (free memory outside its largest free chunk): ", al->name);
	if (has_fail) {
		xpf_buf_printf(b, "%.1f%% when the request failed", at_fail * 100);
		xpf_diag_str(f, "fragmentation_at_failure_pct", "%.1f", at_fail * 100);
	}
	if (has_peak) {
		xpf_buf_printf(b, "%s%.1f%% at its peak (%s)", has_fail ? ", " : "", at_peak * 100,
			       xpf_human(al->peak_in_window_bytes, h1));
		xpf_diag_str(f, "fragmentation_at_peak_pct", "%.1f", at_peak * 100);
	}
}

/* ---- plan-exceeds-pool, near-fit, fits, mostly-* -------------------------- */

static enum xpf_tag verdict_tag(const xpf_diag_ctx *c)
{
	return c->d->capacity_tag == XPF_TAG_MEASURED ? XPF_TAG_MEASURED : XPF_TAG_READ;
}

static void offer_fraction(xpf_diag_ctx *c, xpf_finding *f, uint64_t need)
{
	const xpf_diagnosis *d = c->d;
	char h1[32], h2[32];
	if (d->memory_bytes == 0 || d->capacity_tag != XPF_TAG_MEASURED)
		return;
	/* Leave 5% of the device to the runtime and the libraries. */
	uint64_t room = d->memory_bytes / 20 * 19;
	if (need <= room) {
		unsigned frac = (unsigned)((need * 100 + d->memory_bytes - 1) / d->memory_bytes) + 2;
		if (frac > 95)
			frac = 95;
		uint64_t pool = d->memory_bytes / 100 * frac;
		/* SPEC 5.3: capacity is not a saving; it comes after the
		 * program fixes, with what it takes from outside the pool */
		char h3[32];
		size_t nfix = f->nfixes;
		xpf_diag_addfix(c, f, 0, 0,
				"the memory the CUDA context, cuDNN/cuBLAS workspaces and NCCL need outside the pool; try the program fixes first",
				"after the program fixes, if still short: XLA_PYTHON_CLIENT_MEM_FRACTION=.%02u adds %s to the pool (not a saving); the device has %s and the step needs %s%s",
				frac, xpf_human(sub0(pool, d->capacity_bytes), h3), xpf_human(d->memory_bytes, h1),
				xpf_human(need, h2),
				d->fraction_set ? " (the capacity is not 75% of the device: the fraction is set already)" : "");
		if (f->nfixes > nfix)
			f->fixes[nfix].after_program = true;
	}
}

/* The request that failed (SPEC §5.3): the first planned run-time
 * allocation (not a parameter, constant or thread-local) of the focus
 * execution that never came, when that execution never launched and the
 * join matched what came before it; else NULL. */
static const xpf_plan_alloc *failed_request(const xpf_diag_ctx *c)
{
	const xpf_runtime *rt = c->rt;
	const xpf_plan *p = c->p;
	long x = c->d->execution;
	if (rt == NULL || x < 0 || rt->executions[x].launched != XPF_LAUNCHED_NO ||
	    rt->executions[x].module != c->d->module)
		return NULL;
	const xpf_rt_execution *e = &rt->executions[x];
	bool *came = calloc(p->nallocs ? p->nallocs : 1, sizeof *came);
	if (came == NULL)
		abort();
	for (size_t i = xpf_rt_first_event_at(rt, e->start_ps); i < rt->nevents && rt->events[i].t_ps <= e->end_ps; i++) {
		const xpf_rt_event *ev = &rt->events[i];
		if (ev->execution == x && ev->kind == XPF_RT_ALLOC && ev->buffer_allocation >= 0 &&
		    (size_t)ev->buffer_allocation < p->nallocs)
			came[ev->buffer_allocation] = true;
	}
	const xpf_plan_alloc *first = NULL;
	for (size_t i = 0; i < p->nallocs && first == NULL; i++) {
		const xpf_plan_alloc *a = &p->allocs[i];
		if (!came[i] && a->bytes > 0 && xpf_plan_device_color(p, a->color) &&
		    (a->kind == XPF_KIND_OUTPUT || a->kind == XPF_KIND_TEMP))
			first = a;
	}
	free(came);
	return first;
}

/* "; the request that failed: ..., and what cannot help" */
static void failed_request_text(const xpf_diag_ctx *c, const xpf_plan_alloc *a, xpf_buf *b)
{
	const xpf_plan *p = c->p;
	const xpf_plan_buffer *buf = a->largest >= 0 ? &p->buffers[a->largest] : NULL;
	char tsl[32], h1[32], h2[32];
	bool block = a->kind == XPF_KIND_TEMP && a->bytes * 2 > p->temp_bytes;
	xpf_buf_printf(b, "; the request that failed (execution %u's first planned allocation that never came): allocation %lld, %s, ",
		       c->rt->executions[c->d->execution].n, (long long)a->index, xpf_human(a->bytes, h1));
	if (block)
		xpf_buf_adds(b, "the temp block");
	else if (buf)
		xpf_buf_printf(b, "%s %s of %s", a->kind == XPF_KIND_OUTPUT ? "output" : "temp", buf->shape,
			       buf->instr ? buf->instr->name : "?");
	else
		xpf_buf_adds(b, a->kind == XPF_KIND_OUTPUT ? "an output" : "a temp allocation");
	xpf_buf_printf(b, "; XLA says \"Out of memory while trying to allocate %s\"", tsl_human(a->bytes, tsl));
	uint64_t cap = c->d->capacity_bytes, mem = c->d->memory_bytes;
	if (mem && p->need_bytes > mem)
		xpf_buf_printf(b, "; the need exceeds the device's memory (%s): no memory fraction can help",
			       xpf_human(mem, h2));
	else if (a->bytes > cap)
		xpf_buf_adds(b, "; one request larger than the pool: freeing other arrays cannot help, only a smaller program or a larger pool");
}

/* SPEC 5.2 `plan`: no capacity is known (a bare HloProto without
 * --capacity): what takes the memory, so the plan alone still answers. */
static void rule_plan_only(xpf_diag_ctx *c)
{
	const xpf_plan *p = c->p;
	char h1[32], h2[32], h3[32], h4[32], h5[32];
	xpf_buf b = XPF_BUF_INIT;
	xpf_finding *f = xpf_diag_add(c, "plan", XPF_TAG_READ, c->d->module);
	xpf_buf_printf(&b, "%s needs %s: parameters %s + non-aliased outputs %s + temp %s + constants %s",
		       p->module, xpf_human(p->need_bytes, h1), xpf_human(p->parameters_bytes, h2),
		       xpf_human(p->non_aliased_outputs_bytes, h3), xpf_human(p->temp_bytes, h4),
		       xpf_human(p->constants_bytes, h5));
	if (p->simulated || p->npeak) {
		xpf_buf_printf(&b, "; at the heap peak (%s): ", xpf_human(p->heap_peak_bytes, h1));
		role_split(p, &b);
	}
	xpf_buf_adds(&b, "; no capacity is known: give the pool with --capacity BYTES (JAX's GPU pool is 75% of the device memory by default)");
	xpf_diag_text(f, &b);
	xpf_diag_num(f, "need_bytes", p->need_bytes);
	xpf_diag_num(f, "parameters_bytes", p->parameters_bytes);
	xpf_diag_num(f, "non_aliased_outputs_bytes", p->non_aliased_outputs_bytes);
	xpf_diag_num(f, "temp_bytes", p->temp_bytes);
	xpf_diag_num(f, "constants_bytes", p->constants_bytes);
	xpf_diag_num(f, "heap_peak_bytes", p->heap_peak_bytes);
	for (int r = 0; r < XPF_NROLES; r++)
		xpf_diag_num(f, role_fig[r], p->role_bytes[r]);
	xpf_diag_evidence(f, "modules/%s/plan.json", c->dir);
	xpf_diag_evidence(f, "modules/%s/peak_buffers.tsv", c->dir);
}

static void rule_verdict(xpf_diag_ctx *c)
{
	const xpf_plan *p = c->p;
	const xpf_diagnosis *d = c->d;
	char h1[32], h2[32], h3[32], h4[32], h5[32], h6[32];
	xpf_buf b = XPF_BUF_INIT;

	if (p == NULL || !p->has_assignment)
		return;
	if (d->capacity_bytes == 0) {
		rule_plan_only(c);
		return;
	}
	uint64_t need = p->need_bytes, cap = d->capacity_bytes;
	bool exceeds = need > cap;
	bool near = !exceeds && need >= cap / 20 * 19;

	if (exceeds) {
		xpf_finding *f = xpf_diag_add(c, "plan-exceeds-pool", verdict_tag(c), d->module);
		xpf_buf_printf(&b, "%s needs %s > capacity %s (short by %s); parameters %s + non-aliased outputs (outputs that need new memory) %s + temp %s",
			       p->module, xpf_human(need, h1), xpf_human(cap, h2),
			       xpf_human(need - cap, h3), xpf_human(p->parameters_bytes, h4),
			       xpf_human(p->non_aliased_outputs_bytes, h5), xpf_human(p->temp_bytes, h6));
		if (p->constants_bytes)
			xpf_buf_printf(&b, " + constants %s", xpf_human(p->constants_bytes, h1));
		if (p->simulated || p->npeak) {
			xpf_buf_printf(&b, "; at the heap peak (%s", xpf_human(p->heap_peak_bytes, h1));
			if (p->peak_instruction && *p->peak_instruction)
				xpf_buf_printf(&b, ", at %s", p->peak_instruction);
			xpf_buf_adds(&b, "): ");
			role_split(p, &b);
		} else {
			xpf_buf_adds(&b, "; no heap-simulator trace, so no role split at the peak");
		}
		const xpf_plan_alloc *fr = failed_request(c);
		if (fr)
			failed_request_text(c, fr, &b);
		else if (p->temp_bytes) {
			char tsl[32];
			xpf_buf_printf(&b, "; an OOM error names the first request that did not fit, most often the temp block: \"Out of memory while trying to allocate %s\" (or %llu bytes)",
				       tsl_human(p->temp_bytes, tsl), (unsigned long long)p->temp_bytes);
		}
		xpf_diag_text(f, &b);
		xpf_diag_num(f, "need_bytes", need);
		xpf_diag_num(f, "capacity_bytes", cap);
		xpf_diag_num(f, "excess_bytes", need - cap);
		xpf_diag_num(f, "parameters_bytes", p->parameters_bytes);
		xpf_diag_num(f, "non_aliased_outputs_bytes", p->non_aliased_outputs_bytes);
		xpf_diag_num(f, "temp_bytes", p->temp_bytes);
		xpf_diag_num(f, "constants_bytes", p->constants_bytes);
		xpf_diag_num(f, "heap_peak_bytes", p->heap_peak_bytes);
		if (fr) {
			xpf_diag_num(f, "failed_request_bytes", fr->bytes);
			xpf_diag_num(f, "failed_allocation", (uint64_t)fr->index);
		}
		for (int r = 0; r < XPF_NROLES; r++)
			xpf_diag_num(f, role_fig[r], p->role_bytes[r]);
		xpf_diag_evidence(f, "modules/%s/plan.json", c->dir);
		xpf_diag_evidence(f, "modules/%s/peak_buffers.tsv", c->dir);
		if (d->allocator >= 0)
			xpf_diag_evidence(f, "runtime/allocators.tsv");
		offer_fraction(c, f, need);
	} else if (near) {
		xpf_finding *f = xpf_diag_add(c, "near-fit", verdict_tag(c), d->module);
		xpf_buf_printf(&b, "%s needs %s of capacity %s: a margin of only %s (%s%%); BFC needs contiguous chunks, so a near-fit can still fail through fragmentation",
			       p->module, xpf_human(need, h1), xpf_human(cap, h2),
			       xpf_human(cap - need, h3), xpf_pct(cap - need, cap, h4));
		frag_text(c, f, 0, &b);
		xpf_diag_text(f, &b);
		xpf_diag_num(f, "need_bytes", need);
		xpf_diag_num(f, "capacity_bytes", cap);
		xpf_diag_num(f, "margin_bytes", cap - need);
		xpf_diag_evidence(f, "modules/%s/plan.json", c->dir);
		if (d->allocator >= 0)
			xpf_diag_evidence(f, "runtime/allocators.tsv");
		offer_fraction(c, f, need);
	} else {
		xpf_finding *f = xpf_diag_add(c, "fits", verdict_tag(c), d->module);
		xpf_buf_printf(&b, "%s needs %s of capacity %s: headroom %s (%s%%)",
			       p->module, xpf_human(need, h1), xpf_human(cap, h2),
			       xpf_human(cap - need, h3), xpf_pct(cap - need, cap, h4));
		if (d->capacity_tag == XPF_TAG_READ && d->memory_bytes == cap)
			xpf_buf_printf(&b, " (capacity = the device's memory_size; JAX's GPU pool is 75%% of it by default: %s)",
				       xpf_human(cap / 4 * 3, h5));
		xpf_diag_text(f, &b);
		xpf_diag_num(f, "need_bytes", need);
		xpf_diag_num(f, "capacity_bytes", cap);
		xpf_diag_num(f, "headroom_bytes", cap - need);
		xpf_diag_evidence(f, "modules/%s/plan.json", c->dir);
		if (d->allocator >= 0)
			xpf_diag_evidence(f, "runtime/allocators.tsv");
	}
	if (!exceeds && !near)
		return;

	/* The largest of forward / backward / workspace, if it holds >= 25%. */
	static const enum xpf_role three[] = { XPF_PLAN_ROLE_FORWARD, XPF_PLAN_ROLE_BACKWARD, XPF_PLAN_ROLE_WORKSPACE };
	int best = -1;
	for (int i = 0; i < 3; i++)
		if (best < 0 || p->role_bytes[three[i]] > p->role_bytes[three[best]])
			best = i;
	enum xpf_role role = three[best];
	uint64_t rb = p->role_bytes[role];
	if (p->heap_peak_bytes == 0 || rb == 0 || rb * 4 < p->heap_peak_bytes)
		return;
	static const char *const codes[] = { "mostly-forward", "mostly-backward", "mostly-workspace" };
	xpf_finding *f = xpf_diag_add(c, codes[best], XPF_TAG_INFERRED, d->module);
	struct group g = largest_group(p, role);
	xpf_buf_printf(&b, "%s%% of the heap peak (%s of %s) is %s",
		       xpf_pct(rb, p->heap_peak_bytes, h1), xpf_human(rb, h2),
		       xpf_human(p->heap_peak_bytes, h3), role_words(role));
	if (g.row) {
		xpf_buf_adds(&b, "; the largest: ");
		describe_group(&g, &b);
	}
	uint64_t sq = 0;
	for (size_t i = 0; i < p->npeak; i++)
		if (p->peak[i].role == role && is_square_seq(peak_shape(&p->peak[i])))
			sq += p->peak[i].bytes;
	if (role == XPF_PLAN_ROLE_FORWARD && sq)
		xpf_buf_printf(&b, "; %s of it in B*H*S*S-shaped buffers", xpf_human(sq, h1));
	xpf_diag_text(f, &b);
	xpf_diag_str(f, "share_pct", "%s", xpf_pct(rb, p->heap_peak_bytes, h1));
	xpf_diag_num(f, "role_bytes", rb);
	xpf_diag_num(f, "heap_peak_bytes", p->heap_peak_bytes);
	if (g.row) {
		xpf_diag_num(f, "largest_group_bytes", g.bytes);
		xpf_diag_num(f, "largest_group_count", g.count);
		xpf_diag_str(f, "largest_group_shape", "%.39s", peak_shape(g.row));
	}
	if (role == XPF_PLAN_ROLE_FORWARD)
		xpf_diag_num(f, "square_seq_bytes", sq);
	xpf_diag_evidence(f, "modules/%s/peak_buffers.tsv", c->dir);
	xpf_diag_evidence(f, "modules/%s/by_source.tsv", c->dir);

	if (role == XPF_PLAN_ROLE_FORWARD) {
		/* jax.checkpoint on each of k repeated blocks keeps the blocks'
		 * inputs and recomputes one block at a time in the backward
		 * pass: what the blocks keep beyond one block leaves the peak.
		 * One block (or none repeated) gives little. */
		struct blocks bl = find_blocks(p, role);
		uint64_t s = bl.k ? bl.bytes / bl.k * (bl.k - 1) : 0;
		if (bl.k)
			xpf_diag_addfix(c, f, s, sub0(need, s), "about one extra forward pass per step (~+30% step time)",
					"wrap each %s (%zu blocks keep %s of the %s forward-kept) in jax.checkpoint, saving about %s; the backward pass holds one block's activations at a time; in Flax nn.remat, or a policy such as jax.checkpoint_policies.dots_with_no_batch_dims_saveable to keep the matmuls",
					bl.stack, bl.k, xpf_human(bl.bytes, h1), xpf_human(rb, h2), xpf_human(s, h3));
		else
			xpf_diag_addfix(c, f, 0, 0, "about one extra forward pass per step",
					"jax.checkpoint helps little here: the forward-kept buffers come from no repeated block (layer_N/block_N in the name stack), so the whole forward would be recomputed and live again in the backward pass; if the layers run in a jax.lax.scan, checkpoint the scanned body instead (jax.checkpoint with a jax.checkpoint_policies policy)");
		s = rb / 2;
		xpf_diag_addfix(c, f, s, sub0(need, s), "twice the steps per update (same result with gradient accumulation)",
				"halve the micro-batch and accumulate gradients over 2 micro-batches: activations scale with the batch, saving about %s",
				xpf_human(s, h1));
		s = sq / 4 * 3 + (rb - sq) / 2;
		if (sq)
			xpf_diag_addfix(c, f, s, sub0(need, s), "fewer tokens of context per step",
					"halve the sequence length: S*S buffers shrink 4x (%s -> %s) and the rest of the activations 2x, saving about %s",
					xpf_human(sq, h1), xpf_human(sq / 4, h2), xpf_human(s, h3));
		else
			xpf_diag_addfix(c, f, s, sub0(need, s), "fewer tokens of context per step",
					"halve the sequence length: the activations shrink 2x, saving about %s",
					xpf_human(s, h3));
		if (sq)
			xpf_diag_addfix(c, f, sq, sub0(need, sq), "a fused-attention kernel must exist for the shapes and dtype",
					"use fused attention (jax.nn.dot_product_attention(..., implementation='cudnn')) and check that the B*H*S*S buffers (%s) leave the plan%s",
					xpf_human(sq, h1), sq_f32(p, role) ?
					"; they are f32 here, and the cuDNN kernel takes bf16/fp16: cast q, k, v to bf16 first" : "");
	} else if (role == XPF_PLAN_ROLE_BACKWARD) {
		uint64_t s = rb / 2;
		xpf_diag_addfix(c, f, s, sub0(need, s), "collectives per step; needs a second device",
				"shard parameters and gradients (FSDP) over 2 devices or more: the backward bytes at least halve, saving about %s",
				xpf_human(s, h1));
		xpf_diag_addfix(c, f, s, sub0(need, s), "twice the steps per update",
				"accumulate gradients over 2 micro-batches: the backward temporaries of each micro-batch halve, saving about %s",
				xpf_human(s, h1));
		uint64_t f32 = 0;
		for (size_t i = 0; i < p->npeak; i++)
			if (p->peak[i].role == role && p->peak[i].buffer &&
			    strcmp(p->peak[i].buffer->dtype, "f32") == 0)
				f32 += p->peak[i].bytes;
		if (f32)
			xpf_diag_addfix(c, f, f32 / 2, sub0(need, f32 / 2), "less precision in the gradients",
					"look for f32 copies of bf16 gradients: %s of the backward bytes at the peak are f32; in bf16 they would save %s",
					xpf_human(f32, h1), xpf_human(f32 / 2, h2));
	}
}

/* ---- no-donation ------------------------------------------------------------ */

/* The Python argument an entry parameter's op_name names (SPEC 5.3):
 * `state.params['emb']` -> state, `params['emb']` -> params, `args[0]`
 * -> args[0] (a positional argument); its length, 0 when none. */
static size_t arg_of(const char *op, bool *positional)
{
	size_t n = strcspn(op, ".[ /");
	*positional = n == 4 && strncmp(op, "args", 4) == 0 && op[4] == '[';
	if (*positional)
		n += strcspn(op + n, "]") + 1;
	return op[0] == '\0' ? 0 : n;
}

/* donate_argnames=(...) / donate_argnums=(...) for the parameters the
 * matching outputs could reuse, and the leaves they hold, into b (reset
 * first); false when an op_name names no argument (b: the HLO numbers). */
static bool donate_args(const xpf_plan *p, xpf_buf *b)
{
	const char *names[8], *leaves[4];
	size_t nn = 0, nl = 0, nleaves = 0;
	bool named = true, pos_all = true;
	xpf_buf_reset(b);
	for (size_t i = 0; i < p->noutputs; i++) {
		const xpf_plan_param *m = p->outputs[i].matches;
		if (m == NULL)
			continue;
		const char *op = m->instr ? m->instr->op_name : "";
		bool pos;
		size_t n = arg_of(op, &pos);
		if (n == 0) {
			named = false;
			xpf_buf_printf(b, "%s%lld%s", nleaves ? ", " : "", (long long)m->number, m->shape_index);
		}
		nleaves++;
		if (nl < 4)
			leaves[nl++] = op;
		bool seen = false;
		for (size_t k = 0; k < nn && !seen; k++)
			seen = strlen(names[k]) >= n && strncmp(names[k], op, n) == 0 &&
			       (names[k][n] == '\0' || strchr(".[ /", names[k][n]));
		if (!seen && n && nn < 8) {
			names[nn++] = op;
			pos_all = pos_all && pos;
		}
	}
	if (!named || nn == 0)
		return false;
	xpf_buf_reset(b);
	xpf_buf_adds(b, pos_all ? "donate_argnums=(" : "donate_argnames=(");
	for (size_t k = 0; k < nn; k++) {
		bool pos;
		size_t n = arg_of(names[k], &pos);
		if (pos_all)
			xpf_buf_printf(b, "%s%.*s", k ? ", " : "", (int)(n - 6), names[k] + 5);
		else
			xpf_buf_printf(b, "%s'%.*s'", k ? ", " : "", (int)n, names[k]);
	}
	xpf_buf_adds(b, nn == 1 ? ",)" : ")");
	xpf_buf_printf(b, "); %zu lea%s, e.g. ", nleaves, nleaves == 1 ? "f" : "ves");
	for (size_t k = 0; k < nl; k++) {
		xpf_buf_adds(b, k ? ", " : "");
		xpf_buf_text(b, leaves[k]);
	}
	xpf_buf_adds(b, nleaves > nl ? ", ..." : "");
	return true;
}

static void rule_donation(xpf_diag_ctx *c)
{
	const xpf_plan *p = c->p;
	char h1[32], h2[32], h3[32];
	xpf_buf b = XPF_BUF_INIT;

	if (p == NULL || !p->has_assignment || p->parameters_count == 0 || p->donated_count != 0 ||
	    p->matching_output_bytes < XPF_MIB)
		return;
	/* SPEC 5.3 (noise): a gradient or benchmark function whose inputs are
	 * used again must not donate them; when the step fits with room and
	 * nothing failed, the advice is worth a line only for a saving of at
	 * least 10% of the capacity (1% when it failed or nearly does). */
	uint64_t cap = c->d->capacity_bytes;
	bool failed = p->need_bytes >= cap / 20 * 19 || (c->rt && xpf_diag_oom_shown(c->rt));
	if (cap && p->matching_output_bytes * (failed ? 100 : 10) < cap)
		return;
	size_t nmatch = 0;
	for (size_t i = 0; i < p->noutputs; i++)
		nmatch += p->outputs[i].matches != NULL;
	xpf_finding *f = xpf_diag_add(c, "no-donation", XPF_TAG_READ, c->d->module);
	xpf_buf_printf(&b, "no parameter of %s is donated: parameters %s, outputs %s, 0 donated; %zu output%s match%s a parameter in shape and dtype, so %s could be saved by donating them",
		       p->module, xpf_human(p->parameters_bytes, h1), xpf_human(p->outputs_bytes, h2),
		       nmatch, nmatch == 1 ? "" : "s", nmatch == 1 ? "es" : "", xpf_human(p->matching_output_bytes, h3));
	xpf_diag_text(f, &b);
	xpf_diag_num(f, "parameters_bytes", p->parameters_bytes);
	xpf_diag_num(f, "outputs_bytes", p->outputs_bytes);
	xpf_diag_num(f, "donated_bytes", 0);
	xpf_diag_num(f, "saving_bytes", p->matching_output_bytes);
	xpf_diag_num(f, "matching_outputs", nmatch);
	xpf_diag_evidence(f, "modules/%s/allocations.tsv", c->dir);
	xpf_diag_evidence(f, "modules/%s/plan.json", c->dir);

	uint64_t s = p->matching_output_bytes;
	const char *cost = "none in memory; the donated arrays are invalid after the call (reassign them, e.g. state = step(state, batch))";
	if (donate_args(p, &b))
		xpf_diag_addfix(c, f, s, sub0(p->need_bytes, s), cost,
				"donate the arguments that hold the matching inputs, saving %s: jax.jit(..., %s; their outputs reuse the inputs' memory",
				xpf_human(s, h1), b.data);
	else
		xpf_diag_addfix(c, f, s, sub0(p->need_bytes, s), cost,
				"donate the state arguments with jax.jit(..., donate_argnums=...) (HLO parameters %s count flattened leaves, not Python arguments; the capture names no argument): their outputs reuse the inputs' memory, saving %s",
				b.data ? b.data : "", xpf_human(s, h1));
	xpf_buf_release(&b);
}

/* ---- param-layout-copy / param-convert-copy ------------------------------ */

static void rule_dups(xpf_diag_ctx *c, enum xpf_dup_kind kind)
{
	const xpf_plan *p = c->p;
	char h1[32], h2[32], h3[32], h4[32];
	xpf_buf b = XPF_BUF_INIT, params = XPF_BUF_INIT;

	if (p == NULL || !p->has_assignment)
		return;
	uint64_t bytes = 0, pbytes = 0;
	size_t count = 0, nparams = 0;
	bool hoisted = false;
	const char *example = NULL;
	for (size_t i = 0; i < p->ndups; i++) {
		const xpf_plan_dup *x = &p->dups[i];
		if (x->kind != kind || !x->at_peak || x->buffer == NULL)
			continue;
		count++;
		bytes += x->buffer->bytes;
		if (x->buffer->instr) {
			hoisted |= x->buffer->instr->in_entry;
			if (example == NULL)
				example = x->buffer->instr->name;
		}
		bool seen = false;
		for (size_t j = 0; j < i && !seen; j++)
			seen = p->dups[j].kind == kind && p->dups[j].at_peak && p->dups[j].buffer &&
			       p->dups[j].param == x->param;
		if (seen || x->param == NULL)
			continue;
		pbytes += x->param->bytes;
		if (nparams < 5) {
			xpf_buf_printf(&params, "%s%lld%s ", nparams ? ", " : "",
				       (long long)x->param->number, x->param->shape_index);
			put_shape(&params, x->param->shape);
		}
		nparams++;
	}
	/* SPEC §5.2: a copy finding matters at 1 MiB and 1% of the heap peak */
	if (bytes < XPF_MIB || bytes * 100 < p->heap_peak_bytes) {
		xpf_buf_release(&params);
		return;
	}
	if (nparams > 5)
		xpf_buf_printf(&params, ", ... (%zu in all)", nparams);
	/* The loop wording (live for the whole loop, per-layer converts,
	 * loop-invariant operands) only fits a module with a while loop. */
	bool loop = false;
	for (size_t i = 0; i < p->ninstrs && !loop; i++)
		loop = strcmp(p->instrs[i].opcode, "while") == 0;
	bool layout = kind == XPF_DUP_LAYOUT;
	xpf_finding *f = xpf_diag_add(c, layout ? "param-layout-copy" : "param-convert-copy",
				      XPF_TAG_INFERRED, c->d->module);
	if (layout)
		xpf_buf_printf(&b, "%zu layout-changing cop%s of entry parameters (e.g. %s) are live at the heap peak: %s; duplicating parameters %s%s",
			       count, count == 1 ? "y" : "ies", example ? example : "?", xpf_human(bytes, h1), params.data ? params.data : "",
			       !hoisted ? ""
			       : loop ? "; defined in the entry computation, so they live for the whole loop that uses them"
				      : "; defined in the entry computation (the module has no loop): each lives from the copy to its last use");
	else
		xpf_buf_printf(&b, "%zu dtype-converted cop%s of entry parameters (e.g. %s) are live at the heap peak: %s; converted from parameters %s (%s)%s",
			       count, count == 1 ? "y" : "ies", example ? example : "?", xpf_human(bytes, h1), params.data ? params.data : "",
			       xpf_human(pbytes, h2), hoisted ? "; converted in bulk in the entry computation" : "");
	xpf_diag_text(f, &b);
	xpf_diag_num(f, "bytes", bytes);
	xpf_diag_num(f, "count", count);
	xpf_diag_num(f, "parameters", nparams);
	xpf_diag_num(f, "parameters_bytes", pbytes);
	xpf_diag_evidence(f, "modules/%s/peak_buffers.tsv", c->dir);
	xpf_diag_evidence(f, "modules/%s/instructions.tsv", c->dir);
	if (layout && loop) {
		xpf_diag_addfix(c, f, bytes, sub0(p->need_bytes, bytes), "a one-time transpose of the stored weights (checkpoint conversion)",
				"pre-transpose the weights into the layout the loop consumes, so no transposed copy of the %s is made",
				xpf_human(bytes, h1));
		xpf_diag_addfix(c, f, bytes, sub0(p->need_bytes, bytes), "inspection of the optimized HLO; may need a model change",
				"check the layouts of loop-invariant operands (dynamic-slice over a scan, all-gather dimensions): an operand whose layout matches the parameter's makes the copy disappear (up to %s)",
				xpf_human(bytes, h1));
	} else if (layout) {
		xpf_diag_addfix(c, f, bytes, sub0(p->need_bytes, bytes), "a one-time transpose of the stored arrays, or producing them in that layout",
				"pass the parameters in the layout their consumers use (pre-transposed weights, inputs in the dimension order the convolution or dot wants), so no transposed copy of the %s is made",
				xpf_human(bytes, h1));
	} else {
		/* SPEC 5.3: the copies go, and the parameters themselves shrink
		 * to the copies' dtype (f32 -> bf16: half): pbytes in all */
		if (pbytes > bytes)
			xpf_diag_addfix(c, f, pbytes, sub0(p->need_bytes, pbytes), "lower-precision master weights, or an f32 copy kept on the host",
					"keep the parameters in the compute dtype, saving %s; the %s of converted copies are not needed, and the parameters shrink from %s to %s",
					xpf_human(pbytes, h1), xpf_human(bytes, h2), xpf_human(pbytes, h3), xpf_human(bytes, h4));
		else
			xpf_diag_addfix(c, f, bytes, sub0(p->need_bytes, bytes), "lower-precision master weights, or an f32 copy kept on the host",
					"keep the parameters in the compute dtype, so the %s of converted copies are not needed",
					xpf_human(bytes, h1));
		uint64_t biggest = 0;
		for (size_t i = 0; i < p->ndups; i++)
			if (p->dups[i].kind == kind && p->dups[i].at_peak && p->dups[i].buffer &&
			    p->dups[i].buffer->bytes > biggest)
				biggest = p->dups[i].buffer->bytes;
		if (count > 1)
			xpf_diag_addfix(c, f, bytes - biggest, sub0(p->need_bytes, bytes - biggest),
				loop ? "a convert per use inside the loop (cheap, memory-bound)" : "a convert per use (cheap, memory-bound)",
				loop ? "convert each layer's slice inside the loop body instead of in one block up front, saving about %s; only one converted layer is live at a time; XLA hoists a convert of a loop-invariant operand, so convert the slice, not the whole parameter"
				     : "convert each parameter (or layer slice) just before its use instead of in one block up front, saving about %s; only one converted copy is live at a time",
				xpf_human(bytes - biggest, h1));
	}
	xpf_buf_release(&params);
}

/* ---- xla-remat, temp-fragmentation -------------------------------------- */

static void rule_remat_frag(xpf_diag_ctx *c)
{
	const xpf_plan *p = c->p;
	char h1[32], h2[32], h3[32], h4[32];
	xpf_buf b = XPF_BUF_INIT;

	if (p == NULL)
		return;
	if (p->remat_instructions > 0) {
		xpf_finding *f = xpf_diag_add(c, "xla-remat", XPF_TAG_READ, c->d->module);
		xpf_buf_printf(&b, "XLA already rematerialized %zu instructions of %s (names with .remat) against the memory limit; the fix must come from the program, not from XLA",
			       p->remat_instructions, p->module);
		xpf_diag_text(f, &b);
		xpf_diag_num(f, "count", p->remat_instructions);
		xpf_diag_evidence(f, "modules/%s/instructions.tsv", c->dir);
	}
	if (!p->has_assignment || !p->simulated)
		return;
	uint64_t frag = sub0(p->temp_bytes, p->simulated_peak_bytes);
	if (frag >= 64 * XPF_MIB && frag * 10 >= p->temp_bytes) {
		xpf_finding *f = xpf_diag_add(c, "temp-fragmentation", XPF_TAG_READ, c->d->module);
		xpf_buf_printf(&b, "the temp block of %s is %s but at most %s of it is live at once (the simulated heap peak): %s (%s%%) is lost to packing",
			       p->module, xpf_human(p->temp_bytes, h1), xpf_human(p->simulated_peak_bytes, h2),
			       xpf_human(frag, h3), xpf_pct(frag, p->temp_bytes, h4));
		xpf_diag_text(f, &b);
		xpf_diag_num(f, "temp_bytes", p->temp_bytes);
		xpf_diag_num(f, "simulated_peak_bytes", p->simulated_peak_bytes);
		xpf_diag_num(f, "fragmentation_bytes", frag);
		xpf_diag_str(f, "fragmentation_pct", "%s", xpf_pct(frag, p->temp_bytes, h1));
		xpf_diag_evidence(f, "modules/%s/heap.tsv", c->dir);
		xpf_diag_evidence(f, "modules/%s/plan.json", c->dir);
		xpf_diag_addfix(c, f, frag, sub0(p->need_bytes, frag), "experiments with the model's largest buffers; no guarantee",
				"shrink or split the largest short-lived temp buffers (they decide how the block packs): up to %s of packing loss",
				xpf_human(frag, h1));
	}
}

/* ---- retrace (SPEC §5.2) ---------------------------------------------------- */

/* The length of a module name without its " (<program id>)" suffix. */
static size_t base_len(const char *name)
{
	size_t n = strlen(name);
	const char *open = strrchr(name, '(');
	return n > 0 && name[n - 1] == ')' && open && open > name ? (size_t)(open - name) : n;
}

static size_t executions_of(const xpf_runtime *rt, long m)
{
	size_t n = 0;
	for (size_t x = 0; rt && x < rt->nexecutions; x++)
		n += rt->executions[x].module == m;
	return n;
}

/* The first entry parameter (by number) whose shape differs between two
 * plans, or -1 when their parameter lists agree. */
static long shape_differs(const xpf_plan *a, const xpf_plan *b)
{
	size_t n = a->nparams < b->nparams ? a->nparams : b->nparams;
	for (size_t i = 0; i < n; i++)
		if (a->params[i].number != b->params[i].number ||
		    strcmp(a->params[i].shape, b->params[i].shape) != 0)
			return (long)i;
	return a->nparams == b->nparams ? -1 : (long)n;
}

static void rule_retrace(xpf_diag_ctx *c)
{
	const xpf_plan *p = c->p;
	xpf_host *h = c->h;
	long self = c->d->module;
	if (p == NULL || !p->has_assignment)
		return;
	const char *name = xpf_capture_module(h->cap, (size_t)self)->name;
	size_t bl = base_len(name);
	xpf_finding *f = NULL;
	xpf_buf b = XPF_BUF_INIT;
	char h1[32], h2[32];
	size_t others = 0;
	long smaller = -1;
	uint64_t small_need = 0;
	for (size_t m = 0; m < h->nmodules; m++) {
		const char *o = xpf_capture_module(h->cap, m)->name;
		if ((long)m == self || base_len(o) != bl || strncmp(o, name, bl) != 0)
			continue;
		const xpf_plan *q = xpf_diag_plan(h, (long)m);
		long i = q && q->has_assignment ? shape_differs(p, q) : -1;
		if (i < 0)
			continue;
		if (f == NULL) {
			f = xpf_diag_add(c, "retrace", XPF_TAG_READ, self);
			xpf_buf_printf(&b, "%.*s was compiled again for new input shapes: %s (%zu execution%s) needs %s",
				       (int)bl, name, name, executions_of(c->rt, self),
				       executions_of(c->rt, self) == 1 ? "" : "s", xpf_human(p->need_bytes, h1));
		}
		const xpf_plan_param *pa = (size_t)i < p->nparams ? &p->params[i] : NULL;
		const xpf_plan_param *qa = (size_t)i < q->nparams ? &q->params[i] : NULL;
		xpf_buf_printf(&b, "; %s (%zu execution%s) needs %s; parameter %lld is %s there, %s here", o,
			       executions_of(c->rt, (long)m), executions_of(c->rt, (long)m) == 1 ? "" : "s",
			       xpf_human(q->need_bytes, h2), (long long)(pa ? pa->number : qa->number),
			       qa ? qa->shape : "absent", pa ? pa->shape : "absent");
		if (q->need_bytes < p->need_bytes && (smaller < 0 || q->need_bytes < small_need)) {
			smaller = (long)m;
			small_need = q->need_bytes;
		}
		if (others++ == 0) {
			xpf_diag_num(f, "other_need_bytes", q->need_bytes);
			xpf_diag_str(f, "other_module", "%s", o);
			xpf_diag_str(f, "other_shape", "%s", qa ? qa->shape : "");
			xpf_diag_str(f, "shape", "%s", pa ? pa->shape : "");
		}
		xpf_diag_evidence(f, "modules/%s/plan.json", h->module_dirs[m]);
	}
	if (f == NULL)
		return;
	xpf_buf_adds(&b, " (JAX compiles a function once per set of input shapes)");
	xpf_diag_text(f, &b);
	xpf_diag_num(f, "need_bytes", p->need_bytes);
	xpf_diag_num(f, "modules", others + 1);
	xpf_diag_evidence(f, "modules/%s/plan.json", c->dir);
	if (smaller >= 0)
		xpf_diag_addfix(c, f, p->need_bytes - small_need, small_need,
				"more steps for the same data, or a padded batch computes on the padding",
				"keep the input shapes at those of %s (split the batch, or pad the last batch to it)",
				xpf_capture_module(h->cap, (size_t)smaller)->name);
	else
		xpf_diag_addfix(c, f, 0, 0, "a padded batch computes on the padding",
				"keep the input shapes fixed: pad the last (or eval) batch to the training batch, or drop it");
	xpf_diag_addfix(c, f, 0, 0, "none",
			"find every recompile: jax.config.update('jax_log_compiles', True), or jax_explain_cache_misses");
}

void xpf_rules_plan(xpf_diag_ctx *c)
{
	rule_verdict(c);
	rule_donation(c);
	rule_dups(c, XPF_DUP_LAYOUT);
	rule_dups(c, XPF_DUP_CONVERT);
	rule_remat_frag(c);
	rule_retrace(c);
}

/* ---- runtime rules ---------------------------------------------------------- */

/* Is a host event name a likely holder of references (a Python container)? */
static bool holder_like(const char *name)
{
	static const char *const words[] = { "append", "extend", "insert", "setitem", "list", "dict", NULL };
	for (int i = 0; words[i]; i++)
		if (strstr(name, words[i]))
			return true;
	return false;
}

/* "; kept each step: f32[2048,2048] of fusion.3 (train.py:40), ..." the
 * largest non-aliased outputs of p: what a leak of its outputs holds. */
static void kept_outputs(const xpf_plan *p, xpf_buf *b)
{
	const xpf_plan_output *top[3] = { NULL, NULL, NULL };
	for (size_t i = 0; p && i < p->noutputs; i++) {
		const xpf_plan_output *o = &p->outputs[i];
		if (o->alloc->is_tuple || o->buffer == NULL)
			continue;
		for (int k = 0; k < 3; k++)
			if (top[k] == NULL || o->alloc->bytes > top[k]->alloc->bytes) {
				for (int j = 2; j > k; j--)
					top[j] = top[j - 1];
				top[k] = o;
				break;
			}
	}
	char h1[32];
	for (int k = 0; k < 3 && top[k]; k++) {
		const xpf_plan_instr *in = top[k]->buffer->instr;
		xpf_buf_printf(b, "%s%s %s", k ? ", " : "; kept each step, the largest: ", top[k]->shape,
			       xpf_human(top[k]->alloc->bytes, h1));
		if (in)
			xpf_buf_printf(b, " of %s%s%s%s", in->name, *in->source ? " (" : "", in->source,
				       *in->source ? ")" : "");
	}
}

static void between_text(const xpf_rt_between *bt, xpf_buf *b)
{
	size_t shown = 0;
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < bt->nrows && shown < 5; i++) {
			const xpf_rt_between_row *r = &bt->rows[i];
			if (holder_like(r->name) != (pass == 0))
				continue;
			/* the Python tracer names a builtin method $<unknown> <name> */
			bool append = strcmp(r->name, "$<unknown> append") == 0;
			xpf_buf_printf(b, "%s%s%s x%llu", shown ? ", " : "", r->name,
				       append ? " (list.append)" : "", (unsigned long long)r->count);
			shown++;
		}
	if (bt->nrows > shown)
		xpf_buf_printf(b, ", ... (%zu names)", bt->nrows);
}

static void rule_growth(xpf_diag_ctx *c)
{
	const xpf_runtime *rt = c->rt;
	xpf_host *h = c->h;
	char h1[32], h2[32], h3[32], h4[32], h5[32];

	for (size_t m = 0; m < h->nmodules; m++) {
		bool done = false;
		for (size_t dv = 0; dv < rt->nexecutions && !done; dv++) {
			/* Each (module, device) pair once: start from its first execution. */
			const xpf_rt_execution *e0 = &rt->executions[dv];
			if (e0->module != (long)m || e0->prev >= 0)
				continue;
			size_t n = 0, idx[4096];
			for (size_t x = dv; x < rt->nexecutions && n < 4096; x++) {
				const xpf_rt_execution *e = &rt->executions[x];
				if (e->module == (long)m && e->device == e0->device && e->in_use_known)
					idx[n++] = x;
			}
			if (n < 3)
				continue;
			bool rising = true;
			uint64_t total = 0;
			for (size_t i = 1; i < n && rising; i++) {
				uint64_t a = rt->executions[idx[i - 1]].in_use_at_start_bytes;
				uint64_t z = rt->executions[idx[i]].in_use_at_start_bytes;
				rising = z > a;
				total += z - a;
			}
			if (!rising)
				continue;
			uint64_t mean = total / (n - 1);
			bool steady = mean >= XPF_MIB;
			for (size_t i = 1; i < n && steady; i++) {
				uint64_t r = rt->executions[idx[i]].in_use_at_start_bytes -
					     rt->executions[idx[i - 1]].in_use_at_start_bytes;
				uint64_t dev = r > mean ? r - mean : mean - r;
				steady = dev * 20 <= mean;
			}
			if (!steady)
				continue;
			done = true;

			const xpf_rt_execution *first = &rt->executions[idx[0]];
			const xpf_rt_execution *last = &rt->executions[idx[n - 1]];
			const xpf_plan *p = xpf_diag_plan(h, (long)m);
			uint64_t na = p && p->has_assignment ? p->non_aliased_outputs_bytes : 0;
			xpf_finding *f = xpf_diag_add(c, "growth-per-execution", XPF_TAG_MEASURED, (long)m);
			xpf_buf b = XPF_BUF_INIT;
			const char *name = xpf_capture_module(h->cap, m)->name;
			xpf_buf_printf(&b, "in use at the start of %s's executions %u..%u on device %d grows %s -> %s, +%s per execution",
				       name, first->module_execution, last->module_execution, e0->device,
				       xpf_human(first->in_use_at_start_bytes, h1),
				       xpf_human(last->in_use_at_start_bytes, h2), xpf_human(mean, h3));
			if (na) {
				double ratio = (double)mean / (double)na;
				xpf_buf_printf(&b, "; that is %.2fx the non-aliased outputs (%s)", ratio, xpf_human(na, h4));
				xpf_diag_str(f, "ratio_to_non_aliased_outputs", "%.2f", ratio);
				if (ratio > 0.95 && ratio < 1.05) {
					xpf_buf_adds(&b, ": each step's outputs stay alive (a reference kept across steps)");
					kept_outputs(p, &b);
				}
			}
			xpf_rt_between bt = { 0 };
			xpf_error e = { 0 };
			bool have_bt = false;
			size_t from = idx[n - 2], to = idx[n - 1];
			const xpf_rt_between *fb = &c->d->between;
			if (fb->module == (long)m && fb->from_execution == (long)from &&
			    fb->to_execution == (long)to) {
				bt = *fb;
				have_bt = true;
			} else if (xpf_runtime_between(h, rt, from, to, &bt, &e) == XPF_OK) {
				have_bt = true;
			} else {
				memset(&bt, 0, sizeof bt);
			}
			if (have_bt && bt.nrows) {
				xpf_buf_adds(&b, "; host events between the last two executions: ");
				between_text(&bt, &b);
			}
			if (have_bt && bt.rows != fb->rows)
				xpf_rt_between_release(&bt);
			uint64_t kept = last->in_use_at_start_bytes - first->in_use_at_start_bytes;
			uint64_t cap = c->d->capacity_bytes;
			if (cap && p && p->has_assignment) {
				uint64_t room = sub0(cap, last->in_use_at_start_bytes);
				room = sub0(room, p->non_aliased_outputs_bytes + p->temp_bytes);
				xpf_buf_printf(&b, "; at this rate the remaining %s of the pool lasts about %llu more executions",
					       xpf_human(room, h5), (unsigned long long)(room / mean));
			}
			xpf_diag_text(f, &b);
			xpf_diag_num(f, "growth_bytes", mean);
			xpf_diag_num(f, "non_aliased_outputs_bytes", na);
			xpf_diag_num(f, "first_in_use_bytes", first->in_use_at_start_bytes);
			xpf_diag_num(f, "last_in_use_bytes", last->in_use_at_start_bytes);
			xpf_diag_num(f, "kept_bytes", kept);
			xpf_diag_num(f, "executions", n);
			xpf_diag_evidence(f, "runtime/executions.tsv");
			xpf_diag_evidence(f, "runtime/between.tsv");
			xpf_diag_evidence(f, "runtime/executions/%u/live.tsv", last->n);
			xpf_diag_addfix(c, f, kept, 0, "none; keep only what you need (e.g. a Python float via .item())",
					"drop the reference that keeps each step's outputs (the container filled between steps: fetch or reduce inside the loop, not after it), freeing the %s kept so far; confirm with len(jax.live_arrays()) growing per step",
					xpf_human(kept, h1));
			xpf_diag_addfix(c, f, kept, 0, "a reduction inside the jitted step",
					"reduce inside the step (return a norm or a scalar, not the whole tree), so nothing of size %s survives the step",
					xpf_human(mean, h1));
			xpf_diag_addfix(c, f, kept, 0, "a device-to-host copy per step",
					"move what must be kept to the host with jax.device_get, freeing %s of device memory",
					xpf_human(kept, h1));
			xpf_diag_addfix(c, f, 0, 0, "none; it only delays the OOM",
					"a bigger pool (XLA_PYTHON_CLIENT_MEM_FRACTION) only delays the OOM by (extra bytes) / %s executions",
					xpf_human(mean, h1));
		}
	}
}

/* "f32[8,128]{1,0}" and "f32[8,128]" name the same array. */
static bool same_shape_text(const char *a, const char *b)
{
	size_t na = strcspn(a, "{"), nb = strcspn(b, "{");
	return na == nb && strncmp(a, b, na) == 0;
}

static bool param_block(const xpf_plan *p, const xpf_rt_block *bl, bool *used)
{
	for (size_t i = 0; i < p->nparams; i++) {
		const xpf_plan_param *pp = &p->params[i];
		if (used[i] || pp->shape == NULL || !same_shape_text(pp->shape, bl->shape) ||
		    bl->bytes < pp->bytes)
			continue;
		used[i] = true;
		return true;
	}
	return false;
}

struct origin_sum {
	const char *text;
	uint64_t bytes;
	size_t blocks;
};

static int origin_cmp(const void *a, const void *b)
{
	const struct origin_sum *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return strcmp(x->text, y->text);
}

static void rule_foreign(xpf_diag_ctx *c)
{
	const xpf_runtime *rt = c->rt;
	const xpf_diagnosis *d = c->d;
	const xpf_plan *p = c->p;
	char h1[32], h2[32], h3[32], h4[32], h5[32];

	if (d->execution < 0 || d->capacity_bytes == 0)
		return;
	const xpf_rt_execution *x = &rt->executions[d->execution];
	if (!x->in_use_known)
		return;
	xpf_rt_block *blocks = NULL;
	size_t nb = 0;
	xpf_error e = { 0 };
	if (xpf_runtime_live_at(rt, (size_t)d->execution, &blocks, &nb, &e) != XPF_OK)
		return;
	uint64_t own = 0;
	struct origin_sum *os = calloc(nb ? nb : 1, sizeof *os);
	long *mods = calloc(nb ? nb : 1, sizeof *mods);
	char (*modtext)[300] = calloc(nb ? nb : 1, sizeof *modtext);
	size_t nos = 0, nmods = 0;
	uint64_t mod_out = 0; /* outputs of other modules' executions */
	if (os == NULL || mods == NULL || modtext == NULL)
		abort();
	bool *used = calloc(p && p->nparams ? p->nparams : 1, sizeof *used);
	if (used == NULL)
		abort();
	for (size_t i = 0; i < nb; i++) {
		const xpf_rt_block *bl = &blocks[i];
		if (bl->origin == XPF_ORIGIN_OUTPUTS && bl->execution >= 0 &&
		    rt->executions[bl->execution].module == d->module) {
			own += bl->bytes;
			continue;
		}
		/* A block shaped like one of the module's parameters is that
		 * parameter (each used once): not a foreign origin. */
		if (p && bl->shape && param_block(p, bl, used))
			continue;
		const char *t = bl->origin_text ? bl->origin_text : "?";
		/* Outputs of another module's executions: one origin per module,
		 * so that an eager program's many small results add up. */
		if (bl->origin == XPF_ORIGIN_OUTPUTS && bl->execution >= 0 &&
		    rt->executions[bl->execution].module >= 0) {
			long om = rt->executions[bl->execution].module;
			bool found = false;
			mod_out += bl->bytes;
			for (size_t j = 0; j < nmods && !found; j++)
				found = mods[j] == om;
			if (!found) {
				mods[nmods] = om;
				snprintf(modtext[nmods], sizeof modtext[nmods], "outputs of %s",
					 xpf_capture_module(c->h->cap, (size_t)om)->name);
				nmods++;
			}
			for (size_t j = 0; j < nmods; j++)
				if (mods[j] == om)
					t = modtext[j];
		}
		size_t k = 0;
		while (k < nos && strcmp(os[k].text, t) != 0)
			k++;
		if (k == nos) {
			os[nos].text = t;
			nos++;
		}
		os[k].bytes += bl->bytes;
		os[k].blocks++;
	}
	uint64_t params = p && p->has_assignment ? p->parameters_bytes : 0;
	uint64_t need = p && p->has_assignment ? p->need_bytes : 0;
	uint64_t in_use = x->in_use_at_start_bytes;
	uint64_t other = sub0(sub0(in_use, params), own);
	/* TPU allocators count the loaded program's reservation (bytes_reserved)
	 * in use: the step's own memory, not foreign arrays. */
	uint64_t reserved = rt->keyed_by_index ? need : 0;
	other = sub0(other, reserved);
	/* Over the pool only counts when the step alone would fit: otherwise
	 * plan-exceeds-pool says it all. */
	bool pushes = need && need <= d->capacity_bytes && need + other > d->capacity_bytes;
	if (other == 0 || (other * 10 < d->capacity_bytes && !pushes))
		goto out;
	xpf_qsort(os, nos, sizeof *os, origin_cmp);
	xpf_finding *f = xpf_diag_add(c, "foreign-live-arrays", XPF_TAG_MEASURED, d->module);
	xpf_buf b = XPF_BUF_INIT;
	xpf_buf_printf(&b, "when %s execution %u started, %s was in use: %s besides its parameters (%s)",
		       p ? p->module : "the module", x->module_execution, xpf_human(in_use, h1),
		       xpf_human(other, h2), xpf_human(params, h3));
	if (own)
		xpf_buf_printf(&b, " and the outputs of its own earlier executions (%s)", xpf_human(own, h4));
	if (reserved)
		xpf_buf_printf(&b, " and the program's reservation (about its need, %s)", xpf_human(reserved, h4));
	xpf_buf_printf(&b, "; that is %s%% of the capacity %s", xpf_pct(other, d->capacity_bytes, h4),
		       xpf_human(d->capacity_bytes, h5));
	if (pushes)
		xpf_buf_adds(&b, ", enough to push the step over the pool");
	xpf_buf_adds(&b, "; largest origins: ");
	bool before = false;
	for (size_t i = 0; i < nos && i < 4; i++) {
		xpf_buf_printf(&b, "%s%s %s", i ? ", " : "", os[i].text, xpf_human(os[i].bytes, h1));
		before |= strstr(os[i].text, "before the capture") != NULL;
	}
	size_t eager = 0;
	for (size_t m = 0; m < c->h->nmodules; m++)
		for (size_t k = 0; k < rt->nexecutions; k++)
			if (rt->executions[k].module == (long)m) {
				eager++;
				break;
			}
	if (eager >= 10)
		xpf_buf_printf(&b, "; %zu modules ran (an eager or many-jit program): what holds memory is in the runtime, not in one plan",
			       eager);
	/* Many modules' results held together (an eager program keeps each
	 * op's result): say what they add up to. */
	if (nmods >= 2)
		xpf_buf_printf(&b, "; the outputs of %zu other modules' executions hold %s (%s%% of what is in use)",
			       nmods, xpf_human(mod_out, h1), xpf_pct(mod_out, in_use, h2));
	xpf_diag_text(f, &b);
	xpf_diag_num(f, "in_use_bytes", in_use);
	xpf_diag_num(f, "parameters_bytes", params);
	xpf_diag_num(f, "own_outputs_bytes", own);
	xpf_diag_num(f, "foreign_bytes", other);
	xpf_diag_num(f, "capacity_bytes", d->capacity_bytes);
	if (nos)
		xpf_diag_num(f, "largest_origin_bytes", os[0].bytes);
	if (nmods >= 2) {
		xpf_diag_num(f, "other_modules_outputs_bytes", mod_out);
		xpf_diag_num(f, "other_modules_count", nmods);
	}
	xpf_diag_evidence(f, "runtime/executions/%u/live.tsv", x->n);
	xpf_diag_evidence(f, "runtime/executions.tsv");
	uint64_t big = nos ? os[0].bytes : 0;
	if (nos) {
		xpf_diag_addfix(c, f, big, need ? sub0(need + other, big) : 0, "host-to-device traffic per step",
				"keep %s (%s) on the host and stream it in per step", os[0].text, xpf_human(big, h1));
		xpf_diag_addfix(c, f, big / 2, need ? sub0(need + other, big / 2) : 0, "precision of that data",
				"store %s in a smaller dtype (e.g. bf16 instead of f32: saves about %s)", os[0].text,
				xpf_human(big / 2, h1));
	}
	if (nmods >= 2 && mod_out * 2 >= other)
		xpf_diag_addfix(c, f, mod_out, need ? sub0(need + other, mod_out) : 0,
				"one compilation of the whole sequence; or none, if the results are no longer needed",
				"drop the results of earlier ops once used (del them, or let them go out of scope), or put the op-by-op sequence under one jax.jit so that XLA frees the intermediates inside one module: up to %s held by the outputs of %zu modules",
				xpf_human(mod_out, h1), nmods);
	xpf_diag_addfix(c, f, other, need ? need : 0, "none, if the arrays are no longer needed",
			"free the arrays that are not needed by the step (del them and drop every reference), up to %s",
			xpf_human(other, h1));
	if (before)
		xpf_diag_addfix(c, f, 0, 0, "a new capture",
				"start the profile earlier (before the data is put on the device) to name what was allocated before the capture started");
out:
	free(used);
	free(modtext);
	free(mods);
	free(os);
	xpf_rt_blocks_free(blocks, nb);
}

static void rule_retry(xpf_diag_ctx *c)
{
	const xpf_runtime *rt = c->rt;
	char h1[32];

	if (rt->nretries == 0)
		return;
	size_t longest = 0;
	int64_t total = 0;
	for (size_t i = 0; i < rt->nretries; i++) {
		total += rt->retries[i].duration_ns;
		if (rt->retries[i].duration_ns > rt->retries[longest].duration_ns)
			longest = i;
	}
	const xpf_rt_retry *r = &rt->retries[longest];
	xpf_finding *f = xpf_diag_add(c, "allocator-retry", XPF_TAG_MEASURED, c->d->module);
	xpf_buf b = XPF_BUF_INIT;
	xpf_buf_printf(&b, "%zu AllocatorRetry::AllocateRaw wait%s, longest %.1f s at %lld ns",
		       rt->nretries, rt->nretries == 1 ? "" : "s", (double)r->duration_ns / 1e9,
		       (long long)r->time_ns);
	if (r->allocator >= 0)
		xpf_buf_printf(&b, " on %s", rt->allocators[r->allocator].name);
	if (r->execution >= 0) {
		const xpf_rt_execution *x = &rt->executions[r->execution];
		if (x->module >= 0)
			xpf_buf_printf(&b, "; inside %s execution %u (n %u), launched: %s",
				       xpf_capture_module(c->h->cap, x->module)->name, x->module_execution, x->n,
				       xpf_launched_name(x->launched));
		else
			xpf_buf_printf(&b, "; inside execution n %u (not linked to one module: see its candidates), launched: %s",
				       x->n, xpf_launched_name(x->launched));
		const xpf_plan *p = xpf_diag_plan(c->h, x->module);
		const xpf_plan_alloc *fr = r->execution == c->d->execution && c->p ? failed_request(c) : NULL;
		if (fr)
			xpf_buf_printf(&b, "; the request that failed: allocation %lld, %s (from the events)",
				       (long long)fr->index, xpf_human(fr->bytes, h1));
		else if (p && p->has_assignment)
			xpf_buf_printf(&b, "; the failed request is usually its temp block (%s) or an output",
				       xpf_human(p->temp_bytes, h1));
	}
	if (r->allocator == c->d->allocator)
		frag_text(c, f, (int64_t)r->time_ns * 1000, &b);
	xpf_buf_adds(&b, "; the OOM happened inside the capture (evidence only)");
	xpf_diag_text(f, &b);
	xpf_diag_num(f, "count", rt->nretries);
	xpf_diag_num(f, "longest_ns", (uint64_t)r->duration_ns);
	xpf_diag_num(f, "total_ns", (uint64_t)total);
	xpf_diag_evidence(f, "runtime/retries.tsv");
	if (r->execution >= 0)
		xpf_diag_evidence(f, "runtime/executions/%u/summary.txt", rt->executions[r->execution].n);
}

/* Outputs of other modules' executions live when execution x started,
 * one figure per module: memory held by other modules, named as such. */
static void co_resident(xpf_diag_ctx *c, size_t x, xpf_buf *b)
{
	const xpf_runtime *rt = c->rt;
	xpf_rt_block *blocks = NULL;
	size_t nb = 0, shown = 0;
	xpf_error e = { 0 };
	char h1[32];

	if (xpf_runtime_live_at(rt, x, &blocks, &nb, &e) != XPF_OK)
		return;
	long self = rt->executions[x].module;
	for (size_t i = 0; i < nb; i++) {
		const xpf_rt_block *bl = &blocks[i];
		if (bl->origin != XPF_ORIGIN_OUTPUTS || bl->execution < 0)
			continue;
		long m = rt->executions[bl->execution].module;
		if (m == self || m < 0)
			continue;
		bool seen = false;
		for (size_t j = 0; j < i && !seen; j++)
			seen = blocks[j].origin == XPF_ORIGIN_OUTPUTS && blocks[j].execution >= 0 &&
			       rt->executions[blocks[j].execution].module == m;
		if (seen)
			continue;
		uint64_t bytes = 0;
		for (size_t j = i; j < nb; j++)
			if (blocks[j].origin == XPF_ORIGIN_OUTPUTS && blocks[j].execution >= 0 &&
			    rt->executions[blocks[j].execution].module == m)
				bytes += blocks[j].bytes;
		if (shown < 5)  /* an eager program has hundreds: the largest are in live.tsv */
			xpf_buf_printf(b, "%s%s %s", shown ? ", " : "; co-resident outputs of other modules: ",
				       xpf_capture_module(c->h->cap, (size_t)m)->name, xpf_human(bytes, h1));
		shown++;
	}
	if (shown > 5)
		xpf_buf_printf(b, ", ... (%zu modules: runtime/executions/%u/live.tsv)", shown,
			       rt->executions[x].n);
	xpf_rt_blocks_free(blocks, nb);
}

/* The latest execution that never launched and could not be linked to
 * one module: named by its candidates. */
static void never_ambiguous(xpf_diag_ctx *c)
{
	const xpf_runtime *rt = c->rt;
	long lastx = -1;
	size_t count = 0;
	for (size_t x = 0; x < rt->nexecutions; x++)
		if (rt->executions[x].module < 0 && rt->executions[x].launched == XPF_LAUNCHED_NO) {
			count++;
			lastx = (long)x;
		}
	if (count == 0)
		return;
	const xpf_rt_execution *x = &rt->executions[lastx];
	xpf_finding *f = xpf_diag_add(c, "never-launched", XPF_TAG_MEASURED, -1);
	xpf_buf b = XPF_BUF_INIT;
	xpf_buf_printf(&b, "%zu execution%s not linked to one module never launched a kernel; the last: n %u on device %d, candidates: ",
		       count, count == 1 ? "" : "s", x->n, x->device);
	const xpf_rt_candidate *cd;
	size_t n = xpf_rt_candidates(rt, (size_t)lastx, &cd);
	for (size_t k = 0; k < n; k++)
		xpf_buf_printf(&b, "%s%s", k ? ", " : "", xpf_capture_module(c->h->cap, (size_t)cd[k].module)->name);
	if (n == 0)
		xpf_buf_adds(&b, "none named by the host events");
	xpf_diag_text(f, &b);
	xpf_diag_num(f, "count", count);
	xpf_diag_num(f, "execution", x->n);
	xpf_diag_evidence(f, "runtime/executions/%u/summary.txt", x->n);
}

static void rule_never(xpf_diag_ctx *c)
{
	const xpf_runtime *rt = c->rt;
	xpf_host *h = c->h;

	for (size_t m = 0; m < h->nmodules; m++) {
		size_t count = 0;
		long lastx = -1;
		for (size_t x = 0; x < rt->nexecutions; x++)
			if (rt->executions[x].module == (long)m && rt->executions[x].launched == XPF_LAUNCHED_NO) {
				count++;
				lastx = (long)x;
			}
		if (count == 0)
			continue;
		const xpf_rt_execution *x = &rt->executions[lastx];
		xpf_finding *f = xpf_diag_add(c, "never-launched", XPF_TAG_MEASURED, (long)m);
		xpf_buf b = XPF_BUF_INIT;
		xpf_buf_printf(&b, "%zu execution%s of %s never launched a kernel; the last: execution %u (n %u) on device %d%s",
			       count, count == 1 ? "" : "s", xpf_capture_module(h->cap, m)->name,
			       x->module_execution, x->n, x->device,
			       x->stopped_in_build ? ", stopped while allocating its buffers" : "");
		co_resident(c, (size_t)lastx, &b);
		xpf_diag_text(f, &b);
		xpf_diag_num(f, "count", count);
		xpf_diag_num(f, "execution", x->n);
		xpf_diag_num(f, "module_execution", x->module_execution);
		xpf_diag_evidence(f, "runtime/executions.tsv");
		xpf_diag_evidence(f, "runtime/executions/%u/summary.txt", x->n);
	}
	never_ambiguous(c);
}

static void rule_compile_peak(xpf_diag_ctx *c)
{
	const xpf_runtime *rt = c->rt;
	const xpf_diagnosis *d = c->d;
	char h1[32], h2[32];

	if (d->allocator < 0)
		return;
	const xpf_rt_allocator *a = &rt->allocators[d->allocator];
	long first = -1;
	for (size_t x = 0; x < rt->nexecutions && first < 0; x++)
		if (rt->executions[x].allocator == d->allocator ||
		    (rt->executions[x].device == a->device && a->device >= 0))
			first = (long)x;
	if (first < 0 || a->peak_in_window_bytes == 0 || a->peak_ns >= xpf_rt_x_start_ns(&rt->executions[first]))
		return;
	uint64_t later = 0;
	for (size_t x = 0; x < rt->nexecutions; x++)
		if (rt->executions[x].allocator == d->allocator && rt->executions[x].peak_during_bytes > later)
			later = rt->executions[x].peak_during_bytes;
	xpf_finding *f = xpf_diag_add(c, "compile-time-peak", XPF_TAG_MEASURED, -1);
	xpf_buf b = XPF_BUF_INIT;
	xpf_buf_printf(&b, "%s peaked at %s at %lld ns, before the first execution (%lld ns): a compile/autotune peak, not the step's",
		       a->name, xpf_human(a->peak_in_window_bytes, h1), (long long)a->peak_ns,
		       (long long)xpf_rt_x_start_ns(&rt->executions[first]));
	if (later)
		xpf_buf_printf(&b, "; the executions peak at %s", xpf_human(later, h2));
	xpf_diag_text(f, &b);
	xpf_diag_num(f, "peak_in_window_bytes", a->peak_in_window_bytes);
	xpf_diag_num(f, "executions_peak_bytes", later);
	xpf_diag_num(f, "peak_ns", (uint64_t)a->peak_ns);
	xpf_diag_evidence(f, "runtime/allocators.tsv");
	xpf_diag_evidence(f, "runtime/events.tsv");
}

void xpf_rules_runtime(xpf_diag_ctx *c)
{
	if (c->rt == NULL || !c->rt->has_events)
		return;
	rule_growth(c);
	rule_foreign(c);
	rule_retry(c);
	rule_never(c);
	rule_compile_peak(c);
}

/* ---- an OOM nothing explains (SPEC §5.2) ------------------------------------ */

static bool has_finding(const xpf_diagnosis *d, const char *code)
{
	for (size_t i = 0; i < d->nfindings; i++)
		if (strcmp(d->findings[i].code, code) == 0)
			return true;
	return false;
}

/* The execution that shows the OOM: the focus execution when it never
 * launched, else the latest that never launched, else the longest
 * retry's; -1 when the capture shows none. */
static long oom_execution(const xpf_diag_ctx *c)
{
	const xpf_runtime *rt = c->rt;
	long x = c->d->execution;
	if (x >= 0 && rt->executions[x].launched == XPF_LAUNCHED_NO)
		return x;
	for (size_t i = rt->nexecutions; i-- > 0;)
		if (rt->executions[i].launched == XPF_LAUNCHED_NO)
			return (long)i;
	long best = -1;
	for (size_t i = 0; i < rt->nretries; i++)
		if (rt->retries[i].execution >= 0 &&
		    (best < 0 || rt->retries[i].duration_ns > rt->retries[best].duration_ns))
			best = (long)i;
	return best >= 0 ? rt->retries[best].execution : -1;
}

/* One module's need against the capacity, for the candidates' list. */
static void need_vs(xpf_diag_ctx *c, long m, xpf_buf *b)
{
	const xpf_plan *p = xpf_diag_plan(c->h, m);
	char h1[32], h2[32];
	xpf_buf_printf(b, "%s ", xpf_capture_module(c->h->cap, (size_t)m)->name);
	if (p == NULL || !p->has_assignment)
		xpf_buf_adds(b, "(no plan)");
	else if (c->d->capacity_bytes)
		xpf_buf_printf(b, "needs %s of %s", xpf_human(p->need_bytes, h1),
			       xpf_human(c->d->capacity_bytes, h2));
	else
		xpf_buf_printf(b, "needs %s", xpf_human(p->need_bytes, h1));
}

static const char *const explains_oom[] = {
	"plan-exceeds-pool", "near-fit", "foreign-live-arrays", "growth-per-execution", "temp-fragmentation",
};

void xpf_rules_oom(xpf_diag_ctx *c)
{
	const xpf_runtime *rt = c->rt;
	xpf_diagnosis *d = c->d;
	if (rt == NULL || !rt->has_events || !xpf_diag_oom_shown(rt))
		return;
	for (size_t i = 0; i < sizeof explains_oom / sizeof *explains_oom; i++)
		if (has_finding(d, explains_oom[i]))
			return;
	long x = oom_execution(c);
	xpf_finding *f = xpf_diag_add(c, "unexplained-oom", XPF_TAG_MEASURED, d->module);
	xpf_buf b = XPF_BUF_INIT;
	if (x < 0) {
		xpf_buf_printf(&b, "%zu AllocatorRetry wait%s outside every execution: the capture shows an allocation that ran out of memory but not which step made it",
			       rt->nretries, rt->nretries == 1 ? "" : "s");
	} else {
		const xpf_rt_execution *e = &rt->executions[x];
		xpf_buf_printf(&b, "execution %u on device %d ran out of memory (launched: %s) and no finding explains it; ",
			       e->n, e->device, xpf_launched_name(e->launched));
		if (e->module >= 0) {
			need_vs(c, e->module, &b);
		} else {
			const xpf_rt_candidate *cd;
			size_t n = xpf_rt_candidates(rt, (size_t)x, &cd);
			xpf_buf_printf(&b, "it could not be linked to one module; candidates: ");
			for (size_t k = 0; k < n; k++) {
				xpf_buf_adds(&b, k ? ", " : "");
				need_vs(c, cd[k].module, &b);
			}
			if (n == 0)
				xpf_buf_adds(&b, "none named by the host events");
		}
		xpf_diag_num(f, "execution", e->n);
		xpf_diag_evidence(f, "runtime/executions/%u/summary.txt", e->n);
	}
	xpf_buf_adds(&b, "; what would say more: the module's buffer assignment (profile from before the first call), the allocator events of the device (the BFC allocator), the device's kernels");
	xpf_diag_text(f, &b);
	if (d->capacity_bytes)
		xpf_diag_num(f, "capacity_bytes", d->capacity_bytes);
	xpf_diag_evidence(f, "runtime/executions.tsv");
	xpf_diag_evidence(f, "runtime/retries.tsv");
}

/* ---- what is missing ------------------------------------------------------ */

/* Does the capture hold a TPU device plane? */
static bool on_tpu(xpf_host *h)
{
	for (size_t i = 0; i < xpf_capture_nplanes(h->cap); i++)
		if (strncmp(xpf_capture_plane_head(h->cap, i)->name, "/device:TPU:", 12) == 0)
			return true;
	return false;
}

/* A TensorFlow capture: its GPU host allocator is TensorFlow's
 * gpu_host_bfc (JAX's is xla_gpu_host_bfc). */
static bool tensorflow_like(const xpf_runtime *rt)
{
	for (size_t a = 0; rt && a < rt->nallocators; a++)
		if (strcmp(rt->allocators[a].name, "gpu_host_bfc") == 0)
			return true;
	return false;
}

void xpf_rules_missing(xpf_diag_ctx *c)
{
	xpf_host *h = c->h;
	const xpf_runtime *rt = c->rt;
	const xpf_diagnosis *d = c->d;
	char h1[32], h2[32];
	xpf_buf b = XPF_BUF_INIT;

	if (h->nmodules == 0) {
		xpf_finding *f = xpf_diag_add(c, "missing-plan", XPF_TAG_READ, -1);
		if (tensorflow_like(rt))
			xpf_buf_adds(&b, "no HloProto in the /host:metadata plane: no XLA module was compiled while profiling, so there is no plan to break down; a TensorFlow capture (its host allocator is gpu_host_bfc): TensorFlow without XLA has no plan; compile with XLA (tf.function(jit_compile=True)) and start the profile before the first step");
		else
			xpf_buf_adds(&b, "no HloProto in the /host:metadata plane: no XLA module was compiled while profiling (a TensorFlow capture without XLA, or a JAX capture started after compilation), so there is no plan to break down; start the profile before the first call of the jitted function");
		if (d->allocator >= 0) {
			const xpf_rt_allocator *a = &rt->allocators[d->allocator];
			xpf_buf_printf(&b, "; the runtime still shows %s peaking at %s of %s",
				       a->name, xpf_human(a->peak_in_window_bytes, h1),
				       xpf_human(a->capacity_bytes, h2));
		}
		xpf_diag_text(f, &b);
		xpf_diag_num(f, "modules", 0);
		xpf_diag_evidence(f, "capture/planes.tsv");
		if (d->allocator >= 0) {
			xpf_diag_num(f, "peak_in_window_bytes", rt->allocators[d->allocator].peak_in_window_bytes);
			xpf_diag_num(f, "capacity_bytes", rt->allocators[d->allocator].capacity_bytes);
			xpf_diag_evidence(f, "runtime/allocators.tsv");
		}
	} else if (c->p == NULL || !c->p->has_assignment) {
		xpf_finding *f = xpf_diag_add(c, "missing-plan", XPF_TAG_READ, d->module);
		xpf_buf_printf(&b, "%s has no buffer assignment: %s; without it there is no need, heap peak or role split (JAX records it when the profile covers the compilation)",
			       xpf_capture_module(h->cap, d->module)->name,
			       c->p && c->p->missing && *c->p->missing ? c->p->missing : "its plan could not be read (see capture/errors.txt)");
		xpf_diag_text(f, &b);
		xpf_diag_evidence(f, "modules/%s/summary.txt", c->dir);
	} else if (!c->p->simulated) {
		xpf_finding *f = xpf_diag_add(c, "missing-plan", XPF_TAG_READ, d->module);
		xpf_buf_printf(&b, "%s has a buffer assignment but no heap-simulator trace%s; totals only, so the heap peak counts only the indefinite allocations (%s) and there is no role split at the peak",
			       c->p->module, on_tpu(h) ? " (usual on TPU)" : "", xpf_human(c->p->heap_peak_bytes, h1));
		xpf_diag_text(f, &b);
		xpf_diag_evidence(f, "modules/%s/plan.json", c->dir);
	}

	if (xpf_capture_is_hlo_only(h->cap)) {
		xpf_finding *f = xpf_diag_add(c, "missing-runtime", XPF_TAG_READ, -1);
		xpf_buf_adds(&b, "a bare HloProto: the plan only, no allocator events, executions or device; give the pool size with --capacity, or capture with jax.profiler.trace to see the runtime");
		xpf_diag_text(f, &b);
		xpf_diag_evidence(f, "runtime/summary.txt");
		return;
	}
	if (rt == NULL || !rt->has_events) {
		xpf_finding *f = xpf_diag_add(c, "missing-runtime", XPF_TAG_READ, -1);
		if (d->runtime_error.code)
			xpf_buf_printf(&b, "the allocator events and executions could not be read: %s; without them there is no capacity, in-use, growth or live arrays, only the plan", d->runtime_error.msg);
		else
			xpf_buf_adds(&b, rt && rt->has_host_plane ?
				"no MemoryAllocation/MemoryDeallocation events on /host:CPU; only the BFC allocator emits them (XLA_PYTHON_CLIENT_ALLOCATOR=default or bfc; cuda_async, platform and vmm do not), at host tracer level 2 or more (the default); without them there is no capacity, in-use, growth or live arrays, only the plan" :
				"no /host:CPU plane: the host tracer was off (host_tracer_level 0), so there are no allocator events or executions; capture with jax.profiler.trace and the BFC allocator to see the runtime");
		if (d->capacity_bytes)
			xpf_buf_printf(&b, "; capacity taken from %s: %s", d->capacity_source,
				       xpf_human(d->capacity_bytes, h1));
		xpf_diag_text(f, &b);
		xpf_diag_evidence(f, d->runtime_error.code ? "capture/errors.txt" : "runtime/summary.txt");
	} else if (rt->nexecutions == 0 && h->nmodules > 0) {
		xpf_finding *f = xpf_diag_add(c, "missing-runtime", XPF_TAG_MEASURED, -1);
		xpf_buf_printf(&b, "%zu allocator events but no execution of any module could be found (TPU captures carry no execute events on the host): no in-use at step start, growth or never-launched; the allocators' peaks are in runtime/allocators.tsv",
			       rt->nevents);
		xpf_diag_text(f, &b);
		xpf_diag_num(f, "events", rt->nevents);
		xpf_diag_evidence(f, "runtime/allocators.tsv");
	}
}
