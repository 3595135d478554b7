/*
 * test_hashcache.c - the hash cache in front of unique indexes.
 *
 * Single-process tests of every operation against what the contract says,
 * a random model test, and multi-process stress over one MAP_SHARED region
 * (as PostgreSQL backends share it):
 *  - owners: each worker alone writes its own keys (fill, replace, remove)
 *    while every worker fills and removes shared keys in the same buckets;
 *    a lookup of an owned key returns nothing or exactly the rowid its
 *    owner stored last (never a removed or older one: the claim/publish
 *    protocol loses no ordering), and any key's lookup returns a rowid that
 *    was stored for that key (no torn entries).
 *  - sweeps: a worker removes one table's entries over and over while the
 *    others fill and look up keys of that table and of others; afterwards a
 *    last sweep leaves no entry of that table and the others are intact.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "leanstore/hashcache.h"
#include "tu.h"

static ls_hc *
make_cache(uint64_t nbuckets, void **region, size_t *size)
{
	ls_hc	   *hc = NULL;

	*size = ls_hc_region_size(nbuckets);
	*region = tu_shared_region(*size);
	assert_int_equal(ls_hc_init(*region, *size, &hc), LS_OK);
	assert_non_null(hc);
	return hc;
}

static uint64_t
key_hash(uint64_t k)
{
	return ls_hc_hash(0, &k, sizeof(k));
}

static void
test_sizes(void **state)
{
	(void) state;
	void	   *r;
	ls_hc	   *hc;
	ls_hc_stats st;

	assert_int_equal(ls_hc_buckets_for(10), 0);
	assert_int_equal(ls_hc_init(&r, 10, &hc), LS_INVALID);
	assert_true(ls_hc_region_size(1000) < ls_hc_region_size(1024));
	assert_int_equal(ls_hc_buckets_for(ls_hc_region_size(1000)), 1000);
	assert_int_equal(ls_hc_buckets_for(ls_hc_region_size(1024) + 63), 1024);
	assert_int_equal(ls_hc_buckets_for(ls_hc_region_size(1024) - 1), 1023);

	size_t		size = 1 << 20;

	r = tu_shared_region(size);
	assert_int_equal(ls_hc_init(r, size, &hc), LS_OK);
	ls_hc_get_stats(hc, true, &st);
	assert_int_equal(st.region_bytes, size);
	assert_true(st.buckets * 128 <= size);
	assert_true(st.buckets * 128 > size - 8192);	/* the whole region is used */
	assert_int_equal(st.capacity, st.buckets * LS_HC_WAYS);
	assert_int_equal(st.entries, 0);
	tu_free_region(r, size);
}

static void
test_hash(void **state)
{
	(void) state;
	const char *a = "hello world, a longer key";

	assert_int_equal(ls_hc_hash(0, a, strlen(a)), ls_hc_hash(0, a, strlen(a)));
	assert_int_not_equal(ls_hc_hash(0, a, strlen(a)), ls_hc_hash(1, a, strlen(a)));
	assert_int_not_equal(ls_hc_hash(0, a, 5), ls_hc_hash(0, a, 6));
	/* trailing zero bytes and length both count */
	assert_int_not_equal(ls_hc_hash(0, "a\0", 2), ls_hc_hash(0, "a", 1));
	assert_int_not_equal(ls_hc_hash(0, "", 0), ls_hc_hash(0, "\0", 1));
	/* chaining: hash(seed, x) differs from hash(0, x) */
	uint64_t	h1 = ls_hc_hash(ls_hc_hash(0, "ab", 2), "c", 1);
	uint64_t	h2 = ls_hc_hash(ls_hc_hash(0, "a", 1), "bc", 2);

	assert_int_not_equal(h1, h2);
	/* a quick spread check: 64k sequential ints, low and high bits */
	int			counts[1024] = {0};
	int			hcounts[1024] = {0};

	for (uint64_t k = 0; k < 65536; k++)
	{
		counts[key_hash(k) & 1023]++;
		hcounts[key_hash(k) >> 54]++;
	}
	for (int i = 0; i < 1024; i++)
	{
		assert_true(counts[i] > 20 && counts[i] < 120);
		assert_true(hcounts[i] > 20 && hcounts[i] < 120);
	}
}

