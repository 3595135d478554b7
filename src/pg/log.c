/*
 * log.c - leanstore's log in PostgreSQL: what a transaction logs at commit,
 * the commit protocol, the log writer background worker, and recovery of
 * the hot tier from the log after a crash.
 *
 * src/pg/README.md ("Durability") has the protocol.  The invariants:
 *  - Commit order: in PRE_COMMIT a transaction that wrote permanent
 *    leanstore tables appends one after-image per row it wrote (the newest
 *    version, or a tombstone) and waits until the log writer made them
 *    durable; only then does PostgreSQL insert its commit record.  So a
 *    commit record that exists implies the log has the data, whatever
 *    synchronous_commit says and whoever flushes PostgreSQL's WAL.  The
 *    exception, a commit through PostgreSQL's WAL, puts the same records
 *    into an LS_XLOG_ROWS record before its commit record instead of
 *    waiting; the commit record's flush makes them durable there, and a
 *    replication slot keeps that WAL until leanstore's log has them.  A
 *    log-only commit (leanstore's log alone decides it) is the way of a
 *    transaction that wrote only leanstore rows when the path through the
 *    WAL is closed to it; under synchronous_commit = off it waits for
 *    nothing, and a later synchronous commit waits for it first
 *    (README.md, "Asynchronous commits").
 *  - Replay applies a row record only when clog says its xid committed
 *    (a log-only commit's: only when its LS_LR_COMMIT record is in the
 *    log), so nothing of a transaction that did not commit survives
 *    recovery.
 *  - Per row, GSN order is commit order: a transaction can write a row
 *    only after its last writer committed, i.e. after that writer's
 *    records were appended; so replay in GSN order ends with the newest
 *    image.  (Stream order need not be: see "Shadows" below.)
 *  - Rowids are reserved in the log before use (HWM records, durable before
 *    the rowid is handed out): an index entry in PostgreSQL's WAL never
 *    names a rowid that recovery could hand out again.
 *  - Storage creation and truncation are logged when they happen, drops in
 *    PRE_COMMIT; replay starts a relfilenode afresh at its creation, so the
 *    records of an older storage of the same number never reach a new one.
 *  - Nobody touches a leanstore table before recovery ends (ls_ctx waits).
 *  - Unlogged and temporary tables are never logged.
 */
#include "postgres.h"

#include <sys/stat.h>
#include <unistd.h>

#include "access/transam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "access/xloginsert.h"
#include "access/xlogreader.h"
#include "access/xlogutils.h"
#include "catalog/pg_class.h"
#include "common/relpath.h"
#include "lib/pairingheap.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "portability/instr_time.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "postmaster/walwriter.h"
#include "replication/slot.h"
#include "replication/syncrep.h"
#include "storage/condition_variable.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lock.h"
#include "storage/pmsignal.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
#include "storage/smgr.h"
#include "utils/guc.h"
#include "utils/guc_tables.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "leanstore/wal.h"
#include "ls_pg.h"

char	   *ls_log_directory = NULL;
int			ls_log_buffer_kb = 256;
int			ls_checkpoint_timeout_s = 300;
int			ls_max_log_size_mb = 1024;
bool		ls_log_committer_rounds = true;
bool		ls_commit_via_wal = true;

/*
 * Fault injection for the crash tests (superuser, not in the sample file):
 * the process that reaches the named point kills itself with SIGKILL, as a
 * crash would; a failing log device makes the writer's next write or sync
 * fail with EIO.
 */
char	   *ls_debug_crash_point = NULL;
static int	ls_debug_log_fault = 0;
static int	ls_debug_recovery_delay_ms = 0;
static int	ls_debug_round_delay_ms = 0;
static bool ls_debug_hold_my_log = false;
static bool ls_holding_my_log = false;
static int	ls_debug_checkpoint_pause_ms = 0;
static int	ls_debug_image_pause_ms = 0;
static int	ls_debug_update_lock = 0;

static const struct config_enum_entry ls_log_fault_options[] = {
	{"none", 0, false},
	{"write", 1, false},
	{"sync", 2, false},
	{NULL, 0, false}
};

/* The points ls_debug_crash is called with (and the GUC's description). */
static const char *const ls_crash_points[] = {
	"commit-before-log", "commit-after-log", "commit-error-after-log",
	"commit-via-wal", "drop-commit", "recovery-fail", "recovery-replay",
	"recovery-relog", "recovery-end", "bulk-load", "pack", "checkpoint-clean",
	"checkpoint-relog", "commit-async-split", "shutdown-meta",
	"commit-error-slow-abort"
};

static bool
ls_crash_point_known(const char *point)
{
	for (int i = 0; i < (int) lengthof(ls_crash_points); i++)
		if (strcmp(ls_crash_points[i], point) == 0)
			return true;
	return false;
}

/* leanstore.debug_crash_point: empty or a known point (a typo never crashes) */
static bool
ls_check_crash_point(char **newval, void **extra, GucSource source)
{
	StringInfoData known;

	(void) extra;
	(void) source;
	if (*newval == NULL || (*newval)[0] == '\0' || ls_crash_point_known(*newval))
		return true;
	/* a StringInfo: a fixed buffer cut the list short once it grew */
	initStringInfo(&known);
	for (int i = 0; i < (int) lengthof(ls_crash_points); i++)
		appendStringInfo(&known, "%s%s", i > 0 ? ", " : "", ls_crash_points[i]);
	GUC_check_errdetail("Known points: %s.", known.data);
	return false;
}

/* leanstore.log_directory: a path, not empty */
static bool
ls_check_log_directory(char **newval, void **extra, GucSource source)
{
	(void) extra;
	(void) source;
	if (*newval != NULL && (*newval)[0] != '\0')
		return true;
	GUC_check_errdetail("leanstore.log_directory must name a directory.");
	return false;
}

/*
 * leanstore.debug_recovery_delay, leanstore.debug_checkpoint_pause: a test
 * lets others run at that point (the server log says when it begins)
 */
static void
ls_debug_pause(const char *setting, int ms)
{
	TimestampTz until = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), ms);
	long		left;

	ereport(LOG,
			(errmsg("leanstore pauses %d ms here (%s)", ms, setting)));
	while (!ShutdownRequestPending &&
		   (left = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), until)) > 0)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 left, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/* leanstore.debug_image_pause: between an image's first chunk and the rest. */
void
ls_debug_image_pause(void)
{
	if (unlikely(ls_debug_image_pause_ms > 0))
		ls_debug_pause("leanstore.debug_image_pause", ls_debug_image_pause_ms);
}

/*
 * leanstore.debug_update_lock: an update whose new version goes into the
 * cold tree waits for the advisory lock with that key between its two
 * steps: made in the cold tier, after the row was locked in its image;
 * spilled (the hot tier full), after the image was written and before the
 * old version names it.  pg_advisory_lock(key) in another session holds it
 * back; isolationtester sees the wait.
 */
void
ls_debug_update_wait(void)
{
	LOCKTAG		tag;

	if (likely(ls_debug_update_lock == 0))
		return;
	/* as pg_advisory_lock(bigint) names its lock */
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, 0, (uint32) ls_debug_update_lock, 1);
	(void) LockAcquire(&tag, ShareLock, false, false);
	LockRelease(&tag, ShareLock, false);
}

/* Is leanstore.debug_crash_point set to point? */
static inline bool
ls_debug_point_is(const char *point)
{
	Assert(ls_crash_point_known(point));
	return unlikely(ls_debug_crash_point != NULL && ls_debug_crash_point[0] != '\0') &&
		strcmp(ls_debug_crash_point, point) == 0;
}

void
ls_debug_crash(const char *point)
{
	if (ls_debug_point_is(point))
	{
		/*
		 * The points that fail instead: an error after the log's commit
		 * (the second one's abort then waits 10 s before its LS_LR_ABORT)
		 */
		if (strcmp(point, "commit-error-after-log") == 0 ||
			strcmp(point, "commit-error-slow-abort") == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("failing at \"%s\" (leanstore.debug_crash_point)", point)));
		/* ... and a recovery that fails (what backends see then) */
		if (strcmp(point, "recovery-fail") == 0)
			ereport(FATAL,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("failing at \"%s\" (leanstore.debug_crash_point)", point)));
		ereport(LOG,
				(errmsg("crashing at \"%s\" (leanstore.debug_crash_point)", point)));
		(void) kill(MyProcPid, SIGKILL);
		pg_usleep(10 * 1000 * 1000L);	/* not reached */
	}
}

/* The log writer hit an I/O error: nothing written since is durable. */
static void pg_attribute_noreturn()
ls_log_writer_failed(void)
{
	ereport(PANIC,
			(errcode(ERRCODE_IO_ERROR),
			 errmsg("leanstore's log writer failed; the server must restart")));
	pg_unreachable();
}

#define LS_LOG_SEGMENT		(16 * 1024 * 1024)
#define LS_CKPT_WAIT_MS		10000	/* a checkpoint waits for running writers */
#define LS_LOG_AHEAD		3		/* segments prepared ahead of the end */
#define LS_LOG_WAIT_MS		100		/* committers look up this often */

/*
 * Rowids are reserved in the log in steps of 2^16 (about 230 virtual
 * blocks of pgbench_accounts' shape): after a crash, every rowid between a
 * table's last clean image and its reservation that holds no row becomes
 * DEAD (a crashed transaction may have handed it out, and its index
 * entries are in PostgreSQL's WAL), so the step bounds that work and
 * memory (at most two steps: 131072 DEAD rowids, 1.3 MB of RID-map chunks
 * until VACUUM, logged as runs).  Each step costs the inserting backend a
 * wait for the log to be durable (ls_log_rowid_used): with steps of 2^12 a
 * COPY of 2M rows waited 488 times and took 2.4-3x heap's time, with 2^16
 * 1.1-1.35x (bench/run load, COPY of 10M rows: 2.63x heap on 69326e1).
 */
#define LS_HWM_SHIFT		16

/* Custom WAL resource manager: a leanstore-only transaction's WAL record. */
#define LS_RMGR_ID			141
#define LS_XLOG_COMMIT		0x00
#define LS_XLOG_BULK		0x10	/* a bulk load's xid, before its first
									 * row goes into a tree */
#define LS_XLOG_ROWS		0x20	/* a commit through PostgreSQL's WAL: the
									 * transaction's row records, as appended
									 * to leanstore's log (headers, GSNs) */

/*
 * Commits through PostgreSQL's WAL ("Commits through PostgreSQL's WAL"
 * below): a transaction's row records go into one WAL record up to this
 * size; a larger transaction waits for leanstore's log as before.
 */
#define LS_WAL_COPY_MAX		(512 * 1024)
/* the physical replication slot that keeps the WAL holding such records */
#define LS_WAL_COPY_SLOT	"leanstore"
/* where recovery starts reading that WAL (this run's first record) */
#define LS_WAL_COPY_FILE	LS_STATE_DIR "/wal_copy_start"

/* Record types (ls_wal_rec.type) and flags */
#define LS_LR_ROW			1		/* after-image of a row */
#define LS_LR_TOMB			2		/* the row was deleted */
#define LS_LR_CREATE		3		/* storage created (empty) */
#define LS_LR_TRUNCATE		4		/* storage emptied in place */
#define LS_LR_DROP			5		/* storage dropped at commit of xid */
#define LS_LR_DROPDB		6		/* every storage of a database dropped */
#define LS_LR_HWM			7		/* rowids below value may be in use */
#define LS_LR_PUT			8		/* a cold image stored (pack, bulk load,
									 * VACUUM's freeze) */
#define LS_LR_REMOVE		9		/* a cold image removed, the rowid DEAD */
#define LS_LR_DEAD			10		/* rowids [value, value + len) that hold no
									 * row are DEAD (a checkpoint's record) */
#define LS_LR_PUTS			11		/* cold images of one loader stored (a
									 * bulk load's batch): LsLogPut entries */
#define LS_LR_COMMIT		12		/* xid (and the committed subxids in the
									 * payload) committed: a log-only commit */
#define LS_LR_ABORT			13		/* a log-only commit's transaction failed
									 * after all: xid and subxids aborted */

#define LS_LRF_FROZEN		0x0001	/* applies whatever clog says of xid */
#define LS_LRF_LOG_DECIDED	0x0002	/* a row record of a log-only commit:
									 * committed only by its LS_LR_COMMIT
									 * record, whatever clog says */

/* Body of every record: the storage it is about. */
typedef struct LsLogTarget
{
	Oid			key_spc;		/* ls_hot_key as the writer computed it */
	Oid			db;
	Oid			rel;
	Oid			spc;			/* the real tablespace (file path) */
	uint64		value;			/* rowid (ROW, TOMB), bound (HWM), first (DEAD) */
	uint32		len;			/* payload bytes after this header (ROW),
								 * rowids (DEAD) */
	uint32		persistence;	/* CREATE; DEAD: LS_DEAD_HOLES or 0 */
} LsLogTarget;

/*
 * An LS_LR_DEAD record of a table's holes range (cold.c "Holes"): replay
 * widens the range.  0: DEAD rowids, each made a DEAD slot.
 */
#define LS_DEAD_HOLES		1

/*
 * One image of an LS_LR_PUTS record (target.value: the first rowid;
 * target.len: the bytes of all entries), followed by its payload.
 */
typedef struct LsLogPut
{
	uint32		delta;			/* rowid - target.value */
	uint32		len;			/* payload bytes */
} LsLogPut;

StaticAssertDecl(sizeof(LsLogPut) == LS_LOG_PUT_HEAD, "LS_LOG_PUT_HEAD is an entry's header");

typedef struct LsLogShared
{
	ls_wal	   *wal;
	Size		wal_size;
	uint32		max_record;		/* ls_wal_max_record of the log's config */
	pg_atomic_uint32 state;		/* LS_LOG_RECOVERING, _READY, _FAILED */
	ConditionVariable cv;
	pg_atomic_uint64 commits;	/* transactions that waited for the log */
	pg_atomic_uint64 log_only_commits;	/* of them, committed by the log alone */
	pg_atomic_uint64 wal_copy_commits;	/* committed through PostgreSQL's WAL */
	pg_atomic_uint32 via_wal;	/* LS_VIA_WAL_*: may commits go through
								 * PostgreSQL's WAL? */
	pg_atomic_uint64 records;	/* records appended */
	pg_atomic_uint64 bytes;		/* record bytes appended */
	pg_atomic_uint64 wait_us;	/* time committers waited */
	pg_atomic_uint64 rounds;	/* group-commit rounds that wrote */
	pg_atomic_uint64 round_us;	/* time those rounds took */
	pg_atomic_uint64 round_records;
	pg_atomic_uint32 ckpt_running;	/* one checkpoint at a time */
	pg_atomic_uint32 worker_appends;	/* the leanstore worker may still
										 * append (pack, checkpoints): the
										 * writer stays at shutdown */
	pg_atomic_uint64 checkpoints;	/* checkpoints that moved the replay start */
	uint64		checkpoint_us;	/* the last one took */
	TimestampTz last_checkpoint;	/* or the end of the recovery */
	uint64		ckpt_end;		/* the log's end when it finished */
	uint64		recovery_us;	/* the last recovery */
	uint64		recovery_records;
	uint64		recovery_rows;
	uint64		recovery_tables;
	uint64		recovery_wal_records;	/* taken from PostgreSQL's WAL */

	/*
	 * Asynchronous commits (synchronous_commit = off), README.md
	 * "Asynchronous commits".  async_gsn: the largest GSN of a log-only
	 * commit that returned without waiting; a synchronous commit makes the
	 * log durable up to it first.  async_lsn: the largest commit record end
	 * of an asynchronous commit decided by PostgreSQL's WAL; async_running:
	 * such commits between PRE_COMMIT and their publishing async_lsn.  A
	 * synchronous log-only commit, which waits for no WAL flush of its own,
	 * flushes PostgreSQL's WAL when either says it may hold one.
	 */
	pg_atomic_uint64 async_gsn;
	pg_atomic_uint64 async_lsn;
	pg_atomic_uint32 async_running;
	pg_atomic_uint64 async_commits; /* log-only commits that did not wait */

	/*
	 * LS_LR_COMMIT records appended so far (counted before the append), and
	 * the count a round's ls_log_before_round_write last saw: a round with
	 * no log-only commit since then flushes no WAL.
	 */
	pg_atomic_uint64 log_only_seq;
	pg_atomic_uint64 log_only_seq_seen;

	/* slots of ls_in_doubt in use (ls_xid_in_progress) */
	pg_atomic_uint32 in_doubt_n;

	/*
	 * The oldest xid that replay of the log may ask clog about
	 * (ls_log_xid_horizon; "Checkpoints" below): xid_min[i] is the oldest
	 * such xid of the records appended while slot i was active (0: none),
	 * xid_active the active slots, xid_window the oldest of the records
	 * appended since the cut of the checkpoint before the last one that
	 * finished, xid_gen odd while a checkpoint changes the slots' roles.
	 * xid_cur (active since the cut of the last checkpoint that finished)
	 * and xid_cand (since the running checkpoint's cut; -1: none) are the
	 * checkpoint's own (ckpt_running).
	 */
	pg_atomic_uint32 xid_min[3];
	pg_atomic_uint32 xid_active;
	pg_atomic_uint32 xid_window;
	pg_atomic_uint32 xid_gen;
	int			xid_cur;
	int			xid_cand;
} LsLogShared;

/*
 * A log-only commit whose LS_LR_COMMIT is appended, until its transaction
 * ended: top its top xid (InvalidTransactionId: the slot is free), its
 * committed subxids in sub[] when they fit (nsub), else nsub is
 * LS_IN_DOUBT_SUBS + 1 and hi the largest of them: every xid from top to hi
 * counts.  One slot per backend, after LsLogShared (ls_xid_in_progress).
 */
#define LS_IN_DOUBT_SUBS 15

typedef struct LsInDoubt
{
	pg_atomic_uint32 top;
	pg_atomic_uint32 nsub;
	pg_atomic_uint32 hi;
	pg_atomic_uint32 sub[LS_IN_DOUBT_SUBS];
} LsInDoubt;

static LsInDoubt *ls_in_doubt = NULL;
static bool ls_in_doubt_mine = false;

#define LS_IN_DOUBT_SIZE() MAXALIGN(mul_size(MaxBackends + 1, sizeof(LsInDoubt)))

/* LsLogShared.via_wal */
#define LS_VIA_WAL_NEVER	0		/* not in this run (no such record in the WAL) */
#define LS_VIA_WAL_ON		1		/* the log writer's slot keeps the WAL */
#define LS_VIA_WAL_PAUSED	2		/* it was on: the slot stays, no new ones */

#define LS_LOG_RECOVERING	0
#define LS_LOG_READY		1
#define LS_LOG_FAILED		2

static LsLogShared *ls_log = NULL;

/* This process replays the log (ls_ctx must not wait for itself). */
static bool ls_log_recovering_here = false;

/*
 * This transaction wrote one of its xids into a cold image (a spilled
 * insert, a cold delete or lock, a bulk load): clog must know its outcome
 * after a crash, so it commits through PostgreSQL's commit record.
 */
static bool ls_xact_cold_xid = false;

/*
 * Valid once a log-only commit's record was appended (ls_log_pre_commit):
 * if the transaction fails after all, its abort must reach the log too.
 * The committed subxids are kept for that abort record.
 */
static TransactionId ls_commit_xid = InvalidTransactionId;
static TransactionId *ls_commit_children = NULL;
static int	ls_commit_nchildren = 0;

static void ls_log_before_round_write(void *arg);

static Size
ls_log_wal_size(ls_wal_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->before_write = ls_log_before_round_write;
	cfg->max_slots = (uint32) MaxBackends + 1;
	cfg->slot_buffer = (uint32) ls_log_buffer_kb * 1024;
	cfg->segment_size = LS_LOG_SEGMENT;
	cfg->round_buffer = Max(4 * cfg->slot_buffer, 4 * 1024 * 1024);
	return ls_wal_region_size(cfg);
}

/* ------------------------------------------------------------------------
 * Shared memory
 * ------------------------------------------------------------------------ */

Size
ls_log_shmem_size(void)
{
	ls_wal_config cfg;

	return add_size(add_size(MAXALIGN(sizeof(LsLogShared)), LS_IN_DOUBT_SIZE()),
					add_size(ls_log_wal_size(&cfg), 4096));
}

void
ls_log_shmem_startup(void)
{
	bool		found;
	ls_wal_config cfg;
	ls_status	st;
	void	   *region;

	ls_log = ShmemInitStruct("leanstore log", ls_log_shmem_size(), &found);
	ls_in_doubt = (LsInDoubt *) ((char *) ls_log + MAXALIGN(sizeof(LsLogShared)));
	if (found)
		return;
	memset(ls_log, 0, sizeof(LsLogShared));
	ls_log->wal_size = ls_log_wal_size(&cfg);
	ls_log->max_record = ls_wal_max_record(&cfg);
	region = (void *) TYPEALIGN(4096, (char *) ls_in_doubt + LS_IN_DOUBT_SIZE());
	st = ls_wal_init(region, ls_log->wal_size, &cfg, &ls_log->wal);
	if (st != LS_OK)
		ereport(FATAL,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not format leanstore's log buffers: %s", ls_status_str(st))));
	pg_atomic_init_u32(&ls_log->state, LS_LOG_RECOVERING);
	ConditionVariableInit(&ls_log->cv);
	pg_atomic_init_u64(&ls_log->commits, 0);
	pg_atomic_init_u64(&ls_log->log_only_commits, 0);
	pg_atomic_init_u64(&ls_log->wal_copy_commits, 0);
	pg_atomic_init_u32(&ls_log->via_wal, 0);
	pg_atomic_init_u64(&ls_log->records, 0);
	pg_atomic_init_u64(&ls_log->bytes, 0);
	pg_atomic_init_u64(&ls_log->wait_us, 0);
	pg_atomic_init_u64(&ls_log->rounds, 0);
	pg_atomic_init_u64(&ls_log->round_us, 0);
	pg_atomic_init_u64(&ls_log->round_records, 0);
	pg_atomic_init_u32(&ls_log->ckpt_running, 0);
	pg_atomic_init_u32(&ls_log->worker_appends, 0);
	pg_atomic_init_u64(&ls_log->checkpoints, 0);
	pg_atomic_init_u64(&ls_log->async_gsn, 0);
	pg_atomic_init_u64(&ls_log->async_lsn, 0);
	pg_atomic_init_u32(&ls_log->async_running, 0);
	pg_atomic_init_u64(&ls_log->log_only_seq, 0);
	pg_atomic_init_u64(&ls_log->log_only_seq_seen, 0);
	pg_atomic_init_u64(&ls_log->async_commits, 0);
	pg_atomic_init_u32(&ls_log->in_doubt_n, 0);
	for (int i = 0; i < 3; i++)
		pg_atomic_init_u32(&ls_log->xid_min[i], InvalidTransactionId);
	pg_atomic_init_u32(&ls_log->xid_active, 1);
	pg_atomic_init_u32(&ls_log->xid_window, InvalidTransactionId);
	pg_atomic_init_u32(&ls_log->xid_gen, 0);
	ls_log->xid_cur = 0;
	ls_log->xid_cand = -1;
	for (int i = 0; i <= MaxBackends; i++)
	{
		pg_atomic_init_u32(&ls_in_doubt[i].top, InvalidTransactionId);
		pg_atomic_init_u32(&ls_in_doubt[i].nsub, 0);
		pg_atomic_init_u32(&ls_in_doubt[i].hi, InvalidTransactionId);
		for (int j = 0; j < LS_IN_DOUBT_SUBS; j++)
			pg_atomic_init_u32(&ls_in_doubt[i].sub[j], InvalidTransactionId);
	}
}

/*
 * The log writer exits during recovery (a FATAL, e.g. the hot tier cannot
 * hold what the log has): backends waiting for recovery, and those that
 * come until a new log writer's recovery succeeds, get an error that
 * points to the server log instead of waiting for ever.
 */
static void
ls_log_recovery_exit(int code, Datum arg)
{
	if (ls_log != NULL && ls_log_recovering_here)
	{
		pg_atomic_write_u32(&ls_log->state, LS_LOG_FAILED);
		ConditionVariableBroadcast(&ls_log->cv);
	}
}

/* Wait until recovery has made the tables usable (ls_ctx, first use). */
void
ls_log_wait_ready(void)
{
	uint32		state;

	if (ls_log == NULL || ls_log_recovering_here)
		return;
	state = pg_atomic_read_u32(&ls_log->state);
	if (likely(state == LS_LOG_READY))
		return;
	/* the log writer starts when recovery ends: never, on a standby */
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("leanstore tables cannot be used during recovery or on a standby"),
				 errdetail("Their rows are in leanstore's own log, not in PostgreSQL's WAL.")));
	/* nor in single-user mode, which starts no background worker */
	if (!IsUnderPostmaster)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("leanstore tables cannot be used in single-user mode"),
				 errdetail("Leanstore's log writer, which recovers and logs their rows, is a background worker, and single-user mode starts none.")));
	ConditionVariablePrepareToSleep(&ls_log->cv);
	while ((state = pg_atomic_read_u32(&ls_log->state)) == LS_LOG_RECOVERING)
		(void) ConditionVariableTimedSleep(&ls_log->cv, 1000, PG_WAIT_EXTENSION);
	ConditionVariableCancelSleep();
	if (state == LS_LOG_FAILED)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("leanstore tables cannot be used: recovery from leanstore's log failed"),
				 errhint("See the server log of the \"leanstore log writer\" process.")));
}

