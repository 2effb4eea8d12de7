/* The counter points of runtime/memory.trace.json past the budget
 * (xpf_trace_thinner, trace_json.h): under the budget every point is
 * written; over it at most the budget, each one a point that was pushed,
 * in time order, with the peak, the lowest point and the last point kept.
 * Its execution spans past theirs (xpf_trace_spans): merged, each
 * execution in one span. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "analysis/runtime/runtime.h"
#include "tree/render/trace_json.h"
#include "tree/report.h"
#include "test_util.h"

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

/* The execution spans past their budget (xpf_trace_spans, issue 38: 374k
 * executions made a 139 MB file): at most the budget (one a device when
 * there are more devices), every execution in exactly one span (their n
 * from n to last_n, counted in executions), each span from its first
 * execution's start to its latest end; under the budget one span an
 * execution, as executions.tsv. */
static void spans_of(const char *scenario, const char *scale, size_t max, size_t want_devices)
{
	char out[512], args[512];
	snprintf(out, sizeof out, "%s%s.xplane.pb", scenario, scale);
	for (char *c = out; *c; c++)
		*c = *c == ' ' ? '_' : *c;
	snprintf(args, sizeof args, "%s %s", scenario, scale);
	const char *path = xpf_t_build(out, args);
	if (path == NULL)
		skip();
	xpf_input *in;
	xpf_report *r;
	xpf_error err = { 0 };
	xpf_options opt = XPF_OPTIONS_INIT;
	const xpf_runtime *rt;
	assert_int_equal(xpf_input_open(path, NULL, &in, &err), XPF_OK);
	assert_int_equal(xpf_report_open(in, &opt, &r, &err), XPF_OK);
	xpf_host *h = xpf_report_host(r, 0);
	assert_int_equal(xpf_host_runtime(h, &rt, &err), XPF_OK);
	assert_true(rt->nexecutions > max);
	xpf_buf b = XPF_BUF_INIT;
	xpf_trace_spans(h, rt, max, &b);
	unsigned char *seen = calloc(rt->nexecutions + 1, 1);
	size_t spans = 0, covered = 0, ndev = 0;
	int devs[64];
	for (char *line = b.data, *nl; line && *line; line = nl + 1) {
		nl = strchr(line, '\n');
		assert_non_null(nl);
		*nl = '\0';
		if (nl > line && nl[-1] == ',')
			nl[-1] = '\0';
		json_error_t je;
		json_t *o = json_loads(line, 0, &je);
		assert_non_null(o);
		json_t *a = json_object_get(o, "args");
		size_t n0 = (size_t)json_integer_value(json_object_get(a, "n"));
		json_t *ln = json_object_get(a, "last_n"), *ex = json_object_get(a, "executions");
		size_t n1 = ln ? (size_t)json_integer_value(ln) : n0;
		size_t k = ex ? (size_t)json_integer_value(ex) : 1, inside = 0;
		double ts = json_real_value(json_object_get(o, "ts"));
		double end = ts + json_real_value(json_object_get(o, "dur"));
		int dev = (int)json_integer_value(json_object_get(a, "device"));
		for (size_t i = 0; i < rt->nexecutions; i++) {
			const xpf_rt_execution *x = &rt->executions[i];
			if (x->device != dev || x->n < n0 || x->n > n1)
				continue;
			assert_int_equal(seen[x->n], 0);
			seen[x->n] = 1;
			inside++;
			assert_true(xpf_rt_x_start_ns(x) >= ts * 1000 - 0.5);
			assert_true(xpf_rt_x_end_ns(x) <= end * 1000 + 0.5);
		}
		assert_int_equal(inside, k);
		bool known = false;
		for (size_t d = 0; d < ndev; d++)
			known |= devs[d] == dev;
		if (!known && ndev < 64)
			devs[ndev++] = dev;
		covered += k;
		spans++;
		json_decref(o);
	}
	assert_int_equal(covered, rt->nexecutions);
	assert_int_equal(ndev, want_devices);
	assert_true(spans <= (max > ndev ? max : ndev));
	assert_true(spans >= (max < ndev ? ndev : max / 2)); /* not merged past need */
	fprintf(stderr, "%s: %zu executions in %zu spans (at most %zu)\n", scenario,
		rt->nexecutions, spans, max);
	free(seen);
	xpf_buf_release(&b);
	xpf_report_free(r);
	xpf_input_free(in);
}

static void test_spans_merged(void **state)
{
	(void)state;
	spans_of("grads-kept", "--scale 20", 16, 1);
	spans_of("scan-fits", "", 4, 8); /* more devices than spans: one each */
	spans_of("scan-fits", "", 12, 8);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_under_budget_keeps_all),
		cmocka_unit_test(test_over_budget),
		cmocka_unit_test(test_same_time),
		cmocka_unit_test(test_spans_merged),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
