/* The report's safe directory names, and its cache of rendered files.
 * Names (src/analysis/report.c, SPEC §3): what
 * a capture's module names become, the fixed file beside them avoided, and
 * many modules of one name named in time linear in their number (the
 * earlier search rescanned every earlier name for every " (k)": 20,000
 * names took hours, past this test's limit). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/compare/compare.h"
#include "capture/input.h"
#include "tree/report.h"
#include "test_util.h"

static void free_names(char **out, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(out[i]);
	free(out);
}

static void test_renamed(void **state)
{
	(void)state;
	const char *in[] = { "a/b", ".", "..", "", "x\ty\n\x1b[31m\x7f", NULL, "jit_f(1)" };
	const char *want[] = { "a_b", "_dot_", "_dotdot_", "_empty_", "x_y__[31m_", "_empty_ (2)",
			       "jit_f(1)" };
	size_t n = sizeof in / sizeof *in;
	char **out = xpf_safe_names(in, n, NULL);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(out[i], want[i]);
	free_names(out, n);
}

static void test_collisions(void **state)
{
	(void)state;
	/* a name that is another's " (k)" already takes that k */
	const char *in[] = { "jit_f", "jit_f", "jit_f (3)", "jit_f", "jit_f (2)", "jit_f" };
	const char *want[] = { "jit_f", "jit_f (2)", "jit_f (3)", "jit_f (4)", "jit_f (2) (2)",
			       "jit_f (5)" };
	size_t n = sizeof in / sizeof *in;
	char **out = xpf_safe_names(in, n, NULL);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(out[i], want[i]);
	free_names(out, n);
}

static void test_reserved(void **state)
{
	(void)state;
	const char *const reserved[] = { "index.tsv", NULL };
	const char *in[] = { "index.tsv", "index.tsv", "index.tsv (2)", "index.tsv." };
	const char *want[] = { "index.tsv (2)", "index.tsv (3)", "index.tsv (2) (2)", "index.tsv." };
	size_t n = sizeof in / sizeof *in;
	char **out = xpf_safe_names(in, n, reserved);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(out[i], want[i]);
	free_names(out, n);
}

/* 255 bytes with a suffix: the base is cut, never the suffix. */
static void test_long(void **state)
{
	(void)state;
	char name[300];
	memset(name, 'a', 299);
	name[299] = '\0';
	const char *in[] = { name, name };
	char **out = xpf_safe_names(in, 2, NULL);
	assert_int_equal(strlen(out[0]), 255);
	assert_int_equal(strlen(out[1]), 255);
	assert_string_equal(out[1] + 251, " (2)");
	free_names(out, 2);
}

static void test_many_of_one_name(void **state)
{
	(void)state;
	enum { N = 20000 };
	const char **in = malloc(N * sizeof *in);
	for (size_t i = 0; i < N; i++)
		in[i] = "jit_step";
	char **out = xpf_safe_names(in, N, NULL);
	assert_string_equal(out[0], "jit_step");
	char want[64];
	for (size_t i = 1; i < N; i++) {
		snprintf(want, sizeof want, "jit_step (%zu)", i + 1);
		assert_string_equal(out[i], want);
	}
	free_names(out, N);
	free(in);
}

/* Every file under dir, depth first (populating directories as it goes). */
static size_t all_files(xpf_node *dir, xpf_node **out, size_t max)
{
	xpf_node **kids;
	size_t k, n = 0;
	xpf_error err = { 0 };
	assert_int_equal(xpf_node_children(dir, &kids, &k, &err), XPF_OK);
	for (size_t i = 0; i < k; i++) {
		if (kids[i]->type == XPF_NODE_DIR)
			n += all_files(kids[i], out + n, max - n);
		else if (kids[i]->type == XPF_NODE_FILE && n < max)
			out[n++] = kids[i];
	}
	return n;
}

/* xplane-mkcapture ARGS into the temporary folder as OUT, its path into
 * path; false (and a skip line) without the builder. */
static bool build_to(char *path, size_t n, const char *out, const char *args)
{
	const char *p = xpf_t_build(out, args);
	if (p == NULL)
		return false;
	snprintf(path, n, "%s", p);
	return true;
}

/* The report of the capture at path (base's the baseline where not NULL),
 * with the default options, as the mount opens it; its input into *in, to
 * be freed after the report. */
