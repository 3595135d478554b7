/*
 * wal.c - the log's shared region and its appender side: slot rings, GSN
 * counter, appends, waits for durability.  The writer and the segment files
 * are in writer.c, the recovery reader in reader.c.  See README.md.
 */
#include "wal_internal.h"

#include <errno.h>
#include <sched.h>
#include <string.h>

uint32_t
ls_wal_max_record(const ls_wal_config *cfg)
{
	return cfg->slot_buffer / 2;
}

static bool
config_valid(const ls_wal_config *cfg)
{
	if (cfg->max_slots == 0 || cfg->max_slots > (1u << 20))
		return false;
	if (cfg->slot_buffer < 64 * 1024 || (cfg->slot_buffer & (cfg->slot_buffer - 1)) != 0)
		return false;
	if (cfg->segment_size < 64 * 1024 || cfg->segment_size % LS_WAL_BLOCK != 0)
		return false;
	if (cfg->round_buffer % LS_WAL_BLOCK != 0 ||
		(uint64_t) cfg->round_buffer < 2 * (uint64_t) cfg->slot_buffer)
		return false;
	return true;
}

static uint64_t
slots_offset(void)
{
	return LS_ALIGN_UP(sizeof(ls_wal), LS_CACHELINE);
}

static uint64_t
rings_offset(const ls_wal_config *cfg)
{
	return LS_ALIGN_UP(slots_offset() + (uint64_t) cfg->max_slots * sizeof(wal_slot), 4096);
}

size_t
ls_wal_region_size(const ls_wal_config *cfg)
{
	if (!config_valid(cfg))
		return 0;
	/* LS_CACHELINE of slack: the header is aligned inside the region */
	return (size_t) (LS_CACHELINE + rings_offset(cfg) +
					 (uint64_t) cfg->max_slots * cfg->slot_buffer);
}

ls_status
ls_wal_init(void *region, size_t size, const ls_wal_config *cfg, ls_wal **out)
{
	*out = NULL;
	if (region == NULL || !config_valid(cfg) || size < ls_wal_region_size(cfg))
		return LS_INVALID;

	ls_wal	   *wal = (ls_wal *) LS_ALIGN_UP((uintptr_t) region, LS_CACHELINE);

	/* a region formatted again (a test's new region at an old address) */
	wal_local_drop(wal);
	memset(wal, 0, rings_offset(cfg));
	wal->magic = WAL_MAGIC;
	wal->cfg = *cfg;
	wal->slots_off = slots_offset();
	wal->rings_off = rings_offset(cfg);
	wal->size = size - (uint64_t) ((char *) wal - (char *) region);
	for (uint32_t i = 0; i < cfg->max_slots; i++)
	{
		wal_slot   *s = wal_slot_at(wal, i);

		atomic_init(&s->head, 0);
		atomic_init(&s->appending, 0);
		atomic_init(&s->tail, 0);
		atomic_init(&s->durable, 0);
		atomic_init(&s->wake, 0);
		atomic_init(&s->sleepers, 0);
	}
	atomic_thread_fence(memory_order_seq_cst);
	*out = wal;
	return LS_OK;
}

bool
ls_wal_started(const ls_wal *wal)
{
	return atomic_load(&((ls_wal *) wal)->started) != 0;
}

bool
ls_wal_failed(const ls_wal *wal)
{
	return atomic_load(&((ls_wal *) wal)->failed) != 0;
}

uint64_t
ls_wal_durable(const ls_wal *wal, uint32_t slot)
{
	LS_ASSERT(slot < wal->cfg.max_slots);
	return atomic_load(&wal_slot_at(wal, slot)->durable);
}

uint64_t
ls_wal_durable_gsn(const ls_wal *wal)
{
	return atomic_load(&((ls_wal *) wal)->durable_gsn);
}

uint64_t
ls_wal_current_gsn(const ls_wal *wal)
{
	return atomic_load(&((ls_wal *) wal)->gsn);
}

void
ls_wal_advance_gsn(ls_wal *wal, uint64_t gsn)
{
	ls_atomic_raise_u64(&wal->gsn, gsn);
}

uint64_t
ls_wal_end(const ls_wal *wal)
{
	return atomic_load(&((ls_wal *) wal)->end);
}

uint64_t
ls_wal_keep_from(const ls_wal *wal)
{
	return atomic_load(&((ls_wal *) wal)->keep_from);
}

void
ls_wal_set_keep_from(ls_wal *wal, uint64_t pos)
{
	/* never backwards: segments already recycled cannot come back */
	ls_atomic_raise_u64(&wal->keep_from, pos);
}

void
ls_wal_set_spare_bytes(ls_wal *wal, uint64_t bytes)
{
	atomic_store(&wal->spare_bytes, bytes);
}

