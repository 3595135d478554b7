/*
 * test_btree_node.c - node layout (heads, hints, prefix, split, merge,
 * compaction, torn reads) and the in-memory baseline tree, both against the
 * reference model in test_btree_model.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <cmocka.h>

#include "test_btree_model.h"

static uint8_t *
new_node(void)
{
	uint8_t    *n = aligned_alloc(64, LS_PAGE_SIZE);

	assert_non_null(n);
	return n;
}

static void
assert_node_ok(const uint8_t *n)
{
	char		msg[256] = "";
	ls_status	st = ls_node_check(n, msg, sizeof(msg));

	if (st != LS_OK)
		fail_msg("node check: %s", msg);
}

/* Node content equals model entries [from, to). */
static void
assert_node_equals(const uint8_t *n, const model *m, size_t from, size_t to)
{
	uint8_t		key[LS_BTREE_MAX_KEY];

	assert_int_equal(ls_node_cheader(n)->count, to - from);
	for (size_t i = from; i < to; i++)
	{
		uint32_t	klen = ls_node_key(n, (uint16_t) (i - from), key);
		uint32_t	vlen;
		const uint8_t *v = ls_node_value(n, (uint16_t) (i - from), &vlen);

		assert_int_equal(klen, m->e[i].klen);
		assert_memory_equal(key, m->e[i].key, klen);
		assert_int_equal(vlen, m->e[i].vlen);
		if (vlen)
			assert_memory_equal(v, m->e[i].val, vlen);
	}
}

static void
test_node_prefix_heads(void **state)
{
	(void) state;
	uint8_t    *n = new_node();
	const uint8_t lo[] = "customer:000100";
	const uint8_t hi[] = "customer:000199";

	ls_node_init(n, 0, lo, 15, hi, 15);
	assert_int_equal(ls_node_header(n)->prefix_len, 13);	/* "customer:0001" */
	assert_int_equal(ls_node_insert(n, (const uint8_t *) "customer:000150", 15, "v", 1), LS_OK);
	assert_int_equal(ls_node_insert(n, (const uint8_t *) "customer:000150", 15, "w", 1), LS_EXISTS);
	assert_int_equal(ls_node_insert(n, (const uint8_t *) "customer:000", 12, "x", 1), LS_INVALID);
	/* Stored suffix is "50", head = '5' '0' 0 0. */
	assert_int_equal(ls_node_slots(n)[0].klen, 2);
	assert_int_equal(ls_node_slots(n)[0].head, 0x35300000u);
	/* Keys with equal heads are ordered by the full suffix. */
	assert_int_equal(ls_node_insert(n, (const uint8_t *) "customer:00015000", 17, "y", 1), LS_OK);
	assert_int_equal(ls_node_insert(n, (const uint8_t *) "customer:0001500", 16, "z", 1), LS_OK);
	bool		exact;

	assert_int_equal(ls_node_lower_bound(n, (const uint8_t *) "customer:0001500", 16, &exact), 1);
	assert_true(exact);
	assert_int_equal(ls_node_lower_bound(n, (const uint8_t *) "customer:00015", 14, &exact), 0);
	assert_false(exact);
	/* Keys outside the prefix range sort before / after everything. */
	assert_int_equal(ls_node_lower_bound(n, (const uint8_t *) "a", 1, &exact), 0);
	assert_int_equal(ls_node_lower_bound(n, (const uint8_t *) "z", 1, &exact), 3);
	assert_node_ok(n);
	free(n);
}

