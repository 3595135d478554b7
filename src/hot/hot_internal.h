/*
 * hot_internal.h - private layout of the hot tier (src/hot only).
 *
 * Everything here lives inside the caller's region; every process maps the
 * region at the same address, so plain pointers are valid in all of them.
 * See README.md beside this file for the algorithms and invariants.
 */
#ifndef LS_HOT_INTERNAL_H
#define LS_HOT_INTERNAL_H

#include "leanstore/hot.h"

#define LS_HOT_MAGIC		UINT64_C(0x4c53484f54303031)	/* "LSHOT001" */

/* ------------------------------------------------------------------------
 * Allocator
 * ------------------------------------------------------------------------ */

/* Pages are the unit the bump pointer carves; one class per page. */
#define HOT_PAGE_SHIFT		16
#define HOT_PAGE_SIZE		(1u << HOT_PAGE_SHIFT)
#define HOT_NCLASS			38
#define HOT_NONE			UINT32_MAX

/*
 * Every block starts with this prefix; the object handed out follows it.
 * Readers never look at the prefix, so it may be rewritten while a retired
 * object is still being read: it links free blocks (caches, page lists) and
 * retired blocks (retire lists) and holds the retire epoch.
 */
typedef struct hot_blk
{
	struct hot_blk *next;
	uint64_t	tag;			/* global epoch when retired */
} hot_blk;

#define HOT_BLK_HDR			sizeof(hot_blk)

/* Per page bookkeeping; protected by the owning class's lock (or page_lock
 * while the page is free). */
typedef struct hot_page
{
	uint16_t	cls;			/* class index, HOT_NCLASS when page is free */
	uint8_t		on_partial;		/* on the class's partial list */
	uint8_t		pad;
	uint32_t	nblocks;		/* blocks that fit in the page */
	uint32_t	used;			/* blocks outside the page (caches + users) */
	uint32_t	fresh;			/* blocks [fresh, nblocks) never handed out */
	uint32_t	prev;			/* partial list / free page stack links */
	uint32_t	next;
	hot_blk    *free;			/* blocks given back to the page */
} hot_page;

typedef struct hot_class
{
	ls_mutex	lock;
	uint32_t	partial;		/* first page with available blocks */
	char		pad[LS_CACHELINE - 2 * sizeof(uint32_t)];
} hot_class;

/* Per-process cache of free blocks of one class. */
typedef struct hot_cache
{
	hot_blk    *head;
	uint32_t	count;
	uint32_t	pad;
} hot_cache;

/* ------------------------------------------------------------------------
 * Epochs and per-process contexts
 * ------------------------------------------------------------------------ */

/* FIFO of retired blocks; tags never decrease from head to tail. */
typedef struct hot_retire_list
{
	hot_blk    *head;
	hot_blk    *tail;
	uint64_t	count;
	uint64_t	bytes;
} hot_retire_list;

struct ls_hot_ctx
{
	/* Read by every reclaimer: keep it alone on its line (the struct is
	 * line aligned, so neighbours in the array never share it). */
	_Atomic uint64_t local_epoch;	/* 0 = outside any epoch */
	char		pad0[LS_CACHELINE - sizeof(uint64_t)];

	_Atomic uint32_t attached;
	uint32_t	slot;
	uint32_t	depth;			/* nesting of epoch_enter */
	uint32_t	retired_since_reclaim;
	ls_hot	   *hot;
	hot_retire_list retired;

	/*
	 * Byte and count deltas of this context, written only by its owner
	 * (plain load + store, no read-modify-write) and summed by
	 * ls_hot_get_stats: allocation, free and retirement touch no shared
	 * cache line.  Detach folds them into the tier's base counters.
	 */
	_Atomic int64_t used_delta;		/* blocks handed out minus freed */
	_Atomic int64_t cached_bytes;		/* free blocks in cache[] */
	_Atomic int64_t retired_count_delta;
	_Atomic int64_t retired_bytes_delta;

	hot_cache	cache[HOT_NCLASS];
} __attribute__((aligned(LS_CACHELINE)));

/* Owner-only update of a context counter. */
static inline void
hot_ctx_add(_Atomic int64_t *counter, int64_t delta)
{
	atomic_store_explicit(counter,
						  atomic_load_explicit(counter, memory_order_relaxed) + delta,
						  memory_order_relaxed);
}

