/* test_transport_checkpoint.c: the `checkpoint` weight transport
 * (core/src/weights/transport_checkpoint.c): safetensors files in a directory
 * and a LATEST file, written atomically. Round trips, waiting and closing,
 * forgetting, refusals of files that do not fit or are corrupt, a second
 * instance on the same directory, and the crash test: a writer killed
 * mid-write never leaves a file a reader takes for whole. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/errmsg.h"
#include "weights/transport.h"

static const tern_store_transport *const T = &tern_transport_checkpoint;

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- a fake model ------------------------------------------------------------ */

/* embed.weight f32 [rows, cols], norm.weight f32 [cols], lm_head.weight f32
 * [rows, cols] and scale.weight bf16 [cols]: its tensor list is what a
 * transport reads and writes. */
typedef struct fake_model {
    float *f[3];
    uint16_t *h;
    tern_tensor t[4];
    size_t n;
} fake_model;

/* A transport publishes and loads a tensor list: the fake model's. */
#define TENSORS(m) (m)->t, (m)->n

static void fake_init(fake_model *m, int64_t rows, int64_t cols)
{
    memset(m, 0, sizeof *m);
    static const char *const names[4] = {"embed.weight", "norm.weight", "lm_head.weight",
                                         "scale.weight"};
    size_t numel[4] = {(size_t)(rows * cols), (size_t)cols, (size_t)(rows * cols), (size_t)cols};
    for (int i = 0; i < 3; i++) {
        m->f[i] = calloc(numel[i], sizeof(float));
        cr_assert_not_null(m->f[i]);
    }
    m->h = calloc(numel[3], sizeof(uint16_t));
    cr_assert_not_null(m->h);
    for (int i = 0; i < 4; i++) {
        int two = i == 0 || i == 2;
        m->t[i] = (tern_tensor){.size = sizeof(tern_tensor), .name = names[i],
                                .dtype = i == 3 ? 2 : 1, .ndim = two ? 2 : 1,
                                .shape = {two ? rows : cols, two ? cols : 0},
                                .data = i == 3 ? (void *)m->h : (void *)m->f[i],
                                .bytes = numel[i] * (i == 3 ? 2 : 4)};
    }
    m->n = 4;
}

static void fake_free(fake_model *m)
{
    for (int i = 0; i < 3; i++)
        free(m->f[i]);
    free(m->h);
}

static uint16_t bf16_of(float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    return (uint16_t)(u >> 16); /* exact for the small integers used here */
}

/* Every value = v. */
static void fake_fill(fake_model *m, float v)
{
    for (int i = 0; i < 3; i++)
        for (size_t j = 0; j < m->t[i].bytes / 4; j++)
            m->f[i][j] = v;
    for (size_t j = 0; j < m->t[3].bytes / 2; j++)
        m->h[j] = bf16_of(v);
}

/* 1 if every value is v. */
static int fake_is(const fake_model *m, float v)
{
    for (int i = 0; i < 3; i++)
        for (size_t j = 0; j < m->t[i].bytes / 4; j++)
            if (m->f[i][j] != v)
                return 0;
    for (size_t j = 0; j < m->t[3].bytes / 2; j++)
        if (m->h[j] != bf16_of(v))
            return 0;
    return 1;
}

/* ---- a work directory per test ---------------------------------------------- */

