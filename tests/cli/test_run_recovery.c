/* test_run_recovery.c: `tern run` after what breaks runs in practice -- a
 * full disk (simulated with RLIMIT_FSIZE and SIGXFSZ ignored: writes past the
 * limit fail with EFBIG, as they fail with ENOSPC on a full disk), a torn
 * last line, files a killed run left, and a resume with other task files.
 * Each test makes its own tasks, config and run directory in the work dir. */
#include <criterion/criterion.h>
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "command.h"

#define TERN TERN_TEST_BIN
#define WORK TERN_TEST_WORK_DIR
#define RUNS WORK "/runs_recovery"

/* WORK/recovery_NAME_train.jsonl (n tasks) and ..._eval.jsonl (8 tasks). */
static void write_tasks(const char *name, int n)
{
    char path[512], line[160];
    for (int which = 0; which < 2; which++) {
        snprintf(path, sizeof path, "%s/recovery_%s_%s.jsonl", WORK, name,
                 which ? "eval" : "train");
        FILE *f = fopen(path, "w");
        cr_assert_not_null(f, "%s", path);
        for (int i = 0; i < (which ? 8 : n); i++) {
            int a = (i * 7 + which) % 10, b = (i * 3) % 10;
            snprintf(line, sizeof line, "{\"id\": %d, \"domain\": \"math\", \"prompt\": "
                     "\"%d+%d=\", \"answer\": \"%d\"}\n", i, a, b, a + b);
            fputs(line, f);
        }
        fclose(f);
    }
}

/* WORK/NAME.cfg: a tiny run in runs_recovery/NAME on its own tasks. */
static void write_config(const char *name, int steps, int save_every, int reference)
{
    char path[512], text[4096];
    snprintf(text, sizeof text,
             "run = { name = \"%s\"; seed = 3; out_dir = \"runs_recovery\"; };\n"
             "model = { plugin = \"transformer\"; init = { preset = \"tiny\"; seed = 1; }; "
             "threads = 1; };\n%s"
             "data = { train = \"%s/recovery_%s_train.jsonl\"; "
             "eval = \"%s/recovery_%s_eval.jsonl\"; };\n"
             "explorer = { batch_tasks = 2; group_size = 2; max_tokens = 4; };\n"
             "trainer = { steps = %d; save_every = %d; sft = { steps = 2; batch_tasks = 4; }; };\n"
             "eval = { max_tokens = 4; limit = 4; };\n"
             "buffer = { plugin = \"fifo\"; capacity = 64; };\n"
             "sync = { plugin = \"synchronous\"; };\n"
             "rewards = ( { domain = \"math\"; plugin = \"math\"; } );\n",
             name,
             reference ? "reference = { same_as = \"model\"; };\n"
                         "algorithm = { kl = { estimator = \"k3\"; coef = 0.001; }; };\n"
                       : "",
             WORK, name, WORK, name, steps, save_every);
    snprintf(path, sizeof path, "%s/%s.cfg", WORK, name);
    write_file(path, text);
}

/* `cmd` with files limited to `bytes` (SIGXFSZ ignored, so a write past the
 * limit fails with EFBIG instead of killing the process): a full disk. */
static void run_limited(result *r, rlim_t bytes, const char *cmd)
{
    struct rlimit old, lim;
    cr_assert_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
    void (*was)(int) = signal(SIGXFSZ, SIG_IGN);
    lim = old;
    lim.rlim_cur = bytes;
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    run(r, "%s", cmd);
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, was);
}

static char *file_text(const char *path, size_t *len)
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
    if (len)
        *len = (size_t)n;
    return s;
}

/* Every line of a JSON Lines file is a whole JSON object and the file ends
 * with a newline; the "step" of each line with `key` (NULL: every line with
 * a stage "rl"), in order, into steps (at most cap); returns how many. */
