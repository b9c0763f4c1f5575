/* test_run_signals.c: `tern run` stopped the ways a run really ends --
 * SIGTERM (schedulers), SIGHUP (a closed terminal), ^C, a second ^C, and a
 * stdout and stderr whose reader went away -- and each resumed with nothing
 * lost: every step once, with the values of a run never stopped; two runs
 * on one run directory (the second is refused); closed standard descriptors;
 * a reward plugin that crashes or hangs in process (it is named, and ^C says
 * what the run waits for).
 *
 * Runs are started with fork and exec (not a shell) so the tests see how the
 * process ended and choose its descriptors. Every wait is for evidence in
 * the run's files, and bounded. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "command.h"

#define TERN TERN_TEST_BIN
#define SRC TERN_TEST_SOURCE_DIR
#define WORK TERN_TEST_WORK_DIR
#define OUT "runs_sig" /* out_dir of every run here, under WORK */

enum { WAIT_S = 120 }; /* bound of every wait: generous for sanitizer builds */

/* A run of the tiny model, seeded and single-threaded (so deterministic):
 * a short warm-up, then `steps` RL steps with a checkpoint every `save`.
 * `sizes` is the explorer's batch; the default takes milliseconds a step. */
static void write_config_with(const char *name, int steps, int save, const char *sizes,
                              const char *rewards)
{
    char path[512], text[4096];
    snprintf(path, sizeof path, "%s/%s.cfg", WORK, name);
    snprintf(text, sizeof text,
             "run = { name = \"%s\"; seed = 3; out_dir = \"" OUT "\"; };\n"
             "model = { plugin = \"transformer\"; init = { preset = \"tiny\"; seed = 1; }; "
             "threads = 1; };\n"
             "reference = { same_as = \"model\"; };\n"
             "data = { train = \"%s/etc/data/arith-train.jsonl\"; };\n"
             "explorer = { %s };\n"
             "trainer = { steps = %d; save_every = %d; sft = { steps = 4; batch_tasks = 8; }; "
             "};\n"
             "algorithm = { kl = { estimator = \"k3\"; coef = 0.001; }; };\n"
             "buffer = { plugin = \"fifo\"; capacity = 1024; };\n"
             "sync = { plugin = \"synchronous\"; };\n"
             "plugin_path = [ \"" TERN_TEST_PLUGINS_DIR "\" ];\n"
             "rewards = ( { domain = \"math\"; %s } );\n",
             name, SRC, sizes ? sizes : "batch_tasks = 4; group_size = 4; max_tokens = 6;",
             steps, save, rewards);
    write_file(path, text);
}

static void write_config(const char *name, int steps, int save, const char *sizes)
{
    write_config_with(name, steps, save, sizes, "plugin = \"math\";");
}

static const char *run_dir(const char *name, char *buf, size_t n)
{
    snprintf(buf, n, "%s/" OUT "/%s", WORK, name);
    return buf;
}

/* ---- processes ----------------------------------------------------------------- */

/* Start `tern run NAME.cfg [--resume]` in WORK with stdin from /dev/null and
 * stdout and stderr to out_fd and err_fd (-1: WORK/NAME.out, NAME.err). */
static pid_t start_run(const char *name, int resume, int out_fd, int err_fd)
{
    char cfg[256], out[512], err[512];
    snprintf(cfg, sizeof cfg, "%s.cfg", name);
    snprintf(out, sizeof out, "%s/%s.out", WORK, name);
    snprintf(err, sizeof err, "%s/%s.err", WORK, name);
    pid_t pid = fork();
    cr_assert_neq(pid, -1, "fork: %s", strerror(errno));
    if (pid == 0) {
        int in = open("/dev/null", O_RDONLY);
        int o = out_fd >= 0 ? out_fd : open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = err_fd >= 0 ? err_fd : open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (in < 0 || o < 0 || e < 0 || dup2(in, 0) < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0 ||
            chdir(WORK) != 0)
            _exit(127);
        unsetenv("TERN_PLUGIN_PATH");
        /* the signals a run gets as a shell's background job gets them */
        signal(SIGINT, SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
        char *argv[] = {TERN, "run", cfg, resume ? "--resume" : NULL, NULL};
        execv(TERN, argv);
        _exit(127);
    }
    return pid;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void pause_ms(int ms)
{
    struct timespec t = {0, ms * 1000000L};
    nanosleep(&t, NULL);
}

/* The wait status of pid, waiting at most WAIT_S (then it is killed and the
 * test fails). */
static int wait_end(pid_t pid)
{
    double until = now_s() + WAIT_S;
    int st;
    for (;;) {
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid)
            return st;
        cr_assert_neq(w, -1, "waitpid: %s", strerror(errno));
        if (now_s() > until) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            cr_assert_fail("the run did not end within %d s", WAIT_S);
        }
        pause_ms(10);
    }
}

