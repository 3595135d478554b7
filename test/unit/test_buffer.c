/*
 * test_buffer.c - buffer pool: layout, swips, alloc / write-back / eviction /
 * reload, a pool much smaller than the data with a provider thread, LS_NO_SPACE,
 * checksum and page-id corruption, page-id recycling, single load under
 * concurrent misses from several processes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "leanstore/buffer.h"
#include "tu.h"
#include "tu_parr.h"

typedef struct fixture
{
	tu_pool		pool;
	ls_bm	   *bm;				/* pool.bm */
	tu_parr    *pa;
	size_t		pa_size;
	uint64_t   *model;			/* expected counter per slot */
	uint32_t	n;
} fixture;

static void
fx_open(fixture *fx, uint64_t frames, uint32_t n_pages, uint32_t free_pct)
{
	ls_bm_config cfg = {.use_direct_io = true, .free_target_pct = free_pct};

	memset(fx, 0, sizeof(*fx));
	assert_int_equal(tu_pool_open(&fx->pool, frames, cfg), LS_OK);
	fx->bm = fx->pool.bm;
	tu_parr_register_type();
	fx->n = n_pages;
	fx->pa_size = tu_parr_size(n_pages);
	fx->pa = tu_shared_region(fx->pa_size);
	fx->model = tu_shared_region(n_pages * sizeof(uint64_t));
	if (n_pages > 0)
		assert_int_equal(tu_parr_create(fx->bm, fx->pa, n_pages), LS_OK);
}

static void
fx_close(fixture *fx)
{
	ls_bm_provider_stop(fx->bm);
	tu_pool_close(&fx->pool);
	tu_free_region(fx->model, fx->n * sizeof(uint64_t));
	tu_free_region(fx->pa, fx->pa_size);
}

static uint32_t
resident_slots(fixture *fx)
{
	uint32_t	r = 0;

	for (uint32_t i = 0; i < fx->n; i++)
	{
		uint64_t	raw = ls_swip_load(&fx->pa->swips[i]);

		r += raw != LS_PID_INVALID && ls_swip_is_swizzled(raw);
	}
	return r;
}

static void
verify_all(fixture *fx)
{
	for (uint32_t i = 0; i < fx->n; i++)
	{
		uint64_t	c = UINT64_MAX;

		assert_int_equal(tu_parr_read(fx->bm, fx->pa, i, &c), LS_OK);
		assert_int_equal(c, fx->model[i]);
	}
}

/* ------------------------------------------------------------------------ */

static void
test_layout_and_swips(void **state)
{
	(void) state;
	fixture		fx;
	ls_bm_config cfg = {0};
	ls_bm	   *bm;

	/* swip encoding */
	assert_false(ls_swip_is_swizzled(ls_swip_from_pid(12345)));
	assert_int_equal(ls_swip_pid(ls_swip_from_pid(12345)), 12345);
	assert_true(ls_swip_is_swizzled(ls_swip_from_frame(77)));
	assert_int_equal(ls_swip_frame(ls_swip_from_frame(77)), 77);
	assert_int_equal(ls_swip_frame(ls_swip_from_frame(UINT32_MAX - 1)), UINT32_MAX - 1);
	assert_int_equal(sizeof(ls_swip), 8);
	assert_int_equal(sizeof(ls_frame), LS_CACHELINE);
	assert_int_equal(sizeof(ls_page), LS_PAGE_SIZE);

	fx_open(&fx, 37, 3, 0);
	bm = fx.bm;
	assert_int_equal(ls_bm_n_frames(bm), 37);
	assert_int_equal((uintptr_t) bm % LS_CACHELINE, 0);
	for (uint32_t i = 0; i < 37; i++)
	{
		assert_int_equal((uintptr_t) ls_bm_frame(bm, i) % LS_CACHELINE, 0);
		assert_int_equal((uintptr_t) ls_bm_page(bm, i) % 4096, 0);
		assert_int_equal(ls_bm_frame_index(bm, ls_bm_frame(bm, i)), i);
		/* everything inside the region */
		assert_true((char *) (ls_bm_page(bm, i) + 1) <= (char *) fx.pool.region + fx.pool.region_size);
		assert_true((char *) ls_bm_frame(bm, i) < (char *) ls_bm_page(bm, 0));
	}
	/* the swip of a resident page names a frame holding that page */
	uint64_t	raw = ls_swip_load(&fx.pa->swips[1]);

	assert_true(ls_swip_is_swizzled(raw));
	assert_int_equal(ls_bm_swip_to_pid(bm, raw), ls_bm_page(bm, ls_swip_frame(raw))->hdr.pid);
	assert_int_equal(ls_bm_swip_to_pid(bm, ls_swip_from_frame(1000)), LS_PID_INVALID);
	fx_close(&fx);

	/* bad configurations */
	void	   *r = malloc(ls_bm_region_size(8));

	cfg.n_frames = 8;
	cfg.data_dir = "/nonexistent-dir/x";
	assert_int_equal(ls_bm_init(r, ls_bm_region_size(8) - 1, &cfg, &bm), LS_INVALID);
	/* files are opened when an instance registers, not before */
	assert_int_equal(ls_bm_init(r, ls_bm_region_size(8), &cfg, &bm), LS_OK);
	{
		uint32_t	dt;

		assert_int_equal(ls_bm_register_dt(bm, TU_PARR_TYPE, NULL, &dt), LS_IO_ERROR);
	}
	cfg.data_dir = NULL;
	assert_int_equal(ls_bm_init(r, ls_bm_region_size(8), &cfg, &bm), LS_INVALID);
	cfg.data_dir = "/nonexistent-dir/x";
	cfg.n_frames = 1;
	assert_int_equal(ls_bm_init(r, ls_bm_region_size(8), &cfg, &bm), LS_INVALID);
	free(r);
	assert_true(ls_bm_region_size(100) > ls_bm_region_size(10) + 90 * LS_PAGE_SIZE);
}

