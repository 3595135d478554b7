/*
 * test_buffer_undo.c - the undo journal (ls_bm_protect_dt, ls_bm_undo_image,
 * ls_bm_undo_apply): a B+-tree in a file of its own is written and flushed
 * (a clean image, its file copied as the expected bytes), protected, then
 * changed a lot with a tiny pool so that write-back and eviction overwrite
 * its blocks in place; the pool is dropped without flushing (a crash), and
 * the journal must bring back the image byte for byte in every block the
 * image used, with exactly the image's keys.  Also: a torn journal tail,
 * a journal of another image, the meta page written by ls_bm_write_block,
 * several processes writing back the same protected tree, a journal that
 * cannot be written (the page is then not written either), and no journal
 * traffic without protection.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "leanstore/btree.h"
#include "tu.h"
#include "tu_files.h"

#define META_TYPE	5			/* dt_type written in the meta page */

static void
env_open(tu_fenv *e, const char *dir, uint64_t frames)
{
	ls_bm_config cfg = {.free_target_pct = 10, .write_batch = 8};

	assert_int_equal(tu_fenv_open(e, dir, frames, cfg), LS_OK);
}

/* Raw bytes of a block as the file holds them (zeros past the end). */
static void
raw_block(const char *dir, uint32_t rel, uint32_t block, void *buf)
{
	char		path[512];
	uint32_t	seg = block / TU_SEG_BLOCKS;
	ssize_t		r = 0;
	int			fd;

	memset(buf, 0, LS_PAGE_SIZE);
	assert_true(tu_file_path(dir, rel, seg, path, sizeof(path)));
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return;
	r = pread(fd, buf, LS_PAGE_SIZE, (off_t) (block % TU_SEG_BLOCKS) * LS_PAGE_SIZE);
	assert_true(r == 0 || r == LS_PAGE_SIZE);
	close(fd);
}

static uint8_t *
copy_image(const char *dir, uint32_t rel, uint32_t blocks)
{
	uint8_t    *img = malloc((size_t) blocks * LS_PAGE_SIZE);

	for (uint32_t b = 0; b < blocks; b++)
		raw_block(dir, rel, b, img + (size_t) b * LS_PAGE_SIZE);
	return img;
}

/* Blocks of [0, blocks) whose bytes differ from img. */
static uint32_t
blocks_differing(const char *dir, uint32_t rel, const uint8_t *img, uint32_t blocks)
{
	uint8_t		buf[LS_PAGE_SIZE];
	uint32_t	n = 0;

	for (uint32_t b = 0; b < blocks; b++)
	{
		raw_block(dir, rel, b, buf);
		if (memcmp(buf, img + (size_t) b * LS_PAGE_SIZE, LS_PAGE_SIZE) != 0)
			n++;
	}
	return n;
}

static off_t
file_size(const char *dir, const char *name)
{
	char		path[512];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (stat(path, &st) != 0)
		return -1;
	return st.st_size;
}

static ls_status
put_key(ls_btree *t, uint64_t k)
{
	uint8_t		key[8];
	uint8_t		val[120];

	ls_put_be64(key, k);
	memset(val, (int) (k & 0xff), sizeof(val));
	memcpy(val, &k, 8);
	return ls_btree_insert(t, key, 8, val, sizeof(val));
}

static ls_status
del_key(ls_btree *t, uint64_t k)
{
	uint8_t		key[8];

	ls_put_be64(key, k);
	return ls_btree_remove(t, key, 8);
}

static bool
has_key(ls_btree *t, uint64_t k)
{
	uint8_t		key[8];
	uint8_t		val[120];
	uint32_t	vlen;
	uint64_t	got;
	ls_status	st;

	ls_put_be64(key, k);
	st = ls_btree_lookup(t, key, 8, val, sizeof(val), &vlen);
	if (st == LS_NOT_FOUND)
		return false;
	assert_int_equal(st, LS_OK);
	assert_int_equal(vlen, sizeof(val));
	memcpy(&got, val, 8);
	assert_int_equal(got, k);
	return true;
}

