/* test_advantage.c: the advantage estimators (GRPO, RLOO, REINFORCE++, Kimi),
 * Kimi's length penalty, DAPO's overlong shaping and its dynamic sampling
 * (algo/group_filter.h) against values worked out by hand, and the messages
 * of the inputs they refuse. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "algo/advantage.h"
#include "algo/group_filter.h"
#include "base/errmsg.h"
#include "tern/abi.h"

#define TOL 1e-12

static void expect_adv(const double *got, const double *want, size_t n, double tol)
{
    for (size_t i = 0; i < n; i++)
        cr_expect(fabs(got[i] - want[i]) <= tol, "adv[%zu] = %.17g, want %.17g", i, got[i],
                  want[i]);
}

static void expect_error(int rc, const char *needle)
{
    cr_expect_eq(rc, TERN_EINVAL, "rc %d, want TERN_EINVAL", rc);
    cr_expect(strstr(tern_error_message(), needle) != NULL, "message \"%s\" lacks \"%s\"",
              tern_error_message(), needle);
}

Test(advantage, parse_names)
{
    cr_expect_eq(tern_adv_kind_parse("grpo"), TERN_ADV_GRPO);
    cr_expect_eq(tern_adv_kind_parse("rloo"), TERN_ADV_RLOO);
    cr_expect_eq(tern_adv_kind_parse("reinforce++"), TERN_ADV_REINFORCE_PP);
    cr_expect_eq(tern_adv_kind_parse("reinforce_pp"), TERN_ADV_REINFORCE_PP);
    cr_expect_eq(tern_adv_kind_parse("kimi"), TERN_ADV_KIMI);
    cr_expect_eq(tern_adv_kind_parse("GRPO"), 0);
    cr_expect_eq(tern_adv_kind_parse("ppo"), 0);
    cr_expect_eq(tern_adv_kind_parse(""), 0);
    cr_expect_eq(tern_adv_kind_parse(NULL), 0);
}

/* rewards {1,0,0,1}: mean 0.5 -> A = {0.5,-0.5,-0.5,0.5} */
Test(advantage, grpo_mean_only)
{
    tern_adv_params p = {.kind = TERN_ADV_GRPO, .eps = 1e-6};
    double r[4] = {1, 0, 0, 1}, a[4];
    cr_assert_eq(tern_advantages(&p, r, 1, 4, a), TERN_OK);
    expect_adv(a, (double[]){0.5, -0.5, -0.5, 0.5}, 4, TOL);
}

/* std of {1,0,0,1} is 0.5: A = ±0.5 / (0.5 + eps) */
Test(advantage, grpo_std_normalize)
{
    double eps = 1e-6;
    tern_adv_params p = {.kind = TERN_ADV_GRPO, .std_normalize = 1, .eps = eps};
    double r[4] = {1, 0, 0, 1}, a[4];
    cr_assert_eq(tern_advantages(&p, r, 1, 4, a), TERN_OK);
    double v = 0.5 / (0.5 + eps);
    expect_adv(a, (double[]){v, -v, -v, v}, 4, TOL);
    cr_expect(fabs(a[0] - 1.0) < 1e-5);
}

/* algorithm.std = "sample": the squares of {1,0,0,1} over n - 1 = 3, so std
 * sqrt(1/3) and A = ±0.5 / (sqrt(1/3) + eps) = ±0.866, as torch.std (verl,
 * TRL) gives: sqrt(4/3) = 1.15x smaller than the population std's ±1 */
Test(advantage, grpo_sample_std)
{
    double eps = 1e-6;
    tern_adv_params p = {.kind = TERN_ADV_GRPO, .std_normalize = 1, .std_sample = 1, .eps = eps};
    double r[4] = {1, 0, 0, 1}, a[4];
    cr_assert_eq(tern_advantages(&p, r, 1, 4, a), TERN_OK);
    double v = 0.5 / (sqrt(1.0 / 3.0) + eps);
    expect_adv(a, (double[]){v, -v, -v, v}, 4, TOL);
    tern_adv_params pop = p;
    pop.std_sample = 0;
    double b[4];
    cr_assert_eq(tern_advantages(&pop, r, 1, 4, b), TERN_OK);
    cr_expect(fabs(b[0] / a[0] - sqrt(4.0 / 3.0)) < 1e-5, "population over sample at G = 4: %g",
              b[0] / a[0]);
    /* REINFORCE++ over the batch: {3, 1} has sample std sqrt(2) */
    tern_adv_params rp = {.kind = TERN_ADV_REINFORCE_PP, .std_sample = 1, .eps = eps};
    double r2[2] = {3, 1}, a2[2];
    cr_assert_eq(tern_advantages(&rp, r2, 1, 2, a2), TERN_OK);
    expect_adv(a2, (double[]){1.0 / (sqrt(2.0) + eps), -1.0 / (sqrt(2.0) + eps)}, 2, TOL);
    /* a group of one: std 0 either way, advantage 0, no division by n - 1 = 0 */
    double one = 7, a1;
    cr_assert_eq(tern_advantages(&p, &one, 1, 1, &a1), TERN_OK);
    cr_expect_eq(a1, 0.0);
}

