/*
 * util.c - status names, the monotonic clock, whole writes, futex waits
 * and ls_mutex.
 *
 * Futexes are used without FUTEX_PRIVATE_FLAG: the words live in memory
 * shared by several processes (PostgreSQL backends, forked test workers), and
 * a private futex would only ever be woken from the same process.
 */
#include "leanstore/common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

const char *
ls_status_str(ls_status st)
{
	switch (st)
	{
		case LS_OK:
			return "ok";
		case LS_RESTART:
			return "restart";
		case LS_NOT_FOUND:
			return "not found";
		case LS_EXISTS:
			return "already exists";
		case LS_NO_SPACE:
			return "no space";
		case LS_TOO_LARGE:
			return "too large";
		case LS_IO_ERROR:
			return "I/O error";
		case LS_CHECKSUM:
			return "page checksum mismatch";
		case LS_NO_MEMORY:
			return "out of memory";
		case LS_INVALID:
			return "invalid argument";
		case LS_CORRUPT:
			return "corrupt";
		case LS_STOP:
			return "stopped";
		case LS_BUSY:
			return "busy";
	}
	return "unknown status";
}

void
ls_assert_fail(const char *cond, const char *file, int line)
{
	fprintf(stderr, "leanstore: assertion failed: %s (%s:%d)\n", cond, file, line);
	fflush(stderr);
	abort();
}

uint64_t
ls_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

ls_status
ls_pwrite_full(int fd, const void *buf, size_t len, uint64_t off)
{
	size_t		done = 0;

	while (done < len)
	{
		ssize_t		r = pwrite(fd, (const char *) buf + done, len - done, (off_t) (off + done));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
		{
			if (r == 0)
				errno = EIO;
			return LS_IO_ERROR;
		}
		done += (size_t) r;
	}
	return LS_OK;
}

void
ls_futex_wait(_Atomic uint32_t *addr, uint32_t expected, uint64_t timeout_ns)
{
	struct timespec ts;
	struct timespec *tsp = NULL;

	if (timeout_ns != 0)
	{
		ts.tv_sec = (time_t) (timeout_ns / 1000000000ULL);
		ts.tv_nsec = (long) (timeout_ns % 1000000000ULL);
		tsp = &ts;
	}
	/*
	 * The kernel compares *addr with expected atomically with going to sleep,
	 * so a wake-up issued after the caller's last check is never lost.
	 * EAGAIN (value changed), EINTR and ETIMEDOUT all mean "re-check".
	 */
	(void) syscall(SYS_futex, (uint32_t *) addr, FUTEX_WAIT, expected, tsp, NULL, 0);
}

void
ls_futex_wake(_Atomic uint32_t *addr, int n)
{
	(void) syscall(SYS_futex, (uint32_t *) addr, FUTEX_WAKE, n, NULL, NULL, 0);
}

/*
 * ls_mutex: the three-state futex mutex (0 free, 1 locked, 2 locked and
 * someone may be sleeping).  Unlock only enters the kernel in state 2.
 */
void
ls_mutex_init(ls_mutex *m)
{
	atomic_store_explicit(&m->state, 0, memory_order_relaxed);
}

bool
ls_mutex_trylock(ls_mutex *m)
{
	uint32_t	expected = 0;

	return atomic_compare_exchange_strong_explicit(&m->state, &expected, 1,
												   memory_order_acquire,
												   memory_order_relaxed);
}

void
ls_mutex_lock(ls_mutex *m)
{
	uint32_t	c = 0;

	if (atomic_compare_exchange_strong_explicit(&m->state, &c, 1,
												memory_order_acquire,
												memory_order_relaxed))
		return;
	/* brief spin: critical sections are short */
	for (int i = 0; i < 100; i++)
	{
		ls_cpu_relax();
		c = 0;
		if (atomic_load_explicit(&m->state, memory_order_relaxed) == 0 &&
			atomic_compare_exchange_strong_explicit(&m->state, &c, 1,
													memory_order_acquire,
													memory_order_relaxed))
			return;
	}
	/* from now on we may sleep, so the lock must say "maybe waiters" */
	c = atomic_exchange_explicit(&m->state, 2, memory_order_acquire);
	while (c != 0)
	{
		ls_futex_wait(&m->state, 2, 0);
		c = atomic_exchange_explicit(&m->state, 2, memory_order_acquire);
	}
}

void
ls_mutex_unlock(ls_mutex *m)
{
	if (atomic_exchange_explicit(&m->state, 0, memory_order_release) == 2)
		ls_futex_wake(&m->state, 1);
}
