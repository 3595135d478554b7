/*
 * test_hot_alloc.c - the hot tier's size-class allocator, seen through the
 * public contract (ls_hot_version_alloc / ls_hot_version_free / stats).
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

/* Block overhead: the version header plus the allocator's 16-byte prefix. */
#define OVERHEAD	(sizeof(ls_hot_version) + 16)

typedef struct fixture
{
	void	   *region;
	size_t		size;
	ls_hot	   *hot;
	ls_hot_ctx *ctx;
} fixture;

static fixture *
fixture_new(size_t size, uint32_t max_procs)
{
	fixture    *f = calloc(1, sizeof(*f));
	ls_hot_config cfg = {.max_tables = 16, .max_procs = max_procs};

	assert_non_null(f);
	f->size = size;
	f->region = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(f->region != MAP_FAILED);
	assert_int_equal(ls_hot_init(f->region, size, &cfg, &f->hot), LS_OK);
	assert_int_equal(ls_hot_attach(f->hot, 0, &f->ctx), LS_OK);
	return f;
}

static void
fixture_free(fixture *f)
{
	munmap(f->region, f->size);
	free(f);
}

static ls_hot_stats
stats(fixture *f)
{
	ls_hot_stats s;

	ls_hot_get_stats(f->hot, &s);
	return s;
}

static void
assert_balanced(fixture *f)
{
	ls_hot_stats s = stats(f);
	char		msg[256];
	uint64_t	used,
				heap;

	assert_int_equal(s.used_bytes + s.free_bytes + s.slack_bytes, s.heap_bytes);
	/* the cheap fill reads the same (nothing changes meanwhile) */
	ls_hot_get_fill(f->hot, &used, &heap);
	assert_int_equal(used, s.used_bytes);
	assert_int_equal(heap, s.heap_bytes);
	assert_true(s.heap_bytes <= s.region_bytes);
	/* the recount of pages, free lists and caches agrees with the counters */
	if (ls_hot_verify(f->hot, true, msg, sizeof(msg)) != LS_OK)
		fail_msg("%s", msg);
}

static void
test_init_rejects_bad_config(void **state)
{
	(void) state;
	ls_hot_config cfg = {.max_tables = 4, .max_procs = 4};
	ls_hot_config bad = {.max_tables = 0, .max_procs = 4};
	size_t		min = ls_hot_min_region_size(&cfg);
	void	   *r = malloc(min);
	ls_hot	   *hot;

	assert_non_null(r);
	assert_int_equal(ls_hot_init(r, min / 2, &cfg, &hot), LS_NO_SPACE);
	assert_int_equal(ls_hot_init(r, min, &bad, &hot), LS_INVALID);
	assert_int_equal(ls_hot_init(r, min, &cfg, &hot), LS_OK);

	ls_hot_ctx *ctx;
	ls_hot_ctx *other;

	assert_int_equal(ls_hot_attach(hot, 4, &ctx), LS_INVALID);
	assert_int_equal(ls_hot_attach(hot, 3, &ctx), LS_OK);
	assert_int_equal(ls_hot_attach(hot, 3, &other), LS_BUSY);
	ls_hot_detach(ctx);
	assert_int_equal(ls_hot_attach(hot, 3, &other), LS_OK);
	ls_hot_detach(other);
	free(r);
}

/* Every length lands in the smallest class that fits; used grows by it. */
static void
test_classes(void **state)
{
	(void) state;
	fixture    *f = fixture_new(64u << 20, 4);
	uint32_t	prev_size = 0;

	for (uint32_t len = 0; len <= LS_HOT_MAX_PAYLOAD; len += (len < 1024 ? 1 : 97))
	{
		ls_hot_version *v;
		uint64_t	before = stats(f).used_bytes;

		assert_int_equal(ls_hot_version_alloc(f->ctx, len, &v), LS_OK);
		uint64_t	size = stats(f).used_bytes - before;

		assert_true(size >= len + OVERHEAD);
		assert_true(size % 16 == 0);
		assert_int_equal(v->len, len);
		assert_true(atomic_load(&v->next_rowid) == LS_ROWID_INVALID);
		assert_true(atomic_load(&v->xmin_word) == 0 && atomic_load(&v->xmax_word) == 0);
		assert_null(ls_hot_version_older(v));
		/* monotone in len: a longer payload never gets a smaller block */
		assert_true(size >= prev_size);
		/* one class step (25%) up to 8 KiB; above, 64 KiB / n blocks */
		if (len + OVERHEAD <= 8192)
			assert_true(size <= (len + OVERHEAD) * 5 / 4 + 16);
		else
			assert_true(size <= 2 * (len + OVERHEAD));
		prev_size = (uint32_t) size;
		memset(v->data, 0x5a, len);
		ls_hot_version_free(f->ctx, v);
		assert_int_equal(stats(f).used_bytes, before);
	}

	ls_hot_version *v;

	assert_int_equal(ls_hot_version_alloc(f->ctx, LS_HOT_MAX_PAYLOAD, &v), LS_OK);
	ls_hot_version_free(f->ctx, v);
	assert_int_equal(ls_hot_version_alloc(f->ctx, LS_HOT_MAX_PAYLOAD + 1, &v), LS_TOO_LARGE);
	assert_int_equal(ls_hot_version_alloc(f->ctx, 8192, &v), LS_OK);
	ls_hot_version_free(f->ctx, v);
	assert_balanced(f);
	fixture_free(f);
}

