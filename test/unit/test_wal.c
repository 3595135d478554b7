/*
 * test_wal.c - leanstore's log (src/wal): appends, group-commit rounds,
 * segments, failures and the recovery reader.
 *
 * Every record's body is a pattern derived from (slot, seq), with seq kept
 * in the record's xid field, so the reader's output can be checked byte by
 * byte and per slot for order and completeness.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "leanstore/wal.h"
#include "../../src/wal/wal_internal.h"	/* the slot layout (GSN protocol test) */
#include "tu.h"

#define KIB 1024u

/* ------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------ */

typedef struct wt
{
	char	   *dir;
	void	   *region;
	size_t		size;
	ls_wal	   *wal;
	ls_wal_config cfg;
} wt;

static ls_wal_config
small_cfg(uint32_t slots)
{
	ls_wal_config c = {
		.max_slots = slots,
		.slot_buffer = 64 * KIB,
		.segment_size = 256 * KIB,
		.round_buffer = 128 * KIB,
	};

	return c;
}

/* A region over dir (a fresh temp dir when NULL), started at start. */
static void
wt_open(wt *t, ls_wal_config cfg, char *dir, uint64_t start, uint32_t prepare)
{
	memset(t, 0, sizeof(*t));
	t->cfg = cfg;
	t->dir = dir ? dir : tu_tempdir();
	t->size = ls_wal_region_size(&cfg);
	assert_true(t->size > 0);
	t->region = tu_shared_region(t->size);
	assert_int_equal(ls_wal_init(t->region, t->size, &cfg, &t->wal), LS_OK);
	assert_int_equal(ls_wal_set_dir(t->wal, t->dir), LS_OK);
	assert_int_equal(ls_wal_start(t->wal, start, start), LS_OK);
	if (prepare)
		assert_int_equal(ls_wal_prepare(t->wal, prepare), LS_OK);
}

/* Detach and unmap; the directory stays (returned) unless rm. */
static char *
wt_close(wt *t, bool rm)
{
	char	   *dir = t->dir;

	ls_wal_detach(t->wal);
	tu_free_region(t->region, t->size);
	if (rm)
	{
		tu_rm_rf(dir);
		free(dir);
		dir = NULL;
	}
	return dir;
}

static uint8_t
pattern_byte(uint32_t slot, uint32_t seq, uint32_t k)
{
	return (uint8_t) ((slot * 131u + seq * 7919u + k * 31u + (k >> 8)) & 0xff);
}

/* Append record (slot, seq) with a body of blen bytes, in two parts. */
static ls_status
app(ls_wal *wal, uint32_t slot, uint32_t seq, uint32_t blen, uint64_t *end, uint64_t *gsn)
{
	uint8_t    *body = malloc(blen ? blen : 1);
	ls_wal_rec	h = {.type = 7, .flags = (uint16_t) (seq & 0xffff), .xid = seq};

	if (body == NULL)
		abort();
	for (uint32_t k = 0; k < blen; k++)
		body[k] = pattern_byte(slot, seq, k);

	uint32_t	cut = blen / 3;
	const void *parts[2] = {body, body + cut};
	uint32_t	lens[2] = {cut, blen - cut};
	ls_status	st = ls_wal_append(wal, slot, &h, parts, lens, 2, end, gsn);

	free(body);
	return st;
}

static bool
body_ok(const ls_wal_rec *r)
{
	const uint8_t *b = (const uint8_t *) (r + 1);

	if (r->type != 7 || r->flags != (r->xid & 0xffff))
		return false;
	for (uint32_t k = 0; k + LS_WAL_REC_HDR < r->len; k++)
		if (b[k] != pattern_byte(r->slot, r->xid, k))
			return false;
	return true;
}

/* What the reader returned. */
typedef struct seen
{
	uint32_t	slot;
	uint32_t	seq;
	uint32_t	len;
	uint64_t	gsn;
	uint64_t	pos;
	uint64_t	round_min;		/* ls_wal_reader_round_min_gsn after it */
} seen;

typedef struct readout
{
	seen	   *recs;
	uint32_t	n;
	uint64_t	end;
	uint64_t	max_gsn;
	ls_status	last;			/* LS_NOT_FOUND at a clean end */
	bool		bodies_ok;
} readout;

static readout
read_all(const char *dir, uint64_t segsz, uint64_t start)
{
	readout		o = {.bodies_ok = true};
	uint32_t	cap = 1024;
	ls_wal_reader *r;

	o.recs = malloc(sizeof(seen) * cap);
	assert_int_equal(ls_wal_reader_open(dir, segsz, start, &r), LS_OK);
	for (;;)
	{
		const ls_wal_rec *rec;
		uint64_t	pos;

		o.last = ls_wal_reader_next(r, &rec, &pos);
		if (o.last != LS_OK)
			break;
		if (o.n == cap)
			o.recs = realloc(o.recs, sizeof(seen) * (cap *= 2));
		if (!body_ok(rec))
			o.bodies_ok = false;
		o.recs[o.n++] = (seen)
		{
			.slot = rec->slot,.seq = rec->xid,.len = rec->len,.gsn = rec->gsn,.pos = pos,
				.round_min = ls_wal_reader_round_min_gsn(r)
		};
	}
	o.end = ls_wal_reader_end(r);
	o.max_gsn = ls_wal_reader_max_gsn(r);
	ls_wal_reader_close(r);
	return o;
}

/*
 * Rounds are GSN prefixes (writer.c, round_select): cut the stream read
 * back into its rounds (a record starts one when it is the first record of
 * a START block) and check that, with GSNs 1..n handed out to records only,
 * each round holds exactly the GSNs following the previous rounds' ones,
 * and that the reader reported each record's round's smallest GSN (what
 * recovery's reordering relies on).  Returns the number of rounds.
 */
static uint32_t
check_rounds_prefix(const char *dir, uint64_t segsz, const readout *o)
{
	uint64_t	prev_max = 0,
				rmin = 0,
				rmax = 0,
				rcount = 0;
	uint32_t	rounds = 0;

	for (uint32_t k = 0; k <= o->n; k++)
	{
		bool		starts = (k == o->n);

		if (k < o->n)
		{
			uint64_t	pos = o->recs[k].pos;
			uint64_t	bp = pos - pos % LS_WAL_BLOCK;
			char		path[4096];
			wal_block_hdr h;
			int			fd;

			snprintf(path, sizeof(path), "%s/%016llX", dir, (unsigned long long) (bp / segsz));
			fd = open(path, O_RDONLY);
			assert_true(fd >= 0);
			assert_int_equal(pread(fd, &h, sizeof(h), (off_t) (bp % segsz)), (ssize_t) sizeof(h));
			close(fd);
			assert_int_equal(h.pos, bp);
			starts = (h.flags & WAL_BLK_START) != 0 &&
				pos - bp - LS_WAL_BLOCK_HDR == h.first;
		}
		if (starts && rcount > 0)
		{
			/* the round just ended: the GSNs right after the earlier ones */
			assert_int_equal(rmin, prev_max + 1);
			assert_int_equal(rmax - rmin + 1, rcount);
			for (uint32_t j = k - (uint32_t) rcount; j < k; j++)
				assert_int_equal(o->recs[j].round_min, rmin);
			prev_max = rmax;
			rcount = 0;
			rounds++;
		}
		if (k == o->n)
			break;
		assert_true(k > 0 || starts);
		if (rcount == 0 || o->recs[k].gsn < rmin)
			rmin = o->recs[k].gsn;
		if (rcount == 0 || o->recs[k].gsn > rmax)
			rmax = o->recs[k].gsn;
		rcount++;
	}
	assert_int_equal(prev_max, o->n);
	return rounds;
}

/* A round that prepares segments when it runs out of them. */
static ls_status
round_prepared(ls_wal *wal, ls_wal_round_stats *stats)
{
	ls_status	st = ls_wal_round(wal, stats);

	if (st == LS_NO_SPACE)
	{
		assert_int_equal(ls_wal_prepare(wal, 2), LS_OK);
		st = ls_wal_round(wal, stats);
	}
	return st;
}

/* Body length: mostly small, some spanning blocks, a few near the maximum. */
static uint32_t
rand_body(uint64_t *rs, uint32_t max_record)
{
	uint64_t	x = ls_rand_next(rs);

	switch (x % 20)
	{
		case 0:
			return (uint32_t) ((x >> 8) % (max_record - LS_WAL_REC_HDR + 1));
		case 1:
		case 2:
		case 3:
		case 4:
			return (uint32_t) ((x >> 8) % 4000);
		default:
			return (uint32_t) ((x >> 8) % 300);
	}
}

typedef struct expect
{
	uint32_t	slot;
	uint32_t	seq;
	uint32_t	len;
	uint64_t	gsn;
} expect;

/* ------------------------------------------------------------------------
 * Round trip
 * ------------------------------------------------------------------------ */

