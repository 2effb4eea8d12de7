/* The common layer's map (src/common/map.h) against a plain array model:
 * puts, replacements and deletions in a random order over few keys, so
 * that probes collide and are moved back by deletion; keys that all hash
 * to the last slot, so that their probes wrap around the table's end and
 * deletion moves entries back across it; the table's growth; the keys' two
 * parts kept apart.  The merge of runs (src/common/runs.h) against a
 * sort: runs in the order of their first items (the heap takes them as
 * they fall due) and not, equal keys across runs, one run, runs of one;
 * the permutation applied in place (xpf_perm_apply) against a gather.  The
 * bisection (src/common/bisect.h) against a scan. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/bisect.h"
#include "common/buf.h"
#include "common/intern.h"
#include "common/map.h"
#include "common/runs.h"

static uint64_t rng = 0x243F6A8885A308D3ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int64_t get(const xpf_map *m, uint64_t a, uint64_t b)
{
	return m->s[xpf_map_find(m, a, b)].val;
}

static void test_put_get_grow(void **state)
{
	(void)state;
	xpf_map m;
	xpf_map_init(&m, 3);
	assert_int_equal(m.cap, 4);
	assert_int_equal(get(&m, 1, 2), -1);
	assert_int_equal(xpf_map_put(&m, 1, 2, 10), -1);
	assert_int_equal(xpf_map_put(&m, 2, 1, 20), -1); /* the parts are not swapped */
	assert_int_equal(xpf_map_put(&m, 1, 2, 11), 10);
	assert_int_equal(m.n, 2);
	assert_int_equal(get(&m, 1, 2), 11);
	assert_int_equal(get(&m, 2, 1), 20);
	for (uint64_t k = 0; k < 1000; k++)
		assert_int_equal(xpf_map_put(&m, k << 32, UINT64_MAX - k, (int64_t)k), -1);
	assert_int_equal(m.n, 1002);
	assert_true(m.cap >= 2 * m.n && (m.cap & (m.cap - 1)) == 0);
	for (uint64_t k = 0; k < 1000; k++)
		assert_int_equal(get(&m, k << 32, UINT64_MAX - k), (int64_t)k);
	assert_int_equal(get(&m, 1, 2), 11);
	xpf_map_free(&m);
	assert_null(m.s);
}

/* 40 keys in a table that stays small: random puts and deletions, every
 * key checked after each step. */
static void test_against_model(void **state)
{
	(void)state;
	enum { NK = 40 };
	int64_t model[NK];
	for (size_t k = 0; k < NK; k++)
		model[k] = -1;
	size_t live = 0;
	xpf_map m;
	xpf_map_init(&m, 2);
	for (int step = 0; step < 20000; step++) {
		size_t k = (size_t)(next_rand() % NK);
		uint64_t a = k % 7, b = k / 7; /* small parts: clustered hashes */
		if (next_rand() % 3 == 0) {
			size_t i = xpf_map_find(&m, a, b);
			assert_int_equal(m.s[i].val, model[k]);
			if (model[k] >= 0) {
				xpf_map_del(&m, i);
				model[k] = -1;
				live--;
			}
		} else {
			int64_t v = (int64_t)(next_rand() % 1000000);
			assert_int_equal(xpf_map_put(&m, a, b, v), model[k]);
			live += model[k] < 0;
			model[k] = v;
		}
		assert_int_equal(m.n, live);
		for (size_t j = 0; j < NK; j++)
			assert_int_equal(get(&m, j % 7, j / 7), model[j]);
	}
	xpf_map_free(&m);
}

/* Five keys hashing to slot 15 of 16 sit in 15, 0, 1, 2, 3: deleting the
 * one in 15 moves the one in 0 back across the end, and so on. */
static void test_wrap_around(void **state)
{
	(void)state;
	enum { NK = 5 };
	uint64_t key[NK];
	size_t nk = 0;
	for (uint64_t a = 0; nk < NK; a++)
		if (xpf_map_hash(a, 7, 16) == 15)
			key[nk++] = a;
	for (int first = 0; first < NK; first++) { /* delete each one first */
		xpf_map m;
		xpf_map_init(&m, 16);
		for (size_t k = 0; k < NK; k++)
			assert_int_equal(xpf_map_put(&m, key[k], 7, (int64_t)k), -1);
		assert_int_equal(m.cap, 16);
		assert_int_equal(m.s[15].val, 0); /* the first one home, the rest wrapped */
		assert_int_equal(m.s[0].val, 1);
		bool gone[NK] = { false };
		for (int step = 0; step < NK; step++) {
			int k = (first + step * 2) % NK;
			while (gone[k])
				k = (k + 1) % NK;
			size_t i = xpf_map_find(&m, key[k], 7);
			assert_int_equal(m.s[i].val, k);
			xpf_map_del(&m, i);
			gone[k] = true;
			for (size_t j = 0; j < NK; j++)
				assert_int_equal(get(&m, key[j], 7), gone[j] ? -1 : (int64_t)j);
		}
		assert_int_equal(m.n, 0);
		xpf_map_free(&m);
	}
}

