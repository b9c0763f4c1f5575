/*
 * tern/support/atomic_file.h: write a file so that a reader sees either the
 * old file or the whole new one, never a part. Header-only (every function
 * static inline), for the core, the command layer and plugins, which link
 * nothing of libtern.
 *
 * The bytes go to a temporary file beside PATH, which is fsync'd, closed and
 * renamed over PATH; then PATH's directory is fsync'd, so that the rename
 * itself survives a crash. A rename within one directory is atomic.
 *
 *   tern_atomic_file a;
 *   if (tern_atomic_file_open(&a, path, err, errn) != 0) return -1;
 *   if (tern_atomic_file_write(&a, buf, n, err, errn) != 0) { tern_atomic_file_abort(&a); return -1; }
 *   return tern_atomic_file_commit(&a, err, errn);
 *
 * or tern_atomic_file_put(path, buf, n, err, errn) for a buffer held whole.
 * tern_atomic_file_stream() gives a FILE * for fprintf and libraries that
 * write to a stream.
 *
 * Errors: every function that can fail returns 0, or -1 with errno set to
 * the cause and a message in the caller's err[errn] that names the file
 * (nothing is written when err is NULL or errn is 0). A failing write,
 * finish or commit has already removed the temporary file; after a failing
 * open there is none. tern_atomic_file_abort() after any of them, or after
 * a commit, does nothing, so a cleanup path may always call it.
 *
 * Paths are at most TERN_ATOMIC_FILE_PATH_MAX - 1 bytes. Not thread-safe on
 * one tern_atomic_file; two writers of one PATH must not both use
 * tern_atomic_file_open (they would share PATH.tmp): give them
 * tern_atomic_file_open_unique.
 */
#ifndef TERN_SUPPORT_ATOMIC_FILE_H
#define TERN_SUPPORT_ATOMIC_FILE_H

/* open, fdopen, fsync, O_CLOEXEC, O_DIRECTORY: POSIX.1-2008, which strict
 * ISO C modes (-std=c17) hide unless asked for. */
#if defined(__STRICT_ANSI__) && !defined(_POSIX_C_SOURCE) && !defined(_XOPEN_SOURCE) && \
    !defined(_GNU_SOURCE) && !defined(_DEFAULT_SOURCE) && !defined(_BSD_SOURCE)
#error "tern/support/atomic_file.h needs POSIX.1-2008: build with -D_POSIX_C_SOURCE=200809L, -D_GNU_SOURCE or -std=gnu17"
#endif

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TERN_ATOMIC_FILE_PATH_MAX 4096

/* Flags of tern_atomic_file_open_as and tern_atomic_file_open_unique. */
enum {
    /* create the temporary file only if it does not exist (O_EXCL): fail
     * with EEXIST instead of truncating another writer's file */
    TERN_ATOMIC_FILE_EXCL = 1,
    /* no fsync of the file nor of the directory: readers still see the
     * old file or the whole new one, but after a crash (of the machine, not
     * the process) the new file may be empty. For many small files whose
     * writer makes them again rather than wait for the disk. */
    TERN_ATOMIC_FILE_NO_SYNC = 2
};

typedef struct tern_atomic_file {
    int fd;       /* of the temporary file; -1 once closed */
    FILE *stream; /* from tern_atomic_file_stream, or NULL */
    int flags;    /* TERN_ATOMIC_FILE_* */
    int state;    /* 0 open, 1 finished (closed, not yet renamed), 2 done */
    char path[TERN_ATOMIC_FILE_PATH_MAX];     /* the destination */
    char tmp[TERN_ATOMIC_FILE_PATH_MAX + 64]; /* the temporary file */
} tern_atomic_file;

/* Write all n bytes of buf to the file descriptor fd, retrying short
 * writes and EINTR. 0, or -1 with errno set (EIO when write wrote nothing). */
