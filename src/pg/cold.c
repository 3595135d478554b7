/*
 * cold.c - the cold tier in PostgreSQL: one buffer pool in shared memory,
 * a B+-tree of row images in every leanstore relation's main fork, reads
 * over both tiers, migration of cold rows by writes, pack (hot -> cold) by
 * the leanstore worker, and clean restarts.
 *
 * src/pg/README.md ("Cold tier") has the protocol; the invariants kept here:
 *  - A rowid's live row is in exactly one place that readers trust: its
 *    RID-map slot when that holds a row or is DEAD, else its cold image.
 *    A hot row shadows the cold image of its rowid (a migrated row keeps
 *    its old image until it is packed again or leaves).
 *  - Readers look at the hot tier first and at the cold tree second, for a
 *    rowid or for a range.  Pack writes the image first and then empties
 *    the slot; migration fills the slot and leaves the image; a migrated
 *    row that leaves as DEAD loses its image first.  So a reader always
 *    finds a row that was live throughout its look, in one tier or both.
 *  - Pack and migration of the same rowid serialise on a striped LWLock, so
 *    a migration never installs an image that pack replaced meanwhile.
 *  - Pack moves only a row whose newest version every snapshot sees, with
 *    no deleter and no running locker; it becomes one frozen version.
 *  - A table is opened after a start only when its meta page carries the
 *    current crash epoch (pg_leanstore/state); the epoch moves at every
 *    start that does not follow a clean shutdown, so after a crash no table
 *    is opened from an image written before the crash: it is lost, with an
 *    error, never old data.  (Until the log exists.)
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access/multixact.h"
#include "access/relation.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/pg_tablespace_d.h"
#include "common/file_perm.h"
#include "common/relpath.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/bufpage.h"
#include "storage/checksum.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/lmgr.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "leanstore/btree.h"
#include "ls_pg.h"

int			ls_buffer_pool_mb = 128;
bool		ls_pack_eager = false;
int			ls_pack_threshold = 80;

#define LS_STATE_FILE		LS_STATE_DIR "/state"
#define LS_META_MAGIC		0x4c53434dU	/* "LSCM" */
#define LS_META_VERSION		4
#define LS_DT_META			2			/* page type of the meta page */
#define LS_TREE_FIRST_BLOCK	1			/* block 0 is the meta page */
#define LS_ROW_LOCKS		128			/* stripes serialising pack and migration */

/*
 * Keys: a row image is keyed by its rowid (8 bytes, big-endian), its
 * continuation chunks by rowid || chunk number (2 bytes).  DEAD rowids a
 * clean shutdown wrote are keyed 0xff || rowid: after every rowid key, so
 * row scans (rowids < 2^40) never meet them.
 */
#define LS_KEY_DEAD_PREFIX	0xff
#define LS_COLD_KEY_MAX		10

typedef struct LsColdRow
{
	uint32		total_len;		/* payload bytes in all chunks */
	uint16		flags;
	uint16		pad;
	TransactionId xmin;			/* the inserter, frozen (kept for the xmin
								 * system column, as heap keeps a frozen
								 * tuple's raw xmin) */
	CommandId	cmin;
	/* payload: the version's MinimalTuple image; continued in chunks */
} LsColdRow;

#define LS_COLD_FROZEN		0x0002	/* xmin is frozen (else: clog decides) */
#define LS_COLD_XMAX		0x0004	/* an LsColdXmax follows the header */
#define LS_COLD_SPEC		0x0008	/* a speculative insert not confirmed yet:
									 * its token in the xmax part's next_rowid
									 * (ls_cold_insert_speculative) */
#define LS_COLD_ABORTED		0x0010	/* a killed speculative insert: dead to
									 * everyone whatever clog says of xmin */
#define LS_COLD_COMPACT		0x0020	/* the compact layout (below) */

/*
 * Compact layout: a one-chunk image without an xmax part -- nearly every
 * image: packed rows, bulk loads -- is its payload alone, the MinimalTuple,
 * whose first 10 bytes (t_len and padding, which a reader rebuilds from the
 * entry's length) hold cmin (bytes 0-3), the flags with LS_COLD_COMPACT
 * (4-5, where the full layout has its flags too, so the two are told
 * apart) and xmin (6-9, unaligned).  16 bytes a row less than the full
 * layout, the LsColdRow header before the payload, which long images and
 * images with an xmax part keep (and every image earlier builds wrote).
 */
#define LS_COLD_COMPACT_HEAD	10
StaticAssertDecl(offsetof(MinimalTupleData, t_infomask2) == LS_COLD_COMPACT_HEAD,
				 "the compact header overlays t_len and mt_padding");
StaticAssertDecl(offsetof(LsColdRow, flags) == 4, "flags at byte 4 in both layouts");

/*
 * The deleter or updater of a row written in the cold tier itself
 * (ls_cold_write: a large DELETE or UPDATE does not migrate the rows it
 * changes), or its lockers.  The words mean what they mean in a hot
 * version; clog decides (VACUUM removes the image once a committed xmax is
 * older than every snapshot, and drops an aborted one).
 */
typedef struct LsColdXmax
{
	uint64		xmax_word;		/* ls_hv_word(xmax, LS_HV_XMAX_* flags) */
	uint64		next_rowid;		/* a moving update's new row */
	CommandId	cmax;
	uint32		pad;
} LsColdXmax;

/* Header bytes before the payload of an image's first chunk. */
static inline uint32
ls_cold_head(const LsColdRow *hdr)
{
	return (uint32) sizeof(LsColdRow) +
		((hdr->flags & LS_COLD_XMAX) ? (uint32) sizeof(LsColdXmax) : 0);
}

/*
 * Chunk layout.  An image of up to LS_COLD_XMAX_PAYLOAD bytes is one chunk,
 * with an xmax part only while one is set.  A longer one (slotted) always
 * has an xmax part in its first chunk -- all zero while none is set -- and
 * LS_COLD_XMAX_PAYLOAD payload bytes there, the rest in continuation
 * chunks of up to LS_COLD_CHUNK bytes: setting or clearing its xmax
 * rewrites the first chunk in place (ls_cold_restamp) and the
 * continuations stay, so a reader meets the old image or the new one.
 * (Long images written before the slot existed have a fuller first chunk
 * and no xmax part: those take none, LS_UF_COLD_SLOT says which.)
 */
#define LS_COLD_XMAX_PAYLOAD	(LS_BTREE_MAX_VALUE - (uint32) (sizeof(LsColdRow) + sizeof(LsColdXmax)))
#define LS_COLD_CHUNK		LS_BTREE_MAX_VALUE

static inline bool
ls_cold_slotted(uint32 len)
{
	return len > LS_COLD_XMAX_PAYLOAD;
}

/* An image's first chunk, decoded from either layout. */
typedef struct LsColdHead
{
	uint32		total_len;		/* payload bytes in all chunks */
	uint16		flags;
	TransactionId xmin;
	CommandId	cmin;
	uint32		head;			/* bytes before the payload in this chunk */
	const char *xmax;			/* the LsColdXmax part, NULL when none */
} LsColdHead;

/* Decode first chunk val (vlen bytes); false when it cannot be one. */
static inline bool
ls_cold_decode(const char *val, uint32 vlen, LsColdHead *h)
{
	LsColdRow	r;

	if (vlen < offsetof(LsColdRow, flags) + sizeof(uint16))
		return false;
	memcpy(&h->flags, val + offsetof(LsColdRow, flags), sizeof(uint16));
	if (h->flags & LS_COLD_COMPACT)
	{
		memcpy(&h->cmin, val, sizeof(CommandId));
		memcpy(&h->xmin, val + 6, sizeof(TransactionId));
		h->total_len = vlen;
		h->head = 0;
		h->xmax = NULL;
		return vlen >= SizeofMinimalTupleHeader && !ls_cold_slotted(vlen) &&
			!(h->flags & LS_COLD_XMAX);
	}
	if (vlen < sizeof(LsColdRow))
		return false;
	memcpy(&r, val, sizeof(r));
	h->total_len = r.total_len;
	h->xmin = r.xmin;
	h->cmin = r.cmin;
	h->head = ls_cold_head(&r);
	h->xmax = (h->flags & LS_COLD_XMAX) ? val + sizeof(LsColdRow) : NULL;
	return vlen >= h->head && h->total_len <= LS_HOT_MAX_PAYLOAD &&
		h->total_len >= SizeofMinimalTupleHeader && vlen - h->head <= h->total_len;
}

/* A payload's t_len and padding, which a compact image's header took. */
static inline void
ls_cold_payload_fix(char *payload, uint32 len)
{
	MinimalTuple mt = (MinimalTuple) payload;

	mt->t_len = len;
	memset(mt->mt_padding, 0, sizeof(mt->mt_padding));
}

/* The compact header over payload's first bytes (see "Compact layout"). */
static inline void
ls_cold_compact_stamp(char *val, uint16 flags, TransactionId xmin, CommandId cmin)
{
	flags |= LS_COLD_COMPACT;
	memcpy(val, &cmin, sizeof(CommandId));
	memcpy(val + offsetof(LsColdRow, flags), &flags, sizeof(uint16));
	memcpy(val + 6, &xmin, sizeof(TransactionId));
}

/* First chunk val's payload bytes into dst, whole; returns how many. */
static inline uint32
ls_cold_copy_first(char *dst, const char *val, uint32 vlen, const LsColdHead *h)
{
	uint32		n = vlen - h->head;

	memcpy(dst, val + h->head, n);
	if (h->flags & LS_COLD_COMPACT)
		ls_cold_payload_fix(dst, h->total_len);
	return n;
}

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
	uint64		cold_end;		/* one past the highest rowid with an image */
	uint64		dead;			/* DEAD rowid keys */
	uint32		flags;			/* LS_META_DIRTY */
	uint32		pad;
	uint64		image;			/* id of this clean image (undo journal) */
	uint64		rows;			/* row images in the tree (LS_META_ROWS) */
	uint32		holes_lo;		/* the table's holes range (virtual blocks; */
	uint32		holes_hi;		/* hi 0: none, as in files written before) */
} LsColdMeta;

/*
 * The tree is being changed by a running server since its clean image
 * `image` was written: set (synced) before the first change of a run
 * reaches the tree, cleared by the next clean point.  After a crash the
 * undo journal of that image brings the file back to it (the journal saved
 * every block of the image before it was overwritten), and the log's cold
 * records are replayed on top.  A dirty meta page without its journal is a
 * table that cannot be recovered (lost).
 */
#define LS_META_DIRTY		0x0001
#define LS_META_ROWS		0x0002	/* rows is set (files written before it
									 * have no count: cold_rows unknown) */
#define LS_UNDO_DIR			LS_STATE_DIR "/undo"

/* A table's cold tree while the server runs. */
typedef struct LsColdTable
{
	pg_atomic_uint32 used;		/* slot taken (under adopt_lock) */
	ls_hot_key	key;
	ls_btree	tree;
	pg_atomic_uint64 cold_end;	/* one past the highest rowid ever stored */
	uint64		pack_hand;		/* next rowid pack looks at (worker only) */
	pg_atomic_uint32 dirty;		/* 0: tree unchanged in this run; 1: its
								 * meta page is being marked dirty; 2: marked */
	uint64		image;			/* the clean image its file can go back to
								 * (0: none, the file was empty) */
	uint32		image_blocks;	/* blocks that image uses */
	uint64		dead_keys;		/* DEAD keys in the tree (from that image) */
	pg_atomic_uint64 rows;		/* row images in the tree (chunk-0 keys) */
	bool		rows_known;		/* false: opened from a file without a count */
} LsColdTable;

typedef struct LsColdShared
{
	ls_bm	   *bm;
	Size		region_size;
	uint32		epoch;			/* crash epoch of this start */
	bool		clean_start;	/* the last run shut down cleanly */
	bool		from_backup;	/* PostgreSQL starts from a base backup
								 * (backup_label): leanstore's files in it
								 * were copied while they changed */
	uint64		log_start;		/* where replay of leanstore's log starts */
	uint64		cover_pos;		/* the checkpoint's cut (log.c, "Commits
								 * through PostgreSQL's WAL"): records
								 * before cover_pos have a GSN <= cover_gsn */
	uint64		cover_gsn;
	int			max_tables;
	LWLock	   *adopt_lock;		/* opening, creating, dropping descriptors;
								 * one table's pack pass */
	LWLock	   *tree_lock;		/* shared by every change of a tree and its
								 * log record; exclusive: a checkpoint's
								 * consistent cut of all trees */
	LWLockPadded *row_locks;	/* LS_ROW_LOCKS stripes */
	pg_atomic_uint64 provider_rounds;
	pg_atomic_uint64 rows_packed;
	pg_atomic_uint64 rows_migrated;
	pg_atomic_uint64 tables_packed;
	pg_atomic_uint64 tables_loaded;
	pg_atomic_uint64 cold_reads;
	pg_atomic_uint64 full_at;	/* when a write last found the hot tier full
								 * (GetCurrentTimestamp), 0: never */
	pg_atomic_uint64 full_spills;	/* writes that went to the cold tree for it */
	LsColdTable tables[FLEXIBLE_ARRAY_MEMBER];
} LsColdShared;

static LsColdShared *ls_cold = NULL;

static ls_status ls_adopt_dead(ls_hot_table *tbl, uint64 rowid);
static ls_status ls_adopt_dead_or_hole(ls_hot_table *tbl, uint64 rowid);
static ls_status ls_cold_restamp(LsColdTable *ct, uint64 rowid, ls_hot_version *v,
								 bool frozen, const LsColdXmax *x);
static ls_hot_row *ls_cold_only_begin(LsColdTable *ct, ls_hot_table *tbl, uint64 rowid);
static void ls_cold_only_end(uint64 rowid);
static LsColdXmax ls_cold_xmax_part(uint64 xmax_word, CommandId cmax, uint64 next_rowid);
static bool ls_hot_fill_over(uint64 used, uint64 heap, int pct);
static bool ls_cold_unlogged_reset(Relation rel);
static ls_status ls_cold_touch(LsColdTable *ct);
static void ls_cold_undo(const ls_bm_file *file, ls_page *pg, const char *name);
static bool ls_file_is_empty(const ls_bm_file *file);
static bool ls_meta_of(const ls_page *pg, LsColdMeta *meta);
static bool ls_storage_file_gone(Oid spc, Oid db, Oid rel);
static uint64 ls_cold_new_image_id(void);
static bool ls_clean_meta(ls_hot_table *tbl, uint64 dead, uint64 image);
static bool ls_table_persists(ls_hot_table *tbl);
static bool ls_file_segment_exists(const ls_bm_file *file, uint32 segno);

/* Stand-ins of this backend, freed when it leaves its epoch. */
static MemoryContext ls_standin_cxt = NULL;
static bool ls_standin_used = false;

/* Scratch of a cold range read: entries copied under the leaf latch. */
#define LS_RANGE_BUF		(256 * 1024)
static char *ls_range_buf = NULL;

/* ------------------------------------------------------------------------
 * Files: relation main forks
 * ------------------------------------------------------------------------ */

static void
ls_file_for(ls_bm_file *file, Oid spc, Oid db, Oid rel, BackendId backend)
{
	memset(file, 0, sizeof(*file));
	file->key[0] = spc;
	file->key[1] = db;
	file->key[2] = rel;
	file->key[3] = (uint32) backend;
}

/*
 * Segment segno of a main fork, as md.c names it (GetRelationPath's layout).
 * Formatted into buf, never palloc'd: the buffer pool calls this under its
 * I/O mutex, often holding write claims or a frame's exclusive latch, and
 * an ERROR there (out of memory) would leave them held for good.
 */
static bool
ls_file_path(void *arg, const ls_bm_file *file, uint32_t segno, char *buf, size_t len)
{
	Oid			spc = file->key[0];
	Oid			db = file->key[1];
	Oid			rel = file->key[2];
	BackendId	backend = (BackendId) file->key[3];
	char		name[32];
	int			n;

	(void) arg;
	if (segno == LS_BM_UNDO_SEGNO)
	{
		/* the undo journal: outside the relation's directory (tools) */
		n = snprintf(buf, len, "%s/%u_%u_%u", LS_UNDO_DIR, spc, db, rel);
		return n > 0 && (size_t) n < len;
	}
	/* the file's name: a temporary relation's carries its backend */
	if (backend == InvalidBackendId)
		n = snprintf(name, sizeof(name), "%u", rel);
	else
		n = snprintf(name, sizeof(name), "t%d_%u", backend, rel);
	if (n <= 0 || (size_t) n >= sizeof(name))
		return false;
	if (spc == GLOBALTABLESPACE_OID)
		n = snprintf(buf, len, "global/%s", name);
	else if (spc == DEFAULTTABLESPACE_OID)
		n = snprintf(buf, len, "base/%u/%s", db, name);
	else
		n = snprintf(buf, len, "pg_tblspc/%u/%s/%u/%s", spc,
					 TABLESPACE_VERSION_DIRECTORY, db, name);
#ifdef LS_ASSERTS
	if (n > 0 && (size_t) n < len)
	{
		/* the asserting build checks the layout against PostgreSQL's own */
		char	   *pg = GetRelationPath(db, spc, rel, backend, MAIN_FORKNUM);

		Assert(strcmp(pg, buf) == 0);
		pfree(pg);
	}
#endif
	if (n > 0 && (size_t) n < len && segno > 0)
	{
		size_t		used = (size_t) n;

		n = snprintf(buf + used, len - used, ".%u", segno);
		if (n > 0)
			n += (int) used;
	}
	return n > 0 && (size_t) n < len;
}

/*
 * PostgreSQL's page checksum: the buffer pool's page_checksum callback on
 * clusters that have data checksums (ls_cold_shmem_startup).  Without them
 * the pool neither sets nor checks pd_checksum, as PostgreSQL does: after
 * pg_checksums --disable every page still carries the checksum it was
 * written with, and checking for 0 then declared every leanstore table lost.
 * The setting cannot change while the server runs (pg_checksums works on a
 * stopped cluster), so the choice made at startup holds.
 */
static uint16_t
ls_page_checksum(void *arg, const ls_page *page, uint32_t block)
{
	(void) arg;
	Assert(DataChecksumsEnabled());
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

/* The shared header with its cold descriptors; the pool's region follows. */
static Size
ls_cold_header_size(int max_tables)
{
	return MAXALIGN(add_size(offsetof(LsColdShared, tables),
							 mul_size(sizeof(LsColdTable), max_tables)));
}

Size
ls_cold_shmem_size(int max_tables)
{
	return add_size(ls_cold_header_size(max_tables),
					add_size(ls_bm_region_size(ls_pool_frames()), 4096));
}

void
ls_cold_shmem_request(int max_tables)
{
	RequestAddinShmemSpace(ls_cold_shmem_size(max_tables));
	RequestNamedLWLockTranche("leanstore cold", 2);
	RequestNamedLWLockTranche("leanstore cold rows", LS_ROW_LOCKS);
}

/*
 * Read the state file: the crash epoch, whether the last run shut down
 * cleanly, and where replay of the log starts.  A missing file is a new
 * cluster (epoch 1, nothing to adopt, an empty log).
 */
static void
ls_state_read(uint32 *epoch, bool *clean, uint64 *log_start, uint64 *cover_pos,
			  uint64 *cover_gsn)
{
	FILE	   *f = AllocateFile(LS_STATE_FILE, "r");
	unsigned	e = 0;
	unsigned long long pos = 0;
	unsigned long long cpos = 0;
	unsigned long long cgsn = 0;
	char		word[16] = "";
	int			n;

	*epoch = 0;
	*clean = false;
	*log_start = 0;
	*cover_pos = 0;
	*cover_gsn = 0;
	if (f == NULL)
	{
		if (errno != ENOENT)
			ereport(FATAL,
					(errcode_for_file_access(),
					 errmsg("could not open file \"%s\": %m", LS_STATE_FILE)));
		return;
	}
	n = fscanf(f, "epoch %u %15s log %llu cover %llu %llu", &e, word, &pos, &cpos, &cgsn);
	if (n >= 2)
	{
		*epoch = e;
		*clean = strcmp(word, "clean") == 0;
		*log_start = (uint64) pos;
		/* a file without the cut (an older version's): it is the start */
		*cover_pos = n == 5 ? (uint64) cpos : (uint64) pos;
		*cover_gsn = n == 5 ? (uint64) cgsn : 0;
	}
	FreeFile(f);
}

/* Write the state file durably (temp file, fsync, rename, fsync dir). */
static void
ls_state_write(bool clean, int elevel)
{
	char		buf[160];
	int			len;

	len = snprintf(buf, sizeof(buf),
				   "epoch %u %s log " UINT64_FORMAT " cover " UINT64_FORMAT " " UINT64_FORMAT "\n",
				   ls_cold->epoch, clean ? "clean" : "running", ls_cold->log_start,
				   ls_cold->cover_pos, ls_cold->cover_gsn);
	ls_write_file_durably(LS_STATE_FILE, buf, len, elevel);
}

/*
 * Replace the small file path with len bytes of buf, durably: a temp file,
 * fsync, rename, fsync of the directory (a crash leaves the old or the new
 * content, never a mix).  Errors at elevel.
 */
void
ls_write_file_durably(const char *path, const char *buf, int len, int elevel)
{
	char		tmp[MAXPGPATH];
	int			fd;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
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
	(void) durable_rename(tmp, path, elevel);
}

/* Postmaster, shared memory being formatted (start or crash restart). */
void
ls_cold_shmem_startup(int max_tables)
{
	bool		found;
	ls_bm_config cfg = {0};
	void	   *region;
	ls_status	st;
	uint32		epoch;
	bool		clean;
	uint64		log_start;
	uint64		cover_pos;
	uint64		cover_gsn;
	Size		hdr = ls_cold_header_size(max_tables);

	ls_cold = ShmemInitStruct("leanstore cold tier", ls_cold_shmem_size(max_tables), &found);
	if (found)
		return;
	memset(ls_cold, 0, hdr);
	ls_cold->max_tables = max_tables;
	for (int i = 0; i < max_tables; i++)
		pg_atomic_init_u32(&ls_cold->tables[i].used, 0);
	region = (void *) TYPEALIGN(4096, (char *) ls_cold + hdr);
	cfg.n_frames = ls_pool_frames();
	cfg.file_path = ls_file_path;
	cfg.page_checksum = DataChecksumsEnabled() ? ls_page_checksum : NULL;
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
	ls_cold->adopt_lock = &(GetNamedLWLockTranche("leanstore cold"))[0].lock;
	ls_cold->tree_lock = &(GetNamedLWLockTranche("leanstore cold"))[1].lock;
	ls_cold->row_locks = GetNamedLWLockTranche("leanstore cold rows");
	pg_atomic_init_u64(&ls_cold->provider_rounds, 0);
	pg_atomic_init_u64(&ls_cold->rows_packed, 0);
	pg_atomic_init_u64(&ls_cold->rows_migrated, 0);
	pg_atomic_init_u64(&ls_cold->tables_packed, 0);
	pg_atomic_init_u64(&ls_cold->tables_loaded, 0);
	pg_atomic_init_u64(&ls_cold->cold_reads, 0);
	pg_atomic_init_u64(&ls_cold->full_at, 0);
	pg_atomic_init_u64(&ls_cold->full_spills, 0);

	/*
	 * A start that does not follow a clean shutdown (a crash, a crash
	 * restart of this very postmaster, a kill) replays the log from
	 * log_start (log.c); the epoch moves only when that log is gone
	 * (ls_cold_log_lost), so that no image written before is trusted.
	 */
	ls_make_directory(LS_STATE_DIR);
	ls_make_directory(LS_UNDO_DIR);
	ls_state_read(&epoch, &clean, &log_start, &cover_pos, &cover_gsn);
	if (epoch == 0)
		epoch = 1;
	ls_cold->epoch = epoch;
	ls_cold->clean_start = clean;
	ls_cold->log_start = log_start;
	ls_cold->cover_pos = cover_pos;
	ls_cold->cover_gsn = cover_gsn;
	/* the startup process renames it only later */
	ls_cold->from_backup = access("backup_label", F_OK) == 0;
	ls_state_write(false, FATAL);
}

/* This start restores a base backup (postmaster's check, before recovery). */
bool
ls_cold_from_backup(void)
{
	return ls_cold->from_backup;
}

/* What the start found: a clean shutdown before it, where replay starts. */
void
ls_cold_start_state(bool *clean, uint64 *log_start)
{
	*clean = ls_cold->clean_start;
	*log_start = ls_cold->log_start;
}

/* The cut of the checkpoint that set the replay start (see ls_cold_set_log_start). */
void
ls_cold_log_cover(uint64 *cover_pos, uint64 *cover_gsn)
{
	*cover_pos = ls_cold->cover_pos;
	*cover_gsn = ls_cold->cover_gsn;
}

/*
 * The log that the last run wrote is gone (recovery, before any backend
 * uses a table): no image of that run can be trusted, every table becomes
 * lost.  The new epoch is written at once, so that a crash now still
 * knows.
 */
void
ls_cold_log_lost(uint64 new_log_start)
{
	ls_cold->epoch++;
	ls_cold->log_start = new_log_start;
	ls_cold->cover_pos = new_log_start;
	ls_cold->cover_gsn = 0;
	ls_state_write(false, FATAL);
}

/*
 * A checkpoint or recovery finished: replay of a later crash starts at
 * log_start.  cover_pos <= log_start and cover_gsn describe the cut: every
 * record before cover_pos has a GSN <= cover_gsn, and every record with a
 * GSN <= cover_gsn is before log_start (log.c).
 */
void
ls_cold_set_log_start(uint64 log_start, uint64 cover_pos, uint64 cover_gsn)
{
	Assert(cover_pos <= log_start);
	ls_cold->log_start = log_start;
	ls_cold->cover_pos = cover_pos;
	ls_cold->cover_gsn = cover_gsn;
	ls_state_write(false, FATAL);
}

/*
 * tree_lock shared, for a tree change.  Lock order (ls_cold_hold_trees):
 * adopt_lock, tree_lock, a row stripe, a row latch; a row latch is never
 * held while waiting here (the checkpoint holds tree_lock exclusively for a
 * while, and readers of that row would spin for as long).
 */
static void
ls_tree_share(void)
{
	LS_ASSERT(!ls_holds_row_latch());
	LWLockAcquire(ls_cold->tree_lock, LW_SHARED);
}

ls_bm *
ls_cold_bm(void)
{
	return ls_cold != NULL ? ls_cold->bm : NULL;
}

/* ------------------------------------------------------------------------
 * Cold descriptors
 * ------------------------------------------------------------------------ */

static inline LsColdTable *
ls_cold_of(ls_hot_table *tbl)
{
	uint32		tag = ls_hot_table_get_tag(tbl, LS_TAG_COLD);

	if (tag == 0 || ls_cold == NULL || tag > (uint32) ls_cold->max_tables)
		return NULL;
	return &ls_cold->tables[tag - 1];
}

void
ls_make_directory(const char *path)
{
	char	   *copy = pstrdup(path);	/* pg_mkdir_p cuts it temporarily */

	if (pg_mkdir_p(copy, pg_dir_create_mode) != 0 && errno != EEXIST)
		ereport(FATAL,
				(errcode_for_file_access(),
				 errmsg("could not create directory \"%s\": %m", path)));
	pfree(copy);
}

/*
 * A cold tree operation failed: one message (the status says why, like %m);
 * the operation and the last block the pool failed on are internal detail.
 */
static void
ls_cold_report(ls_status st, const ls_hot_key *key, const char *what)
{
	BlockNumber block = ls_pid_block(ls_bm_last_error_pid());
	int			err = ls_bm_last_error_errno();
	char	   *relname = ls_storage_relname(*key);

	/*
	 * A full disk is the user's to fix, not a damaged table: new blocks get
	 * their space when the tree takes them (ls_bm_alloc_page), so this is
	 * the statement that grows the table, as on heap.
	 */
	if (st == LS_IO_ERROR && (err == ENOSPC || err == EDQUOT))
	{
		errno = err;
		ereport(ERROR,
				(errcode(ERRCODE_DISK_FULL),
				 errmsg("could not extend the cold tree of a leanstore table: %m"),
				 errdetail_internal("Operation: %s; block: %u.", what, block),
				 errhint("Check free disk space."),
				 ls_storage_errcontext(relname, *key)));
	}
	if (st == LS_NO_SPACE)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
				 errmsg("could not access the cold tree of a leanstore table: no page of leanstore's buffer pool could be freed"),
				 errdetail_internal("Operation: %s; last failed block: %u.", what, block),
				 errhint("Increase leanstore.buffer_pool, or retry when fewer sessions read cold rows at once."),
				 ls_storage_errcontext(relname, *key)));
	if (st == LS_IO_ERROR && err != 0)
	{
		errno = err;
		ereport(ERROR,
				(errcode(ERRCODE_IO_ERROR),
				 errmsg("could not access the cold tree of a leanstore table: %m"),
				 errdetail_internal("Operation: %s; last failed block: %u.", what, block),
				 errhint("Check the table with leanstore_verify."),
				 ls_storage_errcontext(relname, *key)));
	}
	ereport(ERROR,
			(errcode(st == LS_IO_ERROR ? ERRCODE_IO_ERROR : ERRCODE_DATA_CORRUPTED),
			 errmsg("could not access the cold tree of a leanstore table: %s",
					ls_status_str(st)),
			 errdetail_internal("Operation: %s; last failed block: %u.", what, block),
			 errhint("Check the table with leanstore_verify."),
			 ls_storage_errcontext(relname, *key)));
}

