/* made_dirs.c: mkdir -p with undo (see made_dirs.h). */
#include "made_dirs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int tern_make_dirs(const char *dir, tern_made_dirs *made)
{
    char *buf = strdup(dir);
    if (!buf)
        return -1;
    size_t len = strlen(buf);
    while (len > 1 && buf[len - 1] == '/')
        buf[--len] = '\0';
    int rc = 0;
    for (char *p = buf + 1;; p++) {
        int last = *p == '\0';
        if (*p != '/' && !last)
            continue;
        char saved = *p;
        *p = '\0';
        if (mkdir(buf, 0777) == 0) {
            char *copy = made->n < sizeof made->paths / sizeof made->paths[0] ? strdup(buf)
                                                                               : NULL;
            if (!copy) {
                rmdir(buf);
                errno = ENOMEM;
                rc = -1;
                break;
            }
            made->paths[made->n++] = copy;
        } else if (errno != EEXIST) {
            rc = -1;
            break;
        }
        *p = saved;
        if (last)
            break;
    }
    int e = errno;
    free(buf);
    errno = e;
    return rc;
}

void tern_made_dirs_remove(const tern_made_dirs *made)
{
    for (size_t i = made->n; i-- > 0;)
        rmdir(made->paths[i]);
}

void tern_made_dirs_free(tern_made_dirs *made)
{
    for (size_t i = 0; i < made->n; i++)
        free(made->paths[i]);
    made->n = 0;
}
