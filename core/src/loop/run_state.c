/* run_state.c: checkpoints of a run and its JSON Lines files (see
 * run_state.h). */
#include "loop/run_state.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/errmsg.h"
#include "base/log.h"
#include "tern/support/atomic_file.h"

int (*tern_checkpoint_fault)(const char *op, const char *path);

/* 0, or -1 with errno set when the test seam fails this operation. */
static int fault(const char *op, const char *path)
{
    int e = tern_checkpoint_fault ? tern_checkpoint_fault(op, path) : 0;
    if (e) {
        errno = e;
        return -1;
    }
    return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

int tern_remove_tree(const char *path)
{
    return nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), t = strlen(tail);
    return n > t && strcmp(s + n - t, tail) == 0;
}

/* fsync a file or a directory. 0, or -1 with errno (a file system that cannot
 * sync directories, EINVAL, is no error). */
static int sync_path(const char *path, int is_dir)
{
    if (fault("fsync", path) != 0)
        return -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC | (is_dir ? O_DIRECTORY : 0));
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    if (rc != 0 && !(is_dir && e == EINVAL)) {
        errno = e;
        return -1;
    }
    return 0;
}

/* fsync every file and directory below `dir`, then `dir`: a directory's
 * entries must not reach the disk before what they name. 0, or -1 with errno
 * set and `bad` (size n) naming what failed. */
static int sync_tree(const char *dir, char *bad, size_t n)
{
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(bad, n, "%s", dir);
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (errno = 0, e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char p[PATH_MAX];
        struct stat st;
        if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p) {
            snprintf(bad, n, "%s/%s", dir, e->d_name);
            errno = ENAMETOOLONG;
            rc = -1;
        } else if (lstat(p, &st) != 0) {
            snprintf(bad, n, "%s", p);
            rc = -1;
        } else if (S_ISDIR(st.st_mode)) {
            rc = sync_tree(p, bad, n);
        } else if (S_ISREG(st.st_mode) && sync_path(p, 0) != 0) {
            snprintf(bad, n, "%s", p);
            rc = -1;
        }
    }
    if (rc == 0 && errno != 0) { /* readdir failed */
        snprintf(bad, n, "%s", dir);
        rc = -1;
    }
    int err = errno;
    closedir(d);
    errno = err;
    if (rc == 0 && sync_path(dir, 1) != 0) {
        snprintf(bad, n, "%s", dir);
        rc = -1;
    }
    return rc;
}

/* Write `text` to `path` (no fsync: the checkpoint's tree is synced whole). */
static int write_text(const char *path, const char *text)
{
    if (fault("write", path) != 0)
        return -1;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0)
        return -1;
    if (tern_write_all(fd, text, strlen(text)) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return close(fd);
}

int tern_checkpoint_publish(const char *tmp, const char *final)
{
    char bad[PATH_MAX], old[PATH_MAX + 8], parent[PATH_MAX];
    if (snprintf(old, sizeof old, "%s.old", final) >= (int)sizeof old ||
        snprintf(parent, sizeof parent, "%s", final) >= (int)sizeof parent)
        return tern_errorf(TERN_EINVAL, "%s: path too long", final);
    char *slash = strrchr(parent, '/');
    if (!slash)
        snprintf(parent, sizeof parent, ".");
    else if (slash == parent)
        parent[1] = '\0'; /* "/x": the root */
    else
        *slash = '\0';
    if (sync_tree(tmp, bad, sizeof bad) != 0) {
        int e = errno;
        tern_remove_tree(tmp);
        return tern_errorf(TERN_EIO, "%s: cannot sync to disk: %s; %s is not made and its "
                           "partial copy is removed (is the disk full or failing?)", bad,
                           strerror(e), final);
    }
    struct stat st;
    int replace = stat(final, &st) == 0;
    if (replace) {
        /* the same point saved again (a stop right after a resume): the new one wins */
        tern_remove_tree(old);
        if (fault("rename", final) != 0 || rename(final, old) != 0) {
            int e = errno;
            tern_remove_tree(tmp);
            return tern_errorf(TERN_EIO, "%s: cannot move it aside to %s to replace it: %s", final,
                               old, strerror(e));
        }
    }
    if (fault("rename", tmp) != 0 || rename(tmp, final) != 0) {
        int e = errno;
        if (replace)
            rename(old, final); /* the older one keeps its place */
        tern_remove_tree(tmp);
        return tern_errorf(TERN_EIO, "%s: cannot rename to %s: %s; the partial copy is removed",
                           tmp, final, strerror(e));
    }
    /* the rename itself reaches the disk only with its directory */
    if (sync_path(parent, 1) != 0) {
        int e = errno;
        if (replace)
            tern_remove_tree(old);
        return tern_errorf(TERN_EIO, "%s: in place, but syncing its directory %s failed: %s (a "
                           "power loss could undo the rename; is the disk failing?)", final,
                           parent, strerror(e));
    }
    if (replace)
        tern_remove_tree(old);
    return TERN_OK;
}

