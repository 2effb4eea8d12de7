/* The capture layer against the real captures of ../shared/captures (figures
 * from its README, read there with an independent decoder) and against
 * hand-made broken inputs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "capture/capture.h"
#include "capture/input.h"
#include "capture/pb_quick.h"
#include "hlo.pb-c.h"
#include "host_events.h"
#include "test_group.h"
#include "test_util.h"



static xpf_capture *open_or_skip(const char *rel)
{
	const char *p = xpf_t_shared(rel);
	if (p == NULL)
		skip();
	xpf_capture *c = NULL;
	xpf_error err = { 0 };
	int rc = xpf_capture_open(p, &c, &err);
	if (rc != XPF_OK)
		fail_msg("%s", err.msg);
	return c;
}

struct alloc_fig {
	const char *name;
	int allocs, deallocs;
	uint64_t max_peak;
};

/* Count allocator events per allocator (allocator_name, else tpu:<index_on_host>). */
struct count_ctx {
	const char *want;
	int allocs, deallocs;
	uint64_t peak;
};

static void count_event(const xpf_plane *p, size_t line, const xpf_event *ev, void *ctx)
{
	struct count_ctx *cc = ctx;
	(void)line;
	int a = strcmp(ev->name, "MemoryAllocation") == 0;
	int d = strcmp(ev->name, "MemoryDeallocation") == 0;
	if (!a && !d)
		return;
	xpf_stat_iter si;
	xpf_stat st;
	xpf_error err = { 0 };
	char name[64] = "";
	uint64_t pk = 0, u;
	xpf_str s;
	int rc;
	xpf_stats_of_event(p, ev, NULL, &si);
	while ((rc = xpf_stats_next(&si, &st, &err)) == 1) {
		if (strcmp(st.name, "allocator_name") == 0 && xpf_stat_text(&st, &s))
			snprintf(name, sizeof name, "%.*s", (int)s.n, s.p);
		else if (strcmp(st.name, "index_on_host") == 0 && xpf_stat_u64(&st, &u) && !name[0])
			snprintf(name, sizeof name, "tpu:%llu", (unsigned long long)u);
		else if (strcmp(st.name, "peak_bytes_in_use") == 0 && xpf_stat_u64(&st, &u))
			pk = u;
	}
	assert_int_equal(rc, 0);
	if (strcmp(name, cc->want) != 0)
		return;
	cc->allocs += a;
	cc->deallocs += d;
	if (pk > cc->peak)
		cc->peak = pk;
}

static void count(xpf_capture *c, const char *want, int *allocs, int *deallocs, uint64_t *peak)
{
	struct count_ctx cc = { want, 0, 0, 0 };
	each_host_event(c, count_event, &cc);
	*allocs = cc.allocs;
	*deallocs = cc.deallocs;
	*peak = cc.peak;
}

static void check_allocs(xpf_capture *c, const struct alloc_fig *f, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int a, d;
		uint64_t pk;
		count(c, f[i].name, &a, &d, &pk);
		assert_int_equal(a, f[i].allocs);
		assert_int_equal(d, f[i].deallocs);
		if (f[i].max_peak)
			assert_int_equal(pk, f[i].max_peak);
	}
}

static uint64_t module_total(xpf_capture *c, const char *name, size_t *nalloc)
{
	for (size_t m = 0; m < xpf_capture_nmodules(c); m++) {
		if (strcmp(xpf_capture_module(c, m)->name, name) != 0)
			continue;
		xpf_hlo *hlo;
		xpf_error err = { 0 };
		assert_int_equal(xpf_capture_module_hlo(c, m, &hlo, &err), XPF_OK);
		const Xla__HloProto *h = xpf_hlo_head(hlo);
		assert_non_null(h->buffer_assignment);
		uint64_t t = 0;
		for (size_t a = 0; a < h->buffer_assignment->n_buffer_allocations; a++)
			t += (uint64_t)h->buffer_assignment->buffer_allocations[a]->size;
		if (nalloc)
			*nalloc = h->buffer_assignment->n_buffer_allocations;
		xpf_hlo_free(hlo);
		return t;
	}
	fail_msg("module %s not found", name);
	return 0;
}

static void device_memory(xpf_capture *c, const char *plane, uint64_t want, const char *vendor)
{
	long pi = xpf_capture_find_plane(c, plane);
	assert_true(pi >= 0);
	const xpf_plane *p;
	xpf_error err = { 0 };
	assert_int_equal(xpf_capture_plane(c, (size_t)pi, &p, &err), XPF_OK);
	xpf_stat st;
	uint64_t v;
	assert_int_equal(xpf_plane_stat(p, "memory_size", &st, &err), 1);
	assert_true(xpf_stat_u64(&st, &v));
	assert_int_equal(v, want);
	if (vendor) {
		xpf_str s;
		assert_int_equal(xpf_plane_stat(p, "device_vendor", &st, &err), 1);
		assert_true(xpf_stat_text(&st, &s));
		assert_true(xpf_str_eq(s, vendor));
	}
}

static void test_attention(void **state)
{
	xpf_capture *c = open_or_skip("captures/mi300x-jax08-attention.xplane.pb");
	xpf_error err = { 0 };
	assert_int_equal(xpf_capture_nplanes(c), 11);
	assert_int_equal(xpf_capture_nmodules(c), 31);
	size_t na;
	assert_int_equal(module_total(c, "jit_matmul(59)", &na), 201326604);
	assert_int_equal(na, 7);
	const xpf_plane *p;
	long pi = xpf_capture_find_plane(c, "/host:CPU");
	assert_int_equal(xpf_capture_plane(c, (size_t)pi, &p, &err), XPF_OK);
	assert_int_equal(p->nlines, 5);
	assert_int_equal(p->nevents, 4275);
	struct alloc_fig f[] = { { "GPU_0_bfc", 126, 126, 595591680 },
				 { "xla_gpu_host_bfc", 18, 18, 0 } };
	check_allocs(c, f, 2);
	device_memory(c, "/device:GPU:0", 206141652992ULL, "AMD");
	long g0 = xpf_capture_find_plane(c, "/device:GPU:0");
	assert_int_equal(xpf_capture_plane(c, (size_t)g0, &p, &err), XPF_OK);
	xpf_stat st;
	uint64_t cores;
	assert_int_equal(xpf_plane_stat(p, "core_count", &st, &err), 1);
	assert_true(xpf_stat_u64(&st, &cores));
	assert_int_equal(cores, 304);
	assert_int_equal(xpf_capture_validate(c, &err), XPF_OK);
	xpf_capture_free(c);
}

