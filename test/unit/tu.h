/*
 * tu.h - generic helpers for the core unit tests (linked into every test
 * binary; see the Makefile).  Nothing here uses cmocka, so the helpers are
 * also safe inside forked workers.
 *
 *  tu_shared_region / tu_free_region
 *      an anonymous MAP_SHARED mapping, zero-filled: what PostgreSQL shared
 *      memory is to the core.  Children forked afterwards see the same bytes.
 *  tu_tempdir / tu_path / tu_rm_rf
 *      a fresh directory under $TMPDIR (default /tmp), a path inside it, and
 *      its recursive removal.
 *  tu_fork_workers
 *      fork n processes running fn(worker_index, arg); waits for all of them
 *      and returns how many failed (non-zero return, signal or abort).  A
 *      worker must not use cmocka assertions: return non-zero instead (the
 *      TU_CHECK macro prints the failed condition and returns 1).  Workers
 *      still running after LEANSTORE_TEST_WORKER_TIMEOUT seconds (default
 *      600) are killed and count as failed, so a hang fails instead of
 *      blocking the suite.
 *  tu_expect_assert
 *      run fn(0, arg) in a forked child whose stderr is captured; returns 0
 *      when the child aborted on a failed LS_ASSERT whose text contains
 *      `cond` (the unit builds always have LS_ASSERTS on), 1 otherwise.
 *  tu_scaled
 *      shrink a test size by LEANSTORE_TEST_SCALE: unset or "1"/"100" = full
 *      size, "asan" = a quarter, a number N = N percent (at least 1).
 *  tu_barrier_*
 *      a cross-process spin barrier in shared memory (for making workers
 *      start an operation at the same moment).
 *  tu_pool_open / tu_pool_close
 *      a buffer pool of `frames` frames in a fresh shared region whose
 *      instances keep their files in a fresh temp directory (cfg's n_frames
 *      and data_dir are set here; direct I/O, free target etc. are the
 *      caller's); close detaches this process, unmaps and removes it all.
 *  tu_pool_page_file
 *      the file (malloc'ed path) and byte offset where page pid lives.
 */
#ifndef LEANSTORE_TEST_TU_H
#define LEANSTORE_TEST_TU_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "leanstore/buffer.h"

void	   *tu_shared_region(size_t size);
void		tu_free_region(void *p, size_t size);

char	   *tu_tempdir(void);
char	   *tu_path(const char *dir, const char *name);
void		tu_rm_rf(const char *dir);

typedef int (*tu_worker_fn) (int worker, void *arg);
int			tu_fork_workers(int n, tu_worker_fn fn, void *arg);

int			tu_expect_assert(tu_worker_fn fn, void *arg, const char *cond);

uint64_t	tu_scaled(uint64_t n);

typedef struct tu_barrier
{
	_Atomic uint32_t arrived;
	uint32_t	n;
} tu_barrier;

void		tu_barrier_init(tu_barrier *b, uint32_t n);
void		tu_barrier_wait(tu_barrier *b);

typedef struct tu_pool
{
	char	   *dir;
	char	   *path;			/* the directory, with a trailing slash */
	void	   *region;
	size_t		region_size;
	ls_bm	   *bm;
} tu_pool;

ls_status	tu_pool_open(tu_pool *p, uint64_t frames, ls_bm_config cfg);
void		tu_pool_close(tu_pool *p);
char	   *tu_pool_page_file(const tu_pool *p, ls_pid pid, off_t *off);

#define TU_CHECK(cond) \
	do { \
		if (!(cond)) \
		{ \
			fprintf(stderr, "%s:%d: worker check failed: %s\n", __FILE__, __LINE__, #cond); \
			return 1; \
		} \
	} while (0)

#endif							/* LEANSTORE_TEST_TU_H */
