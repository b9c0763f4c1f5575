/* ranks_reward.c: reward-worker ranks (ranks.rewards = R, docs/distributed.md
 * "Reward-worker ranks").
 *
 * The master keeps routing (which plugin scores which domain, the weights,
 * the figures), but a route's responses are scored on the reward ranks: the
 * rewarder's remote hook splits them into R contiguous shares, sends each
 * share to its rank as the isolated reward worker is sent a batch (each
 * task's JSON and origin, the response's text and token count: a
 * REWARD_ASK), and waits (on a mailbox, never in MPI) for the verdicts
 * (REWARD_ANSWER). A reward rank scores with its own instances of the
 * reward plugins, in its own isolated workers for a route with
 * `isolate = true`, so a crash or a hang stays a failed verdict there. */
#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"
#include "base/log.h"
#include "channel/wire.h"
#include "data/task.h"
#include "loop/data_parallel.h"
#include "loop/ranks.h"
#include "rundir/trace.h"

#ifdef TERN_HAVE_MPI

typedef struct remote {
    tern_link *link;
    int first, n;         /* the reward ranks: [first, first + n) */
    pthread_mutex_t lock; /* one exchange at a time: the answers share a mailbox */
    char **names;         /* component names handed out (they outlive an exchange) */
    size_t n_names;
} remote;

/* A component name that stays valid until the hook is removed. */
static const char *intern(remote *rm, const char *name)
{
    for (size_t i = 0; i < rm->n_names; i++)
        if (strcmp(rm->names[i], name) == 0)
            return rm->names[i];
    char **grown = realloc(rm->names, (rm->n_names + 1) * sizeof *grown);
    if (!grown)
        return NULL;
    rm->names = grown;
    if (!(grown[rm->n_names] = strdup(name)))
        return NULL;
    return grown[rm->n_names++];
}

/* No verdict for items [lo, hi): `why` says so to the user. */
static void fail_share(tern_reward_result *res, tern_reward_failure *fail, size_t lo, size_t hi,
                       int rank, const char *why)
{
    for (size_t k = lo; k < hi; k++) {
        fail[k] = TERN_REWARD_START;
        snprintf(res[k].reason, sizeof res[k].reason, "reward rank %d: %s", rank, why);
    }
}

static int ask(remote *rm, int rank, size_t route, const tern_reward_item *items, size_t n)
{
    tern_reward_ask a = {.kind = TERN_MSG_REWARD_ASK, .route = (uint32_t)route,
                         .n = (uint32_t)n};
    a.task = calloc(n ? n : 1, sizeof *a.task);
    a.origin = calloc(n ? n : 1, sizeof *a.origin);
    a.response = calloc(n ? n : 1, sizeof *a.response);
    a.tokens = calloc(n ? n : 1, sizeof *a.tokens);
    int rc = a.task && a.origin && a.response && a.tokens
                 ? TERN_OK
                 : tern_errorf(TERN_ENOMEM, "out of memory");
    for (size_t i = 0; i < n && rc == TERN_OK; i++) {
        /* the ask's strings are borrowed but the tasks' JSON */
        if (!(a.task[i] = tern_task_json(items[i].task, "")))
            rc = tern_errorf(TERN_ENOMEM, "out of memory");
        a.origin[i] = (char *)tern_task_origin(items[i].task);
        a.response[i] = (char *)items[i].response;
        a.tokens[i] = items[i].response_tokens;
    }
    unsigned char *buf = NULL;
    size_t len = 0;
    if (rc == TERN_OK)
        rc = tern_wire_encode(&a, &buf, &len);
    if (rc == TERN_OK)
        rc = tern_link_send(rm->link, rank, TERN_TAG_REWARD_ASK, buf, len);
    free(buf);
    for (size_t i = 0; a.task && i < n; i++)
        free(a.task[i]);
    free(a.task), free(a.origin), free(a.response), free(a.tokens);
    return rc;
}

/* A share's verdicts from its rank's answer. */
static int take_answer(remote *rm, const tern_reward_answer *a, tern_reward_result *res,
                       tern_reward_failure *fail, size_t lo, size_t hi, int rank)
{
    if (a->n != hi - lo) {
        fail_share(res, fail, lo, hi, rank, "it answered for another number of responses");
        return TERN_OK;
    }
    for (size_t k = lo; k < hi; k++) {
        const tern_reward_reply *v = &a->reply[k - lo];
        fail[k] = v->failure <= TERN_REWARD_START ? (tern_reward_failure)v->failure
                                                  : TERN_REWARD_GARBAGE;
        res[k].reward = v->reward;
        snprintf(res[k].reason, sizeof res[k].reason, "%s", v->reason);
        res[k].n_components = v->n_comp;
        for (uint32_t c = 0; c < v->n_comp; c++) {
            const char *name = intern(rm, v->comp_name[c]);
            if (!name)
                return tern_errorf(TERN_ENOMEM, "out of memory");
            res[k].components[c] = (tern_reward_component){.name = name,
                                                           .value = v->comp_value[c]};
        }
    }
    return TERN_OK;
}

