#include "runtime.h"

#include <stdlib.h>
#include <string.h>

#include "xspace.h"

#define US 1000ll
#define KERNEL_LAG_NS (30 * US)
#define KERNEL_NS (5 * US)
#define THUNK_NS (3 * US)
#define ALLOC_NS (3 * US)

void mk_scn_init(mk_scn *s, const char *host, int ndev, uint64_t memory_size, int64_t capacity)
{
	memset(s, 0, sizeof *s);
	s->host = host;
	s->ndev = ndev;
	s->memory_size = memory_size;
	s->capacity = capacity;
	s->device_name = "AMD Instinct MI355X";
	s->vendor = "AMD";
	s->t = 2000 * US;
	s->scale = 1;
}

void mk_scn_release(mk_scn *s)
{
	for (int i = 0; i < s->nmods; i++) {
		hb_free(s->mods[i].hb);
		xpf_buf_release(&s->mods[i].hlo);
	}
	free(s->acts);
	memset(s, 0, sizeof *s);
}

int mk_add_module(mk_scn *s, hb_module *m, const char *fn, int64_t temp_size)
{
	if (s->nmods >= MK_MAX_MODULES)
		abort();
	mk_modinfo *mi = &s->mods[s->nmods];
	memset(mi, 0, sizeof *mi);
	mi->hb = m;
	mi->fn = fn;
	hb_encode(m, temp_size, &mi->hlo, &mi->stats);
	mi->nallocs = hb_runtime_allocs(m, mi->allocs, MK_MAX_RT_ALLOCS);
	for (int i = 0; i < mi->nallocs; i++)
		mi->nresults += mi->allocs[i].is_result;
	mi->nthunks = hb_thunks(m, mi->thunks, MK_MAX_THUNKS);
	return s->nmods++;
}

static mk_act *new_act(mk_scn *s, int kind)
{
	if (s->nacts == s->capacts) {
		s->capacts = s->capacts ? s->capacts * 2 : 256;
		s->acts = realloc(s->acts, (size_t)s->capacts * sizeof *s->acts);
		if (!s->acts)
			abort();
	}
	mk_act *a = &s->acts[s->nacts++];
	memset(a, 0, sizeof *a);
	a->kind = kind;
	a->t_ns = s->t;
	a->fail_at = -1;
	a->leader = 1;
	return a;
}

void mk_gap(mk_scn *s, int64_t ns) { s->t += ns; }

int mk_put(mk_scn *s, int dev, int64_t bytes, const char *shape)
{
	int first = s->nhandles;
	for (int d = 0; d < s->ndev; d++) {
		if (dev >= 0 && d != dev)
			continue;
		mk_act *a = new_act(s, ACT_PUT);
		a->dev = d;
		a->leader = dev >= 0 || d == 0;
		a->dur_ns = 40 * US;
		a->bytes = bytes;
		a->handle = s->nhandles++;
		snprintf(a->name, sizeof a->name, "%s", shape);
	}
	s->t += 40 * US + 10 * US;
	return first;
}

/* Offsets inside an execution, shared by the host and device lines. */
typedef struct exec_layout {
	int64_t build_start, build_end, thunks_start, thunks_end, module_end, end;
	int nalloc; /* allocations attempted successfully */
} exec_layout;

static void layout(const mk_modinfo *mi, int fail_at, int64_t retry_ns, exec_layout *l)
{
	l->build_start = 8 * US;
	l->nalloc = fail_at < 0 ? mi->nallocs : fail_at;
	if (fail_at >= 0) {
		/* allocations, the retry wait, then the allocated ones freed again */
		l->build_end = l->build_start + (1 + 2 * (int64_t)l->nalloc) * ALLOC_NS + retry_ns + 2 * US;
		l->thunks_start = l->thunks_end = l->module_end = l->build_end + 1 * US;
		l->end = l->module_end + 3 * US;
		return;
	}
	l->build_end = l->build_start + (1 + (int64_t)l->nalloc) * ALLOC_NS;
	l->thunks_start = l->build_end + 4 * US;
	l->thunks_end = l->thunks_start + (1 + (int64_t)mi->nthunks) * THUNK_NS;
	l->module_end = l->thunks_end + (2 + (int64_t)mi->nallocs) * ALLOC_NS;
	l->end = l->module_end + 3 * US;
}

