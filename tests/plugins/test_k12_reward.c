/* test_k12_reward.c: the `k12` reward plugin through its ops table, started
 * the way a run starts it (harness.h): the corpus tests/corpora/k12.jsonl
 * (every rule, English and Chinese, with its exact reward); components and
 * reasons; tasks without a usable gold answer; every setting; hostile
 * responses (megabytes of digits, letters and markers, unbalanced braces,
 * invalid UTF-8, NULs, bytes past response_len); batches and concurrent
 * callers. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corpus.h"
#include "base/errmsg.h"
#include "harness.h"
#include "reward_case.h"
#include "data/task.h"
#include "tern/reward.h"

#define CORPUS TERN_TEST_SOURCE_DIR "/tests/corpora/k12.jsonl"

/* ---- helpers ------------------------------------------------------------ */

static const tern_reward_ops *open_k12(harness *h, const char *settings)
{
    int rc = harness_open(h, "k12", TERN_KIND_REWARD, settings);
    cr_assert_eq(rc, TERN_OK, "harness_open(\"%s\"): %s", settings, h->error);
    return harness_ops(h);
}

static tern_reward_result score_text(const harness *h, const tern_task *task, const char *response)
{
    return reward_score_bytes(h, task, response, strlen(response));
}

/* Scores `response` against the task `task_json`. */
static tern_reward_result judge(const harness *h, const char *task_json, const char *response)
{
    tern_task *t = reward_task_of(task_json);
    tern_reward_result r = score_text(h, t, response);
    tern_task_free(t);
    return r;
}

/* Length of the valid UTF-8 sequence at s, 0 if invalid. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    if (s[0] < 0x80)
        return 1;
    size_t len = s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC2 ? 2 : 0;
    if (!len || len > n)
        return 0;
    for (size_t k = 1; k < len; k++)
        if ((s[k] & 0xC0) != 0x80)
            return 0;
    return len;
}

/* Reasons are stored in JSON by the core: ended, non-empty, valid UTF-8 with
 * no control characters. */
static void assert_reason_clean(const tern_reward_result *r)
{
    size_t n = strnlen(r->reason, sizeof r->reason);
    cr_assert_lt(n, sizeof r->reason, "reason is not NUL-terminated");
    cr_assert_gt(n, 0, "empty reason");
    const unsigned char *u = (const unsigned char *)r->reason;
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq(u + i, n - i);
        cr_assert_gt(k, 0, "reason byte %zu (0x%02x) is not UTF-8: %s", i, u[i], r->reason);
        cr_assert(!(k == 1 && (u[i] < 0x20 || u[i] == 0x7F)), "reason byte %zu is 0x%02x: %s",
                  i, u[i], r->reason);
        cr_assert(!(k == 2 && u[i] == 0xC2 && u[i + 1] < 0xA0), "C1 control in %s", r->reason);
        i += k;
    }
}

/* ---- the corpus ---------------------------------------------------------- */

Test(k12_reward, corpus_verdicts_are_all_right)
{
    harness h;
    open_k12(&h, "");
    corpus_result c;
    int rc = corpus_run(&h, CORPUS, &c);
    cr_assert_eq(rc, TERN_OK, "%s", h.error);
    printf("k12 corpus: %zu/%zu right\n", c.right, c.cases);
    cr_log_info("k12 corpus: %zu/%zu right", c.right, c.cases);
    cr_expect_geq(c.cases, 100);
    cr_expect_eq(c.right, c.cases, "first miss: %s", c.first_wrong);
    harness_close(&h);
}

/* The corpus in memory, for batches and threads. */
typedef struct k12_case {
    tern_task *task;
    const char *response; /* into the task */
    double expect;
} k12_case;

static k12_case *load_corpus(size_t *n)
{
    FILE *f = fopen(CORPUS, "r");
    cr_assert_not_null(f, "%s", CORPUS);
    k12_case *cases = NULL;
    size_t count = 0, cap = 0;
    char *line = NULL;
    size_t line_cap = 0;
    ssize_t len;
    while ((len = getline(&line, &line_cap, f)) > 0) {
        if (strspn(line, " \t\r\n") == (size_t)len)
            continue;
        if (count == cap) {
            cap = cap ? 2 * cap : 64;
            cases = realloc(cases, cap * sizeof *cases);
            cr_assert_not_null(cases);
        }
        k12_case *c = &cases[count++];
        cr_assert_eq(tern_task_parse(line, (size_t)len, CORPUS, &c->task), TERN_OK, "%s",
                     tern_error_message());
        c->response = tern_task_string(c->task, "response");
        cr_assert_not_null(c->response);
        cr_assert_eq(tern_task_number(c->task, "expect", &c->expect), TERN_OK);
    }
    free(line);
    fclose(f);
    *n = count;
    return cases;
}

