/*
 * vismap.c - PostgreSQL's visibility map for leanstore tables.
 *
 * A leanstore table keeps a real visibility map fork, in PostgreSQL's own
 * format, with one all-visible bit per virtual block (the rowids one block
 * number of our TIDs names).  PostgreSQL reads it without asking the table
 * AM: index-only scans skip the table fetch for entries in all-visible
 * blocks, bitmap scans that need no column skip those blocks, ANALYZE counts
 * the bits into pg_class.relallvisible.  So a set bit must mean what it
 * means for heap: every index entry pointing into the block names a row
 * whose current version every snapshot, present and future, sees.
 *
 * VACUUM sets bits (ls_vm_set_all_visible), and so does COPY FREEZE for the
 * blocks it filled (ls_vm_mark_loaded); every write clears the bit of
 * the block it touches (ls_vm_note_insert for new rows, ls_vm_note_write
 * for writes of cold images; for updates and deletes of hot rows dml.c's
 * ls_finish_write asks ls_vm_row_marked, then ls_vm_clear).
 * Writers must not pay a buffer lock for that on every row, so the hot tier
 * keeps marks that say "a bit may be set here": a flag per row and, for
 * rows not yet inserted, a per-table rowid limit (see hot.h).  The protocol, with the exclusive
 * content lock of the map page as the only lock:
 *
 *	marker (VACUUM), per block B:          writer of row r in B:
 *	  lock map page                          publish the change (insert,
 *	  raise limit past B, set the flag         xmax, new version)
 *	    of every row in B                    full fence
 *	  full fence                             read r's flag (an update or
 *	  check every row of B                     delete) or the limit (an insert)
 *	  all visible: set B's bit               set or above: lock map page,
 *	  else: clear the flags                    clear B's bit and the flags of
 *	  unlock                                   B's rows, unlock
 *
 * Either the writer sees the mark (and clears the bit under the lock, after
 * any marker that set it), or the marker's check sees the writer's change
 * (and does not set the bit): the fences order "my store, then your store's
 * effect" both ways.  Flags change only under the map page lock, so "bit
 * set => every row of B is flagged" holds whenever the lock is free: a row
 * that later enters B comes in through an insert, which checks the limit.
 *
 * The map is not WAL-logged: leanstore's recovery truncates the visibility
 * map fork of every table it replays before a backend can read it (log.c),
 * and a clean restart keeps bits the rows' marks back (cold.c).  Only the
 * all-visible bit is used (VACUUM skips runs of blocks that have it, as
 * heap does); the all-frozen bit stays 0, so a VACUUM that skipped a block
 * cannot advance relfrozenxid.
 */
#include "postgres.h"

#include <stdatomic.h>

#include "access/visibilitymap.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/bufpage.h"

#include "ls_pg.h"

/* PostgreSQL's map layout (visibilitymap.c keeps these private) */
#define LS_VM_MAPSIZE			(BLCKSZ - MAXALIGN(SizeOfPageHeaderData))
#define LS_VM_BLOCKS_PER_BYTE	(BITS_PER_BYTE / BITS_PER_HEAPBLOCK)
#define LS_VM_BLOCKS_PER_PAGE	(LS_VM_MAPSIZE * LS_VM_BLOCKS_PER_BYTE)

/* The byte of the (pinned) map page holding blk's bits, and their shift. */
static uint8 *
ls_vm_byte(Buffer buf, BlockNumber blk, int *shift)
{
	uint8	   *map = (uint8 *) PageGetContents(BufferGetPage(buf));

	*shift = (blk % LS_VM_BLOCKS_PER_BYTE) * BITS_PER_HEAPBLOCK;
	return map + (blk % LS_VM_BLOCKS_PER_PAGE) / LS_VM_BLOCKS_PER_BYTE;
}

static inline uint64
ls_vm_block_start(BlockNumber blk)
{
	return (uint64) blk * LS_ROWS_PER_BLOCK;
}

/* Set (or clear) the flag of every row of blk.  Caller inside an epoch. */
static void
ls_vm_flag_block(ls_hot_table *tbl, BlockNumber blk, bool on)
{
	uint64		cursor = ls_vm_block_start(blk);
	uint64		end = cursor + LS_ROWS_PER_BLOCK;
	ls_hot_row *row;

	Assert(ls_in_epoch());
	while ((row = ls_hot_scan_next(tbl, &cursor, end)) != NULL)
		ls_hot_row_set_allvis(row, on);
}

