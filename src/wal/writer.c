/*
 * writer.c - the log writer (one process): generation file, group-commit
 * rounds into 512-byte blocks written with io_uring, segment preparation
 * and recycling, and the process-local state behind a region's handle
 * (log directory, open segment files, round buffer, ring).  See README.md.
 */
#include "wal_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOCAL_MAX		16
#define RING_DEPTH		64
#define ZERO_CHUNK		(256 * 1024)
/* A lazy round syncs anyway once this much is written but not synced. */
#define LAZY_SYNC_BYTES	(8 * 1024 * 1024)
/* Segments with unsynced writes a lazy round may leave (else it syncs). */
#define LAZY_SEGS		8
_Static_assert(LAZY_SEGS == sizeof(((ls_wal *) 0)->lazy_segs) / sizeof(uint64_t), "lazy_segs");

typedef struct seg_fd
{
	uint64_t	segno;
	int			fd;				/* -1: unused entry */
	uint64_t	used;			/* LRU stamp */
} seg_fd;

struct wal_local
{
	ls_wal	   *wal;			/* NULL: free entry */
	pid_t		owner;
	char	   *dir;
	uint8_t    *buf;			/* round buffer (round_buffer bytes) */
	uint64_t   *take;			/* per slot: stream offset taken to */
	uint32_t   *took;			/* slots taken from in this round */
	uint64_t   *lim;			/* per slot: end of its records with a GSN up
								 * to the round's bound (round_select) */
	uint64_t   *next_gsn;		/* per slot: GSN of the record at take, or
								 * UINT64_MAX (round_cut's merge) */
	seg_fd	   *fds;
	uint32_t	nfds;
	uint64_t	stamp;
	bool		ring_ok;
	bool		ring_failed;
	struct io_uring ring;
	/* ls_wal_prepare_step: a new segment written with zeros a piece a call */
	bool		mk_open;		/* mk_fd is the open <mk_seg>.tmp */
	int			mk_fd;
	uint64_t	mk_seg;
	uint64_t	mk_off;			/* zeros written below this offset */
	uint64_t	ready_below;	/* segments from written_end's up to this one
								 * are known to exist at full size */
	uint8_t    *zero;			/* ZERO_CHUNK zero bytes */
	/* trim_spares: the recycling bound and limit it last trimmed for */
	uint64_t	trimmed_below;
	uint64_t	trimmed_spare;
};

static wal_local locals[LOCAL_MAX];
static pthread_mutex_t locals_mutex = PTHREAD_MUTEX_INITIALIZER;

static void mk_abandon(wal_local *l);

static void
local_release(wal_local *l, bool own)
{
	if (own && l->ring_ok)
		io_uring_queue_exit(&l->ring);
	if (own)
		mk_abandon(l);
	else if (l->mk_open)
		close(l->mk_fd);		/* the parent's half-made segment is the parent's */
	for (uint32_t i = 0; i < l->nfds; i++)
		if (l->fds[i].fd >= 0)
			close(l->fds[i].fd);
	free(l->fds);
	free(l->buf);
	free(l->take);
	free(l->took);
	free(l->lim);
	free(l->next_gsn);
	free(l->zero);
	free(l->dir);
	memset(l, 0, sizeof(*l));
}

wal_local *
wal_local_get(ls_wal *wal, bool create)
{
	wal_local  *found = NULL;

	pthread_mutex_lock(&locals_mutex);
	for (int i = 0; i < LOCAL_MAX && found == NULL; i++)
		if (locals[i].wal == wal)
			found = &locals[i];
	if (found != NULL && found->owner != getpid())
	{
		/*
		 * Inherited across fork: the files are this process's own copies
		 * and can go, the ring cannot be used here (leave its mapping).
		 */
		char	   *dir = found->dir;

		found->dir = NULL;
		found->ring_ok = false;
		local_release(found, false);
		found->wal = wal;
		found->dir = dir;
		found->owner = getpid();
	}
	if (found == NULL && create)
	{
		for (int i = 0; i < LOCAL_MAX && found == NULL; i++)
			if (locals[i].wal == NULL)
			{
				found = &locals[i];
				memset(found, 0, sizeof(*found));
				found->wal = wal;
				found->owner = getpid();
			}
	}
	pthread_mutex_unlock(&locals_mutex);
	return found;
}

const char *
wal_local_dir(ls_wal *wal)
{
	wal_local  *l = wal_local_get(wal, false);

	return l ? l->dir : NULL;
}

void
wal_local_drop(ls_wal *wal)
{
	pthread_mutex_lock(&locals_mutex);
	for (int i = 0; i < LOCAL_MAX; i++)
		if (locals[i].wal == wal)
			local_release(&locals[i], locals[i].owner == getpid());
	pthread_mutex_unlock(&locals_mutex);
}

void
ls_wal_detach(ls_wal *wal)
{
	wal_local_drop(wal);
}

ls_status
ls_wal_set_dir(ls_wal *wal, const char *dir)
{
	struct stat st;

	if (dir == NULL || stat(dir, &st) != 0)
		return dir == NULL ? LS_INVALID : LS_IO_ERROR;
	if (!S_ISDIR(st.st_mode))
	{
		errno = ENOTDIR;
		return LS_IO_ERROR;
	}

	wal_local  *l = wal_local_get(wal, true);
	char	   *copy = strdup(dir);

	if (l == NULL || copy == NULL)
	{
		free(copy);
		return LS_NO_MEMORY;
	}
	free(l->dir);
	l->dir = copy;
	return LS_OK;
}

void
wal_segment_path(char *buf, size_t len, const char *dir, uint64_t segno)
{
	snprintf(buf, len, "%s/%016llX", dir, (unsigned long long) segno);
}

uint32_t
wal_block_crc(const uint8_t *block)
{
	static const uint8_t zero[4];
	uint32_t	crc = ls_crc32c(0, zero, sizeof(zero));

	return ls_crc32c(crc, block + 4, LS_WAL_BLOCK - 4);
}

static ls_status
fsync_dir(const char *dir)
{
	int			fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return LS_IO_ERROR;
	if (fsync(fd) != 0)
	{
		int			e = errno;

		close(fd);
		errno = e;
		return LS_IO_ERROR;
	}
	close(fd);
	return LS_OK;
}

/* ------------------------------------------------------------------------
 * Generation and start
 * ------------------------------------------------------------------------ */