static void
round_trip(bool plain_io)
{
	wt			t;
	ls_wal_config cfg = small_cfg(4);
	uint32_t	n = (uint32_t) tu_scaled(3000);
	expect	   *ex = calloc(n, sizeof(expect));
	uint32_t	seqs[4] = {0};
	uint64_t	last_end[4] = {0};
	uint64_t	rs = 42;
	uint32_t	maxrec = ls_wal_max_record(&cfg);
	uint64_t	rounds = 0,
				spanning = 0,
				wrapped = 0;

	wt_open(&t, cfg, NULL, 0, 2);
	if (plain_io)
		ls_wal_inject_fault(t.wal, 3, 0);
	for (uint32_t i = 0; i < n; i++)
	{
		uint32_t	slot = (uint32_t) (ls_rand_next(&rs) % 4);
		uint32_t	blen = rand_body(&rs, maxrec);
		uint64_t	end,
					gsn;

		/* single-threaded: drain the ring before an append would block */
		if (last_end[slot] - ls_wal_durable(t.wal, slot) + blen + LS_WAL_REC_HDR > cfg.slot_buffer)
		{
			assert_int_equal(round_prepared(t.wal, NULL), LS_OK);
			rounds++;
		}
		ls_status	st = app(t.wal, slot, seqs[slot], blen, &end, &gsn);

		assert_int_equal(st, LS_OK);
		ex[i] = (expect)
		{
			.slot = slot,.seq = seqs[slot]++,.len = blen + LS_WAL_REC_HDR,.gsn = gsn
		};
		last_end[slot] = end;
		assert_int_equal(gsn, i + 1);
		spanning += (blen + LS_WAL_REC_HDR > LS_WAL_BLOCK_DATA);
		wrapped += (end - blen - LS_WAL_REC_HDR) / cfg.slot_buffer != (end - 1) / cfg.slot_buffer;
		if (ls_rand_next(&rs) % 8 == 0 || end - ls_wal_durable(t.wal, slot) > cfg.slot_buffer / 3)
		{
			ls_wal_round_stats rst;

			assert_int_equal(round_prepared(t.wal, &rst), LS_OK);
			rounds++;
			assert_true(ls_wal_durable(t.wal, slot) == end);
			assert_int_equal(ls_wal_wait(t.wal, slot, end, 0), LS_OK);
			assert_int_equal(ls_wal_durable_gsn(t.wal), gsn);
			assert_int_equal(ls_wal_end(t.wal) % LS_WAL_BLOCK, 0);
		}
	}
	assert_int_equal(round_prepared(t.wal, NULL), LS_OK);
	assert_int_equal(ls_wal_durable_gsn(t.wal), n);
	assert_true(spanning > 10);
	assert_true(wrapped > 4);	/* records copied in two pieces */
	assert_true(rounds > 50);

	readout		o = read_all(t.dir, cfg.segment_size, 0);

	assert_int_equal(o.last, LS_NOT_FOUND);
	assert_true(o.bodies_ok);
	assert_int_equal(o.n, n);
	assert_int_equal(o.end, ls_wal_end(t.wal));
	assert_int_equal(o.max_gsn, n);

	/* per slot: the append order; every record with its GSN and length */
	uint32_t	next[4] = {0};
	uint64_t	last_pos = 0;

	for (uint32_t i = 0; i < o.n; i++)
	{
		seen	   *s = &o.recs[i];

		assert_true(s->slot < 4);
		assert_int_equal(s->seq, next[s->slot]);
		next[s->slot]++;
		assert_true(s->pos > last_pos || i == 0);
		assert_true(s->pos % LS_WAL_BLOCK >= LS_WAL_BLOCK_HDR);
		last_pos = s->pos;

		/* the record appended with this GSN (GSNs were 1..n in order) */
		assert_true(s->gsn >= 1 && s->gsn <= n);
		expect	   *e = &ex[s->gsn - 1];

		assert_int_equal(e->slot, s->slot);
		assert_int_equal(e->seq, s->seq);
		assert_int_equal(e->len, s->len);
	}

	/* reading from a record's position (not block aligned) starts there */
	uint32_t	mid = o.n / 2;
	readout		o2 = read_all(t.dir, cfg.segment_size, o.recs[mid].pos);

	assert_int_equal(o2.n, o.n - mid);
	assert_int_equal(o2.recs[0].gsn, o.recs[mid].gsn);
	assert_int_equal(o2.end, o.end);
	free(o2.recs);

	/*
	 * From a block boundary inside a round (the block after the one where a
	 * spanning record starts): the first record that starts at or after it.
	 */
	uint32_t	sp = mid;

	while (sp < o.n && o.recs[sp].pos % LS_WAL_BLOCK + o.recs[sp].len <= LS_WAL_BLOCK)
		sp++;
	assert_true(sp < o.n);
	uint64_t	aligned = o.recs[sp].pos - o.recs[sp].pos % LS_WAL_BLOCK + LS_WAL_BLOCK;
	uint32_t	first = sp + 1;

	while (first < o.n && o.recs[first].pos < aligned)
		first++;
	readout		o3 = read_all(t.dir, cfg.segment_size, aligned);

	assert_int_equal(o3.n, o.n - first);
	if (o3.n > 0)
		assert_int_equal(o3.recs[0].pos, o.recs[first].pos);
	free(o3.recs);

	free(o.recs);
	free(ex);
	wt_close(&t, true);
}

static void
test_round_trip(void **state)
{
	(void) state;
	round_trip(false);
}

/* The same through pwrite/fdatasync (no io_uring). */
static void
test_round_trip_plain_io(void **state)
{
	(void) state;
	round_trip(true);
}

/* ------------------------------------------------------------------------
 * Lazy rounds: written, durable only once a round syncs
 * ------------------------------------------------------------------------ */

/* Append n records of blen bytes to slot, a lazy round after each k. */
static uint64_t
lazy_fill(ls_wal *wal, uint32_t slot, uint32_t *seq, uint32_t n, uint32_t blen,
		  uint32_t k, uint64_t *gsn)
{
	uint64_t	end = 0;

	for (uint32_t i = 0; i < n; i++)
	{
		assert_int_equal(app(wal, slot, (*seq)++, blen, &end, gsn), LS_OK);
		if ((i + 1) % k == 0)
			assert_int_equal(ls_wal_round_lazy(wal, NULL), LS_OK);
	}
	assert_int_equal(ls_wal_round_lazy(wal, NULL), LS_OK);
	return end;
}

static void
test_lazy_rounds(void **state)
{
	(void) state;
	wt			t;
	uint32_t	seq = 0;
	uint64_t	end,
				gsn;
	ls_wal_round_stats rst;

	wt_open(&t, small_cfg(2), NULL, 0, 16);

	/* written (the reader finds it), neither durable nor past the end */
	end = lazy_fill(t.wal, 0, &seq, 20, 1000, 5, &gsn);
	assert_int_equal(ls_wal_durable(t.wal, 0), 0);
	assert_int_equal(ls_wal_end(t.wal), 0);
	assert_true(ls_wal_durable_gsn(t.wal) < gsn);
	readout		o = read_all(t.dir, t.cfg.segment_size, 0);

	assert_int_equal(o.n, 20);
	free(o.recs);

	/* a waiter asks: the next lazy round syncs, with nothing new to write */
	assert_int_equal(ls_wal_wait(t.wal, 0, end, 0), LS_BUSY);
	assert_int_equal(ls_wal_round_lazy(t.wal, &rst), LS_OK);
	assert_int_equal(rst.records, 0);
	assert_int_equal(ls_wal_durable(t.wal, 0), end);
	assert_int_equal(ls_wal_wait(t.wal, 0, end, 0), LS_OK);
	assert_int_equal(ls_wal_durable_gsn(t.wal), gsn);
	assert_true(ls_wal_end(t.wal) > 0);

	/*
	 * Lazy rounds over a segment boundary (segments of 256 KiB), then one
	 * synced by ls_wal_kick with new records of another slot: the earlier
	 * slot's records become durable with it.
	 */
	uint64_t	end0 = lazy_fill(t.wal, 0, &seq, 60, 8000, 4, &gsn);

	assert_true(ls_wal_durable(t.wal, 0) < end0);
	uint64_t	end_before = ls_wal_end(t.wal);
	uint64_t	end1;

	assert_int_equal(app(t.wal, 1, seq++, 100, &end1, &gsn), LS_OK);
	ls_wal_kick(t.wal);
	assert_int_equal(ls_wal_round_lazy(t.wal, &rst), LS_OK);
	assert_int_equal(rst.records, 1);
	assert_int_equal(ls_wal_durable(t.wal, 0), end0);
	assert_int_equal(ls_wal_durable(t.wal, 1), end1);
	assert_int_equal(ls_wal_durable_gsn(t.wal), gsn);
	assert_true(ls_wal_end(t.wal) > end_before + 60 * 8000);

	/* more than 8 segments unsynced never happens: a lazy round syncs */
	uint64_t	durable_before = ls_wal_durable(t.wal, 0);

	end0 = lazy_fill(t.wal, 0, &seq, 330, 8000, 4, &gsn);
	assert_true(ls_wal_durable(t.wal, 0) > durable_before);
	assert_true(ls_wal_durable(t.wal, 0) < end0);
	assert_true(ls_wal_end(t.wal) + 8 * t.cfg.segment_size >= end_before + 390 * 8000);

	/* a plain round syncs what lazy rounds left */
	assert_int_equal(ls_wal_round(t.wal, &rst), LS_OK);
	assert_int_equal(ls_wal_durable(t.wal, 0), end0);
	assert_int_equal(ls_wal_durable_gsn(t.wal), gsn);

	o = read_all(t.dir, t.cfg.segment_size, 0);
	assert_int_equal(o.last, LS_NOT_FOUND);
	assert_true(o.bodies_ok);
	assert_int_equal(o.n, seq);
	assert_int_equal(o.end, ls_wal_end(t.wal));
	free(o.recs);
	wt_close(&t, true);
}

/* ------------------------------------------------------------------------
 * Blocking: before ls_wal_start, and on a full ring
 * ------------------------------------------------------------------------ */

typedef struct bg_append
{
	ls_wal	   *wal;
	uint32_t	slot;
	uint32_t	seq;
	uint32_t	blen;
	_Atomic int done;
	ls_status	st;
} bg_append;

static void *
bg_append_main(void *arg)
{
	bg_append  *a = arg;
	uint64_t	end,
				gsn;

	a->st = app(a->wal, a->slot, a->seq, a->blen, &end, &gsn);
	atomic_store(&a->done, 1);
	return NULL;
}

