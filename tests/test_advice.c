/* Advice checked against what the fixes really did (issue 37, SPEC §5.3):
 * the real captures of ../shared/captures/jax-h200, among them fix pairs
 * (a failing step and the same step fixed, each with XLA's own
 * memory_analysis() in its facts.json) and sizes-lm.json (XLA's figures
 * of the attn model at other batch sizes).  Every expected figure comes
 * from JAX's files, scen.py's shapes or the README there, never from
 * xplanefs's output.  Run with `real` (SKIP, exit 77, where ../shared is
 * absent). */
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

#include "capture/input.h"
#include "tree/report.h"
#include "jax_h200.h"
#include "test_group.h"

#define MIB (1024ll * 1024)

/* ---- a capture's report ------------------------------------------------- */

struct rep {
	xpf_input *in;
	xpf_report *r;
	xpf_options opt;
	json_t *diag;
};

static void open_rep(struct rep *p, const char *path, uint64_t capacity)
{
	xpf_error err = { 0 };
	xpf_options opt = XPF_OPTIONS_INIT;
	memset(p, 0, sizeof *p);
	p->opt = opt;
	p->opt.capacity = capacity;
	if (xpf_input_open(path, NULL, &p->in, &err) != XPF_OK)
		fail_msg("%s: %s", path, err.msg);
	if (xpf_report_open(p->in, &p->opt, &p->r, &err) != XPF_OK)
		fail_msg("%s: %s", path, err.msg);
}

static void close_rep(struct rep *p)
{
	json_decref(p->diag);
	xpf_report_free(p->r);
	xpf_input_free(p->in);
}

/* A file of the report, NUL-terminated (owned by the report). */
static const char *cat(struct rep *p, const char *path)
{
	xpf_node *n = NULL;
	xpf_error err = { 0 };
	const char *data;
	size_t len;
	assert_int_equal(xpf_report_resolve(p->r, path, &n, &err), XPF_OK);
	if (n == NULL)
		fail_msg("%s: not in the tree", path);
	assert_int_equal(xpf_node_content(n, &data, &len, &err), XPF_OK);
	return data;
}

static json_t *finding(struct rep *p, const char *code)
{
	json_error_t je;
	if (p->diag == NULL && (p->diag = json_loads(cat(p, "diagnosis.json"), 0, &je)) == NULL)
		fail_msg("diagnosis.json: %s", je.text);
	json_t *f;
	size_t i;
	json_array_foreach(json_object_get(p->diag, "findings"), i, f)
		if (strcmp(json_string_value(json_object_get(f, "code")), code) == 0)
			return f;
	return NULL;
}

static json_t *need_finding(struct rep *p, const char *code)
{
	json_t *f = finding(p, code);
	if (f == NULL)
		fail_msg("no %s finding in:\n%s", code, cat(p, "diagnosis.txt"));
	return f;
}

static long long fig(json_t *f, const char *key)
{
	json_t *v = json_object_get(json_object_get(f, "figures"), key);
	if (!json_is_integer(v))
		fail_msg("figure %s missing or not an integer", key);
	return json_integer_value(v);
}

static const char *text(json_t *f) { return json_string_value(json_object_get(f, "text")); }

static void assert_contains(const char *hay, const char *needle)
{
	if (strstr(hay, needle) == NULL)
		fail_msg("'%s' not in: %s", needle, hay);
}

/* ---- the real captures ---------------------------------------------------- */

/* convert (scen.py): 12 f32[4096,4096] weights `ws` cast to bf16 inside
 * the step, and x f32[2048,4096] too; it returns the loss and the f32
 * gradients.  The README: the 12 bf16 copies (384 MiB, 32 MiB each) are
 * at the peak (param-convert-copy), about 20% of XLA's peak.  XLA keeps
 * most of them in the gradients' output allocations until the gradients
 * are written; a copy whose last use comes before the peak is not there,
 * so at least 11 of the 12 and at most all of them with x's (16 MiB). */
static void test_real_convert(void **state)
{
	(void)state;
	const char *path = xpf_h200("convert");
	if (path == NULL)
		skip();
	struct rep p;
	open_rep(&p, path, 0);
	json_t *f = need_finding(&p, "param-convert-copy");
	long long copy = 4096ll * 4096 * 2, peak = xpf_h200_fact("convert", "peak_memory_in_bytes");
	assert_true(fig(f, "bytes") >= 11 * copy);
	assert_true(fig(f, "bytes") <= 12 * copy + 2048ll * 4096 * 2);
	assert_true(fig(f, "bytes") * 100 >= peak * 18);
	assert_contains(text(f), "ws[0] f32[4096,4096]");
	close_rep(&p);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest real[] = {
		cmocka_unit_test(test_real_convert),
	};
	bool want_real;
	int rc = xpf_test_group(argc, argv, &want_real);
	if (rc >= 0)
		return rc;
	if (!want_real) {
		fprintf(stderr, "usage: %s real\n", argv[0]);
		return 2;
	}
	if (access(xpf_h200_dir(), R_OK | X_OK) != 0) {
		printf("SKIP: %s is absent (set XPF_SHARED): the tests on jax-h200 did not run\n",
		       xpf_h200_dir());
		return XPF_TEST_SKIP;
	}
	rc = cmocka_run_group_tests_name("advice-real", real, NULL, NULL);
	xpf_h200_cleanup();
	return rc;
}
