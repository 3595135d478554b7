/*
 * tableam.c - the leanstore TableAmRoutine: scans and fetches.
 *
 * Every scan walks rowids through the hot tier's RID-map inside short
 * epochs (a bounded number of rows per epoch, never across a return to the
 * executor) and copies the visible version of each row into the slot.
 * Virtual blocks (rowid / LS_ROWS_PER_BLOCK) give TID range, bitmap, sample
 * and ANALYZE scans the block structure PostgreSQL expects.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/tsmapi.h"
#include "access/xact.h"
#include "catalog/pg_am_d.h"
#include "catalog/index.h"
#include "commands/vacuum.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "nodes/tidbitmap.h"
#include "optimizer/plancat.h"
#include "storage/bufpage.h"
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>
#include "common/relpath.h"
#include "pgstat.h"
#include "storage/fd.h"
#include "storage/predicate.h"
#include "storage/smgr.h"
#include "utils/builtins.h"
#include "utils/snapmgr.h"

#include "ls_pg.h"

PG_FUNCTION_INFO_V1(leanstore_tableam_handler);

/* Rows looked at per epoch before it is left and re-entered. */
#define LS_ROWS_PER_EPOCH	LS_BATCH_ROWS
/* Bitmap scans look candidates up in groups of this many rows. */
#define LS_MAP_BATCH		64
/* SSI xids a batch may collect before it stops (reported after the epoch). */
#define LS_SSI_BATCH_XIDS	(4 * LS_SSI_MAX_XIDS)

uint64
ls_rel_rowid_limit(Relation rel)
{
	return ls_hot_table_rowid_limit(ls_table_for(rel));
}

/*
 * The table's size in virtual blocks: up to the last block that holds a
 * row or a DEAD rowid.  Empty blocks at the end do not count, as heap's
 * VACUUM truncates empty pages at its end (here the next insert still goes
 * on after the last rowid handed out: rowids are never reused).
 */
BlockNumber
ls_table_nblocks(ls_hot_table *tbl)
{
	uint64		end;

	ls_epoch_enter();
	end = ls_table_used_end(tbl);
	ls_epoch_exit();
	return ls_blocks_for_limit(end);
}

/* ------------------------------------------------------------------------
 * md.c and virtual blocks
 *
 * PostgreSQL 15 prefetches a table's main-fork blocks through md.c with the
 * table AM's block numbers, whatever the AM: ANALYZE's block sampler and
 * bitmap heap scans (PrefetchBuffer -> mdprefetch).  Outside recovery md.c
 * raises an ERROR when the block's segment cannot be opened, and it opens
 * segment k only when segments 0..k-1 are whole (RELSEG_SIZE blocks).  Our
 * block numbers are virtual (rowid / LS_ROWS_PER_BLOCK, filled as heap
 * fills its pages), not the tree's pages: hot rows are not in the file at
 * all, and a low fillfactor gives far more blocks than the tree has pages.
 * So the main fork is made to reach past the table's virtual blocks: every
 * segment before the last one needed whole, the last one present.  That is
 * done before such a scan, and when a rowid is handed out (ls_cover_rowid:
 * a bitmap may be built long after its scan began).  Extending is a sparse
 * ftruncate: no data, no disk space, nothing to sync (a crash that loses
 * it is mended by the next scan or insert).  The
 * tree never reads past its own pages, and a file that holds only holes
 * still counts as empty when a restart adopts it (cold.c ls_file_is_empty).
 * The buffer pool keeps the same segment invariant when it writes pages
 * (src/buffer/io.c fill_segment); neither shrinks a segment.  A clean point
 * shrinks segment 0 to the tree only while segment 1 does not exist, and
 * looks again after it (cold.c ls_clean_meta).
 * ------------------------------------------------------------------------ */

/*
 * Blocks past the table's end that are covered too: rows inserted after a
 * bitmap scan began (its bitmap is built later) may carry block numbers
 * past what the scan saw.
 */
#define LS_COVER_SLACK		(RELSEG_SIZE / 8)

/*
 * Make md.c able to open every block below nblocks + LS_COVER_SLACK; returns
 * the block count it can open now.
 */
static BlockNumber
ls_cover_blocks(Relation rel, BlockNumber nblocks)
{
	uint64		want = (uint64) nblocks + LS_COVER_SLACK;
	uint32		last = (uint32) ((want - 1) / RELSEG_SIZE);
	off_t		whole = (off_t) RELSEG_SIZE * BLCKSZ;
	char	   *base;

	if (last == 0)
		return RELSEG_SIZE;		/* segment 0 is made with the relation */
	base = relpathbackend(rel->rd_node, rel->rd_backend, MAIN_FORKNUM);
	for (uint32 segno = 0; segno <= last; segno++)
	{
		char	   *path = segno == 0 ? pstrdup(base) : psprintf("%s.%u", base, segno);
		struct stat st;
		int			fd;

		if (stat(path, &st) == 0 && (segno == last || st.st_size >= whole))
		{
			pfree(path);
			continue;
		}
		fd = OpenTransientFile(path, O_RDWR | O_CREAT | PG_BINARY);
		/* only ever grows: no writer puts more than whole bytes in a segment */
		if (fd < 0 || (segno < last && ftruncate(fd, whole) != 0))
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not extend file \"%s\" to the block numbers of leanstore table \"%s\": %m",
							path, RelationGetRelationName(rel))));
		CloseTransientFile(fd);
		pfree(path);
	}
	pfree(base);
	return (BlockNumber) Min((uint64) (last + 1) * RELSEG_SIZE, (uint64) MaxBlockNumber);
}

/*
 * A rowid was handed out (dml.c), before any index entry can name it: md.c
 * must be able to open its block from now on.  A bitmap is built after its
 * scan began (a cursor's at its first FETCH) and may hold rows inserted in
 * between; prefetching jumps from one bitmap block to the next, however far
 * apart, so the scan's own covering at its begin and as it reads blocks is
 * not enough.  Covering here, LS_COVER_SLACK ahead, makes the next segment
 * before any rowid can reach it.  Costs a stat() per segment when this
 * backend first nears a segment end in the relfilenode, nothing otherwise.
 */
void
ls_cover_rowid(Relation rel, uint64 rowid)
{
	uint64		block = rowid / LS_ROWS_PER_BLOCK;

	/* segment 0 is made with the relation */
	if (likely(block + LS_COVER_SLACK < RELSEG_SIZE) ||
		block + LS_COVER_SLACK < ls_rel_cover_end(rel))
		return;
	ls_rel_set_cover_end(rel, ls_cover_blocks(rel, (BlockNumber) block + 1));
}

/* Before a scan whose blocks PostgreSQL prefetches through md.c. */
static void
ls_scan_cover(LsScanDesc scan, BlockNumber upto)
{
	BlockNumber have = ls_blocks_for_limit(ls_hot_table_rowid_limit(scan->tbl));
	BlockNumber want = Max(have, upto);

	/* a rescan (nested loop) finds the file as this scan left it */
	if ((uint64) want + LS_COVER_SLACK <= scan->cover_end)
		return;
	scan->cover_end = ls_cover_blocks(scan->base.rs_rd, want);
}

/*
 * heap_blks_*: heap counts a buffer read (and a hit, when the page is in
 * shared buffers) for every page it reads.  Every virtual block is "in
 * memory": count n reads that hit.  No function call, nothing that throws
 * (it runs inside epochs): the relation's stats entry was associated
 * before (ls_stats_prepare).
 */
static inline void
ls_count_block_reads(Relation rel, int64 n)
{
	if (n > 0 && rel->pgstat_info != NULL)
	{
		rel->pgstat_info->t_counts.t_blocks_fetched += n;
		rel->pgstat_info->t_counts.t_blocks_hit += n;
	}
}

/* Associate rel's stats entry (outside epochs; may allocate). */
static inline void
ls_stats_prepare(Relation rel)
{
	(void) pgstat_should_count_relation(rel);
}

/* A scan passed every block whose first rowid is below upto: count them. */
static inline void
ls_scan_count_blocks(LsScanDesc scan, uint64 upto)
{
	BlockNumber nb = ls_blocks_for_limit(upto);

	if (nb > scan->stat_block)
	{
		ls_count_block_reads(scan->base.rs_rd, nb - scan->stat_block);
		scan->stat_block = nb;
	}
}

static const TupleTableSlotOps *
ls_slot_callbacks(Relation rel)
{
	return &TTSOpsHeapTuple;
}

/* ------------------------------------------------------------------------
 * Sequential, TID range and parallel scans
 * ------------------------------------------------------------------------ */

