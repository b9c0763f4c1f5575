/* evaluate.c: greedy evaluation (see evaluate.h). */
#include "loop/evaluate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"
#include "image/task_image.h"
#include "loop/trajectories.h"
#include "reward/accuracy_tally.h"
#include "reward/rewarder.h"
#include "data/task.h"
#include "data/task_file.h"
#include "rundir/trace.h"
#include "tern/support/utf8.h"

#define CHUNK 64 /* tasks per generate() call: bounds the KV cache */

/* What is right, per domain, and over all the response lengths and rewards
 * summed. */
typedef struct eval_tally {
    tern_accuracy_tally acc;
    double len_sum, reward_sum;
    json_t *responses; /* tern_eval_result's */
} eval_tally;

/* Task t's eval_responses.jsonl entry (see evaluate.h), or NULL without
 * memory. */
static json_t *response_entry(const tern_task *t, const char *text, const tern_gen_output *o,
                              const tern_verdict *v)
{
    char id[128];
    const char *dom = tern_task_string(t, "domain"), *prompt = tern_task_string(t, "prompt");
    char *task = tern_utf8_clean(tern_task_id_text(t, id, sizeof id)),
         *p = tern_utf8_clean(prompt ? prompt : ""), *resp = tern_utf8_clean(text),
         *reason = tern_utf8_clean(v->reason), *d = tern_utf8_clean(dom ? dom : "");
    json_t *e = task && p && resp && reason && d
                    ? json_pack("{s:s, s:s, s:s, s:s, s:I, s:s, s:f, s:o, s:s}", "task", task,
                                "domain", d, "prompt", p, "response", resp, "tokens",
                                (json_int_t)o->len, "finish",
                                tern_finish_name(o->finish), "reward",
                                v->reward, "right",
                                v->judged ? json_boolean(v->accuracy > 0) : json_null(),
                                "reason", reason)
                    : NULL;
    json_t *answer = json_object_get(tern_task_object(t), "answer");
    if (e && answer && json_object_set(e, "answer", answer) != 0) {
        json_decref(e);
        e = NULL;
    }
    if (e && v->failed && json_object_set_new(e, "failure", json_string(v->failure)) != 0) {
        json_decref(e);
        e = NULL;
    }
    free(task), free(p), free(resp), free(reason), free(d);
    return e;
}

/* Evaluate tasks [from, to) into the tally. */
static int eval_chunk(tern_run *run, int64_t version, size_t from, size_t to, eval_tally *t)
{
    const tern_model *m = &run->evaluator;
    size_t n = to - from;
    tern_gen_request req[CHUNK] = {0};
    tern_gen_output outs[CHUNK];
    int32_t *prompts[CHUNK] = {0};
    char *texts[CHUNK] = {0};
    uint32_t ntok[CHUNK];
    const tern_task *tasks[CHUNK];
    tern_verdict v[CHUNK];
    tern_loaded_image imgs[CHUNK]; /* the chunk's images, freed with it */
    int32_t stop = run->special.eos;
    int rc = TERN_OK;
    memset(outs, 0, sizeof outs);
    memset(imgs, 0, sizeof imgs);
    for (size_t i = 0; i < n && rc == TERN_OK; i++) {
        tasks[i] = run->eval.tasks[from + i];
        const char *p = tern_task_string(tasks[i], "prompt");
        size_t np = 0;
        char *image = NULL;
        if (run->reads_images && (rc = tern_task_image_path(tasks[i], &image)) != TERN_OK)
            break;
        if ((rc = tern_run_prompt(m, "evaluation", tern_task_system(run, tasks[i]), p,
                                  tern_run_placeholder(run, image != NULL), &prompts[i], &np))) {
            free(image);
            break;
        }
        req[i] = (tern_gen_request){.size = sizeof req[i], .prompt = prompts[i],
                                    .prompt_len = np, .n_samples = 1,
                                    .max_new_tokens = run->set.eval_max_tokens,
                                    .temperature = 0, .top_k = 0, .top_p = 1, .stop = &stop,
                                    .n_stop = 1, .seed = 1};
        outs[i].size = sizeof outs[i];
        if (image) {
            rc = tern_image_load(image, &imgs[i]);
            free(image);
            if (rc != TERN_OK) {
                char id[128];
                rc = tern_errorf(rc, "evaluation: %s:%zu: task %s: %s (it was read at start: "
                                 "changed or removed since?)", run->eval.path,
                                 tern_task_line(tasks[i]),
                                 tern_task_id_text(tasks[i], id, sizeof id), tern_error_message());
                break;
            }
            req[i].images = &imgs[i].image;
            req[i].n_images = 1;
        }
    }
    if (rc == TERN_OK)
        rc = tern_model_generate(m, "evaluation: generate", req, n, outs);
    for (size_t i = 0; i < n && rc == TERN_OK; i++) {
        size_t len = outs[i].len;
        if (len && outs[i].finish == TERN_FINISH_STOP && outs[i].tokens[len - 1] == stop)
            len--;
        if ((rc = tern_model_text(m, "evaluation: detokenize", outs[i].tokens, len, &texts[i],
                                  NULL)))
            break;
        ntok[i] = (uint32_t)outs[i].len;
        t->len_sum += (double)outs[i].len;
    }
    uint64_t failures = 0;
    if (rc == TERN_OK)
        rc = tern_rewarder_score(&run->rewards, tasks, (const char *const *)texts, ntok, n, v, &failures,
                                NULL);
    if (rc == TERN_OK && failures)
        tern_failure_log_keep(&run->failures, &run->rewards, tasks, (const char *const *)texts,
                              ntok, v, n, "eval", version);
    for (size_t i = 0; i < n && rc == TERN_OK; i++) {
        tern_accuracy_tally_add(&t->acc, tern_task_string(tasks[i], "domain"), v[i].judged,
                                v[i].accuracy > 0);
        t->reward_sum += v[i].reward;
        json_t *entry = response_entry(tasks[i], texts[i], &outs[i], &v[i]);
        if (!entry || json_array_append_new(t->responses, entry) != 0)
            rc = tern_errorf(TERN_ENOMEM, "evaluation: out of memory");
    }
    tern_model_release_outputs(m, outs, n);
    for (size_t i = 0; i < n; i++) {
        free(prompts[i]);
        free(texts[i]);
        tern_image_unload(&imgs[i]);
    }
    return rc;
}

