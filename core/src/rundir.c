/* rundir.c: creating the run directory (see rundir.h). */
#include "rundir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "errmsg.h"

/* mkdir -p */
static int make_dirs(const char *path)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return tern_errorf(TERN_EIO, "%s: path too long", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return tern_errorf(TERN_EIO, "%s: cannot create directory: %s", buf, strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, 0777) != 0 && errno != EEXIST)
        return tern_errorf(TERN_EIO, "%s: cannot create directory: %s", buf, strerror(errno));
    struct stat st;
    if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode))
        return tern_errorf(TERN_EIO, "%s: exists and is not a directory", buf);
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
    char tmp[4096], final[4096];
    snprintf(tmp, sizeof tmp, "%s/config.cfg.tmp", dir);
    snprintf(final, sizeof final, "%s/config.cfg", dir);
    if (config_write_file(&c->cfg, tmp) != CONFIG_TRUE) {
        remove(tmp);
        return tern_errorf(TERN_EIO, "%s: cannot write the resolved config", tmp);
    }
    if (rename(tmp, final) != 0) {
        remove(tmp);
        return tern_errorf(TERN_EIO, "%s: cannot rename to %s: %s", tmp, final, strerror(errno));
    }
    return TERN_OK;
}
