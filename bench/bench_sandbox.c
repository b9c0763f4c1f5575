/* bench_sandbox.c: what a run of the `code` reward's sandbox costs
 * (plugins/rewards/code/pool.h, sandbox/main.c). Figures only, no pass/fail
 * on time; the exit status is 1 only when the sandbox cannot be made here or
 * a run did not do what it should.
 *
 *   bench_sandbox [--runs N] [--python-runs M] [--helper PATH]
 *
 *   1. Overhead per run: /bin/true in a sandbox (binds /usr: the plugin's
 *      own check request), N runs one after another through a 1-slot pool,
 *      each timed end to end (request into a memfd, posix_spawn of
 *      tern-sandbox, namespaces, tmpfs root, exec, answer, decode): mean,
 *      p50, p95, min, max in ms. Then where the time goes, timed the same
 *      way: the helper answering a malformed request at once (spawn + exec
 *      + answer, no sandbox), a sandbox with no step (namespaces + root
 *      filesystem + teardown), the /bin/true step as init timed it inside,
 *      and /bin/true started by posix_spawn with no sandbox at all. The four
 *      kinds of run are interleaved (run i of each, then run i+1), so that
 *      other work on the machine weighs on them alike.
 *   2. Throughput: M runs of a Python hello world (/box/solution.py run with
 *      /usr/bin/python3 -I, the plugin's default limits and binds) and N
 *      runs of /bin/true, each submitted as one batch to sandbox_pool_run
 *      with 1 and with 2 slots: runs per second, elapsed ms per run, and the
 *      program's own time inside the sandbox (init's wall_us).
 *   3. The same Python hello world and /bin/true started by posix_spawn
 *      without a sandbox, 1 and 2 at a time, so the sandbox's share shows.
 *
 * N defaults to 300 and M to 200 (about half a minute on 2 cores). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pool.h"
#include "sandbox/wire.h"

#ifndef BENCH_SANDBOX_HELPER
#define BENCH_SANDBOX_HELPER "tern-sandbox"
#endif

#define PYTHON "/usr/bin/python3"
#define HELLO "print(\"hello\")\n"

static int failed; /* a run that did not do what it should: exit status 1 */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

/* ---- Figures ------------------------------------------------------------------ */

typedef struct stats {
    double mean, p50, p95, min, max;
} stats;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest rank: the smallest value with at least p of the values at or below it. */
static double pct(const double *sorted, size_t n, double p)
{
    size_t k = (size_t)ceil(p * (double)n);
    return sorted[k ? k - 1 : 0];
}

static stats summarize(double *v, size_t n)
{
    stats s = {0};
    if (n == 0)
        return s;
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    qsort(v, n, sizeof *v, cmp_double);
    s.mean = sum / (double)n;
    s.p50 = pct(v, n, 0.50);
    s.p95 = pct(v, n, 0.95);
    s.min = v[0];
    s.max = v[n - 1];
    return s;
}

static void print_stats(const char *what, stats s, size_t bad)
{
    printf("  %-52s %7.2f %7.2f %7.2f %7.2f %7.2f", what, s.mean, s.p50, s.p95, s.min, s.max);
    if (bad)
        printf("  (%zu runs failed)", bad);
    printf("\n");
}

/* ---- Requests ------------------------------------------------------------------- */

/* What a response should be. */
typedef enum expect {
    EXPECT_TRUE,      /* one step, exited 0 */
    EXPECT_HELLO,     /* one step, exited 0, stdout "hello\n" */
    EXPECT_NO_STEP,   /* no error, no step */
    EXPECT_MALFORMED, /* the helper refused the request */
} expect;