/*
 * The leanstore worker says whether it may still append to the log (its
 * pack and checkpoints log).  At shutdown the writer leaves only once no
 * backend is attached and the worker has left its loop: an append after the
 * writer left waits forever for room in its slot (a checkpoint that was
 * running when the shutdown came hung the shutdown: space_full.sh).
 */
void
ls_log_worker_appends(bool on)
{
	if (ls_log != NULL)
	{
		pg_atomic_write_u32(&ls_log->worker_appends, on ? 1 : 0);
		if (!on)
			ls_wal_kick(ls_log->wal);
	}
}

/* End of the durable log (the clean shutdown's replay start). */
uint64
ls_log_end(void)
{
	return ls_log != NULL ? ls_wal_end(ls_log->wal) : 0;
}

void
ls_log_get_stats(LsLogStats *out)
{
	memset(out, 0, sizeof(*out));
	if (ls_log == NULL)
		return;
	out->commits = pg_atomic_read_u64(&ls_log->commits);
	out->log_only_commits = pg_atomic_read_u64(&ls_log->log_only_commits);
	out->async_commits = pg_atomic_read_u64(&ls_log->async_commits);
	out->wal_copy_commits = pg_atomic_read_u64(&ls_log->wal_copy_commits);
	out->recovery_wal_records = ls_log->recovery_wal_records;
	out->records = pg_atomic_read_u64(&ls_log->records);
	out->bytes = pg_atomic_read_u64(&ls_log->bytes);
	out->wait_us = pg_atomic_read_u64(&ls_log->wait_us);
	out->rounds = pg_atomic_read_u64(&ls_log->rounds);
	out->round_us = pg_atomic_read_u64(&ls_log->round_us);
	out->round_records = pg_atomic_read_u64(&ls_log->round_records);
	out->end = ls_wal_end(ls_log->wal);
	out->recovery_us = ls_log->recovery_us;
	out->recovery_records = ls_log->recovery_records;
	out->recovery_rows = ls_log->recovery_rows;
	out->recovery_tables = ls_log->recovery_tables;
	out->checkpoints = pg_atomic_read_u64(&ls_log->checkpoints);
	out->checkpoint_us = ls_log->checkpoint_us;
}

/* ------------------------------------------------------------------------
 * Appending
 * ------------------------------------------------------------------------ */

/* End of this backend's records so far (what commit waits for). */
static uint64 ls_my_log_end = 0;
static bool ls_my_log_pending = false;
static uint64 ls_my_last_gsn = 0;	/* GSN of its last record */

/*
 * This transaction commits asynchronously and PostgreSQL's WAL decides it:
 * it is counted in async_running until it published its commit record's
 * end in async_lsn (or aborted).
 */
static bool ls_async_running_mine = false;

/*
 * The row records of a commit through PostgreSQL's WAL, as they are
 * appended (ls_log_append_parts adds each while ls_copying): the body of
 * its LS_XLOG_ROWS record.  Too large: ls_copying goes off, ls_copy_full on.
 */
static StringInfoData ls_copy;
static bool ls_copying = false;
static bool ls_copy_full = false;
static bool ls_committed_via_wal = false;	/* this transaction's LS_XLOG_ROWS
											 * record was inserted */

static void
ls_copy_add(const ls_wal_rec *hdr_in, uint64 gsn, const void *const *parts,
			const uint32 *lens, uint32 nparts)
{
	ls_wal_rec	hdr = *hdr_in;
	uint64		body = 0;

	for (uint32 i = 0; i < nparts; i++)
		body += lens[i];
	if ((uint64) ls_copy.len + LS_WAL_REC_HDR + body > LS_WAL_COPY_MAX)
	{
		ls_copying = false;
		ls_copy_full = true;
		return;
	}
	hdr.len = (uint32) (LS_WAL_REC_HDR + body);
	hdr.slot = (uint32) MyBackendId;
	hdr.gsn = gsn;
	appendBinaryStringInfo(&ls_copy, (const char *) &hdr, LS_WAL_REC_HDR);
	for (uint32 i = 0; i < nparts; i++)
		appendBinaryStringInfo(&ls_copy, (const char *) parts[i], (int) lens[i]);
}

/*
 * The log writer appending itself (recovery's re-log): nobody else drains
 * its ring, so it runs a round before the ring could be full.
 */
static bool ls_log_self_writer = false;
static uint64 ls_self_pending = 0;

static void ls_log_round(bool lazy);
static void ls_log_lead_round(void);
static void ls_log_prepare(void);

/* *a = max(*a, v) */
static void
ls_atomic_max_u64(pg_atomic_uint64 *a, uint64 v)
{
	uint64		cur = pg_atomic_read_u64(a);

	while (cur < v && !pg_atomic_compare_exchange_u64(a, &cur, v))
		;
}

static bool
ls_log_permanent(ls_hot_table *tbl)
{
	return ls_hot_table_get_tag(tbl, LS_TAG_PERSISTENCE) == RELPERSISTENCE_PERMANENT;
}

static void
ls_log_target(LsLogTarget *t, ls_hot_key key, Oid spc, uint64 value)
{
	memset(t, 0, sizeof(*t));
	t->key_spc = key.spc;
	t->db = key.db;
	t->rel = key.rel;
	t->spc = spc;
	t->value = value;
}

/* A backend that held its slot (leanstore.debug_hold_my_log) lets it go. */
static void
ls_hold_my_log_exit(int code, Datum arg)
{
	(void) code;
	(void) arg;
	if (ls_holding_my_log && ls_log != NULL)
		ls_wal_hold_slot(ls_log->wal, (uint32) MyBackendId, false);
	ls_holding_my_log = false;
}

/* ------------------------------------------------------------------------
 * The oldest xid replay may ask clog about
 *
 * Replay decides a record that neither its flags (FROZEN, LOG_DECIDED) nor
 * a commit or abort record in the replayed log decide by clog
 * (ls_replay_committed).  PostgreSQL truncates clog below the oldest
 * datfrozenxid, the oldest relfrozenxid of any database; so leanstore's
 * VACUUM, CLUSTER and new storage hold relfrozenxid at or before the oldest
 * xid of such records in the replayed part of the log
 * (ls_log_xid_horizon).  Before, a VACUUM FREEZE of every database after a
 * million xids could let clog go below a CREATE record or a bulk load's
 * images, and a crash before the next checkpoint left every leanstore
 * table unusable: "could not access status of transaction"
 * (test/recovery/clog_horizon.sh).
 *
 * An appender notes its record's xid after the append (ls_log_note_xid)
 * in every active slot.  A checkpoint activates a fresh slot before its
 * cut (cover): a record at or after cover was appended after that, or was
 * noted in the slot that was active before (one appended before the cut is
 * durable before the checkpoint's start, so before the next checkpoint's
 * cover).  When the checkpoint finishes, the replayed part of the log
 * starts at its cover, and holds only records appended after the cut of
 * the checkpoint before it: xid_window becomes the old slot's oldest xid,
 * and the fresh slot goes on as xid_cur.
 * ------------------------------------------------------------------------ */

/* *a = the older of *a and xid (0: none yet) */
static void
ls_atomic_xid_min(pg_atomic_uint32 *a, TransactionId xid)
{
	uint32		cur = pg_atomic_read_u32(a);

	while ((cur == InvalidTransactionId || TransactionIdPrecedes(xid, cur)) &&
		   !pg_atomic_compare_exchange_u32(a, &cur, xid))
		;
}

/* the slots' generation this backend last noted ls_noted_xid in */
static uint32 ls_noted_gen = UINT32_MAX;
static TransactionId ls_noted_xid = InvalidTransactionId;

/* After its append: a record replay may decide by clog names xid. */
static void
ls_log_note_xid(TransactionId xid)
{
	uint32		gen;
	uint32		active;

	pg_memory_barrier();
	gen = pg_atomic_read_u32(&ls_log->xid_gen);
	/* a transaction's records share its xid: noted once per generation */
	if (xid == ls_noted_xid && gen == ls_noted_gen && (gen & 1) == 0)
		return;
	pg_read_barrier();
	active = pg_atomic_read_u32(&ls_log->xid_active);
	for (int i = 0; i < 3; i++)
	{
		if (active & (1u << i))
			ls_atomic_xid_min(&ls_log->xid_min[i], xid);
	}
	pg_memory_barrier();
	if (pg_atomic_read_u32(&ls_log->xid_gen) == gen)
	{
		ls_noted_xid = xid;
		ls_noted_gen = gen;
	}
}

/*
 * The oldest xid replay of the log may ask clog about; InvalidTransactionId
 * when none.  Any process.
 */
TransactionId
ls_log_xid_horizon(void)
{
	if (ls_log == NULL)
		return InvalidTransactionId;
	for (;;)
	{
		uint32		gen = pg_atomic_read_u32(&ls_log->xid_gen);
		uint32		active;
		TransactionId result;

		if (gen & 1)
		{
			pg_spin_delay();
			continue;
		}
		pg_read_barrier();
		active = pg_atomic_read_u32(&ls_log->xid_active);
		result = pg_atomic_read_u32(&ls_log->xid_window);
		for (int i = 0; i < 3; i++)
		{
			TransactionId v = pg_atomic_read_u32(&ls_log->xid_min[i]);

			if ((active & (1u << i)) && v != InvalidTransactionId &&
				(result == InvalidTransactionId || TransactionIdPrecedes(v, result)))
				result = v;
		}
		pg_read_barrier();
		if (pg_atomic_read_u32(&ls_log->xid_gen) == gen)
			return result;
	}
}

/* The older of xid and the log's horizon (VACUUM, new storage, CLUSTER). */
TransactionId
ls_log_hold_frozenxid(TransactionId xid)
{
	TransactionId h = ls_log_xid_horizon();

	if (TransactionIdIsNormal(h) && TransactionIdIsNormal(xid) &&
		TransactionIdPrecedes(h, xid))
		return h;
	return xid;
}

/* A checkpoint's cut: a fresh slot (the checkpoint's own, ckpt_running). */
static void
ls_log_xid_cut(void)
{
	int			f = 0;

	Assert(ls_log->xid_cand < 0);
	while (f == ls_log->xid_cur)
		f++;
	pg_atomic_fetch_add_u32(&ls_log->xid_gen, 1);
	pg_atomic_write_u32(&ls_log->xid_min[f], InvalidTransactionId);
	pg_write_barrier();
	pg_atomic_fetch_or_u32(&ls_log->xid_active, 1u << f);
	ls_log->xid_cand = f;
	pg_atomic_fetch_add_u32(&ls_log->xid_gen, 1);
	pg_memory_barrier();
}

/*
 * The checkpoint finished (ok: the replay start moved to its cut) or gave
 * up: the slots' roles change.
 */
static void
ls_log_xid_cut_done(bool ok)
{
	int			cand = ls_log->xid_cand;

	if (cand < 0)
		return;
	pg_atomic_fetch_add_u32(&ls_log->xid_gen, 1);
	if (ok)
	{
		int			cur = ls_log->xid_cur;

		pg_atomic_write_u32(&ls_log->xid_window,
							pg_atomic_read_u32(&ls_log->xid_min[cur]));
		pg_write_barrier();
		pg_atomic_fetch_and_u32(&ls_log->xid_active, ~(1u << cur));
		ls_log->xid_cur = cand;
	}
	else
		pg_atomic_fetch_and_u32(&ls_log->xid_active, ~(1u << cand));
	ls_log->xid_cand = -1;
	pg_atomic_fetch_add_u32(&ls_log->xid_gen, 1);
}

/*
 * Append a record: hdr's type, flags and xid, then t, then nparts parts
 * (part 0 is t itself; parts[1..nparts) the payload, len bytes in all).
 */
static void
ls_log_append_parts(uint16 type, uint16 flags, TransactionId xid,
					const void *const *parts, const uint32 *lens, uint32 nparts,
					uint64 len)
{
	ls_wal_rec	hdr;
	uint64		end;
	uint64		gsn;
	ls_status	st;

	if (MyBackendId == InvalidBackendId || MyBackendId > MaxBackends)
		elog(ERROR, "leanstore's log cannot be written from this process");
	memset(&hdr, 0, sizeof(hdr));
	hdr.type = type;
	hdr.flags = flags;
	hdr.xid = xid;
	if (unlikely(ls_debug_hold_my_log != ls_holding_my_log))
	{
		static bool exit_registered = false;

		/* leanstore.debug_hold_my_log: rounds leave this backend's records */
		if (!exit_registered)
		{
			before_shmem_exit(ls_hold_my_log_exit, (Datum) 0);
			exit_registered = true;
		}
		ls_wal_hold_slot(ls_log->wal, (uint32) MyBackendId, ls_debug_hold_my_log);
		ls_holding_my_log = ls_debug_hold_my_log;
	}
	if (ls_log_self_writer)
	{
		uint64		need = LS_WAL_REC_HDR + sizeof(LsLogTarget) + len;

		if (ls_self_pending + need > (uint64) ls_log_buffer_kb * 1024 / 2)
		{
			ls_log_round(true);
			ls_self_pending = 0;
		}
		ls_self_pending += need;
	}
	st = ls_wal_append(ls_log->wal, (uint32) MyBackendId, &hdr, parts, lens,
					   nparts, &end, &gsn);
	if (st == LS_IO_ERROR)
		ls_log_writer_failed();
	if (st != LS_OK)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("could not append to leanstore's log: %s", ls_status_str(st))));
	ls_my_log_end = end;
	ls_my_log_pending = true;
	ls_my_last_gsn = gsn;
	if (TransactionIdIsNormal(xid) && !(flags & (LS_LRF_FROZEN | LS_LRF_LOG_DECIDED)))
		ls_log_note_xid(xid);
	if (ls_copying)
		ls_copy_add(&hdr, gsn, parts, lens, nparts);
	pg_atomic_fetch_add_u64(&ls_log->records, 1);
	/* (hdr is the input: ls_wal_append does not fill in its length) */
	pg_atomic_fetch_add_u64(&ls_log->bytes, LS_WAL_REC_HDR + sizeof(LsLogTarget) + len);
}

static void
ls_log_append(uint16 type, uint16 flags, TransactionId xid, const LsLogTarget *t,
			  const void *payload, uint32 len)
{
	const void *parts[2] = {t, payload};
	uint32		lens[2] = {sizeof(*t), len};

	ls_log_append_parts(type, flags, xid, parts, lens, len > 0 ? 2 : 1, len);
}

/* Wait until this backend's records are durable. */
static void
ls_log_flush_mine(void)
{
	instr_time	start,
				elapsed;

	if (!ls_my_log_pending)
		return;
	if (ls_log_self_writer)
	{
		while (ls_wal_durable(ls_log->wal, (uint32) MyBackendId) < ls_my_log_end)
			ls_log_round(false);
		ls_self_pending = 0;
		ls_my_log_pending = false;
		return;
	}
	INSTR_TIME_SET_CURRENT(start);
	pgstat_report_wait_start(PG_WAIT_EXTENSION);
	if (ls_log_committer_rounds &&
		ls_wal_durable(ls_log->wal, (uint32) MyBackendId) < ls_my_log_end)
		ls_log_lead_round();
	for (;;)
	{
		ls_status	st = ls_wal_wait(ls_log->wal, (uint32) MyBackendId, ls_my_log_end,
									 LS_LOG_WAIT_MS);

		if (st == LS_OK)
			break;
		if (st == LS_IO_ERROR)
			ls_log_writer_failed();
		if (!PostmasterIsAlive())
			proc_exit(1);
		CHECK_FOR_INTERRUPTS();
	}
	pgstat_report_wait_end();
	INSTR_TIME_SET_CURRENT(elapsed);
	INSTR_TIME_SUBTRACT(elapsed, start);
	pg_atomic_fetch_add_u64(&ls_log->wait_us, INSTR_TIME_GET_MICROSEC(elapsed));
	ls_my_log_pending = false;
}

/* Storage created (ls_storage_create): replay starts it afresh here. */
void
ls_log_create(const RelFileNode *node, char persistence)
{
	LsLogTarget t;

	if (persistence != RELPERSISTENCE_PERMANENT || ls_log == NULL)
		return;
	ls_log_target(&t, ls_key_for_node(node), node->spcNode, 0);
	t.persistence = (uint32) persistence;
	ls_log_append(LS_LR_CREATE, 0, GetCurrentTransactionId(), &t, NULL, 0);
}

/* Storage emptied in place (TRUNCATE of a table created in this transaction). */
void
ls_log_truncate(ls_hot_table *tbl)
{
	LsLogTarget t;

	if (!ls_log_permanent(tbl) || ls_log == NULL)
		return;
	ls_log_target(&t, ls_hot_table_get_key(tbl),
				  ls_hot_table_get_tag(tbl, LS_TAG_SPC), 0);
	ls_log_append(LS_LR_TRUNCATE, 0, GetCurrentTransactionId(), &t, NULL, 0);
}

/* A storage (rel valid) or a database's storages go at our commit. */
void
ls_log_drop(ls_hot_key key)
{
	LsLogTarget t;

	if (ls_log == NULL)
		return;
	ls_log_target(&t, key, InvalidOid, 0);
	ls_log_append(key.rel == InvalidOid ? LS_LR_DROPDB : LS_LR_DROP, 0,
				  GetTopTransactionId(), &t, NULL, 0);
}

/*
 * A rowid was handed out: make sure the log covers it before anyone can
 * name it (index entries are in PostgreSQL's WAL even when we abort).
 *
 * new_storage: the table's storage was made in this subtransaction (COPY
 * FREEZE, TABLE_INSERT_FROZEN).  Then the record need not be durable yet:
 * an index entry naming the rowid is in an index whose storage is as new,
 * and if the transaction does not commit, recovery drops both storages
 * whole; if it commits, its commit waits for this record with the rest.
 * A COPY FREEZE of 2M rows waited for the log 30 times otherwise, each
 * wait a sync of everything the load had written so far.
 */
void
ls_log_rowid_used(ls_hot_table *tbl, uint64 rowid, bool new_storage)
{
	uint32		step = (uint32) (rowid >> LS_HWM_SHIFT);
	LsLogTarget t;

	if (likely(step < ls_hot_table_get_tag(tbl, LS_TAG_HWM)) ||
		ls_log == NULL || !ls_log_permanent(tbl))
		return;
	/* two steps ahead: the next step's first rowid does not wait either */
	ls_log_target(&t, ls_hot_table_get_key(tbl), ls_hot_table_get_tag(tbl, LS_TAG_SPC),
				  (uint64) (step + 2) << LS_HWM_SHIFT);
	ls_log_append(LS_LR_HWM, 0, InvalidTransactionId, &t, NULL, 0);
	/* also covers this backend's earlier records: commit need not wait */
	if (!new_storage)
		ls_log_flush_mine();
	if (ls_hot_table_get_tag(tbl, LS_TAG_HWM) < step + 2)
		ls_hot_table_set_tag(tbl, LS_TAG_HWM, step + 2);
}

/*
 * A cold tree change (cold.c), logged when it is made: replay redoes it on
 * the tree's last clean image (the undo journal brings the file back to
 * it).  A bulk-loaded image names its inserter (frozen: a committed one).
 */
void
ls_log_cold_put(ls_hot_table *tbl, uint64 rowid, const char *payload, uint32 len,
				TransactionId xmin, bool frozen)
{
	LsLogTarget t;

	if (ls_log == NULL || !ls_log_permanent(tbl))
		return;
	if (!frozen)
		ls_xact_cold_xid = true;
	ls_log_target(&t, ls_hot_table_get_key(tbl), ls_hot_table_get_tag(tbl, LS_TAG_SPC), rowid);
	t.len = len;
	ls_log_append(LS_LR_PUT, frozen ? LS_LRF_FROZEN : 0, xmin, &t, payload, len);
}

/*
 * Bulk-loaded images of one loader (ls_cold_load): one record for n of
 * them, rowids ascending; the caller keeps a record within
 * LS_LOG_PUTS_MAX bytes of entries.  Replay treats each entry as an
 * LS_LR_PUT of the same xid.
 */
void
ls_log_cold_puts(ls_hot_table *tbl, int n, const uint64 *rowids,
				 const char *const *payloads, const uint32 *lens,
				 TransactionId xmin, bool frozen)
{
	LsLogTarget t;
	LsLogPut   *ents;
	const void **parts;
	uint32	   *plens;
	uint64		bytes = 0;

	if (n <= 0 || ls_log == NULL || !ls_log_permanent(tbl))
		return;
	if (!frozen)
		ls_xact_cold_xid = true;
	ents = palloc(n * sizeof(LsLogPut));
	parts = palloc((1 + 2 * n) * sizeof(void *));
	plens = palloc((1 + 2 * n) * sizeof(uint32));
	ls_log_target(&t, ls_hot_table_get_key(tbl), ls_hot_table_get_tag(tbl, LS_TAG_SPC),
				  rowids[0]);
	parts[0] = &t;
	plens[0] = sizeof(t);
	for (int i = 0; i < n; i++)
	{
		Assert(i == 0 || rowids[i] > rowids[i - 1]);
		Assert(rowids[i] - rowids[0] <= PG_UINT32_MAX);
		ents[i].delta = (uint32) (rowids[i] - rowids[0]);
		ents[i].len = lens[i];
		parts[1 + 2 * i] = &ents[i];
		plens[1 + 2 * i] = sizeof(LsLogPut);
		parts[2 + 2 * i] = payloads[i];
		plens[2 + 2 * i] = lens[i];
		bytes += sizeof(LsLogPut) + lens[i];
	}
	Assert(bytes <= LS_LOG_PUTS_MAX);
	t.len = (uint32) bytes;
	ls_log_append_parts(LS_LR_PUTS, frozen ? LS_LRF_FROZEN : 0, xmin, parts, plens,
						1 + 2 * n, bytes);
	pfree(ents);
	pfree(parts);
	pfree(plens);
}

void
ls_log_cold_remove(ls_hot_table *tbl, uint64 rowid)
{
	LsLogTarget t;

	if (ls_log == NULL || !ls_log_permanent(tbl))
		return;
	ls_log_target(&t, ls_hot_table_get_key(tbl), ls_hot_table_get_tag(tbl, LS_TAG_SPC), rowid);
	ls_log_append(LS_LR_REMOVE, 0, InvalidTransactionId, &t, NULL, 0);
}

/* [lo, hi) as holes of t's table: LS_LR_DEAD records marked LS_DEAD_HOLES. */
static void
ls_log_holes_range(LsLogTarget *t, uint64 lo, uint64 hi)
{
	t->persistence = LS_DEAD_HOLES;
	for (t->value = lo; t->value < hi; t->value += t->len)
	{
		t->len = (uint32) Min(hi - t->value, (uint64) PG_UINT32_MAX);
		ls_log_append(LS_LR_DEAD, 0, InvalidTransactionId, t, NULL, 0);
	}
	t->persistence = 0;
}

/*
 * tbl's holes range, logged now.  SET TABLESPACE's copy widens the range of
 * its new storage after the rows are in; a checkpoint during the copy may
 * have written a clean image of the storage's tree (and logged the range
 * as it was then), and replay from there would not know the rest: its own
 * range starts at the image's allocation, which the copy set to the
 * source's.
 */
void
ls_log_holes(ls_hot_table *tbl)
{
	LsLogTarget t;
	uint64		lo,
				hi;

	if (ls_log == NULL || !ls_log_permanent(tbl) || !ls_holes_get(tbl, &lo, &hi))
		return;
	ls_log_target(&t, ls_hot_table_get_key(tbl), ls_hot_table_get_tag(tbl, LS_TAG_SPC), lo);
	ls_log_holes_range(&t, lo, hi);
}

/*
 * A delete made in the cold tier (ls_cold_delete): the tombstone is logged
 * when the image gets its xmax, not at commit (the row has no hot version
 * for ls_log_row to find).  Replay applies it only if xid committed; the
 * commit waits for it like for a bulk load's records.
 */
