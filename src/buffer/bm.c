/*
 * bm.c - buffer pool layout, life cycle, frame and page-id allocation, guards,
 * the data-structure registry and statistics.
 *
 * Region layout (offsets from the 64-aligned pool header):
 *   [struct ls_bm][ls_frame x n][ls_pid x freepid_cap][pad to 4096][pages x n]
 */
#include "bm_internal.h"

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <time.h>

_Thread_local uint64_t ls_bm_tl_hits;
static _Thread_local uint64_t tl_hits_published;
static _Thread_local uint64_t tl_restarts;
static _Thread_local ls_pid tl_error_pid = LS_PID_INVALID;
static _Thread_local int tl_error_errno;

/* Type ops: per process (function pointers differ between binaries). */
static const ls_dt_ops *type_ops[LS_MAX_DT_TYPES];

#define LS_BM_MAX_FRAMES	(1ULL << 31)

static uint64_t
freepid_cap_for(uint64_t n_frames)
{
	return LS_MAX(4096, 4 * n_frames);
}

static uint64_t
layout_bytes_before_pages(uint64_t n_frames)
{
	uint64_t	off = LS_ALIGN_UP(sizeof(ls_bm), LS_CACHELINE);

	off += n_frames * sizeof(ls_frame);
	off += freepid_cap_for(n_frames) * sizeof(ls_pid);
	return off;
}

size_t
ls_bm_region_size(uint64_t n_frames)
{
	/* slack: 64 to align the header, 4096 to align the page array */
	return (size_t) (LS_CACHELINE + layout_bytes_before_pages(n_frames) + 4096 +
					 n_frames * LS_PAGE_SIZE);
}

static ls_pid *
freepid_array(ls_bm *bm)
{
	return (ls_pid *) ((char *) bm + bm->freepid_off);
}

ls_status
ls_bm_init(void *region, size_t region_size, const ls_bm_config *cfg, ls_bm **out)
{
	uint64_t	n = cfg->n_frames;
	uintptr_t	base;
	ls_bm	   *bm;
	uint64_t	file_pages = 0;
	ls_status	st;

	*out = NULL;
	if (n < 2 || n >= LS_BM_MAX_FRAMES || cfg->data_path == NULL ||
		strlen(cfg->data_path) >= LS_BM_PATH_MAX || cfg->free_target_pct > 90)
		return LS_INVALID;
	if (region_size < ls_bm_region_size(n))
		return LS_INVALID;

	base = LS_ALIGN_UP((uintptr_t) region, LS_CACHELINE);
	bm = (ls_bm *) base;
	memset(bm, 0, sizeof(*bm));
	bm->layout.n_frames = n;
	bm->layout.frames_off = LS_ALIGN_UP(sizeof(ls_bm), LS_CACHELINE);
	bm->freepid_off = bm->layout.frames_off + n * sizeof(ls_frame);
	bm->freepid_cap = freepid_cap_for(n);
	bm->layout.pages_off = LS_ALIGN_UP(base + layout_bytes_before_pages(n), 4096) - base;
	bm->magic = LS_BM_MAGIC;
	bm->free_target = LS_MAX(1, n * (cfg->free_target_pct ? cfg->free_target_pct : 5) / 100);
	bm->write_batch = cfg->write_batch ? LS_MIN(cfg->write_batch, 256) : 64;
	bm->use_direct_io = cfg->use_direct_io;
	bm->flush_log = cfg->flush_log;
	bm->flush_log_arg = cfg->flush_log_arg;
	strcpy(bm->data_path, cfg->data_path);
	ls_mutex_init(&bm->free_mutex);
	ls_mutex_init(&bm->pid_mutex);
	ls_mutex_init(&bm->dt_mutex);
	for (int i = 0; i < LS_IOF_PARTS; i++)
		ls_mutex_init(&bm->iof[i].mutex);

	/* all frames free; push in reverse so low indexes are handed out first */
	bm->free_head = UINT32_MAX;
	for (uint64_t i = n; i-- > 0;)
	{
		ls_frame   *f = ls_bm_frame(bm, (uint32_t) i);

		memset(f, 0, sizeof(*f));
		ls_latch_init(&f->latch);
		f->pid = LS_PID_INVALID;
		f->next_free = bm->free_head;
		bm->free_head = (uint32_t) i;
	}
	atomic_store(&bm->free_count, n);

	st = bm_io_open(bm, cfg->truncate, &file_pages);
	if (st != LS_OK)
		return st;
	atomic_store(&bm->next_pid, file_pages);
	*out = bm;
	return LS_OK;
}

