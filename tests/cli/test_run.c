/* test_run.c: `tern run` end to end -- a shortened, seeded quickstart whose
 * reward rises; a run stopped with SIGINT and resumed that trains on exactly
 * the tasks, in the order, of a run that was never stopped; and every bad
 * input of a run with its message and exit code. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "command.h"
#include "run_dir_checks.h"

#define TERN TERN_TEST_BIN
#define SRC TERN_TEST_SOURCE_DIR
#define WORK TERN_TEST_WORK_DIR

/* A run of the tiny model on the quickstart's tasks, with the explorer and
 * trainer settings given; `extra` adds sections the base lacks. */
static void write_config(const char *path, const char *name, const char *trainer,
                         const char *explorer, const char *extra)
{
    char text[4096];
    snprintf(text, sizeof text,
             "run = { name = \"%s\"; seed = 3; out_dir = \"runs_loop\"; };\n"
             "model = { plugin = \"transformer\"; init = { preset = \"tiny\"; seed = 1; }; "
             "threads = 1; };\n"
             "reference = { same_as = \"model\"; };\n"
             "data = { train = \"%s/etc/data/arith-train.jsonl\"; eval = "
             "\"%s/etc/data/arith-eval.jsonl\"; };\n"
             "explorer = { %s };\n"
             "trainer = { %s };\n"
             "algorithm = { kl = { estimator = \"k3\"; coef = 0.001; }; };\n"
             "eval = { max_tokens = 6; limit = 20; };\n"
             "buffer = { plugin = \"fifo\"; capacity = 256; };\n"
             "sync = { plugin = \"synchronous\"; };\n"
             "rewards = ( { domain = \"math\"; plugin = \"math\"; } );\n%s",
             name, SRC, SRC, explorer, trainer, extra ? extra : "");
    write_file(path, text);
}

static json_t *load_json(const char *path)
{
    json_error_t e;
    json_t *j = json_load_file(path, 0, &e);
    cr_assert_not_null(j, "%s: %s", path, e.text);
    return j;
}

/* The RL lines of a metrics.jsonl (objects with reward_mean), in order. */
static json_t *rl_lines(const char *path) { return json_lines(path, "reward_mean"); }

static double mean_reward(json_t *lines, size_t from, size_t to)
{
    double s = 0;
    for (size_t i = from; i < to; i++)
        s += json_real_value(json_object_get(json_array_get(lines, i), "reward_mean"));
    return s / (double)(to - from);
}

static char *file_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = '\0';
    fclose(f);
    return s;
}

/* A short seeded quickstart: after the warm-up the reward of the sampled
 * answers rises under RL (the acceptance test the quickstart's full run
 * makes with held-out accuracy, cut to CI size). */
