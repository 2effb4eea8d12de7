/* The counter points of runtime/memory.trace.json past the budget
 * (xpf_trace_thinner, trace_json.h): under the budget every point is
 * written; over it at most the budget, each one a point that was pushed,
 * in time order, with the peak, the lowest point and the last point kept. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "analysis/trace_json.h"

/* Push pts through a thinner of the given budget; the points written. */
static size_t thin_all(const xpf_trace_point *pts, size_t n, size_t budget, xpf_trace_point *out)
{
	xpf_trace_thinner t;
	xpf_trace_thin_init(&t, n, pts[0].t_ns, pts[n - 1].t_ns, budget);
	size_t w = 0;
	for (size_t i = 0; i < n; i++)
		w += xpf_trace_thin_push(&t, pts[i], out + w);
	return w + xpf_trace_thin_end(&t, out + w);
}

/* A random walk of in-use bytes, one point every 1-10 ns, a single
 * highest and a single lowest point. */
static xpf_trace_point *walk(size_t n, size_t peak_at, size_t low_at)
{
	xpf_trace_point *p = malloc(n * sizeof *p);
	uint64_t bytes = 1u << 30, seed = 42;
	int64_t t = 1000;
	for (size_t i = 0; i < n; i++) {
		seed = seed * 6364136223846793005u + 1442695040888963407u;
		t += 1 + (int64_t)(seed >> 60) % 10;
		bytes += (seed >> 33) % 4096;
		bytes -= (seed >> 45) % 4096;
		p[i] = (xpf_trace_point){ t, bytes };
	}
	p[peak_at].bytes = 4u << 30;
	p[low_at].bytes = 1u << 20;
	return p;
}

static void test_under_budget_keeps_all(void **state)
{
	(void)state;
	xpf_trace_point *p = walk(1000, 10, 20), out[1000 + 3];
	assert_int_equal(thin_all(p, 1000, 1000, out), 1000);
	for (size_t i = 0; i < 1000; i++) {
		assert_int_equal(out[i].t_ns, p[i].t_ns);
		assert_int_equal(out[i].bytes, p[i].bytes);
	}
	free(p);
}

static void test_over_budget(void **state)
{
	(void)state;
	size_t n = 200000, budget = 3000;
	xpf_trace_point *p = walk(n, 123457, 777), *out = malloc((budget + 3) * sizeof *out);
	size_t w = thin_all(p, n, budget, out);
	assert_true(w <= budget);
	assert_true(w >= budget / 3); /* every interval has points in a dense walk */
	size_t j = 0;
	bool peak = false, low = false;
	for (size_t i = 0; i < w; i++) { /* each written point is a pushed one, in order */
		while (j < n && (p[j].t_ns != out[i].t_ns || p[j].bytes != out[i].bytes))
			j++;
		assert_true(j < n);
		peak |= j == 123457;
		low |= j == 777;
		j++;
	}
	assert_true(peak);
	assert_true(low);
	assert_int_equal(out[w - 1].t_ns, p[n - 1].t_ns); /* the level it ends at */
	assert_int_equal(out[w - 1].bytes, p[n - 1].bytes);
	free(p);
	free(out);
}

/* Points at one time (a burst of events in the same nanosecond) and a
 * budget below 3 still give the last point last. */
static void test_same_time(void **state)
{
	(void)state;
	xpf_trace_point p[5] = { { 7, 5 }, { 7, 9 }, { 7, 1 }, { 7, 4 }, { 7, 3 } }, out[8];
	size_t w = thin_all(p, 5, 1, out);
	assert_int_equal(w, 3);
	assert_int_equal(out[0].bytes, 9);
	assert_int_equal(out[1].bytes, 1);
	assert_int_equal(out[2].bytes, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_under_budget_keeps_all),
		cmocka_unit_test(test_over_budget),
		cmocka_unit_test(test_same_time),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
