/* bench_rewards.c: verdicts per second of each reward plugin on its own test
 * corpus (tests/corpora/PLUGIN.jsonl: every kind of case, the hard ones
 * included), through the same routing a run uses (reward/rewarder.h).
 * Figures only, no pass/fail.
 *
 *   bench_rewards [--seconds S] [PLUGIN...]
 *
 * For each plugin (default: math, k12, vision, format), batches of 64 cases
 * cycle through the corpus for about S seconds (default 2) in three ways:
 *   1 thread     in process, one core: verdicts per second per core
 *   2 threads    in process, two threads scoring at once (the plugin's
 *                TERN_CAP_THREAD_SAFE lets them; without it the core
 *                serialises them and the figure shows it)
 *   isolated     `isolate = true`: the plugin in a worker process, one
 *                response per call; the last column is what isolation adds
 *                per response (microseconds).
 *
 *   bench_rewards [--seconds S] length
 *
 * compares one reward written three ways (examples/length-target/): the C
 * plugin in process and isolated, the Python function (`python` reward)
 * and the exec command (`exec` reward), one thread, on the math corpus's
 * responses. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/errmsg.h"
#include "reward/rewarder.h"
#include "host/session.h"
#include "data/task.h"

#define BATCH 64

typedef struct corpus {
    tern_task **tasks;
    const char **texts;
    size_t n;
} corpus;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int load_corpus(const char *plugin, corpus *c)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/corpora/%s.jsonl", TERN_TEST_SOURCE_DIR, plugin);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "bench_rewards: %s: cannot open (is %s a reward with a corpus?)\n", path,
                plugin);
        return -1;
    }
    memset(c, 0, sizeof *c);
    char *line = NULL;
    size_t cap = 0, alloc = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, f)) > 0) {
        tern_task *t = NULL;
        if (tern_task_parse(line, (size_t)len, path, &t) != TERN_OK)
            continue;
        const char *resp = tern_task_string(t, "response");
        if (!resp) {
            tern_task_free(t);
            continue;
        }
        if (c->n == alloc) {
            alloc = alloc ? 2 * alloc : 256;
            c->tasks = realloc(c->tasks, alloc * sizeof *c->tasks);
            c->texts = realloc(c->texts, alloc * sizeof *c->texts);
            if (!c->tasks || !c->texts) {
                fprintf(stderr, "bench_rewards: out of memory\n");
                exit(1);
            }
        }
        c->tasks[c->n] = t;
        c->texts[c->n++] = resp;
    }
    free(line);
    fclose(f);
    return c->n ? 0 : -1;
}

static void free_corpus(corpus *c)
{
    for (size_t i = 0; i < c->n; i++)
        tern_task_free(c->tasks[i]);
    free(c->tasks);
    free(c->texts);
}

typedef struct job {
    tern_rewarder *rw;
    const corpus *c;
    double seconds;
    size_t offset;
    unsigned long long verdicts, failures;
} job;

static void *score_loop(void *arg)
{
    job *j = arg;
    const tern_task *tasks[BATCH];
    const char *texts[BATCH];
    uint32_t ntok[BATCH] = {0};
    tern_verdict *v = calloc(BATCH, sizeof *v);
    if (!v)
        return NULL;
    double t0 = now_s();
    size_t at = j->offset;
    while (now_s() - t0 < j->seconds) {
        for (int k = 0; k < BATCH; k++, at++) {
            tasks[k] = j->c->tasks[at % j->c->n];
            texts[k] = j->c->texts[at % j->c->n];
        }
        uint64_t failures = 0;
        if (tern_rewarder_score(j->rw, tasks, texts, ntok, BATCH, v, &failures, NULL) != TERN_OK)
            break;
        j->verdicts += BATCH;
        j->failures += failures;
    }
    j->seconds = now_s() - t0;
    free(v);
    return NULL;
}

/* Verdicts per second with `threads` threads, or -1. */
static double measure(const char *plugin, const char *extra, int isolate, int threads,
                      const corpus *c, double seconds)
{
    char text[2048];
    snprintf(text, sizeof text,
             "plugin_path = [ \"%s\", \"%s\" ];\nrewards = ( { plugin = \"%s\"; domain = "
             "\"*\"; isolate = %s; %s } );\n",
             TERN_TEST_PLUGIN_DIR, BENCH_PLUGIN_DIR, plugin, isolate ? "true" : "false", extra);
    tern_session s;
    tern_diag d;
    tern_diag_init(&d);
    int rc = tern_session_open_text(&s, text, "bench_rewards", 1, &d);
    for (size_t i = 0; i < d.n; i++)
        fprintf(stderr, "bench_rewards: %s\n", d.msgs[i]);
    tern_diag_free(&d);
    tern_rewarder rw = {0};
    double rate = -1;
    if (rc == TERN_OK && (rc = tern_rewarder_open(&rw, &s)) == TERN_OK && rw.n == 1) {
        rw.routes[0].domain = NULL;
        job jobs[2];
        pthread_t th[2];
        for (int t = 0; t < threads; t++) {
            jobs[t] = (job){.rw = &rw, .c = c, .seconds = seconds, .offset = (size_t)t * 7};
            pthread_create(&th[t], NULL, score_loop, &jobs[t]);
        }
        double total = 0, secs = 0;
        for (int t = 0; t < threads; t++) {
            pthread_join(th[t], NULL);
            total += (double)jobs[t].verdicts;
            secs = jobs[t].seconds > secs ? jobs[t].seconds : secs;
            if (jobs[t].failures)
                fprintf(stderr, "bench_rewards: %s: %llu failures\n", plugin, jobs[t].failures);
        }
        rate = total / secs;
    } else if (rc != TERN_OK) {
        fprintf(stderr, "bench_rewards: %s: %s\n", plugin, tern_error_message());
    }
    tern_rewarder_close(&rw);
    tern_session_close(&s);
    return rate;
}