void
ls_log_cold_tomb(ls_hot_table *tbl, uint64 rowid, TransactionId xid)
{
	LsLogTarget t;

	if (ls_log == NULL || !ls_log_permanent(tbl))
		return;
	ls_xact_cold_xid = true;
	ls_log_target(&t, ls_hot_table_get_key(tbl), ls_hot_table_get_tag(tbl, LS_TAG_SPC), rowid);
	ls_log_append(LS_LR_TOMB, 0, xid, &t, NULL, 0);
}

/*
 * Before a transaction's first bulk-loaded row goes into a tree: its xid
 * reaches PostgreSQL's WAL, durably.  A clean image (checkpoint) may hold
 * rows of a load still running; if the server crashes before it commits,
 * clog calls the xid aborted, and PostgreSQL must never hand the same xid
 * out again (it would, for an xid its WAL never saw), or those rows would
 * come alive.  One WAL flush per loading (sub)transaction.
 */
void
ls_log_bulk_xid(ls_hot_table *tbl, TransactionId xid)
{
	static TransactionId flushed = InvalidTransactionId;
	char		dummy = 0;
	XLogRecPtr	lsn;

	if (xid == flushed || ls_log == NULL || !ls_log_permanent(tbl) ||
		!TransactionIdIsNormal(xid))
		return;
	XLogBeginInsert();
	XLogRegisterData(&dummy, sizeof(dummy));
	lsn = XLogInsert(LS_RMGR_ID, LS_XLOG_BULK);
	XLogFlush(lsn);
	flushed = xid;
}

/*
 * Before a multixact goes into a cold image's xmax part (share lockers, or
 * an update beside FOR KEY SHARE lockers): its creation is in PostgreSQL's
 * WAL, durably.  A clean image (checkpoint) may hold the word; after a
 * crash that lost the creation record PostgreSQL would hand the same
 * multixact out again, or refuse to read it ("has not been created yet").
 * A WAL flush only when something is still unflushed; single xids are
 * ls_log_bulk_xid's.
 */
void
ls_log_multi_durable(ls_hot_table *tbl, uint64 word)
{
	if (ls_log == NULL || !ls_log_permanent(tbl) ||
		!(ls_hv_flags(word) & LS_HV_XMAX_IS_MULTI))
		return;
	/*
	 * This transaction created it (ls_xmax_merge, ls_xmax_lockers: a word
	 * read from an image is never written back as it is): its creation
	 * record ends at or before XactLastRecEnd.  (Not the insert position:
	 * right after a page header no insertion ends there, and XLogFlush
	 * refuses it.)
	 */
	if (XactLastRecEnd != InvalidXLogRecPtr)
		XLogFlush(XactLastRecEnd);
}

/*
 * The asynchronous commits decided by PostgreSQL's WAL (not log-only): how
 * many are between PRE_COMMIT and publishing their commit record's end
 * (*running), and the largest end published (async_lsn, returned).  A
 * commit publishes, then uncounts itself: read in that reverse order.
 */
static XLogRecPtr
ls_async_wal_read(uint32 *running)
{
	*running = pg_atomic_read_u32(&ls_log->async_running);
	pg_read_barrier();
	return pg_atomic_read_u64(&ls_log->async_lsn);
}

/*
 * May such a commit be unflushed: one still counted, or one published past
 * the flush pointer?
 */
static bool
ls_async_wal_unflushed(void)
{
	uint32		running;
	XLogRecPtr	lsn = ls_async_wal_read(&running);

	return running > 0 || (lsn != InvalidXLogRecPtr && lsn > GetFlushRecPtr(NULL));
}

/*
 * The end of the last record inserted into PostgreSQL's WAL, as XLogFlush
 * takes it: right after a page header no record ends (the insert position
 * points there when a page has just begun), so the page's start is.
 */
static XLogRecPtr
ls_xlog_insert_end(void)
{
	XLogRecPtr	p = GetXLogInsertRecPtr();

	if (XLogSegmentOffset(p, wal_segment_size) == SizeOfXLogLongPHD ||
		p % XLOG_BLCKSZ == SizeOfXLogShortPHD)
		p -= p % XLOG_BLCKSZ;
	return p;
}

/*
 * Before a round of leanstore's log writes its records (ls_wal_config's
 * before_write, in the process running the round).  An asynchronous commit
 * that PostgreSQL's WAL decides (it also wrote a heap row, an index entry,
 * or started a clog page) has its commit record unflushed for up to
 * wal_writer_delay, and log-only commits after it read its rows: their
 * after-images carry its changes.  When such records reached leanstore's
 * log before that commit record reached the WAL, a crash kept the later
 * commits and lost the earlier one, so part of it stayed behind (crash_load:
 * a pgbench transaction's branch and teller deltas, inside later
 * transactions' rows, without its account update and history row).
 * PostgreSQL's own asynchronous commits are lost as a suffix of one
 * sequence; this keeps the two logs in that order: PostgreSQL's WAL first,
 * up to every such commit record that may be unflushed
 * (ls_async_wal_unflushed).  Nothing to do without such commits.
 */
static void
ls_log_before_round_write(void *arg)
{
	uint64		seq;
	uint32		running;
	XLogRecPtr	upto;

	(void) arg;
	if (ls_log == NULL || RecoveryInProgress())
		return;

	/*
	 * Only log-only commits outlive a lost WAL commit record (clog decides
	 * every other transaction, and one that read such a commit's rows has
	 * its own commit record after it in the WAL; frozen re-logs and cold
	 * images wait for ls_xid_commit_durable).  None appended since a round
	 * last looked: nothing to flush (a transaction that writes heap and
	 * leanstore rows under off waits for this round, not for a WAL flush).
	 * Read before the rest: a log-only commit the round took read its rows
	 * before its count went up.
	 */
	seq = pg_atomic_read_u64(&ls_log->log_only_seq);
	if (seq == pg_atomic_read_u64(&ls_log->log_only_seq_seen))
		return;
	pg_read_barrier();
	upto = ls_async_wal_read(&running);
	if (running > 0)
	{
		/*
		 * One between PRE_COMMIT and publishing its end: whoever saw its
		 * rows saw it committed, so its commit record was inserted before
		 * the records this round took were appended, and it ends at or
		 * before the insert position now.
		 */
		upto = Max(upto, ls_xlog_insert_end());
	}
	if (upto != InvalidXLogRecPtr && upto > GetFlushRecPtr(NULL))
		XLogFlush(upto);
	ls_atomic_max_u64(&ls_log->log_only_seq_seen, seq);
}

/*
 * Is xid's commit record on disk?  An asynchronous commit's
 * (synchronous_commit = off) may not be yet: clog says committed, and a
 * crash may still lose the commit.  A version that becomes frozen (a
 * checkpoint's re-log, pack's cold image) no longer asks clog after a
 * crash, so it must not be made so before then, or a transaction that
 * did not survive would leave its leanstore rows behind (half of it, when
 * it wrote a heap table too).  Heap's hint bits follow the same rule
 * (SetHintBits).  xid may be any xid of the transaction: clog keeps a
 * commit LSN for subtransactions too.  xid committed (the caller checked).
 */
bool
ls_xid_commit_durable(TransactionId xid)
{
	/* rows of one transaction come in runs (a checkpoint's walk, a load) */
	static TransactionId known = InvalidTransactionId;
	XLogRecPtr	lsn;

	if (!TransactionIdIsNormal(xid) || xid == known)
		return true;

	/*
	 * Every commit decided by PostgreSQL's WAL is flushed before its rows
	 * are visible unless it is asynchronous, and those are counted in
	 * async_running until they published async_lsn (ls_log_pre_commit).
	 * None unflushed: every committed xid is durable, log-only commits too
	 * (leanstore's log decides those, and whatever is derived from their
	 * rows has larger GSNs).  Without asynchronous commits of that kind,
	 * clog is not asked at all.
	 */
	if (ls_log != NULL && !ls_async_wal_unflushed())
		return true;
	/* (a log-only commit's PostgreSQL commit record may be waited for) */
	lsn = TransactionIdGetCommitLSN(xid);
	if (!XLogRecPtrIsInvalid(lsn) && XLogNeedsFlush(lsn))
		return false;
	known = xid;
	return true;
}

/* Make xid's commit record durable (see ls_xid_commit_durable). */
void
ls_xid_commit_flush(TransactionId xid)
{
	if (!ls_xid_commit_durable(xid))
		XLogFlush(TransactionIdGetCommitLSN(xid));
}

/* ------------------------------------------------------------------------
 * What a transaction wrote: rowid ranges per storage
 * ------------------------------------------------------------------------ */

typedef struct LsLogRange
{
	ls_hot_key	key;
	uint64		lo;
	uint64		hi;				/* inclusive */
} LsLogRange;

/* A write extends a range while it is this close to it. */
#define LS_WR_GAP		512
#define LS_WR_LOOKBACK	8

static LsLogRange *ls_wr = NULL;
static int	ls_wr_n = 0;
static int	ls_wr_cap = 0;

/* Storages created by this transaction: logged whole at commit. */
static ls_hot_key *ls_wr_created = NULL;
static int	ls_wr_ncreated = 0;
static int	ls_wr_created_cap = 0;

static inline bool
ls_key_eq(ls_hot_key a, ls_hot_key b)
{
	return a.spc == b.spc && a.db == b.db && a.rel == b.rel;
}

/* arr (NULL: none yet, made in cxt) with room for at least *cap * 2 elements. */
static void *
ls_array_grow(void *arr, int *cap, int min_cap, Size elem, MemoryContext cxt)
{
	int			newcap = Max(*cap * 2, min_cap);
	void	   *grown = arr == NULL ? MemoryContextAlloc(cxt, elem * newcap) :
		repalloc(arr, elem * newcap);

	*cap = newcap;
	return grown;
}

/* Remember that this transaction wrote rowid of tbl (insert, update, delete). */
void
ls_log_note(ls_hot_table *tbl, uint64 rowid)
{
	ls_hot_key	key;
	int			stop;

	if (ls_log == NULL || !ls_log_permanent(tbl))
		return;
	key = ls_hot_table_get_key(tbl);
	stop = Max(ls_wr_n - LS_WR_LOOKBACK, 0);
	for (int i = ls_wr_n - 1; i >= stop; i--)
	{
		LsLogRange *r = &ls_wr[i];

		if (!ls_key_eq(r->key, key))
			continue;
		if (rowid + LS_WR_GAP >= r->lo && rowid <= r->hi + LS_WR_GAP)
		{
			r->lo = Min(r->lo, rowid);
			r->hi = Max(r->hi, rowid);
			return;
		}
	}
	if (ls_wr_n == ls_wr_cap)
		ls_wr = ls_array_grow(ls_wr, &ls_wr_cap, 64, sizeof(LsLogRange), TopMemoryContext);
	ls_wr[ls_wr_n].key = key;
	ls_wr[ls_wr_n].lo = rowid;
	ls_wr[ls_wr_n].hi = rowid;
	ls_wr_n++;
}

/* tbl's storage was created by this transaction: log all of it at commit. */
void
ls_log_note_created(ls_hot_table *tbl)
{
	if (ls_log == NULL || !ls_log_permanent(tbl))
		return;
	if (ls_wr_ncreated == ls_wr_created_cap)
		ls_wr_created = ls_array_grow(ls_wr_created, &ls_wr_created_cap, 16,
									  sizeof(ls_hot_key), TopMemoryContext);
	ls_wr_created[ls_wr_ncreated++] = ls_hot_table_get_key(tbl);
}

static bool
ls_log_is_created(ls_hot_key key)
{
	for (int i = 0; i < ls_wr_ncreated; i++)
		if (ls_key_eq(ls_wr_created[i], key))
			return true;
	return false;
}

static int
ls_range_cmp(const void *a, const void *b)
{
	const LsLogRange *x = a;
	const LsLogRange *y = b;

	if (x->key.db != y->key.db)
		return x->key.db < y->key.db ? -1 : 1;
	if (x->key.rel != y->key.rel)
		return x->key.rel < y->key.rel ? -1 : 1;
	if (x->key.spc != y->key.spc)
		return x->key.spc < y->key.spc ? -1 : 1;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return 0;
}

/*
 * The rowids of up to LS_HOT_ROWIDS_BATCH hot rows of [*cursor, end), in
 * one epoch (the scan skips empty parts of the RID-map); 0 at the end.
 */
#define LS_HOT_ROWIDS_BATCH 256

static uint32
ls_hot_rowids(ls_hot_table *tbl, uint64 *cursor, uint64 end, uint64 *rowids)
{
	ls_hot_row *batch[LS_HOT_ROWIDS_BATCH];
	uint32		n;

	CHECK_FOR_INTERRUPTS();
	ls_epoch_enter();
	n = ls_hot_scan_batch(tbl, cursor, end, batch, LS_HOT_ROWIDS_BATCH);
	for (uint32 i = 0; i < n; i++)
		rowids[i] = batch[i]->rowid;
	ls_epoch_exit();
	return n;
}

/*
 * Log rowid's state as this transaction leaves it: the newest version not
 * aborted, or a tombstone when a committed or our own delete (or moving
 * update) ended the row.  all: rows of a storage this transaction created
 * (every row is logged, whoever wrote it); else only rows whose newest
 * version this transaction wrote or deleted.
 */
static void
ls_log_row(ls_hot_table *tbl, Oid spc, uint64 rowid, bool all, uint16 flags,
		   StringInfo buf)
{
	ls_hot_row *row;
	ls_hot_version *target = NULL;
	LsVersionInfo info;
	LsXidStatus xs = LS_XS_ABORTED;
	LsXidStatus ds = LS_XS_ABORTED;
	bool		frozen = false;
	int			hops = 0;
	LsLogTarget t;

	resetStringInfo(buf);
	ls_epoch_enter();
	row = ls_hot_row_get(tbl, rowid);
	if (row != NULL)
	{
		for (ls_hot_version *v = ls_hot_row_newest(row); v != NULL;
			 v = ls_chain_next(row, v, &hops))
		{
			ls_version_info(v, &info);
			xs = ls_xmin_status(v, &info);
			if (xs != LS_XS_ABORTED)
			{
				target = v;
				break;
			}
		}
	}
	if (target != NULL)
	{
		ds = ls_xmax_is_lock_only(&info) ? LS_XS_ABORTED : ls_xmax_status(target, &info);
		if (!all && xs != LS_XS_CURRENT && ds != LS_XS_CURRENT)
			target = NULL;		/* another transaction's row in our range */
		else if (xs == LS_XS_IN_PROGRESS)
			target = NULL;
	}
	if (target != NULL && ds != LS_XS_CURRENT && ds != LS_XS_COMMITTED)
	{
		frozen = (info.xmin_flags & LS_HV_XMIN_FROZEN) != 0;
		appendBinaryStringInfo(buf, (const char *) target->data, target->len);
	}
	if (target == NULL)
	{
		ls_epoch_exit();
		return;
	}

	/*
	 * The row names the record's xid, under its latch, before the append
	 * (not around it: an append may wait for room in the log): a checkpoint
	 * logs the committed state under a running writer's version only while
	 * no running transaction is named there, under the same latch, so a
	 * record appended after this mark comes after that one in GSN order,
	 * and one the checkpoint may have missed makes it wait (ls_ckpt_row).
	 */
	ls_row_lock(row);
	atomic_store(&row->logged_xid,
				 (ds == LS_XS_CURRENT || ds == LS_XS_COMMITTED) ? info.xmax : info.xmin);
	atomic_store(&row->logged_flags, 0);
	ls_row_unlock(row);
	ls_epoch_exit();

	ls_log_target(&t, ls_hot_table_get_key(tbl), spc, rowid);
	if (ds == LS_XS_CURRENT || ds == LS_XS_COMMITTED)
		ls_log_append(LS_LR_TOMB, flags, info.xmax, &t, NULL, 0);
	else
	{
		t.len = (uint32) buf->len;
		ls_log_append(LS_LR_ROW, frozen ? LS_LRF_FROZEN : flags, info.xmin, &t,
					  buf->data, (uint32) buf->len);
	}
}

