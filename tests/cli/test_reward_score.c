/* test_reward_score.c: `tern reward score` end to end, and reward isolation
 * (`isolate = true`): a worker that crashes, is killed, exits, hangs, fails
 * or answers garbage costs one response each, is restarted with a fresh
 * instance, and leaves no process behind; in a run, an isolated reward
 * scores like an in-process one. The misbehaving plugin is
 * tests/test_plugins/faulty_reward.c. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command.h"

#define TERN TERN_TEST_BIN
#define WORK TERN_TEST_WORK_DIR
#define SRC TERN_TEST_SOURCE_DIR
#define FAULTY TERN " reward score --plugin test_faulty_reward --plugin-dir " TERN_TEST_PLUGINS_DIR

/* Line `n` (from 0) of `text` into buf ("" past the end). */
static const char *line_of(const char *text, int n, char *buf, size_t cap)
{
    const char *p = text;
    for (int i = 0; i < n && p; i++) {
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    if (!p || !*p) {
        buf[0] = '\0';
        return buf;
    }
    size_t len = strcspn(p, "\n");
    if (len >= cap)
        len = cap - 1;
    memcpy(buf, p, len);
    buf[len] = '\0';
    return buf;
}

/* The number after "reward": on line n. */
static double reward_on(const char *text, int n)
{
    char buf[1024];
    const char *l = line_of(text, n, buf, sizeof buf);
    const char *r = strstr(l, "\"reward\":");
    cr_assert_not_null(r, "line %d has no reward: '%s'", n, l);
    return atof(r + 9);
}

static void write_cases(const char *name, const char *const *responses, int n)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", WORK, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    for (int i = 0; i < n; i++)
        fprintf(f, "{\"id\": %d, \"response\": \"%s\"}\n", i, responses[i]);
    fclose(f);
}

Test(reward_score, math_scores_lines_in_order_and_reports_bad_ones)
{
    write_file(WORK "/rs_math.jsonl",
               "{\"answer\": \"42\", \"response\": \"so \\\\boxed{42}\"}\n"
               "\n"
               "{\"answer\": 4, \"response\": \"it is 5\"}\n"
               "not json\n"
               "{\"answer\": \"1\"}\n"
               "{\"answer\": \"7\", \"response\": \"#### 7\"}\n");
    result r;
    run(&r, "%s reward score --plugin math < %s/rs_math.jsonl", TERN, WORK);
    cr_expect_eq(r.code, 2, "bad lines make exit 2: %s", r.err);
    char b[1024];
    cr_expect_str_eq(line_of(r.out, 0, b, sizeof b),
                     "{\"reward\":1.0,\"accuracy\":1.0,\"format\":1.0,"
                     "\"reason\":\"boxed answer 42 equals gold 42\"}");
    cr_expect_eq(reward_on(r.out, 1), 0);
    cr_expect(strstr(line_of(r.out, 2, b, sizeof b), "{\"error\":\"stdin:4: malformed JSON"),
              "%s", r.out);
    cr_expect(strstr(line_of(r.out, 3, b, sizeof b), "stdin:5: no \\\"response\\\" string"),
              "%s", r.out);
    cr_expect_eq(reward_on(r.out, 4), 1, "the lines after a bad one are scored");
    cr_expect_str_eq(line_of(r.out, 5, b, sizeof b), "");
    cr_expect(strstr(r.err, "stdin:4: malformed JSON"), "%s", r.err);
    cr_expect(strstr(r.err, "2 bad lines"), "%s", r.err);
}

