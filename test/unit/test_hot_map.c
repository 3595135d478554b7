/*
 * test_hot_map.c - hot tier tables, RID-map, version chains and epochs
 * (single process; the multi-process stress test is test_hot_stress.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <cmocka.h>

#include "leanstore/hot.h"
/* white box: the occupancy bitmap of RID-map leaves */
#include "../../src/hot/hot_internal.h"

typedef struct fixture
{
	void	   *region;
	size_t		size;
	ls_hot	   *hot;
	ls_hot_ctx *ctx;
	ls_hot_table *tbl;
} fixture;

static bool
asan_scale(void)
{
	const char *s = getenv("LEANSTORE_TEST_SCALE");

	return s != NULL && strcmp(s, "asan") == 0;
}

static fixture *
fixture_new(size_t size, uint32_t max_tables)
{
	fixture    *f = calloc(1, sizeof(*f));
	ls_hot_config cfg = {.max_tables = max_tables, .max_procs = 8};
	ls_hot_key	key = {1663, 5, 16384};

	assert_non_null(f);
	f->size = size;
	f->region = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(f->region != MAP_FAILED);
	assert_int_equal(ls_hot_init(f->region, size, &cfg, &f->hot), LS_OK);
	assert_int_equal(ls_hot_attach(f->hot, 0, &f->ctx), LS_OK);
	assert_int_equal(ls_hot_table_create(f->ctx, key, &f->tbl), LS_OK);
	return f;
}

/* Drop every table, reclaim, detach: the heap must be entirely free again. */
static void
fixture_free(fixture *f)
{
	ls_hot_stats s;

	if (f->tbl != NULL)
		ls_hot_table_drop(f->ctx, f->tbl);
	ls_hot_reclaim(f->ctx);
	ls_hot_detach(f->ctx);
	ls_hot_get_stats(f->hot, &s);
	assert_int_equal(s.used_bytes, 0);
	assert_int_equal(s.retired_pending, 0);
	assert_int_equal(s.free_bytes, s.heap_bytes);
	munmap(f->region, f->size);
	free(f);
}

static ls_hot_version *
make_version(fixture *f, uint64_t tag)
{
	ls_hot_version *v;

	assert_int_equal(ls_hot_version_alloc(f->ctx, sizeof(uint64_t), &v), LS_OK);
	memcpy(v->data, &tag, sizeof(tag));
	atomic_store(&v->xmin_word, tag);
	return v;
}

static uint64_t
version_tag(ls_hot_version *v)
{
	uint64_t	t;

	memcpy(&t, v->data, sizeof(t));
	return t;
}

static ls_hot_row *
insert(fixture *f, uint64_t rowid, uint64_t tag)
{
	ls_hot_version *v = make_version(f, tag);
	ls_hot_row *row;

	/* single-threaded tests may keep using the row after the epoch */
	ls_hot_epoch_enter(f->ctx);
	assert_int_equal(ls_hot_row_insert(f->ctx, f->tbl, rowid, LS_ORIGIN_INSERTED, v, &row), LS_OK);
	ls_hot_epoch_exit(f->ctx);
	return row;
}

/* An insert on an occupied or DEAD slot is refused; the version is freed. */
static void
assert_insert_refused(fixture *f, uint64_t rowid)
{
	ls_hot_version *v = make_version(f, 0);

	ls_hot_epoch_enter(f->ctx);
	assert_int_equal(ls_hot_row_insert(f->ctx, f->tbl, rowid, LS_ORIGIN_INSERTED, v, NULL), LS_EXISTS);
	ls_hot_epoch_exit(f->ctx);
	ls_hot_version_free(f->ctx, v);
}

/*
 * Remove row (inside an epoch), leave the epoch so that the row's memory
 * is reclaimed and may come back with the next allocation, enter again.
 */
static void
remove_reclaim(fixture *f, ls_hot_row *row)
{
	ls_hot_row_lock(row);
	ls_hot_row_remove(f->ctx, f->tbl, row, false);
	ls_hot_epoch_exit(f->ctx);
	ls_hot_reclaim(f->ctx);
	ls_hot_reclaim(f->ctx);
	ls_hot_epoch_enter(f->ctx);
}

static ls_hot_table_stats
tstats(fixture *f)
{
	ls_hot_table_stats s;

	ls_hot_table_get_stats(f->tbl, &s);
	return s;
}

/* ---- tables ----------------------------------------------------------------- */

/* Row all-visible flags: clear on insert (also in a reused block), settable. */
static void
test_allvis_flags(void **state)
{
	(void) state;
	fixture    *f = fixture_new(8u << 20, 4);
	ls_hot_row *a,
			   *b;

	ls_hot_epoch_enter(f->ctx);
	a = insert(f, 7, 1);
	assert_false(ls_hot_row_allvis(a));
	ls_hot_row_set_allvis(a, true);
	assert_true(ls_hot_row_allvis(a));
	remove_reclaim(f, a);

	/* the header's memory may come back: the flag must not */
	b = insert(f, 8, 2);
	assert_false(ls_hot_row_allvis(b));
	ls_hot_row_set_allvis(b, false);
	assert_false(ls_hot_row_allvis(b));
	ls_hot_epoch_exit(f->ctx);
	fixture_free(f);
}

/*
 * The glue's log marks (logged_xid, logged_flags): set by an insert that
 * names them, zero on every other insert, also in a row header whose
 * memory comes back (a stale LS_LOGGED_EARLY would let a checkpoint log a
 * committing writer's row without waiting for it).
 */
static void
test_logged_marks(void **state)
{
	(void) state;
	fixture    *f = fixture_new(8u << 20, 4);
	ls_hot_version *v = make_version(f, 1);
	ls_hot_row *a,
			   *b;

	ls_hot_epoch_enter(f->ctx);
	assert_int_equal(ls_hot_row_insert_marked(f->ctx, f->tbl, 7, LS_ORIGIN_MIGRATED, v, 77, 1, &a),
					 LS_OK);
	assert_int_equal(atomic_load(&a->logged_xid), 77);
	assert_int_equal(atomic_load(&a->logged_flags), 1);
	remove_reclaim(f, a);
	b = insert(f, 8, 2);
	assert_int_equal(atomic_load(&b->logged_xid), 0);
	assert_int_equal(atomic_load(&b->logged_flags), 0);
	ls_hot_epoch_exit(f->ctx);
	fixture_free(f);
}

/*
 * The reclaim bound covers objects retired after it was computed.  A
 * reclaimer computes it, then frees its own list and the orphan list
 * (other contexts' handed-off objects).  A reader that enters after the
 * scan is not in it; when the scan found nobody inside, the bound was
 * infinity, so an object that a writer unlinked after the scan and handed
 * off -- while that reader held it -- was freed under the reader.
 * Deterministic replay of that interleaving: the bound must not exceed the
 * retired object's tag.
 */
static void
test_reclaim_bound_after_scan(void **state)
{
	(void) state;
	fixture    *f = fixture_new(8u << 20, 4);
	ls_hot_ctx *reader;
	ls_hot_ctx *writer;
	ls_hot_row *row;
	ls_hot_version *held;
	uint64_t	bound;
	ls_hot_stats s;

	assert_int_equal(ls_hot_attach(f->hot, 1, &reader), LS_OK);
	assert_int_equal(ls_hot_attach(f->hot, 2, &writer), LS_OK);
	(void) insert(f, 5, 55);

	/* the reclaimer's scan: nobody is inside an epoch */
	bound = hot_reclaim_bound(f->hot);
	assert_true(bound <= atomic_load(&f->hot->global_epoch));

	/* a reader enters after the scan and holds the row's version */
	ls_hot_epoch_enter(reader);
	row = ls_hot_row_get(f->tbl, 5);
	assert_non_null(row);
	held = ls_hot_row_newest(row);
	assert_int_equal(version_tag(held), 55);

	/* a writer removes the row and hands its retire list off */
	ls_hot_epoch_enter(writer);
	row = ls_hot_row_get(f->tbl, 5);
	ls_hot_row_lock(row);
	ls_hot_row_remove(writer, f->tbl, row, false);
	ls_hot_epoch_exit(writer);
	ls_hot_detach(writer);

	/* a reclaim with the bound computed before all that keeps the version */
	assert_true(hot_blk_of(held)->tag >= bound);
	ls_hot_get_stats(f->hot, &s);
	assert_true(s.retired_pending > 0);
	assert_int_equal(version_tag(held), 55);

	/* once the reader leaves, one reclaim frees everything retired */
	ls_hot_epoch_exit(reader);
	ls_hot_reclaim(f->ctx);
	ls_hot_get_stats(f->hot, &s);
	assert_int_equal(s.retired_pending, 0);
	ls_hot_detach(reader);
	fixture_free(f);
}