/*
 * Is row's current version visible to every snapshot (inserter committed
 * before oldest_xmin, no deleter or updater that did not abort), and its
 * only version (VACUUM skips a marked block: garbage left in it would stay
 * until a write clears the bit)?  Caller inside an epoch; consults clog
 * like VACUUM does.
 */
static bool
ls_vm_row_all_visible(ls_hot_row *row, TransactionId oldest_xmin)
{
	ls_hot_version *v;
	LsVersionInfo info;
	TransactionId dead_after;

	Assert(ls_in_epoch());
	if (ls_row_vacuum_state(row, NULL, &v, &dead_after) != LS_V_LIVE)
		return false;
	if (ls_hot_row_newest(row) != v || ls_hot_version_older(v) != NULL)
		return false;
	ls_version_info(v, &info);
	return (info.xmin_flags & LS_HV_XMIN_FROZEN) != 0 ||
		TransactionIdPrecedes(info.xmin, oldest_xmin);
}

/*
 * Could blk be all-visible: no DEAD rowid and not in the table's holes
 * range (index entries there would name nothing), and every row
 * all-visible.  Caller inside an epoch.
 */
static bool
ls_vm_block_all_visible(ls_hot_table *tbl, BlockNumber blk,
						TransactionId oldest_xmin)
{
	uint64		start = ls_vm_block_start(blk);
	uint64		cursor = start;
	uint64		dead;
	uint64		hlo,
				hhi;
	ls_hot_row *rows[64];
	uint32		n;

	Assert(ls_in_epoch());
	if (ls_holes_get(tbl, &hlo, &hhi) && start < hhi && start + LS_ROWS_PER_BLOCK > hlo)
		return false;
	if (ls_hot_scan_next_dead(tbl, &cursor, start + LS_ROWS_PER_BLOCK, &dead))
		return false;
	cursor = start;
	/* both tiers: a bulk-loaded cold row may still be in progress */
	while ((n = ls_rows_batch(tbl, &cursor, start + LS_ROWS_PER_BLOCK, rows,
							  lengthof(rows))) > 0)
	{
		for (uint32 i = 0; i < n; i++)
			if (!ls_vm_row_all_visible(rows[i], oldest_xmin))
				return false;
	}
	return true;
}

/*
 * Clear blk's bits and the flags of its rows; buf is blk's map page, pinned
 * and locked exclusively.
 */
static void
ls_vm_clear_block(ls_hot_table *tbl, Buffer buf, BlockNumber blk)
{
	uint8	   *byte;
	int			shift;

	byte = ls_vm_byte(buf, blk, &shift);
	if (*byte & (VISIBILITYMAP_VALID_BITS << shift))
	{
		*byte &= ~(VISIBILITYMAP_VALID_BITS << shift);
		MarkBufferDirty(buf);
	}
	ls_epoch_enter();
	ls_vm_flag_block(tbl, blk, false);
	ls_epoch_exit();
}

/*
 * After a write to an existing row was published (xmax set or a version
 * installed), inside the epoch that found the row: may its block's bit be
 * set?  The fence orders the write before the read of the flag.
 */
bool
ls_vm_row_marked(ls_hot_row *row)
{
	Assert(ls_in_epoch());
	atomic_thread_fence(memory_order_seq_cst);
	return ls_hot_row_allvis(row);
}

/*
 * Clear the bit of rowid's block (ls_vm_row_marked said it may be set).
 *
 * Most calls find the bit clear already: a row migrated from the cold tier
 * is flagged whatever its block's bit says (cold.c), so the first update of
 * every cold row comes here.  A share lock keeps markers out as well as the
 * exclusive one (they set bits and flags under the exclusive lock only): a
 * bit found clear under it stays clear until the release, and a marker
 * after that sees our published change.  So then only this row's flag
 * goes, and writers of the block's other rows wait neither for the
 * exclusive lock nor for a scan of the block's rows.  (pgbench tpcb-like
 * on cold accounts: every transaction took the map page's exclusive lock.)
 */
