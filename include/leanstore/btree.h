/*
 * leanstore/btree.h - B+-tree over buffer-managed pages, plus its node layout
 * and an in-memory baseline tree that shares the layout.
 *
 * Keys and values are byte strings; keys compare with memcmp (shorter key
 * first on a common prefix), so rowids are stored big-endian.  Empty keys are
 * not allowed (LS_INVALID): a zero-length fence means "infinity".
 *
 * Three layers live here:
 *  1. ls_node_*: a slotted node inside a page-sized byte buffer (pure
 *     functions, no latching).  Used by both trees and by the unit tests.
 *  2. ls_memtree_*: the in-memory baseline.  Same nodes, child references are
 *     raw pointers, malloc'ed nodes, single writer (the core benchmark's
 *     baseline; concurrent read-only lookups are fine).
 *  3. ls_btree_*: the real tree.  Pages come from the buffer pool, child
 *     references are swips, many processes operate on one tree at once.
 *
 * Tree invariants (checked by ls_btree_verify):
 *  - A node covers the key range (lower fence, upper fence]; a zero-length
 *    lower fence is -infinity, a zero-length upper fence is +infinity.
 *  - Every key in a node starts with the node's prefix: the common prefix of
 *    its two fences (empty if either is infinite).  Slots store only the
 *    suffix after that prefix; fences are stored whole.
 *  - Inner node slot i holds separator s_i and child c_i; c_i covers
 *    (s_{i-1}, s_i], the "upper" child covers (s_last, node upper fence].
 *    A child's fences equal these separators exactly.
 *  - Leaves are level 0; a node at level L > 0 has only children at L - 1.
 *  - Slot i's head is the first 4 bytes of its key suffix, big-endian,
 *    zero-padded; hints[j] is the head of slot (j + 1) * (count / 17).
 *
 * Concurrency of ls_btree (see src/btree/README.md):
 *  - Readers descend with optimistic latches (ls_bm_fix), validating each
 *    parent after latching the child; writers hold the leaf exclusively.
 *  - Structure changes (split, merge) restart from the root and upgrade the
 *    latches of exactly the nodes they change, top-down, never blocking on an
 *    upgrade.  Any failed validation returns LS_RESTART internally and the
 *    operation starts again from the root (ls_bm_count_restart counts it).
 *  - Scan callbacks run while the leaf is latched shared: they must not call
 *    back into the same tree.
 */
#ifndef LEANSTORE_BTREE_H
#define LEANSTORE_BTREE_H

#include "leanstore/buffer.h"

/* Heads and key compares load big-endian bytes with a byte swap. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "little-endian host expected");

/* ------------------------------------------------------------------------
 * Limits
 * ------------------------------------------------------------------------ */
#define LS_BTREE_MAX_KEY	512u	/* bytes */
#define LS_BTREE_MAX_VALUE	(LS_PAGE_SIZE / 4)	/* bytes; larger: LS_TOO_LARGE */
#define LS_DT_BTREE			1		/* buffer pool data structure type */

/*
 * Argument check shared by both trees: LS_INVALID for an empty key,
 * LS_TOO_LARGE beyond the limits (vlen 0 for operations without a value).
 */
static inline ls_status
ls_btree_check_kv(uint32_t klen, uint32_t vlen)
{
	if (LS_UNLIKELY(klen == 0 || klen > LS_BTREE_MAX_KEY || vlen > LS_BTREE_MAX_VALUE))
		return klen == 0 ? LS_INVALID : LS_TOO_LARGE;
	return LS_OK;
}

/* ------------------------------------------------------------------------
 * 1. Node layout
 *
 * A node is LS_NODE_SIZE bytes (the data part of an ls_page):
 *   [ls_node_hdr][slot 0 .. slot count-1] -> free <- [heap: fences, entries]
 * An entry is the value followed by the key suffix.  In inner nodes the value
 * is the 8-byte child reference and entries start 8-byte aligned, so the
 * reference can be used as an atomic ls_swip in place.
 * ------------------------------------------------------------------------ */
