/* The helpers of test_util.h. */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- places ---------------------------------------------------------------- */

static char *ring(void)
{
	static char buf[8][4200];
	static unsigned next;
	return buf[next++ & 7];
}

const char *xpf_t_shared(const char *rel)
{
	const char *s = getenv("XPF_SHARED");
	char *p = ring();
	snprintf(p, 4200, "%s/%s", s ? s : "../shared", rel);
	if (access(p, R_OK) != 0) {
		fprintf(stderr, "skip: %s is absent (set XPF_SHARED)\n", p);
		return NULL;
	}
	return p;
}

const char *xpf_t_capture(const char *name)
{
	char rel[1024];
	snprintf(rel, sizeof rel, "captures/%s", name);
	return xpf_t_shared(rel);
}

static char tmpdir[] = "/tmp/xpf-test-XXXXXX";
static bool have_tmp;

static void remove_tmpdir(void)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "note: %s was not removed\n", tmpdir);
}

const char *xpf_t_tmpdir(void)
{
	if (!have_tmp) {
		assert_non_null(mkdtemp(tmpdir));
		have_tmp = true;
		atexit(remove_tmpdir);
	}
	return tmpdir;
}

const char *xpf_t_mkcapture(void)
{
	static char exe[4096];
	static bool said;
	const char *build = getenv("XPF_BUILD");
	snprintf(exe, sizeof exe, "%s/tests/mkcapture/xplane-mkcapture", build ? build : "build");
	if (access(exe, X_OK) == 0)
		return exe;
	if (!said)
		fprintf(stderr, "skip: %s is not built (set XPF_BUILD)\n", exe);
	said = true;
	return NULL;
}

const char *xpf_t_build(const char *out, const char *args)
{
	const char *exe = xpf_t_mkcapture();
	if (exe == NULL)
		return NULL;
	char *path = ring(), cmd[16384];
	snprintf(path, 4200, "%s/%s", xpf_t_tmpdir(), out);
	if (access(path, R_OK) == 0)
		return path;
	snprintf(cmd, sizeof cmd, "'%s' %s '%s' >/dev/null", exe, args, path);
	assert_int_equal(system(cmd), 0);
	return path;
}

const char *scenario(const char *name)
{
	char out[512], args[512];
	snprintf(out, sizeof out, "%s.xplane.pb", name);
	snprintf(args, sizeof args, "'%s'", name);
	return xpf_t_build(out, args);
}

/* ---- a report ------------------------------------------------------------- */

bool open_rep(struct rep *p, const char *path, uint64_t capacity)
{
	xpf_error err = { 0 };
	xpf_options opt = XPF_OPTIONS_INIT;
	memset(p, 0, sizeof *p);
	p->opt = opt;
	p->opt.capacity = capacity;
	if (access(path, R_OK) != 0)
		return false;
	if (xpf_input_open(path, NULL, &p->in, &err) != XPF_OK)
		fail_msg("%s: %s", path, err.msg);
	if (xpf_report_open(p->in, &p->opt, &p->r, &err) != XPF_OK)
		fail_msg("%s: %s", path, err.msg);
	return true;
}

void close_rep(struct rep *p)
{
	json_decref(p->diag);
	xpf_report_free(p->r);
	xpf_input_free(p->in);
	memset(p, 0, sizeof *p);
}

const char *cat(struct rep *p, const char *path)
{
	xpf_node *n = NULL;
	xpf_error err = { 0 };
	const char *data;
	size_t len;
	char full[4096];
	snprintf(full, sizeof full, "%s%s", p->prefix, path);
	assert_int_equal(xpf_report_resolve(p->r, full, &n, &err), XPF_OK);
	if (n == NULL)
		fail_msg("%s: not in the tree", full);
	if (xpf_node_content(n, &data, &len, &err) != XPF_OK)
		fail_msg("%s: %s", full, err.msg);
	assert_int_equal(strlen(data), len);
	return data;
}

