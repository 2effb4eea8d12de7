/* xplane-mkcapture SCENARIO [--scale N] [--big-module N] [--big-step N] [--modules N[,...]] [--variant V[,V...]] OUT
 * xplane-mkcapture --job N (--steps S | --size BYTES) [--variant V,...] OUT
 * xplane-mkcapture --lm SPEC [-v] OUT
 *
 * Writes a synthetic JAX GPU profiler capture (an XSpace, as
 * `jax.profiler.trace` saves it) for one of the project's scenarios.  The
 * figures each scenario carries are documented in tests/scenarios/.
 *
 * --scale N makes the capture about N times the scale-1 size: the scenario
 * is built with scale N (its own scale-dependent events), then steps of a
 * small input-pipeline module (runtime.h, mk_scale_prefix) are replayed
 * before its script, as many as bring the size to N x the scale-1 size.
 * --big-module N adds a never-executed module of about N instructions;
 * --big-step N a module of about N instructions that runs and is the focus
 * (runtime.c, mk_add_big_step).
 * --modules N[,unique][,reverse][,from=K][,broken=B][,stem=NAME] adds N small
 * modules that never run, all of one name unless unique (runtime.h,
 * mk_add_many_modules): matching many modules in compare/.
 * --variant writes the same scenario in another shape (runtime.h, MK_V_*):
 * the figures stay, the event names, nesting, stats and order change.
 * --job N writes no scenario but the shape of a big real job (job.c): S
 * steps of a focus module of about N instructions on one GPU, with small
 * executions and the Python tracer's events; --size picks S for a capture
 * of about BYTES (steps counted, not written).
 * --lm SPEC writes the train step of a small transformer LM of the shape
 * SPEC asks for (lm.c): layers, batch, sequence, a Python loop, a scan or
 * Flax blocks, dtypes, remat.
 *
 * An OUT file whose name ends in .gz is written gzip'd, as users keep
 * captures. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <zlib.h>

#include "scenarios.h"

static ssize_t gz_cookie_write(void *g, const char *p, size_t n)
{
	return n == 0 ? 0 : gzwrite(g, p, (unsigned)n) == (int)n ? (ssize_t)n : -1;
}

static int gz_cookie_close(void *g) { return gzclose(g) == Z_OK ? 0 : EOF; }

/* OUT for writing: through zlib when its name ends in .gz (the writer
 * writes in blocks far below gzwrite's unsigned limit). */
static FILE *open_out(const char *path)
{
	size_t n = strlen(path);
	if (n < 3 || strcmp(path + n - 3, ".gz") != 0)
		return fopen(path, "wb");
	gzFile g = gzopen(path, "wb9");
	if (g == NULL)
		return NULL;
	cookie_io_functions_t io = { .write = gz_cookie_write, .close = gz_cookie_close };
	FILE *f = fopencookie(g, "w", io);
	if (f == NULL)
		gzclose(g);
	return f;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: xplane-mkcapture SCENARIO [--scale N] [--big-module N] [--big-step N] [--modules N[,...]] [--variant V[,V...]] [-v] OUT\n"
		   "       xplane-mkcapture --job N (--steps S | --size BYTES) [--variant V,...] OUT\n"
		   "       xplane-mkcapture --lm SPEC [-v] OUT\n"
		   "       xplane-mkcapture --list | --list-variants\n"
		   "--scale N: about N times the scale-1 size (more steps, events, kernels)\n"
		   "--big-module N: add a compiled, never executed module of about N instructions\n"
		   "--big-step N: add a module of about N instructions that runs once and is the focus\n"
		   "--modules N[,unique][,reverse][,from=K][,broken=B][,stem=NAME]: add N small modules\n"
		   "  that never run, of one name, parameters f32[K+1..K+N] (unique: STEM_<k>;\n"
		   "  reverse: f32[K+N..K+1]; every B-th HloProto cut short)\n"
		   "--variant V,...: the same figures in another shape of the events (--list-variants)\n"
		   "--job N: the shape of a big real job: S steps of a focus of about N instructions\n"
		   "  on one GPU among small executions, with Python-tracer events (--size: S for BYTES)\n"
		   "--lm SPEC: a transformer LM's train step: layers=N,batch=B,seq=S,dim=D,heads=H,vocab=V,\n"
		   "  capacity=BYTES, loop|scan|flax, dtype=f32|bf16, upcast, remat, foreign=BYTES, pre\n"
		   "  (tests/mkcapture/lm.c)\n"
		   "Writes a synthetic JAX GPU capture (OUT.xplane.pb, or a run directory OUT/\n"
		   "of <host>.xplane.pb for multi-host scenarios); an OUT ending in .gz gzip'd.\n");
}