/* Random inserts/removes/updates in one node with fences, against the model. */
static void
test_node_random(void **state)
{
	(void) state;
	uint8_t    *n = new_node();
	model		m = {0};
	uint64_t	rng = 42;
	uint8_t		key[64],
				val[LS_BTREE_MAX_VALUE];

	ls_node_init(n, 0, (const uint8_t *) "row/0", 5, (const uint8_t *) "row/9", 5);
	for (int op = 0; op < 20000; op++)
	{
		/* Keys "row/<1-9><random tail>" lie strictly inside the fences. */
		uint32_t	klen = 5 + (uint32_t) (ls_rand_next(&rng) % 6);

		memcpy(key, "row/", 4);
		key[4] = (uint8_t) ('1' + ls_rand_next(&rng) % 8);
		for (uint32_t i = 5; i < klen; i++)
			key[i] = (uint8_t) (ls_rand_next(&rng) % 4);
		uint32_t	vlen = random_value(&rng, val, 300);
		uint64_t	r = ls_rand_next(&rng) % 10;
		bool		exact;
		uint16_t	pos = ls_node_lower_bound(n, key, klen, &exact);
		bool		found;
		size_t		mi = model_find(&m, key, klen, &found);

		assert_int_equal(pos, mi);
		assert_int_equal(exact, found);
		if (r < 5)
		{
			ls_status	st = ls_node_insert(n, key, klen, val, vlen);

			if (found)
				assert_int_equal(st, LS_EXISTS);
			else if (st == LS_OK)
				model_insert(&m, key, klen, val, vlen);
			else
			{
				assert_int_equal(st, LS_NO_SPACE);
				assert_false(ls_node_can_insert(n, klen, vlen));
			}
		}
		else if (r < 8 && found)
		{
			ls_node_remove_at(n, pos);
			model_remove(&m, key, klen);
		}
		else if (found)
		{
			ls_status	st = ls_node_set_value(n, pos, val, vlen);

			if (st == LS_OK)
				model_update(&m, key, klen, val, vlen);
			else
				assert_int_equal(st, LS_NO_SPACE);
		}
		if (op % 500 == 0)
		{
			assert_node_ok(n);
			assert_node_equals(n, &m, 0, m.n);
		}
		if (op % 3000 == 0)
		{
			ls_node_compact(n);
			assert_int_equal(ls_node_free_space(n), ls_node_free_after_compaction(n));
		}
	}
	assert_node_ok(n);
	assert_node_equals(n, &m, 0, m.n);
	model_free(&m);
	free(n);
}

/* Fill a leaf, split it (both plans), check halves and separator, merge back. */
static void
test_node_split_merge_leaf(void **state)
{
	(void) state;
	uint8_t    *n = new_node(),
			   *left = new_node(),
			   *tmp = new_node();
	uint64_t	rng = 7;

	for (int append = 0; append < 2; append++)
	{
		model		m = {0};
		uint8_t		key[LS_BTREE_MAX_KEY],
					val[64];

		ls_node_init(n, 0, (const uint8_t *) "k", 1, NULL, 0);
		for (;;)
		{
			uint32_t	klen = 2 + (uint32_t) (ls_rand_next(&rng) % 20);

			key[0] = 'k';
			for (uint32_t i = 1; i < klen; i++)
				key[i] = (uint8_t) ('a' + ls_rand_next(&rng) % 26);
			uint32_t	vlen = random_value(&rng, val, 64);
			ls_status	st = ls_node_insert(n, key, klen, val, vlen);

			if (st == LS_NO_SPACE)
				break;
			if (st == LS_OK)
				model_insert(&m, key, klen, val, vlen);
		}
		ls_node_split_plan plan;

		/* "l" sorts after every key of this rightmost leaf: an ascending load */
		assert_int_equal(ls_node_plan_split(n, append ? (const uint8_t *) "l" : NULL, 1, &plan), LS_OK);
		/* Separator: e[pos] <= sep < e[pos + 1]. */
		assert_true(ls_key_cmp(m.e[plan.pos].key, m.e[plan.pos].klen, plan.sep, plan.sep_len) <= 0);
		assert_true(ls_key_cmp(plan.sep, plan.sep_len, m.e[plan.pos + 1].key, m.e[plan.pos + 1].klen) < 0);
		if (append)
			assert_int_equal(plan.pos, m.n - 2);
		else
			assert_true(plan.sep_len < 22);	/* truncated, never longer than a key */
		ls_node_split(n, left, &plan, tmp);
		assert_node_ok(left);
		assert_node_ok(n);
		assert_node_equals(left, &m, 0, plan.pos + 1);
		assert_node_equals(n, &m, plan.pos + 1, m.n);
		/* Right half keeps the old upper fence (infinite). */
		uint32_t	ul;

		ls_node_upper_fence(n, &ul);
		assert_int_equal(ul, 0);
		assert_int_equal(ls_node_merge(left, n, tmp), LS_OK);
		assert_node_ok(n);
		assert_node_equals(n, &m, 0, m.n);
		uint32_t	ll;
		const uint8_t *lf = ls_node_lower_fence(n, &ll);

		assert_int_equal(ll, 1);
		assert_int_equal(lf[0], 'k');
		model_free(&m);
	}
	free(n);
	free(left);
	free(tmp);
}