static void
test_basic(void **state)
{
	(void) state;
	void	   *r;
	size_t		size;
	ls_hc	   *hc = make_cache(64, &r, &size);
	uint64_t	rowid = 0;
	ls_hc_stats st;
	/* K and B land in buckets of their own; 0 and 1 share bucket 0 */
	const uint64_t K = (UINT64_C(5) << 58) | 42;
	const uint64_t B = (UINT64_C(9) << 58) | 99;

	assert_false(ls_hc_lookup(hc, K, &rowid));
	assert_int_equal(ls_hc_fill(hc, K, 7, 1000), LS_HC_FILLED);
	assert_true(ls_hc_lookup(hc, K, &rowid));
	assert_int_equal(rowid, 1000);
	/* the same again: nothing changes */
	assert_int_equal(ls_hc_fill(hc, K, 7, 1000), LS_HC_UPDATED);
	/* a new rowid for the same key replaces it */
	assert_int_equal(ls_hc_fill(hc, K, 7, 1001), LS_HC_UPDATED);
	assert_true(ls_hc_lookup(hc, K, &rowid));
	assert_int_equal(rowid, 1001);
	ls_hc_get_stats(hc, true, &st);
	assert_int_equal(st.entries, 1);

	/* hashes 0 and 1 are keys like any other */
	assert_int_equal(ls_hc_fill(hc, 0, 7, 5), LS_HC_FILLED);
	assert_int_equal(ls_hc_fill(hc, 1, 7, 6), LS_HC_FILLED);
	assert_true(ls_hc_lookup(hc, 0, &rowid));
	assert_int_equal(rowid, 5);
	assert_true(ls_hc_lookup(hc, 1, &rowid));
	assert_int_equal(rowid, 6);

	/* largest rowid and tag */
	uint64_t	maxrow = (UINT64_C(1) << LS_HC_ROWID_BITS) - 1;

	assert_int_equal(ls_hc_fill(hc, B, (1u << LS_HC_TAG_BITS) - 1, maxrow), LS_HC_FILLED);
	assert_true(ls_hc_lookup(hc, B, &rowid));
	assert_int_equal(rowid, maxrow);

	/* remove with the wrong rowid leaves it; the right one removes it */
	assert_int_equal(ls_hc_remove(hc, K, 1000), 0);
	assert_true(ls_hc_lookup(hc, K, &rowid));
	assert_int_equal(ls_hc_remove(hc, K, 1001), 1);
	assert_false(ls_hc_lookup(hc, K, &rowid));
	assert_int_equal(ls_hc_remove(hc, K, 1001), 0);
	/* any rowid */
	assert_int_equal(ls_hc_remove(hc, 0, LS_HC_ANY_ROWID), 1);
	assert_false(ls_hc_lookup(hc, 0, &rowid));

	ls_hc_count(hc, 3, LS_HC_C_HITS, 2);
	ls_hc_count(hc, 3 + LS_HC_STRIPES, LS_HC_C_HITS, 1);
	ls_hc_count(hc, 9, LS_HC_C_MISSES, 5);
	ls_hc_get_stats(hc, true, &st);
	assert_int_equal(st.counters[LS_HC_C_HITS], 3);
	assert_int_equal(st.counters[LS_HC_C_MISSES], 5);
	assert_int_equal(st.entries, 2);
	tu_free_region(r, size);
}

