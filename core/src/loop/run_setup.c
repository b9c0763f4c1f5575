/* run_setup.c: the run's plugins, extra model instances, task files and run
 * directory (see master_state.h). */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/errmsg.h"
#include "host/host_table.h"
#include "base/log.h"
#include "loop/master.h"
#include "loop/master_state.h"
#include "reward/rewarder.h"
#include "loop/run_state.h"
#include "rundir/rundir.h"

/* ---- instances ------------------------------------------------------------- */

static tern_instance *find_instance(tern_session *s, const char *label)
{
    for (size_t i = 0; i < s->n_inst; i++)
        if (strcmp(s->inst[i].label, label) == 0)
            return &s->inst[i];
    return NULL;
}

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
    return rc;
}

static void drop_model(tern_model *m)
{
    tern_ctx *ctx = m->made ? m->ctx : NULL;
    tern_model_unmake(m);
    tern_ctx_free(ctx);
}

int tern_run_setup_plugins(tern_run *run, tern_diag *d)
{
    tern_session *s = run->session;
    tern_instance *model = find_instance(s, "model"), *ref = find_instance(s, "reference"),
                  *buf = find_instance(s, "buffer"), *sync = find_instance(s, "sync");
    const char *fix = " (etc/quickstart.cfg shows a complete run)";
    if (!model || !model->created)
        tern_diag_addf(d, "%s: a run needs a model section: model = { plugin = \"transformer\"; "
                       "init = { preset = \"tiny\"; }; };%s", s->config.path, fix);
    if (!buf || !buf->created)
        tern_diag_addf(d, "%s: a run needs a buffer section: buffer = { plugin = \"fifo\"; };%s",
                       s->config.path, fix);
    if (!sync || !sync->created)
        tern_diag_addf(d, "%s: a run needs a sync section: sync = { plugin = \"synchronous\"; "
                       "};%s", s->config.path, fix);
    if (d->n)
        return TERN_ECONFIG;
    run->policy = (tern_model){.ops = model->entry->plugin->desc->ops, .state = model->state};
    run->buffer_ops = buf->entry->plugin->desc->ops;
    run->buffer = buf->state;
    run->sync_ops = sync->entry->plugin->desc->ops;
    run->sync = sync->state;

    char where[600];
    if (buf->entry->plugin->desc->caps & TERN_CAP_REPLAY) {
        /* the trainer trains whole explorer batches, in order or as they
         * arrive; a replay buffer hands records out again and in its own order */
        tern_diag_addf(d, "%s: buffer: plugin '%s' is a replay buffer, which the learning loop "
                       "cannot train from yet (it trains each explorer batch once, whole): use "
                       "plugin = \"fifo\" or \"sqlite\" (docs/buffers.md)",
                       tern_config_where(&s->config, buf->group, where, sizeof where),
                       buf->entry->name);
        return TERN_ECONFIG;
    }
    tern_buffer_stats bst = {.size = sizeof bst};
    if (run->buffer_ops->stats(run->buffer, &bst) == TERN_OK && bst.held > 0) {
        /* a durable buffer with experiences of an earlier run: they belong to
         * batches this master did not deal, which the trainer cannot place */
        tern_diag_addf(d, "%s: buffer: plugin '%s' already holds %llu experience%s from an "
                       "earlier run; a run cannot train on them yet: remove the buffer's file "
                       "(or point its path elsewhere) to start",
                       tern_config_where(&s->config, buf->group, where, sizeof where),
                       buf->entry->name, (unsigned long long)bst.held, bst.held == 1 ? "" : "s");
        return TERN_ECONFIG;
    }

    int rc = tern_model_special(&run->policy, "model: the end-of-sequence token", &run->special);
    if (rc == TERN_EUNSUPPORTED) {
        tern_diag_addf(d, "model: plugin '%s' does not tell its end-of-sequence token (the "
                       "special_tokens op of ABI 1.1), so a run cannot end responses: add the op "
                       "and rebuild the plugin against the ABI 1.1 SDK (docs/plugins.md)",
                       model->entry->name);
        return TERN_ECONFIG;
    }
    if (rc != TERN_OK || run->special.eos < 0)
        return tern_errorf(TERN_ERR, "model: plugin '%s' gives no end-of-sequence token: %s",
                           model->entry->name, rc != TERN_OK ? tern_error_message() : "eos is -1");

    tern_sync_info info = {.size = sizeof info};
    tern_error_clear();
    if (run->sync_ops->describe(run->sync, &info) != TERN_OK)
        return tern_errorf(TERN_ERR, "sync: describe failed: %s", tern_error_message());
    if (info.explorers < 1 || info.explorers > 64)
        tern_diag_addf(d, "%s: sync: plugin '%s' asks for %u explorers; tern runs 1 to 64",
                       tern_config_where(&s->config, sync->group, where, sizeof where),
                       sync->entry->name, info.explorers);
    if (!info.transport ||
        (strcmp(info.transport, "memory") != 0 && strcmp(info.transport, "checkpoint") != 0))
        tern_diag_addf(d, "%s: sync: weight transport \"%s\" is not available in this tern: "
                       "use method = \"memory\" or \"checkpoint\" (NCCL needs the CUDA build)",
                       tern_config_where(&s->config, sync->group, where, sizeof where),
                       info.transport ? info.transport : "(none)");
    else
        snprintf(run->transport, sizeof run->transport, "%s", info.transport);
    run->max_staleness = info.max_staleness;
    /* the first plan tells the kind of schedule: fixed (wait) or asynchronous */
    tern_sync_plan plan = {.size = sizeof plan};
    tern_error_clear();
    if (run->sync_ops->explorer_plan(run->sync, 0, 0, &plan) != TERN_OK)
        return tern_errorf(TERN_ERR, "sync: explorer_plan failed: %s", tern_error_message());
    run->async = plan.mode == TERN_SYNC_USE_NEWEST;

    /* the reference: a frozen copy of the policy (same_as), its own plugin, or none */
    int want_kl = run->set.loss.kl != TERN_KL_NONE;
    if (ref && ref->created) {
        run->reference = (tern_model){.ops = ref->entry->plugin->desc->ops, .state = ref->state};
    } else if (ref && want_kl) {
        run->reference_is_copy = 1;
    } else if (!ref && run->set.loss.kl_coef > 0) {
        config_setting_t *kl = tern_config_lookup(config_root_setting(&s->config.cfg),
                                                  "algorithm.kl.coef");
        tern_diag_addf(d, "%s: algorithm.kl.coef = %g needs a reference model: add reference "
                       "= { same_as = \"model\"; }; (or set coef = 0)",
                       tern_config_where(&s->config, kl, where, sizeof where),
                       run->set.loss.kl_coef);
    }
    if (d->n)
        return TERN_ECONFIG;
    rc = TERN_OK;
    run->explorers = calloc(info.explorers, sizeof *run->explorers);
    if (!run->explorers)
        return tern_errorf(TERN_ENOMEM, "out of memory");
    run->n_explorers = info.explorers;
    for (uint32_t i = 0; rc == TERN_OK && i < info.explorers; i++) {
        char label[32];
        snprintf(label, sizeof label, "explorer %u", i);
        rc = make_model(run, model, label, &run->explorers[i]);
    }
    if (rc == TERN_OK && run->eval.n)
        rc = make_model(run, model, "evaluator", &run->evaluator);
    if (rc == TERN_OK && run->reference_is_copy)
        rc = make_model(run, model, "reference", &run->reference);
    if (rc == TERN_OK)
        rc = tern_rewarder_open(&run->rewards, run->session);
    return rc;
}

