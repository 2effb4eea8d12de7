/* The repeated blocks the forward-kept buffers at the heap peak come from
 * (SPEC §5.3), for the remat advice: checkpointing each of k blocks keeps
 * only the blocks' inputs and recomputes one block at a time in the
 * backward pass, so what the blocks keep beyond one block leaves the peak.
 * A model shows its blocks three ways:
 *   - the name stack: a component `<prefix>_<n>` (block_3, Block_2,
 *     layers_12) that several n share (Flax modules, named scopes);
 *   - a Python loop over the layers: the same source line and op_name
 *     make a buffer of the same dimensions once per layer (4 layers: 4
 *     f32[32,2048,2048] from scen.py:77); the dtype may differ between
 *     layers (a promotion in the first one), so it is left out of the key.
 *     Buffers repeat for other reasons too (two stacked weights transposed
 *     alike), so the layers must also show in the parameters: a list of
 *     per-layer weights, params['layers'][0..3] (or layers_0..3), gives
 *     the count;
 *   - jax.lax.scan: the residuals are stacked on a leading dimension equal
 *     to the loop's trip count (f32[4,4,8,2048,2048]), outputs of the
 *     forward while loop, read back by the backward one.
 * The way that puts the most forward-kept bytes in blocks wins. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/diagnosis/diag_priv.h"
#include "common/alloc.h"

static const xpf_plan_instr *row_instr(const xpf_plan_peak *r)
{
	return r->buffer ? r->buffer->instr : NULL;
}

static const char *row_opname(const xpf_plan_peak *r)
{
	return row_instr(r) ? row_instr(r)->op_name : "";
}

static bool is_forward(const xpf_plan_peak *r) { return r->role == XPF_PLAN_ROLE_FORWARD; }

/* ---- the name stack ------------------------------------------------------- */

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
		if (u && u > c && u + 1 < c + n &&
		    strspn(u + 1, "0123456789") == (size_t)(c + n - u - 1)) {
			*start = (size_t)(c - op);
			*num = strtol(u + 1, NULL, 10);
			return (size_t)(u - c);
		}
		c += n + (c[n] == '/');
	}
	return 0;
}

/* A forward row keyed by the name-stack prefix of its block component. */
struct named {
	const char *op; /* its op_name */
	size_t len;     /* of the prefix "<stack>/<name>" */
	long num;
	size_t i;
};

static int cmp_named(const void *a, const void *b)
{
	const struct named *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->op, y->op, n);
	if (c == 0 && x->len != y->len)
		c = x->len < y->len ? -1 : 1;
	if (c == 0 && x->num != y->num)
		c = x->num < y->num ? -1 : 1;
	return c ? c : (x->i > y->i) - (x->i < y->i);
}

/* The prefix whose rows have the most distinct numbers (ties: more bytes). */
static void by_names(const xpf_plan *p, xpf_diag_blocks *best)
{
	struct named *k = xpf_malloc((p->npeak ? p->npeak : 1) * sizeof *k);
	size_t n = 0;
	for (size_t i = 0; i < p->npeak; i++) {
		size_t st, pl;
		long num;
		const char *op = row_opname(&p->peak[i]);
		if (is_forward(&p->peak[i]) && (pl = block_component(op, &st, &num)) != 0)
			k[n++] = (struct named){ op, st + pl, num, i };
	}
	xpf_qsort(k, n, sizeof *k, cmp_named);
	for (size_t a = 0, b; a < n; a = b) {
		size_t blocks = 0;
		uint64_t bytes = 0;
		for (b = a;
		     b < n && k[b].len == k[a].len && memcmp(k[b].op, k[a].op, k[a].len) == 0; b++) {
			blocks += b == a || k[b].num != k[b - 1].num;
			bytes += p->peak[k[b].i].bytes;
		}
		if (blocks < 2 || blocks < best->k || (blocks == best->k && bytes <= best->bytes))
			continue;
		*best = (xpf_diag_blocks){ .how = XPF_BLOCKS_NAMES, .k = blocks, .bytes = bytes };
		snprintf(best->name, sizeof best->name, "%.*s_N", (int)k[a].len, k[a].op);
	}
	free(k);
}

/* ---- a Python loop ----------------------------------------------------------- */

/* The dimensions of "f32[4,8,2048,2048]{3,2,1,0}": from the '[' to the ']'. */
static size_t dims_len(const char *shape, const char **start)
{
	const char *o = strchr(shape, '[');
	if (o == NULL || shape[0] == '(') {
		*start = shape;
		return 0;
	}
	*start = o;
	return strcspn(o, "]");
}

struct repeat {
	const char *source, *op, *dims;
	size_t ndims;
	size_t i;
};

