/*
 * init.c - leanstore's life inside a PostgreSQL server.
 *
 * _PG_init, GUCs, the shared hot-tier region, the per-backend hot context,
 * transaction callbacks that keep the tier consistent with PostgreSQL's
 * transactional storage life cycle, and error reporting of core statuses.
 *
 * Invariants kept here:
 *  - The library only works when preloaded: the tier is one fixed region of
 *    the main shared memory segment, which can only be sized at postmaster
 *    start.
 *  - A backend leaves no epoch and no row latch held when a (sub)transaction
 *    aborts or the process exits: errors may be thrown at any point of a
 *    table AM callback, so both are tracked in backend-local state.
 *  - Hot storage of a relfilenode is freed exactly when PostgreSQL unlinks
 *    the relfilenode's files: created storage at abort of the creating
 *    (sub)transaction, dropped storage at commit of the dropping one.
 */
#include "postgres.h"

#include <limits.h>

#include "access/relation.h"
#include "access/xact.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_class.h"
#include "catalog/pg_database.h"
#include "commands/defrem.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/guc.h"
#include "utils/guc_tables.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/relfilenodemap.h"

#include "ls_hashscan.h"
#include "ls_pg.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

int			ls_hot_memory_mb = 1024;
static int	ls_max_tables = 4096;

/* Shared state: the region address is identical in every backend (fork). */
typedef struct LsShared
{
	ls_hot	   *hot;
	Size		region_size;
} LsShared;

static LsShared *ls_shared = NULL;

/* Per-process state */
ls_hot_ctx *ls_my_ctx = NULL;
static bool ls_xact_wrote = false;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
static object_access_hook_type prev_object_access_hook = NULL;

/*
 * Relfilenodes whose hot storage must be freed at the end of a transaction:
 * at_commit entries were dropped, the others were created.  nest_level
 * follows subtransactions like PostgreSQL's pendingDeletes list.
 */
typedef struct LsPendingStorage
{
	ls_hot_key	key;
	Oid			journal_spc;	/* real tablespace, naming its undo journal;
								 * invalid: none (temporary, a database) */
	bool		at_commit;
	int			nest_level;
	struct LsPendingStorage *next;
} LsPendingStorage;

static LsPendingStorage *ls_pending = NULL;

/* The library was loaded, or its shared state looked for, without preload. */
static void pg_attribute_noreturn()
ls_report_not_preloaded(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("leanstore must be loaded via shared_preload_libraries"),
			 errhint("Add leanstore to shared_preload_libraries in postgresql.conf and restart the server.")));
	pg_unreachable();
}

/* ------------------------------------------------------------------------
 * Shared memory
 * ------------------------------------------------------------------------ */

static ls_hot_config
ls_config(void)
{
	ls_hot_config cfg;

	cfg.max_tables = (uint32) ls_max_tables;
	/* slots are backend ids: 1 .. MaxBackends */
	cfg.max_procs = (uint32) MaxBackends + 1;
	return cfg;
}

static Size
ls_region_size(void)
{
	return (Size) ls_hot_memory_mb * 1024 * 1024;
}

static Size
ls_shared_size(void)
{
	return MAXALIGN(sizeof(LsShared));
}

static void
ls_shmem_request(void)
{
	ls_hot_config cfg;
	Size		need;

	if (prev_shmem_request_hook)
		prev_shmem_request_hook();

	cfg = ls_config();
	need = ls_hot_min_region_size(&cfg);
	if (ls_region_size() < need)
		ereport(FATAL,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("leanstore.hot_memory is too small: %d MB, at least %zu MB are needed for leanstore.max_tables = %d and max_connections",
						ls_hot_memory_mb, need / (1024 * 1024) + 1, ls_max_tables)));
	RequestAddinShmemSpace(add_size(ls_region_size(),
									add_size(ls_shared_size(), 16384)));
	RequestAddinShmemSpace(ls_log_shmem_size());
	ls_cold_shmem_request(ls_max_tables);
}