static char work[512];
static char wdir[600]; /* the transport's directory, created by it */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void work_setup(void)
{
    snprintf(work, sizeof work, "%s/transport_ckpt_%d", TERN_TEST_WORK_DIR, (int)getpid());
    nftw(work, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    cr_assert_eq(mkdir(work, 0777), 0, "%s: %s", work, strerror(errno));
    snprintf(wdir, sizeof wdir, "%s/run/weights", work);
}

static void work_teardown(void) { nftw(work, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

TestSuite(checkpoint, .init = work_setup, .fini = work_teardown);

static void *open_dir(const char *dir)
{
    void *w = tern_transport_checkpoint_new(dir);
    cr_assert_not_null(w, "open %s: %s", dir, tern_error_message());
    return w;
}

static void publish(void *w, fake_model *m, int64_t v)
{
    fake_fill(m, (float)v);
    cr_assert_eq(T->publish(w, TENSORS(m), v), TERN_OK, "publish %" PRId64 ": %s", v,
                 tern_error_message());
}

static char *slurp_bytes(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    cr_assert_not_null(b);
    cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    b[n] = '\0';
    *size = (size_t)n;
    return b;
}

static void put_bytes(const char *path, const void *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    cr_assert_eq(fwrite(b, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
}

static void weights_name(char *buf, size_t cap, int64_t v)
{
    snprintf(buf, cap, "%s/weights-%010" PRId64 ".safetensors", wdir, v);
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* ---- round trips -------------------------------------------------------------- */

Test(checkpoint, publish_then_load_an_exact_version_and_the_newest)
{
    void *w = open_dir(wdir);
    cr_assert_str_eq(T->method, "checkpoint");
    cr_assert_eq(T->newest(w), -1);
    fake_model a, b;
    fake_init(&a, 3, 4);
    fake_init(&b, 3, 4);
    publish(w, &a, 1);
    publish(w, &a, 2);
    cr_assert_eq(T->newest(w), 2);

    int64_t loaded = -5;
    uint64_t waited = 1;
    cr_assert_eq(T->load(w, TENSORS(&b), 1, &loaded, &waited), TERN_OK, "%s",
                 tern_error_message());
    cr_assert_eq(loaded, 1);
    cr_assert(fake_is(&b, 1), "version 1 did not load whole");
    cr_assert_eq(waited, 0, "no wait for a published version (reading LATEST is none)");
    cr_assert_eq(T->load(w, TENSORS(&b), -1, &loaded, NULL), TERN_OK, "%s",
                 tern_error_message());
    cr_assert_eq(loaded, 2);
    cr_assert(fake_is(&b, 2));

    /* versions only grow */
    cr_assert_eq(T->publish(w, TENSORS(&a), 2), TERN_EINVAL);
    cr_expect(strstr(tern_error_message(), "published after 2"), "%s", tern_error_message());
    cr_assert_eq(T->publish(w, TENSORS(&a), 1), TERN_EINVAL);

    /* the files on disk: LATEST, and standard safetensors */
    char path[1024];
    size_t size;
    snprintf(path, sizeof path, "%s/LATEST", wdir);
    char *latest = slurp_bytes(path, &size);
    cr_assert_str_eq(latest, "2\n");
    free(latest);
    weights_name(path, sizeof path, 2);
    unsigned char *f = (unsigned char *)slurp_bytes(path, &size);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | f[i];
    cr_assert_eq(hlen % 8, 0, "the header is padded to a multiple of 8");
    size_t data = (3 * 4 + 4 + 3 * 4) * 4 + 4 * 2;
    cr_assert_eq(size, 8 + hlen + data);
    json_error_t jerr;
    json_t *h = json_loadb((const char *)f + 8, hlen, 0, &jerr);
    cr_assert_not_null(h, "header: %s", jerr.text);
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(h, "__metadata__"),
                                                       "tern_weight_version")), "2");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(h, "__metadata__"),
                                                       "format")), "pt");
    json_t *s = json_object_get(h, "scale.weight");
    cr_assert_str_eq(json_string_value(json_object_get(s, "dtype")), "BF16");
    json_t *e = json_object_get(h, "lm_head.weight");
    cr_assert_str_eq(json_string_value(json_object_get(e, "dtype")), "F32");
    cr_assert_eq(json_integer_value(json_array_get(json_object_get(e, "shape"), 0)), 3);
    cr_assert_eq(json_integer_value(json_array_get(json_object_get(e, "shape"), 1)), 4);
    json_int_t b0 = json_integer_value(json_array_get(json_object_get(e, "data_offsets"), 0));
    json_int_t b1 = json_integer_value(json_array_get(json_object_get(e, "data_offsets"), 1));
    cr_assert_eq(b1 - b0, 48);
    float x;
    memcpy(&x, f + 8 + hlen + b0, 4);
    cr_assert_float_eq(x, 2.0f, 0);
    json_decref(h);
    free(f);

    fake_free(&a);
    fake_free(&b);
    T->destroy(w);
}

