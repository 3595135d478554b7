/* test_common.c - status names, clock, CRC32C, futex and ls_mutex. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "leanstore/common.h"
#include "tu.h"

static void
test_status_str(void **state)
{
	(void) state;
	for (int a = LS_OK; a <= LS_BUSY; a++)
	{
		assert_non_null(ls_status_str((ls_status) a));
		assert_string_not_equal(ls_status_str((ls_status) a), "unknown status");
		for (int b = a + 1; b <= LS_BUSY; b++)
			assert_string_not_equal(ls_status_str((ls_status) a), ls_status_str((ls_status) b));
	}
	assert_string_equal(ls_status_str((ls_status) 999), "unknown status");
	assert_string_equal(ls_status_str(LS_CHECKSUM), "page checksum mismatch");
}

static void
test_now_monotonic(void **state)
{
	(void) state;
	uint64_t	a = ls_now_ns();

	usleep(2000);
	uint64_t	b = ls_now_ns();

	assert_true(b > a);
	assert_true(b - a >= 1000000);	/* slept at least 1 ms */
}

static void
test_crc32c_vectors(void **state)
{
	(void) state;
	uint8_t		buf[32];

	assert_int_equal(ls_crc32c(0, "123456789", 9), 0xE3069283u);
	assert_int_equal(ls_crc32c_sw(0, "123456789", 9), 0xE3069283u);
	assert_int_equal(ls_crc32c(0, "", 0), 0);
	/* RFC 3720 (iSCSI) B.4 test vectors */
	memset(buf, 0, sizeof(buf));
	assert_int_equal(ls_crc32c(0, buf, 32), 0x8A9136AAu);
	memset(buf, 0xff, sizeof(buf));
	assert_int_equal(ls_crc32c(0, buf, 32), 0x62A8AB43u);
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t) i;
	assert_int_equal(ls_crc32c(0, buf, 32), 0x46DD794Eu);
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t) (31 - i);
	assert_int_equal(ls_crc32c(0, buf, 32), 0x113FDB5Cu);
}

/* Hardware and table paths agree for every length and alignment; chaining. */
static void
test_crc32c_hw_matches_table(void **state)
{
	(void) state;
	uint8_t		buf[1100];
	uint64_t	r = 12345;

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t) ls_rand_next(&r);
	for (size_t off = 0; off < 9; off++)
		for (size_t len = 0; len < 1000; len += 1 + len / 7)
		{
			uint32_t	sw = ls_crc32c_sw(0, buf + off, len);

			assert_int_equal(ls_crc32c(0, buf + off, len), sw);
			/* chaining: crc(a || b) == crc(crc(a), b) */
			size_t		cut = len / 3;

			assert_int_equal(ls_crc32c(ls_crc32c(0, buf + off, cut), buf + off + cut, len - cut), sw);
		}
	/* a single flipped bit changes the checksum */
	uint32_t	before = ls_crc32c(0, buf, 1024);

	buf[500] ^= 0x10;
	assert_int_not_equal(ls_crc32c(0, buf, 1024), before);
	if (!ls_crc32c_hw())
		print_message("note: CPU without SSE4.2, table CRC32C tested only\n");
}

typedef struct futex_shared
{
	_Atomic uint32_t word;
	_Atomic uint32_t woken;
	ls_mutex	mutex;
	uint64_t	counter;		/* protected by mutex, not atomic on purpose */
} futex_shared;

static int
futex_waiter(int w, void *arg)
{
	futex_shared *fs = arg;

	(void) w;
	while (atomic_load(&fs->word) == 0)
		ls_futex_wait(&fs->word, 0, 0);
	atomic_fetch_add(&fs->woken, 1);
	return 0;
}

static int
futex_waker(int w, void *arg)
{
	futex_shared *fs = arg;

	if (w == 0)
	{
		usleep(20000);			/* let the waiters go to sleep */
		atomic_store(&fs->word, 1);
		ls_futex_wake(&fs->word, INT32_MAX);
		return 0;
	}
	return futex_waiter(w, arg);
}

/* A wake in one process reaches sleepers in others (no private futex). */
static void
test_futex_cross_process(void **state)
{
	(void) state;
	futex_shared *fs = tu_shared_region(sizeof(*fs));

	assert_int_equal(tu_fork_workers(4, futex_waker, fs), 0);
	assert_int_equal(atomic_load(&fs->woken), 3);
	tu_free_region(fs, sizeof(*fs));
}

static void
test_futex_timeout(void **state)
{
	(void) state;
	_Atomic uint32_t w = 5;
	uint64_t	t0 = ls_now_ns();

	ls_futex_wait(&w, 5, 5 * 1000 * 1000);
	assert_true(ls_now_ns() - t0 >= 4 * 1000 * 1000);
	/* a value that differs returns at once */
	t0 = ls_now_ns();
	ls_futex_wait(&w, 6, 1000ULL * 1000 * 1000);
	assert_true(ls_now_ns() - t0 < 500ULL * 1000 * 1000);
}

static int
mutex_worker(int w, void *arg)
{
	futex_shared *fs = arg;
	uint64_t	n = tu_scaled(50000);

	(void) w;
	for (uint64_t i = 0; i < n; i++)
	{
		ls_mutex_lock(&fs->mutex);
		uint64_t	c = fs->counter;

		if ((i & 1023) == 0)
			usleep(10);			/* hold it long enough that others sleep */
		fs->counter = c + 1;
		ls_mutex_unlock(&fs->mutex);
	}
	return 0;
}

static void
test_mutex_cross_process(void **state)
{
	(void) state;
	futex_shared *fs = tu_shared_region(sizeof(*fs));

	ls_mutex_init(&fs->mutex);
	assert_true(ls_mutex_trylock(&fs->mutex));
	assert_false(ls_mutex_trylock(&fs->mutex));
	ls_mutex_unlock(&fs->mutex);
	assert_int_equal(tu_fork_workers(4, mutex_worker, fs), 0);
	assert_int_equal(fs->counter, 4 * tu_scaled(50000));
	assert_int_equal(atomic_load(&fs->mutex.state), 0);
	tu_free_region(fs, sizeof(*fs));
}

static void
test_be64_and_scale(void **state)
{
	(void) state;
	uint8_t		b[8];
	const char *old = getenv("LEANSTORE_TEST_SCALE");
	char	   *saved = old ? strdup(old) : NULL;

	ls_put_be64(b, 0x0102030405060708ULL);
	assert_int_equal(b[0], 1);
	assert_int_equal(b[7], 8);
	assert_int_equal(ls_get_be64(b), 0x0102030405060708ULL);
	setenv("LEANSTORE_TEST_SCALE", "asan", 1);
	assert_int_equal(tu_scaled(400), 100);
	setenv("LEANSTORE_TEST_SCALE", "10", 1);
	assert_int_equal(tu_scaled(400), 40);
	assert_int_equal(tu_scaled(1), 1);
	if (saved)
		setenv("LEANSTORE_TEST_SCALE", saved, 1);
	else
		unsetenv("LEANSTORE_TEST_SCALE");
	free(saved);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status_str),
		cmocka_unit_test(test_now_monotonic),
		cmocka_unit_test(test_crc32c_vectors),
		cmocka_unit_test(test_crc32c_hw_matches_table),
		cmocka_unit_test(test_futex_cross_process),
		cmocka_unit_test(test_futex_timeout),
		cmocka_unit_test(test_mutex_cross_process),
		cmocka_unit_test(test_be64_and_scale),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
