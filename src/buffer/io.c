/*
 * io.c - per-process state of a pool: data file descriptor, one io_uring per
 * process (created lazily, re-created after fork), the provider thread.
 *
 * The shared pool header cannot hold these: a file descriptor and a ring
 * belong to one process.  A small table maps a pool to this process's state;
 * an entry whose owner pid differs from getpid() was inherited over fork():
 * the descriptor is still valid, but the ring and the mutex are not ours.
 */
#include "bm_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROC_SLOTS	16
#define RING_DEPTH	128

typedef struct bm_proc
{
	ls_bm	   *bm;
	pid_t		owner;			/* process this entry belongs to */
	int			fd;
	bool		ring_ok;
	bool		ring_failed;	/* io_uring unavailable: use pread/pwrite */
	struct io_uring ring;
	pthread_mutex_t io_mutex;	/* one ring, shared by this process's threads */
	pthread_t	provider;
	bool		provider_running;
	_Atomic bool provider_stop;
} bm_proc;

static bm_proc procs[PROC_SLOTS];
static pthread_mutex_t procs_mutex = PTHREAD_MUTEX_INITIALIZER;

static int
open_data_file(ls_bm *bm, bool truncate)
{
	int			flags = O_RDWR | O_CREAT | O_CLOEXEC | (truncate ? O_TRUNC : 0);
	int			fd = -1;

	if (bm->use_direct_io)
		fd = open(bm->data_path, flags | O_DIRECT, 0600);
	/* file systems without O_DIRECT (tmpfs) refuse it with EINVAL */
	if (fd < 0)
		fd = open(bm->data_path, flags, 0600);
	return fd;
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
		 * Inherited over fork(): keep the descriptor, forget the parent's
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
		int			fd = open_data_file(bm, false);

		if (fd >= 0)
		{
			p = empty;
			memset(p, 0, sizeof(*p));
			p->bm = bm;
			p->owner = me;
			p->fd = fd;
			pthread_mutex_init(&p->io_mutex, NULL);
		}
	}
	else if (p == NULL)
		errno = EMFILE;
	pthread_mutex_unlock(&procs_mutex);
	return p;
}

ls_status
bm_io_open(ls_bm *bm, bool truncate, uint64_t *file_pages)
{
	bm_proc    *p;
	struct stat stbuf;

	pthread_mutex_lock(&procs_mutex);
	/* a pool formatted again at the same address replaces the old entry */
	for (int i = 0; i < PROC_SLOTS; i++)
		if (procs[i].bm == bm && procs[i].owner == getpid())
		{
			if (procs[i].ring_ok)
				io_uring_queue_exit(&procs[i].ring);
			close(procs[i].fd);
			procs[i].bm = NULL;
		}
	pthread_mutex_unlock(&procs_mutex);

	if (truncate)
	{
		int			fd = open_data_file(bm, true);

		if (fd < 0)
		{
			bm_set_error(LS_PID_INVALID, errno);
			return LS_IO_ERROR;
		}
		close(fd);
	}
	p = proc_get(bm);
	if (p == NULL || fstat(p->fd, &stbuf) != 0)
	{
		bm_set_error(LS_PID_INVALID, errno);
		return LS_IO_ERROR;
	}
	*file_pages = (uint64_t) stbuf.st_size / LS_PAGE_SIZE;
	return LS_OK;
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
		close(p->fd);
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
			if (r == 0)
				errno = EIO;	/* read past the end of the file */
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
 */
static void
do_io(bm_proc *p, bool write, uint32_t n, const ls_pid *pids, void *const *bufs,
	  ls_status *res, int *errs)
{
	uint32_t	i = 0;

	pthread_mutex_lock(&p->io_mutex);
	while (i < n)
	{
		uint32_t	batch = 0;

		if (ring_ready(p))
		{
			for (; batch < RING_DEPTH && i + batch < n; batch++)
			{
				struct io_uring_sqe *sqe = io_uring_get_sqe(&p->ring);
				uint32_t	k = i + batch;

				if (sqe == NULL)
					break;
				if (write)
					io_uring_prep_write(sqe, p->fd, bufs[k], LS_PAGE_SIZE, pids[k] * LS_PAGE_SIZE);
				else
					io_uring_prep_read(sqe, p->fd, bufs[k], LS_PAGE_SIZE, pids[k] * LS_PAGE_SIZE);
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
					res[k] = sync_rest(p->fd, write, bufs[k], (size_t) r,
									   (off_t) (pids[k] * LS_PAGE_SIZE));
					errs[k] = res[k] == LS_OK ? 0 : errno;
				}
			}
		}
		if (batch == 0)
		{
			/* no ring: one synchronous transfer */
			res[i] = sync_rest(p->fd, write, bufs[i], 0, (off_t) (pids[i] * LS_PAGE_SIZE));
			errs[i] = res[i] == LS_OK ? 0 : errno;
			batch = 1;
		}
		i += batch;
	}
	pthread_mutex_unlock(&p->io_mutex);
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

		do_io(p, true, m, pids + off, bufs + off, res + off, errs);
		for (uint32_t i = 0; i < m; i++)
			if (res[off + i] != LS_OK)
				bm_set_error(pids[off + i], errs[i]);
	}
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
