/*
 * dml.c - INSERT, UPDATE, DELETE and row locks on leanstore tables.
 *
 * Writers of one row serialise like heap writers: the row's current
 * version (the newest version whose inserter committed or is this
 * transaction) carries in its xmax the transaction that locked, updated or
 * deleted it; a second writer finds that xmax still running, takes the
 * heavyweight tuple lock (queue fairness) and waits on the transaction
 * (XactLockTableWait), then re-examines the row.
 *
 * Every write first *locks* the current version (sets xmax to this
 * transaction, lock-only) under the row's short latch, and only then does
 * work that can throw or call into PostgreSQL (TOAST, allocation).  Once
 * locked, no other writer can change the version, so the final step (turn
 * the lock into an update or delete, install the new version) cannot fail
 * validation.  The short latch is never held across a PostgreSQL call.
 *
 * UPDATE keeps the rowid when no indexed column changes (the new version is
 * pushed onto the same chain; *update_indexes = false) and the relation has
 * no BEFORE/AFTER ROW triggers or transition tables (they fetch the OLD row
 * by TID around the update, which must then still name the old version).
 * Otherwise the new version
 * goes under a new rowid, the old version's xmax is flagged MOVED and its
 * next_rowid names the new rowid, as heap's t_ctid does.
 */
#include "postgres.h"

#include "access/heaptoast.h"
#include "access/xact.h"
#include "catalog/catalog.h"
#include "commands/trigger.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "nodes/bitmapset.h"
#include "pgstat.h"
#include "storage/lmgr.h"
#include "storage/predicate.h"
#include "utils/datum.h"
#include "utils/memutils.h"
#include "utils/relcache.h"
#include "utils/snapmgr.h"

#include "ls_pg.h"

typedef enum LsWaitMode
{
	LS_WAIT_BLOCK,
	LS_WAIT_SKIP,
	LS_WAIT_ERROR,
	LS_WAIT_NONE,				/* report TM_BeingModified instead */
} LsWaitMode;

/* What ls_check_row found out about a row's current version. */
typedef struct LsRowCheck
{
	ls_hot_version *newest;
	ls_hot_version *target;		/* the current version (TM_Ok) */
	uint64		xmax_word;		/* target's xmax word as examined */
	TransactionId wait_xid;		/* TM_BeingModified: whom to wait for */
	bool		own_lock;		/* target's xmax is our own lock */
	LockTupleMode held_mode;	/* ... of this strength */
} LsRowCheck;

/* heavyweight lock mode per tuple lock mode (as heap uses them) */
static const LOCKMODE ls_tuplock_mode[] = {
	AccessShareLock,			/* LockTupleKeyShare */
	RowShareLock,				/* LockTupleShare */
	ExclusiveLock,				/* LockTupleNoKeyExclusive */
	AccessExclusiveLock,		/* LockTupleExclusive */
};

static uint32
ls_lock_flags(LockTupleMode mode)
{
	switch (mode)
	{
		case LockTupleKeyShare:
			return LS_HV_XMAX_LOCK_ONLY | LS_HV_XMAX_KEYSHR_LOCK;
		case LockTupleShare:
			return LS_HV_XMAX_LOCK_ONLY | LS_HV_XMAX_KEYSHR_LOCK | LS_HV_XMAX_EXCL_LOCK;
		case LockTupleNoKeyExclusive:
			return LS_HV_XMAX_LOCK_ONLY | LS_HV_XMAX_EXCL_LOCK;
		case LockTupleExclusive:
			return LS_HV_XMAX_LOCK_ONLY | LS_HV_XMAX_EXCL_LOCK | LS_HV_XMAX_KEYS_UPDATED;
	}
	return LS_HV_XMAX_LOCK_ONLY | LS_HV_XMAX_EXCL_LOCK | LS_HV_XMAX_KEYS_UPDATED;
}

static LockTupleMode
ls_lock_mode_of(uint32 flags)
{
	if (flags & LS_HV_XMAX_KEYS_UPDATED)
		return LockTupleExclusive;
	if ((flags & LS_HV_XMAX_EXCL_LOCK) && (flags & LS_HV_XMAX_KEYSHR_LOCK))
		return LockTupleShare;
	if (flags & LS_HV_XMAX_EXCL_LOCK)
		return LockTupleNoKeyExclusive;
	return LockTupleKeyShare;
}

/* ------------------------------------------------------------------------
 * Locks of an enclosing transaction overwritten by a subtransaction
 *
 * A row has one xmax.  When a subtransaction updates, deletes or re-locks a
 * row that an enclosing (sub)transaction of ours has locked, the lock word
 * is overwritten; if the subtransaction then aborts, its xmax is ignored and
 * the enclosing lock would be gone (heap keeps both in a MultiXact).  We
 * remember the overwritten word and put it back when that subtransaction
 * aborts.  Backend-local; forgotten at top-level end.
 * ------------------------------------------------------------------------ */
