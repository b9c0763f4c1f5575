/* step_loss.c: one RL step's rewards, advantages and loss (see step_loss.h). */
#include "loop/step_loss.h"

#include "algo/advantage.h"
#include "base/errmsg.h"

int tern_step_loss(const tern_run_settings *set, int have_ref, tern_step_batch *b,
                   tern_loss_stats *stats, double *reward_mean)
{
    size_t n = b->n_groups * b->group_size;
    /* KL as a reward penalty: r -= beta * sum_t k(logp_t, logp_ref_t) */
    if (have_ref && set->kl_placement == TERN_KL_IN_REWARD && set->loss.kl_coef > 0)
        for (size_t i = 0; i < n; i++) {
            const tern_loss_seq *s = &b->seq[i];
            double kl = 0;
            for (size_t t = 0; t < s->n; t++)
                if (!s->mask || s->mask[t]) /* the model's tokens only */
                    kl += tern_kl_value(set->loss.kl, s->logp[t], s->logp_ref[t]);
            b->reward[i] -= set->loss.kl_coef * kl;
        }
    tern_length_penalty(&set->adv, b->reward, b->len, b->correct, b->n_groups, b->group_size);
    tern_overlong_penalty(&set->adv, b->reward, b->len, n);
    *reward_mean = 0;
    for (size_t i = 0; i < n; i++)
        *reward_mean += b->reward[i] / (double)n;
    int rc = tern_advantages(&set->adv, b->reward, b->n_groups, b->group_size, b->adv);
    if (rc != TERN_OK)
        return rc;
    for (size_t i = 0; i < n; i++)
        b->seq[i].advantage = b->adv[i];
    return tern_step_loss_figures(set, have_ref, b, stats);
}

int tern_step_loss_figures(const tern_run_settings *set, int have_ref, tern_step_batch *b,
                           tern_loss_stats *stats)
{
    tern_loss_params lp = set->loss;
    if (!have_ref) {
        lp.kl = TERN_KL_NONE;
        lp.kl_coef = 0;
    }
    /* the loss over every token of the batch: normalised by the global count */
    return tern_policy_loss(&lp, b->seq, b->n_groups * b->group_size, stats);
}