/* ------------------------------------------------------------------------
 * Tables and the RID-map
 * ------------------------------------------------------------------------ */
#define HOT_MAP_BITS		10
#define HOT_MAP_FANOUT		(1u << HOT_MAP_BITS)
#define HOT_MAP_LEVELS		4
#define HOT_SLOT_DEAD		((uintptr_t) 1)
#define HOT_SLOT_BUSY		((uintptr_t) 2)	/* transient: going back to 0 */
#define HOT_SLOT_IS_ROW(v)	((v) > HOT_SLOT_BUSY)	/* rows are 16-byte aligned */
#define HOT_OCC_WORDS		(HOT_MAP_FANOUT / 64)

/*
 * Leaves keep their slots in chunks of HOT_CHUNK_SLOTS, allocated on first
 * insert into the chunk (a block of narrow rows uses ~61 of its 291 rowids:
 * untouched chunks cost nothing).  32 slots = 256 bytes, a 320-byte block
 * with its prefix (64 would need 528 bytes: a 640-byte block).
 */
#define HOT_CHUNK_BITS		5
#define HOT_CHUNK_SLOTS		(1u << HOT_CHUNK_BITS)
#define HOT_LEAF_CHUNKS		(HOT_MAP_FANOUT / HOT_CHUNK_SLOTS)

/*
 * Reference counts of RID-map objects (chunks and non-root nodes; the root
 * counts too but is never freed).  refs = the object's non-NULL slots
 * (chunk) or children links (node) + references of inserters in flight
 * (a pending insert into a chunk, a child being created in a node).  It
 * never under-counts: raised before a slot or link becomes non-NULL,
 * lowered after it went back to NULL.  Whoever lowers it to zero may claim
 * the object by CAS 0 -> HOT_REFS_DEAD; a DEAD object has only NULL slots
 * and links and keeps them (a new one needs a reference, which cannot be
 * taken any more: hot_refs_take fails), so it is unlinked from its parent
 * and retired.  Rules and proof: ridmap.c and README.md ("Freeing").
 */
#define HOT_REFS_DEAD		(UINT32_C(1) << 31)

typedef struct hot_map_chunk
{
	_Atomic uint32_t refs;		/* see HOT_REFS_DEAD */
	uint32_t	pad;
	_Atomic uintptr_t slot[HOT_CHUNK_SLOTS];
} hot_map_chunk;

/*
 * Inner node: slot[HOT_MAP_FANOUT] children.  Leaf: slot[HOT_LEAF_CHUNKS]
 * chunk pointers (NULL until the chunk's first insert; published by CAS like
 * nodes, unlinked and freed with them when empty), whose slots hold 0,
 * HOT_SLOT_DEAD, HOT_SLOT_BUSY or a row; and the occupancy bitmap: bit i is
 * set whenever slot i holds a row or DEAD that a reader may need (rules in
 * ridmap.c and README.md), so iteration loads only the slots whose bit is
 * set.  A bit is only ever set after its chunk is published, so a set bit
 * implies the chunk exists.  Inner nodes leave occ at zero.  The two kinds
 * differ only in the length of slot[] (hot_map_node_size).
 */
typedef struct hot_map_node
{
	_Atomic uint32_t live;		/* leaf: rows in slots (may lag, see README) */
	_Atomic uint32_t dead;		/* leaf: DEAD slots */
	uint32_t	level;			/* 0 = root level, HOT_MAP_LEVELS-1 = leaf */
	_Atomic uint32_t refs;		/* non-NULL links + creators (HOT_REFS_DEAD) */
	_Atomic uint64_t occ[HOT_OCC_WORDS];	/* leaf: occupancy bitmap */
	_Atomic uintptr_t slot[];	/* inner: children; leaf: chunks */
} hot_map_node;

static inline size_t
hot_map_node_size(uint32_t level)
{
	return sizeof(hot_map_node) + sizeof(_Atomic uintptr_t) *
		(level == HOT_MAP_LEVELS - 1 ? HOT_LEAF_CHUNKS : HOT_MAP_FANOUT);
}

/* The chunk of leaf holding rowid, NULL when not created yet. */
static inline hot_map_chunk *
hot_map_chunk_of(hot_map_node *leaf, uint64_t rowid)
{
	return (hot_map_chunk *)
		atomic_load_explicit(&leaf->slot[(rowid & (HOT_MAP_FANOUT - 1)) >> HOT_CHUNK_BITS],
							 memory_order_acquire);
}