/* References and serials travel with the rowid; a plain fill drops them. */
static void
test_refs(void **state)
{
	(void) state;
	void	   *r;
	size_t		size;
	ls_hc	   *hc = make_cache(64, &r, &size);
	ls_hc_hit	hit;
	uint64_t	rowid;

	assert_false(ls_hc_lookup_ref(hc, 7, &hit));
	assert_int_equal(ls_hc_fill_ref(hc, 7, 1, 10, 0xabc0, 5), LS_HC_FILLED);
	assert_true(ls_hc_lookup_ref(hc, 7, &hit));
	assert_int_equal(hit.rowid, 10);
	assert_int_equal(hit.ref, 0xabc0);
	assert_int_equal(hit.serial, 5);
	/* exactly the same: left alone; another serial or ref: replaced */
	assert_int_equal(ls_hc_fill_ref(hc, 7, 1, 10, 0xabc0, 5), LS_HC_UPDATED);
	assert_int_equal(ls_hc_fill_ref(hc, 7, 1, 10, 0xabc0, 9), LS_HC_UPDATED);
	assert_true(ls_hc_lookup_ref(hc, 7, &hit));
	assert_int_equal(hit.serial, 9);
	assert_int_equal(ls_hc_fill_ref(hc, 7, 1, 10, 0xdef0, 9), LS_HC_UPDATED);
	assert_true(ls_hc_lookup_ref(hc, 7, &hit));
	assert_int_equal(hit.ref, 0xdef0);
	/* a plain fill of the same rowid drops the reference */
	assert_int_equal(ls_hc_fill(hc, 7, 1, 10), LS_HC_UPDATED);
	assert_true(ls_hc_lookup_ref(hc, 7, &hit));
	assert_int_equal(hit.rowid, 10);
	assert_int_equal(hit.ref, 0);
	assert_int_equal(hit.serial, 0);
	assert_true(ls_hc_lookup(hc, 7, &rowid));
	assert_int_equal(rowid, 10);
	/* removal takes all of it */
	assert_int_equal(ls_hc_remove(hc, 7, 10), 1);
	assert_false(ls_hc_lookup_ref(hc, 7, &hit));
	tu_free_region(r, size);
}

static void
test_eviction(void **state)
{
	(void) state;
	void	   *r;
	size_t		size;
	ls_hc	   *hc = make_cache(1, &r, &size);	/* one bucket */
	uint64_t	rowid;
	int			hits = 0;
	ls_hc_stats st;

	for (uint64_t k = 0; k < LS_HC_WAYS; k++)
		assert_int_equal(ls_hc_fill(hc, key_hash(k), 1, k), LS_HC_FILLED);
	assert_int_equal(ls_hc_fill(hc, key_hash(100), 1, 100), LS_HC_EVICTED);
	assert_true(ls_hc_lookup(hc, key_hash(100), &rowid));
	assert_int_equal(rowid, 100);
	for (uint64_t k = 0; k < LS_HC_WAYS; k++)
		if (ls_hc_lookup(hc, key_hash(k), &rowid))
		{
			assert_int_equal(rowid, k);
			hits++;
		}
	assert_int_equal(hits, LS_HC_WAYS - 1);
	ls_hc_get_stats(hc, true, &st);
	assert_int_equal(st.entries, LS_HC_WAYS);	/* bounded */
	/* many more: never more than the capacity */
	for (uint64_t k = 1000; k < 2000; k++)
		assert_int_not_equal(ls_hc_fill(hc, key_hash(k), 1, k), LS_HC_SKIPPED);
	ls_hc_get_stats(hc, true, &st);
	assert_int_equal(st.entries, LS_HC_WAYS);
	tu_free_region(r, size);
}

static void
test_remove_table(void **state)
{
	(void) state;
	void	   *r;
	size_t		size;
	ls_hc	   *hc = make_cache(16384, &r, &size);
	uint64_t	rowid;
	ls_hc_stats st;

	/* 300 keys over three tables (few enough that nothing is evicted) */
	for (uint64_t k = 0; k < 300; k++)
		assert_int_equal(ls_hc_fill(hc, key_hash(k), (uint32_t) (k % 3) + 10, k), LS_HC_FILLED);
	/* one rowid of table 11 */
	assert_int_equal(ls_hc_remove_table(hc, 11, 4), 1);
	assert_false(ls_hc_lookup(hc, key_hash(4), &rowid));
	assert_int_equal(ls_hc_remove_table(hc, 11, 4), 0);
	/* a rowid of another table is left by table 11's sweep */
	assert_int_equal(ls_hc_remove_table(hc, 11, 3), 0);
	assert_true(ls_hc_lookup(hc, key_hash(3), &rowid));
	/* the whole of table 10 */
	assert_int_equal(ls_hc_remove_table(hc, 10, LS_HC_ANY_ROWID), 100);
	for (uint64_t k = 0; k < 300; k++)
	{
		bool		hit = ls_hc_lookup(hc, key_hash(k), &rowid);

		if (k % 3 == 0 || k == 4)
			assert_false(hit);
		else
		{
			assert_true(hit);
			assert_int_equal(rowid, k);
		}
	}
	ls_hc_get_stats(hc, true, &st);
	assert_int_equal(st.entries, 199);
	/* tags are reduced to their bits */
	assert_int_equal(ls_hc_remove_table(hc, 11 | (1u << LS_HC_TAG_BITS), LS_HC_ANY_ROWID), 99);
	assert_int_equal(ls_hc_tag(UINT64_MAX), (1u << LS_HC_TAG_BITS) - 1);
	tu_free_region(r, size);
}