int64_t mk_exec_duration(const mk_scn *s, int module, int fail_at, int64_t retry_ns)
{
	exec_layout l;
	const mk_modinfo *mi = &s->mods[module];
	layout(mi, fail_at, retry_ns, &l);
	if (fail_at >= 0)
		return l.end;
	int64_t kend = l.thunks_start + KERNEL_LAG_NS +
		(int64_t)mi->nthunks * (int64_t)s->scale * KERNEL_NS;
	return kend > l.end ? kend : l.end;
}

int mk_exec(mk_scn *s, int module, int fail_at, int64_t retry_ns)
{
	int first = s->nhandles;
	for (int d = 0; d < s->ndev; d++) {
		mk_act *a = new_act(s, ACT_EXEC);
		a->dev = d;
		a->leader = d == 0;
		a->module = module;
		a->fail_at = fail_at;
		a->retry_ns = retry_ns;
		a->handle = s->nhandles;
		s->nhandles += s->mods[module].nresults;
	}
	s->t += mk_exec_duration(s, module, fail_at, retry_ns) + 20 * US;
	return first;
}

void mk_free(mk_scn *s, int handle)
{
	/* find the device of the handle */
	int dev = 0;
	for (int i = s->nacts - 1; i >= 0; i--) {
		const mk_act *a = &s->acts[i];
		if (a->kind == ACT_PUT && a->handle == handle) {
			dev = a->dev;
			break;
		}
		if (a->kind == ACT_EXEC && handle >= a->handle &&
		    handle < a->handle + s->mods[a->module].nresults) {
			dev = a->dev;
			break;
		}
	}
	mk_act *a = new_act(s, ACT_FREE);
	a->dev = dev;
	a->handle = handle;
	s->t += 2 * US;
}

void mk_py(mk_scn *s, const char *name, int64_t dur_ns)
{
	mk_act *a = new_act(s, ACT_PY);
	a->dur_ns = dur_ns;
	snprintf(a->name, sizeof a->name, "%s", name);
	s->t += dur_ns + 1 * US;
}

/* ---- BFC simulation ---- */

typedef struct blk {
	int64_t off, size;
	int handle;
} blk;

typedef struct bfc {
	const mk_scn *s;
	int dev;
	char name[32];
	int64_t cap, in_use, peak;
	blk *b;
	int n, capb;
	int64_t *h_off; /* per handle: offset, -1 when not live */
	int64_t *h_size;
	int64_t *h_req;
} bfc;

static void bfc_init(bfc *a, const mk_scn *s, int dev)
{
	memset(a, 0, sizeof *a);
	a->s = s;
	a->dev = dev;
	snprintf(a->name, sizeof a->name, "GPU_%d_bfc", dev);
	a->cap = s->capacity;
	a->in_use = s->pre_bytes[dev];
	a->peak = a->in_use;
	size_t nh = (size_t)s->nhandles + 1;
	a->h_off = malloc(nh * sizeof *a->h_off);
	a->h_size = calloc(nh, sizeof *a->h_size);
	a->h_req = calloc(nh, sizeof *a->h_req);
	if (!a->h_off || !a->h_size || !a->h_req)
		abort();
	for (size_t i = 0; i < nh; i++)
		a->h_off[i] = -1;
	a->capb = 64;
	a->b = malloc((size_t)a->capb * sizeof *a->b);
	if (!a->b)
		abort();
	if (a->in_use > 0) {
		a->b[0].off = 0;
		a->b[0].size = a->in_use;
		a->b[0].handle = -1;
		a->n = 1;
	}
}

static void bfc_release(bfc *a)
{
	free(a->b);
	free(a->h_off);
	free(a->h_size);
	free(a->h_req);
}

static int64_t round256(int64_t n)
{
	return n < 256 ? 256 : (n + 255) & ~(int64_t)255;
}

static uint64_t bfc_addr(const bfc *a, int64_t off)
{
	return 0x7f1c00000000ull + ((uint64_t)a->dev << 40) + (uint64_t)off;
}

/* First fit; returns the offset or -1 when no chunk is large enough. */
static int64_t bfc_find(const bfc *a, int64_t size)
{
	int64_t off = 0;
	for (int i = 0; i < a->n; i++) {
		if (a->b[i].off - off >= size)
			return off;
		off = a->b[i].off + a->b[i].size;
	}
	return a->cap - off >= size ? off : -1;
}

