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

/*
 * Free blocks of the instances' files wait for reuse in chunks of
 * LS_FREE_CHUNK_BLOCKS, taken from one pool-wide array (bm->chunks_off,
 * bm->n_chunks entries; spare chunks linked from bm->chunk_free through
 * next).  An instance's chunks form a list from its slot's free_head; only
 * the head chunk may be partly filled.  A block freed when no chunk is left
 * is leaked (counted) until the instance is opened again
 * (ls_bm_recycle_block after the owner walked its pages).
 */
#define LS_FREE_CHUNK_BLOCKS	62
#define LS_CHUNK_NONE		UINT32_MAX

typedef struct ls_free_chunk
{
	uint32_t	next;			/* next chunk of the list, LS_CHUNK_NONE */
	uint32_t	n;				/* blocks held */
	uint32_t	blocks[LS_FREE_CHUNK_BLOCKS];
} ls_free_chunk;

_Static_assert(sizeof(ls_free_chunk) == 256, "a free chunk is 256 bytes");

/*
 * A registered instance and its file.  gen moves on every registration, so
 * a process's cached descriptors of an earlier file in the same slot are
 * recognised as stale (io.c).  free_head / n_free (under block_mutex): its
 * free blocks (see ls_free_chunk).
 */

typedef struct ls_dt_slot
{
	_Atomic uint32_t used;
	uint16_t	dt_type;
	uint16_t	pad;
	void	   *obj;
	ls_bm_file	file;
	_Atomic uint32_t gen;
	_Atomic uint32_t next_block;	/* blocks handed out so far */
	_Atomic uint32_t reserved;	/* blocks below this have disk space (block_reserve) */
	_Atomic uint32_t unsynced;	/* written since the last ls_bm_sync_dt */
	_Atomic uint64_t in_use;	/* blocks handed out and not freed */
	ls_mutex	block_mutex;
	uint32_t	free_head;		/* chunk index, LS_CHUNK_NONE */
	uint32_t	n_free;			/* blocks in the chunks */

	/*
	 * Undo journal (undo.c).  undo_below = 0: not protected.  undo_epoch
	 * moves on every ls_bm_protect_dt and never goes back (not even when the
	 * slot is registered again): entries of the pool's "saved" table carry
	 * it, so a new protection remembers nothing.  undo_mutex serializes
	 * appends (write + fdatasync) and protection changes; undo_size (the
	 * journal's length) and undo_image are read and written under it.
	 */
	_Atomic uint32_t undo_below;
	_Atomic uint32_t undo_epoch;
	ls_mutex	undo_mutex;
	uint64_t	undo_image;
	uint64_t	undo_size;
	int32_t		undo_broken;	/* errno of a failed ls_bm_protect_dt: saves
								 * fail until a protection succeeds or ends */
} ls_dt_slot;

struct ls_bm
{
	ls_bm_layout layout;		/* must stay first: read by inline code */
	uint64_t	magic;
	uint64_t	free_target;	/* frames the provider keeps free */
	uint32_t	write_batch;
	uint32_t	blocks_per_segment;	/* 0: one file per instance */
	bool		use_direct_io;
	ls_status	(*flush_log) (void *arg, uint64_t gsn);
	void	   *flush_log_arg;
	bool		(*file_path) (void *arg, const ls_bm_file *file, uint32_t segno,
							  char *buf, size_t len);
	void	   *file_path_arg;
	uint16_t	(*page_checksum) (void *arg, const ls_page *page, uint32_t block);
	void	   *page_checksum_arg;
	char		data_dir[LS_BM_PATH_MAX];

	/* free frames: a LIFO list linked through ls_frame.next_free */
	alignas(LS_CACHELINE) ls_mutex free_mutex;
	uint32_t	free_head;
	_Atomic uint64_t free_count;

	/* pages in use in all files (handed out and not freed) */
	alignas(LS_CACHELINE) _Atomic uint64_t allocated_pages;
	_Atomic uint64_t leaked_blocks;	/* freed while no free chunk was left */

	/* free-block chunks (see ls_free_chunk); chunk_mutex nests inside a
	 * slot's block_mutex, never the other way */
	alignas(LS_CACHELINE) ls_mutex chunk_mutex;
	uint32_t	chunk_free;		/* spare chunks, LS_CHUNK_NONE */
	uint32_t	n_chunks;
	uint64_t	chunks_off;		/* from the pool header */

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

