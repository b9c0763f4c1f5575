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

int tern_checkpoint_newest(const char *dir, char *path, size_t n)
{
    char cdir[PATH_MAX + 16];
    snprintf(cdir, sizeof cdir, "%s/checkpoints", dir);
    DIR *d = opendir(cdir);
    if (!d)
        return tern_errorf(TERN_ENOTFOUND, "%s: no checkpoints to resume from (%s): start the "
                           "run without --resume", cdir, strerror(errno));
    long long best_rl = -1, best_sft = -1;
    struct dirent *e;
    while ((e = readdir(d))) {
        long long v;
        char tail;
        if (sscanf(e->d_name, "step-%lld%c", &v, &tail) == 1 && v > best_rl)
            best_rl = v;
        else if (sscanf(e->d_name, "sft-%lld%c", &v, &tail) == 1 && v > best_sft)
            best_sft = v;
    }
    closedir(d);
    if (best_rl >= 0)
        snprintf(path, n, "%s/step-%lld", cdir, best_rl);
    else if (best_sft >= 0)
        snprintf(path, n, "%s/sft-%lld", cdir, best_sft);
    else
        return tern_errorf(TERN_ENOTFOUND, "%s: no complete checkpoint to resume from: start "
                           "the run without --resume", cdir);
    return TERN_OK;
}

int tern_checkpoint_read_state(const char *ckpt, json_t **state)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/state.json", ckpt);
    json_error_t err;
    *state = json_load_file(path, 0, &err);
    if (!*state)
        return tern_errorf(TERN_EINVAL, "%s:%d: not a checkpoint state: %s (the checkpoint is "
                           "damaged: remove %s to resume from the one before)",
                           path, err.line, err.text, ckpt);
    json_t *f = json_object_get(*state, "format");
    if (!json_is_object(*state) || json_integer_value(f) != 1 ||
        !json_is_integer(json_object_get(*state, "step")) ||
        !json_is_integer(json_object_get(*state, "sft_step"))) {
        json_decref(*state);
        *state = NULL;
        return tern_errorf(TERN_EINVAL, "%s: not a tern checkpoint state of format 1 (remove %s "
                           "to resume from the one before)", path, ckpt);
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

/* ---- SHA-256 (FIPS 180-4) --------------------------------------------------- */

static const uint32_t sha_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2};

#define ROR32(x, n) ((x) >> (n) | (x) << (32 - (n)))

static void sha256_block(uint32_t h[8], const unsigned char *p)
{
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ROR32(w[i - 15], 7) ^ ROR32(w[i - 15], 18) ^ w[i - 15] >> 3;
        uint32_t s1 = ROR32(w[i - 2], 17) ^ ROR32(w[i - 2], 19) ^ w[i - 2] >> 10;
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = k + (ROR32(e, 6) ^ ROR32(e, 11) ^ ROR32(e, 25)) + ((e & f) ^ (~e & g)) +
                      sha_k[i] + w[i];
        uint32_t t2 = (ROR32(a, 2) ^ ROR32(a, 13) ^ ROR32(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        k = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += k;
}

int tern_file_sha256(const char *path, char hex[65])
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return tern_errorf(TERN_EIO, "%s: cannot open: %s", path, strerror(errno));
    uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                     0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    unsigned char buf[64 * 1024 + 128];
    uint64_t total = 0;
    size_t got;
    while ((got = fread(buf, 1, 64 * 1024, f)) == 64 * 1024) {
        for (size_t i = 0; i < got; i += 64)
            sha256_block(h, buf + i);
        total += got;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad)
        return tern_errorf(TERN_EIO, "%s: cannot read: %s", path, strerror(errno ? errno : EIO));
    total += got;
    /* the tail: 0x80, zeros, the bit length (big-endian), to whole blocks */
    size_t full = got / 64 * 64, rest = got - full;
    for (size_t i = 0; i < full; i += 64)
        sha256_block(h, buf + i);
    unsigned char *t = buf + full;
    t[rest++] = 0x80;
    size_t end = rest <= 56 ? 64 : 128;
    memset(t + rest, 0, end - rest);
    for (int i = 0; i < 8; i++)
        t[end - 1 - i] = (unsigned char)(total * 8 >> (8 * i));
    for (size_t i = 0; i < end; i += 64)
        sha256_block(h, t + i);
    for (int i = 0; i < 8; i++)
        snprintf(hex + 8 * i, 9, "%08x", h[i]);
    return TERN_OK;
}
