/*
 * provider.c - second-chance eviction, batched write-back, flush_all and the
 * provider thread.
 *
 * Cooling lives in ls_frame.state (HOT -> COOL by the provider, COOL -> HOT
 * by any fix), not in the parent's swip: unswizzling needs the parent's
 * exclusive latch, marking a frame cool does not.
 *
 * Write-back invariants:
 *  - At most one write of a frame is in flight (ls_frame.writing), so an
 *    older image never lands after a newer one.
 *  - The image written is a private copy taken under a validated optimistic
 *    read (swips converted to pids by the type's checkpoint callback), with
 *    its CRC32C computed on the copy.
 *  - A frame is marked clean only under a shared latch that shows the same
 *    version as the copy: any change in between keeps it dirty.
 *  - Eviction only try-latches (parent, then child) and unswizzles only a
 *    clean, COOL frame whose owning swip still points at it.
 *  - Nobody waits for a latch while holding a write claim: freeing a page
 *    waits for its claim under the page's exclusive latch
 *    (frame_free_latched).  The provider only try-latches; flush_all takes
 *    a frame's latch before its claim and writes its batch before it waits
 *    for one.
 */
#include "bm_internal.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WB_MAX 256

typedef struct wb_batch
{
	uint32_t	n;
	uint32_t	cap;
	uint8_t    *mem;			/* cap pages, 4096-aligned */
	uint64_t	max_gsn;
	uint32_t	frames[WB_MAX];
	uint64_t	versions[WB_MAX];
	ls_pid		pids[WB_MAX];
	void	   *bufs[WB_MAX];
} wb_batch;

/* An empty batch (the per-page arrays are filled as pages are added). */
static inline void
batch_init(wb_batch *b, ls_bm *bm)
{
	b->n = 0;
	b->cap = bm->write_batch;
	b->mem = NULL;
	b->max_gsn = 0;
}

static _Thread_local uint64_t tl_rand;

static uint64_t
provider_rand(void)
{
	if (tl_rand == 0)
		tl_rand = (ls_now_ns() ^ ((uint64_t) getpid() << 32) ^ (uintptr_t) &tl_rand) | 1;
	return ls_rand_next(&tl_rand);
}

static void
release_claim(ls_frame *f)
{
	atomic_store_explicit(&f->writing, 0, memory_order_release);
}

/*
 * Copy frame idx (dirty, write claim held by us) into the batch.  `v` is a
 * latch word read while it was not exclusively held.
 */
static bool
batch_add_copy(ls_bm *bm, wb_batch *b, uint32_t idx, uint64_t v)
{
	ls_frame   *f = ls_bm_frame(bm, idx);
	ls_page    *copy;
	ls_pid		pid = f->pid;
	uint32_t	dt_id = f->dt_id;
	uint16_t	dt_type = f->dt_type;

	if (b->n >= b->cap)
		return false;
	if (b->mem == NULL)
	{
		void	   *mem;

		if (posix_memalign(&mem, 4096, (size_t) b->cap * LS_PAGE_SIZE) != 0)
			return false;
		b->mem = mem;
	}
	copy = (ls_page *) (b->mem + (size_t) b->n * LS_PAGE_SIZE);
	memcpy(copy, ls_bm_page(bm, idx), LS_PAGE_SIZE);
	if (!ls_latch_validate(&f->latch, v) || pid == LS_PID_INVALID || copy->hdr.pid != pid)
		return false;

	const ls_dt_ops *ops = bm_type_ops(dt_type);

	if (ops != NULL && ops->checkpoint != NULL)
	{
		const ls_dt_ops *iops;
		void	   *obj;

		if (!bm_lookup_dt(bm, dt_id, &iops, &obj) ||
			ops->checkpoint(bm, obj, f, copy) != LS_OK ||
			!ls_latch_validate(&f->latch, v))
			return false;
	}
	copy->hdr.dt_id = dt_id;
	bm_page_seal(bm, copy, ls_pid_block(pid));
	b->frames[b->n] = idx;
	b->versions[b->n] = v;
	b->pids[b->n] = pid;
	b->bufs[b->n] = copy;
	b->max_gsn = LS_MAX(b->max_gsn, ls_page_gsn(&copy->hdr));
	b->n++;
	return true;
}

