/*
 * node.c - slotted B+-tree node inside a page-sized buffer.
 *
 * Pure functions over LS_NODE_SIZE bytes; no latching.  Readers that run
 * under an optimistic latch (lower_bound, child_for, value, key, fences,
 * count) bound every offset and length they read, because the node may be
 * changing underneath them: they may return nonsense, but never touch memory
 * outside the node, never loop forever, and the caller's latch validation
 * throws the nonsense away.  Everything else needs the node exclusively.
 */
#include <stdio.h>
#include <string.h>

#include "leanstore/btree.h"

#define HDR_SIZE	((uint32_t) sizeof(ls_node_hdr))
#define SLOT_SIZE	((uint32_t) sizeof(ls_node_slot))

_Static_assert(sizeof(ls_node_hdr) % 8 == 0, "slots follow the header");
_Static_assert(LS_NODE_SIZE % 8 == 0, "inner entries are 8-byte aligned from the end");
_Static_assert(LS_NODE_SIZE < 65536, "offsets are 16 bits");

/* Heap allocation granularity: inner nodes keep child references aligned. */
static inline uint32_t
alloc_size(const uint8_t *n, uint32_t bytes)
{
	return ls_node_cheader(n)->level ? (uint32_t) LS_ALIGN_UP(bytes, 8) : bytes;
}

/* Allocate bytes from the heap; the caller checked ls_node_free_space. */
static uint16_t
heap_alloc(uint8_t *n, uint32_t bytes)
{
	ls_node_hdr *h = ls_node_header(n);
	uint32_t	sz = alloc_size(n, bytes);

	h->data_off = (uint16_t) (h->data_off - sz);
	h->space_used = (uint16_t) (h->space_used + sz);
	return h->data_off;
}

/* Clamp a (offset, length) pair read from a possibly torn node. */
static inline const uint8_t *
bounded(const uint8_t *n, uint32_t off, uint32_t len, uint32_t *out_len)
{
	if (LS_UNLIKELY(off > LS_NODE_SIZE || len > LS_NODE_SIZE - off))
	{
		*out_len = 0;
		return n;
	}
	*out_len = len;
	return n + off;
}

uint16_t
ls_node_count(const uint8_t *n)
{
	uint16_t	c = ls_node_cheader(n)->count;

	return c > LS_NODE_MAX_SLOTS ? (uint16_t) LS_NODE_MAX_SLOTS : c;
}

const uint8_t *
ls_node_lower_fence(const uint8_t *n, uint32_t *len)
{
	const ls_node_hdr *h = ls_node_cheader(n);

	return bounded(n, h->lower_off, h->lower_len, len);
}

const uint8_t *
ls_node_upper_fence(const uint8_t *n, uint32_t *len)
{
	const ls_node_hdr *h = ls_node_cheader(n);

	return bounded(n, h->upper_off, h->upper_len, len);
}

/* Suffix of slot i (bounded). */
static inline const uint8_t *
slot_suffix(const uint8_t *n, const ls_node_slot *s, uint32_t *len)
{
	return bounded(n, (uint32_t) s->off + s->vlen, s->klen, len);
}

/* Length of the common prefix of two byte strings. */
static inline uint32_t
common_prefix(const uint8_t *a, uint32_t alen, const uint8_t *b, uint32_t blen)
{
	uint32_t	p = 0;

	while (p < alen && p < blen && a[p] == b[p])
		p++;
	return p;
}

/*
 * Prefix shared by every key of a node with these fences: keys lie in
 * (lower, upper], so they share the fences' common prefix; nothing when
 * either fence is infinite.
 */
static inline uint32_t
fence_prefix(const uint8_t *lower, uint32_t llen, const uint8_t *upper, uint32_t ulen)
{
	return llen && ulen ? common_prefix(lower, llen, upper, ulen) : 0;
}

/* Length of the prefix every key in the node shares (bounded). */
static inline uint32_t
prefix_of(const uint8_t *n, const uint8_t **prefix)
{
	uint32_t	flen;
	const uint8_t *f = ls_node_lower_fence(n, &flen);
	uint32_t	p = ls_node_cheader(n)->prefix_len;

	*prefix = f;
	return p <= flen ? p : flen;
}

