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
 * by TID around the update, which must then still name the old version)
 * but those of the referenced side of foreign keys and of deferrable
 * unique constraints (see ls_has_row_triggers).  Otherwise the new version
 * goes under a new rowid, the old version's xmax is flagged MOVED and its
 * next_rowid names the new rowid, as heap's t_ctid does.
 */
#include "postgres.h"

#include "access/heaptoast.h"
#include "access/multixact.h"
#include "access/xact.h"
#include "catalog/catalog.h"
#include "catalog/pg_am_d.h"
#include "catalog/pg_class.h"
#include "catalog/pg_trigger.h"
#include "commands/trigger.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "nodes/bitmapset.h"
#include "pgstat.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/predicate.h"
#include "storage/procarray.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/memutils.h"
#include "utils/relcache.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "ls_hashscan.h"
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
	ls_hot_version *target;		/* the current version */
	uint64		xmin_word;		/* target's words as examined */
	uint64		xmax_word;
	uint64		next_rowid;		/* target's forward link */
	TransactionId forced_xid;	/* updater to judge running (see below) */
	bool		keyshare_moved; /* TM_Updated that KEY SHARE may follow */
} LsRowCheck;

/* heavyweight lock mode per tuple lock mode (as heap uses them) */
static const LOCKMODE ls_tuplock_mode[] = {
	AccessShareLock,			/* LockTupleKeyShare */
	RowShareLock,				/* LockTupleShare */
	ExclusiveLock,				/* LockTupleNoKeyExclusive */
	AccessExclusiveLock,		/* LockTupleExclusive */
};

/* ------------------------------------------------------------------------
 * xmax words: one locker/updater (plain xid) or a MultiXactId
 *
 * A plain word carries heap's infomask lock bits: LOCK_ONLY plus KEYSHR
 * (KEY SHARE), KEYSHR|EXCL (SHARE, heap's SHR_LOCK), EXCL (NO KEY UPDATE),
 * EXCL|KEYS_UPDATED (UPDATE); an update has no LOCK_ONLY and KEYS_UPDATED
 * when it deleted the row or changed a key column.  A multixact word has
 * IS_MULTI and the bits of its strongest member (heap's
 * GetMultiXactIdHintBits); LOCK_ONLY when no member updates.
 * ------------------------------------------------------------------------ */

MultiXactStatus
ls_mx_status(LockTupleMode mode, bool is_update)
{
	if (is_update)
		return mode == LockTupleExclusive ? MultiXactStatusUpdate : MultiXactStatusNoKeyUpdate;
	switch (mode)
	{
		case LockTupleKeyShare:
			return MultiXactStatusForKeyShare;
		case LockTupleShare:
			return MultiXactStatusForShare;
		case LockTupleNoKeyExclusive:
			return MultiXactStatusForNoKeyUpdate;
		case LockTupleExclusive:
			break;
	}
	return MultiXactStatusForUpdate;
}

static LockTupleMode
ls_mode_of_status(MultiXactStatus st)
{
	switch (st)
	{
		case MultiXactStatusForKeyShare:
			return LockTupleKeyShare;
		case MultiXactStatusForShare:
			return LockTupleShare;
		case MultiXactStatusForNoKeyUpdate:
		case MultiXactStatusNoKeyUpdate:
			return LockTupleNoKeyExclusive;
		case MultiXactStatusForUpdate:
		case MultiXactStatusUpdate:
			break;
	}
	return LockTupleExclusive;
}

static uint32
ls_flags_for_status(MultiXactStatus st)
{
	switch (st)
	{
		case MultiXactStatusForKeyShare:
			return LS_HV_XMAX_LOCK_ONLY | LS_HV_XMAX_KEYSHR_LOCK;
		case MultiXactStatusForShare:
			return LS_HV_XMAX_LOCK_ONLY | LS_HV_XMAX_KEYSHR_LOCK | LS_HV_XMAX_EXCL_LOCK;
		case MultiXactStatusForNoKeyUpdate:
			return LS_HV_XMAX_LOCK_ONLY | LS_HV_XMAX_EXCL_LOCK;
		case MultiXactStatusForUpdate:
			return LS_HV_XMAX_LOCK_ONLY | LS_HV_XMAX_EXCL_LOCK | LS_HV_XMAX_KEYS_UPDATED;
		case MultiXactStatusNoKeyUpdate:
			return 0;
		case MultiXactStatusUpdate:
			break;
	}
	return LS_HV_XMAX_KEYS_UPDATED;
}

/* The member status a plain (non-multixact) xmax word stands for. */
static MultiXactStatus
ls_status_of_flags(uint32 flags)
{
	if (!(flags & LS_HV_XMAX_LOCK_ONLY))
		return (flags & LS_HV_XMAX_KEYS_UPDATED) ? MultiXactStatusUpdate : MultiXactStatusNoKeyUpdate;
	if (flags & LS_HV_XMAX_KEYS_UPDATED)
		return MultiXactStatusForUpdate;
	if ((flags & LS_HV_XMAX_EXCL_LOCK) && (flags & LS_HV_XMAX_KEYSHR_LOCK))
		return MultiXactStatusForShare;
	if (flags & LS_HV_XMAX_EXCL_LOCK)
		return MultiXactStatusForNoKeyUpdate;
	return MultiXactStatusForKeyShare;
}

/* Flag bits of a multixact word (heap's GetMultiXactIdHintBits). */
static uint32
ls_flags_for_members(const MultiXactMember *m, int n)
{
	LockTupleMode strongest = LockTupleKeyShare;
	bool		has_update = false;
	uint32		flags = LS_HV_XMAX_IS_MULTI;

	for (int i = 0; i < n; i++)
	{
		strongest = Max(strongest, ls_mode_of_status(m[i].status));
		if (ISUPDATE_from_mxstatus(m[i].status))
			has_update = true;
	}
	switch (strongest)
	{
		case LockTupleKeyShare:
			flags |= LS_HV_XMAX_KEYSHR_LOCK;
			break;
		case LockTupleShare:
			flags |= LS_HV_XMAX_KEYSHR_LOCK | LS_HV_XMAX_EXCL_LOCK;
			break;
		case LockTupleNoKeyExclusive:
			flags |= LS_HV_XMAX_EXCL_LOCK;
			break;
		case LockTupleExclusive:
			flags |= LS_HV_XMAX_EXCL_LOCK | LS_HV_XMAX_KEYS_UPDATED;
			break;
	}
	if (!has_update)
		flags |= LS_HV_XMAX_LOCK_ONLY;
	return flags;
}

/* Members of an xmax word (palloc'd array in *out; 0 when none). */
static int
ls_xmax_members(uint64 word, MultiXactMember **out)
{
	TransactionId xid = ls_hv_xid(word);
	uint32		flags = ls_hv_flags(word);

	*out = NULL;
	if (xid == InvalidTransactionId || (flags & LS_HV_XMAX_ABORTED))
		return 0;
	if (flags & LS_HV_XMAX_IS_MULTI)
	{
		int			n = GetMultiXactIdMembers(xid, out, false,
											  (flags & LS_HV_XMAX_LOCK_ONLY) != 0);

		return Max(n, 0);
	}
	*out = palloc(sizeof(MultiXactMember));
	(*out)[0].xid = xid;
	(*out)[0].status = ls_status_of_flags(flags);
	return 1;
}

/*
 * The xmax word after this transaction's xid adds status to word (heap's
 * compute_new_xmax_infomask): lockers still running and a running or
 * committed updater stay, a lock of the same xid is folded in (the
 * stronger one, or the update replaces it).  The MOVED flag stays with a
 * remaining updater.  May create a multixact: never called under a latch
 * or inside an epoch.
 */
static uint64
ls_xmax_merge(uint64 word, TransactionId xid, MultiXactStatus status,
			  uint32 extra_flags)
{
	MultiXactMember *m;
	MultiXactMember *keep;
	int			n = ls_xmax_members(word, &m);
	int			k = 0;
	bool		is_update = ISUPDATE_from_mxstatus(status);
	bool		kept_update = false;
	uint64		result;

	Assert(!ls_in_epoch());
	Assert(!ls_holds_row_latch());

	/*
	 * Before our xid goes into any xmax, even alone: another transaction
	 * may make a multixact of it and us at once, and that multixact must
	 * not be older than the oldest one we say we may be a member of (else
	 * GetMultiXactIdMembers, asked by a third transaction after the
	 * multixact's creator ended, takes a lock-only multixact we are still
	 * in for gone; heap does the same before every lock, update and delete)
	 */
	MultiXactIdSetOldestMember();
	keep = palloc(sizeof(MultiXactMember) * (n + 1));
	for (int i = 0; i < n; i++)
	{
		bool		upd = ISUPDATE_from_mxstatus(m[i].status);

		if (TransactionIdEquals(m[i].xid, xid) && (!upd || is_update))
		{
			/*
			 * Our own lock folds in: the stronger mode wins.  An update over
			 * our FOR UPDATE lock counts as a key update (heap: "acquire the
			 * strongest of both"), so KEY SHARE lockers keep waiting (ON
			 * CONFLICT DO UPDATE SET key = ... locked FOR UPDATE).
			 */
			if (!upd && ls_mode_of_status(m[i].status) > ls_mode_of_status(status))
			{
				if (!is_update)
					status = m[i].status;
				else
					status = MultiXactStatusUpdate;
			}
			continue;
		}

		/*
		 * An earlier update by another (sub)transaction of ours is
		 * superseded by this one (heap keeps one updater: ours).  Our
		 * subcommitted subtransactions look in progress, so without this
		 * they would stay as a second update member.
		 */
		if (upd && is_update && TransactionIdIsCurrentTransactionId(m[i].xid))
			continue;
		if (ls_xid_in_progress(m[i].xid) ||
			(upd && TransactionIdDidCommit(m[i].xid)))
		{
			keep[k++] = m[i];
			if (upd)
				kept_update = true;
		}
	}
	if (kept_update && (ls_hv_flags(word) & LS_HV_XMAX_MOVED))
		extra_flags |= LS_HV_XMAX_MOVED;
	keep[k].xid = xid;
	keep[k].status = status;
	k++;
	if (k == 1)
		result = ls_hv_word(xid, ls_flags_for_status(status) | extra_flags);
	else
	{
		MultiXactId multi;

		MultiXactIdSetOldestMember();
		multi = MultiXactIdCreateFromMembers(k, keep);
		result = ls_hv_word(multi, ls_flags_for_members(keep, k) | extra_flags);
	}
	if (m != NULL)
		pfree(m);
	pfree(keep);
	return result;
}

/*
 * The xmax word an update's new version starts with (heap's xmax_new_tuple):
 * the lockers of the old version's word that are still running, except
 * this transaction's own lock at xid (it becomes the update).  A KEY SHARE
 * lock survives a non-key update this way: a later writer of the new
 * version still waits for the locker.  0 when none.  May create a
 * multixact: never called under a latch or inside an epoch.
 */
static uint64
ls_xmax_lockers(uint64 word, TransactionId xid)
{
	MultiXactMember *m;
	MultiXactMember *keep;
	int			n = ls_xmax_members(word, &m);
	int			k = 0;
	uint64		result = 0;

	Assert(!ls_in_epoch());
	Assert(!ls_holds_row_latch());
	if (n == 0)
		return 0;
	keep = palloc(sizeof(MultiXactMember) * n);
	for (int i = 0; i < n; i++)
	{
		if (ISUPDATE_from_mxstatus(m[i].status) ||
			TransactionIdEquals(m[i].xid, xid) ||
			!ls_xid_in_progress(m[i].xid))
			continue;
		keep[k++] = m[i];
	}
	if (k == 1)
		result = ls_hv_word(keep[0].xid, ls_flags_for_status(keep[0].status));
	else if (k > 1)
	{
		MultiXactId multi;

		MultiXactIdSetOldestMember();
		multi = MultiXactIdCreateFromMembers(k, keep);
		result = ls_hv_word(multi, ls_flags_for_members(keep, k));
	}
	pfree(m);
	pfree(keep);
	return result;
}