Test(reward_score, a_plugin_built_for_an_older_abi_gets_results_at_its_own_stride)
{
    /* abi_1_9/faulty_reward.so writes results as a plugin built before ABI
     * 1.10 does; a batch of several must reach it, and come back, unmixed */
    write_file(WORK "/rs_old.jsonl", "{\"response\": \"ok:0.25\"}\n{\"response\": \"ok:0.5\"}\n"
                                     "{\"response\": \"ok:0.75\"}\n{\"response\": \"nan\"}\n"
                                     "{\"response\": \"ok:1\"}\n");
    result r;
    run(&r, "%s reward score --plugin test_faulty_reward --plugin-dir %s/abi_1_9 < %s/rs_old.jsonl",
        TERN, TERN_TEST_PLUGINS_DIR, WORK);
    cr_expect_eq(r.code, 1, "the nan line gets no verdict, the rest do: %s", r.err);
    cr_expect_eq(reward_on(r.out, 0), 0.25, "%s", r.out);
    cr_expect_eq(reward_on(r.out, 1), 0.5, "%s", r.out);
    cr_expect_eq(reward_on(r.out, 2), 0.75, "%s", r.out);
    cr_expect(strstr(r.out, "nonfinite"), "%s", r.out);
    cr_expect_eq(reward_on(r.out, 4), 1, "%s", r.out);
    cr_expect(strstr(r.out, "\"accuracy\":1.0"), "components come back too: %s", r.out);
    cr_expect(!strstr(r.out, "has size"), "results of the size the plugin knows: %s", r.out);
}

Test(reward_score, options_reach_the_plugin)
{
    write_file(WORK "/rs_opt.jsonl", "{\"gold\": \"3\", \"response\": \"#### 3\"}\n");
    result r;
    run(&r, "%s reward score --plugin math -o answer_field=gold < %s/rs_opt.jsonl", TERN, WORK);
    cr_expect_eq(r.code, 0, "%s", r.err);
    cr_expect_eq(reward_on(r.out, 0), 1, "%s", r.out);
    run(&r, "%s reward score --plugin math -o 'answer_field=\"gold\"' < %s/rs_opt.jsonl", TERN,
        WORK);
    cr_expect_eq(r.code, 0, "a quoted string works too: %s", r.err);
    cr_expect_eq(reward_on(r.out, 0), 1, "%s", r.out);
}

Test(reward_score, code_runs_programs_from_the_command_line)
{
    /* the plugin's own tests (test_code_reward) cover the sandbox; this is
     * the command: a pass, a partial pass, a C program and a task error */
    write_file(WORK "/rs_code.jsonl",
               "{\"language\": \"python\", \"tests\": [{\"stdin\": \"2\", \"stdout\": \"4\"}], "
               "\"response\": \"```python\\nprint(int(input()) * 2)\\n```\"}\n"
               "{\"asserts\": [\"assert f(1) == 1\", \"assert f(2) == 4\"], "
               "\"response\": \"```py\\ndef f(x):\\n    return x\\n```\"}\n"
               "{\"language\": \"c\", \"tests\": [{\"stdout\": \"hi\"}], "
               "\"response\": \"```c\\n#include <stdio.h>\\nint main(void) { puts(\\\"hi\\\"); }\\n```\"}\n"
               "{\"language\": \"cobol\", \"tests\": [], \"response\": \"x\"}\n");
    result r;
    /* none of these runs long: the limit only has to cover python3's start,
     * which took over 3 s under the sanitizers with the suite two tests at a
     * time (CI, 2 cores) */
    run(&r, "%s reward score --plugin code -o time_ms=10000 < %s/rs_code.jsonl", TERN, WORK);
    if (r.code != 0 && strstr(r.err, "cannot run sandboxes here")) {
        const char *ci = getenv("CI");
        cr_assert(!ci || strcmp(ci, "true") != 0, "CI must be able to make sandboxes: %s", r.err);
        cr_skip_test("this machine cannot make sandboxes: %s", r.err);
    }
    cr_expect_eq(r.code, 0, "%s", r.err);
    char b[1024];
    cr_expect_eq(reward_on(r.out, 0), 1, "%s", r.out);
    cr_expect_eq(reward_on(r.out, 1), 0.5, "%s", r.out);
    cr_expect(strstr(line_of(r.out, 1, b, sizeof b), "assert 2: AssertionError"), "%s", r.out);
    cr_expect_eq(reward_on(r.out, 2), 1, "%s", r.out);
    cr_expect_eq(reward_on(r.out, 3), 0, "%s", r.out);
    cr_expect(strstr(line_of(r.out, 3, b, sizeof b), "language 'cobol'"), "%s", r.out);
}

