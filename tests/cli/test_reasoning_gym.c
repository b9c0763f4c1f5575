/* test_reasoning_gym.c: reasoning-gym (PyPI) through tern, unchanged
 * (examples/reasoning-gym): rg_tasks.py writes a dataset's entries as
 * tasks, and rg_reward.py, tern's `python` reward, scores a response with
 * the dataset's own score_answer: its answer, tagged or on the last line,
 * is right, none is not; a short `tern run` trains on the tasks with
 * that reward. The package is installed into a cached venv
 * (tests/support/pypi_venv.h); where it cannot be, the test reports itself
 * skipped. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "command.h"
#include "pypi_venv.h"

#define TERN TERN_TEST_BIN
#define SRC TERN_TEST_SOURCE_DIR
#define WORK TERN_TEST_WORK_DIR
#define EXAMPLE SRC "/examples/reasoning-gym"

static void venv(char *python, size_t n)
{
    char why[600];
    if (pypi_venv_python("reasoning-gym", "reasoning_gym", REASONING_GYM_PACKAGE, python, n,
                         why, sizeof why) != 0)
        cr_skip_test("%s", why);
}

Test(reasoning_gym, its_own_score_answer_judges_the_tasks_it_made, .timeout = 600)
{
    char python[1100];
    venv(python, sizeof python);
    result r;
    run(&r, "cd %s && rm -rf rg && %s %s/rg_tasks.py chain_sum --train 12 --eval 3 --out rg",
        WORK, python, EXAMPLE);
    cr_assert_eq(r.code, 0, "rg_tasks.py: %s", r.err);
    json_t *tasks = json_lines(WORK "/rg/train.jsonl", "reasoning_gym");
    cr_assert_eq(json_array_size(tasks), 12);
    /* a right answer on its own line, a right one in tags, a wrong one */
    FILE *f = fopen(WORK "/rg/cases.jsonl", "w");
    cr_assert(f);
    size_t i;
    json_t *t;
    json_array_foreach(tasks, i, t) {
        const char *answer = json_string_value(json_object_get(t, "answer"));
        cr_assert(answer && *answer);
        char resp[256];
        if (i % 3 == 0)
            snprintf(resp, sizeof resp, "Let me add.\n%s", answer);
        else if (i % 3 == 1)
            snprintf(resp, sizeof resp, "<answer>%s</answer>", answer);
        else
            snprintf(resp, sizeof resp, "I cannot tell."); /* no answer */
        json_object_set_new(t, "response", json_string(resp));
        char *line = json_dumps(t, JSON_COMPACT);
        fprintf(f, "%s\n", line);
        free(line);
    }
    fclose(f);
    run(&r, "cd %s/rg && %s reward score --plugin python -o file=%s/rg_reward.py "
            "-o python=%s < cases.jsonl", WORK, TERN, EXAMPLE, python);
    cr_assert_eq(r.code, 0, "tern reward score: %s", r.err);
    char *p = r.out;
    for (i = 0; i < 12; i++) {
        char *nl = strchr(p, '\n');
        cr_assert(nl, "verdict %zu missing: %s", i, r.out);
        *nl = '\0';
        json_t *v = json_loads(p, 0, NULL);
        cr_assert(v, "not JSON: %s", p);
        /* the dataset's own score: 1 for its answer, less for another (some
         * give partial credit), right only at 1 */
        double want = i % 3 == 2 ? 0.0 : 1.0, reward = json_real_value(json_object_get(v, "reward"));
        cr_expect(i % 3 == 2 ? reward < 1 : reward == 1, "case %zu: %s", i, p);
        cr_expect(json_real_value(json_object_get(v, "accuracy")) == want, "case %zu: %s", i, p);
        json_decref(v);
        p = nl + 1;
    }
    json_decref(tasks);
}

Test(reasoning_gym, a_run_trains_on_its_tasks_with_its_reward, .timeout = 600)
{
    char python[1100];
    venv(python, sizeof python);
    result r;
    run(&r, "cd %s && rm -rf rgrun && %s %s/rg_tasks.py chain_sum --train 8 --eval 2 "
            "--out rgrun", WORK, python, EXAMPLE);
    cr_assert_eq(r.code, 0, "rg_tasks.py: %s", r.err);
    char cfg[2048];
    snprintf(cfg, sizeof cfg,
             "run = { name = \"rg\"; seed = 1; out_dir = \"runs\"; };\n"
             "model = { plugin = \"transformer\"; path = \"%s/tests/fixtures/qwen2_chat\"; "
             "threads = 1; };\n"
             "data = { train = \"train.jsonl\"; eval = \"eval.jsonl\"; };\n"
             "explorer = { batch_tasks = 2; group_size = 2; max_tokens = 4; };\n"
             "trainer = { steps = 2; save_every = 100; };\n"
             "eval = { max_tokens = 4; };\n"
             "buffer = { plugin = \"fifo\"; capacity = 64; };\n"
             "sync = { plugin = \"synchronous\"; };\n"
             "rewards = ( { domain = \"reasoning_gym\"; plugin = \"python\"; "
             "file = \"%s/rg_reward.py\"; python = \"%s\"; } );\n",
             SRC, EXAMPLE, python);
    write_file(WORK "/rgrun/rg.cfg", cfg);
    run(&r, "cd %s/rgrun && %s run rg.cfg", WORK, TERN);
    cr_assert_eq(r.code, 0, "tern run: %s", r.err);
    json_t *m = json_lines(WORK "/rgrun/runs/rg/metrics.jsonl", "reward_mean");
    cr_expect_eq(json_array_size(m), 2, "two RL steps scored by the reward");
    for (size_t i = 0; i < json_array_size(m); i++)
        cr_expect_eq(json_integer_value(json_object_get(json_array_get(m, i),
                                                        "reward_failures")), 0,
                     "every response got the reward's verdict");
    json_decref(m);
}
