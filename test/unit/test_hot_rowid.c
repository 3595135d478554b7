/*
 * test_hot_rowid.c - rowid allocation block by block
 * (ls_hot_table_reserve_rowid, ls_hot_table_reserve_rowids in batches):
 * the block-fill rule against a sequential
 * model, its edges, and many processes reserving at once over one shared
 * mapping (every rowid unique, the rule holds in the order the rowids were
 * handed out, the limit bounds every rowid handed out).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "leanstore/hot.h"
#include "tu.h"

/* heap's geometry: 291 line pointers, 8 KiB page minus its 24-byte header */
#define RPB			291
#define CAP			(8192 - 24)
#define REGION		(8u << 20)

typedef struct hot_fix
{
	void	   *region;
	ls_hot	   *hot;
	ls_hot_ctx *ctx;
	ls_hot_table *tbl;
} hot_fix;

static void
hot_fix_open(hot_fix *f)
{
	ls_hot_config cfg = {.max_tables = 4, .max_procs = 4};
	ls_hot_key	key = {1663, 5, 16384};

	f->region = tu_shared_region(REGION);
	assert_int_equal(ls_hot_init(f->region, REGION, &cfg, &f->hot), LS_OK);
	assert_int_equal(ls_hot_attach(f->hot, 0, &f->ctx), LS_OK);
	assert_int_equal(ls_hot_table_create(f->ctx, key, &f->tbl), LS_OK);
}

static void
hot_fix_close(hot_fix *f)
{
	ls_hot_table_drop(f->ctx, f->tbl);
	ls_hot_reclaim(f->ctx);
	ls_hot_detach(f->ctx);
	tu_free_region(f->region, REGION);
}

/* xorshift64 */
static uint64_t
rnd(uint64_t *s)
{
	uint64_t	x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x;
}

/* A heap-like row: aligned tuple + line pointer, want = need + reserve. */
static void
random_row(uint64_t *seed, uint32_t *need, uint32_t *want)
{
	uint64_t	r = rnd(seed);
	uint32_t	len;

	switch (r % 8)
	{
		case 0:
			len = 24 + (uint32_t) (r >> 8) % 8;	/* tiny: the row count binds */
			break;
		case 1:
			len = 2000 + (uint32_t) (r >> 8) % 6000;	/* wide */
			break;
		default:
			len = 24 + (uint32_t) (r >> 8) % 300;
			break;
	}
	*need = ((len + 7) & ~7u) + 4;
	switch ((r >> 40) % 4)
	{
		case 0:
			*want = *need + 7372;	/* fillfactor 10 */
			break;
		case 1:
			*want = *need + 4096;	/* fillfactor 50 */
			break;
		default:
			*want = *need;
			break;
	}
}

/* The rule, one row at a time. */
typedef struct model
{
	uint64_t	next;
	uint32_t	used;
} model;

static uint64_t
model_reserve(model *m, uint32_t rpb, uint32_t cap, uint32_t need, uint32_t want)
{
	uint64_t	rowid = m->next;
	uint32_t	used = m->used;

	if (rowid % rpb != 0 && used + want > cap)
	{
		rowid = (rowid / rpb + 1) * rpb;
		used = 0;
	}
	m->next = rowid + 1;
	m->used = (m->next % rpb == 0) ? 0 : used + need;
	return rowid;
}

