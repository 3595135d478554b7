/*
 * visibility.c - MVCC decisions over hot-tier version chains.
 *
 * The core stores versions and never interprets their MVCC words; this file
 * does, mirroring the rules heap applies to tuple headers
 * (heapam_visibility.c), with three differences:
 *  - cmin and cmax are separate fields, so no combo command ids exist;
 *  - a row is a chain newest -> older of versions that share one rowid, and
 *    at most one version of a chain is visible to an MVCC snapshot, so a
 *    lookup walks the chain and returns the first visible version;
 *  - hint bits are set with atomic operations on shared words: xmin hints
 *    with an OR (the xid part of xmin_word never changes), xmax hints with a
 *    compare-and-swap against the word that was examined, because a writer
 *    may replace xmax_word concurrently (under the row latch).
 *
 * Callers are inside an epoch whenever they pass version pointers.
 */
#include "postgres.h"

#include "access/multixact.h"
#include "access/subtrans.h"
#include "access/transam.h"
#include "access/xact.h"
#include "storage/predicate.h"
#include "storage/procarray.h"
#include "utils/snapmgr.h"

#include "ls_pg.h"

void
ls_version_info(ls_hot_version *v, LsVersionInfo *info)
{
	uint64		xmin_word = atomic_load_explicit(&v->xmin_word, memory_order_acquire);
	uint64		xmax_word = atomic_load_explicit(&v->xmax_word, memory_order_acquire);

	Assert(ls_in_epoch());
	info->xmin = ls_hv_xid(xmin_word);
	info->xmin_flags = ls_hv_flags(xmin_word);
	info->xmax = ls_hv_xid(xmax_word);
	info->xmax_flags = ls_hv_flags(xmax_word);
	info->xmax_raw = xmax_word;
	info->xmax_multi = InvalidMultiXactId;
	if ((info->xmax_flags & LS_HV_XMAX_IS_MULTI) && info->xmax != InvalidTransactionId)
	{
		info->xmax_multi = info->xmax;
		if (!(info->xmax_flags & LS_HV_XMAX_LOCK_ONLY))
			info->xmax = ls_multi_update_xid(info->xmax_multi);
	}
	info->cmin = v->cmin;
	info->cmax = atomic_load_explicit(&v->cmax, memory_order_acquire);
	info->next_rowid = atomic_load_explicit(&v->next_rowid, memory_order_acquire);
	/* changed under the row latch after install (speculative insert end) */
	info->user_flags = atomic_load_explicit(&v->user_flags, memory_order_acquire);
}

/* The last inserter this backend saw committed (see ls_pg.h). */
TransactionId ls_xmin_seen_committed = InvalidTransactionId;

/*
 * Hints.  An aborted hint is left off, and false returned (the caller's
 * answer stands for a reader; VACUUM's must count the xid as running),
 * while the xid belongs to a failed log-only commit whose abort record is
 * not durable yet (log.c ls_xid_in_progress): a snapshot that does not see
 * the transaction decides so without asking whether it runs, and a hint
 * would outlive the moment in which writers must still wait for it.
 */
static bool
ls_hint_xmin(ls_hot_version *v, LsVersionInfo *info, uint32 flag)
{
	info->xmin_flags |= flag;
	if (flag == LS_HV_XMIN_ABORTED && ls_xid_in_doubt(info->xmin, NULL))
		return false;
	atomic_fetch_or_explicit(&v->xmin_word, (uint64) flag << 32,
							 memory_order_acq_rel);
	if (flag == LS_HV_XMIN_COMMITTED)
		ls_xmin_seen_committed = info->xmin;
	return true;
}

/*
 * The update member of a multixact (InvalidTransactionId when there is
 * none).  A read-only lookup (SLRU with a backend-local cache), like a clog
 * lookup.
 */
TransactionId
ls_multi_update_xid(MultiXactId multi)
{
	MultiXactMember *members;
	int			n = GetMultiXactIdMembers(multi, &members, false, false);
	TransactionId xid = InvalidTransactionId;

	for (int i = 0; i < n; i++)
	{
		if (ISUPDATE_from_mxstatus(members[i].status))
		{
			xid = members[i].xid;
			break;
		}
	}
	if (n > 0)
		pfree(members);
	return xid;
}

