/*
 * hashscan.c - the hash cache in front of unique B-tree indexes of leanstore
 * tables, and the CustomScan "LeanStore Hash Lookup" that uses it.
 *
 * The cache (include/leanstore/hashcache.h) maps a hash of (table storage,
 * index, key bytes) to a rowid.  A lookup that finds an entry fetches the
 * row through the table AM's index fetch (the snapshot decides, predicate
 * locks and statistics as for any index fetch) and evaluates the index's
 * key conditions on the visible version; only when they hold is the row the
 * answer.  Otherwise (no entry, entry stale, row invisible) the node runs
 * the ordinary B-tree scan and fills the cache with the row that scan
 * returned.  The cache is never trusted, so nothing has to invalidate it
 * for correctness; entries are removed when a row version leaves by DELETE
 * or a moving (key-changing) update, when VACUUM forgets rows gone for good,
 * when a table's storage goes away (TRUNCATE, DROP, rewrites) and when a
 * lookup finds them stale.  Pack keeps them: a packed row keeps its rowid,
 * and a hit reads it from the cold tier without the descent.
 *
 * Planning: set_rel_pathlist_hook wraps every index path of a leanstore
 * table whose index is a plain unique, immediate, non-partial B-tree index
 * on columns, restricted by one equality per key column with a value of
 * the column's type, or for an integer column of any integer type
 * (constants, parameters, outer references of a nested loop).  Such a
 * path returns at most one row (uniqueness), so the wrapper keeps the
 * index path's row estimate and pathkeys and costs half as much (it skips
 * the descent on a hit).  leanstore.hash_cache = off plans nothing.
 *
 * SERIALIZABLE transactions bypass the cache and always scan the index: a
 * B-tree scan takes a predicate lock on the leaf page it read, which a
 * lookup that never descends cannot take.  So do snapshots older than the
 * index (its pg_index row's xmin not before the snapshot's xmin): a plain
 * CREATE UNIQUE INDEX does not check rows that were deleted but some
 * snapshot still sees, so such a snapshot may see two rows of a key, and
 * a hit would return only one (heap's scan returns both).  PostgreSQL's
 * planner keeps an index from such snapshots only when indcheckxmin says
 * so (broken HOT chains).
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heaptoast.h"
#include "access/nbtree.h"
#include "access/relation.h"
#include "access/stratnum.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_am.h"
#include "catalog/pg_index.h"
#include "catalog/pg_opfamily.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "executor/nodeCustom.h"
#include "executor/nodeSubplan.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/restrictinfo.h"
#include "optimizer/tlist.h"
#include "rewrite/rewriteManip.h"
#include "storage/ipc.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/pgstat_internal.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"

#include "ls_hashscan.h"

#define LS_HASH_NAME "LeanStore Hash Lookup"
#define LS_HASH_MAX_KEYS INDEX_MAX_KEYS

/* GUCs */
static bool ls_hash_cache_on = true;
int			ls_hash_cache_memory_mb = 64;

/*
 * Tests only: keep this many low bits of each key hash (0 = all), so that
 * different keys collide and every lookup's key recheck is exercised.
 */
static int	ls_hash_test_bits = 0;

static ls_hc *ls_hcache = NULL;	/* NULL: no cache (memory 0) */

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
static set_rel_pathlist_hook_type prev_set_rel_pathlist_hook = NULL;

/* ------------------------------------------------------------------------
 * Shared memory
 * ------------------------------------------------------------------------ */

typedef struct LsHashShared
{
	ls_hc	   *hc;
} LsHashShared;

static Size
ls_hash_region_size(void)
{
	return (Size) ls_hash_cache_memory_mb * 1024 * 1024;
}

static void
ls_hash_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(add_size(MAXALIGN(sizeof(LsHashShared)),
									add_size(ls_hash_region_size(), 4096)));
}

static void
ls_hash_shmem_startup(void)
{
	LsHashShared *sh;
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	sh = ShmemInitStruct("leanstore hash cache control", sizeof(LsHashShared), &found);
	if (!found)
	{
		sh->hc = NULL;
		if (ls_hash_cache_memory_mb > 0)
		{
			void	   *region;
			bool		rfound;

			region = ShmemInitStruct("leanstore hash cache",
									 ls_hash_region_size() + 4096, &rfound);
			if (ls_hc_init(region, ls_hash_region_size(), &sh->hc) != LS_OK)
				sh->hc = NULL;	/* cannot happen: the minimum is 1 MB */
		}
	}
	ls_hcache = sh->hc;
	LWLockRelease(AddinShmemInitLock);
}

static inline uint32
ls_hash_slot(void)
{
	return (uint32) MyBackendId;
}

/* ------------------------------------------------------------------------
 * Hashing keys
 * ------------------------------------------------------------------------ */

/*
 * The seeds computed last, per backend (a direct-mapped memo by index OID):
 * a seed depends only on the storage and the index, and every execution of
 * a lookup needs one.  The storage is part of the memo's key, so a new
 * relfilenode (TRUNCATE, rewrites) gets its own seed.
 */
#define LS_HASH_SEED_MEMO 16
typedef struct LsHashSeedMemo
{
	RelFileNode node;
	Oid			indexoid;		/* InvalidOid: empty */
	uint32		tag;
	uint64		seed;
} LsHashSeedMemo;

static LsHashSeedMemo ls_hash_seed_memo[LS_HASH_SEED_MEMO];

/* Seed of one (table storage, index); *tag: the table's tag. */
static uint64
ls_hash_seed(Relation rel, Oid indexoid, uint32 *tag)
{
	LsHashSeedMemo *m = &ls_hash_seed_memo[indexoid % LS_HASH_SEED_MEMO];
	ls_hot_key	key;
	uint64		th;

	if (m->indexoid != indexoid || !RelFileNodeEquals(m->node, rel->rd_node))
	{
		key = ls_key_for_node(&rel->rd_node);
		th = ls_hc_hash(0, &key, sizeof(key));
		m->node = rel->rd_node;
		m->indexoid = indexoid;
		m->tag = ls_hc_tag(th);
		m->seed = ls_hc_hash(th, &indexoid, sizeof(indexoid));
	}
	*tag = m->tag;
	return m->seed;
}

/* Fold one key value into h; the same bytes give the same hash whatever
 * the datum's header (short/long varlena, toasted). */
static uint64
ls_hash_datum(uint64 h, Datum d, int16 typlen, bool typbyval)
{
	if (typbyval)
	{
		int64		v;

		switch (typlen)
		{
			case 1:
				v = DatumGetChar(d);
				break;
			case 2:
				v = DatumGetInt16(d);
				break;
			case 4:
				v = DatumGetInt32(d);
				break;
			default:
				v = (int64) d;
				break;
		}
		return ls_hc_hash(h, &v, sizeof(v));
	}
	if (typlen > 0)
		return ls_hc_hash(h, DatumGetPointer(d), typlen);
	if (typlen == -1)
	{
		struct varlena *p = (struct varlena *) DatumGetPointer(d);
		struct varlena *u = pg_detoast_datum_packed(p);

		h = ls_hc_hash(h, VARDATA_ANY(u), VARSIZE_ANY_EXHDR(u));
		if (u != p)
			pfree(u);
		return h;
	}
	return ls_hc_hash(h, DatumGetCString(d), strlen(DatumGetCString(d)));
}

/* ------------------------------------------------------------------------
 * Cache maintenance (called from the storage life cycle)
 * ------------------------------------------------------------------------ */

/*
 * Has the cache ever had an entry for rel's storage?  (LS_TAG_HASHED is set
 * before the first fill; it spares DML and DROP/TRUNCATE of tables that
 * are never looked up through the cache the work of removing entries.)
 */