/* A set of rowids of one table (VACUUM's DEAD rowids) */
static void
test_remove_rowids(void **state)
{
	(void) state;
	void	   *r;
	size_t		size;
	ls_hc	   *hc = make_cache(16384, &r, &size);
	/* 0, 3, 6 are table 10's; 5 and 299 table 12's; 1000 nobody's */
	const uint64_t set[] = {0, 3, 5, 6, 299, 1000};
	uint64_t	rowid;
	ls_hc_stats st;

	for (uint64_t k = 0; k < 300; k++)
		assert_int_equal(ls_hc_fill(hc, key_hash(k), (uint32_t) (k % 3) + 10, k), LS_HC_FILLED);
	assert_int_equal(ls_hc_remove_rowids(hc, 10, set, 0), 0);
	assert_int_equal(ls_hc_remove_rowids(hc, 10, set, 6), 3);
	assert_int_equal(ls_hc_remove_rowids(hc, 10, set, 6), 0);
	for (uint64_t k = 0; k < 300; k++)
	{
		bool		hit = ls_hc_lookup(hc, key_hash(k), &rowid);

		if (k == 0 || k == 3 || k == 6)
			assert_false(hit);
		else
		{
			assert_true(hit);
			assert_int_equal(rowid, k);
		}
	}
	/* the whole set of table 12: 5 and 299 */
	assert_int_equal(ls_hc_remove_rowids(hc, 12, set, 6), 2);
	assert_false(ls_hc_lookup(hc, key_hash(299), &rowid));
	ls_hc_get_stats(hc, true, &st);
	assert_int_equal(st.entries, 295);
	tu_free_region(r, size);
}

/* Random operations against a model: a hit is always the model's rowid. */
static void
test_model(void **state)
{
	(void) state;
	void	   *r;
	size_t		size;
	ls_hc	   *hc = make_cache(16, &r, &size);
	enum
	{
		NK = 200
	};
	uint64_t	model[NK];
	uint64_t	seed = 12345;
	uint64_t	hits = 0,
				evictions = 0;

	for (int i = 0; i < NK; i++)
		model[i] = UINT64_MAX;
	for (int op = 0; op < 200000; op++)
	{
		uint64_t	x = ls_rand_next(&seed);
		int			k = (int) (x % NK);
		uint64_t	rowid;

		switch ((x >> 32) % 4)
		{
			case 0:
			case 1:
				{
					uint64_t	v = (x >> 40) & 0xffff;
					ls_hc_fill_result fr = ls_hc_fill(hc, key_hash(k), 1, v);

					assert_int_not_equal(fr, LS_HC_SKIPPED);	/* one process */
					if (fr == LS_HC_EVICTED)
						evictions++;
					model[k] = v;
					break;
				}
			case 2:
				ls_hc_remove(hc, key_hash(k), (x & 1) ? model[k] : LS_HC_ANY_ROWID);
				model[k] = UINT64_MAX;
				break;
			default:
				if (ls_hc_lookup(hc, key_hash(k), &rowid))
				{
					assert_int_equal(rowid, model[k]);
					hits++;
				}
				break;
		}
	}
	assert_true(hits > 1000);
	assert_true(evictions > 100);	/* 200 keys in 64 entries */
	tu_free_region(r, size);
}