int tern_checkpoint_complete(const char *tmp, json_t *state, char *final, size_t n)
{
    size_t len = strlen(tmp);
    if (len < 5 || strcmp(tmp + len - 4, ".tmp") != 0 || len - 4 >= n)
        return tern_errorf(TERN_EINVAL, "%s: not a temporary checkpoint name", tmp);
    memcpy(final, tmp, len - 4);
    final[len - 4] = '\0';
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/state.json", tmp);
    char *text = json_dumps(state, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    int rc = text ? write_text(path, text) : (errno = ENOMEM, -1);
    free(text);
    if (rc != 0) {
        int e = errno;
        tern_remove_tree(tmp); /* a checkpoint without its state is of no use */
        return tern_errorf(TERN_EIO, "%s: cannot write the checkpoint state: %s; %s is not made "
                           "and its partial copy is removed (is the disk full?)", path,
                           strerror(e), final);
    }
    return tern_checkpoint_publish(tmp, final);
}

/* A checkpoint's name: step-N (rl 1) or sft-S (rl 0), nothing after. */
typedef struct ckpt_name {
    int rl;
    long long v;
    char *path;
} ckpt_name;

static int ckpt_order(const void *a, const void *b)
{
    const ckpt_name *x = a, *y = b;
    if (x->rl != y->rl)
        return y->rl - x->rl; /* RL steps before warm-up steps */
    return x->v < y->v ? 1 : x->v > y->v ? -1 : 0; /* the most steps first */
}

void tern_checkpoint_list_free(char **paths, size_t n)
{
    for (size_t i = 0; paths && i < n; i++)
        free(paths[i]);
    free(paths);
}

int tern_checkpoint_list(const char *dir, char ***paths, size_t *n)
{
    *paths = NULL;
    *n = 0;
    char cdir[PATH_MAX + 16];
    snprintf(cdir, sizeof cdir, "%s/checkpoints", dir);
    DIR *d = opendir(cdir);
    if (!d)
        return tern_errorf(TERN_ENOTFOUND, "%s: no checkpoints to resume from (%s): start the "
                           "run without --resume", cdir, strerror(errno));
    ckpt_name *v = NULL;
    size_t len = 0, cap = 0;
    int rc = TERN_OK;
    struct dirent *e;
    while (rc == TERN_OK && (e = readdir(d))) {
        long long x;
        char tail;
        int rl = sscanf(e->d_name, "step-%lld%c", &x, &tail) == 1;
        if (!rl && sscanf(e->d_name, "sft-%lld%c", &x, &tail) != 1)
            continue;
        if (x < 0)
            continue;
        if (len == cap) {
            ckpt_name *nv = realloc(v, (cap = cap ? 2 * cap : 16) * sizeof *v);
            if (!nv) {
                rc = tern_errorf(TERN_ENOMEM, "out of memory listing %s", cdir);
                break;
            }
            v = nv;
        }
        size_t plen = strlen(cdir) + strlen(e->d_name) + 2;
        v[len] = (ckpt_name){.rl = rl, .v = x, .path = malloc(plen)};
        if (!v[len].path) {
            rc = tern_errorf(TERN_ENOMEM, "out of memory listing %s", cdir);
            break;
        }
        snprintf(v[len].path, plen, "%s/%s", cdir, e->d_name);
        len++;
    }
    closedir(d);
    if (rc == TERN_OK && len == 0)
        rc = tern_errorf(TERN_ENOTFOUND, "%s: no complete checkpoint to resume from: start "
                         "the run without --resume", cdir);
    char **out = rc == TERN_OK ? malloc(len * sizeof *out) : NULL;
    if (rc == TERN_OK && !out)
        rc = tern_errorf(TERN_ENOMEM, "out of memory listing %s", cdir);
    if (rc != TERN_OK) {
        for (size_t i = 0; i < len; i++)
            free(v[i].path);
        free(v);
        return rc;
    }
    qsort(v, len, sizeof *v, ckpt_order);
    for (size_t i = 0; i < len; i++)
        out[i] = v[i].path;
    free(v);
    *paths = out;
    *n = len;
    return TERN_OK;
}

int tern_checkpoint_newest(const char *dir, char *path, size_t n)
{
    char **v;
    size_t count;
    int rc = tern_checkpoint_list(dir, &v, &count);
    if (rc != TERN_OK)
        return rc;
    snprintf(path, n, "%s", v[0]);
    tern_checkpoint_list_free(v, count);
    return TERN_OK;
}

int tern_checkpoint_set_aside(const char *ckpt, char *to, size_t n)
{
    struct stat st;
    for (int i = 1; i < 1000; i++) {
        int w = i == 1 ? snprintf(to, n, "%s.damaged", ckpt)
                       : snprintf(to, n, "%s.damaged-%d", ckpt, i);
        if (w < 0 || (size_t)w >= n)
            return tern_errorf(TERN_EIO, "%s: path too long to set it aside", ckpt);
        if (lstat(to, &st) == 0)
            continue; /* an earlier one of this name: both are kept */
        if (errno != ENOENT)
            break;
        /* the run directory is locked: no one else takes the name meanwhile */
        if (rename(ckpt, to) != 0)
            return tern_errorf(TERN_EIO, "%s: cannot rename it to %s to set it aside: %s",
                               ckpt, to, strerror(errno));
        char parent[PATH_MAX];
        snprintf(parent, sizeof parent, "%s", ckpt);
        char *slash = strrchr(parent, '/');
        if (slash && slash != parent) {
            *slash = '\0';
            (void)sync_path(parent, 1); /* at worst a power loss undoes the rename */
        }
        return TERN_OK;
    }
    return tern_errorf(TERN_EIO, "%s: cannot find a free name to set it aside as (%s: %s)", ckpt,
                       to, strerror(errno ? errno : EEXIST));
}

int tern_checkpoint_read_state(const char *ckpt, json_t **state)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/state.json", ckpt);
    json_error_t err;
    *state = json_load_file(path, 0, &err);
    if (!*state && err.line > 0)
        return tern_errorf(TERN_EINVAL, "%s:%d: not a checkpoint state: %s (the checkpoint is "
                           "damaged)", path, err.line, err.text);
    if (!*state)
        return tern_errorf(TERN_EINVAL, "%s: not a checkpoint state: %s (the checkpoint is "
                           "damaged)", path, err.text);
    json_t *f = json_object_get(*state, "format");
    if (!json_is_object(*state) || json_integer_value(f) != 1 ||
        !json_is_integer(json_object_get(*state, "step")) ||
        !json_is_integer(json_object_get(*state, "sft_step"))) {
        json_decref(*state);
        *state = NULL;
        return tern_errorf(TERN_EINVAL, "%s: not a tern checkpoint state of format 1 (the "
                           "checkpoint is damaged, or another program wrote it)", path);
    }
    return TERN_OK;
}

