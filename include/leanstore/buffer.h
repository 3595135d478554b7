/*
 * leanstore/buffer.h - swizzling buffer pool shared by many processes.
 *
 * The pool lives entirely inside one caller-provided memory region (PostgreSQL
 * shared memory in the server, an anonymous MAP_SHARED mapping in the tests)
 * that every process maps at the same address.
 *
 * Pages live in files, one file per data structure instance (a B+-tree): a
 * page id (pid) names the instance (its dt_id, upper 32 bits) and the block
 * inside that instance's file (lower 32 bits).  In PostgreSQL the file is a
 * relation's main fork (segments of blocks_per_segment blocks); in the tests
 * it is a file in a directory.  Pages are PostgreSQL-sized (8 KiB) and start
 * with a header laid out like PostgreSQL's PageHeaderData, so PostgreSQL's
 * tools (pg_checksums, pg_basebackup) accept them; leanstore's own header
 * follows it.
 *
 * Invariants:
 *  - Frames are never returned to the OS and a frame's latch word never moves,
 *    so an optimistic reader may always touch any frame's latch, and pages are
 *    always readable memory (possibly with garbage in them).
 *  - Every page has exactly one owning swip: a slot inside its parent page or
 *    the root swip of its data structure.  There are no parent pointers; a
 *    page's parent is found top-down through the data structure's
 *    ls_dt_ops.find_parent.
 *  - A swip is either a page id (page not in memory) or a frame index with the
 *    SWIZZLED bit.  A swip is changed only under the exclusive latch of the node
 *    that holds it.
 *  - A page is loaded at most once at a time (in-flight I/O table); a frame's
 *    content changes only under its exclusive latch (the latch version moves).
 *  - A page is written with a CRC32C over its whole content, verified on every
 *    read; a mismatch is LS_CHECKSUM (page id reported via ls_bm_last_error).
 *  - Eviction only try-latches: it never blocks, so any thread holding latches
 *    may run it inline when no free frame is left.
 *  - Cooling (second chance) is kept in the frame (ls_frame.state), not in the
 *    parent's swip: a touch is then one store on a line the reader reads
 *    anyway, and needs no exclusive latch on the parent.
 */
#ifndef LEANSTORE_BUFFER_H
#define LEANSTORE_BUFFER_H

#include "leanstore/common.h"

#define LS_PAGE_SIZE		8192u
#define LS_PID_INVALID		UINT64_MAX
#define LS_MAX_DT			4096	/* registered data structure instances */
#define LS_BLOCK_INVALID	UINT32_MAX

typedef uint64_t ls_pid;

/* A page id is (dt_id, block); swips hold page ids in memory, blocks on disk. */
static inline ls_pid
ls_pid_make(uint32_t dt_id, uint32_t block)
{
	return ((uint64_t) dt_id << 32) | block;
}
static inline uint32_t
ls_pid_dt(ls_pid pid)
{
	return (uint32_t) (pid >> 32);
}
static inline uint32_t
ls_pid_block(ls_pid pid)
{
	return (uint32_t) pid;
}

/* ------------------------------------------------------------------------
 * Swips
 * ------------------------------------------------------------------------ */
typedef struct ls_swip
{
	_Atomic uint64_t raw;
} ls_swip;

#define LS_SWIP_SWIZZLED	(1ULL << 63)

static inline bool
ls_swip_is_swizzled(uint64_t raw)
{
	return (raw & LS_SWIP_SWIZZLED) != 0;
}
static inline uint64_t
ls_swip_from_pid(ls_pid pid)
{
	return pid;
}
static inline uint64_t
ls_swip_from_frame(uint32_t frame_idx)
{
	return LS_SWIP_SWIZZLED | frame_idx;
}
static inline ls_pid
ls_swip_pid(uint64_t raw)
{
	return raw;
}
static inline uint32_t
ls_swip_frame(uint64_t raw)
{
	return (uint32_t) (raw & 0xffffffffu);
}
static inline uint64_t
ls_swip_load(const ls_swip *s)
{
	return atomic_load_explicit(&((ls_swip *) s)->raw, memory_order_acquire);
}
static inline void
ls_swip_store(ls_swip *s, uint64_t raw)
{
	atomic_store_explicit(&s->raw, raw, memory_order_release);
}