static void
ls_shmem_startup(void)
{
	bool		found;
	bool		rfound;
	void	   *region;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	ls_shared = ShmemInitStruct("leanstore control", ls_shared_size(), &found);
	if (!found)
	{
		memset(ls_shared, 0, ls_shared_size());

		ls_hot_config cfg = ls_config();
		ls_status	st;

		/* the region itself, aligned to a page for the core's allocator */
		region = ShmemInitStruct("leanstore hot tier",
								 ls_region_size() + 4096, &rfound);
		region = (void *) TYPEALIGN(4096, region);
		st = ls_hot_init(region, ls_region_size(), &cfg, &ls_shared->hot);
		if (st != LS_OK)
		{
			LWLockRelease(AddinShmemInitLock);
			ereport(FATAL,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("could not format the leanstore hot tier: %s",
							ls_status_str(st))));
		}
		ls_shared->region_size = ls_region_size();
	}
	ls_cold_shmem_startup(ls_max_tables);
	ls_log_shmem_startup();
	LWLockRelease(AddinShmemInitLock);
}

ls_hot *
ls_shared_hot(void)
{
	if (ls_shared == NULL || ls_shared->hot == NULL)
		ls_report_not_preloaded();
	return ls_shared->hot;
}

/* ------------------------------------------------------------------------
 * Per-backend context, epochs and latches
 * ------------------------------------------------------------------------ */

static void
ls_detach(int code, Datum arg)
{
	if (ls_my_ctx == NULL)
		return;
	ls_release_held();
	ls_hot_detach(ls_my_ctx);
	ls_my_ctx = NULL;
}

void
ls_ctx_release(void)
{
	ls_detach(0, (Datum) 0);
}

ls_hot_ctx *
ls_ctx(void)
{
	ls_hot	   *hot;
	ls_status	st;

	if (likely(ls_my_ctx != NULL))
		return ls_my_ctx;

	/* no leanstore table is touched before recovery from the log ends */
	ls_log_wait_ready();
	hot = ls_shared_hot();
	if (MyBackendId == InvalidBackendId || MyBackendId > MaxBackends)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("leanstore tables cannot be used from this process")));
	st = ls_hot_attach(hot, (uint32) MyBackendId, &ls_my_ctx);
	if (st != LS_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not attach to the leanstore hot tier: %s",
						ls_status_str(st))));
	before_shmem_exit(ls_detach, (Datum) 0);
	return ls_my_ctx;
}

/* ------------------------------------------------------------------------
 * Tables
 * ------------------------------------------------------------------------ */

/*
 * The database's default tablespace is keyed as 0, like pg_class does, so
 * that ALTER DATABASE ... SET TABLESPACE (which moves those files and
 * changes their spcNode) does not orphan the hot tables.
 */
ls_hot_key
ls_key_for_node(const RelFileNode *node)
{
	ls_hot_key	key;

	key.spc = (node->spcNode == MyDatabaseTableSpace) ? 0 : node->spcNode;
	key.db = node->dbNode;
	key.rel = node->relNode;
	return key;
}

/* Cached in rd_amcache; relcache rebuilds (new relfilenode) free it. */
typedef struct LsRelCache
{
	RelFileNode node;
	ls_hot_table *tbl;
	BlockNumber cover_end;		/* md.c opens blocks below it (tableam.c
								 * ls_cover_rowid), as this backend made
								 * or found it; 0: not known */
} LsRelCache;

static const char *ls_lost_why = "";

/* rel's cache entry when it is for rel's current relfilenode, else NULL */
static LsRelCache *
ls_rel_cache(Relation rel)
{
	LsRelCache *cache = (LsRelCache *) rel->rd_amcache;

	if (cache == NULL || !RelFileNodeEquals(cache->node, rel->rd_node))
		return NULL;
	return cache;
}

ls_hot_table *
ls_table_for_or_null(Relation rel)
{
	LsRelCache *cache = ls_rel_cache(rel);
	ls_hot_table *tbl;

	if (cache != NULL)
		return cache->tbl;

	(void) ls_ctx();			/* waits for recovery */
	tbl = ls_hot_table_find(ls_shared_hot(), ls_key_for_node(&rel->rd_node));
	if (tbl == NULL || ls_hot_table_get_tag(tbl, LS_TAG_READY) == 0)
	{
		/* first use since a restart: load it from its file (or wait for
		 * the backend loading it) */
		tbl = ls_cold_adopt(rel, &ls_lost_why);
	}
	if (tbl == NULL)
		return NULL;
	cache = (LsRelCache *) rel->rd_amcache;	/* reused from an older relfilenode */
	if (cache == NULL)
	{
		cache = MemoryContextAlloc(CacheMemoryContext, sizeof(LsRelCache));
		rel->rd_amcache = cache;
	}
	cache->node = rel->rd_node;
	cache->tbl = tbl;
	cache->cover_end = 0;
	return tbl;
}

