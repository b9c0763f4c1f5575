/* transport_checkpoint.c: the `checkpoint` weight transport (transport.h).
 *
 * Each published version is one safetensors file (weights_file.h) in the
 * directory, DIR/weights-<version, 10 digits>.safetensors, and DIR/LATEST
 * holds the newest version's number. Both are written the crash-safe way:
 * to a temporary name in DIR (.NAME.tmp.<pid>), fsync'd, renamed over the
 * final name, then the directory fsync'd. A rename is atomic, so a reader in
 * any process sees a whole file or none; and LATEST is renamed only after
 * the weights file it names, so whatever LATEST says can be read.
 *
 * Loaders wait on a condition variable that publish() signals, and poll
 * LATEST every POLL_MS besides, since the writer may be another process.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/errmsg.h"
#include "weights/transport.h"
#include "weights/weights_file.h"
#include "tern/support/atomic_file.h"
#include "tern/support/paths.h"

#define POLL_MS 20
/* Room for DIR plus the longest name we make (".weights-<19 digits>
 * .safetensors.tmp.<pid>"), so that no path is ever cut short. */
#define PATH_CAP 4096
#define MAX_DIR_LEN (PATH_CAP - 96)

typedef struct ckpt {
    char *dir;
    pthread_mutex_t lock;         /* guards newest and closed */
    pthread_cond_t published;     /* broadcast by publish and close */
    pthread_mutex_t publish_lock; /* one publish (or forget) at a time */
    int64_t newest;               /* the newest version known: published here or
                                     seen in LATEST; -1 if none */
    int closed;
} ckpt;

static void weights_path(char *buf, const ckpt *c, int64_t version)
{
    snprintf(buf, PATH_CAP, "%s/weights-%010" PRId64 ".safetensors", c->dir, version);
}

/* The version in DIR/LATEST into *v, -1 when there is no such file. */
static int read_latest(const ckpt *c, int64_t *v)
{
    char path[PATH_CAP];
    snprintf(path, sizeof path, "%s/LATEST", c->dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) {
            *v = -1;
            return TERN_OK;
        }
        return tern_errorf(TERN_EIO, "%s: cannot open: %s", path, strerror(errno));
    }
    char text[32];
    ssize_t got;
    do
        got = read(fd, text, sizeof text - 1);
    while (got < 0 && errno == EINTR);
    int e = errno;
    close(fd);
    if (got < 0)
        return tern_errorf(TERN_EIO, "%s: cannot read: %s", path, strerror(e));
    text[got] = '\0';
    /* digits, then a newline; LATEST is renamed into place whole, so
     * anything else was written by someone else */
    char *end;
    errno = 0;
    long long n = strtoll(text, &end, 10);
    if (text[0] < '0' || text[0] > '9' || errno || (*end && strcmp(end, "\n")))
        return tern_errorf(TERN_EINVAL, "%s: should hold a weight version number and a "
                           "newline, not \"%.*s\"", path, (int)strcspn(text, "\n"), text);
    *v = n;
    return TERN_OK;
}

typedef int (*fill_fn)(tern_atomic_file *a, const char *path, void *arg);

/* DIR/name, written by fill() under a temporary name (.NAME.tmp.<pid>,
 * which tern_transport_checkpoint_new knows), fsync'd, renamed into place
 * and the directory fsync'd (tern/support/atomic_file.h). The temporary
 * file never outlives a failure (only a killed process leaves one;
 * tern_transport_checkpoint_new removes those). */
static int write_atomically(const ckpt *c, const char *name, fill_fn fill, void *arg)
{
    char final[PATH_CAP], tmp[PATH_CAP], err[PATH_CAP + 256];
    snprintf(final, sizeof final, "%s/%s", c->dir, name);
    snprintf(tmp, sizeof tmp, "%s/.%s.tmp.%ld", c->dir, name, (long)getpid());
    tern_atomic_file a;
    if (tern_atomic_file_open_as(&a, final, tmp, 0, err, sizeof err) != 0)
        return tern_errorf(TERN_EIO, "%s", err);
    int rc = fill(&a, final, arg);
    if (rc != TERN_OK) {
        tern_atomic_file_abort(&a);
        return rc;
    }
    if (tern_atomic_file_commit(&a, err, sizeof err) != 0)
        return tern_errorf(TERN_EIO, "%s", err);
    return TERN_OK;
}

typedef struct weights_fill {
    const tern_tensor *t;
    size_t n;
    int64_t version;
} weights_fill;

static int fill_weights(tern_atomic_file *a, const char *path, void *arg)
{
    const weights_fill *w = arg;
    return tern_weights_file_write(a->fd, path, w->t, w->n, w->version);
}