typedef struct LsLockRestore
{
	ls_hot_table *tbl;			/* valid for the whole transaction: storage
								 * is freed at commit at the earliest */
	uint64		rowid;
	TransactionId writer;		/* the subtransaction that overwrote */
	uint64		restore_word;	/* the enclosing lock */
	int			nest_level;
	struct LsLockRestore *next;
} LsLockRestore;

static LsLockRestore *ls_restores = NULL;

static void
ls_remember_lock(ls_hot_table *tbl, uint64 rowid, TransactionId writer,
				 uint64 old_word)
{
	LsLockRestore *r;

	if (ls_hv_xid(old_word) == writer)
		return;					/* our own level's lock: nothing to keep */
	r = MemoryContextAlloc(TopTransactionContext, sizeof(LsLockRestore));
	r->tbl = tbl;
	r->rowid = rowid;
	r->writer = writer;
	r->restore_word = old_word;
	r->nest_level = GetCurrentTransactionNestLevel();
	r->next = ls_restores;
	ls_restores = r;
}

/* Put one remembered lock back (abort callback: must not throw). */
static void
ls_restore_lock(LsLockRestore *r)
{
	ls_hot_row *row;

	ls_epoch_enter();
	row = ls_hot_row_get(r->tbl, r->rowid);
	if (row != NULL)
	{
		int			n = 0;

		ls_row_lock(row);
		for (ls_hot_version *v = ls_hot_row_newest(row); v != NULL && n < 1000000;
			 v = ls_hot_version_older(v), n++)
		{
			if (ls_hv_xid(atomic_load(&v->xmax_word)) == r->writer)
			{
				atomic_store(&v->xmax_word, r->restore_word);
				break;
			}
		}
		ls_row_unlock(row);
	}
	ls_epoch_exit();
}

void
ls_locks_at_subxact_end(bool commit)
{
	int			level = GetCurrentTransactionNestLevel();
	LsLockRestore **link = &ls_restores;

	while (*link != NULL)
	{
		LsLockRestore *r = *link;

		if (r->nest_level < level)
		{
			link = &r->next;
			continue;
		}
		if (commit)
		{
			r->nest_level = level - 1;
			link = &r->next;
			continue;
		}
		ls_restore_lock(r);
		*link = r->next;
		pfree(r);
	}
}

void
ls_locks_at_xact_end(void)
{
	/* the memory goes with TopTransactionContext */
	ls_restores = NULL;
}

/* hint bits may differ between two reads of the same xmax */
static bool
ls_xmax_same(uint64 a, uint64 b)
{
	const uint64 hints = ((uint64) (LS_HV_XMAX_COMMITTED | LS_HV_XMAX_ABORTED)) << 32;

	return (a & ~hints) == (b & ~hints);
}

/* Has v an older version that was not aborted? */
static bool
ls_has_older_valid(ls_hot_version *v)
{
	for (ls_hot_version *o = ls_hot_version_older(v); o != NULL; o = ls_hot_version_older(o))
	{
		LsVersionInfo info;

		ls_version_info(o, &info);
		if (ls_xmin_status(o, &info) != LS_XS_ABORTED)
			return true;
	}
	return false;
}

/*
 * Examine row for a write by this transaction at command cid, like heap's
 * HeapTupleSatisfiesUpdate on the version the caller refers to.  Caller
 * inside an epoch, no latch held.
 *
 * rule_snapshot (optional): the caller can only have seen versions visible
 * to this snapshot; a current version inserted by an in-place update that
 * the snapshot does not see means "updated since" (TM_Updated), unless we
 * already hold a lock on it (EvalPlanQual locked it for us).
 */
