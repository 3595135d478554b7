/*
 * test_hot_stress.c - multi-process stress of the hot tier.
 *
 * Several forked processes share one MAP_SHARED anonymous region, exactly as
 * PostgreSQL backends share the tier.  Writers insert rows, prepend versions,
 * truncate and uninstall versions, remove rows (DEAD or not) and forget DEAD
 * rowids, all on the same rowids so they contend on row latches.  Readers
 * walk chains and scan ranges inside epochs and check every version they see:
 * its payload is a pseudo-random pattern derived from (rowid, counter), so a
 * version whose memory was freed and reused (by any class) is detected.
 * Counters grow along time, so a chain must be strictly decreasing from
 * newest to oldest.  At the end the parent recounts everything and checks
 * the incremental statistics and the byte accounting.
 */
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "leanstore/hot.h"
#include "../../src/hot/hot_internal.h"	/* HOT_CHUNK_SLOTS */
#include "tu.h"

#define NWRITERS	3
#define NREADERS	3
#define MAX_CHAIN	10000		/* a longer walk means a cycle */

typedef struct shared_ctl
{
	_Atomic uint32_t stop;
	_Atomic uint64_t counter;	/* version counters, globally increasing */
	_Atomic uint64_t errors;
	_Atomic uint64_t writer_ops;
	_Atomic uint64_t no_space;
	_Atomic uint64_t reader_rows;
	_Atomic uint64_t reader_versions;
	_Atomic uint64_t slow_checks;
	_Atomic uint64_t verifies;
	_Atomic uint64_t ref_hits;	/* remembered row references that held */
	_Atomic uint64_t ref_stale;	/* ... that no longer held */
	char		first_error[512];
	_Atomic uint32_t error_claimed;
} shared_ctl;

typedef struct setup
{
	ls_hot	   *hot;
	ls_hot_table *tbl;
	shared_ctl *ctl;
	uint64_t	nrows;
	uint64_t	duration_ns;
} setup;

static bool
asan_scale(void)
{
	const char *s = getenv("LEANSTORE_TEST_SCALE");

	return s != NULL && strcmp(s, "asan") == 0;
}

static void
report(shared_ctl *ctl, const char *what, uint64_t rowid, uint64_t a, uint64_t b)
{
	uint32_t	expected = 0;

	atomic_fetch_add(&ctl->errors, 1);
	if (atomic_compare_exchange_strong(&ctl->error_claimed, &expected, 1))
		snprintf(ctl->first_error, sizeof(ctl->first_error),
				 "pid %d: %s (rowid %llu, %llu vs %llu)", (int) getpid(), what,
				 (unsigned long long) rowid, (unsigned long long) a,
				 (unsigned long long) b);
}

/* ---- payloads ------------------------------------------------------------- */

static uint64_t
pattern_seed(uint64_t rowid, uint64_t counter)
{
	return (rowid * UINT64_C(0x9E3779B97F4A7C15)) ^ (counter * UINT64_C(0xD6E8FEB86659FD93)) ^ 1;
}

static void
payload_fill(ls_hot_version *v, uint64_t rowid, uint64_t counter)
{
	uint64_t	s = pattern_seed(rowid, counter);

	memcpy(v->data, &rowid, 8);
	memcpy(v->data + 8, &counter, 8);
	for (uint32_t i = 16; i < v->len; i++)
		v->data[i] = (uint8_t) (ls_rand_next(&s) >> 56);
	atomic_store(&v->xmin_word, counter);
	v->cmin = (uint32_t) rowid;
}

/* Check one version of rowid; returns its counter (0 on error). */
static uint64_t
payload_check(shared_ctl *ctl, ls_hot_version *v, uint64_t rowid)
{
	uint64_t	r,
				c;
	uint32_t	len = v->len;

	if (len < 16 || len > LS_HOT_MAX_PAYLOAD)
	{
		report(ctl, "bad version length", rowid, len, 0);
		return 0;
	}
	memcpy(&r, v->data, 8);
	memcpy(&c, v->data + 8, 8);
	if (r != rowid || v->cmin != (uint32_t) rowid)
	{
		report(ctl, "version belongs to another row", rowid, r, v->cmin);
		return 0;
	}
	if (atomic_load(&v->xmin_word) != c)
	{
		report(ctl, "version header does not match payload", rowid, c, atomic_load(&v->xmin_word));
		return 0;
	}
	uint64_t	s = pattern_seed(rowid, c);

	for (uint32_t i = 16; i < len; i++)
		if (v->data[i] != (uint8_t) (ls_rand_next(&s) >> 56))
		{
			report(ctl, "payload corrupted", rowid, i, c);
			return 0;
		}
	return c;
}

/* Walk a row's chain: every version intact, counters strictly decreasing. */
static uint64_t
chain_check(shared_ctl *ctl, ls_hot_row *row, uint64_t rowid)
{
	uint64_t	prev = UINT64_MAX;
	uint64_t	n = 0;

	if (row->rowid != rowid)
	{
		report(ctl, "row header has wrong rowid", rowid, row->rowid, 0);
		return 0;
	}
	for (ls_hot_version *v = ls_hot_row_newest(row); v != NULL; v = ls_hot_version_older(v))
	{
		uint64_t	c = payload_check(ctl, v, rowid);

		if (c == 0)
			return n;
		if (c >= prev)
			report(ctl, "chain not newest-first", rowid, c, prev);
		prev = c;
		if (++n > MAX_CHAIN)
		{
			report(ctl, "chain cycle", rowid, n, 0);
			return n;
		}
	}
	return n;
}

/* ---- writers ------------------------------------------------------------- */

static uint32_t
random_len(uint64_t *rng)
{
	uint64_t	x = ls_rand_next(rng) % 100;

	if (x == 0)
		return 6000 + (uint32_t) (ls_rand_next(rng) % 3000);	/* ~8 KiB rows */
	return 16 + (uint32_t) (ls_rand_next(rng) % 400);
}

static ls_status
new_version(ls_hot_ctx *ctx, setup *su, uint64_t rowid, uint64_t *rng, ls_hot_version **out)
{
	ls_status	st = ls_hot_version_alloc(ctx, random_len(rng), out);

	if (st == LS_NO_SPACE)
		atomic_fetch_add(&su->ctl->no_space, 1);
	else if (st != LS_OK)
		report(su->ctl, "version_alloc failed", rowid, st, 0);
	return st;
}

static void
writer_absent(ls_hot_ctx *ctx, setup *su, uint64_t rowid, uint64_t *rng)
{
	ls_hot_version *v;
	ls_status	st;

	if (ls_hot_rowid_is_dead(su->tbl, rowid))
	{
		if (ls_rand_next(rng) % 4 == 0)
			ls_hot_rowid_forget(ctx, su->tbl, rowid);
		return;
	}
	if (new_version(ctx, su, rowid, rng, &v) != LS_OK)
		return;
	payload_fill(v, rowid, atomic_fetch_add(&su->ctl->counter, 1));
	st = ls_hot_row_insert(ctx, su->tbl, rowid, LS_ORIGIN_INSERTED, v, NULL);
	if (st == LS_OK)
		return;
	ls_hot_version_free(ctx, v);
	if (st == LS_NO_SPACE)
		atomic_fetch_add(&su->ctl->no_space, 1);
	else if (st != LS_EXISTS)	/* another writer won the slot */
		report(su->ctl, "row_insert failed", rowid, st, 0);
}

/*
 * Rows leave the map (remove, evict) only in every other 50 ms window, so
 * that row references (reader_ref) both hold for a while and go stale, on
 * any number of cores.
 */
static bool
removals_allowed(void)
{
	return (ls_now_ns() / UINT64_C(50000000)) % 2 == 0;
}

/* Under the latch of a live row: one random change. */
static void
writer_present(ls_hot_ctx *ctx, setup *su, ls_hot_row *row, uint64_t *rng)
{
	uint64_t	rowid = row->rowid;
	uint64_t	x = ls_rand_next(rng) % 100;
	uint64_t	len = 0;
	ls_hot_version *v;

	for (v = ls_hot_row_newest(row); v != NULL; v = ls_hot_version_older(v))
		len++;
	if (x < 55 && len < 12)
	{
		if (new_version(ctx, su, rowid, rng, &v) == LS_OK)
		{
			/* counter taken under the latch: newer versions get larger ones */
			payload_fill(v, rowid, atomic_fetch_add(&su->ctl->counter, 1));
			ls_hot_row_install(ctx, su->tbl, row, v);
		}
	}
	else if (x < 75)
	{
		/* keep the newest one or two versions */
		v = ls_hot_row_newest(row);
		if (x % 2 == 0 && ls_hot_version_older(v) != NULL)
			v = ls_hot_version_older(v);
		ls_hot_row_truncate(ctx, su->tbl, row, v);
	}
	else if (x < 82)
	{
		ls_status	st = ls_hot_row_uninstall_newest(ctx, su->tbl, row);

		if (st != (len > 1 ? LS_OK : LS_INVALID))
			report(su->ctl, "uninstall_newest result", rowid, st, len);
	}
	else if (x < 90 && removals_allowed())
	{
		ls_hot_row_remove(ctx, su->tbl, row, x % 2 == 0);	/* unlocks */
		return;
	}
	else if (x < 92 && removals_allowed())
	{
		/* leaves the map as pack's evict does (the versions stay readable) */
		ls_hot_row_evict(ctx, su->tbl, row);	/* unlocks */
		return;
	}
	ls_hot_row_unlock(row);
}

