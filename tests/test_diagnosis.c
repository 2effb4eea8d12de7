/* The diagnosis (issue 6): every scenario capture gets exactly its intended
 * codes with their figures, and every real capture of ../shared/captures
 * gets a sensible diagnosis with clean (or explained) checks.  Scenario
 * captures are built with $XPF_BUILD/tests/mkcapture/xplane-mkcapture into
 * a temporary directory; each test skips, saying so, when what it needs is
 * absent. */
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

#include "tree/report.h"
#include "capture/input.h"
#include "common/buf.h"
#include "test_group.h"
#include "test_util.h"

/* Exactly these codes (order aside). */
static void assert_codes(struct rep *p, const char *const *codes, size_t n)
{
	json_t *fs = json_object_get(diag_json(p), "findings"), *f;
	size_t i;
	json_array_foreach(fs, i, f) {
		const char *c = json_string_value(json_object_get(f, "code"));
		bool ok = false;
		for (size_t k = 0; k < n && !ok; k++)
			ok = strcmp(codes[k], c) == 0;
		if (!ok)
			fail_msg("unexpected code %s in:\n%s", c, cat(p, "diagnosis.txt"));
	}
	for (size_t k = 0; k < n; k++)
		need_finding(p, codes[k]);
}

/* Every finding is well-formed: tag, evidence paths that exist, fixes with
 * a saving, a cost and the inferred tag. */
static void assert_well_formed(struct rep *p)
{
	json_t *fs = json_object_get(diag_json(p), "findings"), *f;
	size_t i;
	assert_true(json_array_size(fs) > 0);
	json_array_foreach(fs, i, f) {
		const char *tag = json_string_value(json_object_get(f, "tag"));
		assert_non_null(tag);
		assert_true(!strcmp(tag, "read") || !strcmp(tag, "measured") || !strcmp(tag, "inferred"));
		assert_true(strlen(text(f)) > 0);
		json_t *ev = json_object_get(f, "evidence"), *e, *x;
		size_t j;
		json_array_foreach(ev, j, e) {
			char path[4096];
			snprintf(path, sizeof path, "%s%s", p->prefix, json_string_value(e));
			/* runtime/executions/<n>/ exists once the runtime is read */
			xpf_node *n = NULL;
			xpf_error err = { 0 };
			assert_int_equal(xpf_report_resolve(p->r, path, &n, &err), XPF_OK);
			if (n == NULL)
				fail_msg("evidence %s is not in the tree", path);
		}
		json_array_foreach(json_object_get(f, "fixes"), j, x) {
			assert_true(json_is_integer(json_object_get(x, "saving_bytes")));
			assert_string_equal(json_string_value(json_object_get(x, "tag")), "inferred");
			assert_true(strlen(json_string_value(json_object_get(x, "cost"))) > 0);
		}
	}
	const char *checks = cat(p, "checks.txt");
	if (strstr(checks, "FAIL\t"))
		fail_msg("checks.txt has a FAIL:\n%s", checks);
}

/* ---- the three reference scenarios (seeds/oom-from-a-capture-guide) ---- */

static void test_attention(void **state)
{
	struct rep p;
	const char *path = scenario("attention-too-big");
	if (path == NULL)
		skip();
	assert_true(open_rep(&p, path, 0));
	static const char *const codes[] = { "plan-exceeds-pool", "mostly-forward", "allocator-retry",
					     "never-launched", "xla-remat" };
	assert_codes(&p, codes, 5);
	assert_well_formed(&p);

	json_t *f = need_finding(&p, "plan-exceeds-pool");
	assert_int_equal(fig(f, "capacity_bytes"), 2995650816ll);
	assert_contains(text(f), "needs 3.72 GiB > capacity 2.79 GiB");
	assert_true(fig(f, "need_bytes") > fig(f, "capacity_bytes"));
	assert_int_equal(fig(f, "need_bytes"),
			 fig(f, "parameters_bytes") + fig(f, "non_aliased_outputs_bytes") +
			 fig(f, "temp_bytes") + fig(f, "constants_bytes"));
	assert_string_equal(json_string_value(json_object_get(f, "tag")), "measured");
	/* the temp block as XLA's OOM message prints it (seed: "3.41GiB"),
	 * named from the events: the first planned allocation that never came */
	assert_contains(text(f), "Out of memory while trying to allocate 3.41GiB");
	assert_int_equal(fig(f, "failed_request_bytes"), 3664773120ll);
	assert_contains(text(f), "freeing other arrays cannot help");
	assert_contains(text(f), "forward 81.6%");

	f = need_finding(&p, "mostly-forward");
	assert_string_equal(figs(f, "share_pct"), "81.6");
	assert_contains(text(f), "81.6% of the heap peak");
	assert_int_equal(fig(f, "largest_group_count"), 5);
	assert_contains(text(f), "5 x f32[8,8,1024,1024]");
	assert_contains(text(f), "softmax");
	json_t *fixes = json_object_get(f, "fixes");
	assert_true(json_array_size(fixes) >= 4);
	const char *want[] = { "jax.checkpoint", "micro-batch", "sequence length", "fused attention" };
	for (size_t k = 0; k < 4; k++) {
		json_t *x = json_array_get(fixes, k);
		assert_contains(json_string_value(json_object_get(x, "text")), want[k]);
		assert_true(json_integer_value(json_object_get(x, "saving_bytes")) > 0);
	}
	/* SPEC 5.3: remat saves what the 5 repeated blocks keep beyond one
	 * block: 5 x 464 MiB (ln, q, k, v, probs, attn_out, up, gelu) of the
	 * forward-kept are in block_0..4, so 4/5 of 2320 MiB = 1856 MiB */
	assert_int_equal(json_integer_value(json_object_get(json_array_get(fixes, 0), "saving_bytes")),
			 1946157056ll);
	assert_contains(json_string_value(json_object_get(json_array_get(fixes, 0), "text")),
			"wrap each jit(step)/jvp(model)/block_N (5 blocks keep 2.27 GiB");
	assert_contains(json_string_value(json_object_get(json_array_get(fixes, 3), "text")),
			"implementation='cudnn'");
	assert_contains(json_string_value(json_object_get(json_array_get(fixes, 3), "text")),
			"they are f32 here");
	assert_contains(json_string_value(json_object_get(json_array_get(fixes, 0), "text")), ": fits");

	f = need_finding(&p, "allocator-retry");
	assert_int_equal(fig(f, "count"), 1);
	assert_contains(text(f), "longest 10.0 s");
	assert_contains(text(f), "launched: no");
	f = need_finding(&p, "xla-remat");
	assert_int_equal(fig(f, "count"), 89);

	/* focus -> the failing module */
	xpf_node *n = NULL;
	xpf_error err = { 0 };
	const char *target;
	assert_int_equal(xpf_report_resolve(p.r, "focus", &n, &err), XPF_OK);
	assert_non_null(n);
	assert_int_equal(xpf_node_readlink(n, &target, &err), XPF_OK);
	assert_string_equal(target, "modules/jit_step(2811)");
	assert_contains(cat(&p, "diagnosis.txt"), "[measured] plan-exceeds-pool: ");
	assert_contains(cat(&p, "diagnosis.txt"), "    [inferred] fix: wrap each jit(step)/jvp(model)/block_N");
	close_rep(&p);
}

