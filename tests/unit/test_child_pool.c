/* test_child_pool.c: many child programs at once (core/src/agent/child_pool.c):
 * their exit codes, stdout and stderr tail, stdin, environment and
 * directory; timeouts, cancel and programs that cannot start as results;
 * their process groups killed, so a grandchild holding a pipe hangs nothing;
 * the concurrency bound, and on_done once per child before its place is
 * reused. */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/child_pool.h"
#include "base/errmsg.h"
#include "tern/abi.h"

#define MAX_KIDS 16

/* What on_done saw. */
typedef struct seen {
    int calls[MAX_KIDS];
    tern_child_result *results;
    const char *dir; /* a file done.<i> made there per call, when set */
} seen;

static void on_done(void *user, size_t i, const tern_child_result *r)
{
    seen *s = user;
    cr_assert_lt(i, MAX_KIDS);
    s->calls[i]++;
    cr_expect_eq(r, &s->results[i], "on_done gets results[i]");
    cr_expect_neq(r->outcome, 0, "child %zu has its outcome when reported", i);
    cr_expect_not_null(r->out);
    cr_expect_not_null(r->err_tail);
    if (s->dir) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/done.%zu", s->dir, i);
        FILE *f = fopen(path, "w");
        cr_assert_not_null(f);
        fclose(f);
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *own_dir(void)
{
    static char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/child_pool_XXXXXX", TERN_TEST_WORK_DIR);
    cr_assert_not_null(mkdtemp(dir));
    return dir;
}

/* specs[0..n) run with `concurrency`, each child reported exactly once;
 * the pool's status. */
static int run_pool(const tern_child_spec *specs, size_t n, uint32_t concurrency,
                    tern_child_result *res, seen *s, const _Atomic int *cancel)
{
    seen local = {{0}, NULL, NULL};
    if (!s)
        s = &local;
    s->results = res;
    int rc = tern_child_pool_run(specs, n, concurrency, res, on_done, s, cancel);
    if (rc == TERN_OK)
        for (size_t i = 0; i < n; i++)
            cr_expect_eq(s->calls[i], 1, "on_done called once for child %zu", i);
    return rc;
}

static void free_all(tern_child_result *res, size_t n)
{
    for (size_t i = 0; i < n; i++)
        tern_child_result_free(&res[i]);
}

/* Whether process pid has ended (gone, or a zombie nobody reaps), within 2 s. */
static int ended(long pid)
{
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    for (int tries = 0; tries < 200; tries++) {
        FILE *f = fopen(path, "r");
        if (!f)
            return 1;
        char *got = fgets(line, sizeof line, f);
        fclose(f);
        const char *paren = got ? strrchr(line, ')') : NULL;
        if (!paren || paren[1] != ' ' || paren[2] == 'Z' || paren[2] == 'X')
            return 1;
        usleep(10000);
    }
    return 0;
}

Test(child_pool, exit_codes_stdout_and_stderr_are_captured)
{
    const char *a[] = {"sh", "-c", "echo hello; exit 3", NULL};
    const char *b[] = {"sh", "-c", "printf abc", NULL};
    const char *c[] = {"sh", "-c", "echo oops >&2; kill -TERM $$", NULL};
    tern_child_spec specs[] = {{.argv = a}, {.argv = b}, {.argv = c}};
    tern_child_result res[3];
    cr_assert_eq(run_pool(specs, 3, 2, res, NULL, NULL), TERN_OK, "%s", tern_error_message());
    cr_expect_eq(res[0].outcome, TERN_CHILD_EXITED);
    cr_expect_eq(res[0].exit_code, 3);
    cr_expect_str_eq(res[0].out, "hello\n");
    cr_expect_eq(res[0].out_len, 6);
    cr_expect_eq(res[0].out_truncated, 0);
    cr_expect_str_eq(res[0].err_tail, "");
    cr_expect_eq(res[1].outcome, TERN_CHILD_EXITED);
    cr_expect_eq(res[1].exit_code, 0);
    cr_expect_str_eq(res[1].out, "abc");
    cr_expect_eq(res[2].outcome, TERN_CHILD_SIGNALED, "a signal not ours");
    cr_expect_eq(res[2].signal, SIGTERM);
    cr_expect_str_eq(res[2].err_tail, "oops\n");
    cr_expect_eq(res[2].err_len, 5);
    for (int i = 0; i < 3; i++)
        cr_expect(res[i].seconds >= 0 && res[i].seconds < 5);
    free_all(res, 3);
}

Test(child_pool, input_is_delivered_on_stdin_and_a_child_not_reading_it_blocks_nothing)
{
    /* more than a pipe holds, so that it goes in pieces as cat drains it */
    size_t big_len = 300000;
    char *big = malloc(big_len + 1);
    cr_assert_not_null(big);
    for (size_t i = 0; i < big_len; i++)
        big[i] = (char)('a' + i % 26);
    big[big_len] = '\0';
    cr_assert_eq(signal(SIGPIPE, SIG_DFL), SIG_DFL, "a SIGPIPE would kill this test");
    const char *cat[] = {"cat", NULL};
    const char *deaf[] = {"sh", "-c", "exit 0", NULL};
    const char *head5[] = {"head", "-c", "5", NULL};
    const char *slow[] = {"sh", "-c", "sleep 0.2; echo late", NULL};
    tern_child_spec specs[] = {
        {.argv = cat, .input = "line1\nline2\n"},
        {.argv = cat, .input = big},
        {.argv = cat},                     /* /dev/null: EOF at once */
        {.argv = cat, .input = ""},
        {.argv = deaf, .input = big},      /* never reads: EPIPE, not our death */
        {.argv = head5, .input = big},     /* reads some, then goes */
        {.argv = slow, .input = big},      /* its pipe full while it sleeps */
    };
    tern_child_result res[7];
    cr_assert_eq(run_pool(specs, 7, 7, res, NULL, NULL), TERN_OK, "%s", tern_error_message());
    cr_expect_str_eq(res[0].out, "line1\nline2\n");
    cr_expect_eq(res[1].out_len, big_len);
    cr_expect(memcmp(res[1].out, big, big_len) == 0, "cat gave back what it was given");
    cr_expect_str_eq(res[2].out, "");
    cr_expect_str_eq(res[3].out, "");
    cr_expect_eq(res[4].outcome, TERN_CHILD_EXITED);
    cr_expect_eq(res[4].exit_code, 0);
    cr_expect_str_eq(res[5].out, "abcde");
    cr_expect_str_eq(res[6].out, "late\n");
    for (int i = 0; i < 7; i++)
        cr_expect_eq(res[i].outcome, TERN_CHILD_EXITED, "child %d", i);
    sigset_t pending;
    sigpending(&pending);
    cr_expect_eq(sigismember(&pending, SIGPIPE), 0, "no SIGPIPE left pending");
    free_all(res, 7);
    free(big);
}

Test(child_pool, env_entries_replace_ours_and_add_new_ones)
{
    cr_assert_eq(setenv("TERN_CP_A", "old", 1), 0);
    cr_assert_eq(setenv("TERN_CP_KEEP", "kept", 1), 0);
    unsetenv("TERN_CP_B");
    const char *argv[] = {"sh", "-c", "echo \"$TERN_CP_A $TERN_CP_B $TERN_CP_KEEP\"; "
                                      "env | grep -c '^TERN_CP_A='", NULL};
    const char *env[] = {"TERN_CP_A=new", "TERN_CP_B=first", "TERN_CP_B=added", NULL};
    tern_child_spec specs[] = {{.argv = argv, .env = env}, {.argv = argv}};
    tern_child_result res[2];
    cr_assert_eq(run_pool(specs, 2, 2, res, NULL, NULL), TERN_OK, "%s", tern_error_message());
    cr_expect_str_eq(res[0].out, "new added kept\n1\n", "replaced once, the last one added");
    cr_expect_str_eq(res[1].out, "old  kept\n1\n", "without env: ours as it is");
    free_all(res, 2);
}

Test(child_pool, cwd_is_honored)
{
    const char *dir = own_dir();
    char real[PATH_MAX], want[PATH_MAX + 2], ours[PATH_MAX], ours_want[PATH_MAX + 2];
    cr_assert_not_null(realpath(dir, real));
    cr_assert_not_null(getcwd(ours, sizeof ours));
    cr_assert_not_null(realpath(ours, ours_want));
    snprintf(want, sizeof want, "%s\n", real);
    strcat(ours_want, "\n");
    const char *pwd[] = {"sh", "-c", "pwd -P", NULL};
    tern_child_spec specs[] = {{.argv = pwd, .cwd = dir}, {.argv = pwd}};
    tern_child_result res[2];
    cr_assert_eq(run_pool(specs, 2, 1, res, NULL, NULL), TERN_OK, "%s", tern_error_message());
    cr_expect_str_eq(res[0].out, want);
    cr_expect_str_eq(res[1].out, ours_want, "NULL: our directory");
    free_all(res, 2);
}

Test(child_pool, stderr_keeps_only_its_last_bytes)
{
    /* 300 lines of 16 bytes, one write each: the last 256 lines are 4096 bytes */
    const char *argv[] = {"sh", "-c", "i=0; while [ $i -lt 300 ]; do printf '%04d-----------\\n' "
                                      "$i >&2; i=$((i+1)); done; echo out", NULL};
    tern_child_spec specs[] = {{.argv = argv}};
    tern_child_result res[1];
    cr_assert_eq(run_pool(specs, 1, 1, res, NULL, NULL), TERN_OK, "%s", tern_error_message());
    cr_assert_eq(res[0].err_len, TERN_CHILD_ERR_TAIL);
    cr_expect_eq(strlen(res[0].err_tail), TERN_CHILD_ERR_TAIL);
    cr_expect(strncmp(res[0].err_tail, "0044-----------\n", 16) == 0, "starts at line 44: %.16s",
              res[0].err_tail);
    cr_expect_str_eq(res[0].err_tail + TERN_CHILD_ERR_TAIL - 16, "0299-----------\n");
    cr_expect_str_eq(res[0].out, "out\n");
    free_all(res, 1);
}

Test(child_pool, stdout_past_1_mib_is_dropped_and_the_child_goes_on)
{
    const char *over[] = {"sh", "-c", "yes | head -c 3000000; echo done >&2", NULL};
    const char *exact[] = {"sh", "-c", "yes | head -c 1048576", NULL};
    tern_child_spec specs[] = {{.argv = over}, {.argv = exact}};
    tern_child_result res[2];
    double t0 = now_s();
    cr_assert_eq(run_pool(specs, 2, 2, res, NULL, NULL), TERN_OK, "%s", tern_error_message());
    cr_expect_lt(now_s() - t0, 10.0);
    cr_expect_eq(res[0].outcome, TERN_CHILD_EXITED);
    cr_expect_eq(res[0].exit_code, 0);
    cr_expect_eq(res[0].out_len, TERN_CHILD_OUT_MAX);
    cr_expect_eq(res[0].out_truncated, 1);
    cr_expect_eq(res[0].out[TERN_CHILD_OUT_MAX], '\0');
    cr_expect(res[0].out[0] == 'y' && res[0].out[1] == '\n' &&
              res[0].out[TERN_CHILD_OUT_MAX - 2] == 'y', "the first bytes are kept");
    cr_expect_str_eq(res[0].err_tail, "done\n", "it ran to its end");
    cr_expect_eq(res[1].out_len, TERN_CHILD_OUT_MAX);
    cr_expect_eq(res[1].out_truncated, 0, "exactly the limit is not truncated");
    free_all(res, 2);
}

Test(child_pool, a_timeout_kills_the_child_and_its_group)
{
    const char *sleeper[] = {"sleep", "30", NULL};
    /* its background sleep prints its pid, then both sleep */
    const char *family[] = {"sh", "-c", "sleep 30 & echo $!; sleep 30", NULL};
    const char *quick[] = {"sh", "-c", "echo quick", NULL};
    tern_child_spec specs[] = {{.argv = sleeper, .timeout_s = 0.3},
                               {.argv = family, .timeout_s = 1.0}, /* time to echo */
                               {.argv = quick, .timeout_s = 20}};
    tern_child_result res[3];
    double t0 = now_s();
    cr_assert_eq(run_pool(specs, 3, 3, res, NULL, NULL), TERN_OK, "%s", tern_error_message());
    cr_expect_lt(now_s() - t0, 5.0);
    cr_expect_eq(res[0].outcome, TERN_CHILD_TIMED_OUT);
    cr_expect_eq(res[0].signal, SIGKILL);
    cr_expect(res[0].seconds >= 0.25 && res[0].seconds < 5, "%g s", res[0].seconds);
    cr_expect_eq(res[1].outcome, TERN_CHILD_TIMED_OUT);
    long grandchild = strtol(res[1].out, NULL, 10);
    cr_assert_gt(grandchild, 1, "its background pid: \"%s\"", res[1].out);
    cr_expect(ended(grandchild), "the grandchild went with its group");
    cr_expect_eq(res[2].outcome, TERN_CHILD_EXITED, "no timeout before its own");
    cr_expect_str_eq(res[2].out, "quick\n");
    free_all(res, 3);
}

Test(child_pool, a_grandchild_holding_the_pipes_hangs_nothing)
{
    const char *argv[] = {"sh", "-c", "sleep 30 & echo $!; echo hi >&2", NULL};
    tern_child_spec specs[] = {{.argv = argv}};
    tern_child_result res[1];
    double t0 = now_s();
    cr_assert_eq(run_pool(specs, 1, 1, res, NULL, NULL), TERN_OK, "%s", tern_error_message());
    cr_expect_lt(now_s() - t0, 5.0);
    cr_expect_eq(res[0].outcome, TERN_CHILD_EXITED);
    cr_expect_eq(res[0].exit_code, 0);
    cr_expect_str_eq(res[0].err_tail, "hi\n");
    long grandchild = strtol(res[0].out, NULL, 10);
    cr_assert_gt(grandchild, 1, "its background pid: \"%s\"", res[0].out);
    cr_expect(ended(grandchild), "what it left running was killed");
    free_all(res, 1);
}

Test(child_pool, no_more_than_concurrency_children_are_alive)
{
    /* each counts the children alive (their files) while it is: never more
     * than 2, since a file goes before its child ends */
    const char *dir = own_dir();
    const char *script = "touch alive.$0; sleep 0.2; ls alive.* | wc -l; rm alive.$0";
    char names[6][8];
    const char *argv[6][5];
    tern_child_spec specs[6];
    for (int i = 0; i < 6; i++) {
        snprintf(names[i], sizeof names[i], "%d", i);
        argv[i][0] = "sh", argv[i][1] = "-c", argv[i][2] = script, argv[i][3] = names[i];
        argv[i][4] = NULL;
        specs[i] = (tern_child_spec){.argv = argv[i], .cwd = dir};
    }
    tern_child_result res[6];
    cr_assert_eq(run_pool(specs, 6, 2, res, NULL, NULL), TERN_OK, "%s", tern_error_message());
    for (int i = 0; i < 6; i++) {
        cr_expect_eq(res[i].outcome, TERN_CHILD_EXITED);
        long alive = strtol(res[i].out, NULL, 10);
        cr_expect(alive >= 1 && alive <= 2, "child %d saw %ld alive", i, alive);
    }
    free_all(res, 6);
}

Test(child_pool, on_done_comes_before_the_next_child_starts_in_its_place)
{
    /* one at a time: child i sees the done.* files of the i before it */
    const char *dir = own_dir();
    const char *argv[] = {"sh", "-c", "ls | grep -c '^done\\.'", NULL};
    tern_child_spec specs[5];
    for (int i = 0; i < 5; i++)
        specs[i] = (tern_child_spec){.argv = argv, .cwd = dir};
    tern_child_result res[5];
    seen s = {{0}, NULL, dir};
    cr_assert_eq(run_pool(specs, 5, 1, res, &s, NULL), TERN_OK, "%s", tern_error_message());
    for (int i = 0; i < 5; i++)
        cr_expect_eq(strtol(res[i].out, NULL, 10), i, "child %d saw \"%s\"", i, res[i].out);
    free_all(res, 5);
}

Test(child_pool, a_program_that_cannot_start_is_a_result)
{
    const char *missing[] = {"tern-no-such-program-anywhere", NULL};
    const char *missing_path[] = {"/nonexistent/tern-no-such-program", NULL};
    const char *ok[] = {"sh", "-c", "echo ok", NULL};
    tern_child_spec specs[] = {{.argv = missing}, {.argv = ok}, {.argv = missing_path},
                               {.argv = ok, .cwd = "/nonexistent/tern-no-such-dir"}};
    tern_child_result res[4];
    cr_assert_eq(run_pool(specs, 4, 1, res, NULL, NULL), TERN_OK, "%s", tern_error_message());
    cr_expect_eq(res[0].outcome, TERN_CHILD_SPAWN_FAILED);
    cr_expect_eq(res[0].spawn_errno, ENOENT);
    cr_expect_str_eq(res[0].out, "");
    cr_expect_eq(res[1].outcome, TERN_CHILD_EXITED, "the pool went on");
    cr_expect_str_eq(res[1].out, "ok\n");
    cr_expect_eq(res[2].outcome, TERN_CHILD_SPAWN_FAILED);
    cr_expect_eq(res[2].spawn_errno, ENOENT);
    cr_expect_eq(res[3].outcome, TERN_CHILD_SPAWN_FAILED, "its directory is missing");
    cr_expect_neq(res[3].spawn_errno, 0);
    free_all(res, 4);
}

/* Sets the cancel once children 1 and 2 are running (their files made). */
typedef struct canceller {
    _Atomic int cancel;
    const char *dir;
} canceller;

static void *cancel_when_running(void *arg)
{
    canceller *c = arg;
    char one[PATH_MAX], two[PATH_MAX];
    snprintf(one, sizeof one, "%s/running.1", c->dir);
    snprintf(two, sizeof two, "%s/running.2", c->dir);
    for (int tries = 0; tries < 500 && (access(one, F_OK) || access(two, F_OK)); tries++)
        usleep(10000);
    atomic_store(&c->cancel, 1);
    return NULL;
}

Test(child_pool, cancel_kills_the_running_and_starts_no_more)
{
    canceller cc = {0, own_dir()};
    const char *quick[] = {"sh", "-c", "echo quick", NULL};
    const char *script = "touch running.$0; exec sleep 30";
    const char *s1[] = {"sh", "-c", script, "1", NULL}, *s2[] = {"sh", "-c", script, "2", NULL};
    const char *sleeper[] = {"sleep", "30", NULL};
    tern_child_spec specs[] = {{.argv = quick},
                               {.argv = s1, .cwd = cc.dir},
                               {.argv = s2, .cwd = cc.dir},
                               {.argv = sleeper},
                               {.argv = sleeper},
                               {.argv = sleeper}};
    tern_child_result res[6];
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, cancel_when_running, &cc), 0);
    double t0 = now_s();
    int rc = run_pool(specs, 6, 2, res, NULL, &cc.cancel);
    double took = now_s() - t0;
    pthread_join(t, NULL);
    cr_assert_eq(rc, TERN_OK, "%s", tern_error_message());
    cr_expect_lt(took, 8.0);
    /* 2 started once 0 had ended, so 1 and 2 were running at the cancel */
    cr_expect_eq(res[0].outcome, TERN_CHILD_EXITED, "it ended before the cancel");
    cr_expect_str_eq(res[0].out, "quick\n");
    for (int i = 1; i <= 2; i++) {
        cr_expect_eq(res[i].outcome, TERN_CHILD_CANCELLED, "child %d", i);
        cr_expect_eq(res[i].signal, SIGKILL, "child %d was killed", i);
        cr_expect_gt(res[i].seconds, 0, "child %d ran", i);
    }
    for (int i = 3; i < 6; i++) {
        cr_expect_eq(res[i].outcome, TERN_CHILD_CANCELLED, "child %d", i);
        cr_expect_eq(res[i].seconds, 0, "child %d never started", i);
        cr_expect_eq(res[i].signal, 0);
    }
    free_all(res, 6);
}