static void
writer_main(setup *su, uint32_t slot)
{
	ls_hot_ctx *ctx;
	uint64_t	rng = 0x1234567 + slot * 7919;
	uint64_t	ops = 0;
	uint64_t	deadline = ls_now_ns() + su->duration_ns;

	if (ls_hot_attach(su->hot, slot, &ctx) != LS_OK)
	{
		report(su->ctl, "attach failed", 0, slot, 0);
		return;
	}
	while (ls_now_ns() < deadline)
	{
		uint64_t	rowid = ls_rand_next(&rng) % su->nrows;

		ls_hot_epoch_enter(ctx);
		ls_hot_row *row = ls_hot_row_get(su->tbl, rowid);

		if (row == NULL)
			writer_absent(ctx, su, rowid, &rng);
		else
		{
			ls_hot_row_lock(row);
			if (ls_hot_row_is_removed(row))
				ls_hot_row_unlock(row);
			else
				writer_present(ctx, su, row, &rng);
		}
		ls_hot_epoch_exit(ctx);
		ops++;
	}
	atomic_fetch_add(&su->ctl->writer_ops, ops);
	ls_hot_detach(ctx);
}

/* ---- readers --------------------------------------------------------------- */

static void
reader_point(setup *su, uint64_t *rng)
{
	uint64_t	rowid = ls_rand_next(rng) % su->nrows;
	ls_hot_row *row = ls_hot_row_get(su->tbl, rowid);

	if (row == NULL)
		return;
	atomic_fetch_add_explicit(&su->ctl->reader_versions, chain_check(su->ctl, row, rowid),
							  memory_order_relaxed);
	atomic_fetch_add_explicit(&su->ctl->reader_rows, 1, memory_order_relaxed);
}

static void
reader_scan(setup *su, uint64_t *rng)
{
	uint64_t	cursor = ls_rand_next(rng) % su->nrows;
	uint64_t	end = cursor + 256;
	uint64_t	last = 0;
	bool		first = true;
	ls_hot_row *row;
	uint64_t	rows = 0,
				versions = 0;

	while ((row = ls_hot_scan_next(su->tbl, &cursor, end)) != NULL)
	{
		uint64_t	rowid = cursor - 1;

		if (!first && rowid <= last)
			report(su->ctl, "scan out of order", rowid, last, 0);
		first = false;
		last = rowid;
		versions += chain_check(su->ctl, row, rowid);
		rows++;
	}
	atomic_fetch_add_explicit(&su->ctl->reader_versions, versions, memory_order_relaxed);
	atomic_fetch_add_explicit(&su->ctl->reader_rows, rows, memory_order_relaxed);
}

/*
 * Slow reader: keep a pointer to the oldest version of a row across many
 * yields while writers truncate and remove; it must stay intact.
 */
static void
reader_slow(setup *su, uint64_t *rng)
{
	uint64_t	rowid = ls_rand_next(rng) % su->nrows;
	ls_hot_row *row = ls_hot_row_get(su->tbl, rowid);
	ls_hot_version *v,
			   *oldest = NULL;

	if (row == NULL)
		return;
	for (v = ls_hot_row_newest(row); v != NULL; v = ls_hot_version_older(v))
		oldest = v;
	if (oldest == NULL)
		return;
	uint64_t	c = payload_check(su->ctl, oldest, rowid);

	for (int i = 0; i < 20; i++)
		sched_yield();
	if (payload_check(su->ctl, oldest, rowid) != c)
		report(su->ctl, "version changed under an epoch", rowid, c, 0);
	atomic_fetch_add_explicit(&su->ctl->slow_checks, 1, memory_order_relaxed);
}

/*
 * Remembered row references (the hash cache's use): a reader keeps (rowid,
 * header, serial) across epochs while writers remove, evict and reinsert
 * rows.  A reference that still holds must lead to an intact row of that
 * rowid (chain_check: a header freed and reused, by any class, shows; a
 * matching serial with another rowid trips ls_hot_row_from_ref's
 * assertion); one that does not is taken anew.
 */
#define REF_SLOTS	16

typedef struct reader_refs
{
	uint64_t	rowid[REF_SLOTS];
	ls_hot_row *row[REF_SLOTS];
	uint64_t	serial[REF_SLOTS];
} reader_refs;

static void
reader_ref(setup *su, reader_refs *refs, uint64_t *rng)
{
	uint32_t	i = (uint32_t) (ls_rand_next(rng) % REF_SLOTS);
	ls_hot_row *row = NULL;

	if (refs->row[i] != NULL)
	{
		row = ls_hot_row_from_ref(su->tbl, refs->rowid[i], refs->row[i], refs->serial[i]);
		atomic_fetch_add_explicit(row != NULL ? &su->ctl->ref_hits : &su->ctl->ref_stale,
								  1, memory_order_relaxed);
		if (row != NULL)
		{
			atomic_fetch_add_explicit(&su->ctl->reader_versions,
									  chain_check(su->ctl, row, refs->rowid[i]),
									  memory_order_relaxed);
			return;
		}
	}
	/* a new rowid now and then, else the same one again */
	if (refs->row[i] == NULL || ls_rand_next(rng) % 4 == 0)
		refs->rowid[i] = ls_rand_next(rng) % su->nrows;
	refs->row[i] = ls_hot_row_get_ref(su->tbl, refs->rowid[i], &refs->serial[i]);
	if (refs->row[i] != NULL && refs->row[i]->rowid != refs->rowid[i])
		report(su->ctl, "reference taken to another row", refs->rowid[i],
			   refs->row[i]->rowid, 0);
}

static void
reader_main(setup *su, uint32_t slot)
{
	reader_refs refs;
	ls_hot_ctx *ctx;
	uint64_t	rng = 0xabcdef + slot * 104729;
	uint64_t	deadline = ls_now_ns() + su->duration_ns;

	if (ls_hot_attach(su->hot, slot, &ctx) != LS_OK)
	{
		report(su->ctl, "attach failed", 0, slot, 0);
		return;
	}
	memset(&refs, 0, sizeof(refs));
	while (ls_now_ns() < deadline)
	{
		uint64_t	x = ls_rand_next(&rng) % 100;

		ls_hot_epoch_enter(ctx);
		if (x == 0 && ls_rand_next(&rng) % 8 == 0)
		{
			/* structural invariants hold while writers run */
			char		msg[256];

			if (ls_hot_table_verify(su->tbl, false, msg, sizeof(msg)) != LS_OK ||
				ls_hot_verify(su->hot, false, msg, sizeof(msg)) != LS_OK)
				report(su->ctl, msg, 0, 0, 0);
			atomic_fetch_add(&su->ctl->verifies, 1);
		}
		else if (x < 40)
			reader_point(su, &rng);
		else if (x < 60)
			reader_ref(su, &refs, &rng);
		else if (x < 95)
			reader_scan(su, &rng);
		else
			reader_slow(su, &rng);
		ls_hot_epoch_exit(ctx);
	}
	ls_hot_detach(ctx);
}

/* ---- parent ----------------------------------------------------------------- */

static void
recount(setup *su, ls_hot_ctx *ctx)
{
	uint64_t	rows = 0,
				versions = 0,
				dead = 0,
				cursor = 0,
				rowid;
	ls_hot_row *row;
	ls_hot_table_stats ts;
	ls_hot_stats s;

	ls_hot_epoch_enter(ctx);
	while ((row = ls_hot_scan_next(su->tbl, &cursor, UINT64_MAX)) != NULL)
	{
		versions += chain_check(su->ctl, row, cursor - 1);
		rows++;
	}
	cursor = 0;
	while (ls_hot_scan_next_dead(su->tbl, &cursor, UINT64_MAX, &rowid))
		dead++;
	ls_hot_epoch_exit(ctx);
	ls_hot_reclaim(ctx);

	ls_hot_table_get_stats(su->tbl, &ts);
	ls_hot_get_stats(su->hot, &s);
	assert_int_equal(ts.rows, rows);
	assert_int_equal(ts.versions, versions);
	assert_int_equal(ts.dead_rowids, dead);
	assert_int_equal(s.rows, rows);
	assert_int_equal(s.versions, versions);
	assert_true(rows > 0);
	/* nobody is inside an epoch: everything retired is gone */
	assert_int_equal(s.retired_pending, 0);
	assert_int_equal(s.retired_bytes, 0);
	/* every used byte belongs to the table (no version left uninstalled) */
	assert_int_equal(s.used_bytes, ts.bytes);
	assert_int_equal(s.used_bytes + s.free_bytes + s.slack_bytes, s.heap_bytes);
}