/*
 * Only when xmax_word still holds the word we looked at.  Multixact words
 * get no hints (their lockers are judged member by member, as heap does).
 */
static bool
ls_hint_xmax(ls_hot_version *v, LsVersionInfo *info, uint32 flag)
{
	uint64		expected = info->xmax_raw;

	if (flag == LS_HV_XMAX_ABORTED && ls_xid_in_doubt(info->xmax, NULL))
	{
		info->xmax_flags |= flag;
		return false;
	}
	if (!(info->xmax_flags & LS_HV_XMAX_IS_MULTI))
	{
		if (atomic_compare_exchange_strong_explicit(&v->xmax_word, &expected,
													expected | ((uint64) flag << 32),
													memory_order_acq_rel,
													memory_order_relaxed))
			info->xmax_raw = expected | ((uint64) flag << 32);
	}
	info->xmax_flags |= flag;
	return true;
}

bool
ls_xmax_is_lock_only(const LsVersionInfo *info)
{
	return (info->xmax_flags & LS_HV_XMAX_LOCK_ONLY) != 0;
}

static bool
ls_xmax_invalid(const LsVersionInfo *info)
{
	return info->xmax == InvalidTransactionId ||
		(info->xmax_flags & LS_HV_XMAX_ABORTED) != 0;
}

/*
 * A lock-only xmax whose holders are all gone, or an update whose updater
 * aborted (lockers may remain: the lock code judges them by members).
 */

/* Where the inserting transaction of v stands (resolving through clog). */
LsXidStatus
ls_xmin_status(ls_hot_version *v, LsVersionInfo *info)
{
	if (info->xmin_flags & (LS_HV_XMIN_FROZEN | LS_HV_XMIN_COMMITTED))
		return LS_XS_COMMITTED;
	if (info->xmin_flags & LS_HV_XMIN_ABORTED)
		return LS_XS_ABORTED;
	if (TransactionIdIsCurrentTransactionId(info->xmin))
		return LS_XS_CURRENT;
	if (ls_xid_in_progress(info->xmin))
		return LS_XS_IN_PROGRESS;
	if (TransactionIdDidCommit(info->xmin))
	{
		ls_hint_xmin(v, info, LS_HV_XMIN_COMMITTED);
		return LS_XS_COMMITTED;
	}
	ls_hint_xmin(v, info, LS_HV_XMIN_ABORTED);
	return LS_XS_ABORTED;
}

/* Same for the deleting/locking transaction (xmax must be set). */
LsXidStatus
ls_xmax_status(ls_hot_version *v, LsVersionInfo *info)
{
	if (info->xmax == InvalidTransactionId || (info->xmax_flags & LS_HV_XMAX_ABORTED))
		return LS_XS_ABORTED;
	if ((info->xmax_flags & LS_HV_XMAX_IS_MULTI) && ls_xmax_is_lock_only(info))
		return MultiXactIdIsRunning(info->xmax_multi, true) ?
			LS_XS_IN_PROGRESS : LS_XS_ABORTED;
	if (info->xmax_flags & LS_HV_XMAX_COMMITTED)
		return LS_XS_COMMITTED;
	if (TransactionIdIsCurrentTransactionId(info->xmax))
		return LS_XS_CURRENT;
	if (ls_xid_in_progress(info->xmax))
		return LS_XS_IN_PROGRESS;
	if (TransactionIdDidCommit(info->xmax))
	{
		ls_hint_xmax(v, info, LS_HV_XMAX_COMMITTED);
		return LS_XS_COMMITTED;
	}
	ls_hint_xmax(v, info, LS_HV_XMAX_ABORTED);
	return LS_XS_ABORTED;
}

