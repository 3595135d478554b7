/*
 * leanstore/hot.h - the hot in-memory row tier (BTrim / IMRS style).
 *
 * The tier lives in one caller-provided shared region (leanstore.hot_memory in
 * the server).  It stores, per table, rows by 64-bit rowid:
 *
 *   table --RID-map--> row header (ls_hot_row) --newest--> version -> older ...
 *
 * The core stores versions and walks chains; it never decides visibility.
 * The MVCC words of a version (xmin, xmax, command ids, flag bits, forward
 * link) are interpreted by the PostgreSQL glue, which owns the meaning of the
 * LS_HV_* flag bits below.
 *
 * Concurrency invariants:
 *  - Readers take no latch: they enter an epoch (ls_hot_epoch_enter), look up
 *    the RID-map, walk the chain and copy what they need, then leave the
 *    epoch.  Memory unlinked while any process is inside an older epoch is
 *    not reused until that process leaves it (epoch-based reclamation).
 *    An epoch is never held across a return to the executor.
 *  - Writers of one row serialise on the row's short latch (ls_hot_row_lock):
 *    installing a version, setting xmax words, truncating the chain, removing
 *    the row.  The latch is never held while waiting for a transaction or
 *    calling anything that can throw; PostgreSQL's heavyweight tuple lock and
 *    XactLockTableWait (in the glue) provide the long-term serialisation.
 *  - A version's payload bytes and xmin/cmin never change after it is
 *    installed; xmax_word, cmax and next_rowid may change under the row latch
 *    and are read atomically (64-bit words).
 *  - Rowids are never reused.  A RID-map slot goes NULL -> row -> DEAD ->
 *    NULL: DEAD means "row gone, index entries may still point here"; only
 *    VACUUM (after deleting those index entries) turns DEAD into NULL.
 *  - The RID-map's memory follows its contents: a chunk of 32 slots, and a
 *    map node, is freed (epoch-protected) as soon as every slot under it is
 *    NULL, by the remove, evict, forget or failed insert that emptied it.
 *    A DEAD slot keeps its chunk.
 */
#ifndef LEANSTORE_HOT_H
#define LEANSTORE_HOT_H

#include "leanstore/common.h"

#define LS_ROWID_INVALID	UINT64_MAX
#define LS_XID_INVALID		0u

/* The RID-map addresses rowids 0 .. LS_HOT_MAX_ROWID - 1 (2^40). */
#define LS_HOT_MAX_ROWID	(UINT64_C(1) << 40)
/* Largest version payload ls_hot_version_alloc accepts (64 KiB blocks). */
#define LS_HOT_MAX_PAYLOAD	(65536u - 64u)

/* Flag bits of xmin_word / xmax_word (upper 32 bits); meaning owned by the glue. */
#define LS_HV_XMIN_COMMITTED	(1u << 0)
#define LS_HV_XMIN_ABORTED		(1u << 1)
#define LS_HV_XMIN_FROZEN		(1u << 2)
#define LS_HV_XMAX_COMMITTED	(1u << 0)
#define LS_HV_XMAX_ABORTED		(1u << 1)
#define LS_HV_XMAX_IS_MULTI		(1u << 2)
#define LS_HV_XMAX_LOCK_ONLY	(1u << 3)
#define LS_HV_XMAX_KEYSHR_LOCK	(1u << 4)
#define LS_HV_XMAX_EXCL_LOCK	(1u << 5)
#define LS_HV_XMAX_KEYS_UPDATED	(1u << 6)	/* delete, or update of a key column */
#define LS_HV_XMAX_MOVED		(1u << 7)	/* updated into next_rowid */

static inline uint64_t
ls_hv_word(uint32_t xid, uint32_t flags)
{
	return ((uint64_t) flags << 32) | xid;
}
static inline uint32_t
ls_hv_xid(uint64_t word)
{
	return (uint32_t) word;
}
static inline uint32_t
ls_hv_flags(uint64_t word)
{
	return (uint32_t) (word >> 32);
}

