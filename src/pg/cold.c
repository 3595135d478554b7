/*
 * cold.c - the cold tier's pages in PostgreSQL: the buffer pool in shared
 * memory, relation main forks as its files, and what makes leanstore tables
 * survive a clean restart.
 *
 * Every leanstore relation keeps a B+-tree in its main fork (block 0: a
 * meta page; the tree from block 1 on), key = rowid (big-endian), value =
 * one row image.  At a clean shutdown the leanstore worker writes every
 * table's rows into its tree ("pack all"), syncs the files and then marks
 * the shutdown clean; the first use of a table after a restart "adopts" it:
 * it reads the tree back into the hot tier.  See src/pg/README.md, "Cold
 * tier and clean restarts", for the protocol and what is not there yet.
 *
 * Invariants kept here:
 *  - A table is adopted only when its meta page carries the current crash
 *    epoch.  The epoch (pg_leanstore/state) moves at every start that does
 *    not follow a clean shutdown, so after a crash no table is adopted from
 *    an image older than the crash: such tables give the "lost in a server
 *    restart" error, never old data.
 *  - The state file says "clean" only after every table's tree and meta
 *    page are durable, and says "running" (durably) before any backend can
 *    change a table after a start.
 *  - Adoption runs once per table and start, under LsColdShared.adopt_lock.
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access/transam.h"
#include "access/xact.h"
#include "common/relpath.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/bufpage.h"
#include "storage/checksum.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "leanstore/btree.h"
#include "ls_pg.h"

int			ls_buffer_pool_mb = 128;

#define LS_STATE_DIR		"pg_leanstore"
#define LS_STATE_FILE		LS_STATE_DIR "/state"
#define LS_META_MAGIC		0x4c53434dU	/* "LSCM" */
#define LS_META_VERSION		1
#define LS_DT_META			2			/* page type of the meta page */
#define LS_TREE_FIRST_BLOCK	1			/* block 0 is the meta page */

/* Row images in the tree. */
#define LS_COLD_DEAD		0x0001		/* a DEAD rowid: no row, index entries may
										 * still name it */
typedef struct LsColdRow
{
	uint32		total_len;		/* payload bytes in all chunks */
	uint16		flags;
	uint16		pad;
	TransactionId xmin;			/* FrozenTransactionId (single frozen version) */
	uint32		pad2;
	/* payload: the version's MinimalTuple image; continued in chunks */
} LsColdRow;

#define LS_COLD_FIRST_CHUNK	(LS_BTREE_MAX_VALUE - (uint32) sizeof(LsColdRow))
#define LS_COLD_CHUNK		LS_BTREE_MAX_VALUE
#define LS_COLD_KEY_MAX		10			/* rowid + chunk number */

/* The meta page (block 0), in the page's data part. */
typedef struct LsColdMeta
{
	uint32		magic;
	uint32		version;
	uint32		epoch;			/* crash epoch this image belongs to */
	uint32		n_blocks;		/* blocks in use (meta page included) */
	uint32		root_block;
	uint32		height;
	Oid			spc;			/* self check: the storage it was written for */
	Oid			db;
	Oid			rel;
	uint32		fill_used;		/* rowid allocation state */
	uint64		fill_next;
	uint64		rows;
	uint64		dead;
} LsColdMeta;

typedef struct LsColdShared
{
	ls_bm	   *bm;
	Size		region_size;
	uint32		epoch;			/* crash epoch of this start */
	LWLock	   *adopt_lock;
	ls_btree	tree;			/* the tree being written or read now (one
								 * at a time, under adopt_lock) */
	pg_atomic_uint64 provider_rounds;
	pg_atomic_uint64 rows_packed;
	pg_atomic_uint64 rows_loaded;
	pg_atomic_uint64 tables_packed;
	pg_atomic_uint64 tables_loaded;
	pg_atomic_uint64 cold_pages;	/* pages written by the last pack */
	pg_atomic_uint32 clean_pending;	/* the worker is packing for shutdown */
} LsColdShared;

static LsColdShared *ls_cold = NULL;

/* ------------------------------------------------------------------------
 * Files: relation main forks
 * ------------------------------------------------------------------------ */

