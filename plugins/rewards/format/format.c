/* format.c: the `format` reward plugin: does the response have the shape the
 * prompt asked for? A template ("<think>...</think><answer>...</answer>",
 * template.h) or a POSIX extended regular expression that must match the
 * whole response; the user's guide is docs/rewards.md.
 *
 * An instance is its settings and a compiled expression, both read-only
 * after create(); regexec() takes a const regex_t, so score() is reentrant
 * and the descriptor says TERN_CAP_THREAD_SAFE. */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tern/plugin.h>
#include <tern/reward.h>

#include "template.h"

static const tern_host *host;

#define DEFAULT_TEMPLATE "<think>...</think><answer>...</answer>"

typedef struct format_state {
    const char *component; /* the component's name (owned by the host) */
    double match_reward, miss_reward;
    int nonempty;
    int64_t max_bytes;
    int use_regex;
    regex_t re;
    template_t tpl;
    const char *shown; /* the template or expression, for reasons */
} format_state;

static int valid_name(const char *s)
{
    if (!*s || strlen(s) > 64)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return 0;
    return 1;
}

static int format_create(tern_ctx *ctx, void **out)
{
    format_state *st = calloc(1, sizeof *st);
    if (!st)
        return host->fail(ctx, TERN_ENOMEM, "out of memory");
    const char *tpl = NULL, *rx = NULL;
    int has_tpl = host->get_string(ctx, "template", &tpl) == TERN_OK;
    int has_rx = host->get_string(ctx, "regex", &rx) == TERN_OK;
    host->get_string(ctx, "component", &st->component);
    host->get_float(ctx, "reward", &st->match_reward);
    host->get_float(ctx, "miss_reward", &st->miss_reward);
    host->get_bool(ctx, "nonempty", &st->nonempty);
    host->get_int(ctx, "max_bytes", &st->max_bytes);
    int rc = TERN_OK;
    if (has_tpl && has_rx) {
        rc = host->setting_error(ctx, "regex", "give either template or regex, not both");
    } else if (!valid_name(st->component)) {
        rc = host->setting_error(ctx, "component", "'%s' is not a component name: use "
                                 "lower-case letters, digits and '_' (at most 64)",
                                 st->component);
    } else if (has_rx) {
        int e = regcomp(&st->re, rx, REG_EXTENDED);
        if (e != 0) {
            char msg[200];
            regerror(e, &st->re, msg, sizeof msg);
            rc = host->setting_error(ctx, "regex", "not a POSIX extended regular expression: "
                                     "%s", msg);
        } else {
            st->use_regex = 1;
            st->shown = rx;
        }
    } else {
        st->shown = has_tpl ? tpl : DEFAULT_TEMPLATE;
        if (!*st->shown)
            rc = host->setting_error(ctx, "template", "the template is empty: give the shape "
                                     "of a response, e.g. \"" DEFAULT_TEMPLATE "\"");
        else if (template_parse(&st->tpl, st->shown) != 0)
            rc = host->setting_error(ctx, "template", "more than %d \"...\" wildcards",
                                     TEMPLATE_MAX_PARTS - 1);
    }
    if (rc != TERN_OK) {
        free(st);
        return rc;
    }
    *out = st;
    return TERN_OK;
}

static void format_destroy(void *state)
{
    format_state *st = state;
    if (st && st->use_regex)
        regfree(&st->re);
    free(st);
}

/* Whether the whole of s[0..n) matches the expression: 1, 0, or -1 out of
 * memory. REG_STARTEND bounds the match by n, so a NUL inside the response
 * is an ordinary byte; the copy ends with a NUL all the same, because some
 * regexec() wrappers (AddressSanitizer's) read up to one. POSIX
 * leftmost-longest matching finds a match of the whole response whenever
 * there is one. */
static int regex_whole(const regex_t *re, const char *s, size_t n)
{
    char *copy = malloc(n + 1);
    if (!copy)
        return -1;
    memcpy(copy, s, n);
    copy[n] = '\0';
    regmatch_t m[1] = {{.rm_so = 0, .rm_eo = (regoff_t)n}};
    int ok = regexec(re, copy, 1, m, REG_STARTEND) == 0 && m[0].rm_so == 0 &&
             (size_t)m[0].rm_eo == n;
    free(copy);
    return ok;
}