/*
 * The block count md.c can open in rel's main fork, as this backend last
 * made or found it (0 before); segments never go away while the
 * relfilenode lives, and a new relfilenode starts again at 0.
 */
BlockNumber
ls_rel_cover_end(Relation rel)
{
	LsRelCache *cache = ls_rel_cache(rel);

	return cache == NULL ? 0 : cache->cover_end;
}

void
ls_rel_set_cover_end(Relation rel, BlockNumber end)
{
	LsRelCache *cache = ls_rel_cache(rel);

	/* ls_table_for_or_null made the entry: rowids come from its table */
	if (cache != NULL)
		cache->cover_end = Max(cache->cover_end, end);
}

/* ls_lost_why: why the last table ls_table_for_or_null found was lost. */
#define LS_LOST_DETAIL "%s", ls_lost_why

void
ls_warn_lost(Relation rel)
{
	ereport(WARNING,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("skipping leanstore table \"%s\": its data was lost in a server restart",
					RelationGetRelationName(rel)),
			 errdetail(LS_LOST_DETAIL),
			 errhint("TRUNCATE or DROP the table.")));
}

ls_hot_table *
ls_table_for(Relation rel)
{
	ls_hot_table *tbl;

	(void) ls_ctx();
	tbl = ls_table_for_or_null(rel);
	if (tbl == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("data of leanstore table \"%s\" was lost in a server restart",
						RelationGetRelationName(rel)),
				 errdetail(LS_LOST_DETAIL),
				 errhint("TRUNCATE or DROP the table.")));
	return tbl;
}

/*
 * The name of the table a storage belongs to, when this database knows it
 * (a catalog lookup, so only in a transaction: error paths that have no
 * Relation at hand use it before their ereport); NULL otherwise.
 */
char *
ls_storage_relname(ls_hot_key key)
{
	Oid			relid = InvalidOid;

	if (key.rel != InvalidOid && key.db == MyDatabaseId && IsTransactionState())
		relid = RelidByRelfilenode(key.spc, key.rel);
	return OidIsValid(relid) ? get_rel_name(relid) : NULL;
}

/* errcontext naming the table (relname from ls_storage_relname) or its storage */
int
ls_storage_errcontext(const char *relname, ls_hot_key key)
{
	if (relname != NULL)
		return errcontext("leanstore table \"%s\"", relname);
	return errcontext("leanstore storage %u/%u/%u", key.spc, key.db, key.rel);
}

/*
 * Report a status of the core as an error: one message per condition (the
 * operation, what, only appears in the internal message of statuses that
 * cannot happen).
 */
void
ls_report_status(ls_status st, Relation rel, const char *what)
{
	ls_hot_stats hs;
	const char *relname = rel ? RelationGetRelationName(rel) : NULL;

	switch (st)
	{
		case LS_NO_SPACE:
		case LS_NO_MEMORY:
			ls_hot_get_stats(ls_shared_hot(), &hs);

			/*
			 * Pack moves rows to the cold tier only once no transaction can
			 * need their older versions: what a running transaction changed
			 * stays hot until it ends.  When that is most of the tier, more
			 * memory or smaller transactions are the way out.
			 */
			if (ls_xact_hot_versions() * 2 > hs.versions)
				ereport(ERROR,
						(errcode(ERRCODE_OUT_OF_MEMORY),
						 errmsg("leanstore hot tier is full"),
						 errdetail("This transaction added " UINT64_FORMAT " of the " UINT64_FORMAT " row versions in the hot tier; rows a transaction changed stay there until it ends.",
								   ls_xact_hot_versions(), (uint64) hs.versions),
						 errhint("Make the change in smaller transactions, or increase leanstore.hot_memory (currently %d MB) and restart.",
								 ls_hot_memory_mb)));
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("leanstore hot tier is full"),
					 relname ?
					 errdetail("A row of table \"%s\" did not fit: %llu of %llu bytes are in use, %llu bytes await reclamation.",
							   relname,
							   (unsigned long long) hs.used_bytes,
							   (unsigned long long) hs.region_bytes,
							   (unsigned long long) hs.retired_bytes) :
					 errdetail("%llu of %llu bytes are in use, %llu bytes await reclamation.",
							   (unsigned long long) hs.used_bytes,
							   (unsigned long long) hs.region_bytes,
							   (unsigned long long) hs.retired_bytes),
					 errhint("Increase leanstore.hot_memory (currently %d MB) and restart, or delete rows and VACUUM.",
							 ls_hot_memory_mb)));
			break;
		case LS_INVALID:
			/* a rowid past the map's end: the table has none left */
			if (rel != NULL)
				ls_report_no_rowids(rel);
			/* FALLTHROUGH */
		default:
			/*
			 * LS_TOO_LARGE cannot reach here: rows are measured against
			 * LS_HOT_MAX_PAYLOAD ("row is too big") before they are stored.
			 */
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg_internal("unexpected leanstore status \"%s\" (%s table \"%s\")",
									 ls_status_str(st), what,
									 relname ? relname : "?")));
	}
	pg_unreachable();
}

