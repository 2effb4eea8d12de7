/* The SVG writer and the two pictures, on hand-made plans and runtimes:
 * escaping, number formatting, axis ticks, aggregation of huge inputs into a
 * small file, determinism.  With XPF_SVG_OUT=DIR set, the pictures are also
 * written there (tests/svg/test-svg.sh checks them with xmllint). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/plan/plan.h"
#include "tree/report.h"
#include "analysis/runtime/runtime.h"
#include "tree/render/svg.h"

#define SIZE_BOUND (96 * 1024)

static void save(const char *name, const xpf_buf *b)
{
	const char *dir = getenv("XPF_SVG_OUT");
	if (!dir || !*dir)
		return;
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(b->data, 1, b->len, f), b->len);
	assert_int_equal(fclose(f), 0);
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

static void test_escape(void **state)
{
	(void)state;
	xpf_buf b = XPF_BUF_INIT;
	xpf_svg_esc(&b, "a<b>&\"c'\td", 0);
	assert_string_equal(b.data, "a&lt;b&gt;&amp;&quot;c&apos; d");
	xpf_buf_reset(&b);
	xpf_svg_esc(&b, "x\x01y\xff\xc3(z\xe2\x82\xac", 0);
	assert_string_equal(b.data, "x\xEF\xBF\xBDy\xEF\xBF\xBD\xEF\xBF\xBD(z\xE2\x82\xAC");
	xpf_buf_reset(&b);
	xpf_svg_esc(&b, "abcdef", 4);
	assert_string_equal(b.data, "abc\xE2\x80\xA6");
	xpf_buf_reset(&b);
	xpf_svg_esc(&b, "abcd", 4);
	assert_string_equal(b.data, "abcd");
	xpf_buf_reset(&b);
	xpf_svg_esc(&b, NULL, 0);
	assert_int_equal(b.len, 0);
	/* a cut never splits a UTF-8 sequence */
	xpf_svg_esc(&b, "\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9", 3);
	assert_string_equal(b.data, "\xC3\xA9\xC3\xA9\xE2\x80\xA6");
	xpf_buf_release(&b);
}

static void test_numbers(void **state)
{
	(void)state;
	xpf_buf b = XPF_BUF_INIT;
	xpf_svg_num(&b, 12.0);
	xpf_buf_addc(&b, ' ');
	xpf_svg_num(&b, 12.46);
	xpf_buf_addc(&b, ' ');
	xpf_svg_num(&b, -3.14);
	xpf_buf_addc(&b, ' ');
	xpf_svg_num(&b, 0.04);
	xpf_buf_addc(&b, ' ');
	xpf_svg_num(&b, 1.0 / 0.0);
	assert_string_equal(b.data, "12 12.5 -3.1 0 0");
	xpf_buf_release(&b);

	char out[48];
	assert_string_equal(xpf_svg_human_ns(850, out), "850 ns");
	assert_string_equal(xpf_svg_human_ns(12500, out), "12.5 \xC2\xB5s");
	assert_string_equal(xpf_svg_human_ns(3200000, out), "3.20 ms");
	assert_string_equal(xpf_svg_human_ns(1234000000, out), "1.234 s");
}

static void test_ticks(void **state)
{
	(void)state;
	xpf_svg_ticks t;
	char lab[48];
	xpf_svg_ticks_make(&t, 3.41 * 1024 * 1024 * 1024, 8, XPF_SVG_BYTES);
	assert_string_equal(t.suffix, " GiB");
	assert_true(t.top >= 3.41 * 1024 * 1024 * 1024);
	assert_true(t.n >= 3 && t.n <= 12);
	xpf_svg_tick_label(&t, t.step, lab);
	assert_string_equal(lab, "0.5 GiB");
	xpf_svg_tick_label(&t, 0, lab);
	assert_string_equal(lab, "0");

	xpf_svg_ticks_make(&t, 600.0 * 1024 * 1024, 8, XPF_SVG_BYTES);
	assert_string_equal(t.suffix, " MiB");
	xpf_svg_tick_label(&t, 2 * t.step, lab);
	assert_string_equal(lab, "200 MiB");

	xpf_svg_ticks_make(&t, 34e6, 10, XPF_SVG_NS);
	assert_string_equal(t.suffix, " ms");
	xpf_svg_tick_label(&t, t.step, lab);
	assert_string_equal(lab, "5 ms");

	/* steps are integers: 3 steps give ticks 0 1 2 3 */
	xpf_svg_ticks_make(&t, 3, 10, XPF_SVG_COUNT);
	assert_true(t.step == 1);
	assert_int_equal(t.n, 4);
	xpf_svg_ticks_make(&t, 0, 10, XPF_SVG_BYTES);
	assert_true(t.top >= 1);
}