/* A free descriptor (caller holds adopt_lock); NULL when all are taken. */
static LsColdTable *
ls_cold_slot(ls_hot_table *tbl, uint32 *index)
{
	for (int i = 0; i < ls_cold->max_tables; i++)
	{
		LsColdTable *ct = &ls_cold->tables[i];

		if (pg_atomic_read_u32(&ct->used) == 0)
		{
			ct->key = ls_hot_table_get_key(tbl);
			pg_atomic_init_u64(&ct->cold_end, 0);
			ct->pack_hand = 0;
			pg_atomic_init_u32(&ct->dirty, 0);
			ct->image = 0;
			ct->image_blocks = 0;
			ct->dead_keys = 0;
			pg_atomic_init_u64(&ct->rows, 0);
			ct->rows_known = true;
			*index = (uint32) i + 1;
			return ct;
		}
	}
	return NULL;
}

static void
ls_file_of(ls_hot_table *tbl, ls_bm_file *file)
{
	ls_hot_key	key = ls_hot_table_get_key(tbl);

	BackendId	backend = InvalidBackendId;

	/* a temporary table's file carries its owner's number (md.c's name) */
	if (ls_hot_table_get_tag(tbl, LS_TAG_PERSISTENCE) == RELPERSISTENCE_TEMP)
		backend = (BackendId) ls_hot_table_get_tag(tbl, LS_TAG_BACKEND);
	ls_file_for(file, ls_hot_table_get_tag(tbl, LS_TAG_SPC), key.db, key.rel, backend);
}

/*
 * The cold tree of tbl, created in its file when it has none yet (caller
 * holds adopt_lock).  When no descriptor is free or the tree cannot be
 * created, says why at elevel and returns NULL (below ERROR): pack then
 * leaves the table's rows hot.
 */
static LsColdTable *
ls_cold_ensure(ls_hot_table *tbl, int elevel)
{
	LsColdTable *ct = ls_cold_of(tbl);
	ls_hot_key	key = ls_hot_table_get_key(tbl);
	uint32		index;
	ls_bm_file	file;
	ls_status	st;

	if (ct != NULL)
		return ct;
	if ((ct = ls_cold_slot(tbl, &index)) == NULL)
	{
		ereport(elevel,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("no cold tree descriptor is free for leanstore relfilenode %u/%u",
						key.db, key.rel),
				 errhint("Increase leanstore.max_tables (every leanstore table needs one descriptor) and restart.")));
		return NULL;
	}
	ls_file_of(tbl, &file);
	st = ls_btree_create_in_file(ls_cold->bm, &ct->tree, &file, LS_TREE_FIRST_BLOCK);
	if (st == LS_OK)
	{
		pg_atomic_write_u32(&ct->dirty, 0);
		st = ls_cold_touch(ct);
		if (st != LS_OK)
			ls_btree_drop(&ct->tree);
	}
	if (st != LS_OK)
	{
		ereport(elevel,
				(errcode(st == LS_IO_ERROR ? ERRCODE_IO_ERROR : ERRCODE_INTERNAL_ERROR),
				 errmsg("could not create the cold tree of leanstore relfilenode %u/%u: %s",
						key.db, key.rel, ls_status_str(st))));
		return NULL;
	}
	pg_atomic_write_u32(&ct->used, 1);
	ls_hot_table_set_tag(tbl, LS_TAG_COLD, index);
	return ct;
}

void
ls_cold_drop_for(ls_hot_table *tbl)
{
	LsColdTable *ct;

	if (ls_cold == NULL)
		return;
	LWLockAcquire(ls_cold->adopt_lock, LW_EXCLUSIVE);
	ct = ls_cold_of(tbl);
	if (ct != NULL)
	{
		ls_bm_file file;

		ls_hot_table_set_tag(tbl, LS_TAG_COLD, 0);
		ls_btree_drop(&ct->tree);
		pg_atomic_write_u32(&ct->used, 0);
		/* its undo journal goes with the storage */
		ls_file_of(tbl, &file);
		ls_cold_forget_journal(file.key[0], file.key[1], file.key[2], false);
	}
	LWLockRelease(ls_cold->adopt_lock);
}

/*
 * Remove the undo journal of storage (spc, db, rel), spc being its real
 * tablespace: the storage is gone for good (dropped, its creation aborted,
 * emptied in place), or new (then a journal of its number is a dropped
 * storage's, and must not be applied to the new file after a crash: that
 * removal is made durable).  Must not throw unless durably.
 */
void
ls_cold_forget_journal(Oid spc, Oid db, Oid rel, bool durably)
{
	ls_bm_file	file;
	char		path[MAXPGPATH];

	ls_file_for(&file, spc, db, rel, InvalidBackendId);
	if (!ls_file_path(NULL, &file, LS_BM_UNDO_SEGNO, path, sizeof(path)))
		return;
	if (unlink(path) != 0)
	{
		if (errno != ENOENT)
			ereport(WARNING,
					(errcode_for_file_access(),
					 errmsg("could not remove file \"%s\": %m", path)));
		return;
	}
	if (durably)
		fsync_fname(LS_UNDO_DIR, true);
}

/*
 * Remove undo journals nobody needs any more: with db valid, those of
 * every storage of database db (DROP DATABASE committed); with db invalid
 * (a start, before any table is opened), those whose relation file is gone
 * although its tablespace's directory is there: the storage was dropped
 * and PostgreSQL unlinked its file, but the journal's removal did not
 * happen (a crash between the drop's commit and its commit callback; its
 * file is removed by PostgreSQL's redo of the commit).  A live table's
 * file exists from its creation to its drop, so its journal stays.
 */
void
ls_cold_sweep_journals(Oid db)
{
	DIR		   *dir;
	struct dirent *de;

	dir = AllocateDir(LS_UNDO_DIR);
	if (dir == NULL)
		return;					/* no journal was ever written */
	while ((de = ReadDirExtended(dir, LS_UNDO_DIR, LOG)) != NULL)
	{
		unsigned int spc,
					jdb,
					rel;
		char		tail;

		if (sscanf(de->d_name, "%u_%u_%u%c", &spc, &jdb, &rel, &tail) != 3)
			continue;
		if (OidIsValid(db) ? jdb != db : !ls_storage_file_gone(spc, jdb, rel))
			continue;
		ls_cold_forget_journal(spc, jdb, rel, false);
	}
	FreeDir(dir);
}

/* The main fork of (spc, db, rel) is gone, and its tablespace is there. */
static bool
ls_storage_file_gone(Oid spc, Oid db, Oid rel)
{
	char	   *path = GetRelationPath(db, spc, rel, InvalidBackendId, MAIN_FORKNUM);
	char	   *spcdir = GetDatabasePath(db, spc);
	char	   *slash = strrchr(spcdir, '/');
	struct stat sb;
	bool		gone;

	gone = stat(path, &sb) != 0 && errno == ENOENT;
	if (slash != NULL)
		*slash = '\0';
	gone = gone && slash != NULL && stat(spcdir, &sb) == 0;
	pfree(path);
	pfree(spcdir);
	return gone;
}

static bool
ls_last_cb(void *arg, const uint8_t *key, uint32_t klen, const uint8_t *val, uint32_t vlen)
{
	(void) val;
	(void) vlen;
	if (klen >= 8 && key[0] != LS_KEY_DEAD_PREFIX)
		*(uint64 *) arg = ls_get_be64(key) + 1;
	return false;
}

/*
 * One past the highest rowid that holds a row, a DEAD slot or a cold image
 * (the relation's size: trailing rowids without any do not count, as
 * heap's VACUUM truncates empty pages at its end).  Caller inside an epoch.
 *
 * Runs at every planning of a query on the table (the size estimate), so
 * the RID-map walk is bounded by the cold tier: first the hot rowids at or
 * above cold_end (an upper bound on the cold keys, and usually where new
 * rows are), and only when there are none, the cold tree's last key and the
 * hot rowids between it and cold_end.  A table loaded in bulk keeps its
 * first rows hot and the rest cold: walking down from the rowid limit to
 * those first rows would cost one walk from the RID-map's root per 1,024
 * cold rowids.
 */
uint64
ls_table_used_end(ls_hot_table *tbl)
{
	LsColdTable *ct = ls_cold_of(tbl);
	uint64		bound = ct != NULL ? pg_atomic_read_u64(&ct->cold_end) : 0;
	uint64		end;
	uint8		top[8];
	uint64		cold = 0;
	ls_status	st;

	end = ls_hot_table_used_end(tbl, ls_hot_table_rowid_limit(tbl), bound);
	if (end != 0 || bound == 0)
		return end;				/* nothing cold at or above it */
	ls_put_be64(top, LS_HOT_MAX_ROWID);
	st = ls_btree_scan_desc(&ct->tree, top, 8, ls_last_cb, &cold);
	if (st != LS_OK)
		ls_cold_report(st, &ct->key, "read");
	end = ls_hot_table_used_end(tbl, bound, cold);
	return Max(end, cold);
}

/*
 * Keep pack (and the adoption of tables) from running while the caller
 * compares a table's counters (leanstore_verify).  An error releases it
 * with every other LWLock.
 */
void
ls_cold_hold_pack(bool hold)
{
	if (ls_cold == NULL)
		return;
	if (hold)
		LWLockAcquire(ls_cold->adopt_lock, LW_EXCLUSIVE);
	else
		LWLockRelease(ls_cold->adopt_lock);
}

/*
 * Does the file at path begin with a leanstore meta page (a cold tree's
 * file)?  Read with plain I/O, outside the buffer pool: CREATE DATABASE's
 * check of a template whose tables this server run never opened.  Only the
 * page layout and the meta magic are looked at: a false "yes" refuses a
 * copy, it never loses data.
 */
bool
ls_cold_file_is_tree(const char *path)
{
	ls_page    *pg = palloc(LS_PAGE_SIZE);
	LsColdMeta	meta;
	int			fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
	bool		tree = false;

	if (fd >= 0)
	{
		if (pg_pread(fd, pg, LS_PAGE_SIZE, 0) == LS_PAGE_SIZE)
		{
			tree = pg->hdr.pg_pagesize_version == (LS_PAGE_SIZE | LS_PG_LAYOUT_VERSION) &&
				ls_meta_of(pg, &meta);
		}
		CloseTransientFile(fd);
	}
	pfree(pg);
	return tree;
}

/* Blocks of tbl's file its tree uses (meta page included), in memory or not. */
uint64
ls_cold_table_pages(ls_hot_table *tbl)
{
	LsColdTable *ct = ls_cold_of(tbl);

	return ct != NULL ? ls_bm_dt_blocks(ls_cold->bm, ct->tree.dt_id) : 0;
}

/*
 * Row images in tbl's tree (a migrated row keeps its image until it is
 * written back or removed); -1 when unknown (a file written before the
 * count was kept, until the table is rewritten).
 */
int64
ls_cold_table_rows(ls_hot_table *tbl)
{
	LsColdTable *ct = ls_cold_of(tbl);

	if (ct == NULL)
		return 0;
	return ct->rows_known ? (int64) pg_atomic_read_u64(&ct->rows) : -1;
}

/* Of those, blocks no page uses (freed by merges), kept for reuse. */
uint64
ls_cold_table_free_pages(ls_hot_table *tbl)
{
	LsColdTable *ct = ls_cold_of(tbl);

	return ct != NULL ? ls_bm_dt_free_blocks(ls_cold->bm, ct->tree.dt_id) : 0;
}

static void
ls_cold_raise_end(LsColdTable *ct, uint64 rowid)
{
	uint64		cur = pg_atomic_read_u64(&ct->cold_end);

	while (cur < rowid + 1 &&
		   !pg_atomic_compare_exchange_u64(&ct->cold_end, &cur, rowid + 1))
		;
}

static LWLock *
ls_row_stripe(uint64 rowid)
{
	return &ls_cold->row_locks[(rowid / 7) % LS_ROW_LOCKS].lock;
}

/* Is pg a tree's meta page?  *meta gets its contents (when it is). */
static bool
ls_meta_of(const ls_page *pg, LsColdMeta *meta)
{
	memcpy(meta, pg->data, sizeof(*meta));
	return pg->hdr.dt_type == LS_DT_META && meta->magic == LS_META_MAGIC;
}

static void
ls_meta_init(ls_page *pg, const LsColdMeta *meta)
{
	memset(pg, 0, LS_PAGE_SIZE);
	pg->hdr.dt_type = LS_DT_META;
	memcpy(pg->data, meta, sizeof(*meta));
}

/*
 * Before the first change of a run reaches ct's tree: its meta page says
 * "dirty", durably, so that a crash before the next clean shutdown finds
 * the table lost instead of opening a half-written tree.  Once per table
 * per run; concurrent first changers wait for the one that writes.
 */
static ls_status
ls_cold_touch(LsColdTable *ct)
{
	uint32		expected = 0;
	LsColdMeta	meta;
	ls_page    *pg;
	ls_status	st;

	if (likely(pg_atomic_read_u32(&ct->dirty) == 2))
		return LS_OK;
	if (!pg_atomic_compare_exchange_u32(&ct->dirty, &expected, 1))
	{
		while (pg_atomic_read_u32(&ct->dirty) == 1)
			pg_usleep(100L);
		return pg_atomic_read_u32(&ct->dirty) == 2 ? LS_OK : LS_IO_ERROR;
	}
	/* every block of the clean image is saved before it is overwritten */
	if (ct->image != 0)
	{
		st = ls_bm_protect_dt(ls_cold->bm, ct->tree.dt_id, ct->image_blocks, ct->image);
		if (st != LS_OK)
		{
			pg_atomic_write_u32(&ct->dirty, 0);
			return st;
		}
	}
	memset(&meta, 0, sizeof(meta));
	meta.magic = LS_META_MAGIC;
	meta.version = LS_META_VERSION;
	meta.epoch = ls_cold->epoch;
	meta.db = ct->key.db;
	meta.rel = ct->key.rel;
	meta.flags = LS_META_DIRTY;
	meta.image = ct->image;
	pg = malloc(LS_PAGE_SIZE);
	if (pg == NULL)
	{
		pg_atomic_write_u32(&ct->dirty, 0);
		return LS_NO_MEMORY;
	}
	ls_meta_init(pg, &meta);
	st = ls_bm_write_block(ls_cold->bm, ct->tree.dt_id, 0, pg, false);
	if (st == LS_OK)
		st = ls_bm_sync_dt(ls_cold->bm, ct->tree.dt_id);
	free(pg);
	pg_atomic_write_u32(&ct->dirty, st == LS_OK ? 2 : 0);
	return st;
}

