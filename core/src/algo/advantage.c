/* advantage.c: advantages from outcome rewards (see advantage.h for the
 * maths). Everything is accumulated in double; a group whose rewards are all
 * equal gets exactly zero advantages (no rounding residue from the mean). */
#include "algo/advantage.h"

#include <math.h>
#include <string.h>

#include "base/errmsg.h"
#include "tern/abi.h"

tern_adv_kind tern_adv_kind_parse(const char *name)
{
    if (name == NULL)
        return 0;
    if (strcmp(name, "grpo") == 0)
        return TERN_ADV_GRPO;
    if (strcmp(name, "rloo") == 0)
        return TERN_ADV_RLOO;
    if (strcmp(name, "reinforce++") == 0 || strcmp(name, "reinforce_pp") == 0)
        return TERN_ADV_REINFORCE_PP;
    if (strcmp(name, "kimi") == 0)
        return TERN_ADV_KIMI;
    return 0;
}

void tern_length_penalty(const tern_adv_params *p, double *rewards, const uint32_t *lengths,
                         const int *correct, size_t n_groups, size_t group_size)
{
    if (p == NULL || p->length_coef == 0.0 || rewards == NULL || lengths == NULL ||
        correct == NULL)
        return;
    for (size_t g = 0; g < n_groups; g++) {
        size_t base = g * group_size;
        uint32_t lo = lengths[base], hi = lengths[base];
        for (size_t j = 1; j < group_size; j++) {
            uint32_t len = lengths[base + j];
            lo = len < lo ? len : lo;
            hi = len > hi ? len : hi;
        }
        for (size_t j = 0; j < group_size; j++) {
            /* lambda = 0.5 - (len - min) / (max - min); 0 when all lengths are equal */
            double lambda = 0.0;
            if (hi != lo)
                lambda = 0.5 - (double)(lengths[base + j] - lo) / (double)(hi - lo);
            double len_reward = correct[base + j] ? lambda : (lambda < 0.0 ? lambda : 0.0);
            rewards[base + j] += p->length_coef * len_reward;
        }
    }
}

void tern_overlong_penalty(const tern_adv_params *p, double *rewards, const uint32_t *lengths,
                           size_t n)
{
    if (p == NULL || p->overlong_buffer == 0 || rewards == NULL || lengths == NULL)
        return;
    /* the zone is (L_max - L_cache, L_max]; expected may be 0 (the whole range) */
    double cache = (double)p->overlong_buffer;
    double expected = (double)p->max_tokens - cache;
    for (size_t i = 0; i < n; i++) {
        double over = (double)lengths[i] - expected;
        if (over <= 0)
            continue;
        rewards[i] -= p->overlong_penalty * (over >= cache ? 1.0 : over / cache);
    }
}

/* mean and std of x[0..n): population (sum of squares / n), or sample
 * (/ (n - 1)) when `sample`; *same = 1 if all values are equal */
static void mean_std(const double *x, size_t n, int sample, double *mean, double *std, int *same)
{
    double sum = 0.0;
    *same = 1;
    for (size_t i = 0; i < n; i++) {
        sum += x[i];
        if (x[i] != x[0])
            *same = 0;
    }
    double m = sum / (double)n, ss = 0.0;
    for (size_t i = 0; i < n; i++)
        ss += (x[i] - m) * (x[i] - m);
    *mean = *same ? x[0] : m;
    *std = *same ? 0.0 : sqrt(ss / (double)(sample ? n - 1 : n)); /* not same: n >= 2 */
}

int tern_advantages(const tern_adv_params *p, const double *rewards, size_t n_groups,
                    size_t group_size, double *adv)
{
    if (p == NULL || rewards == NULL || adv == NULL)
        return tern_errorf(TERN_EINVAL, "advantages: params, rewards and adv must not be NULL");
    if (p->kind != TERN_ADV_GRPO && p->kind != TERN_ADV_RLOO &&
        p->kind != TERN_ADV_REINFORCE_PP && p->kind != TERN_ADV_KIMI)
        return tern_errorf(TERN_EINVAL,
                           "unknown advantage estimator %d: use grpo, rloo, reinforce++ or kimi",
                           (int)p->kind);
    if (n_groups == 0 || group_size == 0)
        return tern_errorf(TERN_EINVAL,
                           "advantages need at least one group of at least one response "
                           "(got %zu groups of %zu): check explorer.group_size and the batch size",
                           n_groups, group_size);
    if (p->kind == TERN_ADV_RLOO && group_size < 2)
        return tern_errorf(TERN_EINVAL,
                           "RLOO needs group_size >= 2 (got %zu): raise explorer.group_size "
                           "or use grpo",
                           group_size);
    int divides = p->kind == TERN_ADV_REINFORCE_PP || (p->kind == TERN_ADV_GRPO && p->std_normalize);
    if (divides && !(p->eps > 0.0 && isfinite(p->eps)))
        return tern_errorf(TERN_EINVAL,
                           "advantage eps must be a finite number > 0 when dividing by a std "
                           "(got %g): use e.g. 1e-6",
                           p->eps);
    size_t total = n_groups * group_size;
    for (size_t i = 0; i < total; i++)
        if (!isfinite(rewards[i]))
            return tern_errorf(TERN_EINVAL,
                               "reward %zu (group %zu, response %zu) is %g, not a finite number: "
                               "check the reward plugin's output",
                               i, i / group_size, i % group_size, rewards[i]);

    double mean, std;
    int same;
    if (p->kind == TERN_ADV_REINFORCE_PP) {
        /* A = (r - mean_B) / (std_B + eps) over the whole batch */
        mean_std(rewards, total, p->std_sample, &mean, &std, &same);
        for (size_t i = 0; i < total; i++)
            adv[i] = same ? 0.0 : (rewards[i] - mean) / (std + p->eps);
        return TERN_OK;
    }
    for (size_t g = 0; g < n_groups; g++) {
        const double *r = rewards + g * group_size;
        double *a = adv + g * group_size;
        mean_std(r, group_size, p->std_sample, &mean, &std, &same);
        /* GRPO, Kimi: A = r - mean_g (GRPO std_normalize: / (std_g + eps));
         * RLOO: A = r - mean of the others = G / (G - 1) * (r - mean_g) */
        double scale = 1.0;
        if (p->kind == TERN_ADV_RLOO)
            scale = (double)group_size / (double)(group_size - 1);
        else if (p->kind == TERN_ADV_GRPO && p->std_normalize)
            scale = 1.0 / (std + p->eps);
        for (size_t j = 0; j < group_size; j++)
            a[j] = same ? 0.0 : (r[j] - mean) * scale;
    }
    return TERN_OK;
}