static void
test_multiprocess_stress(void **state)
{
	(void) state;
	bool		small = asan_scale();
	size_t		size = small ? (8u << 20) : (16u << 20);
	void	   *region = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	shared_ctl *ctl = mmap(NULL, sizeof(shared_ctl), PROT_READ | PROT_WRITE,
						   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ls_hot_config cfg = {.max_tables = 8, .max_procs = 1 + NWRITERS + NREADERS};
	ls_hot_key	key = {1, 2, 3};
	setup		su = {0};
	ls_hot_ctx *ctx;
	pid_t		pids[NWRITERS + NREADERS];

	assert_true(region != MAP_FAILED && ctl != MAP_FAILED);
	memset(ctl, 0, sizeof(*ctl));
	atomic_store(&ctl->counter, 1);
	assert_int_equal(ls_hot_init(region, size, &cfg, &su.hot), LS_OK);
	assert_int_equal(ls_hot_attach(su.hot, 0, &ctx), LS_OK);
	assert_int_equal(ls_hot_table_create(ctx, key, &su.tbl), LS_OK);
	su.ctl = ctl;
	su.nrows = small ? 2048 : 8192;
	su.duration_ns = (small ? 3 : 6) * UINT64_C(1000000000);

	for (uint32_t i = 0; i < NWRITERS + NREADERS; i++)
	{
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0)
		{
			/*
			 * A child must never unwind into cmocka's handlers (they would
			 * run the rest of the suite in the child) and must never hang:
			 * crash or time out and let the parent see it.
			 */
			int			sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};

			for (size_t k = 0; k < sizeof(sigs) / sizeof(sigs[0]); k++)
				signal(sigs[k], SIG_DFL);
			alarm((unsigned) (su.duration_ns / UINT64_C(1000000000)) + 60);
			if (i < NWRITERS)
				writer_main(&su, 1 + i);
			else
				reader_main(&su, 1 + i);
			_exit(0);
		}
	}
	int			bad_children = 0;
	int			bad_status = 0;

	for (uint32_t i = 0; i < NWRITERS + NREADERS; i++)
	{
		int			status;

		if (waitpid(pids[i], &status, 0) != pids[i] ||
			!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		{
			bad_children++;
			bad_status = status;
		}
	}
	if (bad_children != 0)
		fail_msg("%d children crashed or hung (wait status 0x%x); %llu errors, first: %s",
				 bad_children, bad_status,
				 (unsigned long long) atomic_load(&ctl->errors), ctl->first_error);
	if (atomic_load(&ctl->errors) != 0)
		fail_msg("%llu errors, first: %s", (unsigned long long) atomic_load(&ctl->errors),
				 ctl->first_error);
	printf("stress: writer ops %llu, reader rows %llu, reader versions %llu, "
		   "slow checks %llu, verifies %llu, no-space %llu, references held %llu, stale %llu\n",
		   (unsigned long long) atomic_load(&ctl->writer_ops),
		   (unsigned long long) atomic_load(&ctl->reader_rows),
		   (unsigned long long) atomic_load(&ctl->reader_versions),
		   (unsigned long long) atomic_load(&ctl->slow_checks),
		   (unsigned long long) atomic_load(&ctl->verifies),
		   (unsigned long long) atomic_load(&ctl->no_space),
		   (unsigned long long) atomic_load(&ctl->ref_hits),
		   (unsigned long long) atomic_load(&ctl->ref_stale));
	/* the run did real work on both sides */
	assert_true(atomic_load(&ctl->writer_ops) > 10000);
	assert_true(atomic_load(&ctl->reader_versions) > 10000);
	assert_true(atomic_load(&ctl->slow_checks) > 20);
	/* references were used both ways */
	assert_true(atomic_load(&ctl->ref_hits) > 10);
	assert_true(atomic_load(&ctl->ref_stale) > 10);

	assert_true(atomic_load(&ctl->verifies) > 0);

	recount(&su, ctx);
	assert_int_equal(atomic_load(&ctl->errors), 0);
	char		msg[256];

	ls_hot_epoch_enter(ctx);
	if (ls_hot_table_verify(su.tbl, true, msg, sizeof(msg)) != LS_OK)
		fail_msg("%s", msg);
	ls_hot_epoch_exit(ctx);
	if (ls_hot_verify(su.hot, true, msg, sizeof(msg)) != LS_OK)
		fail_msg("%s", msg);

	/* drop everything: the whole heap is free again */
	ls_hot_stats s;

	ls_hot_table_drop(ctx, su.tbl);
	ls_hot_reclaim(ctx);
	ls_hot_detach(ctx);
	ls_hot_get_stats(su.hot, &s);
	assert_int_equal(s.rows, 0);
	assert_int_equal(s.versions, 0);
	assert_int_equal(s.used_bytes, 0);
	assert_int_equal(s.retired_pending, 0);
	assert_int_equal(s.slack_bytes, 0);
	assert_int_equal(s.free_bytes, s.heap_bytes);
	munmap(region, size);
	munmap(ctl, sizeof(*ctl));
}

/* ---- sparse blocks: scans never miss a published row -------------------------- */

/*
 * Inserters fill virtual blocks the way a table of pgbench_accounts rows
 * does (rows in the first 61 rowids of every 291; two inserters interleave
 * inside each block so they share bitmap words), some rows are removed to
 * NULL, to DEAD, or to DEAD and forgotten right after their insert; two
 * churners insert, remove and forget again and again at rowids 61..80 of
 * the blocks (the same leaves and bitmap words, and the same rowids as each
 * other: slots going back to NULL and filled again).  Scanners note the
 * inserters' progress, then scan: every row (and every kept DEAD rowid)
 * whose insert had returned before the scan started must be returned.
 */
#define SP_BLOCK	291
#define SP_FILL		61
#define SP_CHURN	20			/* churn rowids: offsets SP_FILL .. +SP_CHURN */
#define SP_INS		2
#define SP_CHURNERS	2
#define SP_SCANNERS	2
#define SP_WORKERS	(SP_INS + SP_CHURNERS + SP_SCANNERS)

enum
{
	SP_STABLE, SP_TO_NULL, SP_TO_DEAD, SP_FORGOTTEN
};

typedef struct sp_ctl
{
	ls_hot	   *hot;
	ls_hot_table *tbl;
	uint64_t	nblocks;
	_Atomic uint64_t progress[SP_INS];	/* inserts returned, per inserter */
	_Atomic uint32_t ins_done;
	_Atomic uint64_t scans;
	_Atomic uint64_t scans_during_inserts;
	_Atomic uint64_t checked;
	_Atomic uint64_t churn_ops;
} sp_ctl;

static int
sp_kind(uint64_t rowid)
{
	uint64_t	h = (rowid * UINT64_C(0x9E3779B97F4A7C15)) >> 60;

	return h < 2 ? SP_TO_NULL : h < 4 ? SP_TO_DEAD : h < 5 ? SP_FORGOTTEN : SP_STABLE;
}

/* k-th rowid inserted by inserter p */
static uint64_t
sp_rowid(int p, uint64_t k)
{
	uint64_t	per_block = (SP_FILL - (uint64_t) p + SP_INS - 1) / SP_INS;

	return (k / per_block) * SP_BLOCK + (uint64_t) p + SP_INS * (k % per_block);
}

static ls_status
sp_insert(ls_hot_ctx *ctx, sp_ctl *c, uint64_t rowid, ls_hot_row **row)
{
	ls_hot_version *v;
	ls_status	st = ls_hot_version_alloc(ctx, 16, &v);

	if (st != LS_OK)
		return st;
	memcpy(v->data, &rowid, 8);
	memset(v->data + 8, 0x5a, 8);
	st = ls_hot_row_insert(ctx, c->tbl, rowid, LS_ORIGIN_INSERTED, v, row);
	if (st != LS_OK)
		ls_hot_version_free(ctx, v);
	return st;
}

static int
sp_inserter(sp_ctl *c, ls_hot_ctx *ctx, int p)
{
	uint64_t	total = c->nblocks * ((SP_FILL - (uint64_t) p + SP_INS - 1) / SP_INS);

	for (uint64_t k = 0; k < total; k++)
	{
		uint64_t	rowid = sp_rowid(p, k);
		int			kind = sp_kind(rowid);
		ls_hot_row *row;

		ls_hot_epoch_enter(ctx);
		TU_CHECK(sp_insert(ctx, c, rowid, &row) == LS_OK);
		if (kind != SP_STABLE)
		{
			ls_hot_row_lock(row);
			ls_hot_row_remove(ctx, c->tbl, row, kind != SP_TO_NULL);
			if (kind == SP_FORGOTTEN)
				ls_hot_rowid_forget(ctx, c->tbl, rowid);
		}
		ls_hot_epoch_exit(ctx);
		atomic_store_explicit(&c->progress[p], k + 1, memory_order_release);
		if (k % 512 == 511)
			sched_yield();		/* two cores: let the scanners in */
	}
	return 0;
}