static void free_corpus(k12_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++)
        tern_task_free(cases[i].task);
    free(cases);
}

static int close_to(double a, double b) { return a - b < 1e-9 && b - a < 1e-9; }

/* ---- components and reasons -------------------------------------------- */

Test(k12_reward, components_and_reasons_say_what_was_judged)
{
    harness h;
    open_k12(&h, "");
    tern_reward_result r = judge(&h, "{\"answer\": \"B\"}", "The answer is (B).");
    cr_assert_eq(r.reward, 1.0);
    cr_assert_eq(r.n_components, 2);
    cr_assert_eq(reward_component(&r, "accuracy"), 1.0);
    cr_assert_eq(reward_component(&r, "format"), 1.0);
    cr_assert_str_eq(r.reason, "choice: stated answer B equals gold B");

    r = judge(&h, "{\"answer\": \"B\"}", "\\boxed{C}");
    cr_assert_eq(r.reward, 0.0);
    cr_assert_eq(reward_component(&r, "format"), 1.0);
    cr_assert_str_eq(r.reason, "choice: boxed answer C, gold B");

    /* the last line judges, but shows no intent to answer: format 0 */
    r = judge(&h, "{\"answer\": \"B\"}", "Let me think.\nB");
    cr_assert_eq(r.reward, 1.0);
    cr_assert_eq(reward_component(&r, "format"), 0.0);
    cr_assert_str_eq(r.reason, "choice: last line B equals gold B");

    r = judge(&h, "{\"answer\": \"B\"}", "No idea, sorry");
    cr_assert_eq(r.reward, 0.0);
    cr_assert_str_eq(r.reason, "choice: last line 'No idea, sorry' is not option letters, gold B");

    r = judge(&h, "{\"answer\": \"ACD\", \"partial_credit\": \"half_for_subset\"}", "答案：AC");
    cr_assert_eq(r.reward, 0.5);
    cr_assert_eq(reward_component(&r, "accuracy"), 0.0, "accuracy is 1 only when fully right");
    cr_assert_eq(reward_component(&r, "format"), 1.0);
    cr_assert_str_eq(r.reason, "choice: stated answer AC, gold ACD: a subset, half credit");

    r = judge(&h, "{\"answer\": \"ACD\", \"partial_credit\": \"fraction\"}", "AC");
    cr_assert(close_to(r.reward, 2.0 / 3.0), "%g", r.reward);
    cr_assert_str_eq(r.reason, "choice: last line AC, gold ACD: a subset, 2 of 3 options");

    r = judge(&h, "{\"answer\": \"ACD\"}", "AC");
    cr_assert_eq(r.reward, 0.0);
    cr_assert_str_eq(r.reason,
                     "choice: last line AC, gold ACD: options missing, no partial credit");

    r = judge(&h, "{\"answer\": \"对\"}", "答案：错");
    cr_assert_str_eq(r.reason, "true_false: stated answer false, gold true");

    r = judge(&h, "{\"answer\": \"5 cm\"}", "The answer is 50 mm.");
    cr_assert_eq(r.reward, 1.0);
    cr_assert_str_eq(r.reason, "numeric: stated answer 50 mm equals gold 5 cm");

    r = judge(&h, "{\"answer\": \"5 cm\"}", "5 kg");
    cr_assert_str_eq(r.reason, "numeric: last line 5 kg, gold 5 cm: the units differ");

    r = judge(&h, "{\"answer\": \"光合作用\"}", "答案是：光合作用。");
    cr_assert_str_eq(r.reason, "blank: stated answer 光合作用 equals gold 光合作用");
    assert_reason_clean(&r);

    r = judge(&h, "{\"answer\": \"C\", \"options\": [\"12 cm\", \"14 cm\", \"15 cm\"]}",
              "The answer is 15 cm.");
    cr_assert_eq(r.reward, 1.0);
    cr_assert_str_eq(r.reason, "choice: stated answer C (by option text) equals gold C");

    r = judge(&h, "{\"answer\": \"B\"}", "");
    cr_assert_eq(r.reward, 0.0);
    cr_assert_eq(reward_component(&r, "format"), 0.0);
    cr_assert_str_eq(r.reason, "empty response");
    harness_close(&h);
}

