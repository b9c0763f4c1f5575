/* serve_reply.c: the JSON `tern serve` answers with (serve_reply.h). */
#include "serve/serve_reply.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"

const char *tern_serve_finish_reason(const tern_serve_choice *c)
{
    for (size_t i = 0; i < c->n_calls; i++)
        if (!c->calls[i].error)
            return "tool_calls";
    return c->finish == TERN_FINISH_LENGTH && !c->stop_string ? "length" : "stop";
}

/* The tokens a choice's answer is made of: all but a final stop token. */
static size_t answer_tokens(const tern_serve_choice *c)
{
    return c->finish == TERN_FINISH_STOP && c->len > 0 ? c->len - 1 : c->len;
}

static json_t *real(float x)
{
    return json_real(isfinite(x) ? (double)x : -9999.0);
}

/* One token's text as a JSON string, and its bytes: text that is not whole
 * UTF-8 (a byte token of a longer character) is written "bytes:\xNN...", as
 * OpenAI writes it. */
static int token_json(const tern_model *m, int32_t id, json_t **text, json_t **bytes)
{
    char *s = NULL;
    size_t n = 0;
    *text = *bytes = NULL;
    if (tern_model_text(m, "tern serve: the log-probs' token texts", &id, 1, &s, &n) != TERN_OK)
        return -1;
    *text = json_stringn(s, n);
    if (!*text) {
        char *esc = malloc(6 + 4 * n + 1);
        if (esc) {
            size_t at = (size_t)sprintf(esc, "bytes:");
            for (size_t i = 0; i < n; i++)
                at += (size_t)sprintf(esc + at, "\\x%02x", (unsigned char)s[i]);
            *text = json_string(esc);
            free(esc);
        }
    }
    if (bytes && (*bytes = json_array()))
        for (size_t i = 0; i < n; i++)
            json_array_append_new(*bytes, json_integer((unsigned char)s[i]));
    free(s);
    return *text && *bytes ? 0 : -1;
}

/* Token t's k alternatives, as chat writes them ([{"token", "logprob",
 * "bytes"}]), or as completions do ({"token": logprob}). NULL when out of
 * memory. */
static json_t *alternatives_json(const tern_model *m, const tern_serve_choice *c, size_t t,
                                 uint32_t k, int chat)
{
    json_t *all = chat ? json_array() : json_object();
    for (uint32_t i = 0; all && i < k && t < c->n_top; i++) {
        const int32_t id = c->top_ids[t * k + i];
        if (id < 0)
            break;
        json_t *text, *bytes;
        int ok = token_json(m, id, &text, &bytes) == 0;
        if (!ok) {
            json_decref(text), json_decref(bytes);
        } else if (chat) { /* json_pack and append take text and bytes, failing or not */
            ok = json_array_append_new(all, json_pack("{s:o, s:o, s:o}", "token", text, "logprob",
                                                      real(c->top_lps[t * k + i]), "bytes",
                                                      bytes)) == 0;
        } else { /* a later token of the same text keeps the first's (more likely) */
            ok = json_object_get(all, json_string_value(text)) != NULL ||
                 json_object_set_new(all, json_string_value(text),
                                     real(c->top_lps[t * k + i])) == 0;
            json_decref(text), json_decref(bytes);
        }
        if (!ok) {
            json_decref(all);
            return NULL;
        }
    }
    return all;
}

/* Chat: {"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}]} over tokens [t0, t1). */
static json_t *chat_logprobs(const tern_model *m, const tern_serve_job *j,
                             const tern_serve_choice *c, size_t t0, size_t t1)
{
    json_t *list = json_array();
    for (size_t t = t0; list && t < t1; t++) {
        json_t *text, *bytes;
        if (token_json(m, c->ids[t], &text, &bytes) != 0) {
            json_decref(text), json_decref(bytes), json_decref(list);
            return NULL;
        }
        json_t *alt = alternatives_json(m, c, t, j->req.top_logprobs, 1);
        if (!alt) {
            json_decref(text), json_decref(bytes), json_decref(list);
            return NULL;
        }
        json_t *e = json_pack("{s:o, s:o, s:o, s:o}", "token", text, "logprob",
                              real(c->logprobs[t]), "bytes", bytes, "top_logprobs", alt);
        if (!e || json_array_append_new(list, e) != 0) {
            json_decref(list);
            return NULL;
        }
    }
    return list ? json_pack("{s:o, s:n}", "content", list, "refusal") : NULL;
}

