/*
 * test_buffer_mp.c - several processes over one pool much smaller than the
 * data: random reads and writes of page contents with verification while a
 * provider thread (in one worker) and inline eviction (in all) run.
 *
 * Each worker writes only its own slots (slot % workers == worker) so that it
 * can predict their counters; it reads every slot and checks the page's
 * self-verifying pattern, and that its own slots hold exactly what it wrote.
 * At the end the parent re-reads every slot and compares with the counters
 * the workers published.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "leanstore/buffer.h"
#include "tu.h"
#include "tu_parr.h"

#define WORKERS 4

typedef struct mp_shared
{
	ls_bm	   *bm;
	tu_parr    *pa;
	uint32_t	n;
	uint64_t	ops;
	bool		provider_process;	/* an extra process loops provider rounds */
	tu_barrier	start;
	_Atomic uint32_t done;
	_Atomic uint64_t counters[];	/* published by the owning worker */
} mp_shared;

static int
mp_work(int w, mp_shared *s)
{
	uint64_t	r = 0x9E3779B97F4A7C15ULL * (uint64_t) (w + 1);

	for (uint64_t k = 0; k < s->ops; k++)
	{
		uint32_t	i = (uint32_t) (ls_rand_next(&r) % s->n);
		uint64_t	c;
		ls_status	st;

		if (i % WORKERS == (uint32_t) w && ls_rand_next(&r) % 2 == 0)
		{
			uint64_t	before = atomic_load(&s->counters[i]);

			st = tu_parr_write(s->bm, s->pa, i, &c);
			if (st != LS_OK)
				fprintf(stderr, "worker %d: write of slot %u: %s\n", w, i, ls_status_str(st));
			TU_CHECK(st == LS_OK);
			TU_CHECK(c == before + 1);
			atomic_store(&s->counters[i], c);
			continue;
		}
		st = (k & 1) ? tu_parr_read(s->bm, s->pa, i, &c)
			: tu_parr_read_optimistic(s->bm, s->pa, i, &c);
		if (st != LS_OK)
			fprintf(stderr, "worker %d: read of slot %u: %s\n", w, i, ls_status_str(st));
		TU_CHECK(st == LS_OK);
		if (i % WORKERS == (uint32_t) w)
			TU_CHECK(c == atomic_load(&s->counters[i]));
		else					/* the owner publishes right after its write */
			TU_CHECK(c <= atomic_load(&s->counters[i]) + 1);
	}
	return 0;
}

/* The server's shape: a separate process calling provider rounds. */
static int
mp_provider_process(mp_shared *s)
{
	uint64_t	freed = 0;

	while (atomic_load(&s->done) < WORKERS)
	{
		uint64_t	f = ls_bm_provider_round(s->bm);

		freed += f;
		if (f == 0)
			usleep(100);
	}
	ls_bm_process_detach(s->bm);
	TU_CHECK(freed > 0);
	return 0;
}

static int
mp_worker(int w, void *arg)
{
	mp_shared  *s = arg;
	bool		provider = (w == 0 && !s->provider_process);
	int			rc;

	if (w == WORKERS)
		return mp_provider_process(s);

	if (provider && ls_bm_provider_start_thread(s->bm) != LS_OK)
		provider = false;
	tu_barrier_wait(&s->start);
	rc = mp_work(w, s);
	atomic_fetch_add(&s->done, 1);	/* also on failure: nobody waits forever */
	if (provider)
	{
		/* keep evicting until everybody is done */
		while (atomic_load(&s->done) < WORKERS)
			usleep(1000);
		ls_bm_provider_stop(s->bm);
	}
	ls_bm_process_detach(s->bm);
	return rc;
}

static void
run_mp(uint64_t frames, uint32_t n, uint64_t ops, bool direct, bool provider_process)
{
	tu_pool		pool;
	size_t		ss = sizeof(mp_shared) + n * sizeof(uint64_t);
	mp_shared  *s = tu_shared_region(ss);
	tu_parr    *pa = tu_shared_region(tu_parr_size(n));
	ls_bm_stats st;

	assert_int_equal(tu_pool_open(&pool, frames, (ls_bm_config) {.use_direct_io = direct, .write_batch = 8}),
					 LS_OK);
	s->bm = pool.bm;
	tu_parr_register_type();
	assert_int_equal(tu_parr_create(s->bm, pa, n), LS_OK);
	s->pa = pa;
	s->n = n;
	s->ops = ops;
	s->provider_process = provider_process;
	tu_barrier_init(&s->start, WORKERS);

	assert_int_equal(tu_fork_workers(WORKERS + (provider_process ? 1 : 0), mp_worker, s), 0);

	for (uint32_t i = 0; i < n; i++)
	{
		uint64_t	c;

		assert_int_equal(tu_parr_read(s->bm, pa, i, &c), LS_OK);
		assert_int_equal(c, atomic_load(&s->counters[i]));
	}
	ls_bm_get_stats(s->bm, &st);
	print_message("mp: frames=%lu pages=%u ops/worker=%lu reads=%lu writes=%lu evictions=%lu "
				  "hits=%lu restarts=%lu\n",
				  (unsigned long) frames, n, (unsigned long) ops, (unsigned long) st.reads,
				  (unsigned long) st.writes, (unsigned long) st.evictions,
				  (unsigned long) st.hits, (unsigned long) st.restarts);
	assert_true(st.evictions > n);
	assert_true(st.writes > 0);
	assert_int_equal(st.allocated_pages, n);

	tu_pool_close(&pool);
	tu_free_region(pa, tu_parr_size(n));
	tu_free_region(s, ss);
}

/* pool = 1/16 of the data */
static void
test_mp_random_rw(void **state)
{
	(void) state;
	uint32_t	n = (uint32_t) tu_scaled(1024);

	run_mp(LS_MAX(16, n / 16), n, tu_scaled(20000), true, false);
}

/* same with the provider in its own process (as a background worker) */
static void
test_mp_provider_process(void **state)
{
	(void) state;
	uint32_t	n = (uint32_t) tu_scaled(512);

	run_mp(LS_MAX(16, n / 16), n, tu_scaled(10000), true, true);
}

/* tiny pool: constant inline eviction, many processes missing together */
static void
test_mp_tiny_pool(void **state)
{
	(void) state;
	run_mp(12, (uint32_t) tu_scaled(200), tu_scaled(10000), false, false);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mp_random_rw),
		cmocka_unit_test(test_mp_provider_process),
		cmocka_unit_test(test_mp_tiny_pool),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
