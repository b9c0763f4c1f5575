/* math.c: the `math` reward plugin: descriptor, settings, and the verdict on
 * each response of a batch. Finding the answer is in extract.c, judging it
 * against the gold answer in equiv.c (and the files it names); the user's
 * guide is docs/rewards.md.
 *
 * The plugin keeps no mutable state: an instance is its settings, and
 * score() works on the caller's stack and on blocks it frees before
 * returning, so it is reentrant and the descriptor says TERN_CAP_THREAD_SAFE.
 * The random points of a comparison are a function of the variable names
 * (equiv.c), never of a shared generator. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tern/plugin.h>
#include <tern/reward.h>

#include "../common/reward_plugin.h"
#include "../common/reward_text.h"
#include "ascii.h"
#include "equiv.h"
#include "expr.h"
#include "extract.h"
#include "number.h"

static const tern_host *host;

typedef struct math_state {
    tern_ctx *ctx;
    const char *answer_field; /* owned by the host until destroy() */
    int fallback_last_number;
    math_form forms[MATH_N_FORMS]; /* the answer forms, in the order tried */
    size_t n_forms;
    math_opts opts;
} math_state;

/* Bytes of an answer quoted in a reason: two quotes and the words around them
 * fit TERN_REWARD_REASON_MAX (160). */
#define EXCERPT_MAX 40
/* A JSON number written out without exponent: "%.0f" of 1.8e308 is 309
 * digits, the smallest subnormal needs 324 places after "0.". */
#define NUMBER_TEXT_MAX 400

/* ---- Reasons ------------------------------------------------------------- */

/* ---- The gold answer -------------------------------------------------------- */

/* The JSON number at `field` as text number.c reads exactly: the integer
 * literal itself when the task holds one (a double rounds integers past
 * 2^53), else the fewest digits that read back as v, written without an
 * exponent ("0.1", not "0.10000000000000001" or "1e-01"). */
static void number_text(const tern_task *task, const char *field, double v, char *buf, size_t cap)
{
    char *json = host->task_json(task, field);
    if (json) {
        size_t n = strlen(json), k = json[0] == '-';
        int integer = n > k && n < cap;
        for (size_t i = k; integer && i < n; i++)
            integer = json[i] >= '0' && json[i] <= '9';
        if (integer)
            memcpy(buf, json, n + 1);
        host->free(json);
        if (integer)
            return;
    }
    char e[40];
    int p = 0;
    do {
        p++;
        snprintf(e, sizeof e, "%.*e", p - 1, v);
    } while (p < 17 && strtod(e, NULL) != v);
    const char *x = strchr(e, 'e');
    int places = p - 1 - (x ? atoi(x + 1) : 0);
    snprintf(buf, cap, "%.*f", places > 0 ? places : 0, v);
}

typedef struct gold {
    const char *text; /* into the task, `number` or `joined` */
    size_t len;
    char number[NUMBER_TEXT_MAX];
    char joined[MATH_JOINED_MAX]; /* a gold of several boxes, as a list */
} gold;

/* The task's gold answer into *g: 1, or 0 with the reason why there is none. */
static int read_gold(const math_state *st, const tern_task *task, gold *g, char *why, size_t cap)
{
    const char *field = st->answer_field;
    const char *s = task ? host->task_string(task, field) : NULL;
    if (s) {
        g->text = s;
        g->len = strlen(s);
    } else {
        double v = 0;
        int rc = task ? host->task_number(task, field, &v) : TERN_ENOTFOUND;
        if (rc == TERN_ENOTFOUND) {
            snprintf(why, cap, "task has no answer field '%s'", field);
            return 0;
        }
        if (rc != TERN_OK || !isfinite(v)) {
            snprintf(why, cap, "task field '%s' is not a string or a number", field);
            return 0;
        }
        number_text(task, field, v, g->number, sizeof g->number);
        g->text = g->number;
        g->len = strlen(g->number);
    }
    /* A worked solution as gold (GSM8K's "... #### 72", MATH's "...
     * \boxed{5}", "... The final answer is $15\%$") stands for its final
     * answer. */
    math_answer a;
    if (math_extract_gold(g->text, g->len, &a)) {
        g->text = a.text;
        g->len = a.len;
        if (a.text == a.joined) { /* boxes joined: keep the list */
            memcpy(g->joined, a.joined, a.len);
            g->text = g->joined;
        }
    } else
        math_answer_clean(&g->text, &g->len);
    if (!g->len) {
        snprintf(why, cap, "task field '%s' is empty", field);
        return 0;
    }
    return 1;
}

/* ---- Scoring ------------------------------------------------------------------ */