static double bfc_frag(const bfc *a)
{
	int64_t off = 0, largest = 0, free_b = a->cap - a->in_use;
	for (int i = 0; i < a->n; i++) {
		if (a->b[i].off - off > largest)
			largest = a->b[i].off - off;
		off = a->b[i].off + a->b[i].size;
	}
	if (a->cap - off > largest)
		largest = a->cap - off;
	if (free_b <= 0)
		return 0;
	return (double)(free_b - largest) / (double)free_b;
}

static void alloc_stats(xp_emit *e, const bfc *a, int64_t req, int64_t size, int64_t off,
	const char *shape)
{
	double frag = bfc_frag(a);
	xp_st_ref(e, "allocator_name", a->name);
	xp_st_i64(e, "bytes_reserved", 0);
	xp_st_i64(e, "bytes_allocated", a->in_use);
	xp_st_i64(e, "bytes_available", a->cap - a->in_use);
	if (frag == 0)
		xp_st_i64(e, "fragmentation", 0);
	else
		xp_st_dbl(e, "fragmentation", frag);
	xp_st_i64(e, "peak_bytes_in_use", a->peak);
	xp_st_i64(e, "requested_bytes", req);
	xp_st_i64(e, "allocation_bytes", size);
	xp_st_i64(e, "addr", (int64_t)bfc_addr(a, off));
	xp_st_i64(e, "id", 0);
	xp_st_i64(e, "data_type", 0);
	if (shape && *shape)
		xp_st_ref(e, "shape", shape);
}

/* Allocate `req` bytes for handle h (h < 0: scratch, returned offset is the
 * key) at time t.  Aborts when the scenario's plan does not match the pool. */
static int64_t bfc_alloc(bfc *a, xp_emit *e, int64_t t, int h, int64_t req, const char *shape)
{
	int64_t size = round256(req);
	int64_t off = bfc_find(a, size);
	if (off < 0) {
		fprintf(stderr, "xplane-mkcapture: %s: %s out of memory for %lld bytes (in use %lld)\n",
			a->s->host, a->name, (long long)req, (long long)a->in_use);
		abort();
	}
	if (a->n == a->capb) {
		a->capb *= 2;
		a->b = realloc(a->b, (size_t)a->capb * sizeof *a->b);
		if (!a->b)
			abort();
	}
	int k = a->n;
	while (k > 0 && a->b[k - 1].off > off) {
		a->b[k] = a->b[k - 1];
		k--;
	}
	a->b[k].off = off;
	a->b[k].size = size;
	a->b[k].handle = h;
	a->n++;
	a->in_use += size;
	if (a->in_use > a->peak)
		a->peak = a->in_use;
	if (h >= 0) {
		a->h_off[h] = off;
		a->h_size[h] = size;
		a->h_req[h] = req;
	}
	if (e && !a->s->no_runtime) {
		xp_ev_begin(e, "MemoryAllocation", t * 1000, 0);
		alloc_stats(e, a, req, size, off, shape);
	}
	return off;
}

static void bfc_free_off(bfc *a, xp_emit *e, int64_t t, int64_t off, int64_t req)
{
	int k;
	for (k = 0; k < a->n; k++)
		if (a->b[k].off == off)
			break;
	if (k == a->n)
		abort();
	int64_t size = a->b[k].size;
	memmove(&a->b[k], &a->b[k + 1], (size_t)(a->n - k - 1) * sizeof *a->b);
	a->n--;
	a->in_use -= size;
	if (e && !a->s->no_runtime) {
		xp_ev_begin(e, "MemoryDeallocation", t * 1000, 0);
		alloc_stats(e, a, req, size, off, NULL);
	}
}

static int bfc_fits(const bfc *a, int64_t req)
{
	return bfc_find(a, round256(req)) >= 0;
}

/* ---- line generators ---- */

typedef struct line_ctx {
	mk_scn *s;
	int role; /* 0 main thread, 1 device thread, 2 python, 3 device stream */
	int dev;
} line_ctx;

static int dev_line_is_main(const mk_scn *s) { return s->ndev == 1; }

static void span(xp_emit *e, const char *name, int64_t t0, int64_t t1)
{
	xp_ev_begin(e, name, t0 * 1000, (t1 - t0) * 1000);
}

