/* run_figures.c: the master's figures in each checkpoint's state.json and in
 * summary.json, and reading a checkpoint back on resume (see
 * master_state.h). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"
#include "base/log.h"
#include "loop/master_state.h"
#include "loop/run_state.h"
#include "rundir/trace.h"
#include "tern/support/atomic_file.h"

/* ---- resume ---------------------------------------------------------------- */

/* A finite figure as a JSON number, anything else (unknown: NAN) as null. */
static json_t *real_or_null(double x) { return isfinite(x) ? json_real(x) : json_null(); }

static double number_or_nan(json_t *j) { return json_is_number(j) ? json_number_value(j) : NAN; }

static int state_mismatch(json_t *st, const char *key, long long now, const char *setting,
                          const char *ckpt)
{
    json_t *v = json_object_get(st, key);
    if (!json_is_integer(v) || json_integer_value(v) == now)
        return TERN_OK;
    return tern_errorf(TERN_ECONFIG, "%s: the checkpoint was made with %s = %lld, the config "
                       "now says %lld: resuming would skip or repeat tasks; resume with the "
                       "original setting (-o %s=%lld) or start a new run",
                       ckpt, setting, (long long)json_integer_value(v), now, setting,
                       (long long)json_integer_value(v));
}

/* The task file `path` (the config's `setting`) must have the bytes the
 * checkpoint's run read (its hash under `key`): the data position means
 * tasks of that file, and the eval figures carried on mean its tasks. A
 * checkpoint of a tern that kept no hash is taken on trust (*unchecked). */
static int tasks_mismatch(json_t *st, const char *key, const char *now, const char *path,
                          const char *setting, const char *ckpt, int *unchecked)
{
    const char *was = json_string_value(json_object_get(st, key));
    if (!path || !*now) /* no eval file now: nothing carried on to compare */
        return TERN_OK;
    if (!was) {
        if (!json_object_get(st, key))
            *unchecked = 1;
        return TERN_OK;
    }
    if (strcmp(was, now) == 0)
        return TERN_OK;
    return tern_errorf(TERN_ECONFIG, "%s: %s (%s) is not the file the checkpoint was made with: "
                       "its content differs (sha256 %.12s..., the checkpoint's %.12s...), so "
                       "resuming would deal other tasks than the run was dealt; give back the "
                       "original file (or point %s at a copy of it with -o %s=PATH), or start a "
                       "new run without --resume", ckpt, setting, path, now, was, setting,
                       setting);
}

int tern_run_load_policy(tern_run *run, const char *ckpt)
{
    char path[PATH_MAX + 160], what[PATH_MAX + 200];
    snprintf(path, sizeof path, "%s/policy", ckpt);
    snprintf(what, sizeof what, "%s: cannot load the policy", path);
    return tern_model_load(&run->policy, what, path, 1);
}

int tern_run_load_reference(tern_run *run)
{
    if (!run->reference_is_copy || !run->resume.rl_started)
        return TERN_OK; /* a reference of its own loads as it was made */
    char path[PATH_MAX + 160], what[PATH_MAX + 200];
    snprintf(path, sizeof path, "%s/checkpoints/reference", run->dir);
    snprintf(what, sizeof what, "%s: cannot load the reference", path);
    return tern_model_load(&run->reference, what, path, 0);
}