static int format_score(void *state, const tern_reward_item *items, tern_reward_result *res,
                        size_t n)
{
    const format_state *st = state;
    if (!st || (n && (!items || !res)))
        return host->fail(NULL, TERN_EINVAL, "format: score() called without its arrays");
    for (size_t i = 0; i < n; i++) {
        const tern_reward_item *it = &items[i];
        tern_reward_result *r = &res[i];
        int ok = 0;
        if (!it->response || it->response_len == 0) {
            snprintf(r->reason, sizeof r->reason, "empty response");
        } else if (st->max_bytes > 0 && it->response_len > (uint64_t)st->max_bytes) {
            snprintf(r->reason, sizeof r->reason, "%zu bytes, more than max_bytes (%lld): not "
                     "checked", it->response_len, (long long)st->max_bytes);
        } else {
            ok = st->use_regex ? regex_whole(&st->re, it->response, it->response_len)
                               : template_match(&st->tpl, it->response, it->response_len,
                                                st->nonempty);
            if (ok < 0)
                return host->fail(NULL, TERN_ENOMEM, "format: out of memory copying a "
                                  "%zu-byte response", it->response_len);
            /* the template is the user's own text: quote at most 100 bytes */
            snprintf(r->reason, sizeof r->reason, "%s the %s %.100s",
                     ok ? "matches" : "does not match", st->use_regex ? "regex" : "template",
                     st->shown);
        }
        r->reward = ok ? st->match_reward : st->miss_reward;
        r->components[0] = (tern_reward_component){st->component, ok ? 1.0 : 0.0};
        r->n_components = 1;
    }
    return TERN_OK;
}

static const tern_reward_ops format_ops = {
    .size = sizeof format_ops,
    .create = format_create,
    .destroy = format_destroy,
    .score = format_score,
};

static const tern_setting_spec format_settings[] = {
    TERN_SETTING(.name = "template", .type = TERN_SETTING_STRING,
                 .doc = "the shape of a response: literal text, \"...\" for any text, "
                        "whitespace flexible (default \"" DEFAULT_TEMPLATE "\")"),
    TERN_SETTING(.name = "regex", .type = TERN_SETTING_STRING,
                 .doc = "instead of template: a POSIX extended regular expression the whole "
                        "response must match"),
    TERN_SETTING(.name = "nonempty", .type = TERN_SETTING_BOOL, .def = "true",
                 .doc = "each \"...\" of the template must hold some non-whitespace text"),
    TERN_SETTING(.name = "reward", .type = TERN_SETTING_FLOAT, .def = "1.0", .min = -1e6,
                 .max = 1e6, .doc = "the reward of a response that matches"),
    TERN_SETTING(.name = "miss_reward", .type = TERN_SETTING_FLOAT, .def = "0.0", .min = -1e6,
                 .max = 1e6, .doc = "the reward of a response that does not"),
    TERN_SETTING(.name = "component", .type = TERN_SETTING_STRING, .def = "\"format\"",
                 .doc = "the name of the 1/0 component in the metrics"),
    TERN_SETTING(.name = "max_bytes", .type = TERN_SETTING_INT, .def = "1048576", .min = 0,
                 .max = 1073741824,
                 .doc = "longer responses are not checked and score miss_reward (0: no limit)"),
    TERN_SETTINGS_END,
};

static const tern_plugin_descriptor format_descriptor = {
    .size = sizeof format_descriptor,
    .abi_major = TERN_ABI_MAJOR,
    .abi_minor = TERN_ABI_MINOR,
    .kind = TERN_KIND_REWARD,
    .name = "format",
    .version = "1.0.0",
    .summary = "format reward: the response has the asked shape (template or regex)",
    .caps = TERN_CAP_THREAD_SAFE,
    .ops = &format_ops,
    .settings = format_settings,
};

TERN_PLUGIN_EXPORT const tern_plugin_descriptor *tern_plugin_entry(const tern_host *h)
{
    host = h;
    return &format_descriptor;
}
