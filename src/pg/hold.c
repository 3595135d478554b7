/*
 * hold.c - row latches and epochs held like LWLocks.
 *
 * A backend holds at most one row latch (ls_row_lock) and any number of
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
 *    (ls_release_held).
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

/* Epoch levels entered through ls_epoch_enter (each holds interrupts). */
static int	ls_epoch_holds = 0;

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
	ls_epoch_holds++;
}

void
ls_epoch_exit(void)
{
	Assert(ls_epoch_holds > 0);
	Assert(ls_in_epoch());
	ls_hot_epoch_exit(ls_my_ctx);
	if (ls_epoch_holds > 0)
	{
		ls_epoch_holds--;
		ls_resume_interrupts();
	}
}

void
ls_row_lock(ls_hot_row *row)
{
	Assert(ls_held_latch == NULL);
	HOLD_INTERRUPTS();
	ls_hot_row_lock(row);
	ls_held_latch = row;
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
	ls_epoch_holds = 0;
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
 * Test hook of the asserting build only (regress ls_hold creates the SQL
 * function itself): 'hold' reports the interrupt holdoff count outside,
 * inside an epoch and under nothing again; 'leak-epoch' returns with an
 * epoch held, so that the commit check must fail the transaction.
 */
#include "fmgr.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(leanstore_test_hold);

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
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown test action \"%s\"", what)));
	PG_RETURN_VOID();
}
#endif