static void test_grads_kept(void **state)
{
	struct rep p;
	const char *path = scenario("grads-kept");
	if (path == NULL)
		skip();
	assert_true(open_rep(&p, path, 0));
	assert_well_formed(&p);
	assert_null(finding(&p, "plan-exceeds-pool"));
	assert_null(finding(&p, "near-fit"));
	assert_null(finding(&p, "mostly-forward"));
	assert_null(finding(&p, "no-donation"));
	assert_null(finding(&p, "allocator-retry"));
	assert_null(finding(&p, "never-launched"));
	json_t *f = need_finding(&p, "growth-per-execution");
	assert_int_equal(fig(f, "growth_bytes"), 104ll * 1024 * 1024);
	/* the gradients (104 MiB) plus the loss and the tuple */
	assert_int_equal(fig(f, "non_aliased_outputs_bytes"), 109052012ll);
	assert_string_equal(figs(f, "ratio_to_non_aliased_outputs"), "1.00");
	assert_int_equal(fig(f, "first_in_use_bytes"), 316ll * 1024 * 1024);
	assert_contains(text(f), "+104.0 MiB per execution; that is 1.00x the non-aliased outputs");
	assert_contains(text(f), "append");
	assert_string_equal(json_string_value(json_object_get(f, "tag")), "measured");
	assert_true(json_array_size(json_object_get(f, "fixes")) >= 3);
	f = need_finding(&p, "fits");
	assert_int_equal(fig(f, "need_bytes"), 826277996ll);
	assert_int_equal(fig(f, "headroom_bytes"), 2995650816ll - 826277996ll);
	assert_contains(text(f), "needs 788.0 MiB of capacity 2.79 GiB");
	close_rep(&p);
}

static void test_no_donation(void **state)
{
	struct rep p;
	const char *path = scenario("no-donation");
	if (path == NULL)
		skip();
	assert_true(open_rep(&p, path, 0));
	assert_well_formed(&p);
	static const char *const codes[] = { "plan-exceeds-pool", "no-donation", "allocator-retry",
					     "never-launched" };
	assert_codes(&p, codes, 4);
	json_t *f = need_finding(&p, "no-donation");
	assert_int_equal(fig(f, "saving_bytes"), 1902ll * 1024 * 1024);
	assert_true(fig(f, "parameters_bytes") >= 1902ll * 1024 * 1024);
	assert_int_equal(fig(f, "donated_bytes"), 0);
	assert_contains(text(f), "could be saved by donating them");
	json_t *x = json_array_get(json_object_get(f, "fixes"), 0);
	/* SPEC 5.3: the Python arguments (entry parameters' op_name), never
	 * HLO parameter numbers as argnums */
	assert_contains(json_string_value(json_object_get(x, "text")), "donate_argnames=('state', 'replay')");
	assert_contains(json_string_value(json_object_get(x, "text")), "14 leaves, e.g. state.params['dense_0']");
	assert_int_equal(json_integer_value(json_object_get(x, "saving_bytes")), 1902ll * 1024 * 1024);
	assert_contains(json_string_value(json_object_get(x, "text")), ": fits");
	f = need_finding(&p, "plan-exceeds-pool");
	assert_contains(text(f), "needs 3.88 GiB > capacity 2.79 GiB");
	/* SPEC 5.3: the events show an output failing, not the temp block:
	 * the new replay obs, f32[1048576,384] (1.50 GiB), after 9 outputs */
	assert_int_equal(fig(f, "failed_request_bytes"), 1610612736ll);
	assert_contains(text(f), "output f32[1048576,384]{1,0} of loop_dynamic_update_slice_fusion.0");
	assert_contains(text(f), "Out of memory while trying to allocate 1.50GiB");
	close_rep(&p);
}

/* ---- every scenario against its tests/scenarios/<name>.json ------------- */

/* The intended codes (and figures) of the "diagnosis" section, in any of
 * the shapes: ["code", ...], [{"code","figures"}...], {"codes":[...]},
 * {"<code>": {figures}}. */
static void check_intended(struct rep *p, const char *name, json_t *dg)
{
	json_t *list = json_is_object(dg) && json_object_get(dg, "codes") ? json_object_get(dg, "codes") :
		       json_is_object(dg) && json_object_get(dg, "findings") ? json_object_get(dg, "findings") : dg;
	const char *codes[64] = { 0 };
	json_t *want[64] = { 0 };
	size_t n = 0;
	if (json_is_array(list)) {
		size_t i;
		json_t *e;
		json_array_foreach(list, i, e) {
			if (n == 64)
				break;
			codes[n] = json_is_string(e) ? json_string_value(e) :
				   json_string_value(json_object_get(e, "code"));
			want[n] = json_is_object(e) ? json_object_get(e, "figures") : NULL;
			n++;
		}
	} else if (json_is_object(list)) {
		const char *k;
		json_t *v;
		json_object_foreach(list, k, v) {
			if (n == 64)
				break;
			codes[n] = k;
			want[n] = json_is_object(v) && json_object_get(v, "figures") ? json_object_get(v, "figures") : v;
			n++;
		}
	}
	assert_true(n > 0);
	fprintf(stderr, "%s: %zu intended codes\n", name, n);
	assert_codes(p, codes, n);
	for (size_t i = 0; i < n; i++) {
		if (!json_is_object(want[i]))
			continue;
		json_t *f = need_finding(p, codes[i]);
		json_t *have = json_object_get(f, "figures");
		const char *k;
		json_t *v;
		json_object_foreach(want[i], k, v) {
			json_t *h = json_object_get(have, k);
			if (h == NULL)
				fail_msg("%s %s: figure %s missing", name, codes[i], k);
			if (!json_equal(h, v))
				fail_msg("%s %s: figure %s differs", name, codes[i], k);
		}
	}
}

/* A figure of a finding, when both exist, equals the scenario's value. */
static void same(struct rep *p, const char *name, const char *code, const char *key, json_t *want)
{
	json_t *f = finding(p, code);
	if (f == NULL || want == NULL)
		return;
	json_t *have = json_object_get(json_object_get(f, "figures"), key);
	if (have == NULL || !json_equal(have, want))
		fail_msg("%s %s: figure %s is %lld, the scenario says %lld", name, code, key,
			 (long long)json_integer_value(have), (long long)json_integer_value(want));
}

/* A copy finding (param-layout-copy / param-convert-copy) against the
 * scenario's <what>_copy_bytes and _count: absent when the bytes are 0. */
static void check_copy(struct rep *p, const char *name, json_t *plan, const char *what, const char *code)
{
	char key[64];
	snprintf(key, sizeof key, "%s_copy_bytes", what);
	json_t *bytes = json_object_get(plan, key);
	if (bytes == NULL)
		return;
	json_t *f = finding(p, code);
	if (json_integer_value(bytes) == 0) {
		if (f)
			fail_msg("%s: %s found, the scenario has no such copies", name, code);
		return;
	}
	if (f == NULL)
		fail_msg("%s: no %s finding for %lld bytes of copies", name, code, (long long)json_integer_value(bytes));
	same(p, name, code, "bytes", bytes);
	snprintf(key, sizeof key, "%s_copy_count", what);
	same(p, name, code, "count", json_object_get(plan, key));
}

/* The scenario figures no finding carries as such: copies, fragmentation
 * share, the human strings (as the text shows them), devices, modules
 * that ran. */
static void check_more_figures(struct rep *p, const char *name, json_t *plan, json_t *rt)
{
	char want[128];
	check_copy(p, name, plan, "layout", "param-layout-copy");
	check_copy(p, name, plan, "convert", "param-convert-copy");
	same(p, name, "temp-fragmentation", "fragmentation_pct", json_object_get(plan, "fragmentation_pct"));
	if (json_object_get(plan, "fragmentation_pct"))
		assert_non_null(finding(p, "temp-fragmentation"));
	/* every human string is what the tree shows for that figure */
	xpf_buf all = XPF_BUF_INIT;
	xpf_buf_adds(&all, cat(p, "diagnosis.txt"));
	xpf_buf_adds(&all, cat(p, "runtime/summary.txt"));
	const char *focus = json_string_value(json_object_get(diag_json(p), "module"));
	if (focus) {
		snprintf(want, sizeof want, "modules/%s/summary.txt", focus);
		xpf_buf_adds(&all, cat(p, want));
	}
	json_t *hs[2] = { json_object_get(plan, "human"), json_object_get(rt, "human") };
	for (int i = 0; i < 2; i++) {
		const char *k;
		json_t *v;
		json_object_foreach(hs[i], k, v)
			if (strstr(all.data, json_string_value(v)) == NULL)
				fail_msg("%s: human %s '%s' is not in diagnosis.txt, runtime/summary.txt or the focus summary.txt", name, k,
					 json_string_value(v));
	}
	xpf_buf_release(&all);
	json_t *dev = json_object_get(rt, "devices") ? json_object_get(rt, "devices") :
		      json_object_get(rt, "devices_per_host");
	if (dev) {
		snprintf(want, sizeof want, "\ndevices: %lld\n", (long long)json_integer_value(dev));
		assert_contains(cat(p, "summary.txt"), want);
	}
	json_t *ran = json_object_get(rt, "modules_executed");
	if (ran) {
		/* modules/index.tsv: the last column counts each module's executions */
		const char *idx = cat(p, "modules/index.tsv");
		long long n = 0;
		for (const char *l = strchr(idx, '\n'); l && l[1]; l = strchr(l + 1, '\n')) {
			const char *end = strchr(l + 1, '\n'), *tab = NULL;
			for (const char *q = l + 1; q < end; q++)
				if (*q == '\t')
					tab = q;
			n += tab && atoll(tab + 1) > 0;
		}
		assert_int_equal(n, json_integer_value(ran));
	}
}

