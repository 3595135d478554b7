/*
 * sqlfuncs.c - SQL-callable functions: tier and table statistics, and
 * leanstore_verify(regclass), which checks the invariants of one table:
 * its hot rows and RID-map, and its cold tree (structure and images).
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/table.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "commands/defrem.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "utils/rel.h"

#include "ls_hashscan.h"
#include "ls_pg.h"

PG_FUNCTION_INFO_V1(leanstore_stats);
PG_FUNCTION_INFO_V1(leanstore_table_stats);
PG_FUNCTION_INFO_V1(leanstore_verify);
PG_FUNCTION_INFO_V1(leanstore_checkpoint);

/*
 * leanstore_checkpoint(): in a transaction of its own (its rows would keep
 * the checkpoint waiting for itself).
 */
Datum
leanstore_checkpoint(PG_FUNCTION_ARGS)
{
	if (TransactionIdIsValid(GetTopTransactionIdIfAny()))
		ereport(ERROR,
				(errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
				 errmsg("leanstore_checkpoint() cannot run in a transaction that has written"),
				 errhint("Call it in a transaction of its own.")));
	(void) ls_ctx();
	PG_RETURN_BOOL(ls_checkpoint(true));
}

/* The row type a function returning one row was declared with. */
static TupleDesc
ls_result_tupdesc(FunctionCallInfo fcinfo)
{
	TupleDesc	tupdesc;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	return tupdesc;
}

Datum
leanstore_stats(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	ls_hot_stats hs;
	LsColdStats cs;
	ls_hc_stats hc;
	LsLogStats	ls;
	Datum		values[55];
	bool		nulls[55] = {0};

	tupdesc = ls_result_tupdesc(fcinfo);
	if (tupdesc->natts != lengthof(values))
		elog(ERROR, "leanstore_stats() returns %d columns, the SQL definition has %d: reinstall the extension",
			 (int) lengthof(values), tupdesc->natts);
	ls_hot_get_stats(ls_shared_hot(), &hs);
	ls_cold_get_stats(&cs);
	values[0] = Int64GetDatum((int64) hs.region_bytes);
	values[1] = Int64GetDatum((int64) hs.heap_bytes);
	values[2] = Int64GetDatum((int64) hs.used_bytes);
	values[3] = Int64GetDatum((int64) hs.free_bytes);
	values[4] = Int64GetDatum((int64) hs.slack_bytes);
	values[5] = Int64GetDatum((int64) hs.retired_bytes);
	values[6] = Int64GetDatum((int64) hs.retired_pending);
	values[7] = Int64GetDatum((int64) hs.tables);
	values[8] = Int64GetDatum((int64) hs.rows);
	values[9] = Int64GetDatum((int64) hs.versions);
	values[10] = Int64GetDatum((int64) hs.epoch);
	values[11] = Int64GetDatum((int64) cs.pool_pages);
	values[12] = Int64GetDatum((int64) cs.pool_free);
	values[13] = Int64GetDatum((int64) cs.hits);
	values[14] = Int64GetDatum((int64) cs.misses);
	values[15] = Int64GetDatum((int64) cs.reads);
	values[16] = Int64GetDatum((int64) cs.writes);
	values[17] = Int64GetDatum((int64) cs.evictions);
	values[18] = Int64GetDatum((int64) cs.provider_rounds);
	values[19] = Int64GetDatum((int64) cs.rows_packed);
	values[20] = Int64GetDatum((int64) cs.rows_migrated);
	values[21] = Int64GetDatum((int64) cs.cold_reads);
	values[22] = Int64GetDatum((int64) cs.tables_packed);
	values[23] = Int64GetDatum((int64) cs.tables_loaded);
	values[24] = Int64GetDatum((int64) cs.cold_pages);
	values[25] = Int64GetDatum((int64) cs.epoch);
	/* hash cache (hashscan.c); zeros when leanstore.hash_cache_memory = 0 */
	if (!ls_hashcache_stats(&hc))
		memset(&hc, 0, sizeof(hc));
	values[26] = Int64GetDatum((int64) hc.region_bytes);
	values[27] = Int64GetDatum((int64) hc.entries);
	values[28] = Int64GetDatum((int64) hc.counters[LS_HC_C_HITS]);
	values[29] = Int64GetDatum((int64) hc.counters[LS_HC_C_MISSES]);
	values[30] = Int64GetDatum((int64) hc.counters[LS_HC_C_STALE]);
	values[31] = Int64GetDatum((int64) hc.counters[LS_HC_C_FILLS]);
	values[32] = Int64GetDatum((int64) hc.counters[LS_HC_C_EVICTIONS]);
	values[33] = Int64GetDatum((int64) hc.counters[LS_HC_C_REMOVED]);
	ls_log_get_stats(&ls);
	values[34] = Int64GetDatum((int64) ls.bytes);
	values[35] = Int64GetDatum((int64) ls.records);
	values[36] = Int64GetDatum((int64) ls.commits);
	values[37] = Int64GetDatum((int64) ls.wait_us);
	values[38] = Int64GetDatum((int64) ls.rounds);
	values[39] = Int64GetDatum((int64) ls.round_us);
	values[40] = Float8GetDatum(ls.rounds > 0 ? (double) ls.round_records / ls.rounds : 0.0);
	values[41] = Int64GetDatum((int64) ls.end);
	values[42] = Int64GetDatum((int64) ls.recovery_us);
	values[43] = Int64GetDatum((int64) ls.recovery_records);
	values[44] = Int64GetDatum((int64) ls.recovery_rows);
	values[45] = Int64GetDatum((int64) ls.recovery_tables);
	values[46] = Int64GetDatum((int64) ls.checkpoints);
	values[47] = Int64GetDatum((int64) ls.checkpoint_us);
	values[48] = Int64GetDatum((int64) cs.writes_spilled);
	values[49] = Int64GetDatum((int64) cs.pages_leaked);
	values[50] = Int64GetDatum((int64) cs.cold_rows);
	values[51] = Int64GetDatum((int64) ls.log_only_commits);
	values[52] = Int64GetDatum((int64) ls.wal_copy_commits);
	values[53] = Int64GetDatum((int64) ls.recovery_wal_records);
	values[54] = Int64GetDatum((int64) ls.async_commits);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/*
 * Open relid for one of the SQL functions (and test hooks): a leanstore table (or
 * materialized view) of this session or a permanent one.  Every other kind
 * of argument gets its own clear error.
 */
Relation
ls_open_leanstore(Oid relid, LOCKMODE mode)
{
	Relation	rel = try_relation_open(relid, mode);
	char		relkind;
	bool		has_am;

	if (rel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	relkind = rel->rd_rel->relkind;
	has_am = RELKIND_HAS_TABLE_AM(relkind);
	if (!has_am || rel->rd_tableam == NULL ||
		rel->rd_tableam->relation_vacuum != ls_vacuum_rel)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a leanstore table",
						RelationGetRelationName(rel)),
				 has_am ?
				 errdetail("It uses the access method \"%s\".",
						   get_am_name(rel->rd_rel->relam)) :
				 errdetail_relkind_not_supported(relkind),
				 relkind == RELKIND_PARTITIONED_TABLE ?
				 errhint("Call the function for each partition.") : 0));
	if (RELATION_IS_OTHER_TEMP(rel))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot access temporary tables of other sessions")));
	return rel;
}

