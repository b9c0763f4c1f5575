/* serve_session.c: a trajectory's endpoint: its calls sampled with the run's
 * settings and recorded, a continued conversation appended token for token
 * (see serve_session.h). */
#include "serve/serve_session.h"

#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"
#include "model/chat_suffix.h"
#include "serve/chat_render.h"

void tern_serve_session_init(tern_serve_session *s)
{
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    s->top_p = 1;
}

void tern_serve_session_close(tern_serve_session *s)
{
    pthread_mutex_lock(&s->mu);
    s->closed = 1;
    pthread_mutex_unlock(&s->mu);
}

int tern_serve_session_closed(tern_serve_session *s)
{
    pthread_mutex_lock(&s->mu);
    int closed = s->closed;
    pthread_mutex_unlock(&s->mu);
    return closed;
}

void tern_serve_call_free(tern_serve_call *c)
{
    free(c->prompt), free(c->ids), free(c->logprobs), free(c->text);
    memset(c, 0, sizeof *c);
}

void tern_serve_session_free(tern_serve_session *s)
{
    for (size_t i = 0; i < s->n_calls; i++)
        tern_serve_call_free(&s->calls[i]);
    free(s->calls);
    json_decref(s->last_messages);
    json_decref(s->last_answer);
    free(s->last_tools);
    pthread_mutex_destroy(&s->mu);
    memset(s, 0, sizeof *s);
}

int tern_serve_session_begin(tern_serve_session *s, const tern_serve_request *r, uint32_t *k,
                             tern_serve_error *e)
{
    if (tern_serve_session_closed(s))
        return tern_serve_fail(e, 410, "invalid_request_error", NULL, "trajectory_ended",
                               "this trajectory's endpoint is closed: its program ended (or "
                               "ran past workflow.timeout_s)");
    if (r->n != 1 || (r->kind == TERN_SERVE_COMPLETION && r->n_prompts != 1))
        return tern_serve_fail(e, 400, "invalid_request_error", "n", NULL,
                               "a workflow's call is one sample of one prompt (n = 1): a "
                               "trajectory is one conversation; the run samples group_size "
                               "trajectories of each task");
    if (s->started >= s->max_calls)
        return tern_serve_fail(e, 429, "invalid_request_error", NULL, "max_calls_exceeded",
                               "this trajectory has made its %u calls (workflow.max_calls)",
                               s->max_calls);
    *k = s->started++;
    return 0;
}

/* 1 when the agent's message m (normalized, serve_request.c) is the answer a. */
static int is_answer(json_t *m, json_t *a)
{
    json_t *role = json_object_get(m, "role");
    if (!json_is_string(role) || strcmp(json_string_value(role), "assistant") != 0)
        return 0;
    json_t *content = json_object_get(m, "content");
    const char *text = json_is_string(content) ? json_string_value(content) : "";
    if (strcmp(text, json_string_value(json_object_get(a, "content"))) != 0)
        return 0;
    json_t *calls = json_object_get(m, "tool_calls"), *ours = json_object_get(a, "calls");
    if (json_array_size(calls) != json_array_size(ours))
        return 0;
    for (size_t i = 0; i < json_array_size(ours); i++) {
        json_t *fn = json_object_get(json_array_get(calls, i), "function");
        json_t *mine = json_array_get(ours, i);
        if (!json_equal(json_object_get(fn, "name"), json_array_get(mine, 0)) ||
            !json_equal(json_object_get(fn, "arguments"), json_array_get(mine, 1)))
            return 0;
    }
    return 1;
}

