/* format_length.c: an out-of-tree tern reward plugin, built only against an
 * installed tern (README.md says how).
 *
 *   reward = format - length_penalty
 *
 * format is 1 when the response has the tagged layout
 *
 *   <think> ... </think> <answer> non-empty </answer>
 *
 * (whitespace allowed before <think>, between </think> and <answer> and after
 * </answer>, nothing else), 0 otherwise. length_penalty is
 * penalty * min(1, max(0, tokens - max_tokens) / max_tokens), so it grows
 * linearly from 0 at max_tokens to `penalty` at twice max_tokens.
 *
 * The plugin reads only the response (no task fields). It never quotes the
 * response in a reason, so whatever bytes a response holds (invalid UTF-8,
 * NULs) the reason stays plain ASCII. Every scan is bounded by response_len
 * and looks at each byte a fixed number of times: linear time. An instance is
 * immutable after create() and score() works on the caller's stack only, so
 * the plugin is TERN_CAP_THREAD_SAFE. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tern/plugin.h>
#include <tern/reward.h>

static const tern_host *host; /* valid for the life of the process */

/* Longest tag name a setting may give: "</" + name + ">" then fits TAG_MAX
 * and every reason fits TERN_REWARD_REASON_MAX. */
#define TAG_NAME_MAX 32
#define TAG_MAX (TAG_NAME_MAX + 4)

typedef struct tag {
    char text[TAG_MAX]; /* "<think>" */
    size_t len;
} tag;

typedef struct fl_state {
    tern_ctx *ctx;
    tag think_open, think_close, answer_open, answer_close;
    int64_t max_tokens; /* >= 1, checked by the core */
    double penalty;     /* in [0, 1], checked by the core */
} fl_state;

/* ---- Scanning: every function stays inside s[0..n) ------------------------ */

static int is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

/* Index of the first byte of s[from..n) that is not whitespace, or n. */
static size_t skip_space(const char *s, size_t n, size_t from)
{
    while (from < n && is_space((unsigned char)s[from]))
        from++;
    return from;
}

static int starts_with(const char *s, size_t n, size_t at, const tag *t)
{
    return at <= n && n - at >= t->len && memcmp(s + at, t->text, t->len) == 0;
}

/* Index of the first occurrence of `t` in s[from..n), or n when there is none.
 * Each candidate is a '<' (memchr skips the bytes between) compared over at
 * most TAG_MAX bytes, so the scan is linear in n. */
static size_t find(const char *s, size_t n, size_t from, const tag *t)
{
    for (; from < n; from++) {
        if (s[from] != '<') {
            const char *lt = memchr(s + from, '<', n - from);
            if (!lt)
                return n;
            from = (size_t)(lt - s);
        }
        if (starts_with(s, n, from, t))
            return from;
    }
    return n;
}

/* ---- Scoring ---------------------------------------------------------------- */

/* Whether s[0..n) has the layout; 1, or 0 with the reason into why[cap]. */
static int well_formed(const fl_state *st, const char *s, size_t n, char *why, size_t cap)
{
    size_t p = skip_space(s, n, 0);
    if (p == n) {
        snprintf(why, cap, "empty response");
        return 0;
    }
    if (!starts_with(s, n, p, &st->think_open)) {
        size_t t = find(s, n, p, &st->think_open);
        size_t a = find(s, n, p, &st->answer_open);
        if (t == n)
            snprintf(why, cap, "missing %s", st->think_open.text);
        else if (a < t)
            snprintf(why, cap, "wrong order: %s before %s", st->answer_open.text,
                     st->think_open.text);
        else
            snprintf(why, cap, "text before %s", st->think_open.text);
        return 0;
    }
    p += st->think_open.len;
    size_t think_end = find(s, n, p, &st->think_close);
    if (think_end == n) {
        snprintf(why, cap, "missing %s", st->think_close.text);
        return 0;
    }
    p = skip_space(s, n, think_end + st->think_close.len);
    if (!starts_with(s, n, p, &st->answer_open)) {
        if (find(s, n, p, &st->answer_open) == n)
            snprintf(why, cap, "missing %s after %s", st->answer_open.text,
                     st->think_close.text);
        else
            snprintf(why, cap, "text between %s and %s", st->think_close.text,
                     st->answer_open.text);
        return 0;
    }
    size_t answer = p + st->answer_open.len;
    size_t answer_end = find(s, n, answer, &st->answer_close);
    if (answer_end == n) {
        snprintf(why, cap, "missing %s", st->answer_close.text);
        return 0;
    }
    if (skip_space(s, answer_end, answer) == answer_end) {
        snprintf(why, cap, "answer is empty");
        return 0;
    }
    if (skip_space(s, n, answer_end + st->answer_close.len) != n) {
        snprintf(why, cap, "text after %s", st->answer_close.text);
        return 0;
    }
    snprintf(why, cap, "well formed");
    return 1;
}

static void score_one(const fl_state *st, const tern_reward_item *item, tern_reward_result *r)
{
    const char *resp = item->response;
    size_t len = resp ? item->response_len : 0;
    char *why = r->reason;
    double format = well_formed(st, resp, len, why, sizeof r->reason) ? 1.0 : 0.0;

    /* The verdict is at most ~90 bytes (two tags of TAG_MAX and a few words),
     * so the token count always fits after it. */
    size_t o = strlen(why);
    char *rest = why + o;
    size_t cap = sizeof r->reason - o;
    uint32_t tokens = item->response_tokens;
    double penalty = 0;
    if ((int64_t)tokens > st->max_tokens) {
        double over = (double)((int64_t)tokens - st->max_tokens) / (double)st->max_tokens;
        penalty = st->penalty * (over < 1 ? over : 1);
        snprintf(rest, cap, ", %lu tokens > %lld: penalty %.2f", (unsigned long)tokens,
                 (long long)st->max_tokens, penalty);
    } else {
        snprintf(rest, cap, ", %lu token%s <= %lld", (unsigned long)tokens,
                 tokens == 1 ? "" : "s", (long long)st->max_tokens);
    }
    r->reward = format - penalty;
    r->n_components = 2;
    r->components[0] = (tern_reward_component){.name = "format", .value = format};
    r->components[1] = (tern_reward_component){.name = "length_penalty", .value = penalty};
}

