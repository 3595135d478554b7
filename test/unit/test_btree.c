/*
 * test_btree.c - the buffer-managed B+-tree in one process, against the
 * reference model: random operations with verify (pool holding everything,
 * and a small pool with a provider thread evicting all the time), scans in
 * both directions, large values and LS_TOO_LARGE, the append path,
 * eviction of everything and reload, and destroy freeing every page.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <cmocka.h>

#include "test_btree_model.h"
#include "tu.h"

typedef struct fixture
{
	tu_pool		pool;
	ls_bm	   *bm;				/* pool.bm */
	ls_btree   *tree;			/* in the shared region of the test */
	size_t		tree_size;
} fixture;

static void
fx_open(fixture *fx, uint64_t frames)
{
	memset(fx, 0, sizeof(*fx));
	assert_int_equal(tu_pool_open(&fx->pool, frames, (ls_bm_config) {.free_target_pct = 10}), LS_OK);
	fx->bm = fx->pool.bm;
	ls_btree_register_type();
	fx->tree_size = sizeof(ls_btree);
	fx->tree = tu_shared_region(fx->tree_size);
	assert_int_equal(ls_btree_create(fx->bm, fx->tree), LS_OK);
}

static void
fx_close(fixture *fx)
{
	ls_bm_stats s;

	assert_int_equal(ls_btree_destroy(fx->tree), LS_OK);
	ls_bm_get_stats(fx->bm, &s);
	/* Destroy gave back every page, in memory and on disk. */
	assert_int_equal(s.allocated_pages, 0);
	assert_int_equal(s.free_frames, s.n_frames);
	tu_pool_close(&fx->pool);
	tu_free_region(fx->tree, fx->tree_size);
}

static void
assert_verify(ls_btree *t, const model *m, ls_btree_info *out)
{
	char		msg[256] = "";
	ls_btree_info info;
	ls_status	st = ls_btree_verify(t, &info, msg, sizeof(msg));

	if (st != LS_OK)
		fail_msg("verify: %s (%s)", ls_status_str(st), msg);
	assert_int_equal(info.entries, m->n);
	/* One tree per pool here: every allocated page is reachable from the root. */
	ls_bm_stats bs;

	ls_bm_get_stats(t->bm, &bs);
	assert_int_equal(bs.allocated_pages, info.leaves + info.inner);
	if (out)
		*out = info;
}

typedef struct scan_state
{
	const model *m;
	size_t		next;			/* model index expected next */
	bool		asc;
	size_t		seen;
	size_t		limit;
} scan_state;

static bool
scan_cb(void *arg, const uint8_t *key, uint32_t klen, const uint8_t *val, uint32_t vlen)
{
	scan_state *s = arg;

	assert_true(s->asc ? s->next < s->m->n : s->next != SIZE_MAX);
	const model_entry *e = &s->m->e[s->next];

	assert_int_equal(klen, e->klen);
	assert_memory_equal(key, e->key, klen);
	assert_int_equal(vlen, e->vlen);
	if (vlen)
		assert_memory_equal(val, e->val, vlen);
	s->next = s->asc ? s->next + 1 : s->next - 1;
	return ++s->seen < s->limit;
}

/* Scan limit entries both ways from a random key and from the ends. */
static void
check_scans(ls_btree *t, const model *m, uint64_t *rng, size_t limit)
{
	uint8_t		key[LS_BTREE_MAX_KEY];
	uint32_t	klen = random_key(rng, key, 64, 20000);
	bool		found;
	size_t		i = model_find(m, key, klen, &found);

	/* Ascending from key: first entry >= key. */
	scan_state	s = {m, i, true, 0, limit};

	assert_int_equal(ls_btree_scan_asc(t, key, klen, scan_cb, &s), LS_OK);
	assert_int_equal(s.seen, LS_MIN(limit, m->n - i));
	/* Descending from key: last entry <= key. */
	size_t		last = found ? i : i - 1;	/* SIZE_MAX when none */

	s = (scan_state) {m, last, false, 0, limit};
	assert_int_equal(ls_btree_scan_desc(t, key, klen, scan_cb, &s), LS_OK);
	assert_int_equal(s.seen, LS_MIN(limit, last == SIZE_MAX ? 0 : last + 1));
	/* From the ends. */
	s = (scan_state) {m, 0, true, 0, limit};
	assert_int_equal(ls_btree_scan_asc(t, NULL, 0, scan_cb, &s), LS_OK);
	assert_int_equal(s.seen, LS_MIN(limit, m->n));
	s = (scan_state) {m, m->n - 1, false, 0, limit};
	assert_int_equal(ls_btree_scan_desc(t, NULL, 0, scan_cb, &s), LS_OK);
	assert_int_equal(s.seen, LS_MIN(limit, m->n));
}

