/*
 * ddl.c - storage life cycle, VACUUM/GC, CLUSTER, index builds.
 *
 * Storage: each relfilenode of a leanstore table owns one hot-tier table
 * (keyed by tablespace, database, relfilenode) and, so that PostgreSQL's
 * pending-delete machinery and tools see a relation, an empty smgr file.
 * The hot table is created with the relfilenode and freed exactly when
 * PostgreSQL unlinks the file (see init.c).
 *
 * GC (VACUUM and the pruning that updates do): for each row, versions older
 * than the newest version whose inserter every snapshot sees as committed
 * are unreachable and are truncated; aborted versions on top of the chain
 * are popped; a row whose current version is deleted and dead to every
 * snapshot is removed and its rowid marked DEAD.  VACUUM then deletes index
 * entries pointing at DEAD rowids and forgets them, freezes old xids and
 * advances relfrozenxid to the oldest xid it left behind.
 */
#include "postgres.h"

#include <math.h>

#include "access/genam.h"
#include "access/heapam.h"
#include "access/heaptoast.h"
#include "access/multixact.h"
#include "access/transam.h"
#include "access/visibilitymap.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/storage.h"
#include "catalog/storage_xlog.h"
#include "commands/progress.h"
#include "commands/vacuum.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/autovacuum.h"
#include "storage/bufmgr.h"
#include "storage/procarray.h"
#include "storage/smgr.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/tuplesort.h"

#include "ls_hashscan.h"
#include "ls_pg.h"

/* ------------------------------------------------------------------------
 * Storage life cycle
 * ------------------------------------------------------------------------ */

static void
ls_create_smgr(const RelFileNode *node, char persistence)
{
	SMgrRelation srel = RelationCreateStorage(*node, persistence, true);

	if (persistence == RELPERSISTENCE_UNLOGGED)
	{
		smgrcreate(srel, INIT_FORKNUM, false);
		log_smgrcreate(node, INIT_FORKNUM);
		smgrimmedsync(srel, INIT_FORKNUM);
	}
	smgrclose(srel);
}

void
ls_set_new_filenode(Relation rel, const RelFileNode *newrnode,
					char persistence, TransactionId *freezeXid,
					MultiXactId *minmulti)
{
	ls_hot_table *tbl;

	/* not past what replay of leanstore's log may ask clog about */
	*freezeXid = ls_log_hold_frozenxid(RecentXmin);
	*minmulti = GetOldestMultiXactId();

	ls_create_smgr(newrnode, persistence);
	ls_storage_create(newrnode, persistence, &tbl);

	/*
	 * A new relfilenode for an existing relation (TRUNCATE): PostgreSQL
	 * unlinks the old files at commit, and so do we.
	 */
	if (newrnode != &rel->rd_node && rel->rd_rel->relfilenode != InvalidOid &&
		!RelFileNodeEquals(*newrnode, rel->rd_node))
		ls_storage_schedule_drop(rel);
}

/* Remove every row (TRUNCATE of a table created in this transaction). */
void
ls_nontransactional_truncate(Relation rel)
{
	ls_hot_table *tbl = ls_table_for(rel);
	ls_hot_ctx *ctx = ls_ctx();
	uint64		limit = ls_hot_table_rowid_limit(tbl);
	uint64		cursor = 0;
	uint64		dead;

	/* the file is truncated below: its tree goes first */
	ls_cold_drop_for(tbl);
	for (;;)
	{
		ls_hot_row *row;

		ls_epoch_enter();
		row = ls_hot_scan_next(tbl, &cursor, limit);
		if (row != NULL)
		{
			ls_row_lock(row);
			if (ls_hot_row_is_removed(row))
				ls_row_unlock(row);
			else
			{
				ls_row_forget_latch();
				ls_hot_row_remove(ctx, tbl, row, false);
			}
		}
		ls_epoch_exit();
		if (row == NULL)
			break;
	}
	cursor = 0;
	ls_epoch_enter();
	while (ls_hot_scan_next_dead(tbl, &cursor, limit, &dead))
		ls_hot_rowid_forget(ctx, tbl, dead);
	ls_epoch_exit();
	/* the indexes are emptied too: no entry names a hole any more */
	ls_holes_clear(tbl);

	/* also empties the visibility map: no block is marked any more */
	RelationTruncate(rel, 0);
	ls_hot_table_reset_allvis_limit(tbl);
	ls_log_truncate(tbl);
	ls_mark_written();
}

/*
 * Insert a chain (versions[0] oldest .. versions[n-1] newest, all fresh and
 * uninstalled) as row rowid of tbl; on failure (the row or its RID-map
 * slot found no room) the versions are freed and the status returned.
 */
static ls_status
ls_insert_chain_try(ls_hot_table *tbl, uint64 rowid, ls_hot_version **versions, int n)
{
	ls_hot_row *row;
	ls_status	st;

	Assert(n > 0);
	ls_epoch_enter();
	st = ls_hot_row_insert(ls_ctx(), tbl, rowid, LS_ORIGIN_INSERTED, versions[0], &row);
	if (st == LS_OK && n > 1)
	{
		ls_row_lock(row);
		for (int i = 1; i < n; i++)
			ls_hot_row_install(ls_ctx(), tbl, row, versions[i]);
		ls_row_unlock(row);
	}
	ls_epoch_exit();
	if (st != LS_OK)
	{
		for (int i = 0; i < n; i++)
			ls_hot_version_free(ls_ctx(), versions[i]);
	}
	return st;
}

/* ls_insert_chain_try, and an error when it fails */
static void
ls_insert_chain(Relation rel, ls_hot_table *tbl, uint64 rowid,
				ls_hot_version **versions, int n)
{
	ls_status	st;

	if (n <= 0)
		return;
	st = ls_insert_chain_try(tbl, rowid, versions, n);
	if (st != LS_OK)
		ls_report_status(st, rel, "copy rows into");
}

/*
 * Is the row of chain c[0..k) (newest first) dead to every snapshot: every
 * inserter aborted, or the deleter (or updater) of its newest version that
 * did not abort committed and every snapshot sees that?  VACUUM would make
 * it a DEAD rowid.  *xmax_word: that version's xmax word, settled
 * (ls_xmax_settle), 0 when there is none.
 */
static bool
ls_copy_row_dead(ls_hot_version **c, int k, GlobalVisState *vistest,
				 uint64 *xmax_word)
{
	ls_hot_version *v = NULL;
	TransactionId xmax;

	*xmax_word = 0;
	for (int i = 0; i < k && v == NULL; i++)
		if (!(ls_hv_flags(atomic_load(&c[i]->xmin_word)) & LS_HV_XMIN_ABORTED))
			v = c[i];
	if (v == NULL)
		return true;
	*xmax_word = ls_xmax_settle(atomic_load(&v->xmax_word));
	xmax = ls_hv_xid(*xmax_word);
	if (xmax == InvalidTransactionId ||
		(ls_hv_flags(*xmax_word) & (LS_HV_XMAX_LOCK_ONLY | LS_HV_XMAX_IS_MULTI)))
		return false;
	return TransactionIdDidCommit(xmax) && GlobalVisTestIsRemovableXid(vistest, xmax);
}

/*
 * One row of SET TABLESPACE's copy: c[0..k) are local copies of its chain,
 * newest first.  A row dead to every snapshot (a committed DELETE that no
 * VACUUM has removed yet) is not copied: its rowid joins dst's holes, so
 * that VACUUM deletes its index entries as it would have for the DEAD
 * rowid.  A row of one plain version (no xmax, no link) that was cold goes
 * into dst's cold tree, and so does a hot one once the hot tier has no room
 * for it: the copy of a table larger than the hot tier must not need it all
 * (both copies are in memory until the old one goes at commit).  Anything
 * else becomes a hot chain again.  Outside epochs.
 */
static void
ls_copy_row(Relation rel, ls_hot_table *dst, uint64 rowid, ls_hot_version **c,
			int k, bool was_cold, GlobalVisState *vistest)
{
	ls_hot_version **tier;
	volatile int made = 0;
	uint64		xmax_word;

	if (ls_copy_row_dead(c, k, vistest, &xmax_word))
	{
		ls_holes_add(dst, rowid, rowid + 1);
		return;
	}
	/* (with k == 1, xmax_word is c[0]'s: an aborted c[0] was dead above) */
	if (k == 1 && xmax_word == 0 &&
		atomic_load(&c[0]->next_rowid) == LS_ROWID_INVALID &&
		ls_cold_can_write(rel))
	{
		ls_hot_version *hv = NULL;
		ls_status	st = LS_NO_SPACE;

		if (!was_cold)
			hv = ls_version_copy_in(rel, c[0], c[0]->len, c[0]->data,
									LS_VH_TIER_OR_NULL);
		/* the row and its RID-map slot need room too: else cold as well */
		if (hv != NULL)
			st = ls_insert_chain_try(dst, rowid, &hv, 1);
		if (st != LS_OK && st != LS_NO_SPACE && st != LS_NO_MEMORY)
			ls_report_status(st, rel, "copy rows into");
		/* (an image takes payload, xmin and cmin: no xmax to clear) */
		if (st != LS_OK)
			ls_cold_insert(rel, dst, rowid, c[0]);
		return;
	}

	/* ls_insert_chain wants oldest first; it frees them if it fails */
	tier = palloc(sizeof(ls_hot_version *) * k);
	PG_TRY();
	{
		for (; made < k; made++)
			tier[made] = ls_version_copy(rel, c[k - 1 - made], c[k - 1 - made]->len,
										 c[k - 1 - made]->data);
	}
	PG_CATCH();
	{
		for (int i = 0; i < made; i++)
			ls_hot_version_free(ls_ctx(), tier[i]);
		PG_RE_THROW();
	}
	PG_END_TRY();
	ls_insert_chain(rel, dst, rowid, tier, k);
	pfree(tier);
}

