/* task.c: tasks as jansson objects (see task.h). */
#include "data/task.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"

struct tern_task {
    json_t *obj;
    const char *origin; /* the file it was read from (not owned), or NULL */
    size_t line;        /* its line in that file, from 1; 0 when unknown */
};

int tern_task_parse(const char *text, size_t len, const char *where, tern_task **out)
{
    *out = NULL;
    /* jansson would call a NUL byte inside the object a control character
     * and one after it "end of file expected near end of file" */
    const char *nul = memchr(text, '\0', len);
    if (nul)
        return tern_errorf(TERN_EINVAL, "%s: malformed JSON: a NUL byte at column %zu; a task is "
                           "one line of text: remove the byte", where, (size_t)(nul - text) + 1);
    json_error_t err;
    json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
    if (!o && json_error_code(&err) == json_error_null_character)
        return tern_errorf(TERN_EINVAL, "%s: malformed JSON: a string holds \\u0000 (a NUL "
                           "character) near column %d; tasks may not hold NUL characters: "
                           "remove it", where, err.column);
    if (!o && json_error_code(&err) == json_error_end_of_input_expected)
        return tern_errorf(TERN_EINVAL, "%s: malformed JSON: more text after the object, at "
                           "column %d; give one JSON object per line and nothing after it",
                           where, err.column);
    if (!o)
        return tern_errorf(TERN_EINVAL, "%s: malformed JSON: %s (column %d)", where, err.text,
                           err.column);
    if (!json_is_object(o)) {
        json_decref(o);
        return tern_errorf(TERN_EINVAL, "%s: a task must be a JSON object {...}", where);
    }
    tern_task *t = malloc(sizeof *t);
    if (!t) {
        json_decref(o);
        return tern_errorf(TERN_ENOMEM, "%s: out of memory", where);
    }
    t->obj = o;
    t->origin = NULL;
    t->line = 0;
    *out = t;
    return TERN_OK;
}

void tern_task_set_origin(tern_task *t, const char *origin) { t->origin = origin; }

const char *tern_task_origin(const tern_task *t) { return t ? t->origin : NULL; }

void tern_task_set_line(tern_task *t, size_t line) { t->line = line; }

size_t tern_task_line(const tern_task *t) { return t ? t->line : 0; }

void tern_task_free(tern_task *t)
{
    if (!t)
        return;
    json_decref(t->obj);
    free(t);
}

/* Follow a dotted path through nested objects. */
static json_t *lookup(const tern_task *t, const char *key)
{
    if (!t || !key)
        return NULL;
    json_t *cur = t->obj;
    const char *p = key;
    char seg[128];
    while (cur && *p) {
        const char *dot = strchr(p, '.');
        size_t len = dot ? (size_t)(dot - p) : strlen(p);
        if (len >= sizeof seg || !json_is_object(cur))
            return NULL;
        memcpy(seg, p, len);
        seg[len] = '\0';
        cur = json_object_get(cur, seg);
        p = dot ? dot + 1 : p + len;
    }
    return cur;
}

const char *tern_task_string(const tern_task *t, const char *key)
{
    json_t *v = lookup(t, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

int tern_task_number(const tern_task *t, const char *key, double *out)
{
    json_t *v = lookup(t, key);
    if (!v)
        return TERN_ENOTFOUND;
    if (!json_is_number(v))
        return TERN_EINVAL;
    *out = json_number_value(v);
    return TERN_OK;
}

char *tern_task_json(const tern_task *t, const char *key)
{
    json_t *v = lookup(t, key);
    return v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER) : NULL;
}

const json_t *tern_task_object(const tern_task *t)
{
    return t->obj;
}

int tern_task_has_answer(const tern_task *t)
{
    json_t *v = lookup(t, "answer");
    return v && (json_is_number(v) || (json_is_string(v) && json_string_length(v) > 0));
}

const char *tern_task_type(const tern_task *t, const char *key)
{
    json_t *v = lookup(t, key);
    if (!v)
        return NULL;
    switch (json_typeof(v)) {
    case JSON_STRING:
        return "string";
    case JSON_INTEGER:
        return "integer";
    case JSON_REAL:
        return "real number";
    case JSON_OBJECT:
        return "object";
    case JSON_ARRAY:
        return "array";
    case JSON_TRUE:
    case JSON_FALSE:
        return "boolean";
    case JSON_NULL:
        return "null";
    }
    return "value";
}

int tern_task_integer(const tern_task *t, const char *key, long long *out)
{
    json_t *v = lookup(t, key);
    if (!v)
        return TERN_ENOTFOUND;
    if (!json_is_integer(v))
        return TERN_EINVAL;
    *out = (long long)json_integer_value(v);
    return TERN_OK;
}