static void check_figures(struct rep *p, const char *name, json_t *sj)
{
	json_t *plan = json_object_get(sj, "plan"), *rt = json_object_get(sj, "runtime");
	json_t *d = diag_json(p);
	if (rt && json_object_get(rt, "capacity_bytes"))
		assert_true(json_equal(json_object_get(d, "capacity_bytes"), json_object_get(rt, "capacity_bytes")));
	/* SPEC §5.1: a pool that is not 0.75 x memory_size (+-1%) says the
	 * fraction was set (scan-fits: 95%) */
	json_t *mem = rt ? json_object_get(rt, "memory_size_bytes") : NULL, *cap = rt ? json_object_get(rt, "capacity_bytes") : NULL;
	if (mem && cap) {
		double m = (double)json_integer_value(mem), c = (double)json_integer_value(cap);
		bool set = c > 0.7575 * m || c < 0.7425 * m;
		if (json_is_true(json_object_get(d, "fraction_set")) != set)
			fail_msg("%s: fraction_set is %s, the scenario's pool is %.1f%% of memory_size", name,
				 set ? "false" : "true", 100 * c / m);
		if (set)
			assert_contains(cat(p, "diagnosis.txt"), "not JAX's default 75%: the memory fraction is set");
	}
	if (plan) {
		const char *verdicts[] = { "plan-exceeds-pool", "near-fit", "fits" };
		for (int i = 0; i < 3; i++)
			same(p, name, verdicts[i], "need_bytes", json_object_get(plan, "need_bytes"));
		same(p, name, "plan-exceeds-pool", "parameters_bytes", json_object_get(plan, "parameters_bytes"));
		same(p, name, "plan-exceeds-pool", "temp_bytes", json_object_get(plan, "temp_bytes"));
		same(p, name, "plan-exceeds-pool", "non_aliased_outputs_bytes",
		     json_object_get(plan, "non_aliased_outputs_bytes"));
		same(p, name, "plan-exceeds-pool", "heap_peak_bytes", json_object_get(plan, "heap_peak_bytes"));
		same(p, name, "xla-remat", "count", json_object_get(plan, "remat_instructions"));
		same(p, name, "growth-per-execution", "non_aliased_outputs_bytes",
		     json_object_get(plan, "non_aliased_outputs_bytes"));
		json_t *roles = json_object_get(plan, "roles_bytes");
		if (roles) {
			same(p, name, "mostly-forward", "role_bytes", json_object_get(roles, "forward"));
			same(p, name, "plan-exceeds-pool", "role_forward_bytes", json_object_get(roles, "forward"));
			same(p, name, "plan-exceeds-pool", "role_backward_bytes", json_object_get(roles, "backward"));
		}
	}
	check_more_figures(p, name, plan, rt);
	if (rt) {
		same(p, name, "growth-per-execution", "growth_bytes", json_object_get(rt, "growth_per_execution_bytes"));
		same(p, name, "growth-per-execution", "first_in_use_bytes", json_object_get(rt, "in_use_at_start_first_bytes"));
		same(p, name, "growth-per-execution", "last_in_use_bytes", json_object_get(rt, "in_use_at_start_last_bytes"));
		same(p, name, "growth-per-execution", "executions", json_object_get(rt, "executions"));
		if (json_integer_value(json_object_get(rt, "retries")) == 1)
			same(p, name, "allocator-retry", "longest_ns", json_object_get(rt, "retry_ns"));
		same(p, name, "allocator-retry", "count", json_object_get(rt, "retries"));
		/* an eager program: the outputs of many modules hold the memory */
		same(p, name, "foreign-live-arrays", "other_modules_outputs_bytes",
		     json_object_get(rt, "other_modules_outputs_bytes"));
		if (json_object_get(rt, "other_modules_outputs_bytes"))
			assert_non_null(finding(p, "foreign-live-arrays"));
		json_t *nl = json_object_get(rt, "never_launched");
		json_t *nlf = finding(p, "never-launched");
		if (json_array_size(nl) == 1 && nlf &&
		    json_object_get(json_object_get(nlf, "figures"), "module_execution") == NULL)
			/* an ambiguous execution (retrace-oom-ambiguous) is no
			 * module's k-th: the finding names its candidates */
			assert_contains(text(nlf), "not linked to one module");
		else if (json_array_size(nl) == 1)
			same(p, name, "never-launched", "module_execution", json_array_get(nl, 0));
		json_t *f = finding(p, "growth-per-execution");
		json_t *between = json_object_get(rt, "between");
		const char *k;
		json_t *v;
		if (f)
			json_object_foreach(between, k, v)
				assert_contains(text(f), k);
	}
}

/* One host's tree (p->prefix) against the scenario; true when its intended
 * codes were checked. */
static bool check_one(struct rep *p, const char *name, json_t *sj, const char *jpath)
{
	json_t *dg = json_object_get(sj, "diagnosis");
	assert_well_formed(p);
	if (sj)
		check_figures(p, name, sj);
	if (dg == NULL) {
		fprintf(stderr, "%s%s: no \"diagnosis\" in %s; well-formedness checked only\n", p->prefix, name, jpath);
		return false;
	}
	check_intended(p, name, dg);
	return true;
}

/* The top of a run directory: one line per host in diagnosis.txt, every
 * host in diagnosis.json's "hosts" with its findings, summary.txt's count. */
static void check_cross_host(struct rep *p, const char *name, json_t *hosts)
{
	const char *txt = cat(p, "diagnosis.txt"), *sum = cat(p, "summary.txt");
	char want[512];
	size_t i, k;
	json_t *h, *e;
	json_error_t je;
	json_t *top = json_loads(cat(p, "diagnosis.json"), 0, &je);
	if (top == NULL)
		fail_msg("%s diagnosis.json: %s (line %d)", name, je.text, je.line);
	json_t *list = json_object_get(top, "hosts");
	assert_int_equal(json_array_size(list), json_array_size(hosts));
	snprintf(want, sizeof want, "hosts: %zu\n", json_array_size(hosts));
	assert_contains(sum, want);
	json_array_foreach(hosts, i, h) {
		const char *host = json_string_value(h);
		snprintf(want, sizeof want, "\n%s: {", host);
		assert_contains(txt, want);
		snprintf(want, sizeof want, "-> hosts/%s/diagnosis.txt\n", host);
		assert_contains(txt, want);
		bool seen = false;
		json_array_foreach(list, k, e)
			if (strcmp(json_string_value(json_object_get(e, "host")), host) == 0) {
				seen = true;
				/* the host's own findings, code for code */
				char path[512];
				snprintf(path, sizeof path, "hosts/%s/diagnosis.json", host);
				json_t *own = json_loads(cat(p, path), 0, &je);
				if (own == NULL)
					fail_msg("%s %s: %s (line %d)", name, path, je.text, je.line);
				json_t *a = json_object_get(e, "findings"), *b = json_object_get(own, "findings");
				assert_true(json_array_size(a) > 0);
				assert_int_equal(json_array_size(a), json_array_size(b));
				for (size_t f = 0; f < json_array_size(a); f++)
					assert_string_equal(
						json_string_value(json_object_get(json_array_get(a, f), "code")),
						json_string_value(json_object_get(json_array_get(b, f), "code")));
				json_decref(own);
			}
		if (!seen)
			fail_msg("%s: host %s is not in the top diagnosis.json", name, host);
	}
	/* .findings: the cross-host host-skew ones first (test_hosts checks
	 * them), then every host's, in host order, each naming its host */
	size_t nall = 0, nskew = 0;
	json_t *tf = json_object_get(top, "findings");
	while (nskew < json_array_size(tf) &&
	       strcmp(json_string_value(json_object_get(json_array_get(tf, nskew), "code")), "host-skew") == 0)
		nskew++;
	json_array_foreach(list, k, e) {
		json_t *own = json_object_get(e, "findings");
		for (size_t f = 0; f < json_array_size(own); f++, nall++) {
			json_t *g = json_array_get(json_object_get(top, "findings"), nskew + nall);
			assert_non_null(g);
			assert_string_equal(json_string_value(json_object_get(g, "host")),
					    json_string_value(json_object_get(e, "dir")));
			assert_string_equal(json_string_value(json_object_get(g, "code")),
					    json_string_value(json_object_get(json_array_get(own, f), "code")));
		}
	}
	assert_int_equal(json_array_size(json_object_get(top, "findings")), nskew + nall);
	assert_true(nall > 0);
	const char *capname = json_string_value(json_object_get(top, "capture"));
	assert_non_null(capname);
	assert_int_equal(strncmp(capname, name, strlen(name)), 0); /* the run directory */
	json_decref(top);
	fprintf(stderr, "%s: %zu hosts at the top\n", name, json_array_size(hosts));
}

