/* Advice checked against what the fixes really did (issue 37, SPEC §5.3).
 *
 * `real`: the captures of ../shared/captures/jax-h200, among them fix
 * pairs (a failing step and the same step fixed, each with XLA's own
 * memory_analysis() in its facts.json) and sizes-lm.json (XLA's figures of
 * the attn model at other batch sizes); SKIP (exit 77) where ../shared is
 * absent.  Every expected figure comes from JAX's files, scen.py's shapes
 * or the README there, never from xplanefs's output.
 *
 * No argument: steps of other shapes made with `xplane-mkcapture --lm`
 * (other layer counts, a Python loop, a scan or Flax blocks, other dtypes,
 * other batches and sequences), so that the rules are not fitted to the
 * real captures; each fix is held to the builder's own figures for the
 * fixed step (the same shapes with remat, a smaller batch or sequence). */
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
#include "test_util.h"

#define MIB (1024ll * 1024)

/* ---- a capture's report ------------------------------------------------- */

/* The fix of f whose text has needle. */
static json_t *fix_with(json_t *f, const char *needle)
{
	json_t *x;
	size_t i;
	json_array_foreach(json_object_get(f, "fixes"), i, x)
		if (strstr(json_string_value(json_object_get(x, "text")), needle))
			return x;
	fail_msg("no fix with '%s' in: %s", needle, text(f));
	return NULL;
}

static long long saving(json_t *x)
{
	return json_integer_value(json_object_get(x, "saving_bytes"));
}

/* The claim is within 25% of what the fix measured (SPEC 5.3). */
static void assert_within_25(const char *what, long long claim, long long measured)
{
	fprintf(stderr, "%-40s claimed %lld, measured %lld (%.2fx)\n", what, claim, measured,
		(double)claim / (double)measured);
	if (measured <= 0 || claim * 4 < measured * 3 || claim * 4 > measured * 5)
		fail_msg("%s: the claimed saving %lld is not within 25%% of the measured %lld", what, claim,
			 measured);
}

/* The fix's verdict agrees with what the fixed step needs (fixed bytes)
 * against the capacity: "fits" only if it fits, "not enough" only if it
 * does not; "it may fit" is never wrong. */
static void assert_verdict(const char *what, json_t *x, long long fixed, long long cap)
{
	const char *t = json_string_value(json_object_get(x, "text"));
	bool fits = strstr(t, ": fits") != NULL, short_ = strstr(t, "not enough") != NULL;
	if ((fits && fixed > cap) || (short_ && fixed <= cap))
		fail_msg("%s: the verdict is wrong: the fixed step needs %lld of %lld: %s", what, fixed, cap,
			 t);
	assert_true(fits || short_ || strstr(t, "it may fit"));
}

/* ---- steps of other shapes (xplane-mkcapture --lm) ---------------------- */

/* Build the step SPEC asks for into the temporary directory: its path,
 * and the builder's own need and heap peak (NULL and a skip line without
 * the builder). */
static const char *lm(const char *spec, long long *need, long long *peak)
{
	static char path[8][4200];
	static int next;
	char cmd[8192], line[256];
	const char *exe = xpf_t_mkcapture();
	if (exe == NULL)
		return NULL;
	char *out = path[next & 7];
	snprintf(out, sizeof path[0], "%s/lm%d.xplane.pb", xpf_t_tmpdir(), next++);
	snprintf(cmd, sizeof cmd, "'%s' --lm '%s' -v '%s'", exe, spec, out);
	FILE *f = popen(cmd, "r");
	assert_non_null(f);
	long long t;
	assert_non_null(fgets(line, sizeof line, f));
	assert_int_equal(sscanf(line, "need %lld heap_peak %lld temp %lld", need, peak, &t), 3);
	assert_int_equal(pclose(f), 0);
	return out;
}

/* The step of `shape` that does not fit: built once to learn its need,
 * then with a capacity of 3/4 of it (it fails, as the real ones do). */
