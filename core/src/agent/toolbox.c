/* toolbox.c: a run's tools, described and called (toolbox.h). */
#include "agent/toolbox.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/errmsg.h"
#include "tern/support/text_buf.h"
#include "host/session.h"
#include "tern/plugin.h"

/* Bytes of output a tool slot gives the model unless output_max says. */
#define DEFAULT_OUTPUT_MAX 2048

static int name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > TERN_TOOL_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-'))
            return 0;
    return 1;
}

/* The schema text (tool t's), checked, appended to arr; t->name from it. */
static int add_schema(tern_tool *t, const char *text, json_t *arr)
{
    int rc;
    json_error_t je;
    json_t *v = text ? json_loads(text, 0, &je) : NULL;
    json_t *fn = json_object_get(v, "function");
    const char *name = json_string_value(json_object_get(fn, "name"));
    if (!v || !json_is_object(fn) || !name || !json_is_object(json_object_get(fn, "parameters"))) {
        json_decref(v);
        return tern_errorf(TERN_ECONFIG, "%s: tool plugin '%s' describes its function with %s, "
                           "not {\"type\": \"function\", \"function\": {\"name\", "
                           "\"description\", \"parameters\": {...}}} (tern/tool.h): fix the "
                           "plugin", t->label, t->plugin, !text ? "nothing" : !v ? "text that "
                           "is not JSON" : "JSON of another shape");
    }
    if (!name_ok(name)) {
        rc = tern_errorf(TERN_ECONFIG, "%s: tool plugin '%s' names its function \"%.80s\": a "
                         "name is [A-Za-z0-9_-]+, at most %d bytes (tern/tool.h): fix the "
                         "plugin", t->label, t->plugin, name, TERN_TOOL_NAME_MAX);
        json_decref(v);
        return rc;
    }
    if (!(t->name = strdup(name)) || json_array_append_new(arr, v) != 0)
        return tern_errorf(TERN_ENOMEM, "tools: out of memory");
    return TERN_OK;
}

/* The box's last tool t is named like an earlier one: refused. */
static int check_unique(const tern_toolbox *box, const tern_tool *t)
{
    for (size_t k = 0; k + 1 < box->n; k++)
        if (strcmp(box->tool[k].name, t->name) == 0)
            return tern_errorf(TERN_ECONFIG, "%s and %s: two tools are named \"%s\" (plugins "
                               "'%s' and '%s'); the model calls tools by name, so keep one",
                               box->tool[k].label, t->label, t->name, box->tool[k].plugin,
                               t->plugin);
    return TERN_OK;
}

/* The environment's own tools, into box (room for them made by the caller). */
static int add_environment_tools(tern_toolbox *box, const tern_toolbox_env *env, json_t *list,
                                 json_t *arr)
{
    size_t i;
    json_t *e;
    int rc = TERN_OK;
    json_array_foreach(list, i, e) {
        tern_tool *t = &box->tool[box->n++];
        *t = (tern_tool){.env_ops = env->ops, .state = env->state, .plugin = env->plugin,
                         .label = "environment", .output_max = DEFAULT_OUTPUT_MAX,
                         .thread_safe = env->thread_safe, .lock = env->lock};
        char *text = json_dumps(e, JSON_COMPACT | JSON_ENSURE_ASCII);
        rc = text ? add_schema(t, text, arr) : tern_errorf(TERN_ENOMEM, "tools: out of memory");
        free(text);
        if (rc == TERN_OK)
            rc = check_unique(box, t);
        if (rc != TERN_OK)
            break;
    }
    return rc;
}

