/*
 * tu_parr.h - a tiny buffer-managed data structure for buffer pool tests.
 *
 * A "page array": a meta object in shared memory with one latch and n root
 * swips, each owning exactly one page.  find_parent scans the swip array for
 * the frame; every page is evictable.  A page's content is self-verifying:
 * slot index, a write counter and a fill pattern derived from both, so any
 * reader can tell a torn or misplaced page from a correct one.
 *
 * Every process must call tu_parr_register_type() before touching pages
 * (forked children inherit the registration).
 */
#ifndef LEANSTORE_TEST_TU_PARR_H
#define LEANSTORE_TEST_TU_PARR_H

#include "leanstore/buffer.h"

#define TU_PARR_TYPE 7

typedef struct tu_parr
{
	ls_latch	latch;			/* protects every swip below */
	uint32_t	dt_id;
	uint32_t	n;
	ls_swip		swips[];
} tu_parr;

size_t		tu_parr_size(uint32_t n);
void		tu_parr_register_type(void);
/* Register the instance and allocate its n pages (counter 0), left dirty. */
ls_status	tu_parr_create(ls_bm *bm, tu_parr *pa, uint32_t n);
/* Read slot i under a shared latch; LS_CORRUPT if the content is wrong. */
ls_status	tu_parr_read(ls_bm *bm, tu_parr *pa, uint32_t i, uint64_t *counter);
/* Same with an optimistic child latch (validated). */
ls_status	tu_parr_read_optimistic(ls_bm *bm, tu_parr *pa, uint32_t i, uint64_t *counter);
/* Increment slot i's counter and rewrite its page; returns the new counter. */
ls_status	tu_parr_write(ls_bm *bm, tu_parr *pa, uint32_t i, uint64_t *counter);
/* Remove slot i's page (swip becomes LS_PID_INVALID). */
ls_status	tu_parr_free(ls_bm *bm, tu_parr *pa, uint32_t i);
/* Page id currently owned by slot i (resident or not). */
ls_pid		tu_parr_pid(ls_bm *bm, tu_parr *pa, uint32_t i);

#endif							/* LEANSTORE_TEST_TU_PARR_H */
