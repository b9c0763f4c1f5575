/* task.c: tasks as jansson objects (see task.h). */
#include "data/task.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"

struct tern_task {
    json_t *obj;
    const char *origin; /* the file it was read from (not owned), or NULL */
};

int tern_task_parse(const char *text, size_t len, const char *where, tern_task **out)
{
    *out = NULL;
    json_error_t err;
    json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
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
    *out = t;
    return TERN_OK;
}

void tern_task_set_origin(tern_task *t, const char *origin) { t->origin = origin; }

const char *tern_task_origin(const tern_task *t) { return t ? t->origin : NULL; }

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