static void
ls_file_for(ls_bm_file *file, Oid spc, Oid db, Oid rel)
{
	memset(file, 0, sizeof(*file));
	file->key[0] = spc;
	file->key[1] = db;
	file->key[2] = rel;
	file->key[3] = (uint32) InvalidBackendId;
}

/* Segment segno of a main fork, as md.c names it. */
static bool
ls_file_path(void *arg, const ls_bm_file *file, uint32_t segno, char *buf, size_t len)
{
	char	   *path;
	int			n;

	(void) arg;
	path = GetRelationPath(file->key[1], file->key[0], file->key[2],
						   (BackendId) file->key[3], MAIN_FORKNUM);
	if (segno == 0)
		n = snprintf(buf, len, "%s", path);
	else
		n = snprintf(buf, len, "%s.%u", path, segno);
	pfree(path);
	return n > 0 && (size_t) n < len;
}

/* PostgreSQL's page checksum, on clusters that have them. */
static uint16_t
ls_page_checksum(void *arg, const ls_page *page, uint32_t block)
{
	(void) arg;
	if (!DataChecksumsEnabled())
		return 0;
	return pg_checksum_page((char *) page, block);
}

/* ------------------------------------------------------------------------
 * Shared memory and the state file
 * ------------------------------------------------------------------------ */

static uint64
ls_pool_frames(void)
{
	return (uint64) ls_buffer_pool_mb * 1024 * 1024 / LS_PAGE_SIZE;
}

Size
ls_cold_shmem_size(void)
{
	return add_size(MAXALIGN(sizeof(LsColdShared)),
					add_size(ls_bm_region_size(ls_pool_frames()), 4096));
}

void
ls_cold_shmem_request(void)
{
	RequestAddinShmemSpace(ls_cold_shmem_size());
	RequestNamedLWLockTranche("leanstore cold", 1);
}

/*
 * Read the state file: the crash epoch and whether the last run shut down
 * cleanly.  A missing file is a new cluster (epoch 1, nothing to adopt).
 */
static void
ls_state_read(uint32 *epoch, bool *clean)
{
	FILE	   *f = AllocateFile(LS_STATE_FILE, "r");
	unsigned	e = 0;
	char		word[16] = "";

	*epoch = 0;
	*clean = false;
	if (f == NULL)
	{
		if (errno != ENOENT)
			ereport(FATAL,
					(errcode_for_file_access(),
					 errmsg("could not open file \"%s\": %m", LS_STATE_FILE)));
		return;
	}
	if (fscanf(f, "epoch %u %15s", &e, word) == 2)
	{
		*epoch = e;
		*clean = strcmp(word, "clean") == 0;
	}
	FreeFile(f);
}

/* Write the state file durably (temp file, fsync, rename, fsync dir). */
static void
ls_state_write(uint32 epoch, bool clean, int elevel)
{
	char		tmp[MAXPGPATH];
	char		buf[64];
	int			fd;
	int			len;

	snprintf(tmp, sizeof(tmp), "%s.tmp", LS_STATE_FILE);
	len = snprintf(buf, sizeof(buf), "epoch %u %s\n", epoch, clean ? "clean" : "running");
	fd = OpenTransientFile(tmp, O_CREAT | O_TRUNC | O_WRONLY | PG_BINARY);
	if (fd < 0 || write(fd, buf, len) != len || pg_fsync(fd) != 0)
	{
		ereport(elevel,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\": %m", tmp)));
		if (fd >= 0)
			CloseTransientFile(fd);
		return;
	}
	CloseTransientFile(fd);
	(void) durable_rename(tmp, LS_STATE_FILE, elevel);
}