#define LS_NODE_SIZE		((uint32_t) LS_PAGE_DATA_SIZE)
#define LS_NODE_HINTS		16

typedef struct ls_node_hdr
{
	uint64_t	upper;			/* inner: child for keys > last separator */
	uint16_t	level;			/* 0 = leaf */
	uint16_t	count;			/* slots */
	uint16_t	data_off;		/* start of the heap (grows downward) */
	uint16_t	space_used;		/* live heap bytes (fences + entries) */
	uint16_t	prefix_len;		/* bytes shared by every key (from fences) */
	uint16_t	lower_off;		/* lower fence in the heap */
	uint16_t	lower_len;		/* 0 = -infinity */
	uint16_t	upper_off;		/* upper fence in the heap */
	uint16_t	upper_len;		/* 0 = +infinity */
	uint16_t	pad[3];
	uint32_t	hints[LS_NODE_HINTS];
} ls_node_hdr;

typedef struct ls_node_slot
{
	uint32_t	head;			/* first 4 suffix bytes, big-endian, 0-padded */
	uint16_t	off;			/* entry offset from the node start */
	uint16_t	klen;			/* key suffix length */
	uint16_t	vlen;			/* value length */
	uint16_t	pad;
} ls_node_slot;

#define LS_NODE_MAX_SLOTS \
	((LS_NODE_SIZE - (uint32_t) sizeof(ls_node_hdr)) / (uint32_t) sizeof(ls_node_slot))

static inline ls_node_hdr *
ls_node_header(uint8_t *n)
{
	return (ls_node_hdr *) n;
}
static inline const ls_node_hdr *
ls_node_cheader(const uint8_t *n)
{
	return (const ls_node_hdr *) n;
}
static inline ls_node_slot *
ls_node_slots(uint8_t *n)
{
	return (ls_node_slot *) (n + sizeof(ls_node_hdr));
}
static inline const ls_node_slot *
ls_node_cslots(const uint8_t *n)
{
	return (const ls_node_slot *) (n + sizeof(ls_node_hdr));
}
static inline bool
ls_node_is_leaf(const uint8_t *n)
{
	return ls_node_cheader(n)->level == 0;
}

/* Head of a key suffix. */
static inline uint32_t
ls_node_head(const uint8_t *k, uint32_t len)
{
	uint32_t	h = 0;

	if (LS_LIKELY(len >= 4))
	{
		__builtin_memcpy(&h, k, 4);
		return __builtin_bswap32(h);
	}
	for (uint32_t i = 0; i < 4; i++)
		h = (h << 8) | (i < len ? k[i] : 0);
	return h;
}

/* Format an empty node.  Fences are copied; length 0 = infinite. */
void		ls_node_init(uint8_t *n, uint16_t level,
						 const uint8_t *lower, uint16_t lower_len,
						 const uint8_t *upper, uint16_t upper_len);

/*
 * First slot whose key is >= key (count when none); *exact when equal.
 * Safe on torn data (an optimistic reader): every offset and length read
 * from the node is bounded before use, the result is always <= count <=
 * LS_NODE_MAX_SLOTS; garbage in only means a wrong answer that the caller's
 * latch validation rejects.
 */
uint16_t	ls_node_lower_bound(const uint8_t *n, const uint8_t *key, uint32_t klen, bool *exact);
/* The count read by lower_bound, bounded (safe on torn data). */
uint16_t	ls_node_count(const uint8_t *n);

/* Child reference at pos (pos == count: the upper child).  Inner nodes only. */
uint64_t   *ls_node_child_ref(uint8_t *n, uint16_t pos);
/* Child reference for key (lower_bound position).  Safe on torn data. */
uint64_t   *ls_node_child_for(uint8_t *n, const uint8_t *key, uint32_t klen);

