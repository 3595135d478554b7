/*
 * memtree.c - in-memory baseline B+-tree: the ls_node layout with raw
 * pointers as child references, malloc'ed page-sized nodes, one writer.
 *
 * It exists to measure what the buffer manager costs (bench_core) and to
 * cross-check the node layout.  Structure changes mirror ls_btree: a full
 * node is split and the insert starts over from the root; a split that
 * needs room in the parent splits the parent first.  Underfull nodes merge
 * into their right neighbour (or the left one into them).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "leanstore/btree.h"

#define MT_MAX_HEIGHT	32
/* A node with more free bytes than this after compaction is underfull. */
#define MT_UNDERFULL	(LS_NODE_SIZE * 6 / 10)

typedef struct mt_path
{
	uint8_t    *node[MT_MAX_HEIGHT];
	uint16_t	pos[MT_MAX_HEIGHT];	/* child position taken in node[i] */
	int			depth;			/* index of the leaf */
} mt_path;

static uint8_t *
mt_alloc(ls_memtree *t)
{
	uint8_t    *n = aligned_alloc(64, LS_PAGE_SIZE);

	if (n)
		t->nodes++;
	return n;
}

static void
mt_free(ls_memtree *t, uint8_t *n)
{
	free(n);
	t->nodes--;
}

static inline uint8_t *
mt_child(uint8_t *n, uint16_t pos)
{
	return (uint8_t *) (uintptr_t) *ls_node_child_ref(n, pos);
}

ls_status
ls_memtree_create(ls_memtree *t)
{
	memset(t, 0, sizeof(*t));
	t->root = mt_alloc(t);
	if (!t->root)
		return LS_NO_MEMORY;
	ls_node_init(t->root, 0, NULL, 0, NULL, 0);
	t->height = 1;
	return LS_OK;
}

static void
mt_free_subtree(ls_memtree *t, uint8_t *n)
{
	if (!ls_node_is_leaf(n))
		for (uint16_t i = 0; i <= ls_node_header(n)->count; i++)
			mt_free_subtree(t, mt_child(n, i));
	mt_free(t, n);
}

void
ls_memtree_destroy(ls_memtree *t)
{
	if (t->root)
		mt_free_subtree(t, t->root);
	t->root = NULL;
}

/* Descend to the leaf for key, recording the path. */
static void
mt_descend(const ls_memtree *t, const uint8_t *key, uint32_t klen, mt_path *p)
{
	uint8_t    *n = t->root;
	int			d = 0;
	bool		exact;

	while (!ls_node_is_leaf(n))
	{
		uint16_t	pos = ls_node_lower_bound(n, key, klen, &exact);

		p->node[d] = n;
		p->pos[d] = pos;
		d++;
		n = mt_child(n, pos);
	}
	p->node[d] = n;
	p->depth = d;
}

/* Split path node d; splits its parent first when the parent is full. */
static ls_status
mt_split(ls_memtree *t, mt_path *p, int d, const uint8_t *key, uint32_t klen)
{
	uint8_t    *n = p->node[d];
	ls_node_split_plan plan;
	ls_status	st = ls_node_plan_split(n, key, klen, &plan);

	if (st != LS_OK)
		return st;
	uint8_t    *parent = d > 0 ? p->node[d - 1] : NULL;

	if (parent && !ls_node_can_insert(parent, plan.sep_len, 8))
		return mt_split(t, p, d - 1, NULL, 0);	/* caller retries */
	if (!parent)
	{
		parent = mt_alloc(t);
		if (!parent)
			return LS_NO_MEMORY;
		ls_node_init(parent, (uint16_t) (ls_node_header(n)->level + 1), NULL, 0, NULL, 0);
		ls_node_header(parent)->upper = (uint64_t) (uintptr_t) n;
		t->root = parent;
		t->height++;
	}
	uint8_t    *left = mt_alloc(t);
	uint8_t    *tmp = malloc(LS_NODE_SIZE);

	if (!left || !tmp)
	{
		free(tmp);
		if (left)
			mt_free(t, left);
		return LS_NO_MEMORY;
	}
	ls_node_split(n, left, &plan, tmp);
	free(tmp);
	uint64_t	ref = (uint64_t) (uintptr_t) left;

	return ls_node_insert(parent, plan.sep, plan.sep_len, &ref, 8);
}

