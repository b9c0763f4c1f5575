/* run_setup.c: the run's extra model instances, task files and run directory
 * (see master_state.h); the checks before them are run_checks.c. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/append_file.h"
#include "base/errmsg.h"
#include "host/host_table.h"
#include "base/log.h"
#include "loop/master.h"
#include "loop/master_state.h"
#include "loop/ranks.h"
#include "loop/run_checks.h"
#include "reward/rewarder.h"
#include "loop/run_state.h"
#include "rundir/rundir.h"

/* ---- instances ------------------------------------------------------------- */

/* Another instance of the model plugin from the config's model section. */
static int make_model(tern_run *run, const tern_instance *model, const char *label,
                      tern_model *m)
{
    tern_ctx *ctx = tern_ctx_new(label, &run->session->config, model->group,
                                 model->entry->plugin->desc->settings, run->seed,
                                 run->session->metrics, run->session->trace);
    if (!ctx)
        return tern_errorf(TERN_ENOMEM, "out of memory");
    char what[96];
    snprintf(what, sizeof what, "%s: the model plugin failed to start a second instance", label);
    int rc = tern_model_make(m, model->entry->plugin->desc->ops, ctx, what);
    if (rc != TERN_OK)
        tern_ctx_free(ctx);
    else
        tern_model_name(m, tern_ctx_label(ctx), model->entry->name, model->entry->path,
                        model->entry->plugin->desc->abi_minor);
    return rc;
}

static void drop_model(tern_model *m)
{
    tern_ctx *ctx = m->made ? m->ctx : NULL;
    tern_model_unmake(m);
    tern_ctx_free(ctx);
}

int tern_run_make_models(tern_run *run)
{
    const tern_instance *model = tern_run_instance(run->session, "model");
    run->explorers = calloc(run->n_explorers, sizeof *run->explorers);
    if (!run->explorers)
        return tern_errorf(TERN_ENOMEM, "out of memory");
    /* on MPI ranks each rank makes its roles' instances: the master the
     * evaluator, the trainer the reference, an explorer rank its explorers */
    const tern_ranks *rk = run->ranks;
    int on_master = !rk || rk->role == TERN_RANK_MASTER;
    int on_trainer = !rk || rk->role == TERN_RANK_TRAINER;
    int rc = TERN_OK;
    for (uint32_t i = 0; rc == TERN_OK && i < run->n_explorers; i++) {
        if (rk && (rk->role != TERN_RANK_EXPLORER || tern_rank_of_explorer(rk, i) != rk->rank))
            continue;
        char label[32];
        snprintf(label, sizeof label, "explorer %u", i);
        rc = make_model(run, model, label, &run->explorers[i]);
    }
    if (rc == TERN_OK && run->eval.n && on_master)
        rc = make_model(run, model, "evaluator", &run->evaluator);
    if (rc == TERN_OK && run->reference_is_copy && on_trainer)
        rc = make_model(run, model, "reference", &run->reference);
    return rc;
}

/* The instances that wait for the run directory (a buffer's file kept in it)
 * start there, before anything in the directory changes; then the check a
 * started buffer gets (tern_run_check). */
static int start_in_run_dir(tern_run *run)
{
    int rc = tern_session_start_in_run_dir(run->session, run->dir);
    tern_instance *buf = tern_run_instance(run->session, "buffer");
    if (rc != TERN_OK || run->buffer_ops || !buf || !buf->created)
        return rc;
    run->buffer_ops = buf->entry->plugin->desc->ops;
    run->buffer = buf->state;
    return tern_run_check_buffer_empty(run);
}

/* The instances' notes (host->note: the compute paths they took) to
 * log.txt alone, one line each: made before log.txt opened, and shown on
 * stderr only at the debug level. summary.json has them too. */
static void log_notes(tern_run *run)
{
    json_t *notes = tern_metrics_notes(run->session->metrics);
    const char *who, *key;
    json_t *of, *v;
    json_object_foreach(notes, who, of) {
        json_object_foreach(of, key, v) {
            char line[400];
            snprintf(line, sizeof line, "%s: %s", key, json_string_value(v));
            tern_log_file_only(TERN_LOG_INFO, who, line);
        }
    }
    json_decref(notes);
    for (size_t i = 0; i < run->session->n_warnings; i++)
        tern_log_file_only(TERN_LOG_WARN, "plugins", run->session->warnings[i]);
}