/* Claim the write of a dirty frame and copy it (provider: never blocks). */
static bool
try_queue_write(ls_bm *bm, wb_batch *b, uint32_t idx)
{
	ls_frame   *f = ls_bm_frame(bm, idx);
	uint32_t	zero = 0;
	uint64_t	v = atomic_load_explicit(&f->latch.word, memory_order_acquire);

	if ((v & LS_LATCH_EXCLUSIVE) != 0)
		return false;
	if (!atomic_compare_exchange_strong(&f->writing, &zero, 1))
		return false;
	if (atomic_load_explicit(&f->dirty, memory_order_relaxed) == 0 ||
		!batch_add_copy(bm, b, idx, v))
	{
		release_claim(f);
		return false;
	}
	return true;
}

/* Write the batch; mark frames clean where nothing changed.  Clears b. */
static ls_status
batch_flush(ls_bm *bm, wb_batch *b)
{
	ls_status	res[WB_MAX];
	ls_status	first = LS_OK;

	if (b->n == 0)
		return LS_OK;
	if (bm->flush_log != NULL && (first = bm->flush_log(bm->flush_log_arg, b->max_gsn)) != LS_OK)
	{
		for (uint32_t i = 0; i < b->n; i++)
			release_claim(ls_bm_frame(bm, b->frames[i]));
		b->n = 0;
		return first;
	}
	bm_io_write(bm, b->n, b->pids, b->bufs, res);
	for (uint32_t i = 0; i < b->n; i++)
	{
		ls_frame   *f = ls_bm_frame(bm, b->frames[i]);

		if (res[i] == LS_OK)
		{
			atomic_fetch_add_explicit(&bm->writes, 1, memory_order_relaxed);
			if (ls_latch_try_lock_shared(&f->latch))
			{
				uint64_t	w = atomic_load_explicit(&f->latch.word, memory_order_relaxed);

				if (ls_latch_version_of(w) == ls_latch_version_of(b->versions[i]) &&
					f->pid == b->pids[i])
				{
					atomic_store_explicit(&f->dirty, 0, memory_order_relaxed);
					atomic_store_explicit(&f->written_version, b->versions[i], memory_order_relaxed);
				}
				ls_latch_unlock_shared(&f->latch);
			}
		}
		else if (first == LS_OK)
			first = res[i];
		release_claim(f);
	}
	b->n = 0;
	b->max_gsn = 0;
	return first;
}

/*
 * Evict frame idx if it is clean, COOL, unlatched and its owner lets it go.
 * Returns 1 when the frame was freed.
 */
static uint64_t
try_evict(ls_bm *bm, uint32_t idx)
{
	ls_frame   *f = ls_bm_frame(bm, idx);
	uint64_t	v = atomic_load_explicit(&f->latch.word, memory_order_acquire);
	const ls_dt_ops *ops;
	void	   *obj;
	ls_parent	par;

	if ((v & LS_LATCH_EXCLUSIVE) != 0 ||
		atomic_load_explicit(&f->state, memory_order_relaxed) != LS_FRAME_COOL ||
		atomic_load_explicit(&f->dirty, memory_order_relaxed) != 0)
		return 0;

	uint32_t	dt_id = f->dt_id;

	if (!ls_latch_validate(&f->latch, v) || !bm_lookup_dt(bm, dt_id, &ops, &obj) ||
		ops->find_parent == NULL)
		return 0;
	if (ops->find_parent(bm, obj, f, &par) != LS_OK)
		return 0;
	if (par.guard.frame != NULL)
	{
		/* the swip must lie inside the parent's page (it was read optimistically) */
		char	   *pg = (char *) ls_bm_page(bm, ls_bm_frame_index(bm, par.guard.frame));

		if ((char *) par.swip < pg || (char *) (par.swip + 1) > pg + LS_PAGE_SIZE)
		{
			ls_guard_release(&par.guard);
			return 0;
		}
	}
	if (ls_guard_upgrade_exclusive(&par.guard) != LS_OK)
	{
		ls_guard_release(&par.guard);
		return 0;
	}
	if (ls_latch_upgrade_exclusive(&f->latch, v) != LS_OK)
	{
		ls_guard_release(&par.guard);
		return 0;
	}

	bool		ok = ls_swip_load(par.swip) == ls_swip_from_frame(idx) &&
		atomic_load_explicit(&f->dirty, memory_order_relaxed) == 0 &&
		(ops->is_evictable == NULL || ops->is_evictable(bm, obj, f));

	if (ok)
	{
		uint32_t	cool = LS_FRAME_COOL;

		/* a concurrent touch (COOL -> HOT) wins: second chance */
		ok = atomic_compare_exchange_strong(&f->state, &cool, LS_FRAME_FREE);
	}
	if (ok)
	{
		ls_swip_store(par.swip, ls_swip_from_pid(f->pid));
		f->pid = LS_PID_INVALID;
	}
	ls_latch_unlock_exclusive(&f->latch);
	ls_guard_release(&par.guard);
	if (!ok)
		return 0;
	bm_frame_push_free(bm, idx);
	atomic_fetch_add_explicit(&bm->evictions, 1, memory_order_relaxed);
	return 1;
}