/* One version of a row (IMRVERS). */
typedef struct ls_hot_version
{
	_Atomic uint64_t xmin_word;	/* xmin | flags<<32 (only hint flags change) */
	_Atomic uint64_t xmax_word;	/* xmax | flags<<32, 0 = never deleted/locked */
	uint32_t	cmin;
	_Atomic uint32_t cmax;
	_Atomic uint64_t next_rowid;	/* where an update moved the row, else
									 * LS_ROWID_INVALID (PostgreSQL's t_ctid) */
	struct ls_hot_version *_Atomic older;
	uint32_t	len;			/* payload bytes */
	uint16_t	size_class;		/* allocator class (internal) */
	_Atomic uint16_t user_flags;	/* free for the glue (e.g. speculative
									 * insert); may change under the row
									 * latch while readers read it */
	uint8_t		data[];			/* payload: the glue's tuple image */
} ls_hot_version;

typedef enum ls_hot_origin
{
	LS_ORIGIN_INSERTED = 0,		/* inserted into the hot tier */
	LS_ORIGIN_MIGRATED,			/* moved from the cold tree by a write */
	LS_ORIGIN_CACHED,			/* copied from the cold tree by a read */
	LS_ORIGIN_COLD,				/* not in any RID-map: a reader's private
								 * stand-in for a row of the cold tree */
} ls_hot_origin;

/* Row header (IMRHDR). */
typedef struct ls_hot_row
{
	uint64_t	rowid;
	ls_hot_version *_Atomic newest;
	_Atomic uint32_t latch;		/* short writer latch, see ls_hot_row_lock */
	_Atomic uint32_t access;	/* access clock for pack (sampled) */
	uint8_t		origin;			/* ls_hot_origin */
	_Atomic uint8_t allvis;		/* all-visible mark of the glue (see
								 * ls_hot_table_allvis_limit); 0 when inserted */
	_Atomic uint8_t evicted;	/* left the map by ls_hot_row_evict: its
								 * versions stay readable (the row lives on
								 * elsewhere), writers treat it as removed */
	_Atomic uint8_t logged_flags;	/* the glue's, about logged_xid's
									 * record (same rules) */
	_Atomic uint32_t logged_xid;	/* the glue's: xid of the last commit
									 * record of the row, written under the
									 * latch (src/pg/log.c ls_ckpt_row); 0
									 * when inserted */
} ls_hot_row;

typedef struct ls_hot ls_hot;
typedef struct ls_hot_table ls_hot_table;
typedef struct ls_hot_ctx ls_hot_ctx;

/* Identity of a table's storage (PostgreSQL: tablespace, database, relfilenode). */
typedef struct ls_hot_key
{
	uint32_t	spc;
	uint32_t	db;
	uint32_t	rel;
} ls_hot_key;

/* ------------------------------------------------------------------------
 * Tier life cycle
 * ------------------------------------------------------------------------ */
typedef struct ls_hot_config
{
	uint32_t	max_tables;		/* table descriptors */
	uint32_t	max_procs;		/* per-process contexts (backends + workers) */
} ls_hot_config;

/* Smallest region that can hold the tier's fixed structures. */
size_t		ls_hot_min_region_size(const ls_hot_config *cfg);
/* Format the tier in region (once, before any process uses it). */
ls_status	ls_hot_init(void *region, size_t size, const ls_hot_config *cfg, ls_hot **out);

/*
 * Per-process context (slot = a stable small integer per live process, e.g.
 * PostgreSQL's backend id).  Holds the epoch state, the allocator caches and
 * the retire list.  Detach returns everything to the shared pools.
 */
ls_status	ls_hot_attach(ls_hot *hot, uint32_t slot, ls_hot_ctx **out);
void		ls_hot_detach(ls_hot_ctx *ctx);
/* Processes attached right now (a shutdown waits for all others to leave). */
uint32_t	ls_hot_attached_count(ls_hot *hot);

/* ------------------------------------------------------------------------
 * Epochs
 * ------------------------------------------------------------------------ */
void		ls_hot_epoch_enter(ls_hot_ctx *ctx);
void		ls_hot_epoch_exit(ls_hot_ctx *ctx);
bool		ls_hot_in_epoch(const ls_hot_ctx *ctx);
/* Leave every nesting level at once (error recovery: transaction abort). */
void		ls_hot_epoch_exit_all(ls_hot_ctx *ctx);

/* ------------------------------------------------------------------------
 * Tables
 * ------------------------------------------------------------------------ */