/* ---- waiting and closing ------------------------------------------------------- */

typedef struct loader {
    void *w;
    fake_model *m;
    int64_t version;
    int rc;
    int64_t loaded;
    uint64_t waited_ns;
    atomic_int done;
} loader;

static void *load_thread(void *arg)
{
    loader *l = arg;
    l->rc = T->load(l->w, TENSORS(l->m), l->version, &l->loaded, &l->waited_ns);
    atomic_store(&l->done, 1);
    return NULL;
}

static void start_loader(loader *l, pthread_t *t, void *w, fake_model *m, int64_t version)
{
    *l = (loader){.w = w, .m = m, .version = version, .loaded = -7};
    atomic_init(&l->done, 0);
    cr_assert_eq(pthread_create(t, NULL, load_thread, l), 0);
}

Test(checkpoint, a_waiting_load_is_woken_by_a_later_publish, .timeout = 20)
{
    void *w = open_dir(wdir);
    fake_model a, b, c;
    fake_init(&a, 3, 4);
    fake_init(&b, 3, 4);
    fake_init(&c, 3, 4);
    loader exact, any;
    pthread_t te, ta;
    start_loader(&exact, &te, w, &b, 3);
    start_loader(&any, &ta, w, &c, -1);
    sleep_ms(100);
    cr_assert_eq(atomic_load(&any.done), 0, "load(-1) returned with nothing published");
    publish(w, &a, 1);
    pthread_join(ta, NULL);
    cr_assert_eq(any.rc, TERN_OK, "%s", tern_error_message());
    cr_assert_eq(any.loaded, 1);
    cr_assert(fake_is(&c, 1));
    cr_assert_geq(any.waited_ns, 50000000ull, "waited only %" PRIu64 " ns", any.waited_ns);

    publish(w, &a, 2);
    sleep_ms(60);
    cr_assert_eq(atomic_load(&exact.done), 0, "load(3) returned before version 3");
    publish(w, &a, 3);
    pthread_join(te, NULL);
    cr_assert_eq(exact.rc, TERN_OK);
    cr_assert_eq(exact.loaded, 3);
    cr_assert(fake_is(&b, 3));
    cr_assert_geq(exact.waited_ns, 100000000ull);
    fake_free(&a);
    fake_free(&b);
    fake_free(&c);
    T->destroy(w);
}

Test(checkpoint, close_wakes_a_waiter_with_eclosed, .timeout = 20)
{
    void *w = open_dir(wdir);
    fake_model a, b;
    fake_init(&a, 3, 4);
    fake_init(&b, 3, 4);
    publish(w, &a, 1);
    loader l;
    pthread_t t;
    start_loader(&l, &t, w, &b, 5);
    sleep_ms(100);
    cr_assert_eq(atomic_load(&l.done), 0);
    T->close(w);
    pthread_join(t, NULL);
    cr_assert_eq(l.rc, TERN_ECLOSED);
    cr_assert_geq(l.waited_ns, 50000000ull);
    /* and every later load, even of a version there is */
    cr_assert_eq(T->load(w, TENSORS(&b), 1, NULL, NULL), TERN_ECLOSED);
    cr_assert_eq(T->load(w, TENSORS(&b), -1, NULL, NULL), TERN_ECLOSED);
    cr_assert(fake_is(&b, 0), "a closed transport wrote into the model");
    fake_free(&a);
    fake_free(&b);
    T->destroy(w);
}

/* ---- forgetting ------------------------------------------------------------------- */

