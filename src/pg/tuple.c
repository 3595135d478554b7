/*
 * tuple.c - version payloads and tuple table slots.
 *
 * A version's payload is a MinimalTuple image: a heap tuple without the
 * transaction header, whose infomask carries no visibility bits (those live
 * in the version's own MVCC words).  Reading a version rebuilds a complete
 * HeapTuple in the slot's memory, with xmin, xmax, cid and ctid filled from
 * the version, so system columns and every executor path that wants a heap
 * tuple work unchanged (slots are TTSOpsHeapTuple).
 */
#include "postgres.h"

#include "executor/tuptable.h"
#include "utils/timestamp.h"

#include "ls_pg.h"

/*
 * Rebuild a HeapTuple from v into buf: the HeapTupleData header, then the
 * tuple header and data (MAXALIGNed when buf is).  Reads the version's words
 * once and never resolves multixacts (the raw xmax word is what the tuple
 * header shows), so it does no catalog or SLRU access and never throws:
 * callers run it inside an epoch, e.g. to copy a batch of rows into a
 * scan's buffer.  The caller checked v->len (ls_version_tuple_size).
 */
HeapTuple
ls_version_copy_out(ls_hot_version *v, Oid relid, uint64 rowid, char *buf)
{
	HeapTuple	tup = (HeapTuple) buf;
	HeapTupleHeader hdr = (HeapTupleHeader) (buf + HEAPTUPLESIZE);
	uint32		len = v->len;
	uint64		xmin_word = atomic_load_explicit(&v->xmin_word, memory_order_acquire);
	uint64		xmax_word = atomic_load_explicit(&v->xmax_word, memory_order_acquire);
	uint32		xmin_flags = ls_hv_flags(xmin_word);
	uint32		xmax_flags = ls_hv_flags(xmax_word);
	uint16		infomask;
	uint16		infomask2;

	Assert(ls_in_epoch());
	/* flags from the source, not from the fresh copy (store forwarding) */
	infomask = ((MinimalTuple) v->data)->t_infomask & ~HEAP_XACT_MASK;
	infomask2 = ((MinimalTuple) v->data)->t_infomask2 &
		~(HEAP_KEYS_UPDATED | HEAP_HOT_UPDATED | HEAP_ONLY_TUPLE);
	memcpy((char *) hdr + MINIMAL_TUPLE_OFFSET, v->data, len);

	tup->t_len = len + MINIMAL_TUPLE_OFFSET;
	tup->t_tableOid = relid;
	ls_rowid_to_tid(rowid, &tup->t_self);
	tup->t_data = hdr;

	HeapTupleHeaderSetXmin(hdr, ls_hv_xid(xmin_word));
	if (xmin_flags & (LS_HV_XMIN_COMMITTED | LS_HV_XMIN_FROZEN))
		infomask |= HEAP_XMIN_COMMITTED;
	else if (xmin_flags & LS_HV_XMIN_ABORTED)
		infomask |= HEAP_XMIN_INVALID;
	HeapTupleHeaderSetXmax(hdr, ls_hv_xid(xmax_word));
	if (ls_hv_xid(xmax_word) == InvalidTransactionId ||
		(xmax_flags & LS_HV_XMAX_ABORTED))
		infomask |= HEAP_XMAX_INVALID;
	else
	{
		if (xmax_flags & LS_HV_XMAX_IS_MULTI)
			infomask |= HEAP_XMAX_IS_MULTI;
		if (xmax_flags & LS_HV_XMAX_COMMITTED)
			infomask |= HEAP_XMAX_COMMITTED;
		if (xmax_flags & LS_HV_XMAX_LOCK_ONLY)
			infomask |= HEAP_XMAX_LOCK_ONLY;
		if (xmax_flags & LS_HV_XMAX_KEYSHR_LOCK)
			infomask |= HEAP_XMAX_KEYSHR_LOCK;
		if (xmax_flags & LS_HV_XMAX_EXCL_LOCK)
			infomask |= HEAP_XMAX_EXCL_LOCK;
		if (xmax_flags & LS_HV_XMAX_KEYS_UPDATED)
			infomask2 |= HEAP_KEYS_UPDATED;
	}
	hdr->t_infomask = infomask;
	hdr->t_infomask2 = infomask2;
	/* t_infomask must be final before HeapTupleHeaderSetCmin looks at it */
	HeapTupleHeaderSetCmin(hdr, v->cmin);
	if (xmax_flags & LS_HV_XMAX_MOVED)
	{
		uint64		next = atomic_load_explicit(&v->next_rowid, memory_order_acquire);
		uint16		uflags = atomic_load_explicit(&v->user_flags, memory_order_acquire);

		if (next != LS_ROWID_INVALID && !(uflags & LS_UF_SPECULATIVE))
			ls_rowid_to_tid(next, &hdr->t_ctid);
		else
			ls_rowid_to_tid(rowid, &hdr->t_ctid);
	}
	else
	{
		/* computed again, not copied from t_self: that load would have to
		 * wait for the three 16-bit stores just made (store forwarding) */
		ls_rowid_to_tid(rowid, &hdr->t_ctid);
	}
	return tup;
}