/* The caller's meta page: where the tree's root is. */
static void
write_meta(tu_fenv *e, uint32_t root, uint32_t height, uint32_t marker)
{
	ls_page    *pg = aligned_alloc(4096, LS_PAGE_SIZE);

	memset(pg, 0, LS_PAGE_SIZE);
	pg->hdr.dt_type = META_TYPE;
	memcpy(pg->data, &root, 4);
	memcpy(pg->data + 4, &height, 4);
	memcpy(pg->data + 8, &marker, 4);
	assert_int_equal(ls_bm_write_block(e->bm, e->tree->dt_id, 0, pg, true), LS_OK);
	free(pg);
}

static void
read_meta(tu_fenv *e, uint32_t dt, uint32_t *root, uint32_t *height, uint32_t *marker)
{
	ls_page    *pg = aligned_alloc(4096, LS_PAGE_SIZE);

	assert_int_equal(ls_bm_read_block(e->bm, dt, 0, pg), LS_OK);
	memcpy(root, pg->data, 4);
	memcpy(height, pg->data + 4, 4);
	memcpy(marker, pg->data + 8, 4);
	free(pg);
}

/*
 * A clean image: a tree of the even keys [0, 2n), flushed, meta page at
 * block 0, synced.  Returns the blocks the image uses.
 */
static uint32_t
make_image(tu_fenv *e, const ls_bm_file *file, uint64_t n)
{
	uint32_t	root,
				height;

	assert_int_equal(ls_btree_create_in_file(e->bm, e->tree, file, 1), LS_OK);
	for (uint64_t k = 0; k < n; k++)
		assert_int_equal(put_key(e->tree, 2 * k), LS_OK);
	assert_int_equal(ls_bm_flush_all(e->bm), LS_OK);
	assert_int_equal(ls_btree_root(e->tree, &root, &height), LS_OK);
	write_meta(e, root, height, 1);
	assert_int_equal(ls_bm_sync_dt(e->bm, e->tree->dt_id), LS_OK);
	return ls_bm_dt_blocks(e->bm, e->tree->dt_id);
}

/* Odd keys in, every fourth even key out: splits, merges, reused blocks. */
static void
churn(ls_btree *t, uint64_t n, uint64_t from, uint64_t step)
{
	for (uint64_t k = from; k < n; k += step)
	{
		assert_int_equal(put_key(t, 2 * k + 1), LS_OK);
		if (k % 4 == 0)
			assert_int_equal(del_key(t, 2 * k), LS_OK);
	}
}

/* Open the restored file in a fresh pool: exactly the image's keys. */
static void
check_restored_tree(const char *dir, const ls_bm_file *file, uint32_t blocks, uint64_t n)
{
	tu_fenv		e;
	uint32_t	dt,
				root,
				height,
				marker;
	ls_btree_info info;
	char		msg[256];

	env_open(&e, dir, 32);
	assert_int_equal(ls_bm_register_file(e.bm, META_TYPE, NULL, file, blocks, &dt), LS_OK);
	read_meta(&e, dt, &root, &height, &marker);
	assert_int_equal(marker, 1);
	ls_bm_unregister_dt(e.bm, dt);
	assert_int_equal(ls_btree_open(e.bm, e.tree, file, blocks, root, height), LS_OK);
	assert_int_equal(ls_btree_verify(e.tree, &info, msg, sizeof(msg)), LS_OK);
	assert_int_equal(info.entries, n);
	for (uint64_t k = 0; k < n; k++)
	{
		assert_true(has_key(e.tree, 2 * k));
		assert_false(has_key(e.tree, 2 * k + 1));
	}
	ls_btree_drop(e.tree);
	tu_fenv_close(&e);
}

static ls_status
apply(const char *dir, const ls_bm_file *file, uint64_t image, uint32_t *restored)
{
	tu_fenv		e;
	ls_status	st;

	env_open(&e, dir, 8);
	st = ls_bm_undo_apply(e.bm, file, image, restored);
	tu_fenv_close(&e);
	return st;
}

