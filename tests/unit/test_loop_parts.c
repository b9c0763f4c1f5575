/* test_loop_parts.c: the parts the learning loop is built from (core/src/loop):
 * the blocking queue between the roles, weight snapshots and the weight store,
 * the loop sections of a config and the learning-rate
 * schedule, checkpoints on disk (complete, newest, state, JSON Lines
 * truncation), stream seeds and checkpoint names. */
#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config/config.h"
#include "config/diag.h"
#include "base/errmsg.h"
#include "channel/queue.h"
#include "loop/kept_responses.h"
#include "loop/run.h"
#include "config/run_settings.h"
#include "loop/run_state.h"
#include "weights/weights.h"
#include "tern/support/utf8.h"

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* ---- queue ---------------------------------------------------------------- */

Test(queue, fifo_order)
{
    tern_queue q;
    tern_queue_init(&q);
    int v[5] = {10, 11, 12, 13, 14};
    for (int i = 0; i < 5; i++)
        cr_assert_eq(tern_queue_push(&q, &v[i]), TERN_OK);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(tern_queue_pop(&q), &v[i], "pop %d out of order", i);
    /* pushes after some pops still come after what is queued */
    int w = 15;
    cr_assert_eq(tern_queue_push(&q, &w), TERN_OK);
    cr_assert_eq(tern_queue_pop(&q), &v[3]);
    cr_assert_eq(tern_queue_pop(&q), &v[4]);
    cr_assert_eq(tern_queue_pop(&q), &w);
    tern_queue_destroy(&q, NULL);
}

typedef struct popper {
    tern_queue *q;
    void *got;
    atomic_int done;
} popper;

static void *pop_thread(void *arg)
{
    popper *p = arg;
    p->got = tern_queue_pop(p->q);
    atomic_store(&p->done, 1);
    return NULL;
}

Test(queue, pop_waits_for_a_push_from_another_thread, .timeout = 20)
{
    tern_queue q;
    tern_queue_init(&q);
    popper p = {.q = &q, .got = NULL};
    atomic_init(&p.done, 0);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, pop_thread, &p), 0);
    sleep_ms(100);
    cr_assert_eq(atomic_load(&p.done), 0, "pop returned from an empty queue");
    int v = 7;
    cr_assert_eq(tern_queue_push(&q, &v), TERN_OK);
    pthread_join(t, NULL);
    cr_assert_eq(atomic_load(&p.done), 1);
    cr_assert_eq(p.got, &v);
    tern_queue_destroy(&q, NULL);
}

Test(queue, close_wakes_a_waiting_pop_with_null, .timeout = 20)
{
    tern_queue q;
    tern_queue_init(&q);
    popper p = {.q = &q, .got = &q};
    atomic_init(&p.done, 0);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, pop_thread, &p), 0);
    sleep_ms(100);
    cr_assert_eq(atomic_load(&p.done), 0, "pop returned from an empty queue");
    tern_queue_close(&q);
    pthread_join(t, NULL);
    cr_assert_null(p.got, "a pop woken by close must return NULL");
    tern_queue_destroy(&q, NULL);
}

/* The master waits in slices (to look at the stop signals between them). */
Test(queue, a_timed_pop_times_out_takes_a_message_or_sees_the_close, .timeout = 20)
{
    tern_queue q;
    tern_queue_init(&q);
    void *msg = &q;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cr_assert_eq(tern_queue_pop_wait(&q, 30, &msg), TERN_ETIMEDOUT);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double waited = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    cr_expect_geq(waited, 0.029, "waited %.3f s of 0.030", waited);
    cr_expect_null(msg);
    int v = 5;
    cr_assert_eq(tern_queue_push(&q, &v), TERN_OK);
    cr_assert_eq(tern_queue_pop_wait(&q, 1000, &msg), TERN_OK);
    cr_expect_eq(msg, &v);
    tern_queue_close(&q);
    cr_assert_eq(tern_queue_pop_wait(&q, 1000, &msg), TERN_ECLOSED);
    cr_expect_null(msg);
    tern_queue_destroy(&q, NULL);
}

Test(queue, closed_queue_drains_then_returns_null_and_refuses_pushes)
{
    tern_queue q;
    tern_queue_init(&q);
    int a = 1, b = 2, c = 3;
    cr_assert_eq(tern_queue_push(&q, &a), TERN_OK);
    cr_assert_eq(tern_queue_push(&q, &b), TERN_OK);
    tern_queue_close(&q);
    cr_assert_eq(tern_queue_push(&q, &c), TERN_ECLOSED);
    cr_assert_eq(tern_queue_pop(&q), &a, "queued messages stay poppable after close");
    cr_assert_eq(tern_queue_pop(&q), &b);
    cr_assert_null(tern_queue_pop(&q));
    cr_assert_null(tern_queue_pop(&q), "a closed empty queue keeps answering NULL");
    tern_queue_destroy(&q, NULL);
}

static int dropped;
static void drop_count(void *msg)
{
    dropped++;
    free(msg);
}

Test(queue, destroy_drops_what_is_left)
{
    tern_queue q;
    tern_queue_init(&q);
    dropped = 0;
    for (int i = 0; i < 4; i++) {
        int *m = malloc(sizeof *m);
        cr_assert_not_null(m);
        *m = i;
        cr_assert_eq(tern_queue_push(&q, m), TERN_OK);
    }
    int *first = tern_queue_pop(&q);
    cr_assert_eq(*first, 0);
    free(first);
    tern_queue_destroy(&q, drop_count);
    cr_assert_eq(dropped, 3, "destroy dropped %d messages, 3 were left", dropped);
}

/* ---- weights ---------------------------------------------------------------- */

/* A fake model: up to 3 float tensors; only tensors() is used by weights.c. */
typedef struct fake_model {
    float data[3][8];
    tern_tensor t[3];
    size_t n;
    int fail; /* tensors() fails with TERN_EIO */
} fake_model;

static int fake_tensors(void *state, const tern_tensor **out, size_t *n)
{
    fake_model *m = state;
    if (m->fail)
        return tern_errorf(TERN_EIO, "fake tensors are unavailable");
    *out = m->t;
    *n = m->n;
    return TERN_OK;
}

static const tern_model_ops fake_ops = {
    .size = sizeof(tern_model_ops),
    .tensors = fake_tensors,
};
/* A fake model instance as the model proxy holds it. */
#define FAKE(p) (&(tern_model){.ops = &fake_ops, .state = (p)})


/* Tensors named names[i] of sizes[i] floats, values base + 10*i + j. */
static void fake_init(fake_model *m, size_t n, const char *const *names, const size_t *sizes,
                      float base)
{
    memset(m, 0, sizeof *m);
    m->n = n;
    for (size_t i = 0; i < n; i++) {
        cr_assert_leq(sizes[i], 8);
        for (size_t j = 0; j < sizes[i]; j++)
            m->data[i][j] = base + 10.0f * (float)i + (float)j;
        m->t[i] = (tern_tensor){.size = sizeof(tern_tensor), .name = names[i], .dtype = 1,
                                .ndim = 1, .shape = {(int64_t)sizes[i]}, .data = m->data[i],
                                .bytes = sizes[i] * sizeof(float)};
    }
}

static const char *const two_names[] = {"embed.weight", "head.weight"};
static const size_t two_sizes[] = {4, 2};

static void fake_two(fake_model *m, float base) { fake_init(m, 2, two_names, two_sizes, base); }

static void expect_values(const fake_model *m, float base)
{
    for (size_t i = 0; i < m->n; i++)
        for (size_t j = 0; j < m->t[i].bytes / sizeof(float); j++)
            cr_assert_float_eq(m->data[i][j], base + 10.0f * (float)i + (float)j, 0,
                               "tensor %zu [%zu] is %g, want %g", i, j, m->data[i][j],
                               base + 10.0f * (float)i + (float)j);
}