int tern_run_open_dir(tern_run *run, master *ms, const tern_loop_options *o)
{
    tern_config *c = &run->session->config;
    const char *name = "run", *out_dir = "runs";
    config_lookup_string(&c->cfg, "run.name", &name);
    config_lookup_string(&c->cfg, "run.out_dir", &out_dir);
    int rc;
    char ckpt[PATH_MAX + 64];
    if (o->resume) {
        snprintf(run->dir, sizeof run->dir, "%s/%s", out_dir, name);
        struct stat st;
        if (stat(run->dir, &st) != 0 || !S_ISDIR(st.st_mode))
            return tern_errorf(TERN_ECONFIG, "%s: no run directory to resume (run.out_dir = "
                               "\"%s\", run.name = \"%s\"): start the run without --resume",
                               run->dir, out_dir, name);
        /* one run per directory: locked before anything in it changes */
        if ((rc = tern_rundir_lock(run->dir, &ms->lock_fd)) != TERN_OK)
            return rc;
    } else {
        if ((rc = tern_rundir_create(out_dir, name, run->dir, sizeof run->dir)) != TERN_OK ||
            (rc = tern_rundir_lock(run->dir, &ms->lock_fd)) != TERN_OK ||
            (rc = tern_rundir_write_config(run->dir, c)) != TERN_OK)
            return rc;
    }
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/log.txt", run->dir);
    if ((rc = tern_log_open_file(path)) != TERN_OK)
        return rc;
    if (o->resume) {
        /* what a killed run was writing; a checkpoint caught between its two
         * renames gets its name back before the newest one is chosen */
        tern_run_remove_leftovers(run->dir);
        if ((rc = tern_checkpoint_newest(run->dir, ckpt, sizeof ckpt)) != TERN_OK)
            return rc == TERN_ENOTFOUND ? TERN_ECONFIG : rc;
        /* a damaged checkpoint is the user's to remove: the message says which */
        if ((rc = tern_run_load_checkpoint(run, ms, ckpt)) != TERN_OK)
            return rc == TERN_EINVAL ? TERN_ECONFIG : rc;
        int64_t sft = run->resume.rl_started ? run->set.sft_steps : run->resume.sft_step;
        snprintf(path, sizeof path, "%s/metrics.jsonl", run->dir);
        if ((rc = tern_jsonl_truncate(path, sft, run->resume.step)) != TERN_OK)
            return rc;
        snprintf(path, sizeof path, "%s/rollouts.jsonl", run->dir);
        if ((rc = tern_jsonl_truncate(path, sft, run->resume.step)) != TERN_OK)
            return rc;
    }
    snprintf(path, sizeof path, "%s/metrics.jsonl", run->dir);
    ms->metrics = fopen(path, "a");
    snprintf(path, sizeof path, "%s/rollouts.jsonl", run->dir);
    ms->rollouts = fopen(path, "a");
    if (!ms->metrics || !ms->rollouts)
        return tern_errorf(TERN_EIO, "%s: cannot write: %s", path, strerror(errno));
    return TERN_OK;
}

int tern_run_load_data(tern_run *run)
{
    int rc = tern_task_set_load(&run->train, run->set.train_path, run->set.skip_bad);
    if (rc == TERN_OK && run->set.eval_path)
        rc = tern_task_set_load(&run->eval, run->set.eval_path, run->set.skip_bad);
    /* a resume checks that the files are those its checkpoint was made with */
    if (rc == TERN_OK)
        rc = tern_file_sha256(run->set.train_path, run->train_sha256);
    if (rc == TERN_OK && run->set.eval_path)
        rc = tern_file_sha256(run->set.eval_path, run->eval_sha256);
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