static int
sp_churner(sp_ctl *c, ls_hot_ctx *ctx, int w)
{
	uint64_t	rng = 0x5eed + (uint64_t) w * 7717;
	uint64_t	ops = 0;

	while (atomic_load(&c->ins_done) < SP_INS)
	{
		/* churn near where the inserters are, so that leaves exist */
		uint64_t	front = sp_rowid(0, atomic_load(&c->progress[0])) / SP_BLOCK + 2;
		uint64_t	rowid = (ls_rand_next(&rng) % LS_MIN(front, c->nblocks)) * SP_BLOCK +
			SP_FILL + ls_rand_next(&rng) % SP_CHURN;
		ls_hot_row *row;
		ls_status	st;

		ls_hot_epoch_enter(ctx);
		row = ls_hot_row_get(c->tbl, rowid);
		if (row != NULL)
		{
			ls_hot_row_lock(row);
			if (ls_hot_row_is_removed(row))
				ls_hot_row_unlock(row);
			else
				ls_hot_row_remove(ctx, c->tbl, row, ls_rand_next(&rng) % 2 == 0);
		}
		else if (ls_hot_rowid_is_dead(c->tbl, rowid))
			ls_hot_rowid_forget(ctx, c->tbl, rowid);
		else
		{
			st = sp_insert(ctx, c, rowid, NULL);
			TU_CHECK(st == LS_OK || st == LS_EXISTS);
		}
		ls_hot_epoch_exit(ctx);
		ops++;
	}
	atomic_fetch_add(&c->churn_ops, ops);
	return 0;
}

static int
sp_scanner(sp_ctl *c, ls_hot_ctx *ctx, int w)
{
	uint64_t	n = c->nblocks * SP_BLOCK;
	uint8_t    *seen = calloc(n, 1);
	uint64_t	rng = 0xca11 + (uint64_t) w * 104729;
	bool		last = false;

	TU_CHECK(seen != NULL);
	while (!last)
	{
		uint64_t	snap[SP_INS];
		uint64_t	lo = 0,
					hi = n;
		int			mode = (int) (ls_rand_next(&rng) % 4);	/* next, batch, dead, next */
		uint32_t	bs = 1 + (uint32_t) (ls_rand_next(&rng) % 64);
		uint64_t	prev = 0;
		bool		any = false;

		last = atomic_load(&c->ins_done) == SP_INS;
		for (int p = 0; p < SP_INS; p++)
			snap[p] = atomic_load_explicit(&c->progress[p], memory_order_acquire);
		if (ls_rand_next(&rng) % 2 == 0)
		{
			lo = ls_rand_next(&rng) % n;
			hi = lo + ls_rand_next(&rng) % (64 * SP_BLOCK);
		}
		memset(seen + lo, 0, LS_MIN(hi, n) - lo);

		uint64_t	cursor = lo;

		ls_hot_epoch_enter(ctx);
		for (;;)
		{
			ls_hot_row *batch[64];
			uint64_t	rowids[64];
			uint32_t	got = 0;

			if (mode == 2)
				got = ls_hot_scan_next_dead(c->tbl, &cursor, hi, &rowids[0]) ? 1 : 0;
			else if (mode == 1)
				got = ls_hot_scan_batch(c->tbl, &cursor, hi, batch, bs);
			else if ((batch[0] = ls_hot_scan_next(c->tbl, &cursor, hi)) != NULL)
				got = 1;
			for (uint32_t i = 0; i < got; i++)
			{
				uint64_t	r = mode == 2 ? rowids[i] : batch[i]->rowid;
				uint64_t	off = r % SP_BLOCK;

				if (mode != 2)
				{
					ls_hot_version *v = ls_hot_row_newest(batch[i]);
					uint64_t	tag = r;

					if (v != NULL)	/* NULL: removed meanwhile */
						memcpy(&tag, v->data, 8);
					TU_CHECK(tag == r);
				}
				TU_CHECK(r >= lo && r < hi && r < n);
				if (any && r <= prev)
				{
					/* rowids must rise: say enough to tell a map bug from reuse */
					fprintf(stderr, "scanner %d: mode %d batch %u returned rowid %llu "
							"after %llu (scan of [%llu, %llu), cursor now %llu, item %u "
							"of %u, row %p, its row_get %p)\n", w, mode, bs,
							(unsigned long long) r, (unsigned long long) prev,
							(unsigned long long) lo, (unsigned long long) hi,
							(unsigned long long) cursor, i, got,
							mode == 2 ? NULL : (void *) batch[i],
							(void *) ls_hot_row_get(c->tbl, r));
					return 1;
				}
				any = true;
				prev = r;
				/* only rowids someone uses; DEAD only where it can be */
				TU_CHECK(off < SP_FILL + SP_CHURN);
				TU_CHECK(mode != 2 || off >= SP_FILL || sp_kind(r) == SP_TO_DEAD ||
						 sp_kind(r) == SP_FORGOTTEN);
				seen[r] = 1;
			}
			if (mode == 1 ? got < bs : got == 0)
				break;
		}
		ls_hot_epoch_exit(ctx);

		/* everything published before the scan started was returned */
		uint64_t	checked = 0;

		for (int p = 0; p < SP_INS; p++)
			for (uint64_t k = 0; k < snap[p]; k++)
			{
				uint64_t	r = sp_rowid(p, k);
				int			kind = sp_kind(r);

				if (r < lo || r >= hi)
					continue;
				if (mode == 2 ? kind == SP_TO_DEAD : kind == SP_STABLE)
				{
					if (!seen[r])
					{
						fprintf(stderr, "scanner %d: mode %d missed rowid %llu "
								"(published before the scan of [%llu, %llu))\n", w, mode,
								(unsigned long long) r, (unsigned long long) lo,
								(unsigned long long) hi);
						return 1;
					}
					checked++;
				}
			}
		atomic_fetch_add(&c->checked, checked);
		atomic_fetch_add(&c->scans, 1);
		if (!last)
			atomic_fetch_add(&c->scans_during_inserts, 1);
	}
	free(seen);
	return 0;
}

static int
sp_worker(int w, void *arg)
{
	sp_ctl	   *c = arg;
	ls_hot_ctx *ctx;
	int			rc;

	TU_CHECK(ls_hot_attach(c->hot, 1 + (uint32_t) w, &ctx) == LS_OK);
	if (w < SP_INS)
	{
		rc = sp_inserter(c, ctx, w);
		atomic_fetch_add(&c->ins_done, 1);
	}
	else if (w < SP_INS + SP_CHURNERS)
		rc = sp_churner(c, ctx, w);
	else
		rc = sp_scanner(c, ctx, w);
	ls_hot_detach(ctx);
	return rc;
}

static void
test_sparse_scans_never_miss(void **state)
{
	(void) state;
	bool		small = asan_scale();
	size_t		size = small ? (48u << 20) : (160u << 20);
	void	   *region = tu_shared_region(size);
	sp_ctl	   *c = tu_shared_region(sizeof(sp_ctl));
	ls_hot_config cfg = {.max_tables = 4, .max_procs = 1 + SP_WORKERS};
	ls_hot_key	key = {1, 2, 4};
	ls_hot_ctx *ctx;
	char		msg[256];

	assert_int_equal(ls_hot_init(region, size, &cfg, &c->hot), LS_OK);
	assert_int_equal(ls_hot_attach(c->hot, 0, &ctx), LS_OK);
	assert_int_equal(ls_hot_table_create(ctx, key, &c->tbl), LS_OK);
	c->nblocks = small ? 1000 : 4000;

	int			failed = tu_fork_workers(SP_WORKERS, sp_worker, c);

	printf("sparse: %llu scans (%llu while inserting), %llu rows checked, %llu churn ops\n",
		   (unsigned long long) atomic_load(&c->scans),
		   (unsigned long long) atomic_load(&c->scans_during_inserts),
		   (unsigned long long) atomic_load(&c->checked),
		   (unsigned long long) atomic_load(&c->churn_ops));
	assert_int_equal(failed, 0);
	assert_true(atomic_load(&c->scans_during_inserts) > 0);
	assert_true(atomic_load(&c->churn_ops) > 0);

	/* at rest: bit == non-NULL slot everywhere, counters exact */
	ls_hot_epoch_enter(ctx);
	if (ls_hot_table_verify(c->tbl, true, msg, sizeof(msg)) != LS_OK)
		fail_msg("%s", msg);
	ls_hot_epoch_exit(ctx);
	ls_hot_table_drop(ctx, c->tbl);
	ls_hot_reclaim(ctx);
	ls_hot_detach(ctx);
	tu_free_region(c, sizeof(sp_ctl));
	tu_free_region(region, size);
}

/* ---- RID-map chunks: creation races, scans and lookups racing with them ------ */

/*
 * Round k uses one fresh chunk (rowids CR_BASE(k) .. + HOT_CHUNK_SLOTS, two
 * untouched chunks between rounds, a fresh leaf every ~10 rounds).  All
 * inserters meet at a barrier, then insert into that chunk at once: each
 * its own rowids (p, p + CR_INS, ...) and all of them the chunk's last
 * rowid (exactly one wins), odd inserters starting with the shared one, so
 * the first inserts of a round race to publish the chunk (and sometimes the
 * leaf).  Readers scan (next / batch) and look up (plain and with a leaf
 * hint kept across rounds) while that happens: every row whose insert had
 * returned before the scan began must be found, every row found must be
 * the one inserted at its rowid.  At rest: exactly one chunk per round,
 * exact verify, and every byte back after the drop (a losing chunk that
 * leaked or a winner that was overwritten would show).
 */
