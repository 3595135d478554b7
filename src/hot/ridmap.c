/*
 * ridmap.c - per-table RID-map: rowid -> row header.
 *
 * A radix tree of HOT_MAP_LEVELS levels with HOT_MAP_FANOUT slots per node
 * (4 x 1024 = 2^40 rowids).  Nodes are created lazily and published with a
 * CAS on the parent slot, and freed again when their last child goes (see
 * "freeing" below); a reader walks down with plain acquire loads inside its
 * epoch and needs no validation: what it reaches stays readable.
 * Leaf slots hold 0 (NULL), HOT_SLOT_DEAD or a row header pointer, and
 * for an instant HOT_SLOT_BUSY (a row or DEAD on its way back to NULL).
 *
 * A leaf holds its slots in chunks of HOT_CHUNK_SLOTS, created on the first
 * insert into them and published with a CAS on the leaf's chunk pointer,
 * exactly like nodes: rowids fill 291-rowid virtual blocks as heap fills
 * pages, so a table of narrow rows uses the first ~61 rowids of each block
 * and the chunks of the skipped rest are never allocated.  A missing chunk
 * reads as NULL slots.
 *
 * Freeing: a chunk goes back to the allocator when its last slot goes back
 * to NULL, a leaf with its last chunk; inner nodes stay while the table
 * lives, as the root does (refs_drop says why).  Every chunk and node
 * counts references (refs): its non-NULL slots or child links plus
 * inserters in flight, never under-counted.  The process that lowers refs
 * to 0 and then wins CAS 0 -> HOT_REFS_DEAD owns the free: the object is
 * empty and stays so (nothing becomes non-NULL without a reference, and no
 * reference can be taken on a DEAD object), so it is unlinked from its
 * parent, retired through the epochs, and the parent loses the link's
 * reference (possibly freeing it in turn).  Inserters take one reference,
 * on the chunk (hot_map_acquire): the links above hold the path.  A DEAD
 * object still linked is replaced by the next inserter; nobody waits for a
 * freer.  Removers, evicters and forgetters change slots only by CAS from
 * a row or DEAD, which a freed chunk never holds, and release the slot's
 * reference through the path they walked (hot_map_find).  A DEAD slot keeps
 * its reference: VACUUM's forget frees the chunk.  README.md, "Freeing",
 * has the argument.
 *
 * Each leaf counts its rows (live) and DEAD slots (dead).  The counters are
 * changed so that they never under-count a published slot: raised before a
 * slot is set, lowered after it is cleared.  Scans skip a leaf whose counter
 * is zero and any absent subtree, so a sparse or emptied map is cheap to
 * iterate.
 *
 * Each leaf also has an occupancy bitmap (one bit per slot), so a scan of a
 * leaf whose rowids are mostly skipped (a virtual block of 291 rowids holds
 * ~61 rows of a narrow table) loads only the slots that hold something.
 * Invariant: a slot holding a row or DEAD has its bit set, except while the
 * insert that publishes it has not returned yet, or while it is BUSY.
 *  - insert (row.c): bit set before the CAS 0 -> row publishes the row, and
 *    checked again after it (an ABA: the slot may have gone row -> BUSY ->
 *    0, its bit cleared, between the insert's first look and its CAS).  The
 *    new row's latch is held from before the CAS until after that check,
 *    so nobody can remove the row in between.  A CAS that finds BUSY waits
 *    for the slot to become NULL and retries; any other loser returns
 *    LS_EXISTS (its bit, if it set it, belongs to the winner's slot).
 *  - row -> DEAD (remove with mark_dead) keeps the bit.
 *  - row -> NULL (remove, under the row latch, after newest = NULL) and
 *    DEAD -> NULL (forget) go through BUSY: CAS to BUSY (one owner), clear
 *    the bit, store NULL.  Readers ignore BUSY: the row was removed (its
 *    newest is already NULL) or the DEAD rowid is being forgotten.
 * The bit is cleared only by the owner of a BUSY slot and set only by
 * inserters, so no stray bit survives at rest (ls_hot_table_verify checks
 * bit == non-NULL slot exactly).  Readers load a word, walk its set bits
 * and still check each slot's value.
 */
#include <string.h>

#include "hot_internal.h"