/* Postmaster, shared memory being formatted (start or crash restart). */
void
ls_cold_shmem_startup(void)
{
	bool		found;
	ls_bm_config cfg = {0};
	void	   *region;
	ls_status	st;
	uint32		epoch;
	bool		clean;

	ls_cold = ShmemInitStruct("leanstore cold tier", ls_cold_shmem_size(), &found);
	if (found)
		return;
	memset(ls_cold, 0, sizeof(LsColdShared));
	region = (void *) TYPEALIGN(4096, (char *) ls_cold + MAXALIGN(sizeof(LsColdShared)));
	cfg.n_frames = ls_pool_frames();
	cfg.file_path = ls_file_path;
	cfg.page_checksum = ls_page_checksum;
	cfg.blocks_per_segment = RELSEG_SIZE;
	cfg.use_direct_io = false;
	cfg.free_target_pct = 5;
	ls_cold->region_size = ls_bm_region_size(cfg.n_frames);
	st = ls_bm_init(region, ls_cold->region_size, &cfg, &ls_cold->bm);
	if (st != LS_OK)
		ereport(FATAL,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not format the leanstore buffer pool: %s", ls_status_str(st))));
	ls_btree_register_type();
	ls_cold->adopt_lock = &(GetNamedLWLockTranche("leanstore cold"))->lock;
	pg_atomic_init_u64(&ls_cold->provider_rounds, 0);
	pg_atomic_init_u64(&ls_cold->rows_packed, 0);
	pg_atomic_init_u64(&ls_cold->rows_loaded, 0);
	pg_atomic_init_u64(&ls_cold->tables_packed, 0);
	pg_atomic_init_u64(&ls_cold->tables_loaded, 0);
	pg_atomic_init_u64(&ls_cold->cold_pages, 0);
	pg_atomic_init_u32(&ls_cold->clean_pending, 0);

	/*
	 * A start that does not follow a clean shutdown (a crash, a crash
	 * restart of this very postmaster, a kill) moves the epoch: images
	 * written before it are not trusted any more.
	 */
	if (MakePGDirectory(LS_STATE_DIR) < 0 && errno != EEXIST)
		ereport(FATAL,
				(errcode_for_file_access(),
				 errmsg("could not create directory \"%s\": %m", LS_STATE_DIR)));
	ls_state_read(&epoch, &clean);
	if (!clean)
		epoch++;
	ls_cold->epoch = epoch;
	ls_state_write(epoch, false, FATAL);
}

ls_bm *
ls_cold_bm(void)
{
	return ls_cold != NULL ? ls_cold->bm : NULL;
}

/* ------------------------------------------------------------------------
 * Row images
 * ------------------------------------------------------------------------ */

static uint32
ls_cold_key(uint8 *key, uint64 rowid, uint16 chunk)
{
	ls_put_be64(key, rowid);
	if (chunk == 0)
		return 8;
	key[8] = (uint8) (chunk >> 8);
	key[9] = (uint8) chunk;
	return 10;
}

/* Append one row image (payload may be NULL for a DEAD rowid). */
static ls_status
ls_cold_put(ls_btree *t, uint64 rowid, const char *payload, uint32 len, bool dead)
{
	uint8		key[LS_COLD_KEY_MAX];
	char		val[LS_BTREE_MAX_VALUE];
	LsColdRow  *hdr = (LsColdRow *) val;
	uint32		first = Min(len, LS_COLD_FIRST_CHUNK);
	uint32		off;
	uint16		chunk = 1;
	ls_status	st;

	memset(hdr, 0, sizeof(*hdr));
	hdr->total_len = len;
	hdr->flags = dead ? LS_COLD_DEAD : 0;
	hdr->xmin = FrozenTransactionId;
	if (first > 0)
		memcpy(val + sizeof(LsColdRow), payload, first);
	st = ls_btree_append(t, key, ls_cold_key(key, rowid, 0), val, sizeof(LsColdRow) + first);
	for (off = first; st == LS_OK && off < len; off += LS_COLD_CHUNK, chunk++)
	{
		uint32		n = Min(len - off, LS_COLD_CHUNK);

		st = ls_btree_append(t, key, ls_cold_key(key, rowid, chunk), payload + off, n);
	}
	return st;
}

/* ------------------------------------------------------------------------
 * Pack all (clean shutdown)
 * ------------------------------------------------------------------------ */

/* One row's image, copied out of the hot tier inside an epoch. */
typedef struct LsPackRow
{
	uint64		rowid;
	uint32		len;
	bool		dead;
	char	   *payload;		/* palloc'd, NULL when dead */
} LsPackRow;

#define LS_PACK_BATCH	256

static void
ls_meta_init(ls_page *pg, const LsColdMeta *meta)
{
	memset(pg, 0, LS_PAGE_SIZE);
	pg->hdr.dt_type = LS_DT_META;
	memcpy(pg->data, meta, sizeof(*meta));
}

/*
 * Write every row of one hot table into a fresh tree in its main fork, then
 * its meta page.  Runs in the leanstore worker after every other process
 * has left the hot tier.  false (with a WARNING) when the table could not
 * be written: it is then not marked for adoption, and shows as lost.
 */
static bool
ls_pack_table(ls_hot_table *tbl, Snapshot snapshot)
{
	ls_hot_key	key = ls_hot_table_get_key(tbl);
	Oid			spc = ls_hot_table_get_tag(tbl, LS_TAG_SPC);
	ls_btree   *t = &ls_cold->tree;
	ls_bm	   *bm = ls_cold->bm;
	ls_bm_file	file;
	LsColdMeta	meta;
	ls_page    *pg;
	uint64		next;
	uint32		used;
	uint64		cursor = 0;
	uint64		dead_cursor = 0;
	uint64		limit;
	ls_status	st;
	MemoryContext mcxt;
	MemoryContext old;
	LsPackRow  *rows;
	char		path[MAXPGPATH];
	struct stat sb;

	ls_file_for(&file, spc, key.db, key.rel);
	if (!ls_file_path(NULL, &file, 0, path, sizeof(path)) || stat(path, &sb) != 0)
	{
		ereport(WARNING,
				(errmsg("leanstore table with relfilenode %u/%u/%u has no file to keep its rows in",
						spc, key.db, key.rel)));
		return false;
	}
	st = ls_btree_create_in_file(bm, t, &file, LS_TREE_FIRST_BLOCK);
	if (st != LS_OK)
	{
		ereport(WARNING,
				(errmsg("could not write leanstore table %u/%u/%u: %s",
						spc, key.db, key.rel, ls_status_str(st))));
		return false;
	}
	memset(&meta, 0, sizeof(meta));
	ls_hot_table_get_fill(tbl, &next, &used);
	limit = next;
	mcxt = AllocSetContextCreate(CurrentMemoryContext, "leanstore pack", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(mcxt);
	rows = palloc(sizeof(LsPackRow) * LS_PACK_BATCH);

	/* live rows in rowid order, then DEAD rowids (inserted, not appended) */
	for (;;)
	{
		ls_hot_row *batch[LS_PACK_BATCH];
		uint32		n;

		ls_epoch_enter();
		n = ls_hot_scan_batch(tbl, &cursor, limit, batch, LS_PACK_BATCH);
		for (uint32 i = 0; i < n; i++)
		{
			ls_hot_version *v = ls_row_visible_version(batch[i], snapshot);

			rows[i].rowid = batch[i]->rowid;
			rows[i].dead = v == NULL;
			rows[i].len = v != NULL ? v->len : 0;
			rows[i].payload = NULL;
			if (v != NULL)
			{
				rows[i].payload = palloc(v->len);
				memcpy(rows[i].payload, v->data, v->len);
			}
		}
		ls_epoch_exit();
		for (uint32 i = 0; i < n && st == LS_OK; i++)
		{
			st = ls_cold_put(t, rows[i].rowid, rows[i].payload, rows[i].len, rows[i].dead);
			if (rows[i].dead)
				meta.dead++;
			else
				meta.rows++;
		}
		MemoryContextReset(mcxt);
		rows = palloc(sizeof(LsPackRow) * LS_PACK_BATCH);
		if (st != LS_OK || n < LS_PACK_BATCH)
			break;
	}
	while (st == LS_OK)
	{
		uint64		rowid;
		bool		found;
		uint8		k[LS_COLD_KEY_MAX];
		LsColdRow	hdr;

		ls_epoch_enter();
		found = ls_hot_scan_next_dead(tbl, &dead_cursor, limit, &rowid);
		ls_epoch_exit();
		if (!found)
			break;
		memset(&hdr, 0, sizeof(hdr));
		hdr.flags = LS_COLD_DEAD;
		hdr.xmin = FrozenTransactionId;
		st = ls_btree_insert(t, k, ls_cold_key(k, rowid, 0), &hdr, sizeof(hdr));
		meta.dead++;
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(mcxt);

	if (st == LS_OK)
		st = ls_bm_flush_all(bm);
	if (st == LS_OK)
		st = ls_btree_root(t, &meta.root_block, &meta.height);
	meta.magic = LS_META_MAGIC;
	meta.version = LS_META_VERSION;
	meta.epoch = ls_cold->epoch;
	meta.n_blocks = ls_bm_dt_blocks(bm, t->dt_id);
	meta.spc = spc;
	meta.db = key.db;
	meta.rel = key.rel;
	meta.fill_next = next;
	meta.fill_used = used;
	pg = palloc(LS_PAGE_SIZE);
	ls_meta_init(pg, &meta);
	if (st == LS_OK)
		st = ls_bm_write_block(bm, t->dt_id, 0, pg, false);
	if (st == LS_OK)
		st = ls_bm_sync_dt(bm, t->dt_id);
	pfree(pg);
	ls_btree_drop(t);
	if (st != LS_OK)
	{
		ereport(WARNING,
				(errmsg("could not write leanstore table %u/%u/%u: %s",
						spc, key.db, key.rel, ls_status_str(st))));
		return false;
	}
	/* blocks of an older, longer image behind the new one go */
	if (truncate(path, (off_t) Min(meta.n_blocks, RELSEG_SIZE) * BLCKSZ) != 0)
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("could not truncate file \"%s\": %m", path)));
	pg_atomic_fetch_add_u64(&ls_cold->rows_packed, meta.rows);
	pg_atomic_fetch_add_u64(&ls_cold->tables_packed, 1);
	pg_atomic_fetch_add_u64(&ls_cold->cold_pages, meta.n_blocks);
	return true;
}

/*
 * Clean shutdown: write every permanent and unlogged table, then mark the
 * state clean.  The caller (the worker) has waited until it is the only
 * process attached to the hot tier, so no row changes meanwhile.
 */
void
ls_cold_pack_all(void)
{
	ls_hot	   *hot = ls_shared_hot();
	uint32		cursor = 0;
	bool		ok = true;
	Snapshot	snapshot;

	StartTransactionCommand();
	snapshot = RegisterSnapshot(GetTransactionSnapshot());
	for (;;)
	{
		ls_hot_table *tbl;

		ls_epoch_enter();
		tbl = ls_hot_table_next(hot, &cursor);
		ls_epoch_exit();
		if (tbl == NULL)
			break;
		if (ls_hot_table_get_tag(tbl, LS_TAG_PERSISTENCE) == RELPERSISTENCE_TEMP ||
			ls_hot_table_get_tag(tbl, LS_TAG_PERSISTENCE) == 0)
			continue;
		LWLockAcquire(ls_cold->adopt_lock, LW_EXCLUSIVE);
		ok &= ls_pack_table(tbl, snapshot);
		LWLockRelease(ls_cold->adopt_lock);
	}
	UnregisterSnapshot(snapshot);
	CommitTransactionCommand();
	/* the worker only gets here when every table was written or skipped */
	(void) ok;
	ls_state_write(ls_cold->epoch, true, WARNING);
}

/* ------------------------------------------------------------------------
 * Adoption: the first use of a table after a clean restart
 * ------------------------------------------------------------------------ */

typedef struct LsLoadState
{
	uint64		next_key;		/* rowid to resume from */
	int			n;
	bool		full;
	bool		bad;			/* an entry did not look like a row image */
	struct
	{
		uint64		rowid;
		uint32		len;		/* total payload */
		uint32		have;		/* bytes collected */
		bool		dead;
		char	   *payload;
	}			rows[LS_PACK_BATCH];
	MemoryContext mcxt;
} LsLoadState;

/*
 * Scan callback (leaf latched shared): collect up to a batch of rows.  A
 * row's chunks are adjacent keys; a batch never ends inside a row.
 */
static bool
ls_load_cb(void *arg, const uint8_t *key, uint32_t klen, const uint8_t *val, uint32_t vlen)
{
	LsLoadState *ls = arg;
	uint64		rowid = ls_get_be64(key);

	if (klen == 8)
	{
		const LsColdRow *hdr = (const LsColdRow *) val;
		uint32		first;

		if (ls->n == LS_PACK_BATCH)
		{
			ls->full = true;
			ls->next_key = rowid;
			return false;
		}
		if (vlen < sizeof(LsColdRow) || hdr->total_len > LS_HOT_MAX_PAYLOAD)
		{
			ls->bad = true;
			return false;
		}
		first = vlen - sizeof(LsColdRow);
		ls->rows[ls->n].rowid = rowid;
		ls->rows[ls->n].len = hdr->total_len;
		ls->rows[ls->n].dead = (hdr->flags & LS_COLD_DEAD) != 0;
		ls->rows[ls->n].have = Min(first, hdr->total_len);
		ls->rows[ls->n].payload = NULL;
		if (!ls->rows[ls->n].dead && hdr->total_len > 0)
		{
			/* never throws: the leaf is latched */
			ls->rows[ls->n].payload = MemoryContextAllocExtended(ls->mcxt, hdr->total_len,
																 MCXT_ALLOC_NO_OOM);
			if (ls->rows[ls->n].payload == NULL)
			{
				ls->bad = true;
				return false;
			}
			memcpy(ls->rows[ls->n].payload, val + sizeof(LsColdRow), ls->rows[ls->n].have);
		}
		ls->n++;
		return true;
	}
	/* a continuation chunk of the previous row */
	if (ls->n == 0 || ls->rows[ls->n - 1].rowid != rowid || ls->rows[ls->n - 1].payload == NULL ||
		ls->rows[ls->n - 1].have + vlen > ls->rows[ls->n - 1].len)
	{
		ls->bad = true;
		return false;
	}
	memcpy(ls->rows[ls->n - 1].payload + ls->rows[ls->n - 1].have, val, vlen);
	ls->rows[ls->n - 1].have += vlen;
	return true;
}

static void
ls_adopt_fail(Relation rel, ls_hot_table *tbl, const char *what, ls_status st)
{
	if (tbl != NULL)
		ls_hot_table_drop(ls_ctx(), tbl);
	ls_btree_drop(&ls_cold->tree);
	LWLockRelease(ls_cold->adopt_lock);
	if (st == LS_NO_SPACE || st == LS_NO_MEMORY)
		ls_report_status(st, rel, "load");
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("could not load leanstore table \"%s\" from its file: %s (%s)",
					RelationGetRelationName(rel), what, ls_status_str(st))));
}

