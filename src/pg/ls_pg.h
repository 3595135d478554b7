/*
 * ls_pg.h - private declarations of the PostgreSQL glue (src/pg).
 *
 * Only files under src/pg include this header.  It ties PostgreSQL concepts
 * (Relation, Snapshot, ItemPointer, MinimalTuple) to the hot tier contract in
 * include/leanstore/hot.h.  See src/pg/README.md for the mapping.
 */
#ifndef LS_PG_H
#define LS_PG_H

#include "postgres.h"

#include "access/htup_details.h"
#include "access/multixact.h"
#include "access/relscan.h"
#include "access/tableam.h"
#include "executor/tuptable.h"
#include "storage/itemptr.h"
#include "storage/lmgr.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/snapshot.h"

#include "leanstore/hot.h"

/*
 * Rowid <-> TID mapping.  N must stay <= MaxHeapTuplesPerPage (291) because
 * tidbitmap.c rejects larger offsets.
 */
#define LS_ROWS_PER_BLOCK	291

static inline void
ls_rowid_to_tid(uint64 rowid, ItemPointer tid)
{
	ItemPointerSet(tid, (BlockNumber) (rowid / LS_ROWS_PER_BLOCK),
				   (OffsetNumber) (rowid % LS_ROWS_PER_BLOCK + 1));
}

/*
 * Virtual blocks fill like heap pages (src/pg/README.md, "Row identity"):
 * a row's rowid stays in the current block while heap would still put the
 * row on that page, else it starts the next block.  ls_heap_space gives a
 * row's bytes on a heap page (need) and what heap demands free before it
 * puts the row there (want), both counting the line pointer; the block's
 * byte budget is LS_BLOCK_CAPACITY.  rewrite: the rule of a table rewrite
 * (rewriteheap.c: fillfactor, no nearly-empty exception).
 */
#define LS_BLOCK_CAPACITY	(BLCKSZ - SizeOfPageHeaderData)

extern void ls_heap_space(Relation rel, Size heap_len, bool rewrite,
						  uint32 *need, uint32 *want);
extern uint64 ls_reserve_rowid(Relation rel, ls_hot_table *tbl, uint32 need,
							   uint32 want);
extern void ls_report_no_rowids(Relation rel) pg_attribute_noreturn();

/* LS_ROWID_INVALID for TIDs that can never name a row. */
static inline uint64
ls_tid_to_rowid(ItemPointer tid)
{
	OffsetNumber off = ItemPointerGetOffsetNumberNoCheck(tid);

	if (off < 1 || off > LS_ROWS_PER_BLOCK)
		return LS_ROWID_INVALID;
	return (uint64) ItemPointerGetBlockNumberNoCheck(tid) * LS_ROWS_PER_BLOCK +
		(off - 1);
}

/* Virtual blocks holding the rowids below limit. */
static inline BlockNumber
ls_blocks_for_limit(uint64 limit)
{
	uint64		blocks = (limit + LS_ROWS_PER_BLOCK - 1) / LS_ROWS_PER_BLOCK;

	return (BlockNumber) Min(blocks, (uint64) MaxBlockNumber);
}

/*
 * Longest version chain any walk follows; a longer one is corruption
 * (a cycle, or a chain no GC has cut for a million updates of one row).
 */
#define LS_CHAIN_BOUND		(1 << 20)

/* hold.c: the bound in effect (the asserting build's tests lower it) */
extern int	ls_chain_bound;
extern uint64 ls_epoch_serial;
extern void ls_chain_overrun(ls_hot_row *row) pg_attribute_cold;

/*
 * The one step of every version-chain walk: the version older than v,
 * counting the steps in *n (start at 0).  A walk that would go past
 * ls_chain_bound versions met a cycle or a runaway chain: it ends here
 * (NULL) and the corruption is raised (ERRCODE_DATA_CORRUPTED, naming the
 * table and rowid) when the epoch is left, never a silent stop.  Caller
 * inside an epoch; row is the row whose chain is walked.
 */
extern void ls_report_long_update_chain(Relation rel, uint64 rowid) pg_attribute_noreturn();

/*
 * The same bound for walks along update links across rows (a moved row's
 * next_rowid), outside any epoch: one more hop from rowid, or the
 * data-corrupted error.
 */
static inline void
ls_update_chain_step(Relation rel, uint64 rowid, int *hops)
{
	if (unlikely(++(*hops) > ls_chain_bound))
		ls_report_long_update_chain(rel, rowid);
}

static inline ls_hot_version *
ls_chain_next(ls_hot_row *row, ls_hot_version *v, int *n)
{
	ls_hot_version *older = ls_hot_version_older(v);

	if (unlikely(older != NULL && ++(*n) >= ls_chain_bound))
	{
		ls_chain_overrun(row);
		return NULL;
	}
	return older;
}

/* Bits of ls_hot_version.user_flags owned by the glue. */
#define LS_UF_SPECULATIVE	0x0001	/* speculative insert: token in next_rowid */
#define LS_UF_LOCAL			0x0002	/* in this backend's memory (palloc), never
									 * installed: an image for the cold tree */
#define LS_UF_COLD_SLOT		0x0004	/* a stand-in of a multi-chunk image whose
									 * first chunk has an xmax part (cold.c) */

/* ------------------------------------------------------------------------
 * init.c: process context, shared tier, life cycle, errors
 * ------------------------------------------------------------------------ */
extern int	ls_hot_memory_mb;

extern ls_hot *ls_shared_hot(void);
extern ls_hot_ctx *ls_ctx(void);

/* This backend's hot-tier context, NULL before the first use. */
extern ls_hot_ctx *ls_my_ctx;

/*
 * hold.c: epochs and the row latch, held like LWLocks (interrupts held,
 * released at abort, a leak at commit reported).
 */
