/*
 * publication.c - leanstore tables stay out of logical replication.
 *
 * Logical decoding reads PostgreSQL's WAL, and the rows of a leanstore
 * table are in leanstore's own log: a decoder sees none of its inserts,
 * updates and deletes.  A subscription to a publication of such a table
 * got the table's initial copy (the subscriber's COPY reads the table like
 * any reader) and then nothing, without an error: the subscriber silently
 * went out of step.  So a leanstore table cannot be published for the
 * changes it cannot deliver:
 *
 *  - CREATE PUBLICATION and ALTER PUBLICATION fail when the publication
 *    they leave publishes inserts, updates or deletes of a leanstore table.
 *    The check looks at the publication's members after the command, so
 *    FOR TABLE, FOR TABLES IN SCHEMA, FOR ALL TABLES, partitions of a
 *    published table and ALTER PUBLICATION ... SET (publish = ...) all
 *    count; the error rolls the command back.
 *  - A table can still come under a publication later: created in a
 *    published schema or in a database with a FOR ALL TABLES publication,
 *    attached as a partition of a published table.  Its writes then fail,
 *    as heap's UPDATE fails on a published table without a replica
 *    identity (CheckCmdReplicaIdentity): ls_check_unpublished, called by
 *    every insert, update and delete, using the publication summary that
 *    PostgreSQL caches in the relcache entry.
 *
 * publish = 'truncate' alone is allowed: PostgreSQL logs a TRUNCATE itself.
 * Temporary and unlogged tables are never published (PostgreSQL's rule).
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_class.h"
#include "catalog/pg_publication.h"
#include "commands/defrem.h"
#include "nodes/parsenodes.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/syscache.h"

#include "ls_pg.h"

/* errdetail for both refusals */
static int
ls_pub_errdetail(void)
{
	return errdetail("Logical replication decodes PostgreSQL's WAL, and the rows of leanstore tables are in leanstore's own log: subscribers would not receive the changes.");
}

/* A leanstore table's write that publication rules would publish fails. */
static int
ls_pub_write_context(void)
{
	ls_pub_errdetail();
	return errhint("Take the table out of the publication, or publish only truncate for it (publish = 'truncate').");
}

/*
 * A write of kind cmd (CMD_INSERT, CMD_UPDATE, CMD_DELETE) to leanstore
 * table rel: fails when a publication publishes such changes of it.
 */
void
ls_check_unpublished(Relation rel, CmdType cmd)
{
	PublicationDesc pubdesc;

	Assert(cmd == CMD_INSERT || cmd == CMD_UPDATE || cmd == CMD_DELETE);
	/* cached in the relcache entry after the first call: a copy */
	RelationBuildPublicationDesc(rel, &pubdesc);
	if (cmd == CMD_INSERT && pubdesc.pubactions.pubinsert)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot insert into leanstore table \"%s\" because a publication publishes its inserts",
						RelationGetRelationName(rel)),
				 ls_pub_write_context()));
	if (cmd == CMD_UPDATE && pubdesc.pubactions.pubupdate)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot update leanstore table \"%s\" because a publication publishes its updates",
						RelationGetRelationName(rel)),
				 ls_pub_write_context()));
	if (cmd == CMD_DELETE && pubdesc.pubactions.pubdelete)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot delete from leanstore table \"%s\" because a publication publishes its deletes",
						RelationGetRelationName(rel)),
				 ls_pub_write_context()));
}

/* The first leanstore table in relids (InvalidOid when none). */
static Oid
ls_first_leanstore(List *relids, Oid am)
{
	ListCell   *lc;

	foreach(lc, relids)
	{
		Oid			relid = lfirst_oid(lc);
		HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
		bool		found;

		if (!HeapTupleIsValid(tup))
			continue;			/* dropped meanwhile */
		found = ((Form_pg_class) GETSTRUCT(tup))->relam == am;
		ReleaseSysCache(tup);
		if (found)
			return relid;
	}
	return InvalidOid;
}

/*
 * After CREATE PUBLICATION or ALTER PUBLICATION name: fails when the
 * publication publishes inserts, updates or deletes of a leanstore table.
 */
void
ls_check_publication(const char *name)
{
	Oid			am = get_am_oid("leanstore", true);
	Publication *pub;
	List	   *relids;
	Oid			found;

	if (!OidIsValid(am))
		return;					/* no leanstore table in this database */
	/* the command's own catalog changes */
	CommandCounterIncrement();
	pub = GetPublicationByName(name, true);
	if (pub == NULL)
		return;
	if (!pub->pubactions.pubinsert && !pub->pubactions.pubupdate &&
		!pub->pubactions.pubdelete)
		return;
	if (pub->alltables)
		relids = GetAllTablesPublicationRelations(false);
	else
		relids = list_concat(GetPublicationRelations(pub->oid, PUBLICATION_PART_LEAF),
							 GetAllSchemaPublicationRelations(pub->oid, PUBLICATION_PART_LEAF));
	found = ls_first_leanstore(relids, am);
	list_free(relids);
	if (OidIsValid(found))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("publication \"%s\" cannot publish the changes of leanstore table \"%s\"",
						name, get_rel_name(found)),
				 ls_pub_errdetail(),
				 errhint("Leave leanstore tables out of publications that publish inserts, updates or deletes (publish only truncate for them, or name the other tables with FOR TABLE).")));
}