Test(weights, snapshot_take_and_apply_copy_the_values)
{
    fake_model a, b;
    fake_two(&a, 100);
    fake_two(&b, 0);
    tern_snapshot *s = tern_snapshot_of(FAKE(&a), 7);
    cr_assert_not_null(s, "%s", tern_error_message());
    cr_assert_eq(tern_snapshot_version(s), 7);
    /* the snapshot is a copy: later changes to the source do not reach it */
    a.data[0][0] = -1;
    a.data[1][1] = -1;
    cr_assert_eq(tern_snapshot_into(s, FAKE(&b)), TERN_OK, "%s", tern_error_message());
    expect_values(&b, 100);
    tern_snapshot_free(s);

    fake_model c;
    fake_two(&c, 5);
    cr_assert_eq(tern_weights_copy(FAKE(&c), FAKE(&b)), TERN_OK, "%s", tern_error_message());
    expect_values(&b, 5);
}

Test(weights, apply_refuses_another_tensor_count)
{
    fake_model a, b;
    fake_two(&a, 1);
    static const char *const three[] = {"embed.weight", "head.weight", "extra.bias"};
    static const size_t sizes3[] = {4, 2, 1};
    fake_init(&b, 3, three, sizes3, 50);
    tern_snapshot *s = tern_snapshot_of(FAKE(&a), 0);
    cr_assert_not_null(s);
    cr_assert_eq(tern_snapshot_into(s, FAKE(&b)), TERN_EINVAL);
    const char *msg = tern_error_message();
    cr_expect(strstr(msg, "2 tensors") && strstr(msg, "3 tensors"), "message: %s", msg);
    expect_values(&b, 50); /* untouched */
    tern_snapshot_free(s);
}

Test(weights, apply_refuses_another_name_and_leaves_the_model_untouched)
{
    fake_model a, b;
    fake_two(&a, 1);
    static const char *const other[] = {"embed.weight", "lm_head.weight"};
    fake_init(&b, 2, other, two_sizes, 50);
    tern_snapshot *s = tern_snapshot_of(FAKE(&a), 0);
    cr_assert_not_null(s);
    cr_assert_eq(tern_snapshot_into(s, FAKE(&b)), TERN_EINVAL);
    const char *msg = tern_error_message();
    cr_expect(strstr(msg, "'head.weight'") && strstr(msg, "'lm_head.weight'"), "message: %s",
              msg);
    /* the first tensor matched but nothing may be half-loaded */
    expect_values(&b, 50);
    tern_snapshot_free(s);
}

Test(weights, apply_refuses_another_byte_size)
{
    fake_model a, b;
    fake_two(&a, 1);
    static const size_t bigger[] = {4, 3};
    fake_init(&b, 2, two_names, bigger, 50);
    tern_snapshot *s = tern_snapshot_of(FAKE(&a), 0);
    cr_assert_not_null(s);
    cr_assert_eq(tern_snapshot_into(s, FAKE(&b)), TERN_EINVAL);
    const char *msg = tern_error_message();
    cr_expect(strstr(msg, "head.weight") && strstr(msg, "8 bytes") && strstr(msg, "12 bytes"),
              "message: %s", msg);
    expect_values(&b, 50);
    tern_snapshot_free(s);
}

Test(weights, a_model_that_cannot_list_its_tensors)
{
    fake_model a;
    fake_two(&a, 1);
    a.fail = 1;
    cr_assert_null(tern_snapshot_of(FAKE(&a), 0));
    cr_expect(strstr(tern_error_message(), "fake tensors are unavailable"), "message: %s",
              tern_error_message());
}

Test(weights, store_newest_and_load_latest)
{
    tern_weight_store *w = tern_weights_new();
    cr_assert_not_null(w);
    cr_assert_eq(tern_weights_newest(w), -1);
    fake_model src, dst;
    fake_two(&src, 0);
    fake_two(&dst, 999);
    cr_assert_eq(tern_weights_publish(w, FAKE(&src), 0), TERN_OK);
    fake_two(&src, 100);
    cr_assert_eq(tern_weights_publish(w, FAKE(&src), 1), TERN_OK);
    fake_two(&src, 300);
    cr_assert_eq(tern_weights_publish(w, FAKE(&src), 3), TERN_OK);
    cr_assert_eq(tern_weights_newest(w), 3);

    int64_t loaded = -5;
    uint64_t waited = 12345;
    cr_assert_eq(tern_weights_load(w, FAKE(&dst), -1, &loaded, &waited), TERN_OK,
                 "%s", tern_error_message());
    cr_assert_eq(loaded, 3);
    expect_values(&dst, 300);
    cr_expect_eq(waited, 0, "no wait expected (taking the lock is none), waited %llu ns",
                 (unsigned long long)waited);

    cr_assert_eq(tern_weights_load(w, FAKE(&dst), 1, &loaded, NULL), TERN_OK);
    cr_assert_eq(loaded, 1);
    expect_values(&dst, 100);
    cr_assert_eq(tern_weights_load(w, FAKE(&dst), 0, &loaded, NULL), TERN_OK);
    cr_assert_eq(loaded, 0);
    expect_values(&dst, 0);
    tern_weights_free(w);
}

Test(weights, versions_only_grow)
{
    tern_weight_store *w = tern_weights_new();
    fake_model src;
    fake_two(&src, 0);
    cr_assert_eq(tern_weights_publish(w, FAKE(&src), 4), TERN_OK);
    cr_assert_eq(tern_weights_publish(w, FAKE(&src), 2), TERN_EINVAL);
    cr_expect(strstr(tern_error_message(), "2") && strstr(tern_error_message(), "4"),
              "message: %s", tern_error_message());
    cr_assert_eq(tern_weights_publish(w, FAKE(&src), 4), TERN_EINVAL,
                 "the same version twice");
    cr_assert_eq(tern_weights_newest(w), 4);
    cr_assert_eq(tern_weights_publish(w, FAKE(&src), 5), TERN_OK);
    cr_assert_eq(tern_weights_newest(w), 5);
    tern_weights_free(w);
}

Test(weights, forget_before_frees_old_versions_but_never_the_newest)
{
    tern_weight_store *w = tern_weights_new();
    fake_model src, dst;
    for (int v = 0; v < 4; v++) {
        fake_two(&src, 100.0f * (float)v);
        cr_assert_eq(tern_weights_publish(w, FAKE(&src), v), TERN_OK);
    }
    fake_two(&dst, -1);
    tern_weights_forget_before(w, 2);
    int64_t loaded = -1;
    cr_assert_eq(tern_weights_load(w, FAKE(&dst), 0, &loaded, NULL), TERN_EINVAL);
    cr_expect(strstr(tern_error_message(), "freed"), "message: %s", tern_error_message());
    cr_assert_eq(tern_weights_load(w, FAKE(&dst), 1, &loaded, NULL), TERN_EINVAL);
    expect_values(&dst, -1);
    cr_assert_eq(tern_weights_load(w, FAKE(&dst), 2, &loaded, NULL), TERN_OK);
    cr_assert_eq(loaded, 2);
    expect_values(&dst, 200);

    /* asking to forget everything keeps the newest */
    tern_weights_forget_before(w, 100);
    cr_assert_eq(tern_weights_load(w, FAKE(&dst), 2, &loaded, NULL), TERN_EINVAL);
    cr_assert_eq(tern_weights_load(w, FAKE(&dst), -1, &loaded, NULL), TERN_OK);
    cr_assert_eq(loaded, 3);
    expect_values(&dst, 300);
    cr_assert_eq(tern_weights_load(w, FAKE(&dst), 3, &loaded, NULL), TERN_OK);
    cr_assert_eq(tern_weights_newest(w), 3);
    tern_weights_free(w);
}