/* xmin committed (resolving and hinting through clog when needed). */
bool
ls_xmin_committed(ls_hot_version *v, const LsVersionInfo *cinfo)
{
	LsVersionInfo *info = (LsVersionInfo *) cinfo;

	if (info->xmin_flags & (LS_HV_XMIN_FROZEN | LS_HV_XMIN_COMMITTED))
		return true;
	if (info->xmin_flags & LS_HV_XMIN_ABORTED)
		return false;
	if (TransactionIdIsCurrentTransactionId(info->xmin) ||
		ls_xid_in_progress(info->xmin))
		return false;
	if (TransactionIdDidCommit(info->xmin))
	{
		ls_hint_xmin(v, info, LS_HV_XMIN_COMMITTED);
		return true;
	}
	ls_hint_xmin(v, info, LS_HV_XMIN_ABORTED);
	return false;
}

/* xmin aborted (or the version was killed, e.g. a failed speculative insert). */
bool
ls_xmin_aborted(ls_hot_version *v, const LsVersionInfo *cinfo)
{
	LsVersionInfo *info = (LsVersionInfo *) cinfo;

	if (info->xmin_flags & (LS_HV_XMIN_FROZEN | LS_HV_XMIN_COMMITTED))
		return false;
	if (info->xmin_flags & LS_HV_XMIN_ABORTED)
		return true;
	if (TransactionIdIsCurrentTransactionId(info->xmin) ||
		ls_xid_in_progress(info->xmin))
		return false;
	if (TransactionIdDidCommit(info->xmin))
	{
		ls_hint_xmin(v, info, LS_HV_XMIN_COMMITTED);
		return false;
	}
	ls_hint_xmin(v, info, LS_HV_XMIN_ABORTED);
	return true;
}

/*
 * true when xmax is a committed delete/update (not a lock).  Sets hints.
 */
bool
ls_xmax_committed_update(ls_hot_version *v, LsVersionInfo *info)
{
	if (ls_xmax_invalid(info) || ls_xmax_is_lock_only(info))
		return false;
	if (info->xmax_flags & LS_HV_XMAX_COMMITTED)
		return true;
	if (TransactionIdIsCurrentTransactionId(info->xmax) ||
		ls_xid_in_progress(info->xmax))
		return false;
	if (TransactionIdDidCommit(info->xmax))
	{
		ls_hint_xmax(v, info, LS_HV_XMAX_COMMITTED);
		return true;
	}
	ls_hint_xmax(v, info, LS_HV_XMAX_ABORTED);
	return false;
}

/* ------------------------------------------------------------------------
 * Per snapshot type
 * ------------------------------------------------------------------------ */

static bool
ls_visible_mvcc(ls_hot_version *v, LsVersionInfo *info, Snapshot snapshot)
{
	if (!(info->xmin_flags & (LS_HV_XMIN_COMMITTED | LS_HV_XMIN_FROZEN)))
	{
		if (info->xmin_flags & LS_HV_XMIN_ABORTED)
			return false;
		if (TransactionIdIsCurrentTransactionId(info->xmin))
		{
			if (info->cmin >= snapshot->curcid)
				return false;	/* inserted after the scan started */
			if (ls_xmax_invalid(info) || ls_xmax_is_lock_only(info))
				return true;
			if (!TransactionIdIsCurrentTransactionId(info->xmax))
				return true;	/* deleting subtransaction aborted */
			return info->cmax >= snapshot->curcid;
		}
		if (XidInMVCCSnapshot(info->xmin, snapshot))
			return false;
		if (TransactionIdDidCommit(info->xmin))
			ls_hint_xmin(v, info, LS_HV_XMIN_COMMITTED);
		else
		{
			ls_hint_xmin(v, info, LS_HV_XMIN_ABORTED);
			return false;
		}
	}
	else if (!(info->xmin_flags & LS_HV_XMIN_FROZEN) &&
			 XidInMVCCSnapshot(info->xmin, snapshot))
		return false;			/* committed after the snapshot was taken */

	/* the inserter is visible; now the deleter */
	if (ls_xmax_invalid(info) || ls_xmax_is_lock_only(info))
		return true;
	if (!(info->xmax_flags & LS_HV_XMAX_COMMITTED))
	{
		if (TransactionIdIsCurrentTransactionId(info->xmax))
			return info->cmax >= snapshot->curcid;
		if (XidInMVCCSnapshot(info->xmax, snapshot))
			return true;
		if (!TransactionIdDidCommit(info->xmax))
		{
			ls_hint_xmax(v, info, LS_HV_XMAX_ABORTED);
			return true;
		}
		ls_hint_xmax(v, info, LS_HV_XMAX_COMMITTED);
	}
	else if (XidInMVCCSnapshot(info->xmax, snapshot))
		return true;
	return false;
}

