/* test_check_run.c: `tern check` makes every check `tern run` makes before it
 * creates anything (one function serves both): each config run refuses
 * before training is refused by check with the same message and exit 2, and
 * neither creates a run directory; the quickstart passes both; a plugin's
 * config alone is no run, and `--plugins-only` checks just its plugins. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "command.h"
#include "harness.h"
#include "tern/buffer.h"

#define TERN TERN_TEST_BIN
#define SRC TERN_TEST_SOURCE_DIR
#define WORK TERN_TEST_WORK_DIR

static char dir[512]; /* this test's own directory */

static void make_dir(void)
{
    snprintf(dir, sizeof dir, "%s/check_run_XXXXXX", WORK);
    cr_assert_not_null(mkdtemp(dir));
    char path[700];
    snprintf(path, sizeof path, "%s/tasks.jsonl", dir);
    write_file(path,
               "{\"id\": 1, \"domain\": \"math\", \"prompt\": \"1+1=\", \"answer\": \"2\"}\n"
               "{\"id\": 2, \"domain\": \"math\", \"prompt\": \"2+3=\", \"answer\": \"5\"}\n");
    /* a task about a picture, as `tern data shapes` writes them */
    snprintf(path, sizeof path, "%s/vision.jsonl", dir);
    write_file(path, "{\"id\": \"v1\", \"domain\": \"vision\", \"prompt\": \"How many "
                     "triangles are in the picture?\", \"image\": \"images/a.png\", \"type\": "
                     "\"counting\", \"answer\": \"1\"}\n");
}

static void remove_dir(void)
{
    result r;
    run(&r, "rm -rf '%s'", dir);
}

/* The sections of a whole, tiny run; each row below leaves one out or
 * changes one. */
#define RUN "run = { name = \"c\"; out_dir = \"runs\"; };\n"
#define MODEL "model = { plugin = \"transformer\"; init = { preset = \"tiny\"; seed = 1; }; };\n"
#define REF "reference = { same_as = \"model\"; };\n"
#define DATA "data = { train = \"tasks.jsonl\"; };\n"
#define TRAIN                                                                                  \
    "trainer = { steps = 1; sft = { steps = 0; }; };\n"                                         \
    "algorithm = { kl = { estimator = \"k3\"; coef = 0.001; }; };\n"
#define LOOP "explorer = { batch_tasks = 2; group_size = 2; max_tokens = 4; };\n" TRAIN
#define BUFFER "buffer = { plugin = \"fifo\"; };\n"
#define SYNC "sync = { plugin = \"synchronous\"; };\n"
#define REWARDS "rewards = ( { domain = \"math\"; plugin = \"math\"; } );\n"

typedef struct refusal {
    const char *config;
    const char *message;
} refusal;

/* Is every line of `lines` somewhere in `text`? */
static const char *missing_line(const char *lines, const char *text)
{
    static char line[4096];
    for (const char *p = lines; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        if (n >= sizeof line)
            n = sizeof line - 1;
        memcpy(line, p, n);
        line[n] = '\0';
        if (n && !strstr(text, line))
            return line;
        p = nl ? nl + 1 : p + n;
    }
    return NULL;
}

static void check_rows(const refusal *rows, size_t n)
{
    char cfg[700];
    snprintf(cfg, sizeof cfg, "%s/c.cfg", dir);
    for (size_t i = 0; i < n; i++) {
        write_file(cfg, rows[i].config);
        result by_run, by_check;
        run(&by_run, "cd '%s' && %s run c.cfg", dir, TERN);
        cr_expect_eq(by_run.code, 2, "row %zu: run exits 2: %s", i, by_run.err);
        cr_expect(strstr(by_run.err, rows[i].message), "row %zu: run says \"%s\": %s", i,
                  rows[i].message, by_run.err);
        run(&by_check, "cd '%s' && %s check c.cfg", dir, TERN);
        cr_expect_eq(by_check.code, 2, "row %zu: check exits 2: %s", i, by_check.err);
        const char *line = missing_line(by_run.err, by_check.err);
        cr_expect_null(line, "row %zu: run's line \"%s\" is not in check's: %s", i,
                       line ? line : "", by_check.err);
        cr_expect_null(strstr(by_check.out, "ok: "), "row %zu: %s", i, by_check.out);
        struct stat st;
        char runs[700];
        snprintf(runs, sizeof runs, "%s/runs", dir);
        cr_expect_neq(stat(runs, &st), 0, "row %zu: no run directory", i);
    }
}