/* A line of NUL bytes is a bad line (it was skipped as blank, silently),
 * and so is a response_tokens that is no whole number of tokens (-5, "x",
 * 1e308 were taken as 0 without a word); the good lines around them are
 * scored (issue 47 item 11). */
Test(reward_score, nul_lines_and_bad_token_counts_are_bad_lines)
{
    FILE *f = fopen(WORK "/rs_nul.jsonl", "wb");
    cr_assert_not_null(f);
    fputs("{\"answer\": \"4\", \"response\": \"4\", \"response_tokens\": -5}\n", f);
    fputs("{\"answer\": \"4\", \"response\": \"4\", \"response_tokens\": \"x\"}\n", f);
    fputs("{\"answer\": \"4\", \"response\": \"4\", \"response_tokens\": 1e308}\n", f);
    fwrite("\0\0\0\n", 1, 4, f);
    fputs("  \n{\"answer\": \"4\", \"response\": \"4\", \"response_tokens\": 3}\n", f);
    fclose(f);
    result r;
    run(&r, "%s reward score --plugin math < %s/rs_nul.jsonl", TERN, WORK);
    cr_expect_eq(r.code, 2, "bad lines make exit 2: %s", r.err);
    char b[1024];
    for (int i = 0; i < 3; i++)
        cr_expect(strstr(line_of(r.out, i, b, sizeof b), "response_tokens\\\" is "),
                  "line %d: %s", i + 1, r.out);
    cr_expect(strstr(line_of(r.out, 1, b, sizeof b), "is not a whole number"), "%s", r.out);
    cr_expect(strstr(line_of(r.out, 3, b, sizeof b), "stdin:4: malformed JSON: a NUL byte"),
              "%s", r.out);
    cr_expect_eq(reward_on(r.out, 4), 1, "the good line after them: %s", r.out);
    cr_expect(strstr(r.err, "4 bad lines"), "%s", r.err);
}

Test(reward_score, bad_usage_is_exit_2_with_a_message)
{
    result r;
    run(&r, "%s reward score < /dev/null", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "needs --plugin"), "%s", r.err);
    run(&r, "%s reward score --plugin no_such_reward < /dev/null", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "no_such_reward"), "%s", r.err);
    run(&r, "%s reward score --plugin fifo < /dev/null", TERN);
    cr_expect_eq(r.code, 2, "a buffer is not a reward");
    run(&r, "%s reward score --plugin math -o answer_fieldx=3 < /dev/null", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "did you mean 'answer_field'"), "%s", r.err);
    run(&r, "%s reward score --plugin math -o novalue < /dev/null", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "give key=value"), "%s", r.err);
    run(&r, "%s reward score --plugin math -o plugin=k12 < /dev/null", TERN);
    cr_expect_eq(r.code, 2);
    run(&r, "%s reward score --plugin math -o timeout_ms=100 < /dev/null", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "timeout needs isolate = true"), "%s", r.err);
    run(&r, "%s reward score --plugin math cases.jsonl", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "standard input"), "%s", r.err);
}

