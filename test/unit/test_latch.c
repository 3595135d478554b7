/* test_latch.c - hybrid latch modes, upgrades, versions, cross-process use. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <sched.h>
#include <unistd.h>

#include "leanstore/common.h"
#include "tu.h"

static uint32_t
shared_count(ls_latch *l)
{
	return (uint32_t) atomic_load(&l->word) & LS_LATCH_SHARED_MASK;
}

static void
test_exclusive_moves_version(void **state)
{
	(void) state;
	ls_latch	l;
	uint64_t	v,
				v2;

	ls_latch_init(&l);
	assert_int_equal(ls_latch_optimistic(&l, &v), LS_OK);
	assert_true(ls_latch_validate(&l, v));

	ls_latch_lock_exclusive(&l);
	/* held exclusively: optimistic readers fail, validation fails */
	assert_int_equal(ls_latch_optimistic(&l, &v2), LS_RESTART);
	assert_false(ls_latch_validate(&l, v));
	assert_false(ls_latch_try_lock_exclusive(&l));
	assert_false(ls_latch_try_lock_shared(&l));
	ls_latch_unlock_exclusive(&l);

	/* released: the old version stays invalid, a new read is valid */
	assert_false(ls_latch_validate(&l, v));
	assert_int_equal(ls_latch_optimistic(&l, &v2), LS_OK);
	assert_int_equal(ls_latch_version_of(v2), ls_latch_version_of(v) + 1);
	assert_true(ls_latch_validate(&l, v2));

	assert_true(ls_latch_try_lock_exclusive(&l));
	ls_latch_unlock_exclusive(&l);
	assert_int_equal(ls_latch_version_of(atomic_load(&l.word)), ls_latch_version_of(v) + 2);
}

static void
test_shared_counts(void **state)
{
	(void) state;
	ls_latch	l;
	uint64_t	v;

	ls_latch_init(&l);
	assert_int_equal(ls_latch_optimistic(&l, &v), LS_OK);
	ls_latch_lock_shared(&l);
	assert_true(ls_latch_try_lock_shared(&l));
	ls_latch_lock_shared(&l);
	assert_int_equal(shared_count(&l), 3);
	/* shared holders do not invalidate optimistic readers */
	assert_true(ls_latch_validate(&l, v));
	assert_false(ls_latch_try_lock_exclusive(&l));
	assert_int_equal(ls_latch_upgrade_exclusive(&l, v), LS_RESTART);
	assert_false(ls_latch_try_upgrade_sole_shared(&l));
	ls_latch_unlock_shared(&l);
	ls_latch_unlock_shared(&l);
	assert_int_equal(shared_count(&l), 1);
	/* now we are the only holder */
	assert_true(ls_latch_try_upgrade_sole_shared(&l));
	assert_int_equal(shared_count(&l), 0);
	assert_false(ls_latch_validate(&l, v));
	ls_latch_downgrade_exclusive(&l);
	assert_int_equal(shared_count(&l), 1);
	assert_false(ls_latch_validate(&l, v));	/* downgrade moved the version */
	ls_latch_unlock_shared(&l);
	assert_int_equal(atomic_load(&l.word) & 0xffffffffu, 0);
	assert_int_equal(ls_latch_version_of(atomic_load(&l.word)), ls_latch_version_of(v) + 1);
}

static void
test_upgrades(void **state)
{
	(void) state;
	ls_latch	l;
	uint64_t	v,
				old;

	ls_latch_init(&l);
	/* optimistic -> exclusive */
	assert_int_equal(ls_latch_optimistic(&l, &v), LS_OK);
	assert_int_equal(ls_latch_upgrade_exclusive(&l, v), LS_OK);
	assert_false(ls_latch_try_lock_shared(&l));
	ls_latch_unlock_exclusive(&l);
	/* the same version cannot be upgraded again: it moved on */
	assert_int_equal(ls_latch_upgrade_exclusive(&l, v), LS_RESTART);
	assert_int_equal(ls_latch_upgrade_shared(&l, v), LS_RESTART);

	/* optimistic -> shared */
	old = v;
	assert_int_equal(ls_latch_optimistic(&l, &v), LS_OK);
	assert_int_not_equal(ls_latch_version_of(v), ls_latch_version_of(old));
	assert_int_equal(ls_latch_upgrade_shared(&l, v), LS_OK);
	assert_int_equal(shared_count(&l), 1);
	/* exclusive upgrade fails while someone (here: us) holds it shared */
	assert_int_equal(ls_latch_upgrade_exclusive(&l, v), LS_RESTART);
	/* another optimistic read may still upgrade to shared */
	assert_int_equal(ls_latch_upgrade_shared(&l, v), LS_OK);
	assert_int_equal(shared_count(&l), 2);
	ls_latch_unlock_shared(&l);
	ls_latch_unlock_shared(&l);
	assert_true(ls_latch_validate(&l, v));

	/* upgrade fails while another holds it exclusively */
	ls_latch_lock_exclusive(&l);
	assert_int_equal(ls_latch_upgrade_shared(&l, v), LS_RESTART);
	assert_int_equal(ls_latch_upgrade_exclusive(&l, v), LS_RESTART);
	ls_latch_unlock_exclusive(&l);
}

