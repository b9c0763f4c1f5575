/* k12.c: the `k12` reward plugin: descriptor, settings, and reading each
 * task's fields for the verdict, which judge.c gives; the user's guide is
 * docs/rewards.md.
 *
 * The plugin keeps no mutable state: an instance is its settings, and
 * score() works on the caller's stack and its own allocations only, so it is
 * reentrant and the descriptor says TERN_CAP_THREAD_SAFE. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tern/plugin.h>
#include <tern/reward.h>

#include "../common/reward_plugin.h"
#include "extract.h"
#include "judge.h"

static const tern_host *host;

typedef struct k12_state {
    tern_ctx *ctx;
    const char *answer_field; /* the setting strings are the host's until destroy() */
    const char *type_field;
    const char *options_field;
    const char *partial_credit_field;
    k12_rules rules;
} k12_state;

/* ---- one response ---------------------------------------------------------- */

/* A task's value quoted in a reason: short and printable ASCII. */
static void printable(char *dst, size_t cap, const char *value)
{
    snprintf(dst, cap, "%s", value);
    for (char *p = dst; *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7F)
            *p = '?';
}

/* A field that is there but holds no string (a number, a list): the task
 * means something the plugin cannot read. */
static int present_not_string(const tern_task *task, const char *field)
{
    if (!task || !field[0] || host->task_string(task, field))
        return 0;
    char *json = host->task_json(task, field);
    int there = json && strcmp(json, "null") != 0;
    host->free(json);
    return there;
}

static void fill(tern_reward_result *r, double reward, int accuracy, int format)
{
    r->reward = reward;
    r->n_components = 2;
    r->components[0] = (tern_reward_component){.name = "accuracy", .value = accuracy};
    r->components[1] = (tern_reward_component){.name = "format", .value = format};
}

static int score_one(const void *state, const tern_reward_item *item, tern_reward_result *r)
{
    const k12_state *st = state;
    const tern_task *task = item->task;
    const char *response = item->response;
    size_t len = response ? item->response_len : 0;
    k12_question q = {.answer_field = st->answer_field};
    k12_rules rules = st->rules;
    char value[48];

    /* The question kind, and a per-task partial-credit rule, when given. A
     * task that names neither well is at fault, not the response: reward 0,
     * and the format judged all the same. */
    const char *type = task ? host->task_string(task, st->type_field) : NULL;
    const char *partial = task && st->partial_credit_field[0]
                              ? host->task_string(task, st->partial_credit_field)
                              : NULL;
    int bad_type =
        type ? !k12_kind_parse(type, &q.kind) : present_not_string(task, st->type_field);
    int bad_partial = partial ? !k12_partial_parse(partial, &rules.partial)
                              : present_not_string(task, st->partial_credit_field);
    if (bad_type || bad_partial) {
        k12_span span;
        k12_extract(response, len, rules.last_line, &span);
        fill(r, 0, 0, span.form == K12_FORM_BOXED || span.form == K12_FORM_STATED);
        if (bad_type && !type) {
            snprintf(r->reason, sizeof r->reason, "task field '%s' is not a string",
                     st->type_field);
        } else if (bad_type) {
            printable(value, sizeof value, type);
            snprintf(r->reason, sizeof r->reason,
                     "task field '%s' names no question kind: '%s' (choice, true_false, blank "
                     "or numeric)", st->type_field, value);
        } else if (!partial) {
            snprintf(r->reason, sizeof r->reason, "task field '%s' is not a string",
                     st->partial_credit_field);
        } else {
            printable(value, sizeof value, partial);
            snprintf(r->reason, sizeof r->reason,
                     "task field '%s' must be none, half_for_subset or fraction, not '%s'",
                     st->partial_credit_field, value);
        }
        return TERN_OK;
    }

    /* The gold answer: a string, or the JSON text of a number, boolean or list. */
    char *gold_json = NULL, *options_json = NULL;
    q.gold = task ? host->task_string(task, st->answer_field) : NULL;
    if (q.gold)
        q.gold_len = strlen(q.gold);
    else if (task && (gold_json = host->task_json(task, st->answer_field)) != NULL) {
        q.gold = gold_json;
        q.gold_len = strlen(gold_json);
        q.gold_json = 1;
    }
    if (task && (options_json = host->task_json(task, st->options_field)) != NULL) {
        q.options = options_json;
        q.options_len = strlen(options_json);
    }
    k12_verdict v;
    int rc = k12_judge(&rules, &q, response, len, &v);
    host->free(gold_json);
    host->free(options_json);
    if (rc != K12_OK)
        return host->fail(st->ctx, TERN_ENOMEM, "k12: out of memory judging a response");
    fill(r, v.reward, v.accuracy, v.format);
    memcpy(r->reason, v.reason, sizeof r->reason);
    return TERN_OK;
}

static int k12_score(void *state, const tern_reward_item *items, tern_reward_result *results,
                     size_t n)
{
    const k12_state *st = state;
    return reward_score_each(host, st->ctx, "k12", st, score_one, items, results, n, NULL);
}

/* ---- Instance ---------------------------------------------------------------- */