extern void ls_epoch_enter(void);
extern void ls_epoch_exit(void);
extern void ls_row_lock(ls_hot_row *row);
extern void ls_row_unlock(ls_hot_row *row);
extern bool ls_row_trylock(ls_hot_row *row);
extern void ls_row_forget_latch(void);
extern void ls_release_held(void);
extern void ls_check_held_at_commit(void);
/* debug helpers for Assert: "is this row latch held by me", "in an epoch" */
extern bool ls_row_latch_held_by_me(const ls_hot_row *row);
extern bool ls_holds_row_latch(void);
extern bool ls_in_epoch(void);

/*
 * Fail points of the asserting build (hold.c, regress ls_hold): an armed
 * one throws an ERROR on this backend's next pass, to show that an error
 * inside an epoch or under the row latch leaves nothing held once the
 * (sub)transaction has aborted.  No-ops in release.
 */
typedef enum LsFailPoint
{
	LS_FAIL_NONE = 0,
	LS_FAIL_IN_EPOCH,			/* ls_heaptuple_size */
	LS_FAIL_ROW_LATCH,			/* ls_row_lock, with the latch taken */
	LS_FAIL_PACK_LATCH,			/* pack, with a row's latch just tried */
	LS_FAIL_DEAD_SLOT,			/* ls_adopt_dead finds no hot memory (no
								 * ERROR: armed until disarmed) */
	LS_FAIL_TIER_FULL			/* a version that may go to the cold tier
								 * finds no hot memory (the same) */
} LsFailPoint;
#ifdef LS_ASSERTS
extern LsFailPoint ls_test_fail_armed;
extern void ls_test_fail_fire(void) pg_attribute_noreturn();
#define ls_test_fail_at(point) \
	do { \
		if (unlikely(ls_test_fail_armed == (point))) \
			ls_test_fail_fire(); \
	} while (0)
#else
#define ls_test_fail_at(point) ((void) 0)
#endif

extern ls_hot_key ls_key_for_node(const RelFileNode *node);
extern ls_hot_table *ls_table_for(Relation rel);
extern ls_hot_table *ls_table_for_or_null(Relation rel);
extern Relation ls_open_leanstore(Oid relid, LOCKMODE mode);
extern BlockNumber ls_rel_cover_end(Relation rel);
extern void ls_rel_set_cover_end(Relation rel, BlockNumber end);
extern void ls_cover_rowid(Relation rel, uint64 rowid);
extern void ls_warn_lost(Relation rel);

/* Error paths without a Relation: the storage's table, by name if known */
extern char *ls_storage_relname(ls_hot_key key);
extern int	ls_storage_errcontext(const char *relname, ls_hot_key key);

/* Called with a status from the core; raises an error for anything but OK. */
extern void ls_report_status(ls_status st, Relation rel, const char *what) pg_attribute_noreturn();

/* Storage life cycle (transactional) */
extern void ls_storage_create(const RelFileNode *node, char persistence,
							  ls_hot_table **out);
extern void ls_storage_schedule_drop(Relation rel);
extern void ls_mark_written(void);

extern Oid	ls_am_oid(void);
/* Leave the hot tier (a worker done with it); ls_ctx attaches again. */
extern void ls_ctx_release(void);

/* ------------------------------------------------------------------------
 * log.c: leanstore's log, commit protocol, recovery
 * ------------------------------------------------------------------------ */
extern char *ls_log_directory;
extern int	ls_log_buffer_kb;

typedef struct LsLogStats
{
	uint64		commits;
	uint64		log_only_commits;
	uint64		wal_copy_commits;
	uint64		async_commits;	/* log-only commits that did not wait */
	uint64		recovery_wal_records;
	uint64		records;
	uint64		bytes;
	uint64		wait_us;
	uint64		rounds;
	uint64		round_us;
	uint64		round_records;
	uint64		end;
	uint64		recovery_us;
	uint64		recovery_records;
	uint64		recovery_rows;
	uint64		recovery_tables;
	uint64		checkpoints;
	uint64		checkpoint_us;
} LsLogStats;

extern void ls_log_register(void);
extern void ls_debug_crash(const char *point);
extern void ls_debug_image_pause(void);
extern void ls_debug_update_wait(void);
extern Size ls_log_shmem_size(void);
extern void ls_log_shmem_startup(void);
extern void ls_log_wait_ready(void);
extern uint64 ls_log_end(void);
extern void ls_log_worker_appends(bool on);
extern void ls_log_get_stats(LsLogStats *out);
extern void ls_log_create(const RelFileNode *node, char persistence);
extern void ls_log_truncate(ls_hot_table *tbl);
extern void ls_log_drop(ls_hot_key key);
extern void ls_log_rowid_used(ls_hot_table *tbl, uint64 rowid, bool new_storage);
extern void ls_log_note(ls_hot_table *tbl, uint64 rowid);
extern void ls_log_note_created(ls_hot_table *tbl);
extern void ls_log_cold_put(ls_hot_table *tbl, uint64 rowid, const char *payload,
							uint32 len, TransactionId xmin, bool frozen);
extern void ls_log_cold_remove(ls_hot_table *tbl, uint64 rowid);
extern void ls_log_holes(ls_hot_table *tbl);
extern void ls_log_cold_tomb(ls_hot_table *tbl, uint64 rowid, TransactionId xid);

/*
 * A hot row's logged_flags (beside logged_xid): LS_LOGGED_EARLY says that
 * logged_xid's record is a tombstone logged when the delete or update was
 * made in the cold tier (ls_log_cold_tomb: decided by clog), set by the
 * migration that brought the row in; a commit's record clears it.
 */
#define LS_LOGGED_EARLY		0x01
extern void ls_log_bulk_xid(ls_hot_table *tbl, TransactionId xid);
extern void ls_log_multi_durable(ls_hot_table *tbl, uint64 word);
extern bool ls_xid_commit_durable(TransactionId xid);
extern bool ls_xid_in_progress(TransactionId xid);
extern bool ls_xid_in_doubt(TransactionId xid, TransactionId *top_out);
extern TransactionId ls_xid_wait_target(TransactionId xid);
extern void ls_xid_commit_flush(TransactionId xid);
/*
 * Most entry bytes in one ls_log_cold_puts record (well within the
 * smallest log buffer's largest record); an entry is LS_LOG_PUT_HEAD bytes
 * and its payload.
 */
