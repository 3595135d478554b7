/*
 * bm.c - buffer pool layout, life cycle, frame and page-id allocation, guards,
 * the data-structure registry and statistics.
 *
 * Region layout (offsets from the 64-aligned pool header):
 *   [struct ls_bm][ls_frame x n][undo table][free chunks][pad to 4096][pages x n]
 */
#include "bm_internal.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

_Thread_local uint64_t ls_bm_tl_hits;
_Thread_local uint64_t ls_bm_tl_loads;
static _Thread_local uint64_t tl_hits_published;
static _Thread_local uint64_t tl_restarts;
static _Thread_local ls_pid tl_error_pid = LS_PID_INVALID;
static _Thread_local int tl_error_errno;

/* Type ops: per process (function pointers differ between binaries). */
static const ls_dt_ops *type_ops[LS_MAX_DT_TYPES];

#define LS_BM_MAX_FRAMES	(1ULL << 31)

/*
 * Free-block chunks of a pool: about 4 free blocks per frame (0.2% of the
 * pool's memory), at least 1024 chunks (63k blocks).
 */
static uint32_t
free_chunk_count(uint64_t n_frames)
{
	return (uint32_t) LS_MAX(1024, n_frames / 16);
}

static uint64_t
layout_bytes_before_pages(uint64_t n_frames)
{
	uint64_t	off = LS_ALIGN_UP(sizeof(ls_bm), LS_CACHELINE);

	off += n_frames * sizeof(ls_frame);
	/* the undo journal's table of recently saved blocks */
	off += bm_undo_table_entries(n_frames) * sizeof(uint64_t);
	off += (uint64_t) free_chunk_count(n_frames) * sizeof(ls_free_chunk);
	return off;
}

static inline ls_free_chunk *
bm_chunk(ls_bm *bm, uint32_t idx)
{
	LS_ASSERT(idx < bm->n_chunks);
	return (ls_free_chunk *) ((char *) bm + bm->chunks_off) + idx;
}

size_t
ls_bm_region_size(uint64_t n_frames)
{
	/* slack: 64 to align the header, 4096 to align the page array */
	return (size_t) (LS_CACHELINE + layout_bytes_before_pages(n_frames) + 4096 +
					 n_frames * LS_PAGE_SIZE);
}