/* Steps of the scale prefix that bring the capture to about scale x the
 * scale-1 size (the steps' size is measured, not guessed). */
static void calibrate(const mk_scenario *sc, int host, int scale, mk_scn *s)
{
	mk_scn *one = calloc(1, sizeof *one); /* megabytes: never on the stack */
	if (one == NULL)
		abort();
	one->variants = s->variants;
	sc->build(one, host, 1);
	uint64_t b1 = mk_count_bytes(one);
	mk_scn_release(one);
	free(one);
	mk_scale_prefix(s);
	uint64_t c0 = mk_count_bytes(s);
	mk_set_prefix_steps(s, 64);
	uint64_t c64 = mk_count_bytes(s);
	double per = c64 > c0 ? (double)(c64 - c0) / 64 : 1;
	double want = (double)b1 * scale - (double)c0;
	mk_set_prefix_steps(s, want > 0 ? (int64_t)(want / per + 0.5) : 0);
}

static int write_host(const mk_scenario *sc, int host, int scale, int64_t big, int64_t step,
	const char *many, const char *path, int verbose, unsigned variants)
{
	mk_scn *s = calloc(1, sizeof *s); /* megabytes: never on the stack */
	uint64_t bytes = 0, events = 0;
	FILE *f;

	if (s == NULL)
		abort();
	s->variants = variants; /* mk_scn_init keeps it */
	sc->build(s, host, scale);
	if (big > 0)
		mk_add_big_module(s, big);
	if (step > 0)
		mk_add_big_step(s, step);
	if (scale > 1)
		calibrate(sc, host, scale, s);
	char bad[128];
	if (many && mk_add_many_modules(s, many, bad, sizeof bad) != 0) {
		fprintf(stderr, "xplane-mkcapture: --modules: bad '%s'\n", bad);
		mk_scn_release(s);
		free(s);
		return 1;
	}
	f = open_out(path);
	if (!f) {
		fprintf(stderr, "xplane-mkcapture: %s: %s\n", path, strerror(errno));
		mk_scn_release(s);
		free(s);
		return 2;
	}
	setvbuf(f, NULL, _IONBF, 0); /* the writer buffers */
	int rc = mk_write_xspace(s, f, &bytes, &events);
	if (fclose(f) != 0)
		rc = -1;
	if (rc) {
		fprintf(stderr, "xplane-mkcapture: %s: write failed: %s\n", path, strerror(errno));
		mk_scn_release(s);
		free(s);
		return 2;
	}
	if (verbose) {
		fprintf(stderr, "%s: %llu bytes, %llu events, %lld prefix steps\n", path,
			(unsigned long long)bytes, (unsigned long long)events, (long long)s->prefix_steps);
		for (int i = 0; i < s->nmods; i++)
			fprintf(stderr, "  %s(%llu): %lld instructions, temp extent %lld, simulated peak %lld\n",
				hb_name(s->mods[i].hb), (unsigned long long)hb_program_id(s->mods[i].hb),
				(long long)s->mods[i].stats.n_instructions, (long long)s->mods[i].stats.temp_extent,
				(long long)s->mods[i].stats.sim_peak);
	}
	mk_scn_release(s);
	free(s);
	return 0;
}

