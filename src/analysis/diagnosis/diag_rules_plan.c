/* What else the focus plan wastes (SPEC §5.2): no-donation,
 * param-layout-copy, param-convert-copy, xla-remat, temp-fragmentation,
 * and retrace (the same function compiled again for other shapes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/diagnosis/diag_priv.h"
#include "analysis/paths.h"
#include "common/alloc.h"

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
			xpf_buf_printf(b, "%s%lld%s", nleaves ? ", " : "", (long long)m->number,
				       m->shape_index);
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

/* Whether the program hands each call's outputs to the next call (SPEC
 * 5.3 "donation that the caller can use"), from the focus module's first
 * two executions on a device: 0 when the outputs of the first were freed
 * (90% of their bytes) before the second started, so the loop passes the
 * same inputs again and donating them would hand it a deleted array; 1
 * when they stayed; -1 when the runtime cannot tell. */
static int outputs_passed_on(const xpf_diag_ctx *c)
{
	const xpf_runtime *rt = c->rt;
	if (rt == NULL || !rt->has_events)
		return -1;
	for (size_t x = 0; x < rt->nexecutions; x++) {
		const xpf_rt_execution *next = &rt->executions[x];
		if (next->module != c->d->module || next->prev < 0)
			continue;
		uint64_t out = 0, freed = 0;
		for (size_t i = 0; i < rt->nevents; i++) {
			const xpf_rt_event *e = &rt->events[i];
			if (e->execution != next->prev || e->kind != XPF_RT_ALLOC ||
			    e->role != XPF_RT_ROLE_OUTPUT)
				continue;
			out += xpf_rt_ev_bytes(rt, e);
			if (e->match >= 0 && rt->events[e->match].t_ps < next->start_ps)
				freed += xpf_rt_ev_bytes(rt, e);
		}
		if (out == 0)
			return -1;
		return freed >= out / 10 * 9 ? 0 : 1;
	}
	return -1;
}

void xpf_rule_donation(xpf_diag_ctx *c)
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
	xpf_buf_printf(&b,
		       "no parameter of %s is donated: parameters %s, outputs %s, 0 donated; %zu output%s match%s a parameter in shape and dtype, so %s could be saved by donating them",
		       p->module, xpf_human(p->parameters_bytes, h1),
		       xpf_human(p->outputs_bytes, h2), nmatch, nmatch == 1 ? "" : "s",
		       nmatch == 1 ? "es" : "", xpf_human(p->matching_output_bytes, h3));
	xpf_diag_text(f, &b);
	xpf_diag_num(f, "parameters_bytes", p->parameters_bytes);
	xpf_diag_num(f, "outputs_bytes", p->outputs_bytes);
	xpf_diag_num(f, "donated_bytes", 0);
	xpf_diag_num(f, "saving_bytes", p->matching_output_bytes);
	xpf_diag_num(f, "matching_outputs", nmatch);
	xpf_diag_evidence(f, XPF_EV_MODULE(XPF_F_ALLOCATIONS_TSV), c->dir);
	xpf_diag_evidence(f, XPF_EV_MODULE(XPF_F_PLAN_JSON), c->dir);

	uint64_t s = p->matching_output_bytes;
	const char *cost =
		"none in memory; the donated arrays are invalid after the call (reassign them, e.g. state = step(state, batch))";
	if (outputs_passed_on(c) == 0) {
		/* the loop calls the step again with the same inputs: donating
		 * them as it stands breaks the next call */
		bool named = donate_args(p, &b);
		xpf_diag_addfix(c, f, s, xpf_sub0(p->need_bytes, s),
				"the loop must take the outputs as the next inputs; where the outputs are not a new state (gradients, a loss), donation cannot help",
				"the loop passes the same inputs to every call (each call's outputs were freed before the next began), so donating them now would hand the next call a deleted array; donate only if the loop reassigns (ws = step(ws, ...)), %s%s",
				named ? "jax.jit(..., " : "with donate_argnums", named ? b.data : "");
		xpf_diag_num(f, "outputs_passed_on", 0);
		xpf_buf_release(&b);
		return;
	}
	if (donate_args(p, &b))
		xpf_diag_addfix(c, f, s, xpf_sub0(p->need_bytes, s), cost,
				"donate the arguments that hold the matching inputs, saving %s: jax.jit(..., %s; their outputs reuse the inputs' memory",
				xpf_human(s, h1), b.data);
	else
		xpf_diag_addfix(c, f, s, xpf_sub0(p->need_bytes, s), cost,
				"donate the state arguments with jax.jit(..., donate_argnums=...) (HLO parameters %s count flattened leaves, not Python arguments; the capture names no argument): their outputs reuse the inputs' memory, saving %s",
				b.data ? b.data : "", xpf_human(s, h1));
	xpf_buf_release(&b);
}