void
ls_wal_inject_fault(ls_wal *wal, int what, int err)
{
	if (what == 3)
	{
		atomic_store(&wal->plain_io, 1);
		return;
	}
	atomic_store(&wal->fault_err, err);
	atomic_store(&wal->fault_what, (uint32_t) what);
}

void
ls_wal_hold_slot(ls_wal *wal, uint32_t slot, bool hold)
{
	LS_ASSERT(slot < wal->cfg.max_slots);
	atomic_store(&wal->held_slot, hold ? slot + 1 : 0);
	/* released: what it kept is pending again */
	if (!hold)
		wal_kick_sync(wal);
}

void
ls_wal_kick(ls_wal *wal)
{
	wal_kick_sync(wal);
}

void
ls_wal_stats(const ls_wal *wal, ls_wal_stats_out *out)
{
	ls_wal	   *w = (ls_wal *) wal;

	out->rounds = atomic_load(&w->rounds);
	out->records = atomic_load(&w->round_records);
	out->blocks = atomic_load(&w->round_blocks);
	out->short_writes = atomic_load(&w->short_writes);
	out->generation = atomic_load(&w->generation);
}

void
wal_kick(ls_wal *wal)
{
	atomic_fetch_add(&wal->work, 1);
	if (atomic_load(&wal->writer_sleeping) != 0)
		ls_futex_wake(&wal->work, 1);
}

void
wal_kick_sync(ls_wal *wal)
{
	atomic_store(&wal->sync_wanted, 1);
	wal_kick(wal);
}

void
wal_slot_wake(wal_slot *s)
{
	atomic_fetch_add(&s->wake, 1);
	if (atomic_load(&s->sleepers) != 0)
		ls_futex_wake(&s->wake, INT32_MAX);
}

void
wal_fail(ls_wal *wal, int err)
{
	atomic_store(&wal->fail_errno, err);
	atomic_store(&wal->failed, 1);
	for (uint32_t i = 0; i < wal->cfg.max_slots; i++)
		wal_slot_wake(wal_slot_at(wal, i));
	ls_futex_wake(&wal->started, INT32_MAX);
}

static ls_status
failed_status(ls_wal *wal)
{
	errno = atomic_load(&wal->fail_errno);
	return LS_IO_ERROR;
}

void
wal_ring_read(const ls_wal *wal, uint32_t slot, uint64_t off, void *dst, uint32_t n)
{
	const uint8_t *ring = wal_ring_at(wal, slot);
	uint32_t	mask = wal->cfg.slot_buffer - 1;
	uint32_t	at = (uint32_t) (off & mask);
	uint32_t	first = LS_MIN(n, wal->cfg.slot_buffer - at);

	memcpy(dst, ring + at, first);
	if (first < n)
		memcpy((uint8_t *) dst + first, ring, n - first);
}

static uint64_t
ring_write(ls_wal *wal, uint32_t slot, uint64_t off, const void *src, uint32_t n)
{
	uint8_t    *ring = wal_ring_at(wal, slot);
	uint32_t	mask = wal->cfg.slot_buffer - 1;
	uint32_t	at = (uint32_t) (off & mask);
	uint32_t	first = LS_MIN(n, wal->cfg.slot_buffer - at);

	memcpy(ring + at, src, first);
	if (first < n)
		memcpy(ring, (const uint8_t *) src + first, n - first);
	return off + n;
}

/*
 * Sleep on the slot's futex word until cond(wal, s, arg) holds, the writer
 * failed, or deadline_ns (0 = none) passes.  Returns LS_OK, LS_IO_ERROR or
 * LS_BUSY.
 */
typedef bool (*slot_cond) (ls_wal *wal, wal_slot *s, uint64_t arg);

static ls_status
slot_wait(ls_wal *wal, wal_slot *s, slot_cond cond, uint64_t arg, uint64_t deadline_ns,
		  bool sync)
{
	for (;;)
	{
		if (cond(wal, s, arg))
			return LS_OK;
		if (atomic_load(&wal->failed))
			return failed_status(wal);

		uint64_t	wait_ns = 0;

		if (deadline_ns != 0)
		{
			uint64_t	now = ls_now_ns();

			if (now >= deadline_ns)
				return LS_BUSY;
			wait_ns = deadline_ns - now;
		}
		atomic_fetch_add(&s->sleepers, 1);
		uint32_t	w = atomic_load(&s->wake);

		if (!cond(wal, s, arg) && !atomic_load(&wal->failed))
		{
			if (sync)
				wal_kick_sync(wal);
			else
				wal_kick(wal);
			ls_futex_wait(&s->wake, w, wait_ns);
		}
		atomic_fetch_sub(&s->sleepers, 1);
	}
}

static bool
ring_has_room(ls_wal *wal, wal_slot *s, uint64_t need)
{
	uint64_t	used = atomic_load_explicit(&s->head, memory_order_relaxed) -
		atomic_load(&s->tail);

	return wal->cfg.slot_buffer - used >= need;
}

