/* step_figures.c: an RL step's figures from its groups (see step_figures.h). */
#include "loop/step_figures.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"
#include "loop/trajectories.h"
#include "reward/accuracy_tally.h"
#include "reward/worker.h"
#include "rundir/metrics.h"
#include "tern/support/utf8.h"

/* tokens[0..len)'s text, without the EOS that ends them (a generated turn
 * that has one ended there: TERN_FINISH_STOP), cleaned to UTF-8
 * for JSON: a new string, or NULL with *rc set. */
static char *tokens_text(tern_run *run, const int32_t *tokens, size_t len, int *rc)
{
    if (len && tokens[len - 1] == run->special.eos)
        len--;
    char *text = NULL;
    *rc = tern_model_text(&run->policy, "trainer: detokenize", tokens, len, &text, NULL);
    if (*rc != TERN_OK)
        return NULL;
    char *shown = tern_utf8_clean(text);
    free(text);
    if (!shown)
        *rc = tern_errorf(TERN_ENOMEM, "trainer: out of memory");
    return shown;
}

/* Where the last model segment of r starts, and its length (a one-answer
 * response: all of it). */
static void last_turn(const tern_exp_response *r, size_t *at, size_t *len)
{
    *at = 0, *len = r->len;
    for (uint32_t k = 0, t = 0; k < r->n_segments; t += r->segments[k++].len)
        if (r->segments[k].kind == TERN_SEGMENT_MODEL)
            *at = t, *len = r->segments[k].len;
}

/* A trajectory's turns for its rollouts.jsonl response: each segment as
 * {"role": "model" | "context" | "prompt" (a restart's), "text", "ids", and
 * the model's "reward"}. */
static json_t *turns_json(tern_run *run, const tern_exp_response *r, int *rc)
{
    json_t *all = json_array();
    uint32_t at = 0, turn = 0;
    for (uint32_t k = 0; all && *rc == TERN_OK && k < r->n_segments; k++) {
        const tern_exp_segment *g = &r->segments[k];
        int model = g->kind == TERN_SEGMENT_MODEL;
        char *text = model ? tokens_text(run, r->tokens + at, g->len, rc) : NULL;
        if (!model) {
            char *raw = NULL;
            *rc = tern_model_text(&run->policy, "trainer: detokenize", r->tokens + at, g->len,
                                  &raw, NULL);
            text = raw ? tern_utf8_clean(raw) : NULL;
            free(raw);
        }
        json_t *ids = json_array();
        for (uint32_t j = 0; ids && j < g->len; j++)
            json_array_append_new(ids, json_integer(r->tokens[at + j]));
        const char *role = model ? "model" : g->kind == TERN_SEGMENT_PROMPT ? "prompt"
                                                                            : "context";
        json_t *one = text && ids ? json_pack("{s:s, s:s, s:o}", "role", role, "text", text,
                                              "ids", ids)
                                  : NULL;
        if (!one)
            json_decref(ids);
        if (one && model && turn < r->n_turns)
            json_object_set_new(one, "reward", json_real(r->turn_reward[turn]));
        turn += model;
        free(text);
        if (*rc == TERN_OK && (!one || json_array_append_new(all, one) != 0))
            *rc = tern_errorf(TERN_ENOMEM, "trainer: out of memory");
        at += g->len;
    }
    if (!all && *rc == TERN_OK)
        *rc = tern_errorf(TERN_ENOMEM, "trainer: out of memory");
    if (*rc != TERN_OK) {
        json_decref(all);
        return NULL;
    }
    return all;
}

/* Response r's text as the reward read it (the last turn of a trajectory,
 * without the EOS that ended it), cleaned to UTF-8 for JSON: a new string,
 * or NULL with *rc set. */
static char *response_text(tern_run *run, const tern_exp_response *r, int *rc)
{
    size_t at, len;
    last_turn(r, &at, &len);
    return tokens_text(run, r->tokens + at, len, rc);
}



/* A kept group's whole story, added to its rollouts.jsonl line: the task's
 * prompt and answer, and every response with its reward, verdict ("right":
 * true or false where a reward gave an "accuracy", else null), components,
 * length and how it ended. */
