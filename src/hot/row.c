/*
 * row.c - row headers, version chains and the per-row writer latch.
 *
 * A chain runs newest -> older -> ... -> NULL.  Writers change it only under
 * the row latch; readers walk it without any latch inside an epoch, so every
 * change keeps the chain a valid list at every instant:
 *  - install publishes a fully built version with one release store;
 *  - uninstall/truncate cut links with one store and leave the cut-off
 *    versions' own links intact (a reader standing on one finishes its walk
 *    through memory that stays valid until the reader leaves its epoch);
 *  - remove sets newest to NULL before the map slot changes, so a reader or
 *    a latch waiter holding the header sees an empty row, never freed memory.
 * Map slots and their occupancy bits: see the rules at the top of ridmap.c.
 */
#include <string.h>

#include "hot_internal.h"
#include "leanstore/common.h"

#define HOT_LATCH_SPINS		128

/* ---- versions ------------------------------------------------------------- */

ls_status
ls_hot_version_alloc(ls_hot_ctx *ctx, uint32_t len, ls_hot_version **out)
{
	ls_hot_version *v;
	ls_status	st;

	if (len > LS_HOT_MAX_PAYLOAD)
		return LS_TOO_LARGE;
	st = hot_alloc(ctx, sizeof(ls_hot_version) + len, (void **) &v);
	if (st != LS_OK)
		return st;
	atomic_init(&v->xmin_word, 0);
	atomic_init(&v->xmax_word, 0);
	v->cmin = 0;
	atomic_init(&v->cmax, 0);
	atomic_init(&v->next_rowid, LS_ROWID_INVALID);
	atomic_init(&v->older, NULL);
	v->len = len;
	/* the block's class, larger than len needs when the block was borrowed */
	v->size_class = (uint16_t) hot_class_for(hot_obj_size(ctx->hot, v));
	atomic_init(&v->user_flags, 0);
	*out = v;
	return LS_OK;
}

void
ls_hot_version_free(ls_hot_ctx *ctx, ls_hot_version *v)
{
	hot_free(ctx, v);
}

/* ---- latch (0 free, 1 held, 2 held with possible waiters) -------------------- */

bool
ls_hot_row_trylock(ls_hot_row *row)
{
	uint32_t	expected = 0;

	return atomic_compare_exchange_strong_explicit(&row->latch, &expected, 1,
												   memory_order_acquire,
												   memory_order_relaxed);
}

void
ls_hot_row_lock(ls_hot_row *row)
{
	for (int i = 0; i < HOT_LATCH_SPINS; i++)
	{
		if (atomic_load_explicit(&row->latch, memory_order_relaxed) == 0 &&
			ls_hot_row_trylock(row))
			return;
		ls_cpu_relax();
	}
	/* Announce a waiter (2) and sleep until the holder's unlock wakes us. */
	while (atomic_exchange_explicit(&row->latch, 2, memory_order_acquire) != 0)
		ls_futex_wait(&row->latch, 2, 0);
}

void
ls_hot_row_unlock(ls_hot_row *row)
{
	LS_ASSERT(ls_hot_row_is_latched(row));
	if (atomic_exchange_explicit(&row->latch, 0, memory_order_release) == 2)
		ls_futex_wake(&row->latch, 1);
}

/* ---- chain changes (row latch held) ------------------------------------- */

static void
version_retire(ls_hot_ctx *ctx, ls_hot_table *tbl, ls_hot_version *v)
{
	atomic_fetch_sub(&tbl->versions, 1);
	atomic_fetch_sub(&tbl->bytes, hot_obj_size(ctx->hot, v));
	hot_retire(ctx, v);
}

/* Retire a detached chain; its links are stable (nobody can reach it to
 * change them) and are left intact for readers still walking it. */
static void
chain_retire(ls_hot_ctx *ctx, ls_hot_table *tbl, ls_hot_version *v)
{
	while (v != NULL)
	{
		ls_hot_version *older = ls_hot_version_older(v);

		version_retire(ctx, tbl, v);
		v = older;
	}
}

