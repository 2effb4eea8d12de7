/* The runtime, scan: one /host:CPU line into allocator events, executions
 * and retries (SPEC §4.3; reference §6, §7).
 *
 * A line whose events are already in (start, longest first) order -- the
 * usual case -- is nested as it is read (scan_line_stream), with a stack of
 * the open events and a few records per execution, not per event;
 * otherwise its events are sorted into that order first (scan_line_sorted).
 * Events on one line nest by time and never partially overlap, which gives
 * every event its parent.  From the nesting we take, for each allocator
 * event, the host event around it, the transfer around it and the execution
 * around it; for each execution root, what it contains.  Times are
 * picoseconds relative to the capture's time base, so events of different
 * lines are compared by absolute time.  Nothing is kept per host event
 * beyond the line being read. */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/runtime/runtime.h"
#include "analysis/runtime/runtime_priv.h"
#include "common/alloc.h"
#include "common/intern.h"
#include "common/lazy.h"
#include "common/map.h"
#include "common/runs.h"

/* By start, longest first, then place in the line. */
static int order_cmp(const void *a, const void *b)
{
	const struct order_event *x = a, *y = b;
	if (x->t0 != y->t0)
		return x->t0 < y->t0 ? -1 : 1;
	if (x->t1 != y->t1)
		return x->t1 > y->t1 ? -1 : 1;
	return x->ev.index < y->ev.index ? -1 : x->ev.index > y->ev.index;
}

/* A line's base in ps from the capture's, worked out once a line: an
 * event's time is then one addition, not rel_ps's 128-bit product (the same
 * figure: within +-2^61 both, an offset too, the sum cannot overflow and
 * meets the same clamp). */
struct line_base {
	int64_t ps;
	bool ok;       /* within +-REL_PS_MAX (else rel_ps an event) */
	int64_t ts_ns; /* the line's timestamp_ns */
};

static struct line_base line_base_of(const struct scan *s, size_t line)
{
	int64_t ts = s->p->lines[line].timestamp_ns;
	__int128 b = ((__int128)ts - s->base) * 1000;
	bool ok = b >= -REL_PS_MAX && b <= REL_PS_MAX;
	return (struct line_base){ ok ? (int64_t)b : 0, ok, ts };
}

/* The start and end of event ev of a line (its base lb), in ps relative
 * to the capture's base. */
static inline void event_times(const struct scan *s, const struct line_base *lb,
			       const xpf_event *ev, int64_t *t0, int64_t *t1)
{
	int64_t off = ev->offset_ps;
	if (lb->ok && off > -REL_PS_MAX && off < REL_PS_MAX) {
		int64_t v = lb->ps + off;
		*t0 = v > REL_PS_MAX ? REL_PS_MAX : v < -REL_PS_MAX ? -REL_PS_MAX : v;
	} else {
		*t0 = xpf_rt_rel_ps(lb->ts_ns, s->base, off);
	}
	*t1 = *t0 + (ev->duration_ps > 0 ?
			     (ev->duration_ps < REL_PS_MAX ? ev->duration_ps : REL_PS_MAX) :
			     0);
}

/* Whether an event of times [t0, t1] may follow one of [pt0, pt1] on a
 * line in nesting order (by start, longest first). */
static inline bool in_order(int64_t pt0, int64_t pt1, int64_t t0, int64_t t1)
{
	return t0 > pt0 || (t0 == pt0 && t1 <= pt1);
}

/* Widen the time bounds [*lo, *hi] to [t0, t1]. */
static inline void widen(int64_t *lo, int64_t *hi, int64_t t0, int64_t t1)
{
	if (t0 <= -REL_PS_MAX || t1 >= REL_PS_MAX) { /* clamped: not exact */
		*lo = INT64_MIN;
		*hi = INT64_MAX;
		return;
	}
	if (t0 < *lo)
		*lo = t0;
	if (t1 > *hi)
		*hi = t1;
}

