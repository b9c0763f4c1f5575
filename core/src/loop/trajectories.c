/* trajectories.c: an explorer's batch with an environment (docs/agents.md):
 * for each task, G trajectories of turns instead of G answers.
 *
 *   reset(task)            -> the first observation: the user turn the model
 *                             answers first (the task's prompt when none), the
 *                             same for the task's G trajectories (the group's
 *                             prompt is stored once)
 *   repeat, every trajectory still going in one generate() call:
 *     the model's turn     -> sampled tokens, kept exactly as sampled (a model
 *                             segment); its text (end-of-turn token removed)
 *                             goes to step()
 *     step(turn)           -> an observation, the turn's reward, done
 *     the observation      -> the tokens the chat template puts after an
 *                             assistant turn for a new user turn (a context
 *                             segment), appended to the token stream: earlier
 *                             turns are never rendered again
 *   until done, max_turns, no room in the context, or the environment failed.
 *
 * With tools (the tools section), a turn that calls them is answered by the
 * tools instead of step(): the calls' outputs are `tool` turns, rendered by
 * the template and appended the same way, and the model writes its next
 * turn. Without an environment the first turn that calls no tool is the
 * trajectory's final answer, which the rewards score.
 *
 * The observation's tokens come from the template itself: render a fixed
 * conversation [system, user "x", assistant "ok", user OBS] and take what
 * follows the assistant's end-of-turn token. tern_run_check_environment
 * checks at start that this does not depend on the turns before (a template
 * that is prefix-stable for user turns); so the trained ids are the sampled
 * ids and the template's ids between them, byte for byte. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"
#include "data/task_file.h"
#include "loop/job_pool.h"
#include "loop/reward_failures.h"
#include "loop/run.h"
#include "loop/trajectories.h"
#include "loop/workflows.h"

#include <jansson.h>

#include "agent/tool_calls.h"

/* One trajectory being sampled. */
typedef struct traj {
    void *episode;    /* the environment's, until closed */
    int going;        /* another turn of the model follows */
    int32_t *tok;     /* the tokens after the prompt: model and context */
    float *lp;        /* their behaviour log-probs (context: 0) */
    uint32_t len, cap;
    uint32_t *seg;    /* run lengths, the model's first, alternating */
    uint32_t n_seg, seg_cap;
    double *turn;     /* the environment's reward per model turn */
    uint32_t n_turn;
    uint32_t prompt_len;
    uint32_t finish, end, failure;
    char reason[TERN_ENV_REASON_MAX];
    char *text;       /* the last turn's text, without the end-of-turn token */
} traj;

/* The tools' calls of one batch. */
typedef struct tool_counts {
    uint64_t calls, invalid, failed;
} tool_counts;

static int grow(traj *t, uint32_t more)
{
    if (t->len + more <= t->cap)
        return TERN_OK;
    uint32_t cap = t->cap ? t->cap : 64;
    while (cap < t->len + more)
        cap *= 2;
    int32_t *tok = realloc(t->tok, cap * sizeof *tok);
    if (tok)
        t->tok = tok;
    float *lp = tok ? realloc(t->lp, cap * sizeof *lp) : NULL;
    if (lp)
        t->lp = lp;
    if (!tok || !lp)
        return tern_errorf(TERN_ENOMEM, "explorer: out of memory");
    t->cap = cap;
    return TERN_OK;
}

/* Append n tokens as a new segment (model: with their log-probs). */
static int append(traj *t, const int32_t *ids, const float *logp, uint32_t n, int model)
{
    if (grow(t, n) != TERN_OK)
        return TERN_ENOMEM;
    if (t->n_seg + 1 > t->seg_cap) {
        uint32_t cap = t->seg_cap ? 2 * t->seg_cap : 8;
        uint32_t *seg = realloc(t->seg, cap * sizeof *seg);
        double *turn = seg ? realloc(t->turn, cap * sizeof *turn) : NULL;
        if (seg)
            t->seg = seg;
        if (turn)
            t->turn = turn;
        if (!seg || !turn)
            return tern_errorf(TERN_ENOMEM, "explorer: out of memory");
        t->seg_cap = cap;
    }
    memcpy(t->tok + t->len, ids, n * sizeof *ids);
    for (uint32_t k = 0; k < n; k++)
        t->lp[t->len + k] = model ? logp[k] : 0.0f;
    t->len += n;
    t->seg[t->n_seg++] = n;
    return TERN_OK;
}