void
ls_bm_process_detach(ls_bm *bm)
{
	ls_bm_publish_hits(bm);
	bm_io_detach(bm);
}

/* ------------------------------------------------------------------------
 * Free frames
 * ------------------------------------------------------------------------ */

/* The frame must be FREE, unlatched and unreachable (no swip, no I/O slot). */
void
bm_frame_push_free(ls_bm *bm, uint32_t idx)
{
	ls_frame   *f = ls_bm_frame(bm, idx);

	ls_mutex_lock(&bm->free_mutex);
	f->next_free = bm->free_head;
	bm->free_head = idx;
	atomic_fetch_add_explicit(&bm->free_count, 1, memory_order_relaxed);
	ls_mutex_unlock(&bm->free_mutex);
}

static bool
frame_pop_free(ls_bm *bm, uint32_t *idx)
{
	bool		ok = false;

	ls_mutex_lock(&bm->free_mutex);
	if (bm->free_head != UINT32_MAX)
	{
		*idx = bm->free_head;
		bm->free_head = ls_bm_frame(bm, *idx)->next_free;
		atomic_fetch_sub_explicit(&bm->free_count, 1, memory_order_relaxed);
		ok = true;
	}
	ls_mutex_unlock(&bm->free_mutex);
	return ok;
}

void
bm_kick_provider(ls_bm *bm)
{
	if (atomic_load_explicit(&bm->provider_sleepers, memory_order_relaxed) == 0)
		return;
	atomic_fetch_add_explicit(&bm->provider_kick, 1, memory_order_release);
	ls_futex_wake(&bm->provider_kick, INT32_MAX);
}

/*
 * Provider side: sleep until kicked (kick word moved past `seen`) or timeout.
 * The sleeper count is raised before the word is compared by the kernel; a
 * kicker that saw no sleeper did not move the word, so the provider may
 * oversleep by at most timeout_ns (it polls the free count on wake-up).
 */
void
bm_provider_sleep(ls_bm *bm, uint32_t seen, uint64_t timeout_ns)
{
	atomic_fetch_add_explicit(&bm->provider_sleepers, 1, memory_order_seq_cst);
	if (atomic_load_explicit(&bm->free_count, memory_order_seq_cst) >= bm->free_target)
		ls_futex_wait(&bm->provider_kick, seen, timeout_ns);
	atomic_fetch_sub_explicit(&bm->provider_sleepers, 1, memory_order_relaxed);
}

/*
 * A free frame for a new or loaded page.  When none is left, run provider
 * rounds inline: they only try-latch, so this is safe while the caller holds
 * latches.  A round can come back empty because of races (other processes
 * moving the parents we try to latch) or because the process holding the
 * latches is not running right now: on a loaded machine a latch holder can
 * be descheduled for tens of milliseconds.  So LS_NO_SPACE is returned only
 * after rounds kept freeing nothing for two seconds (everything latched, or
 * pages that cannot leave memory); after the first empty rounds the caller
 * sleeps between rounds instead of spinning against the latch holders.
 */
#define NO_SPACE_MIN_ROUNDS	16
#define NO_SPACE_MIN_NS		(2000ULL * 1000 * 1000)
#define NO_SPACE_NAP_NS		(1000ULL * 1000)

static void
nap(uint64_t ns)
{
	struct timespec ts = {.tv_sec = (time_t) (ns / 1000000000ULL),.tv_nsec = (long) (ns % 1000000000ULL)};

	nanosleep(&ts, NULL);
}