/* Widen line's time bounds (xpf_rt_priv.line_t0/t1), and its piece's when
 * it has pieces, by its event `index` of times [t0, t1]. */
static inline void line_bounds(struct scan *s, size_t line, size_t index, int64_t t0, int64_t t1)
{
	widen(&s->line_t0[line], &s->line_t1[line], t0, t1);
	struct xpf_rt_pieces *pc = s->pieces ? s->pieces[line] : NULL;
	if (pc) {
		size_t k = index / XPF_LINE_MARK < pc->n ? index / XPF_LINE_MARK : pc->n - 1;
		widen(&pc->t0[k], &pc->t1[k], t0, t1);
	}
}

/* The line's bounds and its pieces' as for a line without events: widened
 * by each event its scan reads. */
static void line_reset(struct scan *s, size_t line)
{
	s->line_t0[line] = INT64_MAX;
	s->line_t1[line] = INT64_MIN;
	struct xpf_rt_pieces *pc = s->pieces ? s->pieces[line] : NULL;
	for (size_t k = 0; pc && k < pc->n; k++) {
		pc->t0[k] = INT64_MAX;
		pc->t1[k] = INT64_MIN;
	}
}

/* ---- one line, streaming ------------------------------------------------ */

/* The usual case: the line's events are already in the order the sort above
 * would put them (by start, longest first), so they are nested as they are
 * read, with a stack of the open events only.  Kept beyond its end is a
 * node for each event that can make or name an execution or that can hold
 * its buffer set-up (execute family, per-device, anchors, Build buffer
 * allocations): a few per execution.  Other events only leave their mark on
 * the nearest such node around them (the last event under it, a thunk under
 * it).  Which nodes are executions is settled at the end of the line, with
 * the same rules as scan_line_sorted, and the allocator events and retries
 * read on the way get their execution then. */
struct knode {
	xpf_event ev; /* its msg in scan.kbuf from kbuf_at, once the line is read */
	size_t kbuf_at;
	int64_t t0, t1;
	unsigned flags;
	int dev;
	long parent;      /* nearest node strictly around it, or -1 */
	const char *pjit; /* nearest PjitFunction around it: its name */
	size_t last_seq;  /* the last step whose nearest node (or self) this is */
	int last_kind;    /* its kind: 2 in a retry, 1 in a build, 0 */
	bool thunk;       /* itself a thunk, or a thunk whose nearest node this is */
	bool retried;     /* itself a retry, or a retry whose nearest node this is */
	bool mark;
	bool run; /* an autotuner run of a compilation (mark_roots), not an execution */
	long root;
	long xid;
};

struct frame {
	int64_t t0, t1;
	unsigned flags;
	const char *name;
	long node;         /* nearest node around it, or self */
	long build;        /* nearest Build buffer allocations node, or self */
	uint32_t md1;      /* 1 + its event metadata index */
	uint32_t transfer; /* outermost transfer around it, or self: 1 + its
				 metadata index, 0: none */
	const char *pjit;  /* nearest PjitFunction strictly around it */
	bool retry;        /* in (or is) an AllocatorRetry */
};

struct pending {
	size_t index; /* into rt->events or rt->retries */
	long node;    /* nearest node around it */
	long build;
	bool has_alloc; /* retries: a later allocation on this line */
	int64_t alloc_t0;
};

