/*
 * table.c - region layout, tier initialisation, table descriptors, stats.
 *
 * Region layout (every part cache-line aligned, heap page aligned):
 *   ls_hot | ctx[max_procs] | table[max_tables] | hot_page[npages] | heap
 *
 * Table descriptors form an open-addressed hash table keyed by ls_hot_key
 * with linear probing.  Lookups take no lock: they read a descriptor's state
 * word, its key, and the state word again (the generation in the word moves
 * on every transition).  Create and drop run under table_lock.  A dropped
 * descriptor stays a tombstone until no context can still be inside an
 * epoch that saw the table; only then may create reuse it.
 */
#include <string.h>

#include "hot_internal.h"

#define HOT_MIN_PAGES		16

typedef struct hot_layout
{
	size_t		ctx_off;
	size_t		table_off;
	size_t		page_off;
	size_t		heap_off;
	uint32_t	npages;
} hot_layout;

/* Offsets of the fixed parts; base is the aligned start of the region. */
static size_t
fixed_bytes(const ls_hot_config *cfg, hot_layout *lo)
{
	size_t		off = LS_ALIGN_UP(sizeof(ls_hot), LS_CACHELINE);

	lo->ctx_off = off;
	off += LS_ALIGN_UP((size_t) cfg->max_procs * sizeof(ls_hot_ctx), LS_CACHELINE);
	lo->table_off = off;
	off += LS_ALIGN_UP((size_t) cfg->max_tables * sizeof(ls_hot_table), LS_CACHELINE);
	lo->page_off = off;
	return off;
}

/* Fit as many pages (descriptor + 64 KiB each) as size allows. */
static bool
compute_layout(uintptr_t base, size_t size, const ls_hot_config *cfg, hot_layout *lo)
{
	uintptr_t	start = LS_ALIGN_UP(base, LS_CACHELINE);
	size_t		skip = start - base;
	size_t		fixed = fixed_bytes(cfg, lo);

	if (size < skip + fixed)
		return false;
	size_t		avail = size - skip - fixed;
	uint64_t	n = avail / (HOT_PAGE_SIZE + sizeof(hot_page));

	while (n > 0)
	{
		size_t		heap_off = LS_ALIGN_UP(start + fixed + n * sizeof(hot_page), 4096) - start;

		if (skip + heap_off + n * HOT_PAGE_SIZE <= size)
		{
			lo->heap_off = heap_off;
			break;
		}
		n--;
	}
	if (n < HOT_MIN_PAGES || n > UINT32_MAX - 1)
		return false;
	lo->npages = (uint32_t) n;
	return true;
}

size_t
ls_hot_min_region_size(const ls_hot_config *cfg)
{
	hot_layout	lo;
	size_t		fixed = fixed_bytes(cfg, &lo);

	/* worst case alignment of the start and of the heap */
	return LS_CACHELINE + fixed + HOT_MIN_PAGES * sizeof(hot_page) + 4096 +
		(size_t) HOT_MIN_PAGES * HOT_PAGE_SIZE;
}

ls_status
ls_hot_init(void *region, size_t size, const ls_hot_config *cfg, ls_hot **out)
{
	hot_layout	lo;

	if (region == NULL || cfg == NULL || cfg->max_tables == 0 ||
		cfg->max_procs == 0 || cfg->max_tables > (1u << 24) ||
		cfg->max_procs > (1u << 20))
		return LS_INVALID;
	if (!compute_layout((uintptr_t) region, size, cfg, &lo))
		return LS_NO_SPACE;

	uint8_t    *start = (uint8_t *) LS_ALIGN_UP((uintptr_t) region, LS_CACHELINE);
	ls_hot	   *hot = (ls_hot *) start;

	memset(start, 0, lo.heap_off);
	hot->region_bytes = size;
	hot->cfg = *cfg;
	hot->ctxs = (ls_hot_ctx *) (start + lo.ctx_off);
	hot->tables = (ls_hot_table *) (start + lo.table_off);
	hot->pages = (hot_page *) (start + lo.page_off);
	hot->heap = start + lo.heap_off;
	hot->npages = lo.npages;
	hot->heap_bytes = (uint64_t) lo.npages * HOT_PAGE_SIZE;
	atomic_store(&hot->global_epoch, 1);
	atomic_store(&hot->ref_source, 2);
	ls_mutex_init(&hot->table_lock);
	ls_mutex_init(&hot->orphan_lock);
	for (uint32_t i = 0; i < cfg->max_tables; i++)
	{
		hot->tables[i].index = i;
		hot->tables[i].hot = hot;
	}
	for (uint32_t i = 0; i < lo.npages; i++)
		hot->pages[i].cls = HOT_NCLASS;
	hot_alloc_init(hot);
	atomic_thread_fence(memory_order_seq_cst);
	hot->magic = LS_HOT_MAGIC;
	*out = hot;
	return LS_OK;
}