typedef struct loader {
    tern_weight_store *w;
    fake_model *dst;
    int64_t version, loaded;
    uint64_t waited_ns;
    int rc;
    atomic_int started, done;
} loader;

static void *load_thread(void *arg)
{
    loader *l = arg;
    atomic_store(&l->started, 1);
    l->rc = tern_weights_load(l->w, FAKE(l->dst), l->version, &l->loaded, &l->waited_ns);
    atomic_store(&l->done, 1);
    return NULL;
}

static void start_loader(loader *l, pthread_t *t, tern_weight_store *w, fake_model *dst,
                         int64_t version)
{
    *l = (loader){.w = w, .dst = dst, .version = version, .loaded = -7, .rc = 1};
    atomic_init(&l->started, 0);
    atomic_init(&l->done, 0);
    cr_assert_eq(pthread_create(t, NULL, load_thread, l), 0);
    while (!atomic_load(&l->started))
        sleep_ms(1);
}

Test(weights, load_of_a_version_waits_until_it_is_published, .timeout = 20)
{
    tern_weight_store *w = tern_weights_new();
    fake_model src, dst;
    fake_two(&dst, -1);
    loader l;
    pthread_t t;
    start_loader(&l, &t, w, &dst, 2);
    sleep_ms(50);
    cr_assert_eq(atomic_load(&l.done), 0, "load(2) returned from an empty store");
    fake_two(&src, 0);
    cr_assert_eq(tern_weights_publish(w, FAKE(&src), 0), TERN_OK);
    fake_two(&src, 100);
    cr_assert_eq(tern_weights_publish(w, FAKE(&src), 1), TERN_OK);
    sleep_ms(50);
    cr_assert_eq(atomic_load(&l.done), 0, "load(2) returned with only version 1 published");
    fake_two(&src, 200);
    cr_assert_eq(tern_weights_publish(w, FAKE(&src), 2), TERN_OK);
    pthread_join(t, NULL);
    cr_assert_eq(l.rc, TERN_OK);
    cr_assert_eq(l.loaded, 2);
    expect_values(&dst, 200);
    cr_expect_geq(l.waited_ns, 50000000ull, "waited %llu ns, about 100 ms expected",
                  (unsigned long long)l.waited_ns);
    tern_weights_free(w);
}

Test(weights, load_newest_waits_for_a_first_version, .timeout = 20)
{
    tern_weight_store *w = tern_weights_new();
    fake_model src, dst;
    fake_two(&dst, -1);
    loader l;
    pthread_t t;
    start_loader(&l, &t, w, &dst, -1);
    sleep_ms(50);
    cr_assert_eq(atomic_load(&l.done), 0, "load(-1) returned from an empty store");
    fake_two(&src, 40);
    cr_assert_eq(tern_weights_publish(w, FAKE(&src), 5), TERN_OK);
    pthread_join(t, NULL);
    cr_assert_eq(l.rc, TERN_OK);
    cr_assert_eq(l.loaded, 5);
    expect_values(&dst, 40);
    cr_expect_geq(l.waited_ns, 25000000ull, "waited %llu ns, about 50 ms expected",
                  (unsigned long long)l.waited_ns);
    tern_weights_free(w);
}

Test(weights, close_wakes_a_waiting_load, .timeout = 20)
{
    tern_weight_store *w = tern_weights_new();
    fake_model src, dst;
    fake_two(&src, 0);
    fake_two(&dst, -1);
    cr_assert_eq(tern_weights_publish(w, FAKE(&src), 0), TERN_OK);
    loader l;
    pthread_t t;
    start_loader(&l, &t, w, &dst, 3);
    sleep_ms(50);
    cr_assert_eq(atomic_load(&l.done), 0);
    tern_weights_close(w);
    pthread_join(t, NULL);
    cr_assert_eq(l.rc, TERN_ECLOSED);
    cr_assert_eq(l.loaded, -7, "nothing was loaded");
    expect_values(&dst, -1);
    /* after close, every load answers TERN_ECLOSED at once */
    cr_assert_eq(tern_weights_load(w, FAKE(&dst), -1, NULL, NULL), TERN_ECLOSED);
    tern_weights_free(w);
}

/* ---- run settings ------------------------------------------------------------ */

typedef struct settings_case {
    tern_config cfg;
    tern_diag d;
    tern_run_settings s;
    int rc;
} settings_case;

static int read_settings(settings_case *k, const char *text, const char *label)
{
    memset(k, 0, sizeof *k);
    tern_diag_init(&k->d);
    cr_assert_eq(tern_config_read_string(&k->cfg, text, label, &k->d), TERN_OK, "%s",
                 k->d.n ? k->d.msgs[0] : "");
    k->rc = tern_run_settings_read(&k->cfg, &k->s, &k->d);
    return k->rc;
}

static void settings_done(settings_case *k)
{
    tern_run_settings_free(&k->s);
    tern_config_free(&k->cfg);
    tern_diag_free(&k->d);
}

static int diag_has(const tern_diag *d, const char *a, const char *b)
{
    for (size_t i = 0; i < d->n; i++)
        if (strstr(d->msgs[i], a) && (!b || strstr(d->msgs[i], b)))
            return 1;
    return 0;
}

static const char *diag_first(const tern_diag *d) { return d->n ? d->msgs[0] : "(none)"; }

Test(run_settings, defaults_when_sections_are_absent)
{
    settings_case k;
    cr_assert_eq(read_settings(&k, "data = { train = \"/abs/train.jsonl\"; };\n", "dir/x.cfg"),
                 TERN_OK, "%s", diag_first(&k.d));
    tern_run_settings *s = &k.s;
    cr_expect_str_eq(s->train_path, "/abs/train.jsonl");
    cr_expect_null(s->eval_path);
    cr_expect_eq(s->skip_bad, 0);
    cr_expect_eq(s->shuffle, 1);
    cr_expect_eq(s->batch_tasks, 16);
    cr_expect_eq(s->group_size, 8);
    cr_expect_eq(s->max_tokens, 16);
    cr_expect_float_eq(s->temperature, 1.0, 1e-12);
    cr_expect_float_eq(s->top_p, 1.0, 1e-12);
    cr_expect_eq(s->top_k, 0);
    cr_expect_eq(s->steps, 100);
    cr_expect_float_eq(s->lr, 1e-4, 1e-15);
    cr_expect_eq(s->schedule, TERN_LR_CONSTANT);
    cr_expect_eq(s->warmup_steps, 0);
    cr_expect_float_eq(s->min_lr_ratio, 0.1, 1e-12);
    cr_expect_float_eq(s->beta1, 0.9, 1e-12);
    cr_expect_float_eq(s->beta2, 0.99, 1e-12);
    cr_expect_float_eq(s->adam_eps, 1e-8, 1e-20);
    cr_expect_float_eq(s->weight_decay, 0.0, 0);
    cr_expect_float_eq(s->grad_clip, 1.0, 1e-12);
    cr_expect_eq(s->save_every, 50);
    cr_expect_eq(s->sft_steps, 0);
    cr_expect_eq(s->sft_batch_tasks, 32);
    cr_expect_float_eq(s->sft_lr, 1e-3, 1e-15);
    cr_expect_eq(s->adv.kind, TERN_ADV_GRPO);
    cr_expect_eq(s->adv.std_normalize, 1);
    cr_expect_float_eq(s->adv.length_coef, 0.0, 0);
    cr_expect_eq(s->loss.kind, TERN_LOSS_PPO);
    cr_expect_eq(s->loss.agg, TERN_AGG_TOKEN_MEAN);
    cr_expect_float_eq(s->loss.clip_low, 0.2, 1e-12);
    cr_expect_float_eq(s->loss.clip_high, 0.2, 1e-12);
    cr_expect_float_eq(s->loss.dual_clip, 0.0, 0);
    cr_expect_eq(s->loss.kl, TERN_KL_K3);
    cr_expect_float_eq(s->loss.kl_coef, 0.0, 0);
    cr_expect_eq(s->kl_placement, TERN_KL_IN_LOSS);
    cr_expect_eq(s->loss.kl_in_loss, 1);
    cr_expect_float_eq(s->loss.entropy_coef, 0.0, 0);
    cr_expect_float_eq(s->loss.kimi_tau, 0.1, 1e-12);
    cr_expect_eq(s->eval_every, 0);
    cr_expect_eq(s->eval_max_tokens, 16);
    cr_expect_eq(s->eval_limit, 0);
    /* the resolved config shows every value in force */
    int v = 0;
    cr_expect(config_lookup_int(&k.cfg.cfg, "explorer.group_size", &v) && v == 8);
    cr_expect_not_null(config_lookup(&k.cfg.cfg, "trainer.sft.batch_tasks"));
    cr_expect_not_null(config_lookup(&k.cfg.cfg, "algorithm.kl.estimator"));
    cr_expect_not_null(config_lookup(&k.cfg.cfg, "eval.max_tokens"));
    settings_done(&k);
}