static void
test_blocking_append(void **state)
{
	(void) state;
	ls_wal_config cfg = small_cfg(2);
	size_t		size = ls_wal_region_size(&cfg);
	void	   *region = tu_shared_region(size);
	char	   *dir = tu_tempdir();
	ls_wal	   *wal;
	pthread_t	th;

	assert_int_equal(ls_wal_init(region, size, &cfg, &wal), LS_OK);
	assert_int_equal(ls_wal_set_dir(wal, dir), LS_OK);
	assert_false(ls_wal_started(wal));

	/* an append before ls_wal_start waits for it */
	bg_append	a = {.wal = wal, .slot = 0, .seq = 0, .blen = 100};

	assert_int_equal(pthread_create(&th, NULL, bg_append_main, &a), 0);
	usleep(50 * 1000);
	assert_int_equal(atomic_load(&a.done), 0);
	assert_int_equal(ls_wal_start(wal, 0, 0), LS_OK);
	assert_true(ls_wal_started(wal));
	pthread_join(th, NULL);
	assert_int_equal(a.st, LS_OK);
	assert_int_equal(ls_wal_prepare(wal, 1), LS_OK);

	/* fill slot 1's ring until the next record does not fit */
	uint32_t	blen = 8000;
	uint32_t	seq = 0;
	uint64_t	end = 0,
				gsn;

	while (end + 2 * (blen + LS_WAL_REC_HDR) <= cfg.slot_buffer)
		assert_int_equal(app(wal, 1, seq++, blen, &end, &gsn), LS_OK);
	assert_int_equal(app(wal, 1, seq++, blen, &end, &gsn), LS_OK);
	assert_true(end + blen + LS_WAL_REC_HDR > cfg.slot_buffer);

	/* nobody waits for it: the writer sleeps until the timeout */
	uint64_t	t0 = ls_now_ns();

	assert_true(ls_wal_writer_sleep(wal, 10));	/* records are pending */
	assert_true(ls_now_ns() - t0 < 5000000000ull);

	bg_append	b = {.wal = wal, .slot = 1, .seq = seq, .blen = blen};

	assert_int_equal(pthread_create(&th, NULL, bg_append_main, &b), 0);
	usleep(50 * 1000);
	assert_int_equal(atomic_load(&b.done), 0);	/* blocked: the ring is full */
	assert_int_equal(ls_wal_wait(wal, 1, end, 20), LS_BUSY);	/* no writer yet */

	ls_wal_round_stats rst;

	assert_int_equal(ls_wal_round(wal, &rst), LS_OK);
	assert_true(rst.records >= 2);
	pthread_join(th, NULL);
	assert_int_equal(b.st, LS_OK);
	assert_int_equal(ls_wal_wait(wal, 1, end, 0), LS_OK);
	assert_int_equal(ls_wal_round(wal, &rst), LS_OK);
	assert_int_equal(rst.records, 1);

	/* nothing pending: sleeping times out and says so */
	assert_int_equal(ls_wal_round(wal, &rst), LS_OK);
	assert_int_equal(rst.records, 0);
	assert_int_equal(rst.blocks, 0);
	(void) ls_wal_writer_sleep(wal, 0);	/* takes the waits' earlier kicks */
	assert_false(ls_wal_writer_sleep(wal, 5));
	/* a kick wakes it, also one that came while it was not asleep */
	ls_wal_kick(wal);
	assert_true(ls_wal_writer_sleep(wal, 5000));

	readout		o = read_all(dir, cfg.segment_size, 0);

	assert_int_equal(o.n, seq + 2);
	assert_true(o.bodies_ok);
	free(o.recs);

	ls_wal_detach(wal);
	tu_free_region(region, size);
	tu_rm_rf(dir);
	free(dir);
}

/* ------------------------------------------------------------------------
 * Multi-process: appender processes and a writer process
 * ------------------------------------------------------------------------ */

#define MP_APPENDERS 3

typedef struct mp_ctl
{
	ls_wal	   *wal;
	char		dir[512];
	uint32_t	per_appender;
	uint32_t	max_record;
	_Atomic uint32_t appenders_done;
	_Atomic uint32_t acked[MP_APPENDERS];	/* records acknowledged durable */
	_Atomic uint64_t rounds;
	_Atomic uint64_t records;
	_Atomic uint64_t ns;
} mp_ctl;

static int
mp_writer(mp_ctl *c)
{
	ls_wal	   *wal = c->wal;
	uint64_t	t0 = ls_now_ns();

	TU_CHECK(ls_wal_set_dir(wal, c->dir) == LS_OK);
	while (atomic_load(&c->appenders_done) < MP_APPENDERS || ls_wal_writer_sleep(wal, 0))
	{
		ls_wal_round_stats rst;
		ls_status	st;

		ls_wal_writer_sleep(wal, 20);
		st = ls_wal_round(wal, &rst);
		if (st == LS_NO_SPACE)
		{
			TU_CHECK(ls_wal_prepare(wal, 4) == LS_OK);
			continue;
		}
		TU_CHECK(st == LS_OK);
		if (rst.records > 0)
		{
			atomic_fetch_add(&c->rounds, 1);
			atomic_fetch_add(&c->records, rst.records);
		}
	}
	atomic_store(&c->ns, ls_now_ns() - t0);
	return 0;
}

static int
mp_appender(mp_ctl *c, uint32_t slot)
{
	uint64_t	rs = 1000 + slot;
	uint32_t	maxrec = c->max_record;

	for (uint32_t seq = 0; seq < c->per_appender; seq++)
	{
		uint64_t	end,
					gsn;
		uint32_t	blen = rand_body(&rs, maxrec / 4);
		ls_status	st = app(c->wal, slot, seq, blen, &end, &gsn);

		TU_CHECK(st == LS_OK);
		/* wait for most records (a commit), leave some for later ones */
		if (ls_rand_next(&rs) % 4 != 0 || seq + 1 == c->per_appender)
		{
			while ((st = ls_wal_wait(c->wal, slot, end, 1000)) == LS_BUSY)
				;
			TU_CHECK(st == LS_OK);
			atomic_store(&c->acked[slot], seq + 1);
		}
	}
	atomic_fetch_add(&c->appenders_done, 1);
	ls_wal_kick(c->wal);
	return 0;
}

static int
mp_worker(int w, void *arg)
{
	mp_ctl	   *c = arg;

	return w == 0 ? mp_writer(c) : mp_appender(c, (uint32_t) (w - 1));
}

static void
test_multiprocess(void **state)
{
	(void) state;
	ls_wal_config cfg = small_cfg(MP_APPENDERS);
	size_t		size = ls_wal_region_size(&cfg);
	void	   *region = tu_shared_region(size);
	mp_ctl	   *c = tu_shared_region(sizeof(mp_ctl));
	char	   *dir = tu_tempdir();

	assert_true(strlen(dir) < sizeof(c->dir));
	strcpy(c->dir, dir);
	c->per_appender = (uint32_t) tu_scaled(4000);
	c->max_record = ls_wal_max_record(&cfg);
	assert_int_equal(ls_wal_init(region, size, &cfg, &c->wal), LS_OK);
	assert_int_equal(ls_wal_set_dir(c->wal, dir), LS_OK);
	assert_int_equal(ls_wal_start(c->wal, 0, 0), LS_OK);
	assert_int_equal(tu_fork_workers(1 + MP_APPENDERS, mp_worker, c), 0);

	uint64_t	total = (uint64_t) c->per_appender * MP_APPENDERS;
	double		secs = (double) atomic_load(&c->ns) / 1e9;

	print_message("wal multi-process: %u appenders, %llu records in %llu rounds, "
				  "%.0f rounds/s, %.0f records/s\n", MP_APPENDERS,
				  (unsigned long long) total, (unsigned long long) atomic_load(&c->rounds),
				  (double) atomic_load(&c->rounds) / secs, (double) total / secs);
	assert_int_equal(atomic_load(&c->records), total);

	readout		o = read_all(dir, cfg.segment_size, 0);
	uint32_t	next[MP_APPENDERS] = {0};
	uint64_t	last_gsn[MP_APPENDERS] = {0};

	assert_int_equal(o.last, LS_NOT_FOUND);
	assert_true(o.bodies_ok);
	for (uint32_t i = 0; i < o.n; i++)
	{
		seen	   *s = &o.recs[i];

		assert_true(s->slot < MP_APPENDERS);
		assert_int_equal(s->seq, next[s->slot]);
		assert_true(s->gsn > last_gsn[s->slot]);
		last_gsn[s->slot] = s->gsn;
		next[s->slot]++;
	}
	for (uint32_t k = 0; k < MP_APPENDERS; k++)
	{
		assert_int_equal(atomic_load(&c->acked[k]), c->per_appender);
		assert_int_equal(next[k], c->per_appender);
	}
	assert_int_equal(o.n, total);
	assert_int_equal(o.max_gsn, total);
	assert_true(check_rounds_prefix(dir, cfg.segment_size, &o) > 1);

	free(o.recs);
	ls_wal_detach(c->wal);
	tu_free_region(region, size);
	tu_free_region(c, sizeof(mp_ctl));
	tu_rm_rf(dir);
	free(dir);
}

/* ------------------------------------------------------------------------
 * Torn tails, restart, generations
 * ------------------------------------------------------------------------ */

/* Write `rounds` rounds; round r holds records seq base..; returns the rounds' starts. */
typedef struct scen
{
	uint64_t	starts[64];		/* ls_wal_end before round r */
	uint32_t	nrec[64];		/* records in round r */
	uint64_t	end;
	uint32_t	seq;			/* next seq of slot 0 */
} scen;

static void
write_rounds(wt *t, scen *sc, uint32_t rounds, uint32_t recs, uint32_t blen)
{
	for (uint32_t r = 0; r < rounds; r++)
	{
		uint64_t	end,
					gsn;
		ls_wal_round_stats rst;

		sc->starts[r] = ls_wal_end(t->wal);
		for (uint32_t k = 0; k < recs; k++)
			assert_int_equal(app(t->wal, 0, sc->seq++, blen, &end, &gsn), LS_OK);
		assert_int_equal(round_prepared(t->wal, &rst), LS_OK);
		assert_int_equal(rst.records, recs);
		sc->nrec[r] = recs;
	}
	sc->end = ls_wal_end(t->wal);
}

static void
flip_byte(const char *dir, uint64_t segsz, uint64_t pos)
{
	char		name[32];
	uint8_t		b;

	snprintf(name, sizeof(name), "%016llX", (unsigned long long) (pos / segsz));
	char	   *path = tu_path(dir, name);
	int			fd = open(path, O_RDWR);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &b, 1, (off_t) (pos % segsz)), 1);
	b ^= 0x5a;
	assert_int_equal(pwrite(fd, &b, 1, (off_t) (pos % segsz)), 1);
	close(fd);
	free(path);
}

/* Restart over dir at the reader's end; append and read again. */
static void
restart_and_check(char *dir, ls_wal_config cfg, uint64_t end, uint32_t old_n, uint32_t seq)
{
	wt			t;
	scen		sc = {.seq = seq};

	wt_open(&t, cfg, dir, end, 2);
	write_rounds(&t, &sc, 2, 3, 700);

	readout		o = read_all(dir, cfg.segment_size, 0);

	assert_int_equal(o.last, LS_NOT_FOUND);
	assert_true(o.bodies_ok);
	assert_int_equal(o.n, old_n + 6);
	for (uint32_t i = 0; i < o.n; i++)
		assert_int_equal(o.recs[i].seq, i < old_n ? i : seq + (i - old_n));
	assert_int_equal(o.end, ls_wal_end(t.wal));
	free(o.recs);
	wt_close(&t, false);
}