/* ---- table descriptors ------------------------------------------------------ */

static uint32_t
key_hash(ls_hot_key key)
{
	uint64_t	h = ((uint64_t) key.spc * UINT64_C(0x9E3779B97F4A7C15)) ^
		((uint64_t) key.db * UINT64_C(0xC2B2AE3D27D4EB4F)) ^
		((uint64_t) key.rel * UINT64_C(0x165667B19E3779F9));

	h ^= h >> 29;
	h *= UINT64_C(0xBF58476D1CE4E5B9);
	h ^= h >> 32;
	return (uint32_t) h;
}

static bool
key_matches(ls_hot_table *t, ls_hot_key key)
{
	return atomic_load_explicit(&t->key_spc, memory_order_relaxed) == key.spc &&
		atomic_load_explicit(&t->key_db, memory_order_relaxed) == key.db &&
		atomic_load_explicit(&t->key_rel, memory_order_relaxed) == key.rel;
}

ls_hot_table *
ls_hot_table_find(ls_hot *hot, ls_hot_key key)
{
	uint32_t	n = hot->cfg.max_tables;
	uint32_t	h = key_hash(key) % n;

	for (uint32_t k = 0; k < n; k++)
	{
		ls_hot_table *t = &hot->tables[(h + k) % n];

		for (;;)
		{
			uint64_t	s1 = atomic_load_explicit(&t->state, memory_order_acquire);

			if ((s1 & HOT_STATE_MASK) == HOT_TABLE_FREE)
				return NULL;
			if ((s1 & HOT_STATE_MASK) != HOT_TABLE_LIVE)
				break;
			bool		match = key_matches(t, key);

			atomic_thread_fence(memory_order_acquire);
			if (atomic_load_explicit(&t->state, memory_order_relaxed) != s1)
				continue;		/* changed under us: look again */
			if (match)
				return t;
			break;
		}
	}
	return NULL;
}

static void
set_state(ls_hot_table *t, hot_table_state st)
{
	uint64_t	gen = atomic_load(&t->state) >> 8;

	atomic_store_explicit(&t->state, ((gen + 1) << 8) | (uint64_t) st,
						  memory_order_release);
}

ls_status
ls_hot_table_create(ls_hot_ctx *ctx, ls_hot_key key, ls_hot_table **out)
{
	ls_hot	   *hot = ctx->hot;
	uint32_t	n = hot->cfg.max_tables;
	uint32_t	h = key_hash(key) % n;
	ls_hot_table *pick = NULL;
	uint64_t	min;
	ls_status	st = LS_NO_SPACE;

	/*
	 * A slot dropped below the bound is seen by no context: one that
	 * enters after the bound was computed cannot find a table dropped
	 * before that (hot_reclaim_bound).  Advance first, so a slot dropped in
	 * the current epoch is reusable once nobody is inside.
	 */
	hot_try_advance(hot);
	min = hot_reclaim_bound(hot);

	ls_mutex_lock(&hot->table_lock);
	for (uint32_t k = 0; k < n; k++)
	{
		ls_hot_table *t = &hot->tables[(h + k) % n];
		uint64_t	s = atomic_load(&t->state) & HOT_STATE_MASK;

		if (s == HOT_TABLE_LIVE && key_matches(t, key))
		{
			pick = NULL;
			st = LS_EXISTS;
			break;
		}
		if (s == HOT_TABLE_DROPPED && pick == NULL &&
			atomic_load(&t->drop_epoch) < min)
			pick = t;
		if (s == HOT_TABLE_FREE)
		{
			if (pick == NULL)
				pick = t;
			break;				/* the key cannot be further on */
		}
	}
	if (pick != NULL)
	{
		atomic_store(&pick->key_spc, key.spc);
		atomic_store(&pick->key_db, key.db);
		atomic_store(&pick->key_rel, key.rel);
		atomic_store(&pick->root, NULL);
		atomic_store(&pick->rowid_fill, 0);
		atomic_store(&pick->allvis_limit, 0);
		atomic_store(&pick->rows, 0);
		atomic_store(&pick->versions, 0);
		atomic_store(&pick->bytes, 0);
		atomic_store(&pick->dead_rowids, 0);
		for (int t = 0; t < LS_HOT_TABLE_TAGS; t++)
			atomic_store(&pick->tag[t], 0);
		atomic_store(&pick->drop_epoch, UINT64_MAX);
		/* references taken in the slot's last table never hold here */
		hot_ref_renew(pick);
		set_state(pick, HOT_TABLE_LIVE);
		atomic_fetch_add(&hot->tables_live, 1);
		*out = pick;
		st = LS_OK;
	}
	ls_mutex_unlock(&hot->table_lock);
	return st;
}