static ls_status
bt_insert(void *t, const uint8_t *key, uint32_t klen, const void *val, uint32_t vlen)
{
	return ls_btree_insert(t, key, klen, val, vlen);
}

static ls_status
bt_append(void *t, const uint8_t *key, uint32_t klen, const void *val, uint32_t vlen)
{
	return ls_btree_append(t, key, klen, val, vlen);
}

static ls_status
bt_update(void *t, const uint8_t *key, uint32_t klen, const void *val, uint32_t vlen)
{
	return ls_btree_update(t, key, klen, val, vlen);
}

static ls_status
bt_remove(void *t, const uint8_t *key, uint32_t klen)
{
	return ls_btree_remove(t, key, klen);
}

static ls_status
bt_lookup(void *t, const uint8_t *key, uint32_t klen, void *out, uint32_t cap, uint32_t *vlen)
{
	return ls_btree_lookup(t, key, klen, out, cap, vlen);
}

static const model_tree_ops bt_model_ops = {bt_insert, bt_append, bt_update, bt_remove, bt_lookup};

/*
 * Random operations in three phases (grow, churn, shrink) so splits and
 * merges at every level both happen; every result is compared with the model.
 */
static void
random_ops(fixture *fx, uint64_t seed, int ops, uint64_t keyspace, uint32_t maxval)
{
	ls_btree   *t = fx->tree;
	model		m = {0};
	uint64_t	rng = seed;

	for (int op = 0; op < ops; op++)
	{
		model_random_op(&bt_model_ops, t, &m, &rng, op * 3 / ops, 64, keyspace, maxval);
		if (op % (ops / 10) == 0)
		{
			assert_verify(t, &m, NULL);
			check_scans(t, &m, &rng, 200);
		}
	}
	ls_btree_info info;

	assert_verify(t, &m, &info);
	check_scans(t, &m, &rng, SIZE_MAX);
	/* Empty it: merges all the way up, the root collapses to one leaf. */
	while (m.n)
	{
		size_t		i = ls_rand_next(&rng) % m.n;

		assert_int_equal(ls_btree_remove(t, m.e[i].key, m.e[i].klen), LS_OK);
		model_remove(&m, m.e[i].key, m.e[i].klen);
	}
	assert_verify(t, &m, &info);
	assert_int_equal(info.height, 1);
	assert_int_equal(info.leaves, 1);
	assert_true(t->splits > 0 && t->merges > 0);
	model_free(&m);
}

static void
test_btree_random_in_memory(void **state)
{
	(void) state;
	fixture		fx;

	fx_open(&fx, 4096);
	random_ops(&fx, 1, (int) tu_scaled(60000), 20000, 600);
	fx_close(&fx);
}

/* Same with a pool far smaller than the data and a provider thread. */
static void
test_btree_random_evicting(void **state)
{
	(void) state;
	fixture		fx;
	ls_bm_stats s;

	fx_open(&fx, 40);
	assert_int_equal(ls_bm_provider_start_thread(fx.bm), LS_OK);
	random_ops(&fx, 2, (int) tu_scaled(40000), 20000, 2000);
	ls_bm_provider_stop(fx.bm);
	ls_bm_get_stats(fx.bm, &s);
	assert_true(s.evictions > 0 && s.reads > 0 && s.writes > 0);
	fx_close(&fx);
}

