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
#define REL "runs_recovery" /* RUNS as the runs name it (run.out_dir) */

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

/* A symbolic link planted in the run directory is never written through
 * (log.txt once appended where it pointed): log.txt, which a resume appends
 * to, is refused, naming it; the JSON Lines files a resume cuts back
 * (metrics.jsonl, eval_responses.jsonl, ...) are rewritten as files of their
 * own in the link's place. Either way the file it pointed to is untouched. */
Test(recovery, a_symbolic_link_in_the_run_directory_is_not_followed)
{
    const char *files[] = {"log.txt", "eval_responses.jsonl"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        result r;
        run(&r, "rm -rf " RUNS "/link outside.txt && printf 'mine\\n' > outside.txt");
        write_tasks("link", 40);
        write_config("link", 2, 0, 0);
        run(&r, "%s run link.cfg", TERN);
        cr_assert_eq(r.code, 0, "%s", r.err);
        run(&r, "cd " RUNS "/link && rm -f %s && ln -s %s/outside.txt %s", files[i], WORK,
            files[i]);
        run(&r, "%s run link.cfg --resume -o trainer.steps=3", TERN);
        if (i == 0) {
            cr_expect_neq(r.code, 0, "%s", r.err);
            cr_expect(strstr(r.err, "log.txt: cannot open the log file: it is a symbolic link, "
                                    "and a run directory's files are written only as files of "
                                    "their own (remove the link)"), "%s", r.err);
        } else {
            cr_expect_eq(r.code, 0, "%s", r.err);
            struct stat st;
            cr_expect(lstat(RUNS "/link/eval_responses.jsonl", &st) == 0 && S_ISREG(st.st_mode),
                      "a file of its own");
        }
        char text[64];
        slurp(WORK "/outside.txt", text, sizeof text);
        cr_expect_str_eq(text, "mine\n", "%s: nothing written through the link", files[i]);
    }
    result r;
    run(&r, "rm -rf " RUNS "/link outside.txt");
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

/* ---- issue 22, item 6: faults, each with a clear message and nothing
 * already written lost ------------------------------------------------------- */

/* sha256sum of every file under DIR (relative names, sorted) into out. */
static void tree_sums(const char *dir, char *out, size_t n)
{
    result r;
    run(&r, "cd %s && find . -type f | LC_ALL=C sort | xargs -r sha256sum", dir);
    cr_assert_eq(r.code, 0, "%s", r.err);
    snprintf(out, n, "%s", r.out);
}

/* Every RL step 1..n in metrics.jsonl once, in order, and two rollouts lines
 * per step (batch_tasks = 2). */
static void expect_steps_once(const char *dir, long long n)
{
    char path[512];
    long long steps[128];
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    size_t got = whole_lines(path, "reward_mean", steps, 128);
    cr_expect_eq(got, (size_t)n, "%s: one metrics line per RL step, got %zu", path, got);
    for (size_t i = 0; i < got; i++)
        cr_expect_eq(steps[i], (long long)i + 1, "%s: RL steps in order, none lost or twice",
                     path);
    snprintf(path, sizeof path, "%s/rollouts.jsonl", dir);
    got = whole_lines(path, NULL, steps, 128);
    cr_expect_eq(got, (size_t)(2 * n), "%s: two rollouts lines per step, got %zu", path, got);
    for (size_t i = 0; i < got; i++)
        cr_expect_eq(steps[i], (long long)i / 2 + 1, "%s: rollouts line %zu", path, i + 1);
}

/* 1. The disk fills at a checkpoint after others were written: the earlier
 * checkpoint and the lines already written stay as they were, and a resume
 * (the disk freed) goes on from that checkpoint. */
Test(recovery, a_full_disk_at_a_later_checkpoint_loses_nothing_and_resume_goes_on)
{
    result r;
    char names[1024], before[16384], after[16384];
    run(&r, "rm -rf " RUNS "/cklater");
    write_tasks("cklater", 40);
    write_config("cklater", 2, 2, 0);
    run(&r, "%s run cklater.cfg", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    tree_sums(RUNS "/cklater/checkpoints", before, sizeof before);
    char *metrics = file_text(RUNS "/cklater/metrics.jsonl", NULL);
    char *rollouts = file_text(RUNS "/cklater/rollouts.jsonl", NULL);

    /* two steps more, on a disk too full for the step-4 checkpoint */
    run_limited(&r, 1000000, TERN " run cklater.cfg --resume -o trainer.steps=4");
    cr_expect_eq(r.code, 1, "%s", r.err);
    cr_expect(strstr(r.err, "step-4.tmp") && strstr(r.err, strerror(EFBIG)), "%s", r.err);
    list_dir(RUNS "/cklater/checkpoints", names, sizeof names);
    cr_expect_str_eq(names, "step-2 ", "no partial step-4, step-2 kept");
    tree_sums(RUNS "/cklater/checkpoints", after, sizeof after);
    cr_expect_str_eq(after, before, "the step-2 checkpoint is unchanged");
    char *m = file_text(RUNS "/cklater/metrics.jsonl", NULL);
    char *ro = file_text(RUNS "/cklater/rollouts.jsonl", NULL);
    cr_expect(strncmp(m, metrics, strlen(metrics)) == 0, "the metrics lines written before "
              "are kept: %s", m);
    cr_expect(strncmp(ro, rollouts, strlen(rollouts)) == 0, "the rollouts lines written "
              "before are kept");
    long long steps[64];
    whole_lines(RUNS "/cklater/metrics.jsonl", "reward_mean", steps, 64);
    whole_lines(RUNS "/cklater/rollouts.jsonl", NULL, steps, 64);
    free(m);
    free(ro);

    /* the disk freed: the resume goes on from step 2 */
    run(&r, "%s run cklater.cfg --resume -o trainer.steps=4", TERN);
    cr_expect_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.err, "resuming from " REL "/cklater/checkpoints/step-2:"), "%s", r.err);
    cr_expect(exists(RUNS "/cklater/checkpoints/step-4/state.json"));
    expect_steps_once(RUNS "/cklater", 4);
    m = file_text(RUNS "/cklater/metrics.jsonl", NULL);
    cr_expect(strncmp(m, metrics, strlen(metrics)) == 0, "steps 1 and 2 as first written");
    free(m);
    free(metrics);
    free(rollouts);
    run(&r, "rm -rf " RUNS "/cklater");
}

