/*
 * hold.c - row latches and epochs held like LWLocks.
 *
 * A backend holds at most one row latch (ls_row_lock, or ls_row_trylock
 * for pack, which skips a busy row) and any number of
 * nested epochs (ls_epoch_enter).  Both are short: a few stores under the
 * latch, a bounded number of rows inside an epoch, never a wait for another
 * transaction and never across a return to the executor.  Like an LWLock:
 *
 *  - Interrupts are held (HOLD_INTERRUPTS) while either is held, so a
 *    CHECK_FOR_INTERRUPTS reached meanwhile (palloc's out-of-memory path,
 *    a callee) cannot throw out of the middle of a chain change, and a
 *    cancel is served only once the latch or epoch is given back.
 *  - An error (ereport ERROR resets the holdoff count) leaves them held;
 *    the (sub)transaction abort callbacks and process exit release them
 *    (ls_release_held).  So a call that may throw is allowed inside an
 *    epoch, and even under the latch (palloc, ls_heaptuple_size on a
 *    corrupted version, ls_log_append): nothing between the throw and the
 *    abort callback touches a leanstore row (a failed portal's executor is
 *    not shut down, see "Errors inside an epoch" in README.md).  The
 *    asserting build's fail points (ls_test_fail_*) throw at such places so
 *    that regress ls_hold checks what the error leaves behind.
 *  - One still held when a transaction commits is a bug: the pre-commit
 *    callback reports it (ls_check_held_at_commit): an error, so the
 *    transaction fails, in the asserting build (LS_ASSERTS); a WARNING in
 *    the release build, which then releases it so that the backend goes on.
 *
 * ls_row_latch_held_by_me and ls_in_epoch let functions whose contract
 * says "under the row latch" / "inside an epoch" assert it.
 */
#include "postgres.h"

#include "miscadmin.h"

#include "ls_pg.h"

static ls_hot_row *ls_held_latch = NULL;

/*
 * Version-chain walks (ls_chain_next): the bound, and an overrun found
 * inside an epoch, reported once the epoch is left.
 */
int			ls_chain_bound = LS_CHAIN_BOUND;
static bool ls_chain_bad = false;
static ls_hot_key ls_chain_bad_key;
static uint64 ls_chain_bad_rowid;

/* Epoch levels entered through ls_epoch_enter (each holds interrupts). */
static int	ls_epoch_holds = 0;

/* Outermost epochs entered so far (ls_note_read: "still the same epoch?") */
uint64		ls_epoch_serial = 0;

bool
ls_row_latch_held_by_me(const ls_hot_row *row)
{
	return row != NULL && ls_held_latch == row;
}

bool
ls_holds_row_latch(void)
{
	return ls_held_latch != NULL;
}

bool
ls_in_epoch(void)
{
	return ls_my_ctx != NULL && ls_hot_in_epoch(ls_my_ctx);
}

/* Give back one interrupt holdoff taken by us (never below zero). */
static inline void
ls_resume_interrupts(void)
{
	Assert(InterruptHoldoffCount > 0);
	if (InterruptHoldoffCount > 0)
		RESUME_INTERRUPTS();
}

void
ls_epoch_enter(void)
{
	ls_hot_ctx *ctx = ls_ctx();

	HOLD_INTERRUPTS();
	ls_hot_epoch_enter(ctx);
	if (ls_epoch_holds++ == 0)
		ls_epoch_serial++;
}

static void ls_chain_report(void) pg_attribute_noreturn();

void
ls_epoch_exit(void)
{
	Assert(ls_epoch_holds > 0);
	Assert(ls_in_epoch());
	ls_hot_epoch_exit(ls_my_ctx);
	/* cold rows read in the epoch were stand-ins valid inside it only */
	if (!ls_hot_in_epoch(ls_my_ctx))
		ls_standins_release();
	if (ls_epoch_holds > 0)
	{
		ls_epoch_holds--;
		ls_resume_interrupts();
	}
	if (unlikely(ls_chain_bad) && ls_epoch_holds == 0)
		ls_chain_report();
}

/*
 * A chain walk passed the bound (inside an epoch): find the row's table
 * (rare path: look the rowid up in every table of the tier; a row no map
 * holds -- a cold stand-in, or a row evicted or removed after the read
 * that found it -- belongs to the table this backend last read it from,
 * ls_last_read_table) and remember it for ls_epoch_exit, which raises the
 * error outside the epoch.
 */