/* ------------------------------------------------------------------------
 * Pages and frames
 * ------------------------------------------------------------------------ */

/*
 * Header at the start of every page (on disk and in memory).  The first 24
 * bytes have the layout of PostgreSQL's PageHeaderData: the GSN sits where
 * pd_lsn is (high word first, as PostgreSQL stores an LSN), pg_checksum is
 * pd_checksum (PostgreSQL's page checksum, computed by the caller's
 * page_checksum callback, 0 without one), and lower = upper = special =
 * LS_PG_HEADER_SIZE: to PostgreSQL the whole rest of the page is "special
 * space", a valid and non-new page.  leanstore's own header follows.
 */
#define LS_PG_HEADER_SIZE	24u
#define LS_PG_LAYOUT_VERSION	4u

typedef struct ls_page_header
{
	uint32_t	gsn_hi;			/* pd_lsn: GSN of the last change */
	uint32_t	gsn_lo;
	uint16_t	pg_checksum;	/* pd_checksum */
	uint16_t	pg_flags;		/* pd_flags: 0 */
	uint16_t	pg_lower;		/* LS_PG_HEADER_SIZE */
	uint16_t	pg_upper;		/* LS_PG_HEADER_SIZE */
	uint16_t	pg_special;		/* LS_PG_HEADER_SIZE */
	uint16_t	pg_pagesize_version;	/* LS_PAGE_SIZE | LS_PG_LAYOUT_VERSION */
	uint32_t	pg_prune_xid;	/* 0 */
	/* leanstore's part */
	uint32_t	checksum;		/* CRC32C of the page with this field and
								 * pg_checksum = 0 */
	uint16_t	dt_type;		/* data structure type (ls_dt_ops index) */
	uint16_t	flags;
	uint32_t	dt_id;			/* instance (in memory; on disk: unused) */
	uint32_t	reserved;
	ls_pid		pid;			/* self check: in memory the page id, on disk
								 * the block number */
} ls_page_header;

_Static_assert(sizeof(ls_page_header) == 48, "page header layout");

static inline uint64_t
ls_page_gsn(const ls_page_header *h)
{
	return ((uint64_t) h->gsn_hi << 32) | h->gsn_lo;
}
static inline void
ls_page_set_gsn(ls_page_header *h, uint64_t gsn)
{
	h->gsn_hi = (uint32_t) (gsn >> 32);
	h->gsn_lo = (uint32_t) gsn;
}

#define LS_PAGE_DATA_SIZE	(LS_PAGE_SIZE - sizeof(ls_page_header))

typedef struct ls_page
{
	ls_page_header hdr;
	uint8_t		data[LS_PAGE_DATA_SIZE];
} ls_page;

typedef enum ls_frame_state
{
	LS_FRAME_FREE = 0,
	LS_FRAME_HOT,
	LS_FRAME_COOL,				/* chosen by the page provider; a touch makes
								 * it HOT again, else it is evicted */
	LS_FRAME_LOADING,			/* read in progress, or read and waiting in the
								 * in-flight table to be swizzled */
} ls_frame_state;

/* Frame header; the page itself is in a separate, I/O-aligned array. */
typedef struct ls_frame
{
	ls_latch	latch;
	_Atomic uint32_t state;		/* ls_frame_state */
	_Atomic uint32_t dirty;		/* 1 when the page differs from disk */
	ls_pid		pid;
	uint32_t	dt_id;
	uint16_t	dt_type;
	uint16_t	pad0;
	_Atomic uint64_t written_version;	/* latch version last written back */
	uint32_t	next_free;		/* free-list link */
	_Atomic uint32_t writing;	/* 1 while a write-back of this frame is in
								 * flight (one writer at a time, so an older
								 * copy never lands after a newer one) */
	uint8_t		pad[LS_CACHELINE - 48];
} ls_frame;

