/*
 * test_btree_file.c - B+-trees whose pages live in files of their own, as
 * the cold tier keeps them in PostgreSQL relation files: a tree written
 * out, its pool thrown away and the tree opened again from its file in a
 * new pool (with a tiny pool, so reading it back needs many loads and
 * evictions); files split into segments; the caller's page checksum
 * (PostgreSQL's pd_checksum) written and checked; the page header as
 * PostgreSQL's tools read it; blocks read and written outside the pool;
 * dropping a tree frees its frames without writing them; blocks freed by
 * merges reused in the same run and, found by ls_btree_reclaim, after the
 * tree is opened again.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "leanstore/btree.h"
#include "tu.h"
#include "tu_files.h"

/* A stand-in for PostgreSQL's page checksum: mixes every byte and the block. */
static uint16_t
fake_pg_checksum(void *arg, const ls_page *page, uint32_t block)
{
	const uint8_t *b = (const uint8_t *) page;
	uint32_t	h = 2166136261u ^ block;

	(void) arg;
	for (size_t i = 0; i < LS_PAGE_SIZE; i++)
	{
		/* the field itself counts as zero, as in PostgreSQL */
		uint8_t		c = (i == offsetof(ls_page_header, pg_checksum) ||
						 i == offsetof(ls_page_header, pg_checksum) + 1) ? 0 : b[i];

		h = (h ^ c) * 16777619u;
	}
	return (uint16_t) (h ^ (h >> 16)) | 1;
}

static void
env_open(tu_fenv *e, const char *dir, uint64_t frames)
{
	ls_bm_config cfg = {.page_checksum = fake_pg_checksum, .free_target_pct = 10};

	assert_int_equal(tu_fenv_open(e, dir, frames, cfg), LS_OK);
}

static void
put_rows(ls_btree *t, uint64_t from, uint64_t to)
{
	uint8_t		key[8];
	uint8_t		val[100];

	for (uint64_t k = from; k < to; k++)
	{
		ls_put_be64(key, k);
		memset(val, (int) (k & 0xff), sizeof(val));
		memcpy(val, &k, 8);
		assert_int_equal(ls_btree_append(t, key, 8, val, sizeof(val)), LS_OK);
	}
}

static void
check_rows(ls_btree *t, uint64_t n)
{
	uint8_t		key[8];
	uint8_t		val[100];
	uint32_t	vlen;
	ls_btree_info info;
	char		msg[256];

	for (uint64_t k = 0; k < n; k++)
	{
		uint64_t	got;

		ls_put_be64(key, k);
		assert_int_equal(ls_btree_lookup(t, key, 8, val, sizeof(val), &vlen), LS_OK);
		assert_int_equal(vlen, sizeof(val));
		memcpy(&got, val, 8);
		assert_int_equal(got, k);
		assert_int_equal(val[99], k & 0xff);
	}
	assert_int_equal(ls_btree_verify(t, &info, msg, sizeof(msg)), LS_OK);
	assert_int_equal(info.entries, n);
}

static void
test_tree_survives_its_pool(void **state)
{
	(void) state;
	char	   *dir = tu_tempdir();
	ls_bm_file	file = {.key = {42, 1, 0, 0}};
	const uint64_t n = 20000;
	tu_fenv		e;
	uint32_t	root,
				height,
				blocks;
	ls_bm_stats s;
	char		path[512];
	struct stat st;

	assert_true(tu_file_create(dir, 42));
	/* block 0 is the caller's (a meta page): the tree starts at block 1 */
	env_open(&e, dir, 64);
	assert_int_equal(ls_btree_create_in_file(e.bm, e.tree, &file, 1), LS_OK);
	put_rows(e.tree, 0, n);
	assert_int_equal(ls_bm_flush_all(e.bm), LS_OK);
	assert_int_equal(ls_bm_sync_dt(e.bm, e.tree->dt_id), LS_OK);
	assert_int_equal(ls_btree_root(e.tree, &root, &height), LS_OK);
	assert_true(height >= 2);
	blocks = ls_bm_dt_blocks(e.bm, e.tree->dt_id);
	assert_true(blocks > 4 * TU_SEG_BLOCKS);
	tu_fenv_close(&e);

	/* the file is segmented and every segment but the last is full */
	snprintf(path, sizeof(path), "%s/rel42.1", dir);
	assert_int_equal(stat(path, &st), 0);
	snprintf(path, sizeof(path), "%s/rel42", dir);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, (off_t) TU_SEG_BLOCKS * LS_PAGE_SIZE);

	/* a new pool, 8 frames: the tree is read back through misses */
	env_open(&e, dir, 8);
	assert_int_equal(ls_btree_open(e.bm, e.tree, &file, blocks, root, height), LS_OK);
	check_rows(e.tree, n);
	/* and it keeps growing where it stopped, in new blocks */
	put_rows(e.tree, n, n + 2000);
	check_rows(e.tree, n + 2000);
	assert_true(ls_bm_dt_blocks(e.bm, e.tree->dt_id) > blocks);
	ls_bm_get_stats(e.bm, &s);
	assert_true(s.reads > 0);
	assert_true(s.evictions > 0);
	/* bad roots are refused */
	{
		ls_btree	t2;

		assert_int_equal(ls_btree_open(e.bm, &t2, &file, blocks, blocks, 1), LS_CORRUPT);
		assert_int_equal(ls_btree_open(e.bm, &t2, &file, blocks, root, 0), LS_CORRUPT);
	}
	ls_btree_drop(e.tree);
	ls_bm_get_stats(e.bm, &s);
	assert_int_equal(s.free_frames, s.n_frames);
	tu_fenv_close(&e);
	tu_rm_rf(dir);
	free(dir);
}