int tern_run_load_checkpoint(tern_run *run, master *ms, const char *ckpt)
{
    json_t *st = NULL;
    int rc = tern_checkpoint_read_state(ckpt, &st);
    if (rc != TERN_OK)
        return rc;
    if ((rc = state_mismatch(st, "seed", (long long)run->seed, "run.seed", ckpt)) ||
        (rc = state_mismatch(st, "batch_tasks", run->set.batch_tasks, "explorer.batch_tasks",
                             ckpt)) ||
        (rc = state_mismatch(st, "group_size", run->set.group_size, "explorer.group_size",
                             ckpt)) ||
        (rc = state_mismatch(st, "sft_batch_tasks", run->set.sft_batch_tasks,
                             "trainer.sft.batch_tasks", ckpt)) ||
        (rc = state_mismatch(st, "train_tasks", (long long)run->train.n, "data.train (tasks)",
                             ckpt)) ||
        (rc = state_mismatch(st, "shuffle", run->set.shuffle, "data.shuffle", ckpt))) {
        json_decref(st);
        return rc;
    }
    int unchecked = 0;
    if ((rc = tasks_mismatch(st, "train_sha256", run->train.sha256, run->set.train_path,
                             "data.train", ckpt, &unchecked)) ||
        (rc = tasks_mismatch(st, "eval_sha256", run->eval.sha256, run->set.eval_path,
                             "data.eval", ckpt, &unchecked))) {
        json_decref(st);
        return rc;
    }
    if (unchecked)
        tern_logf(TERN_LOG_WARN, "run", "%s: the checkpoint records no hash of its task files (an "
                  "older tern made it): resuming without checking that data.train%s %s the "
                  "file%s it was made with", ckpt, run->set.eval_path ? " and data.eval" : "",
                  run->set.eval_path ? "are" : "is", run->set.eval_path ? "s" : "");
    tern_resume_point *r = &run->resume;
    r->step = json_integer_value(json_object_get(st, "step"));
    r->sft_step = json_integer_value(json_object_get(st, "sft_step"));
    r->rl_started = json_is_true(json_object_get(st, "rl_started"));
    if (r->rl_started && r->sft_step < run->set.sft_steps)
        r->sft_step = run->set.sft_steps; /* the warm-up is over */
    if (r->step > run->set.steps || (!r->rl_started && r->sft_step > run->set.sft_steps)) {
        json_decref(st);
        return tern_errorf(TERN_ECONFIG, "%s: the checkpoint is at step %lld (warm-up %lld) but "
                           "the config runs %lld steps (warm-up %lld): raise trainer.steps to "
                           "continue", ckpt, (long long)r->step, (long long)r->sft_step,
                           (long long)run->set.steps, (long long)run->set.sft_steps);
    }
    /* which groups the checkpoint's steps consumed: a resume deals the rest
     * (a checkpoint of the warm-up, or of a tern before the ledger, has
     * consumed batch t at step t, as a fixed schedule does) */
    tern_ledger ledger;
    tern_ledger_init(&ledger, run->set.batch_tasks);
    if ((rc = tern_ledger_from_json(&ledger, r->rl_started ? json_object_get(st, "ledger")
                                                           : NULL,
                                    r->rl_started ? r->step : 0, ckpt)) != TERN_OK) {
        tern_ledger_free(&ledger);
        json_decref(st);
        return rc; /* TERN_EINVAL: damaged, the resume tries the one before */
    }
    /* the policy before the figures: a checkpoint whose model does not load
     * leaves *ms as it was, for the resume to try the one before */
    if ((rc = tern_run_load_policy(run, ckpt)) != TERN_OK) {
        tern_ledger_free(&ledger);
        json_decref(st);
        /* files missing, cut short or garbled: the checkpoint is damaged */
        return rc == TERN_EIO || rc == TERN_ENOTFOUND ? TERN_EINVAL : rc;
    }
    tern_ledger_free(&ms->ledger);
    ms->ledger = ledger;
    json_t *ab = json_object_get(st, "accuracy_before_rl");
    ms->accuracy_before = json_is_number(ab) ? json_number_value(ab) : -1;
    ms->eval_reward_before = number_or_nan(json_object_get(st, "eval_reward_before_rl"));
    ms->eval_reward_after = number_or_nan(json_object_get(st, "eval_reward_after_rl"));
    ms->eval_before = json_incref(json_object_get(st, "eval_before_rl"));
    r->wall_seconds = json_number_value(json_object_get(st, "wall_seconds"));
    ms->rollout_tokens = json_number_value(json_object_get(st, "rollout_tokens"));
    ms->rollout_seconds = json_number_value(json_object_get(st, "rollout_seconds"));
    ms->train_tokens = json_number_value(json_object_get(st, "train_tokens"));
    ms->train_seconds = json_number_value(json_object_get(st, "train_seconds"));
    json_t *aa = json_object_get(st, "accuracy_after_rl");
    ms->accuracy_after = json_is_number(aa) ? json_number_value(aa) : -1;
    if (json_is_object(json_object_get(st, "eval_after_rl")))
        ms->eval_after = json_incref(json_object_get(st, "eval_after_rl"));
    ms->reward_last = json_number_value(json_object_get(st, "reward_last"));
    json_t *rf = json_object_get(st, "reward_first");
    if (json_is_number(rf)) {
        ms->reward_first = json_number_value(rf);
        ms->have_reward_first = 1;
    }
    json_decref(st);

    /* (on MPI ranks the master has no reference: the trainer rank loads it) */
    if (run->reference.ops && (rc = tern_run_load_reference(run)) != TERN_OK)
        /* one reference for every checkpoint: not this checkpoint's damage */
        return rc == TERN_EINVAL || rc == TERN_EIO || rc == TERN_ENOTFOUND ? TERN_ECONFIG : rc;
    ms->steps_done = r->step;
    ms->sft_done = r->sft_step;
    snprintf(r->checkpoint, sizeof r->checkpoint, "%s", ckpt);
    /* until this invocation writes one, a stop resumes from this one (not
     * "from the start") */
    snprintf(ms->last_checkpoint, sizeof ms->last_checkpoint, "%s", ckpt);
    tern_logf(TERN_LOG_INFO, "run", "resuming from %s: %lld RL steps and %lld warm-up steps done",
              ckpt, (long long)r->step, (long long)r->sft_step);
    return TERN_OK;
}

