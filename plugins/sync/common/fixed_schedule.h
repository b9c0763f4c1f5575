/*
 * fixed_schedule.h: the arithmetic of the fixed schedule of docs/architecture.md §4,
 * shared by the `synchronous` (offset 0) and `one_step_off` (offset >= 1)
 * sync plugins. Header only (static inline), pure functions of their
 * arguments, so safe from any thread.
 *
 * With interval I >= 1 and offset O >= 0:
 *   - explorer batch k is generated with version
 *       v(k) = I * max(0, floor((k - O) / I))      (0 for every k < O)
 *     and waits until that version is loaded;
 *   - the trainer publishes after step t when (t + 1) mod I == 0;
 *   - batch t is then trained with staleness t - v(t) in [O, O + I - 1] for
 *     t >= O (and t - 0 = t < O before), so O + I - 1 is the bound.
 *
 * Callers validate first: I >= 1, O >= 0, k >= 0, t >= 0.
 */
#ifndef TERN_PLUGINS_SYNC_FIXED_SCHEDULE_H
#define TERN_PLUGINS_SYNC_FIXED_SCHEDULE_H

#include <stdint.h>

#include "tern/host.h"

/* floor(a / b) for b > 0, also for negative a (C division truncates). */
static inline int64_t fixed_schedule_floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

/* v(k): the version explorer batch k is generated with. */
static inline int64_t fixed_schedule_version(int64_t interval, int64_t offset, int64_t batch)
{
    int64_t n = fixed_schedule_floor_div(batch - offset, interval);
    return n > 0 ? interval * n : 0;
}

/* 1 when the trainer publishes after step t ((t + 1) mod I == 0), else 0.
 * Written as t mod I == I - 1 so that t + 1 cannot overflow. */
static inline int fixed_schedule_publishes(int64_t interval, int64_t step)
{
    return step % interval == interval - 1;
}

/* The largest staleness the schedule produces: O + I - 1. */
static inline int64_t fixed_schedule_bound(int64_t interval, int64_t offset)
{
    return offset + interval - 1;
}

/*
 * Check a `max_staleness` setting against the schedule: -1 (the schedule's
 * own bound) or any value >= the bound is fine, and a value above the bound
 * changes nothing since the schedule never produces older experiences. A value
 * in [0, bound) would make the schedule generate batches only for the trainer
 * to skip them as stale, so it is refused with host->setting_error.
 */
static inline int fixed_schedule_check_max_staleness(const tern_host *host, tern_ctx *ctx,
                                                     int64_t interval, int64_t offset,
                                                     int64_t max_staleness)
{
    int64_t bound = fixed_schedule_bound(interval, offset);
    if (max_staleness < 0 || max_staleness >= bound)
        return TERN_OK;
    if (max_staleness < offset)
        return host->setting_error(
            ctx, "max_staleness",
            "%lld is below offset %lld: this fixed schedule trains every batch from batch %lld on "
            "with staleness at least %lld, so every one of them would be generated only to be "
            "skipped as stale; use -1 (the schedule's own bound, offset + interval - 1 = %lld) "
            "or a value >= %lld",
            (long long)max_staleness, (long long)offset, (long long)offset, (long long)offset,
            (long long)bound, (long long)bound);
    return host->setting_error(
        ctx, "max_staleness",
        "%lld is below this fixed schedule's staleness bound offset + interval - 1 = %lld: the "
        "batches of every interval whose staleness exceeds %lld (%lld of each %lld) would be "
        "generated only to be skipped as stale; use -1 (the bound) or a value >= %lld",
        (long long)max_staleness, (long long)bound, (long long)max_staleness,
        (long long)(bound - max_staleness), (long long)interval, (long long)bound);
}

#endif /* TERN_PLUGINS_SYNC_FIXED_SCHEDULE_H */