/* ---- leftovers of writes that did not finish ------------------------------ */

/* The names in `dir` that `want` picks (read whole before anything is
 * renamed or removed: readdir need not see a directory that changes). NULL
 * when the directory cannot be read; *n gets the count. */
static char **list_names(const char *dir, int (*want)(const char *), size_t *n)
{
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return NULL;
    char **v = NULL;
    size_t cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!want(e->d_name))
            continue;
        if (*n == cap) {
            char **nv = realloc(v, (cap = cap ? 2 * cap : 8) * sizeof *v);
            if (!nv)
                break;
            v = nv;
        }
        if (!(v[*n] = strdup(e->d_name)))
            break;
        (*n)++;
    }
    closedir(d);
    return v;
}

static int is_tmp(const char *name) { return ends_with(name, ".tmp"); }

static int is_tmp_or_old(const char *name)
{
    return ends_with(name, ".tmp") || ends_with(name, ".old");
}

static void free_names(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static void remove_leftover(const char *path)
{
    if (tern_remove_tree(path) == 0)
        tern_logf(TERN_LOG_WARN, "run", "removed %s, left by a write that did not finish (a "
                  "crash, a kill or a full disk)", path);
    else if (errno != ENOENT)
        tern_logf(TERN_LOG_WARN, "run", "%s: left by a write that did not finish, but cannot "
                  "be removed: %s; remove it by hand", path, strerror(errno));
}

void tern_run_remove_leftovers(const char *dir)
{
    char path[PATH_MAX + 64], cdir[PATH_MAX + 16];
    size_t n;
    char **v = list_names(dir, is_tmp, &n);
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, v[i]);
        if (lstat(path, &st) == 0 && S_ISREG(st.st_mode))
            remove_leftover(path);
    }
    free_names(v, n);
    snprintf(cdir, sizeof cdir, "%s/checkpoints", dir);
    v = list_names(cdir, is_tmp_or_old, &n);
    for (size_t i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%s", cdir, v[i]);
        if (ends_with(v[i], ".tmp")) {
            remove_leftover(path);
            continue;
        }
        /* NAME.old: NAME was being replaced by a newer copy of the same point */
        char whole[PATH_MAX + 64];
        struct stat st;
        snprintf(whole, sizeof whole, "%s", path);
        whole[strlen(whole) - 4] = '\0';
        if (stat(whole, &st) == 0)
            remove_leftover(path);
        else if (rename(path, whole) == 0)
            tern_logf(TERN_LOG_WARN, "run", "%s: renamed back to %s (its replacement did not "
                      "finish)", path, whole);
    }
    free_names(v, n);
}