/* The environment's ops, one call at a time unless it is thread-safe. */
static void env_lock(tern_run *run)
{
    if (!run->env_thread_safe)
        pthread_mutex_lock(&run->env_lock);
}

static void env_unlock(tern_run *run)
{
    if (!run->env_thread_safe)
        pthread_mutex_unlock(&run->env_lock);
}

/* End t with `end` (and a failure), keeping the environment's reason. */
static void finish(traj *t, uint32_t end, uint32_t failure, const char *reason)
{
    t->going = 0;
    t->end = end;
    t->failure = failure;
    if (reason && reason != t->reason)
        snprintf(t->reason, sizeof t->reason, "%.*s", (int)sizeof t->reason - 1, reason);
}

/* An answer of the environment that breaks the contract is the episode's
 * failure (garbage), never the run's. */
static void check_result(tern_env_result *res, int stepping)
{
    if (res->failure > TERN_ENV_START) {
        res->failure = TERN_ENV_GARBAGE;
        snprintf(res->reason, sizeof res->reason, "a failure code that names nothing");
    }
    if (res->failure)
        return;
    if (stepping && !isfinite(res->reward)) {
        res->failure = TERN_ENV_GARBAGE;
        snprintf(res->reason, sizeof res->reason, "its reward is %g, not a finite number",
                 res->reward);
    } else if (res->observation &&
               strnlen(res->observation, TERN_ENV_OBSERVATION_MAX + 1) > TERN_ENV_OBSERVATION_MAX) {
        res->failure = TERN_ENV_GARBAGE;
        snprintf(res->reason, sizeof res->reason, "an observation over %u bytes",
                 TERN_ENV_OBSERVATION_MAX);
    } else if (stepping && !res->done && (!res->observation || !*res->observation)) {
        res->failure = TERN_ENV_GARBAGE;
        snprintf(res->reason, sizeof res->reason, "no observation, yet not done");
    }
}

/* Append context tokens ids[0..n) after the model's turn of t (its
 * end-of-turn token first when the turn was cut by max_tokens), or end t
 * when the context has no room for them and one more token. */
static int append_context(tern_run *run, traj *t, const int32_t *ids, size_t n, int ended)
{
    int32_t *all = malloc((n + 1) * sizeof *all);
    if (!all)
        return tern_errorf(TERN_ENOMEM, "explorer: out of memory");
    size_t k = 0;
    if (!ended)
        all[k++] = run->special.eos;
    memcpy(all + k, ids, n * sizeof *ids);
    k += n;
    /* the model's next turn needs room: at least one token */
    uint32_t ctx = run->special.context_len > 0 ? (uint32_t)run->special.context_len : 0;
    int rc = TERN_OK;
    if (ctx && (size_t)t->prompt_len + t->len + k + 1 > ctx)
        finish(t, TERN_END_CONTEXT, 0, "no room left in the model's context for another turn");
    else
        rc = append(t, all, NULL, (uint32_t)k, 0);
    free(all);
    return rc;
}

/* After the model's turn of t (ended by a stop token or not), the
 * observation as context: the template's tokens for a new user turn; a
 * turn cut by max_tokens gets its end-of-turn token first. */
static int append_observation(tern_run *run, const tern_model *m, traj *t, const char *system,
                              const char *obs, int ended)
{
    int32_t *ids = NULL;
    size_t n = 0;
    int rc = tern_observation_tokens(m, run->special.eos, system, obs, &ids, &n);
    if (rc == TERN_OK)
        rc = append_context(run, t, ids, n, ended);
    free(ids);
    return rc;
}

const char *tern_env_failure_name(uint32_t failure)
{
    static const char *const names[] = {"ok", "error", "crash", "timeout", "garbage",
                                        "after_done", "start"};
    return failure < sizeof names / sizeof names[0] ? names[failure] : "?";
}

