/* faulty_reward.c: a test reward plugin that misbehaves on request, for the
 * tests of reward isolation (`isolate = true`) and `tern reward score`. The
 * response says what to do:
 *   ok:X      reward X, component accuracy = X >= 0.5, reason "ok"
 *   crash     abort()                 kill    raise(SIGKILL)
 *   exit      _exit(7)                hang    never return
 *   slow:MS   sleep MS ms, then reward 1
 *   nan       reward NaN              fail    return a failure status
 *   refuse    result.failure = error (ABI 1.10): this response alone fails
 *   garbage   components with a bad name and no name, a reason with no NUL
 *   overlong  reward 1, a reason holding an overlong UTF-8 form and a surrogate
 *   pid       reward = the scoring process's id
 *   count     reward = how many responses this instance has scored
 * Setting `fail_create = true` makes create() fail; `crash_every = N` and
 * `hang_every = N` crash or hang on every Nth response an instance scores,
 * whatever it is (for runs, whose responses are the model's). Not thread-safe (no
 * TERN_CAP_THREAD_SAFE): the core must serialise calls.
 * Built twice more as copies the loader refuses, for the "no silent
 * fallback" tests: FAULTY_NEWER_ABI (ABI 1.99) and FAULTY_NO_ENTRY (no entry
 * point, so not even its name can be read); and once as FAULTY_ABI_1_9, a
 * plugin built before results grew `failure` (it fails a call whose results
 * are smaller than it knows them). */
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tern/plugin.h"
#include "tern/reward.h"

static const tern_host *host;

typedef struct faulty {
    long calls;
    int64_t crash_every, hang_every; /* 0: never */
} faulty;

static int faulty_create(tern_ctx *ctx, void **state)
{
    int fail = 0;
    host->get_bool(ctx, "fail_create", &fail);
    if (fail)
        return host->fail(ctx, TERN_ECONFIG, "fail_create is set: refusing to start");
    faulty *f = calloc(1, sizeof *f);
    if (!f)
        return host->fail(ctx, TERN_ENOMEM, "out of memory");
    host->get_int(ctx, "crash_every", &f->crash_every);
    host->get_int(ctx, "hang_every", &f->hang_every);
    *state = f;
    return TERN_OK;
}

static void faulty_destroy(void *state) { free(state); }

static int is(const tern_reward_item *it, const char *word)
{
    return it->response_len == strlen(word) && memcmp(it->response, word, it->response_len) == 0;
}

#ifdef FAULTY_ABI_1_9
/* Built for ABI 1.9, as a plugin compiled before tern_reward_result grew
 * `failure` would be: it reads and writes results at that stride. */
#define RESULT_STRIDE offsetof(tern_reward_result, failure)
#else
#define RESULT_STRIDE sizeof(tern_reward_result)
#endif

static int faulty_score(void *state, const tern_reward_item *items, tern_reward_result *res,
                        size_t n)
{
    faulty *f = state;
    for (size_t i = 0; i < n; i++) {
        const tern_reward_item *it = &items[i];
        tern_reward_result *r = (tern_reward_result *)(void *)((char *)res + i * RESULT_STRIDE);
        if (r->size < RESULT_STRIDE)
            return host->fail(NULL, TERN_ERR, "result %zu has size %zu, under this build's %zu",
                              i, r->size, (size_t)RESULT_STRIDE);
        f->calls++;
        strcpy(r->reason, "ok");
        if (f->crash_every && f->calls % f->crash_every == 0)
            abort();
        if (f->hang_every && f->calls % f->hang_every == 0)
            for (;;)
                pause();
        if (it->response_len > 3 && memcmp(it->response, "ok:", 3) == 0) {
            r->reward = atof(it->response + 3);
            r->components[0] = (tern_reward_component){"accuracy", r->reward >= 0.5};
            r->n_components = 1;
        } else if (is(it, "crash")) {
            abort();
        } else if (is(it, "kill")) {
            raise(SIGKILL);
        } else if (is(it, "exit")) {
            _exit(7);
        } else if (is(it, "hang")) {
            for (;;)
                pause();
        } else if (it->response_len > 5 && memcmp(it->response, "slow:", 5) == 0) {
            long ms = atol(it->response + 5);
            struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
            nanosleep(&ts, NULL);
            r->reward = 1;
#ifndef FAULTY_ABI_1_9
        } else if (is(it, "refuse")) {
            /* ABI 1.10: this response alone gets no verdict */
            r->failure = TERN_REWARD_ERROR;
            strcpy(r->reason, "asked to refuse this one");
#endif
        } else if (is(it, "nan")) {
            r->reward = NAN;
        } else if (is(it, "fail")) {
            return host->fail(NULL, TERN_ERR, "asked to fail");
        } else if (is(it, "garbage")) {
            r->reward = 0.25;
            r->components[0] = (tern_reward_component){"Bad Name!", 1};
            r->components[1] = (tern_reward_component){NULL, 2};
            r->components[2] = (tern_reward_component){"fine", 3};
            r->n_components = 3;
            memset(r->reason, 'x', sizeof r->reason); /* no NUL */
        } else if (is(it, "overlong")) {
            r->reward = 1;
            strcpy(r->reason, "\xC0\xAF and \xED\xA0\x80 ok");
        } else if (is(it, "pid")) {
            r->reward = (double)getpid();
        } else if (is(it, "count")) {
            r->reward = (double)f->calls;
        } else {
            r->reward = 0;
            strcpy(r->reason, "unknown request");
        }
    }
    return TERN_OK;
}

static const tern_reward_ops faulty_ops = {
    .size = sizeof faulty_ops,
    .create = faulty_create,
    .destroy = faulty_destroy,
    .score = faulty_score,
};

static const tern_setting_spec faulty_settings[] = {
    TERN_SETTING(.name = "fail_create", .type = TERN_SETTING_BOOL, .def = "false",
                 .doc = "make create() fail"),
    TERN_SETTING(.name = "crash_every", .type = TERN_SETTING_INT, .def = "0", .min = 0, .max = 1e9,
                 .doc = "abort() on every Nth response this instance scores, whatever it says"),
    TERN_SETTING(.name = "hang_every", .type = TERN_SETTING_INT, .def = "0", .min = 0, .max = 1e9,
                 .doc = "never return from every Nth response this instance scores"),
    TERN_SETTINGS_END,
};

static const tern_plugin_descriptor faulty_descriptor = {
    .size = sizeof faulty_descriptor,
    .abi_major = TERN_ABI_MAJOR,
#ifdef FAULTY_NEWER_ABI
    .abi_minor = 99,
#elif defined FAULTY_ABI_1_9
    .abi_minor = 9,
#else
    .abi_minor = TERN_ABI_MINOR,
#endif
    .kind = TERN_KIND_REWARD,
    .name = "test_faulty_reward",
    .version = "0.1.0",
    .summary = "test reward: crashes, hangs or lies when the response asks",
    .caps = 0,
    .ops = &faulty_ops,
    .settings = faulty_settings,
};

#ifdef FAULTY_NO_ENTRY
TERN_PLUGIN_EXPORT const tern_plugin_descriptor *not_the_entry_point(const tern_host *h);
TERN_PLUGIN_EXPORT const tern_plugin_descriptor *not_the_entry_point(const tern_host *h)
#else
TERN_PLUGIN_EXPORT const tern_plugin_descriptor *tern_plugin_entry(const tern_host *h)
#endif
{
    host = h;
    return &faulty_descriptor;
}