/* The environment's tools() as a JSON array (NULL with none), or a message. */
static int environment_tools(const tern_toolbox_env *env, json_t **list)
{
    *list = NULL;
    if (!env || !TERN_HAS(env->ops, call_tool) || !env->ops->tools)
        return TERN_OK;
    const char *text = NULL;
    if (!env->thread_safe)
        pthread_mutex_lock(env->lock);
    tern_error_clear();
    int rc = env->ops->tools(env->state, &text);
    json_t *v = rc == TERN_OK && text ? json_loads(text, 0, NULL) : NULL;
    if (!env->thread_safe)
        pthread_mutex_unlock(env->lock);
    if (rc != TERN_OK)
        return tern_errorf(TERN_ECONFIG, "environment: plugin '%s': its tools failed: %s",
                           env->plugin, tern_error_message());
    if (text && !json_is_array(v)) {
        json_decref(v);
        return tern_errorf(TERN_ECONFIG, "environment: plugin '%s' lists its tools with text "
                           "that is not a JSON array of function schemas (tern/environment.h "
                           "tools()): fix the plugin", env->plugin);
    }
    if (json_array_size(v) && !env->ops->call_tool) {
        json_decref(v);
        return tern_errorf(TERN_ECONFIG, "environment: plugin '%s' lists tools but has no "
                           "call_tool op: fix the plugin", env->plugin);
    }
    if (json_array_size(v))
        *list = v;
    else
        json_decref(v);
    return TERN_OK;
}

int tern_toolbox_open(tern_toolbox *box, tern_session *s, const tern_toolbox_env *env)
{
    memset(box, 0, sizeof *box);
    json_t *env_tools = NULL;
    int rc = environment_tools(env, &env_tools);
    size_t n = json_array_size(env_tools);
    for (size_t i = 0; i < s->n_inst; i++)
        n += s->inst[i].created && s->inst[i].slot->kind == TERN_KIND_TOOL;
    if (rc != TERN_OK || n == 0)
        return rc;
    json_t *arr = json_array();
    if (!arr || !(box->tool = calloc(n, sizeof *box->tool))) {
        json_decref(arr);
        json_decref(env_tools);
        return tern_errorf(TERN_ENOMEM, "tools: out of memory");
    }
    for (size_t i = 0; i < s->n_inst && rc == TERN_OK; i++) {
        tern_instance *in = &s->inst[i];
        if (!in->created || in->slot->kind != TERN_KIND_TOOL)
            continue;
        tern_tool *t = &box->tool[box->n++];
        const tern_plugin_descriptor *d = in->entry->plugin->desc;
        t->ops = d->ops;
        t->state = in->state;
        t->plugin = in->entry->name;
        t->label = in->label;
        t->thread_safe = (d->caps & TERN_CAP_THREAD_SAFE) != 0;
        pthread_mutex_init(&t->own_lock, NULL);
        t->lock = &t->own_lock;
        config_setting_t *om = config_setting_get_member(in->group, "output_max");
        t->output_max = om ? (size_t)config_setting_get_int64(om) : DEFAULT_OUTPUT_MAX;
        const char *text = NULL;
        tern_error_clear();
        rc = t->ops->describe(t->state, &text);
        if (rc != TERN_OK)
            rc = tern_errorf(TERN_ECONFIG, "%s: tool plugin '%s': describe failed: %s", t->label,
                             t->plugin, tern_error_message());
        else
            rc = add_schema(t, text, arr);
        if (rc == TERN_OK)
            rc = check_unique(box, t);
    }
    if (rc == TERN_OK && env_tools)
        rc = add_environment_tools(box, env, env_tools, arr);
    if (rc == TERN_OK && !(box->schemas = json_dumps(arr, JSON_COMPACT | JSON_ENSURE_ASCII)))
        rc = tern_errorf(TERN_ENOMEM, "tools: out of memory");
    json_decref(arr);
    json_decref(env_tools);
    if (rc != TERN_OK)
        tern_toolbox_close(box);
    return rc;
}

void tern_toolbox_close(tern_toolbox *box)
{
    for (size_t i = 0; i < box->n; i++) {
        free(box->tool[i].name);
        if (box->tool[i].lock == &box->tool[i].own_lock)
            pthread_mutex_destroy(&box->tool[i].own_lock);
    }
    free(box->tool);
    free(box->schemas);
    free(box->system_block);
    memset(box, 0, sizeof *box);
}