/*
 * Which members of word stop this transaction from taking mode: the ones
 * of other transactions that are still running (forced: an updater judged
 * running, see ls_check_row) and whose mode conflicts (heap's
 * DoesMultiXactIdConflict).  Returns their number, xids in *xids
 * (palloc'd).  *own_mode: the strongest mode this transaction already holds
 * (-1: none).  *live_updater: a running updater of another transaction
 * that does not conflict (a KEY SHARE request meeting a non-key update).
 *
 * *stale: the updater of word committed after ls_check_row judged it
 * running (ls_check_row never passes a committed updater on): the caller
 * must look again, which gives TM_Updated/TM_Deleted (or, for KEY SHARE,
 * follows the update), as heap rechecks after its wait.  Going on would
 * lock a version another transaction has updated and committed, and an
 * update over that lock would build a multixact with two updaters.
 */
static int
ls_xmax_conflicts(uint64 word, LockTupleMode mode, TransactionId forced,
				  TransactionId **xids, int *own_mode,
				  TransactionId *live_updater, bool *stale)
{
	MultiXactMember *m;
	int			n = ls_xmax_members(word, &m);
	int			c = 0;

	*xids = palloc(sizeof(TransactionId) * (n + 1));
	*own_mode = -1;
	*live_updater = InvalidTransactionId;
	*stale = false;
	for (int i = 0; i < n; i++)
	{
		bool		live;

		if (TransactionIdIsCurrentTransactionId(m[i].xid))
		{
			*own_mode = Max(*own_mode, (int) ls_mode_of_status(m[i].status));
			continue;
		}
		live = TransactionIdEquals(m[i].xid, forced) ||
			ls_xid_in_progress(m[i].xid);
		if (!live)
		{
			if (ISUPDATE_from_mxstatus(m[i].status) &&
				TransactionIdDidCommit(m[i].xid))
				*stale = true;
			continue;
		}
		if (!ls_status_conflicts(m[i].status, mode))
		{
			if (ISUPDATE_from_mxstatus(m[i].status))
				*live_updater = m[i].xid;
			continue;
		}
		(*xids)[c++] = m[i].xid;
	}
	if (m != NULL)
		pfree(m);
	return c;
}

/* Does lock-only word hold a lock of xid (alone or as a member)? */
static bool
ls_word_holds_lock(uint64 word, TransactionId xid)
{
	MultiXactMember *m;
	int			n;
	bool		found = false;

	if (!(ls_hv_flags(word) & LS_HV_XMAX_LOCK_ONLY))
		return false;
	n = ls_xmax_members(word, &m);
	for (int i = 0; i < n && !found; i++)
		found = TransactionIdEquals(m[i].xid, xid);
	if (m != NULL)
		pfree(m);
	return found;
}

/* Does a lock or update of status conflict with a request for mode? */
bool
ls_status_conflicts(MultiXactStatus status, LockTupleMode mode)
{
	return DoLockModesConflict(ls_tuplock_mode[ls_mode_of_status(status)],
							   ls_tuplock_mode[mode]);
}

/*
 * The xmax word a write of a cold row in its image puts there (a lock, an
 * update's first half, a delete: status): this transaction's status,
 * merged with the image's lockers held (ls_cold_lockers; 0 when none:
 * a lock-only word, or a multixact whose updater aborted) when no
 * running member of another transaction conflicts with it, with *expect =
 * held: the word goes in only if the image still holds that word (as
 * heap's compute_new_xmax_infomask does under the buffer lock).  Merged
 * are FOR KEY SHARE lockers beside a no-key update (heap's multixact lets
 * a foreign key's check and an update of the referenced row's other
 * columns go together), share lockers beside a share lock, and the locks
 * of other levels of this transaction -- a parent's, or a released
 * subtransaction's: a write in a subtransaction keeps them as members, so
 * they are still there after a ROLLBACK TO undoes it.  Else this status
 * alone and *expect = 0 (running lockers then make the caller wait for
 * them; a lock of ours at the same level alone is judged as such:
 * ls_cold_plain_target).  May create a multixact: never under a latch or
 * inside an epoch.
 */
uint64
ls_cold_write_word(uint64 held, TransactionId xid, MultiXactStatus status, uint64 *expect)
{
	*expect = 0;
	if (held != 0)
	{
		TransactionId *xids;
		int			own_mode;
		TransactionId live_updater;
		bool		stale;
		int			nconflict;

		/* lockers, or (KEY SHARE only) a running no-key update beside them */
		Assert((ls_hv_flags(held) & (LS_HV_XMAX_LOCK_ONLY | LS_HV_XMAX_IS_MULTI)) ||
			   status == MultiXactStatusForKeyShare);
		nconflict = ls_xmax_conflicts(held, ls_mode_of_status(status), InvalidTransactionId,
									  &xids, &own_mode, &live_updater, &stale);
		pfree(xids);
		/* KEY SHARE goes through a running no-key update (ls_cold_lockers) */
		if (nconflict == 0 && !stale &&
			(!TransactionIdIsValid(live_updater) || status == MultiXactStatusForKeyShare))
		{
			*expect = held;
			return ls_xmax_merge(held, xid, status, 0);
		}
	}
	return ls_xmax_merge(0, xid, status, 0);
}

/*
 * VACUUM/CLUSTER: word without what no longer matters: finished lockers
 * and aborted updaters go; a multixact nobody runs in any more becomes its
 * committed updater as a plain word (or nothing).
 */
uint64
ls_xmax_settle(uint64 word)
{
	TransactionId xid = ls_hv_xid(word);
	uint32		flags = ls_hv_flags(word);

	if (xid == InvalidTransactionId || (flags & LS_HV_XMAX_ABORTED))
		return 0;
	if (flags & LS_HV_XMAX_IS_MULTI)
	{
		MultiXactMember *m;
		int			n;
		uint64		result = 0;

		if (MultiXactIdIsRunning(xid, (flags & LS_HV_XMAX_LOCK_ONLY) != 0))
			return word;
		if (flags & LS_HV_XMAX_LOCK_ONLY)
			return 0;
		n = GetMultiXactIdMembers(xid, &m, false, false);
		for (int i = 0; i < n; i++)
		{
			/* an updater in doubt (log.c ls_xid_in_progress) still counts */
			if (ISUPDATE_from_mxstatus(m[i].status) && ls_xid_in_progress(m[i].xid))
			{
				pfree(m);
				return word;
			}
			if (ISUPDATE_from_mxstatus(m[i].status) &&
				TransactionIdDidCommit(m[i].xid))
				result = ls_hv_word(m[i].xid,
									ls_flags_for_status(m[i].status) |
									(flags & LS_HV_XMAX_MOVED) |
									LS_HV_XMAX_COMMITTED);
		}
		if (n > 0)
			pfree(m);
		return result;
	}
	if (flags & LS_HV_XMAX_COMMITTED)
		return (flags & LS_HV_XMAX_LOCK_ONLY) ? 0 : word;
	if (TransactionIdIsCurrentTransactionId(xid) || ls_xid_in_progress(xid))
		return word;
	if (!TransactionIdDidCommit(xid))
		return 0;
	return (flags & LS_HV_XMAX_LOCK_ONLY) ? 0 : word | ((uint64) LS_HV_XMAX_COMMITTED << 32);
}

/* hint bits may differ between two reads of the same xmax */
static bool
ls_xmax_same(uint64 a, uint64 b)
{
	const uint64 hints = ((uint64) (LS_HV_XMAX_COMMITTED | LS_HV_XMAX_ABORTED)) << 32;

	return (a & ~hints) == (b & ~hints);
}

/* Has v (a version of row) an older version that was not aborted? */
static bool
ls_has_older_valid(ls_hot_row *row, ls_hot_version *v)
{
	int			n = 0;

	for (ls_hot_version *o = ls_chain_next(row, v, &n); o != NULL;
		 o = ls_chain_next(row, o, &n))
	{
		LsVersionInfo info;

		ls_version_info(o, &info);
		if (ls_xmin_status(o, &info) != LS_XS_ABORTED)
			return true;
	}
	return false;
}

/*
 * The version of target's chain that snapshot sees, when every update from
 * it up to target left the key alone (a KEY SHARE lock goes through such
 * updates, as heap's does); else NULL.
 */
static ls_hot_version *
ls_nonkey_visible(ls_hot_row *row, ls_hot_version *target, Snapshot snapshot)
{
	int			n = 0;

	if (snapshot == NULL || !IsMVCCSnapshot(snapshot))
		return NULL;
	for (ls_hot_version *o = ls_chain_next(row, target, &n); o != NULL;
		 o = ls_chain_next(row, o, &n))
	{
		LsVersionInfo info;

		ls_version_info(o, &info);
		if (ls_xmin_status(o, &info) == LS_XS_ABORTED)
			continue;
		if (info.xmax_flags & LS_HV_XMAX_KEYS_UPDATED)
			return NULL;
		if (ls_version_visible(o, snapshot))
			return o;
	}
	return NULL;
}

/*
 * Does word hold a lock or update of this transaction stronger than KEY
 * SHARE?  Such a lock was taken on this very version (EvalPlanQual or ON
 * CONFLICT locked it for us); a KEY SHARE lock may also have been carried
 * over from the version our snapshot saw by another transaction's update,
 * which must still count as "updated since".
 */
static bool
ls_xmax_has_own(uint64 word)
{
	MultiXactMember *m;
	int			n = ls_xmax_members(word, &m);
	bool		own = false;

	for (int i = 0; i < n && !own; i++)
		own = TransactionIdIsCurrentTransactionId(m[i].xid) &&
			ls_mode_of_status(m[i].status) > LockTupleKeyShare;
	if (m != NULL)
		pfree(m);
	return own;
}

/*
 * Examine row for a write or lock by this transaction at command cid, like
 * heap's HeapTupleSatisfiesUpdate on the version the caller refers to.
 * Caller inside an epoch, no latch held.  TM_Ok means: no committed or own
 * update on the current version; lockers and a running updater are judged
 * by the caller (ls_xmax_conflicts).
 *
 * prior_xmax: following a KEY SHARE lock through a running updater: that
 * updater's newest version is the target although its inserter runs.
 *
 * rule_snapshot (optional): the caller can only have seen versions visible
 * to this snapshot; a current version inserted by an in-place update that
 * the snapshot does not see means "updated since" (TM_Updated), unless we
 * already hold a lock on it (EvalPlanQual locked it for us) or a KEY SHARE
 * lock goes through non-key updates.
 */