static void
ls_scan_reset(LsScanDesc scan)
{
	Relation	rel = scan->base.rs_rd;

	if (scan->base.rs_parallel != NULL)
	{
		LsParallelScanDesc p = (LsParallelScanDesc) scan->base.rs_parallel;

		scan->end = p->limit;
		scan->cursor = 0;
		scan->chunk_end = 0;
	}
	else if (scan->tbl == NULL)
	{
		scan->end = 0;
		scan->cursor = 0;
		scan->chunk_end = 0;
	}
	else
	{
		scan->end = ls_hot_table_rowid_limit(scan->tbl);
		scan->cursor = 0;
		scan->chunk_end = scan->end;
	}
	scan->tr_min = 0;
	scan->tr_max = LS_ROWID_INVALID;
	scan->started = false;
	scan->at_end = false;
	scan->cur_block = InvalidBlockNumber;
	scan->nrows = 0;
	scan->nextrow = 0;
	scan->ncand_next = 0;
	scan->bn = 0;
	scan->bnext = 0;
	scan->bexhausted = false;
	scan->last_rowid = LS_ROWID_INVALID;
	scan->vis_xid = InvalidTransactionId;
	scan->no_direct = false;
	scan->vis_snapshot = NULL;
	scan->sample_next_block = 0;
	scan->stat_block = 0;
	ls_stats_prepare(rel);
	if (scan->base.rs_flags & SO_TYPE_SEQSCAN)
		pgstat_count_heap_scan(rel);
}

static TableScanDesc
ls_scan_begin(Relation rel, Snapshot snapshot, int nkeys, ScanKey key,
			  ParallelTableScanDesc pscan, uint32 flags)
{
	LsScanDesc	scan = palloc0(sizeof(LsScanDescData));

	RelationIncrementReferenceCount(rel);
	scan->mcxt = CurrentMemoryContext;
	scan->base.rs_rd = rel;
	scan->base.rs_snapshot = snapshot;
	scan->base.rs_nkeys = nkeys;
	scan->base.rs_flags = flags;
	scan->base.rs_parallel = pscan;
	if (nkeys > 0)
	{
		scan->base.rs_key = palloc(sizeof(ScanKeyData) * nkeys);
		memcpy(scan->base.rs_key, key, sizeof(ScanKeyData) * nkeys);
	}
	/*
	 * ANALYZE of a table whose data was lost in a restart samples nothing
	 * (with a warning) so that a database-wide ANALYZE goes on; every
	 * other scan refuses (ls_table_for).
	 */
	if (flags & SO_TYPE_ANALYZE)
	{
		scan->tbl = ls_table_for_or_null(rel);
		if (scan->tbl == NULL)
			ls_warn_lost(rel);
	}
	else
		scan->tbl = ls_table_for(rel);
	if ((flags & (SO_TYPE_ANALYZE | SO_TYPE_BITMAPSCAN)) && scan->tbl != NULL)
		ls_scan_cover(scan, 0);

	if ((flags & (SO_TYPE_SEQSCAN | SO_TYPE_SAMPLESCAN)) &&
		snapshot != NULL && IsMVCCSnapshot(snapshot))
		PredicateLockRelation(rel, snapshot);

	ls_scan_reset(scan);
	return &scan->base;
}

static void
ls_scan_end(TableScanDesc sscan)
{
	LsScanDesc	scan = (LsScanDesc) sscan;

	RelationDecrementReferenceCount(sscan->rs_rd);
	if (sscan->rs_flags & SO_TEMP_SNAPSHOT)
		UnregisterSnapshot(sscan->rs_snapshot);
	if (sscan->rs_key)
		pfree(sscan->rs_key);
	if (scan->bbuf)
		pfree(scan->bbuf);
	if (scan->acxt)
		MemoryContextDelete(scan->acxt);
	pfree(scan);
}

static void
ls_scan_rescan(TableScanDesc sscan, ScanKey key, bool set_params,
			   bool allow_strat, bool allow_sync, bool allow_pagemode)
{
	LsScanDesc	scan = (LsScanDesc) sscan;

	if (set_params)
	{
		if (allow_strat)
			sscan->rs_flags |= SO_ALLOW_STRAT;
		else
			sscan->rs_flags &= ~SO_ALLOW_STRAT;
		if (allow_sync)
			sscan->rs_flags |= SO_ALLOW_SYNC;
		else
			sscan->rs_flags &= ~SO_ALLOW_SYNC;
		if (allow_pagemode)
			sscan->rs_flags |= SO_ALLOW_PAGEMODE;
		else
			sscan->rs_flags &= ~SO_ALLOW_PAGEMODE;
	}
	if (key != NULL && sscan->rs_nkeys > 0)
		memcpy(sscan->rs_key, key, sizeof(ScanKeyData) * sscan->rs_nkeys);
	ls_scan_reset(scan);
	/* a bitmap scan's rescan comes with a new bitmap: rows may have come */
	if ((sscan->rs_flags & SO_TYPE_BITMAPSCAN) && scan->tbl != NULL)
		ls_scan_cover(scan, 0);
}

/* Catalog-style scan keys (never used by the executor on user tables). */
static bool
ls_scan_keys_match(TableScanDesc sscan, TupleTableSlot *slot)
{
	for (int i = 0; i < sscan->rs_nkeys; i++)
	{
		ScanKey		k = &sscan->rs_key[i];
		bool		isnull;
		Datum		d;

		if (k->sk_flags & SK_ISNULL)
			return false;
		d = slot_getattr(slot, k->sk_attno, &isnull);
		if (isnull)
			return false;
		if (!DatumGetBool(FunctionCall2Coll(&k->sk_func, k->sk_collation,
											d, k->sk_argument)))
			return false;
	}
	return true;
}

/* Parallel: claim the next chunk of rowids; false when none remain. */
static bool
ls_scan_claim_chunk(LsScanDesc scan)
{
	LsParallelScanDesc p = (LsParallelScanDesc) scan->base.rs_parallel;
	uint64		start = pg_atomic_fetch_add_u64(&p->next, LS_PARALLEL_CHUNK);

	if (start >= p->limit)
		return false;
	scan->cursor = start;
	scan->chunk_end = Min(start + LS_PARALLEL_CHUNK, p->limit);
	/* the chunk counts the blocks whose first rowid it holds */
	scan->stat_block = Max(scan->stat_block, ls_blocks_for_limit(start));
	return true;
}

/* Upper bound (exclusive) of the rowids this scan may return. */
static uint64
ls_scan_hi(LsScanDesc scan)
{
	uint64		hi = scan->end;

	if (scan->tr_max != LS_ROWID_INVALID)
		hi = Min(hi, scan->tr_max + 1);
	return hi;
}

/*
 * Backward: the live row before the last one returned (not for parallel
 * scans).  Caller inside an epoch.  Walks slots one by one: backward scans
 * are rare (scrollable cursors).
 */
static ls_hot_row *
ls_scan_prev_row(LsScanDesc scan)
{
	uint64		lo = scan->tr_min;
	uint64		hi = ls_scan_hi(scan);
	uint64		r;

	Assert(ls_in_epoch());
	if (hi == 0 || (scan->started && !scan->at_end && scan->cursor < 2))
	{
		/* nothing before: the position becomes "before the first row" */
		scan->at_end = false;
		scan->cursor = lo;
		return NULL;
	}
	if (!scan->started || scan->at_end)
		r = hi - 1;
	else
		r = Min(scan->cursor - 2, hi - 1);
	scan->at_end = false;
	for (;;)
	{
		ls_hot_row *row;

		if (r < lo)
			break;
		row = ls_row_get(scan->tbl, r);
		if (row != NULL)
		{
			scan->cursor = r + 1;
			return row;
		}
		if (r == 0)
			break;
		r--;
	}
	scan->cursor = lo;
	return NULL;
}

/*
 * Forward, for a batch: up to max live rows (any version) in range into
 * rows[] (0 at the end), for the scan's own batches and for callers that do
 * their own visibility decisions (index builds, direct NULL).  With direct,
 * cold rows it takes come back built in its buffer instead (tups[i], rows[i]
 * NULL; see ls_rows_batch_direct).  Caller inside an epoch.
 */
int
ls_scan_next_rows(LsScanDesc scan, ls_hot_row **rows, HeapTuple *tups, int max,
				  LsColdDirect *direct)
{
	Assert(ls_in_epoch());
	for (;;)
	{
		uint64		hi = Min(scan->chunk_end, scan->tr_max == LS_ROWID_INVALID ?
							 scan->chunk_end : scan->tr_max + 1);
		uint32		n = 0;

		if (scan->cursor < scan->tr_min)
			scan->cursor = scan->tr_min;
		if (scan->cursor < hi)
		{
			/* a sequential scan reads the table once (ls_cold_range) */
			ls_cold_read_once = (scan->base.rs_flags & SO_ALLOW_STRAT) != 0;
			n = ls_rows_batch_direct(scan->tbl, &scan->cursor, hi, rows, tups,
									 (uint32) max, direct);
			ls_cold_read_once = false;
		}
		if (n > 0)
		{
			ls_scan_count_blocks(scan, scan->cursor);
			return (int) n;
		}
		scan->cursor = hi;
		ls_scan_count_blocks(scan, hi);
		if (scan->base.rs_parallel == NULL || !ls_scan_claim_chunk(scan))
			return 0;
	}
}

/* Make sure the batch buffer holds at least size bytes (outside epochs). */
static void
ls_batch_reserve(LsScanDesc scan, Size size)
{
	Size		want = Max(size, (Size) LS_BATCH_BYTES);

	if (scan->bbufsize >= want)
		return;
	if (scan->bbuf)
		pfree(scan->bbuf);
	scan->bbuf = NULL;
	scan->bbufsize = 0;
	scan->bbuf = MemoryContextAlloc(scan->mcxt, want);
	scan->bbufsize = want;
}