Test(run, reward_rises)
{
    result r;
    run(&r, "rm -rf runs_loop/learn");
    write_config(WORK "/learn.cfg", "learn",
                 "steps = 90; lr = 3e-4; save_every = 0; sft = { steps = 200; batch_tasks = 32; "
                 "lr = 2e-3; };",
                 "batch_tasks = 16; group_size = 8; max_tokens = 6;", NULL);
    run(&r, "%s run learn.cfg", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    json_t *lines = rl_lines(WORK "/runs_loop/learn/metrics.jsonl");
    cr_assert_eq(json_array_size(lines), 90);
    double first = mean_reward(lines, 0, 20), last = mean_reward(lines, 70, 90);
    cr_expect_gt(last, first + 0.05, "reward of the first 20 steps %.3f, of the last 20 %.3f",
                 first, last);
    json_decref(lines);

    json_t *sum = load_json(WORK "/runs_loop/learn/summary.json");
    cr_expect(json_is_true(json_object_get(sum, "finished")));
    cr_expect_eq(json_integer_value(json_object_get(sum, "steps")), 90);
    cr_expect(json_is_number(json_object_get(sum, "accuracy_before_rl")));
    cr_expect(json_is_number(json_object_get(sum, "accuracy_after_rl")));
    cr_expect_gt(json_number_value(json_object_get(sum, "rollout_tokens_per_s")), 0);
    /* the compute paths the CPU chose (host->note), in the summary and log.txt */
    json_t *model_notes = json_object_get(json_object_get(sum, "notes"), "model");
    const char *products = json_string_value(json_object_get(model_notes, "products"));
    const char *exp_path = json_string_value(json_object_get(model_notes, "exp"));
    cr_expect(products && strstr(products, "float32"), "notes.model.products: %s", products);
    cr_expect(exp_path && (strstr(exp_path, "AVX2") || strstr(exp_path, "expf")), "%s", exp_path);
    json_decref(sum);
    char *log = file_text(WORK "/runs_loop/learn/log.txt");
    cr_expect(strstr(log, "[model] products: float32"), "log.txt names the products' path");
    cr_expect(strstr(log, "[model] exp: "), "log.txt names the exp's path");
    free(log);
    struct stat st;
    cr_expect_eq(stat(WORK "/runs_loop/learn/checkpoints/step-90/policy/model.safetensors", &st),
                 0, "the final checkpoint");
    cr_expect_eq(stat(WORK "/runs_loop/learn/checkpoints/reference/config.json", &st), 0);
    cr_expect_eq(stat(WORK "/runs_loop/learn/trace.json", &st), 0);
}


/* metrics.jsonl has one RL line per step, steps 1..steps in order. */
static void check_steps(const char *metrics, int64_t steps)
{
    json_t *lines = rl_lines(metrics);
    cr_assert_eq((int64_t)json_array_size(lines), steps, "one metrics line per step");
    for (size_t i = 0; i < json_array_size(lines); i++)
        cr_expect_eq(json_integer_value(json_object_get(json_array_get(lines, i), "step")),
                     (json_int_t)i + 1, "steps in order, none twice");
    json_decref(lines);
}

Test(run, sigint_then_resume_trains_on_the_same_tasks_as_an_unbroken_run)
{
    result r;
    run(&r, "rm -rf runs_loop/whole runs_loop/parts");
    const char *trainer = "steps = 40; save_every = 15; sft = { steps = 10; batch_tasks = 8; };";
    const char *explorer = "batch_tasks = 6; group_size = 4; max_tokens = 6;";
    write_config(WORK "/whole.cfg", "whole", trainer, explorer, NULL);
    write_config(WORK "/parts.cfg", "parts", trainer, explorer, NULL);
    run(&r, "%s run whole.cfg", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);

    /* stop it once a few RL steps are done */
    run(&r, "%s run parts.cfg & pid=$!; "
            "while kill -0 $pid 2>/dev/null && ! grep -q '\"stage\":\"rl\",\"step\":4,' runs_loop/parts/metrics.jsonl "
            "2>/dev/null; do sleep 0.02; done; kill -INT $pid; wait $pid; echo \"exit $?\"",
        TERN);
    cr_assert(strstr(r.out, "exit 130"), "interrupted run exits 130: %s\n%s", r.out, r.err);
    cr_expect(strstr(r.err, "--resume"), "says how to continue: %s", r.err);
    json_t *sum = load_json(WORK "/runs_loop/parts/summary.json");
    cr_expect(json_is_false(json_object_get(sum, "finished")));
    json_int_t stopped_at = json_integer_value(json_object_get(sum, "steps"));
    cr_expect(stopped_at >= 4 && stopped_at < 40, "stopped after %lld steps",
              (long long)stopped_at);
    char ckpt[512];
    snprintf(ckpt, sizeof ckpt, "%s/runs_loop/parts/checkpoints/step-%lld/state.json", WORK,
             (long long)stopped_at);
    struct stat st;
    cr_expect_eq(stat(ckpt, &st), 0, "a checkpoint at the stop: %s", ckpt);
    json_decref(sum);

    run(&r, "%s run parts.cfg --resume", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.err, "resuming from"), "%s", r.err);
    sum = load_json(WORK "/runs_loop/parts/summary.json");
    cr_expect(json_is_true(json_object_get(sum, "finished")));
    cr_expect_eq(json_integer_value(json_object_get(sum, "steps")), 40);
    json_decref(sum);
    check_steps(WORK "/runs_loop/parts/metrics.jsonl", 40);

    /* the same tasks at the same steps -- and, the run being deterministic,
     * the same responses and rewards: nothing skipped, nothing repeated */
    char *a = file_text(WORK "/runs_loop/whole/rollouts.jsonl");
    char *b = file_text(WORK "/runs_loop/parts/rollouts.jsonl");
    cr_expect_str_eq(b, a);
    free(a);
    free(b);
    /* and the same evaluation responses, none written twice */
    a = file_text(WORK "/runs_loop/whole/eval_responses.jsonl");
    b = file_text(WORK "/runs_loop/parts/eval_responses.jsonl");
    cr_expect_str_eq(b, a);
    cr_expect(strstr(a, "\"step\":40,"), "the last evaluation's responses: %.300s", a);
    free(a);
    free(b);
}

