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

#include "ls_pg.h"

Size
ls_heaptuple_size(ls_hot_version *v)
{
	uint32		len = v->len;

	/* payload bytes never change after install, but bound them anyway */
	if (len > LS_HOT_MAX_PAYLOAD || len < SizeofMinimalTupleHeader)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("leanstore version has an invalid payload length %u", len)));
	return HEAPTUPLESIZE + MINIMAL_TUPLE_OFFSET + len;
}

/*
 * Rebuild a HeapTuple from v into buf (at least ls_heaptuple_size(v) bytes).
 */
HeapTuple
ls_version_to_heaptuple(ls_hot_version *v, Relation rel, uint64 rowid,
						char *buf, Size bufsize)
{
	HeapTuple	tup = (HeapTuple) buf;
	HeapTupleHeader hdr;
	LsVersionInfo info;
	uint32		len = v->len;

	if (HEAPTUPLESIZE + MINIMAL_TUPLE_OFFSET + (Size) len > bufsize)
		elog(ERROR, "leanstore tuple buffer too small");

	ls_version_info(v, &info);
	hdr = (HeapTupleHeader) (buf + HEAPTUPLESIZE);
	memcpy((char *) hdr + MINIMAL_TUPLE_OFFSET, v->data, len);

	tup->t_len = len + MINIMAL_TUPLE_OFFSET;
	tup->t_tableOid = RelationGetRelid(rel);
	ls_rowid_to_tid(rowid, &tup->t_self);
	tup->t_data = hdr;

	hdr->t_infomask &= ~HEAP_XACT_MASK;
	hdr->t_infomask2 &= ~(HEAP_KEYS_UPDATED | HEAP_HOT_UPDATED | HEAP_ONLY_TUPLE);
	HeapTupleHeaderSetXmin(hdr, info.xmin);
	if (info.xmin_flags & (LS_HV_XMIN_COMMITTED | LS_HV_XMIN_FROZEN))
		hdr->t_infomask |= HEAP_XMIN_COMMITTED;
	else if (info.xmin_flags & LS_HV_XMIN_ABORTED)
		hdr->t_infomask |= HEAP_XMIN_INVALID;
	HeapTupleHeaderSetXmax(hdr, ls_hv_xid(info.xmax_raw));
	if (ls_hv_xid(info.xmax_raw) == InvalidTransactionId ||
		(info.xmax_flags & LS_HV_XMAX_ABORTED))
		hdr->t_infomask |= HEAP_XMAX_INVALID;
	else
	{
		if (info.xmax_flags & LS_HV_XMAX_IS_MULTI)
			hdr->t_infomask |= HEAP_XMAX_IS_MULTI;
		if (info.xmax_flags & LS_HV_XMAX_COMMITTED)
			hdr->t_infomask |= HEAP_XMAX_COMMITTED;
		if (info.xmax_flags & LS_HV_XMAX_LOCK_ONLY)
			hdr->t_infomask |= HEAP_XMAX_LOCK_ONLY;
		if (info.xmax_flags & LS_HV_XMAX_KEYSHR_LOCK)
			hdr->t_infomask |= HEAP_XMAX_KEYSHR_LOCK;
		if (info.xmax_flags & LS_HV_XMAX_EXCL_LOCK)
			hdr->t_infomask |= HEAP_XMAX_EXCL_LOCK;
		if (info.xmax_flags & LS_HV_XMAX_KEYS_UPDATED)
			hdr->t_infomask2 |= HEAP_KEYS_UPDATED;
	}
	HeapTupleHeaderSetCmin(hdr, info.cmin);
	if ((info.xmax_flags & LS_HV_XMAX_MOVED) && info.next_rowid != LS_ROWID_INVALID &&
		!(info.user_flags & LS_UF_SPECULATIVE))
		ls_rowid_to_tid(info.next_rowid, &hdr->t_ctid);
	else
		hdr->t_ctid = tup->t_self;
	return tup;
}

/* Store v (caller inside an epoch) into slot; the slot owns the copy. */
void
ls_store_version(ls_hot_version *v, Relation rel, uint64 rowid,
				 TupleTableSlot *slot)
{
	Size		size = ls_heaptuple_size(v);
	char	   *buf = MemoryContextAlloc(slot->tts_mcxt, size);
	HeapTuple	tup = ls_version_to_heaptuple(v, rel, rowid, buf, size);

	if (TTS_IS_HEAPTUPLE(slot))
		ExecStoreHeapTuple(tup, slot, true);
	else
		ExecForceStoreHeapTuple(tup, slot, true);
	slot->tts_tableOid = RelationGetRelid(rel);
	slot->tts_tid = tup->t_self;
}

/* Allocate a version, reclaiming once before giving up. */
static ls_hot_version *
ls_alloc_version(Relation rel, uint32 len)
{
	ls_hot_version *v = NULL;
	ls_status	st;

	st = ls_hot_version_alloc(ls_ctx(), len, &v);
	if (st == LS_NO_SPACE)
	{
		ls_hot_reclaim(ls_ctx());
		st = ls_hot_version_alloc(ls_ctx(), len, &v);
	}
	if (st != LS_OK)
		ls_report_status(st, rel, "store a row in");
	return v;
}

/*
 * A new, uninstalled version holding tup's data as a MinimalTuple image.
 * MVCC words are left zero for the caller.
 */
ls_hot_version *
ls_version_from_heaptuple(Relation rel, HeapTuple tup)
{
	uint32		len;
	ls_hot_version *v;
	MinimalTuple mt;

	if (tup->t_len <= MINIMAL_TUPLE_OFFSET ||
		tup->t_len - MINIMAL_TUPLE_OFFSET > LS_HOT_MAX_PAYLOAD)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("row is too big: size %u, maximum size %u",
						tup->t_len, (unsigned) (LS_HOT_MAX_PAYLOAD + MINIMAL_TUPLE_OFFSET))));
	len = tup->t_len - MINIMAL_TUPLE_OFFSET;
	v = ls_alloc_version(rel, len);
	memcpy(v->data, (char *) tup->t_data + MINIMAL_TUPLE_OFFSET, len);
	mt = (MinimalTuple) v->data;
	mt->t_len = len;
	mt->t_infomask &= ~HEAP_XACT_MASK;
	mt->t_infomask2 &= ~(HEAP_KEYS_UPDATED | HEAP_HOT_UPDATED | HEAP_ONLY_TUPLE);
	return v;
}

/* A new, uninstalled version with the given payload (MVCC words zero). */
ls_hot_version *
ls_version_copy(Relation rel, ls_hot_version *src, uint32 len,
				const void *payload)
{
	ls_hot_version *v = ls_alloc_version(rel, len);

	memcpy(v->data, payload, len);
	if (src != NULL)
	{
		LsVersionInfo info;

		ls_version_info(src, &info);
		atomic_store(&v->xmin_word, ls_hv_word(info.xmin, info.xmin_flags));
		atomic_store(&v->xmax_word, info.xmax_raw);
		v->cmin = info.cmin;
		atomic_store(&v->cmax, info.cmax);
		atomic_store(&v->next_rowid, info.next_rowid);
		atomic_store(&v->user_flags, info.user_flags);
	}
	return v;
}
