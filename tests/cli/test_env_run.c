/* test_env_run.c: `tern run` with an environment (docs/agents.md): a small
 * Qwen2 chat model (tests/fixtures/qwen2_chat, its ChatML template) talks to
 * the test environment script_env (tests/test_plugins/script_env.c) for
 * several turns per trajectory. Token in, token out: the ids the trainer
 * trains on (each model turn of a kept trajectory, rollouts.jsonl) are the
 * ids the environment was handed as the model's action, byte for byte; the
 * context between turns is exactly the template's rendering of the next
 * user turn; the trainer's log-probs of the model's tokens equal the
 * explorer's (ratio 1, mismatch 0 within 1e-5 at the first step); the
 * return is the sum of the turns' rewards. Each way an environment fails
 * costs one trajectory, kept in reward_failures.jsonl with its reason, and
 * the run goes on; a broken plugin fails the run with its message. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command.h"

#define TERN TERN_TEST_BIN
#define SRC TERN_TEST_SOURCE_DIR
#define WORK TERN_TEST_WORK_DIR
#define PLUGINS TERN_TEST_PLUGINS_DIR
#define FIXTURE SRC "/tests/fixtures/qwen2_chat"

/* A run of `steps` RL steps with script_env and its settings `env`. */
static void write_config(const char *name, const char *env, const char *extra, int steps)
{
    char path[256], text[4096];
    snprintf(path, sizeof path, WORK "/%s.cfg", name);
    snprintf(text, sizeof text,
             "plugin_path = [\"%s\"];\n"
             "run = { name = \"%s\"; seed = 3; out_dir = \"runs_env\"; keep_groups = 4; };\n"
             "model = { plugin = \"transformer\"; path = \"%s\"; threads = 1; };\n"
             "data = { train = \"%s/etc/data/arith-train.jsonl\"; "
             "eval = \"%s/etc/data/arith-eval.jsonl\"; };\n"
             "explorer = { batch_tasks = 2; group_size = 2; max_tokens = 5; };\n"
             "trainer = { steps = %d; save_every = 100; lr = 1e-3; score_pass = \"always\"; };\n"
             "algorithm = { kl = { coef = 0.0; }; };\n"
             "buffer = { plugin = \"fifo\"; capacity = 64; };\n"
             "sync = { plugin = \"synchronous\"; };\n"
             "environment = { plugin = \"script_env\"; max_turns = 4; %s };\n%s",
             PLUGINS, name, FIXTURE, SRC, SRC, steps, env, extra);
    write_file(path, text);
}

/* The ids the fixture's tokenizer gives the template's text for the turn
 * that follows an assistant's: its end-of-turn token, then the user turn
 * "next K" and the assistant's header (as `tern score` prints them, after a
 * leading "x" whose own id it does not print, and before a trailing
 * end-of-turn token that keeps the shell from eating the last newline). */
static json_t *template_ids(size_t k)
{
    char text[128];
    snprintf(text, sizeof text, "<|im_end|>\\n<|im_start|>user\\nnext %zu<|im_end|>\\n"
             "<|im_start|>assistant\\n", k);
    return score_ids(TERN, FIXTURE, text);
}

static json_t *load_lines(const char *name, const char *file, const char *with)
{
    char path[512];
    snprintf(path, sizeof path, WORK "/runs_env/%s/%s", name, file);
    return json_lines(path, with);
}