Test(check_run, check_refuses_what_run_refuses_with_the_same_message, .timeout = 240)
{
    make_dir();
    char left[700];
    snprintf(left, sizeof left, "%s/left.sqlite", dir);
    /* a durable buffer's file holding a group of an earlier run */
    harness h;
    char settings[800];
    snprintf(settings, sizeof settings, "path = \"%s\";", left);
    cr_assert_eq(harness_open(&h, "sqlite", TERN_KIND_BUFFER, settings), TERN_OK, "%s", h.error);
    const tern_buffer_ops *ops = harness_ops(&h);
    tern_record_meta m = {.size = sizeof m, .id = 1, .version = 0, .batch = 0};
    cr_assert_eq(ops->put(h.state, "x", 1, &m, 0), TERN_OK);
    harness_close(&h);

    const refusal rows[] = {
        {"", "data.train: a run needs training tasks"},
        {SYNC, "data.train: a run needs training tasks"},
        {RUN DATA LOOP BUFFER SYNC REWARDS, "c.cfg: a run needs a model section"},
        {RUN MODEL REF DATA LOOP SYNC REWARDS, "c.cfg: a run needs a buffer section"},
        {RUN MODEL REF DATA LOOP BUFFER REWARDS, "c.cfg: a run needs a sync section"},
        {RUN MODEL REF DATA LOOP "buffer = { plugin = \"sqlite\"; path = \"left.sqlite\"; };\n"
             SYNC REWARDS,
         "buffer: plugin 'sqlite' already holds 1 group from an earlier run"},
        {RUN MODEL DATA LOOP BUFFER SYNC REWARDS, "algorithm.kl.coef = 0.001 needs a reference "
                                                  "model"},
        /* a tasks file that is not there: the config line, the path as
         * written, and where a relative path is taken from */
        {RUN MODEL REF "data = {\n  train = \"missing.jsonl\"; };\n" LOOP BUFFER SYNC REWARDS,
         "c.cfg:5: data.train = \"missing.jsonl\": missing.jsonl: cannot open: No such file or "
         "directory (that is /"},
        {RUN MODEL REF "data = {\n  train = \"missing.jsonl\"; };\n" LOOP BUFFER SYNC REWARDS,
         "/missing.jsonl; a relative path is taken from the config's folder, out_dir from the "
         "working directory: docs/config.md)"},
        {RUN MODEL REF DATA LOOP BUFFER SYNC "rewards = ( { domain = \"code\"; plugin = "
                                             "\"math\"; } );\n",
         "tasks.jsonl: 2 tasks are of domain \"math\" but no reward plugin scores that domain"},
        {RUN MODEL REF "data = { train = \"none.jsonl\"; };\n" LOOP BUFFER SYNC REWARDS,
         "none.jsonl: cannot open"},
        {RUN MODEL REF DATA "explorer = { temperature = 0.0; };\n" TRAIN BUFFER SYNC REWARDS,
         "explorer.temperature = 0 samples greedily"},
        /* a policy that reads no images (no image_spec op, or one that says
         * so: ABI 1.12): an image task is not run on its text alone */
        {RUN MODEL REF "data = { train = \"vision.jsonl\"; };\n" LOOP BUFFER SYNC
             "rewards = ( { domain = \"vision\"; plugin = \"vision\"; } );\n",
         "vision.jsonl:1: task v1 has an image (images/a.png)\n"},
        {RUN MODEL REF "data = { train = \"vision.jsonl\"; };\n" LOOP BUFFER SYNC
             "rewards = ( { domain = \"vision\"; plugin = \"vision\"; } );\n",
         "vision.jsonl: 1 task has an image, and model plugin 'transformer' reads text only ("},
        /* weight transports a plugin brings (ABI 1.8) */
        {RUN MODEL REF DATA LOOP BUFFER "sync = { plugin = \"synchronous\"; method = \"nccl\"; };\n"
             REWARDS,
         "weight transport \"nccl\" is not one of tern's own (memory, mpi, checkpoint): a "
         "transport plugin brings it; add transport = { plugin = \"nccl\"; };"},
    };
    check_rows(rows, sizeof rows / sizeof rows[0]);
    remove_dir();
}

/* A transport plugin's section and sync's method must agree, and a plugin
 * transport moves weights between ranks (the nccl plugin: built beside CUDA). */