static void emit_exec_device_part(mk_scn *s, xp_emit *e, bfc *a, const mk_act *x)
{
	const mk_modinfo *mi = &s->mods[x->module];
	const char *mname = hb_name(mi->hb);
	char nm[256];
	exec_layout l;
	int64_t t = x->t_ns;
	int64_t offs[MK_MAX_RT_ALLOCS];
	layout(mi, x->fail_at, x->retry_ns, &l);

	span(e, "PjRtStreamExecutorLoadedExecutable::ExecuteHelper", t + 4 * US, t + l.end - 2 * US);
	snprintf(nm, sizeof nm, "%s:XLA GPU module", mname);
	span(e, nm, t + 6 * US, t + l.module_end);
	span(e, "Build buffer allocations", t + l.build_start, t + l.build_end);
	int r = 0;
	for (int i = 0; i < l.nalloc; i++) {
		const hb_rt_alloc *ra = &mi->allocs[i];
		int64_t ta = t + l.build_start + (1 + i) * ALLOC_NS;
		if (ra->is_result) {
			int h = x->handle + r++;
			offs[i] = bfc_alloc(a, e, ta, h, ra->bytes, NULL);
		} else {
			offs[i] = bfc_alloc(a, e, ta, -1, ra->bytes, NULL);
		}
	}
	if (x->fail_at >= 0) {
		int64_t tr = t + l.build_start + (1 + l.nalloc) * ALLOC_NS;
		if (bfc_fits(a, mi->allocs[x->fail_at].bytes)) {
			fprintf(stderr, "xplane-mkcapture: %s: planned failure of %s allocation %d fits\n",
				s->host, mname, x->fail_at);
			abort();
		}
		span(e, "AllocatorRetry::AllocateRaw", tr, tr + x->retry_ns);
		for (int i = l.nalloc - 1, k = 0; i >= 0; i--, k++) {
			int64_t td = tr + x->retry_ns + (1 + k) * ALLOC_NS;
			bfc_free_off(a, e, td, offs[i], mi->allocs[i].bytes);
		}
		for (int h = x->handle; h < x->handle + mi->nresults; h++)
			a->h_off[h] = -1;
		xp_flush(e);
		return;
	}
	span(e, "Resolve constant globals", t + l.build_end + 1 * US, t + l.build_end + 3 * US);
	span(e, "GpuExecutable::ExecuteThunks", t + l.thunks_start, t + l.thunks_end);
	xp_st_ref(e, "module_name", mname);
	for (int i = 0; i < mi->nthunks; i++) {
		int64_t th = t + l.thunks_start + (1 + i) * THUNK_NS;
		span(e, mi->thunks[i], th, th + THUNK_NS / 2);
	}
	/* scratch (temp block, tuple tables) goes back when the execution ends */
	for (int i = 0, k = 0; i < mi->nallocs; i++) {
		if (mi->allocs[i].is_result)
			continue;
		int64_t td = t + l.thunks_end + (1 + k++) * ALLOC_NS;
		bfc_free_off(a, e, td, offs[i], mi->allocs[i].bytes);
	}
	xp_flush(e);
}

static void emit_exec_main_part(mk_scn *s, xp_emit *e, const mk_act *x)
{
	const mk_modinfo *mi = &s->mods[x->module];
	char nm[160];
	exec_layout l;
	layout(mi, x->fail_at, x->retry_ns, &l);
	snprintf(nm, sizeof nm, "PjitFunction(%s)", mi->fn);
	span(e, nm, x->t_ns, x->t_ns + l.end);
	span(e, "PjRtStreamExecutorLoadedExecutable::Execute", x->t_ns + 2 * US, x->t_ns + l.end - 1 * US);
	xp_st_i64(e, "_pt", 5);
	xp_st_u64(e, "_p", (uint64_t)(x - s->acts) * 7919u + 1);
}

static void emit_put(mk_scn *s, xp_emit *e, bfc *a, const mk_act *x, int main_part, int dev_part)
{
	int64_t t = x->t_ns;
	if (main_part && x->leader)
		span(e, s->ndev > 1 ? "batched_copy_array_to_devices_with_sharding" : "DevicePut",
			t, t + x->dur_ns);
	if (dev_part) {
		span(e, "PjRtStreamExecutorClient::BufferFromHostBuffer", t + 5 * US, t + x->dur_ns - 5 * US);
		bfc_alloc(a, e, t + 8 * US, x->handle, x->bytes, x->name);
	}
}

