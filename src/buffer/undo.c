/*
 * undo.c - the undo journal: the last clean image of an instance's file
 * survives a crash although pages keep being written in place.
 *
 * Before any write of this pool overwrites a block below the instance's
 * undo_below (bm_io_write calls bm_undo_before_write for every batch, so
 * write-back, flush_all, evict_all, inline eviction and ls_bm_write_block
 * all pass here), the block's current on-disk content is appended to the
 * instance's journal and the journal is fdatasync'd; only then are the
 * pages written.  Recovery (ls_bm_undo_apply) writes the first saved copy
 * of each block back.
 *
 * Why the first copy is the image's content: every in-place write of a
 * protected block b is preceded by a durable save S of b.  Any other save
 * S' of b that read b after (or while) that write was issued read it after
 * S was appended, and appends are ordered (one append at a time per
 * journal, under the slot's undo_mutex), so S' lies behind S.  Hence the
 * first saved copy of b was read before any in-place write of b since the
 * protection began: it is b's content in the image.  Processes that save
 * the same block concurrently just append it twice.
 *
 * "Recently saved" blocks are remembered in a pool-wide direct-mapped table
 * (after the frame headers, about two words per frame) so that a block is
 * usually saved once per protection: an entry packs (dt_id, block, epoch)
 * and is stored only after the journal holding the save was synced.  A
 * collision overwrites an entry, which only forgets a block (saved again
 * later); an entry of another protection has another epoch and matches
 * nothing.
 *
 * Journal format (little endian, host layout):
 *   header: undo_header (magic, version, image, CRC32C of the header)
 *   entries: undo_entry (magic, block, image, flags, CRC32C of the entry
 *            header and its page) followed by the 8 KiB page, unless
 *            UNDO_ZERO says the block read as zeros or past the end of
 *            its file (restored as zeros where its segment exists).
 * Reading stops at the first entry that is short, has a wrong magic, image
 * or CRC (a torn tail: an append that did not complete before a crash, or
 * whose sync failed and was cut off again).
 */
#include "bm_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define UNDO_MAGIC			0x4f444e55534c0a01ULL	/* header */
#define UNDO_VERSION		1u
#define UNDO_ENTRY_MAGIC	0x45554e4cu		/* entry */
#define UNDO_ZERO			1u	/* no page: the block held zeros / nothing */

#define EPOCH_BITS			20
#define EPOCH_MASK			((1u << EPOCH_BITS) - 1)

typedef struct undo_header
{
	uint64_t	magic;
	uint32_t	version;
	uint32_t	crc;			/* CRC32C of the header with crc = 0 */
	uint64_t	image;
	uint64_t	reserved;
} undo_header;

typedef struct undo_entry
{
	uint32_t	magic;
	uint32_t	block;
	uint64_t	image;
	uint32_t	flags;
	uint32_t	crc;			/* CRC32C of this header (crc = 0) and the page */
} undo_entry;

_Static_assert(sizeof(undo_header) == 32, "undo header layout");
_Static_assert(sizeof(undo_entry) == 24, "undo entry layout");
_Static_assert(LS_MAX_DT <= (1 << 12), "dt_id fits the saved-blocks table's 12 bits");

/* ------------------------------------------------------------------------
 * Saved-blocks table
 * ------------------------------------------------------------------------ */
uint64_t
bm_undo_table_entries(uint64_t n_frames)
{
	uint64_t	n = 256;

	while (n < 2 * n_frames)
		n <<= 1;
	return n;
}

static _Atomic uint64_t *
saved_table(ls_bm *bm)
{
	return (_Atomic uint64_t *) ((char *) bm + bm->undo_off);
}

static uint64_t
saved_key(uint32_t dt_id, uint32_t block, uint32_t epoch)
{
	return ((uint64_t) dt_id << 52) | ((uint64_t) block << EPOCH_BITS) | (epoch & EPOCH_MASK);
}

static _Atomic uint64_t *
saved_entry(ls_bm *bm, uint32_t dt_id, uint32_t block)
{
	uint64_t	h = (((uint64_t) dt_id << 32) | block) * 0x9e3779b97f4a7c15ULL;

	return &saved_table(bm)[(h >> 29) & bm->undo_mask];
}

