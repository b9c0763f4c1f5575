/* test_format_reward.c: the `format` reward plugin through its ops table
 * (harness.h): its corpus (tests/corpora/format.jsonl) with the default
 * template; custom templates, nonempty, regular expressions (whole-response
 * match, NUL bytes, no NUL at the end), rewards and component names; bad
 * settings refused at start; megabyte responses judged quickly. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "corpus.h"
#include "harness.h"
#include "data/task.h"
#include "tern/reward.h"

static tern_task *empty_task(void)
{
    tern_task *t = NULL;
    cr_assert_eq(tern_task_parse("{}", 2, "test", &t), TERN_OK);
    return t;
}

/* Score s[0..len) copied into a block of exactly len bytes (no NUL after it,
 * so AddressSanitizer catches a read past response_len). */
static tern_reward_result score_bytes(harness *h, const char *s, size_t len)
{
    tern_task *t = empty_task();
    char *copy = malloc(len ? len : 1);
    cr_assert_not_null(copy);
    memcpy(copy, s, len);
    tern_reward_item it = {.size = sizeof it, .task = t, .response = copy, .response_len = len};
    tern_reward_result r;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    const tern_reward_ops *ops = harness_ops(h);
    cr_assert_eq(ops->score(h->state, &it, &r, 1), TERN_OK);
    free(copy);
    tern_task_free(t);
    return r;
}

static tern_reward_result score(harness *h, const char *s) { return score_bytes(h, s, strlen(s)); }

static void open_format(harness *h, const char *settings)
{
    cr_assert_eq(harness_open(h, "format", TERN_KIND_REWARD, settings), TERN_OK, "%s: %s",
                 settings, h->error);
}

Test(format_reward, corpus)
{
    harness h;
    open_format(&h, "");
    corpus_result c;
    int rc = corpus_run(&h, TERN_TEST_SOURCE_DIR "/tests/corpora/format.jsonl", &c);
    cr_assert_eq(rc, TERN_OK, "%s", h.error);
    printf("format corpus: %zu/%zu right\n", c.right, c.cases);
    cr_expect_geq(c.cases, 30);
    cr_expect_eq(c.right, c.cases, "first miss: %s", c.first_wrong);
    harness_close(&h);
}

Test(format_reward, component_reward_and_reason)
{
    harness h;
    open_format(&h, "reward = 0.5; miss_reward = -1.0; component = \"tags\";");
    tern_reward_result r = score(&h, "<think>a</think><answer>b</answer>");
    cr_expect_eq(r.reward, 0.5);
    cr_assert_eq(r.n_components, 1);
    cr_expect_str_eq(r.components[0].name, "tags");
    cr_expect_eq(r.components[0].value, 1);
    cr_expect_str_eq(r.reason, "matches the template <think>...</think><answer>...</answer>");
    r = score(&h, "just text");
    cr_expect_eq(r.reward, -1);
    cr_expect_eq(r.components[0].value, 0);
    harness_close(&h);
}

Test(format_reward, custom_template_and_nonempty)
{
    harness h;
    open_format(&h, "template = \"Reasoning: ...\\nAnswer: ...\";");
    cr_expect_eq(score(&h, "Reasoning: add them\nAnswer: 4").reward, 1);
    cr_expect_eq(score(&h, "Reasoning: add them   Answer: 4").reward, 1,
                 "a whitespace run matches any whitespace run");
    cr_expect_eq(score(&h, "Reasoning: add themAnswer: 4").reward, 1,
                 "... or none");
    cr_expect_eq(score(&h, "Answer: 4").reward, 0);
    harness_close(&h);
    open_format(&h, "nonempty = false;");
    cr_expect_eq(score(&h, "<think></think><answer></answer>").reward, 1);
    harness_close(&h);
    open_format(&h, "template = \"no wildcard here\";");
    cr_expect_eq(score(&h, "  no   wildcard here\n").reward, 1);
    cr_expect_eq(score(&h, "no wildcard here!").reward, 0);
    harness_close(&h);
}

