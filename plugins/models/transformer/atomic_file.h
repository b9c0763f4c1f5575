/*
 * atomic_file.h: write a file so that a reader sees either the old file or
 * the whole new one, never a part: the bytes go to PATH.tmp, which is
 * fsync'd and renamed over PATH, and then the directory is fsync'd so the
 * rename itself survives a crash. Used for checkpoints (safetensors),
 * config.json and tokenizer.json.
 *
 *   atomic_file a;
 *   if (atomic_file_open(&a, path, err, errn) != 0) return -1;
 *   if (atomic_file_write(&a, buf, n, err, errn) != 0) { atomic_file_abort(&a); return -1; }
 *   return atomic_file_commit(&a, err, errn);
 *
 * All functions return 0, or -1 with a message in err (naming the path).
 */
#ifndef TERN_ATOMIC_FILE_H
#define TERN_ATOMIC_FILE_H

#include <stddef.h>

typedef struct atomic_file {
    int fd;              /* of the temp file; -1 once closed */
    char path[4096];     /* the destination */
    char tmp[4096 + 8];  /* path + ".tmp" */
} atomic_file;

/* Create (or truncate) PATH.tmp for writing. */
int atomic_file_open(atomic_file *a, const char *path, char *err, size_t errn);
/* Append n bytes (retrying short writes and EINTR). */
int atomic_file_write(atomic_file *a, const void *buf, size_t n, char *err, size_t errn);
/* fsync, close, rename over the destination, fsync the directory. On a
 * failure before the rename the temp file is removed. */
int atomic_file_commit(atomic_file *a, char *err, size_t errn);
/* Give up: close and remove the temp file. */
void atomic_file_abort(atomic_file *a);
/* Write a whole buffer to path atomically (open + write + commit). */
int atomic_file_put(const char *path, const void *buf, size_t n, char *err, size_t errn);

#endif