static void
remove_rows(ls_btree *t, uint64_t from, uint64_t to)
{
	uint8_t		key[8];

	for (uint64_t k = from; k < to; k++)
	{
		ls_put_be64(key, k);
		assert_int_equal(ls_btree_remove(t, key, 8), LS_OK);
	}
}

/* Scan callback: counts entries in order, stops after `stop` (0: never). */
typedef struct scan_count
{
	uint64_t	next;			/* the key expected next */
	uint64_t	seen;			/* in this call */
	uint64_t	stop;
	bool		ordered;
} scan_count;

static bool
count_cb(void *arg, const uint8_t *key, uint32_t klen, const uint8_t *val, uint32_t vlen)
{
	scan_count *c = arg;

	(void) val;
	(void) vlen;
	if (klen != 8 || ls_get_be64(key) != c->next)
		c->ordered = false;
	c->next++;
	c->seen++;
	return c->stop == 0 || c->seen < c->stop;
}

/* Look up keys [0, n); returns the pool misses it took. */
static uint64_t
lookup_misses(tu_fenv *e, uint64_t n)
{
	ls_bm_stats s0,
				s1;
	uint8_t		key[8];
	uint8_t		val[100];
	uint32_t	vlen;

	ls_bm_get_stats(e->bm, &s0);
	for (uint64_t k = 0; k < n; k++)
	{
		ls_put_be64(key, k);
		assert_int_equal(ls_btree_lookup(e->tree, key, 8, val, sizeof(val), &vlen), LS_OK);
	}
	ls_bm_get_stats(e->bm, &s1);
	return s1.misses - s0.misses;
}

/*
 * A scan that reads the tree once (ls_btree_scan_asc_once, in batches that
 * carry the leaf they stopped in) gives the leaves it loaded back as it
 * passes them: pages that were hot before it are still in the pool after
 * it, where a plain scan of a tree more than eight times the pool pushes them out.
 */
static void
test_scan_once(void **state)
{
	(void) state;
	char	   *dir = tu_tempdir();
	ls_bm_file	file = {.key = {43, 1, 0, 0}};
	const uint64_t n = 40000;
	const uint64_t warm = 300;	/* a few leaves */
	tu_fenv		e;
	uint32_t	root,
				height,
				blocks;
	ls_btree_scan_carry carry = {0};
	scan_count	c = {.ordered = true};
	uint8_t		start[8];

	assert_true(tu_file_create(dir, 43));
	env_open(&e, dir, 32);
	assert_int_equal(ls_btree_create_in_file(e.bm, e.tree, &file, 1), LS_OK);
	put_rows(e.tree, 0, n);
	assert_int_equal(ls_bm_flush_all(e.bm), LS_OK);
	assert_int_equal(ls_btree_root(e.tree, &root, &height), LS_OK);
	blocks = ls_bm_dt_blocks(e.bm, e.tree->dt_id);
	assert_true(blocks > 8 * 32);
	tu_fenv_close(&e);

	env_open(&e, dir, 32);
	assert_int_equal(ls_btree_open(e.bm, e.tree, &file, blocks, root, height), LS_OK);
	(void) lookup_misses(&e, warm);
	assert_int_equal(lookup_misses(&e, warm), 0);

	/* the whole tree once, in batches of 1000 entries */
	c.stop = 1000;
	while (c.next < n)
	{
		c.seen = 0;
		ls_put_be64(start, c.next);
		assert_int_equal(ls_btree_scan_asc_once(e.tree, start, 8, count_cb, &c, &carry), LS_OK);
		assert_true(c.seen > 0);
	}
	assert_true(c.ordered);
	assert_int_equal(c.next, n);
	assert_int_equal(lookup_misses(&e, warm), 0);

	/* a plain scan does push them out (what the test would miss) */
	c = (scan_count) {.ordered = true};
	assert_int_equal(ls_btree_scan_asc(e.tree, NULL, 0, count_cb, &c), LS_OK);
	assert_int_equal(c.next, n);
	assert_true(c.ordered);
	assert_true(lookup_misses(&e, warm) > 0);

	ls_btree_drop(e.tree);
	tu_fenv_close(&e);
	tu_rm_rf(dir);
	free(dir);
}

