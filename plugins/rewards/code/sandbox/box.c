/* box.c: building the sandbox's filesystem (box.h). */
#include "box.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ROOT "/tmp" /* where the new root is built, in our private mount namespace */

static int fail(char *why, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *why, size_t cap, const char *fmt, ...)
{
    int e = errno;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(why, cap, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < cap)
        snprintf(why + n, cap - (size_t)n, ": %s", strerror(e));
    return -1;
}

/* ROOT + path, for a path that starts with '/'. */
static int in_root(char *dst, const char *path)
{
    int n = snprintf(dst, PATH_MAX, ROOT "%s", path);
    return n > 0 && n < PATH_MAX ? 0 : -1;
}

/* mkdir -p of ROOT + dir. Not tern_make_dirs (tern/support/paths.h): the
 * box's directories are 0755 whatever umask the helper inherited (that one
 * uses 0777 less the umask), ROOT itself is never made, and a failure names
 * the path as the sandboxed program sees it, in the caller's fixed `why`. */
static int make_dirs(const char *dir, char *why, size_t cap)
{
    char p[PATH_MAX];
    if (in_root(p, dir) != 0) {
        errno = ENAMETOOLONG;
        return fail(why, cap, "bind path %.80s", dir);
    }
    for (char *s = p + strlen(ROOT) + 1;; s++) {
        if (*s != '/' && *s != '\0')
            continue;
        char c = *s;
        *s = '\0';
        if (mkdir(p, 0755) != 0 && errno != EEXIST)
            return fail(why, cap, "mkdir %.80s", p + strlen(ROOT));
        *s = c;
        if (!c)
            return 0;
    }
}

/* The mount flags a remount must keep: in a user namespace the kernel
 * refuses to clear the locked ones the host mount has. */
static unsigned long kept_flags(const char *path)
{
    struct statvfs sv;
    unsigned long f = 0;
    if (statvfs(path, &sv) != 0)
        return 0;
    if (sv.f_flag & ST_NOSUID) f |= MS_NOSUID;
    if (sv.f_flag & ST_NODEV) f |= MS_NODEV;
    if (sv.f_flag & ST_NOEXEC) f |= MS_NOEXEC;
    if (sv.f_flag & ST_NOATIME) f |= MS_NOATIME;
    if (sv.f_flag & ST_NODIRATIME) f |= MS_NODIRATIME;
    if (sv.f_flag & ST_RELATIME) f |= MS_RELATIME;
    return f;
}

/* Shows host path `src` at ROOT + dst, read-only unless `device`. */
static int bind_path(const char *src, const char *dst, int device, char *why, size_t cap)
{
    struct stat st;
    if (stat(src, &st) != 0)
        return fail(why, cap, "bind %.80s", src);
    char target[PATH_MAX];
    if (in_root(target, dst) != 0) {
        errno = ENAMETOOLONG;
        return fail(why, cap, "bind %.80s", dst);
    }
    char parent[PATH_MAX];
    snprintf(parent, sizeof parent, "%s", dst);
    char *slash = strrchr(parent, '/');
    if (S_ISDIR(st.st_mode)) {
        if (make_dirs(dst, why, cap) != 0)
            return -1;
    } else {
        if (slash && slash != parent) {
            *slash = '\0';
            if (make_dirs(parent, why, cap) != 0)
                return -1;
        }
        int fd = open(target, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0)
            return fail(why, cap, "creating the mount point %.80s", dst);
        close(fd);
    }
    if (mount(src, target, NULL, MS_BIND, NULL) != 0)
        return fail(why, cap, "bind-mounting %.80s", src);
    if (device)
        return 0;
    unsigned long flags = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | kept_flags(target);
    if (mount(NULL, target, NULL, flags, NULL) != 0)
        return fail(why, cap, "making %.80s read-only", dst);
    return 0;
}

/* The host's top-level links into /usr (merged /usr: /bin -> usr/bin) are
 * made again; where they are real directories they are bound. */
static int top_level(char *why, size_t cap)
{
    static const char *const names[] = {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        struct stat st;
        if (lstat(names[i], &st) != 0)
            continue;
        if (S_ISLNK(st.st_mode)) {
            char target[PATH_MAX], link[PATH_MAX];
            ssize_t n = readlink(names[i], target, sizeof target - 1);
            if (n <= 0)
                continue;
            target[n] = '\0';
            in_root(link, names[i]);
            if (symlink(target, link) != 0)
                return fail(why, cap, "symlink %s", names[i]);
        } else if (S_ISDIR(st.st_mode)) {
            if (bind_path(names[i], names[i], 0, why, cap) != 0)
                return -1;
        }
    }
    return 0;
}