static void
test_tables(void **state)
{
	(void) state;
	fixture    *f = fixture_new(8u << 20, 4);
	ls_hot_key	k1 = {1663, 5, 16384};
	ls_hot_key	k2 = {1663, 5, 16385};
	ls_hot_key	k3 = {1663, 6, 16384};
	ls_hot_table *t,
			   *t2,
			   *t3,
			   *t4;
	ls_hot_stats s;

	assert_ptr_equal(ls_hot_table_find(f->hot, k1), f->tbl);
	assert_null(ls_hot_table_find(f->hot, k2));
	assert_int_equal(ls_hot_table_create(f->ctx, k1, &t), LS_EXISTS);
	assert_int_equal(ls_hot_table_create(f->ctx, k2, &t2), LS_OK);
	assert_int_equal(ls_hot_table_create(f->ctx, k3, &t3), LS_OK);
	assert_ptr_equal(ls_hot_table_find(f->hot, k2), t2);
	assert_ptr_equal(ls_hot_table_find(f->hot, k3), t3);
	assert_ptr_not_equal(t2, t3);

	/* tags and rowid counters are per table */
	ls_hot_table_set_tag(t2, 0, 777);
	ls_hot_table_set_tag(t2, 1, 888);
	assert_int_equal(ls_hot_table_get_tag(t2, 0), 777);
	assert_int_equal(ls_hot_table_get_tag(t2, 1), 888);
	assert_int_equal(ls_hot_table_get_tag(t3, 0), 0);
	for (uint64_t i = 0; i < 10; i++)
		assert_int_equal(ls_hot_table_reserve_rowid(t2, 291, 100, 10, 10), i);
	assert_int_equal(ls_hot_table_reserve_rowid(t2, 291, 100, 10, 10), 291);
	assert_int_equal(ls_hot_table_rowid_limit(t2), 292);
	assert_int_equal(ls_hot_table_rowid_limit(t3), 0);

	/* all-visible limits: per table, only grow, reset on demand */
	ls_hot_table_raise_allvis_limit(t2, 582);
	ls_hot_table_raise_allvis_limit(t2, 291);
	assert_int_equal(ls_hot_table_allvis_limit(t2), 582);
	assert_int_equal(ls_hot_table_allvis_limit(t3), 0);
	ls_hot_table_reset_allvis_limit(t3);
	assert_int_equal(ls_hot_table_allvis_limit(t2), 582);

	ls_hot_get_stats(f->hot, &s);
	assert_int_equal(s.tables, 3);

	/* walking the live tables finds each once, with its key */
	uint32_t	cursor = 0;
	int			seen = 0;
	ls_hot_table *w;

	while ((w = ls_hot_table_next(f->hot, &cursor)) != NULL)
	{
		ls_hot_key	k = ls_hot_table_get_key(w);

		assert_ptr_equal(ls_hot_table_find(f->hot, k), w);
		seen++;
	}
	assert_int_equal(seen, 3);
	assert_null(ls_hot_table_next(f->hot, &cursor));

	/* 4 slots: one more fits, then the tier is out of descriptors */
	ls_hot_key	k4 = {1, 1, 1};
	ls_hot_key	k5 = {2, 2, 2};

	assert_int_equal(ls_hot_table_create(f->ctx, k4, &t4), LS_OK);
	assert_int_equal(ls_hot_table_create(f->ctx, k5, &t), LS_NO_SPACE);

	/* a dropped slot is not reused while a reader that saw it is inside */
	ls_hot_ctx *reader;

	assert_int_equal(ls_hot_attach(f->hot, 1, &reader), LS_OK);
	ls_hot_epoch_enter(reader);
	ls_hot_table_drop(f->ctx, t2);
	assert_null(ls_hot_table_find(f->hot, k2));
	assert_ptr_equal(ls_hot_table_find(f->hot, k3), t3);	/* probing past tombstones */
	assert_int_equal(ls_hot_table_create(f->ctx, k5, &t), LS_NO_SPACE);
	ls_hot_epoch_exit(reader);
	assert_int_equal(ls_hot_table_create(f->ctx, k5, &t), LS_OK);
	assert_ptr_equal(t, t2);	/* the tombstone was reused */
	assert_int_equal(ls_hot_table_rowid_limit(t), 0);
	assert_int_equal(ls_hot_table_allvis_limit(t), 0);	/* not inherited */
	assert_int_equal(ls_hot_table_get_tag(t, 0), 0);
	assert_ptr_equal(ls_hot_table_find(f->hot, k5), t);
	ls_hot_detach(reader);

	ls_hot_table_drop(f->ctx, t);
	ls_hot_table_drop(f->ctx, t3);
	ls_hot_table_drop(f->ctx, t4);
	ls_hot_get_stats(f->hot, &s);
	assert_int_equal(s.tables, 1);
	cursor = 0;
	assert_ptr_equal(ls_hot_table_next(f->hot, &cursor), f->tbl);
	assert_null(ls_hot_table_next(f->hot, &cursor));
	fixture_free(f);
}

/* ---- RID-map against a reference model --------------------------------------- */

enum
{
	M_NULL = 0, M_ROW, M_DEAD
};

static void
check_model(fixture *f, const uint8_t *model, const uint64_t *ids, size_t n)
{
	uint64_t	rows = 0,
				dead = 0;

	for (size_t i = 0; i < n; i++)
	{
		ls_hot_row *row = ls_hot_row_get(f->tbl, ids[i]);

		assert_int_equal(row != NULL, model[i] == M_ROW);
		assert_int_equal(ls_hot_rowid_is_dead(f->tbl, ids[i]), model[i] == M_DEAD);
		if (row != NULL)
		{
			assert_int_equal(row->rowid, ids[i]);
			assert_int_equal(version_tag(ls_hot_row_newest(row)), ids[i]);
		}
		rows += model[i] == M_ROW;
		dead += model[i] == M_DEAD;
	}
	assert_int_equal(tstats(f).rows, rows);
	assert_int_equal(tstats(f).dead_rowids, dead);
	assert_int_equal(tstats(f).versions, rows);
}

/* Iterate [lo, hi) and compare with the model (ids sorted ascending). */
static void
check_scan(fixture *f, const uint8_t *model, const uint64_t *ids, size_t n,
		   uint64_t lo, uint64_t hi)
{
	uint64_t	cursor = lo;
	size_t		i = 0;
	ls_hot_row *row;

	while ((row = ls_hot_scan_next(f->tbl, &cursor, hi)) != NULL)
	{
		while (i < n && (ids[i] < lo || model[i] != M_ROW))
			i++;
		assert_true(i < n);
		assert_int_equal(row->rowid, ids[i]);
		assert_int_equal(cursor, ids[i] + 1);
		i++;
	}
	while (i < n && ids[i] < hi && (ids[i] < lo || model[i] != M_ROW))
		i++;
	assert_true(i == n || ids[i] >= hi);

	/* the batch iterator returns the same rows, whatever the batch size */
	for (uint32_t bs = 1; bs <= 64; bs = bs * 3 + 1)
	{
		ls_hot_row *batch[64];
		uint32_t	got;

		cursor = lo;
		i = 0;
		do
		{
			got = ls_hot_scan_batch(f->tbl, &cursor, hi, batch, bs);
			assert_true(got <= bs);
			for (uint32_t b = 0; b < got; b++)
			{
				while (i < n && (ids[i] < lo || model[i] != M_ROW))
					i++;
				assert_true(i < n);
				assert_int_equal(batch[b]->rowid, ids[i]);
				i++;
			}
			if (got == bs)
				assert_int_equal(cursor, batch[got - 1]->rowid + 1);
			else
				assert_true(cursor >= LS_MIN(hi, LS_HOT_MAX_ROWID));
		} while (got == bs);
		while (i < n && ids[i] < hi && (ids[i] < lo || model[i] != M_ROW))
			i++;
		assert_true(i == n || ids[i] >= hi);
	}
	assert_int_equal(ls_hot_scan_batch(f->tbl, &cursor, hi, NULL, 0), 0);

	uint64_t	rid;

	cursor = lo;
	i = 0;
	while (ls_hot_scan_next_dead(f->tbl, &cursor, hi, &rid))
	{
		while (i < n && (ids[i] < lo || model[i] != M_DEAD))
			i++;
		assert_true(i < n);
		assert_int_equal(rid, ids[i]);
		i++;
	}
	while (i < n && ids[i] < hi && (ids[i] < lo || model[i] != M_DEAD))
		i++;
	assert_true(i == n || ids[i] >= hi);
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *) a,
				y = *(const uint64_t *) b;

	return x < y ? -1 : x > y;
}

static void
test_ridmap_model(void **state)
{
	(void) state;
	fixture    *f = fixture_new(64u << 20, 4);
	size_t		n = 6000;
	int			ops = asan_scale() ? 20000 : 100000;
	uint64_t   *ids = malloc(n * sizeof(*ids));
	uint8_t    *model = calloc(n, 1);
	uint64_t	rng = 7;

	/* dense runs, leaf edges, and sparse ids up to the top of the space */
	for (size_t i = 0; i < n; i++)
	{
		if (i < 3000)
			ids[i] = i;
		else if (i < 5000)
			ids[i] = 1000000 + (i - 3000) * 1023;
		else
			ids[i] = (ls_rand_next(&rng) % (LS_HOT_MAX_ROWID / 1024)) * 1024 + (i % 3) * 511;
	}
	ids[n - 1] = LS_HOT_MAX_ROWID - 1;
	qsort(ids, n, sizeof(*ids), cmp_u64);
	size_t		u = 0;

	for (size_t i = 0; i < n; i++)
		if (u == 0 || ids[i] != ids[u - 1])
			ids[u++] = ids[i];
	n = u;

	ls_hot_epoch_enter(f->ctx);
	for (int op = 0; op < ops; op++)
	{
		size_t		i = ls_rand_next(&rng) % n;
		ls_hot_row *row = ls_hot_row_get(f->tbl, ids[i]);
		int			what = (int) (ls_rand_next(&rng) % 4);

		switch (model[i])
		{
			case M_NULL:
				insert(f, ids[i], ids[i]);
				model[i] = M_ROW;
				break;
			case M_ROW:
				if (what == 0)
				{
					assert_insert_refused(f, ids[i]);
					break;
				}
				assert_non_null(row);
				ls_hot_row_lock(row);
				ls_hot_row_remove(f->ctx, f->tbl, row, what >= 2);
				assert_true(ls_hot_row_is_removed(row));
				model[i] = what >= 2 ? M_DEAD : M_NULL;
				break;
			case M_DEAD:
				if (what == 0)
				{
					assert_insert_refused(f, ids[i]);
					break;
				}
				ls_hot_rowid_forget(f->ctx, f->tbl, ids[i]);
				model[i] = M_NULL;
				break;
		}
		if (op % 4096 == 0)
		{
			ls_hot_epoch_exit(f->ctx);
			ls_hot_epoch_enter(f->ctx);
		}
	}
	check_model(f, model, ids, n);
	check_scan(f, model, ids, n, 0, UINT64_MAX);
	for (int k = 0; k < 50; k++)
	{
		uint64_t	a = ids[ls_rand_next(&rng) % n] + ls_rand_next(&rng) % 3;
		uint64_t	b = a + ls_rand_next(&rng) % (k < 25 ? 5000 : LS_HOT_MAX_ROWID);

		check_scan(f, model, ids, n, a, b);
	}
	ls_hot_epoch_exit(f->ctx);

	/* the verifier agrees, and catches a corrupted row and version */
	char		msg[256];

	ls_hot_epoch_enter(f->ctx);
	assert_int_equal(ls_hot_table_verify(f->tbl, true, msg, sizeof(msg)), LS_OK);
	assert_int_equal(ls_hot_verify(f->hot, true, msg, sizeof(msg)), LS_OK);
	ls_hot_row *victim = NULL;
	uint64_t	cursor = 0;

	victim = ls_hot_scan_next(f->tbl, &cursor, UINT64_MAX);
	assert_non_null(victim);
	victim->rowid += 1;
	assert_int_equal(ls_hot_table_verify(f->tbl, false, msg, sizeof(msg)), LS_CORRUPT);
	assert_non_null(strstr(msg, "has rowid"));
	victim->rowid -= 1;
	ls_hot_version *vv = ls_hot_row_newest(victim);

	vv->len += 4096;
	assert_int_equal(ls_hot_table_verify(f->tbl, false, msg, sizeof(msg)), LS_CORRUPT);
	assert_non_null(strstr(msg, "-byte block"));
	vv->len -= 4096;
	assert_int_equal(ls_hot_table_verify(f->tbl, true, msg, sizeof(msg)), LS_OK);
	ls_hot_epoch_exit(f->ctx);

	/* forgetting a rowid that is not DEAD changes nothing */
	ls_hot_epoch_enter(f->ctx);
	for (size_t i = 0; i < n; i++)
		if (model[i] != M_DEAD)
			ls_hot_rowid_forget(f->ctx, f->tbl, ids[i]);
	ls_hot_rowid_forget(f->ctx, f->tbl, LS_HOT_MAX_ROWID + 5);
	ls_hot_epoch_exit(f->ctx);
	check_model(f, model, ids, n);

	free(ids);
	free(model);
	fixture_free(f);
}

