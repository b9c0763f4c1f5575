/* split_files.h: the two files of a synthetic task set (`tern data arith`,
 * `tern data countdown`): a training split and a held-out evaluation split,
 * written so that both appear or neither. */
#ifndef TERN_DATA_SPLIT_FILES_H
#define TERN_DATA_SPLIT_FILES_H

#include <stddef.h>
#include <stdio.h>

/* Writes task `i` (0-based) of `split` ("train" or "eval") as one JSON line to
 * f; `width` is the digits its id's number is padded to (5, or the digits of
 * the split's count when that is more). Returns 0, or -1 when the write
 * failed (errno says why). */
typedef int (*tern_split_line_fn)(FILE *f, const char *split, size_t i, int width, void *ctx);

/* Write n_eval lines to eval_path, then n_train lines to train_path, each to a
 * temporary file beside it, and rename both into place only once both are
 * written: a reader never sees half a file, and on failure neither path is
 * created. An existing file at either path is replaced (the caller checks
 * first if it must not be). TERN_OK, TERN_EINVAL when the paths are the same,
 * or TERN_EIO "PATH: cannot write: <why>" (libtern's error message). */
int tern_split_files_write(const char *train_path, size_t n_train, const char *eval_path,
                           size_t n_eval, tern_split_line_fn line, void *ctx);

#endif
