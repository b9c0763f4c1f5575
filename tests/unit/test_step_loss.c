/* test_step_loss.c: one trainer step's numbers (loop/step_loss.h) against a
 * step worked out here by hand, formula by formula: the rewards trained on
 * (KL in the reward is a penalty, the length penalty), the group advantages
 * of those rewards, and the loss and dL/dlogp per token with the behaviour
 * log-probs as logp_old and, with KL in the loss, the KL term. A trainer that
 * turned the penalty into a bonus, dropped a term, used the current log-probs
 * as logp_old or put the KL in both places fails here. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "loop/step_loss.h"
#include "tern/abi.h"

/* One group of 3 responses of 2, 1 and 2 tokens. */
enum { G = 3, T = 5 };
static const uint32_t len[G] = {2, 1, 2};
static const float logp[G][2] = {{-0.5f, -1.0f}, {-2.0f, 0}, {-0.25f, -0.75f}};
static const float logp_old[G][2] = {{-0.6f, -0.9f}, {-1.9f, 0}, {-0.3f, -0.8f}};
static const float logp_ref[G][2] = {{-0.7f, -1.2f}, {-1.5f, 0}, {-0.25f, -0.5f}};
static const double scored[G] = {1.0, 0.0, 1.0};
static const int correct[G] = {1, 0, 1};

typedef struct step {
    tern_loss_seq seq[G];
    float dlogp[G][2];
    double reward[G], adv[G];
    tern_step_batch b;
} step;

static void make_step(step *s)
{
    memset(s, 0, sizeof *s);
    for (int i = 0; i < G; i++) {
        s->seq[i] = (tern_loss_seq){.n = len[i], .logp = logp[i], .logp_old = logp_old[i],
                                    .logp_ref = logp_ref[i], .dlogp = s->dlogp[i]};
        s->reward[i] = scored[i];
    }
    s->b = (tern_step_batch){.n_groups = 1, .group_size = G, .seq = s->seq,
                             .reward = s->reward, .len = len, .correct = correct,
                             .adv = s->adv};
}

static tern_run_settings settings(tern_kl_placement where, double length_coef)
{
    tern_run_settings set;
    memset(&set, 0, sizeof set);
    set.adv = (tern_adv_params){.kind = TERN_ADV_GRPO, .std_normalize = 1, .eps = 1e-6,
                                .length_coef = length_coef};
    set.loss = (tern_loss_params){.kind = TERN_LOSS_PPO, .agg = TERN_AGG_TOKEN_MEAN,
                                  .clip_low = 0.2, .clip_high = 0.2, .kl = TERN_KL_K3,
                                  .kl_coef = 0.5, .kl_in_loss = where == TERN_KL_IN_LOSS};
    set.kl_placement = where;
    return set;
}

/* k3(x) = exp(-x) - 1 + x, x = logp - logp_ref; dk3/dlogp = 1 - exp(-x) */
static double k3(double x) { return exp(-x) - 1 + x; }

/* GRPO: (r - mean) / (population std + eps) */
static void grpo(const double *r, double *a)
{
    double m = (r[0] + r[1] + r[2]) / 3, v = 0;
    for (int i = 0; i < G; i++)
        v += (r[i] - m) * (r[i] - m);
    double sd = sqrt(v / 3);
    for (int i = 0; i < G; i++)
        a[i] = (r[i] - m) / (sd + 1e-6);
}

/* The hand-computed step: rewards r trained on, advantages a, loss, and
 * dL/dlogp per token. Every ratio lies inside [0.8, 1.2], so the PPO loss
 * of a token is -A rho and its gradient -A rho / T. */
static double hand(int kl_in_reward, int kl_in_loss, double length_coef, double *r, double *a,
                   double dl[G][2])
{
    for (int i = 0; i < G; i++) {
        r[i] = scored[i];
        if (kl_in_reward)
            for (uint32_t t = 0; t < len[i]; t++)
                r[i] -= 0.5 * k3((double)logp[i][t] - logp_ref[i][t]);
    }
    if (length_coef) { /* lengths 2, 1, 2: lambda = 0.5 - (len - 1) / (2 - 1) */
        for (int i = 0; i < G; i++) {
            double lambda = 0.5 - (double)(len[i] - 1);
            r[i] += length_coef * (correct[i] ? lambda : (lambda < 0 ? lambda : 0));
        }
    }
    grpo(r, a);
    double loss = 0;
    for (int i = 0; i < G; i++)
        for (uint32_t t = 0; t < len[i]; t++) {
            double rho = exp((double)logp[i][t] - logp_old[i][t]);
            cr_assert(rho > 0.8 && rho < 1.2, "the example stays inside the clip range");
            double x = (double)logp[i][t] - logp_ref[i][t];
            loss += -a[i] * rho + (kl_in_loss ? 0.5 * k3(x) : 0);
            dl[i][t] = (-a[i] * rho + (kl_in_loss ? 0.5 * (1 - exp(-x)) : 0)) / T;
        }
    return loss / T;
}

