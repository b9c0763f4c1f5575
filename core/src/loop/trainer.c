/* trainer.c: the trainer role (docs/architecture.md §2): the trainable policy and the
 * frozen reference. An optional supervised warm-up, then RL steps: read one
 * explorer batch from the buffer, score it under the policy (unless the step
 * is on-policy: skip_score) and the reference, turn rewards into advantages,
 * the loss into dL/dlogp per token, run the model's backward pass and
 * optimiser step, publish weights when the sync plugin says so, and report
 * to the master. A task's image goes with its sequences to every model op
 * (read again from its file: a group's must still have the digest the
 * explorer recorded). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"
#include "base/log.h"
#include "base/sha256.h"
#include "experience/experience.h"
#include "image/task_image.h"
#include "loop/data_parallel.h"
#include "loop/ledger.h"
#include "loop/ranks.h"
#include "loop/run.h"
#include "loop/run_state.h"
#include "loop/step_figures.h"
#include "loop/step_loss.h"
#include "rundir/trace.h"

static int push_report(tern_run *run, tern_step_msg *m)
{
    if (tern_queue_push(&run->inbox, m) != TERN_OK) {
        tern_msg_free(m);
        return TERN_ECLOSED;
    }
    return TERN_OK;
}

/* Save the policy (with optimiser state) into a temporary checkpoint
 * directory the master completes; *dir gets its path. */
static int save_policy(tern_run *run, int64_t sft_step, int64_t step, char **dir)
{
    char path[PATH_MAX + 64], model_dir[PATH_MAX + 80];
    tern_checkpoint_dir(run, sft_step, step, 1, path, sizeof path);
    snprintf(model_dir, sizeof model_dir, "%s/policy", path);
    uint64_t span = tern_trace_begin(run->session->trace, "save");
    int rc = tern_model_save(&run->policy, "trainer: saving a checkpoint", model_dir, 1);
    tern_trace_end(run->session->trace, span, NULL);
    if (rc != TERN_OK) {
        tern_remove_tree(path); /* a part of a checkpoint (a full disk) is of no use */
        return rc;
    }
    *dir = strdup(path);
    return *dir ? TERN_OK : tern_errorf(TERN_ENOMEM, "trainer: out of memory");
}

static tern_step_msg *new_report(tern_msg_kind kind, int64_t step)
{
    tern_step_msg *m = calloc(1, sizeof *m);
    if (m) {
        m->kind = kind;
        m->step = step;
    }
    return m;
}

/* Tell the master the run stopped on request after a checkpoint at this point. */
static int report_stopped(tern_run *run, int64_t sft_step, int64_t step)
{
    tern_step_msg *m = new_report(TERN_MSG_STOPPED, step);
    if (!m)
        return tern_errorf(TERN_ENOMEM, "trainer: out of memory");
    m->in_rl = sft_step < 0;
    m->sft_step = sft_step;
    m->version = step;
    int rc = save_policy(run, sft_step, step, &m->saved);
    if (rc != TERN_OK) {
        tern_msg_free(m);
        return rc;
    }
    return push_report(run, m);
}

/* ---- supervised warm-up ---------------------------------------------------- */

/* The images of the warm-up pairs [lo, hi) (this rank's share), read and
 * attached to their sequences. */
static int sft_images(const tern_sft_job *job, size_t lo, size_t hi, tern_loaded_image *imgs,
                      tern_sequence *seqs)
{
    for (size_t i = lo; job->image && i < hi; i++) {
        if (!job->image[i])
            continue;
        int rc = tern_image_load(job->image[i], &imgs[i]);
        if (rc != TERN_OK)
            return tern_errorf(rc, "trainer: warm-up step %lld: %s (it was read at start: "
                               "changed or removed since?)", (long long)job->step,
                               tern_error_message());
        seqs[i].images = &imgs[i].image;
        seqs[i].n_images = 1;
    }
    return TERN_OK;
}

static int sft_step(tern_run *run, const tern_sft_job *job)
{
    const tern_model *m = &run->policy;
    uint32_t n = job->n;
    int32_t **toks = calloc(n, sizeof *toks);
    tern_sequence *seqs = calloc(n, sizeof *seqs);
    float **lp = calloc(n, sizeof *lp), **dl = calloc(n, sizeof *dl);
    tern_loaded_image *imgs = calloc(n ? n : 1, sizeof *imgs);
    int rc = TERN_OK;
    double t0 = tern_run_now();
    size_t T = 0;
    if (!toks || !seqs || !lp || !dl || !imgs)
        rc = tern_errorf(TERN_ENOMEM, "trainer: out of memory");
    for (uint32_t i = 0; i < n && rc == TERN_OK; i++) {
        int32_t *p = NULL, *a = NULL;
        size_t np = 0, na = 0;
        const char *mark = tern_run_placeholder(run, job->image && job->image[i]);
        rc = tern_run_prompt(m, "trainer", job->system[i], job->prompt[i], mark, &p, &np);
        if (rc == TERN_OK)
            rc = tern_model_tokenize(m, "trainer: tokenize", job->answer[i],
                                     strlen(job->answer[i]), 0, &a, &na);
        /* target: the answer, then EOS */
        if (rc == TERN_OK && !(toks[i] = malloc((np + na + 1) * sizeof *toks[i])))
            rc = tern_errorf(TERN_ENOMEM, "trainer: out of memory");
        if (rc == TERN_OK) {
            memcpy(toks[i], p, np * sizeof *p);
            memcpy(toks[i] + np, a, na * sizeof *a);
            toks[i][np + na] = run->special.eos;
            seqs[i] = (tern_sequence){.size = sizeof seqs[i], .tokens = toks[i],
                                      .len = np + na + 1, .start = np, .temperature = 1};
            T += na + 1;
            lp[i] = calloc(np + na + 1, sizeof *lp[i]);
            dl[i] = calloc(np + na + 1, sizeof *dl[i]);
            if (!lp[i] || !dl[i])
                rc = tern_errorf(TERN_ENOMEM, "trainer: out of memory");
        }
        free(p);
        free(a);
    }
    /* each trainer rank scores its share of the pairs, then every rank has
     * every pair's log-probs (one trainer: the whole batch is its share) */
    size_t lo, hi;
    tern_dp_share(run->dp, n, &lo, &hi);
    if (rc == TERN_OK)
        rc = sft_images(job, lo, hi, imgs, seqs);
    if (rc == TERN_OK && hi > lo)
        rc = tern_model_score(m, "trainer: score (warm-up)", seqs + lo, hi - lo, lp + lo, NULL);
    if ((rc = tern_dp_agree(run->dp, rc)) != TERN_OK ||
        (rc = tern_dp_gather(run->dp, lp, seqs, n, 1)) != TERN_OK)
        goto done;
    /* L = -1/T sum log p(target) (the sft loss, token mean) */
    tern_loss_seq *ls = calloc(n, sizeof *ls);
    if (!ls) {
        rc = tern_errorf(TERN_ENOMEM, "trainer: out of memory");
        goto done;
    }
    for (uint32_t i = 0; i < n; i++) {
        size_t P = seqs[i].start;
        ls[i] = (tern_loss_seq){.n = seqs[i].len - P, .logp = lp[i] + P, .dlogp = dl[i] + P};
    }
    tern_loss_params lparams = {.kind = TERN_LOSS_SFT, .agg = TERN_AGG_TOKEN_MEAN};
    tern_loss_stats lstats;
    rc = tern_policy_loss(&lparams, ls, n, &lstats);
    free(ls);
    if (rc != TERN_OK) {
        rc = tern_role_failed(rc, "trainer", "warm-up loss");
        goto done;
    }
    double loss = lstats.loss;
    /* the gradient of the whole batch's loss: each rank's share, summed */
    if (hi > lo)
        rc = tern_model_backward(m, "trainer: backward (warm-up)", seqs + lo, hi - lo,
                                 (const float *const *)dl + lo, NULL);
    if ((rc = tern_dp_agree(run->dp, rc)) != TERN_OK ||
        (rc = tern_dp_sum_gradients(run->dp, m)) != TERN_OK)
        goto done;
    tern_optim_step st = {.size = sizeof st, .lr = run->set.sft_lr, .beta1 = run->set.beta1,
                          .beta2 = run->set.beta2, .eps = run->set.adam_eps,
                          .weight_decay = run->set.weight_decay, .grad_clip = run->set.grad_clip};
    rc = tern_model_step(m, "trainer: optimiser step (warm-up)", &st);
    if ((rc = tern_dp_agree(run->dp, rc)) != TERN_OK || !tern_dp_leads(run->dp))
        goto done;
    tern_step_msg *r = new_report(TERN_MSG_SFT_DONE, job->step + 1);
    if (!r) {
        rc = tern_errorf(TERN_ENOMEM, "trainer: out of memory");
        goto done;
    }
    r->loss.loss = loss;
    r->loss.tokens = T;
    r->grad_norm = st.grad_norm;
    r->lr = st.lr;
    r->train_tokens = 0;
    for (uint32_t i = 0; i < n; i++)
        r->train_tokens += seqs[i].len;
    r->train_seconds = tern_run_now() - t0;
    rc = push_report(run, r);
done:
    for (uint32_t i = 0; i < n; i++) {
        if (toks)
            free(toks[i]);
        if (lp)
            free(lp[i]);
        if (dl)
            free(dl[i]);
        if (imgs)
            tern_image_unload(&imgs[i]);
    }
    free(imgs);
    free(toks);
    free(seqs);
    free(lp);
    free(dl);
    return rc;
}