_Static_assert(sizeof(ls_frame) == LS_CACHELINE, "one frame header per cache line");

typedef struct ls_bm ls_bm;

/*
 * The first bytes of the (otherwise private) pool header, exposed so that
 * frame/page lookups and the swizzled fast path of ls_bm_fix inline.  The
 * arrays are addressed relative to the header, so the pool does not depend
 * on being mapped at the same address (it is in PostgreSQL and the tests).
 */
typedef struct ls_bm_layout
{
	uint64_t	n_frames;
	uint64_t	frames_off;		/* from the pool header, 64-aligned */
	uint64_t	pages_off;		/* from the pool header, 4096-aligned */
} ls_bm_layout;

/* The frame and page arrays. */
static inline ls_frame *
ls_bm_frame(ls_bm *bm, uint32_t frame_idx)
{
	const ls_bm_layout *lay = (const ls_bm_layout *) bm;

	return (ls_frame *) ((char *) bm + lay->frames_off) + frame_idx;
}
static inline ls_page *
ls_bm_page(ls_bm *bm, uint32_t frame_idx)
{
	const ls_bm_layout *lay = (const ls_bm_layout *) bm;

	return (ls_page *) ((char *) bm + lay->pages_off) + frame_idx;
}
static inline uint32_t
ls_bm_frame_index(ls_bm *bm, const ls_frame *f)
{
	return (uint32_t) (f - ls_bm_frame(bm, 0));
}
static inline uint64_t
ls_bm_n_frames(ls_bm *bm)
{
	return ((const ls_bm_layout *) bm)->n_frames;
}

/* ------------------------------------------------------------------------
 * Page guards
 * ------------------------------------------------------------------------ */
typedef enum ls_guard_mode
{
	LS_GUARD_NONE = 0,
	LS_GUARD_OPTIMISTIC,
	LS_GUARD_SHARED,
	LS_GUARD_EXCLUSIVE,
} ls_guard_mode;

/*
 * A guard on a latch that protects one node: a frame's latch, or the latch of
 * a data structure's meta object that owns the root swip (frame == NULL).
 */
typedef struct ls_guard
{
	ls_frame   *frame;			/* NULL for a meta guard */
	ls_latch   *latch;
	uint64_t	version;		/* latch word at acquisition (optimistic) */
	ls_guard_mode mode;
} ls_guard;

/* Guard a meta latch (the owner of a root swip). */
ls_status	ls_guard_meta(ls_latch *latch, ls_guard_mode mode, ls_guard *out);
/*
 * Optimistic guards: LS_OK while nothing changed, LS_RESTART otherwise.
 * Shared and exclusive guards are always valid (LS_OK).
 */
static inline ls_status
ls_guard_validate(const ls_guard *g)
{
	if (g->mode != LS_GUARD_OPTIMISTIC)
		return g->mode == LS_GUARD_NONE ? LS_RESTART : LS_OK;
	return ls_latch_validate(g->latch, g->version) ? LS_OK : LS_RESTART;
}
/* Optimistic -> exclusive / shared without a gap (LS_RESTART on change). */
ls_status	ls_guard_upgrade_exclusive(ls_guard *g);
ls_status	ls_guard_upgrade_shared(ls_guard *g);
/* Release whatever the guard holds (no-op for optimistic / none); mode
 * becomes LS_GUARD_NONE. */
static inline void
ls_guard_release(ls_guard *g)
{
	if (g->mode == LS_GUARD_SHARED)
		ls_latch_unlock_shared(g->latch);
	else if (g->mode == LS_GUARD_EXCLUSIVE)
		ls_latch_unlock_exclusive(g->latch);
	g->mode = LS_GUARD_NONE;
}
/*
 * Debug helper for contracts that need the node held exclusively (asserted
 * at the top of such functions): the guard is in exclusive mode, its latch
 * is the guarded frame's, and the latch word shows an exclusive holder.  The
 * latch records no owner, so "held by us" rests on the guard's mode: a guard
 * says exclusive only after its holder took the latch that way.
 */