/* ------------------------------------------------------------------------
 * Multi-process stress
 * ------------------------------------------------------------------------ */
#define MP_WORKERS	4
#define MP_OWNED	64			/* keys per owner */
#define MP_SHARED	4096		/* keys everybody writes */

typedef struct mp_ctl
{
	ls_hc	   *hc;
	uint64_t	ops;
	_Atomic uint64_t errors;
	_Atomic uint64_t lookups_hit;
	_Atomic uint64_t skipped;
	tu_barrier	start;
	int			sweeper;		/* sweep test: the worker that sweeps */
} mp_ctl;

/* rowid of key k, version v: the key is recoverable from it */
static inline uint64_t
mp_rowid(uint64_t k, uint64_t v)
{
	return (k << 20) | (v & 0xfffff);
}

static uint64_t
mp_owned_key(int w, int i)
{
	return (uint64_t) MP_SHARED + (uint64_t) w * MP_OWNED + (uint64_t) i;
}

static int
mp_owner_worker(int w, void *arg)
{
	mp_ctl	   *c = arg;
	uint64_t	seed = 0x9e3779b9u * (uint64_t) (w + 1);
	uint64_t	cur[MP_OWNED];
	uint64_t	prev_ok[MP_OWNED];	/* also allowed after a skipped fill */
	uint64_t	ver = 1;

	for (int i = 0; i < MP_OWNED; i++)
		cur[i] = prev_ok[i] = UINT64_MAX;
	tu_barrier_wait(&c->start);
	for (uint64_t op = 0; op < c->ops; op++)
	{
		uint64_t	x = ls_rand_next(&seed);
		uint64_t	rowid;

		if ((x & 3) != 0)
		{
			/* shared keys: fill, remove, look up */
			uint64_t	k = (x >> 8) % MP_SHARED;
			uint64_t	h = key_hash(k);

			switch ((x >> 2) & 3)
			{
				case 0:
					if (ls_hc_fill(c->hc, h, 1, mp_rowid(k, ver++)) == LS_HC_SKIPPED)
						atomic_fetch_add(&c->skipped, 1);
					break;
				case 1:
					ls_hc_remove(c->hc, h, (x >> 40) & 1 ? LS_HC_ANY_ROWID : mp_rowid(k, x >> 44));
					break;
				default:
					if (ls_hc_lookup(c->hc, h, &rowid))
					{
						TU_CHECK((rowid >> 20) == k);	/* never another key's */
						atomic_fetch_add(&c->lookups_hit, 1);
					}
					break;
			}
			continue;
		}
		/* owned keys: exact model (only evictions by others may drop them) */
		int			i = (int) ((x >> 8) % MP_OWNED);
		uint64_t	k = mp_owned_key(w, i);
		uint64_t	h = key_hash(k);

		switch ((x >> 2) & 3)
		{
			case 0:
				{
					uint64_t	v = mp_rowid(k, ver++);
					ls_hc_fill_result fr = ls_hc_fill(c->hc, h, 2, v);

					if (fr == LS_HC_SKIPPED)
					{
						/* lost to an evictor: the old entry may linger until it publishes */
						prev_ok[i] = cur[i];
						cur[i] = UINT64_MAX;
						atomic_fetch_add(&c->skipped, 1);
					}
					else
					{
						prev_ok[i] = UINT64_MAX;
						cur[i] = v;
					}
					break;
				}
			case 1:
				ls_hc_remove(c->hc, h, cur[i] == UINT64_MAX ? LS_HC_ANY_ROWID : cur[i]);
				if (cur[i] == UINT64_MAX)
					prev_ok[i] = UINT64_MAX;
				cur[i] = UINT64_MAX;
				break;
			default:
				if (ls_hc_lookup(c->hc, h, &rowid))
				{
					if (rowid != cur[i] && rowid != prev_ok[i])
					{
						fprintf(stderr, "worker %d key %llu: found %llx, expected %llx or %llx\n",
								w, (unsigned long long) k, (unsigned long long) rowid,
								(unsigned long long) cur[i], (unsigned long long) prev_ok[i]);
						return 1;
					}
					atomic_fetch_add(&c->lookups_hit, 1);
				}
				break;
		}
	}
	return 0;
}