/* Values up to a quarter page; beyond is LS_TOO_LARGE; empty keys invalid. */
static void
test_btree_large_values(void **state)
{
	(void) state;
	fixture		fx;
	static uint8_t val[LS_BTREE_MAX_VALUE + 1],
				out[LS_BTREE_MAX_VALUE];
	uint8_t		key[LS_BTREE_MAX_KEY + 1];
	uint32_t	olen;

	fx_open(&fx, 256);
	memset(key, 'k', sizeof(key));
	for (uint32_t i = 0; i < sizeof(val); i++)
		val[i] = (uint8_t) (i * 7);
	assert_int_equal(ls_btree_insert(fx.tree, key, 8, val, LS_BTREE_MAX_VALUE + 1), LS_TOO_LARGE);
	assert_int_equal(ls_btree_insert(fx.tree, key, LS_BTREE_MAX_KEY + 1, val, 1), LS_TOO_LARGE);
	assert_int_equal(ls_btree_insert(fx.tree, key, 0, val, 1), LS_INVALID);
	/* Many max-size values with max-size keys: 2-3 per leaf. */
	for (uint32_t i = 0; i < 200; i++)
	{
		ls_put_be64(key + LS_BTREE_MAX_KEY - 8, i * 7919 % 200);
		val[0] = (uint8_t) i;
		assert_int_equal(ls_btree_insert(fx.tree, key, LS_BTREE_MAX_KEY, val, LS_BTREE_MAX_VALUE), LS_OK);
	}
	for (uint32_t i = 0; i < 200; i++)
	{
		ls_put_be64(key + LS_BTREE_MAX_KEY - 8, i * 7919 % 200);
		assert_int_equal(ls_btree_lookup(fx.tree, key, LS_BTREE_MAX_KEY, out, sizeof(out), &olen), LS_OK);
		assert_int_equal(olen, LS_BTREE_MAX_VALUE);
		assert_int_equal(out[0], (uint8_t) i);
		assert_memory_equal(out + 1, val + 1, LS_BTREE_MAX_VALUE - 1);
		/* A buffer too small is refused, not overrun. */
		assert_int_equal(ls_btree_lookup(fx.tree, key, LS_BTREE_MAX_KEY, out, 100, &olen), LS_TOO_LARGE);
		assert_int_equal(ls_btree_update(fx.tree, key, LS_BTREE_MAX_KEY, val, LS_BTREE_MAX_VALUE + 1),
						 LS_TOO_LARGE);
	}
	/* Shrink and grow values in place. */
	for (uint32_t i = 0; i < 200; i++)
	{
		ls_put_be64(key + LS_BTREE_MAX_KEY - 8, i);
		assert_int_equal(ls_btree_update(fx.tree, key, LS_BTREE_MAX_KEY, val, i % 3 ? 1 : LS_BTREE_MAX_VALUE),
						 LS_OK);
	}
	char		msg[256];
	ls_btree_info info;

	assert_int_equal(ls_btree_verify(fx.tree, &info, msg, sizeof(msg)), LS_OK);
	assert_int_equal(info.entries, 200);
	fx_close(&fx);
}

/* Ascending keys through the append path fill leaves nearly completely. */
static void
test_btree_append(void **state)
{
	(void) state;
	fixture		fx;
	uint8_t		key[8];
	uint64_t	n = tu_scaled(200000);
	char		msg[256];
	ls_btree_info info;
	uint32_t	olen;
	uint64_t	v;

	fx_open(&fx, 2048);
	for (uint64_t k = 0; k < n; k++)
	{
		ls_put_be64(key, k);
		assert_int_equal(ls_btree_append(fx.tree, key, 8, &k, 8), LS_OK);
	}
	/* Out of order keys fall back to a normal insert. */
	ls_put_be64(key, 5);
	assert_int_equal(ls_btree_append(fx.tree, key, 8, &n, 8), LS_EXISTS);
	assert_true(fx.tree->append_hits > n * 9 / 10);
	assert_int_equal(ls_btree_verify(fx.tree, &info, msg, sizeof(msg)), LS_OK);
	assert_int_equal(info.entries, n);
	assert_true(info.leaves < n / 270 + 4);
	for (uint64_t k = 0; k < n; k += 97)
	{
		ls_put_be64(key, k);
		assert_int_equal(ls_btree_lookup(fx.tree, key, 8, &v, 8, &olen), LS_OK);
		assert_int_equal(v, k);
	}
	fx_close(&fx);
}