/* A leaf with upper fence 1000000 holding keys run[] then 5000, 5002, ... */
static uint16_t
fill_run_leaf(uint8_t *n, uint64_t run_from, uint64_t run_to)
{
	uint8_t		key[8],
				upper[8];
	uint64_t	v = 0;
	uint16_t	count = 0;

	ls_put_be64(upper, 1000000);
	ls_node_init(n, 0, NULL, 0, upper, 8);
	for (uint64_t k = run_from; k < run_to; k++)
	{
		ls_put_be64(key, k);
		assert_int_equal(ls_node_insert(n, key, 8, &v, 8), LS_OK);
		count++;
	}
	for (uint64_t k = 5000;; k += 2)
	{
		ls_put_be64(key, k);
		if (ls_node_insert(n, key, 8, &v, 8) != LS_OK)
			break;
		count++;
	}
	return count;
}

/* The key of slot pos as an integer. */
static uint64_t
slot_key(const uint8_t *n, uint16_t pos)
{
	uint8_t		key[LS_BTREE_MAX_KEY];

	assert_int_equal(ls_node_key(n, pos, key), 8);
	return ls_get_be64(key);
}

/*
 * Split planning with the key being inserted: a run inserted into a gap
 * (keys 1000.. before 5000..) splits right after the run with the run's
 * next key on the left; a run at the end of a leaf that is not the
 * rightmost one keeps all but one entry left; a key far from its left
 * neighbour, one filling a gap of one, the first key below a leaf and no
 * key split by bytes.
 */
static void
test_node_split_run(void **state)
{
	(void) state;
	uint8_t    *n = new_node(),
			   *left = new_node(),
			   *tmp = new_node();
	uint8_t		key[8];
	ls_node_split_plan plan;
	ls_node_split_plan even;
	uint16_t	count = fill_run_leaf(n, 1000, 1100);

	/* the even split, for comparison */
	assert_int_equal(ls_node_plan_split(n, NULL, 0, &even), LS_OK);
	assert_true(even.pos > 100 && even.pos < count - 2);

	/* 1100 continues the run 1000..1099: cut after 1099, 1100 goes left */
	ls_put_be64(key, 1100);
	assert_int_equal(ls_node_plan_split(n, key, 8, &plan), LS_OK);
	assert_int_equal(plan.pos, 99);
	assert_true(ls_key_cmp(key, 8, plan.sep, plan.sep_len) <= 0);
	ls_node_split(n, left, &plan, tmp);
	assert_node_ok(left);
	assert_node_ok(n);
	assert_int_equal(ls_node_cheader(left)->count, 100);
	assert_int_equal(slot_key(n, 0), 5000);
	assert_int_equal(ls_node_insert(left, key, 8, &plan, 8), LS_OK);
	assert_node_ok(left);

	/* a step of LS_NODE_RUN_GAP is still a run; one more is not */
	fill_run_leaf(n, 1000, 1100);
	ls_put_be64(key, 1099 + LS_NODE_RUN_GAP);
	assert_int_equal(ls_node_plan_split(n, key, 8, &plan), LS_OK);
	assert_int_equal(plan.pos, 99);
	ls_put_be64(key, 1099 + LS_NODE_RUN_GAP + 1);
	assert_int_equal(ls_node_plan_split(n, key, 8, &plan), LS_OK);
	assert_int_equal(plan.pos, even.pos);

	/* 5001 fills a gap of one between 5000 and 5002: even */
	ls_put_be64(key, 5001);
	assert_int_equal(ls_node_plan_split(n, key, 8, &plan), LS_OK);
	assert_int_equal(plan.pos, even.pos);

	/* below every key (no left neighbour here): even */
	ls_put_be64(key, 999);
	assert_int_equal(ls_node_plan_split(n, key, 8, &plan), LS_OK);
	assert_int_equal(plan.pos, even.pos);

	/* after the last key of a leaf with an upper fence: all but one left */
	count = fill_run_leaf(n, 1000, 1000);
	uint64_t	last = slot_key(n, (uint16_t) (count - 1));

	ls_put_be64(key, last + 1);
	assert_int_equal(ls_node_plan_split(n, key, 8, &plan), LS_OK);
	assert_int_equal(plan.pos, count - 2);
	assert_true(ls_key_cmp(plan.sep, plan.sep_len, key, 8) < 0);
	/* ... but far after it: even */
	ls_put_be64(key, last + 500);
	assert_int_equal(ls_node_plan_split(n, key, 8, &plan), LS_OK);
	assert_true(plan.pos < count - 2);

	free(n);
	free(left);
	free(tmp);
}