static ls_status
next_generation(const char *dir, uint32_t *gen)
{
	size_t		plen = strlen(dir) + 32;
	char	   *path = malloc(plen);
	char	   *tmp = malloc(plen);
	uint64_t	old = 0;
	ls_status	st = LS_OK;
	int			fd;

	if (path == NULL || tmp == NULL)
	{
		free(path);
		free(tmp);
		return LS_NO_MEMORY;
	}
	snprintf(path, plen, "%s/generation", dir);
	snprintf(tmp, plen, "%s/generation.tmp", dir);

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
	{
		char		text[32] = {0};
		ssize_t		r = read(fd, text, sizeof(text) - 1);

		close(fd);
		if (r < 0)
			st = LS_IO_ERROR;
		else
		{
			char	   *e;

			old = strtoull(text, &e, 10);
			if (e == text || (*e != '\n' && *e != '\0') || old >= UINT32_MAX)
			{
				errno = EINVAL; /* not ours: never guess a generation */
				st = LS_IO_ERROR;
			}
		}
	}
	else if (errno != ENOENT)
		st = LS_IO_ERROR;

	if (st == LS_OK)
	{
		char		text[32];
		int			n = snprintf(text, sizeof(text), "%llu\n", (unsigned long long) (old + 1));

		fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0)
			st = LS_IO_ERROR;
		else
		{
			st = ls_pwrite_full(fd, text, (size_t) n, 0);
			if (st == LS_OK && fsync(fd) != 0)
				st = LS_IO_ERROR;
			int			e = errno;

			close(fd);
			errno = e;
		}
		if (st == LS_OK && rename(tmp, path) != 0)
			st = LS_IO_ERROR;
		if (st == LS_OK)
			st = fsync_dir(dir);
	}
	free(path);
	free(tmp);
	if (st == LS_OK)
		*gen = (uint32_t) (old + 1);
	return st;
}

ls_status
ls_wal_start(ls_wal *wal, uint64_t start, uint64_t keep_from)
{
	const char *dir = wal_local_dir(wal);
	uint32_t	gen = 0;

	if (dir == NULL || start % LS_WAL_BLOCK != 0 || atomic_load(&wal->started))
		return LS_INVALID;
	ls_status	st = next_generation(dir, &gen);

	if (st != LS_OK)
		return st;
	atomic_store(&wal->generation, gen);
	atomic_store(&wal->end, start);
	atomic_store(&wal->written_end, start);
	atomic_store(&wal->keep_from, keep_from);

	/* everything recovery saw is durable: no record below the counter is pending */
	ls_atomic_raise_u64(&wal->durable_gsn, atomic_load(&wal->gsn));
	atomic_store(&wal->started, 1);
	ls_futex_wake(&wal->started, INT32_MAX);
	return LS_OK;
}

/* ------------------------------------------------------------------------
 * Segment files
 * ------------------------------------------------------------------------ */

static void
forget_fd(wal_local *l, uint64_t segno)
{
	for (uint32_t i = 0; i < l->nfds; i++)
		if (l->fds[i].fd >= 0 && l->fds[i].segno == segno)
		{
			close(l->fds[i].fd);
			l->fds[i].fd = -1;
		}
}

/* The open file of a prepared segment; LS_NO_SPACE when not prepared. */
static ls_status
segment_fd(ls_wal *wal, wal_local *l, uint64_t segno, int *fd)
{
	seg_fd	   *victim = &l->fds[0];

	for (uint32_t i = 0; i < l->nfds; i++)
	{
		seg_fd	   *e = &l->fds[i];

		if (e->fd >= 0 && e->segno == segno)
		{
			e->used = ++l->stamp;
			*fd = e->fd;
			return LS_OK;
		}
		if (e->fd < 0 || (victim->fd >= 0 && e->used < victim->used))
			victim = e;
	}

	char		path[4096];
	struct stat st;

	wal_segment_path(path, sizeof(path), l->dir, segno);
	int			f = open(path, O_RDWR | O_CLOEXEC);

	if (f < 0)
		return errno == ENOENT ? LS_NO_SPACE : LS_IO_ERROR;
	if (fstat(f, &st) != 0)
	{
		int			e = errno;

		close(f);
		errno = e;
		return LS_IO_ERROR;
	}
	if ((uint64_t) st.st_size < wal->cfg.segment_size)
	{
		close(f);
		return LS_NO_SPACE;
	}
	if (victim->fd >= 0)
		close(victim->fd);
	victim->fd = f;
	victim->segno = segno;
	victim->used = ++l->stamp;
	*fd = f;
	return LS_OK;
}

static bool take_fault(ls_wal *wal, uint32_t what);

/* Write zeros into fd over [from, to) and fsync it. */
static ls_status
zero_fill(int fd, uint64_t from, uint64_t to)
{
	uint8_t    *zero = calloc(1, ZERO_CHUNK);
	ls_status	st = LS_OK;

	if (zero == NULL)
		return LS_NO_MEMORY;
	for (uint64_t off = from; st == LS_OK && off < to; off += ZERO_CHUNK)
		st = ls_pwrite_full(fd, zero, LS_MIN(ZERO_CHUNK, to - off), off);
	if (st == LS_OK && fsync(fd) != 0)
		st = LS_IO_ERROR;
	int			e = errno;

	free(zero);
	errno = e;
	return st;
}

/*
 * Extend segment segno, shorter than a segment (made or cut outside the
 * writer), with zeros: it keeps its whole blocks, which may hold valid log.
 * New segments are made by mk_start and mk_continue.
 */
static ls_status
extend_segment(ls_wal *wal, wal_local *l, uint64_t segno, uint64_t size)
{
	char		path[4096];
	ls_status	st;
	int			fd,
				e;

	wal_segment_path(path, sizeof(path), l->dir, segno);
	forget_fd(l, segno);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return LS_IO_ERROR;
	st = zero_fill(fd, size - size % LS_WAL_BLOCK, wal->cfg.segment_size);
	e = errno;
	close(fd);
	errno = e;
	return st;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *) a;
	uint64_t	y = *(const uint64_t *) b;

	return x < y ? -1 : x > y;
}

/* Segment numbers below `below` present in dir, ascending (malloc'ed). */
static ls_status
old_segments(const char *dir, uint64_t below, uint64_t **out, uint32_t *n)
{
	DIR		   *d = opendir(dir);
	uint32_t	cap = 0;

	*out = NULL;
	*n = 0;
	if (d == NULL)
		return LS_IO_ERROR;
	for (struct dirent *de; (de = readdir(d)) != NULL;)
	{
		char	   *e;
		uint64_t	segno;

		if (strlen(de->d_name) != 16)
			continue;
		segno = strtoull(de->d_name, &e, 16);
		if (*e != '\0' || segno >= below)
			continue;
		if (*n == cap)
		{
			uint64_t   *more = realloc(*out, sizeof(uint64_t) * (cap = cap ? cap * 2 : 16));

			if (more == NULL)
			{
				closedir(d);
				free(*out);
				*out = NULL;
				return LS_NO_MEMORY;
			}
			*out = more;
		}
		(*out)[(*n)++] = segno;
	}
	closedir(d);
	if (*n > 1)
		qsort(*out, *n, sizeof(uint64_t), cmp_u64);
	return LS_OK;
}