static uint64_t
flush_and_evict(ls_bm *bm, wb_batch *b)
{
	uint32_t	n = b->n;
	uint32_t	frames[WB_MAX];
	uint64_t	freed = 0;

	memcpy(frames, b->frames, n * sizeof(uint32_t));
	(void) batch_flush(bm, b);
	for (uint32_t i = 0; i < n; i++)
		freed += try_evict(bm, frames[i]);
	return freed;
}

uint64_t
ls_bm_release_loaded(ls_bm *bm, uint32_t idx, ls_pid pid)
{
	ls_frame   *f;
	uint32_t	hot = LS_FRAME_HOT;

	if (idx >= ls_bm_n_frames(bm))
		return 0;
	f = ls_bm_frame(bm, idx);
	/* evicted and reused meanwhile: someone else's page now */
	if (f->pid != pid)
		return 0;
	if (!atomic_compare_exchange_strong(&f->state, &hot, LS_FRAME_COOL) &&
		hot != LS_FRAME_COOL)
		return 0;
	return try_evict(bm, idx);
}

uint64_t
ls_bm_provider_round(ls_bm *bm)
{
	uint64_t	n = ls_bm_n_frames(bm);
	uint64_t	budget = LS_MAX(64, LS_MIN(n, 1024));
	uint64_t	freed = 0;
	wb_batch	b;

	batch_init(&b, bm);
	for (uint64_t i = 0; i < budget; i++)
	{
		if (atomic_load_explicit(&bm->free_count, memory_order_relaxed) >= bm->free_target)
			break;

		uint32_t	idx = (uint32_t) (provider_rand() % n);
		ls_frame   *f = ls_bm_frame(bm, idx);
		uint32_t	st = atomic_load_explicit(&f->state, memory_order_relaxed);

		if (st == LS_FRAME_HOT)
			atomic_compare_exchange_strong(&f->state, &st, LS_FRAME_COOL);
		else if (st == LS_FRAME_LOADING)
			freed += bm_iof_reclaim_frame(bm, idx, false);
		else if (st == LS_FRAME_COOL)
		{
			if (atomic_load_explicit(&f->dirty, memory_order_relaxed) == 0)
				freed += try_evict(bm, idx);
			else if (try_queue_write(bm, &b, idx) && b.n == b.cap)
				freed += flush_and_evict(bm, &b);
		}
	}
	freed += flush_and_evict(bm, &b);
	free(b.mem);
	return freed;
}