void
ls_chain_overrun(ls_hot_row *row)
{
	ls_hot	   *hot = ls_shared_hot();
	uint32		cursor = 0;
	ls_hot_table *tbl;

	Assert(ls_in_epoch());
	if (ls_chain_bad)
		return;
	ls_chain_bad = true;
	ls_chain_bad_rowid = row->rowid;
	memset(&ls_chain_bad_key, 0, sizeof(ls_chain_bad_key));
	while ((tbl = ls_hot_table_next(hot, &cursor)) != NULL)
	{
		if (ls_hot_row_get(tbl, row->rowid) == row)
		{
			ls_chain_bad_key = ls_hot_table_get_key(tbl);
			return;
		}
	}
	if ((tbl = ls_last_read_table(row->rowid)) != NULL)
		ls_chain_bad_key = ls_hot_table_get_key(tbl);
}

static void
ls_chain_report(void)
{
	ls_hot_key	key = ls_chain_bad_key;
	uint64		rowid = ls_chain_bad_rowid;
	char	   *relname;

	ls_chain_bad = false;
	relname = ls_storage_relname(key);
	/* the table is named where this database knows it, else its storage */
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("version chain of row " UINT64_FORMAT " is longer than %d versions",
					rowid, ls_chain_bound),
			 errdetail("The chain is corrupted (a cycle) or no garbage collection has shortened it."),
			 relname != NULL ? errhint("Check the table with leanstore_verify.") : 0,
			 ls_storage_errcontext(relname, key)));
	pg_unreachable();
}

void
ls_row_lock(ls_hot_row *row)
{
	Assert(ls_held_latch == NULL);
	HOLD_INTERRUPTS();
	ls_hot_row_lock(row);
	ls_held_latch = row;
	ls_test_fail_at(LS_FAIL_ROW_LATCH);
}

/*
 * The latch of row if nobody holds it (pack, which skips a busy row):
 * held like ls_row_lock's when it returns true.
 */
bool
ls_row_trylock(ls_hot_row *row)
{
	Assert(ls_held_latch == NULL);
	HOLD_INTERRUPTS();
	if (!ls_hot_row_trylock(row))
	{
		ls_resume_interrupts();
		return false;
	}
	ls_held_latch = row;
	return true;
}

void
ls_row_unlock(ls_hot_row *row)
{
	Assert(ls_row_latch_held_by_me(row));
	ls_held_latch = NULL;
	ls_hot_row_unlock(row);
	ls_resume_interrupts();
}

/*
 * The caller is about to give the latch back through the core
 * (ls_hot_row_remove releases it itself).
 */
void
ls_row_forget_latch(void)
{
	Assert(ls_held_latch != NULL);
	if (ls_held_latch != NULL)
	{
		ls_held_latch = NULL;
		ls_resume_interrupts();
	}
}

/*
 * Error recovery and process exit: release whatever is still held.  The
 * interrupt holdoffs were already reset by the error (or do not matter at
 * exit), so they are only forgotten here.
 */
void
ls_release_held(void)
{
	if (ls_held_latch != NULL)
	{
		ls_hot_row_unlock(ls_held_latch);
		ls_held_latch = NULL;
	}
	if (ls_my_ctx != NULL && ls_hot_in_epoch(ls_my_ctx))
		ls_hot_epoch_exit_all(ls_my_ctx);
	ls_standins_release();
	ls_epoch_holds = 0;
	ls_chain_bad = false;
}

void
ls_report_long_update_chain(Relation rel, uint64 rowid)
{
	Assert(!ls_in_epoch());
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("update chain through row " UINT64_FORMAT " in leanstore table \"%s\" is longer than %d rows",
					rowid, RelationGetRelationName(rel), ls_chain_bound),
			 errdetail("The links between moved row versions form a cycle, or the row moved more often than that."),
			 errhint("Check the table with leanstore_verify.")));
}

/*
 * Pre-commit: nothing may be held any more.  A leak is a bug in leanstore;
 * it is reported, never released silently.
 */
void
ls_check_held_at_commit(void)
{
	bool		latch = ls_held_latch != NULL;
	bool		epoch = ls_in_epoch();

	if (!latch && !epoch)
		return;
#ifdef LS_ASSERTS
	ereport(ERROR,
			(errcode(ERRCODE_INTERNAL_ERROR),
			 errmsg_internal("leanstore %s still held at commit",
							 latch ? "row latch" : "epoch")));
#else
	ereport(WARNING,
			(errcode(ERRCODE_INTERNAL_ERROR),
			 errmsg_internal("leanstore %s still held at commit, released",
							 latch ? "row latch" : "epoch")));
	{
		int			holds = ls_epoch_holds + (latch ? 1 : 0);

		ls_release_held();
		while (holds-- > 0)
			ls_resume_interrupts();
	}
#endif
}