/* Insert one loaded row image as a frozen single version. */
static ls_status
ls_adopt_row(ls_hot_table *tbl, uint64 rowid, const char *payload, uint32 len, bool dead)
{
	ls_hot_ctx *ctx = ls_ctx();
	ls_hot_version *v;
	ls_hot_row *row;
	ls_status	st;

	st = ls_hot_version_alloc(ctx, dead ? SizeofMinimalTupleHeader : len, &v);
	if (st != LS_OK)
		return st;
	if (!dead)
		memcpy(v->data, payload, len);
	atomic_store(&v->xmin_word, ls_hv_word(FrozenTransactionId,
										   LS_HV_XMIN_COMMITTED | LS_HV_XMIN_FROZEN));
	ls_epoch_enter();
	st = ls_hot_row_insert(ctx, tbl, rowid, LS_ORIGIN_MIGRATED, v, &row);
	if (st == LS_OK)
	{
		/* writers must clear the block's visibility map bit (see below) */
		ls_hot_row_set_allvis(row, true);
		if (dead)
		{
			ls_row_lock(row);
			ls_row_forget_latch();
			ls_hot_row_remove(ctx, tbl, row, true);
		}
	}
	ls_epoch_exit();
	if (st != LS_OK)
		ls_hot_version_free(ctx, v);
	return st;
}