/* The rewarder's remote hook (rewarder.h): each reward rank scores a share. */
static int score_remote(void *arg, size_t route, const tern_reward_item *items,
                        tern_reward_result *res, tern_reward_failure *fail, size_t m)
{
    remote *rm = arg;
    char *waiting = calloc((size_t)rm->n, 1); /* 1: asked, not answered yet */
    if (!waiting)
        return tern_errorf(TERN_ENOMEM, "out of memory");
    int rc = TERN_OK, asked = 0;
    size_t lo, hi;
    pthread_mutex_lock(&rm->lock);
    for (int r = 0; r < rm->n; r++) {
        tern_share_of(m, r, rm->n, &lo, &hi);
        if (lo == hi)
            continue;
        if (ask(rm, rm->first + r, route, items + lo, hi - lo) == TERN_OK) {
            waiting[r] = 1;
            asked++;
        } else {
            fail_share(res, fail, lo, hi, rm->first + r, tern_error_message());
        }
    }
    for (; asked > 0 && rc == TERN_OK; asked--) {
        void *buf = NULL, *msg = NULL;
        size_t len = 0;
        int from = -1;
        if (tern_link_recv(rm->link, TERN_TAG_REWARD_ANSWER, -1, &buf, &len, &from) != TERN_OK)
            break; /* the run is ending */
        int r = from - rm->first;
        if (r < 0 || r >= rm->n || !waiting[r]) {
            free(buf);
            asked++; /* not an answer to this exchange: wait on */
            continue;
        }
        waiting[r] = 0;
        tern_share_of(m, r, rm->n, &lo, &hi);
        int st = tern_wire_decode(buf, len, &msg);
        free(buf);
        if (st == TERN_OK && *(tern_msg_kind *)msg != TERN_MSG_REWARD_ANSWER)
            st = tern_errorf(TERN_EINVAL, "it sent a message of another kind");
        if (st == TERN_OK)
            rc = take_answer(rm, msg, res, fail, lo, hi, from);
        else
            fail_share(res, fail, lo, hi, from, tern_error_message());
        tern_msg_free(msg);
    }
    for (int r = 0; r < rm->n; r++)
        if (waiting[r]) {
            tern_share_of(m, r, rm->n, &lo, &hi);
            fail_share(res, fail, lo, hi, rm->first + r, "no answer: the run is ending");
        }
    pthread_mutex_unlock(&rm->lock);
    free(waiting);
    return rc;
}

int tern_ranks_rewards_remote(tern_run *run)
{
    tern_ranks *rk = run->ranks;
    if (!rk->reward_ranks)
        return TERN_OK;
    remote *rm = calloc(1, sizeof *rm);
    if (!rm)
        return tern_errorf(TERN_ENOMEM, "out of memory");
    rm->link = rk->link;
    rm->first = tern_rank_rewards_at(rk);
    rm->n = (int)rk->reward_ranks;
    pthread_mutex_init(&rm->lock, NULL);
    run->rewards.remote = score_remote;
    run->rewards.remote_arg = rm;
    return TERN_OK;
}

void tern_ranks_rewards_local(tern_run *run)
{
    remote *rm = run->rewards.remote_arg;
    run->rewards.remote = NULL;
    run->rewards.remote_arg = NULL;
    if (!rm)
        return;
    for (size_t i = 0; i < rm->n_names; i++)
        free(rm->names[i]);
    free(rm->names);
    pthread_mutex_destroy(&rm->lock);
    free(rm);
}

/* ---- the reward rank ----------------------------------------------------------------- */