static bool
ls_hash_table_hashed(Relation rel)
{
	ls_hot_table *tbl = ls_table_for_or_null(rel);

	return tbl == NULL || ls_hot_table_get_tag(tbl, LS_TAG_HASHED) != 0;
}

/* A table storage goes away (DROP, TRUNCATE, rewrite): drop its entries. */
void
ls_hashcache_forget_storage(ls_hot_key key)
{
	ls_hot_table *tbl;
	uint64		n;

	if (ls_hcache == NULL)
		return;
	/* a sweep reads the whole cache: only for tables that had entries */
	tbl = ls_hot_table_find(ls_shared_hot(), key);
	if (tbl != NULL && ls_hot_table_get_tag(tbl, LS_TAG_HASHED) == 0)
		return;
	n = ls_hc_remove_table(ls_hcache, ls_hc_tag(ls_hc_hash(0, &key, sizeof(key))),
						   LS_HC_ANY_ROWID);
	if (n > 0)
		ls_hc_count(ls_hcache, ls_hash_slot(), LS_HC_C_REMOVED, n);
}

/*
 * VACUUM forgets rows gone for good (its DEAD rowids, ascending: deleted,
 * moved away, inserted by an aborted transaction, whoever made them DEAD):
 * drop their entries, as it drops their index entries.  Their keys are no
 * longer at hand, so this is one sweep of the cache per batch of rowids,
 * for tables that ever had an entry.
 */
void
ls_hashcache_forget_rowids(Relation rel, const uint64 *rowids, int64 n)
{
	ls_hot_key	key;
	uint64		removed;

	if (ls_hcache == NULL || n <= 0 || !ls_hash_table_hashed(rel))
		return;
	key = ls_key_for_node(&rel->rd_node);
	removed = ls_hc_remove_rowids(ls_hcache, ls_hc_tag(ls_hc_hash(0, &key, sizeof(key))),
								  rowids, (size_t) n);
	if (removed > 0)
		ls_hc_count(ls_hcache, ls_hash_slot(), LS_HC_C_REMOVED, removed);
}

/*
 * A row version leaves (DELETE, an update that moves the row to a new
 * rowid): remove the entries its keys have in the cache, for each
 * unique index the lookup can use.  The hash is the one a lookup of the
 * same key bytes computes; keys stored out of line (TOAST) are skipped
 * (their entries go stale, which costs one lookup).
 */
void
ls_hashcache_forget_tuple(Relation rel, HeapTuple tup, uint64 rowid)
{
	TupleDesc	desc = RelationGetDescr(rel);
	List	   *indexes;
	ListCell   *lc;
	uint32		removed = 0;

	if (ls_hcache == NULL || !rel->rd_rel->relhasindex ||
		!ls_hash_table_hashed(rel))
		return;
	indexes = RelationGetIndexList(rel);
	foreach(lc, indexes)
	{
		Relation	idx = index_open(lfirst_oid(lc), AccessShareLock);
		Form_pg_index ind = idx->rd_index;
		bool		usable;
		uint32		tag;
		uint64		h;

		usable = idx->rd_rel->relam == BTREE_AM_OID && ind->indisunique &&
			ind->indimmediate && ind->indnkeyatts >= 1 &&
			heap_attisnull(idx->rd_indextuple, Anum_pg_index_indpred, NULL) &&
			heap_attisnull(idx->rd_indextuple, Anum_pg_index_indexprs, NULL);
		h = ls_hash_seed(rel, RelationGetRelid(idx), &tag);
		for (int i = 0; usable && i < ind->indnkeyatts; i++)
		{
			AttrNumber	attno = ind->indkey.values[i];
			Form_pg_attribute att;
			bool		isnull;
			Datum		d;

			if (attno <= 0)
			{
				usable = false;
				break;
			}
			att = TupleDescAttr(desc, attno - 1);
			d = heap_getattr(tup, attno, desc, &isnull);
			if (isnull ||
				(att->attlen == -1 && VARATT_IS_EXTERNAL(DatumGetPointer(d))))
				usable = false;
			else
				h = ls_hash_datum(h, d, att->attlen, att->attbyval);
		}
		if (usable)
		{
			if (ls_hash_test_bits > 0 && ls_hash_test_bits < 64)
				h &= (UINT64CONST(1) << ls_hash_test_bits) - 1;
			removed += ls_hc_remove(ls_hcache, h, rowid);
		}
		index_close(idx, NoLock);
	}
	list_free(indexes);
	if (removed > 0)
		ls_hc_count(ls_hcache, ls_hash_slot(), LS_HC_C_REMOVED, removed);
}

bool
ls_hashcache_stats(ls_hc_stats *st)
{
	if (ls_hcache == NULL)
		return false;
	ls_hc_get_stats(ls_hcache, true, st);
	return true;
}

/* ------------------------------------------------------------------------
 * Planning
 * ------------------------------------------------------------------------ */

/* What the lookup needs per key column, taken from an index path. */
typedef struct LsHashKeyCols
{
	int			nkeys;
	Oid			opno[LS_HASH_MAX_KEYS];
	Oid			subtype[LS_HASH_MAX_KEYS];
	Oid			collid[LS_HASH_MAX_KEYS];
	int16		coltyplen[LS_HASH_MAX_KEYS];	/* an integer column compared
												 * with another integer type:
												 * the column's length, else 0 */
	Expr	   *arg[LS_HASH_MAX_KEYS];	/* the compared value */
	Expr	   *qual[LS_HASH_MAX_KEYS]; /* "key = value" (the recheck) */
	IndexClause *iclause[LS_HASH_MAX_KEYS]; /* the index clause it came from */
} LsHashKeyCols;

/* What the scan slot looks like (custom_private's first int). */
typedef enum LsHashMode
{
	LS_HM_VIRTUAL,				/* the table's columns, virtual */
	LS_HM_TABLE_SLOT,			/* the table AM's own slot: system columns */
	LS_HM_NARROW,				/* custom_scan_tlist's columns, virtual */
} LsHashMode;

/*
 * int2, int4, int8: equal values hash alike whatever their width
 * (ls_hash_datum).  Only through the built-in integer_ops family, whose
 * cross-type equalities are numeric equality (what the recheck assumes).
 */
static bool
ls_hash_int_type(Oid type)
{
	return type == INT2OID || type == INT4OID || type == INT8OID;
}

/*
 * Can the hash lookup replace this index path?  Fills cols when it can.
 * Each key column needs an equality with a value of its own type, or, for
 * an integer column, of another integer type (a bigint parameter against
 * an int4 key, as drivers that bind 64-bit integers send it): such values
 * hash as the column's do, and the recheck compares them as integers.
 */
