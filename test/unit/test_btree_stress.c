/*
 * test_btree_stress.c - several processes on shared B+-trees over one
 * MAP_SHARED region, with a buffer pool at most a tenth of the data and a
 * page-provider process evicting concurrently.
 *
 * Each worker owns the keys k with k % NWORKERS == worker, so it alone
 * decides their final state; it records that state (a sequence number per
 * key, 0 = absent) in a shared "log" array as it goes.  Workers also read
 * everybody's keys: every value a worker sees must be self-consistent (it
 * encodes its own tree, key and sequence), every scan must come back
 * strictly ordered and within its bounds, and for the worker's own keys
 * lookups and scans must show exactly what the log says.  Afterwards:
 * ls_btree_verify on each tree and a full comparison with the logs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <unistd.h>
#include <cmocka.h>

#include "test_btree_model.h"
#include "tu.h"

#define NWORKERS	4
#define NTREES		2
#define POOL_FRAMES 64
#define SCAN_MAX	100
#define VAL_MAX		(16 + 400)

typedef struct stress
{
	ls_bm	   *bm;
	ls_btree	trees[NTREES];
	uint64_t	nkeys;			/* per tree */
	uint64_t	ops;			/* per worker */
	_Atomic uint32_t workers_done;
	_Atomic uint64_t provider_rounds;
	_Atomic uint64_t scans;
	_Atomic uint64_t scanned;
	_Atomic uint64_t foreign_reads;
	/* log[t * nkeys + k]: sequence of the value the owner last stored */
	uint32_t	log[];
} stress;

/* Deterministic value for (tree, key, seq): length and bytes. */
static uint32_t
val_make(uint32_t tree, uint64_t k, uint32_t seq, uint8_t *buf)
{
	uint64_t	h = (k * 0x9E3779B97F4A7C15ULL) ^ ((uint64_t) seq * 0xC2B2AE3D27D4EB4FULL);
	uint32_t	len = 16 + (uint32_t) ((h >> 20) % (VAL_MAX - 16));

	ls_put_be64(buf, k);
	memcpy(buf + 8, &seq, 4);
	memcpy(buf + 12, &tree, 4);
	for (uint32_t i = 16; i < len; i++)
		buf[i] = (uint8_t) (k * 31 + seq * 7 + i);
	return len;
}

/* Sequence number a value carries, or 0 when it is not a valid value of (tree, k). */
static uint32_t
val_check(uint32_t tree, uint64_t k, const uint8_t *v, uint32_t len)
{
	uint8_t		expect[VAL_MAX];
	uint32_t	seq;

	if (len < 16)
		return 0;
	memcpy(&seq, v + 8, 4);
	if (seq == 0 || val_make(tree, k, seq, expect) != len || memcmp(expect, v, len) != 0)
		return 0;
	return seq;
}

typedef struct scan_ctx
{
	stress	   *s;
	uint32_t	tree;
	bool		asc;
	uint64_t	start;
	uint64_t	n;
	uint64_t	keys[SCAN_MAX];
	uint32_t	seqs[SCAN_MAX];
	bool		bad;
} scan_ctx;

static bool
scan_cb(void *arg, const uint8_t *key, uint32_t klen, const uint8_t *val, uint32_t vlen)
{
	scan_ctx   *c = arg;

	if (klen != 8)
	{
		c->bad = true;
		return false;
	}
	uint64_t	k = ls_get_be64(key);
	uint32_t	seq = val_check(c->tree, k, val, vlen);

	/* bounds, strict order, self-consistent value */
	if (seq == 0 || k >= c->s->nkeys || (c->asc ? k < c->start : k > c->start) ||
		(c->n > 0 && (c->asc ? k <= c->keys[c->n - 1] : k >= c->keys[c->n - 1])))
	{
		fprintf(stderr, "scan: bad entry key %llu seq %u (start %llu, n %llu)\n",
				(unsigned long long) k, seq, (unsigned long long) c->start, (unsigned long long) c->n);
		c->bad = true;
		return false;
	}
	c->keys[c->n] = k;
	c->seqs[c->n] = seq;
	c->n++;
	return c->n < SCAN_MAX;
}