ls_status
ls_bm_flush_all(ls_bm *bm)
{
	uint64_t	n = ls_bm_n_frames(bm);
	ls_status	first = LS_OK;
	ls_status	st;
	wb_batch	b;

	batch_init(&b, bm);
	for (uint64_t i = 0; i < n; i++)
	{
		ls_frame   *f = ls_bm_frame(bm, (uint32_t) i);
		uint32_t	zero = 0;

		if (atomic_load_explicit(&f->dirty, memory_order_relaxed) == 0)
			continue;

		/*
		 * The latch first, and never waited for while holding write claims
		 * (ours on the batch's frames, or on this one): its holder may be
		 * freeing one of those pages (a B-tree merge), and
		 * frame_free_latched waits for the claim under its exclusive latch.
		 * Checkpoints deadlocked with VACUUM that way.
		 */
		if (!ls_latch_try_lock_shared(&f->latch))
		{
			if ((st = batch_flush(bm, &b)) != LS_OK && first == LS_OK)
				first = st;
			ls_latch_lock_shared(&f->latch);
		}
		/* a provider's write of this frame: it never waits for a latch */
		while (!atomic_compare_exchange_weak(&f->writing, &zero, 1))
		{
			zero = 0;
			sched_yield();
		}

		uint32_t	state = atomic_load_explicit(&f->state, memory_order_relaxed);
		uint64_t	v = atomic_load_explicit(&f->latch.word, memory_order_relaxed);
		bool		queued = false;

		if (atomic_load_explicit(&f->dirty, memory_order_relaxed) != 0 &&
			(state == LS_FRAME_HOT || state == LS_FRAME_COOL))
			queued = batch_add_copy(bm, &b, (uint32_t) i, v);
		ls_latch_unlock_shared(&f->latch);
		if (!queued)
		{
			release_claim(f);
			continue;
		}
		if (b.n == b.cap && (st = batch_flush(bm, &b)) != LS_OK && first == LS_OK)
			first = st;
	}
	if ((st = batch_flush(bm, &b)) != LS_OK && first == LS_OK)
		first = st;
	free(b.mem);
	return first;
}

uint64_t
ls_bm_evict_all(ls_bm *bm)
{
	uint64_t	n = ls_bm_n_frames(bm);
	uint64_t	freed = 0;
	wb_batch	b;

	batch_init(&b, bm);

	/*
	 * Children first: an inner node is evictable only once its children are
	 * out, so repeat while a pass makes progress.  Only try-latches and
	 * optimistic copies: frames latched by anybody (the caller included)
	 * are skipped, never waited for.
	 */
	for (;;)
	{
		uint64_t	pass = 0;

		for (uint64_t i = 0; i < n; i++)
		{
			ls_frame   *f = ls_bm_frame(bm, (uint32_t) i);
			uint32_t	st = LS_FRAME_HOT;

			atomic_compare_exchange_strong(&f->state, &st, LS_FRAME_COOL);
		}
		for (uint64_t i = 0; i < n; i++)
		{
			ls_frame   *f = ls_bm_frame(bm, (uint32_t) i);
			uint32_t	st = atomic_load_explicit(&f->state, memory_order_relaxed);

			if (st == LS_FRAME_LOADING)
				pass += bm_iof_reclaim_frame(bm, (uint32_t) i, true);
			else if (st != LS_FRAME_COOL)
				continue;
			else if (atomic_load_explicit(&f->dirty, memory_order_relaxed) == 0)
				pass += try_evict(bm, (uint32_t) i);
			else if (try_queue_write(bm, &b, (uint32_t) i) && b.n == b.cap)
				pass += flush_and_evict(bm, &b);
		}
		pass += flush_and_evict(bm, &b);
		freed += pass;
		if (pass == 0)
			break;
	}
	free(b.mem);
	return freed;
}

/* ------------------------------------------------------------------------
 * Provider thread
 * ------------------------------------------------------------------------ */
static void *
provider_main(void *arg)
{
	ls_bm	   *bm = arg;

	while (!bm_io_provider_should_stop(bm))
	{
		uint32_t	seen = atomic_load_explicit(&bm->provider_kick, memory_order_acquire);

		if (atomic_load_explicit(&bm->free_count, memory_order_relaxed) < bm->free_target)
		{
			/* nothing evictable right now: do not spin */
			if (ls_bm_provider_round(bm) == 0)
				ls_futex_wait(&bm->provider_kick, seen, 1000 * 1000);
		}
		else
			bm_provider_sleep(bm, seen, 10 * 1000 * 1000);
	}
	ls_bm_publish_hits(bm);
	return NULL;
}

ls_status
ls_bm_provider_start_thread(ls_bm *bm)
{
	return bm_io_start_provider(bm, provider_main);
}

void
ls_bm_provider_stop(ls_bm *bm)
{
	bm_io_stop_provider(bm);
}