/* ---- param-layout-copy / param-convert-copy ------------------------------ */

/* The copies of one kind live at the heap peak, and the parameters they
 * copy (each once).  A copy that borrows an output allocation (it lives
 * there until the output is written) takes no memory of its own: it
 * counts at the peak, but only the others would be saved by not making
 * it. */
struct copies {
	uint64_t bytes, pbytes; /* the copies', the parameters' */
	uint64_t borrowed;      /* the copies' in output allocations */
	uint64_t biggest_temp;  /* the largest copy in temp */
	size_t count, nparams, nborrowed;
	bool hoisted;        /* one is made in the entry computation */
	const char *example; /* a copy's instruction name, or NULL */
	xpf_buf params;      /* "ws[0] f32[8,128], ..." the first five */
};

static bool copy_at_peak(const xpf_plan_dup *x, enum xpf_dup_kind kind)
{
	return x->kind == kind && x->at_peak && x->buffer != NULL;
}

/* The parameter as the capture names it (its op_name: `ws[0]`), else its
 * HLO number and shape index. */
static void put_param(xpf_buf *b, const xpf_plan_param *x)
{
	if (x->instr && x->instr->op_name[0])
		xpf_buf_text(b, x->instr->op_name);
	else
		xpf_buf_printf(b, "%lld%s", (long long)x->number, x->shape_index);
	xpf_buf_addc(b, ' ');
	xpf_diag_put_shape(b, x->shape);
}

static struct copies sum_copies(const xpf_plan *p, enum xpf_dup_kind kind)
{
	struct copies s = { .params = XPF_BUF_INIT };
	for (size_t i = 0; i < p->ndups; i++) {
		const xpf_plan_dup *x = &p->dups[i];
		if (!copy_at_peak(x, kind))
			continue;
		s.count++;
		s.bytes += x->buffer->bytes;
		if (p->allocs[x->buffer->alloc].kind == XPF_KIND_OUTPUT) {
			s.borrowed += x->buffer->bytes;
			s.nborrowed++;
		} else if (x->buffer->bytes > s.biggest_temp) {
			s.biggest_temp = x->buffer->bytes;
		}
		if (x->buffer->instr) {
			s.hoisted |= x->buffer->instr->in_entry;
			if (s.example == NULL)
				s.example = x->buffer->instr->name;
		}
		bool seen = false;
		for (size_t j = 0; j < i && !seen; j++)
			seen = copy_at_peak(&p->dups[j], kind) && p->dups[j].param == x->param;
		if (seen || x->param == NULL)
			continue;
		s.pbytes += x->param->bytes;
		if (s.nparams < 5) {
			xpf_buf_adds(&s.params, s.nparams ? ", " : "");
			put_param(&s.params, x->param);
		}
		s.nparams++;
	}
	if (s.nparams > 5)
		xpf_buf_printf(&s.params, ", ... (%zu in all)", s.nparams);
	return s;
}

static void copies_text(const struct copies *s, bool layout, bool loop, xpf_buf *b)
{
	char h1[32], h2[32];
	const char *params = s->params.data ? s->params.data : "";
	if (layout)
		xpf_buf_printf(b,
			       "%zu layout-changing cop%s of entry parameters (e.g. %s) are live at the heap peak: %s; duplicating parameters %s%s",
			       s->count, s->count == 1 ? "y" : "ies", s->example ? s->example : "?",
			       xpf_human(s->bytes, h1), params,
			       !s->hoisted ? "" :
			       loop ? "; defined in the entry computation, so they live for the whole loop that uses them" :
				      "; defined in the entry computation (the module has no loop): each lives from the copy to its last use");
	else
		xpf_buf_printf(b,
			       "%zu dtype-converted cop%s of entry parameters (e.g. %s) are live at the heap peak: %s; converted from parameters %s (%s)%s",
			       s->count, s->count == 1 ? "y" : "ies", s->example ? s->example : "?",
			       xpf_human(s->bytes, h1), params, xpf_human(s->pbytes, h2),
			       s->hoisted ? "; converted in bulk in the entry computation" : "");
	if (s->nborrowed)
		xpf_buf_printf(b,
			       "; %zu of them (%s) sit in output allocations until the outputs are written there, so they take no memory of their own",
			       s->nborrowed, xpf_human(s->borrowed, h1));
}

