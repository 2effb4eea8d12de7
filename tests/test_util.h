/* What the cmocka test programs share (test_util.c): where ../shared and
 * the scenario builder are, one temporary directory per program, and a
 * report opened as users read it (its files, diagnosis.json's findings and
 * their figures, a TSV's fields by column name).  Every helper fails the test (cmocka) on an error of
 * xplanefs, and says "skip: …" on a line of its own where something the
 * test needs is absent (scripts/test counts those lines). */
#ifndef XPF_TESTS_TEST_UTIL_H
#define XPF_TESTS_TEST_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <jansson.h>

#include "capture/input.h"
#include "tree/report.h"

/* ---- places ---------------------------------------------------------------- */

/* $XPF_SHARED/rel (../shared without it), or NULL and a skip line when it
 * is absent.  The string lives until 8 more calls. */
const char *xpf_t_shared(const char *rel);
/* A real capture: xpf_t_shared("captures/<name>"). */
const char *xpf_t_capture(const char *name);
/* The program's temporary directory (made on first use, removed at exit). */
const char *xpf_t_tmpdir(void);
/* $XPF_BUILD/tests/mkcapture/xplane-mkcapture, or NULL and a skip line
 * when it is not built. */
const char *xpf_t_mkcapture(void);
/* `xplane-mkcapture ARGS <tmp>/OUT` (args: the builder's arguments before
 * the output path, quoted by the caller), made once per OUT: its path
 * (until 8 more calls), or NULL where the builder is absent. */
const char *xpf_t_build(const char *out, const char *args);
/* A scenario of the builder as <tmp>/<name>.xplane.pb (a run directory of
 * that name for a multi-host scenario). */
const char *scenario(const char *name);

/* ---- a report ------------------------------------------------------------- */

struct rep {
	xpf_input *in;
	xpf_report *r;
	xpf_options opt;
	json_t *diag;
	char prefix[256]; /* "hosts/<host>/" to read one host of a run directory */
};

/* Open path with the default options (--capacity capacity where not 0):
 * false when path cannot be read, a test failure when it does not open. */
bool open_rep(struct rep *p, const char *path, uint64_t capacity);
void close_rep(struct rep *p);
/* The bytes of p's file path (under p->prefix), NUL-terminated, owned by
 * the report. */
const char *cat(struct rep *p, const char *path);
/* diagnosis.json (parsed once). */
json_t *diag_json(struct rep *p);
/* The finding of that code, or NULL; need_finding fails without it. */
json_t *finding(struct rep *p, const char *code);
json_t *need_finding(struct rep *p, const char *code);
/* A finding's figure: an integer (fig) or a string (figs); fails when
 * absent or of the other kind. */
long long fig(json_t *f, const char *key);
const char *figs(json_t *f, const char *key);
const char *text(json_t *f);
/* Fails, showing both, unless needle is in hay. */
void assert_contains(const char *hay, const char *needle);
/* The first line of text that starts with prefix (a copy, living until
 * the next call); fails, showing text, without one. */
const char *line_from(const char *text, const char *prefix);

/* ---- a TSV file (SPEC §3: a header line, then tab-separated rows) --------- */

/* The field of column col in the first row of tsv whose column key holds
 * exactly val (a copy, living until 8 more calls); fails, showing the file,
 * where either column or such a row is absent.  For asserting one figure
 * of a row against its independent source, not the row's bytes. */
const char *tsv_field(const char *tsv, const char *key, const char *val, const char *col);
/* A column of a row and the value it must hold (assert_row). */
struct tsv_want {
	const char *col, *val;
};
/* Fails, naming the column, unless the row of tsv whose column key holds
 * val has each of want's n values. */
void assert_row(const char *tsv, const char *key, const char *val, const struct tsv_want *want, size_t n);

#endif