static int cmp_repeat(const void *a, const void *b)
{
	const struct repeat *x = a, *y = b;
	int c = strcmp(x->source, y->source);
	if (c == 0)
		c = strcmp(x->op, y->op);
	if (c == 0 && x->ndims != y->ndims)
		c = x->ndims < y->ndims ? -1 : 1;
	if (c == 0)
		c = memcmp(x->dims, y->dims, x->ndims);
	return c ? c : (x->i > y->i) - (x->i < y->i);
}

static bool same_repeat(const struct repeat *x, const struct repeat *y)
{
	return strcmp(x->source, y->source) == 0 && strcmp(x->op, y->op) == 0 &&
	       x->ndims == y->ndims && memcmp(x->dims, y->dims, x->ndims) == 0;
}

/* "dir/scen.py:77:8" -> the length of "dir/scen.py" and the line 77 (0
 * when it names none). */
static size_t source_file(const char *src, long *line)
{
	const char *c = strchr(src, ':');
	*line = 0;
	while (c) {
		char *end;
		long v = strtol(c + 1, &end, 10);
		if (end > c + 1 && (*end == ':' || *end == '\0')) {
			*line = v;
			return (size_t)(c - src);
		}
		c = strchr(c + 1, ':');
	}
	return strlen(src);
}

/* The block's lines: the source file of the largest group and the range
 * of lines its repeated groups there span. */
static void name_lines(const xpf_plan *p, const struct repeat *k, size_t n, const bool *rep,
		       size_t largest, xpf_diag_blocks *out)
{
	long lo = 0, hi = 0, l;
	const char *src = p->peak[largest].buffer->instr->source;
	size_t fl = source_file(src, &l);
	for (size_t j = 0; j < n; j++) {
		const char *s = k[j].source;
		if (!rep[j] || source_file(s, &l) != fl || strncmp(s, src, fl) != 0 || l <= 0)
			continue;
		lo = lo == 0 || l < lo ? l : lo;
		hi = l > hi ? l : hi;
	}
	if (lo == hi)
		snprintf(out->name, sizeof out->name, "%.*s:%ld", (int)fl, src, lo);
	else
		snprintf(out->name, sizeof out->name, "%.*s:%ld-%ld", (int)fl, src, lo, hi);
}

/* The first index in op: a number after '[' or '_' that ends at ']',
 * '/', '.', '\'' or the end; its start (the prefix's length) and value, or
 * false. */
static bool first_index(const char *op, size_t *prefix, long *num)
{
	for (const char *c = op; *c; c++) {
		if ((*c != '[' && *c != '_') || c[1] < '0' || c[1] > '9')
			continue;
		char *end;
		long v = strtol(c + 1, &end, 10);
		if (*end == '\0' || strchr("]/.'", *end)) {
			*prefix = (size_t)(c + 1 - op);
			*num = v;
			return true;
		}
	}
	return false;
}

/* How many layers the entry parameters hold: the most distinct indices
 * under one prefix of their op_names (params['layers'][0..3]['wq'] -> 4),
 * 0 when fewer than 2. */
static size_t param_layers(const xpf_plan *p, char *name, size_t nn)
{
	struct named *k = xpf_malloc((p->nparams ? p->nparams : 1) * sizeof *k);
	size_t n = 0, best = 0;
	for (size_t i = 0; i < p->nparams; i++) {
		const char *op = p->params[i].instr ? p->params[i].instr->op_name : "";
		size_t pl;
		long num;
		if (first_index(op, &pl, &num))
			k[n++] = (struct named){ op, pl, num, i };
	}
	xpf_qsort(k, n, sizeof *k, cmp_named);
	for (size_t a = 0, b; a < n; a = b) {
		size_t layers = 0;
		for (b = a;
		     b < n && k[b].len == k[a].len && memcmp(k[b].op, k[a].op, k[a].len) == 0; b++)
			layers += b == a || k[b].num != k[b - 1].num;
		if (layers > best) {
			best = layers;
			snprintf(name, nn, "%.*sN%s", (int)k[a].len, k[a].op,
				 k[a].op[k[a].len - 1] == '[' ? "]" : "");
		}
	}
	free(k);
	return best >= 2 ? best : 0;
}

