/*
 * latch.c - the hybrid latch (optimistic / shared / exclusive).
 *
 * Word layout: version in the high 32 bits, state in the low 32 bits
 * (bit 31 exclusive, bit 30 waiters, bits 0..29 shared count).
 *
 * Invariants:
 *  - The version changes only on exclusive unlock / downgrade, i.e. exactly
 *    when the protected data may have changed.  Shared holders never move it,
 *    so optimistic readers coexist with shared holders.
 *  - Exclusive and shared > 0 are never set together.
 *  - A sleeper sets WAITERS before sleeping on the low half (the state) and
 *    sleeps only while the state is exactly what it saw; every unlock that
 *    could let it proceed changes the state and, when WAITERS was set, clears
 *    it and wakes everyone.  So no wake-up is lost, and woken threads re-set
 *    WAITERS if they still have to wait.
 */
#include "leanstore/common.h"

#include <sched.h>

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
			   "the futex waits on the low half of the latch word");

#define LATCH_SPINS 128

static inline uint32_t
state_of(uint64_t w)
{
	return (uint32_t) w;
}

/* The state half of the word, as the futex sees it. */
static inline _Atomic uint32_t *
state_half(ls_latch *l)
{
	return (_Atomic uint32_t *) (void *) &l->word;
}

/*
 * Make sure WAITERS is set in *w (reloading on a race) and sleep while the
 * word's state is unchanged.  Returns without sleeping when the word moved.
 */
static void
sleep_on(ls_latch *l, uint64_t w)
{
	if ((state_of(w) & LS_LATCH_WAITERS) == 0)
	{
		uint64_t	nw = w | LS_LATCH_WAITERS;

		if (!atomic_compare_exchange_strong_explicit(&l->word, &w, nw,
													 memory_order_relaxed,
													 memory_order_relaxed))
			return;
		w = nw;
	}
	ls_futex_wait(state_half(l), state_of(w), 0);
}

void
ls_latch_init(ls_latch *l)
{
	atomic_store_explicit(&l->word, 0, memory_order_relaxed);
}

/*
 * An exclusive holder is there: spin a little, then give the CPU away once
 * (the holder may be a process waiting for a CPU: more busy backends than
 * cores) and look a last time.  Never sleeps: the caller may hold other
 * latches, and restarts when this fails.
 */
ls_status
ls_latch_optimistic_slow(ls_latch *l, uint64_t *v)
{
	for (int i = 0;; i++)
	{
		uint64_t	w = atomic_load_explicit(&l->word, memory_order_acquire);

		if ((w & LS_LATCH_EXCLUSIVE) == 0)
		{
			*v = w;
			return LS_OK;
		}
		if (i < LATCH_SPINS)
			ls_cpu_relax();
		else if (i == LATCH_SPINS)
			sched_yield();
		else
			return LS_RESTART;
	}
}

/* No exclusive holder: a shared hold can be added. */
static inline bool
shared_ok(uint64_t w)
{
	return (w & LS_LATCH_EXCLUSIVE) == 0;
}

/* Neither exclusive nor shared holders (WAITERS may be set). */
static inline bool
is_free(uint64_t w)
{
	return (state_of(w) & ~LS_LATCH_WAITERS) == 0;
}

/* CAS w -> w + 1 (one more shared holder); *w is reloaded on failure. */
static inline bool
cas_shared(ls_latch *l, uint64_t *w)
{
	return atomic_compare_exchange_weak_explicit(&l->word, w, *w + 1,
												 memory_order_acquire,
												 memory_order_relaxed);
}

/* CAS w -> w|EXCLUSIVE; the release fence orders the holder's data stores
 * after the lock bit for optimistic readers (seqlock writer side). */
static inline bool
cas_exclusive(ls_latch *l, uint64_t *w)
{
	if (atomic_compare_exchange_weak_explicit(&l->word, w, *w | LS_LATCH_EXCLUSIVE,
											  memory_order_acquire,
											  memory_order_relaxed))
	{
		atomic_thread_fence(memory_order_release);
		return true;
	}
	return false;
}

/*
 * Blocking lock in either mode: spin LATCH_SPINS times while the latch is
 * unavailable, then sleep on it; an exclusive CAS keeps WAITERS, so our
 * unlock wakes the others.
 */