static void gen_host(void *vctx, xp_emit *e)
{
	line_ctx *c = vctx;
	mk_scn *s = c->s;
	int main_line = c->role == 0;
	int dev_line = c->role == 1 || (main_line && dev_line_is_main(s));
	bfc a;
	bfc_init(&a, s, c->dev);
	for (int i = 0; i < s->nacts; i++) {
		const mk_act *x = &s->acts[i];
		switch (x->kind) {
		case ACT_PUT:
			if (dev_line && x->dev == c->dev)
				emit_put(s, e, &a, x, main_line, 1);
			else if (main_line && x->leader)
				emit_put(s, e, &a, x, 1, 0);
			break;
		case ACT_EXEC:
			if (main_line && x->leader)
				emit_exec_main_part(s, e, x);
			if (dev_line && x->dev == c->dev)
				emit_exec_device_part(s, e, &a, x);
			break;
		case ACT_FREE:
			if (dev_line && x->dev == c->dev) {
				if (a.h_off[x->handle] < 0)
					abort();
				bfc_free_off(&a, e, x->t_ns, a.h_off[x->handle], a.h_req[x->handle]);
				a.h_off[x->handle] = -1;
			}
			break;
		default:
			break;
		}
		xp_flush(e);
	}
	bfc_release(&a);
}

static void gen_python(void *vctx, xp_emit *e)
{
	line_ctx *c = vctx;
	for (int i = 0; i < c->s->nacts; i++) {
		const mk_act *x = &c->s->acts[i];
		if (x->kind == ACT_PY) {
			span(e, x->name, x->t_ns, x->t_ns + x->dur_ns);
			xp_flush(e);
		}
	}
}

static void kernel_name(const char *thunk, char *out, size_t n)
{
	size_t k = 0;
	if (strncmp(thunk, "custom-call", 11) == 0 || strncmp(thunk, "cublas", 6) == 0) {
		snprintf(out, n, "Cijk_Alik_Bljk_BBS_BH_MT256x256x64_MI16x16x1_SN_1LDSB1_AFC1");
		return;
	}
	for (; thunk[k] && k + 1 < n; k++)
		out[k] = thunk[k] == '.' || thunk[k] == '-' ? '_' : thunk[k];
	out[k] = 0;
}

static void gen_stream(void *vctx, xp_emit *e)
{
	line_ctx *c = vctx;
	mk_scn *s = c->s;
	char kn[160], det[128];
	uint64_t corr = 1000;
	for (int i = 0; i < s->nacts; i++) {
		const mk_act *x = &s->acts[i];
		if (x->kind != ACT_EXEC || x->dev != c->dev || x->fail_at >= 0)
			continue;
		const mk_modinfo *mi = &s->mods[x->module];
		exec_layout l;
		layout(mi, x->fail_at, x->retry_ns, &l);
		int64_t t = x->t_ns + l.thunks_start + KERNEL_LAG_NS;
		for (int k = 0; k < mi->nthunks; k++) {
			kernel_name(mi->thunks[k], kn, sizeof kn);
			for (int r = 0; r < s->scale; r++) {
				span(e, kn, t, t + KERNEL_NS - 1 * US);
				xp_st_u64(e, "correlation_id", corr++);
				snprintf(det, sizeof det, " grid:%d,1,1 block:256,1,1 private_mem:0 group_mem:0 occ_pct:0",
					64 << (k % 6));
				xp_st_ref(e, "kernel_details", det);
				xp_st_ref(e, "tf_op", "XlaModule:");
				xp_st_ref(e, "hlo_module", hb_name(mi->hb));
				xp_st_i64(e, "program_id", (int64_t)hb_program_id(mi->hb));
				xp_st_ref(e, "hlo_op", mi->thunks[k]);
				t += KERNEL_NS;
			}
		}
		xp_flush(e);
	}
}

static void write_metadata(mk_scn *s, w_sink *out)
{
	xp_plane p;
	char nm[256];
	xp_plane_init(&p, 1, "/host:metadata");
	for (int i = 0; i < s->nmods; i++) {
		snprintf(nm, sizeof nm, "%s(%llu)", hb_name(s->mods[i].hb),
			(unsigned long long)hb_program_id(s->mods[i].hb));
		xp_plane_hlo_proto(&p, nm, &s->mods[i].hlo, hb_program_id(s->mods[i].hb));
	}
	xp_write_plane(out, &p, NULL, 0);
	xp_plane_release(&p);
}