static xpf_report *open_report(const char *path, xpf_input *base, xpf_input **in)
{
	xpf_report *r;
	xpf_error err = { 0 };
	xpf_options opt = XPF_OPTIONS_INIT;
	assert_int_equal(xpf_input_open(path, NULL, in, &err), XPF_OK);
	assert_int_equal(xpf_report_open_compare(*in, base, &opt, &r, &err), XPF_OK);
	return r;
}

/* A report held open while its capture changes (SPEC §6, issue 38):
 * capture/planes.tsv made before the change (only the planes' heads, read
 * at open), runtime/events.tsv not (the runtime is not decoded before). */
struct held {
	xpf_input *in;
	xpf_report *r;
	xpf_node *planes, *events;
	char *before;     /* planes.tsv's bytes before the change */
	xpf_error change; /* what reading events.tsv after it said */
};

static void hold(struct held *h, const char *path)
{
	xpf_error err = { 0 };
	const char *data;
	size_t len;
	h->r = open_report(path, NULL, &h->in);
	assert_int_equal(xpf_report_resolve(h->r, "capture/planes.tsv", &h->planes, &err), XPF_OK);
	assert_int_equal(xpf_report_resolve(h->r, "runtime/events.tsv", &h->events, &err), XPF_OK);
	assert_int_equal(xpf_node_content(h->planes, &data, &len, &err), XPF_OK);
	h->before = strndup(data, len);
}

/* After the change: events.tsv gives EIO saying the capture changed, and
 * planes.tsv keeps its bytes. */
static void check_changed(struct held *h)
{
	xpf_error err = { 0 };
	const char *data;
	size_t len;
	h->change = (xpf_error){ 0 };
	assert_int_equal(xpf_node_content(h->events, &data, &len, &h->change), XPF_EIO);
	assert_non_null(strstr(h->change.msg, "changed while mounted"));
	assert_int_equal(xpf_node_content(h->planes, &data, &len, &err), XPF_OK);
	assert_int_equal(len, strlen(h->before));
	assert_memory_equal(data, h->before, len);
	free(h->before);
}

/* The report and its input (the report first: it reads the input). */
static void release(struct held *h)
{
	xpf_report_free(h->r);
	xpf_input_free(h->in);
}

/* SPEC §6: read through pins (as the mount reads), a report keeps no more
 * rendered bytes than its cache's limit once nobody holds them, and a file
 * dropped renders again the same bytes. */
static void test_cache_bounded(void **state)
{
	(void)state;
	char path[4200];
	if (!build_to(path, sizeof path, "cache.xplane.pb", "grads-kept"))
		skip();
	xpf_input *in;
	xpf_report *r = open_report(path, NULL, &in);
	xpf_error err = { 0 };
	const size_t limit = 32 << 10;
	xpf_report_set_cache_limit(r, limit);
	static xpf_node *files[4096];
	size_t n = all_files(xpf_report_root(r), files, 4096), total = 0;
	assert_true(n > 50);
	char **first = calloc(n, sizeof *first);
	size_t *flen = calloc(n, sizeof *flen);
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < n; i++) {
			const char *data;
			size_t len;
			assert_int_equal(xpf_node_pin(files[i], &data, &len, &err), XPF_OK);
			if (pass == 0) {
				first[i] = malloc(len + 1);
				memcpy(first[i], data, len);
				flen[i] = len;
				total += len;
			} else {
				assert_int_equal(len, flen[i]);
				assert_memory_equal(data, first[i], len);
			}
			xpf_node_unpin(files[i]);
			assert_true(xpf_report_cache_bytes(r) <= limit);
		}
	fprintf(stderr, "%zu files, %zu bytes read twice through a cache of %zu bytes\n", n, total, limit);
	assert_true(total > 2 * limit); /* so files were dropped, and made again */
	for (size_t i = 0; i < n; i++)
		free(first[i]);
	free(first);
	free(flen);
	xpf_report_free(r);
	xpf_input_free(in);
}

/* SPEC §6 (issue 38): a capture rewritten in place while mounted, its size
 * unchanged (no read faults past its end), is "the capture changed", not
 * "malformed": the files not made before give EIO saying so, errors.txt
 * says so, and the files made before keep their bytes. */