const char *tern_traj_end_name(uint32_t end)
{
    static const char *const names[] = {"answer", "done", "max_turns", "context", "failed"};
    return end <= TERN_END_LAST ? names[end] : "?";
}

static void traj_free(traj *t)
{
    free(t->tok), free(t->lp), free(t->seg), free(t->turn), free(t->text);
}

/* What one trajectory's turn hands to the job threads, and what comes back:
 * its tool calls answered, or the environment's step. A job never calls the
 * model: the explorer's thread renders the answers' tokens (finish_job). */
typedef enum job_kind {
    JOB_CALLS,  /* the turn called tools: answers[], or none when its turns are used up */
    JOB_STEP,   /* the environment's step: res, observation */
    JOB_ANSWER  /* tools and no environment, and no call: the final answer */
} job_kind;

typedef struct turn_job {
    tern_run *run;
    traj *t;
    int active;             /* submitted, not finished yet */
    uint32_t turn;          /* the model's turn number, from 1 */
    uint64_t seed;          /* the turn's; its calls' seeds follow it */
    const int32_t *tokens;  /* the turn as sampled (in t->tok) */
    size_t n_tokens;
    int ended;              /* it ended with the end-of-turn token */
    /* what came back */
    job_kind kind;
    tern_parsed_call *calls;
    size_t n_calls, n_answers;
    char **answers;
    int out_of_turns;       /* the calls were not made: the turns are used up */
    tool_counts counts;
    tern_env_result res;
    char *observation;      /* res's, our copy */
    int rc;                 /* a plugin failed (broken), with this message */
    char *error;
} turn_job;

static void job_clear(turn_job *j)
{
    tern_tool_calls_free(j->calls, j->n_calls);
    for (size_t i = 0; j->answers && i < j->n_answers; i++)
        free(j->answers[i]);
    free(j->answers), free(j->observation), free(j->error);
    j->calls = NULL, j->answers = NULL, j->observation = NULL, j->error = NULL;
    j->n_calls = j->n_answers = 0;
}

/* A job's failure, with its thread's message kept for the explorer's. */
static void job_failed(turn_job *j, int rc, const char *what)
{
    tern_role_failed(rc, "explorer", what);
    j->rc = rc < 0 ? rc : TERN_ERR;
    j->error = strdup(tern_error_message());
}

/* The calls of the turn, each answered by its tool (at most
 * TERN_TOOL_MAX_CALLS; the last of them then says so). */
static void answer_calls(turn_job *j)
{
    tern_run *run = j->run;
    if (j->t->n_turn + 1 >= run->set.max_turns) {
        j->out_of_turns = 1; /* this turn is the last: no answer would be read */
        return;
    }
    size_t k = j->n_calls < TERN_TOOL_MAX_CALLS ? j->n_calls : TERN_TOOL_MAX_CALLS;
    if (!(j->answers = calloc(k, sizeof *j->answers))) {
        job_failed(j, tern_errorf(TERN_ENOMEM, "out of memory"), "tool calls");
        return;
    }
    for (size_t i = 0; i < k; i++, j->n_answers++) {
        uint32_t status = TERN_TOOL_OK;
        int rc = TERN_OK;
        if (i + 1 == TERN_TOOL_MAX_CALLS && j->n_calls > TERN_TOOL_MAX_CALLS) {
            char msg[96];
            snprintf(msg, sizeof msg, "invalid tool call: more than %d calls in one turn; the "
                     "rest were not made", TERN_TOOL_MAX_CALLS);
            status = TERN_TOOL_INVALID;
            if (!(j->answers[i] = strdup(msg)))
                rc = tern_errorf(TERN_ENOMEM, "out of memory");
        } else {
            rc = tern_toolbox_answer(&run->tools, &j->calls[i], j->seed + i, j->t->episode,
                                     &j->answers[i], &status);
        }
        if (rc != TERN_OK) {
            job_failed(j, rc, "a tool call");
            return;
        }
        j->counts.calls++;
        j->counts.invalid += status == TERN_TOOL_INVALID;
        j->counts.failed += status == TERN_TOOL_FAILED;
    }
}

