/*
 * wal_internal.h - shared layout of the log region and the on-disk block
 * header, used by the appender side (wal.c), the writer (writer.c) and the
 * reader (reader.c).  See README.md beside this file.
 */
#ifndef LEANSTORE_WAL_INTERNAL_H
#define LEANSTORE_WAL_INTERNAL_H

#include "leanstore/wal.h"

#define WAL_MAGIC		0x4C53574C3031ULL	/* "LSWL01" */

/* Block header flags. */
#define WAL_BLK_START	0x1u	/* first block of a round */
#define WAL_BLK_END		0x2u	/* last block of a round */
#define WAL_BLK_FLAGS	(WAL_BLK_START | WAL_BLK_END)
#define WAL_NO_FIRST	0xFFFFu /* no record starts in this block */

/* On-disk block header (little-endian host layout; 24 bytes). */
typedef struct wal_block_hdr
{
	uint32_t	crc;			/* CRC32C of the whole block, this field 0 */
	uint16_t	used;			/* record bytes in the block's data area */
	uint16_t	flags;			/* WAL_BLK_* */
	uint32_t	generation;		/* writer generation that wrote the block */
	uint16_t	first;			/* data offset of the first record starting
								 * here, WAL_NO_FIRST when none */
	uint16_t	pad;
	uint64_t	pos;			/* the block's own stream position */
} wal_block_hdr;

_Static_assert(sizeof(wal_block_hdr) == LS_WAL_BLOCK_HDR, "block header size");
_Static_assert(sizeof(ls_wal_rec) == 24, "record header size");

/* Per-slot state: the owner's line and the writer's line. */
typedef struct wal_slot
{
	_Alignas(LS_CACHELINE) _Atomic uint64_t head;	/* bytes appended (owner) */
	_Atomic uint32_t appending; /* owner between GSN and head publish */
	_Alignas(LS_CACHELINE) _Atomic uint64_t tail;	/* bytes taken (writer) */
	_Atomic uint64_t durable;	/* bytes durable (writer) */
	uint64_t	written;		/* bytes written, durable once a synced round
								 * ends (the round holder only) */
	_Atomic uint32_t wake;		/* futex word: bumped when tail/durable move */
	_Atomic uint32_t sleepers;	/* processes waiting on wake */
} wal_slot;

/* The region's header; the handle (ls_wal *) points at it. */
struct ls_wal
{
	uint64_t	magic;
	ls_wal_config cfg;
	uint64_t	slots_off;		/* from the header's address */
	uint64_t	rings_off;
	uint64_t	size;			/* bytes from the header to the region's end */

	_Alignas(LS_CACHELINE) _Atomic uint64_t gsn;	/* last GSN handed out */
	_Alignas(LS_CACHELINE) _Atomic uint64_t durable_gsn;
	_Atomic uint64_t end;		/* durable stream end (block aligned) */
	_Atomic uint64_t written_end;	/* written stream end (>= end): lazy
									 * rounds write without syncing */
	_Atomic uint32_t sync_wanted;	/* a waiter needs durability: the next
									 * round syncs (wal_kick_sync) */
	/* lazy rounds' unsynced writes (the round holder only: in_round) */
	uint64_t	unsynced;		/* bytes written since the last sync */
	uint64_t	lazy_segs[8];	/* segments written since the last sync */
	uint32_t	nlazy_segs;
	_Atomic uint64_t keep_from;
	_Atomic uint64_t spare_bytes;	/* recyclable segments kept, in bytes
										 * (ls_wal_set_spare_bytes; 0: all) */
	_Atomic uint64_t rounds;	/* rounds that wrote something */
	_Atomic uint64_t round_records;
	_Atomic uint64_t round_blocks;
	_Atomic uint64_t short_writes;	/* ring writes finished with pwrite */
	_Atomic uint32_t generation;
	_Atomic uint32_t started;	/* futex word: 0 until ls_wal_start */
	_Atomic uint32_t failed;
	_Atomic int32_t fail_errno;
	_Atomic uint32_t held_slot;	/* ls_wal_hold_slot: slot + 1, 0 none */
	_Atomic uint32_t fault_what;	/* ls_wal_inject_fault */
	_Atomic int32_t fault_err;
	_Atomic uint32_t plain_io;	/* test hook: pwrite/fdatasync, no io_uring */
	_Atomic uint32_t rotor;		/* first slot the next round looks at */
	_Atomic uint32_t in_round;	/* futex word: 1 while a round runs (the
								 * writer's or a committer's; never two) */
	_Atomic uint32_t round_waiters;	/* sleeping on in_round */

	_Alignas(LS_CACHELINE) _Atomic uint32_t work;	/* futex word: writer kicks */
	_Atomic uint32_t writer_sleeping;
	uint32_t	work_seen;		/* writer only: work when it last looked */
};

static inline wal_slot *
wal_slot_at(const ls_wal *wal, uint32_t i)
{
	return (wal_slot *) ((char *) wal + wal->slots_off) + i;
}

static inline uint8_t *
wal_ring_at(const ls_wal *wal, uint32_t i)
{
	return (uint8_t *) wal + wal->rings_off + (uint64_t) i * wal->cfg.slot_buffer;
}

/* Copy n bytes out of / into a ring at stream offset off (wrapping). */
void		wal_ring_read(const ls_wal *wal, uint32_t slot, uint64_t off, void *dst, uint32_t n);

/* Ask the writer for a round (wakes it when it sleeps). */
void		wal_kick(ls_wal *wal);
/* The same, for a waiter that needs durability: the round syncs. */
void		wal_kick_sync(ls_wal *wal);

/* Mark the writer failed with errno err and wake everybody. */
void		wal_fail(ls_wal *wal, int err);

/* Wake the waiters of one slot after its tail or durable moved. */
void		wal_slot_wake(wal_slot *s);

/* Block CRC: over the whole block with the crc field taken as zero. */
uint32_t	wal_block_crc(const uint8_t *block);

/* "<dir>/<16 hex digits>" into buf (at least strlen(dir) + 18 bytes). */
void		wal_segment_path(char *buf, size_t len, const char *dir, uint64_t segno);

/* Process-local state (writer files, buffers, directory) of a region. */
typedef struct wal_local wal_local;
wal_local  *wal_local_get(ls_wal *wal, bool create);
const char *wal_local_dir(ls_wal *wal);
void		wal_local_drop(ls_wal *wal);

#endif							/* LEANSTORE_WAL_INTERNAL_H */
