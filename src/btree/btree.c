/*
 * btree.c - B+-tree on buffer-managed pages (see README.md in this folder).
 *
 * Every operation is a loop around one attempt.  An attempt returns
 * LS_RESTART whenever an optimistic validation fails or a non-blocking
 * upgrade is refused; it has released everything it held by then, and the
 * loop counts the restart (ls_bm_count_restart) and starts again from the
 * root.  Nothing here longjmps and nothing blocks while holding a latch
 * except top-down (parent before child, left sibling before right), so
 * there is no latch cycle.
 *
 * Latch rules:
 *  - Descent: optimistic coupling through ls_bm_fix; the target node is
 *    upgraded to the mode the operation needs without blocking, or, when
 *    that is refused, latched blocking with only optimistic guards above
 *    it (re-validated by ls_bm_fix after the latch is taken).
 *  - Split: new pages are allocated first, then parent and node are
 *    upgraded to exclusive (non-blocking) in that order; a parent without
 *    room is split first (one level up, same key), then the whole
 *    operation restarts.
 *  - Merge: both siblings are fixed optimistically under the optimistic
 *    parent, then parent, left, right are upgraded to exclusive
 *    (non-blocking, top-down); a refused upgrade skips or retries the merge.
 *  - The meta latch protects the root swip and the height.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "leanstore/btree.h"

#define BT_MAX_HEIGHT	32
/* A node with more free bytes than this (after compaction) is underfull. */
#define BT_UNDERFULL	(LS_NODE_SIZE * 6 / 10)

/* Where a descent goes at each node. */
typedef enum bt_dir
{
	BT_KEY,						/* the node covering key (first sep >= key) */
	BT_AFTER,					/* the node covering keys just above key */
	BT_MIN,						/* leftmost */
	BT_MAX,						/* rightmost */
} bt_dir;

typedef struct bt_target
{
	bt_dir		dir;
	const uint8_t *key;
	uint32_t	klen;
} bt_target;

static inline uint8_t *
node_of(ls_bm *bm, const ls_guard *g)
{
	return ls_guard_page(bm, g)->data;
}

/* Position of the child (or leaf slot) the target selects.  Safe on torn data. */
static inline uint16_t
target_pos(const uint8_t *n, const bt_target *tg)
{
	bool		exact;
	uint16_t	pos;

	switch (tg->dir)
	{
		case BT_MIN:
			return 0;
		case BT_MAX:
			return ls_node_count(n);
		case BT_AFTER:
			pos = ls_node_lower_bound(n, tg->key, tg->klen, &exact);
			return exact ? (uint16_t) (pos + 1) : pos;
		case BT_KEY:
		default:
			return ls_node_lower_bound(n, tg->key, tg->klen, &exact);
	}
}

static inline ls_swip *
child_swip(uint8_t *n, uint16_t pos)
{
	return (ls_swip *) ls_node_child_ref(n, pos);
}

static inline uint64_t
swip_of(ls_bm *bm, const ls_guard *g)
{
	return ls_swip_from_frame(ls_bm_frame_index(bm, g->frame));
}

/* Optimistic guard on the meta latch; the uncontended case inline. */
static inline ls_status
meta_optimistic(ls_btree *t, ls_guard *g)
{
	uint64_t	w = atomic_load_explicit(&t->meta_latch.word, memory_order_acquire);

	if (LS_LIKELY((w & LS_LATCH_EXCLUSIVE) == 0))
	{
		*g = (ls_guard) {NULL, &t->meta_latch, w, LS_GUARD_OPTIMISTIC};
		return LS_OK;
	}
	return ls_guard_meta(&t->meta_latch, LS_GUARD_OPTIMISTIC, g);
}

/*
 * ls_bm_fix, but for shared/exclusive try the inline optimistic fast path
 * plus a non-blocking upgrade first (the common, uncontended case); fall back
 * to the blocking fix when the upgrade is refused.
 */
static inline ls_status
fix_child(ls_bm *bm, ls_guard *p, ls_swip *swip, ls_guard_mode mode, ls_guard *c)
{
	ls_status	st = ls_bm_fix(bm, p, swip, LS_GUARD_OPTIMISTIC, c);

	if (st != LS_OK || mode == LS_GUARD_OPTIMISTIC)
		return st;
	st = mode == LS_GUARD_EXCLUSIVE ? ls_guard_upgrade_exclusive(c) : ls_guard_upgrade_shared(c);
	if (LS_LIKELY(st == LS_OK))
		return LS_OK;
	return ls_bm_fix(bm, p, swip, mode, c);
}

/*
 * Descend to the node at `level` on the target's path and latch it in
 * `mode`.  On LS_OK, *node holds it and *parent is its parent (meta guard for
 * the root), optimistic, valid as of the moment node was latched.  On any
 * other status nothing is held.  LS_NOT_FOUND: the tree has fewer levels.
 */
static ls_status
descend(ls_btree *t, const bt_target *tg, uint16_t level, ls_guard_mode mode,
		ls_guard *parent, ls_guard *node)
{
	ls_bm	   *bm = t->bm;
	ls_guard	p,
				c;
	ls_status	st = meta_optimistic(t, &p);

	if (st != LS_OK)
		return st;
	uint32_t	height = atomic_load_explicit(&t->height, memory_order_relaxed);
	ls_swip    *swip = &t->root;

	if (height == 0 || height > BT_MAX_HEIGHT || height - 1 < level)
		return ls_guard_validate(&p) == LS_OK ? LS_NOT_FOUND : LS_RESTART;
	/* ls_bm_fix validates p, so the height read above is checked too. */
	for (uint32_t cur = height - 1;; cur--)
	{
		st = fix_child(bm, &p, swip, cur == level ? mode : LS_GUARD_OPTIMISTIC, &c);
		if (st != LS_OK)
			return st;
		uint8_t    *n = node_of(bm, &c);

		if (LS_UNLIKELY(ls_node_header(n)->level != cur))
		{
			/* torn (optimistic) or structure moved: retry from the root */
			bool		latched = c.mode != LS_GUARD_OPTIMISTIC;

			ls_guard_release(&c);
			return latched ? LS_CORRUPT : LS_RESTART;
		}
		if (cur == level)
		{
			*parent = p;
			*node = c;
			return LS_OK;
		}
		swip = child_swip(n, target_pos(n, tg));
		p = c;
	}
}

/* ------------------------------------------------------------------------
 * Buffer pool callbacks
 * ------------------------------------------------------------------------ */