/* Segments below this one may be recycled (keep_from's block and the one before stay). */
static uint64_t
recycle_below(ls_wal *wal)
{
	uint64_t	end = atomic_load(&wal->end);
	uint64_t	keep = LS_MIN(atomic_load(&wal->keep_from), end);

	/* the block before keep_from stays: a reader starting there needs it */
	return keep < LS_WAL_BLOCK ? 0 : (keep - LS_WAL_BLOCK) / wal->cfg.segment_size;
}

/* Rename old segment o (recyclable) to segment s; false when it is not there whole. */
static bool
recycle_into(wal_local *l, uint64_t segsz, uint64_t o, const char *path)
{
	char		from[4096];
	struct stat sb;

	wal_segment_path(from, sizeof(from), l->dir, o);
	forget_fd(l, o);
	return stat(from, &sb) == 0 && (uint64_t) sb.st_size >= segsz &&
		rename(from, path) == 0;
}

static ls_status mk_start(ls_wal *wal, wal_local *l, uint64_t segno);
static ls_status mk_continue(ls_wal *wal, wal_local *l, uint64_t budget);

/* Local state ready for preparing; LS_OK or why not. */
static ls_status
prepare_local(ls_wal *wal, wal_local **out)
{
	wal_local  *l = wal_local_get(wal, false);

	*out = l;
	if (l == NULL || l->dir == NULL || !atomic_load(&wal->started))
		return LS_INVALID;
	if (atomic_load(&wal->failed))
	{
		mk_abandon(l);
		errno = atomic_load(&wal->fail_errno);
		return LS_IO_ERROR;
	}
	if (l->fds == NULL)
	{
		l->nfds = (uint32_t) LS_MAX(8, wal->cfg.round_buffer / wal->cfg.segment_size + 4);
		l->fds = calloc(l->nfds, sizeof(seg_fd));
		if (l->fds == NULL)
			return LS_NO_MEMORY;
		for (uint32_t i = 0; i < l->nfds; i++)
			l->fds[i].fd = -1;
	}
	return LS_OK;
}

ls_status
ls_wal_prepare(ls_wal *wal, uint32_t ahead)
{
	wal_local  *l;
	ls_status	st = prepare_local(wal, &l);

	if (st != LS_OK)
		return st;
	/* a segment ls_wal_prepare_step began is finished first, at once */
	bool		changed = l->mk_open;

	if (l->mk_open && (st = mk_continue(wal, l, UINT64_MAX)) != LS_OK)
		return st;

	uint64_t	segsz = wal->cfg.segment_size;
	uint64_t	written = atomic_load(&wal->written_end);
	uint64_t	first = written / segsz;
	uint64_t	last = (written + (uint64_t) LS_MAX(ahead, 1) * segsz - 1) / segsz;
	uint64_t   *old = NULL;
	uint32_t	nold = 0,
				used_old = 0;

	st = old_segments(l->dir, recycle_below(wal), &old, &nold);
	for (uint64_t s = first; st == LS_OK && s <= last; s++)
	{
		char		path[4096];
		struct stat sb;

		wal_segment_path(path, sizeof(path), l->dir, s);
		if (stat(path, &sb) == 0)
		{
			if ((uint64_t) sb.st_size < segsz)
				st = extend_segment(wal, l, s, (uint64_t) sb.st_size);
			continue;
		}
		if (errno != ENOENT)
		{
			st = LS_IO_ERROR;
			break;
		}
		changed = true;
		if (used_old < nold && recycle_into(l, segsz, old[used_old++], path))
			continue;
		st = mk_start(wal, l, s);
		if (st == LS_OK)
			st = mk_continue(wal, l, UINT64_MAX);
	}
	free(old);
	if (changed)
	{
		int			e = errno;
		ls_status	ds = fsync_dir(l->dir);

		if (st == LS_OK)
			st = ds;
		else
			errno = e;
	}
	return st;
}

/* ------------------------------------------------------------------------
 * Preparation a piece at a time (ls_wal_prepare_step)
 *
 * The writer calls it between rounds: a new segment is written with zeros
 * STEP_BYTES a call, so a bulk load's ring is drained meanwhile (a whole
 * segment written in one go held the writer, and with it every ring, for
 * as long as that took).  ls_wal_prepare makes new segments with the same
 * two functions, all at once, and finishes a half-made one first; only
 * this process touches its .tmp file.
 * ------------------------------------------------------------------------ */

#define STEP_BYTES		(1024 * 1024)

static void
mk_tmp_path(wal_local *l, uint64_t segno, char *tmp, size_t n)
{
	char		path[4096];

	wal_segment_path(path, sizeof(path), l->dir, segno);
	snprintf(tmp, n, "%s.tmp", path);
}

/* Drop a half-made segment (errno kept). */
static void
mk_abandon(wal_local *l)
{
	int			e = errno;

	if (l->mk_open)
	{
		char		tmp[4096 + 8];

		close(l->mk_fd);
		if (l->dir != NULL)
		{
			mk_tmp_path(l, l->mk_seg, tmp, sizeof(tmp));
			unlink(tmp);
		}
		l->mk_open = false;
	}
	errno = e;
}

static ls_status
mk_start(ls_wal *wal, wal_local *l, uint64_t segno)
{
	char		tmp[4096 + 8];
	int			fd;

	if (l->zero == NULL && (l->zero = calloc(1, ZERO_CHUNK)) == NULL)
		return LS_NO_MEMORY;
	mk_tmp_path(l, segno, tmp, sizeof(tmp));
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return LS_IO_ERROR;
	l->mk_open = true;
	l->mk_fd = fd;
	l->mk_seg = segno;
	l->mk_off = 0;
	if (take_fault(wal, 4))		/* as a full disk would, half way */
	{
		mk_abandon(l);
		return LS_IO_ERROR;
	}
	return LS_OK;
}

/*
 * Write up to budget more zeros into the half-made segment; the last piece
 * syncs it and renames it to its name (the caller fsyncs the directory).
 * Any failure drops it (errno kept).
 */
static ls_status
mk_continue(ls_wal *wal, wal_local *l, uint64_t budget)
{
	uint64_t	segsz = wal->cfg.segment_size;
	uint64_t	from = l->mk_off;
	uint64_t	to = LS_MIN(segsz, from + LS_MIN(budget, segsz));
	char		path[4096];
	char		tmp[4096 + 8];

	LS_ASSERT(l->mk_open && from <= segsz);
	for (uint64_t off = from; off < to; off += ZERO_CHUNK)
		if (ls_pwrite_full(l->mk_fd, l->zero, LS_MIN(ZERO_CHUNK, to - off), off) != LS_OK)
		{
			mk_abandon(l);
			return LS_IO_ERROR;
		}
	l->mk_off = to;
	if (to < segsz)
	{
#ifdef SYNC_FILE_RANGE_WRITE
		/* start the write-back now, so the final fsync has little left */
		(void) sync_file_range(l->mk_fd, (off_t) from, (off_t) (to - from),
							   SYNC_FILE_RANGE_WRITE);
#endif
		return LS_OK;
	}
	if (fsync(l->mk_fd) != 0)
	{
		mk_abandon(l);
		return LS_IO_ERROR;
	}
	wal_segment_path(path, sizeof(path), l->dir, l->mk_seg);
	mk_tmp_path(l, l->mk_seg, tmp, sizeof(tmp));
	if (rename(tmp, path) != 0)
	{
		mk_abandon(l);
		return LS_IO_ERROR;
	}
	close(l->mk_fd);
	l->mk_open = false;
	if (l->ready_below == l->mk_seg)
		l->ready_below = l->mk_seg + 1;
	return LS_OK;
}