static uint32_t
level_shift(uint32_t level)
{
	return HOT_MAP_BITS * (HOT_MAP_LEVELS - 1 - level);
}

static uint32_t
level_index(uint64_t rowid, uint32_t level)
{
	return (uint32_t) ((rowid >> level_shift(level)) & (HOT_MAP_FANOUT - 1));
}

/* First rowid of the next subtree at level after the one holding rowid. */
static uint64_t
next_subtree(uint64_t rowid, uint32_t level)
{
	uint32_t	s = level_shift(level);

	return ((rowid >> s) + 1) << s;
}

static ls_status
node_new(ls_hot_ctx *ctx, ls_hot_table *tbl, uint32_t level, hot_map_node **out)
{
	hot_map_node *n;
	size_t		size = hot_map_node_size(level);
	ls_status	st = hot_alloc(ctx, size, (void **) &n);

	if (st != LS_OK)
		return st;
	memset(n, 0, size);
	n->level = level;
	atomic_fetch_add(&tbl->bytes, hot_obj_size(ctx->hot, n));
	*out = n;
	return LS_OK;
}

/*
 * A new zeroed chunk (or node, level < HOT_MAP_LEVELS: the child of a node
 * at level - 1) holding one reference, its creator's; counted in the
 * table's bytes until discarded, freed or dropped.
 */
static ls_status
child_new(ls_hot_ctx *ctx, ls_hot_table *tbl, uint32_t level, void **out)
{
	hot_map_chunk *c;
	ls_status	st;

	if (level < HOT_MAP_LEVELS)
	{
		hot_map_node *n;

		st = node_new(ctx, tbl, level, &n);
		if (st == LS_OK)
		{
			atomic_init(&n->refs, 1);
			*out = n;
		}
		return st;
	}
	st = hot_alloc(ctx, sizeof(hot_map_chunk), (void **) &c);
	if (st != LS_OK)
		return st;
	memset(c, 0, sizeof(*c));
	atomic_init(&c->refs, 1);
	atomic_fetch_add(&tbl->bytes, hot_obj_size(ctx->hot, c));
	*out = c;
	return LS_OK;
}

static void
child_discard(ls_hot_ctx *ctx, ls_hot_table *tbl, void *n)
{
	atomic_fetch_sub(&tbl->bytes, hot_obj_size(ctx->hot, n));
	hot_free(ctx, n);
}

/* The root is created once and lives as long as the map. */
static ls_status
root_get_or_create(ls_hot_ctx *ctx, ls_hot_table *tbl, hot_map_node **out)
{
	hot_map_node *cur = atomic_load_explicit(&tbl->root, memory_order_acquire);
	hot_map_node *n;
	ls_status	st;

	if (cur != NULL)
	{
		*out = cur;
		return LS_OK;
	}
	st = node_new(ctx, tbl, 0, &n);
	if (st != LS_OK)
		return st;
	if (atomic_compare_exchange_strong_explicit(&tbl->root, &cur, n,
												memory_order_acq_rel,
												memory_order_acquire))
	{
		*out = n;
		return LS_OK;
	}
	child_discard(ctx, tbl, n);
	*out = cur;
	return LS_OK;
}

/* ---- references and freeing ------------------------------------------------ */

/*
 * The object at level of path (1 .. HOT_MAP_LEVELS - 1: a node,
 * HOT_MAP_LEVELS: the chunk), its reference count and the link in its
 * parent that points to it.
 */
static void *
path_obj(hot_map_path *path, uint32_t level)
{
	return level == HOT_MAP_LEVELS ? (void *) path->chunk : (void *) path->node[level];
}

static _Atomic uint32_t *
path_refs(hot_map_path *path, uint32_t level)
{
	return level == HOT_MAP_LEVELS ? &path->chunk->refs : &path->node[level]->refs;
}

static _Atomic uintptr_t *
path_link(hot_map_path *path, uint64_t rowid, uint32_t level)
{
	hot_map_node *parent = path->node[level - 1];

	if (level == HOT_MAP_LEVELS)
		return &parent->slot[(rowid & (HOT_MAP_FANOUT - 1)) >> HOT_CHUNK_BITS];
	return &parent->slot[level_index(rowid, level - 1)];
}

/*
 * Take a reference; false when the object is DEAD (being freed: it must be
 * replaced, or the walk restarted).  The increment a failed take leaves on
 * a DEAD count is never read.
 */
