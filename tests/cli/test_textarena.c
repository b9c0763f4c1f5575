/* test_textarena.c: textarena (PyPI) through a workflow, unchanged
 * (examples/textarena): ta_tasks.py writes GuessTheNumber games as tasks,
 * and ta_agent.py plays each with textarena's own OpenAIAgent against the
 * trajectory's endpoint, `tern run` serving the Qwen2 chat fixture (its
 * context made longer in a copy). The
 * agent sends every turn as a new conversation, so each call after the
 * first begins a sequence of its own (a `prompt` segment, the game's
 * observation so far); the trainer scores each after its own prompt, as it
 * was sampled (ratio 1, mismatch 0 at the first step). No game fails: the
 * tasks' prompts are the games' first observations. The package is
 * installed into a cached venv (tests/support/pypi_venv.h); where it cannot
 * be, the test reports itself skipped. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "command.h"
#include "pypi_venv.h"

#define TERN TERN_TEST_BIN
#define SRC TERN_TEST_SOURCE_DIR
#define WORK TERN_TEST_WORK_DIR
#define EXAMPLE SRC "/examples/textarena"

Test(textarena, its_own_agent_plays_its_games_through_the_endpoint, .timeout = 600)
{
    char python[1100], why[600];
    if (pypi_venv_python("textarena", "textarena", TEXTARENA_PACKAGE, python, sizeof python,
                         why, sizeof why) != 0)
        cr_skip_test("%s", why);
    result r;
    run(&r, "cd %s && rm -rf ta runs && %s %s/ta_tasks.py GuessTheNumber-v0 "
            "--env-args '{\"max_turns\": 3}' --train 4 --eval 2 --out ta", WORK, python, EXAMPLE);
    cr_assert_eq(r.code, 0, "ta_tasks.py: %s", r.err);
    json_t *tasks = json_lines(WORK "/ta/train.jsonl", "textarena");
    cr_assert_eq(json_array_size(tasks), 4);
    const char *prompt = json_string_value(json_object_get(json_array_get(tasks, 0), "prompt"));
    cr_expect(prompt && strstr(prompt, "Guess The Number") && strstr(prompt, "within 3 turns"),
              "the game's first observation: %s", prompt);
    json_decref(tasks);

    /* the fixture with room for a game's observations (its context is 256
     * tokens; RoPE's positions go as far as asked) */
    run(&r, "cd %s && rm -rf model && cp -r %s/tests/fixtures/qwen2_chat model && "
            "sed -i 's/\"max_position_embeddings\": 256/\"max_position_embeddings\": 2048/' "
            "model/config.json && grep -q '\"max_position_embeddings\": 2048' model/config.json",
        WORK, SRC);
    cr_assert_eq(r.code, 0, "the fixture's copy: %s", r.err);
    char cfg[4096];
    snprintf(cfg, sizeof cfg,
             "run = { name = \"guess\"; seed = 3; out_dir = \"runs\"; keep_groups = 2; };\n"
             "model = { plugin = \"transformer\"; path = \"model\"; threads = 1; };\n"
             "data = { train = \"ta/train.jsonl\"; };\n"
             "explorer = { batch_tasks = 2; group_size = 3; max_tokens = 6; };\n"
             "workflow = { command = [\"%s\", \"%s/ta_agent.py\"]; concurrency = 6; "
             "max_calls = 8; };\n"
             "trainer = { steps = 2; save_every = 100; lr = 1e-3; score_pass = \"always\"; };\n"
             "algorithm = { kl = { coef = 0.0; }; };\n"
             "buffer = { plugin = \"fifo\"; capacity = 64; };\n"
             "sync = { plugin = \"synchronous\"; };\n",
             python, EXAMPLE);
    write_file(WORK "/guess.cfg", cfg);
    run(&r, "cd %s && %s run guess.cfg", WORK, TERN);
    cr_assert_eq(r.code, 0, "tern run: exit %d\n%s", r.code, r.err);
    json_t *m = json_lines(WORK "/runs/guess/metrics.jsonl", "workflow/calls");
    cr_assert_eq(json_array_size(m), 2);
    for (size_t i = 0; i < 2; i++) {
        json_t *o = json_array_get(m, i);
        double calls = json_real_value(json_object_get(o, "workflow/calls"));
        cr_expect(calls >= 2, "a game is several calls: %g", calls);
        cr_expect(fabs(json_real_value(json_object_get(o, "workflow/rewrites")) - 1) < 1e-12,
                  "each turn is a new conversation");
        cr_expect_eq(json_integer_value(json_object_get(o, "env_failures")), 0, "%s", r.err);
    }
    json_t *o = json_array_get(m, 0);
    double ratio = json_real_value(json_object_get(o, "ratio_mean"));
    cr_expect(fabs(ratio - 1) < 1e-5, "each turn scored as sampled: ratio %g", ratio);
    cr_expect(json_real_value(json_object_get(o, "mismatch_kl")) < 1e-5);
    json_decref(m);

    /* the trained trajectory: the first guess after the group's prompt,
     * then each turn after its own, the game's observation so far */
    json_t *groups = json_lines(WORK "/runs/guess/rollouts.jsonl", "responses");
    cr_assert_gt(json_array_size(groups), 0);
    json_t *resp = json_array_get(json_object_get(json_array_get(groups, 0), "responses"), 0);
    json_t *turns = json_object_get(resp, "turns");
    cr_assert_geq(json_array_size(turns), 3, "model, prompt, model ...");
    for (size_t k = 0; k < json_array_size(turns); k++) {
        json_t *t = json_array_get(turns, k);
        const char *role = json_string_value(json_object_get(t, "role"));
        cr_expect_str_eq(role, k % 2 ? "prompt" : "model", "segment %zu", k);
        const char *text = json_string_value(json_object_get(t, "text"));
        if (k % 2)
            cr_expect(text && strstr(text, "[GAME]") && strstr(text, "[Player]"),
                      "the observation so far, with the guesses: %s", text);
    }
    json_decref(groups);
}