int tern_run_open_dir(tern_run *run, master *ms, const tern_loop_options *o)
{
    tern_config *c = &run->session->config;
    const char *name = "run", *out_dir = "runs";
    config_lookup_string(&c->cfg, "run.name", &name);
    config_lookup_string(&c->cfg, "run.out_dir", &out_dir);
    int rc;
    if (o->resume) {
        snprintf(run->dir, sizeof run->dir, "%s/%s", out_dir, name);
        struct stat st;
        if (stat(run->dir, &st) != 0 || !S_ISDIR(st.st_mode))
            return tern_errorf(TERN_ECONFIG, "%s: no run directory to resume (run.out_dir = "
                               "\"%s\", run.name = \"%s\"): start the run without --resume",
                               run->dir, out_dir, name);
        /* a directory this process may not write is refused before anything
         * in it changes (the lock's process id would be its first write) */
        if ((rc = tern_run_check_writable(run->dir)) != TERN_OK)
            return rc;
        /* one run per directory: locked before anything in it changes */
        if ((rc = tern_rundir_lock(run->dir, &ms->lock_fd)) != TERN_OK ||
            (rc = start_in_run_dir(run)) != TERN_OK)
            return rc;
    } else {
        /* config.cfg shows the paths the waiting instances were given */
        if ((rc = tern_rundir_create(out_dir, name, run->dir, sizeof run->dir)) != TERN_OK ||
            (rc = tern_rundir_lock(run->dir, &ms->lock_fd)) != TERN_OK ||
            (rc = start_in_run_dir(run)) != TERN_OK ||
            (rc = tern_rundir_write_config(run->dir, c)) != TERN_OK)
            return rc;
    }
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/log.txt", run->dir);
    if ((rc = tern_log_open_file(path)) != TERN_OK ||
        (rc = tern_failure_log_open(&run->failures, run->dir, &run->rewards)) != TERN_OK)
        return rc;
    log_notes(run);
    if (o->resume) {
        /* what a killed run was writing; a checkpoint caught between its two
         * renames gets its name back before the newest one is chosen */
        tern_run_remove_leftovers(run->dir);
        rc = tern_run_resume_newest(run, ms);
        if (rc == TERN_ENOTFOUND) {
            /* stopped before its first checkpoint (killed in its first
             * steps): the run starts again, in its own directory, with what
             * a durable buffer kept of it */
            tern_logf(TERN_LOG_WARN, "run", "%s: no checkpoint yet (the run stopped before its "
                      "first one): starting it again from the beginning", run->dir);
            rc = TERN_OK;
        }
        if (rc != TERN_OK || (rc = tern_run_recover_buffer(run, ms)) != TERN_OK)
            return rc;
        /* the lines of what comes after the checkpoint are redone; from a
         * warm-up checkpoint that is all of RL (its evaluation at step 0 too) */
        int64_t sft = run->resume.rl_started ? run->set.sft_steps : run->resume.sft_step;
        int64_t step = run->resume.rl_started ? run->resume.step : -1;
        snprintf(path, sizeof path, "%s/metrics.jsonl", run->dir);
        if ((rc = tern_jsonl_truncate(path, sft, step)) != TERN_OK)
            return rc;
        snprintf(path, sizeof path, "%s/rollouts.jsonl", run->dir);
        if ((rc = tern_jsonl_truncate(path, sft, step)) != TERN_OK)
            return rc;
        snprintf(path, sizeof path, "%s/eval_responses.jsonl", run->dir);
        if ((rc = tern_jsonl_truncate(path, sft, step)) != TERN_OK)
            return rc;
    }
    FILE **files[] = {&ms->metrics, &ms->rollouts, &ms->eval_responses};
    const char *names[] = {"metrics.jsonl", "rollouts.jsonl", "eval_responses.jsonl"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", run->dir, names[i]);
        if (!(*files[i] = tern_append_open(path, names[i])))
            return TERN_EIO;
    }
    return TERN_OK;
}

/* A tasks file that cannot be opened: the loader's message ("PATH: cannot
 * open: why") with the config line that named it, the path as written, and
 * the absolute path tern tried, since a relative one is taken from the
 * config's folder (a config copied elsewhere loses its data). */
static void name_data_key(tern_run *run, const char *key, const char *path)
{
    tern_config *c = &run->session->config;
    config_setting_t *st = tern_config_lookup(config_root_setting(&c->cfg), key);
    const char *given = st ? config_setting_get_string(st) : NULL;
    char where[600], cwd[PATH_MAX], *abs = NULL;
    if (path[0] != '/' && getcwd(cwd, sizeof cwd) && asprintf(&abs, "%s/%s", cwd, path) < 0)
        abs = NULL;
    char *msg = strdup(tern_error_message());
    if (!msg) {
        free(abs);
        return;
    }
    tern_errorf(TERN_EIO, "%s: %s = \"%s\": %s (%s%s%sa relative path is taken from the "
                "config's folder, out_dir from the working directory: docs/config.md)",
                tern_config_where(c, st, where, sizeof where), key, given ? given : path, msg,
                abs ? "that is " : "", abs ? abs : "", abs ? "; " : "");
    free(msg);
    free(abs);
}

int tern_run_load_data(tern_run *run)
{
    int rc = tern_task_set_load(&run->train, run->set.train_path, run->set.skip_bad);
    if (rc == TERN_EIO && access(run->set.train_path, R_OK) != 0)
        name_data_key(run, "data.train", run->set.train_path);
    if (rc == TERN_OK && run->set.eval_path) {
        rc = tern_task_set_load(&run->eval, run->set.eval_path, run->set.skip_bad);
        if (rc == TERN_EIO && access(run->set.eval_path, R_OK) != 0)
            name_data_key(run, "data.eval", run->set.eval_path);
    }
    if (rc == TERN_EINVAL || rc == TERN_EIO || rc == TERN_ENOTFOUND)
        return TERN_ECONFIG; /* bad input the user fixes: the message says where */
    return rc;
}

void tern_run_drop_models(tern_run *run)
{
    for (uint32_t i = 0; run->explorers && i < run->n_explorers; i++)
        drop_model(&run->explorers[i]);
    free(run->explorers);
    run->explorers = NULL;
    drop_model(&run->evaluator);
    if (run->reference_is_copy)
        drop_model(&run->reference);
}
