/*
 * bench_core.c - core benchmark: the buffer-managed B+-tree (ls_btree)
 * against the in-memory baseline (ls_memtree) with the same node layout.
 *
 *  1. Random inserts of N keys into an empty tree (both engines).
 *  2. Uniform random lookups, 1 thread and 2 threads, everything in memory.
 *  3. Out of memory: pool = a quarter of the data pages, Zipf(0.99) and
 *     uniform lookups with a page-provider thread: ops/s, reads/s, hit rate.
 *
 * Keys are 8-byte big-endian integers, values 8 bytes.  Every measurement
 * is repeated (--runs, default 3); the table shows median and spread
 * ((max - min) / median), the last lines are "RESULT key=value".
 *
 * usage: bench_core [--keys N] [--lookups N] [--runs N] [--dir PATH]
 *                   [--ooc-secs S] [--only inmem|ooc]
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "leanstore/btree.h"

#define MAX_RUNS	9
#define PERM_MUL	2654435761ULL	/* prime: k -> k * PERM_MUL mod n is a bijection
									 * whenever n is not a multiple of it */

typedef struct options
{
	uint64_t	keys;
	uint64_t	lookups;
	int			runs;
	const char *dir;
	double		ooc_secs;		/* measured seconds per out-of-memory test */
	bool		inmem;
	bool		ooc;
} options;

static options opt = {10000000, 5000000, 3, "bench/out", 5.0, true, true};

/* i-th key of a pseudo-random permutation of [0, n). */
static inline uint64_t
perm(uint64_t i, uint64_t n)
{
	return (uint64_t) (((unsigned __int128) i * PERM_MUL) % n);
}

static double
now_s(void)
{
	return (double) ls_now_ns() / 1e9;
}

static void
die(const char *what, ls_status st)
{
	fprintf(stderr, "bench_core: %s: %s\n", what, ls_status_str(st));
	exit(1);
}

/* ------------------------------------------------------------------------
 * Statistics over runs
 * ------------------------------------------------------------------------ */
typedef struct series
{
	double		v[MAX_RUNS];
	int			n;
} series;

static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return (x > y) - (x < y);
}

static double
median(const series *s)
{
	double		t[MAX_RUNS];

	memcpy(t, s->v, sizeof(double) * (size_t) s->n);
	qsort(t, (size_t) s->n, sizeof(double), cmp_double);
	return s->n % 2 ? t[s->n / 2] : (t[s->n / 2 - 1] + t[s->n / 2]) / 2;
}

static double
spread_pct(const series *s)
{
	double		lo = s->v[0],
				hi = s->v[0];

	for (int i = 1; i < s->n; i++)
	{
		lo = fmin(lo, s->v[i]);
		hi = fmax(hi, s->v[i]);
	}
	double		m = median(s);

	return m > 0 ? 100.0 * (hi - lo) / m : 0;
}

/* ------------------------------------------------------------------------
 * Pools
 * ------------------------------------------------------------------------ */
typedef struct pool
{
	void	   *region;
	size_t		size;
	ls_bm	   *bm;
	char		path[4096];
} pool;

static void
pool_open(pool *p, uint64_t frames, const char *name, bool direct)
{
	ls_bm_config cfg = {0};
	ls_status	st;

	/* a directory per pool: each tree of the pool keeps its file there */
	snprintf(p->path, sizeof(p->path), "%s/%s", opt.dir, name);
	mkdir(p->path, 0755);
	p->size = ls_bm_region_size(frames);
	p->region = mmap(NULL, p->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p->region == MAP_FAILED)
	{
		perror("mmap");
		exit(1);
	}
	cfg.n_frames = frames;
	cfg.data_dir = p->path;
	cfg.use_direct_io = direct;
	cfg.free_target_pct = 5;
	st = ls_bm_init(p->region, p->size, &cfg, &p->bm);
	if (st != LS_OK && direct)
	{
		/* e.g. a file system without O_DIRECT */
		fprintf(stderr, "bench_core: O_DIRECT refused on %s, using buffered I/O\n", opt.dir);
		cfg.use_direct_io = false;
		st = ls_bm_init(p->region, p->size, &cfg, &p->bm);
	}
	if (st != LS_OK)
		die("ls_bm_init", st);
}