/* Completions: {"tokens", "token_logprobs", "top_logprobs", "text_offset"};
 * top_logprobs null with logprobs 0, else a {"token": logprob} per token. */
static json_t *completion_logprobs(const tern_model *m, const tern_serve_job *j,
                                   const tern_serve_choice *c, size_t t0, size_t t1,
                                   size_t offset0)
{
    const uint32_t k = j->req.top_logprobs;
    json_t *toks = json_array(), *lps = json_array(), *offs = json_array();
    json_t *tops = k > 0 ? json_array() : json_null();
    size_t off = offset0;
    int ok = toks && lps && offs && tops;
    for (size_t t = t0; ok && k > 0 && t < t1; t++) {
        json_t *alt = alternatives_json(m, c, t, k, 0);
        ok = alt && json_array_append_new(tops, alt) == 0;
    }
    for (size_t t = t0; ok && t < t1; t++) {
        json_t *text, *bytes;
        ok = token_json(m, c->ids[t], &text, &bytes) == 0;
        if (ok) {
            json_array_append_new(offs, json_integer((json_int_t)off));
            off += json_array_size(bytes);
            json_array_append_new(toks, text);
            json_array_append_new(lps, real(c->logprobs[t]));
            json_decref(bytes);
        } else {
            json_decref(text), json_decref(bytes);
        }
    }
    if (!ok) {
        json_decref(toks), json_decref(lps), json_decref(offs), json_decref(tops);
        return NULL;
    }
    return json_pack("{s:o, s:o, s:o, s:o}", "tokens", toks, "token_logprobs", lps,
                     "top_logprobs", tops, "text_offset", offs);
}

static json_t *tool_calls_json(const tern_serve_job *j, size_t k, const tern_serve_choice *c,
                               int with_index)
{
    json_t *list = json_array();
    size_t n = 0;
    for (size_t i = 0; list && i < c->n_calls; i++) {
        if (c->calls[i].error)
            continue;
        char id[64];
        snprintf(id, sizeof id, "call_%s_%zu_%zu", j->id + (j->id[0] == 'c' && j->id[1] == 'h'
                                                            ? 9 : 5), k, n);
        json_t *call = json_pack("{s:s, s:s, s:{s:s, s:s}}", "id", id, "type", "function",
                                 "function", "name", c->calls[i].name, "arguments",
                                 c->calls[i].arguments);
        if (call && with_index)
            json_object_set_new(call, "index", json_integer((json_int_t)n));
        if (!call || json_array_append_new(list, call) != 0) {
            json_decref(list);
            return NULL;
        }
        n++;
    }
    return list;
}

static json_t *usage_json(const tern_serve_job *j)
{
    return json_pack("{s:I, s:I, s:I}", "prompt_tokens", (json_int_t)j->prompt_tokens,
                     "completion_tokens", (json_int_t)j->completion_tokens, "total_tokens",
                     (json_int_t)(j->prompt_tokens + j->completion_tokens));
}

static char *dump(json_t *o)
{
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return s;
}

char *tern_serve_reply_body(const tern_serve_job *j, const tern_model *m)
{
    const int chat = j->req.kind == TERN_SERVE_CHAT;
    json_t *choices = json_array();
    for (size_t k = 0; choices && k < j->n_choices; k++) {
        const tern_serve_choice *c = &j->choices[k];
        json_t *lp = json_null();
        if (j->req.logprobs)
            lp = chat ? chat_logprobs(m, j, c, 0, answer_tokens(c))
                      : completion_logprobs(m, j, c, 0, answer_tokens(c), 0);
        json_t *one;
        if (chat) {
            json_t *calls = tool_calls_json(j, k, c, 0);
            json_t *msg = json_pack("{s:s, s:o, s:n}", "role", "assistant", "content",
                                    c->content ? json_string(c->content) : json_null(),
                                    "refusal");
            if (msg && calls && json_array_size(calls) > 0)
                json_object_set(msg, "tool_calls", calls);
            json_decref(calls);
            one = json_pack("{s:I, s:o, s:o, s:s}", "index", (json_int_t)k, "message", msg,
                            "logprobs", lp, "finish_reason", tern_serve_finish_reason(c));
        } else {
            one = json_pack("{s:s, s:I, s:o, s:s}", "text", c->content ? c->content : "",
                            "index", (json_int_t)k, "logprobs", lp, "finish_reason",
                            tern_serve_finish_reason(c));
        }
        if (!one || json_array_append_new(choices, one) != 0) {
            json_decref(choices);
            choices = NULL;
        }
    }
    if (!choices)
        return NULL;
    return dump(json_pack("{s:s, s:s, s:I, s:s, s:o, s:o, s:n}", "id", j->id, "object",
                          chat ? "chat.completion" : "text_completion", "created",
                          (json_int_t)j->created, "model", j->model_name, "choices", choices,
                          "usage", usage_json(j), "system_fingerprint"));
}