void
ls_hot_row_install(ls_hot_ctx *ctx, ls_hot_table *tbl, ls_hot_row *row, ls_hot_version *v)
{
	ls_hot_version *cur = atomic_load_explicit(&row->newest, memory_order_relaxed);

	LS_ASSERT(ls_hot_in_epoch(ctx));
	LS_ASSERT(ls_hot_row_is_latched(row));
	LS_ASSERT(cur != NULL);		/* a removed row gets no new version */
	LS_ASSERT(v != cur);
	atomic_store_explicit(&v->older, cur, memory_order_relaxed);
	atomic_fetch_add(&tbl->versions, 1);
	atomic_fetch_add(&tbl->bytes, hot_obj_size(ctx->hot, v));
	atomic_store_explicit(&row->newest, v, memory_order_release);
}

ls_status
ls_hot_row_uninstall_newest(ls_hot_ctx *ctx, ls_hot_table *tbl, ls_hot_row *row)
{
	ls_hot_version *v = atomic_load_explicit(&row->newest, memory_order_relaxed);
	ls_hot_version *older;

	LS_ASSERT(ls_hot_in_epoch(ctx));
	LS_ASSERT(ls_hot_row_is_latched(row));
	if (v == NULL)
		return LS_NOT_FOUND;
	older = ls_hot_version_older(v);
	if (older == NULL)
		return LS_INVALID;		/* the only version: remove the row instead */
	atomic_store_explicit(&row->newest, older, memory_order_release);
	version_retire(ctx, tbl, v);
	return LS_OK;
}

void
ls_hot_row_truncate(ls_hot_ctx *ctx, ls_hot_table *tbl, ls_hot_row *row, ls_hot_version *keep)
{
	ls_hot_version *cut;

	LS_ASSERT(ls_hot_in_epoch(ctx));
	LS_ASSERT(ls_hot_row_is_latched(row));
	LS_ASSERT(keep != NULL);
	(void) row;
	cut = atomic_exchange_explicit(&keep->older, NULL, memory_order_acq_rel);
	chain_retire(ctx, tbl, cut);
}

/* ---- rows ------------------------------------------------------------------- */

/* a row header is half a cache line: every hot row pays for it */
_Static_assert(sizeof(ls_hot_row) == 32, "ls_hot_row grew");

ls_status
ls_hot_row_insert(ls_hot_ctx *ctx, ls_hot_table *tbl, uint64_t rowid,
				  ls_hot_origin origin, ls_hot_version *v, ls_hot_row **out)
{
	return ls_hot_row_insert_marked(ctx, tbl, rowid, origin, v, 0, 0, out);
}