static void
pool_close(pool *p)
{
	ls_bm_process_detach(p->bm);
	munmap(p->region, p->size);
	/* the trees' files (dt<N>), then the directory */
	for (int i = 0; i < 64; i++)
	{
		char		f[4200];

		snprintf(f, sizeof(f), "%s/dt%d", p->path, i);
		unlink(f);
	}
	rmdir(p->path);
}

/* ------------------------------------------------------------------------
 * Workloads
 * ------------------------------------------------------------------------ */
typedef enum engine
{
	ENGINE_BM,
	ENGINE_MEM,
} engine;

typedef struct lookup_arg
{
	engine		eng;
	ls_btree   *bt;
	ls_memtree *mt;
	uint64_t	n;				/* lookups */
	uint64_t	keys;
	uint64_t	seed;
	bool		zipf;
	double		limit_s;		/* > 0: run for this long instead of n lookups */
	uint64_t	done;
	double		secs;
	uint64_t	sum;			/* defeats dead-code elimination */
	uint64_t	missing;
} lookup_arg;

/* Zipf(theta) over [0, n) (Gray et al.'s method, as YCSB uses). */
typedef struct zipf
{
	uint64_t	n;
	double		theta,
				alpha,
				zetan,
				eta;
} zipf;

static zipf zipf_gen;

static void
zipf_init(zipf *z, uint64_t n, double theta)
{
	double		zeta2 = 1.0 + pow(0.5, theta);

	z->n = n;
	z->theta = theta;
	z->zetan = 0;
	for (uint64_t i = 1; i <= n; i++)
		z->zetan += 1.0 / pow((double) i, theta);
	z->alpha = 1.0 / (1.0 - theta);
	z->eta = (1.0 - pow(2.0 / (double) n, 1.0 - theta)) / (1.0 - zeta2 / z->zetan);
}

static inline uint64_t
zipf_next(const zipf *z, uint64_t *rng)
{
	double		u = (double) (ls_rand_next(rng) >> 11) / 9007199254740992.0;
	double		uz = u * z->zetan;

	if (uz < 1.0)
		return 0;
	if (uz < 1.0 + pow(0.5, z->theta))
		return 1;
	uint64_t	r = (uint64_t) ((double) z->n * pow(z->eta * u - z->eta + 1.0, z->alpha));

	return r < z->n ? r : z->n - 1;
}

/*
 * Best possible leaf hit rate for Zipf lookups with `cached` leaves in the
 * pool: a clairvoyant static cache holding the most popular leaves.  Leaves
 * hold `per_leaf` consecutive keys (ascending bulk load).  Context for the
 * measured rate: scrambling spreads hot keys, so the hot set in pages is big.
 */
static double
ideal_leaf_hit(uint64_t leaves, uint64_t per_leaf, uint64_t cached)
{
	double	   *pop = calloc(leaves, sizeof(double));

	if (!pop)
		return 0;
	for (uint64_t r = 0; r < opt.keys; r++)
	{
		uint64_t	leaf = perm(r, opt.keys) / per_leaf;

		pop[leaf < leaves ? leaf : leaves - 1] += pow((double) (r + 1), -zipf_gen.theta) / zipf_gen.zetan;
	}
	qsort(pop, leaves, sizeof(double), cmp_double);
	double		hit = 0;

	for (uint64_t i = 0; i < cached && i < leaves; i++)
		hit += pop[leaves - 1 - i];
	free(pop);
	return hit;
}

static void *
lookup_thread(void *p)
{
	lookup_arg *a = p;
	uint64_t	rng = a->seed;
	uint8_t		key[8];
	uint64_t	v,
				sum = 0,
				missing = 0;
	uint32_t	vlen;
	double		t0 = now_s();

	uint64_t	i;

	for (i = 0; a->limit_s > 0 || i < a->n; i++)
	{
		if (a->limit_s > 0 && (i & 255) == 0 && now_s() - t0 >= a->limit_s)
			break;
		uint64_t	k = a->zipf ? perm(zipf_next(&zipf_gen, &rng), a->keys)
			: ls_rand_next(&rng) % a->keys;
		ls_status	st;

		ls_put_be64(key, k);
		if (a->eng == ENGINE_BM)
			st = ls_btree_lookup(a->bt, key, 8, &v, 8, &vlen);
		else
			st = ls_memtree_lookup(a->mt, key, 8, &v, 8, &vlen);
		if (LS_LIKELY(st == LS_OK))
			sum += v;
		else
			missing++;
	}
	a->secs = now_s() - t0;
	a->done = i;
	a->sum = sum;
	a->missing = missing;
	if (a->eng == ENGINE_BM)
		ls_bm_publish_hits(a->bt->bm);
	return NULL;
}