Test(run_settings, values_given_are_read)
{
    settings_case k;
    const char *text = "data = { train = \"t.jsonl\"; eval = \"e.jsonl\"; shuffle = false;\n"
                       "         skip_bad = true; };\n"
                       "explorer = { batch_tasks = 4; group_size = 2; temperature = 0.7;\n"
                       "             top_k = 5; top_p = 0.9; max_tokens = 32; };\n"
                       "trainer = { steps = 10; lr = 0.002; lr_schedule = \"cosine\";\n"
                       "            warmup_steps = 2; min_lr_ratio = 0.0; save_every = 5;\n"
                       "            sft = { steps = 3; batch_tasks = 8; lr = 0.01; }; };\n"
                       "algorithm = { advantage = \"rloo\"; loss = \"kimi\"; clip = 0.3;\n"
                       "              dual_clip = 3.0; aggregation = \"seq_mean\";\n"
                       "              kl = { estimator = \"k1\"; coef = 0.05;\n"
                       "                     placement = \"reward\"; }; };\n"
                       "eval = { every = 7; max_tokens = 12; limit = 20; };\n";
    cr_assert_eq(read_settings(&k, text, "x.cfg"), TERN_OK, "%s", diag_first(&k.d));
    tern_run_settings *s = &k.s;
    cr_expect_str_eq(s->train_path, "t.jsonl", "no directory in the label: as written");
    cr_expect_str_eq(s->eval_path, "e.jsonl");
    cr_expect_eq(s->shuffle, 0);
    cr_expect_eq(s->skip_bad, 1);
    cr_expect_eq(s->batch_tasks, 4);
    cr_expect_eq(s->group_size, 2);
    cr_expect_float_eq(s->temperature, 0.7, 1e-12);
    cr_expect_eq(s->top_k, 5);
    cr_expect_float_eq(s->top_p, 0.9, 1e-12);
    cr_expect_eq(s->max_tokens, 32);
    cr_expect_eq(s->steps, 10);
    cr_expect_float_eq(s->lr, 0.002, 1e-15);
    cr_expect_eq(s->schedule, TERN_LR_COSINE);
    cr_expect_eq(s->warmup_steps, 2);
    cr_expect_float_eq(s->min_lr_ratio, 0.0, 0);
    cr_expect_eq(s->save_every, 5);
    cr_expect_eq(s->sft_steps, 3);
    cr_expect_eq(s->sft_batch_tasks, 8);
    cr_expect_float_eq(s->sft_lr, 0.01, 1e-15);
    cr_expect_eq(s->adv.kind, TERN_ADV_RLOO);
    cr_expect_eq(s->loss.kind, TERN_LOSS_KIMI);
    cr_expect_float_eq(s->loss.clip_low, 0.3, 1e-12);
    cr_expect_float_eq(s->loss.clip_high, 0.3, 1e-12, "clip_high defaults to clip");
    cr_expect_float_eq(s->loss.dual_clip, 3.0, 0);
    cr_expect_eq(s->loss.agg, TERN_AGG_SEQ_MEAN);
    cr_expect_eq(s->loss.kl, TERN_KL_K1);
    cr_expect_float_eq(s->loss.kl_coef, 0.05, 1e-12);
    cr_expect_eq(s->kl_placement, TERN_KL_IN_REWARD);
    cr_expect_eq(s->loss.kl_in_loss, 0);
    cr_expect_eq(s->eval_every, 7);
    cr_expect_eq(s->eval_max_tokens, 12);
    cr_expect_eq(s->eval_limit, 20);
    settings_done(&k);
}

Test(run_settings, relative_data_paths_are_taken_from_the_config_directory)
{
    settings_case k;
    cr_assert_eq(read_settings(&k, "data = { train = \"tasks/train.jsonl\"; eval = \"e.jsonl\"; "
                                   "};\n", "dir/x.cfg"),
                 TERN_OK, "%s", diag_first(&k.d));
    cr_expect_str_eq(k.s.train_path, "dir/tasks/train.jsonl");
    cr_expect_str_eq(k.s.eval_path, "dir/e.jsonl");
    settings_done(&k);

    cr_assert_eq(read_settings(&k, "data = { train = \"/srv/train.jsonl\"; };\n",
                               "/etc/tern/x.cfg"),
                 TERN_OK);
    cr_expect_str_eq(k.s.train_path, "/srv/train.jsonl", "absolute paths stay as written");
    settings_done(&k);
}

Test(run_settings, missing_train_file_is_a_config_error)
{
    settings_case k;
    cr_assert_eq(read_settings(&k, "explorer = { batch_tasks = 2; };\n", "dir/x.cfg"),
                 TERN_ECONFIG);
    cr_expect(diag_has(&k.d, "data.train", "dir/x.cfg"), "diag: %s", diag_first(&k.d));
    settings_done(&k);

    cr_assert_eq(read_settings(&k, "data = { train = \"\"; };\n", "dir/x.cfg"), TERN_ECONFIG,
                 "an empty name is no file");
    cr_expect(diag_has(&k.d, "data.train", NULL), "diag: %s", diag_first(&k.d));
    settings_done(&k);
}

Test(run_settings, schema_problems_are_reported)
{
    settings_case k;
    cr_assert_eq(read_settings(&k, "data = { train = \"t\"; };\n"
                                   "explorer = { group_size = 0; };\n", "dir/x.cfg"),
                 TERN_ECONFIG);
    cr_expect(diag_has(&k.d, "group_size", "dir/x.cfg:2"), "diag: %s", diag_first(&k.d));
    settings_done(&k);
}

Test(run_settings, dual_clip_must_exceed_one)
{
    settings_case k;
    cr_assert_eq(read_settings(&k, "data = { train = \"t\"; };\n"
                                   "algorithm = { dual_clip = 0.5; };\n", "dir/x.cfg"),
                 TERN_ECONFIG);
    cr_expect(diag_has(&k.d, "algorithm.dual_clip", "dir/x.cfg:2"), "diag: %s",
              diag_first(&k.d));
    settings_done(&k);
    cr_assert_eq(read_settings(&k, "data = { train = \"t\"; };\n"
                                   "algorithm = { dual_clip = 1.5; };\n", "dir/x.cfg"),
                 TERN_OK, "%s", diag_first(&k.d));
    settings_done(&k);
}

/* clip-higher widens the upper bound: clip_high below clip is refused at its
 * line; Dr. GRPO's aggregation takes L_max from explorer.max_tokens */