#define LS_LOG_PUTS_MAX		(16 * 1024)
#define LS_LOG_PUT_HEAD		8
extern void ls_log_cold_puts(ls_hot_table *tbl, int n, const uint64 *rowids,
							 const char *const *payloads, const uint32 *lens,
							 TransactionId xmin, bool frozen);
extern int	ls_checkpoint_timeout_s;
extern int	ls_max_log_size_mb;
extern bool ls_log_committer_rounds;
extern bool ls_commit_via_wal;
extern bool ls_checkpoint(bool wait_for_writers);
extern TransactionId ls_log_xid_horizon(void);
extern TransactionId ls_log_hold_frozenxid(TransactionId xid);
extern void ls_checkpoint_command(void);
extern bool ls_checkpoint_due(void);
extern void ls_log_pre_commit(void);
extern void ls_log_abort(void);
extern void ls_log_commit_done(void);
extern void ls_log_xact_end(void);

/* ------------------------------------------------------------------------
 * cold.c: the buffer pool, relation files, clean restarts
 * ------------------------------------------------------------------------ */
extern int	ls_buffer_pool_mb;

/* Hot table tags (ls_hot_table_get_tag) owned by the glue. */
#define LS_TAG_SPC			0	/* the storage's real tablespace */
#define LS_TAG_PERSISTENCE	1	/* relpersistence */
#define LS_TAG_READY		2	/* 1 once usable; 0 (the value a new table
								 * starts with) while cold.c opens it:
								 * others wait on the adopt lock */
#define LS_TAG_COLD			3	/* 1 + index of its cold descriptor, 0: none */
#define LS_TAG_HASHED		4	/* 1 once the hash cache got an entry for
								 * the table (hashscan.c) */
#define LS_TAG_HWM			5	/* rowids below HWM << 16 are covered by a
								 * durable reservation in the log (log.c) */
#define LS_TAG_BACKEND		6	/* a temporary table's owner: its file is
								 * t<backend>_<relfilenode> (cold.c) */
#define LS_TAG_HOLES_LO		7	/* virtual blocks [LO, HI) may hold rowids a
								 * crashed run handed out (cold.c "Holes"); */
#define LS_TAG_HOLES_HI		8	/* HI 0: none */

typedef struct LsColdStats
{
	uint64		pool_pages;
	uint64		pool_free;
	uint64		hits;
	uint64		misses;
	uint64		reads;
	uint64		writes;
	uint64		evictions;
	uint64		provider_rounds;
	uint64		rows_packed;
	uint64		rows_migrated;
	uint64		cold_reads;
	uint64		tables_packed;
	uint64		tables_loaded;
	uint64		cold_pages;
	uint64		pages_leaked;	/* freed while no free-block chunk was left */
	uint64		writes_spilled; /* writes sent to the cold tree: tier full */
	uint64		cold_rows;		/* row images in open trees, counted ones */
	uint32		epoch;
} LsColdStats;

extern bool ls_pack_eager;
extern int	ls_pack_threshold;

extern Size ls_cold_shmem_size(int max_tables);
extern void ls_cold_shmem_request(int max_tables);
extern void ls_cold_shmem_startup(int max_tables);
extern struct ls_bm *ls_cold_bm(void);
typedef enum LsAdoptResult
{
	LS_ADOPT_OK,				/* opened over its file */
	LS_ADOPT_EMPTY,				/* the file has no page at all */
	LS_ADOPT_LOST,				/* an image that cannot be trusted */
} LsAdoptResult;
extern ls_hot_table *ls_cold_adopt_node(ls_hot_key key, const RelFileNode *node,
										char persistence, const char *name,
										LsAdoptResult *res, const char **why);
extern ls_hot_table *ls_cold_adopt(Relation rel, const char **why);
extern void ls_cold_pack_all(uint64 log_end);
extern void ls_cold_start_state(bool *clean, uint64 *log_start);
extern bool ls_cold_from_backup(void);
extern void ls_cold_log_lost(uint64 new_log_start);
extern void ls_cold_set_log_start(uint64 log_start, uint64 cover_pos, uint64 cover_gsn);
extern void ls_cold_log_cover(uint64 *cover_pos, uint64 *cover_gsn);
extern void ls_cold_replay_put(ls_hot_table *tbl, uint64 rowid, const char *payload,
							   uint32 len, TransactionId xmin);
extern void ls_cold_replay_remove(ls_hot_table *tbl, uint64 rowid);
extern void ls_cold_mark_holes_dead(ls_hot_table *tbl, uint64 lo, uint64 hi);
extern void ls_holes_add(ls_hot_table *tbl, uint64 lo, uint64 hi);
/* rowids recovery or adoption made holes for want of a DEAD slot */
extern uint64 ls_dead_as_holes;
extern bool ls_holes_get(ls_hot_table *tbl, uint64 *lo, uint64 *hi);
extern void ls_holes_clear(ls_hot_table *tbl);
extern bool ls_rowid_holds_row(ls_hot_table *tbl, uint64 rowid);
extern bool ls_cold_has_tree(ls_hot_table *tbl);
extern bool ls_cold_file_is_tree(const char *path);
extern bool ls_cold_clean_point(bool held);
extern void ls_cold_hold_trees(bool hold);
extern void ls_cold_preflush(void);
extern void ls_cold_get_stats(LsColdStats *out);
extern void ls_worker_register(void);
/* leanstore's own files in the data directory (state, undo journals) */
#define LS_STATE_DIR		"pg_leanstore"
/* Create directory path (and missing parents); FATAL when that fails. */
extern void ls_make_directory(const char *path);
extern void ls_write_file_durably(const char *path, const char *buf, int len, int elevel);