#define CR_INS		4
#define CR_READERS	2
#define CR_WORKERS	(CR_INS + CR_READERS)
#define CR_BASE(k)	((uint64_t) (k) * 3 * HOT_CHUNK_SLOTS)
#define CR_SHARED(k)	(CR_BASE(k) + HOT_CHUNK_SLOTS - 1)

typedef struct cr_ctl
{
	ls_hot	   *hot;
	ls_hot_table *tbl;
	uint64_t	rounds;
	_Atomic uint64_t arrived;	/* barrier: CR_INS per round */
	_Atomic uint64_t progress[CR_INS];	/* rounds whose inserts returned */
	_Atomic uint64_t shared_wins;
	_Atomic uint32_t ins_done;
	_Atomic uint64_t scans;
	_Atomic uint64_t scans_racing;
	_Atomic uint64_t checked;
	_Atomic uint64_t lookups;
} cr_ctl;

static ls_status
cr_insert(ls_hot_ctx *ctx, cr_ctl *c, uint64_t rowid)
{
	ls_hot_version *v;
	ls_status	st = ls_hot_version_alloc(ctx, 16, &v);

	if (st != LS_OK)
		return st;
	memcpy(v->data, &rowid, 8);
	memset(v->data + 8, 0xc4, 8);
	st = ls_hot_row_insert(ctx, c->tbl, rowid, LS_ORIGIN_INSERTED, v, NULL);
	if (st != LS_OK)
		ls_hot_version_free(ctx, v);
	return st;
}

static int
cr_inserter(cr_ctl *c, ls_hot_ctx *ctx, int p)
{
	for (uint64_t k = 0; k < c->rounds; k++)
	{
		uint64_t	spins = 0;
		ls_status	st;

		atomic_fetch_add(&c->arrived, 1);
		while (atomic_load(&c->arrived) < (k + 1) * CR_INS)
			if (++spins % 64 == 0)
				sched_yield();	/* two cores: let the others arrive */
		ls_hot_epoch_enter(ctx);
		if (p % 2 == 1)
		{
			st = cr_insert(ctx, c, CR_SHARED(k));
			TU_CHECK(st == LS_OK || st == LS_EXISTS);
			if (st == LS_OK)
				atomic_fetch_add(&c->shared_wins, 1);
		}
		for (uint64_t r = CR_BASE(k) + (uint64_t) p; r < CR_SHARED(k); r += CR_INS)
			TU_CHECK(cr_insert(ctx, c, r) == LS_OK);
		if (p % 2 == 0)
		{
			st = cr_insert(ctx, c, CR_SHARED(k));
			TU_CHECK(st == LS_OK || st == LS_EXISTS);
			if (st == LS_OK)
				atomic_fetch_add(&c->shared_wins, 1);
		}
		ls_hot_epoch_exit(ctx);
		atomic_store_explicit(&c->progress[p], k + 1, memory_order_release);
	}
	return 0;
}

static int
cr_check_row(ls_hot_row *row, uint64_t rowid)
{
	ls_hot_version *v = ls_hot_row_newest(row);
	uint64_t	tag;

	TU_CHECK(row->rowid == rowid);
	TU_CHECK(v != NULL);		/* nobody removes here */
	memcpy(&tag, v->data, 8);
	TU_CHECK(tag == rowid);
	return 0;
}

static int
cr_reader(cr_ctl *c, ls_hot_ctx *ctx, int w)
{
	uint64_t	n = CR_BASE(c->rounds);
	uint8_t    *seen = calloc(n, 1);
	uint64_t	rng = 0xc0ffee + (uint64_t) w * 31;
	ls_hot_map_hint hint = {0};
	bool		last = false;

	TU_CHECK(seen != NULL);
	while (!last)
	{
		uint64_t	done = UINT64_MAX,
					front = 0;
		int			mode = (int) (ls_rand_next(&rng) % 3);	/* next, batch, lookups */
		uint32_t	bs = 1 + (uint32_t) (ls_rand_next(&rng) % 64);

		last = atomic_load(&c->ins_done) == CR_INS;
		for (int p = 0; p < CR_INS; p++)
		{
			uint64_t	pr = atomic_load_explicit(&c->progress[p], memory_order_acquire);

			done = LS_MIN(done, pr);
			front = LS_MAX(front, pr);
		}
		/* rows of every round < done were published before we start */
		uint64_t	lo = done > 4 ? CR_BASE(done - 4) : 0;
		uint64_t	hi = LS_MIN(n, CR_BASE(front + 2));
		uint64_t	cursor = lo,
					checked = 0;

		ls_hot_epoch_enter(ctx);
		if (mode == 2)
		{
			/* lookups of the racing rounds (found or not) and the done ones */
			for (uint64_t r = lo; r < hi; r++)
			{
				ls_hot_row *row = (r & 1) ? ls_hot_row_get_hinted(c->tbl, r, &hint)
					: ls_hot_row_get(c->tbl, r);
				uint64_t	off = r % (3 * HOT_CHUNK_SLOTS);

				if (row != NULL)
				{
					TU_CHECK(off < HOT_CHUNK_SLOTS);
					if (cr_check_row(row, r) != 0)
						return 1;
				}
				else if (off < HOT_CHUNK_SLOTS && r < CR_BASE(done))
				{
					fprintf(stderr, "reader %d: lookup missed rowid %llu (round %llu done)\n",
							w, (unsigned long long) r,
							(unsigned long long) (r / (3 * HOT_CHUNK_SLOTS)));
					return 1;
				}
				checked++;
			}
			atomic_fetch_add(&c->lookups, checked);
		}
		else
		{
			memset(seen + lo, 0, hi - lo);
			for (;;)
			{
				ls_hot_row *batch[64];
				uint32_t	got = 0;

				if (mode == 1)
					got = ls_hot_scan_batch(c->tbl, &cursor, hi, batch, bs);
				else if ((batch[0] = ls_hot_scan_next(c->tbl, &cursor, hi)) != NULL)
					got = 1;
				for (uint32_t i = 0; i < got; i++)
				{
					uint64_t	r = batch[i]->rowid;

					TU_CHECK(r >= lo && r < hi);
					TU_CHECK(!seen[r]);
					TU_CHECK(r % (3 * HOT_CHUNK_SLOTS) < HOT_CHUNK_SLOTS);
					if (cr_check_row(batch[i], r) != 0)
						return 1;
					seen[r] = 1;
				}
				if (mode == 1 ? got < bs : got == 0)
					break;
			}
			for (uint64_t r = lo; r < LS_MIN(hi, CR_BASE(done)); r++)
				if (r % (3 * HOT_CHUNK_SLOTS) < HOT_CHUNK_SLOTS)
				{
					if (!seen[r])
					{
						fprintf(stderr, "reader %d: mode %d missed rowid %llu "
								"(round %llu done before the scan of [%llu, %llu))\n",
								w, mode, (unsigned long long) r,
								(unsigned long long) (r / (3 * HOT_CHUNK_SLOTS)),
								(unsigned long long) lo, (unsigned long long) hi);
						return 1;
					}
					checked++;
				}
			atomic_fetch_add(&c->scans, 1);
			if (front > done || !last)
				atomic_fetch_add(&c->scans_racing, 1);
		}
		ls_hot_epoch_exit(ctx);
		atomic_fetch_add(&c->checked, checked);
		if (!last)
			sched_yield();
	}
	free(seen);
	return 0;
}

static int
cr_worker(int w, void *arg)
{
	cr_ctl	   *c = arg;
	ls_hot_ctx *ctx;
	int			rc;

	TU_CHECK(ls_hot_attach(c->hot, 1 + (uint32_t) w, &ctx) == LS_OK);
	if (w < CR_INS)
	{
		rc = cr_inserter(c, ctx, w);
		atomic_fetch_add(&c->ins_done, 1);
	}
	else
		rc = cr_reader(c, ctx, w);
	ls_hot_detach(ctx);
	return rc;
}