static void
test_guards(void **state)
{
	(void) state;
	ls_latch	l;
	ls_guard	g,
				g2;

	ls_latch_init(&l);
	assert_int_equal(ls_guard_meta(&l, LS_GUARD_OPTIMISTIC, &g), LS_OK);
	assert_int_equal(ls_guard_validate(&g), LS_OK);
	assert_int_equal(ls_guard_upgrade_exclusive(&g), LS_OK);
	assert_int_equal(g.mode, LS_GUARD_EXCLUSIVE);
	assert_int_equal(ls_guard_meta(&l, LS_GUARD_OPTIMISTIC, &g2), LS_RESTART);
	ls_guard_release(&g);
	assert_int_equal(g.mode, LS_GUARD_NONE);
	assert_int_equal(ls_guard_validate(&g), LS_RESTART);

	assert_int_equal(ls_guard_meta(&l, LS_GUARD_OPTIMISTIC, &g), LS_OK);
	assert_int_equal(ls_guard_meta(&l, LS_GUARD_EXCLUSIVE, &g2), LS_OK);
	ls_guard_release(&g2);
	/* somebody held it exclusively in between */
	assert_int_equal(ls_guard_validate(&g), LS_RESTART);
	assert_int_equal(ls_guard_upgrade_shared(&g), LS_RESTART);
	assert_int_equal(ls_guard_meta(&l, LS_GUARD_OPTIMISTIC, &g), LS_OK);
	assert_int_equal(ls_guard_upgrade_shared(&g), LS_OK);
	assert_int_equal(ls_guard_meta(&l, LS_GUARD_SHARED, &g2), LS_OK);
	/* two shared holders: neither may become exclusive */
	assert_int_equal(ls_guard_upgrade_exclusive(&g), LS_RESTART);
	ls_guard_release(&g2);
	assert_int_equal(ls_guard_upgrade_exclusive(&g), LS_OK);
	ls_guard_release(&g);
	assert_int_equal(atomic_load(&l.word) & 0xffffffffu, 0);
}

typedef struct misuse
{
	ls_bm	   *bm;
	ls_guard   *g;
} misuse;

static int
misuse_mark_dirty(int worker, void *arg)
{
	(void) worker;
	ls_guard_mark_dirty(((misuse *) arg)->g);
	return 0;
}

static int
misuse_free_page(int worker, void *arg)
{
	misuse	   *m = arg;

	(void) worker;
	ls_bm_free_page(m->bm, m->g);
	return 0;
}