static json_t *state_json(const tern_run *run, const master *ms, int64_t sft_step, int64_t step,
                          int rl_started)
{
    json_t *st = json_pack("{s:i,s:s,s:I,s:I,s:b,s:I,s:I,s:I,s:I,s:I,s:b,s:I}", "format", 1,
                           "stage", rl_started ? "rl" : "sft", "step", (json_int_t)step,
                           "sft_step", (json_int_t)sft_step, "rl_started", rl_started, "seed",
                           (json_int_t)run->seed, "batch_tasks",
                           (json_int_t)run->set.batch_tasks, "group_size",
                           (json_int_t)run->set.group_size, "sft_batch_tasks",
                           (json_int_t)run->set.sft_batch_tasks, "train_tasks",
                           (json_int_t)run->train.n, "shuffle", run->set.shuffle,
                           "data_position", (json_int_t)(ms->ledger.from *
                                                         run->set.batch_tasks));
    if (!st)
        return NULL;
    /* the groups consumed, and those a durable buffer forgets once this
     * checkpoint is durable (docs/run.md "Exactly once") */
    json_t *ledger = tern_ledger_to_json(&ms->ledger);
    if (!ledger || json_object_set_new(st, "ledger", ledger) != 0) {
        json_decref(st);
        return NULL;
    }
    /* which files the position and the eval figures are of (checked on resume) */
    json_object_set_new(st, "train_sha256", json_string(run->train.sha256));
    json_object_set_new(st, "eval_sha256",
                        run->eval.sha256[0] ? json_string(run->eval.sha256) : json_null());
    json_object_set_new(st, "accuracy_before_rl",
                        ms->accuracy_before >= 0 ? json_real(ms->accuracy_before) : json_null());
    json_object_set(st, "eval_before_rl", ms->eval_before ? ms->eval_before : json_null());
    json_object_set_new(st, "eval_reward_before_rl", real_or_null(ms->eval_reward_before));
    json_object_set_new(st, "eval_reward_after_rl", real_or_null(ms->eval_reward_after));
    json_object_set_new(st, "wall_seconds",
                        json_real(run->resume.wall_seconds + tern_run_now() - ms->t_start));
    json_object_set_new(st, "rollout_tokens", json_real(ms->rollout_tokens));
    json_object_set_new(st, "rollout_seconds", json_real(ms->rollout_seconds));
    json_object_set_new(st, "train_tokens", json_real(ms->train_tokens));
    json_object_set_new(st, "train_seconds", json_real(ms->train_seconds));
    if (ms->have_reward_first)
        json_object_set_new(st, "reward_first", json_real(ms->reward_first));
    if (step > 0)
        json_object_set_new(st, "reward_last", json_real(ms->reward_last));
    json_object_set_new(st, "accuracy_after_rl",
                        ms->accuracy_after >= 0 ? json_real(ms->accuracy_after) : json_null());
    json_object_set(st, "eval_after_rl", ms->eval_after ? ms->eval_after : json_null());
    return st;
}