/* 0 when res is what `e` says, else -1 (the first such is printed). */
static int verify(const sandbox_response *res, expect e)
{
    static int told;
    char why[320];
    int ok;
    switch (e) {
    case EXPECT_TRUE:
        ok = sandbox_check_response(res, why, sizeof why) == 0;
        break;
    case EXPECT_HELLO:
        ok = sandbox_check_response(res, why, sizeof why) == 0 && res->steps[0].out_len == 6 &&
             memcmp(res->steps[0].out, "hello\n", 6) == 0;
        if (!ok && !why[0])
            snprintf(why, sizeof why, "stdout was not \"hello\\n\"");
        break;
    case EXPECT_NO_STEP:
        ok = !res->error[0] && res->n_steps == 0;
        snprintf(why, sizeof why, "%s", res->error[0] ? res->error : "an unexpected step result");
        break;
    case EXPECT_MALFORMED:
    default:
        ok = strstr(res->error, "malformed") != NULL;
        snprintf(why, sizeof why, "expected a malformed-request error, got '%s'", res->error);
        break;
    }
    if (!ok) {
        failed = 1;
        if (!told++)
            fprintf(stderr, "bench_sandbox: a run failed: %s\n", why);
    }
    return ok ? 0 : -1;
}

/* The Python hello world with the plugin's default limits and binds. */
static sandbox_request python_request(void)
{
    static char *argv[] = {PYTHON, "-I", "/box/solution.py", NULL};
    static char *binds[3];
    static sandbox_file file = {.name = "solution.py", .mode = 0644,
                                .data = (uint8_t *)HELLO, .len = sizeof HELLO - 1};
    static sandbox_step step = {
        .argc = 3, .argv = argv,
        .limits = {.wall_ms = 5000, .cpu_ms = 5000, .memory_bytes = 512u << 20,
                   .processes = 16, .open_files = 64, .file_bytes = 16u << 20,
                   .output_bytes = 1u << 20},
    };
    static const char *const defaults[] = {"/usr", "/etc/alternatives", "/etc/ld.so.cache"};
    uint32_t nb = 0;
    for (size_t i = 0; i < sizeof defaults / sizeof *defaults; i++)
        if (access(defaults[i], F_OK) == 0)
            binds[nb++] = (char *)defaults[i];
    return (sandbox_request){.tmpfs_bytes = 64u << 20, .n_binds = nb, .binds = binds,
                             .n_files = 1, .files = &file, .n_steps = 1, .steps = &step};
}

/* ---- Through the pool ----------------------------------------------------------- */

/* One run of req through its own sandbox_pool_run: 0, or 1 when it failed.
 * Its ms end to end into *ms, init's wall time of step 0 into *step_ms. */
static size_t one_run(sandbox_pool *pool, const sandbox_request *req, expect e, double *ms,
                      double *step_ms)
{
    size_t bad = 0;
    const sandbox_request *reqs[] = {req};
    sandbox_response res;
    char why[160] = "";
    double t0 = now_ms();
    int rc = sandbox_pool_run(pool, reqs, &res, 1, why, sizeof why);
    *ms = now_ms() - t0;
    if (rc != 0) {
        fprintf(stderr, "bench_sandbox: %s\n", why);
        failed = 1;
        bad = 1;
    } else if (verify(&res, e) != 0) {
        bad = 1;
    }
    *step_ms = res.n_steps ? (double)res.steps[0].wall_us / 1e3 : 0;
    sandbox_response_free(&res);
    return bad;
}

typedef struct batch_figures {
    double elapsed_ms;
    double step_ms_mean; /* init's wall time of the step, mean */
    size_t bad;
} batch_figures;