ls_status
bm_get_free_frame(ls_bm *bm, uint32_t *idx)
{
	int			empty_rounds = 0;
	uint64_t	since = 0;

	for (;;)
	{
		if (frame_pop_free(bm, idx))
		{
			if (atomic_load_explicit(&bm->free_count, memory_order_relaxed) < bm->free_target)
				bm_kick_provider(bm);
			return LS_OK;
		}
		bm_kick_provider(bm);
		/* a HOT frame needs two visits (cool, then evict): allow several */
		if (ls_bm_provider_round(bm) != 0)
		{
			empty_rounds = 0;
			continue;
		}
		if (empty_rounds++ == 0)
			since = ls_now_ns();
		else if (empty_rounds < NO_SPACE_MIN_ROUNDS)
			sched_yield();
		else if (ls_now_ns() - since >= NO_SPACE_MIN_NS)
			return frame_pop_free(bm, idx) ? LS_OK : LS_NO_SPACE;
		else
			nap(NO_SPACE_NAP_NS);
	}
}

/* ------------------------------------------------------------------------
 * Page ids
 * ------------------------------------------------------------------------ */
static ls_pid
pid_alloc(ls_bm *bm)
{
	ls_pid		pid;

	ls_mutex_lock(&bm->pid_mutex);
	uint64_t	n = atomic_load_explicit(&bm->freepid_n, memory_order_relaxed);

	if (n > 0)
	{
		pid = freepid_array(bm)[n - 1];
		atomic_store_explicit(&bm->freepid_n, n - 1, memory_order_relaxed);
	}
	else
		pid = atomic_fetch_add_explicit(&bm->next_pid, 1, memory_order_relaxed);
	ls_mutex_unlock(&bm->pid_mutex);
	return pid;
}

static void
pid_release(ls_bm *bm, ls_pid pid)
{
	/* a page being read for this pid must not be swizzled later */
	bm_iof_purge_pid(bm, pid);
	ls_mutex_lock(&bm->pid_mutex);
	uint64_t	n = atomic_load_explicit(&bm->freepid_n, memory_order_relaxed);

	if (n < bm->freepid_cap)
	{
		freepid_array(bm)[n] = pid;
		atomic_store_explicit(&bm->freepid_n, n + 1, memory_order_relaxed);
	}
	else
		atomic_fetch_add_explicit(&bm->leaked_pids, 1, memory_order_relaxed);
	ls_mutex_unlock(&bm->pid_mutex);
}

ls_status
ls_bm_alloc_page(ls_bm *bm, uint32_t dt_id, uint16_t dt_type, ls_guard *out)
{
	uint32_t	idx;
	ls_status	st;

	out->mode = LS_GUARD_NONE;
	if (dt_type >= LS_MAX_DT_TYPES)
		return LS_INVALID;
	st = bm_get_free_frame(bm, &idx);
	if (st != LS_OK)
		return st;

	ls_frame   *f = ls_bm_frame(bm, idx);
	ls_page    *p = ls_bm_page(bm, idx);

	/* free frames are unreachable, but a provider may try-latch it briefly */
	ls_latch_lock_exclusive(&f->latch);
	f->pid = pid_alloc(bm);
	f->dt_id = dt_id;
	f->dt_type = dt_type;
	atomic_store_explicit(&f->written_version, 0, memory_order_relaxed);
	atomic_store_explicit(&f->dirty, 1, memory_order_relaxed);
	memset(p, 0, LS_PAGE_SIZE);
	p->hdr.pid = f->pid;
	p->hdr.dt_id = dt_id;
	p->hdr.dt_type = dt_type;
	atomic_store_explicit(&f->state, LS_FRAME_HOT, memory_order_release);

	out->frame = f;
	out->latch = &f->latch;
	out->version = atomic_load_explicit(&f->latch.word, memory_order_relaxed);
	out->mode = LS_GUARD_EXCLUSIVE;
	return LS_OK;
}

void
ls_bm_free_page(ls_bm *bm, ls_guard *g)
{
	ls_frame   *f = g->frame;
	uint32_t	idx = ls_bm_frame_index(bm, f);
	ls_pid		pid = f->pid;

	/*
	 * A write-back of this frame may still be in flight: wait for it before
	 * the pid can be reused, or the old image could land on top of the new
	 * page's.  The writer never blocks on our latch (it only try-latches).
	 */
	while (atomic_load_explicit(&f->writing, memory_order_acquire) != 0)
		sched_yield();
	atomic_store_explicit(&f->dirty, 0, memory_order_relaxed);
	atomic_store_explicit(&f->state, LS_FRAME_FREE, memory_order_relaxed);
	f->pid = LS_PID_INVALID;
	ls_latch_unlock_exclusive(&f->latch);
	g->mode = LS_GUARD_NONE;
	bm_frame_push_free(bm, idx);
	pid_release(bm, pid);
}