static inline bool
ls_guard_is_exclusive(const ls_guard *g)
{
	return g->mode == LS_GUARD_EXCLUSIVE &&
		(g->frame == NULL || g->latch == &g->frame->latch) &&
		(atomic_load_explicit(&g->latch->word, memory_order_relaxed) & LS_LATCH_EXCLUSIVE) != 0;
}
/* Mark the guarded page dirty (guard must be exclusive). */
void		ls_guard_mark_dirty(ls_guard *g);

static inline ls_page *
ls_guard_page(ls_bm *bm, const ls_guard *g)
{
	return ls_bm_page(bm, ls_bm_frame_index(bm, g->frame));
}

/* ------------------------------------------------------------------------
 * Data structure registry (type ops are per process, instances are shared)
 * ------------------------------------------------------------------------ */

/* Where a page's owning swip is, as found by ls_dt_ops.find_parent. */
typedef struct ls_parent
{
	ls_guard	guard;			/* parent node (or meta), held optimistically */
	ls_swip    *swip;			/* owning swip inside it */
} ls_parent;

typedef struct ls_dt_ops
{
	/*
	 * Find the owning swip of `child` (a page of instance `obj`).  The caller
	 * holds child's latch (shared or optimistic with version); return the
	 * parent guarded optimistically, LS_RESTART to make the caller skip or
	 * retry, LS_NOT_FOUND if the page is not reachable.
	 */
	ls_status	(*find_parent) (ls_bm *bm, void *obj, ls_frame *child, ls_parent *out);
	/*
	 * May the page in `f` (latched by the caller) leave memory now?  An inner
	 * node with swizzled children may not.
	 */
	bool		(*is_evictable) (ls_bm *bm, void *obj, ls_frame *f);
	/*
	 * Optional (NULL: the type's pages hold no swips).  Called on a private
	 * copy of a page (taken under a validated optimistic read of `f`) before
	 * it is written: replace every swizzled swip in `copy` by its child's
	 * page id, using ls_bm_swip_to_pid(), so that the disk image never holds
	 * frame indexes.  Return LS_RESTART if the copy looks torn (the write is
	 * then skipped and retried later).
	 */
	ls_status	(*checkpoint) (ls_bm *bm, void *obj, ls_frame *f, ls_page *copy);
	/*
	 * Optional (NULL: the type's pages hold no swips).  Called on a page just
	 * read from disk (latched exclusively by the loader, not yet reachable)
	 * whose swips hold block numbers: turn each into a page id of the same
	 * instance, ls_pid_make(ls_pid_dt(pid), block).  Return LS_CORRUPT when
	 * the page does not look like one of the type's pages.
	 */
	ls_status	(*loaded) (ls_bm *bm, void *obj, ls_pid pid, ls_page *page);
} ls_dt_ops;

/*
 * Page id behind a swip: the pid itself, or the pid of the frame a swizzled
 * swip points at (LS_PID_INVALID for an out-of-range frame index).  Valid
 * while the parent holding the swip is unchanged (validate after use).
 */
ls_pid		ls_bm_swip_to_pid(ls_bm *bm, uint64_t raw);

#define LS_MAX_DT_TYPES 8
/*
 * Register the ops of a type in this process.  Every process registers the
 * same types before touching pages (static tables after fork are fine).
 */
void		ls_bm_register_type(uint16_t dt_type, const ls_dt_ops *ops);
/*
 * The file of an instance, as the caller names it (PostgreSQL: tablespace,
 * database, relfilenode, backend of a temporary relation).  The pool only
 * hands it to the file_path callback.
 */
typedef struct ls_bm_file
{
	uint32_t	key[4];
} ls_bm_file;

/*
 * Register a shared instance (e.g. one B+-tree) whose pages live in `file`,
 * blocks [0, n_blocks) of which are in use already (an existing file: new
 * pages get blocks from n_blocks on).  Returns its dt_id.  The file must
 * exist (segment 0); the pool never creates segment 0, it creates further
 * segments as pages are written there.
 */
