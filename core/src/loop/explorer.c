/* explorer.c: the explorer role (docs/architecture.md §2): a policy copy that, for each
 * batch the master hands it, loads the weights its sync plan names,
 * generates group_size responses per task (a task's image read and given
 * with its prompt) and sends them, with their behaviour log-probs, the
 * weight version and each image's file and digest, back to the master. Several
 * explorers (multi_explorer) take batches from one queue, each with its own
 * model instance.
 *
 * Trace (docs/sync.md): `wait` while the planned weights are not published
 * yet, `sync` while they are copied in, `rollout` while generating. */
#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"
#include "image/task_image.h"
#include "loop/run.h"
#include "loop/trajectories.h"
#include "rundir/trace.h"

/* Which weights batch `batch` uses, loaded into this explorer's model;
 * in the asynchronous modes the newest, and at least `min_version` (the
 * master counted on it when it dealt the batch: docs/sync.md, "Holding
 * explorers back"). */
static int load_weights(tern_run *run, uint32_t id, int64_t batch, int64_t min_version,
                        int64_t *version, double *waited_s)
{
    tern_trace *tr = run->session->trace;
    const tern_model *m = &run->explorers[id];
    tern_sync_plan plan = {.size = sizeof plan};
    tern_error_clear();
    int rc;
    TERN_SYNC_OP(run, "explorer_plan",
                 rc = run->sync_ops->explorer_plan(run->sync, id, batch, &plan));
    if (rc != TERN_OK)
        return tern_role_failed(rc, "explorer", "the sync plugin's explorer_plan failed");
    int64_t want = -1;
    int delivery = 0; /* waiting for a version published already, not for the trainer */
    if (plan.mode == TERN_SYNC_WAIT_FOR_VERSION) {
        want = plan.version;
        /* A resumed run has only the version it resumed at: a plan for an
         * older one (interval > 1) takes that. */
        int64_t first = run->resume.step;
        if (want < first)
            want = first;
    } else if (plan.mode != TERN_SYNC_USE_NEWEST) {
        return tern_errorf(TERN_EINVAL, "explorer: the sync plugin answered mode %u for batch "
                           "%lld, which is no tern_sync_mode (a bug in the plugin)",
                           plan.mode, (long long)batch);
    } else if (min_version > tern_weights_newest(run->weights) && min_version > *version) {
        /* published by the trainer, not yet here (a checkpoint file being
         * written, a broadcast on its way): wait for it */
        want = min_version;
        delivery = 1;
    }
    /* nothing to do when the model holds the wanted version already */
    if (want >= 0 && want == *version)
        return TERN_OK;
    if (want < 0 && *version >= 0 && tern_weights_newest(run->weights) == *version)
        return TERN_OK;
    uint64_t t0 = tern_trace_clock(), waited = 0;
    int64_t loaded = -1;
    rc = tern_weights_load(run->weights, m, want, &loaded, &waited);
    if (rc == TERN_EINVAL && plan.mode == TERN_SYNC_USE_NEWEST && want >= 0) {
        /* another explorer loaded a newer one meanwhile and forgot this one:
         * the newest is newer still */
        tern_error_clear();
        uint64_t more = 0;
        rc = tern_weights_load(run->weights, m, -1, &loaded, &more);
        waited += more;
    }
    uint64_t t1 = tern_trace_clock();
    *waited_s = 1e-9 * (double)waited;
    char args[160];
    if (waited >= TERN_TRACE_MIN_WAIT_NS) {
        snprintf(args, sizeof args, "{\"for\":\"%sweights version %lld\",\"explorer\":%u,"
                 "\"batch\":%lld}", delivery ? "delivery of " : "", (long long)want, id,
                 (long long)batch);
        tern_trace_span(tr, "wait", t0, t0 + waited, args);
    }
    if (rc != TERN_OK)
        return rc;
    snprintf(args, sizeof args, "{\"method\":\"%s\",\"version\":%lld,\"explorer\":%u}",
             run->transport, (long long)loaded, id);
    tern_trace_span(tr, "sync", t0 + waited, t1, args);
    *version = loaded;
    tern_weights_forget_before(run->weights, loaded);
    return TERN_OK;
}

/* The job's images, read and decoded for this batch's requests (and freed
 * once it is generated): task i's into imgs[i], attached to req[i], its
 * file and digest copied into the rollout. */
