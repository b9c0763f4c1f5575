/* test_hf_run.c: `tern run` from a Hugging Face-shaped chat model: a small
 * Qwen2 checkpoint (BF16, q/k/v biases, tied head) with the Qwen2.5
 * byte-level BPE tokenizer and its chat template (tests/fixtures/qwen2_chat/,
 * made by tests/ref/qwen2_chat_ref.py). A warm-up and GRPO run works end to
 * end; every prompt went through the chat template with the system turn;
 * the checkpoint it saves is a Qwen2 directory that reloads (tern generate
 * --chat, tern score) with the tokenizer files unchanged; and a system turn
 * for a model without a chat template is refused. That the checkpoint gives
 * PyTorch's log-probs is checked by `qwen2_chat_ref.py check` (needs torch;
 * not in CI). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command.h"

#define TERN TERN_TEST_BIN
#define SRC TERN_TEST_SOURCE_DIR
#define WORK TERN_TEST_WORK_DIR
#define FIXTURE SRC "/tests/fixtures/qwen2_chat"
#define SYSTEM "Answer with a number."

static void write_config(const char *path, const char *name, const char *model,
                         const char *data_extra)
{
    char text[4096];
    snprintf(text, sizeof text,
             "run = { name = \"%s\"; seed = 5; out_dir = \"runs_hf\"; };\n"
             "model = { plugin = \"transformer\"; %s threads = 1; };\n"
             "reference = { same_as = \"model\"; };\n"
             "data = { train = \"%s/etc/data/arith-train.jsonl\"; eval = "
             "\"%s/etc/data/arith-eval.jsonl\"; %s };\n"
             "explorer = { batch_tasks = 4; group_size = 4; max_tokens = 6; };\n"
             "trainer = { steps = 4; save_every = 2; lr = 1e-3; "
             "sft = { steps = 2; batch_tasks = 4; lr = 1e-3; }; };\n"
             "algorithm = { kl = { estimator = \"k3\"; coef = 0.001; }; };\n"
             "eval = { max_tokens = 6; limit = 4; every = 2; };\n"
             "buffer = { plugin = \"fifo\"; capacity = 256; };\n"
             "sync = { plugin = \"synchronous\"; };\n"
             "rewards = ( { domain = \"math\"; plugin = \"math\"; } );\n",
             name, model, SRC, SRC, data_extra);
    write_file(path, text);
}

/* Tokens of `text` as the model directory's tokenizer gives them: the lines
 * `tern score` prints (one per token after the first) plus the first. */
static int count_tokens(const char *dir, const char *text)
{
    result r;
    run(&r, "cd %s && %s score %s --text '%s' | grep -c '^[0-9]'", WORK, TERN, dir, text);
    cr_assert_eq(r.code, 0, "tern score %s: %s", dir, r.err);
    return atoi(r.out) + 1;
}

static int same_file(const char *a, const char *b)
{
    result r;
    run(&r, "cmp -s '%s' '%s'", a, b);
    return r.code == 0;
}