static void test_gemm(void **state)
{
	xpf_capture *c = open_or_skip("captures/mi300x-jax08-gemm.xplane.pb");
	xpf_error err = { 0 };
	assert_int_equal(xpf_capture_nmodules(c), 16);
	struct alloc_fig f[] = { { "GPU_0_bfc", 69, 69, 738197504 },
				 { "xla_gpu_host_bfc", 12, 12, 0 } };
	check_allocs(c, f, 2);
	/* Old-style execute events are present under their names. */
	long pi = xpf_capture_find_plane(c, "/host:CPU");
	const xpf_plane *p;
	assert_int_equal(xpf_capture_plane(c, (size_t)pi, &p, &err), XPF_OK);
	int exec = 0, gpu_module = 0;
	for (size_t l = 0; l < p->nlines; l++) {
		xpf_event_iter it;
		xpf_event ev;
		xpf_events_begin(p, l, NULL, &it);
		while (xpf_events_next(&it, &ev, &err) == 1) {
			exec += strcmp(ev.name, "PjRtStreamExecutorLoadedExecutable::Execute") == 0;
			gpu_module += strcmp(ev.name, "jit_dot:XLA GPU module") == 0;
		}
	}
	assert_int_equal(exec, 42);
	assert_int_equal(gpu_module, 18);
	assert_int_equal(xpf_capture_validate(c, &err), XPF_OK);
	xpf_capture_free(c);
}

static void test_tf(void **state)
{
	xpf_capture *c = open_or_skip("captures/tf-v100-multiworker.xplane.pb");
	xpf_error err = { 0 };
	assert_int_equal(xpf_capture_nmodules(c), 0);
	struct alloc_fig f[] = {
		{ "GPU_4_bfc", 761, 208, 0 },
		{ "GPU_6_bfc", 761, 208, 6210111488ULL },
		{ "GPU_1_bfc", 19, 0, 0 },
		{ "gpu_host_bfc", 318, 218, 0 },
	};
	check_allocs(c, f, 4);
	device_memory(c, "/device:GPU:0", 16945512448ULL, NULL);
	assert_int_equal(xpf_capture_validate(c, &err), XPF_OK);
	xpf_capture_free(c);
}

static void test_tpu(void **state)
{
	xpf_capture *c = open_or_skip("captures/tpu-v6e-inference.xplane.pb");
	xpf_error err = { 0 };
	assert_int_equal(xpf_capture_nmodules(c), 4);
	int found = 0;
	for (size_t m = 0; m < xpf_capture_nmodules(c); m++) {
		const xpf_module_ref *r = xpf_capture_module(c, m);
		if (strcmp(r->name, "jit_f(12190760917235803885)") == 0) {
			found = 1;
			/* 64-bit program id from the program_id stat, not hlo_module.id (12). */
			assert_true(r->program_id == 12190760917235803885ULL);
			xpf_hlo *hlo;
			assert_int_equal(xpf_capture_module_hlo(c, m, &hlo, &err), XPF_OK);
			const Xla__HloProto *h = xpf_hlo_head(hlo);
			assert_int_equal(h->hlo_module->id, 12);
			uint64_t c0 = 0, c5 = 0;
			for (size_t a = 0; a < h->buffer_assignment->n_buffer_allocations; a++) {
				const Xla__BufferAllocationProto *ba =
					h->buffer_assignment->buffer_allocations[a];
				if (ba->color == 0)
					c0 += (uint64_t)ba->size;
				if (ba->color == 5)
					c5 += (uint64_t)ba->size;
			}
			assert_int_equal(c0, 21474934816ULL);
			assert_int_equal(c5, 16106127360ULL);
			xpf_hlo_free(hlo);
		}
	}
	assert_true(found);
	int total_a = 0, total_d = 0;
	uint64_t maxpk = 0;
	for (int d = 0; d < 4; d++) {
		char nm[16];
		int a, dd;
		uint64_t pk;
		snprintf(nm, sizeof nm, "tpu:%d", d);
		count(c, nm, &a, &dd, &pk);
		total_a += a;
		total_d += dd;
		if (pk > maxpk)
			maxpk = pk;
	}
	assert_int_equal(total_a, 453);
	assert_int_equal(total_d, 453);
	assert_int_equal(maxpk, 16106341504ULL);
	assert_int_equal(xpf_capture_validate(c, &err), XPF_OK);
	xpf_capture_free(c);
}

static void test_conv_run(void **state)
{
	const char *p = xpf_t_shared("captures/mi300x-conv-run");
	if (p == NULL)
		skip();
	xpf_input *in;
	xpf_error err = { 0 };
	assert_int_equal(xpf_input_open(p, NULL, &in, &err), XPF_OK);
	assert_int_equal(in->kind, XPF_INPUT_RUNDIR);
	assert_int_equal(in->nhosts, 1);
	xpf_capture *c = in->hosts[0].cap;
	assert_int_equal(xpf_capture_nmodules(c), 8);
	size_t na;
	assert_int_equal(module_total(c, "jit_forward_3d_conv(15)", &na), 1158144128ULL);
	assert_int_equal(na, 4);
	int all_a = 0, all_d = 0;
	for (int d = 0; d < 8; d++) {
		char nm[16];
		int a, dd;
		uint64_t pk;
		snprintf(nm, sizeof nm, "GPU_%d_bfc", d);
		count(c, nm, &a, &dd, &pk);
		all_a += a;
		all_d += dd;
		assert_int_equal(pk, d == 0 ? 1737217024ULL : 1739215104ULL);
	}
	assert_int_equal(all_a, 230);
	assert_int_equal(all_d, 230);
	xpf_input_free(in);

	/* The sidecar is a bare HloProto of the same module. */
	p = xpf_t_shared("captures/mi300x-conv-run/jit_forward_3d_conv_15_.hlo_proto.pb");
	assert_int_equal(xpf_input_open(p, NULL, &in, &err), XPF_OK);
	assert_int_equal(in->kind, XPF_INPUT_HLO);
	assert_int_equal(module_total(in->hosts[0].cap, "jit_forward_3d_conv(15)", NULL),
			 1158144128ULL);
	xpf_input_free(in);
}

/* The one stat reader with a set of wanted stats against the same reader
 * without one, filtered by id, on every event of a real capture, read
 * through a window and through the mapping: the same stats, in order,
 * with the same kinds and values; once with every stat id wanted, once
 * with every other one. */
static void stat_same(const xpf_stat *a, const xpf_stat *b)
{
	assert_int_equal(a->metadata_id, b->metadata_id);
	assert_string_equal(a->name, b->name);
	assert_int_equal(a->kind, b->kind);
	assert_int_equal(a->u, b->u);
	assert_int_equal(a->i, b->i);
	assert_memory_equal(&a->d, &b->d, sizeof a->d);
	assert_int_equal(a->s.n, b->s.n);
	if (a->s.n)
		assert_memory_equal(a->s.p, b->s.p, a->s.n);
}