/* Scan from a random key; own keys inside the covered range must match the log. */
static int
worker_scan(stress *s, int w, uint32_t t, uint64_t *rng)
{
	scan_ctx	c = {.s = s, .tree = t, .asc = ls_rand_next(rng) % 2};
	uint8_t		key[8];

	c.start = ls_rand_next(rng) % s->nkeys;
	ls_put_be64(key, c.start);
	ls_status	st = c.asc ? ls_btree_scan_asc(&s->trees[t], key, 8, scan_cb, &c)
		: ls_btree_scan_desc(&s->trees[t], key, 8, scan_cb, &c);

	TU_CHECK(st == LS_OK);
	TU_CHECK(!c.bad);
	/* The scan covered [start, last] (asc) or [last, start] (desc), or to the end. */
	uint64_t	lo,
				hi;

	if (c.n == SCAN_MAX)
	{
		lo = c.asc ? c.start : c.keys[c.n - 1];
		hi = c.asc ? c.keys[c.n - 1] : c.start;
	}
	else
	{
		lo = c.asc ? c.start : 0;
		hi = c.asc ? s->nkeys - 1 : c.start;
	}
	uint64_t	i = 0;

	for (uint64_t k = lo; k <= hi; k++)
	{
		/* entries arrive in scan order; walk them in key order */
		uint64_t	idx = c.asc ? i : c.n - 1 - i;
		bool		present = i < c.n && c.keys[idx] == k;

		if (present)
			i++;
		if (k % NWORKERS != (uint64_t) w)
			continue;
		uint32_t	logged = s->log[t * s->nkeys + k];

		if (logged != (present ? c.seqs[idx] : 0))
		{
			fprintf(stderr, "worker %d: scan shows key %llu as %u, log says %u\n", w,
					(unsigned long long) k, present ? c.seqs[idx] : 0, logged);
			return 1;
		}
	}
	TU_CHECK(i == c.n);
	atomic_fetch_add(&s->scans, 1);
	atomic_fetch_add(&s->scanned, c.n);
	return 0;
}

static int
worker_main(stress *s, int w)
{
	uint64_t	rng = 0x1234567ULL * (uint64_t) (w + 1);
	uint8_t		key[8],
				val[VAL_MAX],
				out[VAL_MAX];
	uint32_t	next_seq = 1u << 20;	/* above every prefill sequence */
	uint64_t	own = s->nkeys / NWORKERS;

	for (uint64_t op = 0; op < s->ops; op++)
	{
		uint32_t	t = (uint32_t) (ls_rand_next(&rng) % NTREES);
		ls_btree   *tree = &s->trees[t];
		uint64_t	k = (ls_rand_next(&rng) % own) * NWORKERS + (uint64_t) w;
		uint32_t   *logged = &s->log[t * s->nkeys + k];
		uint64_t	r = ls_rand_next(&rng) % 100;
		uint32_t	seq = next_seq++;
		uint32_t	vlen = val_make(t, k, seq, val);
		uint32_t	olen;
		ls_status	st;

		ls_put_be64(key, k);
		if (r < 25)
		{
			st = ls_btree_insert(tree, key, 8, val, vlen);
			TU_CHECK(st == (*logged ? LS_EXISTS : LS_OK));
			if (st == LS_OK)
				*logged = seq;
		}
		else if (r < 40)
		{
			st = ls_btree_update(tree, key, 8, val, vlen);
			TU_CHECK(st == (*logged ? LS_OK : LS_NOT_FOUND));
			if (st == LS_OK)
				*logged = seq;
		}
		else if (r < 60)
		{
			st = ls_btree_remove(tree, key, 8);
			TU_CHECK(st == (*logged ? LS_OK : LS_NOT_FOUND));
			*logged = 0;
		}
		else if (r < 75)
		{
			st = ls_btree_lookup(tree, key, 8, out, sizeof(out), &olen);
			TU_CHECK(st == (*logged ? LS_OK : LS_NOT_FOUND));
			TU_CHECK(st != LS_OK || val_check(t, k, out, olen) == *logged);
		}
		else if (r < 95)
		{
			/* anybody's key: must be absent or self-consistent */
			uint64_t	any = ls_rand_next(&rng) % s->nkeys;

			ls_put_be64(key, any);
			st = ls_btree_lookup(tree, key, 8, out, sizeof(out), &olen);
			TU_CHECK(st == LS_OK || st == LS_NOT_FOUND);
			TU_CHECK(st != LS_OK || val_check(t, any, out, olen) != 0);
			atomic_fetch_add_explicit(&s->foreign_reads, 1, memory_order_relaxed);
		}
		else if (worker_scan(s, w, t, &rng) != 0)
			return 1;
	}
	return 0;
}

/* The extra process: provider rounds until every worker is done. */
static int
provider_main(stress *s)
{
	while (atomic_load(&s->workers_done) < NWORKERS)
	{
		/* nothing to do: do not steal a core from the workers */
		if (ls_bm_provider_round(s->bm) == 0)
			usleep(100);
		atomic_fetch_add(&s->provider_rounds, 1);
	}
	return 0;
}

static int
stress_proc(int idx, void *arg)
{
	stress	   *s = arg;
	int			rc;

	if (idx == NWORKERS)
		rc = provider_main(s);
	else
	{
		rc = worker_main(s, idx);
		atomic_fetch_add(&s->workers_done, 1);
	}
	ls_bm_process_detach(s->bm);
	return rc;
}

typedef struct final_ctx
{
	stress	   *s;
	uint32_t	tree;
	uint64_t	n;
	int64_t		last;
	bool		bad;
} final_ctx;