Test(checkpoint, forgotten_versions_are_refused_and_the_newest_is_kept)
{
    void *w = open_dir(wdir);
    fake_model a, b;
    fake_init(&a, 3, 4);
    fake_init(&b, 3, 4);
    for (int64_t v = 1; v <= 4; v++)
        publish(w, &a, v);
    T->forget_before(w, 3);
    char path[1024];
    for (int64_t v = 1; v <= 4; v++) {
        weights_name(path, sizeof path, v);
        cr_assert_eq(exists(path), v >= 3, "version %" PRId64 " %s", v,
                     v >= 3 ? "was removed" : "was kept");
    }
    cr_assert_eq(T->load(w, TENSORS(&b), 1, NULL, NULL), TERN_EINVAL);
    const char *msg = tern_error_message();
    cr_expect(strstr(msg, "forgotten") && strstr(msg, "weights-0000000001.safetensors"), "%s",
              msg);
    cr_assert(fake_is(&b, 0));
    int64_t loaded;
    cr_assert_eq(T->load(w, TENSORS(&b), 3, &loaded, NULL), TERN_OK, "%s", tern_error_message());
    cr_assert(fake_is(&b, 3));

    /* never the newest, whatever is asked */
    T->forget_before(w, 100);
    weights_name(path, sizeof path, 3);
    cr_assert(!exists(path));
    weights_name(path, sizeof path, 4);
    cr_assert(exists(path), "the newest version was removed");
    cr_assert_eq(T->load(w, TENSORS(&b), -1, &loaded, NULL), TERN_OK);
    cr_assert_eq(loaded, 4);

    /* a version skipped by the publisher is refused the same way */
    publish(w, &a, 10);
    cr_assert_eq(T->load(w, TENSORS(&b), 7, NULL, NULL), TERN_EINVAL);
    cr_assert(fake_is(&b, 4));
    fake_free(&a);
    fake_free(&b);
    T->destroy(w);
}

/* ---- files that do not fit the model -------------------------------------------- */

static void expect_refused(void *w, fake_model *m, int64_t v, const char *want)
{
    fake_fill(m, 77);
    int rc = T->load(w, TENSORS(m), v, NULL, NULL);
    const char *msg = tern_error_message();
    cr_assert_eq(rc, TERN_EINVAL, "load %" PRId64 ": %s (%s)", v, tern_status_name(rc), msg);
    char name[64];
    snprintf(name, sizeof name, "weights-%010" PRId64 ".safetensors", v);
    cr_expect(strstr(msg, name), "the message does not name the file: %s", msg);
    cr_expect(strstr(msg, want), "want \"%s\" in: %s", want, msg);
    cr_assert(fake_is(m, 77), "a refused file wrote into the model");
}

Test(checkpoint, a_model_of_other_shapes_names_or_dtypes_is_refused_untouched)
{
    void *w = open_dir(wdir);
    fake_model a, b;
    fake_init(&a, 3, 4);
    publish(w, &a, 12);

    fake_init(&b, 3, 8);
    expect_refused(w, &b, 12, "tensor 'embed.weight' has shape [3, 4], the model has [3, 8]");
    fake_free(&b);

    fake_init(&b, 3, 4);
    b.t[2].name = "output.weight";
    expect_refused(w, &b, 12, "no tensor 'output.weight'");
    b.t[2].name = "lm_head.weight";

    b.t[3].dtype = 3; /* same size, other dtype */
    expect_refused(w, &b, 12, "tensor 'scale.weight' is BF16, the model has F16");
    b.t[3].dtype = 2;

    b.n = 3; /* a tensor fewer in the model */
    expect_refused(w, &b, 12, "has tensor 'scale.weight', which the model does not have");
    b.n = 4;

    b.t[1].ndim = 2; /* [4] against [4, 1] */
    b.t[1].shape[1] = 1;
    expect_refused(w, &b, 12, "has shape [4], the model has [4, 1]");
    fake_free(&b);
    fake_free(&a);
    T->destroy(w);
}