/* Event ev's wanted stats both ways: how many. */
static size_t check_wanted(const xpf_plane *p, const xpf_event *ev, const xpf_stat_want *want)
{
	xpf_stat_iter all, some;
	xpf_stat a, b;
	xpf_error err = { 0 };
	size_t n = 0;
	int rc;
	xpf_stats_of_event(p, ev, NULL, &all);
	xpf_stats_of_event(p, ev, want, &some);
	while ((rc = xpf_stats_next(&all, &a, &err)) == 1) {
		if (xpf_stat_want_tag(want, a.metadata_id) < 0)
			continue;
		assert_int_equal(xpf_stats_next(&some, &b, &err), 1);
		stat_same(&a, &b);
		n++;
	}
	assert_int_equal(rc, 0);
	assert_int_equal(xpf_stats_next(&some, &b, &err), 0);
	return n;
}

static void check_want(const char *rel, size_t *nstats)
{
	xpf_capture *c = open_or_skip(rel);
	xpf_error err = { 0 };
	xpf_window w = { 0 };
	for (size_t pi = 0; pi < xpf_capture_nplanes(c); pi++) {
		const xpf_plane *p;
		assert_int_equal(xpf_capture_plane(c, pi, &p, &err), XPF_OK);
		for (size_t every = 1; every <= 2; every++) {
			xpf_stat_want want = { 0 };
			for (size_t k = 0; k < p->n_stat_md && want.n < XPF_STAT_WANT_MAX; k += every)
				xpf_stat_want_add(&want, p, p->stat_md[k].name, (unsigned)k % 200);
			for (size_t l = 0; l < p->nlines; l++) {
				xpf_event_iter it, mit;
				xpf_event ev, mev;
				int rc;
				xpf_events_begin(p, l, &w, &it);
				xpf_events_begin(p, l, NULL, &mit);
				while ((rc = xpf_events_next(&it, &ev, &err)) == 1) {
					assert_int_equal(xpf_events_next(&mit, &mev, &err), 1);
					assert_int_equal(ev.offset, mev.offset);
					assert_int_equal(ev.md, mev.md);
					assert_int_equal(ev.offset_ps, mev.offset_ps);
					assert_int_equal(ev.duration_ps, mev.duration_ps);
					assert_memory_equal(ev.msg, mev.msg, ev.msg_len);
					*nstats += check_wanted(p, &ev, &want);
				}
				assert_int_equal(rc, 0);
				assert_int_equal(xpf_events_next(&mit, &mev, &err), 0);
			}
		}
	}
	xpf_window_release(&w);
	xpf_capture_free(c);
}

static void test_want(void **state)
{
	(void)state;
	size_t nstats = 0;
	check_want("captures/mi300x-jax08-gemm.xplane.pb", &nstats);
	check_want("captures/tpu-v6e-inference.xplane.pb", &nstats);
	fprintf(stderr, "want: %zu stats read both ways\n", nstats);
	/* the two captures' wanted stats, both passes */
	assert_int_equal(nstats, 59844);
}

static void test_bare_hlo(void **state)
{
	const char *p = xpf_t_shared("captures/hlo/h100-maxtext-jit_train_step.hlo.pb");
	if (p == NULL)
		skip();
	xpf_input *in;
	xpf_error err = { 0 };
	assert_int_equal(xpf_input_open(p, NULL, &in, &err), XPF_OK);
	xpf_capture *c = in->hosts[0].cap;
	assert_int_equal(xpf_capture_nmodules(c), 1);
	xpf_hlo *hlo;
	assert_int_equal(xpf_capture_module_hlo(c, 0, &hlo, &err), XPF_OK);
	const Xla__HloProto *h = xpf_hlo_head(hlo);
	assert_int_equal(h->buffer_assignment->n_buffer_allocations, 202);
	assert_int_equal(h->buffer_assignment->n_logical_buffers, 1732);
	assert_int_equal(h->buffer_assignment->n_heap_simulator_traces, 1);
	/* the head holds no computation: each is unpacked when asked */
	assert_int_equal(h->hlo_module->n_computations, 0);
	assert_true(xpf_hlo_ncomputations(hlo) > 0);
	const Xla__HloComputationProto *cp;
	assert_int_equal(xpf_hlo_computation(hlo, 0, &cp, &err), XPF_OK);
	assert_true(cp->n_instructions > 0);
	assert_int_equal(xpf_hlo_check(hlo, &err), XPF_OK);
	xpf_hlo_free(hlo);
	xpf_input_free(in);
}

static void expect_refused(const char *rel, int code, const char *needle)
{
	const char *p = xpf_t_shared(rel);
	if (p == NULL)
		skip();
	xpf_input *in = NULL;
	xpf_error err = { 0 };
	assert_int_equal(xpf_input_open(p, NULL, &in, &err), code);
	assert_null(in);
	assert_non_null(strstr(err.msg, needle));
	assert_null(strchr(err.msg, '\n'));
}

static void test_bad_shared(void **state)
{
	expect_refused("captures/bad/op-stats-not-xspace.pb", XPF_EMALFORMED, "not a capture");
	expect_refused("captures/bad/utf8-mangled.xplane.pb", XPF_EMALFORMED, "past end of file");
}

/* ---- hand-made broken inputs ---------------------------------------- */

struct bad_case {
	const char *what;
	const uint8_t *data;
	size_t len;
	const char *needle;
	int late; /* refused only when decoding everything (validate) */
};

static const uint8_t plane_ok_hdr[] = { 0x0a, 0x0c, 0x12, 0x09, '/', 'h', 'o',
					's',  't',  ':',  'C',  'P', 'U' };
static const uint8_t b_random[] = { 0xde, 0xad, 0xbe, 0xef, 0x00, 0x13, 0x37 };
static const uint8_t b_trunc_varint[] = { 0x0a, 0xff, 0xff };
static const uint8_t b_len_past[] = { 0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x00 };
static const uint8_t b_wiretype[] = { 0x0f, 0x00 };
static const uint8_t b_group[] = { 0x0b, 0x0c };
static const uint8_t b_tag0[] = { 0x00, 0x00 };
static const uint8_t b_unnamed[] = { 0x0a, 0x02, 0x08, 0x01 };
static const uint8_t b_unknown_plane[] = { 0x0a, 0x05, 0x12, 0x03, 'a', 'b', 'c' };
static const uint8_t b_bad_utf8_name[] = { 0x0a, 0x04, 0x12, 0x02, 0xc3, 0x28 };
static const uint8_t b_plane_len_past[] = { 0x0a, 0x05, 0x12, 0x09, '/', 'h', 'o' };
static const uint8_t b_overlong_varint[] = { 0x08, 0xff, 0xff, 0xff, 0xff, 0xff,
					     0xff, 0xff, 0xff, 0xff, 0x7f };
