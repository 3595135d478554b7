/*
 * verify.c - invariant checks of the hot tier (leanstore_verify, tests).
 *
 * Structural checks hold at any time, even with concurrent writers, because
 * readers inside an epoch only ever see valid (possibly retired) memory:
 * every pointer lies inside the heap, nodes sit at their level, a row sits
 * in the slot of its rowid, chains are finite and every version's class
 * fits its length.  Counter checks need exact = true (no writer running).
 */
#include <stdarg.h>
#include <stdio.h>

#include "hot_internal.h"

#define HOT_VERIFY_MAX_CHAIN	(UINT64_C(1) << 24)

typedef struct verify_state
{
	ls_hot	   *hot;
	char	   *buf;
	size_t		buflen;
	bool		failed;
	uint64_t	rows;
	uint64_t	versions;
	uint64_t	dead;
	uint64_t	bytes;
} verify_state;

static bool fail(verify_state *vs, const char *fmt,...) __attribute__((format(printf, 2, 3)));

static bool
fail(verify_state *vs, const char *fmt,...)
{
	va_list		ap;

	if (!vs->failed && vs->buf != NULL && vs->buflen > 0)
	{
		va_start(ap, fmt);
		vsnprintf(vs->buf, vs->buflen, fmt, ap);
		va_end(ap);
	}
	vs->failed = true;
	return false;
}

/* An object pointer handed out by the allocator: in the heap, aligned,
 * inside a page carved for some class. */
static bool
valid_object(ls_hot *hot, const void *obj)
{
	const uint8_t *p = obj;

	if (p < hot->heap + HOT_BLK_HDR || p >= hot->heap + hot->heap_bytes ||
		((uintptr_t) p & 15) != 0)
		return false;
	return hot->pages[(p - HOT_BLK_HDR - hot->heap) >> HOT_PAGE_SHIFT].cls < HOT_NCLASS;
}

static bool
verify_chain(verify_state *vs, ls_hot_row *row, uint64_t rowid)
{
	uint64_t	n = 0;

	if (row->rowid != rowid)
		return fail(vs, "row in slot %llu has rowid %llu",
					(unsigned long long) rowid, (unsigned long long) row->rowid);
	vs->bytes += hot_obj_size(vs->hot, row);
	for (ls_hot_version *v = ls_hot_row_newest(row); v != NULL; v = ls_hot_version_older(v))
	{
		if (!valid_object(vs->hot, v))
			return fail(vs, "row %llu: version pointer %p outside the heap",
						(unsigned long long) rowid, (void *) v);
		uint32_t	size = hot_obj_size(vs->hot, v);

		if (v->len > LS_HOT_MAX_PAYLOAD ||
			sizeof(ls_hot_version) + v->len + HOT_BLK_HDR > size ||
			v->size_class >= HOT_NCLASS || ls_hot_class_size[v->size_class] != size)
			return fail(vs, "row %llu: version of %u bytes in a %u-byte block (class %u)",
						(unsigned long long) rowid, v->len, size, v->size_class);
		if (++n > HOT_VERIFY_MAX_CHAIN)
			return fail(vs, "row %llu: version chain does not end", (unsigned long long) rowid);
		vs->bytes += size;
	}
	vs->versions += n;
	return true;
}

/*
 * Slot i holds v (a row or DEAD) and its occupancy bit looked clear: is that
 * a broken invariant or a change in flight?  At rest (exact) it is broken.
 * With writers running, a row's insert holds the row latch until it has
 * checked the bit, and only the owner of a BUSY slot clears it: a row whose
 * latch is free, whose bit is still clear afterwards and that still sits in
 * the slot (a row pointer is not reused while we are in our epoch) broke
 * the rule.  For DEAD the same double look is used (a false alarm would
 * need the rowid forgotten, inserted again and removed again between two
 * loads; the glue never inserts a rowid twice).
 */
static bool
occ_bit_missing(hot_map_node *n, _Atomic uintptr_t *slot, uint32_t i, uintptr_t v, bool exact)
{
	if (exact)
		return true;
	if (HOT_SLOT_IS_ROW(v) &&
		atomic_load(&((ls_hot_row *) v)->latch) != 0)
		return false;
	return !hot_occ_test(n, i) &&
		atomic_load_explicit(slot, memory_order_acquire) == v;
}