/*
 * Reads over both tiers (caller inside an epoch).  A row of the cold tree
 * comes back as a stand-in: an ls_hot_row (origin LS_ORIGIN_COLD) with one
 * frozen version, private to this backend and valid until it leaves its
 * epoch.  Stand-ins are read-only: a write migrates the row first
 * (ls_cold_migrate).  Hot rows shadow cold images of the same rowid.
 */
extern ls_hot_row *ls_row_get(ls_hot_table *tbl, uint64 rowid);
extern ls_hot_row *ls_row_get_hinted(ls_hot_table *tbl, uint64 rowid,
									 ls_hot_map_hint *hint);

/*
 * A remembered row reference (the hash cache keeps one beside the rowid,
 * see ls_hot_row_get_ref): ls_row_get_ref returns the remembered header
 * when its serial still holds (no RID-map walk), else ls_row_get's answer;
 * then, when the row is hot, ref holds the reference to remember instead
 * and fresh is set.
 */
typedef struct LsRowRef
{
	ls_hot_row *row;			/* NULL: none */
	uint64		serial;
	bool		fresh;			/* out: row and serial were taken anew (set,
								 * never cleared) */
} LsRowRef;

extern ls_hot_row *ls_row_get_ref(ls_hot_table *tbl, uint64 rowid, LsRowRef *ref);
extern uint32 ls_rows_batch(ls_hot_table *tbl, uint64 *cursor, uint64 end,
							ls_hot_row **rows, uint32 max);

/*
 * A scan's buffer for cold rows built in place (ls_rows_batch_direct): an
 * image of one chunk, with no xmax part, whose inserter is frozen, is
 * vis_xid (an inserter the caller found visible to its MVCC snapshot) or
 * committed below the snapshot's xmin is visible to that snapshot; it
 * becomes a HeapTuple at buf + used, copied straight from the leaf under
 * its latch, instead of a stand-in.
 */
typedef struct LsColdDirect
{
	char	   *buf;
	Size		cap;
	Size		used;			/* in and out */
	Oid			relid;
	TransactionId vis_xid;		/* InvalidTransactionId: none */
	TransactionId snap_xmin;	/* the snapshot's xmin: an inserter below it
								 * that committed (ls_xmin_seen_committed)
								 * is visible too */
} LsColdDirect;

extern uint32 ls_rows_batch_direct(ls_hot_table *tbl, uint64 *cursor, uint64 end,
								   ls_hot_row **rows, HeapTuple *tups,
								   uint32 max, LsColdDirect *direct);
extern uint64 ls_table_used_end(ls_hot_table *tbl);
extern uint64 ls_cold_table_pages(ls_hot_table *tbl);
extern int64 ls_cold_table_rows(ls_hot_table *tbl);
extern uint64 ls_cold_table_free_pages(ls_hot_table *tbl);
/* rowid LS_ROWID_INVALID (no stand-in): the tree's structure is broken */
typedef void (*ls_cold_verify_cb) (void *arg, uint64 rowid, ls_hot_row *standin,
								   const char *bad);
extern uint64 ls_cold_verify(ls_hot_table *tbl, ls_cold_verify_cb cb, void *arg);
extern void ls_cold_hold_pack(bool hold);
extern void ls_standins_release(void);
extern ls_hot_table *ls_last_read_table(uint64 rowid);

static inline bool
ls_row_is_standin(const ls_hot_row *row)
{
	return row->origin == LS_ORIGIN_COLD;
}

/* Bulk loads: rows of large loads go straight to the tree. */
extern int	ls_bulk_load_rows;

/* leanstore.cold_writes: when deletes and updates of cold rows stay cold */
typedef enum LsColdWrites
{
	LS_CW_OFF,					/* never: every write migrates its row */
	LS_CW_AUTO,					/* past bulk_load_rows, when the hot tier is
								 * filled above pack_threshold */
	LS_CW_ALWAYS,				/* past bulk_load_rows (tests) */
} LsColdWrites;
extern int	ls_cold_writes;
extern bool ls_bulk_cold(Relation rel);
extern bool ls_cold_can_write(Relation rel);
extern bool ls_cold_rewrite_allowed(Relation rel);
extern void ls_cold_note_full(void);
extern bool ls_cold_full_seen(void);
extern bool ls_migrate_soft;
extern bool ls_cold_read_once;
extern bool ls_migrate_found_full;
extern void ls_cold_load(Relation rel, ls_hot_table *tbl, int n, const uint64 *rowids,
						 HeapTuple *tups, TransactionId xmin, CommandId cmin,
						 bool frozen);
extern void ls_cold_insert(Relation rel, ls_hot_table *tbl, uint64 rowid,
						   ls_hot_version *v);

/* Writes (outside epochs): bring rowid's cold image into the hot tier. */
extern bool ls_cold_migrate(Relation rel, ls_hot_table *tbl, uint64 rowid);
extern bool ls_cold_delete(Relation rel, ls_hot_table *tbl, uint64 rowid,
						   TransactionId xid, CommandId cid, Snapshot snapshot,
						   Snapshot crosscheck, HeapTuple *oldtup);
extern bool ls_cold_lock_for_update(Relation rel, ls_hot_table *tbl, uint64 rowid,
									TransactionId xid, Snapshot snapshot,
									Snapshot crosscheck, LockTupleMode mode,
									HeapTuple *oldtup, uint64 *locked);
extern void ls_cold_set_lockers(ls_hot_table *tbl, uint64 rowid, ls_hot_version *v,
								uint64 lockers);
extern void ls_cold_insert_speculative(Relation rel, ls_hot_table *tbl, uint64 rowid,
									   ls_hot_version *v, uint32 token);
extern HeapTuple ls_cold_complete_speculative(Relation rel, ls_hot_table *tbl,
											  uint64 rowid, bool succeeded,
											  bool *found);