/* /host:CPU plane with one line holding one event whose metadata id 7 is
 * not defined: a dangling id, found when events are read. */
static const uint8_t b_dangling[] = {
	0x0a, 0x13, 0x12, 0x09, '/',  'h',  'o',  's',  't',  ':',  'C',
	'P',  'U',  0x1a, 0x06, 0x22, 0x04, 0x08, 0x07, 0x10, 0x01,
};
/* A line at the largest time but one, and an event 10 ns after it: time
 * out of range, found when events are read. */
static const uint8_t b_time[] = {
	0x0a, 0x29, 0x12, 0x09, '/',  'h',  'o',  's',  't',  ':',  'C',  'P',  'U',  0x1a, 0x11,
	0x18, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x22, 0x05, 0x08, 0x01, 0x10,
	0x90, 0x4e, 0x22, 0x09, 0x08, 0x01, 0x12, 0x05, 0x08, 0x01, 0x12, 0x01, 'x',
};
/* Duplicate stat metadata ids. */
static const uint8_t b_dup[] = {
	0x0a, 0x1a, 0x12, 0x09, '/',  'h',  'o',  's', 't',  ':',  'C',  'P',  'U',  0x2a,
	0x07, 0x08, 0x01, 0x12, 0x03, 0x12, 0x01, 'a', 0x2a, 0x04, 0x08, 0x01, 0x12, 0x00,
};

static void test_bad_handmade(void **state)
{
	static const struct bad_case cases[] = {
		{ "empty", (const uint8_t *)"", 0, "empty file", 0 },
		{ "random bytes", b_random, sizeof b_random, "byte", 0 },
		{ "truncated varint", b_trunc_varint, sizeof b_trunc_varint, "varint", 0 },
		{ "length past end", b_len_past, sizeof b_len_past, "past end of file", 0 },
		{ "wrong wire type", b_wiretype, sizeof b_wiretype, "wire type", 0 },
		{ "group wire type", b_group, sizeof b_group, "wire type", 0 },
		{ "field number 0", b_tag0, sizeof b_tag0, "invalid field number (0,", 0 },
		{ "unnamed plane", b_unnamed, sizeof b_unnamed, "none named", 0 },
		{ "unknown plane", b_unknown_plane, sizeof b_unknown_plane,
		  "no /host: or /device: plane", 0 },
		{ "invalid UTF-8 name", b_bad_utf8_name, sizeof b_bad_utf8_name, "UTF-8", 0 },
		{ "plane length past end", b_plane_len_past, sizeof b_plane_len_past, "past end", 0 },
		{ "over-long varint", b_overlong_varint, sizeof b_overlong_varint, "varint", 0 },
		{ "dangling event metadata id", b_dangling, sizeof b_dangling,
		  "dangling event metadata id 7", 1 },
		{ "duplicate stat metadata id", b_dup, sizeof b_dup,
		  "duplicate stat metadata id 1 (byte 28)", 1 },
		{ "plane cut one byte short", plane_ok_hdr, sizeof plane_ok_hdr, "past end", 0 },
		{ "time out of range", b_time, sizeof b_time,
		  "line 0, event 0: time out of range (line base 9223372036854775806 ns, offset 10000 ps",
		  1 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		const struct bad_case *bc = &cases[i];
		xpf_capture *c = NULL;
		xpf_error err = { 0 };
		int rc = xpf_capture_open_mem(bc->data, bc->len, "bad.xplane.pb", &c, &err);
		if (bc->late) {
			if (rc != XPF_OK)
				fail_msg("%s: refused at open: %s", bc->what, err.msg);
			rc = xpf_capture_validate(c, &err);
			xpf_capture_free(c);
		}
		if (rc != XPF_EMALFORMED)
			fail_msg("%s: rc %d (%s)", bc->what, rc, err.msg);
		if (strstr(err.msg, bc->needle) == NULL || strchr(err.msg, '\n'))
			fail_msg("%s: message '%s' lacks '%s'", bc->what, err.msg, bc->needle);
		if (strncmp(err.msg, "bad.xplane.pb: ", 15) != 0)
			fail_msg("%s: message '%s' does not name the file", bc->what, err.msg);
	}
}

static void test_deep_shape(void **state)
{
	/* An HloProto whose instruction shape nests tuple_shapes 100000 deep:
	 * protobuf-c would recurse without limit; we refuse it first. */
	enum { DEPTH = 100000 };
	size_t cap = DEPTH * 8 + 64;
	uint8_t *buf = malloc(cap), *inner = malloc(cap);
	assert_non_null(buf);
	size_t n = 0;
	/* Build from the inside out: shape = {4: shape}. */
	for (int d = 0; d < DEPTH; d++) {
		size_t k = 0;
		inner[k++] = 0x22;
		size_t len = n;
		do {
			uint8_t b = len & 0x7f;
			len >>= 7;
			inner[k++] = b | (len ? 0x80 : 0);
		} while (len);
		memcpy(inner + k, buf, n);
		n += k;
		memcpy(buf, inner, n);
	}
	/* Wrap: instruction {3: shape} -> computation {2: instr} -> module {3: comp} -> HloProto {1: module} */
	static const uint8_t tags[] = { 0x1a, 0x12, 0x1a, 0x0a };
	for (size_t t = 0; t < sizeof tags; t++) {
		size_t k = 0;
		inner[k++] = tags[t];
		size_t len = n;
		do {
			uint8_t b = len & 0x7f;
			len >>= 7;
			inner[k++] = b | (len ? 0x80 : 0);
		} while (len);
		memcpy(inner + k, buf, n);
		n += k;
		memcpy(buf, inner, n);
	}
	char tmpl[] = "/tmp/xpf-deep-XXXXXX.hlo.pb";
	int fd = mkstemps(tmpl, 7);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, n), (ssize_t)n);
	close(fd);
	xpf_capture *c = NULL;
	xpf_error err = { 0 };
	assert_int_equal(xpf_capture_open_hlo(tmpl, &c, &err), XPF_EMALFORMED);
	assert_non_null(strstr(err.msg, "nested deeper"));
	unlink(tmpl);
	free(buf);
	free(inner);
}

/* ---- marks of a long line --------------------------------------------- */

struct pb {
	uint8_t *b;
	size_t n, cap;
};

static void pb_bytes(struct pb *o, const void *d, size_t n)
{
	if (o->n + n > o->cap) {
		o->cap = (o->n + n) * 2;
		o->b = realloc(o->b, o->cap);
		assert_non_null(o->b);
	}
	memcpy(o->b + o->n, d, n);
	o->n += n;
}