/* 1: stopped (checkpoint written), 0: warm-up done, < 0: failed/closed. */
static int sft_stage(tern_run *run)
{
    for (int64_t s = run->resume.sft_step; s < run->set.sft_steps; s++) {
        tern_sft_job *job = tern_queue_pop(&run->trainer_jobs);
        if (!job)
            return TERN_ECLOSED;
        /* the other trainer ranks take the same step */
        int rc = tern_dp_order(run->dp, TERN_TRAIN_SFT, 0, job, NULL, 0);
        if (rc != TERN_OK) {
            tern_msg_free(job);
            return rc;
        }
        uint64_t span = tern_trace_begin(run->session->trace, "sft_step");
        rc = sft_step(run, job);
        char args[64];
        snprintf(args, sizeof args, "{\"step\":%lld}", (long long)job->step);
        tern_trace_end(run->session->trace, span, args);
        tern_msg_free(job);
        if (rc != TERN_OK)
            return rc;
        if (atomic_load(&run->stop) && s + 1 < run->set.sft_steps) {
            rc = report_stopped(run, s + 1, 0);
            return rc == TERN_OK ? 1 : rc;
        }
    }
    return 0;
}

/* ---- RL ---------------------------------------------------------------- */

/* The groups one step trains on, in the order the buffer handed them out. */
typedef struct batch {
    tern_experience *g; /* [n] */
    size_t n;
} batch;

static void batch_free(batch *b)
{
    for (size_t i = 0; i < b->n; i++)
        tern_experience_clear(&b->g[i]);
    free(b->g);
    memset(b, 0, sizeof *b);
}

static int add_consumed(tern_step_msg *rep, uint64_t id)
{
    uint64_t *c = realloc(rep->consumed, (rep->n_consumed + 1) * sizeof *c);
    if (!c)
        return tern_errorf(TERN_ENOMEM, "trainer: out of memory");
    rep->consumed = c;
    c[rep->n_consumed++] = id;
    return TERN_OK;
}

/* Groups taken and dropped as too stale for the sync plugin: the master
 * deals stand-ins now, for this step waits for them. */
static int note_stale(tern_run *run, int64_t step, uint64_t n)
{
    tern_step_msg *m = new_report(TERN_MSG_SKIPPED, step);
    if (!m)
        return tern_errorf(TERN_ENOMEM, "trainer: out of memory");
    m->stale = n;
    return push_report(run, m);
}

/* One group handed out by the buffer: decoded, checked against the run,
 * judged by the sync plugin. 1 kept in b, 0 dropped as stale, < 0 failed. */
static int take_group(tern_run *run, int64_t step, const tern_record *rec, batch *b,
                      tern_step_msg *rep, double *staleness)
{
    tern_experience e;
    int rc = tern_experience_decode(rec->data, rec->len, &e);
    if (rc != TERN_OK)
        return tern_role_failed(rc, "trainer", "a buffer record");
    if (e.n != run->set.group_size || e.group >= run->set.batch_tasks || e.batch < 0 ||
        e.task_index >= run->train.n) {
        rc = tern_errorf(TERN_EINVAL, "trainer: the buffer handed out a group of batch %lld "
                         "(slot %u, task %u, %u responses) that this run did not make (it "
                         "deals %u tasks x %u responses from %zu tasks): a durable buffer's "
                         "file from another run? Give the run its own buffer.path",
                         (long long)e.batch, e.group, e.task_index, e.n, run->set.batch_tasks,
                         run->set.group_size, run->train.n);
        tern_experience_clear(&e);
        return rc;
    }
    uint64_t id = tern_group_id(e.batch, e.group, run->set.batch_tasks);
    /* A version above the step's: after a resume, a group a durable buffer
     * kept from weights the kill lost (they were never checkpointed). It is
     * judged as fresh; its behaviour log-probs are those of the weights that
     * made it, which the loss's ratio corrects for. */
    int64_t v = e.version > step ? step : e.version;
    *staleness += (double)(step - v);
    tern_error_clear();
    int ok;
    TERN_SYNC_OP(run, "accept", ok = run->sync_ops->accept(run->sync, v, step));
    if (ok < 0) {
        tern_experience_clear(&e);
        return tern_role_failed(ok, "trainer", "the sync plugin's accept failed");
    }
    if (!ok) {
        char args[160];
        snprintf(args, sizeof args, "{\"batch\":%lld,\"group\":%u,\"version\":%lld,"
                 "\"step\":%lld}", (long long)e.batch, e.group, (long long)e.version,
                 (long long)step);
        tern_trace_instant(run->session->trace, "skip", args);
        tern_experience_clear(&e);
        rep->stale++;
        rc = add_consumed(rep, id); /* dropped for good: consumed */
        return rc == TERN_OK ? 0 : rc;
    }
    b->g[b->n++] = e;
    return 1;
}