/*
 * Blocks freed by merges are reused, far more than one chunk of them, and
 * a reopened tree finds its unused blocks again (its pool remembered
 * nothing); a walk over a damaged child reference reclaims nothing.
 */
static void
test_free_blocks_reused(void **state)
{
	(void) state;
	char	   *dir = tu_tempdir();
	ls_bm_file	file = {.key = {43, 1, 0, 0}};
	const uint64_t n = 20000;
	tu_fenv		e;
	uint32_t	root,
				height,
				blocks,
				freed,
				reclaimed;

	assert_true(tu_file_create(dir, 43));
	env_open(&e, dir, 64);
	assert_int_equal(ls_btree_create_in_file(e.bm, e.tree, &file, 1), LS_OK);
	put_rows(e.tree, 0, n);
	blocks = ls_bm_dt_blocks(e.bm, e.tree->dt_id);
	/* remove 90%: the emptied leaves merge away, their blocks are kept */
	remove_rows(e.tree, 0, n * 9 / 10);
	freed = ls_bm_dt_free_blocks(e.bm, e.tree->dt_id);
	assert_true(freed > blocks / 2);
	assert_true(freed > 200);	/* several chunks */
	/* new rows take freed blocks: the file does not grow */
	put_rows(e.tree, n, n + n / 2);
	assert_int_equal(ls_bm_dt_blocks(e.bm, e.tree->dt_id), blocks);
	assert_true(ls_bm_dt_free_blocks(e.bm, e.tree->dt_id) < freed);
	/* remove them again, write the tree out, open it in a new pool */
	remove_rows(e.tree, n, n + n / 2);
	freed = ls_bm_dt_free_blocks(e.bm, e.tree->dt_id);
	assert_int_equal(ls_bm_flush_all(e.bm), LS_OK);
	assert_int_equal(ls_bm_sync_dt(e.bm, e.tree->dt_id), LS_OK);
	assert_int_equal(ls_btree_root(e.tree, &root, &height), LS_OK);
	tu_fenv_close(&e);

	env_open(&e, dir, 16);
	assert_int_equal(ls_btree_open(e.bm, e.tree, &file, blocks, root, height), LS_OK);
	assert_int_equal(ls_bm_dt_free_blocks(e.bm, e.tree->dt_id), 0);
	assert_int_equal(ls_btree_reclaim(e.tree, 1, &reclaimed), LS_OK);
	/* every block the run had freed, block 0 (the caller's) not */
	assert_int_equal(reclaimed, freed);
	assert_int_equal(ls_bm_dt_free_blocks(e.bm, e.tree->dt_id), freed);
	{
		ls_bm_stats s;

		ls_bm_get_stats(e.bm, &s);
		assert_int_equal(s.allocated_pages, blocks - freed);
	}
	put_rows(e.tree, n, n + n / 2);
	assert_int_equal(ls_bm_dt_blocks(e.bm, e.tree->dt_id), blocks);
	{
		ls_btree_info info;
		char		msg[256];

		assert_int_equal(ls_btree_verify(e.tree, &info, msg, sizeof(msg)), LS_OK);
		assert_int_equal(info.entries, n / 10 + n / 2);
		assert_int_equal(info.leaves + info.inner, blocks - 1 - ls_bm_dt_free_blocks(e.bm, e.tree->dt_id));
	}
	ls_btree_drop(e.tree);
	tu_fenv_close(&e);

	/* a file shorter than the tree claims: a child points past its end */
	env_open(&e, dir, 16);
	assert_int_equal(ls_btree_open(e.bm, e.tree, &file, root + 1, root, height), LS_OK);
	assert_int_equal(ls_btree_reclaim(e.tree, 1, &reclaimed), LS_CORRUPT);
	assert_int_equal(reclaimed, 0);
	assert_int_equal(ls_bm_dt_free_blocks(e.bm, e.tree->dt_id), 0);
	ls_btree_drop(e.tree);
	tu_fenv_close(&e);
	tu_rm_rf(dir);
	free(dir);
}

