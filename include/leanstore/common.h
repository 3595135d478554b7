/*
 * leanstore/common.h - status codes, atomics, futex waits, hybrid latch, CRC32C.
 *
 * Core contract shared by every module below src/pg.  Nothing here includes a
 * PostgreSQL header: the core is built and unit-tested without a server and is
 * used by several processes at once over one shared mapping (PostgreSQL shared
 * memory in the server, an anonymous MAP_SHARED region in the tests).
 *
 * Invariants:
 *  - Every object in this header may live in shared memory and be used by
 *    several processes concurrently.  Waits use futexes on shared memory
 *    (never FUTEX_PRIVATE_FLAG), so they work across fork().
 *  - Nothing here throws or longjmps.  Failures are ls_status codes.
 */
#ifndef LEANSTORE_COMMON_H
#define LEANSTORE_COMMON_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ------------------------------------------------------------------------
 * Status codes
 * ------------------------------------------------------------------------ */
typedef enum ls_status
{
	LS_OK = 0,
	LS_RESTART,					/* optimistic validation failed: unwind and retry
								 * the whole operation from its start */
	LS_NOT_FOUND,
	LS_EXISTS,					/* key already present */
	LS_NO_SPACE,				/* page, pool or memory tier is full */
	LS_TOO_LARGE,				/* key/value/row larger than the module accepts */
	LS_IO_ERROR,				/* read/write/open failed; errno is preserved */
	LS_CHECKSUM,				/* page checksum mismatch on read */
	LS_NO_MEMORY,
	LS_INVALID,					/* invalid argument or configuration */
	LS_CORRUPT,					/* an invariant check (verify) failed */
	LS_STOP,					/* a scan callback asked to stop early */
	LS_BUSY,					/* a try-operation could not get what it needed */
} ls_status;

/* Human-readable name of a status code (static string). */
const char *ls_status_str(ls_status st);

/* ------------------------------------------------------------------------
 * Assertions
 *
 * LS_ASSERT(cond) states a precondition or invariant as a check.  It is on
 * when LS_ASSERTS is defined (the unit and sanitizer builds, and the server
 * build that test/run uses: `make LS_ASSERTS=1`) and compiles to nothing in
 * the release build that bench/run uses (the condition is not evaluated, so
 * it must have no side effects).  A failed check prints the condition and
 * its place to stderr (the server log) and aborts the process: in the
 * server the postmaster then restarts every backend, as after a failed
 * Assert in a PostgreSQL built with --enable-cassert.
 * ------------------------------------------------------------------------ */
#if defined(__GNUC__) || defined(__clang__)
#define LS_NORETURN __attribute__((noreturn))
#else
#define LS_NORETURN
#endif

LS_NORETURN void ls_assert_fail(const char *cond, const char *file, int line);