/*
 * Runs into gaps, the way the cold tier's pack goes: blocks of 10000 rowids,
 * every second one appended first (bulk loads), then the others, each
 * ascending through ls_btree_append (not at the end of the tree: plain
 * inserts).  Leaves come out nearly full, not half full behind each gap.
 */
static void
test_btree_gap_runs(void **state)
{
	(void) state;
	fixture		fx;
	uint8_t		key[8];
	const uint64_t block = 10000,
				blocks = 20;
	char		msg[256];
	ls_btree_info info;

	fx_open(&fx, 2048);
	for (int pass = 1; pass >= 0; pass--)
		for (uint64_t b = (uint64_t) pass; b < blocks; b += 2)
			for (uint64_t k = b * block; k < (b + 1) * block; k++)
			{
				ls_put_be64(key, k);
				assert_int_equal(ls_btree_append(fx.tree, key, 8, &k, 8), LS_OK);
			}
	assert_int_equal(ls_btree_verify(fx.tree, &info, msg, sizeof(msg)), LS_OK);
	assert_int_equal(info.entries, blocks * block);
	assert_true(info.leaves < blocks * block / 270 * 11 / 10 + 2 * blocks + 4);
	fx_close(&fx);
}

/*
 * ls_btree_append_batch: batches of ascending keys with values of mixed
 * sizes fill leaves as the append path does and read back; a batch that
 * starts below the tree's last key still goes in (plain inserts); a key
 * present stops the batch there (done says where); an oversized entry
 * stops it before anything goes in.
 */
static void
test_btree_append_batch(void **state)
{
	(void) state;
	fixture		fx;
	uint64_t	n = tu_scaled(200000);
	uint8_t    *keys = malloc(8 * 600);
	char	   *vals = malloc(600 * 300);
	ls_btree_kv kv[600];
	char		msg[256];
	ls_btree_info info;
	uint32_t	done,
				olen;
	char		out[300];
	uint64_t	k = 0,
				bytes = 0;
	unsigned	seed = 7;

	assert_non_null(keys);
	assert_non_null(vals);
	fx_open(&fx, 2048);
	while (k < n)
	{
		uint32_t	m = 1 + rand_r(&seed) % 500;

		if (m > n - k)
			m = (uint32_t) (n - k);
		for (uint32_t i = 0; i < m; i++, k++)
		{
			/* keys 0, 2, 4, ...: the odd ones come later */
			ls_put_be64(keys + 8 * i, 2 * k);
			kv[i].key = keys + 8 * i;
			kv[i].klen = 8;
			kv[i].val = vals + 300 * i;
			kv[i].vlen = (k % 17 == 0) ? 250 : 8 + (uint32_t) (k % 40);
			memset(vals + 300 * i, (int) (k & 0xff), kv[i].vlen);
			bytes += kv[i].vlen;
		}
		assert_int_equal(ls_btree_append_batch(fx.tree, kv, m, &done), LS_OK);
		assert_int_equal(done, m);
	}
	assert_true(fx.tree->append_hits > n * 9 / 10);
	assert_int_equal(ls_btree_verify(fx.tree, &info, msg, sizeof(msg)), LS_OK);
	assert_int_equal(info.entries, n);
	/* nearly full leaves: within a fifth of the bytes' minimum */
	assert_true(info.leaves * LS_NODE_SIZE < (bytes + 12 * n) * 6 / 5 + 4 * LS_NODE_SIZE);

	/* a batch of odd keys inside the tree: plain inserts, all of them */
	for (uint32_t i = 0; i < 100; i++)
	{
		ls_put_be64(keys + 8 * i, 2 * (uint64_t) i * 997 + 1);
		kv[i] = (ls_btree_kv) {keys + 8 * i, 8, vals, 8};
	}
	assert_int_equal(ls_btree_append_batch(fx.tree, kv, 100, &done), LS_OK);
	assert_int_equal(done, 100);

	/* a present key stops the batch where it is */
	ls_put_be64(keys, 2 * n + 2);
	ls_put_be64(keys + 8, 2 * n + 4);
	ls_put_be64(keys + 16, 2 * n + 4);
	ls_put_be64(keys + 24, 2 * n + 6);
	for (uint32_t i = 0; i < 4; i++)
		kv[i] = (ls_btree_kv) {keys + 8 * i, 8, vals, 8};
	assert_int_equal(ls_btree_append_batch(fx.tree, kv, 2, &done), LS_OK);
	assert_int_equal(ls_btree_append_batch(fx.tree, kv + 2, 2, &done), LS_EXISTS);
	assert_int_equal(done, 0);

	/* an oversized entry: nothing of the batch goes in */
	ls_put_be64(keys, 2 * n + 10);
	kv[0] = (ls_btree_kv) {keys, 8, vals, 8};
	kv[1] = (ls_btree_kv) {keys + 24, 8, vals, LS_BTREE_MAX_VALUE + 1};
	assert_int_equal(ls_btree_append_batch(fx.tree, kv, 2, &done), LS_TOO_LARGE);
	assert_int_equal(done, 0);

	assert_int_equal(ls_btree_verify(fx.tree, &info, msg, sizeof(msg)), LS_OK);
	assert_int_equal(info.entries, n + 100 + 2);
	for (uint64_t j = 0; j < n; j += 89)
	{
		uint8_t		key[8];

		ls_put_be64(key, 2 * j);
		assert_int_equal(ls_btree_lookup(fx.tree, key, 8, out, sizeof(out), &olen), LS_OK);
		assert_int_equal(olen, (j % 17 == 0) ? 250 : 8 + (uint32_t) (j % 40));
		assert_int_equal((uint8_t) out[olen - 1], (uint8_t) (j & 0xff));
	}
	ls_put_be64(keys, 2 * n + 10);
	assert_int_equal(ls_btree_lookup(fx.tree, keys, 8, out, sizeof(out), &olen), LS_NOT_FOUND);
	fx_close(&fx);
	free(keys);
	free(vals);
}