static int add_whole_group(tern_run *run, const tern_experience *e, json_t *line)
{
    const tern_task *t = e->task_index < run->train.n ? run->train.tasks[e->task_index] : NULL;
    const char *prompt = t ? tern_task_string(t, "prompt") : NULL;
    json_t *answer = t ? json_object_get(tern_task_object(t), "answer") : NULL;
    char *p = prompt ? tern_utf8_clean(prompt) : NULL;
    if ((prompt && !p) || (p && json_object_set_new(line, "prompt", json_string(p)) != 0) ||
        (answer && json_object_set(line, "answer", answer) != 0)) {
        free(p);
        return tern_errorf(TERN_ENOMEM, "trainer: out of memory");
    }
    free(p);
    json_t *all = json_array();
    int rc = all ? TERN_OK : tern_errorf(TERN_ENOMEM, "trainer: out of memory");
    for (uint32_t s = 0; s < e->n && rc == TERN_OK; s++) {
        const tern_exp_response *r = &e->resp[s];
        char *text = response_text(run, r, &rc);
        json_t *parts = json_object(), *one = NULL;
        for (uint32_t c = 0; parts && c < r->n_parts; c++)
            json_object_set_new(parts, r->parts[c].name, json_real(r->parts[c].value));
        int judged = tern_parts_judged(r->parts, r->n_parts);
        if (text && parts)
            one = json_pack("{s:s, s:f, s:o, s:O, s:I, s:s}", "response", text, "reward",
                            r->reward, "right", judged ? json_boolean(r->accuracy > 0)
                                                       : json_null(),
                            "parts", parts, "tokens", (json_int_t)r->len, "finish",
                            tern_finish_name(r->finish));
        if (one && r->failure)
            json_object_set_new(one, "failure",
                                json_string(tern_reward_failure_name(
                                    (tern_reward_failure)r->failure)));
        if (one && (r->n_turns > 0 || r->end != TERN_END_ANSWER)) { /* a trajectory */
            json_t *turns = turns_json(run, r, &rc);
            if (turns)
                json_object_set_new(one, "turns", turns);
            json_object_set_new(one, "end", json_string(tern_traj_end_name(r->end)));
            if (r->env_failure)
                json_object_set_new(one, "env_failure",
                                    json_string(tern_env_failure_name(r->env_failure)));
        }
        json_decref(parts);
        free(text);
        if (rc == TERN_OK && (!one || json_array_append_new(all, one) != 0))
            rc = tern_errorf(TERN_ENOMEM, "trainer: out of memory");
    }
    if (rc == TERN_OK && json_object_set_new(line, "responses", all) != 0)
        return tern_errorf(TERN_ENOMEM, "trainer: out of memory");
    if (rc != TERN_OK)
        json_decref(all);
    return rc;
}

/* A rollouts.jsonl line: the group's rewards and its first response (and
 * its task's image, when it has one); `whole`: every response too
 * (add_whole_group). */
static json_t *group_line(tern_run *run, const tern_experience *e, int64_t step, int whole,
                          int *rc)
{
    char *shown = response_text(run, &e->resp[0], rc);
    if (!shown)
        return NULL;
    json_t *rewards = json_array();
    for (uint32_t s = 0; rewards && s < e->n; s++)
        json_array_append_new(rewards, json_real(e->resp[s].reward));
    /* model output and task ids are any bytes: JSON needs valid UTF-8 */
    char *task = tern_utf8_clean(e->task_id);
    json_t *line = shown && task && rewards
                       ? json_pack("{s:s,s:I,s:I,s:I,s:I,s:s,s:O,s:s,s:I}", "stage", "rl",
                                   "step", (json_int_t)step, "batch", (json_int_t)e->batch,
                                   "group", (json_int_t)e->group, "version",
                                   (json_int_t)e->version, "task", task, "rewards", rewards,
                                   "response", shown, "prompt_tokens",
                                   (json_int_t)e->prompt_len)
                       : NULL;
    json_decref(rewards);
    free(shown);
    free(task);
    /* the image as the task gives it (relative to its tasks file), beside
     * the response that answered it */
    const char *image = e->image && e->task_index < run->train.n
                            ? tern_task_string(run->train.tasks[e->task_index], "image")
                            : NULL;
    char *image_shown = image ? tern_utf8_clean(image) : NULL;
    if (line && image && (!image_shown ||
                          json_object_set_new(line, "image", json_string(image_shown)) != 0)) {
        json_decref(line);
        line = NULL;
    }
    free(image_shown);
    if (!line) {
        *rc = tern_errorf(TERN_ENOMEM, "trainer: out of memory");
        return NULL;
    }
    if (whole && (*rc = add_whole_group(run, e, line)) != TERN_OK) {
        json_decref(line);
        return NULL;
    }
    return line;
}