ls_status	ls_bm_register_file(ls_bm *bm, uint16_t dt_type, void *obj,
								const ls_bm_file *file, uint32_t n_blocks,
								uint32_t *dt_id);
/*
 * Register an instance with a new, empty file of its own in the pool's
 * data_dir (tests and benchmarks: key[0] = dt_id, file "dt<dt_id>", created
 * or truncated).
 */
ls_status	ls_bm_register_dt(ls_bm *bm, uint16_t dt_type, void *obj, uint32_t *dt_id);
/* Forget an instance whose pages are all gone from memory. */
void		ls_bm_unregister_dt(ls_bm *bm, uint32_t dt_id);
/*
 * Drop an instance: free every frame holding one of its pages without
 * writing it (waiting for a write-back in flight), then unregister it.  The
 * caller guarantees that nobody uses the instance any more (PostgreSQL: the
 * relation is being dropped or truncated under AccessExclusiveLock); a page
 * provider may run.  Its file is left alone (the caller removes it).
 */
void		ls_bm_drop_dt(ls_bm *bm, uint32_t dt_id);
/* Blocks of dt_id's file handed out so far (the next new page's block). */
uint32_t	ls_bm_dt_blocks(ls_bm *bm, uint32_t dt_id);
/*
 * dt_id's file is about to be cut to n_blocks (a clean image's length): the
 * disk space reserved past that goes with it, so a new block there gets its
 * space again.  Call it before the cut, while no page can be allocated.
 */
void		ls_bm_dt_clip_reserved(ls_bm *bm, uint32_t dt_id, uint32_t n_blocks);

/*
 * Read / write one block of dt_id's file directly, bypassing the pool (a
 * data structure's meta page, kept outside the tree).  The write seals the
 * page (headers, checksums) and, with sync, makes it durable; the read
 * checks it (LS_CHECKSUM, LS_CORRUPT; LS_NOT_FOUND for a block past the end
 * of the file or never written).
 */
ls_status	ls_bm_read_block(ls_bm *bm, uint32_t dt_id, uint32_t block, ls_page *buf);
ls_status	ls_bm_write_block(ls_bm *bm, uint32_t dt_id, uint32_t block, ls_page *buf,
							  bool sync);
/*
 * Read one block of a file that no instance is registered for (a meta page
 * that says whether and how to open the file's tree): as ls_bm_read_block.
 */
ls_status	ls_bm_read_file_block(ls_bm *bm, const ls_bm_file *file, uint32_t block,
								  ls_page *buf);
/* fsync every segment of dt_id's file that this pool wrote since the last sync. */
ls_status	ls_bm_sync_dt(ls_bm *bm, uint32_t dt_id);

/* ------------------------------------------------------------------------
 * Undo journal: the last clean image of an instance's file survives a crash
 *
 * The caller writes a consistent image of an instance's file now and then
 * (a "clean point": every page flushed, its meta page written, synced) and
 * logs logical changes in between.  Pages keep being written in place
 * between clean points (write-back, eviction, flush); so that a crash can
 * still go back to the last clean image, every in-place write of a block
 * that belongs to the protected image first saves the block's current
 * on-disk content in the instance's undo journal, durably.  Recovery
 * (ls_bm_undo_apply) writes those saved copies back: the file is then the
 * protected image again, and the caller replays its log on top.
 *
 * Journal: file_path(segno = LS_BM_UNDO_SEGNO) (without file_path:
 * data_dir/dt<key[0]>.undo).  A header (magic, image id, CRC) and entries
 * (block, image id, CRC32C of entry and page, the 8 KiB page as it was on
 * disk; a block past the end of its file or reading as zeros is saved
 * without a page and restored as zeros).  A torn or stale tail (CRC, image
 * id) ends it.  Layout and the argument why concurrent write-back keeps
 * the first copy of each block right: src/buffer/README.md.
 * ls_bm_stats.undo_appends / undo_pages count appends and saved blocks.
 * ------------------------------------------------------------------------ */
#define LS_BM_UNDO_SEGNO	UINT32_MAX

