/* The pprof profiles (issue 27, SPEC §9), decoded with our own
 * proto/profile.proto through protobuf-c: for every scenario capture of
 * xplane-mkcapture, each module's peak.pb.gz has one sample per row of
 * plan.json's peak_buffers, in order, with its bytes and labels, and the
 * bytes sum to plan.json's heap peak; each execution's live.pb.gz has one
 * sample per row of live.tsv and the bytes sum to live.tsv's (and to
 * executions.tsv's in_use_at_start_bytes where known).  The attention
 * scenario's softmax buffers carry their Python stack.  Skips where the
 * generator is not built. */
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
#include <zlib.h>

#include "tree/report.h"
#include "test_util.h"
#include "capture/input.h"
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile profile;



static xpf_node *child(xpf_node *dir, const char *name)
{
	xpf_error err = { 0 };
	xpf_node *n = NULL;
	assert_int_equal(xpf_node_lookup(dir, name, &n, &err), XPF_OK);
	if (n == NULL)
		fail_msg("%s: no %s", dir->name, name);
	return n;
}

static const char *content(xpf_node *n, size_t *len)
{
	xpf_error err = { 0 };
	const char *data;
	size_t l;
	if (xpf_node_content(n, &data, &l, &err) != XPF_OK)
		fail_msg("%s: %s", n->name, err.msg);
	if (len)
		*len = l;
	return data;
}

/* gunzip, then unpack with protobuf-c */
static profile *decode(xpf_node *n)
{
	size_t len;
	const char *gz = content(n, &len);
	assert_true(len > 18 && (uint8_t)gz[0] == 0x1f && (uint8_t)gz[1] == 0x8b);
	z_stream z;
	memset(&z, 0, sizeof z);
	assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK);
	size_t cap = len * 8 + 1024, have = 0;
	uint8_t *raw = malloc(cap);
	assert_non_null(raw);
	z.next_in = (Bytef *)gz;
	z.avail_in = (uInt)len;
	int rc;
	do {
		if (have == cap) {
			cap *= 2;
			raw = realloc(raw, cap);
			assert_non_null(raw);
		}
		z.next_out = raw + have;
		z.avail_out = (uInt)(cap - have);
		rc = inflate(&z, Z_NO_FLUSH);
		have = cap - z.avail_out;
	} while (rc == Z_OK);
	assert_int_equal(rc, Z_STREAM_END);
	assert_int_equal(z.avail_in, 0); /* one gzip member, nothing after */
	inflateEnd(&z);
	profile *p = perftools__profiles__profile__unpack(NULL, have, raw);
	free(raw);
	if (p == NULL)
		fail_msg("%s: not a perftools.profiles.Profile", n->name);
	/* the format's rules: string 0 is "", sample types space/bytes and
	 * objects/count, every id points at something */
	assert_true(p->n_string_table > 0);
	assert_string_equal(p->string_table[0], "");
	assert_int_equal(p->n_sample_type, 2);
	assert_string_equal(p->string_table[p->sample_type[0]->type], "space");
	assert_string_equal(p->string_table[p->sample_type[0]->unit], "bytes");
	assert_string_equal(p->string_table[p->sample_type[1]->type], "objects");
	assert_string_equal(p->string_table[p->sample_type[1]->unit], "count");
	for (size_t i = 0; i < p->n_location; i++) {
		assert_int_equal(p->location[i]->id, i + 1);
		assert_int_equal(p->location[i]->n_line, 1);
		uint64_t f = p->location[i]->line[0]->function_id;
		assert_true(f >= 1 && f <= p->n_function);
	}
	for (size_t i = 0; i < p->n_function; i++) {
		assert_int_equal(p->function[i]->id, i + 1);
		assert_true((size_t)p->function[i]->name < p->n_string_table);
		assert_true((size_t)p->function[i]->filename < p->n_string_table);
	}
	for (size_t i = 0; i < p->n_sample; i++) {
		const Perftools__Profiles__Sample *s = p->sample[i];
		assert_int_equal(s->n_value, 2);
		assert_int_equal(s->value[1], 1);
		assert_true(s->n_location_id >= 1);
		for (size_t k = 0; k < s->n_location_id; k++)
			assert_true(s->location_id[k] >= 1 && s->location_id[k] <= p->n_location);
		for (size_t k = 0; k < s->n_label; k++) {
			assert_true((size_t)s->label[k]->key < p->n_string_table);
			assert_true((size_t)s->label[k]->str < p->n_string_table);
		}
	}
	return p;
}