/*
 * Descend from the root by a key of the child's range (its upper fence, or
 * rightmost for +infinity) without loading or touching pages, until a swip
 * that names the child's frame.  The caller re-checks the swip after
 * upgrading, so a torn read only costs a failed eviction.
 */
static ls_status
bt_find_parent(ls_bm *bm, void *obj, ls_frame *child, ls_parent *out)
{
	ls_btree   *t = obj;
	uint8_t    *cn = ls_bm_page(bm, ls_bm_frame_index(bm, child))->data;
	uint8_t		fence[LS_BTREE_MAX_KEY];
	uint32_t	flen;
	const uint8_t *f = ls_node_upper_fence(cn, &flen);
	uint16_t	child_level = ls_node_header(cn)->level;
	uint64_t	want = ls_swip_from_frame(ls_bm_frame_index(bm, child));
	ls_guard	p;

	if (flen > LS_BTREE_MAX_KEY)
		return LS_RESTART;
	memcpy(fence, f, flen);
	bt_target	tg = {flen ? BT_KEY : BT_MAX, fence, flen};

	if (ls_guard_meta(&t->meta_latch, LS_GUARD_OPTIMISTIC, &p) != LS_OK)
		return LS_RESTART;
	ls_swip    *swip = &t->root;

	for (int depth = 0; depth < BT_MAX_HEIGHT; depth++)
	{
		uint64_t	raw = ls_swip_load(swip);

		if (ls_guard_validate(&p) != LS_OK)
			return LS_RESTART;
		if (raw == want)
		{
			out->guard = p;
			out->swip = swip;
			return LS_OK;
		}
		if (!ls_swip_is_swizzled(raw) || ls_swip_frame(raw) >= ls_bm_n_frames(bm))
			return LS_NOT_FOUND;
		ls_frame   *nf = ls_bm_frame(bm, ls_swip_frame(raw));
		ls_guard	c = {nf, &nf->latch, 0, LS_GUARD_OPTIMISTIC};

		if (ls_latch_optimistic(&nf->latch, &c.version) != LS_OK || ls_guard_validate(&p) != LS_OK)
			return LS_RESTART;
		uint8_t    *n = node_of(bm, &c);

		if (ls_node_header(n)->level <= child_level)
			return ls_guard_validate(&c) == LS_OK ? LS_NOT_FOUND : LS_RESTART;
		swip = child_swip(n, target_pos(n, &tg));
		p = c;
	}
	return LS_RESTART;
}

/* An inner node may leave memory only when no child is swizzled. */
static bool
bt_is_evictable(ls_bm *bm, void *obj, ls_frame *f)
{
	uint8_t    *n = ls_bm_page(bm, ls_bm_frame_index(bm, f))->data;
	uint16_t	count = ls_node_count(n);

	(void) obj;
	if (ls_node_is_leaf(n))
		return true;
	for (uint16_t i = 0; i <= count; i++)
		if (ls_swip_is_swizzled(*ls_node_child_ref(n, i)))
			return false;
	return true;
}

/*
 * On disk, child references are block numbers of the tree's file: page ids
 * name a registration (dt_id) that does not survive the process group.
 * checkpoint turns every child swip of a private copy into its block,
 * loaded turns the blocks of a page just read back into page ids.
 */
static ls_status
bt_checkpoint(ls_bm *bm, void *obj, ls_frame *f, ls_page *copy)
{
	uint8_t    *n = copy->data;

	(void) obj;
	(void) f;
	if (ls_node_is_leaf(n))
		return LS_OK;
	if (ls_node_header(n)->count > LS_NODE_MAX_SLOTS)
		return LS_RESTART;
	for (uint16_t i = 0; i <= ls_node_header(n)->count; i++)
	{
		uint64_t   *ref = ls_node_child_ref(n, i);
		ls_pid		pid = ls_bm_swip_to_pid(bm, *ref);

		if (pid == LS_PID_INVALID)
			return LS_RESTART;
		*ref = ls_pid_block(pid);
	}
	return LS_OK;
}

static ls_status
bt_loaded(ls_bm *bm, void *obj, ls_pid pid, ls_page *page)
{
	uint8_t    *n = page->data;
	char		msg[8];

	(void) bm;
	(void) obj;
	if (ls_node_check(n, msg, sizeof(msg)) != LS_OK)
		return LS_CORRUPT;
	if (ls_node_is_leaf(n))
		return LS_OK;
	for (uint16_t i = 0; i <= ls_node_header(n)->count; i++)
	{
		uint64_t   *ref = ls_node_child_ref(n, i);

		if (*ref >= LS_BLOCK_INVALID)
			return LS_CORRUPT;
		*ref = ls_swip_from_pid(ls_pid_make(ls_pid_dt(pid), (uint32_t) *ref));
	}
	return LS_OK;
}

static const ls_dt_ops bt_ops = {
	.find_parent = bt_find_parent,
	.is_evictable = bt_is_evictable,
	.checkpoint = bt_checkpoint,
	.loaded = bt_loaded,
};

void
ls_btree_register_type(void)
{
	ls_bm_register_type(LS_DT_BTREE, &bt_ops);
}

/* ------------------------------------------------------------------------
 * Life cycle
 * ------------------------------------------------------------------------ */
static void
tree_init(ls_bm *bm, ls_btree *t)
{
	memset(t, 0, sizeof(*t));
	ls_latch_init(&t->meta_latch);
	t->bm = bm;
	t->append_frame = UINT64_MAX;
}

/* A new root leaf for a registered tree. */
static ls_status
tree_new_root(ls_bm *bm, ls_btree *t)
{
	ls_guard	g;
	ls_status	st = ls_bm_alloc_page(bm, t->dt_id, LS_DT_BTREE, &g);

	if (st != LS_OK)
	{
		ls_bm_unregister_dt(bm, t->dt_id);
		return st;
	}
	ls_node_init(node_of(bm, &g), 0, NULL, 0, NULL, 0);
	ls_guard_mark_dirty(&g);
	atomic_store_explicit(&t->height, 1, memory_order_relaxed);
	ls_swip_store(&t->root, swip_of(bm, &g));
	ls_guard_release(&g);
	return LS_OK;
}

ls_status
ls_btree_create(ls_bm *bm, ls_btree *t)
{
	ls_status	st;

	tree_init(bm, t);
	st = ls_bm_register_dt(bm, LS_DT_BTREE, t, &t->dt_id);
	if (st != LS_OK)
		return st;
	return tree_new_root(bm, t);
}

