/* test_show.c: what a run keeps of its responses for a person to read, and
 * `tern show` (docs/run.md, "Looking at the responses"):
 *   - rollouts.jsonl keeps run.keep_groups groups of each step whole: the
 *     task's prompt and answer and every response, whose rewards are the
 *     line's own "rewards", with a verdict where the reward gives one;
 *   - eval_responses.jsonl keeps every evaluation response with its reward,
 *     verdict and reason, and its counts agree with metrics.jsonl's
 *     eval/accuracy;
 *   - run.keep_mb = 0 keeps none of them;
 *   - tern show prints a step's groups and an evaluation, and refuses what it
 *     cannot show with one line and exit 2; a torn last line is skipped. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "command.h"

#define TERN TERN_TEST_BIN
#define SRC TERN_TEST_SOURCE_DIR
#define WORK TERN_TEST_WORK_DIR

/* A short quickstart in WORK/runs/NAME, with `extra` overrides. */
static void short_run(const char *name, const char *extra)
{
    result r;
    run(&r, "rm -rf runs/%s && %s run %s/etc/quickstart.cfg -o 'run.out_dir=\"runs\"' "
        "-o 'run.name=\"%s\"' -o trainer.steps=3 -o trainer.sft.steps=30 -o eval.limit=6 "
        "-o eval.every=2 %s > /dev/null", name, TERN, SRC, name, extra);
    cr_assert_eq(r.code, 0, "%s", r.err);
}

Test(show, whole_groups_and_eval_responses_are_kept_and_shown, .timeout = 120)
{
    short_run("kept", "-o run.keep_groups=3");
    json_t *lines = json_lines(WORK "/runs/kept/rollouts.jsonl", NULL);
    size_t i, whole = 0;
    json_t *o;
    int per_step[4] = {0};
    json_array_foreach(lines, i, o) {
        json_t *all = json_object_get(o, "responses"), *rewards = json_object_get(o, "rewards");
        if (!all) {
            cr_expect_null(json_object_get(o, "prompt"), "only whole groups carry the prompt");
            continue;
        }
        whole++;
        long long step = json_integer_value(json_object_get(o, "step"));
        cr_assert(step >= 1 && step <= 3);
        per_step[step]++;
        cr_expect(json_is_string(json_object_get(o, "prompt")));
        cr_expect(json_is_string(json_object_get(o, "answer")));
        cr_assert_eq(json_array_size(all), 8, "every response of the group of 8");
        cr_expect_str_eq(json_string_value(json_object_get(json_array_get(all, 0), "response")),
                         json_string_value(json_object_get(o, "response")));
        size_t k;
        json_t *r;
        json_array_foreach(all, k, r) {
            double reward = json_number_value(json_object_get(r, "reward"));
            cr_expect_eq(reward, json_number_value(json_array_get(rewards, k)));
            /* the math reward gives an accuracy: right is 1 exactly when it is */
            cr_expect(json_is_boolean(json_object_get(r, "right")));
            cr_expect_eq(json_is_true(json_object_get(r, "right")),
                         json_number_value(json_object_get(json_object_get(r, "parts"),
                                                           "accuracy")) > 0);
        }
    }
    for (int s = 1; s <= 3; s++)
        cr_expect_eq(per_step[s], 3, "step %d kept %d groups whole", s, per_step[s]);
    json_decref(lines);

    /* evaluations at steps 0, 2 and 3, six tasks each, as the metrics count them */
    json_t *ev = json_lines(WORK "/runs/kept/eval_responses.jsonl", NULL);
    json_t *metrics = json_lines(WORK "/runs/kept/metrics.jsonl", "eval/accuracy");
    cr_assert_eq(json_array_size(ev), 18);
    cr_assert_eq(json_array_size(metrics), 3);
    json_array_foreach(metrics, i, o) {
        long long step = json_integer_value(json_object_get(o, "step"));
        size_t k, right = 0, n = 0;
        json_t *e;
        json_array_foreach(ev, k, e) {
            if (json_integer_value(json_object_get(e, "step")) != step)
                continue;
            n++;
            right += json_is_true(json_object_get(e, "right"));
            cr_expect(json_is_string(json_object_get(e, "reason")));
            cr_expect(json_is_string(json_object_get(e, "prompt")));
        }
        cr_expect_eq(n, 6, "step %lld: %zu eval responses", step, n);
        cr_expect_float_eq(json_number_value(json_object_get(o, "eval/accuracy")),
                           (double)right / 6, 1e-12, "step %lld", step);
    }
    json_decref(ev);
    json_decref(metrics);

    result r;
    run(&r, "%s show runs/kept", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "step 3: 3 of the "), "%s", r.out);
    cr_expect(strstr(r.out, " -> answer \""), "%s", r.out);
    cr_expect_eq(count_lines(r.out), 1 + 3 * 10, "a header, and per group a blank line, the "
                 "task and 8 responses:\n%s", r.out);
    run(&r, "%s show runs/kept --step 1 --limit 1", TERN);
    cr_expect_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "step 1: 3 of the ") && strstr(r.out, "(2 more groups;"), "%s",
              r.out);
    run(&r, "%s show runs/kept --eval", TERN);
    cr_expect_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "evaluation at step 3 (weights version 3), 6 tasks: "), "%s", r.out);
    cr_expect(strstr(r.out, "  why: "), "the reward's reason: %s", r.out);
    run(&r, "%s show runs/kept --eval --step 1", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "no evaluation at step 1; the evaluations are at steps 0, 2, 3"),
              "%s", r.err);
    run(&r, "%s show runs/kept --step 7", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "step 7 kept no whole group; these steps did: 1, 2, 3"), "%s",
              r.err);
}

