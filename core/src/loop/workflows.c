/* workflows.c: a batch's trajectories run by the user's program (see
 * workflows.h; docs/agents.md, "Workflows").
 *
 * For a batch, a server of the explorer's model listens on loopback, with an
 * endpoint of each trajectory's own (/s/KEY/v1, serve_session.h: sampled
 * with the run's settings, every call recorded token for token). A thread
 * runs the programs, `concurrency` at a time (agent/child_pool.h), each
 * with its task on stdin and its endpoint in OPENAI_BASE_URL; this thread,
 * which owns the model, decodes their calls together meanwhile, until the
 * last program ended. Then each trajectory is its calls in order: the first
 * call's prompt is the group's prompt, what it sampled the first model
 * segment, and each call whose prompt extends the previous call's ids adds
 * a context segment (the ids after them) and its own. A call that rewrote
 * the history begins a sequence of its own: a restart segment, its whole
 * prompt, then its answer (counted: workflow/rewrites). The program's last
 * line of output, {"reward": R}, is the trajectory's reward. */
#include "loop/workflows.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "agent/child_pool.h"
#include "base/errmsg.h"
#include "data/task.h"
#include "data/task_file.h"
#include "loop/run.h"
#include "serve/serve.h"
#include "serve/serve_session.h"
#include "tern/environment.h"

/* What each program gets in its environment. */
enum { WF_ENV_BASE_URL, WF_ENV_API_KEY, WF_ENV_MODEL, WF_ENV_SEED, WF_ENV_N };

/* The model's name on a trajectory's endpoint (any name a program asks for
 * is this model: an agent written for another model runs as it is). */
#define WF_MODEL_NAME "policy"

typedef struct wf {
    tern_run *run;
    size_t n;                  /* trajectories */
    tern_serve_session *sess;  /* [n] */
    char prefix[17];           /* the batch's random part of every key */
    tern_server *server;
    tern_child_spec *spec;     /* [n] */
    tern_child_result *res;    /* [n] */
    char **env;                /* [n * (WF_ENV_N + 1)], NULL-ended per program */
    char **input;              /* [n] the task's line */
    int pool_rc;
    char pool_error[512];
} wf;

static tern_serve_session *find_session(void *user, const char *key, size_t len)
{
    wf *w = user;
    if (len < 18 || len > 40 || memcmp(key, w->prefix, 16) != 0 || key[16] != '-')
        return NULL;
    size_t i = 0;
    for (size_t k = 17; k < len; k++) {
        if (key[k] < '0' || key[k] > '9')
            return NULL;
        i = i * 10 + (size_t)(key[k] - '0');
    }
    return i < w->n ? &w->sess[i] : NULL;
}

static void program_done(void *user, size_t i, const tern_child_result *r)
{
    (void)r;
    wf *w = user;
    tern_serve_session_close(&w->sess[i]); /* later calls (a child it left) are refused */
}

/* The programs' thread: run them all, then stop the model's loop. */
static void *run_programs(void *arg)
{
    wf *w = arg;
    tern_run *run = w->run;
    w->pool_rc = tern_child_pool_run(w->spec, w->n, run->set.workflow_concurrency, w->res,
                                     program_done, w, &run->failed);
    if (w->pool_rc != TERN_OK)
        snprintf(w->pool_error, sizeof w->pool_error, "%s", tern_error_message());
    tern_server_close(w->server);
    return NULL;
}

/* The last line of s that is not blank, cut at its end: [*at, *at + *len). */
static void last_line(const char *s, size_t n, size_t *at, size_t *len)
{
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    size_t a = n;
    while (a > 0 && s[a - 1] != '\n')
        a--;
    *at = a, *len = n - a;
}

/* The reward the program's output ends with; 0, or -1 with why. */
static int reward_of(const tern_child_result *r, double *reward, char *why, size_t n)
{
    size_t at, len;
    last_line(r->out ? r->out : "", r->out_len, &at, &len);
    if (len == 0) {
        snprintf(why, n, "it printed no reward: its last line of output must be "
                 "{\"reward\": NUMBER}");
        return -1;
    }
    json_error_t je;
    json_t *o = json_loadb(r->out + at, len, 0, &je);
    json_t *v = json_object_get(o, "reward");
    int ok = json_is_number(v) && isfinite(json_number_value(v));
    if (ok)
        *reward = json_number_value(v);
    else
        snprintf(why, n, "its last line of output is not {\"reward\": NUMBER} (%s): %.200s",
                 !o ? je.text : !json_is_object(o) ? "not an object"
                 : !v ? "no \"reward\"" : "the reward is not a finite number",
                 r->out + at);
    json_decref(o);
    return ok ? 0 : -1;
}