/*
 * SnapshotSelf (dirty == NULL) and SnapshotDirty: own changes are visible
 * regardless of command id; for Dirty, other transactions' in-progress
 * inserts and deletes count as done-but-reported in snapshot->xmin/xmax.
 * Those are the xids whose locks a caller waits for: a subxid of a failed
 * log-only commit in doubt is reported as its top xid (ls_xid_wait_target;
 * the subxid's own lock is gone, and PostgreSQL no longer counts it as
 * running, so a wait for it returned at once and the unique check spun).
 */
static bool
ls_visible_self_dirty(ls_hot_version *v, LsVersionInfo *info, Snapshot dirty)
{
	if (dirty)
	{
		dirty->xmin = dirty->xmax = InvalidTransactionId;
		dirty->speculativeToken = 0;
	}

	if (!(info->xmin_flags & (LS_HV_XMIN_COMMITTED | LS_HV_XMIN_FROZEN)))
	{
		if (info->xmin_flags & LS_HV_XMIN_ABORTED)
			return false;
		if (TransactionIdIsCurrentTransactionId(info->xmin))
		{
			if (ls_xmax_invalid(info) || ls_xmax_is_lock_only(info))
				return true;
			if (!TransactionIdIsCurrentTransactionId(info->xmax))
				return true;
			return false;
		}
		if (ls_xid_in_progress(info->xmin))
		{
			if (dirty == NULL)
				return false;
			if (info->user_flags & LS_UF_SPECULATIVE)
				dirty->speculativeToken = (uint32) info->next_rowid;
			/* whose lock the caller waits for (nbtree's unique check) */
			dirty->xmin = ls_xid_wait_target(info->xmin);
			return true;
		}
		if (TransactionIdDidCommit(info->xmin))
			ls_hint_xmin(v, info, LS_HV_XMIN_COMMITTED);
		else
		{
			ls_hint_xmin(v, info, LS_HV_XMIN_ABORTED);
			return false;
		}
	}

	if (ls_xmax_invalid(info) || ls_xmax_is_lock_only(info))
		return true;
	if (info->xmax_flags & LS_HV_XMAX_COMMITTED)
		return false;
	if (TransactionIdIsCurrentTransactionId(info->xmax))
		return false;
	if (ls_xid_in_progress(info->xmax))
	{
		if (dirty != NULL)
			dirty->xmax = ls_xid_wait_target(info->xmax);
		return true;
	}
	if (!TransactionIdDidCommit(info->xmax))
	{
		ls_hint_xmax(v, info, LS_HV_XMAX_ABORTED);
		return true;
	}
	ls_hint_xmax(v, info, LS_HV_XMAX_COMMITTED);
	return false;
}

/* SnapshotToast: only an aborted inserter hides a version. */
static bool
ls_visible_toast(ls_hot_version *v, LsVersionInfo *info)
{
	return !ls_xmin_aborted(v, info);
}