static void
test_ridmap_edges(void **state)
{
	(void) state;
	fixture    *f = fixture_new(8u << 20, 4);
	uint64_t	want[] = {0, 1023, 1024, 1 << 20, (UINT64_C(1) << 30) + 5,
	LS_HOT_MAX_ROWID - 1};
	uint64_t	cursor = 0;
	ls_hot_row *row;
	ls_hot_version *v = make_version(f, 0);

	ls_hot_epoch_enter(f->ctx);
	assert_null(ls_hot_scan_next(f->tbl, &cursor, UINT64_MAX));	/* empty map */
	assert_int_equal(ls_hot_row_insert(f->ctx, f->tbl, LS_HOT_MAX_ROWID, LS_ORIGIN_INSERTED, v, NULL),
					 LS_INVALID);
	ls_hot_version_free(f->ctx, v);
	for (int i = 5; i >= 0; i--)
		insert(f, want[i], want[i]);
	assert_null(ls_hot_row_get(f->tbl, 1022));
	assert_null(ls_hot_row_get(f->tbl, LS_HOT_MAX_ROWID));
	assert_null(ls_hot_row_get(f->tbl, UINT64_MAX));
	cursor = 0;
	for (int i = 0; i < 6; i++)
	{
		row = ls_hot_scan_next(f->tbl, &cursor, UINT64_MAX);
		assert_non_null(row);
		assert_int_equal(row->rowid, want[i]);
		assert_int_equal(row->origin, LS_ORIGIN_INSERTED);
	}
	assert_null(ls_hot_scan_next(f->tbl, &cursor, UINT64_MAX));
	/* end bound is exclusive */
	cursor = 1;
	row = ls_hot_scan_next(f->tbl, &cursor, 1024);
	assert_int_equal(row->rowid, 1023);
	assert_null(ls_hot_scan_next(f->tbl, &cursor, 1024));

	/* an emptied leaf is skipped by its counter; the scan still ends */
	for (uint64_t r = 2048; r < 3072; r++)
		insert(f, r, r);
	for (uint64_t r = 2048; r < 3072; r++)
	{
		row = ls_hot_row_get(f->tbl, r);
		ls_hot_row_lock(row);
		ls_hot_row_remove(f->ctx, f->tbl, row, r % 2 == 0);
	}
	cursor = 1025;
	row = ls_hot_scan_next(f->tbl, &cursor, UINT64_MAX);
	assert_int_equal(row->rowid, 1 << 20);
	uint64_t	rid;
	uint64_t	ndead = 0;

	cursor = 0;
	while (ls_hot_scan_next_dead(f->tbl, &cursor, UINT64_MAX, &rid))
	{
		assert_int_equal(rid, 2048 + 2 * ndead);
		ndead++;
	}
	assert_int_equal(ndead, 512);
	assert_int_equal(tstats(f).dead_rowids, 512);
	ls_hot_epoch_exit(f->ctx);
	fixture_free(f);
}

/* ---- occupancy bitmap ------------------------------------------------------ */

#define SP_BLOCK	291			/* rowids per virtual block */
#define SP_FILL		61			/* rows of pgbench_accounts shape per block */

static hot_map_node *
leaf_of(fixture *f, uint64_t rowid)
{
	ls_hot_map_hint h = {0};

	(void) ls_hot_row_get_hinted(f->tbl, rowid, &h);
	return h.leaf;
}

/*
 * White box: in the leaf holding [lo, hi), every slot's bit is set exactly
 * when the slot is not NULL (what the model says), nothing is BUSY.
 */
static void
assert_leaf_bits(fixture *f, const uint8_t *model, uint64_t lo, uint64_t hi)
{
	for (uint64_t r = lo; r < hi; r++)
	{
		hot_map_node *leaf = leaf_of(f, r);

		if (leaf == NULL)
		{
			assert_int_equal(model[r], M_NULL);
			continue;
		}
		_Atomic uintptr_t *slot = hot_map_leaf_slot(leaf, r);
		uintptr_t	v = slot != NULL ? atomic_load(slot) : 0;

		assert_true(v != HOT_SLOT_BUSY);
		assert_int_equal(v != 0, model[r] != M_NULL);
		if (hot_occ_test(leaf, r) != (v != 0))
			fail_msg("rowid %llu: slot %s, occupancy bit %d", (unsigned long long) r,
					 v == 0 ? "NULL" : v == HOT_SLOT_DEAD ? "DEAD" : "row",
					 (int) hot_occ_test(leaf, r));
	}
}

/* White box: chunks allocated in the leaves holding [0, n). */
static uint64_t
count_chunks(fixture *f, uint64_t n)
{
	uint64_t	chunks = 0;

	for (uint64_t base = 0; base < n; base += HOT_MAP_FANOUT)
	{
		hot_map_node *leaf = leaf_of(f, base);

		for (uint32_t c = 0; leaf != NULL && c < HOT_LEAF_CHUNKS; c++)
			chunks += atomic_load(&leaf->slot[c]) != 0;
	}
	return chunks;
}

/* Chunks the model needs: those with a slot that is not NULL. */
static uint64_t
model_chunks(const uint8_t *model, uint64_t n)
{
	uint64_t	chunks = 0;

	for (uint64_t c = 0; c * HOT_CHUNK_SLOTS < n; c++)
		for (uint64_t r = c * HOT_CHUNK_SLOTS; r < LS_MIN(n, (c + 1) * HOT_CHUNK_SLOTS); r++)
			if (model[r] != M_NULL)
			{
				chunks++;
				break;
			}
	return chunks;
}

static void
assert_verify_exact(fixture *f)
{
	char		msg[256];

	if (ls_hot_table_verify(f->tbl, true, msg, sizeof(msg)) != LS_OK)
		fail_msg("verify: %s", msg);
}

/* brute force: one past the highest non-NULL slot in [floor, end) */
static uint64_t
model_used_end(const uint8_t *model, uint64_t n, uint64_t end, uint64_t floor)
{
	for (uint64_t r = LS_MIN(end, n); r > floor; r--)
		if (model[r - 1] != M_NULL)
			return r;
	return 0;
}

/*
 * Rows in the first 61 rowids of every 291 (as a table of pgbench_accounts
 * rows fills its virtual blocks), then removals, DEAD marks and forgets:
 * every iterator from arbitrary cursors and ends returns exactly what a
 * brute-force walk of the model returns, ls_hot_table_used_end too, and the
 * bitmap matches the slots after every phase.
 */
