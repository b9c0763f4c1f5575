/* explorer.c: the explorer role (DESIGN.md §2): a policy copy that, for each
 * batch the master hands it, loads the weights its sync plan names,
 * generates group_size responses per task and sends them, with their
 * behaviour log-probs and the weight version, back to the master. */
#include <stdlib.h>
#include <string.h>

#include "errmsg.h"
#include "loop/run.h"
#include "trace.h"

/* Which weights batch `batch` uses, loaded into the explorer's model. */
static int load_weights(tern_run *run, int64_t batch, int64_t *version, double *waited)
{
    tern_sync_plan plan = {.size = sizeof plan};
    tern_error_clear();
    int rc = run->sync_ops->explorer_plan(run->sync, 0, batch, &plan);
    if (rc != TERN_OK)
        return tern_role_failed(rc, "explorer", "the sync plugin's explorer_plan failed");
    int64_t want = -1;
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
    }
    uint64_t waited_ns = 0;
    rc = tern_weights_load(run->weights, run->explorer.ops, run->explorer.state, want, version,
                           &waited_ns);
    *waited = 1e-9 * (double)waited_ns;
    if (rc == TERN_OK)
        tern_weights_forget_before(run->weights, *version);
    return rc;
}

static int generate(tern_run *run, const tern_explore_job *job, tern_rollout_msg *out)
{
    const tern_model_ops *ops = run->explorer.ops;
    void *m = run->explorer.state;
    uint32_t G = run->set.group_size;
    size_t total = (size_t)job->n * G;
    tern_gen_request *req = calloc(job->n, sizeof *req);
    tern_gen_output *outs = calloc(total, sizeof *outs);
    out->task_index = calloc(job->n, sizeof *out->task_index);
    out->prompt_tokens = calloc(job->n, sizeof *out->prompt_tokens);
    out->prompt_len = calloc(job->n, sizeof *out->prompt_len);
    out->resp = calloc(total, sizeof *out->resp);
    out->n = job->n;
    out->group_size = G;
    int rc = TERN_OK;
    if (!req || !outs || !out->task_index || !out->prompt_tokens || !out->prompt_len ||
        !out->resp) {
        rc = tern_errorf(TERN_ENOMEM, "explorer: out of memory");
        goto done;
    }
    int32_t stop = run->special.eos;
    for (uint32_t i = 0; i < job->n; i++) {
        out->task_index[i] = job->task_index[i];
        size_t n = 0;
        rc = tern_model_tokenize(&run->explorer, "explorer", job->prompt[i], 1,
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
    for (size_t i = 0; i < total; i++)
        outs[i].size = sizeof outs[i];
    double t0 = tern_run_now();
    tern_error_clear();
    rc = ops->generate(m, req, job->n, outs);
    if (rc != TERN_OK) {
        rc = tern_role_failed(rc, "explorer", "generate");
        goto done;
    }
    out->gen_seconds = tern_run_now() - t0;
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
        if (textlen && r->finish == 1 && outs[i].tokens[textlen - 1] == stop)
            textlen--;
        rc = tern_model_text(&run->explorer, "explorer", outs[i].tokens, textlen, &r->text);
        if (rc != TERN_OK)
            goto done;
        if (!r->tokens || !r->logp || !r->text) {
            rc = tern_errorf(TERN_ENOMEM, "explorer: out of memory");
            goto done;
        }
    }
done:
    for (size_t i = 0; outs && i < total; i++) {
        ops->free_buffer(m, outs[i].tokens);
        ops->free_buffer(m, outs[i].logprobs);
    }
    free(outs);
    free(req);
    return rc;
}

void *tern_explorer_main(void *arg)
{
    tern_run *run = arg;
    tern_trace_name_lane(run->session->trace, "explorer 0");
    for (;;) {
        tern_explore_job *job = tern_queue_pop(&run->explorer_jobs);
        if (!job)
            break;
        tern_rollout_msg *out = calloc(1, sizeof *out);
        if (!out) {
            tern_msg_free(job);
            tern_errorf(TERN_ENOMEM, "explorer: out of memory");
            tern_report_failure(run, "explorer", TERN_ENOMEM);
            break;
        }
        out->kind = TERN_MSG_ROLLOUT;
        out->batch = job->batch;
        uint64_t wspan = tern_trace_begin(run->session->trace, "wait_weights");
        int rc = load_weights(run, job->batch, &out->version, &out->wait_seconds);
        char args[160];
        snprintf(args, sizeof args, "{\"batch\":%lld,\"version\":%lld}", (long long)job->batch,
                 (long long)out->version);
        tern_trace_end(run->session->trace, wspan, args);
        if (rc == TERN_ECLOSED) { /* shutting down */
            tern_msg_free(job);
            tern_msg_free(out);
            break;
        }
        uint64_t span = tern_trace_begin(run->session->trace, "rollout");
        if (rc == TERN_OK)
            rc = generate(run, job, out);
        tern_trace_end(run->session->trace, span, args);
        tern_msg_free(job);
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
