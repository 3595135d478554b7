/*
 * hashcache.c - the hash cache in front of unique indexes (BTrim).
 *
 * See include/leanstore/hashcache.h for the contract and the concurrency
 * protocol, src/hot/README.md ("Hash cache") for why it looks like this.
 */
#include "leanstore/hashcache.h"

#include <string.h>

#define HC_MAGIC	UINT64_C(0x6c73686173686332)	/* "lshashc2" */
#define HC_ROWID_MASK	((UINT64_C(1) << LS_HC_ROWID_BITS) - 1)

/*
 * ctl word: check (32 bits) << 32 | sequence (31 bits) << 1 | busy.  Check
 * 0 is an empty entry; the hash's low 32 bits are the check (its high bits
 * pick the bucket), 0 stored as all ones.  A check shared by two keys of
 * one bucket costs a recheck; a sequence that wrapped between a reader's
 * two loads of ctl (2^31 writes of one entry) would hide a torn read.
 */
#define HC_BUSY			UINT64_C(1)
#define HC_SEQ_SHIFT	1
#define HC_SEQ_MASK		((UINT64_C(1) << 31) - 1)
#define HC_CHECK_SHIFT	32
#define HC_CHECK_MASK	((UINT64_C(1) << 32) - 1)

typedef struct hc_entry
{
	_Atomic uint64_t ctl;
	_Atomic uint64_t val;
	_Atomic uint64_t ref;
	_Atomic uint64_t serial;
} hc_entry;

/*
 * A bucket is a pair of cache lines, aligned to the pair (the adjacent-line
 * prefetcher often brings both): fills take the first line's ways first,
 * so most keys of a lightly loaded bucket are found in one line.
 */
#define HC_BUCKET_ALIGN	(2 * LS_CACHELINE)

typedef struct hc_bucket
{
	hc_entry	e[LS_HC_WAYS];
} __attribute__((aligned(HC_BUCKET_ALIGN))) hc_bucket;

typedef struct hc_stripe
{
	_Atomic uint64_t c[LS_HC_NCOUNTERS];
} __attribute__((aligned(LS_CACHELINE))) hc_stripe;

struct ls_hc
{
	uint64_t	magic;
	uint64_t	region_bytes;
	uint64_t	nbuckets;
	hc_stripe	stripes[LS_HC_STRIPES];
	hc_bucket	buckets[];
};

_Static_assert(sizeof(hc_bucket) == HC_BUCKET_ALIGN, "a bucket is two cache lines");
_Static_assert(LS_HC_TAG_BITS + LS_HC_ROWID_BITS == 64, "val word layout");

size_t
ls_hc_region_size(uint64_t nbuckets)
{
	/* header, buckets, and slack to align the header to a cache line */
	return sizeof(ls_hc) + nbuckets * sizeof(hc_bucket) + HC_BUCKET_ALIGN;
}

uint64_t
ls_hc_buckets_for(size_t size)
{
	if (size < ls_hc_region_size(1))
		return 0;
	return (size - sizeof(ls_hc) - HC_BUCKET_ALIGN) / sizeof(hc_bucket);
}

ls_status
ls_hc_init(void *region, size_t size, ls_hc **out)
{
	uintptr_t	p = LS_ALIGN_UP((uintptr_t) region, HC_BUCKET_ALIGN);
	uint64_t	n = ls_hc_buckets_for(size);
	ls_hc	   *hc;

	if (n == 0)
		return LS_INVALID;
	hc = (ls_hc *) p;
	memset(hc, 0, sizeof(ls_hc) + n * sizeof(hc_bucket));
	hc->region_bytes = size;
	hc->nbuckets = n;
	atomic_thread_fence(memory_order_release);
	hc->magic = HC_MAGIC;
	*out = hc;
	return LS_OK;
}

/* ------------------------------------------------------------------------
 * Hashing: 8 bytes at a time, multiply and fold (our own mix, not a
 * cryptographic hash; collisions only cost a recheck).
 * ------------------------------------------------------------------------ */
static inline uint64_t
hc_mix(uint64_t a, uint64_t b)
{
	__uint128_t m = (__uint128_t) (a ^ UINT64_C(0x9e3779b97f4a7c15)) *
		(b ^ UINT64_C(0xd6e8feb86659fd93));

	return (uint64_t) m ^ (uint64_t) (m >> 64);
}