/* add_execution over the nodes: node r is an execution. */
static int add_execution_node(struct scan *s, size_t line, struct knode *nd, size_t nn, long r,
			      xpf_error *err)
{
	struct knode *root = &nd[r];
	size_t xi = xpf_rt_new_execution(s, (uint32_t)line, s->p->lines[line].id, root->ev.name,
					 root->dev, root->t0, root->t1, root->pjit);
	struct exec_walk w = { NULL, NULL, NULL, -1 };
	size_t last_seq = root->last_seq;
	int last_kind = root->last_kind;
	bool retried = false;
	for (size_t j = (size_t)r; j < nn && nd[j].t0 <= root->t1; j++) {
		struct knode *e = &nd[j];
		if ((long)j != r && e->root != r)
			continue;
		xpf_rt_exec_walk_event(s, xi, &w, &e->ev, e->flags, e->dev, e->t1, err);
		if (e->thunk)
			s->rt->priv->xb[xi].thunk = true;
		retried = retried || e->retried;
		if (e->last_seq >= last_seq) {
			last_seq = e->last_seq;
			last_kind = e->last_kind;
		}
	}
	return xpf_rt_exec_walk_end(s, xi, &w, last_kind, retried, err);
}

/* scan_line_stream's answer when the line is not in order: nothing made but
 * allocator events, retries and allocators, for scan_line to drop or keep. */
#define SCAN_UNORDERED (-1)

/* A line's scan in progress (scan_line_stream): the open events, the
 * nodes kept, and the allocator events and retries waiting for their
 * execution. */
struct stream {
	struct knode *nd;
	struct frame *st;
	struct pending *pa_ev, *pa_re;
	size_t nn, cn, ns, cs, nae, cae, nar, car;
	size_t waiting; /* retries before pa_re[waiting] have their allocation */
};

/* s's stream for a new line, empty.  Its arrays are kept from one line to
 * the next: a line's are big, and grown anew for each line they were
 * copied over and over. */
static struct stream *stream_begin(struct scan *s)
{
	if (s->stream == NULL)
		s->stream = xpf_calloc(1, sizeof *s->stream);
	struct stream *m = s->stream;
	m->nn = m->ns = m->nae = m->nar = m->waiting = 0;
	return m;
}

void xpf_rt_scan_release(struct scan *s)
{
	struct stream *m = s->stream;
	if (m == NULL)
		return;
	free(m->nd);
	free(m->st);
	free(m->pa_ev);
	free(m->pa_re);
	free(m);
	s->stream = NULL;
}

/* A node for event ev (index i on the line): the events that can make or
 * name an execution or hold its buffer set-up.  Its bytes are copied, to
 * be read after the line (the window moves on). */
static long push_node(struct scan *s, struct stream *m, const xpf_event *ev, size_t i, int64_t t0,
		      int64_t t1, unsigned flags, const struct frame *pa, const char *pjit,
		      int kind, bool thunk, bool retry)
{
	struct knode *n = XPF_VEC_PUSH(m->nd, m->nn, m->cn);
	n->ev = *ev;
	if (s->kbuf_n + ev->msg_len > s->kbuf_cap) {
		s->kbuf_cap = (s->kbuf_n + ev->msg_len) * 2 + 4096;
		s->kbuf = xpf_realloc_array(s->kbuf, s->kbuf_cap, 1);
	}
	memcpy(s->kbuf + s->kbuf_n, ev->msg, ev->msg_len);
	n->kbuf_at = s->kbuf_n;
	s->kbuf_n += ev->msg_len;
	n->t0 = t0;
	n->t1 = t1;
	n->flags = flags;
	n->dev = s->md_dev[ev->md];
	n->parent = pa ? pa->node : -1;
	n->pjit = pjit;
	n->last_seq = i;
	n->last_kind = kind;
	n->thunk = thunk;
	n->retried = retry;
	n->mark = false;
	n->run = false;
	n->root = -1;
	n->xid = -1;
	return (long)m->nn - 1;
}

