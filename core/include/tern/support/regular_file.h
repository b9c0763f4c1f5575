/*
 * tern/support/regular_file.h: open a file for reading only when it is a
 * regular file of at most a given size. A FIFO where a file belongs would
 * block open() or read() for ever, /dev/zero would be read until memory runs
 * out, a directory gives odd errors from the libraries that read it: these
 * functions never block on one and refuse it with one clear reason.
 * Header-only (every function static inline), for the core, the command
 * layer and plugins, which link nothing of libtern.
 *
 *   char why[TERN_REGULAR_WHY_MAX];
 *   char *text; size_t n;
 *   if (tern_regular_read(path, 16u << 20, &text, &n, why, sizeof why) != 0)
 *       return fail("%s: cannot read: %s; give a config file", path, why);
 *   use(text, n); free(text);
 *
 * or tern_regular_open (a file descriptor, for mmap or read) or
 * tern_regular_fopen (a FILE *, for getline or a library that reads one).
 *
 * Errors: 0 (or a descriptor, a stream), or -1 (NULL) with errno set and the
 * reason alone, without the path, in the caller's why[whyn] so that the
 * caller can word the message around it (nothing is written when why is
 * NULL or whyn is 0):
 *   "No such file or directory" (any error of open, fstat or read: strerror)
 *   "Is a directory" (errno EISDIR)
 *   "not a regular file but a FIFO (named pipe)" (errno EINVAL; also a
 *    character device, a block device, a socket)
 *   "too big: 20000000 bytes, over the limit of 16777216 (16 MiB)" (EFBIG)
 * No state; thread-safe but for strerror.
 */
#ifndef TERN_SUPPORT_REGULAR_FILE_H
#define TERN_SUPPORT_REGULAR_FILE_H

/* open, fstat, fcntl, O_CLOEXEC: POSIX.1-2008, which strict ISO C modes
 * (-std=c17) hide unless asked for. */
#if defined(__STRICT_ANSI__) && !defined(_POSIX_C_SOURCE) && !defined(_XOPEN_SOURCE) && \
    !defined(_GNU_SOURCE) && !defined(_DEFAULT_SOURCE) && !defined(_BSD_SOURCE)
#error "tern/support/regular_file.h needs POSIX.1-2008: build with -D_POSIX_C_SOURCE=200809L, -D_GNU_SOURCE or -std=gnu17"
#endif

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Room for any reason these functions write. */
#define TERN_REGULAR_WHY_MAX 128

/* "16 MiB", "1 GiB", "1500 bytes": a limit as people write it. */
static inline const char *tern_regular_size_text(unsigned long long bytes, char *buf, size_t n)
{
    if (bytes >= (1ull << 30) && bytes % (1ull << 30) == 0)
        snprintf(buf, n, "%llu GiB", bytes >> 30);
    else if (bytes >= (1ull << 20) && bytes % (1ull << 20) == 0)
        snprintf(buf, n, "%llu MiB", bytes >> 20);
    else if (bytes >= (1ull << 10) && bytes % (1ull << 10) == 0)
        snprintf(buf, n, "%llu KiB", bytes >> 10);
    else
        snprintf(buf, n, "%llu bytes", bytes);
    return buf;
}

/* Write the reason, set errno to `e` and return -1. */
static inline int tern_regular_refuse_(int e, char *why, size_t whyn, const char *reason)
{
    if (why && whyn)
        snprintf(why, whyn, "%s", reason);
    errno = e;
    return -1;
}

/* size: the file's size, or 0 when only "past the limit" is known */
static inline int tern_regular_too_big_(unsigned long long size, unsigned long long max_bytes,
                                        char *why, size_t whyn)
{
    char limit[32];
    tern_regular_size_text(max_bytes, limit, sizeof limit);
    if (why && whyn && size)
        snprintf(why, whyn, "too big: %llu bytes, over the limit of %llu (%s)", size, max_bytes,
                 limit);
    else if (why && whyn)
        snprintf(why, whyn, "too big: over the limit of %llu bytes (%s)", max_bytes, limit);
    errno = EFBIG;
    return -1;
}

/* 0 if `st` is a regular file of at most max_bytes (0: any size), else -1
 * with errno and the reason. */