ls_status
ls_btree_create_in_file(ls_bm *bm, ls_btree *t, const ls_bm_file *file, uint32_t n_blocks)
{
	ls_status	st;

	tree_init(bm, t);
	st = ls_bm_register_file(bm, LS_DT_BTREE, t, file, n_blocks, &t->dt_id);
	if (st != LS_OK)
		return st;
	return tree_new_root(bm, t);
}

ls_status
ls_btree_open(ls_bm *bm, ls_btree *t, const ls_bm_file *file, uint32_t n_blocks,
			  uint32_t root_block, uint32_t height)
{
	ls_status	st;

	if (root_block >= n_blocks || height == 0 || height > 64)
		return LS_CORRUPT;
	tree_init(bm, t);
	st = ls_bm_register_file(bm, LS_DT_BTREE, t, file, n_blocks, &t->dt_id);
	if (st != LS_OK)
		return st;
	atomic_store_explicit(&t->height, height, memory_order_relaxed);
	ls_swip_store(&t->root, ls_swip_from_pid(ls_pid_make(t->dt_id, root_block)));
	return LS_OK;
}

ls_status
ls_btree_root(ls_btree *t, uint32_t *root_block, uint32_t *height)
{
	ls_guard	meta;
	ls_status	st = ls_guard_meta(&t->meta_latch, LS_GUARD_SHARED, &meta);
	ls_pid		pid;

	if (st != LS_OK)
		return st;
	pid = ls_bm_swip_to_pid(t->bm, ls_swip_load(&t->root));
	*height = atomic_load_explicit(&t->height, memory_order_relaxed);
	ls_guard_release(&meta);
	if (pid == LS_PID_INVALID)
		return LS_CORRUPT;
	*root_block = ls_pid_block(pid);
	return LS_OK;
}

void
ls_btree_drop(ls_btree *t)
{
	/*
	 * Under the meta latch, so that an optimistic walk from the root (a
	 * page provider's find_parent) that started before sees the version
	 * move and restarts, instead of following the old root into frames
	 * that are freed and reused below.
	 */
	ls_latch_lock_exclusive(&t->meta_latch);
	ls_bm_drop_dt(t->bm, t->dt_id);
	atomic_store_explicit(&t->height, 0, memory_order_relaxed);
	ls_swip_store(&t->root, LS_PID_INVALID);
	atomic_store(&t->append_frame, UINT64_MAX);
	ls_latch_unlock_exclusive(&t->meta_latch);
}

/*
 * Free the subtree behind swip (its holder `parent` is latched by us).
 * Leaves on disk are freed by page id without reading them.
 */
static ls_status
destroy_subtree(ls_btree *t, ls_guard *parent, ls_swip *swip, uint16_t level)
{
	ls_bm	   *bm = t->bm;
	ls_guard	c;
	ls_status	st;
	uint64_t	raw = ls_swip_load(swip);

	LS_ASSERT(ls_guard_is_exclusive(parent));
	if (level == 0 && !ls_swip_is_swizzled(raw))
	{
		ls_bm_free_pid(bm, ls_swip_pid(raw));
		return LS_OK;
	}
	while ((st = ls_bm_fix(bm, parent, swip, LS_GUARD_EXCLUSIVE, &c)) == LS_RESTART)
		ls_bm_count_restart(bm);
	if (st != LS_OK)
		return st;
	uint8_t    *n = node_of(bm, &c);

	if (ls_node_header(n)->level != level)
	{
		ls_guard_release(&c);
		return LS_CORRUPT;
	}
	for (uint16_t i = 0; level > 0 && i <= ls_node_header(n)->count; i++)
	{
		st = destroy_subtree(t, &c, child_swip(n, i), (uint16_t) (level - 1));
		if (st != LS_OK)
		{
			ls_guard_release(&c);
			return st;
		}
	}
	ls_bm_free_page(bm, &c);
	return LS_OK;
}

ls_status
ls_btree_destroy(ls_btree *t)
{
	ls_guard	meta;
	ls_status	st = ls_guard_meta(&t->meta_latch, LS_GUARD_EXCLUSIVE, &meta);

	if (st != LS_OK)
		return st;
	uint32_t	height = atomic_load_explicit(&t->height, memory_order_relaxed);

	st = height ? destroy_subtree(t, &meta, &t->root, (uint16_t) (height - 1)) : LS_OK;
	if (st == LS_OK)
	{
		atomic_store_explicit(&t->height, 0, memory_order_relaxed);
		ls_swip_store(&t->root, LS_PID_INVALID);
		atomic_store(&t->append_frame, UINT64_MAX);
	}
	ls_guard_release(&meta);
	if (st == LS_OK)
		ls_bm_unregister_dt(t->bm, t->dt_id);
	return st;
}

/* ------------------------------------------------------------------------
 * Structure changes
 * ------------------------------------------------------------------------ */

/*
 * Split the root (node and meta latched exclusively): `root` and `left` are
 * fresh pages; the new root gets (sep -> left) and node as its upper child.
 */
static ls_status
split_root(ls_btree *t, ls_guard *meta, ls_guard *node, ls_guard *root, ls_guard *left,
		   const ls_node_split_plan *plan)
{
	ls_bm	   *bm = t->bm;
	uint8_t    *n = node_of(bm, node);
	uint8_t    *rn = node_of(bm, root);
	uint8_t		tmp[LS_NODE_SIZE] __attribute__((aligned(8)));

	LS_ASSERT(meta->frame == NULL && ls_guard_is_exclusive(meta));
	LS_ASSERT(ls_guard_is_exclusive(node) && ls_guard_is_exclusive(root) &&
			  ls_guard_is_exclusive(left));
	ls_node_split(n, node_of(bm, left), plan, tmp);
	ls_node_init(rn, (uint16_t) (ls_node_header(n)->level + 1), NULL, 0, NULL, 0);
	ls_node_header(rn)->upper = swip_of(bm, node);
	uint64_t	lref = swip_of(bm, left);

	if (ls_node_insert(rn, plan->sep, plan->sep_len, &lref, 8) != LS_OK)
		return LS_CORRUPT;		/* an empty node always has room */
	ls_guard_mark_dirty(node);
	ls_guard_mark_dirty(left);
	ls_guard_mark_dirty(root);
	atomic_store_explicit(&t->height, atomic_load(&t->height) + 1, memory_order_relaxed);
	ls_swip_store(&t->root, swip_of(bm, root));
	return LS_OK;
}

/* Give back pages allocated for a split that did not happen. */
static void
free_unused(ls_bm *bm, ls_guard *a, ls_guard *b)
{
	if (a->mode == LS_GUARD_EXCLUSIVE)
		ls_bm_free_page(bm, a);
	if (b->mode == LS_GUARD_EXCLUSIVE)
		ls_bm_free_page(bm, b);
}

