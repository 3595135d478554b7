/*
 * fix.c - resolving swips: the out-of-line part of ls_bm_fix, page loads and
 * the in-flight I/O table.
 *
 * In-flight table invariants (each partition under its mutex):
 *  - At most one slot per pid.  A slot exists from the moment a process
 *    decides to read a page until the page is swizzled into its owning swip
 *    (or discarded); while it exists nobody else reads that pid.
 *  - A slot is created only after the caller re-validated, under the
 *    partition mutex, that the parent still holds the pid in the swip.  A
 *    swizzle changes the swip and removes the slot under that same mutex, so
 *    a process that read the pid before a swizzle either finds the slot or
 *    fails the validation: a page is never loaded twice.
 *  - A READY slot's frame is loaded, clean, in state LOADING and unlatched
 *    (the loader releases the frame latch before publishing READY), so
 *    whoever holds the mutex may take it over or reclaim it.
 *  - A pid freed while READING is marked stale; the loader discards the
 *    frame.  A pid freed while READY is purged at once.
 */
#include "bm_internal.h"

#include <sched.h>

ls_iof_part *
bm_iof_part(ls_bm *bm, ls_pid pid)
{
	uint64_t	h = pid * 0x9E3779B97F4A7C15ULL;

	return &bm->iof[h >> 58];	/* top 6 bits: LS_IOF_PARTS == 64 */
}

_Static_assert(LS_IOF_PARTS == 64, "bm_iof_part uses the top 6 hash bits");

static ls_iof_slot *
iof_find(ls_iof_part *part, ls_pid pid)
{
	for (int i = 0; i < LS_IOF_SLOTS; i++)
		if (part->slots[i].state != LS_IOF_EMPTY && part->slots[i].pid == pid)
			return &part->slots[i];
	return NULL;
}

/* Caller holds the partition mutex.  Wakes anybody waiting on the slot. */
static void
iof_set_state(ls_iof_slot *s, uint32_t state)
{
	s->state = state;
	atomic_fetch_add_explicit(&s->seq, 1, memory_order_release);
	ls_futex_wake(&s->seq, INT32_MAX);
}

/*
 * Give a loaded frame that nobody may use back to the free list.  The latch
 * round trip moves the version: optimistic readers that raced on it fail.
 */
static void
frame_discard(ls_bm *bm, uint32_t idx)
{
	ls_frame   *f = ls_bm_frame(bm, idx);

	ls_latch_lock_exclusive(&f->latch);
	atomic_store_explicit(&f->state, LS_FRAME_FREE, memory_order_relaxed);
	f->pid = LS_PID_INVALID;
	ls_latch_unlock_exclusive(&f->latch);
	bm_frame_push_free(bm, idx);
}

/* Give a READY slot's frame back to the free list (mutex held). */
static void
iof_drop_ready(ls_bm *bm, ls_iof_slot *s)
{
	iof_set_state(s, LS_IOF_EMPTY);
	frame_discard(bm, s->frame);
}

void
bm_iof_purge_pid(ls_bm *bm, ls_pid pid)
{
	ls_iof_part *part = bm_iof_part(bm, pid);

	ls_mutex_lock(&part->mutex);
	ls_iof_slot *s = iof_find(part, pid);

	if (s != NULL && s->state == LS_IOF_READY)
		iof_drop_ready(bm, s);
	else if (s != NULL)
		s->stale = 1;
	ls_mutex_unlock(&part->mutex);
}

/*
 * Provider hook for a frame in state LOADING: if it is a READY slot nobody
 * swizzled since the provider's previous visit (or at once with force), give
 * it back.  Never blocks.
 */
bool
bm_iof_reclaim_frame(ls_bm *bm, uint32_t idx, bool force)
{
	ls_pid		pid = ls_bm_frame(bm, idx)->pid;
	ls_iof_part *part;
	bool		freed = false;

	if (pid == LS_PID_INVALID)
		return false;
	part = bm_iof_part(bm, pid);
	if (!ls_mutex_trylock(&part->mutex))
		return false;
	ls_iof_slot *s = iof_find(part, pid);

	if (s != NULL && s->state == LS_IOF_READY && s->frame == idx)
	{
		if (s->cool || force)
		{
			iof_drop_ready(bm, s);
			freed = true;
		}
		else
			s->cool = 1;
	}
	ls_mutex_unlock(&part->mutex);
	return freed;
}

/* Free slot in the partition, reclaiming a READY one if all are taken. */
static ls_iof_slot *
iof_free_slot(ls_bm *bm, ls_iof_part *part)
{
	ls_iof_slot *ready = NULL;

	for (int i = 0; i < LS_IOF_SLOTS; i++)
	{
		if (part->slots[i].state == LS_IOF_EMPTY)
			return &part->slots[i];
		if (part->slots[i].state == LS_IOF_READY && ready == NULL)
			ready = &part->slots[i];
	}
	if (ready != NULL)
	{
		iof_drop_ready(bm, ready);
		return ready;
	}
	return NULL;
}