Test(show, keep_mb_0_keeps_no_response, .timeout = 120)
{
    short_run("none", "-o run.keep_mb=0");
    char text[1 << 16];
    slurp(WORK "/runs/none/rollouts.jsonl", text, sizeof text);
    cr_expect(strstr(text, "\"rewards\""), "the groups' lines stay");
    cr_expect_null(strstr(text, "\"responses\""), "no whole group");
    slurp(WORK "/runs/none/eval_responses.jsonl", text, sizeof text);
    cr_expect_str_eq(text, "", "no evaluation response");
    slurp(WORK "/runs/none/log.txt", text, sizeof text);
    cr_expect_null(strstr(text, "keep_mb"), "0 is asked for, not warned about: %s", text);
    result r;
    run(&r, "%s show runs/none", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "no group was kept whole"), "%s", r.err);
}

Test(show, what_it_cannot_show_is_one_line)
{
    result r;
    run(&r, "%s show no_such_run", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "tern show: no_such_run: No such file or directory; give a run "
                            "directory"), "%s", r.err);
    run(&r, "rm -rf fake && mkdir fake && %s show fake", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "fake/rollouts.jsonl: cannot read: No such file or directory"), "%s",
              r.err);
    /* a torn last line is skipped with a warning; a bad line before it is an error */
    write_file(WORK "/fake/eval_responses.jsonl",
               "{\"stage\":\"rl\",\"step\":0,\"version\":0,\"task\":\"t1\",\"prompt\":\"1+1=\","
               "\"response\":\"2\",\"reward\":1.0,\"right\":true,\"reason\":\"ok\"}\n"
               "{\"stage\":\"rl\",\"st");
    run(&r, "%s show fake --eval", TERN);
    cr_expect_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.err, "fake/eval_responses.jsonl:2: the last line is cut short"), "%s",
              r.err);
    cr_expect(strstr(r.out, "1 of 1 right (1.000), mean reward 1.000"), "%s", r.out);
    write_file(WORK "/fake/eval_responses.jsonl", "not json\n{\"step\":0}\n");
    run(&r, "%s show fake --eval", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "fake/eval_responses.jsonl:1: not a JSON object"), "%s", r.err);
    run(&r, "%s show", TERN);
    cr_expect_eq(r.code, 2);
}