static TM_Result
ls_check_row(ls_hot_row *row, uint64 rowid, CommandId cid,
			 Snapshot rule_snapshot, Snapshot crosscheck, bool for_lock,
			 LockTupleMode mode, TransactionId prior_xmax,
			 LsRowCheck *chk, TM_FailureData *tmfd)
{
	ls_hot_version *v;
	ls_hot_version *target = NULL;
	LsVersionInfo info;
	LsXidStatus xs = LS_XS_ABORTED;
	TransactionId skipped_xid = InvalidTransactionId;
	bool		keyshare;
	int			n = 0;
	int			restarts = 0;

	Assert(ls_in_epoch());
	Assert(!ls_holds_row_latch());
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

	for (v = chk->newest; v != NULL; v = ls_chain_next(row, v, &n))
	{
		ls_version_info(v, &info);
		xs = ls_xmin_status(v, &info);
		if (xs == LS_XS_COMMITTED || xs == LS_XS_CURRENT)
		{
			target = v;
			break;
		}
		if (xs == LS_XS_IN_PROGRESS && TransactionIdIsValid(prior_xmax) &&
			TransactionIdEquals(info.xmin, prior_xmax))
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
	chk->xmin_word = atomic_load(&target->xmin_word);
	chk->xmax_word = info.xmax_raw;
	chk->next_rowid = info.next_rowid;
	keyshare = for_lock && mode == LockTupleKeyShare &&
		!(info.xmax_flags & LS_HV_XMAX_KEYS_UPDATED);

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
		if (!(for_lock && info.cmin == cid) && ls_has_older_valid(row, target))
		{
			tmfd->xmax = info.xmin;
			tmfd->cmax = info.cmin;
			return TM_SelfModified;
		}
		return TM_Invisible;
	}

	if (!ls_xmax_is_lock_only(&info) && info.xmax != InvalidTransactionId)
	{
		tmfd->xmax = info.xmax;

		/*
		 * The version above target was inserted by a transaction we saw
		 * running; target's updater is that same transaction.  Judge it as
		 * running too, even if it finished since: otherwise a commit
		 * between the two looks would make an in-place update look like a
		 * delete.  Waiting on it returns at once and the next look sees a
		 * consistent chain.
		 */
		if (TransactionIdIsValid(skipped_xid) && info.xmax == skipped_xid)
			chk->forced_xid = info.xmax;
		else
		{
			switch (ls_xmax_status(target, &info))
			{
				case LS_XS_ABORTED:
				case LS_XS_IN_PROGRESS:
					break;
				case LS_XS_CURRENT:
					if (info.cmax >= cid)
					{
						tmfd->cmax = info.cmax;
						return TM_SelfModified;
					}
					return TM_Invisible;
				case LS_XS_COMMITTED:
					if (info.xmax_flags & LS_HV_XMAX_MOVED)
					{
						if (info.next_rowid == LS_ROWID_INVALID)
							ItemPointerSetMovedPartitions(&tmfd->ctid);
						else
						{
							ls_rowid_to_tid(info.next_rowid, &tmfd->ctid);
							chk->keyshare_moved = keyshare;
						}
						return TM_Updated;
					}

					/*
					 * A delete, or an in-place update that installed its
					 * version and committed after we read the newest
					 * pointer: look again.
					 */
					if (ls_hot_row_newest(row) != chk->newest && restarts++ < 1000)
						goto restart;
					return TM_Deleted;
			}
		}
	}

	if (rule_snapshot != NULL && xs == LS_XS_COMMITTED &&
		!(info.xmin_flags & LS_HV_XMIN_FROZEN) &&
		XidInMVCCSnapshot(info.xmin, rule_snapshot) &&
		ls_has_older_valid(row, target) &&
		!(for_lock && mode == LockTupleKeyShare &&
		  ls_nonkey_visible(row, target, rule_snapshot) != NULL) &&
		!ls_xmax_has_own(chk->xmax_word))
	{
		tmfd->xmax = info.xmin;
		return TM_Updated;
	}
	if (crosscheck != InvalidSnapshot && !ls_version_visible(target, crosscheck))
	{
		tmfd->xmax = info.xmin;
		return TM_Updated;
	}
	return TM_Ok;
}

/*
 * Wait per policy for the transactions in xids (heap: the tuple lock for
 * our place in the queue, then XactLockTableWait / MultiXactIdWait; here a
 * multixact's members come one by one, each through ls_xid_wait_target);
 * false when the caller must give up (SKIP LOCKED).  NOWAIT raises the
 * error.
 */
static bool
ls_wait_xids(Relation rel, ItemPointer tid, const TransactionId *xids, int n,
			 LockTupleMode mode, LsWaitMode policy, LOCKMODE *tuplock,
			 bool skip_tuplock, XLTW_Oper oper)
{
	if (policy == LS_WAIT_NONE)
		return false;
	if (*tuplock == NoLock && !skip_tuplock)
	{
		if (policy == LS_WAIT_BLOCK)
			LockTuple(rel, tid, ls_tuplock_mode[mode]);
		else if (!ConditionalLockTuple(rel, tid, ls_tuplock_mode[mode]))
			goto busy;
		*tuplock = ls_tuplock_mode[mode];
	}
	for (int i = 0; i < n; i++)
	{
		TransactionId x = ls_xid_wait_target(xids[i]);

		if (policy == LS_WAIT_BLOCK)
			XactLockTableWait(x, rel, tid, oper);
		else if (!ConditionalXactLockTableWait(x))
			goto busy;
	}
	return true;
busy:
	if (policy == LS_WAIT_ERROR)
		ereport(ERROR,
				(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
				 errmsg("could not obtain lock on row in relation \"%s\"",
						RelationGetRelationName(rel))));
	return false;
}

/*
 * Inside an epoch: row of rowid when it still looks as chk saw it (same
 * newest version, target still in the chain with the same words), else
 * NULL.  The caller left the epoch in between, so the pointers are only
 * trusted after this check.
 */
static ls_hot_row *
ls_recheck(ls_hot_table *tbl, uint64 rowid, const LsRowCheck *chk)
{
	ls_hot_row *row = ls_hot_row_get(tbl, rowid);
	int			n = 0;

	if (row == NULL || ls_hot_row_newest(row) != chk->newest)
		return NULL;
	for (ls_hot_version *v = chk->newest; v != NULL; v = ls_chain_next(row, v, &n))
	{
		if (v == chk->target)
			return (ls_xmax_same(atomic_load(&v->xmax_word), chk->xmax_word) &&
					atomic_load(&v->xmin_word) == chk->xmin_word) ? row : NULL;
	}
	return NULL;
}

/*
 * Lock the current version of rowid for this transaction in mode (heap's
 * heap_lock_tuple; writers lock before they write).  On TM_Ok this
 * transaction holds a lock at least that strong on the version (alone or
 * in a multixact with compatible lockers); it is stored in slot and/or
 * copied to *oldtup when asked.  *newer is set when the locked version is
 * not visible to snapshot (EvalPlanQual must run).  *follow_xid (KEY SHARE
 * only): a running non-key updater whose new version must be locked too
 * (heap's follow_updates), at *follow_rowid.
 */
static TM_Result
ls_acquire(Relation rel, ls_hot_table *tbl, uint64 rowid, CommandId cid,
		   TransactionId xid, Snapshot rule_snapshot, Snapshot crosscheck,
		   bool for_lock, TransactionId prior_xmax,
		   LockTupleMode mode, LsWaitMode policy, LOCKMODE *tuplock,
		   XLTW_Oper oper, TM_FailureData *tmfd, TupleTableSlot *slot,
		   HeapTuple *oldtup, Snapshot snapshot, bool *newer,
		   LsRowCheck *out, TransactionId *follow_xid, uint64 *follow_rowid)
{
	ItemPointerData tid;

	ls_rowid_to_tid(rowid, &tid);
	if (follow_xid != NULL)
		*follow_xid = InvalidTransactionId;
	for (;;)
	{
		ls_hot_row *row;
		LsRowCheck chk;
		TM_Result	res;
		TransactionId *xids;
		TransactionId live_updater;
		int			own_mode;
		int			nconf;
		bool		stale;
		bool		store;
		uint64		newword = 0;
		ls_hot_version *shown;

		CHECK_FOR_INTERRUPTS();
		ls_epoch_enter();
		row = ls_hot_row_get(tbl, rowid);
		if (row == NULL)
		{
			ls_epoch_exit();
			/* a cold row: writers work on hot rows, bring it over */
			if (ls_cold_migrate(rel, tbl, rowid))
				continue;
			tmfd->ctid = tid;
			tmfd->xmax = InvalidTransactionId;
			tmfd->cmax = InvalidCommandId;
			return TM_Deleted;
		}
		ls_row_touch(row);
		res = ls_check_row(row, rowid, cid, rule_snapshot, crosscheck, for_lock,
						   mode, prior_xmax, &chk, tmfd);
		if (out != NULL)
			*out = chk;
		if (res != TM_Ok)
		{
			if (slot != NULL && chk.target != NULL)
				ls_store_version(chk.target, rel, rowid, slot);
			ls_epoch_exit();
			return res;
		}
		ls_epoch_exit();

		/* outside the epoch: judge the lockers, wait, build the new word */
		nconf = ls_xmax_conflicts(chk.xmax_word, mode, chk.forced_xid, &xids,
								  &own_mode, &live_updater, &stale);
		if (stale)
		{
			/* the updater committed since ls_check_row: look again */
			pfree(xids);
			continue;
		}
		if (nconf > 0)
		{
			bool		waited;

			if (policy == LS_WAIT_NONE)
			{
				if (!TransactionIdIsValid(tmfd->xmax))
					tmfd->xmax = xids[0];
				pfree(xids);
				return TM_BeingModified;
			}
			waited = ls_wait_xids(rel, &tid, xids, nconf, mode, policy, tuplock,
								  own_mode >= 0, oper);
			pfree(xids);
			if (!waited)
				return TM_WouldBlock;
			continue;
		}
		pfree(xids);
		store = own_mode < (int) mode;
		if (store)
			newword = ls_xmax_merge(chk.xmax_word, xid, ls_mx_status(mode, false), 0);

		ls_epoch_enter();
		row = ls_recheck(tbl, rowid, &chk);
		if (row != NULL && store)
		{
			bool		valid;

			ls_row_lock(row);
			valid = !ls_hot_row_is_removed(row) && ls_hot_row_newest(row) == chk.newest &&
				ls_xmax_same(atomic_load(&chk.target->xmax_word), chk.xmax_word);
			if (valid)
				atomic_store(&chk.target->xmax_word, newword);
			ls_row_unlock(row);
			if (!valid)
				row = NULL;
		}
		if (row == NULL)
		{
			ls_epoch_exit();
			continue;			/* somebody changed the row: look again */
		}

		/*
		 * A version we had locked already is the one the caller means (ON
		 * CONFLICT locked it, then GetTupleForTrigger locks again;
		 * EvalPlanQual locked it, then the re-run update locks again): no
		 * traversal, as heap finds its TID current.  A KEY SHARE lock goes
		 * through non-key updates: the caller gets the version it saw.
		 */
		shown = chk.target;
		if (newer != NULL && snapshot != NULL && IsMVCCSnapshot(snapshot))
		{
			*newer = own_mode <= (int) LockTupleKeyShare &&
				!ls_version_visible(chk.target, snapshot);
			if (*newer && mode == LockTupleKeyShare)
			{
				ls_hot_version *vis = ls_nonkey_visible(row, chk.target, snapshot);

				if (vis != NULL)
				{
					shown = vis;
					*newer = false;
				}
			}
		}
		else if (rule_snapshot != NULL && mode == LockTupleKeyShare &&
				 !ls_version_visible(chk.target, rule_snapshot))
		{
			ls_hot_version *vis = ls_nonkey_visible(row, chk.target, rule_snapshot);

			if (vis != NULL)
				shown = vis;
		}
		if (slot != NULL)
			ls_store_version(shown, rel, rowid, slot);
		if (oldtup != NULL)
		{
			Size		size = ls_heaptuple_size(chk.target, rel);

			*oldtup = ls_version_to_heaptuple(chk.target, rel, rowid,
											  palloc(size), size);
		}
		ls_epoch_exit();
		if (follow_xid != NULL && TransactionIdIsValid(live_updater) &&
			mode == LockTupleKeyShare)
		{
			*follow_xid = live_updater;
			*follow_rowid = (ls_hv_flags(chk.xmax_word) & LS_HV_XMAX_MOVED) ?
				chk.next_rowid : rowid;
		}
		return TM_Ok;
	}
}