static void
test_ridmap_sparse_blocks(void **state)
{
	(void) state;
	fixture    *f = fixture_new(64u << 20, 4);
	uint64_t	nblocks = asan_scale() ? 60 : 200;
	uint64_t	n = nblocks * SP_BLOCK + 3000;	/* and a tail of empty leaves */
	uint64_t   *ids = malloc(n * sizeof(*ids));
	uint8_t    *model = calloc(n, 1);
	uint64_t	rng = 291;

	for (uint64_t r = 0; r < n; r++)
		ids[r] = r;
	ls_hot_epoch_enter(f->ctx);
	for (uint64_t b = 0; b < nblocks; b++)
		for (uint64_t j = 0; j < SP_FILL; j++)
		{
			insert(f, b * SP_BLOCK + j, b * SP_BLOCK + j);
			model[b * SP_BLOCK + j] = M_ROW;
		}
	/* only the chunks of used rowids exist: 1-2 (of 64) or 2-3 (of 32) a block */
	assert_int_equal(count_chunks(f, n), model_chunks(model, n));
	assert_true(count_chunks(f, n) * HOT_CHUNK_SLOTS < nblocks * SP_BLOCK / 2);

	for (int phase = 0; phase < 4; phase++)
	{
		if (phase > 0)
		{
			/* remove (NULL or DEAD), forget, insert again into free slots */
			for (int k = 0; k < 3000; k++)
			{
				uint64_t	b = ls_rand_next(&rng) % nblocks;
				uint64_t	r = b * SP_BLOCK + ls_rand_next(&rng) % (phase == 3 ? SP_BLOCK : SP_FILL);
				int			what = (int) (ls_rand_next(&rng) % 3);

				if (model[r] == M_ROW)
				{
					ls_hot_row *row = ls_hot_row_get(f->tbl, r);

					ls_hot_row_lock(row);
					ls_hot_row_remove(f->ctx, f->tbl, row, what != 0);
					model[r] = what != 0 ? M_DEAD : M_NULL;
				}
				else if (model[r] == M_DEAD && what != 2)
				{
					ls_hot_rowid_forget(f->ctx, f->tbl, r);
					model[r] = M_NULL;
				}
				else if (model[r] == M_NULL && phase >= 2)
				{
					insert(f, r, r);
					model[r] = M_ROW;
				}
			}
		}
		/* chunks exist exactly where a slot is not NULL (DEAD keeps one) */
		assert_int_equal(count_chunks(f, n), model_chunks(model, n));
		check_model(f, model, ids, n);
		assert_verify_exact(f);
		assert_leaf_bits(f, model, 0, n);
		check_scan(f, model, ids, n, 0, UINT64_MAX);
		for (int k = 0; k < 60; k++)
		{
			uint64_t	lo,
						hi;

			if (k < 20)
			{
				/* word, leaf and block edges */
				uint64_t	edges[] = {0, 1, 60, 61, 63, 64, 65, 127, 128, 290, 291, 1023, 1024, 1025};

				lo = (ls_rand_next(&rng) % nblocks) * SP_BLOCK +
					edges[ls_rand_next(&rng) % 14];
				hi = lo + edges[ls_rand_next(&rng) % 14];
			}
			else
			{
				lo = ls_rand_next(&rng) % n;
				hi = lo + ls_rand_next(&rng) % (k < 40 ? 2000 : n);
			}
			check_scan(f, model, ids, n, lo, hi);
			assert_int_equal(ls_hot_table_used_end(f->tbl, hi, 0),
							 model_used_end(model, n, hi, 0));
			/* floors at the cursor's edges, at and beyond end */
			assert_int_equal(ls_hot_table_used_end(f->tbl, hi, lo),
							 model_used_end(model, n, hi, lo));
			assert_int_equal(ls_hot_table_used_end(f->tbl, hi, hi),
							 model_used_end(model, n, hi, hi));
			assert_int_equal(ls_hot_table_used_end(f->tbl, lo, hi), 0);
		}
		assert_int_equal(ls_hot_table_used_end(f->tbl, UINT64_MAX, 0),
						 model_used_end(model, n, n, 0));
	}
	ls_hot_epoch_exit(f->ctx);
	free(ids);
	free(model);
	fixture_free(f);
}

/*
 * Every single change keeps bit == (slot != NULL): insert, refused insert,
 * remove to NULL and to DEAD, forget (also of a non-DEAD rowid), insert
 * again at a forgotten or NULLed rowid; and the verifier notices a bit
 * that is missing or left over.
 */
static void
test_ridmap_occupancy_steps(void **state)
{
	(void) state;
	fixture    *f = fixture_new(8u << 20, 4);
	uint64_t	n = 2 * HOT_MAP_FANOUT;
	uint8_t    *model = calloc(n, 1);
	uint64_t	rng = 61;
	char		msg[256];

	ls_hot_epoch_enter(f->ctx);
	for (int op = 0; op < (asan_scale() ? 3000 : 12000); op++)
	{
		/* rowids clustered on word edges of two leaves */
		uint64_t	r = (ls_rand_next(&rng) % 32) * 64 + (ls_rand_next(&rng) % 4) * 21;
		int			what = (int) (ls_rand_next(&rng) % 4);

		switch (model[r])
		{
			case M_NULL:
				if (what == 0)
					ls_hot_rowid_forget(f->ctx, f->tbl, r);		/* no-op */
				else
				{
					insert(f, r, r);
					model[r] = M_ROW;
				}
				break;
			case M_ROW:
				if (what == 0)
				{
					assert_insert_refused(f, r);
					ls_hot_rowid_forget(f->ctx, f->tbl, r);		/* no-op */
				}
				else
				{
					ls_hot_row *row = ls_hot_row_get(f->tbl, r);

					ls_hot_row_lock(row);
					ls_hot_row_remove(f->ctx, f->tbl, row, what >= 2);
					model[r] = what >= 2 ? M_DEAD : M_NULL;
				}
				break;
			case M_DEAD:
				if (what == 0)
					assert_insert_refused(f, r);
				else
				{
					ls_hot_rowid_forget(f->ctx, f->tbl, r);
					model[r] = M_NULL;
				}
				break;
		}
		assert_leaf_bits(f, model, r & ~(uint64_t) 63, (r | 63) + 1);
		if (op % 64 == 0)
		{
			assert_leaf_bits(f, model, 0, n);
			assert_verify_exact(f);
		}
	}
	assert_leaf_bits(f, model, 0, n);
	assert_verify_exact(f);

	/* the verifier catches a clear bit under a row and under DEAD ... */
	uint64_t	row_at = n,
				dead_at = n,
				null_at = n;

	for (uint64_t r = 0; r < n; r++)
	{
		if (model[r] == M_ROW && row_at == n)
			row_at = r;
		if (model[r] == M_DEAD && dead_at == n)
			dead_at = r;
		if (model[r] == M_NULL && null_at == n && leaf_of(f, r) != NULL &&
			hot_map_chunk_of(leaf_of(f, r), r) != NULL)
			null_at = r;
	}
	assert_true(row_at < n && dead_at < n && null_at < n);
	hot_occ_clear(leaf_of(f, row_at), row_at);
	assert_int_equal(ls_hot_table_verify(f->tbl, false, msg, sizeof(msg)), LS_CORRUPT);
	assert_non_null(strstr(msg, "holds a row but its occupancy bit is clear"));
	hot_occ_set(leaf_of(f, row_at), row_at);
	hot_occ_clear(leaf_of(f, dead_at), dead_at);
	assert_int_equal(ls_hot_table_verify(f->tbl, false, msg, sizeof(msg)), LS_CORRUPT);
	assert_non_null(strstr(msg, "holds DEAD but its occupancy bit is clear"));
	hot_occ_set(leaf_of(f, dead_at), dead_at);
	/* ... and, at rest, a bit left over on a NULL slot */
	hot_occ_set(leaf_of(f, null_at), null_at);
	assert_int_equal(ls_hot_table_verify(f->tbl, false, msg, sizeof(msg)), LS_OK);
	assert_int_equal(ls_hot_table_verify(f->tbl, true, msg, sizeof(msg)), LS_CORRUPT);
	assert_non_null(strstr(msg, "occupancy bits set"));
	hot_occ_clear(leaf_of(f, null_at), null_at);
	assert_verify_exact(f);
	/* ... and, even with writers running, a bit whose chunk does not exist */
	{
		uint64_t	nochunk = 3 * HOT_MAP_FANOUT + 3 * HOT_CHUNK_SLOTS + 5;
		hot_map_node *leaf;

		insert(f, 3 * HOT_MAP_FANOUT, 3 * HOT_MAP_FANOUT);	/* leaf, chunk 0 */
		leaf = leaf_of(f, nochunk);
		assert_non_null(leaf);
		assert_null(hot_map_chunk_of(leaf, nochunk));
		assert_null(ls_hot_row_get(f->tbl, nochunk));
		assert_false(ls_hot_rowid_is_dead(f->tbl, nochunk));
		ls_hot_rowid_forget(f->ctx, f->tbl, nochunk);	/* no-op */
		hot_occ_set(leaf, nochunk);
		assert_int_equal(ls_hot_table_verify(f->tbl, false, msg, sizeof(msg)), LS_CORRUPT);
		assert_non_null(strstr(msg, "absent"));
		/* scans and used_end skip it (a set bit without chunk reads NULL) */
		assert_int_equal(ls_hot_table_used_end(f->tbl, nochunk + 1, 0),
						 ls_hot_table_used_end(f->tbl, nochunk, 0));
		assert_int_equal(ls_hot_table_used_end(f->tbl, nochunk + 1, nochunk), 0);
		hot_occ_clear(leaf, nochunk);
		assert_verify_exact(f);
	}
	ls_hot_epoch_exit(f->ctx);
	free(model);
	fixture_free(f);
}

/* Hinted lookups agree with plain ones; a dropped map's leaf is not reused. */
static void
test_ridmap_hint(void **state)
{
	(void) state;
	fixture    *f = fixture_new(8u << 20, 4);
	ls_hot_map_hint hint = {0};
	ls_hot_key	key2 = {1663, 5, 16385};
	ls_hot_table *t2;
	uint64_t	probe[] = {0, 1, 500, 1023, 1024, 1500, 3000, 5, 1 << 20, 7, 2047, 4096};

	ls_hot_epoch_enter(f->ctx);
	assert_null(ls_hot_row_get_hinted(f->tbl, 3, &hint));	/* empty map */
	assert_null(hint.leaf);
	for (uint64_t r = 0; r < 2048; r += 3)
		insert(f, r, r);
	insert(f, 1 << 20, 1 << 20);
	for (int round = 0; round < 2; round++)
	{
		for (size_t i = 0; i < sizeof(probe) / sizeof(probe[0]); i++)
		{
			ls_hot_row *row = ls_hot_row_get_hinted(f->tbl, probe[i], &hint);

			assert_ptr_equal(row, ls_hot_row_get(f->tbl, probe[i]));
			if (row != NULL)
				assert_int_equal(row->rowid, probe[i]);
		}
	}
	/* the hint keeps a leaf, not its chunks: a chunk created later is found */
	assert_null(ls_hot_row_get_hinted(f->tbl, (1 << 20) + 500, &hint));
	assert_non_null(hint.leaf);
	assert_null(hot_map_chunk_of(hint.leaf, (1 << 20) + 500));
	insert(f, (1 << 20) + 500, (1 << 20) + 500);
	assert_ptr_equal(ls_hot_row_get_hinted(f->tbl, (1 << 20) + 500, &hint),
					 ls_hot_row_get(f->tbl, (1 << 20) + 500));
	assert_non_null(ls_hot_row_get(f->tbl, (1 << 20) + 500));
	assert_null(ls_hot_row_get_hinted(f->tbl, LS_HOT_MAX_ROWID, &hint));
	assert_null(ls_hot_row_get_hinted(f->tbl, UINT64_MAX, &hint));
	/* a removed row reads as absent through the remembered leaf too */
	assert_non_null(ls_hot_row_get_hinted(f->tbl, 6, &hint));
	ls_hot_row *victim = ls_hot_row_get(f->tbl, 9);

	ls_hot_row_lock(victim);
	ls_hot_row_remove(f->ctx, f->tbl, victim, true);
	assert_null(ls_hot_row_get_hinted(f->tbl, 9, &hint));
	ls_hot_epoch_exit(f->ctx);

	/* drop the table: the hint must not lead into the retired map */
	assert_non_null(ls_hot_row_get_hinted(f->tbl, 3, &hint));
	ls_hot_table_drop(f->ctx, f->tbl);
	f->tbl = NULL;
	ls_hot_reclaim(f->ctx);
	ls_hot_reclaim(f->ctx);
	assert_int_equal(ls_hot_table_create(f->ctx, key2, &t2), LS_OK);
	ls_hot_epoch_enter(f->ctx);
	assert_null(ls_hot_row_get_hinted(t2, 3, &hint));
	ls_hot_epoch_exit(f->ctx);
	f->tbl = t2;
	fixture_free(f);
}