static void test_all_scenarios(void **state)
{
	const char *build = getenv("XPF_BUILD"), *src = getenv("XPF_SOURCE");
	char exe[4096], cmd[8192], line[1024];
	size_t checked = 0, listed = 0;

	snprintf(exe, sizeof exe, "%s/tests/mkcapture/xplane-mkcapture", build ? build : "build");
	if (access(exe, X_OK) != 0) {
		fprintf(stderr, "skip: %s is absent\n", exe);
		skip();
	}
	snprintf(cmd, sizeof cmd, "'%s' --list", exe);
	FILE *ls = popen(cmd, "r");
	assert_non_null(ls);
	while (fgets(line, sizeof line, ls)) {
		char *tab = strchr(line, '\t');
		if (tab)
			*tab = 0;
		line[strcspn(line, "\n")] = 0;
		if (!*line)
			continue;
		listed++;
		const char *path = scenario(line);
		struct rep p;
		assert_true(open_rep(&p, path, 0));
		char jpath[4096];
		json_error_t je;
		snprintf(jpath, sizeof jpath, "%s/tests/scenarios/%s.json", src ? src : ".", line);
		json_t *sj = access(jpath, R_OK) == 0 ? json_load_file(jpath, 0, &je) : NULL;
		json_t *hosts = json_object_get(sj, "hosts"), *h;
		size_t i;
		if (json_array_size(hosts) == 0) {
			if (check_one(&p, line, sj, jpath))
				checked++;
		} else {
			/* a run directory: findings per host under hosts/<host>/,
			 * the cross-host files at the top */
			check_cross_host(&p, line, hosts);
			size_t ok = 0;
			json_array_foreach(hosts, i, h) {
				snprintf(p.prefix, sizeof p.prefix, "hosts/%s/", json_string_value(h));
				json_decref(p.diag);
				p.diag = NULL;
				/* that host's own runtime figures where they differ */
				json_t *own = json_deep_copy(sj);
				json_t *over = json_object_get(json_object_get(sj, "host_runtime"), json_string_value(h));
				if (over)
					json_object_update(json_object_get(own, "runtime"), over);
				ok += check_one(&p, line, own, jpath);
				json_decref(own);
			}
			p.prefix[0] = 0;
			if (ok == json_array_size(hosts))
				checked++;
		}
		json_decref(sj);
		close_rep(&p);
	}
	assert_int_equal(pclose(ls), 0);
	fprintf(stderr, "%zu of %zu scenarios checked against their intended codes\n", checked, listed);
	/* every scenario states its diagnosis */
	assert_true(listed > 0);
	assert_int_equal(checked, listed);
}

/* ---- an OOM no finding explains ----------------------------------------- */

/* retrace-oom with --module on the compilation that fits: the capture still
 * shows the OOM of jit_train_step(19), which no finding about (12) explains. */
static void test_unexplained_oom(void **state)
{
	const char *path = scenario("retrace-oom");
	xpf_error err = { 0 };
	struct rep p;
	if (path == NULL)
		skip();
	memset(&p, 0, sizeof p);
	p.opt = (xpf_options)XPF_OPTIONS_INIT;
	p.opt.module = "jit_train_step(12)";
	assert_int_equal(xpf_input_open(path, NULL, &p.in, &err), XPF_OK);
	assert_int_equal(xpf_report_open(p.in, &p.opt, &p.r, &err), XPF_OK);
	json_t *fs = json_object_get(diag_json(&p), "findings");
	assert_string_equal(json_string_value(json_object_get(json_array_get(fs, 0), "code")), "unexplained-oom");
	json_t *f = need_finding(&p, "unexplained-oom");
	assert_int_equal(fig(f, "execution"), 4);
	assert_int_equal(fig(f, "capacity_bytes"), 2995650816ll);
	assert_contains(text(f), "execution 4 on device 0 ran out of memory (launched: no)");
	assert_contains(text(f), "jit_train_step(19) needs 3.00 GiB of 2.79 GiB");
	assert_contains(cat(&p, "checks.txt"), "FAIL\toom-explained\tthe capture shows an OOM and no finding explains it");
	close_rep(&p);

	/* the default focus explains it: a PASS line naming the finding */
	assert_true(open_rep(&p, path, 0));
	assert_contains(cat(&p, "checks.txt"), "PASS\toom-explained\tthe capture shows an OOM; explained by plan-exceeds-pool");
	assert_null(finding(&p, "unexplained-oom"));
	close_rep(&p);
}

/* compile-oom is retrace-oom whose compile for batch 16 fails: the need
 * scaled from the batch-8 module must hold the batch-16 module's own need,
 * which retrace-oom's capture has (tests/scenarios/retrace-oom.json). */
static void test_compile_oom_scaled(void **state)
{
	(void)state;
	const char *path = scenario("compile-oom"), *src = getenv("XPF_SOURCE");
	if (path == NULL)
		skip();
	char jpath[4096];
	json_error_t je;
	snprintf(jpath, sizeof jpath, "%s/tests/scenarios/retrace-oom.json", src ? src : ".");
	json_t *sj = json_load_file(jpath, 0, &je);
	assert_non_null(sj);
	long long truth = json_integer_value(json_object_get(json_object_get(sj, "plan"), "need_bytes"));
	json_decref(sj);
	struct rep p;
	assert_true(open_rep(&p, path, 0));
	json_t *f = need_finding(&p, "compile-oom");
	assert_int_equal(fig(f, "new_batch"), 16);
	fprintf(stderr, "compile-oom at batch 16: %lld to %lld, the module's own need %lld\n",
		fig(f, "scaled_need_low_bytes"), fig(f, "scaled_need_high_bytes"), truth);
	assert_true(fig(f, "scaled_need_low_bytes") <= truth);
	assert_true(fig(f, "scaled_need_high_bytes") >= truth);
	assert_contains(text(f), "it may not fit even if it compiled");
	close_rep(&p);
}

static const char *scenario_variant(const char *name, const char *v);

/* retrace-oom-ambiguous: the failed execution's requested bytes are a
 * prefix of both compilations' plans and the host side names both; its
 * arguments are (19)'s alone (the JSON's arithmetic: live 256, 256 and
 * 512 MiB; (12) takes 3 x 256 MiB), so the last rule links it (SPEC §4.3,
 * issue 37) as (19)'s first execution. */