/*
 * Turn our lock on the current version of rowid into the final xmax of an
 * update or delete (status), keeping compatible lockers (a multixact), and
 * optionally install a new version, under the row latch.  Our lock
 * guarantees no other writer changed the version; KEY SHARE lockers may
 * join meanwhile: then build the word again.  Afterwards the row's block
 * loses its visibility map bit if VACUUM marked it (vismap.c: the flag is
 * read after the write was published, in the same epoch).
 *
 * The lockers that still run go onto carry_to (a hot version) when given.
 * With carried instead (a new version the caller wrote into the cold tree
 * and gave *carried as its lockers): false, with nothing changed, unless
 * the lockers are exactly *carried; *carried is then what they are.
 */
static bool
ls_finish_write(Relation rel, ls_hot_table *tbl, uint64 rowid,
				TransactionId xid, MultiXactStatus status, uint32 extra_flags,
				CommandId cid, uint64 next_rowid, ls_hot_version *install,
				ls_hot_version *carry_to, uint64 *carried)
{
	for (int tries = 0;; tries++)
	{
		ls_hot_row *row;
		LsRowCheck chk;
		ls_hot_version *target = NULL;
		uint64		newword;
		uint64		lockers;
		bool		done = false;
		bool		marked = false;
		int			n = 0;

		memset(&chk, 0, sizeof(chk));
		ls_epoch_enter();
		row = ls_hot_row_get(tbl, rowid);
		if (row != NULL)
		{
			chk.newest = ls_hot_row_newest(row);
			/* the current version is the newest one not aborted */
			for (ls_hot_version *v = chk.newest; v != NULL;
				 v = ls_chain_next(row, v, &n))
			{
				LsVersionInfo info;

				ls_version_info(v, &info);
				if (ls_xmin_status(v, &info) != LS_XS_ABORTED)
				{
					target = v;
					break;
				}
			}
		}
		if (target != NULL)
		{
			chk.target = target;
			chk.xmin_word = atomic_load(&target->xmin_word);
			chk.xmax_word = atomic_load(&target->xmax_word);
		}
		ls_epoch_exit();
		if (target == NULL || tries > 1000)
			elog(ERROR, "locked version of row " UINT64_FORMAT " of leanstore table \"%s\" vanished",
				 rowid, RelationGetRelationName(rel));

		newword = ls_xmax_merge(chk.xmax_word, xid, status, extra_flags);
		lockers = (carry_to != NULL || carried != NULL) ?
			ls_xmax_lockers(chk.xmax_word, xid) : 0;
		/* nothing changed yet; the word is checked again under the latch */
		if (carried != NULL && !ls_xmax_same(lockers, *carried))
		{
			*carried = lockers;
			return false;
		}

		ls_epoch_enter();
		row = ls_recheck(tbl, rowid, &chk);
		if (row != NULL)
		{
			ls_row_lock(row);
			if (!ls_hot_row_is_removed(row) && ls_hot_row_newest(row) == chk.newest &&
				ls_xmax_same(atomic_load(&target->xmax_word), chk.xmax_word))
			{
				/*
				 * The lockers go onto the new version before the old one
				 * names us as updater: a KEY SHARE locker following our
				 * update (prior_xmax) only gets there through that word.
				 */
				if (carry_to != NULL)
					atomic_store(&carry_to->xmax_word, lockers);
				atomic_store(&target->cmax, (uint32) cid);
				atomic_store(&target->next_rowid, next_rowid);
				atomic_store(&target->xmax_word, newword);
				if (install != NULL)
					ls_hot_row_install(ls_ctx(), tbl, row, install);
				done = true;
			}
			ls_row_unlock(row);
			if (done)
				marked = ls_vm_row_marked(row);
		}
		ls_epoch_exit();
		if (done)
		{
			ls_log_note(tbl, rowid);
			if (marked)
				ls_vm_clear(rel, tbl, rowid);
			return true;
		}
	}
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

/*
 * Stamp the transaction fields of the tuple the executor holds in its slot
 * after that tuple became a new version: RETURNING xmin, xmax, cmin and
 * ctid read them from the slot's tuple header, as they do for heap, which
 * stamps the header in place before it stores the tuple.
 */
static void
ls_stamp_new_tuple(HeapTuple tup, TransactionId xid, CommandId cid)
{
	HeapTupleHeader hdr = tup->t_data;

	hdr->t_infomask &= ~HEAP_XACT_MASK;
	hdr->t_infomask2 &= ~HEAP2_XACT_MASK;
	hdr->t_infomask |= HEAP_XMAX_INVALID;
	HeapTupleHeaderSetXmin(hdr, xid);
	HeapTupleHeaderSetCmin(hdr, cid);
	HeapTupleHeaderSetXmax(hdr, InvalidTransactionId);
	hdr->t_ctid = tup->t_self;
}

/*
 * Heap's page filling, for a tuple of heap_len bytes (t_len of the heap
 * form, after TOAST): it takes MAXALIGN(t_len) plus a line pointer
 * (PageAddItem), and heap puts it on a page only when PageGetHeapFreeSpace
 * (free bytes minus one line pointer) is at least the target:
 *
 *  - insert (hio.c RelationGetBufferForTuple; heap_multi_insert puts
 *    further rows of a batch on the page by a rule this one implies):
 *    len + the fillfactor's free space, or, when that exceeds what a nearly
 *    empty page has free, max(len, that nearly-empty amount);
 *  - rewrite (rewriteheap.c raw_heap_insert): len + the fillfactor's space.
 *
 * A fresh page takes any tuple; the core does the same for an empty block.
 */
void
ls_heap_space(Relation rel, Size heap_len, bool rewrite, uint32 *need,
			  uint32 *want)
{
	Size		len = MAXALIGN(heap_len);
	Size		save = RelationGetTargetPageFreeSpace(rel, HEAP_DEFAULT_FILLFACTOR);
	Size		target = len + save;

	if (!rewrite)
	{
		Size		nearly_empty = MaxHeapTupleSize -
			(MaxHeapTuplesPerPage / 8 * sizeof(ItemIdData));

		if (target > nearly_empty)
			target = Max(len, nearly_empty);
	}
	*need = (uint32) Min(len + sizeof(ItemIdData), (Size) LS_HOT_FILL_MAX);
	*want = (uint32) Min(target + sizeof(ItemIdData), (Size) LS_HOT_FILL_MAX);
}

/* A new rowid for a row of need/want bytes (ls_heap_space). */
uint64
ls_reserve_rowid(Relation rel, ls_hot_table *tbl, uint32 need, uint32 want)
{
	uint64		rowid = ls_hot_table_reserve_rowid(tbl, LS_ROWS_PER_BLOCK,
												   LS_BLOCK_CAPACITY, need, want);

	if (rowid == LS_ROWID_INVALID)
		ls_report_no_rowids(rel);
	ls_log_rowid_used(tbl, rowid, false);
	ls_cover_rowid(rel, rowid);
	return rowid;
}

void
ls_report_no_rowids(Relation rel)
{
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("leanstore table \"%s\" has no rowids left",
					RelationGetRelationName(rel)),
			 errhint("Rewrite the table with VACUUM FULL.")));
}

/* A rowid for a new row whose heap form (after TOAST) is tup. */
static uint64
ls_reserve_rowid_for(Relation rel, ls_hot_table *tbl, HeapTuple tup)
{
	uint32		need,
				want;

	ls_heap_space(rel, tup->t_len, false, &need, &want);
	return ls_reserve_rowid(rel, tbl, need, want);
}

/*
 * Insert one row; bulk: the caller's ls_bulk_cold for it (the row goes
 * straight to the cold tree; never for a speculative insert).
 */
static void
ls_insert_one(Relation rel, ls_hot_table *tbl, TupleTableSlot *slot,
			  CommandId cid, int options, TransactionId xid,
			  bool speculative, uint32 token, bool bulk)
{
	bool		shouldFree;
	HeapTuple	tup = ExecFetchSlotHeapTuple(slot, true, &shouldFree);
	HeapTuple	stored;
	ls_hot_version *v;
	ls_hot_row *row;
	ls_status	st;
	uint32		xmin_flags = 0;
	uint64		rowid;
	bool		cold;

	tup->t_tableOid = RelationGetRelid(rel);
	stored = ls_toast_if_needed(rel, tup, NULL, options);
	/* the block is chosen by the row's size on heap (it may throw: first) */
	rowid = ls_reserve_rowid_for(rel, tbl, stored);

	/*
	 * Straight to the cold tree past the bulk-load threshold, or when the
	 * hot tier is full (rows pack cannot move yet: "hot tier is full" is
	 * not for users while the cold tree has room); a speculative insert
	 * goes there only when the tier is full (its image carries the token).
	 */
	Assert(!(speculative && bulk));
	cold = bulk;
	v = ls_version_from_heaptuple_in(rel, stored,
									 cold ? LS_VH_LOCAL :
									 ls_cold_can_write(rel) ? LS_VH_TIER_OR_NULL :
									 LS_VH_TIER);
	if (v == NULL)
	{
		cold = true;
		ls_cold_note_full();
		v = ls_version_from_heaptuple_in(rel, stored, LS_VH_LOCAL);
	}
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

	if (!cold)
	{
		ls_epoch_enter();
		st = ls_hot_row_insert(ls_ctx(), tbl, rowid, LS_ORIGIN_INSERTED, v, &row);
		ls_epoch_exit();
		/* no room for the row itself (its map entry): the cold tree then */
		if ((st == LS_NO_SPACE || st == LS_NO_MEMORY) && ls_cold_can_write(rel))
		{
			cold = true;
			ls_cold_note_full();
		}
		else if (st != LS_OK)
		{
			ls_hot_version_free(ls_ctx(), v);
			ls_report_status(st, rel, "insert into");
		}
	}
	if (cold && speculative)
	{
		ls_cold_insert_speculative(rel, tbl, rowid, v, token);
		ls_version_discard(v);
	}
	else if (cold)
	{
		ls_cold_insert(rel, tbl, rowid, v);
		ls_version_discard(v);
	}
	else
	{
		if (!(options & TABLE_INSERT_FROZEN))
			ls_abort_note_insert(tbl, rowid, xid);
		ls_log_note(tbl, rowid);
	}
	ls_vm_note_insert(rel, tbl, rowid);

	ls_rowid_to_tid(rowid, &tup->t_self);
	ls_stamp_new_tuple(tup, xid, cid);
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

	ls_check_unpublished(rel, CMD_INSERT);
	CheckForSerializableConflictIn(rel, NULL, InvalidBlockNumber);
	ls_insert_one(rel, tbl, slot, cid, options, xid, speculative, token,
				  !speculative && ls_bulk_cold(rel));
	pgstat_count_heap_insert(rel, 1);
	ls_mark_written();
}

/*
 * This backend's single-row inserts, deletes, updates and row locks of
 * leanstore rows, counted: one during a COPY FREEZE (a trigger's: an
 * AFTER ROW trigger inserting into the loaded table puts a row that is not
 * frozen into its last block) keeps the COPY from marking its blocks
 * all-visible (ls_frozen_load_finish).
 */
static uint64 ls_write_serial = 0;