static bool
ls_hash_match_path(IndexPath *ip, LsHashKeyCols *cols)
{
	IndexOptInfo *info = ip->indexinfo;
	ListCell   *lc;

	if (info->relam != BTREE_AM_OID || !info->unique || !info->immediate ||
		info->indpred != NIL || info->nkeycolumns < 1 ||
		info->nkeycolumns > LS_HASH_MAX_KEYS || ip->indexorderbys != NIL)
		return false;
	for (int i = 0; i < info->nkeycolumns; i++)
	{
		if (info->indexkeys[i] <= 0)	/* expression or system column */
			return false;
		cols->arg[i] = NULL;
	}
	cols->nkeys = info->nkeycolumns;

	foreach(lc, ip->indexclauses)
	{
		IndexClause *ic = lfirst_node(IndexClause, lc);
		RestrictInfo *rinfo;
		OpExpr	   *op;
		int			col = ic->indexcol;
		int			strategy;
		Oid			lefttype;
		Oid			righttype;

		if (ic->lossy || col >= info->nkeycolumns || cols->arg[col] != NULL ||
			list_length(ic->indexquals) != 1)
			continue;
		rinfo = linitial_node(RestrictInfo, ic->indexquals);
		if (!IsA(rinfo->clause, OpExpr))
			continue;
		op = (OpExpr *) rinfo->clause;
		if (list_length(op->args) != 2)
			continue;
		get_op_opfamily_properties(op->opno, info->opfamily[col], false,
								   &strategy, &lefttype, &righttype);
		if (strategy != BTEqualStrategyNumber)
			continue;
		if (lefttype == righttype)
			cols->coltyplen[col] = 0;
		else if (info->opfamily[col] == INTEGER_BTREE_FAM_OID &&
				 ls_hash_int_type(lefttype) && ls_hash_int_type(righttype) &&
				 exprType((Node *) lsecond(op->args)) == righttype)
			cols->coltyplen[col] = get_typlen(lefttype);
		else
			continue;
		cols->opno[col] = op->opno;
		cols->subtype[col] = righttype;
		cols->collid[col] = op->inputcollid;
		cols->arg[col] = (Expr *) lsecond(op->args);
		cols->qual[col] = (Expr *) op;
		cols->iclause[col] = ic;
	}
	for (int i = 0; i < cols->nkeys; i++)
		if (cols->arg[i] == NULL)
			return false;
	return true;
}

static bool
ls_is_leanstore_rel(Oid relid)
{
	Relation	rel;
	bool		result;

	rel = relation_open(relid, NoLock);
	result = rel->rd_tableam != NULL &&
		rel->rd_tableam->relation_vacuum == ls_vacuum_rel;
	relation_close(rel, NoLock);
	return result;
}

static Plan *ls_hash_plan_path(PlannerInfo *root, RelOptInfo *rel,
							   struct CustomPath *best_path, List *tlist,
							   List *clauses, List *custom_plans);
static Node *ls_hash_create_state(CustomScan *cscan);

/* partitionwise joins: the wrapped index path's clauses name the child */
static List *
ls_hash_reparameterize(PlannerInfo *root, List *custom_private,
					   RelOptInfo *child_rel)
{
	Path	   *ip = reparameterize_path_by_child(root, linitial(custom_private),
												  child_rel);

	if (ip == NULL)
		elog(ERROR, "could not reparameterize the leanstore hash lookup's index path");
	return list_make1(ip);
}

static const CustomPathMethods ls_hash_path_methods = {
	.CustomName = LS_HASH_NAME,
	.PlanCustomPath = ls_hash_plan_path,
	.ReparameterizeCustomPathByChild = ls_hash_reparameterize,
};

static const CustomScanMethods ls_hash_scan_methods = {
	.CustomName = LS_HASH_NAME,
	.CreateCustomScanState = ls_hash_create_state,
};

static void
ls_hash_pathlist(PlannerInfo *root, RelOptInfo *rel, Index rti,
				 RangeTblEntry *rte)
{
	List	   *add = NIL;
	ListCell   *lc;

	if (prev_set_rel_pathlist_hook)
		prev_set_rel_pathlist_hook(root, rel, rti, rte);

	if (!ls_hash_cache_on || ls_hcache == NULL ||
		rte->rtekind != RTE_RELATION || rel->rtekind != RTE_RELATION ||
		(rte->relkind != RELKIND_RELATION && rte->relkind != RELKIND_MATVIEW) ||
		rel->indexlist == NIL)
		return;
	if (!ls_is_leanstore_rel(rte->relid))
		return;

	foreach(lc, rel->pathlist)
	{
		Path	   *p = (Path *) lfirst(lc);
		IndexPath  *ip;
		CustomPath *cp;
		LsHashKeyCols cols;

		if (!IsA(p, IndexPath))
			continue;
		ip = (IndexPath *) p;
		if (!ls_hash_match_path(ip, &cols))
			continue;
		cp = makeNode(CustomPath);
		cp->path.pathtype = T_CustomScan;
		cp->path.parent = rel;
		cp->path.pathtarget = rel->reltarget;
		cp->path.param_info = ip->path.param_info;
		cp->path.parallel_aware = false;
		cp->path.parallel_safe = ip->path.parallel_safe;
		cp->path.parallel_workers = 0;
		cp->path.rows = ip->path.rows;
		/* a hit skips the descent: half the index path's cost */
		cp->path.startup_cost = ip->path.startup_cost / 2;
		cp->path.total_cost = ip->path.total_cost / 2;
		cp->path.pathkeys = ip->path.pathkeys;
		cp->flags = 0;
		cp->custom_paths = NIL;
		cp->custom_private = list_make1(ip);
		cp->methods = &ls_hash_path_methods;
		add = lappend(add, cp);
	}
	foreach(lc, add)
		add_path(rel, (Path *) lfirst(lc));
}

/*
 * Does the plan read a system column of the scanned relation (ctid for
 * UPDATE, DELETE and row marks, tableoid, xmin, ...)?
 */
static bool
ls_hash_needs_sysattrs(Index relid, List *tlist, List *qual)
{
	Bitmapset  *attrs = NULL;
	int			k = -1;

	pull_varattnos((Node *) tlist, relid, &attrs);
	pull_varattnos((Node *) qual, relid, &attrs);
	while ((k = bms_next_member(attrs, k)) >= 0)
		if (k + FirstLowInvalidHeapAttributeNumber < 0)
			return true;
	return false;
}

/*
 * The scan's own target list when the node can emit exactly what its
 * parent needs: every entry of tlist a plain column of the table (no
 * system column, no whole-row reference, no placeholder).  It is tlist,
 * then the columns only the qual reads; setrefs makes the target list and
 * qual refer to it, the scan slot gets its shape, and when it is tlist
 * itself the executor builds no projection per execution.  NIL otherwise:
 * the scan slot has the table's shape (also what row marks, UPDATE,
 * DELETE and EvalPlanQual need: they read ctid or the whole row, and
 * EvalPlanQual hands the scan a test tuple of the table's shape).
 */
static List *
ls_hash_scan_tlist(Index relid, List *tlist, List *qual)
{
	List	   *cst = NIL;
	List	   *vars;
	ListCell   *lc;

	foreach(lc, tlist)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		Var		   *var = (Var *) tle->expr;

		if (!IsA(var, Var) || var->varno != relid || var->varattno <= 0 ||
			var->varlevelsup != 0)
			return NIL;
		cst = lappend(cst, makeTargetEntry((Expr *) copyObject(var),
										   list_length(cst) + 1, NULL, false));
	}
	vars = pull_var_clause((Node *) qual, PVC_INCLUDE_PLACEHOLDERS);
	foreach(lc, vars)
	{
		Var		   *var = (Var *) lfirst(lc);

		if (!IsA(var, Var))
			return NIL;
		/* an outer relation's column: a nested loop parameter later */
		if (var->varno != relid)
			continue;
		if (var->varattno <= 0)
			return NIL;
		if (tlist_member((Expr *) var, cst) == NULL)
			cst = lappend(cst, makeTargetEntry((Expr *) copyObject(var),
											   list_length(cst) + 1, NULL, true));
	}
	return cst;
}

/*
 * The xmin of the index's pg_index row, or InvalidTransactionId when every
 * snapshot is younger than that row (frozen): before it, a snapshot may see
 * two rows of one key (ls_hash_index_settled).
 */
static TransactionId
ls_hash_index_xmin(Oid indexoid)
{
	HeapTuple	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(indexoid));
	TransactionId xmin = InvalidTransactionId;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for index %u", indexoid);
	if (!HeapTupleHeaderXminFrozen(tup->t_data) &&
		TransactionIdIsNormal(HeapTupleHeaderGetXmin(tup->t_data)))
		xmin = HeapTupleHeaderGetXmin(tup->t_data);
	ReleaseSysCache(tup);
	return xmin;
}

