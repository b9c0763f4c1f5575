/* countdown.c: the `countdown` reward plugin: a Countdown-style puzzle, "make
 * the target from these numbers with + - * / and parentheses". The response
 * is right when its expression uses the puzzle's numbers (each as often as
 * given; all of them unless use_all is false) and is worth exactly the
 * target. Many answers are right for one puzzle, which is what a verifier
 * rewards and a single demonstration cannot teach. The user's guide is
 * docs/rewards.md; the expression's grammar is countdown_expr.h.
 *
 * An instance is its settings, read-only after create(): score() is
 * reentrant, and the descriptor says TERN_CAP_THREAD_SAFE. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tern/plugin.h>
#include <tern/reward.h>

#include "../common/reward_plugin.h"
#include "../common/reward_text.h"
#include "countdown_expr.h"

static const tern_host *host;

typedef struct countdown_state {
    tern_ctx *ctx;
    const char *numbers_field, *target_field; /* owned by the host until destroy() */
    int use_all;
    double format_reward;
} countdown_state;

/* Bytes of an answer quoted in a reason (TERN_REWARD_REASON_MAX is 160). */
#define EXCERPT_MAX 40
/* The largest target read exactly from a JSON number (a double). */
#define TARGET_MAX 9007199254740992.0 /* 2^53 */

/* ---- The puzzle ------------------------------------------------------------ */

typedef struct puzzle {
    int64_t target;
    size_t n;
    int64_t numbers[COUNTDOWN_MAX_NUMBERS];
} puzzle;

/* The JSON array of whole numbers `json` ("[3,5,8]") into p->numbers: 1, or 0
 * when it is not one (or holds more than COUNTDOWN_MAX_NUMBERS). */
static int parse_numbers(const char *json, puzzle *p)
{
    const char *s = json;
    if (*s++ != '[')
        return 0;
    p->n = 0;
    if (*s == ']')
        return s[1] == '\0';
    for (;;) {
        if (*s < '0' || *s > '9' || p->n == COUNTDOWN_MAX_NUMBERS)
            return 0;
        int64_t x = 0;
        int digits = 0;
        while (*s >= '0' && *s <= '9') {
            if (++digits > 18)
                return 0;
            x = x * 10 + (*s++ - '0');
        }
        p->numbers[p->n++] = x;
        if (*s == ']')
            return s[1] == '\0';
        if (*s++ != ',')
            return 0;
    }
}

/* The task's puzzle into *p: 1, or 0 with the reason why there is none. */
static int read_puzzle(const countdown_state *st, const tern_task *task, puzzle *p, char *why,
                       size_t cap)
{
    double t = 0;
    int rc = task ? host->task_number(task, st->target_field, &t) : TERN_ENOTFOUND;
    if (rc == TERN_ENOTFOUND) {
        snprintf(why, cap, "task has no target field '%s'", st->target_field);
        return 0;
    }
    if (rc != TERN_OK || !(fabs(t) <= TARGET_MAX) || t != floor(t)) {
        snprintf(why, cap, "task field '%s' is not a whole number (at most 2^53)",
                 st->target_field);
        return 0;
    }
    p->target = (int64_t)t;
    char *json = host->task_json(task, st->numbers_field);
    if (!json) {
        snprintf(why, cap, "task has no numbers field '%s'", st->numbers_field);
        return 0;
    }
    int ok = parse_numbers(json, p);
    host->free(json);
    if (!ok) {
        snprintf(why, cap, "task field '%s' is not an array of at most %d whole numbers >= 0 "
                 "(e.g. [3,5,8])", st->numbers_field, COUNTDOWN_MAX_NUMBERS);
        return 0;
    }
    if (p->n == 0) {
        snprintf(why, cap, "task field '%s' is an empty array", st->numbers_field);
        return 0;
    }
    return 1;
}

/* ---- The answer ---------------------------------------------------------------- */

/* Where the answer is in s[0..len): inside the last <answer>...</answer> when
 * there is an "<answer>" (to the end if it is not closed), else all of it. */
