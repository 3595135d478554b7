/*
 * io.c - per-process state of a pool: file descriptors of the instances'
 * files, one io_uring per process (created lazily, re-created after fork),
 * the provider thread.
 *
 * The shared pool header cannot hold these: a file descriptor and a ring
 * belong to one process.  A small table maps a pool to this process's state;
 * an entry whose owner pid differs from getpid() was inherited over fork():
 * the descriptors are still valid, but the ring and the mutex are not ours.
 *
 * Descriptors are cached per (dt_id, segment) together with the slot's
 * generation at opening time; a slot registered again (another file) has
 * another generation, and the stale descriptors are closed on next use.
 * Segment 0 of a file is never created here (ls_bm_register_file's caller
 * made it; bm_io_create_file makes the test files); later segments are
 * created by the first write that reaches them.
 */
#include "bm_internal.h"

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

#define PROC_SLOTS	16
#define RING_DEPTH	128

typedef struct bm_fdset
{
	uint32_t	gen;			/* slot generation the descriptors belong to */
	uint32_t	n;				/* entries in fds */
	int		   *fds;			/* per segment, -1 = not open */
	bool		undo_open;		/* undo_fd is this file's journal ... */
	uint32_t	undo_epoch;		/* ... opened for this protection */
	int			undo_fd;
} bm_fdset;

typedef struct bm_proc
{
	ls_bm	   *bm;
	pid_t		owner;			/* process this entry belongs to */
	bm_fdset   *files;			/* LS_MAX_DT entries, allocated on first use */
	bool		ring_ok;
	bool		ring_failed;	/* io_uring unavailable: use pread/pwrite */
	struct io_uring ring;
	pthread_mutex_t io_mutex;	/* one ring and the descriptors, shared by
								 * this process's threads */
	pthread_t	provider;
	bool		provider_running;
	_Atomic bool provider_stop;
} bm_proc;

static bm_proc procs[PROC_SLOTS];
static pthread_mutex_t procs_mutex = PTHREAD_MUTEX_INITIALIZER;

bool
bm_io_file_path(ls_bm *bm, const ls_bm_file *file, uint32_t segno, char *buf, size_t len)
{
	int			n;

	if (bm->file_path != NULL)
		return bm->file_path(bm->file_path_arg, file, segno, buf, len);
	if (segno == LS_BM_UNDO_SEGNO)
		n = snprintf(buf, len, "%s/dt%u.undo", bm->data_dir, file->key[0]);
	else if (segno == 0)
		n = snprintf(buf, len, "%s/dt%u", bm->data_dir, file->key[0]);
	else
		n = snprintf(buf, len, "%s/dt%u.%u", bm->data_dir, file->key[0], segno);
	return n > 0 && (size_t) n < len;
}

/* Path of segment segno of dt_id's file; false when the file is gone. */
static bool
segment_path(ls_bm *bm, uint32_t dt_id, uint32_t segno, char *buf, size_t len)
{
	ls_dt_slot *s = bm_dt_slot(bm, dt_id);

	if (s == NULL || atomic_load_explicit(&s->used, memory_order_acquire) == 0)
		return false;
	return bm_io_file_path(bm, &s->file, segno, buf, len);
}

static int
open_path(ls_bm *bm, const char *path, int extra)
{
	int			flags = O_RDWR | O_CLOEXEC | extra;
	int			fd = -1;

	if (bm->use_direct_io)
		fd = open(path, flags | O_DIRECT, 0600);
	/* file systems without O_DIRECT (tmpfs) refuse it with EINVAL */
	if (fd < 0 && (!bm->use_direct_io || errno == EINVAL))
		fd = open(path, flags, 0600);
	return fd;
}

static void
fdset_close(bm_fdset *fs)
{
	for (uint32_t i = 0; i < fs->n; i++)
		if (fs->fds[i] >= 0)
			close(fs->fds[i]);
	free(fs->fds);
	fs->fds = NULL;
	fs->n = 0;
	if (fs->undo_open)
		close(fs->undo_fd);
	fs->undo_open = false;
}

