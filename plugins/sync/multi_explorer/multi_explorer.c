/*
 * multi_explorer.c: the `multi_explorer` sync plugin (diagram (d) of the
 * design, DESIGN.md §4). N explorers feed one shared buffer; each behaves as
 * in `fully_async`: it never waits and, before each batch, takes the newest
 * version the trainer has published (TERN_SYNC_USE_NEWEST). Batches are
 * numbered globally across the explorers. The trainer publishes after step t
 * when (t + 1) mod I == 0. Staleness follows the roles' speeds; the optional
 * max_staleness makes the trainer skip (and count) experiences more than that
 * many versions older than its own weights.
 *
 * The plugin is pure arithmetic on its settings, so every op is thread-safe.
 */
#include <stdlib.h>

#include "../common/fixed_schedule.h"
#include "tern/plugin.h"
#include "tern/sync.h"

static const tern_host *host;

typedef struct multi_explorer {
    int64_t interval;      /* I >= 1 */
    int64_t max_staleness; /* -1: unbounded */
    uint32_t explorers;    /* N in [1, 64] */
    const char *method;
    tern_ctx *ctx;
} multi_explorer;

static int me_create(tern_ctx *ctx, void **state)
{
    int64_t interval = 1, offset = 0, max_staleness = -1, explorers = 2;
    const char *method = NULL;
    int rc = host->get_int(ctx, "interval", &interval);
    if (rc == TERN_OK)
        rc = host->get_int(ctx, "offset", &offset);
    if (rc == TERN_OK)
        rc = host->get_int(ctx, "max_staleness", &max_staleness);
    if (rc == TERN_OK)
        rc = host->get_int(ctx, "explorers", &explorers);
    if (rc == TERN_OK)
        rc = host->get_string(ctx, "method", &method);
    if (rc != TERN_OK)
        return rc;
    if (offset != 0)
        return host->setting_error(ctx, "offset",
                                   "must be 0, not %lld: the asynchronous modes have no "
                                   "fixed offset (staleness follows the speeds of the "
                                   "explorers and the trainer); bound it with max_staleness, or "
                                   "for a fixed lead of the explorer use "
                                   "plugin = \"one_step_off\"",
                                   (long long)offset);
    if (explorers < 1 || explorers > 64) /* the spec's range; checked before create */
        return host->setting_error(ctx, "explorers", "%lld is not in 1..64",
                                   (long long)explorers);
    multi_explorer *s = calloc(1, sizeof *s);
    if (!s)
        return host->fail(ctx, TERN_ENOMEM, "out of memory");
    s->interval = interval;
    s->max_staleness = max_staleness;
    s->explorers = (uint32_t)explorers;
    s->method = method;
    s->ctx = ctx;
    *state = s;
    return TERN_OK;
}

static void me_destroy(void *state) { free(state); }

static int me_describe(void *state, tern_sync_info *info)
{
    const multi_explorer *s = state;
    if (!info || !TERN_HAS(info, max_staleness))
        return host->fail(s->ctx, TERN_EINVAL, "describe: info is NULL or too small");
    info->transport = s->method;
    info->explorers = s->explorers;
    info->max_staleness = s->max_staleness;
    return TERN_OK;
}

static int me_explorer_plan(void *state, uint32_t explorer, int64_t batch, tern_sync_plan *plan)
{
    const multi_explorer *s = state;
    if (!plan || !TERN_HAS(plan, version))
        return host->fail(s->ctx, TERN_EINVAL, "explorer_plan: plan is NULL or too small");
    if (explorer >= s->explorers || batch < 0)
        return host->fail(s->ctx, TERN_EINVAL,
                          "explorer_plan: explorer %u, batch %lld: multi_explorer runs explorers "
                          "0..%u on batches numbered from 0", explorer, (long long)batch,
                          s->explorers - 1);
    plan->mode = TERN_SYNC_USE_NEWEST;
    plan->version = -1; /* no version to wait for */
    return TERN_OK;
}

static int me_trainer_publishes(void *state, int64_t step)
{
    const multi_explorer *s = state;
    if (step < 0)
        return host->fail(s->ctx, TERN_EINVAL, "trainer_publishes: step %lld < 0",
                          (long long)step);
    return fixed_schedule_publishes(s->interval, step);
}

static int me_accept(void *state, int64_t experience_version, int64_t trainer_version)
{
    const multi_explorer *s = state;
    if (experience_version < 0 || trainer_version < experience_version)
        return host->fail(s->ctx, TERN_EINVAL,
                          "accept: experience version %lld is negative or newer than the "
                          "trainer's %lld",
                          (long long)experience_version, (long long)trainer_version);
    return s->max_staleness < 0 || trainer_version - experience_version <= s->max_staleness;
}

static const tern_sync_ops ops = {
    .size = sizeof(tern_sync_ops),
    .create = me_create,
    .destroy = me_destroy,
    .describe = me_describe,
    .explorer_plan = me_explorer_plan,
    .trainer_publishes = me_trainer_publishes,
    .accept = me_accept,
};

static const tern_setting_spec settings[] = {
    TERN_SETTING(.name = "explorers", .type = TERN_SETTING_INT, .def = "2", .min = 1, .max = 64,
                 .aka = "explorer_count|num_explorers",
                 .doc = "N: explorer roles generating concurrently into one shared buffer "
                        "(ids 0..N-1; batches are numbered across all of them)"),
    TERN_SETTING(.name = "interval", .type = TERN_SETTING_INT, .def = "1", .min = 1, .max = 1e6,
                 .aka = "sync_interval",
                 .doc = "I: the trainer publishes its weights after every I-th step; each "
                        "explorer never waits and takes the newest published version"),
    TERN_SETTING(.name = "offset", .type = TERN_SETTING_INT, .def = "0", .min = 0, .max = 1e6,
                 .aka = "sync_offset",
                 .doc = "must be 0: asynchronous modes have no fixed offset (bound staleness "
                        "with max_staleness; a fixed lead is the one_step_off mode)"),
    TERN_SETTING(.name = "method", .type = TERN_SETTING_STRING, .def = "\"checkpoint\"",
                 .choices = "memory|checkpoint", .aka = "transport|weight_sync",
                 .doc = "how weights reach the explorers: checkpoint (atomically written weight "
                        "files) or memory (a copy between threads of one process)"),
    TERN_SETTING(.name = "max_staleness", .type = TERN_SETTING_INT, .def = "-1", .min = -1,
                 .max = 1e9, .aka = "staleness|max_stale",
                 .doc = "-1 = unbounded; else the trainer at version w trains an experience of "
                        "version v only if w - v <= max_staleness, and skips (counts) it "
                        "otherwise"),
    TERN_SETTINGS_END,
};

static const tern_plugin_descriptor descriptor = {
    .size = sizeof(tern_plugin_descriptor),
    .abi_major = TERN_ABI_MAJOR,
    .abi_minor = TERN_ABI_MINOR,
    .kind = TERN_KIND_SYNC,
    .name = "multi_explorer",
    .version = "1.0.0",
    .summary = "asynchronous, N explorers into one buffer: none waits, each uses the newest "
               "weights",
    .caps = TERN_CAP_THREAD_SAFE,
    .ops = &ops,
    .settings = settings,
};

TERN_PLUGIN_EXPORT const tern_plugin_descriptor *tern_plugin_entry(const tern_host *h)
{
    host = h;
    return &descriptor;
}