/*
 * A page written into a later segment first makes every segment before it
 * whole, as PostgreSQL's md.c expects of a segmented file (it takes a
 * short segment for the end and refuses to open the next one: ANALYZE's
 * prefetch of the main fork failed on a short segment 0).
 */
static void
test_segments_whole(void **state)
{
	(void) state;
	char	   *dir = tu_tempdir();
	ls_bm_file	file = {.key = {9, 1, 0, 0}};
	tu_fenv		e;
	ls_page    *pg = aligned_alloc(4096, LS_PAGE_SIZE);
	uint32_t	dt;
	char		path[512];
	struct stat st;

	assert_true(tu_file_create(dir, 9));
	env_open(&e, dir, 8);
	assert_int_equal(ls_bm_register_file(e.bm, 3, NULL, &file, 1, &dt), LS_OK);
	memset(pg, 0, LS_PAGE_SIZE);
	pg->hdr.dt_type = 3;
	assert_int_equal(ls_bm_write_block(e.bm, dt, 0, pg, false), LS_OK);
	/* block 3 of segment 2, with segment 0 one page long and no segment 1 */
	assert_int_equal(ls_bm_write_block(e.bm, dt, 2 * TU_SEG_BLOCKS + 3, pg, true), LS_OK);
	snprintf(path, sizeof(path), "%s/rel9", dir);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, (off_t) TU_SEG_BLOCKS * LS_PAGE_SIZE);
	snprintf(path, sizeof(path), "%s/rel9.1", dir);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, (off_t) TU_SEG_BLOCKS * LS_PAGE_SIZE);
	snprintf(path, sizeof(path), "%s/rel9.2", dir);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, (off_t) 4 * LS_PAGE_SIZE);
	/* the pages between read as never written */
	assert_int_equal(ls_bm_read_block(e.bm, dt, TU_SEG_BLOCKS + 5, pg), LS_NOT_FOUND);
	assert_int_equal(ls_bm_read_block(e.bm, dt, 2 * TU_SEG_BLOCKS + 3, pg), LS_OK);
	tu_fenv_close(&e);
	free(pg);
	tu_rm_rf(dir);
	free(dir);
}

static void
test_page_header_and_checksums(void **state)
{
	(void) state;
	char	   *dir = tu_tempdir();
	ls_bm_file	file = {.key = {7, 1, 0, 0}};
	tu_fenv		e;
	ls_page    *pg = aligned_alloc(4096, LS_PAGE_SIZE);
	ls_page    *raw = aligned_alloc(4096, LS_PAGE_SIZE);
	uint32_t	dt;
	char		path[512];
	int			fd;

	assert_true(tu_file_create(dir, 7));
	env_open(&e, dir, 8);
	assert_int_equal(ls_bm_register_file(e.bm, 3, NULL, &file, 2, &dt), LS_OK);

	/* blocks never written and blocks past the end read as "not found" */
	assert_int_equal(ls_bm_read_block(e.bm, dt, 0, pg), LS_NOT_FOUND);
	assert_int_equal(ls_bm_read_block(e.bm, dt, 1000, pg), LS_NOT_FOUND);

	memset(pg, 0, LS_PAGE_SIZE);
	pg->hdr.dt_type = 3;
	ls_page_set_gsn(&pg->hdr, UINT64_C(0x0000000100000002));
	memcpy(pg->data, "meta page", 10);
	assert_int_equal(ls_bm_write_block(e.bm, dt, 1, pg, true), LS_OK);

	/* on disk: PostgreSQL's page header as its tools read it */
	snprintf(path, sizeof(path), "%s/rel7", dir);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, raw, LS_PAGE_SIZE, LS_PAGE_SIZE), LS_PAGE_SIZE);
	{
		const uint8_t *b = (const uint8_t *) raw;
		uint32_t	xlogid,
					xrecoff;
		uint16_t	lower,
					upper,
					special,
					psv,
					csum;

		memcpy(&xlogid, b + 0, 4);
		memcpy(&xrecoff, b + 4, 4);
		memcpy(&csum, b + 8, 2);
		memcpy(&lower, b + 12, 2);
		memcpy(&upper, b + 14, 2);
		memcpy(&special, b + 16, 2);
		memcpy(&psv, b + 18, 2);
		assert_int_equal(xlogid, 1);	/* pd_lsn = GSN, high word first */
		assert_int_equal(xrecoff, 2);
		assert_int_not_equal(upper, 0);	/* not a "new" page */
		assert_true(lower <= upper && upper <= special && special <= LS_PAGE_SIZE);
		assert_int_equal(special % 8, 0);
		assert_int_equal(psv, LS_PAGE_SIZE | 4);
		assert_int_equal(csum, fake_pg_checksum(NULL, raw, 1));
		/* the on-disk self check names the block, not the run's page id */
		assert_int_equal(raw->hdr.pid, 1);
	}
	assert_int_equal(ls_bm_read_block(e.bm, dt, 1, pg), LS_OK);
	assert_memory_equal(pg->data, "meta page", 10);
	assert_int_equal(pg->hdr.pid, ls_pid_make(dt, 1));

	/* the same image at another block fails PostgreSQL's checksum */
	assert_int_equal(pwrite(fd, raw, LS_PAGE_SIZE, 0), LS_PAGE_SIZE);
	assert_int_equal(ls_bm_read_block(e.bm, dt, 0, pg), LS_CHECKSUM);
	/* one flipped payload byte fails it too */
	raw->data[100] ^= 1;
	assert_int_equal(pwrite(fd, raw, LS_PAGE_SIZE, LS_PAGE_SIZE), LS_PAGE_SIZE);
	assert_int_equal(ls_bm_read_block(e.bm, dt, 1, pg), LS_CHECKSUM);
	close(fd);
	ls_bm_unregister_dt(e.bm, dt);
	tu_fenv_close(&e);
	free(pg);
	free(raw);
	tu_rm_rf(dir);
	free(dir);
}

