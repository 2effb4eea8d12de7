/* The heap simulation (reference §5.3–§5.6): replay the heap-simulator
 * traces of the device colours, in proto order, with XLA's reference-count
 * rules, and find the peak and what is live there.
 *
 * Which traces: every non-empty trace whose first event's buffer belongs to
 * an allocation outside host memory.  In the common GPU case that is the one
 * trace of the combined temp allocation, and the result equals XProf's
 * Memory Viewer.  Several traces (several combined temp allocations) are
 * replayed one after the other with one state, as XLA's own
 * ComputePeakMemory does.
 *
 * Rules per event: ALLOC(b) starts b's region; FREE(b) drops one reference
 * to b's canonical root and releases the root's region when none remain;
 * SHARE_WITH(b, c) makes b live in c's region and re-adds that region only
 * if it had been released.  The simulated heap is thus always the sum of
 * the regions of the roots holding a reference, which is what makes the
 * peak rows sum exactly to the peak.  An ALLOC of a live buffer or a FREE of
 * a dead one (malformed traces) changes nothing. */
#include <stdlib.h>
#include <string.h>

#include "analysis/plan/plan_priv.h"

typedef struct heap_state {
	long *canon;    /* canonical buffer (index) of each buffer */
	uint32_t *refs; /* references held on each root */
	long *occupant; /* the latest sharer of each root's region */
	uint64_t heap, unpadded;
} heap_state;

static long root_of(const heap_state *st, long b)
{
	for (int guard = 0; st->canon[b] != b && guard < 1 << 20; guard++)
		b = st->canon[b];
	return b;
}

static long buffer_index(const xpf_plan *p, int64_t id)
{
	const xpf_plan_buffer *b = xpf_plan_buffer_by_id(p, id);
	return b ? (long)(b - p->buffers) : -1;
}

static bool trace_selected(const xpf_plan *p, const Xla__HeapSimulatorTrace *t)
{
	if (t->n_events == 0)
		return false;
	long b = buffer_index(p, t->events[0]->buffer_id);
	if (b < 0 || p->buffers[b].alloc < 0)
		return false;
	return xpf_plan_device_color(p, p->allocs[p->buffers[b].alloc].color);
}

static void add_region(xpf_plan *p, heap_state *st, long root)
{
	st->heap += p->buffers[root].bytes;
	st->unpadded += p->buffers[root].unpadded_bytes;
}

static void drop_region(xpf_plan *p, heap_state *st, long root)
{
	uint64_t b = p->buffers[root].bytes, u = p->buffers[root].unpadded_bytes;
	st->heap = st->heap > b ? st->heap - b : 0;
	st->unpadded = st->unpadded > u ? st->unpadded - u : 0;
}

/* Apply one event; step is its global number (for lifetimes). */
static void apply(xpf_plan *p, heap_state *st, const Xla__HeapSimulatorTrace__Event *ev, long step,
		  bool spans)
{
	long b = buffer_index(p, ev->buffer_id);
	if (b < 0)
		return;
	switch (ev->kind) {
	case XLA__HEAP_SIMULATOR_TRACE__EVENT__KIND__ALLOC:
		if (st->canon[b] == b && st->refs[b] > 0)
			return;
		st->canon[b] = b;
		st->occupant[b] = b;
		st->refs[b] = 1;
		add_region(p, st, b);
		if (spans)
			p->buffers[b].start = step;
		break;
	case XLA__HEAP_SIMULATOR_TRACE__EVENT__KIND__FREE: {
		long r = root_of(st, b);
		if (st->refs[r] == 0)
			return;
		if (spans)
			p->buffers[b].end = step;
		if (--st->refs[r] == 0)
			drop_region(p, st, r);
		break;
	}
	case XLA__HEAP_SIMULATOR_TRACE__EVENT__KIND__SHARE_WITH: {
		long c = buffer_index(p, ev->share_with_canonical_id);
		if (c < 0 || c == b)
			return;
		long r = root_of(st, c);
		st->canon[b] = r;
		st->occupant[r] = b;
		if (++st->refs[r] == 1)
			add_region(p, st, r);
		if (spans)
			p->buffers[b].start = step;
		break;
	}
	default: break;
	}
}

static void state_reset(heap_state *st, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		st->canon[i] = (long)i;
		st->occupant[i] = (long)i;
		st->refs[i] = 0;
	}
	st->heap = st->unpadded = 0;
}

/* Replay up to and including event number stop (-1: all).  The first full
 * replay records steps, lifetimes and the peak. */