static const char *label(const profile *p, size_t i, const char *key)
{
	const Perftools__Profiles__Sample *s = p->sample[i];
	for (size_t k = 0; k < s->n_label; k++)
		if (strcmp(p->string_table[s->label[k]->key], key) == 0)
			return p->string_table[s->label[k]->str];
	return "";
}

static const Perftools__Profiles__Function *frame(const profile *p, size_t i, size_t k,
						   int64_t *line)
{
	const Perftools__Profiles__Location *l = p->location[p->sample[i]->location_id[k] - 1];
	*line = l->line[0]->line;
	return p->function[l->line[0]->function_id - 1];
}

/* The module's peak.pb.gz against its plan.json. */
static size_t check_module(xpf_node *mdir, uint64_t *peak_bytes)
{
	json_error_t je;
	size_t len;
	const char *js = content(child(mdir, "plan.json"), &len);
	json_t *plan = json_loadb(js, len, 0, &je);
	if (plan == NULL)
		fail_msg("%s/plan.json: %s", mdir->name, je.text);
	profile *p = decode(child(mdir, "peak.pb.gz"));
	json_t *rows = json_object_get(plan, "peak_buffers");
	json_t *hp = json_object_get(json_object_get(plan, "heap_peak"), "bytes");
	size_t nrows = json_is_array(rows) ? json_array_size(rows) : 0;
	assert_int_equal(p->n_sample, nrows);
	uint64_t sum = 0;
	for (size_t i = 0; i < nrows; i++) {
		json_t *r = json_array_get(rows, i);
		assert_int_equal(p->sample[i]->value[0], json_integer_value(json_object_get(r, "bytes")));
		sum += (uint64_t)p->sample[i]->value[0];
		static const char *const keys[] = { "role", "kind", "dtype", "shape", "instruction" };
		for (size_t k = 0; k < 5; k++) {
			const char *want = json_string_value(json_object_get(r, keys[k]));
			assert_string_equal(label(p, i, keys[k]), want ? want : "");
		}
	}
	if (nrows)
		assert_int_equal(sum, json_integer_value(hp));
	*peak_bytes = sum;
	perftools__profiles__profile__free_unpacked(p, NULL);
	json_decref(plan);
	return nrows;
}

/* The sum of column 2 (bytes) of live.tsv and its rows, with the origins. */
static void check_execution(xpf_node *xdir, const char *exec_row)
{
	size_t len;
	const char *tsv = content(child(xdir, "live.tsv"), &len);
	profile *p = decode(child(xdir, "live.pb.gz"));
	const char *line = strchr(tsv, '\n') + 1; /* after the header */
	uint64_t sum = 0, psum = 0;
	size_t i = 0;
	while (*line) {
		const char *tab = strchr(line, '\t');
		assert_true(i < p->n_sample);
		assert_true(strlen(label(p, i, "origin")) == (size_t)(tab - line) &&
			    memcmp(label(p, i, "origin"), line, (size_t)(tab - line)) == 0);
		uint64_t b = strtoull(tab + 1, NULL, 10);
		assert_int_equal(p->sample[i]->value[0], b);
		if (strncmp(line, "outputs of ", 11) == 0 || strncmp(line, "temp of ", 8) == 0)
			assert_true(label(p, i, "module")[0] != '\0');
		assert_int_equal(p->sample[i]->n_location_id, 2);
		sum += b;
		psum += (uint64_t)p->sample[i]->value[0];
		i++;
		line = strchr(line, '\n') + 1;
	}
	assert_int_equal(p->n_sample, i);
	assert_int_equal(psum, sum);
	/* executions.tsv column 8: in_use_at_start_bytes (empty: unknown) */
	const char *c = exec_row;
	for (int k = 0; k < 7; k++)
		c = strchr(c, '\t') + 1;
	if (*c != '\t')
		assert_int_equal(psum, strtoull(c, NULL, 10));
	perftools__profiles__profile__free_unpacked(p, NULL);
}