void
ls_mark_written(void)
{
	ls_xact_wrote = true;
}

/* ------------------------------------------------------------------------
 * Storage life cycle
 * ------------------------------------------------------------------------ */

/*
 * DROP DATABASE committed: nobody is connected to it any more, so its
 * tables can go.  Called from the commit callback: must not throw.
 */
static void
ls_storage_free_database(Oid db)
{
	uint32		cursor = 0;

	if (db == InvalidOid)
		return;
	for (;;)
	{
		ls_hot_key	batch[64];
		int			n = 0;
		bool		more = true;

		/* collect inside an epoch, drop outside it */
		ls_hot_epoch_enter(ls_my_ctx);
		while (n < lengthof(batch))
		{
			ls_hot_table *tbl = ls_hot_table_next(ls_shared->hot, &cursor);
			ls_hot_key	key;

			if (tbl == NULL)
			{
				more = false;
				break;
			}
			key = ls_hot_table_get_key(tbl);
			if (key.db == db)
				batch[n++] = key;
		}
		ls_hot_epoch_exit(ls_my_ctx);

		for (int i = 0; i < n; i++)
		{
			ls_hot_table *tbl = ls_hot_table_find(ls_shared->hot, batch[i]);

			if (tbl != NULL)
			{
				/* pack skips a table that is not READY (checked under adopt_lock) */
				ls_hot_table_set_tag(tbl, LS_TAG_READY, 0);
				ls_cold_drop_for(tbl);
				ls_hot_table_drop(ls_my_ctx, tbl);
			}
		}
		if (!more)
			break;
	}
}

/* The tablespace naming node's undo journal; invalid: it has none (temporary). */
static Oid
ls_journal_spc(const RelFileNode *node, char persistence)
{
	return persistence == RELPERSISTENCE_TEMP ? InvalidOid : node->spcNode;
}

static void ls_storage_free_hot(ls_hot_key key);

static void
ls_pending_add(ls_hot_key key, Oid journal_spc, bool at_commit)
{
	LsPendingStorage *p;

	p = MemoryContextAlloc(TopMemoryContext, sizeof(LsPendingStorage));
	p->key = key;
	p->journal_spc = journal_spc;
	p->at_commit = at_commit;
	p->nest_level = GetCurrentTransactionNestLevel();
	p->next = ls_pending;
	ls_pending = p;
}

void
ls_storage_create(const RelFileNode *node, char persistence, ls_hot_table **out)
{
	ls_hot_key	key = ls_key_for_node(node);
	Oid			journal_spc = ls_journal_spc(node, persistence);
	ls_status	st;

	/*
	 * PostgreSQL just created the file: an undo journal of this number is
	 * a dropped storage's (its removal did not happen, or was not durable),
	 * and a crash must never apply it to this file.
	 */
	if (OidIsValid(journal_spc))
		ls_cold_forget_journal(journal_spc, node->dbNode, node->relNode, true);
	st = ls_hot_table_create(ls_ctx(), key, out);
	if (st == LS_EXISTS)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("leanstore storage for relfilenode %u/%u/%u already exists",
						node->spcNode, node->dbNode, node->relNode)));
	if (st == LS_NO_SPACE)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("too many leanstore tables"),
				 errhint("Increase leanstore.max_tables (currently %d) and restart.",
						 ls_max_tables)));
	if (st != LS_OK)
		ls_report_status(st, NULL, "create storage for");
	/* what a clean shutdown needs to find the relation's file (cold.c) */
	ls_hot_table_set_tag(*out, LS_TAG_SPC, node->spcNode);
	ls_hot_table_set_tag(*out, LS_TAG_PERSISTENCE, (uint32) persistence);
	if (persistence == RELPERSISTENCE_TEMP)
		ls_hot_table_set_tag(*out, LS_TAG_BACKEND, (uint32) BackendIdForTempRelations());
	/* nobody else can see this relfilenode before we commit */
	ls_hot_table_set_tag(*out, LS_TAG_READY, 1);
	ls_pending_add(key, journal_spc, false);
	/* replay starts the storage afresh here; commit logs all its rows */
	ls_log_create(node, persistence);
	ls_log_note_created(*out);
	ls_mark_written();
}

