/* master.c: the master role and the run's set-up and end (see master.h). */
#include "loop/master.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "errmsg.h"
#include "host_table.h"
#include "log.h"
#include "loop/evaluate.h"
#include "loop/experience.h"
#include "loop/rewarder.h"
#include "loop/run.h"
#include "loop/run_state.h"
#include "rundir.h"
#include "task.h"
#include "tern/rng.h"
#include "trace.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---- SIGINT ------------------------------------------------------------------ */

static atomic_int *volatile stop_flag;

static void on_sigint(int sig)
{
    (void)sig;
    if (stop_flag)
        atomic_store(stop_flag, 1);
    /* a second ^C is not caught: it ends the process at once */
    signal(SIGINT, SIG_DFL);
}

/* ---- the order tasks are visited in ------------------------------------------ */

/* Position p of a stream is task perm_e[p mod n] of epoch e = p / n, where
 * perm_e is a seeded shuffle of epoch e (the identity without shuffle): the
 * task of any position follows from the seed alone, so a resumed run needs
 * only the position. */
typedef struct dealer {
    const char *stream;
    uint32_t *perm;
    size_t n;
    int64_t epoch;
    int shuffle;
} dealer;

static uint32_t deal(const tern_run *run, dealer *d, int64_t pos)
{
    int64_t e = pos / (int64_t)d->n;
    if (e != d->epoch) {
        for (size_t i = 0; i < d->n; i++)
            d->perm[i] = (uint32_t)i;
        if (d->shuffle) {
            tern_rng r;
            tern_rng_seed(&r, tern_run_seed(run, d->stream, (uint64_t)e, 0));
            for (size_t i = d->n - 1; i > 0; i--) { /* Fisher-Yates */
                size_t j = (size_t)(tern_rng_u64(&r) % (i + 1));
                uint32_t t = d->perm[i];
                d->perm[i] = d->perm[j];
                d->perm[j] = t;
            }
        }
        d->epoch = e;
    }
    return d->perm[pos % (int64_t)d->n];
}

/* A task field as text: strings as they are, numbers as JSON writes them. */
static char *field_text(const tern_task *t, const char *key)
{
    const char *s = tern_task_string(t, key);
    if (s)
        return strdup(s);
    char *j = tern_task_json(t, key);
    return j ? j : strdup("");
}

/* ---- per-batch figures the master keeps until the step that trains it ------- */

typedef struct batch_stats {
    int have;
    int64_t version;
    double reward_sum, reward_sq, acc_sum, len_sum;
    uint64_t n, by_length, failures, gen_tokens;
    double gen_seconds, wait_seconds;
    json_t *acc_right, *acc_total; /* per domain */
    json_t *groups;                /* rollouts.jsonl lines (objects) */
} batch_stats;

typedef struct master {
    tern_run *run;
    dealer train_deal, sft_deal;
    batch_stats *bs; /* [steps], by batch */
    FILE *metrics, *rollouts;
    double t_start, master_wait;
    int64_t sft_pushed, batches_pushed;
    int64_t steps_done, sft_done;
    double accuracy_before, accuracy_after;
    json_t *eval_before, *eval_after;
    double reward_first, reward_last;
    int have_reward_first;
    double rollout_tokens, rollout_seconds, train_tokens, train_seconds;
    uint64_t next_record_id;
    char last_checkpoint[PATH_MAX + 64];
    int finished, stopped;
} master;

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
                      tern_model_handle *h)
{
    h->ops = model->entry->plugin->desc->ops;
    h->ctx = tern_ctx_new(label, &run->session->config, model->group,
                          model->entry->plugin->desc->settings, run->seed, run->session->metrics,
                          run->session->trace);
    if (!h->ctx)
        return tern_errorf(TERN_ENOMEM, "out of memory");
    tern_error_clear();
    int rc = h->ops->create(h->ctx, &h->state);
    if (rc != TERN_OK) {
        const char *m = tern_error_message();
        tern_ctx_free(h->ctx);
        h->ctx = NULL;
        h->ops = NULL;
        return tern_errorf(rc, "%s: the model plugin failed to start a second instance: %s",
                           label, *m ? m : "it gave no reason");
    }
    h->made = 1;
    return TERN_OK;
}

static void drop_model(tern_model_handle *h)
{
    if (h->made && h->ops)
        h->ops->destroy(h->state);
    if (h->made)
        tern_ctx_free(h->ctx);
    memset(h, 0, sizeof *h);
}