void
ls_hot_table_drop(ls_hot_ctx *ctx, ls_hot_table *tbl)
{
	ls_hot	   *hot = ctx->hot;

	ls_mutex_lock(&hot->table_lock);
	if ((atomic_load(&tbl->state) & HOT_STATE_MASK) != HOT_TABLE_LIVE)
	{
		ls_mutex_unlock(&hot->table_lock);
		return;
	}
	/* Not reusable (drop_epoch = max) until the map has been retired. */
	atomic_store(&tbl->drop_epoch, UINT64_MAX);
	set_state(tbl, HOT_TABLE_DROPPED);
	atomic_fetch_sub(&hot->tables_live, 1);
	ls_mutex_unlock(&hot->table_lock);

	hot_map_drop(ctx, tbl);		/* renews the reference serial */

	atomic_thread_fence(memory_order_seq_cst);
	atomic_store(&tbl->drop_epoch, atomic_load(&hot->global_epoch));
}

/* ------------------------------------------------------------------------
 * Row reference serials
 *
 * Protocol (all seq_cst, so that the two sides below cannot both miss each
 * other, as in Dekker's mutual exclusion):
 *   taker:   fetch_or(serial, 1) -> s|1 (a load that already sees s|1
 *            will do);  then read the map slot.
 *   remover: unlink the slot;  then load serial; if bit 0 is set, replace
 *            the word by a fresh even value (CAS from what it read; a
 *            failed CAS means another remover replaced it after our
 *            unlink, which serves us as well); then retire the header.
 * Either the taker's slot read sees the unlink (it never remembers the
 * header) or the remover's load sees bit 0 and the serial the taker
 * remembered is gone before the header is retired.  A reader whose load of
 * the serial, inside its epoch, still returns s|1 read it before that
 * replacement, so the header's retirement came after the reader's epoch
 * began (epoch-based reclamation keeps it).  Serials are taken from
 * ls_hot.ref_source in steps of 2 (2^63 changes before a repeat).
 * ------------------------------------------------------------------------ */
void
hot_ref_renew(ls_hot_table *tbl)
{
	uint64_t	fresh = atomic_fetch_add(&tbl->hot->ref_source, 2);

	atomic_store(&tbl->ref_serial, fresh);
}

void
hot_ref_leaving(ls_hot_table *tbl)
{
	uint64_t	seen;

	atomic_thread_fence(memory_order_seq_cst);	/* the unlink comes first */
	seen = atomic_load(&tbl->ref_serial);
	if ((seen & 1) != 0)
	{
		uint64_t	fresh = atomic_fetch_add(&tbl->hot->ref_source, 2);

		LS_ASSERT((fresh & 1) == 0);
		(void) atomic_compare_exchange_strong(&tbl->ref_serial, &seen, fresh);
	}
}

ls_hot_table *
ls_hot_table_next(ls_hot *hot, uint32_t *cursor)
{
	for (uint32_t i = *cursor; i < hot->cfg.max_tables; i++)
	{
		ls_hot_table *t = &hot->tables[i];

		if ((atomic_load_explicit(&t->state, memory_order_acquire) & HOT_STATE_MASK) ==
			HOT_TABLE_LIVE)
		{
			*cursor = i + 1;
			return t;
		}
	}
	*cursor = hot->cfg.max_tables;
	return NULL;
}