static TM_Result
ls_check_row(ls_hot_row *row, uint64 rowid, CommandId cid,
			 Snapshot rule_snapshot, Snapshot crosscheck, bool for_lock,
			 LsRowCheck *chk, TM_FailureData *tmfd)
{
	ls_hot_version *v;
	ls_hot_version *target = NULL;
	LsVersionInfo info;
	LsXidStatus xs = LS_XS_ABORTED;
	TransactionId skipped_xid = InvalidTransactionId;
	int			n = 0;
	int			restarts = 0;

restart:
	target = NULL;
	xs = LS_XS_ABORTED;
	skipped_xid = InvalidTransactionId;
	n = 0;
	memset(chk, 0, sizeof(*chk));
	ls_rowid_to_tid(rowid, &tmfd->ctid);
	tmfd->xmax = InvalidTransactionId;
	tmfd->cmax = InvalidCommandId;

	chk->newest = ls_hot_row_newest(row);
	if (chk->newest == NULL)
		return TM_Deleted;		/* removed: dead to every snapshot */

	for (v = chk->newest; v != NULL && n < 1000000; v = ls_hot_version_older(v), n++)
	{
		ls_version_info(v, &info);
		xs = ls_xmin_status(v, &info);
		if (xs == LS_XS_COMMITTED || xs == LS_XS_CURRENT)
		{
			target = v;
			break;
		}
		/* aborted: skip; in progress elsewhere: the older one carries its xmax */
		skipped_xid = (xs == LS_XS_IN_PROGRESS) ? info.xmin : InvalidTransactionId;
	}
	if (target == NULL)
		return TM_Invisible;
	/* reported with every result: heap's callers read the tuple on failure too */
	chk->target = target;

	if (xs == LS_XS_CURRENT && info.cmin >= cid)
	{
		/*
		 * Created by this command or a later one: an update of ours, or a
		 * fresh insert.  UPDATE/DELETE and scan-driven row locks (a cursor
		 * FOR UPDATE fetched after a later UPDATE) got the TID from a scan
		 * that saw the older version (heap: that version's cmax is ours:
		 * TM_SelfModified, the row is skipped).  A row lock at the very
		 * command that created the version comes from ON CONFLICT's index
		 * probe, which names the newest version (heap: TM_Invisible, "cannot
		 * affect row a second time").  Tables with BEFORE/AFTER row triggers
		 * never update in place, so GetTupleForTrigger does not get here.
		 */
		if (!(for_lock && info.cmin == cid) && ls_has_older_valid(target))
		{
			tmfd->xmax = info.xmin;
			tmfd->cmax = info.cmin;
			return TM_SelfModified;
		}
		return TM_Invisible;
	}

	/*
	 * The version above target was inserted by a transaction we saw running;
	 * target's xmax is that same transaction.  Judge it as running too, even
	 * if it finished since: otherwise a commit between the two looks would
	 * make an in-place update look like a delete.  Waiting on it returns at
	 * once and the next look sees a consistent chain.
	 */
	if (TransactionIdIsValid(skipped_xid) && info.xmax == skipped_xid)
	{
		chk->wait_xid = info.xmax;
		tmfd->xmax = info.xmax;
		return TM_BeingModified;
	}

	switch (ls_xmax_status(target, &info))
	{
		case LS_XS_ABORTED:
			break;
		case LS_XS_CURRENT:
			if (ls_xmax_is_lock_only(&info))
			{
				chk->own_lock = true;
				chk->held_mode = ls_lock_mode_of(info.xmax_flags);
				break;
			}
			tmfd->xmax = info.xmax;
			if (info.cmax >= cid)
			{
				tmfd->cmax = info.cmax;
				return TM_SelfModified;
			}
			return TM_Invisible;
		case LS_XS_IN_PROGRESS:
			chk->wait_xid = info.xmax;
			tmfd->xmax = info.xmax;
			return TM_BeingModified;
		case LS_XS_COMMITTED:
			if (ls_xmax_is_lock_only(&info))
				break;			/* the locker is gone */
			tmfd->xmax = info.xmax;
			if (info.xmax_flags & LS_HV_XMAX_MOVED)
			{
				if (info.next_rowid == LS_ROWID_INVALID)
					ItemPointerSetMovedPartitions(&tmfd->ctid);
				else
					ls_rowid_to_tid(info.next_rowid, &tmfd->ctid);
				return TM_Updated;
			}

			/*
			 * A delete, or an in-place update that installed its version
			 * and committed after we read the newest pointer: look again.
			 */
			if (ls_hot_row_newest(row) != chk->newest && restarts++ < 1000)
				goto restart;
			return TM_Deleted;
	}

	if (rule_snapshot != NULL && xs == LS_XS_COMMITTED && !chk->own_lock &&
		!(info.xmin_flags & LS_HV_XMIN_FROZEN) &&
		ls_has_older_valid(target) &&
		XidInMVCCSnapshot(info.xmin, rule_snapshot))
	{
		tmfd->xmax = info.xmin;
		return TM_Updated;
	}
	if (crosscheck != InvalidSnapshot && !ls_version_visible(target, crosscheck))
	{
		tmfd->xmax = info.xmin;
		return TM_Updated;
	}

	chk->xmax_word = ls_hv_word(info.xmax, info.xmax_flags);
	return TM_Ok;
}

/* Wait for xid per policy; false when the caller must give up (skip). */
static bool
ls_wait_for(Relation rel, ItemPointer tid, TransactionId xid, LockTupleMode mode,
			LsWaitMode policy, LOCKMODE *tuplock)
{
	switch (policy)
	{
		case LS_WAIT_BLOCK:
			if (*tuplock == NoLock)
			{
				LockTuple(rel, tid, ls_tuplock_mode[mode]);
				*tuplock = ls_tuplock_mode[mode];
			}
			XactLockTableWait(xid, rel, tid, XLTW_Lock);
			return true;
		case LS_WAIT_SKIP:
		case LS_WAIT_ERROR:
			if (*tuplock == NoLock)
			{
				if (!ConditionalLockTuple(rel, tid, ls_tuplock_mode[mode]))
					goto busy;
				*tuplock = ls_tuplock_mode[mode];
			}
			if (!ConditionalXactLockTableWait(xid))
				goto busy;
			return true;
		case LS_WAIT_NONE:
			return false;
	}
busy:
	if (policy == LS_WAIT_ERROR)
		ereport(ERROR,
				(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
				 errmsg("could not obtain lock on row in relation \"%s\"",
						RelationGetRelationName(rel))));
	return false;
}