static void
test_chunk_creation_races(void **state)
{
	(void) state;
	size_t		size = 96u << 20;
	void	   *region = tu_shared_region(size);
	cr_ctl	   *c = tu_shared_region(sizeof(cr_ctl));
	ls_hot_config cfg = {.max_tables = 4, .max_procs = 1 + CR_WORKERS};
	ls_hot_key	key = {1, 2, 5};
	ls_hot_ctx *ctx;
	ls_hot_table_stats ts;
	ls_hot_stats s;
	char		msg[256];
	uint64_t	chunks = 0;

	assert_int_equal(ls_hot_init(region, size, &cfg, &c->hot), LS_OK);
	assert_int_equal(ls_hot_attach(c->hot, 0, &ctx), LS_OK);
	assert_int_equal(ls_hot_table_create(ctx, key, &c->tbl), LS_OK);
	c->rounds = asan_scale() ? 400 : 3000;

	int			failed = tu_fork_workers(CR_WORKERS, cr_worker, c);

	printf("chunks: %llu rounds, %llu scans (%llu racing inserts), %llu rows checked, "
		   "%llu lookups\n", (unsigned long long) c->rounds,
		   (unsigned long long) atomic_load(&c->scans),
		   (unsigned long long) atomic_load(&c->scans_racing),
		   (unsigned long long) atomic_load(&c->checked),
		   (unsigned long long) atomic_load(&c->lookups));
	assert_int_equal(failed, 0);
	assert_int_equal(atomic_load(&c->shared_wins), c->rounds);
	assert_true(atomic_load(&c->scans_racing) > 0);

	/* at rest: one chunk per round, every row there, counters exact */
	ls_hot_epoch_enter(ctx);
	if (ls_hot_table_verify(c->tbl, true, msg, sizeof(msg)) != LS_OK)
		fail_msg("%s", msg);
	for (uint64_t base = 0; base < CR_BASE(c->rounds); base += HOT_MAP_FANOUT)
	{
		ls_hot_map_hint h = {0};

		(void) ls_hot_row_get_hinted(c->tbl, base, &h);
		for (uint32_t i = 0; h.leaf != NULL && i < HOT_LEAF_CHUNKS; i++)
			chunks += atomic_load(&((hot_map_node *) h.leaf)->slot[i]) != 0;
	}
	assert_int_equal(chunks, c->rounds);
	ls_hot_table_get_stats(c->tbl, &ts);
	assert_int_equal(ts.rows, c->rounds * HOT_CHUNK_SLOTS);
	ls_hot_epoch_exit(ctx);

	/* drop: every byte comes back (no chunk leaked by a lost race) */
	ls_hot_table_drop(ctx, c->tbl);
	ls_hot_reclaim(ctx);
	ls_hot_detach(ctx);
	ls_hot_get_stats(c->hot, &s);
	assert_int_equal(s.used_bytes, 0);
	assert_int_equal(s.retired_pending, 0);
	assert_int_equal(s.free_bytes + s.slack_bytes, s.heap_bytes);
	tu_free_region(c, sizeof(cr_ctl));
	tu_free_region(region, size);
}

/* ---- RID-map chunks and nodes freed while others insert and read ---------- */

/*
 * CF_CHUNKS chunks spread over four subtrees (two leaves under one level-2
 * node, another level-2 node, another level-1 node), CF_OWNERS rowids used
 * in each.  Owner p alone changes rowid cf_rowid(k, p) of every chunk k,
 * so it knows each of its slots exactly: it inserts, installs versions,
 * evicts, removes (to NULL or DEAD), forgets DEAD, has inserts on DEAD
 * refused, and after every change checks that lookups show exactly its
 * model.  The owners of one chunk empty and refill it together, so chunks
 * (and, all four chunks of a leaf being empty at once, leaves; inner nodes
 * stay) are freed and created again and again while the others insert
 * into them.  Readers look rows up (plain, and with hints kept across
 * epochs), scan live and DEAD slots, ask used_end, verify structure, and
 * hold a chunk across yields: what they see must belong to the rowid they
 * asked for, and memory they reached inside an epoch must not change.
 * At the end: exact verify, a chunk exactly where an owner's model has a
 * slot, and once everything is emptied only inner nodes are left (no
 * leaf), in the table's bytes and in the tier's.
 */
#define CF_OWNERS	4
#define CF_READERS	2
#define CF_WORKERS	(CF_OWNERS + CF_READERS)
#define CF_CHUNKS	16
#define CF_GROUPS	4
#define CF_STRIDE	(2 * HOT_CHUNK_SLOTS)	/* an untouched chunk between */

enum
{
	CF_NULL = 0, CF_ROW, CF_DEAD
};

typedef struct cf_ctl
{
	ls_hot	   *hot;
	ls_hot_table *tbl;
	uint64_t	duration_ns;
	_Atomic uint32_t owners_done;
	_Atomic uint32_t emptied;	/* owners that emptied their slots */
	_Atomic uint64_t owner_ops;
	_Atomic uint64_t reader_rows;
	_Atomic uint64_t absent_chunks;	/* reader saw a leaf without chunk k */
	_Atomic uint64_t held_checks;
	_Atomic uint64_t verifies;
	uint8_t		model[CF_OWNERS][CF_CHUNKS];	/* final states */
} cf_ctl;

static const uint64_t cf_group_base[CF_GROUPS] = {
	0, HOT_MAP_FANOUT, UINT64_C(1) << 20, UINT64_C(1) << 30
};
static const uint32_t cf_offset[CF_OWNERS] = {0, 9, 22, HOT_CHUNK_SLOTS - 1};

static uint64_t
cf_rowid(int k, int p)
{
	return cf_group_base[k / (CF_CHUNKS / CF_GROUPS)] +
		(uint64_t) (k % (CF_CHUNKS / CF_GROUPS)) * CF_STRIDE + cf_offset[p];
}

/* The chunk and owner of rowid r, false when r is no rowid of the test. */
static bool
cf_owner_of(uint64_t r, int *k, int *p)
{
	for (int kk = 0; kk < CF_CHUNKS; kk++)
		for (int pp = 0; pp < CF_OWNERS; pp++)
			if (cf_rowid(kk, pp) == r)
			{
				*k = kk;
				*p = pp;
				return true;
			}
	return false;
}

static ls_status
cf_insert(ls_hot_ctx *ctx, cf_ctl *c, uint64_t rowid, uint64_t tag)
{
	ls_hot_version *v;
	ls_status	st = ls_hot_version_alloc(ctx, 16, &v);

	if (st != LS_OK)
		return st;
	memcpy(v->data, &rowid, 8);
	memcpy(v->data + 8, &tag, 8);
	st = ls_hot_row_insert(ctx, c->tbl, rowid, LS_ORIGIN_INSERTED, v, NULL);
	if (st != LS_OK)
		ls_hot_version_free(ctx, v);
	return st;
}

/* A row that readers found for rowid: its own, its versions intact. */
static int
cf_check_row(ls_hot_row *row, uint64_t rowid)
{
	TU_CHECK(row->rowid == rowid);
	for (ls_hot_version *v = ls_hot_row_newest(row); v != NULL; v = ls_hot_version_older(v))
	{
		uint64_t	r;

		TU_CHECK(v->len == 16);
		memcpy(&r, v->data, 8);
		TU_CHECK(r == rowid);
	}
	return 0;
}

/* Lookups of rowid show exactly the owner's model (and newest tag). */
static int
cf_check_own(cf_ctl *c, uint64_t rowid, int state, uint64_t tag)
{
	ls_hot_row *row = ls_hot_row_get(c->tbl, rowid);

	if ((row != NULL) != (state == CF_ROW) ||
		ls_hot_rowid_is_dead(c->tbl, rowid) != (state == CF_DEAD))
	{
		fprintf(stderr, "owner: rowid %llu should be %d, lookup %p dead %d\n",
				(unsigned long long) rowid, state, (void *) row,
				(int) ls_hot_rowid_is_dead(c->tbl, rowid));
		return 1;
	}
	if (row != NULL)
	{
		uint64_t	t;

		if (cf_check_row(row, rowid) != 0)
			return 1;
		memcpy(&t, ls_hot_row_newest(row)->data + 8, 8);
		TU_CHECK(t == tag);
	}
	return 0;
}

static int
cf_owner(cf_ctl *c, ls_hot_ctx *ctx, int p)
{
	uint8_t    *model = c->model[p];
	uint64_t	tags[CF_CHUNKS] = {0};
	uint64_t	rng = 0xf4ee + (uint64_t) p * 7121;
	uint64_t	ops = 0,
				tag = 1;
	uint64_t	deadline = ls_now_ns() + c->duration_ns;
	bool		draining = false;

	for (;;)
	{
		if (!draining && ls_now_ns() >= deadline)
			draining = true;	/* empty every slot, then stop */
		int			k = (int) (ls_rand_next(&rng) % CF_CHUNKS);
		uint64_t	r = cf_rowid(k, p);
		uint64_t	x = ls_rand_next(&rng) % 100;
		ls_hot_row *row;

		if (draining)
		{
			for (k = 0; k < CF_CHUNKS && model[k] == CF_NULL; k++)
				;
			if (k == CF_CHUNKS)
				break;
			r = cf_rowid(k, p);
			x = 0;
		}
		ls_hot_epoch_enter(ctx);
		switch (model[k])
		{
			case CF_NULL:
				if (x < 70)
				{
					TU_CHECK(cf_insert(ctx, c, r, tag) == LS_OK);
					tags[k] = tag++;
					model[k] = CF_ROW;
				}
				else
					ls_hot_rowid_forget(ctx, c->tbl, r);	/* no-op */
				break;
			case CF_ROW:
				row = ls_hot_row_get(c->tbl, r);
				TU_CHECK(row != NULL);
				ls_hot_row_lock(row);
				TU_CHECK(!ls_hot_row_is_removed(row));
				if (x >= 85)
				{
					ls_hot_version *v;

					TU_CHECK(ls_hot_version_alloc(ctx, 16, &v) == LS_OK);
					memcpy(v->data, &r, 8);
					memcpy(v->data + 8, &tag, 8);
					ls_hot_row_install(ctx, c->tbl, row, v);
					ls_hot_row_unlock(row);
					tags[k] = tag++;
				}
				else if (x < 40)
				{
					ls_hot_row_evict(ctx, c->tbl, row);
					model[k] = CF_NULL;
				}
				else
				{
					ls_hot_row_remove(ctx, c->tbl, row, x >= 65);
					model[k] = x >= 65 ? CF_DEAD : CF_NULL;
				}
				break;
			case CF_DEAD:
				if (x >= 80)
				{
					TU_CHECK(cf_insert(ctx, c, r, tag++) == LS_EXISTS);
					break;
				}
				ls_hot_rowid_forget(ctx, c->tbl, r);
				model[k] = CF_NULL;
				break;
		}
		if (cf_check_own(c, r, model[k], tags[k]) != 0)
			return 1;
		ls_hot_epoch_exit(ctx);
		if (++ops % 256 == 0)
			sched_yield();		/* two cores: let the readers in */
	}
	atomic_fetch_add(&c->owner_ops, ops);
	return 0;
}

