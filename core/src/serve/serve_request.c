/* serve_request.c: an OpenAI request body, read and checked (serve_request.h). */
#include "serve/serve_request.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tern/model.h" /* TERN_TOP_LOGPROBS_MAX */

#define INVALID "invalid_request_error"

tern_serve_limits tern_serve_default_limits(void)
{
    return (tern_serve_limits){.body_bytes = TERN_SERVE_MAX_BODY_BYTES,
                               .messages = TERN_SERVE_MAX_MESSAGES,
                               .n = TERN_SERVE_MAX_N,
                               .max_tokens = TERN_SERVE_MAX_TOKENS,
                               .prompts = TERN_SERVE_MAX_PROMPTS,
                               .tools = TERN_SERVE_MAX_TOOLS};
}

int tern_serve_fail(tern_serve_error *e, int status, const char *type, const char *param,
                    const char *code, const char *fmt, ...)
{
    e->status = status;
    snprintf(e->type, sizeof e->type, "%s", type);
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    snprintf(e->code, sizeof e->code, "%s", code ? code : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return -1;
}

static int oom(tern_serve_error *e)
{
    return tern_serve_fail(e, 500, "server_error", NULL, NULL, "the server is out of memory");
}

/* The fields of each endpoint: read, or refused unless at their default. */
static const char *const CHAT_FIELDS[] = {
    "model", "messages", "tools", "tool_choice", "temperature", "top_p", "top_k", "max_tokens",
    "max_completion_tokens", "n", "stop", "seed", "logprobs", "top_logprobs", "stream",
    "stream_options", "user", "parallel_tool_calls", "frequency_penalty", "presence_penalty",
    "logit_bias", "response_format", "metadata", "store", NULL};
static const char *const COMPLETION_FIELDS[] = {
    "model", "prompt", "max_tokens", "temperature", "top_p", "top_k", "n", "stop", "seed",
    "logprobs", "echo", "stream", "stream_options", "user", "best_of", "frequency_penalty",
    "presence_penalty", "logit_bias", "suffix", NULL};

static int known(const char *const *fields, const char *key)
{
    for (size_t i = 0; fields[i]; i++)
        if (strcmp(fields[i], key) == 0)
            return 1;
    return 0;
}

/* v, or NULL when absent or JSON null (OpenAI's clients send null for "not given") */
static json_t *field(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_null(v) ? NULL : v;
}

static int number_in(json_t *o, const char *key, double lo, double hi, int lo_open, double *out,
                     tern_serve_error *e)
{
    json_t *v = field(o, key);
    if (!v)
        return 0;
    if (!json_is_number(v))
        return tern_serve_fail(e, 400, INVALID, key, NULL, "%s must be a number", key);
    double x = json_number_value(v);
    if (!isfinite(x) || x > hi || (lo_open ? x <= lo : x < lo))
        return tern_serve_fail(e, 400, INVALID, key, NULL, "%s must be in %s%g, %g], got %g", key,
                               lo_open ? "(" : "[", lo, hi, x);
    *out = x;
    return 0;
}

static int integer_in(json_t *o, const char *key, json_int_t lo, json_int_t hi, json_int_t *out,
                      tern_serve_error *e)
{
    json_t *v = field(o, key);
    if (!v)
        return 0;
    if (!json_is_integer(v))
        return tern_serve_fail(e, 400, INVALID, key, NULL, "%s must be an integer", key);
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi)
        return tern_serve_fail(e, 400, INVALID, key, NULL,
                               "%s must be from %lld to %lld, got %lld", key, (long long)lo,
                               (long long)hi, (long long)x);
    *out = x;
    return 0;
}

static int boolean(json_t *o, const char *key, int *out, tern_serve_error *e)
{
    json_t *v = field(o, key);
    if (!v)
        return 0;
    if (!json_is_boolean(v))
        return tern_serve_fail(e, 400, INVALID, key, NULL, "%s must be true or false", key);
    *out = json_is_true(v);
    return 0;
}

