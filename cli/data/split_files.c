/* split_files.c: the two files of a task set, both or neither (see
 * split_files.h). */
#include "data/split_files.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "base/errmsg.h"
#include "tern/support/atomic_file.h"

static int digits(size_t n)
{
    int d = 1;
    while (n >= 10) {
        n /= 10;
        d++;
    }
    return d;
}

/* One split into a new temporary file beside `path` (*a, closed but not
 * renamed; removed on failure). */
static int write_split(tern_atomic_file *a, const char *path, const char *split, size_t n,
                       tern_split_line_fn line, void *ctx)
{
    FILE *f = NULL;
    if (tern_atomic_file_open_unique(a, path, 0, NULL, 0) != 0 ||
        !(f = tern_atomic_file_stream(a, NULL, 0))) {
        int e = errno;
        tern_atomic_file_abort(a);
        return tern_errorf(TERN_EIO, "%s: cannot write: %s", path, strerror(e));
    }
    int width = digits(n) > 5 ? digits(n) : 5, ok = 1;
    for (size_t i = 0; i < n && ok; i++)
        ok = line(f, split, i, width, ctx) == 0;
    int e = errno;
    if (!ok) {
        tern_atomic_file_abort(a);
        return tern_errorf(TERN_EIO, "%s: cannot write: %s", path, strerror(e ? e : EIO));
    }
    if (tern_atomic_file_finish(a, NULL, 0) != 0)
        return tern_errorf(TERN_EIO, "%s: cannot write: %s", path, strerror(errno));
    return TERN_OK;
}

int tern_split_files_write(const char *train_path, size_t n_train, const char *eval_path,
                           size_t n_eval, tern_split_line_fn line, void *ctx)
{
    if (strcmp(train_path, eval_path) == 0)
        return tern_errorf(TERN_EINVAL, "%s: the train and eval files must differ", train_path);
    /* both written before either is renamed into place; eval first, as the
     * generators draw it first */
    tern_atomic_file eval, train;
    int rc = write_split(&eval, eval_path, "eval", n_eval, line, ctx);
    if (rc == TERN_OK) {
        rc = write_split(&train, train_path, "train", n_train, line, ctx);
        if (rc != TERN_OK)
            tern_atomic_file_abort(&eval);
    }
    if (rc == TERN_OK && tern_atomic_file_commit(&train, NULL, 0) != 0) {
        rc = tern_errorf(TERN_EIO, "%s: cannot write: %s", train_path, strerror(errno));
        tern_atomic_file_abort(&eval);
    } else if (rc == TERN_OK && tern_atomic_file_commit(&eval, NULL, 0) != 0) {
        rc = tern_errorf(TERN_EIO, "%s: cannot write: %s", eval_path, strerror(errno));
        unlink(train_path); /* just made: both files or neither */
    }
    return rc;
}