/*
 * The impossible payload length of a version: lengths are checked before a
 * version is installed and never change after, so this cannot happen short
 * of memory corruption.
 */
static void pg_attribute_noreturn()
ls_bad_version_error(Relation rel, uint32 len)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg_internal("row version in leanstore table \"%s\" has an invalid payload length",
							 RelationGetRelationName(rel)),
			 len != 0 ? errdetail_internal("Payload length: 0x%x.", len) : 0));
	pg_unreachable();
}

/* Report it from outside any epoch (readers that skip such versions). */
void
ls_report_bad_version(Relation rel)
{
	Assert(!ls_in_epoch());
	Assert(!ls_holds_row_latch());
	ls_bad_version_error(rel, 0);
}

Size
ls_heaptuple_size(ls_hot_version *v, Relation rel)
{
	uint32		len = v->len;

	/* called inside epochs (a throw here is released at abort: hold.c) */
	ls_test_fail_at(LS_FAIL_IN_EPOCH);
	/* payload bytes never change after install, but bound them anyway */
	if (len > LS_HOT_MAX_PAYLOAD || len < SizeofMinimalTupleHeader)
		ls_bad_version_error(rel, len);
	return HEAPTUPLESIZE + MINIMAL_TUPLE_OFFSET + len;
}

/*
 * Rebuild a HeapTuple from v into buf (at least ls_heaptuple_size(v) bytes).
 */
HeapTuple
ls_version_to_heaptuple(ls_hot_version *v, Relation rel, uint64 rowid,
						char *buf, Size bufsize)
{
	Assert(ls_in_epoch());
	if (HEAPTUPLESIZE + MINIMAL_TUPLE_OFFSET + (Size) v->len > bufsize)
		elog(ERROR, "tuple buffer too small for a leanstore row version");
	return ls_version_copy_out(v, RelationGetRelid(rel), rowid, buf);
}

/* Store v (caller inside an epoch) into slot; the slot owns the copy. */
void
ls_store_version(ls_hot_version *v, Relation rel, uint64 rowid,
				 TupleTableSlot *slot)
{
	Size		size = ls_heaptuple_size(v, rel);
	char	   *buf = MemoryContextAlloc(slot->tts_mcxt, size);
	HeapTuple	tup = ls_version_to_heaptuple(v, rel, rowid, buf, size);

	Assert(ls_in_epoch());
	ls_slot_store_owned(slot, rel, tup);
}

/* Store tup, allocated in slot->tts_mcxt, into slot, which then owns it. */
void
ls_slot_store_owned(TupleTableSlot *slot, Relation rel, HeapTuple tup)
{
	if (TTS_IS_HEAPTUPLE(slot))
		ExecStoreHeapTuple(tup, slot, true);
	else
		ExecForceStoreHeapTuple(tup, slot, true);
	slot->tts_tableOid = RelationGetRelid(rel);
	slot->tts_tid = tup->t_self;
}

/*
 * Allocate a version in the hot tier, reclaiming and then packing once
 * before giving up: NULL when it is full and may_fail, else an error.
 */
static TimestampTz ls_alloc_failed_at = 0;	/* last may_fail answer NULL */

static ls_hot_version *
ls_alloc_version(Relation rel, uint32 len, bool may_fail)
{
	ls_hot_version *v = NULL;
	ls_status	st;

#ifdef LS_ASSERTS
	/* regress ls_hold: writes with a cold path meet a full tier */
	if (may_fail && unlikely(ls_test_fail_armed == LS_FAIL_TIER_FULL))
		return NULL;
#endif
	st = ls_hot_version_alloc(ls_ctx(), len, &v);

	/*
	 * A write that can go elsewhere does not pay for reclaiming and packing
	 * again and again while the tier stays full: at most every 100 ms.
	 */
	if (st == LS_NO_SPACE && may_fail && ls_alloc_failed_at != 0 &&
		!TimestampDifferenceExceeds(ls_alloc_failed_at, GetCurrentTimestamp(), 100))
		return NULL;
	if (st == LS_NO_SPACE)
	{
		ls_hot_reclaim(ls_ctx());
		st = ls_hot_version_alloc(ls_ctx(), len, &v);
	}
	/* full: pack what may go into the cold tier, then try once more */
	if (st == LS_NO_SPACE && ls_cold_relieve())
		st = ls_hot_version_alloc(ls_ctx(), len, &v);
	if (st == LS_NO_SPACE && may_fail)
	{
		ls_alloc_failed_at = GetCurrentTimestamp();
		return NULL;
	}
	if (st != LS_OK)
		ls_report_status(st, rel, "store a row in");
	return v;
}