/*
 * custom_exprs = (values): the compared values in key column order.
 * custom_private = (OIDs, ints, key expressions): OIDs = index, then per
 * key column its comparison function, collation, subtype and operator;
 * ints = slot mode (LsHashMode), the table's range table index at
 * planning, then per key column the table attribute, typlen and typbyval
 * of the value, and the column's typlen when an integer column is
 * compared with another integer type (else 0); key expressions = the index side of each condition (for
 * EXPLAIN: custom_exprs may only refer to custom_scan_tlist's columns).
 * The OIDs end with the index's pg_index xmin (ls_hash_index_xmin; a
 * change of that row invalidates the plan).
 */
static Plan *
ls_hash_plan_path(PlannerInfo *root, RelOptInfo *rel,
				  struct CustomPath *best_path, List *tlist,
				  List *clauses, List *custom_plans)
{
	IndexPath  *ip = linitial(best_path->custom_private);
	CustomScan *cs = makeNode(CustomScan);
	LsHashKeyCols cols;
	List	   *values = NIL;
	List	   *keyexprs = NIL;
	List	   *oids;
	List	   *ints;
	List	   *qual = NIL;
	List	   *used = NIL;
	List	   *cst = NIL;
	LsHashMode	mode;
	ListCell   *lc;

	if (!ls_hash_match_path(ip, &cols))
		elog(ERROR, "leanstore hash lookup path no longer matches its index");

	/*
	 * The key conditions are checked by the lookup itself; drop them, and
	 * join clauses derived from the same equivalence classes, from the
	 * qual (as an index scan drops its index conditions).
	 */
	for (int i = 0; i < cols.nkeys; i++)
		used = lappend(used, cols.iclause[i]);
	foreach(lc, clauses)
	{
		RestrictInfo *ri = lfirst_node(RestrictInfo, lc);

		if (ri->pseudoconstant)
			continue;
		if (is_redundant_with_indexclauses(ri, used))
			continue;
		qual = lappend(qual, ri->clause);
	}

	if (ls_hash_needs_sysattrs(rel->relid, tlist, qual))
		mode = LS_HM_TABLE_SLOT;
	else
	{
		cst = ls_hash_scan_tlist(rel->relid, tlist, qual);
		mode = cst != NIL ? LS_HM_NARROW : LS_HM_VIRTUAL;
	}
	oids = list_make1_oid(ip->indexinfo->indexoid);
	ints = list_make2_int(mode, rel->relid);
	for (int i = 0; i < cols.nkeys; i++)
	{
		int16		typlen;
		bool		typbyval;

		values = lappend(values, copyObject(cols.arg[i]));
		keyexprs = lappend(keyexprs, copyObject(linitial(((OpExpr *) cols.qual[i])->args)));
		oids = lappend_oid(oids, get_opcode(cols.opno[i]));
		oids = lappend_oid(oids, cols.collid[i]);
		oids = lappend_oid(oids, cols.subtype[i]);
		oids = lappend_oid(oids, cols.opno[i]);
		get_typlenbyval(exprType((Node *) cols.arg[i]), &typlen, &typbyval);
		ints = lappend_int(ints, ip->indexinfo->indexkeys[i]);
		ints = lappend_int(ints, typlen);
		ints = lappend_int(ints, typbyval ? 1 : 0);
		ints = lappend_int(ints, cols.coltyplen[i]);
	}
	oids = lappend_oid(oids, (Oid) ls_hash_index_xmin(ip->indexinfo->indexoid));

	cs->scan.plan.targetlist = tlist;
	cs->scan.plan.qual = qual;
	cs->scan.scanrelid = rel->relid;
	cs->flags = best_path->flags;
	cs->custom_plans = NIL;
	cs->custom_exprs = list_make1(values);
	cs->custom_private = list_make3(oids, ints, keyexprs);
	cs->custom_scan_tlist = cst;
	cs->methods = &ls_hash_scan_methods;
	return &cs->scan.plan;
}

/* ------------------------------------------------------------------------
 * Execution
 *
 * The scan slot (LsHashMode): with custom_scan_tlist (the plan reads plain
 * columns only) it has exactly the columns the parent needs, so no
 * projection is built per execution; a hit takes those columns from the
 * fetched version and nothing else is deformed.  Otherwise PostgreSQL 15
 * gives a custom scan a virtual slot of the table's shape, which the
 * fetched row's columns go into; when the plan reads a system column
 * (ctid of UPDATE, DELETE, row marks) that slot is replaced by one of the
 * table AM's kind and the projection and qual are compiled again for it.
 * A hit fetches through ls_rowid_fetch, whose state and first buffer
 * are part of the node's: the visible version copied into that buffer
 * (the slot's columns point into it, valid until the next fetch).  The
 * fallback index scan fetches into a slot of the table's shape (with
 * custom_scan_tlist a second slot, made at the first miss).
 *
 * What an execution costs matters as much as the lookup (PL/pgSQL runs
 * the executor once per statement): the index is opened, its scan keys
 * (and their equality functions) set up and the context for by-reference
 * keys created only on the first miss; the seed of the key hashes is
 * computed once per backend, index and storage; constants and parameters
 * are read without compiling an expression; the key recheck compares the
 * bytes first and calls the equality function only when they differ.
 * ------------------------------------------------------------------------ */

/* How a key value is obtained. */
typedef enum LsHashValueKind
{
	LS_HV_CONST,
	LS_HV_EXTERN,				/* PARAM_EXTERN: a statement parameter */
	LS_HV_EXEC,					/* PARAM_EXEC: nested loop or initplan */
	LS_HV_EXPR,					/* anything else: a compiled expression */
} LsHashValueKind;

typedef struct LsHashValue
{
	LsHashValueKind kind;
	Datum		constval;
	bool		constnull;
	int			paramid;
	Oid			paramtype;
	ExprState  *expr;
} LsHashValue;

typedef enum LsHashPhase
{
	LS_HP_START,				/* keys not evaluated yet */
	LS_HP_INDEX,				/* scanning the index */
	LS_HP_DONE,
} LsHashPhase;

#define LS_HASH_FETCH_BUF 512
#define LS_HASH_ARRAYS 512

typedef struct LsHashScanState
{
	CustomScanState css;
	Oid			indexoid;
	LOCKMODE	lockmode;
	LsHashMode	mode;
	Relation	index;			/* opened at the first miss */
	int			nkeys;
	bool		byref_keys;		/* a key value is passed by reference */
	bool		keys_ready;		/* keys[] set up (functions looked up) */
	ScanKey		keys;			/* nkeys, for the index scan and recheck */
	Datum	   *keyvals;		/* the evaluated key values */
	AttrNumber *attnos;			/* table column of each key */
	int16	   *typlen;			/* of the key value */
	int16	   *coltyplen;		/* LsHashKeyCols.coltyplen */
	bool	   *typbyval;
	LsHashValue *values;		/* nkeys */
	int			nout;			/* LS_HM_NARROW: the scan slot's columns */
	AttrNumber *outattnos;		/* LS_HM_NARROW: table column of each */
	TupleTableSlot *tslot;		/* LS_HM_NARROW: the index scan's slot */
	ExprContext *keycxt;		/* by-reference key values live here */
	LsRowidFetch fetch;			/* a hit's fetch, into fetchbuf at first */
	IndexScanDesc iscan;
	uint64		seed;
	uint32		tag;
	LsHashPhase phase;
	bool		fetched;		/* fetch initialized (not EXPLAIN only) */
	bool		keys_ok;		/* keys evaluated, none NULL */
	bool		fill;			/* fill the cache from the index scan */
	TransactionId index_xmin;	/* ls_hash_index_xmin at planning */
	uint64		hash;
	/* EXPLAIN ANALYZE */
	uint64		hits;
	uint64		misses;
	uint64		stale;
	uint64		bypassed;

	/* not zeroed at creation (everything below is set before it is read) */
	/* the per-key and per-column arrays when they fit (a few keys) */
	union
	{
		char		data[LS_HASH_ARRAYS];
		double		align_d;
		int64		align_i;
	}			arrays;
	/* room for a typical row's copy (a longer one gets a palloc'd buffer) */
	union
	{
		char		data[LS_HASH_FETCH_BUF];
		double		align_d;
		int64		align_i;
	}			fetchbuf;
} LsHashScanState;

