/* test_policy_loss.c: the PPO / Kimi / GSPO / SFT losses, KL estimators, entropy
 * bonus and aggregation against values worked out by hand; their gradients
 * against central finite differences of the loss itself; and the messages of
 * the inputs they refuse. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "algo/policy_loss.h"
#include "base/errmsg.h"
#include "tern/abi.h"

#define TOL 1e-9

static void expect_near(double got, double want, double tol, const char *what)
{
    cr_expect(fabs(got - want) <= tol, "%s = %.12g, want %.12g", what, got, want);
}

static void expect_error(int rc, const char *needle)
{
    cr_expect_eq(rc, TERN_EINVAL, "rc %d, want TERN_EINVAL", rc);
    cr_expect(strstr(tern_error_message(), needle) != NULL, "message \"%s\" lacks \"%s\"",
              tern_error_message(), needle);
}

static tern_loss_params ppo_params(void)
{
    return (tern_loss_params){.kind = TERN_LOSS_PPO, .agg = TERN_AGG_TOKEN_MEAN,
                              .clip_low = 0.2, .clip_high = 0.2};
}

/* ---- names ---- */

Test(policy_loss, parse_names)
{
    cr_expect_eq(tern_loss_kind_parse("ppo"), TERN_LOSS_PPO);
    cr_expect_eq(tern_loss_kind_parse("kimi"), TERN_LOSS_KIMI);
    cr_expect_eq(tern_loss_kind_parse("sft"), TERN_LOSS_SFT);
    cr_expect_eq(tern_loss_kind_parse("grpo"), 0);
    cr_expect_eq(tern_loss_kind_parse(NULL), 0);
    cr_expect_eq(tern_loss_agg_parse("token_mean"), TERN_AGG_TOKEN_MEAN);
    cr_expect_eq(tern_loss_agg_parse("seq_mean"), TERN_AGG_SEQ_MEAN);
    cr_expect_eq(tern_loss_agg_parse("token_sum_norm"), TERN_AGG_TOKEN_SUM_NORM);
    cr_expect_eq(tern_loss_kind_parse("gspo"), TERN_LOSS_GSPO);
    cr_expect_eq(tern_off_policy_parse("none"), TERN_OFF_POLICY_NONE);
    cr_expect_eq(tern_off_policy_parse("tis"), TERN_OFF_POLICY_TIS);
    cr_expect_eq(tern_off_policy_parse("decoupled"), TERN_OFF_POLICY_DECOUPLED);
    cr_expect_eq(tern_off_policy_parse("is"), -1);
    cr_expect_eq(tern_loss_agg_parse("mean"), 0);
    cr_expect_eq(tern_kl_estimator_parse("none"), TERN_KL_NONE);
    cr_expect_eq(tern_kl_estimator_parse("k1"), TERN_KL_K1);
    cr_expect_eq(tern_kl_estimator_parse("k2"), TERN_KL_K2);
    cr_expect_eq(tern_kl_estimator_parse("k3"), TERN_KL_K3);
    cr_expect_eq(tern_kl_estimator_parse("k4"), -1);
    cr_expect_eq(tern_kl_estimator_parse(NULL), -1);
}

/* ---- PPO, one token per response, closed form ---- */

/* One response of one token with log-ratio log(rho_want) and advantage A.
 * Returns L (= pg, T = 1) and sets *g = dL/dlogp, *rho the exact ratio of
 * the float inputs, *clip the clip fraction. */
static double ppo_one(const tern_loss_params *p, double rho_want, double A, double *g,
                      double *rho, double *clip)
{
    float lo = -1.0f, lp = (float)(-1.0 + log(rho_want)), d = NAN;
    tern_loss_seq s = {.n = 1, .logp = &lp, .logp_old = &lo, .advantage = A, .dlogp = &d};
    tern_loss_stats st;
    cr_assert_eq(tern_policy_loss(p, &s, 1, &st), TERN_OK, "%s", tern_error_message());
    *rho = exp((double)lp - (double)lo);
    *g = d;
    *clip = st.clip_frac;
    expect_near(st.ratio_mean, *rho, 1e-12, "ratio_mean");
    expect_near(st.pg_loss, st.loss, 0, "pg_loss");
    cr_expect_eq(st.tokens, 1);
    return st.loss;
}

/* A > 0: the ratio is capped at 1 + clip_high (no gain from pushing further),
 * below 1 - clip_low the unclipped branch is the larger loss and keeps its
 * gradient -A rho */
Test(policy_loss, ppo_positive_advantage)
{
    tern_loss_params p = ppo_params();
    double g, rho, clip, L;

    L = ppo_one(&p, 1.1, 2.0, &g, &rho, &clip); /* inside: pg = -A rho */
    expect_near(L, -2.0 * rho, TOL, "L(1.1)");
    expect_near(g, -2.0 * rho, 1e-6, "g(1.1)");
    cr_expect_eq(clip, 0.0);

    L = ppo_one(&p, 1.5, 2.0, &g, &rho, &clip); /* above: pg = -A (1 + 0.2), no gradient */
    expect_near(L, -2.0 * 1.2, TOL, "L(1.5)");
    cr_expect_eq(g, 0.0);
    cr_expect_eq(clip, 1.0);

    L = ppo_one(&p, 0.5, 2.0, &g, &rho, &clip); /* below: max(-A rho, -A 0.8) = -A rho */
    expect_near(L, -2.0 * rho, TOL, "L(0.5)");
    expect_near(g, -2.0 * rho, 1e-6, "g(0.5)");
    cr_expect_eq(clip, 0.0);
}

/* A < 0: the ratio is floored at 1 - clip_low; above 1 + clip_high the
 * unclipped loss -A rho is larger and keeps its gradient */
Test(policy_loss, ppo_negative_advantage)
{
    tern_loss_params p = ppo_params();
    double g, rho, clip, L;

    L = ppo_one(&p, 0.9, -1.0, &g, &rho, &clip);
    expect_near(L, rho, TOL, "L(0.9)");
    expect_near(g, rho, 1e-6, "g(0.9)");
    cr_expect_eq(clip, 0.0);

    L = ppo_one(&p, 0.5, -1.0, &g, &rho, &clip); /* pg = -A 0.8 */
    expect_near(L, 0.8, TOL, "L(0.5)");
    cr_expect_eq(g, 0.0);
    cr_expect_eq(clip, 1.0);

    L = ppo_one(&p, 1.5, -1.0, &g, &rho, &clip);
    expect_near(L, rho, TOL, "L(1.5)");
    expect_near(g, rho, 1e-6, "g(1.5)");
    cr_expect_eq(clip, 0.0);

    /* asymmetric range: [1 - 0.1, 1 + 0.3] */
    p.clip_low = 0.1;
    p.clip_high = 0.3;
    L = ppo_one(&p, 0.5, -1.0, &g, &rho, &clip);
    expect_near(L, 0.9, TOL, "L(0.5) asym");
    L = ppo_one(&p, 1.5, 1.0, &g, &rho, &clip);
    expect_near(L, -1.3, TOL, "L(1.5) asym");
}