Test(hf_run, qwen2_chat_model_trains_and_its_checkpoint_reloads, .timeout = 300)
{
    write_config(WORK "/hf_qwen2.cfg", "qwen2", "path = \"" FIXTURE "\";",
                 "system_prompt = \"" SYSTEM "\";");
    result r;
    run(&r, "cd %s && rm -rf runs_hf/qwen2 && %s run hf_qwen2.cfg", WORK, TERN);
    cr_assert_eq(r.code, 0, "tern run: exit %d\n%s", r.code, r.err);

    /* every RL step ran */
    json_error_t e;
    json_t *sum = json_load_file(WORK "/runs_hf/qwen2/summary.json", 0, &e);
    cr_assert_not_null(sum, "summary.json: %s", e.text);
    cr_expect(json_is_true(json_object_get(sum, "finished")), "the run did not finish");
    json_decref(sum);

    /* the prompts were formatted by the Qwen2.5 template, with the system
     * turn: each task's prompt_tokens is what that text tokenizes to */
    FILE *f = fopen(WORK "/runs_hf/qwen2/rollouts.jsonl", "r");
    cr_assert_not_null(f);
    char line[8192];
    int lines = 0;
    while (fgets(line, sizeof line, f) && lines < 3) {
        json_t *o = json_loads(line, 0, &e);
        cr_assert_not_null(o, "rollouts.jsonl: %s", e.text);
        const char *task = json_string_value(json_object_get(o, "task"));
        cr_assert_not_null(task);
        /* the task's prompt, from the tasks file */
        result p;
        run(&p, "grep '\"%s\"' %s/etc/data/arith-train.jsonl | sed 's/.*\"prompt\":\"\\([^\"]*\\)\".*/\\1/'",
            task, SRC);
        p.out[strcspn(p.out, "\n")] = '\0';
        cr_assert(*p.out, "task %s not found", task);
        char text[sizeof p.out + 256];
        snprintf(text, sizeof text,
                 "<|im_start|>system\n" SYSTEM "<|im_end|>\n<|im_start|>user\n%s<|im_end|>\n"
                 "<|im_start|>assistant\n", p.out);
        int want = count_tokens(FIXTURE, text);
        cr_expect_eq(json_integer_value(json_object_get(o, "prompt_tokens")), want,
                     "task %s (%s): prompt_tokens %lld, the chat-formatted prompt has %d", task,
                     p.out, (long long)json_integer_value(json_object_get(o, "prompt_tokens")),
                     want);
        json_decref(o);
        lines++;
    }
    fclose(f);
    cr_expect_eq(lines, 3, "rollouts.jsonl has %d lines", lines);

    /* the checkpoint: a Qwen2 directory with the tokenizer files as loaded */
    const char *ck = WORK "/runs_hf/qwen2/checkpoints/step-4/policy";
    char cfg[65536];
    slurp(WORK "/runs_hf/qwen2/checkpoints/step-4/policy/config.json", cfg, sizeof cfg);
    json_t *c = json_loads(cfg, 0, &e);
    cr_assert_not_null(c, "checkpoint config.json: %s", e.text);
    cr_expect_str_eq(json_string_value(json_object_get(c, "model_type")), "qwen2");
    cr_expect_str_eq(json_string_value(json_array_get(json_object_get(c, "architectures"), 0)),
                     "Qwen2ForCausalLM");
    json_decref(c);
    cr_expect(same_file(FIXTURE "/tokenizer.json", WORK
                        "/runs_hf/qwen2/checkpoints/step-4/policy/tokenizer.json"),
              "tokenizer.json changed on the way through tern");
    cr_expect(same_file(FIXTURE "/tokenizer_config.json", WORK
                        "/runs_hf/qwen2/checkpoints/step-4/policy/tokenizer_config.json"),
              "tokenizer_config.json changed on the way through tern");

    /* it reloads, chats, and has moved away from the starting weights */
    run(&r, "cd %s && %s generate %s --chat --system '" SYSTEM "' --prompt '1+1=' "
            "--temperature 0 --max-tokens 4", WORK, TERN, ck);
    cr_expect_eq(r.code, 0, "tern generate --chat on the checkpoint: %s", r.err);
    result before, after;
    run(&before, "cd %s && %s score %s --text '<|im_start|>user\n2+2=<|im_end|>'", WORK, TERN,
        FIXTURE);
    run(&after, "cd %s && %s score %s --text '<|im_start|>user\n2+2=<|im_end|>'", WORK, TERN, ck);
    cr_assert_eq(after.code, 0, "tern score on the checkpoint: %s", after.err);
    cr_expect_str_neq(before.out, after.out, "training did not change the weights");
}

Test(hf_run, a_system_turn_needs_a_chat_template)
{
    /* the tiny byte-level model has no chat template ("auto" finds none) */
    write_config(WORK "/hf_nochat.cfg", "nochat",
                 "init = { preset = \"tiny\"; seed = 1; };", "system_prompt = \"" SYSTEM "\";");
    result r;
    run(&r, "cd %s && rm -rf runs_hf/nochat && %s run hf_nochat.cfg", WORK, TERN);
    cr_expect_neq(r.code, 0);
    cr_expect(strstr(r.err, "a system turn needs a chat template"), "%s", r.err);

    /* a template the tokenizer cannot end a turn with is refused at start */
    write_config(WORK "/hf_badchat.cfg", "badchat",
                 "init = { preset = \"tiny\"; seed = 1; }; chat_template = \"chatml\";", "");
    run(&r, "cd %s && rm -rf runs_hf/badchat && %s run hf_badchat.cfg", WORK, TERN);
    cr_expect_eq(r.code, 2, "exit %d: %s", r.code, r.err);
    cr_expect(strstr(r.err, "<|im_end|>, which is not one token of this model's tokenizer"), "%s",
              r.err);
}