/* trainer.keep_checkpoints: the newest N step checkpoints stay, the older
 * ones go once a new one is complete; the reference stays; the run resumes
 * from what is kept. */
Test(run, keep_checkpoints_keeps_the_newest)
{
    result r;
    run(&r, "rm -rf runs_loop/keep");
    write_config(WORK "/keep.cfg", "keep",
                 "steps = 6; save_every = 2; keep_checkpoints = 2; sft = { steps = 4; };",
                 "batch_tasks = 4; group_size = 4; max_tokens = 6;", NULL);
    run(&r, "%s run keep.cfg", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.err, "removed runs_loop/keep/checkpoints/step-2 (trainer.keep_checkpoints "
                            "= 2)"), "%s", r.err);
    cr_expect_not(path_exists(WORK "/runs_loop/keep/checkpoints/step-2"));
    cr_expect(path_exists(WORK "/runs_loop/keep/checkpoints/step-4/state.json"));
    cr_expect(path_exists(WORK "/runs_loop/keep/checkpoints/step-6/state.json"));
    cr_expect(path_exists(WORK "/runs_loop/keep/checkpoints/reference"));
    /* more steps on resume: from step-6, and step-4 goes when step-8 is in */
    run(&r, "%s run keep.cfg --resume -o trainer.steps=8", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.err, "resuming from runs_loop/keep/checkpoints/step-6"), "%s", r.err);
    cr_expect_not(path_exists(WORK "/runs_loop/keep/checkpoints/step-4"));
    cr_expect(path_exists(WORK "/runs_loop/keep/checkpoints/step-8/state.json"));
}

/* ---- bad input ---------------------------------------------------------------- */

static const char *base =
    "run = { name = \"bad\"; out_dir = \"runs_bad_loop\"; };\n"
    "model = { plugin = \"transformer\"; init = { preset = \"tiny\"; }; };\n"
    "explorer = { batch_tasks = 2; group_size = 2; max_tokens = 4; };\n"
    "trainer = { steps = 2; };\n"
    "buffer = { plugin = \"fifo\"; };\n"
    "sync = { plugin = \"synchronous\"; };\n";

static void expect_refused(const char *cfg_extra, const char *message)
{
    char text[4096];
    snprintf(text, sizeof text, "%s%s", base, cfg_extra);
    write_file(WORK "/bad_loop.cfg", text);
    result r;
    run(&r, "rm -rf runs_bad_loop; %s run bad_loop.cfg", TERN);
    cr_expect_eq(r.code, 2, "exit 2 for: %s\n%s", cfg_extra, r.err);
    cr_expect(strstr(r.err, message), "wanted \"%s\" in: %s", message, r.err);
    struct stat st;
    cr_expect_neq(stat(WORK "/runs_bad_loop/bad", &st), 0, "no run directory: %s", cfg_extra);
}

/* Reproducible figures: the same config and seed on 1 and on 2 threads write
 * the same metrics.jsonl, every figure but the timings (wait_s/..., .._per_s,
 * wall_seconds, eval/seconds): warm-up, sampling, rewards, losses, gradient norms and the
 * held-out accuracy, bit for bit. */
