/* test_tool_run.c: `tern run` with tools (docs/agents.md, "Tools"): the
 * small Qwen2 chat model (tests/fixtures/qwen2_chat, Qwen2.5's template with
 * its tool block), wrapped by test_scripted_model so that each turn writes a
 * known text, calls the test tool echo_tool (tests/test_plugins). Each call
 * is answered by a `tool` turn the template renders, appended token for
 * token: the trained ids are the sampled ids and the template's, the
 * trainer's log-probs of the model's tokens are the explorer's (ratio 1); a
 * malformed call, an unknown tool, a tool's failure and a long output each
 * become what the model reads, never a crash; a broken tool plugin ends the
 * run with its message; tools that cannot be described, or a model whose
 * template cannot render them, are refused at start. */
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

/* The fixture with room for the tool block (its RoPE weights do not depend
 * on the length), in WORK/NAME; `template` replaces its chat template. */
static void make_model(const char *name, const char *template)
{
    result r;
    run(&r, "rm -rf %s/%s && mkdir -p %s/%s && cp %s/* %s/%s/ && sed -i "
            "'s/\"max_position_embeddings\": 256/\"max_position_embeddings\": 4096/; "
            "s/\"sliding_window\": 256/\"sliding_window\": 4096/' %s/%s/config.json",
        WORK, name, WORK, name, FIXTURE, WORK, name, WORK, name);
    cr_assert_eq(r.code, 0, "%s", r.err);
    if (!template)
        return;
    char path[512];
    snprintf(path, sizeof path, WORK "/%s/tokenizer_config.json", name);
    json_t *cfg = json_load_file(path, 0, NULL);
    cr_assert_not_null(cfg);
    json_object_set_new(cfg, "chat_template", json_string(template));
    cr_assert_eq(json_dump_file(cfg, path, JSON_INDENT(1)), 0);
    json_decref(cfg);
}

/* A run of `steps` RL steps whose model writes `script` (a libconfig list
 * of strings) turn after turn, with `tools` and `extra` settings. */
static void write_config(const char *name, const char *model, const char *script,
                         const char *tools, const char *extra, int steps)
{
    char path[256], text[8192];
    snprintf(path, sizeof path, WORK "/%s.cfg", name);
    snprintf(text, sizeof text,
             "plugin_path = [\"%s\"];\n"
             "run = { name = \"%s\"; seed = 5; out_dir = \"runs\"; keep_groups = 2; };\n"
             "model = { plugin = \"scripted_model\"; path = \"%s/%s\"; threads = 1;\n"
             "  script = [%s]; };\n"
             "data = { train = \"%s/etc/data/arith-train.jsonl\"; };\n"
             "explorer = { batch_tasks = 2; group_size = 2; max_tokens = 48; tool_turns = 8; };\n"
             "trainer = { steps = %d; save_every = 100; lr = 1e-3; score_pass = \"always\"; };\n"
             "algorithm = { kl = { coef = 0.0; }; };\n"
             "buffer = { plugin = \"fifo\"; capacity = 64; };\n"
             "sync = { plugin = \"synchronous\"; };\n"
             "rewards = ( { domain = \"math\"; plugin = \"math\"; } );\n"
             "tools = ( %s );\n%s",
             PLUGINS, name, WORK, model, script, SRC, steps, tools, extra);
    write_file(path, text);
}

static json_t *load_lines(const char *name, const char *file, const char *with)
{
    char path[512];
    snprintf(path, sizeof path, WORK "/runs/%s/%s", name, file);
    return json_lines(path, with);
}

/* The ids the fixture's tokenizer gives `text` (support/command.h). */
static json_t *ids_of(const char *text)
{
    return score_ids(TERN, FIXTURE, text);
}

/* a script line: a call of echo with `args` (a libconfig string, escaped) */
#define CALL(args)                                                                             \
    "\"<tool_call>\\n{\\\"name\\\": \\\"echo\\\", \\\"arguments\\\": " args          \
    "}\\n</tool_call>\""

