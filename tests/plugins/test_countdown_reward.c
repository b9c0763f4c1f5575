/* test_countdown_reward.c: the `countdown` reward plugin through its ops
 * table (harness.h), and its expression evaluator (countdown_expr.h) by hand:
 * right answers in any order and shape, each rule broken once (a number not
 * given, used twice, left out; a wrong value; a fraction), the stated "= N",
 * <answer> tags, the puzzle read from the task (and refused when it is not
 * one), the settings, and hostile text. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "countdown_expr.h"
#include "harness.h"
#include "reward_case.h"
#include "data/task.h"
#include "tern/reward.h"

#define PUZZLE "{\"numbers\":[3,5,8],\"target\":6}"

static void open_countdown(harness *h, const char *settings)
{
    cr_assert_eq(harness_open(h, "countdown", TERN_KIND_REWARD, settings), TERN_OK,
                 "harness_open(\"%s\"): %s", settings, h->error);
}

static tern_reward_result judge(const harness *h, const char *task_json, const char *response)
{
    tern_task *t = reward_task_of(task_json);
    tern_reward_result r = reward_score_bytes(h, t, response, strlen(response));
    tern_task_free(t);
    return r;
}

/* The verdict on `response` to PUZZLE: accuracy, format, and the reason
 * containing `why`. */
static void expect(const harness *h, const char *response, int right, int format,
                   const char *why)
{
    tern_reward_result r = judge(h, PUZZLE, response);
    cr_expect_eq(reward_component(&r, "accuracy"), right, "'%s': %s", response, r.reason);
    cr_expect_eq(reward_component(&r, "format"), format, "'%s': %s", response, r.reason);
    cr_expect_eq(r.reward, right ? 1.0 : 0.0, "'%s'", response);
    cr_expect(strstr(r.reason, why), "'%s': reason '%s' lacks '%s'", response, r.reason, why);
}

Test(countdown_expr, values_by_hand)
{
    countdown_expr e;
    cr_assert_eq(countdown_expr_eval("8-5+3", 5, &e), COUNTDOWN_EXPR_OK);
    cr_expect_eq(e.num, 6);
    cr_expect_eq(e.den, 1);
    cr_assert_eq(e.n_numbers, 3);
    cr_expect(e.numbers[0] == 8 && e.numbers[1] == 5 && e.numbers[2] == 3);
    /* precedence: 2 + 3*4 = 14; parentheses: (2+3)*4 = 20 */
    cr_assert_eq(countdown_expr_eval("2+3*4", 5, &e), COUNTDOWN_EXPR_OK);
    cr_expect_eq(e.num, 14);
    cr_assert_eq(countdown_expr_eval(" ( 2 + 3 ) * 4 ", 15, &e), COUNTDOWN_EXPR_OK);
    cr_expect_eq(e.num, 20);
    /* exact fractions: 8/3*3 = 8; 1/3 + 1/6 = 1/2; 7/2 stays 7/2 */
    cr_assert_eq(countdown_expr_eval("8/3*3", 5, &e), COUNTDOWN_EXPR_OK);
    cr_expect(e.num == 8 && e.den == 1);
    cr_assert_eq(countdown_expr_eval("1/3+1/6", 7, &e), COUNTDOWN_EXPR_OK);
    cr_expect(e.num == 1 && e.den == 2, "%lld/%lld", (long long)e.num, (long long)e.den);
    cr_assert_eq(countdown_expr_eval("3-10", 4, &e), COUNTDOWN_EXPR_OK);
    cr_expect(e.num == -7 && e.den == 1);
    /* left to right: 10-3-2 = 5, 12/2/3 = 2 */
    cr_assert_eq(countdown_expr_eval("10-3-2", 6, &e), COUNTDOWN_EXPR_OK);
    cr_expect_eq(e.num, 5);
    cr_assert_eq(countdown_expr_eval("12/2/3", 6, &e), COUNTDOWN_EXPR_OK);
    cr_expect_eq(e.num, 2);
}

Test(countdown_expr, errors_by_hand)
{
    countdown_expr e;
    cr_expect_eq(countdown_expr_eval("  ", 2, &e), COUNTDOWN_EXPR_EMPTY);
    cr_expect_eq(countdown_expr_eval("-3+5", 4, &e), COUNTDOWN_EXPR_SYNTAX, "no unary minus");
    cr_expect_eq(e.at, 0);
    cr_expect_eq(countdown_expr_eval("3+", 2, &e), COUNTDOWN_EXPR_SYNTAX);
    cr_expect_eq(e.at, 2);
    cr_expect_eq(countdown_expr_eval("(3+5", 4, &e), COUNTDOWN_EXPR_SYNTAX);
    cr_expect_eq(countdown_expr_eval("3+5)", 4, &e), COUNTDOWN_EXPR_SYNTAX);
    cr_expect_eq(e.at, 3);
    cr_expect_eq(countdown_expr_eval("3 5", 3, &e), COUNTDOWN_EXPR_SYNTAX);
    cr_expect_eq(countdown_expr_eval("3\0" "5", 3, &e), COUNTDOWN_EXPR_SYNTAX);
    cr_expect_eq(countdown_expr_eval("3/(5-5)", 7, &e), COUNTDOWN_EXPR_DIV_ZERO);
    cr_expect_eq(countdown_expr_eval("1234567890123456789", 19, &e), COUNTDOWN_EXPR_TOO_LARGE);
    cr_expect_eq(countdown_expr_eval("999999999999999999*999999999999999999", 37, &e),
                 COUNTDOWN_EXPR_TOO_LARGE);
    char deep[80] = "";
    for (int i = 0; i < 33; i++)
        strcat(deep, "(");
    strcat(deep, "1");
    cr_expect_eq(countdown_expr_eval(deep, strlen(deep), &e), COUNTDOWN_EXPR_TOO_DEEP);
    char many[200] = "1";
    for (int i = 0; i < 32; i++)
        strcat(many, "+1");
    cr_expect_eq(countdown_expr_eval(many, strlen(many), &e), COUNTDOWN_EXPR_TOO_MANY);
}