/* The length-target reward as a C plugin, a Python function and an exec
 * command: verdicts per second, one thread, and each one's ratio to C. */
static int length_three_ways(double seconds)
{
    corpus c;
    if (load_corpus("math", &c) != 0)
        return 1;
    char py[1200], ex[1200];
    snprintf(py, sizeof py, "file = \"%s/examples/length-target/length_target.py\";",
             TERN_TEST_SOURCE_DIR);
    snprintf(ex, sizeof ex, "command = [ \"python3\", \"%s/examples/length-target/"
             "length_target_exec.py\" ];", TERN_TEST_SOURCE_DIR);
    struct {
        const char *what, *plugin, *extra;
        int isolate;
    } ways[] = {{"C plugin, in process", "length_target", "", 0},
                {"C plugin, isolate = true", "length_target", "", 1},
                {"python (a Python function)", "python", py, 0},
                {"exec (a Python command)", "exec", ex, 0}};
    printf("the length-target reward on %zu responses, one thread\n", c.n);
    printf("%-28s %14s %10s %14s\n", "written as", "verdicts/s", "vs C", "us/verdict");
    double base = 0;
    for (size_t i = 0; i < sizeof ways / sizeof *ways; i++) {
        double rate = measure(ways[i].plugin, ways[i].extra, ways[i].isolate, 1, &c, seconds);
        if (i == 0)
            base = rate;
        printf("%-28s %14.0f %9.3fx %14.2f\n", ways[i].what, rate,
               base > 0 && rate > 0 ? rate / base : 0, rate > 0 ? 1e6 / rate : 0);
        fflush(stdout);
    }
    free_corpus(&c);
    return 0;
}

int main(int argc, char **argv)
{
    double seconds = 2;
    const char *plugins[16];
    int n = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
            seconds = atof(argv[++i]);
        else if (n < 16)
            plugins[n++] = argv[i];
    }
    if (n == 0) {
        plugins[n++] = "math";
        plugins[n++] = "k12";
        plugins[n++] = "vision";
        plugins[n++] = "format";
    }
    if (n == 1 && strcmp(plugins[0], "length") == 0)
        return length_three_ways(seconds);
    char vision_root[1100];
    snprintf(vision_root, sizeof vision_root, "image_root = \"%s/tests/corpora/vision\";",
             TERN_TEST_SOURCE_DIR);
    printf("%-8s %6s %14s %14s %14s %12s\n", "plugin", "cases", "1 thread/s", "2 threads/s",
           "isolated/s", "isolation us");
    for (int p = 0; p < n; p++) {
        corpus c;
        if (load_corpus(plugins[p], &c) != 0)
            continue;
        const char *extra = strcmp(plugins[p], "vision") == 0 ? vision_root : "";
        double one = measure(plugins[p], extra, 0, 1, &c, seconds);
        double two = measure(plugins[p], extra, 0, 2, &c, seconds);
        double iso = measure(plugins[p], extra, 1, 1, &c, seconds);
        double extra_us = one > 0 && iso > 0 ? 1e6 / iso - 1e6 / one : 0;
        printf("%-8s %6zu %14.0f %14.0f %14.0f %12.1f\n", plugins[p], c.n, one, two, iso,
               extra_us);
        fflush(stdout);
        free_corpus(&c);
    }
    return 0;
}
