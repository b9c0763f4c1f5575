/* tool_calls.c: the function calls in a turn of the model (tool_calls.h). */
#include "agent/tool_calls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/errmsg.h"
#include "tern/tool.h"

#define OPEN_TAG "<tool_call>"
#define CLOSE_TAG "</tool_call>"
#define PYTHON_TAG "<|python_tag|>"

static int is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

/* s[0..n) without the whitespace at both ends: *start, returned length. */
static size_t trim(const char *s, size_t n, const char **start)
{
    while (n && is_space(*s))
        s++, n--;
    while (n && is_space(s[n - 1]))
        n--;
    *start = s;
    return n;
}

/* Set c's error to msg: 0, or -1 out of memory. */
static int fail(tern_parsed_call *c, const char *msg)
{
    return (c->error = strdup(msg)) ? 0 : -1;
}

/* c from the JSON object text s[0..n): a name and the arguments object, or
 * an error. 0, or -1 out of memory. */
static int read_call(const char *s, size_t n, tern_parsed_call *c)
{
    json_error_t je;
    json_t *v = json_loadb(s, n, JSON_REJECT_DUPLICATES, &je);
    if (!v) {
        char buf[256];
        snprintf(buf, sizeof buf, "not JSON (column %d: %s); write {\"name\": ..., "
                 "\"arguments\": {...}}", je.column, je.text);
        return fail(c, buf);
    }
    json_t *name = json_object_get(v, "name");
    json_t *args = json_object_get(v, "arguments");
    if (!args)
        args = json_object_get(v, "parameters");
    /* some models write the arguments as a string of JSON */
    json_t *parsed = json_is_string(args) ? json_loads(json_string_value(args), 0, NULL) : NULL;
    if (parsed)
        args = parsed;
    int rc;
    if (!json_is_object(v))
        rc = fail(c, "a call is a JSON object {\"name\": ..., \"arguments\": {...}}");
    else if (!json_is_string(name) || !*json_string_value(name))
        rc = fail(c, "the call has no \"name\" string");
    else if (strlen(json_string_value(name)) > TERN_TOOL_NAME_MAX)
        rc = fail(c, "the call's \"name\" is too long to be a tool's");
    else if (!(c->name = strdup(json_string_value(name))))
        rc = -1;
    else if (args && !json_is_object(args))
        rc = fail(c, "\"arguments\" must be a JSON object");
    else
        rc = (c->arguments = args ? json_dumps(args, JSON_COMPACT | JSON_ENSURE_ASCII)
                                  : strdup("{}"))
                 ? 0
                 : -1;
    json_decref(parsed);
    json_decref(v);
    return rc;
}

static int grow(tern_parsed_call **calls, size_t n, size_t *cap)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? 2 * *cap : 4;
    tern_parsed_call *g = realloc(*calls, c * sizeof *g);
    if (!g)
        return -1;
    *calls = g;
    *cap = c;
    return 0;
}

/* The Llama 3.1 form: the whole turn one call. 1 found, 0 not, -1 out of memory. */
static int llama_call(const char *text, tern_parsed_call *c)
{
    const char *s;
    size_t n = trim(text, strlen(text), &s);
    size_t tag = strlen(PYTHON_TAG);
    if (n >= tag && memcmp(s, PYTHON_TAG, tag) == 0)
        n = trim(s + tag, n - tag, &s);
    if (n < 2 || s[0] != '{' || s[n - 1] != '}')
        return 0;
    json_t *v = json_loadb(s, n, 0, NULL);
    int is_call = json_is_object(v) && json_is_string(json_object_get(v, "name")) &&
                  (json_object_get(v, "parameters") || json_object_get(v, "arguments"));
    json_decref(v);
    if (!is_call)
        return 0;
    *c = (tern_parsed_call){0};
    return read_call(s, n, c) == 0 ? 1 : -1;
}

int tern_tool_calls_parse(const char *text, tern_parsed_call **calls, size_t *n)
{
    *calls = NULL;
    *n = 0;
    size_t cap = 0, k = 0;
    int oom = 0;
    const char *p = strstr(text, OPEN_TAG);
    if (!p) {
        tern_parsed_call c;
        int found = llama_call(text, &c);
        if (found == 1 && grow(calls, 0, &cap) == 0)
            (*calls)[k++] = c;
        else if (found)
            oom = 1;
    }
    while (p && !oom) {
        const char *body = p + strlen(OPEN_TAG);
        const char *end = strstr(body, CLOSE_TAG);
        const char *next = strstr(body, OPEN_TAG);
        if (grow(calls, k, &cap) != 0) {
            oom = 1;
            break;
        }
        tern_parsed_call *c = &(*calls)[k++];
        *c = (tern_parsed_call){0};
        if (!end || (next && next < end)) {
            /* cut off (the turn ran out of tokens) or never closed */
            if (!(c->error = strdup("<tool_call> is not closed with </tool_call>")))
                oom = 1;
            p = next;
            continue;
        }
        const char *s;
        size_t len = trim(body, (size_t)(end - body), &s);
        if (read_call(s, len, c) != 0)
            oom = 1;
        p = strstr(end + strlen(CLOSE_TAG), OPEN_TAG);
    }
    *n = k;
    if (oom) {
        tern_tool_calls_free(*calls, k);
        *calls = NULL;
        *n = 0;
        return tern_errorf(TERN_ENOMEM, "explorer: out of memory reading tool calls");
    }
    return TERN_OK;
}

void tern_tool_calls_free(tern_parsed_call *calls, size_t n)
{
    for (size_t i = 0; calls && i < n; i++) {
        free(calls[i].name);
        free(calls[i].arguments);
        free(calls[i].error);
    }
    free(calls);
}