Test(run_settings, clip_high_not_below_clip_and_dr_grpo)
{
    settings_case k;
    cr_assert_eq(read_settings(&k, "data = { train = \"t\"; };\n"
                                   "algorithm = { clip = 0.2;\n clip_high = 0.1; };\n",
                               "dir/x.cfg"),
                 TERN_ECONFIG);
    cr_expect(diag_has(&k.d, "algorithm.clip_high = 0.1 is below clip = 0.2", "dir/x.cfg:3"),
              "diag: %s", diag_first(&k.d));
    settings_done(&k);
    cr_assert_eq(read_settings(&k, "data = { train = \"t\"; };\n"
                                   "explorer = { max_tokens = 12; };\n"
                                   "algorithm = { clip = 0.2; clip_high = 0.28; loss = \"gspo\";"
                                   " std_normalize = false; aggregation = \"token_sum_norm\"; };\n",
                               "dir/x.cfg"),
                 TERN_OK, "%s", diag_first(&k.d));
    cr_expect_eq(k.s.loss.kind, TERN_LOSS_GSPO);
    cr_expect_eq(k.s.loss.agg, TERN_AGG_TOKEN_SUM_NORM);
    cr_expect_float_eq(k.s.loss.norm_len, 12.0, 0);
    cr_expect_float_eq(k.s.loss.clip_high, 0.28, 1e-12);
    settings_done(&k);
    /* an off-policy correction of another loss is refused at its line */
    cr_assert_eq(read_settings(&k, "data = { train = \"t\"; };\n"
                                   "algorithm = { loss = \"kimi\";\n off_policy = \"tis\"; };\n",
                               "dir/x.cfg"),
                 TERN_ECONFIG);
    cr_expect(diag_has(&k.d, "corrects the ppo loss only", "dir/x.cfg:3"), "diag: %s",
              diag_first(&k.d));
    settings_done(&k);
    cr_assert_eq(read_settings(&k, "data = { train = \"t\"; };\n"
                                   "algorithm = { off_policy = \"tis\"; tis_cap = 3.0; };\n",
                               "dir/x.cfg"),
                 TERN_OK, "%s", diag_first(&k.d));
    cr_expect_eq(k.s.loss.off_policy, TERN_OFF_POLICY_TIS);
    cr_expect_float_eq(k.s.loss.tis_cap, 3.0, 0);
    settings_done(&k);
}

/* DAPO's dynamic sampling and overlong shaping: read, defaults, and a zone
 * longer than the responses refused at its line */
Test(run_settings, dapo_filter_and_overlong)
{
    settings_case k;
    cr_assert_eq(read_settings(&k, "data = { train = \"t\"; };\n", "dir/x.cfg"), TERN_OK, "%s",
                 diag_first(&k.d));
    cr_expect_eq(k.s.filter_groups, 0, "off by default");
    cr_expect_eq(k.s.filter_max_batches, 10);
    cr_expect_eq(k.s.adv.overlong_buffer, 0, "off by default");
    settings_done(&k);
    cr_assert_eq(read_settings(&k, "data = { train = \"t\"; };\n"
                                   "explorer = { max_tokens = 16; };\n"
                                   "algorithm = { filter_groups = true; filter_max_batches = 3;\n"
                                   " overlong_buffer = 4; overlong_penalty = 0.5; };\n",
                               "dir/x.cfg"),
                 TERN_OK, "%s", diag_first(&k.d));
    cr_expect_eq(k.s.filter_groups, 1);
    cr_expect_eq(k.s.filter_max_batches, 3);
    cr_expect_eq(k.s.adv.overlong_buffer, 4);
    cr_expect_eq(k.s.adv.max_tokens, 16);
    cr_expect_float_eq(k.s.adv.overlong_penalty, 0.5, 0);
    settings_done(&k);
    cr_assert_eq(read_settings(&k, "data = { train = \"t\"; };\n"
                                   "explorer = { max_tokens = 16; };\n"
                                   "algorithm = { filter_groups = true;\n"
                                   " overlong_buffer = 20; };\n",
                               "dir/x.cfg"),
                 TERN_ECONFIG);
    cr_expect(diag_has(&k.d, "overlong_buffer = 20 is longer than explorer.max_tokens = 16",
                       "dir/x.cfg:4"),
              "diag: %s", diag_first(&k.d));
    settings_done(&k);
    cr_assert_eq(read_settings(&k, "data = { train = \"t\"; };\n"
                                   "algorithm = { filter_max_batches = 0; };\n", "dir/x.cfg"),
                 TERN_ECONFIG, "a budget of 0 batches");
    cr_expect(diag_has(&k.d, "filter_max_batches", "dir/x.cfg:2"), "diag: %s",
              diag_first(&k.d));
    settings_done(&k);
}

Test(run_settings, rloo_needs_two_samples_per_task)
{
    settings_case k;
    cr_assert_eq(read_settings(&k, "data = { train = \"t\"; };\n"
                                   "explorer = { group_size = 1; };\n"
                                   "algorithm = { advantage = \"rloo\"; };\n", "dir/x.cfg"),
                 TERN_ECONFIG);
    cr_expect(diag_has(&k.d, "rloo", "group_size"), "diag: %s", diag_first(&k.d));
    cr_expect(diag_has(&k.d, "dir/x.cfg:3", NULL), "diag: %s", diag_first(&k.d));
    settings_done(&k);
    cr_assert_eq(read_settings(&k, "data = { train = \"t\"; };\n"
                                   "explorer = { group_size = 1; };\n", "dir/x.cfg"),
                 TERN_OK, "grpo takes groups of one: %s", diag_first(&k.d));
    settings_done(&k);
}

Test(run_settings, kl_coef_needs_an_estimator)
{
    settings_case k;
    cr_assert_eq(read_settings(&k, "data = { train = \"t\"; };\n"
                                   "algorithm = { kl = { estimator = \"none\";\n"
                                   "  coef = 0.1; }; };\n", "dir/x.cfg"),
                 TERN_ECONFIG);
    cr_expect(diag_has(&k.d, "kl.coef", "none"), "diag: %s", diag_first(&k.d));
    cr_expect(diag_has(&k.d, "dir/x.cfg:3", NULL), "diag: %s", diag_first(&k.d));
    settings_done(&k);
    cr_assert_eq(read_settings(&k, "data = { train = \"t\"; };\n"
                                   "algorithm = { kl = { estimator = \"none\"; }; };\n",
                                   "dir/x.cfg"),
                 TERN_OK, "%s", diag_first(&k.d));
    cr_expect_eq(k.s.loss.kl, TERN_KL_NONE);
    settings_done(&k);
}

static tern_run_settings lr_settings(tern_lr_schedule sched, int64_t steps, int64_t warmup)
{
    return (tern_run_settings){.lr = 1e-3, .min_lr_ratio = 0.1, .steps = steps,
                               .warmup_steps = warmup, .schedule = sched};
}

Test(run_settings, lr_constant)
{
    tern_run_settings s = lr_settings(TERN_LR_CONSTANT, 10, 0);
    for (int64_t i = 0; i < 10; i++)
        cr_expect_float_eq(tern_run_lr(&s, i), 1e-3, 1e-15, "step %lld", (long long)i);
}

Test(run_settings, lr_linear_decays_to_the_floor_at_the_last_step)
{
    tern_run_settings s = lr_settings(TERN_LR_LINEAR, 11, 0);
    /* steps 0..10: lr - (lr - 0.1 lr) * i / 10 */
    for (int64_t i = 0; i < 11; i++)
        cr_expect_float_eq(tern_run_lr(&s, i), 1e-3 - 0.9e-3 * (double)i / 10.0, 1e-15,
                           "step %lld: %g", (long long)i, tern_run_lr(&s, i));
    cr_expect_float_eq(tern_run_lr(&s, 0), 1e-3, 1e-15);
    cr_expect_float_eq(tern_run_lr(&s, 5), 0.55e-3, 1e-15);
    cr_expect_float_eq(tern_run_lr(&s, 10), 1e-4, 1e-15);
    cr_expect_float_eq(tern_run_lr(&s, 20), 1e-4, 1e-15, "never below the floor");
}