LsVacuumState
ls_version_vacuum_state(ls_hot_version *v, GlobalVisState *vistest,
						TransactionId *dead_after)
{
	LsVersionInfo info;

	Assert(ls_in_epoch());
	ls_version_info(v, &info);
	*dead_after = InvalidTransactionId;

	if (!(info.xmin_flags & (LS_HV_XMIN_COMMITTED | LS_HV_XMIN_FROZEN)))
	{
		if (info.xmin_flags & LS_HV_XMIN_ABORTED)
			return LS_V_DEAD;
		if (TransactionIdIsCurrentTransactionId(info.xmin))
		{
			if (ls_xmax_invalid(&info) || ls_xmax_is_lock_only(&info))
				return LS_V_INSERT_IN_PROGRESS;
			if (TransactionIdIsCurrentTransactionId(info.xmax))
				return LS_V_DELETE_IN_PROGRESS;
			return LS_V_INSERT_IN_PROGRESS;
		}
		if (ls_xid_in_progress(info.xmin))
			return LS_V_INSERT_IN_PROGRESS;
		if (TransactionIdDidCommit(info.xmin))
			ls_hint_xmin(v, &info, LS_HV_XMIN_COMMITTED);
		else
		{
			/* no hint: a failed log-only commit in doubt (see the hints) */
			if (!ls_hint_xmin(v, &info, LS_HV_XMIN_ABORTED))
				return LS_V_INSERT_IN_PROGRESS;
			return LS_V_DEAD;
		}
	}

	if (ls_xmax_invalid(&info) || ls_xmax_is_lock_only(&info))
		return LS_V_LIVE;
	if (!(info.xmax_flags & LS_HV_XMAX_COMMITTED))
	{
		if (TransactionIdIsCurrentTransactionId(info.xmax) ||
			ls_xid_in_progress(info.xmax))
			return LS_V_DELETE_IN_PROGRESS;
		if (!TransactionIdDidCommit(info.xmax))
		{
			if (!ls_hint_xmax(v, &info, LS_HV_XMAX_ABORTED))
				return LS_V_DELETE_IN_PROGRESS;
			return LS_V_LIVE;
		}
		ls_hint_xmax(v, &info, LS_HV_XMAX_COMMITTED);
	}
	*dead_after = info.xmax;
	/*
	 * Removed, the version is gone for good after a crash (a checkpoint
	 * logs the rowid as dead, pack drops it): not before the deleter's
	 * commit record is durable (an asynchronous commit's may not be yet).
	 */
	if (vistest != NULL && GlobalVisTestIsRemovableXid(vistest, info.xmax) &&
		ls_xid_commit_durable(info.xmax))
		return LS_V_DEAD;
	return LS_V_RECENTLY_DEAD;
}

bool
ls_version_visible(ls_hot_version *v, Snapshot snapshot)
{
	LsVersionInfo info;
	TransactionId dead_after;

	Assert(ls_in_epoch());
	ls_version_info(v, &info);
	switch (snapshot->snapshot_type)
	{
		case SNAPSHOT_MVCC:
			return ls_visible_mvcc(v, &info, snapshot);
		case SNAPSHOT_SELF:
			return ls_visible_self_dirty(v, &info, NULL);
		case SNAPSHOT_DIRTY:
			return ls_visible_self_dirty(v, &info, snapshot);
		case SNAPSHOT_ANY:
			return true;
		case SNAPSHOT_TOAST:
			return ls_visible_toast(v, &info);
		case SNAPSHOT_NON_VACUUMABLE:
			return ls_version_vacuum_state(v, snapshot->vistest, &dead_after) != LS_V_DEAD;
		case SNAPSHOT_HISTORIC_MVCC:
			break;
	}
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("leanstore tables do not support historic MVCC snapshots (logical decoding)")));
	return false;
}

ls_hot_version *
ls_row_newest_valid(ls_hot_row *row)
{
	ls_hot_version *v = ls_hot_row_newest(row);
	int			n = 0;

	Assert(ls_in_epoch());
	while (v != NULL)
	{
		LsVersionInfo info;

		ls_version_info(v, &info);
		if (!ls_xmin_aborted(v, &info))
			return v;
		v = ls_chain_next(row, v, &n);
	}
	return NULL;
}

/*
 * Has v's inserter been seen to abort (hint set)?  After
 * ls_version_vacuum_state returned LS_V_DEAD this tells an aborted
 * inserter (the flag is set by then) from a committed deleter.
 */
bool
ls_version_xmin_now_aborted(ls_hot_version *v)
{
	return (ls_hv_flags(atomic_load(&v->xmin_word)) & LS_HV_XMIN_ABORTED) != 0;
}