/*
 * Split the node at `level` on key's path.  LS_OK means "something changed
 * or nothing needed changing: retry the operation".  A parent without room
 * for the separator is split first.  inserting: key's insert found the leaf
 * full (ls_node_plan_split reads ascending loads and runs from it).
 *
 * New pages are allocated before any latch is upgraded: allocation may run
 * eviction inline, and eviction needs to latch the parents of its victims,
 * which would be impossible for every child of an exclusively held parent.
 */
static ls_status
split_node(ls_btree *t, const uint8_t *key, uint32_t klen, uint16_t level, bool inserting)
{
	ls_bm	   *bm = t->bm;
	bt_target	tg = {BT_KEY, key, klen};
	ls_guard	p,
				c,
				left = {.mode = LS_GUARD_NONE},
				root = {.mode = LS_GUARD_NONE};
	ls_status	st = descend(t, &tg, level, LS_GUARD_OPTIMISTIC, &p, &c);

	if (st != LS_OK)
		return st;
	bool		is_root = p.frame == NULL;

	st = ls_bm_alloc_page(bm, t->dt_id, LS_DT_BTREE, &left);
	if (st == LS_OK && is_root)
		st = ls_bm_alloc_page(bm, t->dt_id, LS_DT_BTREE, &root);
	if (st == LS_OK && ls_guard_upgrade_exclusive(&p) != LS_OK)
		st = LS_RESTART;
	if (st == LS_OK && ls_guard_upgrade_exclusive(&c) != LS_OK)
	{
		ls_guard_release(&p);
		st = LS_RESTART;
	}
	if (st != LS_OK)
	{
		free_unused(bm, &left, &root);
		return st;
	}
	uint8_t    *n = node_of(bm, &c);
	ls_node_split_plan plan;
	bool		parent_full = false,
				split = false;

	if (ls_node_plan_split(n, inserting ? key : NULL, klen, &plan) != LS_OK)
		st = LS_OK;				/* too few entries to split: caller retries */
	else if (is_root)
	{
		st = split_root(t, &p, &c, &root, &left, &plan);
		split = st == LS_OK;
	}
	else if (!ls_node_can_insert(node_of(bm, &p), plan.sep_len, 8))
		parent_full = true;
	else
	{
		uint8_t		tmp[LS_NODE_SIZE] __attribute__((aligned(8)));
		uint64_t	lref = swip_of(bm, &left);

		ls_node_split(n, node_of(bm, &left), &plan, tmp);
		/* (sep -> left) goes just before the slot that points at n. */
		if (ls_node_insert(node_of(bm, &p), plan.sep, plan.sep_len, &lref, 8) != LS_OK)
			st = LS_CORRUPT;	/* room was checked under the latch */
		ls_guard_mark_dirty(&left);
		ls_guard_mark_dirty(&c);
		ls_guard_mark_dirty(&p);
		split = true;
	}
	if (split)
	{
		ls_guard_release(&left);
		ls_guard_release(&root);
		atomic_fetch_add_explicit(&t->splits, 1, memory_order_relaxed);
	}
	else
		free_unused(bm, &left, &root);
	ls_guard_release(&c);
	ls_guard_release(&p);
	if (parent_full)
		return split_node(t, key, klen, (uint16_t) (level + 1), false);
	return st;
}

/* Root is an inner node without separators: its only child becomes root. */
static ls_status
collapse_root(ls_btree *t)
{
	ls_bm	   *bm = t->bm;
	bt_target	tg = {BT_MIN, NULL, 0};
	ls_guard	meta,
				root;
	uint32_t	height = atomic_load_explicit(&t->height, memory_order_relaxed);

	if (height < 2)
		return LS_OK;
	ls_status	st = descend(t, &tg, (uint16_t) (height - 1), LS_GUARD_OPTIMISTIC, &meta, &root);

	if (st != LS_OK)
		return st == LS_NOT_FOUND ? LS_OK : st;
	if (meta.frame != NULL)
		return LS_RESTART;
	if (ls_guard_upgrade_exclusive(&meta) != LS_OK)
		return LS_RESTART;
	if (ls_guard_upgrade_exclusive(&root) != LS_OK)
	{
		ls_guard_release(&meta);
		return LS_RESTART;
	}
	uint8_t    *n = node_of(bm, &root);

	if (!ls_node_is_leaf(n) && ls_node_header(n)->count == 0)
	{
		ls_swip_store(&t->root, ls_node_header(n)->upper);
		atomic_fetch_sub_explicit(&t->height, 1, memory_order_relaxed);
		ls_bm_free_page(bm, &root);
	}
	else
		ls_guard_release(&root);
	ls_guard_release(&meta);
	return LS_OK;
}

/*
 * Try to merge the node at `level` on key's path with a sibling.  Returns
 * LS_OK with *merged when it merged (the parent may now be underfull).
 * Best effort: LS_OK without merging when the pair does not fit.
 */
static ls_status
merge_node(ls_btree *t, const uint8_t *key, uint32_t klen, uint16_t level, bool *merged)
{
	ls_bm	   *bm = t->bm;
	bt_target	tg = {BT_KEY, key, klen};
	ls_guard	p,
				c,
				lg,
				rg;
	ls_status	st = descend(t, &tg, level, LS_GUARD_OPTIMISTIC, &p, &c);

	*merged = false;
	if (st != LS_OK)
		return st;
	if (p.frame == NULL)
		return LS_OK;			/* the root has no siblings */
	if (ls_node_free_after_compaction(node_of(bm, &c)) <= BT_UNDERFULL)
		return ls_guard_validate(&c);
	/*
	 * Siblings are fixed (loaded if needed) while the parent is still
	 * optimistic, then parent, left, right are upgraded without blocking:
	 * loading under an exclusive parent could starve the pool (see split).
	 */
	uint8_t    *pn = node_of(bm, &p);
	uint16_t	count = ls_node_count(pn);
	uint16_t	pos = target_pos(pn, &tg);

	if (count == 0 || pos > count)
		return ls_guard_validate(&p);
	uint16_t	lpos = pos < count ? pos : (uint16_t) (pos - 1);

	st = ls_bm_fix(bm, &p, child_swip(pn, lpos), LS_GUARD_OPTIMISTIC, &lg);
	if (st != LS_OK)
		return st;
	st = ls_bm_fix(bm, &p, child_swip(pn, (uint16_t) (lpos + 1)), LS_GUARD_OPTIMISTIC, &rg);
	if (st != LS_OK)
		return st;
	if (ls_guard_upgrade_exclusive(&p) != LS_OK)
		return LS_RESTART;
	if (ls_guard_upgrade_exclusive(&lg) != LS_OK)
	{
		ls_guard_release(&p);
		return LS_RESTART;
	}
	if (ls_guard_upgrade_exclusive(&rg) != LS_OK)
	{
		ls_guard_release(&lg);
		ls_guard_release(&p);
		return LS_RESTART;
	}
	uint8_t		tmp[LS_NODE_SIZE] __attribute__((aligned(8)));

	if (ls_node_header(node_of(bm, &lg))->level != level || ls_node_header(node_of(bm, &rg))->level != level)
		st = LS_CORRUPT;
	else if (ls_node_merge(node_of(bm, &lg), node_of(bm, &rg), tmp) == LS_OK)
	{
		ls_node_remove_at(pn, lpos);
		ls_guard_mark_dirty(&rg);
		ls_guard_mark_dirty(&p);
		ls_bm_free_page(bm, &lg);
		*merged = true;
		atomic_fetch_add_explicit(&t->merges, 1, memory_order_relaxed);
	}
	ls_guard_release(&lg);
	ls_guard_release(&rg);
	ls_guard_release(&p);
	return st;
}