/* Read the step's `want` groups from the buffer into *b, in the order it
 * hands them out; the groups the sync plugin's accept() refuses are dropped
 * (and counted), and more are read. 1 when a stop was requested while
 * waiting, TERN_ECLOSED at shutdown, else a status. */
static int read_groups(tern_run *run, int64_t step, size_t want, batch *b, tern_step_msg *rep)
{
    b->g = calloc(want, sizeof *b->g);
    tern_record *recs = calloc(want, sizeof *recs);
    if (!b->g || !recs) {
        free(recs);
        return tern_errorf(TERN_ENOMEM, "trainer: out of memory");
    }
    size_t taken = 0;
    double staleness = 0, t0 = tern_run_now();
    int rc = TERN_OK;
    while (b->n < want) {
        if (atomic_load(&run->failed)) {
            rc = TERN_ECLOSED;
            break;
        }
        if (atomic_load(&run->stop)) {
            rc = 1;
            break;
        }
        for (size_t i = 0; i < want; i++)
            recs[i].size = sizeof recs[i];
        size_t got = 0;
        tern_error_clear();
        TERN_BUFFER_OP(run, "get",
                       rc = run->buffer_ops->get(run->buffer, recs, want - b->n, &got, 200));
        if (rc == TERN_ETIMEDOUT) {
            rc = TERN_OK;
            continue;
        }
        if (rc != TERN_OK) {
            if (rc != TERN_ECLOSED)
                rc = tern_role_failed(rc, "trainer", "reading the buffer");
            break;
        }
        uint64_t stale = rep->stale;
        for (size_t i = 0; i < got && rc == TERN_OK; i++) {
            int k = take_group(run, step, &recs[i], b, rep, &staleness);
            rc = k < 0 ? k : TERN_OK;
        }
        taken += got;
        run->buffer_ops->release(run->buffer, recs, got);
        if (rc == TERN_OK && rep->stale > stale)
            rc = note_stale(run, step, rep->stale - stale);
        if (rc != TERN_OK)
            break;
    }
    free(recs);
    rep->wait_seconds = tern_run_now() - t0;
    rep->staleness = taken ? staleness / (double)taken : 0;
    return rc;
}

typedef struct step_arrays {
    size_t n;
    tern_sequence *seq;
    int32_t **tok;
    const tern_exp_response **resp;
    float **lp, **ent, **ref, **dl, **dent;
    tern_loss_seq *ls;
    double *reward, *adv;
    uint32_t *len;
    int *correct;
    /* [n] each response's loss mask (1: the model's token), NULL for a
     * one-answer response (every token the model's) */
    unsigned char **mask;
    /* The model's sequences, response after response: one per response,
     * and one more per restart (a prompt segment: a workflow's call that
     * rewrote the history is scored after its own prompt, not after the
     * turns before). Each is a window on its response's buffers, so what
     * the model writes lands where the loss reads it. Response i's are
     * [first[i], first[i + 1]); n_ms in all. */
    size_t n_ms;
    size_t *first;      /* [n + 1] */
    tern_sequence *ms;  /* [n_ms] */
    float **ms_lp, **ms_ent, **ms_ref, **ms_dl, **ms_dent; /* [n_ms] the windows */
} step_arrays;

static void arrays_free(step_arrays *a)
{
    for (size_t i = 0; i < a->n; i++) {
        if (a->tok) free(a->tok[i]);
        if (a->lp) free(a->lp[i]);
        if (a->ent) free(a->ent[i]);
        if (a->ref) free(a->ref[i]);
        if (a->dl) free(a->dl[i]);
        if (a->dent) free(a->dent[i]);
        if (a->mask) free(a->mask[i]);
    }
    free(a->seq), free(a->tok), free(a->resp), free(a->lp), free(a->ent), free(a->ref);
    free(a->dl), free(a->dent), free(a->ls), free(a->reward), free(a->adv), free(a->len);
    free(a->correct);
    free(a->mask);
    free(a->first), free(a->ms), free(a->ms_lp), free(a->ms_ent), free(a->ms_ref);
    free(a->ms_dl), free(a->ms_dent);
    memset(a, 0, sizeof *a);
}

/* Model sequence j: the window [begin, begin + len) of response i's
 * buffers, scored from `start` on. */
static void window(step_arrays *a, size_t i, size_t j, size_t begin, size_t len, size_t start)
{
    a->ms[j] = a->seq[i];
    a->ms[j].tokens = a->tok[i] + begin;
    a->ms[j].len = len;
    a->ms[j].start = start;
    a->ms_lp[j] = a->lp[i] + begin, a->ms_ent[j] = a->ent[i] + begin;
    a->ms_ref[j] = a->ref[i] + begin, a->ms_dl[j] = a->dl[i] + begin;
    a->ms_dent[j] = a->dent[i] + begin;
}

/* The model's sequences of the responses (step_arrays.ms): a response's
 * first is the group's prompt and its tokens up to its first restart; each
 * restart's begins with the restart's prompt. */
static int windows_alloc(step_arrays *a)
{
    size_t n_ms = a->n;
    for (size_t i = 0; i < a->n; i++)
        for (uint32_t k = 0; k < a->resp[i]->n_segments; k++)
            n_ms += a->resp[i]->segments[k].kind == TERN_SEGMENT_PROMPT;
    size_t m = n_ms ? n_ms : 1;
    a->n_ms = n_ms;
    a->first = calloc(a->n + 1, sizeof *a->first);
    a->ms = calloc(m, sizeof *a->ms);
    a->ms_lp = calloc(m, sizeof *a->ms_lp), a->ms_ent = calloc(m, sizeof *a->ms_ent);
    a->ms_ref = calloc(m, sizeof *a->ms_ref), a->ms_dl = calloc(m, sizeof *a->ms_dl);
    a->ms_dent = calloc(m, sizeof *a->ms_dent);
    if (!a->first || !a->ms || !a->ms_lp || !a->ms_ent || !a->ms_ref || !a->ms_dl ||
        !a->ms_dent)
        return TERN_ENOMEM;
    size_t j = 0;
    for (size_t i = 0; i < a->n; i++) {
        const tern_exp_response *r = a->resp[i];
        size_t begin = 0, start = a->seq[i].start, t = start; /* t: in the buffers */
        a->first[i] = j;
        for (uint32_t k = 0; k < r->n_segments; t += r->segments[k++].len)
            if (r->segments[k].kind == TERN_SEGMENT_PROMPT) {
                window(a, i, j++, begin, t - begin, start);
                begin = t, start = r->segments[k].len;
            }
        window(a, i, j++, begin, a->seq[i].len - begin, start);
    }
    a->first[a->n] = j;
    return TERN_OK;
}