/*
 * VACUUM's view of row as a whole: the state of its current version (the
 * newest one whose inserter did not abort), stored in *current (NULL when
 * every inserter aborted: LS_V_DEAD).
 *
 * Statuses are read one at a time without the row latch, so the inserter
 * of the version chosen as current may abort before that version's state
 * is judged (a subtransaction, or the whole transaction, rolling back an
 * update).  ls_version_vacuum_state then says LS_V_DEAD for it -- meaning
 * "this version never existed", not "the row was deleted": the versions
 * below it are the row again.  Judging the row dead there removed rows
 * and killed index entries of live rows.  So an aborted current version
 * sends the walk on below it; aborts are final and hinted, so each round
 * skips at least one more version and the loop ends.  Caller inside an
 * epoch; may consult clog (and sets hints).
 */
LsVacuumState
ls_row_vacuum_state(ls_hot_row *row, GlobalVisState *vistest,
					ls_hot_version **current, TransactionId *dead_after)
{
	Assert(ls_in_epoch());
	for (;;)
	{
		ls_hot_version *v = ls_row_newest_valid(row);
		LsVacuumState vs;

		*current = v;
		*dead_after = InvalidTransactionId;
		if (v == NULL)
			return LS_V_DEAD;
		vs = ls_version_vacuum_state(v, vistest, dead_after);
		if (vs != LS_V_DEAD || !ls_version_xmin_now_aborted(v))
			return vs;
	}
}

/*
 * Is row dead to every snapshot, now and later (heap's HeapTupleIsSurelyDead
 * applied to a whole HOT chain)?  True when every version's inserter
 * aborted, or the newest version that was not aborted was deleted or moved
 * away by a transaction that committed before vistest's horizon: older
 * versions were replaced by committed updates before it, so they are dead
 * too.  An index entry pointing at such a rowid can be killed.  Caller
 * inside an epoch; may consult clog (and sets hints).
 */
bool
ls_row_surely_dead(ls_hot_row *row, GlobalVisState *vistest)
{
	ls_hot_version *v;
	TransactionId dead_after;

	return ls_row_vacuum_state(row, vistest, &v, &dead_after) == LS_V_DEAD;
}

/* Does our transaction (or a live subtransaction) appear in v's xmax? */
static bool
ls_xmax_names_us(const LsVersionInfo *info)
{
	MultiXactMember *members;
	bool		ours = false;
	int			n;

	if (info->xmax == InvalidTransactionId ||
		(info->xmax_flags & LS_HV_XMAX_ABORTED))
		return false;
	if (!(info->xmax_flags & LS_HV_XMAX_IS_MULTI))
		return TransactionIdIsCurrentTransactionId(info->xmax);
	n = GetMultiXactIdMembers(info->xmax_multi, &members, false,
							  ls_xmax_is_lock_only(info));
	for (int i = 0; i < n && !ours; i++)
		ours = TransactionIdIsCurrentTransactionId(members[i].xid);
	if (n > 0)
		pfree(members);
	return ours;
}

/*
 * SnapshotAny for a row our transaction has not touched: the version the
 * active (query) snapshot sees, or NULL.  Heap's TID names the version the
 * caller's scan saw; ours names the row, and the scan saw the version its
 * snapshot sees.  EvalPlanQual fetches the rows of tables it does not lock
 * (ROW_MARK_REFERENCE) this way and must get those versions, not ones
 * committed since (the join is rechecked with them).
 */
static ls_hot_version *
ls_row_any_seen(ls_hot_row *row, ls_hot_version *newest_valid)
{
	Snapshot	snap;
	LsVersionInfo info;
	int			n = 0;

	if (!ActiveSnapshotSet())
		return NULL;
	snap = GetActiveSnapshot();
	if (snap->snapshot_type != SNAPSHOT_MVCC)
		return NULL;
	ls_version_info(newest_valid, &info);
	if (TransactionIdIsCurrentTransactionId(info.xmin) || ls_xmax_names_us(&info))
		return NULL;
	for (ls_hot_version *v = ls_hot_row_newest(row); v != NULL;
		 v = ls_chain_next(row, v, &n))
	{
		if (ls_version_visible(v, snap))
			return v;
	}
	return NULL;
}