Test(format_reward, regex_must_match_the_whole_response)
{
    harness h;
    open_format(&h, "regex = \"#### -?[0-9]+\";");
    cr_expect_eq(score(&h, "#### 42").reward, 1);
    cr_expect_eq(score(&h, "#### -7").reward, 1);
    cr_expect_eq(score(&h, "so #### 42").reward, 0, "text before");
    cr_expect_eq(score(&h, "#### 42 apples").reward, 0, "text after");
    cr_expect_str_eq(score(&h, "x").reason, "does not match the regex #### -?[0-9]+");
    /* bytes past a NUL are part of the response */
    cr_expect_eq(score_bytes(&h, "#### 4\0002", 8).reward, 0);
    harness_close(&h);
    open_format(&h, "regex = \"(.|\\n)*<answer>[^<]+</answer>\";");
    cr_expect_eq(score(&h, "line 1\nline 2\n<answer>4</answer>").reward, 1);
    harness_close(&h);
}

Test(format_reward, bad_settings_are_refused_at_start)
{
    harness h;
    cr_expect_neq(harness_open(&h, "format", TERN_KIND_REWARD, "regex = \"(\";"), TERN_OK);
    cr_expect(strstr(h.error, "not a POSIX extended regular expression"), "%s", h.error);
    harness_close(&h);
    cr_expect_neq(harness_open(&h, "format", TERN_KIND_REWARD,
                               "regex = \"x\"; template = \"...\";"), TERN_OK);
    cr_expect(strstr(h.error, "either template or regex"), "%s", h.error);
    harness_close(&h);
    cr_expect_neq(harness_open(&h, "format", TERN_KIND_REWARD, "component = \"Bad Name\";"),
                  TERN_OK);
    cr_expect(strstr(h.error, "not a component name"), "%s", h.error);
    harness_close(&h);
    cr_expect_neq(harness_open(&h, "format", TERN_KIND_REWARD, "template = \"\";"), TERN_OK);
    cr_expect(strstr(h.error, "template is empty"), "%s", h.error);
    harness_close(&h);
    char many[200] = "template = \"";
    for (int i = 0; i < 32; i++)
        strcat(many, "a...");
    strcat(many, "\";");
    cr_expect_neq(harness_open(&h, "format", TERN_KIND_REWARD, many), TERN_OK);
    cr_expect(strstr(h.error, "wildcards"), "%s", h.error);
    harness_close(&h);
}

Test(format_reward, hostile_responses_are_judged_quickly)
{
    harness h;
    open_format(&h, "");
    size_t n = 1 << 20;
    char *big = malloc(n);
    cr_assert_not_null(big);
    clock_t t0 = clock();
    memset(big, '<', n);
    cr_expect_eq(score_bytes(&h, big, n).reward, 0);
    for (size_t i = 0; i + 7 <= n; i += 7)
        memcpy(big + i, "<think>", 7);
    cr_expect_eq(score_bytes(&h, big, n).reward, 0);
    /* many candidate middles: </think><answer> over and over, then the end */
    const char *unit = "</think><answer>";
    size_t u = strlen(unit), k = 0;
    memcpy(big, "<think>", 7);
    for (k = 7; k + u + 9 < n; k += u)
        memcpy(big + k, unit, u);
    memcpy(big + k, "</answer>", 9);
    cr_expect_eq(score_bytes(&h, big, k + 9).reward, 1);
    for (size_t i = 0; i < n; i++)
        big[i] = (char)(0x80 + i % 64); /* not UTF-8 */
    cr_expect_eq(score_bytes(&h, big, n).reward, 0);
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    cr_expect_lt(secs, 5.0, "four megabyte responses took %.2f s", secs);
    free(big);
    harness_close(&h);
    open_format(&h, "max_bytes = 100;");
    char text[200];
    memset(text, 'a', sizeof text);
    tern_reward_result r = score_bytes(&h, text, sizeof text);
    cr_expect_eq(r.reward, 0);
    cr_expect(strstr(r.reason, "more than max_bytes (100)"), "%s", r.reason);
    cr_expect_str_eq(score_bytes(&h, "", 0).reason, "empty response");
    harness_close(&h);
}