static bool
refs_take(_Atomic uint32_t *refs)
{
	return (atomic_fetch_add(refs, 1) & HOT_REFS_DEAD) == 0;
}

static bool
refs_dead(_Atomic uint32_t *refs)
{
	return (atomic_load(refs) & HOT_REFS_DEAD) != 0;
}

/*
 * A claimed object holds nothing: every slot and link is NULL.  (A leaf's
 * counters and bits are not looked at here: they are allowed to over-count
 * for a moment, and one run of test_drop_races_removers under load tripped
 * a fuller check of a leaf here that could not be reproduced; exact verify
 * checks them against the slots of every leaf still linked.)
 */
static bool
obj_is_empty(hot_map_path *path, uint32_t level)
{
	if (level == HOT_MAP_LEVELS)
	{
		for (uint32_t i = 0; i < HOT_CHUNK_SLOTS; i++)
			if (atomic_load(&path->chunk->slot[i]) != 0)
				return false;
		return true;
	}

	hot_map_node *n = path->node[level];
	bool		leaf = level == HOT_MAP_LEVELS - 1;

	for (uint32_t i = 0; i < (leaf ? HOT_LEAF_CHUNKS : HOT_MAP_FANOUT); i++)
		if (atomic_load(&n->slot[i]) != 0)
			return false;
	return true;
}

/*
 * Drop one reference on the object at level of path, and free it when that
 * was the last: claim it (CAS 0 -> DEAD; a reference taken meanwhile keeps
 * it), unlink it from its parent, retire it, and drop the reference its
 * link held on the parent (which may free a leaf in turn).  Inner nodes
 * (the root and levels 1 .. HOT_MAP_LEVELS - 2) are never freed: an 8kB
 * node for every 2^20 rowids is little, and one freed had to come back
 * from a free page of its own size class at the next write in its range,
 * which a fragmented tier may not have with most of its bytes free.  The
 * path must be the one the reference was taken through: a live object's
 * parent cannot change (the object's link holds a reference on it), so it
 * is.
 */
static void
refs_drop(ls_hot_ctx *ctx, ls_hot_table *tbl, uint64_t rowid, hot_map_path *path,
		  uint32_t level)
{
	for (;;)
	{
		_Atomic uint32_t *refs = level == 0 ? &path->node[0]->refs : path_refs(path, level);
		uint32_t	old = atomic_fetch_sub(refs, 1);
		uint32_t	zero = 0;

		/*
		 * Never under-counted; DEAD only when the table's drop claimed the
		 * object (a remove, evict or forget that raced with it: the drop
		 * retires it, we must not).
		 */
		LS_ASSERT((old & ~HOT_REFS_DEAD) != 0);
		LS_ASSERT((old & HOT_REFS_DEAD) == 0 || !hot_table_is_live(tbl));
		if (old != 1 || level < HOT_MAP_LEVELS - 1)
			return;				/* inner nodes stay, as the root does */
		if (!atomic_compare_exchange_strong(refs, &zero, HOT_REFS_DEAD))
			return;				/* an inserter took a reference meanwhile */
		LS_ASSERT(obj_is_empty(path, level));

		void	   *obj = path_obj(path, level);
		uintptr_t	expected = (uintptr_t) obj;

		/*
		 * Fails only when an inserter has already replaced the DEAD object
		 * with a new one: unlinked all the same.  No ABA: obj is not reused
		 * before we retire it.
		 */
		atomic_compare_exchange_strong(path_link(path, rowid, level), &expected, 0);
		if (level < HOT_MAP_LEVELS)
			atomic_fetch_add(&tbl->map_gen, 1);	/* before the retire: hints */
		atomic_fetch_sub(&tbl->bytes, hot_obj_size(ctx->hot, obj));
		hot_retire(ctx, obj);
		level--;				/* the link's reference on the parent */
	}
}

/*
 * Find or create rowid's chunk (and the nodes above it) and take a
 * reference on the chunk for the caller's insert; path gets root .. leaf
 * and the chunk.  Release it with hot_map_release unless the insert made a
 * slot non-NULL (the reference is then the slot's).  Nodes on the way are
 * passed without a reference: a reference on the chunk keeps them (each
 * link holds one on its parent).  A missing or DEAD child is created (or
 * replaced) under a reference on its parent, which becomes the new link's;
 * a parent found DEAD restarts the walk from the root (never freed).  On
 * LS_NO_SPACE nothing is held and nothing created is left behind.
 */