Test(env_run, trained_ids_are_the_sampled_ids_and_returns_add_up, .timeout = 300)
{
    write_config("exact", "turns = 3; observation = \"next\"; trace = \"runs_env/exact.trace\";",
                 "eval = { every = 1; limit = 2; max_tokens = 5; };\n", 2);
    result r;
    run(&r, "cd %s && rm -rf runs_env/exact runs_env/exact.trace && mkdir -p runs_env && "
            "%s run exact.cfg", WORK, TERN);
    cr_assert_eq(r.code, 0, "tern run: exit %d\n%s", r.code, r.err);
    json_t *trace = json_lines(WORK "/runs_env/exact.trace", "seed");
    cr_assert_gt(json_array_size(trace), 0, "the environment was never stepped");

    /* every kept trajectory: its model turns are the ids the environment got */
    json_t *groups = load_lines("exact", "rollouts.jsonl", "responses");
    cr_assert_eq(json_array_size(groups), 4, "2 steps x 2 groups kept whole");
    size_t i, j, checked = 0;
    json_t *g, *resp;
    json_array_foreach(groups, i, g) {
        json_array_foreach(json_object_get(g, "responses"), j, resp) {
            json_t *turns = json_object_get(resp, "turns");
            cr_assert(json_is_array(turns), "a trajectory's turns are kept");
            cr_expect_str_eq(json_string_value(json_object_get(resp, "end")), "done");
            size_t k, model = 0;
            json_t *t;
            double ret = 0;
            json_array_foreach(turns, k, t) {
                const char *role = json_string_value(json_object_get(t, "role"));
                cr_assert(role);
                cr_expect_eq(strcmp(role, k % 2 ? "context" : "model"), 0,
                             "segment %zu is %s", k, role);
                if (strcmp(role, "context") == 0) {
                    /* the template's next user turn, after the end-of-turn token the
                     * model wrote (then not repeated) or not (a turn max_tokens cut) */
                    json_t *want = template_ids(model), *got = json_object_get(t, "ids");
                    json_t *prev = json_object_get(json_array_get(turns, k - 1), "ids");
                    json_t *eos = json_array_get(want, 0);
                    int wrote = json_equal(json_array_get(prev, json_array_size(prev) - 1), eos);
                    cr_expect_eq(json_array_size(got), json_array_size(want) - (size_t)wrote,
                                 "the observation's tokens");
                    for (size_t q = 0; q < json_array_size(got); q++)
                        cr_expect(json_equal(json_array_get(got, q),
                                             json_array_get(want, q + (size_t)wrote)),
                                  "observation token %zu of turn %zu", q, model);
                    json_decref(want);
                    continue;
                }
                model++;
                ret += json_real_value(json_object_get(t, "reward"));
                cr_expect(fabs(json_real_value(json_object_get(t, "reward")) - model / 8.0) <
                          1e-12, "turn %zu's reward", model);
            }
            cr_expect_eq(model, 3, "three model turns");
            cr_expect(fabs(json_real_value(json_object_get(resp, "reward")) - ret) < 1e-12,
                      "the trajectory's reward %g is its return %g",
                      json_real_value(json_object_get(resp, "reward")), ret);
            checked++;
        }
    }
    cr_expect_eq(checked, 8);

    /* token exactness: each model turn the trainer trains on (every turn of
     * every kept trajectory) is, id for id, one the environment was handed
     * as the model's action (the trace also holds the evaluation's turns;
     * the trajectories' seeds are not in rollouts.jsonl: match by content) */
    size_t matched = 0, model_turns = 0;
    json_array_foreach(groups, i, g) {
        json_array_foreach(json_object_get(g, "responses"), j, resp) {
            size_t k, t_i;
            json_t *t, *tl;
            json_array_foreach(json_object_get(resp, "turns"), k, t) {
                if (k % 2)
                    continue;
                model_turns++;
                int found = 0;
                json_array_foreach(trace, t_i, tl)
                    found |= json_equal(json_object_get(tl, "ids"), json_object_get(t, "ids")) &&
                             json_integer_value(json_object_get(tl, "turn")) == (json_int_t)(k / 2 + 1);
                matched += found;
            }
        }
    }
    cr_expect_eq(model_turns, 2 * 4 * 3, "2 steps x 4 trajectories x 3 turns kept");
    cr_expect_eq(matched, model_turns, "%zu of %zu trained turns are turns as sampled", matched,
                 model_turns);

    /* the trainer's log-probs of the model's tokens are the explorer's: at
     * the first step both have the same weights */
    json_t *m = load_lines("exact", "metrics.jsonl", "mismatch_kl");
    cr_assert_gt(json_array_size(m), 0);
    json_t *first = json_array_get(m, 0);
    double ratio = json_real_value(json_object_get(first, "ratio_mean"));
    double mm = json_real_value(json_object_get(first, "mismatch_kl"));
    cr_expect(fabs(ratio - 1) < 1e-5, "ratio_mean %.9f at the first step", ratio);
    cr_expect(mm < 1e-5, "mismatch_kl %.3g at the first step", mm);
    cr_expect(fabs(json_real_value(json_object_get(first, "turns")) - 3) < 1e-12, "turns");
    cr_expect(fabs(json_real_value(json_object_get(first, "reward_mean")) - 0.75) < 1e-12,
              "every trajectory returns 1/8 + 2/8 + 3/8");
    json_decref(m);
    json_decref(groups);
    json_decref(trace);

    /* the timeline says how many turns a rollout's trajectories had, and
     * the plot draws the solve rate and the turns */
    run(&r, "cd %s && %s timeline runs_env/exact -o runs_env/exact.svg && grep -c '3.00 turns a "
            "trajectory (at most 3)' runs_env/exact.svg && %s plot runs_env/exact -o "
            "runs_env/exact-plot.svg", WORK, TERN, TERN);
    cr_expect_eq(r.code, 0, "tern timeline / plot: %s%s", r.out, r.err);
    cr_expect(strstr(r.out, "solve_rate, turns"), "the plot's panels: %s", r.out);

    /* the evaluation runs greedy trajectories: each solved (done, return 0.75) */
    json_t *ev = load_lines("exact", "eval_responses.jsonl", "turns");
    cr_assert_gt(json_array_size(ev), 0, "eval_responses.jsonl keeps the turns");
    json_t *e0 = json_array_get(ev, 0);
    cr_expect_str_eq(json_string_value(json_object_get(e0, "end")), "done");
    cr_expect_eq(json_array_size(json_object_get(e0, "turns")), 5);
    cr_expect(json_is_true(json_object_get(e0, "right")), "a done trajectory is solved");
    cr_expect(fabs(json_real_value(json_object_get(e0, "reward")) - 0.75) < 1e-12);
    json_decref(ev);
    json_t *evm = load_lines("exact", "metrics.jsonl", "eval/accuracy");
    cr_assert_gt(json_array_size(evm), 0);
    cr_expect(fabs(json_real_value(json_object_get(json_array_get(evm, 0), "eval/accuracy")) -
                   1) < 1e-12, "the solve rate");
    json_decref(evm);
}