void
ls_storage_schedule_drop(Relation rel)
{
	(void) ls_ctx();			/* attach now: commit callbacks must not fail */
	ls_pending_add(ls_key_for_node(&rel->rd_node),
				   ls_journal_spc(&rel->rd_node, rel->rd_rel->relpersistence), true);
}

/*
 * The storage p names is gone (a committed drop, an aborted creation): its
 * hot table and tree go (no write-back appends to the journal after that),
 * then its undo journal, also when the table was never opened since the
 * start or is lost.  A drop's commit record is durable by now (a commit
 * that drops files, and DROP DATABASE, always flush it), so the table
 * cannot come back after a crash and need the journal.
 */
static void
ls_storage_free(const LsPendingStorage *p)
{
	ls_hot_key	key = p->key;

	ls_storage_free_hot(key);
	if (key.rel == InvalidOid)
		ls_cold_sweep_journals(key.db);
	else if (OidIsValid(p->journal_spc))
		ls_cold_forget_journal(p->journal_spc, key.db, key.rel, false);
}

static void
ls_storage_free_hot(ls_hot_key key)
{
	ls_hot_table *tbl;

	if (ls_my_ctx == NULL || ls_shared == NULL || ls_shared->hot == NULL)
		return;
	if (key.rel == InvalidOid)
	{
		ls_storage_free_database(key.db);
		return;
	}
	ls_hashcache_forget_storage(key);
	tbl = ls_hot_table_find(ls_shared->hot, key);
	if (tbl != NULL)
	{
		/*
		 * Not READY first: pack checks that under adopt_lock, so once
		 * ls_cold_drop_for had the lock, no pack pass can create a new tree
		 * in the file being unlinked or evict rows the drop retires.
		 */
		ls_hot_table_set_tag(tbl, LS_TAG_READY, 0);
		/* the pages go before PostgreSQL unlinks the file */
		ls_cold_drop_for(tbl);
		ls_hot_table_drop(ls_my_ctx, tbl);
	}
}

/* Top-level end: free what PostgreSQL also unlinks now, forget the rest. */
static void
ls_pending_at_xact_end(bool commit)
{
	LsPendingStorage *p = ls_pending;
	bool		freed = false;

	ls_pending = NULL;
	while (p != NULL)
	{
		LsPendingStorage *next = p->next;

		if (p->at_commit == commit)
		{
			/* after the commit record, before the storage is freed */
			if (commit)
				ls_debug_crash("drop-commit");
			ls_storage_free(p);
			freed = true;
		}
		pfree(p);
		p = next;
	}
	/* hand the memory back now rather than at the next allocation */
	if (freed && ls_my_ctx != NULL)
		ls_hot_reclaim(ls_my_ctx);
}

static void
ls_pending_at_subxact_end(bool commit)
{
	int			level = GetCurrentTransactionNestLevel();
	LsPendingStorage **link = &ls_pending;

	while (*link != NULL)
	{
		LsPendingStorage *p = *link;

		if (p->nest_level < level)
		{
			link = &p->next;
			continue;
		}
		if (commit)
		{
			p->nest_level = level - 1;
			link = &p->next;
			continue;
		}
		/* subtransaction abort: created storage goes, drops are cancelled */
		if (!p->at_commit)
			ls_storage_free(p);
		*link = p->next;
		pfree(p);
	}
}

/* PRE_COMMIT: the drops this transaction commits go into leanstore's log. */
static void
ls_pending_log_drops(void)
{
	for (LsPendingStorage *p = ls_pending; p != NULL; p = p->next)
	{
		if (p->at_commit)
			ls_log_drop(p->key);
	}
}