/* One response per loss entry, group after group: the prompt, then the
 * response (the tokens the loss reads); the model's sequences are windows
 * on them (windows_alloc). */
static int arrays_alloc(step_arrays *a, const batch *b, uint32_t G, float temp)
{
    size_t n = b->n * G;
    a->n = n;
    a->seq = calloc(n, sizeof *a->seq);
    a->tok = calloc(n, sizeof *a->tok);
    a->resp = calloc(n, sizeof *a->resp);
    a->lp = calloc(n, sizeof *a->lp);
    a->ent = calloc(n, sizeof *a->ent);
    a->ref = calloc(n, sizeof *a->ref);
    a->dl = calloc(n, sizeof *a->dl);
    a->dent = calloc(n, sizeof *a->dent);
    a->ls = calloc(n, sizeof *a->ls);
    a->reward = calloc(n, sizeof *a->reward);
    a->adv = calloc(n, sizeof *a->adv);
    a->len = calloc(n, sizeof *a->len);
    a->correct = calloc(n, sizeof *a->correct);
    a->mask = calloc(n, sizeof *a->mask);
    if (!a->seq || !a->tok || !a->resp || !a->lp || !a->ent || !a->ref || !a->dl || !a->dent ||
        !a->ls || !a->reward || !a->adv || !a->len || !a->correct || !a->mask)
        return TERN_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const tern_experience *g = &b->g[i / G];
        const tern_exp_response *r = &g->resp[i % G];
        size_t P = g->prompt_len, len = P + r->len;
        a->tok[i] = malloc((len + 1) * sizeof(int32_t));
        a->lp[i] = calloc(len + 1, sizeof(float));
        a->ent[i] = calloc(len + 1, sizeof(float));
        a->ref[i] = calloc(len + 1, sizeof(float));
        a->dl[i] = calloc(len + 1, sizeof(float));
        a->dent[i] = calloc(len + 1, sizeof(float));
        if (!a->tok[i] || !a->lp[i] || !a->ent[i] || !a->ref[i] || !a->dl[i] || !a->dent[i])
            return TERN_ENOMEM;
        memcpy(a->tok[i], g->prompt, P * sizeof(int32_t));
        memcpy(a->tok[i] + P, r->tokens, r->len * sizeof(int32_t));
        a->resp[i] = r;
        a->seq[i] = (tern_sequence){.size = sizeof a->seq[i], .tokens = a->tok[i], .len = len,
                                    .start = P, .temperature = temp};
        a->reward[i] = r->reward;
        a->len[i] = r->len;
        a->correct[i] = r->accuracy >= 0.5;
        /* a trajectory: train on the model's segments only, exactly the
         * ids it sampled; its length (the length penalty) is theirs */
        if (r->n_segments > 1 || (r->n_segments == 1 && r->segments[0].kind != TERN_SEGMENT_MODEL)) {
            if (!(a->mask[i] = malloc(r->len ? r->len : 1)))
                return TERN_ENOMEM;
            uint32_t t = 0, model = 0;
            for (uint32_t k = 0; k < r->n_segments; k++)
                for (uint32_t j = 0; j < r->segments[k].len; j++, t++) {
                    a->mask[i][t] = r->segments[k].kind == TERN_SEGMENT_MODEL;
                    model += a->mask[i][t];
                }
            a->len[i] = model;
        }
    }
    return windows_alloc(a);
}

/* The images of groups [g0, g1) (this rank's share), read again from the
 * files the explorer generated from and attached to the groups' sequences
 * (G each), for the policy's and the reference's scoring and the backward
 * pass. A file whose bytes changed since (another SHA-256 than the
 * group's) is refused: the group would be trained on pixels it was not
 * sampled from (a replay, a resume). imgs[g] for group g. */
static int rl_images(const tern_run *run, const batch *b, size_t g0, size_t g1, uint32_t G,
                     tern_loaded_image *imgs, step_arrays *a)
{
    for (size_t g = g0; g < g1; g++) {
        const tern_experience *e = &b->g[g];
        if (!e->image)
            continue;
        char id[160];
        snprintf(id, sizeof id, "batch %lld, group %u (task %s)", (long long)e->batch, e->group,
                 e->task_id);
        if (!run->reads_images)
            return tern_errorf(TERN_EINVAL, "trainer: %s has an image (%s), and the policy "
                               "reads text only: a buffer's groups from another run? Give the "
                               "run its own buffer.path", id, e->image);
        int rc = tern_image_load(e->image, &imgs[g]);
        if (rc != TERN_OK)
            return tern_errorf(rc, "trainer: %s: %s: the group's responses were generated "
                               "from it; restore the file", id, tern_error_message());
        if (memcmp(imgs[g].sha256, e->image_sha256, sizeof e->image_sha256) != 0) {
            char now[65], then[65];
            tern_sha256_to_hex(imgs[g].sha256, now);
            tern_sha256_to_hex(e->image_sha256, then);
            return tern_errorf(TERN_EINVAL, "trainer: %s: image %s changed since it was "
                               "sampled (its SHA-256 is %s now, %s then): the group must be "
                               "trained on the pixels its responses were generated from; "
                               "restore the file, or start a new run (with a new buffer "
                               "file)", id, e->image, now, then);
        }
        for (uint32_t s = 0; s < G; s++) { /* the sequence with the group's prompt */
            a->ms[a->first[g * G + s]].images = &imgs[g].image;
            a->ms[a->first[g * G + s]].n_images = 1;
        }
    }
    return TERN_OK;
}

/* The AdamW steps a step makes: trainer.mini_batches x trainer.epochs. */
static uint64_t step_updates(const tern_run_settings *set)
{
    return (uint64_t)set->mini_batches * set->epochs;
}