ls_status
hot_map_acquire(ls_hot_ctx *ctx, ls_hot_table *tbl, uint64_t rowid, hot_map_path *path)
{
	hot_map_node *root;
	ls_status	st = root_get_or_create(ctx, tbl, &root);

	if (st != LS_OK)
		return st;
restart:
	path->node[0] = root;
	path->chunk = NULL;

	bool		held = false;	/* a reference on the parent (node[level - 1]) */

	for (uint32_t level = 1; level <= HOT_MAP_LEVELS; level++)
	{
		_Atomic uintptr_t *link = path_link(path, rowid, level);
		uintptr_t	cur = atomic_load_explicit(link, memory_order_acquire);
		void	   *n;

		if (cur != 0)
		{
			bool		live;

			if (level == HOT_MAP_LEVELS)
			{
				path->chunk = (hot_map_chunk *) cur;
				live = refs_take(&path->chunk->refs);
			}
			else
			{
				path->node[level] = (hot_map_node *) cur;
				live = !refs_dead(&path->node[level]->refs);
			}
			if (live)
			{
				/* the child's link holds the parent: ours can go */
				if (held)
					refs_drop(ctx, tbl, rowid, path, level - 1);
				held = false;
				continue;
			}
			/* DEAD: replace it (its freer's unlink will find ours and fail) */
		}
		if (!held)
		{
			if (!refs_take(&path->node[level - 1]->refs))
			{
				LS_ASSERT(level > 1);	/* the root is never DEAD */
				goto restart;	/* the parent is being freed */
			}
			held = true;
		}
		st = child_new(ctx, tbl, level, &n);
		if (st != LS_OK)
		{
			refs_drop(ctx, tbl, rowid, path, level - 1);
			return st;
		}
		if (atomic_compare_exchange_strong_explicit(link, &cur, (uintptr_t) n,
													memory_order_acq_rel,
													memory_order_acquire))
		{
			/* our parent reference is the link's now; n's is ours */
			if (level == HOT_MAP_LEVELS)
				path->chunk = n;
			else
				path->node[level] = n;
			continue;
		}
		child_discard(ctx, tbl, n); /* never published */
		level--;				/* look again, still holding the parent */
	}
	return LS_OK;
}

/* Give back a reference hot_map_acquire took (its slot stayed NULL). */
void
hot_map_release(ls_hot_ctx *ctx, ls_hot_table *tbl, uint64_t rowid, hot_map_path *path)
{
	refs_drop(ctx, tbl, rowid, path, HOT_MAP_LEVELS);
}

/*
 * Walk to rowid's chunk without taking anything: true when it exists (path
 * filled).  The caller then changes a non-NULL slot only with a CAS from
 * its expected value (a freed chunk's slots stay NULL), and when it made
 * the slot NULL calls hot_map_release with this path.
 */
bool
hot_map_find(ls_hot_table *tbl, uint64_t rowid, hot_map_path *path)
{
	hot_map_node *n;

	if (rowid >= LS_HOT_MAX_ROWID)
		return false;
	n = atomic_load_explicit(&tbl->root, memory_order_acquire);
	for (uint32_t level = 0; n != NULL && level < HOT_MAP_LEVELS; level++)
	{
		path->node[level] = n;
		if (level < HOT_MAP_LEVELS - 1)
			n = (hot_map_node *) atomic_load_explicit(&n->slot[level_index(rowid, level)],
													  memory_order_acquire);
	}
	if (n == NULL)
		return false;
	path->chunk = hot_map_chunk_of(path->node[HOT_MAP_LEVELS - 1], rowid);
	return path->chunk != NULL;
}

/* Leaf covering rowid, or NULL when the path does not exist. */
hot_map_node *
hot_map_leaf_find(ls_hot_table *tbl, uint64_t rowid)
{
	hot_map_node *n;

	if (rowid >= LS_HOT_MAX_ROWID)
		return NULL;
	n = atomic_load_explicit(&tbl->root, memory_order_acquire);
	for (uint32_t level = 0; n != NULL && level < HOT_MAP_LEVELS - 1; level++)
		n = (hot_map_node *) atomic_load_explicit(&n->slot[level_index(rowid, level)],
												  memory_order_acquire);
	return n;
}

