/*
 * leanstore/wal.h - leanstore's own log: per-process log buffers in shared
 * memory, merged by one group-commit writer into preallocated segment files.
 *
 * Roles (any number of processes share one region; see common.h):
 *  - Appenders (backends, workers) own one slot each (a small stable integer,
 *    like the hot tier's context slot).  ls_wal_append copies a record into
 *    the slot's ring buffer and returns the record's end position in that
 *    slot's stream; ls_wal_wait waits until the writer made it durable.
 *  - The writer (exactly one process at a time: the glue's log worker) runs
 *    rounds with ls_wal_round: it takes every complete record from every
 *    slot, appends them to the log stream, writes the stream's new blocks
 *    with io_uring, syncs once, then publishes the round and wakes waiters.
 *    A committer may run a round itself when none runs (ls_wal_try_round);
 *    rounds never overlap.
 *  - Recovery reads the log with an ls_wal_reader before any appender runs,
 *    then ls_wal_start tells the writer where the stream continues.
 *
 * Log stream and files:
 *  - The stream is a sequence of records addressed by a 64-bit byte position
 *    (the "log position", LSN-like, monotonic forever).  On disk it is cut
 *    into blocks of LS_WAL_BLOCK bytes: a block header (CRC32C of the whole
 *    block with the crc field zeroed, the block's own stream position, the
 *    writer generation that wrote it, the bytes of record data it holds,
 *    flags for the first and the last block of a round, the offset of the
 *    first record that starts in it) and up to LS_WAL_BLOCK_DATA bytes of
 *    record data.  Records may span blocks, never rounds.
 *  - Generations: every ls_wal_start takes a new writer generation (a
 *    number kept in <dir>/generation, raised and synced before the first
 *    write).  Generations never decrease along the valid stream, so blocks
 *    left beyond the recovered end by an earlier crashed generation (valid
 *    CRC, right position) are recognised as stale and end the stream.
 *  - Each round ends with a partially filled block; the next round starts a
 *    new block (a block once written is never rewritten, so a torn write can
 *    only hit the blocks of the round in flight, never durable data).  The
 *    unused tail of the last block is wasted (at most one block per round).
 *  - Blocks live in segment files <dir>/<segno as 16 upper-case hex digits>
 *    of segment_size bytes (a multiple of LS_WAL_BLOCK); block position p is
 *    in segment p / segment_size at offset p % segment_size.
 *  - Segments are preallocated (written full of zeros and synced, directory
 *    synced) by ls_wal_prepare, ahead of use, so a commit never needs new
 *    disk space.  Segments no longer needed are recycled by renaming them to
 *    a future segment number; their stale blocks carry old positions.
 *  - A reader stops at the first block whose CRC fails, whose position is not
 *    the expected one, whose generation is below the previous block's, or
 *    that is missing: a torn or stale tail is never returned as records.
 *    A round is all or nothing to the reader: its records are returned once
 *    its last block was read, and a round cut by the end is dropped whole.
 *
 * Record order: records of one slot keep their append order in the stream.
 * Records of different slots interleave in an arbitrary way; each record
 * carries a global sequence number (GSN) from one shared counter, taken at
 * append, so a reader can order records across slots where it must.
 *
 * Nothing here throws; errors are ls_status codes with errno preserved.  A
 * failed write or sync of the log leaves the writer unusable (returns
 * LS_IO_ERROR forever after): the caller must not retry an fsync, it stops
 * the server (PANIC) and recovers from what is durable.
 */
#ifndef LEANSTORE_WAL_H
#define LEANSTORE_WAL_H

#include "leanstore/common.h"

#define LS_WAL_BLOCK		512u	/* one disk sector: written atomically */
#define LS_WAL_BLOCK_HDR	24u
#define LS_WAL_BLOCK_DATA	(LS_WAL_BLOCK - LS_WAL_BLOCK_HDR)

/* A record as the stream holds it: this header, then len - sizeof header bytes. */
typedef struct ls_wal_rec
{
	uint32_t	len;			/* whole record, header included */
	uint16_t	type;			/* owned by the caller; 0 is invalid */
	uint16_t	flags;			/* owned by the caller */
	uint32_t	xid;			/* owned by the caller (PostgreSQL: the xid) */
	uint32_t	slot;			/* appender's slot */
	uint64_t	gsn;			/* global sequence number, > 0 */
} ls_wal_rec;

#define LS_WAL_REC_HDR		((uint32_t) sizeof(ls_wal_rec))