ls_status
ls_bm_init(void *region, size_t region_size, const ls_bm_config *cfg, ls_bm **out)
{
	uint64_t	n = cfg->n_frames;
	uintptr_t	base;
	ls_bm	   *bm;
	const char *dir = cfg->data_dir != NULL ? cfg->data_dir : "";

	*out = NULL;
	if (n < 2 || n >= LS_BM_MAX_FRAMES || strlen(dir) >= LS_BM_PATH_MAX - 32 ||
		(cfg->data_dir == NULL && cfg->file_path == NULL) || cfg->free_target_pct > 90)
		return LS_INVALID;
	if (region_size < ls_bm_region_size(n))
		return LS_INVALID;

	base = LS_ALIGN_UP((uintptr_t) region, LS_CACHELINE);
	bm = (ls_bm *) base;
	memset(bm, 0, sizeof(*bm));
	bm->layout.n_frames = n;
	bm->layout.frames_off = LS_ALIGN_UP(sizeof(ls_bm), LS_CACHELINE);
	bm->layout.pages_off = LS_ALIGN_UP(base + layout_bytes_before_pages(n), 4096) - base;
	bm->magic = LS_BM_MAGIC;
	bm->free_target = LS_MAX(1, n * (cfg->free_target_pct ? cfg->free_target_pct : 5) / 100);
	bm->write_batch = cfg->write_batch ? LS_MIN(cfg->write_batch, 256) : 64;
	bm->blocks_per_segment = cfg->blocks_per_segment;
	bm->use_direct_io = cfg->use_direct_io;
	bm->flush_log = cfg->flush_log;
	bm->flush_log_arg = cfg->flush_log_arg;
	bm->file_path = cfg->file_path;
	bm->file_path_arg = cfg->file_path_arg;
	bm->page_checksum = cfg->page_checksum;
	bm->page_checksum_arg = cfg->page_checksum_arg;
	strcpy(bm->data_dir, dir);
	ls_mutex_init(&bm->free_mutex);
	ls_mutex_init(&bm->dt_mutex);
	for (int i = 0; i < LS_MAX_DT; i++)
	{
		ls_mutex_init(&bm->dts[i].block_mutex);
		ls_mutex_init(&bm->dts[i].undo_mutex);
	}
	bm->undo_off = bm->layout.frames_off + n * sizeof(ls_frame);
	bm->undo_mask = bm_undo_table_entries(n) - 1;
	memset((char *) bm + bm->undo_off, 0, (bm->undo_mask + 1) * sizeof(uint64_t));
	ls_mutex_init(&bm->chunk_mutex);
	bm->chunks_off = bm->undo_off + (bm->undo_mask + 1) * sizeof(uint64_t);
	bm->n_chunks = free_chunk_count(n);
	bm->chunk_free = LS_CHUNK_NONE;
	for (uint32_t i = bm->n_chunks; i-- > 0;)
	{
		bm_chunk(bm, i)->n = 0;
		bm_chunk(bm, i)->next = bm->chunk_free;
		bm->chunk_free = i;
	}
	for (int i = 0; i < LS_MAX_DT; i++)
		bm->dts[i].free_head = LS_CHUNK_NONE;
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
 * Blocks of an instance's file
 * ------------------------------------------------------------------------ */
ls_dt_slot *
bm_dt_slot(ls_bm *bm, uint32_t dt_id)
{
	return dt_id < LS_MAX_DT ? &bm->dts[dt_id] : NULL;
}

/*
 * Free-block lists (block_mutex of the slot held).  The head chunk is the
 * only one that may be partly filled; an emptied head goes back to the
 * spare chunks, a full one gets a spare chunk in front of it.
 */
static uint32_t
free_list_pop(ls_bm *bm, ls_dt_slot *s)
{
	ls_free_chunk *c = bm_chunk(bm, s->free_head);
	uint32_t	block;

	LS_ASSERT(c->n > 0 && s->n_free > 0);
	block = c->blocks[--c->n];
	s->n_free--;
	if (c->n == 0)
	{
		uint32_t	idx = s->free_head;

		s->free_head = c->next;
		ls_mutex_lock(&bm->chunk_mutex);
		c->next = bm->chunk_free;
		bm->chunk_free = idx;
		ls_mutex_unlock(&bm->chunk_mutex);
	}
	return block;
}

/* false when no spare chunk is left (the block is then not kept) */
static bool
free_list_push(ls_bm *bm, ls_dt_slot *s, uint32_t block)
{
	ls_free_chunk *c = s->free_head != LS_CHUNK_NONE ? bm_chunk(bm, s->free_head) : NULL;

	if (c == NULL || c->n == LS_FREE_CHUNK_BLOCKS)
	{
		uint32_t	idx;

		ls_mutex_lock(&bm->chunk_mutex);
		idx = bm->chunk_free;
		if (idx != LS_CHUNK_NONE)
			bm->chunk_free = bm_chunk(bm, idx)->next;
		ls_mutex_unlock(&bm->chunk_mutex);
		if (idx == LS_CHUNK_NONE)
			return false;
		c = bm_chunk(bm, idx);
		c->n = 0;
		c->next = s->free_head;
		s->free_head = idx;
	}
	c->blocks[c->n++] = block;
	s->n_free++;
	return true;
}

/* Every chunk of s back to the spare ones (block_mutex of s held). */
static void
free_list_clear(ls_bm *bm, ls_dt_slot *s)
{
	while (s->free_head != LS_CHUNK_NONE)
	{
		uint32_t	idx = s->free_head;
		ls_free_chunk *c = bm_chunk(bm, idx);

		s->free_head = c->next;
		ls_mutex_lock(&bm->chunk_mutex);
		c->n = 0;
		c->next = bm->chunk_free;
		bm->chunk_free = idx;
		ls_mutex_unlock(&bm->chunk_mutex);
	}
	s->n_free = 0;
}

/*
 * Disk space for new block `block` of s's file: reserved ahead in growing
 * steps (an eighth of the blocks so far, 16 .. 1024 blocks; just the one
 * block when the step does not fit), so that writing the page back later
 * cannot fail for lack of space (bm_io_reserve).  s->reserved grows while
 * the slot is registered (two processes reserving the same range is
 * harmless: fallocate keeps what is there) and shrinks only when the file
 * is cut (ls_bm_dt_clip_reserved).
 */
static ls_status
block_reserve(ls_bm *bm, uint32_t dt_id, ls_dt_slot *s, uint32_t block)
{
	uint32_t	have = atomic_load_explicit(&s->reserved, memory_order_acquire);
	uint32_t	step = LS_MIN(LS_MAX(block / 8, 16), 1024);
	uint32_t	want = block + 1 + step < block ? block + 1 : block + 1 + step;

	if (block < have)
		return LS_OK;
	if (bm_io_reserve(bm, dt_id, have, want) != LS_OK)
	{
		want = block + 1;
		if (bm_io_reserve(bm, dt_id, have, want) != LS_OK)
			return LS_IO_ERROR;
	}
	ls_atomic_raise_u32(&s->reserved, want);
	return LS_OK;
}

/*
 * A free block of dt_id's file: a recycled one, else the next new one, whose
 * disk space is reserved first (outside block_mutex).  LS_NO_SPACE when the
 * file has no block numbers left, LS_IO_ERROR (errno kept) when the disk
 * has no room for a new block.
 */
static ls_status
block_alloc(ls_bm *bm, uint32_t dt_id, uint32_t *out)
{
	ls_dt_slot *s = &bm->dts[dt_id];
	uint32_t	block;

	for (;;)
	{
		ls_mutex_lock(&s->block_mutex);
		if (s->free_head != LS_CHUNK_NONE)
			block = free_list_pop(bm, s);
		else
		{
			block = atomic_load_explicit(&s->next_block, memory_order_relaxed);
			if (block != LS_BLOCK_INVALID &&
				block >= atomic_load_explicit(&s->reserved, memory_order_acquire))
			{
				ls_mutex_unlock(&s->block_mutex);
				if (block_reserve(bm, dt_id, s, block) != LS_OK)
					return LS_IO_ERROR;
				continue;		/* another process may have taken it */
			}
			if (block != LS_BLOCK_INVALID)
				atomic_store_explicit(&s->next_block, block + 1, memory_order_relaxed);
		}
		ls_mutex_unlock(&s->block_mutex);
		break;
	}
	if (block == LS_BLOCK_INVALID)
		return LS_NO_SPACE;
	atomic_fetch_add_explicit(&s->in_use, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&bm->allocated_pages, 1, memory_order_relaxed);
	*out = block;
	return LS_OK;
}

static void
pid_release(ls_bm *bm, ls_pid pid)
{
	ls_dt_slot *s = bm_dt_slot(bm, ls_pid_dt(pid));

	/* a page being read for this pid must not be swizzled later */
	bm_iof_purge_pid(bm, pid);
	if (s == NULL)
		return;
	atomic_fetch_sub_explicit(&s->in_use, 1, memory_order_relaxed);
	atomic_fetch_sub_explicit(&bm->allocated_pages, 1, memory_order_relaxed);
	ls_mutex_lock(&s->block_mutex);
	if (!free_list_push(bm, s, ls_pid_block(pid)))
		atomic_fetch_add_explicit(&bm->leaked_blocks, 1, memory_order_relaxed);
	ls_mutex_unlock(&s->block_mutex);
}

uint32_t
ls_bm_dt_free_blocks(ls_bm *bm, uint32_t dt_id)
{
	ls_dt_slot *s = bm_dt_slot(bm, dt_id);
	uint32_t	n;

	if (s == NULL)
		return 0;
	ls_mutex_lock(&s->block_mutex);
	n = s->n_free;
	ls_mutex_unlock(&s->block_mutex);
	return n;
}

void
ls_bm_dt_clip_reserved(ls_bm *bm, uint32_t dt_id, uint32_t n_blocks)
{
	ls_dt_slot *s = bm_dt_slot(bm, dt_id);

	if (s == NULL)
		return;
	ls_atomic_lower_u32(&s->reserved, n_blocks);
}

uint32_t
ls_bm_dt_blocks(ls_bm *bm, uint32_t dt_id)
{
	ls_dt_slot *s = bm_dt_slot(bm, dt_id);

	return s != NULL ? atomic_load(&s->next_block) : 0;
}

ls_status
ls_bm_alloc_page(ls_bm *bm, uint32_t dt_id, uint16_t dt_type, ls_guard *out)
{
	uint32_t	idx;
	ls_status	st;

	uint32_t	block;

	out->mode = LS_GUARD_NONE;
	if (dt_type >= LS_MAX_DT_TYPES || dt_id >= LS_MAX_DT)
		return LS_INVALID;
	st = bm_get_free_frame(bm, &idx);
	if (st != LS_OK)
		return st;
	st = block_alloc(bm, dt_id, &block);
	if (st != LS_OK)
	{
		bm_frame_push_free(bm, idx);
		return st;
	}

	ls_frame   *f = ls_bm_frame(bm, idx);
	ls_page    *p = ls_bm_page(bm, idx);

	/* free frames are unreachable, but a provider may try-latch it briefly */
	ls_latch_lock_exclusive(&f->latch);
	f->pid = ls_pid_make(dt_id, block);
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

/*
 * Give back a frame the caller latched exclusively, without writing its page.
 * A write-back of the frame may still be in flight: wait for it before the
 * block can be reused (or its file removed), or the old image could land on
 * top of the new page's.  The writer never blocks on our latch (it only
 * try-latches).
 */
static void
frame_free_latched(ls_bm *bm, ls_frame *f)
{
	while (atomic_load_explicit(&f->writing, memory_order_acquire) != 0)
		sched_yield();
	atomic_store_explicit(&f->dirty, 0, memory_order_relaxed);
	atomic_store_explicit(&f->state, LS_FRAME_FREE, memory_order_relaxed);
	f->pid = LS_PID_INVALID;
	ls_latch_unlock_exclusive(&f->latch);
	bm_frame_push_free(bm, ls_bm_frame_index(bm, f));
}

void
ls_bm_free_page(ls_bm *bm, ls_guard *g)
{
	LS_ASSERT(g->frame != NULL && ls_guard_is_exclusive(g));
	ls_frame   *f = g->frame;
	ls_pid		pid = f->pid;

	frame_free_latched(bm, f);
	g->mode = LS_GUARD_NONE;
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
 *
 * CRC32C over the whole page with both checksum fields zero, then
 * PostgreSQL's checksum (when the caller provides one) over the page with
 * the CRC in place: a reader checks them in the opposite order.
 * ------------------------------------------------------------------------ */
static uint32_t
page_crc(const ls_page *p)
{
	ls_page_header h = p->hdr;

	h.checksum = 0;
	h.pg_checksum = 0;

	uint32_t	crc = ls_crc32c(0, (const uint8_t *) &h, sizeof(h));

	return ls_crc32c(crc, (const uint8_t *) p + sizeof(h), LS_PAGE_SIZE - sizeof(h));
}

void
bm_page_seal(ls_bm *bm, ls_page *p, uint32_t block)
{
	p->hdr.pg_flags = 0;
	p->hdr.pg_lower = LS_PG_HEADER_SIZE;
	p->hdr.pg_upper = LS_PG_HEADER_SIZE;
	p->hdr.pg_special = LS_PG_HEADER_SIZE;
	p->hdr.pg_pagesize_version = (uint16_t) (LS_PAGE_SIZE | LS_PG_LAYOUT_VERSION);
	p->hdr.pg_prune_xid = 0;
	p->hdr.pid = block;
	p->hdr.checksum = page_crc(p);
	p->hdr.pg_checksum = 0;
	if (bm->page_checksum != NULL)
		p->hdr.pg_checksum = bm->page_checksum(bm->page_checksum_arg, p, block);
}

ls_status
bm_page_check(ls_bm *bm, ls_page *p, ls_pid pid)
{
	if (bm->page_checksum != NULL &&
		p->hdr.pg_checksum != bm->page_checksum(bm->page_checksum_arg, p, ls_pid_block(pid)))
		return LS_CHECKSUM;
	if (p->hdr.checksum != page_crc(p))
		return LS_CHECKSUM;
	if (p->hdr.pid != ls_pid_block(pid) || p->hdr.dt_type >= LS_MAX_DT_TYPES ||
		p->hdr.pg_pagesize_version != (LS_PAGE_SIZE | LS_PG_LAYOUT_VERSION))
		return LS_CORRUPT;
	p->hdr.pid = pid;
	p->hdr.dt_id = ls_pid_dt(pid);
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
	LS_ASSERT(ls_guard_is_exclusive(g));
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

static ls_status
register_slot(ls_bm *bm, uint16_t dt_type, void *obj, const ls_bm_file *file,
			  uint32_t n_blocks, uint32_t *dt_id)
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
			if (file != NULL)
				s->file = *file;
			else
			{
				memset(&s->file, 0, sizeof(s->file));
				s->file.key[0] = i;
			}
			atomic_fetch_add_explicit(&s->gen, 1, memory_order_relaxed);
			atomic_store_explicit(&s->next_block, n_blocks, memory_order_relaxed);
			atomic_store_explicit(&s->reserved, 0, memory_order_relaxed);
			atomic_store_explicit(&s->unsynced, 0, memory_order_relaxed);
			atomic_store_explicit(&s->in_use, n_blocks, memory_order_relaxed);
			ls_mutex_lock(&s->block_mutex);
			free_list_clear(bm, s);
			ls_mutex_unlock(&s->block_mutex);
			bm_undo_reset(bm, i);	/* a new file: not protected */
			atomic_store_explicit(&s->used, 1, memory_order_release);
			*dt_id = i;
			st = LS_OK;
			break;
		}
	}
	ls_mutex_unlock(&bm->dt_mutex);
	if (st == LS_OK)
		atomic_fetch_add_explicit(&bm->allocated_pages, n_blocks, memory_order_relaxed);
	return st;
}

ls_status
ls_bm_register_file(ls_bm *bm, uint16_t dt_type, void *obj, const ls_bm_file *file,
					uint32_t n_blocks, uint32_t *dt_id)
{
	if (file == NULL || n_blocks == LS_BLOCK_INVALID)
		return LS_INVALID;
	return register_slot(bm, dt_type, obj, file, n_blocks, dt_id);
}

ls_status
ls_bm_register_dt(ls_bm *bm, uint16_t dt_type, void *obj, uint32_t *dt_id)
{
	ls_status	st = register_slot(bm, dt_type, obj, NULL, 0, dt_id);

	if (st == LS_OK && (st = bm_io_create_file(bm, *dt_id)) != LS_OK)
		ls_bm_unregister_dt(bm, *dt_id);
	return st;
}

void
ls_bm_unregister_dt(ls_bm *bm, uint32_t dt_id)
{
	ls_dt_slot *s = bm_dt_slot(bm, dt_id);

	if (s == NULL)
		return;
	bm_io_forget(bm, dt_id);
	bm_undo_reset(bm, dt_id);
	ls_mutex_lock(&s->block_mutex);
	free_list_clear(bm, s);
	ls_mutex_unlock(&s->block_mutex);
	ls_mutex_lock(&bm->dt_mutex);
	if (atomic_load_explicit(&s->used, memory_order_relaxed) != 0)
	{
		/* pages of the instance no longer count (they went with it) */
		atomic_fetch_sub_explicit(&bm->allocated_pages,
								  atomic_exchange(&s->in_use, 0), memory_order_relaxed);
		atomic_store_explicit(&s->used, 0, memory_order_release);
	}
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
	out->allocated_pages = atomic_load(&bm->allocated_pages);
	out->undo_appends = atomic_load(&bm->undo_appends);
	out->undo_pages = atomic_load(&bm->undo_pages);
	out->leaked_blocks = atomic_load(&bm->leaked_blocks);
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

/* ------------------------------------------------------------------------
 * Blocks outside the pool, sync, drop
 * ------------------------------------------------------------------------ */

/* An aligned page buffer for O_DIRECT transfers of a caller's page. */
static ls_page *
aligned_page(void)
{
	void	   *mem;

	if (posix_memalign(&mem, 4096, LS_PAGE_SIZE) != 0)
		return NULL;
	return mem;
}

static bool
dt_registered(ls_bm *bm, uint32_t dt_id)
{
	ls_dt_slot *s = bm_dt_slot(bm, dt_id);

	return s != NULL && atomic_load_explicit(&s->used, memory_order_acquire) != 0;
}

/* Zeros where a header should be: a hole in the file, never written. */
static bool
page_is_hole(const ls_page *p)
{
	static const ls_page_header zero;

	return memcmp(&p->hdr, &zero, sizeof(zero)) == 0;
}

ls_status
ls_bm_read_block(ls_bm *bm, uint32_t dt_id, uint32_t block, ls_page *buf)
{
	ls_pid		pid = ls_pid_make(dt_id, block);
	ls_page    *tmp;
	ls_status	st;

	if (!dt_registered(bm, dt_id) || block == LS_BLOCK_INVALID)
		return LS_INVALID;
	if ((tmp = aligned_page()) == NULL)
		return LS_NO_MEMORY;
	st = bm_io_read(bm, pid, tmp);
	/* a hole in the file (never written) reads as zeros */
	if (st == LS_OK && page_is_hole(tmp))
		st = LS_NOT_FOUND;
	else if (st == LS_OK && (st = bm_page_check(bm, tmp, pid)) != LS_OK)
		bm_set_error(pid, 0);
	if (st == LS_OK)
		memcpy(buf, tmp, LS_PAGE_SIZE);
	free(tmp);
	return st;
}

ls_status
ls_bm_read_file_block(ls_bm *bm, const ls_bm_file *file, uint32_t block, ls_page *buf)
{
	ls_page    *tmp;
	ls_status	st;

	if (file == NULL || block == LS_BLOCK_INVALID)
		return LS_INVALID;
	if ((tmp = aligned_page()) == NULL)
		return LS_NO_MEMORY;
	st = bm_io_read_file(bm, file, block, tmp);
	if (st == LS_OK && page_is_hole(tmp))
		st = LS_NOT_FOUND;
	/* the page id's dt part does not matter to the check (blocks only) */
	if (st == LS_OK && (st = bm_page_check(bm, tmp, ls_pid_make(0, block))) != LS_OK)
		bm_set_error(ls_pid_make(0, block), 0);
	if (st == LS_OK)
		memcpy(buf, tmp, LS_PAGE_SIZE);
	free(tmp);
	return st;
}

ls_status
ls_bm_write_block(ls_bm *bm, uint32_t dt_id, uint32_t block, ls_page *buf, bool sync)
{
	ls_pid		pid = ls_pid_make(dt_id, block);
	ls_page    *tmp;
	ls_status	st;
	void	   *bufs[1];

	if (!dt_registered(bm, dt_id) || block == LS_BLOCK_INVALID)
		return LS_INVALID;
	if ((tmp = aligned_page()) == NULL)
		return LS_NO_MEMORY;
	memcpy(tmp, buf, LS_PAGE_SIZE);
	tmp->hdr.dt_id = dt_id;
	bm_page_seal(bm, tmp, block);
	bufs[0] = tmp;
	bm_io_write(bm, 1, &pid, bufs, &st);
	free(tmp);
	if (st == LS_OK)
		atomic_fetch_add_explicit(&bm->writes, 1, memory_order_relaxed);
	if (st == LS_OK && sync)
		st = bm_io_sync(bm, dt_id);
	return st;
}

ls_status
ls_bm_sync_dt(ls_bm *bm, uint32_t dt_id)
{
	ls_dt_slot *s = bm_dt_slot(bm, dt_id);

	if (s == NULL || !dt_registered(bm, dt_id))
		return LS_INVALID;
	if (atomic_load(&s->unsynced) == 0)
		return LS_OK;
	return bm_io_sync(bm, dt_id);
}

void
ls_bm_drop_dt(ls_bm *bm, uint32_t dt_id)
{
	uint64_t	n = ls_bm_n_frames(bm);

	if (!dt_registered(bm, dt_id))
		return;
	for (uint64_t i = 0; i < n; i++)
	{
		ls_frame   *f = ls_bm_frame(bm, (uint32_t) i);
		ls_pid		pid = f->pid;

		if (pid == LS_PID_INVALID || ls_pid_dt(pid) != dt_id)
			continue;
		if (atomic_load_explicit(&f->state, memory_order_acquire) == LS_FRAME_LOADING)
		{
			/* a load nobody swizzled (the instance is unused now) */
			bm_iof_purge_pid(bm, pid);
			continue;
		}
		ls_latch_lock_exclusive(&f->latch);
		if (f->pid == pid && atomic_load(&f->state) != LS_FRAME_FREE &&
			atomic_load(&f->state) != LS_FRAME_LOADING)
		{
			/* the owning swip goes with the instance: just free the frame */
			frame_free_latched(bm, f);
			bm_iof_purge_pid(bm, pid);
		}
		else
			ls_latch_unlock_exclusive(&f->latch);
	}
	ls_bm_unregister_dt(bm, dt_id);
}