/* A field tern does not do, accepted only at the value that asks for nothing:
 * a penalty of 0, an empty logit_bias, echo false, best_of 1, an empty suffix. */
static int only_default(json_t *o, const char *key, tern_serve_error *e)
{
    json_t *v = field(o, key);
    if (!v)
        return 0;
    int is_default;
    if (strcmp(key, "logit_bias") == 0)
        is_default = json_is_object(v) && json_object_size(v) == 0;
    else if (strcmp(key, "echo") == 0)
        is_default = json_is_false(v);
    else if (strcmp(key, "best_of") == 0)
        is_default = json_is_integer(v) && json_integer_value(v) == 1;
    else if (strcmp(key, "suffix") == 0)
        is_default = json_is_string(v) && json_string_length(v) == 0;
    else
        is_default = json_is_number(v) && json_number_value(v) == 0;
    if (is_default)
        return 0;
    return tern_serve_fail(e, 400, INVALID, key, "unsupported_parameter",
                           "tern serve does not support %s: leave it out", key);
}

static int read_stop(json_t *o, tern_serve_request *r, tern_serve_error *e)
{
    json_t *v = field(o, "stop");
    if (!v)
        return 0;
    json_t *one = json_is_string(v) ? v : NULL;
    size_t n = one ? 1 : json_is_array(v) ? json_array_size(v) : (size_t)-1;
    if (n == (size_t)-1)
        return tern_serve_fail(e, 400, INVALID, "stop", NULL,
                               "stop must be a string or an array of strings");
    if (n > TERN_SERVE_MAX_STOP)
        return tern_serve_fail(e, 400, INVALID, "stop", NULL,
                               "stop holds %zu strings; at most %d", n, TERN_SERVE_MAX_STOP);
    for (size_t i = 0; i < n; i++) {
        json_t *s = one ? one : json_array_get(v, i);
        if (!json_is_string(s) || json_string_length(s) == 0 ||
            json_string_length(s) > TERN_SERVE_MAX_STOP_BYTES ||
            strlen(json_string_value(s)) != json_string_length(s))
            return tern_serve_fail(e, 400, INVALID, "stop", NULL,
                                   "stop strings must be 1 to %d bytes of text",
                                   TERN_SERVE_MAX_STOP_BYTES);
        if (!(r->stop[r->n_stop] = strdup(json_string_value(s))))
            return oom(e);
        r->n_stop++;
    }
    return 0;
}