/* The main case: write-back and eviction overwrite the image; undo brings it back. */
static void
test_restore_after_crash(void **state)
{
	(void) state;
	char	   *dir = tu_tempdir();
	ls_bm_file	file = {.key = {1, 0, 0, 0}};
	const uint64_t n = 6000;
	tu_fenv		e;
	uint32_t	blocks,
				restored;
	uint64_t	image;
	uint8_t    *img;
	ls_bm_stats s;

	assert_true(tu_file_create(dir, 1));
	env_open(&e, dir, 16);
	blocks = make_image(&e, &file, n);
	assert_true(blocks > 2 * TU_SEG_BLOCKS);
	img = copy_image(dir, 1, blocks);
	assert_int_equal(ls_bm_undo_image(e.bm, &file, &image), LS_NOT_FOUND);
	assert_int_equal(ls_bm_protect_dt(e.bm, e.tree->dt_id, blocks, 77), LS_OK);
	assert_int_equal(ls_bm_undo_image(e.bm, &file, &image), LS_OK);
	assert_int_equal(image, 77);

	churn(e.tree, n, 0, 1);
	{
		uint32_t	root,
					height;

		assert_int_equal(ls_btree_root(e.tree, &root, &height), LS_OK);
		write_meta(&e, root, height, 2);
	}
	(void) ls_bm_evict_all(e.bm);
	ls_bm_get_stats(e.bm, &s);
	assert_true(s.undo_pages > 0);
	assert_true(s.undo_appends > 0);
	/* fewer appends than pages: a batch is saved with one write and one sync */
	assert_true(s.undo_appends < s.undo_pages);
	tu_fenv_close(&e);

	/* the crash left a file that is not the image */
	assert_true(blocks_differing(dir, 1, img, blocks) > TU_SEG_BLOCKS);
	assert_int_equal(apply(dir, &file, 77, &restored), LS_OK);
	assert_true(restored > TU_SEG_BLOCKS);
	assert_int_equal(blocks_differing(dir, 1, img, blocks), 0);
	check_restored_tree(dir, &file, blocks, n);
	/* applying again is harmless (recovery may crash and run again) */
	assert_int_equal(apply(dir, &file, 77, &restored), LS_OK);
	assert_int_equal(blocks_differing(dir, 1, img, blocks), 0);
	free(img);
	tu_rm_rf(dir);
	free(dir);
}

/*
 * A tree much larger than the pool's table of saved blocks (256 entries for
 * a small pool): blocks are forgotten and saved again, with intermediate
 * content; recovery must take each block's first copy.
 */
static void
test_resaved_blocks(void **state)
{
	(void) state;
	char	   *dir = tu_tempdir();
	ls_bm_file	file = {.key = {7, 0, 0, 0}};
	const uint64_t n = 40000;
	tu_fenv		e;
	uint32_t	blocks,
				restored;
	uint8_t    *img;
	ls_bm_stats s;

	assert_true(tu_file_create(dir, 7));
	env_open(&e, dir, 16);
	blocks = make_image(&e, &file, n);
	assert_true(blocks > 512);
	img = copy_image(dir, 7, blocks);
	assert_int_equal(ls_bm_protect_dt(e.bm, e.tree->dt_id, blocks, 8), LS_OK);
	/* two passes over the keys: most blocks are written back twice or more */
	churn(e.tree, n, 0, 2);
	churn(e.tree, n, 1, 2);
	(void) ls_bm_evict_all(e.bm);
	ls_bm_get_stats(e.bm, &s);
	assert_true(s.undo_pages > blocks + blocks / 4);
	tu_fenv_close(&e);

	assert_int_equal(apply(dir, &file, 8, &restored), LS_OK);
	assert_true(restored <= blocks);
	assert_true(restored > blocks / 2);
	assert_int_equal(blocks_differing(dir, 7, img, blocks), 0);
	check_restored_tree(dir, &file, blocks, n);
	free(img);
	tu_rm_rf(dir);
	free(dir);
}