static void find_answer(const char *s, size_t len, const char **a, size_t *alen)
{
    static const char open[] = "<answer>", close[] = "</answer>";
    const size_t no = sizeof open - 1, nc = sizeof close - 1;
    const char *start = NULL;
    for (size_t i = 0; i + no <= len; i++)
        if (memcmp(s + i, open, no) == 0)
            start = s + i + no;
    if (!start) {
        *a = s;
        *alen = len;
        return;
    }
    size_t rest = len - (size_t)(start - s), n = rest;
    for (size_t i = 0; i + nc <= rest; i++)
        if (memcmp(start + i, close, nc) == 0) {
            n = i;
            break;
        }
    *a = start;
    *alen = n;
}

/* The numbers the expression used against the puzzle's: 1 when they obey
 * the rules, else 0 with the reason. */
static int check_numbers(const countdown_state *st, const puzzle *p, const countdown_expr *e,
                         char *why, size_t cap)
{
    int taken[COUNTDOWN_MAX_NUMBERS] = {0};
    for (size_t i = 0; i < e->n_numbers; i++) {
        size_t j = 0, seen = 0;
        for (; j < p->n; j++) {
            if (p->numbers[j] != e->numbers[i])
                continue;
            seen++;
            if (!taken[j])
                break;
        }
        if (j == p->n) {
            if (seen)
                snprintf(why, cap, "uses %lld more often than the puzzle gives it (%zu time%s)",
                         (long long)e->numbers[i], seen, seen == 1 ? "" : "s");
            else
                snprintf(why, cap, "uses %lld, which is not one of the puzzle's numbers",
                         (long long)e->numbers[i]);
            return 0;
        }
        taken[j] = 1;
    }
    if (st->use_all)
        for (size_t j = 0; j < p->n; j++)
            if (!taken[j]) {
                snprintf(why, cap, "does not use %lld (use_all: every number, once each)",
                         (long long)p->numbers[j]);
                return 0;
            }
    return 1;
}

static void value_text(const countdown_expr *e, char *buf, size_t cap)
{
    if (e->den == 1)
        snprintf(buf, cap, "%lld", (long long)e->num);
    else
        snprintf(buf, cap, "%lld/%lld", (long long)e->num, (long long)e->den);
}

/* ---- Scoring ----------------------------------------------------------------------- */

static int score_one(const void *state, const tern_reward_item *item, tern_reward_result *r)
{
    const countdown_state *st = state;
    const char *resp = item->response ? item->response : "";
    size_t len = item->response ? item->response_len : 0;
    int format = 0, correct = 0;
    puzzle p;
    if (read_puzzle(st, item->task, &p, r->reason, sizeof r->reason)) {
        const char *a;
        size_t alen;
        find_answer(resp, len, &a, &alen);
        /* an optional "= N" after the expression states its value */
        size_t elen = alen;
        const char *eq = NULL;
        for (size_t i = alen; i-- > 0;)
            if (a[i] == '=') {
                eq = a + i;
                elen = i;
                break;
            }
        char got[EXCERPT_MAX + 4], val[48], why[TERN_REWARD_REASON_MAX];
        char text[3 * TERN_REWARD_REASON_MAX];
        reward_excerpt(got, sizeof got, a, elen, EXCERPT_MAX);
        countdown_expr e, stated;
        countdown_expr_status s = countdown_expr_eval(a, elen, &e);
        if (s == COUNTDOWN_EXPR_EMPTY) {
            snprintf(text, sizeof text, "no expression found");
        } else if (s == COUNTDOWN_EXPR_SYNTAX) {
            snprintf(text, sizeof text, "'%s' is not an expression of numbers, + - * / "
                     "and parentheses (at byte %zu)", got, e.at + 1);
        } else if (s != COUNTDOWN_EXPR_OK) {
            snprintf(text, sizeof text, "'%s' has %s", got,
                     countdown_expr_status_text(s));
        } else if (!check_numbers(st, &p, &e, why, sizeof why)) {
            snprintf(text, sizeof text, "'%s' %s", got, why);
        } else if (eq && (countdown_expr_eval(eq + 1, alen - elen - 1, &stated) !=
                              COUNTDOWN_EXPR_OK ||
                          stated.num != e.num || stated.den != e.den)) {
            value_text(&e, val, sizeof val);
            snprintf(text, sizeof text, "'%s' is %s, not what follows its '='", got,
                     val);
        } else {
            format = 1;
            correct = e.den == 1 && e.num == p.target;
            value_text(&e, val, sizeof val);
            if (correct)
                snprintf(text, sizeof text, "'%s' = %s, the target", got, val);
            else
                snprintf(text, sizeof text, "'%s' = %s, not the target %lld", got, val,
                         (long long)p.target);
        }
        reward_set_reason(r->reason, sizeof r->reason, text);
    }
    r->reward = correct ? 1.0 : format ? st->format_reward : 0.0;
    r->n_components = 2;
    r->components[0] = (tern_reward_component){.name = "accuracy", .value = correct};
    r->components[1] = (tern_reward_component){.name = "format", .value = format};
    return TERN_OK;
}