/* ls_guard_is_exclusive answers for meta and frame guards in every mode. */
static void
test_guard_is_exclusive(void **state)
{
	(void) state;
	fixture		fx;
	ls_latch	l;
	ls_guard	g,
				meta;

	ls_latch_init(&l);
	assert_int_equal(ls_guard_meta(&l, LS_GUARD_OPTIMISTIC, &g), LS_OK);
	assert_false(ls_guard_is_exclusive(&g));
	assert_int_equal(ls_guard_upgrade_shared(&g), LS_OK);
	assert_false(ls_guard_is_exclusive(&g));
	assert_int_equal(ls_guard_upgrade_exclusive(&g), LS_OK);
	assert_true(ls_guard_is_exclusive(&g));
	ls_guard_release(&g);
	assert_false(ls_guard_is_exclusive(&g));
	/* a guard that claims exclusive over a latch nobody holds */
	g.mode = LS_GUARD_EXCLUSIVE;
	assert_false(ls_guard_is_exclusive(&g));

	fx_open(&fx, 16, 2, 0);
	assert_int_equal(ls_guard_meta(&fx.pa->latch, LS_GUARD_OPTIMISTIC, &meta), LS_OK);
	assert_int_equal(ls_bm_fix(fx.bm, &meta, &fx.pa->swips[0], LS_GUARD_SHARED, &g), LS_OK);
	assert_false(ls_guard_is_exclusive(&g));
	ls_guard_release(&g);
	assert_int_equal(ls_bm_fix(fx.bm, &meta, &fx.pa->swips[0], LS_GUARD_EXCLUSIVE, &g), LS_OK);
	assert_true(ls_guard_is_exclusive(&g));
	/* the latch of another frame does not count */
	{
		ls_guard	other = g;

		other.frame = ls_bm_frame(fx.bm, ls_bm_frame_index(fx.bm, g.frame) ^ 1);
		assert_false(ls_guard_is_exclusive(&other));
	}
	ls_guard_mark_dirty(&g);
	ls_guard_release(&g);
	assert_int_equal(ls_bm_alloc_page(fx.bm, fx.pa->dt_id, TU_PARR_TYPE, &g), LS_OK);
	assert_true(ls_guard_is_exclusive(&g));

	/* misuse trips the checks at the top of the functions that need it */
	{
		ls_guard	opt;
		misuse		m = {fx.bm, &opt};

		assert_int_equal(ls_bm_fix(fx.bm, &meta, &fx.pa->swips[1], LS_GUARD_OPTIMISTIC, &opt), LS_OK);
		assert_int_equal(tu_expect_assert(misuse_mark_dirty, &m, "ls_guard_is_exclusive"), 0);
		assert_int_equal(ls_bm_fix(fx.bm, &meta, &fx.pa->swips[1], LS_GUARD_SHARED, &opt), LS_OK);
		assert_int_equal(tu_expect_assert(misuse_free_page, &m, "ls_guard_is_exclusive"), 0);
		ls_guard_release(&opt);
	}
	ls_bm_free_page(fx.bm, &g);
	assert_int_equal(g.mode, LS_GUARD_NONE);
	fx_close(&fx);
}

/* Write, flush, evict everything, read back through the disk. */
/*
 * A new page's block gets its disk space when it is allocated, before any
 * write (fallocate, FALLOC_FL_KEEP_SIZE): the write-back of a page then
 * cannot fail for a full disk.  The file's size still grows only with the
 * writes.
 */
static void
test_new_blocks_reserved(void **state)
{
	(void) state;
	fixture		fx;
	uint32_t	n = 40;
	off_t		off;
	char	   *path;
	struct stat st;

	fx_open(&fx, 64, n, 0);
	path = tu_pool_page_file(&fx.pool, tu_parr_pid(fx.bm, fx.pa, 0), &off);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 0);
	assert_true((uint64_t) st.st_blocks * 512 >= (uint64_t) n * LS_PAGE_SIZE);
	assert_int_equal(ls_bm_evict_all(fx.bm), n);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, (off_t) n * LS_PAGE_SIZE);
	free(path);
	fx_close(&fx);
}

static void
test_writeback_evict_reload(void **state)
{
	(void) state;
	fixture		fx;
	ls_bm_stats s0,
				s1,
				s2;
	uint32_t	n = 40;

	fx_open(&fx, 64, n, 0);
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t k = 0; k <= i % 3; k++)
			assert_int_equal(tu_parr_write(fx.bm, fx.pa, i, &fx.model[i]), LS_OK);
	verify_all(&fx);
	ls_bm_get_stats(fx.bm, &s0);
	assert_int_equal(s0.allocated_pages, n);
	assert_int_equal(s0.free_frames, 64 - n);
	assert_int_equal(s0.reads, 0);

	/* nothing is evicted while dirty pages cannot be written... then it is */
	assert_int_equal(ls_bm_evict_all(fx.bm), n);
	assert_int_equal(resident_slots(&fx), 0);
	ls_bm_get_stats(fx.bm, &s1);
	assert_int_equal(s1.writes - s0.writes, n);
	assert_int_equal(s1.evictions - s0.evictions, n);
	assert_int_equal(s1.free_frames, 64);
	/* the instance's file holds n pages */
	{
		off_t		off;
		char	   *path = tu_pool_page_file(&fx.pool, tu_parr_pid(fx.bm, fx.pa, 0), &off);
		int			fd = open(path, O_RDONLY);

		assert_int_equal(lseek(fd, 0, SEEK_END), (off_t) n * LS_PAGE_SIZE);
		close(fd);
		free(path);
	}

	verify_all(&fx);
	ls_bm_get_stats(fx.bm, &s2);
	assert_int_equal(s2.reads - s1.reads, n);
	assert_int_equal(s2.misses - s1.misses, n);
	assert_int_equal(resident_slots(&fx), n);

	/* clean pages are evicted without writing again */
	assert_int_equal(ls_bm_evict_all(fx.bm), n);
	ls_bm_get_stats(fx.bm, &s1);
	assert_int_equal(s1.writes, s2.writes);
	verify_all(&fx);
	ls_bm_get_stats(fx.bm, &s2);
	assert_true(s2.hits >= s1.hits);

	/* optimistic reads see the same */
	for (uint32_t i = 0; i < n; i++)
	{
		uint64_t	c;

		assert_int_equal(tu_parr_read_optimistic(fx.bm, fx.pa, i, &c), LS_OK);
		assert_int_equal(c, fx.model[i]);
	}
	fx_close(&fx);
}