static void layout_fixes(xpf_diag_ctx *c, xpf_finding *f, uint64_t bytes, bool loop)
{
	uint64_t need = c->p->need_bytes;
	char h1[32];
	if (loop) {
		xpf_diag_addfix(c, f, bytes, xpf_sub0(need, bytes),
				"a one-time transpose of the stored weights (checkpoint conversion)",
				"pre-transpose the weights into the layout the loop consumes, so no transposed copy of the %s is made",
				xpf_human(bytes, h1));
		xpf_diag_addfix(c, f, bytes, xpf_sub0(need, bytes),
				"inspection of the optimized HLO; may need a model change",
				"check the layouts of loop-invariant operands (dynamic-slice over a scan, all-gather dimensions): an operand whose layout matches the parameter's makes the copy disappear (up to %s)",
				xpf_human(bytes, h1));
	} else {
		xpf_diag_addfix(c, f, bytes, xpf_sub0(need, bytes),
				"a one-time transpose of the stored arrays, or producing them in that layout",
				"pass the parameters in the layout their consumers use (pre-transposed weights, inputs in the dimension order the convolution or dot wants), so no transposed copy of the %s is made",
				xpf_human(bytes, h1));
	}
}

static void convert_fixes(xpf_diag_ctx *c, xpf_finding *f, const struct copies *s, bool loop)
{
	const xpf_plan *p = c->p;
	uint64_t need = p->need_bytes, bytes = s->bytes, pbytes = s->pbytes;
	uint64_t temp = bytes - s->borrowed; /* what the copies take of their own */
	char h1[32], h2[32], h3[32];
	/* SPEC 5.3: the copies in temp go, and the parameters themselves
	 * shrink to the copies' dtype (f32 -> bf16: half) */
	if (pbytes > bytes) {
		uint64_t sv = pbytes - bytes + temp;
		xpf_diag_addfix(c, f, sv, xpf_sub0(need, sv),
				"lower-precision master weights, or an f32 copy kept on the host",
				"keep the parameters in the compute dtype, saving %s: they shrink from %s to %s%s",
				xpf_human(sv, h1), xpf_human(pbytes, h2), xpf_human(bytes, h3),
				temp ? ", and the converted copies in the temp block go" : "");
	} else if (temp) {
		xpf_diag_addfix(c, f, temp, xpf_sub0(need, temp),
				"lower-precision master weights, or an f32 copy kept on the host",
				"keep the parameters in the compute dtype, so the %s of converted copies in the temp block are not needed",
				xpf_human(temp, h1));
	}
	uint64_t sv = temp - s->biggest_temp;
	if (s->count - s->nborrowed > 1)
		xpf_diag_addfix(c, f, sv, xpf_sub0(need, sv),
				loop ? "a convert per use inside the loop (cheap, memory-bound)" :
				       "a convert per use (cheap, memory-bound)",
				loop ? "convert each layer's slice inside the loop body instead of in one block up front, saving about %s; only one converted layer is live at a time; XLA hoists a convert of a loop-invariant operand, so convert the slice, not the whole parameter" :
				       "convert each parameter (or layer slice) just before its use instead of in one block up front, saving about %s; only one converted copy is live at a time",
				xpf_human(sv, h1));
}

/* Does the module have a while loop?  The loop wording (live for the whole
 * loop, per-layer converts, loop-invariant operands) only fits then. */
static bool has_loop(const xpf_plan *p)
{
	for (size_t i = 0; i < p->ninstrs; i++)
		if (strcmp(p->instrs[i].opcode, "while") == 0)
			return true;
	return false;
}

void xpf_rule_param_copies(xpf_diag_ctx *c, enum xpf_dup_kind kind)
{
	const xpf_plan *p = c->p;
	xpf_buf b = XPF_BUF_INIT;

	if (p == NULL || !p->has_assignment)
		return;
	struct copies s = sum_copies(p, kind);
	/* SPEC §5.2: a copy finding matters at 1 MiB and 1% of the heap peak */
	if (s.bytes < XPF_MIB || s.bytes * 100 < p->heap_peak_bytes) {
		xpf_buf_release(&s.params);
		return;
	}
	bool loop = has_loop(p);
	bool layout = kind == XPF_DUP_LAYOUT;
	xpf_finding *f = xpf_diag_add(c, layout ? "param-layout-copy" : "param-convert-copy",
				      XPF_TAG_INFERRED, c->d->module);
	copies_text(&s, layout, loop, &b);
	xpf_diag_text(f, &b);
	xpf_diag_num(f, "bytes", s.bytes);
	xpf_diag_num(f, "count", s.count);
	xpf_diag_num(f, "parameters", s.nparams);
	xpf_diag_num(f, "parameters_bytes", s.pbytes);
	xpf_diag_evidence(f, XPF_EV_MODULE(XPF_F_PEAK_BUFFERS_TSV), c->dir);
	xpf_diag_evidence(f, XPF_EV_MODULE(XPF_F_INSTRUCTIONS_TSV), c->dir);
	xpf_diag_num(f, "borrowed_bytes", s.borrowed);
	if (layout)
		layout_fixes(c, f, s.bytes - s.borrowed, loop);
	else
		convert_fixes(c, f, &s, loop);
	xpf_buf_release(&s.params);
}