static inline _Atomic uintptr_t *
hot_chunk_slot(hot_map_chunk *chunk, uint64_t rowid)
{
	return &chunk->slot[rowid & (HOT_CHUNK_SLOTS - 1)];
}

/* rowid's slot in leaf, NULL when its chunk does not exist (slot is 0). */
static inline _Atomic uintptr_t *
hot_map_leaf_slot(hot_map_node *leaf, uint64_t rowid)
{
	hot_map_chunk *c = hot_map_chunk_of(leaf, rowid);

	return c != NULL ? hot_chunk_slot(c, rowid) : NULL;
}

static inline _Atomic uint64_t *
hot_occ_word(hot_map_node *leaf, uint64_t rowid, uint64_t *mask)
{
	uint32_t	i = (uint32_t) (rowid & (HOT_MAP_FANOUT - 1));

	*mask = UINT64_C(1) << (i & 63);
	return &leaf->occ[i >> 6];
}

/* Set rowid's occupancy bit (no read-modify-write when it is set already). */
static inline void
hot_occ_set(hot_map_node *leaf, uint64_t rowid)
{
	uint64_t	mask;
	_Atomic uint64_t *w = hot_occ_word(leaf, rowid, &mask);

	if ((atomic_load(w) & mask) == 0)
		atomic_fetch_or(w, mask);
}

static inline void
hot_occ_clear(hot_map_node *leaf, uint64_t rowid)
{
	uint64_t	mask;
	_Atomic uint64_t *w = hot_occ_word(leaf, rowid, &mask);

	atomic_fetch_and(w, ~mask);
}

static inline bool
hot_occ_test(hot_map_node *leaf, uint64_t rowid)
{
	uint64_t	mask;
	_Atomic uint64_t *w = hot_occ_word(leaf, rowid, &mask);

	return (atomic_load(w) & mask) != 0;
}

typedef enum hot_table_state
{
	HOT_TABLE_FREE = 0,			/* never used: ends a probe sequence */
	HOT_TABLE_LIVE = 1,
	HOT_TABLE_DROPPED = 2,		/* tombstone: probes continue past it */
} hot_table_state;

#define HOT_STATE_MASK		UINT64_C(0xff)

/*
 * A descriptor's state word is (generation << 8) | state; the generation
 * moves on every transition so a lock-free reader can validate that the key
 * it read belongs to the state it saw.
 */
#define HOT_FILL_BITS		20	/* LS_HOT_FILL_MAX == (1 << HOT_FILL_BITS) - 1 */

struct ls_hot_table
{
	_Atomic uint64_t state;
	_Atomic uint32_t key_spc;
	_Atomic uint32_t key_db;
	_Atomic uint32_t key_rel;
	uint32_t	index;
	_Atomic uint64_t drop_epoch;	/* global epoch when dropped */
	_Atomic uint32_t tag[LS_HOT_TABLE_TAGS];
	hot_map_node *_Atomic root;
	_Atomic uint64_t rowid_fill;	/* next rowid << HOT_FILL_BITS | bytes used
									 * in its block (ls_hot_table_reserve_rowid) */
	_Atomic uint64_t rows;
	_Atomic uint64_t versions;
	_Atomic uint64_t bytes;
	_Atomic uint64_t dead_rowids;
	ls_hot	   *hot;
	_Atomic uint64_t allvis_limit;	/* see ls_hot_table_raise_allvis_limit */
	_Atomic uint64_t map_gen;	/* map nodes freed, ever (hints check it) */

	/*
	 * Row reference serial (see ls_hot_row_get_ref): a value of
	 * ls_hot.ref_source, even; bit 0 set once a reference was taken under
	 * it.  Own cache line: lookups read it, inserts must not bounce it.
	 */
	_Atomic uint64_t ref_serial __attribute__((aligned(LS_CACHELINE)));
};

/* ------------------------------------------------------------------------
 * The tier
 * ------------------------------------------------------------------------ */
struct ls_hot
{
	uint64_t	magic;
	uint64_t	region_bytes;
	ls_hot_config cfg;
	ls_hot_ctx *ctxs;
	ls_hot_table *tables;
	hot_page   *pages;
	uint8_t    *heap;
	uint64_t	heap_bytes;
	uint32_t	npages;