Test(check_run, a_transport_plugin_is_checked_like_the_rest, .timeout = 120)
{
    struct stat st;
    if (stat(TERN_TEST_PLUGIN_DIR "/nccl.so", &st) != 0) {
        fprintf(stderr, "check_run::a_transport_plugin_is_checked_like_the_rest: skipped: the "
                "nccl plugin is not built here (no CUDA toolkit with NCCL)\n");
        cr_skip_test("the nccl plugin is not built here");
    }
    make_dir();
    const refusal rows[] = {
        {RUN MODEL REF DATA LOOP BUFFER SYNC "transport = { plugin = \"nccl\"; };\n" REWARDS,
         "transport: plugin 'nccl' is configured but sync's method is \"memory\""},
        {RUN MODEL REF DATA LOOP BUFFER "sync = { plugin = \"synchronous\"; method = \"nccl\"; "
                                        "};\ntransport = { plugin = \"nccl\"; };\n" REWARDS,
         "sync: method \"nccl\" moves weights between MPI ranks, and this run is one process"},
        {RUN MODEL REF DATA LOOP BUFFER "sync = { plugin = \"synchronous\"; method = \"nccl\"; "
                                        "};\ntransport = { plugin = \"nccl\"; timeout_s = 0; "
                                        "};\n" REWARDS,
         "transport.timeout_s"},
    };
    check_rows(rows, sizeof rows / sizeof rows[0]);
    remove_dir();
}

/* The quickstart, cut to seconds, passes both; check names what it would
 * run and creates nothing. */
Test(check_run, the_quickstart_passes_check_and_run, .timeout = 240)
{
    make_dir();
    const char *opts = "-o trainer.steps=2 -o trainer.sft.steps=1 -o eval.limit=4 "
                       "-o 'run.out_dir=\"qs\"'";
    result r;
    run(&r, "cd '%s' && %s check %s/etc/quickstart.cfg %s", dir, TERN, SRC, opts);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "data       "), "%s", r.out);
    cr_expect(strstr(r.out, "ok: "), "%s", r.out);
    struct stat st;
    char path[700];
    snprintf(path, sizeof path, "%s/qs", dir);
    cr_expect_neq(stat(path, &st), 0, "check made no run directory");
    run(&r, "cd '%s' && %s run %s/etc/quickstart.cfg %s", dir, TERN, SRC, opts);
    cr_expect_eq(r.code, 0, "%s", r.err);
    snprintf(path, sizeof path, "%s/qs/quickstart/summary.json", dir);
    cr_expect_eq(stat(path, &st), 0, "the run finished: %s", r.err);
    /* an off-policy correction on a synchronous run passes, with a warning
     * naming its line */
    run(&r, "cd '%s' && %s check %s/etc/quickstart.cfg %s -o 'algorithm.off_policy=\"tis\"'",
        dir, TERN, SRC, opts);
    cr_expect_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.err, "never stale") && strstr(r.err, "algorithm.off_policy"), "%s", r.err);
    remove_dir();
}

/* The warm-up learns from the training tasks that have an answer (a number or
 * a string that is not ""): with none, a warm-up is refused at its line by
 * check and run alike; with some, the run says how many and RL draws from
 * all of them. */