/* A job thread's work on one turn: its calls, or the environment's step. */
static void run_job(void *arg)
{
    turn_job *j = arg;
    tern_run *run = j->run;
    traj *t = j->t;
    if (run->tools.n) {
        int rc = tern_tool_calls_parse(t->text, &j->calls, &j->n_calls);
        if (rc != TERN_OK) {
            job_failed(j, rc, "reading tool calls");
            return;
        }
        if (j->n_calls) {
            j->kind = JOB_CALLS;
            answer_calls(j);
            return;
        }
    }
    if (!run->env_ops) {
        j->kind = JOB_ANSWER;
        return;
    }
    j->kind = JOB_STEP;
    tern_env_action act = {.size = sizeof act, .text = t->text, .text_len = strlen(t->text),
                           .tokens = j->tokens, .n_tokens = j->n_tokens, .turn = j->turn};
    j->res = (tern_env_result){.size = sizeof j->res};
    env_lock(run);
    tern_error_clear();
    int rc = run->env_ops->step(run->env, t->episode, &act, &j->res);
    check_result(&j->res, 1);
    /* the observation is the plugin's until its next call on the episode */
    if (rc == TERN_OK && !j->res.failure && j->res.observation &&
        !(j->observation = strdup(j->res.observation)))
        rc = tern_errorf(TERN_ENOMEM, "out of memory");
    j->res.observation = NULL;
    if (rc != TERN_OK)
        job_failed(j, rc, "the environment's step");
    env_unlock(run);
}

/* The explorer's side of a finished job: the turn's reward, and the answers
 * or the observation appended as context, or the trajectory ended. */
static int finish_job(tern_run *run, const tern_model *m, turn_job *j, const char *system,
                      tool_counts *counts)
{
    traj *t = j->t;
    int rc = TERN_OK;
    j->active = 0;
    if (j->rc != TERN_OK) {
        rc = tern_errorf(j->rc, "%s", j->error ? j->error : "explorer: out of memory");
        job_clear(j);
        return rc;
    }
    counts->calls += j->counts.calls;
    counts->invalid += j->counts.invalid;
    counts->failed += j->counts.failed;
    switch (j->kind) {
    case JOB_CALLS:
        t->turn[t->n_turn++] = 0.0; /* a turn of calls earns nothing by itself */
        if (j->out_of_turns || t->n_turn >= run->set.max_turns) {
            finish(t, TERN_END_MAX_TURNS, 0, "max_turns reached while calling tools");
            break;
        }
        const char **names = calloc(j->n_answers ? j->n_answers : 1, sizeof *names);
        int32_t *ids = NULL;
        size_t len = 0;
        if (!names)
            rc = tern_errorf(TERN_ENOMEM, "explorer: out of memory");
        for (size_t i = 0; names && i < j->n_answers; i++)
            names[i] = j->calls[i].name ? j->calls[i].name : "invalid";
        if (rc == TERN_OK)
            rc = tern_tool_turn_tokens(m, run->special.eos, system, names,
                                       (const char *const *)j->answers, j->n_answers, &ids,
                                       &len);
        if (rc == TERN_OK)
            rc = append_context(run, t, ids, len, j->ended);
        free(ids);
        free(names);
        break;
    case JOB_ANSWER:
        t->turn[t->n_turn++] = 0.0;
        finish(t, TERN_END_ANSWER, 0, NULL);
        break;
    case JOB_STEP:
        t->turn[t->n_turn++] = j->res.failure ? 0.0 : j->res.reward;
        if (j->res.failure)
            finish(t, TERN_END_FAILED, j->res.failure, j->res.reason);
        else if (j->res.done)
            finish(t, TERN_END_DONE, 0, j->res.reason);
        else if (t->n_turn >= run->set.max_turns)
            finish(t, TERN_END_MAX_TURNS, 0, "max_turns reached");
        else
            rc = append_observation(run, m, t, system, j->observation, j->ended);
        break;
    }
    job_clear(j);
    return rc;
}