static inline void
lock_blocking(ls_latch *l, bool exclusive)
{
	int			spins = 0;

	for (;;)
	{
		uint64_t	w = atomic_load_explicit(&l->word, memory_order_relaxed);

		if (exclusive ? is_free(w) : shared_ok(w))
		{
			if (exclusive ? cas_exclusive(l, &w) : cas_shared(l, &w))
				return;
			continue;
		}
		if (spins++ < LATCH_SPINS)
		{
			ls_cpu_relax();
			continue;
		}
		sleep_on(l, w);
		spins = 0;
	}
}

/*
 * End an exclusive hold: new version, state = new_state (0: unlocked,
 * 1: one shared holder); wake everybody if WAITERS was set.  Only WAITERS
 * can change under an exclusive holder, so a plain exchange suffices.
 */
static inline void
release_exclusive(ls_latch *l, uint32_t new_state)
{
	uint64_t	w = atomic_load_explicit(&l->word, memory_order_relaxed);
	uint64_t	nw = (((w >> 32) + 1) << 32) | new_state;

	w = atomic_exchange_explicit(&l->word, nw, memory_order_release);
	if (state_of(w) & LS_LATCH_WAITERS)
		ls_futex_wake(state_half(l), INT32_MAX);
}

bool
ls_latch_try_lock_shared(ls_latch *l)
{
	uint64_t	w = atomic_load_explicit(&l->word, memory_order_relaxed);

	while (shared_ok(w))
	{
		if (cas_shared(l, &w))
			return true;
	}
	return false;
}

void
ls_latch_lock_shared(ls_latch *l)
{
	lock_blocking(l, false);
}

void
ls_latch_unlock_shared(ls_latch *l)
{
	uint64_t	w = atomic_load_explicit(&l->word, memory_order_relaxed);
	uint64_t	nw;
	bool		wake;

	do
	{
		nw = w - 1;
		wake = (state_of(nw) & LS_LATCH_SHARED_MASK) == 0 &&
			(state_of(nw) & LS_LATCH_WAITERS) != 0;
		if (wake)
			nw &= ~(uint64_t) LS_LATCH_WAITERS;
	} while (!atomic_compare_exchange_weak_explicit(&l->word, &w, nw,
													memory_order_release,
													memory_order_relaxed));
	if (wake)
		ls_futex_wake(state_half(l), INT32_MAX);
}

bool
ls_latch_try_lock_exclusive(ls_latch *l)
{
	uint64_t	w = atomic_load_explicit(&l->word, memory_order_relaxed);

	while (is_free(w))
	{
		if (cas_exclusive(l, &w))
			return true;
	}
	return false;
}

void
ls_latch_lock_exclusive(ls_latch *l)
{
	lock_blocking(l, true);
}

void
ls_latch_unlock_exclusive(ls_latch *l)
{
	release_exclusive(l, 0);
}

void
ls_latch_downgrade_exclusive(ls_latch *l)
{
	release_exclusive(l, 1);
}

bool
ls_latch_try_upgrade_sole_shared(ls_latch *l)
{
	uint64_t	w = atomic_load_explicit(&l->word, memory_order_relaxed);

	while ((state_of(w) & ~LS_LATCH_WAITERS) == 1)
	{
		uint64_t	nw = (w - 1) | LS_LATCH_EXCLUSIVE;

		if (atomic_compare_exchange_weak_explicit(&l->word, &w, nw,
												  memory_order_acquire,
												  memory_order_relaxed))
		{
			atomic_thread_fence(memory_order_release);
			return true;
		}
	}
	return false;
}

ls_status
ls_latch_upgrade_shared(ls_latch *l, uint64_t v)
{
	uint64_t	w = atomic_load_explicit(&l->word, memory_order_relaxed);

	while ((w >> 32) == (v >> 32) && shared_ok(w))
	{
		if (cas_shared(l, &w))
			return LS_OK;
	}
	return LS_RESTART;
}

ls_status
ls_latch_upgrade_exclusive(ls_latch *l, uint64_t v)
{
	uint64_t	w = atomic_load_explicit(&l->word, memory_order_relaxed);

	while ((w >> 32) == (v >> 32) && is_free(w))
	{
		if (cas_exclusive(l, &w))
			return LS_OK;
	}
	return LS_RESTART;
}
