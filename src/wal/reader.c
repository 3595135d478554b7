/*
 * reader.c - recovery reader of the log: validates blocks (CRC, position,
 * generation), gathers whole rounds and returns their records.  A round is
 * returned only once its last block (flagged END) was read; a round cut by
 * the end of the valid stream is dropped entirely.  See README.md.
 */
#include "wal_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define READ_CHUNK		(64 * 1024)
#define ROUND_MAX		(1ull << 30)	/* a longer round is corrupt */

typedef struct rd_block
{
	uint64_t	pos;			/* block position */
	uint64_t	off;			/* where its data starts in r->data */
} rd_block;

struct ls_wal_reader
{
	char	   *dir;
	uint64_t	segsz;
	uint64_t	start;

	int			fd;				/* segment fd_seg, -1 none */
	uint64_t	fd_seg;
	uint8_t    *chunk;			/* READ_CHUNK bytes read ahead */
	uint64_t	chunk_pos;		/* stream position of chunk[0] */
	uint32_t	chunk_len;

	uint64_t	next_block;		/* position of the next block to read */
	uint32_t	prev_gen;
	bool		first_round;	/* the round that holds start */

	uint8_t    *data;			/* the current round's record bytes */
	uint64_t	data_len;
	uint64_t	data_cap;
	rd_block   *blocks;
	uint32_t	nblocks;
	uint32_t	blocks_cap;
	uint64_t	cursor;			/* next record in data */
	uint32_t	bi;				/* block holding cursor */
	bool		ready;			/* data holds a complete round */

	uint8_t    *rec;			/* the record returned last (8-byte aligned) */
	uint32_t	rec_cap;

	bool		at_end;
	uint64_t	end;
	uint64_t	max_gsn;
	uint64_t	round_min_gsn;	/* smallest GSN of data's records after start */
};

static ls_status read_block(ls_wal_reader *r, uint64_t pos, const uint8_t **blk);

ls_status
ls_wal_reader_open(const char *dir, uint64_t segment_size, uint64_t start,
				   ls_wal_reader **out)
{
	*out = NULL;
	if (dir == NULL || segment_size < LS_WAL_BLOCK || segment_size % LS_WAL_BLOCK != 0)
		return LS_INVALID;
	if (start % LS_WAL_BLOCK != 0 && start % LS_WAL_BLOCK < LS_WAL_BLOCK_HDR)
		return LS_INVALID;		/* inside a block header: not a record start */

	ls_wal_reader *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return LS_NO_MEMORY;
	r->dir = strdup(dir);
	r->chunk = malloc(READ_CHUNK);
	if (r->dir == NULL || r->chunk == NULL)
	{
		ls_wal_reader_close(r);
		return LS_NO_MEMORY;
	}
	r->fd = -1;
	r->segsz = segment_size;
	r->start = start;
	r->next_block = start - start % LS_WAL_BLOCK;
	r->end = r->next_block;
	r->first_round = true;
	*out = r;
	return LS_OK;
}

/*
 * The generation of the block before the reader's first one, which belongs
 * to the valid stream (the writer keeps its segment): a stale block of an
 * older generation right at the start is then recognised too.  Without it
 * (start 0, block unreadable) the first block sets the generation.
 */
static ls_status
learn_prev_generation(ls_wal_reader *r)
{
	const uint8_t *blk;
	uint64_t	prev = r->next_block - LS_WAL_BLOCK;
	ls_status	st = read_block(r, prev, &blk);

	if (st == LS_NOT_FOUND)
		return LS_OK;
	if (st != LS_OK)
		return st;

	wal_block_hdr h;

	memcpy(&h, blk, sizeof(h));
	if (h.pos == prev && wal_block_crc(blk) == h.crc)
		r->prev_gen = h.generation;
	return LS_OK;
}

void
ls_wal_reader_close(ls_wal_reader *r)
{
	if (r == NULL)
		return;
	if (r->fd >= 0)
		close(r->fd);
	free(r->dir);
	free(r->chunk);
	free(r->data);
	free(r->blocks);
	free(r->rec);
	free(r);
}

uint64_t
ls_wal_reader_end(const ls_wal_reader *r)
{
	return r->end;
}

uint64_t
ls_wal_reader_round_min_gsn(const ls_wal_reader *r)
{
	return r->round_min_gsn;
}

uint64_t
ls_wal_reader_max_gsn(const ls_wal_reader *r)
{
	return r->max_gsn;
}