static bool fill_segment(bm_proc *p, uint32_t dt_id, uint32_t segno);

/*
 * Descriptor of segment segno of dt_id's file in this process (caller holds
 * p->io_mutex); -1 with errno (ENOENT: the file or the segment is gone; a
 * write then creates a missing segment > 0, after making the ones before
 * it whole: fill_segment).
 */
static int
segment_fd(bm_proc *p, uint32_t dt_id, uint32_t segno, bool write)
{
	ls_bm	   *bm = p->bm;
	ls_dt_slot *s = bm_dt_slot(bm, dt_id);
	bm_fdset   *fs;
	uint32_t	gen;
	char		path[LS_BM_PATH_MAX + 64];
	int			fd;

	if (s == NULL)
	{
		errno = ENOENT;
		return -1;
	}
	if (p->files == NULL && (p->files = calloc(LS_MAX_DT, sizeof(bm_fdset))) == NULL)
	{
		errno = ENOMEM;
		return -1;
	}
	fs = &p->files[dt_id];
	gen = atomic_load_explicit(&s->gen, memory_order_acquire);
	if (fs->gen != gen)
	{
		fdset_close(fs);
		fs->gen = gen;
	}
	if (segno < fs->n && fs->fds[segno] >= 0)
		return fs->fds[segno];
	if (segno >= fs->n)
	{
		uint32_t	n = LS_MAX(segno + 1, 4);
		int		   *fds = realloc(fs->fds, n * sizeof(int));

		if (fds == NULL)
		{
			errno = ENOMEM;
			return -1;
		}
		for (uint32_t i = fs->n; i < n; i++)
			fds[i] = -1;
		fs->fds = fds;
		fs->n = n;
	}
	if (!segment_path(bm, dt_id, segno, path, sizeof(path)))
	{
		errno = ENOENT;
		return -1;
	}
	if (write && segno > 0 && !fill_segment(p, dt_id, segno - 1))
		return -1;
	fd = open_path(bm, path, (write && segno > 0) ? O_CREAT : 0);
	if (fd >= 0)
		fs->fds[segno] = fd;
	return fd;
}

/*
 * Segment segno and every one before it are whole (blocks_per_segment
 * pages; a shorter one is extended, sparse).  PostgreSQL's md.c takes a
 * segment shorter than that for the end of the file: opening a later one
 * fails ("previous segment is only N blocks"), and ANALYZE prefetches the
 * main fork's blocks through md.c.  The pool writes pages in any order, so
 * without this a page written into segment 1 before the last pages of
 * segment 0 left a short segment 0 in front of it (pgbench -i -s 100
 * failed in its ANALYZE about every second run).  false + errno.
 */
static bool
fill_segment(bm_proc *p, uint32_t dt_id, uint32_t segno)
{
	off_t		whole = (off_t) p->bm->blocks_per_segment * LS_PAGE_SIZE;
	struct stat st;
	int			fd = segment_fd(p, dt_id, segno, true);

	if (fd < 0 || fstat(fd, &st) != 0)
		return false;
	return st.st_size >= whole || ftruncate(fd, whole) == 0;
}

/* File position of a page: segment and byte offset in it. */
static void
page_place(ls_bm *bm, ls_pid pid, uint32_t *segno, off_t *off)
{
	uint32_t	block = ls_pid_block(pid);
	uint32_t	per = bm->blocks_per_segment;

	*segno = per ? block / per : 0;
	*off = (off_t) (per ? block % per : block) * LS_PAGE_SIZE;
}