/* The occupancy bits of chunk ci (HOT_CHUNK_SLOTS <= 64 or a multiple). */
static uint64_t
chunk_bits(hot_map_node *n, uint32_t ci)
{
	uint64_t	count = 0;
	uint32_t	first = ci * HOT_CHUNK_SLOTS;

	for (uint32_t w = first >> 6; w * 64 < first + HOT_CHUNK_SLOTS; w++)
	{
		uint64_t	bits = atomic_load(&n->occ[w]);

		if (HOT_CHUNK_SLOTS < 64)
			bits = (bits >> (first & 63)) & ((UINT64_C(1) << (HOT_CHUNK_SLOTS & 63)) - 1);
		count += (uint64_t) __builtin_popcountll(bits);
	}
	return count;
}

/*
 * Chunk ci of leaf n looked absent: are bits of it set?  A bit is set only
 * while the chunk is linked (by an inserter holding a reference on it, and
 * cleared before its slot goes back to NULL), so at rest a set bit is an
 * error at once.  With writers running the chunk may have been created
 * and the bit set after our load, or the bit cleared and the chunk freed
 * between our looks: only a bit seen set with the chunk absent on several
 * alternating looks counts (a stray bit stays).
 */
static uint64_t
absent_chunk_bits(hot_map_node *n, uint32_t ci, bool exact)
{
	uint64_t	cbits = chunk_bits(n, ci);

	for (int k = 0; !exact && cbits != 0 && k < 4; k++)
	{
		if (atomic_load_explicit(&n->slot[ci], memory_order_acquire) != 0)
			return 0;
		cbits = chunk_bits(n, ci);
	}
	return cbits;
}

static bool
verify_leaf(verify_state *vs, hot_map_node *n, uint64_t base, bool exact)
{
	uint64_t	live = 0,
				dead = 0,
				bits = 0,
				chunks = 0,
				used = 0;		/* non-NULL slots of the current chunk */

	for (uint32_t w = 0; w < HOT_OCC_WORDS; w++)
		bits += (uint64_t) __builtin_popcountll(atomic_load(&n->occ[w]));
	hot_map_chunk *c = NULL;

	for (uint32_t i = 0; i < HOT_MAP_FANOUT && !vs->failed; i++)
	{
		uint32_t	ci = i >> HOT_CHUNK_BITS;
		_Atomic uintptr_t *slot;
		uintptr_t	v;

		if ((i & (HOT_CHUNK_SLOTS - 1)) == 0)
		{
			c = (hot_map_chunk *) atomic_load_explicit(&n->slot[ci], memory_order_acquire);
			if (c == NULL)
			{
				uint64_t	cbits = absent_chunk_bits(n, ci, exact);

				if (cbits != 0)
					return fail(vs, "leaf at %llu: chunk %u absent with %llu occupancy bits set",
								(unsigned long long) base, ci, (unsigned long long) cbits);
				i += HOT_CHUNK_SLOTS - 1;
				continue;
			}
			if (!valid_object(vs->hot, c))
				return fail(vs, "leaf at %llu: chunk %u pointer %p outside the heap",
							(unsigned long long) base, ci, (void *) c);
			vs->bytes += hot_obj_size(vs->hot, c);
			chunks++;
			used = 0;
		}
		slot = hot_chunk_slot(c, i);
		v = atomic_load_explicit(slot, memory_order_acquire);
		used += v != 0;
		if (exact && (i & (HOT_CHUNK_SLOTS - 1)) == HOT_CHUNK_SLOTS - 1 &&
			atomic_load(&c->refs) != used)
			return fail(vs, "leaf at %llu: chunk %u has %u references for %llu used slots%s",
						(unsigned long long) base, ci, atomic_load(&c->refs),
						(unsigned long long) used,
						used == 0 ? " (an empty chunk was kept)" : "");
		if (v == 0)
			continue;
		if (v == HOT_SLOT_BUSY)
		{
			if (exact)
				return fail(vs, "slot %llu is BUSY at rest", (unsigned long long) (base + i));
			continue;
		}
		if (v != HOT_SLOT_DEAD && !valid_object(vs->hot, (void *) v))
			return fail(vs, "slot %llu: row pointer %p outside the heap",
						(unsigned long long) (base + i), (void *) v);
		if (!hot_occ_test(n, i) && occ_bit_missing(n, slot, i, v, exact))
			return fail(vs, "slot %llu holds %s but its occupancy bit is clear",
						(unsigned long long) (base + i),
						v == HOT_SLOT_DEAD ? "DEAD" : "a row");
		if (v == HOT_SLOT_DEAD)
		{
			dead++;
			continue;
		}
		live++;
		verify_chain(vs, (ls_hot_row *) v, base + i);
	}
	if (!vs->failed && exact && bits != live + dead)
		return fail(vs, "leaf at %llu has %llu occupancy bits set for %llu rows / %llu dead",
					(unsigned long long) base, (unsigned long long) bits,
					(unsigned long long) live, (unsigned long long) dead);
	vs->rows += live;
	vs->dead += dead;
	if (exact && atomic_load(&n->refs) != chunks)
		return fail(vs, "leaf at %llu has %u references for %llu chunks%s",
					(unsigned long long) base, atomic_load(&n->refs),
					(unsigned long long) chunks,
					chunks == 0 ? " (an empty leaf was kept)" : "");
	if (exact && (atomic_load(&n->live) != live || atomic_load(&n->dead) != dead))
		return fail(vs, "leaf at %llu counts %u rows / %u dead, holds %llu / %llu",
					(unsigned long long) base, atomic_load(&n->live), atomic_load(&n->dead),
					(unsigned long long) live, (unsigned long long) dead);
	return !vs->failed;
}

