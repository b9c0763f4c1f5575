/* test_python_env.c: the `python` environment plugin (python_env.so) through its ops
 * table, started the way a run starts it (harness.h), on env.py files each
 * test writes into its own temporary directory: a multi-turn episode, many
 * episodes in flight in one worker, the 4- and 5-tuples, and each way an
 * episode fails -- a crash, a segfault, a hang, an exception, garbage of
 * every kind, junk on the protocol channel, a step after done -- ending
 * that episode only, with its failure and a reason that names the problem,
 * while a fresh episode afterwards works; a file that does not load is
 * refused at create with Python's words. Skipped without python3. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "command.h"
#include "data/task.h"
#include "env_protocol.h"
#include "harness.h"
#include "tern/environment.h"

#define WORK TERN_TEST_WORK_DIR
#define PLUGIN "python"

/* The environment most tests use: count up to the task's target, and a
 * misdeed per action word. Env(seed): it takes the episode's seed. */
static const char counter_py[] =
    "import ctypes, math, os, time\n"
    "class Env:\n"
    "    def __init__(self, seed):\n"
    "        self.seed = seed\n"
    "    def reset(self, task):\n"
    "        if self.seed == 42: print('reset: print() goes to stderr, not the protocol')\n"
    "        if task.get('raise_in_reset'):\n"
    "            raise ValueError('no reset today')\n"
    "        self.target = task.get('target', 3)\n"
    "        return f\"count to {self.target} (seed {self.seed})\"\n"
    "    def step(self, action):\n"
    "        if action == 'crash': os._exit(3)\n"
    "        if action == 'segv': ctypes.string_at(0)\n"
    "        if action == 'hang': time.sleep(60)\n"
    "        if action == 'raise': return {}['missing']\n"
    "        if action == 'junk':\n"
    "            os.write(0, b'junk on the channel\\n')\n"
    "            return 'x', 0.0, False\n"
    "        if action == 'str_reward': return 'o', '1', False\n"
    "        if action == 'int_done': return 'o', 1.0, 1\n"
    "        if action == 'obs_int': return 5, 1.0, False\n"
    "        if action == 'pair': return 'o', 1.0\n"
    "        if action == 'nan': return 'o', float('nan'), False\n"
    "        if action == 'inf': return 'o', math.inf, False\n"
    "        if action == 'huge': return 'x' * ((1 << 20) + 1), 0.0, False\n"
    "        if action == 'none_not_done': return None, 0.0, False\n"
    "        if action == 'four': return 'four', 0.5, False, {'reason': 'info says so'}\n"
    "        if action == 'five': return 'five', 0.25, False, True, {}\n"
    "        n = int(action)\n"
    "        if n >= self.target:\n"
    "            return None, 1, True\n"
    "        return f'now {n} of {self.target}', 0.1 * n, False\n";

static int have_python3(void)
{
    return system("command -v python3 >/dev/null 2>&1") == 0;
}

/* A fresh temporary directory under this test's work directory, made the
 * working directory (each test runs in its own process): the config's
 * directory the harness gives, so file = "env.py" is found there. */
static void enter_temp_dir(void)
{
    if (!have_python3())
        cr_skip_test("skipped: no python3 on PATH");
    char dir[] = WORK "/pyenv_XXXXXX";
    cr_assert_not_null(mkdtemp(dir), "mkdtemp %s", dir);
    cr_assert_eq(chdir(dir), 0, "chdir %s", dir);
}

static const tern_environment_ops *open_env(harness *h, const char *source, const char *extra)
{
    enter_temp_dir();
    write_file("env.py", source);
    char group[512];
    snprintf(group, sizeof group, "file = \"env.py\"; timeout_ms = 4000; %s", extra);
    int rc = harness_open(h, PLUGIN, TERN_KIND_ENVIRONMENT, group);
    cr_assert_eq(rc, TERN_OK, "harness_open: %s", h->error);
    return harness_ops(h);
}

static tern_task *task_of(const char *json)
{
    tern_task *t = NULL;
    cr_assert_eq(tern_task_parse(json, strlen(json), "test", &t), TERN_OK, "%s", json);
    return t;
}

static tern_env_result result_of(void)
{
    tern_env_result r;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    return r;
}

