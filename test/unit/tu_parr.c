/* tu_parr.c - the page-array test data structure; see tu_parr.h. */
#include "tu_parr.h"

#include <string.h>

#define PARR_HDR	16			/* slot (8) + counter (8) */

static uint8_t
fill_byte(uint64_t slot, uint64_t counter, size_t k)
{
	return (uint8_t) (slot * 131 + counter * 7 + k * 13 + (k >> 8));
}

static void
page_fill(ls_page *p, uint64_t slot, uint64_t counter)
{
	memcpy(p->data, &slot, 8);
	memcpy(p->data + 8, &counter, 8);
	for (size_t k = PARR_HDR; k < LS_PAGE_DATA_SIZE; k++)
		p->data[k] = fill_byte(slot, counter, k);
}

static bool
page_ok(const ls_page *p, uint64_t slot, uint64_t *counter)
{
	uint64_t	s,
				c;

	memcpy(&s, p->data, 8);
	memcpy(&c, p->data + 8, 8);
	if (s != slot)
		return false;
	for (size_t k = PARR_HDR; k < LS_PAGE_DATA_SIZE; k++)
		if (p->data[k] != fill_byte(slot, c, k))
			return false;
	*counter = c;
	return true;
}

static ls_status
parr_find_parent(ls_bm *bm, void *obj, ls_frame *child, ls_parent *out)
{
	tu_parr    *pa = obj;
	uint64_t	want = ls_swip_from_frame(ls_bm_frame_index(bm, child));

	if (ls_guard_meta(&pa->latch, LS_GUARD_OPTIMISTIC, &out->guard) != LS_OK)
		return LS_RESTART;
	for (uint32_t i = 0; i < pa->n; i++)
	{
		if (ls_swip_load(&pa->swips[i]) == want)
		{
			out->swip = &pa->swips[i];
			return ls_guard_validate(&out->guard);
		}
	}
	return ls_guard_validate(&out->guard) == LS_OK ? LS_NOT_FOUND : LS_RESTART;
}

static bool
parr_is_evictable(ls_bm *bm, void *obj, ls_frame *f)
{
	(void) bm;
	(void) obj;
	(void) f;
	return true;
}

static const ls_dt_ops parr_ops = {
	.find_parent = parr_find_parent,
	.is_evictable = parr_is_evictable,
	.checkpoint = NULL,
};

size_t
tu_parr_size(uint32_t n)
{
	return sizeof(tu_parr) + (size_t) n * sizeof(ls_swip);
}

void
tu_parr_register_type(void)
{
	ls_bm_register_type(TU_PARR_TYPE, &parr_ops);
}

ls_status
tu_parr_create(ls_bm *bm, tu_parr *pa, uint32_t n)
{
	ls_status	st;

	ls_latch_init(&pa->latch);
	pa->n = n;
	for (uint32_t i = 0; i < n; i++)
		ls_swip_store(&pa->swips[i], LS_PID_INVALID);
	st = ls_bm_register_dt(bm, TU_PARR_TYPE, pa, &pa->dt_id);
	if (st != LS_OK)
		return st;
	for (uint32_t i = 0; i < n; i++)
	{
		ls_guard	meta,
					g;

		/*
		 * Allocate before taking the meta latch: allocation may evict pages
		 * of this very array, which needs the meta latch free.
		 */
		st = ls_bm_alloc_page(bm, pa->dt_id, TU_PARR_TYPE, &g);
		if (st != LS_OK)
			return st;
		page_fill(ls_guard_page(bm, &g), i, 0);
		ls_guard_mark_dirty(&g);
		(void) ls_guard_meta(&pa->latch, LS_GUARD_EXCLUSIVE, &meta);
		ls_swip_store(&pa->swips[i], ls_swip_from_frame(ls_bm_frame_index(bm, g.frame)));
		ls_guard_release(&meta);
		ls_guard_release(&g);
	}
	return LS_OK;
}

/* Fix slot i's page in mode; retries restarts. */
static ls_status
parr_fix(ls_bm *bm, tu_parr *pa, uint32_t i, ls_guard_mode mode, ls_guard *meta, ls_guard *g)
{
	for (;;)
	{
		ls_status	st = ls_guard_meta(&pa->latch, LS_GUARD_OPTIMISTIC, meta);

		if (st == LS_OK)
			st = ls_bm_fix(bm, meta, &pa->swips[i], mode, g);
		if (st != LS_RESTART)
			return st;
		ls_bm_count_restart(bm);
	}
}

ls_status
tu_parr_read(ls_bm *bm, tu_parr *pa, uint32_t i, uint64_t *counter)
{
	ls_guard	meta,
				g;
	ls_status	st = parr_fix(bm, pa, i, LS_GUARD_SHARED, &meta, &g);

	if (st != LS_OK)
		return st;
	if (!page_ok(ls_guard_page(bm, &g), i, counter))
		st = LS_CORRUPT;
	ls_guard_release(&g);
	return st;
}

ls_status
tu_parr_read_optimistic(ls_bm *bm, tu_parr *pa, uint32_t i, uint64_t *counter)
{
	for (;;)
	{
		ls_guard	meta,
					g;
		ls_status	st = parr_fix(bm, pa, i, LS_GUARD_OPTIMISTIC, &meta, &g);

		if (st != LS_OK)
			return st;

		bool		ok = page_ok(ls_guard_page(bm, &g), i, counter);

		if (ls_guard_validate(&g) == LS_OK && ls_guard_validate(&meta) == LS_OK)
			return ok ? LS_OK : LS_CORRUPT;
		ls_bm_count_restart(bm);
	}
}

ls_status
tu_parr_write(ls_bm *bm, tu_parr *pa, uint32_t i, uint64_t *counter)
{
	ls_guard	meta,
				g;
	uint64_t	c;
	ls_status	st = parr_fix(bm, pa, i, LS_GUARD_EXCLUSIVE, &meta, &g);

	if (st != LS_OK)
		return st;
	ls_page    *p = ls_guard_page(bm, &g);

	if (!page_ok(p, i, &c))
		st = LS_CORRUPT;
	else
	{
		page_fill(p, i, c + 1);
		ls_guard_mark_dirty(&g);
		*counter = c + 1;
	}
	ls_guard_release(&g);
	return st;
}

ls_status
tu_parr_free(ls_bm *bm, tu_parr *pa, uint32_t i)
{
	ls_guard	meta,
				g;
	uint64_t	raw;

	(void) ls_guard_meta(&pa->latch, LS_GUARD_EXCLUSIVE, &meta);
	raw = ls_swip_load(&pa->swips[i]);
	if (raw == LS_PID_INVALID)
		;						/* already free (LS_PID_INVALID has the swizzled bit) */
	else if (ls_swip_is_swizzled(raw))
	{
		ls_status	st = ls_bm_fix(bm, &meta, &pa->swips[i], LS_GUARD_EXCLUSIVE, &g);

		if (st != LS_OK)
		{
			ls_guard_release(&meta);
			return st;
		}
		ls_swip_store(&pa->swips[i], LS_PID_INVALID);
		ls_bm_free_page(bm, &g);
	}
	else
	{
		ls_swip_store(&pa->swips[i], LS_PID_INVALID);
		ls_bm_free_pid(bm, ls_swip_pid(raw));
	}
	ls_guard_release(&meta);
	return LS_OK;
}

ls_pid
tu_parr_pid(ls_bm *bm, tu_parr *pa, uint32_t i)
{
	return ls_bm_swip_to_pid(bm, ls_swip_load(&pa->swips[i]));
}