/* A failure of kind `fail` at odd seeds: those trajectories end there with
 * `name` and a reason naming `why`, kept in reward_failures.jsonl; the
 * others finish; the run finishes. */
static void expect_failures_cost_trajectories(const char *fail, const char *name, const char *why)
{
    char cfgname[64], env[256];
    snprintf(cfgname, sizeof cfgname, "fail_%s", fail);
    snprintf(env, sizeof env, "turns = 3; fail = \"%s\"; fail_turn = 2;", fail);
    write_config(cfgname, env, "eval = { limit = 2; max_tokens = 5; };\n", 2);
    result r;
    run(&r, "cd %s && rm -rf runs_env/%s && %s run %s.cfg", WORK, cfgname, TERN, cfgname);
    cr_assert_eq(r.code, 0, "%s: tern run: exit %d\n%s", fail, r.code, r.err);
    cr_expect(strstr(r.err, "reward_failures.jsonl"), "%s: the first failure is said: %s", fail,
              r.err);
    json_t *lines = load_lines(cfgname, "reward_failures.jsonl", "tern_failure");
    cr_assert_gt(json_array_size(lines), 0, "%s: no failure kept", fail);
    size_t k, rl = 0;
    json_t *l;
    json_array_foreach(lines, k, l)
        rl += strcmp(json_string_value(json_object_get(json_object_get(l, "tern_failure"),
                                                       "stage")), "rl") == 0;
    cr_expect(rl > 0 && rl < 8, "%s: only the odd seeds' trajectories fail (%zu of 8)", fail, rl);
    json_t *f = json_object_get(json_array_get(lines, 0), "tern_failure");
    cr_expect_str_eq(json_string_value(json_object_get(f, "environment")), "script_env");
    cr_expect_str_eq(json_string_value(json_object_get(f, "failure")), name, "%s", fail);
    const char *reason = json_string_value(json_object_get(f, "reason"));
    cr_expect(reason && strstr(reason, why), "%s: reason \"%s\" lacks \"%s\"", fail, reason, why);
    cr_expect(json_object_get(json_array_get(lines, 0), "prompt"), "the task is kept");
    json_decref(lines);
    json_t *m = load_lines(cfgname, "metrics.jsonl", "env_failures");
    cr_assert_eq(json_array_size(m), 2, "%s: every step ran", fail);
    cr_expect_gt(json_integer_value(json_object_get(json_array_get(m, 0), "env_failures")) +
                     json_integer_value(json_object_get(json_array_get(m, 1), "env_failures")),
                 0, "%s: counted", fail);
    json_decref(m);
}