/* The fields both endpoints share. */
static int read_sampling(json_t *o, const tern_serve_limits *lim, tern_serve_request *r,
                         tern_serve_error *e)
{
    double x;
    json_int_t k;
    json_t *model = field(o, "model");
    if (model && !json_is_string(model))
        return tern_serve_fail(e, 400, INVALID, "model", NULL, "model must be a string");
    if (model && !(r->model = strdup(json_string_value(model))))
        return oom(e);
    r->temperature = 1, r->top_p = 1, r->n = 1;
    if ((x = 1, number_in(o, "temperature", 0, 2, 0, &x, e)) != 0)
        return -1;
    r->temperature = (float)x;
    if ((x = 1, number_in(o, "top_p", 0, 1, 1, &x, e)) != 0)
        return -1;
    r->top_p = (float)x;
    if ((k = 0, integer_in(o, "top_k", 0, 1 << 20, &k, e)) != 0)
        return -1;
    r->top_k = (int32_t)k;
    if ((k = 1, integer_in(o, "n", 1, lim->n, &k, e)) != 0)
        return -1;
    r->n = (uint32_t)k;
    const char *mt = r->kind == TERN_SERVE_CHAT && field(o, "max_completion_tokens")
                         ? "max_completion_tokens" : "max_tokens";
    if ((k = 0, integer_in(o, mt, 1, lim->max_tokens, &k, e)) != 0)
        return -1;
    r->max_tokens = (uint32_t)k;
    json_t *seed = field(o, "seed");
    if (seed && !json_is_integer(seed))
        return tern_serve_fail(e, 400, INVALID, "seed", NULL, "seed must be an integer");
    if (seed)
        r->has_seed = 1, r->seed = (uint64_t)json_integer_value(seed);
    if (boolean(o, "stream", &r->stream, e) != 0)
        return -1;
    json_t *so = field(o, "stream_options");
    if (so) {
        json_t *iu = json_object_get(so, "include_usage");
        if (!json_is_object(so) || (iu && !json_is_boolean(iu) && !json_is_null(iu)))
            return tern_serve_fail(e, 400, INVALID, "stream_options", NULL,
                                   "stream_options must be {\"include_usage\": true or false}");
        if (!r->stream)
            return tern_serve_fail(e, 400, INVALID, "stream_options", NULL,
                                   "stream_options is only allowed with stream: true");
        r->include_usage = json_is_true(iu);
    }
    json_t *user = field(o, "user");
    if (user && !json_is_string(user))
        return tern_serve_fail(e, 400, INVALID, "user", NULL, "user must be a string");
    if (only_default(o, "frequency_penalty", e) || only_default(o, "presence_penalty", e) ||
        only_default(o, "logit_bias", e))
        return -1;
    return read_stop(o, r, e);
}

/* ---- chat ------------------------------------------------------------------ */

/* A message's content as one text: a string, or text parts joined. NULL
 * content is "" (an assistant that only calls tools). */
static int content_text(json_t *c, size_t i, json_t **out, tern_serve_error *e)
{
    char param[48];
    snprintf(param, sizeof param, "messages[%zu].content", i);
    if (!c || json_is_null(c)) {
        *out = json_string("");
        return *out ? 0 : oom(e);
    }
    if (json_is_string(c)) {
        *out = json_incref(c);
        return 0;
    }
    if (!json_is_array(c))
        return tern_serve_fail(e, 400, INVALID, param, NULL,
                               "%s must be a string or an array of text parts", param);
    size_t total = 0, k;
    json_t *part;
    json_array_foreach(c, k, part) {
        json_t *type = json_object_get(part, "type"), *text = json_object_get(part, "text");
        if (!json_is_object(part) || !json_is_string(type))
            return tern_serve_fail(e, 400, INVALID, param, NULL,
                                   "%s[%zu] must be an object with a type", param, k);
        if (strcmp(json_string_value(type), "text") != 0)
            return tern_serve_fail(e, 400, INVALID, param, "unsupported_content",
                                   "%s[%zu] is of type '%s'; tern serve takes text parts only",
                                   param, k, json_string_value(type));
        if (!json_is_string(text))
            return tern_serve_fail(e, 400, INVALID, param, NULL,
                                   "%s[%zu].text must be a string", param, k);
        total += json_string_length(text);
    }
    char *joined = malloc(total + 1);
    if (!joined)
        return oom(e);
    size_t at = 0;
    json_array_foreach(c, k, part) {
        json_t *text = json_object_get(part, "text");
        memcpy(joined + at, json_string_value(text), json_string_length(text));
        at += json_string_length(text);
    }
    *out = json_stringn_nocheck(joined, at);
    free(joined);
    return *out ? 0 : oom(e);
}

/* An assistant's tool_calls as the templates take them: {"id", "type":
 * "function", "function": {"name", "arguments": OBJECT}} (OpenAI sends the
 * arguments as a string of JSON). */