	_Atomic uint64_t global_epoch __attribute__((aligned(LS_CACHELINE)));
	/* next table reference serial (steps of 2); not beside global_epoch,
	 * which every epoch entry reads */
	_Atomic uint64_t ref_source __attribute__((aligned(LS_CACHELINE)));

	ls_mutex	page_lock __attribute__((aligned(LS_CACHELINE)));
	uint32_t	fresh_pages;	/* pages [fresh_pages, npages) never carved */
	uint32_t	free_pages;		/* stack of returned pages (HOT_NONE = empty) */

	ls_mutex	table_lock __attribute__((aligned(LS_CACHELINE)));
	ls_mutex	orphan_lock;
	hot_retire_list orphans;	/* handed-off retire lists, sorted by tag */
	_Atomic uint64_t orphan_count;	/* orphans.count, readable without lock */

	/*
	 * Base counters (modulo 2^64).  used/retired: deltas folded in by
	 * detached contexts; free: free pages, page free lists and uncarved
	 * page tails (blocks in process caches are counted by their contexts).
	 */
	_Atomic uint64_t used_bytes __attribute__((aligned(LS_CACHELINE)));
	_Atomic uint64_t free_bytes;
	_Atomic uint64_t slack_bytes;
	_Atomic uint64_t retired_count;
	_Atomic uint64_t retired_bytes;
	_Atomic uint64_t tables_live;

	hot_class	classes[HOT_NCLASS] __attribute__((aligned(LS_CACHELINE)));
};

/* alloc.c */
extern const uint32_t ls_hot_class_size[HOT_NCLASS];
int			hot_class_for(size_t bytes);
void		hot_alloc_init(ls_hot *hot);
ls_status	hot_alloc(ls_hot_ctx *ctx, size_t bytes, void **out);
void		hot_free(ls_hot_ctx *ctx, void *obj);
uint32_t	hot_obj_size(ls_hot *hot, const void *obj);
void		hot_cache_flush_all(ls_hot_ctx *ctx);

static inline hot_blk *
hot_blk_of(const void *obj)
{
	return (hot_blk *) ((uint8_t *) obj - HOT_BLK_HDR);
}

static inline void *
hot_obj_of(hot_blk *b)
{
	return (uint8_t *) b + HOT_BLK_HDR;
}

/* epoch.c */
void		hot_retire(ls_hot_ctx *ctx, void *obj);
uint64_t	hot_reclaim_bound(ls_hot *hot);
void		hot_try_advance(ls_hot *hot);

/* ridmap.c */

/* The objects on the way to a rowid's slot: root .. leaf, then the chunk. */
typedef struct hot_map_path
{
	hot_map_node *node[HOT_MAP_LEVELS];
	hot_map_chunk *chunk;
} hot_map_path;

static inline _Atomic uintptr_t *
hot_path_slot(hot_map_path *path, uint64_t rowid)
{
	return hot_chunk_slot(path->chunk, rowid);
}

ls_status	hot_map_acquire(ls_hot_ctx *ctx, ls_hot_table *tbl, uint64_t rowid,
							hot_map_path *path);
void		hot_map_release(ls_hot_ctx *ctx, ls_hot_table *tbl, uint64_t rowid,
							hot_map_path *path);
bool		hot_map_find(ls_hot_table *tbl, uint64_t rowid, hot_map_path *path);
hot_map_node *hot_map_leaf_find(ls_hot_table *tbl, uint64_t rowid);
void		hot_map_drop(ls_hot_ctx *ctx, ls_hot_table *tbl);

/* row.c */
void		hot_row_retire_all(ls_hot_ctx *ctx, ls_hot_table *tbl, ls_hot_row *row);

/*
 * table.c: row reference serials (ls_hot_row_get_ref).  hot_ref_renew gives
 * the table a fresh serial (create, drop); hot_ref_leaving is called by
 * whoever unlinked a row header from the map, after the unlink and before
 * the header is retired.
 */
void		hot_ref_renew(ls_hot_table *tbl);
void		hot_ref_leaving(ls_hot_table *tbl);

/* table.c: false once the table's drop has begun */
static inline bool
hot_table_is_live(ls_hot_table *tbl)
{
	return (atomic_load(&tbl->state) & HOT_STATE_MASK) == HOT_TABLE_LIVE;
}

#endif							/* LS_HOT_INTERNAL_H */