void
ls_bm_free_pid(ls_bm *bm, ls_pid pid)
{
	pid_release(bm, pid);
}

ls_pid
ls_bm_swip_to_pid(ls_bm *bm, uint64_t raw)
{
	if (!ls_swip_is_swizzled(raw))
		return ls_swip_pid(raw);
	if (ls_swip_frame(raw) >= ls_bm_n_frames(bm))
		return LS_PID_INVALID;
	return ls_bm_frame(bm, ls_swip_frame(raw))->pid;
}

/* ------------------------------------------------------------------------
 * Page checksums
 * ------------------------------------------------------------------------ */
static uint32_t
page_crc(const ls_page *p)
{
	static const uint8_t zero[sizeof(p->hdr.checksum)];
	uint32_t	crc = ls_crc32c(0, zero, sizeof(zero));

	return ls_crc32c(crc, (const uint8_t *) p + sizeof(p->hdr.checksum),
					 LS_PAGE_SIZE - sizeof(p->hdr.checksum));
}

void
bm_page_seal(ls_page *p)
{
	p->hdr.checksum = page_crc(p);
}

ls_status
bm_page_check(const ls_page *p, ls_pid pid)
{
	if (p->hdr.checksum != page_crc(p))
		return LS_CHECKSUM;
	if (p->hdr.pid != pid || p->hdr.dt_type >= LS_MAX_DT_TYPES)
		return LS_CORRUPT;
	return LS_OK;
}

/* ------------------------------------------------------------------------
 * Guards
 * ------------------------------------------------------------------------ */
ls_status
bm_guard_take(ls_guard *out, ls_frame *frame, ls_latch *latch, ls_guard_mode mode)
{
	out->frame = frame;
	out->latch = latch;
	out->mode = LS_GUARD_NONE;
	switch (mode)
	{
		case LS_GUARD_OPTIMISTIC:
			if (ls_latch_optimistic(latch, &out->version) != LS_OK)
				return LS_RESTART;
			break;
		case LS_GUARD_SHARED:
			ls_latch_lock_shared(latch);
			break;
		case LS_GUARD_EXCLUSIVE:
			ls_latch_lock_exclusive(latch);
			break;
		case LS_GUARD_NONE:
			return LS_INVALID;
	}
	if (mode != LS_GUARD_OPTIMISTIC)
		out->version = atomic_load_explicit(&latch->word, memory_order_relaxed);
	out->mode = mode;
	return LS_OK;
}

ls_status
ls_guard_meta(ls_latch *latch, ls_guard_mode mode, ls_guard *out)
{
	return bm_guard_take(out, NULL, latch, mode);
}

ls_status
ls_guard_upgrade_exclusive(ls_guard *g)
{
	switch (g->mode)
	{
		case LS_GUARD_EXCLUSIVE:
			return LS_OK;
		case LS_GUARD_OPTIMISTIC:
			if (ls_latch_upgrade_exclusive(g->latch, g->version) != LS_OK)
				return LS_RESTART;
			break;
		case LS_GUARD_SHARED:
			if (!ls_latch_try_upgrade_sole_shared(g->latch))
				return LS_RESTART;
			break;
		case LS_GUARD_NONE:
			return LS_RESTART;
	}
	g->mode = LS_GUARD_EXCLUSIVE;
	return LS_OK;
}

ls_status
ls_guard_upgrade_shared(ls_guard *g)
{
	switch (g->mode)
	{
		case LS_GUARD_SHARED:
		case LS_GUARD_EXCLUSIVE:
			return LS_OK;
		case LS_GUARD_OPTIMISTIC:
			if (ls_latch_upgrade_shared(g->latch, g->version) != LS_OK)
				return LS_RESTART;
			g->mode = LS_GUARD_SHARED;
			return LS_OK;
		case LS_GUARD_NONE:
			break;
	}
	return LS_RESTART;
}

void
ls_guard_mark_dirty(ls_guard *g)
{
	if (g->frame != NULL &&
		atomic_load_explicit(&g->frame->dirty, memory_order_relaxed) == 0)
		atomic_store_explicit(&g->frame->dirty, 1, memory_order_relaxed);
}