static inline int tern_write_all(int fd, const void *buf, size_t n)
{
    const char *p = (const char *)buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Make *a a file not opened (yet), on which abort does nothing: for a
 * struct that a cleanup path may meet before its open. The open functions
 * need no init. */
static inline void tern_atomic_file_init(tern_atomic_file *a)
{
    a->fd = -1;
    a->stream = NULL;
    a->flags = 0;
    a->state = 2;
    a->path[0] = a->tmp[0] = '\0';
}

/* Open the temporary file `tmp` (in the same directory as `path`, which the
 * rename needs) for writing to `path`. Mode 0666 less the umask, as
 * fopen; truncated if it exists, unless flags has TERN_ATOMIC_FILE_EXCL. */
static inline int tern_atomic_file_open_as(tern_atomic_file *a, const char *path, const char *tmp,
                                           int flags, char *err, size_t errn)
{
    tern_atomic_file_init(a); /* nothing to clean up until the file exists */
    a->flags = flags;
    if (snprintf(a->path, sizeof a->path, "%s", path) >= (int)sizeof a->path ||
        snprintf(a->tmp, sizeof a->tmp, "%s", tmp) >= (int)sizeof a->tmp) {
        if (err && errn)
            snprintf(err, errn, "%.200s...: path longer than %zu bytes", path,
                     sizeof a->path - 1);
        a->tmp[0] = '\0';
        errno = ENAMETOOLONG;
        return -1;
    }
    int excl = flags & TERN_ATOMIC_FILE_EXCL ? O_EXCL : O_TRUNC;
    a->fd = open(a->tmp, O_WRONLY | O_CREAT | excl | O_CLOEXEC, 0666);
    if (a->fd < 0) {
        int e = errno;
        if (err && errn)
            snprintf(err, errn, "%s: cannot create: %s (does the directory exist and is it "
                     "writable?)", a->tmp, strerror(e));
        errno = e;
        return -1;
    }
    a->state = 0;
    return 0;
}

/* Open PATH.tmp for writing to `path`; a PATH.tmp left by a writer that
 * crashed is simply replaced. */
static inline int tern_atomic_file_open(tern_atomic_file *a, const char *path, char *err,
                                        size_t errn)
{
    char tmp[TERN_ATOMIC_FILE_PATH_MAX + 64];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    return tern_atomic_file_open_as(a, path, tmp, 0, err, errn);
}

/* Open a new temporary file of a name no other writer uses, PATH.tmp-PID-N
 * (N from 0 to 99: the first that does not exist), for writing to `path`.
 * flags: TERN_ATOMIC_FILE_NO_SYNC or 0 (EXCL is implied). */
static inline int tern_atomic_file_open_unique(tern_atomic_file *a, const char *path, int flags,
                                               char *err, size_t errn)
{
    char tmp[TERN_ATOMIC_FILE_PATH_MAX + 64];
    int rc = -1;
    for (unsigned n = 0; n < 100; n++) {
        snprintf(tmp, sizeof tmp, "%s.tmp-%ld-%u", path, (long)getpid(), n);
        rc = tern_atomic_file_open_as(a, path, tmp, flags | TERN_ATOMIC_FILE_EXCL, err, errn);
        if (rc == 0 || errno != EEXIST)
            break;
    }
    return rc;
}

/* Close and remove the temporary file, unless the file was committed (or
 * the open, a write, finish or commit failed, which removed it already).
 * errno is kept. */
static inline void tern_atomic_file_abort(tern_atomic_file *a)
{
    if (a->state == 2)
        return;
    int e = errno;
    if (a->stream)
        fclose(a->stream);
    else if (a->fd >= 0)
        close(a->fd);
    a->stream = NULL;
    a->fd = -1;
    unlink(a->tmp);
    a->state = 2;
    errno = e;
}

/* A stdio stream over the temporary file, for fprintf and for libraries
 * that write to a FILE * (json_dumpf, config_write). Owned by `a`: finish,
 * commit and abort flush and close it; do not fclose it. Once it is taken,
 * tern_atomic_file_write goes through it too. The same stream on a second
 * call. NULL with a message (and the file still open) when out of memory. */
static inline FILE *tern_atomic_file_stream(tern_atomic_file *a, char *err, size_t errn)
{
    if (!a->stream && a->state == 0) {
        a->stream = fdopen(a->fd, "w");
        if (!a->stream && err && errn)
            snprintf(err, errn, "%s: cannot open a stream: %s", a->tmp, strerror(errno));
    }
    return a->stream;
}

/* Append n bytes (retrying short writes and EINTR). On a failure the
 * temporary file is removed. */
static inline int tern_atomic_file_write(tern_atomic_file *a, const void *buf, size_t n,
                                         char *err, size_t errn)
{
    const char *p = (const char *)buf;
    if (a->stream)
        errno = 0; /* stdio need not set it */
    if (a->stream && n > 0 && fwrite(p, 1, n, a->stream) != n) {
        int e = errno ? errno : EIO;
        if (err && errn)
            snprintf(err, errn, "%s: cannot write: %s", a->tmp, strerror(e));
        tern_atomic_file_abort(a);
        errno = e;
        return -1;
    }
    if (!a->stream && tern_write_all(a->fd, p, n) != 0) {
        int e = errno;
        if (err && errn)
            snprintf(err, errn, "%s: cannot write: %s", a->tmp, strerror(e));
        tern_atomic_file_abort(a);
        errno = e;
        return -1;
    }
    return 0;
}

/* Flush the stream, fsync (unless TERN_ATOMIC_FILE_NO_SYNC) and close the
 * temporary file, leaving it under its temporary name: for a caller that
 * writes several files and renames them all at the end (commit, or rename
 * a->tmp itself). On a failure the temporary file is removed. */
static inline int tern_atomic_file_finish(tern_atomic_file *a, char *err, size_t errn)
{
    if (a->state != 0)
        return 0;
    int e = 0;
    const char *what = "write";
    errno = 0; /* stdio need not set it */
    if (a->stream && (fflush(a->stream) != 0 || ferror(a->stream)))
        e = errno ? errno : EIO;
    else if (!(a->flags & TERN_ATOMIC_FILE_NO_SYNC) && fsync(a->fd) != 0)
        e = errno, what = "sync to disk";
    if (!e) {
        int rc = a->stream ? fclose(a->stream) : close(a->fd);
        a->stream = NULL;
        a->fd = -1;
        if (rc != 0)
            e = errno, what = "close";
    }
    if (e) {
        if (err && errn)
            snprintf(err, errn, "%s: cannot %s: %s", a->tmp, what, strerror(e));
        tern_atomic_file_abort(a);
        errno = e;
        return -1;
    }
    a->state = 1;
    return 0;
}

/* fsync the directory that holds `path` (some file systems cannot: EINVAL
 * is no error). */
static inline int tern_atomic_file_sync_dir(const char *path, char *err, size_t errn)
{
    char dir[TERN_ATOMIC_FILE_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        if (err && errn)
            snprintf(err, errn, "%s: written, but cannot open its directory %s to sync it: %s",
                     path, dir, strerror(e));
        errno = e;
        return -1;
    }
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    if (rc != 0 && e != EINVAL) {
        if (err && errn)
            snprintf(err, errn, "%s: written, but syncing directory %s failed: %s", path, dir,
                     strerror(e));
        errno = e;
        return -1;
    }
    return 0;
}

/* Finish (if not done yet), rename the temporary file over the destination
 * and fsync the directory (unless TERN_ATOMIC_FILE_NO_SYNC). A failure
 * before the rename removes the temporary file and leaves the old file; a
 * failure to sync the directory comes after the rename (the new file is in
 * place but may not survive a crash). */
static inline int tern_atomic_file_commit(tern_atomic_file *a, char *err, size_t errn)
{
    if (a->state == 2) {
        if (err && errn)
            snprintf(err, errn, "%s: committed or abandoned already", a->path);
        errno = EINVAL;
        return -1;
    }
    if (tern_atomic_file_finish(a, err, errn) != 0)
        return -1;
    if (rename(a->tmp, a->path) != 0) {
        int e = errno;
        if (err && errn)
            snprintf(err, errn, "%s: cannot rename to %s: %s", a->tmp, a->path, strerror(e));
        tern_atomic_file_abort(a);
        errno = e;
        return -1;
    }
    a->state = 2;
    return a->flags & TERN_ATOMIC_FILE_NO_SYNC ? 0 : tern_atomic_file_sync_dir(a->path, err, errn);
}

/* Write a whole buffer to `path` atomically (open, write, commit). */
static inline int tern_atomic_file_put(const char *path, const void *buf, size_t n, char *err,
                                       size_t errn)
{
    tern_atomic_file a;
    if (tern_atomic_file_open(&a, path, err, errn) != 0 ||
        tern_atomic_file_write(&a, buf, n, err, errn) != 0)
        return -1;
    return tern_atomic_file_commit(&a, err, errn);
}

#ifdef __cplusplus
}
#endif
#endif /* TERN_SUPPORT_ATOMIC_FILE_H */