/* `runs` runs of req as one batch through a pool of `slots`. */
static batch_figures batch(const char *helper, unsigned slots, const sandbox_request *req,
                           expect e, size_t runs)
{
    batch_figures f = {0};
    sandbox_pool *pool = sandbox_pool_create(helper, slots);
    const sandbox_request **reqs = calloc(runs, sizeof *reqs);
    sandbox_response *res = calloc(runs, sizeof *res);
    if (!pool || !reqs || !res) {
        fprintf(stderr, "bench_sandbox: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < runs; i++)
        reqs[i] = req;
    char why[160] = "";
    double t0 = now_ms();
    int rc = sandbox_pool_run(pool, reqs, res, runs, why, sizeof why);
    f.elapsed_ms = now_ms() - t0;
    if (rc != 0) {
        fprintf(stderr, "bench_sandbox: %s\n", why);
        failed = 1;
    }
    double step = 0;
    for (size_t i = 0; i < runs; i++) {
        if (verify(&res[i], e) != 0)
            f.bad++;
        else
            step += (double)res[i].steps[0].wall_us / 1e3;
        sandbox_response_free(&res[i]);
    }
    f.step_ms_mean = runs > f.bad ? step / (double)(runs - f.bad) : 0;
    free(res);
    free(reqs);
    sandbox_pool_destroy(pool);
    return f;
}

/* ---- Without a sandbox ---------------------------------------------------------- */

extern char **environ;

/* The environment a sandboxed program gets (steps.c), so both sides start alike. */
static char *plain_env[] = {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "TMPDIR=/tmp",
                            "LANG=C.UTF-8", NULL};

static pid_t spawn_plain(char *const *argv)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid = -1;
    int e = posix_spawn(&pid, argv[0], &fa, NULL, argv, plain_env);
    posix_spawn_file_actions_destroy(&fa);
    if (e != 0) {
        fprintf(stderr, "bench_sandbox: posix_spawn %s: %s\n", argv[0], strerror(e));
        exit(1);
    }
    return pid;
}

static size_t reap(void)
{
    int st;
    while (wait(&st) < 0)
        if (errno != EINTR) {
            fprintf(stderr, "bench_sandbox: wait: %s\n", strerror(errno));
            exit(1);
        }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        failed = 1;
        return 1;
    }
    return 0;
}

/* One run of argv, timed from spawn to reaped: 0, or 1 when it failed. */
static size_t plain_one(char *const *argv, double *ms)
{
    double t0 = now_ms();
    spawn_plain(argv);
    size_t bad = reap();
    *ms = now_ms() - t0;
    return bad;
}

/* `runs` runs of argv, `slots` at a time: elapsed ms. */
static double plain_batch(char *const *argv, size_t runs, unsigned slots, size_t *bad)
{
    size_t started = 0, active = 0;
    *bad = 0;
    double t0 = now_ms();
    while (started < runs || active > 0) {
        while (started < runs && active < slots) {
            spawn_plain(argv);
            started++;
            active++;
        }
        *bad += reap();
        active--;
    }
    return now_ms() - t0;
}

/* ---- Main ------------------------------------------------------------------------ */

static void usage(void)
{
    fprintf(stderr, "usage: bench_sandbox [--runs N] [--python-runs M] [--helper PATH]\n"
                    "  --runs N         /bin/true runs per figure (default 300)\n"
                    "  --python-runs M  Python hello world runs per figure (default 200)\n"
                    "  --helper PATH    tern-sandbox to run (default %s)\n",
            BENCH_SANDBOX_HELPER);
    exit(2);
}

static size_t count_arg(const char *s)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || end == s || v == 0 || v > 1000000)
        usage();
    return (size_t)v;
}

static void print_batch(const char *what, unsigned slots, size_t runs, batch_figures f)
{
    printf("  %-40s %5u %6zu %9.1f %11.2f %13.2f", what, slots, runs,
           1e3 * (double)runs / f.elapsed_ms, f.elapsed_ms / (double)runs, f.step_ms_mean);
    if (f.bad)
        printf("  (%zu runs failed)", f.bad);
    printf("\n");
}