ls_hot_key
ls_hot_table_get_key(const ls_hot_table *tbl)
{
	ls_hot_key	key;

	key.spc = atomic_load(&tbl->key_spc);
	key.db = atomic_load(&tbl->key_db);
	key.rel = atomic_load(&tbl->key_rel);
	return key;
}

_Static_assert(LS_HOT_FILL_MAX == (UINT32_C(1) << HOT_FILL_BITS) - 1,
			   "fill field width");
_Static_assert(LS_HOT_MAX_ROWID <= (UINT64_C(1) << (64 - HOT_FILL_BITS)),
			   "rowid field width");

static inline uint64_t
hot_fill_word(uint64_t next, uint32_t used)
{
	return (next << HOT_FILL_BITS) | used;
}

/*
 * One row's step of the fill rule (hot.h): from the state (*rowid, *used)
 * before it, *rowid becomes the row's rowid and the returned word the state
 * after it.  false when that rowid would reach LS_HOT_MAX_ROWID.
 */
static inline bool
hot_fill_step(uint64_t *rowid, uint32_t *used, uint32_t rows_per_block,
			  uint32_t capacity, uint32_t need, uint32_t want)
{
	uint64_t	r = *rowid;
	uint32_t	u = *used;

	if (need > LS_HOT_FILL_MAX)
		need = LS_HOT_FILL_MAX;
	if (want > LS_HOT_FILL_MAX)
		want = LS_HOT_FILL_MAX;
	if (r % rows_per_block != 0 && (uint64_t) u + want > capacity)
	{
		/* does not fit: the next block, whose first row it is */
		r += rows_per_block - r % rows_per_block;
		u = 0;
	}
	if (r >= LS_HOT_MAX_ROWID)
		return false;
	*rowid = r;
	if ((r + 1) % rows_per_block == 0)
		*used = 0;				/* block full by row count: next one is empty */
	else
		*used = (uint32_t) ((uint64_t) u + need > LS_HOT_FILL_MAX ? LS_HOT_FILL_MAX : u + need);
	return true;
}

uint64_t
ls_hot_table_reserve_rowid(ls_hot_table *tbl, uint32_t rows_per_block,
						   uint32_t capacity, uint32_t need, uint32_t want)
{
	uint64_t	out;

	return ls_hot_table_reserve_rowids(tbl, rows_per_block, capacity, &need, &want, 1,
									   &out) == LS_OK ? out : LS_ROWID_INVALID;
}

ls_status
ls_hot_table_reserve_rowids(ls_hot_table *tbl, uint32_t rows_per_block,
							uint32_t capacity, const uint32_t *need,
							const uint32_t *want, uint32_t n, uint64_t *out)
{
	uint64_t	word = atomic_load(&tbl->rowid_fill);

	LS_ASSERT(rows_per_block >= 1 && capacity <= LS_HOT_FILL_MAX);
	if (rows_per_block == 0)
		rows_per_block = 1;
	if (n == 0)
		return LS_OK;
	for (;;)
	{
		uint64_t	rowid = word >> HOT_FILL_BITS;
		uint32_t	used = (uint32_t) (word & LS_HOT_FILL_MAX);

		for (uint32_t i = 0; i < n; i++)
		{
			if (!hot_fill_step(&rowid, &used, rows_per_block, capacity, need[i], want[i]))
				return LS_NO_SPACE;
			out[i] = rowid++;
		}
		/* one CAS for the whole batch: its rowids are ours only if it holds */
		if (atomic_compare_exchange_weak(&tbl->rowid_fill, &word, hot_fill_word(rowid, used)))
			return LS_OK;
	}
}

uint64_t
ls_hot_table_rowid_limit(const ls_hot_table *tbl)
{
	return atomic_load(&tbl->rowid_fill) >> HOT_FILL_BITS;
}

void
ls_hot_table_get_fill(const ls_hot_table *tbl, uint64_t *next, uint32_t *used)
{
	uint64_t	word = atomic_load(&tbl->rowid_fill);

	*next = word >> HOT_FILL_BITS;
	*used = (uint32_t) (word & LS_HOT_FILL_MAX);
}