Test(checkpoint, a_model_the_format_cannot_hold_is_refused_at_publish)
{
    void *w = open_dir(wdir);
    fake_model a;
    fake_init(&a, 3, 4);
    a.t[0].bytes -= 4;
    cr_assert_eq(T->publish(w, TENSORS(&a), 1), TERN_EINVAL);
    cr_expect(strstr(tern_error_message(), "embed.weight"), "%s", tern_error_message());
    a.t[0].bytes += 4;
    a.t[1].name = "embed.weight";
    cr_assert_eq(T->publish(w, TENSORS(&a), 1), TERN_EINVAL);
    cr_expect(strstr(tern_error_message(), "two tensors named"), "%s", tern_error_message());
    a.t[1].name = "norm.weight";
    a.t[3].dtype = 9;
    cr_assert_eq(T->publish(w, TENSORS(&a), 1), TERN_EINVAL);
    a.t[3].dtype = 2;
    /* nothing half-made was left behind, and version 1 is still free */
    cr_assert_eq(T->newest(w), -1);
    publish(w, &a, 1);
    fake_free(&a);
    T->destroy(w);
}

/* ---- corrupt files ---------------------------------------------------------------- */

static void set_latest(int64_t v)
{
    char path[1024], text[32];
    snprintf(path, sizeof path, "%s/LATEST", wdir);
    snprintf(text, sizeof text, "%" PRId64 "\n", v);
    put_bytes(path, text, strlen(text));
}