/* Whether this step's loss may take the explorer's log-probs for the
 * trainer's and skip the scoring pass (trainer.score_pass = "auto"): every
 * group made by the current weights (a version above the step's, after a
 * resume, came from weights the kill lost), sampled without truncation (so
 * its log-probs are the full softmax's at the temperature score uses), and
 * a loss that needs nothing else from a scoring pass: no entropy bonus and
 * no off-policy correction (which compares the two). A KL to the reference
 * still scores the batch under the reference, and its estimate then takes
 * the explorer's log-probs for the policy's (at the first step, weights
 * equal, it reads the rounding between the two, about 1e-7, where a scoring
 * pass gave exactly 0). One update per batch is the rest of "on-policy":
 * with several (trainer.mini_batches x epochs) the batch is scored first,
 * and each mini-batch again once the weights have moved. */
static int skip_score(const tern_run *run, int64_t step, const batch *b)
{
    const tern_run_settings *set = &run->set;
    if (set->score_always || set->top_k > 0 || set->top_p < 1 || step_updates(set) > 1 ||
        set->loss.entropy_coef != 0 || set->loss.off_policy != TERN_OFF_POLICY_NONE)
        return 0;
    for (size_t i = 0; i < b->n; i++)
        if (b->g[i].version != step)
            return 0;
    return 1;
}

/* After a backward pass that stood in for the scoring pass: every rank gets
 * the batch's log-probs and entropies from it, and the step's figures
 * (entropy, ratio, the explorer/trainer mismatch, the loss) are computed
 * from them. A model that did not write them (ABI < 1.11) leaves NaN: the
 * figures it would have given are then reported as missing. */
static int backward_figures(tern_run *run, step_arrays *a, tern_step_batch *sb,
                            tern_step_msg *rep, int need_ref)
{
    uint32_t G = run->set.group_size;
    int rc = tern_dp_gather(run->dp, a->lp, a->seq, a->n, G);
    if (rc == TERN_OK)
        rc = tern_dp_gather(run->dp, a->ent, a->seq, a->n, G);
    if (rc != TERN_OK)
        return rc;
    int written = 1;
    for (size_t i = 0; i < a->n && written; i++)
        for (size_t t = a->seq[i].start; t < a->seq[i].len && written; t++)
            written = !isnan(a->lp[i][t]) && !isnan(a->ent[i][t]);
    if (!written) {
        rep->loss.entropy = NAN;
        rep->loss.mismatch_kl = NAN;
        return TERN_OK;
    }
    for (size_t i = 0; i < a->n; i++)
        sb->seq[i].entropy = a->ent[i] + a->seq[i].start;
    if ((rc = tern_step_loss_figures(&run->set, need_ref, sb, &rep->loss)) != TERN_OK)
        rc = tern_role_failed(rc, "trainer", "the step's figures");
    return rc;
}

/* The loss over groups [ga, gb) of the step's batch alone, from the
 * sequences' logp as they are now: the advantages (of the whole batch)
 * stay, dlogp and dentropy are written for those groups' tokens. */
static int mini_batch_loss(const tern_run *run, int need_ref, const tern_step_batch *sb,
                           size_t ga, size_t gb, tern_loss_stats *st)
{
    size_t r0 = ga * sb->group_size;
    tern_step_batch mb = *sb;
    mb.n_groups = gb - ga;
    mb.seq = sb->seq + r0;
    mb.reward = sb->reward + r0;
    mb.len = sb->len + r0;
    mb.correct = sb->correct + r0;
    mb.adv = sb->adv + r0;
    return tern_step_loss_figures(&run->set, need_ref, &mb, st);
}

/* A step of several updates (trainer.mini_batches x trainer.epochs, as
 * verl's ppo_mini_batch_size and ppo_epochs): epoch after epoch, the
 * batch's groups in mini_batches consecutive mini-batches (as even as
 * whole groups allow), each one AdamW step. The first update's log-probs
 * are the batch's scoring pass, made at these weights; every later one
 * scores its mini-batch again (the weights have moved), and its loss is
 * over its own tokens, against the explorer's behaviour log-probs, with the
 * advantages of the whole batch, so the PPO clip bounds how far the updates
 * take each token. With trainer ranks each scores and back-propagates its
 * share of every mini-batch. The step reports the whole batch's loss from
 * before the updates, the clip fraction and mean ratio over every update's
 * tokens, and the last update's gradient norm. */
static int several_updates(tern_run *run, int64_t step, step_arrays *a, const tern_step_batch *sb,
                           int need_ref, tern_step_msg *rep)
{
    const tern_run_settings *set = &run->set;
    uint32_t G = set->group_size;
    tern_dp *dp = run->dp;
    size_t n_groups = sb->n_groups;
    size_t M = set->mini_batches < n_groups ? set->mini_batches : n_groups;
    double clipped = 0, ratio = 0;
    size_t tokens = 0;
    int rc = TERN_OK;
    for (uint32_t e = 0; e < set->epochs && rc == TERN_OK; e++)
        for (size_t m = 0; m < M && rc == TERN_OK; m++) {
            size_t ga, gb, s0, s1;
            tern_share_of(n_groups, (int)m, (int)M, &ga, &gb);
            tern_dp_share(dp, gb - ga, &s0, &s1);
            size_t r0 = ga * G, nr = (gb - ga) * G;  /* the mini-batch's responses */
            size_t lo = r0 + s0 * G, k = (s1 - s0) * G; /* this rank's share of them */
            size_t mlo = a->first[lo], mk = a->first[lo + k] - mlo;
            if (e > 0 || m > 0) {
                uint64_t span = tern_trace_begin(run->session->trace, "score");
                if (mk)
                    rc = tern_model_score(&run->policy, "trainer: score (policy, an update)",
                                          a->ms + mlo, mk, a->ms_lp + mlo, a->ms_ent + mlo);
                if ((rc = tern_dp_agree(dp, rc)) == TERN_OK)
                    rc = tern_dp_gather(dp, a->lp + r0, a->seq + r0, nr, G);
                if (rc == TERN_OK)
                    rc = tern_dp_gather(dp, a->ent + r0, a->seq + r0, nr, G);
                tern_trace_end(run->session->trace, span, NULL);
            }
            tern_loss_stats st;
            if (rc == TERN_OK && (rc = mini_batch_loss(run, need_ref, sb, ga, gb, &st)) != TERN_OK)
                rc = tern_role_failed(rc, "trainer", "an update's loss");
            if (rc != TERN_OK)
                break;
            clipped += st.clip_frac * (double)st.tokens;
            ratio += st.ratio_mean * (double)st.tokens;
            tokens += st.tokens;
            uint64_t span = tern_trace_begin(run->session->trace, "backward");
            if (mk)
                rc = tern_model_backward(&run->policy, "trainer: backward", a->ms + mlo, mk,
                                         (const float *const *)a->ms_dl + mlo,
                                         set->loss.entropy_coef != 0
                                             ? (const float *const *)a->ms_dent + mlo : NULL);
            if ((rc = tern_dp_agree(dp, rc)) == TERN_OK)
                rc = tern_dp_sum_gradients(dp, &run->policy);
            tern_trace_end(run->session->trace, span, NULL);
            if (rc != TERN_OK)
                break;
            tern_optim_step os = {.size = sizeof os, .lr = tern_run_lr(set, step),
                                  .beta1 = set->beta1, .beta2 = set->beta2, .eps = set->adam_eps,
                                  .weight_decay = set->weight_decay, .grad_clip = set->grad_clip};
            rc = tern_model_step(&run->policy, "trainer: optimiser step", &os);
            if ((rc = tern_dp_agree(dp, rc)) == TERN_OK) {
                rep->grad_norm = os.grad_norm;
                rep->lr = os.lr;
            }
        }
    if (rc == TERN_OK && tokens) {
        rep->loss.clip_frac = clipped / (double)tokens;
        rep->loss.ratio_mean = ratio / (double)tokens;
    }
    return rc;
}