static const char *lm_short(const char *shape, long long *need, long long *peak, long long *cap)
{
	char spec[512];
	snprintf(spec, sizeof spec, "%s,capacity=1G", shape);
	if (lm(spec, need, peak) == NULL)
		return NULL;
	*cap = *need / 4 * 3;
	snprintf(spec, sizeof spec, "%s,capacity=%lld", shape, *cap);
	return lm(spec, need, peak);
}

#define SMALL "batch=2,seq=256,dim=128,heads=4,vocab=1024"

/* SPEC 5.3: remat saves what the repeated blocks keep beyond one block,
 * whatever shows the blocks: a Python loop over 2, 3 or 6 layers, a scan
 * over 3 or 8, Flax's Block_<i>.  Each claim is held to the same step
 * built with remat (the builder's heap peaks), and its verdict to that
 * step's need. */
static void test_lm_remat(void **state)
{
	(void)state;
	static const struct {
		const char *shape, *words;
	} cases[] = {
		{ "layers=2,loop," SMALL, "a Python loop over the 2 layers of params['layers'][N]" },
		{ "layers=3,loop," SMALL, "a Python loop over the 3 layers" },
		{ "layers=6,loop," SMALL, "a Python loop over the 6 layers" },
		{ "layers=3,scan," SMALL, "on a leading dimension of 3, the scan's length" },
		{ "layers=8,scan," SMALL, "on a leading dimension of 8, the scan's length" },
		{ "layers=3,flax," SMALL, "wrap each jit(train_step)/jvp(LM)/Block_N (3 blocks" },
		{ "layers=4,loop,dtype=bf16,batch=4,seq=512,dim=256,heads=8", "over the 4 layers" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		long long need, peak, cap, rneed, rpeak;
		char spec[512];
		const char *path = lm_short(cases[i].shape, &need, &peak, &cap);
		if (path == NULL)
			skip();
		snprintf(spec, sizeof spec, "%s,remat,capacity=%lld", cases[i].shape, cap);
		assert_non_null(lm(spec, &rneed, &rpeak));
		struct rep p;
		open_rep(&p, path, 0);
		json_t *f = need_finding(&p, "mostly-forward");
		json_t *x = fix_with(f, "checkpoint");
		assert_contains(json_string_value(json_object_get(x, "text")), cases[i].words);
		assert_within_25(cases[i].shape, saving(x), peak - rpeak);
		assert_verdict(cases[i].shape, x, rneed, cap);
		assert_null(strstr(cat(&p, "diagnosis.txt"), "helps little"));
		close_rep(&p);
	}
}

/* One block gives little, and the text says so: nothing to claim. */
static void test_lm_one_block(void **state)
{
	(void)state;
	long long need, peak, cap;
	const char *path = lm_short("layers=1," SMALL, &need, &peak, &cap);
	if (path == NULL)
		skip();
	struct rep p;
	open_rep(&p, path, 0);
	json_t *x = fix_with(need_finding(&p, "mostly-forward"), "jax.checkpoint helps little here");
	assert_int_equal(saving(x), 0);
	close_rep(&p);
}

/* Foreign arrays (issue 37): "keep it on the host" saves only what is not
 * the step's own arguments.  The same 64 MiB array beside the parameters,
 * put during the capture or before it (then one anonymous block with the
 * parameters in it): the fix claims the array's bytes either way. */
static void test_lm_foreign_before(void **state)
{
	(void)state;
	const long long foreign = 64ll << 20;
	for (int pre = 0; pre < 2; pre++) {
		long long need, peak;
		char spec[512];
		/* the step fits alone; with the array it does not */
		snprintf(spec, sizeof spec, SMALL ",foreign=64M%s,capacity=%lld", pre ? ",pre" : "",
			 foreign + (40ll << 20));
		const char *path = lm(spec, &need, &peak);
		if (path == NULL)
			skip();
		struct rep p;
		open_rep(&p, path, 0);
		json_t *f = need_finding(&p, "foreign-live-arrays");
		assert_int_equal(fig(f, "foreign_bytes"), foreign);
		json_t *x = fix_with(f, "on the host");
		assert_int_equal(saving(x), foreign);
		assert_contains(json_string_value(json_object_get(x, "text")),
				pre ? "allocated before the capture started (64.0 MiB)" :
				      "DevicePut(f32[16777216]) (64.0 MiB)");
		close_rep(&p);
	}
}

/* Silent upcasts: bf16 parameters whose scores a float64 scalar makes f32
 * at scen.py:77 (as in lm-bf16-nopre), at other layer counts: the f32
 * scores of every layer, B*H*S*S*4 bytes each, named at that line.  bf16
 * without the upcast, or f32 parameters: no silent-upcast, and "cast q, k,
 * v to bf16" only where they are f32 for real. */
static void test_lm_upcast(void **state)
{
	(void)state;
	static const int layers[] = { 2, 5 };
	for (size_t i = 0; i < 2; i++) {
		long long need, peak, cap;
		char shape[256];
		snprintf(shape, sizeof shape, "layers=%d,dtype=bf16,upcast,batch=4,seq=512,dim=256,heads=4",
			 layers[i]);
		const char *path = lm_short(shape, &need, &peak, &cap);
		if (path == NULL)
			skip();
		struct rep p;
		open_rep(&p, path, 0);
		json_t *f = need_finding(&p, "silent-upcast");
		assert_contains(text(f), "scen.py:77");
		assert_int_equal(fig(f, "f32_count"), layers[i]);
		assert_int_equal(fig(f, "f32_bytes"), layers[i] * 4ll * 4 * 512 * 512 * 4);
		assert_null(strstr(cat(&p, "diagnosis.txt"), "cast q, k, v"));
		close_rep(&p);
	}
	long long need, peak, cap;
	struct rep p;
	open_rep(&p, lm_short("layers=3,dtype=bf16,batch=4,seq=512,dim=256,heads=4", &need, &peak, &cap), 0);
	assert_null(finding(&p, "silent-upcast"));
	assert_null(strstr(cat(&p, "diagnosis.txt"), "cast q, k, v"));
	close_rep(&p);
	open_rep(&p, lm_short("layers=3,batch=4,seq=512,dim=256,heads=4", &need, &peak, &cap), 0);
	assert_null(finding(&p, "silent-upcast"));
	assert_contains(cat(&p, "diagnosis.txt"), "cast q, k, v to bf16");
	close_rep(&p);
}

/* What fits: the builder's own need at every smaller batch (sequence)
 * gives the largest that fits a capacity set between two of them; the
 * range the diagnosis gives holds it. */
static void test_lm_what_fits(void **state)
{
	(void)state;
	long long need[9], peak, cap;
	char spec[512];
	const char *base = "layers=2,seq=256,dim=128,heads=4,vocab=1024";
	for (int b = 1; b <= 8; b++) {
		snprintf(spec, sizeof spec, "%s,batch=%d,capacity=1G", base, b);
		if (lm(spec, &need[b], &peak) == NULL)
			skip();
	}
	cap = (need[5] + need[6]) / 2; /* batch 5 fits, 6 does not */
	snprintf(spec, sizeof spec, "%s,batch=8,capacity=%lld", base, cap);
	struct rep p;
	open_rep(&p, lm(spec, &need[0], &peak), 0);
	json_t *f = need_finding(&p, "plan-exceeds-pool");
	assert_int_equal(fig(f, "batch"), 8);
	assert_true(fig(f, "largest_batch_min") <= 5 && fig(f, "largest_batch_max") >= 5);
	assert_true(fig(f, "largest_batch_max") - fig(f, "largest_batch_min") <= 2);
	close_rep(&p);
	/* the sequence, in steps of 32 at S 512: 320 fits, 352 does not */
	long long n320, n352;
	base = "layers=2,batch=2,dim=128,heads=4,vocab=1024";
	snprintf(spec, sizeof spec, "%s,seq=320,capacity=1G", base);
	assert_non_null(lm(spec, &n320, &peak));
	snprintf(spec, sizeof spec, "%s,seq=352,capacity=1G", base);
	assert_non_null(lm(spec, &n352, &peak));
	snprintf(spec, sizeof spec, "%s,seq=512,capacity=%lld", base, (n320 + n352) / 2);
	open_rep(&p, lm(spec, &need[0], &peak), 0);
	f = need_finding(&p, "plan-exceeds-pool");
	assert_int_equal(fig(f, "sequence"), 512);
	assert_true(fig(f, "largest_sequence_min") <= 320 && fig(f, "largest_sequence_max") >= 320);
	close_rep(&p);
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

/* A fix pair: the claimed saving of the fix (the one whose text has
 * `needle`, in finding `code` of `before`) is within 25% of XLA's peak
 * before less XLA's peak after, and its verdict agrees with XLA's peak
 * after against the pool. */
static void check_pair(const char *before, const char *after, const char *code, const char *needle)
{
	const char *path = xpf_h200(before);
	if (path == NULL)
		skip();
	long long peak0 = xpf_h200_fact(before, "peak_memory_in_bytes");
	long long peak1 = xpf_h200_fact(after, "peak_memory_in_bytes");
	long long pool = xpf_h200_pool(before);
	assert_true(peak0 > 0 && peak1 > 0 && pool > 0);
	struct rep p;
	open_rep(&p, path, 0);
	json_t *x = fix_with(need_finding(&p, code), needle);
	char what[128];
	snprintf(what, sizeof what, "%s -> %s", before, after);
	assert_within_25(what, saving(x), peak0 - peak1);
	assert_verdict(what, x, peak1, pool);
	close_rep(&p);
}

/* attn (4 layers in a Python for loop) -> attn-remat (each block in
 * jax.checkpoint): the loop's blocks found from the lines they repeat. */
static void test_real_remat_loop(void **state)
{
	(void)state;
	check_pair("attn", "attn-remat", "mostly-forward", "jax.checkpoint");
	struct rep p;
	open_rep(&p, xpf_h200("attn"), 0);
	json_t *f = need_finding(&p, "mostly-forward");
	assert_contains(json_string_value(json_object_get(fix_with(f, "checkpoint"), "text")),
			"a Python loop over the 4 layers");
	assert_int_equal(fig(f, "blocks"), 4);
	assert_null(strstr(cat(&p, "diagnosis.txt"), "helps little"));
	close_rep(&p);
}

/* attn-scan (the same layers in jax.lax.scan) -> attn-scan-remat (the
 * scanned body checkpointed): residuals stacked on the trip count, 4. */
static void test_real_remat_scan(void **state)
{
	(void)state;
	check_pair("attn-scan", "attn-scan-remat", "mostly-forward", "checkpoint the scanned body");
	struct rep p;
	open_rep(&p, xpf_h200("attn-scan"), 0);
	json_t *f = need_finding(&p, "mostly-forward");
	assert_contains(json_string_value(json_object_get(fix_with(f, "scanned body"), "text")),
			"leading dimension of 4");
	assert_int_equal(fig(f, "blocks"), 4);
	assert_null(strstr(cat(&p, "diagnosis.txt"), "helps little"));
	close_rep(&p);
}

/* attn (S 2048) -> attn-half (S 1024). */
static void test_real_half_sequence(void **state)
{
	(void)state;
	check_pair("attn", "attn-half", "mostly-forward", "halve the sequence length");
}

/* adam-nodonate -> adam-donate (donate_argnums=(0, 1): ws and opt). */
static void test_real_donation(void **state)
{
	(void)state;
	check_pair("adam-nodonate", "adam-donate", "no-donation", "donate");
}

/* What fits, against sizes-lm.json (XLA's figures of the attn model at
 * batch 1 to 3, S 2048): batch 2 fits (2,699,444,436 B of the pool's
 * 3,003,121,664), batch 3 (2,946,523,348) only because XLA's own
 * rematerialization squeezed it (the README there): the largest batch
 * that fits is 2 to 3.  Halving the batch (4 -> 2) is a fix pair too. */
static void test_real_what_fits(void **state)
{
	(void)state;
	const char *path = xpf_h200("attn");
	if (path == NULL)
		skip();
	long long pool = xpf_h200_pool("attn"), largest = 0;
	for (long long b = 1; b <= 4; b++) {
		long long peak = b == 4 ? xpf_h200_fact("attn", "peak_memory_in_bytes") : xpf_h200_sizes_peak(b);
		assert_true(peak > 0);
		if (peak <= pool)
			largest = b;
	}
	assert_int_equal(largest, 3);
	struct rep p;
	open_rep(&p, path, 0);
	json_t *f = need_finding(&p, "plan-exceeds-pool");
	assert_int_equal(fig(f, "batch"), 4);
	assert_int_equal(fig(f, "largest_batch_max"), largest);
	assert_int_equal(fig(f, "largest_batch_min"), largest - 1);
	assert_contains(cat(&p, "diagnosis.txt"), "\n    largest batch that fits: 2 to 3 (");
	assert_int_equal(fig(f, "sequence"), 2048);
	/* attn-half: S 1024 fits */
	assert_true(xpf_h200_fact("attn-half", "peak_memory_in_bytes") <= pool);
	assert_true(fig(f, "largest_sequence_max") >= 1024);
	json_t *x = fix_with(need_finding(&p, "mostly-forward"), "halve the micro-batch");
	long long b2 = xpf_h200_sizes_peak(2);
	assert_within_25("attn batch 4 -> 2", saving(x), xpf_h200_fact("attn", "peak_memory_in_bytes") - b2);
	assert_verdict("attn batch 4 -> 2", x, b2, pool);
	close_rep(&p);
}

/* lm-bf16-nopre: bf16 parameters, yet the S x S scores are f32: `/
 * np.sqrt(dh)` promotes them at scen.py:77 (README); 5 of its 6 layers'
 * f32[B*H, S, S] = f32[32,2048,2048] at least are at the peak.  No advice
 * to cast to bf16 what is bf16.  attn (f32 parameters): no upcast. */
static void test_real_upcast(void **state)
{
	(void)state;
	const char *path = xpf_h200("lm-bf16-nopre");
	if (path == NULL)
		skip();
	struct rep p;
	open_rep(&p, path, 0);
	json_t *f = need_finding(&p, "silent-upcast");
	assert_contains(text(f), "scen.py:77");
	assert_contains(text(f), "f32[32,2048,2048]");
	assert_true(fig(f, "f32_bytes") >= 5ll * 32 * 2048 * 2048 * 4);
	assert_null(strstr(cat(&p, "diagnosis.txt"), "cast q, k, v"));
	close_rep(&p);
	open_rep(&p, xpf_h200("attn"), 0);
	assert_null(finding(&p, "silent-upcast"));
	close_rep(&p);
}


int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lm_remat),
		cmocka_unit_test(test_lm_one_block),
		cmocka_unit_test(test_lm_upcast),
		cmocka_unit_test(test_lm_what_fits),
		cmocka_unit_test(test_lm_foreign_before),
	};
	const struct CMUnitTest real[] = {
		cmocka_unit_test(test_real_convert),
		cmocka_unit_test(test_real_remat_loop),
		cmocka_unit_test(test_real_remat_scan),
		cmocka_unit_test(test_real_half_sequence),
		cmocka_unit_test(test_real_donation),
		cmocka_unit_test(test_real_what_fits),
		cmocka_unit_test(test_real_upcast),
	};
	bool want_real;
	int rc = xpf_test_group(argc, argv, &want_real);
	if (rc >= 0)
		return rc;
	if (!want_real)
		return cmocka_run_group_tests_name("advice", tests, NULL, NULL);
	if (access(xpf_h200_dir(), R_OK | X_OK) != 0) {
		printf("SKIP: %s is absent (set XPF_SHARED): the tests on jax-h200 did not run\n",
		       xpf_h200_dir());
		return XPF_TEST_SKIP;
	}
	return cmocka_run_group_tests_name("advice-real", real, NULL, NULL);
}
