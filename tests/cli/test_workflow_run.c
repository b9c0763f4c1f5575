/* test_workflow_run.c: `tern run` with a workflow (docs/agents.md,
 * "Workflows"): a program of the user's (tests/cli/workflow/test_agent.py,
 * standard library only) runs each trajectory, calling the policy (the
 * Qwen2 chat fixture) through its own OpenAI endpoint. The trajectory
 * trained is its calls, token for token: each context segment is the
 * template's ids for the next user turn, each model segment as long as the
 * completion the program was told of, the trainer's log-probs the
 * explorer's (ratio 1, mismatch 0 at the first step). A call that starts
 * over is counted and begins a sequence of its own; each way a program fails costs
 * its trajectory, kept in reward_failures.jsonl, and the run goes on; a
 * command that cannot run is refused at start. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command.h"

#define TERN TERN_TEST_BIN
#define SRC TERN_TEST_SOURCE_DIR
#define WORK TERN_TEST_WORK_DIR
#define FIXTURE SRC "/tests/fixtures/qwen2_chat"
#define AGENT SRC "/tests/cli/workflow/test_agent.py"

/* A run `name` in its own folder (the programs run there) with `workflow`
 * (the section's body) and `extra`. */
static void write_config(const char *name, const char *workflow, const char *extra,
                         uint32_t group_size, int steps)
{
    char path[512], text[4096];
    result r;
    run(&r, "rm -rf %s/wf_%s && mkdir -p %s/wf_%s", WORK, name, WORK, name);
    cr_assert_eq(r.code, 0, "%s", r.err);
    snprintf(path, sizeof path, WORK "/wf_%s/run.cfg", name);
    snprintf(text, sizeof text,
             "run = { name = \"%s\"; seed = 5; out_dir = \"runs\"; keep_groups = 4; };\n"
             "model = { plugin = \"transformer\"; path = \"%s\"; threads = 1; };\n"
             "data = { train = \"%s/etc/data/arith-train.jsonl\"; %s };\n"
             "explorer = { batch_tasks = 2; group_size = %u; max_tokens = 5; };\n"
             "trainer = { steps = %d; save_every = 100; lr = 1e-3; score_pass = \"always\"; };\n"
             "algorithm = { kl = { coef = 0.0; }; };\n"
             "buffer = { plugin = \"fifo\"; capacity = 64; };\n"
             "sync = { plugin = \"synchronous\"; };\n"
             "workflow = { %s };\n%s",
             name, FIXTURE, SRC, strstr(extra, "eval =") ? "eval = \"" SRC
             "/etc/data/arith-eval.jsonl\";" : "", group_size, steps, workflow, extra);
    write_file(path, text);
}

static void tern_run(result *r, const char *name)
{
    run(r, "cd %s/wf_%s && %s run run.cfg", WORK, name, TERN);
}

static json_t *load_lines(const char *name, const char *file, const char *with)
{
    char path[512];
    snprintf(path, sizeof path, WORK "/wf_%s/runs/%s/%s", name, name, file);
    return json_lines(path, with);
}

/* The fixture's ids for the turn after an assistant's: its end-of-turn
 * token, the user turn "next K" and the assistant's header (`tern score`
 * prints them after a leading "x" it does not print, and before a trailing
 * end-of-turn that keeps the shell from eating the last newline). */
static json_t *template_ids(size_t k)
{
    char text[128];
    snprintf(text, sizeof text, "<|im_end|>\\n<|im_start|>user\\nnext %zu<|im_end|>\\n"
             "<|im_start|>assistant\\n", k);
    return score_ids(TERN, FIXTURE, text);
}