/* Items ordered by (key, index), as the runtime's events are by (time,
 * place). */
static bool item_before(const void *ctx, size_t i, size_t j)
{
	const int64_t *key = ctx;
	return key[i] < key[j] || (key[i] == key[j] && i < j);
}

static const int64_t *sort_keys;

static int item_cmp(const void *a, const void *b)
{
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
	return item_before(sort_keys, i, j) ? -1 : item_before(sort_keys, j, i);
}

/* Keys made as nr runs of random lengths (1..maxlen), sorted in each run
 * (the merge finds its own runs: where a key drops); when ordered, each run
 * starts at or after the one before (the heap takes runs as they fall due),
 * else anywhere in [0, span) (the heap holds every run from the start). */
static void check_merge(size_t nr, size_t maxlen, int64_t span, bool ordered)
{
	size_t *start = calloc(nr + 1, sizeof *start), n = 0;
	for (size_t r = 0; r < nr; r++) {
		start[r] = n;
		n += 1 + (size_t)(next_rand() % maxlen);
	}
	start[nr] = n;
	int64_t *key = calloc(n, sizeof *key);
	int64_t floor = 0;
	for (size_t r = 0; r < nr; r++) {
		int64_t t = ordered ? floor + (int64_t)(next_rand() % 3) :
				      (int64_t)(next_rand() % (uint64_t)span);
		floor = t;
		for (size_t i = start[r]; i < start[r + 1]; i++) {
			t += (int64_t)(next_rand() % 3); /* equal keys within and across runs */
			key[i] = t;
		}
	}
	uint32_t *perm = calloc(n, sizeof *perm), *want = calloc(n, sizeof *want);
	xpf_runs_merge(n, item_before, key, perm);
	for (size_t i = 0; i < n; i++)
		want[i] = (uint32_t)i;
	sort_keys = key;
	qsort(want, n, sizeof *want, item_cmp);
	for (size_t k = 0; k < n; k++)
		assert_int_equal(perm[k], want[k]);
	free(start);
	free(key);
	free(perm);
	free(want);
}

/* xpf_perm_apply against a gather into a copy: the same items in the same
 * places, each moved through the callback, perm left as the identity. */
struct int_moves {
	int64_t *a;
	size_t n;
	int64_t spare;
	size_t moves;
};

static void int_move(void *ctx, size_t to, size_t from)
{
	struct int_moves *m = ctx;
	*(to == m->n ? &m->spare : &m->a[to]) = from == m->n ? m->spare : m->a[from];
	m->moves++;
}

static void check_perm(size_t n)
{
	int64_t *key = calloc(n + 1, sizeof *key), *want = calloc(n + 1, sizeof *want);
	uint32_t *perm = calloc(n + 1, sizeof *perm);
	for (size_t i = 0; i < n; i++)
		key[i] = (int64_t)(next_rand() % 50);
	xpf_runs_merge(n, item_before, key, perm);
	size_t fixed = 0, cycles = 0;
	for (size_t k = 0; k < n; k++) {
		want[k] = key[perm[k]];
		fixed += perm[k] == k;
	}
	/* cycles of two or more items: each costs one move more than its length */
	bool *seen = calloc(n + 1, sizeof *seen);
	for (size_t i = 0; i < n; i++)
		if (!seen[i] && perm[i] != i) {
			cycles++;
			for (size_t j = i; !seen[j]; j = perm[j])
				seen[j] = true;
		}
	struct int_moves m = { key, n, 0, 0 };
	xpf_perm_apply(n, perm, int_move, &m);
	for (size_t k = 0; k < n; k++) {
		assert_int_equal(key[k], want[k]);
		assert_int_equal(perm[k], k);
	}
	assert_int_equal(m.moves, n - fixed + cycles);
	free(seen);
	free(key);
	free(want);
	free(perm);
}

static void test_perm_apply(void **state)
{
	(void)state;
	check_perm(0);
	check_perm(1);
	for (int round = 0; round < 20; round++)
		check_perm(1 + next_rand() % 2000);
}