static int file_has(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[16384];
    int found = 0;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, needle) != NULL;
    fclose(f);
    return found;
}

/* As wait_end, for a run whose stderr went to WORK/NAME.err: a sanitizer
 * report there (the sanitizer build instruments tern too) fails the test. */
static int wait_run(pid_t pid, const char *name)
{
    int st = wait_end(pid);
    char err[512];
    snprintf(err, sizeof err, "%s/%s.err", WORK, name);
    cr_expect(!file_has(err, "Sanitizer") && !file_has(err, "runtime error:"),
              "%s: a sanitizer report", err);
    return st;
}

/* Wait until `path` holds `needle` (1), or pid ended first (0, with its
 * status in *st); at most WAIT_S. */
static int wait_for(pid_t pid, const char *path, const char *needle, int *st)
{
    double until = now_s() + WAIT_S;
    while (!file_has(path, needle)) {
        if (waitpid(pid, st, WNOHANG) == pid)
            return 0;
        if (now_s() > until) {
            kill(pid, SIGKILL);
            waitpid(pid, st, 0);
            cr_assert_fail("%s: no \"%s\" within %d s", path, needle, WAIT_S);
        }
        pause_ms(10);
    }
    return 1;
}

/* Wait for the RL line of `step` in the run's metrics.jsonl; the run must
 * still be going. */
static void wait_for_step(pid_t pid, const char *name, int step)
{
    char dir[512], path[600], needle[64];
    snprintf(path, sizeof path, "%s/metrics.jsonl", run_dir(name, dir, sizeof dir));
    snprintf(needle, sizeof needle, "\"stage\":\"rl\",\"step\":%d,", step);
    int st = 0;
    cr_assert(wait_for(pid, path, needle, &st), "%s ended (status %#x) before step %d", name, st,
              step);
}

static void expect_exit(int st, int code, const char *what)
{
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == code, "%s: wanted exit %d, got %s %d", what,
              code, WIFEXITED(st) ? "exit" : "signal",
              WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
}

/* Run NAME.cfg to its end, exit 0. */
static void run_whole(const char *name)
{
    char dir[512];
    run_dir(name, dir, sizeof dir);
    result r;
    run(&r, "rm -rf %s", dir);
    expect_exit(wait_run(start_run(name, 0, -1, -1), name), 0, name);
}

/* ---- what the run directory says --------------------------------------------------- */

static json_t *load_json(const char *path)
{
    json_error_t e;
    json_t *j = json_load_file(path, 0, &e);
    cr_assert_not_null(j, "%s: %s", path, e.text);
    return j;
}

/* The RL lines of a run's metrics.jsonl, in order. */
static json_t *rl_lines(const char *name)
{
    char dir[512], path[600];
    snprintf(path, sizeof path, "%s/metrics.jsonl", run_dir(name, dir, sizeof dir));
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    json_t *out = json_array();
    char line[16384];
    while (fgets(line, sizeof line, f)) {
        json_t *o = json_loads(line, 0, NULL);
        cr_assert_not_null(o, "%s: a line that is not JSON: %s", path, line);
        const char *stage = json_string_value(json_object_get(o, "stage"));
        if (stage && strcmp(stage, "rl") == 0)
            json_array_append(out, o);
        json_decref(o);
    }
    fclose(f);
    return out;
}

/* Figures that depend on timing, not on what was trained. */
static int timing_key(const char *k)
{
    size_t n = strlen(k);
    return (n > 6 && strcmp(k + n - 6, "_per_s") == 0) || strncmp(k, "wait_s/", 7) == 0 ||
           strcmp(k, "buffer_size") == 0 || (n >= 7 && strcmp(k + n - 7, "seconds") == 0);
}

/* `parts` (stopped and resumed) has the RL lines of `whole`: every step
 * once, in order, with the same values (the synchronous mode makes a
 * resumed run continue exactly as an unbroken one). */