Test(run_settings, lr_cosine_decays_to_the_floor_at_the_last_step)
{
    tern_run_settings s = lr_settings(TERN_LR_COSINE, 5, 0);
    /* frac = i / 4: floor + 0.45e-3 (1 + cos(pi frac)) */
    cr_expect_float_eq(tern_run_lr(&s, 0), 1e-3, 1e-15);
    cr_expect_float_eq(tern_run_lr(&s, 1), 1e-4 + 0.45e-3 * (1 + sqrt(0.5)), 1e-15);
    cr_expect_float_eq(tern_run_lr(&s, 2), 0.55e-3, 1e-15);
    cr_expect_float_eq(tern_run_lr(&s, 3), 1e-4 + 0.45e-3 * (1 - sqrt(0.5)), 1e-15);
    cr_expect_float_eq(tern_run_lr(&s, 4), 1e-4, 1e-15);
}

Test(run_settings, lr_warmup_ramps_linearly_then_decays)
{
    tern_run_settings s = lr_settings(TERN_LR_LINEAR, 9, 4);
    /* warm-up: lr * (i + 1) / 4 */
    cr_expect_float_eq(tern_run_lr(&s, 0), 0.25e-3, 1e-15);
    cr_expect_float_eq(tern_run_lr(&s, 1), 0.5e-3, 1e-15);
    cr_expect_float_eq(tern_run_lr(&s, 2), 0.75e-3, 1e-15);
    cr_expect_float_eq(tern_run_lr(&s, 3), 1e-3, 1e-15);
    /* then steps 4..8 decay over frac = (i - 4) / 4 */
    cr_expect_float_eq(tern_run_lr(&s, 4), 1e-3, 1e-15);
    cr_expect_float_eq(tern_run_lr(&s, 6), 0.55e-3, 1e-15);
    cr_expect_float_eq(tern_run_lr(&s, 8), 1e-4, 1e-15);

    tern_run_settings c = lr_settings(TERN_LR_CONSTANT, 10, 5);
    cr_expect_float_eq(tern_run_lr(&c, 0), 0.2e-3, 1e-15);
    cr_expect_float_eq(tern_run_lr(&c, 4), 1e-3, 1e-15);
    cr_expect_float_eq(tern_run_lr(&c, 9), 1e-3, 1e-15);
}

/* ---- run state (checkpoints on disk) -------------------------------------- */