/*
 * The first segment the next `ahead` segments' worth of stream needs that
 * is missing: recycled at once when an old one is there, else begun (the
 * caller writes it a piece at a time).  Segments found whole move
 * ready_below, so a call with nothing to do makes no system call.
 */
static ls_status
mk_next(ls_wal *wal, wal_local *l, uint32_t ahead)
{
	uint64_t	segsz = wal->cfg.segment_size;
	uint64_t	written = atomic_load(&wal->written_end);
	uint64_t	last = (written + (uint64_t) LS_MAX(ahead, 1) * segsz - 1) / segsz;
	uint64_t	s = LS_MAX(written / segsz, l->ready_below);
	ls_status	st = LS_OK;

	for (; st == LS_OK && s <= last; s++)
	{
		char		path[4096];
		struct stat sb;
		uint64_t   *old = NULL;
		uint32_t	nold = 0;

		wal_segment_path(path, sizeof(path), l->dir, s);
		if (stat(path, &sb) == 0)
		{
			/* cut outside the writer: rare, made whole at once */
			if ((uint64_t) sb.st_size < segsz)
				st = extend_segment(wal, l, s, (uint64_t) sb.st_size);
			continue;
		}
		if (errno != ENOENT)
			return LS_IO_ERROR;
		st = old_segments(l->dir, recycle_below(wal), &old, &nold);
		if (st == LS_OK && nold > 0 && recycle_into(l, segsz, old[0], path))
		{
			free(old);
			st = fsync_dir(l->dir);
			continue;
		}
		free(old);
		if (st == LS_OK)
			st = mk_start(wal, l, s);
		break;
	}
	if (st == LS_OK && !l->mk_open)
		l->ready_below = LS_MAX(l->ready_below, s);
	return st;
}

/*
 * Remove the oldest recyclable segments past wal->spare_bytes, once the
 * recycling bound or the limit moved since the last trim (so a call with
 * nothing new makes no system call).  A segment that cannot be removed
 * stays (it is recycled later); only the directory sync can fail.
 */
static ls_status
trim_spares(ls_wal *wal, wal_local *l)
{
	uint64_t	below = recycle_below(wal);
	uint64_t	spare = atomic_load(&wal->spare_bytes);
	uint64_t   *old = NULL;
	uint32_t	nold = 0;
	uint64_t	keep;
	bool		removed = false;
	ls_status	st;

	if (spare == 0 || (below == l->trimmed_below && spare == l->trimmed_spare))
		return LS_OK;
	st = old_segments(l->dir, below, &old, &nold);
	if (st != LS_OK)
		return st;
	keep = spare / wal->cfg.segment_size;
	/* old[] is sorted: the oldest go, the newest keep_from-side ones stay */
	for (uint32_t i = 0; (uint64_t) (nold - i) > keep; i++)
	{
		char		path[4096];

		wal_segment_path(path, sizeof(path), l->dir, old[i]);
		forget_fd(l, old[i]);
		if (unlink(path) == 0)
			removed = true;
	}
	free(old);
	l->trimmed_below = below;
	l->trimmed_spare = spare;
	return removed ? fsync_dir(l->dir) : LS_OK;
}

ls_status
ls_wal_prepare_step(ls_wal *wal, uint32_t ahead, bool *more)
{
	wal_local  *l;
	ls_status	st = prepare_local(wal, &l);

	*more = false;
	if (st != LS_OK)
		return st;
	if (!l->mk_open && (st = trim_spares(wal, l)) != LS_OK)
		return st;
	if (!l->mk_open && (st = mk_next(wal, l, ahead)) != LS_OK)
		return st;
	if (!l->mk_open)
		return LS_OK;
	st = mk_continue(wal, l, STEP_BYTES);
	if (st == LS_OK && !l->mk_open)
		st = fsync_dir(l->dir);	/* the segment got its name */
	*more = st == LS_OK;
	return st;
}

/* ------------------------------------------------------------------------
 * I/O of a round
 * ------------------------------------------------------------------------ */

typedef struct wal_io
{
	int			fd;
	const uint8_t *buf;
	uint32_t	len;
	uint64_t	off;
} wal_io;

static bool
take_fault(ls_wal *wal, uint32_t what)
{
	uint32_t	expect = what;

	if (atomic_load(&wal->fault_what) != what ||
		!atomic_compare_exchange_strong(&wal->fault_what, &expect, 0))
		return false;
	errno = atomic_load(&wal->fault_err);
	return true;
}

static bool
ring_ready(wal_local *l)
{
	if (!l->ring_ok && !l->ring_failed)
	{
		if (io_uring_queue_init(RING_DEPTH, &l->ring, 0) == 0)
			l->ring_ok = true;
		else
			l->ring_failed = true;
	}
	return l->ring_ok;
}

/*
 * Submit the k prepared entries.  false: the kernel refused them outright
 * and nothing is in flight; the ring is dropped (plain calls from now on).
 * Once some are in flight, it keeps trying: they are never abandoned.
 */
static bool
ring_submit_all(wal_local *l, uint32_t k)
{
	uint32_t	submitted = 0;

	while (submitted < k)
	{
		int			r = io_uring_submit(&l->ring);

		if (r > 0)
			submitted += (uint32_t) r;
		else if (r == 0 || r == -EINTR || r == -EAGAIN || r == -EBUSY || submitted > 0)
			sched_yield();
		else
		{
			io_uring_queue_exit(&l->ring);
			l->ring_ok = false;
			l->ring_failed = true;
			return false;
		}
	}
	return true;
}

/* Wait for the next completion: its tag and result; false (errno) if none. */
static bool
ring_reap(wal_local *l, uint64_t *tag, int *res)
{
	struct io_uring_cqe *cqe;
	int			r;

	while ((r = io_uring_wait_cqe(&l->ring, &cqe)) == -EINTR)
		;
	if (r < 0)
	{
		errno = -r;
		return false;
	}
	*tag = io_uring_cqe_get_data64(cqe);
	*res = cqe->res;
	io_uring_cqe_seen(&l->ring, cqe);
	return true;
}

