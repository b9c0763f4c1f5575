/* test_workflow_openai.c: the workflow example's agent
 * (examples/workflow-openai/agent.py), written with the real `openai`
 * client (PyPI), run by `tern run` as each trajectory's program against the
 * Qwen2 chat fixture: its two-attempt conversations go through, none fails,
 * none rewrites its history (the client's messages continue the calls
 * token for token), and at the first step the trainer's log-probs are the
 * sampler's. The client is installed into a cached venv
 * (tests/support/pypi_venv.h); where it cannot be, the test reports itself
 * skipped. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>

#include "command.h"
#include "pypi_venv.h"

#define TERN TERN_TEST_BIN
#define SRC TERN_TEST_SOURCE_DIR
#define WORK TERN_TEST_WORK_DIR

Test(workflow_openai, the_example_agent_trains_through_the_openai_client, .timeout = 600)
{
    char python[1100], why[600];
    if (openai_venv_python(python, sizeof python, why, sizeof why) != 0)
        cr_skip_test("%s", why);
    char cfg[4096];
    snprintf(cfg, sizeof cfg,
             "run = { name = \"agent\"; seed = 2; out_dir = \"runs\"; };\n"
             "model = { plugin = \"transformer\"; path = \"%s/tests/fixtures/qwen2_chat\"; "
             "threads = 1; };\n"
             "data = { train = \"%s/etc/data/smollm2/arith-train.jsonl\"; };\n"
             "explorer = { batch_tasks = 2; group_size = 3; max_tokens = 6; };\n"
             "workflow = { command = [\"%s\", \"%s/examples/workflow-openai/agent.py\"]; "
             "concurrency = 6; max_calls = 2; };\n"
             "trainer = { steps = 2; save_every = 100; lr = 1e-3; score_pass = \"always\"; };\n"
             "algorithm = { kl = { coef = 0.0; }; };\n"
             "buffer = { plugin = \"fifo\"; capacity = 64; };\n"
             "sync = { plugin = \"synchronous\"; };\n",
             SRC, SRC, python, SRC);
    write_file(WORK "/agent.cfg", cfg);
    result r;
    run(&r, "cd %s && rm -rf runs/agent && %s run agent.cfg", WORK, TERN);
    cr_assert_eq(r.code, 0, "tern run: exit %d\n%s", r.code, r.err);
    json_t *m = json_lines(WORK "/runs/agent/metrics.jsonl", "workflow/calls");
    cr_assert_eq(json_array_size(m), 2);
    for (size_t i = 0; i < 2; i++) {
        json_t *o = json_array_get(m, i);
        double calls = json_real_value(json_object_get(o, "workflow/calls"));
        cr_expect(calls >= 1 && calls <= 2, "one or two attempts: %g calls", calls);
        cr_expect(json_real_value(json_object_get(o, "workflow/rewrites")) == 0,
                  "the client's conversation continues its calls");
        cr_expect_eq(json_integer_value(json_object_get(o, "env_failures")), 0, "%s", r.err);
    }
    json_t *o = json_array_get(m, 0);
    cr_expect(fabs(json_real_value(json_object_get(o, "ratio_mean")) - 1) < 1e-5);
    cr_expect(json_real_value(json_object_get(o, "mismatch_kl")) < 1e-5);
    json_decref(m);
}