static void expect_same_metrics(const char *whole, const char *parts)
{
    json_t *a = rl_lines(whole), *b = rl_lines(parts);
    cr_assert_eq(json_array_size(b), json_array_size(a), "%s: %zu RL lines, %s has %zu", parts,
                 json_array_size(b), whole, json_array_size(a));
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *x = json_array_get(a, i), *y = json_array_get(b, i);
        cr_assert_eq(json_integer_value(json_object_get(y, "step")), (json_int_t)i + 1,
                     "%s: line %zu is not step %zu: every step once, in order", parts, i + 1,
                     i + 1);
        const char *k;
        json_t *v;
        json_object_foreach(x, k, v) {
            if (timing_key(k))
                continue;
            json_t *w = json_object_get(y, k);
            cr_expect(w && json_equal(v, w), "%s: step %zu: %s differs from %s's", parts, i + 1,
                      k, whole);
        }
        cr_expect_eq(json_object_size(y), json_object_size(x), "%s: step %zu: other keys",
                     parts, i + 1);
    }
    json_decref(a);
    json_decref(b);
}

/* After a stop: summary.json (finished false), trace.json, and the
 * checkpoint of the steps done (when `checkpoint`); returns the steps. */
static json_int_t expect_stopped(const char *name, int checkpoint)
{
    char dir[512], path[700];
    run_dir(name, dir, sizeof dir);
    snprintf(path, sizeof path, "%s/summary.json", dir);
    json_t *sum = load_json(path);
    cr_expect(json_is_false(json_object_get(sum, "finished")), "%s: finished false", path);
    json_int_t steps = json_integer_value(json_object_get(sum, "steps"));
    json_decref(sum);
    struct stat st;
    snprintf(path, sizeof path, "%s/trace.json", dir);
    cr_expect_eq(stat(path, &st), 0, "%s: the trace of what was done", path);
    if (checkpoint) {
        snprintf(path, sizeof path, "%s/checkpoints/step-%lld/state.json", dir, (long long)steps);
        cr_expect_eq(stat(path, &st), 0, "a checkpoint at the stop: %s", path);
    }
    return steps;
}

/* Resume NAME to its end (exit 0, finished) and compare with `whole`. */
static void resume_and_compare(const char *name, const char *whole)
{
    expect_exit(wait_run(start_run(name, 1, -1, -1), name), 0, "the resumed run");
    char dir[512], path[600];
    snprintf(path, sizeof path, "%s/summary.json", run_dir(name, dir, sizeof dir));
    json_t *sum = load_json(path);
    cr_expect(json_is_true(json_object_get(sum, "finished")), "%s", path);
    json_decref(sum);
    expect_same_metrics(whole, name);
}

/* ---- one signal: stop after the step, checkpoint, resume ------------------------------- */

/* Stop a run with `sig` once 3 RL steps are done: it exits `code` with a
 * checkpoint, summary.json and trace.json, and a resume continues it as if
 * it had never stopped. */
static void stop_and_resume(const char *tag, int sig, int code, const char *sig_name)
{
    char whole[64], parts[64];
    snprintf(whole, sizeof whole, "%s_whole", tag);
    snprintf(parts, sizeof parts, "%s_parts", tag);
    /* stopped at step 3 or 4: off the periodic checkpoints, each written once */
    write_config(whole, 12, 5, NULL);
    write_config(parts, 12, 5, NULL);
    run_whole(whole);

    char dir[512], log[600];
    result r;
    run(&r, "rm -rf %s", run_dir(parts, dir, sizeof dir));
    pid_t pid = start_run(parts, 0, -1, -1);
    wait_for_step(pid, parts, 3);
    kill(pid, sig);
    expect_exit(wait_run(pid, parts), code, sig_name);
    json_int_t steps = expect_stopped(parts, 1);
    cr_expect(steps >= 3 && steps < 12, "stopped after %lld steps", (long long)steps);
    snprintf(log, sizeof log, "%s/log.txt", dir);
    char needle[64];
    snprintf(needle, sizeof needle, "interrupted by %s", sig_name);
    cr_expect(file_has(log, needle), "%s says \"%s\"", log, needle);
    cr_expect(file_has(log, "--resume"), "%s says how to continue", log);
    resume_and_compare(parts, whole);
}

Test(signals, sigterm_checkpoints_exits_143_and_resumes_with_nothing_lost)
{
    stop_and_resume("term", SIGTERM, 143, "SIGTERM");
}