/* Journal bytes of one entry, as the format in src/buffer/README.md says. */
typedef struct t_entry
{
	uint32_t	magic;
	uint32_t	block;
	uint64_t	image;
	uint32_t	flags;
	uint32_t	crc;
} t_entry;

static size_t
make_entry(uint8_t *out, uint32_t block, uint64_t image, uint8_t fill)
{
	t_entry		e = {.magic = 0x45554e4cu, .block = block, .image = image};
	uint32_t	crc;

	memset(out + sizeof(e), fill, LS_PAGE_SIZE);
	crc = ls_crc32c(0, &e, sizeof(e));
	e.crc = ls_crc32c(crc, out + sizeof(e), LS_PAGE_SIZE);
	memcpy(out, &e, sizeof(e));
	return sizeof(e) + LS_PAGE_SIZE;
}

/* A torn tail ends the journal: nothing after it is restored. */
static void
test_torn_tail(void **state)
{
	(void) state;
	char	   *dir = tu_tempdir();
	ls_bm_file	file = {.key = {2, 0, 0, 0}};
	tu_fenv		e;
	uint32_t	blocks,
				restored;
	uint8_t    *img;
	uint8_t    *buf = malloc(4 * (sizeof(t_entry) + LS_PAGE_SIZE));
	uint8_t		page[LS_PAGE_SIZE];
	size_t		len = 0;
	char		path[512];
	int			fd;

	assert_true(tu_file_create(dir, 2));
	env_open(&e, dir, 16);
	blocks = make_image(&e, &file, tu_scaled(2000));
	assert_int_equal(ls_bm_protect_dt(e.bm, e.tree->dt_id, blocks, 9), LS_OK);
	tu_fenv_close(&e);
	img = copy_image(dir, 2, blocks);

	/*
	 * A valid entry for block 3, then one whose page is torn (CRC), then
	 * valid ones for blocks 4 and 5, then half an entry.
	 */
	len += make_entry(buf + len, 3, 9, 0xa1);
	size_t		torn = len;

	len += make_entry(buf + len, 2, 9, 0xa2);
	buf[torn + sizeof(t_entry) + 100] ^= 1;
	len += make_entry(buf + len, 4, 9, 0xa3);
	len += make_entry(buf + len, 5, 9, 0xa4) / 2;
	snprintf(path, sizeof(path), "%s/rel2_undo", dir);
	fd = open(path, O_WRONLY | O_APPEND);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t) len);
	close(fd);

	assert_int_equal(apply(dir, &file, 9, &restored), LS_OK);
	assert_int_equal(restored, 1);
	raw_block(dir, 2, 3, page);
	assert_int_equal(page[sizeof(ls_page_header) + 10], 0xa1);
	/* everything else untouched */
	assert_int_equal(blocks_differing(dir, 2, img, blocks), 1);

	/* an entry of another image also ends it (a fresh journal of image 9) */
	{
		uint32_t	dt;

		env_open(&e, dir, 16);
		assert_int_equal(ls_bm_register_file(e.bm, META_TYPE, NULL, &file, blocks, &dt), LS_OK);
		assert_int_equal(ls_bm_protect_dt(e.bm, dt, blocks, 9), LS_OK);
		tu_fenv_close(&e);
		len = make_entry(buf, 6, 10, 0xb1);
		len += make_entry(buf + len, 7, 9, 0xb2);
		fd = open(path, O_WRONLY | O_APPEND);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, buf, len), (ssize_t) len);
		close(fd);
	}
	assert_int_equal(apply(dir, &file, 9, &restored), LS_OK);
	assert_int_equal(restored, 0);
	free(buf);
	free(img);
	tu_rm_rf(dir);
	free(dir);
}