Test(run, one_and_two_threads_write_the_same_figures, .timeout = 240)
{
    const char *work = test_work_dir();
    char cfg[1024], a[1024], b[1024];
    result r;
    for (int t = 1; t <= 2; t++) {
        snprintf(cfg, sizeof cfg, "%s/threads%d.cfg", work, t);
        char name[16];
        snprintf(name, sizeof name, "threads%d", t);
        write_config(cfg, name, "steps = 8; sft = { steps = 40; batch_tasks = 32; lr = 2e-3; };",
                     "batch_tasks = 16; group_size = 8; max_tokens = 6;", NULL);
        run(&r, "cd %s && rm -rf runs_loop/%s && %s run %s -o model.threads=%d -o eval.every=4 "
                "-o eval.limit=40 > /dev/null",
            work, name, TERN, cfg, t);
        cr_assert_eq(r.code, 0, "%d threads: %s", t, r.err);
    }
    snprintf(a, sizeof a, "%s/runs_loop/threads1/metrics.jsonl", work);
    snprintf(b, sizeof b, "%s/runs_loop/threads2/metrics.jsonl", work);
    json_t *x = json_lines(a, NULL), *y = json_lines(b, NULL);
    cr_assert_eq(json_array_size(x), json_array_size(y));
    size_t i, compared = 0;
    json_t *line;
    json_array_foreach(x, i, line) {
        const char *key;
        json_t *v;
        json_object_foreach(line, key, v) {
            if (is_timing_figure(key))
                continue;
            json_t *w = json_object_get(json_array_get(y, i), key);
            cr_assert_not_null(w, "line %zu lacks %s on 2 threads", i + 1, key);
            cr_expect(json_equal(v, w), "line %zu, %s: %.17g on 1 thread, %.17g on 2", i + 1, key,
                      json_number_value(v), json_number_value(w));
            compared++;
        }
    }
    cr_expect_gt(compared, 300, "%zu figures compared", compared);
    json_decref(x);
    json_decref(y);
}

Test(run, a_malformed_task_line_names_file_and_line)
{
    write_file(WORK "/bad_tasks.jsonl",
               "{\"id\": 1, \"domain\": \"math\", \"prompt\": \"1+1=\", \"answer\": \"2\"}\n"
               "{\"id\": 2, \"domain\": \"math\", \"prompt\": \"2+2=\", \"answer\": \"4\"}\n"
               "{\"id\": 3, \"domain\": \"math\", \"prompt\": \"3+3=\" \"answer\": \"6\"}\n");
    expect_refused("data = { train = \"bad_tasks.jsonl\"; };\n"
                   "rewards = ( { domain = \"math\"; plugin = \"math\"; } );\n",
                   "bad_tasks.jsonl:3:");
}

Test(run, skip_bad_skips_and_counts_malformed_lines)
{
    write_file(WORK "/skip_tasks.jsonl",
               "{\"id\": 1, \"domain\": \"math\", \"prompt\": \"1+1=\", \"answer\": \"2\"}\n"
               "not json\n"
               "{\"id\": 3, \"domain\": \"math\", \"prompt\": \"3+3=\", \"answer\": \"6\"}\n");
    char text[4096];
    snprintf(text, sizeof text,
             "%sdata = { train = \"skip_tasks.jsonl\"; skip_bad = true; };\n"
             "rewards = ( { domain = \"math\"; plugin = \"math\"; } );\n",
             base);
    write_file(WORK "/skip_loop.cfg", text);
    result r;
    run(&r, "rm -rf runs_bad_loop; %s run skip_loop.cfg", TERN);
    cr_expect_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.err, "skip_tasks.jsonl:2:"), "the skipped line is named: %s", r.err);
    run(&r, "rm -rf runs_bad_loop");
}

Test(run, a_domain_without_a_reward_plugin_is_refused)
{
    write_file(WORK "/code_tasks.jsonl",
               "{\"id\": 1, \"domain\": \"code\", \"prompt\": \"p\", \"answer\": \"a\"}\n");
    expect_refused("data = { train = \"code_tasks.jsonl\"; };\n"
                   "rewards = ( { domain = \"math\"; plugin = \"math\"; } );\n",
                   "domain \"code\" but no reward plugin scores that domain");
}

/* A prompt the model's context cannot hold is refused by `tern check` and
 * before `tern run` creates anything, with the file, line and task id (it
 * used to pass check and fail mid-run: "sequence 0 has 2004 tokens"). */