Test(workflow_run, trajectories_are_the_calls_token_for_token, .timeout = 300)
{
    char wf[512];
    snprintf(wf, sizeof wf, "command = [\"python3\", \"%s\", \"chat\"]; concurrency = 3;", AGENT);
    write_config("chat", wf, "eval = { every = 2; limit = 2; max_tokens = 5; };\n", 2, 2);
    result r;
    tern_run(&r, "chat");
    cr_assert_eq(r.code, 0, "tern run: exit %d\n%s", r.code, r.err);

    json_t *metrics = load_lines("chat", "metrics.jsonl", "workflow/calls");
    cr_assert_eq(json_array_size(metrics), 2, "two RL steps with the workflow's figures");
    json_t *first = json_array_get(metrics, 0);
    cr_expect(fabs(json_real_value(json_object_get(first, "workflow/calls")) - 3) < 1e-12);
    cr_expect(json_real_value(json_object_get(first, "workflow/rewrites")) == 0);
    double ratio = json_real_value(json_object_get(first, "ratio_mean"));
    double mismatch = json_real_value(json_object_get(first, "mismatch_kl"));
    cr_expect(fabs(ratio - 1) < 1e-5, "the trainer's log-probs are the sampler's: ratio %g",
              ratio);
    cr_expect(mismatch < 1e-5, "mismatch_kl %g", mismatch);
    cr_expect_eq(json_integer_value(json_object_get(first, "env_failures")), 0);

    /* what the programs were told, call by call: usage */
    json_t *calls = json_lines(WORK "/wf_chat/calls.jsonl", "usage");
    cr_assert_geq(json_array_size(calls), 2 * 2 * 2 * 3, "every program's three calls");
    json_t *groups = load_lines("chat", "rollouts.jsonl", "responses");
    cr_assert_eq(json_array_size(groups), 4, "2 steps x 2 groups kept whole");
    size_t i, j, checked = 0;
    json_t *g, *resp;
    json_array_foreach(groups, i, g) {
        json_int_t P = json_integer_value(json_object_get(g, "prompt_tokens"));
        json_array_foreach(json_object_get(g, "responses"), j, resp) {
            json_t *turns = json_object_get(resp, "turns");
            cr_assert_eq(json_array_size(turns), 5, "three calls: model, context, ... model");
            cr_expect_str_eq(json_string_value(json_object_get(resp, "end")), "done");
            /* the program's calls with these lengths: prompt P, then each
             * prompt the last one and its answer and the next turn's ids */
            json_int_t lens[3];
            for (size_t k = 0; k < 5; k++) {
                json_t *t = json_array_get(turns, k);
                json_t *ids = json_object_get(t, "ids");
                if (k % 2 == 0) {
                    lens[k / 2] = (json_int_t)json_array_size(ids);
                    continue;
                }
                cr_expect_str_eq(json_string_value(json_object_get(t, "role")), "context");
                json_t *want = template_ids(k / 2);
                json_t *prev = json_object_get(json_array_get(turns, k - 1), "ids");
                int wrote = json_equal(json_array_get(prev, json_array_size(prev) - 1),
                                       json_array_get(want, 0));
                cr_expect_eq(json_array_size(ids), json_array_size(want) - (size_t)wrote,
                             "the next user turn's ids");
                for (size_t q = 0; q < json_array_size(ids); q++)
                    cr_expect(json_equal(json_array_get(ids, q),
                                         json_array_get(want, q + (size_t)wrote)),
                              "context id %zu after call %zu", q, k / 2);
                json_decref(want);
            }
            /* some program's calls had exactly these prompt and completion lengths */
            /* a program's calls are its seed's lines, in order (programs
             * running at once interleave their lines) */
            int found = 0;
            for (size_t c = 0; !found && c < json_array_size(calls); c++) {
                const char *seed = json_string_value(json_object_get(json_array_get(calls, c),
                                                                     "seed"));
                json_t *mine = json_array();
                for (size_t q = c; q < json_array_size(calls); q++)
                    if (seed && json_equal(json_object_get(json_array_get(calls, q), "seed"),
                                           json_object_get(json_array_get(calls, c), "seed")))
                        json_array_append(mine, json_array_get(calls, q));
                int all = json_array_size(mine) >= 3;
                json_int_t p = P;
                for (size_t k = 0; all && k < 3; k++) {
                    json_t *u = json_object_get(json_array_get(mine, k), "usage");
                    all = json_integer_value(json_object_get(u, "prompt_tokens")) == p &&
                          json_integer_value(json_object_get(u, "completion_tokens")) == lens[k];
                    if (k < 2)
                        p += lens[k] + (json_int_t)json_array_size(json_object_get(
                                           json_array_get(turns, 2 * k + 1), "ids"));
                }
                json_decref(mine);
                found = all;
            }
            cr_expect(found, "group %zu response %zu: no program made calls of these lengths",
                      i, j);
            checked++;
        }
    }
    cr_expect_eq(checked, 8);
    json_t *eval = load_lines("chat", "eval_responses.jsonl", "turns");
    cr_expect_gt(json_array_size(eval), 0, "the evaluation ran the workflow too");
    json_decref(eval);
    json_decref(groups);
    json_decref(calls);
    json_decref(metrics);
}