static bool
is_durable(ls_wal *wal, wal_slot *s, uint64_t end_pos)
{
	(void) wal;
	return atomic_load(&s->durable) >= end_pos;
}

ls_status
ls_wal_append(ls_wal *wal, uint32_t slot, const ls_wal_rec *hdr_in,
			  const void *const *parts, const uint32_t *lens,
			  uint32_t nparts, uint64_t *end_pos, uint64_t *gsn)
{
	uint64_t	len = LS_WAL_REC_HDR;

	if (slot >= wal->cfg.max_slots || hdr_in == NULL || hdr_in->type == 0)
		return LS_INVALID;
	for (uint32_t i = 0; i < nparts; i++)
		len += lens[i];
	if (len > ls_wal_max_record(&wal->cfg))
		return LS_TOO_LARGE;

	/* appenders wait for ls_wal_start (recovery decides where we continue) */
	while (atomic_load(&wal->started) == 0)
	{
		if (atomic_load(&wal->failed))
			return failed_status(wal);
		ls_futex_wait(&wal->started, 0, 0);
	}
	if (atomic_load(&wal->failed))
		return failed_status(wal);

	wal_slot   *s = wal_slot_at(wal, slot);
	/* room, not durability: the writer may write without syncing */
	ls_status	st = slot_wait(wal, s, ring_has_room, len, 0, false);

	if (st != LS_OK)
		return st;

	/*
	 * GSN protocol (README): the flag goes up before the GSN is taken and
	 * comes down after head is published, so a writer that read the counter
	 * and then saw the flag down also sees every record up to that GSN.
	 */
	atomic_store(&s->appending, 1);
	uint64_t	g = atomic_fetch_add(&wal->gsn, 1) + 1;
	ls_wal_rec	hdr = *hdr_in;

	hdr.len = (uint32_t) len;
	hdr.slot = slot;
	hdr.gsn = g;

	uint64_t	head = atomic_load_explicit(&s->head, memory_order_relaxed);
	uint64_t	off = ring_write(wal, slot, head, &hdr, LS_WAL_REC_HDR);

	for (uint32_t i = 0; i < nparts; i++)
		if (lens[i] > 0)
			off = ring_write(wal, slot, off, parts[i], lens[i]);
	atomic_store_explicit(&s->head, off, memory_order_release);
	atomic_store_explicit(&s->appending, 0, memory_order_release);

	/* keep the ring from filling up while nobody waits */
	if (off - atomic_load_explicit(&s->tail, memory_order_relaxed) > wal->cfg.slot_buffer / 2)
		wal_kick(wal);

	if (end_pos)
		*end_pos = off;
	if (gsn)
		*gsn = g;
	return LS_OK;
}

ls_status
ls_wal_wait(ls_wal *wal, uint32_t slot, uint64_t end_pos, uint32_t timeout_ms)
{
	LS_ASSERT(slot < wal->cfg.max_slots);
	wal_slot   *s = wal_slot_at(wal, slot);

	if (is_durable(wal, s, end_pos))
		return LS_OK;
	if (atomic_load(&wal->failed))
		return failed_status(wal);
	wal_kick_sync(wal);
	if (timeout_ms == 0)
		return LS_BUSY;
	return slot_wait(wal, s, is_durable, end_pos,
					 ls_now_ns() + (uint64_t) timeout_ms * 1000000ull, true);
}

/* Records not taken yet (a held slot's wait: rounds leave them anyway). */
static bool
any_pending(ls_wal *wal)
{
	uint32_t	held = atomic_load(&wal->held_slot);

	for (uint32_t i = 0; i < wal->cfg.max_slots; i++)
	{
		wal_slot   *s = wal_slot_at(wal, i);

		if (held == i + 1)
			continue;

		if (atomic_load(&s->head) != atomic_load_explicit(&s->tail, memory_order_relaxed))
			return true;
	}
	return false;
}

bool
ls_wal_writer_sleep(ls_wal *wal, uint32_t timeout_ms)
{
	uint32_t	w = atomic_load(&wal->work);

	/* a kick since the writer last looked (it may have come during a round) */
	if (w != wal->work_seen)
	{
		wal->work_seen = w;
		return true;
	}
	if (any_pending(wal) || atomic_load(&wal->failed))
		return true;
	if (timeout_ms == 0)
		return false;

	atomic_store(&wal->writer_sleeping, 1);
	/* a kick after the flag went up sees it; one before moved work past w */
	if (atomic_load(&wal->work) == w && !any_pending(wal))
		ls_futex_wait(&wal->work, w, (uint64_t) timeout_ms * 1000000ull);
	atomic_store(&wal->writer_sleeping, 0);

	wal->work_seen = atomic_load(&wal->work);
	return wal->work_seen != w || any_pending(wal) || atomic_load(&wal->failed);
}