Test(check_run, the_warm_up_learns_from_the_tasks_with_an_answer, .timeout = 120)
{
    make_dir();
    char path[700];
    snprintf(path, sizeof path, "%s/tasks.jsonl", dir);
    write_file(path, "{\"id\": 1, \"domain\": \"math\", \"prompt\": \"1+1=\", \"answer\": \"\"}\n"
                     "{\"id\": 2, \"domain\": \"math\", \"prompt\": \"2+3=\", \"answer\": \"\"}\n");
    const refusal rows[] = {
        {RUN MODEL REF DATA "explorer = { batch_tasks = 2; group_size = 2; max_tokens = 4; };\n"
                            "trainer = { steps = 1;\n  sft = { steps = 3; }; };\n"
                            BUFFER SYNC REWARDS,
         "c.cfg:7: trainer.sft.steps = 3, but no task of data.train (tasks.jsonl) has an answer "
         "(each \"answer\" is \"\"): the warm-up learns from the answers. Add them to the "
         "tasks, or set trainer.sft.steps = 0"},
    };
    check_rows(rows, 1);
    /* one of two has an answer: it is the warm-up's, and the run says so */
    write_file(path, "{\"id\": 1, \"domain\": \"math\", \"prompt\": \"1+1=\", \"answer\": \"\"}\n"
                     "{\"id\": 2, \"domain\": \"math\", \"prompt\": \"2+3=\", \"answer\": 5}\n");
    snprintf(path, sizeof path, "%s/c.cfg", dir);
    write_file(path, RUN MODEL REF DATA
               "explorer = { batch_tasks = 2; group_size = 2; max_tokens = 4; };\n"
               "trainer = { steps = 1; sft = { steps = 2; batch_tasks = 3; }; };\n"
               BUFFER SYNC REWARDS);
    result r;
    run(&r, "cd '%s' && %s check c.cfg", dir, TERN);
    cr_expect_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "the warm-up learns from the 1 that have an answer; RL draws from "
                            "all 2"), "%s", r.out);
    run(&r, "cd '%s' && %s run c.cfg", dir, TERN);
    cr_expect_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.err, "the warm-up learns from the 1 of 2 training tasks that have an "
                            "answer; RL draws from all of them"), "%s", r.err);
    remove_dir();
}

/* The harder demonstration, etc/examples/countdown.cfg, cut to seconds: it
 * checks, runs with its own reward and data, and its responses are judged by
 * the countdown verifier. */
Test(check_run, the_countdown_example_passes_check_and_run, .timeout = 240)
{
    make_dir();
    const char *opts = "-o trainer.steps=2 -o trainer.sft.steps=2 -o eval.limit=4 "
                       "-o 'run.out_dir=\"cd\"'";
    result r;
    run(&r, "cd '%s' && %s check %s/etc/examples/countdown.cfg %s", dir, TERN, SRC, opts);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "countdown 1.0.0"), "%s", r.out);
    run(&r, "cd '%s' && %s run %s/etc/examples/countdown.cfg %s", dir, TERN, SRC, opts);
    cr_expect_eq(r.code, 0, "%s", r.err);
    char path[700];
    static char text[1 << 16];
    snprintf(path, sizeof path, "%s/cd/countdown/summary.json", dir);
    struct stat st;
    cr_expect_eq(stat(path, &st), 0, "the run finished: %s", r.err);
    snprintf(path, sizeof path, "%s/cd/countdown/metrics.jsonl", dir);
    slurp(path, text, sizeof text);
    cr_expect(strstr(text, "\"accuracy/countdown\":") && strstr(text, "\"reward/format\":"),
              "the countdown reward's components: %.400s", text);
    remove_dir();
}

/* A plugin's own config (no data.train) is no run: check refuses it as run
 * would and says how to check its plugins alone, which --plugins-only does. */
Test(check_run, a_plugin_config_is_checked_with_plugins_only)
{
    make_dir();
    char cfg[700];
    snprintf(cfg, sizeof cfg, "%s/p.cfg", dir);
    write_file(cfg, "buffer = { plugin = \"fifo\"; capacity = 8; };\n");
    result r;
    run(&r, "cd '%s' && %s check p.cfg", dir, TERN);
    cr_expect_eq(r.code, 2, "%s", r.err);
    cr_expect(strstr(r.err, "data.train: a run needs training tasks"), "%s", r.err);
    cr_expect(strstr(r.err, "p.cfg: this config is not a run (it names no data.train); to check "
                            "only the plugins it names, as for a plugin's test config: tern "
                            "check --plugins-only p.cfg"), "%s", r.err);
    run(&r, "cd '%s' && %s check --plugins-only p.cfg", dir, TERN);
    cr_expect_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "capacity=8"), "%s", r.out);
    cr_expect(strstr(r.out, "ok: p.cfg: its plugins are valid"), "%s", r.out);
    run(&r, "cd '%s' && %s check --plugins-only p.cfg -o buffer.capacity=0", dir, TERN);
    cr_expect_eq(r.code, 2, "%s", r.err);
    cr_expect(strstr(r.err, "buffer.capacity: 0 is out of range"), "%s", r.err);
    /* nothing named at all is not valid either way */
    write_file(cfg, "");
    run(&r, "cd '%s' && %s check p.cfg", dir, TERN);
    cr_expect_eq(r.code, 2, "%s", r.err);
    cr_expect_null(strstr(r.err, "--plugins-only"), "no plugins to check alone: %s", r.err);
    remove_dir();
}
