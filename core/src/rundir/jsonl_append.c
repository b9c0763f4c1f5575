/* jsonl_append.c: whole lines appended to a JSON Lines file (see
 * jsonl_append.h). */
#include "rundir/jsonl_append.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/errmsg.h"
#include "tern/support/atomic_file.h"

int tern_jsonl_append(FILE *f, const json_t *o, const char *name)
{
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    size_t n = s ? strlen(s) : 0;
    char *line = s ? realloc(s, n + 2) : NULL;
    if (!line) {
        free(s);
        return tern_errorf(TERN_ENOMEM, "cannot write %s: out of memory", name);
    }
    line[n++] = '\n';
    line[n] = '\0';
    int fd = fileno(f), rc = TERN_OK;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        rc = tern_errorf(TERN_EIO, "cannot write %s: %s", name, strerror(errno));
    } else if (tern_write_all(fd, line, n) != 0) {
        int e = errno;
        /* a part of a line would be glued to the next line written (by a
         * resume): the file keeps its whole lines only */
        if (ftruncate(fd, st.st_size) != 0)
            rc = tern_errorf(TERN_EIO, "cannot write %s: %s; its last line is cut short (cannot "
                             "truncate it: %s), a resume drops it", name, strerror(e),
                             strerror(errno));
        else
            rc = tern_errorf(TERN_EIO, "cannot write %s: %s (is the disk full?)", name,
                             strerror(e));
    }
    free(line);
    return rc;
}