static void
test_torn_tail(void **state)
{
	(void) state;
	ls_wal_config cfg = small_cfg(1);
	uint32_t	blen = 1500;	/* spans blocks: every round has several */

	for (int kind = 0; kind < 4; kind++)
	{
		wt			t;
		scen		sc = {0};

		wt_open(&t, cfg, NULL, 0, 2);
		write_rounds(&t, &sc, 6, 3, blen);

		/* damage the last round (5) */
		uint64_t	r5 = sc.starts[5];
		uint64_t	nblk = (sc.end - r5) / LS_WAL_BLOCK;

		assert_true(nblk >= 3);
		if (kind == 0)			/* a byte of its last block */
			flip_byte(t.dir, cfg.segment_size, sc.end - 100);
		else if (kind == 1)		/* a block in the middle: a record cut */
			flip_byte(t.dir, cfg.segment_size, r5 + LS_WAL_BLOCK + 30);
		else if (kind == 2)
		{
			/* the segment cut short in the middle of the round */
			char	   *path = tu_path(t.dir, "0000000000000000");

			assert_int_equal(truncate(path, (off_t) (r5 + 2 * LS_WAL_BLOCK)), 0);
			free(path);
		}
		else					/* its first block's header (position field) */
			flip_byte(t.dir, cfg.segment_size, r5 + 16);

		uint32_t	seq = sc.seq;
		char	   *dir = wt_close(&t, false);
		readout		o = read_all(dir, cfg.segment_size, 0);

		assert_int_equal(o.last, LS_NOT_FOUND);
		assert_true(o.bodies_ok);
		assert_int_equal(o.n, 15);	/* rounds 0..4 */
		assert_int_equal(o.end, r5);
		assert_int_equal(o.max_gsn, 15);
		free(o.recs);

		/* prepare extends a cut segment with zeros, keeping its blocks */
		restart_and_check(dir, cfg, r5, 15, seq);
		tu_rm_rf(dir);
		free(dir);
	}
}

/*
 * Blocks an earlier generation left beyond the recovered end keep their CRC
 * and position; only the generation tells them apart.  Every round here is
 * exactly two blocks, so generation 2's last round ends just where one of
 * generation 1's rounds began.
 */
static void
test_stale_generation(void **state)
{
	(void) state;
	ls_wal_config cfg = small_cfg(1);
	uint32_t	blen = 2 * LS_WAL_BLOCK_DATA - LS_WAL_REC_HDR;
	wt			t;
	scen		sc = {0};

	wt_open(&t, cfg, NULL, 0, 2);
	write_rounds(&t, &sc, 10, 1, blen);
	for (int r = 0; r < 10; r++)
		assert_int_equal(sc.starts[r], (uint64_t) r * 2 * LS_WAL_BLOCK);

	/* recovery ends at round 5 (its second block is torn) */
	flip_byte(t.dir, cfg.segment_size, sc.starts[5] + LS_WAL_BLOCK + 100);
	char	   *dir = wt_close(&t, false);
	readout		o = read_all(dir, cfg.segment_size, 0);

	assert_int_equal(o.n, 5);
	assert_int_equal(o.end, sc.starts[5]);
	free(o.recs);

	/* generation 2 writes two rounds: blocks 10..13; gen 1's round 7 follows */
	scen		sc2 = {.seq = 100};

	wt_open(&t, cfg, dir, sc.starts[5], 2);
	write_rounds(&t, &sc2, 2, 1, blen);
	assert_int_equal(ls_wal_end(t.wal), sc.starts[7]);
	wt_close(&t, false);

	/* the generation file went 1 -> 2 */
	char	   *gpath = tu_path(dir, "generation");
	FILE	   *f = fopen(gpath, "r");
	unsigned	g = 0;

	assert_non_null(f);
	assert_int_equal(fscanf(f, "%u", &g), 1);
	fclose(f);
	free(gpath);
	assert_int_equal(g, 2);

	o = read_all(dir, cfg.segment_size, 0);
	assert_int_equal(o.last, LS_NOT_FOUND);
	assert_int_equal(o.n, 7);
	for (uint32_t i = 0; i < 5; i++)
		assert_int_equal(o.recs[i].seq, i);
	assert_int_equal(o.recs[5].seq, 100);
	assert_int_equal(o.recs[6].seq, 101);
	assert_int_equal(o.end, sc.starts[7]);
	free(o.recs);

	/*
	 * A read that starts right at the end (a checkpoint's keep_from there):
	 * the first block it meets is generation 1's stale round 7; the block
	 * before the start tells it apart.
	 */
	o = read_all(dir, cfg.segment_size, sc.starts[7]);
	assert_int_equal(o.n, 0);
	assert_int_equal(o.end, sc.starts[7]);
	free(o.recs);

	/* generation 3 continues from there; a read sees 5 + 2 + 1 records */
	scen		sc3 = {.seq = 200};

	wt_open(&t, cfg, dir, sc.starts[7], 2);
	write_rounds(&t, &sc3, 1, 1, 10);
	wt_close(&t, false);
	o = read_all(dir, cfg.segment_size, 0);
	assert_int_equal(o.n, 8);
	assert_int_equal(o.recs[7].seq, 200);
	free(o.recs);
	o = read_all(dir, cfg.segment_size, sc.starts[7]);
	assert_int_equal(o.n, 1);
	assert_int_equal(o.recs[0].seq, 200);
	free(o.recs);

	tu_rm_rf(dir);
	free(dir);
}

/* ------------------------------------------------------------------------
 * Segments: LS_NO_SPACE, switching, recycling
 * ------------------------------------------------------------------------ */

/* stat of segment segno's file (with suffix, e.g. ".tmp"); false when absent. */
static bool
seg_stat(const char *dir, uint64_t segno, const char *suffix, struct stat *st)
{
	char		name[40];

	snprintf(name, sizeof(name), "%016llX%s", (unsigned long long) segno, suffix);
	char	   *path = tu_path(dir, name);
	bool		ok = stat(path, st) == 0;

	free(path);
	return ok;
}

static bool
seg_exists(const char *dir, uint64_t segno, ino_t *ino)
{
	struct stat st;
	bool		ok = seg_stat(dir, segno, "", &st);

	if (ok && ino)
		*ino = st.st_ino;
	return ok;
}

static uint32_t
count_segments(const char *dir)
{
	uint32_t	n = 0;

	for (uint64_t s = 0; s < 256; s++)
		n += seg_exists(dir, s, NULL);
	return n;
}

static void
test_segments(void **state)
{
	(void) state;
	ls_wal_config cfg = small_cfg(2);
	wt			t;
	uint64_t	end,
				gsn;
	ls_wal_round_stats rst;

	cfg.segment_size = 64 * KIB;
	wt_open(&t, cfg, NULL, 0, 0);

	/* nothing prepared: the round writes nothing, the record stays pending */
	assert_int_equal(app(t.wal, 0, 0, 100, &end, &gsn), LS_OK);
	assert_int_equal(ls_wal_round(t.wal, &rst), LS_NO_SPACE);
	assert_int_equal(rst.records, 0);
	assert_int_equal(ls_wal_durable(t.wal, 0), 0);
	assert_int_equal(ls_wal_end(t.wal), 0);
	assert_int_equal(ls_wal_durable_gsn(t.wal), 0);
	assert_int_equal(ls_wal_wait(t.wal, 0, end, 0), LS_BUSY);
	assert_false(ls_wal_failed(t.wal));
	assert_int_equal(count_segments(t.dir), 0);
	assert_int_equal(ls_wal_prepare(t.wal, 1), LS_OK);
	assert_int_equal(count_segments(t.dir), 1);
	assert_int_equal(ls_wal_round(t.wal, &rst), LS_OK);
	assert_int_equal(rst.records, 1);
	assert_int_equal(ls_wal_durable(t.wal, 0), end);
	assert_int_equal(ls_wal_durable_gsn(t.wal), gsn);

	/* a round that would cross into the unprepared segment 1: nothing written */
	uint32_t	seq = 1;
	uint64_t	before = ls_wal_end(t.wal);

	for (int k = 0; k < 6; k++)		/* 6 * 12 KiB: beyond segment 0 */
		assert_int_equal(app(t.wal, k % 2, seq++, 12 * KIB, &end, &gsn), LS_OK);
	assert_int_equal(ls_wal_round(t.wal, &rst), LS_NO_SPACE);
	assert_int_equal(ls_wal_end(t.wal), before);
	{
		readout		o = read_all(t.dir, cfg.segment_size, 0);

		assert_int_equal(o.n, 1);
		assert_int_equal(o.end, before);
		free(o.recs);
	}
	assert_int_equal(ls_wal_prepare(t.wal, 1), LS_OK);
	assert_int_equal(count_segments(t.dir), 2);
	assert_int_equal(ls_wal_round(t.wal, &rst), LS_OK);
	assert_int_equal(rst.records, 6);
	assert_true(ls_wal_end(t.wal) > cfg.segment_size);

	/*
	 * A waiter's sync request survives a lazy round that stops at an
	 * unprepared segment: once the segment is there, the next lazy round
	 * syncs without being asked again.
	 */
	for (int k = 0; k < 5; k++)		/* 5 * 12 KiB: beyond segment 1 */
		assert_int_equal(app(t.wal, k % 2, seq++, 12 * KIB, &end, &gsn), LS_OK);
	assert_int_equal(ls_wal_wait(t.wal, 0, end, 0), LS_BUSY);
	assert_int_equal(ls_wal_round_lazy(t.wal, &rst), LS_NO_SPACE);
	assert_int_equal(ls_wal_prepare(t.wal, 1), LS_OK);
	assert_int_equal(ls_wal_round_lazy(t.wal, &rst), LS_OK);
	assert_int_equal(rst.records, 5);
	assert_int_equal(ls_wal_durable(t.wal, 0), end);
	assert_int_equal(ls_wal_durable_gsn(t.wal), gsn);

	/* many rounds across many small segments */
	uint64_t	keep_pos = 0;
	uint32_t	keep_seq = 0;

	for (int r = 0; r < 40; r++)
	{
		if (r == 30)
		{
			keep_pos = ls_wal_end(t.wal);
			keep_seq = seq;
		}
		for (int k = 0; k < 4; k++)
			assert_int_equal(app(t.wal, 0, seq++, 5000, &end, &gsn), LS_OK);
		assert_int_equal(round_prepared(t.wal, &rst), LS_OK);
	}
	uint64_t	last_seg = (ls_wal_end(t.wal) - 1) / cfg.segment_size;
	uint32_t	nseg = count_segments(t.dir);

	assert_true(last_seg >= 10);
	assert_true(nseg >= last_seg + 1);

	/* recycling: segments wholly below keep_from are renamed, not created */
	ino_t		ino0;

	assert_true(seg_exists(t.dir, 0, &ino0));
	ls_wal_set_keep_from(t.wal, keep_pos);
	assert_int_equal(ls_wal_keep_from(t.wal), keep_pos);
	ls_wal_set_keep_from(t.wal, 0);	/* never backwards */
	assert_int_equal(ls_wal_keep_from(t.wal), keep_pos);

	uint64_t	ahead_first = ls_wal_end(t.wal) / cfg.segment_size;
	uint32_t	ahead = 4;

	assert_int_equal(ls_wal_prepare(t.wal, ahead), LS_OK);
	assert_int_equal(count_segments(t.dir), nseg);	/* no new file */
	assert_false(seg_exists(t.dir, 0, NULL));
	for (uint64_t s = ahead_first; s < ahead_first + ahead; s++)
		assert_true(seg_exists(t.dir, s, NULL));
	bool		reused = false;

	for (uint64_t s = ahead_first; s <= ahead_first + ahead; s++)
	{
		ino_t		ino;

		if (seg_exists(t.dir, s, &ino) && ino == ino0)
			reused = true;
	}
	assert_true(reused);
	/* the segment holding keep_from is kept */
	assert_true(seg_exists(t.dir, keep_pos / cfg.segment_size, NULL));

	/* write into the recycled segments (their stale blocks end nothing early) */
	uint32_t	total = seq;

	for (int r = 0; r < 12; r++)
	{
		for (int k = 0; k < 4; k++)
			assert_int_equal(app(t.wal, 0, seq++, 5000, &end, &gsn), LS_OK);
		assert_int_equal(round_prepared(t.wal, &rst), LS_OK);
	}
	total = seq;

	readout		o = read_all(t.dir, cfg.segment_size, keep_pos);

	assert_int_equal(o.last, LS_NOT_FOUND);
	assert_true(o.bodies_ok);
	assert_int_equal(o.n, total - keep_seq);
	assert_int_equal(o.recs[0].seq, keep_seq);
	assert_int_equal(o.end, ls_wal_end(t.wal));
	free(o.recs);

	/* and the read from 0 stops at the first recycled (missing) segment */
	o = read_all(t.dir, cfg.segment_size, 0);
	assert_int_equal(o.n, 0);
	free(o.recs);

	/*
	 * keep_from on a segment boundary: the segment before it keeps the
	 * block before keep_from (a reader starting there reads it), the ones
	 * before that are recycled into the many new segments asked for.
	 */
	uint64_t	k = ls_wal_end(t.wal) / cfg.segment_size;

	assert_true(seg_exists(t.dir, k - 1, NULL) && seg_exists(t.dir, k - 2, NULL));
	ls_wal_set_keep_from(t.wal, k * cfg.segment_size);
	assert_int_equal(ls_wal_prepare(t.wal, 16), LS_OK);
	assert_true(seg_exists(t.dir, k - 1, NULL));
	assert_false(seg_exists(t.dir, k - 2, NULL));
	wt_close(&t, true);
}