static void test_linked_by_parameters(void **state)
{
	const char *path = scenario("retrace-oom-ambiguous");
	struct rep p;
	(void)state;
	if (path == NULL)
		skip();
	assert_true(open_rep(&p, path, 0));
	assert_contains(cat(&p, "diagnosis.txt"), "focus jit_train_step(19) (its last execution never launched)");
	json_t *f = need_finding(&p, "never-launched");
	assert_int_equal(fig(f, "execution"), 4);
	assert_int_equal(fig(f, "module_execution"), 1);
	const char *sum = cat(&p, "runtime/executions/4/summary.txt");
	assert_contains(sum, "execution 4: jit_train_step(19) execution 1 on device 0\n");
	assert_contains(sum, "linked by: parameters");
	assert_null(strstr(sum, "candidates:"));
	/* joined to (19)'s plan: loss 4 B and the tuple table 24 B, 256 B
	 * each as BFC rounds them */
	assert_contains(sum, "joined to the plan: temp 0 B, outputs 512 B");
	assert_contains(cat(&p, "checks.txt"), "PASS\tambiguous-executions\t0 of 4 executions");
	close_rep(&p);
}

/* The same with kept-batch: the batch of 8 is still live at the failed
 * call, so both modules' arguments are and no rule links it (SPEC §4.3);
 * its candidates stay, and the focus is the one with the larger need
 * (SPEC §5.1). */
static void test_ambiguous_oom(void **state)
{
	const char *path = scenario_variant("retrace-oom-ambiguous", "kept-batch");
	struct rep p;
	char want[128];
	(void)state;
	if (path == NULL)
		skip();
	assert_true(open_rep(&p, path, 0));
	assert_string_equal(json_string_value(json_object_get(diag_json(&p), "module")), "jit_train_step(19)");
	assert_contains(cat(&p, "diagnosis.txt"), "focus jit_train_step(19) (the candidate with the largest need");
	assert_non_null(need_finding(&p, "plan-exceeds-pool"));
	json_t *f = need_finding(&p, "never-launched");
	assert_contains(text(f), "not linked to one module");
	assert_contains(text(f), "jit_train_step(12)");
	assert_contains(text(f), "jit_train_step(19)");
	snprintf(want, sizeof want, "runtime/executions/%lld/summary.txt", fig(f, "execution"));
	const char *sum = cat(&p, want);
	assert_contains(sum, "linked by: ambiguous");
	assert_contains(sum, "candidates: 2\n");
	assert_contains(sum, "jit_train_step(12): needs 1.75 GiB (1879048220 bytes)");
	assert_contains(sum, "jit_train_step(19): needs 3.00 GiB (3221225500 bytes)");
	assert_contains(sum, "launched: no");
	/* the JSON's kept-batch line: 1 GiB + the kept 256 MiB batch */
	assert_contains(sum, "in use at start: 1.25 GiB (1342177280 bytes)");
	const char *checks = cat(&p, "checks.txt");
	assert_contains(checks, "WARN\tambiguous-executions\t1 of 4 executions");
	assert_contains(checks, "PASS\toom-explained\t");
	assert_null(finding(&p, "unexplained-oom"));
	close_rep(&p);
}

/* ---- every failure scenario in every shape (issue 22) -------------------- */

/* Build scenario name in the shape of variant v (xplane-mkcapture
 * --variant); NULL without the builder. */
static const char *scenario_variant(const char *name, const char *v)
{
	char out[512], args[512];
	snprintf(out, sizeof out, "%s@%s.xplane.pb", name, v);
	snprintf(args, sizeof args, "'%s' --variant '%s'", name, v);
	return xpf_t_build(out, args);
}

/* The focus module, the failing execution's n and launched, as the
 * variant must give them: those of the default shape. */
struct failure_view {
	char module[256];
	long long n, failed_request;
	char launched[16];
};

static void failure_view(struct rep *p, struct failure_view *fv)
{
	json_t *d = diag_json(p);
	snprintf(fv->module, sizeof fv->module, "%s", json_string_value(json_object_get(d, "module")));
	json_t *f = finding(p, "plan-exceeds-pool");
	json_t *fr = f ? json_object_get(json_object_get(f, "figures"), "failed_request_bytes") : NULL;
	fv->failed_request = fr ? json_integer_value(fr) : -1;
	f = finding(p, "never-launched");
	fv->n = f ? fig(f, "execution") : -1;
	fv->launched[0] = 0;
	if (fv->n > 0) {
		char path[64];
		snprintf(path, sizeof path, "runtime/executions/%lld/summary.txt", fv->n);
		const char *sum = cat(p, path), *l = strstr(sum, "launched: ");
		if (l)
			sscanf(l + 10, "%15[a-z]", fv->launched);
	}
}

static void codes_line(struct rep *p, char *out, size_t n)
{
	json_t *fs = json_object_get(diag_json(p), "findings"), *f;
	size_t i, k = 0;
	out[0] = 0;
	json_array_foreach(fs, i, f)
		k += (size_t)snprintf(out + k, k < n ? n - k : 0, "%s%s", i ? "," : "",
				      json_string_value(json_object_get(f, "code")));
}

static void test_variants(void **state)
{
	const char *src = getenv("XPF_SOURCE");
	char cmd[4096], name[256];
	size_t rows = 0;
	snprintf(cmd, sizeof cmd, "ls '%s/tests/scenarios' | sed -n 's/\\.json$//p'", src ? src : ".");
	FILE *ls = popen(cmd, "r");
	assert_non_null(ls);
	while (fgets(name, sizeof name, ls)) {
		name[strcspn(name, "\n")] = 0;
		char jpath[4096];
		json_error_t je;
		snprintf(jpath, sizeof jpath, "%s/tests/scenarios/%s.json", src ? src : ".", name);
		json_t *sj = json_load_file(jpath, 0, &je), *v;
		json_t *vars = json_object_get(sj, "variants");
		size_t i;
		if (json_array_size(vars) == 0 || scenario(name) == NULL) {
			json_decref(sj);
			continue;
		}
		struct rep p;
		struct failure_view want, have;
		char codes[1024];
		assert_true(open_rep(&p, scenario(name), 0));
		failure_view(&p, &want);
		codes_line(&p, codes, sizeof codes);
		fprintf(stderr, "%-20s %-40s focus %s, n %lld, launched %s: %s\n", name, "(default)",
			want.module, want.n, want.launched, codes);
		const char *focus = json_string_value(json_object_get(sj, "focus"));
		if (focus)
			assert_string_equal(want.module, focus);
		close_rep(&p);
		json_array_foreach(vars, i, v) {
			const char *path = scenario_variant(name, json_string_value(v));
			assert_non_null(path);
			assert_true(open_rep(&p, path, 0));
			failure_view(&p, &have);
			codes_line(&p, codes, sizeof codes);
			fprintf(stderr, "%-20s %-40s focus %s, n %lld, launched %s: %s\n", name,
				json_string_value(v), have.module, have.n, have.launched, codes);
			check_one(&p, name, sj, jpath);
			/* a shape of today's captures is no decoder error
			 * (scope-tree: the scope ids are no stat metadata's) */
			const char *errs = cat(&p, "capture/errors.txt");
			if (strstr(errs, "decoder error"))
				fail_msg("%s %s: %s", name, json_string_value(v), errs);
			assert_string_equal(have.module, want.module);
			assert_int_equal(have.n, want.n);
			assert_int_equal(have.failed_request, want.failed_request);
			assert_string_equal(have.launched, want.launched);
			close_rep(&p);
			rows++;
		}
		json_decref(sj);
	}
	assert_int_equal(pclose(ls), 0);
	fprintf(stderr, "%zu scenario x variant rows, each with its scenario's codes and figures\n", rows);
	if (rows == 0)
		skip();
}

