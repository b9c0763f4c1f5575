/* bench_buffers.c: put/get throughput of each buffer plugin, in records per
 * second, with records the size a run makes: a record is one group (the
 * experience encoding, format 4, no image), here a prompt of 128 tokens and 8
 * responses of 384 tokens (about 25 KB). Figures only, no pass/fail.
 *
 *   bench_buffers [--n N] [--dir DIR] [PLUGIN...]
 *
 * For each plugin (default: fifo, priority, sqlite with synchronous = "full",
 * sqlite with synchronous = "normal"):
 *   put      one thread puts N records into an empty buffer (no blocking);
 *   get      one thread gets them back, 64 per call, commits them (a buffer
 *            with commit, ABI 1.6: sqlite; as a run does) and releases them;
 *   mixed    2 producer threads and 1 consumer at once, N records put into a
 *            buffer of capacity 256: the steady state of a run. A blocking
 *            buffer delivers all N; `priority` evicts instead of blocking, so
 *            the records it dropped are shown beside the rate.
 * N is 2500 by default: 20,000 responses, about 64 MB held at once by the put
 * row. A durable buffer's file goes under DIR (default /tmp), removed after.
 * The sqlite "full" rows use N/10 records: every put waits for an fsync. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/errmsg.h"
#include "experience/experience.h"
#include "tern/model.h"
#include "harness.h"
#include "tern/buffer.h"

#define PROMPT 128
#define RESPONSE 384
#define GROUP 8 /* responses in a record */
#define GET_BATCH 64

typedef struct variant {
    const char *label, *plugin, *settings; /* settings: printf format taking the capacity */
    int file, slow;                        /* uses a file under DIR; fsync per put */
} variant;

static const variant variants[] = {
    {"fifo", "fifo", "capacity = %ld;", 0, 0},
    {"priority", "priority", "capacity = %ld;", 0, 0},
    {"sqlite (full)", "sqlite", "capacity = %ld; synchronous = \"full\";", 1, 1},
    {"sqlite (normal)", "sqlite", "capacity = %ld; synchronous = \"normal\";", 1, 0},
};

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* One realistic encoded group: GROUP responses of RESPONSE tokens, half of
 * them right. */
static unsigned char *make_record(size_t *len)
{
    static int32_t prompt[PROMPT], tokens[GROUP][RESPONSE];
    static float logp[GROUP][RESPONSE];
    tern_exp_response resp[GROUP];
    for (int i = 0; i < PROMPT; i++)
        prompt[i] = (i * 7919) % 32000;
    for (int g = 0; g < GROUP; g++) {
        for (int i = 0; i < RESPONSE; i++) {
            tokens[g][i] = ((i + g) * 7919) % 32000;
            logp[g][i] = -0.01f * (float)((i + g) % 300);
        }
        double right = g % 2;
        resp[g] = (tern_exp_response){.version = 11, .finish = TERN_FINISH_STOP,
                                      .reward = right, .accuracy = right, .n_parts = 2,
                                      .len = RESPONSE, .tokens = tokens[g], .logp = logp[g]};
        resp[g].parts[0] = (tern_reward_part){"accuracy", right};
        resp[g].parts[1] = (tern_reward_part){"format", 1};
    }
    tern_experience e = {.batch = 12, .version = 11, .task_index = 4242, .group = 3,
                         .generated_ns = 1, .rewarded_ns = 2, .domain = "math",
                         .task_id = "gsm8k-train-04242", .prompt_len = PROMPT, .prompt = prompt,
                         .n = GROUP, .resp = resp};
    tern_experience_finish_stats(&e);
    *len = tern_experience_bytes(&e);
    unsigned char *buf = *len ? malloc(*len) : NULL;
    if (buf)
        tern_experience_encode(&e, buf);
    else
        fprintf(stderr, "bench_buffers: cannot encode a group: %s\n", tern_error_message());
    return buf;
}

typedef struct bench {
    const tern_buffer_ops *ops;
    void *state;
    const unsigned char *rec;
    size_t len;
    long n;         /* records this thread moves */
    long first_id;  /* producers: ids first_id .. first_id + n - 1 */
    atomic_int *producers_left; /* mixed: the consumer stops when 0 and nothing is left */
    long seen;      /* consumer: records received */
    int failed;
} bench;

static void *producer(void *arg)
{
    bench *b = arg;
    for (long i = 0; i < b->n && !b->failed; i++) {
        tern_record_meta m = {.size = sizeof m, .id = (uint64_t)(b->first_id + i),
                              .version = 11, .batch = 12};
        if (b->ops->put(b->state, b->rec, b->len, &m, -1) != TERN_OK)
            b->failed = 1;
    }
    if (b->producers_left)
        atomic_fetch_sub(b->producers_left, 1);
    return NULL;
}

static void *consumer(void *arg)
{
    bench *b = arg;
    tern_record recs[GET_BATCH];
    while (b->seen < b->n && !b->failed) {
        for (int i = 0; i < GET_BATCH; i++)
            recs[i].size = sizeof recs[i];
        size_t got = 0;
        /* producers done (the count read before the get): an empty get ends it */
        int done = b->producers_left && atomic_load(b->producers_left) == 0;
        int rc = b->ops->get(b->state, recs, GET_BATCH, &got, done ? 0 : 10000);
        if (rc == TERN_ETIMEDOUT && done)
            break;
        if (rc != TERN_OK) {
            b->failed = 1;
            break;
        }
        uint64_t ids[GET_BATCH];
        for (size_t i = 0; i < got; i++) {
            if (recs[i].len != b->len)
                b->failed = 1;
            ids[i] = recs[i].meta.id;
        }
        /* a buffer with commit keeps what it hands out until committed (and
         * counts it against its capacity), as a run's master commits */
        if (TERN_HAS(b->ops, commit) && b->ops->commit &&
            b->ops->commit(b->state, ids, got) != TERN_OK)
            b->failed = 1;
        b->ops->release(b->state, recs, got);
        b->seen += (long)got;
    }
    return NULL;
}