/* ------------------------------------------------------------------------
 * Registry
 * ------------------------------------------------------------------------ */
void
ls_bm_register_type(uint16_t dt_type, const ls_dt_ops *ops)
{
	if (dt_type < LS_MAX_DT_TYPES)
		type_ops[dt_type] = ops;
}

const ls_dt_ops *
bm_type_ops(uint16_t dt_type)
{
	return dt_type < LS_MAX_DT_TYPES ? type_ops[dt_type] : NULL;
}

ls_status
ls_bm_register_dt(ls_bm *bm, uint16_t dt_type, void *obj, uint32_t *dt_id)
{
	ls_status	st = LS_NO_SPACE;

	if (dt_type >= LS_MAX_DT_TYPES)
		return LS_INVALID;
	ls_mutex_lock(&bm->dt_mutex);
	for (uint32_t i = 0; i < LS_MAX_DT; i++)
	{
		ls_dt_slot *s = &bm->dts[i];

		if (atomic_load_explicit(&s->used, memory_order_relaxed) == 0)
		{
			s->dt_type = dt_type;
			s->obj = obj;
			atomic_store_explicit(&s->used, 1, memory_order_release);
			*dt_id = i;
			st = LS_OK;
			break;
		}
	}
	ls_mutex_unlock(&bm->dt_mutex);
	return st;
}

void
ls_bm_unregister_dt(ls_bm *bm, uint32_t dt_id)
{
	if (dt_id >= LS_MAX_DT)
		return;
	ls_mutex_lock(&bm->dt_mutex);
	atomic_store_explicit(&bm->dts[dt_id].used, 0, memory_order_release);
	ls_mutex_unlock(&bm->dt_mutex);
}

/*
 * Instance and ops of dt_id.  Read without the mutex: a data structure is
 * unregistered only after its pages are gone, so a provider that read a
 * stale dt_id from a frame finds either the same instance or a page whose
 * owning swip check fails later.
 */
bool
bm_lookup_dt(ls_bm *bm, uint32_t dt_id, const ls_dt_ops **ops, void **obj)
{
	if (dt_id >= LS_MAX_DT)
		return false;
	ls_dt_slot *s = &bm->dts[dt_id];

	if (atomic_load_explicit(&s->used, memory_order_acquire) == 0)
		return false;
	*ops = bm_type_ops(s->dt_type);
	*obj = s->obj;
	return *ops != NULL;
}

/* ------------------------------------------------------------------------
 * Statistics and errors
 * ------------------------------------------------------------------------ */
void
ls_bm_publish_hits(ls_bm *bm)
{
	uint64_t	d = ls_bm_tl_hits - tl_hits_published;

	if (d != 0)
	{
		atomic_fetch_add_explicit(&bm->hits, d, memory_order_relaxed);
		tl_hits_published = ls_bm_tl_hits;
	}
	if (tl_restarts != 0)
	{
		atomic_fetch_add_explicit(&bm->restarts, tl_restarts, memory_order_relaxed);
		tl_restarts = 0;
	}
}

void
ls_bm_count_restart(ls_bm *bm)
{
	if ((++tl_restarts & 255) == 0)
		ls_bm_publish_hits(bm);
}

void
ls_bm_get_stats(ls_bm *bm, ls_bm_stats *out)
{
	ls_bm_publish_hits(bm);
	out->hits = atomic_load(&bm->hits);
	out->misses = atomic_load(&bm->misses);
	out->reads = atomic_load(&bm->reads);
	out->writes = atomic_load(&bm->writes);
	out->evictions = atomic_load(&bm->evictions);
	out->restarts = atomic_load(&bm->restarts);
	out->free_frames = atomic_load(&bm->free_count);
	out->n_frames = bm->layout.n_frames;
	out->allocated_pages = atomic_load(&bm->next_pid) - atomic_load(&bm->freepid_n);
}

void
bm_set_error(ls_pid pid, int err)
{
	tl_error_pid = pid;
	tl_error_errno = err;
}

ls_pid
ls_bm_last_error_pid(void)
{
	return tl_error_pid;
}

int
ls_bm_last_error_errno(void)
{
	return tl_error_errno;
}