/* 2. The newest checkpoint is damaged: the resume says which and why, goes on
 * from the one before, and sets the damaged one aside (kept) so that a later
 * resume does not trip on it again. */
static void expect_fallback(const char *base, const char *damage, const char *why,
                            const char *aside)
{
    result r;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/fallback", RUNS);
    run(&r, "rm -rf %s && cp -a %s %s", dir, base, dir);
    cr_assert_eq(r.code, 0, "%s", r.err);
    run(&r, "cd %s/checkpoints && %s", dir, damage);
    cr_assert_eq(r.code, 0, "%s: %s", damage, r.err);
    char damaged[16384];
    tree_sums(RUNS "/fallback/checkpoints/step-4", damaged, sizeof damaged);

    run(&r, "%s run fallback.cfg --resume", TERN);
    cr_expect_eq(r.code, 0, "%s: %s", damage, r.err);
    cr_expect(strstr(r.err, REL "/fallback/checkpoints/step-4: cannot resume from this "
              "checkpoint: ") && strstr(r.err, why),
              "%s: names the checkpoint and why (%s): %s", damage, why, r.err);
    cr_expect(strstr(r.err, "resuming from " REL "/fallback/checkpoints/step-2, not from the "
              "newest checkpoint"), "%s: says which it resumes from: %s", damage, r.err);
    char want[1200], kept[16384];
    snprintf(want, sizeof want, "set aside as %s/fallback/checkpoints/%s (kept", REL, aside);
    cr_expect(strstr(r.err, want), "%s: %s", want, r.err);
    snprintf(want, sizeof want, "%s/checkpoints/%s", dir, aside);
    tree_sums(want, kept, sizeof kept);
    cr_expect_str_eq(kept, damaged, "%s: the damaged checkpoint is kept as it was", damage);
    cr_expect(exists(RUNS "/fallback/checkpoints/step-4/state.json"), "step 4 saved again");
    expect_steps_once(dir, 4);

    /* a later resume does not trip on it again */
    run(&r, "%s run fallback.cfg --resume -o trainer.steps=5", TERN);
    cr_expect_eq(r.code, 0, "%s", r.err);
    cr_expect_null(strstr(r.err, "damaged"), "%s", r.err);
    cr_expect(strstr(r.err, "resuming from " REL "/fallback/checkpoints/step-4:"), "%s", r.err);
    expect_steps_once(dir, 5);
}