Test(env_run, an_episode_that_fails_costs_its_trajectory, .timeout = 300)
{
    expect_failures_cost_trajectories("error", "error", "told to fail at turn 2");
    expect_failures_cost_trajectories("nan", "garbage", "not a finite number");
    expect_failures_cost_trajectories("silent", "garbage", "no observation, yet not done");
    expect_failures_cost_trajectories("reset", "error", "reset told to fail");
    expect_failures_cost_trajectories("first", "garbage", "first observation differs");
}

Test(env_run, a_broken_environment_plugin_fails_the_run_with_its_message, .timeout = 120)
{
    write_config("broken", "turns = 3; fail = \"broken\"; fail_turn = 1;",
                 "eval = { limit = 2; max_tokens = 5; };\n", 2);
    result r;
    run(&r, "cd %s && rm -rf runs_env/broken && %s run broken.cfg", WORK, TERN);
    cr_expect_neq(r.code, 0, "a broken plugin fails the run");
    cr_expect(strstr(r.err, "told to break") && strstr(r.err, "step"), "%s", r.err);
}

Test(env_run, a_model_without_a_chat_template_is_refused_at_start)
{
    char text[2048];
    snprintf(text, sizeof text,
             "plugin_path = [\"%s\"];\n"
             "run = { name = \"nochat\"; out_dir = \"runs_env\"; };\n"
             "model = { plugin = \"transformer\"; init = { preset = \"tiny\"; }; threads = 1; };\n"
             "data = { train = \"%s/etc/data/arith-train.jsonl\"; };\n"
             "trainer = { steps = 1; };\n"
             "buffer = { plugin = \"fifo\"; }; sync = { plugin = \"synchronous\"; };\n"
             "environment = { plugin = \"script_env\"; };\n", PLUGINS, SRC);
    write_file(WORK "/nochat.cfg", text);
    result r;
    run(&r, "cd %s && rm -rf runs_env/nochat && %s run nochat.cfg", WORK, TERN);
    cr_expect_neq(r.code, 0);
    cr_expect(strstr(r.err, "chat template") && strstr(r.err, "environment") &&
              strstr(r.err, "script_env"), "%s", r.err);
}

/* On MPI ranks (master, trainer, explorer: docs/distributed.md) the
 * explorer rank samples the same trajectories and the trainer rank trains
 * on the same ids as in one process: rollouts.jsonl is the same file, and
 * so are the step's figures but the timings. */
