/*
 * abort.c - rows inserted and in-place versions added by an aborted
 * (sub)transaction give their hot memory back at once.
 *
 * Without this an aborted INSERT's rows stay in the hot tier until VACUUM
 * (or the background GC) visits their table.  The tier is shared by every
 * leanstore table, so one failed bulk load that filled it made every
 * other table unwritable (issue 12).
 *
 * Each backend remembers the rowids it inserted or updated in place, per
 * table storage, per writing xid and per subtransaction nest level, as a
 * short list of
 * rowid ranges (consecutive inserts extend the last range; a range may
 * cover rows of other transactions, which are skipped below).  At abort of
 * a level, every live row in that level's ranges whose oldest version was
 * inserted by the range's xid is removed (its slot becomes DEAD: index
 * entries may still point at it, VACUUM forgets them), unless it was
 * migrated from the cold tier (its image leaves with it only through VACUUM
 * or pack: see ls_ins_undo).  On the other rows
 * of the ranges, the newest versions that the aborting xids added by
 * in-place updates are dropped (under the row latch, only while they are
 * on top: a version another transaction put above them after the abort
 * became visible leaves the rest to pruning).  The memory goes back
 * through epoch reclamation.
 *
 * Why removing the whole row is right: while the inserting level runs, no
 * other transaction can see, update or lock the row (its inserter is in
 * progress), and shallower levels are suspended, so every version of the
 * row was made by the aborting level or its children: all aborted.
 *
 * At commit of a subtransaction its ranges move to the parent level; at
 * top-level commit they are forgotten.  Runs in the abort callback: it
 * never throws (no catalog or clog access, no allocation).
 */
#include "postgres.h"

#include "access/xact.h"
#include "utils/memutils.h"

#include "ls_pg.h"

/* Extend the last range while the new rowid is at most this far above. */
#define LS_INS_GAP		4096
#define LS_INS_INITIAL	64
/*
 * At most this many ranges (40 bytes each): a transaction with very many
 * inserting subtransactions (distinct xids, so their ranges cannot merge)
 * forgets its oldest ranges, whose rows then wait for VACUUM as before.
 */
#define LS_INS_MAX		8192

typedef struct LsInsRange
{
	ls_hot_key	key;
	TransactionId xid;
	int			level;
	uint64		lo;
	uint64		hi;				/* inclusive */
} LsInsRange;

static LsInsRange *ls_ins = NULL;
static int	ls_ins_n = 0;

/*
 * Versions this top-level transaction added to the hot tier (inserts,
 * in-place updates, moved rows): the "hot tier is full" error says when
 * the transaction's own changes are what fills it.
 */
static uint64 ls_xact_versions = 0;
static int	ls_ins_cap = 0;

static inline bool
ls_key_equal(ls_hot_key a, ls_hot_key b)
{
	return a.spc == b.spc && a.db == b.db && a.rel == b.rel;
}

/* Merge ranges of the same (key, xid, level) into one: bounded memory. */
static void
ls_ins_compact(void)
{
	int			out = 0;

	for (int i = 0; i < ls_ins_n; i++)
	{
		int			j;

		for (j = 0; j < out; j++)
		{
			if (ls_key_equal(ls_ins[j].key, ls_ins[i].key) &&
				ls_ins[j].xid == ls_ins[i].xid &&
				ls_ins[j].level == ls_ins[i].level)
			{
				ls_ins[j].lo = Min(ls_ins[j].lo, ls_ins[i].lo);
				ls_ins[j].hi = Max(ls_ins[j].hi, ls_ins[i].hi);
				break;
			}
		}
		if (j == out)
			ls_ins[out++] = ls_ins[i];
	}
	ls_ins_n = out;
}

/*
 * Remember that this transaction inserted rowid into tbl, or added a version
 * to it by an in-place update.  Called right after the change was published; may allocate (and so throw) only when the
 * list grows, which keeps the row for VACUUM as before.
 */