/* A call that starts over begins a sequence of its own: a prompt segment
 * (that call's whole prompt), its answer, and what continues it. The
 * trainer scores it after its own prompt, not after the first call's
 * turns: its log-probs are then the sampler's (ratio 1, mismatch 0), which
 * they are not when scored after the history. */
Test(workflow_run, a_call_that_starts_over_is_a_sequence_of_its_own, .timeout = 300)
{
    char wf[512];
    snprintf(wf, sizeof wf, "command = [\"python3\", \"%s\", \"rewrite\"];", AGENT);
    write_config("rewrite", wf, "", 2, 1);
    result r;
    tern_run(&r, "rewrite");
    cr_assert_eq(r.code, 0, "tern run: exit %d\n%s", r.code, r.err);
    json_t *metrics = load_lines("rewrite", "metrics.jsonl", "workflow/rewrites");
    json_t *m = json_array_get(metrics, 0);
    cr_expect(fabs(json_real_value(json_object_get(m, "workflow/rewrites")) - 1) < 1e-12,
              "every trajectory rewrote its history once");
    cr_expect(fabs(json_real_value(json_object_get(m, "workflow/calls")) - 3) < 1e-12);
    double ratio = json_real_value(json_object_get(m, "ratio_mean"));
    double mismatch = json_real_value(json_object_get(m, "mismatch_kl"));
    cr_expect(fabs(ratio - 1) < 1e-5, "the restarted sequence scored as sampled: ratio %g",
              ratio);
    cr_expect(mismatch < 1e-5, "mismatch_kl %g", mismatch);

    /* each program's calls, by its seed, in order */
    json_t *calls = json_lines(WORK "/wf_rewrite/calls.jsonl", "usage");
    cr_assert_eq(json_array_size(calls), 2 * 2 * 3, "every program's three calls");
    json_t *by_seed = json_object();
    size_t i, j;
    json_t *c, *g, *resp;
    json_array_foreach(calls, i, c) {
        const char *seed = json_string_value(json_object_get(c, "seed"));
        cr_assert(seed);
        json_t *list = json_object_get(by_seed, seed);
        if (!list)
            json_object_set_new(by_seed, seed, list = json_array());
        json_array_append(list, json_object_get(c, "usage"));
    }
    json_t *groups = load_lines("rewrite", "rollouts.jsonl", "responses");
    json_array_foreach(groups, i, g) {
        json_int_t P = json_integer_value(json_object_get(g, "prompt_tokens"));
        json_array_foreach(json_object_get(g, "responses"), j, resp) {
            json_t *turns = json_object_get(resp, "turns");
            cr_assert_eq(json_array_size(turns), 5, "model, prompt, model, context, model");
            const char *roles[] = {"model", "prompt", "model", "context", "model"};
            json_int_t len[5];
            for (size_t k = 0; k < 5; k++) {
                json_t *t = json_array_get(turns, k);
                cr_expect_str_eq(json_string_value(json_object_get(t, "role")), roles[k]);
                len[k] = (json_int_t)json_array_size(json_object_get(t, "ids"));
            }
            const char *p = json_string_value(json_object_get(json_array_get(turns, 1), "text"));
            cr_expect(p && strstr(p, "start again: "), "the restart's prompt: %s", p);
            /* some program's calls: prompt P, then the restart's prompt,
             * then that and its answer and the next turn */
            json_int_t want[3][2] = {{P, len[0]}, {len[1], len[2]},
                                     {len[1] + len[2] + len[3], len[4]}};
            int found = 0;
            const char *seed;
            json_t *list;
            json_object_foreach(by_seed, seed, list) {
                int all = json_array_size(list) == 3;
                for (size_t k = 0; all && k < 3; k++) {
                    json_t *u = json_array_get(list, k);
                    all = json_integer_value(json_object_get(u, "prompt_tokens")) == want[k][0] &&
                          json_integer_value(json_object_get(u, "completion_tokens")) ==
                              want[k][1];
                }
                found |= all;
            }
            cr_expect(found, "group %zu response %zu: no program made calls of these lengths",
                      i, j);
        }
    }
    json_decref(by_seed);
    json_decref(calls);
    json_decref(groups);
    json_decref(metrics);
}