Test(countdown_reward, right_in_any_order_and_shape)
{
    harness h;
    open_countdown(&h, "");
    expect(&h, "8-5+3", 1, 1, "'8-5+3' = 6, the target");
    expect(&h, "3+8-5", 1, 1, "the target");
    expect(&h, " (8 - 5) + 3\n", 1, 1, "the target");
    expect(&h, "8-(5-3)", 1, 1, "the target"); /* 8 - 2 */
    expect(&h, "8-(5+3)", 0, 1, "= 0, not the target 6");
    expect(&h, "8-5+3=6", 1, 1, "the target");
    expect(&h, "<think>8-5 is 3</think><answer>8-5+3</answer>", 1, 1, "the target");
    harness_close(&h);
}

Test(countdown_reward, each_rule_broken)
{
    harness h;
    open_countdown(&h, "");
    expect(&h, "8-5+4", 0, 0, "uses 4, which is not one of the puzzle's numbers");
    expect(&h, "8-5+5", 0, 0, "uses 5 more often than the puzzle gives it (1 time)");
    expect(&h, "8-5", 0, 0, "does not use 3");
    expect(&h, "8+5-3", 0, 1, "'8+5-3' = 10, not the target 6");
    expect(&h, "8/5*3", 0, 1, "= 24/5, not the target 6");
    expect(&h, "8-5+3=7", 0, 0, "is 6, not what follows its '='");
    expect(&h, "six", 0, 0, "is not an expression");
    expect(&h, "", 0, 0, "no expression found");
    expect(&h, "8/(5-5)+3", 0, 0, "division by zero");
    harness_close(&h);
}

Test(countdown_reward, settings)
{
    harness h;
    open_countdown(&h, "use_all = false; format_reward = 0.1;");
    tern_reward_result r = judge(&h, "{\"numbers\":[3,5,8,1],\"target\":13}", "8+5");
    cr_expect_eq(reward_component(&r, "accuracy"), 1, "%s", r.reason);
    r = judge(&h, "{\"numbers\":[3,5,8],\"target\":13}", "8+3");
    cr_expect_eq(r.reward, 0.1, "a well-formed miss earns format_reward: %s", r.reason);
    cr_expect_eq(reward_component(&r, "format"), 1);
    r = judge(&h, "{\"numbers\":[3,5,8],\"target\":13}", "8+3+3");
    cr_expect_eq(r.reward, 0.0, "3 twice breaks the rules: %s", r.reason);
    harness_close(&h);

    open_countdown(&h, "numbers_field = \"nums\"; target_field = \"goal\";");
    r = judge(&h, "{\"nums\":[2,7],\"goal\":14}", "7*2");
    cr_expect_eq(reward_component(&r, "accuracy"), 1, "%s", r.reason);
    harness_close(&h);

    cr_expect_neq(harness_open(&h, "countdown", TERN_KIND_REWARD, "numbers_field = \"\";"),
                  TERN_OK);
    cr_expect(strstr(h.error, "numbers_field"), "%s", h.error);
    harness_close(&h);
    cr_expect_neq(harness_open(&h, "countdown", TERN_KIND_REWARD, "format_reward = 2.0;"),
                  TERN_OK);
    cr_expect(strstr(h.error, "format_reward"), "%s", h.error);
    harness_close(&h);
}

Test(countdown_reward, tasks_that_are_not_puzzles)
{
    harness h;
    open_countdown(&h, "");
    static const struct {
        const char *task, *why;
    } bad[] = {
        {"{\"numbers\":[3,5,8]}", "task has no target field 'target'"},
        {"{\"numbers\":[3,5,8],\"target\":6.5}", "is not a whole number"},
        {"{\"numbers\":[3,5,8],\"target\":\"6\"}", "is not a whole number"},
        {"{\"target\":6}", "task has no numbers field 'numbers'"},
        {"{\"numbers\":[3,-5,8],\"target\":6}", "is not an array of at most 32 whole numbers"},
        {"{\"numbers\":[3,5.0,8],\"target\":6}", "is not an array"},
        {"{\"numbers\":\"3 5 8\",\"target\":6}", "is not an array"},
        {"{\"numbers\":[],\"target\":6}", "is an empty array"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tern_reward_result r = judge(&h, bad[i].task, "8-5+3");
        cr_expect_eq(r.reward, 0.0, "%s", bad[i].task);
        cr_expect_eq(reward_component(&r, "accuracy"), 0);
        cr_expect(strstr(r.reason, bad[i].why), "%s: %s", bad[i].task, r.reason);
    }
    harness_close(&h);
}

Test(countdown_reward, hostile_text)
{
    harness h;
    open_countdown(&h, "");
    size_t len = 0;
    char *big = reward_repeat("(1+", 1 << 20, "", &len);
    tern_task *t = reward_task_of(PUZZLE);
    tern_reward_result r = reward_score_bytes(&h, t, big, len);
    cr_expect_eq(r.reward, 0.0);
    cr_expect(strstr(r.reason, "nested more than 32 deep"), "%s", r.reason);
    free(big);
    big = reward_repeat("\xff\x01=", 1 << 16, "", &len);
    r = reward_score_bytes(&h, t, big, len);
    cr_expect_eq(r.reward, 0.0);
    for (const char *p = r.reason; *p; p++)
        cr_expect((unsigned char)*p >= 0x20, "control byte in the reason: %s", r.reason);
    free(big);
    tern_task_free(t);
    harness_close(&h);
}