/* dual clip c = 3: A < 0 losses are bounded by -c A (gradient 0 there);
 * A > 0 is untouched */
Test(policy_loss, ppo_dual_clip)
{
    tern_loss_params p = ppo_params();
    p.dual_clip = 3.0;
    double g, rho, clip, L;

    L = ppo_one(&p, 5.0, -0.5, &g, &rho, &clip);
    expect_near(L, 1.5, TOL, "L(5) dual");
    cr_expect_eq(g, 0.0);
    cr_expect_eq(clip, 0.0); /* the PPO clip itself was not the larger branch */

    L = ppo_one(&p, 2.0, -0.5, &g, &rho, &clip);
    expect_near(L, 0.5 * rho, TOL, "L(2) dual");
    expect_near(g, 0.5 * rho, 1e-6, "g(2) dual");

    L = ppo_one(&p, 5.0, 0.5, &g, &rho, &clip); /* A > 0: normal clip */
    expect_near(L, -0.5 * 1.2, TOL, "L(5) A>0");
    cr_expect_eq(clip, 1.0);

    p.dual_clip = 0; /* off: the loss grows with rho */
    L = ppo_one(&p, 5.0, -0.5, &g, &rho, &clip);
    expect_near(L, 0.5 * rho, TOL, "L(5) no dual");
}

/* log-ratios past 20 are clamped: finite loss, zero gradient */
Test(policy_loss, ppo_ratio_clamp)
{
    tern_loss_params p = ppo_params();
    float lo = -40.0f, lp = -5.0f, d = NAN; /* log-ratio 35 */
    tern_loss_seq s = {.n = 1, .logp = &lp, .logp_old = &lo, .advantage = -1, .dlogp = &d};
    tern_loss_stats st;
    cr_assert_eq(tern_policy_loss(&p, &s, 1, &st), TERN_OK);
    expect_near(st.loss, exp(20.0), 1e-3, "L clamped");
    cr_expect_eq(d, 0.0f);
    expect_near(st.ratio_mean, exp(20.0), 1e-3, "ratio_mean clamped");
}

/* four 1-token responses in one batch: L = mean pg, dlogp = g / 4, clip_frac 2/4 */
Test(policy_loss, ppo_batch_stats)
{
    tern_loss_params p = ppo_params();
    double rho_want[4] = {1.1, 1.5, 0.5, 0.5}, A[4] = {1, 1, 1, -1};
    float lo[4], lp[4], d[4];
    tern_loss_seq s[4];
    for (int i = 0; i < 4; i++) {
        lo[i] = -2.0f;
        lp[i] = (float)(-2.0 + log(rho_want[i]));
        d[i] = NAN;
        s[i] = (tern_loss_seq){.n = 1, .logp = &lp[i], .logp_old = &lo[i], .advantage = A[i],
                               .dlogp = &d[i]};
    }
    tern_loss_stats st;
    cr_assert_eq(tern_policy_loss(&p, s, 4, &st), TERN_OK);
    double rho[4], want_g[4] = {0}, want_L = 0, want_rho = 0;
    for (int i = 0; i < 4; i++)
        rho[i] = exp((double)lp[i] - (double)lo[i]), want_rho += rho[i] / 4;
    want_L = (-rho[0] - 1.2 - rho[2] + 0.8) / 4;
    want_g[0] = -rho[0] / 4;
    want_g[2] = -rho[2] / 4;
    expect_near(st.loss, want_L, TOL, "L");
    expect_near(st.clip_frac, 0.5, 0, "clip_frac");
    expect_near(st.ratio_mean, want_rho, 1e-12, "ratio_mean");
    for (int i = 0; i < 4; i++)
        expect_near(d[i], want_g[i], 1e-7, "dlogp");
    cr_expect_eq(st.kl, 0.0);
    cr_expect_eq(st.entropy, 0.0);
}

/* ---- KL estimators ---- */

Test(policy_loss, kl_estimators)
{
    double x = 0.5, lp = -1.0, lr = -1.5; /* x = lp - lr */
    expect_near(tern_kl_value(TERN_KL_K1, lp, lr), x, 1e-15, "k1");
    expect_near(tern_kl_value(TERN_KL_K2, lp, lr), 0.125, 1e-15, "k2");
    expect_near(tern_kl_value(TERN_KL_K3, lp, lr), exp(-0.5) - 0.5, 1e-15, "k3");
    expect_near(tern_kl_value(TERN_KL_NONE, lp, lr), 0, 0, "none");
    expect_near(tern_kl_grad(TERN_KL_K1, lp, lr), 1, 0, "dk1");
    expect_near(tern_kl_grad(TERN_KL_K2, lp, lr), 0.5, 1e-15, "dk2");
    expect_near(tern_kl_grad(TERN_KL_K3, lp, lr), 1 - exp(-0.5), 1e-15, "dk3");
    expect_near(tern_kl_grad(TERN_KL_NONE, lp, lr), 0, 0, "dnone");
    /* negative x: k1 < 0, k2 and k3 >= 0 */
    expect_near(tern_kl_value(TERN_KL_K1, -2.0, -1.0), -1, 0, "k1(-1)");
    expect_near(tern_kl_value(TERN_KL_K2, -2.0, -1.0), 0.5, 0, "k2(-1)");
    expect_near(tern_kl_value(TERN_KL_K3, -2.0, -1.0), exp(1.0) - 2, 1e-15, "k3(-1)");
    expect_near(tern_kl_grad(TERN_KL_K3, -2.0, -1.0), 1 - exp(1.0), 1e-15, "dk3(-1)");
    /* equal policies: every estimator 0 */
    for (int k = TERN_KL_K1; k <= TERN_KL_K3; k++)
        expect_near(tern_kl_value((tern_kl_estimator)k, -3.0, -3.0), 0, 0, "k(0)");
    /* k3 is clamped whole, x to [-20, 20]: x = -30 -> e^20 - 1 - 20 and no
     * gradient (not +1, which would push the policy away from the
     * reference); the same on the far side, x = 30 -> e^-20 - 1 + 20 */
    expect_near(tern_kl_value(TERN_KL_K3, -31.0, -1.0), exp(20.0) - 21.0, 1e-6, "k3 clamped");
    expect_near(tern_kl_grad(TERN_KL_K3, -31.0, -1.0), 0.0, 0, "dk3 clamped");
    expect_near(tern_kl_value(TERN_KL_K3, 29.0, -1.0), exp(-20.0) + 19.0, 1e-12, "k3 clamped +");
    expect_near(tern_kl_grad(TERN_KL_K3, 29.0, -1.0), 0.0, 0, "dk3 clamped +");
    /* continuous at the clamp, and the gradient never changes sign across it */
    expect_near(tern_kl_value(TERN_KL_K3, -20.999999, -1.0), tern_kl_value(TERN_KL_K3, -21.0, -1.0),
                1e-6 * exp(20.0), "k3 continuous at -20");
    for (double below = -25.0; below <= -0.5; below += 0.5)
        cr_expect(tern_kl_grad(TERN_KL_K3, below, 0.0) <= 0.0,
                  "dk3 at x = %g is %g: below the reference, k3 must pull logp up or not at all",
                  below, tern_kl_grad(TERN_KL_K3, below, 0.0));
}