void
ls_node_init(uint8_t *n, uint16_t level, const uint8_t *lower, uint16_t lower_len,
			 const uint8_t *upper, uint16_t upper_len)
{
	ls_node_hdr *h = ls_node_header(n);

	memset(h, 0, sizeof(*h));
	h->level = level;
	h->data_off = (uint16_t) LS_NODE_SIZE;
	if (lower_len)
	{
		h->lower_off = heap_alloc(n, lower_len);
		h->lower_len = lower_len;
		memcpy(n + h->lower_off, lower, lower_len);
	}
	if (upper_len)
	{
		h->upper_off = heap_alloc(n, upper_len);
		h->upper_len = upper_len;
		memcpy(n + h->upper_off, upper, upper_len);
	}
	h->prefix_len = (uint16_t) fence_prefix(lower, lower_len, upper, upper_len);
}

/*
 * Compare the suffix sk (head sh) with slot s: <0 when the slot key is
 * smaller.  Heads decide most comparisons without touching the heap.
 */
static inline int
cmp_slot(const uint8_t *n, const ls_node_slot *s, const uint8_t *sk, uint32_t sklen, uint32_t sh)
{
	if (s->head != sh)
		return s->head < sh ? -1 : 1;
	uint32_t	len;
	const uint8_t *k = slot_suffix(n, s, &len);

	return ls_key_cmp(k, len, sk, sklen);
}

uint16_t
ls_node_lower_bound(const uint8_t *n, const uint8_t *key, uint32_t klen, bool *exact)
{
	const ls_node_hdr *h = ls_node_cheader(n);
	const ls_node_slot *slots = ls_node_cslots(n);
	uint16_t	count = ls_node_count(n);
	const uint8_t *prefix;
	uint32_t	plen = prefix_of(n, &prefix);

	*exact = false;
	/* Keys outside the prefix range sort before or after every slot. */
	if (plen)
	{
		int			c = ls_key_cmp(key, LS_MIN(plen, klen), prefix, LS_MIN(plen, klen));

		if (c < 0 || (c == 0 && klen < plen))
			return 0;
		if (c > 0)
			return count;
	}
	const uint8_t *sk = key + plen;
	uint32_t	sklen = klen - plen;
	uint32_t	sh = ls_node_head(sk, sklen);
	uint32_t	lo = 0,
				hi = count;

	/* Narrow [lo, hi) with the hints: slot p_j = (j + 1) * dist has head hints[j]. */
	if (count > 2 * LS_NODE_HINTS)
	{
		uint32_t	dist = count / (LS_NODE_HINTS + 1);

		for (uint32_t j = 0; j < LS_NODE_HINTS; j++)
		{
			uint32_t	hj = h->hints[j];

			if (hj < sh)
				lo = (j + 1) * dist + 1;	/* slot p_j < key */
			else
			{
				if (hj > sh)
					hi = (j + 1) * dist;	/* slot p_j > key */
				break;
			}
		}
		if (lo > hi)			/* torn hints */
			lo = hi;
	}
	while (lo < hi)
	{
		uint32_t	mid = (lo + hi) / 2;
		int			c = cmp_slot(n, &slots[mid], sk, sklen, sh);

		if (c < 0)
			lo = mid + 1;
		else if (c > 0)
			hi = mid;
		else
		{
			*exact = true;
			return (uint16_t) mid;
		}
	}
	return (uint16_t) lo;
}

uint64_t *
ls_node_child_ref(uint8_t *n, uint16_t pos)
{
	uint16_t	count = ls_node_count(n);

	if (pos >= count)
		return &ls_node_header(n)->upper;
	const ls_node_slot *s = &ls_node_slots(n)[pos];
	uint32_t	off = s->off & ~7u;	/* aligned even when torn */

	if (LS_UNLIKELY(off + 8 > LS_NODE_SIZE))
		return &ls_node_header(n)->upper;
	return (uint64_t *) (n + off);
}