static inline LsColdTable *
ls_cold_of_tree(ls_btree *t)
{
	return (LsColdTable *) ((char *) t - offsetof(LsColdTable, tree));
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

static uint32
ls_dead_key(uint8 *key, uint64 rowid)
{
	key[0] = LS_KEY_DEAD_PREFIX;
	ls_put_be64(key + 1, rowid);
	return 9;
}

/* Chunks of an image of len bytes (at least as many as it has: see above). */
static uint16
ls_cold_chunks(uint32 len)
{
	if (!ls_cold_slotted(len))
		return 1;
	return (uint16) (1 + (len - LS_COLD_XMAX_PAYLOAD + LS_COLD_CHUNK - 1) / LS_COLD_CHUNK);
}

/* Remove rowid's image, all of its chunks (nothing there: LS_OK). */
static ls_status
ls_cold_remove(ls_btree *t, uint64 rowid)
{
	uint8		key[LS_COLD_KEY_MAX];
	char		val[LS_BTREE_MAX_VALUE];
	uint32		vlen;
	ls_status	st = ls_btree_lookup(t, key, ls_cold_key(key, rowid, 0), val, sizeof(val), &vlen);
	uint16		n;

	if (st == LS_NOT_FOUND)
		return LS_OK;
	if (st == LS_OK)
		st = ls_cold_touch(ls_cold_of_tree(t));
	if (st != LS_OK)
		return st;
	{
		LsColdHead	h;

		n = ls_cold_decode(val, vlen, &h) ? ls_cold_chunks(h.total_len) : 1;
	}
	for (uint16 c = 0; c < n && st == LS_OK; c++)
	{
		st = ls_btree_remove(t, key, ls_cold_key(key, rowid, c));
		if (st == LS_OK && c == 0)
			pg_atomic_fetch_sub_u64(&ls_cold_of_tree(t)->rows, 1);
		if (st == LS_NOT_FOUND)
			st = LS_OK;
	}
	return st;
}

/*
 * The first chunk of an image into val: compact when it is one chunk
 * without an xmax part, else header (flags, xmin, cmin), the xmax part x
 * -- or, for a slotted image, an empty one when x is NULL -- and as much
 * payload as fits.  Returns the chunk's length; *first the
 * payload bytes in it.
 */
static uint32
ls_cold_first_chunk(char *val, const char *payload, uint32 len, uint16 flags,
					TransactionId xmin, CommandId cmin, const LsColdXmax *x,
					uint32 *first)
{
	LsColdRow  *hdr = (LsColdRow *) val;

	if (x == NULL && !ls_cold_slotted(len))
	{
		memcpy(val, payload, len);
		ls_cold_compact_stamp(val, flags, xmin, cmin);
		*first = len;
		return len;
	}
	memset(hdr, 0, sizeof(*hdr));
	hdr->total_len = len;
	hdr->flags = flags;
	hdr->xmin = xmin;
	hdr->cmin = cmin;
	if (x != NULL || ls_cold_slotted(len))
	{
		LsColdXmax	none;

		if (x == NULL)
		{
			memset(&none, 0, sizeof(none));
			none.cmax = InvalidCommandId;
			none.next_rowid = LS_ROWID_INVALID;
			x = &none;
		}
		hdr->flags |= LS_COLD_XMAX;
		memcpy(val + sizeof(LsColdRow), x, sizeof(*x));
	}
	*first = Min(len, LS_BTREE_MAX_VALUE - ls_cold_head(hdr));
	Assert(*first == len || *first == LS_COLD_XMAX_PAYLOAD);
	memcpy(val + ls_cold_head(hdr), payload, *first);
	return ls_cold_head(hdr) + *first;
}

/*
 * Store rowid's image, replacing an older one: a frozen version (pack,
 * shutdown, VACUUM), or one whose inserter clog decides (bulk loads); with
 * x an xmax part (a speculative insert's token, flags LS_COLD_SPEC).
 */
static ls_status
ls_cold_put_x(ls_btree *t, uint64 rowid, const char *payload, uint32 len,
			  TransactionId xmin, CommandId cmin, uint16 flags, const LsColdXmax *x,
			  bool fresh)
{
	uint8		key[LS_COLD_KEY_MAX];
	char		val[LS_BTREE_MAX_VALUE];
	uint32		first;
	uint32		vlen;
	uint32		off;
	uint16		chunk = 1;
	ls_status	st;

	/* an image is a whole tuple (stand-ins and readers rely on it) */
	Assert(len >= SizeofMinimalTupleHeader && len <= LS_HOT_MAX_PAYLOAD);
	st = ls_cold_touch(ls_cold_of_tree(t));

	if (st == LS_OK && !fresh)
		st = ls_cold_remove(t, rowid);
	vlen = ls_cold_first_chunk(val, payload, len, flags, xmin, cmin, x, &first);
	if (st == LS_OK)
		st = ls_btree_append(t, key, ls_cold_key(key, rowid, 0), val, vlen);
	if (st == LS_OK)
		pg_atomic_fetch_add_u64(&ls_cold_of_tree(t)->rows, 1);
	if (st == LS_OK && first < len)
		ls_debug_image_pause();
	for (off = first; st == LS_OK && off < len; off += LS_COLD_CHUNK, chunk++)
		st = ls_btree_append(t, key, ls_cold_key(key, rowid, chunk), payload + off,
							 Min(len - off, LS_COLD_CHUNK));
	return st;
}

static ls_status
ls_cold_put(ls_btree *t, uint64 rowid, const char *payload, uint32 len,
			TransactionId xmin, CommandId cmin, bool frozen, bool fresh)
{
	return ls_cold_put_x(t, rowid, payload, len, xmin, cmin,
						 frozen ? LS_COLD_FROZEN : 0, NULL, fresh);
}

static ls_status
ls_cold_store(ls_btree *t, uint64 rowid, const char *payload, uint32 len,
			  TransactionId xmin, CommandId cmin, bool frozen)
{
	return ls_cold_put(t, rowid, payload, len, xmin, cmin, frozen, false);
}

/* ------------------------------------------------------------------------
 * Stand-ins
 * ------------------------------------------------------------------------ */

static void *
ls_standin_alloc(Size size)
{
	if (ls_standin_cxt == NULL)
		ls_standin_cxt = AllocSetContextCreate(TopMemoryContext, "leanstore cold rows",
											   ALLOCSET_DEFAULT_SIZES);
	ls_standin_used = true;
	return MemoryContextAlloc(ls_standin_cxt, size);
}

/* The backend left its epoch: no stand-in can be in use any more. */
void
ls_standins_release(void)
{
	if (ls_standin_used)
	{
		MemoryContextReset(ls_standin_cxt);
		ls_standin_used = false;
	}
}

/* A stand-in with room for len payload bytes (filled by the caller). */
static ls_hot_row *
ls_standin_new(uint64 rowid, const LsColdHead *hdr)
{
	uint32		len = hdr->total_len;
	Size		roff = MAXALIGN(sizeof(ls_hot_row));
	char	   *mem = ls_standin_alloc(roff + offsetof(ls_hot_version, data) + len);
	ls_hot_row *row = (ls_hot_row *) mem;
	ls_hot_version *v = (ls_hot_version *) (mem + roff);

	memset(row, 0, sizeof(*row));
	memset(v, 0, offsetof(ls_hot_version, data));
	row->rowid = rowid;
	row->origin = LS_ORIGIN_COLD;
	atomic_store(&row->newest, v);
	atomic_store(&v->xmin_word,
				 ls_hv_word(hdr->xmin, (hdr->flags & LS_COLD_ABORTED) ?
							LS_HV_XMIN_ABORTED :
							(hdr->flags & LS_COLD_FROZEN) ?
							LS_HV_XMIN_COMMITTED | LS_HV_XMIN_FROZEN :
							hdr->xmin == ls_xmin_seen_committed &&
							TransactionIdIsNormal(hdr->xmin) ?
							LS_HV_XMIN_COMMITTED : 0));
	v->cmin = hdr->cmin;
	atomic_store(&v->next_rowid, LS_ROWID_INVALID);
	if (hdr->xmax != NULL)
	{
		LsColdXmax	x;

		memcpy(&x, hdr->xmax, sizeof(x));
		atomic_store(&v->xmax_word, x.xmax_word);
		atomic_store(&v->cmax, x.cmax);
		atomic_store(&v->next_rowid, x.next_rowid);
		if (hdr->flags & LS_COLD_SPEC)
			atomic_store(&v->user_flags, LS_UF_SPECULATIVE);
		if (ls_cold_slotted(hdr->total_len))
			atomic_fetch_or(&v->user_flags, LS_UF_COLD_SLOT);
	}
	v->len = len;
	return row;
}

/* rowid's cold image as a stand-in; NULL when it has none. */
static ls_hot_row *
ls_cold_standin(LsColdTable *ct, uint64 rowid)
{
	uint8		key[LS_COLD_KEY_MAX];
	char		val[LS_BTREE_MAX_VALUE];
	uint32		vlen;
	ls_status	st;
	LsColdHead	h;
	ls_hot_row *row;
	ls_hot_version *v;
	uint32		have;

	st = ls_btree_lookup(&ct->tree, key, ls_cold_key(key, rowid, 0), val, sizeof(val), &vlen);
	if (st == LS_NOT_FOUND)
		return NULL;
	if (st != LS_OK)
		ls_cold_report(st, &ct->key, "read");
	if (!ls_cold_decode(val, vlen, &h))
		ls_cold_report(LS_CORRUPT, &ct->key, "read");
	row = ls_standin_new(rowid, &h);
	v = ls_hot_row_newest(row);
	have = ls_cold_copy_first((char *) v->data, val, vlen, &h);
	for (uint16 c = 1; have < h.total_len; c++)
	{
		st = ls_btree_lookup(&ct->tree, key, ls_cold_key(key, rowid, c),
							 v->data + have, h.total_len - have, &vlen);
		if (st != LS_OK || vlen == 0 || vlen > h.total_len - have)
			ls_cold_report(st != LS_OK ? st : LS_CORRUPT, &ct->key, "read");
		have += vlen;
	}
	pg_atomic_fetch_add_u64(&ls_cold->cold_reads, 1);
	return row;
}

/* ------------------------------------------------------------------------
 * Reads over both tiers
 * ------------------------------------------------------------------------ */

/*
 * This backend's last read through the functions below: its table, the
 * rowids it covered and the outermost epoch it was made in.  A chain walk
 * that passes the bound on a row no RID-map holds (a stand-in, or a row
 * evicted or removed after the read found it) is named from it
 * (ls_chain_overrun); the table cannot have gone while that epoch lasts.
 */
static ls_hot_table *ls_read_tbl = NULL;
static uint64 ls_read_lo = 0;
static uint64 ls_read_hi = 0;
static uint64 ls_read_epoch = 0;

static inline void
ls_note_read(ls_hot_table *tbl, uint64 lo, uint64 hi)
{
	ls_read_tbl = tbl;
	ls_read_lo = lo;
	ls_read_hi = hi;
	ls_read_epoch = ls_epoch_serial;
}

/* The table this backend last read rowid from in this epoch, or NULL. */
ls_hot_table *
ls_last_read_table(uint64 rowid)
{
	Assert(ls_in_epoch());
	if (ls_read_tbl == NULL || ls_read_epoch != ls_epoch_serial ||
		rowid < ls_read_lo || rowid >= ls_read_hi)
		return NULL;
	return ls_read_tbl;
}

ls_hot_row *
ls_row_get(ls_hot_table *tbl, uint64 rowid)
{
	ls_hot_row *row = ls_hot_row_get(tbl, rowid);
	LsColdTable *ct;

	ls_note_read(tbl, rowid, rowid + 1);
	if (row != NULL || (ct = ls_cold_of(tbl)) == NULL)
		return row;
	row = ls_cold_standin(ct, rowid);
	if (row == NULL)
		return NULL;

	/*
	 * Migrated meanwhile: the hot row is the truth now (it shadows the
	 * image, which may be older than what a writer made of the row).
	 */
	{
		ls_hot_row *hot = ls_hot_row_get(tbl, rowid);

		if (hot != NULL)
			return hot;
	}
	return row;
}

ls_hot_row *
ls_row_get_hinted(ls_hot_table *tbl, uint64 rowid, ls_hot_map_hint *hint)
{
	ls_hot_row *row = ls_hot_row_get_hinted(tbl, rowid, hint);

	ls_note_read(tbl, rowid, rowid + 1);
	if (row != NULL || ls_cold_of(tbl) == NULL)
		return row;
	return ls_row_get(tbl, rowid);
}

ls_hot_row *
ls_row_get_ref(ls_hot_table *tbl, uint64 rowid, LsRowRef *ref)
{
	ls_hot_row *row;

	if (ref->row != NULL &&
		(row = ls_hot_row_from_ref(tbl, rowid, ref->row, ref->serial)) != NULL)
	{
		ls_note_read(tbl, rowid, rowid + 1);
		return row;
	}
	row = ls_hot_row_get_ref(tbl, rowid, &ref->serial);
	ref->row = row;
	if (row != NULL)
		ref->fresh = true;
	ls_note_read(tbl, rowid, rowid + 1);
	if (row != NULL || ls_cold_of(tbl) == NULL)
		return row;
	return ls_row_get(tbl, rowid);
}

/* Does the hot tier hold a row at rowid now (not DEAD)?  Outside epochs. */
bool
ls_hot_has_row(ls_hot_table *tbl, uint64 rowid)
{
	bool		found;

	ls_epoch_enter();
	found = ls_hot_row_get(tbl, rowid) != NULL;
	ls_epoch_exit();
	return found;
}

/*
 * Cold range read: the rows of [lo, hi), at most max, read leaf by leaf
 * under the leaf's shared latch (a consistent snapshot of the leaf, so
 * nothing read there needs validating).  A row the caller's LsColdDirect
 * can take (ls_range_direct) becomes a HeapTuple in the caller's buffer
 * there and then: its one copy.  Any other row is copied as records
 * {rowid, klen, vlen, value} into ls_range_buf and becomes a stand-in after
 * the scan.  The scan stops (cut) before a row for which neither has room.
 * Nothing in the callback may throw (the latch is held).
 */
typedef struct LsRangeRec
{
	uint64		rowid;
	uint32		klen;
	uint32		vlen;
	/* value follows, MAXALIGNed record size */
} LsRangeRec;

/* One row of a range read: built in place (tup), or a stand-in to make. */
typedef struct LsRangeRow
{
	uint64		rowid;
	HeapTuple	tup;			/* NULL: its records are in ls_range_buf */
} LsRangeRow;

typedef struct LsRangeState
{
	uint64		hi;
	uint32		max;
	uint32		rows;
	Size		used;
	bool		cut;			/* stopped early: more rows may lie below hi */
	uint64		cut_at;			/* first rowid not taken */
	bool		bad;
	bool		torn_ok;		/* a row's chunks may be half written (below) */
	bool		cont;			/* continuations of the last row go to the
								 * buffer (it is a stand-in) */
	LsColdDirect *direct;		/* NULL: stand-ins only */
	LsRangeRow *out;			/* max of them */
} LsRangeState;

/*
 * The HeapTuple of a cold image visible beyond doubt, in buf: the image
 * (len bytes, maybe unaligned in the leaf) after the tuple header, xmin
 * hinted committed (and frozen when it is), no xmax, t_ctid = t_self, as
 * ls_version_copy_out makes of such a version.  Touches nothing but buf
 * (the leaf is latched).
 */
static inline HeapTuple
ls_image_tuple(char *buf, const LsColdHead *hdr, const char *payload, Oid relid,
			   uint64 rowid)
{
	HeapTuple	tup = (HeapTuple) buf;
	HeapTupleHeader th = (HeapTupleHeader) (buf + HEAPTUPLESIZE);
	uint32		len = hdr->total_len;
	uint16		mask[2];		/* the image's t_infomask2, t_infomask */

	memcpy(mask, payload + offsetof(MinimalTupleData, t_infomask2), sizeof(mask));
	/*
	 * The payload's first bytes (a compact image's header) land on the
	 * tuple header's cmin and t_ctid, both set below.
	 */
	StaticAssertStmt(MINIMAL_TUPLE_OFFSET + LS_COLD_COMPACT_HEAD <=
					 offsetof(HeapTupleHeaderData, t_infomask2),
					 "the compact header lands before t_infomask2");
	memcpy((char *) th + MINIMAL_TUPLE_OFFSET, payload, len);
	tup->t_len = len + MINIMAL_TUPLE_OFFSET;
	tup->t_tableOid = relid;
	ls_rowid_to_tid(rowid, &tup->t_self);
	tup->t_data = th;
	HeapTupleHeaderSetXmin(th, hdr->xmin);
	HeapTupleHeaderSetXmax(th, InvalidTransactionId);
	th->t_infomask = (mask[1] & ~HEAP_XACT_MASK) | HEAP_XMIN_COMMITTED | HEAP_XMAX_INVALID;
	th->t_infomask2 = mask[0] & ~(HEAP_KEYS_UPDATED | HEAP_HOT_UPDATED | HEAP_ONLY_TUPLE);
	HeapTupleHeaderSetCmin(th, hdr->cmin);
	ls_rowid_to_tid(rowid, &th->t_ctid);
	return tup;
}

/*
 * Build the row of first-chunk entry hdr (vlen bytes) in place when the
 * caller's direct buffer takes it: one chunk, no xmax part, an inserter
 * visible to the caller's snapshot (frozen, or its vis_xid), room left.
 */
static inline HeapTuple
ls_range_direct(LsColdDirect *d, uint64 rowid, const LsColdHead *hdr, const char *val,
				uint32 vlen)
{
	uint32		len = hdr->total_len;
	Size		size;

	if (d == NULL || hdr->xmax != NULL || vlen != hdr->head + len)
		return NULL;
	if (hdr->flags & LS_COLD_FROZEN)
		 /* visible to every MVCC snapshot */ ;
	else if (hdr->xmin == d->vis_xid && TransactionIdIsNormal(hdr->xmin))
		 /* the caller found it visible */ ;
	else if (hdr->xmin == ls_xmin_seen_committed && TransactionIdIsNormal(hdr->xmin) &&
			 NormalTransactionIdPrecedes(hdr->xmin, d->snap_xmin))
		d->vis_xid = hdr->xmin; /* committed before the snapshot was taken */
	else
		return NULL;
	size = MAXALIGN(HEAPTUPLESIZE + MINIMAL_TUPLE_OFFSET + len);
	if (d->used + size > d->cap)
		return NULL;
	d->used += size;
	return ls_image_tuple(d->buf + d->used - size, hdr, val + hdr->head, d->relid, rowid);
}

static bool
ls_range_cb(void *arg, const uint8_t *key, uint32_t klen, const uint8_t *val, uint32_t vlen)
{
	LsRangeState *rs = arg;
	uint64		rowid;
	LsRangeRec *rec;
	Size		size = MAXALIGN(sizeof(LsRangeRec) + vlen);

	if (klen < 8 || key[0] == LS_KEY_DEAD_PREFIX)
		return false;			/* past every rowid key */
	rowid = ls_get_be64(key);
	if (rowid >= rs->hi)
		return false;
	if (klen == 8)
	{
		LsColdHead	h;
		HeapTuple	tup;
		Size		whole;

		if (!ls_cold_decode((const char *) val, vlen, &h))
		{
			rs->bad = true;
			return false;
		}
		if (rs->rows == rs->max)
		{
			rs->cut = true;
			rs->cut_at = rowid;
			return false;
		}
		if ((tup = ls_range_direct(rs->direct, rowid, &h, (const char *) val, vlen)) != NULL)
		{
			rs->out[rs->rows].rowid = rowid;
			rs->out[rs->rows++].tup = tup;
			rs->cont = false;
			return true;
		}
		/* the whole row: first chunk and continuations, with headers */
		whole = MAXALIGN(sizeof(LsRangeRec) + LS_BTREE_MAX_VALUE) *
			(Size) ls_cold_chunks(h.total_len);
		if (rs->used + whole > LS_RANGE_BUF)
		{
			rs->cut = true;
			rs->cut_at = rowid;
			return false;
		}
		rs->out[rs->rows].rowid = rowid;
		rs->out[rs->rows++].tup = NULL;
		rs->cont = true;
	}
	else if (!rs->cont)
	{
		/*
		 * A continuation of a row before lo, or of one built in place; or,
		 * with torn_ok, of an image being rewritten (its first chunk gone
		 * already)
		 */
		if (rs->rows == 0 || rs->torn_ok)
			return true;
		rs->bad = true;			/* that row had one chunk */
		return false;
	}
	rec = (LsRangeRec *) (ls_range_buf + rs->used);
	rec->rowid = rowid;
	rec->klen = klen;
	rec->vlen = vlen;
	memcpy(rec + 1, val, vlen);
	rs->used += size;
	return true;
}

/*
 * This backend's leaf a large range read stopped in (it was read from disk
 * for the read): the next read gives it back once it has moved past it
 * (ls_btree_scan_asc_once).  Frames are pool-wide, so the leaf may be
 * another tree's by then: giving it back is still right (we loaded it and
 * left it); a frame reused meanwhile is recognised by its page id.
 */
static ls_btree_scan_carry ls_range_carry;

/*
 * Set around the range reads of a scan that reads its table once: a
 * sequential scan (SO_ALLOW_STRAT, where heap would take its BULKREAD ring)
 * and VACUUM's first pass (heap's VACUUM ring).  Bitmap, TID range and
 * sample scans, ANALYZE and the rest read as before: a short range read
 * again and again would otherwise read its leaves from disk each time.
 * Cleared at (sub)transaction abort too.
 */
bool		ls_cold_read_once = false;

/*
 * The cold rows of [lo, hi), at most max, in rowid order: rowids[i] and
 * either tups[i] (built in direct's buffer) or, tups[i] NULL, the stand-in
 * out[i]; *hi is lowered when fewer than all could be taken.  Returns how
 * many.
 *
 * The read goes leaf by leaf, and an image of several chunks is written
 * (pack, bulk loads) or rewritten (pack: removed, then appended) one chunk
 * at a time, so the read can meet part of one, or the first chunk of one
 * image with continuations of the next.  Pack writes images only of rows
 * still hot, which a scan takes from the hot tier anyway; a bulk load (or
 * an update made in the cold tier) writes images of its own transaction,
 * invisible to every other one until it commits, after the images are
 * whole.  With torn_xmin (an array of max) such a row comes back with
 * out[i] and tups[i] NULL and torn_xmin[i] the inserter its first chunk names
 * (the caller decides: ls_rows_batch_direct); without (verify, which keeps
 * pack and writers away), it is corruption.
 */
static uint32
ls_cold_range(LsColdTable *ct, uint64 lo, uint64 *hi, ls_hot_row **out,
			  HeapTuple *tups, uint64 *rowids, uint32 max, LsColdDirect *direct,
			  TransactionId *torn_xmin)
{
	LsRangeState rs = {0};
	uint8		start[8];
	ls_status	st;
	Size		off = 0;

	if (lo >= *hi || max == 0)
		return 0;
	if (ls_range_buf == NULL)
		ls_range_buf = MemoryContextAlloc(TopMemoryContext, LS_RANGE_BUF);
	rs.hi = *hi;
	rs.max = max;
	rs.direct = direct;
	rs.torn_ok = torn_xmin != NULL;
	rs.out = ls_standin_alloc(sizeof(LsRangeRow) * max);
	ls_put_be64(start, lo);

	/*
	 * A scan that reads its table once (ls_cold_read_once), of a tree larger
	 * than a quarter of the pool, as heap reads a table larger than a
	 * quarter of shared_buffers through a small ring: the leaves this read
	 * loads go back to the pool as it passes them, instead of pushing the
	 * pool's hot pages out (cold suite).
	 */
	if (ls_cold_read_once &&
		(uint64) ls_bm_dt_blocks(ls_cold->bm, ct->tree.dt_id) > ls_bm_n_frames(ls_cold->bm) / 4)
		st = ls_btree_scan_asc_once(&ct->tree, start, 8, ls_range_cb, &rs, &ls_range_carry);
	else
		st = ls_btree_scan_asc(&ct->tree, start, 8, ls_range_cb, &rs);
	if (st != LS_OK || rs.bad)
		ls_cold_report(st != LS_OK ? st : LS_CORRUPT, &ct->key, "scan");
	if (rs.cut)
		*hi = rs.cut_at;
	for (uint32 i = 0; i < rs.rows; i++)
	{
		LsRangeRec *rec;
		LsColdHead	h;
		ls_hot_row *row;
		ls_hot_version *v;
		uint32		have;

		rowids[i] = rs.out[i].rowid;
		tups[i] = rs.out[i].tup;
		out[i] = NULL;
		if (torn_xmin != NULL)
			torn_xmin[i] = InvalidTransactionId;
		if (tups[i] != NULL)
			continue;
		rec = (LsRangeRec *) (ls_range_buf + off);
		if (off >= rs.used || rec->klen != 8 || rec->rowid != rowids[i] ||
			!ls_cold_decode((const char *) (rec + 1), rec->vlen, &h))
			ls_cold_report(LS_CORRUPT, &ct->key, "scan");
		row = ls_standin_new(rec->rowid, &h);
		v = ls_hot_row_newest(row);
		have = ls_cold_copy_first((char *) v->data, (const char *) (rec + 1), rec->vlen, &h);
		off += MAXALIGN(sizeof(LsRangeRec) + rec->vlen);
		/* continuation chunks follow the row's first entry */
		while (off < rs.used && ((LsRangeRec *) (ls_range_buf + off))->klen != 8)
		{
			LsRangeRec *c = (LsRangeRec *) (ls_range_buf + off);

			if (c->rowid != rec->rowid && torn_xmin != NULL)
				 /* another row's, its first chunk gone: rewritten */ ;
			else if (c->rowid != rec->rowid || have == UINT32_MAX ||
					 have + c->vlen > h.total_len)
				have = UINT32_MAX;	/* another image's chunk: torn */
			else
			{
				memcpy(v->data + have, c + 1, c->vlen);
				have += c->vlen;
			}
			off += MAXALIGN(sizeof(LsRangeRec) + c->vlen);
		}
		if (have == h.total_len)
			out[i] = row;
		else if (torn_xmin == NULL)
			ls_cold_report(LS_CORRUPT, &ct->key, "scan");
		else
			torn_xmin[i] = h.xmin;	/* torn: out[i] and tups[i] stay NULL */
	}
	pg_atomic_fetch_add_u64(&ls_cold->cold_reads, rs.rows);
	return rs.rows;
}

/*
 * Up to max live rows of [*cursor, end) in rowid order, from both tiers
 * (hot first); 0 only when the range holds no row.  *cursor moves past
 * the part of the range covered.  Caller inside an epoch.
 */
uint32
ls_rows_batch(ls_hot_table *tbl, uint64 *cursor, uint64 end, ls_hot_row **rows, uint32 max)
{
	return ls_rows_batch_direct(tbl, cursor, end, rows, NULL, max, NULL);
}

/*
 * ls_rows_batch for a scan with an MVCC snapshot that builds its tuples in
 * direct's buffer: cold rows direct can take come back as tups[i] (rows[i]
 * NULL), built in place and visible; every other row as rows[i] (tups[i]
 * NULL).  A direct row a hot row shadows is dropped (its bytes stay used).
 * direct NULL (tups may be NULL then): ls_rows_batch.
 */
uint32
ls_rows_batch_direct(ls_hot_table *tbl, uint64 *cursor, uint64 end, ls_hot_row **rows,
					 HeapTuple *tups, uint32 max, LsColdDirect *direct)
{
	LsColdTable *ct = ls_cold_of(tbl);
	uint64		lo = *cursor;
	uint64		hc = lo;
	uint64		hi;
	uint32		nh;
	uint32		nc;
	uint32		n = 0;
	uint32		i = 0;
	uint32		j = 0;
	ls_hot_row **hot;
	ls_hot_row **cold;
	HeapTuple  *ctups;
	uint64	   *crowids;
	TransactionId *ctorn;

	Assert(direct == NULL || tups != NULL);
	if (ct == NULL || lo >= end)
	{
		n = lo < end ? ls_hot_scan_batch(tbl, cursor, end, rows, max) : 0;
		if (tups != NULL)
			memset(tups, 0, sizeof(HeapTuple) * n);
		ls_note_read(tbl, lo, *cursor);
		return n;
	}
	hot = ls_standin_alloc((sizeof(ls_hot_row *) * 2 + sizeof(HeapTuple) +
							sizeof(uint64) + sizeof(TransactionId)) * max);
	cold = hot + max;
	ctups = (HeapTuple *) (cold + max);
	crowids = (uint64 *) (ctups + max);
	ctorn = (TransactionId *) (crowids + max);
	nh = ls_hot_scan_batch(tbl, &hc, end, hot, max);
	hi = nh == max ? hot[nh - 1]->rowid + 1 : end;
	nc = ls_cold_range(ct, lo, &hi, cold, ctups, crowids, max, direct, ctorn);
	while (n < max && (i < nh || j < nc))
	{
		ls_hot_row *h = i < nh && hot[i]->rowid < hi ? hot[i] : NULL;

		if (h == NULL && j >= nc)
			break;
		if (j >= nc || (h != NULL && h->rowid <= crowids[j]))
		{
			if (j < nc && crowids[j] == h->rowid)
				j++;			/* the hot row shadows its image */
			if (tups != NULL)
				tups[n] = NULL;
			rows[n++] = h;
			i++;
		}
		else if (cold[j] == NULL && ctups[j] == NULL)
		{
			/*
			 * A torn image no hot row of the batch shadows.  Its inserter
			 * has not committed: another transaction's bulk load (or update
			 * made in the cold tree) is still writing it, or failed in the
			 * middle; no snapshot taken before can see the row: skip it.
			 * Else the row went hot since the hot batch was read and came
			 * back (pack rewrote the image meanwhile), or its writer has
			 * committed since: read it alone (a point read looks hot first,
			 * and an image is whole before its row leaves the hot tier or its
			 * writer commits).
			 */
			ls_hot_row *r = NULL;

			if (!TransactionIdIsNormal(ctorn[j]) ||
				TransactionIdIsCurrentTransactionId(ctorn[j]) ||
				TransactionIdDidCommit(ctorn[j]))
				r = ls_row_get(tbl, crowids[j]);

			if (r != NULL)
			{
				if (tups != NULL)
					tups[n] = NULL;
				rows[n++] = r;
			}
			j++;
		}
		else
		{
			if (tups != NULL)
				tups[n] = ctups[j];
			rows[n++] = cold[j];
			j++;
		}
	}
	if (n == max && (i < nh || j < nc))
		hi = rows[n - 1] != NULL ? rows[n - 1]->rowid + 1 : crowids[j - 1] + 1;
	*cursor = hi;
	ls_note_read(tbl, lo, hi);
	return n;
}

/*
 * leanstore_verify's look at tbl's cold tree.  First the tree's own
 * invariants (ls_btree_verify: keys ordered within and across pages, fences,
 * levels, counts), then every cold row, batch by batch inside an epoch:
 * its rowid lies below the table's rowid limit, it is not a DEAD rowid
 * (VACUUM, which the caller's lock keeps away, takes the DEAD slot and
 * removes the image under one stripe lock), and a hot row of the same
 * rowid is one that came from the image (migrated or cached), never one
 * inserted hot.  cb gets every stand-in (bad NULL: the caller checks the
 * version) and every problem (rowid 0 for the tree as a whole).  Returns
 * the number of cold rows.  The caller keeps writers and pack away
 * (leanstore_verify: ShareLock, ls_cold_hold_pack).
 */
uint64
ls_cold_verify(ls_hot_table *tbl, ls_cold_verify_cb cb, void *arg)
{
	LsColdTable *ct = ls_cold_of(tbl);
	uint64		limit = ls_hot_table_rowid_limit(tbl);
	uint64		cursor = 0;
	uint64		rows = 0;
	char		msg[256];
	ls_btree_info info;

	if (ct == NULL)
		return 0;
	if (ls_btree_verify(&ct->tree, &info, msg, sizeof(msg)) != LS_OK)
	{
		char		what[sizeof(msg) + 16];

		msg[sizeof(msg) - 1] = '\0';
		snprintf(what, sizeof(what), "cold tree: %s", msg);
		cb(arg, LS_ROWID_INVALID, NULL, what);
		return 0;				/* a broken tree is not walked */
	}
	for (;;)
	{
		ls_hot_row *batch[64];
		HeapTuple	tups[lengthof(batch)];
		uint64		rowids[lengthof(batch)];
		uint64		hi = LS_HOT_MAX_ROWID;
		uint32		n;

		CHECK_FOR_INTERRUPTS();
		ls_epoch_enter();
		n = ls_cold_range(ct, cursor, &hi, batch, tups, rowids, lengthof(batch), NULL, NULL);
		for (uint32 i = 0; i < n; i++)
		{
			uint64		rowid = batch[i]->rowid;
			ls_hot_row *hot = ls_hot_row_get(tbl, rowid);

			rows++;
			if (rowid >= limit)
				cb(arg, rowid, NULL, "cold row at or beyond the table's rowid limit");
			else if (ls_hot_rowid_is_dead(tbl, rowid))
				cb(arg, rowid, NULL, "cold row at a DEAD rowid");
			else if (hot != NULL && hot->origin != LS_ORIGIN_MIGRATED &&
					 hot->origin != LS_ORIGIN_CACHED)
				cb(arg, rowid, NULL, "cold row shadowed by a row inserted hot");
			cb(arg, rowid, batch[i], NULL);
		}
		if (n > 0)
			cursor = batch[n - 1]->rowid + 1;
		ls_epoch_exit();
		if (n == 0)
			break;
	}
	return rows;
}

/* ------------------------------------------------------------------------
 * Bulk loads: rows straight into the tree
 * ------------------------------------------------------------------------ */

int			ls_bulk_load_rows = 10000;

/* Rows this backend inserted into one relation in the current transaction. */
static Oid	ls_bulk_relid = InvalidOid;
static TransactionId ls_bulk_xid = InvalidTransactionId;
static uint64 ls_bulk_count = 0;

/*
 * Should this insert go straight to the cold tree?  After
 * leanstore.bulk_load_rows rows of one transaction into one table: a
 * large load would flood the hot tier with rows pack cannot move before
 * they commit.
 */
bool
ls_bulk_cold(Relation rel)
{
	if (ls_cold == NULL || ls_bulk_load_rows <= 0)
		return false;
	if (ls_bulk_relid != RelationGetRelid(rel) || ls_bulk_xid != GetTopTransactionIdIfAny())
	{
		ls_bulk_relid = RelationGetRelid(rel);
		ls_bulk_xid = GetTopTransactionIdIfAny();
		ls_bulk_count = 0;
	}
	return ++ls_bulk_count > (uint64) ls_bulk_load_rows;
}

/*
 * May a write of rel go to the cold tree when the hot tier is full?  Not
 * when the user keeps every write hot (leanstore.bulk_load_rows = 0): those
 * get "hot tier is full".
 */
bool
ls_cold_can_write(Relation rel)
{
	(void) rel;
	return ls_cold != NULL && ls_bulk_load_rows > 0;
}

/* The same for a delete or an update (leanstore.cold_writes = off: never). */
bool
ls_cold_rewrite_allowed(Relation rel)
{
	return ls_cold_writes != LS_CW_OFF && ls_cold_can_write(rel);
}

/*
 * The hot tier was full for a write that then went to the cold tree:
 * remembered for the rest of this transaction, and (for a second) for
 * every backend, so that writes of cold rows stop migrating them into the
 * full tier (ls_cold_write_due).
 */
static TransactionId ls_full_xid = InvalidTransactionId;

void
ls_cold_note_full(void)
{
	ls_full_xid = GetTopTransactionIdIfAny();
	pg_atomic_write_u64(&ls_cold->full_at, (uint64) GetCurrentTimestamp());
	pg_atomic_fetch_add_u64(&ls_cold->full_spills, 1);
}

bool
ls_cold_full_seen(void)
{
	uint64		at;

	if (TransactionIdIsValid(ls_full_xid) && ls_full_xid == GetTopTransactionIdIfAny())
		return true;
	at = pg_atomic_read_u64(&ls_cold->full_at);
	return at != 0 &&
		!TimestampDifferenceExceeds((TimestampTz) at, GetCurrentTransactionStartTimestamp(), 1000);
}

/*
 * v (payload, xmin, cmin) becomes the image of rowid, a fresh rowid (no
 * image to replace: appended at once), and is logged.  Caller holds
 * tree_lock shared.
 */
static ls_status
ls_cold_append(LsColdTable *ct, ls_hot_table *tbl, uint64 rowid, ls_hot_version *v)
{
	uint64		xmin_word = atomic_load(&v->xmin_word);
	bool		frozen = (ls_hv_flags(xmin_word) & LS_HV_XMIN_FROZEN) != 0;
	ls_status	st;

	st = ls_cold_put(&ct->tree, rowid, (const char *) v->data, v->len,
					 ls_hv_xid(xmin_word), v->cmin, frozen, true);
	if (st == LS_OK)
		ls_log_cold_put(tbl, rowid, (const char *) v->data, v->len,
						ls_hv_xid(xmin_word), frozen);
	return st;
}

/*
 * tbl's tree (made when it has none yet), before images of inserter xmin
 * go into it: xmin reaches PostgreSQL's WAL first, so that it is never
 * handed out again.  A rewrite (CLUSTER) also copies rows of older
 * transactions: their xids are in the WAL before the rewrite's commit
 * record, and the new storage outlives a crash only if that commit does.
 */
static LsColdTable *
ls_cold_for_load(ls_hot_table *tbl, TransactionId xmin)
{
	LsColdTable *ct = ls_cold_of(tbl);

	if (ct == NULL)
	{
		LWLockAcquire(ls_cold->adopt_lock, LW_EXCLUSIVE);
		ct = ls_cold_ensure(tbl, ERROR);
		LWLockRelease(ls_cold->adopt_lock);
	}
	if (TransactionIdIsCurrentTransactionId(xmin))
		ls_log_bulk_xid(tbl, xmin);
	return ct;
}

/*
 * Insert v (a new version: payload, xmin, cmin; the caller frees it) as
 * rowid's image.  The rowid is fresh: no hot row, no image, nobody else writes it.
 * Outside epochs.
 */
void
ls_cold_insert(Relation rel, ls_hot_table *tbl, uint64 rowid, ls_hot_version *v)
{
	TransactionId xmin = ls_hv_xid(atomic_load(&v->xmin_word));
	LsColdTable *ct = ls_cold_for_load(tbl, xmin);
	ls_status	st;

	ls_tree_share();
	st = ls_cold_append(ct, tbl, rowid, v);
	LWLockRelease(ls_cold->tree_lock);
	if (st != LS_OK)
		ls_cold_report(st, &ct->key, "insert into");
	ls_cold_raise_end(ct, rowid);
	ls_debug_crash("bulk-load");
}

/*
 * INSERT ... ON CONFLICT's speculative insert when the hot tier is full:
 * v (the caller frees it) becomes rowid's image with an xmax part that
 * carries the token (LS_COLD_SPEC), so that a stand-in read from it is
 * speculative as the hot version would be, and conflict checks wait for
 * the token.  Logged as a plain insert: replay applies it only if the
 * inserter committed, and a killed insert logs its tombstone
 * (ls_cold_complete_speculative).  Outside epochs.
 */
void
ls_cold_insert_speculative(Relation rel, ls_hot_table *tbl, uint64 rowid,
						   ls_hot_version *v, uint32 token)
{
	LsColdTable *ct;
	TransactionId xmin = ls_hv_xid(atomic_load(&v->xmin_word));
	LsColdXmax	x = ls_cold_xmax_part(0, InvalidCommandId, (uint64) token);
	ls_status	st;

	ct = ls_cold_for_load(tbl, xmin);
	ls_tree_share();
	st = ls_cold_put_x(&ct->tree, rowid, (const char *) v->data, v->len, xmin, v->cmin,
					   LS_COLD_SPEC, &x, true);
	if (st == LS_OK)
		ls_log_cold_put(tbl, rowid, (const char *) v->data, v->len, xmin, false);
	LWLockRelease(ls_cold->tree_lock);
	if (st != LS_OK)
		ls_cold_report(st, &ct->key, "insert into");
	ls_cold_raise_end(ct, rowid);
}

/*
 * Confirm or kill a speculative insert whose image is in the cold tree
 * (ls_cold_insert_speculative): confirmed, the image loses its xmax part;
 * killed, it is marked aborted whatever clog will say of its xid
 * (LS_COLD_ABORTED: invisible at once to every snapshot, as heap's
 * cleared xmin makes it), and a tombstone is logged (replay after a commit
 * must not bring it back); VACUUM removes the image.  Returns
 * the killed row (palloc'd, for its TOAST values), else NULL.  false in
 * *found when rowid has no such image.  Outside epochs.
 */
HeapTuple
ls_cold_complete_speculative(Relation rel, ls_hot_table *tbl, uint64 rowid,
							 bool succeeded, bool *found)
{
	LsColdTable *ct = ls_cold_of(tbl);
	ls_hot_row *standin;
	HeapTuple	killed = NULL;
	ls_status	st = LS_OK;

	*found = false;
	if (ct == NULL)
		return NULL;
	if ((standin = ls_cold_only_begin(ct, tbl, rowid)) != NULL)
	{
		ls_hot_version *v = ls_hot_row_newest(standin);

		if (atomic_load(&v->user_flags) & LS_UF_SPECULATIVE)
		{
			TransactionId xid = ls_hv_xid(atomic_load(&v->xmin_word));

			*found = true;
			atomic_store(&v->user_flags, 0);
			atomic_store(&v->next_rowid, LS_ROWID_INVALID);
			if (succeeded)
				st = ls_cold_restamp(ct, rowid, v, false, NULL);
			else
			{
				/* keeps an (empty) xmax part: scans never build it in place */
				LsColdXmax	x = ls_cold_xmax_part(0, InvalidCommandId, LS_ROWID_INVALID);
				Size		size = ls_heaptuple_size(v, rel);

				killed = ls_version_to_heaptuple(v, rel, rowid, palloc(size), size);
				atomic_fetch_or(&v->xmin_word, ((uint64) LS_HV_XMIN_ABORTED) << 32);
				st = ls_cold_restamp(ct, rowid, v, false, &x);
				if (st == LS_OK)
					ls_log_cold_tomb(tbl, rowid, xid);
			}
		}
	}
	ls_cold_only_end(rowid);
	if (st != LS_OK)
		ls_cold_report(st, &ct->key, "insert into");
	return killed;
}

/*
 * A bulk load's batch (ls_multi_insert): tups[i] (heap form, after TOAST)
 * becomes the image of rowids[i], fresh rowids in ascending order, all with
 * inserter xmin (frozen or not) and cmin.  The images are built outside the
 * locks; then, under tree_lock shared, runs of one-chunk images go in with
 * ls_btree_append_batch (one latch of the rightmost leaf for as many as it
 * holds) and each run is logged as one LS_LR_PUTS record right after it,
 * still under tree_lock, as ls_cold_append logs one image; an image of
 * several chunks goes in and is logged alone.  Outside epochs.
 */
void
ls_cold_load(Relation rel, ls_hot_table *tbl, int n, const uint64 *rowids,
			 HeapTuple *tups, TransactionId xmin, CommandId cmin, bool frozen)
{
	LsColdTable *ct;
	uint32	   *lens;
	const char **payloads;
	ls_btree_kv *kv;
	uint8	   *keys;
	char	   *arena;
	char	   *pos;
	Size		total = 0;
	ls_status	st;
	int			i;

	if (n <= 0)
		return;
	lens = palloc(n * sizeof(uint32));
	payloads = palloc(n * sizeof(char *));
	kv = palloc(n * sizeof(ls_btree_kv));
	keys = palloc(n * 8);
	for (i = 0; i < n; i++)
	{
		lens[i] = ls_payload_len(tups[i]);
		total += MAXALIGN(lens[i]);
	}
	arena = pos = palloc(total);
	for (i = 0; i < n; i++)
	{
		/* one-chunk images are compact: the payload under its header */
		payloads[i] = pos;
		ls_payload_from_heaptuple(tups[i], pos, lens[i]);
		kv[i].key = keys + 8 * i;
		kv[i].klen = ls_cold_key(keys + 8 * i, rowids[i], 0);
		kv[i].val = pos;
		kv[i].vlen = lens[i];
		if (!ls_cold_slotted(lens[i]))
			ls_cold_compact_stamp(pos, frozen ? LS_COLD_FROZEN : 0, xmin, cmin);
		pos += MAXALIGN(lens[i]);
	}

	ct = ls_cold_for_load(tbl, xmin);
	ls_tree_share();
	st = ls_cold_touch(ct);
	i = 0;
	while (st == LS_OK && i < n)
	{
		int			m = 0;
		uint32		bytes = 0;
		uint32		done = 0;

		if (ls_cold_slotted(lens[i]))
		{
			st = ls_cold_put(&ct->tree, rowids[i], payloads[i], lens[i], xmin, cmin,
							 frozen, true);
			if (st == LS_OK)
			{
				ls_log_cold_put(tbl, rowids[i], payloads[i], lens[i], xmin, frozen);
				i++;
			}
			continue;
		}
		/* a run of one-chunk images that one log record holds */
		while (i + m < n && !ls_cold_slotted(lens[i + m]) &&
			   bytes + LS_LOG_PUT_HEAD + lens[i + m] <= LS_LOG_PUTS_MAX)
		{
			bytes += LS_LOG_PUT_HEAD + lens[i + m];
			m++;
		}
		st = ls_btree_append_batch(&ct->tree, kv + i, (uint32) m, &done);
		if (done > 0)
		{
			/* the log takes the payloads: t_len back over the header */
			for (uint32 k = 0; k < done; k++)
				ls_cold_payload_fix((char *) payloads[i + k], lens[i + k]);
			pg_atomic_fetch_add_u64(&ct->rows, done);
			ls_log_cold_puts(tbl, (int) done, rowids + i, payloads + i, lens + i, xmin,
							 frozen);
		}
		i += (int) done;
	}
	LWLockRelease(ls_cold->tree_lock);
	/* the images that went in count before an error, as row by row */
	if (i > 0)
		ls_cold_raise_end(ct, rowids[i - 1]);
	if (st != LS_OK)
		ls_cold_report(st, &ct->key, "insert into");
	ls_debug_crash("bulk-load");
	pfree(lens);
	pfree(payloads);
	pfree(kv);
	pfree(keys);
	pfree(arena);
}

/*
 * Write the first chunk of rowid's image again, for v (a stand-in read
 * under the same locks, or the version this transaction just inserted):
 * same payload, the inserter frozen or not, with or without an xmax part.
 * Replaces the value in place, so that a reader finds the old image or the
 * new one, never none (a remove and an append would leave a gap).
 * Continuation chunks stay: a one-chunk image stays one chunk, and a
 * slotted one keeps its first chunk's payload (see "Chunk layout"); a long
 * image without a slot cannot take an xmax part (callers check
 * ls_cold_stampable; found here, it is LS_CORRUPT).
 */
static ls_status
ls_cold_restamp(LsColdTable *ct, uint64 rowid, ls_hot_version *v, bool frozen,
				const LsColdXmax *x)
{
	uint8		key[LS_COLD_KEY_MAX];
	char		val[LS_BTREE_MAX_VALUE];
	uint16		flags = frozen ? LS_COLD_FROZEN : 0;
	uint32		first;
	uint32		vlen;
	ls_status	st;

	Assert(v->len >= SizeofMinimalTupleHeader && v->len <= LS_HOT_MAX_PAYLOAD);
	st = ls_cold_touch(ct);
	if (st != LS_OK)
		return st;
	if (ls_cold_slotted(v->len))
	{
		/* the image's first chunk must be slotted too */
		st = ls_btree_lookup(&ct->tree, key, ls_cold_key(key, rowid, 0), val, sizeof(val),
							 &vlen);
		if (st != LS_OK)
			return st;
		if (vlen != LS_BTREE_MAX_VALUE || ((LsColdRow *) val)->total_len != v->len)
			return LS_CORRUPT;
		if (!(((LsColdRow *) val)->flags & LS_COLD_XMAX))
		{
			LsColdRow  *hdr = (LsColdRow *) val;

			/* the older layout: its payload stays where it is, no xmax */
			if (x != NULL)
				return LS_CORRUPT;
			hdr->flags = flags;
			hdr->xmin = ls_hv_xid(atomic_load(&v->xmin_word));
			hdr->cmin = v->cmin;
			return ls_btree_update(&ct->tree, key, ls_cold_key(key, rowid, 0), val, vlen);
		}
	}
	if (x != NULL && (atomic_load(&v->user_flags) & LS_UF_SPECULATIVE))
		flags |= LS_COLD_SPEC;
	if (x != NULL && (ls_hv_flags(atomic_load(&v->xmin_word)) & LS_HV_XMIN_ABORTED))
		flags |= LS_COLD_ABORTED;
	vlen = ls_cold_first_chunk(val, (const char *) v->data, v->len, flags,
							   ls_hv_xid(atomic_load(&v->xmin_word)), v->cmin, x, &first);
	return ls_btree_update(&ct->tree, key, ls_cold_key(key, rowid, 0), val, vlen);
}

/*
 * May rowid's image, read as stand-in version v, take an xmax part in
 * place?  One chunk, or slotted (not a long image of an older layout).
 */
static bool
ls_cold_stampable(ls_hot_version *v)
{
	return !ls_cold_slotted(v->len) ||
		(atomic_load(&v->user_flags) & LS_UF_COLD_SLOT) != 0;
}

/*
 * Take rowid for a change of its image alone: tree_lock shared (a
 * checkpoint sees the change and its log record together, or neither),
 * then its stripe (pack and migration), then an epoch.  Returns its
 * stand-in when the row lives only in the cold tier (no hot row shadows
 * the image, the rowid is not DEAD), else NULL.  ls_cold_only_end undoes
 * the three.
 */
static ls_hot_row *
ls_cold_only_begin(LsColdTable *ct, ls_hot_table *tbl, uint64 rowid)
{
	ls_tree_share();
	LWLockAcquire(ls_row_stripe(rowid), LW_EXCLUSIVE);
	ls_epoch_enter();
	if (ls_hot_row_get(tbl, rowid) != NULL || ls_hot_rowid_is_dead(tbl, rowid))
		return NULL;
	return ls_cold_standin(ct, rowid);
}

static void
ls_cold_only_end(uint64 rowid)
{
	ls_epoch_exit();
	LWLockRelease(ls_row_stripe(rowid));
	LWLockRelease(ls_cold->tree_lock);
}

/*
 * What VACUUM does with a cold image's xmax part (ls_cold_delete's).
 */
typedef enum LsColdXmaxFate
{
	LS_CX_NONE,					/* no xmax part */
	LS_CX_KEEP,					/* its writer runs, or some snapshot may still
								 * see the row */
	LS_CX_CLEAR,				/* aborted writer or finished lockers: drop it */
	LS_CX_REMOVE,				/* committed before every snapshot: the row goes */
	LS_CX_SETTLE,				/* as KEEP, but the word is a multixact of a
								 * committed update: make it the plain
								 * updater once no locker runs */
} LsColdXmaxFate;

static LsColdXmaxFate
ls_cold_xmax_fate(ls_hot_version *v, TransactionId oldest_xmin)
{
	LsVersionInfo info;
	LsXidStatus xs;

	if (atomic_load(&v->xmax_word) == 0)
		return LS_CX_NONE;
	ls_version_info(v, &info);
	xs = ls_xmax_status(v, &info);
	if (xs == LS_XS_CURRENT || xs == LS_XS_IN_PROGRESS)
		return LS_CX_KEEP;
	/* an aborted update beside lockers: their locks stay while one runs */
	if (xs == LS_XS_ABORTED && (info.xmax_flags & LS_HV_XMAX_IS_MULTI) &&
		!ls_xmax_is_lock_only(&info) && MultiXactIdIsRunning(info.xmax_multi, false))
		return LS_CX_KEEP;
	if (xs == LS_XS_ABORTED || ls_xmax_is_lock_only(&info))
		return LS_CX_CLEAR;
	/* removal is for good after a crash: not before the commit is durable */
	if (TransactionIdPrecedes(info.xmax, oldest_xmin) && ls_xid_commit_durable(info.xmax))
		return LS_CX_REMOVE;
	/*
	 * No multixact that nobody runs in may stay behind the relminmxid VACUUM
	 * reports (ls_xmax_settle, as for hot versions)
	 */
	return (info.xmax_flags & LS_HV_XMAX_IS_MULTI) ? LS_CX_SETTLE : LS_CX_KEEP;
}

/*
 * VACUUM, for a cold row whose inserter clog decides (a bulk load) or that
 * carries an xmax part (a delete made in the cold tier): an aborted insert
 * or a delete committed before oldest_xmin leaves (image removed, rowid
 * DEAD for index cleanup); an aborted delete's xmax is dropped; a
 * committed inserter older than oldest_xmin and freeze_limit is frozen,
 * unless a delete still pending keeps the image as it is (a rewrite is
 * logged as a PUT, which replay would apply after that delete's
 * tombstone).  Outside epochs.  Returns what the row is now: LS_V_DEAD
 * (removed), LS_V_LIVE, LS_V_RECENTLY_DEAD or LS_V_INSERT_IN_PROGRESS;
 * *kept_xmin is an unfrozen xmin the image keeps (else invalid).  A
 * removable image stays when its DEAD slot finds no hot memory even after
 * ls_cold_relieve: LS_V_RECENTLY_DEAD, and *kept_xmin is the older of its
 * xmin and its deleter's xid, which a later VACUUM still has to read.
 */
LsVacuumState
ls_cold_settle(ls_hot_table *tbl, uint64 rowid, TransactionId oldest_xmin,
			   TransactionId freeze_limit, TransactionId *kept_xmin)
{
	LsColdTable *ct = ls_cold_of(tbl);
	ls_hot_row *standin;
	LsVacuumState res;
	bool		relieved = false;

	if (ct == NULL)
	{
		*kept_xmin = InvalidTransactionId;
		return LS_V_LIVE;
	}
again:
	res = LS_V_LIVE;
	*kept_xmin = InvalidTransactionId;
	if ((standin = ls_cold_only_begin(ct, tbl, rowid)) != NULL)
	{
		ls_hot_version *v = ls_hot_row_newest(standin);
		uint64		w = atomic_load(&v->xmin_word);
		TransactionId xmin = ls_hv_xid(w);
		bool		frozen = (ls_hv_flags(w) & LS_HV_XMIN_FROZEN) != 0;
		bool		remove = false;
		bool		rewrite = false;
		bool		settle = false;
		ls_status	st = LS_OK;

		if (ls_hv_flags(w) & LS_HV_XMIN_ABORTED)
			remove = true;		/* a killed speculative insert */
		else if (!frozen &&
				 (TransactionIdIsCurrentTransactionId(xmin) || ls_xid_in_progress(xmin)))
			res = LS_V_INSERT_IN_PROGRESS;
		else if (!frozen && !TransactionIdDidCommit(xmin))
			remove = true;
		else
		{
			bool		freeze = !frozen && TransactionIdPrecedes(xmin, oldest_xmin) &&
				TransactionIdPrecedes(xmin, freeze_limit) && ls_xid_commit_durable(xmin);

			switch (ls_cold_xmax_fate(v, oldest_xmin))
			{
				case LS_CX_NONE:
					rewrite = freeze;
					break;
				case LS_CX_CLEAR:
					rewrite = true;
					break;
				case LS_CX_REMOVE:
					remove = true;
					break;
				case LS_CX_SETTLE:
					settle = true;
					/* FALLTHROUGH */
				case LS_CX_KEEP:
					res = LS_V_RECENTLY_DEAD;
					freeze = false;
					break;
			}
			frozen = frozen || freeze;
			if (!frozen && !remove)
				*kept_xmin = xmin;
		}
		if (remove)
		{
			/*
			 * The DEAD slot first: it needs hot memory, the removal does
			 * not, and a rowid must never hold neither an image nor a DEAD
			 * slot (its index entries would point at nothing that VACUUM
			 * knows of, and the block could be marked all-visible).  Until
			 * the image is gone the slot shadows it; the image is dead to
			 * every snapshot anyway.
			 */
			st = ls_adopt_dead(tbl, rowid);
			if (st == LS_OK)
			{
				st = ls_cold_remove(&ct->tree, rowid);
				if (st == LS_OK)
					ls_log_cold_remove(tbl, rowid);
				else
					ls_hot_rowid_forget(ls_ctx(), tbl, rowid);
				res = LS_V_DEAD;
			}
			else if ((st == LS_NO_SPACE || st == LS_NO_MEMORY) && !relieved)
			{
				/* pack what may go, outside every lock, and judge again */
				ls_cold_only_end(rowid);
				ls_cold_relieve();
				relieved = true;
				goto again;
			}
			else if (st == LS_NO_SPACE || st == LS_NO_MEMORY)
			{
				/*
				 * Still no room: the image stays for a later VACUUM, which
				 * needs its xids (the deleter's too) to stay readable.
				 */
				LsVersionInfo info;
				TransactionId xmax;

				ls_version_info(v, &info);
				xmax = info.xmax;
				res = LS_V_RECENTLY_DEAD;
				if (!frozen)
					*kept_xmin = xmin;
				if (TransactionIdIsNormal(xmax) &&
					(!TransactionIdIsValid(*kept_xmin) ||
					 TransactionIdPrecedes(xmax, *kept_xmin)))
					*kept_xmin = xmax;
				st = LS_OK;
			}
		}
		else if (rewrite)
		{
			/* the image again without an xmax part (frozen when it may be) */
			st = ls_cold_restamp(ct, rowid, v, frozen, NULL);
			if (st == LS_OK)
				ls_log_cold_put(tbl, rowid, (const char *) v->data, v->len, xmin, frozen);
		}
		else if (settle)
		{
			uint64		word = atomic_load(&v->xmax_word);
			uint64		settled = ls_xmax_settle(word);

			/*
			 * Not logged: the update's tombstone is, and replay removes the
			 * image after its commit
			 */
			if (settled != word)
			{
				LsColdXmax	x = ls_cold_xmax_part(settled, atomic_load(&v->cmax),
												  atomic_load(&v->next_rowid));

				st = ls_cold_restamp(ct, rowid, v, frozen, &x);
			}
		}
		if (st != LS_OK)
		{
			ls_cold_only_end(rowid);
			ls_cold_report(st, &ct->key, "vacuum");
		}
	}
	ls_cold_only_end(rowid);
	return res;
}

/* ------------------------------------------------------------------------
 * Writes in the cold tier: large deletes
 * ------------------------------------------------------------------------ */

int			ls_cold_writes = LS_CW_AUTO;

/* Cold rows this backend wrote in one relation in the current transaction. */
static Oid	ls_cw_relid = InvalidOid;
static TransactionId ls_cw_xid = InvalidTransactionId;
static uint64 ls_cw_count = 0;
static bool ls_cw_pressure = false;	/* auto: last look at the tier's fill */

/*
 * Is the image's xmax a lock this very (sub)transaction took in the cold
 * tier (ls_cold_lock_row, or an update's first half)?  Only the same xid
 * counts: a lock of a subtransaction that later aborts must not be written
 * over by its parent, nor the other way round.
 */
static bool
ls_cold_own_lock(const LsVersionInfo *info)
{
	TransactionId cur = GetCurrentTransactionIdIfAny();

	return (info->xmax_flags & LS_HV_XMAX_LOCK_ONLY) &&
		!(info->xmax_flags & LS_HV_XMAX_IS_MULTI) &&
		TransactionIdIsValid(cur) && TransactionIdEquals(info->xmax, cur);
}

/*
 * Does a member of multi other than this transaction still run?  (An
 * image's multixact: share lockers that ls_lock_in_cold merged, or lockers
 * and the update of an update made in the cold tier beside FOR KEY SHARE
 * lockers; lock_only says which kind.)  *holder: such a member, one whose
 * lock conflicts with a request for mode when there is one (mode -1: the
 * first); a waiter then waits for what stops it, not for a locker it could
 * share the row with.  May read the multixact SLRU: inside an epoch as
 * readers do.
 */
static bool
ls_cold_multi_holder(MultiXactId multi, bool lock_only, int mode, TransactionId *holder)
{
	MultiXactMember *m = NULL;
	int			n = GetMultiXactIdMembers(multi, &m, false, lock_only);
	bool		found = false;
	bool		conflicts = false;

	for (int i = 0; i < n && !conflicts; i++)
	{
		if (!TransactionIdIsCurrentTransactionId(m[i].xid) &&
			ls_xid_in_progress(m[i].xid))
		{
			conflicts = mode >= 0 && ls_status_conflicts(m[i].status, (LockTupleMode) mode);
			if (!found || conflicts)
				*holder = m[i].xid;
			found = true;
		}
	}
	if (m != NULL)
		pfree(m);
	return found;
}

/*
 * Does multi stop a plain write of this (sub)transaction in the cold tier?
 * It does while a member of another transaction runs, and while a lock of
 * another level of ours is in it (a parent's, or a subtransaction's that
 * was released into an enclosing level): a plain write puts its own word
 * in, and that lock would be gone after a ROLLBACK TO undoes the write.
 * The merging path keeps it instead (an expect word: ls_cold_merge_word).
 */
static bool
ls_cold_multi_blocks_plain(MultiXactId multi, bool lock_only)
{
	TransactionId cur = GetCurrentTransactionIdIfAny();
	TransactionId holder;
	MultiXactMember *m = NULL;
	int			n;
	bool		found = false;

	if (ls_cold_multi_holder(multi, lock_only, -1, &holder))
		return true;
	n = GetMultiXactIdMembers(multi, &m, false, lock_only);
	for (int i = 0; i < n && !found; i++)
		found = !ISUPDATE_from_mxstatus(m[i].status) &&
			!TransactionIdEquals(m[i].xid, cur) &&
			TransactionIdIsCurrentTransactionId(m[i].xid);
	if (m != NULL)
		pfree(m);
	return found;
}

/*
 * Does the xmax word of info hold a lock of this very (sub)transaction,
 * alone or as a member of a multixact?  (ls_cold_own_lock for one xid.)
 */
static bool
ls_cold_word_has_own(const LsVersionInfo *info)
{
	TransactionId cur = GetCurrentTransactionIdIfAny();
	MultiXactMember *m = NULL;
	bool		found = false;
	int			n;

	if (!(info->xmax_flags & LS_HV_XMAX_IS_MULTI))
		return ls_cold_own_lock(info);
	if (!TransactionIdIsValid(cur))
		return false;
	n = GetMultiXactIdMembers(info->xmax_multi, &m, false, ls_xmax_is_lock_only(info));
	for (int i = 0; i < n && !found; i++)
		found = TransactionIdEquals(m[i].xid, cur) && !ISUPDATE_from_mxstatus(m[i].status);
	if (m != NULL)
		pfree(m);
	return found;
}

/* Strength of a single locker's lock-only flags (heap's LockTupleMode order). */
static int
ls_cold_lock_rank(uint32 flags)
{
	if (flags & LS_HV_XMAX_KEYS_UPDATED)
		return 3;				/* FOR UPDATE */
	if ((flags & LS_HV_XMAX_EXCL_LOCK) && (flags & LS_HV_XMAX_KEYSHR_LOCK))
		return 1;				/* FOR SHARE */
	if (flags & LS_HV_XMAX_EXCL_LOCK)
		return 2;				/* FOR NO KEY UPDATE */
	return 0;					/* FOR KEY SHARE */
}

/*
 * May v, a stand-in's version, get this transaction's xmax in place?  Its
 * inserter committed, is not us and is seen by snapshot; no other xmax
 * still counts (none, an aborted writer, lockers that are gone).  Anything
 * else -- our own earlier change, a running locker or writer, a committed
 * delete or update -- is the migrating path's to judge, wait for and
 * report.  One exception: while the hot tier is full (ls_cold_full_seen)
 * an image this transaction wrote in an earlier command (an update that
 * found the tier full moved its row there) may be written again: the
 * image keeps cmin in its header and cmax in its xmax part, so our later
 * commands judge it as they would a hot version, and an abort of either
 * writer is clog's to decide.
 *
 * prior (a FOR KEY SHARE lock following a running update to its new
 * version, heap's follow_updates): v must be that updater's version, and
 * is the target whether snapshot sees it or not (ls_check_row's
 * prior_xmax).
 */
static bool
ls_cold_plain_target(ls_hot_version *v, Snapshot snapshot, uint64 expect,
					 TransactionId prior)
{
	LsVersionInfo info;
	bool		seen;

	ls_version_info(v, &info);
	if (TransactionIdIsValid(prior))
	{
		LsXidStatus ins;

		if (!TransactionIdEquals(info.xmin, prior))
			return false;
		ins = ls_xmin_status(v, &info);
		seen = (ins == LS_XS_IN_PROGRESS || ins == LS_XS_COMMITTED);
	}
	else
	{
		if (!(info.xmin_flags & LS_HV_XMIN_FROZEN) &&
			TransactionIdIsCurrentTransactionId(info.xmin) && !ls_cold_full_seen())
			return false;
		seen = ls_version_visible(v, snapshot);
	}
	/*
	 * lockers the caller judged compatible and merged with its own lock (a
	 * lock of ours among them: we judged the row when we took it)
	 */
	if (expect != 0 && info.xmax_raw == expect)
		return ls_cold_word_has_own(&info) || seen;
	if (info.xmax_raw != 0)
	{
		LsXidStatus xs;

		if (info.xmax_flags & LS_HV_XMAX_IS_MULTI)
		{
			bool		lock_only = ls_xmax_is_lock_only(&info);

			/*
			 * An update beside lockers counts unless its updater aborted;
			 * lockers count while one of them (not us) runs
			 */
			if (!lock_only && ls_xmax_status(v, &info) != LS_XS_ABORTED)
				return false;
			if (ls_cold_multi_blocks_plain(info.xmax_multi, lock_only))
				return false;
			return seen;
		}
		if (ls_cold_own_lock(&info))
			return true;		/* we judged it when we locked it */
		xs = ls_xmax_status(v, &info);
		if (xs == LS_XS_CURRENT || xs == LS_XS_IN_PROGRESS)
			return false;
		if (xs == LS_XS_COMMITTED && !ls_xmax_is_lock_only(&info))
			return false;
	}
	return seen;
}

/*
 * Should this write of rowid (a delete, or an update's lock) be made in the
 * cold tier?  Every write of a cold row migrates it into the hot tier
 * first, where it stays until its writer ends: a DELETE or UPDATE of more
 * rows than the hot tier holds would fail with "hot tier is full".  So
 * once a transaction has written leanstore.bulk_load_rows cold rows of one
 * table (the insert side's threshold), further writes of cold rows are
 * made in their images -- with leanstore.cold_writes = auto only while the
 * hot tier is filled above leanstore.pack_threshold (pack cannot keep up)
 * or the transaction's own migrated rows would take an eighth of it:
 * migrating is faster while there is room (bench/cold_write.sh: an UPDATE
 * of 500k cold rows took 0.84 of heap's time migrating, 2.3 in the cold
 * tier).  The fill is looked at every 256 rows (it sums every context's
 * counters).  Counts the cold rows written.
 */
static bool
ls_cold_write_due(Relation rel, ls_hot_table *tbl, uint64 rowid)
{
	if (ls_cold_of(tbl) == NULL || ls_bulk_load_rows <= 0 ||
		ls_cold_writes == LS_CW_OFF)
		return false;
	if (ls_hot_has_row(tbl, rowid))
		return false;
	/* migrating would need room the hot tier had not a moment ago */
	if (ls_cold_full_seen())
		return true;
	if (ls_cw_relid != RelationGetRelid(rel) || ls_cw_xid != GetTopTransactionIdIfAny())
	{
		ls_cw_relid = RelationGetRelid(rel);
		ls_cw_xid = GetTopTransactionIdIfAny();
		ls_cw_count = 0;
	}
	if (++ls_cw_count <= (uint64) ls_bulk_load_rows)
		return false;
	if (ls_cold_writes == LS_CW_ALWAYS)
		return true;
	if ((ls_cw_count - (uint64) ls_bulk_load_rows) % 256 == 1)
	{
		uint64		used;
		uint64		heap;

		/*
		 * The tier is filled above the threshold, or this transaction's
		 * migrated rows of the table (at an assumed 256 bytes each) would
		 * take an eighth of it: allocations can fail before the fill says
		 * so (free memory of other size classes), and hotfull's UPDATE of
		 * 150k rows failed at 38% with the fill alone.
		 */
		ls_hot_get_fill(ls_shared_hot(), &used, &heap);
		ls_cw_pressure = ls_hot_fill_over(used, heap, ls_pack_threshold) ||
			ls_cw_count * 256 > heap / 8;
	}
	return ls_cw_pressure;
}

/*
 * Give rowid's image the xmax part x (this transaction, xid) when the row
 * is cold only, the case is plain (ls_cold_plain_target) and the image can
 * take an xmax part (ls_cold_stampable).  false: nothing done, take the
 * migrating path.  On true,
 * *oldtup is the row (palloc'd); with tomb, the delete is logged.
 *
 * Durability: a tombstone is logged now, under tree_lock with the image
 * change (a checkpoint sees both or neither); replay applies it only if
 * the deleter committed, and until then clog decides for the image, whose
 * xid must therefore be in PostgreSQL's WAL (ls_log_bulk_xid), as a bulk
 * load's is.  A lock needs no record: a crash ends its holder.  Outside
 * epochs.
 */
static bool
ls_cold_stamp_due(Relation rel, ls_hot_table *tbl, uint64 rowid, TransactionId xid,
				  Snapshot snapshot, Snapshot crosscheck, uint64 expect, TransactionId prior,
				  const LsColdXmax *x, bool tomb, HeapTuple *oldtup,
				  Snapshot shown_to, bool *newer, uint64 *stamped)
{
	LsColdTable *ct = ls_cold_of(tbl);
	ls_hot_row *standin;
	ls_status	st = LS_OK;
	bool		done = false;

	*oldtup = NULL;
	ls_log_bulk_xid(tbl, xid);
	ls_log_multi_durable(tbl, x->xmax_word);
	if ((standin = ls_cold_only_begin(ct, tbl, rowid)) != NULL)
	{
		ls_hot_version *v = ls_hot_row_newest(standin);

		if (ls_cold_stampable(v) && ls_cold_plain_target(v, snapshot, expect, prior) &&
			(crosscheck == InvalidSnapshot || ls_version_visible(v, crosscheck)))
		{
			Size		size = ls_heaptuple_size(v, rel);
			LsColdXmax	mine = *x;
			LsVersionInfo info;

			ls_version_info(v, &info);
			/* a lock over our own stronger one keeps the stronger */
			if (ls_cold_own_lock(&info) &&
				(ls_hv_flags(x->xmax_word) & LS_HV_XMAX_LOCK_ONLY) &&
				ls_cold_lock_rank(info.xmax_flags) > ls_cold_lock_rank(ls_hv_flags(x->xmax_word)))
				mine.xmax_word = info.xmax_raw;
			/* a lock joining a running update: the update's cmax and new rowid stay */
			if (!tomb && !(ls_hv_flags(mine.xmax_word) & LS_HV_XMAX_LOCK_ONLY))
			{
				mine.cmax = atomic_load(&v->cmax);
				mine.next_rowid = atomic_load(&v->next_rowid);
			}
			if (newer != NULL)
				*newer = shown_to != NULL && IsMVCCSnapshot(shown_to) &&
					!ls_version_visible(v, shown_to);
			*oldtup = ls_version_to_heaptuple(v, rel, rowid, palloc(size), size);
			st = ls_cold_restamp(ct, rowid, v,
								 (ls_hv_flags(atomic_load(&v->xmin_word)) & LS_HV_XMIN_FROZEN) != 0,
								 &mine);
			done = (st == LS_OK);
			if (stamped != NULL)
				*stamped = mine.xmax_word;
		}
	}
	/* logged under tree_lock, with the image change */
	if (done && tomb)
		ls_log_cold_tomb(tbl, rowid, xid);
	ls_cold_only_end(rowid);
	if (st != LS_OK)
		ls_cold_report(st, &ct->key, "write to");
	if (done)
	{
		/*
		 * as for an insert: VACUUM may have marked the block all-visible
		 * (a delete keeps it from marking the block again; a lock does not)
		 */
		ls_vm_note_write(rel, tbl, rowid, tomb);
	}
	else if (*oldtup != NULL)
	{
		pfree(*oldtup);
		*oldtup = NULL;
	}
	return done;
}

/* ls_cold_stamp_due when the write is due in the cold tier (ls_cold_write_due) */
static bool
ls_cold_stamp(Relation rel, ls_hot_table *tbl, uint64 rowid, TransactionId xid,
			  Snapshot snapshot, Snapshot crosscheck, uint64 expect, TransactionId prior,
			  const LsColdXmax *x, bool tomb, HeapTuple *oldtup,
			  Snapshot shown_to, bool *newer)
{
	*oldtup = NULL;
	if (!ls_cold_write_due(rel, tbl, rowid))
		return false;
	return ls_cold_stamp_due(rel, tbl, rowid, xid, snapshot, crosscheck, expect, prior, x, tomb,
							 oldtup, shown_to, newer, NULL);
}

/* An image's xmax part */
static LsColdXmax
ls_cold_xmax_part(uint64 xmax_word, CommandId cmax, uint64 next_rowid)
{
	LsColdXmax	x;

	memset(&x, 0, sizeof(x));
	x.xmax_word = xmax_word;
	x.cmax = cmax;
	x.next_rowid = next_rowid;
	return x;
}

/*
 * ls_cold_stamp_due for a write of status by this transaction: first the
 * plain case (no locker in the image, or a lock of ours at this level);
 * then, when the image holds lockers, this status merged with the ones
 * that may stay (ls_cold_write_word, outside every latch: a multixact),
 * stamped only if the image still holds them.  *stamped: the word now in
 * the image.
 */
static bool
ls_cold_stamp_merged(Relation rel, ls_hot_table *tbl, uint64 rowid, TransactionId xid,
					 Snapshot snapshot, Snapshot crosscheck, MultiXactStatus status,
					 CommandId cmax, bool tomb, HeapTuple *oldtup, uint64 *stamped)
{
	uint64		held;
	uint64		expect;
	LsColdXmax	x;

	x = ls_cold_xmax_part(ls_cold_write_word(0, xid, status, &expect),
						  cmax, LS_ROWID_INVALID);
	if (ls_cold_stamp_due(rel, tbl, rowid, xid, snapshot, crosscheck, 0,
						  InvalidTransactionId, &x, tomb,
						  oldtup, NULL, NULL, stamped))
		return true;
	if ((held = ls_cold_lockers(tbl, rowid, NULL)) == 0)
		return false;
	x.xmax_word = ls_cold_write_word(held, xid, status, &expect);
	if (expect == 0)
		return false;
	return ls_cold_stamp_due(rel, tbl, rowid, xid, snapshot, crosscheck, expect,
							 InvalidTransactionId, &x, tomb,
							 oldtup, NULL, NULL, stamped);
}

/*
 * DELETE of a cold row in the cold tier itself (ls_cold_write_due): the
 * image gets this transaction's xmax, beside the locks of other levels of
 * this transaction it holds (ls_cold_stamp_merged).  Semantics as for
 * ls_cold_stamp.
 */
bool
ls_cold_delete(Relation rel, ls_hot_table *tbl, uint64 rowid, TransactionId xid,
			   CommandId cid, Snapshot snapshot, Snapshot crosscheck,
			   HeapTuple *oldtup)
{
	*oldtup = NULL;
	if (!ls_cold_write_due(rel, tbl, rowid))
		return false;
	return ls_cold_stamp_merged(rel, tbl, rowid, xid, snapshot, crosscheck,
								MultiXactStatusUpdate, cid, true, oldtup, NULL);
}

/*
 * UPDATE of a cold row in the cold tier, first half: the image gets this
 * transaction's lock for mode (as ls_acquire puts it on a hot row's current
 * version before an update), merged with the image's lockers that do not
 * conflict with it (ls_cold_write_word: FOR KEY SHARE lockers beside a
 * no-key update, as heap's multixact; locks of other levels of this
 * transaction), *oldtup the row, *locked the word now in the image (that
 * lock, or a stronger one of ours already there).  false: take the
 * migrating path.  Until the second half only FOR KEY SHARE lockers change
 * that word (they join our lock: ls_lock_in_cold, and the second half
 * builds its words again); a writer or a conflicting locker that comes
 * meanwhile waits for us; one that migrates the row (with our lock) waits
 * for us in the hot tier, and the second half then finds the row hot.
 */
bool
ls_cold_lock_for_update(Relation rel, ls_hot_table *tbl, uint64 rowid,
						TransactionId xid, Snapshot snapshot, Snapshot crosscheck,
						LockTupleMode mode, HeapTuple *oldtup, uint64 *locked)
{
	*oldtup = NULL;
	if (!ls_cold_write_due(rel, tbl, rowid))
		return false;
	return ls_cold_stamp_merged(rel, tbl, rowid, xid, snapshot, crosscheck,
								ls_mx_status(mode, false), InvalidCommandId, false,
								oldtup, locked);
}

/*
 * The lock-only xmax part of rowid's image, which this transaction just
 * inserted from v (ls_cold_insert; nobody else can reach it yet), becomes
 * lockers (none when 0): the lockers an update moves to its new version
 * (heap's xmax_new_tuple).  Not logged: a crash ends them.  Outside epochs.
 */
void
ls_cold_set_lockers(ls_hot_table *tbl, uint64 rowid, ls_hot_version *v, uint64 lockers)
{
	LsColdTable *ct = ls_cold_of(tbl);
	LsColdXmax	x = ls_cold_xmax_part(lockers, InvalidCommandId, LS_ROWID_INVALID);
	ls_status	st = LS_OK;

	Assert(ct != NULL);
	Assert(lockers == 0 || (ls_hv_flags(lockers) & LS_HV_XMAX_LOCK_ONLY));
	ls_log_multi_durable(tbl, lockers);
	if (ls_cold_only_begin(ct, tbl, rowid) != NULL)
		st = ls_cold_restamp(ct, rowid, v, false, lockers != 0 ? &x : NULL);
	else
		st = LS_CORRUPT;
	ls_cold_only_end(rowid);
	if (st != LS_OK)
		ls_cold_report(st, &ct->key, "update");
}

/*
 * A row lock (SELECT ... FOR UPDATE/SHARE, EvalPlanQual's lock) of a cold
 * row that the full hot tier cannot take (ls_tuple_lock, after the
 * migration found no room): the image gets lock_word, as for an update's
 * first half.  Plain cases only (ls_cold_plain_target with judge: the
 * inserter committed and is seen by judge -- or, following a running
 * update (prior valid), is prior --, no xmax that counts, or a lock of our
 * own); false: nothing done.  *newer: the row is not visible to shown_to
 * (EvalPlanQual must run).  *tup is the row (palloc'd).
 */
bool
ls_cold_lock_row(Relation rel, ls_hot_table *tbl, uint64 rowid, TransactionId xid,
				 Snapshot judge, Snapshot shown_to, uint64 lock_word, uint64 expect,
				 TransactionId prior, HeapTuple *tup, bool *newer)
{
	LsColdXmax	x = ls_cold_xmax_part(lock_word, InvalidCommandId, LS_ROWID_INVALID);

	/* a lock beside a running update only where the caller saw that word */
	Assert((ls_hv_flags(lock_word) & LS_HV_XMAX_LOCK_ONLY) || expect != 0);
	*newer = false;
	return ls_cold_stamp(rel, tbl, rowid, xid, judge, InvalidSnapshot, expect, prior, &x,
						 false, tup, shown_to, newer);
}

/*
 * Is rowid a cold-only row whose image prior inserted, prior running or
 * committed?  (A FOR KEY SHARE lock following prior's update to its new
 * version: ls_lock_follow_in_cold.)  Outside epochs.
 */
bool
ls_cold_inserted_by(ls_hot_table *tbl, uint64 rowid, TransactionId prior)
{
	LsColdTable *ct = ls_cold_of(tbl);
	ls_hot_row *standin;
	bool		found = false;

	if (ct == NULL)
		return false;
	if ((standin = ls_cold_only_begin(ct, tbl, rowid)) != NULL)
	{
		ls_hot_version *v = ls_hot_row_newest(standin);
		LsVersionInfo info;

		ls_version_info(v, &info);
		if (TransactionIdEquals(info.xmin, prior))
		{
			LsXidStatus ins = ls_xmin_status(v, &info);

			found = (ins == LS_XS_IN_PROGRESS || ins == LS_XS_COMMITTED);
		}
	}
	ls_cold_only_end(rowid);
	return found;
}

/*
 * The xmax word of rowid's image when it holds lockers only (a lock-only
 * xid or multixact, or a multixact whose updater aborted: its lockers
 * stay, as after a ROLLBACK TO of an update beside them) and the row is
 * cold only; 0 otherwise.  With upd (a FOR KEY SHARE request), also the
 * word of a running no-key update of another transaction (alone or beside
 * lockers), whose xid and new version's rowid go to *upd: KEY SHARE goes
 * through such an update, and locks the new version too (heap's
 * follow_updates).  A locker that finds compatible lockers there merges
 * its lock with theirs into a multixact (outside every latch:
 * ls_lock_in_cold) and stamps it only if the word is still this one
 * (ls_cold_lock_row's expect), as heap's compute_new_xmax_infomask does
 * under the buffer lock.
 */
uint64
ls_cold_lockers(ls_hot_table *tbl, uint64 rowid, LsColdUpdater *upd)
{
	LsColdTable *ct = ls_cold_of(tbl);
	ls_hot_row *standin;
	uint64		word = 0;

	if (upd != NULL)
	{
		upd->xid = InvalidTransactionId;
		upd->next_rowid = LS_ROWID_INVALID;
	}
	if (ct == NULL)
		return 0;
	if ((standin = ls_cold_only_begin(ct, tbl, rowid)) != NULL)
	{
		LsVersionInfo info;
		ls_hot_version *v = ls_hot_row_newest(standin);

		ls_version_info(v, &info);
		if (info.xmax_raw == 0)
			;
		else if (ls_xmax_is_lock_only(&info))
			word = info.xmax_raw;
		else
		{
			LsXidStatus xs = ls_xmax_status(v, &info);

			if (xs == LS_XS_ABORTED && (info.xmax_flags & LS_HV_XMAX_IS_MULTI))
				word = info.xmax_raw;
			else if (xs == LS_XS_IN_PROGRESS && upd != NULL &&
					 !(info.xmax_flags & LS_HV_XMAX_KEYS_UPDATED) &&
					 (info.xmax_flags & LS_HV_XMAX_MOVED) &&
					 info.next_rowid != LS_ROWID_INVALID)
			{
				word = info.xmax_raw;
				upd->xid = info.xmax;
				upd->next_rowid = info.next_rowid;
			}
		}
	}
	ls_cold_only_end(rowid);
	return word;
}

/*
 * A write or lock of rowid found its image held by another transaction (a
 * running locker or writer in its xmax part) while the hot tier cannot
 * take the row: wait for that transaction, as heap waits for a tuple's
 * xmax, without migrating the row.  true: waited (the caller judges the
 * row again; with LockWaitSkip *would_block says it did not wait), false:
 * nobody to wait for.  LockWaitError fails as heap's NOWAIT does.  oper:
 * the error context of the wait (XLTW_Delete, ...).  Outside epochs.
 */
bool
ls_cold_wait_holder(Relation rel, ls_hot_table *tbl, uint64 rowid,
					LockWaitPolicy policy, LockTupleMode mode, XLTW_Oper oper,
					bool *would_block)
{
	LsColdTable *ct = ls_cold_of(tbl);
	ls_hot_row *standin;
	TransactionId holder = InvalidTransactionId;
	ItemPointerData tid;

	*would_block = false;
	if (ct == NULL)
		return false;
	if ((standin = ls_cold_only_begin(ct, tbl, rowid)) != NULL)
	{
		LsVersionInfo info;

		ls_version_info(ls_hot_row_newest(standin), &info);
		if (info.xmax_raw != 0 && (info.xmax_flags & LS_HV_XMAX_IS_MULTI))
		{
			bool		lock_only = ls_xmax_is_lock_only(&info);

			/*
			 * An update beside lockers: wait for the updater while it runs
			 * (what stops a writer; a locker waits for it too, as for a
			 * single updater); once it committed, nobody (the caller
			 * follows the update); once it aborted, the lockers.  Lockers:
			 * wait for one that runs.  Then judge again.
			 */
			LsXidStatus xs = lock_only ? LS_XS_ABORTED :
				ls_xmax_status(ls_hot_row_newest(standin), &info);

			if (xs == LS_XS_IN_PROGRESS)
				holder = info.xmax;
			else if (xs != LS_XS_ABORTED ||
					 !ls_cold_multi_holder(info.xmax_multi, lock_only, (int) mode, &holder))
				holder = InvalidTransactionId;
		}
		else if (info.xmax_raw != 0 &&
				 TransactionIdIsNormal(info.xmax) &&
				 !TransactionIdIsCurrentTransactionId(info.xmax) &&
				 ls_xid_in_progress(info.xmax))
			holder = info.xmax;
	}
	ls_cold_only_end(rowid);
	if (!TransactionIdIsValid(holder))
		return false;
	holder = ls_xid_wait_target(holder);
	ls_rowid_to_tid(rowid, &tid);
	switch (policy)
	{
		case LockWaitBlock:
			XactLockTableWait(holder, rel, &tid, oper);
			break;
		case LockWaitSkip:
			if (!ConditionalXactLockTableWait(holder))
				*would_block = true;
			break;
		case LockWaitError:
			if (!ConditionalXactLockTableWait(holder))
				ereport(ERROR,
						(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
						 errmsg("could not obtain lock on row in relation \"%s\"",
								RelationGetRelationName(rel))));
			break;
	}
	return true;
}

/*
 * After ls_cold_wait_holder (or when a write found no plain case): what a
 * committed writer in rowid's image means for a write or lock of it, as
 * heap reports it: TM_Updated (tmfd->ctid the new row) for an update that
 * moved it, TM_Deleted for a delete; TM_Ok when no committed writer is
 * there (the caller then has nothing to offer but "hot tier is full").
 * Outside epochs.
 */
TM_Result
ls_cold_committed_writer(ls_hot_table *tbl, uint64 rowid, TM_FailureData *tmfd)
{
	LsColdTable *ct = ls_cold_of(tbl);
	ls_hot_row *standin;
	TM_Result	res = TM_Ok;

	if (ct == NULL)
		return TM_Ok;
	if ((standin = ls_cold_only_begin(ct, tbl, rowid)) != NULL)
	{
		ls_hot_version *v = ls_hot_row_newest(standin);
		LsVersionInfo info;

		ls_version_info(v, &info);
		/* a single writer, or the updater of a multixact (info.xmax) */
		if (info.xmax_raw != 0 && !ls_xmax_is_lock_only(&info) &&
			ls_xmax_status(v, &info) == LS_XS_COMMITTED)
		{
			uint64		next = atomic_load(&v->next_rowid);
			bool		moved = (info.xmax_flags & LS_HV_XMAX_MOVED) &&
				next != LS_ROWID_INVALID;

			ls_rowid_to_tid(moved ? next : rowid, &tmfd->ctid);
			tmfd->xmax = info.xmax;
			tmfd->cmax = InvalidCommandId;
			res = moved ? TM_Updated : TM_Deleted;
		}
	}
	ls_cold_only_end(rowid);
	return res;
}

/*
 * UPDATE in the cold tier, second half (after ls_cold_lock_for_update):
 * the new version v goes into the tree at newrowid (a fresh rowid, under
 * this transaction's xid), carrying lockers (the old image's FOR KEY SHARE
 * lockers that still run, as a lock-only xmax part: heap's xmax_new_tuple,
 * so a later key update or delete of the new row still waits for them; 0
 * when none), and the old image's xmax becomes update_word (our update,
 * moved to newrowid, beside those lockers), both under the row's locks,
 * the old row's tombstone logged with them.  locked is the word the words
 * were built from (the first half's); both are built by the caller,
 * outside every latch and epoch (a multixact may have to be created).
 * true: done (the caller frees v).  false with *now 0: the row was
 * migrated meanwhile (someone came to wait for our lock there): v is
 * untouched, and the caller finishes the update on the hot row.  false
 * with *now the image's word: KEY SHARE lockers joined our lock meanwhile
 * (nobody else changes the word while we hold it): nothing done, the
 * caller builds the words again from *now.
 */
bool
ls_cold_finish_update(Relation rel, ls_hot_table *tbl, uint64 rowid,
					  TransactionId xid, CommandId cid, uint64 locked,
					  uint64 update_word, uint64 lockers, uint64 newrowid,
					  ls_hot_version *v, uint64 *now)
{
	LsColdTable *ct = ls_cold_of(tbl);
	ls_hot_row *standin;
	ls_status	st = LS_OK;
	bool		done = false;
	const uint64 hints = ((uint64) (LS_HV_XMAX_COMMITTED | LS_HV_XMAX_ABORTED)) << 32;

	Assert(ct != NULL);
	*now = 0;
	ls_log_multi_durable(tbl, update_word);
	ls_log_multi_durable(tbl, lockers);
	if ((standin = ls_cold_only_begin(ct, tbl, rowid)) != NULL)
	{
		ls_hot_version *old = ls_hot_row_newest(standin);
		LsColdXmax	x;

		/* only KEY SHARE lockers join the word of a row we hold locked */
		if ((atomic_load(&old->xmax_word) & ~hints) != (locked & ~hints))
		{
			*now = atomic_load(&old->xmax_word);
			ls_cold_only_end(rowid);
			return false;
		}
		x = ls_cold_xmax_part(update_word, cid, newrowid);
		/* the new row first: a reader meets the old one or both */
		st = ls_cold_append(ct, tbl, newrowid, v);
		if (st == LS_OK && lockers != 0)
		{
			LsColdXmax	lx = ls_cold_xmax_part(lockers, InvalidCommandId, LS_ROWID_INVALID);

			/* not logged: a crash ends the lockers */
			st = ls_cold_restamp(ct, newrowid, v, false, &lx);
		}
		if (st == LS_OK)
			st = ls_cold_restamp(ct, rowid, old,
								 (ls_hv_flags(atomic_load(&old->xmin_word)) & LS_HV_XMIN_FROZEN) != 0,
								 &x);
		if (st == LS_OK)
		{
			ls_log_cold_tomb(tbl, rowid, xid);
			done = true;
		}
	}
	ls_cold_only_end(rowid);
	if (st != LS_OK)
		ls_cold_report(st, &ct->key, "update");
	if (!done)
		return false;
	ls_cold_raise_end(ct, newrowid);
	ls_vm_note_insert(rel, tbl, newrowid);

	/*
	 * The old image's xmax is an update now.  Our lock from the first half
	 * left the row all-visible to VACUUM, which may have marked its block
	 * since the first half cleared the bit: clear it again, after the
	 * change was published (isolation lsx-cold-update-vismap: else an
	 * index-only scan returns the old version beside the new one).
	 */
	ls_vm_note_write(rel, tbl, rowid, true);
	return true;
}

/* ------------------------------------------------------------------------
 * Migration: a write of a cold row
 * ------------------------------------------------------------------------ */

/*
 * Set around ls_acquire by a delete or update that can write in the cold
 * tier instead: a migration that finds the hot tier full then sets
 * ls_migrate_found_full and reports "no row" (the caller ignores that
 * answer and writes in the cold tier) instead of raising the error.
 * Cleared by the caller, and at (sub)transaction abort.
 */
bool		ls_migrate_soft = false;
bool		ls_migrate_found_full = false;

/*
 * Bring rowid's cold image into the hot tier as the row's only version
 * (with the xmax part the image may carry), unless the slot holds
 * something already.  true when the
 * hot tier now has a row there (ours or another backend's), false when
 * there is no row at all.  Outside epochs; may throw (tier full).
 */
bool
ls_cold_migrate(Relation rel, ls_hot_table *tbl, uint64 rowid)
{
	LsColdTable *ct = ls_cold_of(tbl);
	ls_hot_ctx *ctx = ls_ctx();
	LWLock	   *lock;
	ls_hot_row *standin;
	ls_hot_row *row = NULL;
	ls_hot_version *v = NULL;
	ls_status	st = LS_OK;
	bool		found;

	if (ct == NULL)
		return false;
	lock = ls_row_stripe(rowid);
	LWLockAcquire(lock, LW_EXCLUSIVE);
	ls_epoch_enter();
	found = ls_hot_row_get(tbl, rowid) != NULL;
	if (!found && !ls_hot_rowid_is_dead(tbl, rowid) &&
		(standin = ls_cold_standin(ct, rowid)) != NULL)
	{
		ls_hot_version *img = ls_hot_row_newest(standin);

		st = ls_hot_version_alloc(ctx, img->len, &v);
		if (st == LS_OK)
		{
			memcpy(v->data, img->data, img->len);
			atomic_store(&v->xmin_word, atomic_load(&img->xmin_word));
			v->cmin = img->cmin;
			/* a deleter or updater that wrote in the cold tier comes along */
			atomic_store(&v->xmax_word, atomic_load(&img->xmax_word));
			atomic_store(&v->cmax, atomic_load(&img->cmax));
			atomic_store(&v->next_rowid, atomic_load(&img->next_rowid));
			atomic_store(&v->user_flags,
						 atomic_load(&img->user_flags) & LS_UF_SPECULATIVE);
			LsVersionInfo info;
			TransactionId mark = InvalidTransactionId;

			/*
			 * A delete or update made in the cold tier logged its
			 * tombstone at once, and its commit logs nothing for the row:
			 * a checkpoint must not log the row as standing without that
			 * tombstone after it (log.c ls_ckpt_row).  Named before the
			 * row is published: a checkpoint may log it the moment it is
			 * (a review found the mark set afterwards).
			 */
			ls_version_info(v, &info);
			if (TransactionIdIsValid(info.xmax) && !ls_xmax_is_lock_only(&info))
				mark = info.xmax;
			st = ls_hot_row_insert_marked(ctx, tbl, rowid, LS_ORIGIN_MIGRATED, v, mark,
										  TransactionIdIsValid(mark) ? LS_LOGGED_EARLY : 0,
										  &row);
			if (st == LS_OK)
			{
				/* its block may be all-visible: writes must clear the bit */
				ls_hot_row_set_allvis(row, true);
				found = true;
			}
			else
				ls_hot_version_free(ctx, v);
		}
	}
	ls_epoch_exit();
	LWLockRelease(lock);
	if (st != LS_OK)
	{
		if ((st == LS_NO_SPACE || st == LS_NO_MEMORY) && ls_cold_relieve())
			return ls_cold_migrate(rel, tbl, rowid);
		if ((st == LS_NO_SPACE || st == LS_NO_MEMORY) && ls_migrate_soft)
		{
			ls_cold_note_full();
			ls_migrate_found_full = true;
			return false;
		}
		ls_report_status(st, rel, "update");
	}
	if (row != NULL)
		pg_atomic_fetch_add_u64(&ls_cold->rows_migrated, 1);
	return found;
}

/*
 * Before the latch of a row that may leave as DEAD: when the row has a cold
 * image (a migrated row), take tree_lock shared, which ls_cold_forget_image
 * needs and which comes before a row latch (ls_cold_hold_trees).  Returns
 * whether it was taken; pass that to ls_cold_image_unguard.
 */
bool
ls_cold_image_guard(ls_hot_table *tbl, ls_hot_row *row)
{
	Assert(!ls_holds_row_latch());
	/* origin never changes once the row is in the map */
	if (row->origin != LS_ORIGIN_MIGRATED || ls_cold_of(tbl) == NULL)
		return false;
	/* pack (ls_pack_one) collects rows while it holds it already */
	if (LWLockHeldByMe(ls_cold->tree_lock))
		return false;
	ls_tree_share();
	return true;
}

void
ls_cold_image_unguard(bool held)
{
	if (held)
		LWLockRelease(ls_cold->tree_lock);
}

/*
 * A migrated row is about to leave as DEAD (caller holds its latch, and
 * tree_lock from ls_cold_image_guard): its cold image goes first, or
 * readers would find it behind the DEAD slot's back once the slot is
 * forgotten.  false (nothing removed): the caller keeps the row for now.
 */
bool
ls_cold_forget_image(ls_hot_table *tbl, ls_hot_row *row)
{
	LsColdTable *ct;
	bool		ok;

	Assert(ls_holds_row_latch());
	if (row->origin != LS_ORIGIN_MIGRATED || (ct = ls_cold_of(tbl)) == NULL)
		return true;
	/* its cold table appeared after the guard looked: look again */
	if (!LWLockHeldByMe(ls_cold->tree_lock))
		return false;
	ok = ls_cold_remove(&ct->tree, row->rowid) == LS_OK;
	if (ok)
		ls_log_cold_remove(tbl, row->rowid);
	return ok;
}

/* ------------------------------------------------------------------------
 * Recovery: the cold records of leanstore's log (log.c replays them in GSN
 * order, in the log writer, before anybody else uses a table)
 * ------------------------------------------------------------------------ */

/*
 * rowid's image becomes payload, a committed version (frozen: no snapshot
 * survives a crash); a hot row of rowid leaves the map, as pack made it.
 */
void
ls_cold_replay_put(ls_hot_table *tbl, uint64 rowid, const char *payload, uint32 len,
				   TransactionId xmin)
{
	LsColdTable *ct;
	ls_hot_row *row;
	ls_status	st;

	LWLockAcquire(ls_cold->adopt_lock, LW_EXCLUSIVE);
	ct = ls_cold_ensure(tbl, FATAL);
	LWLockRelease(ls_cold->adopt_lock);
	st = ls_cold_store(&ct->tree, rowid, payload, len, xmin, FirstCommandId, true);
	if (st != LS_OK)
		ls_cold_report(st, &ct->key, "replay a row into");
	ls_cold_raise_end(ct, rowid);
	ls_epoch_enter();
	row = ls_hot_row_get(tbl, rowid);
	if (row != NULL)
	{
		ls_row_lock(row);
		ls_row_forget_latch();
		ls_hot_row_evict(ls_ctx(), tbl, row);	/* releases the latch */
	}
	ls_epoch_exit();
}

/*
 * rowid's image goes (VACUUM of an aborted bulk-loaded row, or a migrated
 * row that left): the rowid ends DEAD, as it did then.
 */
void
ls_cold_replay_remove(ls_hot_table *tbl, uint64 rowid)
{
	LsColdTable *ct = ls_cold_of(tbl);
	ls_hot_row *row;
	ls_status	st = LS_OK;
	bool		dead;

	if (ct != NULL)
		st = ls_cold_remove(&ct->tree, rowid);
	if (st != LS_OK)
		ls_cold_report(st, &ct->key, "replay a removal from");
	ls_epoch_enter();
	row = ls_hot_row_get(tbl, rowid);
	if (row != NULL)
	{
		ls_row_lock(row);
		ls_row_forget_latch();
		ls_hot_row_remove(ls_ctx(), tbl, row, true);
	}
	dead = ls_hot_rowid_is_dead(tbl, rowid);
	ls_epoch_exit();
	if (row == NULL && !dead && (st = ls_adopt_dead_or_hole(tbl, rowid)) != LS_OK)
		ls_report_status(st, NULL, "replay a removal from");
}

/*
 * Recovery: every rowid of [lo, hi) that holds no row in either tier and is
 * not DEAD becomes DEAD (the caller says why).  Rows are found a batch at a
 * time; the gaps between them are the holes.
 */
void
ls_cold_mark_holes_dead(ls_hot_table *tbl, uint64 lo, uint64 hi)
{
	uint64		cursor = lo;
	uint64		expect = lo;
	bool		no_room = false;	/* the rest of the range is holes */

	while (expect < hi)
	{
		ls_hot_row *rows[64];
		uint64		found[64];
		uint32		n;

		ls_epoch_enter();
		n = ls_rows_batch(tbl, &cursor, hi, rows, lengthof(rows));
		for (uint32 i = 0; i < n; i++)
			found[i] = rows[i]->rowid;
		ls_epoch_exit();
		/* the batch covered [expect, cursor): its gaps are holes */
		for (uint32 i = 0; i <= n; i++)
		{
			uint64		upto = (i < n) ? found[i] : Min(cursor, hi);

			for (; expect < upto; expect++)
			{
				bool		dead;
				ls_status	st;

				ls_epoch_enter();
				dead = ls_hot_rowid_is_dead(tbl, expect);
				ls_epoch_exit();
				if (dead)
					continue;
				if (no_room)
				{
					ls_dead_as_holes++;
					continue;
				}
				st = ls_adopt_dead(tbl, expect);
				if (st == LS_NO_SPACE || st == LS_NO_MEMORY)
				{
					/* no room for slots: the rest of the range are holes */
					ls_holes_add(tbl, expect, hi);
					ls_dead_as_holes++;
					no_room = true;
					continue;
				}
				if (st != LS_OK)
					ereport(FATAL,
							(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
							 errmsg("could not recover rowid " UINT64_FORMAT " of a leanstore table: %s",
									expect, ls_status_str(st)),
							 errhint("Increase leanstore.hot_memory and start the server again.")));
			}
			if (i < n)
				expect = found[i] + 1;
		}
		if (n == 0)
			break;				/* [expect, hi) was covered: done */
	}
}

/*
 * Holes: rowids a crashed run may have handed out and that hold nothing
 * now (a transaction that did not commit, the rest of a virtual block the
 * allocator skipped, a reservation not used up).  Index entries in
 * PostgreSQL's WAL may name some of them, so VACUUM must delete such
 * entries before it sets a visibility map bit of their blocks (an
 * index-only scan would return them as rows).  Recovery used to make every
 * one a DEAD slot, which costs hot memory per rowid -- 290 skipped rowids
 * of a block of one wide row took nine 320-byte chunks -- and recovery
 * failed when the tier could not hold them.  Now a table keeps one range
 * of virtual blocks ([LS_TAG_HOLES_LO, LS_TAG_HOLES_HI), empty when hi is
 * 0): recovery and adoption widen it, a VACUUM that finished its index
 * pass empties it (ddl.c), and ls_vm_block_all_visible refuses its blocks
 * meanwhile.  Rows inside the range are rows; only rowids that hold
 * nothing in either tier are holes (ls_rowid_holds_row).  Checkpoints log
 * the range (log.c, an LS_LR_DEAD record marked as holes) and clean images
 * keep it in the meta page.  Only recovery and adoption (before any
 * backend uses the table) and SET TABLESPACE's copy (of a table nobody
 * else sees yet) widen it, and only VACUUM (one at a time) and TRUNCATE
 * empty it, so the two tags need no lock.
 */
void
ls_holes_add(ls_hot_table *tbl, uint64 lo, uint64 hi)
{
	uint32		blo = (uint32) (lo / LS_ROWS_PER_BLOCK);
	uint32		bhi = (uint32) ((hi + LS_ROWS_PER_BLOCK - 1) / LS_ROWS_PER_BLOCK);
	uint32		olo = ls_hot_table_get_tag(tbl, LS_TAG_HOLES_LO);
	uint32		ohi = ls_hot_table_get_tag(tbl, LS_TAG_HOLES_HI);

	if (lo >= hi)
		return;
	if (ohi != 0)
	{
		blo = Min(blo, olo);
		bhi = Max(bhi, ohi);
	}
	ls_hot_table_set_tag(tbl, LS_TAG_HOLES_LO, blo);
	ls_hot_table_set_tag(tbl, LS_TAG_HOLES_HI, bhi);
}

/* The holes range in rowids (block-aligned); false when empty. */
bool
ls_holes_get(ls_hot_table *tbl, uint64 *lo, uint64 *hi)
{
	uint32		bhi = ls_hot_table_get_tag(tbl, LS_TAG_HOLES_HI);

	*lo = (uint64) ls_hot_table_get_tag(tbl, LS_TAG_HOLES_LO) * LS_ROWS_PER_BLOCK;
	*hi = (uint64) bhi * LS_ROWS_PER_BLOCK;
	return bhi != 0 && *lo < *hi;
}

void
ls_holes_clear(ls_hot_table *tbl)
{
	ls_hot_table_set_tag(tbl, LS_TAG_HOLES_HI, 0);
	ls_hot_table_set_tag(tbl, LS_TAG_HOLES_LO, 0);
}

/*
 * Does rowid hold a row in either tier (DEAD is no row)?  Outside epochs.
 * Callers hold at least ShareUpdateExclusiveLock (VACUUM): the tree is not
 * dropped under the look-up.  The hot tier is asked again after the tree: a row migrating from the
 * tree into the hot tier is inserted there before its image goes, a row
 * being packed gets its image before it leaves the hot tier, so one of the
 * three looks sees it.
 */
bool
ls_rowid_holds_row(ls_hot_table *tbl, uint64 rowid)
{
	LsColdTable *ct;
	uint8		key[LS_COLD_KEY_MAX];
	char		none;
	uint32		vlen;
	ls_status	st;

	if (ls_hot_has_row(tbl, rowid))
		return true;
	/*
	 * Read after the hot miss: a row packed meanwhile had its tree made
	 * before its image was written and before it left the hot tier.
	 */
	if ((ct = ls_cold_of(tbl)) == NULL)
		return false;
	/* no room for the value: LS_TOO_LARGE (or LS_OK when empty) says present */
	st = ls_btree_lookup(&ct->tree, key, ls_cold_key(key, rowid, 0), &none, 0, &vlen);
	if (st == LS_OK || st == LS_TOO_LARGE)
		return true;
	if (st != LS_NOT_FOUND)
		ls_cold_report(st, &ct->key, "read");
	return ls_hot_has_row(tbl, rowid);
}

/* Does tbl have a cold tree (replay: what a clean point must write)? */
bool
ls_cold_has_tree(ls_hot_table *tbl)
{
	return ls_cold_of(tbl) != NULL;
}

/* ------------------------------------------------------------------------
 * Pack: hot -> cold
 * ------------------------------------------------------------------------ */

/*
 * May v, the newest version of its row, become the row's only, frozen,
 * cold version?  Every snapshot must see it (inserter committed before the
 * horizon, its commit record on disk), nobody deleted it, no transaction
 * that may still run locks it, it is no speculative insert.  Decided
 * without the row latch (it may read clog); the caller checks under the
 * latch that nothing moved.
 */
static bool
ls_packable(ls_hot_version *v, GlobalVisState *vis)
{
	LsVersionInfo info;
	TransactionId dead_after;

	if (v == NULL || (atomic_load(&v->user_flags) & LS_UF_SPECULATIVE) != 0)
		return false;
	if (ls_version_vacuum_state(v, vis, &dead_after) != LS_V_LIVE)
		return false;
	ls_version_info(v, &info);
	if (!(info.xmin_flags & LS_HV_XMIN_FROZEN) &&
		!GlobalVisTestIsRemovableXid(vis, info.xmin))
		return false;
	/* frozen in the image: an asynchronous commit must be durable first */
	if (!(info.xmin_flags & LS_HV_XMIN_FROZEN) && !ls_xid_commit_durable(info.xmin))
		return false;
	if (info.xmax != InvalidTransactionId && !(info.xmax_flags & LS_HV_XMAX_ABORTED))
	{
		if ((info.xmax_flags & LS_HV_XMAX_IS_MULTI) != 0 ||
			ls_xid_in_progress(info.xmax))
			return false;
	}
	return true;
}

/*
 * Pack one row if it may go: image first, then the slot empties (readers
 * look hot first, cold second: they find it in one place or both).  With
 * second_chance, a row touched since the last visit only loses its mark.
 * *stuck is set when the tree could not take the image (a full disk, no
 * free frame): the caller stops the table's pass instead of trying every
 * row against the same failure.
 */
static bool
ls_pack_one(LsColdTable *ct, ls_hot_table *tbl, uint64 rowid, GlobalVisState *vis,
			bool second_chance, bool *stuck)
{
	ls_hot_ctx *ctx = ls_ctx();
	LWLock	   *lock = ls_row_stripe(rowid);
	ls_hot_row *row;
	ls_hot_version *v;
	uint64		xmax_word;
	TransactionId xmin;
	CommandId	cmin;
	char	   *payload = NULL;
	uint32		len = 0;
	bool		packed = false;

	LWLockAcquire(lock, LW_EXCLUSIVE);
	ls_epoch_enter();
	row = ls_hot_row_get(tbl, rowid);
	if (row == NULL)
		goto out;
	if (second_chance && atomic_load_explicit(&row->access, memory_order_relaxed) != 0)
	{
		atomic_store_explicit(&row->access, 0, memory_order_relaxed);
		goto out;
	}
	v = ls_hot_row_newest(row);

	/*
	 * The xmax word ls_packable judges is read first: a lock taken after
	 * this read changes the word, which the check under the latch below
	 * then sees.  (Read after the judgment, a lock taken in between looked
	 * like the word that was judged, and the row went cold without its
	 * lock: its holder then found the row gone.)
	 */
	if (v == NULL)
		goto out;				/* removed meanwhile */
	xmax_word = atomic_load(&v->xmax_word);
	if (!ls_packable(v, vis))
	{
		/* it stays hot: at least drop what nobody can see any more */
		ls_collect_row(tbl, row, vis);
		goto out;
	}
	xmin = ls_hv_xid(atomic_load(&v->xmin_word));
	cmin = v->cmin;
	len = v->len;
	payload = palloc(len);
	memcpy(payload, v->data, len);
	/*
	 * Held like ls_row_lock's latch: the tree insert (palloc in the file
	 * callbacks) and the log append below may throw, and the abort path
	 * then gives the latch back (regress ls_hold, ls_test_pack).
	 */
	if (!ls_row_trylock(row))
		goto out;
	ls_test_fail_at(LS_FAIL_PACK_LATCH);
	if (ls_hot_row_is_removed(row) || ls_hot_row_newest(row) != v ||
		atomic_load(&v->xmax_word) != xmax_word)
	{
		ls_row_unlock(row);
		goto out;
	}
	if (ls_cold_store(&ct->tree, rowid, payload, len, xmin, cmin, true) != LS_OK)
	{
		*stuck = true;
		ls_row_unlock(row);
		goto out;
	}
	ls_cold_raise_end(ct, rowid);
	/*
	 * Logged under the row latch: a write of the row that follows (it
	 * migrates the row back first) logs after this record, so replay in
	 * GSN order ends with the write.
	 */
	ls_log_cold_put(tbl, rowid, payload, len, xmin, true);
	/* readers that found the row keep its versions (same content) */
	ls_row_forget_latch();
	ls_hot_row_evict(ctx, tbl, row);	/* releases the latch */
	packed = true;
out:
	ls_epoch_exit();
	LWLockRelease(lock);
	if (payload != NULL)
		pfree(payload);
	return packed;
}

/*
 * Pack up to budget rows of tbl from its pack hand on (caller holds
 * adopt_lock and runs in a transaction with a snapshot).  Returns the
 * number of rows packed; the hand wraps at the table's end.
 */
static uint64
ls_pack_table_rows(ls_hot_table *tbl, uint64 budget, GlobalVisState *vis, bool second_chance)
{
	LsColdTable *ct = ls_cold_ensure(tbl, WARNING);
	uint64		end = ls_hot_table_rowid_limit(tbl);
	uint64		packed = 0;
	bool		stuck = false;

	if (ct == NULL)
		return 0;
	while (budget > 0)
	{
		ls_hot_row *batch[64];
		uint64		rowids[64];
		uint64		cursor = ct->pack_hand;
		uint32		n;

		CHECK_FOR_INTERRUPTS();
		ls_epoch_enter();
		n = ls_hot_scan_batch(tbl, &cursor, end, batch, (uint32) Min(budget, 64));
		for (uint32 i = 0; i < n; i++)
			rowids[i] = batch[i]->rowid;
		ls_epoch_exit();
		ct->pack_hand = n > 0 ? rowids[n - 1] + 1 : 0;
		ls_tree_share();
		for (uint32 i = 0; i < n && !stuck; i++)
			packed += ls_pack_one(ct, tbl, rowids[i], vis, second_chance, &stuck);
		LWLockRelease(ls_cold->tree_lock);
		if (n == 0 || stuck)
			break;				/* wrapped, or the tree takes nothing now */
		budget -= n;
	}
	if (packed > 0)
	{
		pg_atomic_fetch_add_u64(&ls_cold->rows_packed, packed);
		ls_debug_crash("pack");
	}
	return packed;
}

#ifdef LS_ASSERTS
/*
 * Test hook of the asserting build (regress ls_hold creates the SQL
 * function): pack every row of one table that may go, in this backend;
 * with fail, the first row whose latch pack takes throws there (fail point
 * "in-pack"), so that the test sees the abort path give the latch back.
 * Returns the number of rows packed.
 */
PG_FUNCTION_INFO_V1(leanstore_test_pack);

Datum
leanstore_test_pack(PG_FUNCTION_ARGS)
{
	Relation	rel = ls_open_leanstore(PG_GETARG_OID(0), AccessShareLock);
	ls_hot_table *tbl = ls_table_for(rel);
	uint64		packed;

	LWLockAcquire(ls_cold->adopt_lock, LW_EXCLUSIVE);
	if (PG_GETARG_BOOL(1))
		ls_test_fail_armed = LS_FAIL_PACK_LATCH;
	packed = ls_pack_table_rows(tbl, UINT64_MAX, GlobalVisTestFor(NULL), false);
	ls_test_fail_armed = LS_FAIL_NONE;
	LWLockRelease(ls_cold->adopt_lock);
	relation_close(rel, AccessShareLock);
	PG_RETURN_INT64((int64) packed);
}

/*
 * Test hook of the asserting build (regress ls_chain): read the row at tid
 * as a scan would and report that a walk of its chain passed the bound;
 * with evict, pack it first (in the same epoch, as the worker could after
 * the read found it), so that no RID-map holds what the walk has.  A cold
 * row comes back as a stand-in, which no map holds either.  The error must
 * name the table.
 */
PG_FUNCTION_INFO_V1(leanstore_test_chain_overrun);

Datum
leanstore_test_chain_overrun(PG_FUNCTION_ARGS)
{
	Relation	rel = ls_open_leanstore(PG_GETARG_OID(0), AccessShareLock);
	uint64		rowid = ls_tid_to_rowid((ItemPointer) PG_GETARG_POINTER(1));
	ls_hot_table *tbl = ls_table_for(rel);
	LsColdTable *ct;
	ls_hot_row *row;

	LWLockAcquire(ls_cold->adopt_lock, LW_EXCLUSIVE);
	ct = ls_cold_ensure(tbl, ERROR);
	ls_tree_share();
	ls_epoch_enter();
	row = rowid == LS_ROWID_INVALID ? NULL : ls_row_get(tbl, rowid);
	if (row != NULL && PG_GETARG_BOOL(2) && !ls_row_is_standin(row))
	{
		bool		stuck = false;

		(void) ls_pack_one(ct, tbl, rowid, GlobalVisTestFor(NULL), false, &stuck);
	}
	if (row != NULL)
		ls_chain_overrun(row);
	LWLockRelease(ls_cold->tree_lock);
	LWLockRelease(ls_cold->adopt_lock);
	ls_epoch_exit();			/* raises the overrun */
	relation_close(rel, AccessShareLock);
	PG_RETURN_VOID();
}
#endif

/* Is the hot tier (stats hs) filled above pct percent? */
static bool
ls_hot_fill_over(uint64 used, uint64 heap, int pct)
{
	return heap > 0 && used * 100 > (uint64) pct * heap;
}

static bool
ls_hot_over(int pct)
{
	uint64		used;
	uint64		heap;

	ls_hot_get_fill(ls_shared_hot(), &used, &heap);
	return ls_hot_fill_over(used, heap, pct);
}

/*
 * One pass of pack over every table: rows nobody touched since the last
 * pass (second chance), while hot memory is above the low-water mark; with
 * eager, every row that may go.  In a transaction (snapshot, horizon).
 */
static uint64
ls_pack_pass(bool eager, int low_water, uint64 budget_per_table)
{
	ls_hot	   *hot = ls_shared_hot();
	uint32		cursor = 0;
	uint64		packed = 0;
	GlobalVisState *vis = GlobalVisTestFor(NULL);

	for (;;)
	{
		ls_hot_table *tbl;
		ls_hot_key	key;

		if (!eager && !ls_hot_over(low_water))
			break;
		ls_epoch_enter();
		tbl = ls_hot_table_next(hot, &cursor);
		if (tbl != NULL)
			key = ls_hot_table_get_key(tbl);
		ls_epoch_exit();
		if (tbl == NULL)
			break;
		LWLockAcquire(ls_cold->adopt_lock, LW_EXCLUSIVE);
		/* it may have been dropped meanwhile: look it up again */
		tbl = ls_hot_table_find(hot, key);
		if (tbl != NULL && ls_hot_table_get_tag(tbl, LS_TAG_READY) != 0 &&
			ls_hot_table_get_tag(tbl, LS_TAG_PERSISTENCE) != 0)
			packed += ls_pack_table_rows(tbl, budget_per_table, vis, !eager);
		LWLockRelease(ls_cold->adopt_lock);
	}
	ls_hot_reclaim(ls_ctx());
	return packed;
}

/*
 * An allocation in the hot tier failed: pack what may go (no second
 * chance) and say whether anything was freed.  In a transaction, outside
 * epochs.
 */
bool
ls_cold_relieve(void)
{
	uint64		packed;

	/* pack takes row latches: never under one (ls_alloc_version is not) */
	Assert(!ls_holds_row_latch());
	if (ls_cold == NULL || LWLockHeldByMe(ls_cold->adopt_lock) || !IsTransactionState() ||
		ls_holds_row_latch())
		return false;
	PushActiveSnapshot(GetTransactionSnapshot());
	packed = ls_pack_pass(true, 0, UINT64_MAX);
	PopActiveSnapshot();
	return packed > 0;
}

/* ------------------------------------------------------------------------
 * Clean shutdown: every table's rows into its tree, then the meta pages
 * ------------------------------------------------------------------------ */

typedef struct LsDeadScan
{
	uint64		rowids[256];
	int			n;
	bool		more;
} LsDeadScan;

static bool
ls_dead_cb(void *arg, const uint8_t *key, uint32_t klen, const uint8_t *val, uint32_t vlen)
{
	LsDeadScan *ds = arg;

	(void) val;
	(void) vlen;
	if (klen != 9 || key[0] != LS_KEY_DEAD_PREFIX)
		return false;
	if (ds->n == lengthof(ds->rowids))
	{
		ds->more = true;
		return false;
	}
	ds->rowids[ds->n++] = ls_get_be64(key + 1);
	return true;
}

/*
 * A new clean image id: unique among every image any file had (the undo
 * journal of an older image, left behind, must never match a newer meta
 * page), so microseconds since 2000, at least one above the last id.
 */
static uint64
ls_cold_new_image_id(void)
{
	static uint64 last = 0;
	uint64		id = (uint64) GetCurrentTimestamp();

	if (id <= last)
		id = last + 1;
	last = id;
	return id;
}

/*
 * Recovery's clean point: every tree replay changed becomes a clean image
 * (pages flushed, meta pages written and synced), so that the log before
 * this point is not needed for it any more.  Hot rows stay hot (the caller
 * logs them again).
 */
bool
ls_cold_clean_point(bool held)
{
	ls_hot	   *hot = ls_shared_hot();
	uint32		cursor = 0;
	ls_hot_table *tbl;
	ls_status	st;
	uint64		image = ls_cold_new_image_id();
	bool		ok = true;

	if (!held)
		LWLockAcquire(ls_cold->adopt_lock, LW_EXCLUSIVE);
	st = ls_bm_flush_all(ls_cold->bm);
	if (st != LS_OK)
	{
		if (!held)
			LWLockRelease(ls_cold->adopt_lock);
		ereport(WARNING,
				(errcode(ERRCODE_IO_ERROR),
				 errmsg("could not write leanstore's cold pages: %s", ls_status_str(st))));
		return false;
	}
	ls_epoch_enter();
	while (ok && (tbl = ls_hot_table_next(hot, &cursor)) != NULL)
	{
		LsColdTable *ct = ls_cold_of(tbl);

		if (ct == NULL || pg_atomic_read_u32(&ct->dirty) == 0 || !ls_table_persists(tbl))
			continue;
		ok = ls_clean_meta(tbl, ct->dead_keys, image);
	}
	ls_epoch_exit();
	if (!held)
		LWLockRelease(ls_cold->adopt_lock);
	return ok;
}

/*
 * Before a checkpoint holds the trees: write the pool's dirty pages while
 * writers go on (a page may be written any time; a failure shows again in
 * the flush under the hold, ls_cold_clean_point).
 */
void
ls_cold_preflush(void)
{
	if (ls_cold != NULL)
		(void) ls_bm_flush_all(ls_cold->bm);
}

/*
 * Checkpoint: no tree changes (and no log record of one) while held; every
 * tree change holds tree_lock shared.  Lock order: adopt_lock (pack holds
 * it for a pass), tree_lock, a row stripe, a row latch.
 */
void
ls_cold_hold_trees(bool hold)
{
	if (hold)
	{
		LWLockAcquire(ls_cold->adopt_lock, LW_EXCLUSIVE);
		LWLockAcquire(ls_cold->tree_lock, LW_EXCLUSIVE);
	}
	else
	{
		LWLockRelease(ls_cold->tree_lock);
		LWLockRelease(ls_cold->adopt_lock);
	}
}

/* Write the hot rows of tbl into its tree (caller holds adopt_lock). */
static bool
ls_shutdown_rows(ls_hot_table *tbl, Snapshot snapshot, uint64 *dead)
{
	LsColdTable *ct = ls_cold_ensure(tbl, WARNING);
	ls_hot_key	key = ls_hot_table_get_key(tbl);
	uint64		limit = ls_hot_table_rowid_limit(tbl);
	uint64		cursor = 0;
	ls_status	st = LS_OK;
	MemoryContext mcxt;
	MemoryContext old;
	uint8		k[LS_COLD_KEY_MAX];

	*dead = 0;
	if (ct == NULL)
		return false;
	st = ls_cold_touch(ct);
	/* the DEAD keys of the last clean shutdown go; today's are written below */
	while (st == LS_OK)
	{
		LsDeadScan ds = {0};
		uint8		start[1] = {LS_KEY_DEAD_PREFIX};

		st = ls_btree_scan_asc(&ct->tree, start, 1, ls_dead_cb, &ds);
		for (int i = 0; st == LS_OK && i < ds.n; i++)
			st = ls_btree_remove(&ct->tree, k, ls_dead_key(k, ds.rowids[i]));
		if (!ds.more)
			break;
	}
	mcxt = AllocSetContextCreate(CurrentMemoryContext, "leanstore pack", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(mcxt);
	while (st == LS_OK)
	{
		ls_hot_row *batch[256];
		struct
		{
			uint64		rowid;
			uint32		len;
			TransactionId xmin;
			CommandId	cmin;
			char	   *payload;
		}			rows[256];
		uint32		n;

		ls_epoch_enter();
		n = ls_hot_scan_batch(tbl, &cursor, limit, batch, 256);
		for (uint32 i = 0; i < n; i++)
		{
			ls_hot_version *v = ls_row_visible_version(batch[i], snapshot);

			rows[i].rowid = batch[i]->rowid;
			rows[i].payload = NULL;
			rows[i].len = 0;
			if (v != NULL)
			{
				rows[i].xmin = ls_hv_xid(atomic_load(&v->xmin_word));
				rows[i].cmin = v->cmin;
				rows[i].len = v->len;
				rows[i].payload = palloc(v->len);
				memcpy(rows[i].payload, v->data, v->len);
			}
		}
		ls_epoch_exit();
		for (uint32 i = 0; i < n && st == LS_OK; i++)
		{
			if (rows[i].payload != NULL)
			{
				st = ls_cold_store(&ct->tree, rows[i].rowid, rows[i].payload, rows[i].len,
								   rows[i].xmin, rows[i].cmin, true);
				ls_cold_raise_end(ct, rows[i].rowid);
			}
			else
			{
				/* deleted or never committed: index entries may name it */
				st = ls_cold_remove(&ct->tree, rows[i].rowid);
				if (st == LS_OK)
					st = ls_btree_insert(&ct->tree, k, ls_dead_key(k, rows[i].rowid), "", 0);
				(*dead)++;
			}
		}
		MemoryContextReset(mcxt);
		if (n == 0)
			break;
	}
	cursor = 0;
	while (st == LS_OK)
	{
		uint64		rowid;
		bool		found;

		ls_epoch_enter();
		found = ls_hot_scan_next_dead(tbl, &cursor, limit, &rowid);
		ls_epoch_exit();
		if (!found)
			break;
		st = ls_btree_insert(&ct->tree, k, ls_dead_key(k, rowid), "", 0);
		(*dead)++;
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(mcxt);
	if (st == LS_IO_ERROR && ls_bm_last_error_errno() != 0)
	{
		errno = ls_bm_last_error_errno();
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("could not write leanstore relfilenode %u/%u at shutdown: %m",
						key.db, key.rel)));
	}
	else if (st != LS_OK)
		ereport(WARNING,
				(errcode(ERRCODE_IO_ERROR),
				 errmsg("could not write leanstore relfilenode %u/%u at shutdown: %s",
						key.db, key.rel, ls_status_str(st))));
	return st == LS_OK;
}

/*
 * The meta page of tbl's tree after every page was written (a clean
 * point): the tree is now clean image `image`, the one a crash goes back to.
 */
static bool
ls_clean_meta(ls_hot_table *tbl, uint64 dead, uint64 image)
{
	LsColdTable *ct = ls_cold_of(tbl);
	ls_hot_key	key = ls_hot_table_get_key(tbl);
	LsColdMeta	meta;
	ls_page    *pg;
	ls_status	st;
	uint64		next;
	uint32		used;
	char		path[MAXPGPATH];
	ls_bm_file	file;

	if (ct == NULL)
		return false;
	memset(&meta, 0, sizeof(meta));
	ls_hot_table_get_fill(tbl, &next, &used);
	st = ls_btree_root(&ct->tree, &meta.root_block, &meta.height);
	meta.magic = LS_META_MAGIC;
	meta.version = LS_META_VERSION;
	meta.epoch = ls_cold->epoch;
	meta.n_blocks = ls_bm_dt_blocks(ls_cold->bm, ct->tree.dt_id);
	meta.spc = ls_hot_table_get_tag(tbl, LS_TAG_SPC);
	meta.db = key.db;
	meta.rel = key.rel;
	meta.fill_next = next;
	meta.fill_used = used;
	meta.cold_end = pg_atomic_read_u64(&ct->cold_end);
	meta.dead = dead;
	meta.image = image;
	meta.rows = pg_atomic_read_u64(&ct->rows);
	if (ct->rows_known)
		meta.flags |= LS_META_ROWS;
	meta.holes_lo = ls_hot_table_get_tag(tbl, LS_TAG_HOLES_LO);
	meta.holes_hi = ls_hot_table_get_tag(tbl, LS_TAG_HOLES_HI);
	pg = palloc(LS_PAGE_SIZE);
	ls_meta_init(pg, &meta);
	if (st == LS_OK)
		st = ls_bm_write_block(ls_cold->bm, ct->tree.dt_id, 0, pg, false);
	if (st == LS_OK)
		st = ls_bm_sync_dt(ls_cold->bm, ct->tree.dt_id);
	pfree(pg);
	if (st != LS_OK)
	{
		ereport(WARNING,
				(errcode(ERRCODE_IO_ERROR),
				 errmsg("could not write the clean image of leanstore relfilenode %u/%u: %s",
						key.db, key.rel, ls_status_str(st))));
		return false;
	}
	/* a crash now goes back to this image; the next change protects it */
	ct->image = image;
	ct->image_blocks = meta.n_blocks;
	ct->dead_keys = dead;
	pg_atomic_write_u32(&ct->dirty, 0);
	/*
	 * Blocks of an older, longer image behind the tree go -- but a first
	 * segment stays whole while a later one exists: md.c takes a short
	 * segment for the end of the file (src/buffer/io.c, fill_segment).
	 */
	ls_file_of(tbl, &file);
	if (ls_file_path(NULL, &file, 0, path, sizeof(path)) &&
		!(meta.n_blocks < RELSEG_SIZE && ls_file_segment_exists(&file, 1)))
	{
		/* no page is allocated meanwhile: tree_lock or the shutdown */
		ls_bm_dt_clip_reserved(ls_cold->bm, ct->tree.dt_id, meta.n_blocks);
		if (truncate(path, (off_t) Min(meta.n_blocks, RELSEG_SIZE) * BLCKSZ) != 0)
			ereport(WARNING,
					(errcode_for_file_access(),
					 errmsg("could not truncate file \"%s\": %m", path)));
		/*
		 * A scan may have made segment 1 (tableam.c ls_cover_blocks) after
		 * the look above: segment 0 whole again, or md.c fails its
		 * prefetches.  (The buffer pool makes segments only for tree
		 * pages, which this clean point's tree does not reach.)
		 */
		else if (meta.n_blocks < RELSEG_SIZE && ls_file_segment_exists(&file, 1) &&
				 truncate(path, (off_t) RELSEG_SIZE * BLCKSZ) != 0)
			ereport(WARNING,
					(errcode_for_file_access(),
					 errmsg("could not extend file \"%s\": %m", path)));
	}
	pg_atomic_fetch_add_u64(&ls_cold->tables_packed, 1);
	return true;
}

/* Does segment segno of file exist? */
static bool
ls_file_segment_exists(const ls_bm_file *file, uint32 segno)
{
	char		path[MAXPGPATH];
	struct stat st;

	return ls_file_path(NULL, file, segno, path, sizeof(path)) && stat(path, &st) == 0;
}

static bool
ls_table_persists(ls_hot_table *tbl)
{
	uint32		p = ls_hot_table_get_tag(tbl, LS_TAG_PERSISTENCE);

	return p != 0 && p != RELPERSISTENCE_TEMP && ls_hot_table_get_tag(tbl, LS_TAG_READY) != 0;
}

/*
 * Clean shutdown: write every permanent and unlogged table, then mark the
 * state clean.  The caller (the worker) has waited until it is the only
 * process attached to the hot tier, so no row changes meanwhile.
 *
 * The state becomes clean (the log's replay start moves to its end) only
 * when every table was written.  When one could not be (a full disk, an
 * I/O error: WARNING), no clean image is written for any table, and the
 * state stays "running" with the old replay start: the next start recovers
 * from the log, as after a crash (the undo journals take the files back to
 * their last clean images).  Before, such a table was left to the next
 * start, which took its last checkpoint's image for it with nothing
 * replayed: the rows written since were silently gone.  A clean image
 * that cannot be written once the others were leaves the same state as a
 * crash among those writes, which recovery handles too (crash point
 * "shutdown-meta").
 */
void
ls_cold_pack_all(uint64 log_end)
{
	ls_hot	   *hot = ls_shared_hot();
	uint32		cursor;
	Snapshot	snapshot;
	ls_hot_table *tbl;
	uint64	   *dead;
	uint64		image;
	ls_status	st;
	bool		written = true;

	StartTransactionCommand();
	snapshot = RegisterSnapshot(GetTransactionSnapshot());
	dead = palloc0(sizeof(uint64) * ls_cold->max_tables);
	LWLockAcquire(ls_cold->adopt_lock, LW_EXCLUSIVE);
	/* the walk over the tables runs in an epoch, as ls_hot_table_next wants */
	ls_epoch_enter();
	cursor = 0;
	while ((tbl = ls_hot_table_next(hot, &cursor)) != NULL)
	{
		if (ls_table_persists(tbl) && !ls_shutdown_rows(tbl, snapshot, &dead[cursor - 1]))
			written = false;
	}
	ls_epoch_exit();
	st = ls_bm_flush_all(ls_cold->bm);
	if (st != LS_OK)
	{
		ereport(WARNING,
				(errcode(ERRCODE_IO_ERROR),
				 errmsg("could not write leanstore's buffer pool at shutdown: %s",
						ls_status_str(st))));
		written = false;
	}
	ls_epoch_enter();
	cursor = 0;
	image = ls_cold_new_image_id();
	while (written && (tbl = ls_hot_table_next(hot, &cursor)) != NULL)
	{
		if (!ls_table_persists(tbl))
			continue;
		if (!ls_clean_meta(tbl, dead[cursor - 1], image))
			written = false;
		else
			ls_debug_crash("shutdown-meta");
	}
	ls_epoch_exit();
	LWLockRelease(ls_cold->adopt_lock);
	UnregisterSnapshot(snapshot);
	CommitTransactionCommand();
	if (!written)
	{
		ereport(WARNING,
				(errcode(ERRCODE_IO_ERROR),
				 errmsg("leanstore tables were not all written at shutdown"),
				 errdetail("The next start recovers them from leanstore's log, as after a crash.")));
		return;
	}
	ls_cold->log_start = log_end;
	ls_cold->cover_pos = log_end;
	ls_state_write(true, WARNING);
}

/* ------------------------------------------------------------------------
 * Opening a table after a clean restart
 * ------------------------------------------------------------------------ */

/* A DEAD rowid of the last run becomes a DEAD slot again. */
static ls_status
ls_adopt_dead(ls_hot_table *tbl, uint64 rowid)
{
	ls_hot_ctx *ctx = ls_ctx();
	ls_hot_version *v;
	ls_hot_row *row;
	ls_status	st;

#ifdef LS_ASSERTS
	/* regress ls_hold: VACUUM meets a hot tier that stays full */
	if (unlikely(ls_test_fail_armed == LS_FAIL_DEAD_SLOT))
		return LS_NO_SPACE;
#endif
	st = ls_hot_version_alloc(ctx, SizeofMinimalTupleHeader, &v);
	if (st != LS_OK)
		return st;
	ls_epoch_enter();
	st = ls_hot_row_insert(ctx, tbl, rowid, LS_ORIGIN_INSERTED, v, &row);
	if (st == LS_OK)
	{
		ls_row_lock(row);
		ls_row_forget_latch();
		ls_hot_row_remove(ctx, tbl, row, true);
	}
	ls_epoch_exit();
	if (st != LS_OK)
		ls_hot_version_free(ctx, v);
	return st;
}

/*
 * Recovery and adoption (before any backend uses tbl): rowid becomes DEAD,
 * or, when the hot tier has no room for its slot, joins the table's holes
 * range, which VACUUM and the visibility map treat alike (its index entries
 * go before a bit is set over it).  Replay stores rows the tier has no room
 * for in the cold tree; their tombstones must not then fail for want of a
 * DEAD slot.  ls_dead_as_holes counts them in this process: the recovery's
 * LOG line (the log writer) and an adoption's (a backend) report them.
 */
uint64		ls_dead_as_holes = 0;

static ls_status
ls_adopt_dead_or_hole(ls_hot_table *tbl, uint64 rowid)
{
	ls_status	st = ls_adopt_dead(tbl, rowid);

	if (st == LS_NO_SPACE || st == LS_NO_MEMORY)
	{
		ls_holes_add(tbl, rowid, rowid + 1);
		ls_dead_as_holes++;
		st = LS_OK;
	}
	return st;
}

static void
ls_adopt_fail(const char *name, ls_hot_table *tbl, LsColdTable *ct, const char *what, ls_status st)
{
	if (ct != NULL)
	{
		ls_btree_drop(&ct->tree);
		pg_atomic_write_u32(&ct->used, 0);
	}
	if (tbl != NULL)
		ls_hot_table_drop(ls_ctx(), tbl);
	LWLockRelease(ls_cold->adopt_lock);
	if (st == LS_NO_SPACE || st == LS_NO_MEMORY)
		ls_report_status(st, NULL, "open");
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("could not open leanstore table \"%s\" from its file: %s (%s)",
					name, what, ls_status_str(st))));
}