/* each group on its own; a group of equal rewards gets exactly 0 (even 0.1s,
 * whose mean is not exactly 0.1 in binary) */
Test(advantage, grpo_groups_independent)
{
    tern_adv_params p = {.kind = TERN_ADV_GRPO, .std_normalize = 1, .eps = 1e-6};
    double r[9] = {2, 0, 1, 0.1, 0.1, 0.1, 5, 5, 5}, a[9];
    cr_assert_eq(tern_advantages(&p, r, 3, 3, a), TERN_OK);
    double sd = sqrt(2.0 / 3.0); /* {2,0,1}: mean 1, var (1 + 1 + 0) / 3 */
    double v = 1.0 / (sd + 1e-6);
    expect_adv(a, (double[]){v, -v, 0, 0, 0, 0, 0, 0, 0}, 9, TOL);
    for (size_t i = 3; i < 9; i++)
        cr_expect_eq(a[i], 0.0);
}

/* RLOO: r_i minus the mean of the other rewards, checked against the
 * leave-one-out definition itself */
Test(advantage, rloo)
{
    tern_adv_params p = {.kind = TERN_ADV_RLOO, .std_normalize = 1, .eps = 1e-6};
    double r[8] = {1, 0, 0, 0, 0.5, 2, -1, 3}, a[8];
    cr_assert_eq(tern_advantages(&p, r, 2, 4, a), TERN_OK);
    expect_adv(a, (double[]){1, -1.0 / 3, -1.0 / 3, -1.0 / 3}, 4, TOL);
    for (size_t g = 0; g < 2; g++) {
        for (size_t i = 0; i < 4; i++) {
            double others = 0;
            for (size_t j = 0; j < 4; j++)
                if (j != i)
                    others += r[g * 4 + j];
            double want = r[g * 4 + i] - others / 3.0;
            cr_expect(fabs(a[g * 4 + i] - want) < TOL, "rloo[%zu] = %g, want %g", g * 4 + i,
                      a[g * 4 + i], want);
        }
    }
}

/* RLOO with G = 2: A = r - the other reward */
Test(advantage, rloo_pair)
{
    tern_adv_params p = {.kind = TERN_ADV_RLOO};
    double r[2] = {3, 1}, a[2];
    cr_assert_eq(tern_advantages(&p, r, 1, 2, a), TERN_OK);
    expect_adv(a, (double[]){2, -2}, 2, TOL);
}

/* REINFORCE++ normalises across the whole batch: groups {1,0} and {1,1} have
 * batch mean 0.75 and std sqrt(0.1875), so the all-correct group is not 0 */
Test(advantage, reinforce_pp_across_groups)
{
    double eps = 1e-6;
    tern_adv_params p = {.kind = TERN_ADV_REINFORCE_PP, .eps = eps};
    double r[4] = {1, 0, 1, 1}, a[4];
    cr_assert_eq(tern_advantages(&p, r, 2, 2, a), TERN_OK);
    double sd = sqrt((3 * 0.25 * 0.25 + 0.75 * 0.75) / 4.0);
    cr_expect(fabs(sd - sqrt(0.1875)) < TOL);
    double hi = 0.25 / (sd + eps), lo = -0.75 / (sd + eps);
    expect_adv(a, (double[]){hi, lo, hi, hi}, 4, TOL);
    /* mean 0, population std ~1 */
    double m = 0, ss = 0;
    for (int i = 0; i < 4; i++)
        m += a[i] / 4;
    for (int i = 0; i < 4; i++)
        ss += (a[i] - m) * (a[i] - m) / 4;
    cr_expect(fabs(m) < 1e-12);
    cr_expect(fabs(sqrt(ss) - 1) < 1e-5);
}