Test(recovery, a_damaged_newest_checkpoint_is_set_aside_and_the_one_before_resumed,
     .timeout = 240)
{
    result r;
    run(&r, "rm -rf " RUNS "/fbbase " RUNS "/fallback");
    write_tasks("fallback", 40);
    /* made under the name "fallback", copied for each kind of damage */
    write_config("fallback", 4, 2, 0);
    run(&r, "%s run fallback.cfg", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    run(&r, "mv " RUNS "/fallback " RUNS "/fbbase");
    cr_assert(exists(RUNS "/fbbase/checkpoints/step-2/state.json"));
    cr_assert(exists(RUNS "/fbbase/checkpoints/step-4/policy/model.safetensors"));

    expect_fallback(RUNS "/fbbase", "printf '{\"format\": 1, \"st' > step-4/state.json",
                    "step-4/state.json", "step-4.damaged");
    expect_fallback(RUNS "/fbbase", "printf '[]' > step-4/state.json", "format 1",
                    "step-4.damaged");
    expect_fallback(RUNS "/fbbase", "f=step-4/policy/model.safetensors; "
                    "truncate -s $(( $(stat -c %s $f) / 2 )) $f", "model.safetensors",
                    "step-4.damaged");
    /* one set aside before keeps its name: the new one takes the next */
    expect_fallback(RUNS "/fbbase", "mkdir step-4.damaged && echo earlier > step-4.damaged/note "
                    "&& rm step-4/policy/model.safetensors", "model.safetensors",
                    "step-4.damaged-2");
    cr_expect(exists(RUNS "/fallback/checkpoints/step-4.damaged/note"), "the earlier one kept");
    run(&r, "rm -rf " RUNS "/fbbase " RUNS "/fallback");
}

/* No checkpoint loads: refused (exit 2) with every one tried listed, and
 * nothing changed: no checkpoint renamed, no line dropped. */
Test(recovery, a_resume_with_no_usable_checkpoint_lists_what_it_tried_and_changes_nothing)
{
    result r;
    char before[16384], after[16384];
    run(&r, "rm -rf " RUNS "/nockpt");
    write_tasks("nockpt", 40);
    write_config("nockpt", 4, 2, 0);
    run(&r, "%s run nockpt.cfg", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    run(&r, "cd " RUNS "/nockpt/checkpoints && printf '{' > step-4/state.json && "
            "truncate -s 100 step-2/policy/model.safetensors");
    cr_assert_eq(r.code, 0, "%s", r.err);
    /* a metrics line of a step past both, as a run killed before its checkpoint leaves */
    run(&r, "tail -n 1 " RUNS "/nockpt/metrics.jsonl >> " RUNS "/nockpt/metrics.jsonl");
    tree_sums(RUNS "/nockpt", before, sizeof before);

    run(&r, "%s run nockpt.cfg --resume", TERN);
    cr_expect_eq(r.code, 2, "%s", r.err);
    cr_expect(strstr(r.err, REL "/nockpt/checkpoints: no checkpoint can be resumed from"),
              "%s", r.err);
    cr_expect(strstr(r.err, "step-4/state.json") && strstr(r.err, "step-2/policy"),
              "both tried are listed: %s", r.err);
    cr_expect(strstr(r.err, "start a new run without --resume"), "says how to go on: %s",
              r.err);
    /* log.txt took the warnings; nothing else changed */
    run(&r, "cd " RUNS "/nockpt && find . -type f ! -name log.txt | LC_ALL=C sort | "
            "xargs -r sha256sum");
    char *line = strstr(before, "./log.txt\n");
    cr_assert_not_null(line);
    while (line > before && line[-1] != '\n')
        line--;
    char *end = strchr(line, '\n') + 1;
    memmove(line, end, strlen(end) + 1);
    snprintf(after, sizeof after, "%s", r.out);
    cr_expect_str_eq(after, before, "nothing renamed, no line dropped");
    run(&r, "rm -rf " RUNS "/nockpt");
}

/* 3. The sqlite buffer's file is damaged (cut short, garbage): refused with
 * the file named, said to be damaged and how to go on (exit 2), before
 * anything of the run directory changes; the file itself is left as it is. */
#define SQ_FILE WORK "/recovery_sq.sqlite"
#define SQ_OPTS "-o buffer.plugin=sqlite -o 'buffer.path=\"" SQ_FILE "\"'"

static void expect_buffer_refused(const char *damage, const char *words)
{
    result r;
    char before[16384], after[16384], file_before[16384], file_after[16384];
    run(&r, "%s", damage);
    cr_assert_eq(r.code, 0, "%s: %s", damage, r.err);
    run(&r, "rm -f " SQ_FILE "-wal " SQ_FILE "-shm; sha256sum " SQ_FILE);
    snprintf(file_before, sizeof file_before, "%s", r.out);
    run(&r, "cd " RUNS "/sqbuf && find . -type f ! -name log.txt | LC_ALL=C sort | "
            "xargs -r sha256sum");
    snprintf(before, sizeof before, "%s", r.out);

    run(&r, "%s run sqbuf.cfg --resume -o trainer.steps=3 " SQ_OPTS, TERN);
    cr_expect_eq(r.code, 2, "%s: %s", damage, r.err);
    cr_expect(strstr(r.err, "'" SQ_FILE "' ") && strstr(r.err, words),
              "%s: names the file and says '%s': %s", damage, words, r.err);
    cr_expect(strstr(r.err, "move it away") && strstr(r.err, "new file"),
              "%s: says how to go on: %s", damage, r.err);
    run(&r, "sha256sum " SQ_FILE);
    snprintf(file_after, sizeof file_after, "%s", r.out);
    cr_expect_str_eq(file_after, file_before, "%s: the buffer's file is left as it was", damage);
    run(&r, "cd " RUNS "/sqbuf && find . -type f ! -name log.txt | LC_ALL=C sort | "
            "xargs -r sha256sum");
    snprintf(after, sizeof after, "%s", r.out);
    cr_expect_str_eq(after, before, "%s: nothing of the run directory changed", damage);
}

Test(recovery, a_damaged_sqlite_buffer_is_named_and_nothing_else_is_lost, .timeout = 240)
{
    result r;
    run(&r, "rm -rf " RUNS "/sqbuf " SQ_FILE " " SQ_FILE "-wal " SQ_FILE "-shm "
            WORK "/recovery_sq.keep");
    write_tasks("sqbuf", 40);
    write_config("sqbuf", 2, 0, 0);
    run(&r, "%s run sqbuf.cfg " SQ_OPTS, TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    run(&r, "stat -c %%s " SQ_FILE);
    long size = atol(r.out);
    cr_assert(size >= 8192, "a buffer file of several pages: %ld bytes", size);
    run(&r, "cp " SQ_FILE " " WORK "/recovery_sq.keep");

    /* page 3 overwritten: the table sqlite_sequence, which opening the file
     * does not read but the first put does (it used to fail mid-run, exit 1) */
    expect_buffer_refused("yes garbage | head -c 4096 | dd of=" SQ_FILE " bs=4096 seek=2 "
                          "conv=notrunc 2>/dev/null", "is damaged");
    run(&r, "cp " WORK "/recovery_sq.keep " SQ_FILE);
    expect_buffer_refused("truncate -s $(( $(stat -c %s " SQ_FILE ") / 2 )) " SQ_FILE,
                          "is damaged");
    run(&r, "cp " WORK "/recovery_sq.keep " SQ_FILE);
    expect_buffer_refused("truncate -s 5000 " SQ_FILE, "is damaged");
    expect_buffer_refused("yes garbage | head -c 8192 > " SQ_FILE, "not a SQLite database");

    /* moved away, as the message says: the resume goes on with a new file */
    run(&r, "mv " SQ_FILE " " SQ_FILE ".damaged");
    run(&r, "%s run sqbuf.cfg --resume -o trainer.steps=3 " SQ_OPTS, TERN);
    cr_expect_eq(r.code, 0, "%s", r.err);
    expect_steps_once(RUNS "/sqbuf", 3);
    /* and a whole file of its own is taken again */
    run(&r, "%s run sqbuf.cfg --resume -o trainer.steps=4 " SQ_OPTS, TERN);
    cr_expect_eq(r.code, 0, "%s", r.err);
    expect_steps_once(RUNS "/sqbuf", 4);

    /* an empty file (0 bytes) holds nothing to lose: it is a new buffer */
    run(&r, "rm -f " SQ_FILE "-wal " SQ_FILE "-shm && : > " SQ_FILE);
    run(&r, "%s run sqbuf.cfg --resume -o trainer.steps=5 " SQ_OPTS, TERN);
    cr_expect_eq(r.code, 0, "%s", r.err);
    expect_steps_once(RUNS "/sqbuf", 5);
    run(&r, "rm -rf " RUNS "/sqbuf " SQ_FILE " " SQ_FILE "-wal " SQ_FILE "-shm " SQ_FILE
            ".damaged " WORK "/recovery_sq.keep");
}

/* 4. A run directory this process cannot write. As root, which may write
 * anywhere, the command runs as the user nobody (setpriv); as another user,
 * the directory is made read-only (chmod). The prefix for the command, or
 * NULL when neither works here (nobody cannot run tern on config `cfg`). */
static const char *as_user_who_cannot_write(const char *cfg)
{
    if (geteuid() != 0)
        return "";
    result r;
    static const char *drop = "setpriv --reuid=65534 --regid=65534 --clear-groups ";
    run(&r, "%s%s check %s", drop, TERN, cfg);
    return r.code == 0 ? drop : NULL;
}

Test(recovery, a_run_directory_that_cannot_be_written_is_refused_and_left_as_it_was)
{
    result r;
    char names[1024], before[16384], after[16384];
    run(&r, "chmod -R u+w " WORK "/ro_out " RUNS "/rodir 2>/dev/null; rm -rf " WORK "/ro_out "
            RUNS "/rodir");
    write_tasks("rodir", 40);
    write_config("rodir", 2, 0, 0);
    const char *as = as_user_who_cannot_write("rodir.cfg");
    if (!as)
        cr_skip_test("skipped: running as root, and setpriv cannot run tern as the user nobody "
                     "on this test's files (a read-only run directory cannot be made for root)");

    /* a fresh run whose out_dir cannot be written, or made */
    run(&r, "mkdir " WORK "/ro_out && chmod 555 " WORK "/ro_out");
    run(&r, "%s%s run rodir.cfg -o 'run.out_dir=\"%s/ro_out\"'", as, TERN, WORK);
    cr_expect_eq(r.code, 2, "%s", r.err);
    cr_expect(strstr(r.err, WORK "/ro_out/rodir: cannot create the run directory: ") &&
              strstr(r.err, strerror(EACCES)), "says which path and why: %s", r.err);
    cr_expect(strstr(r.err, "-o run.out_dir=PATH"), "says how to fix: %s", r.err);
    run(&r, "%s%s run rodir.cfg -o 'run.out_dir=\"%s/ro_out/a/b\"'", as, TERN, WORK);
    cr_expect_eq(r.code, 2, "%s", r.err);
    cr_expect(strstr(r.err, WORK "/ro_out/a: cannot create directory: ") &&
              strstr(r.err, "run.out_dir"), "%s", r.err);
    list_dir(WORK "/ro_out", names, sizeof names);
    cr_expect_str_eq(names, "", "nothing is created");

    /* a resume of a run directory it cannot write */
    run(&r, "%s run rodir.cfg", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    run(&r, "chmod -R a-w " RUNS "/rodir");
    tree_sums(RUNS "/rodir", before, sizeof before);
    run(&r, "%s%s run rodir.cfg --resume -o trainer.steps=3", as, TERN);
    cr_expect_eq(r.code, 2, "%s", r.err);
    cr_expect(strstr(r.err, REL "/rodir: cannot resume: this process cannot write " REL
              "/rodir (") && strstr(r.err, strerror(EACCES)), "says which path and why: %s",
              r.err);
    cr_expect(strstr(r.err, "chmod -R u+w " REL "/rodir"), "says how to fix: %s", r.err);
    tree_sums(RUNS "/rodir", after, sizeof after);
    cr_expect_str_eq(after, before, "nothing in the run directory changed");
    run(&r, "chmod -R u+w " RUNS "/rodir " WORK "/ro_out; rm -rf " RUNS "/rodir " WORK "/ro_out");
}

/* From a warm-up checkpoint (sft-S: RL had not begun), RL is done again
 * whole: every RL line of the run it resumes is dropped, the evaluation
 * before RL (step 0) too, so that each appears once. */
Test(recovery, a_resume_from_a_warmup_checkpoint_writes_each_rl_line_once)
{
    result r;
    run(&r, "rm -rf " RUNS "/fromsft");
    write_tasks("fromsft", 40);
    write_config("fromsft", 2, 0, 0);
    run(&r, "%s run fromsft.cfg", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    /* as a run stopped in the warm-up (sft-2), resumed into RL and killed
     * before its first RL checkpoint leaves it */
    const char *ck = RUNS "/fromsft/checkpoints";
    run(&r, "cp -a %s/step-2 %s/sft-2 && rm -rf %s/step-2", ck, ck, ck);
    cr_assert_eq(r.code, 0, "%s", r.err);
    json_error_t e;
    json_t *st = json_load_file(RUNS "/fromsft/checkpoints/sft-2/state.json", 0, &e);
    cr_assert_not_null(st, "%s", e.text);
    json_object_set_new(st, "stage", json_string("sft"));
    json_object_set_new(st, "step", json_integer(0));
    json_object_set_new(st, "sft_step", json_integer(2));
    json_object_set_new(st, "rl_started", json_false());
    json_object_del(st, "ledger"); /* a warm-up checkpoint consumed no group */
    json_object_set_new(st, "data_position", json_integer(0));
    json_object_set_new(st, "accuracy_before_rl", json_null());
    json_object_set_new(st, "eval_before_rl", json_null());
    json_object_del(st, "reward_first");
    json_object_del(st, "reward_last");
    cr_assert_eq(json_dump_file(st, RUNS "/fromsft/checkpoints/sft-2/state.json",
                                JSON_INDENT(2)), 0);
    json_decref(st);

    run(&r, "%s run fromsft.cfg --resume", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.err, "resuming from " REL "/fromsft/checkpoints/sft-2:"), "%s", r.err);
    long long steps[64];
    size_t n = whole_lines(RUNS "/fromsft/metrics.jsonl", "eval/accuracy", steps, 64);
    cr_expect_eq(n, 2, "evaluations before RL and at the end, once each: %zu", n);
    cr_expect(n == 2 && steps[0] == 0 && steps[1] == 2, "at steps 0 and 2");
    expect_steps_once(RUNS "/fromsft", 2);
    n = whole_lines(RUNS "/fromsft/metrics.jsonl", "stage", steps, 64);
    cr_expect_eq(n, 2 + 1 + 2, "2 warm-up lines, the evaluation before RL, 2 RL steps: %zu", n);
    run(&r, "rm -rf " RUNS "/fromsft");
}