ls_status
ls_hot_row_insert_marked(ls_hot_ctx *ctx, ls_hot_table *tbl, uint64_t rowid,
						 ls_hot_origin origin, ls_hot_version *v, uint32_t logged_xid,
						 uint8_t logged_flags, ls_hot_row **out)
{
	hot_map_path path;
	hot_map_node *leaf;
	_Atomic uintptr_t *slot;
	ls_hot_row *row;
	ls_status	st;

	LS_ASSERT(ls_hot_in_epoch(ctx));
	LS_ASSERT(v != NULL && v->len <= LS_HOT_MAX_PAYLOAD);
	if (rowid >= LS_HOT_MAX_ROWID)
		return LS_INVALID;

	/*
	 * A reference on the chunk (published, so the bit below may be set):
	 * it cannot be freed under us; on success it becomes the slot's.
	 */
	st = hot_map_acquire(ctx, tbl, rowid, &path);
	if (st != LS_OK)
		return st;
	leaf = path.node[HOT_MAP_LEVELS - 1];
	slot = hot_path_slot(&path, rowid);

	uintptr_t	cur = atomic_load_explicit(slot, memory_order_acquire);

	if (cur != 0 && cur != HOT_SLOT_BUSY)
	{
		hot_map_release(ctx, tbl, rowid, &path);
		return LS_EXISTS;
	}
	st = hot_alloc(ctx, sizeof(ls_hot_row), (void **) &row);
	if (st != LS_OK)
	{
		hot_map_release(ctx, tbl, rowid, &path);
		return st;
	}
	memset(row, 0, sizeof(*row));
	row->rowid = rowid;
	row->origin = (uint8_t) origin;
	/* before the row is published (the slot's CAS below orders it) */
	atomic_store_explicit(&row->logged_xid, logged_xid, memory_order_relaxed);
	atomic_store_explicit(&row->logged_flags, logged_flags, memory_order_relaxed);
	/* held until the occupancy bit is checked below: no remove before */
	atomic_store_explicit(&row->latch, 1, memory_order_relaxed);
	atomic_store_explicit(&v->older, NULL, memory_order_relaxed);
	atomic_store_explicit(&row->newest, v, memory_order_relaxed);

	for (;;)
	{
		uintptr_t	expected = 0;

		/*
		 * Bit and count first: a published row always has its occupancy bit
		 * and leaf->live never under-counts published rows.
		 */
		hot_occ_set(leaf, rowid);
		atomic_fetch_add(&leaf->live, 1);
		if (atomic_compare_exchange_strong(slot, &expected, (uintptr_t) row))
			break;
		atomic_fetch_sub(&leaf->live, 1);
		if (expected != HOT_SLOT_BUSY)
		{
			hot_free(ctx, row); /* never published */
			hot_map_release(ctx, tbl, rowid, &path);
			return LS_EXISTS;
		}
		/* going back to NULL (remove or forget): wait for it, try again */
		while (atomic_load(slot) == HOT_SLOT_BUSY)
			ls_cpu_relax();
	}

	/*
	 * Again after the CAS: between our bit set and the CAS the slot may have
	 * gone row -> BUSY -> NULL with its bit cleared (only when a rowid is
	 * inserted again after removal).  The row's latch keeps it from being
	 * removed before this.
	 */
	hot_occ_set(leaf, rowid);
	ls_hot_row_unlock(row);
	atomic_fetch_add(&tbl->rows, 1);
	atomic_fetch_add(&tbl->versions, 1);
	atomic_fetch_add(&tbl->bytes, hot_obj_size(ctx->hot, row) + hot_obj_size(ctx->hot, v));
	if (out != NULL)
		*out = row;
	return LS_OK;
}

/*
 * Retire a row that is already unreachable through the map (table drop).
 * Whoever takes the chain out of the header (this or ls_hot_row_remove)
 * retires the row, so a racing remove can never retire it twice; a racing
 * evict (which leaves the chain in the header) is kept off by the evicted
 * flag: whoever sets it first owns the row.
 */
void
hot_row_retire_all(ls_hot_ctx *ctx, ls_hot_table *tbl, ls_hot_row *row)
{
	if (atomic_exchange(&row->evicted, 1) != 0)
		return;					/* an evict owns it */

	ls_hot_version *chain = atomic_exchange(&row->newest, NULL);

	if (chain == NULL)
		return;
	chain_retire(ctx, tbl, chain);
	atomic_fetch_sub(&tbl->rows, 1);
	atomic_fetch_sub(&tbl->bytes, hot_obj_size(ctx->hot, row));
	hot_retire(ctx, row);
}