/* ------------------------------------------------------------------------
 * Failures
 * ------------------------------------------------------------------------ */

typedef struct bg_wait
{
	ls_wal	   *wal;
	uint32_t	slot;
	uint64_t	end;
	ls_status	st;
	int			err;
} bg_wait;

static void *
bg_wait_main(void *arg)
{
	bg_wait    *w = arg;

	while ((w->st = ls_wal_wait(w->wal, w->slot, w->end, 10000)) == LS_BUSY)
		;
	w->err = errno;
	return NULL;
}

static void
test_io_errors(void **state)
{
	(void) state;
	ls_wal_config cfg = small_cfg(2);

	for (int mode = 0; mode < 4; mode++)
	{
		int			what = 1 + mode % 2;
		wt			t;
		uint64_t	end,
					gsn,
					durable_end;
		ls_wal_round_stats rst;
		uint32_t	seq = 0;
		int			err = what == 1 ? ENOSPC : EIO;

		wt_open(&t, cfg, NULL, 0, 2);
		if (mode >= 2)
			ls_wal_inject_fault(t.wal, 3, 0);
		for (int k = 0; k < 20; k++)
			assert_int_equal(app(t.wal, 0, seq++, 900, &durable_end, &gsn), LS_OK);
		assert_int_equal(ls_wal_round(t.wal, &rst), LS_OK);
		uint64_t	dgsn = ls_wal_durable_gsn(t.wal);

		assert_int_equal(app(t.wal, 0, seq++, 900, &end, &gsn), LS_OK);
		assert_int_equal(app(t.wal, 1, 0, 50, NULL, NULL), LS_OK);

		/* a waiter sleeping while the round fails */
		bg_wait		w = {.wal = t.wal, .slot = 0, .end = end};
		pthread_t	th;

		assert_int_equal(pthread_create(&th, NULL, bg_wait_main, &w), 0);
		usleep(20 * 1000);
		ls_wal_inject_fault(t.wal, what, err);
		errno = 0;
		assert_int_equal(ls_wal_round(t.wal, &rst), LS_IO_ERROR);
		assert_int_equal(errno, err);
		pthread_join(th, NULL);
		assert_int_equal(w.st, LS_IO_ERROR);
		assert_int_equal(w.err, err);

		assert_true(ls_wal_failed(t.wal));
		assert_int_equal(ls_wal_durable(t.wal, 0), durable_end);
		assert_int_equal(ls_wal_durable_gsn(t.wal), dgsn);
		assert_int_equal(ls_wal_wait(t.wal, 0, end, 100), LS_IO_ERROR);
		/* what was durable before stays acknowledged */
		assert_int_equal(ls_wal_wait(t.wal, 0, durable_end, 0), LS_OK);
		errno = 0;
		assert_int_equal(app(t.wal, 0, seq++, 10, &end, &gsn), LS_IO_ERROR);
		assert_int_equal(errno, err);
		/* failed for good: no retry, even with the fault gone */
		ls_wal_inject_fault(t.wal, 0, 0);
		assert_int_equal(ls_wal_round(t.wal, &rst), LS_IO_ERROR);
		assert_int_equal(ls_wal_prepare(t.wal, 1), LS_IO_ERROR);
		assert_true(ls_wal_writer_sleep(t.wal, 1000));

		/* the reader returns every durable record (the failed round: maybe) */
		readout		o = read_all(t.dir, cfg.segment_size, 0);

		assert_true(o.bodies_ok);
		if (what == 1)
			assert_int_equal(o.n, 20);
		else
			assert_true(o.n == 20 || o.n == 22);
		for (uint32_t i = 0; i < 20; i++)
			assert_int_equal(o.recs[i].seq, i);
		free(o.recs);
		wt_close(&t, true);
	}
}

/*
 * A write of the linked write + fdatasync submission that the kernel
 * completes short (what = 5 cuts the round's first write to half its
 * length): the round finishes it with pwrite and syncs it, succeeds, and
 * every record reads back whole.  Without the pwrite the second half of
 * the round's first segment write stays zeros and the reader stops there.
 */
static void
test_ring_short_write(void **state)
{
	(void) state;
	ls_wal_config cfg = small_cfg(1);
	wt			t;
	uint64_t	end = 0,
				gsn;
	uint32_t	seq = 0;
	ls_wal_round_stats rst;
	ls_wal_stats_out so;

	wt_open(&t, cfg, NULL, 0, 1);
	for (int k = 0; k < 20; k++)
		assert_int_equal(app(t.wal, 0, seq++, 900, &end, &gsn), LS_OK);
	ls_wal_inject_fault(t.wal, 5, 0);
	assert_int_equal(ls_wal_round(t.wal, &rst), LS_OK);
	assert_true(rst.blocks >= 8);	/* cut in half: several blocks short */
	ls_wal_stats(t.wal, &so);
	if (so.short_writes == 0)
	{
		/* no io_uring in this process: the plain path ran, nothing was cut */
		ls_wal_inject_fault(t.wal, 0, 0);
		wt_close(&t, true);
		skip();
	}
	assert_int_equal(so.short_writes, 1);
	assert_false(ls_wal_failed(t.wal));
	assert_int_equal(ls_wal_wait(t.wal, 0, end, 0), LS_OK);

	/* the fault was taken once: the next round is whole */
	for (int k = 0; k < 5; k++)
		assert_int_equal(app(t.wal, 0, seq++, 900, &end, &gsn), LS_OK);
	assert_int_equal(ls_wal_round(t.wal, &rst), LS_OK);
	ls_wal_stats(t.wal, &so);
	assert_int_equal(so.short_writes, 1);
	assert_int_equal(ls_wal_wait(t.wal, 0, end, 0), LS_OK);

	readout		o = read_all(t.dir, cfg.segment_size, 0);

	assert_true(o.bodies_ok);
	assert_int_equal(o.n, seq);
	for (uint32_t i = 0; i < seq; i++)
		assert_int_equal(o.recs[i].seq, i);
	assert_true(o.end >= end);
	free(o.recs);
	wt_close(&t, true);
}

