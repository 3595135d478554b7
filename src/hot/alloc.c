/*
 * alloc.c - size-class allocator of the hot tier.
 *
 * The heap is an array of 64 KiB pages.  A page is carved for one size class
 * when that class runs dry and goes back to the page pool once every block of
 * it is free again, so memory moves between classes at page granularity.
 * Each class keeps a list of its partially used pages under its own mutex;
 * each process context keeps a small LIFO cache of free blocks per class so
 * the common alloc/free touches no shared cache line but the byte counters.
 *
 * Byte accounting (all atomics, changed in the same step as the state they
 * describe):  used + free + slack == heap_bytes, where
 *   used  = class bytes of blocks handed out (live, uninstalled, retired),
 *   free  = never carved or returned pages + blocks in pages' free lists,
 *           in the pages' uncarved tails and in process caches,
 *   slack = tails of carved pages that no block of the page's class fits.
 */
#include <string.h>

#include "hot_internal.h"


/*
 * Block sizes including the 16-byte prefix.  Four steps per doubling up to
 * 8 KiB; above that 64 KiB / n (n = 7 .. 1) rounded down to 16 bytes so a
 * page wastes at most n * 16 bytes.  All are multiples of 16.
 */
const uint32_t ls_hot_class_size[HOT_NCLASS] = {
	32, 48, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384, 448,
	512, 640, 768, 896, 1024, 1280, 1536, 1792, 2048, 2560, 3072, 3584,
	4096, 5120, 6144, 7168, 8192, 9360, 10912, 13104, 16384, 21840,
	32768, 65536
};