/* reset on a task `json`; the episode's handle. */
static void *reset(harness *h, const char *json, uint64_t seed, tern_env_result *out)
{
    const tern_environment_ops *ops = harness_ops(h);
    tern_task *t = task_of(json);
    void *ep = NULL;
    *out = result_of();
    int rc = ops->reset(h->state, t, seed, &ep, out);
    tern_task_free(t);
    cr_assert_eq(rc, TERN_OK, "reset");
    cr_assert_not_null(ep, "reset gives a handle, failed or not");
    return ep;
}

static void step(harness *h, void *ep, const char *text, uint32_t turn, tern_env_result *out)
{
    const tern_environment_ops *ops = harness_ops(h);
    tern_env_action a = {.size = sizeof a, .text = text, .text_len = strlen(text), .turn = turn};
    *out = result_of();
    cr_assert_eq(ops->step(h->state, ep, &a, out), TERN_OK, "step '%s'", text);
}

static void close_ep(harness *h, void *ep) { ((const tern_environment_ops *)harness_ops(h))->close(h->state, ep); }

/* A fresh episode runs to done: the plugin is still usable. */
static void fresh_episode_works(harness *h)
{
    tern_env_result r;
    void *ep = reset(h, "{\"target\": 2}", 9, &r);
    cr_expect_eq(r.failure, TERN_ENV_OK, "fresh reset: %s", r.reason);
    cr_expect_str_eq(r.observation ? r.observation : "(null)", "count to 2 (seed 9)");
    step(h, ep, "1", 1, &r);
    cr_expect_eq(r.failure, TERN_ENV_OK, "fresh step: %s", r.reason);
    step(h, ep, "2", 2, &r);
    cr_expect_eq(r.failure, TERN_ENV_OK, "fresh step: %s", r.reason);
    cr_expect(r.done, "fresh episode done");
    close_ep(h, ep);
}

/* One step on a fresh episode that must fail with `why`, the reason
 * holding `words`; another live episode beside it goes on when `survives`. */
static void expect_failure(harness *h, const char *action, uint32_t why, const char *words,
                           int survives)
{
    tern_env_result r;
    void *other = reset(h, "{\"target\": 5}", 2, &r);
    void *ep = reset(h, "{}", 1, &r);
    cr_assert_eq(r.failure, TERN_ENV_OK, "%s", r.reason);
    step(h, ep, action, 1, &r);
    cr_expect_eq(r.failure, why, "'%s': failure %u, wanted %u (%s)", action, r.failure, why,
                 r.reason);
    cr_expect(strstr(r.reason, words), "'%s': reason '%s' lacks '%s'", action, r.reason, words);
    cr_expect_null(r.observation, "'%s': no observation with a failure", action);
    step(h, ep, "1", 2, &r);
    cr_expect_eq(r.failure, TERN_ENV_AFTER_DONE, "'%s': a failed episode is over: %s", action,
                 r.reason);
    close_ep(h, ep);
    step(h, other, "1", 1, &r);
    if (survives) {
        cr_expect_eq(r.failure, TERN_ENV_OK, "'%s': the other episode goes on: %s", action,
                     r.reason);
        cr_expect_str_eq(r.observation ? r.observation : "(null)", "now 1 of 5");
    } else {
        cr_expect_eq(r.failure, why, "'%s': the other episode was in the same worker: %s",
                     action, r.reason);
        cr_expect(strstr(r.reason, "its worker ended in episode"), "%s", r.reason);
    }
    close_ep(h, other);
    fresh_episode_works(h);
}

Test(python_env, a_multi_turn_episode)
{
    harness h;
    open_env(&h, counter_py, "");
    tern_env_result r;
    void *ep = reset(&h, "{\"prompt\": \"count\", \"target\": 3}", 42, &r);
    cr_expect_eq(r.failure, TERN_ENV_OK, "%s", r.reason);
    cr_expect_str_eq(r.observation, "count to 3 (seed 42)", "the task and the seed reach Env");
    step(&h, ep, "1", 1, &r);
    cr_expect_str_eq(r.observation, "now 1 of 3");
    cr_expect_float_eq(r.reward, 0.1, 1e-12);
    cr_expect_not(r.done);
    step(&h, ep, "2", 2, &r);
    cr_expect_str_eq(r.observation, "now 2 of 3");
    cr_expect_float_eq(r.reward, 0.2, 1e-12);
    step(&h, ep, "3", 3, &r);
    cr_expect_eq(r.failure, TERN_ENV_OK, "%s", r.reason);
    cr_expect_null(r.observation, "None when done");
    cr_expect_eq(r.reward, 1.0, "an int reward is a number");
    cr_expect(r.done);
    step(&h, ep, "4", 4, &r);
    cr_expect_eq(r.failure, TERN_ENV_AFTER_DONE, "%s", r.reason);
    cr_expect(strstr(r.reason, "after the episode ended (after turn 3)"), "%s", r.reason);
    close_ep(&h, ep);
    /* a seed beyond 2^63 reaches Python whole */
    ep = reset(&h, "{\"target\": 1}", UINT64_MAX, &r);
    cr_expect_str_eq(r.observation, "count to 1 (seed 18446744073709551615)");
    close_ep(&h, ep);
    harness_close(&h);
}

