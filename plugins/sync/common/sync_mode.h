/*
 * sync_mode.h: the four sync plugins' shared body (docs/architecture.md §4). Header
 * only: each plugin in plugins/sync/ is this plus its own offset rule,
 * settings table and descriptor.
 *
 * Fixed schedule (`synchronous`, `one_step_off`; fixed_schedule.h):
 *   batch k waits for version v(k) = I * max(0, floor((k - O) / I)); the
 *   staleness bound is O + I - 1, and a max_staleness below it is refused.
 * Asynchronous (`fully_async`, `multi_explorer`):
 *   an explorer never waits, it takes the newest version
 *   (TERN_SYNC_USE_NEWEST); staleness follows the roles' speeds and is
 *   bounded only by max_staleness (-1: unbounded).
 * Both: the trainer publishes after step t when (t + 1) mod I == 0, and
 * accept() refuses experiences more than `bound` versions old.
 *
 * Pure arithmetic on the settings, so every op is thread-safe.
 */
#ifndef TERN_PLUGINS_SYNC_MODE_H
#define TERN_PLUGINS_SYNC_MODE_H

#include <stdint.h>
#include <stdlib.h>

#include "fixed_schedule.h"
#include "tern/plugin.h"
#include "tern/sync.h"

/* What differs between the plugins. */
typedef struct sync_mode_kind {
    const char *name;              /* the plugin's, for messages */
    int fixed;                     /* 1: fixed schedule, 0: asynchronous */
    const char *explorers_setting; /* the setting naming N, or NULL for one explorer */
    /* TERN_OK if the plugin allows `offset`, else host->setting_error(...) */
    int (*check_offset)(const tern_host *host, tern_ctx *ctx, int64_t offset);
} sync_mode_kind;

typedef struct sync_mode {
    const tern_host *host;
    tern_ctx *ctx;
    const sync_mode_kind *kind;
    int64_t interval;   /* I >= 1 */
    int64_t offset;     /* O >= 0 (0 in the asynchronous modes) */
    int64_t bound;      /* staleness accept() allows: O + I - 1 (fixed), or
                           max_staleness (asynchronous; -1 unbounded) */
    uint32_t explorers; /* N >= 1 */
    const char *method;
} sync_mode;

/* The offset rule of the asynchronous modes. */
static inline int sync_mode_async_offset(const tern_host *host, tern_ctx *ctx, int64_t offset)
{
    if (offset == 0)
        return TERN_OK;
    return host->setting_error(ctx, "offset",
                               "must be 0, not %lld: the asynchronous modes have no "
                               "fixed offset (staleness follows the speeds of the "
                               "explorers and the trainer); bound it with max_staleness, or "
                               "for a fixed lead of the explorer use "
                               "plugin = \"one_step_off\"",
                               (long long)offset);
}

/* Read and check the settings. */
static inline int sync_mode_create(const tern_host *host, tern_ctx *ctx,
                                   const sync_mode_kind *kind, void **state)
{
    int64_t interval = 1, offset = 0, max_staleness = -1, explorers = 1;
    const char *method = NULL;
    int rc = host->get_int(ctx, "interval", &interval);
    if (rc == TERN_OK)
        rc = host->get_int(ctx, "offset", &offset);
    if (rc == TERN_OK)
        rc = host->get_int(ctx, "max_staleness", &max_staleness);
    if (rc == TERN_OK && kind->explorers_setting)
        rc = host->get_int(ctx, kind->explorers_setting, &explorers);
    if (rc == TERN_OK)
        rc = host->get_string(ctx, "method", &method);
    if (rc == TERN_OK)
        rc = kind->check_offset(host, ctx, offset);
    if (rc == TERN_OK && kind->fixed)
        rc = fixed_schedule_check_max_staleness(host, ctx, interval, offset, max_staleness);
    if (rc != TERN_OK)
        return rc;
    if (explorers < 1 || explorers > 64) /* the schema checks too: a second guard */
        return host->setting_error(ctx, kind->explorers_setting, "%lld is not in 1..64",
                                   (long long)explorers);
    sync_mode *s = calloc(1, sizeof *s);
    if (!s)
        return host->fail(ctx, TERN_ENOMEM, "out of memory");
    /* fixed: a larger max_staleness changes nothing, the schedule's bound holds */
    *s = (sync_mode){.host = host, .ctx = ctx, .kind = kind, .interval = interval,
                     .offset = offset,
                     .bound = kind->fixed ? fixed_schedule_bound(interval, offset) : max_staleness,
                     .explorers = (uint32_t)explorers, .method = method};
    *state = s;
    return TERN_OK;
}

static inline void sync_mode_destroy(void *state) { free(state); }

static inline int sync_mode_describe(void *state, tern_sync_info *info)
{
    const sync_mode *s = state;
    if (!info || !TERN_HAS(info, max_staleness))
        return s->host->fail(s->ctx, TERN_EINVAL, "describe: info is NULL or too small");
    info->transport = s->method;
    info->explorers = s->explorers;
    info->max_staleness = s->bound;
    return TERN_OK;
}