/* After a remove: merge upward while nodes become underfull (best effort). */
static void
rebalance(ls_btree *t, const uint8_t *key, uint32_t klen)
{
	bool		any = false;

	for (uint16_t level = 0; level < BT_MAX_HEIGHT; level++)
	{
		bool		merged = false;
		ls_status	st;
		int			tries = 0;

		while ((st = merge_node(t, key, klen, level, &merged)) == LS_RESTART && ++tries < 8)
			ls_bm_count_restart(t->bm);
		if (st != LS_OK || !merged)
			break;
		any = true;
	}
	/* Merges can leave the root with a single child. */
	for (int tries = 0; any && collapse_root(t) == LS_RESTART && tries < 8; tries++)
		ls_bm_count_restart(t->bm);
}

/* ------------------------------------------------------------------------
 * Point operations
 * ------------------------------------------------------------------------ */
/*
 * Leaf descent for point operations, the hot path: optimistic coupling that
 * stops at the first node claiming to be a leaf (a torn claim fails the
 * caller's validation or upgrade), with nothing per level beyond
 * ls_bm_fix's inline fast path and the node search.  On LS_OK *c is the
 * leaf (optimistic), *p its parent (optimistic), *swip the leaf's swip.
 */
static inline ls_status
descend_leaf(ls_btree *t, const uint8_t *key, uint32_t klen, ls_guard *p, ls_guard *c, ls_swip **swip)
{
	ls_bm	   *bm = t->bm;
	ls_status	st = meta_optimistic(t, p);

	if (st != LS_OK)
		return st;
	*swip = &t->root;
	for (int depth = 0; depth < BT_MAX_HEIGHT; depth++)
	{
		st = ls_bm_fix(bm, p, *swip, LS_GUARD_OPTIMISTIC, c);
		if (st != LS_OK)
			return st;
		uint8_t    *n = node_of(bm, c);

		if (ls_node_is_leaf(n))
			return LS_OK;
		*swip = (ls_swip *) ls_node_child_for(n, key, klen);
		*p = *c;
	}
	return LS_RESTART;
}

/*
 * The leaf for key, latched exclusively: upgrade the optimistic leaf, or,
 * when that is refused (contention), wait for it through the parent.
 */
static ls_status
leaf_exclusive(ls_btree *t, const uint8_t *key, uint32_t klen, ls_guard *c)
{
	ls_guard	p;
	ls_swip    *swip;
	ls_status	st = descend_leaf(t, key, klen, &p, c, &swip);

	if (st != LS_OK)
		return st;
	if (ls_guard_upgrade_exclusive(c) != LS_OK &&
		(st = ls_bm_fix(t->bm, &p, swip, LS_GUARD_EXCLUSIVE, c)) != LS_OK)
		return st;
	if (LS_UNLIKELY(!ls_node_is_leaf(node_of(t->bm, c))))
	{
		ls_guard_release(c);
		return LS_RESTART;		/* a torn "leaf" claim that validated later */
	}
	return LS_OK;
}

static ls_status
lookup_once(ls_btree *t, const uint8_t *key, uint32_t klen, void *out, uint32_t cap, uint32_t *vlen)
{
	ls_guard	p,
				c;
	ls_swip    *swip;
	ls_status	st = descend_leaf(t, key, klen, &p, &c, &swip);

	if (st != LS_OK)
		return st;
	uint8_t    *n = node_of(t->bm, &c);
	bool		exact;
	uint16_t	pos = ls_node_lower_bound(n, key, klen, &exact);
	uint32_t	len = 0;

	st = LS_NOT_FOUND;
	if (exact)
	{
		const uint8_t *v = ls_node_value(n, pos, &len);

		st = LS_TOO_LARGE;
		if (len <= cap)
		{
			memcpy(out, v, len);
			st = LS_OK;
		}
	}
	if (ls_guard_validate(&c) != LS_OK)
		return LS_RESTART;
	*vlen = len;
	return st;
}

ls_status
ls_btree_lookup(ls_btree *t, const uint8_t *key, uint32_t klen, void *out, uint32_t cap, uint32_t *vlen)
{
	ls_status	st = ls_btree_check_kv(klen, 0);

	if (st != LS_OK)
		return st;
	for (;;)
	{
		st = lookup_once(t, key, klen, out, cap, vlen);

		if (LS_LIKELY(st != LS_RESTART))
			return st;
		ls_bm_count_restart(t->bm);
	}
}

/* Remember the rightmost leaf for ls_btree_append. */
static inline void
note_rightmost(ls_btree *t, const ls_guard *leaf, const uint8_t *n)
{
	if (ls_node_cheader(n)->upper_len == 0)
	{
		atomic_store_explicit(&t->append_pid, leaf->frame->pid, memory_order_relaxed);
		atomic_store_explicit(&t->append_frame, ls_bm_frame_index(t->bm, leaf->frame), memory_order_release);
	}
}