static void by_loop(const xpf_plan *p, xpf_diag_blocks *best)
{
	char layers_name[96];
	size_t layers = param_layers(p, layers_name, sizeof layers_name);
	if (layers == 0)
		return;
	struct repeat *k = xpf_malloc((p->npeak ? p->npeak : 1) * sizeof *k);
	size_t n = 0;
	for (size_t i = 0; i < p->npeak; i++) {
		const xpf_plan_instr *in = row_instr(&p->peak[i]);
		/* what a scan makes is the scan's (by_scan) */
		if (!is_forward(&p->peak[i]) || in == NULL || in->source[0] == '\0' ||
		    strcmp(in->opcode, "while") == 0 || strstr(in->op_name, "/while/"))
			continue;
		struct repeat r = { in->source, in->op_name, NULL, 0, i };
		r.ndims = dims_len(p->peak[i].buffer->shape, &r.dims);
		k[n++] = r;
	}
	xpf_qsort(k, n, sizeof *k, cmp_repeat);
	bool *rep = xpf_calloc(n ? n : 1, sizeof *rep);
	uint64_t bytes = 0, top = 0;
	size_t blocks = 0, largest = 0;
	for (size_t a = 0, b; a < n; a = b) {
		uint64_t g = 0;
		for (b = a; b < n && same_repeat(&k[b], &k[a]); b++)
			g += p->peak[k[b].i].bytes;
		if (b - a < 2)
			continue;
		for (size_t j = a; j < b; j++)
			rep[j] = true;
		bytes += g;
		if (g > top) {
			top = g;
			blocks = b - a;
			largest = k[a].i;
		}
	}
	if (blocks >= 2 && bytes > best->bytes) {
		*best = (xpf_diag_blocks){ .how = XPF_BLOCKS_LOOP, .k = layers, .bytes = bytes };
		name_lines(p, k, n, rep, largest, best);
		snprintf(best->layers, sizeof best->layers, "%s", layers_name);
	}
	free(rep);
	free(k);
}

/* ---- jax.lax.scan ------------------------------------------------------------ */

/* The leading dimension of "f32[4,4,8,2048,2048]{...}", or 0. */
static uint64_t leading_dim(const char *shape)
{
	const char *o = strchr(shape, '[');
	return o && shape[0] != '(' ? strtoull(o + 1, NULL, 10) : 0;
}

/* Is rows[i] a scan's stacked residual: an output of a while loop with a
 * known trip count T whose leading dimension is T, or made inside a scan's
 * body (its op_name: .../while/body/..., as where XLA unrolled the loop)?
 * *t: T, or the leading dimension. */
static bool stacked(const xpf_plan_peak *r, uint64_t *t)
{
	const xpf_plan_instr *in = row_instr(r);
	if (!is_forward(r) || in == NULL)
		return false;
	*t = leading_dim(r->buffer->shape);
	if (strcmp(in->opcode, "while") == 0)
		return in->trip_count >= 2 && *t == (uint64_t)in->trip_count;
	return *t >= 2 && strstr(in->op_name, "/while/body/") != NULL;
}

/* Does the backward pass recompute a scanned body (a checkpointed scan:
 * transpose(...)/while/body/.../checkpoint)? */
static bool scan_checkpointed(const xpf_plan *p)
{
	for (size_t i = 0; i < p->ninstrs; i++) {
		const char *op = p->instrs[i].op_name, *w;
		if (strstr(op, "transpose(") && (w = strstr(op, "/while/body/")) &&
		    (strstr(w, "checkpoint") || strstr(w, "remat")))
			return true;
	}
	return false;
}

struct stack_row {
	uint64_t t; /* its leading dimension */
	size_t i;
};

static int cmp_stack_row(const void *a, const void *b)
{
	const struct stack_row *x = a, *y = b;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return (x->i > y->i) - (x->i < y->i);
}

/* The stacked rows of the leading dimension that holds the most bytes
 * (ties: the smaller dimension). */
static void by_scan(const xpf_plan *p, xpf_diag_blocks *best)
{
	struct stack_row *r = xpf_malloc((p->npeak ? p->npeak : 1) * sizeof *r);
	size_t n = 0;
	uint64_t t, k = 0, bytes = 0;
	const xpf_plan_instr *first = NULL;
	for (size_t i = 0; i < p->npeak; i++)
		if (stacked(&p->peak[i], &t))
			r[n++] = (struct stack_row){ t, i };
	xpf_qsort(r, n, sizeof *r, cmp_stack_row);
	for (size_t a = 0, b; a < n; a = b) {
		uint64_t sum = 0;
		for (b = a; b < n && r[b].t == r[a].t; b++)
			sum += p->peak[r[b].i].bytes;
		if (sum > bytes) {
			bytes = sum;
			k = r[a].t;
			first = row_instr(&p->peak[r[a].i]);
		}
	}
	free(r);
	if (first == NULL || bytes < best->bytes)
		return;
	*best = (xpf_diag_blocks){ .how = XPF_BLOCKS_SCAN, .k = (size_t)k, .bytes = bytes };
	const char *w = strstr(first->op_name, "/while");
	if (strcmp(first->opcode, "while") == 0 || w == NULL)
		snprintf(best->name, sizeof best->name, "%s (%s, %s)", first->name, first->op_name,
			 first->source);
	else
		snprintf(best->name, sizeof best->name, "%.*s", (int)(w + 6 - first->op_name),
			 first->op_name);
	best->checkpointed = scan_checkpointed(p);
}

void xpf_diag_find_blocks(const xpf_plan *p, xpf_diag_blocks *out)
{
	memset(out, 0, sizeof *out);
	by_names(p, out);
	by_loop(p, out);
	by_scan(p, out);
	if (out->k >= 2)
		out->one = out->bytes / out->k;
}
