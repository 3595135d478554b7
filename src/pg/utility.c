/*
 * utility.c - utility commands that would copy leanstore tables behind
 * leanstore's back, and CHECKPOINT.
 *
 * CREATE DATABASE copies a template database file by file (STRATEGY
 * FILE_COPY) or block by block through shared buffers (WAL_LOG).  Either way
 * it copies the catalogs and the main forks of leanstore tables as they are
 * on disk, without the rows in the hot tier (keyed by database OID) and the
 * cold pages still in leanstore's buffer pool.  Until leanstore can copy a
 * database's tables, CREATE DATABASE from a template that has leanstore
 * tables open in this server run fails before it does anything (a
 * ProcessUtility hook).  Tables not opened since a clean start are only in
 * their files; those files cannot be copied either (a tree's meta page names
 * the storage it was written for, so the copy would be refused as lost): the
 * template's relation files are looked at too, and one that begins with a
 * leanstore meta page refuses the copy the same way.
 *
 * ALTER DATABASE ... SET TABLESPACE moves the files of the database's
 * default tablespace to another directory behind leanstore's back too:
 * leanstore's buffer pool keeps cold pages of the old files (and writes them
 * back there), and a table's storage, its log records and its undo journal
 * name the tablespace the file was in.  A moved table read its cold tree as
 * corrupt, and after a restart was lost (test/recovery/template_copy.sh).
 * So it is refused the same way when leanstore tables are in the default
 * tablespace (opened in this run or only on disk); tables in other
 * tablespaces do not move and do not stop it.
 *
 * CREATE PUBLICATION, ALTER PUBLICATION: see publication.c.
 *
 * CHECKPOINT: once PostgreSQL's checkpoint is done, a leanstore checkpoint
 * (ls_checkpoint_command), so the command shortens leanstore's log as it
 * shortens the WAL.
 */
#include "postgres.h"

#include "catalog/pg_database.h"
#include "catalog/pg_tablespace_d.h"
#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "commands/tablespace.h"
#include "nodes/parsenodes.h"
#include "storage/fd.h"
#include "tcop/utility.h"
#include "utils/syscache.h"

#include "ls_pg.h"

static ProcessUtility_hook_type prev_process_utility = NULL;

/*
 * Does database db own storage in the hot tier?  With default_only, only
 * storage in the database's default tablespace counts (keyed as 0,
 * ls_key_for_node).
 */
static bool
ls_database_has_tables(Oid db, bool default_only)
{
	ls_hot	   *hot = ls_shared_hot();
	uint32		cursor = 0;
	bool		found = false;
	ls_hot_table *tbl;

	ls_epoch_enter();
	while ((tbl = ls_hot_table_next(hot, &cursor)) != NULL)
	{
		ls_hot_key	key = ls_hot_table_get_key(tbl);

		if (key.db == db && (!default_only || key.spc == 0))
		{
			found = true;
			break;
		}
	}
	ls_epoch_exit();
	return found;
}

/* Does directory dir hold a relation file that is a leanstore tree's? */
static bool
ls_dir_has_tree_files(const char *dir)
{
	DIR		   *d = AllocateDir(dir);
	struct dirent *de;
	bool		found = false;

	if (d == NULL)
		return false;			/* no files of this database here */
	while (!found && (de = ReadDirExtended(d, dir, LOG)) != NULL)
	{
		char		path[MAXPGPATH];

		/* a main fork's first segment: the name is the relfilenode */
		if (strspn(de->d_name, "0123456789") != strlen(de->d_name) || de->d_name[0] == '\0')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		found = ls_cold_file_is_tree(path);
	}
	FreeDir(d);
	return found;
}

/*
 * Does database db have leanstore tables on disk, in its default tablespace
 * or any other?
 */
static bool
ls_database_has_tree_files(Oid db)
{
	char	   *path = GetDatabasePath(db, DEFAULTTABLESPACE_OID);
	bool		found = ls_dir_has_tree_files(path);
	DIR		   *spcs;
	struct dirent *de;

	pfree(path);
	if (found || (spcs = AllocateDir("pg_tblspc")) == NULL)
		return found;
	while (!found && (de = ReadDirExtended(spcs, "pg_tblspc", LOG)) != NULL)
	{
		Oid			spc = (Oid) strtoul(de->d_name, NULL, 10);

		if (!OidIsValid(spc))
			continue;
		path = GetDatabasePath(db, spc);
		found = ls_dir_has_tree_files(path);
		pfree(path);
	}
	FreeDir(spcs);
	return found;
}