/* A trajectory's turns for its eval_responses.jsonl entry: the model's
 * turns' texts and the environment's observations, as the run's
 * rollouts.jsonl keeps them, and how it ended. */
static int add_turns(tern_run *run, const tern_response *x, json_t *e)
{
    json_t *turns = json_array();
    uint32_t at = 0, q = 0;
    int rc = turns ? TERN_OK : TERN_ENOMEM;
    for (uint32_t k = 0; rc == TERN_OK && k < x->n_segments; k++) {
        char *raw = NULL;
        rc = tern_model_text(&run->evaluator, "evaluation: detokenize", x->tokens + at,
                             x->seg_len[k], &raw, NULL);
        char *text = raw ? tern_utf8_clean(raw) : NULL;
        int restart = q < x->n_restarts && x->restart[q] == k;
        q += restart;
        json_t *one = text ? json_pack("{s:s, s:s}", "role", restart ? "prompt" : k % 2 ?
                                       "context" : "model", "text", text)
                           : NULL;
        if (one && k % 2 == 0 && k / 2 < x->n_turns)
            json_object_set_new(one, "reward", json_real(x->turn_reward[k / 2]));
        if (rc == TERN_OK && (!one || json_array_append_new(turns, one) != 0))
            rc = TERN_ENOMEM;
        free(raw), free(text);
        at += x->seg_len[k];
    }
    if (rc == TERN_OK && (json_object_set_new(e, "turns", turns) != 0 ||
                          json_object_set_new(e, "end", json_string(tern_traj_end_name(x->end))) != 0))
        rc = TERN_ENOMEM;
    else if (rc != TERN_OK)
        json_decref(turns);
    if (rc == TERN_OK && x->env_failure)
        json_object_set_new(e, "env_failure", json_string(tern_env_failure_name(x->env_failure)));
    return rc == TERN_ENOMEM ? tern_errorf(TERN_ENOMEM, "evaluation: out of memory") : rc;
}

/* Evaluate tasks [from, to) as greedy trajectories with the run's
 * environment (docs/agents.md, "Evaluation"): one per task, its return the
 * reward, solved (right) when done with a return above 0 unless a reward
 * plugin's "accuracy" says otherwise. */
