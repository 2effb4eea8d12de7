/* The real JAX captures of ../shared/captures/jax-h200 for the tests: each
 * `<name>.xplane.pb.gz` as it is kept (xplanefs reads it gzip'd), and XLA's
 * own figures of the step from `<name>.facts.json` (memory_analysis(): the
 * truth the tests hold the plan and the advice to, never xplanefs's
 * output). */
#ifndef XPF_TESTS_JAX_H200_H
#define XPF_TESTS_JAX_H200_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

static inline const char *xpf_h200_dir(void)
{
	static char dir[4096];
	const char *s = getenv("XPF_SHARED");
	snprintf(dir, sizeof dir, "%s/captures/jax-h200", s ? s : "../shared");
	return dir;
}

/* The capture <name> of jax-h200 (its .gz), or NULL with a skip line when
 * it is absent.  The path stays valid for the next 7 calls. */
static inline const char *xpf_h200(const char *name)
{
	static char out[8][4200];
	static int next;
	char *path = out[next++ & 7];
	snprintf(path, sizeof out[0], "%s/%s.xplane.pb.gz", xpf_h200_dir(), name);
	if (access(path, R_OK) != 0) {
		fprintf(stderr, "skip: %s is absent (set XPF_SHARED)\n", path);
		return NULL;
	}
	return path;
}

/* XLA's figure `key` (e.g. "peak_memory_in_bytes") of the step in
 * <name>.facts.json, memory_analysis.<step>.<key>; -1 when absent. */
static inline long long xpf_h200_fact(const char *name, const char *key)
{
	char path[4200];
	json_error_t je;
	snprintf(path, sizeof path, "%s/%s.facts.json", xpf_h200_dir(), name);
	json_t *j = json_load_file(path, 0, &je);
	const char *k;
	json_t *v;
	long long r = -1;
	json_object_foreach(json_object_get(j, "memory_analysis"), k, v) {
		if (json_is_integer(json_object_get(v, key)))
			r = json_integer_value(json_object_get(v, key));
		break;
	}
	json_decref(j);
	return r;
}

/* The BFC pool of <name>'s run: bytes_limit of its first memory stats
 * (3,003,121,664 for every jax-h200 capture); -1 when absent. */
static inline long long xpf_h200_pool(const char *name)
{
	char path[4200];
	json_error_t je;
	snprintf(path, sizeof path, "%s/%s.facts.json", xpf_h200_dir(), name);
	json_t *j = json_load_file(path, 0, &je);
	json_t *v = json_object_get(json_array_get(json_object_get(j, "stats"), 0), "bytes_limit");
	long long r = json_is_integer(v) ? json_integer_value(v) : -1;
	json_decref(j);
	return r;
}

/* XLA's peak_memory_in_bytes of the attn model at batch b (sizes-lm.json),
 * -1 when it has none. */
static inline long long xpf_h200_sizes_peak(long long b)
{
	char path[4200];
	json_error_t je;
	snprintf(path, sizeof path, "%s/sizes-lm.json", xpf_h200_dir());
	json_t *j = json_load_file(path, 0, &je), *e;
	size_t i;
	long long r = -1;
	json_array_foreach(j, i, e)
		if (json_integer_value(json_object_get(e, "B")) == b)
			r = json_integer_value(json_object_get(e, "peak_memory_in_bytes"));
	json_decref(j);
	return r;
}

#endif
