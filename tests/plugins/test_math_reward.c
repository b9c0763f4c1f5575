/* test_math_reward.c: the `math` reward plugin through its ops table, started
 * the way a run starts it (harness.h): a corpus of (response, gold, verdict)
 * over every answer form, number form and trap, here and in
 * tests/corpora/math.jsonl; components and reasons; the settings (answer
 * field, forms and their order, tolerance, random points, percent rule);
 * hostile answers (a megabyte of digits or of maths, 100,000-deep brackets,
 * unbalanced braces, invalid UTF-8, NULs, huge exponents, undefined values,
 * unsupported syntax), each judged with a reason in well under a second;
 * batches and concurrent callers. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "corpus.h"
#include "base/errmsg.h"
#include "harness.h"
#include "reward_case.h"
#include "data/task.h"
#include "tern/reward.h"

/* ---- helpers ------------------------------------------------------------ */

static const tern_reward_ops *open_math(harness *h, const char *settings)
{
    int rc = harness_open(h, "math", TERN_KIND_REWARD, settings);
    cr_assert_eq(rc, TERN_OK, "harness_open(\"%s\"): %s", settings, h->error);
    return harness_ops(h);
}

/* {"answer": <gold_json>} */
static tern_task *task_with_answer(const char *gold_json)
{
    char *json = NULL;
    cr_assert_geq(asprintf(&json, "{\"answer\": %s}", gold_json), 0);
    tern_task *t = reward_task_of(json);
    free(json);
    return t;
}

static tern_reward_result score_text(const harness *h, const tern_task *task, const char *response)
{
    return reward_score_bytes(h, task, response, strlen(response));
}

/* Reasons are stored in JSON by the core: they must be ended, printable and
 * valid UTF-8 (our hostile inputs put only ASCII replacements there). */
static void assert_reason_clean(const tern_reward_result *r)
{
    size_t n = strnlen(r->reason, sizeof r->reason);
    cr_assert_lt(n, sizeof r->reason, "reason is not NUL-terminated");
    cr_assert_gt(n, 0, "empty reason");
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)r->reason[i];
        cr_assert(c >= 0x20 && c < 0x7F, "reason byte %zu is 0x%02x: %s", i, c, r->reason);
    }
}

/* ---- the corpus ---------------------------------------------------------- */

typedef struct math_case {
    const char *response;
    const char *gold; /* the JSON value of the task's "answer" */
    double reward;
} math_case;

static const math_case corpus[] = {
    /* each form, and the priority between forms */
    {"\\boxed{42}", "\"42\"", 1},
    {"So the result is \\boxed{41}.", "\"42\"", 0},
    {"First \\boxed{1}, then \\boxed{2}", "\"2\"", 1}, /* the last box wins */
    {"First \\boxed{1}, then \\boxed{2}", "\"1\"", 0},
    {"\\boxed{\\frac{1}{2}}", "\"0.5\"", 1}, /* nested braces */
    {"\\boxed{7}\n#### 8", "\"7\"", 1},      /* boxed beats #### */
    {"\\boxed{7}\n#### 8", "\"8\"", 0},
    {"Natalia sold 48 + 24 clips.\n#### 72", "\"72\"", 1},
    {"#### 5\nOn second thought:\n#### 6", "\"6\"", 1}, /* the last #### wins */
    {"#### 6\nThe answer is 7.", "\"6\"", 1},           /* #### beats "answer is" */
    {"The answer is 7.", "\"7\"", 1},
    {"so THE ANSWER IS 12", "\"12\"", 1},
    {"The answer is 3. Wait, no: the answer is 4.", "\"4\"", 1},
    {"The final answer is $\\frac{3}{4}$. I hope it is correct.", "\"3/4\"", 1},
    {"The answer is:\n15", "\"15\"", 1},
    {"5 apples and 6 pears make 11", "\"11\"", 1}, /* the last number */
    {"The answer is 10. Check: 4 + 6 = 10, and 10 + 1 = 11", "\"10\"", 1},
    {"\\boxed{5} but maybe \\boxed{6", "\"5\"", 1}, /* an unclosed box is no box */
    {"\\boxed{\\dfrac{10}{4}}", "\"5/2\"", 1},
    {"\\boxed {9}", "\"9\"", 1},
    /* number forms */
    {"\\boxed{0.5}", "\"1/2\"", 1},
    {"\\boxed{1/2}", "\"0.5\"", 1},
    {"\\boxed{2.50}", "\"2.5\"", 1},
    {"#### 1,000", "\"1000\"", 1},
    {"#### 1000", "\"1,000\"", 1},
    {"#### 1,234,567", "\"1234567\"", 1},
    {"\\boxed{-3}", "\"-3\"", 1},
    {"\\boxed{-3}", "\"3\"", 0},
    {"\\boxed{+3}", "\"3\"", 1},
    {"#### $5", "\"5\"", 1},
    {"#### 5", "\"$5\"", 1},
    {"The answer is $5$.", "\"5\"", 1},
    {"\\boxed{42.}", "\"42\"", 1},
    {"\\boxed{4/8}", "\"\\\\frac{1}{2}\"", 1},
    {"\\boxed{007}", "\"7\"", 1},
    {"\\boxed{-0}", "\"0\"", 1},
    {"\\boxed{6/3}", "\"2\"", 1},
    {"\\boxed{0.50}", "\"\\\\frac{1}{2}\"", 1},
    {"\\boxed{-\\frac{1}{2}}", "\"-0.5\"", 1},
    {"\\boxed{\\frac{-1}{2}}", "\"-1/2\"", 1},
    {"\\boxed{\\$18}", "\"18\"", 1},
    {"the total is 1,234.50 dollars", "\"1234.5\"", 1},
    {"x = -3", "\"-3\"", 1},
    /* traps */
    {"#### 1,000", "\"1\"", 0},
    {"#### 1,000", "\"0\"", 0},
    {"The point is (1, 0)", "\"1000\"", 0},
    {"\\boxed{(1, 0)}", "\"1000\"", 0},
    {"\\boxed{(1, 0)}", "\"(1,  0)\"", 1}, /* text: whitespace runs collapse */
    {"\\boxed{x+1}", "\"x+1\"", 1},
    {"\\boxed{x+1}", "\"x + 1\"", 1}, /* equal as expressions (was 0 as text) */
    {"\\boxed{3.14}", "\"3\"", 0},
    {"\\boxed{3}", "\"3.14\"", 0},
    {"#### 1,00", "\"100\"", 0},  /* not the strict thousands form */
    {"#### 12,34", "\"1234\"", 0},
    {"\\boxed{0.333}", "\"1/3\"", 0},
    {"\\boxed{1/3}", "\"1/3\"", 1},
    {"\\boxed{0.30000000000000000000001}", "\"0.3\"", 0},
    {"\\boxed{1/0}", "\"1\"", 0},
    {"5-3", "\"-3\"", 0}, /* a subtraction, not minus three */
    /* nothing to judge */
    {"no digits here", "\"42\"", 0},
    {"", "\"42\"", 0},
    {"   \n\t ", "\"42\"", 0},
    /* gold as a JSON number */
    {"\\boxed{42}", "42", 1},
    {"\\boxed{41}", "42", 0},
    {"\\boxed{0.1}", "0.1", 1},
    {"\\boxed{2.5}", "2.50", 1},
    {"\\boxed{-7}", "-7", 1},
    {"\\boxed{42}", "42.0", 1},
    {"\\boxed{0.0000001}", "1e-7", 1},
    {"\\boxed{12345678901234567}", "12345678901234567", 1}, /* past 2^53 */
    {"\\boxed{12345678901234568}", "12345678901234567", 0},
    /* gold as a worked solution */
    {"#### 72", "\"Natalia sold 48/2 = 24 clips in May.\\n#### 72\"", 1},
    {"The answer is 5", "\"so \\\\boxed{5}\"", 1},
    /* beyond 64 bits */
    {"\\boxed{99999999999999999999999}", "\"99999999999999999999999\"", 1},
    {"\\boxed{99999999999999999999999}", "\"99999999999999999999998\"", 0},
    {"\\boxed{100000000000000000000/3}", "\"100000000000000000000/3\"", 1},
};
#define N_CORPUS (sizeof corpus / sizeof corpus[0])