/* This process's state for bm (created on first use); NULL + errno. */
static bm_proc *
proc_get(ls_bm *bm)
{
	pid_t		me = getpid();
	bm_proc    *p = NULL;
	bm_proc    *empty = NULL;

	pthread_mutex_lock(&procs_mutex);
	for (int i = 0; i < PROC_SLOTS; i++)
	{
		if (procs[i].bm == bm)
		{
			p = &procs[i];
			break;
		}
		if (procs[i].bm == NULL && empty == NULL)
			empty = &procs[i];
	}
	if (p != NULL && p->owner != me)
	{
		/*
		 * Inherited over fork(): keep the descriptors, forget the parent's
		 * ring (its memory is a private copy; never submit on it) and its
		 * threads.  The mutex may have been held by a parent thread.
		 */
		p->owner = me;
		p->ring_ok = false;
		p->ring_failed = false;
		p->provider_running = false;
		pthread_mutex_init(&p->io_mutex, NULL);
	}
	if (p == NULL && empty != NULL)
	{
		p = empty;
		memset(p, 0, sizeof(*p));
		p->bm = bm;
		p->owner = me;
		pthread_mutex_init(&p->io_mutex, NULL);
	}
	else if (p == NULL)
		errno = EMFILE;
	pthread_mutex_unlock(&procs_mutex);
	return p;
}

static void
proc_close_files(bm_proc *p)
{
	if (p->files == NULL)
		return;
	for (uint32_t i = 0; i < LS_MAX_DT; i++)
		fdset_close(&p->files[i]);
	free(p->files);
	p->files = NULL;
}

ls_status
bm_io_create_file(ls_bm *bm, uint32_t dt_id)
{
	char		path[LS_BM_PATH_MAX + 64];
	int			fd;

	if (!segment_path(bm, dt_id, 0, path, sizeof(path)))
		return LS_INVALID;
	fd = open_path(bm, path, O_CREAT | O_TRUNC);
	if (fd < 0)
	{
		bm_set_error(ls_pid_make(dt_id, 0), errno);
		return LS_IO_ERROR;
	}
	close(fd);
	/* later segments of an earlier file of this name */
	for (uint32_t seg = 1;; seg++)
	{
		if (!segment_path(bm, dt_id, seg, path, sizeof(path)) || unlink(path) != 0)
			break;
	}
	return LS_OK;
}

void
bm_io_forget(ls_bm *bm, uint32_t dt_id)
{
	bm_proc    *p = proc_get(bm);

	if (p == NULL || p->files == NULL || dt_id >= LS_MAX_DT)
		return;
	pthread_mutex_lock(&p->io_mutex);
	fdset_close(&p->files[dt_id]);
	pthread_mutex_unlock(&p->io_mutex);
}

ls_status
bm_io_sync(ls_bm *bm, uint32_t dt_id)
{
	bm_proc    *p = proc_get(bm);
	ls_dt_slot *s = bm_dt_slot(bm, dt_id);
	ls_status	st = LS_OK;
	uint32_t	blocks;
	uint32_t	nseg;

	if (p == NULL || s == NULL)
		return LS_IO_ERROR;
	/* clear first: a write after this point marks the file again */
	atomic_store(&s->unsynced, 0);
	blocks = atomic_load(&s->next_block);
	nseg = bm->blocks_per_segment ? (blocks + bm->blocks_per_segment - 1) / bm->blocks_per_segment : 1;
	pthread_mutex_lock(&p->io_mutex);
	for (uint32_t seg = 0; seg < LS_MAX(nseg, 1); seg++)
	{
		int			fd = segment_fd(p, dt_id, seg, false);

		if (fd < 0)
		{
			if (errno == ENOENT && seg > 0)
				continue;		/* never written there */
			bm_set_error(ls_pid_make(dt_id, 0), errno);
			st = LS_IO_ERROR;
			break;
		}
		if (fdatasync(fd) != 0)
		{
			bm_set_error(ls_pid_make(dt_id, seg), errno);
			st = LS_IO_ERROR;
			break;
		}
	}
	pthread_mutex_unlock(&p->io_mutex);
	if (st != LS_OK)
		atomic_store(&s->unsynced, 1);
	return st;
}