Test(signals, sighup_checkpoints_exits_129_and_resumes_with_nothing_lost)
{
    stop_and_resume("hup", SIGHUP, 129, "SIGHUP");
}

/* ^C as before (the reference the others are held to). */
Test(signals, sigint_checkpoints_exits_130_and_resumes_with_nothing_lost)
{
    stop_and_resume("int", SIGINT, 130, "SIGINT");
}

/* ---- a reader that went away ------------------------------------------------------- */

/* stdout and stderr to a pipe whose reader has closed it (`tern run ... 2>&1
 * | head -1` once head is gone): the run goes on and log.txt gets every
 * line; then SIGTERM stops it as usual and a resume loses nothing. */
Test(signals, a_closed_pipe_on_stdout_and_stderr_does_not_end_the_run)
{
    write_config("pipe_whole", 12, 5, NULL);
    write_config("pipe_parts", 12, 5, NULL);
    run_whole("pipe_whole");

    char dir[512], log[600];
    result r;
    run(&r, "rm -rf %s", run_dir("pipe_parts", dir, sizeof dir));
    int p[2];
    cr_assert_eq(pipe(p), 0);
    close(p[0]); /* the reader is gone before the first line */
    pid_t pid = start_run("pipe_parts", 0, p[1], p[1]);
    close(p[1]);
    snprintf(log, sizeof log, "%s/log.txt", dir);
    int st = 0;
    cr_assert(wait_for(pid, log, "[progress] step 3/12", &st),
              "the run ended (status %#x) before step 3; log.txt must go on", st);
    kill(pid, SIGTERM);
    expect_exit(wait_end(pid), 143, "SIGTERM with stderr's reader gone");
    expect_stopped("pipe_parts", 1);
    cr_expect(file_has(log, "interrupted by SIGTERM"), "%s", log);
    resume_and_compare("pipe_parts", "pipe_whole");
}

/* ---- a second signal ------------------------------------------------------------------ */

/* The first ^C stops the run after the step in progress; a second one, sent
 * once the run has said it is stopping, ends it at once (killed by SIGINT,
 * as a shell expects), after writing summary.json and trace.json. The steps
 * here take long enough (a batch of long responses) for the second ^C to
 * come while the first is still being honoured. A resume loses nothing. */
Test(signals, a_second_sigint_stops_at_once_after_the_summary_and_trace)
{
    const char *sizes = "batch_tasks = 8; group_size = 8; max_tokens = 96;";
    /* step-2 to resume from: the checkpoint the first ^C asked for may not be done */
    write_config("twice_whole", 5, 2, sizes);
    write_config("twice_parts", 5, 2, sizes);
    run_whole("twice_whole");

    char dir[512], log[600];
    result r;
    run(&r, "rm -rf %s", run_dir("twice_parts", dir, sizeof dir));
    snprintf(log, sizeof log, "%s/log.txt", dir);
    pid_t pid = start_run("twice_parts", 0, -1, -1);
    wait_for_step(pid, "twice_parts", 3);
    kill(pid, SIGINT);
    int st = 0;
    cr_assert(wait_for(pid, log, "SIGINT: stopping after the step in progress", &st),
              "the run ended (status %#x) without saying it was stopping", st);
    kill(pid, SIGINT);
    st = wait_run(pid, "twice_parts");
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGINT,
              "a second ^C ends the run at once, killed by SIGINT: status %#x", st);
    expect_stopped("twice_parts", 0);
    cr_expect(file_has(log, "SIGINT again: stopped at once"), "%s", log);
    resume_and_compare("twice_parts", "twice_whole");
}

/* ---- a reward plugin that crashes or hangs in process (issue 28) ---------------------- */

/* It used to end the run with exit 134 or 139 and a log.txt that stopped at
 * its last line, naming nothing. */