/* Value of slot pos (bounded; *len = 0 on torn data). */
const uint8_t *ls_node_value(const uint8_t *n, uint16_t pos, uint32_t *len);
uint8_t    *ls_node_value_mut(uint8_t *n, uint16_t pos, uint32_t *len);
/* Full key of slot pos into buf (>= LS_BTREE_MAX_KEY bytes); returns length. */
uint32_t	ls_node_key(const uint8_t *n, uint16_t pos, uint8_t *buf);
/* Fences as pointers into the node (bounded). */
const uint8_t *ls_node_lower_fence(const uint8_t *n, uint32_t *len);
const uint8_t *ls_node_upper_fence(const uint8_t *n, uint32_t *len);

/* Bytes free now / after compaction. */
uint32_t	ls_node_free_space(const uint8_t *n);
uint32_t	ls_node_free_after_compaction(const uint8_t *n);
/* Bytes an entry of this full key length and value length needs. */
uint32_t	ls_node_entry_space(const uint8_t *n, uint32_t klen, uint32_t vlen);
/* True when that entry fits (possibly after compaction). */
bool		ls_node_can_insert(const uint8_t *n, uint32_t klen, uint32_t vlen);

/*
 * Insert key/value at slot pos (the caller found pos with lower_bound and the
 * key is not present; the key lies within the fences).  Compacts if needed.
 * LS_NO_SPACE when it does not fit even then.
 */
ls_status	ls_node_insert_at(uint8_t *n, uint16_t pos, const uint8_t *key, uint32_t klen,
							  const void *val, uint32_t vlen);
/* Insert by key: LS_EXISTS when present. */
ls_status	ls_node_insert(uint8_t *n, const uint8_t *key, uint32_t klen,
						   const void *val, uint32_t vlen);
/* Remove slot pos. */
void		ls_node_remove_at(uint8_t *n, uint16_t pos);
/* Replace the value of slot pos (any size; LS_NO_SPACE leaves it unchanged). */
ls_status	ls_node_set_value(uint8_t *n, uint16_t pos, const void *val, uint32_t vlen);
/* Rewrite the heap without holes (slot order and content unchanged). */
void		ls_node_compact(uint8_t *n);
/* Recompute the hints array. */
void		ls_node_update_hints(uint8_t *n);

/*
 * Split planning.  Chooses the slot at which to split and the separator:
 * for a leaf the shortest prefix of the right half's first key that is
 * greater than the left half's last key (or that last key itself); for an
 * inner node the key of the split slot (which moves up).  Needs count >= 2.
 *
 * key (NULL: none) is the key whose insert found the leaf full.  Without
 * it, or when it shows no pattern, both halves hold about the same bytes.
 * With it:
 *  - after every key of the rightmost leaf (ascending load): the left node
 *    keeps all but one entry;
 *  - continuing an ascending run (its left neighbour's leading 8 bytes, as a
 *    big-endian integer, are at most LS_NODE_RUN_GAP below its own, and its
 *    right neighbour's are not that close above): the split comes right after
 *    the run, and key goes left (the separator is above it), so a run
 *    inserted into a gap of the key space fills its leaves instead of
 *    leaving them half full; a run at the end of a leaf splits as an
 *    ascending load.
 */
#define LS_NODE_RUN_GAP		64

typedef struct ls_node_split_plan
{
	uint16_t	pos;			/* leaf: slots [0, pos] go left; inner: [0, pos) left,
								 * slot pos's child becomes left's upper */
	uint32_t	sep_len;
	uint8_t		sep[LS_BTREE_MAX_KEY];
} ls_node_split_plan;

ls_status	ls_node_plan_split(const uint8_t *n, const uint8_t *key, uint32_t klen,
							   ls_node_split_plan *plan);
/*
 * Execute a split: `left` (an uninitialised buffer) receives the lower half
 * with fences (n.lower, sep]; `n` keeps the upper half with fences (sep,
 * n.upper].  `tmp` is scratch of LS_NODE_SIZE bytes.
 */