void
ls_hot_row_evict(ls_hot_ctx *ctx, ls_hot_table *tbl, ls_hot_row *row)
{
	hot_map_path path;
	bool		found = hot_map_find(tbl, row->rowid, &path);
	ls_hot_version *chain = atomic_load(&row->newest);
	uint8_t		was;

	LS_ASSERT(ls_hot_in_epoch(ctx));
	LS_ASSERT(ls_hot_row_is_latched(row));
	was = atomic_exchange(&row->evicted, 1);

	if (chain != NULL && was == 0)
	{
		hot_map_node *leaf = found ? path.node[HOT_MAP_LEVELS - 1] : NULL;
		_Atomic uintptr_t *slot = found ? hot_path_slot(&path, row->rowid) : NULL;
		uintptr_t	expected = (uintptr_t) row;
		bool		mine = slot != NULL &&
			atomic_compare_exchange_strong(slot, &expected, HOT_SLOT_BUSY);

		/*
		 * Neither removed nor evicted: it sits in its slot (latch held),
		 * unless the table's drop has begun (it claims rows through the
		 * evicted flag we won, and leaves the map's slots alone).
		 */
		LS_ASSERT(mine || !hot_table_is_live(tbl));
		if (mine)
		{
			atomic_fetch_sub(&leaf->live, 1);
			/* BUSY is ours: clear the occupancy bit, then NULL */
			hot_occ_clear(leaf, row->rowid);
			atomic_store(slot, 0);
			hot_map_release(ctx, tbl, row->rowid, &path);	/* the slot's */
		}
	}
	ls_hot_row_unlock(row);
	if (chain == NULL || was != 0)
		return;					/* removed before: nothing left to retire */
	hot_ref_leaving(tbl);
	chain_retire(ctx, tbl, chain);
	atomic_fetch_sub(&tbl->rows, 1);
	atomic_fetch_sub(&tbl->bytes, hot_obj_size(ctx->hot, row));
	hot_retire(ctx, row);
}

void
ls_hot_row_remove(ls_hot_ctx *ctx, ls_hot_table *tbl, ls_hot_row *row, bool mark_dead)
{
	hot_map_path path;
	bool		found;
	hot_map_node *leaf;
	_Atomic uintptr_t *slot;
	ls_hot_version *chain;

	LS_ASSERT(ls_hot_in_epoch(ctx));
	LS_ASSERT(ls_hot_row_is_latched(row));
	if (atomic_load(&row->evicted) != 0)
	{
		/* evicted meanwhile: its slot and memory are not ours any more */
		ls_hot_row_unlock(row);
		return;
	}
	found = hot_map_find(tbl, row->rowid, &path);
	leaf = found ? path.node[HOT_MAP_LEVELS - 1] : NULL;
	slot = found ? hot_path_slot(&path, row->rowid) : NULL;
	chain = atomic_exchange(&row->newest, NULL);
	/* not removed before (chain) nor evicted: it sits in its slot (or drop) */
	LS_ASSERT(chain == NULL || (slot != NULL && atomic_load(slot) == (uintptr_t) row) ||
			  !hot_table_is_live(tbl));

	if (slot != NULL)
	{
		uintptr_t	expected = (uintptr_t) row;

		if (mark_dead)
		{
			atomic_fetch_add(&leaf->dead, 1);
			atomic_fetch_add(&tbl->dead_rowids, 1);
		}
		if (atomic_compare_exchange_strong(slot, &expected,
										   mark_dead ? HOT_SLOT_DEAD : HOT_SLOT_BUSY))
		{
			atomic_fetch_sub(&leaf->live, 1);
			if (!mark_dead)
			{
				/* BUSY is ours: clear the occupancy bit, then NULL */
				hot_occ_clear(leaf, row->rowid);
				atomic_store(slot, 0);
				hot_map_release(ctx, tbl, row->rowid, &path);	/* the slot's */
			}
			/* DEAD keeps the slot's reference: the chunk stays */
		}
		else if (mark_dead)
		{
			/* not our slot (already removed): undo the DEAD count */
			atomic_fetch_sub(&leaf->dead, 1);
			atomic_fetch_sub(&tbl->dead_rowids, 1);
		}
	}
	ls_hot_row_unlock(row);
	if (chain == NULL)
		return;					/* removed before: nothing left to retire */
	hot_ref_leaving(tbl);
	chain_retire(ctx, tbl, chain);
	atomic_fetch_sub(&tbl->rows, 1);
	atomic_fetch_sub(&tbl->bytes, hot_obj_size(ctx->hot, row));
	hot_retire(ctx, row);
}