Test(plugin_faults, an_in_process_crash_names_the_plugin_the_op_and_the_task)
{
    write_config_with("crashes", 4, 2, NULL,
                      "plugin = \"test_faulty_reward\"; crash_every = 20;");
    char dir[512], log[600], err[600];
    result r;
    run(&r, "rm -rf %s", run_dir("crashes", dir, sizeof dir));
    snprintf(log, sizeof log, "%s/log.txt", dir);
    snprintf(err, sizeof err, "%s/crashes.err", WORK);
    int st = wait_run(start_run("crashes", 0, -1, -1), "crashes");
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT,
              "the crash still ends tern by its signal: status %#x", st);
    const char *said[] = {"[rewards[0]] plugin 'test_faulty_reward' (" TERN_TEST_PLUGINS_DIR
                          "/faulty_reward.so) crashed with SIGABRT",
                          "in its score() op, on a batch of 16 responses, the first to task "
                          "'arith-train-",
                          "with isolate = true in its config group"};
    for (size_t i = 0; i < sizeof said / sizeof *said; i++) {
        cr_expect(file_has(err, said[i]), "stderr lacks \"%s\"", said[i]);
        cr_expect(file_has(log, said[i]), "log.txt lacks \"%s\"", said[i]);
    }
    cr_expect(file_has(log, "error [rewards[0]] plugin"), "a log.txt line of its own");
}

/* The same for a buffer plugin: its put() crashes at the first group. */
Test(plugin_faults, a_crash_in_a_buffer_plugin_names_it)
{
    write_config_with("buffer_crash", 4, 2, NULL, "plugin = \"math\";");
    char dir[512], log[600], err[600], cfg[600];
    result r;
    run(&r, "rm -rf %s", run_dir("buffer_crash", dir, sizeof dir));
    snprintf(cfg, sizeof cfg, "%s/buffer_crash.cfg", WORK);
    /* the crashing buffer, from a directory of its own */
    run(&r, "sed -i -e 's|^buffer = .*|buffer = { plugin = \"crash_buffer\"; };|' "
        "-e 's|^plugin_path = .*|plugin_path = [ \"%s/crash_put\" ];|' %s",
        TERN_TEST_BAD_PLUGIN_DIR, cfg);
    cr_assert_eq(r.code, 0, "%s", r.err);
    snprintf(log, sizeof log, "%s/log.txt", dir);
    snprintf(err, sizeof err, "%s/buffer_crash.err", WORK);
    int st = wait_run(start_run("buffer_crash", 0, -1, -1), "buffer_crash");
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "status %#x", st);
    const char *said = "[buffer] plugin 'crash_buffer' (" TERN_TEST_BAD_PLUGIN_DIR
                       "/crash_put/crash_buffer.so) crashed with SIGABRT (abort(), a failed "
                       "assert) in its put() op, and took tern with it; a bug in the plugin";
    cr_expect(file_has(err, said), "stderr lacks \"%s\"", said);
    cr_expect(file_has(log, said), "log.txt lacks \"%s\"", said);
}

/* An in-process op that hangs used to stall the run in silence, and the
 * first ^C said nothing. */
Test(plugin_faults, a_hang_is_named_by_the_watchdog_and_at_the_first_sigint)
{
    write_config_with("hangs", 4, 2, NULL,
                      "plugin = \"test_faulty_reward\"; hang_every = 20; watchdog_s = 0.5;");
    char dir[512], log[600];
    result r;
    run(&r, "rm -rf %s", run_dir("hangs", dir, sizeof dir));
    snprintf(log, sizeof log, "%s/log.txt", dir);
    pid_t pid = start_run("hangs", 0, -1, -1);
    int st = 0;
    cr_assert(wait_for(pid, log, "in its score() op, for rewards[0], on a batch of 16 "
                                 "responses", &st), "status %#x", st);
    cr_expect(file_has(log, "may be stuck (a call inside tern cannot be stopped); with isolate "
                            "= true"), "%s", log);
    kill(pid, SIGINT);
    cr_assert(wait_for(pid, log, "SIGINT: the step in progress waits for plugin "
                                 "'test_faulty_reward'", &st),
              "the run ended (status %#x) without saying what it waits for", st);
    /* the master is the one stuck: the watchdog acts on the second */
    kill(pid, SIGINT);
    st = wait_run(pid, "hangs");
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGINT, "status %#x", st);
    cr_expect(file_has(log, "SIGINT again: stopped at once"), "%s", log);
    char summary[600];
    snprintf(summary, sizeof summary, "%s/summary.json", dir);
    cr_expect(path_exists(summary), "summary.json is written");
}

/* ---- one run per directory ------------------------------------------------------------ */