uint64_t
ls_hc_hash(uint64_t seed, const void *bytes, size_t len)
{
	const uint8_t *p = bytes;
	uint64_t	h = seed ^ (len * UINT64_C(0xff51afd7ed558ccd));

	while (len >= 8)
	{
		uint64_t	w;

		memcpy(&w, p, 8);
		h = hc_mix(h, w);
		p += 8;
		len -= 8;
	}
	if (len > 0)
	{
		uint64_t	w = 0;

		memcpy(&w, p, len);
		h = hc_mix(h, w ^ ((uint64_t) len << 56));
	}
	return hc_mix(h, UINT64_C(0x94d049bb133111eb));
}

/* The check stored for hash: never 0 (empty). */
static inline uint64_t
hc_check(uint64_t hash)
{
	uint64_t	c = hash & HC_CHECK_MASK;

	return c != 0 ? c : HC_CHECK_MASK;
}

static inline uint64_t
hc_ctl_check(uint64_t ctl)
{
	return ctl >> HC_CHECK_SHIFT;
}

/* The ctl that publishes check after a write of an entry whose ctl was ctl. */
static inline uint64_t
hc_ctl_next(uint64_t ctl, uint64_t check)
{
	uint64_t	seq = ((ctl >> HC_SEQ_SHIFT) + 1) & HC_SEQ_MASK;

	return (check << HC_CHECK_SHIFT) | (seq << HC_SEQ_SHIFT);
}

static inline hc_bucket *
hc_bucket_for(ls_hc *hc, uint64_t hash)
{
	/*
	 * Any bucket count: the hash scaled to [0, nbuckets) by a multiply
	 * (its high bits pick the bucket); the entry keeps its low bits.
	 */
	return &hc->buckets[(uint64_t) (((__uint128_t) hash * hc->nbuckets) >> 64)];
}

static inline uint64_t
hc_val(uint32_t tag, uint64_t rowid)
{
	return ((uint64_t) tag << LS_HC_ROWID_BITS) | (rowid & HC_ROWID_MASK);
}

bool
ls_hc_lookup_ref(ls_hc *hc, uint64_t hash, ls_hc_hit *hit)
{
	uint64_t	check = hc_check(hash);
	hc_bucket  *b = hc_bucket_for(hc, hash);

	for (int i = 0; i < LS_HC_WAYS; i++)
	{
		hc_entry   *e = &b->e[i];
		uint64_t	ctl = atomic_load_explicit(&e->ctl, memory_order_acquire);
		uint64_t	val,
					ref,
					serial;

		if (hc_ctl_check(ctl) != check || (ctl & HC_BUSY) != 0)
			continue;
		val = atomic_load_explicit(&e->val, memory_order_relaxed);
		ref = atomic_load_explicit(&e->ref, memory_order_relaxed);
		serial = atomic_load_explicit(&e->serial, memory_order_relaxed);
		/* no write came between the two reads of ctl: one fill's words */
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&e->ctl, memory_order_relaxed) != ctl)
			continue;
		hit->rowid = val & HC_ROWID_MASK;
		hit->ref = ref;
		hit->serial = serial;
		return true;
	}
	return false;
}

bool
ls_hc_lookup(ls_hc *hc, uint64_t hash, uint64_t *rowid)
{
	ls_hc_hit	hit;

	if (!ls_hc_lookup_ref(hc, hash, &hit))
		return false;
	*rowid = hit.rowid;
	return true;
}

/* Claim entry e whose ctl was seen as expect; true when it is ours. */
static inline bool
hc_claim(hc_entry *e, uint64_t expect)
{
	return (expect & HC_BUSY) == 0 &&
		atomic_compare_exchange_strong_explicit(&e->ctl, &expect, expect | HC_BUSY,
												memory_order_acquire,
												memory_order_relaxed);
}

/*
 * Write a claimed entry (ctl was seen as ctl before the claim) and publish
 * it under the next sequence.
 */
static inline void
hc_publish(hc_entry *e, uint64_t ctl, uint64_t check, uint64_t val,
		   uint64_t ref, uint64_t serial)
{
	/* a reader that sees a new word also sees the claim (fence pairing) */
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&e->val, val, memory_order_relaxed);
	atomic_store_explicit(&e->ref, ref, memory_order_relaxed);
	atomic_store_explicit(&e->serial, serial, memory_order_relaxed);
	atomic_store_explicit(&e->ctl, hc_ctl_next(ctl, check), memory_order_release);
}