static void test_rewritten_in_place(void **state)
{
	(void)state;
	char path[4200];
	if (!build_to(path, sizeof path, "rewritten.xplane.pb", "grads-kept"))
		skip();
	struct held h;
	hold(&h, path);
	xpf_node *errors;
	xpf_error err = { 0 };
	assert_int_equal(xpf_report_resolve(h.r, "capture/errors.txt", &errors, &err), XPF_OK);

	/* every byte from the middle on another's, the size the same; the
	 * modification time set apart (a write in the same clock tick as the
	 * open would keep it) */
	FILE *f = fopen(path, "r+b");
	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	long size = ftell(f);
	assert_int_equal(fseek(f, size / 2, SEEK_SET), 0);
	for (long i = size / 2; i < size; i++)
		fputc(0xff, f);
	assert_int_equal(fclose(f), 0);
	struct timespec t[2] = { { 0, UTIME_OMIT }, { 1000000000, 0 } };
	assert_int_equal(utimensat(AT_FDCWD, path, t, 0), 0);

	check_changed(&h);
	assert_null(strstr(h.change.msg, "malformed"));
	const char *data;
	size_t len;
	assert_int_equal(xpf_node_content(errors, &data, &len, &err), XPF_OK);
	assert_non_null(strstr(data, "changed while mounted"));
	release(&h);
}

/* SPEC §6 (issue 38): a capture replaced while mounted (another file
 * renamed over its path) is "the capture changed" too: the files not made
 * before give EIO saying so rather than show the file that is gone, and
 * those made before keep their bytes. */
static void test_replaced(void **state)
{
	(void)state;
	char path[4200], other[4200];
	if (!build_to(path, sizeof path, "replaced.xplane.pb", "grads-kept"))
		skip();
	if (!build_to(other, sizeof other, "replaced-new.xplane.pb", "grads-kept"))
		skip();
	struct held h;
	hold(&h, path);
	/* the same bytes, even: only the file at the path is another */
	assert_int_equal(rename(other, path), 0);
	check_changed(&h);
	release(&h);
}

/* compare/ (issue 38): the comparison of a pair of hosts is made by the
 * first compare/ file read and kept by the host compared; every other file
 * of the pair reads the same one (each file matched the modules again, and
 * `ls -l compare/` made it five times). */
static void test_compare_once(void **state)
{
	(void)state;
	char a[4200], b[4200];
	if (!build_to(b, sizeof b, "once-b.xplane.pb", "eager --modules 20"))
		skip();
	if (!build_to(a, sizeof a, "once-a.xplane.pb", "grads-kept"))
		skip();
	xpf_input *in, *base;
	xpf_error err = { 0 };
	assert_int_equal(xpf_input_open(b, NULL, &base, &err), XPF_OK);
	xpf_report *r = open_report(a, base, &in);
	xpf_host *h = xpf_report_host(r, 0);
	assert_int_equal(xpf_lazy_state(&h->compare), XPF_LAZY_NOT_YET);
	static const char *const files[] = { "compare/modules.tsv", "compare/diagnosis.txt",
					     "compare/diagnosis.json", "compare/peak_buffers.tsv",
					     "compare/allocators.tsv" };
	const xpf_compare *first = NULL, *c;
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		xpf_node *n;
		const char *data;
		size_t len;
		assert_int_equal(xpf_report_resolve(r, files[i], &n, &err), XPF_OK);
		assert_non_null(n);
		assert_int_equal(xpf_node_content(n, &data, &len, &err), XPF_OK);
		assert_int_equal(xpf_lazy_state(&h->compare), XPF_LAZY_DONE);
		assert_int_equal(xpf_host_compare(h, &c, &err), XPF_OK);
		if (first == NULL)
			first = c;
		assert_ptr_equal(c, first);
	}
	assert_ptr_equal(first->side[0].h, xpf_report_host(xpf_report_base(r), 0));
	assert_ptr_equal(first->side[1].h, h);
	assert_int_equal(first->nnew, 1);   /* jit_step */
	assert_int_equal(first->ngone, 60); /* eager's 40, its 20 jit_many */
	xpf_report_free(r);
	xpf_input_free(in);
	xpf_input_free(base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_renamed),
		cmocka_unit_test(test_collisions),
		cmocka_unit_test(test_reserved),
		cmocka_unit_test(test_long),
		cmocka_unit_test(test_many_of_one_name),
		cmocka_unit_test(test_cache_bounded),
		cmocka_unit_test(test_rewritten_in_place),
		cmocka_unit_test(test_replaced),
		cmocka_unit_test(test_compare_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