/* An allocator event or a retry read: kept, waiting for its execution. */
static int read_leaf(struct scan *s, struct stream *m, size_t line, const xpf_event *ev,
		     unsigned flags, int64_t t0, int64_t t1, const struct frame *pa,
		     uint32_t transfer, xpf_error *err)
{
	xpf_runtime *rt = s->rt;
	long knode = pa ? pa->node : -1, bnode = pa ? pa->build : -1;
	if (flags & (F_ALLOC | F_DEALLOC)) {
		int rc = xpf_rt_read_alloc(s, ev, flags, t0, pa ? pa->md1 : 0, transfer, line, err);
		if (rc != XPF_OK)
			return rc;
		struct pending *q = XPF_VEC_PUSH(m->pa_ev, m->nae, m->cae);
		q->index = rt->nevents - 1;
		q->node = knode;
		q->build = bnode;
		if (flags & F_ALLOC)
			for (; m->waiting < m->nar; m->waiting++) {
				m->pa_re[m->waiting].has_alloc = true;
				m->pa_re[m->waiting].alloc_t0 = t0;
			}
	} else if (flags & F_RETRY) {
		xpf_rt_retry *r = XPF_VEC_PUSH(rt->retries, rt->nretries, s->cap_retry);
		r->time_ns = xpf_rt_floor_ns(t0);
		r->duration_ns = (t1 - t0) / 1000;
		r->thread = s->p->lines[line].id;
		r->execution = -1;
		r->allocator = -1;
		struct pending *q = XPF_VEC_PUSH(m->pa_re, m->nar, m->car);
		q->index = rt->nretries - 1;
		q->node = knode;
		q->has_alloc = false;
	}
	return XPF_OK;
}

/* Event ev, the i-th of the line in nesting order (times t0, t1): nested
 * under the open events, kept as a node, an allocator event or a retry,
 * or as a mark on the nearest node around it. */
static int stream_event(struct scan *s, struct stream *m, size_t line, const xpf_event *ev,
			size_t i, int64_t t0, int64_t t1, xpf_error *err)
{
	size_t k = ev->md;
	const char *name = s->p->event_md[k].name;
	unsigned flags = xpf_rt_md_class(s, k, name);
	struct frame *st = m->st;
	while (m->ns > 0 &&
	       !(t0 < st[m->ns - 1].t1 || (t0 == st[m->ns - 1].t0 && t1 <= st[m->ns - 1].t1 &&
					   st[m->ns - 1].t1 > st[m->ns - 1].t0)))
		m->ns--;
	const struct frame *pa = m->ns > 0 ? &st[m->ns - 1] : NULL;
	long knode = pa ? pa->node : -1, bnode = pa ? pa->build : -1;
	bool retry = (flags & F_RETRY) || (pa && pa->retry);
	int kind = retry ? 2 : ((flags & F_BUILD) || bnode >= 0) ? 1 : 0;
	const char *pjit = pa ? ((pa->flags & F_PJIT) ? pa->name : pa->pjit) : NULL;
	bool thunk = pa && xpf_rt_thunk_of(pa->flags, flags);
	/* A step of the execution around it: what it does after a failed
	 * set-up (freeing the part of the set it had, error and Python
	 * events, SPEC §4.3) is none. */
	bool step = !(flags & F_DEALLOC) && (flags != 0 || thunk || kind != 0);
	uint32_t transfer = pa && pa->transfer   ? pa->transfer :
			    (flags & F_TRANSFER) ? (uint32_t)k + 1 :
						   0;
	long self = knode;
	if (flags & (F_EXEC | F_PERDEV | F_ANCHOR | F_BUILD | F_COMPILE)) {
		self = push_node(s, m, ev, i, t0, t1, flags, pa, pjit, kind, thunk, retry);
	} else if (knode >= 0) {
		if (step) {
			m->nd[knode].last_seq = i;
			m->nd[knode].last_kind = kind;
		}
		if (thunk)
			m->nd[knode].thunk = true;
		if (retry)
			m->nd[knode].retried = true;
	}
	int rc = read_leaf(s, m, line, ev, flags, t0, t1, pa, transfer, err);
	if (rc != XPF_OK)
		return rc;
	if (t1 > t0 ||
	    (flags & (F_EXEC | F_BUILD | F_RETRY | F_PJIT | F_TRANSFER | F_ANCHOR | F_COMPILE))) {
		struct frame *f = XPF_VEC_PUSH(m->st, m->ns, m->cs);
		f->t0 = t0;
		f->t1 = t1;
		f->flags = flags;
		f->name = name;
		f->md1 = (uint32_t)k + 1;
		f->node = self;
		f->build = (flags & F_BUILD) ? self : bnode;
		f->transfer = transfer;
		f->pjit = pjit;
		f->retry = retry;
	}
	return XPF_OK;
}