/*
 * The block at pos into *blk (points into the read-ahead chunk).  LS_OK,
 * LS_NOT_FOUND when the segment or the block does not exist, LS_IO_ERROR.
 */
static ls_status
read_block(ls_wal_reader *r, uint64_t pos, const uint8_t **blk)
{
	if (r->chunk_len > 0 && pos >= r->chunk_pos && pos + LS_WAL_BLOCK <= r->chunk_pos + r->chunk_len)
	{
		*blk = r->chunk + (pos - r->chunk_pos);
		return LS_OK;
	}

	uint64_t	segno = pos / r->segsz;

	if (r->fd < 0 || r->fd_seg != segno)
	{
		char		path[4096];

		if (r->fd >= 0)
			close(r->fd);
		r->fd = -1;
		wal_segment_path(path, sizeof(path), r->dir, segno);
		r->fd = open(path, O_RDONLY | O_CLOEXEC);
		if (r->fd < 0)
			return errno == ENOENT ? LS_NOT_FOUND : LS_IO_ERROR;
		r->fd_seg = segno;
	}

	uint64_t	off = pos % r->segsz;
	uint32_t	want = (uint32_t) LS_MIN((uint64_t) READ_CHUNK, r->segsz - off);
	uint32_t	got = 0;

	while (got < want)
	{
		ssize_t		n = pread(r->fd, r->chunk + got, want - got, (off_t) (off + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return LS_IO_ERROR;
		if (n == 0)
			break;
		got += (uint32_t) n;
	}
	r->chunk_pos = pos;
	r->chunk_len = got - got % LS_WAL_BLOCK;
	if (r->chunk_len == 0)
		return LS_NOT_FOUND;	/* a short segment: the stream ends here */
	*blk = r->chunk;
	return LS_OK;
}

/* A block that may continue the stream at pos (CRC, position, generation, sizes). */
static bool
block_valid(const ls_wal_reader *r, const uint8_t *blk, uint64_t pos)
{
	wal_block_hdr h;

	memcpy(&h, blk, sizeof(h));
	if (h.pos != pos || h.generation < r->prev_gen || h.generation == 0)
		return false;
	if (h.used > LS_WAL_BLOCK_DATA || (h.flags & ~WAL_BLK_FLAGS) != 0 || h.pad != 0)
		return false;
	if (h.first != WAL_NO_FIRST && h.first >= h.used)
		return false;
	return wal_block_crc(blk) == h.crc;
}

static ls_status
grow(ls_wal_reader *r, uint32_t used)
{
	if (r->data_len + used > r->data_cap)
	{
		uint64_t	cap = LS_MAX(r->data_cap * 2, 64 * 1024);

		while (cap < r->data_len + used)
			cap *= 2;
		uint8_t    *d = realloc(r->data, cap);

		if (d == NULL)
			return LS_NO_MEMORY;
		r->data = d;
		r->data_cap = cap;
	}
	if (r->nblocks == r->blocks_cap)
	{
		uint32_t	cap = r->blocks_cap ? r->blocks_cap * 2 : 256;
		rd_block   *b = realloc(r->blocks, sizeof(rd_block) * cap);

		if (b == NULL)
			return LS_NO_MEMORY;
		r->blocks = b;
		r->blocks_cap = cap;
	}
	return LS_OK;
}

static ls_status
stream_ends(ls_wal_reader *r)
{
	/* an unfinished round is dropped: the writer continues where it began */
	r->end = r->nblocks > 0 ? r->blocks[0].pos : r->next_block;
	r->at_end = true;
	r->nblocks = 0;
	r->data_len = 0;
	return LS_NOT_FOUND;
}

/* A record header that fits the left bytes of a round and can be a record. */
static bool
rec_header_ok(const ls_wal_rec *h, uint64_t left)
{
	return h->len >= LS_WAL_REC_HDR && h->len <= left && h->type != 0 && h->gsn != 0;
}

/*
 * The smallest GSN among the records of data from cursor on (UINT64_MAX when
 * none).  Stops at the first impossible header: ls_wal_reader_next reports it
 * when it gets there.
 */
static uint64_t
round_min_gsn(const ls_wal_reader *r)
{
	uint64_t	min = UINT64_MAX;

	for (uint64_t off = r->cursor; r->data_len - off >= LS_WAL_REC_HDR;)
	{
		ls_wal_rec	h;

		memcpy(&h, r->data + off, sizeof(h));
		if (!rec_header_ok(&h, r->data_len - off))
			break;
		min = LS_MIN(min, h.gsn);
		off += h.len;
	}
	return min;
}

/* Read the next whole round into data.  LS_NOT_FOUND at the end of the stream. */
static ls_status
load_round(ls_wal_reader *r)
{
	r->nblocks = 0;
	r->data_len = 0;
	r->cursor = 0;
	r->bi = 0;
	r->ready = false;
	if (r->first_round && r->next_block > 0 && r->prev_gen == 0)
	{
		ls_status	st = learn_prev_generation(r);

		if (st != LS_OK)
			return st;
	}
	for (;;)
	{
		const uint8_t *blk;
		ls_status	st = read_block(r, r->next_block, &blk);

		if (st == LS_NOT_FOUND)
			return stream_ends(r);
		if (st != LS_OK)
			return st;
		if (!block_valid(r, blk, r->next_block))
			return stream_ends(r);

		wal_block_hdr h;

		memcpy(&h, blk, sizeof(h));
		bool		round_start = (h.flags & WAL_BLK_START) != 0;

		/*
		 * Rounds begin with a START block and end with an END block; only the
		 * round holding the reader's start may be entered in its middle.
		 */
		if (round_start != (r->nblocks == 0) && !(r->first_round && r->nblocks == 0))
			return stream_ends(r);
		if (r->nblocks > 0 && h.generation != r->prev_gen)
			return stream_ends(r);
		if ((st = grow(r, h.used)) != LS_OK)
			return st;
		if (r->data_len + h.used > ROUND_MAX)
			return LS_CORRUPT;
		r->blocks[r->nblocks].pos = r->next_block;
		r->blocks[r->nblocks].off = r->data_len;
		if (r->first_round && r->nblocks == 0)
		{
			/* where the first record after start begins */
			if (r->start % LS_WAL_BLOCK != 0)
			{
				uint64_t	skip = r->start % LS_WAL_BLOCK - LS_WAL_BLOCK_HDR;

				if (skip > h.used)
					return stream_ends(r);
				r->cursor = skip;
			}
			else
				r->cursor = UINT64_MAX; /* at the first block's `first` below */
		}
		if (r->cursor == UINT64_MAX && h.first != WAL_NO_FIRST)
			r->cursor = r->data_len + h.first;
		memcpy(r->data + r->data_len, blk + LS_WAL_BLOCK_HDR, h.used);
		r->data_len += h.used;
		r->nblocks++;
		r->prev_gen = h.generation;
		r->next_block += LS_WAL_BLOCK;
		if (h.flags & WAL_BLK_END)
			break;
	}
	if (r->cursor == UINT64_MAX)
		r->cursor = r->data_len;	/* no record starts after start in this round */
	r->first_round = false;
	r->ready = true;
	r->end = r->next_block;
	r->round_min_gsn = round_min_gsn(r);
	return LS_OK;
}

ls_status
ls_wal_reader_next(ls_wal_reader *r, const ls_wal_rec **rec, uint64_t *pos)
{
	for (;;)
	{
		if (r->at_end)
			return LS_NOT_FOUND;
		if (!r->ready || r->cursor >= r->data_len)
		{
			ls_status	st = load_round(r);

			if (st != LS_OK)
				return st;
			continue;
		}

		uint64_t	left = r->data_len - r->cursor;
		ls_wal_rec	h;

		if (left < LS_WAL_REC_HDR)
			return LS_CORRUPT;
		memcpy(&h, r->data + r->cursor, sizeof(h));
		if (!rec_header_ok(&h, left))
			return LS_CORRUPT;
		while (r->bi + 1 < r->nblocks && r->blocks[r->bi + 1].off <= r->cursor)
			r->bi++;
		*pos = r->blocks[r->bi].pos + LS_WAL_BLOCK_HDR + (r->cursor - r->blocks[r->bi].off);
		if (h.len > r->rec_cap)
		{
			uint32_t	cap = LS_MAX(h.len, 2 * r->rec_cap);
			uint8_t    *b = malloc(cap);

			if (b == NULL)
				return LS_NO_MEMORY;
			free(r->rec);
			r->rec = b;
			r->rec_cap = cap;
		}
		memcpy(r->rec, r->data + r->cursor, h.len);
		*rec = (const ls_wal_rec *) r->rec;
		r->cursor += h.len;
		r->max_gsn = LS_MAX(r->max_gsn, h.gsn);
		return LS_OK;
	}
}