/*
 * A file whose tree was being changed at a crash goes back to its last
 * clean image: the undo journal saved every block of that image before it
 * was overwritten.  A journal of an older image (its meta page is clean
 * and names a newer one) is left alone.  pg is scratch.
 */
static void
ls_cold_undo(const ls_bm_file *file, ls_page *pg, const char *name)
{
	LsColdMeta	meta;
	uint64		image;
	uint32		restored = 0;
	ls_status	st;

	if (ls_bm_undo_image(ls_cold->bm, file, &image) != LS_OK)
		return;
	/*
	 * A file without a byte holds no image (that has its meta page at
	 * least, synced): an unlogged table PostgreSQL reset after the crash,
	 * or a storage whose tree was never written.  The journal is not its.
	 */
	if (ls_file_is_empty(file))
		return;
	st = ls_bm_read_file_block(ls_cold->bm, file, 0, pg);
	if (st == LS_OK && ls_meta_of(pg, &meta) &&
		meta.version == LS_META_VERSION && !(meta.flags & LS_META_DIRTY) &&
		meta.image != image)
		return;
	st = ls_bm_undo_apply(ls_cold->bm, file, image, &restored);
	if (st != LS_OK)
		ereport(WARNING,
				(errcode(ERRCODE_IO_ERROR),
				 errmsg("could not bring leanstore table \"%s\" back to its last clean image: %s",
						name, ls_status_str(st))));
	else if (restored > 0)
		ereport(LOG,
				(errmsg("restored %u blocks of leanstore table \"%s\" from its undo journal",
						restored, name)));
}