Datum
leanstore_table_stats(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	TupleDesc	tupdesc;
	Relation	rel;
	ls_hot_table *tbl;
	ls_hot_table_stats ts;
	Datum		values[8];
	bool		nulls[8] = {0};
	int64		cold_rows;

	tupdesc = ls_result_tupdesc(fcinfo);
	rel = ls_open_leanstore(relid, AccessShareLock);
	tbl = ls_table_for(rel);
	ls_hot_table_get_stats(tbl, &ts);
	values[0] = Int64GetDatum((int64) ts.rows);
	values[1] = Int64GetDatum((int64) ts.versions);
	values[2] = Int64GetDatum((int64) ts.bytes);
	values[3] = Int64GetDatum((int64) ts.dead_rowids);
	values[4] = Int64GetDatum((int64) ls_hot_table_rowid_limit(tbl));
	/* the main fork's blocks its cold tree uses, written yet or not */
	values[5] = Int64GetDatum((int64) ls_cold_table_pages(tbl));
	/* of those, blocks no page uses, waiting for reuse */
	values[6] = Int64GetDatum((int64) ls_cold_table_free_pages(tbl));
	/* row images in the tree; NULL when its file predates the count */
	cold_rows = ls_cold_table_rows(tbl);
	values[7] = Int64GetDatum(cold_rows);
	nulls[7] = cold_rows < 0;
	relation_close(rel, AccessShareLock);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/* ------------------------------------------------------------------------
 * leanstore_verify
 * ------------------------------------------------------------------------ */

#define LS_VERIFY_MAX_REPORT 10

typedef struct LsVerify
{
	StringInfoData detail;
	int			problems;
} LsVerify;

static void
ls_problem(LsVerify *vf, uint64 rowid, const char *what)
{
	vf->problems++;
	if (vf->problems > LS_VERIFY_MAX_REPORT)
		return;
	if (vf->detail.len > 0)
		appendStringInfoString(&vf->detail, "; ");
	/* LS_ROWID_INVALID: a problem of the whole table, not of one row */
	if (rowid == LS_ROWID_INVALID)
		appendStringInfoString(&vf->detail, what);
	else
		appendStringInfo(&vf->detail, "row " UINT64_FORMAT ": %s", rowid, what);
}

/*
 * Problems found in one version (caller inside an epoch), a hot one or a
 * cold image's stand-in (cold: which may also say its image has an xmax
 * slot).  Copies out what it checks; nothing is dereferenced through an
 * unchecked length.
 */
static const char *
ls_check_version(ls_hot_version *v, int natts, uint64 limit, bool cold)
{
	uint32		len = v->len;
	MinimalTuple mt = (MinimalTuple) v->data;
	LsVersionInfo info;

	if (len < SizeofMinimalTupleHeader || len > LS_HOT_MAX_PAYLOAD)
		return "version payload length out of range";
	if (mt->t_len != len)
		return "tuple length does not match the version length";
	if (mt->t_hoff < SizeofHeapTupleHeader || mt->t_hoff > len + MINIMAL_TUPLE_OFFSET)
		return "tuple header offset out of range";
	ls_version_info(v, &info);

	/*
	 * A version an aborted (sub)transaction wrote may have a column that the
	 * same transaction added (ALTER TABLE ... ADD COLUMN rolled back):
	 * garbage until VACUUM, which no reader looks at; amcheck's
	 * verify_heapam does not check such a tuple's attributes either.
	 */
	if (HeapTupleHeaderGetNatts((HeapTupleHeader) ((char *) mt - MINIMAL_TUPLE_OFFSET)) > natts &&
		ls_xmin_status(v, &info) != LS_XS_ABORTED)
		return "tuple has more attributes than the relation";
	if (!(info.xmin_flags & LS_HV_XMIN_FROZEN) && !TransactionIdIsNormal(info.xmin))
		return "version has an invalid xmin";
	if ((info.xmin_flags & LS_HV_XMIN_COMMITTED) && (info.xmin_flags & LS_HV_XMIN_ABORTED))
		return "xmin is hinted both committed and aborted";
	if ((info.xmax_flags & LS_HV_XMAX_COMMITTED) && (info.xmax_flags & LS_HV_XMAX_ABORTED))
		return "xmax is hinted both committed and aborted";
	if (info.user_flags & ~(LS_UF_SPECULATIVE | (cold ? LS_UF_COLD_SLOT : 0)))
		return "unknown user flags";
	if ((info.xmax_flags & LS_HV_XMAX_MOVED) && !(info.user_flags & LS_UF_SPECULATIVE) &&
		info.next_rowid != LS_ROWID_INVALID && info.next_rowid >= limit)
		return "update link points beyond the rowid limit";
	return NULL;
}

typedef struct LsVerifyCold
{
	LsVerify   *vf;
	int			natts;
	uint64		limit;
} LsVerifyCold;

/* ls_cold_verify's callback: a problem, or a cold row's stand-in to check */
static void
ls_verify_cold_row(void *arg, uint64 rowid, ls_hot_row *standin, const char *bad)
{
	LsVerifyCold *vc = arg;

	if (bad == NULL &&
		(bad = ls_check_version(ls_hot_row_newest(standin), vc->natts, vc->limit, true)) != NULL)
		bad = psprintf("cold image: %s", bad);	/* which tier, for the reader */
	if (bad != NULL)
		ls_problem(vc->vf, rowid, bad);
}

Datum
leanstore_verify(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	Relation	rel;
	ls_hot_table *tbl;
	ls_hot_table_stats ts;
	uint64		limit;
	uint64		cursor = 0;
	uint64		rows = 0;
	uint64		versions = 0;
	LsVerify	vf;
	int			natts;

	/*
	 * ShareLock: no writers while the counts are compared.  Pack is a writer
	 * the lock does not stop (the leanstore worker moves rows to the cold
	 * tier): hold it off too (its passes run under the cold tier's lock).
	 */
	rel = ls_open_leanstore(relid, ShareLock);
	tbl = ls_table_for(rel);
	ls_cold_hold_pack(true);
	natts = RelationGetDescr(rel)->natts;
	limit = ls_hot_table_rowid_limit(tbl);
	initStringInfo(&vf.detail);
	vf.problems = 0;

	for (;;)
	{
		ls_hot_row *row;
		uint64		expect_min = cursor;
		uint64		rowid;
		const char *bad = NULL;
		int			n = 0;
		ls_hot_version *newer = NULL;

		CHECK_FOR_INTERRUPTS();
		ls_epoch_enter();
		row = ls_hot_scan_next(tbl, &cursor, limit);
		if (row == NULL)
		{
			ls_epoch_exit();
			break;
		}
		rowid = row->rowid;
		rows++;
		if (rowid < expect_min || rowid >= limit || cursor != rowid + 1)
			bad = "row header's rowid does not match its RID-map slot";
		if (ls_hot_row_newest(row) == NULL && bad == NULL)
			bad = "live row without versions";
		for (ls_hot_version *v = ls_hot_row_newest(row); v != NULL;
			 v = ls_hot_version_older(v))
		{
			LsVersionInfo oi;
			const char *vbad;

			if (++n > ls_chain_bound)
			{
				bad = "version chain too long (cycle?)";
				break;
			}
			versions++;
			vbad = ls_check_version(v, natts, limit, false);
			if (vbad != NULL)
			{
				if (bad == NULL)
					bad = vbad;
				continue;
			}
			ls_version_info(v, &oi);
			if (ls_xmin_status(v, &oi) == LS_XS_ABORTED)
				continue;		/* aborted versions are skipped by every reader */
			if (newer != NULL && bad == NULL)
			{
				LsVersionInfo ni;

				ls_version_info(newer, &ni);

				/*
				 * An older version's deleter is the inserter of the next
				 * newer version that did not abort.
				 */
				if (ls_xmin_status(newer, &ni) == LS_XS_COMMITTED &&
					!(ni.xmin_flags & LS_HV_XMIN_FROZEN) && oi.xmax != ni.xmin)
					bad = "older version's xmax differs from the newer version's xmin";
			}
			newer = v;
		}
		ls_epoch_exit();
		if (bad != NULL)
			ls_problem(&vf, rowid, bad);
	}

	/* the core's own structural check of the table (RID-map, chains, counts) */
	{
		char		buf[512];
		ls_status	st;

		ls_epoch_enter();
		st = ls_hot_table_verify(tbl, true, buf, sizeof(buf));
		ls_epoch_exit();
		if (st != LS_OK)
		{
			buf[sizeof(buf) - 1] = '\0';
			ls_problem(&vf, LS_ROWID_INVALID, buf);
		}
	}

	/* the cold tree: its structure and every image (both tiers hold rows) */
	{
		LsVerifyCold vc = {&vf, natts, limit};
		int			before = vf.problems;
		uint64		images = ls_cold_verify(tbl, ls_verify_cold_row, &vc);
		int64		counted = ls_cold_table_rows(tbl);

		/* leanstore_table_stats' count of images (a walk of a broken tree counts none) */
		if (vf.problems == before && counted >= 0 && (uint64) counted != images)
		{
			char		msg[128];

			snprintf(msg, sizeof(msg), "cold tree counts " INT64_FORMAT " row images, scan found " UINT64_FORMAT,
					 counted, images);
			ls_problem(&vf, LS_ROWID_INVALID, msg);
		}
	}

	ls_hot_table_get_stats(tbl, &ts);
	if (ts.rows != rows)
	{
		char		msg[128];

		snprintf(msg, sizeof(msg), "table counts " UINT64_FORMAT " rows, scan found " UINT64_FORMAT,
				 (uint64) ts.rows, rows);
		ls_problem(&vf, LS_ROWID_INVALID, msg);
	}
	if (ts.versions != versions)
	{
		char		msg[128];

		snprintf(msg, sizeof(msg), "table counts " UINT64_FORMAT " versions, scan found " UINT64_FORMAT,
				 (uint64) ts.versions, versions);
		ls_problem(&vf, LS_ROWID_INVALID, msg);
	}
	ls_cold_hold_pack(false);
	relation_close(rel, ShareLock);

	if (vf.problems > 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg_plural("leanstore_verify found %d problem in table \"%s\"",
							   "leanstore_verify found %d problems in table \"%s\"",
							   vf.problems, vf.problems, get_rel_name(relid)),
				 errdetail("%s", vf.detail.data)));
	PG_RETURN_BOOL(true);
}