Test(math_reward, corpus_verdicts)
{
    harness h;
    open_math(&h, "");
    size_t wrong = 0;
    for (size_t i = 0; i < N_CORPUS; i++) {
        tern_task *t = task_with_answer(corpus[i].gold);
        tern_reward_result r = score_text(&h, t, corpus[i].response);
        wrong += r.reward != corpus[i].reward;
        cr_expect_eq(r.reward, corpus[i].reward,
                     "case %zu: response \"%s\", gold %s: reward %g, expected %g (%s)", i,
                     corpus[i].response, corpus[i].gold, r.reward, corpus[i].reward, r.reason);
        cr_expect_eq(reward_component(&r, "accuracy"), corpus[i].reward, "case %zu", i);
        assert_reason_clean(&r);
        tern_task_free(t);
    }
    cr_log_info("math corpus: %zu cases, %zu wrong", N_CORPUS, wrong);
    harness_close(&h);
}

/* tests/corpora/math.jsonl: a case per rule (see "why" on each line), with
 * near misses that must score 0, all through the plugin as a run loads it. */
Test(math_reward, corpus_file_is_judged_right)
{
    harness h;
    open_math(&h, "");
    corpus_result res;
    int rc = corpus_run(&h, TERN_TEST_SOURCE_DIR "/tests/corpora/math.jsonl", &res);
    cr_assert_eq(rc, TERN_OK, "%s", h.error);
    cr_log_info("math corpus: %zu/%zu right", res.right, res.cases);
    printf("math corpus: %zu/%zu right\n", res.right, res.cases);
    cr_assert_geq(res.cases, 200, "the corpus has %zu cases", res.cases);
    cr_assert_eq(res.right, res.cases, "math corpus: %zu/%zu right; first miss: %s", res.right,
                 res.cases, res.first_wrong);
    harness_close(&h);
}

/* The corpus in one call gives the same verdicts as case by case. */
Test(math_reward, scores_a_batch_in_one_call)
{
    harness h;
    const tern_reward_ops *ops = open_math(&h, "");
    enum { REPEAT = 40 };
    size_t n = N_CORPUS * REPEAT;
    tern_task **tasks = calloc(N_CORPUS, sizeof *tasks);
    tern_reward_item *items = calloc(n, sizeof *items);
    tern_reward_result *results = calloc(n, sizeof *results);
    cr_assert(tasks && items && results);
    for (size_t i = 0; i < N_CORPUS; i++)
        tasks[i] = task_with_answer(corpus[i].gold);
    for (size_t i = 0; i < n; i++) {
        const math_case *c = &corpus[i % N_CORPUS];
        items[i] = (tern_reward_item){.size = sizeof items[i], .task = tasks[i % N_CORPUS],
                                      .response = c->response, .response_len = strlen(c->response)};
        results[i].size = sizeof results[i];
    }
    cr_assert_eq(ops->score(h.state, items, results, n), TERN_OK, "%s", tern_error_message());
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(results[i].reward, corpus[i % N_CORPUS].reward, "item %zu: %s", i,
                     results[i].reason);
        cr_assert_eq(results[i].n_components, 2);
    }
    for (size_t i = 0; i < N_CORPUS; i++)
        tern_task_free(tasks[i]);
    free(tasks);
    free(items);
    free(results);
    harness_close(&h);
}

Test(math_reward, scores_an_empty_batch_and_refuses_missing_arrays)
{
    harness h;
    const tern_reward_ops *ops = open_math(&h, "");
    cr_assert_eq(ops->score(h.state, NULL, NULL, 0), TERN_OK);
    cr_assert_eq(ops->score(h.state, NULL, NULL, 3), TERN_EINVAL);
    cr_assert(strstr(tern_error_message(), "math"), "%s", tern_error_message());
    harness_close(&h);
}

/* ---- components and reasons -------------------------------------------- */