uint64_t *
ls_node_child_for(uint8_t *n, const uint8_t *key, uint32_t klen)
{
	bool		exact;

	return ls_node_child_ref(n, ls_node_lower_bound(n, key, klen, &exact));
}

const uint8_t *
ls_node_value(const uint8_t *n, uint16_t pos, uint32_t *len)
{
	const ls_node_slot *s = &ls_node_cslots(n)[pos < LS_NODE_MAX_SLOTS ? pos : 0];

	return bounded(n, s->off, s->vlen, len);
}

uint8_t *
ls_node_value_mut(uint8_t *n, uint16_t pos, uint32_t *len)
{
	return (uint8_t *) ls_node_value(n, pos, len);
}

uint32_t
ls_node_key(const uint8_t *n, uint16_t pos, uint8_t *buf)
{
	const uint8_t *prefix;
	uint32_t	plen = prefix_of(n, &prefix);
	uint32_t	slen;
	const uint8_t *s = slot_suffix(n, &ls_node_cslots(n)[pos < LS_NODE_MAX_SLOTS ? pos : 0], &slen);

	if (LS_UNLIKELY(plen + slen > LS_BTREE_MAX_KEY))
		slen = plen > LS_BTREE_MAX_KEY ? 0 : LS_BTREE_MAX_KEY - plen;
	if (plen > LS_BTREE_MAX_KEY)
		plen = LS_BTREE_MAX_KEY;
	memcpy(buf, prefix, plen);
	memcpy(buf + plen, s, slen);
	return plen + slen;
}

uint32_t
ls_node_free_space(const uint8_t *n)
{
	const ls_node_hdr *h = ls_node_cheader(n);
	uint32_t	used = HDR_SIZE + (uint32_t) ls_node_count(n) * SLOT_SIZE;

	return h->data_off > used ? h->data_off - used : 0;
}

uint32_t
ls_node_free_after_compaction(const uint8_t *n)
{
	const ls_node_hdr *h = ls_node_cheader(n);
	uint32_t	used = HDR_SIZE + (uint32_t) ls_node_count(n) * SLOT_SIZE + h->space_used;

	return LS_NODE_SIZE > used ? LS_NODE_SIZE - used : 0;
}

uint32_t
ls_node_entry_space(const uint8_t *n, uint32_t klen, uint32_t vlen)
{
	uint32_t	plen = ls_node_cheader(n)->prefix_len;
	uint32_t	sklen = klen > plen ? klen - plen : 0;

	/* Inner heaps allocate in multiples of 8 from an aligned end: no waste. */
	return SLOT_SIZE + alloc_size(n, sklen + vlen);
}

bool
ls_node_can_insert(const uint8_t *n, uint32_t klen, uint32_t vlen)
{
	return ls_node_entry_space(n, klen, vlen) <= ls_node_free_after_compaction(n);
}

void
ls_node_update_hints(uint8_t *n)
{
	ls_node_hdr *h = ls_node_header(n);
	const ls_node_slot *slots = ls_node_slots(n);
	uint32_t	dist = h->count / (LS_NODE_HINTS + 1);

	if (h->count <= 2 * LS_NODE_HINTS)
		return;					/* not consulted: plain binary search */
	for (uint32_t j = 0; j < LS_NODE_HINTS; j++)
		h->hints[j] = slots[(j + 1) * dist].head;
}

/*
 * Write an entry (value, then key suffix) into fresh heap space and point
 * slot s at it; space checked by the caller.  suffix must not lie in this
 * node's heap (a compaction may have moved it).
 */
static inline void
place_entry(uint8_t *n, ls_node_slot *s, const uint8_t *suffix, uint32_t sklen,
			const void *val, uint32_t vlen)
{
	uint16_t	off = heap_alloc(n, sklen + vlen);

	memcpy(n + off, val, vlen);
	memcpy(n + off + vlen, suffix, sklen);
	s->off = off;
	s->klen = (uint16_t) sklen;
	s->vlen = (uint16_t) vlen;
	s->head = ls_node_head(suffix, sklen);
}