int tern_toolbox_make_system_block(tern_toolbox *box)
{
    /* Qwen2.5's own words for its tool block, one schema per line */
    json_t *arr = json_loads(box->schemas, 0, NULL);
    tern_text_buf b = {0};
    tern_text_puts(&b, "# Tools\n\nYou may call one or more functions to assist with the user "
                       "query.\n\nYou are provided with function signatures within "
                       "<tools></tools> XML tags:\n<tools>");
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e) {
        char *line = json_dumps(e, JSON_COMPACT | JSON_ENSURE_ASCII);
        tern_text_puts(&b, "\n");
        if (line)
            tern_text_puts(&b, line);
        else
            b.oom = 1;
        free(line);
    }
    tern_text_puts(&b, "\n</tools>\n\nFor each function call, return a json object with "
                       "function name and arguments within <tool_call></tool_call> XML "
                       "tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
                       "<args-json-object>}\n</tool_call>");
    json_decref(arr);
    if (!arr || b.oom) {
        free(b.p);
        return tern_errorf(TERN_ENOMEM, "tools: out of memory");
    }
    free(box->system_block);
    box->system_block = b.p;
    return TERN_OK;
}

static int say(char **text, const char *fmt, const char *a, const char *b)
{
    size_t n = strlen(fmt) + strlen(a) + (b ? strlen(b) : 0) + 1;
    if (!(*text = malloc(n)))
        return tern_errorf(TERN_ENOMEM, "tools: out of memory");
    snprintf(*text, n, fmt, a, b ? b : "");
    return TERN_OK;
}

int tern_toolbox_answer(tern_toolbox *box, const tern_parsed_call *c, uint64_t seed,
                        void *episode, char **text, uint32_t *status)
{
    *text = NULL;
    *status = TERN_TOOL_INVALID;
    tern_tool *t = NULL;
    for (size_t i = 0; c->name && i < box->n && !t; i++)
        if (strcmp(box->tool[i].name, c->name) == 0)
            t = &box->tool[i];
    if (c->error || !t) {
        if (c->error)
            return say(text, "invalid tool call: %s%s", c->error, NULL);
        char names[256] = "";
        for (size_t i = 0; i < box->n; i++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                     i ? ", " : "", box->tool[i].name);
        size_t n = strlen(c->name) + strlen(names) + 64;
        if (!(*text = malloc(n)))
            return tern_errorf(TERN_ENOMEM, "tools: out of memory");
        snprintf(*text, n, "invalid tool call: no tool is named \"%s\" (the tools: %s)",
                 c->name, names);
        return TERN_OK;
    }
    char *out = malloc(t->output_max + 1);
    if (!out)
        return tern_errorf(TERN_ENOMEM, "tools: out of memory");
    out[0] = '\0';
    tern_tool_call call = {.size = sizeof call, .name = c->name, .arguments = c->arguments,
                           .seed = seed};
    tern_tool_result res = {.size = sizeof res, .output = out, .output_cap = t->output_max + 1};
    if (!t->thread_safe)
        pthread_mutex_lock(t->lock);
    tern_error_clear();
    int rc = t->ops ? t->ops->call(t->state, &call, &res)
                    : t->env_ops->call_tool(t->state, episode, &call, &res);
    if (!t->thread_safe)
        pthread_mutex_unlock(t->lock);
    if (rc != TERN_OK) {
        free(out);
        return tern_errorf(rc < 0 ? rc : TERN_ERR, "%s: %s plugin '%s' failed on a call of "
                           "\"%s\": %s", t->label, t->ops ? "tool" : "environment", t->plugin,
                           c->name, tern_error_message());
    }
    /* what the plugin wrote, bounded by the buffer whatever it claims */
    out[t->output_max] = '\0';
    size_t len = strnlen(out, t->output_max);
    *status = res.status <= TERN_TOOL_FAILED ? res.status : TERN_TOOL_FAILED;
    const char *head = *status == TERN_TOOL_INVALID ? "invalid tool call: "
                       : *status == TERN_TOOL_FAILED ? "tool error: " : "";
    char tail[64] = "";
    if (res.truncated)
        snprintf(tail, sizeof tail, "\n[output truncated to %zu bytes]", t->output_max);
    size_t n = strlen(head) + len + strlen(tail) + 1;
    *text = malloc(n);
    if (*text)
        snprintf(*text, n, "%s%.*s%s", head, (int)len, out, tail);
    free(out);
    return *text ? TERN_OK : tern_errorf(TERN_ENOMEM, "tools: out of memory");
}