extern TM_Result ls_cold_committed_writer(ls_hot_table *tbl, uint64 rowid,
										  TM_FailureData *tmfd);
extern bool ls_cold_wait_holder(Relation rel, ls_hot_table *tbl, uint64 rowid,
								LockWaitPolicy policy, LockTupleMode mode,
								XLTW_Oper oper, bool *would_block);
extern bool ls_cold_lock_row(Relation rel, ls_hot_table *tbl, uint64 rowid,
							 TransactionId xid, Snapshot judge, Snapshot shown_to,
							 uint64 lock_word, uint64 expect, TransactionId prior,
							 HeapTuple *tup, bool *newer);
/* A running no-key update in a cold image (ls_cold_lockers) */
typedef struct LsColdUpdater
{
	TransactionId xid;			/* the updater; invalid: none */
	uint64		next_rowid;		/* its new version */
} LsColdUpdater;

extern uint64 ls_cold_lockers(ls_hot_table *tbl, uint64 rowid, LsColdUpdater *upd);
extern bool ls_cold_inserted_by(ls_hot_table *tbl, uint64 rowid, TransactionId prior);
extern bool ls_hot_has_row(ls_hot_table *tbl, uint64 rowid);
extern bool ls_cold_finish_update(Relation rel, ls_hot_table *tbl, uint64 rowid,
								  TransactionId xid, CommandId cid, uint64 locked,
								  uint64 update_word, uint64 lockers,
								  uint64 newrowid, ls_hot_version *v, uint64 *now);
/* Under the row latch, before a migrated row leaves as DEAD. */
extern bool ls_cold_image_guard(ls_hot_table *tbl, ls_hot_row *row);
extern void ls_cold_image_unguard(bool held);
extern bool ls_cold_forget_image(ls_hot_table *tbl, ls_hot_row *row);
/* The storage goes (drop, truncate): forget its tree without writing it. */
extern void ls_cold_drop_for(ls_hot_table *tbl);
extern void ls_cold_forget_journal(Oid spc, Oid db, Oid rel, bool durably);
extern void ls_cold_sweep_journals(Oid db);
/* Make room in the hot tier by packing cold rows (allocation failed). */
extern bool ls_cold_relieve(void);
/* Sampled access tracking for pack (reads and writes of single rows). */
static inline void
ls_row_touch(ls_hot_row *row)
{
	if (atomic_load_explicit(&row->access, memory_order_relaxed) == 0 &&
		!ls_row_is_standin(row))
		atomic_store_explicit(&row->access, 1, memory_order_relaxed);
}

/* ------------------------------------------------------------------------
 * visibility.c
 * ------------------------------------------------------------------------ */

/* A copy of the MVCC words of one version, taken inside an epoch. */
typedef struct LsVersionInfo
{
	TransactionId xmin;
	uint32		xmin_flags;
	TransactionId xmax;			/* the updater/deleter or the single locker;
								 * for a multixact with an update member, that
								 * member's xid; for a lock-only multixact,
								 * the multixact id */
	uint32		xmax_flags;
	uint64		xmax_raw;		/* xmax_word as loaded (CAS expectations) */
	MultiXactId xmax_multi;		/* the multixact when LS_HV_XMAX_IS_MULTI */
	CommandId	cmin;
	CommandId	cmax;
	uint64		next_rowid;
	uint16		user_flags;
} LsVersionInfo;

extern void ls_version_info(ls_hot_version *v, LsVersionInfo *info);

typedef enum LsXidStatus
{
	LS_XS_COMMITTED,
	LS_XS_ABORTED,				/* also: no xid at all (xmax) */
	LS_XS_CURRENT,				/* this transaction or a live subtransaction */
	LS_XS_IN_PROGRESS,			/* another running transaction */
} LsXidStatus;

extern LsXidStatus ls_xmin_status(ls_hot_version *v, LsVersionInfo *info);
extern LsXidStatus ls_xmax_status(ls_hot_version *v, LsVersionInfo *info);
extern TransactionId ls_multi_update_xid(MultiXactId multi);

extern bool ls_xmin_committed(ls_hot_version *v, const LsVersionInfo *info);
extern bool ls_xmin_aborted(ls_hot_version *v, const LsVersionInfo *info);
extern bool ls_xmax_is_lock_only(const LsVersionInfo *info);
extern bool ls_xmax_committed_update(ls_hot_version *v, LsVersionInfo *info);

/*
 * The inserter clog last said committed to this backend (the xmin of a
 * version it hinted committed).  Commit is final, so cold images of that
 * inserter are read as hinted committed (stand-ins, in-place builds) with no
 * clog lookup: a bulk load's rows, read one after another, settle at once.
 */
extern TransactionId ls_xmin_seen_committed;

extern bool ls_version_visible(ls_hot_version *v, Snapshot snapshot);
extern ls_hot_version *ls_row_visible_version(ls_hot_row *row, Snapshot snapshot);

/*
 * MVCC fast path for a settled version: inserter frozen, or hinted
 * committed and older than every xid the snapshot considers running (below
 * snapshot->xmin, where XidInMVCCSnapshot answers "not running" at once),
 * and no deleter (no xmax, an aborted one, or only lockers).  true means
 * visible to snapshot (an MVCC snapshot); false means "apply the full
 * rules", not "invisible".  Reads each word once, no clog, no hints.
 */
static inline bool
ls_visible_mvcc_settled(ls_hot_version *v, Snapshot snapshot)
{
	uint64		xmin_word = atomic_load_explicit(&v->xmin_word, memory_order_acquire);
	uint64		xmax_word;
	uint32		xmin_flags = ls_hv_flags(xmin_word);

	if (!(xmin_flags & LS_HV_XMIN_FROZEN))
	{
		if (!(xmin_flags & LS_HV_XMIN_COMMITTED) ||
			!TransactionIdPrecedes(ls_hv_xid(xmin_word), snapshot->xmin))
			return false;
	}
	xmax_word = atomic_load_explicit(&v->xmax_word, memory_order_acquire);
	return ls_hv_xid(xmax_word) == InvalidTransactionId ||
		(ls_hv_flags(xmax_word) & (LS_HV_XMAX_ABORTED | LS_HV_XMAX_LOCK_ONLY)) != 0;
}

