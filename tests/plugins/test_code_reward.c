/* test_code_reward.c: the `code` reward plugin through its ops table
 * (harness.h), with real sandboxes:
 *   - tests/corpora/code.jsonl: correct, wrong, crashing and slow programs in
 *     Python and C, function tests, extraction, malformed tasks;
 *   - tests/corpora/code_hostile.jsonl: programs that try to get out (fork
 *     and memory bombs, daemons, files outside, a server on 127.0.0.1, ptrace,
 *     namespaces, huge output, a full /tmp, reward hacks), each contained and
 *     reported, with nothing left running, the server never reached, the
 *     secret never read and nothing written outside;
 *   - scoring, bad settings, two batches at once.
 * Each corpus is scored as one batch, so the pool runs its sandboxes side by
 * side. The corpora are made by tests/corpora/make_code_corpora.py.
 *
 * Where this machine cannot make sandboxes (no user namespaces) the tests
 * say so and skip, except under CI=true, where that is a failure. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/errmsg.h"
#include "harness.h"
#include "reward_case.h"
#include "data/task.h"
#include "tern/reward.h"

#define WORK TERN_TEST_WORK_DIR "/code_reward"
/* short limits keep the suite quick, with room for a loaded machine (the
 * suite runs two tests at a time, under sanitizers too) */
#define LIMITS "time_ms = 3000; memory_mb = 256; tmpfs_mb = 32;"
#define SETTINGS LIMITS "pool = 2;"

static void open_code(harness *h, const char *settings)
{
    int rc = harness_open(h, "code", TERN_KIND_REWARD, settings);
    if (rc != TERN_OK && strstr(h->error, "cannot run sandboxes here")) {
        const char *ci = getenv("CI");
        if (ci && strcmp(ci, "true") == 0)
            cr_assert_fail("CI must be able to make sandboxes: %s", h->error);
        harness_close(h);
        cr_skip_test("this machine cannot make sandboxes: %s", h->error);
    }
    cr_assert_eq(rc, TERN_OK, "%s: %s", settings, h->error);
}

/* ---- Corpora ---------------------------------------------------------------------- */

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *s = malloc((size_t)n + 1);
    cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = '\0';
    fclose(f);
    return s;
}

/* s with every `from` replaced by `to` (a new string; s is freed). */
static char *replace(char *s, const char *from, const char *to)
{
    size_t fl = strlen(from), tl = strlen(to), count = 0;
    for (char *p = strstr(s, from); p; p = strstr(p + fl, from))
        count++;
    char *out = malloc(strlen(s) + count * (tl > fl ? tl - fl : 0) + 1), *o = out;
    const char *p = s;
    for (const char *q; (q = strstr(p, from)); p = q + fl) {
        memcpy(o, p, (size_t)(q - p));
        o += q - p;
        memcpy(o, to, tl);
        o += tl;
    }
    strcpy(o, p);
    free(s);
    return out;
}

typedef struct corpus {
    size_t n;
    tern_task *tasks[128];
    char *ids[128];
} corpus;

/* Scores every line of `text` (one batch) and checks each against its
 * "expect" and "reason"; returns the number of misses. */
static size_t score_corpus(harness *h, const char *name, char *text)
{
    corpus c = {0};
    tern_reward_item items[128];
    tern_reward_result res[128];
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        cr_assert_lt(c.n, 128);
        char where[64];
        snprintf(where, sizeof where, "%s:%zu", name, c.n + 1);
        cr_assert_eq(tern_task_parse(line, strlen(line), where, &c.tasks[c.n]), TERN_OK, "%s",
                     tern_error_message());
        const char *response = tern_task_string(c.tasks[c.n], "response");
        cr_assert_not_null(response);
        items[c.n] = (tern_reward_item){.size = sizeof items[0], .task = c.tasks[c.n],
                                        .response = response, .response_len = strlen(response)};
        memset(&res[c.n], 0, sizeof res[0]);
        res[c.n].size = sizeof res[0];
        c.n++;
    }
    const tern_reward_ops *ops = harness_ops(h);
    tern_error_clear();
    cr_assert_eq(ops->score(h->state, items, res, c.n), TERN_OK, "%s", tern_error_message());
    size_t misses = 0;
    for (size_t i = 0; i < c.n; i++) {
        double expect = -1;
        cr_assert_eq(tern_task_number(c.tasks[i], "expect", &expect), TERN_OK);
        const char *reason = tern_task_string(c.tasks[i], "reason");
        const char *id = tern_task_string(c.tasks[i], "id");
        int ok = fabs(res[i].reward - expect) <= 1e-6 && reason && strstr(res[i].reason, reason);
        if (!ok) {
            misses++;
            fprintf(stderr, "%s: %s: reward %g (%s), expected %g with \"%s\"\n", name, id,
                    res[i].reward, res[i].reason, expect, reason ? reason : "?");
        }
        tern_task_free(c.tasks[i]);
    }
    printf("%s: %zu/%zu right\n", name, c.n - misses, c.n);
    return misses;
}