/* Every misbehaviour costs its own response only. */
Test(reward_isolation, each_failure_costs_one_response, .timeout = 60)
{
    const char *cases[] = {"ok:1",  "crash", "ok:0.25", "hang", "kill",  "nan",
                           "garbage", "exit", "fail",  "count", "count", "ok:0.75"};
    write_cases("iso.jsonl", cases, 12);
    result r;
    run(&r, FAULTY " -o isolate=true -o timeout_ms=300 --batch 5 < %s/iso.jsonl", WORK);
    /* every line was read and answered, but 6 got no verdict: exit 1, counted */
    cr_assert_eq(r.code, 1, "%s", r.err);
    cr_expect(strstr(r.err, "6 of 12 responses got no verdict"), "%s", r.err);
    const char *want[] = {"\"reward\":1.0,\"accuracy\":1.0,\"reason\":\"ok\"",
                          "\"failed\":\"crash\",\"reason\":\"the reward worker was killed by "
                          "SIGABRT\"",
                          "\"reward\":0.25",
                          "\"failed\":\"timeout\",\"reason\":\"no verdict within 300 ms",
                          "\"failed\":\"crash\",\"reason\":\"the reward worker was killed by "
                          "SIGKILL\"",
                          "\"failed\":\"nonfinite\"",
                          "\"reward\":0.25,\"fine\":3.0,\"reason\":\"xxxx",
                          "\"failed\":\"crash\",\"reason\":\"the reward worker exited with "
                          "status 7\"",
                          "\"failed\":\"error\",\"reason\":\"the plugin failed: asked to fail\"",
                          "", "", "\"reward\":0.75"};
    char b[1024];
    for (int i = 0; i < 12; i++)
        cr_expect(strstr(line_of(r.out, i, b, sizeof b), want[i]), "line %d: '%s' lacks '%s'",
                  i, b, want[i]);
    /* the worker restarted after "exit" (line 7) with a fresh instance, which
     * scored "fail" then the two counts: 2 and 3 (batches of 5 do not matter) */
    cr_expect_eq(reward_on(r.out, 9), 2, "%s", r.out);
    cr_expect_eq(reward_on(r.out, 10), 3, "%s", r.out);
    cr_expect(strstr(r.err, "reward worker restarted"), "%s", r.err);
}

Test(reward_isolation, the_worker_is_another_process_and_none_is_left, .timeout = 60)
{
    const char *cases[] = {"pid", "crash", "pid", "hang"};
    write_cases("iso_pid.jsonl", cases, 4);
    result r;
    /* --batch 17: a mark to find this command's processes by ("[r]" keeps
     * pgrep from finding the shell that runs it) */
    run(&r, FAULTY " -o isolate=true -o timeout_ms=200 --batch 17 < %s/iso_pid.jsonl", WORK);
    cr_assert_eq(r.code, 1, "a crash and a hang: %s", r.err);
    double a = reward_on(r.out, 0), b = reward_on(r.out, 2);
    result left;
    run(&left, "sleep 0.2; pgrep -f '[r]eward score.*--batch 17' || echo none-left");
    cr_expect(strstr(left.out, "none-left"), "%s", left.out);
    cr_expect(a > 1 && b > 1 && a != b, "a restarted worker is a new process: %g, %g", a, b);
}

/* A reward too large to sum (1e308) is refused as its response's failure,
 * never summed into figures that overflow; 1e9 itself is taken. */
Test(reward_isolation, a_reward_beyond_the_bound_is_no_verdict)
{
    const char *cases[] = {"ok:1e308", "ok:-2e9", "ok:1e9"};
    write_cases("huge.jsonl", cases, 3);
    result r;
    run(&r, FAULTY " < %s/huge.jsonl", WORK);
    cr_assert_eq(r.code, 1, "%s", r.err);
    cr_expect(strstr(r.err, "2 of 3 responses got no verdict"), "%s", r.err);
    char b[1024];
    cr_expect(strstr(line_of(r.out, 0, b, sizeof b), "\"failed\":\"nonfinite\",\"reason\":\"the "
                     "plugin gave a reward of 1e+308, beyond the 1e+09 either way the core takes "
                     "(TERN_REWARD_MAGNITUDE_MAX)\""), "%s", b);
    cr_expect(strstr(line_of(r.out, 1, b, sizeof b), "\"failed\":\"nonfinite\""), "%s", b);
    cr_expect_eq(reward_on(r.out, 2), 1e9);
}