void
ls_abort_note_insert(ls_hot_table *tbl, uint64 rowid, TransactionId xid)
{
	ls_hot_key	key = ls_hot_table_get_key(tbl);
	int			level = GetCurrentTransactionNestLevel();
	LsInsRange *last = ls_ins_n > 0 ? &ls_ins[ls_ins_n - 1] : NULL;

	ls_xact_versions++;
	if (last != NULL && last->xid == xid && last->level == level &&
		ls_key_equal(last->key, key) &&
		rowid + LS_INS_GAP >= last->lo && rowid <= last->hi + LS_INS_GAP)
	{
		last->lo = Min(last->lo, rowid);
		last->hi = Max(last->hi, rowid);
		return;
	}
	if (ls_ins_n == ls_ins_cap)
	{
		ls_ins_compact();
		if (ls_ins_n == ls_ins_cap && ls_ins_cap >= LS_INS_MAX)
		{
			/* forget the older half (safe: those rows wait for VACUUM) */
			int			drop = ls_ins_n / 2;

			memmove(ls_ins, ls_ins + drop, sizeof(LsInsRange) * (ls_ins_n - drop));
			ls_ins_n -= drop;
		}
		if (ls_ins_n == ls_ins_cap)
		{
			int			cap = ls_ins_cap == 0 ? LS_INS_INITIAL : ls_ins_cap * 2;

			/* room for cap ranges and, behind them, cap xids (undo) */
			Size		bytes = (sizeof(LsInsRange) + sizeof(TransactionId)) * cap;

			if (ls_ins == NULL)
				ls_ins = MemoryContextAlloc(TopMemoryContext, bytes);
			else
				ls_ins = repalloc(ls_ins, bytes);
			ls_ins_cap = cap;
		}
	}
	ls_ins[ls_ins_n].key = key;
	ls_ins[ls_ins_n].xid = xid;
	ls_ins[ls_ins_n].level = level;
	ls_ins[ls_ins_n].lo = rowid;
	ls_ins[ls_ins_n].hi = rowid;
	ls_ins_n++;
}

/* Oldest version of row inserted by xid?  Caller inside an epoch. */
static bool
ls_row_inserted_by(ls_hot_row *row, TransactionId xid)
{
	ls_hot_version *v = ls_hot_row_newest(row);
	ls_hot_version *oldest = NULL;

	Assert(ls_in_epoch());
	for (int n = 0; v != NULL && n < LS_CHAIN_BOUND; n++)
	{
		oldest = v;
		v = ls_hot_version_older(v);
	}
	if (v != NULL || oldest == NULL)
		return false;			/* too long to judge (or removed): keep */
	return ls_hv_xid(atomic_load(&oldest->xmin_word)) == xid;
}

/* xids of the ranges being undone (a level and the children it absorbed) */
static TransactionId *ls_undo_xids = NULL;
static int	ls_undo_nxids = 0;

static bool
ls_undo_xid(TransactionId xid)
{
	for (int i = 0; i < ls_undo_nxids; i++)
		if (ls_undo_xids[i] == xid)
			return true;
	return false;
}

/*
 * Undo the in-place updates of the aborting xids on row: drop its newest
 * versions while they are theirs (under the latch; a version another
 * transaction put on top after our abort became visible stops it, the rest
 * is left to pruning).  Returns the versions dropped.
 */
static uint64
ls_undo_updates(ls_hot_table *tbl, ls_hot_row *row)
{
	uint64		dropped = 0;

	for (int n = 0; n < LS_CHAIN_BOUND; n++)
	{
		ls_hot_version *top = ls_hot_row_newest(row);

		if (top == NULL || ls_hot_version_older(top) == NULL ||
			!ls_undo_xid(ls_hv_xid(atomic_load(&top->xmin_word))))
			break;
		if (ls_hot_row_uninstall_newest(ls_my_ctx, tbl, row) != LS_OK)
			break;
		dropped++;
	}
	return dropped;
}

/*
 * Remove the live rows of one range that xid inserted, and drop the
 * versions the aborting xids added to other rows by in-place updates.
 */
