/* tu_files.c - a buffer pool over files of their own; see tu_files.h. */
#include "tu_files.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tu.h"

bool
tu_file_path(const char *dir, uint32_t rel, uint32_t seg, char *buf, size_t len)
{
	int			n;

	if (seg == TU_UNDO_SEG)
		n = snprintf(buf, len, "%s/rel%u_undo", dir, rel);
	else if (seg == 0)
		n = snprintf(buf, len, "%s/rel%u", dir, rel);
	else
		n = snprintf(buf, len, "%s/rel%u.%u", dir, rel, seg);
	return n > 0 && (size_t) n < len;
}

static bool
fenv_path(void *arg, const ls_bm_file *file, uint32_t segno, char *buf, size_t len)
{
	if (file->key[1] == TU_FILE_DROPPED)
		return false;
	return tu_file_path(arg, file->key[0], segno, buf, len);
}

bool
tu_file_create(const char *dir, uint32_t rel)
{
	char		path[512];
	int			fd;

	if (!tu_file_path(dir, rel, 0, path, sizeof(path)))
		return false;
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

ls_status
tu_fenv_open(tu_fenv *e, const char *dir, uint64_t frames, ls_bm_config cfg)
{
	memset(e, 0, sizeof(*e));
	e->dir = strdup(dir);
	cfg.n_frames = frames;
	cfg.file_path = fenv_path;
	cfg.file_path_arg = e->dir;
	cfg.blocks_per_segment = TU_SEG_BLOCKS;
	e->region_size = ls_bm_region_size(frames);
	e->region = tu_shared_region(e->region_size);
	ls_btree_register_type();
	e->tree = tu_shared_region(sizeof(ls_btree));
	return ls_bm_init(e->region, e->region_size, &cfg, &e->bm);
}

void
tu_fenv_close(tu_fenv *e)
{
	if (e->bm != NULL)
		ls_bm_process_detach(e->bm);
	tu_free_region(e->region, e->region_size);
	tu_free_region(e->tree, sizeof(ls_btree));
	free(e->dir);
	memset(e, 0, sizeof(*e));
}