/* rowid's slot value, 0 when its leaf or chunk does not exist. */
static uintptr_t
slot_value(ls_hot_table *tbl, uint64_t rowid)
{
	hot_map_node *leaf = hot_map_leaf_find(tbl, rowid);
	_Atomic uintptr_t *slot;

	if (leaf == NULL)
		return 0;
	slot = hot_map_leaf_slot(leaf, rowid);
	return slot != NULL ? atomic_load_explicit(slot, memory_order_acquire) : 0;
}

ls_hot_row *
ls_hot_row_get(ls_hot_table *tbl, uint64_t rowid)
{
	uintptr_t	v = slot_value(tbl, rowid);

	return HOT_SLOT_IS_ROW(v) ? (ls_hot_row *) v : NULL;
}

/*
 * ls_hot_row_get that remembers the leaf covering rowid in *hint, so that
 * the next lookup in the same leaf skips the walk from the root.  The hint
 * also remembers the map's root and the table's map_gen (read before the
 * walk that found the leaf): a dropped map has a new (or no) root, and an
 * emptied leaf is unlinked, then map_gen is raised, then it is retired.  So
 * a leaf is only reused while the caller, inside its epoch, still sees the
 * same root and map_gen -- then it cannot have been retired before the
 * caller's epoch began.  (A leaf unlinked but not yet counted in map_gen
 * has only NULL chunk pointers: the lookup reads NULL, as it would an
 * instant earlier.)  Only the leaf is remembered, not its chunks: chunks
 * come and go while the leaf lives.
 */
ls_hot_row *
ls_hot_row_get_hinted(ls_hot_table *tbl, uint64_t rowid, ls_hot_map_hint *hint)
{
	uint64_t	base = rowid & ~(uint64_t) (HOT_MAP_FANOUT - 1);
	hot_map_node *root = atomic_load_explicit(&tbl->root, memory_order_acquire);
	uint64_t	gen = atomic_load(&tbl->map_gen);
	hot_map_node *leaf;
	_Atomic uintptr_t *slot;
	uintptr_t	v;

	if (hint->leaf != NULL && hint->base == base && hint->root == root &&
		hint->gen == gen)
		leaf = hint->leaf;
	else
	{
		/* gen read before the walk: a leaf freed after it bumps it */
		leaf = hot_map_leaf_find(tbl, rowid);
		if (leaf == NULL)
			return NULL;		/* not remembered: the leaf may appear later */
		hint->leaf = leaf;
		hint->base = base;
		hint->root = root;
		hint->gen = gen;
	}
	slot = hot_map_leaf_slot(leaf, rowid);
	if (slot == NULL)
		return NULL;			/* chunk not created: no row there yet */
	v = atomic_load_explicit(slot, memory_order_acquire);
	return HOT_SLOT_IS_ROW(v) ? (ls_hot_row *) v : NULL;
}

ls_hot_row *
ls_hot_row_get_ref(ls_hot_table *tbl, uint64_t rowid, uint64_t *serial)
{
	uint64_t	w = atomic_load(&tbl->ref_serial);

	/*
	 * No row there: nothing to remember, and the serial stays unmarked (a
	 * marked serial makes the next row that leaves the table change it, so
	 * lookups of cold rows would otherwise do that on every probe).
	 */
	if (ls_hot_row_get(tbl, rowid) == NULL)
	{
		*serial = w;
		return NULL;
	}

	/*
	 * Observed first, then the slot again (the protocol in table.c).  Already
	 * marked: the (seq_cst) load that saw the mark comes after the marking
	 * RMW in the single total order, so a remover's load after its fence
	 * sees it too; only an unmarked serial needs the RMW (a cache line
	 * written once per serial, not once per reference).
	 */
	if ((w & 1) == 0)
		w = atomic_fetch_or(&tbl->ref_serial, 1) | 1;
	*serial = w;
	atomic_thread_fence(memory_order_seq_cst);
	return ls_hot_row_get(tbl, rowid);
}