static void
test_mp_owners(void **state)
{
	(void) state;
	void	   *r;
	size_t		size;
	/* small enough that shared keys evict owned ones all the time */
	ls_hc	   *hc = make_cache(512, &r, &size);
	mp_ctl	   *c = tu_shared_region(sizeof(mp_ctl));

	c->hc = hc;
	c->ops = tu_scaled(2000000);
	tu_barrier_init(&c->start, MP_WORKERS);
	assert_int_equal(tu_fork_workers(MP_WORKERS, mp_owner_worker, c), 0);
	assert_true(atomic_load(&c->lookups_hit) > c->ops / 100);
	printf("mp owners: %llu hits, %llu skipped fills\n",
		   (unsigned long long) atomic_load(&c->lookups_hit),
		   (unsigned long long) atomic_load(&c->skipped));
	/* quiet now: a fill is found again */
	for (uint64_t k = 0; k < 100; k++)
	{
		uint64_t	rowid;

		assert_int_not_equal(ls_hc_fill(hc, key_hash(k), 1, mp_rowid(k, 7)), LS_HC_SKIPPED);
		assert_true(ls_hc_lookup(hc, key_hash(k), &rowid));
		assert_int_equal(rowid, mp_rowid(k, 7));
		ls_hc_remove(hc, key_hash(k), LS_HC_ANY_ROWID);
	}
	tu_free_region(c, sizeof(mp_ctl));
	tu_free_region(r, size);
}

#define SW_KEYS		2048
#define SW_TAG(k)	((uint32_t) ((k) % 4))	/* table 0 is swept */

static int
mp_sweep_worker(int w, void *arg)
{
	mp_ctl	   *c = arg;
	uint64_t	seed = 0x51ed27u * (uint64_t) (w + 3);
	uint64_t	ver = 1;

	tu_barrier_wait(&c->start);
	if (w == c->sweeper)
	{
		for (uint64_t i = 0; i < c->ops / 2000 + 5; i++)
			ls_hc_remove_table(c->hc, 0, LS_HC_ANY_ROWID);
		return 0;
	}
	for (uint64_t op = 0; op < c->ops; op++)
	{
		uint64_t	x = ls_rand_next(&seed);
		uint64_t	k = (x >> 8) % SW_KEYS;
		uint64_t	rowid;

		if (x & 1)
		{
			if (ls_hc_fill(c->hc, key_hash(k), SW_TAG(k), mp_rowid(k, ver++)) == LS_HC_SKIPPED)
				atomic_fetch_add(&c->skipped, 1);
		}
		else if (ls_hc_lookup(c->hc, key_hash(k), &rowid))
		{
			TU_CHECK((rowid >> 20) == k);
			atomic_fetch_add(&c->lookups_hit, 1);
		}
	}
	return 0;
}

static void
test_mp_sweep(void **state)
{
	(void) state;
	void	   *r;
	size_t		size;
	ls_hc	   *hc = make_cache(4096, &r, &size);	/* room for every key */
	mp_ctl	   *c = tu_shared_region(sizeof(mp_ctl));
	uint64_t	rowid;
	ls_hc_stats st;
	uint64_t	left = 0;

	c->hc = hc;
	c->ops = tu_scaled(1000000);
	c->sweeper = 0;
	tu_barrier_init(&c->start, MP_WORKERS);
	assert_int_equal(tu_fork_workers(MP_WORKERS, mp_sweep_worker, c), 0);
	/* every key of the other tables that is present maps to itself */
	for (uint64_t k = 0; k < SW_KEYS; k++)
		if (ls_hc_lookup(hc, key_hash(k), &rowid))
		{
			assert_int_equal(rowid >> 20, k);
			if (SW_TAG(k) != 0)
				left++;
		}
	assert_true(left > SW_KEYS / 2);
	ls_hc_remove_table(hc, 0, LS_HC_ANY_ROWID);
	for (uint64_t k = 0; k < SW_KEYS; k += 4)
		assert_false(ls_hc_lookup(hc, key_hash(k), &rowid));
	assert_int_equal(ls_hc_remove_table(hc, 0, LS_HC_ANY_ROWID), 0);
	/* concurrent fills of one key may leave duplicates (all correct) */
	ls_hc_get_stats(hc, true, &st);
	assert_true(st.entries >= left);
	assert_true(st.entries < left + SW_KEYS / 8);
	tu_free_region(c, sizeof(mp_ctl));
	tu_free_region(r, size);
}