ls_status
ls_memtree_insert(ls_memtree *t, const uint8_t *key, uint32_t klen, const void *val, uint32_t vlen)
{
	ls_status	st = ls_btree_check_kv(klen, vlen);
	mt_path		p;

	if (st != LS_OK)
		return st;
	for (;;)
	{
		mt_descend(t, key, klen, &p);
		uint8_t    *leaf = p.node[p.depth];
		bool		exact;
		uint16_t	pos = ls_node_lower_bound(leaf, key, klen, &exact);

		if (exact)
			return LS_EXISTS;
		st = ls_node_insert_at(leaf, pos, key, klen, val, vlen);
		if (st == LS_OK)
		{
			t->entries++;
			return LS_OK;
		}
		if (st != LS_NO_SPACE)
			return st;
		st = mt_split(t, &p, p.depth, key, klen);
		if (st != LS_OK)
			return st;
	}
}

ls_status
ls_memtree_lookup(const ls_memtree *t, const uint8_t *key, uint32_t klen, void *out, uint32_t cap,
				  uint32_t *vlen)
{
	uint8_t    *n = t->root;
	bool		exact;

	while (!ls_node_is_leaf(n))
		n = (uint8_t *) (uintptr_t) *ls_node_child_for(n, key, klen);
	uint16_t	pos = ls_node_lower_bound(n, key, klen, &exact);

	if (!exact)
		return LS_NOT_FOUND;
	const uint8_t *v = ls_node_value(n, pos, vlen);

	if (*vlen > cap)
		return LS_TOO_LARGE;
	memcpy(out, v, *vlen);
	return LS_OK;
}

ls_status
ls_memtree_update(ls_memtree *t, const uint8_t *key, uint32_t klen, const void *val, uint32_t vlen)
{
	ls_status	st = ls_btree_check_kv(klen, vlen);
	mt_path		p;

	if (st != LS_OK)
		return st;
	for (;;)
	{
		mt_descend(t, key, klen, &p);
		uint8_t    *leaf = p.node[p.depth];
		bool		exact;
		uint16_t	pos = ls_node_lower_bound(leaf, key, klen, &exact);

		if (!exact)
			return LS_NOT_FOUND;
		st = ls_node_set_value(leaf, pos, val, vlen);
		if (st != LS_NO_SPACE)
			return st;
		st = mt_split(t, &p, p.depth, NULL, 0);
		if (st != LS_OK)
			return st;
	}
}

/*
 * Merge path node d with a neighbour when both fit in one node; walks up
 * while parents become underfull.  Collapses a root without separators.
 */
static void
mt_rebalance(ls_memtree *t, mt_path *p, int d)
{
	uint8_t    *tmp = malloc(LS_NODE_SIZE);

	if (!tmp)
		return;					/* merging is an optimisation */
	while (d > 0 && ls_node_free_after_compaction(p->node[d]) > MT_UNDERFULL)
	{
		uint8_t    *parent = p->node[d - 1];
		uint16_t	pos = p->pos[d - 1];
		uint16_t	count = ls_node_header(parent)->count;

		if (count == 0)
			break;
		/* Pair (left, right) = (child pos, child pos+1), or (pos-1, pos) at the end. */
		uint16_t	lpos = pos < count ? pos : (uint16_t) (pos - 1);
		uint8_t    *left = mt_child(parent, lpos);
		uint8_t    *right = mt_child(parent, (uint16_t) (lpos + 1));

		if (ls_node_merge(left, right, tmp) != LS_OK)
			break;
		ls_node_remove_at(parent, lpos);
		mt_free(t, left);
		d--;
	}
	free(tmp);
	while (!ls_node_is_leaf(t->root) && ls_node_header(t->root)->count == 0)
	{
		uint8_t    *old = t->root;

		t->root = mt_child(old, 0);
		mt_free(t, old);
		t->height--;
	}
}