Test(checkpoint, corrupt_files_give_an_error_not_a_crash)
{
    void *w = open_dir(wdir);
    fake_model a, b;
    fake_init(&a, 3, 4);
    fake_init(&b, 3, 4);
    publish(w, &a, 1);
    char path[1024];
    size_t size;
    weights_name(path, sizeof path, 1);
    unsigned char *good = (unsigned char *)slurp_bytes(path, &size);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | good[i];
    unsigned char *bad = malloc(size + 64);
    cr_assert_not_null(bad);

    /* each case: a file for version v (and LATEST = v), then load(v) */
    int64_t v = 2;
    struct {
        const char *what, *want;
    } cases[] = {
        {"empty", "too short"},
        {"cut in the length", "too short"},
        {"cut in the header", "header length"},
        {"cut in the data", "data bytes"},
        {"a byte too many", "data bytes"},
        {"garbled header", "not valid JSON"},
        {"huge header length", "header length"},
        {"header not an object", "not a JSON object"},
        {"offsets past the end", "past the end"},
        {"offsets not numbers", "data_offsets"},
        {"no dtype", "dtype"},
        {"another version's file", "holds weight version 1, not"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++, v++) {
        memcpy(bad, good, size);
        size_t n = size;
        char hdr[4096];
        int custom = 0;
        switch (k) {
        case 0: n = 0; break;
        case 1: n = 5; break;
        case 2: n = 8 + hlen / 2; break;
        case 3: n = size - 5; break;
        case 4: bad[n++] = 0; break;
        case 5: memset(bad + 8 + hlen / 3, 0x01, 6); break; /* invalid anywhere in JSON */
        case 6: bad[7] = 0x7f; break;
        case 7: snprintf(hdr, sizeof hdr, "[1, 2]"); custom = 1; break;
        case 8:
            snprintf(hdr, sizeof hdr, "{\"embed.weight\": {\"dtype\": \"F32\", \"shape\": [3, 4], "
                     "\"data_offsets\": [1000, 1048]}}");
            custom = 1;
            break;
        case 9:
            snprintf(hdr, sizeof hdr, "{\"embed.weight\": {\"dtype\": \"F32\", \"shape\": [3, 4], "
                     "\"data_offsets\": [\"0\", 48]}}");
            custom = 1;
            break;
        case 10:
            snprintf(hdr, sizeof hdr, "{\"embed.weight\": {\"shape\": [3, 4], "
                     "\"data_offsets\": [0, 48]}}");
            custom = 1;
            break;
        case 11: break; /* the same bytes as version 1 */
        }
        if (custom) {
            /* a header of our own, then the original data */
            size_t hl = strlen(hdr), data = size - 8 - hlen;
            unsigned char *c = malloc(8 + hl + data);
            cr_assert_not_null(c);
            for (int i = 0; i < 8; i++)
                c[i] = (unsigned char)((uint64_t)hl >> (8 * i));
            memcpy(c + 8, hdr, hl);
            memcpy(c + 8 + hl, good + 8 + hlen, data);
            weights_name(path, sizeof path, v);
            put_bytes(path, c, 8 + hl + data);
            free(c);
        } else {
            weights_name(path, sizeof path, v);
            put_bytes(path, bad, n);
        }
        set_latest(v);
        cr_log_info("case %zu: %s", k, cases[k].what);
        expect_refused(w, &b, v, cases[k].want);
    }
    free(bad);
    free(good);

    /* a LATEST that is not a number: loads and a fresh open say so */
    snprintf(path, sizeof path, "%s/LATEST", wdir);
    put_bytes(path, "12abc\n", 6);
    cr_assert_eq(T->load(w, TENSORS(&b), -1, NULL, NULL), TERN_EINVAL);
    cr_expect(strstr(tern_error_message(), "LATEST"), "%s", tern_error_message());
    cr_assert_null(tern_transport_checkpoint_new(wdir));
    cr_expect(strstr(tern_error_message(), "12abc"), "%s", tern_error_message());
    fake_free(&a);
    fake_free(&b);
    T->destroy(w);
}

/* ---- more than one instance (process) on a directory ------------------------------- */

Test(checkpoint, a_second_instance_on_the_directory_sees_the_newest, .timeout = 20)
{
    void *w = open_dir(wdir);
    void *r = open_dir(wdir);
    fake_model a, b;
    fake_init(&a, 3, 4);
    fake_init(&b, 3, 4);
    publish(w, &a, 1);
    publish(w, &a, 2);
    cr_assert_eq(T->newest(r), 2);
    int64_t loaded;
    cr_assert_eq(T->load(r, TENSORS(&b), -1, &loaded, NULL), TERN_OK, "%s",
                 tern_error_message());
    cr_assert_eq(loaded, 2);
    cr_assert(fake_is(&b, 2));

    /* a waiter on the other instance is woken by polling LATEST */
    loader l;
    pthread_t t;
    start_loader(&l, &t, r, &b, 3);
    sleep_ms(80);
    cr_assert_eq(atomic_load(&l.done), 0);
    uint64_t t0 = now_ns();
    publish(w, &a, 3);
    pthread_join(t, NULL);
    cr_assert_eq(l.rc, TERN_OK, "%s", tern_error_message());
    cr_assert(fake_is(&b, 3));
    cr_assert_lt(now_ns() - t0, 2000000000ull, "the poll took too long");
    T->destroy(r);
    T->destroy(w);

    /* a resumed run: the newest on disk counts, and versions still only grow */
    w = open_dir(wdir);
    cr_assert_eq(T->newest(w), 3);
    cr_assert_eq(T->publish(w, TENSORS(&a), 3), TERN_EINVAL);
    publish(w, &a, 4);
    T->destroy(w);
    fake_free(&a);
    fake_free(&b);
}

Test(checkpoint, opening_removes_only_dead_writers_temporary_files)
{
    void *w = open_dir(wdir);
    T->destroy(w);
    pid_t dead = fork();
    cr_assert_geq(dead, 0);
    if (dead == 0)
        _exit(0);
    cr_assert_eq(waitpid(dead, NULL, 0), dead);
    char stale[1024], stale_latest[1024], live[1024], other[1024];
    snprintf(stale, sizeof stale, "%s/.weights-0000000003.safetensors.tmp.%d", wdir, (int)dead);
    snprintf(stale_latest, sizeof stale_latest, "%s/.LATEST.tmp.%d", wdir, (int)dead);
    snprintf(live, sizeof live, "%s/.weights-0000000004.safetensors.tmp.%d", wdir,
             (int)getppid());
    snprintf(other, sizeof other, "%s/notes.tmp.%d", wdir, (int)dead);
    put_bytes(stale, "x", 1);
    put_bytes(stale_latest, "x", 1);
    put_bytes(live, "x", 1);
    put_bytes(other, "x", 1);
    w = open_dir(wdir);
    cr_expect(!exists(stale), "a dead writer's file was kept");
    cr_expect(!exists(stale_latest), "a dead writer's LATEST was kept");
    cr_expect(exists(live), "a live writer's file was removed");
    cr_expect(exists(other), "a file not ours was removed");
    T->destroy(w);
}

/* ---- the crash test: a writer killed mid-write ------------------------------------ */

/* Big enough that a publish takes a while: about 6 MB. */
#define BIG_ROWS 768
#define BIG_COLS 1024

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rng_next(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 32);
}