/* ops/s of nthreads running n lookups each (or for limit_s seconds). */
static double
run_lookups_for(engine eng, ls_btree *bt, ls_memtree *mt, int nthreads, uint64_t n, bool zipf,
				uint64_t seed, double limit_s)
{
	pthread_t	th[8];
	lookup_arg	a[8];
	double		t0 = now_s();

	for (int i = 0; i < nthreads; i++)
	{
		a[i] = (lookup_arg) {eng, bt, mt, n, opt.keys, seed * 7919 + (uint64_t) i * 104729 + 1, zipf,
		limit_s, 0, 0, 0, 0};
		if (pthread_create(&th[i], NULL, lookup_thread, &a[i]) != 0)
		{
			perror("pthread_create");
			exit(1);
		}
	}
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	double		secs = now_s() - t0;
	uint64_t	done = 0;

	for (int i = 0; i < nthreads; i++)
	{
		if (a[i].missing)
		{
			fprintf(stderr, "bench_core: %llu lookups found nothing\n", (unsigned long long) a[i].missing);
			exit(1);
		}
		done += a[i].done;
	}
	return (double) done / secs;
}

static double
run_lookups(engine eng, ls_btree *bt, ls_memtree *mt, int nthreads, uint64_t n, bool zipf, uint64_t seed)
{
	return run_lookups_for(eng, bt, mt, nthreads, n, zipf, seed, 0);
}

/* Insert keys [from, to) of the permutation into one engine; returns seconds. */
static double
insert_range(engine eng, ls_btree *bt, ls_memtree *mt, uint64_t from, uint64_t to)
{
	uint8_t		key[8];
	double		t0 = now_s();

	for (uint64_t i = from; i < to; i++)
	{
		uint64_t	k = perm(i, opt.keys);
		ls_status	st;

		ls_put_be64(key, k);
		if (eng == ENGINE_BM)
			st = ls_btree_insert(bt, key, 8, &k, 8);
		else
			st = ls_memtree_insert(mt, key, 8, &k, 8);
		if (st != LS_OK)
			die(eng == ENGINE_BM ? "ls_btree_insert" : "ls_memtree_insert", st);
	}
	return now_s() - t0;
}

/*
 * The in-memory comparisons run both engines alternately in SLICES slices
 * and add up each engine's time, so background load (a shared machine)
 * falls on both about equally; ratios are taken per run (paired).
 */
#define SLICES 10

static void
insert_both(ls_btree *bt, ls_memtree *mt, double *bm_ops, double *mem_ops)
{
	double		tb = 0,
				tm = 0;

	for (uint64_t s = 0; s < SLICES; s++)
	{
		uint64_t	from = opt.keys * s / SLICES,
					to = opt.keys * (s + 1) / SLICES;

		tm += insert_range(ENGINE_MEM, NULL, mt, from, to);
		tb += insert_range(ENGINE_BM, bt, NULL, from, to);
	}
	*bm_ops = (double) opt.keys / tb;
	*mem_ops = (double) opt.keys / tm;
}

static void
lookup_both(ls_btree *bt, ls_memtree *mt, int nthreads, uint64_t seed, double *bm_ops, double *mem_ops)
{
	double		tb = 0,
				tm = 0;
	uint64_t	n = opt.lookups / SLICES + 1;

	for (uint64_t s = 0; s < SLICES; s++)
	{
		tm += (double) n * nthreads / run_lookups(ENGINE_MEM, NULL, mt, nthreads, n, false, seed * SLICES + s);
		tb += (double) n * nthreads / run_lookups(ENGINE_BM, bt, NULL, nthreads, n, false, seed * SLICES + s);
	}
	*bm_ops = (double) n * SLICES * nthreads / tb;
	*mem_ops = (double) n * SLICES * nthreads / tm;
}