/* Whether node a is inside a compile event (or is one). */
static bool in_compile(const struct knode *nd, long a)
{
	for (; a >= 0; a = nd[a].parent)
		if (nd[a].flags & F_COMPILE)
			return true;
	return false;
}

/* Whether a retry is inside node i (or its nodes). */
static bool subtree_retried(const struct knode *nd, size_t nn, size_t i)
{
	for (size_t j = i; j < nn && nd[j].t0 <= nd[i].t1; j++) {
		long a = (long)j;
		while (a > (long)i)
			a = nd[a].parent;
		if (a == (long)i && nd[j].retried)
			return true;
	}
	return false;
}

/* Which nodes are executions (mark), and each node's execution (root).
 * A bare GpuExecutable::ExecuteThunks (no client execute around it) on a
 * compile thread or inside a compile event is XLA's autotuner trying a
 * kernel while it compiles (SPEC §4.3): a run of that compilation (run),
 * never an execution. */
static void mark_roots(struct knode *nd, size_t nn, bool compile_line, bool tpu)
{
	for (size_t i = 0; i < nn; i++) {
		struct knode *e = &nd[i];
		if (!(e->flags & F_ANCHOR))
			continue;
		long r = (e->flags & F_EXEC) ? (long)i : -1,
		     pd = (e->flags & F_PERDEV) ? (long)i : -1;
		for (long a = e->parent; a >= 0; a = nd[a].parent) {
			if (nd[a].flags & F_EXEC)
				r = a;
			if (nd[a].flags & F_PERDEV)
				pd = a;
		}
		if (r < 0)
			r = (long)i;
		if ((nd[r].flags & F_THUNKS) && (compile_line || in_compile(nd, r))) {
			nd[r].run = true;
			continue;
		}
		/* On TPU the XLA Modules lines give every execution (SPEC 4.3):
		 * a host-side execute is one only when it failed there (a retry
		 * inside), which no device line shows. */
		if (tpu && !subtree_retried(nd, nn, (size_t)r))
			continue;
		if (pd >= 0 && pd != r) {
			for (size_t j = (size_t)r + 1; j < nn && nd[j].t0 < nd[r].t1; j++)
				if ((nd[j].flags & F_PERDEV) && nd[j].dev != nd[pd].dev) {
					r = pd;
					break;
				}
		}
		nd[r].mark = true;
	}
	for (size_t i = 0; i < nn; i++)
		nd[i].root = nd[i].mark ? (long)i : nd[i].parent >= 0 ? nd[nd[i].parent].root : -1;
}

/* Whether node j is node i or inside it. */
static bool under(const struct knode *nd, size_t j, size_t i)
{
	for (long a = (long)j; a >= (long)i; a = nd[a].parent)
		if (a == (long)i)
			return true;
	return false;
}

/* The function compile node i compiles: the first name a compile event in
 * it carries, else the PjitFunction(<f>) around it as jit_<f>; interned. */
static const char *compile_function(struct scan *s, const struct knode *nd, size_t nn, size_t i)
{
	size_t len;
	for (size_t j = i; j < nn && nd[j].t0 <= nd[i].t1; j++) {
		const char *f;
		if ((nd[j].flags & F_COMPILE) && under(nd, j, i) &&
		    (f = xpf_rt_compile_function(nd[j].ev.name, &len)))
			return xpf_rt_intern(s, f, len);
	}
	const char *pj = nd[i].pjit;
	if (pj == NULL)
		return NULL;
	pj += strlen("PjitFunction(");
	len = strlen(pj);
	if (len > 0 && pj[len - 1] == ')')
		len--;
	/* PjitFunction(jit(f)) and PjitFunction(f) both compile jit_f */
	if (len > 5 && strncmp(pj, "jit(", 4) == 0 && pj[len - 1] == ')') {
		pj += 4;
		len -= 5;
	}
	char buf[256];
	int k = snprintf(buf, sizeof buf, "jit_%.*s", (int)(len < 240 ? len : 240), pj);
	return xpf_rt_intern(s, buf, (size_t)k);
}