void
ls_vm_clear(Relation rel, ls_hot_table *tbl, uint64 rowid)
{
	BlockNumber blk = (BlockNumber) (rowid / LS_ROWS_PER_BLOCK);
	Buffer		buf = InvalidBuffer;
	uint8	   *byte;
	int			shift;

	Assert(!ls_holds_row_latch());
	/* extends the map when it is shorter: a stale size is never trusted */
	visibilitymap_pin(rel, blk, &buf);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	byte = ls_vm_byte(buf, blk, &shift);
	if ((*byte & (VISIBILITYMAP_VALID_BITS << shift)) == 0)
	{
		ls_hot_row *row;

		ls_epoch_enter();
		row = ls_hot_row_get(tbl, rowid);
		if (row != NULL)
			ls_hot_row_set_allvis(row, false);
		ls_epoch_exit();
	}
	else
	{
		/* the pin stays: the exclusive lock finds the same page */
		LockBuffer(buf, BUFFER_LOCK_UNLOCK);
		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		ls_vm_clear_block(tbl, buf, blk);
	}
	UnlockReleaseBuffer(buf);
}

/*
 * The block whose bit this backend last cleared or found clear after a
 * write of its own there that VACUUM cannot take for all-visible while the
 * writing subtransaction lasts: an insert (its xmin runs), a delete or an
 * update (its xmax runs) -- not a row lock, which leaves the row LIVE.
 * VACUUM marks a block only when every row in it is all-visible, so until
 * that subtransaction aborts or the transaction ends the bit stays clear,
 * and further writes of the same subtransaction in that block need not
 * lock the map page again (a DELETE or UPDATE made in the cold tier
 * otherwise pins and locks it once per row).  A later subtransaction, or
 * the parent after a subcommit, has another id and looks again.
 */
typedef struct LsVmSeen
{
	RelFileNode node;
	BlockNumber blk;
	TransactionId xid;			/* top-level xid; invalid: nothing seen */
	SubTransactionId subid;		/* the subtransaction whose write it was */
} LsVmSeen;

static LsVmSeen ls_vm_seen = {.xid = InvalidTransactionId};

static bool
ls_vm_seen_clear(Relation rel, BlockNumber blk)
{
	return TransactionIdIsValid(ls_vm_seen.xid) &&
		ls_vm_seen.blk == blk &&
		RelFileNodeEquals(ls_vm_seen.node, rel->rd_node) &&
		TransactionIdEquals(ls_vm_seen.xid, GetTopTransactionIdIfAny()) &&
		ls_vm_seen.subid == GetCurrentSubTransactionId();
}

/*
 * Nothing seen: at transaction end (xids are not reused soon, but may be),
 * when a write of ours that kept a block from being marked is undone before
 * its subtransaction ends (a speculative insert killed), and when this
 * backend sets bits itself (COPY FREEZE).
 */
void
ls_vm_forget_seen(void)
{
	ls_vm_seen.xid = InvalidTransactionId;
}

/*
 * A change of ours at rowid was published (a new row, or an xmax in a cold
 * image): clear its block's bit if VACUUM may have marked the block (rowid
 * below the table's all-visible limit).  holds_block: the change keeps the
 * row from being all-visible while this subtransaction lasts (an insert, a
 * delete, an update; false for a row lock), so the block's bit, once clear
 * after it, stays clear (ls_vm_seen).  Call it after the row latch was
 * released; it may read a map page.
 */
void
ls_vm_note_write(Relation rel, ls_hot_table *tbl, uint64 rowid, bool holds_block)
{
	BlockNumber blk = (BlockNumber) (rowid / LS_ROWS_PER_BLOCK);

	atomic_thread_fence(memory_order_seq_cst);
	if (rowid >= ls_hot_table_allvis_limit(tbl) || ls_vm_seen_clear(rel, blk))
		return;
	ls_vm_clear(rel, tbl, rowid);
	if (holds_block)
	{
		Assert(TransactionIdIsValid(GetTopTransactionIdIfAny()));
		ls_vm_seen.node = rel->rd_node;
		ls_vm_seen.blk = blk;
		ls_vm_seen.xid = GetTopTransactionIdIfAny();
		ls_vm_seen.subid = GetCurrentSubTransactionId();
	}
}

/* A new row at rowid was published (ls_vm_note_write). */
void
ls_vm_note_insert(Relation rel, ls_hot_table *tbl, uint64 rowid)
{
	ls_vm_note_write(rel, tbl, rowid, true);
}