static int setup_plugins(tern_run *run, tern_diag *d)
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
    run->policy = (tern_model_handle){.ops = model->entry->plugin->desc->ops,
                                      .state = model->state};
    run->buffer_ops = buf->entry->plugin->desc->ops;
    run->buffer = buf->state;
    run->sync_ops = sync->entry->plugin->desc->ops;
    run->sync = sync->state;

    const tern_model_ops *mo = run->policy.ops;
    if (!TERN_HAS(mo, special_tokens) || !mo->special_tokens) {
        tern_diag_addf(d, "model: plugin '%s' does not tell its end-of-sequence token (the "
                       "special_tokens op of ABI 1.1), so a run cannot end responses: add the op "
                       "and rebuild the plugin against the ABI 1.1 SDK (docs/plugins.md)",
                       model->entry->name);
        return TERN_ECONFIG;
    }
    run->special = (tern_special_tokens){.size = sizeof run->special, .bos = -1, .eos = -1,
                                         .pad = -1};
    tern_error_clear();
    if (mo->special_tokens(run->policy.state, &run->special) != TERN_OK || run->special.eos < 0)
        return tern_errorf(TERN_ERR, "model: plugin '%s' gives no end-of-sequence token: %s",
                           model->entry->name, tern_error_message());

    tern_sync_info info = {.size = sizeof info};
    tern_error_clear();
    if (run->sync_ops->describe(run->sync, &info) != TERN_OK)
        return tern_errorf(TERN_ERR, "sync: describe failed: %s", tern_error_message());
    char where[600];
    if (info.explorers != 1)
        tern_diag_addf(d, "%s: sync: %u explorers asked for; this tern runs one explorer "
                       "thread (multi-explorer runs arrive with the sync plugins issue)",
                       tern_config_where(&s->config, sync->group, where, sizeof where),
                       info.explorers);
    if (!info.transport || strcmp(info.transport, "memory") != 0)
        tern_diag_addf(d, "%s: sync: weight transport \"%s\" is not available in this tern: "
                       "use method = \"memory\"",
                       tern_config_where(&s->config, sync->group, where, sizeof where),
                       info.transport ? info.transport : "(none)");

    /* the reference: a frozen copy of the policy (same_as), its own plugin, or none */
    int want_kl = run->set.loss.kl != TERN_KL_NONE;
    if (ref && ref->created) {
        run->reference = (tern_model_handle){.ops = ref->entry->plugin->desc->ops,
                                             .state = ref->state};
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
    int rc = make_model(run, model, "explorer", &run->explorer);
    if (rc == TERN_OK && run->eval.n)
        rc = make_model(run, model, "evaluator", &run->evaluator);
    if (rc == TERN_OK && run->reference_is_copy)
        rc = make_model(run, model, "reference", &run->reference);
    if (rc == TERN_OK)
        rc = tern_rewards_route(run);
    return rc;
}

/* ---- resume ---------------------------------------------------------------- */

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

static int load_checkpoint(tern_run *run, master *ms, const char *ckpt)
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
    json_t *ab = json_object_get(st, "accuracy_before_rl");
    ms->accuracy_before = json_is_number(ab) ? json_number_value(ab) : -1;
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

    char path[PATH_MAX + 160];
    snprintf(path, sizeof path, "%s/policy", ckpt);
    tern_error_clear();
    rc = run->policy.ops->load(run->policy.state, path, 1);
    if (rc != TERN_OK)
        return tern_errorf(rc, "%s: cannot load the policy: %s", path, tern_error_message());
    if (run->reference_is_copy && r->rl_started) {
        snprintf(path, sizeof path, "%s/checkpoints/reference", run->dir);
        tern_error_clear();
        rc = run->reference.ops->load(run->reference.state, path, 0);
        if (rc != TERN_OK)
            return tern_errorf(rc, "%s: cannot load the reference: %s", path,
                               tern_error_message());
    }
    ms->steps_done = r->step;
    ms->sft_done = r->sft_step;
    tern_logf(TERN_LOG_INFO, "run", "resuming from %s: %lld RL steps and %lld warm-up steps done",
              ckpt, (long long)r->step, (long long)r->sft_step);
    return TERN_OK;
}

/* ---- jobs -------------------------------------------------------------------- */

static int push_sft_job(tern_run *run, master *ms)
{
    if (ms->sft_pushed >= run->set.sft_steps)
        return TERN_OK;
    uint32_t n = run->set.sft_batch_tasks;
    tern_sft_job *j = calloc(1, sizeof *j);
    if (!j)
        return tern_errorf(TERN_ENOMEM, "out of memory");
    j->kind = TERN_MSG_SFT_BATCH;
    j->step = ms->sft_pushed;
    j->n = n;
    j->prompt = calloc(n, sizeof *j->prompt);
    j->answer = calloc(n, sizeof *j->answer);
    int ok = j->prompt && j->answer;
    for (uint32_t i = 0; ok && i < n; i++) {
        const tern_task *t = run->train.tasks[deal(run, &ms->sft_deal, j->step * n + i)];
        j->prompt[i] = field_text(t, "prompt");
        j->answer[i] = field_text(t, "answer");
        ok = j->prompt[i] && j->answer[i];
    }
    if (!ok || tern_queue_push(&run->trainer_jobs, j) != TERN_OK) {
        tern_msg_free(j);
        return tern_errorf(TERN_ENOMEM, "out of memory");
    }
    ms->sft_pushed++;
    return TERN_OK;
}