/* SFT with a k2 term: l = -logp + beta x^2 / 2, dl/dlogp = -1 + beta x */
Test(policy_loss, kl_in_loss)
{
    float lp[2] = {-1.0f, -2.0f}, lr[2] = {-1.5f, -1.0f}, d[2];
    tern_loss_params p = {.kind = TERN_LOSS_SFT, .agg = TERN_AGG_TOKEN_MEAN, .kl = TERN_KL_K2,
                          .kl_coef = 0.1, .kl_in_loss = 1};
    tern_loss_seq s = {.n = 2, .logp = lp, .logp_ref = lr, .dlogp = d};
    tern_loss_stats st;
    cr_assert_eq(tern_policy_loss(&p, &s, 1, &st), TERN_OK, "%s", tern_error_message());
    /* x = {0.5, -1}: k2 = {0.125, 0.5} */
    expect_near(st.loss, (1 + 0.1 * 0.125 + 2 + 0.1 * 0.5) / 2, TOL, "L");
    expect_near(st.pg_loss, 1.5, TOL, "pg_loss");
    expect_near(st.kl, (0.125 + 0.5) / 2, TOL, "kl");
    expect_near(d[0], (-1 + 0.1 * 0.5) / 2, 1e-7, "d0");
    expect_near(d[1], (-1 + 0.1 * -1.0) / 2, 1e-7, "d1");
    expect_near(st.ratio_mean, 1, 0, "ratio_mean");
    expect_near(st.clip_frac, 0, 0, "clip_frac");
}

/* the kl statistic is reported with kl_in_loss 0 or kl_coef 0, and the loss
 * and gradient do not change */
Test(policy_loss, kl_statistic_only)
{
    float lp[2] = {-1.0f, -2.0f}, lr[2] = {-1.5f, -1.0f}, d[2];
    tern_loss_params p = {.kind = TERN_LOSS_SFT, .agg = TERN_AGG_TOKEN_MEAN, .kl = TERN_KL_K3,
                          .kl_coef = 0.1, .kl_in_loss = 0};
    tern_loss_seq s = {.n = 2, .logp = lp, .logp_ref = lr, .dlogp = d};
    tern_loss_stats st;
    double k3 = (exp(-0.5) - 0.5 + exp(1.0) - 2) / 2;
    cr_assert_eq(tern_policy_loss(&p, &s, 1, &st), TERN_OK);
    expect_near(st.kl, k3, 1e-12, "kl (placement reward)");
    expect_near(st.loss, 1.5, TOL, "L");
    expect_near(d[0], -0.5, 0, "d0");
    p.kl_in_loss = 1;
    p.kl_coef = 0;
    cr_assert_eq(tern_policy_loss(&p, &s, 1, &st), TERN_OK);
    expect_near(st.kl, k3, 1e-12, "kl (coef 0)");
    expect_near(st.loss, 1.5, TOL, "L");
    /* no reference: kl 0 (allowed since the KL is not a loss term) */
    s.logp_ref = NULL;
    p.kl_coef = 0.1;
    p.kl_in_loss = 0;
    cr_assert_eq(tern_policy_loss(&p, &s, 1, &st), TERN_OK);
    cr_expect_eq(st.kl, 0.0);
    /* NONE: kl 0 even with a reference */
    s.logp_ref = lr;
    p.kl = TERN_KL_NONE;
    p.kl_in_loss = 1;
    cr_assert_eq(tern_policy_loss(&p, &s, 1, &st), TERN_OK);
    cr_expect_eq(st.kl, 0.0);
    expect_near(st.loss, 1.5, TOL, "L");
}

/* ---- aggregation ---- */

/* SFT, responses of 1 and 3 tokens (and an empty one):
 *   token_mean  L = (1 + 2 + 3 + 4) / 4 = 2.5, dlogp = -1/4 everywhere
 *   seq_mean    L = (1 + (2 + 3 + 4) / 3) / 2 = 2, dlogp = -1/2 and -1/6 */
Test(policy_loss, aggregation)
{
    float a[1] = {-1}, b[3] = {-2, -3, -4}, da[1], db[3];
    tern_loss_seq s[3] = {
        {.n = 1, .logp = a, .dlogp = da},
        {.n = 0},
        {.n = 3, .logp = b, .dlogp = db},
    };
    tern_loss_params p = {.kind = TERN_LOSS_SFT, .agg = TERN_AGG_TOKEN_MEAN};
    tern_loss_stats st;
    cr_assert_eq(tern_policy_loss(&p, s, 3, &st), TERN_OK);
    expect_near(st.loss, 2.5, TOL, "token_mean L");
    cr_expect_eq(st.tokens, 4);
    expect_near(da[0], -0.25, 0, "token_mean da");
    for (int t = 0; t < 3; t++)
        expect_near(db[t], -0.25, 0, "token_mean db");

    p.agg = TERN_AGG_SEQ_MEAN;
    cr_assert_eq(tern_policy_loss(&p, s, 3, &st), TERN_OK);
    expect_near(st.loss, 2.0, TOL, "seq_mean L"); /* the empty response is not in N */
    expect_near(st.pg_loss, 2.0, TOL, "seq_mean pg_loss");
    expect_near(da[0], -0.5, 0, "seq_mean da");
    for (int t = 0; t < 3; t++)
        expect_near(db[t], -1.0 / 6, 1e-8, "seq_mean db");
    cr_expect_eq(st.tokens, 4);
}

/* Dr. GRPO's aggregation: L = sum of every token's loss / (N L_max), with
 * N = 2 non-empty responses and L_max = 5: (1 + 2 + 3 + 4) / 10 = 1, and
 * each token's gradient -1/10 whatever its response's length. */
