/* length_target.c: the length-target reward as a C plugin (README.md):
 * 1 for a response of exactly the task's target_length characters (bytes;
 * default 200), falling linearly to 0 at twice or none of it. */
#include <math.h>
#include <stdio.h>

#include <tern/plugin.h>
#include <tern/reward.h>

static const tern_host *host;

static int create(tern_ctx *ctx, void **state) { (void)ctx; *state = NULL; return TERN_OK; }
static void destroy(void *state) { (void)state; }

static int score(void *state, const tern_reward_item *items, tern_reward_result *res, size_t n)
{
    (void)state;
    for (size_t i = 0; i < n; i++) {
        double target = 200;
        host->task_number(items[i].task, "target_length", &target);
        double r = 1 - fabs((double)items[i].response_len - target) / target;
        res[i].reward = r > 0 ? r : 0;
        snprintf(res[i].reason, sizeof res[i].reason, "%zu of %.0f", items[i].response_len, target);
    }
    return TERN_OK;
}

static const tern_reward_ops ops = {.size = sizeof ops, .create = create, .destroy = destroy,
                                    .score = score};
static const tern_plugin_descriptor descriptor = {
    .size = sizeof descriptor, .abi_major = TERN_ABI_MAJOR, .abi_minor = TERN_ABI_MINOR,
    .kind = TERN_KIND_REWARD, .name = "length_target", .version = "1.0.0",
    .summary = "1 at the task's target_length, 0 at none or twice of it",
    .caps = TERN_CAP_THREAD_SAFE, .ops = &ops};

TERN_PLUGIN_EXPORT const tern_plugin_descriptor *tern_plugin_entry(const tern_host *h)
{
    host = h;
    return &descriptor;
}