Test(tool_run, tool_turns_are_the_templates_and_the_trained_ids_are_the_sampled, .timeout = 300)
{
    make_model("qwen", NULL);
    write_config("exact", "qwen",
                 CALL("{\\\"text\\\": \\\"hi\\\"}") ", \"<tool_call>not json</tool_call>\", "
                 "\"<tool_call>{\\\"name\\\": \\\"nope\\\", \\\"arguments\\\": {}}</tool_call>\", "
                 CALL("{\\\"text\\\": \\\"fail\\\"}") ", " CALL("{\\\"text\\\": \\\"long\\\"}")
                 ", \"20\"",
                 "{ plugin = \"echo_tool\"; output_max = 24; }", "", 2);
    result r;
    run(&r, "cd %s && rm -rf runs/exact && %s run exact.cfg", WORK, TERN);
    cr_assert_eq(r.code, 0, "tern run: exit %d\n%s", r.code, r.err);
    cr_expect(strstr(r.err, "described by the model's template"), "%s", r.err);

    static const char *const contexts[] = {
        "\nuser\n<tool_response>\necho: hi\n</tool_response>\nassistant\n",
        "\nuser\n<tool_response>\ninvalid tool call: not JSON (column 3: '[' or '{' expected "
        "near 'not'); write {\"name\": ..., \"arguments\": {...}}\n</tool_response>\nassistant\n",
        "\nuser\n<tool_response>\ninvalid tool call: no tool is named \"nope\" (the tools: "
        "echo)\n</tool_response>\nassistant\n",
        "\nuser\n<tool_response>\ntool error: it failed as asked\n</tool_response>\nassistant\n",
        "\nuser\n<tool_response>\nabababababababababababab\n[output truncated to 24 bytes]\n"
        "</tool_response>\nassistant\n"};
    json_t *want = ids_of("<|im_end|>\\n<|im_start|>user\\n<tool_response>\\necho: "
                          "hi\\n</tool_response><|im_end|>\\n<|im_start|>assistant\\n");
    json_t *groups = load_lines("exact", "rollouts.jsonl", "responses");
    cr_assert_eq(json_array_size(groups), 4, "2 steps x 2 groups kept whole");
    size_t i, j, checked = 0;
    json_t *g, *resp;
    json_array_foreach(groups, i, g) {
        json_array_foreach(json_object_get(g, "responses"), j, resp) {
            json_t *turns = json_object_get(resp, "turns");
            cr_assert_eq(json_array_size(turns), 11, "6 model turns, 5 tool turns");
            cr_expect_str_eq(json_string_value(json_object_get(resp, "end")), "answer");
            cr_expect_str_eq(json_string_value(json_object_get(resp, "response")), "20",
                             "the rewards read the final answer");
            for (size_t k = 1; k < 11; k += 2) {
                json_t *t = json_array_get(turns, k);
                cr_expect_str_eq(json_string_value(json_object_get(t, "role")), "context");
                cr_expect_str_eq(json_string_value(json_object_get(t, "text")), contexts[k / 2],
                                 "tool turn %zu", k / 2 + 1);
            }
            /* the first tool turn, id for id: the template's, after the
             * end-of-turn token the model wrote */
            json_t *got = json_object_get(json_array_get(turns, 1), "ids");
            json_t *prev = json_object_get(json_array_get(turns, 0), "ids");
            cr_expect(json_equal(json_array_get(prev, json_array_size(prev) - 1),
                                 json_array_get(want, 0)), "the model's turn ends with its EOS");
            cr_assert_eq(json_array_size(got), json_array_size(want) - 1);
            for (size_t q = 0; q < json_array_size(got); q++)
                cr_expect(json_equal(json_array_get(got, q), json_array_get(want, q + 1)),
                          "tool turn token %zu", q);
            checked++;
        }
    }
    cr_expect_eq(checked, 8);
    json_decref(groups);
    json_decref(want);

    json_t *m = load_lines("exact", "metrics.jsonl", "tools/calls");
    cr_assert_eq(json_array_size(m), 2);
    json_t *first = json_array_get(m, 0);
    cr_expect(fabs(json_real_value(json_object_get(first, "tools/calls")) - 5) < 1e-12);
    cr_expect(fabs(json_real_value(json_object_get(first, "tools/invalid")) - 0.4) < 1e-12,
              "2 of 5 calls invalid");
    cr_expect(fabs(json_real_value(json_object_get(first, "tools/failed")) - 0.2) < 1e-12,
              "1 of 5 calls failed");
    cr_expect(fabs(json_real_value(json_object_get(first, "turns")) - 6) < 1e-12);
    double ratio = json_real_value(json_object_get(first, "ratio_mean"));
    double mm = json_real_value(json_object_get(first, "mismatch_kl"));
    cr_expect(fabs(ratio - 1) < 1e-5, "ratio_mean %.9f at the first step", ratio);
    cr_expect(mm < 1e-5, "mismatch_kl %.3g at the first step", mm);
    json_decref(m);
}