void
bm_io_detach(ls_bm *bm)
{
	pthread_mutex_lock(&procs_mutex);
	for (int i = 0; i < PROC_SLOTS; i++)
	{
		bm_proc    *p = &procs[i];

		if (p->bm != bm)
			continue;
		if (p->owner == getpid() && p->ring_ok)
			io_uring_queue_exit(&p->ring);
		proc_close_files(p);
		p->bm = NULL;
	}
	pthread_mutex_unlock(&procs_mutex);
}

/* Caller holds p->io_mutex. */
static bool
ring_ready(bm_proc *p)
{
	if (!p->ring_ok && !p->ring_failed)
	{
		if (io_uring_queue_init(RING_DEPTH, &p->ring, 0) == 0)
			p->ring_ok = true;
		else
			p->ring_failed = true;
	}
	return p->ring_ok;
}

/* Finish a partial transfer synchronously (rare: short read/write). */
static ls_status
sync_rest(int fd, bool write, char *buf, size_t done, off_t off)
{
	while (done < LS_PAGE_SIZE)
	{
		ssize_t		r = write ? pwrite(fd, buf + done, LS_PAGE_SIZE - done, off + (off_t) done)
			: pread(fd, buf + done, LS_PAGE_SIZE - done, off + (off_t) done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
		{
			if (r == 0 && !write && done == 0)
				return LS_NOT_FOUND;	/* block past the end of the file */
			if (r == 0)
				errno = EIO;	/* a partial page at the end of the file */
			return LS_IO_ERROR;
		}
		done += (size_t) r;
	}
	return LS_OK;
}

/*
 * Hand all `n` prepared SQEs to the kernel.  io_uring_submit may take fewer
 * (or fail transiently with EINTR/EAGAIN/EBUSY); keep going until all are
 * in.  false only when the very first submission fails hard (none in flight).
 */
static bool
submit_all(struct io_uring *ring, uint32_t n)
{
	uint32_t	done = 0;

	while (done < n)
	{
		int			rc = io_uring_submit(ring);

		if (rc > 0)
			done += (uint32_t) rc;
		else if (rc == -EINTR || rc == -EAGAIN || rc == -EBUSY || rc == 0)
			sched_yield();
		else if (done == 0)
			return false;
		else
			sched_yield();		/* some are in flight: never abandon them */
	}
	return true;
}

/*
 * Submit n transfers of one page each and reap all completions.  Entries
 * the ring cannot take (or when there is no ring) are done synchronously.
 * A page whose file is gone gets LS_NOT_FOUND (errs ENOENT) without I/O.
 */
static void
do_io(bm_proc *p, bool write, uint32_t n, const ls_pid *pids, void *const *bufs,
	  ls_status *res, int *errs)
{
	int			fds[256];
	off_t		offs[256];
	uint32_t	todo[256];
	uint32_t	m = 0;
	uint32_t	i = 0;

	pthread_mutex_lock(&p->io_mutex);
	for (uint32_t k = 0; k < n; k++)
	{
		uint32_t	segno;

		page_place(p->bm, pids[k], &segno, &offs[k]);
		fds[k] = segment_fd(p, ls_pid_dt(pids[k]), segno, write);
		if (fds[k] < 0)
		{
			errs[k] = errno;
			res[k] = errno == ENOENT ? LS_NOT_FOUND : LS_IO_ERROR;
		}
		else
			todo[m++] = k;
	}
	while (i < m)
	{
		uint32_t	batch = 0;

		if (ring_ready(p))
		{
			for (; batch < RING_DEPTH && i + batch < m; batch++)
			{
				struct io_uring_sqe *sqe = io_uring_get_sqe(&p->ring);
				uint32_t	k = todo[i + batch];

				if (sqe == NULL)
					break;
				if (write)
					io_uring_prep_write(sqe, fds[k], bufs[k], LS_PAGE_SIZE, (uint64_t) offs[k]);
				else
					io_uring_prep_read(sqe, fds[k], bufs[k], LS_PAGE_SIZE, (uint64_t) offs[k]);
				io_uring_sqe_set_data64(sqe, k);
			}
			if (batch > 0 && !submit_all(&p->ring, batch))
			{
				/*
				 * The ring refused the requests (a setup problem, not an I/O
				 * error: those come back in completions).  Nothing of this
				 * batch is in flight; use pread/pwrite from now on.
				 */
				io_uring_queue_exit(&p->ring);
				p->ring_ok = false;
				p->ring_failed = true;
				batch = 0;
			}
			for (uint32_t done = 0; done < batch; done++)
			{
				struct io_uring_cqe *cqe;
				int			wr;

				while ((wr = io_uring_wait_cqe(&p->ring, &cqe)) == -EINTR)
					;
				if (wr < 0)
					break;		/* cannot happen after a successful submit */
				uint32_t	k = (uint32_t) io_uring_cqe_get_data64(cqe);
				int			r = cqe->res;

				io_uring_cqe_seen(&p->ring, cqe);
				if (r < 0 && (r == -EINTR || r == -EAGAIN))
					r = 0;
				if (r < 0)
				{
					res[k] = LS_IO_ERROR;
					errs[k] = -r;
				}
				else
				{
					res[k] = sync_rest(fds[k], write, bufs[k], (size_t) r, offs[k]);
					errs[k] = res[k] == LS_OK ? 0 : errno;
				}
			}
		}
		if (batch == 0)
		{
			/* no ring: one synchronous transfer */
			uint32_t	k = todo[i];

			res[k] = sync_rest(fds[k], write, bufs[k], 0, offs[k]);
			errs[k] = res[k] == LS_OK ? 0 : errno;
			batch = 1;
		}
		i += batch;
	}
	pthread_mutex_unlock(&p->io_mutex);
	if (write)
		for (uint32_t k = 0; k < n; k++)
			if (res[k] == LS_OK)
			{
				ls_dt_slot *s = bm_dt_slot(p->bm, ls_pid_dt(pids[k]));

				if (atomic_load_explicit(&s->unsynced, memory_order_relaxed) == 0)
					atomic_store(&s->unsynced, 1);
			}
}

ls_status
bm_io_read(ls_bm *bm, ls_pid pid, void *buf)
{
	bm_proc    *p = proc_get(bm);
	ls_status	st;
	int			err;
	void	   *bufs[1] = {buf};

	if (p == NULL)
	{
		bm_set_error(pid, errno);
		return LS_IO_ERROR;
	}
	do_io(p, false, 1, &pid, bufs, &st, &err);
	if (st != LS_OK)
		bm_set_error(pid, err);
	return st;
}

void
bm_io_write(ls_bm *bm, uint32_t n, const ls_pid *pids, void *const *bufs, ls_status *res)
{
	bm_proc    *p = proc_get(bm);
	int			errs[256];
	bool		ok[256];
	ls_pid		wpids[256];
	void	   *wbufs[256];
	ls_status	wres[256];
	uint32_t	widx[256];

	if (p == NULL)
	{
		for (uint32_t i = 0; i < n; i++)
			res[i] = LS_IO_ERROR;
		bm_set_error(n ? pids[0] : LS_PID_INVALID, errno);
		return;
	}
	for (uint32_t off = 0; off < n; off += 256)
	{
		uint32_t	m = LS_MIN(n - off, 256);
		uint32_t	w = 0;

		/* protected blocks: their on-disk content goes to the journal first */
		bm_undo_before_write(bm, m, pids + off, ok, res + off);
		for (uint32_t i = 0; i < m; i++)
			if (ok[i])
			{
				widx[w] = off + i;
				wpids[w] = pids[off + i];
				wbufs[w] = bufs[off + i];
				w++;
			}
		if (w == 0)
			continue;
		do_io(p, true, w, wpids, wbufs, wres, errs);
		for (uint32_t i = 0; i < w; i++)
		{
			res[widx[i]] = wres[i];
			if (wres[i] != LS_OK)
				bm_set_error(wpids[i], errs[i]);
		}
	}
}

/*
 * Give blocks [from, to) of dt_id's file disk space, segment by segment, so
 * that the later write-back of a page allocated there cannot fail for lack
 * of space.  PostgreSQL's md.c gets that guarantee by writing a new block
 * when the relation is extended: a full disk then fails the statement that
 * grows the table, never the eviction or checkpoint that writes a page
 * back.  fallocate with FALLOC_FL_KEEP_SIZE: holes get blocks, data already
 * there stays, and the file's size does not change (it still grows only as
 * pages are written, and the blocks past its end go with the next
 * truncation: ls_bm_dt_clip_reserved).  LS_IO_ERROR with the errno kept
 * (bm_set_error) when the space is not there; LS_OK also on file systems
 * that cannot reserve (EOPNOTSUPP), where a write-back may still fail for
 * lack of space (the page then stays dirty).
 */
ls_status
bm_io_reserve(ls_bm *bm, uint32_t dt_id, uint32_t from, uint32_t to)
{
	bm_proc    *p = proc_get(bm);
	uint32_t	per = bm->blocks_per_segment;
	ls_status	st = LS_OK;

	LS_ASSERT(from <= to);
	if (p == NULL)
	{
		bm_set_error(ls_pid_make(dt_id, from), errno);
		return LS_IO_ERROR;
	}
	pthread_mutex_lock(&p->io_mutex);
	while (from < to && st == LS_OK)
	{
		uint32_t	segno;
		off_t		off;
		uint32_t	n;
		int			fd;
		int			err;

		page_place(bm, ls_pid_make(dt_id, from), &segno, &off);
		n = per ? LS_MIN(to - from, per - (uint32_t) (off / LS_PAGE_SIZE)) : to - from;
		fd = segment_fd(p, dt_id, segno, true);
		if (fd < 0)
			err = errno;
		else
			err = fallocate(fd, FALLOC_FL_KEEP_SIZE, off, (off_t) n * LS_PAGE_SIZE) == 0 ? 0 : errno;
		if (err == EOPNOTSUPP || err == ENOSYS)
			break;
		if (err != 0)
		{
			bm_set_error(ls_pid_make(dt_id, from), err);
			errno = err;
			st = LS_IO_ERROR;
		}
		from += n;
	}
	pthread_mutex_unlock(&p->io_mutex);
	return st;
}

void
bm_io_read_many(ls_bm *bm, uint32_t n, const ls_pid *pids, void *const *bufs, ls_status *res)
{
	bm_proc    *p = proc_get(bm);
	int			errs[256];

	for (uint32_t off = 0; off < n; off += 256)
	{
		uint32_t	m = LS_MIN(n - off, 256);

		if (p == NULL)
		{
			for (uint32_t i = 0; i < m; i++)
				res[off + i] = LS_IO_ERROR;
			bm_set_error(pids[off], errno);
			continue;
		}
		do_io(p, false, m, pids + off, bufs + off, res + off, errs);
		for (uint32_t i = 0; i < m; i++)
			if (res[off + i] != LS_OK && res[off + i] != LS_NOT_FOUND)
				bm_set_error(pids[off + i], errs[i]);
	}
}

int
bm_io_undo_fd(ls_bm *bm, uint32_t dt_id, uint32_t epoch, bool create, bool *created)
{
	bm_proc    *p = proc_get(bm);
	ls_dt_slot *s = bm_dt_slot(bm, dt_id);
	bm_fdset   *fs;
	uint32_t	gen;
	char		path[LS_BM_PATH_MAX + 64];
	int			fd;

	if (created != NULL)
		*created = false;
	if (p == NULL || s == NULL)
	{
		errno = p == NULL ? errno : ENOENT;
		return -1;
	}
	pthread_mutex_lock(&p->io_mutex);
	if (p->files == NULL && (p->files = calloc(LS_MAX_DT, sizeof(bm_fdset))) == NULL)
	{
		pthread_mutex_unlock(&p->io_mutex);
		errno = ENOMEM;
		return -1;
	}
	fs = &p->files[dt_id];
	gen = atomic_load_explicit(&s->gen, memory_order_acquire);
	if (fs->gen != gen)
	{
		fdset_close(fs);
		fs->gen = gen;
	}
	if (fs->undo_open && fs->undo_epoch == epoch && !create)
	{
		fd = fs->undo_fd;
		pthread_mutex_unlock(&p->io_mutex);
		return fd;
	}
	if (fs->undo_open)
		close(fs->undo_fd);
	fs->undo_open = false;
	if (!segment_path(bm, dt_id, LS_BM_UNDO_SEGNO, path, sizeof(path)))
	{
		pthread_mutex_unlock(&p->io_mutex);
		errno = ENOENT;
		return -1;
	}
	/* buffered: entries are not page-aligned */
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && create)
	{
		fd = open(path, O_RDWR | O_CLOEXEC | O_CREAT | O_EXCL, 0600);
		if (fd >= 0 && created != NULL)
			*created = true;
	}
	if (fd >= 0)
	{
		fs->undo_open = true;
		fs->undo_epoch = epoch;
		fs->undo_fd = fd;
	}
	pthread_mutex_unlock(&p->io_mutex);
	return fd;
}

