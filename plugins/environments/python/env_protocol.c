/* env_protocol.c: the python environment's request and answer lines (see
 * env_protocol.h). */
#include "env_protocol.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tern/support/utf8.h"

/* A malloc'd "HEAD" + "BODY" + "}\n"; NULL without memory. */
static char *line_of(const char *head, const char *body, size_t *n)
{
    size_t h = strlen(head), b = strlen(body);
    char *out = malloc(h + b + 3);
    if (!out)
        return NULL;
    memcpy(out, head, h);
    memcpy(out + h, body, b);
    memcpy(out + h + b, "}\n", 3);
    *n = h + b + 2;
    return out;
}

char *env_request_reset(uint64_t id, uint64_t seed, const char *task_json, size_t *n)
{
    /* the task as the core wrote it (compact JSON, one line), checked */
    json_t *task = json_loads(task_json, JSON_DECODE_ANY, NULL);
    if (!task)
        return NULL;
    json_decref(task);
    char head[96];
    /* by hand, not json_pack: jansson's integers are signed, seeds are not */
    snprintf(head, sizeof head, "{\"op\":\"reset\",\"id\":%" PRIu64 ",\"seed\":%" PRIu64 ",\"task\":",
             id, seed);
    return line_of(head, task_json, n);
}

char *env_request_step(uint64_t id, const char *text, size_t len, size_t *n)
{
    char *copy = malloc(len + 1);
    if (!copy)
        return NULL;
    /* a NUL byte becomes an invalid one, so U+FFFD like the others */
    for (size_t i = 0; i < len; i++)
        copy[i] = text[i] ? text[i] : (char)0xFF;
    copy[len] = '\0';
    char *clean = tern_utf8_clean(copy);
    free(copy);
    json_t *s = clean ? json_string(clean) : NULL;
    free(clean);
    char *action = s ? json_dumps(s, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    json_decref(s);
    if (!action)
        return NULL;
    char head[64];
    snprintf(head, sizeof head, "{\"op\":\"step\",\"id\":%" PRIu64 ",\"action\":", id);
    char *out = line_of(head, action, n);
    free(action);
    return out;
}

size_t env_request_close(uint64_t id, char *buf, size_t cap)
{
    int k = snprintf(buf, cap, "{\"op\":\"close\",\"id\":%" PRIu64 "}\n", id);
    return k > 0 && (size_t)k < cap ? (size_t)k : 0;
}

void env_answer_free(env_answer *a)
{
    free(a->observation);
    a->observation = NULL;
}

/* Not an answer: what, and the line's start, shown printable. */
static env_reply not_a_reply(env_answer *a, const char *what, const char *line, size_t len)
{
    char shown[48];
    size_t k = len < 32 ? len : 32, o = 0;
    for (size_t i = 0; i < k; i++)
        shown[o++] = line[i] >= 0x20 && line[i] < 0x7f ? line[i] : '?';
    if (len > k)
        memcpy(shown + o, "...", 3), o += 3;
    shown[o] = '\0';
    env_answer_free(a);
    snprintf(a->reason, sizeof a->reason, "the worker's reply is no answer (%s): '%s'", what,
             shown);
    return ENV_NOT_A_REPLY;
}

/* The user's code failed the episode: the worker said why. */
static env_reply failed(env_answer *a, uint32_t why, const char *reason)
{
    a->failure = why;
    snprintf(a->reason, sizeof a->reason, "%s", reason[0] ? reason : "(no reason given)");
    return ENV_ANSWERED;
}

env_reply env_parse_reply(const char *line, size_t len, int step, env_answer *a)
{
    memset(a, 0, sizeof *a);
    json_t *v = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL);
    if (!json_is_object(v)) {
        json_decref(v);
        return not_a_reply(a, "not a JSON object", line, len);
    }
    env_reply out = ENV_ANSWERED;
    json_t *err = json_object_get(v, "error"), *bad = json_object_get(v, "garbage");
    json_t *obs = json_object_get(v, "observation"), *rw = json_object_get(v, "reward");
    json_t *done = json_object_get(v, "done"), *why = json_object_get(v, "reason");
    if (json_is_string(err)) {
        failed(a, TERN_ENV_ERROR, json_string_value(err));
    } else if (json_is_string(bad)) {
        failed(a, TERN_ENV_GARBAGE, json_string_value(bad));
    } else if (!json_is_string(obs) && !json_is_null(obs)) {
        out = not_a_reply(a, "no \"observation\"", line, len);
    } else if (step && (!json_is_number(rw) || !json_is_boolean(done))) {
        out = not_a_reply(a, "no number \"reward\" and boolean \"done\"", line, len);
    } else if (why && !json_is_string(why)) {
        out = not_a_reply(a, "\"reason\" is not a string", line, len);
    } else if (json_is_string(obs) && json_string_length(obs) > TERN_ENV_OBSERVATION_MAX) {
        snprintf(a->reason, sizeof a->reason, "the observation is %zu bytes, over the %u tern "
                 "takes", json_string_length(obs), TERN_ENV_OBSERVATION_MAX);
        a->failure = TERN_ENV_GARBAGE;
    } else if (step && !isfinite(json_number_value(rw))) {
        failed(a, TERN_ENV_GARBAGE, "the reward is not a finite number");
    } else if (json_is_string(obs) && strlen(json_string_value(obs)) != json_string_length(obs)) {
        failed(a, TERN_ENV_GARBAGE, "the observation holds a NUL character");
    } else {
        if (json_is_string(obs) && !(a->observation = strdup(json_string_value(obs))))
            failed(a, TERN_ENV_ERROR, "out of memory reading the observation");
        a->reward = step ? json_number_value(rw) : 0.0;
        a->done = step && json_is_true(done);
        if (json_is_string(why))
            snprintf(a->reason, sizeof a->reason, "%s", json_string_value(why));
        if (a->failure == TERN_ENV_OK && step && !a->observation && !a->done)
            failed(a, TERN_ENV_GARBAGE, "the observation is null but the episode is not done");
    }
    json_decref(v);
    return out;
}