/* A pool much smaller than the data, provider thread running. */
static void
test_small_pool_with_provider(void **state)
{
	(void) state;
	fixture		fx;
	ls_bm_stats s;
	uint32_t	n = (uint32_t) tu_scaled(400);
	uint64_t	ops = tu_scaled(12000);
	uint64_t	r = 42;

	fx_open(&fx, 32, n, 10);
	assert_int_equal(ls_bm_provider_start_thread(fx.bm), LS_OK);
	assert_int_equal(ls_bm_provider_start_thread(fx.bm), LS_BUSY);
	for (uint64_t k = 0; k < ops; k++)
	{
		uint32_t	i = (uint32_t) (ls_rand_next(&r) % n);
		uint64_t	c;

		if (ls_rand_next(&r) % 3 == 0)
			assert_int_equal(tu_parr_write(fx.bm, fx.pa, i, &fx.model[i]), LS_OK);
		else if (k & 1)
		{
			assert_int_equal(tu_parr_read(fx.bm, fx.pa, i, &c), LS_OK);
			assert_int_equal(c, fx.model[i]);
		}
		else
		{
			assert_int_equal(tu_parr_read_optimistic(fx.bm, fx.pa, i, &c), LS_OK);
			assert_int_equal(c, fx.model[i]);
		}
	}
	ls_bm_provider_stop(fx.bm);
	verify_all(&fx);
	ls_bm_get_stats(fx.bm, &s);
	assert_true(s.evictions > n);
	assert_true(s.reads > n);
	assert_true(s.writes > 0);
	assert_true(resident_slots(&fx) <= 32);
	assert_int_equal(s.allocated_pages, n);
	fx_close(&fx);
}

/* Every frame latched: allocation and loads fail with LS_NO_SPACE, not hang. */
static void
test_no_space(void **state)
{
	(void) state;
	fixture		fx;
	ls_guard	held[16],
				g,
				meta;
	uint64_t	c;

	fx_open(&fx, 16, 4, 0);
	assert_int_equal(ls_bm_evict_all(fx.bm), 4);	/* slots 0..3 on disk */
	for (int i = 0; i < 16; i++)
		assert_int_equal(ls_bm_alloc_page(fx.bm, fx.pa->dt_id, TU_PARR_TYPE, &held[i]), LS_OK);
	assert_int_equal(ls_bm_alloc_page(fx.bm, fx.pa->dt_id, TU_PARR_TYPE, &g), LS_NO_SPACE);
	assert_int_equal(ls_guard_meta(&fx.pa->latch, LS_GUARD_OPTIMISTIC, &meta), LS_OK);
	assert_int_equal(ls_bm_fix(fx.bm, &meta, &fx.pa->swips[0], LS_GUARD_SHARED, &g), LS_NO_SPACE);
	assert_int_equal(g.mode, LS_GUARD_NONE);
	for (int i = 0; i < 16; i++)
		ls_bm_free_page(fx.bm, &held[i]);
	assert_int_equal(tu_parr_read(fx.bm, fx.pa, 0, &c), LS_OK);
	assert_int_equal(c, 0);
	fx_close(&fx);
}

static void
flip_byte(const tu_pool *pool, ls_pid pid, size_t off)
{
	off_t		base;
	char	   *path = tu_pool_page_file(pool, pid, &base);
	int			fd = open(path, O_RDWR);
	uint8_t		b;

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &b, 1, base + (off_t) off), 1);
	b ^= 0x20;
	assert_int_equal(pwrite(fd, &b, 1, base + (off_t) off), 1);
	close(fd);
	free(path);
}