static int write_lm(const mk_lm_opt *o, const char *path, int verbose)
{
	static mk_scn s; /* megabytes: never on the stack */
	uint64_t bytes = 0, events = 0;
	FILE *f;
	memset(&s, 0, sizeof s);
	mk_build_lm(&s, o);
	if ((f = open_out(path)) == NULL) {
		fprintf(stderr, "xplane-mkcapture: %s: %s\n", path, strerror(errno));
		mk_scn_release(&s);
		return 2;
	}
	int rc = mk_write_xspace(&s, f, &bytes, &events);
	if (fclose(f) != 0 || rc) {
		fprintf(stderr, "xplane-mkcapture: %s: write failed: %s\n", path, strerror(errno));
		mk_scn_release(&s);
		return 2;
	}
	if (verbose) /* the builder's own figures: what the tests hold the advice to */
		printf("need %lld heap_peak %lld temp %lld\n", (long long)s.mods[0].stats.need,
		       (long long)s.mods[0].stats.heap_peak, (long long)s.mods[0].stats.temp_extent);
	mk_scn_release(&s);
	return 0;
}

static int write_job(int64_t n, int64_t steps, int64_t size, const char *path, int verbose,
		     unsigned variants)
{
	mk_scn *s = calloc(1, sizeof *s); /* megabytes: never on the stack */
	uint64_t bytes = 0, events = 0;
	if (s == NULL)
		abort();
	s->variants = variants; /* mk_scn_init keeps it */
	mk_build_job(s, n);
	if (size > 0) {
		/* from the second step on: the first also writes the kernels'
		 * names and the metadata the steps share */
		mk_job_script(s, 1);
		uint64_t c1 = mk_count_bytes(s);
		mk_job_script(s, 3);
		uint64_t c3 = mk_count_bytes(s);
		double per = c3 > c1 ? (double)(c3 - c1) / 2 : 1;
		steps = size > (int64_t)c1 ? 1 + (int64_t)(((double)size - (double)c1) / per + 0.5) : 1;
		if (steps > 3) {
			/* later steps take more bytes (their times' varints grow):
			 * once more from the count at that many steps */
			mk_job_script(s, steps);
			uint64_t cs = mk_count_bytes(s);
			if (cs > c1)
				steps = 1 + (int64_t)(((double)size - (double)c1) * (double)(steps - 1) /
							  (double)(cs - c1) + 0.5);
		}
	}
	mk_job_script(s, steps);
	FILE *f = open_out(path);
	int rc = f ? 0 : -1;
	if (f) {
		setvbuf(f, NULL, _IONBF, 0); /* the writer buffers */
		rc = mk_write_xspace(s, f, &bytes, &events);
		if (fclose(f) != 0)
			rc = -1;
	}
	if (rc)
		fprintf(stderr, "xplane-mkcapture: %s: %s\n", path, strerror(errno));
	else if (verbose)
		fprintf(stderr, "%s: %llu bytes, %llu events, %lld steps, %lld Python-tracer events, focus %lld instructions\n",
			path, (unsigned long long)bytes, (unsigned long long)events, (long long)steps,
			(long long)mk_job_tracer_events(s), (long long)s->mods[0].stats.n_instructions);
	mk_scn_release(s);
	free(s);
	return rc ? 2 : 0;
}

static int64_t parse_bytes(const char *a)
{
	char *end;
	double v = strtod(a, &end);
	int64_t m = *end == 'K' ? 1ll << 10 : *end == 'M' ? 1ll << 20 : *end == 'G' ? 1ll << 30 : 1;
	if (m > 1)
		end++;
	return *end || v <= 0 || v > 1e12 ? -1 : (int64_t)(v * (double)m);
}

/* The integer of option opt (its text a) into *v: false (said on stderr)
 * when it is not one from lo to hi. */
static bool parse_count(const char *opt, const char *a, int64_t lo, int64_t hi, int64_t *v)
{
	char *end;
	long long x = strtoll(a, &end, 10);
	if (*a && !*end && x >= lo && x <= hi) {
		*v = x;
		return true;
	}
	fprintf(stderr, "xplane-mkcapture: bad %s '%s' (%lld to %lld)\n", opt, a, (long long)lo,
		(long long)hi);
	return false;
}