#ifdef LS_ASSERTS
/*
 * Test hooks of the asserting build only (regress ls_hold creates the SQL
 * functions itself): 'hold' reports the interrupt holdoff count outside,
 * inside an epoch and under nothing again; 'leak-epoch' returns with an
 * epoch held, so that the commit check must fail the transaction;
 * 'fail-in-epoch' and 'fail-under-latch' arm a fail point for this
 * backend's next pass (ls_heaptuple_size, inside an epoch: every scan,
 * fetch and row lock that returns a row; ls_row_lock, with the latch just
 * taken); 'state' reports what this backend holds.
 */
#include "access/relation.h"
#include "fmgr.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(leanstore_test_hold);
PG_FUNCTION_INFO_V1(leanstore_test_chain_bound);
PG_FUNCTION_INFO_V1(leanstore_test_row_latched);

LsFailPoint ls_test_fail_armed = LS_FAIL_NONE;

/* A fail point was reached while armed: throw, as palloc or a check would. */
void
ls_test_fail_fire(void)
{
	static const char *const names[] = {"", "in-epoch", "under-latch", "in-pack", "dead-slot", "tier-full"};
	LsFailPoint p = ls_test_fail_armed;

	ls_test_fail_armed = LS_FAIL_NONE;
	ereport(ERROR,
			(errcode(ERRCODE_INTERNAL_ERROR),
			 errmsg_internal("injected failure %s (epoch held: %s, row latch held: %s)",
							 names[p], ls_in_epoch() ? "yes" : "no",
							 ls_holds_row_latch() ? "yes" : "no")));
}

/*
 * Is the row latch of (table, tid) taken (by anybody)?  A latch an error
 * left behind would make every later writer of the row spin for ever;
 * this asks without waiting.
 */
Datum
leanstore_test_row_latched(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	ItemPointer tid = (ItemPointer) PG_GETARG_POINTER(1);
	Relation	rel = relation_open(relid, AccessShareLock);
	ls_hot_table *tbl = ls_table_for(rel);
	uint64		rowid = ls_tid_to_rowid(tid);
	bool		latched = false;
	ls_hot_row *row;

	ls_epoch_enter();
	row = rowid == LS_ROWID_INVALID ? NULL : ls_hot_row_get(tbl, rowid);
	if (row != NULL)
	{
		latched = !ls_hot_row_trylock(row);
		if (!latched)
			ls_hot_row_unlock(row);
	}
	ls_epoch_exit();
	relation_close(rel, AccessShareLock);
	PG_RETURN_BOOL(latched);
}

/*
 * Lower (or restore, with 0) this backend's version-chain bound, so that a
 * test reaches it with a few updates (regress ls_chain).
 */
Datum
leanstore_test_chain_bound(PG_FUNCTION_ARGS)
{
	int32		bound = PG_GETARG_INT32(0);

	if (bound < 0 || bound == 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("chain bound must be 0 (the default) or at least 2")));
	ls_chain_bound = bound == 0 ? LS_CHAIN_BOUND : bound;
	PG_RETURN_INT32(ls_chain_bound);
}

Datum
leanstore_test_hold(PG_FUNCTION_ARGS)
{
	char	   *what = text_to_cstring(PG_GETARG_TEXT_PP(0));
	uint32		before = InterruptHoldoffCount;

	if (strcmp(what, "hold") == 0)
	{
		uint32		inside;
		uint32		nested;

		ls_epoch_enter();
		inside = InterruptHoldoffCount;
		ls_epoch_enter();
		nested = InterruptHoldoffCount;
		ls_epoch_exit();
		ls_epoch_exit();
		elog(NOTICE, "holdoffs: epoch +%u, nested +%u, after +%u",
			 inside - before, nested - before, InterruptHoldoffCount - before);
	}
	else if (strcmp(what, "leak-epoch") == 0)
		ls_epoch_enter();
	else if (strcmp(what, "fail-in-epoch") == 0)
		ls_test_fail_armed = LS_FAIL_IN_EPOCH;
	else if (strcmp(what, "fail-under-latch") == 0)
		ls_test_fail_armed = LS_FAIL_ROW_LATCH;
	else if (strcmp(what, "dead-slot-full") == 0)
		ls_test_fail_armed = LS_FAIL_DEAD_SLOT;
	else if (strcmp(what, "tier-full") == 0)
		ls_test_fail_armed = LS_FAIL_TIER_FULL;
	else if (strcmp(what, "disarm") == 0)
		ls_test_fail_armed = LS_FAIL_NONE;
	else if (strcmp(what, "state") == 0)
		elog(NOTICE, "epoch held: %s, row latch held: %s, holdoffs: %u, fail point armed: %s",
			 ls_in_epoch() ? "yes" : "no", ls_holds_row_latch() ? "yes" : "no",
			 InterruptHoldoffCount, ls_test_fail_armed != LS_FAIL_NONE ? "yes" : "no");
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown test action \"%s\"", what)));
	PG_RETURN_VOID();
}
#endif
