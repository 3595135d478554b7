/*
 * epoch.c - per-process contexts and epoch-based reclamation.
 *
 * Protocol (all fences sequentially consistent):
 *   reader:  local = global; fence; ... read shared pointers ...; local = 0
 *   writer:  unlink object; fence; tag = global; append to own retire FIFO
 *   reclaim: advance global if every active context has seen it;
 *            free every retired object whose tag < min(active locals).
 * A reader that can still reach an object read the pointer before the
 * unlink, so its local epoch (set before that read) is <= the tag, and the
 * object stays until that reader leaves.  See README.md.
 */
#include "hot_internal.h"

/* Retirements after which leaving the outermost epoch tries to reclaim. */
#define HOT_RECLAIM_EVERY	64
/*
 * A context that still holds this much retired memory after reclaiming
 * hands it to the orphan list: the process may go idle for a long time
 * (e.g. after DROP TABLE) and nobody else may touch its private list.
 */
#define HOT_HANDOFF_COUNT	256
#define HOT_HANDOFF_BYTES	(256u * 1024)

ls_status
ls_hot_attach(ls_hot *hot, uint32_t slot, ls_hot_ctx **out)
{
	uint32_t	expected = 0;
	ls_hot_ctx *ctx;

	if (hot == NULL || hot->magic != LS_HOT_MAGIC || slot >= hot->cfg.max_procs)
		return LS_INVALID;
	ctx = &hot->ctxs[slot];
	if (!atomic_compare_exchange_strong(&ctx->attached, &expected, 1))
		return LS_BUSY;
	ctx->slot = slot;
	ctx->hot = hot;
	ctx->depth = 0;
	ctx->retired_since_reclaim = 0;
	ctx->retired = (hot_retire_list) {0};
	atomic_store(&ctx->used_delta, 0);
	atomic_store(&ctx->cached_bytes, 0);
	atomic_store(&ctx->retired_count_delta, 0);
	atomic_store(&ctx->retired_bytes_delta, 0);
	for (int c = 0; c < HOT_NCLASS; c++)
		ctx->cache[c] = (hot_cache) {0};
	atomic_store(&ctx->local_epoch, 0);
	*out = ctx;
	return LS_OK;
}

/*
 * Merge src into dst keeping dst sorted by tag (both are sorted).  src is
 * usually younger than all of dst, which is the O(1) append case.
 */
static void
retire_list_merge(hot_retire_list *dst, hot_retire_list *src)
{
	hot_blk    *a = dst->head;
	hot_blk    *b = src->head;
	hot_blk    *head = NULL;
	hot_blk    *tail = NULL;

	if (b == NULL)
		return;
	if (dst->tail != NULL && dst->tail->tag <= b->tag)
	{
		dst->tail->next = b;
		dst->tail = src->tail;
	}
	else
	{
		while (a != NULL || b != NULL)
		{
			hot_blk   **take = (b == NULL || (a != NULL && a->tag <= b->tag)) ? &a : &b;
			hot_blk    *x = *take;

			*take = x->next;
			x->next = NULL;
			if (tail != NULL)
				tail->next = x;
			else
				head = x;
			tail = x;
		}
		dst->head = head;
		dst->tail = tail;
	}
	dst->count += src->count;
	dst->bytes += src->bytes;
	*src = (hot_retire_list) {0};
}

/* Give our retire list to the shared orphan list, reclaimed by anyone. */
static void
hand_off(ls_hot_ctx *ctx)
{
	ls_hot	   *hot = ctx->hot;

	if (ctx->retired.head == NULL)
		return;
	ls_mutex_lock(&hot->orphan_lock);
	retire_list_merge(&hot->orphans, &ctx->retired);
	atomic_store(&hot->orphan_count, hot->orphans.count);
	ls_mutex_unlock(&hot->orphan_lock);
}

/* Move a detaching context's deltas into the tier's base counters. */
static void
fold_counters(ls_hot_ctx *ctx)
{
	ls_hot	   *hot = ctx->hot;

	atomic_fetch_add(&hot->used_bytes, (uint64_t) atomic_exchange(&ctx->used_delta, 0));
	atomic_fetch_add(&hot->retired_count,
					 (uint64_t) atomic_exchange(&ctx->retired_count_delta, 0));
	atomic_fetch_add(&hot->retired_bytes,
					 (uint64_t) atomic_exchange(&ctx->retired_bytes_delta, 0));
	/* the caches are empty after the flush */
	atomic_fetch_add(&hot->free_bytes, (uint64_t) atomic_exchange(&ctx->cached_bytes, 0));
}

/*
 * Detach: leave any epoch still held, reclaim what we can, hand the rest of
 * the retire list to the shared orphan list and give cached blocks back.
 */
void
ls_hot_detach(ls_hot_ctx *ctx)
{
	ctx->depth = 0;
	atomic_store(&ctx->local_epoch, 0);
	ls_hot_reclaim(ctx);
	hand_off(ctx);
	hot_cache_flush_all(ctx);
	fold_counters(ctx);
	atomic_store(&ctx->attached, 0);
}

void
ls_hot_epoch_enter(ls_hot_ctx *ctx)
{
	LS_ASSERT(atomic_load(&ctx->attached) != 0);
	if (ctx->depth++ > 0)
		return;
	atomic_store(&ctx->local_epoch, atomic_load(&ctx->hot->global_epoch));
	/* Our local epoch must be visible before we read any shared pointer. */
	atomic_thread_fence(memory_order_seq_cst);
}