/*
 * Lock the current version of rowid for this transaction in mode.  On
 * TM_Ok the version is ours (xmax = our lock or a stronger own lock); it is
 * stored in slot and/or copied to *oldtup when asked.  *newer is set when
 * the locked version is not visible to snapshot (EvalPlanQual must run).
 */
static TM_Result
ls_acquire(Relation rel, ls_hot_table *tbl, uint64 rowid, CommandId cid,
		   TransactionId xid, Snapshot rule_snapshot, Snapshot crosscheck,
		   bool for_lock,
		   LockTupleMode mode, LsWaitMode policy, LOCKMODE *tuplock,
		   TM_FailureData *tmfd, TupleTableSlot *slot, HeapTuple *oldtup,
		   Snapshot snapshot, bool *newer)
{
	ItemPointerData tid;

	ls_rowid_to_tid(rowid, &tid);
	for (;;)
	{
		ls_hot_row *row;
		LsRowCheck chk;
		TM_Result	res;

		CHECK_FOR_INTERRUPTS();
		ls_epoch_enter();
		row = ls_hot_row_get(tbl, rowid);
		if (row == NULL)
		{
			ls_epoch_exit();
			tmfd->ctid = tid;
			tmfd->xmax = InvalidTransactionId;
			tmfd->cmax = InvalidCommandId;
			return TM_Deleted;
		}
		res = ls_check_row(row, rowid, cid, rule_snapshot, crosscheck, for_lock,
						   &chk, tmfd);
		if (res == TM_Ok)
		{
			bool		take = !(chk.own_lock && chk.held_mode >= mode);

			if (take)
			{
				LockTupleMode newmode = chk.own_lock ? Max(chk.held_mode, mode) : mode;
				bool		valid;

				ls_row_lock(row);
				valid = !ls_hot_row_is_removed(row) &&
					ls_hot_row_newest(row) == chk.newest &&
					ls_xmax_same(atomic_load(&chk.target->xmax_word), chk.xmax_word);
				if (valid)
					atomic_store(&chk.target->xmax_word,
								 ls_hv_word(xid, ls_lock_flags(newmode)));
				ls_row_unlock(row);
				if (valid && chk.own_lock)
					ls_remember_lock(tbl, rowid, xid, chk.xmax_word);
				if (!valid)
				{
					ls_epoch_exit();
					continue;	/* somebody changed the row: look again */
				}
			}
			/*
			 * A version we had locked already is the one the caller means
			 * (ON CONFLICT locked it, then GetTupleForTrigger locks again;
			 * EvalPlanQual locked it, then the re-run update locks again):
			 * no traversal, as heap finds its TID current.
			 */
			if (newer != NULL && snapshot != NULL && IsMVCCSnapshot(snapshot))
				*newer = !chk.own_lock && !ls_version_visible(chk.target, snapshot);
			if (slot != NULL)
				ls_store_version(chk.target, rel, rowid, slot);
			if (oldtup != NULL)
			{
				Size		size = ls_heaptuple_size(chk.target);

				*oldtup = ls_version_to_heaptuple(chk.target, rel, rowid,
												  palloc(size), size);
			}
			ls_epoch_exit();
			return TM_Ok;
		}
		if (res != TM_BeingModified)
		{
			if (slot != NULL && chk.target != NULL)
				ls_store_version(chk.target, rel, rowid, slot);
			ls_epoch_exit();
			return res;
		}
		ls_epoch_exit();
		if (!ls_wait_for(rel, &tid, chk.wait_xid, mode, policy, tuplock))
			return policy == LS_WAIT_NONE ? TM_BeingModified : TM_WouldBlock;
	}
}

/*
 * Under the latch of rowid's row: turn our lock on target into the final
 * xmax (update/delete) and optionally install a new version.  Our lock
 * guarantees nobody else changed target.
 */