static int all_space(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (!math_is_space(s[i]))
            return 0;
    return 1;
}

static int score_one(const void *state, const tern_reward_item *item, tern_reward_result *r)
{
    const math_state *st = state;
    const char *resp = item->response;
    size_t len = resp ? item->response_len : 0;
    math_answer a;
    math_extract(resp, len, st->forms, st->n_forms, &a);
    int format = (a.form & MATH_FORMS_EXPLICIT) != 0, correct = 0;

    gold g;
    if (!read_gold(st, item->task, &g, r->reason, sizeof r->reason)) {
        /* the reason is written */
    } else if (all_space(resp, len)) {
        snprintf(r->reason, sizeof r->reason, "empty response");
    } else if (a.form == MATH_FORM_NONE) {
        snprintf(r->reason, sizeof r->reason, "no answer found%s",
                 st->fallback_last_number ? "" : " (fallback_last_number is off)");
    } else {
        math_verdict v;
        if (math_equivalent(a.text, a.len, g.text, g.len, &st->opts, &v) != 0)
            return host->fail(st->ctx, TERN_ENOMEM, "math: out of memory comparing answers");
        correct = v.equal;
        char got[EXCERPT_MAX + 4], want[EXCERPT_MAX + 4], text[3 * TERN_REWARD_REASON_MAX];
        reward_excerpt(got, sizeof got, a.text, a.len, EXCERPT_MAX);
        reward_excerpt(want, sizeof want, g.text, g.len, EXCERPT_MAX);
        if (correct)
            snprintf(text, sizeof text, "%s %s equals gold %s%s%s%s", math_form_label(a.form), got,
                     want, v.note[0] ? " (" : "", v.note, v.note[0] ? ")" : "");
        else
            snprintf(text, sizeof text, "extracted %s (%s), gold %s%s%s%s%s", got,
                     math_form_label(a.form), want, v.note[0] ? "; " : "", v.note,
                     v.why ? ": " : "", v.why ? v.why : "");
        reward_set_reason(r->reason, sizeof r->reason, text);
    }
    r->reward = correct ? 1.0 : 0.0;
    r->n_components = 2;
    r->components[0] = (tern_reward_component){.name = "accuracy", .value = correct};
    r->components[1] = (tern_reward_component){.name = "format", .value = format};
    return TERN_OK;
}

static int math_score(void *state, const tern_reward_item *items, tern_reward_result *results,
                      size_t n)
{
    const math_state *st = state;
    return reward_score_each(host, st->ctx, "math", st, score_one, items, results, n, NULL);
}

/* ---- Instance ------------------------------------------------------------------- */

/* The answer forms in the order tried: `answer_forms` when given, else
 * boxed, hashes, answer_is, then final_line, last_math and last_number unless
 * fallback_last_number is off. */
static int read_forms(tern_ctx *ctx, math_state *st)
{
    size_t n = 0;
    int rc = host->get_count(ctx, "answer_forms", &n);
    if (rc != TERN_OK)
        return rc;
    if (n == 0) {
        static const math_form defaults[] = {MATH_FORM_BOXED,      MATH_FORM_HASHES,
                                             MATH_FORM_ANSWER_IS,  MATH_FORM_FINAL_LINE,
                                             MATH_FORM_LAST_MATH, MATH_FORM_LAST_NUMBER};
        st->n_forms = st->fallback_last_number ? 6 : 3;
        memcpy(st->forms, defaults, st->n_forms * sizeof defaults[0]);
        return TERN_OK;
    }
    if (n > MATH_N_FORMS)
        return host->setting_error(ctx, "answer_forms", "names %zu forms; there are only %d", n,
                                   MATH_N_FORMS);
    unsigned seen = 0;
    for (size_t i = 0; i < n; i++) {
        char key[64];
        const char *name = NULL;
        snprintf(key, sizeof key, "answer_forms.%zu", i);
        if ((rc = host->get_string(ctx, key, &name)) != TERN_OK)
            return rc;
        math_form f = math_form_named(name);
        if (f == MATH_FORM_NONE)
            return host->setting_error(ctx, "answer_forms",
                                       "unknown form \"%s\"; the forms are boxed, hashes, "
                                       "answer_is, final_line, last_math and last_number",
                                       name);
        if (seen & f)
            return host->setting_error(ctx, "answer_forms", "names \"%s\" twice", name);
        if (!st->fallback_last_number && (f == MATH_FORM_FINAL_LINE || f == MATH_FORM_LAST_MATH ||
                                          f == MATH_FORM_LAST_NUMBER))
            return host->setting_error(ctx, "answer_forms",
                                       "lists \"%s\" while fallback_last_number is false; drop "
                                       "one of the two",
                                       name);
        seen |= f;
        st->forms[st->n_forms++] = f;
    }
    return TERN_OK;
}