Test(policy_loss, token_sum_norm)
{
    float a[1] = {-1}, b[3] = {-2, -3, -4}, da[1], db[3];
    tern_loss_seq s[3] = {
        {.n = 1, .logp = a, .dlogp = da},
        {.n = 0},
        {.n = 3, .logp = b, .dlogp = db},
    };
    tern_loss_params p = {.kind = TERN_LOSS_SFT, .agg = TERN_AGG_TOKEN_SUM_NORM, .norm_len = 5};
    tern_loss_stats st;
    cr_assert_eq(tern_policy_loss(&p, s, 3, &st), TERN_OK, "%s", tern_error_message());
    expect_near(st.loss, 1.0, TOL, "token_sum_norm L");
    expect_near(da[0], -0.1, 1e-8, "token_sum_norm da");
    for (int t = 0; t < 3; t++)
        expect_near(db[t], -0.1, 1e-8, "token_sum_norm db");
    /* a sequence term (Kimi) weighs 1 / (N L_max) too: one response, tau 0,
     * A = 1: pg = -sum logp = 3 over N L_max = 5 */
    float lp[2] = {-1, -2}, d[2];
    tern_loss_seq k = {.n = 2, .logp = lp, .logp_old = lp, .advantage = 1, .dlogp = d};
    p.kind = TERN_LOSS_KIMI;
    cr_assert_eq(tern_policy_loss(&p, &k, 1, &st), TERN_OK, "%s", tern_error_message());
    expect_near(st.loss, 3.0 / 5, TOL, "kimi token_sum_norm L");
    expect_near(d[0], -1.0 / 5, 1e-8, "kimi token_sum_norm d");
    p.norm_len = 0;
    expect_error(tern_policy_loss(&p, &k, 1, &st), "L_max");
}

/* GSPO: one ratio per response, r = exp(mean_t (logp - logp_old)), clipped
 * as PPO's; the gradient -A r / n reaches every token on the unclipped branch
 * and none on the clipped one. */
Test(policy_loss, gspo)
{
    tern_loss_params p = {.kind = TERN_LOSS_GSPO, .agg = TERN_AGG_TOKEN_MEAN, .clip_low = 0.2,
                          .clip_high = 0.2};
    tern_loss_stats st;
    /* log-ratios 0.5 and 0.5: r = e^0.5 = 1.65 > 1.2, A = 0.5 > 0: clipped,
     * pg = -0.5 * 1.2 = -0.6, over T = 2 tokens: L = -0.3, no gradient */
    float lp[2] = {-1, -2}, lo[2] = {-1.5f, -2.5f}, d[2];
    tern_loss_seq s = {.n = 2, .logp = lp, .logp_old = lo, .advantage = 0.5, .dlogp = d};
    cr_assert_eq(tern_policy_loss(&p, &s, 1, &st), TERN_OK, "%s", tern_error_message());
    expect_near(st.loss, -0.3, TOL, "clipped L");
    expect_near(d[0], 0, 0, "clipped d0");
    expect_near(d[1], 0, 0, "clipped d1");
    expect_near(st.clip_frac, 1.0, 0, "clip_frac");
    expect_near(st.ratio_mean, exp(0.5), 1e-12, "ratio_mean");

    /* log-ratios 0.05 and 0.05 (in float), A = -1: r = e^m inside [0.8, 1.2],
     * pg = -A r = r, d pg / d logp_t = r / 2, over T = 2: L = r / 2, d = r / 4 */
    float lo2[2] = {-1.05f, -2.05f};
    s.logp_old = lo2;
    s.advantage = -1;
    double m = (((double)lp[0] - lo2[0]) + ((double)lp[1] - lo2[1])) / 2, r = exp(m);
    cr_assert_eq(tern_policy_loss(&p, &s, 1, &st), TERN_OK);
    expect_near(st.loss, r / 2, TOL, "unclipped L");
    expect_near(d[0], r / 4, 1e-7, "unclipped d0");
    expect_near(d[1], r / 4, 1e-7, "unclipped d1");
    cr_expect_eq(st.clip_frac, 0.0);

    /* the ratio is of the sequence, not of a token: log-ratios +0.3 and -0.3
     * give r = 1 (a token-level PPO with clip 0.2 would clip the first) */
    float lo3[2] = {-1.3f, -1.7f};
    s.logp_old = lo3;
    s.advantage = 1;
    m = (((double)lp[0] - lo3[0]) + ((double)lp[1] - lo3[1])) / 2;
    cr_assert_eq(tern_policy_loss(&p, &s, 1, &st), TERN_OK);
    expect_near(st.loss, -exp(m) / 2, TOL, "mixed L");
    expect_near(d[0], -exp(m) / 4, 1e-7, "mixed d0");
    cr_expect_eq(st.clip_frac, 0.0, "a sequence ratio of 1 is not clipped");
}

/* Off-policy correction: one token whose trainer/explorer ratio is 3, A = 2.
 * TIS caps the weight at 2: pg = -A min(3, 2) = -4; decoupled keeps it:
 * pg = -6; the gradient equals pg (T = 1, d pg / d logp = -A w). The mismatch
 * k3 = 3 - 1 - log 3 is reported whatever the correction; plain PPO clips
 * (rho = 3 > 1.2, A > 0): no gradient. */
Test(policy_loss, off_policy_corrections_and_mismatch)
{
    float lp[1] = {-1}, lo[1] = {(float)(-1 - log(3.0))}, d[1];
    double x = (double)lp[0] - lo[0], w = exp(x); /* 3, to float rounding */
    tern_loss_seq s = {.n = 1, .logp = lp, .logp_old = lo, .advantage = 2, .dlogp = d};
    tern_loss_params p = ppo_params();
    tern_loss_stats st;
    cr_assert_eq(tern_policy_loss(&p, &s, 1, &st), TERN_OK);
    expect_near(d[0], 0, 0, "ppo clipped");
    expect_near(st.mismatch_kl, w - 1 - x, 1e-9, "mismatch_kl");
    expect_near(st.is_weight_mean, 1, 0, "no correction: weight 1");

    p.off_policy = TERN_OFF_POLICY_TIS;
    p.tis_cap = 2;
    cr_assert_eq(tern_policy_loss(&p, &s, 1, &st), TERN_OK, "%s", tern_error_message());
    expect_near(st.loss, -4, TOL, "tis L");
    expect_near(d[0], -4, 1e-6, "tis gradient");
    expect_near(st.is_weight_mean, 2, 0, "tis weight");
    expect_near(st.ratio_mean, 1, 0, "the proximal ratio");
    expect_near(st.clip_frac, 0, 0, "never clipped");

    p.off_policy = TERN_OFF_POLICY_DECOUPLED;
    cr_assert_eq(tern_policy_loss(&p, &s, 1, &st), TERN_OK);
    expect_near(st.loss, -2 * w, TOL, "decoupled L");
    expect_near(d[0], -2 * w, 1e-6, "decoupled gradient");
    expect_near(st.mismatch_kl, w - 1 - x, 1e-9, "mismatch_kl again");

    /* a weight below the cap is left alone; a negative advantage pushes down */
    float lo2[1] = {(float)(-1 + log(2.0))};
    s.logp_old = lo2;
    s.advantage = -1;
    p.off_policy = TERN_OFF_POLICY_TIS;
    cr_assert_eq(tern_policy_loss(&p, &s, 1, &st), TERN_OK);
    expect_near(d[0], exp((double)lp[0] - lo2[0]), 1e-6, "tis under the cap: -A w");

    /* refused: another loss, a cap below 1 */
    p.kind = TERN_LOSS_KIMI;
    expect_error(tern_policy_loss(&p, &s, 1, &st), "corrects the ppo loss only");
    p.kind = TERN_LOSS_PPO;
    p.tis_cap = 0.5;
    expect_error(tern_policy_loss(&p, &s, 1, &st), "tis_cap");
}