static void
ls_finish_write(Relation rel, ls_hot_table *tbl, uint64 rowid,
				ls_hot_version *target_hint, uint64 xmax_word, CommandId cid,
				uint64 next_rowid, ls_hot_version *install)
{
	ls_hot_row *row;
	ls_hot_version *target = NULL;
	uint64		old_word = 0;
	int			n = 0;

	ls_epoch_enter();
	row = ls_hot_row_get(tbl, rowid);
	if (row != NULL)
	{
		ls_row_lock(row);
		/* the current version is the newest not-aborted one */
		for (ls_hot_version *v = ls_hot_row_newest(row); v != NULL && n < 1000000;
			 v = ls_hot_version_older(v), n++)
		{
			LsVersionInfo info;

			ls_version_info(v, &info);
			if (ls_hv_xid(atomic_load(&v->xmax_word)) != InvalidTransactionId &&
				TransactionIdIsCurrentTransactionId(info.xmax) &&
				ls_xmax_is_lock_only(&info))
			{
				target = v;
				break;
			}
		}
		if (target != NULL)
		{
			old_word = atomic_load(&target->xmax_word);
			atomic_store(&target->cmax, (uint32) cid);
			atomic_store(&target->next_rowid, next_rowid);
			atomic_store(&target->xmax_word, xmax_word);
			if (install != NULL)
				ls_hot_row_install(ls_ctx(), tbl, row, install);
		}
		ls_row_unlock(row);
	}
	ls_epoch_exit();
	if (target == NULL)
		elog(ERROR, "leanstore: locked version of row " UINT64_FORMAT " in \"%s\" vanished",
			 rowid, RelationGetRelationName(rel));
	/* an enclosing transaction's lock we just replaced */
	ls_remember_lock(tbl, rowid, ls_hv_xid(xmax_word), old_word);
}

/* ------------------------------------------------------------------------
 * INSERT
 * ------------------------------------------------------------------------ */

static HeapTuple
ls_toast_if_needed(Relation rel, HeapTuple tup, HeapTuple oldtup, int options)
{
	if (rel->rd_rel->relkind != RELKIND_TOASTVALUE &&
		(HeapTupleHasExternal(tup) || tup->t_len > TOAST_TUPLE_THRESHOLD ||
		 (oldtup != NULL && HeapTupleHasExternal(oldtup))))
		return heap_toast_insert_or_update(rel, tup, oldtup, options);
	return tup;
}

static void
ls_insert_one(Relation rel, ls_hot_table *tbl, TupleTableSlot *slot,
			  CommandId cid, int options, TransactionId xid, uint64 rowid,
			  bool speculative, uint32 token)
{
	bool		shouldFree;
	HeapTuple	tup = ExecFetchSlotHeapTuple(slot, true, &shouldFree);
	HeapTuple	stored;
	ls_hot_version *v;
	ls_hot_row *row;
	ls_status	st;
	uint32		xmin_flags = 0;

	tup->t_tableOid = RelationGetRelid(rel);
	stored = ls_toast_if_needed(rel, tup, NULL, options);
	v = ls_version_from_heaptuple(rel, stored);
	if (options & TABLE_INSERT_FROZEN)
		xmin_flags = LS_HV_XMIN_COMMITTED | LS_HV_XMIN_FROZEN;
	atomic_store(&v->xmin_word, ls_hv_word(xid, xmin_flags));
	atomic_store(&v->xmax_word, 0);
	v->cmin = cid;
	if (speculative)
	{
		atomic_fetch_or(&v->user_flags, LS_UF_SPECULATIVE);
		atomic_store(&v->next_rowid, (uint64) token);
	}

	ls_epoch_enter();
	st = ls_hot_row_insert(ls_ctx(), tbl, rowid, LS_ORIGIN_INSERTED, v, &row);
	ls_epoch_exit();
	if (st != LS_OK)
	{
		ls_hot_version_free(ls_ctx(), v);
		ls_report_status(st, rel, "insert into");
	}

	ls_rowid_to_tid(rowid, &tup->t_self);
	slot->tts_tableOid = RelationGetRelid(rel);
	slot->tts_tid = tup->t_self;
	if (stored != tup)
		heap_freetuple(stored);
	if (shouldFree)
		heap_freetuple(tup);
}

static void
ls_insert_common(Relation rel, TupleTableSlot *slot, CommandId cid,
				 int options, bool speculative, uint32 token)
{
	ls_hot_table *tbl = ls_table_for(rel);
	TransactionId xid = GetCurrentTransactionId();
	uint64		rowid;

	CheckForSerializableConflictIn(rel, NULL, InvalidBlockNumber);
	rowid = ls_hot_table_reserve_rowids(tbl, 1);
	ls_insert_one(rel, tbl, slot, cid, options, xid, rowid, speculative, token);
	pgstat_count_heap_insert(rel, 1);
	ls_mark_written();
}

void
ls_tuple_insert(Relation rel, TupleTableSlot *slot, CommandId cid,
				int options, struct BulkInsertStateData *bistate)
{
	ls_insert_common(rel, slot, cid, options, false, 0);
}

void
ls_tuple_insert_speculative(Relation rel, TupleTableSlot *slot, CommandId cid,
							int options, struct BulkInsertStateData *bistate,
							uint32 specToken)
{
	ls_insert_common(rel, slot, cid, options, true, specToken);
}

/*
 * Confirm a speculative insert (clear the token), or kill it: the version
 * becomes invisible to everyone at once and the rowid turns DEAD (index
 * entries may already point at it), as heap_abort_speculative does.
 */