/* ---- cross-process contention ------------------------------------------ */

typedef struct latch_shared
{
	ls_latch	latch;
	uint64_t	a;				/* a == b whenever the latch is free */
	uint64_t	pad[7];
	uint64_t	b;
	_Atomic uint64_t torn_validated;	/* must stay 0 */
	_Atomic uint64_t reads_validated;
	_Atomic uint64_t shared_reads;
	_Atomic uint32_t writers_done;
} latch_shared;

#define N_WRITERS 4

static int
latch_writer(int w, void *arg)
{
	latch_shared *s = arg;
	uint64_t	n = tu_scaled(40000);

	(void) w;
	for (uint64_t i = 0; i < n; i++)
	{
		ls_latch_lock_exclusive(&s->latch);
		/* two separate stores: a reader in between sees a != b */
		s->a++;
		atomic_signal_fence(memory_order_seq_cst);
		if ((i & 255) == 0)
			sched_yield();
		s->b++;
		ls_latch_unlock_exclusive(&s->latch);
	}
	atomic_fetch_add(&s->writers_done, 1);
	return 0;
}

static int
latch_reader(int w, void *arg)
{
	latch_shared *s = arg;
	uint64_t	i = 0;

	(void) w;
	while (atomic_load(&s->writers_done) < N_WRITERS)
	{
		if ((i++ & 7) == 0)
		{
			/* shared: must never see a torn pair */
			ls_latch_lock_shared(&s->latch);
			TU_CHECK(s->a == s->b);
			ls_latch_unlock_shared(&s->latch);
			atomic_fetch_add(&s->shared_reads, 1);
			continue;
		}
		uint64_t	v;

		if (ls_latch_optimistic(&s->latch, &v) != LS_OK)
			continue;
		uint64_t	a = *(volatile uint64_t *) &s->a;
		uint64_t	b = *(volatile uint64_t *) &s->b;

		if (ls_latch_validate(&s->latch, v))
		{
			atomic_fetch_add(&s->reads_validated, 1);
			if (a != b)
				atomic_fetch_add(&s->torn_validated, 1);
		}
	}
	return 0;
}

static int
latch_worker(int w, void *arg)
{
	return w < N_WRITERS ? latch_writer(w, arg) : latch_reader(w, arg);
}

static void
test_multiprocess_contention(void **state)
{
	(void) state;
	latch_shared *s = tu_shared_region(sizeof(*s));

	ls_latch_init(&s->latch);
	assert_int_equal(tu_fork_workers(N_WRITERS + 2, latch_worker, s), 0);
	assert_int_equal(s->a, N_WRITERS * tu_scaled(40000));
	assert_int_equal(s->b, s->a);
	assert_int_equal(atomic_load(&s->torn_validated), 0);
	assert_true(atomic_load(&s->reads_validated) > 0);
	assert_true(atomic_load(&s->shared_reads) > 0);
	/* every exclusive hold moved the version once */
	assert_int_equal(ls_latch_version_of(atomic_load(&s->latch.word)), (uint32_t) s->a);
	assert_int_equal(atomic_load(&s->latch.word) & 0xffffffffu, 0);
	tu_free_region(s, sizeof(*s));
}

/* A sleeper on the latch is woken when the exclusive holder leaves. */
static int
blocked_worker(int w, void *arg)
{
	latch_shared *s = arg;

	if (w == 0)
	{
		ls_latch_lock_exclusive(&s->latch);
		atomic_store(&s->writers_done, 1);
		usleep(50000);			/* others spin out and sleep on the futex */
		s->a = s->b = 42;
		ls_latch_unlock_exclusive(&s->latch);
		return 0;
	}
	while (atomic_load(&s->writers_done) == 0)
		sched_yield();
	if (w == 1)
	{
		ls_latch_lock_exclusive(&s->latch);
		TU_CHECK(s->a == 42);
		ls_latch_unlock_exclusive(&s->latch);
	}
	else
	{
		ls_latch_lock_shared(&s->latch);
		TU_CHECK(s->b == 42);
		ls_latch_unlock_shared(&s->latch);
	}
	return 0;
}

static void
test_sleepers_woken(void **state)
{
	(void) state;
	latch_shared *s = tu_shared_region(sizeof(*s));

	ls_latch_init(&s->latch);
	assert_int_equal(tu_fork_workers(4, blocked_worker, s), 0);
	assert_int_equal(atomic_load(&s->latch.word) & 0xffffffffu, 0);
	assert_int_equal(ls_latch_version_of(atomic_load(&s->latch.word)), 2);
	tu_free_region(s, sizeof(*s));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exclusive_moves_version),
		cmocka_unit_test(test_shared_counts),
		cmocka_unit_test(test_upgrades),
		cmocka_unit_test(test_multiprocess_contention),
		cmocka_unit_test(test_sleepers_woken),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