/* Append an entry (suffix already stripped) as the last slot; space checked. */
static void
push_entry(uint8_t *n, const uint8_t *suffix, uint32_t sklen, const void *val, uint32_t vlen)
{
	ls_node_hdr *h = ls_node_header(n);
	ls_node_slot *s = &ls_node_slots(n)[h->count];

	s->pad = 0;
	place_entry(n, s, suffix, sklen, val, vlen);
	h->count++;
}

void
ls_node_compact(uint8_t *n)
{
	uint8_t		tmp[LS_NODE_SIZE] __attribute__((aligned(8)));
	const ls_node_hdr *th = (const ls_node_hdr *) tmp;
	uint32_t	llen,
				ulen;

	memcpy(tmp, n, LS_NODE_SIZE);
	const uint8_t *lf = ls_node_lower_fence(tmp, &llen);
	const uint8_t *uf = ls_node_upper_fence(tmp, &ulen);

	ls_node_init(n, th->level, lf, (uint16_t) llen, uf, (uint16_t) ulen);
	ls_node_header(n)->upper = th->upper;
	for (uint16_t i = 0; i < th->count; i++)
	{
		const ls_node_slot *s = &ls_node_cslots(tmp)[i];

		push_entry(n, tmp + s->off + s->vlen, s->klen, tmp + s->off, s->vlen);
	}
	ls_node_update_hints(n);
}

ls_status
ls_node_insert_at(uint8_t *n, uint16_t pos, const uint8_t *key, uint32_t klen,
				  const void *val, uint32_t vlen)
{
	ls_node_hdr *h = ls_node_header(n);
	uint32_t	need = ls_node_entry_space(n, klen, vlen);

	if (klen < h->prefix_len || pos > h->count)
		return LS_INVALID;
	if (need > ls_node_free_space(n))
	{
		if (need > ls_node_free_after_compaction(n))
			return LS_NO_SPACE;
		ls_node_compact(n);
	}
	/* Append, then rotate the new slot into place. */
	ls_node_slot *slots = ls_node_slots(n);

	push_entry(n, key + h->prefix_len, klen - h->prefix_len, val, vlen);
	ls_node_slot s = slots[h->count - 1];

	memmove(&slots[pos + 1], &slots[pos], (size_t) (h->count - 1 - pos) * SLOT_SIZE);
	slots[pos] = s;
	ls_node_update_hints(n);
	return LS_OK;
}

ls_status
ls_node_insert(uint8_t *n, const uint8_t *key, uint32_t klen, const void *val, uint32_t vlen)
{
	bool		exact;
	uint16_t	pos = ls_node_lower_bound(n, key, klen, &exact);

	if (exact)
		return LS_EXISTS;
	return ls_node_insert_at(n, pos, key, klen, val, vlen);
}

void
ls_node_remove_at(uint8_t *n, uint16_t pos)
{
	ls_node_hdr *h = ls_node_header(n);
	ls_node_slot *slots = ls_node_slots(n);

	h->space_used = (uint16_t) (h->space_used - alloc_size(n, (uint32_t) slots[pos].klen + slots[pos].vlen));
	/* The heap hole is reclaimed by the next compaction. */
	memmove(&slots[pos], &slots[pos + 1], (size_t) (h->count - pos - 1) * SLOT_SIZE);
	h->count--;
	ls_node_update_hints(n);
}