Test(math_reward, components_and_reasons_say_what_was_judged)
{
    harness h;
    open_math(&h, "");
    tern_task *t = task_with_answer("\"42\"");

    tern_reward_result r = score_text(&h, t, "Adding up: \\boxed{42}");
    cr_assert_eq(r.reward, 1.0);
    cr_assert_eq(r.n_components, 2);
    cr_assert_eq(reward_component(&r, "accuracy"), 1.0);
    cr_assert_eq(reward_component(&r, "format"), 1.0);
    cr_assert_str_eq(r.reason, "boxed answer 42 equals gold 42");

    r = score_text(&h, t, "#### 41");
    cr_assert_eq(r.reward, 0.0);
    cr_assert_eq(reward_component(&r, "accuracy"), 0.0);
    cr_assert_eq(reward_component(&r, "format"), 1.0);
    cr_assert_str_eq(r.reason, "extracted 41 (#### answer), gold 42");

    r = score_text(&h, t, "The answer is 42.");
    cr_assert_eq(reward_component(&r, "format"), 1.0);
    cr_assert_str_eq(r.reason, "stated answer 42 equals gold 42");

    /* the last number judges, but shows no intent to answer: format 0 */
    r = score_text(&h, t, "I think it is 42");
    cr_assert_eq(r.reward, 1.0);
    cr_assert_eq(reward_component(&r, "format"), 0.0);
    cr_assert_str_eq(r.reason, "last number 42 equals gold 42");

    r = score_text(&h, t, "I think it is 41 or so");
    cr_assert_eq(reward_component(&r, "accuracy"), 0.0);
    cr_assert(strstr(r.reason, "extracted 41"), "%s", r.reason);
    cr_assert(strstr(r.reason, "gold 42"), "%s", r.reason);

    r = score_text(&h, t, "I have no idea.");
    cr_assert_eq(r.reward, 0.0);
    cr_assert_eq(reward_component(&r, "format"), 0.0);
    cr_assert_str_eq(r.reason, "no answer found");

    r = score_text(&h, t, "");
    cr_assert_eq(r.reward, 0.0);
    cr_assert_str_eq(r.reason, "empty response");
    tern_task_free(t);
    harness_close(&h);
}

Test(math_reward, a_missing_response_is_a_verdict_not_an_error)
{
    harness h;
    const tern_reward_ops *ops = open_math(&h, "");
    tern_task *t = task_with_answer("\"42\"");
    tern_reward_item item = {.size = sizeof item, .task = t, .response = NULL, .response_len = 7};
    tern_reward_result r = {.size = sizeof r};
    cr_assert_eq(ops->score(h.state, &item, &r, 1), TERN_OK);
    cr_assert_eq(r.reward, 0.0);
    cr_assert_str_eq(r.reason, "empty response");
    tern_task_free(t);
    harness_close(&h);
}