static void pb_varint(struct pb *o, uint64_t v)
{
	uint8_t t[10];
	size_t k = 0;
	do {
		t[k++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	pb_bytes(o, t, k);
}

static void pb_len(struct pb *o, unsigned num, const struct pb *m)
{
	pb_varint(o, num << 3 | 2);
	pb_varint(o, m->n);
	pb_bytes(o, m->b, m->n);
}

/* A capture of one /host:CPU plane whose one line holds n events of ~170
 * bytes (a stat of 150 bytes each: the line is more than a read window, so
 * that windows end inside events) and its timestamp after them. */
static struct pb long_line_capture(size_t n)
{
	struct pb line = { 0 }, plane = { 0 }, space = { 0 }, md = { 0 }, entry = { 0 };
	uint8_t blob[150];
	memset(blob, 'x', sizeof blob);
	for (size_t i = 0; i < n; i++) {
		struct pb ev = { 0 }, st = { 0 };
		pb_varint(&st, 1 << 3);
		pb_varint(&st, 1);
		pb_varint(&st, 6 << 3 | 2); /* bytes_value */
		pb_varint(&st, sizeof blob);
		pb_bytes(&st, blob, sizeof blob);
		pb_varint(&ev, 1 << 3);
		pb_varint(&ev, 1);
		pb_varint(&ev, 2 << 3);
		pb_varint(&ev, 1000 * i);
		pb_varint(&ev, 3 << 3);
		pb_varint(&ev, 500);
		pb_len(&ev, 4, &st);
		pb_len(&line, 4, &ev);
		free(ev.b);
		free(st.b);
	}
	pb_varint(&line, 3 << 3);
	pb_varint(&line, 1000);
	pb_varint(&md, 1 << 3);
	pb_varint(&md, 1);
	pb_varint(&md, 2 << 3 | 2);
	pb_varint(&md, 1);
	pb_bytes(&md, "e", 1);
	pb_varint(&entry, 1 << 3);
	pb_varint(&entry, 1);
	pb_len(&entry, 2, &md);
	pb_varint(&plane, 2 << 3 | 2);
	pb_varint(&plane, 9);
	pb_bytes(&plane, "/host:CPU", 9);
	pb_len(&plane, 4, &entry);
	pb_len(&plane, 3, &line);
	pb_len(&space, 1, &plane);
	free(line.b);
	free(plane.b);
	free(md.b);
	free(entry.b);
	return space;
}

/* Line 0's marks of c's plane 0, checked to be every XPF_LINE_MARK-th event;
 * then each part between two marks read from its mark alone (through a
 * window w or the mapping) gives the events of one read of the whole line. */
static void check_marks(xpf_capture *c, size_t n, xpf_window *w, xpf_event_pos *out, size_t *nout)
{
	const xpf_plane *p;
	xpf_error err = { 0 };
	assert_int_equal(xpf_capture_plane(c, 0, &p, &err), XPF_OK);
	assert_int_equal(p->lines[0].nevents, n);
	const xpf_event_pos *at;
	size_t nm = xpf_line_marks(p, 0, &at);
	assert_int_equal(nm, (n - 1) / XPF_LINE_MARK + 1);
	for (size_t k = 0; k < nm; k++) {
		assert_int_equal(at[k].index, k * XPF_LINE_MARK);
		out[k] = at[k];
		xpf_event_iter it;
		xpf_event ev;
		uint64_t end = k + 1 < nm ? at[k + 1].offset : UINT64_MAX;
		xpf_events_begin_at(p, 0, at[k], end, w, &it);
		size_t i = k * XPF_LINE_MARK;
		while (xpf_events_next(&it, &ev, &err) == 1) {
			assert_int_equal(ev.index, i);
			assert_int_equal(ev.offset_ps, 1000 * i);
			i++;
		}
		assert_int_equal(i, k + 1 < nm ? (k + 1) * XPF_LINE_MARK : n);
		xpf_event_pos after = xpf_events_pos(&it);
		if (k + 1 < nm)
			assert_int_equal(after.offset, at[k + 1].offset);
	}
	*nout = nm;
}

static void test_line_marks(void **state)
{
	(void)state;
	enum { N = 3 * 4096 + 17 };
	struct pb cap = long_line_capture(N);
	xpf_event_pos mem[8], file[8];
	size_t nmem, nfile;
	xpf_capture *c = NULL;
	xpf_error err = { 0 };
	assert_int_equal(xpf_capture_open_mem(cap.b, cap.n, "long.xplane.pb", &c, &err), XPF_OK);
	check_marks(c, N, NULL, mem, &nmem);
	xpf_capture_free(c);

	char tmpl[] = "/tmp/xpf-marks-XXXXXX.xplane.pb";
	int fd = mkstemps(tmpl, 10);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, cap.b, cap.n), (ssize_t)cap.n);
	close(fd);
	assert_int_equal(xpf_capture_open(tmpl, &c, &err), XPF_OK);
	xpf_window w = { 0 };
	check_marks(c, N, &w, file, &nfile);
	xpf_window_release(&w);
	xpf_capture_free(c);
	unlink(tmpl);
	/* the window's index and the mapping's mark the same bytes */
	assert_int_equal(nmem, nfile);
	for (size_t k = 0; k < nmem; k++)
		assert_int_equal(mem[k].offset, file[k].offset);
	free(cap.b);
}

/* ---- the quick HloProto reader against protobuf-c ------------------------ */

typedef struct wbuf {
	uint8_t b[1024];
	size_t n;
} wbuf;