static int load_images(const tern_explore_job *job, tern_loaded_image *imgs,
                       tern_gen_request *req, tern_rollout_msg *out)
{
    if (!job->image)
        return TERN_OK;
    out->image = calloc(job->n, sizeof *out->image);
    out->image_sha256 = calloc(job->n ? job->n : 1, sizeof imgs->sha256);
    if (!out->image || !out->image_sha256)
        return tern_errorf(TERN_ENOMEM, "explorer: out of memory");
    for (uint32_t i = 0; i < job->n; i++) {
        if (!job->image[i])
            continue;
        int rc = tern_image_load(job->image[i], &imgs[i]);
        if (rc != TERN_OK)
            return tern_errorf(rc, "explorer: batch %lld, task %u: %s (it was read at start: "
                               "changed or removed since?)", (long long)job->batch,
                               job->task_index[i], tern_error_message());
        req[i].images = &imgs[i].image;
        req[i].n_images = 1;
        memcpy(out->image_sha256 + 32 * (size_t)i, imgs[i].sha256, sizeof imgs[i].sha256);
        if (!(out->image[i] = strdup(job->image[i])))
            return tern_errorf(TERN_ENOMEM, "explorer: out of memory");
    }
    return TERN_OK;
}

static int generate(tern_run *run, uint32_t id, const tern_explore_job *job,
                    tern_rollout_msg *out)
{
    const tern_model *h = &run->explorers[id];
    uint32_t G = run->set.group_size;
    size_t total = (size_t)job->n * G;
    tern_gen_request *req = calloc(job->n, sizeof *req);
    tern_loaded_image *imgs = calloc(job->n ? job->n : 1, sizeof *imgs);
    tern_gen_output *outs = calloc(total, sizeof *outs);
    out->task_index = calloc(job->n, sizeof *out->task_index);
    out->prompt_tokens = calloc(job->n, sizeof *out->prompt_tokens);
    out->prompt_len = calloc(job->n, sizeof *out->prompt_len);
    out->resp = calloc(total, sizeof *out->resp);
    out->n = job->n;
    out->group_size = G;
    int rc = TERN_OK;
    if (!req || !imgs || !outs || !out->task_index || !out->prompt_tokens || !out->prompt_len ||
        !out->resp) {
        rc = tern_errorf(TERN_ENOMEM, "explorer: out of memory");
        goto done;
    }
    int32_t stop = run->special.eos;
    for (uint32_t i = 0; i < job->n; i++) {
        out->task_index[i] = job->task_index[i];
        size_t n = 0;
        const char *mark = tern_run_placeholder(run, job->image && job->image[i]);
        rc = tern_run_prompt(h, "explorer", job->system[i], job->prompt[i], mark,
                             &out->prompt_tokens[i], &n);
        if (rc != TERN_OK)
            goto done;
        out->prompt_len[i] = (uint32_t)n;
        req[i] = (tern_gen_request){.size = sizeof req[i],
                                    .prompt = out->prompt_tokens[i],
                                    .prompt_len = n,
                                    .n_samples = G,
                                    .max_new_tokens = run->set.max_tokens,
                                    .temperature = (float)run->set.temperature,
                                    .top_k = run->set.top_k,
                                    .top_p = (float)run->set.top_p,
                                    .stop = &stop,
                                    .n_stop = 1,
                                    .seed = tern_run_seed(run, "explore", (uint64_t)job->batch, i)};
    }
    if ((rc = load_images(job, imgs, req, out)) != TERN_OK)
        goto done;
    for (size_t i = 0; i < total; i++)
        outs[i].size = sizeof outs[i];
    double t0 = tern_run_now();
    rc = tern_model_generate(h, "explorer: generate", req, job->n, outs);
    if (rc != TERN_OK)
        goto done;
    out->gen_seconds = tern_run_now() - t0;
    out->done_unix_ns = tern_run_unix_ns();
    for (size_t i = 0; i < total; i++) {
        tern_response *r = &out->resp[i];
        r->len = (uint32_t)outs[i].len;
        r->finish = outs[i].finish;
        r->tokens = malloc((r->len ? r->len : 1) * sizeof *r->tokens);
        r->logp = malloc((r->len ? r->len : 1) * sizeof *r->logp);
        if (r->tokens && r->logp) {
            memcpy(r->tokens, outs[i].tokens, r->len * sizeof *r->tokens);
            memcpy(r->logp, outs[i].logprobs, r->len * sizeof *r->logp);
        }
        out->gen_tokens += r->len;
        /* the text the reward reads: without the EOS that ended it */
        size_t textlen = r->len;
        if (textlen && r->finish == TERN_FINISH_STOP && outs[i].tokens[textlen - 1] == stop)
            textlen--;
        rc = tern_model_text(h, "explorer: detokenize", outs[i].tokens, textlen, &r->text, NULL);
        if (rc != TERN_OK)
            goto done;
        if (!r->tokens || !r->logp || !r->text) {
            rc = tern_errorf(TERN_ENOMEM, "explorer: out of memory");
            goto done;
        }
    }
done:
    tern_model_release_outputs(h, outs, total);
    for (uint32_t i = 0; imgs && i < job->n; i++)
        tern_image_unload(&imgs[i]);
    free(imgs);
    free(outs);
    free(req);
    return rc;
}

