/*
 * multi_explorer.c: the `multi_explorer` sync plugin (diagram (d) of the
 * design, docs/architecture.md §4). N explorers feed one shared buffer; each behaves as
 * in `fully_async`: it never waits and, before each batch, takes the newest
 * version the trainer has published (TERN_SYNC_USE_NEWEST). Batches are
 * numbered globally across the explorers. The trainer publishes after step t
 * when (t + 1) mod I == 0. Staleness follows the roles' speeds; the optional
 * max_staleness makes the trainer skip (and count) experiences more than that
 * many versions older than its own weights.
 *
 * The mode itself lives in ../common/sync_mode.h, shared with fully_async;
 * this plugin adds the `explorers` setting.
 */
#include "../common/sync_mode.h"

static const tern_host *host;

static const sync_mode_kind kind = {.name = "multi_explorer", .fixed = 0,
                                    .explorers_setting = "explorers",
                                    .check_offset = sync_mode_async_offset};

static int me_create(tern_ctx *ctx, void **state)
{
    return sync_mode_create(host, ctx, &kind, state);
}

static const tern_sync_ops ops = SYNC_MODE_OPS(me_create);

static const tern_setting_spec settings[] = {
    TERN_SETTING(.name = "explorers", .type = TERN_SETTING_INT, .def = "2", .min = 1, .max = 64,
                 .aka = "explorer_count|num_explorers",
                 .doc = "N: explorer roles generating concurrently into one shared buffer "
                        "(ids 0..N-1; batches are numbered across all of them)"),
    ASYNC_MODE_SETTINGS("explorers"),
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