/* A freed block is handed out again (LIFO per-process cache). */
static void
test_reuse_after_free(void **state)
{
	(void) state;
	fixture    *f = fixture_new(8u << 20, 4);
	ls_hot_version *a,
			   *b,
			   *c;

	assert_int_equal(ls_hot_version_alloc(f->ctx, 100, &a), LS_OK);
	assert_int_equal(ls_hot_version_alloc(f->ctx, 100, &b), LS_OK);
	assert_ptr_not_equal(a, b);
	ls_hot_version_free(f->ctx, a);
	assert_int_equal(ls_hot_version_alloc(f->ctx, 100, &c), LS_OK);
	assert_ptr_equal(a, c);
	ls_hot_version_free(f->ctx, b);
	ls_hot_version_free(f->ctx, c);
	assert_int_equal(stats(f).used_bytes, 0);
	assert_balanced(f);
	fixture_free(f);
}

/* Allocate len-byte versions until the tier is full; returns them. */
static ls_hot_version **
fill(fixture *f, uint32_t len, size_t *n)
{
	size_t		cap = 1024;
	ls_hot_version **vs = malloc(cap * sizeof(*vs));
	ls_status	st;

	*n = 0;
	for (;;)
	{
		if (*n == cap)
		{
			cap *= 2;
			vs = realloc(vs, cap * sizeof(*vs));
			assert_non_null(vs);
		}
		st = ls_hot_version_alloc(f->ctx, len, &vs[*n]);
		if (st != LS_OK)
			break;
		memset(vs[*n]->data, (int) (*n & 0xff), len);
		(*n)++;
	}
	assert_int_equal(st, LS_NO_SPACE);
	return vs;
}

static void
release(fixture *f, ls_hot_version **vs, size_t n, uint32_t len)
{
	for (size_t i = 0; i < n; i++)
	{
		/* nothing overwrote a live block while the tier was full */
		for (uint32_t k = 0; k < len; k += 61)
			assert_int_equal(vs[i]->data[k], (uint8_t) (i & 0xff));
		ls_hot_version_free(f->ctx, vs[i]);
	}
	free(vs);
}

/*
 * Exhaustion: LS_NO_SPACE, nothing corrupted, stats balanced; after freeing
 * everything the whole heap is reusable by another class (pages go back).
 */
static void
test_exhaustion_and_recovery(void **state)
{
	(void) state;
	fixture    *f = fixture_new(4u << 20, 4);
	ls_hot_stats s0 = stats(f);
	size_t		n_small,
				n_big,
				n_small2;
	ls_hot_version **vs;
	uint64_t	pages = s0.heap_bytes / 65536;

	assert_int_equal(s0.used_bytes, 0);
	assert_int_equal(s0.free_bytes, s0.heap_bytes);

	vs = fill(f, 100, &n_small);	/* 164 bytes -> 192-byte class */
	assert_int_equal(n_small, pages * (65536 / 192));
	assert_int_equal(stats(f).used_bytes, n_small * 192);
	assert_balanced(f);
	release(f, vs, n_small, 100);
	assert_int_equal(stats(f).used_bytes, 0);

	vs = fill(f, 8000, &n_big);	/* 8064 bytes -> 8192-byte class */
	assert_int_equal(n_big, pages * 8);
	assert_int_equal(stats(f).free_bytes, 0);
	assert_balanced(f);
	/* free one block: exactly one allocation of that class fits again */
	ls_hot_version *extra;

	ls_hot_version_free(f->ctx, vs[n_big - 1]);
	assert_int_equal(ls_hot_version_alloc(f->ctx, 8000, &extra), LS_OK);
	memset(extra->data, (int) ((n_big - 1) & 0xff), 8000);
	vs[n_big - 1] = extra;
	assert_int_equal(ls_hot_version_alloc(f->ctx, 8000, &extra), LS_NO_SPACE);
	release(f, vs, n_big, 8000);

	vs = fill(f, 100, &n_small2);
	assert_int_equal(n_small2, n_small);
	release(f, vs, n_small2, 100);

	ls_hot_detach(f->ctx);
	ls_hot_stats s = stats(f);

	assert_int_equal(s.used_bytes, 0);
	assert_int_equal(s.slack_bytes, 0);
	assert_int_equal(s.free_bytes, s.heap_bytes);
	fixture_free(f);
}

/*
 * Free bytes stranded in another class's pages: fill the heap with one
 * class, free all but one block of each page (no page goes back to the
 * pool), then ask for a smaller object.  It gets a borrowed block of the
 * larger class instead of LS_NO_SPACE (hotfull-spill's final VACUUM failed
 * with "hot tier is full" at half of the tier in use); the block keeps its
 * page's class, so freeing it and the recount stay exact.  First classes up
 * to eight times the size, then any: a request fails only when no larger
 * class holds a free block.
 */
