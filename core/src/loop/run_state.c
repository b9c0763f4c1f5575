/* run_state.c: checkpoints of a run (see run_state.h). */
#include "loop/run_state.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/errmsg.h"
#include "tern/support/atomic_file.h"

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

int tern_remove_tree(const char *path)
{
    return nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int tern_checkpoint_complete(const char *tmp, json_t *state, char *final, size_t n)
{
    size_t len = strlen(tmp);
    if (len < 5 || strcmp(tmp + len - 4, ".tmp") != 0 || len - 4 >= n)
        return tern_errorf(TERN_EINVAL, "%s: not a temporary checkpoint name", tmp);
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/state.json", tmp);
    if (json_dump_file(state, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER) != 0)
        return tern_errorf(TERN_EIO, "%s: cannot write the checkpoint state", path);
    memcpy(final, tmp, len - 4);
    final[len - 4] = '\0';
    struct stat st;
    char old[PATH_MAX + 32];
    if (stat(final, &st) == 0) {
        /* the same point saved again (a stop right after a resume): the new one wins */
        snprintf(old, sizeof old, "%s.old", final);
        tern_remove_tree(old);
        if (rename(final, old) != 0)
            return tern_errorf(TERN_EIO, "%s: cannot replace: %s", final, strerror(errno));
        if (rename(tmp, final) != 0)
            return tern_errorf(TERN_EIO, "%s: cannot rename to %s: %s", tmp, final,
                               strerror(errno));
        tern_remove_tree(old);
        return TERN_OK;
    }
    if (rename(tmp, final) != 0)
        return tern_errorf(TERN_EIO, "%s: cannot rename to %s: %s", tmp, final, strerror(errno));
    return TERN_OK;
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

int tern_jsonl_truncate(const char *path, int64_t sft_step, int64_t step)
{
    FILE *in = fopen(path, "r");
    if (!in)
        return errno == ENOENT ? TERN_OK
                               : tern_errorf(TERN_EIO, "%s: cannot read: %s", path,
                                             strerror(errno));
    tern_atomic_file a; /* PATH.tmp, renamed over PATH */
    FILE *out = NULL;
    if (tern_atomic_file_open(&a, path, NULL, 0) != 0 ||
        !(out = tern_atomic_file_stream(&a, NULL, 0))) {
        int e = errno;
        tern_atomic_file_abort(&a);
        fclose(in);
        return tern_errorf(TERN_EIO, "%s.tmp: cannot write: %s", path, strerror(e));
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, in)) > 0) {
        json_t *o = json_loadb(line, (size_t)len, 0, NULL);
        const char *stage = json_string_value(json_object_get(o, "stage"));
        json_int_t s = json_integer_value(json_object_get(o, "step"));
        int keep = !stage || (strcmp(stage, "sft") == 0 ? s <= sft_step
                              : strcmp(stage, "rl") == 0 ? s <= step : 1);
        json_decref(o);
        if (keep)
            fwrite(line, 1, (size_t)len, out);
    }
    free(line);
    fclose(in);
    if (tern_atomic_file_commit(&a, NULL, 0) != 0)
        return tern_errorf(TERN_EIO, "%s: cannot rewrite: %s", path, strerror(errno));
    return TERN_OK;
}