static int same_text(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

int tern_serve_session_continue(tern_serve_session *s, const tern_model *m, int32_t eos,
                                const tern_serve_request *r, int32_t **ids, size_t *n,
                                tern_serve_error *e)
{
    *ids = NULL, *n = 0;
    if (r->kind != TERN_SERVE_CHAT || !s->last_messages || s->n_calls == 0 ||
        !same_text(r->tools, s->last_tools))
        return 0;
    json_t *msgs = json_loads(r->messages, 0, NULL);
    size_t k = json_array_size(s->last_messages), all = json_array_size(msgs);
    int go = msgs && all > k + 1 && is_answer(json_array_get(msgs, k), s->last_answer);
    for (size_t i = 0; go && i < k; i++)
        go = json_equal(json_array_get(msgs, i), json_array_get(s->last_messages, i));
    for (size_t i = k + 1; go && i < all; i++) {
        /* new turns of others only: what the model writes is never rendered again */
        const char *role = json_string_value(json_object_get(json_array_get(msgs, i), "role"));
        go = role && (strcmp(role, "user") == 0 || strcmp(role, "tool") == 0);
    }
    json_decref(msgs);
    if (!go)
        return 0;
    /* the template's ids for the new turns: what the whole conversation
     * renders after the previous one's, past the answer's end-of-turn */
    char *before = json_dumps(s->last_messages, JSON_COMPACT);
    int32_t *a = NULL, *b = NULL, *suffix = NULL;
    size_t na = 0, nb = 0, ns = 0;
    int rc = before ? 0 : tern_serve_fail(e, 500, "server_error", NULL, NULL, "out of memory");
    if (rc == 0)
        rc = tern_serve_render_chat(m, before, r->plain_messages, r->tools, &a, &na, e);
    if (rc == 0)
        rc = tern_serve_render_chat(m, r->messages, r->plain_messages, r->tools, &b, &nb, e);
    int out = -1;
    if (rc == 0) {
        int src = tern_chat_suffix(a, na, b, nb, eos, "tern serve", "the new turns", &suffix,
                                   &ns);
        if (src == TERN_EUNSUPPORTED)
            out = 0; /* not prefix-stable here: rendered whole */
        else if (src != TERN_OK)
            tern_serve_fail(e, 500, "server_error", NULL, NULL, "out of memory");
    }
    free(before), free(a), free(b);
    if (rc != 0 || !suffix)
        return out;
    /* the previous call's ids, its answer closed when the model did not
     * close it (cut at max_tokens, or at a stop string), then the new turns */
    const tern_serve_call *last = &s->calls[s->n_calls - 1];
    int close = last->len == 0 || last->ids[last->len - 1] != eos;
    size_t total = last->prompt_len + last->len + (size_t)close + ns;
    int32_t *p = malloc((total ? total : 1) * sizeof *p);
    if (!p) {
        free(suffix);
        return tern_serve_fail(e, 500, "server_error", NULL, NULL, "out of memory");
    }
    memcpy(p, last->prompt, last->prompt_len * sizeof *p);
    memcpy(p + last->prompt_len, last->ids, last->len * sizeof *p);
    if (close)
        p[last->prompt_len + last->len] = eos;
    memcpy(p + last->prompt_len + last->len + close, suffix, ns * sizeof *p);
    free(suffix);
    *ids = p, *n = total;
    return 1;
}

/* The answer as is_answer compares it: content, and the valid calls. */
static json_t *answer_of(const tern_serve_choice *c)
{
    json_t *calls = json_array();
    json_t *a = calls ? json_pack("{s:s, s:o}", "content", c->content ? c->content : "",
                                  "calls", calls)
                      : NULL;
    for (size_t i = 0; a && i < c->n_calls; i++) {
        if (c->calls[i].error)
            continue;
        json_t *args = json_loads(c->calls[i].arguments, 0, NULL);
        json_t *one = args ? json_pack("[s, o]", c->calls[i].name, args) : NULL;
        if (!one || json_array_append_new(calls, one) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

int tern_serve_session_record(tern_serve_session *s, const tern_serve_request *r,
                              const int32_t *prompt, size_t n, const tern_serve_choice *c)
{
    if (tern_serve_session_closed(s))
        return 0; /* its program ended meanwhile: it never saw this answer */
    if (s->n_calls == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 8;
        tern_serve_call *p = realloc(s->calls, cap * sizeof *p);
        if (!p)
            return -1;
        s->calls = p, s->cap = cap;
    }
    tern_serve_call call = {.prompt_len = n, .len = c->len, .finish = c->finish};
    call.prompt = malloc((n ? n : 1) * sizeof *call.prompt);
    call.ids = malloc((c->len ? c->len : 1) * sizeof *call.ids);
    call.logprobs = malloc((c->len ? c->len : 1) * sizeof *call.logprobs);
    call.text = strdup(c->content ? c->content : "");
    json_t *answer = r->kind == TERN_SERVE_CHAT ? answer_of(c) : NULL;
    json_t *msgs = r->kind == TERN_SERVE_CHAT ? json_loads(r->messages, 0, NULL) : NULL;
    char *tools = r->tools ? strdup(r->tools) : NULL;
    if (!call.prompt || !call.ids || !call.logprobs || !call.text ||
        (r->kind == TERN_SERVE_CHAT && (!answer || !msgs)) || (r->tools && !tools)) {
        tern_serve_call_free(&call);
        json_decref(answer), json_decref(msgs), free(tools);
        return -1;
    }
    memcpy(call.prompt, prompt, n * sizeof *call.prompt);
    memcpy(call.ids, c->ids, c->len * sizeof *call.ids);
    memcpy(call.logprobs, c->logprobs, c->len * sizeof *call.logprobs);
    if (s->n_calls > 0) {
        const tern_serve_call *last = &s->calls[s->n_calls - 1];
        size_t had = last->prompt_len + last->len;
        call.extends = n >= had && memcmp(prompt, last->prompt, last->prompt_len * sizeof *prompt) == 0 &&
                       memcmp(prompt + last->prompt_len, last->ids, last->len * sizeof *prompt) == 0;
    }
    s->calls[s->n_calls++] = call;
    json_decref(s->last_messages), json_decref(s->last_answer), free(s->last_tools);
    s->last_messages = msgs, s->last_answer = answer, s->last_tools = tools;
    return 0;
}
