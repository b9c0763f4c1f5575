/*
 * one_step_off.c: the `one_step_off` sync plugin (diagram (b) of the design;
 * seed 000 right is interval 1, offset 4). The fixed schedule of
 * docs/architecture.md §4 with offset O >= 1:
 *
 *   explorer batch k is generated with version
 *   v(k) = I * max(0, floor((k - O) / I)) and waits until that version is
 *   loaded, so the explorer runs O batches ahead of the trainer; the trainer
 *   publishes after step t when (t + 1) mod I == 0. Batch t is trained with
 *   staleness t - v(t) in [O, O + I - 1] for t >= O.
 *
 * With I = 1, O = 1 (the defaults) the explorer generates batch k + 1 while
 * the trainer trains on batch k. Offset 0 is the `synchronous` plugin.
 * The ops are ../common/sync_mode.h (arithmetic in fixed_schedule.h); this
 * file is the offset rule, the settings and the descriptor.
 */
#include "../common/sync_mode.h"

static const tern_host *host;

static int one_step_off_offset(const tern_host *h, tern_ctx *ctx, int64_t offset)
{
    if (offset >= 1)
        return TERN_OK;
    return h->setting_error(ctx, "offset",
                            "one_step_off needs offset >= 1 (the explorer running that "
                            "many batches ahead of the trainer); offset %lld, where the "
                            "explorer waits for the trainer's newest weights, is the "
                            "synchronous mode (plugin = \"synchronous\")",
                            (long long)offset);
}

static const sync_mode_kind kind = {.name = "one_step_off", .fixed = 1,
                                    .check_offset = one_step_off_offset};

static int oso_create(tern_ctx *ctx, void **state)
{
    return sync_mode_create(host, ctx, &kind, state);
}

static const tern_sync_ops ops = SYNC_MODE_OPS(oso_create);

static const tern_setting_spec settings[] = {
    TERN_SETTING(.name = "interval", .type = TERN_SETTING_INT, .def = "1", .min = 1, .max = 1e6,
                 .aka = "sync_interval",
                 .doc = "I: the trainer publishes after every I-th step; explorer batch k is "
                        "generated with version I*max(0,floor((k-O)/I)) and waits for it"),
    TERN_SETTING(.name = "offset", .type = TERN_SETTING_INT, .def = "1", .min = 0, .max = 1e6,
                 .aka = "sync_offset",
                 .doc = "O >= 1: batches the explorer runs ahead of the trainer; batch t is "
                        "trained with staleness O to O+I-1 (0 is the synchronous plugin)"),
    FIXED_MODE_SETTINGS("offset+interval-1"),
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
