/* The hosts of one run directory (issue 26, SPEC §8): hosts.tsv has one row
 * per host with the figures of that host's own tree, and the cross-host
 * diagnosis has a host-skew finding exactly where a host's need or peak in
 * use differs from the median host's by >= 5% and >= 256 MiB.  Scenario
 * run directories are checked against their tests/scenarios/<name>.json
 * ("cross_host"); mixed and even run directories are assembled from
 * scenario captures and from ../shared/captures.  Each test skips, saying
 * so, when what it needs is absent. */
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

#include "tree/report.h"
#include "capture/input.h"
#include "test_util.h"

static const char header[] =
	"host\tfocus_module\tneed_bytes\tcapacity_bytes\tpeak_in_use_bytes\theadroom_bytes\tfindings\tallocator\n";
static const char *const cols[] = { "host", "focus_module", "need_bytes", "capacity_bytes", "peak_in_use_bytes",
				    "headroom_bytes", "findings", "allocator" };
#define NCOLS (sizeof cols / sizeof cols[0])

static json_t *cat_json(struct rep *p, const char *path)
{
	json_error_t je;
	json_t *j = json_loads(cat(p, path), 0, &je);
	if (j == NULL)
		fail_msg("%s: %s (line %d)", path, je.text, je.line);
	return j;
}

/* Field col of row (0-based, after the header) of a TSV, into out. */
static const char *field(const char *tsv, size_t row, size_t col, char *out, size_t n)
{
	const char *l = strchr(tsv, '\n');
	for (size_t r = 0; r < row && l; r++)
		l = strchr(l + 1, '\n');
	if (l == NULL || l[1] == '\0')
		fail_msg("hosts.tsv has no row %zu:\n%s", row + 1, tsv);
	const char *f = l + 1;
	for (size_t c = 0; c < col; c++) {
		f += strcspn(f, "\t\n");
		if (*f != '\t')
			fail_msg("hosts.tsv row %zu has no column %zu", row + 1, col + 1);
		f++;
	}
	size_t len = strcspn(f, "\t\n");
	snprintf(out, n, "%.*s", (int)len, f);
	return out;
}

static size_t rows(const char *tsv)
{
	size_t n = 0;
	for (const char *c = tsv; *c; c++)
		n += *c == '\n';
	return n - 1;
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *c = strstr(hay, needle); c; c = strstr(c + 1, needle))
		n++;
	return n;
}

/* Write scenario name to <tmp>/<out> (a file or a run directory). */
static void build(const char *name, const char *out, char *path, size_t n)
{
	char args[1100];
	snprintf(args, sizeof args, "'%s'", name);
	const char *p = xpf_t_build(out, args);
	assert_non_null(p);
	snprintf(path, n, "%s", p);
}

static json_t *scenario_json(const char *name)
{
	const char *src = getenv("XPF_SOURCE");
	char path[4096];
	json_error_t je;
	snprintf(path, sizeof path, "%s/tests/scenarios/%s.json", src ? src : ".", name);
	json_t *j = json_load_file(path, 0, &je);
	if (j == NULL)
		fail_msg("%s:%d: %s", path, je.line, je.text);
	return j;
}

/* The top-level host-skew findings of diagnosis.json (a new reference). */
static json_t *skews(struct rep *p)
{
	json_t *top = cat_json(p, "diagnosis.json"), *out = json_array(), *f;
	size_t i;
	json_array_foreach(json_object_get(top, "findings"), i, f)
		if (strcmp(json_string_value(json_object_get(f, "code")), "host-skew") == 0)
			json_array_append(out, f);
	json_decref(top);
	return out;
}

/* hosts.tsv against "cross_host.hosts_tsv", column by column. */
static void check_rows(struct rep *p, const char *name, json_t *want)
{
	const char *tsv = cat(p, "hosts.tsv");
	char got[512], exp[512];
	size_t i;
	json_t *row;
	assert_int_equal(strncmp(tsv, header, strlen(header)), 0);
	assert_int_equal(rows(tsv), json_array_size(want));
	json_array_foreach(want, i, row)
		for (size_t c = 0; c < NCOLS; c++) {
			json_t *v = json_object_get(row, cols[c]);
			if (json_is_integer(v))
				snprintf(exp, sizeof exp, "%lld", (long long)json_integer_value(v));
			else
				snprintf(exp, sizeof exp, "%s", json_string_value(v));
			field(tsv, i, c, got, sizeof got);
			if (strcmp(got, exp) != 0)
				fail_msg("%s hosts.tsv row %zu %s: %s, want %s", name, i + 1, cols[c], got, exp);
		}
	fprintf(stderr, "%s: hosts.tsv %zu rows as derived\n", name, json_array_size(want));
}