static int math_create(tern_ctx *ctx, void **state)
{
    *state = NULL;
    math_state tmp = {.ctx = ctx};
    const char *percent = NULL;
    int64_t points = 0;
    /* The core checked and defaulted every key; a failure here is the core's
     * and it left the message. */
    int rc = host->get_string(ctx, "answer_field", &tmp.answer_field);
    if (rc == TERN_OK)
        rc = host->get_bool(ctx, "fallback_last_number", &tmp.fallback_last_number);
    if (rc == TERN_OK)
        rc = host->get_float(ctx, "tolerance", &tmp.opts.tolerance);
    if (rc == TERN_OK)
        rc = host->get_int(ctx, "random_points", &points);
    if (rc == TERN_OK)
        rc = host->get_string(ctx, "percent", &percent);
    if (rc != TERN_OK)
        return rc;
    if (!tmp.answer_field[0])
        return host->setting_error(ctx, "answer_field",
                                   "must name the task field holding the gold answer, e.g. "
                                   "\"answer\"");
    tmp.opts.points = (int)points;
    tmp.opts.percent_either = strcmp(percent, "either") == 0;
    if ((rc = read_forms(ctx, &tmp)) != TERN_OK)
        return rc;
    if ((rc = reward_keep_state(host, ctx, "math", &tmp, sizeof tmp, state)) != TERN_OK)
        return rc;
    host->log(ctx, TERN_LOG_DEBUG,
              "gold answers from task field '%s', %zu answer forms, tolerance %g, %d points",
              tmp.answer_field, tmp.n_forms, tmp.opts.tolerance, tmp.opts.points);
    return TERN_OK;
}

static void math_destroy(void *state) { free(state); }

/* ---- Descriptor ------------------------------------------------------------------ */

static const tern_setting_spec settings[] = {
    TERN_SETTING(.name = "answer_field", .type = TERN_SETTING_STRING, .def = "\"answer\"",
                 .aka = "gold_field|answer_key|field",
                 .doc = "task field holding the gold answer; a dotted path reaches nested "
                        "fields (\"meta.answer\")"),
    TERN_SETTING(.name = "fallback_last_number", .type = TERN_SETTING_BOOL, .def = "true",
                 .aka = "last_number|fallback",
                 .doc = "with no \\boxed{}, #### or 'answer is' in a response, judge its final "
                        "line, last maths span or last number"),
    TERN_SETTING(.name = "answer_forms", .type = TERN_SETTING_STRINGS,
                 .aka = "forms|extract|extraction|order",
                 .doc = "answer forms in the order tried: boxed, hashes, answer_is, final_line, "
                        "last_math, last_number (default: all six, the last three only "
                        "with fallback_last_number)"),
    TERN_SETTING(.name = "tolerance", .type = TERN_SETTING_FLOAT, .def = "1e-6", .min = 0,
                 .max = 0.1, .aka = "rel_tol|rtol|tol",
                 .doc = "relative tolerance when either answer is not rational (pi, roots, "
                        "variables); rationals compare exactly"),
    TERN_SETTING(.name = "random_points", .type = TERN_SETTING_INT, .def = "8", .min = 1,
                 .max = MATH_MAX_POINTS, .aka = "points|samples",
                 .doc = "points at which answers with variables are compared"),
    TERN_SETTING(.name = "percent", .type = TERN_SETTING_STRING, .def = "\"either\"",
                 .choices = "either|fraction",
                 .doc = "\"either\": 10% equals 0.1 and 10; \"fraction\": 10% equals 0.1 only"),
    TERN_SETTINGS_END};

static const tern_reward_ops ops = {
    .size = sizeof ops,
    .create = math_create,
    .destroy = math_destroy,
    .score = math_score,
};

static const tern_plugin_descriptor descriptor = {
    .size = sizeof descriptor,
    .abi_major = TERN_ABI_MAJOR,
    .abi_minor = TERN_ABI_MINOR,
    .kind = TERN_KIND_REWARD,
    .name = "math",
    .version = "2.0.0",
    .summary = "final-answer check: \\boxed{}, ####, 'answer is'; numbers, LaTeX, expressions, "
               "sets and intervals",
    .caps = TERN_CAP_THREAD_SAFE,
    .ops = &ops,
    .settings = settings,
};

TERN_PLUGIN_EXPORT const tern_plugin_descriptor *tern_plugin_entry(const tern_host *h)
{
    host = h;
    return &descriptor;
}
