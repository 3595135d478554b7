/*
 * leanstore/hashcache.h - BTrim's hash cache in front of unique indexes.
 *
 * A fixed-size shared hash table: 64-bit key hash -> (table tag, rowid).  It
 * lives in one caller-provided shared region (leanstore.hash_cache_memory in
 * the server, an anonymous MAP_SHARED mapping in tests), so its memory is
 * bounded by construction: a fill into a full bucket replaces an entry.
 *
 * The cache is a hint, never the truth.  The caller hashes (index, key
 * bytes) itself, and whatever rowid a lookup returns must be fetched and
 * its key compared with the searched one before it is used; a miss or a
 * failed recheck falls back to the index.  So a stale entry, a torn read,
 * a hash collision or a lost fill can cost a lookup, never an answer.
 * Removal (rows leaving, tables dropped) only keeps the slots useful.
 *
 * An entry may also carry a reference and its serial beside the rowid
 * (opaque to the cache: the hot tier's row header pointer and the serial
 * that says whether it still holds, ls_hot_row_get_ref).  A lookup returns
 * the rowid, reference and serial of one fill, never parts of two, so the
 * caller may trust the reference as far as its serial says.
 *
 * Layout: buckets of LS_HC_WAYS entries, two cache lines each; an entry is
 * four 64-bit words: ctl (32 check bits of the hash, a 31-bit write
 * sequence, a busy bit; check 0 = empty), val (tag << 40 | rowid), ref and
 * serial.  Concurrency, for any number of processes (a seqlock per entry):
 *  - lookups take no latch: load ctl (acquire), load val, ref and serial,
 *    fence, load ctl again; a ctl that changed in between (every write
 *    advances the sequence) reads as a miss.  The sequence would have to
 *    wrap (2^31 writes of one entry) between a reader's two loads of ctl
 *    for a torn read to go unnoticed;
 *  - writers (fill, remove, sweep) claim an entry by compare-and-swap of ctl
 *    to busy, write the data words, then publish ctl with the next sequence
 *    (release).  A writer that loses a race gives up (a fill is only a
 *    hint) or moves on; no writer ever waits for another; a process dying
 *    mid-write leaves at most one entry that reads as busy (unused) until
 *    the region is formatted again (PostgreSQL reinitialises shared memory
 *    after a backend crash).
 *  - counters (hits, misses, ...) are striped per process slot so that
 *    lookups in different processes do not share a cache line.
 */
#ifndef LEANSTORE_HASHCACHE_H
#define LEANSTORE_HASHCACHE_H

#include "leanstore/common.h"

#define LS_HC_WAYS			4		/* entries per bucket (two cache lines) */
#define LS_HC_TAG_BITS		24		/* table tag bits stored beside the rowid */
#define LS_HC_ROWID_BITS	40		/* rowids are below 2^40 (LS_HOT_MAX_ROWID) */
#define LS_HC_STRIPES		64		/* counter stripes */

typedef struct ls_hc ls_hc;

/* Region size for a cache of nbuckets buckets, and the largest bucket
 * count that fits in size bytes (0: too small). */
size_t		ls_hc_region_size(uint64_t nbuckets);
uint64_t	ls_hc_buckets_for(size_t size);

/* Format a region (once, before any process uses it).  LS_INVALID when the
 * region cannot hold one bucket. */
ls_status	ls_hc_init(void *region, size_t size, ls_hc **out);

/* A hash of bytes continuing from seed (seed 0 for the first part).  Any
 * value is fine as a key: the cache maps 0 and 1 to other values itself. */
uint64_t	ls_hc_hash(uint64_t seed, const void *bytes, size_t len);
/* The table tag of a table identity (e.g. a hash of its storage key). */
static inline uint32_t
ls_hc_tag(uint64_t table_hash)
{
	return (uint32_t) (table_hash >> (64 - LS_HC_TAG_BITS));
}

/* What a lookup found: one fill's rowid, reference and serial. */
typedef struct ls_hc_hit
{
	uint64_t	rowid;
	uint64_t	ref;			/* 0: none stored */
	uint64_t	serial;
} ls_hc_hit;