static int fl_score(void *state, const tern_reward_item *items, tern_reward_result *results,
                    size_t n)
{
    const fl_state *st = state;
    if (n && (!items || !results))
        return host->fail(st->ctx, TERN_EINVAL,
                          "format_length: score() was given no items or results for %zu "
                          "responses",
                          n);
    for (size_t i = 0; i < n; i++)
        score_one(st, &items[i], &results[i]);
    return TERN_OK;
}

/* ---- Instance ------------------------------------------------------------------ */

/* The tag name of setting `key` into open ("<name>") and close ("</name>"):
 * TERN_OK, or the setting error for a name a tag cannot have. */
static int read_tag(tern_ctx *ctx, const char *key, tag *open, tag *close)
{
    const char *name = NULL;
    int rc = host->get_string(ctx, key, &name);
    if (rc != TERN_OK)
        return rc; /* the core's failure; it left the message */
    size_t n = strlen(name);
    if (n == 0 || n > TAG_NAME_MAX)
        return host->setting_error(ctx, key, "must be a tag name of 1 to %d characters, e.g. "
                                             "\"think\"",
                                   TAG_NAME_MAX);
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.' || c == ':'))
            return host->setting_error(ctx, key,
                                       "'%s' is not a tag name: use letters, digits, '_', "
                                       "'-', '.' or ':', without the angle brackets",
                                       name);
    }
    open->len = (size_t)snprintf(open->text, sizeof open->text, "<%s>", name);
    close->len = (size_t)snprintf(close->text, sizeof close->text, "</%s>", name);
    return TERN_OK;
}

static int fl_create(tern_ctx *ctx, void **state)
{
    *state = NULL;
    fl_state s = {.ctx = ctx};
    /* The core checked types and ranges and filled in defaults. */
    int rc = host->get_int(ctx, "max_tokens", &s.max_tokens);
    if (rc == TERN_OK)
        rc = host->get_float(ctx, "penalty", &s.penalty);
    if (rc == TERN_OK)
        rc = read_tag(ctx, "think_tag", &s.think_open, &s.think_close);
    if (rc == TERN_OK)
        rc = read_tag(ctx, "answer_tag", &s.answer_open, &s.answer_close);
    if (rc != TERN_OK)
        return rc;
    if (s.think_open.len == s.answer_open.len &&
        memcmp(s.think_open.text, s.answer_open.text, s.think_open.len) == 0)
        return host->setting_error(ctx, "answer_tag", "must differ from think_tag ('%.*s')",
                                   (int)(s.think_open.len - 2), s.think_open.text + 1);

    fl_state *st = malloc(sizeof *st);
    if (!st)
        return host->fail(ctx, TERN_ENOMEM, "format_length: out of memory creating the reward");
    *st = s;
    host->log(ctx, TERN_LOG_DEBUG, "layout %s...%s %s...%s, %lld tokens, penalty up to %g",
              s.think_open.text, s.think_close.text, s.answer_open.text, s.answer_close.text,
              (long long)s.max_tokens, s.penalty);
    *state = st;
    return TERN_OK;
}

static void fl_destroy(void *state) { free(state); }

/* ---- Descriptor ------------------------------------------------------------------ */

static const tern_setting_spec settings[] = {
    TERN_SETTING(.name = "max_tokens", .type = TERN_SETTING_INT, .def = "512", .min = 1,
                 .max = 1e6, .aka = "max_length|max_len|token_limit|max_response_tokens",
                 .doc = "response tokens allowed before the length penalty starts"),
    TERN_SETTING(.name = "penalty", .type = TERN_SETTING_FLOAT, .def = "0.5", .min = 0,
                 .max = 1, .aka = "length_penalty|penalty_weight",
                 .doc = "the most the length penalty subtracts, reached at twice max_tokens"),
    TERN_SETTING(.name = "think_tag", .type = TERN_SETTING_STRING, .def = "\"think\"",
                 .aka = "reasoning_tag|thinking_tag",
                 .doc = "name of the tag around the reasoning, without angle brackets"),
    TERN_SETTING(.name = "answer_tag", .type = TERN_SETTING_STRING, .def = "\"answer\"",
                 .aka = "final_tag|solution_tag",
                 .doc = "name of the tag around the final answer, without angle brackets"),
    TERN_SETTINGS_END,
};

static const tern_reward_ops ops = {
    .size = sizeof ops,
    .create = fl_create,
    .destroy = fl_destroy,
    .score = fl_score,
};

static const tern_plugin_descriptor descriptor = {
    .size = sizeof descriptor,
    .abi_major = TERN_ABI_MAJOR,
    .abi_minor = TERN_ABI_MINOR,
    .kind = TERN_KIND_REWARD,
    .name = "format_length",
    .version = "1.0.0",
    .summary = "<think>...</think><answer>...</answer> layout, minus a penalty past max_tokens",
    .caps = TERN_CAP_THREAD_SAFE,
    .ops = &ops,
    .settings = settings,
};

TERN_PLUGIN_EXPORT const tern_plugin_descriptor *tern_plugin_entry(const tern_host *h)
{
    host = h;
    return &descriptor;
}