Test(reward_isolation, in_process_failures_are_verdicts_too)
{
    const char *cases[] = {"nan", "garbage", "ok:1", "overlong"};
    write_cases("inproc.jsonl", cases, 4);
    result r;
    run(&r, FAULTY " < %s/inproc.jsonl", WORK);
    cr_assert_eq(r.code, 1, "one nonfinite: %s", r.err);
    cr_expect(strstr(r.err, "1 of 4 responses got no verdict"), "%s", r.err);
    char b[1024];
    cr_expect(strstr(line_of(r.out, 0, b, sizeof b), "\"failed\":\"nonfinite\""), "%s", b);
    /* a reason with no NUL is cut to the buffer; bad component names dropped */
    cr_expect(strstr(line_of(r.out, 1, b, sizeof b), "\"reward\":0.25,\"fine\":3.0"), "%s", b);
    cr_expect_eq(reward_on(r.out, 2), 1);
    /* an overlong form and a surrogate are not UTF-8 a JSON writer takes */
    cr_expect(strstr(line_of(r.out, 3, b, sizeof b), "\"reason\":\"?? and ??? ok\""), "%s", b);
    write_file(WORK "/inproc_fail.jsonl", "{\"response\": \"ok:1\"}\n{\"response\": \"fail\"}\n");
    run(&r, FAULTY " < %s/inproc_fail.jsonl", WORK);
    cr_assert_eq(r.code, 1, "%s", r.err);
    cr_expect(strstr(r.err, "2 of 2 responses got no verdict"), "%s", r.err);
    /* in process, a failing call costs its whole batch */
    cr_expect(strstr(line_of(r.out, 0, b, sizeof b), "\"failed\":\"error\""), "%s", b);
    cr_expect(strstr(line_of(r.out, 1, b, sizeof b), "\"failed\":\"error\""), "%s", b);
}

Test(reward_isolation, a_plugin_that_does_not_start_is_a_plugin_error)
{
    result r;
    run(&r, FAULTY " -o isolate=true -o fail_create=true < /dev/null");
    cr_expect_eq(r.code, 2, "%s", r.err);
    cr_expect(strstr(r.err, "fail_create is set"), "%s", r.err);
}

Test(reward_isolation, a_run_with_an_isolated_reward, .timeout = 120)
{
    result r;
    run(&r, "cd %s && rm -rf riso && %s run %s/etc/quickstart.cfg -o trainer.steps=2 "
            "-o trainer.sft.steps=1 -o eval.limit=4 -o rewards.0.isolate=true "
            "-o rewards.0.timeout_ms=5000 -o 'run.out_dir=\"riso\"' -o 'run.name=\"r\"'",
        WORK, TERN, SRC);
    cr_assert_eq(r.code, 0, "%s", r.err);
    char metrics[65536];
    slurp(WORK "/riso/r/metrics.jsonl", metrics, sizeof metrics);
    cr_expect(strstr(metrics, "\"stage\":\"rl\",\"step\":2"), "%s", metrics);
    cr_expect(strstr(metrics, "reward/accuracy"), "the isolated plugin's components reach "
              "the metrics: %s", metrics);
}

Test(reward_isolation, check_validates_isolation_settings)
{
    write_file(WORK "/iso_bad.cfg",
               "rewards = ( { domain = \"m\"; plugin = \"math\"; timeout_ms = 5; } );\n");
    result r;
    run(&r, "%s check --plugins-only %s/iso_bad.cfg", TERN, WORK);
    cr_expect_eq(r.code, 2, "%s", r.err);
    cr_expect(strstr(r.err, "iso_bad.cfg:1: rewards[0].timeout_ms: a timeout needs isolate = "
                            "true"), "%s", r.err);
    write_file(WORK "/iso_ok.cfg", "rewards = ( { domain = \"m\"; plugin = \"math\"; "
                                   "isolate = true; timeout_ms = 5; } );\n");
    run(&r, "%s check --plugins-only %s/iso_ok.cfg", TERN, WORK);
    cr_expect_eq(r.code, 0, "%s", r.err);
}

/* Issue 28: a rebuilt copy in --plugin-dir that the loader refuses used to
 * give way to an older copy later on the search path without a word. Each
 * command that uses the older copy now names the refused file, its reason,
 * and the file used instead. */