Test(math_reward, a_task_without_gold_is_a_verdict_with_a_reason)
{
    harness h;
    open_math(&h, "");
    static const struct {
        const char *task, *reason;
    } cases[] = {
        {"{\"question\": \"2+2\"}", "task has no answer field 'answer'"},
        {"{\"answer\": null}", "task field 'answer' is not a string or a number"},
        {"{\"answer\": [4]}", "task field 'answer' is not a string or a number"},
        {"{\"answer\": \"\"}", "task field 'answer' is empty"},
        {"{\"answer\": \"  $ \"}", "task field 'answer' is empty"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tern_task *t = reward_task_of(cases[i].task);
        tern_reward_result r = score_text(&h, t, "\\boxed{4}");
        cr_assert_eq(r.reward, 0.0, "%s", cases[i].task);
        cr_assert_str_eq(r.reason, cases[i].reason);
        cr_assert_eq(reward_component(&r, "format"), 1.0, "format judges the response alone");
        tern_task_free(t);
    }
    harness_close(&h);
}

/* ---- settings ------------------------------------------------------------ */

Test(math_reward, answer_field_names_the_gold_field)
{
    harness h;
    open_math(&h, "answer_field = \"solution\";");
    tern_task *t = reward_task_of("{\"solution\": \"9\", \"answer\": \"8\"}");
    cr_assert_eq(score_text(&h, t, "\\boxed{9}").reward, 1.0);
    cr_assert_eq(score_text(&h, t, "\\boxed{8}").reward, 0.0);
    tern_task_free(t);
    t = reward_task_of("{\"answer\": \"9\"}");
    tern_reward_result r = score_text(&h, t, "\\boxed{9}");
    cr_assert_eq(r.reward, 0.0);
    cr_assert_str_eq(r.reason, "task has no answer field 'solution'");
    tern_task_free(t);
    harness_close(&h);

    open_math(&h, "answer_field = \"meta.gold\";");
    t = reward_task_of("{\"meta\": {\"gold\": 3}}");
    cr_assert_eq(score_text(&h, t, "#### 3").reward, 1.0);
    tern_task_free(t);
    harness_close(&h);
}

Test(math_reward, without_the_fallback_only_explicit_answers_count)
{
    harness h;
    open_math(&h, "fallback_last_number = false;");
    tern_task *t = task_with_answer("\"42\"");
    tern_reward_result r = score_text(&h, t, "I think it is 42");
    cr_assert_eq(r.reward, 0.0);
    cr_assert_str_eq(r.reason, "no answer found (fallback_last_number is off)");
    cr_assert_eq(score_text(&h, t, "\\boxed{42}").reward, 1.0);
    cr_assert_eq(score_text(&h, t, "#### 42").reward, 1.0);
    cr_assert_eq(score_text(&h, t, "The answer is 42.").reward, 1.0);
    cr_assert_eq(score_text(&h, t, "\\boxed{42").reward, 0.0);
    tern_task_free(t);
    harness_close(&h);

    /* the default is on */
    open_math(&h, "fallback_last_number = true;");
    t = task_with_answer("\"42\"");
    cr_assert_eq(score_text(&h, t, "I think it is 42").reward, 1.0);
    tern_task_free(t);
    harness_close(&h);
}

Test(math_reward, bad_settings_are_refused_with_the_key_named)
{
    harness h;
    cr_assert_eq(harness_open(&h, "math", TERN_KIND_REWARD, "answer_field = \"\";"), TERN_ECONFIG);
    cr_assert(strstr(h.error, "answer_field"), "%s", h.error);
    harness_close(&h);

    cr_assert_neq(harness_open(&h, "math", TERN_KIND_REWARD, "fallback_last_number = 1;"),
                  TERN_OK);
    cr_assert(strstr(h.error, "fallback_last_number"), "%s", h.error);
    harness_close(&h);

    cr_assert_neq(harness_open(&h, "math", TERN_KIND_REWARD, "fallback_last_numbr = false;"),
                  TERN_OK);
    cr_assert(strstr(h.error, "did you mean 'fallback_last_number'"), "%s", h.error);
    harness_close(&h);
}

Test(math_reward, descriptor_declares_a_thread_safe_reward)
{
    harness h;
    open_math(&h, "");
    const tern_plugin_descriptor *d = h.entry->plugin->desc;
    cr_assert_str_eq(d->name, "math");
    cr_assert_str_eq(d->version, "2.0.0");
    cr_assert_eq(d->kind, TERN_KIND_REWARD);
    cr_assert(d->caps & TERN_CAP_THREAD_SAFE);
    cr_assert_eq(d->abi_major, TERN_ABI_MAJOR);
    cr_assert_not_null(d->summary);
    harness_close(&h);
}

/* ---- hostile responses --------------------------------------------------- */

#define MEGABYTE (1024u * 1024u)

Test(math_reward, a_megabyte_of_digits_is_judged_exactly)
{
    harness h;
    open_math(&h, "");
    size_t len;
    char *digits = reward_repeat("7", MEGABYTE, "", &len);

    tern_task *t = task_with_answer("\"42\"");
    tern_reward_result r = reward_score_bytes(&h, t, digits, len);
    cr_assert_eq(r.reward, 0.0);
    cr_assert(strstr(r.reason, "..."), "a long answer is cut in the reason: %s", r.reason);
    assert_reason_clean(&r);
    tern_task_free(t);

    /* a megabyte-long gold equal digit for digit; one digit off is wrong */
    char *json = malloc(len + 32);
    cr_assert_not_null(json);
    snprintf(json, len + 32, "{\"answer\": \"%s\"}", digits);
    t = reward_task_of(json);
    r = reward_score_bytes(&h, t, digits, len);
    cr_assert_eq(r.reward, 1.0, "%s", r.reason);
    digits[len / 2] = '8';
    cr_assert_eq(reward_score_bytes(&h, t, digits, len).reward, 0.0);
    tern_task_free(t);
    free(json);
    free(digits);
    harness_close(&h);
}

/* Each of these would take minutes with work quadratic in the length. */
Test(math_reward, megabytes_of_unclosed_forms_take_linear_time)
{
    harness h;
    open_math(&h, "");
    tern_task *t = task_with_answer("\"42\"");
    static const struct {
        const char *unit, *tail;
        double reward, format;
    } cases[] = {
        {"\\boxed{", " 42", 1, 0},             /* no box closes: the last number */
        {"{", "\\boxed{42}", 1, 1},            /* a closed box after a megabyte of '{' */
        {"\\boxed{ ", "}", 0, 0},              /* only the innermost box closes, empty */
        {"####\n", "42", 1, 0},                /* every marker empty: the last number */
        {"the answer is\n", "42", 1, 0},
        {"the answer is ", "42", 1, 1},
        {"\\frac{1}{", "42", 1, 0},
        {"1,00", "", 0, 0},                    /* 1,001,001,...,001 then 00 */
        {"-", "42", 0, 0},                     /* ...--42 ends in minus 42 */
        {"$ ", "42", 1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len;
        char *s = reward_repeat(cases[i].unit, MEGABYTE, cases[i].tail, &len);
        tern_reward_result r = reward_score_bytes(&h, t, s, len);
        cr_expect_eq(r.reward, cases[i].reward, "\"%s\" x 1MB + \"%s\": %s", cases[i].unit,
                     cases[i].tail, r.reason);
        cr_expect_eq(reward_component(&r, "format"), cases[i].format, "\"%s\" x 1MB: %s",
                     cases[i].unit, r.reason);
        assert_reason_clean(&r);
        free(s);
    }
    tern_task_free(t);
    harness_close(&h);
}

Test(math_reward, invalid_utf8_is_read_as_bytes_and_kept_out_of_reasons)
{
    harness h;
    open_math(&h, "");
    tern_task *t = task_with_answer("\"42\"");
    tern_reward_result r = score_text(&h, t, "\xff\xfe\\boxed{42}\xc3");
    cr_assert_eq(r.reward, 1.0, "%s", r.reason);

    r = score_text(&h, t, "\\boxed{\xff\xc3(\xed\xa0\x80}");
    cr_assert_eq(r.reward, 0.0);
    cr_assert(strstr(r.reason, "?("), "%s", r.reason);
    assert_reason_clean(&r);

    /* valid UTF-8 is quoted as it is */
    r = score_text(&h, t, "\\boxed{\xcf\x80}");
    cr_assert(strstr(r.reason, "\xcf\x80"), "%s", r.reason);
    tern_task_free(t);
    harness_close(&h);
}

Test(math_reward, nul_bytes_inside_response_len_are_ordinary_bytes)
{
    harness h;
    open_math(&h, "");
    tern_task *t = task_with_answer("\"42\"");
    static const char after_nul[] = "#### 7\0 \\boxed{42}";
    tern_reward_result r = reward_score_bytes(&h, t, after_nul, sizeof after_nul - 1);
    cr_assert_eq(r.reward, 1.0, "the box after the NUL counts: %s", r.reason);

    static const char inside[] = "\\boxed{4\0" "2}";
    r = reward_score_bytes(&h, t, inside, sizeof inside - 1);
    cr_assert_eq(r.reward, 0.0, "4<NUL>2 is not 42: %s", r.reason);
    cr_assert(strstr(r.reason, "4?2"), "%s", r.reason);
    assert_reason_clean(&r);
    tern_task_free(t);
    harness_close(&h);
}

Test(math_reward, reads_nothing_past_response_len)
{
    harness h;
    const tern_reward_ops *ops = open_math(&h, "");
    tern_task *t = task_with_answer("\"42\"");
    /* The closing brace lies just past response_len: the box is unclosed. */
    static const char text[] = "\\boxed{42}";
    tern_reward_item item = {.size = sizeof item, .task = t, .response = text,
                             .response_len = sizeof text - 2};
    tern_reward_result r = {.size = sizeof r};
    cr_assert_eq(ops->score(h.state, &item, &r, 1), TERN_OK);
    cr_assert_eq(reward_component(&r, "format"), 0.0, "%s", r.reason);
    cr_assert_str_eq(r.reason, "last number 42 equals gold 42");
    tern_task_free(t);
    harness_close(&h);
}

/* ---- concurrency ----------------------------------------------------------- */

/* TERN_CAP_THREAD_SAFE: one instance scores from several threads at once. */
Test(math_reward, one_instance_scores_from_many_threads)
{
    harness h;
    open_math(&h, "");
    enum { THREADS = 4 };
    tern_task *tasks[N_CORPUS];
    for (size_t i = 0; i < N_CORPUS; i++)
        tasks[i] = task_with_answer(corpus[i].gold);
    reward_worker w[THREADS];
    pthread_t th[THREADS];
    for (int k = 0; k < THREADS; k++) {
        w[k] = (reward_worker){.h = &h, .rounds = 20, .n = N_CORPUS, .rc = TERN_OK,
                        .items = calloc(N_CORPUS, sizeof(tern_reward_item)),
                        .results = calloc(N_CORPUS, sizeof(tern_reward_result))};
        cr_assert(w[k].items && w[k].results);
        for (size_t i = 0; i < N_CORPUS; i++)
            w[k].items[i] = (tern_reward_item){.size = sizeof(tern_reward_item),
                                               .task = tasks[i],
                                               .response = corpus[i].response,
                                               .response_len = strlen(corpus[i].response)};
        cr_assert_eq(pthread_create(&th[k], NULL, reward_worker_run, &w[k]), 0);
    }
    for (int k = 0; k < THREADS; k++) {
        pthread_join(th[k], NULL);
        cr_assert_eq(w[k].rc, TERN_OK);
        for (size_t i = 0; i < N_CORPUS; i++)
            cr_assert_eq(w[k].results[i].reward, corpus[i].reward, "thread %d case %zu: %s", k,
                         i, w[k].results[i].reason);
        free(w[k].items);
        free(w[k].results);
    }
    for (size_t i = 0; i < N_CORPUS; i++)
        tern_task_free(tasks[i]);
    harness_close(&h);
}

/* ---- the settings of the fuller verifier ---------------------------------------- */

static double reward_of(const harness *h, const char *gold_json, const char *response)
{
    tern_task *t = task_with_answer(gold_json);
    tern_reward_result r = score_text(h, t, response);
    assert_reason_clean(&r);
    tern_task_free(t);
    return r.reward;
}

Test(math_reward, answer_forms_sets_the_order_of_forms)
{
    harness h;
    open_math(&h, "answer_forms = [\"hashes\", \"boxed\"];");
    cr_assert_eq(reward_of(&h, "\"8\"", "\\boxed{7}\n#### 8"), 1.0, "#### is tried first");
    cr_assert_eq(reward_of(&h, "\"7\"", "\\boxed{7}\n#### 8"), 0.0);
    cr_assert_eq(reward_of(&h, "\"7\"", "\\boxed{7}"), 1.0, "a box is still found");
    tern_task *t = task_with_answer("\"5\"");
    tern_reward_result r = score_text(&h, t, "The answer is 5");
    cr_assert_eq(r.reward, 0.0, "answer_is is not listed: %s", r.reason);
    cr_assert_str_eq(r.reason, "no answer found");
    tern_task_free(t);
    harness_close(&h);

    /* final_line alone: the last line, when it reads as maths */
    open_math(&h, "answer_forms = [\"final_line\"];");
    t = task_with_answer("\"0.5\"");
    r = score_text(&h, t, "Some reasoning here.\n\\frac{1}{2}");
    cr_assert_eq(r.reward, 1.0, "%s", r.reason);
    cr_assert_eq(reward_component(&r, "format"), 0.0, "a final line shows no intent to answer");
    cr_assert_str_eq(r.reason, "final line \\frac{1}{2} equals gold 0.5");
    r = score_text(&h, t, "the half is 1/2 so that is it");
    cr_assert_eq(r.reward, 0.0, "prose is not a final-line answer: %s", r.reason);
    tern_task_free(t);
    harness_close(&h);

    /* last_number before boxed */
    open_math(&h, "answer_forms = (\"last_number\", \"boxed\");");
    cr_assert_eq(reward_of(&h, "\"3\"", "\\boxed{2} and then 3"), 1.0);
    harness_close(&h);
}

Test(math_reward, answer_forms_is_checked_when_the_reward_is_created)
{
    static const struct {
        const char *settings, *message;
    } bad[] = {
        {"answer_forms = [\"boxed\", \"last_line\"];", "unknown form \"last_line\""},
        {"answer_forms = [\"boxed\", \"boxed\"];", "names \"boxed\" twice"},
        {"fallback_last_number = false; answer_forms = [\"boxed\", \"last_number\"];",
         "fallback_last_number is false"},
        {"fallback_last_number = false; answer_forms = [\"final_line\"];",
         "fallback_last_number is false"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        harness h;
        cr_assert_eq(harness_open(&h, "math", TERN_KIND_REWARD, bad[i].settings), TERN_ECONFIG,
                     "%s", bad[i].settings);
        cr_assert(strstr(h.error, "answer_forms"), "%s", h.error);
        cr_assert(strstr(h.error, bad[i].message), "%s: %s", bad[i].settings, h.error);
        harness_close(&h);
    }
    harness h;
    cr_assert_neq(harness_open(&h, "math", TERN_KIND_REWARD, "answer_forms = \"boxed\";"), TERN_OK);
    cr_assert(strstr(h.error, "answer_forms"), "%s", h.error);
    harness_close(&h);
}

Test(math_reward, fallback_off_drops_the_final_line_too)
{
    harness h;
    open_math(&h, "fallback_last_number = false;");
    tern_task *t = task_with_answer("\"42\"");
    tern_reward_result r = score_text(&h, t, "Working...\nx = 42");
    cr_assert_eq(r.reward, 0.0, "%s", r.reason);
    cr_assert_str_eq(r.reason, "no answer found (fallback_last_number is off)");
    tern_task_free(t);
    harness_close(&h);
    open_math(&h, "");
    cr_assert_eq(reward_of(&h, "\"42\"", "Working...\nx = 42"), 1.0);
    harness_close(&h);
}

Test(math_reward, tolerance_applies_to_irrational_answers_only)
{
    harness h;
    open_math(&h, "");
    cr_assert_eq(reward_of(&h, "\"\\\\pi\"", "\\boxed{3.14}"), 0.0);
    cr_assert_eq(reward_of(&h, "\"\\\\pi\"", "\\boxed{3.14159265}"), 1.0);
    harness_close(&h);
    open_math(&h, "tolerance = 1e-4;");
    cr_assert_eq(reward_of(&h, "\"\\\\pi\"", "\\boxed{3.1416}"), 1.0, "2.3e-6 off");
    cr_assert_eq(reward_of(&h, "\"\\\\pi\"", "\\boxed{3.14}"), 0.0, "5.1e-4 off");
    harness_close(&h);
    open_math(&h, "tolerance = 0.01;");
    cr_assert_eq(reward_of(&h, "\"\\\\pi\"", "\\boxed{3.14}"), 1.0);
    /* two rationals are never compared within a tolerance */
    cr_assert_eq(reward_of(&h, "\"1/3\"", "\\boxed{0.333}"), 0.0);
    harness_close(&h);
    open_math(&h, "tolerance = 0;");
    cr_assert_eq(reward_of(&h, "\"\\\\sqrt{2}\"", "\\boxed{\\frac{2}{\\sqrt{2}}}"), 1.0,
                 "equal values within round-off");
    harness_close(&h);
    cr_assert_neq(harness_open(&h, "math", TERN_KIND_REWARD, "tolerance = 0.5;"), TERN_OK);
    cr_assert(strstr(h.error, "tolerance"), "%s", h.error);
    harness_close(&h);
    cr_assert_neq(harness_open(&h, "math", TERN_KIND_REWARD, "tolerence = 0.1;"), TERN_OK);
    cr_assert(strstr(h.error, "did you mean 'tolerance'"), "%s", h.error);
    harness_close(&h);
}

Test(math_reward, random_points_decides_how_hard_expressions_are_checked)
{
    harness h;
    open_math(&h, "");
    cr_assert_eq(reward_of(&h, "\"x\"", "\\boxed{|x|}"), 0.0, "x < 0 tells them apart");
    cr_assert_eq(reward_of(&h, "\"x^2+2x+1\"", "\\boxed{(x+1)^2}"), 1.0);
    harness_close(&h);
    /* one point, positive: |x| and x agree there (the documented weakness of few points) */
    open_math(&h, "random_points = 1;");
    cr_assert_eq(reward_of(&h, "\"x\"", "\\boxed{|x|}"), 1.0);
    cr_assert_eq(reward_of(&h, "\"x^2+2x+1\"", "\\boxed{(x+1)^2}"), 1.0);
    cr_assert_eq(reward_of(&h, "\"x^2+2x+2\"", "\\boxed{(x+1)^2}"), 0.0);
    harness_close(&h);
    open_math(&h, "random_points = 16;");
    cr_assert_eq(reward_of(&h, "\"x\"", "\\boxed{|x|}"), 0.0);
    harness_close(&h);
    cr_assert_neq(harness_open(&h, "math", TERN_KIND_REWARD, "random_points = 17;"), TERN_OK);
    cr_assert(strstr(h.error, "random_points"), "%s", h.error);
    harness_close(&h);
}

Test(math_reward, percent_either_or_fraction)
{
    harness h;
    open_math(&h, "");
    cr_assert_eq(reward_of(&h, "\"0.1\"", "\\boxed{10\\%}"), 1.0);
    cr_assert_eq(reward_of(&h, "\"10\"", "\\boxed{10\\%}"), 1.0);
    tern_task *t = task_with_answer("\"10\"");
    tern_reward_result r = score_text(&h, t, "\\boxed{10\\%}");
    cr_assert_str_eq(r.reason, "boxed answer 10\\% equals gold 10 (as percent)");
    tern_task_free(t);
    harness_close(&h);
    open_math(&h, "percent = \"fraction\";");
    cr_assert_eq(reward_of(&h, "\"0.1\"", "\\boxed{10\\%}"), 1.0);
    cr_assert_eq(reward_of(&h, "\"10\"", "\\boxed{10\\%}"), 0.0);
    cr_assert_eq(reward_of(&h, "\"10\\\\%\"", "\\boxed{10}"), 0.0);
    harness_close(&h);
    cr_assert_neq(harness_open(&h, "math", TERN_KIND_REWARD, "percent = \"both\";"), TERN_OK);
    cr_assert(strstr(h.error, "percent"), "%s", h.error);
    harness_close(&h);
}

Test(math_reward, reasons_say_how_answers_were_compared)
{
    harness h;
    open_math(&h, "");
    static const struct {
        const char *gold, *response, *reason;
    } cases[] = {
        {"\"\\\\frac{\\\\sqrt{2}}{2}\"", "\\boxed{\\frac{1}{\\sqrt{2}}}",
         "boxed answer \\frac{1}{\\sqrt{2}} equals gold \\frac{\\sqrt{2}}{2} (numerically)"},
        {"\"x^2+2x+1\"", "\\boxed{(x+1)^2}",
         "boxed answer (x+1)^2 equals gold x^2+2x+1 (at random points)"},
        {"\"1,2\"", "\\boxed{2, 1}", "boxed answer 2, 1 equals gold 1,2 (in any order)"},
        {"\"1\"", "\\boxed{1/0}", "extracted 1/0 (boxed answer), gold 1; undefined value"},
        {"\"1\"", "\\boxed{0^0}", "extracted 0^0 (boxed answer), gold 1; undefined value"},
        {"\"1\"", "\\boxed{10^{10^{10}}}",
         "extracted 10^{10^{10}} (boxed answer), gold 1; too large to evaluate"},
        {"\"42\"", "The answer is 42 apples.", "stated answer 42 equals gold 42"},
        {"\"7\"", "The code word is QX7Z.", "no answer found"},
        {"\"1/2\"", "\\boxed{\\int_0^1 x\\,dx}",
         "extracted \\int_0^1 x\\,dx (boxed answer), gold 1/2; cannot parse: unsupported syntax"},
        {"\"23\"", "\\boxed{2 3}",
         "extracted 2 3 (boxed answer), gold 23; cannot parse: numbers apart with a space"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tern_task *t = task_with_answer(cases[i].gold);
        tern_reward_result r = score_text(&h, t, cases[i].response);
        cr_expect_str_eq(r.reason, cases[i].reason, "case %zu", i);
        assert_reason_clean(&r);
        tern_task_free(t);
    }
    harness_close(&h);
}

/* ---- hostile answers: a verdict and a reason, quickly -------------------------------- */

static double seconds_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) * 1e-9;
}

/* Scores `response` against `gold` (both raw bytes) with the gold in a JSON
 * string, and checks the verdict is quick and its reason clean. */
static tern_reward_result judge_hostile(const harness *h, const char *gold, size_t glen,
                                        const char *response, size_t rlen, const char *what)
{
    /* JSON-escape the gold: quotes, backslashes and control bytes */
    char *json = malloc(glen * 6 + 32);
    cr_assert_not_null(json);
    size_t o = (size_t)sprintf(json, "{\"answer\": \"");
    for (size_t i = 0; i < glen; i++) {
        unsigned char c = (unsigned char)gold[i];
        if (c == '"' || c == '\\')
            o += (size_t)sprintf(json + o, "\\%c", c);
        else if (c < 0x20)
            o += (size_t)sprintf(json + o, "\\u%04x", c);
        else
            json[o++] = (char)c;
    }
    strcpy(json + o, "\"}");
    tern_task *t = NULL;
    cr_assert_eq(tern_task_parse(json, strlen(json), "test", &t), TERN_OK, "%s: %s", what,
                 tern_error_message());
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    tern_reward_result r = reward_score_bytes(h, t, response, rlen);
    double dt = seconds_since(&t0);
    cr_expect_lt(dt, 0.5, "%s took %.3f s", what, dt);
    cr_assert(r.reward == 0.0 || r.reward == 1.0, "%s: reward %g", what, r.reward);
    assert_reason_clean(&r);
    tern_task_free(t);
    free(json);
    return r;
}

/* open + a middle + close, n copies of open and of close */
static char *nested(const char *open, const char *middle, const char *close, size_t n, size_t *len)
{
    size_t a = strlen(open), m = strlen(middle), c = strlen(close);
    char *s = malloc(n * (a + c) + m + 1);
    cr_assert_not_null(s);
    size_t o = 0;
    for (size_t i = 0; i < n; i++, o += a)
        memcpy(s + o, open, a);
    memcpy(s + o, middle, m);
    o += m;
    for (size_t i = 0; i < n; i++, o += c)
        memcpy(s + o, close, c);
    s[o] = '\0';
    *len = o;
    return s;
}

Test(math_reward, deep_nesting_is_judged_quickly)
{
    harness h;
    open_math(&h, "");
    static const struct {
        const char *open, *middle, *close;
        size_t n;
        double reward;
    } cases[] = {
        {"{", "1", "}", 100000, 1},           /* a 200 kB group holding 1: the last number */
        {"(", "1", ")", 100000, 1},
        {"\\boxed{", "1", "}", 100000, 1},    /* the innermost box holds 1 */
        {"\\boxed{(", "1", ")}", 100000, 1},  /* the innermost box holds (1) */
        {"\\boxed{{", "1", "}}", 30, 1},      /* short enough: braces group */
        {"\\boxed{(", "1", ")}", 30, 1},      /* the outermost box: (((1))) */
        {"\\boxed{" "((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((", "1",
         "))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))}", 1, 0},
        {"\\sqrt{", "1", "}", 2000, 1},       /* last number */
        {"-", "1", "", 100000, 0},            /* -(-(-...1)) past the nesting bound */
        {"2^{", "1", "}", 600, 1},            /* a final line too long: the last number */
        {"\\frac{1}{", "1", "}", 600, 1},     /* the last number, 1 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len;
        char *s = nested(cases[i].open, cases[i].middle, cases[i].close, cases[i].n, &len);
        char what[128];
        snprintf(what, sizeof what, "case %zu: \"%s\" x %zu", i, cases[i].open, cases[i].n);
        tern_reward_result r = judge_hostile(&h, "1", 1, s, len, what);
        cr_expect_eq(r.reward, cases[i].reward, "%s: %s", what, r.reason);
        /* the same bytes as gold: equal to themselves, and quick */
        r = judge_hostile(&h, s, len, "\\boxed{1}", 9, what);
        free(s);
    }
    harness_close(&h);
}

Test(math_reward, hostile_expressions_get_a_verdict_and_a_reason)
{
    harness h;
    open_math(&h, "");
    static const struct {
        const char *response, *gold;
        double reward;
        const char *in_reason;
    } cases[] = {
        {"\\boxed{}", "1", 0, "no answer found"},
        {"\\boxed{ $ $ }", "1", 0, "no answer found"},
        {"\\boxed{10^{10^{10}}}", "1", 0, "too large to evaluate"},
        {"\\boxed{10^{10^{10}}}", "10^{10^{10}}", 1, "same text"},
        {"\\boxed{2^{2^{2^{2^{2^{2}}}}}}", "2", 0, "too large to evaluate"},
        {"\\boxed{(-1)^{10^{100}}}", "1", 1, ""},
        {"\\boxed{1/0}", "1", 0, "undefined value"},
        {"\\boxed{0/0}", "0", 0, "undefined value"},
        {"\\boxed{0^0}", "1", 0, "undefined value"},
        {"\\boxed{0^{-1}}", "0", 0, "undefined value"},
        {"\\boxed{\\sqrt{-1}}", "1", 0, "undefined value"},
        {"\\boxed{\\ln 0}", "0", 0, "undefined value"},
        {"\\boxed{5!}", "120", 1, "equals"},
        {"\\boxed{(-1)!}", "1", 0, "undefined value"},
        {"\\boxed{171!}", "1", 0, "too large to evaluate"},
        {"\\boxed{5!!}", "15", 0, ""},
        {"\\boxed{\\lim_{x\\to 0} x}", "0", 0, "cannot parse"},
        {"\\boxed{\\sum_{k=1}^{n} k}", "n(n+1)/2", 0, "cannot parse"},
        {"\\boxed{x}", "\\int x", 0, "cannot parse"},
        {"\\boxed{{{{1}", "1", 1, "last number"},
        {"\\boxed{1}}}}", "1", 1, "boxed"},
        {"\\boxed{(1}", "1", 0, "cannot parse: unclosed bracket"},
        {"\\boxed{1)}", "1", 0, "cannot parse: unbalanced brackets"},
        {"\\boxed{[1, 2)}", "[1,2)", 1, "equals"},
        {"\\boxed{\xff + 1}", "1", 0, "cannot parse: unsupported syntax"},
        {"\\boxed{\xc3\x28}", "1", 0, "cannot parse"},
        {"\\boxed{1 + \\unknowncommand}", "1", 0, "cannot parse: unsupported syntax"},
        {"\\boxed{a_{n+1}}", "1", 0, "cannot parse: unsupported subscript"},
        {"\\boxed{x^}", "1", 0, "cannot parse: incomplete expression"},
        {"\\boxed{a b c d e f g h i j k l m n o p q r}", "1", 0,
         "cannot parse: too many variables"},
        {"\\boxed{\\frac{}{}}", "1", 0, "cannot parse"},
        {"\\boxed{1 < 2 < 3 < 4}", "1", 0, "cannot parse: too many relations"},
        {"\\boxed{1 = 2 = 3 = 4}", "1", 0, "extracted 1 = 2 = 3 = 4"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char what[160];
        snprintf(what, sizeof what, "case %zu: %s vs %s", i, cases[i].response, cases[i].gold);
        tern_reward_result r = judge_hostile(&h, cases[i].gold, strlen(cases[i].gold),
                                             cases[i].response, strlen(cases[i].response), what);
        cr_expect_eq(r.reward, cases[i].reward, "%s: %s", what, r.reason);
        cr_expect(strstr(r.reason, cases[i].in_reason), "%s: %s", what, r.reason);
    }
    harness_close(&h);
}

Test(math_reward, nul_bytes_and_invalid_utf8_inside_expressions)
{
    harness h;
    open_math(&h, "");
    static const char with_nul[] = "\\boxed{x\0 + 1}";
    tern_reward_result r = judge_hostile(&h, "x+1", 3, with_nul, sizeof with_nul - 1, "NUL");
    cr_assert_eq(r.reward, 0.0, "%s", r.reason);
    cr_assert(strstr(r.reason, "x? + 1"), "%s", r.reason);
    static const char bad[] = "\\boxed{\xed\xa0\x80 \xf8\x88\x80\x80\x80}";
    r = judge_hostile(&h, "1", 1, bad, sizeof bad - 1, "surrogate and 5-byte sequences");
    cr_assert_eq(r.reward, 0.0, "%s", r.reason);
    harness_close(&h);
}

Test(math_reward, a_megabyte_of_maths_is_judged_in_linear_time)
{
    harness h;
    open_math(&h, "");
    static const struct {
        const char *unit, *tail;
    } cases[] = {
        {"1+", "1"}, {"x", ""}, {"\\frac12", ""}, {"1,000,", "1"}, {"\\{1, ", "\\}"},
        {"(1, ", ")"}, {"10^{", "}"}, {"\\text{ cm}", "5"}, {"\\pm", "1"}, {"2\\sqrt", "2"},
        {"|", "1"}, {"\\left(", ""}, {"x = ", "1"}, {"1 \\cup ", "1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len;
        char *body = reward_repeat(cases[i].unit, MEGABYTE, cases[i].tail, &len);
        char *boxed = malloc(len + 16);
        cr_assert_not_null(boxed);
        int n = sprintf(boxed, "\\boxed{%s}", body);
        char what[64];
        snprintf(what, sizeof what, "\"%s\" x 1MB", cases[i].unit);
        judge_hostile(&h, "1", 1, boxed, (size_t)n, what);
        judge_hostile(&h, body, len, "\\boxed{1}", 9, what); /* as gold */
        free(boxed);
        free(body);
    }
    harness_close(&h);
}

/* A list just under the parsing bound with every element to match: the
 * matching is quadratic, and the comparison budget keeps it bounded. */
Test(math_reward, long_lists_stay_within_the_budget)
{
    harness h;
    open_math(&h, "");
    char resp[4096], gold[4096];
    size_t ro = (size_t)sprintf(resp, "\\boxed{"), go = 0;
    for (int i = 0; i < 400; i++) {
        ro += (size_t)sprintf(resp + ro, "%s%d", i ? ", " : "", i);
        go += (size_t)sprintf(gold + go, "%s%d", i ? ", " : "", 399 - i);
    }
    strcpy(resp + ro, "}");
    cr_assert_lt(strlen(gold), (size_t)2048);
    tern_reward_result r = judge_hostile(&h, gold, go, resp, ro + 1, "400 answers");
    cr_expect(r.reward == 1.0 || strstr(r.reason, "too complex"), "%s", r.reason);
    gold[go - 1] = '7'; /* ..., 7 instead of 0 */
    r = judge_hostile(&h, gold, go, resp, ro + 1, "400 answers, one wrong");
    cr_expect_eq(r.reward, 0.0, "%s", r.reason);
    harness_close(&h);
}
