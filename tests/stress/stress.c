/* Concurrent readers (SPEC §6): 16 threads read every file of one report at
 * once through the report API (xpf_node_children, xpf_node_content, as the
 * mount's multi-threaded loop does) and must see the same bytes, or the same
 * error, as a sequential walk of a separate report of the same capture.
 *
 *   stress CAPTURE...     exit 0 when every capture agrees and has files that
 *                         read (a tree of errors only compares no bytes);
 *                         77 when none exists
 * Run under ASan in the sanitizer pass and under TSan by tests/stress/tsan.sh. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/runtime/runtime.h"
#include "tree/report.h"
#include "capture/input.h"

/* The runtime options every report of this test builds with (XPF_THREADS). */
static xpf_rt_options rt_options = XPF_RT_OPTIONS_INIT;

#define NTHREADS 16

typedef struct file_ref {
	char *path;
	int rc;
	char *data;
	size_t len;
} file_ref;

typedef struct walk {
	file_ref *v;
	size_t n, cap;
} walk;

static void add(walk *w, const char *path, int rc, const char *data, size_t len)
{
	if (w->n == w->cap) {
		w->cap = w->cap ? 2 * w->cap : 64;
		w->v = realloc(w->v, w->cap * sizeof *w->v);
		if (w->v == NULL)
			abort();
	}
	file_ref *f = &w->v[w->n++];
	f->path = strdup(path);
	f->rc = rc;
	f->len = len;
	f->data = malloc(len ? len : 1);
	if (f->path == NULL || f->data == NULL)
		abort();
	if (len)
		memcpy(f->data, data, len);
}

/* The reference: a sequential walk, in tree order. */
static void walk_seq(xpf_node *dir, walk *w)
{
	xpf_node **kids;
	size_t n;
	xpf_error err = { 0 };
	if (xpf_node_children(dir, &kids, &n, &err) != XPF_OK)
		return;
	for (size_t i = 0; i < n; i++) {
		if (kids[i]->type == XPF_NODE_DIR) {
			walk_seq(kids[i], w);
			continue;
		}
		const char *data = NULL;
		size_t len = 0;
		xpf_error e2 = { 0 };
		int rc = xpf_node_content(kids[i], &data, &len, &e2);
		xpf_buf p = XPF_BUF_INIT;
		xpf_node_path(kids[i], &p);
		add(w, p.data, rc, rc == XPF_OK ? data : NULL, rc == XPF_OK ? len : 0);
		xpf_buf_release(&p);
	}
}

typedef struct worker {
	xpf_report *r;
	const walk *ref;
	pthread_barrier_t *go;
	size_t id;
	long mismatches;
} worker;

static void *work(void *arg)
{
	worker *wk = arg;
	const walk *ref = wk->ref;
	pthread_barrier_wait(wk->go);
	/* Each thread starts at its own place and goes round, so that threads
	 * race on the same files and directories from different sides. */
	for (size_t k = 0; k < ref->n; k++) {
		size_t i = (k + wk->id * ref->n / NTHREADS) % ref->n;
		if (wk->id % 2)
			i = ref->n - 1 - i;
		const file_ref *f = &ref->v[i];
		xpf_node *node;
		xpf_error err = { 0 };
		if (xpf_report_resolve(wk->r, f->path, &node, &err) != XPF_OK || node == NULL) {
			fprintf(stderr, "thread %zu: %s: cannot resolve: %s\n", wk->id, f->path, err.msg);
			wk->mismatches++;
			continue;
		}
		/* its directory listed meanwhile (readdir beside read) holds it */
		xpf_node **kids;
		size_t nk = 0, at = 0;
		if (node->parent && xpf_node_children(node->parent, &kids, &nk, &err) == XPF_OK) {
			while (at < nk && kids[at] != node)
				at++;
			if (at == nk) {
				fprintf(stderr, "thread %zu: %s: not in its directory's listing\n", wk->id,
					f->path);
				wk->mismatches++;
			}
		}
		const char *data = NULL;
		size_t len = 0;
		int rc = xpf_node_content(node, &data, &len, &err);
		if (rc != f->rc || (rc == XPF_OK && (len != f->len || memcmp(data, f->data, len) != 0))) {
			fprintf(stderr, "thread %zu: %s: rc %d len %zu, want rc %d len %zu\n", wk->id,
				f->path, rc, len, f->rc, f->len);
			wk->mismatches++;
		}
	}
	return NULL;
}

static int open_report(const char *path, xpf_input **in, xpf_report **r)
{
	xpf_error err = { 0 };
	xpf_options opt = XPF_OPTIONS_INIT;
	opt.runtime = &rt_options;
	if (xpf_input_open(path, NULL, in, &err) != XPF_OK) {
		fprintf(stderr, "%s: %s\n", path, err.msg);
		return -1;
	}
	if (xpf_report_open(*in, &opt, r, &err) != XPF_OK) {
		fprintf(stderr, "%s: %s\n", path, err.msg);
		xpf_input_free(*in);
		return -1;
	}
	return 0;
}

static int stress_one(const char *path)
{
	xpf_input *in1, *in2;
	xpf_report *r1, *r2;
	if (open_report(path, &in1, &r1) != 0)
		return -1;
	walk ref = { 0 };
	walk_seq(xpf_report_root(r1), &ref);
	if (ref.n == 0) { /* nothing listed: nothing would be compared */
		fprintf(stderr, "%s: the tree lists no file\n", path);
		return -1;
	}
	if (open_report(path, &in2, &r2) != 0)
		return -1;

	pthread_t th[NTHREADS];
	worker wk[NTHREADS];
	pthread_barrier_t go;
	pthread_barrier_init(&go, NULL, NTHREADS);
	for (size_t i = 0; i < NTHREADS; i++) {
		wk[i] = (worker){ .r = r2, .ref = &ref, .go = &go, .id = i };
		if (pthread_create(&th[i], NULL, work, &wk[i]) != 0)
			abort();
	}
	long bad = 0;
	for (size_t i = 0; i < NTHREADS; i++) {
		pthread_join(th[i], NULL);
		bad += wk[i].mismatches;
	}
	pthread_barrier_destroy(&go);
	size_t nerr = 0;
	for (size_t i = 0; i < ref.n; i++)
		nerr += ref.v[i].rc != XPF_OK;
	printf("%s: %zu files (%zu broken) read by %d threads: %ld mismatches\n", path, ref.n, nerr,
	       NTHREADS, bad);
	if (nerr == ref.n) { /* only errors compared: the readers' bytes never were */
		fprintf(stderr, "%s: every file of the tree is broken\n", path);
		bad++;
	}
	for (size_t i = 0; i < ref.n; i++) {
		free(ref.v[i].path);
		free(ref.v[i].data);
	}
	free(ref.v);
	xpf_report_free(r1);
	xpf_input_free(in1);
	xpf_report_free(r2);
	xpf_input_free(in2);
	return bad ? -1 : 0;
}

int main(int argc, char **argv)
{
	/* XPF_THREADS (tsan.sh): the runtime's host lines shared out between
	 * that many threads even on small captures */
	const char *t = getenv("XPF_THREADS");
	if (t && *t) {
		rt_options.threads = atoi(t);
		rt_options.share_small = true;
	}
	int fails = 0, ran = 0;
	for (int i = 1; i < argc; i++) {
		if (access(argv[i], R_OK) != 0) {
			printf("skipping %s: absent\n", argv[i]);
			continue;
		}
		ran++;
		if (stress_one(argv[i]) != 0)
			fails++;
	}
	if (ran == 0)
		return 77;
	return fails ? 1 : 0;
}