/* Create empty storage for key (LS_EXISTS if present, LS_NO_SPACE if no slot). */
ls_status	ls_hot_table_create(ls_hot_ctx *ctx, ls_hot_key key, ls_hot_table **out);
/* Find a table's storage; NULL when absent (e.g. lost in a restart). */
ls_hot_table *ls_hot_table_find(ls_hot *hot, ls_hot_key key);
/*
 * Drop a table: unlink it and retire all its rows, versions and map nodes.
 * No process may insert into the table or change versions concurrently
 * (PostgreSQL's AccessExclusiveLock); readers still inside an epoch stay
 * safe.  Removes, evicts and forgets that race with the drop (or come after
 * it, from a process still inside an epoch that found a row) are harmless:
 * every row and map object is retired exactly once, by whoever claims it
 * first.  The descriptor slot is reused only once no process can still be
 * inside an epoch that saw the table.
 */
void		ls_hot_table_drop(ls_hot_ctx *ctx, ls_hot_table *tbl);

/*
 * Walk the live tables (GC, stats): the next live descriptor at or after
 * *cursor (start with 0), or NULL at the end; advances *cursor.  Caller
 * inside an epoch; a table may be dropped concurrently (then skipped later).
 */
ls_hot_table *ls_hot_table_next(ls_hot *hot, uint32_t *cursor);
ls_hot_key	ls_hot_table_get_key(const ls_hot_table *tbl);

/*
 * Rowid allocation, block by block (how heap fills pages).
 *
 * Rowids are grouped in blocks of rows_per_block consecutive rowids (block =
 * rowid / rows_per_block); each block has a byte budget, capacity.  A table
 * keeps one 64-bit word: the next rowid and the bytes its block has used.
 * A reservation takes the next rowid when its block is empty (an empty
 * block takes any row) or when used + want <= capacity; otherwise the rest
 * of the block is skipped and the row takes the first rowid of the next
 * block.  The row then adds need bytes to its block.  want >= need lets the
 * caller keep room free (heap's fillfactor) or demand a nearly empty block.
 *
 * One compare-and-swap per reservation, lock-free, for any number of
 * processes.  Invariants: a rowid is handed out at most once; rowids grow
 * in reservation order; a block's rowids are handed out from its first one
 * without holes; a block is left for the next one only when it was full
 * (rows_per_block rows) or a row's want did not fit; every rowid handed out
 * is below ls_hot_table_rowid_limit().  Skipped rowids are never handed out.
 *
 * rows_per_block (>= 1) and capacity (<= LS_HOT_FILL_MAX) must be the same
 * in every call for a table; need and want are clamped to LS_HOT_FILL_MAX.
 * Returns LS_ROWID_INVALID (and changes nothing) when the row's rowid would
 * reach LS_HOT_MAX_ROWID.
 */
#define LS_HOT_FILL_MAX		((UINT32_C(1) << 20) - 1)

uint64_t	ls_hot_table_reserve_rowid(ls_hot_table *tbl, uint32_t rows_per_block,
									   uint32_t capacity, uint32_t need,
									   uint32_t want);
/*
 * The same for n rows at once (a bulk load), with one compare-and-swap:
 * out[i] gets row i's rowid, as n calls of ls_hot_table_reserve_rowid in a
 * row would have given them with no other reservation in between (so they
 * ascend).  LS_NO_SPACE (and nothing changes) when one of them would reach
 * LS_HOT_MAX_ROWID.
 */
ls_status	ls_hot_table_reserve_rowids(ls_hot_table *tbl, uint32_t rows_per_block,
										uint32_t capacity, const uint32_t *need,
										const uint32_t *want, uint32_t n,
										uint64_t *out);
/* Next rowid that would be handed out (rowids below it may exist). */
uint64_t	ls_hot_table_rowid_limit(const ls_hot_table *tbl);
/* The next rowid and the bytes used in its block, read together. */
void		ls_hot_table_get_fill(const ls_hot_table *tbl, uint64_t *next,
								  uint32_t *used);
/*
 * Raise the allocation state to (next, used) if next is above the current
 * next rowid (a copy of a table continues where its source stopped).
 */
void		ls_hot_table_set_fill(ls_hot_table *tbl, uint64_t next, uint32_t used);

/*
 * All-visible marks, for the glue's visibility map (src/pg/vismap.c has the
 * protocol).  The core only stores them: a per-table limit (rowids below it
 * may lie in a group the glue marked all-visible; it only grows, until the
 * glue resets an emptied table) and one flag per row (ls_hot_row.allvis).
 * Both are sequentially consistent stores and loads: the glue pairs them
 * with fences (a writer publishes its change, then reads the mark; the
 * marker sets the mark, then reads the rows).
 */