Test(python_env, many_episodes_interleaved_each_with_its_own_state)
{
    harness h;
    open_env(&h, counter_py, "");
    enum { N = 24 };
    void *ep[N];
    int target[N], done[N] = {0};
    tern_env_result r;
    for (int i = 0; i < N; i++) {
        char task[64];
        target[i] = 2 + i % 4;
        snprintf(task, sizeof task, "{\"target\": %d}", target[i]);
        ep[i] = reset(&h, task, (uint64_t)i, &r);
        cr_assert_eq(r.failure, TERN_ENV_OK, "%s", r.reason);
    }
    for (int turn = 1; turn <= 5; turn++)
        for (int i = 0; i < N; i++) {
            if (done[i])
                continue;
            char text[8];
            snprintf(text, sizeof text, "%d", turn);
            step(&h, ep[i], text, (uint32_t)turn, &r);
            cr_assert_eq(r.failure, TERN_ENV_OK, "episode %d turn %d: %s", i, turn, r.reason);
            cr_expect_eq(r.done, turn >= target[i], "episode %d turn %d", i, turn);
            if (r.done) {
                done[i] = 1;
                close_ep(&h, ep[i]); /* closes ride with the next request */
            } else {
                char want[32];
                snprintf(want, sizeof want, "now %d of %d", turn, target[i]);
                cr_expect_str_eq(r.observation, want, "episode %d", i);
            }
        }
    for (int i = 0; i < N; i++)
        cr_expect(done[i], "episode %d done", i);
    fresh_episode_works(&h);
    harness_close(&h);
}

Test(python_env, gymnasium_four_and_five_tuples)
{
    harness h;
    open_env(&h, counter_py, "");
    tern_env_result r;
    void *ep = reset(&h, "{}", 1, &r);
    step(&h, ep, "four", 1, &r);
    cr_expect_eq(r.failure, TERN_ENV_OK, "%s", r.reason);
    cr_expect_str_eq(r.observation, "four");
    cr_expect_float_eq(r.reward, 0.5, 1e-12);
    cr_expect_not(r.done);
    cr_expect_str_eq(r.reason, "info says so", "info[\"reason\"] is the reason");
    step(&h, ep, "five", 2, &r);
    cr_expect_eq(r.failure, TERN_ENV_OK, "%s", r.reason);
    cr_expect_float_eq(r.reward, 0.25, 1e-12);
    cr_expect(r.done, "truncated is done");
    close_ep(&h, ep);
    harness_close(&h);
}

Test(python_env, a_crash_ends_its_episode_and_those_in_its_worker, .timeout = 60)
{
    harness h;
    open_env(&h, counter_py, "");
    expect_failure(&h, "crash", TERN_ENV_CRASH, "the worker exited with status 3", 0);
    harness_close(&h);
}

Test(python_env, a_segfault_is_a_crash, .timeout = 60)
{
    harness h;
    open_env(&h, counter_py, "");
    expect_failure(&h, "segv", TERN_ENV_CRASH, "the worker was killed by SIGSEGV", 0);
    harness_close(&h);
}