static size_t whole_lines(const char *path, const char *key, long long *steps, size_t cap)
{
    size_t len, n = 0, no = 0;
    char *text = file_text(path, &len);
    cr_expect(len == 0 || text[len - 1] == '\n', "%s ends with a whole line: ...%s", path,
              len > 80 ? text + len - 80 : text);
    for (char *p = text, *nl; *p; p = nl + 1) {
        nl = strchr(p, '\n');
        if (!nl)
            nl = p + strlen(p) - 1;
        no++;
        json_error_t e;
        json_t *o = json_loadb(p, (size_t)(nl - p + 1), 0, &e);
        cr_expect(json_is_object(o), "%s:%zu is not a whole JSON object: %.*s", path, no,
                  (int)(nl - p), p);
        const char *stage = json_string_value(json_object_get(o, "stage"));
        if (o && (key ? json_object_get(o, key) != NULL : stage && !strcmp(stage, "rl")) &&
            n < cap)
            steps[n++] = (long long)json_integer_value(json_object_get(o, "step"));
        json_decref(o);
    }
    free(text);
    return n;
}

/* Cut `path` in the middle of the first line that holds `needle`. */
static void tear_at(const char *path, const char *needle, size_t into)
{
    char *text = file_text(path, NULL);
    char *hit = strstr(text, needle);
    cr_assert_not_null(hit, "%s: no line with %s", path, needle);
    while (hit > text && hit[-1] != '\n')
        hit--;
    cr_assert_eq(truncate(path, (off_t)(hit - text) + (off_t)into), 0);
    free(text);
}

static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* The names in DIR, space-separated ("" when none or no DIR). */
static void list_dir(const char *dir, char *out, size_t n)
{
    result r;
    run(&r, "ls -A %s 2>/dev/null | tr '\\n' ' '", dir);
    size_t k = strnlen(r.out, n - 1);
    memcpy(out, r.out, k);
    out[k] = '\0';
}

/* ---- a torn last line (item: resume glued the next line to it) ------------ */

Test(recovery, a_torn_line_is_dropped_on_resume_and_every_step_follows_once)
{
    result r;
    run(&r, "rm -rf " RUNS "/torn");
    write_tasks("torn", 40);
    write_config("torn", 6, 3, 0);
    run(&r, "%s run torn.cfg", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    /* as a crash leaves it: the newest checkpoint gone, both files cut
     * mid-line past the checkpoint before it */
    run(&r, "rm -rf " RUNS "/torn/checkpoints/step-6");
    tear_at(RUNS "/torn/metrics.jsonl", "\"stage\":\"rl\",\"step\":5,", 40);
    tear_at(RUNS "/torn/rollouts.jsonl", "\"stage\":\"rl\",\"step\":5,", 25);
    run(&r, "%s run torn.cfg --resume", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.err, "metrics.jsonl:") && strstr(r.err, "dropped a line that is not a "
              "whole JSON object"), "the torn line is reported: %s", r.err);

    long long steps[64];
    size_t n = whole_lines(RUNS "/torn/metrics.jsonl", "reward_mean", steps, 64);
    cr_expect_eq(n, 6, "one metrics line per RL step, got %zu", n);
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(steps[i], (long long)i + 1, "RL steps in order, none lost or twice");
    n = whole_lines(RUNS "/torn/rollouts.jsonl", NULL, steps, 64);
    cr_expect_eq(n, 12, "two rollouts lines per step, got %zu", n);
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(steps[i], (long long)i / 2 + 1, "rollouts line %zu", i + 1);
    run(&r, "rm -rf " RUNS "/torn");
}

/* ---- a full disk ----------------------------------------------------------- */

/* The metrics line that does not fit is not half written: the files keep
 * whole lines, and nothing partial is left. */