void		ls_hot_table_raise_allvis_limit(ls_hot_table *tbl, uint64_t limit);
uint64_t	ls_hot_table_allvis_limit(const ls_hot_table *tbl);
void		ls_hot_table_reset_allvis_limit(ls_hot_table *tbl);

static inline bool
ls_hot_row_allvis(ls_hot_row *row)
{
	return atomic_load(&row->allvis) != 0;
}
static inline void
ls_hot_row_set_allvis(ls_hot_row *row, bool on)
{
	atomic_store(&row->allvis, on ? 1 : 0);
}

typedef struct ls_hot_table_stats
{
	uint64_t	rows;			/* row headers in the map */
	uint64_t	versions;		/* versions in all chains */
	uint64_t	bytes;			/* allocator bytes held by the table */
	uint64_t	dead_rowids;	/* DEAD slots awaiting index cleanup */
} ls_hot_table_stats;

void		ls_hot_table_get_stats(const ls_hot_table *tbl, ls_hot_table_stats *out);

/*
 * Opaque 32-bit tags the glue may keep per table (0 .. LS_HOT_TABLE_TAGS-1;
 * zero when the table is created; other indexes read 0 and are ignored).
 */
#define LS_HOT_TABLE_TAGS	10
uint32_t	ls_hot_table_get_tag(const ls_hot_table *tbl, int which);
void		ls_hot_table_set_tag(ls_hot_table *tbl, int which, uint32_t value);

/* ------------------------------------------------------------------------
 * Versions and rows (caller inside an epoch for every function below that
 * returns or takes a row/version pointer)
 * ------------------------------------------------------------------------ */

/* Allocate an uninstalled version with room for len payload bytes.
 * LS_NO_SPACE when the tier is full (after trying reclamation),
 * LS_TOO_LARGE when len > LS_HOT_MAX_PAYLOAD.  Words are zero, next_rowid
 * invalid.  Needs no epoch. */
ls_status	ls_hot_version_alloc(ls_hot_ctx *ctx, uint32_t len, ls_hot_version **out);
/* Free a version that was never installed. */
void		ls_hot_version_free(ls_hot_ctx *ctx, ls_hot_version *v);

/*
 * Insert a new row at rowid (from ls_hot_table_reserve_rowid) whose only
 * version is v.  LS_EXISTS if the slot is not NULL (row or DEAD), LS_NO_SPACE
 * if the map cannot grow, LS_INVALID if rowid >= LS_HOT_MAX_ROWID.  On any
 * error v stays owned by the caller (free it or retry).
 */
ls_status	ls_hot_row_insert(ls_hot_ctx *ctx, ls_hot_table *tbl, uint64_t rowid,
							  ls_hot_origin origin, ls_hot_version *v, ls_hot_row **out);
/*
 * The same, with the row's logged_xid and logged_flags set before the row
 * is published.
 */
ls_status	ls_hot_row_insert_marked(ls_hot_ctx *ctx, ls_hot_table *tbl, uint64_t rowid,
									 ls_hot_origin origin, ls_hot_version *v,
									 uint32_t logged_xid, uint8_t logged_flags,
									 ls_hot_row **out);

/* Look a rowid up: the row, or NULL (never inserted, removed, or DEAD). */
ls_hot_row *ls_hot_row_get(ls_hot_table *tbl, uint64_t rowid);
/*
 * Lookup with a remembered RID-map leaf: lookups of nearby rowids (the same
 * leaf of 1024) skip the walk from the root.  Zero-initialise the hint and
 * use it for one table only; it may be kept across epochs (it is checked
 * against the map's current root and its count of freed map nodes, so a
 * dropped map or a freed leaf is never touched).
 */
typedef struct ls_hot_map_hint
{
	void	   *leaf;
	void	   *root;
	uint64_t	base;
	uint64_t	gen;
} ls_hot_map_hint;

ls_hot_row *ls_hot_row_get_hinted(ls_hot_table *tbl, uint64_t rowid, ls_hot_map_hint *hint);
/* true when rowid's slot is DEAD (removed, index entries may remain). */
bool		ls_hot_rowid_is_dead(ls_hot_table *tbl, uint64_t rowid);