Test(code_reward, corpus)
{
    harness h;
    open_code(&h, SETTINGS);
    char *text = read_file(TERN_TEST_SOURCE_DIR "/tests/corpora/code.jsonl");
    size_t misses = score_corpus(&h, "code.jsonl", text);
    cr_expect_eq(misses, 0, "%zu cases of code.jsonl went wrong (listed above)", misses);
    free(text);
    harness_close(&h);
}

/* ---- The hostile corpus ------------------------------------------------------------ */

typedef struct server {
    int fd, port;
    volatile int accepted, stop;
    pthread_t thread;
} server;

static void *serve(void *arg)
{
    server *s = arg;
    while (!s->stop) {
        int c = accept(s->fd, NULL, NULL);
        if (c >= 0) {
            s->accepted++;
            close(c);
        } else {
            usleep(10000);
        }
    }
    return NULL;
}

static void server_start(server *s)
{
    s->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    cr_assert_geq(s->fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert_eq(bind(s->fd, (struct sockaddr *)&a, sizeof a), 0);
    cr_assert_eq(listen(s->fd, 16), 0);
    socklen_t len = sizeof a;
    getsockname(s->fd, (struct sockaddr *)&a, &len);
    s->port = ntohs(a.sin_port);
    pthread_create(&s->thread, NULL, serve, s);
}

/* Processes whose command line holds `word`, and among those started as a
 * sandboxed program (/box/...), the ones that stay for half a second: a run
 * of another test may pass by, a leftover does not. */
static int count_with(const char *word)
{
    int n = 0;
    DIR *d = opendir("/proc");
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9' || atoi(e->d_name) == getpid())
            continue;
        char path[300], buf[4096];
        snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
        int fd = open(path, O_RDONLY);
        if (fd < 0)
            continue;
        ssize_t len = read(fd, buf, sizeof buf - 1);
        close(fd);
        for (ssize_t i = 0; i < len; i++)
            if (buf[i] == '\0')
                buf[i] = ' ';
        if (len > 0) {
            buf[len] = '\0';
            n += strstr(buf, word) != NULL;
        }
    }
    if (d)
        closedir(d);
    return n;
}

Test(code_reward, hostile_corpus_is_contained)
{
    harness h;
    /* one run at a time: without cgroups a fork bomb takes every core it
     * can until its time limit (docs/sandbox.md), and a run beside it would
     * be judged on a starved machine */
    open_code(&h, LIMITS "pool = 1;");
    mkdir(WORK, 0755);
    const char *secret = WORK "/secret.txt", *outside = WORK "/outside.txt";
    FILE *f = fopen(secret, "w");
    cr_assert_not_null(f);
    fputs("TERN-SECRET-7f3a\n", f);
    fclose(f);
    chmod(secret, 0644); /* readable by anyone on the host: only the sandbox keeps it out */
    unlink(outside);
    server srv = {0};
    server_start(&srv);

    char port[16], mark[32], pid[24];
    snprintf(port, sizeof port, "%d", srv.port);
    snprintf(mark, sizeof mark, "ternmark%d", (int)getpid());
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    char *text = read_file(TERN_TEST_SOURCE_DIR "/tests/corpora/code_hostile.jsonl");
    text = replace(text, "@SECRET@", secret);
    text = replace(text, "@OUTSIDE@", outside);
    text = replace(text, "@PORT@", port);
    text = replace(text, "@MARK@", mark);
    text = replace(text, "@TERNPID@", pid);
    size_t misses = score_corpus(&h, "code_hostile.jsonl", text);
    free(text);

    srv.stop = 1;
    pthread_join(srv.thread, NULL);
    close(srv.fd);
    cr_expect_eq(misses, 0, "%zu hostile programs were not contained as expected (above)",
                 misses);
    cr_expect_eq(srv.accepted, 0, "the server on 127.0.0.1 was reached %d times", srv.accepted);
    cr_expect_neq(access(outside, F_OK), 0, "a program wrote %s", outside);
    cr_expect_eq(count_with(mark), 0, "a daemonised child outlived its run");
    /* fork bombs and the like: a sandboxed program still alive half a
     * second after scoring ended is a leftover */
    int first = count_with("/box/");
    usleep(500000);
    int second = count_with("/box/");
    cr_expect(first == 0 || second == 0, "sandboxed processes outlived their runs (%d, then %d)",
              first, second);
    harness_close(&h);
}

/* ---- Scoring and settings ---------------------------------------------------------- */

