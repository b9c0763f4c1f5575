/*
 * echo_tool.c: the `echo_tool` tool plugin, a test double for the runs with
 * tools (docs/agents.md, "Tools"). It answers {"text": T} with "echo: T",
 * except:
 *   T = "fail"     TERN_TOOL_FAILED, "it failed as asked"
 *   T = "long"     4000 bytes of "ab..." (cut by the core's buffer: truncated)
 *   T = "broken"   the call itself fails (the plugin is broken: the run ends)
 *   no "text" string  TERN_TOOL_INVALID, "the arguments need \"text\""
 * Settings: name (default "echo"), the function's name; schema, a text
 * that replaces the whole schema (for the tests of a plugin that describes
 * its function wrongly).
 */
#include <stdio.h>
#include <string.h>

#include <tern/plugin.h>
#include <tern/tool.h>

static const tern_host *host;

typedef struct echo {
    tern_ctx *ctx;
    char schema[512];
} echo;

static echo instances[8];
static int n_instances;

static int create(tern_ctx *ctx, void **state)
{
    if (n_instances >= 8)
        return host->fail(ctx, TERN_ERR, "echo_tool: too many instances");
    echo *e = &instances[n_instances++];
    const char *name = "echo", *schema = NULL;
    host->get_string(ctx, "name", &name);
    host->get_string(ctx, "schema", &schema);
    e->ctx = ctx;
    if (schema)
        snprintf(e->schema, sizeof e->schema, "%s", schema);
    else
        snprintf(e->schema, sizeof e->schema,
                 "{\"type\": \"function\", \"function\": {\"name\": \"%s\", \"description\": "
                 "\"Say the text back.\", \"parameters\": {\"type\": \"object\", "
                 "\"properties\": {\"text\": {\"type\": \"string\"}}, \"required\": "
                 "[\"text\"]}}}", name);
    *state = e;
    return TERN_OK;
}

static void destroy(void *state) { (void)state; }

static int describe(void *state, const char **schema)
{
    *schema = ((echo *)state)->schema;
    return TERN_OK;
}

/* The value of "text" in the arguments' JSON text, copied into buf: 1, or 0
 * when there is no such string (a small reader: the tests' calls are
 * simple). */
static int text_arg(const char *args, char *buf, size_t n)
{
    const char *p = strstr(args, "\"text\":");
    if (!p)
        return 0;
    p += strlen("\"text\":");
    while (*p == ' ')
        p++;
    if (*p != '"')
        return 0;
    const char *q = strchr(++p, '"');
    if (!q)
        return 0;
    snprintf(buf, n, "%.*s", (int)(q - p), p);
    return 1;
}

static int call(void *state, const tern_tool_call *c, tern_tool_result *out)
{
    echo *e = state;
    char text[256];
    if (!text_arg(c->arguments, text, sizeof text)) {
        out->status = TERN_TOOL_INVALID;
        snprintf(out->output, out->output_cap, "the arguments need \"text\"");
    } else if (strcmp(text, "broken") == 0) {
        return host->fail(e->ctx, TERN_ERR, "echo_tool: broken as asked");
    } else if (strcmp(text, "fail") == 0) {
        out->status = TERN_TOOL_FAILED;
        snprintf(out->output, out->output_cap, "it failed as asked");
    } else if (strcmp(text, "long") == 0) {
        size_t k = 0;
        for (; k < 4000 && k + 1 < out->output_cap; k++)
            out->output[k] = (char)('a' + k % 2);
        out->output[k] = '\0';
        out->truncated = k < 4000;
    } else {
        snprintf(out->output, out->output_cap, "echo: %s", text);
    }
    out->output_len = strlen(out->output);
    if (out->output_len + 1 == out->output_cap && !out->truncated)
        out->truncated = 1; /* snprintf cut it, or it just fit: say so either way */
    return TERN_OK;
}

static const tern_tool_ops ops = {.size = sizeof ops, .create = create, .destroy = destroy,
                                  .describe = describe, .call = call};

static const tern_setting_spec settings[] = {
    TERN_SETTING(.name = "name", .type = TERN_SETTING_STRING, .doc = "the function's name"),
    TERN_SETTING(.name = "schema", .type = TERN_SETTING_STRING, .doc = "the whole schema text"),
    TERN_SETTINGS_END,
};

static const tern_plugin_descriptor desc = {
    .size = sizeof desc, .abi_major = TERN_ABI_MAJOR, .abi_minor = TERN_ABI_MINOR,
    .kind = TERN_KIND_TOOL, .name = "echo_tool", .version = "1.0.0",
    .summary = "says the text back (tests)", .ops = &ops, .settings = settings};

TERN_PLUGIN_EXPORT const tern_plugin_descriptor *tern_plugin_entry(const tern_host *h)
{
    host = h;
    return &desc;
}