/*
 * Protect the image `image` (a caller-chosen id, unique among all images
 * any file ever had) of dt_id's file: from now on, before a write of this
 * pool (write-back, flush, eviction, ls_bm_write_block) overwrites a block
 * below `below` in place, the block's current content in the file is
 * appended to the journal and the journal is fdatasync'd (once per write
 * batch).  The call truncates the journal, writes its header and syncs it
 * (creating the file) before it returns.  Blocks at or above `below` (not
 * part of the image) are written without journaling.  A block needs saving
 * once per protection: the pool remembers recently saved blocks per
 * instance in bounded memory and may save a block again (harmless:
 * recovery restores the first copy).  below = 0 ends the protection (the
 * journal file stays; the caller removes it when it removes the file).
 * LS_IO_ERROR (errno kept) when the journal cannot be written; a journal
 * write or sync failure during a later write-back fails that write (the
 * page stays dirty, never written unprotected).  After a failed call the
 * instance stays protected with a journal that takes no saves: writes of
 * blocks below `below` fail until a later call succeeds (or below = 0 ends
 * the protection).  Call it with the image clean: no page of the instance
 * changed since the image was flushed (a write-back racing with the call
 * could rely on a save in the previous journal).
 */
ls_status	ls_bm_protect_dt(ls_bm *bm, uint32_t dt_id, uint32_t below, uint64_t image);
/*
 * The image id in the header of file's journal: LS_NOT_FOUND when there is
 * no journal or no valid header.
 */
ls_status	ls_bm_undo_image(ls_bm *bm, const ls_bm_file *file, uint64_t *image);
/*
 * Recovery, before the file is registered: when file's journal protects
 * `image`, write the first saved copy of each block back in place and
 * fsync the file, so that it holds that image again (blocks the image did
 * not use keep whatever they hold).  *restored = blocks written back.  A
 * journal of another image, or none: LS_OK with 0.  LS_IO_ERROR on a
 * read or write failure.
 */
ls_status	ls_bm_undo_apply(ls_bm *bm, const ls_bm_file *file, uint64_t image,
							 uint32_t *restored);

/* ------------------------------------------------------------------------
 * Pool life cycle
 * ------------------------------------------------------------------------ */
typedef struct ls_bm_config
{
	uint64_t	n_frames;		/* pool size in pages */
	const char *data_dir;		/* directory of ls_bm_register_dt's files */
	bool		use_direct_io;	/* O_DIRECT on the data files */
	/* blocks per segment file (0: one file); PostgreSQL: RELSEG_SIZE */
	uint32_t	blocks_per_segment;
	/*
	 * Optional: path of segment segno of a registered file into buf (len
	 * bytes).  false when the file is gone (its pages are then dropped
	 * instead of written).  NULL: data_dir/dt<key[0]>[.segno].
	 */
	bool		(*file_path) (void *arg, const ls_bm_file *file, uint32_t segno,
							  char *buf, size_t len);
	void	   *file_path_arg;
	/*
	 * Optional: PostgreSQL's page checksum of a sealed page at block (stored
	 * in pg_checksum, checked on every read).  NULL: pg_checksum is written
	 * as 0 and never checked (a page written while checksums were on keeps
	 * its old value, as PostgreSQL's pages do after pg_checksums --disable).
	 */
	uint16_t	(*page_checksum) (void *arg, const ls_page *page, uint32_t block);
	void	   *page_checksum_arg;
	uint32_t	free_target_pct;	/* provider keeps this % of frames free
									 * (default 5 when 0) */
	uint32_t	write_batch;	/* pages per write-back batch (default 64) */
	/* Optional hook: make the log durable up to gsn before a page with that
	 * gsn is written (NULL until the log exists). */
	ls_status	(*flush_log) (void *arg, uint64_t gsn);
	void	   *flush_log_arg;
} ls_bm_config;

/* Bytes of region needed for a pool of n_frames (includes alignment slack). */
size_t		ls_bm_region_size(uint64_t n_frames);
/* Format a pool inside region (once, before any process uses it). */
ls_status	ls_bm_init(void *region, size_t region_size, const ls_bm_config *cfg, ls_bm **out);
/* Close this process's file descriptors and I/O ring (pool stays usable for others). */
void		ls_bm_process_detach(ls_bm *bm);