static tern_reward_result score_one(const harness *h, const char *task_json,
                                    const char *response)
{
    tern_task *t = reward_task_of(task_json);
    tern_reward_result r = reward_score_bytes(h, t, response, strlen(response));
    tern_task_free(t);
    return r;
}

#define TWO_CASES "{\"language\":\"python\",\"tests\":[{\"stdin\":\"1\",\"stdout\":\"2\"}," \
                  "{\"stdin\":\"2\",\"stdout\":\"4\"}]}"
#define PLUS_ONE "```python\nprint(int(input()) + 1)\n```"

Test(code_reward, scoring_all_or_fraction)
{
    harness h;
    open_code(&h, SETTINGS);
    tern_reward_result r = score_one(&h, TWO_CASES, PLUS_ONE);
    cr_expect_float_eq(r.reward, 0.5, 1e-9, "%s", r.reason);
    cr_expect_eq(r.n_components, 2);
    cr_expect_float_eq(reward_component(&r, "accuracy"), 0.0, 1e-9);
    cr_expect_float_eq(reward_component(&r, "pass_rate"), 0.5, 1e-9);
    harness_close(&h);

    open_code(&h, SETTINGS "scoring = \"all\";");
    r = score_one(&h, TWO_CASES, PLUS_ONE);
    cr_expect_float_eq(r.reward, 0.0, 1e-9, "%s", r.reason);
    r = score_one(&h, TWO_CASES, "```python\nprint(int(input()) * 2)\n```");
    cr_expect_float_eq(r.reward, 1.0, 1e-9, "%s", r.reason);
    harness_close(&h);
}

Test(code_reward, unfenced_and_default_language)
{
    harness h;
    open_code(&h, SETTINGS "unfenced = true; language = \"c\";");
    const char *task = "{\"tests\":[{\"stdin\":\"\",\"stdout\":\"7\"}]}";
    tern_reward_result r = score_one(&h, task, "#include <stdio.h>\nint main(void) { puts(\"7\"); }");
    cr_expect_float_eq(r.reward, 1.0, 1e-9, "%s", r.reason);
    harness_close(&h);
    open_code(&h, SETTINGS);
    r = score_one(&h, task, "print(7)");
    cr_expect_float_eq(r.reward, 0.0, 1e-9, "%s", r.reason);
    cr_expect(strstr(r.reason, "no program"), "%s", r.reason);
    harness_close(&h);
}

static void *score_in_thread(void *arg)
{
    harness *h = arg;
    int ok = 1;
    for (int i = 0; i < 3; i++) {
        tern_reward_result r = score_one(h, TWO_CASES, "```python\nprint(int(input()) * 2)\n```");
        ok &= fabs(r.reward - 1.0) < 1e-9;
    }
    return (void *)(intptr_t)ok;
}

Test(code_reward, two_batches_at_once_share_the_pool)
{
    harness h;
    open_code(&h, LIMITS "pool = 1;");
    pthread_t a, b;
    pthread_create(&a, NULL, score_in_thread, &h);
    pthread_create(&b, NULL, score_in_thread, &h);
    void *ra, *rb;
    pthread_join(a, &ra);
    pthread_join(b, &rb);
    cr_expect(ra && rb, "a batch scored beside another went wrong");
    harness_close(&h);
}

static void expect_refused(const char *settings, const char *words)
{
    harness h;
    int rc = harness_open(&h, "code", TERN_KIND_REWARD, settings);
    cr_expect_neq(rc, TERN_OK, "%s was accepted", settings);
    cr_expect(strstr(h.error, words), "%s: the message '%s' lacks '%s'", settings, h.error, words);
    harness_close(&h);
}

Test(code_reward, bad_settings_are_refused)
{
    mkdir(WORK, 0755);
    /* an interpreter the sandbox would not see */
    const char *fake = WORK "/python3";
    FILE *f = fopen(fake, "w");
    cr_assert_not_null(f);
    fputs("#!/bin/sh\n", f);
    fclose(f);
    chmod(fake, 0755);
    expect_refused("python = \"" WORK "/python3\";", "add its folder to `binds`");
    expect_refused("python = \"/usr/bin/no-such-python\";", "No such file");
    expect_refused("python = \"python3\";", "not an absolute path");
    expect_refused("c_compiler = \"/usr/bin/no-such-cc\";", "c_compiler");
    expect_refused("binds = [\"/tmp/x\"];", "/tmp is the sandbox's own");
    expect_refused("binds = [\"relative\"];", "not a plain absolute path");
    expect_refused("binds = [\"/usr/../root\"];", "not a plain absolute path");
    expect_refused("binds = [\"/no/such/dir\"];", "No such file");
    expect_refused("helper = \"/no/such/tern-sandbox\";", "tern-sandbox");
    expect_refused("scoring = \"most\";", "scoring");
    expect_refused("time_ms = 0;", "time_ms");
}
