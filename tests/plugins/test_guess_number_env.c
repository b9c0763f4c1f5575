/* test_guess_number_env.c: the `guess_number` environment through its ops
 * table (harness.h): a scripted binary search solves every episode, with
 * reward 0 and "higher"/"lower" on the wrong guesses and reward 1, done and
 * "Correct!" on the right one; the seed decides the secret; a task's
 * low/high/secret win over the settings; a reply without a number is told
 * so (no failure); a step after done, a bad task and bad settings. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/task.h"
#include "harness.h"
#include "tern/environment.h"

static const tern_environment_ops *open_guess(harness *h, const char *settings)
{
    int rc = harness_open(h, "guess_number", TERN_KIND_ENVIRONMENT, settings);
    cr_assert_eq(rc, TERN_OK, "harness_open: %s", h->error);
    return harness_ops(h);
}

static tern_env_result fresh(void)
{
    tern_env_result r;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    return r;
}

static void *reset(harness *h, const char *json, uint64_t seed, tern_env_result *out)
{
    const tern_environment_ops *ops = harness_ops(h);
    tern_task *t = NULL;
    cr_assert_eq(tern_task_parse(json, strlen(json), "test", &t), TERN_OK, "%s", json);
    void *ep = NULL;
    *out = fresh();
    cr_assert_eq(ops->reset(h->state, t, seed, &ep, out), TERN_OK);
    tern_task_free(t);
    cr_assert_not_null(ep);
    return ep;
}

static void step(harness *h, void *ep, const char *text, tern_env_result *out)
{
    const tern_environment_ops *ops = harness_ops(h);
    tern_env_action a = {.size = sizeof a, .text = text, .text_len = strlen(text), .turn = 1};
    *out = fresh();
    cr_assert_eq(ops->step(h->state, ep, &a, out), TERN_OK);
    cr_assert_eq(out->failure, TERN_ENV_OK, "step '%s': %s", text, out->reason);
    cr_assert_not_null(out->observation, "every step answers");
}

static void close_ep(harness *h, void *ep)
{
    ((const tern_environment_ops *)harness_ops(h))->close(h->state, ep);
}

/* Binary search over [lo, hi] by the answers: the secret, and the turns. */
static long long solve(harness *h, void *ep, long long lo, long long hi, int *turns)
{
    tern_env_result r;
    for (*turns = 1; *turns <= 64; (*turns)++) {
        long long g = lo + (hi - lo) / 2;
        char text[64];
        snprintf(text, sizeof text, "My guess: %lld", g);
        step(h, ep, text, &r);
        if (r.done) {
            char want[64];
            snprintf(want, sizeof want, "Correct! The number was %lld.", g);
            cr_expect_str_eq(r.observation, want);
            cr_expect_eq(r.reward, 1.0, "reward 1 when guessed");
            return g;
        }
        cr_expect_eq(r.reward, 0.0, "reward 0 for a wrong guess");
        if (strstr(r.observation, "higher"))
            lo = g + 1;
        else if (strstr(r.observation, "lower"))
            hi = g - 1;
        else
            cr_assert_fail("neither higher nor lower: %s", r.observation);
        cr_assert_leq(lo, hi, "the answers contradict each other");
    }
    cr_assert_fail("not solved in 64 turns");
    return 0;
}

Test(guess_number, a_binary_search_solves_every_episode)
{
    harness h;
    open_guess(&h, "");
    int seen[101] = {0}, distinct = 0;
    for (uint64_t seed = 1; seed <= 60; seed++) {
        tern_env_result r;
        void *ep = reset(&h, "{\"prompt\": \"play\"}", seed, &r);
        cr_assert_eq(r.failure, TERN_ENV_OK, "%s", r.reason);
        cr_expect_str_eq(r.observation, "I am thinking of a number between 1 and 100. Guess "
                         "it; I will answer higher or lower. Reply with just the number.");
        int turns = 0;
        long long secret = solve(&h, ep, 1, 100, &turns);
        cr_expect_leq(turns, 7, "log2(100) turns at most");
        cr_assert(secret >= 1 && secret <= 100);
        distinct += !seen[secret]++;
        close_ep(&h, ep);
    }
    cr_expect_gt(distinct, 20, "the seed draws the secret: %d distinct in 60", distinct);
    harness_close(&h);
}

