/*
 * fully_async.c: the `fully_async` sync plugin (diagram (c) of the design,
 * docs/architecture.md §4). The explorer never waits: before each batch it takes the
 * newest version the trainer has published (TERN_SYNC_USE_NEWEST); the
 * trainer publishes after step t when (t + 1) mod I == 0. Staleness then
 * follows the speeds of the two roles, so there is no fixed offset; the
 * optional max_staleness makes the trainer skip (and count) experiences more
 * than that many versions older than its own weights.
 *
 * The mode itself lives in ../common/sync_mode.h, shared with
 * multi_explorer; this is the one-explorer plugin around it.
 */
#include "../common/sync_mode.h"

static const tern_host *host;

static const sync_mode_kind kind = {.name = "fully_async", .fixed = 0,
                                    .check_offset = sync_mode_async_offset};

static int fa_create(tern_ctx *ctx, void **state)
{
    return sync_mode_create(host, ctx, &kind, state);
}

static const tern_sync_ops ops = SYNC_MODE_OPS(fa_create);

static const tern_setting_spec settings[] = {
    ASYNC_MODE_SETTINGS("explorer"),
    TERN_SETTINGS_END,
};

static const tern_plugin_descriptor descriptor = {
    .size = sizeof(tern_plugin_descriptor),
    .abi_major = TERN_ABI_MAJOR,
    .abi_minor = TERN_ABI_MINOR,
    .kind = TERN_KIND_SYNC,
    .name = "fully_async",
    .version = "1.0.0",
    .summary = "asynchronous: explorer never waits, uses the newest weights published every I "
               "steps",
    .caps = TERN_CAP_THREAD_SAFE,
    .ops = &ops,
    .settings = settings,
};

TERN_PLUGIN_EXPORT const tern_plugin_descriptor *tern_plugin_entry(const tern_host *h)
{
    host = h;
    return &descriptor;
}