void
ls_tuple_insert(Relation rel, TupleTableSlot *slot, CommandId cid,
				int options, struct BulkInsertStateData *bistate)
{
	ls_write_serial++;
	ls_insert_common(rel, slot, cid, options, false, 0);
}

void
ls_tuple_insert_speculative(Relation rel, TupleTableSlot *slot, CommandId cid,
							int options, struct BulkInsertStateData *bistate,
							uint32 specToken)
{
	ls_write_serial++;
	ls_insert_common(rel, slot, cid, options, true, specToken);
}

/*
 * The rowid of a TID the executor handed to a write or lock: one of ours,
 * so an invalid one cannot happen.
 */
static uint64
ls_tid_rowid_of(Relation rel, ItemPointer tid)
{
	uint64		rowid = ls_tid_to_rowid(tid);

	if (rowid == LS_ROWID_INVALID)
		elog(ERROR, "invalid TID (%u,%u) for leanstore table \"%s\"",
			 ItemPointerGetBlockNumberNoCheck(tid), ItemPointerGetOffsetNumberNoCheck(tid),
			 RelationGetRelationName(rel));
	return rowid;
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
	uint64		rowid = ls_tid_rowid_of(rel, &slot->tts_tid);
	HeapTuple	stored = NULL;
	ls_hot_row *row;

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
			size = ls_heaptuple_size(v, rel);
			stored = ls_version_to_heaptuple(v, rel, rowid, palloc(size), size);
		}
		else
			ls_row_unlock(row);
	}
	ls_epoch_exit();
	/* the hot tier was full at the insert: its image is in the cold tree */
	if (row == NULL)
	{
		bool		found;

		stored = ls_cold_complete_speculative(rel, tbl, rowid, succeeded, &found);
		if (!found)
			elog(ERROR, "speculative insert of row " UINT64_FORMAT " of leanstore table \"%s\" not found",
				 rowid, RelationGetRelationName(rel));
	}

	/*
	 * A killed insert no longer keeps VACUUM from marking its block (the
	 * rowid is DEAD: VACUUM may forget it and mark the block before we end)
	 */
	if (!succeeded)
		ls_vm_forget_seen();
	if (stored != NULL && HeapTupleHasExternal(stored))
		heap_toast_delete(rel, stored, true);
}

/*
 * Rows of a multi_insert that go straight to the cold tree, as one batch
 * (ls_multi_insert): heap forms after TOAST, with the slot each came from.
 */
typedef struct LsLoadBatch
{
	int			n;
	TupleTableSlot **slots;
	HeapTuple  *tups;			/* the slot's tuple (stamped at the end) */
	HeapTuple  *stored;			/* after TOAST (may be tups[i]) */
	bool	   *free_tup;
	uint32	   *need;
	uint32	   *want;
	uint64	   *rowids;
} LsLoadBatch;

static void
ls_load_batch_init(LsLoadBatch *b, int cap)
{
	b->n = 0;
	b->slots = palloc(cap * sizeof(TupleTableSlot *));
	b->tups = palloc(cap * sizeof(HeapTuple));
	b->stored = palloc(cap * sizeof(HeapTuple));
	b->free_tup = palloc(cap * sizeof(bool));
	b->need = palloc(cap * sizeof(uint32));
	b->want = palloc(cap * sizeof(uint32));
	b->rowids = palloc(cap * sizeof(uint64));
}

static void
ls_load_batch_free(LsLoadBatch *b)
{
	pfree(b->slots);
	pfree(b->tups);
	pfree(b->stored);
	pfree(b->free_tup);
	pfree(b->need);
	pfree(b->want);
	pfree(b->rowids);
}

/* The row of slot joins the batch: its heap form, TOASTed, and its space. */
static void
ls_load_batch_add(LsLoadBatch *b, Relation rel, TupleTableSlot *slot, int options)
{
	int			i = b->n;

	b->slots[i] = slot;
	b->tups[i] = ExecFetchSlotHeapTuple(slot, true, &b->free_tup[i]);
	b->tups[i]->t_tableOid = RelationGetRelid(rel);
	b->stored[i] = ls_toast_if_needed(rel, b->tups[i], NULL, options);
	ls_heap_space(rel, b->stored[i]->t_len, false, &b->need[i], &b->want[i]);
	b->n++;
}

/*
 * Store the batch: one rowid reservation for all of its rows (the same
 * rowids, in the same virtual blocks, as row by row would give them), one
 * check that the log covers the last of them (then it covers all), the
 * images into the cold tree (ls_cold_load), then each row's TID and
 * visibility map bit.
 */
static void
ls_load_batch_flush(LsLoadBatch *b, Relation rel, ls_hot_table *tbl, CommandId cid,
					int options, TransactionId xid)
{
	if (b->n == 0)
		return;
	if (ls_hot_table_reserve_rowids(tbl, LS_ROWS_PER_BLOCK, LS_BLOCK_CAPACITY,
									b->need, b->want, (uint32) b->n, b->rowids) != LS_OK)
		ls_report_no_rowids(rel);
	ls_log_rowid_used(tbl, b->rowids[b->n - 1], (options & TABLE_INSERT_FROZEN) != 0);
	ls_cover_rowid(rel, b->rowids[b->n - 1]);
	ls_cold_load(rel, tbl, b->n, b->rowids, b->stored, xid, cid,
				 (options & TABLE_INSERT_FROZEN) != 0);
	for (int i = 0; i < b->n; i++)
	{
		HeapTuple	tup = b->tups[i];

		ls_vm_note_insert(rel, tbl, b->rowids[i]);
		ls_rowid_to_tid(b->rowids[i], &tup->t_self);
		ls_stamp_new_tuple(tup, xid, cid);
		b->slots[i]->tts_tableOid = RelationGetRelid(rel);
		b->slots[i]->tts_tid = tup->t_self;
		if (b->stored[i] != tup)
			heap_freetuple(b->stored[i]);
		if (b->free_tup[i])
			heap_freetuple(tup);
	}
	b->n = 0;
}

/*
 * COPY FREEZE (TABLE_INSERT_FROZEN: PostgreSQL checked that the table was
 * created or truncated in this subtransaction): the rowids its batches
 * loaded, so that ls_frozen_load_finish can mark their blocks all-visible.
 * A write of ours since the range began (ls_write_serial) voids it.
 */
static Oid	ls_frozen_relid = InvalidOid;
static uint64 ls_frozen_lo;
static uint64 ls_frozen_hi;
static uint64 ls_frozen_serial;

static void
ls_frozen_load_note(Relation rel, TupleTableSlot **slots, int nslots)
{
	uint64		lo = ls_tid_to_rowid(&slots[0]->tts_tid);
	uint64		hi = ls_tid_to_rowid(&slots[nslots - 1]->tts_tid);

	/* rowids follow slot order (ls_multi_insert keeps it) */
	Assert(lo <= hi);
	if (ls_frozen_relid != RelationGetRelid(rel) || ls_frozen_serial != ls_write_serial ||
		lo <= ls_frozen_hi)
	{
		ls_frozen_relid = RelationGetRelid(rel);
		ls_frozen_serial = ls_write_serial;
		ls_frozen_lo = lo;
	}
	ls_frozen_hi = hi;
}

/* The end of a COPY (table_finish_bulk_insert): mark what FREEZE loaded. */
void
ls_frozen_load_finish(Relation rel, int options)
{
	if ((options & TABLE_INSERT_FROZEN) && ls_frozen_relid == RelationGetRelid(rel) &&
		ls_frozen_serial == ls_write_serial && !RelationUsesLocalBuffers(rel))
		ls_vm_mark_loaded(rel, ls_table_for(rel), ls_frozen_lo, ls_frozen_hi);
	ls_frozen_relid = InvalidOid;
}

/*
 * COPY's path (and pgbench -i's).  Rows below the bulk-load threshold go
 * one by one as tuple_insert's would; past it, the rest of the call's rows
 * go to the cold tree as one batch (ls_load_batch_flush), in slot order.
 */
void
ls_multi_insert(Relation rel, TupleTableSlot **slots, int nslots,
				CommandId cid, int options, struct BulkInsertStateData *bistate)
{
	ls_hot_table *tbl = ls_table_for(rel);
	TransactionId xid = GetCurrentTransactionId();
	LsLoadBatch b;

	if (nslots <= 0)
		return;
	ls_check_unpublished(rel, CMD_INSERT);
	CheckForSerializableConflictIn(rel, NULL, InvalidBlockNumber);
	ls_load_batch_init(&b, nslots);
	for (int i = 0; i < nslots; i++)
	{
		CHECK_FOR_INTERRUPTS();
		if (ls_bulk_cold(rel))
			ls_load_batch_add(&b, rel, slots[i], options);
		else
		{
			/* keep rowids in slot order: the batch so far goes first */
			ls_load_batch_flush(&b, rel, tbl, cid, options, xid);
			ls_insert_one(rel, tbl, slots[i], cid, options, xid, false, 0, false);
		}
	}
	ls_load_batch_flush(&b, rel, tbl, cid, options, xid);
	ls_load_batch_free(&b);
	if (options & TABLE_INSERT_FROZEN)
		ls_frozen_load_note(rel, slots, nslots);
	pgstat_count_heap_insert(rel, nslots);
	ls_mark_written();
}

/* ------------------------------------------------------------------------
 * DELETE
 * ------------------------------------------------------------------------ */

/*
 * Cheap first test for a write in the cold tier (ls_cold_delete,
 * ls_cold_lock_for_update): the table has a tree and rowid no hot row.
 * Keeps the common write of a hot row free of the rest.
 */
static bool
ls_row_maybe_cold(ls_hot_table *tbl, uint64 rowid)
{
	bool		hot;

	if (!ls_cold_has_tree(tbl))
		return false;
	ls_epoch_enter();
	hot = ls_hot_row_get(tbl, rowid) != NULL;
	ls_epoch_exit();
	return !hot;
}

/*
 * A delete, update or lock in the cold tier found rowid's image held by
 * another transaction (the full hot tier cannot take the row).  With wait,
 * wait for the holder as policy says (ls_cold_wait_holder; oper names the
 * wait in its error context, as heap's: "while deleting tuple ...") and return
 * true: judge the row again.  Otherwise (nobody to wait for, or SKIP
 * LOCKED would block: *res TM_WouldBlock) false, with *res what a
 * committed writer in the image means (ls_cold_committed_writer); with
 * none there, the full tier is the error (what: "delete from", ...).
 */
static bool
ls_cold_held(Relation rel, ls_hot_table *tbl, uint64 rowid, bool wait, XLTW_Oper oper,
			 LockWaitPolicy policy, LockTupleMode mode, TM_FailureData *tmfd,
			 const char *what, TM_Result *res)
{
	bool		would_block = false;

	if (wait && ls_cold_wait_holder(rel, tbl, rowid, policy, mode, oper, &would_block))
	{
		if (!would_block)
			return true;
		*res = TM_WouldBlock;
		return false;
	}
	*res = ls_cold_committed_writer(tbl, rowid, tmfd);
	if (*res == TM_Ok)
		ls_report_status(LS_NO_SPACE, rel, what);
	return false;
}