/*
 * Row references: a row header pointer kept outside the tier (the hash
 * cache keeps one beside each rowid), so that a later lookup skips the
 * RID-map walk.
 *
 * Each table has a reference serial.  Whenever a row header leaves the map
 * (remove, evict) after some reference of the table was taken, the serial
 * changes before the header is retired; a drop changes it unconditionally.
 * Serial values come from one source for the whole tier and never repeat,
 * so a serial also names its table.  Hence, inside an epoch: a header
 * remembered with serial s, when the table's serial still reads s, was not
 * retired before the epoch began, so it is not freed; and when it is not
 * marked evicted either, it is the row ls_hot_row_get could have returned
 * an instant earlier (a removed row is one without versions).
 *
 *  - ls_hot_row_get_ref: ls_hot_row_get that also returns the serial to
 *    remember with the row.  For a row it marks the table's serial as
 *    observed (an RMW the first time after each change, and a fence) and
 *    looks the slot up again; with no row it marks nothing.  Caller inside
 *    an epoch.
 *  - ls_hot_row_from_ref: the remembered row when the reference still
 *    holds (serial unchanged, the row not evicted), else NULL (look the
 *    rowid up instead).  Caller inside an epoch; row may be any value (it
 *    is not dereferenced unless the serial matches); rowid must be the one
 *    the reference was taken for.
 */
ls_hot_row *ls_hot_row_get_ref(ls_hot_table *tbl, uint64_t rowid, uint64_t *serial);
ls_hot_row *ls_hot_row_from_ref(ls_hot_table *tbl, uint64_t rowid, ls_hot_row *row,
								uint64_t serial);

/*
 * Short per-row writer latch (spins, then futex-waits).  A row can be removed
 * while a writer waits for its latch: after ls_hot_row_lock the caller must
 * check ls_hot_row_is_removed and, if true, unlock and treat the row as gone
 * (the header stays readable until the caller leaves its epoch).
 */
void		ls_hot_row_lock(ls_hot_row *row);
bool		ls_hot_row_trylock(ls_hot_row *row);
void		ls_hot_row_unlock(ls_hot_row *row);

/*
 * Debug helper for assertions: true while some process holds row's latch.
 * The latch records no owner; the glue tracks its own (ls_row_latch_held_by_me).
 */
static inline bool
ls_hot_row_is_latched(ls_hot_row *row)
{
	return atomic_load_explicit(&row->latch, memory_order_relaxed) != 0;
}

/*
 * true once ls_hot_row_remove (newest is then NULL) or ls_hot_row_evict ran
 * on row.
 */
static inline bool
ls_hot_row_is_removed(ls_hot_row *row)
{
	return atomic_load_explicit(&row->newest, memory_order_acquire) == NULL ||
		atomic_load_explicit(&row->evicted, memory_order_acquire) != 0;
}

static inline ls_hot_version *
ls_hot_row_newest(ls_hot_row *row)
{
	return atomic_load_explicit(&row->newest, memory_order_acquire);
}
static inline ls_hot_version *
ls_hot_version_older(ls_hot_version *v)
{
	return atomic_load_explicit(&v->older, memory_order_acquire);
}

/* Under the row latch: make v the newest version (v->older = old newest). */
void		ls_hot_row_install(ls_hot_ctx *ctx, ls_hot_table *tbl, ls_hot_row *row, ls_hot_version *v);

/*
 * Under the row latch: drop the newest version (aborted in-place update
 * undone by the glue, rare) making its older version the newest again.
 * LS_INVALID (nothing changed) when newest is the only version: remove the
 * row instead; LS_NOT_FOUND when the row was removed.
 */
ls_status	ls_hot_row_uninstall_newest(ls_hot_ctx *ctx, ls_hot_table *tbl, ls_hot_row *row);

/* Under the row latch: retire every version older than keep (keep must be
 * in row's chain). */
void		ls_hot_row_truncate(ls_hot_ctx *ctx, ls_hot_table *tbl, ls_hot_row *row, ls_hot_version *keep);

/*
 * Under the row latch: remove the row from the map.  The slot becomes DEAD
 * when mark_dead (index entries may point at it), else NULL; header and
 * versions are retired.  The latch is released by this call.
 */
void		ls_hot_row_remove(ls_hot_ctx *ctx, ls_hot_table *tbl, ls_hot_row *row, bool mark_dead);

/*
 * Under the row latch: take the row out of the map (the slot becomes NULL)
 * because it lives on elsewhere (the cold tier has a copy of its newest
 * version).  Unlike ls_hot_row_remove, the row keeps its newest pointer:
 * readers that found it before see its versions until they leave their
 * epoch; writers see it as removed and look again.  The latch is released
 * by this call.
 */