/* A full disk while preparing: LS_IO_ERROR (ENOSPC), the writer goes on. */
static void
test_prepare_enospc(void **state)
{
	(void) state;
	ls_wal_config cfg = small_cfg(1);
	wt			t;
	uint64_t	end,
				gsn;
	uint32_t	seq = 0;

	cfg.segment_size = 64 * KIB;
	wt_open(&t, cfg, NULL, 0, 1);
	ls_wal_inject_fault(t.wal, 4, ENOSPC);
	errno = 0;
	assert_int_equal(ls_wal_prepare(t.wal, 3), LS_IO_ERROR);
	assert_int_equal(errno, ENOSPC);
	assert_false(ls_wal_failed(t.wal));
	/* no temporary file is left behind, the half-made segment is not there */
	char	   *tmp = tu_path(t.dir, "0000000000000001.tmp");
	struct stat sb;

	assert_int_equal(stat(tmp, &sb), -1);
	free(tmp);
	assert_false(seg_exists(t.dir, 1, NULL));

	/* segment 0 still takes commits; past it the round needs space */
	for (int k = 0; k < 10; k++)
		assert_int_equal(app(t.wal, 0, seq++, 3000, &end, &gsn), LS_OK);
	assert_int_equal(ls_wal_round(t.wal, NULL), LS_OK);
	assert_int_equal(ls_wal_wait(t.wal, 0, end, 0), LS_OK);
	for (int k = 0; k < 15; k++)
		assert_int_equal(app(t.wal, 0, seq++, 3000, &end, &gsn), LS_OK);
	assert_int_equal(ls_wal_round(t.wal, NULL), LS_NO_SPACE);
	assert_false(ls_wal_failed(t.wal));
	/* the disk has room again */
	assert_int_equal(ls_wal_prepare(t.wal, 3), LS_OK);
	assert_int_equal(ls_wal_round(t.wal, NULL), LS_OK);
	assert_int_equal(ls_wal_wait(t.wal, 0, end, 0), LS_OK);

	readout		o = read_all(t.dir, cfg.segment_size, 0);

	assert_int_equal(o.n, seq);
	free(o.recs);
	wt_close(&t, true);
}

/* Size of segment segno's file, -1 when it is not there. */
static long long
seg_size(const char *dir, uint64_t segno, const char *suffix)
{
	struct stat st;

	return seg_stat(dir, segno, suffix, &st) ? (long long) st.st_size : -1;
}

/* Steps until there is nothing left to do; returns the number of calls. */
static uint32_t
step_all(ls_wal *wal, uint32_t ahead)
{
	bool		more = true;
	uint32_t	calls = 0;

	while (more)
	{
		assert_int_equal(ls_wal_prepare_step(wal, ahead, &more), LS_OK);
		calls++;
		assert_true(calls < 1000);
	}
	return calls;
}

/*
 * Recyclable segments past ls_wal_set_spare_bytes go (the oldest first) at
 * the next ls_wal_prepare_step once keep_from moved: the log directory
 * shrinks after the log grew.  Without a limit (0) every one stays; the
 * records from keep_from on still read back whole.
 */
static void
test_trim_spares(void **state)
{
	(void) state;
	ls_wal_config cfg = small_cfg(1);
	wt			t;
	uint64_t	end,
				gsn;
	uint32_t	seq = 0;
	ls_wal_round_stats rst;

	cfg.segment_size = 64 * KIB;
	wt_open(&t, cfg, NULL, 0, 0);
	for (int r = 0; r < 40; r++)
	{
		for (int k = 0; k < 4; k++)
			assert_int_equal(app(t.wal, 0, seq++, 5000, &end, &gsn), LS_OK);
		assert_int_equal(round_prepared(t.wal, &rst), LS_OK);
	}
	uint64_t	last = (ls_wal_end(t.wal) - 1) / cfg.segment_size;
	uint64_t	keep_pos = last * cfg.segment_size + LS_WAL_BLOCK;
	uint32_t	nseg = count_segments(t.dir);

	assert_true(last >= 10);
	assert_true(nseg >= last + 1);

	/* no limit: keep_from moving removes nothing */
	ls_wal_set_keep_from(t.wal, keep_pos);
	step_all(t.wal, 1);
	assert_int_equal(count_segments(t.dir), nseg);

	/* a limit of three segments: the oldest go, the newest spares stay */
	ls_wal_set_spare_bytes(t.wal, 3 * cfg.segment_size);
	step_all(t.wal, 1);
	assert_false(seg_exists(t.dir, 0, NULL));
	assert_false(seg_exists(t.dir, last - 4, NULL));
	assert_true(seg_exists(t.dir, last - 3, NULL));
	assert_true(seg_exists(t.dir, last - 2, NULL));
	assert_true(seg_exists(t.dir, last - 1, NULL));
	assert_true(seg_exists(t.dir, last, NULL));
	/* the three spares, keep_from's segment, the one prepared ahead */
	assert_true(seg_exists(t.dir, last + 1, NULL));
	assert_int_equal(count_segments(t.dir), 3 + 2);

	/* nothing new: no change; rounds go on into recycled segments */
	step_all(t.wal, 1);
	assert_int_equal(count_segments(t.dir), 3 + 2);
	uint32_t	from_seq = seq;
	uint64_t	from_pos = ls_wal_end(t.wal);

	for (int r = 0; r < 12; r++)
	{
		for (int k = 0; k < 4; k++)
			assert_int_equal(app(t.wal, 0, seq++, 5000, &end, &gsn), LS_OK);
		assert_int_equal(round_prepared(t.wal, &rst), LS_OK);
	}
	readout		o = read_all(t.dir, cfg.segment_size, from_pos);

	assert_int_equal(o.last, LS_NOT_FOUND);
	assert_true(o.bodies_ok);
	assert_int_equal(o.n, seq - from_seq);
	free(o.recs);
	wt_close(&t, true);
}

/*
 * ls_wal_prepare_step: a new segment is written a piece a call under its
 * .tmp name and appears whole; ls_wal_prepare finishes a half-made one; a
 * failed piece leaves nothing behind; old segments are recycled at once;
 * a round writes into what the steps made and reads back.
 */
static void
test_prepare_step(void **state)
{
	(void) state;
	ls_wal_config cfg = small_cfg(1);
	wt			t;
	uint64_t	end,
				gsn;
	uint32_t	seq = 0;
	bool		more;
	long long	segsz;

	cfg.segment_size = 3 * 1024 * KIB;	/* three pieces of 1 MB */
	cfg.round_buffer = 256 * KIB;
	segsz = (long long) cfg.segment_size;
	wt_open(&t, cfg, NULL, 0, 0);

	/* piece by piece: the name appears only once the segment is whole */
	assert_int_equal(ls_wal_prepare_step(t.wal, 2, &more), LS_OK);
	assert_true(more);
	assert_int_equal(seg_size(t.dir, 0, ""), -1);
	assert_int_equal(seg_size(t.dir, 0, ".tmp"), 1024 * KIB);
	assert_int_equal(ls_wal_prepare_step(t.wal, 2, &more), LS_OK);
	assert_true(more);
	assert_int_equal(seg_size(t.dir, 0, ".tmp"), 2048 * KIB);
	assert_int_equal(ls_wal_prepare_step(t.wal, 2, &more), LS_OK);
	assert_int_equal(seg_size(t.dir, 0, ""), segsz);
	assert_int_equal(seg_size(t.dir, 0, ".tmp"), -1);
	/* segment 1 takes three more calls, then one that finds nothing to do */
	assert_int_equal(step_all(t.wal, 2), 4);
	assert_int_equal(seg_size(t.dir, 1, ""), segsz);
	assert_int_equal(seg_size(t.dir, 2, ""), -1);
	assert_int_equal(step_all(t.wal, 2), 1);

	/* a half-made segment is finished by ls_wal_prepare */
	assert_int_equal(ls_wal_prepare_step(t.wal, 3, &more), LS_OK);
	assert_int_equal(seg_size(t.dir, 2, ".tmp"), 1024 * KIB);
	assert_int_equal(ls_wal_prepare(t.wal, 3), LS_OK);
	assert_int_equal(seg_size(t.dir, 2, ""), segsz);
	assert_int_equal(seg_size(t.dir, 2, ".tmp"), -1);
	assert_int_equal(step_all(t.wal, 3), 1);

	/* a failed piece (full disk) leaves neither the segment nor its .tmp */
	ls_wal_inject_fault(t.wal, 4, ENOSPC);
	errno = 0;
	assert_int_equal(ls_wal_prepare_step(t.wal, 4, &more), LS_IO_ERROR);
	assert_int_equal(errno, ENOSPC);
	assert_false(more);
	assert_false(ls_wal_failed(t.wal));
	assert_int_equal(seg_size(t.dir, 3, ""), -1);
	assert_int_equal(seg_size(t.dir, 3, ".tmp"), -1);
	assert_int_equal(step_all(t.wal, 4), 4);
	assert_int_equal(seg_size(t.dir, 3, ""), segsz);

	/* rounds write through the segments the steps made (no LS_NO_SPACE) */
	for (int r = 0; r < 400; r++)
	{
		for (int k = 0; k < 15; k++)	/* 45 kB: the ring holds 64 */
			assert_int_equal(app(t.wal, 0, seq++, 3000, &end, &gsn), LS_OK);
		assert_int_equal(ls_wal_round(t.wal, NULL), LS_OK);
		step_all(t.wal, 2);
	}
	assert_int_equal(ls_wal_wait(t.wal, 0, end, 0), LS_OK);
	assert_true(ls_wal_end(t.wal) > 6 * cfg.segment_size);

	readout		o = read_all(t.dir, cfg.segment_size, 0);

	assert_int_equal(o.last, LS_NOT_FOUND);
	assert_true(o.bodies_ok);
	assert_int_equal(o.n, seq);
	free(o.recs);

	/* with keep_from moved, a missing segment is an old one renamed, at once */
	uint64_t	endseg = ls_wal_end(t.wal) / cfg.segment_size;
	uint64_t	want = endseg + 7;	/* ahead 7 needs it, 5 are missing */
	ino_t		ino0,
				ino;

	assert_true(seg_exists(t.dir, 0, &ino0));
	assert_int_equal(seg_size(t.dir, want, ""), -1);
	ls_wal_set_keep_from(t.wal, ls_wal_end(t.wal));
	assert_int_equal(step_all(t.wal, 7), 1);
	assert_false(seg_exists(t.dir, 0, NULL));
	assert_true(seg_exists(t.dir, want, &ino));
	for (uint64_t s = endseg; s <= want; s++)
		assert_int_equal(seg_size(t.dir, s, ""), segsz);
	wt_close(&t, true);
}