/*
 * Run n writes (sync = false) or n fdatasyncs of ios[i].fd (sync = true)
 * through the ring, RING_DEPTH at a time.  Short writes are finished with
 * pwrite.  On failure errno is the first error.  LS_RESTART: the kernel
 * refused a submission outright (the ring is dropped; use plain calls).
 */
static ls_status
ring_batch(wal_local *l, wal_io *ios, uint32_t n, bool sync)
{
	ls_status	st = LS_OK;
	int			err = 0;

	for (uint32_t base = 0; base < n; base += RING_DEPTH)
	{
		uint32_t	k = LS_MIN(RING_DEPTH, n - base);

		for (uint32_t i = 0; i < k; i++)
		{
			struct io_uring_sqe *sqe = io_uring_get_sqe(&l->ring);
			wal_io	   *io = &ios[base + i];

			LS_ASSERT(sqe != NULL);
			if (sync)
				io_uring_prep_fsync(sqe, io->fd, IORING_FSYNC_DATASYNC);
			else
				io_uring_prep_write(sqe, io->fd, io->buf, io->len, io->off);
			io_uring_sqe_set_data64(sqe, base + i);
		}
		if (!ring_submit_all(l, k))
		{
			if (st != LS_OK)
			{
				errno = err;	/* an error already seen is never lost */
				return st;
			}
			return LS_RESTART;	/* the caller redoes all plainly */
		}
		for (uint32_t i = 0; i < k; i++)
		{
			uint64_t	idx;
			int			res;

			if (!ring_reap(l, &idx, &res))
				return LS_IO_ERROR;
			if (res < 0)
			{
				if (err == 0)
					err = -res;
				st = LS_IO_ERROR;
				continue;
			}
			if (!sync && (uint32_t) res < ios[idx].len && st == LS_OK)
			{
				wal_io	   *io = &ios[idx];

				if (ls_pwrite_full(io->fd, io->buf + res, io->len - (uint32_t) res,
							   io->off + (uint64_t) res) != LS_OK)
				{
					err = errno;
					st = LS_IO_ERROR;
				}
			}
		}
	}
	if (st != LS_OK)
		errno = err;
	return st;
}

/*
 * Write ios[0..n) and fdatasync each file in one submission: each write is
 * linked to the fdatasync of its file, so the writer sleeps once per round
 * instead of twice (on a busy machine every wake-up of the writer waits
 * for a CPU, and every committer waits for the writer).  n <= RING_DEPTH/2.
 * A write that fails or comes back short cancels its linked sync: the rest
 * of the write and the sync are then done with plain calls.  A short write
 * is synced again even if its linked sync was not canceled: that sync may
 * have run before the rest was written.  cut > 0 (test hook, what = 5):
 * the first write is submitted with only cut bytes, a short write for the
 * code below (the linked sync then runs: the case just described).
 * LS_RESTART: the ring refused the submission (dropped; nothing started).
 */
static ls_status
ring_write_sync(ls_wal *wal, wal_local *l, wal_io *ios, uint32_t n, uint32_t cut)
{
	ls_status	st = LS_OK;
	int			err = 0;
	bool		redo_sync[RING_DEPTH / 2] = {false};
	LS_ASSERT(n > 0 && n <= RING_DEPTH / 2);
	LS_ASSERT(cut < ios[0].len);
	for (uint32_t i = 0; i < n; i++)
	{
		struct io_uring_sqe *w = io_uring_get_sqe(&l->ring);
		struct io_uring_sqe *f = io_uring_get_sqe(&l->ring);

		LS_ASSERT(w != NULL && f != NULL);
		io_uring_prep_write(w, ios[i].fd, ios[i].buf,
							i == 0 && cut > 0 ? cut : ios[i].len, ios[i].off);
		io_uring_sqe_set_flags(w, IOSQE_IO_LINK);
		io_uring_sqe_set_data64(w, (uint64_t) i * 2);
		io_uring_prep_fsync(f, ios[i].fd, IORING_FSYNC_DATASYNC);
		io_uring_sqe_set_data64(f, (uint64_t) i * 2 + 1);
	}
	if (!ring_submit_all(l, 2 * n))
		return LS_RESTART;
	for (uint32_t k = 0; k < 2 * n; k++)
	{
		uint64_t	tag;
		int			res;

		if (!ring_reap(l, &tag, &res))
			return LS_IO_ERROR;

		wal_io	   *io = &ios[tag / 2];

		if (tag % 2 == 1)
		{
			/*
			 * The sync: canceled because its write failed (an error below)
			 * or came back short (finished below): done again plainly.
			 */
			if (res == -ECANCELED)
			{
				redo_sync[tag / 2] = true;
				continue;
			}
			if (res < 0 && st == LS_OK)
			{
				err = -res;
				st = LS_IO_ERROR;
			}
			continue;
		}
		if (res < 0)
		{
			if (st == LS_OK)
			{
				err = -res;
				st = LS_IO_ERROR;
			}
		}
		else if ((uint32_t) res < io->len && st == LS_OK)
		{
			atomic_fetch_add(&wal->short_writes, 1);
			redo_sync[tag / 2] = true;
			if (ls_pwrite_full(io->fd, io->buf + res, io->len - (uint32_t) res,
							   io->off + (uint64_t) res) != LS_OK)
			{
				err = errno;
				st = LS_IO_ERROR;
			}
		}
	}
	for (uint32_t i = 0; st == LS_OK && i < n; i++)
	{
		if (redo_sync[i] && fdatasync(ios[i].fd) != 0)
		{
			err = errno;
			st = LS_IO_ERROR;
		}
	}
	if (st != LS_OK)
		errno = err;
	return st;
}

static ls_status
do_io(ls_wal *wal, wal_local *l, wal_io *ios, uint32_t n, bool sync, bool plain)
{
	if (take_fault(wal, sync ? 2 : 1))
		return LS_IO_ERROR;
	if (!plain && !atomic_load(&wal->plain_io) && ring_ready(l))
	{
		ls_status	st = ring_batch(l, ios, n, sync);

		if (st != LS_RESTART)
			return st;
		/* writes and syncs done twice are harmless */
	}
	for (uint32_t i = 0; i < n; i++)
	{
		if (sync)
		{
			if (fdatasync(ios[i].fd) != 0)
				return LS_IO_ERROR;
		}
		else if (ls_pwrite_full(ios[i].fd, ios[i].buf, ios[i].len, ios[i].off) != LS_OK)
			return LS_IO_ERROR;
	}
	return LS_OK;
}

/*
 * A round's writes, then their syncs: linked in one ring submission when
 * they fit, else (or for injected faults, or without a ring) as two steps.
 */