/* A journal of another image is ignored; the header says which image it is. */
static void
test_other_image_ignored(void **state)
{
	(void) state;
	char	   *dir = tu_tempdir();
	ls_bm_file	file = {.key = {3, 0, 0, 0}};
	const uint64_t n = tu_scaled(3000);
	tu_fenv		e;
	uint32_t	blocks,
				restored;
	uint64_t	image;
	uint8_t    *img;
	uint32_t	before;

	assert_true(tu_file_create(dir, 3));
	env_open(&e, dir, 16);
	blocks = make_image(&e, &file, n);
	img = copy_image(dir, 3, blocks);
	assert_int_equal(ls_bm_protect_dt(e.bm, e.tree->dt_id, blocks, 5), LS_OK);
	churn(e.tree, n, 0, 1);
	(void) ls_bm_evict_all(e.bm);
	tu_fenv_close(&e);

	before = blocks_differing(dir, 3, img, blocks);
	assert_true(before > 0);
	env_open(&e, dir, 8);
	assert_int_equal(ls_bm_undo_image(e.bm, &file, &image), LS_OK);
	assert_int_equal(image, 5);
	tu_fenv_close(&e);
	assert_int_equal(apply(dir, &file, 6, &restored), LS_OK);
	assert_int_equal(restored, 0);
	assert_int_equal(blocks_differing(dir, 3, img, blocks), before);
	/* no journal at all: nothing to do */
	{
		ls_bm_file	none = {.key = {99, 0, 0, 0}};

		env_open(&e, dir, 8);
		assert_int_equal(ls_bm_undo_image(e.bm, &none, &image), LS_NOT_FOUND);
		assert_int_equal(ls_bm_undo_apply(e.bm, &none, 5, &restored), LS_OK);
		assert_int_equal(restored, 0);
		tu_fenv_close(&e);
	}
	assert_int_equal(apply(dir, &file, 5, &restored), LS_OK);
	assert_true(restored > 0);
	assert_int_equal(blocks_differing(dir, 3, img, blocks), 0);
	check_restored_tree(dir, &file, blocks, n);
	free(img);
	tu_rm_rf(dir);
	free(dir);
}

/*
 * ls_bm_write_block goes through the journal (block 0, the meta page);
 * blocks at or above `below` do not, and neither does anything once the
 * protection ends or without one.
 */
static void
test_write_block_and_off(void **state)
{
	(void) state;
	char	   *dir = tu_tempdir();
	ls_bm_file	file = {.key = {4, 0, 0, 0}};
	tu_fenv		e;
	uint32_t	blocks,
				restored,
				root,
				height,
				marker,
				dt;
	uint8_t    *img;
	ls_bm_stats s0,
				s1;
	off_t		jsize;

	assert_true(tu_file_create(dir, 4));
	env_open(&e, dir, 16);
	blocks = make_image(&e, &file, tu_scaled(2000));
	img = copy_image(dir, 4, blocks);
	ls_bm_get_stats(e.bm, &s0);
	/* no protection yet: the image was written without any journal */
	assert_int_equal(s0.undo_pages, 0);
	assert_int_equal(file_size(dir, "rel4_undo"), -1);

	assert_int_equal(ls_bm_protect_dt(e.bm, e.tree->dt_id, blocks, 1234), LS_OK);
	jsize = file_size(dir, "rel4_undo");
	assert_true(jsize > 0);
	/* a new page past the image: not saved */
	{
		ls_page    *pg = aligned_alloc(4096, LS_PAGE_SIZE);

		memset(pg, 0, LS_PAGE_SIZE);
		pg->hdr.dt_type = META_TYPE;
		assert_int_equal(ls_bm_write_block(e.bm, e.tree->dt_id, blocks + 3, pg, false), LS_OK);
		free(pg);
	}
	ls_bm_get_stats(e.bm, &s1);
	assert_int_equal(s1.undo_pages, 0);
	assert_int_equal(file_size(dir, "rel4_undo"), jsize);
	/* the meta page: saved, then overwritten twice (saved once) */
	write_meta(&e, 1, 1, 2);
	write_meta(&e, 1, 1, 3);
	ls_bm_get_stats(e.bm, &s1);
	assert_int_equal(s1.undo_pages, 1);
	assert_true(file_size(dir, "rel4_undo") > jsize);

	/* protection off: writes leave the journal alone */
	assert_int_equal(ls_bm_protect_dt(e.bm, e.tree->dt_id, 0, 0), LS_OK);
	jsize = file_size(dir, "rel4_undo");
	churn(e.tree, tu_scaled(2000), 0, 1);
	assert_int_equal(ls_bm_flush_all(e.bm), LS_OK);
	ls_bm_get_stats(e.bm, &s0);
	assert_int_equal(s0.undo_pages, s1.undo_pages);
	assert_int_equal(file_size(dir, "rel4_undo"), jsize);
	tu_fenv_close(&e);

	/* the journal still holds the old meta page: recovery can bring it back */
	assert_true(blocks_differing(dir, 4, img, blocks) > 1);
	assert_int_equal(apply(dir, &file, 1234, &restored), LS_OK);
	assert_int_equal(restored, 1);
	env_open(&e, dir, 8);
	assert_int_equal(ls_bm_register_file(e.bm, META_TYPE, NULL, &file, blocks, &dt), LS_OK);
	read_meta(&e, dt, &root, &height, &marker);
	assert_int_equal(marker, 1);
	tu_fenv_close(&e);
	{
		uint8_t		buf[LS_PAGE_SIZE];

		raw_block(dir, 4, 0, buf);
		assert_memory_equal(buf, img, LS_PAGE_SIZE);
	}
	free(img);
	tu_rm_rf(dir);
	free(dir);
}