static void
test_checksum_corruption(void **state)
{
	(void) state;
	fixture		fx;
	uint64_t	c;
	ls_pid		pid3,
				pid5,
				pid6;

	fx_open(&fx, 32, 8, 0);
	for (uint32_t i = 0; i < 8; i++)
		assert_int_equal(tu_parr_write(fx.bm, fx.pa, i, &fx.model[i]), LS_OK);
	assert_int_equal(ls_bm_evict_all(fx.bm), 8);
	pid3 = tu_parr_pid(fx.bm, fx.pa, 3);
	pid5 = tu_parr_pid(fx.bm, fx.pa, 5);
	pid6 = tu_parr_pid(fx.bm, fx.pa, 6);

	/* one flipped byte in the middle of page 3 */
	flip_byte(&fx.pool, pid3, 5000);
	assert_int_equal(tu_parr_read(fx.bm, fx.pa, 3, &c), LS_CHECKSUM);
	assert_int_equal(ls_bm_last_error_pid(), pid3);
	/* the page stays out of memory and keeps failing */
	assert_false(ls_swip_is_swizzled(ls_swip_load(&fx.pa->swips[3])));
	assert_int_equal(tu_parr_read_optimistic(fx.bm, fx.pa, 3, &c), LS_CHECKSUM);
	/* a flipped byte in the checksum field itself, and in the LSN field */
	flip_byte(&fx.pool, pid6, offsetof(ls_page_header, checksum) + 1);
	assert_int_equal(tu_parr_read(fx.bm, fx.pa, 6, &c), LS_CHECKSUM);
	assert_int_equal(ls_bm_last_error_pid(), pid6);
	flip_byte(&fx.pool, pid6, offsetof(ls_page_header, checksum) + 1);
	flip_byte(&fx.pool, pid6, 1);
	assert_int_equal(tu_parr_read(fx.bm, fx.pa, 6, &c), LS_CHECKSUM);

	/* a valid page at the wrong place: page 4's image copied over page 5 */
	{
		off_t		off4,
					off5;
		char	   *path = tu_pool_page_file(&fx.pool, tu_parr_pid(fx.bm, fx.pa, 4), &off4);
		char	   *path5 = tu_pool_page_file(&fx.pool, pid5, &off5);
		int			fd = open(path, O_RDWR);
		void	   *buf = malloc(LS_PAGE_SIZE);

		assert_string_equal(path, path5);
		assert_int_equal(pread(fd, buf, LS_PAGE_SIZE, off4), LS_PAGE_SIZE);
		assert_int_equal(pwrite(fd, buf, LS_PAGE_SIZE, off5), LS_PAGE_SIZE);
		free(buf);
		free(path);
		free(path5);
		close(fd);
	}
	assert_int_equal(tu_parr_read(fx.bm, fx.pa, 5, &c), LS_CORRUPT);
	assert_int_equal(ls_bm_last_error_pid(), pid5);

	/* the others are intact; no frame leaked by the failed loads */
	for (uint32_t i = 0; i < 8; i++)
		if (i != 3 && i != 5 && i != 6)
		{
			assert_int_equal(tu_parr_read(fx.bm, fx.pa, i, &c), LS_OK);
			assert_int_equal(c, fx.model[i]);
		}
	ls_bm_stats s;

	ls_bm_get_stats(fx.bm, &s);
	assert_int_equal(s.free_frames, 32 - 5);
	fx_close(&fx);
}

static void
test_free_and_recycle(void **state)
{
	(void) state;
	fixture		fx;
	ls_bm_stats s;
	ls_guard	g;
	ls_pid		p1,
				p2;

	fx_open(&fx, 16, 4, 0);
	p1 = tu_parr_pid(fx.bm, fx.pa, 1);
	assert_int_equal(tu_parr_free(fx.bm, fx.pa, 1), LS_OK);
	ls_bm_get_stats(fx.bm, &s);
	assert_int_equal(s.allocated_pages, 3);
	assert_int_equal(s.free_frames, 13);
	/* the freed pid is reused first */
	assert_int_equal(ls_bm_alloc_page(fx.bm, fx.pa->dt_id, TU_PARR_TYPE, &g), LS_OK);
	assert_int_equal(g.frame->pid, p1);
	assert_int_equal(ls_guard_page(fx.bm, &g)->hdr.pid, p1);
	ls_bm_free_page(fx.bm, &g);

	/* free a page that is on disk only */
	assert_int_equal(ls_bm_evict_all(fx.bm), 3);
	p2 = tu_parr_pid(fx.bm, fx.pa, 2);
	assert_int_equal(tu_parr_free(fx.bm, fx.pa, 2), LS_OK);
	ls_bm_get_stats(fx.bm, &s);
	assert_int_equal(s.allocated_pages, 2);
	assert_int_equal(ls_bm_alloc_page(fx.bm, fx.pa->dt_id, TU_PARR_TYPE, &g), LS_OK);
	assert_true(g.frame->pid == p2 || g.frame->pid == p1);
	ls_bm_free_page(fx.bm, &g);
	fx_close(&fx);
}

