/*
 * tu_files.h - a buffer pool whose B+-trees live in files of their own, as
 * the cold tier keeps them in PostgreSQL relation files (test_btree_file,
 * test_buffer_undo).
 *
 * The ls_bm_file {.key = {rel, ...}} is the file DIR/rel<rel> split into
 * segments of TU_SEG_BLOCKS blocks (DIR/rel<rel>.<n>), its undo journal is
 * DIR/rel<rel>_undo; a key[1] of TU_FILE_DROPPED says the file is gone.
 * Segment 0 is the caller's to create (tu_file_create), as PostgreSQL's
 * smgr creates it.
 *
 *  tu_fenv_open
 *      a pool of `frames` frames in a fresh shared region whose files are
 *      in dir (cfg's n_frames, file_path, file_path_arg and
 *      blocks_per_segment are set here; checksums, write batches and the
 *      free target are the caller's), the B+-tree type registered, and
 *      e->tree, an ls_btree in shared memory.
 *  tu_fenv_close
 *      the pool thrown away without writing anything (a crash, as far as
 *      the files see: flush first for a clean close), e->tree unmapped.
 *  tu_file_path
 *      the path of segment seg (TU_UNDO_SEG: the journal) of file rel.
 *  tu_file_create
 *      segment 0 of file rel, empty.
 */
#ifndef LEANSTORE_TEST_TU_FILES_H
#define LEANSTORE_TEST_TU_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "leanstore/btree.h"

#define TU_SEG_BLOCKS	16		/* small segments: a tree spans many files */
#define TU_FILE_DROPPED	999		/* key[1] of a file that is gone */
#define TU_UNDO_SEG		LS_BM_UNDO_SEGNO

typedef struct tu_fenv
{
	char	   *dir;
	size_t		region_size;
	void	   *region;
	ls_bm	   *bm;
	ls_btree   *tree;
} tu_fenv;

ls_status	tu_fenv_open(tu_fenv *e, const char *dir, uint64_t frames, ls_bm_config cfg);
void		tu_fenv_close(tu_fenv *e);
bool		tu_file_path(const char *dir, uint32_t rel, uint32_t seg, char *buf, size_t len);
bool		tu_file_create(const char *dir, uint32_t rel);

#endif							/* LEANSTORE_TEST_TU_FILES_H */