typedef struct ls_wal_config
{
	uint32_t	max_slots;		/* appenders (backends + workers) */
	uint32_t	slot_buffer;	/* ring bytes per slot, power of two, >= 64 KiB */
	uint64_t	segment_size;	/* bytes per segment file, multiple of
								 * LS_WAL_BLOCK, >= 64 KiB */
	uint32_t	round_buffer;	/* bytes the writer gathers per round at most
								 * (multiple of LS_WAL_BLOCK, >= 2 * slot_buffer) */
	/*
	 * Optional: called by every round that writes records, after it chose
	 * them and before it writes them, in the process running the round
	 * (the same address in every process: set it before they start).  It
	 * makes durable what those records may depend on outside this log
	 * (the glue: PostgreSQL's commit records of asynchronous commits
	 * whose rows the records' transactions read).  It must not fail; a
	 * round holds the round lock meanwhile.
	 */
	void		(*before_write) (void *arg);
	void	   *before_write_arg;
} ls_wal_config;

/* Largest record ls_wal_append accepts (header included): half a slot ring. */
uint32_t	ls_wal_max_record(const ls_wal_config *cfg);

typedef struct ls_wal ls_wal;

/* ------------------------------------------------------------------------
 * Shared region
 * ------------------------------------------------------------------------ */
size_t		ls_wal_region_size(const ls_wal_config *cfg);
/* Format the region (once, before any process uses it).  No file is touched. */
ls_status	ls_wal_init(void *region, size_t size, const ls_wal_config *cfg, ls_wal **out);
/*
 * The handle *out points into the region (its first cache-line boundary),
 * so it is the same in every process that maps the region at the same
 * address; process-local state (directory, writer files) is looked up by it.
 */

/*
 * Log directory of this process (a process-local copy; every process that
 * calls the writer or reader functions sets it; appenders need none).
 * The directory must exist.
 */
ls_status	ls_wal_set_dir(ls_wal *wal, const char *dir);

/*
 * Where the stream continues (the end position a reader reported, or 0 for
 * an empty log), and where the oldest needed record starts (the replay start;
 * segments wholly before it may be recycled).  Called once by the writer
 * process after recovery and before the first round; appenders block in
 * ls_wal_append until it has been called.  start must be block aligned.
 * Takes the next writer generation (reads, raises and syncs
 * <dir>/generation): LS_IO_ERROR when that fails (errno EINVAL when the
 * file does not hold a generation number).  LS_INVALID when called twice,
 * without a directory, or with start not block aligned.
 */
ls_status	ls_wal_start(ls_wal *wal, uint64_t start, uint64_t keep_from);
bool		ls_wal_started(const ls_wal *wal);

/* ------------------------------------------------------------------------
 * Appenders
 * ------------------------------------------------------------------------ */

/*
 * Append one record: hdr_in->type, flags and xid are taken from the caller;
 * len, slot and gsn are filled in.  The body is the concatenation of nparts
 * pieces (parts[i], lens[i]).  Blocks (waking the writer, sleeping on the
 * slot) while the ring has no room.  On success *end_pos is the record's
 * end in the slot's stream (the value to pass to ls_wal_wait) and *gsn its
 * GSN.  LS_TOO_LARGE above ls_wal_max_record; LS_IO_ERROR when the writer
 * has failed.  Only the slot's owner appends to a slot.
 */
ls_status	ls_wal_append(ls_wal *wal, uint32_t slot, const ls_wal_rec *hdr_in,
						  const void *const *parts, const uint32_t *lens,
						  uint32_t nparts, uint64_t *end_pos, uint64_t *gsn);

/*
 * Wait until every record of slot up to end_pos is durable.  Wakes the
 * writer.  Returns LS_OK once durable, LS_BUSY when timeout_ms elapsed first
 * (the caller checks for postmaster death or interrupts and calls again),
 * LS_IO_ERROR when the writer has failed (records made durable before the
 * failure still return LS_OK).  timeout_ms 0 = just check (and kick).
 */
ls_status	ls_wal_wait(ls_wal *wal, uint32_t slot, uint64_t end_pos, uint32_t timeout_ms);

/* Durable end of slot's stream (what ls_wal_wait compares with). */
uint64_t	ls_wal_durable(const ls_wal *wal, uint32_t slot);

/*
 * Every record with a GSN at or below the returned value is durable
 * (a page stamped with a GSN may be written once this reaches it).
 * Durability is a GSN prefix (each round takes exactly the records up to
 * a bound GSN): a record that survives a crash implies every record with
 * a smaller GSN survives too, whether or not anybody waited for it.
 */
uint64_t	ls_wal_durable_gsn(const ls_wal *wal);
/* The GSN counter's current value (no record has a larger one yet). */
uint64_t	ls_wal_current_gsn(const ls_wal *wal);
/* Raise the GSN counter to at least gsn (recovery: past every replayed record). */
void		ls_wal_advance_gsn(ls_wal *wal, uint64_t gsn);

