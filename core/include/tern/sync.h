/*
 * tern/sync.h: the ops table of a synchronisation strategy (TERN_KIND_SYNC).
 *
 * A sync plugin is the schedule, not the machinery: the core's explorer and
 * trainer roles ask it three questions and obey the answers (docs/architecture.md §4):
 *
 *   1. explorer_plan: before generating batch k, which weights must be loaded?
 *      Either "wait until version v is loaded" (fixed schedules) or "take the
 *      newest published version, never wait" (asynchronous modes).
 *   2. trainer_publishes: after trainer step t, publish the weights?
 *   3. accept: may an experience generated with version v be trained on by a
 *      trainer at version w (the staleness bound)?
 *
 * Versions: the weight version is the number of trainer steps applied (the
 * initial weights are version 0). Explorer batches are numbered k = 0, 1, ...
 * globally across explorers; trainer steps t = 0, 1, ...
 *
 * Thread-safety: every op after create must be safe to call concurrently
 * (explorer threads and the trainer thread ask at the same time); the answers
 * must depend only on the arguments and the settings, so they are the same
 * from any thread and on replay.
 */
#ifndef TERN_SYNC_H
#define TERN_SYNC_H

#include <stddef.h>
#include <stdint.h>

#include "abi.h"
#include "host.h"

#ifdef __cplusplus
extern "C" {
#endif

/* tern_sync_plan.mode */
typedef enum tern_sync_mode {
    TERN_SYNC_WAIT_FOR_VERSION = 1, /* wait until `version` is loaded, then generate with it */
    TERN_SYNC_USE_NEWEST = 2        /* never wait: use the newest published version */
} tern_sync_mode;

/* The answer to explorer_plan. */
typedef struct tern_sync_plan {
    size_t size;     /* set by the caller to sizeof(tern_sync_plan) */
    uint32_t mode;   /* a tern_sync_mode */
    int64_t version; /* WAIT_FOR_VERSION: the version batch k is generated with */
} tern_sync_plan;

/* What the core needs to set the roles up. */
typedef struct tern_sync_info {
    size_t size;           /* set by the caller to sizeof(tern_sync_info) */
    const char *transport; /* how weights travel: "memory", "checkpoint" or "nccl";
                              owned by the plugin, valid until destroy */
    uint32_t explorers;    /* number of explorer roles to run (>= 1) */
    int64_t max_staleness; /* accept() refuses experiences older than this many
                              versions; -1 when unbounded */
} tern_sync_info;

typedef struct tern_sync_ops {
    size_t size; /* sizeof(tern_sync_ops) as built */

    /* Make an instance from the settings in ctx; validate them (e.g. an offset
     * the mode does not allow) with host->setting_error(). */
    int (*create)(tern_ctx *ctx, void **state);
    void (*destroy)(void *state);

    /* Fill *info (info->size set by the caller). */
    int (*describe)(void *state, tern_sync_info *info);

    /* Which weights explorer `explorer` (0-based) uses for global batch
     * `batch` (>= 0). Fills *plan (plan->size set by the caller). */
    int (*explorer_plan)(void *state, uint32_t explorer, int64_t batch, tern_sync_plan *plan);

    /* 1 if the trainer publishes its weights after finishing step `step`
     * (>= 0), else 0. Negative on error. */
    int (*trainer_publishes)(void *state, int64_t step);

    /* 1 if an experience generated with `experience_version` may be trained on
     * by a trainer holding `trainer_version`, 0 if it must be skipped (and is
     * counted as stale), negative on error. */
    int (*accept)(void *state, int64_t experience_version, int64_t trainer_version);
} tern_sync_ops;

#ifdef __cplusplus
}
#endif
#endif /* TERN_SYNC_H */