/* ---- xla-remat, temp-fragmentation -------------------------------------- */

void xpf_rule_remat_frag(xpf_diag_ctx *c)
{
	const xpf_plan *p = c->p;
	char h1[32], h2[32], h3[32], h4[32];
	xpf_buf b = XPF_BUF_INIT;

	if (p == NULL)
		return;
	if (p->remat_instructions > 0) {
		xpf_finding *f = xpf_diag_add(c, "xla-remat", XPF_TAG_READ, c->d->module);
		xpf_buf_printf(&b,
			       "XLA already rematerialized %zu instructions of %s (names with .remat) against the memory limit; the fix must come from the program, not from XLA",
			       p->remat_instructions, p->module);
		xpf_diag_text(f, &b);
		xpf_diag_num(f, "count", p->remat_instructions);
		xpf_diag_evidence(f, XPF_EV_MODULE(XPF_F_INSTRUCTIONS_TSV), c->dir);
	}
	if (!p->has_assignment || !p->simulated)
		return;
	uint64_t frag = xpf_sub0(p->temp_bytes, p->simulated_peak_bytes);
	if (frag >= 64 * XPF_MIB && frag * 10 >= p->temp_bytes) {
		xpf_finding *f = xpf_diag_add(c, "temp-fragmentation", XPF_TAG_READ, c->d->module);
		xpf_buf_printf(&b,
			       "the temp block of %s is %s but at most %s of it is live at once (the simulated heap peak): %s (%s%%) is lost to packing",
			       p->module, xpf_human(p->temp_bytes, h1),
			       xpf_human(p->simulated_peak_bytes, h2), xpf_human(frag, h3),
			       xpf_pct(frag, p->temp_bytes, h4));
		xpf_diag_text(f, &b);
		xpf_diag_num(f, "temp_bytes", p->temp_bytes);
		xpf_diag_num(f, "simulated_peak_bytes", p->simulated_peak_bytes);
		xpf_diag_num(f, "fragmentation_bytes", frag);
		xpf_diag_str(f, "fragmentation_pct", "%s", xpf_pct(frag, p->temp_bytes, h1));
		xpf_diag_evidence(f, XPF_EV_MODULE(XPF_F_HEAP_TSV), c->dir);
		xpf_diag_evidence(f, XPF_EV_MODULE(XPF_F_PLAN_JSON), c->dir);
		xpf_diag_addfix(c, f, frag, xpf_sub0(p->need_bytes, frag),
				"experiments with the model's largest buffers; no guarantee",
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

void xpf_rule_retrace(xpf_diag_ctx *c)
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
			xpf_buf_printf(&b,
				       "%.*s was compiled again for new input shapes: %s (%zu execution%s) needs %s",
				       (int)bl, name, name, executions_of(c->rt, self),
				       executions_of(c->rt, self) == 1 ? "" : "s",
				       xpf_human(p->need_bytes, h1));
		}
		const xpf_plan_param *pa = (size_t)i < p->nparams ? &p->params[i] : NULL;
		const xpf_plan_param *qa = (size_t)i < q->nparams ? &q->params[i] : NULL;
		xpf_buf_printf(&b,
			       "; %s (%zu execution%s) needs %s; parameter %lld is %s there, %s here",
			       o, executions_of(c->rt, (long)m),
			       executions_of(c->rt, (long)m) == 1 ? "" : "s",
			       xpf_human(q->need_bytes, h2),
			       (long long)(pa ? pa->number : qa->number), qa ? qa->shape : "absent",
			       pa ? pa->shape : "absent");
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
		xpf_diag_evidence(f, XPF_EV_MODULE(XPF_F_PLAN_JSON), h->module_dirs[m]);
	}
	if (f == NULL)
		return;
	xpf_buf_adds(&b, " (JAX compiles a function once per set of input shapes)");
	xpf_diag_text(f, &b);
	xpf_diag_num(f, "need_bytes", p->need_bytes);
	xpf_diag_num(f, "modules", others + 1);
	xpf_diag_evidence(f, XPF_EV_MODULE(XPF_F_PLAN_JSON), c->dir);
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