/* entropy bonus: l = -logp - c H, dL/dH = -c / T (token_mean) or -c / (N n_i) */
Test(policy_loss, entropy_bonus)
{
    float a[1] = {-1}, b[3] = {-2, -3, -4}, ha[1] = {2}, hb[3] = {1, 0.5f, 0.5f};
    float da[1], db[3], ea[1], eb[3];
    tern_loss_seq s[2] = {
        {.n = 1, .logp = a, .entropy = ha, .dlogp = da, .dentropy = ea},
        {.n = 3, .logp = b, .entropy = hb, .dlogp = db, .dentropy = eb},
    };
    tern_loss_params p = {.kind = TERN_LOSS_SFT, .agg = TERN_AGG_TOKEN_MEAN,
                          .entropy_coef = 0.01};
    tern_loss_stats st;
    cr_assert_eq(tern_policy_loss(&p, s, 2, &st), TERN_OK);
    expect_near(st.entropy, 1.0, TOL, "entropy");
    expect_near(st.loss, 2.5 - 0.01 * 1.0, TOL, "L");
    expect_near(st.pg_loss, 2.5, TOL, "pg_loss");
    expect_near(ea[0], -0.0025, 1e-9, "ea");
    for (int t = 0; t < 3; t++)
        expect_near(eb[t], -0.0025, 1e-9, "eb");

    p.agg = TERN_AGG_SEQ_MEAN;
    cr_assert_eq(tern_policy_loss(&p, s, 2, &st), TERN_OK);
    expect_near(st.loss, 2.0 - 0.01 * (2 + 2.0 / 3) / 2, TOL, "seq_mean L");
    expect_near(ea[0], -0.005, 1e-9, "seq_mean ea");
    expect_near(eb[1], -0.01 / 6, 1e-9, "seq_mean eb");

    /* coef 0: dentropy zeros, the statistic still reported */
    p.entropy_coef = 0;
    cr_assert_eq(tern_policy_loss(&p, s, 2, &st), TERN_OK);
    cr_expect_eq(ea[0], 0.0f);
    cr_expect_eq(eb[2], 0.0f);
    expect_near(st.entropy, 1.0, TOL, "entropy (coef 0)");
    expect_near(st.loss, 2.0, TOL, "L (coef 0)");
    /* no entropies and coef 0: dentropy still zeros */
    s[0].entropy = s[1].entropy = NULL;
    ea[0] = eb[0] = 7;
    cr_assert_eq(tern_policy_loss(&p, s, 2, &st), TERN_OK);
    cr_expect_eq(ea[0], 0.0f);
    cr_expect_eq(eb[0], 0.0f);
    cr_expect_eq(st.entropy, 0.0);
}

/* ---- Kimi ---- */

/* logp {-1,-2}, logp_old {-1.5,-2.5}: s = 1, A = 0.5, tau = 0.1:
 * pg = -0.5 (-3) + 0.05 = 1.55, dpg/dlogp_t = -0.5 + 0.1 = -0.4;
 * token_mean divides by T = 2, seq_mean by N = 1 */
Test(policy_loss, kimi)
{
    float lp[2] = {-1, -2}, lo[2] = {-1.5f, -2.5f}, d[2];
    tern_loss_seq s = {.n = 2, .logp = lp, .logp_old = lo, .advantage = 0.5, .dlogp = d};
    tern_loss_params p = {.kind = TERN_LOSS_KIMI, .agg = TERN_AGG_TOKEN_MEAN, .kimi_tau = 0.1};
    tern_loss_stats st;
    cr_assert_eq(tern_policy_loss(&p, &s, 1, &st), TERN_OK, "%s", tern_error_message());
    expect_near(st.loss, 0.775, TOL, "token_mean L");
    expect_near(st.pg_loss, 0.775, TOL, "pg_loss");
    expect_near(d[0], -0.2, 1e-8, "d0");
    expect_near(d[1], -0.2, 1e-8, "d1");
    expect_near(st.ratio_mean, exp(0.5), 1e-12, "ratio_mean");
    cr_expect_eq(st.clip_frac, 0.0);

    p.agg = TERN_AGG_SEQ_MEAN;
    cr_assert_eq(tern_policy_loss(&p, &s, 1, &st), TERN_OK);
    expect_near(st.loss, 1.55, TOL, "seq_mean L");
    expect_near(d[0], -0.4, 1e-8, "seq_mean d0");

    /* s is not clamped: a log-ratio of 30 on one token, tau 0.01:
     * pg = -A sum logp + 0.005 * 900 */
    float lp2[1] = {-1}, lo2[1] = {-31}, d2[1];
    tern_loss_seq s2 = {.n = 1, .logp = lp2, .logp_old = lo2, .advantage = 1, .dlogp = d2};
    p.kimi_tau = 0.01;
    cr_assert_eq(tern_policy_loss(&p, &s2, 1, &st), TERN_OK);
    expect_near(st.loss, 1 + 4.5, TOL, "kimi far off-policy");
    expect_near(d2[0], -1 + 0.3, 1e-7, "kimi far off-policy grad");
}

/* ---- SFT ---- */

Test(policy_loss, sft)
{
    float lp[3] = {-0.5f, -1.5f, -0.25f}, d[3];
    tern_loss_seq s = {.n = 3, .logp = lp, .advantage = 123, .dlogp = d};
    tern_loss_params p = {.kind = TERN_LOSS_SFT, .agg = TERN_AGG_TOKEN_MEAN};
    tern_loss_stats st;
    cr_assert_eq(tern_policy_loss(&p, &s, 1, &st), TERN_OK);
    expect_near(st.loss, 0.75, TOL, "L"); /* advantage is ignored */
    for (int t = 0; t < 3; t++)
        expect_near(d[t], -1.0 / 3, 1e-7, "dlogp");
    expect_near(st.ratio_mean, 1, 0, "ratio_mean");
    cr_expect_eq(st.tokens, 3);
    /* st may be NULL */
    cr_expect_eq(tern_policy_loss(&p, &s, 1, NULL), TERN_OK);
}

/* ---- finite differences ---- */

#define FD_SEQS 6
#define FD_TOKENS 12

typedef struct fd_batch {
    float logp[FD_SEQS][FD_TOKENS], old[FD_SEQS][FD_TOKENS], ref[FD_SEQS][FD_TOKENS];
    float ent[FD_SEQS][FD_TOKENS], dlogp[FD_SEQS][FD_TOKENS], dent[FD_SEQS][FD_TOKENS];
    tern_loss_seq seqs[FD_SEQS];
} fd_batch;

static uint64_t rng_state;

static double rnd(void) /* splitmix64 -> [0, 1) */
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) / 9007199254740992.0;
}