/* The model's turn `o` of trajectory t, kept as sampled and made text; then
 * job j for the job threads. */
static int take_turn(tern_run *run, const tern_model *m, traj *t, const tern_gen_output *o,
                     uint64_t seed, turn_job *j)
{
    int rc = append(t, o->tokens, o->logprobs, (uint32_t)o->len, 1);
    if (rc != TERN_OK)
        return rc;
    t->finish = o->finish;
    int32_t eos = run->special.eos;
    int ended = o->len && o->finish == TERN_FINISH_STOP && o->tokens[o->len - 1] == eos;
    free(t->text);
    t->text = NULL;
    rc = tern_model_text(m, "explorer: detokenize", o->tokens, ended ? o->len - 1 : o->len,
                         &t->text, NULL);
    if (rc != TERN_OK)
        return rc;
    *j = (turn_job){.run = run, .t = t, .active = 1, .turn = t->n_turn + 1, .seed = seed,
                    .tokens = t->tok + t->len - o->len, .n_tokens = o->len, .ended = ended};
    return TERN_OK;
}

int tern_explore_trajectories(tern_run *run, uint32_t id, const tern_explore_job *job,
                              tern_rollout_msg *out)
{
    const tern_task **tasks = calloc(job->n ? job->n : 1, sizeof *tasks);
    if (!tasks)
        return tern_errorf(TERN_ENOMEM, "explorer: out of memory");
    for (uint32_t i = 0; i < job->n; i++)
        tasks[i] = run->train.tasks[job->task_index[i]];
    tern_traj_plan plan = {.m = &run->explorers[id], .n = job->n, .G = run->set.group_size,
                           .tasks = tasks, .task_index = job->task_index,
                           .prompt = job->prompt, .system = job->system,
                           .max_tokens = run->set.max_tokens,
                           .temperature = (float)run->set.temperature,
                           .top_p = (float)run->set.top_p, .top_k = run->set.top_k,
                           .stream = "explore", .at = (uint64_t)job->batch};
    int rc = tern_sample_trajectories(run, &plan, out);
    free(tasks);
    return rc;
}