static ls_status
do_write_sync(ls_wal *wal, wal_local *l, wal_io *ios, uint32_t n, bool plain)
{
	ls_status	st;
	uint32_t	fault = atomic_load(&wal->fault_what);

	if ((fault == 0 || fault == 5) && !plain && !atomic_load(&wal->plain_io) &&
		n <= RING_DEPTH / 2 && ring_ready(l))
	{
		uint32_t	cut = ios[0].len > 1 && take_fault(wal, 5) ? ios[0].len / 2 : 0;

		st = ring_write_sync(wal, l, ios, n, cut);
		if (st != LS_RESTART)
			return st;
		/* writes and syncs done twice are harmless */
	}
	st = do_io(wal, l, ios, n, false, plain);
	if (st == LS_OK)
		st = do_io(wal, l, ios, n, true, plain);
	return st;
}

/* ------------------------------------------------------------------------
 * Rounds
 * ------------------------------------------------------------------------ */

/* Lays records out into consecutive blocks of the round buffer. */
typedef struct builder
{
	uint8_t    *buf;
	uint32_t	nb;				/* blocks begun */
	uint32_t	o;				/* data bytes in the last block */
} builder;

static wal_block_hdr *
block_hdr(builder *b, uint32_t i)
{
	return (wal_block_hdr *) (b->buf + (size_t) i * LS_WAL_BLOCK);
}

static void
begin_block(builder *b)
{
	wal_block_hdr *h = block_hdr(b, b->nb++);

	memset(h, 0, sizeof(*h));
	h->first = WAL_NO_FIRST;
	b->o = 0;
}

static void
emit_record(ls_wal *wal, builder *b, uint32_t slot, uint64_t pos, uint32_t len)
{
	if (b->o == LS_WAL_BLOCK_DATA)
		begin_block(b);
	if (block_hdr(b, b->nb - 1)->first == WAL_NO_FIRST)
		block_hdr(b, b->nb - 1)->first = (uint16_t) b->o;
	while (len > 0)
	{
		if (b->o == LS_WAL_BLOCK_DATA)
			begin_block(b);
		uint32_t	n = LS_MIN(len, LS_WAL_BLOCK_DATA - b->o);

		wal_ring_read(wal, slot, pos,
					  b->buf + (size_t) (b->nb - 1) * LS_WAL_BLOCK + LS_WAL_BLOCK_HDR + b->o, n);
		b->o += n;
		pos += n;
		len -= n;
	}
}

static ls_status
round_local(ls_wal *wal, wal_local **out)
{
	wal_local  *l = wal_local_get(wal, false);

	if (l == NULL || l->dir == NULL)
		return LS_INVALID;
	if (l->buf == NULL)
	{
		if (posix_memalign((void **) &l->buf, 4096, wal->cfg.round_buffer) != 0)
			l->buf = NULL;
		l->take = calloc(wal->cfg.max_slots, sizeof(uint64_t));
		l->took = calloc(wal->cfg.max_slots, sizeof(uint32_t));
		l->lim = calloc(wal->cfg.max_slots, sizeof(uint64_t));
		l->next_gsn = calloc(wal->cfg.max_slots, sizeof(uint64_t));
		if (l->fds == NULL)
		{
			l->nfds = (uint32_t) LS_MAX(8, wal->cfg.round_buffer / wal->cfg.segment_size + 4);
			l->fds = calloc(l->nfds, sizeof(seg_fd));
			if (l->fds != NULL)
				for (uint32_t i = 0; i < l->nfds; i++)
					l->fds[i].fd = -1;
		}
		if (l->buf == NULL || l->take == NULL || l->took == NULL ||
			l->lim == NULL || l->next_gsn == NULL || l->fds == NULL)
			return LS_NO_MEMORY;
	}
	*out = l;
	return LS_OK;
}

static ls_status round_run(ls_wal *wal, ls_wal_round_stats *stats, bool lazy, bool plain);

/*
 * Rounds never overlap (two would take the same records and write the same
 * positions): in_round is their lock and the futex word its waiters sleep
 * on.  wait = false: only when no round runs.
 */
static bool
round_enter(ls_wal *wal, bool wait)
{
	for (;;)
	{
		uint32_t	expect = 0;

		if (atomic_compare_exchange_strong(&wal->in_round, &expect, 1))
			return true;
		if (!wait)
			return false;
		atomic_fetch_add(&wal->round_waiters, 1);
		ls_futex_wait(&wal->in_round, 1, 10 * 1000 * 1000ull);
		atomic_fetch_sub(&wal->round_waiters, 1);
	}
}

static void
round_exit(ls_wal *wal)
{
	atomic_store(&wal->in_round, 0);
	if (atomic_load(&wal->round_waiters) != 0)
		ls_futex_wake(&wal->in_round, INT32_MAX);
}

static ls_status
round_once(ls_wal *wal, ls_wal_round_stats *stats, bool lazy)
{
	(void) round_enter(wal, true);
	ls_status	st = round_run(wal, stats, lazy, false);

	round_exit(wal);
	return st;
}

ls_status
ls_wal_round(ls_wal *wal, ls_wal_round_stats *stats)
{
	return round_once(wal, stats, false);
}

ls_status
ls_wal_round_lazy(ls_wal *wal, ls_wal_round_stats *stats)
{
	return round_once(wal, stats, true);
}

ls_status
ls_wal_try_round(ls_wal *wal, ls_wal_round_stats *stats, bool *ran)
{
	/*
	 * Only while the writer sleeps (it has nothing to do: a light load).
	 * An awake writer takes the records in its next round anyway, and under
	 * load committers that sync themselves one after another group worse
	 * than the writer does (pgbench tpcb-like at 16 clients: 9-17% fewer
	 * transactions than without committer rounds).
	 */
	*ran = atomic_load(&wal->writer_sleeping) != 0 && round_enter(wal, false);
	if (!*ran)
	{
		if (stats != NULL)
			memset(stats, 0, sizeof(*stats));
		return LS_OK;
	}
	/* synced; plain calls: a committer has no ring of its own */
	ls_status	st = round_run(wal, stats, false, true);

	round_exit(wal);
	return st;
}

/*
 * fdatasync the segments lazy rounds wrote to that ios[0..n) (this round's
 * writes, synced with them) do not cover.
 */
static ls_status
sync_lazy_segments(ls_wal *wal, wal_local *l, const wal_io *ios, uint32_t n, bool plain)
{
	wal_io		sync[LAZY_SEGS];
	uint32_t	k = 0;

	for (uint32_t i = 0; i < wal->nlazy_segs; i++)
	{
		int			fd;
		bool		covered = false;
		ls_status	st = segment_fd(wal, l, wal->lazy_segs[i], &fd);

		if (st != LS_OK)
			return st == LS_NO_SPACE ? LS_IO_ERROR : st;	/* it was written */
		for (uint32_t j = 0; j < n && !covered; j++)
			covered = ios[j].fd == fd;
		if (!covered)
		{
			memset(&sync[k], 0, sizeof(sync[k]));
			sync[k++].fd = fd;
		}
	}
	return k > 0 ? do_io(wal, l, sync, k, true, plain) : LS_OK;
}