static double uniform(double lo, double hi)
{
    return lo + (hi - lo) * rnd();
}

/* PPO's kinks: rho at a clip bound or (A < 0) at the dual-clip bound */
static int near_kink(const tern_loss_params *p, double lr, double A)
{
    double rho = exp(lr);
    if (p->kind != TERN_LOSS_PPO)
        return 0;
    if (fabs(rho - (1 - p->clip_low)) < 0.02 || fabs(rho - (1 + p->clip_high)) < 0.02)
        return 1;
    return p->dual_clip > 1 && A < 0 && fabs(rho - p->dual_clip) < 0.05;
}

/* Random batch: response 1 is empty, response 0 gets one far-off-policy token
 * (log-ratio 25, past the clamp) when far != 0. */
static void fd_fill(fd_batch *b, const tern_loss_params *p, uint64_t seed, int far)
{
    rng_state = seed;
    memset(b, 0, sizeof *b);
    for (int i = 0; i < FD_SEQS; i++) {
        tern_loss_seq *s = &b->seqs[i];
        s->n = i == 1 ? 0 : 1 + (size_t)(rnd() * FD_TOKENS);
        if (s->n > FD_TOKENS)
            s->n = FD_TOKENS;
        s->advantage = uniform(-1.5, 1.5);
        for (size_t t = 0; t < s->n; t++) {
            double lp = uniform(-3.0, -0.05), lr;
            do
                lr = uniform(-0.7, 1.4); /* rho in [0.5, 4]: both sides of the clip, dual clip */
            while (near_kink(p, lr, s->advantage));
            b->logp[i][t] = (float)lp;
            b->old[i][t] = (float)(lp - lr);
            b->ref[i][t] = (float)(lp - uniform(-0.5, 0.5));
            b->ent[i][t] = (float)uniform(0.1, 3.0);
            b->dlogp[i][t] = NAN;
            b->dent[i][t] = NAN;
        }
        if (far && i == 0)
            b->old[0][0] = b->logp[0][0] - 25.0f;
        s->logp = b->logp[i];
        s->logp_old = b->old[i];
        s->logp_ref = b->ref[i];
        s->entropy = b->ent[i];
        s->dlogp = b->dlogp[i];
        s->dentropy = b->dent[i];
    }
}

static double loss_of(const tern_loss_params *p, fd_batch *b)
{
    tern_loss_stats st;
    cr_assert_eq(tern_policy_loss(p, b->seqs, FD_SEQS, &st), TERN_OK, "%s",
                 tern_error_message());
    return st.loss;
}

/* central difference of L wrt x[t] (the true step of the float inputs) */
static double fd_at(const tern_loss_params *p, fd_batch *b, float *x)
{
    const double h = 1e-3;
    float x0 = *x, xp = (float)(x0 + h), xm = (float)(x0 - h);
    *x = xp;
    double Lp = loss_of(p, b);
    *x = xm;
    double Lm = loss_of(p, b);
    *x = x0;
    return (Lp - Lm) / ((double)xp - (double)xm);
}

static void fd_check(const tern_loss_params *p, uint64_t seed, int far)
{
    static fd_batch b;
    fd_fill(&b, p, seed, far);
    if (p->entropy_coef == 0)
        for (int i = 0; i < FD_SEQS; i++)
            b.seqs[i].entropy = NULL;
    loss_of(p, &b);
    float g[FD_SEQS][FD_TOKENS], ge[FD_SEQS][FD_TOKENS];
    memcpy(g, b.dlogp, sizeof g);
    memcpy(ge, b.dent, sizeof ge);
    size_t checked = 0, nonzero = 0;
    for (int i = 0; i < FD_SEQS; i++) {
        for (size_t t = 0; t < b.seqs[i].n; t++) {
            cr_assert(isfinite(g[i][t]), "dlogp[%d][%zu] not written", i, t);
            double fd = fd_at(p, &b, &b.logp[i][t]);
            cr_expect(fabs(fd - g[i][t]) <= 1e-7 + 1e-4 * fabs(fd),
                      "seed %llu: dL/dlogp[%d][%zu] = %.9g, finite difference %.9g",
                      (unsigned long long)seed, i, t, (double)g[i][t], fd);
            nonzero += g[i][t] != 0;
            if (b.seqs[i].entropy != NULL) {
                double fde = fd_at(p, &b, &b.ent[i][t]);
                cr_expect(fabs(fde - ge[i][t]) <= 1e-9 + 1e-4 * fabs(fde),
                          "seed %llu: dL/dH[%d][%zu] = %.9g, finite difference %.9g",
                          (unsigned long long)seed, i, t, (double)ge[i][t], fde);
            } else {
                cr_expect_eq(ge[i][t], 0.0f, "dentropy without entropies must be 0");
            }
            checked++;
        }
    }
    cr_expect(checked > 10 && nonzero > checked / 3, "checked %zu tokens, %zu nonzero",
              checked, nonzero);
}

Test(policy_loss, fd_ppo_token_mean_k3_entropy)
{
    tern_loss_params p = {.kind = TERN_LOSS_PPO, .agg = TERN_AGG_TOKEN_MEAN, .clip_low = 0.2,
                          .clip_high = 0.28, .dual_clip = 3.0, .kl = TERN_KL_K3,
                          .kl_coef = 0.05, .kl_in_loss = 1, .entropy_coef = 0.01};
    for (uint64_t seed = 1; seed <= 4; seed++)
        fd_check(&p, seed, 1);
}

Test(policy_loss, fd_ppo_seq_mean_k2)
{
    tern_loss_params p = {.kind = TERN_LOSS_PPO, .agg = TERN_AGG_SEQ_MEAN, .clip_low = 0.2,
                          .clip_high = 0.2, .kl = TERN_KL_K2, .kl_coef = 0.1, .kl_in_loss = 1};
    for (uint64_t seed = 10; seed <= 13; seed++)
        fd_check(&p, seed, 0);
}

Test(policy_loss, fd_kimi)
{
    tern_loss_params p = {.kind = TERN_LOSS_KIMI, .agg = TERN_AGG_TOKEN_MEAN, .kimi_tau = 0.1,
                          .kl = TERN_KL_K1, .kl_coef = 0.02, .kl_in_loss = 1,
                          .entropy_coef = 0.005};
    for (uint64_t seed = 20; seed <= 22; seed++)
        fd_check(&p, seed, 0);
    p.agg = TERN_AGG_SEQ_MEAN;
    p.kimi_tau = 0.3;
    p.kl = TERN_KL_NONE;
    p.entropy_coef = 0;
    for (uint64_t seed = 23; seed <= 25; seed++)
        fd_check(&p, seed, 0);
}