ls_status
ls_btree_insert(ls_btree *t, const uint8_t *key, uint32_t klen, const void *val, uint32_t vlen)
{
	ls_status	st = ls_btree_check_kv(klen, vlen);

	if (st != LS_OK)
		return st;
	for (;;)
	{
		ls_guard	c;

		st = leaf_exclusive(t, key, klen, &c);
		if (st == LS_OK)
		{
			uint8_t    *n = node_of(t->bm, &c);
			bool		exact;
			uint16_t	pos = ls_node_lower_bound(n, key, klen, &exact);

			if (exact)
			{
				ls_guard_release(&c);
				return LS_EXISTS;
			}
			if (ls_node_can_insert(n, klen, vlen))
			{
				st = ls_node_insert_at(n, pos, key, klen, val, vlen);
				ls_guard_mark_dirty(&c);
				note_rightmost(t, &c, n);
				ls_guard_release(&c);
				return st;
			}
			ls_guard_release(&c);
			st = split_node(t, key, klen, 0, true);
			if (st == LS_OK)
				continue;
		}
		if (st != LS_RESTART)
			return st;
		ls_bm_count_restart(t->bm);
	}
}

/*
 * Fast path for ascending keys: latch the remembered rightmost leaf without
 * a descent.  Valid only if, under its exclusive latch, the frame still holds
 * a page of this tree (resident, same pid) that is a leaf with an infinite
 * upper fence (only the rightmost leaf has one) and the first key sorts after
 * its last key (or its lower fence when empty).  Appends kv[0..n) in order
 * while they fit (the caller's keys ascend strictly), under one latch;
 * returns how many went in (0: none, the caller takes the slow path).
 */
static uint32_t
try_append_run(ls_btree *t, const ls_btree_kv *kv, uint32_t n)
{
	ls_bm	   *bm = t->bm;
	uint64_t	idx = atomic_load_explicit(&t->append_frame, memory_order_acquire);
	ls_pid		pid = atomic_load_explicit(&t->append_pid, memory_order_relaxed);
	uint32_t	done = 0;

	if (idx >= ls_bm_n_frames(bm))
		return 0;
	ls_frame   *f = ls_bm_frame(bm, (uint32_t) idx);

	if (!ls_latch_try_lock_exclusive(&f->latch))
		return 0;
	ls_guard	g = {f, &f->latch, 0, LS_GUARD_EXCLUSIVE};
	ls_page    *pg = ls_bm_page(bm, (uint32_t) idx);
	uint8_t    *n0 = pg->data;
	uint32_t	state = atomic_load_explicit(&f->state, memory_order_relaxed);
	bool		ok = (state == LS_FRAME_HOT || state == LS_FRAME_COOL) && f->pid == pid &&
		pg->hdr.dt_id == t->dt_id && pg->hdr.dt_type == LS_DT_BTREE &&
		ls_node_is_leaf(n0) && ls_node_header(n0)->upper_len == 0 &&
		ls_node_can_insert(n0, kv[0].klen, kv[0].vlen);

	if (ok)
	{
		uint16_t	count = ls_node_header(n0)->count;
		uint8_t		last[LS_BTREE_MAX_KEY];
		uint32_t	lastlen;
		const uint8_t *lf = count ? last : ls_node_lower_fence(n0, &lastlen);

		if (count)
			lastlen = ls_node_key(n0, (uint16_t) (count - 1), last);
		ok = (count == 0 && lastlen == 0) || ls_key_cmp(lf, lastlen, kv[0].key, kv[0].klen) < 0;
	}
	while (ok && done < n && ls_node_can_insert(n0, kv[done].klen, kv[done].vlen))
	{
		LS_ASSERT(done == 0 || ls_key_cmp(kv[done - 1].key, kv[done - 1].klen,
										  kv[done].key, kv[done].klen) < 0);
		if (ls_node_insert_at(n0, ls_node_header(n0)->count, kv[done].key, kv[done].klen,
							  kv[done].val, kv[done].vlen) != LS_OK)
			break;
		done++;
	}
	if (done > 0)
	{
		uint32_t	cool = LS_FRAME_COOL;

		atomic_compare_exchange_strong(&f->state, &cool, LS_FRAME_HOT);
		ls_guard_mark_dirty(&g);
		atomic_fetch_add_explicit(&t->append_hits, done, memory_order_relaxed);
	}
	ls_guard_release(&g);
	return done;
}

ls_status
ls_btree_append(ls_btree *t, const uint8_t *key, uint32_t klen, const void *val, uint32_t vlen)
{
	ls_btree_kv kv = {key, klen, val, vlen};

	return ls_btree_append_batch(t, &kv, 1, NULL);
}

ls_status
ls_btree_append_batch(ls_btree *t, const ls_btree_kv *kv, uint32_t n, uint32_t *done)
{
	ls_status	st = LS_OK;
	uint32_t	i = 0;

	for (uint32_t j = 0; j < n && st == LS_OK; j++)
		st = ls_btree_check_kv(kv[j].klen, kv[j].vlen);
	while (st == LS_OK && i < n)
	{
		uint32_t	k = try_append_run(t, kv + i, n - i);

		if (k == 0)
		{
			/* no room (or no hint): one insert splits and notes the new leaf */
			st = ls_btree_insert(t, kv[i].key, kv[i].klen, kv[i].val, kv[i].vlen);
			k = st == LS_OK ? 1 : 0;
		}
		i += k;
	}
	if (done != NULL)
		*done = i;
	return st;
}

ls_status
ls_btree_update(ls_btree *t, const uint8_t *key, uint32_t klen, const void *val, uint32_t vlen)
{
	ls_status	st = ls_btree_check_kv(klen, vlen);

	if (st != LS_OK)
		return st;
	for (;;)
	{
		ls_guard	c;

		st = leaf_exclusive(t, key, klen, &c);
		if (st == LS_OK)
		{
			uint8_t    *n = node_of(t->bm, &c);
			bool		exact;
			uint16_t	pos = ls_node_lower_bound(n, key, klen, &exact);

			if (!exact)
			{
				ls_guard_release(&c);
				return LS_NOT_FOUND;
			}
			st = ls_node_set_value(n, pos, val, vlen);
			if (st == LS_OK)
				ls_guard_mark_dirty(&c);
			ls_guard_release(&c);
			if (st != LS_NO_SPACE)
				return st;
			st = split_node(t, key, klen, 0, false);
			if (st == LS_OK)
				continue;
		}
		if (st != LS_RESTART)
			return st;
		ls_bm_count_restart(t->bm);
	}
}