/* One expected host-skew: the finding's host, figures and text. */
static void check_skew(struct rep *p, const char *name, json_t *got, json_t *want)
{
	const char *host = json_string_value(json_object_get(want, "host"));
	const char *text = json_string_value(json_object_get(got, "text"));
	char line[512], bytes[64];
	const char *k;
	json_t *v;
	assert_string_equal(json_string_value(json_object_get(got, "host")), host);
	assert_string_equal(json_string_value(json_object_get(got, "median_host")),
			    json_string_value(json_object_get(want, "median_host")));
	assert_string_equal(json_string_value(json_object_get(got, "tag")),
			    json_string_value(json_object_get(want, "tag")));
	json_object_foreach(want, k, v)
		if (strstr(k, "_bytes") || strcmp(k, "difference_pct") == 0)
			if (!json_equal(json_object_get(json_object_get(got, "figures"), k), v))
				fail_msg("%s host-skew %s: figure %s differs", name, host, k);
	/* the sentence names the host first and the bytes exactly */
	snprintf(line, sizeof line, "] host-skew: %s: ", host);
	assert_non_null(strstr(cat(p, "diagnosis.txt"), line));
	snprintf(bytes, sizeof bytes, "(%lld bytes", (long long)json_integer_value(json_object_get(want, "difference_bytes")));
	assert_non_null(strstr(text, bytes));
	if (json_object_get(want, "origin_bytes")) {
		snprintf(bytes, sizeof bytes, "(%lld bytes) of ", (long long)json_integer_value(json_object_get(want, "origin_bytes")));
		assert_non_null(strstr(text, bytes));
		assert_non_null(strstr(text, json_string_value(json_object_get(want, "origin_shape"))));
	}
	fprintf(stderr, "%s: host-skew %s as derived\n", name, host);
}

/* Every multi-host scenario: its rows, and exactly its host-skews (none
 * unless "cross_host.host_skew" lists them). */
static void test_scenarios(void **state)
{
	char cmd[8192], line[1024], path[4096];
	size_t checked = 0;
	if (xpf_t_mkcapture() == NULL)
		skip();
	snprintf(cmd, sizeof cmd, "'%s' --list", xpf_t_mkcapture());
	FILE *ls = popen(cmd, "r");
	assert_non_null(ls);
	while (fgets(line, sizeof line, ls)) {
		line[strcspn(line, "\t\n")] = 0;
		json_t *sj = scenario_json(line);
		json_t *hosts = json_object_get(sj, "hosts"), *cross = json_object_get(sj, "cross_host");
		if (json_array_size(hosts) < 2) {
			json_decref(sj);
			continue;
		}
		struct rep p;
		build(line, line, path, sizeof path);
		assert_true(open_rep(&p, path, 0));
		const char *tsv = cat(&p, "hosts.tsv");
		assert_int_equal(rows(tsv), json_array_size(hosts));
		if (json_object_get(cross, "hosts_tsv"))
			check_rows(&p, line, json_object_get(cross, "hosts_tsv"));
		json_t *want = json_object_get(cross, "host_skew"), *got = skews(&p);
		assert_int_equal(json_array_size(got), json_array_size(want));
		assert_int_equal(count(cat(&p, "diagnosis.txt"), "] host-skew: "), json_array_size(want));
		for (size_t i = 0; i < json_array_size(want); i++)
			check_skew(&p, line, json_array_get(got, i), json_array_get(want, i));
		json_decref(got);
		close_rep(&p);
		json_decref(sj);
		checked++;
	}
	assert_int_equal(pclose(ls), 0);
	assert_true(checked >= 2); /* multi-host and multi-host-prefetch */
}

/* Three hosts of one program with one host's plan and runtime very
 * different: grads-kept, no-donation and attention-too-big.  Needs (their
 * scenario files): 826277996, 4169184124, 3991995124; the lower median is
 * attention-too-big's, so grads-kept's host is 3165717128 bytes below it
 * (79.3%), a need skew (tag read) naming both plans. */