static bool
saved_has(ls_bm *bm, uint32_t dt_id, uint32_t block, uint32_t epoch)
{
	return atomic_load_explicit(saved_entry(bm, dt_id, block), memory_order_acquire) ==
		saved_key(dt_id, block, epoch);
}

static void
saved_put(ls_bm *bm, uint32_t dt_id, uint32_t block, uint32_t epoch)
{
	atomic_store_explicit(saved_entry(bm, dt_id, block), saved_key(dt_id, block, epoch),
						  memory_order_release);
}

/*
 * Next protection epoch of the slot (caller holds undo_mutex).  Only the low
 * EPOCH_BITS are stored in the table, and 0 is never used (an empty entry):
 * when they wrap, entries of this instance are cleared first, so that an
 * entry of a protection 2^20 epochs ago cannot match.
 */
static uint32_t
next_epoch(ls_bm *bm, uint32_t dt_id)
{
	ls_dt_slot *s = bm_dt_slot(bm, dt_id);
	uint32_t	e = atomic_load_explicit(&s->undo_epoch, memory_order_relaxed) + 1;

	if ((e & EPOCH_MASK) == 0)
	{
		_Atomic uint64_t *t = saved_table(bm);

		for (uint64_t i = 0; i <= bm->undo_mask; i++)
			if ((atomic_load_explicit(&t[i], memory_order_relaxed) >> 52) == dt_id)
				atomic_store_explicit(&t[i], 0, memory_order_relaxed);
		e++;
	}
	atomic_store_explicit(&s->undo_epoch, e, memory_order_release);
	return e;
}

void
bm_undo_reset(ls_bm *bm, uint32_t dt_id)
{
	ls_dt_slot *s = bm_dt_slot(bm, dt_id);

	if (s == NULL)
		return;
	ls_mutex_lock(&s->undo_mutex);
	atomic_store_explicit(&s->undo_below, 0, memory_order_release);
	next_epoch(bm, dt_id);
	s->undo_image = 0;
	s->undo_size = 0;
	s->undo_broken = 0;
	ls_mutex_unlock(&s->undo_mutex);
}

/* ------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------ */
static uint32_t
header_crc(const undo_header *h)
{
	undo_header c = *h;

	c.crc = 0;
	return ls_crc32c(0, &c, sizeof(c));
}

static uint32_t
entry_crc(const undo_entry *e, const void *page)
{
	undo_entry	c = *e;
	uint32_t	crc;

	c.crc = 0;
	crc = ls_crc32c(0, &c, sizeof(c));
	if ((e->flags & UNDO_ZERO) == 0)
		crc = ls_crc32c(crc, page, LS_PAGE_SIZE);
	return crc;
}

static bool
all_zero(const void *p, size_t len)
{
	const uint64_t *w = p;

	for (size_t i = 0; i < len / 8; i++)
		if (w[i] != 0)
			return false;
	return true;
}