/*
 * The hot storage of rel, loaded from its main fork if the last clean
 * shutdown wrote it there; NULL when there is nothing to load (the caller
 * reports the table as lost).
 */
ls_hot_table *
ls_cold_adopt(Relation rel)
{
	ls_hot_key	key = ls_key_for_node(&rel->rd_node);
	ls_hot_table *tbl = NULL;
	ls_bm	   *bm = ls_cold_bm();
	ls_bm_file	file;
	ls_page    *pg;
	LsColdMeta	meta;
	ls_status	st;
	LsLoadState *ls;
	uint64		rows = 0;
	uint64		dead = 0;

	if (bm == NULL || rel->rd_rel->relpersistence == RELPERSISTENCE_TEMP)
		return NULL;
	LWLockAcquire(ls_cold->adopt_lock, LW_EXCLUSIVE);
	tbl = ls_hot_table_find(ls_shared_hot(), key);
	if (tbl != NULL)
	{
		/* loaded by somebody else meanwhile (loading ends under the lock) */
		Assert(ls_hot_table_get_tag(tbl, LS_TAG_READY) != 0);
		LWLockRelease(ls_cold->adopt_lock);
		return tbl;
	}
	ls_file_for(&file, rel->rd_node.spcNode, rel->rd_node.dbNode, rel->rd_node.relNode);
	pg = palloc(LS_PAGE_SIZE);
	st = ls_bm_read_file_block(bm, &file, 0, pg);
	memcpy(&meta, pg->data, sizeof(meta));
	if (st == LS_OK && pg->hdr.dt_type != LS_DT_META)
		st = LS_CORRUPT;
	pfree(pg);
	if (st != LS_OK || meta.magic != LS_META_MAGIC ||
		meta.version != LS_META_VERSION || meta.epoch != ls_cold->epoch ||
		meta.db != key.db || meta.rel != key.rel)
	{
		LWLockRelease(ls_cold->adopt_lock);
		if (st == LS_CHECKSUM || st == LS_CORRUPT || st == LS_IO_ERROR)
			ereport(WARNING,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("the meta page of leanstore table \"%s\" cannot be read: %s",
							RelationGetRelationName(rel), ls_status_str(st))));
		return NULL;
	}

	st = ls_hot_table_create(ls_ctx(), key, &tbl);
	if (st != LS_OK)
	{
		tbl = NULL;
		ls_adopt_fail(rel, NULL, "no room for its table descriptor", st);
	}
	/* findable from now on, but not READY: others wait for the lock */
	ls_hot_table_set_tag(tbl, LS_TAG_SPC, rel->rd_node.spcNode);
	ls_hot_table_set_tag(tbl, LS_TAG_PERSISTENCE, (uint32) rel->rd_rel->relpersistence);
	ls_hot_table_set_fill(tbl, meta.fill_next, meta.fill_used);
	st = ls_btree_open(bm, &ls_cold->tree, &file, meta.n_blocks, meta.root_block, meta.height);
	if (st != LS_OK)
	{
		ls_hot_table_drop(ls_ctx(), tbl);
		LWLockRelease(ls_cold->adopt_lock);
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("could not open the tree of leanstore table \"%s\": %s",
						RelationGetRelationName(rel), ls_status_str(st))));
	}

	ls = palloc0(sizeof(LsLoadState));
	ls->mcxt = AllocSetContextCreate(CurrentMemoryContext, "leanstore load", ALLOCSET_DEFAULT_SIZES);
	for (;;)
	{
		uint8		start[8];

		CHECK_FOR_INTERRUPTS();
		ls->n = 0;
		ls->full = false;
		ls->bad = false;
		ls_put_be64(start, ls->next_key);
		st = ls_btree_scan_asc(&ls_cold->tree, start, 8, ls_load_cb, ls);
		if (st == LS_OK && ls->bad)
			st = LS_CORRUPT;
		if (st != LS_OK)
			ls_adopt_fail(rel, tbl, "its tree cannot be read", st);
		for (int i = 0; i < ls->n; i++)
		{
			if (!ls->rows[i].dead && ls->rows[i].have != ls->rows[i].len)
				ls_adopt_fail(rel, tbl, "a row image is incomplete", LS_CORRUPT);
			st = ls_adopt_row(tbl, ls->rows[i].rowid, ls->rows[i].payload,
							  ls->rows[i].len, ls->rows[i].dead);
			if (st != LS_OK)
				ls_adopt_fail(rel, tbl, "a row cannot be stored", st);
			if (ls->rows[i].dead)
				dead++;
			else
				rows++;
		}
		MemoryContextReset(ls->mcxt);
		if (!ls->full)
			break;
	}
	MemoryContextDelete(ls->mcxt);
	pfree(ls);
	if (rows != meta.rows || dead != meta.dead)
		ls_adopt_fail(rel, tbl, "its row count does not match its meta page", LS_CORRUPT);

	/*
	 * The visibility map fork survived the restart with bits that the hot
	 * tier's marks no longer back: every row carries a mark (set above),
	 * and inserts below the old limit clear their block's bit too, so any
	 * write clears the bit of the block it changes.
	 */
	ls_hot_table_raise_allvis_limit(tbl, meta.fill_next);
	ls_btree_drop(&ls_cold->tree);
	ls_hot_table_set_tag(tbl, LS_TAG_READY, 1);
	LWLockRelease(ls_cold->adopt_lock);
	pg_atomic_fetch_add_u64(&ls_cold->rows_loaded, rows);
	pg_atomic_fetch_add_u64(&ls_cold->tables_loaded, 1);
	return tbl;
}