static void
test_rule_examples(void **state)
{
	hot_fix		f;
	uint64_t	next;
	uint32_t	used;

	(void) state;
	hot_fix_open(&f);

	/* pgbench_accounts on heap: 121-byte tuples, 128 + 4 bytes, 61 a page */
	for (uint64_t i = 0; i < 61; i++)
		assert_int_equal(ls_hot_table_reserve_rowid(f.tbl, RPB, CAP, 132, 132), i);
	ls_hot_table_get_fill(f.tbl, &next, &used);
	assert_int_equal(next, 61);
	assert_int_equal(used, 61 * 132);
	assert_int_equal(ls_hot_table_reserve_rowid(f.tbl, RPB, CAP, 132, 132), RPB);
	ls_hot_table_get_fill(f.tbl, &next, &used);
	assert_int_equal(next, RPB + 1);
	assert_int_equal(used, 132);

	/* tiny rows: the row count ends the block, the next starts empty */
	for (uint64_t i = 1; i < RPB; i++)
		assert_int_equal(ls_hot_table_reserve_rowid(f.tbl, RPB, CAP, 24, 24), RPB + i);
	ls_hot_table_get_fill(f.tbl, &next, &used);
	assert_int_equal(next, 2 * RPB);
	assert_int_equal(used, 0);

	/* an empty block takes a row whose want exceeds the capacity ... */
	assert_int_equal(ls_hot_table_reserve_rowid(f.tbl, RPB, CAP, 2004, 9000),
					 2 * RPB);
	/* ... and then nothing that wants more than is left */
	assert_int_equal(ls_hot_table_reserve_rowid(f.tbl, RPB, CAP, 100, CAP - 2004 + 1),
					 3 * RPB);
	/* exactly what is left fits */
	assert_int_equal(ls_hot_table_reserve_rowid(f.tbl, RPB, CAP, 100, CAP - 100),
					 3 * RPB + 1);
	/* used is 200 now */
	assert_int_equal(ls_hot_table_reserve_rowid(f.tbl, RPB, CAP, 8, CAP - 200),
					 3 * RPB + 2);
	assert_int_equal(ls_hot_table_reserve_rowid(f.tbl, RPB, CAP, 8, CAP - 207),
					 4 * RPB);
	assert_int_equal(ls_hot_table_rowid_limit(f.tbl), 4 * RPB + 1);

	/* set_fill only raises */
	ls_hot_table_set_fill(f.tbl, 10, 0);
	assert_int_equal(ls_hot_table_rowid_limit(f.tbl), 4 * RPB + 1);
	ls_hot_table_set_fill(f.tbl, 5 * RPB + 3, CAP - 10);
	ls_hot_table_get_fill(f.tbl, &next, &used);
	assert_int_equal(next, 5 * RPB + 3);
	assert_int_equal(used, CAP - 10);
	assert_int_equal(ls_hot_table_reserve_rowid(f.tbl, RPB, CAP, 8, 10), 5 * RPB + 3);
	assert_int_equal(ls_hot_table_reserve_rowid(f.tbl, RPB, CAP, 8, 8), 6 * RPB);

	/* the end of the rowid space: refused, nothing changes */
	ls_hot_table_set_fill(f.tbl, LS_HOT_MAX_ROWID - 1, 0);
	assert_int_equal(ls_hot_table_reserve_rowid(f.tbl, 1, CAP, 8, 8),
					 LS_HOT_MAX_ROWID - 1);
	assert_true(ls_hot_table_reserve_rowid(f.tbl, 1, CAP, 8, 8) == LS_ROWID_INVALID);
	assert_true(ls_hot_table_rowid_limit(f.tbl) == LS_HOT_MAX_ROWID);

	hot_fix_close(&f);
}

/* Random rows, one process: the table follows the sequential model exactly. */
static void
test_rule_model(void **state)
{
	hot_fix		f;
	model		m = {0, 0};
	uint64_t	seed = 0x9e3779b97f4a7c15ull;
	uint64_t	n = tu_scaled(200000);
	uint64_t	skipped_blocks = 0;

	(void) state;
	hot_fix_open(&f);
	for (uint64_t i = 0; i < n; i++)
	{
		uint32_t	need,
					want;
		uint64_t	expect,
					got,
					next;
		uint32_t	used;

		uint64_t	before = m.next;

		random_row(&seed, &need, &want);
		expect = model_reserve(&m, RPB, CAP, need, want);
		got = ls_hot_table_reserve_rowid(f.tbl, RPB, CAP, need, want);
		assert_int_equal(got, expect);
		if (got != before)
			skipped_blocks++;	/* a block left before its last rowid */
		ls_hot_table_get_fill(f.tbl, &next, &used);
		assert_int_equal(next, m.next);
		assert_int_equal(used, m.used);
	}
	/* the workload did leave blocks early, else the test proves little */
	assert_true(m.next > n + n / 4);
	assert_true(skipped_blocks > 0);
	hot_fix_close(&f);
}

/*
 * ls_hot_table_reserve_rowids: batches of 1..1000 rows give what the model
 * gives row by row, and leave the same state; a batch that would pass
 * LS_HOT_MAX_ROWID changes nothing.
 */