static void
ls_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			ls_check_held_at_commit();
			ls_pending_log_drops();
			ls_log_pre_commit();
			break;
		case XACT_EVENT_PARALLEL_PRE_COMMIT:
			ls_check_held_at_commit();
			break;
		case XACT_EVENT_PRE_PREPARE:
			if (ls_xact_wrote || ls_pending != NULL)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot PREPARE a transaction that has written to or locked rows of a leanstore table"),
						 errdetail("leanstore keeps a transaction's row changes and row locks in memory until it commits; those of a prepared transaction would not survive a restart.")));
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			ls_vm_forget_seen();
			ls_release_held();
			ls_forget_inserts();
			ls_pending_at_xact_end(true);
			ls_log_commit_done();
			ls_log_xact_end();
			ls_xact_wrote = false;
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			ls_vm_forget_seen();
			ls_release_held();
			ls_migrate_soft = false;
			ls_cold_read_once = false;
			ls_pending_at_xact_end(false);
			/* a failed log-only commit's LS_LR_ABORT before any undo */
			ls_log_abort();
			ls_abort_inserts(1);
			ls_log_xact_end();
			ls_xact_wrote = false;
			break;
		case XACT_EVENT_PREPARE:
			ls_forget_inserts();
			ls_pending_at_xact_end(true);
			ls_log_xact_end();
			ls_xact_wrote = false;
			break;
		default:
			break;
	}
}

static void
ls_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					SubTransactionId parentSubid, void *arg)
{
	switch (event)
	{
		case SUBXACT_EVENT_ABORT_SUB:
			ls_release_held();
			ls_migrate_soft = false;
			ls_cold_read_once = false;
			ls_pending_at_subxact_end(false);
			ls_abort_inserts(GetCurrentTransactionNestLevel());
			break;
		case SUBXACT_EVENT_COMMIT_SUB:
			ls_pending_at_subxact_end(true);
			ls_commit_sub_inserts(GetCurrentTransactionNestLevel());
			break;
		default:
			break;
	}
}

/*
 * DROP TABLE (and the drop of the transient table that holds the old
 * relfilenode after a rewrite): PostgreSQL schedules the files for unlinking
 * at commit; schedule the hot storage likewise.
 */
static void
ls_object_access(ObjectAccessType access, Oid classId, Oid objectId,
				 int subId, void *arg)
{
	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);

	if (access == OAT_DROP && classId == DatabaseRelationId)
	{
		ls_hot_key	key = {0, objectId, InvalidOid};

		/* rel = InvalidOid: "every table of database objectId" */
		(void) ls_ctx();
		ls_pending_add(key, InvalidOid, true);
		return;
	}

	if (access == OAT_DROP && classId == RelationRelationId && subId == 0)
	{
		Relation	rel = RelationIdGetRelation(objectId);

		if (RelationIsValid(rel))
		{
			if (RELKIND_HAS_STORAGE(rel->rd_rel->relkind) &&
				rel->rd_tableam != NULL &&
				rel->rd_tableam->relation_vacuum == ls_vacuum_rel)
				ls_storage_schedule_drop(rel);
			RelationClose(rel);
		}
	}
}

Oid
ls_am_oid(void)
{
	return get_am_oid("leanstore", false);
}

/* ------------------------------------------------------------------------
 * Module load
 * ------------------------------------------------------------------------ */

/*
 * Start-time values of our settings (postgresql.conf, ALTER SYSTEM, the
 * command line) that their bounds refuse.  When a library defines a
 * variable, PostgreSQL only warns about the value it was given and keeps
 * the default, so the server would start with, say, the default
 * leanstore.hot_memory instead of the size asked for.  ls_settings_capture
 * keeps the values as given (before the variables are defined), and
 * ls_settings_enforce sets them again once they are: a refused value is an
 * error, which stops the postmaster with PostgreSQL's own message for it.
 * Names nobody defined were already reported by MarkGUCPrefixReserved.
 */
typedef struct LsGivenSetting
{
	char	   *name;
	char	   *value;
	GucSource	source;
} LsGivenSetting;

static LsGivenSetting *ls_given = NULL;
static int	ls_n_given = 0;