/*
 * ls_row_visible_version with the settled case of the newest version
 * decided inline (scans call this once per row).
 */
static inline ls_hot_version *
ls_row_visible_version_fast(ls_hot_row *row, Snapshot snapshot)
{
	ls_hot_version *v = ls_hot_row_newest(row);

	if (snapshot->snapshot_type == SNAPSHOT_MVCC && v != NULL &&
		ls_visible_mvcc_settled(v, snapshot))
		return v;
	return ls_row_visible_version(row, snapshot);
}

typedef enum LsVacuumState
{
	LS_V_DEAD,					/* no snapshot can ever see it */
	LS_V_LIVE,					/* visible to all */
	LS_V_RECENTLY_DEAD,			/* deleted, some snapshot may still see it */
	LS_V_INSERT_IN_PROGRESS,
	LS_V_DELETE_IN_PROGRESS,
} LsVacuumState;

extern LsVacuumState ls_version_vacuum_state(ls_hot_version *v,
											 GlobalVisState *vistest,
											 TransactionId *dead_after);
extern bool ls_version_xmin_now_aborted(ls_hot_version *v);
extern LsVacuumState ls_row_vacuum_state(ls_hot_row *row, GlobalVisState *vistest,
										 ls_hot_version **current,
										 TransactionId *dead_after);
extern bool ls_row_surely_dead(ls_hot_row *row, GlobalVisState *vistest);

/* cold.c: VACUUM of a cold row that clog decides (bulk loads, cold deletes) */
extern LsVacuumState ls_cold_settle(ls_hot_table *tbl, uint64 rowid,
									 TransactionId oldest_xmin,
									 TransactionId freeze_limit,
									 TransactionId *kept_xmin);

/*
 * SSI rw-conflicts out of one read, or of one batch of rows: collected
 * inside an epoch (ls_ssi_collect), reported outside it (ls_ssi_report).
 * A row whose writers do not fit in the room left is named in redo and
 * collected again at report time, with room for its whole chain.  A batch
 * takes another row while ls_ssi_room says so.
 */
#define LS_SSI_MAX_XIDS 8		/* the room one row takes in the common case */
#define LS_SSI_REDO_ROWS 4

typedef struct LsSsiBatch
{
	TransactionId *xids;		/* the caller's array of cap entries */
	int			n;
	int			cap;
	int			nredo;
	uint64		redo[LS_SSI_REDO_ROWS];
} LsSsiBatch;

static inline void
ls_ssi_init(LsSsiBatch *b, TransactionId *xids, int cap)
{
	b->xids = xids;
	b->n = 0;
	b->cap = cap;
	b->nredo = 0;
}

static inline bool
ls_ssi_room(const LsSsiBatch *b)
{
	return b->n <= b->cap - LS_SSI_MAX_XIDS && b->nredo < LS_SSI_REDO_ROWS;
}

static inline bool
ls_ssi_any(const LsSsiBatch *b)
{
	return b->n > 0 || b->nredo > 0;
}

extern void ls_ssi_collect(LsSsiBatch *b, ls_hot_row *row, ls_hot_version *visible);
extern void ls_ssi_report(Relation rel, Snapshot snapshot, LsSsiBatch *b);

/* Newest version whose xmin did not abort (NULL when none). */
extern ls_hot_version *ls_row_newest_valid(ls_hot_row *row);

/* ------------------------------------------------------------------------
 * tuple.c: version payload <-> tuple slots
 * ------------------------------------------------------------------------ */
extern HeapTuple ls_version_to_heaptuple(ls_hot_version *v, Relation rel,
										 uint64 rowid, char *buf, Size bufsize);
extern Size ls_heaptuple_size(ls_hot_version *v, Relation rel);
extern void ls_store_version(ls_hot_version *v, Relation rel, uint64 rowid,
							 TupleTableSlot *slot);
extern void ls_slot_store_owned(TupleTableSlot *slot, Relation rel, HeapTuple tup);
extern HeapTuple ls_version_copy_out(ls_hot_version *v, Oid relid, uint64 rowid,
									 char *buf);
extern void ls_report_bad_version(Relation rel) pg_attribute_noreturn();

/*
 * Bytes ls_version_copy_out needs for v (MAXALIGNed), or 0 when v's payload
 * length is impossible (corruption: the caller reports it with
 * ls_report_bad_version after leaving the epoch).  Never throws.
 */
static inline Size
ls_version_tuple_size(ls_hot_version *v)
{
	uint32		len = v->len;

	if (len > LS_HOT_MAX_PAYLOAD || len < SizeofMinimalTupleHeader)
		return 0;
	return MAXALIGN(HEAPTUPLESIZE + MINIMAL_TUPLE_OFFSET + len);
}

/*
 * Store a tuple that lives in a scan's or fetch's own buffer (built by
 * ls_version_copy_out) into slot without copying it: the slot does not own
 * it, and the buffer is only overwritten once the same scan stores its next
 * tuple into this slot (or ends), like heap's tuples in a pinned page.
 * Slots of another kind get their own copy.
 */
static inline void
ls_store_borrowed(HeapTuple tup, TupleTableSlot *slot)
{
	if (TTS_IS_HEAPTUPLE(slot))
		ExecStoreHeapTuple(tup, slot, false);
	else
		ExecForceStoreHeapTuple(tup, slot, false);
}
/*
 * Where a new version is made: in the hot tier (an error when it is full),
 * in the hot tier or nowhere (NULL when it is full), or in this backend's
 * memory (LS_UF_LOCAL: for a row that goes straight to the cold tree).
 */