static void
test_batch_model(void **state)
{
	hot_fix		f;
	model		m = {0, 0};
	uint64_t	seed = 0x51ed270b27a3c1f5ull;
	uint64_t	n = tu_scaled(200000);
	uint32_t   *need = malloc(1000 * sizeof(uint32_t));
	uint32_t   *want = malloc(1000 * sizeof(uint32_t));
	uint64_t   *got = malloc(1000 * sizeof(uint64_t));
	uint64_t	next;
	uint32_t	used;

	(void) state;
	assert_non_null(need);
	assert_non_null(want);
	assert_non_null(got);
	hot_fix_open(&f);
	for (uint64_t i = 0; i < n;)
	{
		uint32_t	b = 1 + (uint32_t) (rnd(&seed) % 1000);

		for (uint32_t k = 0; k < b; k++)
			random_row(&seed, &need[k], &want[k]);
		assert_int_equal(ls_hot_table_reserve_rowids(f.tbl, RPB, CAP, need, want, b, got), LS_OK);
		for (uint32_t k = 0; k < b; k++, i++)
			assert_int_equal(got[k], model_reserve(&m, RPB, CAP, need[k], want[k]));
		ls_hot_table_get_fill(f.tbl, &next, &used);
		assert_int_equal(next, m.next);
		assert_int_equal(used, m.used);
	}
	assert_int_equal(ls_hot_table_reserve_rowids(f.tbl, RPB, CAP, need, want, 0, got), LS_OK);

	/* near the end of the rowid space: all or nothing */
	ls_hot_table_set_fill(f.tbl, LS_HOT_MAX_ROWID - 3, 0);
	for (uint32_t k = 0; k < 5; k++)
		need[k] = want[k] = 40;
	assert_int_equal(ls_hot_table_reserve_rowids(f.tbl, RPB, CAP, need, want, 5, got), LS_NO_SPACE);
	ls_hot_table_get_fill(f.tbl, &next, &used);
	assert_int_equal(next, LS_HOT_MAX_ROWID - 3);
	assert_int_equal(ls_hot_table_reserve_rowids(f.tbl, RPB, CAP, need, want, 3, got), LS_OK);
	assert_int_equal(got[2], LS_HOT_MAX_ROWID - 1);
	assert_int_equal(ls_hot_table_reserve_rowid(f.tbl, RPB, CAP, 40, 40), LS_ROWID_INVALID);
	hot_fix_close(&f);
	free(need);
	free(want);
	free(got);
}

/*
 * ls_hot_table_used_end against a brute-force model: rows and DEAD slots
 * scattered over several RID-map leaves and subtrees, removed and
 * forgotten again.
 */
static void
test_used_end(void **state)
{
	hot_fix		f;
	enum
	{
		NSPOTS = 64
	};
	uint64_t	spots[NSPOTS];
	int			what[NSPOTS];	/* 0 empty, 1 row, 2 DEAD */
	ls_hot_row *rows[NSPOTS];
	uint64_t	seed = 12345;

	(void) state;
	hot_fix_open(&f);
	ls_hot_epoch_enter(f.ctx);
	assert_int_equal(ls_hot_table_used_end(f.tbl, 1000, 0), 0);
	ls_hot_epoch_exit(f.ctx);
	for (int i = 0; i < NSPOTS; i++)
	{
		/* distinct rowids in leaves 0..3, a far leaf and a far subtree */
		uint64_t	base = (i % 4 == 3) ? (i % 8 == 3 ? (UINT64_C(1) << 21) : 5000) : 0;

		spots[i] = base + (uint64_t) i * 37 + 1;
		what[i] = 0;
		rows[i] = NULL;
	}
	for (int step = 0; step < 400; step++)
	{
		int			i = (int) (rnd(&seed) % NSPOTS);
		uint64_t	ends[] = {0, 1, 38, 1024, 1025, 3000, 5100, UINT64_C(1) << 21,
		(UINT64_C(1) << 22), LS_HOT_MAX_ROWID};

		ls_hot_epoch_enter(f.ctx);
		if (what[i] == 0)
		{
			ls_hot_version *v;

			assert_int_equal(ls_hot_version_alloc(f.ctx, 8, &v), LS_OK);
			assert_int_equal(ls_hot_row_insert(f.ctx, f.tbl, spots[i], LS_ORIGIN_INSERTED,
											   v, &rows[i]), LS_OK);
			what[i] = 1;
		}
		else if (what[i] == 1)
		{
			bool		dead = rnd(&seed) % 2 == 0;

			ls_hot_row_lock(rows[i]);
			ls_hot_row_remove(f.ctx, f.tbl, rows[i], dead);
			rows[i] = NULL;
			what[i] = dead ? 2 : 0;
		}
		else
		{
			ls_hot_rowid_forget(f.ctx, f.tbl, spots[i]);
			what[i] = 0;
		}
		for (size_t e = 0; e < sizeof(ends) / sizeof(ends[0]); e++)
			for (size_t fl = 0; fl <= e; fl++)
			{
				/* floors: every end below this one, and a spot's own rowid */
				uint64_t	floor = fl < e ? ends[fl] : spots[i];
				uint64_t	expect = 0;

				for (int k = 0; k < NSPOTS; k++)
					if (what[k] != 0 && spots[k] < ends[e] && spots[k] >= floor &&
						spots[k] + 1 > expect)
						expect = spots[k] + 1;
				assert_int_equal(ls_hot_table_used_end(f.tbl, ends[e], floor), expect);
			}
		ls_hot_epoch_exit(f.ctx);
	}
	hot_fix_close(&f);
}

/* ------------------------------------------------------------------------
 * Many processes
 * ------------------------------------------------------------------------ */