Test(recovery, a_full_disk_leaves_whole_lines_and_no_partial_files)
{
    result r;
    run(&r, "rm -rf " RUNS "/full");
    write_tasks("full", 40);
    write_config("full", 60, 0, 0);
    run_limited(&r, 12000, TERN " run full.cfg");
    cr_expect_eq(r.code, 1, "%s", r.err);
    cr_expect(strstr(r.err, "cannot write metrics.jsonl") ||
              strstr(r.err, "cannot write rollouts.jsonl"), "%s", r.err);
    long long steps[128];
    size_t n = whole_lines(RUNS "/full/metrics.jsonl", "reward_mean", steps, 128);
    cr_expect(n > 2 && n < 60, "stopped part-way: %zu steps", n);
    whole_lines(RUNS "/full/rollouts.jsonl", NULL, steps, 128);
    run(&r, "cd " RUNS "/full && find . -name '*.tmp*'");
    cr_expect_str_eq(r.out, "", "no partial file is left");
    run(&r, "rm -rf " RUNS "/full");
}

Test(recovery, a_full_disk_at_a_checkpoint_leaves_no_partial_checkpoint)
{
    result r;
    char names[1024];
    run(&r, "rm -rf " RUNS "/ckfull");
    write_tasks("ckfull", 40);
    write_config("ckfull", 4, 2, 0);
    run_limited(&r, 1000000, TERN " run ckfull.cfg");
    cr_expect_eq(r.code, 1, "%s", r.err);
    cr_expect(strstr(r.err, "step-2.tmp") && strstr(r.err, strerror(EFBIG)), "%s", r.err);
    list_dir(RUNS "/ckfull/checkpoints", names, sizeof names);
    cr_expect_str_eq(names, "", "no partial checkpoint (3 MB each) is left");

    /* the frozen reference, saved when RL begins, likewise */
    run(&r, "rm -rf " RUNS "/ckfull");
    write_config("ckfull", 4, 2, 1);
    run_limited(&r, 1000000, TERN " run ckfull.cfg");
    cr_expect_eq(r.code, 1, "%s", r.err);
    cr_expect(strstr(r.err, "saving the reference"), "%s", r.err);
    list_dir(RUNS "/ckfull/checkpoints", names, sizeof names);
    cr_expect_str_eq(names, "", "no partial reference is left");
    run(&r, "rm -rf " RUNS "/ckfull");
}

/* A summary that cannot be written (a full disk: /dev/full behind its
 * temporary name) says why, and no summary.json.tmp is left. */