typedef enum LsVersionHome
{
	LS_VH_TIER,
	LS_VH_TIER_OR_NULL,
	LS_VH_LOCAL,
} LsVersionHome;

extern ls_hot_version *ls_version_from_heaptuple(Relation rel, HeapTuple tup);
/*
 * A row's payload (the MinimalTuple image every tier stores) from its heap
 * form: its length (ERROR when too big), and the image written to dst.
 */
extern uint32 ls_payload_len(HeapTuple tup);
extern void ls_payload_from_heaptuple(HeapTuple tup, char *dst, uint32 len);
extern ls_hot_version *ls_version_from_heaptuple_in(Relation rel, HeapTuple tup,
													LsVersionHome home);
extern void ls_version_discard(ls_hot_version *v);
extern ls_hot_version *ls_version_copy(Relation rel, ls_hot_version *src,
									   uint32 len, const void *payload);
extern ls_hot_version *ls_version_copy_in(Relation rel, ls_hot_version *src,
										  uint32 len, const void *payload,
										  LsVersionHome home);

/* ------------------------------------------------------------------------
 * Scan descriptor (tableam.c, ddl.c)
 * ------------------------------------------------------------------------ */
typedef struct LsParallelScanDescData
{
	ParallelTableScanDescData base;
	uint64		limit;			/* rowids below this are scanned */
	pg_atomic_uint64 next;		/* next chunk start */
} LsParallelScanDescData;

typedef LsParallelScanDescData *LsParallelScanDesc;

#define LS_PARALLEL_CHUNK	4096

/* Rows a scan copies per epoch (and at most per batch). */
#define LS_BATCH_ROWS		256
/* Initial size of a scan's batch buffer (grown for wide rows). */
#define LS_BATCH_BYTES		(64 * 1024)

typedef struct LsScanDescData
{
	TableScanDescData base;
	ls_hot_table *tbl;
	uint64		cursor;			/* next rowid to look at */
	uint64		end;			/* exclusive bound of this range */
	uint64		chunk_end;		/* parallel: end of the current chunk */
	bool		started;
	bool		at_end;			/* forward direction ran off the end */
	/* TID range */
	uint64		tr_min;
	uint64		tr_max;			/* inclusive */
	/* bitmap / analyze / sample: rows of the current block */
	BlockNumber cur_block;
	int			nrows;
	int			nextrow;
	uint64		rowids[LS_ROWS_PER_BLOCK];
	/* heap_blks_* statistics: blocks before this one were counted */
	BlockNumber stat_block;
	/* ANALYZE and bitmap scans: md.c can open blocks below this */
	BlockNumber cover_end;
	/* sample scan */
	BlockNumber sample_next_block;
	OffsetNumber sample_offset;
	/*
	 * Batch of visible rows copied inside one epoch (sequential, TID range
	 * and bitmap scans), handed out one by one without copying again: the
	 * slot borrows btups[bnext - 1] until the next call.
	 */
	MemoryContext mcxt;			/* the scan's context (buffer lives there) */
	char	   *bbuf;
	Size		bbufsize;
	int			bn;				/* rows in the batch */
	int			bnext;			/* next one to hand out */
	bool		bexhausted;		/* forward: nothing after this batch */
	uint64		last_rowid;		/* last row handed out (LS_ROWID_INVALID: none) */
	HeapTuple	btups[LS_BATCH_ROWS];
	/*
	 * Forward MVCC batches: an inserter of cold rows (not this transaction)
	 * seen visible to rs_snapshot, so later images it inserted are built in
	 * place (LsColdDirect); fixed by the snapshot, reset with the scan.
	 */
	TransactionId vis_xid;
	Snapshot	vis_snapshot;	/* the snapshot vis_xid was decided for */
	bool		no_direct;		/* next batch: no row built in place (the
								 * last one's first row found the buffer
								 * taken by rows built after it) */
	/* bitmap: candidates rowids[ncand_next .. nrows) not yet looked at */
	int			ncand_next;
	/* analyze: the current block's sample rows, copied in one pass */
	MemoryContext acxt;			/* reset per block */
	HeapTuple  *atups;			/* LS_ROWS_PER_BLOCK of them, in acxt */
	ls_hot_map_hint hint;		/* bitmap: RID-map leaf of the last lookup */
} LsScanDescData;

typedef LsScanDescData *LsScanDesc;

extern int	ls_scan_next_rows(LsScanDesc scan, ls_hot_row **rows, HeapTuple *tups,
							  int max, LsColdDirect *direct);
extern uint64 ls_rel_rowid_limit(Relation rel);
extern BlockNumber ls_table_nblocks(ls_hot_table *tbl);

/* vismap.c: the visibility map fork (all-visible bits per virtual block) */
extern void ls_vm_note_insert(Relation rel, ls_hot_table *tbl, uint64 rowid);
extern void ls_vm_note_write(Relation rel, ls_hot_table *tbl, uint64 rowid,
							 bool holds_block);
extern void ls_vm_forget_seen(void);
extern void ls_vm_mark_loaded(Relation rel, ls_hot_table *tbl, uint64 lo, uint64 hi);
extern void ls_frozen_load_finish(Relation rel, int options);
extern bool ls_vm_row_marked(ls_hot_row *row);
extern void ls_vm_clear(Relation rel, ls_hot_table *tbl, uint64 rowid);
extern BlockNumber ls_vm_set_all_visible(Relation rel, ls_hot_table *tbl,
										 TransactionId oldest_xmin);

/* abort.c: rows and in-place versions of an aborted (sub)transaction leave at once */
extern void ls_abort_note_insert(ls_hot_table *tbl, uint64 rowid,
								 TransactionId xid);
extern void ls_abort_inserts(int level);
extern void ls_commit_sub_inserts(int level);
extern void ls_forget_inserts(void);
extern uint64 ls_xact_hot_versions(void);

/*
 * progress.c: pg_stat_progress_* (param := rowid's block when it grew) and
 * the asserting build's pause points for tests (no-ops in release).
 */