/* ---- a hand-made plan ----------------------------------------------- */

typedef struct fake_plan {
	xpf_plan p;
	xpf_plan_instr instrs[4];
	xpf_plan_buffer buffers[4];
	xpf_plan_alloc allocs[2];
	xpf_plan_peak peak[3];
	xpf_plan_step *steps;
	char **names;
} fake_plan;

/* A heap that ramps up (forward), holds, and ramps down (backward) over n
 * steps, with a 1 GiB parameter under it and a spike at 60% of the way. */
static void fake_plan_init(fake_plan *f, size_t n)
{
	memset(f, 0, sizeof *f);
	xpf_plan *p = &f->p;
	p->module = "jit_train_step(7) <&\"'>";
	p->has_assignment = true;
	p->simulated = true;
	const uint64_t G = 1ull << 30, M = 1ull << 20;
	f->instrs[0] = (xpf_plan_instr){ .name = "fusion.1", .opcode = "fusion", .op_name = "jit(f)/jvp(mlp)/dot",
					 .source = "model.py:12", .shape = "f32[1024,1024]", .dtype = "f32" };
	f->instrs[1] = (xpf_plan_instr){ .name = "fusion.2", .opcode = "fusion",
					 .op_name = "jit(f)/transpose(jvp(mlp))/dot", .source = "", .shape = "f32[8]",
					 .dtype = "f32" };
	f->instrs[2] = (xpf_plan_instr){ .name = "param.0", .opcode = "parameter", .op_name = "", .source = "",
					 .shape = "f32[256,1048576]", .dtype = "f32" };
	f->instrs[3] = (xpf_plan_instr){ .name = "custom-call.3", .opcode = "custom-call", .op_name = "", .source = "",
					 .shape = "u8[1048576]", .dtype = "u8" };
	f->allocs[0] = (xpf_plan_alloc){ .index = 0, .bytes = G, .kind = XPF_KIND_PARAMETER, .indefinite = true,
					 .is_parameter = true };
	f->allocs[1] = (xpf_plan_alloc){ .index = 1, .bytes = 4 * G, .kind = XPF_KIND_TEMP };
	size_t h = n / 2, spike = n * 6 / 10;
	f->buffers[0] = (xpf_plan_buffer){ .id = 0, .bytes = 2 * G, .instr = &f->instrs[0], .dtype = "f32",
					   .shape = "f32[1024,1024]", .alloc = 1, .start = 1, .end = (long)h };
	f->buffers[1] = (xpf_plan_buffer){ .id = 1, .bytes = G, .instr = &f->instrs[1], .dtype = "f32",
					   .shape = "f32[8]", .alloc = 1, .start = (long)h, .end = (long)n - 2 };
	f->buffers[2] = (xpf_plan_buffer){ .id = 2, .bytes = G, .instr = &f->instrs[2], .dtype = "f32",
					   .shape = "f32[256,1048576]", .alloc = 0, .start = -1, .end = -1 };
	f->buffers[3] = (xpf_plan_buffer){ .id = 3, .bytes = 512 * M, .instr = &f->instrs[3], .dtype = "u8",
					   .shape = "u8[1048576]", .alloc = 1, .start = (long)spike,
					   .end = (long)spike };
	p->buffers = f->buffers;
	p->nbuffers = 4;
	p->allocs = f->allocs;
	p->nallocs = 2;
	p->instrs = f->instrs;
	p->ninstrs = 4;
	f->steps = calloc(n, sizeof *f->steps);
	f->names = calloc(n, sizeof *f->names);
	assert_non_null(f->steps);
	assert_non_null(f->names);
	for (size_t s = 0; s < n; s++) {
		uint64_t b = G;
		if (s >= 1 && s <= h)
			b += 2 * G * s / h;
		if (s >= h && s <= n - 2)
			b += G * (n - 1 - s) / (n - h);
		if (s == spike)
			b += 512 * M;
		char name[64];
		snprintf(name, sizeof name, "%s.%zu", s % 2 ? "fusion" : "copy<&>", s);
		f->names[s] = strdup(name);
		f->steps[s] = (xpf_plan_step){ .instruction = f->names[s], .bytes = b, .unpadded_bytes = b };
	}
	size_t pk = h;
	if (f->steps[spike].bytes > f->steps[pk].bytes)
		pk = spike;
	p->steps = f->steps;
	p->nsteps = n;
	p->peak_position = (long)pk;
	p->peak_instruction = f->steps[pk].instruction;
	p->heap_peak_bytes = f->steps[pk].bytes;
	p->heap_peak_unpadded_bytes = f->steps[pk].bytes;
	p->indefinite_bytes = G;
	p->parameters_bytes = G;
	p->temp_bytes = 4 * G;
	p->need_bytes = 5 * G;
	f->peak[0] = (xpf_plan_peak){ .bytes = G, .kind = XPF_KIND_PARAMETER, .role = XPF_PLAN_ROLE_PARAMETER,
				      .buffer = &f->buffers[2], .alloc = &f->allocs[0] };
	f->peak[1] = (xpf_plan_peak){ .bytes = p->heap_peak_bytes - G, .kind = XPF_KIND_TEMP,
				      .role = XPF_PLAN_ROLE_FORWARD, .buffer = &f->buffers[0],
				      .alloc = &f->allocs[1] };
	p->peak = f->peak;
	p->npeak = 2;
	p->role_bytes[XPF_PLAN_ROLE_PARAMETER] = G;
	p->role_bytes[XPF_PLAN_ROLE_FORWARD] = p->heap_peak_bytes - G;
}