static void expect_fallback_named(const result *r, const char *refused_dir, const char *reason)
{
    cr_expect(strstr(r->err, "warn"), "no warning: %s", r->err);
    cr_expect(strstr(r->err, refused_dir), "the refused copy is not named: %s", r->err);
    cr_expect(strstr(r->err, reason), "the reason is not given: %s", r->err);
    cr_expect(strstr(r->err, "using " TERN_TEST_PLUGINS_DIR "/faulty_reward.so"),
              "the copy used instead is not named: %s", r->err);
}

Test(reward_fallback, score_names_a_refused_newer_copy_every_time)
{
    write_file(WORK "/fb.jsonl", "{\"response\": \"ok:1\"}\n");
    result r;
    const char *dirs[][2] = {{TERN_TEST_PLUGINS_DIR "/refused_abi", "built for ABI 1.99"},
                             {TERN_TEST_PLUGINS_DIR "/refused_entry", "no 'tern_plugin_entry'"}};
    for (int i = 0; i < 2; i++) {
        run(&r, "TERN_PLUGIN_PATH=%s %s reward score --plugin test_faulty_reward --plugin-dir %s "
            "< %s/fb.jsonl", TERN_TEST_PLUGINS_DIR, TERN, dirs[i][0], WORK);
        cr_expect_eq(r.code, 0, "the older copy still scores: %s", r.err);
        cr_expect_eq(reward_on(r.out, 0), 1, "%s", r.out);
        expect_fallback_named(&r, dirs[i][0], dirs[i][1]);
    }
    /* no refused copy, no warning */
    run(&r, "%s < %s/fb.jsonl", FAULTY, WORK);
    cr_expect_eq(r.code, 0, "%s", r.err);
    cr_expect_null(strstr(r.err, "refused"), "%s", r.err);
}

Test(reward_fallback, check_and_run_name_it_too, .timeout = 120)
{
    const char *o = "-o 'rewards=({plugin=\"test_faulty_reward\"; domain=\"math\";})' "
                    "-o 'plugin_path=[\"" TERN_TEST_PLUGINS_DIR "/refused_entry\"]'";
    result r;
    run(&r, "TERN_PLUGIN_PATH=%s %s check %s/etc/quickstart.cfg %s", TERN_TEST_PLUGINS_DIR, TERN,
        SRC, o);
    cr_expect_eq(r.code, 0, "%s", r.err);
    expect_fallback_named(&r, TERN_TEST_PLUGINS_DIR "/refused_entry", "no 'tern_plugin_entry'");

    /* a run says it on stderr and keeps it in log.txt */
    run(&r, "rm -rf fallback_runs && TERN_PLUGIN_PATH=%s %s run %s/etc/quickstart.cfg %s "
        "-o trainer.steps=1 -o trainer.sft.steps=0 -o eval.limit=4 "
        "-o 'run.out_dir=\"fallback_runs\"'", TERN_TEST_PLUGINS_DIR, TERN, SRC, o);
    cr_expect_eq(r.code, 0, "%s", r.err);
    expect_fallback_named(&r, TERN_TEST_PLUGINS_DIR "/refused_entry", "no 'tern_plugin_entry'");
    char log[16384];
    slurp(WORK "/fallback_runs/quickstart/log.txt", log, sizeof log);
    cr_expect(strstr(log, "warn  [plugins] plugin 'test_faulty_reward': using"), "%s", log);
    cr_expect(strstr(log, TERN_TEST_PLUGINS_DIR "/refused_entry/faulty_reward.so: refused"), "%s",
              log);
}

/* Issue 28: a response that crashed the reward was counted in the metrics
 * and lost. Each one is now a line of reward_failures.jsonl in the run
 * directory, which `tern reward score` reads as it is, and the log gives
 * the command. */