static inline int sync_mode_explorer_plan(void *state, uint32_t explorer, int64_t batch,
                                          tern_sync_plan *plan)
{
    const sync_mode *s = state;
    if (!plan || !TERN_HAS(plan, version))
        return s->host->fail(s->ctx, TERN_EINVAL, "explorer_plan: plan is NULL or too small");
    if (explorer >= s->explorers || batch < 0)
        return s->host->fail(s->ctx, TERN_EINVAL,
                             "explorer_plan: explorer %u, batch %lld: %s runs %u explorer(s) "
                             "(0..%u) on batches numbered from 0%s", explorer, (long long)batch,
                             s->kind->name, s->explorers, s->explorers - 1,
                             !s->kind->fixed && !s->kind->explorers_setting
                                 ? " (several explorers are the multi_explorer mode)" : "");
    if (s->kind->fixed) {
        plan->mode = TERN_SYNC_WAIT_FOR_VERSION;
        plan->version = fixed_schedule_version(s->interval, s->offset, batch);
    } else {
        plan->mode = TERN_SYNC_USE_NEWEST;
        plan->version = -1; /* no version to wait for */
    }
    return TERN_OK;
}

static inline int sync_mode_trainer_publishes(void *state, int64_t step)
{
    const sync_mode *s = state;
    if (step < 0)
        return s->host->fail(s->ctx, TERN_EINVAL, "trainer_publishes: step %lld < 0",
                             (long long)step);
    return fixed_schedule_publishes(s->interval, step);
}

static inline int sync_mode_accept(void *state, int64_t experience_version,
                                   int64_t trainer_version)
{
    const sync_mode *s = state;
    if (experience_version < 0 || trainer_version < experience_version)
        return s->host->fail(s->ctx, TERN_EINVAL,
                             "accept: experience version %lld is negative or newer than the "
                             "trainer's %lld",
                             (long long)experience_version, (long long)trainer_version);
    return s->bound < 0 || trainer_version - experience_version <= s->bound;
}

/* The ops table of every sync plugin, around its own create. */
#define SYNC_MODE_OPS(create_fn)                                                                \
    {                                                                                           \
        .size = sizeof(tern_sync_ops), .create = create_fn, .destroy = sync_mode_destroy,       \
        .describe = sync_mode_describe, .explorer_plan = sync_mode_explorer_plan,               \
        .trainer_publishes = sync_mode_trainer_publishes, .accept = sync_mode_accept            \
    }

/* The settings both fixed-schedule modes end with, after their own interval
 * and offset (`bound`: the schedule's staleness bound, as the doc writes it). */
#define FIXED_MODE_SETTINGS(bound)                                                               \
    TERN_SETTING(.name = "method", .type = TERN_SETTING_STRING, .def = "\"memory\"",             \
                 .aka = "transport|weight_sync",                                                  \
                 .doc = "how weights reach the explorer: memory (a copy between threads of one " \
                        "process; mpi across ranks), checkpoint (atomically written weight "    \
                        "files), or a transport plugin's name (nccl)"),                         \
    TERN_SETTING(.name = "max_staleness", .type = TERN_SETTING_INT, .def = "-1", .min = -1,      \
                 .max = 1e9, .aka = "staleness|max_stale",                                       \
                 .doc = "versions an experience may lag the trainer: -1 = the schedule's bound " \
                        bound "; a value >= 0 below it is refused (batches would be "            \
                        "generated only to be skipped), a value above it changes nothing")

/* Settings of both asynchronous modes (`who`: "explorer" or "explorers"). */
#define ASYNC_MODE_SETTINGS(who)                                                                \
    TERN_SETTING(.name = "interval", .type = TERN_SETTING_INT, .def = "1", .min = 1,            \
                 .max = 1e6, .aka = "sync_interval",                                            \
                 .doc = "I: the trainer publishes its weights after every I-th step; before "   \
                        "each batch the newest published version is loaded, without waiting"), \
    TERN_SETTING(.name = "offset", .type = TERN_SETTING_INT, .def = "0", .min = 0, .max = 1e6, \
                 .aka = "sync_offset",                                                          \
                 .doc = "must be 0: asynchronous modes have no fixed offset (bound staleness "  \
                        "with max_staleness; a fixed lead is the one_step_off mode)"),          \
    TERN_SETTING(.name = "method", .type = TERN_SETTING_STRING, .def = "\"checkpoint\"",        \
                 .aka = "transport|weight_sync",                                                 \
                 .doc = "how weights reach the " who ": checkpoint (atomically written "       \
                        "weight files), memory (a copy between threads of one process; mpi "   \
                        "across ranks), or a transport plugin's name (nccl)"),                  \
    TERN_SETTING(.name = "max_staleness", .type = TERN_SETTING_INT, .def = "-1", .min = -1,     \
                 .max = 1e9, .aka = "staleness|max_stale",                                      \
                 .doc = "-1 = unbounded; else the trainer at version w trains an experience "   \
                        "of version v only if w - v <= max_staleness, and skips (counts) it "   \
                        "otherwise")

#endif /* TERN_PLUGINS_SYNC_MODE_H */