int tern_sample_trajectories(tern_run *run, const tern_traj_plan *plan, tern_rollout_msg *out)
{
    if (run->set.has_workflow)
        return tern_sample_workflows(run, plan, out);
    const tern_model *h = plan->m;
    uint32_t G = plan->G;
    size_t total = (size_t)plan->n * G;
    char stream[64];
    traj *tr = calloc(total ? total : 1, sizeof *tr);
    tern_gen_request *req = calloc(total ? total : 1, sizeof *req);
    tern_gen_output *outs = calloc(total ? total : 1, sizeof *outs);
    size_t *who = calloc(total ? total : 1, sizeof *who); /* request k's trajectory */
    out->task_index = calloc(plan->n ? plan->n : 1, sizeof *out->task_index);
    out->prompt_tokens = calloc(plan->n ? plan->n : 1, sizeof *out->prompt_tokens);
    out->prompt_len = calloc(plan->n ? plan->n : 1, sizeof *out->prompt_len);
    out->resp = calloc(total ? total : 1, sizeof *out->resp);
    out->n = plan->n;
    out->group_size = G;
    int rc = TERN_OK;
    int32_t stop = run->special.eos;
    size_t n_out = 0;
    tool_counts counts = {0};
    turn_job *jobs = NULL;     /* [total] a trajectory's turn in the job threads */
    tern_job_pool *pool = NULL;
    if (!tr || !req || !outs || !who || !out->task_index || !out->prompt_tokens ||
        !out->prompt_len || !out->resp) {
        rc = tern_errorf(TERN_ENOMEM, "explorer: out of memory");
        goto done;
    }
    double t0 = tern_run_now();
    /* reset: every trajectory's episode, and the group's prompt from its
     * first observation */
    for (uint32_t i = 0; i < plan->n && rc == TERN_OK; i++) {
        out->task_index[i] = plan->task_index[i];
        const tern_task *task = plan->tasks[i];
        char *first = NULL;
        for (uint32_t j = 0; j < G && rc == TERN_OK; j++) {
            traj *t = &tr[(size_t)i * G + j];
            if (!run->env_ops) { /* tools alone: the task's prompt is the first turn */
                t->going = 1;
                if (!first && !(first = strdup(plan->prompt[i])))
                    rc = tern_errorf(TERN_ENOMEM, "explorer: out of memory");
                continue;
            }
            tern_env_result res = {.size = sizeof res};
            snprintf(stream, sizeof stream, "%s-episode", plan->stream);
            uint64_t seed = tern_run_seed(run, stream, plan->at, (uint64_t)i * G + j);
            env_lock(run);
            tern_error_clear();
            rc = run->env_ops->reset(run->env, task, seed, &t->episode, &res);
            check_result(&res, 0);
            const char *obs = res.observation && *res.observation ? res.observation
                                                                   : plan->prompt[i];
            if (rc != TERN_OK) {
                rc = tern_role_failed(rc, "explorer", "the environment's reset");
            } else if (res.failure) {
                finish(t, TERN_END_FAILED, res.failure, res.reason);
            } else if (!first) { /* the group's first observation: its prompt */
                if (!(first = strdup(obs)))
                    rc = tern_errorf(TERN_ENOMEM, "explorer: out of memory");
                t->going = 1;
            } else if (strcmp(obs, first) != 0) {
                finish(t, TERN_END_FAILED, TERN_ENV_GARBAGE,
                       "its first observation differs from the group's first: reset() "
                       "answers one per task (a seed may vary what is hidden)");
            } else {
                t->going = 1;
            }
            env_unlock(run);
        }
        if (rc == TERN_OK && !first)
            first = strdup(plan->prompt[i]); /* no trajectory began: the task's prompt */
        size_t n = 0;
        if (rc == TERN_OK && !first)
            rc = tern_errorf(TERN_ENOMEM, "explorer: out of memory");
        if (rc == TERN_OK)
            rc = tern_traj_prompt(run, h, plan->system[i], first, &out->prompt_tokens[i], &n);
        free(first);
        out->prompt_len[i] = (uint32_t)n;
        for (uint32_t j = 0; j < G; j++)
            tr[(size_t)i * G + j].prompt_len = (uint32_t)n;
    }
    /* turn after turn, in waves of tasks that take turns: while one wave
     * decodes, the others' turns are with the tools and the environment on
     * the job threads; a wave's trajectories still going decode in one
     * generate() (the first turn: one request of G samples per task) */
    size_t W = run->set.waves ? run->set.waves : 1;
    if (W > plan->n)
        W = plan->n ? plan->n : 1;
    if (W > TERN_JOB_POOL_GROUPS)
        W = TERN_JOB_POOL_GROUPS;
    size_t threads = total < TERN_JOB_POOL_THREADS ? total : TERN_JOB_POOL_THREADS;
    if (rc == TERN_OK && !(jobs = calloc(total ? total : 1, sizeof *jobs)))
        rc = tern_errorf(TERN_ENOMEM, "explorer: out of memory");
    if (rc == TERN_OK)
        rc = tern_job_pool_start(&pool, threads, run_job);
    snprintf(stream, sizeof stream, "%s-turn", plan->stream);
    for (int any = 1, first = 1; rc == TERN_OK && any; first = 0) {
        any = 0;
        for (size_t w = 0; rc == TERN_OK && w < W; w++) {
            /* the wave's tasks [lo, hi) and their trajectories */
            uint32_t lo = (uint32_t)(w * plan->n / W), hi = (uint32_t)((w + 1) * plan->n / W);
            tern_job_pool_wait(pool, w);
            for (size_t x = (size_t)lo * G; x < (size_t)hi * G; x++)
                if (jobs[x].active) {
                    int jrc = finish_job(run, h, &jobs[x], plan->system[x / G], &counts);
                    if (rc == TERN_OK)
                        rc = jrc;
                }
            if (rc != TERN_OK)
                break;
            size_t n_req = 0;
            n_out = 0;
            for (uint32_t i = lo; i < hi && rc == TERN_OK; i++) {
                int started = 0; /* a trajectory of the task began: its reset did not fail */
                for (uint32_t j = 0; first && j < G; j++)
                    started |= tr[(size_t)i * G + j].going;
                if (first && !started)
                    continue;
                if (first) { /* the group shares its prompt: one request of G samples */
                    uint32_t room = plan->max_tokens, P = out->prompt_len[i];
                    size_t ctx = run->special.context_len > 0 ? (size_t)run->special.context_len
                                                              : 0;
                    if (ctx && P >= ctx) {
                        /* the tools' descriptions may make a prompt the start checked too long */
                        char id[96];
                        rc = tern_errorf(TERN_EINVAL, "explorer: the prompt of task %s is %u "
                                         "tokens%s, and the model's context holds %zu: shorten "
                                         "it or give fewer tools",
                                         tern_task_id_text(plan->tasks[i], id, sizeof id), P,
                                         run->tools.n ? " with the tools' descriptions" : "",
                                         ctx);
                        break;
                    }
                    if (ctx && ctx - P < room)
                        room = (uint32_t)(ctx - P);
                    req[n_req++] = (tern_gen_request){
                        .size = sizeof req[0], .prompt = out->prompt_tokens[i],
                        .prompt_len = out->prompt_len[i], .n_samples = G,
                        .max_new_tokens = room, .temperature = plan->temperature,
                        .top_k = plan->top_k, .top_p = plan->top_p, .stop = &stop, .n_stop = 1,
                        .seed = tern_run_seed(run, plan->stream, plan->at, i)};
                    for (uint32_t j = 0; j < G; j++)
                        who[n_out++] = (size_t)i * G + j;
                    continue;
                }
                for (uint32_t j = 0; j < G; j++) {
                    size_t x = (size_t)i * G + j;
                    traj *t = &tr[x];
                    if (!t->going)
                        continue;
                    /* the stream: the prompt, then every token so far */
                    size_t P = out->prompt_len[i], len = P + t->len;
                    if ((rc = grow(t, (uint32_t)P)) != TERN_OK)
                        break;
                    memmove(t->tok + P, t->tok, t->len * sizeof *t->tok);
                    memcpy(t->tok, out->prompt_tokens[i], P * sizeof *t->tok);
                    uint32_t room = plan->max_tokens;
                    if (run->special.context_len > 0 &&
                        (size_t)run->special.context_len - len < room)
                        room = (uint32_t)((size_t)run->special.context_len - len);
                    /* seeded by the trajectory's own turn: the same in any wave */
                    uint64_t turn = t->n_turn + 1;
                    req[n_req++] = (tern_gen_request){
                        .size = sizeof req[0], .prompt = t->tok, .prompt_len = len,
                        .n_samples = 1, .max_new_tokens = room,
                        .temperature = plan->temperature, .top_k = plan->top_k,
                        .top_p = plan->top_p, .stop = &stop, .n_stop = 1,
                        .seed = tern_run_seed(run, stream, plan->at, turn << 32 | x)};
                    who[n_out++] = x;
                }
            }
            if (rc != TERN_OK || n_req == 0) {
                for (size_t k = 0; !first && k < n_out; k++) /* streams back */
                    memmove(tr[who[k]].tok, tr[who[k]].tok + tr[who[k]].prompt_len,
                            tr[who[k]].len * sizeof(int32_t));
                n_out = 0;
                continue;
            }
            any = 1;
            for (size_t k = 0; k < n_out; k++)
                outs[k] = (tern_gen_output){.size = sizeof outs[k]};
            uint64_t span = tern_trace_begin(run->session->trace, "generate");
            rc = tern_model_generate(h, "explorer: generate", req, n_req, outs);
            char args[48];
            snprintf(args, sizeof args, "{\"rows\":%zu}", n_out);
            tern_trace_end(run->session->trace, span, args);
            /* the streams back to the tokens after the prompt */
            for (size_t k = 0; !first && k < n_out; k++) {
                traj *t = &tr[who[k]];
                memmove(t->tok, t->tok + t->prompt_len, t->len * sizeof *t->tok);
            }
            for (size_t k = 0; rc == TERN_OK && k < n_out; k++) {
                size_t x = who[k];
                traj *t = &tr[x];
                out->gen_tokens += outs[k].len;
                if (!t->going)
                    continue;
                uint64_t seed = tern_run_seed(run, "tool", plan->at,
                                              (uint64_t)(t->n_turn + 1) << 32 | x);
                rc = take_turn(run, h, t, &outs[k], seed * TERN_TOOL_MAX_CALLS, &jobs[x]);
                if (rc == TERN_OK && (rc = tern_job_pool_submit(pool, &jobs[x], w)) != TERN_OK)
                    jobs[x].active = 0;
            }
            tern_model_release_outputs(h, outs, n_out);
            n_out = 0;
        }
    }
    /* a failure leaves jobs behind: they run out before anything is freed */
    tern_job_pool_stop(pool);
    pool = NULL;
    for (size_t x = 0; jobs && x < total; x++)
        if (jobs[x].active) {
            jobs[x].active = 0;
            job_clear(&jobs[x]);
        }
    out->gen_seconds = tern_run_now() - t0;
    out->done_unix_ns = tern_run_unix_ns();
    out->tool_calls = counts.calls;
    out->tool_invalid = counts.invalid;
    out->tool_failed = counts.failed;
    for (size_t x = 0; rc == TERN_OK && x < total; x++) {
        traj *t = &tr[x];
        tern_response *r = &out->resp[x];
        r->len = t->len;
        r->finish = t->finish ? t->finish : TERN_FINISH_STOP;
        r->end = t->end;
        r->env_failure = t->failure;
        r->tokens = t->tok ? t->tok : malloc(sizeof *r->tokens);
        r->logp = t->lp ? t->lp : malloc(sizeof *r->logp);
        t->tok = NULL, t->lp = NULL;
        r->text = t->text ? t->text : strdup("");
        t->text = NULL;
        if (t->n_seg) {
            r->n_segments = t->n_seg, r->seg_len = t->seg, t->seg = NULL;
            r->n_turns = t->n_turn, r->turn_reward = t->turn, t->turn = NULL;
        }
        if (t->reason[0] && !(r->env_reason = strdup(t->reason)))
            rc = tern_errorf(TERN_ENOMEM, "explorer: out of memory");
        if (!r->tokens || !r->logp || !r->text)
            rc = tern_errorf(TERN_ENOMEM, "explorer: out of memory");
    }
done:
    tern_job_pool_stop(pool);
    for (size_t x = 0; jobs && x < total; x++)
        job_clear(&jobs[x]);
    free(jobs);
    tern_model_release_outputs(h, outs, n_out);
    for (size_t x = 0; tr && x < total; x++) {
        if (tr[x].episode && run->env_ops) {
            env_lock(run);
            run->env_ops->close(run->env, tr[x].episode);
            env_unlock(run);
        }
        traj_free(&tr[x]);
    }
    free(tr), free(req), free(outs), free(who);
    return rc;
}

void tern_trajectory_returns(tern_run *run, const tern_rollout_msg *r,
                             const tern_task *const *tasks, tern_verdict *v, size_t n,
                             int judge, const char *stage, int64_t at)
{
    for (size_t i = 0; i < n; i++) {
        const tern_response *x = &r->resp[i];
        double ret = 0;
        for (uint32_t k = 0; k < x->n_turns; k++)
            ret += x->turn_reward[k];
        v[i].reward += ret;
        if (!v[i].judged) {
            v[i].accuracy = x->end == TERN_END_DONE && v[i].reward > 0 ? 1.0 : 0.0;
            v[i].judged = judge;
        }
        if (x->end == TERN_END_FAILED)
            tern_failure_log_keep_episode(&run->failures,
                                          run->set.has_workflow ? "workflow" : "environment",
                                          run->set.has_workflow ? run->workflow_name
                                                                : run->env_plugin,
                                          tasks[i], x->text,
                                          x->len, tern_env_failure_name(x->env_failure),
                                          x->env_reason, x->n_turns, stage, at);
    }
}