/* Dropping a tree: dirty frames are freed without a write, the file stays. */
static void
test_drop_writes_nothing(void **state)
{
	(void) state;
	char	   *dir = tu_tempdir();
	ls_bm_file	file = {.key = {9, 1, 0, 0}};
	tu_fenv		e;
	ls_bm_stats s0,
				s1;
	char		path[512];
	struct stat st;

	assert_true(tu_file_create(dir, 9));
	env_open(&e, dir, 256);
	assert_int_equal(ls_btree_create_in_file(e.bm, e.tree, &file, 1), LS_OK);
	put_rows(e.tree, 0, 3000);
	ls_bm_get_stats(e.bm, &s0);
	assert_true(s0.free_frames < s0.n_frames);
	ls_btree_drop(e.tree);
	ls_bm_get_stats(e.bm, &s1);
	assert_int_equal(s1.writes, s0.writes);
	assert_int_equal(s1.free_frames, s1.n_frames);
	assert_int_equal(s1.allocated_pages, 0);
	/*
	 * Nothing was written: the first segment holds no page.  (It may be
	 * whole: reserving disk space for a block of the second segment made
	 * the first one whole, as md.c wants; its size says nothing here.)
	 */
	assert_int_equal(s0.writes, 0);
	snprintf(path, sizeof(path), "%s/rel9", dir);
	assert_int_equal(stat(path, &st), 0);
	{
		FILE	   *f = fopen(path, "rb");
		int			c;

		assert_non_null(f);
		while ((c = fgetc(f)) != EOF)
			assert_int_equal(c, 0);
		fclose(f);
	}
	tu_fenv_close(&e);
	tu_rm_rf(dir);
	free(dir);
}

/* A file that is gone (the path callback says so): writes fail cleanly. */
static void
test_gone_file(void **state)
{
	(void) state;
	char	   *dir = tu_tempdir();
	ls_bm_file	file = {.key = {11, TU_FILE_DROPPED, 0, 0}};
	tu_fenv		e;
	ls_page    *pg = aligned_alloc(4096, LS_PAGE_SIZE);
	uint32_t	dt;

	env_open(&e, dir, 8);
	assert_int_equal(ls_bm_register_file(e.bm, 3, NULL, &file, 1, &dt), LS_OK);
	memset(pg, 0, LS_PAGE_SIZE);
	pg->hdr.dt_type = 3;
	assert_int_equal(ls_bm_write_block(e.bm, dt, 0, pg, false), LS_NOT_FOUND);
	assert_int_equal(ls_bm_read_block(e.bm, dt, 0, pg), LS_NOT_FOUND);
	ls_bm_unregister_dt(e.bm, dt);
	tu_fenv_close(&e);
	free(pg);
	tu_rm_rf(dir);
	free(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tree_survives_its_pool),
		cmocka_unit_test(test_free_blocks_reused),
		cmocka_unit_test(test_page_header_and_checksums),
		cmocka_unit_test(test_segments_whole),
		cmocka_unit_test(test_drop_writes_nothing),
		cmocka_unit_test(test_gone_file),
		cmocka_unit_test(test_scan_once),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