static int open_variant(harness *h, const variant *v, long capacity, const char *dir,
                        char *file, size_t file_n)
{
    char settings[512];
    int at = snprintf(settings, sizeof settings, v->settings, capacity);
    if (v->file) {
        snprintf(file, file_n, "%s/bench_buffers_%d.sqlite", dir, (int)getpid());
        unlink(file);
        snprintf(settings + at, sizeof settings - (size_t)at, " path = \"%s\";", file);
    }
    int rc = harness_open(h, v->plugin, TERN_KIND_BUFFER, settings);
    if (rc != TERN_OK)
        fprintf(stderr, "  %s: cannot open: %s\n", v->label, h->error);
    return rc;
}

static void close_variant(harness *h, const variant *v, const char *file)
{
    harness_close(h);
    if (v->file) {
        char side[1100];
        unlink(file);
        snprintf(side, sizeof side, "%s-wal", file);
        unlink(side);
        snprintf(side, sizeof side, "%s-shm", file);
        unlink(side);
    }
}

/* put then get, single-threaded; and the mixed run. */
static void run_variant(const variant *v, long n, const char *dir, const unsigned char *rec,
                        size_t len)
{
    if (v->slow)
        n /= 10;
    harness h;
    char file[1024] = "";
    if (open_variant(&h, v, n, dir, file, sizeof file) != TERN_OK) {
        close_variant(&h, v, file);
        return;
    }
    bench b = {.ops = harness_ops(&h), .state = h.state, .rec = rec, .len = len, .n = n};
    double t0 = now_s();
    producer(&b);
    double t1 = now_s();
    consumer(&b);
    double t2 = now_s();
    int failed = b.failed;
    close_variant(&h, v, file);

    double mixed = 0;
    unsigned long long dropped = 0;
    if (!failed && open_variant(&h, v, 256, dir, file, sizeof file) == TERN_OK) {
        bench p[2], c;
        atomic_int left = 2;
        for (int i = 0; i < 2; i++)
            p[i] = (bench){.ops = harness_ops(&h), .state = h.state, .rec = rec, .len = len,
                           .n = n / 2, .first_id = i * (n / 2), .producers_left = &left};
        c = (bench){.ops = harness_ops(&h), .state = h.state, .len = len, .n = 2 * (n / 2),
                    .producers_left = &left};
        pthread_t tp[2], tc;
        double m0 = now_s();
        pthread_create(&tc, NULL, consumer, &c);
        for (int i = 0; i < 2; i++)
            pthread_create(&tp[i], NULL, producer, &p[i]);
        for (int i = 0; i < 2; i++)
            pthread_join(tp[i], NULL);
        pthread_join(tc, NULL);
        mixed = (double)(2 * (n / 2)) / (now_s() - m0);
        tern_buffer_stats st = {.size = sizeof st};
        if (c.ops->stats(h.state, &st) == TERN_OK)
            dropped = (unsigned long long)st.dropped;
        /* every record put was delivered or dropped */
        failed = p[0].failed || p[1].failed || c.failed ||
                 (unsigned long long)c.seen + dropped != (unsigned long long)(2 * (n / 2));
    }
    close_variant(&h, v, file);
    if (failed) {
        printf("%-16s %8ld  failed: %s\n", v->label, n, tern_error_message());
        return;
    }
    printf("%-16s %8ld %12.0f %12.0f %12.0f %10.1f %8llu\n", v->label, n,
           (double)n / (t1 - t0), (double)n / (t2 - t1), mixed, mixed * (double)len / 1e6,
           dropped);
}

static void print_machine(void)
{
    char model[256] = "unknown CPU", line[512];
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "model name", 10) == 0) {
            char *c = strchr(line, ':');
            if (c) {
                snprintf(model, sizeof model, "%s", c + 2);
                model[strcspn(model, "\n")] = '\0';
            }
            break;
        }
    if (f)
        fclose(f);
    printf("machine: %s, %ld cores\n", model, sysconf(_SC_NPROCESSORS_ONLN));
}

int main(int argc, char **argv)
{
    long n = 2500;
    const char *dir = "/tmp";
    const char *only[8];
    int n_only = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--n") == 0 && i + 1 < argc)
            n = atol(argv[++i]);
        else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
            dir = argv[++i];
        else if (argv[i][0] != '-' && n_only < 8)
            only[n_only++] = argv[i];
        else {
            fprintf(stderr, "usage: bench_buffers [--n N] [--dir DIR] [PLUGIN...]\n");
            return 2;
        }
    }
    if (n < 20)
        n = 20;
    size_t len;
    unsigned char *rec = make_record(&len);
    if (!rec)
        return 1;
    print_machine();
    printf("record: %zu bytes (a group: %d prompt tokens, %d responses of %d tokens)\n\n",
           len, PROMPT, GROUP, RESPONSE);
    printf("%-16s %8s %12s %12s %12s %10s %8s\n", "buffer", "records", "put/s", "get/s",
           "mixed/s", "mixed MB/s", "dropped");
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
        int want = n_only == 0;
        for (int k = 0; k < n_only; k++)
            want |= strcmp(only[k], variants[i].plugin) == 0;
        if (want)
            run_variant(&variants[i], n, dir, rec, len);
    }
    free(rec);
    return 0;
}