ls_status
ls_btree_remove(ls_btree *t, const uint8_t *key, uint32_t klen)
{
	ls_status	st = ls_btree_check_kv(klen, 0);

	if (st != LS_OK)
		return st;
	for (;;)
	{
		ls_guard	c;

		st = leaf_exclusive(t, key, klen, &c);

		if (st == LS_OK)
		{
			uint8_t    *n = node_of(t->bm, &c);
			bool		exact;
			uint16_t	pos = ls_node_lower_bound(n, key, klen, &exact);

			if (!exact)
			{
				ls_guard_release(&c);
				return LS_NOT_FOUND;
			}
			ls_node_remove_at(n, pos);
			ls_guard_mark_dirty(&c);
			bool		underfull = ls_node_free_after_compaction(n) > BT_UNDERFULL;

			ls_guard_release(&c);
			if (underfull)
				rebalance(t, key, klen);
			return LS_OK;
		}
		if (st != LS_RESTART)
			return st;
		ls_bm_count_restart(t->bm);
	}
}

/* ------------------------------------------------------------------------
 * Range scans: one leaf at a time under a shared latch, re-descending by
 * the leaf's fence key to reach the next one.
 * ------------------------------------------------------------------------ */
static ls_status
scan(ls_btree *t, const uint8_t *start, uint32_t slen, bool asc,
	 ls_btree_scan_carry *once, ls_btree_scan_fn fn, void *arg)
{
	uint8_t		from[LS_BTREE_MAX_KEY];
	bt_target	tg = {asc ? BT_MIN : BT_MAX, from, 0};

	if (start)
	{
		if (slen > LS_BTREE_MAX_KEY)
			return LS_TOO_LARGE;
		memcpy(from, start, slen);
		tg.dir = BT_KEY;
		tg.klen = slen;
	}
	for (;;)
	{
		ls_guard	p,
					c;
		uint64_t	loads = ls_bm_tl_loads;
		ls_status	st = descend(t, &tg, 0, LS_GUARD_SHARED, &p, &c);

		if (st == LS_RESTART)
		{
			ls_bm_count_restart(t->bm);
			continue;
		}
		if (st != LS_OK)
			return st;
		uint8_t    *n = node_of(t->bm, &c);
		bool		go_on;
		bool		loaded = false; /* once: this leaf is ours to give back */
		uint32_t	idx = ls_bm_frame_index(t->bm, c.frame);
		ls_pid		pid = c.frame->pid;
		ls_btree_scan_carry drop = {0};

		if (once != NULL)
		{
			loaded = ls_bm_tl_loads != loads;
			if (once->valid && once->idx == idx && once->pid == pid)
				loaded = true;	/* the last call stopped in this leaf */
			else if (once->valid)
				drop = *once;	/* left behind by the last call */
			once->valid = false;
		}

		if (asc)
			go_on = ls_node_scan(n, target_pos(n, &tg), ls_node_header(n)->count, true, fn, arg);
		else
		{
			/* Slots below the upper bound of `from` are <= from. */
			bt_target	ub = tg;

			if (ub.dir == BT_KEY)
				ub.dir = BT_AFTER;
			go_on = ls_node_scan(n, 0, target_pos(n, &ub), false, fn, arg);
		}
		uint32_t	flen;
		const uint8_t *f = asc ? ls_node_upper_fence(n, &flen) : ls_node_lower_fence(n, &flen);

		bool		last = !go_on || flen == 0;

		if (!last)
			memcpy(from, f, flen);
		ls_guard_release(&c);
		if (drop.valid)
			(void) ls_bm_release_loaded(t->bm, drop.idx, drop.pid);
		if (last)
		{
			/* the caller may resume in this leaf: given back by the next call */
			if (loaded)
				*once = (ls_btree_scan_carry) {.valid = true, .idx = idx, .pid = pid};
			return LS_OK;
		}
		/* once: a leaf read from disk for this scan goes back as it is left */
		if (loaded)
			(void) ls_bm_release_loaded(t->bm, idx, pid);
		/* Next leaf: keys > upper fence (asc) / the leaf holding lower fence (desc). */
		tg.dir = asc ? BT_AFTER : BT_KEY;
		tg.key = from;
		tg.klen = flen;
	}
}

ls_status
ls_btree_scan_asc(ls_btree *t, const uint8_t *start, uint32_t slen, ls_btree_scan_fn fn, void *arg)
{
	return scan(t, start, slen, true, NULL, fn, arg);
}

ls_status
ls_btree_scan_asc_once(ls_btree *t, const uint8_t *start, uint32_t slen,
					   ls_btree_scan_fn fn, void *arg, ls_btree_scan_carry *carry)
{
	LS_ASSERT(carry != NULL);
	return scan(t, start, slen, true, carry, fn, arg);
}

ls_status
ls_btree_scan_desc(ls_btree *t, const uint8_t *start, uint32_t slen, ls_btree_scan_fn fn, void *arg)
{
	return scan(t, start, slen, false, NULL, fn, arg);
}

/* ------------------------------------------------------------------------
 * Verification: every node is reached by a fresh descent from the root (by
 * its upper fence), copied under a shared latch and checked on the copy, so
 * nothing stays latched while children load and a small pool can keep
 * evicting.  Needs no concurrent writers.
 * ------------------------------------------------------------------------ */
typedef struct bt_verify
{
	ls_btree   *t;
	ls_btree_info info;
	uint8_t    *bufs;			/* BT_MAX_HEIGHT node copies */
	char	   *msg;
	size_t		msglen;
} bt_verify;

/*
 * Copy the node at level whose upper fence is (hi, hlen) (hlen 0:
 * rightmost).  With `blocks` (an inner node's count + 1 entries), also the
 * block number of each child, read under the node's shared latch: a
 * swizzled child stays in its frame until an evictor latches this node
 * exclusively to unswizzle it, so the frame's page id is the child's.
 */
static ls_status
fetch_node(ls_btree *t, uint16_t level, const uint8_t *hi, uint32_t hlen, uint8_t *buf,
		   uint32_t *blocks)
{
	bt_target	tg = {hlen ? BT_KEY : BT_MAX, hi, hlen};

	for (;;)
	{
		ls_guard	p,
					c;
		ls_status	st = descend(t, &tg, level, LS_GUARD_SHARED, &p, &c);

		if (st == LS_OK)
		{
			uint8_t    *n = node_of(t->bm, &c);

			memcpy(buf, n, LS_NODE_SIZE);
			for (uint16_t i = 0; blocks != NULL && level > 0 && i <= ls_node_count(n); i++)
			{
				ls_pid		pid = ls_bm_swip_to_pid(t->bm, ls_swip_load(child_swip(n, i)));

				blocks[i] = pid != LS_PID_INVALID && ls_pid_dt(pid) == t->dt_id ?
					ls_pid_block(pid) : LS_BLOCK_INVALID;
			}
			ls_guard_release(&c);
			return LS_OK;
		}
		if (st != LS_RESTART)
			return st;
		ls_bm_count_restart(t->bm);
	}
}