/* ---- JSON Lines ------------------------------------------------------------- */

static int is_blank(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r' && p[i] != '\n')
            return 0;
    return 1;
}

int tern_jsonl_truncate(const char *path, int64_t sft_step, int64_t step)
{
    FILE *in = fopen(path, "r");
    if (!in)
        return errno == ENOENT ? TERN_OK
                               : tern_errorf(TERN_EIO, "%s: cannot read: %s", path,
                                             strerror(errno));
    tern_atomic_file a; /* PATH.tmp, renamed over PATH */
    char err[PATH_MAX + 256];
    FILE *out = NULL;
    if (tern_atomic_file_open(&a, path, err, sizeof err) != 0 ||
        !(out = tern_atomic_file_stream(&a, err, sizeof err))) {
        tern_atomic_file_abort(&a);
        fclose(in);
        return tern_errorf(TERN_EIO, "%s (resuming rewrites %s up to the checkpoint)", err, path);
    }
    char *line = NULL;
    size_t cap = 0, no = 0, torn = 0, first_torn = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, in)) > 0) {
        size_t n = (size_t)len;
        no++;
        json_t *o = json_loadb(line, n, 0, NULL);
        if (!json_is_object(o)) {
            /* torn (its end lost, or a next line glued to it) or zeros a power
             * loss left: never a record, and the next append must start a line */
            json_decref(o);
            if (!is_blank(line, n) && !torn++)
                first_torn = no;
            continue;
        }
        const char *stage = json_string_value(json_object_get(o, "stage"));
        json_int_t s = json_integer_value(json_object_get(o, "step"));
        int keep = !stage || (strcmp(stage, "sft") == 0 ? s <= sft_step
                              : strcmp(stage, "rl") == 0 ? s <= step : 1);
        json_decref(o);
        if (keep) {
            fwrite(line, 1, n, out);
            if (line[n - 1] != '\n') /* a whole object that lost only its newline */
                fputc('\n', out);
        }
    }
    int read_error = ferror(in) ? (errno ? errno : EIO) : 0;
    free(line);
    fclose(in);
    if (read_error) {
        tern_atomic_file_abort(&a);
        return tern_errorf(TERN_EIO, "%s: cannot read: %s", path, strerror(read_error));
    }
    if (tern_atomic_file_commit(&a, err, sizeof err) != 0)
        return tern_errorf(TERN_EIO, "%s: cannot rewrite it up to the checkpoint: %s", path, err);
    if (torn == 1)
        tern_logf(TERN_LOG_WARN, "run", "%s:%zu: dropped a line that is not a whole JSON object "
                  "(torn by a crash or a full disk)", path, first_torn);
    else if (torn > 1)
        tern_logf(TERN_LOG_WARN, "run", "%s: dropped %zu lines that are not whole JSON objects "
                  "(the first is line %zu; torn by a crash or a full disk)", path, torn,
                  first_torn);
    return TERN_OK;
}