int tern_step_figures(tern_run *run, const tern_experience *g, size_t n, int64_t step,
                      tern_step_msg *rep)
{
    json_t *o = json_object();
    json_t *lines = json_array();
    tern_metrics *parts = tern_metrics_new();
    tern_accuracy_tally acc;
    int rc = TERN_OK, have_acc = tern_accuracy_tally_init(&acc) == 0;
    if (!o || !have_acc || !lines || !parts) {
        rc = tern_errorf(TERN_ENOMEM, "trainer: out of memory");
        goto done;
    }
    double sum = 0, sq = 0, len = 0, turns = 0;
    uint64_t count = 0, by_length = 0, failures = 0, trajectories = 0, solved = 0;
    uint64_t env_failures = 0;
    rep->batch = n ? g[0].batch : -1;
    rep->rollout_version = n ? g[0].version : -1;
    for (size_t i = 0; i < n; i++) {
        const tern_experience *e = &g[i];
        if (e->batch < rep->batch)
            rep->batch = e->batch;
        if (e->version < rep->rollout_version)
            rep->rollout_version = e->version;
        const char *dom = e->domain ? e->domain : "";
        for (uint32_t s = 0; s < e->n; s++) {
            const tern_exp_response *r = &e->resp[s];
            sum += r->reward;
            sq += r->reward * r->reward;
            tern_accuracy_tally_add(&acc, dom, tern_parts_judged(r->parts, r->n_parts),
                                    r->accuracy > 0);
            len += r->len;
            by_length += r->finish == TERN_FINISH_LENGTH;
            count++;
            /* a trajectory (docs/agents.md, "Figures"): turns, or an end */
            if (r->n_turns > 0 || r->end != TERN_END_ANSWER) {
                trajectories++;
                turns += r->n_turns;
                solved += r->accuracy > 0;
                if (r->env_failure) {
                    env_failures++;
                    char name[64];
                    snprintf(name, sizeof name, "env/failed/%s",
                             tern_env_failure_name(r->env_failure));
                    tern_metrics_observe(parts, name, 1);
                }
            }
            if (r->failure) {
                failures++;
                char name[64];
                snprintf(name, sizeof name, "reward/failed/%s",
                         tern_reward_failure_name((tern_reward_failure)r->failure));
                tern_metrics_observe(parts, name, 1);
            }
            for (uint32_t c = 0; c < r->n_parts; c++) {
                char name[96];
                snprintf(name, sizeof name, "reward/%s", r->parts[c].name);
                tern_metrics_observe(parts, name, r->parts[c].value);
            }
        }
        json_t *line = group_line(run, e, step, i < run->set.keep_groups, &rc);
        if (!line)
            goto done;
        json_array_append_new(lines, line);
    }
    double c = count ? (double)count : 1, mean = sum / c, var = sq / c - mean * mean;
    json_object_set_new(o, "reward_mean", json_real(mean));
    json_object_set_new(o, "reward_std", json_real(sqrt(var > 0 ? var : 0)));
    /* right only where a reward said so (accuracy_tally.h): without an
     * "accuracy" component the step has no accuracy figures */
    double right = tern_accuracy_tally_result(&acc, o, "accuracy/", NULL);
    if (right < -1) {
        rc = tern_errorf(TERN_ENOMEM, "trainer: out of memory");
        goto done;
    }
    if (right >= 0)
        json_object_set_new(o, "accuracy", json_real(right));
    json_object_set_new(o, "response_length", json_real(len / c));
    json_object_set_new(o, "truncated_frac", json_real((double)by_length / c));
    json_object_set_new(o, "reward_failures", json_integer((json_int_t)failures));
    json_object_set_new(o, "groups", json_integer((json_int_t)n));
    if (trajectories) {
        double tc = (double)trajectories;
        json_object_set_new(o, "solve_rate", json_real((double)solved / tc));
        json_object_set_new(o, "turns", json_real(turns / tc));
        json_object_set_new(o, "env_failures", json_integer((json_int_t)env_failures));
    }
    tern_metrics_drain_json(parts, o);
    rep->figures = o;
    rep->groups = lines;
    o = lines = NULL;
done:
    json_decref(o);
    json_decref(lines);
    if (have_acc)
        tern_accuracy_tally_free(&acc);
    tern_metrics_free(parts);
    return rc;
}