Test(rundir, a_second_run_on_a_directory_in_use_is_refused)
{
    write_config("busy", 500, 4, NULL); /* longer than the test needs: it is stopped */
    char dir[512], path[700];
    result r;
    run(&r, "rm -rf %s", run_dir("busy", dir, sizeof dir));
    pid_t pid = start_run("busy", 0, -1, -1);
    wait_for_step(pid, "busy", 5); /* step-4 exists: a resume would have a checkpoint */
    snprintf(path, sizeof path, "%s/lock", dir);
    char text[64];
    slurp(path, text, sizeof text);
    cr_expect_eq(atol(text), (long)pid, "%s holds the run's pid: %s", path, text);

    run(&r, "%s run busy.cfg --resume", TERN);
    int st = 0;
    cr_assert_eq(waitpid(pid, &st, WNOHANG), 0, "the first run still goes (status %#x): the "
                 "second came too late to be refused", st);
    cr_expect_eq(r.code, 2, "%s", r.err);
    char want[128];
    snprintf(want, sizeof want, "the run directory is in use by process %ld", (long)pid);
    cr_expect(strstr(r.err, want), "wanted \"%s\" in: %s", want, r.err);
    cr_expect(strstr(r.err, "/lock"), "names the lock: %s", r.err);

    /* stopped off its periodic checkpoints, so each is written once */
    json_t *done = rl_lines("busy");
    int next = (int)json_array_size(done) + 1;
    json_decref(done);
    while (next % 4 != 1)
        next++;
    wait_for_step(pid, "busy", next);
    kill(pid, SIGTERM);
    expect_exit(wait_run(pid, "busy"), 143, "the first run");
    json_int_t steps = expect_stopped("busy", 1);
    /* the first run's files are its own: one start in log.txt, every step once */
    snprintf(path, sizeof path, "%s/log.txt", dir);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    char line[4096];
    int starts = 0;
    while (fgets(line, sizeof line, f))
        starts += strstr(line, "[run] run directory") != NULL;
    fclose(f);
    cr_expect_eq(starts, 1, "%s: one run wrote it", path);
    json_t *lines = rl_lines("busy");
    cr_expect_eq((json_int_t)json_array_size(lines), steps);
    for (size_t i = 0; i < json_array_size(lines); i++)
        cr_expect_eq(json_integer_value(json_object_get(json_array_get(lines, i), "step")),
                     (json_int_t)i + 1, "every step once, in order");
    json_decref(lines);

    /* the lock ends with its run: the directory resumes (to where it is) */
    run(&r, "%s run busy.cfg --resume -o trainer.steps=%lld", TERN, (long long)steps);
    cr_expect_eq(r.code, 0, "%s", r.err);
}

/* ---- closed standard descriptors ------------------------------------------------------ */

/* `tern run ... 2>&-`: the files the run opens must not take descriptors
 * 0-2, or stderr's lines land in log.txt (every line twice) -- nor, with all
 * three closed, stdout's in a run file. */
Test(rundir, closed_standard_descriptors_do_not_leak_into_the_run_files)
{
    static const char *closing[] = {"2>&-", "<&- >&- 2>&-"};
    write_config("closed", 4, 0, NULL);
    for (size_t c = 0; c < sizeof closing / sizeof closing[0]; c++) {
        char dir[512], path[700];
        result r;
        run(&r, "rm -rf %s; %s run closed.cfg %s; echo \"exit $?\"",
            run_dir("closed", dir, sizeof dir), TERN, closing[c]);
        cr_expect(strstr(r.out, "exit 0"), "%s: %s", closing[c], r.out);
        snprintf(path, sizeof path, "%s/log.txt", dir);
        FILE *f = fopen(path, "r");
        cr_assert_not_null(f, "%s", path);
        char line[4096], prev[4096] = "";
        int n = 0;
        while (fgets(line, sizeof line, f)) {
            n++;
            /* log.txt's lines start with a timestamp, stderr's with "tern:" */
            cr_expect(line[0] >= '0' && line[0] <= '9', "%s: %s:%d: not a log.txt line: %s",
                      closing[c], path, n, line);
            cr_expect_str_neq(line, prev, "%s: %s:%d: a line written twice", closing[c], path,
                              n);
            snprintf(prev, sizeof prev, "%s", line);
        }
        fclose(f);
        cr_expect_gt(n, 4, "%s: %s has the run's lines", closing[c], path);
        json_t *lines = rl_lines("closed"); /* every line JSON: nothing else wrote to it */
        cr_expect_eq(json_array_size(lines), 4, "%s", closing[c]);
        json_decref(lines);
    }
}