/* The child: open the transport, say so on `ready`, then publish newest+1,
 * newest+2, ... (forgetting all but the last two) until killed, or stop
 * after `max_s`. Exits 0, or 2 if anything failed. */
static void writer_child(fake_model *m, int ready, double max_s)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    void *w = tern_transport_checkpoint_new(wdir);
    if (!w)
        _exit(2);
    int64_t v = T->newest(w) + 1;
    char one = 1;
    if (write(ready, &one, 1) != 1)
        _exit(2);
    uint64_t end = now_ns() + (uint64_t)(max_s * 1e9);
    for (; now_ns() < end; v++) {
        fake_fill(m, (float)v);
        if (T->publish(w, TENSORS(m), v) != TERN_OK) {
            fprintf(stderr, "writer: %s\n", tern_error_message());
            _exit(2);
        }
        T->forget_before(w, v - 1);
    }
    T->destroy(w);
    _exit(0);
}

static pid_t start_writer(fake_model *m, double max_s)
{
    int p[2];
    cr_assert_eq(pipe(p), 0);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        close(p[0]);
        writer_child(m, p[1], max_s);
    }
    close(p[1]);
    char one;
    cr_assert_eq(read(p[0], &one, 1), 1, "the writer did not start");
    close(p[0]);
    return pid;
}

static void kill_writer(pid_t pid)
{
    kill(pid, SIGKILL);
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(!WIFEXITED(st) || WEXITSTATUS(st) == 0, "the writer failed (exit %d)",
              WEXITSTATUS(st));
}

static int count_tmp_files(void)
{
    DIR *d = opendir(wdir);
    cr_assert_not_null(d, "%s: %s", wdir, strerror(errno));
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strstr(e->d_name, ".tmp.") != NULL;
    closedir(d);
    return n;
}