/* Evict every page (inner nodes after their children), then read all back. */
static void
test_btree_evict_reload(void **state)
{
	(void) state;
	fixture		fx;
	uint8_t		key[8];
	uint64_t	n = tu_scaled(100000),
				v;
	uint32_t	olen;
	ls_bm_stats s0,
				s1;

	fx_open(&fx, 1024);
	for (uint64_t k = 0; k < n; k++)
	{
		ls_put_be64(key, k * 0x9E3779B97F4A7C15ULL);
		assert_int_equal(ls_btree_insert(fx.tree, key, 8, &k, 8), LS_OK);
	}
	char		msg[256];
	ls_btree_info info;

	assert_int_equal(ls_btree_verify(fx.tree, &info, msg, sizeof(msg)), LS_OK);
	for (int round = 0; round < 8; round++)
		ls_bm_evict_all(fx.bm);
	ls_bm_get_stats(fx.bm, &s0);
	assert_true(s0.free_frames + 2 >= s0.n_frames);	/* at most the root stays */
	for (uint64_t k = 0; k < n; k++)
	{
		ls_put_be64(key, k * 0x9E3779B97F4A7C15ULL);
		assert_int_equal(ls_btree_lookup(fx.tree, key, 8, &v, 8, &olen), LS_OK);
		assert_int_equal(v, k);
	}
	ls_bm_get_stats(fx.bm, &s1);
	/* Every page came back from disk (each leaf at least once). */
	assert_true(s1.reads >= s0.reads + info.leaves + info.inner - 1);
	fx_close(&fx);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_btree_random_in_memory),
		cmocka_unit_test(test_btree_random_evicting),
		cmocka_unit_test(test_btree_large_values),
		cmocka_unit_test(test_btree_append),
		cmocka_unit_test(test_btree_append_batch),
		cmocka_unit_test(test_btree_gap_runs),
		cmocka_unit_test(test_btree_evict_reload),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