/* A journal that cannot be written: the protected page is not written either. */
static void
test_journal_failure(void **state)
{
	(void) state;
	char	   *dir = tu_tempdir();
	ls_bm_file	file = {.key = {5, 0, 0, 0}};
	const uint64_t n = tu_scaled(2000);
	tu_fenv		e;
	uint32_t	blocks,
				restored;
	uint8_t    *img;
	char		path[512];
	ls_bm_stats s0,
				s1;

	assert_true(tu_file_create(dir, 5));
	env_open(&e, dir, 256);		/* everything stays in memory */
	blocks = make_image(&e, &file, n);
	img = copy_image(dir, 5, blocks);
	assert_int_equal(ls_bm_protect_dt(e.bm, e.tree->dt_id, blocks, 3), LS_OK);
	/* the journal disappears (and this process's descriptor with it) */
	snprintf(path, sizeof(path), "%s/rel5_undo", dir);
	assert_int_equal(unlink(path), 0);
	ls_bm_process_detach(e.bm);

	churn(e.tree, n, 0, 1);
	ls_bm_get_stats(e.bm, &s0);
	assert_int_equal(ls_bm_flush_all(e.bm), LS_IO_ERROR);
	assert_int_equal(ls_bm_last_error_errno(), ENOENT);
	ls_bm_get_stats(e.bm, &s1);
	assert_int_equal(s1.undo_pages, 0);
	/* no protected block was written; new blocks past the image were */
	assert_int_equal(blocks_differing(dir, 5, img, blocks), 0);
	assert_true(s1.writes > s0.writes);
	assert_int_equal(ls_bm_dt_blocks(e.bm, e.tree->dt_id) > blocks, true);
	/* the meta page neither */
	{
		ls_page    *pg = aligned_alloc(4096, LS_PAGE_SIZE);

		memset(pg, 0, LS_PAGE_SIZE);
		pg->hdr.dt_type = META_TYPE;
		assert_int_equal(ls_bm_write_block(e.bm, e.tree->dt_id, 0, pg, true), LS_IO_ERROR);
		free(pg);
	}
	assert_int_equal(blocks_differing(dir, 5, img, blocks), 0);

	/* a new protection of the same (still clean) image: the pages stayed dirty */
	assert_int_equal(ls_bm_protect_dt(e.bm, e.tree->dt_id, blocks, 4), LS_OK);
	assert_int_equal(ls_bm_flush_all(e.bm), LS_OK);
	assert_true(blocks_differing(dir, 5, img, blocks) > 0);
	ls_bm_get_stats(e.bm, &s1);
	assert_true(s1.undo_pages > 0);
	tu_fenv_close(&e);
	assert_int_equal(apply(dir, &file, 4, &restored), LS_OK);
	assert_int_equal(blocks_differing(dir, 5, img, blocks), 0);
	check_restored_tree(dir, &file, blocks, n);
	free(img);
	tu_rm_rf(dir);
	free(dir);
}