void
ls_hot_table_set_fill(ls_hot_table *tbl, uint64_t next, uint32_t used)
{
	uint64_t	word = atomic_load(&tbl->rowid_fill);

	if (next > LS_HOT_MAX_ROWID)
		next = LS_HOT_MAX_ROWID;
	if (used > LS_HOT_FILL_MAX)
		used = LS_HOT_FILL_MAX;
	while ((word >> HOT_FILL_BITS) < next)
	{
		if (atomic_compare_exchange_weak(&tbl->rowid_fill, &word,
										 hot_fill_word(next, used)))
			break;
	}
}

void
ls_hot_table_raise_allvis_limit(ls_hot_table *tbl, uint64_t limit)
{
	ls_atomic_raise_u64(&tbl->allvis_limit, limit);
}

uint64_t
ls_hot_table_allvis_limit(const ls_hot_table *tbl)
{
	return atomic_load(&tbl->allvis_limit);
}

void
ls_hot_table_reset_allvis_limit(ls_hot_table *tbl)
{
	atomic_store(&tbl->allvis_limit, 0);
}

void
ls_hot_table_get_stats(const ls_hot_table *tbl, ls_hot_table_stats *out)
{
	out->rows = atomic_load_explicit(&tbl->rows, memory_order_relaxed);
	out->versions = atomic_load_explicit(&tbl->versions, memory_order_relaxed);
	out->bytes = atomic_load_explicit(&tbl->bytes, memory_order_relaxed);
	out->dead_rowids = atomic_load_explicit(&tbl->dead_rowids, memory_order_relaxed);
}

uint32_t
ls_hot_table_get_tag(const ls_hot_table *tbl, int which)
{
	if (which < 0 || which >= LS_HOT_TABLE_TAGS)
		return 0;
	return atomic_load(&tbl->tag[which]);
}

void
ls_hot_table_set_tag(ls_hot_table *tbl, int which, uint32_t value)
{
	if (which < 0 || which >= LS_HOT_TABLE_TAGS)
		return;
	atomic_store(&tbl->tag[which], value);
}

/*
 * Tier totals.  Rows and versions are the sums of the per-table counters
 * (max_tables loads, no row is visited); the byte counters are global.
 */
void
ls_hot_get_fill(ls_hot *hot, uint64_t *used_bytes, uint64_t *heap_bytes)
{
	uint64_t	used = atomic_load(&hot->used_bytes);

	/* as ls_hot_get_stats adds them */
	for (uint32_t i = 0; i < hot->cfg.max_procs; i++)
		used += (uint64_t) atomic_load_explicit(&hot->ctxs[i].used_delta, memory_order_relaxed);
	*used_bytes = used;
	*heap_bytes = hot->heap_bytes;
}

void
ls_hot_get_stats(ls_hot *hot, ls_hot_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->region_bytes = hot->region_bytes;
	out->heap_bytes = hot->heap_bytes;
	out->used_bytes = atomic_load(&hot->used_bytes);
	out->free_bytes = atomic_load(&hot->free_bytes);
	out->slack_bytes = atomic_load(&hot->slack_bytes);
	out->tables = atomic_load(&hot->tables_live);
	out->retired_pending = atomic_load(&hot->retired_count);
	out->retired_bytes = atomic_load(&hot->retired_bytes);
	out->epoch = atomic_load(&hot->global_epoch);
	/* plus every context's own deltas (unsigned wrap-around adds them) */
	for (uint32_t i = 0; i < hot->cfg.max_procs; i++)
	{
		ls_hot_ctx *c = &hot->ctxs[i];

		out->used_bytes += (uint64_t) atomic_load_explicit(&c->used_delta, memory_order_relaxed);
		out->free_bytes += (uint64_t) atomic_load_explicit(&c->cached_bytes, memory_order_relaxed);
		out->retired_pending +=
			(uint64_t) atomic_load_explicit(&c->retired_count_delta, memory_order_relaxed);
		out->retired_bytes +=
			(uint64_t) atomic_load_explicit(&c->retired_bytes_delta, memory_order_relaxed);
	}
	for (uint32_t i = 0; i < hot->cfg.max_tables; i++)
	{
		ls_hot_table *t = &hot->tables[i];

		out->rows += atomic_load_explicit(&t->rows, memory_order_relaxed);
		out->versions += atomic_load_explicit(&t->versions, memory_order_relaxed);
	}
}