/* A version in this backend's memory (LS_UF_LOCAL), header zeroed. */
static ls_hot_version *
ls_local_version(uint32 len)
{
	ls_hot_version *v = palloc(offsetof(ls_hot_version, data) + len);

	memset(v, 0, offsetof(ls_hot_version, data));
	v->len = len;
	atomic_store(&v->user_flags, LS_UF_LOCAL);
	atomic_store(&v->next_rowid, LS_ROWID_INVALID);
	return v;
}

/* Free a version that was never installed, wherever it was made. */
void
ls_version_discard(ls_hot_version *v)
{
	if (atomic_load(&v->user_flags) & LS_UF_LOCAL)
		pfree(v);
	else
		ls_hot_version_free(ls_ctx(), v);
}

/*
 * A version with room for len payload bytes, made where home says: NULL
 * only for LS_VH_TIER_OR_NULL with the tier full.
 */
static ls_hot_version *
ls_version_new_in(Relation rel, uint32 len, LsVersionHome home)
{
	if (home == LS_VH_LOCAL)
		return ls_local_version(len);
	return ls_alloc_version(rel, len, home == LS_VH_TIER_OR_NULL);
}

/* The payload of a row whose heap form is tup: its length (ls_pg.h). */
uint32
ls_payload_len(HeapTuple tup)
{
	if (tup->t_len <= MINIMAL_TUPLE_OFFSET ||
		tup->t_len - MINIMAL_TUPLE_OFFSET > LS_HOT_MAX_PAYLOAD)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("row is too big: size %u, maximum size %u",
						tup->t_len, (unsigned) (LS_HOT_MAX_PAYLOAD + MINIMAL_TUPLE_OFFSET))));
	return tup->t_len - MINIMAL_TUPLE_OFFSET;
}

void
ls_payload_from_heaptuple(HeapTuple tup, char *dst, uint32 len)
{
	MinimalTuple mt = (MinimalTuple) dst;

	memcpy(dst, (char *) tup->t_data + MINIMAL_TUPLE_OFFSET, len);
	mt->t_len = len;
	mt->t_infomask &= ~HEAP_XACT_MASK;
	mt->t_infomask2 &= ~(HEAP_KEYS_UPDATED | HEAP_HOT_UPDATED | HEAP_ONLY_TUPLE);
}

/*
 * A new, uninstalled version holding tup's data as a MinimalTuple image,
 * made where home says (NULL only for LS_VH_TIER_OR_NULL with the tier
 * full).  MVCC words are left zero for the caller.
 */
ls_hot_version *
ls_version_from_heaptuple_in(Relation rel, HeapTuple tup, LsVersionHome home)
{
	uint32		len = ls_payload_len(tup);
	ls_hot_version *v = ls_version_new_in(rel, len, home);

	if (v == NULL)
		return NULL;
	ls_payload_from_heaptuple(tup, (char *) v->data, len);
	return v;
}

ls_hot_version *
ls_version_from_heaptuple(Relation rel, HeapTuple tup)
{
	return ls_version_from_heaptuple_in(rel, tup, LS_VH_TIER);
}

/*
 * A new, uninstalled version with the given payload, made where home says
 * (NULL only for LS_VH_TIER_OR_NULL with the tier full).  With src, its
 * MVCC words are src's: src must stay put meanwhile (the caller is inside
 * an epoch, or src is in this backend's memory); else they are zero.
 */
ls_hot_version *
ls_version_copy_in(Relation rel, ls_hot_version *src, uint32 len,
				   const void *payload, LsVersionHome home)
{
	ls_hot_version *v = ls_version_new_in(rel, len, home);
	uint32		flags;

	if (v == NULL)
		return NULL;
	memcpy(v->data, payload, len);
	if (src != NULL)
	{
		atomic_store(&v->xmin_word, atomic_load_explicit(&src->xmin_word, memory_order_acquire));
		atomic_store(&v->xmax_word, atomic_load_explicit(&src->xmax_word, memory_order_acquire));
		v->cmin = src->cmin;
		atomic_store(&v->cmax, atomic_load_explicit(&src->cmax, memory_order_acquire));
		atomic_store(&v->next_rowid, atomic_load_explicit(&src->next_rowid, memory_order_acquire));
		/* a cold image's layout is not the copy's, nor is src's home */
		flags = atomic_load_explicit(&src->user_flags, memory_order_acquire) &
			~(LS_UF_COLD_SLOT | LS_UF_LOCAL);
		if (home == LS_VH_LOCAL)
			flags |= LS_UF_LOCAL;
		atomic_store(&v->user_flags, flags);
	}
	return v;
}

/* ls_version_copy_in in the hot tier (an error when it is full). */
ls_hot_version *
ls_version_copy(Relation rel, ls_hot_version *src, uint32 len,
				const void *payload)
{
	return ls_version_copy_in(rel, src, len, payload, LS_VH_TIER);
}