/* ------------------------------------------------------------------------
 * Statistics
 * ------------------------------------------------------------------------ */
void
ls_cold_get_stats(LsColdStats *out)
{
	ls_bm_stats bs;

	memset(out, 0, sizeof(*out));
	if (ls_cold == NULL || ls_cold->bm == NULL)
		return;
	ls_bm_get_stats(ls_cold->bm, &bs);
	out->pool_pages = bs.n_frames;
	out->pool_free = bs.free_frames;
	out->hits = bs.hits;
	out->misses = bs.misses;
	out->reads = bs.reads;
	out->writes = bs.writes;
	out->evictions = bs.evictions;
	out->provider_rounds = pg_atomic_read_u64(&ls_cold->provider_rounds);
	out->rows_packed = pg_atomic_read_u64(&ls_cold->rows_packed);
	out->rows_loaded = pg_atomic_read_u64(&ls_cold->rows_loaded);
	out->tables_packed = pg_atomic_read_u64(&ls_cold->tables_packed);
	out->tables_loaded = pg_atomic_read_u64(&ls_cold->tables_loaded);
	out->cold_pages = pg_atomic_read_u64(&ls_cold->cold_pages);
	out->epoch = ls_cold->epoch;
}

/* ------------------------------------------------------------------------
 * The leanstore worker: page provider, and the writer at shutdown
 * ------------------------------------------------------------------------ */