/*
 * SnapshotAny: for a row our transaction has not touched, the version the
 * query's snapshot sees (ls_row_any_seen).  Otherwise, and when that
 * snapshot sees none, the newest version that was not aborted (the row's
 * current state: what callers fetching "any" version by TID after a lock or
 * a delete need: ExecUpdate re-fetches the row it just locked for
 * EvalPlanQual, and builds the new tuple from it) -- except when the
 * current command itself just updated the row in place: then the version
 * it replaced.  That is the one fetch by TID that
 * must name the old version of an in-place update: ExecARUpdateTriggers
 * capturing OLD TABLE rows for transition tables right after each update
 * (on partitions and children the capture is not visible in the table's
 * own trigger descriptor).
 */
static ls_hot_version *
ls_row_any_version(ls_hot_row *row)
{
	ls_hot_version *v = ls_row_newest_valid(row);
	ls_hot_version *seen;
	LsVersionInfo info;
	int			n = 0;

	Assert(ls_in_epoch());
	if (v == NULL)
		return NULL;
	seen = ls_row_any_seen(row, v);
	if (seen != NULL)
		return seen;

	/*
	 * A version another transaction is still inserting by an in-place
	 * update is nobody's "row by TID" yet: heap's TID names the version the
	 * caller's scan saw (ExecModifyTable fetches the old row by TID with
	 * SnapshotAny to build the new one).  Its older version is the current
	 * one.
	 */
	for (;;)
	{
		ls_hot_version *o;

		ls_version_info(v, &info);
		if (ls_xmin_status(v, &info) != LS_XS_IN_PROGRESS)
			break;
		for (o = ls_chain_next(row, v, &n); o != NULL;
			 o = ls_chain_next(row, o, &n))
		{
			LsVersionInfo oi;

			ls_version_info(o, &oi);
			if (!ls_xmin_aborted(o, &oi))
				break;
		}
		if (o == NULL)
			break;				/* a fresh insert: heap shows it too */
		v = o;
	}
	n = 0;
	ls_version_info(v, &info);
	if (!TransactionIdIsCurrentTransactionId(info.xmin) ||
		info.cmin != GetCurrentCommandId(false))
		return v;
	for (ls_hot_version *o = ls_chain_next(row, v, &n); o != NULL;
		 o = ls_chain_next(row, o, &n))
	{
		LsVersionInfo oi;

		ls_version_info(o, &oi);
		if (ls_xmin_status(o, &oi) == LS_XS_ABORTED)
			continue;
		/* replaced by this very command: the pre-update image */
		if (TransactionIdIsCurrentTransactionId(oi.xmax) &&
			!ls_xmax_is_lock_only(&oi) && oi.cmax == info.cmin)
			return o;
		break;
	}
	return v;
}

/*
 * The version of row visible to snapshot, or NULL.
 */
ls_hot_version *
ls_row_visible_version(ls_hot_row *row, Snapshot snapshot)
{
	ls_hot_version *v;
	ls_hot_version *first;
	int			n = 0;
	int			retry = 0;

	Assert(ls_in_epoch());
again:
	if (snapshot->snapshot_type == SNAPSHOT_ANY)
		return ls_row_any_version(row);

	first = ls_hot_row_newest(row);
	if (snapshot->snapshot_type == SNAPSHOT_MVCC && first != NULL &&
		ls_visible_mvcc_settled(first, snapshot))
		return first;

	n = 0;
	for (v = first; v != NULL; v = ls_chain_next(row, v, &n))
	{
		if (ls_version_visible(v, snapshot))
			return v;
	}

	/*
	 * MVCC decisions are stable (the snapshot fixes them).  The others ask
	 * "is it running now": a writer that committed between our look at its
	 * new version (running: invisible) and at the old one (now committed:
	 * deleted) would hide the row.  Look again; the second walk sees the
	 * writer finished on both versions.
	 */
	if (!IsMVCCSnapshot(snapshot) && retry < 3 &&
		(n > 1 || ls_hot_row_newest(row) != first))
	{
		retry++;
		n = 0;
		goto again;
	}
	return NULL;
}

/* ------------------------------------------------------------------------
 * Serializable snapshot isolation: rw-conflicts out
 * ------------------------------------------------------------------------ */