static ls_status
verify_node(bt_verify *v, uint16_t level, const uint8_t *lo, uint32_t llen,
			const uint8_t *hi, uint32_t hlen)
{
	uint8_t    *n = v->bufs + (size_t) level * LS_NODE_SIZE;
	ls_status	st = fetch_node(v->t, level, hi, hlen, n, NULL);

	if (st != LS_OK)
	{
		snprintf(v->msg, v->msglen, "cannot reach node at level %u: %s", level, ls_status_str(st));
		return st;
	}
	st = ls_node_check_in_tree(n, level, lo, llen, hi, hlen, v->msg, v->msglen);
	if (st != LS_OK)
		return st;
	if (level == 0)
	{
		v->info.leaves++;
		v->info.entries += ls_node_header(n)->count;
		return LS_OK;
	}
	v->info.inner++;
	/* Children cover (sep[i-1], sep[i]]; n's buffer stays ours meanwhile. */
	uint8_t		prev[LS_BTREE_MAX_KEY],
				cur[LS_BTREE_MAX_KEY];
	uint32_t	prevlen = llen;

	if (llen)
		memcpy(prev, lo, llen);
	for (uint16_t i = 0; i <= ls_node_header(n)->count; i++)
	{
		uint32_t	curlen = ls_node_child_upper(n, i, cur);

		st = verify_node(v, (uint16_t) (level - 1), prev, prevlen, cur, curlen);
		if (st != LS_OK)
			return st;
		memcpy(prev, cur, curlen);
		prevlen = curlen;
	}
	return LS_OK;
}

ls_status
ls_btree_verify(ls_btree *t, ls_btree_info *info, char *msg, size_t msglen)
{
	bt_verify	v = {.t = t, .msg = msg, .msglen = msglen};
	uint32_t	height = atomic_load(&t->height);

	if (height == 0 || height > BT_MAX_HEIGHT)
	{
		snprintf(msg, msglen, "bad height %u", height);
		return LS_CORRUPT;
	}
	v.bufs = aligned_alloc(64, LS_ALIGN_UP((size_t) height * LS_NODE_SIZE, 64));
	if (!v.bufs)
		return LS_NO_MEMORY;
	v.info.height = height;
	/* The upper fences of the nodes above level L live in bufs[L + 1 ...]. */
	ls_status	st = verify_node(&v, (uint16_t) (height - 1), NULL, 0, NULL, 0);

	free(v.bufs);
	if (st == LS_OK && atomic_load(&t->height) != height)
	{
		snprintf(msg, msglen, "height changed during verify (concurrent writer?)");
		st = LS_CORRUPT;
	}
	if (info)
		*info = v.info;
	return st;
}

/* ------------------------------------------------------------------------
 * Free-space walk: the blocks of a file that no node of the tree uses.
 * Inner nodes only (leaves have no children), each reached by a fresh
 * descent like verify, so nothing stays latched while children load.
 * ------------------------------------------------------------------------ */
typedef struct bt_reclaim
{
	ls_btree   *t;
	uint8_t    *used;			/* one bit per block below n_blocks */
	uint32_t	n_blocks;
	uint8_t    *bufs;			/* node copies, one per level */
	uint32_t   *blocks;			/* child blocks, LS_NODE_MAX_SLOTS + 1 per level */
} bt_reclaim;

static ls_status
reclaim_mark(bt_reclaim *r, uint32_t block)
{
	if (block >= r->n_blocks || (r->used[block / 8] & (1u << (block % 8))) != 0)
		return LS_CORRUPT;		/* outside the file, or reached twice */
	r->used[block / 8] |= (uint8_t) (1u << (block % 8));
	return LS_OK;
}

static ls_status
reclaim_node(bt_reclaim *r, uint16_t level, const uint8_t *hi, uint32_t hlen)
{
	uint8_t    *n = r->bufs + (size_t) level * LS_NODE_SIZE;
	uint32_t   *blocks = r->blocks + (size_t) level * (LS_NODE_MAX_SLOTS + 1);
	ls_status	st = fetch_node(r->t, level, hi, hlen, n, blocks);
	uint16_t	count;

	if (st != LS_OK)
		return st;
	if (ls_node_header(n)->level != level)
		return LS_CORRUPT;
	count = ls_node_count(n);
	for (uint16_t i = 0; i <= count && st == LS_OK; i++)
		st = reclaim_mark(r, blocks[i]);
	if (level == 1)
		return st;
	for (uint16_t i = 0; i <= count && st == LS_OK; i++)
	{
		uint8_t		cur[LS_BTREE_MAX_KEY];
		uint32_t	curlen = ls_node_child_upper(n, i, cur);

		st = reclaim_node(r, (uint16_t) (level - 1), cur, curlen);
	}
	return st;
}

ls_status
ls_btree_reclaim(ls_btree *t, uint32_t first_block, uint32_t *reclaimed)
{
	bt_reclaim	r = {.t = t};
	uint32_t	root_block,
				height;
	ls_status	st;

	*reclaimed = 0;
	st = ls_btree_root(t, &root_block, &height);
	if (st != LS_OK)
		return st;
	if (height == 0 || height > BT_MAX_HEIGHT)
		return LS_CORRUPT;
	r.n_blocks = ls_bm_dt_blocks(t->bm, t->dt_id);
	if (first_block > r.n_blocks)
		return LS_INVALID;
	r.used = calloc((size_t) r.n_blocks / 8 + 1, 1);
	r.bufs = aligned_alloc(64, LS_ALIGN_UP((size_t) height * LS_NODE_SIZE, 64));
	r.blocks = malloc((size_t) height * (LS_NODE_MAX_SLOTS + 1) * sizeof(uint32_t));
	if (r.used == NULL || r.bufs == NULL || r.blocks == NULL)
		st = LS_NO_MEMORY;
	if (st == LS_OK)
		st = reclaim_mark(&r, root_block);
	if (st == LS_OK && height > 1)
		st = reclaim_node(&r, (uint16_t) (height - 1), NULL, 0);
	if (st == LS_OK && atomic_load(&t->height) != height)
		st = LS_CORRUPT;		/* a writer ran meanwhile: not allowed */
	for (uint32_t b = first_block; st == LS_OK && b < r.n_blocks; b++)
	{
		if ((r.used[b / 8] & (1u << (b % 8))) != 0)
			continue;
		ls_bm_free_pid(t->bm, ls_pid_make(t->dt_id, b));
		(*reclaimed)++;
	}
	free(r.used);
	free(r.bufs);
	free(r.blocks);
	return st;
}
