/* guess_number.c: the `guess_number` environment plugin (docs/plugins.md,
 * "Environment plugins"), a multi-turn game where feedback matters: reset
 * draws a secret whole number in [low, high] from the episode's seed and
 * asks for it; each turn the first integer in the model's reply is its
 * guess, answered "higher", "lower" or "correct".
 *
 * Reward: 1 for the turn that guesses the secret (the episode is then
 * done), 0 for every other turn, so a trajectory's return is 1 when it is
 * solved within the run's max_turns and 0 when not. A reply without an
 * integer gets an observation saying so (reward 0, not a failure).
 *
 * The range is the settings `low` and `high` (default 1 and 100), or a
 * task's own numbers "low" and "high" when it has them; a task's "secret"
 * fixes the number instead of drawing it (a fixed puzzle, a test). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tern/environment.h"
#include "tern/plugin.h"
#include "tern/rng.h"

/* The bounds a setting or a task may give: a guess is parsed as a long long,
 * and the instruction stays short. */
#define GUESS_BOUND 1000000000000LL
/* One observation's bytes: the longest text below with two bounds in it. */
enum { OBSERVATION_BYTES = 256 };

static const tern_host *host;

typedef struct guess_state {
    tern_ctx *ctx;
    long long low, high; /* the settings; read-only after create */
} guess_state;

typedef struct guess_episode {
    long long low, high, secret;
    uint32_t turns;
    int done;
    char observation[OBSERVATION_BYTES];
} guess_episode;

static int guess_create(tern_ctx *ctx, void **state)
{
    int64_t low = 0, high = 0;
    int rc = host->get_int(ctx, "low", &low);
    if (rc == TERN_OK)
        rc = host->get_int(ctx, "high", &high);
    if (rc != TERN_OK)
        return rc;
    if (low > high)
        return host->setting_error(ctx, "high", "is %" PRId64 ", below low (%" PRId64 "); "
                                   "give high >= low", high, low);
    guess_state *s = calloc(1, sizeof *s);
    if (!s)
        return host->fail(ctx, TERN_ENOMEM, "guess_number: out of memory");
    s->ctx = ctx;
    s->low = low;
    s->high = high;
    *state = s;
    return TERN_OK;
}

static void guess_destroy(void *state) { free(state); }

/* A task's whole number `key` in the bounds into *out: 1; 0 when absent;
 * -1 (with why) when it is there but no such number. */
static int task_whole(const tern_task *task, const char *key, long long *out, char *why,
                      size_t n)
{
    double v;
    int rc = host->task_number(task, key, &v);
    if (rc == TERN_ENOTFOUND)
        return 0;
    if (rc != TERN_OK || v != floor(v) || fabs(v) > (double)GUESS_BOUND) {
        snprintf(why, n, "the task's \"%s\" is not a whole number within +-%lld", key,
                 GUESS_BOUND);
        return -1;
    }
    *out = (long long)v;
    return 1;
}

static void fail_reset(tern_env_result *out, const char *why)
{
    out->failure = TERN_ENV_ERROR;
    snprintf(out->reason, sizeof out->reason, "%s", why);
}

static int guess_reset(void *state, const tern_task *task, uint64_t seed, void **handle,
                       tern_env_result *out)
{
    guess_state *s = state;
    guess_episode *ep = calloc(1, sizeof *ep);
    if (!ep)
        return host->fail(s->ctx, TERN_ENOMEM, "guess_number: out of memory opening an episode");
    *handle = ep;
    ep->low = s->low;
    ep->high = s->high;
    char why[TERN_ENV_REASON_MAX];
    long long secret = 0;
    int has_secret = 0;
    if (task_whole(task, "low", &ep->low, why, sizeof why) < 0 ||
        task_whole(task, "high", &ep->high, why, sizeof why) < 0 ||
        (has_secret = task_whole(task, "secret", &secret, why, sizeof why)) < 0) {
        fail_reset(out, why);
        return TERN_OK;
    }
    if (ep->low > ep->high) {
        snprintf(why, sizeof why, "the range is empty: low %lld is above high %lld", ep->low,
                 ep->high);
        fail_reset(out, why);
        return TERN_OK;
    }
    if (has_secret && (secret < ep->low || secret > ep->high)) {
        snprintf(why, sizeof why, "the task's secret %lld is outside [%lld, %lld]", secret,
                 ep->low, ep->high);
        fail_reset(out, why);
        return TERN_OK;
    }
    if (has_secret) {
        ep->secret = secret;
    } else {
        tern_rng rng;
        tern_rng_seed(&rng, seed);
        ep->secret = ep->low + (long long)tern_rng_below(&rng, (uint64_t)(ep->high - ep->low) + 1);
    }
    snprintf(ep->observation, sizeof ep->observation,
             "I am thinking of a number between %lld and %lld. Guess it; I will answer higher "
             "or lower. Reply with just the number.", ep->low, ep->high);
    out->observation = ep->observation;
    return TERN_OK;
}