static void w_var(wbuf *w, uint64_t v)
{
	while (v >= 0x80) {
		w->b[w->n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	w->b[w->n++] = (uint8_t)v;
}

static void w_tag(wbuf *w, unsigned num, unsigned wt) { w_var(w, (uint64_t)num << 3 | wt); }

static void w_int(wbuf *w, unsigned num, uint64_t v)
{
	w_tag(w, num, 0);
	w_var(w, v);
}

static void w_raw(wbuf *w, const void *p, size_t n)
{
	memcpy(w->b + w->n, p, n);
	w->n += n;
}

static void w_bytes(wbuf *w, unsigned num, const void *p, size_t n)
{
	w_tag(w, num, 2);
	w_var(w, n);
	w_raw(w, p, n);
}

static void w_msg(wbuf *w, unsigned num, const wbuf *m) { w_bytes(w, num, m->b, m->n); }

static void w_packed(wbuf *w, unsigned num, const uint64_t *v, size_t n)
{
	wbuf t = { .n = 0 };
	for (size_t i = 0; i < n; i++)
		w_var(&t, v[i]);
	w_msg(w, num, &t);
}

/* An instruction with what a real one can hold: packed and unpacked
 * repeated values mixed, an int32 given as a negative ten-byte varint and
 * one past 32 bits, a bool of 2, an enum value the subset does not name, a
 * NUL inside a string, empty bytes, a field given twice, and unknown fields
 * of every wire type (one of a three-byte tag). */
static void w_instruction(wbuf *w)
{
	wbuf in = { .n = 0 }, sh = { .n = 0 }, t = { .n = 0 }, lay = { .n = 0 }, md = { .n = 0 };
	w_bytes(&in, 1, "a\0b", 3);
	w_bytes(&in, 2, "fusion", 6);
	w_int(&sh, 2, 99);
	w_packed(&sh, 3, (const uint64_t[]){ 1, 300, (uint64_t)1 << 40 }, 3);
	w_int(&sh, 3, 7);
	w_int(&t, 2, 11);
	w_msg(&sh, 4, &t);
	w_packed(&sh, 6, (const uint64_t[]){ 0, 1, 2 }, 3);
	t.n = 0;
	w_packed(&t, 1, (const uint64_t[]){ 8, 128 }, 2);
	w_packed(&lay, 1, (const uint64_t[]){ 0, 1 }, 2);
	w_msg(&lay, 6, &t);
	w_msg(&sh, 5, &lay);
	w_msg(&in, 3, &sh);
	w_bytes(&md, 2, "jit(step)/dot", 13);
	w_int(&md, 4, (uint64_t)-5);
	w_int(&md, 15, ((uint64_t)1 << 33) + 3);
	w_msg(&in, 7, &md);
	w_int(&in, 35, (uint64_t)1 << 62);
	w_packed(&in, 36, (const uint64_t[]){ 1, 2 }, 2);
	w_int(&in, 36, 3);
	w_packed(&in, 36, (const uint64_t[]){ 4 }, 1);
	w_bytes(&in, 43, "", 0);
	w_int(&in, 99, 5);
	w_tag(&in, 100, 1);
	w_raw(&in, "12345678", 8);
	w_bytes(&in, 101, "xyz", 3);
	w_tag(&in, 102, 5);
	w_raw(&in, "1234", 4);
	w_int(&in, 5000, 1);
	w_bytes(&in, 1, "final", 5);
	w_msg(w, 2, &in);
}

static void w_computation(wbuf *c)
{
	wbuf ps = { .n = 0 }, r = { .n = 0 }, in = { .n = 0 };
	w_bytes(c, 1, "fused_computation", 17);
	w_instruction(c);
	w_bytes(&in, 1, "p", 1);
	w_msg(c, 2, &in);
	w_int(c, 5, 12);
	w_int(c, 7, 2);
	w_bytes(&ps, 3, "p0", 2);
	w_bytes(&ps, 3, "p1", 2);
	w_int(&r, 2, 11);
	w_msg(&ps, 2, &r);
	w_msg(c, 4, &ps);
}

static void test_pb_quick(void **state)
{
	(void)state;
	const ProtobufCMessageDescriptor *d = &xla__hlo_computation_proto__descriptor;
	wbuf c = { .n = 0 };
	w_computation(&c);
	assert_int_equal(xpf_pb_quick_check(d, c.b, c.n), 1);
	/* what protobuf-c makes of it (that the check compared something) */
	Xla__HloComputationProto *cp = xla__hlo_computation_proto__unpack(NULL, c.n, c.b);
	assert_non_null(cp);
	assert_int_equal(cp->n_instructions, 2);
	const Xla__HloInstructionProto *in = cp->instructions[0];
	assert_string_equal(in->name, "final");
	assert_int_equal(in->n_operand_ids, 4);
	assert_int_equal(in->operand_ids[3], 4);
	assert_int_equal(in->shape->n_dimensions, 4);
	assert_int_equal(in->shape->n_is_dynamic_dimension, 3);
	assert_int_equal(in->metadata->source_line, -5);
	assert_int_equal(in->metadata->stack_frame_id, 3);
	assert_int_equal(cp->program_shape->n_parameter_names, 2);
	xla__hlo_computation_proto__free_unpacked(cp, NULL);
	assert_int_equal(xpf_pb_quick_check(d, c.b, 0), 1);

	/* left to protobuf-c: a singular message given twice (merged), a
	 * group, a bool of another wire type, a varint's tenth byte over 1, a
	 * tag of five bytes, a payload cut short, shapes nested 70 deep */
	wbuf w = c;
	wbuf sh = { .n = 0 };
	w_int(&sh, 2, 11);
	wbuf in2 = { .n = 0 };
	w_msg(&in2, 3, &sh);
	w_msg(&in2, 3, &sh);
	w_msg(&w, 2, &in2);
	assert_int_equal(xpf_pb_quick_check(d, w.b, w.n), 0);
	w = c;
	w_tag(&w, 9, 3);
	w_tag(&w, 9, 4);
	assert_int_equal(xpf_pb_quick_check(d, w.b, w.n), 0);
	w = c;
	w_tag(&w, 7, 5);
	w_raw(&w, "\1\0\0\0", 4);
	assert_int_equal(xpf_pb_quick_check(d, w.b, w.n), 0);
	w = c;
	w_tag(&w, 5, 0);
	w_raw(&w, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 10);
	assert_int_equal(xpf_pb_quick_check(d, w.b, w.n), 0);
	w = c;
	w_raw(&w, "\xa8\x80\x80\x80\x00\x01", 6); /* field 5, varint 1 */
	assert_int_equal(xpf_pb_quick_check(d, w.b, w.n), 0);
	assert_int_equal(xpf_pb_quick_check(d, c.b, c.n - 1), 0);
	w.n = 0;
	w_int(&w, 2, 11);
	for (int k = 0; k < 70; k++) {
		wbuf o = { .n = 0 };
		w_msg(&o, 4, &w);
		w = o;
	}
	in2.n = 0;
	w_msg(&in2, 3, &w);
	w = c;
	w_msg(&w, 2, &in2);
	assert_int_equal(xpf_pb_quick_check(d, w.b, w.n), 0);
}

/* Every HloProto of the real captures (their modules' counts as
 * captures/README.md gives them; the TF capture carries none): the quick
 * reader answers, and protobuf-c gives the same. */
static void test_pb_quick_real(void **state)
{
	(void)state;
	static const struct {
		const char *file;
		size_t modules;
	} caps[] = {
		{ "captures/mi300x-jax08-attention.xplane.pb", 31 },
		{ "captures/mi300x-jax08-gemm.xplane.pb", 16 },
		{ "captures/tpu-v6e-inference.xplane.pb", 4 },
		{ "captures/tf-v100-multiworker.xplane.pb", 0 },
		{ "captures/mi300x-conv-run/chi-mi300x-013.ord.vultr.cpe.ice.amd.com.xplane.pb", 8 },
		{ "captures/hlo/h100-maxtext-jit_train_step.hlo.pb", 1 },
	};
	size_t checked = 0;
	for (size_t i = 0; i < sizeof caps / sizeof *caps; i++) {
		const char *p = xpf_t_shared(caps[i].file);
		xpf_input *in = NULL;
		xpf_error err = { 0 };
		if (p == NULL)
			continue;
		assert_int_equal(xpf_input_open(p, NULL, &in, &err), XPF_OK);
		xpf_capture *c = in->hosts[0].cap;
		size_t n = 0;
		for (size_t m = 0; m < xpf_capture_nmodules(c); m++) {
			const xpf_module_ref *ref = xpf_capture_module(c, m);
			if (!ref->has_hlo)
				continue;
			if (xpf_pb_quick_check(&xla__hlo_proto__descriptor, ref->hlo, ref->hlo_len) != 1)
				fail_msg("%s: module %s: the quick reader differs", caps[i].file, ref->name);
			n++;
		}
		assert_int_equal(n, caps[i].modules);
		checked += n;
		xpf_input_free(in);
	}
	if (checked == 0)
		skip();
	fprintf(stderr, "%zu HloProtos read alike\n", checked);
}

/* ---- the scope-range tree's plane ----------------------------------------- */

/* An XSpace of one plane named name whose stats are a process_id (stat
 * metadata id 1) and two scope edges (child id -> parent id, no metadata
 * for either), as the GPU tracer writes /host:__ScopeRangeCallStack__;
 * text: the second edge holds a string, not the parent's id. */
static void scope_capture(wbuf *out, const char *name, bool text)
{
	static const int64_t edges[2][2] = { { 3096224743817890, 3096224743817889 },
					     { 3096224743817889, 1407374883553702 } };
	wbuf pl = { .n = 0 }, md = { .n = 0 }, entry = { .n = 0 }, st = { .n = 0 };
	w_bytes(&pl, 2, name, strlen(name));
	w_int(&md, 1, 1);
	w_bytes(&md, 2, "process_id", 10);
	w_int(&entry, 1, 1);
	w_msg(&entry, 2, &md);
	w_msg(&pl, 5, &entry);
	w_int(&st, 1, 1);
	w_int(&st, 4, 5734);
	w_msg(&pl, 6, &st);
	for (int i = 0; i < 2; i++) {
		st.n = 0;
		w_int(&st, 1, (uint64_t)edges[i][0]);
		if (text && i == 1)
			w_bytes(&st, 5, "x", 1);
		else
			w_int(&st, 4, (uint64_t)edges[i][1]);
		w_msg(&pl, 6, &st);
	}
	out->n = 0;
	w_msg(out, 1, &pl);
}

/* Its stats read as edges, not as dangling ids; the same stats in another
 * plane, or an edge without a number, are still dangling. */
static void test_scope_tree(void **state)
{
	(void)state;
	static wbuf b;
	xpf_capture *c = NULL;
	xpf_error err = { 0 };
	scope_capture(&b, XPF_SCOPE_TREE_PLANE, false);
	if (xpf_capture_open_mem(b.b, b.n, "scope.xplane.pb", &c, &err) != XPF_OK ||
	    xpf_capture_validate(c, &err) != XPF_OK)
		fail_msg("%s", err.msg);
	const xpf_plane *p;
	assert_int_equal(xpf_capture_plane(c, 0, &p, &err), XPF_OK);
	xpf_stat_iter it;
	xpf_stat st;
	xpf_stats_of_plane(p, &it);
	assert_int_equal(xpf_stats_next(&it, &st, &err), 1);
	assert_string_equal(st.name, "process_id");
	assert_int_equal(xpf_stats_next(&it, &st, &err), 1);
	assert_string_equal(st.name, XPF_STAT_SCOPE_PARENT);
	assert_int_equal(st.metadata_id, 3096224743817890);
	assert_int_equal(st.i, 3096224743817889);
	assert_int_equal(xpf_stats_next(&it, &st, &err), 1);
	assert_int_equal(st.i, 1407374883553702);
	assert_int_equal(xpf_stats_next(&it, &st, &err), 0);
	xpf_capture_free(c);

	static const struct {
		const char *plane;
		bool text;
		const char *needle;
	} bad[] = {
		{ "/host:CPU", false, "plane 0 '/host:CPU', plane stats, stat 1: dangling stat metadata id 3096224743817890" },
		{ XPF_SCOPE_TREE_PLANE, true, "stat 2: dangling stat metadata id 3096224743817889" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		scope_capture(&b, bad[i].plane, bad[i].text);
		memset(&err, 0, sizeof err);
		assert_int_equal(xpf_capture_open_mem(b.b, b.n, "scope.xplane.pb", &c, &err), XPF_OK);
		assert_int_equal(xpf_capture_validate(c, &err), XPF_EMALFORMED);
		if (strstr(err.msg, bad[i].needle) == NULL)
			fail_msg("'%s' lacks '%s'", err.msg, bad[i].needle);
		xpf_capture_free(c);
	}
}

/* ---- gzip'd captures (SPEC §2) -------------------------------------------- */

static void copy_file(const char *from, const char *to)
{
	FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
	assert_non_null(in);
	assert_non_null(out);
	static char buf[1 << 16];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, in)) > 0)
		assert_int_equal(fwrite(buf, 1, n, out), n);
	fclose(in);
	assert_int_equal(fclose(out), 0);
}