Test(k12_reward, the_kind_comes_from_the_type_field_or_the_gold)
{
    harness h;
    open_k12(&h, "");
    static const struct {
        const char *task, *response, *prefix;
    } cases[] = {
        {"{\"answer\": \"B\"}", "B", "choice:"},
        {"{\"answer\": \"A, C\"}", "AC", "choice:"},
        {"{\"answer\": \"(D)\"}", "D", "choice:"},
        {"{\"answer\": \"true\"}", "true", "true_false:"},
        {"{\"answer\": \"T\"}", "T", "true_false:"},
        {"{\"answer\": \"错\"}", "错", "true_false:"},
        {"{\"answer\": true}", "true", "true_false:"},
        {"{\"answer\": \"5 cm\"}", "5 cm", "numeric:"},
        {"{\"answer\": 2.5}", "2.5", "numeric:"},
        {"{\"answer\": \"Paris\"}", "Paris", "blank:"},
        {"{\"answer\": \"a\"}", "a", "blank:"}, /* lower case: an English word */
        {"{\"answer\": \"BAD\", \"type\": \"blank\"}", "bad", "blank:"},
        {"{\"answer\": \"5\", \"type\": \"blank\"}", "5", "blank:"},
        {"{\"answer\": \"F\", \"type\": \"true_false\"}", "F", "true_false:"},
        {"{\"answer\": \"F\"}", "F", "choice:"}, /* A-H first */
        {"{\"answer\": \"B\", \"type\": \"single_choice\"}", "B", "choice:"},
        {"{\"answer\": \"B\", \"type\": null}", "B", "choice:"}, /* null: no kind given */
        {"{\"answer\": \"B\", \"type\": \"multiple_choice\"}", "B", "choice:"},
        {"{\"answer\": \"3\", \"type\": \"calculation\"}", "3", "numeric:"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tern_reward_result r = judge(&h, cases[i].task, cases[i].response);
        cr_expect_eq(r.reward, 1.0, "%s: %s", cases[i].task, r.reason);
        cr_expect(strncmp(r.reason, cases[i].prefix, strlen(cases[i].prefix)) == 0,
                  "%s: '%s' should start with '%s'", cases[i].task, r.reason, cases[i].prefix);
    }
    harness_close(&h);
}

#define NOT_USABLE "task field 'answer' is not a string, number, boolean or list of them"

Test(k12_reward, a_task_at_fault_is_a_verdict_with_a_reason)
{
    harness h;
    open_k12(&h, "");
    static const struct {
        const char *task, *reason;
    } cases[] = {
        {"{\"question\": \"2+2\"}", "task has no answer field 'answer'"},
        {"{\"answer\": null}", NOT_USABLE},
        {"{\"answer\": {\"x\": 1}}", NOT_USABLE},
        {"{\"answer\": [[1]]}", NOT_USABLE},
        {"{\"answer\": \"\"}", "task field 'answer' is empty"},
        {"{\"answer\": \" | \"}", "task field 'answer' is empty"},
        {"{\"answer\": []}", "task field 'answer' is empty"},
        {"{\"answer\": \"B\", \"type\": \"essay\"}",
         "task field 'type' names no question kind: 'essay' (choice, true_false, blank or "
         "numeric)"},
        {"{\"answer\": \"B\", \"partial_credit\": \"some\"}",
         "task field 'partial_credit' must be none, half_for_subset or fraction, not 'some'"},
        {"{\"answer\": \"B\", \"type\": 3}", "task field 'type' is not a string"},
        {"{\"answer\": \"B\", \"partial_credit\": [\"none\"]}",
         "task field 'partial_credit' is not a string"},
        {"{\"answer\": \"maybe\", \"type\": \"true_false\"}",
         "true_false: gold maybe is not true or false"},
        {"{\"answer\": \"Z\", \"type\": \"choice\"}", "choice: gold Z is not option letters (A-H)"},
        {"{\"answer\": \"many\", \"type\": \"numeric\"}", "numeric: gold many has no number"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tern_reward_result r = judge(&h, cases[i].task, "The answer is \\boxed{B}");
        cr_expect_eq(r.reward, 0.0, "%s", cases[i].task);
        cr_expect_str_eq(r.reason, cases[i].reason, "%s", cases[i].task);
        cr_expect_eq(reward_component(&r, "format"), 1.0, "format judges the response alone: %s",
                     cases[i].task);
        assert_reason_clean(&r);
    }
    /* a task's value quoted in a reason stays printable */
    tern_reward_result r = judge(&h, "{\"answer\": \"B\", \"type\": \"\\u0001\\u00e9x\"}", "B");
    cr_assert_str_eq(r.reason, "task field 'type' names no question kind: '???x' (choice, "
                               "true_false, blank or numeric)");
    harness_close(&h);
}

/* ---- settings ------------------------------------------------------------ */

Test(k12_reward, field_settings_name_the_task_fields)
{
    harness h;
    open_k12(&h, "answer_field = \"meta.gold\"; type_field = \"kind\"; options_field = \"opts\";");
    tern_reward_result r =
        judge(&h, "{\"meta\": {\"gold\": \"5\"}, \"kind\": \"blank\", \"answer\": \"6\"}", "5.0");
    cr_assert_eq(r.reward, 1.0, "%s", r.reason);
    cr_assert(strncmp(r.reason, "blank:", 6) == 0, "%s", r.reason);
    r = judge(&h, "{\"answer\": \"5\"}", "5");
    cr_assert_str_eq(r.reason, "task has no answer field 'meta.gold'");
    r = judge(&h, "{\"meta\": {\"gold\": \"B\"}, \"opts\": [\"x\", \"y\"]}", "The answer is y.");
    cr_assert_eq(r.reward, 1.0, "%s", r.reason);
    r = judge(&h, "{\"meta\": {\"gold\": \"B\"}, \"options\": [\"x\", \"y\"]}", "The answer is y.");
    cr_assert_eq(r.reward, 0.0, "options come from options_field only: %s", r.reason);
    harness_close(&h);
}

Test(k12_reward, partial_credit_setting_and_its_task_override)
{
    static const struct {
        const char *setting;
        double subset;
    } rules[] = {{"", 0}, {"partial_credit = \"none\";", 0},
                 {"partial_credit = \"half_for_subset\";", 0.5},
                 {"partial_credit = \"fraction\";", 0.25}};
    for (size_t k = 0; k < sizeof rules / sizeof rules[0]; k++) {
        harness h;
        open_k12(&h, rules[k].setting);
        tern_reward_result r = judge(&h, "{\"answer\": \"ABCD\"}", "The answer is A.");
        cr_expect_eq(r.reward, rules[k].subset, "%s: %s", rules[k].setting, r.reason);
        cr_expect_eq(judge(&h, "{\"answer\": \"ABCD\"}", "AE").reward, 0.0);
        cr_expect_eq(judge(&h, "{\"answer\": \"ABCD\"}", "DCBA").reward, 1.0);
        /* the task's own rule wins */
        r = judge(&h, "{\"answer\": \"ABCD\", \"partial_credit\": \"half_for_subset\"}", "A");
        cr_expect_eq(r.reward, 0.5, "%s: %s", rules[k].setting, r.reason);
        harness_close(&h);
    }
    harness h;
    open_k12(&h, "partial_credit = \"fraction\"; partial_credit_field = \"rule\";");
    cr_expect_eq(judge(&h, "{\"answer\": \"AB\", \"rule\": \"none\"}", "A").reward, 0.0);
    cr_expect_eq(judge(&h, "{\"answer\": \"AB\", \"partial_credit\": \"none\"}", "A").reward, 0.5);
    harness_close(&h);
    open_k12(&h, "partial_credit = \"fraction\"; partial_credit_field = \"\";");
    cr_expect_eq(judge(&h, "{\"answer\": \"AB\", \"partial_credit\": \"none\"}", "A").reward, 0.5,
                 "an empty partial_credit_field ignores tasks");
    harness_close(&h);
}

Test(k12_reward, tolerances_and_units)
{
    harness h;
    open_k12(&h, "");
    cr_expect_eq(judge(&h, "{\"answer\": \"3.14159\"}", "3.14").reward, 0.0);
    cr_expect_eq(judge(&h, "{\"answer\": \"5 cm\"}", "5").reward, 1.0);
    harness_close(&h);

    open_k12(&h, "rel_tol = 0.01;");
    cr_expect_eq(judge(&h, "{\"answer\": \"3.14159\"}", "3.14").reward, 1.0);
    cr_expect_eq(judge(&h, "{\"answer\": \"3.14159\"}", "3.1").reward, 0.0);
    cr_expect_eq(judge(&h, "{\"answer\": \"100 cm\"}", "0.995 m").reward, 1.0,
                 "relative: unit-free");
    harness_close(&h);

    open_k12(&h, "rel_tol = 0; abs_tol = 0.5;");
    cr_expect_eq(judge(&h, "{\"answer\": \"10\"}", "10.4").reward, 1.0);
    cr_expect_eq(judge(&h, "{\"answer\": \"10\"}", "10.6").reward, 0.0);
    /* the absolute tolerance is in the gold's unit: 0.5 cm */
    cr_expect_eq(judge(&h, "{\"answer\": \"10 cm\"}", "104 mm").reward, 1.0);
    cr_expect_eq(judge(&h, "{\"answer\": \"10 cm\"}", "106 mm").reward, 0.0);
    harness_close(&h);

    open_k12(&h, "require_unit = true;");
    tern_reward_result r = judge(&h, "{\"answer\": \"5 cm\"}", "5");
    cr_expect_eq(r.reward, 0.0);
    cr_expect_str_eq(r.reason, "numeric: last line 5, gold 5 cm: no unit (require_unit)");
    cr_expect_eq(judge(&h, "{\"answer\": \"5 cm\"}", "5 cm").reward, 1.0);
    cr_expect_eq(judge(&h, "{\"answer\": \"5\"}", "5").reward, 1.0, "the gold has no unit");
    harness_close(&h);
}

Test(k12_reward, without_the_fallback_only_boxes_and_statements_count)
{
    harness h;
    open_k12(&h, "fallback_last_line = false;");
    tern_reward_result r = judge(&h, "{\"answer\": \"B\"}", "B");
    cr_expect_eq(r.reward, 0.0);
    cr_expect_str_eq(r.reason, "no answer found (fallback_last_line is off)");
    cr_expect_eq(judge(&h, "{\"answer\": \"B\"}", "\\boxed{B}").reward, 1.0);
    cr_expect_eq(judge(&h, "{\"answer\": \"B\"}", "答案是B").reward, 1.0);
    harness_close(&h);
}

Test(k12_reward, bad_settings_are_refused_with_the_key_named)
{
    static const struct {
        const char *text, *key;
    } bad[] = {
        {"answer_field = \"\";", "answer_field"},
        {"type_field = \"\";", "type_field"},
        {"options_field = \"\";", "options_field"},
        {"partial_credit = \"half\";", "partial_credit"},
        {"rel_tol = 2.0;", "rel_tol"},
        {"abs_tol = -1.0;", "abs_tol"},
        {"require_unit = 1;", "require_unit"},
        {"fallback_last_lin = false;", "did you mean 'fallback_last_line'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        harness h;
        cr_expect_neq(harness_open(&h, "k12", TERN_KIND_REWARD, bad[i].text), TERN_OK, "%s",
                      bad[i].text);
        cr_expect(strstr(h.error, bad[i].key), "%s: %s", bad[i].text, h.error);
        harness_close(&h);
    }
}

Test(k12_reward, descriptor_declares_a_thread_safe_reward)
{
    harness h;
    open_k12(&h, "");
    const tern_plugin_descriptor *d = h.entry->plugin->desc;
    cr_assert_str_eq(d->name, "k12");
    cr_assert_str_eq(d->version, "1.0.0");
    cr_assert_eq(d->kind, TERN_KIND_REWARD);
    cr_assert(d->caps & TERN_CAP_THREAD_SAFE);
    cr_assert_eq(d->abi_major, TERN_ABI_MAJOR);
    cr_assert_not_null(d->summary);
    harness_close(&h);
}

/* ---- hostile responses --------------------------------------------------- */

#define MEGABYTE (1024u * 1024u)

/* Each of these would take minutes with work quadratic in the length: a
 * megabyte for finding the answer, just under the 64 KiB an answer may have
 * for reading it. */
#define UNDER_LIMIT 60000u

Test(k12_reward, megabytes_of_hostile_text_take_linear_time)
{
    harness h;
    open_k12(&h, "");
    static const struct {
        const char *gold, *unit, *tail;
        size_t size;
        double reward, format;
    } cases[] = {
        {"B", "7", "", MEGABYTE, 0, 0},               /* one 1 MB line: too long */
        {"B", "B", "", MEGABYTE, 0, 0},
        {"B", "AB", "\nB", MEGABYTE, 1, 0},           /* the short last line judges */
        {"B", "7\n", "B", MEGABYTE, 1, 0},
        {"B", "\\boxed{", "\nB", MEGABYTE, 1, 0},     /* no box closes */
        {"B", "{", "\\boxed{B}", MEGABYTE, 1, 1},      /* a closed box after 1 MB of '{' */
        {"B", "\\boxed{ ", "}", MEGABYTE, 0, 0},      /* only the innermost box closes, empty */
        {"B", "}", "\\boxed{B}", MEGABYTE, 1, 1},
        {"B", "the answer is ", "B", MEGABYTE, 1, 1},
        {"B", "the answer is\n", "B", MEGABYTE, 1, 0}, /* every statement empty: the last line */
        {"B", "答案：", "B", MEGABYTE, 1, 1},
        {"B", "answer: . ", "B.", MEGABYTE, 0, 0},     /* each ". " ends an empty statement */
        {"B", "选", "B", MEGABYTE, 1, 1},
        {"B", "\xff", "\nB", MEGABYTE, 1, 0},
        {"B", "\xe7\xad\x94", "\nB", MEGABYTE, 1, 0}, /* truncated 答案 everywhere */
        {"true", "true ", "\ntrue", MEGABYTE, 1, 0},
        /* answers just under the limit, read by each kind */
        {"B", "A, ", "B", UNDER_LIMIT, 0, 0},
        {"B", "(", "B", UNDER_LIMIT, 0, 0},
        {"B", "B ", "", UNDER_LIMIT, 0, 0},
        {"B", "\\text{", "B", UNDER_LIMIT, 1, 0},      /* unclosed \\text{ heads go */
        {"ACD", "A", "", UNDER_LIMIT, 0, 0},
        {"5", "1,00", "", UNDER_LIMIT, 0, 0},
        {"5", "1,000", "", UNDER_LIMIT, 0, 0},
        {"5", "\\frac{1}{", "5", UNDER_LIMIT, 1, 0},
        {"5", "-", "5", UNDER_LIMIT, 0, 0},            /* ...--5 ends in minus 5 */
        {"5", "5 ", "", UNDER_LIMIT, 1, 0},            /* the leading 5 */
        {"5", "x^{", "5", UNDER_LIMIT, 0, 0},          /* an exponent, not a number */
        {"5", "7", "", UNDER_LIMIT, 0, 0},
        {"5 cm", "5 c", "m", UNDER_LIMIT, 0, 0},       /* unit c */
        {"true", "true ", "", UNDER_LIMIT, 1, 0},
        {"true", "\xe4\xb8\x8d", "\xe5\xaf\xb9", UNDER_LIMIT, 0, 0}, /* 不不...对 */
        {"光合作用", "光合作用", "", UNDER_LIMIT, 0, 0},
        {"光合作用", "\xef\xb7\xba", "", UNDER_LIMIT, 0, 0}, /* U+FDFA: 18 in NFKC */
        {"a b", "a b ", "", UNDER_LIMIT, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char json[64];
        snprintf(json, sizeof json, "{\"answer\": \"%s\"}", cases[i].gold);
        tern_task *t = reward_task_of(json);
        size_t len;
        char *s = reward_repeat(cases[i].unit, cases[i].size, cases[i].tail, &len);
        tern_reward_result r = reward_score_bytes(&h, t, s, len);
        cr_expect_eq(r.reward, cases[i].reward, "case %zu: \"%s\" x %zu + \"%s\": %s", i,
                     cases[i].unit, cases[i].size, cases[i].tail, r.reason);
        cr_expect_eq(reward_component(&r, "format"), cases[i].format, "case %zu: \"%s\": %s", i,
                     cases[i].unit, r.reason);
        assert_reason_clean(&r);
        free(s);
        tern_task_free(t);
    }
    harness_close(&h);
}

Test(k12_reward, a_long_answer_is_a_verdict_and_the_reason_is_cut_on_a_character)
{
    harness h;
    open_k12(&h, "");
    size_t len;
    char *s = reward_repeat("B", 70000, "", &len);
    tern_task *t = reward_task_of("{\"answer\": \"B\"}");
    tern_reward_result r = reward_score_bytes(&h, t, s, len);
    cr_assert_eq(r.reward, 0.0);
    cr_assert_str_eq(r.reason, "choice: last line is longer than 65536 bytes (70000)");
    tern_task_free(t);
    free(s);

    /* long CJK answers and golds: the reason fits and ends on a character */
    s = reward_repeat("\xe5\x85\x89", 3000, "", &len); /* 光 x 1000 */
    char *json = malloc(len + 32);
    cr_assert_not_null(json);
    snprintf(json, len + 32, "{\"answer\": \"%s\"}", s);
    t = reward_task_of(json);
    r = reward_score_bytes(&h, t, s, len);
    cr_assert_eq(r.reward, 1.0, "%s", r.reason);
    assert_reason_clean(&r);
    cr_assert(strstr(r.reason, "..."), "%s", r.reason);
    s[len - 1] = '\x80'; /* 光 becomes another character */
    s[len - 2] = '\x85';
    s[len - 3] = '\xe5';
    s[0] = 'x';
    r = reward_score_bytes(&h, t, s, len);
    cr_assert_eq(r.reward, 0.0, "%s", r.reason);
    assert_reason_clean(&r);
    tern_task_free(t);
    free(json);
    free(s);
    harness_close(&h);
}

Test(k12_reward, invalid_utf8_is_judged_and_kept_out_of_reasons)
{
    harness h;
    open_k12(&h, "");
    tern_task *t = reward_task_of("{\"answer\": \"B\"}");
    tern_reward_result r = score_text(&h, t, "\xff\xfe reasoning \xc3\nThe answer is B.");
    cr_assert_eq(r.reward, 1.0, "%s", r.reason);

    r = score_text(&h, t, "The answer is \xff\xc3(\xed\xa0\x80.");
    cr_assert_eq(r.reward, 0.0);
    cr_assert_eq(reward_component(&r, "format"), 1.0);
    cr_assert(strstr(r.reason, "is not option letters"), "%s", r.reason);
    assert_reason_clean(&r);

    /* a stray byte after the letter is not a letter: B stands */
    r = score_text(&h, t, "The answer is B\xff.");
    cr_assert_eq(r.reward, 1.0, "%s", r.reason);
    tern_task_free(t);

    t = reward_task_of("{\"answer\": \"caf\\u00e9\"}");
    r = score_text(&h, t, "The answer is caf\xe9.");
    cr_assert_eq(r.reward, 0.0, "Latin-1 bytes are not UTF-8: %s", r.reason);
    assert_reason_clean(&r);
    r = score_text(&h, t, "The answer is CAF\xc3\x89.");
    cr_assert_eq(r.reward, 1.0, "%s", r.reason);
    tern_task_free(t);
    harness_close(&h);
}

Test(k12_reward, nul_bytes_inside_response_len_are_ordinary_bytes)
{
    harness h;
    open_k12(&h, "");
    tern_task *t = reward_task_of("{\"answer\": \"B\"}");
    static const char after_nul[] = "The answer is A.\0 The answer is B.";
    tern_reward_result r = reward_score_bytes(&h, t, after_nul, sizeof after_nul - 1);
    cr_assert_eq(r.reward, 1.0, "the statement after the NUL counts: %s", r.reason);

    static const char inside[] = "\\boxed{\0B}";
    r = reward_score_bytes(&h, t, inside, sizeof inside - 1);
    cr_assert_eq(r.reward, 1.0, "a NUL reads as a space: %s", r.reason);
    static const char only[] = "\0\0\0";
    r = reward_score_bytes(&h, t, only, sizeof only - 1);
    cr_assert_eq(r.reward, 0.0);
    assert_reason_clean(&r);
    tern_task_free(t);
    t = reward_task_of("{\"answer\": \"42\"}");
    static const char digits[] = "#### 4\0" "2";
    r = reward_score_bytes(&h, t, digits, sizeof digits - 1);
    cr_assert_eq(r.reward, 0.0, "4<NUL>2 is not 42: %s", r.reason);
    assert_reason_clean(&r);
    tern_task_free(t);
    harness_close(&h);
}

Test(k12_reward, reads_nothing_past_response_len)
{
    harness h;
    const tern_reward_ops *ops = open_k12(&h, "");
    tern_task *t = reward_task_of("{\"answer\": \"B\"}");
    /* The closing brace lies just past response_len: the box is unclosed. */
    static const char text[] = "\\boxed{B}";
    tern_reward_item item = {.size = sizeof item, .task = t, .response = text,
                             .response_len = sizeof text - 2};
    tern_reward_result r = {.size = sizeof r};
    cr_assert_eq(ops->score(h.state, &item, &r, 1), TERN_OK);
    cr_assert_eq(reward_component(&r, "format"), 0.0, "%s", r.reason);
    cr_assert_eq(r.reward, 0.0, "%s", r.reason);

    /* A missing response is an empty one, whatever its length says. */
    item.response = NULL;
    item.response_len = 7;
    cr_assert_eq(ops->score(h.state, &item, &r, 1), TERN_OK);
    cr_assert_str_eq(r.reason, "empty response");
    /* A missing task has no gold. */
    item.task = NULL;
    item.response = "B";
    item.response_len = 1;
    cr_assert_eq(ops->score(h.state, &item, &r, 1), TERN_OK);
    cr_assert_str_eq(r.reason, "task has no answer field 'answer'");
    tern_task_free(t);
    harness_close(&h);
}

/* ---- batches and concurrency ---------------------------------------------- */

Test(k12_reward, scores_a_batch_like_one_at_a_time)
{
    harness h;
    const tern_reward_ops *ops = open_k12(&h, "");
    size_t n_cases;
    k12_case *cases = load_corpus(&n_cases);
    size_t n = 3 * n_cases + 1;
    tern_reward_item *items = calloc(n, sizeof *items);
    tern_reward_result *results = calloc(n, sizeof *results);
    cr_assert(items && results);
    for (size_t i = 0; i < n; i++) {
        const k12_case *c = &cases[i % n_cases];
        items[i] = (tern_reward_item){.size = sizeof items[i], .task = c->task,
                                      .response = c->response, .response_len = strlen(c->response)};
        results[i].size = sizeof results[i];
    }
    cr_assert_eq(ops->score(h.state, items, results, n), TERN_OK, "%s", tern_error_message());
    for (size_t i = 0; i < n; i++) {
        cr_assert(close_to(results[i].reward, cases[i % n_cases].expect), "item %zu: %s", i,
                  results[i].reason);
        cr_assert_eq(results[i].n_components, 2);
    }
    free(items);
    free(results);
    free_corpus(cases, n_cases);
    harness_close(&h);
}

Test(k12_reward, scores_an_empty_batch_and_refuses_missing_arrays)
{
    harness h;
    const tern_reward_ops *ops = open_k12(&h, "");
    cr_assert_eq(ops->score(h.state, NULL, NULL, 0), TERN_OK);
    cr_assert_eq(ops->score(h.state, NULL, NULL, 3), TERN_EINVAL);
    cr_assert(strstr(tern_error_message(), "k12"), "%s", tern_error_message());
    harness_close(&h);
}

/* TERN_CAP_THREAD_SAFE: one instance scores from several threads at once. */
Test(k12_reward, one_instance_scores_from_many_threads)
{
    harness h;
    open_k12(&h, "");
    size_t n;
    k12_case *cases = load_corpus(&n);
    enum { THREADS = 4 };
    reward_worker w[THREADS];
    pthread_t th[THREADS];
    for (int k = 0; k < THREADS; k++) {
        w[k] = (reward_worker){.h = &h, .rounds = 10, .n = n, .rc = TERN_OK,
                        .items = calloc(n, sizeof(tern_reward_item)),
                        .results = calloc(n, sizeof(tern_reward_result))};
        cr_assert(w[k].items && w[k].results);
        /* each thread starts at another case, so different kinds overlap */
        for (size_t i = 0; i < n; i++) {
            const k12_case *c = &cases[(i + (size_t)k * n / THREADS) % n];
            w[k].items[i] = (tern_reward_item){.size = sizeof(tern_reward_item), .task = c->task,
                                               .response = c->response,
                                               .response_len = strlen(c->response)};
        }
        cr_assert_eq(pthread_create(&th[k], NULL, reward_worker_run, &w[k]), 0);
    }
    for (int k = 0; k < THREADS; k++) {
        pthread_join(th[k], NULL);
        cr_assert_eq(w[k].rc, TERN_OK);
        for (size_t i = 0; i < n; i++) {
            const k12_case *c = &cases[(i + (size_t)k * n / THREADS) % n];
            cr_assert(close_to(w[k].results[i].reward, c->expect), "thread %d case %zu: %s", k,
                      i, w[k].results[i].reason);
        }
        free(w[k].items);
        free(w[k].results);
    }
    free_corpus(cases, n);
    harness_close(&h);
}