extern void ls_progress_rowid(int param, uint64 rowid, BlockNumber *reported);
#ifdef LS_ASSERTS
extern void ls_test_pause(const char *name);
extern void ls_test_cancel(const char *name);
#else
#define ls_test_pause(name) ((void) 0)
#define ls_test_cancel(name) ((void) 0)
#endif

/*
 * tableam.c: the hash lookup's fetch by rowid, kept in the caller's state:
 * the visible version as a HeapTuple in buf (valid until the next fetch,
 * which may grow and free it: clear the slots pointing into it first), or
 * NULL.  Statistics, predicate locks and SSI as for an index fetch.
 */
typedef struct LsRowidFetch
{
	ls_hot_table *tbl;
	char	   *buf;			/* the copy of the visible version */
	Size		bufsize;
	bool		owned;			/* buf was allocated by a fetch (in mcxt) */
	MemoryContext mcxt;
	ls_hot_map_hint hint;		/* RID-map leaf of the last fetch */
	BlockNumber last_block;		/* block of the last fetch (statistics) */
	LsRowRef	ref;			/* set by the caller before each fetch */
} LsRowidFetch;

extern void ls_rowid_fetch_init(LsRowidFetch *f, Relation rel, char *buf,
								Size bufsize);
extern HeapTuple ls_rowid_fetch(Relation rel, LsRowidFetch *f, ItemPointer tid,
								Snapshot snapshot);
extern void ls_rowid_fetch_end(LsRowidFetch *f);

/* utility.c: ProcessUtility hook (CREATE DATABASE from a template) */
extern void ls_utility_init(void);

/* publication.c: leanstore tables stay out of logical replication */
extern void ls_check_unpublished(Relation rel, CmdType cmd);
extern void ls_check_publication(const char *name);

/* ddl.c */
extern void ls_vacuum_rel(Relation rel, struct VacuumParams *params,
						  BufferAccessStrategy bstrategy);
extern void ls_set_new_filenode(Relation rel, const RelFileNode *newrnode,
								char persistence, TransactionId *freezeXid,
								MultiXactId *minmulti);
extern void ls_nontransactional_truncate(Relation rel);
extern void ls_copy_data(Relation rel, const RelFileNode *newrnode);
extern void ls_copy_for_cluster(Relation OldTable, Relation NewTable,
								Relation OldIndex, bool use_sort,
								TransactionId OldestXmin,
								TransactionId *xid_cutoff,
								MultiXactId *multi_cutoff,
								double *num_tuples, double *tups_vacuumed,
								double *tups_recently_dead);
extern double ls_index_build_range_scan(Relation table_rel, Relation index_rel,
										struct IndexInfo *index_info,
										bool allow_sync, bool anyvisible,
										bool progress, BlockNumber start_blockno,
										BlockNumber numblocks,
										IndexBuildCallback callback,
										void *callback_state,
										TableScanDesc scan);
extern void ls_index_validate_scan(Relation table_rel, Relation index_rel,
								   struct IndexInfo *index_info,
								   Snapshot snapshot,
								   struct ValidateIndexState *state);
extern void ls_prune_row(Relation rel, ls_hot_table *tbl, ls_hot_row *row,
						 GlobalVisState *vistest);
extern void ls_collect_row(ls_hot_table *tbl, ls_hot_row *row,
						   GlobalVisState *vistest);

/* dml.c */
extern void ls_tuple_insert(Relation rel, TupleTableSlot *slot, CommandId cid,
							int options, struct BulkInsertStateData *bistate);
extern void ls_tuple_insert_speculative(Relation rel, TupleTableSlot *slot,
										CommandId cid, int options,
										struct BulkInsertStateData *bistate,
										uint32 specToken);
extern void ls_tuple_complete_speculative(Relation rel, TupleTableSlot *slot,
										  uint32 specToken, bool succeeded);
extern void ls_multi_insert(Relation rel, TupleTableSlot **slots, int nslots,
							CommandId cid, int options,
							struct BulkInsertStateData *bistate);
extern TM_Result ls_tuple_delete(Relation rel, ItemPointer tid, CommandId cid,
								 Snapshot snapshot, Snapshot crosscheck,
								 bool wait, TM_FailureData *tmfd,
								 bool changingPart);
extern TM_Result ls_tuple_update(Relation rel, ItemPointer otid,
								 TupleTableSlot *slot, CommandId cid,
								 Snapshot snapshot, Snapshot crosscheck,
								 bool wait, TM_FailureData *tmfd,
								 LockTupleMode *lockmode, bool *update_indexes);
extern uint64 ls_xmax_settle(uint64 word);
extern bool ls_status_conflicts(MultiXactStatus status, LockTupleMode mode);
extern MultiXactStatus ls_mx_status(LockTupleMode mode, bool is_update);
extern uint64 ls_cold_write_word(uint64 held, TransactionId xid, MultiXactStatus status,
								 uint64 *expect);
extern TM_Result ls_tuple_lock(Relation rel, ItemPointer tid, Snapshot snapshot,
							   TupleTableSlot *slot, CommandId cid,
							   LockTupleMode mode, LockWaitPolicy wait_policy,
							   uint8 flags, TM_FailureData *tmfd);

/*
 * The asserting build (make LS_ASSERTS=1) turns PostgreSQL's Assert on in
 * the glue although the server was built without assertions.
 */
#ifdef LS_ASSERTS
#undef Assert
#define Assert(condition) \
	do { \
		if (!(condition)) \
			ExceptionalCondition(#condition, "FailedAssertion", \
								 __FILE__, __LINE__); \
	} while (0)
#undef AssertMacro
#define AssertMacro(condition) \
	((void) ((condition) || \
			 (ExceptionalCondition(#condition, "FailedAssertion", \
								   __FILE__, __LINE__), 0)))
#endif

#endif							/* LS_PG_H */