/*
 * Copy v into the batch at *used; false when it does not fit (*need = the
 * bytes it needs, 0 for a corrupt version).  Inside the epoch: never throws.
 */
static inline bool
ls_batch_add(LsScanDesc scan, ls_hot_version *v, Oid relid, uint64 rowid,
			 Size *used, Size *need)
{
	Size		size = ls_version_tuple_size(v);

	*need = size;
	if (size == 0 || *used + size > scan->bbufsize)
		return false;
	scan->btups[scan->bn++] = ls_version_copy_out(v, relid, rowid,
												  scan->bbuf + *used);
	*used += size;
	return true;
}

/*
 * Remember the last row handed out from the batch (scan->last_rowid) before
 * the batch is dropped or refilled.
 */
static inline void
ls_batch_forget(LsScanDesc scan)
{
	if (scan->bnext > 0)
		scan->last_rowid = ls_tid_to_rowid(&scan->btups[scan->bnext - 1]->t_self);
	scan->bn = 0;
	scan->bnext = 0;
}

/* Hand out the next row of the batch; false when it is used up. */
static inline bool
ls_batch_next(LsScanDesc scan, TupleTableSlot *slot)
{
	HeapTuple	tup;

	if (scan->bnext >= scan->bn)
		return false;
	tup = scan->btups[scan->bnext++];
	ls_store_borrowed(tup, slot);
	return true;
}

/*
 * Prefetching.  Without it a scan pays two dependent cache misses per row
 * one after the other: the row header (for its newest-version pointer),
 * then the version (MVCC words and payload).  While row i is decided,
 * the header of row i + LS_PF_HEADER and the version of row i + LS_PF_VERSION
 * (whose header was asked for earlier) are requested.  Only hints: the
 * pointers read here are not used for anything else.
 */
#define LS_PF_HEADER		32
#define LS_PF_VERSION		16

static inline void
ls_prefetch_header(ls_hot_row *row)
{
#if defined(__GNUC__)
	if (row != NULL)
		__builtin_prefetch(row);
#endif
}

static inline void
ls_prefetch_version(ls_hot_row *row)
{
#if defined(__GNUC__)
	ls_hot_version *v;

	if (row == NULL)
		return;					/* a cold row built in place */
	v = atomic_load_explicit(&row->newest, memory_order_relaxed);

	if (v != NULL)
	{
		__builtin_prefetch(v);
		__builtin_prefetch((char *) v + 64);
		__builtin_prefetch((char *) v + 128);
	}
#endif
}

/* Start the pipeline for rows[0 .. n). */
static inline void
ls_prefetch_start(ls_hot_row **rows, int n)
{
	for (int i = 0; i < Min(n, LS_PF_HEADER); i++)
		ls_prefetch_header(rows[i]);
	for (int i = 0; i < Min(n, LS_PF_VERSION); i++)
		ls_prefetch_version(rows[i]);
}

/* Keep it going while rows[i] is looked at. */
static inline void
ls_prefetch_step(ls_hot_row **rows, int i, int n)
{
	if (i + LS_PF_HEADER < n)
		ls_prefetch_header(rows[i + LS_PF_HEADER]);
	if (i + LS_PF_VERSION < n)
		ls_prefetch_version(rows[i + LS_PF_VERSION]);
}

/*
 * A cold stand-in's version v was found visible to the scan's MVCC snapshot:
 * when its inserter is not frozen, not this transaction's and it has no
 * deleter, that inserter is committed and not in the snapshot, which stays
 * true for the scan's life.  Remember it: later images it inserted are
 * built in place (LsColdDirect.vis_xid), with no clog lookup.
 */
static inline void
ls_scan_note_cold_inserter(LsScanDesc scan, ls_hot_version *v, Snapshot snapshot,
						   LsColdDirect *direct)
{
	uint64		xmin_word = atomic_load_explicit(&v->xmin_word, memory_order_acquire);
	TransactionId xmin = ls_hv_xid(xmin_word);

	if (snapshot->snapshot_type != SNAPSHOT_MVCC || xmin == direct->vis_xid ||
		(ls_hv_flags(xmin_word) & LS_HV_XMIN_FROZEN) ||
		!TransactionIdIsNormal(xmin) ||
		ls_hv_xid(atomic_load_explicit(&v->xmax_word, memory_order_acquire)) != InvalidTransactionId ||
		TransactionIdIsCurrentTransactionId(xmin))
		return;
	scan->vis_xid = xmin;
	scan->vis_snapshot = snapshot;
	direct->vis_xid = xmin;
}

/*
 * Forward: fill the batch with the next visible rows, in one epoch: at most
 * LS_ROWS_PER_EPOCH rows looked at, stopping early when the buffer is full
 * or rw-conflicts were collected (reported here, after the epoch, before
 * any of the rows is returned).  Sets *exhausted when the range ran out.
 */
static void
ls_scan_fill_forward(LsScanDesc scan, bool ssi, bool *exhausted)
{
	Snapshot	snapshot = scan->base.rs_snapshot;
	Relation	rel = scan->base.rs_rd;
	Oid			relid = RelationGetRelid(rel);
	TransactionId ssi_xids[LS_SSI_BATCH_XIDS];
	LsSsiBatch	ssib;
	bool		had_ssi;
	ls_hot_row *rows[LS_ROWS_PER_EPOCH];
	HeapTuple	tups[LS_ROWS_PER_EPOCH];
	LsColdDirect direct;
	int			looked = 0;
	Size		used = 0;
	Size		need = 0;
	bool		stop = false;

	/*
	 * Only MVCC decisions are fixed by the snapshot; the others ("running
	 * now?") are made when the row is returned, one visible row per batch
	 * (heap's page-at-a-time mode is MVCC-only for the same reason).
	 */
	int			maxrows = IsMVCCSnapshot(snapshot) ? LS_BATCH_ROWS : 1;

	ls_ssi_init(&ssib, ssi_xids, LS_SSI_BATCH_XIDS);
	ls_batch_reserve(scan, 0);
	ls_batch_forget(scan);
	*exhausted = false;

	/*
	 * MVCC batches take cold rows visible beyond doubt (frozen, or inserted
	 * by scan->vis_xid) straight from the leaf into the batch buffer, the
	 * buffer's bytes shared with the rows copied below.
	 */
	direct.buf = scan->bbuf;
	direct.cap = scan->bbufsize;
	direct.relid = relid;
	direct.vis_xid = scan->vis_snapshot == snapshot ? scan->vis_xid : InvalidTransactionId;
	direct.snap_xmin = snapshot->xmin;

	ls_epoch_enter();
	while (!stop && looked < LS_ROWS_PER_EPOCH)
	{
		int			n;

		direct.used = used;
		n = ls_scan_next_rows(scan, rows, tups, LS_ROWS_PER_EPOCH - looked,
							  snapshot->snapshot_type == SNAPSHOT_MVCC && !scan->no_direct ?
							  &direct : NULL);
		used = direct.used;
		if (direct.vis_xid != InvalidTransactionId)
		{
			/* the range read may have found one (ls_xmin_seen_committed) */
			scan->vis_xid = direct.vis_xid;
			scan->vis_snapshot = snapshot;
		}
		scan->started = true;
		if (n == 0)
		{
			*exhausted = true;
			break;
		}
		ls_prefetch_start(rows, n);
		for (int i = 0; i < n; i++)
		{
			ls_hot_row *row = rows[i];
			ls_hot_version *v;
			uint64		rowid;

			if (row == NULL)
			{
				/* a cold row built in place: visible, no xmax, no SSI xids */
				scan->btups[scan->bn++] = tups[i];
				rowid = ls_tid_to_rowid(&tups[i]->t_self);
				v = NULL;
			}
			else
			{
				ls_prefetch_step(rows, i, n);
				rowid = row->rowid;
				v = ls_hot_row_newest(row);
				if (snapshot->snapshot_type != SNAPSHOT_MVCC || v == NULL ||
					!ls_visible_mvcc_settled(v, snapshot))
				{
					/* the full rules (ls_row_visible_version_fast's slow way) */
					v = ls_row_visible_version(row, snapshot);
					if (v != NULL && row->origin == LS_ORIGIN_COLD)
						ls_scan_note_cold_inserter(scan, v, snapshot, &direct);
				}

				if (v != NULL && !ls_batch_add(scan, v, relid, rowid, &used, &need))
				{
					/* look at this row again in the next batch */
					scan->cursor = rowid;
					stop = true;
					break;
				}
				if (ssi)
					ls_ssi_collect(&ssib, row, v);
			}
			looked++;
			if (scan->bn >= maxrows || !ls_ssi_room(&ssib))
			{
				/* the next batch goes on after this row */
				scan->cursor = rowid + 1;
				stop = true;
				break;
			}
		}
	}
	ls_epoch_exit();
	had_ssi = ls_ssi_any(&ssib);
	if (had_ssi)
		ls_ssi_report(rel, snapshot, &ssib);
	scan->no_direct = false;
	if (stop && scan->bn == 0 && need > 0)
	{
		/*
		 * The first row did not fit: wider than the buffer, or the range
		 * read built rows after it in place and took the room (then the
		 * same batch would come again, for ever).  The next batch builds
		 * nothing in place, in a buffer that takes the row.
		 */
		ls_batch_reserve(scan, need);
		scan->no_direct = true;
	}
	else if (stop && scan->bn == 0 && !had_ssi)
		ls_report_bad_version(rel);
}