static inline int tern_regular_check(const struct stat *st, unsigned long long max_bytes,
                                     char *why, size_t whyn)
{
    if (S_ISDIR(st->st_mode))
        return tern_regular_refuse_(EISDIR, why, whyn, strerror(EISDIR));
    if (!S_ISREG(st->st_mode)) {
        const char *kind = S_ISFIFO(st->st_mode)  ? "a FIFO (named pipe)"
                           : S_ISCHR(st->st_mode) ? "a character device"
                           : S_ISBLK(st->st_mode) ? "a block device"
                           : S_ISSOCK(st->st_mode) ? "a socket"
                                                   : "something else";
        char reason[TERN_REGULAR_WHY_MAX];
        snprintf(reason, sizeof reason, "not a regular file but %s", kind);
        return tern_regular_refuse_(EINVAL, why, whyn, reason);
    }
    if (max_bytes && st->st_size > 0 && (unsigned long long)st->st_size > max_bytes)
        return tern_regular_too_big_((unsigned long long)st->st_size, max_bytes, why, whyn);
    return 0;
}

/* Open `path` read-only (close-on-exec) when it is a regular file of at most
 * max_bytes (0: any size). The descriptor, blocking as usual; *st (when not
 * NULL) gets its fstat. -1 with errno and the reason otherwise. The file is
 * stat'ed before it is opened, so that a device is never opened at all, and
 * opened with O_NONBLOCK, so that a FIFO put there in between cannot block
 * the open; fstat then checks what was really opened. */
static inline int tern_regular_open(const char *path, unsigned long long max_bytes,
                                    struct stat *st, char *why, size_t whyn)
{
    struct stat s;
    if (stat(path, &s) == 0 && tern_regular_check(&s, max_bytes, why, whyn) != 0)
        return -1;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return tern_regular_refuse_(errno, why, whyn, strerror(errno));
    int flags;
    if (fstat(fd, &s) != 0 || (flags = fcntl(fd, F_GETFL)) < 0 ||
        fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        int e = errno;
        close(fd);
        return tern_regular_refuse_(e, why, whyn, strerror(e));
    }
    if (tern_regular_check(&s, max_bytes, why, whyn) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    if (st)
        *st = s;
    return fd;
}

/* tern_regular_open as a stream ("rb"); fclose it. */
static inline FILE *tern_regular_fopen(const char *path, unsigned long long max_bytes, char *why,
                                       size_t whyn)
{
    int fd = tern_regular_open(path, max_bytes, NULL, why, whyn);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        int e = errno;
        close(fd);
        tern_regular_refuse_(e, why, whyn, strerror(e));
        return NULL;
    }
    return f;
}

/* The whole of `path`, a regular file of at most max_bytes (0: any size),
 * in *buf (malloc'd, NUL-terminated past its *len bytes; the caller frees
 * it). It is read to its end, so that a file that grows while read (or one
 * whose size stat does not tell, as in /proc) is still held to the limit.
 * 0, or -1 with errno, the reason, and *buf NULL. */
static inline int tern_regular_read(const char *path, unsigned long long max_bytes, char **buf,
                                    size_t *len, char *why, size_t whyn)
{
    *buf = NULL;
    *len = 0;
    struct stat st;
    int fd = tern_regular_open(path, max_bytes, &st, why, whyn);
    if (fd < 0)
        return -1;
    size_t cap = st.st_size > 0 && (unsigned long long)st.st_size < SIZE_MAX - 1
                     ? (size_t)st.st_size + 1
                     : 4096;
    size_t n = 0;
    char *p = (char *)malloc(cap);
    int e = 0;
    while (p) {
        char probe[4096];
        /* full up to the size stat gave: look for more in `probe` before
         * growing, so that a file of the size told is never reallocated */
        int full = n + 1 == cap;
        ssize_t r = full ? read(fd, probe, sizeof probe) : read(fd, p + n, cap - n - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            e = errno;
            break;
        }
        if (r == 0)
            break;
        if (max_bytes && n + (size_t)r > max_bytes) {
            free(p);
            close(fd);
            return tern_regular_too_big_(0, max_bytes, why, whyn);
        }
        if (full) { /* it grew since stat, or stat told no size (/proc) */
            size_t want = cap + (size_t)r > cap * 2 ? cap + (size_t)r : cap * 2;
            char *q = cap > SIZE_MAX / 2 ? NULL : (char *)realloc(p, want);
            if (!q) {
                e = ENOMEM;
                break;
            }
            p = q;
            cap = want;
            memcpy(p + n, probe, (size_t)r);
        }
        n += (size_t)r;
    }
    if (!p)
        e = ENOMEM;
    close(fd);
    if (e) {
        free(p);
        return tern_regular_refuse_(e, why, whyn, strerror(e));
    }
    p[n] = '\0';
    *buf = p;
    *len = n;
    return 0;
}

#ifdef __cplusplus
}
#endif

#endif