/* The generation file: a number, raised by each start; anything else refuses. */
static void
test_generation_file(void **state)
{
	(void) state;
	ls_wal_config cfg = small_cfg(1);
	size_t		size = ls_wal_region_size(&cfg);
	void	   *region = tu_shared_region(size);
	char	   *dir = tu_tempdir();
	char	   *gpath = tu_path(dir, "generation");
	ls_wal	   *wal;
	ls_wal_stats_out so;
	FILE	   *f;

	f = fopen(gpath, "w");
	fprintf(f, "41\n");
	fclose(f);
	assert_int_equal(ls_wal_init(region, size, &cfg, &wal), LS_OK);
	assert_int_equal(ls_wal_set_dir(wal, dir), LS_OK);
	assert_int_equal(ls_wal_start(wal, 0, 0), LS_OK);
	ls_wal_stats(wal, &so);
	assert_int_equal(so.generation, 42);

	/* not a number: refused, the generation is never guessed */
	f = fopen(gpath, "w");
	fprintf(f, "4x2\n");
	fclose(f);
	assert_int_equal(ls_wal_init(region, size, &cfg, &wal), LS_OK);
	assert_int_equal(ls_wal_set_dir(wal, dir), LS_OK);
	errno = 0;
	assert_int_equal(ls_wal_start(wal, 0, 0), LS_IO_ERROR);
	assert_int_equal(errno, EINVAL);
	assert_false(ls_wal_started(wal));

	/* unreadable (a directory in its place) */
	unlink(gpath);
	assert_int_equal(mkdir(gpath, 0700), 0);
	assert_int_equal(ls_wal_start(wal, 0, 0), LS_IO_ERROR);
	assert_false(ls_wal_started(wal));
	rmdir(gpath);
	assert_int_equal(ls_wal_start(wal, 0, 0), LS_OK);
	ls_wal_stats(wal, &so);
	assert_int_equal(so.generation, 1);

	ls_wal_detach(wal);
	tu_free_region(region, size);
	free(gpath);
	tu_rm_rf(dir);
	free(dir);
}

/* ------------------------------------------------------------------------
 * durable_gsn: never at or above a GSN that is not durable
 * ------------------------------------------------------------------------ */

#define DG_THREADS 3

typedef struct dg_ctl
{
	ls_wal	   *wal;
	uint32_t	per_thread;
	_Atomic uint32_t done;
	_Atomic uint32_t violations;
	_Atomic uint64_t partial_rounds;
	bool		lead;			/* appenders try committer rounds */
	bool		lazy;			/* the writer runs lazy rounds */
	_Atomic uint32_t led;		/* committer rounds that ran */
} dg_ctl;

typedef struct dg_arg
{
	dg_ctl	   *c;
	uint32_t	slot;
} dg_arg;

static void *
dg_appender(void *arg)
{
	dg_arg	   *a = arg;
	dg_ctl	   *c = a->c;
	uint64_t	rs = 77 + a->slot;

	for (uint32_t seq = 0; seq < c->per_thread; seq++)
	{
		uint64_t	end,
					gsn;
		uint32_t	blen = (uint32_t) (ls_rand_next(&rs) % 6000);

		if (app(c->wal, a->slot, seq, blen, &end, &gsn) != LS_OK)
		{
			atomic_fetch_add(&c->violations, 1);
			break;
		}
		if (ls_rand_next(&rs) % 3 != 0)
			continue;
		/* while waiting: whenever durable_gsn covers it, it is durable */
		for (;;)
		{
			uint64_t	dg = ls_wal_durable_gsn(c->wal);
			uint64_t	dur = ls_wal_durable(c->wal, a->slot);

			if (dg >= gsn && dur < end)
				atomic_fetch_add(&c->violations, 1);
			if (dur >= end)
				break;
			if (c->lead)
			{
				bool		ran;
				ls_status	st = ls_wal_try_round(c->wal, NULL, &ran);

				if (st == LS_IO_ERROR)
					break;
				if (ran && st == LS_OK)
				{
					/* synced (its records may be left for the next round: a full round) */
					atomic_fetch_add(&c->led, 1);
					continue;
				}
			}
			if (ls_wal_wait(c->wal, a->slot, end, 1) == LS_IO_ERROR)
				break;
		}
	}
	atomic_fetch_add(&c->done, 1);
	return NULL;
}

static void *
dg_writer(void *arg)
{
	dg_ctl	   *c = arg;

	while (atomic_load(&c->done) < DG_THREADS || ls_wal_writer_sleep(c->wal, 0))
	{
		ls_wal_round_stats rst;
		uint64_t	g0 = ls_wal_current_gsn(c->wal);

		ls_wal_writer_sleep(c->wal, 5);
		if ((c->lazy ? ls_wal_round_lazy(c->wal, &rst) : ls_wal_round(c->wal, &rst)) == LS_NO_SPACE)
		{
			if (ls_wal_prepare(c->wal, 4) != LS_OK)
				atomic_fetch_add(&c->violations, 1);
			continue;
		}
		if (ls_wal_durable_gsn(c->wal) < g0)
			atomic_fetch_add(&c->partial_rounds, 1);
	}
	return NULL;
}

static void
durable_gsn_threads(bool lead, bool lazy)
{
	ls_wal_config cfg = small_cfg(DG_THREADS);
	wt			t;
	dg_ctl		c = {.lead = lead,.lazy = lazy};
	pthread_t	w,
				th[DG_THREADS];
	dg_arg		args[DG_THREADS];

	wt_open(&t, cfg, NULL, 0, 4);
	c.wal = t.wal;
	c.per_thread = (uint32_t) tu_scaled(3000);
	assert_int_equal(pthread_create(&w, NULL, dg_writer, &c), 0);
	for (uint32_t i = 0; i < DG_THREADS; i++)
	{
		args[i] = (dg_arg)
		{
			.c = &c,.slot = i
		};
		assert_int_equal(pthread_create(&th[i], NULL, dg_appender, &args[i]), 0);
	}
	for (uint32_t i = 0; i < DG_THREADS; i++)
		pthread_join(th[i], NULL);
	pthread_join(w, NULL);
	assert_int_equal(atomic_load(&c.violations), 0);
	if (lazy)
		assert_int_equal(round_prepared(t.wal, NULL), LS_OK);	/* what lazy rounds left unsynced */
	assert_int_equal(ls_wal_durable_gsn(t.wal), ls_wal_current_gsn(t.wal));
	if (lead)
		assert_true(atomic_load(&c.led) > 0);

	readout		o = read_all(t.dir, cfg.segment_size, 0);

	assert_int_equal(o.last, LS_NOT_FOUND);
	assert_true(o.bodies_ok);
	assert_int_equal(o.n, c.per_thread * DG_THREADS);
	assert_true(check_rounds_prefix(t.dir, cfg.segment_size, &o) > 1);
	free(o.recs);
	wt_close(&t, true);
}

static void
test_durable_gsn_threads(void **state)
{
	(void) state;
	durable_gsn_threads(false, false);
}

/*
 * The same with the glue's mix: a writer running lazy rounds, appenders
 * that lead a synced round themselves while the writer sleeps; rounds
 * never overlap, every record is read back once, in order per slot.
 */
static void
test_committer_rounds(void **state)
{
	(void) state;
	durable_gsn_threads(true, true);
}

/* A round limited by round_buffer: durable_gsn stops below what it left. */
static void
test_partial_round(void **state)
{
	(void) state;
	ls_wal_config cfg = small_cfg(3);
	wt			t;
	uint64_t	end[3],
				gsn,
				first_left = 0;
	ls_wal_round_stats rst;

	wt_open(&t, cfg, NULL, 0, 4);
	/* 3 slots x ~60 KiB: more than one round's 128 KiB of blocks */
	for (uint32_t k = 0; k < 15; k++)
		for (uint32_t s = 0; s < 3; s++)
			assert_int_equal(app(t.wal, s, k, 4000, &end[s], &gsn), LS_OK);
	assert_int_equal(ls_wal_round(t.wal, &rst), LS_OK);
	assert_true(rst.records < 45);
	assert_true(rst.blocks <= cfg.round_buffer / LS_WAL_BLOCK);

	/* the smallest GSN not taken bounds durable_gsn */
	uint32_t	taken = 0;

	for (uint32_t s = 0; s < 3; s++)
	{
		uint64_t	d = ls_wal_durable(t.wal, s);

		assert_int_equal(d % (4000 + LS_WAL_REC_HDR), 0);
		uint32_t	k = (uint32_t) (d / (4000 + LS_WAL_REC_HDR));	/* first left */

		taken += k;
		if (k < 15)
		{
			uint64_t	g = (uint64_t) k * 3 + s + 1;	/* GSNs went round-robin */

			if (first_left == 0 || g < first_left)
				first_left = g;
		}
	}
	assert_int_equal(taken, rst.records);
	assert_true(first_left > 0);
	/* a GSN prefix: GSNs 1..taken taken, none above */
	assert_int_equal(taken, first_left - 1);
	assert_int_equal(ls_wal_durable_gsn(t.wal), first_left - 1);

	assert_int_equal(ls_wal_round(t.wal, &rst), LS_OK);
	assert_int_equal(rst.records, 45 - taken);
	assert_int_equal(ls_wal_durable_gsn(t.wal), 45);

	readout		o = read_all(t.dir, cfg.segment_size, 0);

	assert_int_equal(o.n, 45);
	assert_int_equal(check_rounds_prefix(t.dir, cfg.segment_size, &o), 2);
	free(o.recs);
	wt_close(&t, true);
}

/*
 * ls_wal_hold_slot (a test hook of the glue's crash tests): rounds leave a
 * held slot's records, a later record of another slot becomes durable
 * first, durable_gsn stays below the held one, and the held records do not
 * wake the writer; released, the next round takes it.
 */
static void
test_hold_slot(void **state)
{
	(void) state;
	ls_wal_config cfg = small_cfg(2);
	wt			t;
	uint64_t	end0,
				end1,
				g0,
				g1;
	ls_wal_round_stats rst;

	wt_open(&t, cfg, NULL, 0, 4);
	ls_wal_hold_slot(t.wal, 0, true);
	assert_int_equal(app(t.wal, 0, 1, 100, &end0, &g0), LS_OK);
	assert_int_equal(app(t.wal, 1, 2, 100, &end1, &g1), LS_OK);
	assert_true(g1 > g0);
	assert_int_equal(ls_wal_round(t.wal, &rst), LS_OK);
	assert_int_equal(rst.records, 1);
	assert_int_equal(ls_wal_durable(t.wal, 1), end1);
	assert_int_equal(ls_wal_durable(t.wal, 0), 0);
	assert_int_equal(ls_wal_wait(t.wal, 0, end0, 0), LS_BUSY);
	assert_int_equal(ls_wal_durable_gsn(t.wal), g0 - 1);
	/* the held records are no work for the writer (it spun on them) */
	(void) ls_wal_writer_sleep(t.wal, 0);	/* the wait's kick */
	assert_false(ls_wal_writer_sleep(t.wal, 0));

	ls_wal_hold_slot(t.wal, 0, false);
	assert_true(ls_wal_writer_sleep(t.wal, 0));
	assert_int_equal(ls_wal_round(t.wal, &rst), LS_OK);
	assert_int_equal(rst.records, 1);
	assert_int_equal(ls_wal_durable(t.wal, 0), end0);
	assert_int_equal(ls_wal_durable_gsn(t.wal), g1);
	wt_close(&t, true);
}