static int tool_calls_in(json_t *calls, size_t i, json_t *msg, tern_serve_error *e)
{
    char param[48];
    snprintf(param, sizeof param, "messages[%zu].tool_calls", i);
    if (!json_is_array(calls))
        return tern_serve_fail(e, 400, INVALID, param, NULL, "%s must be an array", param);
    json_t *out = json_array();
    if (!out || json_object_set_new(msg, "tool_calls", out) != 0)
        return oom(e);
    size_t k;
    json_t *c;
    json_array_foreach(calls, k, c) {
        json_t *fn = json_object_get(c, "function");
        json_t *name = json_object_get(fn, "name"), *args = json_object_get(fn, "arguments");
        json_t *id = json_object_get(c, "id");
        if (!json_is_object(c) || !json_is_object(fn) || !json_is_string(name) ||
            (args && !json_is_string(args) && !json_is_object(args)) ||
            (id && !json_is_string(id)))
            return tern_serve_fail(e, 400, INVALID, param, NULL,
                                   "%s[%zu] must be {\"id\": ..., \"type\": \"function\", "
                                   "\"function\": {\"name\": ..., \"arguments\": \"{...}\"}}",
                                   param, k);
        json_t *a = NULL;
        if (json_is_string(args)) {
            a = json_loads(json_string_value(args), JSON_DECODE_ANY, NULL);
            if (!json_is_object(a)) {
                json_decref(a);
                a = json_incref(args); /* as written: the template shows it */
            }
        } else {
            a = args ? json_incref(args) : json_object();
        }
        json_t *f = json_pack("{s:O, s:o}", "name", name, "arguments", a);
        json_t *one = f ? json_pack("{s:s, s:o}", "type", "function", "function", f) : NULL;
        if (!one || (id && json_object_set(one, "id", id) != 0) ||
            json_array_append_new(out, one) != 0)
            return oom(e);
    }
    return 0;
}

static int read_messages(json_t *o, const tern_serve_limits *lim, tern_serve_request *r,
                         tern_serve_error *e)
{
    json_t *msgs = field(o, "messages");
    if (!json_is_array(msgs) || json_array_size(msgs) == 0)
        return tern_serve_fail(e, 400, INVALID, "messages", NULL,
                               "messages must be a non-empty array of message objects");
    if (json_array_size(msgs) > lim->messages)
        return tern_serve_fail(e, 400, INVALID, "messages", NULL,
                               "messages holds %zu messages; this server takes at most %u",
                               json_array_size(msgs), lim->messages);
    json_t *out = json_array();
    if (!out)
        return oom(e);
    r->plain_messages = 1;
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m) {
        json_t *role = json_object_get(m, "role");
        if (!json_is_object(m) || !json_is_string(role)) {
            json_decref(out);
            return tern_serve_fail(e, 400, INVALID, "messages", NULL,
                                   "messages[%zu] must be an object with a role", i);
        }
        const char *rs = json_string_value(role);
        if (strcmp(rs, "developer") == 0)
            rs = "system"; /* OpenAI's newer name for the system turn */
        if (strcmp(rs, "system") && strcmp(rs, "user") && strcmp(rs, "assistant") &&
            strcmp(rs, "tool")) {
            json_decref(out);
            return tern_serve_fail(e, 400, INVALID, "messages", NULL,
                                   "messages[%zu].role is '%s'; roles are system, developer, "
                                   "user, assistant and tool", i, json_string_value(role));
        }
        json_t *text = NULL;
        if (content_text(json_object_get(m, "content"), i, &text, e) != 0) {
            json_decref(out);
            return -1;
        }
        json_t *msg = json_pack("{s:s, s:o}", "role", rs, "content", text);
        if (!msg || json_array_append_new(out, msg) != 0) {
            json_decref(out);
            return oom(e);
        }
        json_t *calls = field(m, "tool_calls");
        if (calls && strcmp(rs, "assistant") == 0) {
            if (tool_calls_in(calls, i, msg, e) != 0) {
                json_decref(out);
                return -1;
            }
            r->plain_messages = 0;
        }
        if (strcmp(rs, "tool") == 0) {
            r->plain_messages = 0;
            /* the templates name a result by its function: the call it answers */
            json_t *id = json_object_get(m, "tool_call_id");
            const char *name = NULL;
            for (size_t j = i; json_is_string(id) && !name && j-- > 0;) {
                json_t *prev = json_object_get(json_array_get(out, j), "tool_calls");
                size_t k;
                json_t *c;
                json_array_foreach(prev, k, c) {
                    json_t *cid = json_object_get(c, "id");
                    if (json_is_string(cid) && json_equal(cid, id))
                        name = json_string_value(json_object_get(json_object_get(c, "function"),
                                                                 "name"));
                }
            }
            if ((name && json_object_set_new(msg, "name", json_string(name)) != 0) ||
                (json_is_string(id) && json_object_set(msg, "tool_call_id", id) != 0)) {
                json_decref(out);
                return oom(e);
            }
        }
    }
    r->n_messages = json_array_size(out);
    r->messages = json_dumps(out, JSON_COMPACT);
    json_decref(out);
    return r->messages ? 0 : oom(e);
}