/* ------------------------------------------------------------------------
 * Page access
 * ------------------------------------------------------------------------ */

/*
 * Resolve `swip` (inside the node guarded by `parent`, held optimistically or
 * better) and latch the child in `mode`.  Loads the page if it is not in
 * memory (parent is briefly upgraded to swizzle).  Clears the child's COOL
 * state.  Validates `parent` after latching the child.  Returns LS_RESTART
 * when anything moved (caller unwinds to its operation start; the child guard
 * is then released), LS_IO_ERROR / LS_CHECKSUM on a bad read, LS_CORRUPT when
 * the page read carries another page id, LS_NO_SPACE when no frame is free.
 * A page loaded under a SHARED parent is swizzled only when the caller is
 * the parent's sole shared holder; otherwise LS_RESTART (the loaded frame
 * waits in the in-flight table and the next fix swizzles it without I/O).
 */
ls_status	ls_bm_fix_slow(ls_bm *bm, ls_guard *parent, ls_swip *swip, ls_guard_mode mode, ls_guard *child);

/* Per-thread hit count, published to the shared counter every 1024 hits. */
extern _Thread_local uint64_t ls_bm_tl_hits;
/* Pages this thread read from disk into the pool (misses it served). */
extern _Thread_local uint64_t ls_bm_tl_loads;
void		ls_bm_publish_hits(ls_bm *bm);

/*
 * Fast path, inline: swizzled swip, optimistic child.  Costs one swip load,
 * one load of the child's frame header line (latch + state), the parent's
 * validation and a thread-local increment.  Everything else goes out of line.
 */
static inline ls_status
ls_bm_fix(ls_bm *bm, ls_guard *parent, ls_swip *swip, ls_guard_mode mode, ls_guard *child)
{
	uint64_t	raw = ls_swip_load(swip);

	if (LS_LIKELY(mode == LS_GUARD_OPTIMISTIC && ls_swip_is_swizzled(raw)
				  && ls_swip_frame(raw) < ls_bm_n_frames(bm)))
	{
		ls_frame   *f = ls_bm_frame(bm, ls_swip_frame(raw));
		uint64_t	w = atomic_load_explicit(&f->latch.word, memory_order_acquire);

		if (LS_LIKELY((w & LS_LATCH_EXCLUSIVE) == 0))
		{
			child->mode = LS_GUARD_NONE;
			/* parent unchanged => the swip pointed at f when w was read */
			if (LS_UNLIKELY(ls_guard_validate(parent) != LS_OK))
				return LS_RESTART;
			child->frame = f;
			child->latch = &f->latch;
			child->version = w;
			child->mode = LS_GUARD_OPTIMISTIC;
			/* second chance: a touch makes a cooling frame hot again */
			if (LS_UNLIKELY(atomic_load_explicit(&f->state, memory_order_relaxed) == LS_FRAME_COOL))
			{
				uint32_t	cool = LS_FRAME_COOL;

				atomic_compare_exchange_strong(&f->state, &cool, LS_FRAME_HOT);
			}
			if (LS_UNLIKELY((++ls_bm_tl_hits & 1023) == 0))
				ls_bm_publish_hits(bm);
			return LS_OK;
		}
	}
	return ls_bm_fix_slow(bm, parent, swip, mode, child);
}

/*
 * Allocate a new page (new or recycled pid) in a free frame, returned
 * exclusively latched, zeroed (header filled), dirty.  May run eviction inline.
 * A new block's disk space is reserved in the file first, so its write-back
 * cannot fail for lack of space.  LS_NO_SPACE when no frame can be freed (or
 * the file has no block numbers left), LS_IO_ERROR (errno kept, see
 * ls_bm_last_error_errno: ENOSPC when the disk is full) when the space could
 * not be reserved.
 */
ls_status	ls_bm_alloc_page(ls_bm *bm, uint32_t dt_id, uint16_t dt_type, ls_guard *out);