static int push_explore_job(tern_run *run, master *ms)
{
    if (ms->batches_pushed >= run->set.steps)
        return TERN_OK;
    uint32_t n = run->set.batch_tasks;
    tern_explore_job *j = calloc(1, sizeof *j);
    if (!j)
        return tern_errorf(TERN_ENOMEM, "out of memory");
    j->kind = TERN_MSG_EXPLORE;
    j->batch = ms->batches_pushed;
    j->n = n;
    j->task_index = calloc(n, sizeof *j->task_index);
    j->prompt = calloc(n, sizeof *j->prompt);
    int ok = j->task_index && j->prompt;
    for (uint32_t i = 0; ok && i < n; i++) {
        j->task_index[i] = deal(run, &ms->train_deal, j->batch * n + i);
        j->prompt[i] = field_text(run->train.tasks[j->task_index[i]], "prompt");
        ok = j->prompt[i] != NULL;
    }
    if (!ok || tern_queue_push(&run->explorer_jobs, j) != TERN_OK) {
        tern_msg_free(j);
        return tern_errorf(TERN_ENOMEM, "out of memory");
    }
    ms->batches_pushed++;
    return TERN_OK;
}

/* ---- rollouts: reward, record, buffer ---------------------------------------- */

static int put_record(tern_run *run, master *ms, const tern_experience *e)
{
    size_t len = tern_experience_bytes(e);
    void *buf = malloc(len);
    if (!buf)
        return tern_errorf(TERN_ENOMEM, "out of memory");
    tern_experience_encode(e, buf);
    tern_record_meta meta = {.size = sizeof meta, .id = ms->next_record_id++,
                             .version = e->version, .batch = e->batch};
    int rc;
    double t0 = now_s();
    for (;;) {
        tern_error_clear();
        rc = run->buffer_ops->put(run->buffer, buf, len, &meta, 200);
        if (rc != TERN_ETIMEDOUT)
            break;
        if (atomic_load(&run->stop) || atomic_load(&run->failed)) {
            rc = TERN_ECLOSED; /* the trainer will not read it: winding down */
            break;
        }
    }
    ms->master_wait += now_s() - t0;
    free(buf);
    if (rc != TERN_OK && rc != TERN_ECLOSED) {
        const char *m = tern_error_message();
        return tern_errorf(rc, "buffer: put failed: %s", *m ? m : "the plugin gave no reason");
    }
    return TERN_OK;
}