/*
 * Row references (ls_hot_row_get_ref): a remembered header holds until a
 * row leaves the map (remove, evict) or the table is dropped; untaken
 * serials, another table's serial, another rowid and NULL never hold; a
 * row that leaves when no reference was taken changes nothing.
 */
static void
test_row_refs(void **state)
{
	(void) state;
	fixture    *f = fixture_new(8u << 20, 4);
	ls_hot_key	key2 = {1663, 5, 16385};
	ls_hot_table *t2;
	uint64_t	s1,
				s2,
				s3,
				st2;
	ls_hot_row *r1;

	for (uint64_t r = 0; r < 100; r++)
		insert(f, r, r);
	assert_int_equal(ls_hot_table_create(f->ctx, key2, &t2), LS_OK);
	ls_hot_epoch_enter(f->ctx);
	r1 = ls_hot_row_get_ref(f->tbl, 1, &s1);
	assert_non_null(r1);
	assert_ptr_equal(r1, ls_hot_row_get(f->tbl, 1));
	assert_true((s1 & 1) != 0);
	assert_null(ls_hot_row_get_ref(f->tbl, 5000, &s2));	/* no row: NULL */
	assert_int_equal(s2, s1);	/* nothing left the map in between */
	assert_ptr_equal(ls_hot_row_from_ref(f->tbl, 1, r1, s1), r1);
	assert_null(ls_hot_row_from_ref(f->tbl, 1, NULL, s1));
	assert_null(ls_hot_row_from_ref(f->tbl, 1, r1, s1 & ~UINT64_C(1)));	/* untaken */
	/* the other table's serial is its own */
	assert_null(ls_hot_row_get_ref(t2, 1, &st2));
	assert_int_not_equal(st2, s1);
	assert_null(ls_hot_row_from_ref(t2, 1, r1, s1));
	assert_null(ls_hot_row_from_ref(f->tbl, 1, r1, st2));

	/* a remove (of any row of the table) ends every reference */
	ls_hot_row *victim = ls_hot_row_get(f->tbl, 9);

	ls_hot_row_lock(victim);
	ls_hot_row_remove(f->ctx, f->tbl, victim, true);
	assert_null(ls_hot_row_from_ref(f->tbl, 1, r1, s1));
	/* other tables' references are untouched */
	assert_null(ls_hot_row_get_ref(t2, 1, &s3));
	assert_int_equal(s3, st2);
	/* taken again: holds again */
	r1 = ls_hot_row_get_ref(f->tbl, 1, &s2);
	assert_int_not_equal(s2, s1);
	assert_ptr_equal(ls_hot_row_from_ref(f->tbl, 1, r1, s2), r1);
	/* an evict ends it too */
	ls_hot_row *ev = ls_hot_row_get(f->tbl, 10);

	ls_hot_row_lock(ev);
	ls_hot_row_evict(f->ctx, f->tbl, ev);
	assert_null(ls_hot_row_from_ref(f->tbl, 1, r1, s2));
	r1 = ls_hot_row_get_ref(f->tbl, 1, &s3);
	victim = ls_hot_row_get(f->tbl, 11);
	ls_hot_row_lock(victim);
	ls_hot_row_remove(f->ctx, f->tbl, victim, false);
	assert_null(ls_hot_row_from_ref(f->tbl, 1, r1, s3));
	/* rows leaving while no reference was taken since change nothing */
	{
		uint64_t	quiet = atomic_load(&f->tbl->ref_serial);

		assert_true((quiet & 1) == 0);
		victim = ls_hot_row_get(f->tbl, 12);
		ls_hot_row_lock(victim);
		ls_hot_row_remove(f->ctx, f->tbl, victim, true);
		assert_int_equal(atomic_load(&f->tbl->ref_serial), quiet);
		r1 = ls_hot_row_get_ref(f->tbl, 1, &s3);
		assert_int_equal(s3, quiet | 1);
	}
	ls_hot_epoch_exit(f->ctx);

	/* a drop ends them, and the slot's next table starts afresh */
	ls_hot_table_drop(f->ctx, f->tbl);
	ls_hot_epoch_enter(f->ctx);
	assert_null(ls_hot_row_from_ref(f->tbl, 1, r1, s3));
	ls_hot_epoch_exit(f->ctx);
	f->tbl = NULL;
	ls_hot_reclaim(f->ctx);
	ls_hot_reclaim(f->ctx);
	{
		ls_hot_key	key = {1663, 5, 16384};

		assert_int_equal(ls_hot_table_create(f->ctx, key, &f->tbl), LS_OK);
	}
	insert(f, 1, 1);
	ls_hot_epoch_enter(f->ctx);
	assert_null(ls_hot_row_from_ref(f->tbl, 1, r1, s3));
	r1 = ls_hot_row_get_ref(f->tbl, 1, &s2);
	assert_int_not_equal(s2, s3);
	assert_ptr_equal(ls_hot_row_from_ref(f->tbl, 1, r1, s2), r1);
	ls_hot_epoch_exit(f->ctx);
	ls_hot_table_drop(f->ctx, t2);
	fixture_free(f);
}

/* ---- freeing emptied chunks and nodes ----------------------------------- */

/* Evict (as pack does) or remove the row at rowid; the slot becomes NULL. */
static void
take_out(fixture *f, uint64_t rowid, bool evict)
{
	ls_hot_row *row = ls_hot_row_get(f->tbl, rowid);

	assert_non_null(row);
	ls_hot_row_lock(row);
	if (evict)
		ls_hot_row_evict(f->ctx, f->tbl, row);
	else
		ls_hot_row_remove(f->ctx, f->tbl, row, false);
	assert_true(ls_hot_row_is_removed(row));
}

static uint64_t
used_bytes(fixture *f)
{
	ls_hot_stats s;

	ls_hot_reclaim(f->ctx);
	ls_hot_get_stats(f->hot, &s);
	assert_int_equal(s.retired_pending, 0);
	return s.used_bytes;
}

/*
 * A chunk goes back to the allocator when its last slot goes back to NULL
 * (evict, remove, forget of DEAD, an insert refused on a DEAD slot), not
 * before (a DEAD slot keeps it); a leaf with its last chunk; inner nodes
 * stay, as the root does.  Table bytes and the tier's used bytes fall back
 * to the inner nodes', and a leaf hint kept across the free of its leaf is
 * not followed into the reused block.
 */