Test(child_pool, cancelled_before_the_run_starts_nothing)
{
    const char *dir = own_dir();
    const char *argv[] = {"touch", "started", NULL};
    tern_child_spec specs[] = {{.argv = argv, .cwd = dir}, {.argv = argv, .cwd = dir}};
    tern_child_result res[2];
    _Atomic int cancel = 1;
    cr_assert_eq(run_pool(specs, 2, 2, res, NULL, &cancel), TERN_OK, "%s", tern_error_message());
    for (int i = 0; i < 2; i++)
        cr_expect_eq(res[i].outcome, TERN_CHILD_CANCELLED);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/started", dir);
    cr_expect_neq(access(path, F_OK), 0, "nothing ran");
    free_all(res, 2);
}

Test(child_pool, bad_arguments_are_refused_before_anything_starts)
{
    const char *ok[] = {"true", NULL};
    const char *none[] = {NULL};
    const char *bad_env[] = {"NOEQUALS", NULL};
    tern_child_spec specs[] = {{.argv = ok}, {.argv = none}};
    tern_child_result res[2];
    cr_expect_eq(tern_child_pool_run(specs, 2, 1, res, NULL, NULL, NULL), TERN_EINVAL);
    cr_expect(strstr(tern_error_message(), "child 1") != NULL, "%s", tern_error_message());
    cr_expect_eq(res[0].outcome, 0, "nothing started");
    specs[1] = (tern_child_spec){.argv = ok, .env = bad_env};
    cr_expect_eq(tern_child_pool_run(specs, 2, 1, res, NULL, NULL, NULL), TERN_EINVAL);
    cr_expect(strstr(tern_error_message(), "NOEQUALS") != NULL, "%s", tern_error_message());
    cr_expect_eq(tern_child_pool_run(specs, 1, 0, res, NULL, NULL, NULL), TERN_EINVAL,
                 "a concurrency of 0");
    cr_expect_eq(tern_child_pool_run(NULL, 0, 1, NULL, NULL, NULL, NULL), TERN_OK,
                 "nothing to run");
    free_all(res, 2);
}
