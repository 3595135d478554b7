/*
 * utility.c - utility commands that would copy leanstore tables behind
 * leanstore's back.
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
 * ALTER DATABASE ... SET TABLESPACE needs no check: tables in the database's
 * default tablespace are keyed with tablespace 0 (ls_key_for_node), so their
 * storage stays theirs when the files move (regress ls_database shows it).
 */
#include "postgres.h"

#include "catalog/pg_tablespace_d.h"
#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "nodes/parsenodes.h"
#include "storage/fd.h"
#include "tcop/utility.h"

#include "ls_pg.h"

static ProcessUtility_hook_type prev_process_utility = NULL;

/* Does database db own storage in the hot tier? */
static bool
ls_database_has_tables(Oid db)
{
	ls_hot	   *hot = ls_shared_hot();
	uint32		cursor = 0;
	bool		found = false;
	ls_hot_table *tbl;

	ls_epoch_enter();
	while ((tbl = ls_hot_table_next(hot, &cursor)) != NULL)
	{
		if (ls_hot_table_get_key(tbl).db == db)
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

static void
ls_check_createdb(CreatedbStmt *stmt)
{
	const char *template = "template1";
	ListCell   *lc;
	Oid			db;

	foreach(lc, stmt->options)
	{
		DefElem    *opt = lfirst_node(DefElem, lc);

		if (strcmp(opt->defname, "template") == 0 && opt->arg != NULL)
			template = defGetString(opt);
	}
	db = get_database_oid(template, true);
	if (!OidIsValid(db))
		return;					/* CREATE DATABASE reports it */
	if (ls_database_has_tables(db) || ls_database_has_tree_files(db))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot copy database \"%s\" because it contains leanstore tables",
						template),
				 errdetail("CREATE DATABASE copies files, and a leanstore table's rows are partly in leanstore's shared memory and its file names the table it belongs to."),
				 errhint("Use a template database without leanstore tables, or copy the tables with pg_dump or CREATE TABLE ... AS.")));
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

	if (prev_process_utility)
		prev_process_utility(pstmt, queryString, readOnlyTree, context,
							 params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);
}

void
ls_utility_init(void)
{
	prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = ls_process_utility;
}