static int
cf_reader(cf_ctl *c, ls_hot_ctx *ctx, int w)
{
	uint64_t	rng = 0xcf00 + (uint64_t) w * 104729;
	ls_hot_map_hint hints[CF_GROUPS] = {{0}};
	uint64_t	rows = 0;

	while (atomic_load(&c->owners_done) < CF_OWNERS)
	{
		int			k = (int) (ls_rand_next(&rng) % CF_CHUNKS);
		int			g = k / (CF_CHUNKS / CF_GROUPS);
		int			p = (int) (ls_rand_next(&rng) % CF_OWNERS);
		uint64_t	r = cf_rowid(k, p);
		uint64_t	x = ls_rand_next(&rng) % 100;

		ls_hot_epoch_enter(ctx);
		if (x < 40)
		{
			/* lookups: plain and hinted agree on what they may see */
			ls_hot_row *row = (x % 2) ? ls_hot_row_get(c->tbl, r)
				: ls_hot_row_get_hinted(c->tbl, r, &hints[g]);

			if (row != NULL)
			{
				if (cf_check_row(row, r) != 0)
					return 1;
				rows++;
			}
			(void) ls_hot_rowid_is_dead(c->tbl, r);
			(void) ls_hot_row_get_hinted(c->tbl, r + 1, &hints[g]);	/* never used */
		}
		else if (x < 80)
		{
			/* scans of a group: only the test's rowids, in order */
			uint64_t	lo = cf_group_base[g],
						hi = lo + (CF_CHUNKS / CF_GROUPS) * CF_STRIDE,
						cursor = lo,
						prev = 0;
			bool		dead = x >= 70,
						any = false;
			ls_hot_row *batch[8];
			uint64_t	got_rowid;

			for (;;)
			{
				uint32_t	got;

				if (dead)
					got = ls_hot_scan_next_dead(c->tbl, &cursor, hi, &got_rowid) ? 1 : 0;
				else
					got = ls_hot_scan_batch(c->tbl, &cursor, hi, batch, 8);
				for (uint32_t i = 0; i < got; i++)
				{
					uint64_t	rr = dead ? got_rowid : batch[i]->rowid;
					int			kk,
								pp;

					TU_CHECK(cf_owner_of(rr, &kk, &pp));
					TU_CHECK(!any || rr > prev);
					any = true;
					prev = rr;
					if (!dead && cf_check_row(batch[i], rr) != 0)
						return 1;
				}
				rows += got;
				if (dead ? got == 0 : got < 8)
					break;
			}
			uint64_t	end = ls_hot_table_used_end(c->tbl, hi, 0);
			uint64_t	above = ls_hot_table_used_end(c->tbl, hi, lo);
			int			kk,
						pp;

			TU_CHECK(end <= lo || cf_owner_of(end - 1, &kk, &pp));
			TU_CHECK(above == 0 || (above > lo && above <= hi &&
									cf_owner_of(above - 1, &kk, &pp)));
		}
		else if (x < 98)
		{
			/*
			 * Hold rowid's chunk across yields: freed or not meanwhile, it
			 * is not reused while we are in our epoch, so its slot reads
			 * NULL, DEAD, BUSY or a row of that rowid -- never poison.
			 */
			hot_map_node *leaf = hot_map_leaf_find(c->tbl, r);
			hot_map_chunk *chunk = leaf != NULL ? hot_map_chunk_of(leaf, r) : NULL;

			if (leaf != NULL && chunk == NULL)
				atomic_fetch_add(&c->absent_chunks, 1);
			if (chunk != NULL)
			{
				for (int i = 0; i < 10; i++)
					sched_yield();
				for (int q = 0; q < CF_OWNERS; q++)
				{
					uint64_t	rq = cf_rowid(k, q);
					uintptr_t	v = atomic_load(hot_chunk_slot(chunk, rq));

					if (HOT_SLOT_IS_ROW(v) && cf_check_row((ls_hot_row *) v, rq) != 0)
						return 1;
				}
				atomic_fetch_add(&c->held_checks, 1);
			}
		}
		else
		{
			char		msg[256];

			if (ls_hot_table_verify(c->tbl, false, msg, sizeof(msg)) != LS_OK)
			{
				fprintf(stderr, "reader %d: verify: %s\n", w, msg);
				return 1;
			}
			atomic_fetch_add(&c->verifies, 1);
		}
		ls_hot_epoch_exit(ctx);
	}
	atomic_fetch_add(&c->reader_rows, rows);
	return 0;
}

static int
cf_worker(int w, void *arg)
{
	cf_ctl	   *c = arg;
	ls_hot_ctx *ctx;
	int			rc;

	TU_CHECK(ls_hot_attach(c->hot, 1 + (uint32_t) w, &ctx) == LS_OK);
	if (w < CF_OWNERS)
	{
		rc = cf_owner(c, ctx, w);
		atomic_fetch_add(&c->owners_done, 1);
	}
	else
		rc = cf_reader(c, ctx, w);
	ls_hot_detach(ctx);
	return rc;
}

static void
test_chunk_free_races(void **state)
{
	(void) state;
	size_t		size = 32u << 20;
	void	   *region = tu_shared_region(size);
	cf_ctl	   *c = tu_shared_region(sizeof(cf_ctl));
	ls_hot_config cfg = {.max_tables = 4, .max_procs = 1 + CF_WORKERS};
	ls_hot_key	key = {1, 2, 6};
	ls_hot_ctx *ctx;
	ls_hot_table_stats ts;
	ls_hot_stats s;
	char		msg[256];
	uint64_t	gen0;

	assert_int_equal(ls_hot_init(region, size, &cfg, &c->hot), LS_OK);
	assert_int_equal(ls_hot_attach(c->hot, 0, &ctx), LS_OK);
	assert_int_equal(ls_hot_table_create(ctx, key, &c->tbl), LS_OK);
	c->duration_ns = (asan_scale() ? 2 : 4) * UINT64_C(1000000000);
	gen0 = atomic_load(&c->tbl->map_gen);

	int			failed = tu_fork_workers(CF_WORKERS, cf_worker, c);

	printf("chunk frees: %llu owner ops, %llu rows read, %llu absent chunks seen, "
		   "%llu held chunks checked, %llu verifies, %llu map nodes freed\n",
		   (unsigned long long) atomic_load(&c->owner_ops),
		   (unsigned long long) atomic_load(&c->reader_rows),
		   (unsigned long long) atomic_load(&c->absent_chunks),
		   (unsigned long long) atomic_load(&c->held_checks),
		   (unsigned long long) atomic_load(&c->verifies),
		   (unsigned long long) (atomic_load(&c->tbl->map_gen) - gen0));
	assert_int_equal(failed, 0);
	assert_true(atomic_load(&c->owner_ops) > 10000);
	assert_true(atomic_load(&c->held_checks) > 100);
	assert_true(atomic_load(&c->absent_chunks) > 0);	/* chunks were freed */
	assert_true(atomic_load(&c->tbl->map_gen) - gen0 > 10);	/* leaves freed */

	/* the owners emptied everything: only inner nodes are left */
	hot_map_node *root = atomic_load(&c->tbl->root);
	uint64_t	inner = 1;

	ls_hot_epoch_enter(ctx);
	if (ls_hot_table_verify(c->tbl, true, msg, sizeof(msg)) != LS_OK)
		fail_msg("%s", msg);
	assert_non_null(root);
	for (uint32_t i = 0; i < HOT_MAP_FANOUT; i++)
	{
		hot_map_node *l1 = (hot_map_node *) atomic_load(&root->slot[i]);

		inner += l1 != NULL;
		for (uint32_t j = 0; l1 != NULL && j < HOT_MAP_FANOUT; j++)
		{
			hot_map_node *l2 = (hot_map_node *) atomic_load(&l1->slot[j]);

			inner += l2 != NULL;
			for (uint32_t k = 0; l2 != NULL && k < HOT_MAP_FANOUT; k++)
				assert_int_equal(atomic_load(&l2->slot[k]), 0);	/* no leaf */
		}
	}
	ls_hot_epoch_exit(ctx);
	assert_true(inner >= 4);	/* root, two level-1 nodes, level-2 nodes */
	ls_hot_table_get_stats(c->tbl, &ts);
	assert_int_equal(ts.rows, 0);
	assert_int_equal(ts.dead_rowids, 0);
	assert_int_equal(ts.bytes, inner * hot_obj_size(c->hot, root));
	ls_hot_reclaim(ctx);
	ls_hot_get_stats(c->hot, &s);
	assert_int_equal(s.retired_pending, 0);
	assert_int_equal(s.used_bytes, ts.bytes);
	if (ls_hot_verify(c->hot, true, msg, sizeof(msg)) != LS_OK)
		fail_msg("%s", msg);

	ls_hot_table_drop(ctx, c->tbl);
	ls_hot_reclaim(ctx);
	ls_hot_detach(ctx);
	ls_hot_get_stats(c->hot, &s);
	assert_int_equal(s.used_bytes, 0);
	tu_free_region(c, sizeof(cf_ctl));
	tu_free_region(region, size);
}