/*
 * The before_write hook: called once by each round that writes records,
 * before any of them is on disk (the glue flushes PostgreSQL's WAL there),
 * by lazy and committer rounds too; not by a round with nothing to write.
 */
typedef struct hook_seen
{
	wt		   *t;
	uint32_t	calls;
	uint32_t	on_disk;		/* records a reader found when it was called */
} hook_seen;

static void
count_hook(void *arg)
{
	hook_seen  *h = arg;
	readout		r = read_all(h->t->dir, h->t->cfg.segment_size, 0);

	h->calls++;
	h->on_disk = r.n;
	free(r.recs);
}

static void
test_before_write_hook(void **state)
{
	(void) state;
	ls_wal_config cfg = small_cfg(2);
	hook_seen	h = {0};
	wt			t;
	uint64_t	end,
				g;
	ls_wal_round_stats rst;
	bool		ran;

	cfg.before_write = count_hook;
	cfg.before_write_arg = &h;
	wt_open(&t, cfg, NULL, 0, 4);
	h.t = &t;
	assert_int_equal(ls_wal_round(t.wal, &rst), LS_OK);
	assert_int_equal(h.calls, 0);	/* nothing to write */
	assert_int_equal(app(t.wal, 0, 1, 100, &end, &g), LS_OK);
	assert_int_equal(app(t.wal, 1, 2, 100, &end, &g), LS_OK);
	assert_int_equal(ls_wal_round(t.wal, &rst), LS_OK);
	assert_int_equal(rst.records, 2);
	assert_int_equal(h.calls, 1);
	assert_int_equal(h.on_disk, 0);	/* before the round's blocks */
	assert_int_equal(app(t.wal, 0, 3, 100, &end, &g), LS_OK);
	assert_int_equal(ls_wal_round_lazy(t.wal, &rst), LS_OK);
	assert_int_equal(h.calls, 2);
	assert_int_equal(h.on_disk, 2);
	/* a committer's round, while the writer sleeps */
	(void) ls_wal_writer_sleep(t.wal, 0);
	assert_int_equal(app(t.wal, 1, 4, 100, &end, &g), LS_OK);
	assert_int_equal(ls_wal_try_round(t.wal, &rst, &ran), LS_OK);
	if (ran)
	{
		assert_int_equal(h.calls, 3);
		assert_int_equal(h.on_disk, 3);
	}
	wt_close(&t, true);
}

/*
 * The GSN protocol, step by step: an appender that took its GSN but has not
 * published its record yet (flag up) holds the round back, so the round
 * includes the record instead of declaring its GSN durable without it.
 */
typedef struct bg_round
{
	ls_wal	   *wal;
	_Atomic int done;
	ls_status	st;
	ls_wal_round_stats rst;
} bg_round;

static void *
bg_round_main(void *arg)
{
	bg_round   *b = arg;

	b->st = ls_wal_round(b->wal, &b->rst);
	atomic_store(&b->done, 1);
	return NULL;
}

static void
test_gsn_protocol(void **state)
{
	(void) state;
	ls_wal_config cfg = small_cfg(2);
	wt			t;
	pthread_t	th;

	wt_open(&t, cfg, NULL, 0, 2);
	assert_int_equal(app(t.wal, 1, 0, 10, NULL, NULL), LS_OK);

	/* slot 0 is between taking its GSN and publishing its record */
	wal_slot   *s = wal_slot_at(t.wal, 0);

	atomic_store(&s->appending, 1);
	uint64_t	g = atomic_fetch_add(&t.wal->gsn, 1) + 1;

	bg_round	b = {.wal = t.wal};

	assert_int_equal(pthread_create(&th, NULL, bg_round_main, &b), 0);
	usleep(50 * 1000);
	assert_int_equal(atomic_load(&b.done), 0);	/* the round waits for it */
	assert_true(ls_wal_durable_gsn(t.wal) < g);

	/* what ls_wal_append does after taking the GSN */
	uint8_t		rec[LS_WAL_REC_HDR + 40];
	ls_wal_rec	h = {.len = sizeof(rec), .type = 7, .flags = 0, .xid = 0, .slot = 0, .gsn = g};

	memcpy(rec, &h, sizeof(h));
	for (uint32_t k = 0; k < 40; k++)
		rec[LS_WAL_REC_HDR + k] = pattern_byte(0, 0, k);
	memcpy(wal_ring_at(t.wal, 0), rec, sizeof(rec));
	atomic_store_explicit(&s->head, sizeof(rec), memory_order_release);
	atomic_store(&s->appending, 0);

	pthread_join(th, NULL);
	assert_int_equal(b.st, LS_OK);
	assert_int_equal(b.rst.records, 2);
	assert_int_equal(ls_wal_durable(t.wal, 0), sizeof(rec));
	assert_int_equal(ls_wal_durable_gsn(t.wal), g);

	readout		o = read_all(t.dir, cfg.segment_size, 0);

	assert_int_equal(o.n, 2);
	assert_true(o.bodies_ok);
	free(o.recs);
	wt_close(&t, true);
}

/* ------------------------------------------------------------------------
 * Limits and arguments
 * ------------------------------------------------------------------------ */

static void
test_limits(void **state)
{
	(void) state;
	ls_wal_config cfg = small_cfg(1);
	wt			t;
	uint64_t	end,
				gsn;
	uint32_t	max = ls_wal_max_record(&cfg);

	assert_int_equal(max, cfg.slot_buffer / 2);
	wt_open(&t, cfg, NULL, 0, 2);
	assert_int_equal(app(t.wal, 0, 0, max - LS_WAL_REC_HDR + 1, &end, &gsn), LS_TOO_LARGE);
	assert_int_equal(ls_wal_current_gsn(t.wal), 0);
	assert_int_equal(app(t.wal, 0, 0, max - LS_WAL_REC_HDR, &end, &gsn), LS_OK);
	assert_int_equal(end, max);
	assert_int_equal(app(t.wal, 1, 0, 10, &end, &gsn), LS_INVALID);	/* no slot 1 */
	ls_wal_rec	bad = {.type = 0};

	assert_int_equal(ls_wal_append(t.wal, 0, &bad, NULL, NULL, 0, &end, &gsn), LS_INVALID);

	/* GSN counter: advance never lowers it */
	ls_wal_advance_gsn(t.wal, 1000);
	assert_int_equal(ls_wal_current_gsn(t.wal), 1000);
	ls_wal_advance_gsn(t.wal, 5);
	assert_int_equal(ls_wal_current_gsn(t.wal), 1000);
	assert_int_equal(app(t.wal, 0, 1, 10, &end, &gsn), LS_OK);
	assert_int_equal(gsn, 1001);
	assert_int_equal(ls_wal_round(t.wal, NULL), LS_OK);
	assert_int_equal(ls_wal_durable_gsn(t.wal), 1001);

	ls_wal_stats_out so;

	ls_wal_stats(t.wal, &so);
	assert_int_equal(so.rounds, 1);
	assert_int_equal(so.records, 2);
	assert_int_equal(so.generation, 1);
	/* a second start is refused */
	assert_int_equal(ls_wal_start(t.wal, 0, 0), LS_INVALID);
	wt_close(&t, true);

	/* configurations the contract excludes */
	ls_wal_config c2 = small_cfg(1);

	c2.slot_buffer = 96 * KIB;	/* not a power of two */
	assert_int_equal(ls_wal_region_size(&c2), 0);
	c2 = small_cfg(1);
	c2.round_buffer = 64 * KIB; /* < 2 * slot_buffer */
	assert_int_equal(ls_wal_region_size(&c2), 0);
	c2 = small_cfg(1);
	c2.segment_size = 64 * KIB + 100;
	assert_int_equal(ls_wal_region_size(&c2), 0);

	char		buf[256];
	ls_wal	   *w2;

	assert_int_equal(ls_wal_init(buf, sizeof(buf), &cfg, &w2), LS_INVALID);

	/* a start that is not block aligned; a reader start inside a header */
	size_t		size = ls_wal_region_size(&cfg);
	void	   *region = tu_shared_region(size);
	char	   *dir = tu_tempdir();
	ls_wal_reader *r;

	assert_int_equal(ls_wal_init(region, size, &cfg, &w2), LS_OK);
	assert_int_equal(ls_wal_start(w2, 0, 0), LS_INVALID);	/* no directory */
	assert_int_equal(ls_wal_set_dir(w2, dir), LS_OK);
	assert_int_equal(ls_wal_start(w2, 100, 0), LS_INVALID);
	assert_int_equal(ls_wal_reader_open(dir, cfg.segment_size, 8, &r), LS_INVALID);
	/* an empty directory is an empty log */
	readout		o = read_all(dir, cfg.segment_size, 0);

	assert_int_equal(o.n, 0);
	assert_int_equal(o.end, 0);
	assert_int_equal(o.last, LS_NOT_FOUND);
	free(o.recs);
	ls_wal_detach(w2);
	tu_free_region(region, size);
	tu_rm_rf(dir);
	free(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_before_write_hook),
		cmocka_unit_test(test_round_trip_plain_io),
		cmocka_unit_test(test_lazy_rounds),
		cmocka_unit_test(test_blocking_append),
		cmocka_unit_test(test_multiprocess),
		cmocka_unit_test(test_torn_tail),
		cmocka_unit_test(test_stale_generation),
		cmocka_unit_test(test_segments),
		cmocka_unit_test(test_io_errors),
		cmocka_unit_test(test_ring_short_write),
		cmocka_unit_test(test_prepare_enospc),
		cmocka_unit_test(test_prepare_step),
		cmocka_unit_test(test_trim_spares),
		cmocka_unit_test(test_generation_file),
		cmocka_unit_test(test_durable_gsn_threads),
		cmocka_unit_test(test_committer_rounds),
		cmocka_unit_test(test_partial_round),
		cmocka_unit_test(test_hold_slot),
		cmocka_unit_test(test_gsn_protocol),
		cmocka_unit_test(test_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