int main(int argc, char **argv)
{
    size_t runs = 300, py_runs = 200;
    const char *helper = BENCH_SANDBOX_HELPER;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
            runs = count_arg(argv[++i]);
        else if (strcmp(argv[i], "--python-runs") == 0 && i + 1 < argc)
            py_runs = count_arg(argv[++i]);
        else if (strcmp(argv[i], "--helper") == 0 && i + 1 < argc)
            helper = argv[++i];
        else
            usage();
    }

    struct utsname u;
    if (uname(&u) != 0)
        snprintf(u.sysname, sizeof u.sysname, "?");
    printf("bench_sandbox: the code reward's sandbox, per run and per second (figures only)\n");
    printf("machine: %ld CPUs online; %s %s %s\n", sysconf(_SC_NPROCESSORS_ONLN), u.sysname,
           u.release, u.machine);
    printf("helper:  %s (running as uid %u)\n", helper, (unsigned)geteuid());
    /* what else runs here weighs on every figure: say how busy the machine is */
    FILE *la = fopen("/proc/loadavg", "r");
    double load1 = -1;
    if (la) {
        if (fscanf(la, "%lf", &load1) != 1)
            load1 = -1;
        fclose(la);
    }
    if (load1 >= 0)
        printf("load:    %.2f (1-minute load average before the bench: other work shares "
               "the CPUs)\n", load1);

    sandbox_pool *pool = sandbox_pool_create(helper, 1);
    if (!pool) {
        fprintf(stderr, "bench_sandbox: out of memory\n");
        return 1;
    }
    char why[320];
    if (sandbox_pool_check(pool, why, sizeof why) != 0) {
        printf("the sandbox cannot be made here: %s\n", why);
        sandbox_pool_destroy(pool);
        return 1;
    }

    /* 1. overhead per run: the four kinds of run interleaved, run i of each
     * one after the other, so that what else the machine does weighs on all
     * alike (INSIDE comes with FULL: init's timing of its step) */
    enum { FULL, SPAWN, BOX, INSIDE, PLAIN, SERIES };
    double *ms[SERIES];
    size_t bad[SERIES] = {0};
    for (int k = 0; k < SERIES; k++)
        if (!(ms[k] = calloc(runs, sizeof *ms[k]))) {
            fprintf(stderr, "bench_sandbox: out of memory\n");
            return 1;
        }
    const sandbox_request *truth = sandbox_check_request();
    sandbox_step bad_step = {0}; /* argc 0: the helper refuses it once decoded */
    sandbox_request malformed = {.n_steps = 1, .steps = &bad_step};
    sandbox_request no_step = *truth;
    no_step.n_steps = 0;
    char *true_argv[] = {"/bin/true", NULL};
    double ignore;

    /* warm-up: the helper's and the programs' pages in the page cache */
    for (size_t i = 0; i < 20 && i < runs; i++)
        one_run(pool, truth, EXPECT_TRUE, &ms[FULL][0], &ignore);

    for (size_t i = 0; i < runs; i++) {
        bad[FULL] += one_run(pool, truth, EXPECT_TRUE, &ms[FULL][i], &ms[INSIDE][i]);
        bad[SPAWN] += one_run(pool, &malformed, EXPECT_MALFORMED, &ms[SPAWN][i], &ignore);
        bad[BOX] += one_run(pool, &no_step, EXPECT_NO_STEP, &ms[BOX][i], &ignore);
        bad[PLAIN] += plain_one(true_argv, &ms[PLAIN][i]);
    }
    stats st[SERIES];
    for (int k = 0; k < SERIES; k++)
        st[k] = summarize(ms[k], runs);

    printf("\n1. Sandbox overhead per run: 1 slot, %zu runs one after another, "
           "ms per run (end to end)\n", runs);
    printf("  %-52s %7s %7s %7s %7s %7s\n", "what", "mean", "p50", "p95", "min", "max");
    print_stats("/bin/true in a sandbox (binds /usr), ms", st[FULL], bad[FULL]);
    printf("  where the time goes (each series interleaved with the one above):\n");
    print_stats("helper only: spawn+exec+answer, no sandbox, ms", st[SPAWN], bad[SPAWN]);
    print_stats("sandbox with no step (namespaces + root fs), ms", st[BOX], bad[BOX]);
    print_stats("the step as init times it (fork..exit), ms", st[INSIDE], 0);
    print_stats("/bin/true by posix_spawn, no sandbox, ms", st[PLAIN], bad[PLAIN]);
    printf("  => p50s: a run %.2f ms = helper start %.2f + namespaces, root fs, teardown %.2f"
           " + one step %.2f\n",
           st[FULL].p50, st[SPAWN].p50, st[BOX].p50 - st[SPAWN].p50,
           st[FULL].p50 - st[BOX].p50);
    printf("  goal, overhead under 5 ms per run: %s (mean %.2f ms, p50 %.2f ms, p95 %.2f ms)\n",
           st[FULL].mean < 5.0 ? "met" : "NOT met", st[FULL].mean, st[FULL].p50,
           st[FULL].p95);
    for (int k = 0; k < SERIES; k++)
        free(ms[k]);
    sandbox_pool_destroy(pool);

    /* 2. throughput through the pool */
    sandbox_request py = python_request();
    printf("\n2. Throughput through sandbox_pool_run, each line one batch\n");
    printf("  %-40s %5s %6s %9s %11s %13s\n", "what", "slots", "runs", "runs/s",
           "ms/run", "inside ms/run");
    printf("  (ms/run = elapsed / runs; inside = the program's own wall time as init timed it)\n");
    print_batch("Python hello world in a sandbox", 1, py_runs,
                batch(helper, 1, &py, EXPECT_HELLO, py_runs));
    print_batch("Python hello world in a sandbox", 2, py_runs,
                batch(helper, 2, &py, EXPECT_HELLO, py_runs));
    print_batch("/bin/true in a sandbox", 1, runs, batch(helper, 1, truth, EXPECT_TRUE, runs));
    print_batch("/bin/true in a sandbox", 2, runs, batch(helper, 2, truth, EXPECT_TRUE, runs));

    /* 3. the same without a sandbox */
    char dir[] = "/tmp/bench_sandbox.XXXXXX";
    char file[sizeof dir + 16];
    if (!mkdtemp(dir)) {
        fprintf(stderr, "bench_sandbox: mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    snprintf(file, sizeof file, "%s/solution.py", dir);
    FILE *f = fopen(file, "w");
    if (!f || fputs(HELLO, f) == EOF || fclose(f) != 0) {
        fprintf(stderr, "bench_sandbox: %s: %s\n", file, strerror(errno));
        return 1;
    }
    char *py_argv[] = {PYTHON, "-I", file, NULL};
    printf("\n3. The same without a sandbox (posix_spawn, stdout to /dev/null), "
           "N at a time\n");
    printf("  %-40s %5s %6s %9s %11s\n", "what", "N", "runs", "runs/s", "ms/run");
    for (unsigned k = 1; k <= 2; k++) {
        size_t b;
        double el = plain_batch(py_argv, py_runs, k, &b);
        printf("  %-40s %5u %6zu %9.1f %11.2f%s\n", "Python hello world, no sandbox", k,
               py_runs, 1e3 * (double)py_runs / el, el / (double)py_runs,
               b ? "  (runs failed)" : "");
    }
    for (unsigned k = 1; k <= 2; k++) {
        size_t b;
        double el = plain_batch(true_argv, runs, k, &b);
        printf("  %-40s %5u %6zu %9.1f %11.2f%s\n", "/bin/true, no sandbox", k, runs,
               1e3 * (double)runs / el, el / (double)runs, b ? "  (runs failed)" : "");
    }
    unlink(file);
    rmdir(dir);
    if (failed)
        fprintf(stderr, "bench_sandbox: some runs failed (above): the figures are not sound\n");
    return failed ? 1 : 0;
}