static void test_need_skew(void **state)
{
	static const char *const names[3] = { "grads-kept", "no-donation", "attention-too-big" };
	char run[4096], path[4200], cmd[8800];
	long long need[3];
	if (xpf_t_mkcapture() == NULL)
		skip();
	snprintf(run, sizeof run, "%s/mixed", xpf_t_tmpdir());
	snprintf(cmd, sizeof cmd, "mkdir -p '%s'", run);
	assert_int_equal(system(cmd), 0);
	for (int i = 0; i < 3; i++) {
		char out[64];
		snprintf(out, sizeof out, "mixed/host%c.xplane.pb", 'A' + i);
		build(names[i], out, path, sizeof path);
		json_t *sj = scenario_json(names[i]);
		need[i] = json_integer_value(json_object_get(json_object_get(sj, "plan"), "need_bytes"));
		json_decref(sj);
	}
	struct rep p;
	assert_true(open_rep(&p, run, 0));
	const char *tsv = cat(&p, "hosts.tsv");
	char got[512], exp[64];
	assert_int_equal(rows(tsv), 3);
	for (size_t i = 0; i < 3; i++) {
		snprintf(exp, sizeof exp, "%lld", need[i]);
		assert_string_equal(field(tsv, i, 2, got, sizeof got), exp);
		/* headroom = capacity - need, negative when short */
		snprintf(exp, sizeof exp, "%lld", atoll(field(tsv, i, 3, got, sizeof got)) - need[i]);
		assert_string_equal(field(tsv, i, 5, got, sizeof got), exp);
	}
	json_t *sk = skews(&p), *f = json_array_get(sk, 0);
	assert_non_null(f);
	assert_string_equal(json_string_value(json_object_get(f, "host")), "hostA");
	assert_string_equal(json_string_value(json_object_get(f, "median_host")), "hostC");
	assert_string_equal(json_string_value(json_object_get(f, "tag")), "read");
	json_t *figs = json_object_get(f, "figures");
	assert_int_equal(json_integer_value(json_object_get(figs, "need_bytes")), need[0]);
	assert_int_equal(json_integer_value(json_object_get(figs, "median_need_bytes")), need[2]);
	assert_int_equal(json_integer_value(json_object_get(figs, "difference_bytes")), need[2] - need[0]);
	assert_string_equal(json_string_value(json_object_get(figs, "difference_pct")), "79.3");
	assert_non_null(strstr(json_string_value(json_object_get(f, "text")), "below the median host hostC"));
	assert_non_null(strstr(cat(&p, "diagnosis.txt"), "\n[read] host-skew: hostA: need "));
	assert_non_null(strstr(field(tsv, 0, 6, got, sizeof got), "host-skew"));
	/* no-donation's host is within 256 MiB of the median on both figures */
	for (size_t i = 0; i < json_array_size(sk); i++)
		assert_string_not_equal(json_string_value(json_object_get(json_array_get(sk, i), "host")), "hostB");
	json_decref(sk);
	close_rep(&p);
}

/* An even run: the real multi-device capture of ../shared/captures as two
 * hosts.  Rows alike, need as its README reads it, no host-skew. */
static void test_even_real(void **state)
{
	char run[4096], cmd[5 * 4096 + 128];
	const char *src =
		xpf_t_capture("mi300x-conv-run/chi-mi300x-013.ord.vultr.cpe.ice.amd.com.xplane.pb");
	if (src == NULL)
		skip();
	snprintf(run, sizeof run, "%s/even", xpf_t_tmpdir());
	/* links: the captures are third-party data, not to be copied */
	snprintf(cmd, sizeof cmd, "mkdir -p '%s' && ln -sf '%s' '%s/a.xplane.pb' && ln -sf '%s' '%s/b.xplane.pb'",
		 run, src, run, src, run);
	assert_int_equal(system(cmd), 0);
	struct rep p;
	assert_true(open_rep(&p, run, 0));
	const char *tsv = cat(&p, "hosts.tsv");
	char a[512], b[512];
	assert_int_equal(rows(tsv), 2);
	for (size_t c = 1; c < NCOLS; c++)
		assert_string_equal(field(tsv, 0, c, a, sizeof a), field(tsv, 1, c, b, sizeof b));
	assert_string_equal(field(tsv, 0, 2, a, sizeof a), "1158144128");
	assert_string_equal(field(tsv, 0, 6, a, sizeof a), "fits");
	/* the peak is the one the host's own allocators.tsv gives */
	char alloc[128], want[600];
	field(tsv, 0, 7, alloc, sizeof alloc);
	snprintf(want, sizeof want, "\n%s\t%s\t%s\t", alloc, field(tsv, 0, 3, a, sizeof a),
		 field(tsv, 0, 4, b, sizeof b));
	assert_non_null(strstr(cat(&p, "hosts/a/runtime/allocators.tsv"), want));
	json_t *sk = skews(&p);
	assert_int_equal(json_array_size(sk), 0);
	json_decref(sk);
	assert_null(strstr(cat(&p, "diagnosis.txt"), "host-skew"));
	close_rep(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scenarios),
		cmocka_unit_test(test_need_skew),
		cmocka_unit_test(test_even_real),
	};
	return cmocka_run_group_tests_name("hosts", tests, NULL, NULL);
}