	/* undo journal: journal appends and bytes appended (saved pages) */
	alignas(LS_CACHELINE) _Atomic uint64_t undo_appends;
	_Atomic uint64_t undo_pages;

	/*
	 * "Recently saved" blocks of protected instances (undo.c): a
	 * direct-mapped table of undo_mask + 1 words after the frame headers,
	 * each (dt_id, block, epoch) packed, 0 empty.
	 */
	uint64_t	undo_off;
	uint64_t	undo_mask;

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
/* Seal a private copy for block `block` (on-disk form: pid field = block). */
void		bm_page_seal(ls_bm *bm, ls_page *p, uint32_t block);
/* Check a page read for pid; on success its pid field is pid again. */
ls_status	bm_page_check(ls_bm *bm, ls_page *p, ls_pid pid);
ls_dt_slot *bm_dt_slot(ls_bm *bm, uint32_t dt_id);
void		bm_set_error(ls_pid pid, int err);

void		bm_kick_provider(ls_bm *bm);
void		bm_provider_sleep(ls_bm *bm, uint32_t seen, uint64_t timeout_ns);

/* fix.c */
ls_iof_part *bm_iof_part(ls_bm *bm, ls_pid pid);
void		bm_iof_purge_pid(ls_bm *bm, ls_pid pid);
bool		bm_iof_reclaim_frame(ls_bm *bm, uint32_t idx, bool force);

/* undo.c */
/* Entries of the saved-blocks table for a pool of n_frames (a power of 2). */
uint64_t	bm_undo_table_entries(uint64_t n_frames);
/*
 * Before bm_io_write writes pages in place: save the on-disk content of
 * every protected block among them in its instance's journal, durably.
 * ok[i] = false (res[i] set) for a page that must not be written.
 */
void		bm_undo_before_write(ls_bm *bm, uint32_t n, const ls_pid *pids, bool *ok,
								 ls_status *res);
/* A registered instance is (re)registered / unregistered: no protection. */
void		bm_undo_reset(ls_bm *bm, uint32_t dt_id);

/* io.c: per-process file descriptors and ring */
/*
 * Path of segment segno of file (LS_BM_UNDO_SEGNO: its undo journal), by
 * file_path or in data_dir; false when the file is gone.
 */
bool		bm_io_file_path(ls_bm *bm, const ls_bm_file *file, uint32_t segno,
							char *buf, size_t len);
/* Read n pages of registered files (aligned buffers); LS_NOT_FOUND past the end. */
void		bm_io_read_many(ls_bm *bm, uint32_t n, const ls_pid *pids, void *const *bufs,
							ls_status *res);
/*
 * This process's descriptor of dt_id's journal, opened for protection
 * `epoch` (caller holds the slot's undo_mutex).  create: create or open it
 * (*created says whether it was created).  -1 with errno.
 */
int			bm_io_undo_fd(ls_bm *bm, uint32_t dt_id, uint32_t epoch, bool create,
						  bool *created);
/* Create or truncate dt_id's file in data_dir (ls_bm_register_dt). */
ls_status	bm_io_create_file(ls_bm *bm, uint32_t dt_id);
/* One block of an unregistered file, read synchronously (no checks). */
ls_status	bm_io_read_file(ls_bm *bm, const ls_bm_file *file, uint32_t block, void *buf);
/* LS_NOT_FOUND for a block past the end of its file (reads only). */
ls_status	bm_io_read(ls_bm *bm, ls_pid pid, void *buf);
ls_status	bm_io_sync(ls_bm *bm, uint32_t dt_id);
/* disk space for blocks [from, to) of dt_id's file (fallocate, KEEP_SIZE) */
ls_status	bm_io_reserve(ls_bm *bm, uint32_t dt_id, uint32_t from, uint32_t to);
/* Close this process's descriptors of dt_id's file. */
void		bm_io_forget(ls_bm *bm, uint32_t dt_id);
/* Write n pages (copies, 4096-aligned); res[i] is the status of page i. */
void		bm_io_write(ls_bm *bm, uint32_t n, const ls_pid *pids, void *const *bufs, ls_status *res);
void		bm_io_detach(ls_bm *bm);
ls_status	bm_io_start_provider(ls_bm *bm, void *(*fn) (void *));
void		bm_io_stop_provider(ls_bm *bm);
bool		bm_io_provider_should_stop(ls_bm *bm);

#endif							/* LEANSTORE_BM_INTERNAL_H */
