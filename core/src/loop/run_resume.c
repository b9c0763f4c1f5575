/* run_resume.c: what --resume does before it loads anything: the run
 * directory must be writable, and the checkpoint to resume from is the newest
 * one that loads (see run_state.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/errmsg.h"
#include "base/log.h"
#include "loop/master_state.h"
#include "loop/run_state.h"
#include "tern/support/text_buf.h"

int tern_run_check_writable(const char *dir)
{
    /* metrics.jsonl and rollouts.jsonl are rewritten under a new name, so
     * the directory's permission is theirs */
    static const char *const names[] = {"", "checkpoints", "lock", "log.txt"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char path[PATH_MAX + 32];
        snprintf(path, sizeof path, "%s%s%s", dir, *names[i] ? "/" : "", names[i]);
        if (access(path, W_OK) == 0 || errno == ENOENT)
            continue;
        int e = errno;
        char fix[PATH_MAX + 96];
        if (e == EROFS)
            snprintf(fix, sizeof fix, "it is on a read-only file system: mount it writable");
        else
            snprintf(fix, sizeof fix, "give this user write permission (chmod -R u+w %s, or "
                     "run as the user who owns it)", dir);
        return tern_errorf(TERN_ECONFIG, "%s: cannot resume: this process cannot write %s (%s), "
                           "and a resume writes the run's lock, log.txt, metrics.jsonl, "
                           "rollouts.jsonl and new checkpoints there; nothing was changed: %s, "
                           "or copy the run directory to a writable place and resume the copy "
                           "(-o run.out_dir=PATH)", dir, path, strerror(e), fix);
    }
    return TERN_OK;
}

int tern_run_resume_newest(tern_run *run, struct master *ms)
{
    char **ck = NULL;
    size_t n = 0;
    int rc = tern_checkpoint_list(run->dir, &ck, &n);
    if (rc != TERN_OK)
        return rc; /* TERN_ENOTFOUND: none at all, the run starts again */
    tern_text_buf tried = {0};
    size_t used = 0;
    for (; used < n; used++) {
        rc = tern_run_load_checkpoint(run, ms, ck[used]);
        if (rc != TERN_EINVAL)
            break; /* loaded, or refused for a reason of the run, not of this checkpoint */
        size_t at = tried.n + 3;
        tern_text_puts(&tried, "\n  ");
        tern_text_puts(&tried, tern_error_message());
        tern_logf(TERN_LOG_WARN, "run", "%s: cannot resume from this checkpoint: %s%s", ck[used],
                  tried.oom ? "(out of memory)" : tried.p + at,
                  used + 1 < n ? "; trying the checkpoint before it" : "");
    }
    if (used == n) {
        rc = tern_errorf(TERN_ECONFIG, "%s/checkpoints: no checkpoint can be resumed from; tried, "
                         "newest first:%s\nthey are left as they are. When all fail alike, the "
                         "config may not be the one they were made with (the model section): "
                         "resume with that one; else they are damaged: repair or remove them, or "
                         "start a new run without --resume (it makes a new run directory)",
                         run->dir, tried.oom ? " (out of memory)" : tried.p);
    } else if (rc == TERN_OK && used > 0) {
        for (size_t i = 0; i < used; i++) {
            char aside[PATH_MAX + 96];
            if (tern_checkpoint_set_aside(ck[i], aside, sizeof aside) == TERN_OK)
                tern_logf(TERN_LOG_WARN, "run", "%s: set aside as %s (kept, for a look inside; "
                          "remove it when done), so that no later resume tries it again",
                          ck[i], aside);
            else
                tern_logf(TERN_LOG_WARN, "run", "%s; a later resume tries it again",
                          tern_error_message());
        }
        tern_logf(TERN_LOG_WARN, "run", "resuming from %s, not from the newest checkpoint %s, "
                  "which is damaged: the steps after it are done again", ck[used], ck[0]);
    }
    free(tried.p);
    tern_checkpoint_list_free(ck, n);
    return rc;
}

int tern_run_recover_buffer(tern_run *run, struct master *ms)
{
    tern_ledger *l = &ms->ledger;
    const tern_buffer_ops *ops = run->buffer_ops;
    if (!ops || !TERN_HAS(ops, recover) || !ops->commit || !ops->recover) {
        /* the buffer's groups died with the process: the ledger deals them again */
        tern_ledger_committed(l);
        return TERN_OK;
    }
    /* the groups the checkpoint's steps consumed: forgotten now if the run
     * was killed before it told the buffer */
    tern_error_clear();
    int rc = l->n_pending ? ops->commit(run->buffer, l->pending, l->n_pending) : TERN_OK;
    if (rc != TERN_OK) {
        const char *m = tern_error_message();
        return tern_errorf(rc, "buffer: cannot commit the %zu groups the checkpoint consumed: %s",
                           l->n_pending, *m ? m : "the plugin gave no reason");
    }
    size_t committed = l->n_pending;
    tern_ledger_committed(l);
    /* the groups handed out after the checkpoint are not in its weights:
     * waiting again, in their places; the others are trained from here */
    size_t cap = 0, n = 0;
    uint64_t *ids = NULL;
    for (;;) {
        tern_error_clear();
        rc = ops->recover(run->buffer, ids, cap, &n);
        if (rc != TERN_OK) {
            free(ids);
            const char *m = tern_error_message();
            return tern_errorf(rc, "buffer: cannot take back the groups of the run that "
                               "stopped: %s", *m ? m : "the plugin gave no reason");
        }
        if (n <= cap)
            break;
        free(ids);
        cap = n + 64;
        if (!(ids = malloc(cap * sizeof *ids)))
            return tern_errorf(TERN_ENOMEM, "out of memory");
    }
    size_t stray = 0;
    for (size_t i = 0; i < n; i++)
        stray += tern_ledger_consumed(l, ids[i]);
    if (stray) {
        free(ids);
        return tern_errorf(TERN_ECONFIG, "buffer: holds %zu group%s the checkpoint says were "
                           "trained on already: its file is not this run's (or was copied back "
                           "from an older state); resuming would train them twice: give the run "
                           "its own buffer.path, or remove the file to have the run deal them "
                           "again", stray, stray == 1 ? "" : "s");
    }
    tern_ledger_set_held(l, ids, n);
    tern_logf(TERN_LOG_INFO, "run", "buffer: %zu group%s from before the stop to train, %zu "
              "consumed by the checkpoint's steps forgotten", n, n == 1 ? "" : "s", committed);
    return TERN_OK;
}