/* One RL step's training on the groups of b: on one trainer, or with the
 * other trainer ranks (data_parallel.h), each scoring and back-propagating
 * its share of the groups and computing the loss over all of them. Every
 * collective is preceded by an agreement on the statuses, so a failure
 * anywhere ends the step everywhere. */
static int train_on(tern_run *run, int64_t step, batch *b, tern_step_msg *rep)
{
    const tern_run_settings *set = &run->set;
    uint32_t G = set->group_size;
    float temp = set->temperature > 0 ? (float)set->temperature : 1.0f;
    tern_dp *dp = run->dp;
    step_arrays a = {0};
    tern_loaded_image *imgs = calloc(b->n ? b->n : 1, sizeof *imgs);
    int rc = imgs ? arrays_alloc(&a, b, G, temp) : TERN_ENOMEM;
    if (rc != TERN_OK)
        rc = tern_errorf(TERN_ENOMEM, "trainer: out of memory");
    for (size_t j = 0; rc == TERN_OK && j < a.n_ms; j++)
        rep->train_tokens += a.ms[j].len;
    int need_ref = run->reference.ops && set->loss.kl != TERN_KL_NONE;
    int skip = skip_score(run, step, b);
    size_t n_groups = b->n, g0, g1;
    tern_dp_share(dp, n_groups, &g0, &g1);
    size_t lo = g0 * G, k = (g1 - g0) * G; /* this rank's responses: [lo, lo + k) */
    /* and the model's sequences of them: [mlo, mlo + mk) */
    size_t mlo = rc == TERN_OK ? a.first[lo] : 0, mk = rc == TERN_OK ? a.first[lo + k] - mlo : 0;
    /* several updates: every rank's mini-batch shares hold other groups */
    if (rc == TERN_OK)
        rc = step_updates(set) > 1 ? rl_images(run, b, 0, n_groups, G, imgs, &a)
                                   : rl_images(run, b, g0, g1, G, imgs, &a);
    /* a `score` span for either pass; skipping the policy's, it says which ran */
    uint64_t span = skip && !need_ref ? 0 : tern_trace_begin(run->session->trace, "score");
    if (rc == TERN_OK && mk && !skip)
        rc = tern_model_score(&run->policy, "trainer: score (policy)", a.ms + mlo, mk,
                              a.ms_lp + mlo, a.ms_ent + mlo);
    if (rc == TERN_OK && mk && need_ref)
        rc = tern_model_score(&run->reference, "trainer: score (reference)", a.ms + mlo, mk,
                              a.ms_ref + mlo, NULL);
    if ((rc = tern_dp_agree(dp, rc)) == TERN_OK && !skip)
        rc = tern_dp_gather(dp, a.lp, a.seq, a.n, G);
    if (rc == TERN_OK && !skip)
        rc = tern_dp_gather(dp, a.ent, a.seq, a.n, G);
    if (rc == TERN_OK && need_ref)
        rc = tern_dp_gather(dp, a.ref, a.seq, a.n, G);
    tern_trace_end(run->session->trace, span, skip ? "{\"models\":\"reference\"}" : NULL);
    if (rc != TERN_OK)
        goto done;

    /* From here to the backward pass every trainer rank computes the same
     * numbers over the whole batch. Skipping the scoring pass, the loss
     * takes the explorer's log-probs for the trainer's: the same weights
     * made them (the ratio is 1, as in exact arithmetic). */
    for (size_t i = 0; i < a.n; i++) {
        size_t P = a.seq[i].start;
        if (skip)
            memcpy(a.lp[i] + P, a.resp[i]->logp, (a.seq[i].len - P) * sizeof(float));
        a.ls[i] = (tern_loss_seq){.n = a.seq[i].len - P,
                                  .logp = a.lp[i] + P,
                                  .logp_old = a.resp[i]->logp,
                                  .logp_ref = need_ref ? a.ref[i] + P : NULL,
                                  .entropy = skip ? NULL : a.ent[i] + P,
                                  .dlogp = a.dl[i] + P,
                                  .dentropy = a.dent[i] + P,
                                  .mask = a.mask[i]};
    }
    tern_step_batch sb = {.n_groups = n_groups, .group_size = G, .seq = a.ls,
                          .reward = a.reward, .len = a.len, .correct = a.correct, .adv = a.adv};
    if ((rc = tern_step_loss(set, need_ref, &sb, &rep->loss, &rep->reward_mean)) != TERN_OK) {
        rc = tern_role_failed(rc, "trainer", "the step's loss");
        goto done;
    }
    if (step_updates(set) > 1) {
        rc = several_updates(run, step, &a, &sb, need_ref, rep);
        goto done;
    }
    /* the backward pass's own log-probs and entropies, for the figures:
     * NaN until the model writes them (ABI 1.11) */
    for (size_t j = 0; skip && j < a.n_ms; j++) {
        /* a restart's prompt keeps its 0s: no sequence scores it */
        for (size_t t = a.ms[j].start; t < a.ms[j].len; t++)
            a.ms_lp[j][t] = a.ms_ent[j][t] = NAN;
        a.ms[j].logp_out = a.ms_lp[j];
        a.ms[j].entropy_out = a.ms_ent[j];
    }
    span = tern_trace_begin(run->session->trace, "backward");
    if (mk)
        rc = tern_model_backward(&run->policy, "trainer: backward", a.ms + mlo, mk,
                                 (const float *const *)a.ms_dl + mlo,
                                 set->loss.entropy_coef != 0
                                     ? (const float *const *)a.ms_dent + mlo : NULL);
    /* the whole batch's gradient: every rank's share summed */
    if ((rc = tern_dp_agree(dp, rc)) == TERN_OK)
        rc = tern_dp_sum_gradients(dp, &run->policy);
    tern_trace_end(run->session->trace, span, NULL);
    if (rc == TERN_OK && skip)
        rc = backward_figures(run, &a, &sb, rep, need_ref);
    if (rc != TERN_OK)
        goto done;
    tern_optim_step st = {.size = sizeof st, .lr = tern_run_lr(set, step), .beta1 = set->beta1,
                          .beta2 = set->beta2, .eps = set->adam_eps,
                          .weight_decay = set->weight_decay, .grad_clip = set->grad_clip};
    rc = tern_model_step(&run->policy, "trainer: optimiser step", &st);
    if ((rc = tern_dp_agree(dp, rc)) != TERN_OK)
        goto done;
    rep->grad_norm = st.grad_norm;
    rep->lr = st.lr;
done:
    arrays_free(&a);
    for (size_t g = 0; imgs && g < b->n; g++)
        tern_image_unload(&imgs[g]);
    free(imgs);
    return rc;
}