/* Backward: the previous visible row, one per epoch (scrollable cursors). */
static bool
ls_scan_step_backward(LsScanDesc scan, TupleTableSlot *slot, bool ssi)
{
	Snapshot	snapshot = scan->base.rs_snapshot;
	Relation	rel = scan->base.rs_rd;
	Oid			relid = RelationGetRelid(rel);
	TransactionId ssi_xids[LS_SSI_MAX_XIDS];

	if (scan->base.rs_parallel != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("backward parallel scans are not supported")));

	/*
	 * The position is the last row handed out, wherever forward batching
	 * left the cursor; rows batched ahead of it are given back.
	 */
	ExecClearTuple(slot);
	ls_batch_forget(scan);
	if (scan->started && !scan->at_end)
		scan->cursor = scan->last_rowid == LS_ROWID_INVALID ?
			scan->tr_min : scan->last_rowid + 1;
	scan->bexhausted = false;

	for (;;)
	{
		int			n = 0;
		LsSsiBatch	ssib;
		bool		found = false;
		bool		exhausted = false;
		bool		bad = false;
		Size		need = 0;

		ls_ssi_init(&ssib, ssi_xids, LS_SSI_MAX_XIDS);
		ls_batch_reserve(scan, 0);
		ls_epoch_enter();
		while (n < LS_ROWS_PER_EPOCH && !ls_ssi_any(&ssib))
		{
			ls_hot_row *row;
			ls_hot_version *v;

			row = ls_scan_prev_row(scan);
			scan->started = true;
			n++;
			if (row == NULL)
			{
				exhausted = true;
				break;
			}
			v = ls_row_visible_version_fast(row, snapshot);
			if (ssi)
				ls_ssi_collect(&ssib, row, v);
			if (v != NULL)
			{
				Size		used = 0;

				if (ls_batch_add(scan, v, relid, row->rowid, &used, &need))
					found = true;
				else
				{
					/* look at this row again, with a larger buffer */
					scan->cursor = row->rowid + 2;
					bad = (need == 0);
				}
				break;
			}
		}
		ls_epoch_exit();
		if (bad)
			ls_report_bad_version(rel);
		if (ls_ssi_any(&ssib))
			ls_ssi_report(rel, snapshot, &ssib);

		if (found)
		{
			ls_batch_next(scan, slot);
			/* the slot borrows it; nothing more is batched */
			ls_batch_forget(scan);
			if (scan->base.rs_nkeys > 0 && !ls_scan_keys_match(&scan->base, slot))
				continue;
			pgstat_count_heap_getnext(rel);
			return true;
		}
		if (exhausted)
		{
			/* before the first row */
			scan->last_rowid = LS_ROWID_INVALID;
			ExecClearTuple(slot);
			return false;
		}
		if (need > 0)
			ls_batch_reserve(scan, need);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * The next visible tuple in the given direction; false at the end of the
 * range.  Forward scans copy up to LS_ROWS_PER_EPOCH rows per epoch into
 * the scan's batch and hand them out from there.
 */
static bool
ls_scan_step(LsScanDesc scan, ScanDirection direction, TupleTableSlot *slot)
{
	Snapshot	snapshot = scan->base.rs_snapshot;
	Relation	rel = scan->base.rs_rd;

	if (ScanDirectionIsBackward(direction))
		return ls_scan_step_backward(scan, slot,
									 IsMVCCSnapshot(snapshot) &&
									 CheckForSerializableConflictOutNeeded(rel, snapshot));

	if (scan->at_end)
	{
		ExecClearTuple(slot);
		return false;
	}
	for (;;)
	{
		while (ls_batch_next(scan, slot))
		{
			if (scan->base.rs_nkeys > 0 && !ls_scan_keys_match(&scan->base, slot))
				continue;
			pgstat_count_heap_getnext(rel);
			return true;
		}
		/* the slot may borrow the last row of the batch: clear it first */
		ExecClearTuple(slot);
		if (scan->bexhausted)
		{
			scan->at_end = true;
			return false;
		}
		CHECK_FOR_INTERRUPTS();
		/* may throw (doomed transaction): decided before the epoch */
		ls_scan_fill_forward(scan, IsMVCCSnapshot(snapshot) &&
							 CheckForSerializableConflictOutNeeded(rel, snapshot),
							 &scan->bexhausted);
	}
}

static bool
ls_scan_getnextslot(TableScanDesc sscan, ScanDirection direction,
					TupleTableSlot *slot)
{
	LsScanDesc	scan = (LsScanDesc) sscan;

	/* the common case, kept short: forward, the next row already batched */
	if (likely(ScanDirectionIsForward(direction) && scan->bnext < scan->bn &&
			   sscan->rs_nkeys == 0))
	{
		ls_store_borrowed(scan->btups[scan->bnext++], slot);
		pgstat_count_heap_getnext(sscan->rs_rd);
		return true;
	}
	return ls_scan_step(scan, direction, slot);
}

/* Rowid of the first TID >= tid. */
static uint64
ls_tid_lower_rowid(ItemPointer tid)
{
	uint64		blk = ItemPointerGetBlockNumberNoCheck(tid);
	OffsetNumber off = ItemPointerGetOffsetNumberNoCheck(tid);

	if (off == 0)
		off = 1;
	if (off > LS_ROWS_PER_BLOCK)
		return (blk + 1) * LS_ROWS_PER_BLOCK;
	return blk * LS_ROWS_PER_BLOCK + off - 1;
}

static void
ls_scan_set_tidrange(TableScanDesc sscan, ItemPointer mintid,
					 ItemPointer maxtid)
{
	LsScanDesc	scan = (LsScanDesc) sscan;
	uint64		lo = ls_tid_lower_rowid(mintid);
	uint64		blk = ItemPointerGetBlockNumberNoCheck(maxtid);
	OffsetNumber off = ItemPointerGetOffsetNumberNoCheck(maxtid);

	ls_scan_reset(scan);
	scan->tr_min = lo;
	/* the last rowid <= maxtid; an empty range when there is none */
	if (off == 0)
	{
		if (blk == 0)
		{
			scan->tr_min = 1;
			scan->tr_max = 0;
			return;
		}
		scan->tr_max = blk * LS_ROWS_PER_BLOCK - 1;
	}
	else if (off > LS_ROWS_PER_BLOCK)
		scan->tr_max = blk * LS_ROWS_PER_BLOCK + LS_ROWS_PER_BLOCK - 1;
	else
		scan->tr_max = blk * LS_ROWS_PER_BLOCK + off - 1;
	scan->cursor = lo;
	/* heap reads the range's pages from the one holding mintid on */
	scan->stat_block = (BlockNumber) Min(lo / LS_ROWS_PER_BLOCK, (uint64) MaxBlockNumber);
}

static bool
ls_scan_getnextslot_tidrange(TableScanDesc sscan, ScanDirection direction,
							 TupleTableSlot *slot)
{
	LsScanDesc	scan = (LsScanDesc) sscan;

	if (scan->tr_min > scan->tr_max)
	{
		ExecClearTuple(slot);
		return false;
	}
	return ls_scan_step(scan, direction, slot);
}

static Size
ls_parallelscan_estimate(Relation rel)
{
	return sizeof(LsParallelScanDescData);
}

static Size
ls_parallelscan_initialize(Relation rel, ParallelTableScanDesc pscan)
{
	LsParallelScanDesc p = (LsParallelScanDesc) pscan;

	p->base.phs_relid = RelationGetRelid(rel);
	p->base.phs_syncscan = false;
	p->limit = ls_rel_rowid_limit(rel);
	pg_atomic_init_u64(&p->next, 0);
	return sizeof(LsParallelScanDescData);
}

static void
ls_parallelscan_reinitialize(Relation rel, ParallelTableScanDesc pscan)
{
	LsParallelScanDesc p = (LsParallelScanDesc) pscan;

	pg_atomic_write_u64(&p->next, 0);
}

/* ------------------------------------------------------------------------
 * Index fetches and fetches by TID
 * ------------------------------------------------------------------------ */

/*
 * An index fetch copies the visible version into its own buffer and lets
 * the slot borrow it (no palloc/pfree per fetch).  Only the slot that
 * borrowed the buffer first gets it again: its tuple is replaced by the
 * new fetch anyway.  Fetches into other slots get a palloc'd copy, so no
 * slot ever sees its tuple overwritten under it.
 */
typedef struct LsIndexFetchData
{
	IndexFetchTableData base;
	ls_hot_table *tbl;
	char	   *buf;
	Size		bufsize;
	TupleTableSlot *buf_slot;	/* the slot that borrows buf */
	MemoryContext mcxt;			/* where buf lives */
	ls_hot_map_hint hint;		/* RID-map leaf of the last fetch */
	BlockNumber last_block;		/* block of the last fetch (statistics) */
} LsIndexFetchData;

/*
 * Destination of a fetch: a reusable buffer, or NULL for a palloc'd copy.
 * A buffer that is not the fetch's own (*owned false: the caller's) is
 * never freed; growing it allocates one in mcxt.
 */
typedef struct LsFetchBuf
{
	char	  **buf;
	Size	   *bufsize;
	MemoryContext mcxt;
	ls_hot_map_hint *hint;		/* or NULL */
	bool	   *owned;			/* or NULL: *buf is palloc'd */
	LsRowRef   *ref;			/* or NULL: a remembered row (ls_row_get_ref) */
} LsFetchBuf;

static IndexFetchTableData *
ls_index_fetch_begin(Relation rel)
{
	LsIndexFetchData *f = palloc0(sizeof(LsIndexFetchData));

	f->base.rel = rel;
	f->mcxt = CurrentMemoryContext;
	f->tbl = ls_table_for(rel);
	f->last_block = InvalidBlockNumber;
	return &f->base;
}

static void
ls_index_fetch_reset(IndexFetchTableData *scan)
{
	LsIndexFetchData *f = (LsIndexFetchData *) scan;

	/* heap releases its pinned page: the next fetch reads one again */
	f->last_block = InvalidBlockNumber;
}

static void
ls_index_fetch_end(IndexFetchTableData *scan)
{
	LsIndexFetchData *f = (LsIndexFetchData *) scan;

	if (f->buf)
		pfree(f->buf);
	pfree(scan);
}

/*
 * Look up tid and store the version visible to snapshot.  *gone is set when
 * the rowid holds nothing (never reused, so an index entry pointing there is
 * dead for good), and with check_dead also when no version is visible and
 * the row is dead to every snapshot (ls_row_surely_dead: what lets an index
 * scan kill its entry, as heap's all_dead does).  With fb, the tuple is copied
 * into *fb->buf (grown when too small) and the slot borrows it; without,
 * the slot gets its own copy.  With fb and no slot, *copy is the tuple in
 * the buffer (the caller has cleared every slot that borrowed the buffer:
 * growing it frees the old one).
 */
static bool
ls_fetch_visible(Relation rel, ls_hot_table *tbl, ItemPointer tid,
				 Snapshot snapshot, TupleTableSlot *slot, bool *gone,
				 bool check_dead, LsFetchBuf *fb, HeapTuple *copy)
{
	uint64		rowid = ls_tid_to_rowid(tid);
	ls_hot_row *row;
	ls_hot_version *v;
	HeapTuple	tup = NULL;
	TransactionId xmin = InvalidTransactionId;
	TransactionId ssi_xids[LS_SSI_MAX_XIDS];
	LsSsiBatch	ssib;
	bool		ssi;
	Size		need;

	*gone = false;
	if (rowid == LS_ROWID_INVALID || rowid >= ls_hot_table_rowid_limit(tbl))
		return false;

	/* may throw (doomed transaction): decided before the epoch */
	ssi = IsMVCCSnapshot(snapshot) &&
		CheckForSerializableConflictOutNeeded(rel, snapshot);

	if (fb != NULL && *fb->buf == NULL)
	{
		*fb->buf = MemoryContextAlloc(fb->mcxt, 1024);
		*fb->bufsize = 1024;
		if (fb->owned != NULL)
			*fb->owned = true;
	}
	for (;;)
	{
		v = NULL;
		ls_ssi_init(&ssib, ssi_xids, LS_SSI_MAX_XIDS);
		need = 0;
		ls_epoch_enter();
		if (fb != NULL && fb->ref != NULL)
			row = ls_row_get_ref(tbl, rowid, fb->ref);
		else if (fb != NULL && fb->hint != NULL)
			row = ls_row_get_hinted(tbl, rowid, fb->hint);
		else
			row = ls_row_get(tbl, rowid);
		if (row == NULL)
			*gone = true;
		else
		{
			ls_row_touch(row);
			v = ls_row_visible_version_fast(row, snapshot);
			if (ssi)
				ls_ssi_collect(&ssib, row, v);
			if (v == NULL && check_dead)
				*gone = ls_row_surely_dead(row, GlobalVisTestFor(rel));
			if (v != NULL)
			{
				xmin = ls_hv_xid(atomic_load_explicit(&v->xmin_word,
													  memory_order_relaxed));
				if (fb == NULL)
					ls_store_version(v, rel, rowid, slot);
				else
				{
					need = ls_version_tuple_size(v);
					if (need > 0 && need <= *fb->bufsize)
						tup = ls_version_copy_out(v, RelationGetRelid(rel), rowid,
												  *fb->buf);
				}
			}
		}
		ls_epoch_exit();
		if (fb == NULL || v == NULL || tup != NULL)
			break;
		/* too large for the buffer (or corrupt): grow it and look again */
		if (need == 0)
			ls_report_bad_version(rel);
		if (slot != NULL)
			ExecClearTuple(slot);
		if (fb->owned == NULL || *fb->owned)
			pfree(*fb->buf);
		*fb->buf = NULL;
		*fb->bufsize = 0;
		*fb->buf = MemoryContextAlloc(fb->mcxt, need);
		*fb->bufsize = need;
		if (fb->owned != NULL)
			*fb->owned = true;
	}
	if (ls_ssi_any(&ssib))
		ls_ssi_report(rel, snapshot, &ssib);

	if (v == NULL)
		return false;
	if (slot == NULL)
		*copy = tup;
	else if (tup != NULL)
		ls_store_borrowed(tup, slot);
	if (IsMVCCSnapshot(snapshot))
		PredicateLockTID(rel, tid, snapshot, xmin);
	return true;
}

static bool
ls_index_fetch_tuple(IndexFetchTableData *sscan, ItemPointer tid,
					 Snapshot snapshot, TupleTableSlot *slot,
					 bool *call_again, bool *all_dead)
{
	LsIndexFetchData *f = (LsIndexFetchData *) sscan;
	LsFetchBuf	fb = {&f->buf, &f->bufsize, f->mcxt, &f->hint, NULL, NULL};
	bool		gone;
	bool		found;

	/* one visible version per rowid: never a second call for this tid */
	*call_again = false;
	if (f->buf_slot == NULL)
		f->buf_slot = slot;
	/* heap reads a page when the TID leaves the page it holds pinned */
	if (ItemPointerGetBlockNumber(tid) != f->last_block)
	{
		f->last_block = ItemPointerGetBlockNumber(tid);
		ls_stats_prepare(sscan->rel);
		ls_count_block_reads(sscan->rel, 1);
	}
	found = ls_fetch_visible(sscan->rel, f->tbl, tid, snapshot, slot, &gone,
							 all_dead != NULL, f->buf_slot == slot ? &fb : NULL,
							 NULL);
	if (all_dead)
		*all_dead = gone;
	return found;
}

/*
 * The hash lookup's fetch (hashscan.c): as an index fetch, but without an
 * IndexFetchTableData (the caller keeps an LsRowidFetch in its own state,
 * with a buffer of its own) and without a slot: the visible version is
 * left in the buffer as a HeapTuple for the caller to take the columns it
 * needs from; NULL when no version is visible.  The tuple is valid until
 * the next fetch; before it, the caller clears every slot pointing into
 * the tuple (a fetch may grow the buffer, freeing the old one when it was
 * allocated here).
 */
void
ls_rowid_fetch_init(LsRowidFetch *f, Relation rel, char *buf, Size bufsize)
{
	f->tbl = ls_table_for(rel);
	f->buf = buf;
	f->bufsize = bufsize;
	f->owned = false;
	f->mcxt = CurrentMemoryContext;
	memset(&f->hint, 0, sizeof(f->hint));
	f->last_block = InvalidBlockNumber;
	memset(&f->ref, 0, sizeof(f->ref));
}

HeapTuple
ls_rowid_fetch(Relation rel, LsRowidFetch *f, ItemPointer tid,
			   Snapshot snapshot)
{
	LsFetchBuf	fb = {&f->buf, &f->bufsize, f->mcxt, &f->hint, &f->owned, &f->ref};
	HeapTuple	tup = NULL;
	bool		gone;

	/* statistics as ls_index_fetch_tuple's */
	if (ItemPointerGetBlockNumber(tid) != f->last_block)
	{
		f->last_block = ItemPointerGetBlockNumber(tid);
		ls_stats_prepare(rel);
		ls_count_block_reads(rel, 1);
	}
	if (!ls_fetch_visible(rel, f->tbl, tid, snapshot, NULL, &gone, false,
						  &fb, &tup))
		return NULL;
	return tup;
}

/* Free what the fetch allocated (the caller's buffer is the caller's). */
void
ls_rowid_fetch_end(LsRowidFetch *f)
{
	if (f->owned && f->buf != NULL)
		pfree(f->buf);
	f->buf = NULL;
	f->bufsize = 0;
	f->owned = false;
}

static bool
ls_tuple_fetch_row_version(Relation rel, ItemPointer tid, Snapshot snapshot,
						   TupleTableSlot *slot)
{
	bool		gone;
	ls_hot_table *tbl = ls_table_for(rel);

	/* heap_fetch reads the page (a TID beyond the end reads nothing) */
	if (ItemPointerGetBlockNumber(tid) < ls_blocks_for_limit(ls_hot_table_rowid_limit(tbl)))
	{
		ls_stats_prepare(rel);
		ls_count_block_reads(rel, 1);
	}
	return ls_fetch_visible(rel, tbl, tid, snapshot, slot, &gone, false, NULL, NULL);
}

static bool
ls_tuple_tid_valid(TableScanDesc sscan, ItemPointer tid)
{
	LsScanDesc	scan = (LsScanDesc) sscan;
	uint64		rowid = ls_tid_to_rowid(tid);

	return ItemPointerIsValid(tid) && rowid != LS_ROWID_INVALID &&
		rowid < ls_hot_table_rowid_limit(scan->tbl);
}

/*
 * Follow update links from tid to the newest version visible to the scan's
 * snapshot, like heap's ctid chain walk.  Updates that kept the rowid need
 * no walking: the rowid is the whole chain.
 */
static void
ls_tuple_get_latest_tid(TableScanDesc sscan, ItemPointer tid)
{
	LsScanDesc	scan = (LsScanDesc) sscan;
	uint64		rowid = ls_tid_to_rowid(tid);
	int			hops = 0;

	while (rowid != LS_ROWID_INVALID &&
		   rowid < ls_hot_table_rowid_limit(scan->tbl))
	{
		ls_update_chain_step(sscan->rs_rd, rowid, &hops);
		ls_hot_row *row;
		ls_hot_version *v;
		uint64		next = LS_ROWID_INVALID;
		bool		visible = false;

		ls_epoch_enter();
		row = ls_row_get(scan->tbl, rowid);
		if (row != NULL)
		{
			visible = ls_row_visible_version(row, scan->base.rs_snapshot) != NULL;
			v = ls_row_newest_valid(row);
			if (v != NULL)
			{
				LsVersionInfo info;

				ls_version_info(v, &info);
				if ((info.xmax_flags & LS_HV_XMAX_MOVED) &&
					!(info.xmax_flags & LS_HV_XMAX_ABORTED) &&
					!ls_xmax_is_lock_only(&info))
					next = info.next_rowid;
			}
		}
		ls_epoch_exit();

		if (row == NULL)
			break;
		if (visible)
			ls_rowid_to_tid(rowid, tid);
		rowid = next;
	}
}

/* Is the version held in slot (identified by xmin and cmin) visible? */
static bool
ls_tuple_satisfies_snapshot(Relation rel, TupleTableSlot *slot,
							Snapshot snapshot)
{
	HeapTupleTableSlot *hslot = (HeapTupleTableSlot *) slot;
	ls_hot_table *tbl = ls_table_for(rel);
	uint64		rowid = ls_tid_to_rowid(&slot->tts_tid);
	TransactionId xmin;
	CommandId	cmin;
	bool		result = false;
	ls_hot_row *row;

	if (!TTS_IS_HEAPTUPLE(slot) || hslot->tuple == NULL)
		elog(ERROR, "unexpected slot type in tuple_satisfies_snapshot of a leanstore table");
	if (rowid == LS_ROWID_INVALID)
		return false;
	xmin = HeapTupleHeaderGetRawXmin(hslot->tuple->t_data);
	cmin = HeapTupleHeaderGetRawCommandId(hslot->tuple->t_data);

	ls_epoch_enter();
	row = ls_row_get(tbl, rowid);
	if (row != NULL)
	{
		ls_hot_version *v;
		int			n = 0;

		for (v = ls_hot_row_newest(row); v != NULL; v = ls_chain_next(row, v, &n))
		{
			if (ls_hv_xid(atomic_load(&v->xmin_word)) == xmin && v->cmin == cmin)
			{
				result = ls_version_visible(v, snapshot);
				break;
			}
		}
	}
	ls_epoch_exit();
	return result;
}

/*
 * Index entries may be deleted when their rowid holds nothing (removed or
 * DEAD: rowids are never reused) or a row dead to every snapshot
 * (ls_row_surely_dead; VACUUM removes the row later).  Live rows, and rows
 * some snapshot may still see, keep their entries.
 */
static TransactionId
ls_index_delete_tuples(Relation rel, TM_IndexDeleteOp *delstate)
{
	ls_hot_table *tbl = ls_table_for(rel);
	GlobalVisState *vistest = GlobalVisTestFor(rel);

	ls_epoch_enter();
	for (int i = 0; i < delstate->ndeltids; i++)
	{
		TM_IndexDelete *d = &delstate->deltids[i];
		TM_IndexStatus *s = &delstate->status[d->id];
		uint64		rowid = ls_tid_to_rowid(&d->tid);
		ls_hot_row *row;

		if (s->knowndeletable)
			continue;
		if (rowid == LS_ROWID_INVALID ||
			(row = ls_row_get(tbl, rowid)) == NULL ||
			ls_row_surely_dead(row, vistest))
			s->knowndeletable = true;
	}
	ls_epoch_exit();
	/* no standby can read leanstore data, so there is no conflict horizon */
	return InvalidTransactionId;
}

/* ------------------------------------------------------------------------
 * Bitmap scans
 * ------------------------------------------------------------------------ */

/*
 * Copy the visible rows among the candidates rowids[ncand_next .. nrows)
 * of the current block into the batch, in one epoch (heap's page-at-a-time
 * bitmap scan): up to LS_BATCH_ROWS rows, fewer when the buffer is full or
 * rw-conflicts were collected (reported after the epoch).  Visible rows are
 * predicate-locked, as heap does for a page's visible tuples.
 */
static void
ls_bitmap_fill(LsScanDesc scan)
{
	Snapshot	snapshot = scan->base.rs_snapshot;
	Relation	rel = scan->base.rs_rd;
	Oid			relid = RelationGetRelid(rel);
	TransactionId ssi_xids[LS_SSI_BATCH_XIDS];
	LsSsiBatch	ssib;
	Size		used = 0;
	Size		need = 0;
	bool		bad = false;
	bool		stop = false;
	bool		ssi;

	/* may throw (doomed transaction): decided before the epoch */
	ssi = IsMVCCSnapshot(snapshot) &&
		CheckForSerializableConflictOutNeeded(rel, snapshot);
	ls_ssi_init(&ssib, ssi_xids, LS_SSI_BATCH_XIDS);
	ls_batch_reserve(scan, 0);
	scan->bn = 0;
	scan->bnext = 0;

	ls_epoch_enter();
	while (!stop && scan->ncand_next < scan->nrows && scan->bn < LS_BATCH_ROWS)
	{
		ls_hot_row *group[LS_MAP_BATCH];	/* per candidate, NULL: no row */
		ls_hot_row *rows[LS_MAP_BATCH]; /* the rows found, for prefetching */
		int			ngroup = Min(scan->nrows - scan->ncand_next,
								 Min(LS_MAP_BATCH, LS_BATCH_ROWS - scan->bn));
		int			nrows = 0;

		/* look the group up and prefetch its rows, then decide */
		for (int i = 0; i < ngroup; i++)
		{
			group[i] = ls_row_get_hinted(scan->tbl,
										 scan->rowids[scan->ncand_next + i],
										 &scan->hint);
			if (group[i] != NULL)
				rows[nrows++] = group[i];
		}
		ls_prefetch_start(rows, nrows);
		for (int i = 0, r = 0; i < ngroup; i++)
		{
			uint64		rowid = scan->rowids[scan->ncand_next];
			ls_hot_row *row = group[i];

			if (row != NULL)
			{
				ls_hot_version *v;

				ls_prefetch_step(rows, r++, nrows);
				v = ls_row_visible_version_fast(row, snapshot);

				if (v != NULL && !ls_batch_add(scan, v, relid, rowid, &used, &need))
				{
					/* this candidate again in the next batch */
					bad = (need == 0);
					stop = true;
					break;
				}
				if (ssi)
					ls_ssi_collect(&ssib, row, v);
			}
			scan->ncand_next++;
			if (!ls_ssi_room(&ssib))
			{
				stop = true;
				break;
			}
		}
	}
	ls_epoch_exit();
	if (bad)
		ls_report_bad_version(rel);
	if (ls_ssi_any(&ssib))
		ls_ssi_report(rel, snapshot, &ssib);
	if (scan->bn == 0 && need > 0)
		ls_batch_reserve(scan, need);	/* a row wider than the buffer */
	if (IsMVCCSnapshot(snapshot))
	{
		for (int i = 0; i < scan->bn; i++)
			PredicateLockTID(rel, &scan->btups[i]->t_self, snapshot,
							 HeapTupleHeaderGetRawXmin(scan->btups[i]->t_data));
	}
}

static bool
ls_scan_bitmap_next_block(TableScanDesc sscan, TBMIterateResult *tbmres)
{
	LsScanDesc	scan = (LsScanDesc) sscan;
	int			ncand = 0;
	uint64		base = (uint64) tbmres->blockno * LS_ROWS_PER_BLOCK;
	uint64		limit = ls_hot_table_rowid_limit(scan->tbl);

	scan->nrows = 0;
	scan->ncand_next = 0;
	scan->bn = 0;
	scan->bnext = 0;
	scan->cur_block = tbmres->blockno;
	if (base >= limit)
		return false;
	/*
	 * The bitmap may hold blocks of rows inserted since the scan began
	 * (a cursor fetched long after it was opened), and PostgreSQL
	 * prefetches up to effective_io_concurrency (at most 1000) blocks
	 * ahead of this one: keep LS_COVER_SLACK / 2 covered past it.  Blocks
	 * the executor skips without calling here (all-visible, no column
	 * needed) are older than the rows inserted since the scan began.
	 */
	if ((uint64) tbmres->blockno + LS_COVER_SLACK / 2 >= scan->cover_end)
		ls_scan_cover(scan, tbmres->blockno + 1);
	ls_count_block_reads(sscan->rs_rd, 1);

	if (tbmres->ntuples >= 0)
	{
		for (int i = 0; i < tbmres->ntuples && ncand < LS_ROWS_PER_BLOCK; i++)
		{
			OffsetNumber off = tbmres->offsets[i];

			if (off >= 1 && off <= LS_ROWS_PER_BLOCK && base + off - 1 < limit)
				scan->rowids[ncand++] = base + off - 1;
		}
	}
	else
	{
		/*
		 * A lossy page: every rowid of the block is a candidate, but most
		 * may hold nothing (skipped rowids; one row a block at a low
		 * fillfactor).  A look-up each would search the cold tree 291
		 * times a block (a bitmap scan of 135000 one-row blocks took 8x
		 * heap's time); one range read finds the rowids that hold a row.
		 */
		uint64		cursor = base;
		uint64		end = Min(base + LS_ROWS_PER_BLOCK, limit);
		ls_hot_row *rows[64];
		uint32		n;

		ls_epoch_enter();
		while (ncand < LS_ROWS_PER_BLOCK &&
			   (n = ls_rows_batch(scan->tbl, &cursor, end, rows, lengthof(rows))) > 0)
		{
			for (uint32 i = 0; i < n && ncand < LS_ROWS_PER_BLOCK; i++)
				scan->rowids[ncand++] = rows[i]->rowid;
		}
		ls_epoch_exit();
	}
	scan->nrows = ncand;
	ls_bitmap_fill(scan);
	return scan->bn > 0 || scan->ncand_next < scan->nrows;
}

static bool
ls_scan_bitmap_next_tuple(TableScanDesc sscan, TBMIterateResult *tbmres,
						  TupleTableSlot *slot)
{
	LsScanDesc	scan = (LsScanDesc) sscan;

	for (;;)
	{
		if (ls_batch_next(scan, slot))
		{
			pgstat_count_heap_fetch(sscan->rs_rd);
			return true;
		}
		/* the slot may borrow the last row of the batch: clear it first */
		ExecClearTuple(slot);
		if (scan->ncand_next >= scan->nrows)
			return false;
		CHECK_FOR_INTERRUPTS();
		ls_bitmap_fill(scan);
	}
}

/* ------------------------------------------------------------------------
 * ANALYZE sampling
 * ------------------------------------------------------------------------ */

static bool
ls_scan_analyze_next_block(TableScanDesc sscan, BlockNumber blockno,
						   BufferAccessStrategy bstrategy)
{
	LsScanDesc	scan = (LsScanDesc) sscan;

	scan->cur_block = blockno;
	scan->nrows = -1;			/* not read yet */
	scan->nextrow = 0;
	ls_count_block_reads(sscan->rs_rd, 1);
	return true;
}

/*
 * ANALYZE's look at one row: counts each of its versions live or dead as
 * heap's acquire_sample_rows counts the tuples of a HOT chain, and returns
 * the version to sample (NULL: none).  A version another transaction is
 * inserting (an in-place update that runs) counts neither way, and the
 * version it replaces, deleted by a transaction that runs, is live and the
 * sample: until session 28 the running version hid the row, and a
 * whole-table UPDATE in progress gave reltuples 0.  Caller inside an epoch.
 */
static ls_hot_version *
ls_analyze_row(ls_hot_row *row, double *liverows, double *deadrows)
{
	ls_hot_version *sample = NULL;
	int			hops = 0;

	for (ls_hot_version *v = ls_hot_row_newest(row); v != NULL;
		 v = ls_chain_next(row, v, &hops))
	{
		TransactionId dead_after;
		LsVersionInfo info;
		bool		live = false;

		switch (ls_version_vacuum_state(v, NULL, &dead_after))
		{
			case LS_V_LIVE:
				live = true;
				break;
			case LS_V_DEAD:
			case LS_V_RECENTLY_DEAD:
				*deadrows += 1;
				break;
			case LS_V_INSERT_IN_PROGRESS:
				ls_version_info(v, &info);
				live = TransactionIdIsCurrentTransactionId(info.xmin);
				break;
			case LS_V_DELETE_IN_PROGRESS:
				ls_version_info(v, &info);
				if (TransactionIdIsCurrentTransactionId(info.xmax))
					*deadrows += 1;
				else
					live = true;
				break;
		}
		if (live)
		{
			*liverows += 1;
			if (sample == NULL)
				sample = v;
		}
	}
	return sample;
}

/*
 * Read the whole current block for ANALYZE: count its live and dead rows
 * and copy the sample rows out, a batch of rows of both tiers per epoch
 * (one cold-tree descent per batch, not a lookup per rowid).
 */
static void
ls_analyze_read_block(LsScanDesc scan, double *liverows, double *deadrows)
{
	Relation	rel = scan->base.rs_rd;
	uint64		base = (uint64) scan->cur_block * LS_ROWS_PER_BLOCK;
	uint64		limit = scan->tbl ? ls_hot_table_rowid_limit(scan->tbl) : 0;
	uint64		end = Min(base + LS_ROWS_PER_BLOCK, limit);
	uint64		cursor = base;
	MemoryContext old;

	scan->nrows = 0;
	if (scan->acxt == NULL)
	{
		scan->acxt = AllocSetContextCreate(scan->mcxt, "leanstore analyze block",
										   ALLOCSET_DEFAULT_SIZES);
		scan->atups = MemoryContextAlloc(scan->mcxt,
										 sizeof(HeapTuple) * LS_ROWS_PER_BLOCK);
	}
	MemoryContextReset(scan->acxt);
	old = MemoryContextSwitchTo(scan->acxt);
	while (cursor < end)
	{
		ls_hot_row *rows[64];
		uint32		n;
		bool		bad = false;

		ls_epoch_enter();
		n = ls_rows_batch(scan->tbl, &cursor, end, rows, lengthof(rows));
		for (uint32 i = 0; i < n && !bad; i++)
		{
			ls_hot_version *v = ls_analyze_row(rows[i], liverows, deadrows);
			Size		need;

			if (v == NULL)
				continue;
			need = ls_version_tuple_size(v);
			if (need == 0)
				bad = true;
			else
			{
				Assert(scan->nrows < LS_ROWS_PER_BLOCK);
				scan->atups[scan->nrows++] =
					ls_version_copy_out(v, RelationGetRelid(rel), rows[i]->rowid,
										palloc(need));
			}
		}
		ls_epoch_exit();
		if (bad)
			ls_report_bad_version(rel);
		if (n == 0)
			break;
	}
	MemoryContextSwitchTo(old);

	/*
	 * DEAD rowids are dead rows, as heap counts its LP_DEAD line pointers:
	 * the count becomes n_dead_tup, which wakes autovacuum to delete their
	 * index entries (an aborted bulk load, rows pack found deleted)
	 */
	if (scan->tbl != NULL)
	{
		uint64		dead;

		cursor = base;
		ls_epoch_enter();
		while (ls_hot_scan_next_dead(scan->tbl, &cursor, end, &dead))
			*deadrows += 1;
		ls_epoch_exit();
	}
}

static bool
ls_scan_analyze_next_tuple(TableScanDesc sscan, TransactionId OldestXmin,
						   double *liverows, double *deadrows,
						   TupleTableSlot *slot)
{
	LsScanDesc	scan = (LsScanDesc) sscan;

	if (scan->nrows < 0)
		ls_analyze_read_block(scan, liverows, deadrows);
	if (scan->nextrow < scan->nrows)
	{
		/* the copy lives until the next block: the slot borrows it */
		ls_store_borrowed(scan->atups[scan->nextrow++], slot);
		return true;
	}
	ExecClearTuple(slot);
	return false;
}

/* ------------------------------------------------------------------------
 * TABLESAMPLE
 * ------------------------------------------------------------------------ */

static bool
ls_scan_sample_next_block(TableScanDesc sscan, SampleScanState *scanstate)
{
	LsScanDesc	scan = (LsScanDesc) sscan;
	TsmRoutine *tsm = scanstate->tsmroutine;
	BlockNumber nblocks = ls_blocks_for_limit(scan->end);
	BlockNumber blockno;

	if (nblocks == 0)
		return false;
	if (tsm->NextSampleBlock)
		blockno = tsm->NextSampleBlock(scanstate, nblocks);
	else
	{
		blockno = scan->sample_next_block;
		if (blockno >= nblocks)
			blockno = InvalidBlockNumber;
		else
			scan->sample_next_block = blockno + 1;
	}
	if (!BlockNumberIsValid(blockno) || blockno >= nblocks)
	{
		scan->cur_block = InvalidBlockNumber;
		return false;
	}
	scan->cur_block = blockno;
	ls_count_block_reads(sscan->rs_rd, 1);
	return true;
}

static bool
ls_scan_sample_next_tuple(TableScanDesc sscan, SampleScanState *scanstate,
						  TupleTableSlot *slot)
{
	LsScanDesc	scan = (LsScanDesc) sscan;
	TsmRoutine *tsm = scanstate->tsmroutine;
	uint64		base = (uint64) scan->cur_block * LS_ROWS_PER_BLOCK;

	for (;;)
	{
		OffsetNumber off;
		ItemPointerData tid;
		bool		gone;

		CHECK_FOR_INTERRUPTS();
		off = tsm->NextSampleTuple(scanstate, scan->cur_block, LS_ROWS_PER_BLOCK);
		if (!OffsetNumberIsValid(off))
		{
			ExecClearTuple(slot);
			return false;
		}
		if (off > LS_ROWS_PER_BLOCK || base + off - 1 >= scan->end)
			continue;
		ls_rowid_to_tid(base + off - 1, &tid);
		if (ls_fetch_visible(sscan->rs_rd, scan->tbl, &tid, sscan->rs_snapshot,
							 slot, &gone, false, NULL, NULL))
		{
			pgstat_count_heap_getnext(sscan->rs_rd);
			return true;
		}
	}
}

/* ------------------------------------------------------------------------
 * Size, TOAST
 * ------------------------------------------------------------------------ */

static uint64
ls_relation_size(Relation rel, ForkNumber forkNumber)
{
	uint64		size = 0;

	if (forkNumber == MAIN_FORKNUM || forkNumber == InvalidForkNumber)
	{
		ls_hot_table *tbl = ls_table_for_or_null(rel);

		if (tbl != NULL)
			size = (uint64) ls_table_nblocks(tbl) * BLCKSZ;
	}
	/* the other forks are real files: the visibility map (vismap.c) */
	for (int fork = 0; fork <= MAX_FORKNUM; fork++)
	{
		if (fork == MAIN_FORKNUM ||
			(forkNumber != InvalidForkNumber && forkNumber != fork))
			continue;
		if (smgrexists(RelationGetSmgr(rel), fork))
			size += (uint64) smgrnblocks(RelationGetSmgr(rel), fork) * BLCKSZ;
	}
	return size;
}

/*
 * Like heap: a TOAST table is needed when some attribute is toastable, so
 * that wide values are moved out of line and rows stay small.
 */
static bool
ls_relation_needs_toast_table(Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped)
			continue;
		if (att->attlen == -1 && att->attstorage != TYPSTORAGE_PLAIN)
			return true;
	}
	return false;
}