/* Why a program failed, as a tern_env_failure and a reason; 0 when it did not. */
static uint32_t failure_of(const tern_run *run, const tern_child_result *r, double *reward,
                           char *why, size_t n)
{
    size_t at = 0, len = 0;
    last_line(r->err_tail ? r->err_tail : "", r->err_len, &at, &len);
    char err[320] = "";
    if (len)
        snprintf(err, sizeof err, "; its stderr ends: %.*s", (int)(len < 280 ? len : 280),
                 r->err_tail + at);
    switch (r->outcome) {
    case TERN_CHILD_EXITED:
        if (r->exit_code != 0) {
            snprintf(why, n, "it exited with status %d%s", r->exit_code, err);
            return TERN_ENV_ERROR;
        }
        return reward_of(r, reward, why, n) == 0 ? 0u : (uint32_t)TERN_ENV_GARBAGE;
    case TERN_CHILD_SIGNALED:
        snprintf(why, n, "it was killed by signal %d (%s)%s", r->signal, strsignal(r->signal),
                 err);
        return TERN_ENV_CRASH;
    case TERN_CHILD_TIMED_OUT:
        snprintf(why, n, "it ran past workflow.timeout_s = %g s and was killed%s",
                 run->set.workflow_timeout_s, err);
        return TERN_ENV_TIMEOUT;
    case TERN_CHILD_SPAWN_FAILED:
        snprintf(why, n, "'%s' could not be started: %s (workflow.command runs in %s)",
                 run->set.workflow_command[0], strerror(r->spawn_errno),
                 run->set.workflow_dir);
        return TERN_ENV_START;
    default:
        snprintf(why, n, "the run stopped it");
        return TERN_ENV_ERROR;
    }
}

static int same_ids(const int32_t *a, size_t na, const int32_t *b, size_t nb)
{
    return na == nb && memcmp(a, b, na * sizeof *a) == 0;
}

/* Trajectory x's response from its calls, token for token. The first
 * call's prompt is the group's, its answer the first model segment. A call
 * whose prompt extends the sequence so far adds a context segment (the ids
 * after it) and its answer; one that rewrote the history begins a sequence
 * of its own: a restart segment (its whole prompt) and its answer. */
static int assemble(const tern_serve_session *s, const int32_t *prompt, size_t prompt_len,
                    uint32_t failure, const char *why, double reward, tern_response *r,
                    uint64_t *rewrites)
{
    size_t used = 0, len = 0, restarts = 0;
    if (failure == 0 && s->n_calls == 0)
        failure = TERN_ENV_GARBAGE, why = "it made no call to the model: a trajectory is the "
                                          "calls it makes to OPENAI_BASE_URL";
    if (s->n_calls > 0 && !same_ids(s->calls[0].prompt, s->calls[0].prompt_len, prompt,
                                    prompt_len)) {
        if (failure == 0)
            failure = TERN_ENV_GARBAGE,
            why = "its first call's prompt differs from its group's first: a task's programs "
                  "start alike (GRPO compares them), so vary only what the model is not shown";
    } else {
        /* the tokens: each call's answer, and the context or the restart's
         * prompt before it; seq: the current sequence's length, prompt in */
        size_t seq = prompt_len;
        for (used = 0; used < s->n_calls; used++) {
            const tern_serve_call *c = &s->calls[used];
            if (used > 0 && c->extends)
                len += c->prompt_len - seq;
            else if (used > 0)
                len += c->prompt_len, restarts++;
            len += c->len;
            seq = c->prompt_len + c->len;
        }
        if (restarts)
            (*rewrites)++;
    }
    r->tokens = malloc((len ? len : 1) * sizeof *r->tokens);
    r->logp = calloc(len ? len : 1, sizeof *r->logp);
    r->n_segments = used ? (uint32_t)(2 * used - 1) : 0;
    r->seg_len = used ? calloc(r->n_segments, sizeof *r->seg_len) : NULL;
    r->n_turns = (uint32_t)used;
    r->turn_reward = used ? calloc(used, sizeof *r->turn_reward) : NULL;
    r->restart = restarts ? calloc(restarts, sizeof *r->restart) : NULL;
    r->text = strdup(used ? s->calls[used - 1].text : "");
    if (!r->tokens || !r->logp || !r->text || (used && (!r->seg_len || !r->turn_reward)) ||
        (restarts && !r->restart))
        return tern_errorf(TERN_ENOMEM, "explorer: out of memory");
    size_t at = 0, seq = prompt_len;
    for (size_t k = 0; k < used; k++) {
        const tern_serve_call *c = &s->calls[k];
        if (k > 0) {
            /* extending: the ids between (the template's, and a turn's end
             * the model did not write); rewritten: the call's whole prompt */
            size_t from = c->extends ? seq : 0;
            if (!c->extends)
                r->restart[r->n_restarts++] = (uint32_t)(2 * k - 1);
            memcpy(r->tokens + at, c->prompt + from, (c->prompt_len - from) * sizeof *r->tokens);
            r->seg_len[2 * k - 1] = (uint32_t)(c->prompt_len - from);
            at += c->prompt_len - from;
        }
        memcpy(r->tokens + at, c->ids, c->len * sizeof *r->tokens);
        memcpy(r->logp + at, c->logprobs, c->len * sizeof *r->logp);
        r->seg_len[2 * k] = (uint32_t)c->len;
        at += c->len;
        seq = c->prompt_len + c->len;
        r->finish = c->finish;
    }
    r->len = (uint32_t)at;
    if (!used)
        r->finish = TERN_FINISH_STOP;
    r->end = failure ? TERN_END_FAILED : TERN_END_DONE;
    r->env_failure = failure;
    if (used && !failure)
        r->turn_reward[used - 1] = reward;
    if (failure && !(r->env_reason = strdup(why)))
        return tern_errorf(TERN_ENOMEM, "explorer: out of memory");
    return TERN_OK;
}