static void replay(xpf_plan *p, const Xla__BufferAssignmentProto *ba, heap_state *st, long stop,
		   bool record)
{
	long step = 0;
	state_reset(st, p->nbuffers);
	for (size_t t = 0; t < ba->n_heap_simulator_traces; t++) {
		const Xla__HeapSimulatorTrace *tr = ba->heap_simulator_traces[t];
		if (!trace_selected(p, tr))
			continue;
		for (size_t e = 0; e < tr->n_events; e++, step++) {
			const Xla__HeapSimulatorTrace__Event *ev = tr->events[e];
			apply(p, st, ev, step, record);
			if (record) {
				xpf_plan_step *s = &p->steps[step];
				s->instruction = xpf_plan_str(p, ev->instruction_name);
				s->bytes = st->heap + p->indefinite_bytes;
				s->unpadded_bytes = st->unpadded + p->indefinite_bytes;
				if (st->heap > p->simulated_peak_bytes) {
					p->simulated_peak_bytes = st->heap;
					p->simulated_peak_unpadded_bytes = st->unpadded;
					p->peak_position = step;
					p->peak_instruction = s->instruction;
				}
			}
			if (step == stop)
				return;
		}
	}
}

int xpf_plan_simulate(xpf_plan *p, const Xla__BufferAssignmentProto *ba, xpf_arena *a, xpf_error *err)
{
	size_t nev = 0, nb = p->nbuffers ? p->nbuffers : 1;
	heap_state st = { 0 };
	for (size_t t = 0; t < ba->n_heap_simulator_traces; t++)
		if (trace_selected(p, ba->heap_simulator_traces[t])) {
			nev += ba->heap_simulator_traces[t]->n_events;
			p->ntraces++;
		}
	p->steps = xpf_arena_array(a, nev, sizeof *p->steps);
	p->nsteps = nev;
	st.canon = calloc(nb, sizeof *st.canon);
	st.refs = calloc(nb, sizeof *st.refs);
	st.occupant = calloc(nb, sizeof *st.occupant);
	if (st.canon == NULL || st.refs == NULL || st.occupant == NULL)
		abort();

	p->simulated = p->ntraces > 0;
	replay(p, ba, &st, -1, true);
	for (size_t i = 0; i < p->nbuffers; i++)
		if (p->buffers[i].start >= 0 && p->buffers[i].end < 0)
			p->buffers[i].end = nev ? (long)nev - 1 : 0;
	p->heap_peak_bytes = p->simulated_peak_bytes + p->indefinite_bytes;
	p->heap_peak_unpadded_bytes = p->simulated_peak_unpadded_bytes + p->indefinite_bytes;
	p->fragmentation_bytes = p->temp_bytes > p->simulated_peak_bytes ?
					 p->temp_bytes - p->simulated_peak_bytes :
					 0;

	size_t nrows = 0;
	for (size_t i = 0; i < p->nallocs; i++)
		if (p->allocs[i].indefinite && xpf_plan_device_color(p, p->allocs[i].color))
			nrows++;
	if (p->peak_position >= 0) {
		replay(p, ba, &st, p->peak_position, false);
		for (size_t i = 0; i < p->nbuffers; i++)
			if (st.canon[i] == (long)i && st.refs[i] > 0)
				nrows++;
	}
	p->peak = xpf_arena_array(a, nrows, sizeof *p->peak);
	for (size_t i = 0; i < p->nallocs; i++) {
		const xpf_plan_alloc *al = &p->allocs[i];
		if (!al->indefinite || !xpf_plan_device_color(p, al->color))
			continue;
		xpf_plan_peak *r = &p->peak[p->npeak++];
		r->bytes = al->bytes;
		r->kind = al->kind;
		r->alloc = al;
		r->buffer = al->largest >= 0 ? &p->buffers[al->largest] : NULL;
		r->unpadded_bytes = r->buffer && r->buffer->unpadded_bytes < al->bytes ?
					    r->buffer->unpadded_bytes :
					    al->bytes;
		r->offset = r->buffer ? r->buffer->offset : 0;
	}
	if (p->peak_position >= 0) {
		for (size_t i = 0; i < p->nbuffers; i++) {
			if (st.canon[i] != (long)i || st.refs[i] == 0)
				continue;
			const xpf_plan_buffer *occ = &p->buffers[st.occupant[i]];
			xpf_plan_peak *r = &p->peak[p->npeak++];
			r->bytes = p->buffers[i].bytes;
			r->unpadded_bytes = p->buffers[i].unpadded_bytes;
			r->buffer = occ;
			r->alloc = occ->alloc >= 0          ? &p->allocs[occ->alloc] :
				   p->buffers[i].alloc >= 0 ? &p->allocs[p->buffers[i].alloc] :
							      NULL;
			r->kind = r->alloc ? r->alloc->kind : XPF_KIND_TEMP;
			r->offset = occ->offset;
		}
	}
	free(st.canon);
	free(st.refs);
	free(st.occupant);
	(void)err;
	return XPF_OK;
}