/* The value of option name in a statement's options, or dflt. */
static const char *
ls_option_string(List *options, const char *name, const char *dflt)
{
	ListCell   *lc;

	foreach(lc, options)
	{
		DefElem    *opt = lfirst_node(DefElem, lc);

		if (strcmp(opt->defname, name) == 0 && opt->arg != NULL)
			return defGetString(opt);
	}
	return dflt;
}

static void
ls_check_createdb(CreatedbStmt *stmt)
{
	const char *template = ls_option_string(stmt->options, "template", "template1");
	Oid			db;

	db = get_database_oid(template, true);
	if (!OidIsValid(db))
		return;					/* CREATE DATABASE reports it */
	if (ls_database_has_tables(db, false) || ls_database_has_tree_files(db))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot copy database \"%s\" because it contains leanstore tables",
						template),
				 errdetail("CREATE DATABASE copies files, and a leanstore table's rows are partly in leanstore's shared memory and its file names the table it belongs to."),
				 errhint("Use a template database without leanstore tables, or copy the tables with pg_dump or CREATE TABLE ... AS.")));
}

/*
 * ALTER DATABASE db SET TABLESPACE spc: refused when leanstore tables are in
 * the files it would move.  A database or tablespace that does not exist,
 * or a move to where the database already is, is left to PostgreSQL.
 */
static void
ls_check_alterdb(AlterDatabaseStmt *stmt)
{
	const char *target = ls_option_string(stmt->options, "tablespace", NULL);
	Oid			db;
	Oid			from;
	Oid			to;
	HeapTuple	tup;
	char	   *path;
	bool		found;

	if (target == NULL)
		return;
	db = get_database_oid(stmt->dbname, true);
	to = get_tablespace_oid(target, true);
	if (!OidIsValid(db) || !OidIsValid(to))
		return;
	tup = SearchSysCache1(DATABASEOID, ObjectIdGetDatum(db));
	if (!HeapTupleIsValid(tup))
		return;
	from = ((Form_pg_database) GETSTRUCT(tup))->dattablespace;
	ReleaseSysCache(tup);
	if (from == to)
		return;
	path = GetDatabasePath(db, from);
	found = ls_database_has_tables(db, true) || ls_dir_has_tree_files(path);
	pfree(path);
	if (found)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot move database \"%s\" to another tablespace because leanstore tables are in its default tablespace",
						stmt->dbname),
				 errdetail("ALTER DATABASE ... SET TABLESPACE moves files, and leanstore keeps pages of a table's file in its own buffer pool and names the file's tablespace in its log."),
				 errhint("Move the leanstore tables with ALTER TABLE ... SET TABLESPACE instead, or copy them with pg_dump or CREATE TABLE ... AS and drop them first.")));
}

static void
ls_process_utility(PlannedStmt *pstmt, const char *queryString,
				   bool readOnlyTree, ProcessUtilityContext context,
				   ParamListInfo params, QueryEnvironment *queryEnv,
				   DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;

	if (IsA(parsetree, CreatedbStmt))
		ls_check_createdb((CreatedbStmt *) parsetree);
	else if (IsA(parsetree, AlterDatabaseStmt))
		ls_check_alterdb((AlterDatabaseStmt *) parsetree);

	if (prev_process_utility)
		prev_process_utility(pstmt, queryString, readOnlyTree, context,
							 params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);

	/* PostgreSQL's checkpoint is done (and allowed): leanstore's too */
	if (IsA(parsetree, CheckPointStmt))
		ls_checkpoint_command();
	/* what the publication now publishes (publication.c) */
	else if (IsA(parsetree, CreatePublicationStmt))
		ls_check_publication(((CreatePublicationStmt *) parsetree)->pubname);
	else if (IsA(parsetree, AlterPublicationStmt))
		ls_check_publication(((AlterPublicationStmt *) parsetree)->pubname);
}

void
ls_utility_init(void)
{
	prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = ls_process_utility;
}
