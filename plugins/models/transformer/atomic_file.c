/* atomic_file.c: temp file + fsync + rename (see atomic_file.h). */
#include "atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int atomic_file_open(atomic_file *a, const char *path, char *err, size_t errn)
{
    a->fd = -1;
    if (snprintf(a->path, sizeof a->path, "%s", path) >= (int)sizeof a->path) {
        snprintf(err, errn, "%.200s...: path longer than %zu bytes", path, sizeof a->path - 1);
        return -1;
    }
    snprintf(a->tmp, sizeof a->tmp, "%s.tmp", path);
    /* O_TRUNC: a PATH.tmp left by a crashed writer is simply replaced */
    a->fd = open(a->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (a->fd < 0) {
        snprintf(err, errn, "%s: cannot create: %s (does the directory exist and is it writable?)",
                 a->tmp, strerror(errno));
        return -1;
    }
    return 0;
}

int atomic_file_write(atomic_file *a, const void *buf, size_t n, char *err, size_t errn)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(a->fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            snprintf(err, errn, "%s: cannot write: %s", a->tmp,
                     w < 0 ? strerror(errno) : "no bytes written");
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* fsync the directory holding a->path, so that the rename is durable. */
static int sync_dir(const atomic_file *a, char *err, size_t errn)
{
    char dir[sizeof a->path];
    snprintf(dir, sizeof dir, "%s", a->path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errn, "%s: written, but cannot open its directory %s to sync it: %s",
                 a->path, dir, strerror(errno));
        return -1;
    }
    /* some file systems cannot fsync a directory (EINVAL): nothing more to do there */
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    if (rc != 0 && e != EINVAL) {
        snprintf(err, errn, "%s: written, but syncing directory %s failed: %s", a->path, dir,
                 strerror(e));
        return -1;
    }
    return 0;
}

int atomic_file_commit(atomic_file *a, char *err, size_t errn)
{
    if (fsync(a->fd) != 0) {
        snprintf(err, errn, "%s: cannot sync to disk: %s", a->tmp, strerror(errno));
        atomic_file_abort(a);
        return -1;
    }
    int rc = close(a->fd);
    a->fd = -1;
    if (rc != 0) {
        snprintf(err, errn, "%s: cannot close: %s", a->tmp, strerror(errno));
        unlink(a->tmp);
        return -1;
    }
    if (rename(a->tmp, a->path) != 0) {
        snprintf(err, errn, "%s: cannot rename to %s: %s", a->tmp, a->path, strerror(errno));
        unlink(a->tmp);
        return -1;
    }
    return sync_dir(a, err, errn);
}

void atomic_file_abort(atomic_file *a)
{
    if (a->fd >= 0)
        close(a->fd);
    a->fd = -1;
    unlink(a->tmp);
}

int atomic_file_put(const char *path, const void *buf, size_t n, char *err, size_t errn)
{
    atomic_file a;
    if (atomic_file_open(&a, path, err, errn) != 0)
        return -1;
    if (atomic_file_write(&a, buf, n, err, errn) != 0) {
        atomic_file_abort(&a);
        return -1;
    }
    return atomic_file_commit(&a, err, errn);
}