void
ls_tuple_complete_speculative(Relation rel, TupleTableSlot *slot,
							  uint32 specToken, bool succeeded)
{
	ls_hot_table *tbl = ls_table_for(rel);
	uint64		rowid = ls_tid_to_rowid(&slot->tts_tid);
	HeapTuple	stored = NULL;
	ls_hot_row *row;

	if (rowid == LS_ROWID_INVALID)
		elog(ERROR, "leanstore: invalid TID in speculative insertion");

	ls_epoch_enter();
	row = ls_hot_row_get(tbl, rowid);
	if (row != NULL)
	{
		ls_hot_version *v;

		ls_row_lock(row);
		v = ls_hot_row_newest(row);
		if (v != NULL && (atomic_load(&v->user_flags) & LS_UF_SPECULATIVE))
		{
			/* readers load user_flags atomically (ls_version_info) */
			atomic_fetch_and(&v->user_flags, (uint16) ~LS_UF_SPECULATIVE);
			atomic_store(&v->next_rowid, LS_ROWID_INVALID);
			if (!succeeded)
				atomic_fetch_or(&v->xmin_word, ((uint64) LS_HV_XMIN_ABORTED) << 32);
		}
		if (!succeeded && v != NULL)
		{
			Size		size;

			ls_row_forget_latch();
			ls_hot_row_remove(ls_ctx(), tbl, row, true);

			/*
			 * Still readable inside our epoch; copied out (outside the
			 * latch) because its TOAST values must go too.
			 */
			size = ls_heaptuple_size(v);
			stored = ls_version_to_heaptuple(v, rel, rowid, palloc(size), size);
		}
		else
			ls_row_unlock(row);
	}
	ls_epoch_exit();

	if (stored != NULL && HeapTupleHasExternal(stored))
		heap_toast_delete(rel, stored, true);
}

void
ls_multi_insert(Relation rel, TupleTableSlot **slots, int nslots,
				CommandId cid, int options, struct BulkInsertStateData *bistate)
{
	ls_hot_table *tbl = ls_table_for(rel);
	TransactionId xid = GetCurrentTransactionId();
	uint64		first;

	if (nslots <= 0)
		return;
	CheckForSerializableConflictIn(rel, NULL, InvalidBlockNumber);
	first = ls_hot_table_reserve_rowids(tbl, (uint64) nslots);
	for (int i = 0; i < nslots; i++)
	{
		CHECK_FOR_INTERRUPTS();
		ls_insert_one(rel, tbl, slots[i], cid, options, xid, first + i, false, 0);
	}
	pgstat_count_heap_insert(rel, nslots);
	ls_mark_written();
}

/* ------------------------------------------------------------------------
 * DELETE
 * ------------------------------------------------------------------------ */

TM_Result
ls_tuple_delete(Relation rel, ItemPointer tid, CommandId cid,
				Snapshot snapshot, Snapshot crosscheck, bool wait,
				TM_FailureData *tmfd, bool changingPart)
{
	ls_hot_table *tbl = ls_table_for(rel);
	uint64		rowid = ls_tid_to_rowid(tid);
	TransactionId xid = GetCurrentTransactionId();
	LOCKMODE	tuplock = NoLock;	/* heavyweight tuple lock held */
	HeapTuple	oldtup = NULL;
	TM_Result	res;
	uint32		flags = LS_HV_XMAX_KEYS_UPDATED;

	if (rowid == LS_ROWID_INVALID)
		elog(ERROR, "leanstore: invalid TID in DELETE");
	tmfd->traversed = false;
	CheckForSerializableConflictIn(rel, tid, ItemPointerGetBlockNumber(tid));

	res = ls_acquire(rel, tbl, rowid, cid, xid,
					 (snapshot && IsMVCCSnapshot(snapshot)) ? snapshot : NULL,
					 crosscheck, false, LockTupleExclusive,
					 wait ? LS_WAIT_BLOCK : LS_WAIT_NONE, &tuplock,
					 tmfd, NULL, &oldtup, NULL, NULL);
	if (res == TM_Ok)
	{
		if (changingPart)
			flags |= LS_HV_XMAX_MOVED;
		ls_finish_write(rel, tbl, rowid, NULL, ls_hv_word(xid, flags), cid,
						LS_ROWID_INVALID, NULL);
		if (HeapTupleHasExternal(oldtup))
			heap_toast_delete(rel, oldtup, false);
		pgstat_count_heap_delete(rel);
		ls_mark_written();
	}
	if (oldtup != NULL)
		pfree(oldtup);
	if (tuplock != NoLock)
		UnlockTuple(rel, tid, tuplock);
	return res;
}

/* ------------------------------------------------------------------------
 * UPDATE
 * ------------------------------------------------------------------------ */