/* The programs' specs: their command, folder, environment and task. */
static int prepare(wf *w, const tern_traj_plan *plan, unsigned port)
{
    tern_run *run = w->run;
    uint32_t G = plan->G;
    for (size_t x = 0; x < w->n; x++) {
        char **env = &w->env[x * (WF_ENV_N + 1)];
        uint64_t seed = tern_run_seed(run, "workflow", plan->at, x);
        if (asprintf(&env[WF_ENV_BASE_URL], "OPENAI_BASE_URL=http://127.0.0.1:%u/s/%s-%zu/v1",
                     port, w->prefix, x) < 0 ||
            asprintf(&env[WF_ENV_API_KEY], "OPENAI_API_KEY=tern") < 0 ||
            asprintf(&env[WF_ENV_MODEL], "TERN_MODEL=%s", WF_MODEL_NAME) < 0 ||
            asprintf(&env[WF_ENV_SEED], "TERN_SEED=%llu", (unsigned long long)(seed >> 11)) < 0)
            return tern_errorf(TERN_ENOMEM, "explorer: out of memory");
        const json_t *task = tern_task_object(plan->tasks[x / G]);
        char *line = task ? json_dumps(task, JSON_COMPACT) : NULL;
        if (!line || asprintf(&w->input[x], "%s\n", line) < 0) {
            free(line);
            return tern_errorf(TERN_ENOMEM, "explorer: out of memory");
        }
        free(line);
        w->spec[x] = (tern_child_spec){.argv = (const char *const *)run->set.workflow_command,
                                       .cwd = run->set.workflow_dir,
                                       .env = (const char *const *)env,
                                       .input = w->input[x],
                                       .timeout_s = run->set.workflow_timeout_s};
        tern_serve_session *s = &w->sess[x];
        s->temperature = plan->temperature;
        s->top_p = plan->top_p;
        s->top_k = plan->top_k;
        s->max_tokens = plan->max_tokens;
        s->max_calls = run->set.max_turns;
        s->seed = tern_run_seed(run, plan->stream, plan->at, x);
    }
    return TERN_OK;
}

static int random_prefix(char out[17])
{
    unsigned char b[8];
    if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b)
        return tern_errorf(TERN_EIO, "explorer: no random bytes for the workflow's endpoints: "
                           "%s", strerror(errno));
    for (int i = 0; i < 8; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
    return TERN_OK;
}