void		ls_node_split(uint8_t *n, uint8_t *left, const ls_node_split_plan *plan, uint8_t *tmp);

/*
 * Merge `left` into `right`, its right neighbour under the same parent, with
 * parent separator sep (== left.upper == right.lower).  Inner nodes pull the
 * separator down with left's upper child.  LS_NO_SPACE (nothing changed) when
 * the result does not fit.  `tmp` is scratch of LS_NODE_SIZE bytes.
 */
ls_status	ls_node_merge(const uint8_t *left, uint8_t *right, uint8_t *tmp);

/*
 * Check one node: slot bounds, strict key order, prefix, heads, hints, keys
 * within fences, heap accounting.  LS_CORRUPT with a message in msg.
 */
ls_status	ls_node_check(const uint8_t *n, char *msg, size_t msglen);
/*
 * ls_node_check plus the node's place in a tree: its level is `level` and
 * its fences are exactly (lower, upper], the separators its parent has for
 * it.  Both trees' verify walks use it.
 */
ls_status	ls_node_check_in_tree(const uint8_t *n, uint16_t level, const uint8_t *lower, uint32_t llen,
								  const uint8_t *upper, uint32_t ulen, char *msg, size_t msglen);
/*
 * Upper bound of child pos of an inner node into buf (>= LS_BTREE_MAX_KEY
 * bytes): separator pos, or the node's upper fence for the upper child
 * (pos == count; length 0 = +infinity).  Child pos covers
 * (upper bound of child pos - 1 or the node's lower fence, this].
 */
uint32_t	ls_node_child_upper(const uint8_t *n, uint16_t pos, uint8_t *buf);

/*
 * Three-way compare of two byte strings in memcmp order (shorter first).
 * Inline, 8 bytes at a time: keys are short (rowids are 8 bytes) and a libc
 * call per comparison costs more than the comparison.
 */
static inline int
ls_key_cmp(const uint8_t *a, uint32_t alen, const uint8_t *b, uint32_t blen)
{
	uint32_t	m = alen < blen ? alen : blen;
	uint32_t	i = 0;

	for (; i + 8 <= m; i += 8)
	{
		uint64_t	x,
					y;

		__builtin_memcpy(&x, a + i, 8);
		__builtin_memcpy(&y, b + i, 8);
		if (x != y)
		{
			x = __builtin_bswap64(x);
			y = __builtin_bswap64(y);
			return x < y ? -1 : 1;
		}
	}
	for (; i < m; i++)
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
	return (alen > blen) - (alen < blen);
}

/* ------------------------------------------------------------------------
 * Scan callback (both trees): return true to continue, false to stop.
 * ------------------------------------------------------------------------ */
typedef bool (*ls_btree_scan_fn) (void *arg, const uint8_t *key, uint32_t klen,
								  const uint8_t *val, uint32_t vlen);

/*
 * Call fn on the slots [from, to) of node n (full keys rebuilt), ascending,
 * or descending from to - 1 down to from.  Returns false when fn stopped.
 * The node must not change meanwhile (latched, or private).
 */
bool		ls_node_scan(const uint8_t *n, uint16_t from, uint16_t to, bool asc,
						 ls_btree_scan_fn fn, void *arg);

/* ------------------------------------------------------------------------
 * 2. In-memory baseline tree (raw pointers, malloc'ed nodes)
 * ------------------------------------------------------------------------ */
typedef struct ls_memtree
{
	uint8_t    *root;			/* node buffer (LS_NODE_SIZE bytes, page-sized alloc) */
	uint64_t	nodes;
	uint64_t	entries;
	uint16_t	height;
} ls_memtree;

ls_status	ls_memtree_create(ls_memtree *t);
void		ls_memtree_destroy(ls_memtree *t);
ls_status	ls_memtree_insert(ls_memtree *t, const uint8_t *key, uint32_t klen,
							  const void *val, uint32_t vlen);