/* The attributes among interesting whose binary value differs. */
static Bitmapset *
ls_modified_attrs(Relation rel, Bitmapset *interesting, HeapTuple oldtup,
				  HeapTuple newtup)
{
	TupleDesc	desc = RelationGetDescr(rel);
	Bitmapset  *modified = NULL;
	int			idx = -1;

	while ((idx = bms_next_member(interesting, idx)) >= 0)
	{
		AttrNumber	attnum = idx + FirstLowInvalidHeapAttributeNumber;
		Datum		o,
					n;
		bool		onull,
					nnull;
		Form_pg_attribute att;

		if (attnum <= 0 || attnum > desc->natts)
		{
			/* whole-row or system column references: assume changed */
			if (attnum != TableOidAttributeNumber)
				modified = bms_add_member(modified, idx);
			continue;
		}
		o = heap_getattr(oldtup, attnum, desc, &onull);
		n = heap_getattr(newtup, attnum, desc, &nnull);
		if (onull != nnull)
		{
			modified = bms_add_member(modified, idx);
			continue;
		}
		if (onull)
			continue;
		att = TupleDescAttr(desc, attnum - 1);
		if (!datumIsEqual(o, n, att->attbyval, att->attlen))
			modified = bms_add_member(modified, idx);
	}
	return modified;
}

/* Row triggers that fetch rows by TID around an update (see top). */
static bool
ls_has_row_triggers(Relation rel)
{
	TriggerDesc *td = rel->trigdesc;

	return td != NULL &&
		(td->trig_insert_after_row || td->trig_update_after_row ||
		 td->trig_delete_after_row || td->trig_update_before_row ||
		 td->trig_delete_before_row ||
		 td->trig_update_old_table || td->trig_update_new_table);
}

TM_Result
ls_tuple_update(Relation rel, ItemPointer otid, TupleTableSlot *slot,
				CommandId cid, Snapshot snapshot, Snapshot crosscheck,
				bool wait, TM_FailureData *tmfd, LockTupleMode *lockmode,
				bool *update_indexes)
{
	ls_hot_table *tbl = ls_table_for(rel);
	uint64		rowid = ls_tid_to_rowid(otid);
	TransactionId xid = GetCurrentTransactionId();
	LOCKMODE	tuplock = NoLock;	/* heavyweight tuple lock held */
	HeapTuple	oldtup = NULL;
	HeapTuple	newtup;
	HeapTuple	stored;
	bool		shouldFree;
	Bitmapset  *hot_attrs;
	Bitmapset  *key_attrs;
	Bitmapset  *interesting;
	Bitmapset  *modified;
	bool		key_changed;
	bool		in_place;
	ls_hot_version *v;
	uint64		newrowid;
	TM_Result	res;

	if (rowid == LS_ROWID_INVALID)
		elog(ERROR, "leanstore: invalid TID in UPDATE");
	tmfd->traversed = false;
	*update_indexes = false;
	*lockmode = LockTupleNoKeyExclusive;
	CheckForSerializableConflictIn(rel, otid, ItemPointerGetBlockNumber(otid));

	res = ls_acquire(rel, tbl, rowid, cid, xid,
					 (snapshot && IsMVCCSnapshot(snapshot)) ? snapshot : NULL,
					 crosscheck, false, LockTupleNoKeyExclusive,
					 wait ? LS_WAIT_BLOCK : LS_WAIT_NONE, &tuplock,
					 tmfd, NULL, &oldtup, NULL, NULL);
	if (res != TM_Ok)
		goto done;

	newtup = ExecFetchSlotHeapTuple(slot, true, &shouldFree);
	newtup->t_tableOid = RelationGetRelid(rel);

	hot_attrs = RelationGetIndexAttrBitmap(rel, INDEX_ATTR_BITMAP_ALL);
	key_attrs = RelationGetIndexAttrBitmap(rel, INDEX_ATTR_BITMAP_KEY);
	interesting = bms_union(hot_attrs, key_attrs);
	modified = ls_modified_attrs(rel, interesting, oldtup, newtup);
	key_changed = bms_overlap(modified, key_attrs);
	in_place = !bms_overlap(modified, hot_attrs) && !ls_has_row_triggers(rel);

	if (key_changed)
	{
		/* upgrade our lock: FOR KEY SHARE lockers must wait for us */
		*lockmode = LockTupleExclusive;
		res = ls_acquire(rel, tbl, rowid, cid, xid, NULL, NULL, false,
						 LockTupleExclusive, LS_WAIT_BLOCK, &tuplock,
						 tmfd, NULL, NULL, NULL, NULL);
		if (res != TM_Ok)
			elog(ERROR, "leanstore: could not upgrade own row lock (%d)", (int) res);
	}

	stored = ls_toast_if_needed(rel, newtup, oldtup, 0);
	v = ls_version_from_heaptuple(rel, stored);
	atomic_store(&v->xmin_word, ls_hv_word(xid, 0));
	v->cmin = cid;

	if (in_place)
	{
		newrowid = rowid;
		ls_finish_write(rel, tbl, rowid, NULL,
						ls_hv_word(xid, key_changed ? LS_HV_XMAX_KEYS_UPDATED : 0),
						cid, LS_ROWID_INVALID, v);
	}
	else
	{
		ls_hot_row *newrow;
		ls_status	st;

		newrowid = ls_hot_table_reserve_rowids(tbl, 1);
		ls_epoch_enter();
		st = ls_hot_row_insert(ls_ctx(), tbl, newrowid, LS_ORIGIN_INSERTED, v, &newrow);
		ls_epoch_exit();
		if (st != LS_OK)
		{
			ls_hot_version_free(ls_ctx(), v);
			ls_report_status(st, rel, "update a row of");
		}
		ls_finish_write(rel, tbl, rowid, NULL,
						ls_hv_word(xid, LS_HV_XMAX_MOVED |
								   (key_changed ? LS_HV_XMAX_KEYS_UPDATED : 0)),
						cid, newrowid, NULL);
	}

	ls_rowid_to_tid(newrowid, &newtup->t_self);
	slot->tts_tableOid = RelationGetRelid(rel);
	slot->tts_tid = newtup->t_self;
	*update_indexes = !in_place;
	pgstat_count_heap_update(rel, in_place);
	ls_mark_written();

	if (stored != newtup)
		heap_freetuple(stored);
	if (shouldFree)
		heap_freetuple(newtup);
	bms_free(interesting);
	bms_free(hot_attrs);
	bms_free(key_attrs);
	bms_free(modified);

	/* keep chains short: drop versions nobody can see any more */
	if (in_place)
	{
		ls_hot_row *row;

		ls_epoch_enter();
		row = ls_hot_row_get(tbl, rowid);
		if (row != NULL)
			ls_prune_row(rel, tbl, row, GlobalVisTestFor(rel));
		ls_epoch_exit();
	}

done:
	if (oldtup != NULL)
		pfree(oldtup);
	if (tuplock != NoLock)
		UnlockTuple(rel, otid, tuplock);
	return res;
}