static int read_tools(json_t *o, const tern_serve_limits *lim, tern_serve_request *r,
                      tern_serve_error *e)
{
    json_t *tools = field(o, "tools"), *choice = field(o, "tool_choice");
    int none = 0;
    const char *named = NULL;
    if (choice) {
        const char *c = json_is_string(choice) ? json_string_value(choice) : NULL;
        json_t *type = json_object_get(choice, "type");
        json_t *name = json_object_get(json_object_get(choice, "function"), "name");
        if (c && strcmp(c, "none") == 0)
            none = 1;
        else if (c && strcmp(c, "required") == 0)
            r->call_required = 1;
        else if (json_is_object(choice) && json_is_string(type) &&
                 strcmp(json_string_value(type), "function") == 0 && json_is_string(name))
            r->call_required = 1, named = json_string_value(name);
        else if (!c || strcmp(c, "auto") != 0)
            return tern_serve_fail(e, 400, INVALID, "tool_choice", NULL,
                                   "tool_choice must be \"auto\", \"none\", \"required\" or "
                                   "{\"type\": \"function\", \"function\": {\"name\": ...}}");
        if (!tools)
            return tern_serve_fail(e, 400, INVALID, "tool_choice", NULL,
                                   "tool_choice is only allowed with tools");
    }
    if (!tools)
        return 0;
    if (!json_is_array(tools) || json_array_size(tools) == 0)
        return tern_serve_fail(e, 400, INVALID, "tools", NULL,
                               "tools must be a non-empty array of function objects");
    if (json_array_size(tools) > lim->tools)
        return tern_serve_fail(e, 400, INVALID, "tools", NULL,
                               "tools holds %zu functions; this server takes at most %u",
                               json_array_size(tools), lim->tools);
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        json_t *type = json_object_get(t, "type"), *fn = json_object_get(t, "function");
        json_t *name = json_object_get(fn, "name"), *params = json_object_get(fn, "parameters");
        if (!json_is_object(t) || !json_is_string(type) ||
            strcmp(json_string_value(type), "function") != 0 || !json_is_object(fn) ||
            !json_is_string(name) || json_string_length(name) == 0 ||
            (params && !json_is_object(params)))
            return tern_serve_fail(e, 400, INVALID, "tools", NULL,
                                   "tools[%zu] must be {\"type\": \"function\", \"function\": "
                                   "{\"name\": ..., \"description\": ..., \"parameters\": {...}}}",
                                   i);
    }
    if (none)
        return 0; /* the model is not told of them, and nothing is read as a call */
    if (named) {
        int known = 0;
        json_array_foreach(tools, i, t)
            known |= strcmp(json_string_value(json_object_get(json_object_get(t, "function"),
                                                              "name")), named) == 0;
        if (!known)
            return tern_serve_fail(e, 400, INVALID, "tool_choice", NULL,
                                   "tool_choice names the function \"%.64s\", which tools does "
                                   "not hold: name one of tools", named);
        if (!(r->call_name = strdup(named)))
            return oom(e);
    }
    r->tools = json_dumps(tools, JSON_COMPACT);
    r->plain_messages = 0;
    return r->tools ? 0 : oom(e);
}