static void check_host(xpf_report *r, xpf_host *h, const char *scenario, size_t *nmod, size_t *nexec)
{
	xpf_node *root = xpf_report_host_root(r, h);
	xpf_node *mods = child(root, "modules");
	for (size_t m = 0; m < h->nmodules; m++) {
		uint64_t bytes;
		size_t rows = check_module(child(mods, h->module_dirs[m]), &bytes);
		(*nmod)++;
		if (strcmp(scenario, "attention-too-big") != 0)
			continue;
		/* the softmax rows: model.py:57 innermost, the train loop outermost */
		profile *p = decode(child(child(mods, h->module_dirs[m]), "peak.pb.gz"));
		size_t softmax = 0;
		for (size_t i = 0; i < rows; i++) {
			if (strncmp(label(p, i, "instruction"), "loop_exponential_fusion.", 24) != 0)
				continue;
			int64_t line;
			const Perftools__Profiles__Function *f = frame(p, i, 0, &line);
			assert_string_equal(p->string_table[f->filename], "model.py");
			assert_int_equal(line, 57);
			assert_true(p->sample[i]->n_location_id >= 2);
			f = frame(p, i, p->sample[i]->n_location_id - 1, &line);
			assert_string_equal(p->string_table[f->filename], "train.py");
			assert_string_equal(label(p, i, "role"), "forward");
			assert_string_equal(label(p, i, "dtype"), "f32");
			softmax++;
		}
		assert_int_equal(softmax, 5);
		perftools__profiles__profile__free_unpacked(p, NULL);
	}
	xpf_node *rt = child(root, "runtime");
	const char *execs = content(child(rt, "executions.tsv"), NULL);
	xpf_node *xdir = child(rt, "executions");
	xpf_node **kids;
	size_t nk;
	xpf_error err = { 0 };
	assert_int_equal(xpf_node_children(xdir, &kids, &nk, &err), XPF_OK);
	const char *row = strchr(execs, '\n') + 1;
	for (size_t i = 0; i < nk; i++) {
		assert_true(*row != '\0');
		check_execution(kids[i], row);
		row = strchr(row, '\n') + 1;
		(*nexec)++;
	}
}

static void test_scenarios(void **state)
{
	(void)state;
	const char *gen = xpf_t_mkcapture();
	if (gen == NULL)
		skip();
	char cmd[16384], name[256];
	snprintf(cmd, sizeof cmd, "'%s' --list", gen);
	FILE *list = popen(cmd, "r");
	assert_non_null(list);
	size_t nscn = 0;
	while (fscanf(list, "%255s%*[^\n]", name) == 1) {
		char path[4096], in_path[4200];
		snprintf(path, sizeof path, "%s/%s", xpf_t_tmpdir(), name);
		snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' >/dev/null", gen, name, path);
		assert_int_equal(system(cmd), 0);
		snprintf(in_path, sizeof in_path, "%s.xplane.pb", path);
		if (access(in_path, R_OK) != 0 || rename(path, in_path) != 0)
			snprintf(in_path, sizeof in_path, "%s", path); /* a run directory */
		xpf_input *in = NULL;
		xpf_report *r = NULL;
		xpf_error err = { 0 };
		xpf_options opt = XPF_OPTIONS_INIT;
		if (xpf_input_open(in_path, NULL, &in, &err) != XPF_OK ||
		    xpf_report_open(in, &opt, &r, &err) != XPF_OK)
			fail_msg("%s: %s", name, err.msg);
		size_t nmod = 0, nexec = 0;
		for (size_t i = 0; i < xpf_report_nhosts(r); i++)
			check_host(r, xpf_report_host(r, i), name, &nmod, &nexec);
		printf("ok: %s: %zu peak.pb.gz and %zu live.pb.gz match plan.json and live.tsv\n", name,
		       nmod, nexec);
		xpf_report_free(r);
		xpf_input_free(in);
		snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s.xplane.pb'", path, path);
		assert_int_equal(system(cmd), 0);
		nscn++;
	}
	pclose(list);
	assert_true(nscn >= 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scenarios),
	};
	/* its one test needs the generator: without it nothing runs, and meson
	 * must say SKIP (77), not OK */
	if (xpf_t_mkcapture() == NULL) {
		printf("SKIP: xplane-mkcapture is not built (set XPF_BUILD)\n");
		return 77;
	}
	return cmocka_run_group_tests_name("pprof", tests, NULL, NULL);
}