/* A turn whose calls use up tool_turns ends the trajectory unfinished. */
Test(tool_run, calls_that_use_up_the_turns_end_the_trajectory, .timeout = 300)
{
    make_model("qwen", NULL);
    write_config("turns", "qwen", CALL("{\\\"text\\\": \\\"hi\\\"}"),
                 "{ plugin = \"echo_tool\"; }", "", 1);
    result r;
    run(&r, "cd %s && rm -rf runs/turns && %s run turns.cfg -o explorer.tool_turns=3", WORK, TERN);
    cr_assert_eq(r.code, 0, "tern run: exit %d\n%s", r.code, r.err);
    json_t *groups = load_lines("turns", "rollouts.jsonl", "responses");
    cr_assert_gt(json_array_size(groups), 0);
    json_t *resp = json_array_get(json_object_get(json_array_get(groups, 0), "responses"), 0);
    cr_expect_str_eq(json_string_value(json_object_get(resp, "end")), "max_turns");
    cr_expect_eq(json_array_size(json_object_get(resp, "turns")), 5, "3 model turns, 2 tool");
    json_decref(groups);
}

/* Without a tool block in the model's template, tern describes the tools
 * in the system turn; the answers are still the template's tool turns. */
Test(tool_run, a_template_without_a_tool_block_gets_terns_in_the_system_turn, .timeout = 300)
{
    make_model("plain_chatml",
               "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
               "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if "
               "add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}");
    write_config("fallback", "plain_chatml", CALL("{\\\"text\\\": \\\"hi\\\"}") ", \"20\"",
                 "{ plugin = \"echo_tool\"; }", "", 1);
    result r;
    run(&r, "cd %s && rm -rf runs/fallback && %s run fallback.cfg", WORK, TERN);
    cr_assert_eq(r.code, 0, "tern run: exit %d\n%s", r.code, r.err);
    cr_expect(strstr(r.err, "described by tern in the system turn"), "%s", r.err);
    json_t *groups = load_lines("fallback", "rollouts.jsonl", "responses");
    cr_assert_gt(json_array_size(groups), 0);
    json_t *g = json_array_get(groups, 0);
    json_t *resp = json_array_get(json_object_get(g, "responses"), 0);
    json_t *tool = json_array_get(json_object_get(resp, "turns"), 1);
    cr_expect_str_eq(json_string_value(json_object_get(tool, "text")),
                     "\ntool\necho: hi\nassistant\n", "the template's own tool turn");
    /* the tool block is in the prompt: far longer than the task's few tokens */
    cr_expect_gt(json_integer_value(json_object_get(g, "prompt_tokens")), 150);
    json_decref(groups);
}

Test(tool_run, a_broken_tool_plugin_fails_the_run_with_its_message, .timeout = 120)
{
    make_model("qwen", NULL);
    write_config("broken", "qwen", CALL("{\\\"text\\\": \\\"broken\\\"}"),
                 "{ plugin = \"echo_tool\"; }", "", 1);
    result r;
    run(&r, "cd %s && rm -rf runs/broken && %s run broken.cfg", WORK, TERN);
    cr_expect_neq(r.code, 0);
    cr_expect(strstr(r.err, "tools[0]") && strstr(r.err, "echo_tool: broken as asked"), "%s",
              r.err);
}

static void expect_refused(const char *name, const char *tools, const char *want)
{
    make_model("qwen", NULL);
    write_config(name, "qwen", "\"20\"", tools, "", 1);
    result r;
    run(&r, "cd %s && rm -rf runs/%s && %s run %s.cfg", WORK, name, TERN, name);
    cr_expect_neq(r.code, 0, "%s", name);
    cr_expect(strstr(r.err, want), "%s: '%s' missing from: %s", name, want, r.err);
    char dir[512];
    snprintf(dir, sizeof dir, WORK "/runs/%s/metrics.jsonl", name);
    FILE *f = fopen(dir, "r");
    cr_expect_null(f, "%s: nothing ran", name);
    if (f)
        fclose(f);
}