static void
test_ridmap_frees_empty_chunks(void **state)
{
	(void) state;
	fixture    *f = fixture_new(16u << 20, 4);
	/* chunks of one leaf, a second leaf, another level-2 and level-1 subtree */
	uint64_t	far[] = {5000, (UINT64_C(1) << 20) + 7, (UINT64_C(1) << 30) + 3};
	ls_hot_map_hint hint = {0};
	hot_map_node *root;
	uint64_t	root_bytes,
				empty_used,
				full_bytes;

	ls_hot_epoch_enter(f->ctx);
	insert(f, 100, 100);		/* creates the root's path, leaf 0 and chunk 3 */
	root = atomic_load(&f->tbl->root);
	root_bytes = hot_obj_size(f->hot, root);
	/* every inner node is the root's size */
	assert_int_equal(hot_obj_size(f->hot, (void *) atomic_load(&root->slot[0])), root_bytes);
	take_out(f, 100, false);
	ls_hot_epoch_exit(f->ctx);
	/* the map is back to its inner nodes (root, level 1, level 2) */
	assert_int_equal(tstats(f).bytes, 3 * root_bytes);
	empty_used = used_bytes(f);
	assert_int_equal(empty_used, 3 * root_bytes);
	assert_int_equal(atomic_load(&root->refs), 1);

	ls_hot_epoch_enter(f->ctx);
	for (uint64_t r = 0; r < 100; r++)
		insert(f, r, r);
	for (size_t i = 0; i < 3; i++)
		insert(f, far[i], far[i]);
	assert_int_equal(count_chunks(f, 1024), 4);
	full_bytes = tstats(f).bytes;
	assert_verify_exact(f);

	/* chunk 0 goes with its 32nd row, whichever way they leave */
	uint64_t	before_last = 0;

	for (uint64_t r = 0; r < 32; r++)
	{
		assert_non_null(hot_map_chunk_of(leaf_of(f, 0), 0));
		if (r == 31)
			before_last = tstats(f).bytes;
		take_out(f, r, r % 2 == 0);
	}
	assert_null(hot_map_chunk_of(leaf_of(f, 0), 0));
	assert_int_equal(count_chunks(f, 1024), 3);
	/* each row took the same bytes; the last one took the chunk's too */
	assert_int_equal(before_last - tstats(f).bytes,
					 (full_bytes - before_last) / 31 +
					 ls_hot_class_size[hot_class_for(sizeof(hot_map_chunk) + HOT_BLK_HDR)]);
	assert_verify_exact(f);

	/* chunk 1: a DEAD slot keeps it, a refused insert too, forget frees it */
	for (uint64_t r = 32; r < 64; r++)
	{
		if (r == 40)
		{
			ls_hot_row *row = ls_hot_row_get(f->tbl, r);

			ls_hot_row_lock(row);
			ls_hot_row_remove(f->ctx, f->tbl, row, true);
		}
		else
			take_out(f, r, false);
	}
	assert_non_null(hot_map_chunk_of(leaf_of(f, 32), 32));
	assert_true(ls_hot_rowid_is_dead(f->tbl, 40));
	assert_insert_refused(f, 40);
	assert_non_null(hot_map_chunk_of(leaf_of(f, 32), 32));
	assert_verify_exact(f);
	ls_hot_rowid_forget(f->ctx, f->tbl, 40);
	assert_null(hot_map_chunk_of(leaf_of(f, 32), 32));
	assert_false(ls_hot_rowid_is_dead(f->tbl, 40));
	assert_verify_exact(f);

	/* a rowid can come back: a fresh chunk, then it goes again */
	insert(f, 33, 33);
	assert_non_null(hot_map_chunk_of(leaf_of(f, 32), 32));
	assert_int_equal(version_tag(ls_hot_row_newest(ls_hot_row_get(f->tbl, 33))), 33);
	take_out(f, 33, true);
	assert_null(hot_map_chunk_of(leaf_of(f, 32), 32));

	/* the rest of leaf 0 (rowids 64..99 in chunks 2 and 3) */
	for (uint64_t r = 64; r < 100; r++)
		take_out(f, r, true);
	assert_int_equal(count_chunks(f, 1024), 0);
	/* leaf 0 is still there: leaf 4 (rowid 5000) shares its level-2 node */
	assert_int_equal(count_chunks(f, 5001), 1);
	assert_verify_exact(f);

	/* a hint on leaf 4; the leaf goes (its only row leaves) */
	assert_non_null(ls_hot_row_get_hinted(f->tbl, far[0], &hint));
	hot_map_node *old_leaf = hint.leaf;

	take_out(f, far[0], false);
	assert_null(leaf_of(f, far[0]));
	assert_null(leaf_of(f, 0));
	ls_hot_epoch_exit(f->ctx);
	(void) used_bytes(f);		/* the old leaf is free now */

	/* its block is reused (same class, LIFO cache) and zero-filled */
	ls_hot_version *v;
	uint32_t	len = ls_hot_class_size[hot_class_for(hot_map_node_size(HOT_MAP_LEVELS - 1) + HOT_BLK_HDR)] -
		HOT_BLK_HDR - (uint32_t) sizeof(ls_hot_version);

	assert_int_equal(ls_hot_version_alloc(f->ctx, len, &v), LS_OK);
	assert_ptr_equal(v, old_leaf);
	memset(v, 0, sizeof(*v) + len);

	/* a new leaf for the same range: the hint must not lead into v */
	ls_hot_epoch_enter(f->ctx);
	insert(f, far[0] + 1, 1);
	assert_non_null(ls_hot_row_get(f->tbl, far[0] + 1));
	assert_ptr_equal(ls_hot_row_get_hinted(f->tbl, far[0] + 1, &hint),
					 ls_hot_row_get(f->tbl, far[0] + 1));
	assert_ptr_not_equal(hint.leaf, v);
	take_out(f, far[0] + 1, false);
	ls_hot_version_free(f->ctx, v);

	/*
	 * The other subtrees' leaves go too; their inner nodes stay: the root,
	 * two level-1 nodes (rowids 0 and 2^30), three level-2 nodes (0, 2^20
	 * under the first, 2^30 under the second), none with a leaf.
	 */
	take_out(f, far[1], true);
	take_out(f, far[2], false);
	assert_int_equal(atomic_load(&root->refs), 2);
	for (uint32_t i = 0; i < HOT_MAP_FANOUT; i++)
	{
		hot_map_node *l1 = (hot_map_node *) atomic_load(&root->slot[i]);

		assert_true((l1 != NULL) == (i == 0 || i == 1));
		for (uint32_t j = 0; l1 != NULL && j < HOT_MAP_FANOUT; j++)
		{
			hot_map_node *l2 = (hot_map_node *) atomic_load(&l1->slot[j]);

			assert_true((l2 != NULL) == ((i == 0 && (j == 0 || j == 1)) || (i == 1 && j == 0)));
			for (uint32_t k = 0; l2 != NULL && k < HOT_MAP_FANOUT; k++)
				assert_int_equal(atomic_load(&l2->slot[k]), 0);
		}
	}
	assert_verify_exact(f);
	ls_hot_epoch_exit(f->ctx);
	assert_int_equal(tstats(f).rows, 0);
	assert_int_equal(tstats(f).bytes, 6 * root_bytes);
	assert_int_equal(used_bytes(f), 6 * root_bytes);
	assert_true(used_bytes(f) > empty_used);
	fixture_free(f);
}

/* ---- versions ------------------------------------------------------------- */

/* Tags of the chain newest first; returns the length. */
static int
chain(ls_hot_row *row, uint64_t *out, int max)
{
	int			n = 0;

	for (ls_hot_version *v = ls_hot_row_newest(row); v != NULL && n < max; v = ls_hot_version_older(v))
		out[n++] = version_tag(v);
	return n;
}

static void
test_versions(void **state)
{
	(void) state;
	fixture    *f = fixture_new(8u << 20, 4);
	uint64_t	tags[16];
	ls_hot_row *row;

	ls_hot_epoch_enter(f->ctx);
	row = insert(f, 5, 100);
	ls_hot_row_lock(row);
	assert_int_equal(ls_hot_row_uninstall_newest(f->ctx, f->tbl, row), LS_INVALID);
	for (uint64_t t = 101; t <= 104; t++)
		ls_hot_row_install(f->ctx, f->tbl, row, make_version(f, t));
	ls_hot_row_unlock(row);
	assert_int_equal(chain(row, tags, 16), 5);
	assert_int_equal(tags[0], 104);
	assert_int_equal(tags[4], 100);
	assert_int_equal(tstats(f).versions, 5);

	ls_hot_row_lock(row);
	assert_int_equal(ls_hot_row_uninstall_newest(f->ctx, f->tbl, row), LS_OK);
	ls_hot_row_unlock(row);
	assert_int_equal(chain(row, tags, 16), 4);
	assert_int_equal(tags[0], 103);
	assert_int_equal(tstats(f).versions, 4);

	/* truncate below the second version: 103 -> 102 remain */
	ls_hot_version *second = ls_hot_version_older(ls_hot_row_newest(row));

	ls_hot_row_lock(row);
	ls_hot_row_truncate(f->ctx, f->tbl, row, second);
	ls_hot_row_unlock(row);
	assert_int_equal(chain(row, tags, 16), 2);
	assert_int_equal(tags[1], 102);
	assert_int_equal(tstats(f).versions, 2);
	/* truncating at the oldest is a no-op */
	ls_hot_row_lock(row);
	ls_hot_row_truncate(f->ctx, f->tbl, row, second);
	ls_hot_row_unlock(row);
	assert_int_equal(chain(row, tags, 16), 2);

	ls_hot_table_stats ts = tstats(f);
	ls_hot_stats s;

	ls_hot_get_stats(f->hot, &s);
	assert_int_equal(s.rows, 1);
	assert_int_equal(s.versions, 2);
	assert_true(s.retired_pending >= 3);	/* we are still inside our epoch */
	assert_int_equal(ts.rows, 1);

	/* remove without mark_dead: slot NULL, insert allowed again */
	ls_hot_row_lock(row);
	ls_hot_row_remove(f->ctx, f->tbl, row, false);
	assert_true(ls_hot_row_is_removed(row));
	assert_null(ls_hot_row_get(f->tbl, 5));
	assert_false(ls_hot_rowid_is_dead(f->tbl, 5));
	assert_int_equal(tstats(f).rows, 0);
	assert_int_equal(tstats(f).versions, 0);
	row = insert(f, 5, 200);

	/* remove with mark_dead: DEAD until forgotten, refuses inserts */
	ls_hot_row_lock(row);
	ls_hot_row_remove(f->ctx, f->tbl, row, true);
	assert_true(ls_hot_rowid_is_dead(f->tbl, 5));
	assert_int_equal(tstats(f).dead_rowids, 1);
	ls_hot_version *v = make_version(f, 0);

	assert_int_equal(ls_hot_row_insert(f->ctx, f->tbl, 5, LS_ORIGIN_MIGRATED, v, NULL), LS_EXISTS);
	ls_hot_rowid_forget(f->ctx, f->tbl, 5);
	assert_int_equal(tstats(f).dead_rowids, 0);
	assert_int_equal(ls_hot_row_insert(f->ctx, f->tbl, 5, LS_ORIGIN_MIGRATED, v, &row), LS_OK);
	assert_int_equal(row->origin, LS_ORIGIN_MIGRATED);
	/* a latch waiter after removal sees the row as removed */
	ls_hot_row_lock(row);
	ls_hot_row_remove(f->ctx, f->tbl, row, false);
	ls_hot_row_lock(row);
	assert_true(ls_hot_row_is_removed(row));
	assert_int_equal(ls_hot_row_uninstall_newest(f->ctx, f->tbl, row), LS_NOT_FOUND);
	ls_hot_row_unlock(row);
	assert_true(ls_hot_row_trylock(row));
	assert_false(ls_hot_row_trylock(row));
	ls_hot_row_unlock(row);
	ls_hot_epoch_exit(f->ctx);

	ls_hot_reclaim(f->ctx);
	ls_hot_get_stats(f->hot, &s);
	assert_int_equal(s.retired_pending, 0);
	assert_int_equal(s.used_bytes, tstats(f).bytes);
	char		msg[256];

	ls_hot_epoch_enter(f->ctx);
	assert_int_equal(ls_hot_table_verify(f->tbl, true, msg, sizeof(msg)), LS_OK);
	ls_hot_epoch_exit(f->ctx);
	assert_int_equal(ls_hot_verify(f->hot, true, msg, sizeof(msg)), LS_OK);
	/* a counter that disagrees with the map is reported in exact mode */
	ls_hot_table_reserve_rowid(f->tbl, 1, 0, 0, 0);
	ls_hot_epoch_enter(f->ctx);
	row = insert(f, 77, 77);
	assert_int_equal(ls_hot_table_verify(f->tbl, true, msg, sizeof(msg)), LS_OK);
	ls_hot_row_lock(row);
	ls_hot_version *only = ls_hot_row_newest(row);

	atomic_store(&row->newest, NULL);	/* simulate a lost chain */
	assert_int_equal(ls_hot_table_verify(f->tbl, false, msg, sizeof(msg)), LS_OK);
	assert_int_equal(ls_hot_table_verify(f->tbl, true, msg, sizeof(msg)), LS_CORRUPT);
	assert_non_null(strstr(msg, "table counters"));
	atomic_store(&row->newest, only);
	ls_hot_row_unlock(row);
	ls_hot_epoch_exit(f->ctx);
	fixture_free(f);
}

