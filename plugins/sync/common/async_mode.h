/*
 * async_mode.h: the asynchronous modes of DESIGN.md §4, shared by the
 * `fully_async` (one explorer) and `multi_explorer` (N explorers) sync
 * plugins. Header only: each plugin wraps these in its own ops table,
 * settings and descriptor.
 *
 *   - an explorer never waits: before each batch it takes the newest version
 *     the trainer has published (TERN_SYNC_USE_NEWEST);
 *   - the trainer publishes after step t when (t + 1) mod I == 0;
 *   - staleness follows the roles' speeds, so there is no fixed offset; the
 *     optional max_staleness makes the trainer skip (and count) experiences
 *     more than that many versions older than its weights.
 *
 * Pure arithmetic on the settings, so every op is thread-safe.
 */
#ifndef TERN_PLUGINS_SYNC_ASYNC_MODE_H
#define TERN_PLUGINS_SYNC_ASYNC_MODE_H

#include <stdint.h>
#include <stdlib.h>

#include "fixed_schedule.h"
#include "tern/plugin.h"
#include "tern/sync.h"

typedef struct async_mode {
    const tern_host *host;
    tern_ctx *ctx;
    const char *name;      /* the plugin's, for messages */
    int64_t interval;      /* I >= 1 */
    int64_t max_staleness; /* -1: unbounded */
    uint32_t explorers;    /* N >= 1 */
    const char *method;
} async_mode;

/* Read and check the settings; `explorers_setting` NULL means one explorer. */
static inline int async_mode_create(const tern_host *host, tern_ctx *ctx, const char *name,
                                    const char *explorers_setting, void **state)
{
    int64_t interval = 1, offset = 0, max_staleness = -1, explorers = 1;
    const char *method = NULL;
    int rc = host->get_int(ctx, "interval", &interval);
    if (rc == TERN_OK)
        rc = host->get_int(ctx, "offset", &offset);
    if (rc == TERN_OK)
        rc = host->get_int(ctx, "max_staleness", &max_staleness);
    if (rc == TERN_OK && explorers_setting)
        rc = host->get_int(ctx, explorers_setting, &explorers);
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
    if (explorers < 1 || explorers > 64) /* the schema checks too: a second guard */
        return host->setting_error(ctx, explorers_setting, "%lld is not in 1..64",
                                   (long long)explorers);
    async_mode *s = calloc(1, sizeof *s);
    if (!s)
        return host->fail(ctx, TERN_ENOMEM, "out of memory");
    *s = (async_mode){.host = host, .ctx = ctx, .name = name, .interval = interval,
                      .max_staleness = max_staleness, .explorers = (uint32_t)explorers,
                      .method = method};
    *state = s;
    return TERN_OK;
}

static inline void async_mode_destroy(void *state) { free(state); }

static inline int async_mode_describe(void *state, tern_sync_info *info)
{
    const async_mode *s = state;
    if (!info || !TERN_HAS(info, max_staleness))
        return s->host->fail(s->ctx, TERN_EINVAL, "describe: info is NULL or too small");
    info->transport = s->method;
    info->explorers = s->explorers;
    info->max_staleness = s->max_staleness;
    return TERN_OK;
}

static inline int async_mode_explorer_plan(void *state, uint32_t explorer, int64_t batch,
                                           tern_sync_plan *plan)
{
    const async_mode *s = state;
    if (!plan || !TERN_HAS(plan, version))
        return s->host->fail(s->ctx, TERN_EINVAL, "explorer_plan: plan is NULL or too small");
    if (explorer >= s->explorers || batch < 0)
        return s->host->fail(s->ctx, TERN_EINVAL,
                             "explorer_plan: explorer %u, batch %lld: %s runs %u explorer(s) "
                             "(0..%u) on batches numbered from 0%s", explorer, (long long)batch,
                             s->name, s->explorers, s->explorers - 1,
                             s->explorers == 1 ? " (several explorers are the multi_explorer "
                                                 "mode)" : "");
    plan->mode = TERN_SYNC_USE_NEWEST;
    plan->version = -1; /* no version to wait for */
    return TERN_OK;
}

static inline int async_mode_trainer_publishes(void *state, int64_t step)
{
    const async_mode *s = state;
    if (step < 0)
        return s->host->fail(s->ctx, TERN_EINVAL, "trainer_publishes: step %lld < 0",
                             (long long)step);
    return fixed_schedule_publishes(s->interval, step);
}

static inline int async_mode_accept(void *state, int64_t experience_version,
                                    int64_t trainer_version)
{
    const async_mode *s = state;
    if (experience_version < 0 || trainer_version < experience_version)
        return s->host->fail(s->ctx, TERN_EINVAL,
                             "accept: experience version %lld is negative or newer than the "
                             "trainer's %lld",
                             (long long)experience_version, (long long)trainer_version);
    return s->max_staleness < 0 || trainer_version - experience_version <= s->max_staleness;
}

/* The settings both modes share (`who`: "explorer" or "explorers"). */
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
                 .choices = "memory|checkpoint", .aka = "transport|weight_sync",                \
                 .doc = "how weights reach the " who ": checkpoint (atomically written "       \
                        "weight files) or memory (a copy between threads of one process)"),     \
    TERN_SETTING(.name = "max_staleness", .type = TERN_SETTING_INT, .def = "-1", .min = -1,     \
                 .max = 1e9, .aka = "staleness|max_stale",                                      \
                 .doc = "-1 = unbounded; else the trainer at version w trains an experience "   \
                        "of version v only if w - v <= max_staleness, and skips (counts) it "   \
                        "otherwise")

#endif /* TERN_PLUGINS_SYNC_ASYNC_MODE_H */