#define NWORKERS	8

typedef struct rec
{
	uint64_t	rowid;
	uint32_t	need;
	uint32_t	want;
} rec;

typedef struct mp
{
	ls_hot_table *tbl;
	uint64_t	per_worker;
	tu_barrier	start;
	rec			recs[];
} mp;

static int
mp_worker(int w, void *arg)
{
	mp		   *s = arg;
	uint64_t	seed = 0x243f6a8885a308d3ull * (uint64_t) (w + 1);
	uint64_t	prev = 0;

	tu_barrier_wait(&s->start);
	for (uint64_t i = 0; i < s->per_worker;)
	{
		rec		   *r = &s->recs[(uint64_t) w * s->per_worker + i];
		/* odd workers reserve in batches (a bulk load), even ones row by row */
		uint32_t	m = (w % 2) ? 1 + (uint32_t) (rnd(&seed) % 64) : 1;
		uint32_t	need[64],
					want[64];
		uint64_t	rowid[64];

		if (m > s->per_worker - i)
			m = (uint32_t) (s->per_worker - i);
		for (uint32_t k = 0; k < m; k++)
		{
			random_row(&seed, &r[k].need, &r[k].want);
			need[k] = r[k].need;
			want[k] = r[k].want;
		}
		if (m == 1)
			rowid[0] = ls_hot_table_reserve_rowid(s->tbl, RPB, CAP, need[0], want[0]);
		else
			TU_CHECK(ls_hot_table_reserve_rowids(s->tbl, RPB, CAP, need, want, m, rowid) == LS_OK);
		for (uint32_t k = 0; k < m; k++, i++)
		{
			TU_CHECK(rowid[k] != LS_ROWID_INVALID);
			/* the limit bounds it at once; one process's rowids only grow */
			TU_CHECK(rowid[k] < ls_hot_table_rowid_limit(s->tbl));
			TU_CHECK(i == 0 || rowid[k] > prev);
			/* a batch is one reservation: no other process's row inside */
			TU_CHECK(k == 0 || rowid[k] == rowid[k - 1] + 1 || rowid[k] % RPB == 0);
			prev = rowid[k];
			r[k].rowid = rowid[k];
		}
	}
	return 0;
}

static int
rec_cmp(const void *a, const void *b)
{
	const rec  *x = a,
			   *y = b;

	return x->rowid < y->rowid ? -1 : x->rowid > y->rowid;
}

static void
test_multiprocess(void **state)
{
	hot_fix		f;
	uint64_t	per = tu_scaled(40000);
	uint64_t	n = per * NWORKERS;
	size_t		size = sizeof(mp) + n * sizeof(rec);
	mp		   *s;
	uint64_t	i = 0;
	uint64_t	block = 0;
	uint64_t	early = 0;
	uint32_t	prev_used = 0;
	uint32_t	prev_rows = 0;

	(void) state;
	hot_fix_open(&f);
	s = tu_shared_region(size);
	s->tbl = f.tbl;
	s->per_worker = per;
	tu_barrier_init(&s->start, NWORKERS);
	assert_int_equal(tu_fork_workers(NWORKERS, mp_worker, s), 0);

	qsort(s->recs, n, sizeof(rec), rec_cmp);
	for (uint64_t k = 1; k < n; k++)
		assert_true(s->recs[k].rowid > s->recs[k - 1].rowid);	/* unique */
	assert_int_equal(ls_hot_table_rowid_limit(f.tbl), s->recs[n - 1].rowid + 1);

	/*
	 * Block by block, in rowid order (the order of the compare-and-swaps):
	 * no block is empty, each is a prefix without holes, every row but the
	 * first fits what the rows before it used, and a block left before its
	 * last rowid was left because its successor's first row did not fit.
	 */
	while (i < n)
	{
		uint32_t	used = 0;
		uint32_t	rows = 0;

		assert_int_equal(s->recs[i].rowid / RPB, block);
		if (block > 0 && prev_rows < RPB)
		{
			assert_true(prev_used + s->recs[i].want > CAP);
			early++;
		}
		for (; i < n && s->recs[i].rowid / RPB == block; i++, rows++)
		{
			assert_int_equal(s->recs[i].rowid, block * RPB + rows);
			if (rows > 0)
				assert_true(used + s->recs[i].want <= CAP);
			used += s->recs[i].need;
		}
		prev_used = used;
		prev_rows = rows;
		block++;
	}
	assert_true(early > 0);
	tu_free_region(s, size);
	hot_fix_close(&f);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rule_examples),
		cmocka_unit_test(test_rule_model),
		cmocka_unit_test(test_batch_model),
		cmocka_unit_test(test_used_end),
		cmocka_unit_test(test_multiprocess),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