Test(checkpoint, a_writer_killed_mid_write_never_leaves_a_partial_version, .timeout = 60)
{
    fake_model m, r;
    fake_init(&m, BIG_ROWS, BIG_COLS);
    fake_init(&r, BIG_ROWS, BIG_COLS);

    /* how long one publish takes here, to spread the kills over a few */
    char scratch[700];
    snprintf(scratch, sizeof scratch, "%s/scratch", work);
    void *s = open_dir(scratch);
    uint64_t t0 = now_ns();
    publish(s, &m, 1);
    uint64_t pub_ms = (now_ns() - t0) / 1000000 + 1;
    T->destroy(s);
    cr_log_info("one publish of %zu bytes takes about %" PRIu64 " ms",
                m.t[0].bytes * 2 + m.t[1].bytes + m.t[3].bytes, pub_ms);

    int published = 0, nothing = 0, mid_file = 0;
    for (int round = 0; round < 20; round++) {
        pid_t pid = start_writer(&m, 10);
        /* a kill at once (nothing published yet, in a fresh directory), then
         * at random points within the first three publishes */
        sleep_ms(round == 0 ? 0 : (long)(rng_next() % (3 * pub_ms + 1)));
        /* every other round, also wait until a file is being written (its
         * temporary name is there), so that many kills surely come mid-file */
        for (uint64_t end = now_ns() + 2000000000ull; round % 2 && now_ns() < end;)
            if (count_tmp_files() > 0)
                break;
        kill_writer(pid);
        mid_file += count_tmp_files() > 0; /* killed while writing a file */

        void *w = open_dir(wdir);
        cr_assert_eq(count_tmp_files(), 0, "a killed writer's temporary file survived open");
        int64_t newest = T->newest(w);
        if (newest < 0) {
            nothing++;
        } else {
            int64_t loaded = -1;
            fake_fill(&r, -1);
            int rc = T->load(w, TENSORS(&r), -1, &loaded, NULL);
            cr_assert_eq(rc, TERN_OK, "round %d: %s", round, tern_error_message());
            cr_assert_eq(loaded, newest);
            cr_assert(fake_is(&r, (float)loaded), "round %d: version %" PRId64 " loaded "
                      "partially", round, loaded);
            published++;
        }
        T->destroy(w);
    }
    cr_log_info("%d rounds found a version, %d found none; %d kills came mid-file", published,
                nothing, mid_file);
    cr_assert_gt(published, 0, "no round got to publish: the test tests nothing");
    cr_assert_gt(mid_file, 0, "no kill came while a file was written: the test tests nothing");
    fake_free(&m);
    fake_free(&r);
}

typedef struct reader {
    void *w;
    fake_model m;
    atomic_int *stop;
    int loads, bad, errors;
    int64_t last, versions;
    char error[512];
} reader;

static void *reader_thread(void *arg)
{
    reader *rd = arg;
    rd->last = -1;
    while (!atomic_load(rd->stop)) {
        int64_t loaded = -1;
        int rc = T->load(rd->w, TENSORS(&rd->m), -1, &loaded, NULL);
        if (rc == TERN_ECLOSED)
            break;
        if (rc != TERN_OK) {
            if (!rd->errors++)
                snprintf(rd->error, sizeof rd->error, "%s", tern_error_message());
            continue;
        }
        rd->loads++;
        if (!fake_is(&rd->m, (float)loaded))
            rd->bad++;
        if (loaded < rd->last)
            rd->bad++; /* the newest went backwards */
        if (loaded != rd->last)
            rd->versions++;
        rd->last = loaded;
    }
    return NULL;
}

Test(checkpoint, readers_in_another_process_only_see_whole_versions, .timeout = 60)
{
    fake_model m;
    fake_init(&m, BIG_ROWS, BIG_COLS);
    pid_t pid = start_writer(&m, 20);
    void *w = open_dir(wdir);
    atomic_int stop;
    atomic_init(&stop, 0);
    reader rd[2];
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        memset(&rd[i], 0, sizeof rd[i]);
        rd[i].w = w;
        rd[i].stop = &stop;
        fake_init(&rd[i].m, BIG_ROWS, BIG_COLS);
        cr_assert_eq(pthread_create(&t[i], NULL, reader_thread, &rd[i]), 0);
    }
    sleep_ms(1500);
    kill_writer(pid);
    atomic_store(&stop, 1);
    T->close(w); /* in case a reader waits */
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        cr_log_info("reader %d: %d loads of %" PRId64 " versions, the last %" PRId64, i,
                    rd[i].loads, rd[i].versions, rd[i].last);
        cr_expect_eq(rd[i].errors, 0, "reader %d: %d failed loads, the first: %s", i,
                     rd[i].errors, rd[i].error);
        cr_expect_eq(rd[i].bad, 0, "reader %d: %d inconsistent loads", i, rd[i].bad);
        cr_expect_gt(rd[i].loads, 0, "reader %d loaded nothing", i);
        fake_free(&rd[i].m);
    }
    T->destroy(w);
    fake_free(&m);
}