static void
ls_log_rows(ls_hot_table *tbl, uint64 lo, uint64 hi, bool all, uint16 flags,
			StringInfo buf)
{
	Oid			spc = ls_hot_table_get_tag(tbl, LS_TAG_SPC);

	if (all)
	{
		/* every hot row: the scan skips empty parts of the RID-map */
		for (uint64 cursor = lo;;)
		{
			uint64		rowids[LS_HOT_ROWIDS_BATCH];
			uint32		n = ls_hot_rowids(tbl, &cursor, hi + 1, rowids);

			if (n == 0)
				break;
			for (uint32 i = 0; i < n; i++)
				ls_log_row(tbl, spc, rowids[i], all, flags, buf);
		}
		return;
	}
	for (uint64 rowid = lo; rowid <= hi; rowid++)
	{
		if ((rowid & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
		ls_log_row(tbl, spc, rowid, all, flags, buf);
	}
}

/*
 * Can this transaction commit through leanstore's log alone (a log-only
 * commit)?  Its outcome then rests on an LS_LR_COMMIT record, not on
 * clog, after a crash; that is sound only when nothing but the hot rows
 * leanstore's replay rebuilds (as frozen versions) carries its xids:
 *  - it wrote no WAL of PostgreSQL's (no heap, index or catalog change: a
 *    transaction touching both kinds of table commits through PostgreSQL's
 *    commit record, atomically);
 *  - no cold image holds one of its xids (those stay after a crash, and
 *    clog must judge them);
 *  - it is not SERIALIZABLE (PostgreSQL's commit may still fail on a
 *    serialization conflict after PRE_COMMIT);
 *  - no synchronous standby must confirm the commit.
 */
static bool
ls_log_only_commit_ok(void)
{
	TransactionId *children;

	if (XactLastRecEnd != InvalidXLogRecPtr || ls_xact_cold_xid)
		return false;
	if (!TransactionIdIsValid(GetTopTransactionIdIfAny()))
		return false;
	if (IsolationIsSerializable())
		return false;
	if (synchronous_commit > SYNCHRONOUS_COMMIT_LOCAL_FLUSH &&
		SyncRepStandbyNames != NULL && SyncRepStandbyNames[0] != '\0')
		return false;

	/*
	 * LS_LR_COMMIT names every committed subxid, and must fit in one
	 * record (half of leanstore.log_buffer: 32k subxids at its smallest);
	 * a transaction with more takes PostgreSQL's commit record (it failed
	 * with "could not append to leanstore's log: too large" before:
	 * test/recovery/commit_subxids.sh)
	 */
	if (LS_WAL_REC_HDR + sizeof(LsLogTarget) +
		(uint64) xactGetCommittedChildren(&children) * sizeof(TransactionId) >
		ls_log->max_record)
		return false;
	return true;
}

/*
 * Can this transaction commit through PostgreSQL's WAL (its row records,
 * appended to leanstore's log without a wait, also go into one WAL record
 * before PostgreSQL's commit record, whose flush makes them durable)?
 * README.md, "Commits through PostgreSQL's WAL".  Preferred to a log-only
 * commit: the committing backend flushes the WAL itself, where a log-only
 * commit waits for the log writer's round (two process wake-ups more).
 *  - It has an xid, so that PostgreSQL writes a commit record;
 *    synchronous_commit is not off, so that PostgreSQL flushes it (the WAL
 *    record makes the transaction one that wrote WAL; asynchronous
 *    commits are cheaper as log-only commits, which write no WAL).
 *  - Its only records are the row records appended now: nothing of it is
 *    pending in leanstore's log yet (a drop, a truncate, a creation, a bulk
 *    load's images), no storage was created by it (replay needs the CREATE
 *    record first), and no cold image holds its xid.
 *  - The log writer holds the replication slot that keeps PostgreSQL's WAL
 *    until leanstore's log has the records too (ls_wal_copy_setup).
 */
static bool
ls_log_via_wal_ok(void)
{
	if (!ls_commit_via_wal || ls_log_self_writer ||
		pg_atomic_read_u32(&ls_log->via_wal) != LS_VIA_WAL_ON)
		return false;
	if (ls_my_log_pending || ls_wr_ncreated > 0 || ls_xact_cold_xid)
		return false;
	if (synchronous_commit <= SYNCHRONOUS_COMMIT_OFF)
		return false;
	return TransactionIdIsValid(GetTopTransactionIdIfAny());
}

/* ------------------------------------------------------------------------
 * Log-only commits that fail after their commit record
 *
 * A log-only commit's LS_LR_COMMIT is appended, and made durable, in
 * PRE_COMMIT; an error later in PostgreSQL's commit (a full NOTIFY queue,
 * another library's pre-commit callback) aborts the transaction after all.
 * PostgreSQL marks it aborted in clog and takes it out of the running
 * transactions before leanstore's abort callback can append LS_LR_ABORT
 * (ls_log_abort), and until that record is durable a crash keeps the
 * transaction (the log decides).  In between, its versions look aborted:
 * a writer would write over its rows, a checkpoint would log them as they
 * were before it, and after a crash the transaction would be there only in
 * part (the rows someone wrote again would lack it).  So while such a
 * commit is in doubt its xids count as running for leanstore's own
 * decisions about versions (ls_xid_in_progress, used instead of
 * TransactionIdIsInProgress): writers wait for its xid lock, which it
 * holds until after its abort callback, and checkpoints, pack and VACUUM
 * leave its rows alone.  The abort callback appends and flushes
 * LS_LR_ABORT before it undoes anything in the hot tier (init.c).
 *
 * A slot holds the top xid and the committed subxids (up to 15; beyond,
 * every xid from the top one to the largest subxid counts: one of another
 * aborted transaction among them then looks running until the slot is
 * free, and a writer waiting for it polls).  Set before the append (the
 * transaction is running then, so nobody can tell), freed when the
 * transaction ended (ls_log_xact_end), or at the latest when its backend
 * exits (on_shmem_exit: after PostgreSQL's own exit callback aborted the
 * transaction, whose abort callback made LS_LR_ABORT durable).  Readers
 * ask clog first: the slots are scanned only for an xid clog does not call
 * committed, once per version (its hint then answers).
 * ------------------------------------------------------------------------ */

static void
ls_in_doubt_clear(void)
{
	if (!ls_in_doubt_mine)
		return;
	pg_atomic_write_u32(&ls_in_doubt[MyBackendId].top, InvalidTransactionId);
	pg_atomic_fetch_sub_u32(&ls_log->in_doubt_n, 1);
	ls_in_doubt_mine = false;
}

static void
ls_in_doubt_exit(int code, Datum arg)
{
	(void) code;
	(void) arg;
	ls_in_doubt_clear();
}

static void
ls_in_doubt_set(TransactionId xid, const TransactionId *children, int n)
{
	static bool exit_registered = false;
	LsInDoubt  *d;
	TransactionId hi = xid;

	if (MyBackendId == InvalidBackendId || MyBackendId > MaxBackends)
		elog(ERROR, "leanstore's log cannot be written from this process");
	Assert(!ls_in_doubt_mine);
	d = &ls_in_doubt[MyBackendId];
	if (!exit_registered)
	{
		/* not before_shmem_exit: that would run before the abort */
		on_shmem_exit(ls_in_doubt_exit, (Datum) 0);
		exit_registered = true;
	}
	for (int i = 0; i < n; i++)
	{
		if (TransactionIdFollows(children[i], hi))
			hi = children[i];
		if (i < LS_IN_DOUBT_SUBS)
			pg_atomic_write_u32(&d->sub[i], children[i]);
	}
	pg_atomic_write_u32(&d->hi, hi);
	pg_atomic_write_u32(&d->nsub, n <= LS_IN_DOUBT_SUBS ? n : LS_IN_DOUBT_SUBS + 1);
	/* the rest before top: a reader that sees top sees them */
	pg_write_barrier();
	pg_atomic_write_u32(&d->top, xid);
	pg_atomic_fetch_add_u32(&ls_log->in_doubt_n, 1);
	ls_in_doubt_mine = true;
}

/* No slot in use (the common case): nothing is in doubt. */
static inline bool
ls_in_doubt_none(void)
{
	return likely(ls_log == NULL || pg_atomic_read_u32(&ls_log->in_doubt_n) == 0);
}

/*
 * Is xid one of a log-only commit in doubt (see above), whatever clog
 * says?  Its top xid in *top_out (when not NULL).
 */
bool
ls_xid_in_doubt(TransactionId xid, TransactionId *top_out)
{
	if (ls_in_doubt_none())
		return false;
	for (int i = 0; i <= MaxBackends; i++)
	{
		LsInDoubt  *d = &ls_in_doubt[i];
		TransactionId top = pg_atomic_read_u32(&d->top);
		bool		found = false;

		if (!TransactionIdIsValid(top) || TransactionIdPrecedes(xid, top))
			continue;			/* free, or not its (subxids follow top) */
		if (xid == top)
			found = true;
		else
		{
			uint32		nsub;

			pg_read_barrier();
			nsub = pg_atomic_read_u32(&d->nsub);
			if (nsub > LS_IN_DOUBT_SUBS)
				found = TransactionIdPrecedesOrEquals(xid, pg_atomic_read_u32(&d->hi));
			else
				for (uint32 j = 0; j < nsub && !found; j++)
					found = pg_atomic_read_u32(&d->sub[j]) == xid;
		}
		if (found)
		{
			if (top_out != NULL)
				*top_out = top;
			return true;
		}
	}
	return false;
}

/*
 * The xid whose lock to wait for, to wait for xid: a subxid's own lock goes
 * at its subcommit (XactLockTableWait then waits for the running top
 * transaction through pg_subtrans), but one of a log-only commit in doubt
 * has left the running transactions already: wait for its top xid's lock,
 * held until after the abort callback.  Else xid itself.
 */
TransactionId
ls_xid_wait_target(TransactionId xid)
{
	TransactionId top;

	return ls_xid_in_doubt(xid, &top) ? top : xid;
}

/*
 * TransactionIdIsInProgress for leanstore's decisions about versions: also
 * true for the xids of a log-only commit in doubt that clog calls aborted.
 * A committed one is not (it is past its commit record: the slot goes at
 * the end of its commit).
 */
bool
ls_xid_in_progress(TransactionId xid)
{
	if (TransactionIdIsInProgress(xid))
		return true;
	/*
	 * The slot was set before the transaction left the running ones, and
	 * before clog could call it aborted.  No slot in use: no clog lookup
	 * here, the caller makes its own.
	 */
	if (ls_in_doubt_none())
		return false;
	return !TransactionIdDidCommit(xid) && ls_xid_in_doubt(xid, NULL);
}

/*
 * Append the record of a log-only commit (LS_LR_COMMIT) or of its abort
 * (LS_LR_ABORT): the top xid, the committed subxids as payload (kept
 * from the commit record for the abort record).
 */
static void
ls_log_commit_record(uint16 type, TransactionId xid)
{
	LsLogTarget t;

	Assert(TransactionIdIsNormal(xid));
	if (type == LS_LR_COMMIT)
	{
		TransactionId *children;
		int			n = xactGetCommittedChildren(&children);

		Assert(ls_commit_children == NULL);
		ls_commit_nchildren = n;
		if (n > 0)
		{
			ls_commit_children = MemoryContextAlloc(TopMemoryContext,
													n * sizeof(TransactionId));
			memcpy(ls_commit_children, children, n * sizeof(TransactionId));
		}
	}
	memset(&t, 0, sizeof(t));
	t.len = (uint32) (ls_commit_nchildren * sizeof(TransactionId));
	/* before the append: a round that took the record sees the count */
	if (type == LS_LR_COMMIT)
	{
		pg_atomic_fetch_add_u64(&ls_log->log_only_seq, 1);
		ls_in_doubt_set(xid, ls_commit_children, ls_commit_nchildren);
	}
	ls_log_append(type, 0, xid, &t, ls_commit_children, t.len);
}

/* Has this transaction anything for leanstore's log at commit? */
static bool
ls_log_has_work(void)
{
	return ls_wr_n > 0 || ls_wr_ncreated > 0 || ls_my_log_pending;
}

/*
 * Log what this transaction leaves behind and wait until it is durable,
 * before PostgreSQL inserts the commit record (ls_log_pre_commit).
 * via_wal: ls_log_via_wal_ok() said yes (before any append); it commits
 * through the WAL if its records fit one WAL record, else as a log-only
 * commit where log_only allows one.  An asynchronous log-only commit does
 * not wait: *async_out set.
 */
static void
ls_log_commit_rows(bool log_only, bool via_wal, bool *async_out)
{
	StringInfoData buf;
	ls_hot	   *hot;
	uint16		row_flags;

	if (!ls_log_has_work())
		return;
	hot = ls_shared_hot();
	initStringInfo(&buf);

	/*
	 * A log-only commit known as such before the appends (not one falling
	 * back from the WAL) marks its rows: an asynchronous one's PostgreSQL
	 * commit record may reach the disk before its LS_LR_COMMIT, and a
	 * round may have taken only some of its rows by then; clog must not
	 * decide those (ls_replay_committed).
	 */
	row_flags = log_only && !via_wal ? LS_LRF_LOG_DECIDED : 0;
	if (via_wal)
	{
		if (ls_copy.data == NULL)
		{
			MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

			initStringInfo(&ls_copy);
			MemoryContextSwitchTo(old);
		}
		resetStringInfo(&ls_copy);
		ls_copy_full = false;
		ls_copying = true;
	}

	for (int i = 0; i < ls_wr_ncreated; i++)
	{
		ls_hot_table *tbl = ls_hot_table_find(hot, ls_wr_created[i]);

		if (tbl != NULL && ls_hot_table_rowid_limit(tbl) > 0)
			ls_log_rows(tbl, 0, ls_hot_table_rowid_limit(tbl) - 1, true, row_flags, &buf);
	}
	if (ls_wr_n > 1)
		qsort(ls_wr, ls_wr_n, sizeof(LsLogRange), ls_range_cmp);
	for (int i = 0; i < ls_wr_n; i++)
	{
		LsLogRange *r = &ls_wr[i];
		ls_hot_table *tbl;
		uint64		lo = r->lo;

		/* sorted: skip what the previous range of the key covered */
		if (i > 0 && ls_key_eq(ls_wr[i - 1].key, r->key) && ls_wr[i - 1].hi >= lo)
		{
			if (ls_wr[i - 1].hi >= r->hi)
			{
				r->hi = ls_wr[i - 1].hi;
				continue;
			}
			lo = ls_wr[i - 1].hi + 1;
		}
		if (ls_log_is_created(r->key) ||
			(tbl = ls_hot_table_find(hot, r->key)) == NULL)
			continue;
		ls_log_rows(tbl, lo, r->hi, false, row_flags, &buf);
		if (ls_debug_point_is("commit-async-split") &&
			log_only && synchronous_commit <= SYNCHRONOUS_COMMIT_OFF &&
			!ls_debug_hold_my_log)
		{
			/*
			 * Test only, after the first table's rows: those durable, the
			 * rest of the transaction held in this backend's slot (as by
			 * leanstore.debug_hold_my_log, set here), as if a round had
			 * taken only part of the transaction.
			 */
			ls_log_flush_mine();
			ls_debug_hold_my_log = true;
		}
	}
	pfree(buf.data);
	ls_copying = false;
	/* records only this transaction's rows: nothing else was pending */
	via_wal = via_wal && !ls_copy_full && ls_copy.len > 0;
	log_only = log_only && !via_wal;

	ls_debug_crash("commit-before-log");

	if (log_only)
	{
		/*
		 * A log-only commit: leanstore's log decides this transaction's
		 * outcome, and PostgreSQL's commit record is left to flush
		 * asynchronously (the transaction wrote no WAL, so PostgreSQL does
		 * not wait for it).  One flush per commit instead of two.
		 */
		ls_log_commit_record(LS_LR_COMMIT, GetTopTransactionId());
		ls_commit_xid = GetTopTransactionId();
		if (synchronous_commit <= SYNCHRONOUS_COMMIT_OFF && !ls_log_self_writer)
		{
			/*
			 * Asynchronous: the records are appended, the log writer makes
			 * them durable within wal_writer_delay, and a later synchronous
			 * commit waits for them first (ls_log_async_barrier).  Published
			 * before PostgreSQL's commit makes the rows visible, so a
			 * transaction that reads them sees async_gsn cover them.
			 */
			ls_atomic_max_u64(&ls_log->async_gsn, ls_my_last_gsn);
			ls_my_log_pending = false;
			pg_atomic_fetch_add_u64(&ls_log->log_only_commits, 1);
			pg_atomic_fetch_add_u64(&ls_log->async_commits, 1);
			*async_out = true;
			return;
		}
	}
	else if (via_wal)
	{
		/*
		 * A commit through PostgreSQL's WAL: the records go into the WAL
		 * before the commit record, and PostgreSQL's flush of the commit
		 * record makes them durable; leanstore's log takes its copy in a
		 * later round, without anyone waiting for it.
		 */
		XLogBeginInsert();
		XLogRegisterData(ls_copy.data, ls_copy.len);
		(void) XLogInsert(LS_RMGR_ID, LS_XLOG_ROWS);
		if (ls_copy.maxlen > 64 * 1024)
		{
			pfree(ls_copy.data);
			ls_copy.data = NULL;
		}
		pg_atomic_fetch_add_u64(&ls_log->wal_copy_commits, 1);
		ls_committed_via_wal = true;
		return;
	}
	else if (XactLastRecEnd == InvalidXLogRecPtr &&
			 TransactionIdIsValid(GetTopTransactionIdIfAny()))
	{
		/*
		 * PostgreSQL flushes a commit record only for a transaction that
		 * wrote WAL; one that wrote only leanstore tables but cannot
		 * commit through the log alone writes this record, so that
		 * synchronous_commit waits for its commit record.
		 */
		char		dummy = 0;

		XLogBeginInsert();
		XLogRegisterData(&dummy, sizeof(dummy));
		(void) XLogInsert(LS_RMGR_ID, LS_XLOG_COMMIT);
	}
	if (ls_my_log_pending)
	{
		bool		log_only = TransactionIdIsValid(ls_commit_xid);

		/*
		 * A log-only commit's record may already be durable: from here the
		 * transaction is committed as far as a crash is concerned, so a
		 * cancel must not abort it (PostgreSQL's own commit flush is not
		 * interruptible either).  The wait is over when the next rounds
		 * end; postmaster death still ends it.
		 */
		if (log_only)
			HOLD_INTERRUPTS();
		ls_log_flush_mine();
		if (log_only)
		{
			RESUME_INTERRUPTS();
			pg_atomic_fetch_add_u64(&ls_log->log_only_commits, 1);
		}
		pg_atomic_fetch_add_u64(&ls_log->commits, 1);
	}
	/* durable in leanstore's log, no commit record yet */
	ls_debug_crash("commit-after-log");
	ls_debug_crash("commit-error-after-log");
	ls_debug_crash("commit-error-slow-abort");
}

/*
 * A synchronous commit: the asynchronous log-only commits before it (up to
 * async_gsn) become durable first, as a synchronous commit's WAL flush
 * takes every earlier asynchronous commit record with it in PostgreSQL.
 * Otherwise a transaction that read their rows and wrote a heap table (or
 * committed through PostgreSQL's WAL) could survive a crash that loses
 * them.  Before this transaction appends anything: a cancel here aborts it
 * cleanly.
 */
static void
ls_log_async_barrier(uint64 async_gsn)
{
	bool		waited = false;

	while (ls_wal_durable_gsn(ls_log->wal) < async_gsn)
	{
		if (!waited)
		{
			pgstat_report_wait_start(PG_WAIT_EXTENSION);
			waited = true;
		}
		if (ls_wal_failed(ls_log->wal))
			ls_log_writer_failed();
		if (ls_log_committer_rounds)
			ls_log_lead_round();
		ls_wal_kick(ls_log->wal);
		if (ls_wal_durable_gsn(ls_log->wal) >= async_gsn)
			break;
		pg_usleep(200L);
		if (!PostmasterIsAlive())
			proc_exit(1);
		CHECK_FOR_INTERRUPTS();
	}
	if (waited)
		pgstat_report_wait_end();
}

static void ls_log_async_done(XLogRecPtr commit_end);

static void
ls_log_async_exit(int code, Datum arg)
{
	(void) code;
	(void) arg;
	if (ls_log != NULL)
		ls_log_async_done(InvalidXLogRecPtr);
}

/*
 * PRE_COMMIT of every transaction (PostgreSQL's commit record is inserted
 * after it): leanstore's part of the commit (ls_log_commit_rows), then
 * what orders it after the asynchronous commits before it.
 */
void
ls_log_pre_commit(void)
{
	bool		has_xid;
	bool		log_only;
	bool		via_wal;
	bool		async = false;

	if (ls_log == NULL)
		return;
	has_xid = TransactionIdIsValid(GetTopTransactionIdIfAny()) && !ls_log_self_writer;
	/* decided before the appends: they change neither */
	log_only = ls_log_has_work() && ls_log_only_commit_ok();
	via_wal = ls_log_has_work() && ls_log_via_wal_ok();

	/*
	 * A synchronous log-only commit needs no barrier: its own records come
	 * after the asynchronous ones in GSN order, and durability is a GSN
	 * prefix.  (One that meant to commit through the WAL but whose records
	 * did not fit waited for nothing it needed.)
	 */
	if (has_xid && (via_wal || !log_only) &&
		synchronous_commit > SYNCHRONOUS_COMMIT_OFF)
		ls_log_async_barrier(pg_atomic_read_u64(&ls_log->async_gsn));
	ls_log_commit_rows(log_only, via_wal, &async);
	if (has_xid && !async && !ls_async_running_mine &&
		synchronous_commit <= SYNCHRONOUS_COMMIT_OFF)
	{
		/*
		 * An asynchronous commit that PostgreSQL's WAL decides: running
		 * until ls_log_commit_done publishes its commit record's end.  Set
		 * before the commit record exists, so whoever can see its rows
		 * sees it counted or published.
		 */
		static bool exit_registered = false;

		if (!exit_registered)
		{
			/* a backend that dies in between must not stay counted */
			before_shmem_exit(ls_log_async_exit, (Datum) 0);
			exit_registered = true;
		}
		pg_atomic_fetch_add_u32(&ls_log->async_running, 1);
		ls_async_running_mine = true;
	}
}

/* The asynchronous commit counted in async_running is over (or aborted). */
static void
ls_log_async_done(XLogRecPtr commit_end)
{
	if (!ls_async_running_mine)
		return;
	if (commit_end != InvalidXLogRecPtr)
		ls_atomic_max_u64(&ls_log->async_lsn, commit_end);
	pg_atomic_fetch_sub_u32(&ls_log->async_running, 1);
	ls_async_running_mine = false;
}

/*
 * Abort: a transaction whose log-only commit record was appended failed
 * after all (an error later in PostgreSQL's commit: a pre-commit callback
 * of another library, a full NOTIFY queue).  The log must say so before
 * the abort is over, or recovery would take the commit record for a
 * commit.  The client has the error by then: a crash before the abort
 * record is durable keeps the transaction (README.md, "Log-only commits").
 */
void
ls_log_abort(void)
{
	TransactionId xid = ls_commit_xid;

	ls_log_async_done(InvalidXLogRecPtr);
	if (!TransactionIdIsValid(xid))
		return;
	/* cleared first: an error below must not make the abort try again */
	ls_commit_xid = InvalidTransactionId;
	/* test only: the moment a writer or checkpoint must not use */
	if (ls_debug_point_is("commit-error-slow-abort"))
		ls_debug_pause("commit-error-slow-abort", 10000);
	ls_log_commit_record(LS_LR_ABORT, xid);
	ls_log_flush_mine();
}

/*
 * XACT_EVENT_COMMIT.  A commit through PostgreSQL's WAL has its crash point
 * here (the commit record is flushed, leanstore's log may not have the
 * rows yet).
 *
 * After a log-only commit.  PostgreSQL took its commit
 * record for an asynchronous one (it wrote no WAL before), and
 * XLogSetAsyncXactLSN signals the WAL writer whenever a completed WAL page
 * is not flushed yet; the WAL writer writes such pages when woken but
 * flushes them only every wal_writer_delay (200ms).  So for up to 200ms
 * every log-only commit sent it a signal and a wake-up: a kill() on about
 * every third commit of one client (strace), and one-row inserts ran at
 * 0.82 of heap's rate, 0.97 with wal_writer_delay = 10ms.  Flushing the
 * completed pages here, which the first committer after a page fills does
 * (about once per 8kB of WAL), keeps the flush pointer at the last page
 * boundary, and the commits after it signal nobody.
 */
void
ls_log_commit_done(void)
{
	XLogRecPtr	insert;
	XLogRecPtr	boundary;

	/* PostgreSQL's commit record is flushed, leanstore's log may lag */
	if (ls_committed_via_wal)
		ls_debug_crash("commit-via-wal");
	ls_log_async_done(XactLastCommitEnd);
	if (!TransactionIdIsValid(ls_commit_xid) || RecoveryInProgress())
		return;

	/*
	 * A synchronous log-only commit flushes no WAL of its own: when an
	 * asynchronous commit decided by PostgreSQL's WAL may be unflushed (it
	 * returned to its client, or is still running and this transaction
	 * could read its rows), flush up to this commit record, which comes
	 * after theirs, as a synchronous heap commit would.
	 */
	if (synchronous_commit > SYNCHRONOUS_COMMIT_OFF && ls_async_wal_unflushed())
	{
		XLogFlush(XactLastCommitEnd);
		return;
	}
	insert = GetXLogInsertRecPtr();
	boundary = insert - insert % XLOG_BLCKSZ;
	if (boundary > GetFlushRecPtr(NULL))
		XLogFlush(boundary);
}

/* Commit or abort: forget the write set. */
void
ls_log_xact_end(void)
{
	ls_wr_n = 0;
	ls_wr_ncreated = 0;
	if (ls_wr_cap > 4096)
	{
		pfree(ls_wr);
		ls_wr = NULL;
		ls_wr_cap = 0;
	}
	/* records of an aborted transaction need no wait: clog voids them */
	ls_my_log_pending = false;
	ls_xact_cold_xid = false;
	ls_copying = false;
	ls_committed_via_wal = false;
	if (ls_commit_children != NULL)
	{
		pfree(ls_commit_children);
		ls_commit_children = NULL;
	}
	ls_commit_nchildren = 0;
	ls_commit_xid = InvalidTransactionId;
	/* committed, or its LS_LR_ABORT durable (ls_log_abort ran first) */
	ls_in_doubt_clear();
}

/* ------------------------------------------------------------------------
 * Checkpoints: the log before a point stops being needed
 *
 *  1. Hold every tree still (ls_cold_hold_trees: no tree change and no
 *     cold record can be in flight), wait until every record appended so
 *     far is durable (durable GSN >= the GSN counter), and take the log's
 *     end as the new replay start S: every cold record is before S.
 *  2. Write every changed tree as a new clean image (ls_cold_clean_point);
 *     let the trees go.  A crash now goes back to these images.
 *  3. Log again, after S, what the hot tier holds: each permanent table's
 *     rowid floor (HWM), a CREATE for one without a tree (its storage
 *     starts afresh at replay), and each hot row's committed state (a
 *     frozen image or tombstone), taken and logged under the row latch so
 *     that a later write of the row logs after it.  A row whose newest
 *     version is still being written by a running transaction is done
 *     when that transaction ends (its record may lie before S: if it
 *     aborts, the committed state must be logged after S).
 *  4. Once all of it is durable, the state file names S as the replay
 *     start and the segments before it may be recycled.
 * A checkpoint that cannot finish (a row kept busy too long, a write
 * error) leaves the replay start where it was: it is always safe to stop.
 * ------------------------------------------------------------------------ */

typedef struct LsCkptDefer
{
	ls_hot_key	key;
	uint64		rowid;
	TransactionId xid;
} LsCkptDefer;

/*
 * A status for the checkpoint: a transaction still running but committed
 * in clog (its commit record is written; it waits only for a synchronous
 * standby now, or is about to leave the running transactions) counts as
 * committed, as recovery would find it.
 */
static LsXidStatus
ls_ckpt_status(LsXidStatus st, TransactionId xid)
{
	if (st == LS_XS_IN_PROGRESS && TransactionIdDidCommit(xid))
		return LS_XS_COMMITTED;
	return st;
}

/* Must the checkpoint wait for xid, a row's logged_xid (see above)? */
static bool
ls_ckpt_waits_for(TransactionId xid)
{
	return TransactionIdIsValid(xid) && ls_xid_in_progress(xid) &&
		!TransactionIdDidCommit(xid);
}

/*
 * Log rowid's committed state (checkpoint).  false: the row waits for a
 * transaction (*busy is its xid, or invalid: try again soon): try again
 * once it ended.  true with *logged false: nothing to log (no committed
 * version, or the row is gone from the hot tier).
 *
 * A running transaction's write of the row (a version on top, or an xmax
 * that deletes it) does not stop this: the committed state under it is
 * logged now, and the writer logs its after-image at its commit, later in
 * GSN order.  row->logged_xid says whether the writer has begun that:
 * ls_log_row stores its record's xid there under the row latch *before* it
 * appends (and a migration stores the xid of a delete or update made in
 * the cold tier, whose tombstone was logged at once, with LS_LOGGED_EARLY).
 * A transaction there that is still running may have its record before
 * the replay start, so the row waits for it as before (if it commits, its
 * version is the committed state to log; if it aborts, the one under it),
 * unless its record is such an early tombstone: that transaction may stay
 * open for hours, and its tombstone, decided by clog, is simply logged
 * again after the committed state.  A writer that clog calls committed
 * already is decided (ls_ckpt_status): its versions are the committed
 * state, logged frozen (a commit waiting for a synchronous standby held
 * every checkpoint back until session 27).  Otherwise the
 * record is appended here under the latch, with logged_xid unchanged since
 * it was read (before the versions, and before asking whether that xid
 * runs: a writer that ended in between has its final status in clog): a
 * writer that marks the row later takes the latch after this append, so
 * its record comes later in GSN order.  Until session 26 every row a
 * running transaction wrote waited for it: a session idle in a transaction
 * after an update held every checkpoint back, and under pgbench with many
 * clients the branch rows almost never had no writer (ckpt_load.sh).
 */
static bool
ls_ckpt_row(ls_hot_table *tbl, Oid spc, uint64 rowid, StringInfo buf, TransactionId *busy,
			bool *logged)
{
	*logged = false;
	for (int tries = 0; tries < 100; tries++)
	{
		ls_hot_row *row;
		ls_hot_version *newest;
		ls_hot_version *target = NULL;
		LsVersionInfo info;
		LsXidStatus xs = LS_XS_ABORTED;
		LsXidStatus ds = LS_XS_ABORTED;
		uint64		xmax_word = 0;
		TransactionId logged_xid;
		uint8		logged_flags;
		bool		early = false;
		int			hops = 0;
		bool		done = false;
		LsLogTarget t;

		resetStringInfo(buf);
		ls_epoch_enter();
		row = ls_hot_row_get(tbl, rowid);
		if (row == NULL)
		{
			ls_epoch_exit();
			return true;		/* gone (DEAD or cold): nothing hot to log */
		}
		logged_xid = atomic_load(&row->logged_xid);
		logged_flags = atomic_load(&row->logged_flags);
		if (ls_ckpt_waits_for(logged_xid))
		{
			/*
			 * A writer is committing: its record may be before the start.
			 * Unless it is the tombstone of a delete made in the cold tier
			 * (the row came in since), logged when it was made and decided
			 * by clog: that one is logged again after the committed state.
			 * (One that clog calls committed already is decided: its
			 * versions count as committed below, and are logged so.)
			 */
			if (!(logged_flags & LS_LOGGED_EARLY))
			{
				*busy = logged_xid;
				ls_epoch_exit();
				return false;
			}
			early = true;
		}
		newest = ls_hot_row_newest(row);
		/* the newest version a finished transaction made; running writers' skipped */
		for (ls_hot_version *v = newest; v != NULL; v = ls_chain_next(row, v, &hops))
		{
			ls_version_info(v, &info);
			xs = ls_ckpt_status(ls_xmin_status(v, &info), info.xmin);
			if (xs == LS_XS_ABORTED)
				continue;
			if (xs == LS_XS_CURRENT)
			{
				/* the caller's own write (not waiting for writers) */
				*busy = info.xmin;
				ls_epoch_exit();
				return false;
			}
			if (xs == LS_XS_IN_PROGRESS)
				continue;		/* a running writer's: not logged yet (above) */
			target = v;
			break;
		}
		if (target != NULL)
		{
			xmax_word = info.xmax_raw;
			if (!ls_xmax_is_lock_only(&info))
				ds = ls_ckpt_status(ls_xmax_status(target, &info), info.xmax);
			if (ds == LS_XS_CURRENT)
			{
				*busy = info.xmax;
				ls_epoch_exit();
				return false;
			}
		}
		/* the early tombstone deletes the committed state, nothing else */
		if (early && (target == NULL || target != newest || ds != LS_XS_IN_PROGRESS ||
					  info.xmax != logged_xid))
		{
			*busy = logged_xid;
			ls_epoch_exit();
			return false;
		}
		if (ds == LS_XS_IN_PROGRESS)
			ds = LS_XS_ABORTED; /* a running delete: the row stands until it commits */
		if (target == NULL)
		{
			ls_epoch_exit();
			return true;		/* nothing committed: the row never was (yet) */
		}
		if (ds != LS_XS_COMMITTED)
			appendBinaryStringInfo(buf, (const char *) target->data, target->len);
		/* logged frozen: its commit must not be lost by a crash any more */
		if (ds == LS_XS_COMMITTED)
			ls_xid_commit_flush(info.xmax);
		else if (!(info.xmin_flags & LS_HV_XMIN_FROZEN))
			ls_xid_commit_flush(info.xmin);
		ls_log_target(&t, ls_hot_table_get_key(tbl), spc, rowid);
		ls_row_lock(row);
		if (!ls_hot_row_is_removed(row) && ls_hot_row_newest(row) == newest &&
			atomic_load(&target->xmax_word) == xmax_word &&
			atomic_load(&row->logged_xid) == logged_xid &&
			atomic_load(&row->logged_flags) == logged_flags)
		{
			if (ds == LS_XS_COMMITTED)
				ls_log_append(LS_LR_TOMB, LS_LRF_FROZEN, info.xmax, &t, NULL, 0);
			else
			{
				t.len = (uint32) buf->len;
				ls_log_append(LS_LR_ROW, LS_LRF_FROZEN, info.xmin, &t, buf->data,
							  (uint32) buf->len);
			}
			if (early)
			{
				/* as ls_log_cold_tomb did; the mark stays the row's last */
				t.len = 0;
				ls_log_append(LS_LR_TOMB, 0, logged_xid, &t, NULL, 0);
			}
			else
			{
				/* this record is the row's last now (and no old xid stays) */
				atomic_store(&row->logged_xid, InvalidTransactionId);
				atomic_store(&row->logged_flags, 0);
			}
			done = true;
		}
		ls_row_unlock(row);
		ls_epoch_exit();
		if (done)
		{
			*logged = true;
			return true;
		}
	}
	*busy = InvalidTransactionId;
	return false;
}

/* Step 3 for one table: floor, existence, hot rows (deferring busy ones). */
static void
ls_ckpt_table(ls_hot_table *tbl, StringInfo buf, LsCkptDefer **defer, int *ndefer, int *cap)
{
	Oid			spc = ls_hot_table_get_tag(tbl, LS_TAG_SPC);
	uint64		next;
	uint32		used;
	uint64		hole_lo = PG_UINT64_MAX;
	uint64		hole_hi = 0;
	LsLogTarget t;

	ls_hot_table_get_fill(tbl, &next, &used);
	ls_log_target(&t, ls_hot_table_get_key(tbl), spc, next);

	/*
	 * No CREATE: if this checkpoint does not finish, replay reads the older
	 * log and then these records, and a CREATE would wipe rows that the
	 * older log has and this checkpoint did not log again yet.  The HWM
	 * record names the table; a table without a tree has an empty file,
	 * which replay opens as an empty table.
	 */
	/* the reservation that covers the rowids in use */
	t.value = Max(next, (uint64) ls_hot_table_get_tag(tbl, LS_TAG_HWM) << LS_HWM_SHIFT);
	ls_log_append(LS_LR_HWM, 0, InvalidTransactionId, &t, NULL, 0);
	/*
	 * The hot rows only (the scan skips empty parts of the RID-map).  A
	 * row with nothing to log, or one a running transaction writes, may be
	 * an insert that did not commit: its rowid was handed out before the
	 * clean point (so replay's holes range starts above it) and its index
	 * entries are in PostgreSQL's WAL, but no record of this checkpoint
	 * would name it.  The holes record below covers every such rowid.
	 */
	for (uint64 cursor = 0;;)
	{
		uint64		rowids[LS_HOT_ROWIDS_BATCH];
		uint32		n = ls_hot_rowids(tbl, &cursor, ls_hot_table_rowid_limit(tbl), rowids);

		if (n == 0)
			break;
		for (uint32 i = 0; i < n; i++)
		{
			TransactionId busy;
			bool		logged;
			bool		done = ls_ckpt_row(tbl, spc, rowids[i], buf, &busy, &logged);

			if (!logged)
			{
				hole_lo = Min(hole_lo, rowids[i]);
				hole_hi = Max(hole_hi, rowids[i] + 1);
			}
			if (done)
				continue;
			if (*ndefer == *cap)
				*defer = ls_array_grow(*defer, cap, 64, sizeof(LsCkptDefer),
									   CurrentMemoryContext);
			(*defer)[*ndefer].key = ls_hot_table_get_key(tbl);
			(*defer)[*ndefer].rowid = rowids[i];
			(*defer)[*ndefer].xid = busy;
			(*ndefer)++;
		}
	}
	/*
	 * DEAD rowids (after the rows: a row that became DEAD meanwhile is
	 * seen by one of the two scans): index entries may still name them,
	 * and the records that made them DEAD are before the new replay start.
	 * One record per run of consecutive DEAD rowids (a crashed load leaves
	 * long runs).
	 */
	t.len = 0;
	for (uint64 cursor = 0;;)
	{
		uint64		dead = 0;
		bool		more;

		ls_epoch_enter();
		more = ls_hot_scan_next_dead(tbl, &cursor, ls_hot_table_rowid_limit(tbl), &dead);
		ls_epoch_exit();
		if (more && t.len > 0 && dead == t.value + t.len && t.len < PG_UINT32_MAX)
		{
			t.len++;
			continue;
		}
		if (t.len > 0)
			ls_log_append(LS_LR_DEAD, 0, InvalidTransactionId, &t, NULL, 0);
		if (!more)
			break;
		t.value = dead;
		t.len = 1;
	}
	/* the holes range and the rows above: the same kind of record, marked */
	{
		uint64		lo,
					hi;

		if (ls_holes_get(tbl, &lo, &hi))
		{
			hole_lo = Min(hole_lo, lo);
			hole_hi = Max(hole_hi, hi);
		}
		ls_log_holes_range(&t, hole_lo, hole_hi);
	}
}

/*
 * PostgreSQL's CHECKPOINT command (after its own checkpoint): a leanstore
 * checkpoint too, so that a user's CHECKPOINT (before a backup, a
 * benchmark, a shutdown) leaves leanstore's log as short as heap's WAL.
 * One that is running already is waited for, then ours runs (it began
 * before our command, so it may miss changes made before the command).
 * Rows this transaction wrote are not waited for (they would wait for us):
 * the checkpoint then writes the trees but keeps the log start.
 */
void
ls_checkpoint_command(void)
{
	if (ls_log == NULL || pg_atomic_read_u32(&ls_log->state) != LS_LOG_READY)
		return;
	(void) ls_ctx();
	for (int tries = 0; tries < 3; tries++)
	{
		while (pg_atomic_read_u32(&ls_log->ckpt_running) != 0)
		{
			CHECK_FOR_INTERRUPTS();
			pg_usleep(10 * 1000L);
		}
		if (ls_checkpoint(!TransactionIdIsValid(GetTopTransactionIdIfAny())))
			return;
		if (pg_atomic_read_u32(&ls_log->ckpt_running) == 0)
			return;				/* ours ran and could not finish (logged) */
	}
}

/* Is a checkpoint due (leanstore.checkpoint_timeout, leanstore.max_log_size)? */
bool
ls_checkpoint_due(void)
{
	bool		clean;
	uint64		start;
	uint64		end;

	if (ls_log == NULL || pg_atomic_read_u32(&ls_log->state) != LS_LOG_READY)
		return false;
	ls_cold_start_state(&clean, &start);

	/*
	 * What was logged since the last checkpoint finished, not since the
	 * replay start: a checkpoint logs every hot row again after that start,
	 * and when that alone passed half of max_log_size (a hot tier of a few
	 * hundred MB against the 1GB default), every checkpoint made the next
	 * one due at once: they ran back to back for as long as the server
	 * ran, idle or not.  Nothing logged since: none is due.
	 */
	start = Max(start, ls_log->ckpt_end);
	end = ls_wal_end(ls_log->wal);
	if (end > start && end - start > (uint64) ls_max_log_size_mb * 1024 * 1024 / 2)
		return true;
	if (ls_checkpoint_timeout_s <= 0 ||
		!TimestampDifferenceExceeds(ls_log->last_checkpoint, GetCurrentTimestamp(),
									ls_checkpoint_timeout_s * 1000))
		return false;

	/*
	 * Nothing logged since: one more is due while xids the replayed log
	 * may still ask clog about hold relfrozenxid back (ls_log_xid_horizon):
	 * the records of a burst of writes are let go by the second checkpoint
	 * after them, and until session 29 an idle server (or one whose
	 * leanstore tables are only read) never ran it, so relfrozenxid stayed
	 * behind for as long as nothing was written.  Such a checkpoint notes
	 * nothing new (it logs rows frozen), so the next one finds none held.
	 */
	return end > start || TransactionIdIsValid(ls_log_xid_horizon());
}

/* This process runs the checkpoint (holds ckpt_running). */
static bool ls_ckpt_mine = false;

/*
 * A checkpoint ends without finishing: its xid slot goes, the next one may
 * run.  Also at exit: a FATAL (pg_terminate_backend of a session in
 * leanstore_checkpoint() or CHECKPOINT) runs no PG_CATCH, and until
 * session 29 left ckpt_running set: no checkpoint ran again until a
 * restart (the log grew past max_log_size, CHECKPOINT waited for ever;
 * test/recovery/ckpt_terminate.sh).
 */
static void
ls_checkpoint_abandon(void)
{
	if (!ls_ckpt_mine)
		return;
	ls_log_xid_cut_done(false);
	ls_ckpt_mine = false;
	pg_atomic_write_u32(&ls_log->ckpt_running, 0);
}

static void
ls_checkpoint_exit(int code, Datum arg)
{
	(void) code;
	(void) arg;
	ls_checkpoint_abandon();
}

/*
 * Run a checkpoint (the leanstore worker when one is due, or
 * leanstore_checkpoint()).  false when another one runs or this one could
 * not finish (the replay start then stays where it was).
 */
bool
ls_checkpoint(bool wait_for_writers)
{
	uint32		expected = 0;
	ls_hot	   *hot;
	uint64		gsn;
	uint64		start;
	uint64		cover;
	instr_time	t0,
				t1;
	StringInfoData buf;
	ls_hot_key *keys = NULL;
	int			nkeys = 0;
	LsCkptDefer *defer = NULL;
	int			ndefer = 0;
	int			cap = 0;
	bool		ok;

	static bool exit_registered = false;

	if (ls_log == NULL || pg_atomic_read_u32(&ls_log->state) != LS_LOG_READY)
		return false;
	if (!exit_registered)
	{
		before_shmem_exit(ls_checkpoint_exit, (Datum) 0);
		exit_registered = true;
	}
	if (!pg_atomic_compare_exchange_u32(&ls_log->ckpt_running, &expected, 1))
		return false;
	ls_ckpt_mine = true;
	INSTR_TIME_SET_CURRENT(t0);
	hot = ls_shared_hot();
	PG_TRY();
	{
		/*
		 * 0. most dirty pages written while the trees still change: the
		 * flush under the hold below then writes only what changed since
		 * (a COPY stood still for the whole flush: 3.6 s for 365 MB)
		 */
		ls_cold_preflush();
		/* 1. a consistent cut of the trees and of the log */
		ls_cold_hold_trees(true);
		ls_log_xid_cut();
		/*
		 * Every record before cover was appended before the GSN is read
		 * (a record is in the stream only after its append): its GSN is
		 * <= gsn.  Records between cover and start may have any GSN.
		 */
		cover = ls_wal_end(ls_log->wal);
		pg_memory_barrier();
		gsn = ls_wal_current_gsn(ls_log->wal);
		if (unlikely(ls_debug_checkpoint_pause_ms > 0))
			ls_debug_pause("leanstore.debug_checkpoint_pause", ls_debug_checkpoint_pause_ms);
		while (ls_wal_durable_gsn(ls_log->wal) < gsn)
		{
			if (ls_wal_failed(ls_log->wal))
				ls_log_writer_failed();
			ls_wal_kick(ls_log->wal);
			pg_usleep(500L);
		}
		start = ls_wal_end(ls_log->wal);
		/* 2. changed trees become clean images */
		ok = ls_cold_clean_point(true);
		ls_cold_hold_trees(false);
		if (ok)
			ls_debug_crash("checkpoint-clean");

		/* 3. the hot tier, logged again after start */
		if (ok)
		{
			uint32		cursor = 0;
			ls_hot_table *tbl;
			int			kcap = 0;
			TimestampTz deadline;

			ls_epoch_enter();
			while ((tbl = ls_hot_table_next(hot, &cursor)) != NULL)
			{
				ls_hot_key	key;

				if (!ls_log_permanent(tbl) || ls_hot_table_get_tag(tbl, LS_TAG_READY) == 0)
					continue;
				/* read before the epoch is left: tbl is only safe inside it */
				key = ls_hot_table_get_key(tbl);
				if (nkeys == kcap)
				{
					ls_epoch_exit();	/* allocation may throw */
					keys = ls_array_grow(keys, &kcap, 64, sizeof(ls_hot_key),
										 CurrentMemoryContext);
					ls_epoch_enter();
				}
				keys[nkeys++] = key;
			}
			ls_epoch_exit();
			initStringInfo(&buf);
			for (int i = 0; i < nkeys; i++)
			{
				/* a table dropped meanwhile is gone (its drop is logged) */
				if ((tbl = ls_hot_table_find(hot, keys[i])) != NULL)
					ls_ckpt_table(tbl, &buf, &defer, &ndefer, &cap);
			}
			/*
			 * Rows a running transaction was writing: once it ended.  The
			 * waits share one deadline (LS_CKPT_WAIT_MS in all): they were
			 * 10 s a row and round, so a session idle in a transaction
			 * that had written 1000 rows held the worker (pack, later
			 * checkpoints) for hours.
			 */
			deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), LS_CKPT_WAIT_MS);

			/*
			 * Rounds until the deadline, each row tried as soon as the
			 * writer it waits for ended: a row that many sessions update in
			 * turn (pgbench's branches with many clients) has a new writer
			 * soon after the last one commits, and three rounds of 1 ms
			 * polls almost never met it between two: no checkpoint finished
			 * under such a load, and the log grew by gigabytes a minute
			 * past max_log_size.  (Without waiting, the caller's own
			 * transaction wrote: three rounds, as before.)
			 */
			for (int round = 0; ok && ndefer > 0 &&
				 (wait_for_writers ? GetCurrentTimestamp() < deadline : round < 3); round++)
			{
				int			left = 0;

				for (int i = 0; i < ndefer; i++)
				{
					ls_hot_table *t2 = ls_hot_table_find(hot, defer[i].key);
					TransactionId busy;
					bool		logged; /* the table's holes record covers it */

					/* (one that commits and waits for a standby: no more) */
					while (wait_for_writers && ls_ckpt_waits_for(defer[i].xid) &&
						   GetCurrentTimestamp() < deadline)
					{
						CHECK_FOR_INTERRUPTS();
						pg_usleep(100L);
					}
					if (t2 == NULL ||
						ls_ckpt_row(t2, ls_hot_table_get_tag(t2, LS_TAG_SPC), defer[i].rowid,
									&buf, &busy, &logged))
						continue;
					defer[left] = defer[i];
					defer[left].xid = busy;
					left++;
				}
				ndefer = left;
			}
			if (ndefer > 0)
			{
				ereport(LOG,
						(errmsg("leanstore checkpoint skipped: %d rows stayed busy", ndefer)));
				ok = false;
			}
			pfree(buf.data);
		}
		/* 4. durable, then the replay start moves */
		if (ok)
		{
			ls_log_flush_mine();
			ls_debug_crash("checkpoint-relog");
			ls_cold_set_log_start(start, cover, gsn);
			/* recovery reads from cover (ls_replay_shadows) */
			ls_wal_set_keep_from(ls_log->wal, cover);
		}
		ls_log_xid_cut_done(ok);
	}
	PG_CATCH();
	{
		ls_checkpoint_abandon();
		PG_RE_THROW();
	}
	PG_END_TRY();
	INSTR_TIME_SET_CURRENT(t1);
	INSTR_TIME_SUBTRACT(t1, t0);
	if (ok)
	{
		ls_log->checkpoint_us = INSTR_TIME_GET_MICROSEC(t1);
		ls_log->last_checkpoint = GetCurrentTimestamp();
		ls_log->ckpt_end = ls_wal_end(ls_log->wal);
		pg_atomic_fetch_add_u64(&ls_log->checkpoints, 1);
	}
	ls_ckpt_mine = false;
	pg_atomic_write_u32(&ls_log->ckpt_running, 0);
	if (keys != NULL)
		pfree(keys);
	if (defer != NULL)
		pfree(defer);
	return ok;
}