#ifdef LS_ASSERTS
#define LS_ASSERTS_ON 1
#define LS_ASSERT(cond) \
	(__builtin_expect(!!(cond), 1) ? (void) 0 : \
	 ls_assert_fail(#cond, __FILE__, __LINE__))
#else
#define LS_ASSERTS_ON 0
#define LS_ASSERT(cond) ((void) sizeof(!(cond)))
#endif

/* ------------------------------------------------------------------------
 * Small utilities
 * ------------------------------------------------------------------------ */
#define LS_LIKELY(x)	__builtin_expect(!!(x), 1)
#define LS_UNLIKELY(x)	__builtin_expect(!!(x), 0)
#define LS_CACHELINE	64
#define LS_ALIGN_UP(x, a)	(((x) + ((a) - 1)) & ~((uint64_t) (a) - 1))
#define LS_MIN(a, b)	((a) < (b) ? (a) : (b))
#define LS_MAX(a, b)	((a) > (b) ? (a) : (b))

static inline void
ls_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	atomic_signal_fence(memory_order_seq_cst);
#endif
}

/*
 * *a = max(*a, v) / min(*a, v), atomically: a CAS loop that gives up as
 * soon as *a is already past v (another process raised or lowered it
 * further meanwhile).  Sequentially consistent.
 */
static inline void
ls_atomic_raise_u64(_Atomic uint64_t *a, uint64_t v)
{
	uint64_t	cur = atomic_load(a);

	while (cur < v && !atomic_compare_exchange_weak(a, &cur, v))
		;
}

static inline void
ls_atomic_raise_u32(_Atomic uint32_t *a, uint32_t v)
{
	uint32_t	cur = atomic_load(a);

	while (cur < v && !atomic_compare_exchange_weak(a, &cur, v))
		;
}

static inline void
ls_atomic_lower_u32(_Atomic uint32_t *a, uint32_t v)
{
	uint32_t	cur = atomic_load(a);

	while (cur > v && !atomic_compare_exchange_weak(a, &cur, v))
		;
}

/* Big-endian encoding of 64-bit integers (rowids are keys compared by memcmp). */
static inline void
ls_put_be64(uint8_t *dst, uint64_t v)
{
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	/* one load/store and a byte swap: keys are decoded once per entry a
	 * range scan meets */
	v = __builtin_bswap64(v);
	memcpy(dst, &v, sizeof(v));
#else
	for (int i = 7; i >= 0; i--)
	{
		dst[i] = (uint8_t) (v & 0xff);
		v >>= 8;
	}
#endif
}

static inline uint64_t
ls_get_be64(const uint8_t *src)
{
	uint64_t	v = 0;

#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	memcpy(&v, src, sizeof(v));
	v = __builtin_bswap64(v);
#else
	for (int i = 0; i < 8; i++)
		v = (v << 8) | src[i];
#endif
	return v;
}

/* Fast per-process pseudo random numbers (xorshift64*); state is caller-owned. */
static inline uint64_t
ls_rand_next(uint64_t *state)
{
	uint64_t	x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1DULL;
}

/* Monotonic clock in nanoseconds. */
uint64_t	ls_now_ns(void);

/*
 * Write all len bytes of buf at off (pwrite until done, EINTR retried).
 * LS_IO_ERROR with errno kept (EIO when the device wrote nothing).
 */
ls_status	ls_pwrite_full(int fd, const void *buf, size_t len, uint64_t off);

/* ------------------------------------------------------------------------
 * Futex waits on shared memory (cross-process)
 * ------------------------------------------------------------------------ */

/* Sleep while *addr == expected (or until a wake-up / timeout_ns, 0 = none). */
void		ls_futex_wait(_Atomic uint32_t *addr, uint32_t expected, uint64_t timeout_ns);
/* Wake up to n waiters on addr (INT32_MAX = all). */
void		ls_futex_wake(_Atomic uint32_t *addr, int n);

/* ------------------------------------------------------------------------
 * A small cross-process mutex (futex based) for short, rare critical
 * sections (free lists, in-flight I/O table partitions).  Never held while
 * waiting for I/O of another page or while calling back into PostgreSQL.
 * ------------------------------------------------------------------------ */
typedef struct ls_mutex
{
	_Atomic uint32_t state;		/* 0 free, 1 locked, 2 locked with waiters */
} ls_mutex;

void		ls_mutex_init(ls_mutex *m);
void		ls_mutex_lock(ls_mutex *m);
bool		ls_mutex_trylock(ls_mutex *m);
void		ls_mutex_unlock(ls_mutex *m);

/* ------------------------------------------------------------------------
 * Hybrid latch: one 64-bit word = version (high 32 bits) | state (low 32).
 *
 * state: bit 31 exclusive, bit 30 waiters present, bits 0..29 shared count.
 * The version is incremented on every exclusive unlock, so an optimistic
 * reader that saw version v and later sees v again (with no exclusive holder)
 * knows nobody modified the protected data in between.  Waiters sleep on the
 * low 32-bit half (the state), which changes on every unlock.
 *
 * Optimistic readers must treat everything they read as possibly torn until
 * ls_latch_validate() succeeds: bound every index and length they derive from
 * protected data before dereferencing it.
 * ------------------------------------------------------------------------ */
typedef struct ls_latch
{
	_Atomic uint64_t word;
} ls_latch;

#define LS_LATCH_EXCLUSIVE	(1u << 31)
#define LS_LATCH_WAITERS	(1u << 30)
#define LS_LATCH_SHARED_MASK ((1u << 30) - 1)

void		ls_latch_init(ls_latch *l);

/* Out-of-line part of ls_latch_optimistic (short spin while exclusive). */
ls_status	ls_latch_optimistic_slow(ls_latch *l, uint64_t *v);

/*
 * Optimistic read: returns LS_OK and the current word in *v when the latch
 * is not held exclusively (after a short spin), LS_RESTART otherwise.
 * Inline: this and ls_latch_validate are on every B-tree descent step.
 */
static inline ls_status
ls_latch_optimistic(ls_latch *l, uint64_t *v)
{
	uint64_t	w = atomic_load_explicit(&l->word, memory_order_acquire);

	if (LS_LIKELY((w & LS_LATCH_EXCLUSIVE) == 0))
	{
		*v = w;
		return LS_OK;
	}
	return ls_latch_optimistic_slow(l, v);
}

/*
 * true when no exclusive holder has come and gone since *v was taken, and
 * none holds it now.  The acquire fence keeps the caller's preceding
 * (possibly torn) data reads before the re-read of the word.
 */
static inline bool
ls_latch_validate(const ls_latch *l, uint64_t v)
{
	uint64_t	w;

	atomic_thread_fence(memory_order_acquire);
	w = atomic_load_explicit(&((ls_latch *) l)->word, memory_order_relaxed);
	return (w >> 32) == (v >> 32) && (w & LS_LATCH_EXCLUSIVE) == 0;
}

void		ls_latch_lock_shared(ls_latch *l);
bool		ls_latch_try_lock_shared(ls_latch *l);
void		ls_latch_unlock_shared(ls_latch *l);

void		ls_latch_lock_exclusive(ls_latch *l);
bool		ls_latch_try_lock_exclusive(ls_latch *l);
void		ls_latch_unlock_exclusive(ls_latch *l);

/*
 * Turn an optimistic read (version v) into a shared / exclusive hold without
 * a gap: fails (LS_RESTART) when the version moved on or the latch cannot be
 * taken right now.  Exclusive upgrade never blocks.
 */
ls_status	ls_latch_upgrade_shared(ls_latch *l, uint64_t v);
ls_status	ls_latch_upgrade_exclusive(ls_latch *l, uint64_t v);

/*
 * Shared -> exclusive, only when the caller is the sole shared holder
 * (never blocks, so two holders trying at once cannot deadlock).
 */
bool		ls_latch_try_upgrade_sole_shared(ls_latch *l);
/*
 * Exclusive -> shared without a gap.  The version moves on (the caller
 * changed the data) and waiting shared lockers are woken.
 */
void		ls_latch_downgrade_exclusive(ls_latch *l);

/* Version part of a word (for tests and diagnostics). */
static inline uint32_t
ls_latch_version_of(uint64_t word)
{
	return (uint32_t) (word >> 32);
}

/* ------------------------------------------------------------------------
 * CRC32C (Castagnoli), hardware accelerated when the CPU has SSE4.2.
 * ------------------------------------------------------------------------ */
uint32_t	ls_crc32c(uint32_t crc, const void *data, size_t len);
/* The portable table implementation (same results; exposed for tests). */
uint32_t	ls_crc32c_sw(uint32_t crc, const void *data, size_t len);
/* true when ls_crc32c uses the SSE4.2 instruction in this process. */
bool		ls_crc32c_hw(void);

#endif							/* LEANSTORE_COMMON_H */