/* Smallest class whose blocks hold bytes (prefix included); -1 if none. */
int
hot_class_for(size_t bytes)
{
	int			lo = 0;
	int			hi = HOT_NCLASS - 1;

	if (bytes > ls_hot_class_size[HOT_NCLASS - 1])
		return -1;
	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (ls_hot_class_size[mid] >= bytes)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/* How many free blocks of a class a process may keep cached. */
static uint32_t
cache_limit(int cls)
{
	uint32_t	n = 32768 / ls_hot_class_size[cls];

	return LS_MAX(1u, LS_MIN(64u, n));
}

static uint32_t
page_index(ls_hot *hot, const hot_blk *b)
{
	return (uint32_t) (((const uint8_t *) b - hot->heap) >> HOT_PAGE_SHIFT);
}

static uint8_t *
page_base(ls_hot *hot, uint32_t idx)
{
	return hot->heap + ((uint64_t) idx << HOT_PAGE_SHIFT);
}

void
hot_alloc_init(ls_hot *hot)
{
	ls_mutex_init(&hot->page_lock);
	hot->fresh_pages = 0;
	hot->free_pages = HOT_NONE;
	for (int c = 0; c < HOT_NCLASS; c++)
	{
		ls_mutex_init(&hot->classes[c].lock);
		hot->classes[c].partial = HOT_NONE;
	}
	atomic_store(&hot->used_bytes, 0);
	atomic_store(&hot->free_bytes, (uint64_t) hot->npages * HOT_PAGE_SIZE);
	atomic_store(&hot->slack_bytes, 0);
}

/* ---- page pool (page_lock) ---------------------------------------------- */

/* Take a free page and format it for cls; HOT_NONE when the heap is full. */
static uint32_t
page_get(ls_hot *hot, int cls)
{
	uint32_t	idx;

	ls_mutex_lock(&hot->page_lock);
	idx = hot->free_pages;
	if (idx != HOT_NONE)
		hot->free_pages = hot->pages[idx].next;
	else if (hot->fresh_pages < hot->npages)
		idx = hot->fresh_pages++;
	ls_mutex_unlock(&hot->page_lock);
	if (idx == HOT_NONE)
		return HOT_NONE;

	hot_page   *p = &hot->pages[idx];
	uint32_t	size = ls_hot_class_size[cls];
	uint32_t	tail;

	p->cls = (uint16_t) cls;
	p->on_partial = 0;
	p->nblocks = HOT_PAGE_SIZE / size;
	p->used = 0;
	p->fresh = 0;
	p->prev = p->next = HOT_NONE;
	p->free = NULL;
	tail = HOT_PAGE_SIZE - p->nblocks * size;
	atomic_fetch_sub(&hot->free_bytes, tail);
	atomic_fetch_add(&hot->slack_bytes, tail);
	return idx;
}

/* Return an entirely free page (caller holds its class lock). */
static void
page_put(ls_hot *hot, uint32_t idx)
{
	hot_page   *p = &hot->pages[idx];
	uint32_t	tail = HOT_PAGE_SIZE - p->nblocks * ls_hot_class_size[p->cls];

	p->cls = HOT_NCLASS;
	atomic_fetch_sub(&hot->slack_bytes, tail);
	atomic_fetch_add(&hot->free_bytes, tail);
	ls_mutex_lock(&hot->page_lock);
	p->next = hot->free_pages;
	hot->free_pages = idx;
	ls_mutex_unlock(&hot->page_lock);
}

/* ---- partial page lists (class lock held) -------------------------------- */

static void
partial_link(ls_hot *hot, hot_class *hc, uint32_t idx)
{
	hot_page   *p = &hot->pages[idx];

	p->prev = HOT_NONE;
	p->next = hc->partial;
	if (hc->partial != HOT_NONE)
		hot->pages[hc->partial].prev = idx;
	hc->partial = idx;
	p->on_partial = 1;
}

static void
partial_unlink(ls_hot *hot, hot_class *hc, uint32_t idx)
{
	hot_page   *p = &hot->pages[idx];

	if (p->prev != HOT_NONE)
		hot->pages[p->prev].next = p->next;
	else
		hc->partial = p->next;
	if (p->next != HOT_NONE)
		hot->pages[p->next].prev = p->prev;
	p->prev = p->next = HOT_NONE;
	p->on_partial = 0;
}

/* Pop one block from a page that has one (class lock held). */
static hot_blk *
page_pop(ls_hot *hot, uint32_t idx)
{
	hot_page   *p = &hot->pages[idx];
	hot_blk    *b;

	if (p->free != NULL)
	{
		b = p->free;
		p->free = b->next;
	}
	else
		b = (hot_blk *) (page_base(hot, idx) +
						 (uint64_t) p->fresh++ * ls_hot_class_size[p->cls]);
	p->used++;
	return b;
}

static bool
page_has_block(const hot_page *p)
{
	return p->free != NULL || p->fresh < p->nblocks;
}

/* Move up to want blocks from the class's partial pages into the cache. */
static uint32_t
class_take(ls_hot *hot, int cls, hot_cache *c, uint32_t want)
{
	hot_class  *hc = &hot->classes[cls];
	uint32_t	got = 0;

	while (got < want && hc->partial != HOT_NONE)
	{
		uint32_t	idx = hc->partial;
		hot_blk    *b = page_pop(hot, idx);

		b->next = c->head;
		c->head = b;
		c->count++;
		got++;
		if (!page_has_block(&hot->pages[idx]))
			partial_unlink(hot, hc, idx);
	}
	return got;
}

/* Give one block back to its page (class lock held). */
static void
class_give(ls_hot *hot, int cls, hot_blk *b)
{
	hot_class  *hc = &hot->classes[cls];
	uint32_t	idx = page_index(hot, b);
	hot_page   *p = &hot->pages[idx];

	b->next = p->free;
	p->free = b;
	p->used--;
	if (p->used == 0)
	{
		if (p->on_partial)
			partial_unlink(hot, hc, idx);
		page_put(hot, idx);
	}
	else if (!p->on_partial)
		partial_link(hot, hc, idx);
}

/* ---- per-process caches --------------------------------------------------- */

static ls_status
cache_refill(ls_hot_ctx *ctx, int cls)
{
	ls_hot	   *hot = ctx->hot;
	hot_class  *hc = &hot->classes[cls];
	hot_cache  *c = &ctx->cache[cls];
	uint32_t	want = LS_MAX(1u, cache_limit(cls) / 2);

	uint64_t	size = ls_hot_class_size[cls];

	ls_mutex_lock(&hc->lock);
	uint32_t	got = class_take(hot, cls, c, want);

	ls_mutex_unlock(&hc->lock);
	if (got == 0)
	{
		uint32_t	idx = page_get(hot, cls);

		if (idx == HOT_NONE)
			return LS_NO_SPACE;
		ls_mutex_lock(&hc->lock);
		partial_link(hot, hc, idx);
		got = class_take(hot, cls, c, want);
		ls_mutex_unlock(&hc->lock);
	}
	/* the blocks moved from the shared pool into our cache */
	atomic_fetch_sub_explicit(&hot->free_bytes, got * size, memory_order_relaxed);
	hot_ctx_add(&ctx->cached_bytes, (int64_t) (got * size));
	return LS_OK;
}

/* Give cached blocks of cls back to their pages until keep remain. */
static void
cache_flush(ls_hot_ctx *ctx, int cls, uint32_t keep)
{
	ls_hot	   *hot = ctx->hot;
	hot_cache  *c = &ctx->cache[cls];

	if (c->count <= keep)
		return;

	uint64_t	moved = (uint64_t) (c->count - keep) * ls_hot_class_size[cls];

	/* count the bytes as shared before a page can go back to the pool */
	hot_ctx_add(&ctx->cached_bytes, -(int64_t) moved);
	atomic_fetch_add_explicit(&hot->free_bytes, moved, memory_order_relaxed);
	ls_mutex_lock(&hot->classes[cls].lock);
	while (c->count > keep)
	{
		hot_blk    *b = c->head;

		c->head = b->next;
		c->count--;
		class_give(hot, cls, b);
	}
	ls_mutex_unlock(&hot->classes[cls].lock);
}

void
hot_cache_flush_all(ls_hot_ctx *ctx)
{
	for (int c = 0; c < HOT_NCLASS; c++)
		cache_flush(ctx, c, 0);
}

/* ---- public allocation entry points ------------------------------------------ */

static ls_status
alloc_once(ls_hot_ctx *ctx, int cls, hot_blk **out)
{
	hot_cache  *c = &ctx->cache[cls];

	if (c->count == 0)
	{
		ls_status	st = cache_refill(ctx, cls);

		if (st != LS_OK)
			return st;
	}
	*out = c->head;
	c->head = (*out)->next;
	c->count--;
	return LS_OK;
}

/*
 * Last resort when neither cls nor the page pool has a block: a free block
 * of a larger class, the smallest one that has one.  Memory moves between
 * classes only at page granularity, so after churn of one size the free
 * bytes can sit in partly used pages of other classes while the tier is far
 * from full (seen: a 32-byte request failing with half of the heap free; a
 * SET TABLESPACE copy failing with a third of it in use).  The block keeps
 * its page's class: hot_obj_size and hot_free read it from the page, so
 * nothing else needs to know it was borrowed, and the bytes it wastes count
 * as used until it is freed.  First only classes up to HOT_BORROW_FACTOR
 * times the size are tried, then any: a request fails only when no class
 * has a free block.  Sets *cls to the class served.
 */
#define HOT_BORROW_FACTOR	8

static ls_status
alloc_borrow(ls_hot_ctx *ctx, int *cls, hot_blk **out, bool any)
{
	uint64_t	limit = any ? UINT64_MAX :
		(uint64_t) ls_hot_class_size[*cls] * HOT_BORROW_FACTOR;

	for (int c = *cls + 1; c < HOT_NCLASS && ls_hot_class_size[c] <= limit; c++)
	{
		ls_hot	   *hot = ctx->hot;
		hot_class  *hc = &hot->classes[c];
		hot_cache  *cache = &ctx->cache[c];
		uint32_t	got;

		if (cache->count == 0)
		{
			ls_mutex_lock(&hc->lock);
			got = class_take(hot, c, cache, 1);
			ls_mutex_unlock(&hc->lock);
			if (got == 0)
				continue;
			atomic_fetch_sub_explicit(&hot->free_bytes, ls_hot_class_size[c],
									  memory_order_relaxed);
			hot_ctx_add(&ctx->cached_bytes, ls_hot_class_size[c]);
		}
		*out = cache->head;
		cache->head = (*out)->next;
		cache->count--;
		*cls = c;
		return LS_OK;
	}
	return LS_NO_SPACE;
}

/*
 * Allocate an object of bytes (prefix not included).  When the heap is full,
 * give this process's cached blocks back (they may free whole pages for
 * other classes), reclaim retired memory and try again; then take a block
 * of a larger class (alloc_borrow).
 */
ls_status
hot_alloc(ls_hot_ctx *ctx, size_t bytes, void **out)
{
	int			cls = hot_class_for(bytes + HOT_BLK_HDR);
	hot_blk    *b;
	ls_status	st;

	if (cls < 0)
		return LS_TOO_LARGE;
	st = alloc_once(ctx, cls, &b);
	for (int attempt = 0; st == LS_NO_SPACE && attempt < 3; attempt++)
	{
		/* Each round may advance the epoch once; three let our own retirements
		 * made at the current epoch become reclaimable when no one else is in. */
		hot_cache_flush_all(ctx);
		ls_hot_reclaim(ctx);
		hot_cache_flush_all(ctx);
		st = alloc_once(ctx, cls, &b);
	}
	if (st == LS_NO_SPACE)
		st = alloc_borrow(ctx, &cls, &b, false);
	if (st == LS_NO_SPACE)
		st = alloc_borrow(ctx, &cls, &b, true);
	if (st != LS_OK)
		return st;

	uint32_t	size = ls_hot_class_size[cls];

	hot_ctx_add(&ctx->used_delta, size);
	hot_ctx_add(&ctx->cached_bytes, -(int64_t) size);
	b->next = NULL;
	b->tag = 0;
	*out = hot_obj_of(b);
	return LS_OK;
}

uint32_t
hot_obj_size(ls_hot *hot, const void *obj)
{
	const hot_blk *b = hot_blk_of(obj);

	return ls_hot_class_size[hot->pages[page_index(hot, b)].cls];
}

/*
 * Free an object nobody can reach any more (never published, or reclaimed
 * after its epoch).  The first bytes are poisoned so that a reader who
 * wrongly kept a pointer sees garbage instead of a plausible old row.
 */
void
hot_free(ls_hot_ctx *ctx, void *obj)
{
	ls_hot	   *hot = ctx->hot;
	hot_blk    *b = hot_blk_of(obj);
	int			cls = hot->pages[page_index(hot, b)].cls;
	uint32_t	size = ls_hot_class_size[cls];
	hot_cache  *c = &ctx->cache[cls];

	memset(obj, 0xdb, LS_MIN(size - HOT_BLK_HDR, 64u));
	hot_ctx_add(&ctx->used_delta, -(int64_t) size);
	hot_ctx_add(&ctx->cached_bytes, size);
	b->next = c->head;
	c->head = b;
	c->count++;
	if (c->count > cache_limit(cls))
		cache_flush(ctx, cls, cache_limit(cls) / 2);
}