/*
 * A checkpoint's ls_bm_flush_all meets a dirty page its holder is freeing
 * (a B-tree merge frees a node under its exclusive latch).  flush_all took
 * the page's write claim and then waited for its latch, while
 * ls_bm_free_page waited for the claim under the latch: both for ever
 * (VACUUM and the checkpoint of the hotfull-spill suite, session 22).
 */
typedef struct flush_free_arg
{
	ls_bm	   *bm;
	ls_guard   *g;
	ls_status	st;
	_Atomic int done;
} flush_free_arg;

static void *
flush_all_main(void *arg)
{
	flush_free_arg *a = arg;

	a->st = ls_bm_flush_all(a->bm);
	atomic_store(&a->done, 1);
	return NULL;
}

static void *
free_page_main(void *arg)
{
	flush_free_arg *a = arg;

	ls_bm_free_page(a->bm, a->g);
	atomic_store(&a->done, 1);
	return NULL;
}

static bool
wait_done(_Atomic int *done, int ms)
{
	for (int i = 0; i < ms && atomic_load(done) == 0; i++)
		usleep(1000);
	return atomic_load(done) != 0;
}

static void
test_flush_all_meets_free(void **state)
{
	(void) state;
	fixture		fx;
	ls_guard	g;
	pthread_t	flusher,
				freer;
	flush_free_arg fa,
				fr;

	fx_open(&fx, 16, 2, 0);
	/* a new page: dirty, latched exclusively by us */
	assert_int_equal(ls_bm_alloc_page(fx.bm, fx.pa->dt_id, TU_PARR_TYPE, &g), LS_OK);
	fa = (flush_free_arg) {.bm = fx.bm};
	assert_int_equal(pthread_create(&flusher, NULL, flush_all_main, &fa), 0);
	/* flush_all reaches the page and waits for its latch */
	assert_false(wait_done(&fa.done, 200));
	fr = (flush_free_arg) {.bm = fx.bm,.g = &g};
	assert_int_equal(pthread_create(&freer, NULL, free_page_main, &fr), 0);
	if (!wait_done(&fr.done, 10000))
		fail_msg("ls_bm_free_page waits for a write claim of ls_bm_flush_all, which waits for the page's latch");
	assert_true(wait_done(&fa.done, 10000));
	assert_int_equal(pthread_join(freer, NULL), 0);
	assert_int_equal(pthread_join(flusher, NULL), 0);
	assert_int_equal(fa.st, LS_OK);
	assert_int_equal(g.mode, LS_GUARD_NONE);
	verify_all(&fx);
	fx_close(&fx);
}

/* Several processes miss on the same pages at once: each is read once. */
typedef struct same_miss_arg
{
	fixture    *fx;
	tu_barrier	barrier;
	_Atomic uint32_t bad;
} same_miss_arg;

static int
same_miss_worker(int w, void *arg)
{
	same_miss_arg *a = arg;
	fixture    *fx = a->fx;
	uint64_t	c;

	tu_barrier_wait(&a->barrier);
	for (uint32_t k = 0; k < fx->n; k++)
	{
		uint32_t	i = (w & 1) ? fx->n - 1 - k : k;
		ls_status	st = (w & 2) ? tu_parr_read_optimistic(fx->bm, fx->pa, i, &c)
			: tu_parr_read(fx->bm, fx->pa, i, &c);

		TU_CHECK(st == LS_OK);
		TU_CHECK(c == fx->model[i]);
	}
	return 0;
}

static void
test_single_load_under_concurrent_misses(void **state)
{
	(void) state;
	fixture		fx;
	ls_bm_stats s0,
				s1;
	same_miss_arg *a;
	uint32_t	n = (uint32_t) tu_scaled(400);

	fx_open(&fx, n + 16, n, 0);
	a = tu_shared_region(sizeof(*a));
	a->fx = &fx;
	for (int round = 0; round < 3; round++)
	{
		assert_int_equal(ls_bm_evict_all(fx.bm), n);
		ls_bm_get_stats(fx.bm, &s0);
		tu_barrier_init(&a->barrier, 4);
		assert_int_equal(tu_fork_workers(4, same_miss_worker, a), 0);
		ls_bm_get_stats(fx.bm, &s1);
		/* 4 processes read every page, the disk saw each page once */
		assert_int_equal(s1.reads - s0.reads, n);
		assert_int_equal(s1.misses - s0.misses, n);
		assert_int_equal(resident_slots(&fx), n);
		assert_int_equal(s1.free_frames, 16);
	}
	tu_free_region(a, sizeof(*a));
	fx_close(&fx);
}

