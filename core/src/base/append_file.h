/* append_file.h: open a run directory's file for appending (log.txt,
 * metrics.jsonl, rollouts.jsonl, ...) without following a symbolic link
 * planted in its place, which would make tern append to a file outside the
 * run directory. */
#ifndef TERN_BASE_APPEND_FILE_H
#define TERN_BASE_APPEND_FILE_H

#include <stdio.h>

/* `path` opened for appending (created 0644 if missing, close-on-exec), or
 * NULL with the message set (tern_errorf, TERN_EIO): a symbolic link at
 * `path` is refused as "PATH: is a symbolic link ...", naming `what` (the
 * file's role, "the log file"). */
FILE *tern_append_open(const char *path, const char *what);

#endif