/* ------------------------------------------------------------------------
 * Writer (one process)
 * ------------------------------------------------------------------------ */

typedef struct ls_wal_round_stats
{
	uint64_t	records;		/* records written by this round */
	uint64_t	bytes;			/* stream bytes (record data) */
	uint64_t	blocks;			/* blocks written */
	uint32_t	slots;			/* slots that had records */
} ls_wal_round_stats;

/*
 * Sleep until a round is asked for, at most timeout_ms; returns true when
 * there is work (some slot has records not yet taken, or a round was asked
 * for since the last call).  Asking: ls_wal_wait, ls_wal_kick, and an
 * append that leaves its ring more than half full.  A plain append does not
 * wake the writer (a transaction's records are written with its commit's
 * wait, or at the latest after timeout_ms); it returns true at once when
 * records are pending.  timeout_ms 0 = just check.
 */
bool		ls_wal_writer_sleep(ls_wal *wal, uint32_t timeout_ms);

/*
 * One group-commit round: gather the complete records of every slot, write
 * the new blocks (io_uring, pwrite when io_uring is unavailable), one
 * fdatasync per segment touched, then publish durable positions and wake
 * the waiters.  A round with nothing to do returns LS_OK with zero stats.
 * LS_NO_SPACE when the next segment has not been prepared (the round then
 * writes nothing: call ls_wal_prepare first).  LS_IO_ERROR (errno kept) when
 * a write or sync failed: the writer is then failed for good, every waiter
 * returns LS_IO_ERROR.
 */
ls_status	ls_wal_round(ls_wal *wal, ls_wal_round_stats *stats);

/*
 * The same, but the blocks are only written, not synced, unless durability
 * is waited for: a waiter in ls_wal_wait or an ls_wal_kick since the last
 * round, or 8 MB or 8 segments written unsynced by now.  A synced round
 * makes every earlier lazy round's records durable with its own.  Records
 * only written are not durable: ls_wal_durable, ls_wal_durable_gsn and
 * ls_wal_end do not move for them.  What it saves: a bulk load fills its
 * slot's ring faster than rounds with an fdatasync each drain it (a COPY
 * waited half its time for room); PostgreSQL writes its WAL the same way
 * and syncs at commit.
 */
ls_status	ls_wal_round_lazy(ls_wal *wal, ls_wal_round_stats *stats);

/*
 * A committer leads a synced round itself (as a PostgreSQL backend flushes
 * WAL itself) while the writer sleeps (a light load) and no round runs;
 * else *ran is false and nothing was done.  Needs ls_wal_set_dir in this
 * process; writes and syncs with plain calls (no ring per committer).  Rounds of the writer and of
 * committers never overlap (ls_wal_round waits for one in progress).
 * Saves the hand-off to the writer: waking it, its turn on a CPU, the
 * wake-up back.
 */
ls_status	ls_wal_try_round(ls_wal *wal, ls_wal_round_stats *stats, bool *ran);

/*
 * Make sure the segments that the next `ahead` segments' worth of stream
 * need exist, full size, zero-filled or recycled, synced.  Recycles
 * segments wholly before the keep_from position (and before the block
 * preceding it, which a reader starting at keep_from reads for its
 * generation).  LS_IO_ERROR with errno
 * ENOSPC when the disk is full (the writer stays usable: the segments
 * already prepared still take commits).
 */
ls_status	ls_wal_prepare(ls_wal *wal, uint32_t ahead);

/*
 * The same a piece at a time, for the writer between rounds: recycles a
 * missing segment at once, but writes a new one with zeros 1 MB a call
 * (then syncs and renames it), so the rings are drained meanwhile.  *more
 * says to call again soon (a segment is half made, or another may be
 * missing); a call with nothing to do makes no system call.  Errors as
 * ls_wal_prepare's; a failed piece drops the half-made segment.  A later
 * ls_wal_prepare finishes a segment begun here.  One process only: the
 * half-made segment is process-local state.
 */
ls_status	ls_wal_prepare_step(ls_wal *wal, uint32_t ahead, bool *more);

/* Segments wholly below pos may be recycled from now on (checkpoint). */
void		ls_wal_set_keep_from(ls_wal *wal, uint64_t pos);
/*
 * Keep at most this many bytes of recyclable segments (those wholly below
 * keep_from); ls_wal_prepare_step removes the oldest of the rest once
 * keep_from or this limit moved, so the log directory shrinks again after
 * the log grew (a long transaction held checkpoints back), as PostgreSQL
 * removes WAL segments past max_wal_size.  0 (the default): keep all.
 */