static int devices(char *why, size_t cap)
{
    static const char *const names[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random",
                                        "/dev/urandom"};
    if (make_dirs("/dev", why, cap) != 0)
        return -1;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (bind_path(names[i], names[i], 1, why, cap) != 0)
            return -1;
    /* /dev/fd needs /proc, which the sandbox does not have */
    return 0;
}

/* /box and /tmp: one tmpfs of tmpfs_bytes, mounted at ROOT/.w and shown at
 * both places, so together they cannot outgrow it. */
static int writable(const sandbox_request *req, char *why, size_t cap)
{
    char opts[64];
    snprintf(opts, sizeof opts, "size=%llu,mode=0755", (unsigned long long)req->tmpfs_bytes);
    if (mkdir(ROOT "/.w", 0755) != 0 || mkdir(ROOT "/box", 0755) != 0 ||
        mkdir(ROOT "/tmp", 0755) != 0)
        return fail(why, cap, "mkdir");
    if (mount("tern-box", ROOT "/.w", "tmpfs", MS_NOSUID | MS_NODEV, opts) != 0)
        return fail(why, cap, "mounting the working tmpfs (%s)", opts);
    if (mkdir(ROOT "/.w/box", 0755) != 0 || mkdir(ROOT "/.w/tmp", 01777) != 0 ||
        chmod(ROOT "/.w/tmp", 01777) != 0)
        return fail(why, cap, "mkdir in the working tmpfs");
    if (mount(ROOT "/.w/box", ROOT "/box", NULL, MS_BIND, NULL) != 0 ||
        mount(ROOT "/.w/tmp", ROOT "/tmp", NULL, MS_BIND, NULL) != 0)
        return fail(why, cap, "binding /box and /tmp");
    if (umount2(ROOT "/.w", MNT_DETACH) != 0 || rmdir(ROOT "/.w") != 0)
        return fail(why, cap, "unmounting the staging tmpfs");
    for (uint32_t i = 0; i < req->n_files; i++) {
        const sandbox_file *f = &req->files[i];
        char path[PATH_MAX];
        snprintf(path, sizeof path, ROOT "/box/%s", f->name);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, f->mode);
        if (fd < 0)
            return fail(why, cap, "creating /box/%.60s", f->name);
        for (uint64_t done = 0; done < f->len;) {
            ssize_t w = write(fd, f->data + done, (size_t)(f->len - done));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                close(fd);
                return fail(why, cap, "writing /box/%.60s (%llu bytes; tmpfs_bytes too small?)",
                            f->name, (unsigned long long)f->len);
            }
            done += (uint64_t)w;
        }
        /* open() applied the umask */
        if (fchmod(fd, f->mode) != 0) {
            close(fd);
            return fail(why, cap, "chmod /box/%.60s", f->name);
        }
        close(fd);
    }
    return 0;
}

int sandbox_box_enter(const sandbox_request *req, char *why, size_t cap)
{
    /* nothing we mount may leak back to the host */
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
        return fail(why, cap, "making the mounts private");
    if (mount("tern-root", ROOT, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755") != 0)
        return fail(why, cap, "mounting the root tmpfs");
    if (top_level(why, cap) != 0 || devices(why, cap) != 0)
        return -1;
    for (uint32_t i = 0; i < req->n_binds; i++) {
        const char *b = req->binds[i];
        if (strcmp(b, "/tmp") == 0 || strncmp(b, "/tmp/", 5) == 0 || strcmp(b, "/") == 0) {
            errno = EINVAL;
            return fail(why, cap, "bind %.80s (/ and paths under /tmp cannot be bound)", b);
        }
        if (bind_path(b, b, 0, why, cap) != 0)
            return -1;
    }
    if (writable(req, why, cap) != 0)
        return -1;
    if (mkdir(ROOT "/.old", 0700) != 0 || chdir(ROOT) != 0)
        return fail(why, cap, "preparing the new root");
    if (syscall(SYS_pivot_root, ".", ".old") != 0)
        return fail(why, cap, "pivot_root");
    if (umount2("/.old", MNT_DETACH) != 0 || rmdir("/.old") != 0)
        return fail(why, cap, "leaving the host's root");
    if (mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) != 0)
        return fail(why, cap, "making / read-only");
    if (chdir("/box") != 0)
        return fail(why, cap, "chdir /box");
    return 0;
}