Test(recovery, a_failed_summary_says_why_and_leaves_no_partial_file)
{
    if (!exists("/dev/full"))
        cr_skip_test("no /dev/full to stand for a full disk");
    result r;
    run(&r, "rm -rf " RUNS "/sumfull");
    write_tasks("sumfull", 40);
    write_config("sumfull", 2, 0, 0);
    run(&r, "%s run sumfull.cfg", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    run(&r, "ln -s /dev/full " RUNS "/sumfull/summary.json.tmp");
    run(&r, "%s run sumfull.cfg --resume", TERN);
    cr_expect_eq(r.code, 1, "%s", r.err);
    cr_expect(strstr(r.err, "summary.json: cannot write the summary: ") &&
              strstr(r.err, strerror(ENOSPC)), "says why: %s", r.err);
    cr_expect(!exists(RUNS "/sumfull/summary.json.tmp"), "no partial summary is left");
    run(&r, "rm -rf " RUNS "/sumfull");
}

/* What a killed run (or a machine that lost power) left is removed on resume. */
Test(recovery, leftovers_of_a_killed_run_are_removed_on_resume)
{
    result r;
    run(&r, "rm -rf " RUNS "/left");
    write_tasks("left", 40);
    write_config("left", 2, 0, 0);
    run(&r, "%s run left.cfg", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    run(&r, "cd " RUNS "/left && : > summary.json.tmp && printf '{\"st' > metrics.jsonl.tmp && "
            "mkdir -p checkpoints/step-9.tmp/policy && printf x > "
            "checkpoints/step-9.tmp/policy/model.safetensors");
    run(&r, "%s run left.cfg --resume", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.err, "left by a write that did not finish"), "%s", r.err);
    cr_expect(!exists(RUNS "/left/summary.json.tmp"));
    cr_expect(!exists(RUNS "/left/metrics.jsonl.tmp"));
    cr_expect(!exists(RUNS "/left/checkpoints/step-9.tmp"));
    cr_expect(exists(RUNS "/left/checkpoints/step-2/state.json"));
    run(&r, "rm -rf " RUNS "/left");
}

/* ---- other task files ------------------------------------------------------ */

Test(recovery, a_resume_with_changed_task_files_is_refused)
{
    result r;
    run(&r, "rm -rf " RUNS "/tasks");
    write_tasks("tasks", 40);
    write_config("tasks", 2, 0, 0);
    run(&r, "%s run tasks.cfg", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    char *state = file_text(RUNS "/tasks/checkpoints/step-2/state.json", NULL);
    cr_expect(strstr(state, "\"train_sha256\""), "the checkpoint keeps the hash: %s", state);
    free(state);

    /* as many tasks, the same size, one answer changed */
    char *train = file_text(WORK "/recovery_tasks_train.jsonl", NULL);
    char *other = strdup(train);
    char *digit = strstr(other, "\"answer\": \"") + 11;
    *digit = *digit == '9' ? '8' : (char)(*digit + 1);
    write_file(WORK "/recovery_tasks_train.jsonl", other);
    run(&r, "%s run tasks.cfg --resume", TERN);
    cr_expect_eq(r.code, 2, "%s", r.err);
    cr_expect(strstr(r.err, "data.train (" WORK "/recovery_tasks_train.jsonl) is not the file "
              "the checkpoint was made with"), "%s", r.err);
    cr_expect(strstr(r.err, "give back the original file") && strstr(r.err, "--resume"),
              "says how to fix: %s", r.err);

    /* the original train file back, another eval file */
    write_file(WORK "/recovery_tasks_train.jsonl", train);
    write_file(WORK "/recovery_tasks_eval.jsonl", "{\"id\": 1, \"domain\": \"math\", "
               "\"prompt\": \"1+1=\", \"answer\": \"2\"}\n");
    run(&r, "%s run tasks.cfg --resume", TERN);
    cr_expect_eq(r.code, 2, "%s", r.err);
    cr_expect(strstr(r.err, "data.eval (" WORK "/recovery_tasks_eval.jsonl) is not the file"),
              "%s", r.err);

    /* both as they were: the resume goes on */
    write_tasks("tasks", 40);
    run(&r, "%s run tasks.cfg --resume -o trainer.steps=3", TERN);
    cr_expect_eq(r.code, 0, "%s", r.err);
    cr_expect(exists(RUNS "/tasks/checkpoints/step-3/state.json"));
    free(train);
    free(other);
    run(&r, "rm -rf " RUNS "/tasks");
}

Test(recovery, an_older_checkpoint_without_the_hash_is_resumed_with_a_warning)
{
    result r;
    run(&r, "rm -rf " RUNS "/oldck");
    write_tasks("oldck", 40);
    write_config("oldck", 2, 0, 0);
    run(&r, "%s run oldck.cfg", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    const char *sp = RUNS "/oldck/checkpoints/step-2/state.json";
    json_error_t e;
    json_t *st = json_load_file(sp, 0, &e);
    cr_assert_not_null(st, "%s", e.text);
    json_object_del(st, "train_sha256");
    json_object_del(st, "eval_sha256");
    cr_assert_eq(json_dump_file(st, sp, JSON_INDENT(2)), 0);
    json_decref(st);
    run(&r, "%s run oldck.cfg --resume -o trainer.steps=3", TERN);
    cr_expect_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.err, "records no hash of its task files"), "warned: %s", r.err);
    st = json_load_file(RUNS "/oldck/checkpoints/step-3/state.json", 0, &e);
    cr_assert_not_null(st, "%s", e.text);
    const char *h = json_string_value(json_object_get(st, "train_sha256"));
    cr_expect(h && strlen(h) == 64, "the new checkpoint has the hash");
    json_decref(st);
    run(&r, "rm -rf " RUNS "/oldck");
}