/* Inner node: separator moves up with its child; merge pulls it down. */
static void
test_node_split_merge_inner(void **state)
{
	(void) state;
	uint8_t    *n = new_node(),
			   *left = new_node(),
			   *tmp = new_node(),
			   *full = new_node();
	uint8_t		key[8];
	uint16_t	count = 0;

	ls_node_init(n, 1, NULL, 0, NULL, 0);
	ls_node_header(n)->upper = 999999;
	for (uint64_t k = 0;; k++)
	{
		ls_put_be64(key, k * 10);
		uint64_t	child = 1000 + k;

		if (ls_node_insert(n, key, 8, &child, 8) != LS_OK)
			break;
		count++;
	}
	assert_true(count > 250);
	memcpy(full, n, LS_NODE_SIZE);
	ls_node_split_plan plan;

	assert_int_equal(ls_node_plan_split(n, NULL, 0, &plan), LS_OK);
	ls_node_split(n, left, &plan, tmp);
	assert_node_ok(left);
	assert_node_ok(n);
	assert_int_equal(ls_node_header(left)->count + ls_node_header(n)->count + 1, count);
	assert_int_equal(ls_node_header(left)->upper, 1000 + plan.pos);
	assert_int_equal(ls_node_header(n)->upper, 999999);
	assert_int_equal(ls_get_be64(plan.sep), (uint64_t) plan.pos * 10);
	/* Child lookups still go to the same children. */
	for (uint64_t k = 0; k < count; k++)
	{
		ls_put_be64(key, k * 10);
		uint64_t	expect = 1000 + k;
		uint8_t    *half = k <= plan.pos ? left : n;

		assert_int_equal(*ls_node_child_for(half, key, 8), expect);
		assert_true(((uintptr_t) ls_node_child_for(half, key, 8)) % 8 == 0);
	}
	assert_int_equal(ls_node_merge(left, n, tmp), LS_OK);
	assert_node_ok(n);
	assert_int_equal(ls_node_header(n)->count, count);
	for (uint16_t i = 0; i < count; i++)
		assert_int_equal(*ls_node_child_ref(n, i), *ls_node_child_ref(full, i));
	/* A merge that cannot fit leaves both nodes unchanged. */
	const uint8_t sep = 0x80;

	ls_node_init(left, 1, NULL, 0, &sep, 1);
	ls_node_init(n, 1, &sep, 1, NULL, 0);
	for (uint64_t k = 0; k < (uint64_t) count / 2 + 10; k++)
	{
		uint64_t	child = k;

		ls_put_be64(key, k);
		assert_int_equal(ls_node_insert(left, key, 8, &child, 8), LS_OK);
		ls_put_be64(key, k | (0x90ULL << 56));
		assert_int_equal(ls_node_insert(n, key, 8, &child, 8), LS_OK);
	}
	memcpy(full, n, LS_NODE_SIZE);
	assert_int_equal(ls_node_merge(left, n, tmp), LS_NO_SPACE);
	assert_memory_equal(n, full, LS_NODE_SIZE);
	free(n);
	free(left);
	free(tmp);
	free(full);
}

/*
 * Torn reads: optimistic readers may see any bytes.  The read functions must
 * stay inside the node (ASan checks) and terminate.
 */