static Oid
ls_relation_toast_am(Relation rel)
{
	return HEAP_TABLE_AM_OID;
}

/* TOAST tables of leanstore tables are heap tables: delegate to heap. */
static void
ls_relation_fetch_toast_slice(Relation toastrel, Oid valueid, int32 attrsize,
							  int32 sliceoffset, int32 slicelength,
							  struct varlena *result)
{
	const TableAmRoutine *heap = GetHeapamTableAmRoutine();

	heap->relation_fetch_toast_slice(toastrel, valueid, attrsize, sliceoffset,
									 slicelength, result);
}

/*
 * heap's table_block_relation_estimate_size on the virtual blocks, which
 * fill as heap pages do: the current size in blocks (at least 10 for a
 * table never vacuumed nor analyzed), and the tuple density of pg_class
 * (relpages and reltuples, both counted in the same blocks) or, before
 * any VACUUM or ANALYZE, heap's guess from the column widths.  allvisfrac
 * is heap's too: relallvisible (the visibility map's bits VACUUM or ANALYZE
 * counted, vismap.c) over the current blocks.
 */
static void
ls_relation_estimate_size(Relation rel, int32 *attr_widths, BlockNumber *pages,
						  double *tuples, double *allvisfrac)
{
	ls_hot_table *tbl = ls_table_for_or_null(rel);
	BlockNumber curpages = tbl != NULL ? ls_table_nblocks(tbl) : 0;
	BlockNumber relpages = (BlockNumber) rel->rd_rel->relpages;
	double		reltuples = (double) rel->rd_rel->reltuples;
	double		density;

	*allvisfrac = 0;
	/* heap's HACK: a table never vacuumed may be about to be loaded */
	if (curpages < 10 && reltuples < 0 && !rel->rd_rel->relhassubclass)
		curpages = 10;
	*pages = curpages;
	if (curpages == 0)
	{
		*tuples = 0;
		return;
	}
	if (reltuples >= 0 && relpages > 0)
		density = reltuples / (double) relpages;
	else
	{
		/* heap's density from the column widths (integer division, as heap) */
		int32		tuple_width = get_rel_data_width(rel, attr_widths) +
			MAXALIGN(SizeofHeapTupleHeader) + sizeof(ItemIdData);

		density = (BLCKSZ - SizeOfPageHeaderData) / tuple_width;
	}
	*tuples = rint(density * (double) curpages);

	/* heap's share of all-visible blocks */
	if (rel->rd_rel->relallvisible > 0)
		*allvisfrac = Min(1.0, (double) rel->rd_rel->relallvisible / curpages);
}

