/*
 * progress.c - pg_stat_progress_* for leanstore tables, and the pause
 * points tests use to look at them.
 *
 * VACUUM reports what heap's VACUUM reports (pg_stat_progress_vacuum: the
 * table AM starts and ends the command itself), CLUSTER / VACUUM FULL and
 * CREATE INDEX fill in the parameters of the command that PostgreSQL
 * started (pg_stat_progress_cluster, pg_stat_progress_create_index).
 * Blocks are virtual blocks (src/pg/README.md "Row identity"): a scan at a
 * row of block b has done blocks 0 .. b-1.
 *
 * Pause points (asserting build only): ls_test_pause(name) waits on the
 * advisory lock LS_TEST_PAUSE_KEY when this backend armed name with the
 * SQL function leanstore_test_pause(name), so that an isolation spec that
 * holds the lock can read the progress views at a known point
 * (isolation ls-progress).  Never called inside an epoch.
 *
 * Cancel points (asserting build only): ls_test_cancel(name), armed with
 * leanstore_test_pause('cancel:' || name), makes a cancel pending as
 * pg_cancel_backend would, at a known place inside an epoch (interrupts
 * held), so that a test sees where the command serves it (regress ls_hold:
 * VACUUM's forget pass between its bounded epochs).
 */
#include "postgres.h"

#include "commands/progress.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "utils/backend_progress.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "ls_pg.h"

void
ls_progress_rowid(int param, uint64 rowid, BlockNumber *reported)
{
	BlockNumber blk = (BlockNumber) Min(rowid / LS_ROWS_PER_BLOCK,
										(uint64) MaxBlockNumber);

	if (blk > *reported)
	{
		*reported = blk;
		pgstat_progress_update_param(param, blk);
	}
}

#ifdef LS_ASSERTS

#define LS_TEST_PAUSE_KEY	INT64CONST(1280507905)	/* 'L' 'S' 0 1 */

static char *ls_pause_armed = NULL;

void
ls_test_pause(const char *name)
{
	Assert(!ls_in_epoch());
	if (ls_pause_armed == NULL || strcmp(ls_pause_armed, name) != 0)
		return;
	pfree(ls_pause_armed);
	ls_pause_armed = NULL;
	DirectFunctionCall1(pg_advisory_lock_int8, Int64GetDatum(LS_TEST_PAUSE_KEY));
	DirectFunctionCall1(pg_advisory_unlock_int8, Int64GetDatum(LS_TEST_PAUSE_KEY));
}

void
ls_test_cancel(const char *name)
{
	if (ls_pause_armed == NULL || strncmp(ls_pause_armed, "cancel:", 7) != 0 ||
		strcmp(ls_pause_armed + 7, name) != 0)
		return;
	pfree(ls_pause_armed);
	ls_pause_armed = NULL;
	QueryCancelPending = true;
	InterruptPending = true;
}

PG_FUNCTION_INFO_V1(leanstore_test_pause);

/* Arm the pause point name for this backend's next pass through it. */
Datum
leanstore_test_pause(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));

	if (ls_pause_armed != NULL)
		pfree(ls_pause_armed);
	ls_pause_armed = MemoryContextStrdup(TopMemoryContext, name);
	PG_RETURN_INT64(LS_TEST_PAUSE_KEY);
}

#endif