TM_Result
ls_tuple_delete(Relation rel, ItemPointer tid, CommandId cid,
				Snapshot snapshot, Snapshot crosscheck, bool wait,
				TM_FailureData *tmfd, bool changingPart)
{
	ls_hot_table *tbl = ls_table_for(rel);
	uint64		rowid = ls_tid_rowid_of(rel, tid);
	TransactionId xid = GetCurrentTransactionId();
	LOCKMODE	tuplock = NoLock;	/* heavyweight tuple lock held */
	HeapTuple	oldtup = NULL;
	TM_Result	res;
	bool		plain;			/* a delete the cold tier can make */

	ls_write_serial++;		/* voids a COPY FREEZE's range */

	tmfd->traversed = false;
	ls_check_unpublished(rel, CMD_DELETE);
	CheckForSerializableConflictIn(rel, tid, ItemPointerGetBlockNumber(tid));

	/*
	 * A large delete of cold rows writes in the cold tier (plain cases
	 * only: not a partition move, the image visible to the crosscheck
	 * snapshot of a foreign key's action too; the rest, and any conflict,
	 * takes the path below).  SERIALIZABLE is plain too: the conflict-in
	 * check above is made whichever tier writes, and readers find the
	 * image's xmax as they find a hot version's (src/pg/README.md, "Writes
	 * in the cold tier").
	 */
	plain = !changingPart && snapshot != NULL && IsMVCCSnapshot(snapshot);
	if (plain && ls_row_maybe_cold(tbl, rowid) &&
		ls_cold_delete(rel, tbl, rowid, xid, cid, snapshot, crosscheck, &oldtup))
		goto cold_deleted;

	/* a cold row the full hot tier cannot take: delete it in the cold tier */
retry_cold:
	ls_migrate_soft = plain && ls_cold_rewrite_allowed(rel);
	ls_migrate_found_full = false;
	res = ls_acquire(rel, tbl, rowid, cid, xid,
					 (snapshot && IsMVCCSnapshot(snapshot)) ? snapshot : NULL,
					 crosscheck, false, InvalidTransactionId, LockTupleExclusive,
					 wait ? LS_WAIT_BLOCK : LS_WAIT_NONE, &tuplock, XLTW_Delete,
					 tmfd, NULL, &oldtup, NULL, NULL, NULL, NULL, NULL);
	ls_migrate_soft = false;
	if (ls_migrate_found_full)
	{
		if (ls_cold_delete(rel, tbl, rowid, xid, cid, snapshot, crosscheck, &oldtup))
			goto cold_deleted;
		if (ls_cold_held(rel, tbl, rowid, wait, XLTW_Delete, LockWaitBlock, LockTupleExclusive, tmfd,
						 "delete from", &res))
			goto retry_cold;
	}
	if (res == TM_Ok)
	{
		ls_finish_write(rel, tbl, rowid, xid, MultiXactStatusUpdate,
						changingPart ? LS_HV_XMAX_MOVED : 0, cid,
						LS_ROWID_INVALID, NULL, NULL, NULL);
		ls_hashcache_forget_tuple(rel, oldtup, rowid);
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

cold_deleted:
	ls_hashcache_forget_tuple(rel, oldtup, rowid);
	if (HeapTupleHasExternal(oldtup))
		heap_toast_delete(rel, oldtup, false);
	pgstat_count_heap_delete(rel);
	ls_mark_written();
	pfree(oldtup);
	if (tuplock != NoLock)
		UnlockTuple(rel, tid, tuplock);
	return TM_Ok;
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

/*
 * Is trig an AFTER ROW trigger that an in-place update cannot mislead: one
 * of the referenced side of a foreign key (RI_FKey_noaction_upd, _cascade_del,
 * ...) or a deferrable unique constraint's recheck?  An AFTER UPDATE row
 * trigger's OLD row is fetched by TID after the update, and an in-place
 * chain answers with the new version.  The referenced side's triggers are
 * queued only when the referenced key changes
 * (RI_FKey_pk_upd_check_required compares OLD and NEW), and that key is
 * always indexed, so such an update never stays in place and a queued
 * event names a moved row; an in-place update compares NEW with itself and
 * queues nothing, as heap's does for an update that keeps the key.  A
 * delete's OLD is the newest version, the one deleted.  The unique recheck
 * follows an index insertion, which an in-place update never makes.  The
 * referencing side's check (RI_FKey_fk_upd_check_required) would be
 * misled: it takes a change of the key for none, and OLD's xmin for the
 * updater's.  So tables with foreign keys of their own still move every
 * update.
 */
static bool
ls_trigger_sees_newest(const Trigger *trig)
{
	return trig->tgisinternal &&
		(RI_FKey_trigger_type(trig->tgfoid) == RI_TRIGGER_PK ||
		 trig->tgfoid == F_UNIQUE_KEY_RECHECK);
}

/*
 * Row triggers that fetch rows by TID around an update (see top): any
 * BEFORE UPDATE/DELETE row trigger, transition tables, and AFTER row
 * triggers but those of the referenced side of foreign keys and of
 * deferrable unique constraints (ls_trigger_sees_newest): a table that
 * foreign keys reference updates its non-key columns in place, as heap
 * makes such updates HOT.
 */
static bool
ls_has_row_triggers(Relation rel)
{
	TriggerDesc *td = rel->trigdesc;

	if (td == NULL)
		return false;
	if (td->trig_update_before_row || td->trig_delete_before_row ||
		td->trig_update_old_table || td->trig_update_new_table)
		return true;
	if (!td->trig_insert_after_row && !td->trig_update_after_row &&
		!td->trig_delete_after_row)
		return false;
	for (int i = 0; i < td->numtriggers; i++)
	{
		const Trigger *trig = &td->triggers[i];

		if (TRIGGER_FOR_ROW(trig->tgtype) && TRIGGER_FOR_AFTER(trig->tgtype) &&
			(TRIGGER_FOR_INSERT(trig->tgtype) || TRIGGER_FOR_UPDATE(trig->tgtype) ||
			 TRIGGER_FOR_DELETE(trig->tgtype)) &&
			!ls_trigger_sees_newest(trig))
			return true;
	}
	return false;
}

/*
 * Are all of rel's indexes summarizing (BRIN), at least one?  Then an update
 * that changes indexed columns can still keep its rowid: a BRIN summary
 * covers a block range, not a row, so inserting the new values into it
 * (update_indexes = true) is all it needs; the old values stay summarized
 * for older snapshots (and for a rollback), and a range summarized later
 * takes every version of the row that is not dead, as heap's summary takes
 * the old and the new tuple (ls_index_build_older; isolation
 * lsx-brin-summarize).  Any other index would get a second entry for the
 * same rowid.  Heap keeps such rows on their page when they fit; a new
 * rowid at the end of the table would add ranges to summarize.
 */
static bool
ls_only_summarizing_indexes(Relation rel)
{
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;
	bool		all = indexes != NIL;

	foreach(lc, indexes)
	{
		HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(lfirst_oid(lc)));

		if (!HeapTupleIsValid(tup))
			elog(ERROR, "cache lookup failed for index %u", lfirst_oid(lc));
		if (((Form_pg_class) GETSTRUCT(tup))->relam != BRIN_AM_OID)
			all = false;
		ReleaseSysCache(tup);
		if (!all)
			break;
	}
	list_free(indexes);
	return all;
}

/*
 * UPDATE of a hot row when the hot tier has no room for the new version v
 * (or its row): v becomes newrowid's image in the cold tree (xmin: us), as
 * a non-HOT update that a bulk load made, and then the old version names
 * us as updater, moved to newrowid.  The image comes first because others
 * can reach newrowid before we commit: a FOR KEY SHARE locker (a foreign
 * key check) goes through our running no-key update and follows it there,
 * as heap's follow_updates does, and found nothing there when the old
 * version named it first (the row looked deleted: the SELECT lost it, the
 * check failed; hotfull spill_follow.sh).  An error before the old version
 * is marked aborts the image with us.  Lockers that still run (FOR KEY
 * SHARE beside our no-key update) move to the new version, as
 * ls_finish_write's carry_to does in the hot tier: the old version is
 * marked only if its lockers are the image's (none at first), else the
 * image's lock-only xmax part is written again with them.  Frees v.
 */
static void
ls_update_into_cold(Relation rel, ls_hot_table *tbl, uint64 rowid,
					uint64 newrowid, TransactionId xid, CommandId cid,
					LockTupleMode lockmode, ls_hot_version *v)
{
	uint64		carried = 0;	/* the image's lockers */

	ls_cold_insert(rel, tbl, newrowid, v);
	ls_debug_update_wait();
	while (!ls_finish_write(rel, tbl, rowid, xid, ls_mx_status(lockmode, true),
							LS_HV_XMAX_MOVED, cid, newrowid, NULL, NULL, &carried))
		ls_cold_set_lockers(tbl, newrowid, v, carried);
	ls_version_discard(v);
	ls_vm_note_insert(rel, tbl, newrowid);
}

/*
 * An update's second half in the cold tier (ls_cold_finish_update), with
 * the words it needs built here, outside every latch: the old image's
 * update word (our update beside the lockers of locked that still run) and
 * the new image's lockers (heap's xmax_new_tuple).  false: the row is hot
 * now (see ls_cold_finish_update).
 */
static bool
ls_update_in_cold(Relation rel, ls_hot_table *tbl, uint64 rowid,
				  TransactionId xid, CommandId cid, LockTupleMode mode, uint64 locked,
				  uint64 newrowid, ls_hot_version *v)
{
	for (;;)
	{
		uint64		now = 0;

		if (ls_cold_finish_update(rel, tbl, rowid, xid, cid, locked,
								  ls_xmax_merge(locked, xid, ls_mx_status(mode, true),
												LS_HV_XMAX_MOVED),
								  ls_xmax_lockers(locked, xid), newrowid, v, &now))
			return true;
		if (now == 0)
			return false;		/* the row is hot now */

		/*
		 * KEY SHARE lockers joined our lock meanwhile (ls_lock_in_cold):
		 * build the words again from the image's word, which must still
		 * hold our lock
		 */
		if (!ls_word_holds_lock(now, xid))
			elog(ERROR, "row " UINT64_FORMAT " of leanstore table \"%s\" lost this transaction's lock",
				 rowid, RelationGetRelationName(rel));
		locked = now;
	}
}

TM_Result
ls_tuple_update(Relation rel, ItemPointer otid, TupleTableSlot *slot,
				CommandId cid, Snapshot snapshot, Snapshot crosscheck,
				bool wait, TM_FailureData *tmfd, LockTupleMode *lockmode,
				bool *update_indexes)
{
	ls_hot_table *tbl = ls_table_for(rel);
	uint64		rowid = ls_tid_rowid_of(rel, otid);
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
	bool		summarize = false;	/* in place, but BRIN needs the values */
	ls_hot_version *v;
	uint64		newrowid;
	TM_Result	res;
	bool		cold = false;	/* locked in the cold tier */
	bool		plain;			/* an update the cold tier can make */
	uint64		locked = 0;		/* the image's word after the cold lock */
	bool		can_spill;
	bool		spill = false;	/* the hot tier is full: new version cold */

	ls_write_serial++;		/* voids a COPY FREEZE's range */

	tmfd->traversed = false;
	*update_indexes = false;
	*lockmode = LockTupleNoKeyExclusive;
	ls_check_unpublished(rel, CMD_UPDATE);
	CheckForSerializableConflictIn(rel, otid, ItemPointerGetBlockNumber(otid));

	newtup = ExecFetchSlotHeapTuple(slot, true, &shouldFree);
	newtup->t_tableOid = RelationGetRelid(rel);
	hot_attrs = RelationGetIndexAttrBitmap(rel, INDEX_ATTR_BITMAP_ALL);
	key_attrs = RelationGetIndexAttrBitmap(rel, INDEX_ATTR_BITMAP_KEY);
	interesting = bms_union(hot_attrs, key_attrs);

	/*
	 * Heap decides the lock strength (key update or not) from the version
	 * the caller names before it waits: compare with the row's newest
	 * version now, and again with the version we locked below.
	 */
	{
		HeapTuple	peek = NULL;
		ls_hot_row *prow;

		ls_epoch_enter();
		prow = ls_row_get(tbl, rowid);
		if (prow != NULL)
		{
			ls_hot_version *pv = ls_row_newest_valid(prow);

			if (pv != NULL)
			{
				Size		size = ls_heaptuple_size(pv, rel);

				peek = ls_version_to_heaptuple(pv, rel, rowid, palloc(size), size);
			}
		}
		ls_epoch_exit();
		if (peek != NULL)
		{
			modified = ls_modified_attrs(rel, key_attrs, peek, newtup);
			if (bms_overlap(modified, key_attrs))
				*lockmode = LockTupleExclusive;
			bms_free(modified);
			pfree(peek);
		}
	}

	/*
	 * A large update of cold rows writes in the cold tier (plain cases, as
	 * for DELETE): lock the row in its image now, write the new version
	 * into the tree below
	 */
	plain = snapshot != NULL && IsMVCCSnapshot(snapshot);
	if (plain && ls_row_maybe_cold(tbl, rowid) &&
		ls_cold_lock_for_update(rel, tbl, rowid, xid, snapshot, crosscheck, *lockmode,
								&oldtup, &locked))
	{
		cold = true;
		res = TM_Ok;
	}
	else
	{
		/* a cold row the full hot tier cannot take: update it in the cold tier */
retry_cold:
		ls_migrate_soft = plain && ls_cold_rewrite_allowed(rel);
		ls_migrate_found_full = false;
		res = ls_acquire(rel, tbl, rowid, cid, xid,
						 (snapshot && IsMVCCSnapshot(snapshot)) ? snapshot : NULL,
						 crosscheck, false, InvalidTransactionId, *lockmode,
						 wait ? LS_WAIT_BLOCK : LS_WAIT_NONE, &tuplock, XLTW_Update,
						 tmfd, NULL, &oldtup, NULL, NULL, NULL, NULL, NULL);
		ls_migrate_soft = false;
		if (ls_migrate_found_full)
		{
			if (!ls_cold_lock_for_update(rel, tbl, rowid, xid, snapshot, crosscheck, *lockmode,
										 &oldtup, &locked))
			{
				if (ls_cold_held(rel, tbl, rowid, wait, XLTW_Update, LockWaitBlock, *lockmode, tmfd,
								 "update a row of", &res))
					goto retry_cold;
			}
			else
			{
				cold = true;
				res = TM_Ok;
			}
		}
	}
	if (res != TM_Ok)
	{
		if (shouldFree)
			heap_freetuple(newtup);
		goto done;
	}

	modified = ls_modified_attrs(rel, interesting, oldtup, newtup);
	key_changed = bms_overlap(modified, key_attrs);
	/* a row updated in the cold tier moves to a new rowid */
	in_place = !cold && !ls_has_row_triggers(rel);
	if (in_place && bms_overlap(modified, hot_attrs))
	{
		summarize = ls_only_summarizing_indexes(rel);
		in_place = summarize;
	}

	if (key_changed && *lockmode != LockTupleExclusive)
	{
		/* upgrade our lock: FOR KEY SHARE lockers must wait for us */
		*lockmode = LockTupleExclusive;
		res = ls_acquire(rel, tbl, rowid, cid, xid, NULL, NULL, false,
						 InvalidTransactionId, LockTupleExclusive,
						 LS_WAIT_BLOCK, &tuplock, XLTW_Update,
						 tmfd, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
		if (res != TM_Ok)
			elog(ERROR, "could not upgrade this transaction's own row lock in leanstore table \"%s\" (result %d)",
				 RelationGetRelationName(rel), (int) res);
	}
	*lockmode = key_changed ? LockTupleExclusive : LockTupleNoKeyExclusive;

	stored = ls_toast_if_needed(rel, newtup, oldtup, 0);
	/* a new rowid (it may throw) before the version is allocated */
	newrowid = in_place ? rowid : ls_reserve_rowid_for(rel, tbl, stored);

	/*
	 * The new version: for an update in the cold tier only an image (this
	 * backend's memory); else in the hot tier, or, when that is full, an
	 * image for the cold tree at a new rowid (spill: heap's non-HOT update)
	 */
	can_spill = !cold && ls_cold_rewrite_allowed(rel);
	v = ls_version_from_heaptuple_in(rel, stored,
									 cold ? LS_VH_LOCAL :
									 can_spill ? LS_VH_TIER_OR_NULL : LS_VH_TIER);
	if (v == NULL)
	{
		spill = true;
		if (in_place)
		{
			in_place = summarize = false;
			newrowid = ls_reserve_rowid_for(rel, tbl, stored);
		}
		v = ls_version_from_heaptuple_in(rel, stored, LS_VH_LOCAL);
	}
	atomic_store(&v->xmin_word, ls_hv_word(xid, 0));
	v->cmin = cid;

	if (cold)
		ls_debug_update_wait();
	if (in_place)
	{
		ls_finish_write(rel, tbl, rowid, xid,
						ls_mx_status(*lockmode, true), 0,
						cid, LS_ROWID_INVALID, v, v, NULL);
		ls_abort_note_insert(tbl, rowid, xid);
	}
	else if (cold && ls_update_in_cold(rel, tbl, rowid, xid, cid, *lockmode,
									  locked, newrowid, v))
	{
		ls_version_discard(v);
		ls_hashcache_forget_tuple(rel, oldtup, rowid);
	}
	else
	{
		ls_hot_row *newrow;
		ls_status	st = LS_NO_SPACE;

		if ((atomic_load(&v->user_flags) & LS_UF_LOCAL) && !spill)
		{
			/* the cold row was migrated meanwhile: the version goes hot */
			ls_hot_version *hv = ls_version_copy(rel, NULL, v->len, v->data);

			atomic_store(&hv->xmin_word, atomic_load(&v->xmin_word));
			hv->cmin = v->cmin;
			ls_version_discard(v);
			v = hv;
		}
		if (!spill)
		{
			ls_epoch_enter();
			st = ls_hot_row_insert(ls_ctx(), tbl, newrowid, LS_ORIGIN_INSERTED, v, &newrow);
			ls_epoch_exit();
			spill = ((st == LS_NO_SPACE || st == LS_NO_MEMORY) && can_spill);
		}
		if (spill)
		{
			ls_cold_note_full();
			ls_update_into_cold(rel, tbl, rowid, newrowid, xid, cid, *lockmode, v);
			ls_hashcache_forget_tuple(rel, oldtup, rowid);
			goto written;
		}
		if (st != LS_OK)
		{
			ls_hot_version_free(ls_ctx(), v);
			ls_report_status(st, rel, "update a row of");
		}
		ls_vm_note_insert(rel, tbl, newrowid);
		ls_abort_note_insert(tbl, newrowid, xid);
		ls_log_note(tbl, newrowid);
		ls_finish_write(rel, tbl, rowid, xid,
						ls_mx_status(*lockmode, true), LS_HV_XMAX_MOVED,
						cid, newrowid, NULL, v, NULL);
		ls_hashcache_forget_tuple(rel, oldtup, rowid);
	}

written:
	ls_rowid_to_tid(newrowid, &newtup->t_self);
	ls_stamp_new_tuple(newtup, xid, cid);
	slot->tts_tableOid = RelationGetRelid(rel);
	slot->tts_tid = newtup->t_self;
	*update_indexes = !in_place || summarize;
	pgstat_count_heap_update(rel, in_place && !summarize);
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

/*
 * FIND_LAST_VERSION reached a row that a committed update moved to another
 * partition: release our heavyweight tuple lock and fail as heap does.
 */
static void
ls_error_moved_partition(Relation rel, ItemPointer locked_tid, LOCKMODE tuplock)
{
	if (tuplock != NoLock)
		UnlockTuple(rel, locked_tid, tuplock);
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("tuple to be locked was already moved to another partition due to concurrent update")));
}

/*
 * ls_tuple_lock's lock of a cold row while the hot tier is full: the lock
 * goes into the row's image instead of migrating the row (plain cases:
 * the inserter committed and is seen by rule, or, without one, by a fresh
 * snapshot -- a lock in READ COMMITTED takes the newest committed row, as
 * heap's does; with prior, the inserter is prior, running or committed:
 * see ls_lock_follow_in_cold; no other xmax that counts, or lockers our
 * lock may join).  false: nothing done.  On true the row is in slot (when
 * given), *newer says whether snapshot does not see it, and *through
 * (when given) names the running no-key update a KEY SHARE lock went
 * through (invalid xid: none).
 */
static bool
ls_lock_in_cold(Relation rel, ls_hot_table *tbl, uint64 rowid, TransactionId xid,
				LockTupleMode mode, Snapshot rule, Snapshot snapshot,
				TransactionId prior, TupleTableSlot *slot, bool *newer,
				LsColdUpdater *through)
{
	LsColdUpdater upd;
	uint64		held = ls_cold_lockers(tbl, rowid,
									   mode == LockTupleKeyShare ? &upd : NULL);
	uint64		expect;
	uint64		lock_word;
	HeapTuple	tup;

	/*
	 * Lockers in the image: share their lock when no running one conflicts
	 * with ours (FOR SHARE beside FOR SHARE, KEY SHARE beside anything but
	 * FOR UPDATE, NO KEY UPDATE beside KEY SHARE, any lock beside the locks
	 * of other levels of this transaction), as heap does through a
	 * multixact; the merged word goes in only if the image still holds the
	 * word judged here.  A NO KEY UPDATE lock there may be an update's
	 * first half in the cold tier: its second half finds the KEY SHARE
	 * lockers that joined and builds its words again (ls_update_in_cold).
	 * KEY SHARE also joins a running no-key update there (*through: the
	 * caller locks its new version too).  A conflict is the caller's to
	 * wait for.
	 */
	if (through != NULL)
	{
		through->xid = InvalidTransactionId;
		through->next_rowid = LS_ROWID_INVALID;
	}
	lock_word = ls_cold_write_word(held, xid, ls_mx_status(mode, false), &expect);
	if (held != 0 && expect == 0)
		return false;
	if (!ls_cold_lock_row(rel, tbl, rowid, xid, rule ? rule : GetLatestSnapshot(),
						  snapshot, lock_word, expect, prior, &tup, newer))
		return false;
	if (slot != NULL)
	{
		/* the slot owns a copy in its own context (ls_store_version) */
		MemoryContext oldcxt = MemoryContextSwitchTo(slot->tts_mcxt);
		HeapTuple	copy = heap_copytuple(tup);

		MemoryContextSwitchTo(oldcxt);
		ls_slot_store_owned(slot, rel, copy);
	}
	pfree(tup);
	if (through != NULL && mode == LockTupleKeyShare && expect != 0)
		*through = upd;
	return true;
}

/*
 * The follow loop's lock of frowid, prior's new version (heap's
 * heap_lock_updated_tuple), when the full hot tier cannot take that row:
 * the lock goes into its image, after waiting for a conflicting holder
 * there.  TM_Invisible: the image is not prior's any more (its update
 * aborted and the version went): our lock on the old version is all there
 * is to hold; or, with *hot_now, the row was migrated meanwhile (the
 * caller locks it in the hot tier).  Otherwise TM_Ok (*through: a running no-key
 * update of that version the lock went through, whose new version is to
 * be locked next), TM_WouldBlock, or what a committed writer in the image
 * means (ls_cold_held; a new version that nothing holds and nothing
 * changed cannot fail to take the lock, so the "hot tier is full" error
 * there does not come).
 */
static TM_Result
ls_lock_follow_in_cold(Relation rel, ls_hot_table *tbl, uint64 frowid, TransactionId xid,
					   LockTupleMode mode, TransactionId prior, TM_FailureData *tmfd,
					   LsColdUpdater *through, bool *hot_now)
{
	TM_Result	res;
	bool		newer;

	*hot_now = false;
	through->xid = InvalidTransactionId;
	through->next_rowid = LS_ROWID_INVALID;
	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		if (!ls_cold_inserted_by(tbl, frowid, prior))
		{
			/* a row that went hot meanwhile is the hot path's to lock */
			*hot_now = ls_hot_has_row(tbl, frowid);
			return TM_Invisible;
		}
		if (ls_lock_in_cold(rel, tbl, frowid, xid, mode, NULL, NULL, prior, NULL, &newer,
							through))
			return TM_Ok;
		/* waits whatever the policy (see the follow loop) */
		if (!ls_cold_held(rel, tbl, frowid, true, XLTW_LockUpdated, LockWaitBlock, mode, tmfd,
						  "lock a row of", &res))
			return res;
	}
}