static int eval_chunk_env(tern_run *run, int64_t version, size_t from, size_t to, eval_tally *t)
{
    size_t n = to - from;
    const tern_task *tasks[CHUNK];
    uint32_t index[CHUNK], ntok[CHUNK];
    char *prompts[CHUNK], *systems[CHUNK];
    const char *texts[CHUNK];
    tern_verdict v[CHUNK];
    for (size_t i = 0; i < n; i++) {
        tasks[i] = run->eval.tasks[from + i];
        index[i] = (uint32_t)(from + i);
        prompts[i] = (char *)tern_task_string(tasks[i], "prompt");
        systems[i] = (char *)tern_task_system(run, tasks[i]);
    }
    tern_traj_plan plan = {.m = &run->evaluator, .n = (uint32_t)n, .G = 1, .tasks = tasks,
                           .task_index = index, .prompt = prompts, .system = systems,
                           .max_tokens = run->set.eval_max_tokens, .temperature = 0,
                           .top_p = 1, .top_k = 0, .stream = "eval", .at = (uint64_t)version};
    tern_rollout_msg *r = calloc(1, sizeof *r);
    if (!r)
        return tern_errorf(TERN_ENOMEM, "evaluation: out of memory");
    r->kind = TERN_MSG_ROLLOUT;
    int rc = tern_sample_trajectories(run, &plan, r);
    uint64_t failures = 0;
    for (size_t i = 0; rc == TERN_OK && i < n; i++) {
        texts[i] = r->resp[i].text;
        ntok[i] = r->resp[i].len;
        t->len_sum += (double)r->resp[i].len;
    }
    if (rc == TERN_OK)
        rc = tern_rewarder_score(&run->rewards, tasks, texts, ntok, n, v, &failures, NULL);
    if (rc == TERN_OK && failures)
        tern_failure_log_keep(&run->failures, &run->rewards, tasks, texts, ntok, v, n, "eval",
                              version);
    if (rc == TERN_OK)
        tern_trajectory_returns(run, r, tasks, v, n, 1, "eval", version);
    for (size_t i = 0; i < n && rc == TERN_OK; i++) {
        tern_accuracy_tally_add(&t->acc, tern_task_string(tasks[i], "domain"), v[i].judged,
                                v[i].accuracy > 0);
        t->reward_sum += v[i].reward;
        tern_gen_output o = {.len = r->resp[i].len, .finish = r->resp[i].finish};
        json_t *entry = response_entry(tasks[i], texts[i], &o, &v[i]);
        if (!entry || json_array_append_new(t->responses, entry) != 0)
            rc = tern_errorf(TERN_ENOMEM, "evaluation: out of memory");
        else
            rc = add_turns(run, &r->resp[i], entry);
    }
    tern_msg_free(r);
    return rc;
}

int tern_evaluate(tern_run *run, const tern_snapshot *w, tern_eval_result *out)
{
    memset(out, 0, sizeof *out);
    double t0 = tern_run_now();
    uint64_t span = tern_trace_begin(run->session->trace, "evaluate");
    int rc = tern_snapshot_into(w, &run->evaluator);
    size_t n = run->eval.n;
    if (run->set.eval_limit > 0 && (size_t)run->set.eval_limit < n)
        n = (size_t)run->set.eval_limit;
    eval_tally t = {.responses = json_array()};
    if (tern_accuracy_tally_init(&t.acc) != 0 || !t.responses)
        rc = tern_errorf(TERN_ENOMEM, "out of memory");
    for (size_t from = 0; rc == TERN_OK && from < n; from += CHUNK)
        rc = (TERN_RUN_TRAJECTORIES(run) ? eval_chunk_env : eval_chunk)(
            run, tern_snapshot_version(w), from, from + CHUNK < n ? from + CHUNK : n, &t);
    if (rc == TERN_OK) {
        out->per_domain = json_object();
        out->accuracy = out->per_domain ? tern_accuracy_tally_result(&t.acc, out->per_domain,
                                                                    NULL, &out->judged_tasks)
                                        : -2;
        if (out->accuracy < -1)
            rc = tern_errorf(TERN_ENOMEM, "out of memory");
        out->tasks = n;
        out->reward_mean = n ? t.reward_sum / (double)n : 0;
        out->mean_length = n ? t.len_sum / (double)n : 0;
    }
    tern_accuracy_tally_free(&t.acc);
    if (rc == TERN_OK)
        out->responses = t.responses;
    else
        json_decref(t.responses);
    out->seconds = tern_run_now() - t0;
    char args[96];
    snprintf(args, sizeof args, "{\"version\":%lld,\"tasks\":%zu}",
             (long long)tern_snapshot_version(w), n);
    tern_trace_end(run->session->trace, span, args);
    return rc;
}