/*
 * An append that fails half-way (the file size limit): the pages of that
 * batch are not written, the torn remains do not hide later appends, and
 * the image still comes back.
 */
static void
test_append_fails_halfway(void **state)
{
	(void) state;
	char	   *dir = tu_tempdir();
	ls_bm_file	file = {.key = {9, 0, 0, 0}};
	const uint64_t n = 4000;
	tu_fenv		e;
	uint32_t	blocks,
				restored;
	uint8_t    *img;
	ls_bm_stats s;
	struct rlimit old,
				lim;
	void		(*old_handler) (int);

	assert_true(tu_file_create(dir, 9));
	env_open(&e, dir, 512);
	blocks = make_image(&e, &file, n);
	assert_true(blocks > 40);
	img = copy_image(dir, 9, blocks);
	assert_int_equal(ls_bm_protect_dt(e.bm, e.tree->dt_id, blocks, 21), LS_OK);
	churn(e.tree, n, 0, 1);

	/* room for the header and 12.5 entries: the second batch of 8 tears */
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = 32 + 12 * (24 + LS_PAGE_SIZE) + LS_PAGE_SIZE / 2;
	old_handler = signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	assert_int_equal(ls_bm_flush_all(e.bm), LS_IO_ERROR);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, old_handler);
	assert_int_equal(ls_bm_last_error_errno(), EFBIG);
	ls_bm_get_stats(e.bm, &s);
	assert_true(s.undo_pages > 0 && s.undo_pages <= 12);
	/* only what was saved may have been overwritten; the torn part is cut off */
	assert_true(blocks_differing(dir, 9, img, blocks) <= s.undo_pages);
	assert_int_equal(file_size(dir, "rel9_undo"),
					 (off_t) (32 + s.undo_pages * (24 + LS_PAGE_SIZE)));

	assert_int_equal(ls_bm_flush_all(e.bm), LS_OK);
	assert_true(blocks_differing(dir, 9, img, blocks) > 12);
	tu_fenv_close(&e);
	assert_int_equal(apply(dir, &file, 21, &restored), LS_OK);
	assert_int_equal(blocks_differing(dir, 9, img, blocks), 0);
	check_restored_tree(dir, &file, blocks, n);
	free(img);
	tu_rm_rf(dir);
	free(dir);
}

/*
 * A protection whose journal cannot be set up (its path is a directory):
 * the call fails and the instance stays protected with nothing saved, so
 * protected blocks are not written until the protection ends.
 */