TM_Result
ls_tuple_lock(Relation rel, ItemPointer tid, Snapshot snapshot,
			  TupleTableSlot *slot, CommandId cid, LockTupleMode mode,
			  LockWaitPolicy wait_policy, uint8 flags, TM_FailureData *tmfd)
{
	ls_hot_table *tbl = ls_table_for(rel);
	uint64		rowid = ls_tid_rowid_of(rel, tid);
	TransactionId xid = GetCurrentTransactionId();
	bool		follow = (flags & TUPLE_LOCK_FLAG_FIND_LAST_VERSION) != 0;
	Snapshot	rule = NULL;
	LOCKMODE	tuplock = NoLock;	/* heavyweight tuple lock held */
	ItemPointerData locked_tid = *tid;
	LsWaitMode	policy;
	TM_Result	res;
	int			hops = 0;
	TransactionId follow_xid = InvalidTransactionId;
	uint64		follow_rowid = LS_ROWID_INVALID;
	int			restarts = 0;
	bool		cold_ok;		/* may lock in the cold tier when it is full */
	LsColdUpdater through;		/* KEY SHARE through an update in an image */

	ls_write_serial++;		/* voids a COPY FREEZE's range */

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
	/* plain cases, as for a delete or an update in the cold tier */
	cold_ok = ls_cold_rewrite_allowed(rel);

again:
	for (;;)
	{
		bool		newer = false;
		LsRowCheck chk = {0};	/* (not set when the row stays cold) */

		/*
		 * A cold row the full hot tier cannot take: lock it in its image
		 * (first try that directly while the tier was full a moment ago:
		 * each failed migration packs first)
		 */
		if (cold_ok && ls_cold_full_seen() && ls_row_maybe_cold(tbl, rowid) &&
			ls_lock_in_cold(rel, tbl, rowid, xid, mode, rule, snapshot,
							InvalidTransactionId, slot, &newer, &through))
		{
			res = TM_Ok;
			/* a running no-key update the KEY SHARE lock went through */
			follow_xid = through.xid;
			follow_rowid = through.next_rowid;
		}
		else
		{
			ls_migrate_soft = cold_ok;
			ls_migrate_found_full = false;
			res = ls_acquire(rel, tbl, rowid, cid, xid, rule, NULL, true,
							 InvalidTransactionId, mode, policy, &tuplock, XLTW_Lock,
							 tmfd, slot, NULL, snapshot, &newer, &chk,
							 &follow_xid, &follow_rowid);
			ls_migrate_soft = false;
			if (ls_migrate_found_full)
			{
				res = TM_Ok;
				if (ls_lock_in_cold(rel, tbl, rowid, xid, mode, rule, snapshot,
									InvalidTransactionId, slot, &newer, &through))
				{
					follow_xid = through.xid;
					follow_rowid = through.next_rowid;
				}
				else if (ls_cold_held(rel, tbl, rowid, true, XLTW_Lock, wait_policy, mode, tmfd,
									  "lock a row of", &res))
					continue;
			}
		}
		if (res == TM_Ok && follow && newer)
			tmfd->traversed = true;
		if (res == TM_Updated && chk.keyshare_moved)
		{
			/*
			 * KEY SHARE meets a committed update that moved the row without
			 * touching the key: heap locks the old version (TM_Ok, the
			 * caller gets the version it named) and the newer ones; the
			 * newest is what counts here.
			 */
			uint64		next = chk.next_rowid;
			int			khops = 0;

			if (tuplock != NoLock)
			{
				UnlockTuple(rel, &locked_tid, tuplock);
				tuplock = NoLock;
			}
			for (;;)
			{
				TM_FailureData ktmfd;
				LsRowCheck kchk;
				ItemPointerData ktid;

				ls_rowid_to_tid(next, &ktid);
				ls_migrate_soft = cold_ok;
				ls_migrate_found_full = false;
				res = ls_acquire(rel, tbl, next, cid, xid, NULL, NULL, true,
								 InvalidTransactionId, mode, policy, &tuplock,
								 XLTW_LockUpdated, &ktmfd, NULL, NULL, NULL,
								 NULL, &kchk, &follow_xid, &follow_rowid);
				ls_migrate_soft = false;
				if (tuplock != NoLock)
				{
					UnlockTuple(rel, &ktid, tuplock);
					tuplock = NoLock;
				}
				if (ls_migrate_found_full)
				{
					/*
					 * That version is a cold image the full hot tier cannot
					 * take (a no-key update made in the cold tier, or
					 * spilled): the loop above locks it in its image (until
					 * session 29: "hot tier is full"); without
					 * FIND_LAST_VERSION the caller gets TM_Updated
					 */
					res = TM_Updated;
					memset(&kchk, 0, sizeof(kchk));
					ls_rowid_to_tid(next, &ktmfd.ctid);
					ktmfd.xmax = InvalidTransactionId;
					ktmfd.cmax = InvalidCommandId;
					ktmfd.traversed = false;
					*tmfd = ktmfd;
					break;
				}
				if (res == TM_Updated && kchk.keyshare_moved)
				{
					ls_update_chain_step(rel, next, &khops);
					next = kchk.next_rowid;
					continue;
				}
				if (res != TM_Ok && res != TM_WouldBlock)
					*tmfd = ktmfd;
				break;
			}

			/*
			 * A newer version was updated again, re-keyed or moved (and
			 * committed): with FIND_LAST_VERSION the caller asked for the
			 * newest, so go on from that version below, as heap follows
			 * its t_ctid chain; until session 29 this returned TM_Updated
			 * ("unexpected table_tuple_lock status: 3")
			 */
			if (!(res == TM_Updated && follow))
				break;
			if (ls_migrate_found_full)
			{
				/* lock next itself, in its image (the loop's first case) */
				ls_migrate_found_full = false;
				rowid = next;
				ls_rowid_to_tid(rowid, &locked_tid);
				tmfd->traversed = true;
				continue;
			}
			rowid = next;
			ls_rowid_to_tid(rowid, &locked_tid);
		}
		if (res == TM_Updated && follow &&
			ItemPointerIndicatesMovedPartitions(&tmfd->ctid))
			ls_error_moved_partition(rel, &locked_tid, tuplock);
		if (res == TM_Updated && follow)
		{
			uint64		next = ls_tid_to_rowid(&tmfd->ctid);

			if (next != rowid && next != LS_ROWID_INVALID)
			{
				ls_update_chain_step(rel, rowid, &hops);
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

	/*
	 * KEY SHARE through a running non-key update: lock that updater's new
	 * version too (heap's follow_updates), so our lock holds whichever way
	 * the updater ends.
	 */
	for (int fhops = 0; res == TM_Ok && TransactionIdIsValid(follow_xid) &&
		 fhops < 1000; fhops++)
	{
		TM_FailureData ftmfd;
		LsRowCheck fchk;
		ItemPointerData ftid;
		LOCKMODE	ftuplock = NoLock;
		TransactionId prior = follow_xid;
		uint64		frowid = follow_rowid;
		TM_Result	fres;

		if (frowid == LS_ROWID_INVALID)
			break;
		ls_rowid_to_tid(frowid, &ftid);
		ls_migrate_soft = cold_ok;
		ls_migrate_found_full = false;

		/*
		 * Waits whatever the policy, as heap_lock_updated_tuple does:
		 * NOWAIT and SKIP LOCKED are about the version the caller named
		 */
		fres = ls_acquire(rel, tbl, frowid, cid, xid, NULL, NULL, true, prior,
						  mode, LS_WAIT_BLOCK, &ftuplock, XLTW_LockUpdated, &ftmfd,
						  NULL, NULL, NULL, NULL, &fchk, &follow_xid,
						  &follow_rowid);
		ls_migrate_soft = false;
		if (ftuplock != NoLock)
			UnlockTuple(rel, &ftid, ftuplock);
		if (ls_migrate_found_full)
		{
			/*
			 * prior's new version went into the cold tree (its update found
			 * the tier full) and the tier cannot take it now: lock it in
			 * its image, and go on through a running no-key update of it
			 */
			bool		hot_now;

			memset(&fchk, 0, sizeof(fchk));
			fres = ls_lock_follow_in_cold(rel, tbl, frowid, xid, mode, prior,
										  &ftmfd, &through, &hot_now);
			if (hot_now)
			{
				/* migrated meanwhile: lock it in the hot tier */
				follow_xid = prior;
				follow_rowid = frowid;
				continue;
			}
			follow_xid = fres == TM_Ok ? through.xid : InvalidTransactionId;
			follow_rowid = through.next_rowid;
		}
		if (fres == TM_WouldBlock)
		{
			res = fres;
			break;
		}
		if (fres == TM_Updated && fchk.keyshare_moved)
		{
			/*
			 * The updater of that version committed a non-key update that
			 * moved the row while we looked: follow it too (heap's
			 * heap_lock_updated_tuple goes on through committed updates).
			 */
			follow_xid = ftmfd.xmax;
			follow_rowid = fchk.next_rowid;
			continue;
		}

		/*
		 * The updater aborted and its new version is gone (removed at its
		 * abort, or by GC): our lock on the old version is all there is
		 * to hold, as heap_lock_updated_tuple does for a successor pruned
		 * after its inserter aborted.
		 */
		if (fres == TM_Deleted && TransactionIdDidAbort(prior))
			break;

		/*
		 * The updater deleted or re-keyed its new version and committed
		 * while we waited: heap's lock fails the same way (TM_Deleted,
		 * TM_Updated: EvalPlanQual goes on from there).  An updater that
		 * aborted leaves our lock on the old version: done.
		 */
		if (fres == TM_Updated || fres == TM_Deleted)
		{
			res = fres;
			*tmfd = ftmfd;
			/* the updater then moved the row to another partition */
			if (res == TM_Updated && follow &&
				ItemPointerIndicatesMovedPartitions(&tmfd->ctid))
				ls_error_moved_partition(rel, &locked_tid, tuplock);
			if (res == TM_Updated && follow &&
				!ItemPointerIndicatesMovedPartitions(&tmfd->ctid) &&
				ls_tid_to_rowid(&tmfd->ctid) != LS_ROWID_INVALID &&
				restarts++ < 1000)
			{
				if (tuplock != NoLock)
				{
					UnlockTuple(rel, &locked_tid, tuplock);
					tuplock = NoLock;
				}
				rowid = ls_tid_to_rowid(&tmfd->ctid);
				ls_rowid_to_tid(rowid, &locked_tid);
				tmfd->traversed = true;
				follow_xid = InvalidTransactionId;
				goto again;
			}
			break;
		}
		if (fres != TM_Ok || (follow_xid == prior && follow_rowid == frowid))
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
