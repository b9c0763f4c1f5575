/* exec_protocol.c: the exec reward's request and verdict lines (see
 * exec_protocol.h). */
#include "exec_protocol.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tern/support/utf8.h"

void exec_names_free(exec_names *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->name[i]);
    t->n = 0;
}

char *exec_request(const char *task_json, const char *response, size_t len, uint32_t tokens,
                   size_t *n)
{
    json_t *task = json_loads(task_json, JSON_DECODE_ANY, NULL);
    char *copy = malloc(len + 1);
    char *text = NULL;
    if (copy) {
        /* a NUL byte becomes an invalid one, so U+FFFD like the others */
        for (size_t i = 0; i < len; i++)
            copy[i] = response[i] ? response[i] : (char)0xFF;
        copy[len] = '\0';
        text = tern_utf8_clean(copy);
    }
    json_t *o = task && text ? json_pack("{s:O, s:s, s:I}", "task", task, "response", text,
                                         "response_tokens", (json_int_t)tokens)
                             : NULL;
    char *line = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    json_decref(task);
    free(copy);
    free(text);
    if (!line)
        return NULL;
    size_t k = strlen(line);
    char *out = realloc(line, k + 2);
    if (!out) {
        free(line);
        return NULL;
    }
    out[k] = '\n';
    out[k + 1] = '\0';
    *n = k + 1;
    return out;
}

static int name_ok(const char *s, size_t n)
{
    if (n == 0 || n > 64)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
            return 0;
    return 1;
}

static const char *intern(exec_names *t, const char *s)
{
    size_t n = strlen(s);
    if (!name_ok(s, n))
        return NULL;
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->name[i], s) == 0)
            return t->name[i];
    if (t->n == EXEC_MAX_NAMES)
        return NULL;
    char *c = strdup(s);
    if (c)
        t->name[t->n++] = c;
    return c;
}

/* A reason copied in, cut to fit. */
static void set_reason(tern_reward_result *r, const char *s)
{
    snprintf(r->reason, sizeof r->reason, "%s", s);
}

static exec_reply garbage(tern_reward_result *r, const char *what, const char *line, size_t len)
{
    char shown[64];
    size_t k = len < 40 ? len : 40, o = 0;
    for (size_t i = 0; i < k && o < sizeof shown - 4; i++)
        shown[o++] = line[i] >= 0x20 && line[i] < 0x7f ? line[i] : '?';
    if (len > k)
        memcpy(shown + o, "...", 3), o += 3;
    shown[o] = '\0';
    snprintf(r->reason, sizeof r->reason, "the command's reply is not a verdict (%s): '%s'",
             what, shown);
    return EXEC_GARBAGE;
}

exec_reply exec_parse_reply(const char *line, size_t len, tern_reward_result *r,
                            exec_names *names)
{
    json_error_t err;
    json_t *v = json_loadb(line, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &err);
    if (!v) /* JSON that tern refuses is named for what it is, not "not JSON" */
        return garbage(r, strstr(err.text, "duplicate") ? "a key given twice"
                          : strstr(err.text, "u0000") ? "a \\u0000 in a string: a verdict's "
                                                        "text holds no NUL character"
                                                      : "not JSON",
                       line, len);
    exec_reply out = EXEC_VERDICT;
    if (json_is_number(v)) {
        r->reward = json_number_value(v);
    } else if (json_is_object(v) && json_object_get(v, "error")) {
        json_t *e = json_object_get(v, "error");
        if (json_is_string(e)) {
            set_reason(r, json_string_value(e)[0] ? json_string_value(e) : "an empty error");
            out = EXEC_ERROR;
        } else {
            out = garbage(r, "\"error\" is not a string", line, len);
        }
    } else if (json_is_object(v)) {
        json_t *rw = json_object_get(v, "reward"), *comps = json_object_get(v, "components");
        json_t *why = json_object_get(v, "reason");
        if (!json_is_number(rw)) {
            out = garbage(r, "no number \"reward\"", line, len);
        } else if (comps && !json_is_object(comps)) {
            out = garbage(r, "\"components\" is not an object", line, len);
        } else if (why && !json_is_string(why)) {
            out = garbage(r, "\"reason\" is not a string", line, len);
        } else {
            r->reward = json_number_value(rw);
            const char *key;
            json_t *cv;
            json_object_foreach(comps, key, cv) {
                const char *kept = json_is_number(cv) ? intern(names, key) : NULL;
                if (kept && r->n_components < TERN_REWARD_MAX_COMPONENTS)
                    r->components[r->n_components++] =
                        (tern_reward_component){kept, json_number_value(cv)};
            }
            if (why)
                set_reason(r, json_string_value(why));
        }
    } else {
        out = garbage(r, "neither a number nor an object", line, len);
    }
    json_decref(v);
    if (out == EXEC_VERDICT && !r->reason[0])
        set_reason(r, "scored by the command");
    return out;
}
