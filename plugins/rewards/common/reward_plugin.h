/* reward_plugin.h: the ops that the reward plugins judging one response at a
 * time (math, k12, vision) write alike: keeping an instance's settings, and
 * score() as one verdict per item. Header-only (static inline), like
 * reward_text.h, so that each plugin stays one self-contained shared object. */
#ifndef TERN_REWARD_PLUGIN_H
#define TERN_REWARD_PLUGIN_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <tern/host.h>
#include <tern/reward.h>

/* The end of create() for a plugin whose instance is its settings: a heap
 * copy of tmp[0..size) into *state (freed by destroy()), TERN_OK, or
 * TERN_ENOMEM after host->fail naming the plugin `name`. */
static inline int reward_keep_state(const tern_host *host, tern_ctx *ctx, const char *name,
                                    const void *tmp, size_t size, void **state)
{
    void *st = malloc(size);
    if (!st)
        return host->fail(ctx, TERN_ENOMEM, "%s: out of memory creating the reward", name);
    memcpy(st, tmp, size);
    *state = st;
    return TERN_OK;
}

/* The verdict on one response into *r: TERN_OK, or a failure status. */
typedef int (*reward_score_one_fn)(const void *state, const tern_reward_item *item,
                                   tern_reward_result *r);

/* score() as one(state, &items[i], &results[i]) for each i in [0, n): TERN_OK,
 * TERN_EINVAL after host->fail naming the plugin `name` when the arrays are
 * missing (*at = n), or the first failure of one(), which ends the batch
 * (*at = its index; `at` may be NULL). */
static inline int reward_score_each(const tern_host *host, tern_ctx *ctx, const char *name,
                                    const void *state, reward_score_one_fn one,
                                    const tern_reward_item *items, tern_reward_result *results,
                                    size_t n, size_t *at)
{
    if (at)
        *at = n;
    if (n && (!items || !results))
        return host->fail(ctx, TERN_EINVAL,
                          "%s: score() was given no items or results for %zu responses", name, n);
    for (size_t i = 0; i < n; i++) {
        int rc = one(state, &items[i], &results[i]);
        if (rc != TERN_OK) {
            if (at)
                *at = i;
            return rc;
        }
    }
    return TERN_OK;
}

#endif
