/* For the cmocka test programs whose tests fall in two groups: those that
 * need only what the test makes itself (run with no argument), and those
 * that read the real captures of ../shared/captures (argument `real`).
 * tests/meson.build registers each group as its own test (`plan`,
 * `plan-real`).  The real group exits 77 when the captures are absent, so
 * that meson reports SKIP instead of an OK over tests that did not run; the
 * other group never looks at ../shared. */
#ifndef XPF_TESTS_TEST_GROUP_H
#define XPF_TESTS_TEST_GROUP_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* meson's (and automake's) exit status for a test that did not run. */
#define XPF_TEST_SKIP 77

/* Which group argv asks for: *real is set and -1 returned to run it, or the
 * status main must return at once (77: the real captures are absent; 2: a
 * bad argument). */
static inline int xpf_test_group(int argc, char **argv, bool *real)
{
	*real = false;
	if (argc == 1)
		return -1;
	if (argc == 2 && strcmp(argv[1], "real") == 0) {
		const char *s = getenv("XPF_SHARED");
		char dir[4096];
		snprintf(dir, sizeof dir, "%s/captures", s ? s : "../shared");
		if (access(dir, R_OK | X_OK) != 0) {
			printf("SKIP: %s is absent (set XPF_SHARED): the tests on real captures did not run\n",
			       dir);
			return XPF_TEST_SKIP;
		}
		*real = true;
		return -1;
	}
	fprintf(stderr, "usage: %s [real]\n", argv[0]);
	return 2;
}

#endif