static void
ls_settings_capture(void)
{
	struct config_generic **vars = get_guc_variables();
	int			n = GetNumConfigOptions();

	ls_given = palloc(sizeof(LsGivenSetting) * n);
	for (int i = 0; i < n; i++)
	{
		struct config_generic *g = vars[i];
		const char *value;

		if (!(g->flags & GUC_CUSTOM_PLACEHOLDER) || g->source == PGC_S_DEFAULT ||
			strncmp(g->name, "leanstore.", strlen("leanstore.")) != 0)
			continue;
		value = GetConfigOption(g->name, true, false);
		if (value == NULL)
			continue;
		ls_given[ls_n_given].name = pstrdup(g->name);
		ls_given[ls_n_given].value = pstrdup(value);
		ls_given[ls_n_given].source = g->source;
		ls_n_given++;
	}
}

static void
ls_settings_enforce(void)
{
	for (int i = 0; i < ls_n_given; i++)
	{
		if (GetConfigOption(ls_given[i].name, true, false) != NULL)
			(void) set_config_option(ls_given[i].name, ls_given[i].value,
									 PGC_POSTMASTER, ls_given[i].source,
									 GUC_ACTION_SET, true, ERROR, false);
		pfree(ls_given[i].name);
		pfree(ls_given[i].value);
	}
	pfree(ls_given);
	ls_given = NULL;
	ls_n_given = 0;
}

static const struct config_enum_entry ls_cold_writes_options[] = {
	{"off", LS_CW_OFF, false},
	{"auto", LS_CW_AUTO, false},
	{"always", LS_CW_ALWAYS, false},
	{NULL, 0, false}
};

void
_PG_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		ls_report_not_preloaded();

	ls_settings_capture();

	DefineCustomIntVariable("leanstore.hot_memory",
							"Size of the in-memory hot row tier.",
							"Shared memory reserved at server start for the rows of all leanstore tables.",
							&ls_hot_memory_mb,
							1024, 32, 1024 * 1024,
							PGC_POSTMASTER,
							GUC_UNIT_MB,
							NULL, NULL, NULL);
	DefineCustomIntVariable("leanstore.max_tables",
							"Maximum number of leanstore relfilenodes (tables, including those being rewritten).",
							NULL,
							&ls_max_tables,
							4096, 16, 1 << 20,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("leanstore.buffer_pool",
							"Size of the buffer pool of the cold tier's pages.",
							"Shared memory reserved at server start for the pages of all leanstore tables' B+-trees.",
							&ls_buffer_pool_mb,
							128, 2, 1024 * 1024,
							PGC_POSTMASTER,
							GUC_UNIT_MB,
							NULL, NULL, NULL);
	DefineCustomIntVariable("leanstore.pack_threshold",
							"Hot tier fill (percent of leanstore.hot_memory) above which rows are packed into the cold tier.",
							"The leanstore worker packs rows nobody touched recently until the fill is 10 points lower.",
							&ls_pack_threshold,
							80, 1, 100,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("leanstore.bulk_load_rows",
							"Rows a transaction inserts into one table, or cold rows it deletes or updates there, before further ones are written in the cold tier directly.",
							"Large loads (COPY, INSERT ... SELECT), deletes and updates then do not flood the hot tier; 0 keeps every write in the hot tier.",
							&ls_bulk_load_rows,
							10000, 0, INT_MAX,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);
	DefineCustomEnumVariable("leanstore.cold_writes",
							 "When deletes and updates of cold rows are made in the cold tier.",
							 "auto: past leanstore.bulk_load_rows cold rows of a table in one transaction, while the hot tier is filled above leanstore.pack_threshold or the transaction's migrated rows would take an eighth of it; always: past leanstore.bulk_load_rows; off: never (every write copies its row into the hot tier).",
							 &ls_cold_writes,
							 LS_CW_AUTO,
							 ls_cold_writes_options,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("leanstore.pack_eager",
							 "Pack every row that may go into the cold tier at once (for tests).",
							 "Rows go cold as soon as every snapshot sees them, whatever the hot tier's fill.",
							 &ls_pack_eager,
							 false,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);
	ls_hashscan_init();
	ls_log_register();
	MarkGUCPrefixReserved("leanstore");
	ls_settings_enforce();
	ls_worker_register();

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = ls_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = ls_shmem_startup;
	prev_object_access_hook = object_access_hook;
	object_access_hook = ls_object_access;

	ls_utility_init();
	RegisterXactCallback(ls_xact_callback, NULL);
	RegisterSubXactCallback(ls_subxact_callback, NULL);
}