int tern_sample_workflows(tern_run *run, const tern_traj_plan *plan, tern_rollout_msg *out)
{
    uint32_t G = plan->G;
    wf w = {.run = run, .n = (size_t)plan->n * G};
    size_t n = w.n ? w.n : 1;
    w.sess = calloc(n, sizeof *w.sess);
    w.spec = calloc(n, sizeof *w.spec);
    w.res = calloc(n, sizeof *w.res);
    w.env = calloc(n * (WF_ENV_N + 1), sizeof *w.env);
    w.input = calloc(n, sizeof *w.input);
    out->task_index = calloc(plan->n ? plan->n : 1, sizeof *out->task_index);
    out->prompt_tokens = calloc(plan->n ? plan->n : 1, sizeof *out->prompt_tokens);
    out->prompt_len = calloc(plan->n ? plan->n : 1, sizeof *out->prompt_len);
    out->resp = calloc(n, sizeof *out->resp);
    out->n = plan->n;
    out->group_size = G;
    for (size_t x = 0; w.sess && x < w.n; x++)
        tern_serve_session_init(&w.sess[x]);
    int rc = w.sess && w.spec && w.res && w.env && w.input && out->task_index &&
                     out->prompt_tokens && out->prompt_len && out->resp
                 ? random_prefix(w.prefix)
                 : tern_errorf(TERN_ENOMEM, "explorer: out of memory");
    tern_serve_options o = {.size = sizeof o,
                            .address = "127.0.0.1",
                            .model_name = WF_MODEL_NAME,
                            .max_connections = 2 * run->set.workflow_concurrency + 8,
                            .batch_samples = run->set.workflow_concurrency,
                            .limits = tern_serve_default_limits(),
                            .session = find_session,
                            .session_user = &w};
    unsigned port = 0;
    double t0 = tern_run_now();
    if (rc == TERN_OK)
        rc = tern_server_start(plan->m, &o, &w.server, &port);
    if (rc == TERN_OK)
        rc = prepare(&w, plan, port);
    pthread_t th;
    int started = 0;
    if (rc == TERN_OK) {
        if (pthread_create(&th, NULL, run_programs, &w) != 0)
            rc = tern_errorf(TERN_ERR, "explorer: cannot start the workflow's thread");
        else
            started = 1;
    }
    static volatile sig_atomic_t never = 0; /* the programs' thread closes the loop */
    if (rc == TERN_OK)
        rc = tern_server_run(w.server, &never);
    if (started)
        pthread_join(th, NULL);
    tern_server_free(w.server); /* every connection answered: the sessions are ours again */
    w.server = NULL;
    if (rc == TERN_OK && w.pool_rc != TERN_OK)
        rc = tern_errorf(w.pool_rc, "explorer: the workflow's programs: %s", w.pool_error);
    if (rc == TERN_OK && atomic_load(&run->failed))
        rc = tern_errorf(TERN_ECLOSED, "explorer: the run is winding down");
    out->gen_seconds = tern_run_now() - t0;
    out->done_unix_ns = tern_run_unix_ns();
    for (uint32_t i = 0; rc == TERN_OK && i < plan->n; i++) {
        out->task_index[i] = plan->task_index[i];
        /* the group's prompt: its first program's first call (one that called) */
        const tern_serve_call *first = NULL;
        for (uint32_t j = 0; !first && j < G; j++)
            if (w.sess[(size_t)i * G + j].n_calls)
                first = &w.sess[(size_t)i * G + j].calls[0];
        size_t P = 0;
        if (first) {
            P = first->prompt_len;
            if ((out->prompt_tokens[i] = malloc((P ? P : 1) * sizeof(int32_t))))
                memcpy(out->prompt_tokens[i], first->prompt, P * sizeof(int32_t));
            else
                rc = tern_errorf(TERN_ENOMEM, "explorer: out of memory");
        } else { /* none called: the task's prompt stands for the group's */
            rc = tern_run_prompt(plan->m, "explorer", plan->system[i], plan->prompt[i], NULL,
                                 &out->prompt_tokens[i], &P);
        }
        out->prompt_len[i] = (uint32_t)P;
        for (uint32_t j = 0; rc == TERN_OK && j < G; j++) {
            size_t x = (size_t)i * G + j;
            const tern_serve_session *s = &w.sess[x];
            char why[900] = "";
            double reward = 0;
            uint32_t failure = failure_of(run, &w.res[x], &reward, why, sizeof why);
            for (size_t k = 0; k < s->n_calls; k++)
                out->gen_tokens += s->calls[k].len;
            out->wf_calls += s->n_calls;
            rc = assemble(s, out->prompt_tokens[i], P, failure, why, reward, &out->resp[x],
                          &out->wf_rewrites);
        }
    }
    for (size_t x = 0; w.sess && x < w.n; x++)
        tern_serve_session_free(&w.sess[x]);
    for (size_t x = 0; w.res && x < w.n; x++)
        tern_child_result_free(&w.res[x]);
    for (size_t k = 0; w.env && k < w.n * (WF_ENV_N + 1); k++)
        free(w.env[k]);
    for (size_t x = 0; w.input && x < w.n; x++)
        free(w.input[x]);
    free(w.sess), free(w.spec), free(w.res), free(w.env), free(w.input);
    return rc;
}