/*
 * The file (its first segment) was never written: it does not exist, has
 * no byte, or holds only a hole -- scans that PostgreSQL prefetches through
 * md.c extend segments without writing them (tableam.c ls_cover_blocks).
 * Where the file system cannot tell holes (SEEK_DATA unsupported: EINVAL),
 * only a file without a byte counts as empty.
 */
static bool
ls_file_is_empty(const ls_bm_file *file)
{
	char		path[MAXPGPATH];
	struct stat sb;
	int			fd;
	bool		empty;

	if (!ls_file_path(NULL, file, 0, path, sizeof(path)))
		return true;
	if (stat(path, &sb) != 0 || sb.st_size == 0)
		return true;
	fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
	if (fd < 0)
		return false;
	empty = lseek(fd, 0, SEEK_DATA) < 0 && errno == ENXIO;
	CloseTransientFile(fd);
	return empty;
}

/*
 * Open the storage node (known to the hot tier as key: a process without
 * a database cannot compute it) over its file, as the last clean shutdown wrote it
 * there.  Reads no row: they stay cold until used.  *res says what was
 * found: LS_ADOPT_OK (the table, READY), LS_ADOPT_EMPTY (the file has no
 * page: nothing was ever written there), LS_ADOPT_LOST (an image that
 * cannot be trusted; *why says why).  Somebody else may have opened or
 * created it meanwhile: then that table is returned (LS_ADOPT_OK), or
 * LS_ADOPT_LOST when it is not READY.
 */