/* The first integer in text[0..len) (an optional '-' right before its
 * digits) into *out: 1, or 0 when there is none or it is out of bounds. */
static int first_integer(const char *text, size_t len, long long *out)
{
    for (size_t i = 0; i < len; i++) {
        if (text[i] < '0' || text[i] > '9')
            continue;
        int negative = i > 0 && text[i - 1] == '-';
        long long v = 0;
        for (; i < len && text[i] >= '0' && text[i] <= '9'; i++) {
            v = v * 10 + (text[i] - '0');
            if (v > GUESS_BOUND)
                return 0;
        }
        *out = negative ? -v : v;
        return 1;
    }
    return 0;
}

static int guess_step(void *state, void *handle, const tern_env_action *action,
                      tern_env_result *out)
{
    (void)state;
    guess_episode *ep = handle;
    if (ep->done) {
        out->failure = TERN_ENV_AFTER_DONE;
        snprintf(out->reason, sizeof out->reason, "stepped after the number was guessed "
                 "(turn %" PRIu32 ")", ep->turns);
        return TERN_OK;
    }
    ep->turns++;
    long long guess;
    if (!first_integer(action->text ? action->text : "", action->text ? action->text_len : 0,
                       &guess)) {
        snprintf(ep->observation, sizeof ep->observation,
                 "I found no number in your reply. Reply with just the number, between %lld "
                 "and %lld.", ep->low, ep->high);
        snprintf(out->reason, sizeof out->reason, "no number in the reply");
    } else if (guess == ep->secret) {
        snprintf(ep->observation, sizeof ep->observation, "Correct! The number was %lld.",
                 ep->secret);
        snprintf(out->reason, sizeof out->reason, "guessed in %" PRIu32 " turns", ep->turns);
        out->reward = 1.0;
        out->done = 1;
        ep->done = 1;
    } else {
        snprintf(ep->observation, sizeof ep->observation, "%lld is wrong: the number is %s.",
                 guess, guess < ep->secret ? "higher" : "lower");
        snprintf(out->reason, sizeof out->reason, "%s", guess < ep->secret ? "higher" : "lower");
    }
    out->observation = ep->observation;
    return TERN_OK;
}

static void guess_close(void *state, void *handle)
{
    (void)state;
    free(handle);
}

static const tern_environment_ops guess_ops = {
    .size = sizeof guess_ops,
    .create = guess_create,
    .destroy = guess_destroy,
    .reset = guess_reset,
    .step = guess_step,
    .close = guess_close,
};

static const tern_setting_spec guess_settings[] = {
    TERN_SETTING(.name = "low", .type = TERN_SETTING_INT, .def = "1", .min = -GUESS_BOUND,
                 .max = GUESS_BOUND, .aka = "min|lo",
                 .doc = "the smallest number it may think of (a task's \"low\" wins)"),
    TERN_SETTING(.name = "high", .type = TERN_SETTING_INT, .def = "100", .min = -GUESS_BOUND,
                 .max = GUESS_BOUND, .aka = "max|hi",
                 .doc = "the largest number it may think of (a task's \"high\" wins)"),
    TERN_SETTINGS_END,
};

static const tern_plugin_descriptor guess_descriptor = {
    .size = sizeof guess_descriptor,
    .abi_major = TERN_ABI_MAJOR,
    .abi_minor = TERN_ABI_MINOR,
    .kind = TERN_KIND_ENVIRONMENT,
    .name = "guess_number",
    .version = "1.0.0",
    .summary = "guess a secret number from \"higher\"/\"lower\" answers: reward 1 when guessed",
    /* the instance is read-only after create; each episode is its own */
    .caps = TERN_CAP_THREAD_SAFE,
    .ops = &guess_ops,
    .settings = guess_settings,
};

TERN_PLUGIN_EXPORT const tern_plugin_descriptor *tern_plugin_entry(const tern_host *h)
{
    host = h;
    return &guess_descriptor;
}