/* Copies the value into out (cap bytes); *vlen = its length. */
ls_status	ls_memtree_lookup(const ls_memtree *t, const uint8_t *key, uint32_t klen,
							  void *out, uint32_t cap, uint32_t *vlen);
ls_status	ls_memtree_update(ls_memtree *t, const uint8_t *key, uint32_t klen,
							  const void *val, uint32_t vlen);
ls_status	ls_memtree_remove(ls_memtree *t, const uint8_t *key, uint32_t klen);
/* Ascending scan from the first key >= start (start NULL: from the first). */
ls_status	ls_memtree_scan(const ls_memtree *t, const uint8_t *start, uint32_t slen,
							ls_btree_scan_fn fn, void *arg);
/* Full invariant check; *entries = number of keys. */
ls_status	ls_memtree_verify(const ls_memtree *t, uint64_t *entries, char *msg, size_t msglen);

/* ------------------------------------------------------------------------
 * 3. Buffer-managed tree
 * ------------------------------------------------------------------------ */

/*
 * The tree's meta object.  Lives in the shared region (every process maps it
 * at the same address); the root swip is protected by meta_latch.
 */
typedef struct ls_btree
{
	ls_latch	meta_latch;
	ls_swip		root;
	ls_bm	   *bm;
	uint32_t	dt_id;
	_Atomic uint32_t height;	/* levels; changes with root, under meta_latch */
	/* Append hint: last rightmost leaf seen (frame index, page id). */
	_Atomic uint64_t append_frame;
	_Atomic uint64_t append_pid;
	/* Statistics (approximate, relaxed). */
	_Atomic uint64_t splits;
	_Atomic uint64_t merges;
	_Atomic uint64_t append_hits;
} ls_btree;

/* Register the B+-tree type ops in this process (idempotent). */
void		ls_btree_register_type(void);

/* Create an empty tree (one leaf) in caller-provided shared memory. */
ls_status	ls_btree_create(ls_bm *bm, ls_btree *t);
/*
 * A tree whose pages live in `file` (ls_bm_register_file), blocks
 * [0, n_blocks) of which the caller keeps for itself (e.g. a meta page):
 * create an empty one, or open one written before, whose root is at
 * root_block with height levels (from ls_btree_root at the time every page
 * was written).  Child references on disk are block numbers.
 */
ls_status	ls_btree_create_in_file(ls_bm *bm, ls_btree *t, const ls_bm_file *file,
									uint32_t n_blocks);
ls_status	ls_btree_open(ls_bm *bm, ls_btree *t, const ls_bm_file *file,
						  uint32_t n_blocks, uint32_t root_block, uint32_t height);
/* The root's block and the height, for the caller's meta page. */
ls_status	ls_btree_root(ls_btree *t, uint32_t *root_block, uint32_t *height);
/*
 * After ls_btree_open: walk the inner nodes and give every block of the
 * file at or above first_block that no node uses back to the pool's free
 * list (blocks freed by merges before the file was written, which the pool
 * does not remember across an open), *reclaimed of them.  Reads every
 * inner node (about one page in 200), no leaf.  Needs no concurrent writer
 * (an allocated page not linked yet would look free); eviction may run.
 * LS_CORRUPT when a child reference points outside the file or twice at
 * one block: nothing is reclaimed then.
 */
ls_status	ls_btree_reclaim(ls_btree *t, uint32_t first_block, uint32_t *reclaimed);
/*
 * Forget the tree and its file's pages in memory without writing them (the
 * file is being removed).  Nobody may use the tree any more.
 */
void		ls_btree_drop(ls_btree *t);

/*
 * Free every page of the tree (in memory and on disk) and unregister it.
 * No other process may use the tree any more (a page provider may run).
 */
ls_status	ls_btree_destroy(ls_btree *t);

