/* xplane-mkcapture SCENARIO [--scale N] OUT
 *
 * Writes a synthetic JAX GPU profiler capture (an XSpace, as
 * `jax.profiler.trace` saves it) for one of the project's scenarios.  The
 * figures each scenario carries are documented in tests/scenarios/. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "scenarios.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: xplane-mkcapture SCENARIO [--scale N] [-v] OUT\n"
		   "       xplane-mkcapture --list\n"
		   "Writes a synthetic JAX GPU capture (OUT.xplane.pb, or a run directory OUT/\n"
		   "of <host>.xplane.pb for multi-host scenarios).\n");
}

static int write_host(const mk_scenario *sc, int host, int scale, const char *path, int verbose)
{
	mk_scn s;
	uint64_t bytes = 0, events = 0;
	FILE *f;
	static char iobuf[1 << 20];

	sc->build(&s, host, scale);
	f = fopen(path, "wb");
	if (!f) {
		fprintf(stderr, "xplane-mkcapture: %s: %s\n", path, strerror(errno));
		mk_scn_release(&s);
		return 2;
	}
	setvbuf(f, iobuf, _IOFBF, sizeof iobuf);
	int rc = mk_write_xspace(&s, f, &bytes, &events);
	if (fclose(f) != 0)
		rc = -1;
	if (rc) {
		fprintf(stderr, "xplane-mkcapture: %s: write failed: %s\n", path, strerror(errno));
		mk_scn_release(&s);
		return 2;
	}
	if (verbose) {
		fprintf(stderr, "%s: %llu bytes, %llu events\n", path, (unsigned long long)bytes,
			(unsigned long long)events);
		for (int i = 0; i < s.nmods; i++)
			fprintf(stderr, "  %s(%llu): %lld instructions, temp extent %lld, simulated peak %lld\n",
				hb_name(s.mods[i].hb), (unsigned long long)hb_program_id(s.mods[i].hb),
				(long long)s.mods[i].stats.n_instructions, (long long)s.mods[i].stats.temp_extent,
				(long long)s.mods[i].stats.sim_peak);
	}
	mk_scn_release(&s);
	return 0;
}

int main(int argc, char **argv)
{
	const char *name = NULL, *out = NULL;
	int scale = 1, verbose = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--scale") == 0 && i + 1 < argc) {
			char *end;
			long v = strtol(argv[++i], &end, 10);
			if (*end || v < 1 || v > 1000000) {
				fprintf(stderr, "xplane-mkcapture: bad --scale '%s'\n", argv[i]);
				return 1;
			}
			scale = (int)v;
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
		return write_host(sc, 0, scale, out, verbose);
	if (mkdir(out, 0777) != 0 && errno != EEXIST) {
		fprintf(stderr, "xplane-mkcapture: %s: %s\n", out, strerror(errno));
		return 2;
	}
	for (int h = 0; h < sc->hosts; h++) {
		char path[4096];
		mk_scn probe;
		sc->build(&probe, h, 1);
		snprintf(path, sizeof path, "%s/%s.xplane.pb", out, probe.host);
		mk_scn_release(&probe);
		int rc = write_host(sc, h, scale, path, verbose);
		if (rc)
			return rc;
	}
	return 0;
}