/* ------------------------------------------------------------------------
 * Main
 * ------------------------------------------------------------------------ */
static void
parse_args(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
	{
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--keys") == 0 && v)
			opt.keys = strtoull(v, NULL, 10);
		else if (strcmp(a, "--lookups") == 0 && v)
			opt.lookups = strtoull(v, NULL, 10);
		else if (strcmp(a, "--runs") == 0 && v)
			opt.runs = atoi(v);
		else if (strcmp(a, "--dir") == 0 && v)
			opt.dir = v;
		else if (strcmp(a, "--ooc-secs") == 0 && v)
			opt.ooc_secs = atof(v);
		else if (strcmp(a, "--only") == 0 && v && (strcmp(v, "inmem") == 0 || strcmp(v, "ooc") == 0))
		{
			opt.inmem = strcmp(v, "inmem") == 0;
			opt.ooc = !opt.inmem;
		}
		else
		{
			fprintf(stderr, "usage: %s [--keys N] [--lookups N] [--runs N (1..%d)] [--dir PATH]"
					" [--ooc-secs S] [--only inmem|ooc]\n",
					argv[0], MAX_RUNS);
			exit(2);
		}
		i++;
	}
	if (opt.keys < 1000 || opt.keys % PERM_MUL == 0 || opt.runs < 1 || opt.runs > MAX_RUNS || opt.lookups < 1)
	{
		fprintf(stderr, "bench_core: need --keys >= 1000, --runs 1..%d, --lookups >= 1\n", MAX_RUNS);
		exit(2);
	}
}

/* One table line: median with prec decimals, unit, spread. */
static void
row(const char *name, const series *s, const char *unit, int prec)
{
	printf("  %-44s %14.*f %-8s %6.1f%%\n", name, prec, median(s), unit, spread_pct(s));
}

/* Out-of-memory pool: a quarter of the estimated data pages (full leaves
 * hold ~580 8-byte entries; inner pages add < 1%). */
static uint64_t
ooc_frames(void)
{
	return LS_MAX(64, (opt.keys / 570 + 8) / 4);
}