/*
 * Lookup: true and *hit when an entry for hash exists (its rowid may be
 * stale: recheck).  Counts nothing; see ls_hc_count.
 */
bool		ls_hc_lookup_ref(ls_hc *hc, uint64_t hash, ls_hc_hit *hit);
/* The same, for the rowid alone. */
bool		ls_hc_lookup(ls_hc *hc, uint64_t hash, uint64_t *rowid);

typedef enum ls_hc_fill_result
{
	LS_HC_FILLED,				/* new entry in an empty slot */
	LS_HC_UPDATED,				/* hash was present: its rowid replaced */
	LS_HC_EVICTED,				/* a full bucket: another entry replaced */
	LS_HC_SKIPPED,				/* lost a race with another writer: nothing done */
} ls_hc_fill_result;

/*
 * Map hash -> (tag, rowid, ref, serial).  rowid < 2^40, tag < 2^24.  An
 * entry already holding exactly that is left alone (LS_HC_UPDATED).
 */
ls_hc_fill_result ls_hc_fill_ref(ls_hc *hc, uint64_t hash, uint32_t tag, uint64_t rowid,
								 uint64_t ref, uint64_t serial);
/* The same without a reference (ref and serial 0). */
ls_hc_fill_result ls_hc_fill(ls_hc *hc, uint64_t hash, uint32_t tag, uint64_t rowid);

/*
 * Remove the entries for hash that map to rowid (every entry for hash when
 * rowid is LS_HC_ANY_ROWID).  Returns how many were removed.  An entry that
 * another writer holds at that moment is left (it reads as stale later).
 */
#define LS_HC_ANY_ROWID		UINT64_MAX
uint32_t	ls_hc_remove(ls_hc *hc, uint64_t hash, uint64_t rowid);

/*
 * Remove every entry of a table (tag), and with rowid != LS_HC_ANY_ROWID
 * only those of that rowid: a sweep of the whole cache, for rows leaving
 * without their key at hand (pack) and for TRUNCATE / DROP / rewrites.
 * Tags are 24 bits: entries of another table with the same tag may go too
 * (a later miss, nothing worse).  Returns how many were removed.
 */
uint64_t	ls_hc_remove_table(ls_hc *hc, uint32_t tag, uint64_t rowid);

/*
 * The same sweep for a set of rowids of a table: every entry of tag whose
 * rowid is one of rowids[0..n), which ascend strictly (VACUUM's DEAD
 * rowids: rows gone for good whose keys are no longer at hand).  Returns
 * how many were removed; n == 0 reads nothing.
 */
uint64_t	ls_hc_remove_rowids(ls_hc *hc, uint32_t tag, const uint64_t *rowids,
								size_t n);

/* Statistics */
typedef enum ls_hc_counter
{
	LS_HC_C_HITS,				/* lookups whose entry rechecked fine */
	LS_HC_C_MISSES,				/* lookups with no entry */
	LS_HC_C_STALE,				/* entries that failed the recheck */
	LS_HC_C_FILLS,				/* ls_hc_fill calls that stored something */
	LS_HC_C_EVICTIONS,			/* fills that replaced another key */
	LS_HC_C_REMOVED,			/* entries removed */
	LS_HC_NCOUNTERS
} ls_hc_counter;

/* Add n to counter c in the stripe of process slot (any small integer). */
void		ls_hc_count(ls_hc *hc, uint32_t slot, ls_hc_counter c, uint64_t n);

typedef struct ls_hc_stats
{
	uint64_t	region_bytes;
	uint64_t	buckets;
	uint64_t	capacity;		/* entries: buckets * LS_HC_WAYS */
	uint64_t	entries;		/* occupied now (counted by a sweep) */
	uint64_t	counters[LS_HC_NCOUNTERS];
} ls_hc_stats;

/* Statistics; with count_entries, sweeps the cache to count entries. */
void		ls_hc_get_stats(ls_hc *hc, bool count_entries, ls_hc_stats *out);

#endif							/* LEANSTORE_HASHCACHE_H */