static bool
verify_node(verify_state *vs, hot_map_node *n, uint32_t level, uint64_t base, bool exact)
{
	if (!valid_object(vs->hot, n))
		return fail(vs, "map node %p outside the heap", (void *) n);
	if (n->level != level)
		return fail(vs, "map node at %llu has level %u, expected %u",
					(unsigned long long) base, n->level, level);
	vs->bytes += hot_obj_size(vs->hot, n);
	if (level == HOT_MAP_LEVELS - 1)
		return verify_leaf(vs, n, base, exact);

	uint32_t	shift = HOT_MAP_BITS * (HOT_MAP_LEVELS - 1 - level);

	for (uint32_t w = 0; w < HOT_OCC_WORDS; w++)
		if (atomic_load(&n->occ[w]) != 0)
			return fail(vs, "inner map node at %llu has occupancy bits",
						(unsigned long long) base);

	uint64_t	children = 0;

	for (uint32_t i = 0; i < HOT_MAP_FANOUT && !vs->failed; i++)
	{
		uintptr_t	c = atomic_load_explicit(&n->slot[i], memory_order_acquire);

		if (c != 0)
		{
			children++;
			verify_node(vs, (hot_map_node *) c, level + 1, base + ((uint64_t) i << shift), exact);
		}
	}
	/* inner nodes stay when their last child goes (refs_drop): refs 0 then */
	if (!vs->failed && exact && atomic_load(&n->refs) != children)
		return fail(vs, "map node at %llu (level %u) has %u references for %llu children",
					(unsigned long long) base, level, atomic_load(&n->refs),
					(unsigned long long) children);
	return !vs->failed;
}

ls_status
ls_hot_table_verify(ls_hot_table *tbl, bool exact, char *buf, size_t buflen)
{
	verify_state vs = {.hot = tbl->hot, .buf = buf, .buflen = buflen};
	hot_map_node *root = atomic_load_explicit(&tbl->root, memory_order_acquire);
	ls_hot_table_stats st;

	if (root != NULL)
		verify_node(&vs, root, 0, 0, exact);
	if (vs.failed)
		return LS_CORRUPT;
	if (!exact)
		return LS_OK;
	ls_hot_table_get_stats(tbl, &st);
	if (st.rows != vs.rows || st.versions != vs.versions ||
		st.dead_rowids != vs.dead || st.bytes != vs.bytes)
	{
		fail(&vs, "table counters rows %llu versions %llu dead %llu bytes %llu, "
			 "recount %llu %llu %llu %llu",
			 (unsigned long long) st.rows, (unsigned long long) st.versions,
			 (unsigned long long) st.dead_rowids, (unsigned long long) st.bytes,
			 (unsigned long long) vs.rows, (unsigned long long) vs.versions,
			 (unsigned long long) vs.dead, (unsigned long long) vs.bytes);
		return LS_CORRUPT;
	}
	return LS_OK;
}

