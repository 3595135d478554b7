/*
 * ls_hashscan.h - the hash cache glue and the CustomScan "LeanStore Hash
 * Lookup" (hashscan.c).
 */
#ifndef LS_HASHSCAN_H
#define LS_HASHSCAN_H

#include "leanstore/hashcache.h"
#include "ls_pg.h"

extern int	ls_hash_cache_memory_mb;

/* _PG_init: GUCs, shared memory and planner hooks */
extern void ls_hashscan_init(void);

/* A table storage goes away (DROP, TRUNCATE, rewrite): drop its entries. */
extern void ls_hashcache_forget_storage(ls_hot_key key);
/*
 * A row version leaves (DELETE, moving update) and its tuple is at
 * hand: drop the entries of its keys (one bucket per unique index).
 */
extern void ls_hashcache_forget_tuple(Relation rel, HeapTuple tup, uint64 rowid);
/*
 * VACUUM forgets the DEAD rowids[0..n) (ascending) of rel: drop their
 * entries (one sweep of the cache).
 */
extern void ls_hashcache_forget_rowids(Relation rel, const uint64 *rowids, int64 n);
/* Statistics; false when the cache is off (leanstore.hash_cache_memory = 0). */
extern bool ls_hashcache_stats(ls_hc_stats *st);

#endif							/* LS_HASHSCAN_H */