ls_status
ls_node_set_value(uint8_t *n, uint16_t pos, const void *val, uint32_t vlen)
{
	ls_node_hdr *h = ls_node_header(n);
	ls_node_slot *s = &ls_node_slots(n)[pos];

	if (vlen == s->vlen)
	{
		memcpy(n + s->off, val, vlen);
		return LS_OK;
	}
	/* Size changes: the old entry's bytes count as free after removal. */
	uint32_t	old = alloc_size(n, (uint32_t) s->klen + s->vlen);
	uint32_t	need = alloc_size(n, (uint32_t) s->klen + vlen);

	if (need > ls_node_free_after_compaction(n) + old)
		return LS_NO_SPACE;
	uint8_t		suffix[LS_BTREE_MAX_KEY];
	uint32_t	sklen = s->klen;

	memcpy(suffix, n + s->off + s->vlen, sklen);
	h->space_used = (uint16_t) (h->space_used - old);
	s->klen = 0;
	s->vlen = 0;
	if (need > ls_node_free_space(n))
		ls_node_compact(n);
	/* A compaction above saw the slot without its key: this restores its head. */
	place_entry(n, s, suffix, sklen, val, vlen);
	ls_node_update_hints(n);
	return LS_OK;
}

/* Bytes of slots [from, to) including their slots, as a fresh node would use. */
static uint32_t
range_bytes(const uint8_t *n, uint16_t from, uint16_t to)
{
	uint32_t	b = 0;

	for (uint16_t i = from; i < to; i++)
	{
		const ls_node_slot *s = &ls_node_cslots(n)[i];

		b += SLOT_SIZE + alloc_size(n, (uint32_t) s->klen + s->vlen);
	}
	return b;
}

/*
 * Leading 8 bytes of a key (zero-padded) as a big-endian integer: the
 * trees' users key by integers first (the cold tier by rowid), so nearness
 * of this value is what "next in an ascending run" means here.
 */
static uint64_t
key_head64(const uint8_t *k, uint32_t klen)
{
	uint64_t	v = 0;

	for (uint32_t i = 0; i < 8; i++)
		v = (v << 8) | (i < klen ? k[i] : 0);
	return v;
}

/* May b follow a (a < b) in an ascending run of inserts? */
static bool
run_neighbours(const uint8_t *a, uint32_t alen, const uint8_t *b, uint32_t blen)
{
	return key_head64(b, blen) - key_head64(a, alen) <= LS_NODE_RUN_GAP;
}

/*
 * Where a full leaf should split for the insert of key (absent from it):
 * the last slot that stays left, or -1 for an even split by bytes.
 *
 *  - key after every key of the rightmost leaf (an ascending load): the
 *    left node keeps all but one entry.
 *  - key continues an ascending run (it follows its left neighbour, and its
 *    right neighbour does not follow it): the run is being inserted into a
 *    gap of the key space (pack moving hot rows of an older rowid range
 *    into a tree that already holds younger ones).  An even split would
 *    leave every leaf of the run half full; cut instead right behind the
 *    run (the run's leaf fills completely with its next keys, the entries
 *    behind the gap keep their leaf), or, with key after every key of the
 *    leaf, as for an ascending load.
 */
static int
split_slot_for(const uint8_t *n, const uint8_t *key, uint32_t klen, bool *key_left)
{
	const ls_node_hdr *h = ls_node_cheader(n);
	uint16_t	count = h->count;
	bool		exact;
	uint16_t	pos;
	uint8_t		nb[LS_BTREE_MAX_KEY];
	uint32_t	nblen;

	*key_left = false;
	if (key == NULL || h->level != 0)
		return -1;
	pos = ls_node_lower_bound(n, key, klen, &exact);
	if (exact)
		return -1;
	if (pos == count && h->upper_len == 0)
		return count - 2;
	if (pos == 0)
		return -1;
	nblen = ls_node_key(n, (uint16_t) (pos - 1), nb);
	if (!run_neighbours(nb, nblen, key, klen))
		return -1;
	if (pos == count)
		return count - 2;
	nblen = ls_node_key(n, pos, nb);
	if (run_neighbours(key, klen, nb, nblen))
		return -1;				/* filling a small gap: no run to make room for */
	*key_left = true;
	return pos - 1;
}