Test(policy_loss, fd_sft)
{
    tern_loss_params p = {.kind = TERN_LOSS_SFT, .agg = TERN_AGG_TOKEN_MEAN,
                          .entropy_coef = 0.02};
    for (uint64_t seed = 30; seed <= 32; seed++)
        fd_check(&p, seed, 0);
    p.agg = TERN_AGG_SEQ_MEAN;
    p.kl = TERN_KL_K3;
    p.kl_coef = 0.2;
    p.kl_in_loss = 1;
    for (uint64_t seed = 33; seed <= 35; seed++)
        fd_check(&p, seed, 0);
}

/* ---- errors (and nothing written on failure) ---- */

Test(policy_loss, error_no_tokens)
{
    tern_loss_seq s[2] = {{.n = 0}, {.n = 0}};
    tern_loss_params p = ppo_params();
    tern_loss_stats st;
    expect_error(tern_policy_loss(&p, s, 2, &st), "no response tokens");
    expect_error(tern_policy_loss(&p, s, 0, &st), "no response tokens");
}

Test(policy_loss, error_missing_logp_old)
{
    float lp[2] = {-1, -2}, lo[2] = {-1, -2}, d0[2] = {7, 7}, d1[2] = {7, 7};
    tern_loss_seq s[2] = {
        {.n = 2, .logp = lp, .logp_old = lo, .advantage = 1, .dlogp = d0},
        {.n = 2, .logp = lp, .advantage = 1, .dlogp = d1},
    };
    tern_loss_params p = ppo_params();
    tern_loss_stats st;
    expect_error(tern_policy_loss(&p, s, 2, &st), "the PPO loss needs logp_old");
    cr_expect(strstr(tern_error_message(), "response 1") != NULL);
    cr_expect_eq(d0[0], 7.0f, "nothing is written on failure");
    p.kind = TERN_LOSS_KIMI;
    expect_error(tern_policy_loss(&p, s, 2, &st), "the Kimi loss needs logp_old");
    p.kind = TERN_LOSS_SFT; /* SFT does not need it */
    cr_expect_eq(tern_policy_loss(&p, s, 2, &st), TERN_OK);
}

Test(policy_loss, error_missing_arrays)
{
    float lp[1] = {-1}, d[1];
    tern_loss_seq s = {.n = 1, .logp = lp, .dlogp = d};
    tern_loss_params p = {.kind = TERN_LOSS_SFT, .agg = TERN_AGG_TOKEN_MEAN,
                          .entropy_coef = 0.01};
    expect_error(tern_policy_loss(&p, &s, 1, NULL), "algorithm.entropy_coef = 0.01 needs");
    p.entropy_coef = 0;
    p.kl = TERN_KL_K3;
    p.kl_coef = 0.1;
    p.kl_in_loss = 1;
    expect_error(tern_policy_loss(&p, &s, 1, NULL), "needs reference log-probs");
    p.kl = TERN_KL_NONE;
    s.dlogp = NULL;
    expect_error(tern_policy_loss(&p, &s, 1, NULL), "no dlogp array");
    s.dlogp = d;
    s.logp = NULL;
    expect_error(tern_policy_loss(&p, &s, 1, NULL), "no logp array");
}

Test(policy_loss, error_non_finite)
{
    float lp[2] = {-1, NAN}, lo[2] = {-1, -1}, d[2];
    tern_loss_seq s = {.n = 2, .logp = lp, .logp_old = lo, .advantage = 1, .dlogp = d};
    tern_loss_params p = ppo_params();
    expect_error(tern_policy_loss(&p, &s, 1, NULL), "response 0, token 1: logp is nan");
    lp[1] = -1;
    lo[0] = -INFINITY;
    expect_error(tern_policy_loss(&p, &s, 1, NULL), "logp_old is -inf");
    lo[0] = -1;
    s.advantage = NAN;
    expect_error(tern_policy_loss(&p, &s, 1, NULL), "advantage is nan");
}

Test(policy_loss, error_params)
{
    float lp[1] = {-1}, lo[1] = {-1}, d[1];
    tern_loss_seq s = {.n = 1, .logp = lp, .logp_old = lo, .advantage = 1, .dlogp = d};
    tern_loss_params p = ppo_params();
    p.clip_low = 1.0;
    expect_error(tern_policy_loss(&p, &s, 1, NULL), "algorithm.clip_low must be in [0, 1)");
    p.clip_low = -0.1;
    expect_error(tern_policy_loss(&p, &s, 1, NULL), "clip_low");
    p = ppo_params();
    p.clip_high = -0.1;
    expect_error(tern_policy_loss(&p, &s, 1, NULL), "algorithm.clip_high must be");
    p = ppo_params();
    p.dual_clip = 0.5;
    expect_error(tern_policy_loss(&p, &s, 1, NULL), "algorithm.dual_clip must be 0 (off)");
    p.dual_clip = 1.0;
    expect_error(tern_policy_loss(&p, &s, 1, NULL), "dual_clip");
    p = ppo_params();
    p.kl_coef = -1;
    expect_error(tern_policy_loss(&p, &s, 1, NULL), "algorithm.kl.coef");
    p = ppo_params();
    p.entropy_coef = NAN;
    expect_error(tern_policy_loss(&p, &s, 1, NULL), "algorithm.entropy_coef");
    p = (tern_loss_params){.kind = TERN_LOSS_KIMI, .agg = TERN_AGG_SEQ_MEAN, .kimi_tau = -1};
    expect_error(tern_policy_loss(&p, &s, 1, NULL), "algorithm.kimi_tau");
    p = ppo_params();
    p.kind = 0;
    expect_error(tern_policy_loss(&p, &s, 1, NULL), "unknown loss 0");
    p = ppo_params();
    p.agg = 7;
    expect_error(tern_policy_loss(&p, &s, 1, NULL), "unknown loss aggregation 7");
    p = ppo_params();
    p.kl = 5;
    expect_error(tern_policy_loss(&p, &s, 1, NULL), "unknown KL estimator 5");
}

/* ---- masks: context tokens inside a trajectory count nowhere ---- */

/* Two trajectories whose model tokens are interleaved with context tokens
 * (mask 0) give the same loss, statistics and model-token gradients as the
 * same two responses holding only their model tokens, for every loss and
 * aggregation; every context token gets zero gradients. */