static int k12_create(tern_ctx *ctx, void **state)
{
    *state = NULL;
    k12_state s = {.ctx = ctx};
    const char *partial = NULL;
    /* The core checked and defaulted every key; a failure here is the core's
     * and it left the message. */
    int rc = host->get_string(ctx, "answer_field", &s.answer_field);
    if (rc == TERN_OK)
        rc = host->get_string(ctx, "type_field", &s.type_field);
    if (rc == TERN_OK)
        rc = host->get_string(ctx, "options_field", &s.options_field);
    if (rc == TERN_OK)
        rc = host->get_string(ctx, "partial_credit", &partial);
    if (rc == TERN_OK)
        rc = host->get_string(ctx, "partial_credit_field", &s.partial_credit_field);
    if (rc == TERN_OK)
        rc = host->get_float(ctx, "rel_tol", &s.rules.rel_tol);
    if (rc == TERN_OK)
        rc = host->get_float(ctx, "abs_tol", &s.rules.abs_tol);
    if (rc == TERN_OK)
        rc = host->get_bool(ctx, "require_unit", &s.rules.require_unit);
    if (rc == TERN_OK)
        rc = host->get_bool(ctx, "fallback_last_line", &s.rules.last_line);
    if (rc != TERN_OK)
        return rc;
    static const char *const fields[] = {"answer_field", "type_field", "options_field"};
    const char *values[] = {s.answer_field, s.type_field, s.options_field};
    for (int k = 0; k < 3; k++)
        if (!values[k][0])
            return host->setting_error(ctx, fields[k],
                                       "must name a task field, e.g. \"%s\"",
                                       k == 0 ? "answer" : k == 1 ? "type" : "options");
    if (!k12_partial_parse(partial, &s.rules.partial)) /* the spec's choices say it can't */
        return host->setting_error(ctx, "partial_credit",
                                   "must be \"none\", \"half_for_subset\" or \"fraction\"");
    if ((rc = reward_keep_state(host, ctx, "k12", &s, sizeof s, state)) != TERN_OK)
        return rc;
    host->log(ctx, TERN_LOG_DEBUG,
              "gold from '%s', kind from '%s', options from '%s', partial credit %s",
              s.answer_field, s.type_field, s.options_field, partial);
    return TERN_OK;
}

static void k12_destroy(void *state) { free(state); }

/* ---- Descriptor ---------------------------------------------------------------- */

static const tern_setting_spec settings[] = {
    TERN_SETTING(.name = "answer_field", .type = TERN_SETTING_STRING, .def = "\"answer\"",
                 .aka = "gold_field|answer_key|field",
                 .doc = "task field holding the gold answer: a string ('|' between acceptable "
                        "answers), number, boolean or list; dotted paths reach nested fields"),
    TERN_SETTING(.name = "type_field", .type = TERN_SETTING_STRING, .def = "\"type\"",
                 .aka = "kind_field|question_type",
                 .doc = "task field naming the question kind (choice, true_false, blank, "
                        "numeric); without it the kind is inferred from the gold answer"),
    TERN_SETTING(.name = "options_field", .type = TERN_SETTING_STRING, .def = "\"options\"",
                 .aka = "choices_field",
                 .doc = "task field holding a choice question's option texts (list, or object "
                        "keyed A-H), so an answer may name an option by its text"),
    TERN_SETTING(.name = "partial_credit", .type = TERN_SETTING_STRING, .def = "\"none\"",
                 .choices = "none|half_for_subset|fraction", .aka = "partial",
                 .doc = "multi-select credit for a proper subset of the right options with no "
                        "wrong one: none 0, half_for_subset 0.5, fraction |chosen|/|right|"),
    TERN_SETTING(.name = "partial_credit_field", .type = TERN_SETTING_STRING,
                 .def = "\"partial_credit\"",
                 .doc = "task field that overrides partial_credit for its task; \"\" to ignore "
                        "tasks"),
    TERN_SETTING(.name = "rel_tol", .type = TERN_SETTING_FLOAT, .def = "1e-6", .min = 0,
                 .max = 1, .aka = "rtol|relative_tolerance",
                 .doc = "numeric answers: relative tolerance, of the gold value"),
    TERN_SETTING(.name = "abs_tol", .type = TERN_SETTING_FLOAT, .def = "1e-9", .min = 0,
                 .max = 1e300, .aka = "atol|absolute_tolerance|tolerance",
                 .doc = "numeric answers: absolute tolerance, in the gold answer's unit"),
    TERN_SETTING(.name = "require_unit", .type = TERN_SETTING_BOOL, .def = "false",
                 .doc = "numeric answers: a bare number is wrong when the gold answer has a unit"),
    TERN_SETTING(.name = "fallback_last_line", .type = TERN_SETTING_BOOL, .def = "true",
                 .aka = "last_line|fallback",
                 .doc = "with no \\boxed{} or answer statement in a response, judge its last "
                        "line"),
    TERN_SETTINGS_END};

static const tern_reward_ops ops = {
    .size = sizeof ops,
    .create = k12_create,
    .destroy = k12_destroy,
    .score = k12_score,
};

static const tern_plugin_descriptor descriptor = {
    .size = sizeof descriptor,
    .abi_major = TERN_ABI_MAJOR,
    .abi_minor = TERN_ABI_MINOR,
    .kind = TERN_KIND_REWARD,
    .name = "k12",
    .version = "1.0.0",
    .summary = "school exam questions: choice, true/false, fill-in-the-blank and numeric "
               "answers, English and Chinese",
    .caps = TERN_CAP_THREAD_SAFE,
    .ops = &ops,
    .settings = settings,
};

TERN_PLUGIN_EXPORT const tern_plugin_descriptor *tern_plugin_entry(const tern_host *h)
{
    host = h;
    return &descriptor;
}
