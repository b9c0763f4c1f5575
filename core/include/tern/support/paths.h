/*
 * tern/support/paths.h: joining paths and `mkdir -p`. Header-only (every
 * function static inline), for the core, the command layer and plugins,
 * which link nothing of libtern.
 *
 * Errors: the functions that can fail for a reason other than memory return
 * 0, or -1 with errno set and a message naming the path in the caller's
 * err[errn] (nothing is written when err is NULL or errn is 0). Not
 * thread-safe on a shared tern_made_dirs; otherwise no state.
 */
#ifndef TERN_SUPPORT_PATHS_H
#define TERN_SUPPORT_PATHS_H

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef __cplusplus
extern "C" {
#endif

/* "DIR/NAME" with one '/' between them (none added when DIR ends with one).
 * malloc'd: the caller frees it. NULL when out of memory. */
static inline char *tern_path_join(const char *dir, const char *name)
{
    size_t n = strlen(dir);
    int slash = n > 0 && dir[n - 1] == '/';
    size_t len = n + 1 + strlen(name) + 1;
    char *p = (char *)malloc(len);
    if (p)
        snprintf(p, len, "%s%s%s", dir, slash ? "" : "/", name);
    return p;
}

/* The directories one tern_make_dirs call (or several) created, outermost
 * first, so that a command failing afterwards can remove exactly those and
 * nothing that was there before. Start with {0}; the paths are malloc'd and
 * owned by the struct (tern_made_dirs_free). At most 64 are remembered. */
typedef struct tern_made_dirs {
    char *paths[64];
    size_t n;
} tern_made_dirs;

/* mkdir -p `dir` (mode 0777 before the umask): every missing directory on
 * the way is created; one that exists is fine, as long as the last one is a
 * directory or a link to one (a file there is not checked for: stat it when
 * that matters). When `made` is not NULL, what was created is added to it
 * (a 65th directory is removed again and fails with ENOMEM).
 * 0, or -1 with errno set and "PATH: cannot create directory: REASON" in
 * err, PATH being the directory that could not be made. */
/* A malloc'd copy of s (strdup, which strict ISO C lacks); NULL when out
 * of memory. */
static inline char *tern_path_dup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = (char *)malloc(n);
    return p ? (char *)memcpy(p, s, n) : NULL;
}

static inline int tern_make_dirs(const char *dir, tern_made_dirs *made, char *err, size_t errn)
{
    char *buf = tern_path_dup(dir);
    if (!buf) {
        if (err && errn)
            snprintf(err, errn, "%s: cannot create directory: %s", dir, strerror(ENOMEM));
        errno = ENOMEM;
        return -1;
    }
    size_t len = strlen(buf);
    while (len > 1 && buf[len - 1] == '/')
        buf[--len] = '\0';
    int rc = 0;
    for (char *p = buf + (*buf != '\0');; p++) {
        int last = *p == '\0';
        if (*p != '/' && !last)
            continue;
        char saved = *p;
        *p = '\0';
        if (mkdir(buf, 0777) == 0) {
            if (made) {
                size_t room = sizeof made->paths / sizeof made->paths[0];
                char *copy = made->n < room ? tern_path_dup(buf) : NULL;
                if (!copy) {
                    rmdir(buf);
                    errno = ENOMEM;
                    rc = -1;
                    break;
                }
                made->paths[made->n++] = copy;
            }
        } else if (errno != EEXIST) {
            rc = -1;
            break;
        }
        *p = saved;
        if (last)
            break;
    }
    int e = errno;
    if (rc != 0 && err && errn)
        snprintf(err, errn, "%s: cannot create directory: %s", buf, strerror(e));
    free(buf);
    errno = e;
    return rc;
}

/* rmdir the directories in `made`, innermost first (each only if empty). */
static inline void tern_made_dirs_remove(const tern_made_dirs *made)
{
    for (size_t i = made->n; i-- > 0;)
        rmdir(made->paths[i]);
}

/* Forget them: free the paths (the directories stay). */
static inline void tern_made_dirs_free(tern_made_dirs *made)
{
    for (size_t i = 0; i < made->n; i++)
        free(made->paths[i]);
    made->n = 0;
}

#ifdef __cplusplus
}
#endif
#endif /* TERN_SUPPORT_PATHS_H */