static const char *bad_case(const char *name)
{
	static char p[4096];
	const char *src = getenv("XPF_SOURCE");
	snprintf(p, sizeof p, "%s/tests/bad/cases/%s", src ? src : "..", name);
	return p;
}

/* A .gz reads as the file it decompresses to (its size, its name without
 * .gz), and what is watched for changes is the .gz itself. */
static void test_gzip(void **state)
{
	(void)state;
	char dir[] = "/tmp/xpf-gz.XXXXXX", gzp[4200];
	assert_non_null(mkdtemp(dir));
	snprintf(gzp, sizeof gzp, "%s/h.xplane.pb.gz", dir);
	copy_file(bad_case("gz-ok-base.xplane.pb.gz"), gzp);
	xpf_capture *plain = NULL, *c = NULL;
	xpf_error err = { 0 };
	if (xpf_capture_open(bad_case("ok-base.xplane.pb"), &plain, &err) != XPF_OK ||
	    xpf_capture_open(gzp, &c, &err) != XPF_OK || xpf_capture_validate(c, &err) != XPF_OK)
		fail_msg("%s", err.msg);
	assert_string_equal(xpf_capture_label(c), "h.xplane.pb");
	assert_int_equal(xpf_capture_size(c), xpf_capture_size(plain));
	assert_int_equal(xpf_capture_nplanes(c), xpf_capture_nplanes(plain));
	assert_int_equal(xpf_capture_nmodules(c), xpf_capture_nmodules(plain));
	assert_false(xpf_capture_changed(c));
	FILE *f = fopen(gzp, "ab"); /* the .gz changes: its copy cannot */
	assert_non_null(f);
	fputc(0, f);
	fclose(f);
	assert_true(xpf_capture_changed(c));
	xpf_capture_free(c);
	xpf_capture_free(plain);
	unlink(gzp);
	rmdir(dir);
}