ls_hot_row *
ls_hot_row_from_ref(ls_hot_table *tbl, uint64_t rowid, ls_hot_row *row,
					uint64_t serial)
{
	/* an untaken serial (bit 0 clear) never matches: nothing was remembered */
	if (row == NULL || (serial & 1) == 0 ||
		atomic_load_explicit(&tbl->ref_serial, memory_order_acquire) != serial)
		return NULL;

	/*
	 * The serial proves the header is not freed, not that it is still in
	 * the map: an evict unlinks first and changes the serial after, and a
	 * write of the row in the cold tier could come in between.  The
	 * evicted flag is set before the unlink, so a header read here without
	 * it is one a map lookup could still have returned.  (A removed row
	 * has no versions left: a fetch finds nothing and the caller falls
	 * back.)
	 */
	if (atomic_load(&row->evicted) != 0)
		return NULL;
	/* the taker remembered the header of this rowid: anything else is a bug */
	LS_ASSERT(row->rowid == rowid);
	return row->rowid == rowid ? row : NULL;
}

bool
ls_hot_rowid_is_dead(ls_hot_table *tbl, uint64_t rowid)
{
	return slot_value(tbl, rowid) == HOT_SLOT_DEAD;
}

void
ls_hot_rowid_forget(ls_hot_ctx *ctx, ls_hot_table *tbl, uint64_t rowid)
{
	hot_map_path path;
	hot_map_node *leaf;
	_Atomic uintptr_t *slot;
	uintptr_t	expected = HOT_SLOT_DEAD;

	LS_ASSERT(ls_hot_in_epoch(ctx));
	if (!hot_map_find(tbl, rowid, &path))
		return;					/* no chunk: not DEAD */
	leaf = path.node[HOT_MAP_LEVELS - 1];
	slot = hot_path_slot(&path, rowid);
	/* DEAD -> BUSY makes us the one owner; then clear the bit, then NULL */
	if (atomic_compare_exchange_strong(slot, &expected, HOT_SLOT_BUSY))
	{
		atomic_fetch_sub(&leaf->dead, 1);
		atomic_fetch_sub(&tbl->dead_rowids, 1);
		hot_occ_clear(leaf, rowid);
		atomic_store(slot, 0);
		hot_map_release(ctx, tbl, rowid, &path);	/* the slot's reference */
	}
}

/* ---- iteration ---------------------------------------------------------- */

/*
 * Collect up to max slots of [*cursor, end) in rowid order: live rows
 * (dead = false; into rows[]) or DEAD rowids (dead = true; into rowids[]).
 * Returns how many; fewer than max only when the range is exhausted, then
 * *cursor >= end, else *cursor = the last collected rowid + 1.  The walk
 * goes down from the root once per leaf, skips leaves whose counter is
 * zero, and restarts from the root after each skipped subtree (at most
 * HOT_MAP_LEVELS loads per skip, no state that could go stale).  Within a
 * leaf it walks the set bits of the occupancy bitmap and loads only those
 * slots (a bit may be stale: the slot's value decides), loading each
 * chunk pointer once (a set bit implies the chunk exists; a NULL chunk is
 * skipped all the same).  Inlined into each
 * caller, so the dead/rows/rowids tests fold away.
 */