static void
test_node_torn_reads(void **state)
{
	(void) state;
	uint8_t    *n = new_node();
	uint64_t	rng = 99;
	uint8_t		key[LS_BTREE_MAX_KEY];

	for (int round = 0; round < 3000; round++)
	{
		for (uint32_t i = 0; i < LS_NODE_SIZE; i += 8)
		{
			uint64_t	r = ls_rand_next(&rng);

			memcpy(n + i, &r, 8);
		}
		if (round % 2)
		{
			/* Plausible header with wild offsets. */
			ls_node_header(n)->count = (uint16_t) (ls_rand_next(&rng) % 2000);
			ls_node_header(n)->prefix_len = (uint16_t) (ls_rand_next(&rng) % 40);
		}
		uint32_t	klen = 1 + (uint32_t) (ls_rand_next(&rng) % 16);

		for (uint32_t i = 0; i < klen; i++)
			key[i] = (uint8_t) ls_rand_next(&rng);
		bool		exact;
		uint16_t	pos = ls_node_lower_bound(n, key, klen, &exact);
		uint32_t	len;

		assert_true(pos <= LS_NODE_MAX_SLOTS);
		uint64_t   *ref = ls_node_child_for(n, key, klen);

		assert_true((uint8_t *) ref >= n && (uint8_t *) ref + 8 <= n + LS_NODE_SIZE);
		const uint8_t *v = ls_node_value(n, pos, &len);

		assert_true(v >= n && v + len <= n + LS_NODE_SIZE);
		assert_true(ls_node_key(n, pos, key) <= LS_BTREE_MAX_KEY);
		ls_node_lower_fence(n, &len);
		ls_node_upper_fence(n, &len);
	}
	free(n);
}

static void
assert_memtree_ok(const ls_memtree *t, const model *m)
{
	char		msg[256] = "";
	uint64_t	entries;

	if (ls_memtree_verify(t, &entries, msg, sizeof(msg)) != LS_OK)
		fail_msg("memtree verify: %s", msg);
	assert_int_equal(entries, m->n);
}

typedef struct scan_check
{
	const model *m;
	size_t		next;
	size_t		seen;
	size_t		limit;
} scan_check;

static bool
scan_cb(void *arg, const uint8_t *key, uint32_t klen, const uint8_t *val, uint32_t vlen)
{
	scan_check *c = arg;
	const model_entry *e = &c->m->e[c->next];

	assert_true(c->next < c->m->n);
	assert_int_equal(klen, e->klen);
	assert_memory_equal(key, e->key, klen);
	assert_int_equal(vlen, e->vlen);
	if (vlen)
		assert_memory_equal(val, e->val, vlen);
	c->next++;
	c->seen++;
	return c->seen < c->limit;
}

static ls_status
mt_insert(void *t, const uint8_t *key, uint32_t klen, const void *val, uint32_t vlen)
{
	return ls_memtree_insert(t, key, klen, val, vlen);
}

static ls_status
mt_update(void *t, const uint8_t *key, uint32_t klen, const void *val, uint32_t vlen)
{
	return ls_memtree_update(t, key, klen, val, vlen);
}

static ls_status
mt_remove(void *t, const uint8_t *key, uint32_t klen)
{
	return ls_memtree_remove(t, key, klen);
}

static ls_status
mt_lookup(void *t, const uint8_t *key, uint32_t klen, void *out, uint32_t cap, uint32_t *vlen)
{
	return ls_memtree_lookup(t, key, klen, out, cap, vlen);
}

/* The memtree has no append path: both insert kinds are plain inserts. */
static const model_tree_ops mt_model_ops = {mt_insert, mt_insert, mt_update, mt_remove, mt_lookup};