/* ------------------------------------------------------------------------
 * Custom WAL resource manager (its records carry nothing to redo)
 * ------------------------------------------------------------------------ */

static void
ls_rm_redo(XLogReaderState *record)
{
	uint8		info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;

	/* LS_XLOG_ROWS: leanstore's recovery reads them (ls_wal_copies_read) */
	if (info != LS_XLOG_COMMIT && info != LS_XLOG_BULK && info != LS_XLOG_ROWS)
		elog(PANIC, "leanstore WAL redo: unknown record type %u", info);
}

static void
ls_rm_desc(StringInfo buf, XLogReaderState *record)
{
	uint8		info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;

	switch (info)
	{
		case LS_XLOG_ROWS:
			appendStringInfo(buf, "%u bytes of leanstore row records",
							 XLogRecGetDataLen(record));
			break;
		case LS_XLOG_BULK:
			appendStringInfoString(buf, "leanstore bulk load's transaction");
			break;
		default:
			appendStringInfoString(buf, "leanstore-only transaction");
			break;
	}
}

static const char *
ls_rm_identify(uint8 info)
{
	switch (info & ~XLR_INFO_MASK)
	{
		case LS_XLOG_COMMIT:
			return "COMMIT";
		case LS_XLOG_BULK:
			return "BULK";
		case LS_XLOG_ROWS:
			return "ROWS";
	}
	return NULL;
}

/*
 * The first xid PostgreSQL's redo did not see (the xid bound).
 *
 * A transaction that is not a log-only commit is decided by PostgreSQL's
 * commit record.  When the crash came after its rows were durable in
 * leanstore's log but before any WAL record of PostgreSQL's that names its
 * xid was, PostgreSQL's redo never learns the xid and hands it out again.
 * leanstore's recovery runs in the log writer, a background worker that
 * starts once connections are open: a transaction of the new run could take
 * the xid and commit before replay asks clog about it, and the dead
 * transaction's rows would come back.  The xids of the log's records from
 * before the crash that are not below the bound never reached PostgreSQL's
 * WAL, so they never committed (log-only commits aside: their own records
 * decide them).
 *
 * The startup process notes the bound when redo ends (the resource
 * manager's cleanup), before any connection opens, in a file that stays
 * until leanstore's recovery has finished: if the server crashes again
 * first, the next redo's bound would cover xids the interrupted run handed
 * out again, so the first bound stays.  No redo (a clean shutdown): every
 * xid ever handed out is below the checkpoint's next xid, and clog knows
 * the outcome of all of them.
 */
#define LS_XID_BOUND_FILE	LS_STATE_DIR "/xid_bound"

static TransactionId ls_replay_xid_bound = InvalidTransactionId;

static void
ls_rm_cleanup(void)
{
	char		buf[32];
	int			len;
	struct stat sb;

	if (stat(LS_XID_BOUND_FILE, &sb) == 0)
		return;					/* a recovery of leanstore's is unfinished */
	ls_make_directory(LS_STATE_DIR);
	len = snprintf(buf, sizeof(buf), "%u\n",
				   XidFromFullTransactionId(ReadNextFullTransactionId()));
	ls_write_file_durably(LS_XID_BOUND_FILE, buf, len, FATAL);
}

/* A small state file of leanstore's, or NULL when it does not exist. */
static FILE *
ls_state_file_open(const char *path)
{
	FILE	   *f = AllocateFile(path, "r");

	if (f == NULL && errno != ENOENT)
		ereport(FATAL,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", path)));
	return f;
}

/* The bound of an unfinished recovery, or InvalidTransactionId. */
static TransactionId
ls_xid_bound_read(void)
{
	FILE	   *f = ls_state_file_open(LS_XID_BOUND_FILE);
	unsigned	xid = InvalidTransactionId;

	if (f == NULL)
		return InvalidTransactionId;
	if (fscanf(f, "%u", &xid) != 1 || !TransactionIdIsNormal(xid))
		ereport(FATAL,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("file \"%s\" does not hold a transaction ID", LS_XID_BOUND_FILE)));
	FreeFile(f);
	return (TransactionId) xid;
}

/* Recovery is over: the next crash notes its own bound. */
static void
ls_xid_bound_forget(void)
{
	struct stat sb;

	if (stat(LS_XID_BOUND_FILE, &sb) == 0)
		(void) durable_unlink(LS_XID_BOUND_FILE, FATAL);
}

static RmgrData ls_rmgr = {
	.rm_name = "leanstore",
	.rm_redo = ls_rm_redo,
	.rm_desc = ls_rm_desc,
	.rm_identify = ls_rm_identify,
	.rm_cleanup = ls_rm_cleanup,
};