/* Score one ask with this rank's own instance of its route, into *out. */
static int serve(tern_run *run, const tern_reward_ask *a, tern_reward_answer *out)
{
    size_t n = a->n;
    tern_task **tasks = calloc(n ? n : 1, sizeof *tasks);
    tern_reward_item *items = calloc(n ? n : 1, sizeof *items);
    tern_reward_result *res = calloc(n ? n : 1, sizeof *res);
    tern_reward_failure *fail = calloc(n ? n : 1, sizeof *fail);
    out->kind = TERN_MSG_REWARD_ANSWER;
    out->reply = calloc(n ? n : 1, sizeof *out->reply);
    int rc = tasks && items && res && fail && out->reply
                 ? TERN_OK
                 : tern_errorf(TERN_ENOMEM, "out of memory");
    out->n = rc == TERN_OK ? a->n : 0;
    for (size_t i = 0; i < n && rc == TERN_OK; i++) {
        /* a task the master parsed parses here too */
        rc = tern_task_parse(a->task[i], strlen(a->task[i]), "reward rank", &tasks[i]);
        if (rc == TERN_OK)
            tern_task_set_origin(tasks[i], a->origin[i]);
        items[i] = (tern_reward_item){.size = sizeof items[i], .task = tasks[i],
                                      .response = a->response[i],
                                      .response_len = strlen(a->response[i]),
                                      .response_tokens = a->tokens[i]};
        res[i].size = sizeof res[i];
    }
    if (rc == TERN_OK && a->route >= run->rewards.n)
        rc = tern_errorf(TERN_EINVAL, "the master asked for reward route %u of %zu (ranks "
                         "running different configs?)", a->route, run->rewards.n);
    if (rc == TERN_OK) {
        uint64_t span = tern_trace_begin(run->session->trace, "reward");
        rc = tern_rewarder_route_score(&run->rewards, a->route, items, res, fail, n);
        char args[64];
        snprintf(args, sizeof args, "{\"responses\":%zu}", n);
        tern_trace_end(run->session->trace, span, args);
    }
    for (size_t i = 0; i < out->n; i++) {
        tern_reward_reply *v = &out->reply[i];
        if (rc != TERN_OK) { /* no verdicts: each response says why */
            v->failure = TERN_REWARD_ERROR;
            v->reason = strdup(tern_error_message());
            continue;
        }
        v->failure = (uint32_t)fail[i];
        v->reward = res[i].reward;
        v->reason = strdup(res[i].reason);
        for (uint32_t c = 0; c < res[i].n_components && c < TERN_REWARD_MAX_COMPONENTS; c++) {
            if (!res[i].components[c].name)
                continue;
            v->comp_name[v->n_comp] = strdup(res[i].components[c].name);
            v->comp_value[v->n_comp++] = res[i].components[c].value;
        }
    }
    for (size_t i = 0; tasks && i < n; i++)
        tern_task_free(tasks[i]);
    free(tasks), free(items), free(res), free(fail);
    return rc == TERN_ENOMEM ? rc : TERN_OK;
}

void *tern_ranks_reward_main(void *arg)
{
    tern_run *run = arg;
    tern_link *link = run->ranks->link;
    tern_trace_name_lane(run->session->trace, "rewards");
    for (;;) {
        void *buf = NULL, *msg = NULL;
        size_t len = 0;
        if (tern_link_recv(link, TERN_TAG_REWARD_ASK, -1, &buf, &len, NULL) != TERN_OK)
            break; /* the run is over */
        int rc = tern_wire_decode(buf, len, &msg);
        free(buf);
        if (rc == TERN_OK && *(tern_msg_kind *)msg != TERN_MSG_REWARD_ASK)
            rc = tern_errorf(TERN_EINVAL, "a message of kind %d where a reward ask belongs",
                             (int)*(tern_msg_kind *)msg);
        tern_reward_answer out = {.kind = TERN_MSG_REWARD_ANSWER};
        if (rc == TERN_OK)
            rc = serve(run, msg, &out);
        unsigned char *bytes = NULL;
        size_t n = 0;
        /* an answer whatever happened: the master waits for one */
        if (rc != TERN_OK || tern_wire_encode(&out, &bytes, &n) != TERN_OK) {
            tern_logf(TERN_LOG_ERROR, "rewards", "rank %d: a reward ask: %s",
                      run->ranks->rank, tern_error_message());
            tern_reward_answer none = {.kind = TERN_MSG_REWARD_ANSWER};
            tern_wire_encode(&none, &bytes, &n);
        }
        tern_link_send(link, 0, TERN_TAG_REWARD_ANSWER, bytes, n);
        free(bytes);
        for (uint32_t i = 0; out.reply && i < out.n; i++) {
            free(out.reply[i].reason);
            for (uint32_t c = 0; c < out.reply[i].n_comp; c++)
                free(out.reply[i].comp_name[c]);
        }
        free(out.reply);
        tern_msg_free(msg);
    }
    return NULL;
}

#endif
