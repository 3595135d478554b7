/*
 * bm_internal.h - private layout of the buffer pool (src/buffer only).
 *
 * The public contract is include/leanstore/buffer.h; this header only shares
 * the pool header layout and helper prototypes between the files of this
 * module.  Everything in struct ls_bm lives in the shared region; everything
 * per process (file descriptor, io_uring, provider thread) is in io.c.
 */
#ifndef LEANSTORE_BM_INTERNAL_H
#define LEANSTORE_BM_INTERNAL_H

#include "leanstore/buffer.h"

#include <stdalign.h>

#define LS_BM_MAGIC			0x4c53424d504f4f4cULL	/* "LSBMPOOL" */
#define LS_BM_PATH_MAX		1024

/* In-flight I/O table: partitioned by page id. */
#define LS_IOF_PARTS		64
#define LS_IOF_SLOTS		16

typedef enum ls_iof_state
{
	LS_IOF_EMPTY = 0,
	LS_IOF_READING,				/* a process is reading the page into frame */
	LS_IOF_READY,				/* loaded and valid, not yet swizzled */
} ls_iof_state;

/*
 * One page being loaded, or loaded and waiting for its swip to be swizzled.
 * All fields except seq are read and written under the partition mutex.
 * seq moves on every state change of the slot; waiters sleep on it.
 */
typedef struct ls_iof_slot
{
	ls_pid		pid;
	uint32_t	frame;
	uint32_t	state;			/* ls_iof_state */
	uint32_t	stale;			/* pid was freed while reading: discard */
	uint32_t	cool;			/* provider saw it READY once already */
	_Atomic uint32_t seq;
	uint32_t	pad;
} ls_iof_slot;

typedef struct ls_iof_part
{
	alignas(LS_CACHELINE) ls_mutex mutex;
	ls_iof_slot slots[LS_IOF_SLOTS];
} ls_iof_part;

typedef struct ls_dt_slot
{
	_Atomic uint32_t used;
	uint16_t	dt_type;
	uint16_t	pad;
	void	   *obj;
} ls_dt_slot;

struct ls_bm
{
	ls_bm_layout layout;		/* must stay first: read by inline code */
	uint64_t	magic;
	uint64_t	freepid_off;	/* uint64_t array of recycled pids */
	uint64_t	freepid_cap;
	uint64_t	free_target;	/* frames the provider keeps free */
	uint32_t	write_batch;
	bool		use_direct_io;
	ls_status	(*flush_log) (void *arg, uint64_t gsn);
	void	   *flush_log_arg;
	char		data_path[LS_BM_PATH_MAX];

	/* free frames: a LIFO list linked through ls_frame.next_free */
	alignas(LS_CACHELINE) ls_mutex free_mutex;
	uint32_t	free_head;
	_Atomic uint64_t free_count;

	/* page ids */
	alignas(LS_CACHELINE) ls_mutex pid_mutex;
	_Atomic uint64_t next_pid;	/* file size in pages */
	_Atomic uint64_t freepid_n;
	_Atomic uint64_t leaked_pids;	/* freed while the free-pid list was full */

	/* provider wake-up word; sleepers counts providers inside a futex wait,
	 * so that the miss path enters the kernel only when one sleeps */
	alignas(LS_CACHELINE) _Atomic uint32_t provider_kick;
	_Atomic uint32_t provider_sleepers;

	/* counters (hits are batched per thread, see ls_bm_tl_hits) */
	alignas(LS_CACHELINE) _Atomic uint64_t hits;
	_Atomic uint64_t misses;
	_Atomic uint64_t reads;
	_Atomic uint64_t writes;
	_Atomic uint64_t evictions;
	_Atomic uint64_t restarts;

	alignas(LS_CACHELINE) ls_mutex dt_mutex;
	ls_dt_slot	dts[LS_MAX_DT];
	ls_iof_part iof[LS_IOF_PARTS];
};

/* bm.c */
void		bm_frame_push_free(ls_bm *bm, uint32_t idx);
/*
 * Latch `latch` in mode (optimistic: LS_RESTART while exclusively held) and
 * fill *out; on failure out->mode is LS_GUARD_NONE.  Shared by meta guards
 * and resident frames.
 */
ls_status	bm_guard_take(ls_guard *out, ls_frame *frame, ls_latch *latch, ls_guard_mode mode);
ls_status	bm_get_free_frame(ls_bm *bm, uint32_t *idx);
const ls_dt_ops *bm_type_ops(uint16_t dt_type);
bool		bm_lookup_dt(ls_bm *bm, uint32_t dt_id, const ls_dt_ops **ops, void **obj);
void		bm_page_seal(ls_page *p);
ls_status	bm_page_check(const ls_page *p, ls_pid pid);
void		bm_set_error(ls_pid pid, int err);

void		bm_kick_provider(ls_bm *bm);
void		bm_provider_sleep(ls_bm *bm, uint32_t seen, uint64_t timeout_ns);

/* fix.c */
ls_iof_part *bm_iof_part(ls_bm *bm, ls_pid pid);
void		bm_iof_purge_pid(ls_bm *bm, ls_pid pid);
bool		bm_iof_reclaim_frame(ls_bm *bm, uint32_t idx, bool force);

/* io.c: per-process file and ring */
ls_status	bm_io_open(ls_bm *bm, bool truncate, uint64_t *file_pages);
ls_status	bm_io_read(ls_bm *bm, ls_pid pid, void *buf);
/* Write n pages (copies, 4096-aligned); res[i] is the status of page i. */
void		bm_io_write(ls_bm *bm, uint32_t n, const ls_pid *pids, void *const *bufs, ls_status *res);
void		bm_io_detach(ls_bm *bm);
ls_status	bm_io_start_provider(ls_bm *bm, void *(*fn) (void *));
void		bm_io_stop_provider(ls_bm *bm);
bool		bm_io_provider_should_stop(ls_bm *bm);

#endif							/* LEANSTORE_BM_INTERNAL_H */