PGDLLEXPORT void ls_worker_main(Datum arg);

void
ls_worker_register(void)
{
	BackgroundWorker bgw;

	memset(&bgw, 0, sizeof(bgw));
	bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw.bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw.bgw_restart_time = 1;
	snprintf(bgw.bgw_library_name, BGW_MAXLEN, "leanstore");
	snprintf(bgw.bgw_function_name, BGW_MAXLEN, "ls_worker_main");
	snprintf(bgw.bgw_name, BGW_MAXLEN, "leanstore worker");
	snprintf(bgw.bgw_type, BGW_MAXLEN, "leanstore worker");
	RegisterBackgroundWorker(&bgw);
}

/*
 * At shutdown the postmaster signals backends and workers at once: wait
 * until every other process has left the hot tier (each detaches at exit),
 * so that no row can change while the tables are written.
 */
static bool
ls_wait_alone(void)
{
	for (int i = 0; i < 600; i++)	/* 60 s, pg_ctl's default patience */
	{
		if (ls_hot_attached_count(ls_shared_hot()) <= 1)
			return true;
		pg_usleep(100 * 1000L);
	}
	return false;
}

void
ls_worker_main(Datum arg)
{
	(void) arg;
	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();
	/* no database: the worker reads shared state and relation files only */
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	(void) ls_ctx();

	while (!ShutdownRequestPending)
	{
		uint64		freed = ls_bm_provider_round(ls_cold->bm);

		pg_atomic_fetch_add_u64(&ls_cold->provider_rounds, 1);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 freed > 0 ? 1 : 20, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		/* absorbs proc signal barriers: DROP DATABASE waits for them */
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
	}

	/* shutdown: write every table, then say so */
	if (!ls_wait_alone())
	{
		ereport(WARNING,
				(errmsg("leanstore tables were not written at shutdown: other processes still use them"),
				 errdetail("The next start will report them as lost.")));
		proc_exit(0);
	}
	pg_atomic_write_u32(&ls_cold->clean_pending, 1);
	ls_cold_pack_all();
	proc_exit(0);
}