/* ---- allocator ---------------------------------------------------------------- */

/* Free bytes inside one carved page: its free list and its uncarved tail. */
static bool
page_free_bytes(verify_state *vs, uint32_t idx, uint64_t *out)
{
	hot_page   *p = &vs->hot->pages[idx];
	uint32_t	size = ls_hot_class_size[p->cls];
	uint64_t	n = p->nblocks - p->fresh;
	uint8_t    *base = vs->hot->heap + ((uint64_t) idx << HOT_PAGE_SHIFT);

	for (hot_blk *b = p->free; b != NULL; b = b->next)
	{
		if ((uint8_t *) b < base || (uint8_t *) b >= base + HOT_PAGE_SIZE ||
			((uint8_t *) b - base) % size != 0 || ++n > p->nblocks)
			return fail(vs, "page %u: bad free list", idx);
	}
	if (p->used + n != p->nblocks)
		return fail(vs, "page %u: %u used + %llu free != %u blocks", idx, p->used,
					(unsigned long long) n, p->nblocks);
	*out = n * size;
	return true;
}

static void
verify_classes(verify_state *vs, bool exact, uint64_t *free_bytes)
{
	ls_hot	   *hot = vs->hot;

	for (int c = 0; c < HOT_NCLASS && !vs->failed; c++)
	{
		hot_class  *hc = &hot->classes[c];
		uint32_t	prev = HOT_NONE;
		uint32_t	steps = 0;

		ls_mutex_lock(&hc->lock);
		for (uint32_t idx = hc->partial; idx != HOT_NONE; idx = hot->pages[idx].next)
		{
			hot_page   *p = &hot->pages[idx];

			if (idx >= hot->npages || ++steps > hot->npages || p->cls != c ||
				!p->on_partial || p->prev != prev)
			{
				fail(vs, "class %d: partial page list broken at page %u", c, idx);
				break;
			}
			prev = idx;
		}
		ls_mutex_unlock(&hc->lock);
	}
	if (!exact)
		return;
	/* quiescent: every carved page's blocks add up */
	for (uint32_t idx = 0; idx < hot->fresh_pages && !vs->failed; idx++)
	{
		hot_page   *p = &hot->pages[idx];
		uint64_t	b = 0;

		if (p->cls == HOT_NCLASS)
			*free_bytes += HOT_PAGE_SIZE;
		else if (page_free_bytes(vs, idx, &b))
		{
			*free_bytes += b;
			if (!p->on_partial && b != 0)
				fail(vs, "page %u has free blocks but is not on its class list", idx);
		}
	}
	*free_bytes += (uint64_t) (hot->npages - hot->fresh_pages) * HOT_PAGE_SIZE;
}

ls_status
ls_hot_verify(ls_hot *hot, bool exact, char *buf, size_t buflen)
{
	verify_state vs = {.hot = hot, .buf = buf, .buflen = buflen};
	uint64_t	free_bytes = 0;
	ls_hot_stats s;

	if (hot->magic != LS_HOT_MAGIC)
	{
		fail(&vs, "hot tier header has a bad magic number");
		return LS_CORRUPT;
	}
	verify_classes(&vs, exact, &free_bytes);
	if (vs.failed)
		return LS_CORRUPT;
	if (!exact)
		return LS_OK;
	for (uint32_t i = 0; i < hot->cfg.max_procs; i++)
		for (int c = 0; c < HOT_NCLASS; c++)
			free_bytes += (uint64_t) hot->ctxs[i].cache[c].count * ls_hot_class_size[c];
	ls_hot_get_stats(hot, &s);
	if (s.used_bytes + s.free_bytes + s.slack_bytes != s.heap_bytes ||
		s.free_bytes != free_bytes)
	{
		fail(&vs, "accounting: used %llu + free %llu + slack %llu vs heap %llu; "
			 "free recount %llu",
			 (unsigned long long) s.used_bytes, (unsigned long long) s.free_bytes,
			 (unsigned long long) s.slack_bytes, (unsigned long long) s.heap_bytes,
			 (unsigned long long) free_bytes);
		return LS_CORRUPT;
	}
	return LS_OK;
}