Test(guess_number, the_same_seed_the_same_secret)
{
    harness h;
    open_guess(&h, "low = -50; high = 50;");
    for (uint64_t seed = 100; seed < 110; seed++) {
        tern_env_result r;
        int t1, t2;
        void *a = reset(&h, "{}", seed, &r);
        cr_expect(strstr(r.observation, "between -50 and 50"), "%s", r.observation);
        void *b = reset(&h, "{}", seed, &r);
        cr_expect_eq(solve(&h, a, -50, 50, &t1), solve(&h, b, -50, 50, &t2), "seed %llu",
                     (unsigned long long)seed);
        close_ep(&h, a);
        close_ep(&h, b);
    }
    harness_close(&h);
}

Test(guess_number, a_tasks_range_and_secret_win)
{
    harness h;
    open_guess(&h, "");
    tern_env_result r;
    int turns;
    void *ep = reset(&h, "{\"low\": 7, \"high\": 7}", 1, &r);
    cr_expect(strstr(r.observation, "between 7 and 7"), "%s", r.observation);
    cr_expect_eq(solve(&h, ep, 7, 7, &turns), 7);
    cr_expect_eq(turns, 1);
    close_ep(&h, ep);
    ep = reset(&h, "{\"secret\": 42}", 1, &r);
    step(&h, ep, "41", &r);
    cr_expect_str_eq(r.observation, "41 is wrong: the number is higher.");
    step(&h, ep, "43", &r);
    cr_expect_str_eq(r.observation, "43 is wrong: the number is lower.");
    step(&h, ep, "42", &r);
    cr_expect(r.done);
    cr_expect_eq(r.reward, 1.0);
    close_ep(&h, ep);
    static const char *const bad[] = {"{\"secret\": 500}", "{\"low\": 9, \"high\": 3}",
                                      "{\"secret\": 2.5}", "{\"low\": \"one\"}"};
    static const char *const words[] = {"outside [1, 100]", "the range is empty",
                                        "\"secret\" is not a whole number",
                                        "\"low\" is not a whole number"};
    for (int i = 0; i < 4; i++) {
        ep = reset(&h, bad[i], 1, &r);
        cr_expect_eq(r.failure, TERN_ENV_ERROR, "%s", bad[i]);
        cr_expect(strstr(r.reason, words[i]), "%s: %s", bad[i], r.reason);
        close_ep(&h, ep);
    }
    harness_close(&h);
}

Test(guess_number, replies_without_a_number_and_numbers_in_words)
{
    harness h;
    open_guess(&h, "");
    tern_env_result r;
    void *ep = reset(&h, "{\"secret\": -3, \"low\": -10, \"high\": 10}", 1, &r);
    step(&h, ep, "no idea, sorry", &r);
    cr_expect_str_eq(r.observation, "I found no number in your reply. Reply with just the "
                     "number, between -10 and 10.");
    cr_expect_eq(r.reward, 0.0);
    cr_expect_not(r.done, "an unparseable reply is no failure and no end");
    step(&h, ep, "", &r);
    cr_expect(strstr(r.observation, "no number"), "%s", r.observation);
    step(&h, ep, "I think it is 5, or 6.", &r);
    cr_expect_str_eq(r.observation, "5 is wrong: the number is lower.", "the first integer");
    step(&h, ep, "99999999999999999999", &r);
    cr_expect(strstr(r.observation, "no number"), "too long to be one: %s", r.observation);
    step(&h, ep, "-3", &r);
    cr_expect(r.done, "a negative guess: %s", r.observation);
    tern_env_action a = {.size = sizeof a, .text = "1", .text_len = 1, .turn = 6};
    r = fresh();
    cr_expect_eq(((const tern_environment_ops *)harness_ops(&h))->step(h.state, ep, &a, &r),
                 TERN_OK);
    cr_expect_eq(r.failure, TERN_ENV_AFTER_DONE, "%s", r.reason);
    cr_expect(strstr(r.reason, "after the number was guessed"), "%s", r.reason);
    close_ep(&h, ep);
    harness_close(&h);
}

Test(guess_number, settings_and_caps)
{
    harness h;
    cr_expect_eq(harness_open(&h, "guess_number", TERN_KIND_ENVIRONMENT, "low = 9; high = 3;"),
                 TERN_ECONFIG);
    cr_expect(strstr(h.error, "high") && strstr(h.error, "below low"), "%s", h.error);
    harness_close(&h);
    open_guess(&h, "");
    cr_expect(h.entry->plugin->desc->caps & TERN_CAP_THREAD_SAFE);
    harness_close(&h);
}