static void
test_borrow_from_larger_class(void **state)
{
	(void) state;
	fixture    *f = fixture_new(4u << 20, 4);
	size_t		n;
	ls_hot_version **vs = fill(f, 1000, &n);	/* 1000 + overhead -> 1280-byte class */
	uint64_t	pages = stats(f).heap_bytes / 65536;
	uint32_t	per_page = 65536 / 1280;
	ls_hot_version *small,
			   *small2,
			   *big;
	uint64_t	before;
	size_t		kept = 0;

	assert_int_equal(n, pages * per_page);
	/* fill() handed out blocks page after page: keep the first of each */
	for (size_t i = 0; i < n; i++)
	{
		if (i % per_page == 0)
			vs[kept++] = vs[i];
		else
			ls_hot_version_free(f->ctx, vs[i]);
	}
	ls_hot_detach(f->ctx);		/* the freed blocks back to their pages */
	assert_int_equal(ls_hot_attach(f->hot, 0, &f->ctx), LS_OK);
	assert_balanced(f);

	/* no free page and no block of the small class anywhere */
	before = stats(f).used_bytes;
	assert_int_equal(ls_hot_version_alloc(f->ctx, 150, &small), LS_OK);
	assert_int_equal(stats(f).used_bytes - before, 1280);
	memset(small->data, 0x5a, 150);
	assert_balanced(f);
	/*
	 * more than eight times the size apart: borrowed too, once nothing
	 * closer has a block (a 1280-byte block for a 40-byte object)
	 */
	assert_int_equal(ls_hot_version_alloc(f->ctx, 40, &big), LS_OK);
	assert_int_equal(stats(f).used_bytes - before, 2 * 1280);
	memset(big->data, 0x6b, 40);
	assert_balanced(f);
	/* no larger class has a block: nothing to borrow */
	assert_int_equal(ls_hot_version_alloc(f->ctx, 2000, &small2), LS_NO_SPACE);
	ls_hot_version_free(f->ctx, big);
	ls_hot_version_free(f->ctx, small);
	assert_int_equal(stats(f).used_bytes, before);
	assert_balanced(f);

	/* a request fails only once every free block is taken */
	{
		size_t		cap = (size_t) pages * (per_page - 1);
		ls_hot_version **tiny = calloc(cap + 1, sizeof(*tiny));
		size_t		got = 0;

		assert_non_null(tiny);
		while (got <= cap && ls_hot_version_alloc(f->ctx, 40, &tiny[got]) == LS_OK)
			got++;
		assert_int_equal(got, cap);
		assert_int_equal(stats(f).used_bytes, (uint64_t) n * 1280);
		assert_balanced(f);
		for (size_t i = 0; i < got; i++)
			ls_hot_version_free(f->ctx, tiny[i]);
		free(tiny);
		assert_int_equal(stats(f).used_bytes, before);
	}
	for (size_t i = 0; i < kept; i++)
		ls_hot_version_free(f->ctx, vs[i]);
	free(vs);
	ls_hot_detach(f->ctx);
	assert_int_equal(stats(f).used_bytes, 0);
	assert_int_equal(stats(f).free_bytes, stats(f).heap_bytes);
	fixture_free(f);
}

/*
 * Blocks allocated by one context and freed by another return to the right
 * pages; detach gives every cached block back.
 */
static void
test_cross_context_accounting(void **state)
{
	(void) state;
	fixture    *f = fixture_new(8u << 20, 4);
	ls_hot_ctx *other;
	ls_hot_version *vs[3000];
	uint64_t	rng = 42;
	uint64_t	expect_used = 0;

	assert_int_equal(ls_hot_attach(f->hot, 1, &other), LS_OK);
	for (int i = 0; i < 3000; i++)
	{
		uint32_t	len = (uint32_t) (ls_rand_next(&rng) % 3000);
		uint64_t	before = stats(f).used_bytes;

		assert_int_equal(ls_hot_version_alloc(i % 2 ? f->ctx : other, len, &vs[i]), LS_OK);
		expect_used += stats(f).used_bytes - before;
		assert_balanced(f);
	}
	assert_int_equal(stats(f).used_bytes, expect_used);
	for (int i = 0; i < 3000; i++)
		ls_hot_version_free(i % 3 ? f->ctx : other, vs[i]);
	assert_int_equal(stats(f).used_bytes, 0);
	assert_true(stats(f).free_bytes < stats(f).heap_bytes);	/* caches, slack */
	ls_hot_detach(other);
	ls_hot_detach(f->ctx);
	assert_int_equal(stats(f).free_bytes, stats(f).heap_bytes);
	assert_int_equal(stats(f).slack_bytes, 0);
	fixture_free(f);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_rejects_bad_config),
		cmocka_unit_test(test_borrow_from_larger_class),
		cmocka_unit_test(test_classes),
		cmocka_unit_test(test_reuse_after_free),
		cmocka_unit_test(test_exhaustion_and_recovery),
		cmocka_unit_test(test_cross_context_accounting),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