char *env_request_call(uint64_t id, const char *name, const char *arguments, size_t max,
                       size_t *n)
{
    json_t *args = json_loads(arguments, 0, NULL);
    json_t *nm = json_string(name);
    char *a = json_is_object(args) ? json_dumps(args, JSON_COMPACT) : NULL;
    char *s = nm ? json_dumps(nm, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    json_decref(args);
    json_decref(nm);
    char *out = NULL;
    if (a && s) {
        /* the id by hand, as reset's: jansson's integers are signed */
        char head[96];
        snprintf(head, sizeof head, "{\"op\":\"call\",\"id\":%" PRIu64 ",\"max\":%zu,\"name\":",
                 id, max);
        size_t h = strlen(head), ls = strlen(s), la = strlen(a);
        const char *mid = ",\"arguments\":";
        size_t lm = strlen(mid);
        if ((out = malloc(h + ls + lm + la + 3))) {
            char *p = out;
            memcpy(p, head, h), p += h;
            memcpy(p, s, ls), p += ls;
            memcpy(p, mid, lm), p += lm;
            memcpy(p, a, la), p += la;
            memcpy(p, "}\n", 3);
            *n = h + ls + lm + la + 2;
        }
    }
    free(a);
    free(s);
    return out;
}

env_reply env_parse_call_reply(const char *line, size_t len, tern_tool_result *out, char *why,
                               size_t cap)
{
    json_t *v = json_loadb(line, len, JSON_REJECT_DUPLICATES, NULL);
    const char *status = json_string_value(json_object_get(v, "status"));
    json_t *output = json_object_get(v, "output");
    env_reply rc = ENV_ANSWERED;
    if (!json_is_object(v) || !status || !json_is_string(output) ||
        (strcmp(status, "ok") != 0 && strcmp(status, "invalid") != 0 &&
         strcmp(status, "failed") != 0)) {
        snprintf(why, cap, "the worker's reply to a tool call is no answer");
        rc = ENV_NOT_A_REPLY;
    } else {
        out->status = strcmp(status, "ok") == 0        ? TERN_TOOL_OK
                      : strcmp(status, "invalid") == 0 ? TERN_TOOL_INVALID
                                                       : TERN_TOOL_FAILED;
        const char *text = json_string_value(output);
        size_t k = strnlen(text, json_string_length(output)); /* a NUL ends it */
        if (k + 1 > out->output_cap) {
            k = out->output_cap - 1;
            while (k && ((unsigned char)text[k] & 0xC0) == 0x80)
                k--; /* not inside a character */
            out->truncated = 1;
        }
        memcpy(out->output, text, k);
        out->output[k] = '\0';
        out->output_len = k;
        out->truncated |= json_is_true(json_object_get(v, "truncated"));
    }
    json_decref(v);
    return rc;
}