/*
 * A page loaded under a parent that is shared by two holders cannot be
 * swizzled: the fix restarts, the loaded frame waits in the in-flight table
 * and the next fix swizzles it without reading again.  An orphan is
 * reclaimed by eviction.
 */
static void
test_load_under_shared_parent(void **state)
{
	(void) state;
	fixture		fx;
	ls_guard	g1,
				g2,
				child;
	ls_bm_stats s0,
				s;
	uint64_t	c;

	fx_open(&fx, 16, 2, 0);
	assert_int_equal(tu_parr_write(fx.bm, fx.pa, 0, &fx.model[0]), LS_OK);
	assert_int_equal(ls_bm_evict_all(fx.bm), 2);
	ls_bm_get_stats(fx.bm, &s0);

	assert_int_equal(ls_guard_meta(&fx.pa->latch, LS_GUARD_SHARED, &g1), LS_OK);
	assert_int_equal(ls_guard_meta(&fx.pa->latch, LS_GUARD_SHARED, &g2), LS_OK);
	assert_int_equal(ls_bm_fix(fx.bm, &g1, &fx.pa->swips[0], LS_GUARD_SHARED, &child), LS_RESTART);
	assert_int_equal(child.mode, LS_GUARD_NONE);
	assert_false(ls_swip_is_swizzled(ls_swip_load(&fx.pa->swips[0])));
	ls_bm_get_stats(fx.bm, &s);
	assert_int_equal(s.reads - s0.reads, 1);
	assert_int_equal(s.free_frames, 15);
	/* sole shared holder now: the fix swizzles the loaded frame, no I/O */
	ls_guard_release(&g2);
	assert_int_equal(ls_bm_fix(fx.bm, &g1, &fx.pa->swips[0], LS_GUARD_SHARED, &child), LS_OK);
	assert_true(ls_swip_is_swizzled(ls_swip_load(&fx.pa->swips[0])));
	assert_int_equal(g1.mode, LS_GUARD_SHARED);
	ls_guard_release(&child);
	ls_guard_release(&g1);
	assert_int_equal(atomic_load(&fx.pa->latch.word) & 0xffffffffu, 0);
	ls_bm_get_stats(fx.bm, &s);
	assert_int_equal(s.reads - s0.reads, 1);
	assert_int_equal(tu_parr_read(fx.bm, fx.pa, 0, &c), LS_OK);
	assert_int_equal(c, fx.model[0]);

	/* under an exclusive parent the load swizzles at once; parent stays held */
	assert_int_equal(ls_bm_evict_all(fx.bm), 1);
	assert_int_equal(ls_guard_meta(&fx.pa->latch, LS_GUARD_EXCLUSIVE, &g1), LS_OK);
	assert_int_equal(ls_bm_fix(fx.bm, &g1, &fx.pa->swips[0], LS_GUARD_EXCLUSIVE, &child), LS_OK);
	assert_true(ls_swip_is_swizzled(ls_swip_load(&fx.pa->swips[0])));
	assert_int_equal(g1.mode, LS_GUARD_EXCLUSIVE);
	assert_true(atomic_load(&fx.pa->latch.word) & LS_LATCH_EXCLUSIVE);
	ls_guard_release(&child);
	ls_guard_release(&g1);
	ls_bm_get_stats(fx.bm, &s);
	assert_int_equal(s.reads - s0.reads, 2);

	/* an orphan (loaded, never swizzled) goes back to the free list */
	assert_int_equal(ls_guard_meta(&fx.pa->latch, LS_GUARD_SHARED, &g1), LS_OK);
	assert_int_equal(ls_guard_meta(&fx.pa->latch, LS_GUARD_SHARED, &g2), LS_OK);
	assert_int_equal(ls_bm_fix(fx.bm, &g1, &fx.pa->swips[1], LS_GUARD_OPTIMISTIC, &child), LS_RESTART);
	ls_guard_release(&g2);
	ls_guard_release(&g1);
	ls_bm_get_stats(fx.bm, &s);
	assert_int_equal(s.free_frames, 14);
	assert_int_equal(ls_bm_evict_all(fx.bm), 2);
	ls_bm_get_stats(fx.bm, &s);
	assert_int_equal(s.free_frames, 16);
	assert_int_equal(tu_parr_read(fx.bm, fx.pa, 1, &c), LS_OK);
	assert_int_equal(c, 0);
	fx_close(&fx);
}