Test(advantage, reinforce_pp_constant_batch_is_zero)
{
    tern_adv_params p = {.kind = TERN_ADV_REINFORCE_PP, .eps = 1e-6};
    double r[4] = {0.3, 0.3, 0.3, 0.3}, a[4] = {9, 9, 9, 9};
    cr_assert_eq(tern_advantages(&p, r, 2, 2, a), TERN_OK);
    expect_adv(a, (double[]){0, 0, 0, 0}, 4, 0);
}

/* Kimi: r - mean_g; std_normalize is GRPO's only */
Test(advantage, kimi_mean_only)
{
    tern_adv_params p = {.kind = TERN_ADV_KIMI, .std_normalize = 1, .eps = 1e-6};
    double r[3] = {1, 0, 0}, a[3];
    cr_assert_eq(tern_advantages(&p, r, 1, 3, a), TERN_OK);
    expect_adv(a, (double[]){2.0 / 3, -1.0 / 3, -1.0 / 3}, 3, TOL);
}

/* lengths {10,20,30,50}: lambda = 0.5 - (len - 10) / 40 = {0.5, 0.25, 0, -0.5};
 * correct {1,1,0,0}: len_reward = {0.5, 0.25, min(0, 0), min(0, -0.5)};
 * coef 0.5 on rewards {1,1,0,0}: {1.25, 1.125, 0, -0.25}.
 * Second group, lengths {5,15,7,7}, correct {0,0,1,0}: lambda = 0.5 - (len - 5) / 10
 * = {0.5, -0.5, 0.3, 0.3}, len_reward = {0, -0.5, 0.3, 0}. */
Test(advantage, kimi_length_penalty)
{
    tern_adv_params p = {.kind = TERN_ADV_KIMI, .length_coef = 0.5};
    double r[8] = {1, 1, 0, 0, 0, 0, 1, 0};
    uint32_t len[8] = {10, 20, 30, 50, 5, 15, 7, 7};
    int ok[8] = {1, 1, 0, 0, 0, 0, 1, 0};
    tern_length_penalty(&p, r, len, ok, 2, 4);
    expect_adv(r, (double[]){1.25, 1.125, 0, -0.25}, 4, TOL);
    expect_adv(r + 4, (double[]){0, -0.25, 1 + 0.5 * 0.3, 0}, 4, TOL);

    /* equal lengths: lambda 0, nothing changes */
    double r2[2] = {1, 0};
    uint32_t len2[2] = {9, 9};
    int ok2[2] = {1, 0};
    tern_length_penalty(&p, r2, len2, ok2, 1, 2);
    expect_adv(r2, (double[]){1, 0}, 2, 0);

    /* then Kimi's advantage of the penalised rewards: r - mean */
    double a[4];
    cr_assert_eq(tern_advantages(&p, r, 1, 4, a), TERN_OK);
    double mean = (1.25 + 1.125 + 0 - 0.25) / 4;
    expect_adv(a, (double[]){1.25 - mean, 1.125 - mean, -mean, -0.25 - mean}, 4, TOL);
}

Test(advantage, length_penalty_off)
{
    tern_adv_params p = {.kind = TERN_ADV_GRPO, .length_coef = 0};
    double r[2] = {1, 0};
    uint32_t len[2] = {1, 100};
    int ok[2] = {1, 1};
    tern_length_penalty(&p, r, len, ok, 1, 2);
    expect_adv(r, (double[]){1, 0}, 2, 0);
    /* any estimator may use it */
    p.length_coef = 1.0;
    tern_length_penalty(&p, r, len, ok, 1, 2);
    expect_adv(r, (double[]){1.5, -0.5}, 2, TOL);
}

/* DAPO's overlong shaping with L_max = 20, L_cache = 8, penalty 0.5: the
 * zone starts after 20 - 8 = 12 tokens.
 *   len 5, 12  -> 0
 *   len 13     -> -0.5 * 1/8 = -0.0625
 *   len 16     -> -0.5 * 4/8 = -0.25
 *   len 20     -> -0.5 * 8/8 = -0.5   (the limit: a truncated response)
 *   len 25     -> -0.5 (capped; cannot happen when generation stops at L_max) */