static int read_chat(json_t *o, const tern_serve_limits *lim, tern_serve_request *r,
                     tern_serve_error *e)
{
    if (read_messages(o, lim, r, e) != 0 || read_tools(o, lim, r, e) != 0)
        return -1;
    if (boolean(o, "logprobs", &r->logprobs, e) != 0)
        return -1;
    json_int_t top = 0;
    if (integer_in(o, "top_logprobs", 0, TERN_TOP_LOGPROBS_MAX, &top, e) != 0)
        return -1;
    if (top > 0 && !r->logprobs)
        return tern_serve_fail(e, 400, INVALID, "top_logprobs", NULL,
                               "top_logprobs needs logprobs: set logprobs to true, or leave "
                               "top_logprobs out");
    r->top_logprobs = (uint32_t)top;
    json_t *pt = field(o, "parallel_tool_calls");
    if (pt && !json_is_boolean(pt))
        return tern_serve_fail(e, 400, INVALID, "parallel_tool_calls", NULL,
                               "parallel_tool_calls must be true or false");
    json_t *rf = field(o, "response_format");
    json_t *rft = json_object_get(rf, "type");
    if (rf && !(json_is_string(rft) && strcmp(json_string_value(rft), "text") == 0))
        return tern_serve_fail(e, 400, INVALID, "response_format", "unsupported_parameter",
                               "tern serve writes text only: response_format must be "
                               "{\"type\": \"text\"} or left out");
    json_t *st = field(o, "store");
    if (st && !json_is_false(st))
        return tern_serve_fail(e, 400, INVALID, "store", "unsupported_parameter",
                               "tern serve stores nothing: leave store out or false");
    return 0;
}

/* ---- completions ----------------------------------------------------------- */

static int token_ids(json_t *a, size_t i, tern_serve_prompt *p, tern_serve_error *e)
{
    size_t n = json_array_size(a), k;
    json_t *t;
    if (n == 0)
        return tern_serve_fail(e, 400, INVALID, "prompt", NULL, "prompt %zu has no tokens", i);
    if (!(p->ids = malloc(n * sizeof *p->ids)))
        return oom(e);
    json_array_foreach(a, k, t) {
        if (!json_is_integer(t) || json_integer_value(t) < 0 ||
            json_integer_value(t) > INT32_MAX)
            return tern_serve_fail(e, 400, INVALID, "prompt", NULL,
                                   "prompt %zu: token ids must be integers >= 0", i);
        p->ids[k] = (int32_t)json_integer_value(t);
    }
    p->n_ids = n;
    return 0;
}

static int read_prompts(json_t *o, const tern_serve_limits *lim, tern_serve_request *r,
                        tern_serve_error *e)
{
    json_t *p = field(o, "prompt");
    const char *shape = "prompt must be a string, an array of strings, an array of token ids "
                        "or an array of arrays of token ids";
    if (!p)
        return tern_serve_fail(e, 400, INVALID, "prompt", NULL, "prompt is required");
    size_t n = json_is_string(p) ? 1
               : !json_is_array(p) ? 0
               : json_is_integer(json_array_get(p, 0)) ? 1 : json_array_size(p);
    if (n == 0)
        return tern_serve_fail(e, 400, INVALID, "prompt", NULL, "%s", shape);
    if (n > lim->prompts)
        return tern_serve_fail(e, 400, INVALID, "prompt", NULL,
                               "prompt holds %zu prompts; this server takes at most %u", n,
                               lim->prompts);
    if (!(r->prompts = calloc(n, sizeof *r->prompts)))
        return oom(e);
    r->n_prompts = n;
    for (size_t i = 0; i < n; i++) {
        json_t *one = json_is_string(p) || json_is_integer(json_array_get(p, 0))
                          ? p : json_array_get(p, i);
        tern_serve_prompt *q = &r->prompts[i];
        if (json_is_string(one)) {
            if (strlen(json_string_value(one)) != json_string_length(one))
                return tern_serve_fail(e, 400, INVALID, "prompt", NULL,
                                       "prompt %zu holds a NUL character", i);
            if (!(q->text = strdup(json_string_value(one))))
                return oom(e);
        } else if (json_is_array(one)) {
            if (token_ids(one, i, q, e) != 0)
                return -1;
        } else {
            return tern_serve_fail(e, 400, INVALID, "prompt", NULL, "%s", shape);
        }
    }
    return 0;
}