/*
 * Swizzle a READY slot into `swip` (partition mutex held; released here).
 * The parent is taken exclusively without blocking, then returned to the
 * caller's mode; an optimistic parent's guard gets the version the parent
 * has right after our change, so the caller's operation continues.
 */
static ls_status
iof_swizzle(ls_bm *bm, ls_iof_part *part, ls_iof_slot *s, ls_guard *parent, ls_swip *swip)
{
	ls_guard_mode mode = parent->mode;
	uint64_t	w;

	if (ls_guard_validate(parent) != LS_OK || ls_swip_load(swip) != ls_swip_from_pid(s->pid))
		goto restart;
	if (mode == LS_GUARD_OPTIMISTIC)
	{
		if (ls_latch_upgrade_exclusive(parent->latch, parent->version) != LS_OK)
			goto restart;
	}
	else if (mode == LS_GUARD_SHARED)
	{
		if (!ls_latch_try_upgrade_sole_shared(parent->latch))
			goto restart;
	}

	ls_frame   *f = ls_bm_frame(bm, s->frame);

	atomic_store_explicit(&f->state, LS_FRAME_HOT, memory_order_release);
	ls_swip_store(swip, ls_swip_from_frame(s->frame));
	iof_set_state(s, LS_IOF_EMPTY);
	ls_mutex_unlock(&part->mutex);

	if (mode == LS_GUARD_OPTIMISTIC)
	{
		w = atomic_load_explicit(&parent->latch->word, memory_order_relaxed);
		ls_latch_unlock_exclusive(parent->latch);
		/* exactly our change happened in between: continue from there */
		parent->version = ((w >> 32) + 1) << 32;
	}
	else if (mode == LS_GUARD_SHARED)
		ls_latch_downgrade_exclusive(parent->latch);
	return LS_OK;

restart:
	ls_mutex_unlock(&part->mutex);
	return LS_RESTART;
}

/*
 * Read pid into frame idx (latched exclusively by us, state LOADING) and
 * publish the result in slot s.  Returns with the partition mutex held on
 * LS_OK (slot READY), released otherwise.
 */
static ls_status
load_into(ls_bm *bm, ls_iof_part *part, ls_iof_slot *s, uint32_t idx, ls_pid pid)
{
	ls_frame   *f = ls_bm_frame(bm, idx);
	ls_page    *p = ls_bm_page(bm, idx);
	ls_status	st = bm_io_read(bm, pid, p);

	atomic_fetch_add_explicit(&bm->reads, 1, memory_order_relaxed);
	if (st == LS_NOT_FOUND)
		st = LS_CORRUPT;		/* a swip named a block the file lacks */
	if (st == LS_OK)
		st = bm_page_check(bm, p, pid);
	if (st == LS_OK)
	{
		const ls_dt_ops *ops = bm_type_ops(p->hdr.dt_type);
		const ls_dt_ops *iops;
		void	   *obj;

		if (!bm_lookup_dt(bm, ls_pid_dt(pid), &iops, &obj) || iops != ops)
			st = LS_CORRUPT;
		else if (ops->loaded != NULL)
			st = ops->loaded(bm, obj, pid, p);
	}
	if (st == LS_OK)
	{
		f->dt_id = ls_pid_dt(pid);
		f->dt_type = p->hdr.dt_type;
		atomic_store_explicit(&f->dirty, 0, memory_order_relaxed);
	}
	else if (st != LS_IO_ERROR)
		bm_set_error(pid, 0);
	ls_latch_unlock_exclusive(&f->latch);
	atomic_store_explicit(&f->written_version,
						  atomic_load_explicit(&f->latch.word, memory_order_relaxed),
						  memory_order_relaxed);

	ls_mutex_lock(&part->mutex);
	if (st == LS_OK && !s->stale)
	{
		s->cool = 0;
		iof_set_state(s, LS_IOF_READY);
		return LS_OK;
	}
	/* failed read or pid freed meanwhile: nobody may use this frame */
	iof_set_state(s, LS_IOF_EMPTY);
	ls_mutex_unlock(&part->mutex);
	frame_discard(bm, idx);
	return st == LS_OK ? LS_RESTART : st;
}

/*
 * Make the page behind a pid swip resident and swizzled.  LS_OK means the
 * swip is now swizzled (parent guard still valid); the caller re-reads it.
 */