ls_status
ls_node_plan_split(const uint8_t *n, const uint8_t *key, uint32_t klen,
				   ls_node_split_plan *plan)
{
	const ls_node_hdr *h = ls_node_cheader(n);
	uint16_t	count = h->count;
	bool		key_left;
	int			slot;
	uint16_t	pos;

	if (count < 2)
		return LS_INVALID;
	slot = split_slot_for(n, key, klen, &key_left);
	if (slot >= 0)
		pos = (uint16_t) slot;
	else
	{
		/* Smallest pos whose left part holds half the entry bytes. */
		uint32_t	total = range_bytes(n, 0, count),
					acc = 0;

		pos = 0;
		while (pos < count - 2)
		{
			acc += range_bytes(n, pos, pos + 1);
			if (acc * 2 >= total)
				break;
			pos++;
		}
	}
	/* Inner nodes need a slot on each side of the one that moves up. */
	if (h->level && pos == 0)
		pos = 1;
	if (h->level && pos >= count - 1)
		pos = (uint16_t) (count - 2);
	LS_ASSERT(pos <= count - 2);
	plan->pos = pos;

	uint8_t		a[LS_BTREE_MAX_KEY],
				b[LS_BTREE_MAX_KEY];
	uint32_t	alen = ls_node_key(n, pos, a);

	if (h->level)
	{
		memcpy(plan->sep, a, alen);
		plan->sep_len = alen;
		return LS_OK;
	}

	/*
	 * Leaf: shortest prefix of the next key that is still > a.  When the
	 * run's next key is to go left, the separator must be above it too (it
	 * lies between slots pos and pos + 1).
	 */
	if (key_left)
	{
		memcpy(a, key, klen);
		alen = klen;
	}
	uint32_t	blen = ls_node_key(n, (uint16_t) (pos + 1), b);
	uint32_t	c = common_prefix(a, alen, b, blen);

	if (c + 1 < blen)
	{
		memcpy(plan->sep, b, c + 1);
		plan->sep_len = c + 1;
	}
	else
	{
		memcpy(plan->sep, a, alen);
		plan->sep_len = alen;
	}
	return LS_OK;
}

/* Copy slots [from, to) of src (full keys rebuilt) to the end of dst. */
static void
copy_range(uint8_t *dst, const uint8_t *src, uint16_t from, uint16_t to)
{
	uint32_t	dplen = ls_node_cheader(dst)->prefix_len;
	uint8_t		key[LS_BTREE_MAX_KEY];

	for (uint16_t i = from; i < to; i++)
	{
		uint32_t	klen = ls_node_key(src, i, key);
		uint32_t	vlen;
		const uint8_t *v = ls_node_value(src, i, &vlen);

		push_entry(dst, key + dplen, klen - dplen, v, vlen);
	}
}

void
ls_node_split(uint8_t *n, uint8_t *left, const ls_node_split_plan *plan, uint8_t *tmp)
{
	const ls_node_hdr *th = (const ls_node_hdr *) tmp;
	uint32_t	llen,
				ulen;

	memcpy(tmp, n, LS_NODE_SIZE);
	const uint8_t *lf = ls_node_lower_fence(tmp, &llen);
	const uint8_t *uf = ls_node_upper_fence(tmp, &ulen);
	uint16_t	count = th->count;

	ls_node_init(left, th->level, lf, (uint16_t) llen, plan->sep, (uint16_t) plan->sep_len);
	ls_node_init(n, th->level, plan->sep, (uint16_t) plan->sep_len, uf, (uint16_t) ulen);
	if (th->level == 0)
	{
		copy_range(left, tmp, 0, (uint16_t) (plan->pos + 1));
		copy_range(n, tmp, (uint16_t) (plan->pos + 1), count);
	}
	else
	{
		copy_range(left, tmp, 0, plan->pos);
		ls_node_header(left)->upper = *ls_node_child_ref(tmp, plan->pos);
		copy_range(n, tmp, (uint16_t) (plan->pos + 1), count);
		ls_node_header(n)->upper = th->upper;
	}
	ls_node_update_hints(left);
	ls_node_update_hints(n);
}