ls_hot_table *
ls_cold_adopt_node(ls_hot_key key, const RelFileNode *node, char persistence,
				   const char *name, LsAdoptResult *res, const char **why)
{
	ls_hot_table *tbl = NULL;
	LsColdTable *ct;
	ls_bm	   *bm = ls_cold_bm();
	ls_bm_file	file;
	ls_page    *pg;
	LsColdMeta	meta;
	ls_status	st;
	uint32		index;
	uint64		dead = 0;

	*res = LS_ADOPT_LOST;
	*why = "leanstore keeps no temporary table across a restart.";
	if (bm == NULL || persistence == RELPERSISTENCE_TEMP)
		return NULL;
	LWLockAcquire(ls_cold->adopt_lock, LW_EXCLUSIVE);
	tbl = ls_hot_table_find(ls_shared_hot(), key);
	if (tbl != NULL)
	{
		/* opened by somebody else meanwhile (opening ends under the lock) */
		LWLockRelease(ls_cold->adopt_lock);
		if (ls_hot_table_get_tag(tbl, LS_TAG_READY) == 0)
		{
			*why = "It could not be written at the last shutdown.";
			return NULL;
		}
		*res = LS_ADOPT_OK;
		return tbl;
	}
	ls_file_for(&file, node->spcNode, node->dbNode, node->relNode, InvalidBackendId);
	pg = palloc(LS_PAGE_SIZE);
	ls_cold_undo(&file, pg, name);
	st = ls_bm_read_file_block(bm, &file, 0, pg);
	memcpy(&meta, pg->data, sizeof(meta));
	if (st == LS_OK && pg->hdr.dt_type != LS_DT_META)
		st = LS_CORRUPT;
	pfree(pg);
	if (st == LS_NOT_FOUND && !ls_file_is_empty(&file))
		st = LS_CORRUPT;		/* pages without a meta page in front */
	/*
	 * A tree created after the last clean point (no image to go back to):
	 * everything it held is in the log, the file starts empty.
	 */
	if (st == LS_OK && meta.magic == LS_META_MAGIC &&
		meta.version == LS_META_VERSION && (meta.flags & LS_META_DIRTY) && meta.image == 0 &&
		meta.db == key.db && meta.rel == key.rel)
		st = LS_NOT_FOUND;
	if (st == LS_NOT_FOUND)
	{
		LWLockRelease(ls_cold->adopt_lock);
		*res = LS_ADOPT_EMPTY;
		*why = "Its rows were never written to its file, and leanstore's log does not have them.";
		return NULL;
	}
	if (st != LS_OK || meta.magic != LS_META_MAGIC ||
		meta.version != LS_META_VERSION || meta.epoch != ls_cold->epoch ||
		(meta.flags & LS_META_DIRTY) ||
		meta.db != key.db || meta.rel != key.rel)
	{
		LWLockRelease(ls_cold->adopt_lock);
		if (st == LS_CHECKSUM || st == LS_CORRUPT || st == LS_IO_ERROR)
			ereport(WARNING,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("the meta page of leanstore table \"%s\" cannot be read: %s",
							name, ls_status_str(st))));
		if (st == LS_OK && meta.magic == LS_META_MAGIC && (meta.flags & LS_META_DIRTY))
			*why = "Its cold pages were being changed at a crash, and the undo journal that brings them back to their last clean image is missing or damaged (pg_leanstore/undo).";
		else if (st == LS_OK && meta.magic == LS_META_MAGIC && meta.epoch != ls_cold->epoch)
			*why = "Its file was written before a start that could not use leanstore's log: the log was missing, or the cluster was restored from a base backup (see the server log of that start).";
		else
			*why = "Its file holds no valid leanstore meta page.";
		return NULL;
	}

	/* findable from now on, but not READY: others wait for the lock */
	st = ls_hot_table_create(ls_ctx(), key, &tbl);
	if (st != LS_OK)
		ls_adopt_fail(name, NULL, NULL, "no room for its table descriptor", st);
	ls_hot_table_set_tag(tbl, LS_TAG_SPC, node->spcNode);
	ls_hot_table_set_tag(tbl, LS_TAG_PERSISTENCE, (uint32) persistence);
	ls_hot_table_set_fill(tbl, meta.fill_next, meta.fill_used);
	if ((ct = ls_cold_slot(tbl, &index)) == NULL)
		ls_adopt_fail(name, tbl, NULL, "no room for its cold descriptor", LS_NO_SPACE);
	st = ls_btree_open(bm, &ct->tree, &file, meta.n_blocks, meta.root_block, meta.height);
	if (st != LS_OK)
		ls_adopt_fail(name, tbl, NULL, "its tree cannot be opened", st);
	pg_atomic_write_u32(&ct->used, 1);
	pg_atomic_write_u64(&ct->cold_end, meta.cold_end);
	ct->image = meta.image;
	ct->image_blocks = meta.n_blocks;
	ct->dead_keys = meta.dead;
	pg_atomic_write_u64(&ct->rows, meta.rows);
	ct->rows_known = (meta.flags & LS_META_ROWS) != 0;
	if (meta.holes_hi != 0)
		ls_holes_add(tbl, (uint64) meta.holes_lo * LS_ROWS_PER_BLOCK,
					 (uint64) meta.holes_hi * LS_ROWS_PER_BLOCK);
	ls_hot_table_set_tag(tbl, LS_TAG_COLD, index);

	/*
	 * DEAD rowids of the last run become DEAD slots again.  Their keys stay
	 * in the tree (the tree is not changed by opening it: a crash before
	 * the next clean shutdown finds it as it was); that shutdown writes
	 * the DEAD keys anew.
	 */
	{
		uint8		start[9];
		uint32		slen = 1;
		uint64		holes_before = ls_dead_as_holes;

		start[0] = LS_KEY_DEAD_PREFIX;
		for (;;)
		{
			LsDeadScan ds = {0};

			CHECK_FOR_INTERRUPTS();
			st = ls_btree_scan_asc(&ct->tree, start, slen, ls_dead_cb, &ds);
			if (st != LS_OK)
				ls_adopt_fail(name, tbl, ct, "its DEAD rowids cannot be read", st);
			for (int i = 0; i < ds.n; i++)
			{
				if ((st = ls_adopt_dead_or_hole(tbl, ds.rowids[i])) != LS_OK)
					ls_adopt_fail(name, tbl, ct, "a DEAD rowid cannot be stored", st);
				dead++;
			}
			if (!ds.more || ds.n == 0)
				break;
			/* go on after the last key seen */
			slen = ls_dead_key(start, ds.rowids[ds.n - 1] + 1);
		}
		if (ls_dead_as_holes > holes_before)
			ereport(LOG,
					(errmsg("leanstore table \"%s\": " UINT64_FORMAT " of its " UINT64_FORMAT " DEAD rowids became holes for lack of hot memory",
							name, ls_dead_as_holes - holes_before, dead),
					 errdetail("VACUUM deletes their index entries as it would have for DEAD rowids.")));
	}
	if (dead != meta.dead)
		ls_adopt_fail(name, tbl, ct, "its DEAD rowid count does not match its meta page", LS_CORRUPT);

	/*
	 * Blocks merges freed before the image was written are in no node of
	 * it: find them (a walk of the inner nodes) so that the tree reuses
	 * them instead of growing the file.  Nobody writes the tree yet.
	 */
	{
		uint32		reclaimed;

		st = ls_btree_reclaim(&ct->tree, LS_TREE_FIRST_BLOCK, &reclaimed);
		if (st != LS_OK)
			ereport(WARNING,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("could not find the free pages of leanstore table \"%s\": %s",
							name, ls_status_str(st)),
					 errdetail("New pages of the table are added at the end of its file; reads report damaged pages where they meet them."),
					 errhint("Run leanstore_verify on the table.")));
	}

	/*
	 * The visibility map fork survived the restart.  Rows stay cold until a
	 * write migrates them; migrated rows carry the all-visible mark, and
	 * inserts below the old limit count as marked too, so every write
	 * clears the bit of the block it changes.
	 */
	ls_hot_table_raise_allvis_limit(tbl, meta.fill_next);
	ls_hot_table_set_tag(tbl, LS_TAG_READY, 1);
	LWLockRelease(ls_cold->adopt_lock);
	pg_atomic_fetch_add_u64(&ls_cold->tables_loaded, 1);
	*res = LS_ADOPT_OK;
	return tbl;
}