Test(run, a_prompt_longer_than_the_context_names_file_and_line)
{
    char big[3000];
    memset(big, '7', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    char text[4096];
    snprintf(text, sizeof text,
             "{\"id\": 1, \"domain\": \"math\", \"prompt\": \"1+1=\", \"answer\": \"2\"}\n"
             "{\"id\": \"long\", \"domain\": \"math\", \"prompt\": \"%s+1=\", \"answer\": \"8\"}\n",
             big);
    write_file(WORK "/long_tasks.jsonl", text);
    const char *extra = "data = { train = \"long_tasks.jsonl\"; };\n"
                        "rewards = ( { domain = \"math\"; plugin = \"math\"; } );\n";
    const char *want = "long_tasks.jsonl:2: task long: the prompt is 3003 tokens";
    expect_refused(extra, want);
    result r;
    run(&r, "%s check bad_loop.cfg", TERN);
    cr_expect_eq(r.code, 2, "check exits 2: %s", r.err);
    cr_expect(strstr(r.err, want), "check says \"%s\": %s", want, r.err);
    cr_expect(strstr(r.err, "the model's context holds"), "%s", r.err);
}

/* One check reports every mistake it can: a mistyped key and both missing
 * task files come in one pass, each on its line, not one run after another. */
Test(run, a_typo_and_missing_files_in_one_pass)
{
    write_file(WORK "/three.cfg",
               "model = { plugin = \"transformer\"; init = { preset = \"tiny\"; }; };\n"
               "data = { train = \"no_train.jsonl\"; eval = \"no_eval.jsonl\"; };\n"
               "explorer = { batch_taks = 4; };\n"
               "buffer = { plugin = \"fifo\"; };\n"
               "sync = { plugin = \"synchronous\"; };\n"
               "rewards = ( { domain = \"math\"; plugin = \"math\"; } );\n");
    result r;
    run(&r, "%s check three.cfg", TERN);
    cr_expect_eq(r.code, 2, "%s", r.err);
    cr_expect(strstr(r.err, "three.cfg:3: unknown key 'batch_taks' in explorer (did you mean "
                            "'batch_tasks'?)"), "%s", r.err);
    cr_expect(strstr(r.err, "three.cfg:2: data.train = \"no_train.jsonl\": no_train.jsonl: "
                            "cannot open: No such file or directory (that is " WORK
                            "/no_train.jsonl;"), "%s", r.err);
    cr_expect(strstr(r.err, "three.cfg:2: data.eval = \"no_eval.jsonl\": no_eval.jsonl: cannot "
                            "open"), "%s", r.err);
    cr_expect_eq(count_lines(r.err), 3, "one line each: %s", r.err);
}

/* TERN_SIMD caps the transformer's vector paths (layers/simd.h): a value it
 * does not know is refused at start in one line, not run as something else */
Test(run, an_unknown_tern_simd_is_refused)
{
    result r;
    run(&r, "TERN_SIMD=avx3 %s check %s/etc/quickstart.cfg", TERN, SRC);
    cr_expect_eq(r.code, 2, "check exits 2: %s", r.err);
    cr_expect(strstr(r.err, "TERN_SIMD=avx3 in the environment: unknown value; it takes avx2"),
              "%s", r.err);
    run(&r, "TERN_SIMD=avx2 %s check %s/etc/quickstart.cfg", TERN, SRC);
    cr_expect_eq(r.code, 0, "avx2 is a known value: %s", r.err);
}

Test(run, settings_a_run_cannot_use)
{
    const char *rw = "rewards = ( { domain = \"math\"; plugin = \"math\"; } );\n";
    char extra[1024];
    expect_refused(rw, "data.train: a run needs training tasks");
    snprintf(extra, sizeof extra, "data = { train = \"%s/etc/data/arith-train.jsonl\"; };\n%s"
             "algorithm = { kl = { coef = 0.1; }; };\n", SRC, rw);
    expect_refused(extra, "needs a reference model");
    snprintf(extra, sizeof extra, "data = { train = \"%s/etc/data/arith-train.jsonl\"; };\n%s"
             "algorithm = { dual_clip = 0.5; };\n", SRC, rw);
    expect_refused(extra, "algorithm.dual_clip: 0.5 must be 0 (off) or greater than 1");
    snprintf(extra, sizeof extra, "data = { train = \"%s/etc/data/arith-train.jsonl\"; };\n%s"
             "algorithm = { clip_ratoi = 0.1; };\n", SRC, rw);
    expect_refused(extra, "unknown key 'clip_ratoi'");
    snprintf(extra, sizeof extra, "data = { train = \"no/such/file.jsonl\"; };\n%s", rw);
    expect_refused(extra, "no/such/file.jsonl: cannot open");
}

Test(run, resume_refusals)
{
    result r;
    run(&r, "rm -rf runs_loop/again");
    write_config(WORK "/again.cfg", "again", "steps = 3; sft = { steps = 1; batch_tasks = 4; };",
                 "batch_tasks = 2; group_size = 2; max_tokens = 4;", NULL);
    /* nothing to resume yet */
    run(&r, "%s run again.cfg --resume", TERN);
    cr_expect_eq(r.code, 2, "%s", r.err);
    cr_expect(strstr(r.err, "no run directory to resume"), "%s", r.err);
    run(&r, "%s run again.cfg", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    /* a finished run resumes to nothing new; another seed would change the tasks */
    run(&r, "%s run again.cfg --resume -o run.seed=4", TERN);
    cr_expect_eq(r.code, 2, "%s", r.err);
    cr_expect(strstr(r.err, "run.seed = 3, the config now says 4"), "%s", r.err);
    /* a damaged checkpoint is named, with the way out */
    write_file(WORK "/runs_loop/again/checkpoints/step-3/state.json", "{\"format\": 1,");
    run(&r, "%s run again.cfg --resume", TERN);
    cr_expect_eq(r.code, 2, "%s", r.err);
    cr_expect(strstr(r.err, "step-3/state.json"), "%s", r.err);
    cr_expect(strstr(r.err, "remove"), "%s", r.err);
    run(&r, "rm -rf runs_loop/again");
}

/* DAPO's dynamic sampling in a synchronous run (algorithm.filter_groups):
 * it ends (the stand-ins of a fixed schedule get the weights of the step
 * they feed, so nothing waits for itself), every RL line counts the groups
 * it dropped, and every group a step trained on has rewards that differ,
 * but those kept once a step's budget ran out (summary.json counts them). */
Test(run, filter_groups_trains_only_groups_with_a_signal, .timeout = 240)
{
    const char *work = test_work_dir();
    char cfg[1024], path[1100];
    snprintf(cfg, sizeof cfg, "%s/filter.cfg", work);
    write_config(cfg, "filter", "steps = 6; save_every = 0; sft = { steps = 60; batch_tasks = 32; "
                 "lr = 2e-3; };", "batch_tasks = 8; group_size = 4; max_tokens = 6;", NULL);
    result r;
    run(&r, "cd %s && rm -rf runs_loop/filter && %s run %s -o algorithm.filter_groups=true "
            "-o algorithm.filter_max_batches=4 > /dev/null", work, TERN, cfg);
    cr_assert_eq(r.code, 0, "%s", r.err);
    snprintf(path, sizeof path, "%s/runs_loop/filter/metrics.jsonl", work);
    json_t *lines = rl_lines(path);
    cr_assert_eq(json_array_size(lines), 6);
    long filtered = 0;
    size_t i;
    json_t *line;
    json_array_foreach(lines, i, line) {
        json_t *f = json_object_get(line, "filtered_groups");
        cr_assert(json_is_integer(f), "RL line %zu lacks filtered_groups", i + 1);
        filtered += (long)json_integer_value(f);
        cr_expect_eq(json_integer_value(json_object_get(line, "groups")), 8);
    }
    json_decref(lines);
    snprintf(path, sizeof path, "%s/runs_loop/filter/summary.json", work);
    json_t *sum = load_json(path);
    cr_expect_eq(json_integer_value(json_object_get(sum, "filtered_groups")), filtered,
                 "the summary's count is the lines' sum");
    long kept_equal = (long)json_integer_value(json_object_get(sum, "kept_equal_groups"));
    json_decref(sum);
    cr_expect_gt(filtered, 0, "a tiny model after a short warm-up gets many all-wrong groups");
    /* the groups trained on: rewards differ, but for those kept over budget */
    snprintf(path, sizeof path, "%s/runs_loop/filter/rollouts.jsonl", work);
    json_t *groups = json_lines(path, "rewards");
    long equal = 0;
    json_array_foreach(groups, i, line) {
        json_t *rw = json_object_get(line, "rewards");
        double first = json_number_value(json_array_get(rw, 0));
        int same = 1;
        for (size_t j = 1; j < json_array_size(rw); j++)
            same = same && json_number_value(json_array_get(rw, j)) == first;
        equal += same;
    }
    cr_expect_eq(json_array_size(groups), 6 * 8);
    cr_expect_leq(equal, kept_equal, "%ld trained groups have equal rewards, %ld were kept over "
                  "budget", equal, kept_equal);
    json_decref(groups);
}