/* The line's compilations (its outermost compile nodes) and autotuner
 * runs, as records for xpf_rt_compiles_finish. */
static void add_compiles(struct scan *s, size_t line, const struct knode *nd, size_t nn)
{
	xpf_runtime *rt = s->rt;
	for (size_t i = 0; i < nn; i++) {
		bool top = (nd[i].flags & F_COMPILE) && !in_compile(nd, nd[i].parent);
		if (!top && !nd[i].run)
			continue;
		xpf_rt_compile *c = XPF_VEC_PUSH(rt->compiles, rt->ncompiles, s->cap_compile);
		memset(c, 0, sizeof *c);
		c->start_ps = nd[i].t0;
		c->end_ps = nd[i].t1;
		c->thread = s->p->lines[line].id;
		c->module = -1;
		c->allocator = -1;
		c->is_run = nd[i].run;
		c->autotuner_runs = nd[i].run;
		for (size_t j = i; j < nn && nd[j].t0 <= nd[i].t1 && !c->retried; j++)
			c->retried = nd[j].retried && under(nd, j, i);
		if (top)
			c->function = compile_function(s, nd, nn, i);
	}
}

/* The line's executions made; its allocator events and retries given
 * theirs. */
static int settle_line(struct scan *s, struct stream *m, size_t line, xpf_error *err)
{
	xpf_runtime *rt = s->rt;
	struct knode *nd = m->nd;
	for (size_t i = 0; i < m->nn; i++)
		nd[i].ev.msg = s->kbuf + nd[i].kbuf_at;
	const char *lname = s->p->lines[line].name;
	mark_roots(nd, m->nn, lname && strncmp(lname, "tf_pjrt_compile_thread_pool", 27) == 0,
		   s->tpu_modules);
	add_compiles(s, line, nd, m->nn);
	for (size_t i = 0; i < m->nn; i++)
		if (nd[i].root == (long)i) {
			int rc = add_execution_node(s, line, nd, m->nn, (long)i, err);
			if (rc != XPF_OK)
				return rc;
			nd[i].xid = (long)rt->nexecutions - 1;
		}
	for (size_t q = 0; q < m->nae; q++) {
		long root = m->pa_ev[q].node >= 0 ? nd[m->pa_ev[q].node].root : -1;
		long x = root >= 0 ? nd[root].xid : -1;
		xpf_rt_event *re = &rt->events[m->pa_ev[q].index];
		re->execution = x >= 0 ? (int32_t)x : -1;
		re->in_build = x >= 0 && m->pa_ev[q].build >= 0 && nd[m->pa_ev[q].build].root == root;
	}
	for (size_t q = 0; q < m->nar; q++) {
		long root = m->pa_re[q].node >= 0 ? nd[m->pa_re[q].node].root : -1;
		xpf_rt_retry *r = &rt->retries[m->pa_re[q].index];
		r->execution = root >= 0 ? nd[root].xid : -1;
		if (!m->pa_re[q].has_alloc)
			continue;
		/* this line's events are the last read */
		size_t first = m->nae ? m->pa_ev[0].index : rt->nevents;
		for (size_t e = rt->nevents; e-- > first;) {
			if (rt->events[e].t_ps == m->pa_re[q].alloc_t0 &&
			    rt->events[e].kind == XPF_RT_ALLOC) {
				r->allocator = xpf_rt_ev_allocator(rt, &rt->events[e]);
				break;
			}
		}
	}
	return XPF_OK;
}