/*
 * Torn entries: every worker fills the keys of one bucket (more keys than
 * ways, so entries are replaced, removed and refilled all the time) with
 * triples (rowid, ref, serial) derived from one random number, and looks
 * them up.  A lookup must return one fill's triple, never the rowid of one
 * fill with the reference or serial of another.  (The reference is what
 * the hot tier trusts as far as the serial says: a torn pair would hand it
 * a freed row.)
 */
#define TORN_KEYS	5

static inline uint64_t
torn_ref(uint64_t rowid)
{
	return rowid * UINT64_C(0x9e3779b97f4a7c15) | 1;
}

static inline uint64_t
torn_serial(uint64_t rowid)
{
	return ~rowid ^ (rowid << 17);
}

static int
mp_torn_worker(int w, void *arg)
{
	mp_ctl	   *c = arg;
	uint64_t	seed = 0x51ed2701u * (uint64_t) (w + 1);

	tu_barrier_wait(&c->start);
	for (uint64_t op = 0; op < c->ops; op++)
	{
		uint64_t	x = ls_rand_next(&seed);
		uint64_t	k = x % TORN_KEYS;
		uint64_t	rowid = mp_rowid(k, x >> 24);
		ls_hc_hit	hit;

		switch ((x >> 8) % 5)
		{
			case 0:
			case 1:
				if (ls_hc_fill_ref(c->hc, k, 1, rowid, torn_ref(rowid),
								   torn_serial(rowid)) == LS_HC_SKIPPED)
					atomic_fetch_add(&c->skipped, 1);
				break;
			case 2:
				/* by rowid too: a claim that finds val changed puts ctl back */
				ls_hc_remove(c->hc, k, (x >> 40) & 1 ? LS_HC_ANY_ROWID : rowid);
				break;
			default:
				if (ls_hc_lookup_ref(c->hc, k, &hit))
				{
					TU_CHECK((hit.rowid >> 20) == k);
					TU_CHECK(hit.ref == torn_ref(hit.rowid));
					TU_CHECK(hit.serial == torn_serial(hit.rowid));
					atomic_fetch_add(&c->lookups_hit, 1);
				}
				break;
		}
	}
	return 0;
}

static void
test_mp_torn(void **state)
{
	(void) state;
	void	   *r;
	size_t		size;
	ls_hc	   *hc = make_cache(1, &r, &size);	/* one bucket */
	mp_ctl	   *c = tu_shared_region(sizeof(mp_ctl));

	c->hc = hc;
	c->ops = tu_scaled(2000000);
	tu_barrier_init(&c->start, MP_WORKERS);
	assert_int_equal(tu_fork_workers(MP_WORKERS, mp_torn_worker, c), 0);
	assert_true(atomic_load(&c->lookups_hit) > 1000);
	printf("torn: %llu hits, %llu fills lost to a race\n",
		   (unsigned long long) atomic_load(&c->lookups_hit),
		   (unsigned long long) atomic_load(&c->skipped));
	tu_free_region(c, sizeof(mp_ctl));
	tu_free_region(r, size);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_hash),
		cmocka_unit_test(test_basic),
		cmocka_unit_test(test_refs),
		cmocka_unit_test(test_eviction),
		cmocka_unit_test(test_remove_table),
		cmocka_unit_test(test_remove_rowids),
		cmocka_unit_test(test_model),
		cmocka_unit_test(test_mp_owners),
		cmocka_unit_test(test_mp_sweep),
		cmocka_unit_test(test_mp_torn),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