json_t *diag_json(struct rep *p)
{
	json_error_t je;
	if (p->diag == NULL) {
		p->diag = json_loads(cat(p, "diagnosis.json"), 0, &je);
		if (p->diag == NULL)
			fail_msg("diagnosis.json: %s (line %d)", je.text, je.line);
	}
	return p->diag;
}

json_t *finding(struct rep *p, const char *code)
{
	json_t *fs = json_object_get(diag_json(p), "findings"), *f;
	size_t i;
	json_array_foreach(fs, i, f)
		if (strcmp(json_string_value(json_object_get(f, "code")), code) == 0)
			return f;
	return NULL;
}

json_t *need_finding(struct rep *p, const char *code)
{
	json_t *f = finding(p, code);
	if (f == NULL)
		fail_msg("no %s finding in:\n%s", code, cat(p, "diagnosis.txt"));
	return f;
}

long long fig(json_t *f, const char *key)
{
	json_t *v = json_object_get(json_object_get(f, "figures"), key);
	if (!json_is_integer(v))
		fail_msg("figure %s missing or not an integer", key);
	return json_integer_value(v);
}

const char *figs(json_t *f, const char *key)
{
	json_t *v = json_object_get(json_object_get(f, "figures"), key);
	if (!json_is_string(v))
		fail_msg("figure %s missing or not a string", key);
	return json_string_value(v);
}

const char *text(json_t *f)
{
	const char *t = json_string_value(json_object_get(f, "text"));
	return t ? t : "";
}

void assert_contains(const char *hay, const char *needle)
{
	if (hay == NULL || strstr(hay, needle) == NULL)
		fail_msg("expected '%s' in:\n%s", needle, hay ? hay : "(null)");
}

const char *line_from(const char *text, const char *prefix)
{
	static char line[4096];
	const char *l = text;
	while (l && strncmp(l, prefix, strlen(prefix)) != 0)
		if ((l = strchr(l, '\n')) != NULL)
			l++;
	if (l == NULL)
		fail_msg("no line '%s...' in:\n%s", prefix, text);
	snprintf(line, sizeof line, "%.*s", (int)strcspn(l, "\n"), l);
	return line;
}

/* ---- a TSV file ------------------------------------------------------------ */

/* Field i of the line at row, and its length (0 past the line's last). */
static const char *tsv_nth(const char *row, int i, size_t *len)
{
	size_t n = strcspn(row, "\t\n");
	for (; i > 0 && row[n] == '\t'; i--) {
		row += n + 1;
		n = strcspn(row, "\t\n");
	}
	*len = i > 0 ? 0 : n;
	return row;
}

/* The number of the column named col in tsv's header, or -1. */
static int tsv_column(const char *tsv, const char *col)
{
	size_t n, len = strlen(col);
	for (int i = 0;; i++) {
		const char *f = tsv_nth(tsv, i, &n);
		if (n == len && strncmp(f, col, len) == 0)
			return i;
		if (f[n] != '\t')
			return -1;
	}
}

const char *tsv_field(const char *tsv, const char *key, const char *val, const char *col)
{
	static char buf[8][1024];
	static unsigned next;
	int k = tsv_column(tsv, key), c = tsv_column(tsv, col);
	if (k < 0 || c < 0)
		fail_msg("no column %s or %s in:\n%s", key, col, tsv);
	size_t vlen = strlen(val), n;
	for (const char *row = strchr(tsv, '\n'); row && row[1]; row = strchr(row + 1, '\n')) {
		const char *f = tsv_nth(row + 1, k, &n);
		if (n != vlen || strncmp(f, val, n) != 0)
			continue;
		f = tsv_nth(row + 1, c, &n);
		char *out = buf[next++ & 7];
		snprintf(out, sizeof buf[0], "%.*s", (int)n, f);
		return out;
	}
	fail_msg("no row with %s '%s' in:\n%s", key, val, tsv);
	return NULL;
}

void assert_row(const char *tsv, const char *key, const char *val, const struct tsv_want *want, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *got = tsv_field(tsv, key, val, want[i].col);
		if (strcmp(got, want[i].val) != 0)
			fail_msg("%s of the row with %s '%s' is '%s', want '%s'", want[i].col, key, val, got,
				 want[i].val);
	}
}