/* ------------------------------------------------------------------------
 * Row locks (SELECT FOR ..., EvalPlanQual, FK checks, ON CONFLICT)
 * ------------------------------------------------------------------------ */

TM_Result
ls_tuple_lock(Relation rel, ItemPointer tid, Snapshot snapshot,
			  TupleTableSlot *slot, CommandId cid, LockTupleMode mode,
			  LockWaitPolicy wait_policy, uint8 flags, TM_FailureData *tmfd)
{
	ls_hot_table *tbl = ls_table_for(rel);
	uint64		rowid = ls_tid_to_rowid(tid);
	TransactionId xid = GetCurrentTransactionId();
	bool		follow = (flags & TUPLE_LOCK_FLAG_FIND_LAST_VERSION) != 0;
	Snapshot	rule = NULL;
	LOCKMODE	tuplock = NoLock;	/* heavyweight tuple lock held */
	ItemPointerData locked_tid = *tid;
	LsWaitMode	policy;
	TM_Result	res;
	int			hops = 0;

	if (rowid == LS_ROWID_INVALID)
		elog(ERROR, "leanstore: invalid TID in row lock");
	switch (wait_policy)
	{
		case LockWaitSkip:
			policy = LS_WAIT_SKIP;
			break;
		case LockWaitError:
			policy = LS_WAIT_ERROR;
			break;
		default:
			policy = LS_WAIT_BLOCK;
			break;
	}
	if (!follow && snapshot != NULL && IsMVCCSnapshot(snapshot) &&
		IsolationUsesXactSnapshot())
		rule = snapshot;
	tmfd->traversed = false;

	for (;;)
	{
		bool		newer = false;

		res = ls_acquire(rel, tbl, rowid, cid, xid, rule, NULL, true, mode, policy,
						 &tuplock, tmfd, slot, NULL, snapshot, &newer);
		if (res == TM_Ok && follow && newer)
			tmfd->traversed = true;
		if (res == TM_Updated && follow &&
			ItemPointerIndicatesMovedPartitions(&tmfd->ctid))
		{
			if (tuplock != NoLock)
				UnlockTuple(rel, &locked_tid, tuplock);
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("tuple to be locked was already moved to another partition due to concurrent update")));
		}
		if (res == TM_Updated && follow)
		{
			uint64		next = ls_tid_to_rowid(&tmfd->ctid);

			if (next != rowid && next != LS_ROWID_INVALID && hops++ < 1000000)
			{
				if (tuplock != NoLock)
				{
					UnlockTuple(rel, &locked_tid, tuplock);
					tuplock = NoLock;
				}
				rowid = next;
				ls_rowid_to_tid(rowid, &locked_tid);
				tmfd->traversed = true;
				continue;
			}
		}
		break;
	}
	if (tuplock != NoLock)
		UnlockTuple(rel, &locked_tid, tuplock);
	if (res == TM_Ok)
	{
		*tid = locked_tid;
		ls_mark_written();
	}
	return res;
}
