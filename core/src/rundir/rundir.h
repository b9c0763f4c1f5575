/* rundir.h: the run directory (docs/architecture.md §5): out_dir/name/ with config.cfg,
 * log.txt, and later metrics.jsonl, summary.json, trace.json, checkpoints/. */
#ifndef TERN_RUNDIR_H
#define TERN_RUNDIR_H

#include <stddef.h>

#include "config/config.h"

/* Create out_dir (and parents) and a new, empty run directory in it: `name`,
 * or name-2, name-3, ... if taken, so no earlier run is overwritten. The
 * path is written to `path` (size n). TERN_OK or TERN_EIO with a message. */
int tern_rundir_create(const char *out_dir, const char *name, char *path, size_t n);

/* Write the resolved config to DIR/config.cfg (temporary file + rename). */
int tern_rundir_write_config(const char *dir, tern_config *c);

#endif