/* trainer.keep_checkpoints: remove the step and warm-up checkpoints older
 * than the newest N, now that a new one is complete (the reference stays,
 * and so do the ones set aside as damaged). A removal that fails is a
 * warning: the disk keeps more than asked, the run goes on. */
static void prune_checkpoints(tern_run *run)
{
    char **ck = NULL;
    size_t n = 0;
    if (tern_checkpoint_list(run->dir, &ck, &n) != TERN_OK)
        return;
    for (size_t i = (size_t)run->set.keep_checkpoints; i < n; i++) {
        if (tern_remove_tree(ck[i]) == 0)
            tern_logf(TERN_LOG_INFO, "run", "removed %s (trainer.keep_checkpoints = %lld)", ck[i],
                      (long long)run->set.keep_checkpoints);
        else
            tern_logf(TERN_LOG_WARN, "run", "%s: cannot remove it (trainer.keep_checkpoints = "
                      "%lld): %s; it stays", ck[i], (long long)run->set.keep_checkpoints,
                      strerror(errno));
    }
    tern_checkpoint_list_free(ck, n);
}

int tern_run_complete_checkpoint(tern_run *run, master *ms, const char *tmp, int64_t sft_step,
                               int64_t step, int rl_started)
{
    json_t *st = state_json(run, ms, sft_step, step, rl_started);
    if (!st)
        return tern_errorf(TERN_ENOMEM, "out of memory");
    uint64_t span = tern_trace_begin(run->session->trace, "checkpoint");
    int rc = tern_checkpoint_complete(tmp, st, ms->last_checkpoint, sizeof ms->last_checkpoint);
    tern_trace_end(run->session->trace, span, NULL);
    json_decref(st);
    if (rc == TERN_OK)
        tern_logf(TERN_LOG_INFO, "run", "checkpoint %s", ms->last_checkpoint);
    if (rc == TERN_OK && run->set.keep_checkpoints > 0)
        prune_checkpoints(run);
    return rc;
}