static inline __attribute__((always_inline)) uint32_t
scan_slots(ls_hot_table *tbl, uint64_t *cursor, uint64_t end, bool dead,
		   ls_hot_row **rows, uint64_t *rowids, uint32_t max)
{
	uint64_t	r = *cursor;
	uint32_t	n = 0;

	end = LS_MIN(end, LS_HOT_MAX_ROWID);
	while (r < end)
	{
		hot_map_node *node = atomic_load_explicit(&tbl->root, memory_order_acquire);
		uint32_t	level;

		if (node == NULL)
			break;
		for (level = 0; level < HOT_MAP_LEVELS - 1; level++)
		{
			node = (hot_map_node *) atomic_load_explicit(&node->slot[level_index(r, level)],
														 memory_order_acquire);
			if (node == NULL)
				break;
		}
		if (node == NULL)
		{
			r = next_subtree(r, level);
			continue;
		}
		uint32_t	count = dead ? atomic_load(&node->dead) : atomic_load(&node->live);

		if (count > 0)
		{
			uint64_t	base = r & ~(uint64_t) (HOT_MAP_FANOUT - 1);
			uint32_t	stop = (uint32_t) LS_MIN(end - base, (uint64_t) HOT_MAP_FANOUT);
			uint32_t	ci = UINT32_MAX;	/* index of chunk, when loaded */
			hot_map_chunk *chunk = NULL;

			for (uint32_t w = (uint32_t) (r - base) >> 6; w * 64 < stop; w++)
			{
				uint64_t	bits = atomic_load_explicit(&node->occ[w], memory_order_acquire);

				if (w * 64 < r - base)
					bits &= ~UINT64_C(0) << ((r - base) & 63);	/* from r on */
				if (stop < w * 64 + 64)
					bits &= (UINT64_C(1) << (stop - w * 64)) - 1;	/* below end */
				while (bits != 0)
				{
					uint32_t	i = w * 64 + (uint32_t) __builtin_ctzll(bits);
					uintptr_t	v;

					bits &= bits - 1;
					if ((i >> HOT_CHUNK_BITS) != ci)
					{
						ci = i >> HOT_CHUNK_BITS;
						chunk = (hot_map_chunk *)
							atomic_load_explicit(&node->slot[ci], memory_order_acquire);
					}
					if (chunk == NULL)
						continue;
					v = atomic_load_explicit(&chunk->slot[i & (HOT_CHUNK_SLOTS - 1)],
											 memory_order_acquire);
					if (dead ? v == HOT_SLOT_DEAD : HOT_SLOT_IS_ROW(v))
					{
						if (rows != NULL)
							rows[n] = (ls_hot_row *) v;
						if (rowids != NULL)
							rowids[n] = base + i;
						if (++n == max)
						{
							*cursor = base + i + 1;
							return n;
						}
					}
				}
			}
		}
		r = next_subtree(r, HOT_MAP_LEVELS - 2);	/* the leaf's whole range */
	}
	*cursor = LS_MAX(*cursor, end);
	return n;
}

ls_hot_row *
ls_hot_scan_next(ls_hot_table *tbl, uint64_t *cursor, uint64_t end)
{
	ls_hot_row *row;

	return scan_slots(tbl, cursor, end, false, &row, NULL, 1) ? row : NULL;
}

uint32_t
ls_hot_scan_batch(ls_hot_table *tbl, uint64_t *cursor, uint64_t end,
				  ls_hot_row **rows, uint32_t max)
{
	if (max == 0)
		return 0;
	return scan_slots(tbl, cursor, end, false, rows, NULL, max);
}

bool
ls_hot_scan_next_dead(ls_hot_table *tbl, uint64_t *cursor, uint64_t end, uint64_t *rowid)
{
	return scan_slots(tbl, cursor, end, true, NULL, rowid, 1) == 1;
}

/*
 * One past the highest rowid in [floor, end) whose slot is not NULL (a row
 * or DEAD), 0 when there is none.  Walks down from end: absent subtrees and
 * leaves with both counters zero are skipped whole (one walk from the root
 * per leaf or skipped subtree, as scan_slots does forward); within a leaf
 * it walks the occupancy bits downwards.  The walk stops at floor, so its
 * cost is bounded by the span above floor, not by the table's size.
 */
uint64_t
ls_hot_table_used_end(ls_hot_table *tbl, uint64_t end, uint64_t floor)
{
	uint64_t	r;				/* candidates are rowids in [floor, r) */

	r = LS_MIN(end, LS_HOT_MAX_ROWID);
	while (r > floor)
	{
		uint64_t	top = r - 1;
		hot_map_node *node = atomic_load_explicit(&tbl->root, memory_order_acquire);
		uint32_t	level;

		if (node == NULL)
			return 0;
		for (level = 0; level < HOT_MAP_LEVELS - 1; level++)
		{
			node = (hot_map_node *) atomic_load_explicit(&node->slot[level_index(top, level)],
														 memory_order_acquire);
			if (node == NULL)
				break;
		}
		if (node == NULL)
		{
			/* the whole subtree holding top is absent: below its start */
			r = top & ~((UINT64_C(1) << level_shift(level)) - 1);
			continue;
		}
		uint64_t	base = top & ~(uint64_t) (HOT_MAP_FANOUT - 1);

		if (atomic_load(&node->live) > 0 || atomic_load(&node->dead) > 0)
		{
			uint32_t	t = (uint32_t) (top - base);

			for (uint32_t w = t >> 6;; w--)
			{
				uint64_t	bits = atomic_load_explicit(&node->occ[w], memory_order_acquire);

				if (w == t >> 6 && (t & 63) != 63)
					bits &= (UINT64_C(2) << (t & 63)) - 1;	/* up to top */
				while (bits != 0)
				{
					uint32_t	i = w * 64 + 63 - (uint32_t) __builtin_clzll(bits);
					_Atomic uintptr_t *slot = hot_map_leaf_slot(node, base + i);

					if (base + i < floor)
						return 0;	/* downwards: the rest is below too */
					if (slot != NULL &&
						atomic_load_explicit(slot, memory_order_acquire) != 0)
						return base + i + 1;
					bits &= ~(UINT64_C(1) << (i & 63));
				}
				if (w == 0)
					break;
			}
		}
		r = base;
	}
	return 0;
}