static void
ls_finish_bulk_insert(Relation rel, int options)
{
	/* hand memory retired during the load back to the allocator */
	ls_hot_reclaim(ls_ctx());
	/* COPY FREEZE: the blocks it filled are all-visible, as heap's are */
	ls_frozen_load_finish(rel, options);
}

/* ------------------------------------------------------------------------
 * The routine
 * ------------------------------------------------------------------------ */

static const TableAmRoutine ls_routine = {
	.type = T_TableAmRoutine,

	.slot_callbacks = ls_slot_callbacks,

	.scan_begin = ls_scan_begin,
	.scan_end = ls_scan_end,
	.scan_rescan = ls_scan_rescan,
	.scan_getnextslot = ls_scan_getnextslot,

	.scan_set_tidrange = ls_scan_set_tidrange,
	.scan_getnextslot_tidrange = ls_scan_getnextslot_tidrange,

	.parallelscan_estimate = ls_parallelscan_estimate,
	.parallelscan_initialize = ls_parallelscan_initialize,
	.parallelscan_reinitialize = ls_parallelscan_reinitialize,

	.index_fetch_begin = ls_index_fetch_begin,
	.index_fetch_reset = ls_index_fetch_reset,
	.index_fetch_end = ls_index_fetch_end,
	.index_fetch_tuple = ls_index_fetch_tuple,

	.tuple_insert = ls_tuple_insert,
	.tuple_insert_speculative = ls_tuple_insert_speculative,
	.tuple_complete_speculative = ls_tuple_complete_speculative,
	.multi_insert = ls_multi_insert,
	.tuple_delete = ls_tuple_delete,
	.tuple_update = ls_tuple_update,
	.tuple_lock = ls_tuple_lock,
	.finish_bulk_insert = ls_finish_bulk_insert,

	.tuple_fetch_row_version = ls_tuple_fetch_row_version,
	.tuple_get_latest_tid = ls_tuple_get_latest_tid,
	.tuple_tid_valid = ls_tuple_tid_valid,
	.tuple_satisfies_snapshot = ls_tuple_satisfies_snapshot,
	.index_delete_tuples = ls_index_delete_tuples,

	.relation_set_new_filenode = ls_set_new_filenode,
	.relation_nontransactional_truncate = ls_nontransactional_truncate,
	.relation_copy_data = ls_copy_data,
	.relation_copy_for_cluster = ls_copy_for_cluster,
	.relation_vacuum = ls_vacuum_rel,
	.scan_analyze_next_block = ls_scan_analyze_next_block,
	.scan_analyze_next_tuple = ls_scan_analyze_next_tuple,
	.index_build_range_scan = ls_index_build_range_scan,
	.index_validate_scan = ls_index_validate_scan,

	.relation_size = ls_relation_size,
	.relation_needs_toast_table = ls_relation_needs_toast_table,
	.relation_toast_am = ls_relation_toast_am,
	.relation_fetch_toast_slice = ls_relation_fetch_toast_slice,

	.relation_estimate_size = ls_relation_estimate_size,

	.scan_bitmap_next_block = ls_scan_bitmap_next_block,
	.scan_bitmap_next_tuple = ls_scan_bitmap_next_tuple,
	.scan_sample_next_block = ls_scan_sample_next_block,
	.scan_sample_next_tuple = ls_scan_sample_next_tuple,
};

Datum
leanstore_tableam_handler(PG_FUNCTION_ARGS)
{
	/* refuses with the preload message when the tier is not there */
	(void) ls_shared_hot();
	PG_RETURN_POINTER(&ls_routine);
}