static int on_rollout(tern_run *run, master *ms, tern_rollout_msg *r)
{
    uint32_t G = r->group_size;
    size_t total = (size_t)r->n * G;
    const tern_task **tasks = calloc(total, sizeof *tasks);
    const char **texts = calloc(total, sizeof *texts);
    uint32_t *ntok = calloc(total, sizeof *ntok);
    tern_verdict *v = calloc(total, sizeof *v);
    int rc = TERN_OK;
    if (!tasks || !texts || !ntok || !v) {
        rc = tern_errorf(TERN_ENOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < total; i++) {
        tasks[i] = run->train.tasks[r->task_index[i / G]];
        texts[i] = r->resp[i].text;
        ntok[i] = r->resp[i].len;
    }
    batch_stats *b = &ms->bs[r->batch];
    memset(b, 0, sizeof *b);
    b->have = 1;
    b->version = r->version;
    b->acc_right = json_object();
    b->acc_total = json_object();
    b->groups = json_array();
    uint64_t span = tern_trace_begin(run->session->trace, "reward");
    rc = tern_rewards_score(run, tasks, texts, ntok, total, v, &b->failures,
                            run->session->metrics);
    char args[96];
    snprintf(args, sizeof args, "{\"batch\":%lld}", (long long)r->batch);
    tern_trace_end(run->session->trace, span, args);
    if (rc != TERN_OK)
        goto done;
    for (uint32_t g = 0; g < r->n; g++) {
        json_t *rw = json_array();
        for (uint32_t s = 0; s < G; s++) {
            size_t i = (size_t)g * G + s;
            tern_response *resp = &r->resp[i];
            b->reward_sum += v[i].reward;
            b->reward_sq += v[i].reward * v[i].reward;
            b->acc_sum += v[i].accuracy;
            b->len_sum += resp->len;
            b->by_length += resp->finish == 2;
            b->n++;
            const char *dom = tern_task_string(tasks[i], "domain");
            json_object_set_new(b->acc_right, dom,
                                json_real(json_number_value(json_object_get(b->acc_right, dom)) +
                                          v[i].accuracy));
            json_object_set_new(b->acc_total, dom,
                                json_integer(json_integer_value(json_object_get(b->acc_total,
                                                                                dom)) + 1));
            json_array_append_new(rw, json_real(v[i].reward));
            /* prompt then response tokens, as the trainer scores them */
            uint32_t P = r->prompt_len[g];
            int32_t *toks = malloc(((size_t)P + resp->len + 1) * sizeof *toks);
            if (!toks) {
                json_decref(rw);
                rc = tern_errorf(TERN_ENOMEM, "out of memory");
                goto done;
            }
            memcpy(toks, r->prompt_tokens[g], P * sizeof *toks);
            memcpy(toks + P, resp->tokens, resp->len * sizeof *toks);
            tern_experience e = {.batch = r->batch, .version = r->version,
                                 .task_index = r->task_index[g], .group = g, .sample = s,
                                 .finish = resp->finish, .reward = v[i].reward,
                                 .accuracy = v[i].accuracy, .prompt_len = P,
                                 .response_len = resp->len, .tokens = toks, .logp = resp->logp};
            rc = put_record(run, ms, &e);
            free(toks);
            if (rc != TERN_OK) {
                json_decref(rw);
                goto done;
            }
        }
        char id[128];
        json_t *line = json_pack("{s:s,s:I,s:I,s:I,s:s,s:o,s:s}", "stage", "rl", "step",
                                 (json_int_t)(r->batch + 1), "batch", (json_int_t)r->batch,
                                 "version", (json_int_t)r->version, "task",
                                 tern_task_id_text(tasks[(size_t)g * G], id, sizeof id),
                                 "rewards", rw, "response", r->resp[(size_t)g * G].text);
        if (line)
            json_array_append_new(b->groups, line);
    }
    b->gen_tokens = r->gen_tokens;
    b->gen_seconds = r->gen_seconds;
    b->wait_seconds = r->wait_seconds;
done:
    free(tasks);
    free(texts);
    free(ntok);
    free(v);
    return rc;
}

/* ---- writing ----------------------------------------------------------------- */

static int write_line(FILE *f, json_t *o, const char *what)
{
    if (json_dumpf(o, f, JSON_COMPACT | JSON_PRESERVE_ORDER) != 0 || fputc('\n', f) == EOF ||
        fflush(f) != 0)
        return tern_errorf(TERN_EIO, "cannot write %s: %s", what, strerror(errno));
    return TERN_OK;
}

static void put_eval(json_t *o, const tern_eval_result *e)
{
    json_object_set_new(o, "eval/accuracy", json_real(e->accuracy));
    const char *dom;
    json_t *v;
    json_object_foreach(e->per_domain, dom, v) {
        char key[160];
        snprintf(key, sizeof key, "eval/accuracy/%s", dom);
        json_object_set(o, key, v);
    }
    json_object_set_new(o, "eval/response_length", json_real(e->mean_length));
    json_object_set_new(o, "eval/seconds", json_real(e->seconds));
}

static int evaluate(tern_run *run, master *ms, tern_snapshot *w, json_t *line, int before)
{
    tern_eval_result e;
    int rc = tern_evaluate(run, w, &e);
    if (rc != TERN_OK) {
        json_decref(e.per_domain);
        return rc;
    }
    put_eval(line, &e);
    tern_logf(TERN_LOG_INFO, "eval", "version %lld: greedy accuracy %.3f on %zu eval tasks "
              "(%.1f s)", (long long)tern_snapshot_version(w), e.accuracy, e.tasks, e.seconds);
    if (before) {
        ms->accuracy_before = e.accuracy;
        json_decref(ms->eval_before);
        ms->eval_before = e.per_domain;
    } else {
        ms->accuracy_after = e.accuracy;
        json_decref(ms->eval_after);
        ms->eval_after = e.per_domain;
    }
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
                           "data_position", (json_int_t)(step * run->set.batch_tasks));
    if (!st)
        return NULL;
    json_object_set_new(st, "accuracy_before_rl",
                        ms->accuracy_before >= 0 ? json_real(ms->accuracy_before) : json_null());
    json_object_set(st, "eval_before_rl", ms->eval_before ? ms->eval_before : json_null());
    json_object_set_new(st, "wall_seconds",
                        json_real(run->resume.wall_seconds + now_s() - ms->t_start));
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

static int complete_checkpoint(tern_run *run, master *ms, const char *tmp, int64_t sft_step,
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
    return rc;
}

static void format_eta(double s, char *buf, size_t n)
{
    if (s < 0 || !isfinite(s))
        snprintf(buf, n, "?");
    else if (s >= 3600)
        snprintf(buf, n, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
    else
        snprintf(buf, n, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
}

static int on_step(tern_run *run, master *ms, tern_step_msg *m)
{
    int64_t t = m->step - 1;
    batch_stats *b = &ms->bs[t];
    json_t *o = json_object();
    if (!o)
        return tern_errorf(TERN_ENOMEM, "out of memory");
    double n = b->n ? (double)b->n : 1;
    double mean = b->reward_sum / n, var = b->reward_sq / n - mean * mean;
    json_object_set_new(o, "stage", json_string("rl"));
    json_object_set_new(o, "step", json_integer(m->step));
    json_object_set_new(o, "version", json_integer(m->version));
    json_object_set_new(o, "rollout_version", json_integer(b->version));
    json_object_set_new(o, "reward_mean", json_real(mean));
    json_object_set_new(o, "reward_std", json_real(sqrt(var > 0 ? var : 0)));
    json_object_set_new(o, "accuracy", json_real(b->acc_sum / n));
    const char *dom;
    json_t *tot;
    json_object_foreach(b->acc_total, dom, tot) {
        char key[160];
        snprintf(key, sizeof key, "accuracy/%s", dom);
        json_object_set_new(o, key, json_real(json_number_value(json_object_get(b->acc_right,
                                                                                dom)) /
                                              (double)json_integer_value(tot)));
    }
    json_object_set_new(o, "response_length", json_real(b->len_sum / n));
    json_object_set_new(o, "truncated_frac", json_real((double)b->by_length / n));
    json_object_set_new(o, "reward_failures", json_integer((json_int_t)b->failures));
    json_object_set_new(o, "train_reward_mean", json_real(m->reward_mean));
    json_object_set_new(o, "loss", json_real(m->loss.loss));
    json_object_set_new(o, "pg_loss", json_real(m->loss.pg_loss));
    json_object_set_new(o, "kl", json_real(m->loss.kl));
    json_object_set_new(o, "entropy", json_real(m->loss.entropy));
    json_object_set_new(o, "clip_frac", json_real(m->loss.clip_frac));
    json_object_set_new(o, "ratio_mean", json_real(m->loss.ratio_mean));
    json_object_set_new(o, "grad_norm", json_real(m->grad_norm));
    json_object_set_new(o, "lr", json_real(m->lr));
    json_object_set_new(o, "rollout_tokens_per_s",
                        json_real(b->gen_seconds > 0 ? (double)b->gen_tokens / b->gen_seconds : 0));
    json_object_set_new(o, "train_tokens_per_s",
                        json_real(m->train_seconds > 0 ? (double)m->train_tokens / m->train_seconds
                                                       : 0));
    json_object_set_new(o, "staleness", json_real(m->staleness));
    json_object_set_new(o, "stale_records", json_integer((json_int_t)m->stale));
    json_object_set_new(o, "groups_dropped", json_integer((json_int_t)m->groups_dropped));
    json_object_set_new(o, "wait_s/explorer", json_real(b->wait_seconds));
    json_object_set_new(o, "wait_s/trainer", json_real(m->wait_seconds));
    json_object_set_new(o, "wait_s/master", json_real(ms->master_wait));
    ms->master_wait = 0;
    tern_buffer_stats bst = {.size = sizeof bst};
    if (run->buffer_ops->stats(run->buffer, &bst) == TERN_OK)
        json_object_set_new(o, "buffer_size", json_integer((json_int_t)bst.held));
    tern_metrics_drain_json(run->session->metrics, o);
    ms->rollout_tokens += (double)b->gen_tokens;
    ms->rollout_seconds += b->gen_seconds;
    ms->train_tokens += (double)m->train_tokens;
    ms->train_seconds += m->train_seconds;
    if (!ms->have_reward_first) {
        ms->reward_first = mean;
        ms->have_reward_first = 1;
    }
    ms->reward_last = mean;
    ms->steps_done = m->step;

    double train_acc = b->acc_sum / n;
    int rc = TERN_OK;
    if (m->eval)
        rc = evaluate(run, ms, m->eval, o, 0);
    if (rc == TERN_OK)
        rc = write_line(ms->metrics, o, "metrics.jsonl");
    size_t i;
    json_t *g;
    json_array_foreach(b->groups, i, g) {
        if (rc == TERN_OK)
            rc = write_line(ms->rollouts, g, "rollouts.jsonl");
    }
    json_decref(o);
    json_decref(b->groups);
    json_decref(b->acc_right);
    json_decref(b->acc_total);
    memset(b, 0, sizeof *b);
    if (rc == TERN_OK && m->saved)
        rc = complete_checkpoint(run, ms, m->saved, ms->sft_done, m->step, 1);
    if (rc != TERN_OK)
        return rc;

    double elapsed = now_s() - ms->t_start;
    int64_t this_part = m->step - run->resume.step;
    char eta[32], acc[48] = "";
    format_eta(elapsed / (double)this_part * (double)(run->set.steps - m->step), eta, sizeof eta);
    if (m->eval)
        snprintf(acc, sizeof acc, " | eval acc %.3f", ms->accuracy_after);
    char line[256];
    snprintf(line, sizeof line, "step %lld/%lld | ETA %s | reward %.3f | train acc %.3f%s",
             (long long)m->step, (long long)run->set.steps, eta, mean, train_acc, acc);
    tern_log_progress(line);
    return TERN_OK;
}
static int on_sft_done(tern_run *run, master *ms, tern_step_msg *m)
{
    ms->sft_done = m->step;
    json_t *o = json_pack("{s:s,s:I,s:f,s:f,s:f,s:f}", "stage", "sft", "step",
                          (json_int_t)m->step, "loss", m->loss.loss, "grad_norm", m->grad_norm,
                          "lr", m->lr, "train_tokens_per_s",
                          m->train_seconds > 0 ? (double)m->train_tokens / m->train_seconds : 0.0);
    if (!o)
        return tern_errorf(TERN_ENOMEM, "out of memory");
    tern_metrics_drain_json(run->session->metrics, o);
    int rc = write_line(ms->metrics, o, "metrics.jsonl");
    json_decref(o);
    char line[160];
    snprintf(line, sizeof line, "warm-up %lld/%lld | loss %.4f", (long long)m->step,
             (long long)run->set.sft_steps, m->loss.loss);
    tern_log_progress(line);
    return rc == TERN_OK ? push_sft_job(run, ms) : rc;
}

static int on_rl_start(tern_run *run, master *ms, tern_step_msg *m)
{
    int rc = TERN_OK;
    if (run->set.steps == 0) {
        ms->finished = 1; /* a warm-up-only run ends with its evaluation */
        if (m->saved)
            rc = complete_checkpoint(run, ms, m->saved, ms->sft_done, 0, 1);
    }
    if (!m->eval || rc != TERN_OK)
        return rc;
    json_t *o = json_pack("{s:s,s:i,s:i}", "stage", "rl", "step", 0, "version", 0);
    if (!o)
        return tern_errorf(TERN_ENOMEM, "out of memory");
    rc = evaluate(run, ms, m->eval, o, 1);
    if (rc == TERN_OK)
        rc = write_line(ms->metrics, o, "metrics.jsonl");
    json_decref(o);
    return rc;
}

/* The roles' messages until the run ends. TERN_OK when every step is done,
 * TERN_EINTR after a stop with its checkpoint, else the failure. */
static int master_loop(tern_run *run, master *ms)
{
    int rc = TERN_OK;
    for (int i = 0; i < 2 && rc == TERN_OK; i++)
        rc = push_sft_job(run, ms);
    while (rc == TERN_OK && ms->batches_pushed < run->set.steps)
        rc = push_explore_job(run, ms);
    if (rc != TERN_OK)
        return rc;
    if (run->resume.step >= run->set.steps && run->resume.rl_started)
        return TERN_OK; /* nothing left to do */
    for (;;) {
        double t0 = now_s();
        void *msg = tern_queue_pop(&run->inbox);
        ms->master_wait += now_s() - t0;
        if (!msg)
            return tern_errorf(TERN_ERR, "the roles stopped without a word (a bug)");
        tern_msg_kind kind = *(tern_msg_kind *)msg;
        switch (kind) {
        case TERN_MSG_ROLLOUT:
            rc = on_rollout(run, ms, msg);
            break;
        case TERN_MSG_SFT_DONE:
            rc = on_sft_done(run, ms, msg);
            break;
        case TERN_MSG_RL_START:
            rc = on_rl_start(run, ms, msg);
            break;
        case TERN_MSG_STEP_DONE:
            rc = on_step(run, ms, msg);
            if (rc == TERN_OK && ((tern_step_msg *)msg)->step >= run->set.steps)
                ms->finished = 1;
            break;
        case TERN_MSG_STOPPED: {
            tern_step_msg *m = msg;
            if (m->step > ms->steps_done && m->step > 0)
                rc = on_step(run, ms, m); /* the step that finished before the stop */
            else if (m->saved)
                rc = m->in_rl ? complete_checkpoint(run, ms, m->saved, ms->sft_done, m->step, 1)
                              : complete_checkpoint(run, ms, m->saved, m->sft_step, 0, 0);
            ms->stopped = 1;
            break;
        }
        case TERN_MSG_FAILED: {
            tern_step_msg *m = msg;
            rc = tern_errorf(m->status < 0 ? m->status : TERN_ERR, "%s", m->error);
            break;
        }
        default:
            rc = tern_errorf(TERN_ERR, "master: unexpected message %d (a bug)", (int)kind);
        }
        tern_msg_free(msg);
        if (rc != TERN_OK)
            return rc;
        if (ms->finished)
            return TERN_OK;
        if (ms->stopped)
            return TERN_EINTR;
    }
}

/* ---- summary ------------------------------------------------------------------ */

static int write_summary(tern_run *run, master *ms, int interrupted)
{
    double wall = run->resume.wall_seconds + now_s() - ms->t_start;
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
    char path[PATH_MAX + 32], tmp[PATH_MAX + 40];
    snprintf(path, sizeof path, "%s/summary.json", run->dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int rc = TERN_OK;
    if (json_dump_file(o, tmp, JSON_INDENT(2) | JSON_PRESERVE_ORDER) != 0 ||
        rename(tmp, path) != 0)
        rc = tern_errorf(TERN_EIO, "%s: cannot write the summary", path);
    json_decref(o);
    if (rc == TERN_OK && ms->accuracy_before >= 0 && ms->accuracy_after >= 0)
        tern_logf(TERN_LOG_INFO, "run", "greedy eval accuracy %.3f before RL, %.3f after (%+.1f "
                  "points), %lld steps in %.0f s", ms->accuracy_before, ms->accuracy_after,
                  100 * (ms->accuracy_after - ms->accuracy_before), (long long)ms->steps_done,
                  wall);
    return rc;
}

/* ---- set-up and tear-down ------------------------------------------------------ */

static int open_run_dir(tern_run *run, master *ms, const tern_loop_options *o)
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
        if ((rc = tern_checkpoint_newest(run->dir, ckpt, sizeof ckpt)) != TERN_OK)
            return rc == TERN_ENOTFOUND ? TERN_ECONFIG : rc;
    } else {
        if ((rc = tern_rundir_create(out_dir, name, run->dir, sizeof run->dir)) != TERN_OK ||
            (rc = tern_rundir_write_config(run->dir, c)) != TERN_OK)
            return rc;
    }
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/log.txt", run->dir);
    if ((rc = tern_log_open_file(path)) != TERN_OK)
        return rc;
    if (o->resume) {
        /* a damaged checkpoint is the user's to remove: the message says which */
        if ((rc = load_checkpoint(run, ms, ckpt)) != TERN_OK)
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

static int load_data(tern_run *run)
{
    int rc = tern_task_set_load(&run->train, run->set.train_path, run->set.skip_bad);
    if (rc == TERN_OK && run->set.eval_path)
        rc = tern_task_set_load(&run->eval, run->set.eval_path, run->set.skip_bad);
    if (rc == TERN_EINVAL || rc == TERN_EIO || rc == TERN_ENOTFOUND)
        return TERN_ECONFIG; /* bad input the user fixes: the message says where */
    return rc;
}

int tern_loop_run(tern_session *s, const tern_loop_options *o, tern_diag *d)
{
    tern_run *run = calloc(1, sizeof *run);
    master *ms = calloc(1, sizeof *ms);
    if (!run || !ms) {
        free(run);
        free(ms);
        return tern_errorf(TERN_ENOMEM, "out of memory");
    }
    run->session = s;
    run->seed = s->seed;
    run->out = o->out;
    ms->run = run;
    ms->accuracy_before = ms->accuracy_after = -1;
    ms->t_start = now_s();
    tern_queue_init(&run->inbox);
    tern_queue_init(&run->explorer_jobs);
    tern_queue_init(&run->trainer_jobs);
    pthread_t explorer, trainer;
    int have_explorer = 0, have_trainer = 0;
    struct sigaction old_int;
    int have_handler = 0;

    int rc = tern_run_settings_read(&s->config, &run->set, d);
    if (rc == TERN_OK)
        rc = load_data(run);
    if (rc == TERN_OK)
        rc = setup_plugins(run, d);
    if (rc == TERN_OK && (rc = tern_rewards_check_domains(run, &run->train)) == TERN_OK &&
        run->eval.n)
        rc = tern_rewards_check_domains(run, &run->eval);
    if (rc == TERN_OK && !(run->weights = tern_weights_new()))
        rc = tern_errorf(TERN_ENOMEM, "out of memory");
    if (rc == TERN_OK && run->set.steps > 0 &&
        !(ms->bs = calloc((size_t)run->set.steps, sizeof *ms->bs)))
        rc = tern_errorf(TERN_ENOMEM, "out of memory");
    if (rc == TERN_OK) {
        ms->train_deal = (dealer){.stream = "data", .n = run->train.n, .epoch = -1,
                                  .shuffle = run->set.shuffle};
        ms->sft_deal = (dealer){.stream = "sft-data", .n = run->train.n, .epoch = -1,
                                .shuffle = run->set.shuffle};
        ms->train_deal.perm = calloc(run->train.n, sizeof(uint32_t));
        ms->sft_deal.perm = calloc(run->train.n, sizeof(uint32_t));
        if (!ms->train_deal.perm || !ms->sft_deal.perm)
            rc = tern_errorf(TERN_ENOMEM, "out of memory");
    }
    if (rc == TERN_OK)
        rc = open_run_dir(run, ms, o);
    if (rc != TERN_OK)
        goto done;
    ms->sft_pushed = run->resume.rl_started ? run->set.sft_steps : run->resume.sft_step;
    ms->batches_pushed = run->resume.step;
    tern_logf(TERN_LOG_INFO, "run", "run directory %s: %zu training tasks, %zu eval tasks, "
              "%lld warm-up + %lld RL steps of %u tasks x %u responses", run->dir, run->train.n,
              run->eval.n, (long long)run->set.sft_steps, (long long)run->set.steps,
              run->set.batch_tasks, run->set.group_size);

    if (o->handle_sigint) {
        stop_flag = &run->stop;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_sigint;
        sigemptyset(&sa.sa_mask);
        have_handler = sigaction(SIGINT, &sa, &old_int) == 0;
    }
    tern_trace_name_lane(s->trace, "master");
    if (pthread_create(&trainer, NULL, tern_trainer_main, run) != 0) {
        rc = tern_errorf(TERN_ERR, "cannot start the trainer thread");
        goto done;
    }
    have_trainer = 1;
    if (pthread_create(&explorer, NULL, tern_explorer_main, run) != 0) {
        rc = tern_errorf(TERN_ERR, "cannot start the explorer thread");
        goto done;
    }
    have_explorer = 1;
    rc = master_loop(run, ms);

done:
    /* wind down: every role's waits end, then join them */
    if (rc != TERN_OK && rc != TERN_EINTR)
        atomic_store(&run->failed, 1);
    tern_queue_close(&run->explorer_jobs);
    tern_queue_close(&run->trainer_jobs);
    if (run->weights)
        tern_weights_close(run->weights);
    if (run->buffer_ops)
        run->buffer_ops->close(run->buffer);
    if (have_explorer)
        pthread_join(explorer, NULL);
    if (have_trainer)
        pthread_join(trainer, NULL);
    tern_log_progress_end();
    if (have_handler)
        sigaction(SIGINT, &old_int, NULL);
    stop_flag = NULL;
    /* the error text lives on this thread: keep it across the writes below */
    char *err = rc != TERN_OK && rc != TERN_EINTR ? strdup(tern_error_message()) : NULL;
    if (run->dir[0] && ms->metrics) {
        int wrc = write_summary(run, ms, rc != TERN_OK);
        char path[PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/trace.json", run->dir);
        if (wrc == TERN_OK)
            wrc = tern_trace_write(s->trace, path);
        if (wrc != TERN_OK && (rc == TERN_OK || rc == TERN_EINTR))
            rc = wrc;
        else if (rc == TERN_EINTR)
            tern_logf(TERN_LOG_WARN, "run", "interrupted after %lld steps; `tern run CONFIG "
                      "--resume` continues from %s", (long long)ms->steps_done,
                      ms->last_checkpoint[0] ? ms->last_checkpoint : "the start");
    }
    if (err) {
        tern_errorf(rc, "%s", err);
        free(err);
    }
    if (run->dir[0] && (rc == TERN_OK || rc == TERN_EINTR) && o->out)
        fprintf(o->out, "%s\n", run->dir);
    if (ms->metrics)
        fclose(ms->metrics);
    if (ms->rollouts)
        fclose(ms->rollouts);
    tern_queue_destroy(&run->inbox, tern_msg_free);
    tern_queue_destroy(&run->explorer_jobs, tern_msg_free);
    tern_queue_destroy(&run->trainer_jobs, tern_msg_free);
    tern_weights_free(run->weights);
    for (int64_t i = 0; ms->bs && i < run->set.steps; i++) {
        json_decref(ms->bs[i].groups);
        json_decref(ms->bs[i].acc_right);
        json_decref(ms->bs[i].acc_total);
    }
    free(ms->bs);
    free(ms->train_deal.perm);
    free(ms->sft_deal.perm);
    json_decref(ms->eval_before);
    json_decref(ms->eval_after);
    drop_model(&run->explorer);
    drop_model(&run->evaluator);
    if (run->reference_is_copy)
        drop_model(&run->reference);
    free(run->routes);
    tern_task_set_free(&run->train);
    tern_task_set_free(&run->eval);
    tern_run_settings_free(&run->set);
    free(run);
    free(ms);
    return rc;
}