Test(reward_failures, kept_in_the_run_directory_and_scored_again, .timeout = 120)
{
    result r;
    run(&r, "rm -rf failure_runs && TERN_PLUGIN_PATH=%s %s run %s/etc/quickstart.cfg "
        "-o 'rewards=({plugin=\"test_faulty_reward\"; domain=\"math\"; isolate=true; "
        "crash_every=40;})' -o trainer.steps=2 -o trainer.sft.steps=0 -o eval.limit=50 "
        "-o 'run.out_dir=\"failure_runs\"'", TERN_TEST_PLUGINS_DIR, TERN, SRC);
    cr_assert_eq(r.code, 0, "%s", r.err);
    const char *file = WORK "/failure_runs/quickstart/reward_failures.jsonl";
    json_t *lines = json_lines(file, NULL);
    /* every 40th response of a worker's life: one in the 50 evaluated
     * before RL, more in the 2 x 128 of RL and the 50 after */
    cr_assert_geq(json_array_size(lines), 3, "%zu lines", json_array_size(lines));
    size_t i;
    json_t *l;
    int rl = 0, eval = 0;
    json_array_foreach(lines, i, l) {
        json_t *why = json_object_get(l, "tern_failure");
        cr_assert(json_is_string(json_object_get(l, "response")), "line %zu", i);
        cr_assert(json_is_string(json_object_get(l, "prompt")), "the task's own fields: %zu", i);
        cr_assert(json_is_string(json_object_get(l, "id")), "line %zu", i);
        cr_assert_str_eq(json_string_value(json_object_get(why, "failure")), "crash");
        cr_assert_str_eq(json_string_value(json_object_get(why, "plugin")), "test_faulty_reward");
        cr_assert_str_eq(json_string_value(json_object_get(why, "reward")), "rewards[0]");
        cr_assert(strstr(json_string_value(json_object_get(why, "reason")), "SIGABRT"));
        const char *stage = json_string_value(json_object_get(why, "stage"));
        rl += strcmp(stage, "rl") == 0 && json_is_integer(json_object_get(why, "batch"));
        eval += strcmp(stage, "eval") == 0 && json_is_integer(json_object_get(why, "version"));
    }
    cr_expect_gt(rl, 0);
    cr_expect_gt(eval, 0);
    /* said once, with the command, on stderr and in log.txt */
    cr_expect(strstr(r.err, "score them again with: tern reward score --plugin "
                            "test_faulty_reward -o 'isolate=true' -o 'crash_every=40'"), "%s",
              r.err);
    char log[65536];
    slurp(WORK "/failure_runs/quickstart/log.txt", log, sizeof log);
    cr_expect(strstr(log, "reward_failures.jsonl; score them again with"), "%s", log);

    /* the file is the command's input as it is: each line scored in order */
    run(&r, "TERN_PLUGIN_PATH=%s %s reward score --plugin test_faulty_reward < %s",
        TERN_TEST_PLUGINS_DIR, TERN, file);
    cr_expect_eq(r.code, 0, "%s", r.err);
    cr_expect_eq(count_lines(r.out), (int)json_array_size(lines), "%s", r.out);
    json_decref(lines);

    /* a run without a failure makes no file */
    run(&r, "rm -rf failure_runs && %s run %s/etc/quickstart.cfg -o trainer.steps=1 "
        "-o trainer.sft.steps=0 -o eval.limit=4 -o 'run.out_dir=\"failure_runs\"'", TERN, SRC);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_expect_not(path_exists(file));
}

/* ABI 1.10: a plugin says one response got no verdict (result.failure); the
 * others of the call stand, in process and isolated alike. */
Test(reward_isolation, a_plugin_fails_one_response_alone)
{
    const char *cases[] = {"ok:1", "refuse", "ok:0.5"};
    write_cases("rs_refuse.jsonl", cases, 3);
    for (int isolate = 0; isolate < 2; isolate++) {
        result r;
        run(&r, "%s %s < %s/rs_refuse.jsonl", FAULTY, isolate ? "-o isolate=true" : "", WORK);
        cr_expect_eq(r.code, 1, "%s", r.err);
        char b[1024];
        cr_expect_eq(reward_on(r.out, 0), 1, "%s", r.out);
        cr_expect(strstr(line_of(r.out, 1, b, sizeof b),
                         "\"failed\":\"error\",\"reason\":\"asked to refuse this one\""),
                  "isolate=%d: %s", isolate, r.out);
        cr_expect_eq(reward_on(r.out, 2), 0.5, "%s", r.out);
    }
}
