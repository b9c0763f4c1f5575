/*
 * synchronous.c: the `synchronous` sync plugin (diagram (a) of the design;
 * seed 000 left with interval 4). The fixed schedule of docs/architecture.md
 * §4 with offset O = 0:
 *
 *   explorer batch k is generated with version v(k) = I * floor(k / I) and
 *   waits until that version is loaded; the trainer publishes after step t
 *   when (t + 1) mod I == 0. Batch t is trained with staleness
 *   t - v(t) = t mod I, in [0, I - 1].
 *
 * With I = 1 this is strictly on-policy: generate, train, publish, repeat.
 * The ops are ../common/sync_mode.h (arithmetic in fixed_schedule.h); this
 * file is the offset rule, the settings and the descriptor.
 */
#include "../common/sync_mode.h"

static const tern_host *host;

static int synchronous_offset(const tern_host *h, tern_ctx *ctx, int64_t offset)
{
    if (offset == 0)
        return TERN_OK;
    return h->setting_error(ctx, "offset",
                            "synchronous runs with offset 0; an explorer running ahead of "
                            "the trainer by %lld batches is the one-step-off-policy mode "
                            "(plugin = \"one_step_off\")",
                            (long long)offset);
}

static const sync_mode_kind kind = {.name = "synchronous", .fixed = 1,
                                    .check_offset = synchronous_offset};

static int sync_create(tern_ctx *ctx, void **state)
{
    return sync_mode_create(host, ctx, &kind, state);
}

static const tern_sync_ops ops = SYNC_MODE_OPS(sync_create);

static const tern_setting_spec settings[] = {
    TERN_SETTING(.name = "interval", .type = TERN_SETTING_INT, .def = "1", .min = 1, .max = 1e6,
                 .aka = "sync_interval",
                 .doc = "I: the trainer publishes after every I-th step; explorer batch k is "
                        "generated with version I*floor(k/I) and waits for it"),
    TERN_SETTING(.name = "offset", .type = TERN_SETTING_INT, .def = "0", .min = 0, .max = 1e6,
                 .aka = "sync_offset",
                 .doc = "O: must be 0 here (a positive offset is the one_step_off mode)"),
    FIXED_MODE_SETTINGS("interval-1"),
    TERN_SETTINGS_END,
};

static const tern_plugin_descriptor descriptor = {
    .size = sizeof(tern_plugin_descriptor),
    .abi_major = TERN_ABI_MAJOR,
    .abi_minor = TERN_ABI_MINOR,
    .kind = TERN_KIND_SYNC,
    .name = "synchronous",
    .version = "1.0.0",
    .summary = "fixed schedule, offset 0: explorer waits for the weights of every I-th step",
    .caps = TERN_CAP_THREAD_SAFE,
    .ops = &ops,
    .settings = settings,
};

TERN_PLUGIN_EXPORT const tern_plugin_descriptor *tern_plugin_entry(const tern_host *h)
{
    host = h;
    return &descriptor;
}