/* LS_OK with *got bytes (less than len only at the end of the file). */
static ls_status
pread_all(int fd, void *buf, size_t len, off_t off, size_t *got)
{
	size_t		done = 0;

	while (done < len)
	{
		ssize_t		r = pread(fd, (char *) buf + done, len - done, off + (off_t) done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return LS_IO_ERROR;
		if (r == 0)
			break;
		done += (size_t) r;
	}
	*got = done;
	return LS_OK;
}

/* fsync the directory holding path (a file was just created there). */
static ls_status
sync_dir_of(const char *path)
{
	char		dir[LS_BM_PATH_MAX + 64];
	int			fd;
	int			rc;

	snprintf(dir, sizeof(dir), "%s", path);
	fd = open(dirname(dir), O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return LS_IO_ERROR;
	rc = fsync(fd);
	close(fd);
	return rc == 0 ? LS_OK : LS_IO_ERROR;
}

/* ------------------------------------------------------------------------
 * Saving before in-place writes
 * ------------------------------------------------------------------------ */

/*
 * Save the on-disk content of blocks blk[0..n) of dt_id (not known to be
 * saved in protection `epoch`) in the journal, durably.  LS_OK: every one
 * has a durable save (or the protection ended meanwhile).
 */
static ls_status
save_blocks(ls_bm *bm, uint32_t dt_id, uint32_t n, const uint32_t *blk)
{
	ls_dt_slot *s = bm_dt_slot(bm, dt_id);
	size_t		esz = sizeof(undo_entry) + LS_PAGE_SIZE;
	uint8_t    *pages = NULL;
	uint8_t    *jbuf = NULL;
	ls_pid		pids[256];
	void	   *bufs[256];
	ls_status	rres[256];
	ls_status	st = LS_OK;
	size_t		len = 0;
	uint32_t	epoch;
	uint64_t	image;
	int			fd;

	if (posix_memalign((void **) &pages, 4096, (size_t) n * LS_PAGE_SIZE) != 0 ||
		(jbuf = malloc((size_t) n * esz)) == NULL)
	{
		free(pages);
		bm_set_error(ls_pid_make(dt_id, blk[0]), ENOMEM);
		return LS_IO_ERROR;
	}
	for (uint32_t i = 0; i < n; i++)
	{
		pids[i] = ls_pid_make(dt_id, blk[i]);
		bufs[i] = pages + (size_t) i * LS_PAGE_SIZE;
	}

	/*
	 * Read the current content: before taking the append lock, so that
	 * appenders wait on one another's sync only.  A block read here may be
	 * overwritten before the append (by a writer whose own save came
	 * first): the copy is then a later one and recovery ignores it.
	 */
	bm_io_read_many(bm, n, pids, bufs, rres);
	for (uint32_t i = 0; i < n; i++)
		if (rres[i] != LS_OK && rres[i] != LS_NOT_FOUND)
		{
			st = LS_IO_ERROR;
			goto out;
		}

	ls_mutex_lock(&s->undo_mutex);
	epoch = atomic_load_explicit(&s->undo_epoch, memory_order_relaxed);
	image = s->undo_image;
	if (atomic_load_explicit(&s->undo_below, memory_order_relaxed) == 0)
	{
		/* protection ended meanwhile: nothing to keep */
		ls_mutex_unlock(&s->undo_mutex);
		goto out;
	}
	if (s->undo_broken != 0)
	{
		/* the protection could not set up its journal: nothing is saved */
		ls_mutex_unlock(&s->undo_mutex);
		errno = s->undo_broken;
		bm_set_error(ls_pid_make(dt_id, blk[0]), errno);
		st = LS_IO_ERROR;
		goto out;
	}
	for (uint32_t i = 0; i < n; i++)
	{
		undo_entry *e = (undo_entry *) (jbuf + len);
		const void *pg = bufs[i];

		e->magic = UNDO_ENTRY_MAGIC;
		e->block = blk[i];
		e->image = image;
		e->flags = (rres[i] == LS_NOT_FOUND || all_zero(pg, LS_PAGE_SIZE)) ? UNDO_ZERO : 0;
		e->crc = 0;
		len += sizeof(undo_entry);
		if ((e->flags & UNDO_ZERO) == 0)
		{
			memcpy(jbuf + len, pg, LS_PAGE_SIZE);
			len += LS_PAGE_SIZE;
		}
		e->crc = entry_crc(e, pg);
	}
	fd = bm_io_undo_fd(bm, dt_id, epoch, false, NULL);
	if (fd < 0)
		st = LS_IO_ERROR;
	else if ((st = ls_pwrite_full(fd, jbuf, len, (uint64_t) s->undo_size)) == LS_OK &&
			 fdatasync(fd) != 0)
		st = LS_IO_ERROR;
	if (st == LS_OK)
	{
		s->undo_size += len;
		for (uint32_t i = 0; i < n; i++)
			saved_put(bm, dt_id, blk[i], epoch);
		atomic_fetch_add_explicit(&bm->undo_appends, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&bm->undo_pages, n, memory_order_relaxed);
	}
	else
	{
		int			err = errno;

		/*
		 * Cut off whatever of this append reached the file: a later append
		 * lands at undo_size, and recovery must not stop at this one's torn
		 * remains before it.
		 */
		if (fd >= 0 && ftruncate(fd, (off_t) s->undo_size) == 0)
			(void) fdatasync(fd);
		errno = err;
	}
	ls_mutex_unlock(&s->undo_mutex);
	if (st != LS_OK)
		bm_set_error(ls_pid_make(dt_id, blk[0]), errno);
out:
	free(pages);
	free(jbuf);
	return st;
}

void
bm_undo_before_write(ls_bm *bm, uint32_t n, const ls_pid *pids, bool *ok, ls_status *res)
{
	bool		need[256];
	uint32_t	blk[256];
	uint32_t	todo = 0;

	for (uint32_t i = 0; i < n; i++)
	{
		ls_dt_slot *s = bm_dt_slot(bm, ls_pid_dt(pids[i]));
		uint32_t	below;

		ok[i] = true;
		need[i] = false;
		if (s == NULL)
			continue;
		below = atomic_load_explicit(&s->undo_below, memory_order_acquire);
		if (ls_pid_block(pids[i]) >= below)
			continue;
		if (saved_has(bm, ls_pid_dt(pids[i]), ls_pid_block(pids[i]),
					  atomic_load_explicit(&s->undo_epoch, memory_order_acquire)))
			continue;
		need[i] = true;
		todo++;
	}
	/* one append (one sync) per instance in the batch */
	while (todo > 0)
	{
		uint32_t	dt_id = UINT32_MAX;
		uint32_t	m = 0;
		ls_status	st;

		for (uint32_t i = 0; i < n; i++)
		{
			if (!need[i])
				continue;
			if (dt_id == UINT32_MAX)
				dt_id = ls_pid_dt(pids[i]);
			if (ls_pid_dt(pids[i]) != dt_id)
				continue;
			/* the same block twice in one batch: save it once */
			bool		dup = false;

			for (uint32_t j = 0; j < m && !dup; j++)
				dup = blk[j] == ls_pid_block(pids[i]);
			if (!dup)
				blk[m++] = ls_pid_block(pids[i]);
		}
		st = save_blocks(bm, dt_id, m, blk);
		for (uint32_t i = 0; i < n; i++)
		{
			if (!need[i] || ls_pid_dt(pids[i]) != dt_id)
				continue;
			need[i] = false;
			todo--;
			if (st != LS_OK)
			{
				/* never written unprotected: the page stays dirty */
				ok[i] = false;
				res[i] = st;
			}
		}
	}
}

/* ------------------------------------------------------------------------
 * Public API
 * ------------------------------------------------------------------------ */
ls_status
ls_bm_protect_dt(ls_bm *bm, uint32_t dt_id, uint32_t below, uint64_t image)
{
	ls_dt_slot *s = bm_dt_slot(bm, dt_id);
	ls_status	st = LS_OK;
	undo_header h;
	uint32_t	epoch;
	bool		created;
	int			fd;

	if (s == NULL || atomic_load_explicit(&s->used, memory_order_acquire) == 0 ||
		below == LS_BLOCK_INVALID)
		return LS_INVALID;
	ls_mutex_lock(&s->undo_mutex);
	/* writers see "unprotected" or the new epoch, never old remembered saves */
	atomic_store_explicit(&s->undo_below, 0, memory_order_release);
	epoch = next_epoch(bm, dt_id);
	s->undo_broken = 0;
	if (below == 0)
	{
		ls_mutex_unlock(&s->undo_mutex);
		return LS_OK;
	}
	fd = bm_io_undo_fd(bm, dt_id, epoch, true, &created);
	if (fd < 0)
		st = LS_IO_ERROR;
	else
	{
		memset(&h, 0, sizeof(h));
		h.magic = UNDO_MAGIC;
		h.version = UNDO_VERSION;
		h.image = image;
		h.crc = header_crc(&h);
		if (ftruncate(fd, 0) != 0 ||
			ls_pwrite_full(fd, &h, sizeof(h), 0) != LS_OK ||
			fdatasync(fd) != 0)
			st = LS_IO_ERROR;
	}
	if (st == LS_OK && created)
	{
		char		path[LS_BM_PATH_MAX + 64];

		if (!bm_io_file_path(bm, &s->file, LS_BM_UNDO_SEGNO, path, sizeof(path)))
		{
			errno = ENOENT;
			st = LS_IO_ERROR;
		}
		else
			st = sync_dir_of(path);
	}
	s->undo_image = image;
	s->undo_size = sizeof(h);
	if (st != LS_OK)
	{
		/*
		 * The old journal may be gone and the new one is not there: stay
		 * protected, with every save failing, rather than write protected
		 * blocks with nothing to restore them from.
		 */
		s->undo_broken = errno != 0 ? errno : EIO;
		bm_set_error(ls_pid_make(dt_id, 0), s->undo_broken);
	}
	atomic_store_explicit(&s->undo_below, below, memory_order_release);
	ls_mutex_unlock(&s->undo_mutex);
	return st;
}

static int
open_journal(ls_bm *bm, const ls_bm_file *file)
{
	char		path[LS_BM_PATH_MAX + 64];

	if (!bm_io_file_path(bm, file, LS_BM_UNDO_SEGNO, path, sizeof(path)))
	{
		errno = ENOENT;
		return -1;
	}
	return open(path, O_RDONLY | O_CLOEXEC);
}

/* LS_OK with *image, LS_NOT_FOUND (no header), LS_IO_ERROR. */
static ls_status
read_header(int fd, uint64_t *image)
{
	undo_header h;
	size_t		got;

	if (pread_all(fd, &h, sizeof(h), 0, &got) != LS_OK)
		return LS_IO_ERROR;
	if (got < sizeof(h) || h.magic != UNDO_MAGIC || h.version != UNDO_VERSION ||
		h.crc != header_crc(&h))
		return LS_NOT_FOUND;
	*image = h.image;
	return LS_OK;
}

ls_status
ls_bm_undo_image(ls_bm *bm, const ls_bm_file *file, uint64_t *image)
{
	ls_status	st;
	int			fd;

	if (file == NULL || image == NULL)
		return LS_INVALID;
	fd = open_journal(bm, file);
	if (fd < 0)
	{
		if (errno == ENOENT)
			return LS_NOT_FOUND;
		bm_set_error(LS_PID_INVALID, errno);
		return LS_IO_ERROR;
	}
	st = read_header(fd, image);
	if (st == LS_IO_ERROR)
		bm_set_error(LS_PID_INVALID, errno);
	close(fd);
	return st;
}

/* Blocks restored so far (open addressing; first copy wins). */
typedef struct block_set
{
	uint32_t   *slots;			/* block + 1, 0 empty */
	uint32_t	cap;
	uint32_t	n;
} block_set;

/* true when block was not in the set (and is now); false also on ENOMEM (*err). */
static bool
block_set_add(block_set *bs, uint32_t block, bool *err)
{
	if (2 * (bs->n + 1) > bs->cap)
	{
		uint32_t	ncap = bs->cap ? bs->cap * 2 : 1024;
		uint32_t   *ns = calloc(ncap, sizeof(uint32_t));

		if (ns == NULL)
		{
			*err = true;
			return false;
		}
		for (uint32_t i = 0; i < bs->cap; i++)
			if (bs->slots[i] != 0)
			{
				uint32_t	k = (bs->slots[i] * 0x9e3779b1u) & (ncap - 1);

				while (ns[k] != 0)
					k = (k + 1) & (ncap - 1);
				ns[k] = bs->slots[i];
			}
		free(bs->slots);
		bs->slots = ns;
		bs->cap = ncap;
	}
	uint32_t	v = block + 1;
	uint32_t	k = (v * 0x9e3779b1u) & (bs->cap - 1);

	while (bs->slots[k] != 0)
	{
		if (bs->slots[k] == v)
			return false;
		k = (k + 1) & (bs->cap - 1);
	}
	bs->slots[k] = v;
	bs->n++;
	return true;
}

typedef struct seg_fds
{
	int		   *fd;				/* per segment: -1 not open, -2 missing */
	uint32_t	n;
} seg_fds;

/* Descriptor of segment segno (opened for writing, buffered); -2 missing. */
static int
seg_fd(ls_bm *bm, const ls_bm_file *file, seg_fds *sf, uint32_t segno)
{
	char		path[LS_BM_PATH_MAX + 64];

	if (segno >= sf->n)
	{
		uint32_t	n = segno + 8;
		int		   *fds = realloc(sf->fd, n * sizeof(int));

		if (fds == NULL)
		{
			errno = ENOMEM;
			return -1;
		}
		for (uint32_t i = sf->n; i < n; i++)
			fds[i] = -1;
		sf->fd = fds;
		sf->n = n;
	}
	if (sf->fd[segno] != -1)
		return sf->fd[segno];
	if (!bm_io_file_path(bm, file, segno, path, sizeof(path)))
	{
		errno = ENOENT;
		return -1;
	}
	sf->fd[segno] = open(path, O_RDWR | O_CLOEXEC);
	if (sf->fd[segno] < 0)
	{
		if (errno != ENOENT)
			return -1;
		sf->fd[segno] = -2;
	}
	return sf->fd[segno];
}

ls_status
ls_bm_undo_apply(ls_bm *bm, const ls_bm_file *file, uint64_t image, uint32_t *restored)
{
	uint32_t	per = bm->blocks_per_segment;
	seg_fds		sf = {0};
	block_set	bs = {0};
	ls_status	st;
	uint64_t	jimage;
	uint8_t    *page = NULL;
	static const uint8_t zero_page[LS_PAGE_SIZE];
	off_t		pos = sizeof(undo_header);
	uint32_t	count = 0;
	int			fd;

	if (file == NULL || restored == NULL)
		return LS_INVALID;
	*restored = 0;
	fd = open_journal(bm, file);
	if (fd < 0)
	{
		if (errno == ENOENT)
			return LS_OK;
		bm_set_error(LS_PID_INVALID, errno);
		return LS_IO_ERROR;
	}
	st = read_header(fd, &jimage);
	if (st != LS_OK || jimage != image)
	{
		close(fd);
		if (st == LS_IO_ERROR)
		{
			bm_set_error(LS_PID_INVALID, errno);
			return st;
		}
		return LS_OK;			/* no journal of this image */
	}
	if ((page = malloc(LS_PAGE_SIZE)) == NULL)
	{
		close(fd);
		return LS_NO_MEMORY;
	}
	for (;;)
	{
		undo_entry	e;
		size_t		got;
		bool		zero;

		if ((st = pread_all(fd, &e, sizeof(e), pos, &got)) != LS_OK)
		{
			bm_set_error(LS_PID_INVALID, errno);
			break;
		}
		if (got < sizeof(e) || e.magic != UNDO_ENTRY_MAGIC || e.image != image ||
			(e.flags & ~UNDO_ZERO) != 0)
			break;
		zero = (e.flags & UNDO_ZERO) != 0;
		if (!zero)
		{
			if ((st = pread_all(fd, page, LS_PAGE_SIZE, pos + (off_t) sizeof(e), &got)) != LS_OK)
			{
				bm_set_error(LS_PID_INVALID, errno);
				break;
			}
			if (got < LS_PAGE_SIZE)
				break;			/* torn tail */
		}
		if (entry_crc(&e, page) != e.crc)
			break;				/* torn tail */
		pos += (off_t) sizeof(e) + (zero ? 0 : LS_PAGE_SIZE);

		bool		oom = false;

		if (!block_set_add(&bs, e.block, &oom))
		{
			if (oom)
			{
				st = LS_NO_MEMORY;
				break;
			}
			continue;			/* a later copy: an intermediate state */
		}

		uint32_t	segno = per ? e.block / per : 0;
		off_t		off = (off_t) (per ? e.block % per : e.block) * LS_PAGE_SIZE;
		int			dfd = seg_fd(bm, file, &sf, segno);

		if (dfd == -2)
			continue;			/* the segment is gone: nothing of the image there */
		if (dfd < 0)
		{
			bm_set_error(ls_pid_make(LS_MAX_DT, e.block), errno);
			st = LS_IO_ERROR;
			break;
		}
		if ((st = ls_pwrite_full(dfd, zero ? zero_page : page, LS_PAGE_SIZE, (uint64_t) off)) != LS_OK)
		{
			bm_set_error(ls_pid_make(LS_MAX_DT, e.block), errno);
			break;
		}
		count++;
	}
	for (uint32_t i = 0; i < sf.n; i++)
	{
		if (sf.fd[i] < 0)
			continue;
		if (st == LS_OK && fsync(sf.fd[i]) != 0)
		{
			bm_set_error(ls_pid_make(LS_MAX_DT, per * i), errno);
			st = LS_IO_ERROR;
		}
		close(sf.fd[i]);
	}
	free(sf.fd);
	free(bs.slots);
	free(page);
	close(fd);
	if (st == LS_OK)
		*restored = count;
	return st;
}