static void test_runs_merge(void **state)
{
	(void)state;
	for (int round = 0; round < 20; round++) {
		check_merge(1 + next_rand() % 50, 1 + next_rand() % 20, 100, true);
		check_merge(1 + next_rand() % 50, 1 + next_rand() % 20, 100, false);
	}
	check_merge(1, 1000, 10, true);   /* one run */
	check_merge(500, 1, 1000, true);  /* runs of one (one run to the merge) */
	check_merge(500, 1, 1000, false); /* runs of one */
	check_merge(2000, 30, 50, true);  /* many overlapping, few keys */
}

/* xpf_buf_printf formats into the room it has and again when that was too
 * little: every length around the room's edge comes out whole. */
static bool i64_below(const void *item, const void *key)
{
	return *(const int64_t *)item < *(const int64_t *)key;
}

/* Every key from before the first item to past the last, over sorted
 * arrays of every length up to 40 (the empty one at NULL) that hold runs of
 * equal keys with gaps between: the first item not below the key. */
static void test_lower_bound(void **state)
{
	(void)state;
	int64_t v[40];
	for (size_t n = 0; n <= 40; n++) {
		for (size_t i = 0; i < n; i++)
			v[i] = (int64_t)(i / 3) * 2;
		for (int64_t key = -1; key <= (int64_t)(n / 3) * 2 + 2; key++) {
			size_t want = 0;
			while (want < n && v[want] < key)
				want++;
			assert_int_equal(xpf_lower_bound(&key, n ? v : NULL, n, sizeof *v, i64_below),
					 want);
		}
	}
}

static void test_buf_printf(void **state)
{
	(void)state;
	char xs[600], want[1200];
	memset(xs, 'x', sizeof xs);
	for (size_t pre = 0; pre < 300; pre += 37) {
		for (size_t n = 0; n < sizeof xs; n += 13) {
			xpf_buf b = XPF_BUF_INIT;
			memset(want, 'a', pre);
			for (size_t i = 0; i < pre; i++)
				xpf_buf_addc(&b, 'a');
			xpf_buf_printf(&b, "%.*s|%zu", (int)n, xs, pre + n);
			int w = snprintf(want + pre, sizeof want - pre, "%.*s|%zu", (int)n, xs,
					 pre + n);
			assert_int_equal(b.len, pre + (size_t)w);
			assert_int_equal(strlen(b.data), b.len);
			assert_string_equal(b.data, want);
			xpf_buf_release(&b);
		}
	}
}

/* xpf_buf_add_i64 writes what printf's %lld does, the extremes included. */
static void test_buf_add_i64(void **state)
{
	(void)state;
	const int64_t v[] = { 0,
			      1,
			      -1,
			      9,
			      10,
			      -10,
			      99,
			      100,
			      1234567890123LL,
			      -987654321,
			      INT64_MAX,
			      INT64_MIN,
			      INT64_MIN + 1 };
	for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
		xpf_buf b = XPF_BUF_INIT;
		char want[32];
		xpf_buf_adds(&b, "x=");
		xpf_buf_add_i64(&b, v[i]);
		snprintf(want, sizeof want, "x=%lld", (long long)v[i]);
		assert_string_equal(b.data, want);
		assert_int_equal(b.len, strlen(want));
		xpf_buf_release(&b);
	}
}

/* Names reach files through one of the escapes (buf.h, SPEC §3): text and
 * TSV write a control character or a byte that does not begin a valid UTF-8
 * character as \xHH (TSV also doubles the backslash), JSON writes U+FFFD
 * for the byte; valid UTF-8 passes whole. */