void		ls_hot_row_evict(ls_hot_ctx *ctx, ls_hot_table *tbl, ls_hot_row *row);

/* VACUUM, after index cleanup: turn a DEAD slot into NULL. */
void		ls_hot_rowid_forget(ls_hot_ctx *ctx, ls_hot_table *tbl, uint64_t rowid);

/* ------------------------------------------------------------------------
 * Iteration in rowid order
 * ------------------------------------------------------------------------ */

/*
 * First live row with rowid >= *cursor and < end: returns it and sets
 * *cursor = its rowid + 1; NULL at the end.  Caller inside an epoch.
 * Skips sparse regions of the map without visiting every slot.
 */
ls_hot_row *ls_hot_scan_next(ls_hot_table *tbl, uint64_t *cursor, uint64_t end);
/* Same, for DEAD slots (VACUUM). */
bool		ls_hot_scan_next_dead(ls_hot_table *tbl, uint64_t *cursor, uint64_t end, uint64_t *rowid);
/*
 * Batch form of ls_hot_scan_next: up to max live rows of [*cursor, end) in
 * rowid order into rows[], returning how many.  Fewer than max only when
 * the range is exhausted (then *cursor >= end); otherwise *cursor = the
 * last returned rowid + 1.  One walk from the root per RID-map leaf instead
 * of one per row.  Caller inside an epoch.
 */
uint32_t	ls_hot_scan_batch(ls_hot_table *tbl, uint64_t *cursor, uint64_t end,
							  ls_hot_row **rows, uint32_t max);
/*
 * One past the highest rowid in [floor, end) that holds a row or is DEAD;
 * 0 when none does.  Skips empty leaves and absent subtrees and never looks
 * below floor (the caller already knows a used rowid there: the cold
 * tier's last one).  Caller inside an epoch.  (The glue's relation size:
 * trailing empty blocks do not count, as heap's VACUUM truncates its empty
 * tail.)
 */
uint64_t	ls_hot_table_used_end(ls_hot_table *tbl, uint64_t end, uint64_t floor);

/* ------------------------------------------------------------------------
 * Tier statistics
 * ------------------------------------------------------------------------ */
typedef struct ls_hot_stats
{
	uint64_t	region_bytes;
	uint64_t	used_bytes;		/* handed out by the allocator (live objects,
								 * uninstalled versions and retired objects
								 * awaiting reclamation) */
	uint64_t	free_bytes;		/* available for new allocations */
	uint64_t	tables;
	uint64_t	rows;
	uint64_t	versions;
	uint64_t	retired_pending;	/* awaiting epoch reclamation */
	uint64_t	epoch;
	/* added after the first contract; used + free + slack == heap_bytes */
	uint64_t	heap_bytes;		/* part of the region the allocator manages */
	uint64_t	slack_bytes;	/* page tails no block of the page's class fits */
	uint64_t	retired_bytes;	/* bytes of retired_pending objects */
} ls_hot_stats;

void		ls_hot_get_stats(ls_hot *hot, ls_hot_stats *out);

/*
 * Only used_bytes and heap_bytes of ls_hot_get_stats, as cheap as they
 * come: the per-process deltas, not the max_tables row counters (pack's
 * and the cold-write check's "how full is the tier", called up to a
 * thousand times a second).
 */
void		ls_hot_get_fill(ls_hot *hot, uint64_t *used_bytes, uint64_t *heap_bytes);

/* Reclaim what no process can still see (called from allocations, GC). */
void		ls_hot_reclaim(ls_hot_ctx *ctx);

/* ------------------------------------------------------------------------
 * Verification (leanstore_verify, tests)
 *
 * exact = true when no process changes the table / tier meanwhile: counters
 * must then match a recount exactly.  Otherwise only structural invariants
 * are checked (concurrent writers are fine).  LS_OK or LS_CORRUPT with a
 * description in buf.  ls_hot_table_verify: caller inside an epoch.
 * ------------------------------------------------------------------------ */
ls_status	ls_hot_table_verify(ls_hot_table *tbl, bool exact, char *buf, size_t buflen);
ls_status	ls_hot_verify(ls_hot *hot, bool exact, char *buf, size_t buflen);

#endif							/* LEANSTORE_HOT_H */