static int read_completion(json_t *o, const tern_serve_limits *lim, tern_serve_request *r,
                           tern_serve_error *e)
{
    if (read_prompts(o, lim, r, e) != 0)
        return -1;
    if (!r->max_tokens)
        r->max_tokens = 16 < lim->max_tokens ? 16 : lim->max_tokens; /* OpenAI's default */
    json_t *lp = field(o, "logprobs");
    if (lp && !(json_is_integer(lp) && json_integer_value(lp) >= 0 &&
                json_integer_value(lp) <= 5))
        return tern_serve_fail(e, 400, INVALID, "logprobs", NULL,
                               "logprobs must be an integer from 0 to 5");
    r->logprobs = lp != NULL;
    r->top_logprobs = lp ? (uint32_t)json_integer_value(lp) : 0;
    if (only_default(o, "echo", e) || only_default(o, "best_of", e) ||
        only_default(o, "suffix", e))
        return -1;
    return 0;
}

int tern_serve_parse(tern_serve_kind kind, const char *body, size_t len,
                     const tern_serve_limits *lim, tern_serve_request *out, tern_serve_error *err)
{
    memset(out, 0, sizeof *out);
    memset(err, 0, sizeof *err);
    out->kind = kind;
    if (len > lim->body_bytes)
        return tern_serve_fail(err, 413, INVALID, NULL, NULL,
                               "the request body is %zu bytes; this server takes at most %zu",
                               len, lim->body_bytes);
    json_error_t je;
    json_t *o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!o)
        return tern_serve_fail(err, 400, INVALID, NULL, NULL,
                               "the body is not valid JSON: %s (line %d, column %d)", je.text,
                               je.line, je.column);
    int rc = 0;
    if (!json_is_object(o)) {
        rc = tern_serve_fail(err, 400, INVALID, NULL, NULL, "the body must be a JSON object");
    } else {
        const char *const *fields = kind == TERN_SERVE_CHAT ? CHAT_FIELDS : COMPLETION_FIELDS;
        const char *key;
        json_t *v;
        json_object_foreach(o, key, v) {
            if (!known(fields, key)) {
                rc = tern_serve_fail(err, 400, INVALID, key, "unrecognized_argument",
                                     "Unrecognized request argument supplied: %s", key);
                break;
            }
        }
    }
    if (rc == 0)
        rc = read_sampling(o, lim, out, err);
    if (rc == 0)
        rc = kind == TERN_SERVE_CHAT ? read_chat(o, lim, out, err)
                                     : read_completion(o, lim, out, err);
    json_decref(o);
    if (rc != 0)
        tern_serve_request_free(out);
    return rc;
}

void tern_serve_request_free(tern_serve_request *r)
{
    if (!r)
        return;
    free(r->model), free(r->messages), free(r->tools), free(r->call_name);
    for (size_t i = 0; i < r->n_prompts; i++)
        free(r->prompts[i].text), free(r->prompts[i].ids);
    free(r->prompts);
    for (size_t i = 0; i < r->n_stop; i++)
        free(r->stop[i]);
    tern_serve_kind kind = r->kind;
    memset(r, 0, sizeof *r);
    r->kind = kind;
}