static int event(tern_serve_job *j, json_t *o)
{
    char *s = dump(o);
    if (!s)
        return -1;
    int rc = tern_serve_job_write(j, "data: ", 6) || tern_serve_job_write(j, s, strlen(s)) ||
             tern_serve_job_write(j, "\n\n", 2);
    free(s);
    return rc ? -1 : 0;
}

int tern_serve_stream_chunk(tern_serve_job *j, const tern_model *m, size_t k, const char *text,
                            size_t n, size_t t0, size_t t1, int with_calls, const char *finish)
{
    const int chat = j->req.kind == TERN_SERVE_CHAT;
    tern_serve_choice *c = &j->choices[k];
    json_t *lp = json_null();
    if (j->req.logprobs && t1 > t0)
        lp = chat ? chat_logprobs(m, j, c, t0, t1)
                  : completion_logprobs(m, j, c, t0, t1, c->sent_bytes);
    json_t *piece = json_stringn(text ? text : "", n);
    json_t *one;
    if (chat) {
        json_t *delta = json_object();
        if (delta && !c->started)
            json_object_set_new(delta, "role", json_string("assistant"));
        if (delta && (n > 0 || !c->started))
            json_object_set(delta, "content", piece);
        if (delta && with_calls) {
            json_t *calls = tool_calls_json(j, k, c, 1);
            if (calls && json_array_size(calls) > 0)
                json_object_set(delta, "tool_calls", calls);
            json_decref(calls);
        }
        one = json_pack("{s:I, s:o, s:o, s:o}", "index", (json_int_t)k, "delta", delta,
                        "logprobs", lp, "finish_reason",
                        finish ? json_string(finish) : json_null());
    } else {
        one = json_pack("{s:O, s:I, s:o, s:o}", "text", piece, "index", (json_int_t)k,
                        "logprobs", lp, "finish_reason",
                        finish ? json_string(finish) : json_null());
    }
    json_decref(piece);
    c->started = 1;
    c->sent_bytes += n;
    if (!one)
        return -1;
    return event(j, json_pack("{s:s, s:s, s:I, s:s, s:[o], s:n}", "id", j->id, "object",
                              chat ? "chat.completion.chunk" : "text_completion", "created",
                              (json_int_t)j->created, "model", j->model_name, "choices", one,
                              "system_fingerprint"));
}

int tern_serve_stream_end(tern_serve_job *j)
{
    const int chat = j->req.kind == TERN_SERVE_CHAT;
    if (j->req.include_usage &&
        event(j, json_pack("{s:s, s:s, s:I, s:s, s:[], s:o}", "id", j->id, "object",
                           chat ? "chat.completion.chunk" : "text_completion", "created",
                           (json_int_t)j->created, "model", j->model_name, "choices", "usage",
                           usage_json(j))) != 0)
        return -1;
    return tern_serve_job_write(j, "data: [DONE]\n\n", 14);
}

char *tern_serve_models_body(const char *name, long long created, int one)
{
    json_t *m = json_pack("{s:s, s:s, s:I, s:s}", "id", name, "object", "model", "created",
                          (json_int_t)created, "owned_by", "tern");
    if (one)
        return dump(m);
    return dump(json_pack("{s:s, s:[o]}", "object", "list", "data", m));
}