static void
test_protect_failure(void **state)
{
	(void) state;
	char	   *dir = tu_tempdir();
	ls_bm_file	file = {.key = {8, 0, 0, 0}};
	const uint64_t n = tu_scaled(2000);
	tu_fenv		e;
	uint32_t	blocks;
	uint8_t    *img;
	char		path[512];
	uint64_t	image;

	assert_true(tu_file_create(dir, 8));
	env_open(&e, dir, 256);
	blocks = make_image(&e, &file, n);
	img = copy_image(dir, 8, blocks);
	snprintf(path, sizeof(path), "%s/rel8_undo", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(ls_bm_protect_dt(e.bm, e.tree->dt_id, blocks, 11), LS_IO_ERROR);
	assert_int_equal(ls_bm_last_error_errno(), EISDIR);
	assert_int_equal(ls_bm_undo_image(e.bm, &file, &image), LS_IO_ERROR);
	churn(e.tree, n, 0, 1);
	assert_int_equal(ls_bm_flush_all(e.bm), LS_IO_ERROR);
	assert_int_equal(blocks_differing(dir, 8, img, blocks), 0);
	/* the caller gives up protecting: the pages go out */
	assert_int_equal(ls_bm_protect_dt(e.bm, e.tree->dt_id, 0, 0), LS_OK);
	assert_int_equal(ls_bm_flush_all(e.bm), LS_OK);
	assert_true(blocks_differing(dir, 8, img, blocks) > 0);
	ls_btree_drop(e.tree);
	tu_fenv_close(&e);
	rmdir(path);
	free(img);
	tu_rm_rf(dir);
	free(dir);
}

/* Several processes write back and evict pages of the same protected tree. */
#define MP_WORKERS 3

typedef struct mp_arg
{
	ls_btree   *tree;
	uint64_t	n;
	tu_barrier	start;
} mp_arg;

static int
mp_worker(int w, void *varg)
{
	mp_arg	   *a = varg;
	int			rc = 0;

	tu_barrier_wait(&a->start);
	for (uint64_t k = (uint64_t) w; k < a->n; k += MP_WORKERS)
	{
		uint8_t		key[8];
		uint8_t		val[120];

		ls_put_be64(key, 2 * k + 1);
		memset(val, (int) (k & 0xff), sizeof(val));
		if (ls_btree_insert(a->tree, key, 8, val, sizeof(val)) != LS_OK)
		{
			rc = 1;
			break;
		}
		if (k % 4 == 0)
		{
			ls_put_be64(key, 2 * k);
			if (ls_btree_remove(a->tree, key, 8) != LS_OK)
			{
				rc = 1;
				break;
			}
		}
		if (k % 64 == (uint64_t) w)
			(void) ls_bm_provider_round(a->tree->bm);
	}
	if (w == 0)
		(void) ls_bm_evict_all(a->tree->bm);
	ls_bm_process_detach(a->tree->bm);
	return rc;
}

static void
test_multi_process(void **state)
{
	(void) state;
	char	   *dir = tu_tempdir();
	ls_bm_file	file = {.key = {6, 0, 0, 0}};
	const uint64_t n = 6000;
	mp_arg	   *a = tu_shared_region(sizeof(mp_arg));
	tu_fenv		e;
	uint32_t	blocks,
				restored;
	uint8_t    *img;
	ls_bm_stats s;

	assert_true(tu_file_create(dir, 6));
	env_open(&e, dir, 24);
	blocks = make_image(&e, &file, n);
	img = copy_image(dir, 6, blocks);
	assert_int_equal(ls_bm_protect_dt(e.bm, e.tree->dt_id, blocks, 42), LS_OK);
	a->tree = e.tree;
	a->n = n;
	tu_barrier_init(&a->start, MP_WORKERS);
	assert_int_equal(tu_fork_workers(MP_WORKERS, mp_worker, a), 0);
	ls_bm_get_stats(e.bm, &s);
	assert_true(s.undo_pages > 0);
	tu_fenv_close(&e);

	assert_true(blocks_differing(dir, 6, img, blocks) > TU_SEG_BLOCKS);
	assert_int_equal(apply(dir, &file, 42, &restored), LS_OK);
	assert_true(restored > TU_SEG_BLOCKS);
	assert_int_equal(blocks_differing(dir, 6, img, blocks), 0);
	check_restored_tree(dir, &file, blocks, n);
	tu_free_region(a, sizeof(mp_arg));
	free(img);
	tu_rm_rf(dir);
	free(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_restore_after_crash),
		cmocka_unit_test(test_resaved_blocks),
		cmocka_unit_test(test_torn_tail),
		cmocka_unit_test(test_other_image_ignored),
		cmocka_unit_test(test_write_block_and_off),
		cmocka_unit_test(test_journal_failure),
		cmocka_unit_test(test_protect_failure),
		cmocka_unit_test(test_append_fails_halfway),
		cmocka_unit_test(test_multi_process),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
