/*
 * one_step_off.c: the `one_step_off` sync plugin (diagram (b) of the design;
 * seed 000 right is interval 1, offset 4). The fixed schedule of DESIGN.md §4
 * with offset O >= 1 (arithmetic in ../common/fixed_schedule.h):
 *
 *   explorer batch k is generated with version
 *   v(k) = I * max(0, floor((k - O) / I)) and waits until that version is
 *   loaded, so the explorer runs O batches ahead of the trainer; the trainer
 *   publishes after step t when (t + 1) mod I == 0. Batch t is trained with
 *   staleness t - v(t) in [O, O + I - 1] for t >= O.
 *
 * With I = 1, O = 1 (the defaults) the explorer generates batch k + 1 while
 * the trainer trains on batch k. Offset 0 is the `synchronous` plugin.
 * The plugin is pure arithmetic on its settings, so every op is thread-safe.
 */
#include <stdlib.h>

#include "../common/fixed_schedule.h"
#include "tern/plugin.h"
#include "tern/sync.h"

static const tern_host *host;

typedef struct one_step_off {
    int64_t interval; /* I >= 1 */
    int64_t offset;   /* O >= 1 */
    int64_t bound;    /* O + I - 1: the schedule's staleness bound */
    const char *method;
    tern_ctx *ctx;
} one_step_off;

static int oso_create(tern_ctx *ctx, void **state)
{
    int64_t interval = 1, offset = 1, max_staleness = -1;
    const char *method = NULL;
    int rc = host->get_int(ctx, "interval", &interval);
    if (rc == TERN_OK)
        rc = host->get_int(ctx, "offset", &offset);
    if (rc == TERN_OK)
        rc = host->get_int(ctx, "max_staleness", &max_staleness);
    if (rc == TERN_OK)
        rc = host->get_string(ctx, "method", &method);
    if (rc != TERN_OK)
        return rc;
    if (offset < 1)
        return host->setting_error(ctx, "offset",
                                   "one_step_off needs offset >= 1 (the explorer running that "
                                   "many batches ahead of the trainer); offset %lld, where the "
                                   "explorer waits for the trainer's newest weights, is the "
                                   "synchronous mode (plugin = \"synchronous\")",
                                   (long long)offset);
    rc = fixed_schedule_check_max_staleness(host, ctx, interval, offset, max_staleness);
    if (rc != TERN_OK)
        return rc;
    one_step_off *s = calloc(1, sizeof *s);
    if (!s)
        return host->fail(ctx, TERN_ENOMEM, "out of memory");
    s->interval = interval;
    s->offset = offset;
    s->bound = fixed_schedule_bound(interval, offset);
    s->method = method;
    s->ctx = ctx;
    *state = s;
    return TERN_OK;
}

static void oso_destroy(void *state) { free(state); }

static int oso_describe(void *state, tern_sync_info *info)
{
    const one_step_off *s = state;
    if (!info || !TERN_HAS(info, max_staleness))
        return host->fail(s->ctx, TERN_EINVAL, "describe: info is NULL or too small");
    info->transport = s->method;
    info->explorers = 1;
    info->max_staleness = s->bound; /* a larger max_staleness changes nothing */
    return TERN_OK;
}

static int oso_explorer_plan(void *state, uint32_t explorer, int64_t batch, tern_sync_plan *plan)
{
    const one_step_off *s = state;
    if (!plan || !TERN_HAS(plan, version))
        return host->fail(s->ctx, TERN_EINVAL, "explorer_plan: plan is NULL or too small");
    if (explorer != 0 || batch < 0)
        return host->fail(s->ctx, TERN_EINVAL,
                          "explorer_plan: explorer %u, batch %lld: one_step_off runs one "
                          "explorer (0) on batches numbered from 0", explorer, (long long)batch);
    plan->mode = TERN_SYNC_WAIT_FOR_VERSION;
    plan->version = fixed_schedule_version(s->interval, s->offset, batch);
    return TERN_OK;
}

static int oso_trainer_publishes(void *state, int64_t step)
{
    const one_step_off *s = state;
    if (step < 0)
        return host->fail(s->ctx, TERN_EINVAL, "trainer_publishes: step %lld < 0",
                          (long long)step);
    return fixed_schedule_publishes(s->interval, step);
}

static int oso_accept(void *state, int64_t experience_version, int64_t trainer_version)
{
    const one_step_off *s = state;
    if (experience_version < 0 || trainer_version < experience_version)
        return host->fail(s->ctx, TERN_EINVAL,
                          "accept: experience version %lld is negative or newer than the "
                          "trainer's %lld",
                          (long long)experience_version, (long long)trainer_version);
    return trainer_version - experience_version <= s->bound;
}

static const tern_sync_ops ops = {
    .size = sizeof(tern_sync_ops),
    .create = oso_create,
    .destroy = oso_destroy,
    .describe = oso_describe,
    .explorer_plan = oso_explorer_plan,
    .trainer_publishes = oso_trainer_publishes,
    .accept = oso_accept,
};

static const tern_setting_spec settings[] = {
    TERN_SETTING(.name = "interval", .type = TERN_SETTING_INT, .def = "1", .min = 1, .max = 1e6,
                 .aka = "sync_interval",
                 .doc = "I: the trainer publishes after every I-th step; explorer batch k is "
                        "generated with version I*max(0,floor((k-O)/I)) and waits for it"),
    TERN_SETTING(.name = "offset", .type = TERN_SETTING_INT, .def = "1", .min = 0, .max = 1e6,
                 .aka = "sync_offset",
                 .doc = "O >= 1: batches the explorer runs ahead of the trainer; batch t is "
                        "trained with staleness O to O+I-1 (0 is the synchronous plugin)"),
    TERN_SETTING(.name = "method", .type = TERN_SETTING_STRING, .def = "\"memory\"",
                 .choices = "memory|checkpoint", .aka = "transport|weight_sync",
                 .doc = "how weights reach the explorer: memory (a copy between threads of one "
                        "process) or checkpoint (atomically written weight files)"),
    TERN_SETTING(.name = "max_staleness", .type = TERN_SETTING_INT, .def = "-1", .min = -1,
                 .max = 1e9, .aka = "staleness|max_stale",
                 .doc = "versions an experience may lag the trainer: -1 = the schedule's bound "
                        "offset+interval-1; a value >= 0 below it is refused (batches would be "
                        "generated only to be skipped), a value above it changes nothing"),
    TERN_SETTINGS_END,
};

static const tern_plugin_descriptor descriptor = {
    .size = sizeof(tern_plugin_descriptor),
    .abi_major = TERN_ABI_MAJOR,
    .abi_minor = TERN_ABI_MINOR,
    .kind = TERN_KIND_SYNC,
    .name = "one_step_off",
    .version = "1.0.0",
    .summary = "fixed schedule, offset O >= 1: explorer runs O batches ahead of the trainer",
    .caps = TERN_CAP_THREAD_SAFE,
    .ops = &ops,
    .settings = settings,
};

TERN_PLUGIN_EXPORT const tern_plugin_descriptor *tern_plugin_entry(const tern_host *h)
{
    host = h;
    return &descriptor;
}