Test(workflow_run, each_failing_program_costs_its_trajectory, .timeout = 300)
{
    char wf[512];
    /* 8 s: long enough for a program's model call under the sanitizers on
     * a loaded 2-core machine (2 s timed an "ok" program out there), far
     * below the hanging program's 60 s */
    snprintf(wf, sizeof wf, "command = [\"python3\", \"%s\", \"fail\"]; concurrency = 1; "
             "timeout_s = 8.0;", AGENT);
    write_config("fail", wf, "", 6, 1);
    result r;
    tern_run(&r, "fail");
    cr_assert_eq(r.code, 0, "tern run goes on: exit %d\n%s", r.code, r.err);
    cr_expect(strstr(r.err, "workflow") != NULL, "the first failure is said: %s", r.err);
    json_t *fails = load_lines("fail", "reward_failures.jsonl", "tern_failure");
    cr_assert_eq(json_array_size(fails), 10, "5 of each task's 6 programs failed: %zu",
                 json_array_size(fails));
    const char *kinds[] = {"crash", "error", "timeout", "garbage"};
    size_t count[4] = {0};
    size_t i;
    json_t *f;
    json_array_foreach(fails, i, f) {
        json_t *tf = json_object_get(f, "tern_failure");
        const char *src = json_string_value(json_object_get(tf, "workflow"));
        cr_expect(src && strstr(src, "test_agent.py fail"), "the command is named");
        const char *kind = json_string_value(json_object_get(tf, "failure"));
        const char *why = json_string_value(json_object_get(tf, "reason"));
        cr_assert(kind && why);
        for (size_t k = 0; k < 4; k++)
            count[k] += strcmp(kind, kinds[k]) == 0;
        if (strcmp(kind, "crash") == 0)
            cr_expect(strstr(why, "signal 11") && strstr(why, "about to crash"), "%s", why);
        if (strcmp(kind, "error") == 0)
            cr_expect(strstr(why, "status 3") && strstr(why, "gave up"), "%s", why);
        if (strcmp(kind, "timeout") == 0)
            cr_expect(strstr(why, "timeout_s"), "%s", why);
        if (strcmp(kind, "garbage") == 0)
            cr_expect(strstr(why, "the answer is 42") || strstr(why, "no call"), "%s", why);
    }
    cr_expect_eq(count[0], 2);
    cr_expect_eq(count[1], 2);
    cr_expect_eq(count[2], 2);
    cr_expect_eq(count[3], 4, "no reward line, and no call: garbage");
    json_decref(fails);
}

Test(workflow_run, a_command_that_cannot_run_is_refused_at_start, .timeout = 120)
{
    write_config("nosuch", "command = [\"./no-such-agent\"];", "", 2, 1);
    result r;
    tern_run(&r, "nosuch");
    cr_expect_eq(r.code, 2, "a config error: exit %d", r.code);
    cr_expect(strstr(r.err, "workflow.command") && strstr(r.err, "no-such-agent"), "%s", r.err);

    write_config("both", "command = [\"python3\", \"x.py\"];",
                 "environment = { plugin = \"guess_number\"; };\n", 2, 1);
    tern_run(&r, "both");
    cr_expect_neq(r.code, 0);
    cr_expect(strstr(r.err, "remove the environment section"), "%s", r.err);
}

Test(workflow_run, three_mpi_ranks_record_the_same_trajectories, .timeout = 300)
{
    test_need_mpi();
    char wf[512];
    snprintf(wf, sizeof wf, "command = [\"python3\", \"%s\", \"chat\"]; concurrency = 4;", AGENT);
    write_config("ranks", wf, "", 2, 2);
    result r;
    run(&r, "cd %s/wf_ranks && %s run run.cfg && %s -np 3 %s run run.cfg "
            "-o run.name='\"three\"'", WORK, TERN, test_mpirun(), TERN);
    cr_assert_eq(r.code, 0, "exit %d\n%s", r.code, r.err);
    json_t *one = load_lines("ranks", "rollouts.jsonl", "responses");
    json_t *three = json_lines(WORK "/wf_ranks/runs/three/rollouts.jsonl", "responses");
    cr_assert_eq(json_array_size(one), json_array_size(three));
    cr_assert_gt(json_array_size(one), 0);
    for (size_t i = 0; i < json_array_size(one); i++)
        cr_expect(json_equal(json_object_get(json_array_get(one, i), "responses"),
                             json_object_get(json_array_get(three, i), "responses")),
                  "line %zu: the explorer rank's programs sampled other trajectories", i);
    json_decref(one);
    json_decref(three);
}
