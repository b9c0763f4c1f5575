/* append_file.c: see append_file.h. */
#include "base/append_file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/errmsg.h"

FILE *tern_append_open(const char *path, const char *what)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) {
        int e = errno;
        struct stat st;
        if (e == ELOOP && lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
            tern_errorf(TERN_EIO, "%s: cannot open %s: it is a symbolic link, and a run "
                        "directory's files are written only as files of their own (remove the "
                        "link)", path, what);
        else
            tern_errorf(TERN_EIO, "%s: cannot open %s: %s", path, what, strerror(e));
        return NULL;
    }
    FILE *f = fdopen(fd, "a");
    if (!f) {
        int e = errno;
        close(fd);
        tern_errorf(TERN_EIO, "%s: cannot open %s: %s", path, what, strerror(e));
    }
    return f;
}