static void
test_memtree_random(void **state)
{
	(void) state;
	ls_memtree	t;
	model		m = {0};
	uint64_t	rng = 12345;
	uint8_t		key[LS_BTREE_MAX_KEY],
				val[LS_BTREE_MAX_VALUE];
	int			ops = getenv("LEANSTORE_TEST_SCALE") ? 30000 : 120000;

	assert_int_equal(ls_memtree_create(&t), LS_OK);
	for (int op = 0; op < ops; op++)
	{
		/* Phases: grow, then churn, then shrink (so merges happen). */
		model_random_op(&mt_model_ops, &t, &m, &rng, op * 3 / ops, 100, 20000, LS_BTREE_MAX_VALUE);
		if (op % (ops / 20) == 0)
		{
			assert_memtree_ok(&t, &m);
			/* Scan 50 keys from a random start. */
			uint32_t	klen = random_key(&rng, key, 100, 20000);
			bool		f3;
			scan_check	c = {&m, model_find(&m, key, klen, &f3), 0, 50};

			assert_int_equal(ls_memtree_scan(&t, key, klen, scan_cb, &c), LS_OK);
			assert_int_equal(c.seen, LS_MIN(50, m.n - (c.next - c.seen)));
		}
	}
	assert_memtree_ok(&t, &m);
	scan_check	c = {&m, 0, 0, SIZE_MAX};

	assert_int_equal(ls_memtree_scan(&t, NULL, 0, scan_cb, &c), LS_OK);
	assert_int_equal(c.seen, m.n);
	assert_true(t.height >= 2);
	/* Limits. */
	assert_int_equal(ls_memtree_insert(&t, key, 0, val, 1), LS_INVALID);
	assert_int_equal(ls_memtree_insert(&t, key, LS_BTREE_MAX_KEY + 1, val, 1), LS_TOO_LARGE);
	assert_int_equal(ls_memtree_insert(&t, key, 8, val, LS_BTREE_MAX_VALUE + 1), LS_TOO_LARGE);
	/* Remove everything: the tree collapses to one leaf. */
	while (m.n)
	{
		assert_int_equal(ls_memtree_remove(&t, m.e[0].key, m.e[0].klen), LS_OK);
		model_remove(&m, m.e[0].key, m.e[0].klen);
	}
	assert_memtree_ok(&t, &m);
	assert_int_equal(t.height, 1);
	assert_int_equal(t.nodes, 1);
	ls_memtree_destroy(&t);
	model_free(&m);
}

/* Ascending 8-byte keys fill leaves nearly completely (append split). */
static void
test_memtree_ascending_fill(void **state)
{
	(void) state;
	ls_memtree	t;
	uint8_t		key[8];
	uint64_t	v = 0;
	const uint64_t n = 200000;

	assert_int_equal(ls_memtree_create(&t), LS_OK);
	for (uint64_t k = 0; k < n; k++)
	{
		ls_put_be64(key, k);
		assert_int_equal(ls_memtree_insert(&t, key, 8, &v, 8), LS_OK);
	}
	/* Entry = 12-byte slot + 8-byte value + suffix <= 8: >= 270 per 8 KiB leaf. */
	assert_true(t.nodes < n / 270 + 10);
	char		msg[256];
	uint64_t	entries;

	assert_int_equal(ls_memtree_verify(&t, &entries, msg, sizeof(msg)), LS_OK);
	assert_int_equal(entries, n);
	ls_memtree_destroy(&t);
}

/*
 * Runs inserted into gaps, as pack inserts hot rows of older rowids into a
 * tree that already holds younger ones: blocks of 10000 keys, every second
 * one loaded first, then the others, each ascending.  The leaves come out
 * nearly full (even splits would leave the gap runs' leaves half full:
 * about 1.5 times as many leaves in all).
 */
static void
test_memtree_gap_runs(void **state)
{
	(void) state;
	ls_memtree	t;
	uint8_t		key[8];
	uint64_t	v = 0;
	const uint64_t block = 10000,
				blocks = 20;

	assert_int_equal(ls_memtree_create(&t), LS_OK);
	for (int pass = 1; pass >= 0; pass--)
		for (uint64_t b = (uint64_t) pass; b < blocks; b += 2)
			for (uint64_t k = b * block; k < (b + 1) * block; k++)
			{
				ls_put_be64(key, k);
				assert_int_equal(ls_memtree_insert(&t, key, 8, &v, 8), LS_OK);
			}
	/* >= 270 entries a full leaf; a few half leaves where runs meet */
	assert_true(t.nodes < blocks * block / 270 * 11 / 10 + 2 * blocks + 10);
	char		msg[256];
	uint64_t	entries;

	assert_int_equal(ls_memtree_verify(&t, &entries, msg, sizeof(msg)), LS_OK);
	assert_int_equal(entries, blocks * block);
	ls_memtree_destroy(&t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_node_prefix_heads),
		cmocka_unit_test(test_node_random),
		cmocka_unit_test(test_node_split_merge_leaf),
		cmocka_unit_test(test_node_split_run),
		cmocka_unit_test(test_node_split_merge_inner),
		cmocka_unit_test(test_node_torn_reads),
		cmocka_unit_test(test_memtree_random),
		cmocka_unit_test(test_memtree_ascending_fill),
		cmocka_unit_test(test_memtree_gap_runs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