static void ls_hash_begin(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *ls_hash_exec(CustomScanState *node);
static void ls_hash_end(CustomScanState *node);
static void ls_hash_rescan(CustomScanState *node);
static void ls_hash_explain(CustomScanState *node, List *ancestors,
							ExplainState *es);

static const CustomExecMethods ls_hash_exec_methods = {
	.CustomName = LS_HASH_NAME,
	.BeginCustomScan = ls_hash_begin,
	.ExecCustomScan = ls_hash_exec,
	.EndCustomScan = ls_hash_end,
	.ReScanCustomScan = ls_hash_rescan,
	.ExplainCustomScan = ls_hash_explain,
};

static Node *
ls_hash_create_state(CustomScan *cscan)
{
	LsHashScanState *s = palloc(sizeof(LsHashScanState));

	memset(s, 0, offsetof(LsHashScanState, arrays));
	NodeSetTag(s, T_CustomScanState);
	s->css.methods = &ls_hash_exec_methods;
	return (Node *) s;
}

/* custom_private's OIDs of key column i */
#define LS_HASH_OID_FUNC(i)		(1 + 4 * (i))
#define LS_HASH_OID_COLL(i)		(2 + 4 * (i))
#define LS_HASH_OID_SUBTYPE(i)	(3 + 4 * (i))
#define LS_HASH_OID_OPNO(i)		(4 + 4 * (i))
/* custom_private's OID after those of n key columns: the index's xmin */
#define LS_HASH_OID_INDEX_XMIN(n)	(1 + 4 * (n))
/* custom_private's ints of key column i */
#define LS_HASH_INT_ATTNO(i)	(2 + 4 * (i))
#define LS_HASH_INT_TYPLEN(i)	(3 + 4 * (i))
#define LS_HASH_INT_BYVAL(i)	(4 + 4 * (i))
#define LS_HASH_INT_COLLEN(i)	(5 + 4 * (i))

static void
ls_hash_begin(CustomScanState *node, EState *estate, int eflags)
{
	LsHashScanState *s = (LsHashScanState *) node;
	CustomScan *cs = (CustomScan *) node->ss.ps.plan;
	Relation	rel = node->ss.ss_currentRelation;
	List	   *oids = linitial(cs->custom_private);
	List	   *ints = lsecond(cs->custom_private);
	List	   *values = linitial(cs->custom_exprs);
	int			n = list_length(values);
	int			nout = list_length(cs->custom_scan_tlist);
	ListCell   *lc;
	char	   *mem;
	Size		size;

	s->indexoid = linitial_oid(oids);
	s->index_xmin = (TransactionId) list_nth_oid(oids, LS_HASH_OID_INDEX_XMIN(n));
	s->lockmode = exec_rt_fetch(cs->scan.scanrelid, estate)->rellockmode;
	s->mode = (LsHashMode) linitial_int(ints);
	s->nkeys = n;
	s->nout = nout;
	/* the per-key and per-column arrays: in the state, or one allocation */
	size = MAXALIGN(sizeof(ScanKeyData) * n) +
		MAXALIGN(sizeof(Datum) * n) +
		MAXALIGN(sizeof(LsHashValue) * n) +
		MAXALIGN(sizeof(AttrNumber) * n) +
		MAXALIGN(sizeof(AttrNumber) * nout) +
		MAXALIGN(sizeof(int16) * n) * 2 + sizeof(bool) * n;
	mem = size <= sizeof(s->arrays) ? s->arrays.data : palloc(size);
	s->keys = (ScanKey) mem;
	mem += MAXALIGN(sizeof(ScanKeyData) * n);
	s->keyvals = (Datum *) mem;
	mem += MAXALIGN(sizeof(Datum) * n);
	s->values = (LsHashValue *) mem;
	mem += MAXALIGN(sizeof(LsHashValue) * n);
	s->attnos = (AttrNumber *) mem;
	mem += MAXALIGN(sizeof(AttrNumber) * n);
	s->outattnos = (AttrNumber *) mem;
	mem += MAXALIGN(sizeof(AttrNumber) * nout);
	s->typlen = (int16 *) mem;
	mem += MAXALIGN(sizeof(int16) * n);
	s->coltyplen = (int16 *) mem;
	mem += MAXALIGN(sizeof(int16) * n);
	s->typbyval = (bool *) mem;
	for (int i = 0; i < n; i++)
	{
		Node	   *v = list_nth(values, i);
		LsHashValue *hv = &s->values[i];

		memset(hv, 0, sizeof(*hv));
		if (IsA(v, Const))
		{
			hv->kind = LS_HV_CONST;
			hv->constval = ((Const *) v)->constvalue;
			hv->constnull = ((Const *) v)->constisnull;
		}
		else if (IsA(v, Param) && ((Param *) v)->paramkind == PARAM_EXTERN)
		{
			hv->kind = LS_HV_EXTERN;
			hv->paramid = ((Param *) v)->paramid;
			hv->paramtype = ((Param *) v)->paramtype;
		}
		else if (IsA(v, Param) && ((Param *) v)->paramkind == PARAM_EXEC)
		{
			hv->kind = LS_HV_EXEC;
			hv->paramid = ((Param *) v)->paramid;
		}
		else
		{
			hv->kind = LS_HV_EXPR;
			hv->expr = ExecInitExpr((Expr *) v, &node->ss.ps);
		}
		s->attnos[i] = (AttrNumber) list_nth_int(ints, LS_HASH_INT_ATTNO(i));
		s->typlen[i] = (int16) list_nth_int(ints, LS_HASH_INT_TYPLEN(i));
		s->typbyval[i] = list_nth_int(ints, LS_HASH_INT_BYVAL(i)) != 0;
		s->coltyplen[i] = (int16) list_nth_int(ints, LS_HASH_INT_COLLEN(i));
		if (!s->typbyval[i])
			s->byref_keys = true;
	}
	nout = 0;
	foreach(lc, cs->custom_scan_tlist)
		s->outattnos[nout++] = ((Var *) lfirst_node(TargetEntry, lc)->expr)->varattno;
	s->phase = LS_HP_START;
	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;

	if (s->mode == LS_HM_TABLE_SLOT)
	{
		/* system columns: the scan slot must be the table AM's own */
		TupleTableSlot *hslot;

		hslot = ExecAllocTableSlot(&estate->es_tupleTable, RelationGetDescr(rel),
								   table_slot_callbacks(rel));
		node->ss.ss_ScanTupleSlot = hslot;
		node->ss.ps.scanops = hslot->tts_ops;
		node->ss.ps.scanopsfixed = true;
		node->ss.ps.scanopsset = true;
		ExecAssignScanProjectionInfoWithVarno(&node->ss, cs->scan.scanrelid);
		node->ss.ps.qual = ExecInitQual(cs->scan.plan.qual, &node->ss.ps);
	}
	ls_rowid_fetch_init(&s->fetch, rel, s->fetchbuf.data, sizeof(s->fetchbuf));
	s->fetched = true;
	s->seed = ls_hash_seed(rel, s->indexoid, &s->tag);
}

/*
 * The index scan's keys: set up at the first miss (or the first recheck
 * whose bytes differ), in the query's memory (the equality functions'
 * lookup data must live as long as the node).
 */
static void
ls_hash_setup_keys(LsHashScanState *s)
{
	CustomScan *cs = (CustomScan *) s->css.ss.ps.plan;
	List	   *oids = linitial(cs->custom_private);
	MemoryContext old = MemoryContextSwitchTo(s->css.ss.ps.state->es_query_cxt);

	for (int i = 0; i < s->nkeys; i++)
		ScanKeyEntryInitialize(&s->keys[i], 0, (AttrNumber) (i + 1),
							   BTEqualStrategyNumber,
							   list_nth_oid(oids, LS_HASH_OID_SUBTYPE(i)),
							   list_nth_oid(oids, LS_HASH_OID_COLL(i)),
							   list_nth_oid(oids, LS_HASH_OID_FUNC(i)),
							   (Datum) 0);
	MemoryContextSwitchTo(old);
	s->keys_ready = true;
}

/* One key value (what ExecEvalExpr would give for a Const or a Param). */
static Datum
ls_hash_value(LsHashValue *v, ExprContext *ec, bool *isnull)
{
	switch (v->kind)
	{
		case LS_HV_CONST:
			*isnull = v->constnull;
			return v->constval;
		case LS_HV_EXTERN:
			{
				ParamListInfo params = ec->ecxt_param_list_info;
				ParamExternData *prm = NULL;
				ParamExternData prmdata;

				if (params != NULL && v->paramid > 0 && v->paramid <= params->numParams)
					prm = params->paramFetch != NULL ?
						params->paramFetch(params, v->paramid, false, &prmdata) :
						&params->params[v->paramid - 1];
				if (prm == NULL || !OidIsValid(prm->ptype))
					ereport(ERROR,
							(errcode(ERRCODE_UNDEFINED_OBJECT),
							 errmsg("the lookup found no value for parameter $%d", v->paramid)));
				if (prm->ptype != v->paramtype)
					ereport(ERROR,
							(errcode(ERRCODE_DATATYPE_MISMATCH),
							 errmsg("parameter $%d has type %s, but the plan was made for type %s",
									v->paramid, format_type_be(prm->ptype),
									format_type_be(v->paramtype))));
				*isnull = prm->isnull;
				return prm->value;
			}
		case LS_HV_EXEC:
			{
				ParamExecData *prm = &ec->ecxt_param_exec_vals[v->paramid];

				/* an initplan's value is computed on first use */
				if (prm->execPlan != NULL)
					ExecSetParamPlan(prm->execPlan, ec);
				*isnull = prm->isnull;
				return prm->value;
			}
		case LS_HV_EXPR:
			break;
	}
	return ExecEvalExpr(v->expr, ec, isnull);
}

/* Evaluate the key values and their hash; false when one is NULL. */
static bool
ls_hash_eval_keys(LsHashScanState *s)
{
	ExprContext *ec;
	MemoryContext old;
	int			i;
	uint64		h = s->seed;

	/*
	 * By-value keys can be evaluated in the node's per-tuple context; a
	 * by-reference value must survive the whole index scan.
	 */
	if (s->byref_keys)
	{
		if (s->keycxt == NULL)
			s->keycxt = CreateExprContext(s->css.ss.ps.state);
		ec = s->keycxt;
		ResetExprContext(ec);
	}
	else
		ec = s->css.ss.ps.ps_ExprContext;
	old = MemoryContextSwitchTo(ec->ecxt_per_tuple_memory);
	for (i = 0; i < s->nkeys; i++)
	{
		bool		isnull;
		Datum		d = ls_hash_value(&s->values[i], ec, &isnull);

		if (isnull)
		{
			/* "= NULL" matches nothing */
			MemoryContextSwitchTo(old);
			return false;
		}
		s->keyvals[i] = d;
		h = ls_hash_datum(h, d, s->typlen[i], s->typbyval[i]);
	}
	MemoryContextSwitchTo(old);
	if (ls_hash_test_bits > 0 && ls_hash_test_bits < 64)
		h &= (UINT64CONST(1) << ls_hash_test_bits) - 1;
	s->hash = h;
	return true;
}

/* An int2, int4 or int8 Datum of length len as a 64-bit integer. */
static inline int64
ls_hash_int_value(Datum d, int16 len)
{
	return len == 2 ? DatumGetInt16(d) : len == 4 ? DatumGetInt32(d) : DatumGetInt64(d);
}

/*
 * Does column value d equal key i?  Equal bytes are equal values (a B-tree
 * equality is reflexive); other bytes (another header, a compressed or
 * out-of-line value, or values such as 1.0 and 1.00) are decided by the
 * index's equality function.
 */
static bool
ls_hash_key_equal(LsHashScanState *s, int i, Datum d)
{
	Datum		key = s->keyvals[i];
	int16		typlen = s->typlen[i];

	/*
	 * An integer column and a key of another integer type: each read at
	 * its own width (the key's width would cut the column's value: an
	 * int8 column's 4294967301 is not an int4 key's 5).
	 */
	if (s->coltyplen[i] != 0)
		return ls_hash_int_value(d, s->coltyplen[i]) == ls_hash_int_value(key, typlen);

	if (s->typbyval[i])
	{
		switch (typlen)
		{
			case 1:
				if (DatumGetChar(d) == DatumGetChar(key))
					return true;
				break;
			case 2:
				if (DatumGetInt16(d) == DatumGetInt16(key))
					return true;
				break;
			case 4:
				if (DatumGetInt32(d) == DatumGetInt32(key))
					return true;
				break;
			default:
				if (d == key)
					return true;
				break;
		}
	}
	else if (typlen > 0)
	{
		if (memcmp(DatumGetPointer(d), DatumGetPointer(key), typlen) == 0)
			return true;
	}
	else if (typlen == -1)
	{
		struct varlena *a = (struct varlena *) DatumGetPointer(d);
		struct varlena *b = (struct varlena *) DatumGetPointer(key);

		if (!VARATT_IS_EXTERNAL(a) && !VARATT_IS_COMPRESSED(a) &&
			!VARATT_IS_EXTERNAL(b) && !VARATT_IS_COMPRESSED(b) &&
			VARSIZE_ANY_EXHDR(a) == VARSIZE_ANY_EXHDR(b) &&
			memcmp(VARDATA_ANY(a), VARDATA_ANY(b), VARSIZE_ANY_EXHDR(a)) == 0)
			return true;
	}
	if (!s->keys_ready)
		ls_hash_setup_keys(s);
	return DatumGetBool(FunctionCall2Coll(&s->keys[i].sk_func,
										  s->keys[i].sk_collation, d, key));
}

/* Do the key columns of the row in slot (the table's shape) equal the keys? */
static bool
ls_hash_keys_match(LsHashScanState *s, TupleTableSlot *slot)
{
	for (int i = 0; i < s->nkeys; i++)
	{
		bool		isnull;
		Datum		d = slot_getattr(slot, s->attnos[i], &isnull);

		if (isnull || !ls_hash_key_equal(s, i, d))
			return false;
	}
	return true;
}

/* The same for a fetched tuple. */
static bool
ls_hash_tuple_keys_match(LsHashScanState *s, HeapTuple tup, TupleDesc desc)
{
	for (int i = 0; i < s->nkeys; i++)
	{
		bool		isnull;
		Datum		d = heap_getattr(tup, s->attnos[i], desc, &isnull);

		if (isnull || !ls_hash_key_equal(s, i, d))
			return false;
	}
	return true;
}

static inline void
ls_hash_count(ls_hc_counter c)
{
	ls_hc_count(ls_hcache, ls_hash_slot(), c, 1);
}

/*
 * The index's pending statistics entry found last, and the transaction it
 * was found in: pending entries are flushed and freed only between
 * transactions (pgstat_report_stat runs outside them; dropped objects'
 * entries go at commit), so within one transaction the pointer stays
 * valid, and a loop of lookups looks it up once.
 */
static Oid	ls_hash_stat_indexoid = InvalidOid;
static LocalTransactionId ls_hash_stat_lxid = InvalidLocalTransactionId;
static PgStat_TableStatus *ls_hash_stat_pending = NULL;

/*
 * A hit counts in the index's statistics what the index scan it replaces
 * would have counted (pg_stat_user_indexes: idx_scan by _bt_first,
 * idx_tup_read by index_getnext_tid, idx_tup_fetch by index_fetch_heap;
 * pg_stat_user_tables sums them), without opening the index: straight into
 * the index's pending statistics entry, as pgstat_count_index_scan would
 * through its relcache entry.
 */
static void
ls_hash_count_index_hit(LsHashScanState *s)
{
	PgStat_TableStatus *pending;

	if (!pgstat_track_counts)
		return;
	if (ls_hash_stat_indexoid == s->indexoid &&
		ls_hash_stat_lxid == MyProc->lxid &&
		ls_hash_stat_lxid != InvalidLocalTransactionId)
		pending = ls_hash_stat_pending;
	else
	{
		PgStat_EntryRef *ref;

		ref = pgstat_prep_pending_entry(PGSTAT_KIND_RELATION, MyDatabaseId,
										s->indexoid, NULL);
		pending = (PgStat_TableStatus *) ref->pending;
		pending->t_id = s->indexoid;
		pending->t_shared = false;
		ls_hash_stat_indexoid = s->indexoid;
		ls_hash_stat_lxid = MyProc->lxid;
		ls_hash_stat_pending = pending;
	}
	pending->t_counts.t_numscans++;
	pending->t_counts.t_tuples_returned++;
	pending->t_counts.t_tuples_fetched++;
}

/*
 * The narrow scan slot gets the columns of custom_scan_tlist from a row of
 * the table's shape: a fetched tuple, or (tup NULL) the index scan's slot.
 */
static void
ls_hash_store_narrow(LsHashScanState *s, HeapTuple tup)
{
	TupleTableSlot *slot = s->css.ss.ss_ScanTupleSlot;
	TupleDesc	desc = RelationGetDescr(s->css.ss.ss_currentRelation);

	/* (the probe cleared it before its fetch) */
	if (tup == NULL)
		ExecClearTuple(slot);
	for (int i = 0; i < s->nout; i++)
		slot->tts_values[i] = tup != NULL ?
			heap_getattr(tup, s->outattnos[i], desc, &slot->tts_isnull[i]) :
			slot_getattr(s->tslot, s->outattnos[i], &slot->tts_isnull[i]);
	ExecStoreVirtualTuple(slot);
}

/*
 * Map the scan's key hash to rowid, with the row reference row/serial
 * (row NULL: the row is not hot, a rowid alone).
 */
static void
ls_hash_fill(LsHashScanState *s, uint64 rowid, ls_hot_row *row, uint64 serial)
{
	ls_hc_fill_result fr;

	/* marked before the entry exists (see ls_hash_table_hashed) */
	if (ls_hot_table_get_tag(s->fetch.tbl, LS_TAG_HASHED) == 0)
		ls_hot_table_set_tag(s->fetch.tbl, LS_TAG_HASHED, 1);
	fr = ls_hc_fill_ref(ls_hcache, s->hash, s->tag, rowid, (uint64) (uintptr_t) row,
						row != NULL ? serial : 0);
	if (fr != LS_HC_SKIPPED)
		ls_hash_count(LS_HC_C_FILLS);
	if (fr == LS_HC_EVICTED)
		ls_hash_count(LS_HC_C_EVICTIONS);
}

/* Try the cache; true with the row in the scan slot when the entry held. */
static bool
ls_hash_probe(LsHashScanState *s)
{
	EState	   *estate = s->css.ss.ps.state;
	TupleTableSlot *slot = s->css.ss.ss_ScanTupleSlot;
	Relation	rel = s->css.ss.ss_currentRelation;
	ls_hc_hit	hit;
	uint64		rowid;
	ItemPointerData tid;
	HeapTuple	tup;

	if (!ls_hc_lookup_ref(ls_hcache, s->hash, &hit))
	{
		s->misses++;
		ls_hash_count(LS_HC_C_MISSES);
		return false;
	}
	rowid = hit.rowid;
	ls_rowid_to_tid(rowid, &tid);
	/* the slot may point into the fetch's buffer, which the fetch reuses */
	ExecClearTuple(slot);
	s->fetch.ref.row = (ls_hot_row *) (uintptr_t) hit.ref;
	s->fetch.ref.serial = hit.serial;
	s->fetch.ref.fresh = false;
	tup = ls_rowid_fetch(rel, &s->fetch, &tid, estate->es_snapshot);
	if (tup != NULL && ls_hash_tuple_keys_match(s, tup, RelationGetDescr(rel)))
	{
		/* the entry's row reference no longer held: remember the new one */
		if (s->fetch.ref.fresh)
			ls_hash_fill(s, rowid, s->fetch.ref.row, s->fetch.ref.serial);
		if (s->mode == LS_HM_NARROW)
			ls_hash_store_narrow(s, tup);
		else
			ls_store_borrowed(tup, slot);
		/* WHERE CURRENT OF reads the scan slot's tid */
		slot->tts_tid = tup->t_self;
		slot->tts_tableOid = RelationGetRelid(rel);
		s->hits++;
		ls_hash_count(LS_HC_C_HITS);
		ls_hash_count_index_hit(s);
		return true;
	}
	/* stale: gone, moved to another key, not visible to us, a collision */
	s->stale++;
	ls_hash_count(LS_HC_C_STALE);
	if (ls_hc_remove(ls_hcache, s->hash, rowid) > 0)
		ls_hash_count(LS_HC_C_REMOVED);
	return false;
}

/*
 * Was the index there for every row this snapshot can see, so that at most
 * one of them has the key?  Its pg_index row committed before the
 * snapshot's xmin (frozen, or an older xid).
 */
static inline bool
ls_hash_index_settled(LsHashScanState *s, Snapshot snapshot)
{
	return !TransactionIdIsValid(s->index_xmin) ||
		TransactionIdPrecedes(s->index_xmin, snapshot->xmin);
}

/* Start (or restart) the index scan for the evaluated keys. */
static void
ls_hash_start_index(LsHashScanState *s)
{
	ScanState  *ss = &s->css.ss;
	EState	   *estate = ss->ps.state;

	if (!s->keys_ready)
		ls_hash_setup_keys(s);
	for (int i = 0; i < s->nkeys; i++)
		s->keys[i].sk_argument = s->keyvals[i];
	if (s->iscan == NULL)
	{
		if (s->index == NULL)
			s->index = index_open(s->indexoid, s->lockmode);
		s->iscan = index_beginscan(ss->ss_currentRelation, s->index,
								   estate->es_snapshot, s->nkeys, 0);
	}
	if (s->mode == LS_HM_NARROW && s->tslot == NULL)
	{
		Relation	rel = ss->ss_currentRelation;
		MemoryContext old = MemoryContextSwitchTo(estate->es_query_cxt);

		s->tslot = ExecAllocTableSlot(&estate->es_tupleTable, RelationGetDescr(rel),
									  table_slot_callbacks(rel));
		MemoryContextSwitchTo(old);
	}
	index_rescan(s->iscan, s->keys, s->nkeys, NULL, 0);
}

static TupleTableSlot *
ls_hash_next(ScanState *ss)
{
	LsHashScanState *s = (LsHashScanState *) ss;
	EState	   *estate = ss->ps.state;

	if (s->phase == LS_HP_START)
	{
		s->keys_ok = ls_hash_eval_keys(s);
		if (!s->keys_ok)
		{
			s->phase = LS_HP_DONE;
			return NULL;
		}
		s->fill = false;
		/* (a cached plan may outlive SET leanstore.hash_cache = off) */
		if (ls_hcache != NULL && ls_hash_cache_on &&
			IsMVCCSnapshot(estate->es_snapshot) && !IsolationIsSerializable() &&
			ls_hash_index_settled(s, estate->es_snapshot))
		{
			if (ls_hash_probe(s))
			{
				/* unique: nothing else can match */
				s->phase = LS_HP_DONE;
				return ss->ss_ScanTupleSlot;
			}
			s->fill = true;
		}
		else
			s->bypassed++;
		ls_hash_start_index(s);
		s->phase = LS_HP_INDEX;
	}
	if (s->phase == LS_HP_INDEX)
	{
		TupleTableSlot *slot = s->mode == LS_HM_NARROW ? s->tslot : ss->ss_ScanTupleSlot;

		if (index_getnext_slot(s->iscan, ForwardScanDirection, slot))
		{
			if (s->fill)
			{
				uint64		rowid = ls_tid_to_rowid(&s->iscan->xs_heaptid);
				uint64		serial = 0;
				ls_hot_row *row;

				/* the header's address is kept, never read outside an epoch */
				ls_epoch_enter();
				row = ls_hot_row_get_ref(s->fetch.tbl, rowid, &serial);
				ls_epoch_exit();
				ls_hash_fill(s, rowid, row, serial);
				s->fill = false;
			}
			if (s->mode == LS_HM_NARROW)
				ls_hash_store_narrow(s, NULL);
			ss->ss_ScanTupleSlot->tts_tid = s->iscan->xs_heaptid;
			ss->ss_ScanTupleSlot->tts_tableOid = RelationGetRelid(ss->ss_currentRelation);
			return ss->ss_ScanTupleSlot;
		}
		s->phase = LS_HP_DONE;
	}
	return NULL;
}

/* EvalPlanQual: does the test tuple satisfy the key conditions? */
static bool
ls_hash_recheck(ScanState *ss, TupleTableSlot *slot)
{
	LsHashScanState *s = (LsHashScanState *) ss;

	if (s->phase == LS_HP_START)
	{
		s->keys_ok = ls_hash_eval_keys(s);
		s->phase = LS_HP_DONE;
	}
	return s->keys_ok && ls_hash_keys_match(s, slot);
}

/*
 * EvalPlanQual hands a scan whose relation it substitutes a test tuple of
 * the table's shape, which a narrow scan slot cannot take.  The planner
 * never gives such a relation a narrow slot (it has a row mark or is the
 * result relation, so the plan reads its ctid or whole row): check it.
 */
static void
ls_hash_check_epq(CustomScanState *node)
{
	EPQState   *epq = node->ss.ps.state->es_epq_active;
	Index		rti = ((Scan *) node->ss.ps.plan)->scanrelid;

	if (epq->relsubs_slot[rti - 1] != NULL || epq->relsubs_rowmark[rti - 1] != NULL)
		elog(ERROR, "leanstore hash lookup without the table's columns got an EvalPlanQual test tuple");
}

static TupleTableSlot *
ls_hash_exec(CustomScanState *node)
{
	if (unlikely(node->ss.ps.state->es_epq_active != NULL) &&
		((LsHashScanState *) node)->mode == LS_HM_NARROW)
		ls_hash_check_epq(node);
	return ExecScan(&node->ss, ls_hash_next, ls_hash_recheck);
}

static void
ls_hash_rescan(CustomScanState *node)
{
	LsHashScanState *s = (LsHashScanState *) node;

	s->phase = LS_HP_START;
	ExecScanReScan(&node->ss);
}

static void
ls_hash_end(CustomScanState *node)
{
	LsHashScanState *s = (LsHashScanState *) node;

	/* the slots may borrow the fetches' buffers */
	if (node->ss.ss_ScanTupleSlot)
		ExecClearTuple(node->ss.ss_ScanTupleSlot);
	if (s->tslot)
		ExecClearTuple(s->tslot);
	if (s->iscan)
		index_endscan(s->iscan);
	if (s->fetched)
		ls_rowid_fetch_end(&s->fetch);
	if (s->index)
		index_close(s->index, NoLock);
}

static void
ls_hash_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	LsHashScanState *s = (LsHashScanState *) node;
	CustomScan *cs = (CustomScan *) node->ss.ps.plan;
	List	   *oids = linitial(cs->custom_private);
	Index		planned_relid = (Index) lsecond_int(lsecond(cs->custom_private));
	List	   *keyexprs = lthird(cs->custom_private);
	List	   *values = linitial(cs->custom_exprs);
	List	   *conds = NIL;
	List	   *context;
	char	   *cond;

	/*
	 * The conditions "key = value": the index side as planned (its Vars
	 * renumbered to the final range table), the value as executed.
	 */
	for (int i = 0; i < s->nkeys; i++)
	{
		Node	   *key = copyObject(list_nth(keyexprs, i));
		Oid			opno = list_nth_oid(oids, LS_HASH_OID_OPNO(i));

		ChangeVarNodes(key, planned_relid, cs->scan.scanrelid, 0);
		conds = lappend(conds,
						make_opclause(opno, BOOLOID, false, (Expr *) key,
									  (Expr *) list_nth(values, i), InvalidOid,
									  list_nth_oid(oids, LS_HASH_OID_COLL(i))));
	}
	ExplainPropertyText("Index Name", get_rel_name(s->indexoid), es);
	context = set_deparse_context_plan(es->deparse_cxt, node->ss.ps.plan, ancestors);
	cond = deparse_expression((Node *) make_ands_explicit(conds), context,
							  es->verbose, false);
	ExplainPropertyText("Lookup Cond", cond, es);
	if (es->analyze)
	{
		ExplainPropertyInteger("Hash Hits", NULL, (int64) s->hits, es);
		ExplainPropertyInteger("Hash Misses", NULL, (int64) (s->misses + s->stale), es);
		if (s->stale > 0 || es->format != EXPLAIN_FORMAT_TEXT)
			ExplainPropertyInteger("Hash Stale", NULL, (int64) s->stale, es);
		if (s->bypassed > 0 || es->format != EXPLAIN_FORMAT_TEXT)
			ExplainPropertyInteger("Hash Bypassed", NULL, (int64) s->bypassed, es);
	}
}