Test(advantage, dapo_overlong_shaping)
{
    tern_adv_params p = {.kind = TERN_ADV_GRPO, .overlong_buffer = 8, .overlong_penalty = 0.5,
                         .max_tokens = 20};
    double r[6] = {1, 1, 1, 0, 1, 0};
    uint32_t len[6] = {5, 12, 13, 16, 20, 25};
    tern_overlong_penalty(&p, r, len, 6);
    expect_adv(r, (double[]){1, 1, 1 - 0.0625, -0.25, 0.5, -0.5}, 6, TOL);

    /* off: overlong_buffer 0 */
    p.overlong_buffer = 0;
    double r2[1] = {1};
    uint32_t len2[1] = {20};
    tern_overlong_penalty(&p, r2, len2, 1);
    expect_adv(r2, (double[]){1}, 1, 0);

    /* the zone may be the whole range (L_cache = L_max): len / L_max of the penalty */
    p = (tern_adv_params){.overlong_buffer = 4, .overlong_penalty = 1, .max_tokens = 4};
    double r3[3] = {0, 0, 0};
    uint32_t len3[3] = {1, 2, 4};
    tern_overlong_penalty(&p, r3, len3, 3);
    expect_adv(r3, (double[]){-0.25, -0.5, -1}, 3, TOL);
}

/* DAPO's dynamic sampling: steps of 2 groups, a budget of 2 batches (4
 * groups examined per step). Groups in order (rewards of G = 3):
 *   A {1,0,1} signal   keep  (step 1: 1 kept, 1 seen)
 *   B {1,1,1} equal    drop  (2 seen)
 *   C {0,0,0} equal    drop  (3 seen)
 *   D {0,1,0} signal   keep  (step 1 full: counters restart)
 *   E {1,1,1} equal    drop  (step 2: 1 seen)
 *   F..H equal         drop, drop, drop (4 seen: the budget)
 *   I {0,0,0} equal    keep, over budget (5 seen > 4)
 *   J {1,1,1} equal    keep, over budget: step 2 full
 *   K {1,1,1} equal    drop  (step 3 starts with a fresh budget) */
Test(advantage, dapo_dynamic_sampling)
{
    cr_expect(tern_group_has_signal((double[]){0, 0, 0.5}, 3));
    cr_expect(!tern_group_has_signal((double[]){0.5, 0.5, 0.5}, 3));
    cr_expect(!tern_group_has_signal((double[]){1}, 1), "one response has no signal");

    tern_group_filter f;
    tern_group_filter_init(&f, 2, 2);
    const double groups[11][3] = {{1, 0, 1}, {1, 1, 1}, {0, 0, 0}, {0, 1, 0}, {1, 1, 1},
                                  {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1},
                                  {1, 1, 1}};
    const int want_keep[11] = {1, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0};
    const int want_over[11] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0};
    for (int i = 0; i < 11; i++) {
        int over = -1;
        int keep = tern_group_filter_judge(&f, groups[i], 3, &over);
        cr_expect_eq(keep, want_keep[i], "group %c: keep %d", 'A' + i, keep);
        cr_expect_eq(over, want_over[i], "group %c: over budget %d", 'A' + i, over);
    }
    cr_expect_eq(f.filtered, 7);
    cr_expect_eq(f.kept_equal, 2);
}

Test(advantage, error_rloo_group_of_one)
{
    tern_adv_params p = {.kind = TERN_ADV_RLOO};
    double r[3] = {1, 0, 1}, a[3];
    expect_error(tern_advantages(&p, r, 3, 1, a), "RLOO needs group_size >= 2 (got 1)");
    cr_expect(strstr(tern_error_message(), "grpo") != NULL);
}

Test(advantage, error_empty)
{
    tern_adv_params p = {.kind = TERN_ADV_GRPO};
    double r[1] = {1}, a[1];
    expect_error(tern_advantages(&p, r, 0, 4, a), "at least one group");
    expect_error(tern_advantages(&p, r, 2, 0, a), "at least one group");
}

Test(advantage, error_non_finite_reward)
{
    tern_adv_params p = {.kind = TERN_ADV_GRPO, .eps = 1e-6};
    double r[4] = {1, 0, NAN, 1}, a[4];
    expect_error(tern_advantages(&p, r, 2, 2, a), "reward 2 (group 1, response 0)");
    cr_expect(strstr(tern_error_message(), "not a finite number") != NULL);
    r[2] = INFINITY;
    expect_error(tern_advantages(&p, r, 2, 2, a), "not a finite number");
}

Test(advantage, error_bad_eps_and_kind)
{
    tern_adv_params p = {.kind = TERN_ADV_GRPO, .std_normalize = 1, .eps = 0};
    double r[2] = {1, 0}, a[2];
    expect_error(tern_advantages(&p, r, 1, 2, a), "eps must be a finite number > 0");
    p.kind = TERN_ADV_REINFORCE_PP;
    p.std_normalize = 0;
    expect_error(tern_advantages(&p, r, 1, 2, a), "eps");
    p.kind = (tern_adv_kind)9;
    expect_error(tern_advantages(&p, r, 1, 2, a), "unknown advantage estimator 9");
}