Test(tool_run, tools_that_cannot_be_described_are_refused_at_start, .timeout = 120)
{
    expect_refused("notjson", "{ plugin = \"echo_tool\"; schema = \"{nope\"; }",
                   "describes its function with text that is not JSON");
    expect_refused("shape", "{ plugin = \"echo_tool\"; schema = \"{\\\"type\\\": 1}\"; }",
                   "JSON of another shape");
    expect_refused("badname", "{ plugin = \"echo_tool\"; name = \"a b\"; }",
                   "names its function \"a b\"");
    expect_refused("twice", "{ plugin = \"echo_tool\"; }, { plugin = \"echo_tool\"; }",
                   "two tools are named \"echo\"");
}

Test(tool_run, a_model_whose_template_cannot_render_tools_is_refused, .timeout = 120)
{
    char text[2048];
    snprintf(text, sizeof text,
             "plugin_path = [\"%s\"];\n"
             "run = { name = \"nochat\"; out_dir = \"runs\"; };\n"
             "model = { plugin = \"transformer\"; init = { preset = \"tiny\"; }; threads = 1; };\n"
             "data = { train = \"%s/etc/data/arith-train.jsonl\"; };\n"
             "trainer = { steps = 1; };\n"
             "buffer = { plugin = \"fifo\"; }; sync = { plugin = \"synchronous\"; };\n"
             "rewards = ( { domain = \"math\"; plugin = \"math\"; } );\n"
             "tools = ( { plugin = \"echo_tool\"; } );\n", PLUGINS, SRC);
    write_file(WORK "/nochat.cfg", text);
    result r;
    run(&r, "cd %s && rm -rf runs/nochat && %s run nochat.cfg", WORK, TERN);
    cr_expect_neq(r.code, 0);
    cr_expect(strstr(r.err, "tools: the model's chat template cannot describe the tools"), "%s",
              r.err);
}

Test(tool_run, tool_turns_beside_an_environment_is_a_config_error)
{
    make_model("qwen", NULL);
    write_config("both", "qwen", "\"20\"", "{ plugin = \"echo_tool\"; }",
                 "environment = { plugin = \"script_env\"; };\n", 1);
    result r;
    run(&r, "cd %s && %s check both.cfg", WORK, TERN);
    cr_expect_neq(r.code, 0);
    cr_expect(strstr(r.err, "explorer.tool_turns") && strstr(r.err, "environment.max_turns"),
              "%s", r.err);
}

/* On MPI ranks the explorer rank's tool calls reach the master's figures,
 * and the trajectories are the same as in one process. */
Test(tool_run, ranks_carry_the_tool_calls, .timeout = 300)
{
    test_need_mpi();
#if defined(__SANITIZE_ADDRESS__)
    /* the ranks' trajectories run under the sanitizers in test_env_run, the
     * counts' encoding in test_wire: the suite's 30 minutes keep this plain */
    cr_skip_test("under the sanitizers test_env_run runs trajectories on ranks (the plain pass "
                 "runs this)");
#endif
    make_model("qwen", NULL);
    write_config("one", "qwen", CALL("{\\\"text\\\": \\\"hi\\\"}") ", \"20\"",
                 "{ plugin = \"echo_tool\"; }", "", 2);
    result r;
    run(&r, "cd %s && rm -rf runs/one runs/three && %s run one.cfg && %s -np 3 %s run one.cfg "
            "-o run.name='\"three\"'", WORK, TERN, test_mpirun(), TERN);
    cr_assert_eq(r.code, 0, "exit %d\n%s", r.code, r.err);
    char a[65536], b[65536];
    slurp(WORK "/runs/one/rollouts.jsonl", a, sizeof a);
    slurp(WORK "/runs/three/rollouts.jsonl", b, sizeof b);
    cr_expect_gt(strlen(a), 1000);
    cr_expect_str_eq(b, a, "rollouts.jsonl differs on ranks");
    json_t *y = load_lines("three", "metrics.jsonl", "tools/calls");
    cr_assert_eq(json_array_size(y), 2);
    cr_expect(fabs(json_real_value(json_object_get(json_array_get(y, 0), "tools/calls")) - 1) <
              1e-12, "one call a trajectory");
    json_decref(y);
}