/*
 * Drop the page in the exclusively latched frame `g` (after a merge or when a
 * data structure is destroyed): the frame becomes free, the pid reusable.
 * The caller has already removed the owning swip.
 */
void		ls_bm_free_page(ls_bm *bm, ls_guard *g);
/*
 * Same for a page that is not in memory (owning swip held a pid).  Also
 * gives back a block of an opened file that no page of the instance uses
 * (found by the owner's walk of its pages, see ls_btree_reclaim): the pool
 * counted every block below n_blocks as in use when the file was opened.
 */
void		ls_bm_free_pid(ls_bm *bm, ls_pid pid);
/*
 * Free blocks of dt_id's file waiting for reuse.  Freed blocks are kept in
 * chunks from a pool-wide array (about 4 blocks per frame, at least 63k);
 * a block freed when none is left is leaked until the file is opened again
 * (ls_bm_stats.leaked_blocks).
 */
uint32_t	ls_bm_dt_free_blocks(ls_bm *bm, uint32_t dt_id);

/* ------------------------------------------------------------------------
 * Page provider (eviction) and write-back
 * ------------------------------------------------------------------------ */

/*
 * One provider round: sample random frames, cool hot ones, write back dirty
 * cool ones in a batch (io_uring), evict clean cool ones, until the free
 * target is met or the sample budget is used.  Returns frames freed.
 */
uint64_t	ls_bm_provider_round(ls_bm *bm);

/* Run rounds in a thread of this process until ls_bm_provider_stop(). */
ls_status	ls_bm_provider_start_thread(ls_bm *bm);
void		ls_bm_provider_stop(ls_bm *bm);

/*
 * A scan that reads a large structure once (a sequential scan, as heap's
 * BULKREAD ring) gives back the page it loaded into frame idx when it
 * leaves it: the frame is cooled and evicted now if it still holds pid,
 * is clean and unlatched, and nobody touched it in between (a touch makes
 * it hot again, as always).  So the scan cycles through few frames instead
 * of pushing every other page out of the pool.  Returns 1 when evicted.
 * Call it holding no latch.
 */
uint64_t	ls_bm_release_loaded(ls_bm *bm, uint32_t idx, ls_pid pid);

/*
 * Write every dirty page (checkpoint / shutdown).  Takes each dirty frame's
 * latch shared (blocking): call it without holding latches.  A page changed
 * while its copy was being written stays dirty.
 */
ls_status	ls_bm_flush_all(ls_bm *bm);
/*
 * Write back and evict every page that can leave memory now (not latched,
 * evictable by its owner), regardless of the free target: for shutdown,
 * dropping a data structure's pages from memory, and tests.  Never blocks
 * on a latch.  Returns the number of frames freed.
 */
uint64_t	ls_bm_evict_all(ls_bm *bm);

/* ------------------------------------------------------------------------
 * Statistics and errors
 * ------------------------------------------------------------------------ */
typedef struct ls_bm_stats
{
	uint64_t	hits;
	uint64_t	misses;
	uint64_t	reads;
	uint64_t	writes;
	uint64_t	evictions;
	uint64_t	restarts;
	uint64_t	free_frames;
	uint64_t	n_frames;
	uint64_t	allocated_pages;	/* pages in use in all files */
	uint64_t	undo_appends;	/* undo journal appends (one fdatasync each) */
	uint64_t	undo_pages;		/* blocks saved in undo journals */
	uint64_t	leaked_blocks;	/* freed while no free-block chunk was left */
} ls_bm_stats;

void		ls_bm_get_stats(ls_bm *bm, ls_bm_stats *out);
/* Count one optimistic restart (data structures call it when they unwind). */
void		ls_bm_count_restart(ls_bm *bm);

/*
 * Page id and errno of the calling thread's last I/O / checksum / page-id
 * failure (errno 0 for checksum and page-id mismatches).
 */
ls_pid		ls_bm_last_error_pid(void);
int			ls_bm_last_error_errno(void);

#endif							/* LEANSTORE_BUFFER_H */