/* ---- epochs ------------------------------------------------------------------ */

/*
 * A reader inside an epoch keeps a retired version's memory intact (not
 * reused by allocations) until it leaves; then the memory is reclaimed.
 */
static void
test_epoch_protects_reader(void **state)
{
	(void) state;
	fixture    *f = fixture_new(8u << 20, 4);
	ls_hot_ctx *reader;
	ls_hot_row *row;
	ls_hot_version *old;
	ls_hot_stats s;

	assert_int_equal(ls_hot_attach(f->hot, 3, &reader), LS_OK);
	row = insert(f, 9, 1);
	ls_hot_epoch_enter(f->ctx);
	ls_hot_row_lock(row);
	ls_hot_row_install(f->ctx, f->tbl, row, make_version(f, 2));
	ls_hot_row_unlock(row);
	ls_hot_epoch_exit(f->ctx);

	/* error recovery leaves all nesting levels at once */
	ls_hot_epoch_enter(reader);
	ls_hot_epoch_enter(reader);
	ls_hot_epoch_exit_all(reader);
	assert_false(ls_hot_in_epoch(reader));
	ls_hot_epoch_exit(reader);	/* unbalanced exit is harmless */
	assert_false(ls_hot_in_epoch(reader));

	ls_hot_epoch_enter(reader);
	ls_hot_epoch_enter(reader);	/* nested */
	ls_hot_epoch_exit(reader);
	assert_true(ls_hot_in_epoch(reader));
	old = ls_hot_version_older(ls_hot_row_get(f->tbl, 9)->newest);
	assert_int_equal(version_tag(old), 1);

	/* the writer cuts the old version off and hammers the allocator */
	ls_hot_epoch_enter(f->ctx);
	ls_hot_row_lock(row);
	ls_hot_row_truncate(f->ctx, f->tbl, row, ls_hot_row_newest(row));
	ls_hot_row_unlock(row);
	ls_hot_epoch_exit(f->ctx);
	for (int round = 0; round < 10; round++)
	{
		ls_hot_version *tmp[64];

		ls_hot_reclaim(f->ctx);
		for (int i = 0; i < 64; i++)
		{
			tmp[i] = make_version(f, 0xbad);
			assert_ptr_not_equal(tmp[i], old);
		}
		for (int i = 0; i < 64; i++)
			ls_hot_version_free(f->ctx, tmp[i]);
	}
	assert_int_equal(version_tag(old), 1);
	assert_int_equal(atomic_load(&old->xmin_word), 1);
	ls_hot_get_stats(f->hot, &s);
	assert_int_equal(s.retired_pending, 1);
	uint64_t	used_before = s.used_bytes;

	/* the reader leaves: the next reclaim frees the version */
	ls_hot_epoch_exit(reader);
	assert_false(ls_hot_in_epoch(reader));
	ls_hot_reclaim(f->ctx);
	ls_hot_get_stats(f->hot, &s);
	assert_int_equal(s.retired_pending, 0);
	assert_true(s.used_bytes < used_before);
	/* and it is reused by the next allocation of its class */
	ls_hot_version *again = make_version(f, 3);

	assert_ptr_equal(again, old);
	ls_hot_version_free(f->ctx, again);

	/* retirements of a detached context go to the orphan list and are
	 * reclaimed by others once nobody can see them */
	ls_hot_epoch_enter(f->ctx);
	row = ls_hot_row_get(f->tbl, 9);
	ls_hot_epoch_enter(reader);
	ls_hot_row_lock(row);
	ls_hot_row_remove(reader, f->tbl, row, false);
	ls_hot_detach(reader);
	/*
	 * row, version, and the map under the table's only row: its chunk and
	 * its leaf (the inner nodes above stay, as the root does)
	 */
	ls_hot_get_stats(f->hot, &s);
	assert_int_equal(s.retired_pending, 2 + 1 + 1);
	assert_non_null(atomic_load(&f->tbl->root->slot[0]));
	ls_hot_reclaim(f->ctx);		/* we are still inside: nothing goes */
	ls_hot_get_stats(f->hot, &s);
	assert_int_equal(s.retired_pending, 2 + 1 + 1);
	ls_hot_epoch_exit(f->ctx);
	ls_hot_reclaim(f->ctx);
	ls_hot_get_stats(f->hot, &s);
	assert_int_equal(s.retired_pending, 0);
	fixture_free(f);
}

/*
 * A context that retired a lot and then goes idle (still attached, never
 * entering again) does not strand that memory: it was handed to the shared
 * orphan list and another context reclaims it.
 */
static void
test_idle_context_hands_off(void **state)
{
	(void) state;
	fixture    *f = fixture_new(16u << 20, 4);
	ls_hot_ctx *writer,
			   *reader;
	ls_hot_stats s;

	assert_int_equal(ls_hot_attach(f->hot, 1, &writer), LS_OK);
	assert_int_equal(ls_hot_attach(f->hot, 2, &reader), LS_OK);
	ls_hot_epoch_enter(f->ctx);
	for (uint64_t r = 0; r < 1000; r++)
		insert(f, r, r);
	ls_hot_epoch_exit(f->ctx);

	ls_hot_epoch_enter(reader);
	ls_hot_epoch_enter(writer);
	for (uint64_t r = 0; r < 1000; r++)
	{
		ls_hot_row *row = ls_hot_row_get(f->tbl, r);

		ls_hot_row_lock(row);
		ls_hot_row_remove(writer, f->tbl, row, false);
	}
	ls_hot_epoch_exit(writer);	/* reclaim frees nothing: reader is inside */
	ls_hot_get_stats(f->hot, &s);
	/* rows, versions, 32 chunks and the leaf (the inner nodes stay) */
	assert_int_equal(s.retired_pending, 2000 + 1000 / HOT_CHUNK_SLOTS + 1 + 1);
	ls_hot_epoch_exit(reader);
	/* the writer never runs again; another context's reclaim frees it all */
	ls_hot_reclaim(f->ctx);
	ls_hot_get_stats(f->hot, &s);
	assert_int_equal(s.retired_pending, 0);
	assert_int_equal(s.retired_bytes, 0);
	assert_int_equal(s.used_bytes, tstats(f).bytes);
	ls_hot_detach(writer);
	ls_hot_detach(reader);
	fixture_free(f);
}

/*
 * Orphan lists handed off out of epoch order are merged by tag, so the older
 * one is reclaimed as soon as possible even though it arrived last.
 */
static void
test_orphans_merge_by_epoch(void **state)
{
	(void) state;
	fixture    *f = fixture_new(16u << 20, 4);
	ls_hot_ctx *a,
			   *b,
			   *r,
			   *d;
	ls_hot_stats s;

	assert_int_equal(ls_hot_attach(f->hot, 1, &a), LS_OK);
	assert_int_equal(ls_hot_attach(f->hot, 2, &b), LS_OK);
	assert_int_equal(ls_hot_attach(f->hot, 3, &r), LS_OK);
	assert_int_equal(ls_hot_attach(f->hot, 4, &d), LS_OK);
	for (uint64_t rid = 0; rid < 300; rid++)
		insert(f, rid, rid);

	/* b retires 300 objects at epoch g1 while r pins g1 */
	ls_hot_epoch_enter(r);
	ls_hot_epoch_enter(b);
	for (uint64_t rid = 0; rid < 150; rid++)
	{
		ls_hot_row *row = ls_hot_row_get(f->tbl, rid);

		ls_hot_row_lock(row);
		ls_hot_row_remove(b, f->tbl, row, false);
	}
	uint64_t	g1;

	ls_hot_get_stats(f->hot, &s);
	g1 = s.epoch;
	ls_hot_reclaim(f->ctx);		/* everyone inside is at g1: advance */
	ls_hot_get_stats(f->hot, &s);
	assert_int_equal(s.epoch, g1 + 1);

	/* a retires 300 objects at g1 + 1 and hands them off first */
	ls_hot_epoch_enter(a);
	for (uint64_t rid = 150; rid < 300; rid++)
	{
		ls_hot_row *row = ls_hot_row_get(f->tbl, rid);

		ls_hot_row_lock(row);
		ls_hot_row_remove(a, f->tbl, row, false);
	}
	ls_hot_epoch_exit(a);
	ls_hot_epoch_exit(b);		/* the older list arrives second */
	ls_hot_epoch_exit(r);

	/*
	 * and the chunks they emptied: b the 4 below rowid 128, a the other 6
	 * below 300, then (the map being empty) the leaf; the inner nodes stay
	 */
	uint64_t	b_chunks = 150 / HOT_CHUNK_SLOTS;
	uint64_t	a_chunks = (300 + HOT_CHUNK_SLOTS - 1) / HOT_CHUNK_SLOTS - b_chunks + 1;

	ls_hot_get_stats(f->hot, &s);
	assert_int_equal(s.retired_pending, 600 + b_chunks + a_chunks);

	/* d pins g1 + 1: only b's objects (tag g1) may go, and they do */
	ls_hot_epoch_enter(d);
	ls_hot_reclaim(f->ctx);
	ls_hot_get_stats(f->hot, &s);
	assert_int_equal(s.retired_pending, 300 + a_chunks);
	ls_hot_epoch_exit(d);
	ls_hot_reclaim(f->ctx);
	ls_hot_get_stats(f->hot, &s);
	assert_int_equal(s.retired_pending, 0);
	ls_hot_detach(a);
	ls_hot_detach(b);
	ls_hot_detach(r);
	ls_hot_detach(d);
	fixture_free(f);
}