/* Does entry e (read without a claim) hold exactly these words? */
static inline bool
hc_holds(hc_entry *e, uint64_t val, uint64_t ref, uint64_t serial)
{
	return atomic_load_explicit(&e->val, memory_order_relaxed) == val &&
		atomic_load_explicit(&e->ref, memory_order_relaxed) == ref &&
		atomic_load_explicit(&e->serial, memory_order_relaxed) == serial;
}

ls_hc_fill_result
ls_hc_fill_ref(ls_hc *hc, uint64_t hash, uint32_t tag, uint64_t rowid,
			   uint64_t ref, uint64_t serial)
{
	uint64_t	check = hc_check(hash);
	uint64_t	val = hc_val(tag, rowid);
	hc_bucket  *b = hc_bucket_for(hc, hash);
	int			empty = -1;
	uint64_t	ctl;

	/* the same hash: replace what it maps to */
	for (int i = 0; i < LS_HC_WAYS; i++)
	{
		ctl = atomic_load_explicit(&b->e[i].ctl, memory_order_relaxed);
		if (hc_ctl_check(ctl) == check)
		{
			if ((ctl & HC_BUSY) == 0 && hc_holds(&b->e[i], val, ref, serial))
				return LS_HC_UPDATED;	/* already there */
			if (!hc_claim(&b->e[i], ctl))
				return LS_HC_SKIPPED;
			hc_publish(&b->e[i], ctl, check, val, ref, serial);
			return LS_HC_UPDATED;
		}
		if (hc_ctl_check(ctl) == 0 && (ctl & HC_BUSY) == 0 && empty < 0)
			empty = i;
	}
	if (empty >= 0)
	{
		hc_entry   *e = &b->e[empty];

		ctl = atomic_load_explicit(&e->ctl, memory_order_relaxed);
		if (hc_ctl_check(ctl) != 0 || !hc_claim(e, ctl))
			return LS_HC_SKIPPED;
		hc_publish(e, ctl, check, val, ref, serial);
		return LS_HC_FILLED;
	}
	/*
	 * Full bucket: replace the way named by hash bits that neither pick the
	 * bucket (high) nor are the check (low).
	 */
	{
		int			victim = (int) ((hash >> 40) % LS_HC_WAYS);
		hc_entry   *e = &b->e[victim];

		ctl = atomic_load_explicit(&e->ctl, memory_order_relaxed);
		if (hc_ctl_check(ctl) == 0 || !hc_claim(e, ctl))
			return LS_HC_SKIPPED;
		hc_publish(e, ctl, check, val, ref, serial);
		return LS_HC_EVICTED;
	}
}

ls_hc_fill_result
ls_hc_fill(ls_hc *hc, uint64_t hash, uint32_t tag, uint64_t rowid)
{
	return ls_hc_fill_ref(hc, hash, tag, rowid, 0, 0);
}

/*
 * Remove entry e whose ctl was seen as ctl and val as seen: claim it, and
 * empty it unless its val changed meanwhile (another writer replaced it
 * between our look and our claim; with any_val removed all the same).
 */
static inline bool
hc_remove_entry(hc_entry *e, uint64_t ctl, uint64_t seen, bool any_val)
{
	if (!hc_claim(e, ctl))
		return false;
	if (!any_val && atomic_load_explicit(&e->val, memory_order_relaxed) != seen)
	{
		/* changed under us: put it back as it was (nothing was written) */
		atomic_store_explicit(&e->ctl, ctl, memory_order_release);
		return false;
	}
	atomic_store_explicit(&e->ctl, hc_ctl_next(ctl, 0), memory_order_release);
	return true;
}