static void test_real_healthy(void **state)
{
	static const char *const names[] = { "mi300x-jax08-attention.xplane.pb", "mi300x-jax08-gemm.xplane.pb",
					     "mi300x-conv-run" };
	size_t seen = 0;
	for (size_t i = 0; i < 3; i++) {
		const char *path = xpf_t_capture(names[i]);
		struct rep p;
		if (path == NULL)
			continue;
		seen++;
		assert_true(open_rep(&p, path, 0));
		assert_well_formed(&p);
		json_t *f = need_finding(&p, "fits");
		/* SPEC §5.2: nothing failed and the plan fits: fits comes first,
		 * and no copy finding under 1% of the heap peak */
		assert_string_equal(json_string_value(json_object_get(
			json_array_get(json_object_get(diag_json(&p), "findings"), 0), "code")), "fits");
		assert_null(finding(&p, "param-layout-copy"));
		assert_null(finding(&p, "param-convert-copy"));
		assert_true(fig(f, "headroom_bytes") > 0);
		assert_int_equal(fig(f, "headroom_bytes"), fig(f, "capacity_bytes") - fig(f, "need_bytes"));
		assert_null(finding(&p, "plan-exceeds-pool"));
		assert_null(finding(&p, "missing-plan"));
		assert_null(finding(&p, "missing-runtime"));
		assert_null(finding(&p, "growth-per-execution"));
		/* MI300X: 192 GiB devices, pool at JAX's default 75% */
		json_t *d = diag_json(&p);
		long long cap = json_integer_value(json_object_get(d, "capacity_bytes"));
		assert_true(cap > 140ll << 30 && cap < 145ll << 30);
		assert_false(json_is_true(json_object_get(d, "fraction_set")));
		/* memory_size and device_vendor of the device planes: the
		 * README's attention line (`python3 tests/figures/read-xspace.py
		 * planes` shows the same on all three captures); HBM in GiB
		 * with two decimals (SPEC §4) */
		const long long hbm = 206141652992ll;
		char want[128];
		snprintf(want, sizeof want, "HBM %.2f GiB (%lld bytes)", hbm / 1073741824.0, hbm);
		const char *sum = cat(&p, "summary.txt");
		assert_contains(sum, "vendor AMD");
		assert_contains(sum, want);
		assert_contains(cat(&p, "checks.txt"), "PASS\tkinds-sum-to-total");
		assert_contains(cat(&p, "checks.txt"), "PASS\tpeak-rows-sum-to-heap-peak");
		const char *readme = cat(&p, "README");
		assert_contains(readme, "diagnosis.txt\n");
		assert_contains(readme, "modules/<dir>/peak_buffers.tsv\n");
		assert_contains(readme, "runtime/executions/<n>/live.tsv\n");
		assert_contains(readme, "focus (symlink)\n");
		assert_null(strstr(readme, "(no description)"));
		close_rep(&p);
	}
	if (!seen)
		skip();
}

static void test_real_attention_figures(void **state)
{
	const char *path = xpf_t_capture("mi300x-jax08-attention.xplane.pb");
	struct rep p;
	if (path == NULL)
		skip();
	assert_true(open_rep(&p, path, 0));
	/* the biggest module that ran; capacity from GPU_0_bfc: in use +
	 * available is 154606239744 at each of its events, read without
	 * xplanefs (python3 tests/figures/read-xspace.py events CAPTURE | grep
	 * GPU_0_bfc: bytes_allocated + bytes_reserved + bytes_available), 75% of
	 * the README's memory_size 206,141,652,992 */
	json_t *d = diag_json(&p);
	assert_string_equal(json_string_value(json_object_get(d, "module")), "jit_matmul(59)");
	assert_int_equal(json_integer_value(json_object_get(d, "capacity_bytes")), 154606239744ll);
	assert_string_equal(json_string_value(json_object_get(d, "capacity_tag")), "measured");
	/* lifetime peak 595,591,680 (README) above the window's, 452985344
	 * (the largest bytes_allocated + bytes_reserved of those events):
	 * explained */
	const char *l = line_from(cat(&p, "checks.txt"), "WARN\tlifetime-peak-vs-window\tGPU_0_bfc: ");
	assert_contains(l, "lifetime peak 595591680 ");
	assert_contains(l, " 452985344 ");
	close_rep(&p);
}

static void test_real_tf(void **state)
{
	const char *path = xpf_t_capture("tf-v100-multiworker.xplane.pb");
	struct rep p;
	if (path == NULL)
		skip();
	assert_true(open_rep(&p, path, 0));
	assert_well_formed(&p);
	json_t *f = need_finding(&p, "missing-plan");
	assert_contains(text(f), "no HloProto");
	assert_contains(text(f), "TensorFlow");
	/* the runtime still speaks: GPU_6_bfc's peak 6,210,111,488 (README: its
	 * max peak_bytes_in_use; the largest bytes_allocated + bytes_reserved
	 * of its events in `python3 tests/figures/read-xspace.py events` too) */
	assert_int_equal(fig(f, "peak_in_window_bytes"), 6210111488ll);
	assert_null(finding(&p, "fits"));
	assert_true(json_is_null(json_object_get(diag_json(&p), "module")));
	close_rep(&p);
}

/* SPEC §4.1: on TPU only colour 0 is device memory; colours 2 and 6
 * (on-chip, 12 and 512 bytes) stay out of temp, heap peak and need.  The
 * plans, read without xplanefs (python3 tests/figures/read-xspace.py
 * allocations ../shared/captures/tpu-v6e-inference.xplane.pb), SPEC §4.1's
 * kinds over the colour-0 allocations:
 *   jit_broadcast_in_dim: a parameter of 512 (not donated), an output of
 *     5368709120; no temp (colour 1's holds 0 bytes, colour 6's 512 aside),
 *     so the heap peak is the indefinite allocations alone, = need;
 *   jit_convert_element_type: the same with an output of 512;
 *   jit_f: an output of 32 (a tuple), the temp 21474934784; its donated
 *     parameters are colour 5 (host), colour 2's 12 bytes aside; need
 *     21474934816, the README's colour-0 bytes of jit_f.  Its heap peak
 *     needs the heap trace simulated (reference §5.4), which that reader
 *     does not do: only bounded here, at most its temp and output. */
static void check_tpu_plans(struct rep *p)
{
	static const struct {
		const char *id, *params, *outputs, *temp, *peak, *need;
	} m[] = {
		{ "11287434908481120160", "512", "5368709120", "0", "5368709632", "5368709632" },
		{ "12190760917235803885", "0", "32", "21474934784", NULL, "21474934816" },
		{ "2433868464432466958", "512", "512", "0", "1024", "1024" },
	};
	const char *idx = cat(p, "modules/index.tsv");
	for (size_t i = 0; i < sizeof m / sizeof *m; i++) {
		const struct tsv_want want[] = {
			{ "parameters_bytes", m[i].params },
			{ "donated_bytes", "0" },
			{ "outputs_bytes", m[i].outputs },
			{ "non_aliased_outputs_bytes", m[i].outputs },
			{ "temp_bytes", m[i].temp },
			{ "need_bytes", m[i].need },
		};
		assert_row(idx, "program_id", m[i].id, want, sizeof want / sizeof *want);
		const char *peak = tsv_field(idx, "program_id", m[i].id, "heap_peak_bytes");
		if (m[i].peak)
			assert_string_equal(peak, m[i].peak);
		else
			assert_true(atoll(peak) > 0 && atoll(peak) <= atoll(m[i].need));
	}
}

static void test_real_tpu(void **state)
{
	const char *path = xpf_t_capture("tpu-v6e-inference.xplane.pb");
	struct rep p;
	if (path == NULL)
		skip();
	assert_true(open_rep(&p, path, 0));
	assert_well_formed(&p);
	json_t *d = diag_json(&p);
	assert_string_equal(json_string_value(json_object_get(d, "program_id")), "12190760917235803885");
	assert_non_null(need_finding(&p, "fits"));
	/* the program's reservation is not a foreign array */
	assert_null(finding(&p, "foreign-live-arrays"));
	check_tpu_plans(&p);
	json_error_t je;
	json_t *pj = json_loads(cat(&p, "modules/jit_broadcast_in_dim(11287434908481120160)/plan.json"), 0, &je);
	assert_non_null(pj);
	json_t *cols = json_object_get(pj, "colors"), *col;
	size_t i, apart = 0;
	json_array_foreach(cols, i, col)
		if (json_integer_value(json_object_get(col, "color")) == 6) {
			assert_true(json_is_false(json_object_get(col, "device_figures")));
			assert_int_equal(json_integer_value(json_object_get(col, "bytes")), 512);
			apart++;
		}
	assert_int_equal(apart, 1);
	json_decref(pj);
	close_rep(&p);
}