/* ------------------------------------------------------------------------
 * Module load (from _PG_init)
 * ------------------------------------------------------------------------ */
void
ls_hashscan_init(void)
{
	DefineCustomBoolVariable("leanstore.hash_cache",
							 "Plans hash-cached point lookups on unique indexes of leanstore tables.",
							 "When off, the planner uses the ordinary index scans.",
							 &ls_hash_cache_on,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("leanstore.hash_cache_memory",
							"Shared memory for the hash cache of unique-index point lookups.",
							"0 disables the cache.",
							&ls_hash_cache_memory_mb,
							64, 0, 1024 * 1024,
							PGC_POSTMASTER,
							GUC_UNIT_MB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("leanstore.hash_cache_test_bits",
							"Tests only: keeps this many bits of each hash-cache key hash (0 keeps all).",
							"Makes different keys collide in the hash cache, so that the key recheck of every lookup is exercised.",
							&ls_hash_test_bits,
							0, 0, 64,
							PGC_SUSET,
							GUC_NOT_IN_SAMPLE | GUC_NO_SHOW_ALL,
							NULL, NULL, NULL);

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = ls_hash_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = ls_hash_shmem_startup;
	prev_set_rel_pathlist_hook = set_rel_pathlist_hook;
	set_rel_pathlist_hook = ls_hash_pathlist;
	RegisterCustomScanMethods(&ls_hash_scan_methods);
}