void *tern_explorer_main(void *arg)
{
    const tern_explorer_arg *ea = arg;
    tern_run *run = ea->run;
    uint32_t id = ea->id;
    tern_trace *tr = run->session->trace;
    char lane[32];
    snprintf(lane, sizeof lane, "explorer %u", id);
    tern_trace_name_lane(tr, lane);
    int64_t version = -1; /* the weights this explorer's model holds */
    for (;;) {
        uint64_t t0 = tern_trace_clock();
        int idle = atomic_load(&run->all_dealt); /* nothing left to deal: not a wait */
        tern_explore_job *job = tern_queue_pop(&run->explorer_jobs);
        if (!job)
            break;
        uint64_t t1 = tern_trace_clock();
        if (t1 - t0 >= TERN_TRACE_MIN_WAIT_NS && version >= 0 && !idle) {
            /* the master had no batch for us though the run needs more: it is
             * held up putting earlier ones into a full buffer (backpressure),
             * or it holds batches back until the trainer catches up
             * (max_staleness) */
            char args[96];
            snprintf(args, sizeof args, "{\"for\":\"a batch to generate\",\"explorer\":%u}",
                     id);
            tern_trace_span(tr, "wait", t0, t1, args);
        }
        tern_rollout_msg *out = calloc(1, sizeof *out);
        if (!out) {
            tern_msg_free(job);
            tern_errorf(TERN_ENOMEM, "explorer: out of memory");
            tern_report_failure(run, "explorer", TERN_ENOMEM);
            break;
        }
        out->kind = TERN_MSG_ROLLOUT;
        out->batch = job->batch;
        out->explorer = id;
        int rc = load_weights(run, id, job->plan_batch, job->min_version, &version,
                              &out->wait_seconds);
        out->version = version;
        if (rc == TERN_ECLOSED) { /* shutting down */
            tern_msg_free(job);
            tern_msg_free(out);
            break;
        }
        uint64_t span = tern_trace_begin(tr, "rollout");
        if (rc == TERN_OK)
            rc = TERN_RUN_TRAJECTORIES(run) ? tern_explore_trajectories(run, id, job, out)
                              : generate(run, id, job, out);
        char args[224];
        int at = snprintf(args, sizeof args, "{\"explorer\":%u,\"batch\":%lld,\"version\":%lld",
                          id, (long long)job->batch, (long long)out->version);
        if (rc == TERN_OK && TERN_RUN_TRAJECTORIES(run) && at > 0 && (size_t)at < sizeof args) {
            /* trajectories: how many turns, for the timeline (docs/timeline.md) */
            double turns = 0;
            uint32_t most = 0, n = out->n * out->group_size;
            for (uint32_t i = 0; i < n; i++) {
                turns += out->resp[i].n_turns;
                most = out->resp[i].n_turns > most ? out->resp[i].n_turns : most;
            }
            at += snprintf(args + at, sizeof args - (size_t)at, ",\"turns\":%.3f,\"max_turn\":%u",
                           n ? turns / n : 0.0, most);
        }
        if (at > 0 && (size_t)at + 2 <= sizeof args)
            snprintf(args + at, sizeof args - (size_t)at, "}");
        tern_trace_end(tr, span, args);
        tern_msg_free(job);
        if (rc == TERN_ECLOSED) { /* the run winds down (a workflow's programs were stopped) */
            tern_msg_free(out);
            break;
        }
        if (rc != TERN_OK) {
            tern_msg_free(out);
            tern_report_failure(run, "explorer", rc);
            break;
        }
        if (tern_queue_push(&run->inbox, out) != TERN_OK) {
            tern_msg_free(out);
            break;
        }
    }
    return NULL;
}