void
ls_log_register(void)
{
	BackgroundWorker bgw;

	DefineCustomStringVariable("leanstore.log_directory",
							   "Directory of leanstore's log segments.",
							   "Relative paths are inside the data directory.",
							   &ls_log_directory,
							   "pg_leanstore/log",
							   PGC_POSTMASTER,
							   0,
							   ls_check_log_directory, NULL, NULL);
	DefineCustomIntVariable("leanstore.log_buffer",
							"Log buffer of each backend, in shared memory.",
							"Rounded down to a power of two; a row image may take up to half of it.",
							&ls_log_buffer_kb,
							256, 256, 64 * 1024,
							PGC_POSTMASTER,
							GUC_UNIT_KB,
							NULL, NULL, NULL);
	/* a power of two */
	while (ls_log_buffer_kb & (ls_log_buffer_kb - 1))
		ls_log_buffer_kb &= ls_log_buffer_kb - 1;

	DefineCustomIntVariable("leanstore.checkpoint_timeout",
							"Time between leanstore checkpoints.",
							"A checkpoint writes changed cold trees as clean images and logs the hot rows again, so that older log segments can be recycled; 0 leaves it to leanstore.max_log_size.",
							&ls_checkpoint_timeout_s,
							300, 0, 86400,
							PGC_SIGHUP,
							GUC_UNIT_S,
							NULL, NULL, NULL);
	DefineCustomIntVariable("leanstore.max_log_size",
							"Log size that makes the leanstore worker run a checkpoint.",
							"A checkpoint starts when the log since the last one passes half of it.",
							&ls_max_log_size_mb,
							1024, 32, 1024 * 1024,
							PGC_SIGHUP,
							GUC_UNIT_MB,
							NULL, NULL, NULL);
	DefineCustomBoolVariable("leanstore.log_committer_rounds",
							 "Lets a committing backend write and sync leanstore's log itself while the log writer is idle.",
							 "Off: every round is the log writer's (a commit hands off to it and waits to be woken).",
							 &ls_log_committer_rounds,
							 true,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("leanstore.commit_via_wal",
							 "Lets a synchronous commit of leanstore rows commit with PostgreSQL's WAL flush alone.",
							 "Its leanstore row records go into PostgreSQL's WAL too, and the commit does not wait for leanstore's log. Off: a transaction that wrote only leanstore rows waits for leanstore's log (a log-only commit), any other for leanstore's log and then PostgreSQL's flush. The log writer keeps its replication slot only while the server's setting is on.",
							 &ls_commit_via_wal,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
	DefineCustomStringVariable("leanstore.debug_crash_point",
							   "Crash (SIGKILL) the process that reaches this point (tests only).",
							   "Points: commit-before-log, commit-after-log, commit-error-after-log (raises an error instead), commit-error-slow-abort (the same, and the abort waits 10 s before its abort record), drop-commit, recovery-fail (recovery fails with a FATAL instead), recovery-replay, recovery-relog, recovery-end, bulk-load, pack, checkpoint-clean, checkpoint-relog, shutdown-meta (the clean shutdown, after the first table's clean image); commit-async-split (no crash: an asynchronous log-only commit makes its first table's rows durable and holds the rest in its slot).",
							   &ls_debug_crash_point,
							   "",
							   PGC_SUSET,
							   GUC_NOT_IN_SAMPLE,
							   ls_check_crash_point, NULL, NULL);
	DefineCustomEnumVariable("leanstore.debug_log_fault",
							 "Make the log writer's next write or sync fail with EIO (tests only).",
							 NULL,
							 &ls_debug_log_fault,
							 0,
							 ls_log_fault_options,
							 PGC_SIGHUP,
							 GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("leanstore.debug_recovery_delay",
							"Delay of leanstore's recovery after a start (tests only).",
							"The log writer waits this long before it reads leanstore's log; connections are open meanwhile.",
							&ls_debug_recovery_delay_ms,
							0, 0, 600 * 1000,
							PGC_SIGHUP,
							GUC_UNIT_MS | GUC_NOT_IN_SAMPLE,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("leanstore.debug_hold_my_log",
							 "Keeps the log writer's rounds from taking this session's log records (tests only).",
							 "Its records stay in its log buffer, not durable, while other sessions' records are written.",
							 &ls_debug_hold_my_log,
							 false,
							 PGC_SUSET,
							 GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("leanstore.debug_checkpoint_pause",
							"Pause of a leanstore checkpoint after it read the GSN counter (tests only).",
							"The trees are held meanwhile; other sessions write hot rows and commit.",
							&ls_debug_checkpoint_pause_ms,
							0, 0, 60 * 1000,
							PGC_SUSET,
							GUC_UNIT_MS | GUC_NOT_IN_SAMPLE,
							NULL, NULL, NULL);
	DefineCustomIntVariable("leanstore.debug_image_pause",
							"Pause of a write of a cold image of several chunks after its first chunk (tests only).",
							"Scans meanwhile meet the image half written (regress ls_torn_image).",
							&ls_debug_image_pause_ms,
							0, 0, 60 * 1000,
							PGC_SIGHUP,
							GUC_UNIT_MS | GUC_NOT_IN_SAMPLE,
							NULL, NULL, NULL);
	DefineCustomIntVariable("leanstore.debug_update_lock",
							"Advisory lock an update whose new version goes into the cold tree waits for between its two steps (tests only).",
							"0: none.  Made in the cold tier: the row is locked in its image meanwhile (isolation lsx-cold-update-vismap); spilled: the image is written, the old version not marked yet (hotfull spill_follow.sh).",
							&ls_debug_update_lock,
							0, 0, INT_MAX,
							PGC_SUSET,
							GUC_NOT_IN_SAMPLE,
							NULL, NULL, NULL);
	DefineCustomIntVariable("leanstore.debug_round_delay",
							"Delay of every round of leanstore's log writer (tests only).",
							"Commits wait this much longer for the log: a test can act while they wait.",
							&ls_debug_round_delay_ms,
							0, 0, 60 * 1000,
							PGC_SIGHUP,
							GUC_UNIT_MS | GUC_NOT_IN_SAMPLE,
							NULL, NULL, NULL);

	RegisterCustomRmgr(LS_RMGR_ID, &ls_rmgr);

	memset(&bgw, 0, sizeof(bgw));
	bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw.bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw.bgw_restart_time = 1;
	snprintf(bgw.bgw_library_name, BGW_MAXLEN, "leanstore");
	snprintf(bgw.bgw_function_name, BGW_MAXLEN, "ls_log_writer_main");
	snprintf(bgw.bgw_name, BGW_MAXLEN, "leanstore log writer");
	snprintf(bgw.bgw_type, BGW_MAXLEN, "leanstore log writer");
	RegisterBackgroundWorker(&bgw);
}

/* ------------------------------------------------------------------------
 * Recovery: replay the log into the hot tier
 * ------------------------------------------------------------------------ */

typedef struct LsReplayTable
{
	ls_hot_key	key;			/* hash key */
	Oid			spc;
	bool		lost;			/* its records are skipped */
	bool		created;		/* started afresh by a CREATE or TRUNCATE */
	uint64		hwm;			/* rowids below may have been handed out */
	uint64		max_rowid;		/* one past the highest replayed rowid */
	uint64		open_fill;		/* rowid allocation of its clean image */
	bool		orphan;			/* its CREATE / TRUNCATE did not commit */
	bool		gone;			/* its file is gone: cold images are skipped */
	ls_hot_table *tbl;
} LsReplayTable;

typedef struct LsReplay
{
	HTAB	   *tables;
	uint64		records;
	uint64		rows;
	uint64		skipped;
	uint64		spilled;		/* row records stored cold: no hot memory */
} LsReplay;

static void
ls_replay_node(const LsReplayTable *rt, RelFileNode *node)
{
	node->spcNode = rt->spc;
	node->dbNode = rt->key.db;
	node->relNode = rt->key.rel;
}

/* Forget what replay built for rt (a drop, or a new storage of the number). */
static void
ls_replay_reset(LsReplayTable *rt)
{
	if (rt->tbl != NULL)
	{
		ls_cold_drop_for(rt->tbl);
		ls_hot_table_drop(ls_ctx(), rt->tbl);
		rt->tbl = NULL;
	}
	rt->lost = false;
	rt->created = false;
	rt->hwm = 0;
	rt->max_rowid = 0;
	rt->open_fill = 0;
	rt->orphan = false;
	rt->gone = false;
}

static void
ls_replay_new_table(LsReplayTable *rt)
{
	ls_status	st = ls_hot_table_create(ls_ctx(), rt->key, &rt->tbl);

	if (st != LS_OK)
		ereport(FATAL,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("could not replay leanstore's log: no room for relfilenode %u/%u: %s",
						rt->key.db, rt->key.rel, ls_status_str(st)),
				 errhint("Increase leanstore.max_tables and leanstore.hot_memory.")));
	ls_hot_table_set_tag(rt->tbl, LS_TAG_SPC, rt->spc);
	ls_hot_table_set_tag(rt->tbl, LS_TAG_PERSISTENCE, RELPERSISTENCE_PERMANENT);
	ls_hot_table_set_tag(rt->tbl, LS_TAG_READY, 1);
}

/* The replay state of the record's storage, opened over its file if new. */
static LsReplayTable *
ls_replay_table(LsReplay *rp, const LsLogTarget *t)
{
	ls_hot_key	key = {t->key_spc, t->db, t->rel};
	LsReplayTable *rt;
	bool		found;

	rt = hash_search(rp->tables, &key, HASH_ENTER, &found);
	if (!found)
	{
		memset(((char *) rt) + sizeof(ls_hot_key), 0, sizeof(*rt) - sizeof(ls_hot_key));
		rt->spc = t->spc;
	}
	if (rt->tbl == NULL && !rt->lost)
	{
		RelFileNode node;
		LsAdoptResult res;
		const char *why;
		char		name[64];

		ls_replay_node(rt, &node);
		snprintf(name, sizeof(name), "relfilenode %u/%u/%u", node.spcNode, node.dbNode, node.relNode);
		rt->tbl = ls_cold_adopt_node(rt->key, &node, RELPERSISTENCE_PERMANENT, name, &res, &why);
		if (res == LS_ADOPT_EMPTY)
		{
			ls_replay_new_table(rt);
			rt->created = true; /* its file's pages (if any) are not its base */
		}
		else if (rt->tbl == NULL)
			rt->lost = true;
		else
		{
			uint32		used;

			ls_hot_table_get_fill(rt->tbl, &rt->open_fill, &used);
		}
	}
	return rt;
}

/*
 * Outcomes the log itself records (log-only commits and their aborts),
 * gathered by a first pass over the log: two bits an xid (a commit record
 * seen, an abort record seen), in chunks of LS_XID_CHUNK consecutive xids.
 * Xids come densely, so that is about a byte for four xids; a hash entry an
 * xid took 40 bytes or more, and a log of small asynchronous commits holds
 * millions of them (max_log_size bounds the log, not its transactions).
 */
#define LS_XID_CHUNK_SHIFT	12
#define LS_XID_CHUNK		(1U << LS_XID_CHUNK_SHIFT)
#define LS_XID_SEEN_COMMIT	1
#define LS_XID_SEEN_ABORT	2

typedef struct LsReplayXids
{
	uint32		chunk;			/* hash key: xid >> LS_XID_CHUNK_SHIFT */
	uint8		bits[LS_XID_CHUNK / 4];
} LsReplayXids;

static HTAB *ls_replay_xids = NULL;

/* What the log's commit and abort records said of xid (0: nothing). */
static int
ls_replay_xid_seen(TransactionId xid)
{
	uint32		chunk = xid >> LS_XID_CHUNK_SHIFT;
	uint32		i = xid & (LS_XID_CHUNK - 1);
	LsReplayXids *x = hash_search(ls_replay_xids, &chunk, HASH_FIND, NULL);

	return x == NULL ? 0 : (x->bits[i / 4] >> (2 * (i % 4))) & 3;
}

static void
ls_replay_xid_note(TransactionId xid, int seen)
{
	uint32		chunk = xid >> LS_XID_CHUNK_SHIFT;
	uint32		i = xid & (LS_XID_CHUNK - 1);
	bool		found;
	LsReplayXids *x = hash_search(ls_replay_xids, &chunk, HASH_ENTER, &found);

	if (!found)
		memset(x->bits, 0, sizeof(x->bits));
	x->bits[i / 4] |= (uint8) (seen << (2 * (i % 4)));
}

/* Records of xids clog had truncated (ls_replay_committed) */
static uint64 ls_replay_pre_clog = 0;

static bool
ls_replay_committed(const ls_wal_rec *rec)
{
	if (rec->flags & LS_LRF_FROZEN)
		return true;
	if (!TransactionIdIsNormal(rec->xid))
		return rec->xid == FrozenTransactionId || rec->xid == BootstrapTransactionId;
	if (ls_replay_xids != NULL)
	{
		int			seen = ls_replay_xid_seen(rec->xid);

		/*
		 * A log-only commit: clog may not know it (PostgreSQL's commit
		 * record was not flushed yet).  Its xids are in hot rows only,
		 * which replay makes frozen, so clog is never asked again.  An
		 * abort wins, whichever record the stream gave first.
		 */
		if (seen != 0)
			return seen == LS_XID_SEEN_COMMIT;
	}

	/*
	 * A log-only commit's row without its commit record: not committed,
	 * even when clog says so (an asynchronous commit whose PostgreSQL
	 * commit record was flushed first, whose rows a round took only in
	 * part).
	 */
	if (rec->flags & LS_LRF_LOG_DECIDED)
		return false;
	/* never in PostgreSQL's WAL before the crash (see ls_rm_cleanup) */
	if (TransactionIdIsValid(ls_replay_xid_bound) &&
		!TransactionIdPrecedes(rec->xid, ls_replay_xid_bound))
		return false;
	/*
	 * Clog gone below it: leanstore holds the relfrozenxid of every one of
	 * its relations at or before every xid replay may ask clog about
	 * (ls_log_hold_frozenxid), and PostgreSQL truncates clog only below the
	 * oldest relfrozenxid; so clog lost this xid only when no leanstore
	 * relation was left -- the storage this record belongs to was dropped
	 * after it, by a record of such an xid as well.  Committed, whatever
	 * it was: what it created goes with that drop (clog_horizon.sh drops
	 * every table; recovery failed at every start before).
	 */
	if (TransactionIdPrecedes(rec->xid, ShmemVariableCache->oldestClogXid))
	{
		ls_replay_pre_clog++;
		return true;
	}
	/* below the bound: the crash decided every xid clog does not call committed */
	return TransactionIdDidCommit(rec->xid);
}

/* A commit or abort record: note the outcome of xid and its subxids. */
static void
ls_replay_note_outcome(const ls_wal_rec *rec)
{
	const LsLogTarget *t = (const LsLogTarget *) (rec + 1);
	const char *p = (const char *) (t + 1);
	uint32		n;
	bool		committed = rec->type == LS_LR_COMMIT;

	if (rec->len < LS_WAL_REC_HDR + sizeof(LsLogTarget) ||
		t->len != rec->len - LS_WAL_REC_HDR - sizeof(LsLogTarget) ||
		t->len % sizeof(TransactionId) != 0 || !TransactionIdIsNormal(rec->xid))
		ereport(FATAL,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("leanstore's log holds a malformed commit record")));
	n = t->len / sizeof(TransactionId);
	for (uint32 i = 0; i <= n; i++)
	{
		TransactionId xid;

		if (i == n)
			xid = rec->xid;
		else
			memcpy(&xid, p + i * sizeof(TransactionId), sizeof(xid));
		if (!TransactionIdIsNormal(xid))
			ereport(FATAL,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("leanstore's log holds a malformed commit record")));
		ls_replay_xid_note(xid, committed ? LS_XID_SEEN_COMMIT : LS_XID_SEEN_ABORT);
	}
}

/*
 * A row image of a record is a whole tuple: its length in range and equal
 * to the tuple's own (the record's CRC says the bytes are what was
 * appended, not that they were right).
 */
static void
ls_replay_check_image(const void *payload, uint32 len)
{
	uint32		t_len = 0;

	if (len >= sizeof(t_len))
		memcpy(&t_len, payload, sizeof(t_len));
	if (len < SizeofMinimalTupleHeader || len > LS_HOT_MAX_PAYLOAD || t_len != len)
		ereport(FATAL,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("leanstore's log holds a row image of %u bytes that is no tuple", len)));
}

/* A committed version of payload, or NULL when the hot tier has no room. */
static ls_hot_version *
ls_replay_version(const void *payload, uint32 len, TransactionId xmin,
				  TransactionId xmax)
{
	ls_hot_version *v;
	ls_status	st;

	ls_replay_check_image(payload, len);
	st = ls_hot_version_alloc(ls_ctx(), len, &v);
	if (st == LS_NO_SPACE)
		return NULL;			/* the caller stores the row cold instead */
	if (st != LS_OK)
		ereport(FATAL,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not replay leanstore's log: %s", ls_status_str(st))));
	memcpy(v->data, payload, len);
	atomic_store(&v->xmin_word, ls_hv_word(xmin, LS_HV_XMIN_COMMITTED | LS_HV_XMIN_FROZEN));
	atomic_store(&v->xmax_word, xmax == InvalidTransactionId ? 0 :
				 ls_hv_word(xmax, LS_HV_XMAX_COMMITTED | LS_HV_XMAX_KEYS_UPDATED));
	v->cmin = FirstCommandId;
	atomic_store(&v->next_rowid, LS_ROWID_INVALID);
	return v;
}

/*
 * May replay store cold images of rt?  Not when the storage is lost, or its
 * file is gone (it was dropped later in the log, or its drop record was
 * lost with an unfinished round: PostgreSQL's redo removed the file).
 * Without the file no tree can be made for an image (before, that stopped
 * the replay with "could not create the cold tree", and the server could
 * not start); the storage's rows go with it (ls_replay_finish forgets it).
 */
static bool
ls_replay_tree_usable(LsReplayTable *rt)
{
	if (!rt->lost && rt->tbl != NULL && !rt->gone && !ls_cold_has_tree(rt->tbl))
	{
		RelFileNode node;
		SMgrRelation srel;

		ls_replay_node(rt, &node);
		srel = smgropen(node, InvalidBackendId);
		rt->gone = !smgrexists(srel, MAIN_FORKNUM);
		smgrclose(srel);
	}
	return !(rt->lost || rt->tbl == NULL || rt->gone);
}

/* The storage of a committed cold image, or NULL when it is skipped. */
static LsReplayTable *
ls_replay_cold_target(LsReplay *rp, const LsLogTarget *t)
{
	LsReplayTable *rt = ls_replay_table(rp, t);

	if (!ls_replay_tree_usable(rt))
	{
		rp->skipped++;
		return NULL;
	}
	return rt;
}

/*
 * The hot tier has no room for a replayed row: its committed image goes
 * into the cold tree as a frozen image instead (and a hot row of the rowid
 * leaves), a deleted row goes from both tiers, its rowid DEAD.  That is
 * what the writer's own spill or pack did when the tier was full before the
 * crash, so recovery never needs more hot memory than the table can do
 * without: it fills the tier no further than it can, where it failed
 * before ("could not replay row N ...: no space") although the same rows
 * had fit the tier of the same size before the crash (its size classes
 * fragment differently), or with a smaller leanstore.hot_memory.  A storage whose
 * file is gone (dropped later in the log) has nothing to keep the row in:
 * it is skipped, as its cold images are.
 */
static void
ls_replay_row_cold(LsReplay *rp, LsReplayTable *rt, uint64 rowid,
				   const char *payload, uint32 len)
{
	if (!ls_replay_tree_usable(rt))
	{
		rp->skipped++;
		return;
	}
	if (payload != NULL)
		ls_cold_replay_put(rt->tbl, rowid, payload, len, FrozenTransactionId);
	else
		ls_cold_replay_remove(rt->tbl, rowid);
	rp->spilled++;
}

/*
 * Make rowid's row the given image (payload != NULL), or deleted.  A row
 * whose cold image exists stays in the hot tier as MIGRATED, so that it
 * shadows the image; a deleted one keeps a dead version over the image
 * until GC removes both (ls_cold_forget_image).
 *
 * The new version (as xmin) and the delete (as xmax) carry
 * FrozenTransactionId, not the record's xid: no snapshot survived the
 * crash, so the real xid says nothing any more, and it may be dangerous:
 * a log-only commit's xid may never have reached PostgreSQL's WAL (also
 * when a checkpoint logged its rows again, frozen, after its commit
 * record), so PostgreSQL can hand it out again, and a version or a delete
 * naming it would then look like the new transaction's work (a snapshot
 * taken while the new one runs would not see the delete).
 *
 * When the hot tier has no room, the row goes to the cold tier instead
 * (ls_replay_row_cold).
 */
static void
ls_replay_row(LsReplay *rp, LsReplayTable *rt, uint64 rowid, const char *payload,
			  uint32 len)
{
	ls_hot_table *tbl = rt->tbl;
	ls_hot_ctx *ctx = ls_ctx();
	ls_hot_row *row;
	ls_hot_version *v = NULL;
	char	   *copy = NULL;
	uint32		copy_len = 0;
	TransactionId copy_xmin = FrozenTransactionId;
	bool		in_cold = false;

	/* a deleted row needs an image for its dead version: the current one */
	if (payload == NULL)
	{
		bool		cold_only;

		ls_epoch_enter();
		row = ls_row_get(tbl, rowid);
		cold_only = row == NULL || ls_row_is_standin(row);
		ls_epoch_exit();
		if (cold_only)
		{
			/*
			 * Only an image (a delete made in the cold tier, or one whose row
			 * was packed since), or nothing (a row already gone, its
			 * tombstone's rowid still named by index entries): no snapshot
			 * survived the crash, so
			 * the row goes at once, its rowid DEAD for index cleanup (index
			 * entries may name it); a dead hot version for every such row
			 * could overflow the hot tier after a large delete.
			 */
			ls_cold_replay_remove(tbl, rowid);
			return;
		}
		ls_epoch_enter();
		row = ls_row_get(tbl, rowid);
		if (row != NULL && ls_hot_row_newest(row) != NULL)
		{
			ls_hot_version *cur = ls_hot_row_newest(row);

			in_cold = ls_row_is_standin(row) || row->origin == LS_ORIGIN_MIGRATED;
			copy_len = cur->len;
			copy = palloc(copy_len);
			memcpy(copy, cur->data, copy_len);
			copy_xmin = ls_hv_xid(atomic_load(&cur->xmin_word));
		}
		ls_epoch_exit();
		if (copy == NULL)
			return;				/* nothing there to delete */
		if (!in_cold)
		{
			/* only hot: the row goes, its slot DEAD (index entries) */
			ls_epoch_enter();
			row = ls_hot_row_get(tbl, rowid);
			if (row != NULL)
			{
				ls_row_lock(row);
				ls_row_forget_latch();
				ls_hot_row_remove(ctx, tbl, row, true);
			}
			ls_epoch_exit();
			pfree(copy);
			return;
		}
		v = ls_replay_version(copy, copy_len, copy_xmin, FrozenTransactionId);
		pfree(copy);
	}
	else
		v = ls_replay_version(payload, len, FrozenTransactionId, InvalidTransactionId);
	if (v == NULL)
	{
		ls_replay_row_cold(rp, rt, rowid, payload, len);
		return;
	}

	ls_epoch_enter();
	row = ls_hot_row_get(tbl, rowid);
	if (row != NULL)
	{
		ls_row_lock(row);
		ls_hot_row_install(ctx, tbl, row, v);
		ls_hot_row_truncate(ctx, tbl, row, v);
		ls_row_unlock(row);
	}
	else
	{
		ls_hot_row *standin;
		ls_status	st;

		/*
		 * A DEAD rowid here comes from the table's image: a clean
		 * shutdown's, which wrote the rowids dead at that point as DEAD
		 * keys, over which replay runs when that shutdown could not write
		 * every table or crashed among its writes (it then left the replay
		 * start where it was).  The row was removed before the shutdown, so
		 * the log holds that removal after this record, and it makes the
		 * rowid DEAD again; until then the row is as this record says.
		 */
		if (ls_hot_rowid_is_dead(tbl, rowid))
			ls_hot_rowid_forget(ctx, tbl, rowid);
		standin = ls_row_get(tbl, rowid);
		in_cold = standin != NULL;
		st = ls_hot_row_insert(ctx, tbl, rowid,
							   in_cold ? LS_ORIGIN_MIGRATED : LS_ORIGIN_INSERTED, v, &row);
		if (st == LS_NO_SPACE)
		{
			ls_epoch_exit();
			ls_hot_version_free(ctx, v);
			ls_replay_row_cold(rp, rt, rowid, payload, len);
			return;
		}
		if (st != LS_OK)
		{
			ls_epoch_exit();
			ls_hot_version_free(ctx, v);
			ereport(FATAL,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("could not replay row " UINT64_FORMAT " of leanstore relfilenode %u/%u: %s",
							rowid, rt->key.db, rt->key.rel, ls_status_str(st))));
		}
	}
	ls_epoch_exit();
}

/* An LS_LR_PUTS record: each entry as an LS_LR_PUT of the same xid. */
static void
ls_replay_puts(LsReplay *rp, const ls_wal_rec *rec, const LsLogTarget *t)
{
	LsReplayTable *rt;
	const char *p = (const char *) (t + 1);
	uint32		left = t->len;

	if (t->len != rec->len - LS_WAL_REC_HDR - sizeof(LsLogTarget))
		ereport(FATAL,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("leanstore's log holds a cold record of inconsistent length")));
	if (!ls_replay_committed(rec))
	{
		rp->skipped++;			/* an aborted bulk load: its rowids stay unused */
		return;
	}
	if ((rt = ls_replay_cold_target(rp, t)) == NULL)
		return;
	while (left > 0)
	{
		LsLogPut	e;

		if (left < sizeof(e))
			break;
		memcpy(&e, p, sizeof(e));
		if (e.len > left - sizeof(e))
			break;
		ls_replay_check_image(p + sizeof(e), e.len);
		ls_cold_replay_put(rt->tbl, t->value + e.delta, p + sizeof(e), e.len, rec->xid);
		rt->max_rowid = Max(rt->max_rowid, t->value + e.delta + 1);
		rp->rows++;
		p += sizeof(e) + e.len;
		left -= sizeof(e) + e.len;
	}
	if (left > 0)
		ereport(FATAL,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("leanstore's log holds a cold record whose entries overrun it")));
}