void
ls_hot_epoch_exit(ls_hot_ctx *ctx)
{
	if (ctx->depth == 0 || --ctx->depth > 0)
		return;
	atomic_store_explicit(&ctx->local_epoch, 0, memory_order_release);
	if (ctx->retired.head == NULL)
		return;
	if (ctx->retired_since_reclaim >= HOT_RECLAIM_EVERY)
		ls_hot_reclaim(ctx);
	if (ctx->retired.count >= HOT_HANDOFF_COUNT ||
		ctx->retired.bytes >= HOT_HANDOFF_BYTES)
		hand_off(ctx);
}

void
ls_hot_epoch_exit_all(ls_hot_ctx *ctx)
{
	if (ctx->depth == 0)
		return;
	ctx->depth = 1;
	ls_hot_epoch_exit(ctx);
}

bool
ls_hot_in_epoch(const ls_hot_ctx *ctx)
{
	return ctx->depth > 0;
}

/*
 * The reclaim bound: no context can reach, now or later, an object retired
 * with a tag below it.  It is the smallest local epoch of the contexts
 * inside an epoch, capped by the global epoch read before they are
 * scanned.  The cap matters when the scan finds nobody inside: a context
 * that enters right after the scan is not in it, and it may reach an
 * object that another context unlinks and retires after the scan (and
 * hands off to the orphan list).  That object's tag is the global epoch at
 * its retirement, at least the value read here, so the cap keeps it.
 * Without the cap the bound was infinity, and a reclaimer that took the
 * orphan lock after such a hand-off freed objects a reader still used (a
 * hint bit the reader then set landed in the block's next owner).
 */
uint64_t
hot_reclaim_bound(ls_hot *hot)
{
	uint64_t	min = atomic_load(&hot->global_epoch);

	/* the global epoch is read before any local one */
	atomic_thread_fence(memory_order_seq_cst);
	for (uint32_t i = 0; i < hot->cfg.max_procs; i++)
	{
		uint64_t	e = atomic_load(&hot->ctxs[i].local_epoch);

		if (e != 0 && e < min)
			min = e;
	}
	return min;
}

/* Advance the global epoch when every active context has observed it. */
void
hot_try_advance(ls_hot *hot)
{
	uint64_t	g = atomic_load(&hot->global_epoch);

	for (uint32_t i = 0; i < hot->cfg.max_procs; i++)
	{
		uint64_t	e = atomic_load(&hot->ctxs[i].local_epoch);

		if (e != 0 && e != g)
			return;
	}
	atomic_compare_exchange_strong(&hot->global_epoch, &g, g + 1);
}

/* Retire obj: it is already unreachable for readers that enter from now on. */
void
hot_retire(ls_hot_ctx *ctx, void *obj)
{
	ls_hot	   *hot = ctx->hot;
	hot_blk    *b = hot_blk_of(obj);
	uint32_t	size = hot_obj_size(hot, obj);
	hot_retire_list *l = &ctx->retired;

	atomic_thread_fence(memory_order_seq_cst);
	b->tag = atomic_load(&hot->global_epoch);
	b->next = NULL;
	if (l->tail != NULL)
		l->tail->next = b;
	else
		l->head = b;
	l->tail = b;
	l->count++;
	l->bytes += size;
	ctx->retired_since_reclaim++;
	hot_ctx_add(&ctx->retired_count_delta, 1);
	hot_ctx_add(&ctx->retired_bytes_delta, size);
}

static void
free_retired(ls_hot_ctx *ctx, hot_blk *b)
{
	ls_hot	   *hot = ctx->hot;
	void	   *obj = hot_obj_of(b);

	hot_ctx_add(&ctx->retired_count_delta, -1);
	hot_ctx_add(&ctx->retired_bytes_delta, -(int64_t) hot_obj_size(hot, obj));
	hot_free(ctx, obj);
}

/*
 * Free the blocks at the head of a retire list whose tag is below min.
 * Tags never decrease along a list (own FIFO, and the orphan list is kept
 * sorted), so stop at the first one still needed.
 */
static void
reclaim_list(ls_hot_ctx *ctx, hot_retire_list *l, uint64_t min)
{
	while (l->head != NULL && l->head->tag < min)
	{
		hot_blk    *b = l->head;

		l->head = b->next;
		if (l->head == NULL)
			l->tail = NULL;
		l->count--;
		l->bytes -= hot_obj_size(ctx->hot, hot_obj_of(b));
		free_retired(ctx, b);
	}
}

static void
reclaim_orphans(ls_hot_ctx *ctx, uint64_t min)
{
	ls_hot	   *hot = ctx->hot;

	if (!ls_mutex_trylock(&hot->orphan_lock))
		return;
	reclaim_list(ctx, &hot->orphans, min);
	atomic_store(&hot->orphan_count, hot->orphans.count);
	ls_mutex_unlock(&hot->orphan_lock);
}

void
ls_hot_reclaim(ls_hot_ctx *ctx)
{
	ls_hot	   *hot = ctx->hot;
	uint64_t	min;

	hot_try_advance(hot);
	min = hot_reclaim_bound(hot);
	reclaim_list(ctx, &ctx->retired, min);
	if (atomic_load_explicit(&hot->orphan_count, memory_order_relaxed) > 0)
		reclaim_orphans(ctx, min);
	ctx->retired_since_reclaim = 0;
}

uint32_t
ls_hot_attached_count(ls_hot *hot)
{
	uint32_t	n = 0;

	for (uint32_t i = 0; i < hot->cfg.max_procs; i++)
		n += atomic_load(&hot->ctxs[i].attached) != 0;
	return n;
}