static int eval_due(const tern_run *run, int64_t done)
{
    if (!run->eval.n)
        return 0;
    return done == run->set.steps || (run->set.eval_every > 0 && done % run->set.eval_every == 0);
}

static int save_due(const tern_run *run, int64_t done)
{
    return done == run->set.steps || (run->set.save_every > 0 && done % run->set.save_every == 0);
}

/* Publish the policy as `version`: a `sync` span while the transport takes
 * it (the store adds a `publish` instant once explorers can load it; a
 * checkpoint store writes the file on its own thread, after this span). */
static int publish(tern_run *run, int64_t version)
{
    tern_trace *tr = run->session->trace;
    char args[96];
    snprintf(args, sizeof args, "{\"method\":\"%s\",\"version\":%lld}", run->transport,
             (long long)version);
    uint64_t span = tern_trace_begin(tr, "sync");
    int rc = tern_weights_publish(run->weights, &run->policy, version);
    tern_trace_end(tr, span, args);
    if (rc != TERN_OK)
        return tern_role_failed(rc, "trainer", "publishing the weights");
    if (TERN_HAS(run->buffer_ops, advance) && run->buffer_ops->advance)
        run->buffer_ops->advance(run->buffer, version);
    return TERN_OK;
}

/* The train span's arguments: the step, and the distinct batches and
 * weight versions of its groups, in the order they came. */
static void train_args(int64_t step, const batch *b, char *buf, size_t n)
{
    size_t w = (size_t)snprintf(buf, n, "{\"step\":%lld,\"batches\":[", (long long)step);
    for (int pass = 0; pass < 2; pass++) {
        int first = 1;
        for (size_t i = 0; i < b->n && w < n; i++) {
            int64_t v = pass ? b->g[i].version : b->g[i].batch;
            int again = 0;
            for (size_t j = 0; j < i && !again; j++)
                again = (pass ? b->g[j].version : b->g[j].batch) == v;
            if (!again) {
                w += (size_t)snprintf(buf + w, n - w, "%s%lld", first ? "" : ",", (long long)v);
                first = 0;
            }
        }
        if (w < n)
            w += (size_t)snprintf(buf + w, n - w, pass ? "]}" : "],\"versions\":[");
    }
    if (w >= n && n > 2) /* too many to list: valid JSON all the same */
        snprintf(buf, n, "{\"step\":%lld}", (long long)step);
}

/* Train on the step's groups (traced as `train`), and at a checkpoint
 * step make sure every trainer rank holds the same weights. */
static int train_step(tern_run *run, int64_t step, batch *b, tern_step_msg *rep)
{
    tern_trace *tr = run->session->trace;
    char args[1024];
    double ts = tern_run_now();
    uint64_t span = tern_trace_begin(tr, "train");
    int rc = train_on(run, step, b, rep);
    train_args(step, b, args, sizeof args);
    tern_trace_end(tr, span, args);
    rep->train_seconds = tern_run_now() - ts;
    if (rc == TERN_OK && save_due(run, step + 1))
        rc = tern_dp_check_same(run->dp, &run->policy, step + 1);
    return rc;
}

/* One RL step; 1 when it stopped on request instead. */
static int rl_step(tern_run *run, int64_t step)
{
    size_t want = run->set.batch_tasks;
    tern_step_msg *rep = new_report(TERN_MSG_STEP_DONE, step + 1);
    if (!rep)
        return tern_errorf(TERN_ENOMEM, "trainer: out of memory");
    batch b = {0};
    tern_trace *tr = run->session->trace;
    uint64_t t0 = tern_trace_clock();
    int rc = read_groups(run, step, want, &b, rep);
    uint64_t t1 = tern_trace_clock();
    char args[1024];
    if (t1 - t0 >= TERN_TRACE_MIN_WAIT_NS) {
        snprintf(args, sizeof args, "{\"for\":\"experiences\",\"step\":%lld}",
                 (long long)step);
        tern_trace_span(tr, "wait", t0, t1, args);
    }
    if (rc == 1) { /* stop requested while waiting: checkpoint what is done */
        /* the groups read so far are not trained: not consumed (a durable
         * buffer hands them out again after the resume) */
        batch_free(&b);
        tern_msg_free(rep);
        if (step > 0 && save_due(run, step)) {
            /* the step before saved `step` already, and the master may be
             * completing that very step-N.tmp now: saving it again would
             * race with its rename. Stop with that checkpoint. */
            tern_step_msg *m = new_report(TERN_MSG_STOPPED, step);
            if (!m)
                return tern_errorf(TERN_ENOMEM, "trainer: out of memory");
            m->in_rl = 1;
            m->sft_step = -1;
            m->version = step;
            rc = push_report(run, m);
        } else {
            rc = report_stopped(run, -1, step);
        }
        return rc == TERN_OK ? 1 : rc;
    }
    if (rc != TERN_OK)
        goto fail;
    for (size_t i = 0; i < b.n && rc == TERN_OK; i++)
        rc = add_consumed(rep, tern_group_id(b.g[i].batch, b.g[i].group, run->set.batch_tasks));
    if (rc == TERN_OK)
        rc = tern_step_figures(run, b.g, b.n, step + 1, rep);
    /* the other trainer ranks train on the same groups */
    if (rc == TERN_OK)
        rc = tern_dp_order(run->dp, TERN_TRAIN_STEP, step, NULL, b.g, b.n);
    if (rc != TERN_OK)
        goto fail;
    int64_t done = step + 1;
    rc = train_step(run, step, &b, rep);
    batch_free(&b);
    if (rc != TERN_OK)
        goto fail;

    rep->version = done;
    tern_error_clear();
    int pub;
    TERN_SYNC_OP(run, "trainer_publishes", pub = run->sync_ops->trainer_publishes(run->sync, step));
    if (pub < 0) {
        rc = tern_role_failed(pub, "trainer", "the sync plugin's trainer_publishes failed");
        goto fail;
    }
    if (pub && done < run->set.steps) {
        if ((rc = publish(run, done)) != TERN_OK)
            goto fail;
        rep->published = 1;
    }
    if (eval_due(run, done) && !(rep->eval = tern_snapshot_of(&run->policy, done))) {
        rc = TERN_ENOMEM;
        goto fail;
    }
    int stopping = atomic_load(&run->stop) && done < run->set.steps;
    if ((save_due(run, done) || stopping) && (rc = save_policy(run, -1, done, &rep->saved)))
        goto fail;
    if (stopping) {
        rep->kind = TERN_MSG_STOPPED;
        rep->in_rl = 1;
    }
    rc = push_report(run, rep);
    if (rc != TERN_OK)
        return rc;
    return stopping ? 1 : TERN_OK;
fail:
    batch_free(&b);
    tern_msg_free(rep);
    return rc;
}