static void
ls_replay_record(LsReplay *rp, const ls_wal_rec *rec)
{
	const LsLogTarget *t = (const LsLogTarget *) (rec + 1);
	LsReplayTable *rt;

	if (rec->len < LS_WAL_REC_HDR + sizeof(LsLogTarget))
		ereport(FATAL,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("leanstore's log holds a record of %u bytes, too short", rec->len)));
	rp->records++;
	switch (rec->type)
	{
		case LS_LR_CREATE:
		case LS_LR_TRUNCATE:
			rt = ls_replay_table(rp, t);
			ls_replay_reset(rt);
			rt->spc = t->spc;
			rt->created = true;
			/* PostgreSQL leaves the file of an uncommitted creation behind */
			rt->orphan = !ls_replay_committed(rec);
			ls_replay_new_table(rt);
			break;
		case LS_LR_DROP:
			if (ls_replay_committed(rec))
			{
				ls_hot_key	key = {t->key_spc, t->db, t->rel};

				rt = hash_search(rp->tables, &key, HASH_FIND, NULL);
				if (rt != NULL)
				{
					ls_replay_reset(rt);
					rt->lost = true;	/* gone: later records (none) skipped */
				}
			}
			break;
		case LS_LR_DROPDB:
			if (ls_replay_committed(rec))
			{
				HASH_SEQ_STATUS seq;

				hash_seq_init(&seq, rp->tables);
				while ((rt = hash_seq_search(&seq)) != NULL)
				{
					if (rt->key.db == t->db)
					{
						ls_replay_reset(rt);
						rt->lost = true;
					}
				}
			}
			break;
		case LS_LR_HWM:
			rt = ls_replay_table(rp, t);
			rt->hwm = Max(rt->hwm, t->value);
			break;
		case LS_LR_DEAD:
			rt = ls_replay_table(rp, t);
			if (rt->lost || rt->tbl == NULL)
				break;
			if (t->persistence == LS_DEAD_HOLES)
				ls_holes_add(rt->tbl, t->value, t->value + t->len);
			else
				ls_cold_mark_holes_dead(rt->tbl, t->value, t->value + t->len);
			rt->max_rowid = Max(rt->max_rowid, t->value + t->len);
			break;
		case LS_LR_PUT:
			if (!ls_replay_committed(rec))
			{
				rp->skipped++;	/* an aborted bulk load: its rowid stays unused */
				break;
			}
			if ((rt = ls_replay_cold_target(rp, t)) == NULL)
				break;
			if (t->len != rec->len - LS_WAL_REC_HDR - sizeof(LsLogTarget))
				ereport(FATAL,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("leanstore's log holds a cold record of inconsistent length")));
			ls_replay_check_image(t + 1, t->len);
			ls_cold_replay_put(rt->tbl, t->value, (const char *) (t + 1), t->len, rec->xid);
			rt->max_rowid = Max(rt->max_rowid, t->value + 1);
			rp->rows++;
			break;
		case LS_LR_PUTS:
			ls_replay_puts(rp, rec, t);
			break;
		case LS_LR_COMMIT:
		case LS_LR_ABORT:
			break;				/* read by the first pass (ls_replay_outcomes) */
		case LS_LR_REMOVE:
			rt = ls_replay_table(rp, t);
			if (rt->lost || rt->tbl == NULL)
				break;
			ls_cold_replay_remove(rt->tbl, t->value);
			rt->max_rowid = Max(rt->max_rowid, t->value + 1);
			break;
		case LS_LR_ROW:
		case LS_LR_TOMB:
			if (!ls_replay_committed(rec))
			{
				rp->skipped++;
				break;
			}
			rt = ls_replay_table(rp, t);
			if (rt->lost || rt->tbl == NULL)
			{
				rp->skipped++;
				break;
			}
			if (rec->type == LS_LR_ROW)
			{
				if (t->len != rec->len - LS_WAL_REC_HDR - sizeof(LsLogTarget))
					ereport(FATAL,
							(errcode(ERRCODE_DATA_CORRUPTED),
							 errmsg("leanstore's log holds a row record of inconsistent length")));
				ls_replay_row(rp, rt, t->value, (const char *) (t + 1), t->len);
			}
			else
				ls_replay_row(rp, rt, t->value, NULL, 0);
			rt->max_rowid = Max(rt->max_rowid, t->value + 1);
			rp->rows++;
			break;
		default:
			ereport(FATAL,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("leanstore's log holds a record of unknown type %u", rec->type)));
	}
}

/*
 * After the last record: storages whose file is gone were dropped (their
 * drop record may be lost with an unfinished round; PostgreSQL's redo
 * removed the file); a created storage whose file has pages had rows
 * moving into its cold tree (not logged yet): lost.  Rowid allocation goes
 * on above everything the log reserved, and the visibility map forgets
 * every bit (the log does not say which blocks changed).
 */
static void
ls_replay_finish(LsReplay *rp)
{
	HASH_SEQ_STATUS seq;
	LsReplayTable *rt;

	hash_seq_init(&seq, rp->tables);
	while ((rt = hash_seq_search(&seq)) != NULL)
	{
		RelFileNode node;
		SMgrRelation srel;
		uint64		next;
		uint32		used;

		if (rt->tbl == NULL)
			continue;
		if (rt->orphan)
		{
			/*
			 * A creation that did not commit (PostgreSQL leaves its file
			 * behind): no catalog names it, nothing will use it again
			 */
			ls_replay_reset(rt);
			continue;
		}
		ls_replay_node(rt, &node);
		srel = smgropen(node, InvalidBackendId);
		if (!smgrexists(srel, MAIN_FORKNUM))
		{
			ls_replay_reset(rt);
			smgrclose(srel);
			continue;
		}
		if (rt->created && !ls_cold_has_tree(rt->tbl) && smgrnblocks(srel, MAIN_FORKNUM) > 0)
		{
			/*
			 * Pages a tree of the crashed run left (their rows are in the
			 * log, or were not committed): empty, as the storage began.
			 */
			ForkNumber	fork = MAIN_FORKNUM;
			BlockNumber zero = 0;

			smgrtruncate(srel, &fork, 1, &zero);
		}
		if (smgrexists(srel, VISIBILITYMAP_FORKNUM))
		{
			ForkNumber	fork = VISIBILITYMAP_FORKNUM;
			BlockNumber zero = 0;

			smgrtruncate(srel, &fork, 1, &zero);
		}
		smgrclose(srel);

		ls_hot_table_get_fill(rt->tbl, &next, &used);
		next = Max(next, Max(rt->hwm, rt->max_rowid));

		/*
		 * Rowids the crashed run handed out since the clean image and that
		 * hold no row now (a transaction that did not commit, a row whose
		 * tombstone predates the replay start) may be named by index
		 * entries in PostgreSQL's WAL: holes, so that VACUUM deletes those
		 * entries before it sets a visibility map bit (an index-only scan
		 * would return them as rows).  One range, not a DEAD slot per
		 * rowid: those cost hot memory for every skipped rowid too, and
		 * recovery failed when the tier could not hold them (cold.c
		 * "Holes").
		 */
		ls_holes_add(rt->tbl, rt->open_fill, next);
		/* a fresh virtual block: what the crashed run used is never reused */
		next = (next + LS_ROWS_PER_BLOCK - 1) / LS_ROWS_PER_BLOCK * LS_ROWS_PER_BLOCK;
		ls_hot_table_set_fill(rt->tbl, next, 0);
		ls_hot_table_set_tag(rt->tbl, LS_TAG_HWM, (uint32) (next >> LS_HWM_SHIFT));
		ls_log->recovery_tables++;
	}
}

/*
 * After replay: log what recovery rebuilt (every hot row of the replayed
 * tables as a frozen image or tombstone, and each table's rowid bound) as
 * the first records of the new generation, durably.  The caller then
 * moves the replay start here, so the old records are never read again:
 * the xids of transactions that did not commit before the crash may be
 * handed out again (PostgreSQL's WAL may not have known them), and their
 * records must not be taken for the new transactions' work.
 */
static void
ls_replay_relog(LsReplay *rp)
{
	HASH_SEQ_STATUS seq;
	LsReplayTable *rt;
	StringInfoData buf;
	LsCkptDefer *defer = NULL;
	int			ndefer = 0;
	int			cap = 0;

	initStringInfo(&buf);
	ls_log_self_writer = true;
	hash_seq_init(&seq, rp->tables);
	while ((rt = hash_seq_search(&seq)) != NULL)
	{
		if (rt->tbl == NULL)
			continue;
		/*
		 * As a checkpoint logs a table again (its step 3).  A table without
		 * a tree has an empty file now (ls_replay_finish): opened as an
		 * empty table.  No transaction runs yet, so no row is busy.
		 */
		ls_ckpt_table(rt->tbl, &buf, &defer, &ndefer, &cap);
		if (ndefer > 0)
			elog(ERROR, "row " UINT64_FORMAT " of leanstore relfilenode %u/%u is being written during recovery",
				 defer[0].rowid, rt->key.db, rt->key.rel);
		/* some of the re-log written (rounds ran), the start not moved */
		ls_debug_crash("recovery-relog");
	}
	ls_log_flush_mine();
	ls_log_self_writer = false;
	pfree(buf.data);
	if (defer != NULL)
		pfree(defer);
}

/*
 * Replay in GSN order.  The stream holds each slot's records in GSN order,
 * but the records of different slots interleave as rounds took them: a
 * record can trail others of a higher GSN within its round (src/wal/README.md).
 * A min-heap puts them back in order: it holds the records of the current
 * round and those of earlier rounds not below its smallest GSN (none, under
 * GSN-prefix rounds), at most LS_REORDER_WINDOW bytes; a record that would
 * come out below one already applied (disorder beyond that) stops recovery,
 * never reorders silently.
 */
#define LS_REORDER_WINDOW	(64 * 1024 * 1024)

typedef struct LsHeldRecord
{
	pairingheap_node node;
	ls_wal_rec	rec;			/* followed by the body */
} LsHeldRecord;

typedef struct LsReorder
{
	pairingheap *heap;
	Size		bytes;
	uint64		last_gsn;
} LsReorder;

/* ------------------------------------------------------------------------
 * Recovery of commits through PostgreSQL's WAL
 *
 * Such a commit's row records are durable in PostgreSQL's WAL (an
 * LS_XLOG_ROWS record before its commit record) and, some time later, in
 * leanstore's log.  Recovery reads the WAL from where this run of the log
 * writer started (the file LS_WAL_COPY_FILE; the slot keeps that WAL) and
 * merges those records into the replay by GSN:
 *  - a GSN at or below the replay start's cover GSN is before the replay
 *    start in leanstore's log, which the checkpoint covered: skipped;
 *  - a GSN that the replayed part of leanstore's log holds too is the same
 *    record: taken once;
 *  - any other is a record leanstore's log lost with the crash: replayed
 *    in its place (clog decides its xid, as for every row record).
 *
 * Shadows.  Since a commit through the WAL does not wait for leanstore's
 * log, its row record can reach the stream after a later record of the
 * same row: T1 commits so, T2 deletes the row (a log-only commit, durable
 * at once), and the round that took T2's record had passed T1's slot
 * before T1 appended.  When a checkpoint's start falls between the two
 * (T2's record before it, T1's after it or only in the WAL) and the row
 * was pruned before the checkpoint logged the hot tier again, replaying
 * T1's record would bring the deleted row back.  So the records between
 * the checkpoint's cover position and its start (every record before the
 * cover position has a GSN <= the cover GSN, which nothing replayed has)
 * are read first, and a row record of a row that one of them names with a
 * higher GSN is skipped, from the log or from the WAL alike.
 * ------------------------------------------------------------------------ */

typedef struct LsRowKey
{
	ls_hot_key	key;
	uint32		pad;			/* zeroed: the key is hashed as bytes */
	uint64		rowid;
} LsRowKey;

typedef struct LsRowShadow
{
	LsRowKey	k;				/* hash key */
	uint64		gsn;			/* highest GSN of its records before start */
} LsRowShadow;

typedef struct LsWalCopies
{
	ls_wal_rec **recs;			/* sorted by GSN */
	int			n;
	int			cap;
	int			next;			/* first not merged yet */
	uint64		max_gsn;
	uint64		applied;
	uint64		duplicates;
	HTAB	   *shadows;		/* LsRowShadow; NULL when none */
	uint64		shadowed;
} LsWalCopies;

static LsWalCopies ls_copies;

static void
ls_row_key(LsRowKey *k, const LsLogTarget *t)
{
	memset(k, 0, sizeof(*k));
	k->key.spc = t->key_spc;
	k->key.db = t->db;
	k->key.rel = t->rel;
	k->rowid = t->value;
}

/* A row record of a row that a record before the replay start names later. */
static bool
ls_replay_shadowed(const ls_wal_rec *rec)
{
	LsRowKey	k;
	LsRowShadow *sh;

	if (ls_copies.shadows == NULL ||
		(rec->type != LS_LR_ROW && rec->type != LS_LR_TOMB) ||
		rec->len < LS_WAL_REC_HDR + sizeof(LsLogTarget))
		return false;
	ls_row_key(&k, (const LsLogTarget *) (rec + 1));
	sh = hash_search(ls_copies.shadows, &k, HASH_FIND, NULL);
	return sh != NULL && sh->gsn > rec->gsn;
}

/* What ls_log_read hands each record to (reader: for the record's round). */
typedef void (*LsLogReadFn) (const ls_wal_rec *rec, const ls_wal_reader *reader,
							 void *arg);

static ls_wal_reader *ls_log_read(uint64 start, uint64 end, LsLogReadFn fn, void *arg);

/* ls_log_read's callback for the shadows: each row's highest GSN */
static void
ls_shadow_rec(const ls_wal_rec *rec, const ls_wal_reader *reader, void *arg)
{
	LsRowKey	k;
	LsRowShadow *sh;
	bool		found;

	(void) arg;
	(void) reader;
	if ((rec->type != LS_LR_ROW && rec->type != LS_LR_TOMB) ||
		rec->len < LS_WAL_REC_HDR + sizeof(LsLogTarget))
		return;
	ls_row_key(&k, (const LsLogTarget *) (rec + 1));
	sh = hash_search(ls_copies.shadows, &k, HASH_ENTER, &found);
	if (!found || sh->gsn < rec->gsn)
		sh->gsn = rec->gsn;
}

/* The records between the cover position and the replay start: shadows. */
static void
ls_replay_shadows(uint64 cover, uint64 start)
{
	HASHCTL		hctl;

	if (cover >= start)
		return;
	memset(&hctl, 0, sizeof(hctl));
	hctl.keysize = sizeof(LsRowKey);
	hctl.entrysize = sizeof(LsRowShadow);
	ls_copies.shadows = hash_create("leanstore replay shadows", 1024, &hctl,
									HASH_ELEM | HASH_BLOBS);
	ls_wal_reader_close(ls_log_read(cover, start, ls_shadow_rec, NULL));
}

static int
ls_copy_cmp(const void *a, const void *b)
{
	uint64		x = (*(ls_wal_rec *const *) a)->gsn;
	uint64		y = (*(ls_wal_rec *const *) b)->gsn;

	return x < y ? -1 : (x > y ? 1 : 0);
}

/* Where this run's WAL records begin (LS_WAL_COPY_FILE); false: no file. */
static bool
ls_wal_copy_start_read(XLogRecPtr *from)
{
	FILE	   *f = ls_state_file_open(LS_WAL_COPY_FILE);
	unsigned long long v = 0;

	if (f == NULL)
		return false;
	if (fscanf(f, "%llu", &v) != 1 || v == 0)
		ereport(FATAL,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("file \"%s\" does not hold a WAL position", LS_WAL_COPY_FILE)));
	FreeFile(f);
	*from = (XLogRecPtr) v;
	return true;
}

/* One LS_XLOG_ROWS record: its row records above the cover GSN, kept. */
static void
ls_wal_copies_take(const char *data, uint32 len, uint64 cover_gsn, XLogRecPtr lsn)
{
	uint32		off = 0;

	while (off < len)
	{
		ls_wal_rec	hdr;
		ls_wal_rec *copy;

		if (len - off < LS_WAL_REC_HDR)
			break;
		memcpy(&hdr, data + off, LS_WAL_REC_HDR);
		if (hdr.len < LS_WAL_REC_HDR + sizeof(LsLogTarget) || hdr.len > len - off ||
			(hdr.type != LS_LR_ROW && hdr.type != LS_LR_TOMB) || hdr.gsn == 0)
			break;
		if (hdr.gsn > cover_gsn)
		{
			copy = MemoryContextAlloc(TopTransactionContext, MAXALIGN(hdr.len));
			memcpy(copy, data + off, hdr.len);
			if (ls_copies.n == ls_copies.cap)
				ls_copies.recs = ls_array_grow(ls_copies.recs, &ls_copies.cap, 256,
											   sizeof(ls_wal_rec *), TopTransactionContext);
			ls_copies.recs[ls_copies.n++] = copy;
			ls_copies.max_gsn = Max(ls_copies.max_gsn, hdr.gsn);
		}
		off += hdr.len;
	}
	if (off != len)
		ereport(FATAL,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("WAL record at %X/%X holds malformed leanstore row records",
						LSN_FORMAT_ARGS(lsn))));
}

/*
 * Read PostgreSQL's WAL from this run's start for LS_XLOG_ROWS records.
 * false: that WAL is gone (its first segment is missing), so rows that
 * committed through it may be lost.
 */
static bool
ls_wal_copies_read(uint64 cover_gsn)
{
	XLogRecPtr	from;
	XLogRecPtr	first;
	XLogSegNo	segno;
	char		fname[MAXFNAMELEN];
	char		path[MAXPGPATH];
	struct stat sb;
	ReadLocalXLogPageNoWaitPrivate *priv;
	XLogReaderState *xr;

	if (!ls_wal_copy_start_read(&from))
		return true;			/* no slot in the last run: no such records */
	XLByteToSeg(from, segno, wal_segment_size);
	XLogFileName(fname, GetWALInsertionTimeLine(), segno, wal_segment_size);
	snprintf(path, sizeof(path), XLOGDIR "/%s", fname);
	if (stat(path, &sb) != 0)
	{
		ereport(WARNING,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("WAL from %X/%X (file \"%s\") that leanstore's recovery needs is missing",
						LSN_FORMAT_ARGS(from), path),
				 errdetail("Leanstore keeps it with the replication slot \"%s\", which may have been dropped.",
						   LS_WAL_COPY_SLOT)));
		return false;
	}

	priv = palloc0(sizeof(ReadLocalXLogPageNoWaitPrivate));
	xr = XLogReaderAllocate(wal_segment_size, NULL,
							XL_ROUTINE(.page_read = read_local_xlog_page_no_wait,
									   .segment_open = wal_segment_open,
									   .segment_close = wal_segment_close),
							priv);
	if (xr == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory while reading PostgreSQL's WAL")));
	first = XLogFindNextRecord(xr, from);
	if (!XLogRecPtrIsInvalid(first))
	{
		XLogBeginRead(xr, first);
		for (;;)
		{
			char	   *err = NULL;
			XLogRecord *r = XLogReadRecord(xr, &err);

			if (r == NULL)
			{
				if (priv->end_of_wal)
					break;
				ereport(FATAL,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("could not read PostgreSQL's WAL at %X/%X for leanstore's recovery: %s",
								LSN_FORMAT_ARGS(xr->EndRecPtr), err ? err : "unknown error")));
			}
			if (XLogRecGetRmid(xr) == LS_RMGR_ID &&
				(XLogRecGetInfo(xr) & ~XLR_INFO_MASK) == LS_XLOG_ROWS)
				ls_wal_copies_take(XLogRecGetData(xr), XLogRecGetDataLen(xr),
								   cover_gsn, xr->ReadRecPtr);
		}
	}
	else if (!priv->end_of_wal)
		ereport(FATAL,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("could not find a record in PostgreSQL's WAL from %X/%X for leanstore's recovery",
						LSN_FORMAT_ARGS(from))));
	XLogReaderFree(xr);
	pfree(priv);
	if (ls_copies.n > 1)
		qsort(ls_copies.recs, ls_copies.n, sizeof(ls_wal_rec *), ls_copy_cmp);
	return true;
}

/* Replay rec unless a record before the replay start shadows it. */
static bool
ls_replay_apply(LsReplay *rp, const ls_wal_rec *rec)
{
	if (ls_replay_shadowed(rec))
	{
		ls_copies.shadowed++;
		return false;
	}
	ls_replay_record(rp, rec);
	return true;
}

/*
 * Merge the WAL's records below gsn into the replay (one equal to gsn is
 * the record the log holds too, about to be replayed).
 */
static void
ls_wal_copies_upto(LsReorder *ro, LsReplay *rp, uint64 gsn)
{
	while (ls_copies.next < ls_copies.n && ls_copies.recs[ls_copies.next]->gsn <= gsn)
	{
		ls_wal_rec *rec = ls_copies.recs[ls_copies.next++];

		if (rec->gsn == gsn)
		{
			ls_copies.duplicates++;
			continue;
		}
		if (rec->gsn <= ro->last_gsn)
			ereport(FATAL,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("WAL holds a leanstore record (GSN " UINT64_FORMAT ") below records already replayed (GSN " UINT64_FORMAT ")",
							rec->gsn, ro->last_gsn)));
		ro->last_gsn = rec->gsn;
		if (ls_replay_apply(rp, rec))
			ls_copies.applied++;
	}
}

static int
ls_held_cmp(const pairingheap_node *a, const pairingheap_node *b, void *arg)
{
	const LsHeldRecord *x = pairingheap_const_container(LsHeldRecord, node, a);
	const LsHeldRecord *y = pairingheap_const_container(LsHeldRecord, node, b);

	/* the heap keeps its greatest node first: the smallest GSN is greatest */
	if (x->rec.gsn != y->rec.gsn)
		return x->rec.gsn < y->rec.gsn ? 1 : -1;
	return 0;
}

static void
ls_reorder_pop(LsReorder *ro, LsReplay *rp)
{
	LsHeldRecord *h = pairingheap_container(LsHeldRecord, node,
											pairingheap_remove_first(ro->heap));

	ls_wal_copies_upto(ro, rp, h->rec.gsn);
	if (h->rec.gsn <= ro->last_gsn)
		ereport(FATAL,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("leanstore's log holds a record (GSN " UINT64_FORMAT ") after records up to GSN " UINT64_FORMAT " beyond the reorder window",
						h->rec.gsn, ro->last_gsn)));
	ro->last_gsn = h->rec.gsn;
	ro->bytes -= h->rec.len;
	(void) ls_replay_apply(rp, &h->rec);
	pfree(h);
}

/*
 * Hold rec, a record of a round whose smallest GSN is round_min.  Every
 * held record below round_min goes first: under GSN-prefix rounds no record
 * still to come is below it, so only about a round is ever held (the
 * window held the last 64MB of records, about 130MB of process memory
 * with its overhead: a recovery inside a 128MB memory cgroup was killed
 * for it, again at every restart).  The window stays the limit when a
 * round is larger, or where the prefix does not hold (a test's held slot).
 */
static void
ls_reorder_push(LsReorder *ro, LsReplay *rp, const ls_wal_rec *rec, uint64 round_min)
{
	LsHeldRecord *h;

	while (!pairingheap_is_empty(ro->heap) &&
		   pairingheap_container(LsHeldRecord, node,
								 pairingheap_first(ro->heap))->rec.gsn < round_min)
		ls_reorder_pop(ro, rp);
	h = palloc(offsetof(LsHeldRecord, rec) + rec->len);

	memcpy(&h->rec, rec, rec->len);
	pairingheap_add(ro->heap, &h->node);
	ro->bytes += rec->len;
	while (ro->bytes > LS_REORDER_WINDOW)
		ls_reorder_pop(ro, rp);
}

static void
ls_segment_path(char *buf, size_t len, uint64 pos)
{
	snprintf(buf, len, "%s/%016llX", ls_log_directory,
			 (unsigned long long) (pos / LS_LOG_SEGMENT));
}

/*
 * Read leanstore's log from start to its end, or to the first record at or
 * after end, handing every record to fn (NULL: only find the end).
 * Returns the reader, at the end (for its position and highest GSN); the
 * caller closes it.
 */
static ls_wal_reader *
ls_log_read(uint64 start, uint64 end, LsLogReadFn fn, void *arg)
{
	ls_wal_reader *reader;
	ls_status	st;

	st = ls_wal_reader_open(ls_log_directory, LS_LOG_SEGMENT, start, &reader);
	if (st != LS_OK)
		ereport(FATAL,
				(errcode_for_file_access(),
				 errmsg("could not read leanstore's log in \"%s\": %s",
						ls_log_directory, ls_status_str(st))));
	for (;;)
	{
		const ls_wal_rec *rec;
		uint64		pos;

		st = ls_wal_reader_next(reader, &rec, &pos);
		if (st == LS_NOT_FOUND || (st == LS_OK && pos >= end))
			break;
		if (st != LS_OK)
			ereport(FATAL,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("could not read leanstore's log at position " UINT64_FORMAT ": %s",
							pos, ls_status_str(st))));
		if (fn != NULL)
			fn(rec, reader, arg);
	}
	return reader;
}

/* ls_log_read's callback for the first pass: commit and abort records. */
static void
ls_replay_outcome_rec(const ls_wal_rec *rec, const ls_wal_reader *reader, void *arg)
{
	(void) reader;
	(void) arg;
	if (rec->type == LS_LR_COMMIT || rec->type == LS_LR_ABORT)
		ls_replay_note_outcome(rec);
}

/*
 * First pass over the log: the outcomes of log-only commits, which the
 * replay needs before it meets their rows (a commit record follows them).
 */
static void
ls_replay_outcomes(uint64 start)
{
	HASHCTL		hctl;

	memset(&hctl, 0, sizeof(hctl));
	hctl.keysize = sizeof(uint32);
	hctl.entrysize = sizeof(LsReplayXids);
	ls_replay_xids = hash_create("leanstore replay outcomes", 64, &hctl,
								 HASH_ELEM | HASH_BLOBS);
	ls_wal_reader_close(ls_log_read(start, PG_UINT64_MAX, ls_replay_outcome_rec, NULL));
}