static void fake_plan_release(fake_plan *f)
{
	for (size_t s = 0; s < f->p.nsteps; s++)
		free(f->names[s]);
	free(f->names);
	free(f->steps);
}

static void check_svg(const xpf_buf *b)
{
	assert_non_null(b->data);
	assert_true(strncmp(b->data, "<?xml version=\"1.0\"", 19) == 0);
	assert_non_null(strstr(b->data, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
	assert_true(b->len > 8 && strcmp(b->data + b->len - 7, "</svg>\n") == 0);
	assert_int_equal(strlen(b->data), b->len);
	assert_true(b->len < SIZE_BOUND);
}

static void heap_of(size_t n, const char *file, size_t *len)
{
	fake_plan f;
	fake_plan_init(&f, n);
	xpf_svg_capacity cap = { 6ull << 30, "GPU_0_bfc capacity (measured)" };
	xpf_buf a = XPF_BUF_INIT, b = XPF_BUF_INIT;
	xpf_svg_heap(&f.p, &cap, &a);
	xpf_svg_heap(&f.p, &cap, &b);
	save(file, &a);
	check_svg(&a);
	assert_int_equal(a.len, b.len);
	assert_memory_equal(a.data, b.data, a.len);
	/* the peak, its bytes as an integer and human, the capacity, the legend */
	char want[128];
	snprintf(want, sizeof want, "heap peak: %llu bytes (",
		 (unsigned long long)f.p.heap_peak_bytes);
	assert_non_null(strstr(a.data, want));
	assert_non_null(strstr(a.data, "6442450944 bytes (6.00 GiB)"));
	assert_non_null(strstr(a.data, "jit_train_step(7) &lt;&amp;&quot;&apos;&gt;"));
	assert_null(strstr(a.data, "copy<&>"));
	assert_non_null(strstr(a.data, ">forward</text>"));
	assert_non_null(strstr(a.data, ">backward</text>"));
	/* aggregated: a handful of paths, at most ~100 hover bands */
	assert_true(count(a.data, "<path") <= 10);
	assert_true(count(a.data, "<rect") <= 130);
	*len = a.len;
	xpf_buf_release(&a);
	xpf_buf_release(&b);
	fake_plan_release(&f);
}

static void test_heap_small_and_huge(void **state)
{
	(void)state;
	size_t small, huge, tiny;
	heap_of(3, "heap-3.svg", &tiny);
	heap_of(100, "heap-100.svg", &small);
	heap_of(100000, "heap-100000.svg", &huge);
	assert_true(huge < SIZE_BOUND);
}

static void test_heap_without_assignment(void **state)
{
	(void)state;
	xpf_plan p;
	memset(&p, 0, sizeof p);
	p.module = "jit_f(1)";
	p.missing = "no buffer assignment in the HloProto";
	p.peak_position = -1;
	xpf_buf b = XPF_BUF_INIT;
	xpf_svg_heap(&p, NULL, &b);
	check_svg(&b);
	assert_non_null(strstr(b.data, "no buffer assignment in the HloProto"));
	save("heap-none.svg", &b);
	xpf_buf_release(&b);
}

/* ---- a hand-made runtime -------------------------------------------- */

static void test_timeline_huge(void **state)
{
	(void)state;
	const size_t nev = 400000, nex = 5000, nre = 300;
	const uint64_t G = 1ull << 30;
	xpf_rt_allocator al[3];
	memset(al, 0, sizeof al);
	al[0] = (xpf_rt_allocator){ .name = "xla_gpu_host_bfc", .device = -1, .capacity_bytes = 64 * G,
				    .peak_in_window_bytes = G / 2, .peak_event = -1 };
	al[1] = (xpf_rt_allocator){ .name = "GPU_1_bfc", .device = 1, .is_pool = true, .capacity_bytes = 40 * G,
				    .peak_event = -1 };
	al[2] = (xpf_rt_allocator){ .name = "GPU_0_bfc", .device = 0, .is_pool = true, .capacity_bytes = 40 * G,
				    .peak_event = -1 };
	xpf_rt_event *ev = calloc(nev, sizeof *ev);
	xpf_rt_execution *ex = calloc(nex, sizeof *ex);
	xpf_rt_retry *re = calloc(nre, sizeof *re);
	assert_non_null(ev);
	assert_non_null(ex);
	assert_non_null(re);
	const int64_t t_end = 60ll * 1000 * 1000 * 1000;
	uint64_t in_use[3] = { 0, 0, 0 };
	for (size_t i = 0; i < nev; i++) {
		int a = (int)(i % 3);
		ev[i].t_ps = (int64_t)(i * (uint64_t)t_end / nev) * 1000;
		bool alloc = (i / 3) % 4 != 3;
		uint64_t bytes = (uint64_t)(a + 1) * (1u << 20);
		if (alloc) {
			in_use[a] += bytes;
		} else {
			in_use[a] -= 2 * bytes;
			if (in_use[a] > 40 * G)
				in_use[a] = 0;
		}
		ev[i].kind = alloc ? XPF_RT_ALLOC : XPF_RT_DEALLOC;
		ev[i].site = (uint32_t)a; /* sites[a]: bytes */
		ev[i].in_use_after = in_use[a] % (30 * G);
		if (ev[i].in_use_after > al[a].peak_in_window_bytes) {
			al[a].peak_in_window_bytes = ev[i].in_use_after;
			al[a].peak_ns = xpf_rt_ev_ns(&ev[i]);
			al[a].peak_event = (long)i;
		}
		al[a].nevents++;
	}
	for (size_t i = 0; i < nex; i++) {
		ex[i].n = i + 1;
		ex[i].device = (int)(i % 2);
		ex[i].module = (long)(i % 3) - 1;
		ex[i].module_execution = i / 3 + 1;
		ex[i].start_ps = (int64_t)(i * (uint64_t)t_end / nex) * 1000;
		ex[i].end_ps = ex[i].start_ps + t_end / nex / 2 * 1000;
		ex[i].allocator = 2 - (int)(i % 2);
		ex[i].in_use_known = true;
		ex[i].in_use_at_start_bytes = (uint64_t)i * (1u << 20);
		ex[i].prev = i >= 3 ? (long)i - 3 : -1;
	}
	for (size_t i = 0; i < nre; i++) {
		re[i] = (xpf_rt_retry){ .time_ns = (int64_t)(i * (uint64_t)t_end / nre), .duration_ns = 1000000,
					.allocator = 2, .execution = -1 };
	}
	xpf_runtime rt;
	memset(&rt, 0, sizeof rt);
	rt.has_host_plane = rt.has_events = true;
	rt.allocators = al;
	rt.nallocators = 3;
	rt.events = ev;
	rt.nevents = nev;
	xpf_rt_site sites[3]; /* an allocator's events: (a + 1) MiB each */
	for (int a = 0; a < 3; a++)
		sites[a] = (xpf_rt_site){ .bytes = (uint64_t)(a + 1) << 20, .has_bytes = true,
					  .allocator = (int16_t)a };
	rt.sites = sites;
	rt.nsites = 3;
	rt.executions = ex;
	rt.nexecutions = nex;
	rt.retries = re;
	rt.nretries = nre;
	const char *names[] = { "jit_train_step(3)", "jit_eval<&>(5)" };
	xpf_buf a = XPF_BUF_INIT, b = XPF_BUF_INIT;
	xpf_svg_timeline(&rt, names, 2, &a);
	xpf_svg_timeline(&rt, names, 2, &b);
	save("timeline-huge.svg", &a);
	check_svg(&a);
	assert_int_equal(a.len, b.len);
	assert_memory_equal(a.data, b.data, a.len);
	assert_non_null(strstr(a.data, "jit_eval&lt;&amp;&gt;(5)"));
	assert_non_null(strstr(a.data, "AllocatorRetry"));
	assert_non_null(strstr(a.data, "42949672960 bytes (40.00 GiB)"));
	/* device pools before the host allocator in the legend */
	const char *g0 = strstr(a.data, ">GPU_0_bfc</text>");
	const char *g1 = strstr(a.data, ">GPU_1_bfc</text>");
	const char *host = strstr(a.data, ">xla_gpu_host_bfc</text>");
	assert_non_null(g0);
	assert_non_null(g1);
	assert_non_null(host);
	assert_true(g0 < g1 && g1 < host);
	xpf_buf_release(&a);
	xpf_buf_release(&b);

	/* a handful of events, one execution */
	rt.nevents = 30;
	rt.nexecutions = 1;
	ex[0].end_ps = ev[29].t_ps;
	rt.nretries = 1;
	re[0].time_ns = xpf_rt_ev_ns(&ev[10]);
	xpf_svg_timeline(&rt, names, 2, &a);
	check_svg(&a);
	save("timeline-small.svg", &a);
	xpf_buf_release(&a);

	/* no events at all */
	memset(&rt, 0, sizeof rt);
	rt.has_host_plane = true;
	xpf_svg_timeline(&rt, names, 2, &a);
	check_svg(&a);
	assert_non_null(strstr(a.data, "no allocator events"));
	save("timeline-none.svg", &a);
	xpf_buf_release(&a);
	free(ev);
	free(ex);
	free(re);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_ticks),
		cmocka_unit_test(test_heap_small_and_huge),
		cmocka_unit_test(test_heap_without_assignment),
		cmocka_unit_test(test_timeline_huge),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
