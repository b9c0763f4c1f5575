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

/* A place the user must fix (no permission, a read-only file system, a file
 * where a directory should be) is a config error, with the way out; a full
 * or failing disk is an I/O error. */
static int place_error(int e)
{
    return e == EACCES || e == EPERM || e == EROFS || e == ENOTDIR || e == EEXIST ||
                   e == ENAMETOOLONG || e == ELOOP
               ? TERN_ECONFIG
               : TERN_EIO;
}

static const char *place_fix(int e)
{
    switch (e) {
    case EACCES:
    case EPERM:
        return "give this user write permission there, or choose another run.out_dir "
               "(-o run.out_dir=PATH)";
    case EROFS:
        return "it is on a read-only file system: choose a run.out_dir on a writable one "
               "(-o run.out_dir=PATH)";
    default:
        return "choose another run.out_dir (-o run.out_dir=PATH)";
    }
}

int tern_rundir_create(const char *out_dir, const char *name, char *path, size_t n)
{
    if (!*name || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return tern_errorf(TERN_ECONFIG, "run.name '%s' cannot name a directory: use letters, "
                           "digits, '-', '_' or '.' without '/'", name);
    /* mkdir -p out_dir; what it made is removed again if the run directory
     * cannot be made in it: a refused run leaves nothing behind */
    char err[4200];
    tern_made_dirs made = {0};
    struct stat st;
    if (tern_make_dirs(out_dir, &made, err, sizeof err) != 0) {
        int e = errno;
        tern_made_dirs_remove(&made);
        tern_made_dirs_free(&made);
        return tern_errorf(place_error(e), "%s (run.out_dir = \"%s\"): %s", err, out_dir,
                           place_fix(e));
    }
    if (stat(out_dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        tern_made_dirs_free(&made);
        return tern_errorf(TERN_ECONFIG, "%s: run.out_dir exists and is not a directory: %s",
                           out_dir, place_fix(ENOTDIR));
    }
    int rc = TERN_OK;
    for (int i = 1;; i++) {
        int w = i == 1 ? snprintf(path, n, "%s/%s", out_dir, name)
                       : snprintf(path, n, "%s/%s-%d", out_dir, name, i);
        if (w < 0 || (size_t)w >= n) {
            rc = tern_errorf(TERN_ECONFIG, "%s/%s: path too long: %s", out_dir, name,
                             place_fix(ENAMETOOLONG));
            break;
        }
        if (i == 10000) {
            rc = tern_errorf(TERN_ECONFIG, "%s/%s: 9999 runs of this name exist; choose another "
                             "run.name", out_dir, name);
            break;
        }
        /* mkdir is atomic: two runs started at once get different directories */
        if (mkdir(path, 0777) == 0)
            break;
        if (errno != EEXIST) {
            int e = errno;
            rc = tern_errorf(place_error(e), "%s: cannot create the run directory: %s; %s",
                             path, strerror(e), place_fix(e));
            break;
        }
    }
    if (rc != TERN_OK)
        tern_made_dirs_remove(&made);
    tern_made_dirs_free(&made);
    return rc;
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