uint32_t
ls_hc_remove(ls_hc *hc, uint64_t hash, uint64_t rowid)
{
	uint64_t	check = hc_check(hash);
	hc_bucket  *b = hc_bucket_for(hc, hash);
	uint32_t	n = 0;

	for (int i = 0; i < LS_HC_WAYS; i++)
	{
		hc_entry   *e = &b->e[i];
		uint64_t	ctl = atomic_load_explicit(&e->ctl, memory_order_relaxed);
		uint64_t	val;

		if (hc_ctl_check(ctl) != check)
			continue;
		val = atomic_load_explicit(&e->val, memory_order_relaxed);
		if (rowid != LS_HC_ANY_ROWID && (val & HC_ROWID_MASK) != (rowid & HC_ROWID_MASK))
			continue;
		if (hc_remove_entry(e, ctl, val, rowid == LS_HC_ANY_ROWID))
			n++;
	}
	return n;
}

/* Is rowid in the ascending array set[0..n)? */
static bool
hc_rowid_in(const uint64_t *set, size_t n, uint64_t rowid)
{
	size_t		lo = 0,
				hi = n;

	while (lo < hi)
	{
		size_t		mid = lo + (hi - lo) / 2;
		uint64_t	r = set[mid] & HC_ROWID_MASK;

		if (r == rowid)
			return true;
		if (r < rowid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/*
 * The sweep behind ls_hc_remove_table and ls_hc_remove_rowids: every entry
 * of tag whose rowid is in set[0..n) (every entry of tag when set is NULL).
 */
static uint64_t
hc_sweep(ls_hc *hc, uint32_t tag, const uint64_t *set, size_t n)
{
	uint64_t	removed = 0;
	uint64_t	want = (uint64_t) (tag & ((1u << LS_HC_TAG_BITS) - 1));

	for (uint64_t bi = 0; bi < hc->nbuckets; bi++)
	{
		hc_bucket  *b = &hc->buckets[bi];

		for (int i = 0; i < LS_HC_WAYS; i++)
		{
			hc_entry   *e = &b->e[i];
			uint64_t	ctl = atomic_load_explicit(&e->ctl, memory_order_relaxed);
			uint64_t	val;

			if (hc_ctl_check(ctl) == 0 || (ctl & HC_BUSY) != 0)
				continue;
			val = atomic_load_explicit(&e->val, memory_order_relaxed);
			if ((val >> LS_HC_ROWID_BITS) != want)
				continue;
			if (set != NULL && !hc_rowid_in(set, n, val & HC_ROWID_MASK))
				continue;
			if (hc_remove_entry(e, ctl, val, false))
				removed++;
		}
	}
	return removed;
}

uint64_t
ls_hc_remove_table(ls_hc *hc, uint32_t tag, uint64_t rowid)
{
	return rowid == LS_HC_ANY_ROWID ? hc_sweep(hc, tag, NULL, 0) :
		hc_sweep(hc, tag, &rowid, 1);
}

uint64_t
ls_hc_remove_rowids(ls_hc *hc, uint32_t tag, const uint64_t *rowids, size_t n)
{
	LS_ASSERT(rowids != NULL || n == 0);
	for (size_t i = 1; i < n; i++)
		LS_ASSERT((rowids[i - 1] & HC_ROWID_MASK) < (rowids[i] & HC_ROWID_MASK));
	return n == 0 ? 0 : hc_sweep(hc, tag, rowids, n);
}

void
ls_hc_count(ls_hc *hc, uint32_t slot, ls_hc_counter c, uint64_t n)
{
	atomic_fetch_add_explicit(&hc->stripes[slot % LS_HC_STRIPES].c[c], n,
							  memory_order_relaxed);
}

void
ls_hc_get_stats(ls_hc *hc, bool count_entries, ls_hc_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->region_bytes = hc->region_bytes;
	out->buckets = hc->nbuckets;
	out->capacity = hc->nbuckets * LS_HC_WAYS;
	for (int s = 0; s < LS_HC_STRIPES; s++)
		for (int c = 0; c < LS_HC_NCOUNTERS; c++)
			out->counters[c] += atomic_load_explicit(&hc->stripes[s].c[c],
													 memory_order_relaxed);
	if (!count_entries)
		return;
	for (uint64_t bi = 0; bi < hc->nbuckets; bi++)
		for (int i = 0; i < LS_HC_WAYS; i++)
		{
			uint64_t	ctl = atomic_load_explicit(&hc->buckets[bi].e[i].ctl,
												   memory_order_relaxed);

			if (hc_ctl_check(ctl) != 0 || (ctl & HC_BUSY) != 0)
				out->entries++;
		}
}