static bool
final_cb(void *arg, const uint8_t *key, uint32_t klen, const uint8_t *val, uint32_t vlen)
{
	final_ctx  *c = arg;
	uint64_t	k = ls_get_be64(key);

	if (klen != 8 || k >= c->s->nkeys || (int64_t) k <= c->last ||
		val_check(c->tree, k, val, vlen) != c->s->log[c->tree * c->s->nkeys + k])
	{
		c->bad = true;
		return false;
	}
	c->last = (int64_t) k;
	c->n++;
	return true;
}

static void
test_btree_multiprocess_stress(void **state)
{
	(void) state;
	tu_pool		pool;
	uint64_t	nkeys = 48000;
	size_t		ss = sizeof(stress) + NTREES * nkeys * sizeof(uint32_t);
	stress	   *s = tu_shared_region(ss);
	uint8_t		key[8],
				val[VAL_MAX];

	assert_int_equal(tu_pool_open(&pool, POOL_FRAMES, (ls_bm_config) {.free_target_pct = 10}), LS_OK);
	s->bm = pool.bm;
	ls_btree_register_type();
	s->nkeys = nkeys;
	s->ops = tu_scaled(100000);
	/* Prefill about 60% of the keys (the pool is already evicting here). */
	uint64_t	rng = 77;

	for (uint32_t t = 0; t < NTREES; t++)
	{
		assert_int_equal(ls_btree_create(s->bm, &s->trees[t]), LS_OK);
		for (uint64_t k = 0; k < nkeys; k++)
		{
			if (ls_rand_next(&rng) % 10 >= 6)
				continue;
			uint32_t	seq = 1 + (uint32_t) (ls_rand_next(&rng) % 1000);
			uint32_t	vlen = val_make(t, k, seq, val);

			ls_put_be64(key, k);
			assert_int_equal(ls_btree_append(&s->trees[t], key, 8, val, vlen), LS_OK);
			s->log[t * nkeys + k] = seq;
		}
	}
	ls_bm_stats before;

	ls_bm_get_stats(s->bm, &before);
	/* The pool holds at most a tenth of the data. */
	assert_true(before.allocated_pages >= 10 * POOL_FRAMES);

	uint64_t	t0 = ls_now_ns();

	assert_int_equal(tu_fork_workers(NWORKERS + 1, stress_proc, s), 0);
	double		secs = (double) (ls_now_ns() - t0) / 1e9;

	/* Structure and content against the workers' logs. */
	for (uint32_t t = 0; t < NTREES; t++)
	{
		char		msg[256] = "";
		ls_btree_info info;
		ls_status	st = ls_btree_verify(&s->trees[t], &info, msg, sizeof(msg));

		if (st != LS_OK)
			fail_msg("verify tree %u: %s", t, msg);
		uint64_t	expect = 0;

		for (uint64_t k = 0; k < nkeys; k++)
		{
			uint32_t	olen;
			uint8_t		out[VAL_MAX];

			ls_put_be64(key, k);
			st = ls_btree_lookup(&s->trees[t], key, 8, out, sizeof(out), &olen);
			if (s->log[t * nkeys + k])
			{
				expect++;
				assert_int_equal(st, LS_OK);
				assert_int_equal(val_check(t, k, out, olen), s->log[t * nkeys + k]);
			}
			else
				assert_int_equal(st, LS_NOT_FOUND);
		}
		assert_int_equal(info.entries, expect);
		final_ctx	c = {s, t, 0, -1, false};

		assert_int_equal(ls_btree_scan_asc(&s->trees[t], NULL, 0, final_cb, &c), LS_OK);
		assert_false(c.bad);
		assert_int_equal(c.n, expect);
	}
	ls_bm_stats after;

	ls_bm_get_stats(s->bm, &after);
	fprintf(stderr, "stress: %d workers x %llu ops in %.1fs; pool %u frames, %llu data pages; "
			"reads %llu writes %llu evictions %llu restarts %llu; provider rounds %llu; "
			"scans %llu (%llu entries); splits %llu merges %llu\n",
			NWORKERS, (unsigned long long) s->ops, secs, POOL_FRAMES,
			(unsigned long long) after.allocated_pages,
			(unsigned long long) (after.reads - before.reads),
			(unsigned long long) (after.writes - before.writes),
			(unsigned long long) (after.evictions - before.evictions),
			(unsigned long long) after.restarts,
			(unsigned long long) s->provider_rounds,
			(unsigned long long) s->scans, (unsigned long long) s->scanned,
			(unsigned long long) (s->trees[0].splits + s->trees[1].splits),
			(unsigned long long) (s->trees[0].merges + s->trees[1].merges));
	/* Eviction and reload really happened during the run. */
	assert_true(after.evictions - before.evictions > 100);
	assert_true(after.reads - before.reads > 100);
	assert_true(s->scans > 0);
	for (uint32_t t = 0; t < NTREES; t++)
		assert_int_equal(ls_btree_destroy(&s->trees[t]), LS_OK);
	ls_bm_get_stats(s->bm, &after);
	assert_int_equal(after.allocated_pages, 0);
	tu_pool_close(&pool);
	tu_free_region(s, ss);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_btree_multiprocess_stress),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