/* ---- drops racing with removes, evicts and forgets ------------------------- */

/*
 * The glue's pack worker may evict rows (and its GC remove them) while a
 * backend drops their table; VACUUM's forget too in principle.  A dropper
 * creates a table, fills it (rows in a few chunks of two leaves, some DEAD),
 * publishes it, and drops it at a random moment while the others evict,
 * remove (to NULL and DEAD) and forget its rows as fast as they can.  Every
 * row, version, chunk and node must be retired exactly once: after all
 * rounds, with nobody inside an epoch, the whole heap is free again and the
 * allocator's own lists and counters agree (a double retire puts a block on
 * a free list twice and breaks both).
 */
#define DR_WORKERS	3
#define DR_ROWS		200

typedef struct dr_ctl
{
	ls_hot	   *hot;
	uint64_t	rounds;
	ls_hot_table *_Atomic current;
	_Atomic uint32_t done;
	_Atomic uint64_t ops;
	_Atomic uint64_t raced;		/* ops on a table whose drop had begun */
} dr_ctl;

static uint64_t
dr_rowid(uint64_t i)
{
	/* two leaves, chunks partly used */
	return (i % 2) * HOT_MAP_FANOUT + (i / 2) * 3;
}

static int
dr_dropper(dr_ctl *c, ls_hot_ctx *ctx)
{
	uint64_t	rng = 0xd209;

	for (uint64_t k = 0; k < c->rounds; k++)
	{
		ls_hot_key	key = {1, 2, 100 + (uint32_t) (k % 16)};
		ls_hot_table *tbl;
		ls_status	st = ls_hot_table_create(ctx, key, &tbl);

		/*
		 * No descriptor reusable yet: a worker descheduled inside its epoch
		 * holds back the reclamation of dropped ones (the test machine may
		 * be overloaded).  Reclaim and wait for it, a while: a descriptor
		 * that never comes back is a leak and fails the test.
		 */
		for (int wait = 0; st == LS_NO_SPACE && wait < 10000; wait++)
		{
			ls_hot_reclaim(ctx);
			usleep(1000);
			st = ls_hot_table_create(ctx, key, &tbl);
		}
		if (st != LS_OK)
		{
			fprintf(stderr, "dropper: round %llu: table create: %s\n",
					(unsigned long long) k, ls_status_str(st));
			return 1;
		}
		ls_hot_epoch_enter(ctx);
		for (uint64_t i = 0; i < DR_ROWS; i++)
		{
			ls_hot_version *v;
			ls_hot_row *row;
			uint64_t	r = dr_rowid(i);

			TU_CHECK(ls_hot_version_alloc(ctx, 24, &v) == LS_OK);
			memcpy(v->data, &r, 8);
			TU_CHECK(ls_hot_row_insert(ctx, tbl, r, LS_ORIGIN_INSERTED, v, &row) == LS_OK);
			if (i % 5 == 0)
			{
				ls_hot_row_lock(row);
				ls_hot_row_remove(ctx, tbl, row, true);
			}
		}
		ls_hot_epoch_exit(ctx);
		atomic_store(&c->current, tbl);
		/* let the others start on it, then drop it under them */
		uint64_t	spins = ls_rand_next(&rng) % 20000;

		for (uint64_t i = 0; i < spins; i++)
			ls_cpu_relax();
		if (ls_rand_next(&rng) % 4 == 0)
			sched_yield();
		ls_hot_table_drop(ctx, tbl);
		atomic_store(&c->current, NULL);
		ls_hot_reclaim(ctx);
	}
	return 0;
}

static int
dr_worker_loop(dr_ctl *c, ls_hot_ctx *ctx, int w)
{
	uint64_t	rng = 0xd2d2 + (uint64_t) w * 7919;
	uint64_t	ops = 0,
				raced = 0;

	while (atomic_load(&c->done) == 0)
	{
		ls_hot_epoch_enter(ctx);

		ls_hot_table *tbl = atomic_load(&c->current);

		if (tbl != NULL)
		{
			uint64_t	r = dr_rowid(ls_rand_next(&rng) % DR_ROWS);
			ls_hot_row *row = ls_hot_row_get(tbl, r);
			uint64_t	x = ls_rand_next(&rng) % 3;

			if (row != NULL)
			{
				uint64_t	tag;
				ls_hot_version *v = ls_hot_row_newest(row);

				if (v != NULL)
				{
					memcpy(&tag, v->data, 8);
					TU_CHECK(tag == r);
				}
				ls_hot_row_lock(row);
				if (ls_hot_row_is_removed(row))
					ls_hot_row_unlock(row);
				else if (x == 0)
					ls_hot_row_evict(ctx, tbl, row);
				else
					ls_hot_row_remove(ctx, tbl, row, x == 2);
			}
			else if (ls_hot_rowid_is_dead(tbl, r))
				ls_hot_rowid_forget(ctx, tbl, r);
			raced += atomic_load(&c->current) != tbl;
			ops++;
		}
		ls_hot_epoch_exit(ctx);
	}
	atomic_fetch_add(&c->ops, ops);
	atomic_fetch_add(&c->raced, raced);
	return 0;
}

static int
dr_worker(int w, void *arg)
{
	dr_ctl	   *c = arg;
	ls_hot_ctx *ctx;
	int			rc;

	TU_CHECK(ls_hot_attach(c->hot, 1 + (uint32_t) w, &ctx) == LS_OK);
	if (w == 0)
	{
		rc = dr_dropper(c, ctx);
		atomic_store(&c->done, 1);	/* also when it failed: no hang */
	}
	else
		rc = dr_worker_loop(c, ctx, w);
	ls_hot_detach(ctx);
	return rc;
}

static void
test_drop_races_removers(void **state)
{
	(void) state;
	size_t		size = 32u << 20;
	void	   *region = tu_shared_region(size);
	dr_ctl	   *c = tu_shared_region(sizeof(dr_ctl));
	ls_hot_config cfg = {.max_tables = 64, .max_procs = 1 + DR_WORKERS};
	ls_hot_ctx *ctx;
	ls_hot_stats s;
	char		msg[256];

	assert_int_equal(ls_hot_init(region, size, &cfg, &c->hot), LS_OK);
	c->rounds = asan_scale() ? 500 : 2000;

	int			failed = tu_fork_workers(DR_WORKERS, dr_worker, c);

	printf("drop races: %llu rounds, %llu ops, %llu on a table being dropped\n",
		   (unsigned long long) c->rounds, (unsigned long long) atomic_load(&c->ops),
		   (unsigned long long) atomic_load(&c->raced));
	assert_int_equal(failed, 0);
	assert_true(atomic_load(&c->raced) > 0);

	/* every object was retired once: the heap is whole again */
	assert_int_equal(ls_hot_attach(c->hot, 0, &ctx), LS_OK);
	ls_hot_reclaim(ctx);
	ls_hot_reclaim(ctx);
	ls_hot_detach(ctx);
	if (ls_hot_verify(c->hot, true, msg, sizeof(msg)) != LS_OK)
		fail_msg("%s", msg);
	ls_hot_get_stats(c->hot, &s);
	assert_int_equal(s.tables, 0);
	assert_int_equal(s.retired_pending, 0);
	assert_int_equal(s.used_bytes, 0);
	assert_int_equal(s.free_bytes + s.slack_bytes, s.heap_bytes);
	tu_free_region(c, sizeof(dr_ctl));
	tu_free_region(region, size);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_multiprocess_stress),
		cmocka_unit_test(test_sparse_scans_never_miss),
		cmocka_unit_test(test_chunk_creation_races),
		cmocka_unit_test(test_chunk_free_races),
		cmocka_unit_test(test_drop_races_removers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