static int countdown_score(void *state, const tern_reward_item *items,
                           tern_reward_result *results, size_t n)
{
    const countdown_state *st = state;
    return reward_score_each(host, st ? st->ctx : NULL, "countdown", st, score_one, items,
                             results, n, NULL);
}

/* ---- Instance ------------------------------------------------------------------------- */

static int countdown_create(tern_ctx *ctx, void **state)
{
    countdown_state st = {.ctx = ctx};
    host->get_string(ctx, "numbers_field", &st.numbers_field);
    host->get_string(ctx, "target_field", &st.target_field);
    host->get_bool(ctx, "use_all", &st.use_all);
    host->get_float(ctx, "format_reward", &st.format_reward);
    if (!*st.numbers_field)
        return host->setting_error(ctx, "numbers_field", "is empty: name the task field that "
                                   "holds the puzzle's numbers (default \"numbers\")");
    if (!*st.target_field)
        return host->setting_error(ctx, "target_field", "is empty: name the task field that "
                                   "holds the target (default \"target\")");
    return reward_keep_state(host, ctx, "countdown", &st, sizeof st, state);
}

static void countdown_destroy(void *state) { free(state); }

static const tern_reward_ops countdown_ops = {
    .size = sizeof countdown_ops,
    .create = countdown_create,
    .destroy = countdown_destroy,
    .score = countdown_score,
};

static const tern_setting_spec countdown_settings[] = {
    TERN_SETTING(.name = "numbers_field", .type = TERN_SETTING_STRING, .def = "\"numbers\"",
                 .doc = "the task field holding the puzzle's numbers, a JSON array of whole "
                        "numbers >= 0"),
    TERN_SETTING(.name = "target_field", .type = TERN_SETTING_STRING, .def = "\"target\"",
                 .doc = "the task field holding the target, a whole number"),
    TERN_SETTING(.name = "use_all", .type = TERN_SETTING_BOOL, .def = "true",
                 .doc = "every number must be used, once each (false: each at most as often "
                        "as given)"),
    TERN_SETTING(.name = "format_reward", .type = TERN_SETTING_FLOAT, .def = "0.0", .min = 0,
                 .max = 1, .doc = "the reward of a well-formed answer that obeys the rules but "
                 "misses the target (a right one scores 1)"),
    TERN_SETTINGS_END,
};

static const tern_plugin_descriptor countdown_descriptor = {
    .size = sizeof countdown_descriptor,
    .abi_major = TERN_ABI_MAJOR,
    .abi_minor = TERN_ABI_MINOR,
    .kind = TERN_KIND_REWARD,
    .name = "countdown",
    .version = "1.0.0",
    .summary = "countdown reward: an expression that makes the target from the given numbers",
    .caps = TERN_CAP_THREAD_SAFE,
    .ops = &countdown_ops,
    .settings = countdown_settings,
};

TERN_PLUGIN_EXPORT const tern_plugin_descriptor *tern_plugin_entry(const tern_host *h)
{
    host = h;
    return &countdown_descriptor;
}