Test(python_env, a_hang_times_out_and_the_worker_restarts, .timeout = 60)
{
    harness h;
    enter_temp_dir();
    write_file("env.py", counter_py);
    cr_assert_eq(harness_open(&h, PLUGIN, TERN_KIND_ENVIRONMENT,
                              "file = \"env.py\"; timeout_ms = 2500;"), TERN_OK, "%s", h.error);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    expect_failure(&h, "hang", TERN_ENV_TIMEOUT, "no answer within 2500 ms", 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    cr_expect_lt(t1.tv_sec - t0.tv_sec, 30, "the hang was cut at its timeout");
    harness_close(&h);
}

/* The line of `needle` in counter_py, from 1. */
static int line_in_source(const char *needle)
{
    const char *at = strstr(counter_py, needle);
    int line = 1;
    for (const char *p = counter_py; p < at; p++)
        line += *p == '\n';
    return line;
}

Test(python_env, an_exception_is_an_error_with_its_type_message_and_line)
{
    harness h;
    open_env(&h, counter_py, "");
    char want[64];
    snprintf(want, sizeof want, "KeyError: 'missing' (env.py:%d)", line_in_source("{}['missing']"));
    expect_failure(&h, "raise", TERN_ENV_ERROR, want, 1);
    /* in reset too */
    tern_env_result r;
    void *ep = reset(&h, "{\"raise_in_reset\": true}", 1, &r);
    snprintf(want, sizeof want, "ValueError: no reset today (env.py:%d)",
             line_in_source("raise ValueError"));
    cr_expect_eq(r.failure, TERN_ENV_ERROR, "%s", r.reason);
    cr_expect(strstr(r.reason, want), "'%s' lacks '%s'", r.reason, want);
    close_ep(&h, ep);
    fresh_episode_works(&h);
    harness_close(&h);
}

Test(python_env, garbage_of_every_kind_ends_its_episode_only)
{
    harness h;
    open_env(&h, counter_py, "");
    static const struct {
        const char *action, *words;
    } cases[] = {
        {"str_reward", "the reward must be a number, not str"},
        {"int_done", "done must be a bool, not int"},
        {"obs_int", "the observation must be a str or None, not int"},
        {"pair", "it returned a tuple of 2"},
        {"nan", "the reward is nan, not a finite number"},
        {"inf", "the reward is inf, not a finite number"},
        {"huge", "the observation is 1048577 bytes, over the 1048576 tern takes"},
        {"none_not_done", "the observation is None but the episode is not done"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_failure(&h, cases[i].action, TERN_ENV_GARBAGE, cases[i].words, 1);
    harness_close(&h);
}

Test(python_env, junk_on_the_protocol_channel_is_garbage, .timeout = 60)
{
    harness h;
    open_env(&h, counter_py, "");
    /* the worker is out of step: killed, and its other episodes end too */
    expect_failure(&h, "junk", TERN_ENV_GARBAGE, "no answer (not a JSON object): 'junk on the "
                   "channel'", 0);
    harness_close(&h);
}

Test(python_env, a_class_without_seed_a_named_class_and_a_reset_of_none)
{
    harness h;
    open_env(&h,
             "class Game:\n"
             "    def reset(self, task):\n"
             "        self.n = 0\n"
             "        return None\n"
             "    def step(self, action):\n"
             "        self.n += 1\n"
             "        return ('again', 0, False) if 'stop' not in action else (None, 2.5, True)\n",
             "class = \"Game\";");
    tern_env_result r;
    void *ep = reset(&h, "{\"prompt\": \"go\"}", 1, &r);
    cr_expect_eq(r.failure, TERN_ENV_OK, "%s", r.reason);
    cr_expect_null(r.observation, "None: the task's prompt is the first turn");
    step(&h, ep, "go on", 1, &r);
    cr_expect_str_eq(r.observation, "again");
    step(&h, ep, "please stop", 2, &r);
    cr_expect(r.done);
    cr_expect_float_eq(r.reward, 2.5, 1e-12);
    close_ep(&h, ep);
    harness_close(&h);
}

Test(python_env, a_file_that_does_not_load_is_refused_with_pythons_words)
{
    static const struct {
        const char *source, *extra, *words;
    } cases[] = {
        {"class Env:\n    def reset(self, task)\n", "", "SyntaxError: "},
        {"import no_such_module_here\n", "", "ModuleNotFoundError: No module named "
                                             "'no_such_module_here' (env.py:1)"},
        {"class Other:\n    pass\n", "", "env.py has no class 'Env'"},
        {"class Env:\n    def reset(self, task):\n        return ''\n", "",
         "class 'Env' in env.py has no method step()"},
        {"class Env:\n    def reset(self, t): pass\n    def step(self, a): pass\n",
         "python = \"no-such-python\";", "cannot start 'no-such-python'"},
    };
    enter_temp_dir();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_file("env.py", cases[i].source);
        char group[256];
        snprintf(group, sizeof group, "file = \"env.py\"; %s", cases[i].extra);
        harness h;
        int rc = harness_open(&h, PLUGIN, TERN_KIND_ENVIRONMENT, group);
        cr_expect_eq(rc, TERN_ECONFIG, "case %zu: %d %s", i, rc, h.error);
        cr_expect(strstr(h.error, cases[i].words), "case %zu: '%s' lacks '%s'", i, h.error,
                  cases[i].words);
        if (!strstr(cases[i].extra, "python"))
            cr_expect(strstr(h.error, "/env.py does not load"), "the file is named: %s",
                      h.error);
        harness_close(&h);
    }
}

Test(env_protocol, answers_and_what_is_not_one)
{
    env_answer a;
    const char *ok = "{\"observation\": \"hi\", \"reward\": 0.5, \"done\": false}";
    cr_expect_eq(env_parse_reply(ok, strlen(ok), 1, &a), ENV_ANSWERED);
    cr_expect_eq(a.failure, TERN_ENV_OK);
    cr_expect_str_eq(a.observation, "hi");
    cr_expect_float_eq(a.reward, 0.5, 1e-12);
    env_answer_free(&a);
    const char *err = "{\"error\": \"KeyError: 'x' (env.py:3)\"}";
    cr_expect_eq(env_parse_reply(err, strlen(err), 1, &a), ENV_ANSWERED);
    cr_expect_eq(a.failure, TERN_ENV_ERROR);
    cr_expect_str_eq(a.reason, "KeyError: 'x' (env.py:3)");
    const char *nul = "{\"observation\": \"a\\u0000b\", \"reward\": 0, \"done\": false}";
    cr_expect_eq(env_parse_reply(nul, strlen(nul), 1, &a), ENV_ANSWERED);
    cr_expect_eq(a.failure, TERN_ENV_GARBAGE, "%s", a.reason);
    static const char *const bad[] = {"junk", "[1]", "{\"reward\": 1, \"done\": true}",
                                      "{\"observation\": \"x\", \"reward\": \"1\", \"done\": true}",
                                      "{\"observation\": \"x\", \"reward\": 1, \"done\": 1}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_expect_eq(env_parse_reply(bad[i], strlen(bad[i]), 1, &a), ENV_NOT_A_REPLY, "%s",
                     bad[i]);
        cr_expect(strstr(a.reason, "the worker's reply is no answer"), "%s", a.reason);
        cr_expect_null(a.observation);
    }
    /* a reset's answer needs no reward */
    const char *first = "{\"observation\": null}";
    cr_expect_eq(env_parse_reply(first, strlen(first), 0, &a), ENV_ANSWERED);
    cr_expect_eq(a.failure, TERN_ENV_OK);
    cr_expect_null(a.observation);
    /* requests: one line each, the seed unsigned, the action's bad bytes U+FFFD */
    size_t n = 0;
    char *req = env_request_reset(7, UINT64_MAX, "{\"a\":1}", &n);
    cr_expect_str_eq(req, "{\"op\":\"reset\",\"id\":7,\"seed\":18446744073709551615,\"task\":"
                          "{\"a\":1}}\n");
    cr_expect_eq(n, strlen(req));
    free(req);
    req = env_request_step(8, "a\n\xff", 3, &n);
    cr_expect_str_eq(req, "{\"op\":\"step\",\"id\":8,\"action\":\"a\\n\xef\xbf\xbd\"}\n");
    free(req);
}

Test(python_env, tern_check_loads_the_environment_section_of_a_config)
{
    enter_temp_dir();
    write_file("env.py", counter_py);
    write_file("env.cfg", "environment = { plugin = \"" PLUGIN "\"; file = \"env.py\"; "
                          "max_turns = 8; };\n");
    char cwd[1024];
    cr_assert_not_null(getcwd(cwd, sizeof cwd));
    result r;
    /* from elsewhere: file is found beside the config, not in the working directory */
    run(&r, "%s check --plugins-only %s/env.cfg", TERN_TEST_BIN, cwd);
    cr_expect_eq(r.code, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "environment " PLUGIN " 1.0.0"), "%s", r.out);
    cr_expect(strstr(r.out, "max_turns=8"), "%s", r.out);
    write_file("env.py", "class Env:\n    def reset(self, task):\n        return 'x' +\n");
    run(&r, "%s check --plugins-only %s/env.cfg", TERN_TEST_BIN, cwd);
    cr_expect_eq(r.code, 2, "a config error: %s%s", r.out, r.err);
    cr_expect(strstr(r.err, "env.cfg:1: environment.file: "), "%s", r.err);
    cr_expect(strstr(r.err, "/env.py does not load: SyntaxError: "), "%s", r.err);
}