static void test_buf_escapes(void **state)
{
	(void)state;
	static const struct {
		const char *in, *text, *tsv, *json;
	} c[] = {
		{ "plain", "plain", "plain", "\"plain\"" },
		{ "a\tb\\c\x1b", "a\\tb\\c\\x1b", "a\\tb\\\\c\\x1b", "\"a\\tb\\\\c\\u001b\"" },
		{ "\xe6\x97\xa5 \xc3\xa9", "\xe6\x97\xa5 \xc3\xa9", "\xe6\x97\xa5 \xc3\xa9",
		  "\"\xe6\x97\xa5 \xc3\xa9\"" },
		{ "w\xff\xfe", "w\\xff\\xfe", "w\\xff\\xfe", "\"w\xef\xbf\xbd\xef\xbf\xbd\"" },
		/* overlong '/', a surrogate, past U+10FFFF, cut short, a lone continuation */
		{ "\xc0\xaf", "\\xc0\\xaf", "\\xc0\\xaf", "\"\xef\xbf\xbd\xef\xbf\xbd\"" },
		{ "\xed\xa0\x80", "\\xed\\xa0\\x80", "\\xed\\xa0\\x80",
		  "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"" },
		{ "\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80", "\\xf4\\x90\\x80\\x80",
		  "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"" },
		{ "x\xe6\x97", "x\\xe6\\x97", "x\\xe6\\x97", "\"x\xef\xbf\xbd\xef\xbf\xbd\"" },
		{ "\x80y", "\\x80y", "\\x80y", "\"\xef\xbf\xbdy\"" },
	};
	for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
		xpf_buf t = XPF_BUF_INIT, v = XPF_BUF_INIT, j = XPF_BUF_INIT, u = XPF_BUF_INIT;
		xpf_buf_text(&t, c[i].in);
		xpf_buf_tsv(&v, c[i].in);
		xpf_buf_json_str(&j, c[i].in);
		xpf_buf_utf8(&u, c[i].in);
		assert_string_equal(t.data, c[i].text);
		assert_string_equal(v.data, c[i].tsv);
		assert_string_equal(j.data, c[i].json);
		/* xpf_buf_utf8: the JSON string's bytes without quotes and escapes */
		if (strchr(c[i].in, '\\') == NULL && strchr(c[i].in, '\t') == NULL) {
			assert_int_equal(u.len, j.len - 2);
			assert_memory_equal(u.data, j.data + 1, u.len);
		}
		/* the text escape of an escaped text is itself */
		xpf_buf again = XPF_BUF_INIT;
		assert_string_equal(xpf_text_of(&again, t.data), t.data);
		xpf_buf_release(&again);
		xpf_buf_release(&t);
		xpf_buf_release(&v);
		xpf_buf_release(&j);
		xpf_buf_release(&u);
	}
	assert_int_equal(xpf_utf8_len("\xf0\x9f\x98\x80", 4), 4);
	assert_int_equal(xpf_utf8_len("\xf0\x9f\x98\x80", 3), 0);
	assert_int_equal(xpf_utf8_len("\xe0\x80\x80", 3), 0); /* overlong */
}

/* Signed figures of byte counts past 2^63 saturate, never overflow. */
static void test_signed_figures(void **state)
{
	(void)state;
	assert_int_equal(xpf_diff_u64(10, 4), 6);
	assert_int_equal(xpf_diff_u64(4, 10), -6);
	assert_int_equal(xpf_diff_u64((uint64_t)INT64_MAX, (uint64_t)INT64_MAX + 6), -6);
	assert_true(xpf_diff_u64(UINT64_MAX, 0) == INT64_MAX);
	assert_true(xpf_diff_u64(0, UINT64_MAX) == INT64_MIN);
	assert_true(xpf_diff_u64(0, (uint64_t)INT64_MAX + 1) == INT64_MIN);
	assert_true(xpf_sub_i64(INT64_MAX, -6) == INT64_MAX);
	assert_true(xpf_sub_i64(INT64_MIN, 1) == INT64_MIN);
	assert_int_equal(xpf_sub_i64(-6, 4), -10);
	assert_true(xpf_abs_i64(INT64_MIN) == (uint64_t)INT64_MAX + 1);
	assert_int_equal(xpf_abs_i64(-6), 6);
}

/* Interning: one copy a content, whatever its length (the hash reads eight
 * bytes a step, then the rest), across the table's growth. */
static void test_intern(void **state)
{
	(void)state;
	enum { N = 20000 };
	xpf_intern *set = xpf_intern_new();
	const char **first = calloc(N, sizeof *first);
	assert_non_null(first);
	char s[64];
	for (int round = 0; round < 2; round++)
		for (int i = 0; i < N; i++) {
			int n = snprintf(s, sizeof s, "%.*s%d", i % 37,
					 "abcdefghijklmnopqrstuvwxyz0123456789", i);
			const char *v = xpf_intern_get(set, s, (size_t)n);
			assert_string_equal(v, s);
			if (round == 0)
				first[i] = v;
			else
				assert_ptr_equal(v, first[i]);
		}
	assert_int_equal(xpf_intern_count(set), N);
	assert_ptr_equal(xpf_intern_get(set, NULL, 0), xpf_intern_get(set, "", 0));
	free(first);
	xpf_intern_free(set);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_put_get_grow), cmocka_unit_test(test_against_model),
		cmocka_unit_test(test_wrap_around),  cmocka_unit_test(test_runs_merge),
		cmocka_unit_test(test_perm_apply),   cmocka_unit_test(test_buf_printf),
		cmocka_unit_test(test_buf_add_i64),  cmocka_unit_test(test_intern),
		cmocka_unit_test(test_buf_escapes), cmocka_unit_test(test_signed_figures),
		cmocka_unit_test(test_lower_bound),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