static ls_status
resolve_pid(ls_bm *bm, ls_guard *parent, ls_swip *swip, ls_pid pid)
{
	ls_iof_part *part = bm_iof_part(bm, pid);
	uint32_t	idx = UINT32_MAX;
	ls_status	st;

	for (;;)
	{
		ls_mutex_lock(&part->mutex);
		ls_iof_slot *s = iof_find(part, pid);

		if (s != NULL && s->state == LS_IOF_READY && !s->stale)
		{
			if (idx != UINT32_MAX)
				bm_frame_push_free(bm, idx);
			return iof_swizzle(bm, part, s, parent, swip);
		}
		if (s != NULL)
		{
			/* somebody else is reading it: wait for the slot to change */
			uint32_t	seq = atomic_load_explicit(&s->seq, memory_order_acquire);

			ls_mutex_unlock(&part->mutex);
			ls_futex_wait(&s->seq, seq, 10 * 1000 * 1000);
			if (ls_guard_validate(parent) != LS_OK)
			{
				if (idx != UINT32_MAX)
					bm_frame_push_free(bm, idx);
				return LS_RESTART;
			}
			continue;
		}
		if (idx == UINT32_MAX)
		{
			/* never evict with a partition mutex held: get a frame first */
			ls_mutex_unlock(&part->mutex);
			st = bm_get_free_frame(bm, &idx);
			if (st != LS_OK)
				return st;
			continue;
		}
		/* see the header: validate under the mutex before claiming the pid */
		if (ls_guard_validate(parent) != LS_OK || ls_swip_load(swip) != ls_swip_from_pid(pid))
			break;
		s = iof_free_slot(bm, part);
		if (s == NULL)
			break;

		ls_frame   *f = ls_bm_frame(bm, idx);

		/* the frame is free and unreachable; a provider may try-latch it */
		ls_latch_lock_exclusive(&f->latch);
		f->pid = pid;
		atomic_store_explicit(&f->state, LS_FRAME_LOADING, memory_order_relaxed);
		s->pid = pid;
		s->frame = idx;
		s->stale = 0;
		s->cool = 0;
		iof_set_state(s, LS_IOF_READING);
		ls_mutex_unlock(&part->mutex);
		atomic_fetch_add_explicit(&bm->misses, 1, memory_order_relaxed);
		ls_bm_tl_loads++;

		st = load_into(bm, part, s, idx, pid);
		if (st != LS_OK)
			return st;
		return iof_swizzle(bm, part, s, parent, swip);
	}
	ls_mutex_unlock(&part->mutex);
	bm_frame_push_free(bm, idx);
	sched_yield();
	return LS_RESTART;
}

/* Latch a resident child in a blocking mode, then re-check the parent. */
static ls_status
fix_resident(ls_bm *bm, ls_guard *parent, uint32_t idx, ls_guard_mode mode, ls_guard *child)
{
	ls_frame   *f = ls_bm_frame(bm, idx);
	ls_status	st = bm_guard_take(child, f, &f->latch, mode);

	if (st != LS_OK)
		return st;
	if (ls_guard_validate(parent) != LS_OK)
	{
		ls_guard_release(child);
		return LS_RESTART;
	}
	uint32_t	cool = LS_FRAME_COOL;

	atomic_compare_exchange_strong(&f->state, &cool, LS_FRAME_HOT);
	if ((++ls_bm_tl_hits & 1023) == 0)
		ls_bm_publish_hits(bm);
	return LS_OK;
}

ls_status
ls_bm_fix_slow(ls_bm *bm, ls_guard *parent, ls_swip *swip, ls_guard_mode mode, ls_guard *child)
{
	child->mode = LS_GUARD_NONE;
	if (mode == LS_GUARD_NONE || parent->mode == LS_GUARD_NONE)
		return LS_INVALID;
	for (;;)
	{
		uint64_t	raw = ls_swip_load(swip);

		/*
		 * Validate before acting on raw: it may be torn, and we may block on
		 * the frame it names (never block on a frame we were not sent to).
		 */
		if (ls_guard_validate(parent) != LS_OK)
			return LS_RESTART;
		if (ls_swip_is_swizzled(raw))
		{
			if (ls_swip_frame(raw) >= ls_bm_n_frames(bm))
				return LS_CORRUPT;
			return fix_resident(bm, parent, ls_swip_frame(raw), mode, child);
		}
		if (ls_pid_dt(raw) >= LS_MAX_DT ||
			ls_pid_block(raw) >= ls_bm_dt_blocks(bm, ls_pid_dt(raw)))
		{
			bm_set_error(raw, 0);
			return LS_CORRUPT;
		}

		ls_status	st = resolve_pid(bm, parent, swip, ls_swip_pid(raw));

		if (st != LS_OK)
			return st;
		/* swizzled now: take the resident path on the next turn */
	}
}
