/* rundir.c: creating the run directory (see rundir.h). */
#include "rundir/rundir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/errmsg.h"
#include "tern/support/atomic_file.h"
#include "tern/support/paths.h"

/* mkdir -p; the last one must be a directory. */
static int make_dirs(const char *path)
{
    char err[4200];
    if (tern_make_dirs(path, NULL, err, sizeof err) != 0)
        return tern_errorf(TERN_EIO, "%s", err);
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return tern_errorf(TERN_EIO, "%s: exists and is not a directory", path);
    return TERN_OK;
}

int tern_rundir_create(const char *out_dir, const char *name, char *path, size_t n)
{
    if (!*name || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return tern_errorf(TERN_ECONFIG, "run.name '%s' cannot name a directory: use letters, "
                           "digits, '-', '_' or '.' without '/'", name);
    int rc = make_dirs(out_dir);
    if (rc != TERN_OK)
        return rc;
    for (int i = 1; i < 10000; i++) {
        int w = i == 1 ? snprintf(path, n, "%s/%s", out_dir, name)
                       : snprintf(path, n, "%s/%s-%d", out_dir, name, i);
        if (w < 0 || (size_t)w >= n)
            return tern_errorf(TERN_EIO, "%s/%s: path too long", out_dir, name);
        /* mkdir is atomic: two runs started at once get different directories */
        if (mkdir(path, 0777) == 0)
            return TERN_OK;
        if (errno != EEXIST)
            return tern_errorf(TERN_EIO, "%s: cannot create run directory: %s", path,
                               strerror(errno));
    }
    return tern_errorf(TERN_EIO, "%s/%s: 9999 runs of this name exist; choose another run.name",
                       out_dir, name);
}

int tern_rundir_write_config(const char *dir, tern_config *c)
{
    char final[4096], err[8400];
    snprintf(final, sizeof final, "%s/config.cfg", dir);
    tern_atomic_file a; /* config.cfg.tmp, renamed over config.cfg */
    FILE *f = NULL;
    if (tern_atomic_file_open(&a, final, err, sizeof err) != 0 ||
        !(f = tern_atomic_file_stream(&a, err, sizeof err))) {
        tern_atomic_file_abort(&a);
        return tern_errorf(TERN_EIO, "cannot write the resolved config: %s", err);
    }
    config_write(&c->cfg, f);
    if (tern_atomic_file_commit(&a, err, sizeof err) != 0)
        return tern_errorf(TERN_EIO, "cannot write the resolved config: %s", err);
    return TERN_OK;
}