int
main(int argc, char **argv)
{
	series		ins_bm = {0},
				ins_mem = {0},
				lk1_bm = {0},
				lk1_mem = {0},
				lk2_bm = {0},
				lk2_mem = {0},
				ins_ratio = {0},
				lk1_ratio = {0},
				lk2_ratio = {0};
	series		oz_ops = {0},
				oz_reads = {0},
				oz_hit = {0},
				ou_ops = {0},
				ou_reads = {0},
				ou_hit = {0},
				oz_leafhit = {0},
				ou_leafhit = {0};
	uint64_t	data_pages = 0;
	double		ideal_zipf = 0;

	parse_args(argc, argv);
	mkdir(opt.dir, 0755);
	ls_btree_register_type();
	printf("bench_core: %llu keys (8-byte big-endian, 8-byte values), %llu lookups per thread, %d runs\n",
		   (unsigned long long) opt.keys, (unsigned long long) opt.lookups, opt.runs);
	fflush(stdout);

	/* In memory: both engines, interleaved per run. */
	for (int r = 0; opt.inmem && r < opt.runs; r++)
	{
		pool		p;
		ls_btree	bt;
		ls_memtree	mt;
		ls_status	st;

		/* random fill leaves nodes ~70% full: 8-byte entries ~ 28 bytes */
		pool_open(&p, opt.keys / 300 + 1024, "core-inmem.data", false);
		st = ls_btree_create(p.bm, &bt);
		if (st != LS_OK)
			die("ls_btree_create", st);
		if ((st = ls_memtree_create(&mt)) != LS_OK)
			die("ls_memtree_create", st);
		insert_both(&bt, &mt, &ins_bm.v[r], &ins_mem.v[r]);
		lookup_both(&bt, &mt, 1, (uint64_t) r, &lk1_bm.v[r], &lk1_mem.v[r]);
		lookup_both(&bt, &mt, 2, (uint64_t) r + 50, &lk2_bm.v[r], &lk2_mem.v[r]);
		ins_bm.n = ins_mem.n = lk1_bm.n = lk1_mem.n = lk2_bm.n = lk2_mem.n = r + 1;
		ins_ratio.v[r] = ins_bm.v[r] / ins_mem.v[r];
		lk1_ratio.v[r] = lk1_bm.v[r] / lk1_mem.v[r];
		lk2_ratio.v[r] = lk2_bm.v[r] / lk2_mem.v[r];
		ins_ratio.n = lk1_ratio.n = lk2_ratio.n = r + 1;
		ls_bm_stats s;

		ls_bm_get_stats(p.bm, &s);
		if (s.reads != 0)
		{
			fprintf(stderr, "bench_core: the in-memory pool read pages: too small\n");
			return 1;
		}
		fprintf(stderr, "  run %d: insert mem %.0f bm %.0f; lookup 1t mem %.0f bm %.0f; 2t mem %.0f bm %.0f\n",
				r + 1, ins_mem.v[r], ins_bm.v[r], lk1_mem.v[r], lk1_bm.v[r], lk2_mem.v[r], lk2_bm.v[r]);
		ls_memtree_destroy(&mt);
		if ((st = ls_btree_destroy(&bt)) != LS_OK)
			die("ls_btree_destroy", st);
		pool_close(&p);
	}

	/*
	 * Out of memory: bulk-load the keys (ascending, append path) into a pool
	 * that then shrinks to a quarter of the data: the load happens with the
	 * final pool size, so it evicts as it goes.
	 */
	if (opt.ooc)
		zipf_init(&zipf_gen, opt.keys, 0.99);
	for (int r = 0; opt.ooc && r < opt.runs; r++)
	{
		pool		p;
		ls_btree	bt;
		ls_status	st;
		uint8_t		key[8];
		uint64_t	frames = ooc_frames();

		pool_open(&p, frames, "core-ooc.data", true);
		if ((st = ls_btree_create(p.bm, &bt)) != LS_OK)
			die("ls_btree_create", st);
		if ((st = ls_bm_provider_start_thread(p.bm)) != LS_OK)
			die("ls_bm_provider_start_thread", st);
		for (uint64_t k = 0; k < opt.keys; k++)
		{
			ls_put_be64(key, k);
			if ((st = ls_btree_append(&bt, key, 8, &k, 8)) != LS_OK)
				die("ls_btree_append", st);
		}
		ls_bm_stats s0,
					s1;

		ls_bm_get_stats(p.bm, &s0);
		data_pages = s0.allocated_pages;
		if (r == 0)
		{
			char		msg[256];
			ls_btree_info info;

			if ((st = ls_btree_verify(&bt, &info, msg, sizeof(msg))) != LS_OK)
			{
				fprintf(stderr, "bench_core: verify: %s\n", msg);
				return 1;
			}
			/* frames not taken by inner pages (those stay: they have hot children) */
			ideal_zipf = ideal_leaf_hit(info.leaves, (info.entries + info.leaves - 1) / info.leaves,
										frames > info.inner ? frames - info.inner : 0);
		}
		for (int dist = 0; dist < 2; dist++)
		{
			bool		z = dist == 0;

			/* warm up (fills the pool with what the distribution likes) */
			run_lookups_for(ENGINE_BM, &bt, NULL, 1, 0, z, (uint64_t) r + 100, opt.ooc_secs / 2);
			ls_bm_get_stats(p.bm, &s0);
			double		t0 = now_s();
			double		ops = run_lookups_for(ENGINE_BM, &bt, NULL, 1, 0, z, (uint64_t) r + 200, opt.ooc_secs);
			double		secs = now_s() - t0;

			ls_bm_get_stats(p.bm, &s1);
			double		acc = (double) ((s1.hits - s0.hits) + (s1.misses - s0.misses));
			double		hit = acc > 0 ? (double) (s1.hits - s0.hits) / acc : 0;
			double		reads = (double) (s1.reads - s0.reads) / secs;

			(z ? &oz_ops : &ou_ops)->v[r] = ops;
			(z ? &oz_reads : &ou_reads)->v[r] = reads;
			(z ? &oz_hit : &ou_hit)->v[r] = hit * 100;
			/* leaf hit rate: inner pages never miss here, so misses are leaf misses */
			(z ? &oz_leafhit : &ou_leafhit)->v[r] = 100.0 * (1.0 - (double) (s1.misses - s0.misses) / (ops * secs));
			fprintf(stderr, "  ooc run %d %s: %.0f ops/s, %.0f reads/s, page hit rate %.2f%%\n",
					r + 1, z ? "zipf" : "uniform", ops, reads, hit * 100);
		}
		oz_ops.n = oz_reads.n = oz_hit.n = ou_ops.n = ou_reads.n = ou_hit.n = r + 1;
		oz_leafhit.n = ou_leafhit.n = r + 1;
		ls_bm_provider_stop(p.bm);
		if ((st = ls_btree_destroy(&bt)) != LS_OK)
			die("ls_btree_destroy", st);
		pool_close(&p);
	}

	printf("\n  %-44s %14s %-8s %7s\n", "measurement (median of runs)", "value", "unit", "spread");
	if (opt.inmem)
	{
		row("insert random, in-memory baseline", &ins_mem, "ops/s", 0);
		row("insert random, buffer-managed", &ins_bm, "ops/s", 0);
		row("lookup uniform 1 thread, in-memory baseline", &lk1_mem, "ops/s", 0);
		row("lookup uniform 1 thread, buffer-managed", &lk1_bm, "ops/s", 0);
		row("lookup uniform 2 threads, in-memory baseline", &lk2_mem, "ops/s", 0);
		row("lookup uniform 2 threads, buffer-managed", &lk2_bm, "ops/s", 0);
		row("insert ratio bm/baseline (paired per run)", &ins_ratio, "", 3);
		row("lookup ratio 1 thread (paired per run)", &lk1_ratio, "", 3);
		row("lookup ratio 2 threads (paired per run)", &lk2_ratio, "", 3);
	}
	if (opt.ooc)
	{
		printf("  out of memory: %llu data pages, pool %llu frames (a quarter)\n",
			   (unsigned long long) data_pages, (unsigned long long) ooc_frames());
		row("ooc zipf(0.99) lookups", &oz_ops, "ops/s", 0);
		row("ooc zipf(0.99) page reads", &oz_reads, "reads/s", 0);
		row("ooc zipf(0.99) page hit rate", &oz_hit, "%", 2);
		row("ooc zipf(0.99) leaf hit rate", &oz_leafhit, "%", 2);
		printf("  %-44s %14.2f %-8s\n", "  best static leaf cache of that size", ideal_zipf * 100, "%");
		row("ooc uniform lookups", &ou_ops, "ops/s", 0);
		row("ooc uniform page reads", &ou_reads, "reads/s", 0);
		row("ooc uniform page hit rate", &ou_hit, "%", 2);
		row("ooc uniform leaf hit rate", &ou_leafhit, "%", 2);
	}
	printf("\n");
	printf("RESULT keys=%llu\n", (unsigned long long) opt.keys);
	if (opt.ooc)
	{
		printf("RESULT ooc_zipf_ops=%.0f\n", median(&oz_ops));
		printf("RESULT ooc_zipf_reads_per_s=%.0f\n", median(&oz_reads));
		printf("RESULT ooc_uniform_ops=%.0f\n", median(&ou_ops));
		printf("RESULT ooc_uniform_hit_rate=%.4f\n", median(&ou_hit) / 100);
		printf("RESULT ooc_zipf_leaf_hit_rate=%.4f\n", median(&oz_leafhit) / 100);
		printf("RESULT ooc_zipf_ideal_leaf_hit_rate=%.4f\n", ideal_zipf);
		printf("RESULT ooc_zipf_hit_rate=%.4f\n", median(&oz_hit) / 100);
	}
	if (opt.inmem)
	{
		printf("RESULT insert_bm_ops=%.0f\n", median(&ins_bm));
		printf("RESULT insert_inmem_ops=%.0f\n", median(&ins_mem));
		printf("RESULT lookup_bm_ops=%.0f\n", median(&lk1_bm));
		printf("RESULT lookup_inmem_ops=%.0f\n", median(&lk1_mem));
		printf("RESULT lookup_ratio_bm_vs_inmem_2t=%.3f\n", median(&lk2_ratio));
		printf("RESULT insert_ratio_bm_vs_inmem=%.3f\n", median(&ins_ratio));
		printf("RESULT lookup_ratio_bm_vs_inmem=%.3f\n", median(&lk1_ratio));
	}
	return 0;
}