/*
 * The hot storage of rel after a restart: opened over its file, or, for an
 * unlogged table whose file PostgreSQL reset after a crash, a new empty
 * one.  NULL when it is lost; *why says why (for the error's detail).
 */
ls_hot_table *
ls_cold_adopt(Relation rel, const char **why)
{
	LsAdoptResult res;
	ls_hot_table *tbl;
	char		persistence = rel->rd_rel->relpersistence;

	tbl = ls_cold_adopt_node(ls_key_for_node(&rel->rd_node), &rel->rd_node, persistence,
							 RelationGetRelationName(rel), &res, why);
	if (tbl == NULL && persistence == RELPERSISTENCE_UNLOGGED &&
		(res == LS_ADOPT_EMPTY || res == LS_ADOPT_LOST) && ls_cold_unlogged_reset(rel))
	{
		/* a crash empties unlogged tables, as it does heap's */
		LWLockAcquire(ls_cold->adopt_lock, LW_EXCLUSIVE);
		tbl = ls_hot_table_find(ls_shared_hot(), ls_key_for_node(&rel->rd_node));
		if (tbl == NULL)
		{
			ls_status	st = ls_hot_table_create(ls_ctx(), ls_key_for_node(&rel->rd_node), &tbl);

			if (st != LS_OK)
			{
				LWLockRelease(ls_cold->adopt_lock);
				ls_report_status(st, rel, "open");
			}
			ls_hot_table_set_tag(tbl, LS_TAG_SPC, rel->rd_node.spcNode);
			ls_hot_table_set_tag(tbl, LS_TAG_PERSISTENCE, (uint32) persistence);
			ls_hot_table_set_tag(tbl, LS_TAG_READY, 1);
		}
		LWLockRelease(ls_cold->adopt_lock);
	}
	return tbl;
}