/* RL begins: the reference becomes a frozen copy of the policy (same_as),
 * the first weights are published, then the master hears RL_START (with the
 * weights to evaluate on a fresh run) and starts the explorers: they never
 * wait for a first version. */
static int rl_start(tern_run *run)
{
    int64_t v = run->resume.step;
    int rc = TERN_OK;
    tern_step_msg *m = new_report(TERN_MSG_RL_START, 0);
    if (!m)
        return tern_errorf(TERN_ENOMEM, "trainer: out of memory");
    if (!run->resume.rl_started) {
        if (run->reference_is_copy &&
            (rc = tern_weights_copy(&run->policy, &run->reference))) {
            tern_msg_free(m);
            return tern_role_failed(rc, "trainer", "copying the policy into the reference");
        }
        m->rl_fresh = 1;
        if (run->eval.n && !(m->eval = tern_snapshot_of(&run->policy, 0))) {
            tern_msg_free(m);
            return TERN_ENOMEM;
        }
        /* a warm-up-only run keeps what it learned */
        if (run->set.steps == 0 && (rc = save_policy(run, -1, 0, &m->saved)) != TERN_OK) {
            tern_msg_free(m);
            return rc;
        }
        if (run->reference_is_copy) {
            /* beside the checkpoints, for a resume; whole, as a checkpoint is */
            char dir[PATH_MAX + 32], tmp[PATH_MAX + 40];
            snprintf(dir, sizeof dir, "%s/checkpoints/reference", run->dir);
            snprintf(tmp, sizeof tmp, "%s.tmp", dir);
            rc = tern_model_save(&run->reference, "trainer: saving the reference", tmp, 0);
            if (rc != TERN_OK)
                tern_remove_tree(tmp);
            else
                rc = tern_checkpoint_publish(tmp, dir);
            if (rc != TERN_OK) {
                tern_msg_free(m);
                return rc;
            }
        }
    }
    /* the other trainer ranks' references become the same copy */
    if ((rc = tern_dp_order(run->dp, TERN_TRAIN_RL_START, 0, NULL, NULL, 0)) != TERN_OK) {
        tern_msg_free(m);
        return rc;
    }
    /* loadable before the explorers start: they never wait for a first version */
    if (run->set.steps > 0 && ((rc = publish(run, v)) != TERN_OK ||
                               (rc = tern_weights_flush(run->weights)) != TERN_OK)) {
        tern_msg_free(m);
        return rc;
    }
    return push_report(run, m);
}

void *tern_trainer_main(void *arg)
{
    tern_run *run = arg;
    tern_trace_name_lane(run->session->trace, "trainer");
    int rc = sft_stage(run);
    if (rc == 1 || rc == TERN_ECLOSED)
        return NULL;
    if (rc == TERN_OK)
        rc = rl_start(run);
    for (int64_t t = run->resume.step; rc == TERN_OK && t < run->set.steps; t++)
        rc = rl_step(run, t);
    if (rc < 0 && rc != TERN_ECLOSED)
        tern_report_failure(run, "trainer", rc);
    return NULL;
}

/* ---- a trainer rank other than the leader -------------------------------------- */

/* The groups of an order, decoded. */
static int order_groups(const tern_train_msg *o, batch *b)
{
    b->g = calloc(o->n ? o->n : 1, sizeof *b->g);
    if (!b->g)
        return tern_errorf(TERN_ENOMEM, "trainer: out of memory");
    for (uint32_t i = 0; i < o->n; i++) {
        int rc = tern_experience_decode(o->group[i], o->group_len[i], &b->g[b->n]);
        if (rc != TERN_OK)
            return tern_role_failed(rc, "trainer", "a group from the leading trainer");
        b->n++;
    }
    return TERN_OK;
}

static int follow(tern_run *run, const tern_train_msg *o)
{
    tern_trace *tr = run->session->trace;
    int rc = TERN_OK;
    if (o->order == TERN_TRAIN_SFT && o->sft) {
        uint64_t span = tern_trace_begin(tr, "sft_step");
        rc = sft_step(run, o->sft);
        char args[64];
        snprintf(args, sizeof args, "{\"step\":%lld}", (long long)o->sft->step);
        tern_trace_end(tr, span, args);
    } else if (o->order == TERN_TRAIN_RL_START) {
        if (!run->resume.rl_started && run->reference_is_copy &&
            (rc = tern_weights_copy(&run->policy, &run->reference)) != TERN_OK)
            rc = tern_role_failed(rc, "trainer", "copying the policy into the reference");
    } else if (o->order == TERN_TRAIN_STEP) {
        batch b = {0};
        tern_step_msg rep = {.kind = TERN_MSG_STEP_DONE}; /* the leader reports */
        rc = order_groups(o, &b);
        if (rc == TERN_OK)
            rc = train_step(run, o->step, &b, &rep);
        else
            tern_dp_agree(run->dp, rc); /* the step's first agreement: everyone gives up */
        batch_free(&b);
    } else {
        rc = tern_errorf(TERN_EINVAL, "trainer: order %u from the leading trainer is not one "
                         "this rank takes (a bug)", o->order);
    }
    return rc;
}

void *tern_trainer_follower_main(void *arg)
{
    tern_run *run = arg;
    tern_trace_name_lane(run->session->trace, "trainer");
    int reported = 0;
    for (;;) {
        tern_train_msg *o = NULL;
        int rc = tern_dp_next(run->dp, &o);
        int end = rc != TERN_OK || o->order == TERN_TRAIN_END;
        if (rc == TERN_OK && !end)
            rc = follow(run, o);
        tern_msg_free(o);
        /* a failure of our own is reported once; the leader ends the step
         * everywhere, then says END */
        if (rc < 0 && rc != TERN_ECLOSED && !reported) {
            char why[768];
            snprintf(why, sizeof why, "%s", tern_error_message());
            tern_errorf(rc, "trainer rank %d: %s", run->ranks ? run->ranks->rank : 0, why);
            tern_report_failure(run, "trainer", rc);
            reported = 1;
        }
        if (end)
            break;
    }
    return NULL;
}