/* Latched pages are neither written nor evicted; dirty stays dirty. */
static void
test_latched_pages_stay(void **state)
{
	(void) state;
	fixture		fx;
	ls_guard	meta,
				g;
	ls_bm_stats s0,
				s;

	fx_open(&fx, 16, 3, 0);
	ls_bm_get_stats(fx.bm, &s0);
	assert_int_equal(ls_guard_meta(&fx.pa->latch, LS_GUARD_OPTIMISTIC, &meta), LS_OK);
	assert_int_equal(ls_bm_fix(fx.bm, &meta, &fx.pa->swips[1], LS_GUARD_EXCLUSIVE, &g), LS_OK);
	/* the other two go; slot 1 (held, dirty) is skipped without blocking */
	assert_int_equal(ls_bm_evict_all(fx.bm), 2);
	assert_true(ls_swip_is_swizzled(ls_swip_load(&fx.pa->swips[1])));
	assert_int_equal(atomic_load(&g.frame->dirty), 1);
	ls_bm_get_stats(fx.bm, &s);
	assert_int_equal(s.writes - s0.writes, 2);
	/* a provider round does not touch it either */
	for (int i = 0; i < 10; i++)
		(void) ls_bm_provider_round(fx.bm);
	assert_int_equal(atomic_load(&g.frame->dirty), 1);
	ls_guard_release(&g);
	assert_int_equal(ls_bm_evict_all(fx.bm), 1);
	ls_bm_get_stats(fx.bm, &s);
	assert_int_equal(s.writes - s0.writes, 3);
	assert_int_equal(s.free_frames, 16);
	fx_close(&fx);
}

/* The data file outlives the pool: a new pool over it reads the pages. */
static void
test_reopen_data_file(void **state)
{
	(void) state;
	fixture		fx;
	ls_bm_config cfg = {0};
	ls_bm	   *bm2;
	size_t		rs = ls_bm_region_size(8);
	void	   *region2 = tu_shared_region(rs);
	uint64_t	c;
	ls_bm_stats s;

	fx_open(&fx, 8, 6, 0);
	for (uint32_t i = 0; i < 6; i++)
		assert_int_equal(tu_parr_write(fx.bm, fx.pa, i, &fx.model[i]), LS_OK);
	assert_int_equal(ls_bm_flush_all(fx.bm), LS_OK);
	assert_int_equal(ls_bm_sync_dt(fx.bm, fx.pa->dt_id), LS_OK);
	cfg.n_frames = 8;
	cfg.data_dir = fx.pool.dir;
	assert_int_equal(ls_bm_init(region2, rs, &cfg, &bm2), LS_OK);
	ls_bm_get_stats(bm2, &s);
	assert_int_equal(s.allocated_pages, 0);
	{
		/* the same file under a new registration: blocks survive, page ids
		 * are re-made with the new dt_id */
		ls_bm_file	file = {.key = {fx.pa->dt_id}};
		uint32_t	blocks[6];
		uint32_t	dt;

		for (uint32_t i = 0; i < 6; i++)
			blocks[i] = ls_pid_block(tu_parr_pid(fx.bm, fx.pa, i));
		assert_int_equal(ls_bm_register_file(bm2, TU_PARR_TYPE, fx.pa, &file, 6, &dt), LS_OK);
		fx.pa->dt_id = dt;
		for (uint32_t i = 0; i < 6; i++)
			ls_swip_store(&fx.pa->swips[i], ls_swip_from_pid(ls_pid_make(dt, blocks[i])));
	}
	ls_bm_get_stats(bm2, &s);
	assert_int_equal(s.allocated_pages, 6);
	for (uint32_t i = 0; i < 6; i++)
	{
		assert_int_equal(tu_parr_read(bm2, fx.pa, i, &c), LS_OK);
		assert_int_equal(c, fx.model[i]);
	}
	ls_bm_process_detach(bm2);
	tu_free_region(region2, rs);
	/* the old pool's swips are gone; just release its resources */
	memset(fx.pa->swips, 0xff, 6 * sizeof(ls_swip));
	fx_close(&fx);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout_and_swips),
		cmocka_unit_test(test_guards),
		cmocka_unit_test(test_guard_is_exclusive),
		cmocka_unit_test(test_new_blocks_reserved),
		cmocka_unit_test(test_writeback_evict_reload),
		cmocka_unit_test(test_small_pool_with_provider),
		cmocka_unit_test(test_no_space),
		cmocka_unit_test(test_checksum_corruption),
		cmocka_unit_test(test_free_and_recycle),
		cmocka_unit_test(test_flush_all_meets_free),
		cmocka_unit_test(test_single_load_under_concurrent_misses),
		cmocka_unit_test(test_reopen_data_file),
		cmocka_unit_test(test_load_under_shared_parent),
		cmocka_unit_test(test_latched_pages_stay),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