int mk_write_xspace(mk_scn *s, FILE *f, uint64_t *bytes, uint64_t *events)
{
	w_sink out = { f, 0, 0 };
	uint64_t nev = 0;
	line_ctx ctx[MK_MAX_DEVICES + 2];
	xp_line lines[MK_MAX_DEVICES + 2];
	char names[MK_MAX_DEVICES + 2][64];
	int64_t end = s->t + 1000 * US;

	write_metadata(s, &out);

	for (int d = 0; d < s->ndev; d++) {
		xp_plane p;
		char pname[32];
		snprintf(pname, sizeof pname, "/device:GPU:%d", d);
		xp_plane_init(&p, d + 2, pname);
		xp_plane_stat_i64(&p, "clock_rate", 2400000);
		xp_plane_stat_i64(&p, "core_count", 256);
		xp_plane_stat_u64(&p, "memory_bandwidth", 8000000000000ull);
		xp_plane_stat_u64(&p, "memory_size", s->memory_size);
		xp_plane_stat_i64(&p, "compute_cap_major", 9);
		xp_plane_stat_i64(&p, "compute_cap_minor", 5);
		xp_plane_stat_str(&p, "device_vendor", s->vendor);
		xp_plane_stat_str(&p, "gpu_device_name", s->device_name);
		ctx[0] = (line_ctx){ s, 3, d };
		memset(&lines[0], 0, sizeof lines[0]);
		lines[0].id = 13 + d;
		snprintf(names[0], sizeof names[0], "Stream #%d(Kernel)", 13 + d);
		lines[0].name = names[0];
		lines[0].timestamp_ns = 1900 * US + 137 * d;
		lines[0].duration_ps = (end - lines[0].timestamp_ns) * 1000;
		lines[0].gen = gen_stream;
		lines[0].ctx = &ctx[0];
		nev += xp_write_plane(&out, &p, lines, 1);
		xp_plane_release(&p);
	}

	{
		xp_plane p;
		int n = 0;
		xp_plane_init(&p, 100, "/host:CPU");
		/* lines sorted by name, as post-processing leaves them */
		ctx[n] = (line_ctx){ s, 0, 0 };
		memset(&lines[n], 0, sizeof lines[n]);
		lines[n].id = 22244;
		lines[n].name = "Host Threads/22244";
		lines[n].timestamp_ns = 42400;
		lines[n].duration_ps = (end - 42400) * 1000;
		lines[n].gen = gen_host;
		lines[n].ctx = &ctx[n];
		n++;
		ctx[n] = (line_ctx){ s, 2, 0 };
		memset(&lines[n], 0, sizeof lines[n]);
		lines[n].id = 1085180131661504713ll;
		lines[n].name = "python";
		lines[n].timestamp_ns = 869971;
		lines[n].duration_ps = (end - 869971) * 1000;
		lines[n].gen = gen_python;
		lines[n].ctx = &ctx[n];
		n++;
		if (s->ndev > 1)
			for (int d = 0; d < s->ndev; d++) {
				ctx[n] = (line_ctx){ s, 1, d };
				memset(&lines[n], 0, sizeof lines[n]);
				lines[n].id = 4747829982129071201ll + d;
				snprintf(names[n], sizeof names[n], "tf_pjrt_thread_pool/%lld",
					4747829982129071201ll + d);
				lines[n].name = names[n];
				lines[n].timestamp_ns = 707851 + 1013 * d;
				lines[n].duration_ps = (end - lines[n].timestamp_ns) * 1000;
				lines[n].gen = gen_host;
				lines[n].ctx = &ctx[n];
				n++;
			}
		nev += xp_write_plane(&out, &p, lines, (size_t)n);
		xp_plane_release(&p);
	}

	{
		xp_plane p;
		xp_plane_init(&p, 101, "Task Environment");
		xp_plane_stat_u64(&p, "profile_start_time", 1762412400000000000ull);
		xp_plane_stat_u64(&p, "profile_stop_time", 1762412400000000000ull + (uint64_t)end);
		xp_write_plane(&out, &p, NULL, 0);
		xp_plane_release(&p);
	}
	{
		xpf_buf hb = XPF_BUF_INIT;
		w_str(&hb, 4, s->host);
		w_sink *o = &out;
		sink_buf(o, &hb);
		xpf_buf_release(&hb);
	}
	if (bytes)
		*bytes = out.n;
	if (events)
		*events = nev;
	return out.err ? -1 : 0;
}