/* An allocation that finds the tier full reclaims retired memory first. */
static void
test_alloc_reclaims_when_full(void **state)
{
	(void) state;
	fixture    *f = fixture_new(2u << 20, 4);
	ls_hot_ctx *reader;
	uint64_t	rowid = 0;
	ls_hot_version *v;
	ls_status	st;

	assert_int_equal(ls_hot_attach(f->hot, 2, &reader), LS_OK);
	ls_hot_epoch_enter(f->ctx);
	for (;;)
	{
		st = ls_hot_version_alloc(f->ctx, 500, &v);
		if (st != LS_OK)
			break;
		ls_hot_row *row;

		st = ls_hot_row_insert(f->ctx, f->tbl, rowid, LS_ORIGIN_INSERTED, v, &row);
		if (st != LS_OK)
		{
			ls_hot_version_free(f->ctx, v);
			break;
		}
		rowid++;
	}
	assert_int_equal(st, LS_NO_SPACE);
	ls_hot_epoch_exit(f->ctx);
	assert_true(rowid > 100);

	/* delete all rows while a reader pins the epoch: still full */
	ls_hot_epoch_enter(reader);
	ls_hot_epoch_enter(f->ctx);
	for (uint64_t r = 0; r < rowid; r++)
	{
		ls_hot_row *row = ls_hot_row_get(f->tbl, r);

		ls_hot_row_lock(row);
		ls_hot_row_remove(f->ctx, f->tbl, row, false);
	}
	ls_hot_epoch_exit(f->ctx);
	assert_int_equal(ls_hot_version_alloc(f->ctx, 20000, &v), LS_NO_SPACE);
	ls_hot_table_stats ts = tstats(f);

	assert_int_equal(ts.rows, 0);
	/* reader leaves: the same allocation now succeeds */
	ls_hot_epoch_exit(reader);
	assert_int_equal(ls_hot_version_alloc(f->ctx, 20000, &v), LS_OK);
	ls_hot_version_free(f->ctx, v);
	ls_hot_detach(reader);
	fixture_free(f);
}

/* Dropping a table retires rows, versions and map nodes; a reader that
 * still holds a row of it can finish reading. */
static void
test_drop_table(void **state)
{
	(void) state;
	fixture    *f = fixture_new(16u << 20, 4);
	ls_hot_ctx *reader;
	ls_hot_stats s;
	ls_hot_row *held;

	assert_int_equal(ls_hot_attach(f->hot, 1, &reader), LS_OK);
	ls_hot_epoch_enter(f->ctx);
	for (uint64_t r = 0; r < 5000; r += 1 + r % 7)
	{
		ls_hot_row *row = insert(f, r * 37, r * 37);

		ls_hot_row_lock(row);
		ls_hot_row_install(f->ctx, f->tbl, row, make_version(f, r * 37));
		if (r % 3 == 0)
			ls_hot_row_remove(f->ctx, f->tbl, row, true);
		else
			ls_hot_row_unlock(row);
	}
	ls_hot_epoch_exit(f->ctx);
	ls_hot_get_stats(f->hot, &s);
	assert_int_equal(s.used_bytes, tstats(f).bytes + s.retired_bytes);
	assert_true(tstats(f).dead_rowids > 0);

	ls_hot_epoch_enter(reader);
	held = ls_hot_row_get(f->tbl, 37);
	assert_non_null(held);
	ls_hot_version *hv = ls_hot_row_newest(held);

	ls_hot_table_drop(f->ctx, f->tbl);
	ls_hot_table_stats ts = tstats(f);

	assert_int_equal(ts.rows, 0);
	assert_int_equal(ts.versions, 0);
	assert_int_equal(ts.bytes, 0);
	assert_int_equal(ts.dead_rowids, 0);
	ls_hot_reclaim(f->ctx);
	assert_int_equal(version_tag(hv), 37);
	assert_int_equal(version_tag(ls_hot_version_older(hv)), 37);
	ls_hot_epoch_exit(reader);
	f->tbl = NULL;
	ls_hot_detach(reader);
	fixture_free(f);			/* checks used == 0 and free == heap */
}

/*
 * Inner nodes stay when their range empties, so a write into the range
 * again needs no block of their 8kB class.  A fragmented tier cannot give
 * one: every page holds a live block of some smaller class, most bytes are
 * free, no page is.  (YCSB at 8x memory: an UPDATE failed with "hot tier
 * is full" while 2 of the tier's 32MB were in use.)  Here the blocks an
 * insert needs (row, version, leaf, chunk) fill the tier, then inner-node
 * blocks fill what their class's pages had left; those and one other
 * block per page stay, and the emptied range takes a row again.
 */
static void
test_ridmap_refill_fragmented(void **state)
{
	(void) state;
	fixture    *f = fixture_new(4u << 20, 4);
	uint64_t	far = (UINT64_C(1) << 20) + 7;	/* a second level-2 range */
	size_t		sizes[] = {sizeof(ls_hot_row), sizeof(ls_hot_version) + sizeof(uint64_t),
	hot_map_node_size(HOT_MAP_LEVELS - 1), sizeof(hot_map_chunk)};
	size_t		cap = (4u << 20) / 32,
				n = 0,
				nsmall;
	void	  **objs = calloc(cap, sizeof(void *));
	bool	   *page_kept = calloc(f->hot->npages, sizeof(bool));
	void	   *big;
	ls_hot_stats s;

	assert_non_null(objs);
	assert_non_null(page_kept);
	ls_hot_epoch_enter(f->ctx);
	insert(f, 1, 1);
	insert(f, far, 2);
	take_out(f, far, false);	/* its leaf and chunk go, its level-2 node stays */
	ls_hot_epoch_exit(f->ctx);
	(void) used_bytes(f);

	/* fill the tier with those blocks, round robin, until nothing fits */
	for (int misses = 0; misses < 4 && n < cap;)
	{
		if (hot_alloc(f->ctx, sizes[n % 4], &objs[n]) == LS_OK)
		{
			n++;
			misses = 0;
		}
		else
		{
			objs[n] = NULL;
			n++;
			misses++;
		}
	}
	nsmall = n;
	while (n < cap && hot_alloc(f->ctx, hot_map_node_size(1), &objs[n]) == LS_OK)
		n++;
	/* keep the inner-node blocks and the first other block of each page */
	for (size_t i = 0; i < nsmall; i++)
	{
		uint32_t	page;

		if (objs[i] == NULL)
			continue;
		page = (uint32_t) (((uint8_t *) objs[i] - f->hot->heap) >> HOT_PAGE_SHIFT);
		if (!page_kept[page])
			page_kept[page] = true;
		else
		{
			hot_free(f->ctx, objs[i]);
			objs[i] = NULL;
		}
	}
	hot_cache_flush_all(f->ctx);
	ls_hot_get_stats(f->hot, &s);
	assert_true(s.free_bytes > s.heap_bytes / 2);

	/*
	 * Most bytes free, yet no page for a block of the inner nodes' class;
	 * blocks of larger classes are lent to it (alloc_borrow), so those go
	 * too before the next request fails.
	 */
	while (n < cap && hot_alloc(f->ctx, hot_map_node_size(1), &objs[n]) == LS_OK)
		n++;
	assert_int_equal(hot_alloc(f->ctx, hot_map_node_size(1), &big), LS_NO_SPACE);
	ls_hot_get_stats(f->hot, &s);
	assert_true(s.free_bytes > s.heap_bytes / 4);

	/* the range takes a row again (its level-2 node is still there) */
	ls_hot_epoch_enter(f->ctx);
	insert(f, far + 1, 3);
	assert_int_equal(version_tag(ls_hot_row_newest(ls_hot_row_get(f->tbl, far + 1))), 3);
	assert_verify_exact(f);
	ls_hot_epoch_exit(f->ctx);

	for (size_t i = 0; i < n; i++)
		if (objs[i] != NULL)
			hot_free(f->ctx, objs[i]);
	free(objs);
	free(page_kept);
	fixture_free(f);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tables),
		cmocka_unit_test(test_reclaim_bound_after_scan),
		cmocka_unit_test(test_allvis_flags),
		cmocka_unit_test(test_logged_marks),
		cmocka_unit_test(test_ridmap_model),
		cmocka_unit_test(test_ridmap_edges),
		cmocka_unit_test(test_ridmap_hint),
		cmocka_unit_test(test_row_refs),
		cmocka_unit_test(test_ridmap_sparse_blocks),
		cmocka_unit_test(test_ridmap_occupancy_steps),
		cmocka_unit_test(test_ridmap_frees_empty_chunks),
		cmocka_unit_test(test_ridmap_refill_fragmented),
		cmocka_unit_test(test_versions),
		cmocka_unit_test(test_epoch_protects_reader),
		cmocka_unit_test(test_idle_context_hands_off),
		cmocka_unit_test(test_orphans_merge_by_epoch),
		cmocka_unit_test(test_alloc_reclaims_when_full),
		cmocka_unit_test(test_drop_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