/* Note segno among the segments written but not synced; false: no room. */
static bool
note_lazy_segment(ls_wal *wal, uint64_t segno)
{
	for (uint32_t i = 0; i < wal->nlazy_segs; i++)
		if (wal->lazy_segs[i] == segno)
			return true;
	if (wal->nlazy_segs == LAZY_SEGS)
		return false;
	wal->lazy_segs[wal->nlazy_segs++] = segno;
	return true;
}

/* A round's write or sync failed: the writer is failed for good (errno kept). */
static ls_status
round_io_failed(ls_wal *wal)
{
	int			e = errno ? errno : EIO;

	wal_fail(wal, e);
	errno = e;
	return LS_IO_ERROR;
}

/*
 * A synced round ended: everything written so far is durable.  Publish the
 * stream's end, each slot's written offset and the durable GSN, and wake
 * the waiters whose records became durable (also those written by the lazy
 * rounds before).
 */
static void
publish_durable(ls_wal *wal, uint64_t new_durable_gsn)
{
	atomic_store(&wal->end, atomic_load(&wal->written_end));
	for (uint32_t i = 0; i < wal->cfg.max_slots; i++)
	{
		wal_slot   *s = wal_slot_at(wal, i);

		if (s->written > atomic_load(&s->durable))
		{
			atomic_store(&s->durable, s->written);
			wal_slot_wake(s);
		}
	}
	ls_atomic_raise_u64(&wal->durable_gsn, new_durable_gsn);
	wal->unsynced = 0;
	wal->nlazy_segs = 0;
}

/*
 * A round that wrote nothing (no segment prepared, no memory) hands a
 * waiter's sync request back, so the next round serves it without the
 * waiter having to ask again.
 */
static void
round_give_back_ask(ls_wal *wal, bool asked)
{
	if (asked)
		atomic_store(&wal->sync_wanted, 1);
}

static uint64_t round_cut(ls_wal *wal, wal_local *l, uint64_t cap, uint64_t *bound);

/*
 * Choose what a round takes: l->take[i], per slot, the end of the records
 * it takes from the slot's tail.  The round takes exactly the records not
 * taken yet whose GSN is at most some bound G' <= g (*bound, lowered to
 * G'), so the log cut after any whole round is a GSN prefix: a record on
 * disk implies every record of a smaller GSN on disk.  Why: a record
 * derived from another (a checkpoint's image of a row an asynchronous
 * commit wrote, a later commit that read it) always has the larger GSN,
 * so it is never durable alone.  Records with a GSN above g (appended
 * after the round read the counter) wait for the next round, even where
 * the slot's ring already holds them.  Returns the bytes taken.
 *
 * The test hook ls_wal_hold_slot leaves one slot's records in its ring and
 * takes the others' anyway (*held: the round is no GSN prefix then; the
 * bound stays below the held records all the same).
 */
static uint64_t
round_select(ls_wal *wal, wal_local *l, uint64_t g, uint32_t rot, uint64_t cap,
			 uint64_t *bound, bool *held)
{
	const ls_wal_config *cfg = &wal->cfg;
	uint32_t	held_slot = atomic_load(&wal->held_slot);
	uint64_t	total = 0;

	for (uint32_t k = 0; k < cfg->max_slots; k++)
	{
		uint32_t	i = (rot + k) % cfg->max_slots;
		wal_slot   *s = wal_slot_at(wal, i);

		for (uint32_t spins = 0; atomic_load(&s->appending) != 0; spins++)
		{
			if (spins < 64)
				ls_cpu_relax();
			else
				sched_yield();
		}
		uint64_t	head = atomic_load_explicit(&s->head, memory_order_acquire);
		uint64_t	tail = atomic_load_explicit(&s->tail, memory_order_relaxed);
		uint64_t	pos = tail;

		l->take[i] = tail;
		l->lim[i] = tail;
		l->next_gsn[i] = UINT64_MAX;
		if (held_slot == i + 1 && pos < head)
		{
			ls_wal_rec	h;

			wal_ring_read(wal, i, pos, &h, LS_WAL_REC_HDR);
			*bound = LS_MIN(*bound, h.gsn - 1);
			*held = true;
			continue;
		}
		while (pos < head)
		{
			ls_wal_rec	h;

			wal_ring_read(wal, i, pos, &h, LS_WAL_REC_HDR);
			LS_ASSERT(h.len >= LS_WAL_REC_HDR && h.len <= head - pos && h.gsn > 0);
			if (h.gsn > g)
				break;			/* within a slot GSNs grow: the rest too */
			if (pos == tail)
				l->next_gsn[i] = h.gsn;
			pos += h.len;
			total += h.len;
		}
		l->lim[i] = pos;
	}
	if (total <= cap)
	{
		for (uint32_t i = 0; i < cfg->max_slots; i++)
			l->take[i] = l->lim[i];
		return total;
	}
	return round_cut(wal, l, cap, bound);
}

/*
 * More than a round buffer's worth up to g: take records in GSN order (a
 * merge over the slots, each in GSN order already) while they fit; the
 * bound is one below the smallest GSN left.  Only big bulk loads of many
 * sessions at once get here; the merge costs slots x records taken.
 */
static uint64_t
round_cut(ls_wal *wal, wal_local *l, uint64_t cap, uint64_t *bound)
{
	uint32_t	nslots = wal->cfg.max_slots;
	uint64_t	total = 0;

	for (;;)
	{
		uint32_t	j = UINT32_MAX;
		uint64_t	best = UINT64_MAX;
		ls_wal_rec	h;

		for (uint32_t i = 0; i < nslots; i++)
			if (l->next_gsn[i] < best)
			{
				best = l->next_gsn[i];
				j = i;
			}
		if (j == UINT32_MAX)
			break;				/* everything up to g fits after all */
		wal_ring_read(wal, j, l->take[j], &h, LS_WAL_REC_HDR);
		LS_ASSERT(h.gsn == best);
		if (total + h.len > cap)
		{
			*bound = LS_MIN(*bound, best - 1);
			break;
		}
		total += h.len;
		l->take[j] += h.len;
		l->next_gsn[j] = UINT64_MAX;
		if (l->take[j] < l->lim[j])
		{
			wal_ring_read(wal, j, l->take[j], &h, LS_WAL_REC_HDR);
			LS_ASSERT(h.gsn > best);
			l->next_gsn[j] = h.gsn;
		}
	}
	LS_ASSERT(total > 0);
	return total;
}

