/* lock.c: the run directory's lock (see rundir.h). flock(2), not a file
 * that exists or not: the kernel drops the lock when its holder ends, however
 * it ends (a crash, SIGKILL), so a stale lock never blocks a resume. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "base/errmsg.h"
#include "base/log.h"
#include "rundir/rundir.h"

int tern_rundir_lock(const char *dir, int *fd_out)
{
    *fd_out = -1;
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/lock", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) {
        int e = errno;
        if (e == EACCES || e == EPERM || e == EROFS)
            return tern_errorf(TERN_ECONFIG, "%s: cannot open the run directory's lock: %s; the "
                               "run directory must be writable by this process: %s", path,
                               strerror(e), e == EROFS ? "mount its file system writable"
                                                       : "give this user write permission");
        return tern_errorf(TERN_EIO, "%s: cannot open the run directory's lock: %s", path,
                           strerror(e));
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        if (e == EWOULDBLOCK) {
            /* the holder wrote its process id; it may not have yet */
            char pid[24] = "";
            ssize_t n = pread(fd, pid, sizeof pid - 1, 0);
            pid[n > 0 ? n : 0] = '\0';
            pid[strspn(pid, "0123456789")] = '\0';
            close(fd);
            if (!*pid)
                return tern_errorf(TERN_ECONFIG, "%s: the run directory is in use by another "
                                   "run (it holds %s): two runs would mix their files; wait "
                                   "for it to end or stop it, then run again", dir, path);
            return tern_errorf(TERN_ECONFIG, "%s: the run directory is in use by process %s "
                               "(it holds %s): two runs would mix their files; wait for it to "
                               "end or stop it (kill -TERM %s), then run again", dir, pid,
                               path, pid);
        }
        close(fd);
        if (e == ENOLCK || e == EOPNOTSUPP) {
            /* a file system without locks: run unguarded rather than not at all */
            tern_logf(TERN_LOG_WARN, "run", "%s: cannot lock the run directory (%s): nothing "
                      "stops a second run from using it at the same time", path, strerror(e));
            return TERN_OK;
        }
        return tern_errorf(TERN_EIO, "%s: cannot lock the run directory: %s", path, strerror(e));
    }
    char text[32];
    int len = snprintf(text, sizeof text, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, text, (size_t)len, 0) != len) {
        int e = errno;
        close(fd);
        return tern_errorf(TERN_EIO, "%s: cannot write the run's process id: %s", path,
                           strerror(e));
    }
    *fd_out = fd;
    return TERN_OK;
}

void tern_rundir_unlock(int fd)
{
    if (fd < 0)
        return;
    /* the file stays (removing it would let two runs lock two different
     * files); emptied, it names no process that has ended (a failure is
     * harmless: the next holder rewrites it) */
    int ignored = ftruncate(fd, 0);
    (void)ignored;
    close(fd);
}