static void test_real_hlo_only(void **state)
{
	const char *path = xpf_t_capture("hlo/h100-maxtext-jit_train_step.hlo.pb");
	struct rep p;
	if (path == NULL)
		skip();
	assert_true(open_rep(&p, path, 0));
	assert_well_formed(&p);
	json_t *f = need_finding(&p, "missing-runtime");
	assert_contains(text(f), "bare HloProto");
	assert_null(finding(&p, "fits"));
	/* SPEC 5.2 plan: no capacity, still what takes the memory */
	f = need_finding(&p, "plan");
	assert_int_equal(fig(f, "need_bytes"), fig(f, "parameters_bytes") + fig(f, "non_aliased_outputs_bytes") +
						       fig(f, "temp_bytes") + fig(f, "constants_bytes"));
	assert_true(fig(f, "need_bytes") > 0);
	assert_contains(text(f), "no capacity is known: give the pool with --capacity");
	assert_contains(text(f), "at the heap peak");
	/* layout copies of the weights (reference §10): wrapped_transpose */
	f = need_finding(&p, "param-layout-copy");
	assert_contains(text(f), "wrapped_transpose");
	assert_true(fig(f, "bytes") >= 1 << 20);
	close_rep(&p);

	/* --capacity gives the verdict */
	assert_true(open_rep(&p, path, 1ull << 40));
	f = need_finding(&p, "fits");
	assert_int_equal(fig(f, "capacity_bytes"), 1ll << 40);
	assert_string_equal(json_string_value(json_object_get(diag_json(&p), "capacity_source")), "--capacity");
	close_rep(&p);
	assert_true(open_rep(&p, path, 1ull << 20));
	f = need_finding(&p, "plan-exceeds-pool");
	assert_string_equal(json_string_value(json_object_get(f, "tag")), "read");
	close_rep(&p);
}

/* near-fit: capacity within 5% above the need (the capacity from --capacity). */
/* ---- issue 28: readable lines, the order of fixes, honest estimates ------ */

/* SPEC 5.3 (readable): the widest line of diagnosis.txt that is not
 * indented, and the widest that is not an evidence list (-> paths). */
static void line_widths(const char *txt, size_t *top, size_t *other)
{
	*top = *other = 0;
	for (const char *l = txt; *l;) {
		size_t n = strcspn(l, "\n");
		bool evidence = strncmp(l + strspn(l, " "), "-> ", 3) == 0;
		if (l[0] != ' ' && n > *top)
			*top = n;
		if (!evidence && n > *other)
			*other = n;
		l += n + (l[n] == '\n');
	}
}

static void check_width(const char *path, uint64_t capacity, const char *name)
{
	struct rep p;
	size_t top, other;
	if (path == NULL || !open_rep(&p, path, capacity))
		return;
	line_widths(cat(&p, "diagnosis.txt"), &top, &other);
	fprintf(stderr, "%-40s widest line %zu, unindented %zu\n", name, other, top);
	if (top > 160 || other > 160)
		fail_msg("%s: a line of diagnosis.txt over 160 characters:\n%s", name, cat(&p, "diagnosis.txt"));
	close_rep(&p);
}

static void test_line_width(void **state)
{
	const char *build = getenv("XPF_BUILD");
	char exe[4096], cmd[8192], line[1024];
	static const char *const real[] = { "mi300x-jax08-attention.xplane.pb", "mi300x-jax08-gemm.xplane.pb",
					    "mi300x-conv-run", "tpu-v6e-inference.xplane.pb",
					    "tf-v100-multiworker.xplane.pb", "hlo/h100-maxtext-jit_train_step.hlo.pb",
					    "mi300x-conv-run/jit__normal_11_.hlo_proto.pb" };
	size_t n = 0;
	(void)state;
	snprintf(exe, sizeof exe, "%s/tests/mkcapture/xplane-mkcapture", build ? build : "build");
	if (access(exe, X_OK) == 0) {
		snprintf(cmd, sizeof cmd, "'%s' --list", exe);
		FILE *ls = popen(cmd, "r");
		assert_non_null(ls);
		while (fgets(line, sizeof line, ls)) {
			line[strcspn(line, "\t\n")] = 0;
			if (*line) {
				check_width(scenario(line), 0, line);
				n++;
			}
		}
		assert_int_equal(pclose(ls), 0);
	}
	for (size_t i = 0; i < sizeof real / sizeof *real; i++) {
		const char *path = xpf_t_capture(real[i]);
		if (path) {
			check_width(path, 0, real[i]);
			n++;
		}
	}
	/* a plan-only capture given a small pool: mostly-forward and its fixes */
	check_width(xpf_t_capture("hlo/h100-maxtext-jit_train_step.hlo.pb"), 4000000000ull, "maxtext --capacity");
	if (n == 0)
		skip();
}

/* SPEC 5.3: a larger pool is offered after every program fix, as adding
 * to the pool (not a saving), with what it costs outside the pool. */
static void test_fraction_after_program_fixes(void **state)
{
	struct rep p;
	const char *path = scenario("retrace-oom");
	(void)state;
	if (path == NULL)
		skip();
	assert_true(open_rep(&p, path, 0));
	const char *txt = cat(&p, "diagnosis.txt");
	const char *frac = strstr(txt, "XLA_PYTHON_CLIENT_MEM_FRACTION=.83 adds 304.7 MiB to the pool (not a saving)");
	assert_non_null(frac);
	const char *fix = NULL;
	for (const char *q = strstr(txt, "[inferred] fix: "); q; q = strstr(q + 1, "[inferred] fix: "))
		if (strncmp(q + 16, "XLA_PYTHON", 10) != 0 && strncmp(q + 16, "after the program", 17) != 0)
			fix = q;
	assert_non_null(fix);  /* remat, micro-batch, sequence, shapes, recompiles */
	if (frac < fix)
		fail_msg("the memory fraction comes before a program fix:\n%s", txt);
	/* its cost names the device's libraries: this scenario's GPU is AMD's */
	assert_contains(frac, "HIP runtime, MIOpen/hipBLASLt workspaces and RCCL");
	assert_null(strstr(txt, "CUDA"));
	/* diagnosis.json: the last fix of plan-exceeds-pool, saving nothing */
	json_t *fx = json_object_get(need_finding(&p, "plan-exceeds-pool"), "fixes");
	json_t *x = json_array_get(fx, json_array_size(fx) - 1);
	assert_contains(json_string_value(json_object_get(x, "text")), "adds 304.7 MiB to the pool");
	assert_int_equal(json_integer_value(json_object_get(x, "saving_bytes")), 0);
	close_rep(&p);
	/* the same step on an NVIDIA device */
	path = scenario_variant("retrace-oom", "nvidia");
	assert_non_null(path);
	assert_true(open_rep(&p, path, 0));
	txt = cat(&p, "diagnosis.txt");
	assert_contains(txt, "the CUDA context, cuDNN/cuBLAS workspaces and NCCL");
	assert_null(strstr(txt, "HIP"));
	close_rep(&p);
}

/* SPEC 5.3: remat saves what the repeated blocks keep beyond one block:
 * 4/5 of five blocks (attention-too-big, test_attention), 1/2 of two
 * (retrace-oom: dense_0, dense_1 keep 1.00 GiB), and nothing to claim
 * where the scanned body is checkpointed already (the scanned MaxText
 * step, plan only: its backward pass recomputes the body; what stays
 * stacked is what the policy saves). */