/* ------------------------------------------------------------------------
 * Provider thread
 * ------------------------------------------------------------------------ */
ls_status
bm_io_start_provider(ls_bm *bm, void *(*fn) (void *))
{
	bm_proc    *p = proc_get(bm);

	if (p == NULL)
		return LS_IO_ERROR;
	if (p->provider_running)
		return LS_BUSY;
	atomic_store(&p->provider_stop, false);
	if (pthread_create(&p->provider, NULL, fn, bm) != 0)
		return LS_NO_MEMORY;
	p->provider_running = true;
	return LS_OK;
}

void
bm_io_stop_provider(ls_bm *bm)
{
	bm_proc    *p = proc_get(bm);

	if (p == NULL || !p->provider_running)
		return;
	atomic_store(&p->provider_stop, true);
	/* unconditional kick: the provider may be about to sleep */
	atomic_fetch_add(&bm->provider_kick, 1);
	ls_futex_wake(&bm->provider_kick, INT32_MAX);
	pthread_join(p->provider, NULL);
	p->provider_running = false;
}

bool
bm_io_provider_should_stop(ls_bm *bm)
{
	bm_proc    *p = proc_get(bm);

	return p == NULL || atomic_load(&p->provider_stop);
}

ls_status
bm_io_read_file(ls_bm *bm, const ls_bm_file *file, uint32_t block, void *buf)
{
	uint32_t	per = bm->blocks_per_segment;
	uint32_t	segno = per ? block / per : 0;
	off_t		off = (off_t) (per ? block % per : block) * LS_PAGE_SIZE;
	char		path[LS_BM_PATH_MAX + 64];
	ls_status	st;
	int			fd;

	if (!bm_io_file_path(bm, file, segno, path, sizeof(path)))
		return bm->file_path != NULL ? LS_NOT_FOUND : LS_INVALID;
	fd = open_path(bm, path, 0);
	if (fd < 0)
	{
		bm_set_error(ls_pid_make(LS_MAX_DT, block), errno);
		return errno == ENOENT ? LS_NOT_FOUND : LS_IO_ERROR;
	}
	st = sync_rest(fd, false, buf, 0, off);
	if (st == LS_IO_ERROR)
		bm_set_error(ls_pid_make(LS_MAX_DT, block), errno);
	close(fd);
	return st;
}