static uint64
ls_ins_undo(const LsInsRange *r)
{
	ls_hot_ctx *ctx = ls_my_ctx;
	ls_hot_table *tbl;
	uint64		cursor = r->lo;
	uint64		removed = 0;

	tbl = ls_hot_table_find(ls_shared_hot(), r->key);
	if (tbl == NULL)
		return 0;				/* dropped (created by the aborted level) */
	while (cursor <= r->hi)
	{
		ls_hot_row *rows[LS_BATCH_ROWS];
		uint32		n;

		/* bounded epochs: a batch of rows per epoch */
		ls_epoch_enter();
		n = ls_hot_scan_batch(tbl, &cursor, r->hi + 1, rows, LS_BATCH_ROWS);
		for (uint32 i = 0; i < n; i++)
		{
			ls_hot_row *row = rows[i];
			ls_hot_version *top = ls_hot_row_newest(row);

			/*
			 * A row migrated from the cold tier keeps its image until the
			 * row leaves through VACUUM or pack, which forget the image
			 * first (ls_cold_forget_image): so its own load's image (our
			 * bulk load, then our update of it) is not removed here, only
			 * our versions above the image's copy.  Removing it left the
			 * image behind a DEAD rowid (leanstore_verify: "cold row at a
			 * DEAD rowid"; regress ls_undone_updates).
			 */
			if (row->origin == LS_ORIGIN_MIGRATED || !ls_row_inserted_by(row, r->xid))
			{
				/* an in-place update of ours on top? */
				if (top == NULL ||
					!ls_undo_xid(ls_hv_xid(atomic_load(&top->xmin_word))))
					continue;
				ls_row_lock(row);
				if (!ls_hot_row_is_removed(row))
					removed += ls_undo_updates(tbl, row);
				ls_row_unlock(row);
				continue;
			}
			ls_row_lock(row);
			if (ls_hot_row_is_removed(row) || !ls_row_inserted_by(row, r->xid))
			{
				ls_row_unlock(row);
				continue;
			}
			ls_row_forget_latch();
			ls_hot_row_remove(ctx, tbl, row, true);
			removed++;
		}
		ls_epoch_exit();
		if (n < LS_BATCH_ROWS)
			break;
	}
	return removed;
}

/*
 * (Sub)transaction abort: undo the inserts of every level >= level (1 =
 * top level: all of them).  Never throws.
 */
void
ls_abort_inserts(int level)
{
	int			keep = 0;
	uint64		removed = 0;

	if (level <= 1)
		ls_xact_versions = 0;
	if (ls_ins_n == 0)
		return;
	/* the aborting xids (at most one per range: no allocation needed) */
	ls_undo_xids = (TransactionId *) &ls_ins[ls_ins_cap];
	ls_undo_nxids = 0;
	for (int i = 0; i < ls_ins_n; i++)
		if (ls_ins[i].level >= level && !ls_undo_xid(ls_ins[i].xid))
			ls_undo_xids[ls_undo_nxids++] = ls_ins[i].xid;
	for (int i = 0; i < ls_ins_n; i++)
	{
		if (ls_ins[i].level >= level)
		{
			if (ls_my_ctx != NULL)
				removed += ls_ins_undo(&ls_ins[i]);
		}
		else
			ls_ins[keep++] = ls_ins[i];
	}
	ls_ins_n = keep;
	ls_undo_nxids = 0;
	if (removed > 0)
		ls_hot_reclaim(ls_my_ctx);
}

/* Subtransaction commit: its ranges belong to the parent from now on. */
void
ls_commit_sub_inserts(int level)
{
	for (int i = 0; i < ls_ins_n; i++)
		if (ls_ins[i].level >= level)
			ls_ins[i].level = level - 1;
}

/* Versions this top-level transaction added to the hot tier so far. */
uint64
ls_xact_hot_versions(void)
{
	return ls_xact_versions;
}

/* Top-level commit (or prepare): nothing to undo any more. */
void
ls_forget_inserts(void)
{
	ls_xact_versions = 0;
	ls_ins_n = 0;
	if (ls_ins_cap > 4 * LS_INS_INITIAL)
	{
		pfree(ls_ins);
		ls_ins = NULL;
		ls_ins_cap = 0;
	}
}