static ls_status
round_run(ls_wal *wal, ls_wal_round_stats *stats, bool lazy, bool plain)
{
	ls_wal_round_stats local_stats;
	wal_local  *l;

	if (stats == NULL)
		stats = &local_stats;
	memset(stats, 0, sizeof(*stats));
	if (atomic_load(&wal->failed))
	{
		errno = atomic_load(&wal->fail_errno);
		return LS_IO_ERROR;
	}
	if (!atomic_load(&wal->started))
		return LS_INVALID;
	ls_status	st = round_local(wal, &l);

	if (st != LS_OK)
		return st;

	/*
	 * A lazy round syncs only when a waiter asked for durability (taken
	 * before the records: a waiter that asks later is served next round),
	 * or when the unsynced bytes or segments would pass their bounds.
	 */
	bool		asked = atomic_exchange(&wal->sync_wanted, 0) != 0;
	bool		sync = asked || !lazy;

	const ls_wal_config *cfg = &wal->cfg;
	uint64_t	cap = (uint64_t) (cfg->round_buffer / LS_WAL_BLOCK) * LS_WAL_BLOCK_DATA;
	uint64_t	total = 0;
	uint32_t	ntook = 0;
	builder		b = {.buf = l->buf, .nb = 0, .o = 0};

	/* every record with a GSN up to g is in a ring now or already taken */
	uint64_t	g = atomic_load(&wal->gsn);
	uint64_t	new_durable_gsn = g;
	uint32_t	rot = atomic_fetch_add(&wal->rotor, 1);
	bool		held = false;

	total = round_select(wal, l, g, rot, cap, &new_durable_gsn, &held);
	begin_block(&b);
	for (uint32_t k = 0; k < cfg->max_slots; k++)
	{
		uint32_t	i = (rot + k) % cfg->max_slots;
		wal_slot   *s = wal_slot_at(wal, i);
		uint64_t	pos = atomic_load_explicit(&s->tail, memory_order_relaxed);

		if (l->take[i] == pos)
			continue;
		while (pos < l->take[i])
		{
			ls_wal_rec	h;

			wal_ring_read(wal, i, pos, &h, LS_WAL_REC_HDR);
			LS_ASSERT(h.gsn <= new_durable_gsn || held);
			emit_record(wal, &b, i, pos, h.len);
			pos += h.len;
			stats->records++;
		}
		l->took[ntook++] = i;
	}
	LS_ASSERT(b.nb == 0 || (uint64_t) (b.nb - 1) * LS_WAL_BLOCK_DATA + b.o <= cap);

	if (total == 0)
	{
		if (wal->unsynced == 0)
			ls_atomic_raise_u64(&wal->durable_gsn, new_durable_gsn);
		else if (sync)
		{
			/* nothing new, but lazy rounds' writes to make durable */
			if (sync_lazy_segments(wal, l, NULL, 0, plain) != LS_OK)
				return round_io_failed(wal);
			publish_durable(wal, new_durable_gsn);
		}
		return LS_OK;
	}

	/* what the chosen records depend on outside the log goes first */
	if (cfg->before_write != NULL)
		cfg->before_write(cfg->before_write_arg);

	/* finish the blocks: last one zero-padded, flags, positions, CRCs */
	uint64_t	start = atomic_load(&wal->written_end);
	uint32_t	gen = atomic_load(&wal->generation);
	uint32_t	nb = b.nb;

	memset(b.buf + (size_t) (nb - 1) * LS_WAL_BLOCK + LS_WAL_BLOCK_HDR + b.o, 0,
		   LS_WAL_BLOCK_DATA - b.o);
	for (uint32_t j = 0; j < nb; j++)
	{
		wal_block_hdr *h = block_hdr(&b, j);

		h->used = (uint16_t) (j + 1 < nb ? LS_WAL_BLOCK_DATA : b.o);
		h->flags = (uint16_t) ((j == 0 ? WAL_BLK_START : 0) | (j + 1 == nb ? WAL_BLK_END : 0));
		h->generation = gen;
		h->pad = 0;
		h->pos = start + (uint64_t) j * LS_WAL_BLOCK;
		h->crc = 0;
		h->crc = wal_block_crc((const uint8_t *) h);
	}

	/* one write per segment touched; every segment must be prepared */
	uint64_t	segsz = cfg->segment_size;
	uint64_t	stop = start + (uint64_t) nb * LS_WAL_BLOCK;
	wal_io		ios[64];
	wal_io	   *iov = ios;
	uint32_t	nio = 0;
	uint32_t	maxio = (uint32_t) ((stop - 1) / segsz - start / segsz + 1);

	if (maxio > 64 && (iov = malloc(sizeof(wal_io) * maxio)) == NULL)
	{
		round_give_back_ask(wal, asked);
		return LS_NO_MEMORY;
	}
	for (uint64_t p = start; p < stop;)
	{
		uint64_t	segno = p / segsz;
		uint64_t	seg_end = LS_MIN(stop, (segno + 1) * segsz);
		int			fd;

		st = segment_fd(wal, l, segno, &fd);
		if (st != LS_OK)
		{
			if (iov != ios)
				free(iov);
			memset(stats, 0, sizeof(*stats));
			round_give_back_ask(wal, asked);
			return st;			/* nothing taken: the records stay in the rings */
		}
		iov[nio].fd = fd;
		iov[nio].buf = b.buf + (p - start);
		iov[nio].len = (uint32_t) (seg_end - p);
		iov[nio].off = p % segsz;
		nio++;
		if (!sync && !note_lazy_segment(wal, segno))
			sync = true;
		p = seg_end;
	}
	if (wal->unsynced + (uint64_t) nb * LS_WAL_BLOCK >= LAZY_SYNC_BYTES)
		sync = true;

	/* the records are copied: give their ring space back */
	for (uint32_t j = 0; j < ntook; j++)
	{
		wal_slot   *s = wal_slot_at(wal, l->took[j]);

		atomic_store(&s->tail, l->take[l->took[j]]);
		wal_slot_wake(s);
	}

	if (sync)
	{
		st = do_write_sync(wal, l, iov, nio, plain);
		if (st == LS_OK)
			st = sync_lazy_segments(wal, l, iov, nio, plain);
	}
	else
		st = do_io(wal, l, iov, nio, false, plain);
	if (iov != ios)
		free(iov);
	if (st != LS_OK)
		return round_io_failed(wal);

	atomic_store(&wal->written_end, stop);
	for (uint32_t j = 0; j < ntook; j++)
		wal_slot_at(wal, l->took[j])->written = l->take[l->took[j]];
	if (sync)
		publish_durable(wal, new_durable_gsn);
	else
		wal->unsynced += (uint64_t) nb * LS_WAL_BLOCK;
	atomic_fetch_add(&wal->rounds, 1);
	atomic_fetch_add(&wal->round_records, stats->records);
	atomic_fetch_add(&wal->round_blocks, nb);
	stats->bytes = total;
	stats->blocks = nb;
	stats->slots = ntook;
	return LS_OK;
}