static void expect_step(const step *s, const tern_loss_stats *st, double reward_mean,
                        int kl_in_reward, int kl_in_loss, double length_coef)
{
    double r[G], a[G], dl[G][2];
    double loss = hand(kl_in_reward, kl_in_loss, length_coef, r, a, dl);
    for (int i = 0; i < G; i++) {
        cr_expect(fabs(s->reward[i] - r[i]) < 1e-6, "reward %d: %.9g, by hand %.9g", i,
                  s->reward[i], r[i]);
        cr_expect(fabs(s->adv[i] - a[i]) < 1e-5, "advantage %d: %.9g, by hand %.9g", i,
                  s->adv[i], a[i]);
        for (uint32_t t = 0; t < len[i]; t++)
            cr_expect(fabs(s->dlogp[i][t] - dl[i][t]) < 1e-6, "dL/dlogp[%d][%u]: %.9g, by "
                      "hand %.9g", i, t, s->dlogp[i][t], dl[i][t]);
    }
    cr_expect(fabs(reward_mean - (r[0] + r[1] + r[2]) / 3) < 1e-9, "reward_mean %.9g",
              reward_mean);
    cr_expect(fabs(st->loss - loss) < 1e-6, "loss %.9g, by hand %.9g", st->loss, loss);
    cr_expect_eq(st->tokens, T);
    /* the kl statistic is the mean k3 per token wherever the KL goes */
    double kl = 0;
    for (int i = 0; i < G; i++)
        for (uint32_t t = 0; t < len[i]; t++)
            kl += k3((double)logp[i][t] - logp_ref[i][t]) / T;
    cr_expect(fabs(st->kl - kl) < 1e-6, "kl %.9g, by hand %.9g", st->kl, kl);
    cr_expect(fabs(st->ratio_mean - 1) > 1e-3, "the behaviour log-probs made the ratio move "
              "(%.9g)", st->ratio_mean);
}

Test(step_loss, kl_in_the_reward_is_subtracted_from_the_rewards)
{
    tern_run_settings set = settings(TERN_KL_IN_REWARD, 0);
    step s;
    make_step(&s);
    tern_loss_stats st;
    double mean = 0;
    cr_assert_eq(tern_step_loss(&set, 1, &s.b, &st, &mean), TERN_OK);
    expect_step(&s, &st, mean, 1, 0, 0);
    for (int i = 0; i < G; i++)
        cr_expect_lt(s.reward[i], scored[i], "response %d: a penalty lowers the reward", i);
}

Test(step_loss, kl_in_the_loss_is_a_loss_term_and_leaves_the_rewards)
{
    tern_run_settings set = settings(TERN_KL_IN_LOSS, 0);
    step s;
    make_step(&s);
    tern_loss_stats st;
    double mean = 0;
    cr_assert_eq(tern_step_loss(&set, 1, &s.b, &st, &mean), TERN_OK);
    expect_step(&s, &st, mean, 0, 1, 0);
    for (int i = 0; i < G; i++)
        cr_expect_eq(s.reward[i], scored[i], "response %d: the rewards as scored", i);
}

Test(step_loss, the_length_penalty_reaches_the_advantages)
{
    tern_run_settings set = settings(TERN_KL_IN_LOSS, 0.5);
    step s;
    make_step(&s);
    tern_loss_stats st;
    double mean = 0;
    cr_assert_eq(tern_step_loss(&set, 1, &s.b, &st, &mean), TERN_OK);
    expect_step(&s, &st, mean, 0, 1, 0.5);
    /* response 1 (the short one) is wrong: its length earns it nothing */
    cr_expect_eq(s.reward[1], scored[1]);
}

Test(step_loss, without_a_reference_there_is_no_kl_anywhere)
{
    tern_run_settings set = settings(TERN_KL_IN_REWARD, 0);
    step s;
    make_step(&s);
    for (int i = 0; i < G; i++)
        s.seq[i].logp_ref = NULL;
    tern_loss_stats st;
    double mean = 0;
    cr_assert_eq(tern_step_loss(&set, 0, &s.b, &st, &mean), TERN_OK);
    for (int i = 0; i < G; i++)
        cr_expect_eq(s.reward[i], scored[i]);
    cr_expect_eq(st.kl, 0);
}
