/* The report's safe directory names (src/analysis/report.c, SPEC §3): what
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

#include "tree/report.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_renamed),
		cmocka_unit_test(test_collisions),
		cmocka_unit_test(test_reserved),
		cmocka_unit_test(test_long),
		cmocka_unit_test(test_many_of_one_name),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