static char work[512];

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void work_setup(void)
{
    snprintf(work, sizeof work, "%s/loop_parts_%d", TERN_TEST_WORK_DIR, (int)getpid());
    nftw(work, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    cr_assert_eq(mkdir(work, 0777), 0, "%s: %s", work, strerror(errno));
}

static void work_teardown(void) { nftw(work, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

static void make_dir(const char *fmt, const char *a)
{
    char p[1024];
    snprintf(p, sizeof p, fmt, work, a);
    cr_assert_eq(mkdir(p, 0777), 0, "%s: %s", p, strerror(errno));
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    fputs(text, f);
    fclose(f);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&buf, &n);
    cr_assert_not_null(m);
    int ch;
    while ((ch = fgetc(f)) != EOF)
        fputc(ch, m);
    fclose(f);
    fclose(m);
    return buf;
}

static int exists(const char *fmt, const char *a)
{
    char p[1024];
    snprintf(p, sizeof p, fmt, work, a);
    struct stat st;
    return stat(p, &st) == 0;
}

Test(run_state, complete_renames_and_writes_the_state, .init = work_setup,
     .fini = work_teardown)
{
    make_dir("%s/%s", "checkpoints");
    make_dir("%s/%s", "checkpoints/step-3.tmp");
    char tmp[1024], marker[1100], final[1024];
    snprintf(tmp, sizeof tmp, "%s/checkpoints/step-3.tmp", work);
    snprintf(marker, sizeof marker, "%s/policy.bin", tmp);
    write_file(marker, "weights");
    json_t *st = json_pack("{s:i, s:i, s:i}", "format", 1, "step", 3, "sft_step", 0);
    cr_assert_eq(tern_checkpoint_complete(tmp, st, final, sizeof final), TERN_OK, "%s",
                 tern_error_message());
    char want[1024];
    snprintf(want, sizeof want, "%s/checkpoints/step-3", work);
    cr_expect_str_eq(final, want);
    cr_expect(!exists("%s/%s", "checkpoints/step-3.tmp"), "the temporary name is gone");
    cr_expect(exists("%s/%s", "checkpoints/step-3/policy.bin"));
    json_t *back = NULL;
    cr_assert_eq(tern_checkpoint_read_state(final, &back), TERN_OK, "%s", tern_error_message());
    cr_expect(json_equal(back, st), "state.json holds the state written");
    json_decref(back);
    json_decref(st);
}

Test(run_state, complete_replaces_a_checkpoint_of_the_same_name, .init = work_setup,
     .fini = work_teardown)
{
    make_dir("%s/%s", "checkpoints");
    make_dir("%s/%s", "checkpoints/sft-4");
    char p[1100];
    snprintf(p, sizeof p, "%s/checkpoints/sft-4/old_marker", work);
    write_file(p, "old");
    make_dir("%s/%s", "checkpoints/sft-4.tmp");
    snprintf(p, sizeof p, "%s/checkpoints/sft-4.tmp/new_marker", work);
    write_file(p, "new");
    char tmp[1024], final[1024];
    snprintf(tmp, sizeof tmp, "%s/checkpoints/sft-4.tmp", work);
    json_t *st = json_pack("{s:i, s:i, s:i}", "format", 1, "step", 0, "sft_step", 4);
    cr_assert_eq(tern_checkpoint_complete(tmp, st, final, sizeof final), TERN_OK, "%s",
                 tern_error_message());
    json_decref(st);
    cr_expect(exists("%s/%s", "checkpoints/sft-4/new_marker"), "the new one wins");
    cr_expect(exists("%s/%s", "checkpoints/sft-4/state.json"));
    cr_expect(!exists("%s/%s", "checkpoints/sft-4/old_marker"));
    cr_expect(!exists("%s/%s", "checkpoints/sft-4.tmp"));
    cr_expect(!exists("%s/%s", "checkpoints/sft-4.old"), "no leftover of the old one");
}

Test(run_state, complete_refuses_a_name_without_tmp, .init = work_setup,
     .fini = work_teardown)
{
    make_dir("%s/%s", "step-1");
    char dir[1024], final[1024];
    snprintf(dir, sizeof dir, "%s/step-1", work);
    json_t *st = json_pack("{s:i}", "format", 1);
    cr_assert_eq(tern_checkpoint_complete(dir, st, final, sizeof final), TERN_EINVAL);
    cr_expect(strstr(tern_error_message(), "step-1"), "message: %s", tern_error_message());
    json_decref(st);
}

Test(run_state, newest_prefers_the_most_rl_steps, .init = work_setup, .fini = work_teardown)
{
    make_dir("%s/%s", "checkpoints");
    const char *names[] = {"sft-50", "step-2", "step-10", "step-9", "step-11.tmp", "reference",
                           "step-12.old", "sft-60.tmp"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        make_dir("%s/checkpoints/%s", names[i]);
    char path[1024], want[1024];
    cr_assert_eq(tern_checkpoint_newest(work, path, sizeof path), TERN_OK, "%s",
                 tern_error_message());
    snprintf(want, sizeof want, "%s/checkpoints/step-10", work);
    cr_expect_str_eq(path, want, "step-10 (numerically highest, complete) expected");
}

Test(run_state, newest_falls_back_to_the_warmup, .init = work_setup, .fini = work_teardown)
{
    make_dir("%s/%s", "checkpoints");
    make_dir("%s/checkpoints/%s", "sft-5");
    make_dir("%s/checkpoints/%s", "sft-20");
    make_dir("%s/checkpoints/%s", "sft-100.tmp");
    make_dir("%s/checkpoints/%s", "step-1.tmp");
    make_dir("%s/checkpoints/%s", "reference");
    char path[1024], want[1024];
    cr_assert_eq(tern_checkpoint_newest(work, path, sizeof path), TERN_OK, "%s",
                 tern_error_message());
    snprintf(want, sizeof want, "%s/checkpoints/sft-20", work);
    cr_expect_str_eq(path, want);
}

Test(run_state, newest_without_checkpoints_is_not_found, .init = work_setup,
     .fini = work_teardown)
{
    char path[1024];
    cr_assert_eq(tern_checkpoint_newest(work, path, sizeof path), TERN_ENOTFOUND,
                 "no checkpoints directory");
    cr_expect(strstr(tern_error_message(), "checkpoints"), "message: %s", tern_error_message());
    make_dir("%s/%s", "checkpoints");
    make_dir("%s/checkpoints/%s", "step-3.tmp");
    make_dir("%s/checkpoints/%s", "reference");
    cr_assert_eq(tern_checkpoint_newest(work, path, sizeof path), TERN_ENOTFOUND,
                 "only a temporary checkpoint");
    cr_expect(strstr(tern_error_message(), "no complete checkpoint"), "message: %s",
              tern_error_message());
}

static void expect_state_refused(const char *text, const char *word)
{
    make_dir("%s/%s", "ck");
    char ck[1024], p[1100];
    snprintf(ck, sizeof ck, "%s/ck", work);
    snprintf(p, sizeof p, "%s/state.json", ck);
    if (text)
        write_file(p, text);
    json_t *st = (json_t *)&st;
    cr_assert_eq(tern_checkpoint_read_state(ck, &st), TERN_EINVAL, "accepted: %s",
                 text ? text : "(no file)");
    cr_expect_null(st);
    const char *msg = tern_error_message();
    cr_expect(strstr(msg, p), "the message names %s: %s", p, msg);
    cr_expect(strstr(msg, word), "'%s' missing: %s", word, msg);
}

Test(run_state, read_state_accepts_a_checkpoint_state, .init = work_setup,
     .fini = work_teardown)
{
    make_dir("%s/%s", "ck");
    char ck[1024], p[1100];
    snprintf(ck, sizeof ck, "%s/ck", work);
    snprintf(p, sizeof p, "%s/state.json", ck);
    write_file(p, "{\"format\": 1, \"step\": 12, \"sft_step\": 3, \"seed\": 5}\n");
    json_t *st = NULL;
    cr_assert_eq(tern_checkpoint_read_state(ck, &st), TERN_OK, "%s", tern_error_message());
    cr_expect_eq(json_integer_value(json_object_get(st, "step")), 12);
    cr_expect_eq(json_integer_value(json_object_get(st, "seed")), 5);
    json_decref(st);
}

Test(run_state, read_state_refuses_a_damaged_file, .init = work_setup, .fini = work_teardown)
{
    expect_state_refused("{\"format\": 1, \"step\": ", "damaged");
}

Test(run_state, read_state_refuses_a_missing_file, .init = work_setup, .fini = work_teardown)
{
    expect_state_refused(NULL, "not a checkpoint state");
}

Test(run_state, read_state_refuses_another_format, .init = work_setup, .fini = work_teardown)
{
    expect_state_refused("{\"format\": 2, \"step\": 1, \"sft_step\": 0}", "format 1");
}

Test(run_state, read_state_refuses_a_foreign_json, .init = work_setup, .fini = work_teardown)
{
    expect_state_refused("{\"format\": 1, \"step\": \"one\", \"sft_step\": 0}", "format 1");
}

Test(run_state, read_state_refuses_a_json_array, .init = work_setup, .fini = work_teardown)
{
    expect_state_refused("[1, 2, 3]", "format 1");
}

Test(run_state, jsonl_truncate_keeps_what_was_done, .init = work_setup,
     .fini = work_teardown)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/metrics.jsonl", work);
    write_file(p, "{\"event\":\"start\"}\n"
                  "{\"stage\":\"sft\",\"step\":1,\"loss\":2.5}\n"
                  "{\"stage\":\"sft\",\"step\":2}\n"
                  "{\"stage\":\"sft\",\"step\":3}\n"
                  "{\"stage\":\"rl\",\"step\":1}\n"
                  "{\"stage\":\"rl\",\"step\":4}\n"
                  "{\"stage\":\"rl\",\"step\":5,\"reward\":0.5}\n"
                  "{\"stage\":\"rl\",\"step\":6}\n"
                  "{\"note\":\"no stage\",\"step\":99}\n");
    cr_assert_eq(tern_jsonl_truncate(p, 2, 5), TERN_OK, "%s", tern_error_message());
    char *got = slurp(p);
    cr_assert_not_null(got);
    cr_expect_str_eq(got, "{\"event\":\"start\"}\n"
                          "{\"stage\":\"sft\",\"step\":1,\"loss\":2.5}\n"
                          "{\"stage\":\"sft\",\"step\":2}\n"
                          "{\"stage\":\"rl\",\"step\":1}\n"
                          "{\"stage\":\"rl\",\"step\":4}\n"
                          "{\"stage\":\"rl\",\"step\":5,\"reward\":0.5}\n"
                          "{\"note\":\"no stage\",\"step\":99}\n");
    free(got);
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp", p);
    struct stat st;
    cr_expect_neq(stat(tmp, &st), 0, "no temporary file is left");

    /* nothing done yet: only lines without a stage remain */
    cr_assert_eq(tern_jsonl_truncate(p, 0, 0), TERN_OK);
    got = slurp(p);
    cr_expect_str_eq(got, "{\"event\":\"start\"}\n{\"note\":\"no stage\",\"step\":99}\n");
    free(got);
}

Test(run_state, jsonl_truncate_of_a_missing_file_is_fine, .init = work_setup,
     .fini = work_teardown)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/rollouts.jsonl", work);
    cr_assert_eq(tern_jsonl_truncate(p, 3, 3), TERN_OK);
    struct stat st;
    cr_expect_neq(stat(p, &st), 0, "no file is created");
}

/* ---- seeds and checkpoint names ------------------------------------------ */

Test(messages, seeds_are_deterministic_and_differ_by_every_input)
{
    tern_run *run = calloc(1, sizeof *run);
    cr_assert_not_null(run);
    run->seed = 42;
    uint64_t base = tern_run_seed(run, "explore", 3, 1);
    cr_expect_eq(tern_run_seed(run, "explore", 3, 1), base, "same inputs, same seed");
    cr_expect_neq(tern_run_seed(run, "shuffle", 3, 1), base, "stream name");
    cr_expect_neq(tern_run_seed(run, "explorE", 3, 1), base, "stream name (one letter)");
    cr_expect_neq(tern_run_seed(run, "", 3, 1), base);
    cr_expect_neq(tern_run_seed(run, "explore", 4, 1), base, "first number");
    cr_expect_neq(tern_run_seed(run, "explore", 3, 2), base, "second number");
    cr_expect_neq(tern_run_seed(run, "explore", 1, 3), base, "numbers are not interchangeable");
    cr_expect_neq(tern_run_seed(run, "explore", 0, 0), tern_run_seed(run, "explore", 0, 1));
    cr_expect_neq(tern_run_seed(run, "explore", 0, 0), tern_run_seed(run, "explore", 1, 0));
    run->seed = 43;
    cr_expect_neq(tern_run_seed(run, "explore", 3, 1), base, "the run's seed");
    run->seed = 42;
    cr_expect_eq(tern_run_seed(run, "explore", 3, 1), base);
    /* a small batch of neighbouring inputs gives distinct seeds */
    uint64_t seen[64];
    size_t n = 0;
    for (uint64_t a = 0; a < 8; a++)
        for (uint64_t b = 0; b < 8; b++) {
            uint64_t s = tern_run_seed(run, "slot", a, b);
            for (size_t i = 0; i < n; i++)
                cr_assert_neq(seen[i], s, "seed of (%llu, %llu) repeats",
                              (unsigned long long)a, (unsigned long long)b);
            seen[n++] = s;
        }
    free(run);
}

Test(messages, checkpoint_dir_names)
{
    tern_run *run = calloc(1, sizeof *run);
    cr_assert_not_null(run);
    snprintf(run->dir, sizeof run->dir, "/runs/r1");
    char buf[PATH_MAX + 64];
    tern_checkpoint_dir(run, -1, 7, 0, buf, sizeof buf);
    cr_expect_str_eq(buf, "/runs/r1/checkpoints/step-7");
    tern_checkpoint_dir(run, -1, 7, 1, buf, sizeof buf);
    cr_expect_str_eq(buf, "/runs/r1/checkpoints/step-7.tmp");
    tern_checkpoint_dir(run, 3, 0, 0, buf, sizeof buf);
    cr_expect_str_eq(buf, "/runs/r1/checkpoints/sft-3");
    tern_checkpoint_dir(run, 3, 0, 1, buf, sizeof buf);
    cr_expect_str_eq(buf, "/runs/r1/checkpoints/sft-3.tmp");
    tern_checkpoint_dir(run, 3, 12, 0, buf, sizeof buf);
    cr_expect_str_eq(buf, "/runs/r1/checkpoints/step-12", "RL steps done: an RL checkpoint");
    tern_checkpoint_dir(run, -1, 0, 0, buf, sizeof buf);
    cr_expect_str_eq(buf, "/runs/r1/checkpoints/step-0");
    free(run);
}

Test(messages, msg_free_releases_every_kind)
{
    /* run under the sanitizers: any leak here is a failure */
    tern_explore_job *j = calloc(1, sizeof *j);
    j->kind = TERN_MSG_EXPLORE;
    j->n = 2;
    j->task_index = calloc(2, sizeof *j->task_index);
    j->prompt = calloc(2, sizeof *j->prompt);
    j->prompt[0] = strdup("a");
    j->prompt[1] = strdup("b");
    tern_msg_free(j);

    tern_rollout_msg *r = calloc(1, sizeof *r);
    r->kind = TERN_MSG_ROLLOUT;
    r->n = 1;
    r->group_size = 2;
    r->task_index = calloc(1, sizeof *r->task_index);
    r->prompt_len = calloc(1, sizeof *r->prompt_len);
    r->prompt_tokens = calloc(1, sizeof *r->prompt_tokens);
    r->prompt_tokens[0] = calloc(3, sizeof(int32_t));
    r->resp = calloc(2, sizeof *r->resp);
    r->resp[1].tokens = calloc(2, sizeof(int32_t));
    r->resp[1].logp = calloc(2, sizeof(float));
    r->resp[1].text = strdup("x");
    tern_msg_free(r);

    tern_step_msg *s = calloc(1, sizeof *s);
    s->kind = TERN_MSG_STEP_DONE;
    s->saved = strdup("dir");
    s->error = strdup("e");
    fake_model m;
    fake_two(&m, 0);
    s->eval = tern_snapshot_of(FAKE(&m), 1);
    cr_assert_not_null(s->eval);
    tern_msg_free(s);
    tern_msg_free(NULL);
}

/* A checkpoint store writes on its own thread: publish returns after the
 * copy, the trainer changes its weights at once, yet every version written
 * is the one published, in order, and a failed write comes back from the
 * next publish. */
Test(weights, checkpoint_store_writes_behind_the_trainer)
{
    char dir[] = "/tmp/tern-weights-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    tern_weight_store *w = tern_weights_open("checkpoint", dir, NULL);
    cr_assert_not_null(w, "%s", tern_error_message());
    cr_expect_str_eq(tern_weights_method(w), "checkpoint");
    fake_model src, dst;
    fake_two(&dst, 999);
    for (int v = 0; v < 6; v++) {
        fake_two(&src, (float)(100 * v));
        cr_assert_eq(tern_weights_publish(w, FAKE(&src), v), TERN_OK, "%s",
                     tern_error_message());
        fake_two(&src, -1); /* the trainer goes on: the copy must not see this */
    }
    cr_assert_eq(tern_weights_flush(w), TERN_OK, "%s", tern_error_message());
    cr_assert_eq(tern_weights_newest(w), 5);
    int64_t loaded = -1;
    for (int v = 0; v < 6; v++) {
        cr_assert_eq(tern_weights_load(w, FAKE(&dst), v, &loaded, NULL), TERN_OK, "%s",
                     tern_error_message());
        cr_assert_eq(loaded, v);
        expect_values(&dst, (float)(100 * v));
    }
    /* an old version published again fails in the writer: the next call says so */
    cr_assert_eq(tern_weights_publish(w, FAKE(&src), 3), TERN_OK);
    int rc = tern_weights_flush(w);
    cr_expect_eq(rc, TERN_EINVAL);
    cr_expect(strstr(tern_error_message(), "version 3"), "%s", tern_error_message());
    cr_expect_neq(tern_weights_publish(w, FAKE(&src), 7), TERN_OK);
    tern_weights_free(w);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
}

/* Model output goes into rollouts.jsonl: bytes that are not UTF-8 become
 * U+FFFD, valid text stays as it is. */
Test(utf8, clean_replaces_only_invalid_bytes)
{
    char *a = tern_utf8_clean("20 \xc3\xa9 \xe4\xb8\xad");
    cr_assert_str_eq(a, "20 \xc3\xa9 \xe4\xb8\xad");
    free(a);
    char *b = tern_utf8_clean("\xff" "1\xc3" "\xed\xa0\x80");
    cr_assert_str_eq(b, "\xef\xbf\xbd" "1\xef\xbf\xbd" "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
    free(b);
    json_t *j = json_string(b = tern_utf8_clean("\x80\x80 ok"));
    cr_expect_not_null(j, "jansson takes the cleaned text");
    json_decref(j);
    free(b);
}

/* run.keep_mb: a kept-responses file is full once it holds the cap, said
 * once; a cap of 0 keeps nothing and says nothing (loop/kept_responses.h) */
Test(kept_responses, the_cap_is_the_files_size)
{
    char path[] = "/tmp/tern_kept_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    FILE *f = fopen(path, "a");
    cr_assert_not_null(f);
    int said = 0;
    const uint64_t cap = 1u << 20;
    cr_expect_eq(tern_kept_full(f, cap, &said, "x.jsonl", "lines"), 0);
    static char chunk[4096];
    memset(chunk, 'x', sizeof chunk);
    for (size_t n = 0; n + sizeof chunk < cap; n += sizeof chunk)
        fwrite(chunk, 1, sizeof chunk, f);
    cr_expect_eq(tern_kept_full(f, cap, &said, "x.jsonl", "lines"), 0, "just under the cap");
    fwrite(chunk, 1, sizeof chunk, f);
    cr_expect_eq(tern_kept_full(f, cap, &said, "x.jsonl", "lines"), 1);
    cr_expect_eq(said, 1);
    cr_expect_eq(tern_kept_full(f, cap, &said, "x.jsonl", "lines"), 1);
    int quiet = 0;
    cr_expect_eq(tern_kept_full(f, 0, &quiet, "x.jsonl", "lines"), 1);
    cr_expect_eq(quiet, 0, "a cap of 0 is asked for: nothing said");
    fclose(f);
    unlink(path);

    /* a whole group's extras come off, the line stays */
    json_t *line = json_pack("{s:i, s:s, s:s, s:[]}", "step", 1, "prompt", "p", "answer", "a",
                             "responses");
    tern_kept_lean(line);
    cr_expect_eq(json_object_size(line), 1);
    json_decref(line);
}