static int fill_latest(tern_atomic_file *a, const char *path, void *arg)
{
    char text[32];
    int len = snprintf(text, sizeof text, "%" PRId64 "\n", *(const int64_t *)arg);
    if (tern_atomic_file_write(a, text, (size_t)len, NULL, 0) != 0)
        return tern_errorf(TERN_EIO, "%s: cannot write: %s", path, strerror(errno));
    return TERN_OK;
}

/* The newest version known, refreshed from LATEST (which another process
 * may have written). TERN_OK, or the error reading LATEST. */
static int refresh_newest(ckpt *c, int64_t *newest)
{
    int64_t disk;
    int rc = read_latest(c, &disk);
    pthread_mutex_lock(&c->lock);
    if (rc == TERN_OK && disk > c->newest)
        c->newest = disk;
    *newest = c->newest;
    pthread_mutex_unlock(&c->lock);
    return rc;
}

static int ckpt_publish(void *impl, const tern_tensor *t, size_t n, int64_t version)
{
    ckpt *c = impl;
    pthread_mutex_lock(&c->publish_lock);
    int64_t newest = -1;
    int rc = version < 0 ? tern_errorf(TERN_EINVAL, "weight version %" PRId64 " is negative",
                                       version)
                         : refresh_newest(c, &newest);
    if (rc == TERN_OK && version <= newest)
        rc = tern_errorf(TERN_EINVAL, "weight version %" PRId64 " published after %" PRId64
                         " (in %s)", version, newest, c->dir);
    char name[96];
    snprintf(name, sizeof name, "weights-%010" PRId64 ".safetensors", version);
    weights_fill w = {t, n, version};
    if (rc == TERN_OK)
        rc = write_atomically(c, name, fill_weights, &w);
    /* LATEST only after the weights file it names is in place */
    if (rc == TERN_OK)
        rc = write_atomically(c, "LATEST", fill_latest, &version);
    if (rc == TERN_OK) {
        pthread_mutex_lock(&c->lock);
        if (version > c->newest)
            c->newest = version;
        pthread_cond_broadcast(&c->published);
        pthread_mutex_unlock(&c->lock);
    }
    pthread_mutex_unlock(&c->publish_lock);
    return rc;
}

/* Wait until the version wanted is published (version -1: any); *target:
 * the version to read; *blocked_ns: how long it was not yet there (0 when it
 * was at the first look: reading LATEST on a busy disk is no wait). */
static int wait_for(ckpt *c, int64_t version, int64_t *target, uint64_t *blocked_ns)
{
    uint64_t since = 0; /* when the version was first seen missing */
    int rc;
    for (;;) {
        int64_t disk;
        rc = read_latest(c, &disk);
        pthread_mutex_lock(&c->lock);
        if (rc == TERN_OK && disk > c->newest)
            c->newest = disk;
        if (c->closed) {
            pthread_mutex_unlock(&c->lock);
            rc = tern_errorf(TERN_ECLOSED, "the weight transport of %s is closed", c->dir);
            break;
        }
        if (rc != TERN_OK) {
            pthread_mutex_unlock(&c->lock);
            break;
        }
        if (version < 0 ? c->newest >= 0 : c->newest >= version) {
            *target = version < 0 ? c->newest : version;
            pthread_mutex_unlock(&c->lock);
            break;
        }
        if (!since)
            since = tern_mono_ns();
        /* woken by a publish here, or after POLL_MS to look at LATEST again */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += POLL_MS * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&c->published, &c->lock, &ts);
        pthread_mutex_unlock(&c->lock);
    }
    *blocked_ns = since ? tern_mono_ns() - since : 0;
    return rc;
}

static int ckpt_load(void *impl, const tern_tensor *t, size_t n, int64_t version,
                     int64_t *loaded, uint64_t *waited_ns)
{
    ckpt *c = impl;
    uint64_t waited = 0;
    for (;;) {
        int64_t target = -1;
        uint64_t blocked = 0;
        int rc = wait_for(c, version, &target, &blocked);
        waited += blocked;
        if (waited_ns)
            *waited_ns = waited;
        if (rc != TERN_OK)
            return rc;
        char path[PATH_CAP];
        weights_path(path, c, target);
        rc = tern_weights_file_read(path, t, n, target);
        if (rc == TERN_OK && loaded)
            *loaded = target;
        if (rc != TERN_ENOTFOUND)
            return rc;
        int64_t newest;
        if ((rc = refresh_newest(c, &newest)) != TERN_OK)
            return rc;
        if (version >= 0)
            return tern_errorf(TERN_EINVAL, "weight version %" PRId64 " was asked for after it "
                               "was forgotten (%s does not exist; the newest is %" PRId64 ")",
                               version, path, newest);
        /* the newest was overtaken and forgotten between reading LATEST and
         * opening it: take the newer one. The same one missing is an error. */
        if (newest == target)
            return tern_errorf(TERN_EINVAL, "%s does not exist, though %s/LATEST names version %"
                               PRId64 " (removed by hand?)", path, c->dir, target);
    }
}