/*
 * Did PostgreSQL reset rel (unlogged) after a crash?  Its main fork then
 * is a copy of its init fork: empty, as leanstore creates it.
 */
static bool
ls_cold_unlogged_reset(Relation rel)
{
	return !ls_cold->clean_start &&
		smgrnblocks(RelationGetSmgr(rel), MAIN_FORKNUM) == 0;
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
	out->rows_migrated = pg_atomic_read_u64(&ls_cold->rows_migrated);
	out->cold_reads = pg_atomic_read_u64(&ls_cold->cold_reads);
	out->tables_packed = pg_atomic_read_u64(&ls_cold->tables_packed);
	out->tables_loaded = pg_atomic_read_u64(&ls_cold->tables_loaded);
	out->cold_pages = bs.allocated_pages;
	out->pages_leaked = bs.leaked_blocks;
	out->writes_spilled = pg_atomic_read_u64(&ls_cold->full_spills);
	for (int i = 0; i < ls_cold->max_tables; i++)
	{
		LsColdTable *ct = &ls_cold->tables[i];

		if (pg_atomic_read_u32(&ct->used) != 0 && ct->rows_known)
			out->cold_rows += pg_atomic_read_u64(&ct->rows);
	}
	out->epoch = ls_cold->epoch;
}

/* ------------------------------------------------------------------------
 * The leanstore worker: page provider, pack, and the writer at shutdown
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

/* A checkpoint when one is due (leanstore.checkpoint_timeout, max_log_size). */
static void
ls_worker_checkpoint(void)
{
	/* the shutdown writes every table anyway */
	if (ShutdownRequestPending || !ls_checkpoint_due())
		return;
	StartTransactionCommand();
	(void) ls_checkpoint(true);
	CommitTransactionCommand();
}

/* Pack while hot memory is above leanstore.pack_threshold (or always, eager). */
static void
ls_worker_pack(void)
{
	MemoryContext round;
	MemoryContext old;

	if (ShutdownRequestPending || (!ls_pack_eager && !ls_hot_over(ls_pack_threshold)))
		return;
	round = AllocSetContextCreate(CurrentMemoryContext, "leanstore pack round",
								  ALLOCSET_DEFAULT_SIZES);
	StartTransactionCommand();
	old = MemoryContextSwitchTo(round);
	PushActiveSnapshot(GetTransactionSnapshot());
	(void) ls_pack_pass(ls_pack_eager, Max(ls_pack_threshold - 10, 0), 4096);
	PopActiveSnapshot();
	MemoryContextSwitchTo(old);
	CommitTransactionCommand();
	MemoryContextDelete(round);
}

static void
ls_worker_exit(int code, Datum arg)
{
	ls_log_worker_appends(false);
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
	/* the log writer stays while this loop may log (also if it throws) */
	ls_log_worker_appends(true);
	before_shmem_exit(ls_worker_exit, (Datum) 0);

	while (!ShutdownRequestPending)
	{
		uint64		freed = ls_bm_provider_round(ls_cold->bm);

		pg_atomic_fetch_add_u64(&ls_cold->provider_rounds, 1);
		ls_worker_pack();
		ls_worker_checkpoint();
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

	/* shutdown: write every table (nothing logged), then say so */
	ls_log_worker_appends(false);
	if (!ls_wait_alone())
	{
		ereport(WARNING,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("leanstore tables were not written at shutdown: other processes still use them"),
				 errdetail("The next start will report them as lost.")));
		proc_exit(0);
	}
	ls_cold_pack_all(ls_log_end());
	proc_exit(0);
}