void		ls_wal_set_spare_bytes(ls_wal *wal, uint64_t bytes);
uint64_t	ls_wal_keep_from(const ls_wal *wal);
/* End of the durable stream (block aligned after each round). */
uint64_t	ls_wal_end(const ls_wal *wal);
/* The writer failed (LS_IO_ERROR returned once): nothing is durable anymore. */
bool		ls_wal_failed(const ls_wal *wal);

/*
 * Ask the writer for a round without waiting (wakes ls_wal_writer_sleep),
 * e.g. before waiting for ls_wal_durable_gsn to reach a page's GSN.  The
 * round syncs (also a lazy one).
 */
void		ls_wal_kick(ls_wal *wal);

/* Counters since ls_wal_init (any process). */
typedef struct ls_wal_stats_out
{
	uint64_t	rounds;			/* rounds that wrote blocks */
	uint64_t	records;		/* records they wrote */
	uint64_t	blocks;			/* blocks they wrote */
	uint64_t	short_writes;	/* io_uring writes that came back short and
								 * were finished (and synced) with plain calls */
	uint32_t	generation;		/* writer generation (0 before ls_wal_start) */
} ls_wal_stats_out;
void		ls_wal_stats(const ls_wal *wal, ls_wal_stats_out *out);

/*
 * Release this process's private state for the region (the log directory,
 * the writer's open segment files, round buffer and io_uring).  Optional:
 * for tests and for a process that stops using the log.
 */
void		ls_wal_detach(ls_wal *wal);

/*
 * Test hook: make the writer's next write (what = 1) or sync (what = 2)
 * fail with errno err, as a full or failing disk would.  0 clears it.
 * what = 3: the writer uses pwrite/fdatasync from now on, as where io_uring
 * is unavailable (err ignored; not undone by 0).  what = 4: the next segment
 * that ls_wal_prepare writes full of zeros fails with err (disk full).
 * what = 5: the next round's first write, submitted through io_uring linked
 * to its fdatasync, is cut to half its length, so the kernel completes it
 * short (err ignored); the round must finish it with pwrite and sync it.
 * Without io_uring (or with what = 3) it stays armed and nothing happens:
 * short_writes in ls_wal_stats says whether it ran.
 */
void		ls_wal_inject_fault(ls_wal *wal, int what, int err);

/*
 * Test hook: while held, rounds leave the records of slot in its ring, as
 * if they had no room for them (durable_gsn stays below the first; an
 * ls_wal_wait on the slot does not return LS_OK).  Lets a test make a later
 * record of another slot durable before an earlier one of this slot: the
 * one exception to the GSN prefix.
 */
void		ls_wal_hold_slot(ls_wal *wal, uint32_t slot, bool hold);

/* ------------------------------------------------------------------------
 * Reader (recovery; one process, no writer running)
 * ------------------------------------------------------------------------ */
typedef struct ls_wal_reader ls_wal_reader;

/* Read the stream of dir from position start (a record start, block aligned or not). */
ls_status	ls_wal_reader_open(const char *dir, uint64_t segment_size, uint64_t start,
							   ls_wal_reader **out);
/*
 * Next record: *rec points at the header, followed by its body, valid until
 * the next call.  *pos is the record's start position.  LS_NOT_FOUND at the
 * end of the valid stream (missing segment, CRC failure, stale position, a
 * record cut by the end).  LS_IO_ERROR on a read error, LS_CORRUPT when a
 * valid block holds an impossible record header.
 */
ls_status	ls_wal_reader_next(ls_wal_reader *r, const ls_wal_rec **rec, uint64_t *pos);
/*
 * Block-aligned position where a writer continues: after the last block of
 * the last whole round, or, when the valid stream ends inside a round (a
 * round torn in flight, be it inside a record or not), at the start of that
 * round's first block (the unfinished round is dropped whole: nobody was
 * told it was durable, and none of its records was returned).
 * Meaningful once ls_wal_reader_next returned LS_NOT_FOUND.
 */
uint64_t	ls_wal_reader_end(const ls_wal_reader *r);
/* Largest GSN seen so far. */
uint64_t	ls_wal_reader_max_gsn(const ls_wal_reader *r);
/*
 * Smallest GSN of the round that holds the record ls_wal_reader_next
 * returned last (of its records at or after the reader's start, for the
 * first round).  A round holds exactly the GSNs above every earlier round's
 * (GSN-prefix rounds, src/wal/README.md), so records read before it with a
 * smaller GSN are all the records below it -- except where a test held a
 * slot back (ls_wal_hold_slot).
 */
uint64_t	ls_wal_reader_round_min_gsn(const ls_wal_reader *r);
void		ls_wal_reader_close(ls_wal_reader *r);

#endif							/* LEANSTORE_WAL_H */