/* The version of a file named weights-<digits>.safetensors, else -1. */
static int64_t weights_version(const char *name)
{
    if (strncmp(name, "weights-", 8))
        return -1;
    const char *p = name + 8;
    if (*p < '0' || *p > '9')
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(p, &end, 10);
    return errno || strcmp(end, ".safetensors") ? -1 : v;
}

static void ckpt_forget_before(void *impl, int64_t version)
{
    ckpt *c = impl;
    int64_t newest;
    pthread_mutex_lock(&c->publish_lock);
    refresh_newest(c, &newest);
    DIR *d = opendir(c->dir);
    if (d) {
        /* strictly older than the newest too: a file newer than LATEST may be
         * one a writer (maybe another process) is about to name in it */
        for (struct dirent *e; (e = readdir(d));) {
            int64_t v = weights_version(e->d_name);
            if (v >= 0 && v < version && v < newest)
                unlinkat(dirfd(d), e->d_name, 0);
        }
        closedir(d);
    }
    pthread_mutex_unlock(&c->publish_lock);
}

static int64_t ckpt_newest(void *impl)
{
    int64_t newest;
    refresh_newest(impl, &newest);
    return newest;
}

static void ckpt_close(void *impl)
{
    ckpt *c = impl;
    pthread_mutex_lock(&c->lock);
    c->closed = 1;
    pthread_cond_broadcast(&c->published);
    pthread_mutex_unlock(&c->lock);
}

static void ckpt_destroy(void *impl)
{
    ckpt *c = impl;
    if (!c)
        return;
    pthread_cond_destroy(&c->published);
    pthread_mutex_destroy(&c->lock);
    pthread_mutex_destroy(&c->publish_lock);
    free(c->dir);
    free(c);
}

/* Remove the temporary files of writers that were killed mid-write: ours,
 * named .weights-*.tmp.<pid> or .LATEST.tmp.<pid>, of a pid that no longer
 * runs. A live writer's (another process publishing into DIR) stays. */
static void remove_stale_tmp(const ckpt *c)
{
    DIR *d = opendir(c->dir);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));) {
        const char *name = e->d_name, *tmp = strstr(name, ".tmp.");
        if (!tmp || (strncmp(name, ".weights-", 9) && strncmp(name, ".LATEST.tmp.", 12)))
            continue;
        char *end;
        long pid = strtol(tmp + 5, &end, 10);
        if (*end || pid <= 0 || pid == (long)getpid())
            continue;
        if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
            unlinkat(dirfd(d), name, 0);
    }
    closedir(d);
}

void *tern_transport_checkpoint_new(const char *dir)
{
    if (!dir || !*dir) {
        tern_errorf(TERN_EINVAL, "the checkpoint weight transport needs a directory");
        return NULL;
    }
    if (strlen(dir) > MAX_DIR_LEN) {
        tern_errorf(TERN_EINVAL, "the weight directory %.64s... is too long a path", dir);
        return NULL;
    }
    if (tern_make_dirs(dir, NULL, NULL, 0) != 0) {
        tern_errorf(TERN_EIO, "cannot create the weight directory %s: %s", dir, strerror(errno));
        return NULL;
    }
    ckpt *c = calloc(1, sizeof *c);
    char *copy = strdup(dir);
    if (!c || !copy) {
        free(c);
        free(copy);
        tern_errorf(TERN_ENOMEM, "out of memory opening the weight directory %s", dir);
        return NULL;
    }
    c->dir = copy;
    c->newest = -1;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* waits immune to clock changes */
    pthread_cond_init(&c->published, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_init(&c->publish_lock, NULL);
    /* a resumed run carries on from what an earlier one published */
    if (read_latest(c, &c->newest) != TERN_OK) {
        ckpt_destroy(c);
        return NULL;
    }
    remove_stale_tmp(c);
    return c;
}

const tern_store_transport tern_transport_checkpoint = {
    .method = "checkpoint",
    .publish = ckpt_publish,
    .load = ckpt_load,
    .forget_before = ckpt_forget_before,
    .newest = ckpt_newest,
    .close = ckpt_close,
    .destroy = ckpt_destroy,
};