static void expect_mask_is_removal(tern_loss_params p)
{
    /* trajectory 0: 7 tokens, model at 0,1 and 4,5,6; trajectory 1: 5 tokens,
     * model at 2,3 (a first turn of context, then the model) */
    static const unsigned char m0[7] = {1, 1, 0, 0, 1, 1, 1}, m1[5] = {0, 0, 1, 1, 0};
    static const float lp0[7] = {-0.5f, -1.0f, -3.0f, -2.0f, -0.2f, -0.7f, -1.3f};
    static const float old0[7] = {-0.6f, -0.8f, 0.0f, 0.0f, -0.3f, -0.5f, -1.1f};
    static const float ref0[7] = {-0.4f, -1.1f, -9.0f, -9.0f, -0.1f, -0.9f, -1.0f};
    static const float h0[7] = {1.0f, 2.0f, 5.0f, 5.0f, 0.5f, 0.7f, 1.5f};
    static const float lp1[5] = {-4.0f, -4.0f, -0.9f, -0.4f, -6.0f};
    static const float old1[5] = {0.0f, 0.0f, -1.0f, -0.35f, 0.0f};
    static const float ref1[5] = {-1.0f, -1.0f, -0.8f, -0.5f, -1.0f};
    static const float h1[5] = {9.0f, 9.0f, 1.2f, 0.8f, 9.0f};
    float d0[7], d1[5], e0[7], e1[5];
    tern_loss_seq masked[2] = {
        {.n = 7, .logp = lp0, .logp_old = old0, .logp_ref = ref0, .entropy = h0,
         .advantage = 0.8, .dlogp = d0, .dentropy = e0, .mask = m0},
        {.n = 5, .logp = lp1, .logp_old = old1, .logp_ref = ref1, .entropy = h1,
         .advantage = -0.6, .dlogp = d1, .dentropy = e1, .mask = m1}};
    /* the same model tokens, packed */
    float clp0[5], cold0[5], cref0[5], ch0[5], clp1[2], cold1[2], cref1[2], ch1[2];
    float cd0[5], cd1[2], ce0[5], ce1[2];
    size_t k = 0;
    for (size_t t = 0; t < 7; t++)
        if (m0[t])
            clp0[k] = lp0[t], cold0[k] = old0[t], cref0[k] = ref0[t], ch0[k] = h0[t], k++;
    k = 0;
    for (size_t t = 0; t < 5; t++)
        if (m1[t])
            clp1[k] = lp1[t], cold1[k] = old1[t], cref1[k] = ref1[t], ch1[k] = h1[t], k++;
    tern_loss_seq packed[2] = {
        {.n = 5, .logp = clp0, .logp_old = cold0, .logp_ref = cref0, .entropy = ch0,
         .advantage = 0.8, .dlogp = cd0, .dentropy = ce0},
        {.n = 2, .logp = clp1, .logp_old = cold1, .logp_ref = cref1, .entropy = ch1,
         .advantage = -0.6, .dlogp = cd1, .dentropy = ce1}};
    memset(d0, 0x7f, sizeof d0), memset(d1, 0x7f, sizeof d1); /* garbage: must be overwritten */
    tern_loss_stats sm, sp;
    cr_assert_eq(tern_policy_loss(&p, masked, 2, &sm), TERN_OK, "%s", tern_error_message());
    cr_assert_eq(tern_policy_loss(&p, packed, 2, &sp), TERN_OK, "%s", tern_error_message());
    expect_near(sm.loss, sp.loss, 1e-12, "loss");
    expect_near(sm.pg_loss, sp.pg_loss, 1e-12, "pg_loss");
    expect_near(sm.kl, sp.kl, 1e-12, "kl");
    expect_near(sm.entropy, sp.entropy, 1e-12, "entropy");
    expect_near(sm.clip_frac, sp.clip_frac, 1e-12, "clip_frac");
    expect_near(sm.ratio_mean, sp.ratio_mean, 1e-12, "ratio_mean");
    expect_near(sm.mismatch_kl, sp.mismatch_kl, 1e-12, "mismatch_kl");
    cr_expect_eq(sm.tokens, 7, "tokens %zu: only the model's count", sm.tokens);
    k = 0;
    for (size_t t = 0; t < 7; t++) {
        if (m0[t]) {
            expect_near(d0[t], cd0[k], 1e-7, "dlogp of a model token (trajectory 0)");
            expect_near(e0[t], ce0[k], 1e-7, "dentropy of a model token (trajectory 0)");
            k++;
        } else {
            cr_expect_eq(d0[t], 0.0f, "context token %zu has dlogp %g", t, (double)d0[t]);
            cr_expect_eq(e0[t], 0.0f, "context token %zu has dentropy %g", t, (double)e0[t]);
        }
    }
    k = 0;
    for (size_t t = 0; t < 5; t++) {
        if (m1[t]) {
            expect_near(d1[t], cd1[k], 1e-7, "dlogp of a model token (trajectory 1)");
            k++;
        } else {
            cr_expect_eq(d1[t], 0.0f, "context token %zu has dlogp %g", t, (double)d1[t]);
        }
    }
}

Test(policy_loss, masked_context_counts_nowhere)
{
    static const tern_loss_kind kinds[] = {TERN_LOSS_PPO, TERN_LOSS_KIMI, TERN_LOSS_GSPO,
                                           TERN_LOSS_SFT};
    static const tern_loss_agg aggs[] = {TERN_AGG_TOKEN_MEAN, TERN_AGG_SEQ_MEAN,
                                         TERN_AGG_TOKEN_SUM_NORM};
    for (size_t a = 0; a < 3; a++)
        for (size_t k = 0; k < 4; k++) {
            tern_loss_params p = ppo_params();
            p.kind = kinds[k];
            p.agg = aggs[a];
            p.norm_len = 16;
            p.kimi_tau = 0.3;
            p.kl = TERN_KL_K3;
            p.kl_coef = 0.05;
            p.kl_in_loss = 1;
            p.entropy_coef = 0.01;
            expect_mask_is_removal(p);
            p.kind = TERN_LOSS_PPO;
            p.off_policy = TERN_OFF_POLICY_TIS;
            p.tis_cap = 2;
            expect_mask_is_removal(p);
        }
}

/* A trajectory whose every token is context adds nothing: not to N (seq_mean),
 * not a gradient. */
Test(policy_loss, a_trajectory_of_context_only_adds_nothing)
{
    static const unsigned char none[2] = {0, 0};
    float lp[2] = {-1, -2}, old[2] = {-1, -2}, d[2] = {5, 5}, lp1[1] = {-0.5f}, old1[1] = {-0.7f},
          d1[1];
    tern_loss_params p = ppo_params();
    p.agg = TERN_AGG_SEQ_MEAN;
    tern_loss_seq two[2] = {{.n = 2, .logp = lp, .logp_old = old, .advantage = 1, .dlogp = d,
                             .mask = none},
                            {.n = 1, .logp = lp1, .logp_old = old1, .advantage = 1, .dlogp = d1}};
    tern_loss_stats st;
    cr_assert_eq(tern_policy_loss(&p, two, 2, &st), TERN_OK, "%s", tern_error_message());
    float d_alone[1];
    tern_loss_seq one = two[1];
    one.dlogp = d_alone;
    tern_loss_stats st1;
    cr_assert_eq(tern_policy_loss(&p, &one, 1, &st1), TERN_OK, "%s", tern_error_message());
    expect_near(st.loss, st1.loss, 1e-12, "loss");
    expect_near(d1[0], d_alone[0], 1e-9, "dlogp");
    cr_expect(d[0] == 0.0f && d[1] == 0.0f, "context-only trajectory got gradients");
    tern_loss_seq only = two[0];
    expect_error(tern_policy_loss(&p, &only, 1, &st), "no response tokens");
}