/* ls_log_read's callback for the replay: every record into the reorder heap. */
typedef struct LsReplayPass
{
	LsReorder  *ro;
	LsReplay   *rp;
} LsReplayPass;

static void
ls_replay_pass_rec(const ls_wal_rec *rec, const ls_wal_reader *reader, void *arg)
{
	LsReplayPass *pass = arg;

	ls_reorder_push(pass->ro, pass->rp, rec, ls_wal_reader_round_min_gsn(reader));
}

/* Replay the log (after a crash) and start the writer at its end. */
static void
ls_log_recover(void)
{
	bool		clean;
	uint64		start;
	uint64		end;
	uint64		cover;
	uint64		cover_gsn;
	ls_wal_reader *reader;
	ls_status	st;
	LsReplay	rp;
	LsReorder	ro;
	LsReplayPass pass;
	HASHCTL		hctl;
	instr_time	t0,
				t1;
	char		path[MAXPGPATH];
	struct stat sb;

	INSTR_TIME_SET_CURRENT(t0);
	/*
	 * Undo journals of storages whose files are gone: a crash came between
	 * a drop's commit and the removal of its journals (PostgreSQL's redo
	 * unlinked the files; so no replayed record opens them either).
	 */
	ls_cold_sweep_journals(InvalidOid);
	ls_cold_start_state(&clean, &start);
	ls_cold_log_cover(&cover, &cover_gsn);
	ls_segment_path(path, sizeof(path), start);
	if (ls_cold_from_backup())
	{
		/*
		 * pg_basebackup copied leanstore's files while they changed, and
		 * their rows are not in PostgreSQL's WAL: nothing of them can be
		 * trusted.  A new epoch makes every table lost, with an error.
		 */
		ereport(WARNING,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("this cluster was restored from a base backup: its leanstore tables are lost"),
				 errdetail("leanstore's files cannot be copied consistently by a base backup, and their rows are not in PostgreSQL's WAL."),
				 errhint("Copy leanstore tables with pg_dump; TRUNCATE or DROP them here.")));
		ls_cold_log_lost(start);
		clean = true;
	}
	else if (!clean && stat(path, &sb) != 0 && start > 0)
	{
		ereport(WARNING,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("leanstore's log is missing (segment \"%s\"): leanstore tables written since the last clean shutdown are lost", path),
				 errhint("Tables that lost data report it when they are used; TRUNCATE or DROP them.")));
		ls_cold_log_lost(start);
		clean = true;
	}
	memset(&ls_copies, 0, sizeof(ls_copies));
	if (!clean && !ls_wal_copies_read(cover_gsn))
	{
		ereport(WARNING,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("leanstore tables written since the last clean shutdown are lost"),
				 errhint("Tables that lost data report it when they are used; TRUNCATE or DROP them.")));
		ls_cold_log_lost(start);
		clean = true;
	}
	if (!clean)
		ls_replay_shadows(cover, start);

	memset(&rp, 0, sizeof(rp));
	memset(&hctl, 0, sizeof(hctl));
	hctl.keysize = sizeof(ls_hot_key);
	hctl.entrysize = sizeof(LsReplayTable);
	rp.tables = hash_create("leanstore replay", 256, &hctl, HASH_ELEM | HASH_BLOBS);

	ls_replay_xid_bound = ls_xid_bound_read();
	if (!clean)
		ls_replay_outcomes(start);
	ro.heap = pairingheap_allocate(ls_held_cmp, NULL);
	ro.bytes = 0;
	ro.last_gsn = 0;
	pass.ro = &ro;
	pass.rp = &rp;
	/* a clean shutdown wrote every table: its log has nothing to replay */
	reader = ls_log_read(start, PG_UINT64_MAX, clean ? NULL : ls_replay_pass_rec, &pass);
	while (!pairingheap_is_empty(ro.heap))
		ls_reorder_pop(&ro, &rp);
	ls_wal_copies_upto(&ro, &rp, PG_UINT64_MAX);
	end = ls_wal_reader_end(reader);
	ls_wal_advance_gsn(ls_log->wal, Max(ls_wal_reader_max_gsn(reader), ls_copies.max_gsn));
	ls_wal_reader_close(reader);
	if (!clean)
	{
		ls_debug_crash("recovery-fail");
		ls_replay_finish(&rp);
	}

	/* [cover, start) stays until the new start is durable (shadows) */
	st = ls_wal_start(ls_log->wal, end, Min(cover, start));
	if (st != LS_OK)
		ereport(FATAL,
				(errcode_for_file_access(),
				 errmsg("could not start leanstore's log in \"%s\": %m", ls_log_directory)));
	if (!clean)
	{
		ls_debug_crash("recovery-replay");
		/* the trees replay changed become clean images ... */
		if (!ls_cold_clean_point(false))
			ereport(FATAL,
					(errcode(ERRCODE_IO_ERROR),
					 errmsg("could not write the trees leanstore's recovery changed")));
		/* ... and the hot rows are logged again, after which the old log goes */
		ls_log_prepare();
		ls_replay_relog(&rp);
		ls_debug_crash("recovery-end");
	}
	hash_destroy(rp.tables);
	if (ls_replay_xids != NULL)
	{
		hash_destroy(ls_replay_xids);
		ls_replay_xids = NULL;
	}
	/*
	 * nothing before the end is needed any more (after a clean start, or
	 * the re-log): every record so far, also those from PostgreSQL's WAL,
	 * has a GSN <= the counter and is covered
	 */
	ls_cold_set_log_start(end, end, ls_wal_current_gsn(ls_log->wal));
	ls_xid_bound_forget();
	ls_replay_xid_bound = InvalidTransactionId;
	ls_wal_set_keep_from(ls_log->wal, end);

	INSTR_TIME_SET_CURRENT(t1);
	INSTR_TIME_SUBTRACT(t1, t0);
	ls_log->recovery_us = INSTR_TIME_GET_MICROSEC(t1);
	ls_log->last_checkpoint = GetCurrentTimestamp();
	ls_log->ckpt_end = ls_wal_end(ls_log->wal);
	ls_log->recovery_records = rp.records;
	ls_log->recovery_rows = rp.rows;
	ls_log->recovery_wal_records = ls_copies.applied;
	if (ls_copies.shadows != NULL)
		hash_destroy(ls_copies.shadows);
	if (!clean)
		ereport(LOG,
				(errmsg("leanstore recovery replayed " UINT64_FORMAT " records (" UINT64_FORMAT " rows, " UINT64_FORMAT " skipped, " UINT64_FORMAT " rows stored cold and " UINT64_FORMAT " DEAD rowids made holes for lack of hot memory, " UINT64_FORMAT " of xids clog no longer knows) of " UINT64_FORMAT " tables in %.3f s",
						rp.records, rp.rows, rp.skipped, rp.spilled, ls_dead_as_holes,
						ls_replay_pre_clog, ls_log->recovery_tables,
						(double) ls_log->recovery_us / 1e6),
				 errdetail("From PostgreSQL's WAL: " UINT64_FORMAT " records replayed, " UINT64_FORMAT " also in leanstore's log; " UINT64_FORMAT " records older than a later one of their row skipped.",
						   ls_copies.applied, ls_copies.duplicates, ls_copies.shadowed)));
	memset(&ls_copies, 0, sizeof(ls_copies));
}

/* ------------------------------------------------------------------------
 * The log writer
 * ------------------------------------------------------------------------ */

PGDLLEXPORT void ls_log_writer_main(Datum arg);

/* What a failed preparation means: a full disk warns, anything else is a bug. */
static void
ls_log_prepare_failed(ls_status st)
{
	if (st == LS_IO_ERROR)
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("could not prepare leanstore's next log segment in \"%s\": %m",
						ls_log_directory),
				 errdetail("Commits of leanstore tables wait until the disk has room.")));
	else
		ereport(PANIC,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg_internal("could not prepare leanstore's log: %s", ls_status_str(st))));
}

static void
ls_log_prepare(void)
{
	ls_status	st = ls_wal_prepare(ls_log->wal, LS_LOG_AHEAD);

	if (st != LS_OK)
		ls_log_prepare_failed(st);
}

/*
 * The end of a round, the writer's or a committer's: a failed write or sync
 * is a PANIC (never retried); a round that wrote goes into leanstore_stats().
 */
static void
ls_log_round_done(ls_status st, const ls_wal_round_stats *stats, instr_time t0)
{
	instr_time	t1;

	if (st != LS_OK)
		ereport(PANIC,
				(errcode_for_file_access(),
				 errmsg("could not write leanstore's log in \"%s\": %m", ls_log_directory)));
	if (stats->records == 0)
		return;
	INSTR_TIME_SET_CURRENT(t1);
	INSTR_TIME_SUBTRACT(t1, t0);
	pg_atomic_fetch_add_u64(&ls_log->rounds, 1);
	pg_atomic_fetch_add_u64(&ls_log->round_records, stats->records);
	pg_atomic_fetch_add_u64(&ls_log->round_us, INSTR_TIME_GET_MICROSEC(t1));
}

/*
 * A committer runs the round its records need itself while the log writer
 * sleeps and no round runs (leanstore.log_committer_rounds), as a
 * PostgreSQL backend flushes WAL itself: no hand-off to the writer and back
 * (about 40 us of a one-row insert's commit at one client).  The next
 * segment not prepared yet: the writer's job (the caller waits for it).
 */
static void
ls_log_lead_round(void)
{
	static bool dir_set = false;
	ls_wal_round_stats stats;
	instr_time	t0;
	ls_status	st;
	bool		ran;

	if (!dir_set)
	{
		if (ls_wal_set_dir(ls_log->wal, ls_log_directory) != LS_OK)
			return;				/* the writer reports what is wrong */
		dir_set = true;
	}
	INSTR_TIME_SET_CURRENT(t0);
	st = ls_wal_try_round(ls_log->wal, &stats, &ran);
	if (st == LS_NO_SPACE || !ran)
		return;
	ls_log_round_done(st, &stats, t0);
}

/*
 * One round of the log writer; lazy: write without syncing unless somebody
 * waits for durability (the writer's loop; bulk loads fill rings faster than
 * synced rounds drain them).
 */
static void
ls_log_round(bool lazy)
{
	ls_wal_round_stats stats;
	instr_time	t0;
	ls_status	st;

	INSTR_TIME_SET_CURRENT(t0);
	st = lazy ? ls_wal_round_lazy(ls_log->wal, &stats) : ls_wal_round(ls_log->wal, &stats);
	if (st == LS_NO_SPACE)
	{
		/* the next segment is missing: a full disk must not hang commits */
		if (ls_wal_prepare(ls_log->wal, 1) != LS_OK)
			ereport(PANIC,
					(errcode_for_file_access(),
					 errmsg("could not create leanstore's next log segment in \"%s\": %m",
							ls_log_directory)));
		return;
	}
	ls_log_round_done(st, &stats, t0);
}

/* ------------------------------------------------------------------------
 * The slot that keeps PostgreSQL's WAL for commits through it
 *
 * A record in an LS_XLOG_ROWS record is needed until leanstore's log has
 * it durably.  The log writer owns a persistent physical replication slot
 * and moves its restart_lsn behind such records only:
 *  - It reads the WAL insert position L, then the GSN counter G: every
 *    LS_XLOG_ROWS record that starts below L was inserted after its row
 *    records were appended to leanstore's log, so their GSNs are <= G.
 *  - Once durable_gsn >= G, nothing below L is needed: L is written to
 *    LS_WAL_COPY_FILE (durably; recovery starts reading there), and only
 *    then becomes the slot's restart_lsn.  So the slot never lets go of WAL
 *    that recovery would read, also with the slot's own file (saved only by
 *    PostgreSQL's checkpoints) older than that.
 *  - It moves a WAL segment at a time at most (one small file write per
 *    16MB of WAL), so recovery reads up to two segments of WAL or so.
 *    Nobody waits for these records in leanstore's log, so the writer's
 *    rounds write them without a sync; when the slot could move, the
 *    writer asks for a synced round (ls_wal_kick).
 * Without the slot (max_replication_slots = 0, wal_level = minimal, no
 * free slot, a max_slot_wal_keep_size that could invalidate it) nothing
 * commits through the WAL, and the file is removed so that recovery does
 * not look for WAL that nobody kept.
 * ------------------------------------------------------------------------ */

static XLogRecPtr ls_wal_copy_from = InvalidXLogRecPtr;	/* the file's value */
static XLogRecPtr ls_wal_copy_cand = InvalidXLogRecPtr;
static uint64 ls_wal_copy_cand_gsn = 0;

/* max_slot_wal_keep_size could invalidate the slot behind a busy writer */
static bool
ls_wal_copy_keep_ok(void)
{
	return max_slot_wal_keep_size_mb < 0 ||
		(uint64) max_slot_wal_keep_size_mb * 1024 * 1024 >= 8 * (uint64) wal_segment_size;
}

static void
ls_wal_copy_set(XLogRecPtr lsn)
{
	char		buf[32];
	int			len;

	Assert(MyReplicationSlot != NULL && lsn >= ls_wal_copy_from);
	len = snprintf(buf, sizeof(buf), UINT64_FORMAT "\n", (uint64) lsn);
	ls_write_file_durably(LS_WAL_COPY_FILE, buf, len, FATAL);
	SpinLockAcquire(&MyReplicationSlot->mutex);
	MyReplicationSlot->data.restart_lsn = lsn;
	MyReplicationSlot->data.invalidated_at = InvalidXLogRecPtr;
	SpinLockRelease(&MyReplicationSlot->mutex);
	ReplicationSlotMarkDirty();
	ReplicationSlotsComputeRequiredLSN();
	ls_wal_copy_from = lsn;
}

/*
 * Nothing commits through the WAL in this run: recovery reads none, and
 * the slot of an earlier run (recovery took what it kept) goes, so that
 * it does not keep WAL for ever.
 */
static void
ls_wal_copy_off(const char *why)
{
	struct stat sb;
	ReplicationSlot *slot;

	if (stat(LS_WAL_COPY_FILE, &sb) == 0)
		(void) durable_unlink(LS_WAL_COPY_FILE, FATAL);
	if (max_replication_slots > 0 &&
		(slot = SearchNamedReplicationSlot(LS_WAL_COPY_SLOT, true)) != NULL &&
		!SlotIsLogical(slot))
		ReplicationSlotDrop(LS_WAL_COPY_SLOT, true);
	if (why != NULL)
		ereport(LOG,
				(errmsg("leanstore commits wait for leanstore's log also when they write PostgreSQL's WAL: %s", why)));
}

/* A free slot exists (ReplicationSlotCreate would fail holding locks). */
static bool
ls_free_slot_exists(void)
{
	bool		found = false;

	LWLockAcquire(ReplicationSlotControlLock, LW_SHARED);
	for (int i = 0; i < max_replication_slots && !found; i++)
		found = !ReplicationSlotCtl->replication_slots[i].in_use;
	LWLockRelease(ReplicationSlotControlLock);
	return found;
}

/*
 * After recovery, before the tables are usable, or when a reload turns
 * leanstore.commit_via_wal on in a run that had no such commit yet: take
 * the slot and start this run's WAL records at the current insert
 * position (there is none before it that recovery would need).
 */
static void
ls_wal_copy_setup(void)
{
	ReplicationSlot *slot;

	Assert(pg_atomic_read_u32(&ls_log->via_wal) == LS_VIA_WAL_NEVER);
	if (!ls_commit_via_wal)
	{
		ls_wal_copy_off(NULL);
		return;
	}

	if (max_replication_slots == 0)
	{
		ls_wal_copy_off("max_replication_slots is 0");
		return;
	}
	if (wal_level < WAL_LEVEL_REPLICA)
	{
		ls_wal_copy_off("wal_level is minimal");
		return;
	}
	if (!ls_wal_copy_keep_ok())
	{
		ls_wal_copy_off("max_slot_wal_keep_size is below 8 WAL segments");
		return;
	}
	slot = SearchNamedReplicationSlot(LS_WAL_COPY_SLOT, true);
	if (slot != NULL && SlotIsLogical(slot))
	{
		ls_wal_copy_off("a logical replication slot is named \"" LS_WAL_COPY_SLOT "\"");
		return;
	}
	if (slot == NULL && !ls_free_slot_exists())
	{
		ls_wal_copy_off("no replication slot is free (max_replication_slots)");
		return;
	}
	if (slot == NULL)
		ReplicationSlotCreate(LS_WAL_COPY_SLOT, false, RS_PERSISTENT, false);
	else
		ReplicationSlotAcquire(LS_WAL_COPY_SLOT, true);
	ls_wal_copy_from = InvalidXLogRecPtr;
	ls_wal_copy_set(GetXLogInsertRecPtr());
	/* the slot's own file too: after a crash it keeps this run's WAL */
	ReplicationSlotSave();
	pg_atomic_write_u32(&ls_log->via_wal, LS_VIA_WAL_ON);
}

/*
 * A log writer started again within the run (its predecessor exited):
 * the slot stays where it is, recovery would read from the file's value.
 */
static void
ls_wal_copy_resume(void)
{
	XLogRecPtr	from;

	if (!ls_wal_copy_start_read(&from) ||
		SearchNamedReplicationSlot(LS_WAL_COPY_SLOT, true) == NULL)
	{
		pg_atomic_write_u32(&ls_log->via_wal, LS_VIA_WAL_PAUSED);
		ereport(LOG,
				(errmsg("leanstore commits wait for leanstore's log again: the replication slot \"%s\" is gone",
						LS_WAL_COPY_SLOT)));
		return;
	}
	ReplicationSlotAcquire(LS_WAL_COPY_SLOT, true);
	ls_wal_copy_from = from;
}

/* A reload: leanstore.commit_via_wal may have changed. */
static void
ls_wal_copy_reload(void)
{
	uint32		state = pg_atomic_read_u32(&ls_log->via_wal);

	if (!ls_commit_via_wal && state == LS_VIA_WAL_ON)
		pg_atomic_write_u32(&ls_log->via_wal, LS_VIA_WAL_PAUSED);
	else if (ls_commit_via_wal && state == LS_VIA_WAL_PAUSED &&
			 MyReplicationSlot != NULL && ls_wal_copy_keep_ok())
		pg_atomic_write_u32(&ls_log->via_wal, LS_VIA_WAL_ON);
	else if (ls_commit_via_wal && state == LS_VIA_WAL_NEVER)
		ls_wal_copy_setup();
}

/* The writer, between rounds: move the slot behind what the log has. */
static void
ls_wal_copy_advance(void)
{
	if (MyReplicationSlot == NULL)
		return;
	if (pg_atomic_read_u32(&ls_log->via_wal) == LS_VIA_WAL_ON && !ls_wal_copy_keep_ok())
	{
		/* a reload lowered max_slot_wal_keep_size: no new such commits */
		pg_atomic_write_u32(&ls_log->via_wal, LS_VIA_WAL_PAUSED);
		ereport(LOG,
				(errmsg("leanstore commits wait for leanstore's log again: max_slot_wal_keep_size is below 8 WAL segments")));
	}
	/* a candidate not a segment ahead is not worth waiting for: a newer one */
	if (!XLogRecPtrIsInvalid(ls_wal_copy_cand) &&
		ls_wal_copy_cand >= ls_wal_copy_from + wal_segment_size)
	{
		if (ls_wal_durable_gsn(ls_log->wal) < ls_wal_copy_cand_gsn)
		{
			/*
			 * The writer's rounds only write the records of such commits
			 * (nobody waits for them): ask for a synced round, about once
			 * per WAL segment.
			 */
			ls_wal_kick(ls_log->wal);
			return;
		}
		ls_wal_copy_set(ls_wal_copy_cand);
	}
	ls_wal_copy_cand = GetXLogInsertRecPtr();
	pg_memory_barrier();
	ls_wal_copy_cand_gsn = ls_wal_current_gsn(ls_log->wal);
}


/*
 * Asynchronous log-only commits wait for nobody: the writer syncs their
 * records within wal_writer_delay, as PostgreSQL's WAL writer flushes
 * asynchronous commit records (its rounds are lazy otherwise: written, not
 * synced, until a committer waits).
 */
static bool
ls_log_async_pending(void)
{
	return ls_wal_durable_gsn(ls_log->wal) < pg_atomic_read_u64(&ls_log->async_gsn);
}

static int
ls_log_writer_timeout(void)
{
	return ls_log_async_pending() ? Min(LS_LOG_WAIT_MS, WalWriterDelay) : LS_LOG_WAIT_MS;
}

static void
ls_log_async_flush(TimestampTz *synced_at)
{
	TimestampTz now;

	if (!ls_log_async_pending())
		return;
	now = GetCurrentTimestamp();
	if (!TimestampDifferenceExceeds(*synced_at, now, WalWriterDelay))
		return;
	ls_log_round(false);
	*synced_at = now;
}

/*
 * Between rounds the writer makes the next segments a piece at a time
 * (ls_wal_prepare_step), so a bulk load's ring keeps being drained while a
 * new segment is written with zeros.  Returns whether to come back at once.
 * After a failure (a full disk) it warns and tries again a second later.
 */
static bool
ls_log_prepare_step(TimestampTz *failed_at)
{
	bool		more;
	ls_status	st;

	if (*failed_at != 0 &&
		!TimestampDifferenceExceeds(*failed_at, GetCurrentTimestamp(), 1000))
		return false;
	st = ls_wal_prepare_step(ls_log->wal, LS_LOG_AHEAD, &more);
	if (st == LS_OK)
	{
		*failed_at = 0;
		return more;
	}
	*failed_at = GetCurrentTimestamp();
	ls_log_prepare_failed(st);
	return false;
}

void
ls_log_writer_main(Datum arg)
{
	TimestampTz prepare_failed = 0;
	TimestampTz async_synced_at = 0;
	bool		preparing = false;

	(void) arg;
	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);

	ls_make_directory(ls_log_directory);
	if (ls_wal_set_dir(ls_log->wal, ls_log_directory) != LS_OK)
		ereport(FATAL,
				(errcode_for_file_access(),
				 errmsg("could not use directory \"%s\" for leanstore's log: %m",
						ls_log_directory)));

	if (!ls_wal_started(ls_log->wal))
	{
		if (ls_debug_recovery_delay_ms > 0)
			ls_debug_pause("leanstore.debug_recovery_delay", ls_debug_recovery_delay_ms);
		ls_log_recovering_here = true;
		/* a FATAL passes no PG_CATCH: the exit callback says it failed */
		before_shmem_exit(ls_log_recovery_exit, (Datum) 0);
		PG_TRY();
		{
			StartTransactionCommand();
			ls_log_recover();
			CommitTransactionCommand();
		}
		PG_CATCH();
		{
			pg_atomic_write_u32(&ls_log->state, LS_LOG_FAILED);
			ConditionVariableBroadcast(&ls_log->cv);
			PG_RE_THROW();
		}
		PG_END_TRY();
		ls_log_recovering_here = false;
		/* out of the hot tier: a clean shutdown waits for its users only */
		ls_ctx_release();
		ls_wal_copy_setup();
		ls_log_prepare();
		pg_atomic_write_u32(&ls_log->state, LS_LOG_READY);
		ConditionVariableBroadcast(&ls_log->cv);
	}
	else if (pg_atomic_read_u32(&ls_log->via_wal) != LS_VIA_WAL_NEVER)
		ls_wal_copy_resume();

	/* recyclable segments past max_log_size go (PostgreSQL: max_wal_size) */
	ls_wal_set_spare_bytes(ls_log->wal, (uint64) ls_max_log_size_mb * 1024 * 1024);
	for (;;)
	{
		if (ShutdownRequestPending &&
			ls_hot_attached_count(ls_shared_hot()) <= 1 &&
			pg_atomic_read_u32(&ls_log->worker_appends) == 0)
			break;				/* nobody but the worker, which no longer logs */
		if (ls_wal_writer_sleep(ls_log->wal, preparing ? 0 : ls_log_writer_timeout()))
		{
			if (unlikely(ls_debug_round_delay_ms > 0))
				pg_usleep(ls_debug_round_delay_ms * 1000L);
			ls_log_round(true);
		}
		ls_log_async_flush(&async_synced_at);
		preparing = ls_log_prepare_step(&prepare_failed);
		ls_wal_copy_advance();
		if (!PostmasterIsAlive())
			proc_exit(1);
		/* absorbs proc signal barriers: DROP DATABASE waits for them */
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			ls_wal_set_spare_bytes(ls_log->wal, (uint64) ls_max_log_size_mb * 1024 * 1024);
			ls_wal_copy_reload();
			if (ls_debug_log_fault != 0)
				ls_wal_inject_fault(ls_log->wal, ls_debug_log_fault, EIO);
		}
	}
	ls_log_round(false);
	proc_exit(0);
}