/*
 * ALTER TABLE ... SET TABLESPACE: copy every row with its rowid and chain
 * (the indexes are not rebuilt), a batch of rows at a time: inside one
 * epoch (and one cold-tree descent) the batch is copied into local memory,
 * outside it the rows are written (ls_copy_row), so that making room in the
 * hot tier (pack) is not held back by our own epoch.
 */
#define LS_COPY_BATCH 64

void
ls_copy_data(Relation rel, const RelFileNode *newrnode)
{
	ls_hot_table *src = ls_table_for(rel);
	ls_hot_table *dst;
	uint64		limit;
	uint32		used;
	uint64		cursor = 0;
	int			chain_cap = 256;
	ls_hot_version **chain;
	MemoryContext batch_cxt;
	MemoryContext old;
	GlobalVisState *vistest = GlobalVisTestFor(rel);

	ls_create_smgr(newrnode, rel->rd_rel->relpersistence);
	ls_storage_create(newrnode, rel->rd_rel->relpersistence, &dst);
	/* the copy goes on filling the last block where the source would */
	ls_hot_table_get_fill(src, &limit, &used);
	ls_hot_table_set_fill(dst, limit, used);

	batch_cxt = AllocSetContextCreate(CurrentMemoryContext, "leanstore copy",
									  ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(batch_cxt);
	for (;;)
	{
		ls_hot_row *rows[LS_COPY_BATCH];
		uint64		rowid[LS_COPY_BATCH];
		bool		was_cold[LS_COPY_BATCH];
		int			first[LS_COPY_BATCH + 1];
		uint32		n;

		CHECK_FOR_INTERRUPTS();
		MemoryContextReset(batch_cxt);
		chain = palloc(sizeof(ls_hot_version *) * chain_cap);
		ls_epoch_enter();
		n = ls_rows_batch(src, &cursor, limit, rows, LS_COPY_BATCH);
		first[0] = 0;
		for (uint32 i = 0; i < n; i++)
		{
			ls_hot_row *row = rows[i];
			int			k = first[i];
			int			hops = 0;

			rowid[i] = row->rowid;
			was_cold[i] = ls_row_is_standin(row);
			for (ls_hot_version *v = ls_hot_row_newest(row); v != NULL;
				 v = ls_chain_next(row, v, &hops))
			{
				if (k == chain_cap)
				{
					chain_cap *= 2;
					chain = repalloc(chain, sizeof(ls_hot_version *) * chain_cap);
				}
				chain[k++] = ls_version_copy_in(rel, v, v->len, v->data, LS_VH_LOCAL);
			}
			first[i + 1] = k;
		}
		ls_epoch_exit();
		if (n == 0)
			break;
		for (uint32 i = 0; i < n; i++)
			ls_copy_row(rel, dst, rowid[i], chain + first[i], first[i + 1] - first[i],
						was_cold[i], vistest);
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(batch_cxt);

	/*
	 * DEAD rowids and holes are not carried over as such, but the rowids
	 * stay and so do the index entries naming them: an empty slot reads as
	 * "gone" just the same (rowids are never reused), yet VACUUM must still
	 * delete those entries before it sets a visibility map bit there (an
	 * index-only scan would return them).  The copy's holes range covers
	 * the source's and every DEAD rowid's block.
	 */
	{
		uint64		lo,
					hi,
					dead;

		if (ls_holes_get(src, &lo, &hi))
			ls_holes_add(dst, lo, hi);
		cursor = 0;
		ls_epoch_enter();
		if (ls_hot_scan_next_dead(src, &cursor, limit, &dead))
		{
			lo = dead;
			hi = dead + 1;
			while (ls_hot_scan_next_dead(src, &cursor, limit, &dead))
				hi = dead + 1;
			ls_epoch_exit();
			ls_holes_add(dst, lo, hi);
		}
		else
			ls_epoch_exit();
		/* a checkpoint during the copy logged only what was there then */
		ls_log_holes(dst);
	}
	RelationDropStorage(rel);
	ls_storage_schedule_drop(rel);
	ls_mark_written();
}

/* ------------------------------------------------------------------------
 * GC of one row
 * ------------------------------------------------------------------------ */

typedef struct LsGcStats
{
	double		live_rows;
	double		recently_dead;
	double		removed_versions;
	double		removed_rows;
	TransactionId oldest_xid;	/* oldest unfrozen xid left behind */
	bool		incomplete;		/* a row could not be processed */
} LsGcStats;

static void
ls_gc_note_xid(LsGcStats *st, TransactionId xid)
{
	if (st != NULL && TransactionIdIsNormal(xid) &&
		TransactionIdPrecedes(xid, st->oldest_xid))
		st->oldest_xid = xid;
}

/*
 * Freeze what every snapshot sees as committed and clear xmax words of
 * aborted writers and finished lockers (CAS: a writer may be replacing
 * them), then note the xids that stay.  No latch needed: only atomic hint
 * and CAS operations.
 */
static void
ls_gc_freeze(ls_hot_row *row, TransactionId freeze_limit, LsGcStats *st)
{
	int			n = 0;

	for (ls_hot_version *v = ls_hot_row_newest(row); v != NULL;
		 v = ls_chain_next(row, v, &n))
	{
		LsVersionInfo info;
		LsXidStatus xs;

		ls_version_info(v, &info);
		xs = ls_xmin_status(v, &info);
		/*
		 * frozen versions are logged and packed as such: not before the
		 * commit is durable (ls_xid_commit_durable; VACUUM FREEZE's limit
		 * is the newest horizon)
		 */
		if (xs == LS_XS_COMMITTED && !(info.xmin_flags & LS_HV_XMIN_FROZEN) &&
			TransactionIdIsNormal(info.xmin) &&
			TransactionIdPrecedes(info.xmin, freeze_limit) &&
			ls_xid_commit_durable(info.xmin))
		{
			atomic_fetch_or(&v->xmin_word, ((uint64) LS_HV_XMIN_FROZEN) << 32);
			info.xmin_flags |= LS_HV_XMIN_FROZEN;
		}
		if (!(info.xmin_flags & LS_HV_XMIN_FROZEN))
			ls_gc_note_xid(st, info.xmin);

		if (info.xmax_raw != 0)
		{
			/*
			 * Settle the xmax word: finished lockers and aborted writers
			 * go, a multixact nobody runs in any more becomes its plain
			 * updater (so no multixact older than the relminmxid we report
			 * stays behind).  CAS: a writer may be replacing the word.
			 */
			uint64		settled = ls_xmax_settle(info.xmax_raw);

			if (settled != info.xmax_raw)
			{
				uint64		expected = info.xmax_raw;

				if (atomic_compare_exchange_strong(&v->xmax_word, &expected, settled))
					info.xmax_raw = settled;
				else
					info.xmax_raw = expected;
			}
			if (ls_hv_xid(info.xmax_raw) != InvalidTransactionId &&
				!(ls_hv_flags(info.xmax_raw) & LS_HV_XMAX_IS_MULTI))
				ls_gc_note_xid(st, ls_hv_xid(info.xmax_raw));
			else if ((ls_hv_flags(info.xmax_raw) & LS_HV_XMAX_IS_MULTI) &&
					 !(ls_hv_flags(info.xmax_raw) & LS_HV_XMAX_LOCK_ONLY))
				ls_gc_note_xid(st, info.xmax);	/* its updater */
		}
	}
}

/*
 * Drop the versions below keep and the aborted versions on top of the chain
 * (caller holds row's latch; the row is not dead).
 */
static void
ls_gc_trim(ls_hot_table *tbl, ls_hot_row *row, ls_hot_version *keep,
		   int aborted_top, LsGcStats *st)
{
	Assert(ls_holds_row_latch());
	if (keep != NULL && ls_hot_version_older(keep) != NULL)
	{
		int			dropped = 0;
		int			hops = 0;

		for (ls_hot_version *o = ls_chain_next(row, keep, &hops); o != NULL;
			 o = ls_chain_next(row, o, &hops))
			dropped++;
		ls_hot_row_truncate(ls_ctx(), tbl, row, keep);
		if (st)
			st->removed_versions += dropped;
	}
	for (int i = 0; i < aborted_top; i++)
	{
		ls_hot_version *top = ls_hot_row_newest(row);

		if (top == NULL || ls_hot_version_older(top) == NULL ||
			!(ls_hv_flags(atomic_load(&top->xmin_word)) & LS_HV_XMIN_ABORTED))
			break;
		ls_hot_row_uninstall_newest(ls_ctx(), tbl, row);
		if (st)
			st->removed_versions += 1;
	}
}

/*
 * GC one row (caller inside an epoch, no latch held).  Returns false when
 * the row changed under us and should be looked at again.
 */
static bool
ls_gc_row(Relation rel, ls_hot_table *tbl, ls_hot_row *row,
		  GlobalVisState *vistest, TransactionId freeze_limit, LsGcStats *st)
{
	ls_hot_version *newest = ls_hot_row_newest(row);
	ls_hot_version *first_valid = NULL;
	ls_hot_version *keep = NULL;
	int			aborted_top = 0;
	int			n = 0;
	bool		dead_row;
	LsVacuumState vs = LS_V_DEAD;
	TransactionId dead_after;

	Assert(ls_in_epoch());
	Assert(!ls_holds_row_latch());
	if (newest == NULL)
		return true;			/* already removed */

	for (ls_hot_version *v = newest; v != NULL; v = ls_chain_next(row, v, &n))
	{
		LsVersionInfo info;
		LsXidStatus xs;

		ls_version_info(v, &info);
		xs = ls_xmin_status(v, &info);
		if (xs == LS_XS_ABORTED)
		{
			if (first_valid == NULL)
				aborted_top++;
			continue;
		}
		if (first_valid == NULL)
			first_valid = v;
		if (xs == LS_XS_COMMITTED &&
			((info.xmin_flags & LS_HV_XMIN_FROZEN) ||
			 GlobalVisTestIsRemovableXid(vistest, info.xmin)))
		{
			keep = v;
			break;
		}
	}
	if (first_valid != NULL)
	{
		vs = ls_version_vacuum_state(first_valid, vistest, &dead_after);

		/*
		 * Its inserter aborted since the walk judged it (see
		 * ls_row_vacuum_state): the row is not dead, its current version
		 * is further down.  Look again.
		 */
		if (vs == LS_V_DEAD && ls_version_xmin_now_aborted(first_valid))
			return false;
	}
	dead_row = (first_valid == NULL || vs == LS_V_DEAD);

	if (dead_row || aborted_top > 0 ||
		(keep != NULL && ls_hot_version_older(keep) != NULL))
	{
		/* tree_lock before the row latch: ls_cold_hold_trees' lock order */
		bool		tree_held = dead_row && ls_cold_image_guard(tbl, row);
		bool		again = false;

		ls_row_lock(row);
		if (ls_hot_row_is_removed(row) || ls_hot_row_newest(row) != newest)
			again = true;
		else if (dead_row)
		{
			/* a migrated row's cold image must not outlive it */
			if (!ls_cold_forget_image(tbl, row))
				again = true;
			else
			{
				if (st)
				{
					st->removed_rows += 1;
					st->removed_versions += n;
				}
				ls_row_forget_latch();
				ls_hot_row_remove(ls_ctx(), tbl, row, true);
				ls_cold_image_unguard(tree_held);
				return true;
			}
		}
		else
			ls_gc_trim(tbl, row, keep, aborted_top, st);
		ls_row_unlock(row);
		ls_cold_image_unguard(tree_held);
		if (again)
			return false;
	}

	if (st != NULL)
	{
		if (vs == LS_V_RECENTLY_DEAD)
			st->recently_dead += 1;
		else if (vs != LS_V_DEAD)
			st->live_rows += 1;
	}
	if (TransactionIdIsValid(freeze_limit))
		ls_gc_freeze(row, freeze_limit, st);
	return true;
}

/*
 * Pack's helper for a row that may not go cold: drop what no snapshot sees
 * (old versions; the whole row when its deleter is visible to all, which
 * leaves a DEAD rowid for VACUUM's index cleanup).  Caller inside an epoch,
 * no latch held.
 */
void
ls_collect_row(ls_hot_table *tbl, ls_hot_row *row, GlobalVisState *vistest)
{
	(void) ls_gc_row(NULL, tbl, row, vistest, InvalidTransactionId, NULL);
}

void
ls_prune_row(Relation rel, ls_hot_table *tbl, ls_hot_row *row,
			 GlobalVisState *vistest)
{
	/* cheap test first: a chain of one needs nothing */
	ls_hot_version *newest = ls_hot_row_newest(row);

	if (newest == NULL || ls_hot_version_older(newest) == NULL)
		return;
	(void) ls_gc_row(rel, tbl, row, vistest, InvalidTransactionId, NULL);
}

/* ------------------------------------------------------------------------
 * VACUUM
 * ------------------------------------------------------------------------ */

typedef struct LsDeadSet
{
	uint64	   *rowids;
	int64		n;
	int64		alloc;			/* entries allocated */
	int64		cap;			/* memory limit in entries */
	int64		passes;			/* index vacuum passes so far */
	/* the table's holes range at VACUUM's start (cold.c "Holes") */
	ls_hot_table *tbl;
	uint64		holes_lo;
	uint64		holes_hi;		/* == holes_lo: none */
} LsDeadSet;

static bool
ls_dead_tid_reaped(ItemPointer itemptr, void *state)
{
	LsDeadSet  *ds = (LsDeadSet *) state;
	uint64		rowid = ls_tid_to_rowid(itemptr);
	int64		lo = 0,
				hi = ds->n - 1;

	while (lo <= hi)
	{
		int64		mid = lo + (hi - lo) / 2;

		if (ds->rowids[mid] == rowid)
			return true;
		if (ds->rowids[mid] < rowid)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	/* an entry naming a hole: its row never committed or went long ago */
	return rowid != LS_ROWID_INVALID && rowid >= ds->holes_lo &&
		rowid < ds->holes_hi && !ls_rowid_holds_row(ds->tbl, rowid);
}

/* Delete index entries of the collected DEAD rowids, then forget them. */
static void
ls_vacuum_indexes(Relation rel, ls_hot_table *tbl, Relation *Irel, int nindexes,
				  IndexBulkDeleteResult **istats, LsDeadSet *ds, double live,
				  int elevel, BufferAccessStrategy bstrategy)
{
	BlockNumber vacuumed = 0;

	pgstat_progress_update_param(PROGRESS_VACUUM_NUM_DEAD_TUPLES, ds->n);
	pgstat_progress_update_param(PROGRESS_VACUUM_PHASE, PROGRESS_VACUUM_PHASE_VACUUM_INDEX);
	ls_test_pause("vacuum-indexes");
	for (int i = 0; i < nindexes; i++)
	{
		IndexVacuumInfo ivinfo;

		memset(&ivinfo, 0, sizeof(ivinfo));
		ivinfo.index = Irel[i];
		ivinfo.analyze_only = false;
		ivinfo.report_progress = false;
		ivinfo.estimated_count = true;
		ivinfo.message_level = elevel;
		ivinfo.num_heap_tuples = live;
		ivinfo.strategy = bstrategy;
		istats[i] = index_bulk_delete(&ivinfo, istats[i], ls_dead_tid_reaped, ds);
	}
	/* the hash cache is an index too */
	ls_hashcache_forget_rowids(rel, ds->rowids, ds->n);
	/* forget the rowids in bounded epochs (a cancel leaves them DEAD) */
	pgstat_progress_update_param(PROGRESS_VACUUM_PHASE, PROGRESS_VACUUM_PHASE_VACUUM_HEAP);
	for (int64 i = 0; i < ds->n;)
	{
		int64		end = Min(ds->n, i + LS_BATCH_ROWS);

		CHECK_FOR_INTERRUPTS();
		ls_epoch_enter();
		ls_test_cancel("vacuum-forget");	/* served after this epoch */
		for (; i < end; i++)
			ls_hot_rowid_forget(ls_ctx(), tbl, ds->rowids[i]);
		ls_epoch_exit();
		ls_progress_rowid(PROGRESS_VACUUM_HEAP_BLKS_VACUUMED,
						  ds->rowids[end - 1] + LS_ROWS_PER_BLOCK, &vacuumed);
	}
	pgstat_progress_update_param(PROGRESS_VACUUM_NUM_INDEX_VACUUMS, ++ds->passes);
	pgstat_progress_update_param(PROGRESS_VACUUM_NUM_DEAD_TUPLES, 0);
	ds->n = 0;
}


/* Rows of both tiers VACUUM's first pass takes per epoch. */
#define LS_VACUUM_BATCH 64
/* heap's SKIP_PAGES_THRESHOLD: shorter runs of all-visible blocks are read */
#define LS_SKIP_BLOCKS_THRESHOLD 32

/*
 * VACUUM, for a bulk-loaded cold row (xmin not frozen): clog decides.  As
 * heap does, a committed row is frozen only once its xmin precedes
 * FreezeLimit (freezing rewrites and logs the image: doing it for every
 * freshly loaded row made VACUUM after a load ten times slower than
 * heap's); until then relfrozenxid stays at or before its xmin.  Aborted
 * rows leave, in-progress ones stay (ls_cold_settle).  Outside epochs.
 * Regress ls_freeze checks both sides of the rule.
 */
static void
ls_vacuum_cold_row(ls_hot_table *tbl, uint64 rowid, TransactionId xmin,
				   bool has_xmax, TransactionId oldest_xmin,
				   TransactionId freeze_limit, LsGcStats *st)
{
	TransactionId kept;

	if (!has_xmax && TransactionIdIsNormal(xmin) &&
		TransactionIdPrecedes(xmin, oldest_xmin) &&
		!TransactionIdPrecedes(xmin, freeze_limit) &&
		TransactionIdDidCommit(xmin))
	{
		st->live_rows += 1;
		if (TransactionIdPrecedes(xmin, st->oldest_xid))
			st->oldest_xid = xmin;
		return;
	}
	switch (ls_cold_settle(tbl, rowid, oldest_xmin, freeze_limit, &kept))
	{
		case LS_V_DEAD:
			st->removed_rows += 1;
			break;
		case LS_V_LIVE:
			st->live_rows += 1;
			break;
		case LS_V_RECENTLY_DEAD:
			st->recently_dead += 1;
			break;
		default:
			break;
	}
	if (TransactionIdIsNormal(kept) && TransactionIdPrecedes(kept, st->oldest_xid))
		st->oldest_xid = kept;
}

void
ls_vacuum_rel(Relation rel, struct VacuumParams *params,
			  BufferAccessStrategy bstrategy)
{
	ls_hot_table *tbl = ls_table_for_or_null(rel);
	TransactionId OldestXmin;
	MultiXactId OldestMxact;
	TransactionId FreezeLimit;
	MultiXactId MultiXactCutoff;
	GlobalVisState *vistest;
	LsGcStats	st;
	uint64		limit;
	uint64		cursor = 0;
	int			nindexes = 0;
	Relation   *Irel = NULL;
	IndexBulkDeleteResult **istats = NULL;
	LsDeadSet	ds;
	bool		do_index = params->index_cleanup != VACOPTVALUE_DISABLED;
	int			elevel = (params->options & VACOPT_VERBOSE) ? INFO : DEBUG2;
	int			mem_kb = IsAutoVacuumWorkerProcess() && autovacuum_work_mem != -1 ?
		autovacuum_work_mem : maintenance_work_mem;
	double		dead_rowids = 0;
	bool		frozenxid_updated = false;
	bool		minmulti_updated = false;
	uint64		dead;
	BlockNumber relpages;
	BlockNumber relallvisible;
	BlockNumber nallvis;
	BlockNumber scanned = 0;
	bool		aggressive;
	bool		skip_allvis;
	BlockNumber skipped = 0;	/* all-visible blocks pass 1 did not read */
	BlockNumber scan_until = 0; /* a short all-visible run read anyway */
	Buffer		vmbuf = InvalidBuffer;

	/* lost in a restart: nothing to vacuum; a database-wide VACUUM goes on */
	if (tbl == NULL)
	{
		(void) ls_ctx();
		ls_warn_lost(rel);
		return;
	}

	aggressive = vacuum_set_xid_limits(rel, params->freeze_min_age, params->freeze_table_age,
									   params->multixact_freeze_min_age,
									   params->multixact_freeze_table_age,
									   &OldestXmin, &OldestMxact, &FreezeLimit,
									   &MultiXactCutoff);
	/* as heap: all-visible blocks are skipped unless every xid must go */
	skip_allvis = !aggressive && !(params->options & VACOPT_DISABLE_PAGE_SKIPPING);
	vistest = GlobalVisTestFor(rel);

	memset(&st, 0, sizeof(st));
	st.oldest_xid = OldestXmin;
	limit = ls_hot_table_rowid_limit(tbl);
	ds.cap = Max((int64) mem_kb * 1024 / (int64) sizeof(uint64), 1024);
	ds.passes = 0;
	ds.tbl = tbl;
	if (!ls_holes_get(tbl, &ds.holes_lo, &ds.holes_hi))
		ds.holes_lo = ds.holes_hi = 0;

	/* pg_stat_progress_vacuum, as heap reports it (in virtual blocks) */
	pgstat_progress_start_command(PROGRESS_COMMAND_VACUUM, RelationGetRelid(rel));
	{
		const int	params[] = {PROGRESS_VACUUM_PHASE,
			PROGRESS_VACUUM_TOTAL_HEAP_BLKS, PROGRESS_VACUUM_MAX_DEAD_TUPLES};
		const int64 vals[] = {PROGRESS_VACUUM_PHASE_SCAN_HEAP,
			ls_blocks_for_limit(limit), ds.cap};

		pgstat_progress_update_multi_param(3, params, vals);
	}

	/*
	 * pass 1: GC every row of both tiers, a batch at a time (one epoch and
	 * one cold-tree descent per batch, not per row).  A block whose
	 * visibility map bit is set is skipped, as heap skips all-visible pages:
	 * no write touched it since the bit was set (every write clears it
	 * first), so its rows are live, their older versions were removed
	 * before the bit went on, and it holds no DEAD rowid.  What a skip
	 * leaves undone is freezing: relfrozenxid then stays (below), as heap
	 * keeps it when it skips a page that is not all-frozen (we set no
	 * all-frozen bits).  As heap, only runs of at least
	 * LS_SKIP_BLOCKS_THRESHOLD blocks are skipped: a small table is read
	 * whole, and its relfrozenxid advances.
	 */
	for (;;)
	{
		ls_hot_row *batch[LS_VACUUM_BATCH];
		uint64		cold_rowid[LS_VACUUM_BATCH];
		TransactionId cold_xmin[LS_VACUUM_BATCH];
		bool		cold_xmax[LS_VACUUM_BATCH];
		int			ncold = 0;
		uint32		n;
		uint64		last = 0;
		uint64		end = limit;

		CHECK_FOR_INTERRUPTS();
		if (skip_allvis)
		{
			BlockNumber blk = (BlockNumber) (cursor / LS_ROWS_PER_BLOCK);

			if (blk >= scan_until)
			{
				BlockNumber run = 0;

				/* the last block is always read, as heap reads its last page */
				while ((uint64) (blk + run + 1) * LS_ROWS_PER_BLOCK < limit &&
					   (visibilitymap_get_status(rel, blk + run, &vmbuf) &
						VISIBILITYMAP_ALL_VISIBLE))
					run++;
				if (run >= LS_SKIP_BLOCKS_THRESHOLD)
				{
					skipped += run;
					blk += run;
					cursor = (uint64) blk * LS_ROWS_PER_BLOCK;
				}
				else
					scan_until = blk + run; /* a short run: read it */
			}
			/* one block at a time: the next one's bit is looked at first */
			end = Min(limit, (uint64) (blk + 1) * LS_ROWS_PER_BLOCK);
		}
		ls_epoch_enter();
		ls_cold_read_once = true;	/* heap's VACUUM reads through a ring */
		n = ls_rows_batch(tbl, &cursor, end, batch, LS_VACUUM_BATCH);
		ls_cold_read_once = false;
		for (uint32 i = 0; i < n; i++)
		{
			ls_hot_row *row = batch[i];
			int			tries = 0;

			last = row->rowid;
			if (ls_row_is_standin(row))
			{
				ls_hot_version *v = ls_hot_row_newest(row);
				uint64		w = atomic_load(&v->xmin_word);
				/* an xmax, or a killed speculative insert: VACUUM judges it */
				bool		has_xmax = atomic_load(&v->xmax_word) != 0 ||
					(ls_hv_flags(w) & LS_HV_XMIN_ABORTED) != 0;

				if ((ls_hv_flags(w) & LS_HV_XMIN_FROZEN) && !has_xmax)
					st.live_rows += 1;
				else
				{
					/*
					 * a bulk-loaded row or one deleted in the cold tier:
					 * clog decides, after the epoch
					 */
					cold_rowid[ncold] = row->rowid;
					cold_xmin[ncold] = (ls_hv_flags(w) & LS_HV_XMIN_FROZEN) ?
						FrozenTransactionId : ls_hv_xid(w);
					cold_xmax[ncold++] = has_xmax;
				}
				continue;
			}
			while (!ls_gc_row(rel, tbl, row, vistest, OldestXmin, &st))
			{
				if (atomic_load(&row->evicted) != 0)
				{
					/* packed meanwhile: live, and now cold */
					st.live_rows += 1;
					break;
				}
				if (++tries >= 100)
				{
					st.incomplete = true;
					break;
				}
			}
		}
		ls_epoch_exit();
		for (int i = 0; i < ncold; i++)
			ls_vacuum_cold_row(tbl, cold_rowid[i], cold_xmin[i], cold_xmax[i],
							   OldestXmin, FreezeLimit, &st);
		if (n == 0)
		{
			if (end >= limit)
				break;
			cursor = end;		/* an empty block: on to the next */
			continue;
		}
		ls_progress_rowid(PROGRESS_VACUUM_HEAP_BLKS_SCANNED, last, &scanned);
	}
	if (BufferIsValid(vmbuf))
		ReleaseBuffer(vmbuf);
	pgstat_progress_update_param(PROGRESS_VACUUM_HEAP_BLKS_SCANNED,
								 ls_blocks_for_limit(limit));

	/* pass 2: index entries of DEAD rowids */
	ds.n = 0;
	ds.alloc = Min(ds.cap, (int64) 4096);
	ds.rowids = palloc(sizeof(uint64) * ds.alloc);
	if (do_index)
	{
		vac_open_indexes(rel, RowExclusiveLock, &nindexes, &Irel);

		/*
		 * Index cleanup runs in this process (PARALLEL n is an upper bound);
		 * as heap, say so when the user asked for workers that a temporary
		 * table could never have.
		 */
		if (nindexes > 0 && params->nworkers > 0 && RelationUsesLocalBuffers(rel))
			ereport(WARNING,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("disabling parallel option of vacuum on \"%s\" --- cannot vacuum temporary tables in parallel",
							RelationGetRelationName(rel))));
		istats = palloc0(sizeof(IndexBulkDeleteResult *) * Max(nindexes, 1));
		cursor = 0;
		for (;;)
		{
			bool		more;

			ls_epoch_enter();
			more = ls_hot_scan_next_dead(tbl, &cursor, limit, &dead);
			ls_epoch_exit();
			if (!more)
				break;
			if (ds.n == ds.cap)
				ls_vacuum_indexes(rel, tbl, Irel, nindexes, istats, &ds,
								  st.live_rows, elevel, bstrategy);
			if (ds.n == ds.alloc)
			{
				ds.alloc = Min(ds.cap, ds.alloc * 2);
				ds.rowids = repalloc_huge(ds.rowids, sizeof(uint64) * ds.alloc);
			}
			ds.rowids[ds.n++] = dead;
			dead_rowids += 1;
			if (ds.n % 1024 == 0)
				pgstat_progress_update_param(PROGRESS_VACUUM_NUM_DEAD_TUPLES, ds.n);
		}
		/* holes need the index pass even without a DEAD rowid */
		if (ds.n > 0 || (ds.holes_hi > ds.holes_lo && ds.passes == 0))
			ls_vacuum_indexes(rel, tbl, Irel, nindexes, istats, &ds,
							  st.live_rows, elevel, bstrategy);
		/* every index is rid of entries naming holes: the range goes */
		if (ds.holes_hi > ds.holes_lo)
			ls_holes_clear(tbl);

		pgstat_progress_update_param(PROGRESS_VACUUM_PHASE,
									 PROGRESS_VACUUM_PHASE_INDEX_CLEANUP);
		for (int i = 0; i < nindexes; i++)
		{
			IndexVacuumInfo ivinfo;

			memset(&ivinfo, 0, sizeof(ivinfo));
			ivinfo.index = Irel[i];
			ivinfo.estimated_count = false;
			ivinfo.message_level = elevel;
			ivinfo.num_heap_tuples = st.live_rows;
			ivinfo.strategy = bstrategy;
			istats[i] = index_vacuum_cleanup(&ivinfo, istats[i]);
			if (istats[i] != NULL && !istats[i]->estimated_count)
				vac_update_relstats(Irel[i], istats[i]->num_pages,
									istats[i]->num_index_tuples, 0, false,
									InvalidTransactionId, InvalidMultiXactId,
									NULL, NULL, false);
			if (istats[i] != NULL)
				pfree(istats[i]);
		}
		vac_close_indexes(nindexes, Irel, NoLock);
	}
	pfree(ds.rowids);

	/* pass 3: visibility map bits of blocks every snapshot sees entirely */
	pgstat_progress_update_param(PROGRESS_VACUUM_PHASE,
								 PROGRESS_VACUUM_PHASE_FINAL_CLEANUP);
	nallvis = ls_vm_set_all_visible(rel, tbl, OldestXmin);

	relpages = ls_table_nblocks(tbl);
	/* blocks past the last row (never used) may be marked too */
	relallvisible = Min(nallvis, relpages);
	/* rows of skipped blocks: estimated from the old density, as heap does */
	if (skipped > 0)
	{
		BlockNumber nscanned = relpages > skipped ? relpages - skipped : 0;
		double		est = vac_estimate_reltuples(rel, relpages, nscanned, st.live_rows);

		/* no old count to go by (never vacuumed): scale what was read */
		if (est < 0)
			est = nscanned > 0 ? floor(st.live_rows / nscanned * relpages + 0.5) : 0;
		st.live_rows = est;
	}
	vac_update_relstats(rel, relpages, st.live_rows, relallvisible,
						nindexes > 0 || RelationGetForm(rel)->relhasindex,
						st.incomplete || skipped > 0 ? InvalidTransactionId :
						ls_log_hold_frozenxid(st.oldest_xid),
						st.incomplete || skipped > 0 ? InvalidMultiXactId : OldestMxact,
						&frozenxid_updated, &minmulti_updated, false);
	pgstat_report_vacuum(RelationGetRelid(rel), rel->rd_rel->relisshared,
						 (PgStat_Counter) st.live_rows,
						 (PgStat_Counter) st.recently_dead);
	ls_hot_reclaim(ls_ctx());
	pgstat_progress_end_command();

	ereport(elevel,
			(errmsg("vacuumed leanstore table \"%s\": %.0f live rows, %.0f recently dead, %.0f versions and %.0f rows removed, %.0f dead rowids cleaned from indexes, %u of %u blocks all-visible (%u skipped)%s",
					RelationGetRelationName(rel), st.live_rows, st.recently_dead,
					st.removed_versions, st.removed_rows, dead_rowids,
					nallvis, relpages, skipped,
					frozenxid_updated ? ", relfrozenxid advanced" : "")));
}

/* ------------------------------------------------------------------------
 * CLUSTER / VACUUM FULL (and rewrites that go through them)
 * ------------------------------------------------------------------------ */

/* Re-form tup with NewTable's descriptor (dropped columns become NULL). */
static HeapTuple
ls_reform_tuple(HeapTuple tup, TupleDesc olddesc, TupleDesc newdesc,
				Datum *values, bool *isnull)
{
	heap_deform_tuple(tup, olddesc, values, isnull);
	for (int i = 0; i < newdesc->natts; i++)
		if (TupleDescAttr(newdesc, i)->attisdropped)
			isnull[i] = true;
	return heap_form_tuple(newdesc, values, isnull);
}

/*
 * CLUSTER / VACUUM FULL copy into NewTable's fresh storage.  The rows get new
 * rowids 0, 1, 2, ... in the order PostgreSQL asks for, as heap's rewrite
 * does: the order of OldIndex (an index scan over it when !use_sort), or a
 * tuplesort by OldIndex's keys (use_sort), or rowid order (no index, VACUUM
 * FULL).  Each row keeps its chain of versions (an in-place update never
 * changes an indexed column, so every version of a chain sorts alike).
 * Versions are counted as heap counts tuples: dead ones (aborted inserter,
 * or deleted/updated by a transaction every snapshot sees as committed) in
 * *tups_vacuumed, the others in *num_tuples, those deleted by a transaction
 * some snapshot may not see yet also in *tups_recently_dead.  Forward links
 * (next_rowid, heap's t_ctid) of recently dead moved versions are renamed
 * to the new rowids at the end.
 *
 * Rows in rowid order are read a batch at a time (one epoch and one
 * cold-tree descent per batch).  A bit per old rowid says which rows are
 * done; the (old, new) rowid pairs are kept in an array, in copy order,
 * which is sorted (when not sorted already) only if some link needs it.
 */
#define LS_CLUSTER_BATCH 64

typedef struct LsClusterPair
{
	uint64		old_rowid;
	uint64		new_rowid;
} LsClusterPair;

typedef struct LsClusterLink
{
	ls_hot_version *v;			/* a version in the new table */
	uint64		old_target;		/* its next_rowid, an old rowid */
} LsClusterLink;

typedef struct LsClusterState
{
	Relation	OldTable;
	Relation	NewTable;
	ls_hot_table *src;
	ls_hot_table *dst;
	TupleDesc	olddesc;
	TupleDesc	newdesc;
	TransactionId OldestXmin;
	TransactionId xid_cutoff;
	Datum	   *values;
	bool	   *isnull;
	int			cap;
	int			ntups;			/* versions taken, in tups[] / infos[] */
	HeapTuple  *tups;
	LsVersionInfo *infos;
	ls_hot_version **chain;
	MemoryContext tmpcxt;		/* per row or batch */
	MemoryContext outer;		/* the caller's */
	uint64	   *done;			/* a bit per old rowid below limit */
	LsClusterPair *pairs;		/* old -> new rowid of every row written */
	int64		npairs;
	int64		pairs_cap;
	bool		pairs_sorted;	/* by old_rowid */
	LsClusterLink *links;
	int			nlinks;
	int			links_cap;
	double		num_tuples;
	double		tups_vacuumed;
	double		tups_recently_dead;
	int64		written;		/* versions written (progress) */
} LsClusterState;

/* Marks old rowid done; false when it was already. */
static bool
ls_cluster_claim(LsClusterState *cs, uint64 rowid)
{
	uint64		bit = UINT64CONST(1) << (rowid % 64);

	if (cs->done[rowid / 64] & bit)
		return false;
	cs->done[rowid / 64] |= bit;
	return true;
}

/*
 * Inside an epoch: copy out the versions of row some snapshot may still
 * need, newest first, to tups[] / infos[] from ntups on (in tmpcxt, the
 * current context).  Returns how many.
 */
static int
ls_cluster_take(LsClusterState *cs, ls_hot_row *row)
{
	int			walked = 0;
	int			n = 0;
	bool		dead_below = false;

	for (ls_hot_version *v = ls_hot_row_newest(row); v != NULL;
		 v = ls_chain_next(row, v, &walked))
	{
		LsVersionInfo info;
		LsXidStatus xs;
		Size		size;
		int			k;

		if (dead_below)
		{
			/* below a version every snapshot sees: dead, as in heap */
			cs->tups_vacuumed += 1;
			continue;
		}
		ls_version_info(v, &info);
		xs = ls_xmin_status(v, &info);
		if (xs == LS_XS_ABORTED)
		{
			cs->tups_vacuumed += 1;
			continue;
		}
		if (!ls_xmax_is_lock_only(&info) && info.xmax != InvalidTransactionId &&
			ls_xmax_status(v, &info) == LS_XS_COMMITTED)
		{
			if (TransactionIdPrecedes(info.xmax, cs->OldestXmin))
			{
				/* this and every older version are dead */
				cs->tups_vacuumed += 1;
				dead_below = true;
				continue;
			}
			cs->tups_recently_dead += 1;
		}
		cs->num_tuples += 1;
		if (cs->ntups == cs->cap)
		{
			/* (repalloc keeps the arrays in their own context) */
			cs->cap *= 2;
			cs->tups = repalloc(cs->tups, sizeof(HeapTuple) * cs->cap);
			cs->infos = repalloc(cs->infos, sizeof(LsVersionInfo) * cs->cap);
			cs->chain = repalloc(cs->chain, sizeof(ls_hot_version *) * cs->cap);
		}
		k = cs->ntups++;
		size = ls_heaptuple_size(v, cs->OldTable);
		cs->tups[k] = ls_version_to_heaptuple(v, cs->OldTable, row->rowid,
											  palloc(size), size);
		cs->infos[k] = info;
		n++;
		if (xs == LS_XS_COMMITTED && TransactionIdPrecedes(info.xmin, cs->OldestXmin))
			dead_below = true;	/* older versions are invisible to everyone */
	}
	return n;
}

/*
 * Outside epochs: write the n versions taken at tups[first] (newest first)
 * as the next row of the new table.  Current context: tmpcxt.
 */
static void
ls_cluster_put(LsClusterState *cs, uint64 rowid, int first, int n)
{
	MemoryContext tmp = CurrentMemoryContext;
	uint64		newid;
	uint32		need = 0;
	uint32		save = 0;
	uint32		vneed,
				vwant;

	if (n == 0)
		return;
	cs->written += n;
	pgstat_progress_update_param(PROGRESS_CLUSTER_HEAP_TUPLES_WRITTEN, cs->written);
	/* build new versions oldest first */
	for (int i = first + n - 1, j = 0; i >= first; i--, j++)
	{
		HeapTuple	t = ls_reform_tuple(cs->tups[i], cs->olddesc, cs->newdesc,
										cs->values, cs->isnull);
		HeapTuple	stored = t;
		LsVersionInfo *info = &cs->infos[i];
		ls_hot_version *v;
		uint32		xmin_flags = info->xmin_flags;
		uint64		xmax_word = ls_xmax_settle(info->xmax_raw);

		if (HeapTupleHasExternal(t) || t->t_len > TOAST_TUPLE_THRESHOLD)
			stored = heap_toast_insert_or_update(cs->NewTable, t, NULL, 0);
		MemoryContextSwitchTo(cs->outer);
		v = ls_version_from_heaptuple(cs->NewTable, stored);
		MemoryContextSwitchTo(tmp);
		/* heap's rewrite writes each kept version as a tuple of its own */
		ls_heap_space(cs->NewTable, stored->t_len, true, &vneed, &vwant);
		need += vneed;
		save = vwant - vneed;

		if ((xmin_flags & LS_HV_XMIN_COMMITTED) && TransactionIdIsNormal(info->xmin) &&
			TransactionIdPrecedes(info->xmin, cs->xid_cutoff))
			xmin_flags |= LS_HV_XMIN_FROZEN;
		atomic_store(&v->xmin_word, ls_hv_word(info->xmin, xmin_flags));
		atomic_store(&v->xmax_word, xmax_word);
		v->cmin = info->cmin;
		atomic_store(&v->cmax, info->cmax);
		atomic_store(&v->next_rowid, LS_ROWID_INVALID);
		if (info->next_rowid != LS_ROWID_INVALID &&
			(ls_hv_flags(xmax_word) & LS_HV_XMAX_MOVED))
		{
			/* renamed once every row has its new rowid */
			if (cs->nlinks == cs->links_cap)
			{
				cs->links_cap *= 2;
				cs->links = repalloc(cs->links, sizeof(LsClusterLink) * cs->links_cap);
			}
			cs->links[cs->nlinks].v = v;
			cs->links[cs->nlinks].old_target = info->next_rowid;
			cs->nlinks++;
		}
		cs->chain[j] = v;
	}

	/* the new block fills as rewriteheap.c fills its pages */
	newid = ls_hot_table_reserve_rowid(cs->dst, LS_ROWS_PER_BLOCK, LS_BLOCK_CAPACITY,
									   need, need + save);
	if (newid == LS_ROWID_INVALID)
	{
		for (int i = 0; i < n; i++)
			ls_hot_version_free(ls_ctx(), cs->chain[i]);
		ls_report_no_rowids(cs->NewTable);
	}
	if (cs->npairs == cs->pairs_cap)
	{
		cs->pairs_cap *= 2;
		cs->pairs = repalloc_huge(cs->pairs, sizeof(LsClusterPair) * cs->pairs_cap);
	}
	if (cs->npairs > 0 && cs->pairs[cs->npairs - 1].old_rowid > rowid)
		cs->pairs_sorted = false;
	cs->pairs[cs->npairs].old_rowid = rowid;
	cs->pairs[cs->npairs].new_rowid = newid;
	cs->npairs++;

	/*
	 * A row of one plain version (no xmax, no link) goes straight to the
	 * cold tree once the copy is large, as bulk loads do: a big rewrite
	 * would otherwise fill the hot tier for pack to empty again.
	 */
	if (n == 1 && atomic_load(&cs->chain[0]->xmax_word) == 0 &&
		ls_bulk_cold(cs->NewTable))
	{
		ls_cold_insert(cs->NewTable, cs->dst, newid, cs->chain[0]);
		ls_version_discard(cs->chain[0]);
	}
	else
		ls_insert_chain(cs->NewTable, cs->dst, newid, cs->chain, n);
}

static int
ls_cluster_pair_cmp(const void *a, const void *b)
{
	uint64		x = ((const LsClusterPair *) a)->old_rowid;
	uint64		y = ((const LsClusterPair *) b)->old_rowid;

	return x < y ? -1 : x > y ? 1 : 0;
}

/* The new rowid of old rowid (LS_ROWID_INVALID: nothing was copied). */
static uint64
ls_cluster_new_rowid(LsClusterState *cs, uint64 rowid)
{
	LsClusterPair key;
	LsClusterPair *p;

	if (!cs->pairs_sorted)
	{
		qsort(cs->pairs, cs->npairs, sizeof(LsClusterPair), ls_cluster_pair_cmp);
		cs->pairs_sorted = true;
	}
	key.old_rowid = rowid;
	p = bsearch(&key, cs->pairs, cs->npairs, sizeof(LsClusterPair), ls_cluster_pair_cmp);
	return p != NULL ? p->new_rowid : LS_ROWID_INVALID;
}

/*
 * Copy the rows at old rowids ids[0..n-1] in this order (each once; rows
 * already done are skipped).  When the rowids lie close together (an index
 * in rowid order, the usual case), they are read with ls_rows_batch over
 * their span: one cold-tree descent per batch instead of one per row.
 */
static void
ls_cluster_copy_rows(LsClusterState *cs, const uint64 *ids, int n)
{
	LsClusterPair want[LS_CLUSTER_BATCH];	/* (old rowid, position) */
	int			first[LS_CLUSTER_BATCH];
	int			ntaken[LS_CLUSTER_BATCH];
	int			m = 0;
	MemoryContext old;

	Assert(n <= LS_CLUSTER_BATCH);
	for (int i = 0; i < n; i++)
	{
		ntaken[i] = -1;			/* not to copy */
		if (ls_cluster_claim(cs, ids[i]))
		{
			ntaken[i] = 0;
			want[m].old_rowid = ids[i];
			want[m].new_rowid = i;
			m++;
		}
	}
	if (m == 0)
		return;
	CHECK_FOR_INTERRUPTS();
	MemoryContextReset(cs->tmpcxt);
	old = MemoryContextSwitchTo(cs->tmpcxt);
	cs->ntups = 0;
	qsort(want, m, sizeof(LsClusterPair), ls_cluster_pair_cmp);
	ls_epoch_enter();
	if (want[m - 1].old_rowid - want[0].old_rowid < (uint64) 4 * LS_CLUSTER_BATCH)
	{
		uint64		cursor = want[0].old_rowid;
		uint64		end = want[m - 1].old_rowid + 1;
		int			k = 0;

		while (k < m)
		{
			ls_hot_row *rows[LS_CLUSTER_BATCH];
			uint32		got = ls_rows_batch(cs->src, &cursor, end, rows, LS_CLUSTER_BATCH);

			if (got == 0)
				break;
			for (uint32 r = 0; r < got && k < m; r++)
			{
				while (k < m && want[k].old_rowid < rows[r]->rowid)
					k++;		/* no such row */
				if (k < m && want[k].old_rowid == rows[r]->rowid)
				{
					int			pos = (int) want[k].new_rowid;

					first[pos] = cs->ntups;
					ntaken[pos] = ls_cluster_take(cs, rows[r]);
					k++;
				}
			}
		}
	}
	else
	{
		for (int k = 0; k < m; k++)
		{
			int			pos = (int) want[k].new_rowid;
			ls_hot_row *row = ls_row_get(cs->src, want[k].old_rowid);

			first[pos] = cs->ntups;
			if (row != NULL)
				ntaken[pos] = ls_cluster_take(cs, row);
		}
	}
	ls_epoch_exit();
	for (int i = 0; i < n; i++)
		if (ntaken[i] >= 0)
			ls_cluster_put(cs, ids[i], first[i], ntaken[i]);
	MemoryContextSwitchTo(old);
}

void
ls_copy_for_cluster(Relation OldTable, Relation NewTable, Relation OldIndex,
					bool use_sort, TransactionId OldestXmin,
					TransactionId *xid_cutoff, MultiXactId *multi_cutoff,
					double *num_tuples, double *tups_vacuumed,
					double *tups_recently_dead)
{
	LsClusterState cs;
	uint64		limit;
	uint64		cursor;
	int			natts;
	int64		scanned_rows = 0;
	BlockNumber scanned_blocks = 0;

	memset(&cs, 0, sizeof(cs));
	cs.OldTable = OldTable;
	cs.NewTable = NewTable;
	cs.src = ls_table_for(OldTable);
	cs.dst = ls_table_for(NewTable);
	cs.olddesc = RelationGetDescr(OldTable);
	cs.newdesc = RelationGetDescr(NewTable);
	cs.OldestXmin = OldestXmin;
	/* relfrozenxid: not past what replay of the log may ask clog about */
	*xid_cutoff = ls_log_hold_frozenxid(*xid_cutoff);
	cs.xid_cutoff = *xid_cutoff;
	natts = Max(cs.olddesc->natts, cs.newdesc->natts);
	cs.values = palloc(sizeof(Datum) * Max(natts, 1));
	cs.isnull = palloc(sizeof(bool) * Max(natts, 1));
	cs.cap = 16;
	cs.tups = palloc(sizeof(HeapTuple) * cs.cap);
	cs.infos = palloc(sizeof(LsVersionInfo) * cs.cap);
	cs.chain = palloc(sizeof(ls_hot_version *) * cs.cap);
	cs.links_cap = 16;
	cs.links = palloc(sizeof(LsClusterLink) * cs.links_cap);
	cs.outer = CurrentMemoryContext;
	cs.tmpcxt = AllocSetContextCreate(CurrentMemoryContext, "leanstore cluster",
									  ALLOCSET_DEFAULT_SIZES);

	limit = ls_hot_table_rowid_limit(cs.src);
	cs.done = palloc_extended(sizeof(uint64) * (limit / 64 + 1),
							  MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	cs.pairs_cap = 1024;
	cs.pairs = palloc(sizeof(LsClusterPair) * cs.pairs_cap);
	cs.pairs_sorted = true;
	pgstat_progress_update_param(PROGRESS_CLUSTER_PHASE,
								 OldIndex != NULL && !use_sort ?
								 PROGRESS_CLUSTER_PHASE_INDEX_SCAN_HEAP :
								 PROGRESS_CLUSTER_PHASE_SEQ_SCAN_HEAP);
	if (OldIndex == NULL || use_sort)
		pgstat_progress_update_param(PROGRESS_CLUSTER_TOTAL_HEAP_BLKS,
									 ls_blocks_for_limit(limit));

	if (OldIndex != NULL && !use_sort)
	{
		/* index order: the index's entries name the rows (no table fetch) */
		IndexScanDesc iscan = index_beginscan(OldTable, OldIndex, SnapshotAny, 0, 0);
		ItemPointer tid;

		uint64		ids[LS_CLUSTER_BATCH];
		int			nids = 0;

		index_rescan(iscan, NULL, 0, NULL, 0);
		while ((tid = index_getnext_tid(iscan, ForwardScanDirection)) != NULL)
		{
			uint64		rowid = ls_tid_to_rowid(tid);

			if (iscan->xs_recheck)
				elog(ERROR, "CLUSTER does not support lossy index conditions");
			if (rowid < limit)
				ids[nids++] = rowid;
			if (nids == LS_CLUSTER_BATCH)
			{
				ls_cluster_copy_rows(&cs, ids, nids);
				nids = 0;
			}
			pgstat_progress_update_param(PROGRESS_CLUSTER_HEAP_TUPLES_SCANNED,
										 ++scanned_rows);
		}
		ls_cluster_copy_rows(&cs, ids, nids);
		index_endscan(iscan);
	}
	else if (OldIndex != NULL && use_sort)
	{
		/* sort one version of every row by the index's keys */
		Tuplesortstate *ts = tuplesort_begin_cluster(cs.olddesc, OldIndex,
													 maintenance_work_mem,
													 NULL, TUPLESORT_NONE);
		HeapTuple	tup;

		cursor = 0;
		for (;;)
		{
			ls_hot_row *rows[LS_CLUSTER_BATCH];
			HeapTuple	tups[LS_CLUSTER_BATCH];
			uint32		n;
			MemoryContext old;

			CHECK_FOR_INTERRUPTS();
			MemoryContextReset(cs.tmpcxt);
			old = MemoryContextSwitchTo(cs.tmpcxt);
			ls_epoch_enter();
			n = ls_rows_batch(cs.src, &cursor, limit, rows, LS_CLUSTER_BATCH);
			for (uint32 i = 0; i < n; i++)
			{
				ls_hot_row *row = rows[i];
				int			walked = 0;

				tups[i] = NULL;
				for (ls_hot_version *v = ls_hot_row_newest(row); v != NULL;
					 v = ls_chain_next(row, v, &walked))
				{
					LsVersionInfo info;

					ls_version_info(v, &info);
					if (ls_xmin_status(v, &info) != LS_XS_ABORTED)
					{
						Size		size = ls_heaptuple_size(v, OldTable);

						tups[i] = ls_version_to_heaptuple(v, OldTable, row->rowid,
														  palloc(size), size);
						break;
					}
				}
			}
			ls_epoch_exit();
			MemoryContextSwitchTo(old);
			if (n == 0)
				break;
			for (uint32 i = 0; i < n; i++)
			{
				if (tups[i] != NULL)
					tuplesort_putheaptuple(ts, tups[i]);
				pgstat_progress_update_param(PROGRESS_CLUSTER_HEAP_TUPLES_SCANNED,
											 ++scanned_rows);
				if (tups[i] != NULL)
					ls_progress_rowid(PROGRESS_CLUSTER_HEAP_BLKS_SCANNED,
									  ls_tid_to_rowid(&tups[i]->t_self),
									  &scanned_blocks);
			}
		}
		pgstat_progress_update_param(PROGRESS_CLUSTER_HEAP_BLKS_SCANNED,
									 ls_blocks_for_limit(limit));
		pgstat_progress_update_param(PROGRESS_CLUSTER_PHASE,
									 PROGRESS_CLUSTER_PHASE_SORT_TUPLES);
		tuplesort_performsort(ts);
		pgstat_progress_update_param(PROGRESS_CLUSTER_PHASE,
									 PROGRESS_CLUSTER_PHASE_WRITE_NEW_HEAP);
		for (;;)
		{
			uint64		ids[LS_CLUSTER_BATCH];
			int			nids = 0;

			while (nids < LS_CLUSTER_BATCH &&
				   (tup = tuplesort_getheaptuple(ts, true)) != NULL)
				ids[nids++] = ls_tid_to_rowid(&tup->t_self);
			if (nids == 0)
				break;
			ls_cluster_copy_rows(&cs, ids, nids);
		}
		tuplesort_end(ts);
	}

	/* every row not copied yet, in rowid order (all of them without index) */
	cursor = 0;
	for (;;)
	{
		ls_hot_row *rows[LS_CLUSTER_BATCH];
		uint64		rowid[LS_CLUSTER_BATCH];
		int			first[LS_CLUSTER_BATCH];
		int			ntaken[LS_CLUSTER_BATCH];
		int			m = 0;
		uint32		n;
		MemoryContext old;

		CHECK_FOR_INTERRUPTS();
		MemoryContextReset(cs.tmpcxt);
		old = MemoryContextSwitchTo(cs.tmpcxt);
		cs.ntups = 0;
		ls_epoch_enter();
		n = ls_rows_batch(cs.src, &cursor, limit, rows, LS_CLUSTER_BATCH);
		for (uint32 i = 0; i < n; i++)
		{
			if (!ls_cluster_claim(&cs, rows[i]->rowid))
				continue;
			rowid[m] = rows[i]->rowid;
			first[m] = cs.ntups;
			ntaken[m] = ls_cluster_take(&cs, rows[i]);
			m++;
		}
		ls_epoch_exit();
		for (int i = 0; i < m; i++)
		{
			CHECK_FOR_INTERRUPTS();
			ls_cluster_put(&cs, rowid[i], first[i], ntaken[i]);
			if (OldIndex == NULL)
			{
				pgstat_progress_update_param(PROGRESS_CLUSTER_HEAP_TUPLES_SCANNED,
											 ++scanned_rows);
				ls_progress_rowid(PROGRESS_CLUSTER_HEAP_BLKS_SCANNED, rowid[i],
								  &scanned_blocks);
			}
		}
		MemoryContextSwitchTo(old);
		if (n == 0)
			break;
	}
	if (OldIndex == NULL)
		pgstat_progress_update_param(PROGRESS_CLUSTER_HEAP_BLKS_SCANNED,
									 ls_blocks_for_limit(limit));
	ls_test_pause("cluster-copied");

	/* forward links of moved versions name the new rowids */
	for (int i = 0; i < cs.nlinks; i++)
		atomic_store(&cs.links[i].v->next_rowid,
					 ls_cluster_new_rowid(&cs, cs.links[i].old_target));

	*num_tuples = cs.num_tuples;
	*tups_vacuumed = cs.tups_vacuumed;
	*tups_recently_dead = cs.tups_recently_dead;

	MemoryContextDelete(cs.tmpcxt);
	pfree(cs.done);
	pfree(cs.pairs);
	pfree(cs.values);
	pfree(cs.isnull);
	pfree(cs.tups);
	pfree(cs.infos);
	pfree(cs.chain);
	pfree(cs.links);
	ls_mark_written();
}

/* ------------------------------------------------------------------------
 * Index builds
 * ------------------------------------------------------------------------ */

/*
 * pg_stat_progress_create_index's blocks_total for a scan: the virtual
 * blocks of its rowid range (its TID range, or the whole table).
 */
static BlockNumber
scan_blocks_total(LsScanDesc scan)
{
	uint64		end = scan->tr_max == LS_ROWID_INVALID ?
		scan->end : Min(scan->end, scan->tr_max + 1);

	if (end <= scan->tr_min)
		return 0;
	return ls_blocks_for_limit(end) - ls_blocks_for_limit(scan->tr_min);
}

/* Rows an index build decides per epoch (one cold-tree descent each batch) */
#define LS_INDEX_BATCH	64

/* One row of an index build's batch, decided inside the epoch */
typedef struct LsBuildRow
{
	uint64		rowid;
	HeapTuple	tup;			/* the version to index (a copy); NULL: none */
	bool		alive;			/* tupleIsAlive for the callback */
	bool		counts;			/* counts in reltuples */
	List	   *older;			/* anyvisible: older versions to index too */
} LsBuildRow;

/*
 * Which version of row an index build indexes (NULL: none) and how; for a
 * non-MVCC snapshot (plain CREATE INDEX, REINDEX) as heap decides with
 * HeapTupleSatisfiesVacuum, for an MVCC one (CONCURRENTLY, bootstrap) the
 * visible version.  *counts: the row counts in reltuples, as heap counts
 * (live rows, our own inserts, rows another transaction is deleting; every
 * one of them with anyvisible).  Caller inside an epoch; may consult clog.
 */
static ls_hot_version *
ls_index_build_version(ls_hot_row *row, Snapshot snapshot, bool mvcc,
					   bool anyvisible, GlobalVisState *vistest,
					   IndexInfo *indexInfo, bool *alive, bool *counts)
{
	ls_hot_version *v;
	TransactionId dead_after;
	LsVacuumState vs;
	LsVersionInfo info;
	ls_hot_version *older;

	*alive = true;
	*counts = true;
	if (mvcc)
		return ls_row_visible_version(row, snapshot);
	vs = ls_row_vacuum_state(row, vistest, &v, &dead_after);
	if (v == NULL)
		return NULL;
	switch (vs)
	{
		case LS_V_DEAD:
			v = NULL;
			break;
		case LS_V_LIVE:
			break;
		case LS_V_INSERT_IN_PROGRESS:
			/* counted only when our own (as heap, and ANALYZE) */
			ls_version_info(v, &info);
			*counts = anyvisible || TransactionIdIsCurrentTransactionId(info.xmin);
			break;
		case LS_V_RECENTLY_DEAD:
			*alive = false;
			*counts = false;
			break;
		case LS_V_DELETE_IN_PROGRESS:
			ls_version_info(v, &info);
			if (anyvisible)
				*alive = false;
			else if (TransactionIdIsCurrentTransactionId(info.xmax))
			{
				*alive = false;
				*counts = false;
			}
			break;
	}
	/* older versions still visible to someone: like a broken HOT chain */
	older = v ? ls_hot_version_older(v) : NULL;
	if (older != NULL &&
		ls_version_vacuum_state(older, vistest, &dead_after) != LS_V_DEAD)
		indexInfo->ii_BrokenHotChain = true;
	return v;
}

/*
 * Copies of the versions older than v that are not dead to everyone (in
 * batchcxt).  With anyvisible (BRIN's summarization of a range) heap hands
 * over every tuple that is not dead: an update of a BRIN-indexed column is
 * never HOT in PostgreSQL 15, so the old and the new value are both
 * summarized, and a snapshot that still sees the old one, or a rollback of
 * the update, finds it in the summary.  Here an update of a table whose
 * indexes all summarize is made in place (ls_only_summarizing_indexes):
 * its older versions share the rowid, and must be handed over too.  Inside
 * the epoch.
 */
static List *
ls_index_build_older(ls_hot_row *row, ls_hot_version *v, Oid relid,
					 GlobalVisState *vistest, MemoryContext batchcxt, bool *bad)
{
	List	   *older = NIL;
	TransactionId dead_after;
	int			walked = 0;

	for (ls_hot_version *o = ls_chain_next(row, v, &walked); o != NULL;
		 o = ls_chain_next(row, o, &walked))
	{
		Size		size;
		MemoryContext oldcxt;

		if (ls_version_vacuum_state(o, vistest, &dead_after) == LS_V_DEAD)
			continue;
		size = ls_version_tuple_size(o);
		if (size == 0)
		{
			*bad = true;
			break;
		}
		oldcxt = MemoryContextSwitchTo(batchcxt);
		older = lappend(older, ls_version_copy_out(o, relid, row->rowid, palloc(size)));
		MemoryContextSwitchTo(oldcxt);
	}
	return older;
}

/*
 * The table scan of CREATE INDEX and REINDEX (and of CONCURRENTLY's build
 * phase, and of BRIN's summarization: anyvisible): rows of both tiers a
 * batch at a time, LS_INDEX_BATCH rows decided and copied out per epoch
 * (one cold-tree descent per batch, not a lookup per row), then handed to
 * the callback outside the epoch (it evaluates expressions and predicates,
 * and may throw).
 */
double
ls_index_build_range_scan(Relation table_rel, Relation index_rel,
						  IndexInfo *indexInfo, bool allow_sync,
						  bool anyvisible, bool progress,
						  BlockNumber start_blockno, BlockNumber numblocks,
						  IndexBuildCallback callback, void *callback_state,
						  TableScanDesc sscan)
{
	EState	   *estate = CreateExecutorState();
	ExprContext *econtext = GetPerTupleExprContext(estate);
	TupleTableSlot *slot = table_slot_create(table_rel, NULL);
	MemoryContext batchcxt;
	ExprState  *predicate;
	Snapshot	snapshot;
	bool		need_unregister = false;
	bool		mvcc;
	GlobalVisState *vistest = GlobalVisTestFor(table_rel);
	Oid			relid = RelationGetRelid(table_rel);
	LsScanDesc	scan;
	Datum		values[INDEX_MAX_KEYS];
	bool		isnull[INDEX_MAX_KEYS];
	double		reltuples = 0;
	BlockNumber blocks_done = 0;
	BlockNumber blocks_total = 0;
	ls_hot_row *rows[LS_INDEX_BATCH];
	LsBuildRow	batch[LS_INDEX_BATCH];

	econtext->ecxt_scantuple = slot;
	predicate = ExecPrepareQual(indexInfo->ii_Predicate, estate);
	batchcxt = AllocSetContextCreate(CurrentMemoryContext, "leanstore index build batch",
									 ALLOCSET_DEFAULT_SIZES);

	if (sscan == NULL)
	{
		if (IsBootstrapProcessingMode() || indexInfo->ii_Concurrent)
		{
			snapshot = RegisterSnapshot(GetTransactionSnapshot());
			need_unregister = true;
		}
		else
			snapshot = SnapshotAny;
		sscan = table_beginscan_strat(table_rel, snapshot, 0, NULL, true, allow_sync);
	}
	else
		snapshot = sscan->rs_snapshot;
	scan = (LsScanDesc) sscan;
	mvcc = IsMVCCSnapshot(snapshot);

	if (numblocks != InvalidBlockNumber || start_blockno != 0)
	{
		scan->tr_min = (uint64) start_blockno * LS_ROWS_PER_BLOCK;
		if (numblocks != InvalidBlockNumber)
			scan->tr_max = ((uint64) start_blockno + numblocks) * LS_ROWS_PER_BLOCK - 1;
		scan->cursor = scan->tr_min;
	}

	if (progress)
	{
		blocks_total = scan_blocks_total(scan);
		pgstat_progress_update_param(PROGRESS_SCAN_BLOCKS_TOTAL, blocks_total);
	}
	for (;;)
	{
		int			n;
		bool		bad = false;

		CHECK_FOR_INTERRUPTS();
		/* the slot may still borrow a copy of the last batch */
		ExecClearTuple(slot);
		MemoryContextReset(batchcxt);

		ls_epoch_enter();
		n = ls_scan_next_rows(scan, rows, NULL, LS_INDEX_BATCH, NULL);
		for (int i = 0; i < n; i++)
		{
			LsBuildRow *b = &batch[i];
			ls_hot_version *v;
			Size		size;

			v = ls_index_build_version(rows[i], snapshot, mvcc, anyvisible,
									   vistest, indexInfo, &b->alive, &b->counts);
			b->rowid = rows[i]->rowid;
			b->tup = NULL;
			b->older = NIL;
			if (v == NULL)
				continue;
			size = ls_version_tuple_size(v);
			if (size == 0)
			{
				bad = true;
				break;
			}
			b->tup = ls_version_copy_out(v, relid, b->rowid,
										 MemoryContextAlloc(batchcxt, size));
			if (anyvisible && !mvcc)
				b->older = ls_index_build_older(rows[i], v, relid, vistest,
												batchcxt, &bad);
			if (bad)
				break;
		}
		ls_epoch_exit();
		if (bad)
			ls_report_bad_version(table_rel);
		if (n == 0)
			break;

		for (int i = 0; i < n; i++)
		{
			LsBuildRow *b = &batch[i];
			ListCell   *lc;

			if (progress)
				ls_progress_rowid(PROGRESS_SCAN_BLOCKS_DONE, b->rowid - scan->tr_min,
								  &blocks_done);
			if (b->tup == NULL)
				continue;
			CHECK_FOR_INTERRUPTS();
			/* the table's rows, whatever a partial index's predicate says */
			if (b->counts)
				reltuples += 1;
			MemoryContextReset(econtext->ecxt_per_tuple_memory);
			/* the copy lives until the next batch: the slot borrows it */
			ls_store_borrowed(b->tup, slot);
			if (predicate == NULL || ExecQual(predicate, econtext))
			{
				FormIndexDatum(indexInfo, slot, estate, values, isnull);
				callback(index_rel, &b->tup->t_self, values, isnull, b->alive,
						 callback_state);
			}
			/* anyvisible: the row's older versions (ls_index_build_older) */
			foreach(lc, b->older)
			{
				HeapTuple	o = (HeapTuple) lfirst(lc);

				ExecClearTuple(slot);
				MemoryContextReset(econtext->ecxt_per_tuple_memory);
				ls_store_borrowed(o, slot);
				if (predicate != NULL && !ExecQual(predicate, econtext))
					continue;
				FormIndexDatum(indexInfo, slot, estate, values, isnull);
				callback(index_rel, &o->t_self, values, isnull, false,
						 callback_state);
			}
		}
	}
	if (progress)
	{
		/* heap reports the whole range done at the end */
		pgstat_progress_update_param(PROGRESS_SCAN_BLOCKS_DONE, blocks_total);
		ls_test_pause("index-scanned");
	}

	ExecClearTuple(slot);
	table_endscan(sscan);
	if (need_unregister)
		UnregisterSnapshot(snapshot);
	ExecDropSingleTupleTableSlot(slot);
	MemoryContextDelete(batchcxt);
	FreeExecutorState(estate);
	indexInfo->ii_ExpressionsState = NIL;
	indexInfo->ii_PredicateState = NULL;
	return reltuples;
}

/*
 * CREATE INDEX CONCURRENTLY (and REINDEX CONCURRENTLY), phase 3: insert the
 * rows visible to snapshot that the index does not have yet.  Both streams
 * are in TID order (TID order is rowid order).  Progress as heap reports
 * it: blocks_total at the start, blocks_done the block of the row at hand
 * (heap leaves it at the last block it read, so do we).
 */
void
ls_index_validate_scan(Relation table_rel, Relation index_rel,
					   IndexInfo *indexInfo, Snapshot snapshot,
					   ValidateIndexState *state)
{
	EState	   *estate = CreateExecutorState();
	ExprContext *econtext = GetPerTupleExprContext(estate);
	TupleTableSlot *slot = table_slot_create(table_rel, NULL);
	ExprState  *predicate;
	TableScanDesc scan;
	ItemPointerData indexcursor;
	bool		have_cursor = false;
	bool		sort_done = false;
	Datum		values[INDEX_MAX_KEYS];
	bool		isnull[INDEX_MAX_KEYS];
	BlockNumber blocks_done = 0;

	econtext->ecxt_scantuple = slot;
	predicate = ExecPrepareQual(indexInfo->ii_Predicate, estate);
	ItemPointerSetInvalid(&indexcursor);

	scan = table_beginscan_strat(table_rel, snapshot, 0, NULL, true, false);
	/* validate_index reset blocks_done when it entered this phase */
	pgstat_progress_update_param(PROGRESS_SCAN_BLOCKS_TOTAL,
								 scan_blocks_total((LsScanDesc) scan));
	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		ItemPointerData tid = slot->tts_tid;

		CHECK_FOR_INTERRUPTS();
		state->htups += 1;
		ls_progress_rowid(PROGRESS_SCAN_BLOCKS_DONE, ls_tid_to_rowid(&tid), &blocks_done);

		while (!sort_done && (!have_cursor || ItemPointerCompare(&indexcursor, &tid) < 0))
		{
			Datum		ts_val;
			bool		ts_isnull;

			if (!tuplesort_getdatum(state->tuplesort, true, &ts_val, &ts_isnull, NULL))
			{
				sort_done = true;
				break;
			}
			itemptr_decode(&indexcursor, DatumGetInt64(ts_val));
			have_cursor = true;
#ifndef USE_FLOAT8_BYVAL
			pfree(DatumGetPointer(ts_val));
#endif
		}
		if (have_cursor && ItemPointerEquals(&indexcursor, &tid))
			continue;			/* already indexed */

		MemoryContextReset(econtext->ecxt_per_tuple_memory);
		if (predicate != NULL && !ExecQual(predicate, econtext))
			continue;
		FormIndexDatum(indexInfo, slot, estate, values, isnull);
		index_insert(index_rel, values, isnull, &tid, table_rel,
					 indexInfo->ii_Unique ? UNIQUE_CHECK_YES : UNIQUE_CHECK_NO,
					 false, indexInfo);
		state->tups_inserted += 1;
	}
	ls_test_pause("index-validated");
	table_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	FreeExecutorState(estate);
	indexInfo->ii_ExpressionsState = NIL;
	indexInfo->ii_PredicateState = NULL;
}
