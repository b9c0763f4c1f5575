/* calculator.c: the `calculator` tool plugin (tern/tool.h, docs/agents.md
 * "Tools"): exact arithmetic for the model. The call's arguments are
 * {"expression": "123 * 456"}; the output is the exact result (expr.h for
 * the grammar, value_text.h for how a result is written).
 *
 * What the model sees when it goes wrong: arguments that are not that
 * object, an empty expression or a syntax error (with its column) are
 * TERN_TOOL_INVALID, what it should write differently; a division by zero,
 * a power that is not exact, a result too large, nesting too deep or an
 * expression too long are TERN_TOOL_FAILED, what the calculation cannot do.
 * Either way the output is one line saying why.
 *
 * An instance is its settings, read-only after create(), and a call keeps
 * everything on its own stack and heap: call() is reentrant, and the
 * descriptor says TERN_CAP_THREAD_SAFE. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gmp.h>
#include <jansson.h>

#include "tern/plugin.h"
#include "tern/tool.h"

#include "expr.h"
#include "value_text.h"

/* The most significant digits of the decimal beside a fraction. */
#define CALC_MAX_DIGITS 40

static const tern_host *host;

typedef struct calc_state {
    tern_ctx *ctx;
    int digits; /* the setting `digits` */
} calc_state;

/* What the model is told of the tool: short and plain, a 135M model reads it. */
static const char calc_schema[] =
    "{\"type\": \"function\", \"function\": {\"name\": \"calculator\", "
    "\"description\": \"Exact arithmetic. Give an expression with numbers, + - * / ** and "
    "parentheses; get its exact value.\", "
    "\"parameters\": {\"type\": \"object\", \"properties\": {\"expression\": "
    "{\"type\": \"string\", \"description\": \"the calculation, such as \\\"123 * 456\\\" or "
    "\\\"(2 + 3) / 4\\\"\"}}, \"required\": [\"expression\"]}}}";

static int calc_create(tern_ctx *ctx, void **state)
{
    int64_t digits = 0;
    int rc = host->get_int(ctx, "digits", &digits);
    if (rc != TERN_OK)
        return rc;
    calc_state *s = calloc(1, sizeof *s);
    if (!s)
        return host->fail(ctx, TERN_ENOMEM, "calculator: out of memory");
    s->ctx = ctx;
    s->digits = (int)digits;
    *state = s;
    return TERN_OK;
}

static void calc_destroy(void *state) { free(state); }

static int calc_describe(void *state, const char **schema)
{
    (void)state;
    *schema = calc_schema;
    return TERN_OK;
}

/* text[0..len) into the core's buffer with `status`: as much as fits in
 * output_cap - 1 bytes, cut before a character it would split (the output
 * is UTF-8), NUL-terminated, truncated = 1 when something was cut. */
static void put_output(tern_tool_result *out, uint32_t status, const char *text, size_t len)
{
    out->status = status;
    size_t keep = len;
    if (!out->output || out->output_cap == 0) {
        keep = 0;
    } else if (keep > out->output_cap - 1) {
        keep = out->output_cap - 1;
        while (keep > 0 && ((unsigned char)text[keep] & 0xC0) == 0x80)
            keep--;
    }
    if (out->output && out->output_cap > 0) {
        memcpy(out->output, text, keep);
        out->output[keep] = '\0';
    }
    out->output_len = keep;
    out->truncated = keep < len;
}

/* One line into the output: for the messages of this file. */
static void put_line(tern_tool_result *out, uint32_t status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void put_line(tern_tool_result *out, uint32_t status, const char *fmt, ...)
{
    char line[CALC_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    put_output(out, status, line, len);
}

/* Up to `max` bytes of src into dst[0..cap) as printable ASCII, any other
 * byte as '?': text quoted from the model's arguments or jansson's message
 * about them keeps the output one line of valid UTF-8. */
static const char *ascii_excerpt(char *dst, size_t cap, const char *src, size_t max)
{
    size_t n = 0;
    for (; src[n] && n < max && n + 1 < cap; n++)
        dst[n] = src[n] >= 0x20 && src[n] < 0x7F ? src[n] : '?';
    dst[n] = '\0';
    return dst;
}

/* A JSON value's kind as the model would name it. */
static const char *json_kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "a list";
    case JSON_STRING: return "a string";
    case JSON_INTEGER:
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "true or false";
    case JSON_NULL: return "null";
    }
    return "something else";
}

