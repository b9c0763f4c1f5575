/* rundir.h: the run directory (docs/architecture.md §5): out_dir/name/ with lock, config.cfg,
 * log.txt, and later metrics.jsonl, summary.json, trace.json, checkpoints/. */
#ifndef TERN_RUNDIR_H
#define TERN_RUNDIR_H

#include <stddef.h>

#include "config/config.h"

/* Create out_dir (and parents) and a new, empty run directory in it: `name`,
 * or name-2, name-3, ... if taken, so no earlier run is overwritten. The
 * path is written to `path` (size n). TERN_OK; TERN_ECONFIG for a place the
 * user must fix (no permission to write there, a read-only file system, a
 * file where a directory should be), with the way out; TERN_EIO for another
 * failure (a full disk). A failure leaves none of the directories it made. */
int tern_rundir_create(const char *out_dir, const char *name, char *path, size_t n);

/* Write the resolved config to DIR/config.cfg (temporary file + rename). */
int tern_rundir_write_config(const char *dir, tern_config *c);

/* Lock the run directory DIR for one run: DIR/lock (created if missing) is
 * locked with flock(LOCK_EX | LOCK_NB) and holds this process's id while *fd
 * stays open. Taken before anything in DIR is changed. TERN_ECONFIG when
 * another process holds it (the message names its pid) or this process may
 * not write it (no permission, a read-only file system), TERN_EIO when the
 * file cannot be used otherwise; on a file system without locks, a warning and TERN_OK
 * with *fd = -1. */
int tern_rundir_lock(const char *dir, int *fd);
/* Release the lock (fd -1: nothing to release). */
void tern_rundir_unlock(int fd);

#endif