/* ---- one line, light ---------------------------------------------------- */

/* Where scan_line_stream takes a line up after scan_line_light: the line's
 * last event at the top level (no event open around it) before its first
 * event of a class, and the order check's state there. */
struct resume {
	bool found;         /* the line has an event of a class */
	xpf_event_pos from; /* the event at the top level */
	size_t seq;         /* its place in the line */
	int64_t pt0, pt1;   /* the times of the event before it */
};

/* A line of Python-tracer calls (or other events the runtime takes nothing
 * from) leaves only its time bounds and its pieces': an event of no class
 * under events of no class is neither kept nor marks anything.  So a line
 * is read first with the times only, until its first event of a class
 * (r->found); scan_line_stream reads the rest from the last event at the
 * top level before it, where its nesting starts from an empty stack.  In a
 * line in (start, longest first) order an event is at the top level when
 * no event before it ends after its start (the stream pops a frame when an
 * event starts at or after its end), so no stack is needed here.
 * SCAN_UNORDERED as scan_line_stream. */
static int scan_line_light(struct scan *s, size_t line, struct resume *r, xpf_error *err)
{
	xpf_event_iter it;
	xpf_event ev;
	int rc;
	int64_t pt0 = 0, pt1 = 0, end = INT64_MIN; /* the latest end so far */
	const struct line_base lb = line_base_of(s, line);
	xpf_events_begin(s->p, line, &s->win, &it);
	*r = (struct resume){ .found = false }; /* the first event sets it: none ends after it */
	for (size_t i = 0;; i++) {
		xpf_event_pos at = xpf_events_pos(&it);
		if ((rc = xpf_events_next(&it, &ev, err)) != 1)
			break;
		int64_t t0, t1;
		event_times(s, &lb, &ev, &t0, &t1);
		line_bounds(s, line, ev.index, t0, t1);
		if (i > 0 && !in_order(pt0, pt1, t0, t1))
			return SCAN_UNORDERED;
		if (t0 >= end)
			*r = (struct resume){ .from = at, .seq = i, .pt0 = pt0, .pt1 = pt1 };
		if (xpf_rt_md_class(s, ev.md, ev.name) != 0) {
			r->found = true;
			break;
		}
		pt0 = t0;
		pt1 = t1;
		end = t1 > end ? t1 : end;
	}
	return rc < 0 ? err->code : XPF_OK;
}

/* Line `line`, read through the window from r (sorted NULL) or from its
 * events sorted into nesting order: SCAN_UNORDERED when read through the
 * window and found out of that order. */
static int scan_line_stream(struct scan *s, size_t line, const struct resume *r,
			    const struct order_event *sorted, size_t nsorted, xpf_error *err)
{
	xpf_event_iter it;
	xpf_event ev;
	int rc;
	struct stream *m = stream_begin(s);
	size_t seq = 0;
	s->kbuf_n = 0;
	int64_t pt0 = 0, pt1 = 0;
	const struct line_base lb = line_base_of(s, line);
	if (!sorted) {
		xpf_events_begin_at(s->p, line, r->from, UINT64_MAX, &s->win, &it);
		seq = r->seq;
		pt0 = r->pt0;
		pt1 = r->pt1;
	}
	for (;;) {
		if (!sorted) {
			if ((rc = xpf_events_next(&it, &ev, err)) != 1)
				break;
		} else if (seq < nsorted) {
			ev = sorted[seq].ev;
		} else {
			rc = 0;
			break;
		}
		size_t i = seq++;
		int64_t t0, t1;
		event_times(s, &lb, &ev, &t0, &t1);
		line_bounds(s, line, ev.index, t0, t1);
		if (i > 0 && !in_order(pt0, pt1, t0, t1))
			return SCAN_UNORDERED;
		pt0 = t0;
		pt1 = t1;
		if ((rc = stream_event(s, m, line, &ev, i, t0, t1, err)) != XPF_OK)
			return rc;
	}
	return rc < 0 ? err->code : settle_line(s, m, line, err);
}