static void test_remat_blocks(void **state)
{
	struct rep p;
	const char *path = scenario("retrace-oom");
	(void)state;
	if (path == NULL)
		skip();
	assert_true(open_rep(&p, path, 0));
	json_t *x = json_array_get(json_object_get(need_finding(&p, "mostly-forward"), "fixes"), 0);
	assert_contains(json_string_value(json_object_get(x, "text")), "dense_N (2 blocks keep 1.00 GiB");
	assert_int_equal(json_integer_value(json_object_get(x, "saving_bytes")), 536870912ll);
	close_rep(&p);
	path = scenario("attention-too-big");
	assert_true(open_rep(&p, path, 0));
	x = json_array_get(json_object_get(need_finding(&p, "mostly-forward"), "fixes"), 0);
	assert_contains(json_string_value(json_object_get(x, "text")), "block_N (5 blocks keep 2.27 GiB");
	assert_int_equal(json_integer_value(json_object_get(x, "saving_bytes")), 1946157056ll);
	close_rep(&p);
	path = xpf_t_capture("hlo/h100-maxtext-jit_train_step.hlo.pb");
	if (path == NULL)
		return;
	assert_true(open_rep(&p, path, 4000000000ull));
	x = json_array_get(json_object_get(need_finding(&p, "mostly-forward"), "fixes"), 0);
	assert_contains(json_string_value(json_object_get(x, "text")), "the scanned body is checkpointed already");
	assert_contains(json_string_value(json_object_get(x, "text")), "only a stricter policy");
	assert_int_equal(json_integer_value(json_object_get(x, "saving_bytes")), 0);
	close_rep(&p);
}

/* SPEC 5.3: the BFC fragmentation stat quoted at the failure and at the
 * peak (the builder's pool packs its chunks: 0.0% at both); a capture
 * whose events lack the stat says nothing of it. */
static void test_fragmentation_stat(void **state)
{
	struct rep p;
	const char *path = scenario("attention-too-big");
	(void)state;
	if (path == NULL)
		skip();
	assert_true(open_rep(&p, path, 0));
	json_t *f = need_finding(&p, "allocator-retry");
	assert_string_equal(figs(f, "fragmentation_at_failure_pct"), "0.0");
	assert_string_equal(figs(f, "fragmentation_at_peak_pct"), "0.0");
	assert_contains(text(f), "BFC fragmentation of GPU_0_bfc (free memory outside its largest free chunk): 0.0% when the request failed, 0.0% at its peak (312.1 MiB)");
	close_rep(&p);
	path = scenario_variant("attention-too-big", "no-optional-stats");
	assert_true(open_rep(&p, path, 0));
	f = need_finding(&p, "allocator-retry");
	assert_null(json_object_get(json_object_get(f, "figures"), "fragmentation_at_failure_pct"));
	assert_null(strstr(text(f), "fragmentation"));
	close_rep(&p);
}

/* SPEC 5.3 (noise and wrong words), on real captures: no donation advice
 * for 16 MiB of a 144 GiB pool on a step that fits; no "(usual on TPU)"
 * on a ROCm module; no "jitted function" for TensorFlow. */
static void test_real_words(void **state)
{
	struct rep p;
	const char *path;
	size_t seen = 0;
	(void)state;
	if ((path = xpf_t_capture("mi300x-jax08-attention.xplane.pb")) && open_rep(&p, path, 0)) {
		assert_null(finding(&p, "no-donation"));
		close_rep(&p);
		seen++;
	}
	if ((path = xpf_t_capture("mi300x-conv-run/jit__normal_11_.hlo_proto.pb")) && open_rep(&p, path, 0)) {
		assert_non_null(need_finding(&p, "missing-plan"));
		assert_null(strstr(cat(&p, "diagnosis.txt"), "TPU"));
		close_rep(&p);
		seen++;
	}
	if ((path = xpf_t_capture("tf-v100-multiworker.xplane.pb")) && open_rep(&p, path, 0)) {
		json_t *f = need_finding(&p, "missing-plan");
		assert_null(strstr(text(f), "jitted function"));
		assert_contains(text(f), "tf.function(jit_compile=True)");
		close_rep(&p);
		seen++;
	}
	if (seen == 0)
		skip();
}

static void test_near_fit(void **state)
{
	const char *path = xpf_t_capture("hlo/h100-maxtext-jit_train_step.hlo.pb");
	struct rep p;
	if (path == NULL)
		skip();
	assert_true(open_rep(&p, path, 1ull << 40));
	long long need = fig(need_finding(&p, "fits"), "need_bytes");
	close_rep(&p);
	assert_true(open_rep(&p, path, (uint64_t)need + (uint64_t)need / 50));
	json_t *f = need_finding(&p, "near-fit");
	assert_int_equal(fig(f, "margin_bytes"), need / 50);
	assert_contains(text(f), "contiguous");
	assert_null(finding(&p, "fits"));
	assert_null(finding(&p, "plan-exceeds-pool"));
	close_rep(&p);
	/* exactly at the capacity still fits by bytes: near-fit */
	assert_true(open_rep(&p, path, (uint64_t)need));
	assert_non_null(need_finding(&p, "near-fit"));
	close_rep(&p);
	assert_true(open_rep(&p, path, (uint64_t)need - 1));
	assert_non_null(need_finding(&p, "plan-exceeds-pool"));
	close_rep(&p);
}

/* A run directory of two hosts: one line per host at the top. */
static void test_multi_host(void **state)
{
	char a[4096], dir[4200], cmd[4 * 4200 + 128];
	const char *b = scenario("grads-kept");
	struct rep p;
	if (b == NULL)
		skip();
	snprintf(a, sizeof a, "%s", b);  /* scenario() returns a static buffer */
	b = scenario("no-donation");
	snprintf(dir, sizeof dir, "%s/run", xpf_t_tmpdir());
	snprintf(cmd, sizeof cmd, "mkdir -p '%s' && cp '%s' '%s/hostA.xplane.pb' && cp '%s' '%s/hostB.xplane.pb'",
		 dir, a, dir, b, dir);
	assert_int_equal(system(cmd), 0);
	assert_true(open_rep(&p, dir, 0));
	const char *txt = cat(&p, "diagnosis.txt");
	/* nothing failed on hostA and its plan fits: fits first (SPEC §5.2) */
	assert_contains(txt, "\nhostA: {fits growth-per-execution} [measured] fits: ");
	assert_contains(txt, "\nhostB: {plan-exceeds-pool no-donation allocator-retry never-launched} [measured] plan-exceeds-pool: ");
	assert_contains(cat(&p, "summary.txt"), "hosts: 2\n");
	assert_contains(cat(&p, "hosts/hostB/diagnosis.txt"), "no-donation: ");
	json_error_t je;
	json_t *j = json_loads(cat(&p, "diagnosis.json"), 0, &je);
	assert_non_null(j);
	assert_int_equal(json_array_size(json_object_get(j, "hosts")), 2);
	json_decref(j);
	close_rep(&p);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_attention),
		cmocka_unit_test(test_grads_kept),
		cmocka_unit_test(test_no_donation),
		cmocka_unit_test(test_all_scenarios),
		cmocka_unit_test(test_variants),
		cmocka_unit_test(test_unexplained_oom),
		cmocka_unit_test(test_compile_oom_scaled),
		cmocka_unit_test(test_ambiguous_oom),
		cmocka_unit_test(test_linked_by_parameters),
		cmocka_unit_test(test_multi_host),
		cmocka_unit_test(test_line_width),
		cmocka_unit_test(test_fraction_after_program_fixes),
		cmocka_unit_test(test_remat_blocks),
		cmocka_unit_test(test_fragmentation_stat),
	};
	const struct CMUnitTest real[] = {
		cmocka_unit_test(test_real_healthy),
		cmocka_unit_test(test_real_attention_figures),
		cmocka_unit_test(test_real_tf),
		cmocka_unit_test(test_real_tpu),
		cmocka_unit_test(test_real_hlo_only),
		cmocka_unit_test(test_near_fit),
		cmocka_unit_test(test_real_words),
	};
	bool want_real;
	int rc = xpf_test_group(argc, argv, &want_real);
	if (rc >= 0)
		return rc;
	return want_real ? cmocka_run_group_tests_name("diagnosis-real", real, NULL, NULL)
			 : cmocka_run_group_tests_name("diagnosis", tests, NULL, NULL);
}