/*
 * The transactions whose writes this MVCC read of row could not see: the
 * deleter/updater of the visible version and the inserters of the versions
 * newer than it (heap's HeapCheckForSerializableConflictOut, applied to a
 * chain), each once, appended to b.  Every one of them counts: a row that
 * many transactions updated since the snapshot may have its dangerous
 * writer anywhere in the chain (an older serializable updater behind newer
 * ones).  When they do not fit in b, none is kept and the row goes to
 * b->redo (the caller checked ls_ssi_room before this row): ls_ssi_report
 * collects it again with room for all.  Inside the epoch; reports nothing
 * itself (that may throw).
 */
void
ls_ssi_collect(LsSsiBatch *b, ls_hot_row *row, ls_hot_version *visible)
{
	int			start = b->n;
	int			walked = 0;

	Assert(ls_in_epoch());
	Assert(b->nredo < LS_SSI_REDO_ROWS);
	if (visible != NULL)
	{
		LsVersionInfo info;

		ls_version_info(visible, &info);
		if (info.xmax != InvalidTransactionId && !ls_xmax_is_lock_only(&info) &&
			ls_xmax_status(visible, &info) != LS_XS_ABORTED)
		{
			if (b->n == b->cap)
				goto redo;
			b->xids[b->n++] = info.xmax;
		}
	}
	for (ls_hot_version *v = ls_hot_row_newest(row); v != NULL && v != visible;
		 v = ls_chain_next(row, v, &walked))
	{
		LsVersionInfo info;
		bool		seen = false;

		ls_version_info(v, &info);
		if (ls_xmin_status(v, &info) == LS_XS_ABORTED)
			continue;
		for (int i = start; i < b->n && !seen; i++)
			seen = TransactionIdEquals(b->xids[i], info.xmin);
		if (seen)
			continue;
		if (b->n == b->cap)
			goto redo;
		b->xids[b->n++] = info.xmin;
	}
	return;
redo:
	b->n = start;
	b->redo[b->nredo++] = row->rowid;
}

/* CheckForSerializableConflictOut for each writer in xids */
static void
ls_ssi_report_xids(Relation rel, Snapshot snapshot, const TransactionId *xids, int n)
{
	for (int i = 0; i < n; i++)
	{
		TransactionId xid = xids[i];

		if (!TransactionIdIsNormal(xid) || TransactionIdIsCurrentTransactionId(xid) ||
			TransactionIdPrecedes(xid, TransactionXmin))
			continue;
		xid = SubTransGetTopmostTransaction(xid);
		if (TransactionIdPrecedes(xid, TransactionXmin))
			continue;
		CheckForSerializableConflictOut(rel, xid, snapshot);
	}
}

/*
 * Report b's rw-conflicts, then those of its redo rows: each collected
 * again in its own epoch, with room that grows until its chain fits.  The
 * visible version is the read's again (an MVCC decision: the snapshot
 * fixes it), and versions newer than it stay while our snapshot runs
 * (their xmin is not visible to it, so they are not dead to everyone).
 * Outside epochs.
 */
void
ls_ssi_report(Relation rel, Snapshot snapshot, LsSsiBatch *b)
{
	ls_hot_table *tbl = ls_table_for(rel);

	Assert(!ls_in_epoch());
	Assert(!ls_holds_row_latch());
	Assert(IsMVCCSnapshot(snapshot));
	ls_ssi_report_xids(rel, snapshot, b->xids, b->n);
	for (int r = 0; r < b->nredo; r++)
	{
		int			cap = 8 * LS_SSI_MAX_XIDS;

		for (;;)
		{
			TransactionId *xids = palloc(sizeof(TransactionId) * cap);
			LsSsiBatch	one;
			ls_hot_row *row;

			ls_ssi_init(&one, xids, cap);
			ls_epoch_enter();
			row = ls_row_get(tbl, b->redo[r]);
			if (row != NULL)
				ls_ssi_collect(&one, row, ls_row_visible_version_fast(row, snapshot));
			ls_epoch_exit();
			if (one.nredo == 0)
			{
				ls_ssi_report_xids(rel, snapshot, xids, one.n);
				pfree(xids);
				break;
			}
			pfree(xids);
			cap *= 4;
		}
	}
	b->n = 0;
	b->nredo = 0;
}