/* A line read (rc): its allocator events from index first on go to their
 * allocators' capacity figures. */
static int line_done(struct scan *s, size_t first, int rc)
{
	if (rc != XPF_OK)
		return rc;
	xpf_runtime *rt = s->rt;
	for (size_t i = first; i < rt->nevents && i - first < s->navail; i++) {
		const xpf_rt_event *e = &rt->events[i];
		int a = xpf_rt_ev_allocator(rt, e);
		xpf_rt_scan_capacity(&rt->allocators[a], &rt->priv->peak[a], e->t_ps,
				     e->in_use_after, s->avail[i - first]);
	}
	return rc;
}

/* A line whose events are not in the order the stream nests in: its
 * events (read through the mapping, which stays) sorted into that order,
 * then streamed. */
static int scan_line_sorted(struct scan *s, size_t line, xpf_error *err)
{
	xpf_event_iter it;
	xpf_event ev;
	int rc;
	s->noh = 0;
	const struct line_base lb = line_base_of(s, line);
	xpf_events_begin(s->p, line, NULL, &it);
	while ((rc = xpf_events_next(&it, &ev, err)) == 1) {
		struct order_event *o = XPF_VEC_PUSH(s->oh, s->noh, s->capoh);
		o->ev = ev;
		event_times(s, &lb, &ev, &o->t0, &o->t1);
	}
	if (rc < 0)
		return err->code;
	if (s->noh)
		xpf_qsort(s->oh, s->noh, sizeof *s->oh, order_cmp);
	return scan_line_stream(s, line, NULL, s->oh, s->noh, err);
}

int xpf_rt_scan_line(struct scan *s, size_t line, xpf_error *err)
{
	size_t nevents = s->rt->nevents, nretries = s->rt->nretries;
	line_reset(s, line);
	s->navail = 0;
	struct resume r;
	int rc = scan_line_light(s, line, &r, err);
	if (rc == XPF_OK && r.found)
		rc = scan_line_stream(s, line, &r, NULL, 0, err);
	if (rc != SCAN_UNORDERED)
		return line_done(s, nevents, rc);
	/* Drop what the stream read of the line before it found it out of
	 * order (no execution is made before the end) and sort it instead;
	 * allocators it found are found again. */
	s->rt->nevents = nevents;
	s->rt->nretries = nretries;
	line_reset(s, line);
	s->navail = 0;
	return line_done(s, nevents, scan_line_sorted(s, line, err));
}

int xpf_rt_scan_modules_line(struct scan *s, const xpf_plane *p, size_t l, unsigned d, xpf_error *err)
{
	xpf_runtime *rt = s->rt;
	struct xpf_rt_priv *pv = rt->priv;
	xpf_event_iter it;
	xpf_event ev;
	int rc;
	xpf_events_begin(p, l, NULL, &it);
	while ((rc = xpf_events_next(&it, &ev, err)) == 1) {
		int64_t t0 = xpf_rt_rel_ps(p->lines[l].timestamp_ns, s->base, ev.offset_ps);
		size_t xi =
			xpf_rt_new_execution(s, UINT32_MAX, p->lines[l].id, ev.name, (int)d, t0,
					     t0 + (ev.duration_ps > 0 ? ev.duration_ps : 0), NULL);
		xpf_rt_execution *x = &rt->executions[xi];
		x->host_name = ev.name;
		x->launched = XPF_LAUNCHED_YES; /* the device ran it */
		pv->xb[xi].thunk = true;
		xpf_stat st;
		int64_t pid;
		if (xpf_event_stat(p, &ev, "program_id", &st, err) == 1 && xpf_stat_i64(&st, &pid))
			pv->xb[xi].program_id = pid;
	}
	return rc < 0 ? err->code : XPF_OK;
}
