/* xplane-mkcapture --scale 20: the capture grows (prefix steps of
 * jit_preprocess) while the allocator's bookkeeping still adds up -- in use
 * after each event is in use before plus or minus its allocation_bytes,
 * in use + available is the capacity throughout, a live address is never
 * handed out twice, a freed one was live -- the scenario's own executions
 * keep their documented in-use figures (tests/scenarios/grads-kept.json),
 * and protoc --decode_raw reads the file. */
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

#include "xplane.pb-c.h"

static const char *build_dir, *src_dir;

typedef struct aev {
	int64_t t_ps;
	int kind; /* 1 alloc, -1 free */
	int64_t allocated, available, bytes, addr;
	size_t seq;
} aev;

static int aev_cmp(const void *a, const void *b)
{
	const aev *x = a, *y = b;
	if (x->t_ps != y->t_ps)
		return x->t_ps < y->t_ps ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static const char *meta_name(Tensorflow__Profiler__XPlane__EventMetadataEntry **m, size_t n, int64_t id)
{
	for (size_t i = 0; i < n; i++)
		if (m[i]->key == id && m[i]->value)
			return m[i]->value->name;
	return "";
}

static const char *stat_name(const Tensorflow__Profiler__XPlane *p, int64_t id)
{
	for (size_t i = 0; i < p->n_stat_metadata; i++)
		if (p->stat_metadata[i]->key == id && p->stat_metadata[i]->value)
			return p->stat_metadata[i]->value->name;
	return "";
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static void test_scale20(void **state)
{
	(void)state;
	char dir[] = "/tmp/xpf-mkscale-XXXXXX", path[4096], p1[4096], cmd[12288];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/x20.xplane.pb", dir);
	snprintf(p1, sizeof p1, "%s/x1.xplane.pb", dir);
	snprintf(cmd, sizeof cmd, "'%s/tests/mkcapture/xplane-mkcapture' grads-kept --scale 20 '%s' && "
		 "'%s/tests/mkcapture/xplane-mkcapture' grads-kept '%s'", build_dir, path, build_dir, p1);
	assert_int_equal(system(cmd), 0);

	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *buf = malloc((size_t)len);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	f = fopen(p1, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	long len1 = ftell(f);
	fclose(f);
	/* about 20 times the scale-1 size */
	assert_true(len > 15 * len1 && len < 25 * len1);

	Tensorflow__Profiler__XSpace *xs = tensorflow__profiler__xspace__unpack(NULL, (size_t)len, buf);
	assert_non_null(xs);
	const Tensorflow__Profiler__XPlane *host = NULL;
	for (size_t i = 0; i < xs->n_planes; i++)
		if (strcmp(xs->planes[i]->name, "/host:CPU") == 0)
			host = xs->planes[i];
	assert_non_null(host);

	size_t n = 0, cap = 1024, nstep = 0, nprep = 0;
	aev *ev = malloc(cap * sizeof *ev);
	int64_t step_start[64];
	assert_non_null(ev);
	for (size_t l = 0; l < host->n_lines; l++) {
		const Tensorflow__Profiler__XLine *ln = host->lines[l];
		for (size_t k = 0; k < ln->n_events; k++) {
			const Tensorflow__Profiler__XEvent *e = ln->events[k];
			const char *nm = meta_name(host->event_metadata, host->n_event_metadata, e->metadata_id);
			int64_t t = ln->timestamp_ns * 1000 + e->offset_ps;
			if (strcmp(nm, "PjitFunction(step)") == 0) {
				assert_true(nstep < 64);
				step_start[nstep++] = t;
			}
			nprep += strcmp(nm, "PjitFunction(preprocess)") == 0;
			int kind = strcmp(nm, "MemoryAllocation") == 0 ? 1 : strcmp(nm, "MemoryDeallocation") == 0 ? -1 : 0;
			if (!kind)
				continue;
			if (n == cap) {
				cap *= 2;
				ev = realloc(ev, cap * sizeof *ev);
				assert_non_null(ev);
			}
			aev *a = &ev[n];
			memset(a, 0, sizeof *a);
			a->t_ps = t;
			a->kind = kind;
			a->seq = n++;
			a->allocated = a->available = a->bytes = a->addr = -1;
			for (size_t s = 0; s < e->n_stats; s++) {
				const char *sn = stat_name(host, e->stats[s]->metadata_id);
				int64_t v = e->stats[s]->value_case == TENSORFLOW__PROFILER__XSTAT__VALUE_UINT64_VALUE ?
					(int64_t)e->stats[s]->uint64_value : e->stats[s]->int64_value;
				if (strcmp(sn, "bytes_allocated") == 0)
					a->allocated = v;
				else if (strcmp(sn, "bytes_available") == 0)
					a->available = v;
				else if (strcmp(sn, "allocation_bytes") == 0)
					a->bytes = v;
				else if (strcmp(sn, "addr") == 0)
					a->addr = v;
			}
			assert_true(a->allocated >= 0 && a->available >= 0 && a->bytes > 0 && a->addr > 0);
		}
	}
	/* the scenario's 10 steps, and the prefix's executions (about 20x the events) */
	assert_int_equal(nstep, 10);
	assert_true(nprep >= 100);
	if (n)
		qsort(ev, n, sizeof *ev, aev_cmp);

	int64_t in_use = 0, capacity = ev[0].allocated + ev[0].available;
	int64_t *live = malloc(n * sizeof *live);
	size_t nlive = 0;
	assert_non_null(live);
	for (size_t i = 0; i < n; i++) {
		const aev *a = &ev[i];
		in_use += a->kind * a->bytes;
		assert_int_equal(a->allocated, in_use);
		assert_int_equal(a->allocated + a->available, capacity);
		assert_true(in_use >= 0 && in_use <= capacity);
		/* live addresses: sorted array */
		size_t lo = 0, hi = nlive;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (live[mid] < a->addr)
				lo = mid + 1;
			else
				hi = mid;
		}
		int found = lo < nlive && live[lo] == a->addr;
		if (a->kind > 0) {
			assert_false(found);
			memmove(&live[lo + 1], &live[lo], (nlive - lo) * sizeof *live);
			live[lo] = a->addr;
			nlive++;
		} else {
			assert_true(found);
			memmove(&live[lo], &live[lo + 1], (nlive - lo - 1) * sizeof *live);
			nlive--;
		}
	}
	assert_int_equal(nlive, 40); /* the state and the kept gradients */

	/* in use at the start of each step as documented at scale 1 */
	json_error_t jerr;
	snprintf(p1, sizeof p1, "%s/tests/scenarios/grads-kept.json", src_dir);
	json_t *doc = json_load_file(p1, 0, &jerr);
	assert_non_null(doc);
	json_t *arr = json_object_get(json_object_get(doc, "runtime"), "in_use_at_start_bytes");
	assert_int_equal(json_array_size(arr), nstep);
	if (nstep)
		qsort(step_start, nstep, sizeof *step_start, cmp_i64);
	for (size_t k = 0; k < nstep; k++) {
		int64_t u = 0;
		for (size_t i = 0; i < n && ev[i].t_ps < step_start[k]; i++)
			u = ev[i].allocated;
		assert_int_equal(u, json_integer_value(json_array_get(arr, k)));
	}
	json_decref(doc);

	/* a well-formed protobuf for a decoder that knows no .proto */
	if (system("command -v protoc >/dev/null 2>&1") == 0) {
		snprintf(cmd, sizeof cmd, "protoc --decode_raw < '%s' > /dev/null", path);
		assert_int_equal(system(cmd), 0);
	}

	free(live);
	free(ev);
	tensorflow__profiler__xspace__free_unpacked(xs, NULL);
	free(buf);
	unlink(path);
	snprintf(p1, sizeof p1, "%s/x1.xplane.pb", dir);
	unlink(p1);
	rmdir(dir);
}

int main(void)
{
	build_dir = getenv("XPF_BUILD");
	src_dir = getenv("XPF_SOURCE");
	if (!build_dir)
		build_dir = "build";
	if (!src_dir)
		src_dir = ".";
	const struct CMUnitTest tests[] = { cmocka_unit_test(test_scale20) };
	return cmocka_run_group_tests_name("mkcapture-scale", tests, NULL, NULL);
}