int main(int argc, char **argv)
{
	const char *name = NULL, *out = NULL;
	int scale = 1, verbose = 0;
	unsigned variants = 0;
	int64_t big = 0, step = 0, job = 0, steps = -1, size = 0;
	const char *lm = NULL, *many = NULL;

	for (int i = 1; i < argc; i++) {
		int64_t v;
		if (strcmp(argv[i], "--scale") == 0 && i + 1 < argc) {
			if (!parse_count("--scale", argv[++i], 1, 1000000, &v))
				return 1;
			scale = (int)v;
		} else if (strcmp(argv[i], "--big-module") == 0 && i + 1 < argc) {
			if (!parse_count("--big-module", argv[++i], 100, 10000000, &big))
				return 1;
		} else if (strcmp(argv[i], "--variant") == 0 && i + 1 < argc) {
			char bad[64];
			if (mk_parse_variants(argv[++i], &variants, bad, sizeof bad) != 0) {
				fprintf(stderr, "xplane-mkcapture: unknown variant '%s' (see --list-variants)\n", bad);
				return 1;
			}
		} else if (strcmp(argv[i], "--list-variants") == 0) {
			for (int k = 0; k < mk_nvariants; k++)
				printf("%s\t%s\n", mk_variants[k].name, mk_variants[k].summary);
			return 0;
		} else if (strcmp(argv[i], "--big-step") == 0 && i + 1 < argc) {
			if (!parse_count("--big-step", argv[++i], 1000, 10000000, &step))
				return 1;
		} else if (strcmp(argv[i], "--job") == 0 && i + 1 < argc) {
			if (!parse_count("--job", argv[++i], 1000, 10000000, &job))
				return 1;
		} else if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc) {
			if (!parse_count("--steps", argv[++i], 0, 1000000, &steps))
				return 1;
		} else if (strcmp(argv[i], "--size") == 0 && i + 1 < argc) {
			if ((size = parse_bytes(argv[++i])) < 0) {
				fprintf(stderr, "xplane-mkcapture: bad --size '%s' (bytes, or with K, M or G)\n", argv[i]);
				return 1;
			}
		} else if (strcmp(argv[i], "--modules") == 0 && i + 1 < argc) {
			many = argv[++i];
		} else if (strcmp(argv[i], "--lm") == 0 && i + 1 < argc) {
			lm = argv[++i];
		} else if (strcmp(argv[i], "-v") == 0) {
			verbose = 1;
		} else if (strcmp(argv[i], "--list") == 0) {
			for (int k = 0; k < mk_nscenarios; k++)
				printf("%s\t%s\n", mk_scenarios[k].name, mk_scenarios[k].summary);
			return 0;
		} else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return 0;
		} else if (!name) {
			name = argv[i];
		} else if (!out) {
			out = argv[i];
		} else {
			usage(stderr);
			return 1;
		}
	}
	if (lm) {
		mk_lm_opt o;
		char bad[128];
		if (mk_parse_lm(lm, &o, bad, sizeof bad) != 0) {
			fprintf(stderr, "xplane-mkcapture: --lm: bad '%s'\n", bad);
			return 1;
		}
		if (!name || out) {
			usage(stderr);
			return 1;
		}
		return write_lm(&o, name, verbose);
	}
	if (job) {
		/* the one positional argument is OUT */
		if (!name || out || (steps < 0) == (size == 0)) {
			usage(stderr);
			return 1;
		}
		return write_job(job, steps, size, name, verbose, variants);
	}
	if (!name || !out) {
		usage(stderr);
		return 1;
	}
	const mk_scenario *sc = NULL;
	for (int k = 0; k < mk_nscenarios; k++)
		if (strcmp(mk_scenarios[k].name, name) == 0)
			sc = &mk_scenarios[k];
	if (!sc) {
		fprintf(stderr, "xplane-mkcapture: unknown scenario '%s' (see --list)\n", name);
		return 1;
	}
	if (sc->hosts == 1)
		return write_host(sc, 0, scale, big, step, many, out, verbose, variants);
	if (mkdir(out, 0777) != 0 && errno != EEXIST) {
		fprintf(stderr, "xplane-mkcapture: %s: %s\n", out, strerror(errno));
		return 2;
	}
	for (int h = 0; h < sc->hosts; h++) {
		char path[4096];
		static mk_scn probe; /* mk_scn is megabytes: not on the stack beside write_host's */
		sc->build(&probe, h, 1);
		snprintf(path, sizeof path, "%s/%s.xplane.pb", out, probe.host);
		mk_scn_release(&probe);
		int rc = write_host(sc, h, scale, big, step, many, path, verbose, variants);
		if (rc)
			return rc;
	}
	return 0;
}