/*
 * COPY FREEZE (ls_finish_bulk_insert): the blocks whose rowids, from the
 * block's first one on, were all handed out by that COPY and not past hi
 * get their bits, as heap's COPY FREEZE sets the bits of the pages it
 * filled.  The caller vouches for the rows: loaded frozen into a table no
 * other transaction can see before ours commits (created or truncated in
 * this subtransaction), with no delete, update or lock of ours since, so
 * none is read here (a cold row's image would cost a stand-in each: the
 * VACUUM after pgbench -i read every row twice for its bits).  Rows that
 * come later into the last block clear its bit as any insert does (the
 * limit is raised first).  Hot rows get their marks as from VACUUM.
 */
void
ls_vm_mark_loaded(Relation rel, ls_hot_table *tbl, uint64 lo, uint64 hi)
{
	BlockNumber first = (BlockNumber) ((lo + LS_ROWS_PER_BLOCK - 1) / LS_ROWS_PER_BLOCK);
	BlockNumber last = (BlockNumber) (hi / LS_ROWS_PER_BLOCK);
	Buffer		buf = InvalidBuffer;

	Assert(lo <= hi);
	/* bits set by us: a block seen clear may be marked now */
	ls_vm_forget_seen();
	for (BlockNumber blk = first; blk <= last && hi != LS_ROWID_INVALID; blk++)
	{
		uint8	   *byte;
		int			shift;

		CHECK_FOR_INTERRUPTS();
		visibilitymap_pin(rel, blk, &buf);
		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		ls_hot_table_raise_allvis_limit(tbl, ls_vm_block_start(blk) + LS_ROWS_PER_BLOCK);
		ls_epoch_enter();
		ls_vm_flag_block(tbl, blk, true);
		ls_epoch_exit();
		byte = ls_vm_byte(buf, blk, &shift);
		if (!(*byte & (VISIBILITYMAP_ALL_VISIBLE << shift)))
		{
			*byte |= VISIBILITYMAP_ALL_VISIBLE << shift;
			MarkBufferDirty(buf);
		}
		LockBuffer(buf, BUFFER_LOCK_UNLOCK);
	}
	if (BufferIsValid(buf))
		ReleaseBuffer(buf);
}

/*
 * VACUUM, after index cleanup: set the bit of every block whose rows are all
 * visible to every snapshot (oldest_xmin: VACUUM's horizon).  Returns the
 * number of blocks whose bit is set afterwards.
 */
BlockNumber
ls_vm_set_all_visible(Relation rel, ls_hot_table *tbl, TransactionId oldest_xmin)
{
	BlockNumber nblocks = ls_blocks_for_limit(ls_hot_table_rowid_limit(tbl));
	BlockNumber nallvis = 0;
	Buffer		buf = InvalidBuffer;

	for (BlockNumber blk = 0; blk < nblocks; blk++)
	{
		bool		candidate;
		bool		all_visible;
		uint8	   *byte;
		int			shift;

		CHECK_FOR_INTERRUPTS();
		if (visibilitymap_get_status(rel, blk, &buf) & VISIBILITYMAP_ALL_VISIBLE)
		{
			nallvis++;
			continue;
		}

		/* cheap look without the lock first: most blocks fail or pass it */
		ls_epoch_enter();
		candidate = ls_vm_block_all_visible(tbl, blk, oldest_xmin);
		ls_epoch_exit();
		if (!candidate)
			continue;

		visibilitymap_pin(rel, blk, &buf);
		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		ls_hot_table_raise_allvis_limit(tbl, ls_vm_block_start(blk) + LS_ROWS_PER_BLOCK);
		ls_epoch_enter();
		ls_vm_flag_block(tbl, blk, true);
		atomic_thread_fence(memory_order_seq_cst);
		all_visible = ls_vm_block_all_visible(tbl, blk, oldest_xmin);
		if (!all_visible)
			ls_vm_flag_block(tbl, blk, false);
		ls_epoch_exit();
		if (all_visible)
		{
			byte = ls_vm_byte(buf, blk, &shift);
			*byte |= VISIBILITYMAP_ALL_VISIBLE << shift;
			MarkBufferDirty(buf);
			nallvis++;
		}
		LockBuffer(buf, BUFFER_LOCK_UNLOCK);
	}
	if (BufferIsValid(buf))
		ReleaseBuffer(buf);
	return nallvis;
}