int tern_run_write_summary(tern_run *run, master *ms, int interrupted)
{
    double wall = run->resume.wall_seconds + tern_run_now() - ms->t_start;
    json_t *o = json_object();
    if (!o)
        return tern_errorf(TERN_ENOMEM, "out of memory");
    const char *name = "run";
    config_lookup_string(&run->session->config.cfg, "run.name", &name);
    json_object_set_new(o, "name", json_string(name));
    json_object_set_new(o, "finished", json_boolean(!interrupted));
    json_object_set_new(o, "steps", json_integer(ms->steps_done));
    json_object_set_new(o, "steps_planned", json_integer(run->set.steps));
    json_object_set_new(o, "sft_steps", json_integer(ms->sft_done));
    json_object_set_new(o, "accuracy_before_rl",
                        ms->accuracy_before >= 0 ? json_real(ms->accuracy_before) : json_null());
    json_object_set_new(o, "accuracy_after_rl",
                        ms->accuracy_after >= 0 ? json_real(ms->accuracy_after) : json_null());
    json_object_set_new(o, "accuracy_gain",
                        ms->accuracy_before >= 0 && ms->accuracy_after >= 0
                            ? json_real(ms->accuracy_after - ms->accuracy_before)
                            : json_null());
    json_object_set(o, "eval_before_rl", ms->eval_before ? ms->eval_before : json_null());
    json_object_set(o, "eval_after_rl", ms->eval_after ? ms->eval_after : json_null());
    json_object_set_new(o, "eval_reward_before_rl", real_or_null(ms->eval_reward_before));
    json_object_set_new(o, "eval_reward_after_rl", real_or_null(ms->eval_reward_after));
    json_object_set_new(o, "eval_reward_gain",
                        real_or_null(ms->eval_reward_after - ms->eval_reward_before));
    size_t ne = run->eval.n;
    if (run->set.eval_limit > 0 && (size_t)run->set.eval_limit < ne)
        ne = (size_t)run->set.eval_limit;
    json_object_set_new(o, "eval_tasks", json_integer((json_int_t)ne));
    json_object_set_new(o, "reward_first_step",
                        ms->have_reward_first ? json_real(ms->reward_first) : json_null());
    json_object_set_new(o, "reward_last_step",
                        ms->steps_done > 0 ? json_real(ms->reward_last) : json_null());
    json_object_set_new(o, "wall_seconds", json_real(wall));
    json_object_set_new(o, "rollout_tokens", json_real(ms->rollout_tokens));
    json_object_set_new(o, "rollout_tokens_per_s",
                        json_real(ms->rollout_seconds > 0 ? ms->rollout_tokens / ms->rollout_seconds
                                                          : 0));
    json_object_set_new(o, "train_tokens", json_real(ms->train_tokens));
    json_object_set_new(o, "train_tokens_per_s",
                        json_real(ms->train_seconds > 0 ? ms->train_tokens / ms->train_seconds
                                                        : 0));
    json_object_set_new(o, "checkpoint",
                        ms->last_checkpoint[0] ? json_string(ms->last_checkpoint) : json_null());
    if (run->set.filter_groups) {
        json_object_set_new(o, "filtered_groups", json_integer((json_int_t)ms->filter.filtered));
        json_object_set_new(o, "kept_equal_groups",
                            json_integer((json_int_t)ms->filter.kept_equal));
    }
    /* the compute paths the instances took (host->note): why two machines'
     * figures may differ */
    json_t *notes = tern_metrics_notes(run->session->metrics);
    json_object_set_new(o, "notes", notes ? notes : json_object());
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/summary.json", run->dir);
    int rc = TERN_OK;
    tern_atomic_file a; /* summary.json.tmp, renamed over summary.json */
    FILE *f = NULL;
    char err[PATH_MAX + 256] = "";
    errno = 0;
    if (tern_atomic_file_open(&a, path, err, sizeof err) != 0 ||
        !(f = tern_atomic_file_stream(&a, err, sizeof err)) ||
        json_dumpf(o, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER) != 0 ||
        tern_atomic_file_commit(&a, err, sizeof err) != 0)
        rc = tern_errorf(TERN_EIO, "%s: cannot write the summary: %s", path,
                         *err ? err : strerror(errno ? errno : EIO));
    tern_atomic_file_abort(&a); /* no summary.json.tmp is left, whatever failed */
    json_decref(o);
    if (rc == TERN_OK && ms->accuracy_before >= 0 && ms->accuracy_after >= 0)
        tern_logf(TERN_LOG_INFO, "run", "greedy eval accuracy %.3f before RL, %.3f after (%+.1f "
                  "points), %lld steps in %.0f s", ms->accuracy_before, ms->accuracy_after,
                  100 * (ms->accuracy_after - ms->accuracy_before), (long long)ms->steps_done,
                  wall);
    else if (rc == TERN_OK && isfinite(ms->eval_reward_after - ms->eval_reward_before))
        /* no reward said what is right: a partial credit is not an answer
         * counted right, so the headline is the reward itself */
        tern_logf(TERN_LOG_INFO, "run", "greedy eval mean reward %.3f before RL, %.3f after "
                  "(%+.3f), %lld steps in %.0f s; no accuracy: no reward gives an "
                  "\"accuracy\" component (docs/rewards.md, \"Accuracy\")",
                  ms->eval_reward_before, ms->eval_reward_after,
                  ms->eval_reward_after - ms->eval_reward_before, (long long)ms->steps_done,
                  wall);
    return rc;
}