/* The expression out of the call's arguments into *expr (owned by *args):
 * 0, or -1 with the output set to why (TERN_TOOL_INVALID). */
static int read_arguments(const char *text, json_t **args, const char **expr, size_t *len,
                          tern_tool_result *out)
{
    static const char need[] = "the arguments need \"expression\", a string such as "
                               "\"123 * 456\"";
    json_error_t jerr;
    /* NUL bytes allowed: the evaluator then says where they are */
    *args = json_loads(text ? text : "{}", JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    if (!*args) {
        char why[128];
        put_line(out, TERN_TOOL_INVALID, "the arguments are not a JSON object (%s); give "
                 "{\"expression\": \"123 * 456\"}",
                 ascii_excerpt(why, sizeof why, jerr.text, sizeof why - 1));
        return -1;
    }
    if (!json_is_object(*args)) {
        put_line(out, TERN_TOOL_INVALID, "%s", need);
        return -1;
    }
    const char *key;
    json_t *value;
    json_object_foreach(*args, key, value) {
        if (strcmp(key, "expression") != 0) {
            char name[48];
            put_line(out, TERN_TOOL_INVALID, "unknown argument \"%s\"; the calculator "
                     "takes only \"expression\"", ascii_excerpt(name, sizeof name, key, 40));
            return -1;
        }
    }
    value = json_object_get(*args, "expression");
    if (!value) {
        put_line(out, TERN_TOOL_INVALID, "%s", need);
        return -1;
    }
    if (!json_is_string(value)) {
        put_line(out, TERN_TOOL_INVALID, "\"expression\" must be a string such as "
                 "\"123 * 456\", not %s", json_kind(value));
        return -1;
    }
    *expr = json_string_value(value);
    *len = json_string_length(value);
    return 0;
}

static int calc_call(void *state, const tern_tool_call *call, tern_tool_result *out)
{
    calc_state *s = state;
    json_t *args = NULL;
    const char *expr;
    size_t len;
    if (read_arguments(call->arguments, &args, &expr, &len, out)) {
        json_decref(args);
        return TERN_OK;
    }
    mpq_t v;
    mpq_init(v);
    calc_error err;
    calc_status st = calc_eval(expr, len, v, &err);
    json_decref(args);
    if (st != CALC_OK) {
        mpq_clear(v);
        put_output(out, st == CALC_EMPTY || st == CALC_SYNTAX ? TERN_TOOL_INVALID
                                                              : TERN_TOOL_FAILED,
                   err.message, strlen(err.message));
        return TERN_OK;
    }
    char *text;
    size_t text_len;
    int rc = calc_value_text(v, s->digits, &text, &text_len);
    mpq_clear(v);
    if (rc != 0)
        return host->fail(s->ctx, TERN_ENOMEM, "calculator: out of memory writing a result");
    put_output(out, TERN_TOOL_OK, text, text_len);
    free(text);
    return TERN_OK;
}

static const tern_tool_ops calc_ops = {
    .size = sizeof calc_ops,
    .create = calc_create,
    .destroy = calc_destroy,
    .describe = calc_describe,
    .call = calc_call,
};

static const tern_setting_spec calc_settings[] = {
    TERN_SETTING(.name = "digits", .type = TERN_SETTING_INT, .def = "12", .min = 1,
                 .max = CALC_MAX_DIGITS, .aka = "precision|significant_digits",
                 .doc = "significant digits of the decimal written beside a fraction that has "
                        "no exact one (1/3 ~ 0.333333333333)"),
    TERN_SETTINGS_END,
};

static const tern_plugin_descriptor calc_descriptor = {
    .size = sizeof calc_descriptor,
    .abi_major = TERN_ABI_MAJOR,
    .abi_minor = TERN_ABI_MINOR,
    .kind = TERN_KIND_TOOL,
    .name = "calculator",
    .version = "1.0.0",
    .summary = "exact arithmetic: + - * / // % ** on whole numbers, decimals and fractions",
    /* the instance is read-only after create; GMP keeps no shared state */
    .caps = TERN_CAP_THREAD_SAFE,
    .ops = &calc_ops,
    .settings = calc_settings,
};

TERN_PLUGIN_EXPORT const tern_plugin_descriptor *tern_plugin_entry(const tern_host *h)
{
    host = h;
    return &calc_descriptor;
}