/* Run directories find <host>.xplane.pb.gz; a host kept both ways is one
 * host; a .hlo.pb.gz is a bare HloProto; names lose their suffixes. */
static void test_gzip_inputs(void **state)
{
	(void)state;
	char dir[] = "/tmp/xpf-gzrun.XXXXXX", p[3][4200];
	assert_non_null(mkdtemp(dir));
	snprintf(p[0], sizeof p[0], "%s/a.xplane.pb.gz", dir);
	snprintf(p[1], sizeof p[1], "%s/a.xplane.pb", dir);
	snprintf(p[2], sizeof p[2], "%s/b.xplane.pb.gz", dir);
	copy_file(bad_case("gz-ok-base.xplane.pb.gz"), p[0]);
	copy_file(bad_case("ok-base.xplane.pb"), p[1]);
	copy_file(bad_case("gz-ok-base.xplane.pb.gz"), p[2]);
	xpf_input *in = NULL;
	xpf_error err = { 0 };
	if (xpf_input_open(dir, NULL, &in, &err) != XPF_OK)
		fail_msg("%s", err.msg);
	assert_int_equal(in->nhosts, 2);
	assert_string_equal(in->hosts[0].name, "a");
	assert_string_equal(in->hosts[0].path, p[1]); /* the plain one */
	assert_string_equal(in->hosts[1].name, "b");
	assert_string_equal(xpf_capture_label(in->hosts[1].cap), "b.xplane.pb");
	xpf_input_free(in);
	if (xpf_input_open(bad_case("gz-ok-hlo.hlo.pb.gz"), NULL, &in, &err) != XPF_OK)
		fail_msg("%s", err.msg);
	assert_int_equal(in->kind, XPF_INPUT_HLO);
	assert_string_equal(in->hosts[0].name, "gz-ok-hlo");
	xpf_input_free(in);
	static const char *const stems[][2] = {
		{ "x/run.xplane.pb.gz", "run" }, { "run.xplane.pb", "run" },
		{ "m.hlo_proto.pb.gz", "m" },    { "m.hlo.pb.gz", "m" },
		{ "c.gz", "c" },                 { ".gz", ".gz" },
	};
	for (size_t i = 0; i < sizeof stems / sizeof *stems; i++) {
		char *s = xpf_input_stem(stems[i][0]);
		assert_string_equal(s, stems[i][1]);
		free(s);
	}
	for (int i = 0; i < 3; i++)
		unlink(p[i]);
	rmdir(dir);
}

/* SPEC §6 (issue 38): a capture that shrinks under its mapping is caught
 * whichever of many mapped captures it is, not only the first 64 (a run
 * directory of 100 hosts whose 65th shrank killed the daemon with SIGBUS);
 * slots freed with their captures serve new ones. */
static void shrink_one(xpf_capture *c, const char *path)
{
	xpf_error err = { 0 };
	assert_int_equal(xpf_capture_shrunk(c), 0);
	assert_int_equal(truncate(path, 0), 0);
	(void)xpf_capture_validate(c, &err); /* reads every byte: zeros now */
	assert_true(xpf_capture_shrunk(c) > 0);
}

static void test_shrink_many(void **state)
{
	(void)state;
	enum { N = 100 };
	const char *src = getenv("XPF_SOURCE");
	char base[4096], dir[] = "/tmp/xpf-shrink.XXXXXX", path[N + 10][4200];
	snprintf(base, sizeof base, "%s/tests/bad/cases/ok-base.xplane.pb", src ? src : "..");
	FILE *f = fopen(base, "rb");
	assert_non_null(f);
	static char bytes[1 << 16];
	size_t n = fread(bytes, 1, sizeof bytes, f);
	fclose(f);
	assert_true(n > 0 && n < sizeof bytes);
	assert_non_null(mkdtemp(dir));
	xpf_capture *c[N + 10];
	for (int i = 0; i < N + 10; i++) {
		xpf_error err = { 0 };
		snprintf(path[i], sizeof path[i], "%s/h%d.xplane.pb", dir, i);
		f = fopen(path[i], "wb");
		assert_non_null(f);
		assert_int_equal(fwrite(bytes, 1, n, f), n);
		assert_int_equal(fclose(f), 0);
		if (i < N && xpf_capture_open(path[i], &c[i], &err) != XPF_OK)
			fail_msg("%s", err.msg);
	}
	shrink_one(c[64], path[64]);
	shrink_one(c[N - 1], path[N - 1]);
	assert_int_equal(xpf_capture_shrunk(c[0]), 0);
	for (int i = 0; i < 10; i++) /* their slots free: taken by the next ten */
		xpf_capture_free(c[i]);
	for (int i = N; i < N + 10; i++) {
		xpf_error err = { 0 };
		if (xpf_capture_open(path[i], &c[i], &err) != XPF_OK)
			fail_msg("%s", err.msg);
	}
	shrink_one(c[N + 9], path[N + 9]);
	for (int i = 10; i < N + 10; i++)
		xpf_capture_free(c[i]);
	for (int i = 0; i < N + 10; i++)
		unlink(path[i]);
	rmdir(dir);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_handmade),
		cmocka_unit_test(test_deep_shape),
		cmocka_unit_test(test_line_marks),
		cmocka_unit_test(test_pb_quick),
		cmocka_unit_test(test_shrink_many),
		cmocka_unit_test(test_scope_tree),
		cmocka_unit_test(test_gzip),
		cmocka_unit_test(test_gzip_inputs),
	};
	const struct CMUnitTest real[] = {
		cmocka_unit_test(test_attention),  cmocka_unit_test(test_gemm),
		cmocka_unit_test(test_tf),         cmocka_unit_test(test_tpu),
		cmocka_unit_test(test_conv_run),   cmocka_unit_test(test_bare_hlo),
		cmocka_unit_test(test_bad_shared), cmocka_unit_test(test_want),
		cmocka_unit_test(test_pb_quick_real),
	};
	bool want_real;
	int rc = xpf_test_group(argc, argv, &want_real);
	if (rc >= 0)
		return rc;
	return want_real ? cmocka_run_group_tests_name("capture-real", real, NULL, NULL) :
			   cmocka_run_group_tests_name("capture", tests, NULL, NULL);
}