/* Bytes of all count slots of src once re-based onto prefix length plen. */
static uint32_t
rebased_bytes(const uint8_t *src, uint16_t count, uint32_t plen)
{
	uint32_t	grow = ls_node_cheader(src)->prefix_len - plen;
	uint32_t	b = 0;

	for (uint16_t i = 0; i < count; i++)
	{
		const ls_node_slot *s = &ls_node_cslots(src)[i];

		b += SLOT_SIZE + alloc_size(src, grow + s->klen + s->vlen);
	}
	return b;
}

ls_status
ls_node_merge(const uint8_t *left, uint8_t *right, uint8_t *tmp)
{
	const ls_node_hdr *lh = ls_node_cheader(left);
	const ls_node_hdr *rh = ls_node_cheader(right);
	uint32_t	llen,
				ulen,
				slen;
	const uint8_t *lf = ls_node_lower_fence(left, &llen);
	const uint8_t *sep = ls_node_upper_fence(left, &slen);

	if (lh->level != rh->level)
		return LS_INVALID;
	memcpy(tmp, right, LS_NODE_SIZE);
	const uint8_t *uf = ls_node_upper_fence(tmp, &ulen);

	/* Build into right; on overflow restore it from tmp. */
	ls_node_init(right, rh->level, lf, (uint16_t) llen, uf, (uint16_t) ulen);
	uint32_t	plen = ls_node_cheader(right)->prefix_len;
	/* Suffixes grow by the prefix bytes the merged node no longer shares. */
	uint16_t	rcount = ((const ls_node_hdr *) tmp)->count;	/* rh was reset */
	uint32_t	need = rebased_bytes(left, lh->count, plen) + rebased_bytes(tmp, rcount, plen);

	if (lh->level)
		need += SLOT_SIZE + (uint32_t) LS_ALIGN_UP(slen + 8, 8);
	if (need > ls_node_free_space(right))
	{
		memcpy(right, tmp, LS_NODE_SIZE);
		return LS_NO_SPACE;
	}
	copy_range(right, left, 0, lh->count);
	if (lh->level)
	{
		uint64_t	child = lh->upper;

		push_entry(right, sep + plen, slen - plen, &child, 8);
	}
	copy_range(right, tmp, 0, rcount);
	ls_node_header(right)->upper = ((const ls_node_hdr *) tmp)->upper;
	ls_node_update_hints(right);
	return LS_OK;
}

bool
ls_node_scan(const uint8_t *n, uint16_t from, uint16_t to, bool asc, ls_btree_scan_fn fn, void *arg)
{
	uint8_t		key[LS_BTREE_MAX_KEY];
	const uint8_t *prefix;
	uint32_t	plen = prefix_of(n, &prefix);
	const ls_node_slot *slots = ls_node_cslots(n);

	/* the prefix is the node's: copied once, each slot adds its suffix */
	if (plen > LS_BTREE_MAX_KEY)
		plen = LS_BTREE_MAX_KEY;
	memcpy(key, prefix, plen);
	for (uint16_t i = 0; i < to - from; i++)
	{
		uint16_t	pos = asc ? (uint16_t) (from + i) : (uint16_t) (to - 1 - i);
		const ls_node_slot *s = &slots[pos < LS_NODE_MAX_SLOTS ? pos : 0];
		uint32_t	slen;
		const uint8_t *suffix = slot_suffix(n, s, &slen);
		uint32_t	vlen;
		const uint8_t *v = bounded(n, s->off, s->vlen, &vlen);
		uint32_t	klen;

		if (LS_UNLIKELY(plen + slen > LS_BTREE_MAX_KEY))
			slen = LS_BTREE_MAX_KEY - plen;
		memcpy(key + plen, suffix, slen);
		klen = plen + slen;

		if (!fn(arg, key, klen, v, vlen))
			return false;
	}
	return true;
}

uint32_t
ls_node_child_upper(const uint8_t *n, uint16_t pos, uint8_t *buf)
{
	uint32_t	len;
	const uint8_t *f;

	if (pos < ls_node_count(n))
		return ls_node_key(n, pos, buf);
	f = ls_node_upper_fence(n, &len);
	len = LS_MIN(len, LS_BTREE_MAX_KEY);
	memcpy(buf, f, len);
	return len;
}