/* A user's tools are Python functions in the environment's file: the
 * class's `tools`, described from their signatures and docstrings; a method
 * acts on the episode's own instance; bad arguments and exceptions are what
 * the model reads. */
Test(tool_run, an_environment_files_python_functions_are_its_tools, .timeout = 300)
{
    result r;
    run(&r, "command -v python3 >/dev/null");
    if (r.code != 0)
        cr_skip_test("python3 is not installed");
    make_model("qwen", NULL);
    write_file(WORK "/tool_env.py",
               "def multiply(a: int, b: int) -> int:\n"
               "    \"\"\"Multiply two integers exactly.\n"
               "\n"
               "    Args:\n"
               "        a: the first factor\n"
               "        b: the second factor\n"
               "    \"\"\"\n"
               "    return a * b\n"
               "\n"
               "def divide(a: float, b: float) -> float:\n"
               "    \"\"\"Divide a by b.\"\"\"\n"
               "    return a / b\n"
               "\n"
               "class Env:\n"
               "    def secret(self) -> str:\n"
               "        \"\"\"The episode's secret word.\"\"\"\n"
               "        return self.word\n"
               "    tools = [multiply, divide, secret]\n"
               "    def reset(self, task):\n"
               "        self.word = 'kiwi'\n"
               "        return 'Find the word.'\n"
               "    def step(self, action):\n"
               "        return None, 1.0 if 'kiwi' in action else 0.0, True\n");
    write_config("pytools", "qwen",
                 "\"<tool_call>{\\\"name\\\": \\\"multiply\\\", \\\"arguments\\\": {\\\"a\\\": 123, "
                 "\\\"b\\\": 456}}</tool_call>\", "
                 "\"<tool_call>{\\\"name\\\": \\\"secret\\\", \\\"arguments\\\": {}}</tool_call>\", "
                 "\"<tool_call>{\\\"name\\\": \\\"multiply\\\", \\\"arguments\\\": {\\\"a\\\": 1}}"
                 "</tool_call>\", "
                 "\"<tool_call>{\\\"name\\\": \\\"divide\\\", \\\"arguments\\\": {\\\"a\\\": 1, "
                 "\\\"b\\\": 0}}</tool_call>\", \"It is kiwi.\"",
                 "{ plugin = \"echo_tool\"; }",
                 "environment = { plugin = \"python\"; file = \"tool_env.py\"; max_turns = 8; };\n",
                 1);
    /* the environment's rewards are the trajectory's: no rewards section */
    run(&r, "cd %s && sed -i '/^rewards = /d; /tool_turns/s/ tool_turns = 8;//' pytools.cfg && "
            "rm -rf runs/pytools && %s run pytools.cfg", WORK, TERN);
    cr_assert_eq(r.code, 0, "tern run: exit %d\n%s", r.code, r.err);
    json_t *groups = load_lines("pytools", "rollouts.jsonl", "responses");
    cr_assert_gt(json_array_size(groups), 0);
    json_t *resp = json_array_get(json_object_get(json_array_get(groups, 0), "responses"), 0);
    json_t *turns = json_object_get(resp, "turns");
    cr_assert_eq(json_array_size(turns), 9, "5 model turns, 4 tool turns");
    static const char *const want[] = {
        "\nuser\n<tool_response>\n56088\n</tool_response>\nassistant\n",
        "\nuser\n<tool_response>\nkiwi\n</tool_response>\nassistant\n",
        "\nuser\n<tool_response>\ninvalid tool call: multiply(): missing a required argument: "
        "'b'\n</tool_response>\nassistant\n",
        "\nuser\n<tool_response>\ntool error: ZeroDivisionError: division by zero "
        "(tool_env.py:12)\n</tool_response>\nassistant\n"};
    for (size_t k = 0; k < 4; k++)
        cr_expect_str_eq(json_string_value(json_object_get(json_array_get(turns, 2 * k + 1),
                                                           "text")), want[k], "tool turn %zu",
                         k + 1);
    cr_expect_str_eq(json_string_value(json_object_get(resp, "end")), "done");
    cr_expect(fabs(json_real_value(json_object_get(resp, "reward")) - 1) < 1e-12,
              "the environment's reward on the final turn");
    json_decref(groups);
}