ls_status
ls_memtree_remove(ls_memtree *t, const uint8_t *key, uint32_t klen)
{
	mt_path		p;
	bool		exact;
	ls_status	st = ls_btree_check_kv(klen, 0);

	if (st != LS_OK)
		return st;
	mt_descend(t, key, klen, &p);
	uint8_t    *leaf = p.node[p.depth];
	uint16_t	pos = ls_node_lower_bound(leaf, key, klen, &exact);

	if (!exact)
		return LS_NOT_FOUND;
	ls_node_remove_at(leaf, pos);
	t->entries--;
	mt_rebalance(t, &p, p.depth);
	return LS_OK;
}

ls_status
ls_memtree_scan(const ls_memtree *t, const uint8_t *start, uint32_t slen, ls_btree_scan_fn fn, void *arg)
{
	uint8_t		from[LS_BTREE_MAX_KEY];
	uint32_t	fromlen = 0;
	bool		after = false;	/* from is an exclusive bound */

	if (start)
	{
		if (slen > LS_BTREE_MAX_KEY)
			return LS_TOO_LARGE;
		memcpy(from, start, slen);
		fromlen = slen;
	}
	for (;;)
	{
		uint8_t    *n = t->root;
		bool		exact;
		uint16_t	pos;

		/* Descend to the leaf holding the first key >= (or > when after) from. */
		for (;;)
		{
			pos = fromlen ? ls_node_lower_bound(n, from, fromlen, &exact) : 0;
			if (fromlen && after && exact)
				pos++;
			if (ls_node_is_leaf(n))
				break;
			n = mt_child(n, pos);
		}
		if (!ls_node_scan(n, pos, ls_node_header(n)->count, true, fn, arg))
			return LS_OK;
		uint32_t	ulen;
		const uint8_t *u = ls_node_upper_fence(n, &ulen);

		if (ulen == 0)
			return LS_OK;
		memcpy(from, u, ulen);
		fromlen = ulen;
		after = true;
	}
}

/* Verify a subtree whose fences must be (lower, upper]; counts entries. */
static ls_status
mt_verify_node(uint8_t *n, uint16_t level, const uint8_t *lower, uint32_t llen,
			   const uint8_t *upper, uint32_t ulen, uint64_t *entries, char *msg, size_t msglen)
{
	ls_status	st = ls_node_check_in_tree(n, level, lower, llen, upper, ulen, msg, msglen);

	if (st != LS_OK)
		return st;
	if (level == 0)
	{
		*entries += ls_node_header(n)->count;
		return LS_OK;
	}
	uint8_t		prev[LS_BTREE_MAX_KEY],
				cur[LS_BTREE_MAX_KEY];
	uint32_t	prevlen = llen;

	if (llen)
		memcpy(prev, lower, llen);
	for (uint16_t i = 0; i <= ls_node_header(n)->count; i++)
	{
		uint32_t	curlen = ls_node_child_upper(n, i, cur);

		st = mt_verify_node(mt_child(n, i), (uint16_t) (level - 1), prev, prevlen, cur, curlen,
							entries, msg, msglen);
		if (st != LS_OK)
			return st;
		memcpy(prev, cur, curlen);
		prevlen = curlen;
	}
	return LS_OK;
}

ls_status
ls_memtree_verify(const ls_memtree *t, uint64_t *entries, char *msg, size_t msglen)
{
	uint64_t	e = 0;
	ls_status	st = mt_verify_node(t->root, (uint16_t) (t->height - 1), NULL, 0, NULL, 0, &e, msg, msglen);

	if (st == LS_OK && e != t->entries)
	{
		snprintf(msg, msglen, "%llu entries reachable, %llu counted",
				 (unsigned long long) e, (unsigned long long) t->entries);
		st = LS_CORRUPT;
	}
	if (entries)
		*entries = e;
	return st;
}