#define CHECK(cond, ...) \
	do { if (!(cond)) { snprintf(msg, msglen, __VA_ARGS__); return LS_CORRUPT; } } while (0)

ls_status
ls_node_check(const uint8_t *n, char *msg, size_t msglen)
{
	const ls_node_hdr *h = ls_node_cheader(n);
	const ls_node_slot *slots = ls_node_cslots(n);
	uint32_t	llen,
				ulen;
	const uint8_t *lf = ls_node_lower_fence(n, &llen);
	const uint8_t *uf = ls_node_upper_fence(n, &ulen);

	CHECK(h->count <= LS_NODE_MAX_SLOTS, "count %u too large", h->count);
	CHECK(h->data_off >= HDR_SIZE + h->count * SLOT_SIZE && h->data_off <= LS_NODE_SIZE,
		  "heap start %u overlaps %u slots", h->data_off, h->count);
	CHECK(llen == h->lower_len && ulen == h->upper_len, "fence out of bounds");
	CHECK(!llen || !ulen || ls_key_cmp(lf, llen, uf, ulen) < 0, "lower fence >= upper fence");
	uint32_t	p = fence_prefix(lf, llen, uf, ulen);

	CHECK(h->prefix_len == p, "prefix length %u, fences share %u", h->prefix_len, p);

	uint32_t	used = alloc_size(n, llen) + alloc_size(n, ulen);
	uint8_t		prev[LS_BTREE_MAX_KEY],
				cur[LS_BTREE_MAX_KEY];
	uint32_t	prevlen = 0;

	for (uint16_t i = 0; i < h->count; i++)
	{
		const ls_node_slot *s = &slots[i];

		CHECK(s->off >= h->data_off && (uint32_t) s->off + s->klen + s->vlen <= LS_NODE_SIZE,
			  "slot %u entry out of the heap", i);
		CHECK(!h->level || (s->vlen == 8 && s->off % 8 == 0), "inner slot %u value", i);
		used += alloc_size(n, (uint32_t) s->klen + s->vlen);
		CHECK(s->head == ls_node_head(n + s->off + s->vlen, s->klen), "slot %u head", i);
		uint32_t	klen = ls_node_key(n, i, cur);

		CHECK(klen > 0, "slot %u empty key", i);
		CHECK(i == 0 || ls_key_cmp(prev, prevlen, cur, klen) < 0, "slot %u out of order", i);
		CHECK(!llen || ls_key_cmp(lf, llen, cur, klen) < 0, "slot %u not above lower fence", i);
		CHECK(!ulen || ls_key_cmp(cur, klen, uf, ulen) <= 0, "slot %u above upper fence", i);
		memcpy(prev, cur, klen);
		prevlen = klen;
	}
	CHECK(used == h->space_used, "space_used %u, counted %u", h->space_used, used);
	if (h->count > 2 * LS_NODE_HINTS)
	{
		uint32_t	dist = h->count / (LS_NODE_HINTS + 1);

		for (uint32_t j = 0; j < LS_NODE_HINTS; j++)
			CHECK(h->hints[j] == slots[(j + 1) * dist].head, "hint %u stale", j);
	}
	return LS_OK;
}

ls_status
ls_node_check_in_tree(const uint8_t *n, uint16_t level, const uint8_t *lower, uint32_t llen,
					  const uint8_t *upper, uint32_t ulen, char *msg, size_t msglen)
{
	ls_status	st = ls_node_check(n, msg, msglen);
	uint32_t	nl,
				nu;
	const uint8_t *nlf = ls_node_lower_fence(n, &nl);
	const uint8_t *nuf = ls_node_upper_fence(n, &nu);

	if (st != LS_OK)
		return st;
	CHECK(ls_node_cheader(n)->level == level, "node level %u, expected %u", ls_node_cheader(n)->level, level);
	CHECK(ls_key_cmp(nlf, nl, lower, llen) == 0 && ls_key_cmp(nuf, nu, upper, ulen) == 0,
		  "level-%u node: fences differ from the parent's separators", level);
	return LS_OK;
}