/* ---- drop ----------------------------------------------------------------- */

/*
 * Claim an object for the drop (a fetch-or of DEAD): false when a freer had
 * claimed it (it is empty and that freer unlinks and retires it).  After
 * the claim, removes, evicts and forgets still running on the dropped map
 * (the glue lets its worker's pack race with a drop) find the count DEAD
 * and free nothing; the drop retires the object.
 */
static bool
drop_claim(_Atomic uint32_t *refs)
{
	return (atomic_fetch_or(refs, HOT_REFS_DEAD) & HOT_REFS_DEAD) == 0;
}

static void
drop_chunk(ls_hot_ctx *ctx, ls_hot_table *tbl, hot_map_chunk *c)
{
	if (!drop_claim(&c->refs))
		return;
	for (uint32_t i = 0; i < HOT_CHUNK_SLOTS; i++)
	{
		uintptr_t	v = atomic_load_explicit(&c->slot[i], memory_order_acquire);

		if (v == HOT_SLOT_DEAD)
			atomic_fetch_sub(&tbl->dead_rowids, 1);
		else if (HOT_SLOT_IS_ROW(v))
			hot_row_retire_all(ctx, tbl, (ls_hot_row *) v);
		/* BUSY: a remove (which retires the row) or forget is under way */
	}
	atomic_fetch_sub(&tbl->bytes, hot_obj_size(ctx->hot, c));
	hot_retire(ctx, c);
}

static void
drop_subtree(ls_hot_ctx *ctx, ls_hot_table *tbl, hot_map_node *n)
{
	bool		leaf = n->level == HOT_MAP_LEVELS - 1;

	if (!drop_claim(&n->refs))
	{
		LS_ASSERT(n->level > 0);	/* nobody else frees the root */
		return;
	}

	for (uint32_t i = 0; i < (leaf ? HOT_LEAF_CHUNKS : HOT_MAP_FANOUT); i++)
	{
		uintptr_t	v = atomic_load_explicit(&n->slot[i], memory_order_acquire);

		if (v == 0)
			continue;
		if (leaf)
			drop_chunk(ctx, tbl, (hot_map_chunk *) v);
		else
			drop_subtree(ctx, tbl, (hot_map_node *) v);
	}
	atomic_fetch_sub(&tbl->bytes, hot_obj_size(ctx->hot, n));
	hot_retire(ctx, n);
}

/*
 * Unlink the whole map from the table, then retire every node, row and
 * version.  Readers that still hold pointers into it stay safe through their
 * epochs; the nodes' slots are left intact for them.  Each object and row
 * is claimed before it is retired, so a remove, evict or forget racing with
 * the drop never retires it a second time (drop_claim, hot_row_retire_all).
 */
void
hot_map_drop(ls_hot_ctx *ctx, ls_hot_table *tbl)
{
	hot_map_node *root = atomic_exchange(&tbl->root, NULL);

	/*
	 * After the map is unlinked and before any row is retired: a taker
	 * that marked the old serial has it overwritten here, and one that
	 * marks the new one reads the NULL root (renewed before the unlink, a
	 * taker could mark the new serial, find a row through the old root and
	 * keep a reference to it that nothing ends).
	 */
	atomic_thread_fence(memory_order_seq_cst);
	hot_ref_renew(tbl);
	if (root != NULL)
		drop_subtree(ctx, tbl, root);
}