ls_status	ls_btree_lookup(ls_btree *t, const uint8_t *key, uint32_t klen,
							void *out, uint32_t cap, uint32_t *vlen);
/* LS_EXISTS when present, LS_TOO_LARGE beyond the limits. */
ls_status	ls_btree_insert(ls_btree *t, const uint8_t *key, uint32_t klen,
							const void *val, uint32_t vlen);
/* Insert for ascending keys: appends to the remembered rightmost leaf when
 * the key belongs there, else behaves as ls_btree_insert. */
ls_status	ls_btree_append(ls_btree *t, const uint8_t *key, uint32_t klen,
							const void *val, uint32_t vlen);
/* One entry of ls_btree_append_batch. */
typedef struct ls_btree_kv
{
	const uint8_t *key;
	uint32_t	klen;
	const void *val;
	uint32_t	vlen;
} ls_btree_kv;

/*
 * Bulk load: insert kv[0..n), whose keys ascend strictly, as
 * ls_btree_append would one by one, but filling the remembered rightmost
 * leaf with as many entries as fit under one latch (one descent per leaf
 * instead of one per entry).  *done (may be NULL) gets how many went in,
 * in order; on an error status the rest did not (LS_EXISTS for a key
 * present, LS_TOO_LARGE beyond the limits: then nothing went in).
 */
ls_status	ls_btree_append_batch(ls_btree *t, const ls_btree_kv *kv, uint32_t n,
								  uint32_t *done);
/* Replace the value (same size in place, other sizes moved); LS_NOT_FOUND. */
ls_status	ls_btree_update(ls_btree *t, const uint8_t *key, uint32_t klen,
							const void *val, uint32_t vlen);
ls_status	ls_btree_remove(ls_btree *t, const uint8_t *key, uint32_t klen);

/*
 * Range scans.  Ascending: keys >= start (start NULL: from the first key).
 * Descending: keys <= start (start NULL: from the last key).  fn runs with the
 * leaf latched shared; a leaf is read as one consistent snapshot, and between
 * leaves the scan re-descends from the root by the leaf's fence key.
 * Returns LS_OK (ran to the end or fn stopped it) or an I/O status.
 */
ls_status	ls_btree_scan_asc(ls_btree *t, const uint8_t *start, uint32_t slen,
							  ls_btree_scan_fn fn, void *arg);
/*
 * The same for a scan that reads the tree once (a sequential scan of a
 * table larger than a part of the pool): each leaf it had to read from disk
 * is given back to the pool when the scan moves past it
 * (ls_bm_release_loaded), so the scan does not push the pool's hot pages
 * out.  A caller that reads in batches passes the same carry to each call
 * (zeroed at first): the leaf a call stopped in is remembered there and
 * given back by the next call once it has moved past it.
 */
typedef struct ls_btree_scan_carry
{
	bool		valid;
	uint32_t	idx;			/* frame */
	ls_pid		pid;
} ls_btree_scan_carry;

ls_status	ls_btree_scan_asc_once(ls_btree *t, const uint8_t *start, uint32_t slen,
								   ls_btree_scan_fn fn, void *arg,
								   ls_btree_scan_carry *carry);
ls_status	ls_btree_scan_desc(ls_btree *t, const uint8_t *start, uint32_t slen,
							   ls_btree_scan_fn fn, void *arg);

typedef struct ls_btree_info
{
	uint64_t	entries;
	uint64_t	leaves;
	uint64_t	inner;
	uint32_t	height;			/* levels, 1 = root is a leaf */
} ls_btree_info;

/*
 * Check every invariant listed above on every page (loading evicted pages),
 * with no concurrent writers (a page provider may run).  LS_CORRUPT with a
 * message.  info may be NULL.
 */
ls_status	ls_btree_verify(ls_btree *t, ls_btree_info *info, char *msg, size_t msglen);

#endif							/* LEANSTORE_BTREE_H */