Test(env_run, ranks_sample_and_train_the_same_trajectories, .timeout = 300)
{
    test_need_mpi();
    write_config("one", "turns = 3;", "eval = { limit = 2; max_tokens = 5; };\n", 3);
    result r;
    run(&r, "cd %s && rm -rf runs_env/one runs_env/three && %s run one.cfg && %s -np 3 %s run "
            "one.cfg -o run.name='\"three\"'", WORK, TERN, test_mpirun(), TERN);
    cr_assert_eq(r.code, 0, "exit %d\n%s", r.code, r.err);
    char a[65536], b[65536];
    slurp(WORK "/runs_env/one/rollouts.jsonl", a, sizeof a);
    slurp(WORK "/runs_env/three/rollouts.jsonl", b, sizeof b);
    cr_expect_gt(strlen(a), 1000);
    cr_expect_str_eq(b, a, "rollouts.jsonl differs on ranks");
    json_t *x = load_lines("one", "metrics.jsonl", "reward_mean");
    json_t *y = load_lines("three", "metrics.jsonl", "reward_mean");
    cr_assert_eq(json_array_size(x), 3);
    cr_assert_eq(json_array_size(y), 3);
    static const char *const keys[] = {"reward_mean", "loss", "grad_norm", "turns", "entropy",
                                       "ratio_mean"};
    for (size_t i = 0; i < 3; i++)
        for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
            cr_expect(json_equal(json_object_get(json_array_get(x, i), keys[k]),
                                 json_object_get(json_array_get(y, i), keys[k])),
                      "step %zu: %s differs on ranks", i + 1, keys[k]);
    json_decref(x);
    json_decref(y);
}

/* The form a user writes: environment = { plugin = "python"; file = "env.py"; },
 * no rewards section; the class's rewards are the trajectories'. */
Test(env_run, a_python_environment_file_runs_as_configured, .timeout = 300)
{
    result r;
    run(&r, "command -v python3 >/dev/null");
    if (r.code != 0)
        cr_skip_test("python3 is not installed");
    write_file(WORK "/env.py",
               "class Env:\n"
               "    def reset(self, task):\n"
               "        self.turn = 0\n"
               "        return 'Say anything, twice.'\n"
               "    def step(self, action):\n"
               "        self.turn += 1\n"
               "        if self.turn == 2:\n"
               "            return None, 1.0, True\n"
               "        return 'Once more.', 0.25, False\n");
    char text[2048];
    snprintf(text, sizeof text,
             "run = { name = \"py\"; seed = 3; out_dir = \"runs_env\"; };\n"
             "model = { plugin = \"transformer\"; path = \"%s\"; threads = 1; };\n"
             "data = { train = \"%s/etc/data/arith-train.jsonl\"; };\n"
             "explorer = { batch_tasks = 2; group_size = 2; max_tokens = 4; };\n"
             "trainer = { steps = 2; };\n"
             "buffer = { plugin = \"fifo\"; }; sync = { plugin = \"synchronous\"; };\n"
             "environment = { plugin = \"python\"; file = \"env.py\"; max_turns = 8; };\n",
             FIXTURE, SRC);
    write_file(WORK "/py.cfg", text);
    run(&r, "cd %s && rm -rf runs_env/py && %s run py.cfg", WORK, TERN);
    cr_assert_eq(r.code, 0, "exit %d\n%s", r.code, r.err);
    json_t *m = load_lines("py", "metrics.jsonl", "turns");
    cr_assert_eq(json_array_size(m), 2);
    json_t *s1 = json_array_get(m, 0);
    cr_expect(fabs(json_real_value(json_object_get(s1, "turns")) - 2) < 1e-12);
    cr_expect(fabs(json_real_value(json_object_get(s1, "reward_mean")) - 1.25) < 1e-12,
              "the return is 0.25 + 1");
    cr_expect(fabs(json_real_value(json_object_get(s1, "solve_rate")) - 1) < 1e-12);
    json_decref(m);
}
