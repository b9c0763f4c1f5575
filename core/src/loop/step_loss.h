/* step_loss.h: one RL step's numbers from its groups' scores, the part of
 * the trainer between the scoring and the backward pass (docs/algorithms.md),
 * which every trainer rank computes alike over the whole batch:
 *
 *   r_i   the rewards as scored; with KL in the reward (kl.placement =
 *         "reward", a reference, kl.coef > 0)
 *             r_i -= kl_coef * sum_t k(logp_it - logp_ref_it)
 *   r_i   plus Kimi's length penalty (algorithm.length_coef)
 *   A_i   the group advantages of r
 *   L     the policy loss over every token of the batch (logp_old: the
 *         behaviour log-probs; a KL loss term only with kl.placement =
 *         "loss" and a reference), and dL/dlogp, dL/dH per token.
 *
 * Written out in one place so that it can be checked against a hand-computed
 * step (tests/unit/test_step_loss.c). */
#ifndef TERN_LOOP_STEP_LOSS_H
#define TERN_LOOP_STEP_LOSS_H

#include <stddef.h>
#include <stdint.h>

#include "algo/policy_loss.h"
#include "config/run_settings.h"

/* A step's batch: n = n_groups * group_size responses, group after group. */
typedef struct tern_step_batch {
    size_t n_groups;
    uint32_t group_size;
    /* [n] each response's tokens: logp, logp_old, logp_ref (NULL entries
     * without a reference), entropy, dlogp and dentropy set by the caller;
     * advantage is written here */
    tern_loss_seq *seq;
    double *reward;        /* [n] in: as scored; out: as trained on */
    const uint32_t *len;   /* [n] response tokens (the length penalty) */
    const int *correct;    /* [n] 1: the answer was right (the length penalty) */
    double *adv;           /* [n] out: the advantages */
} tern_step_batch;

/* Compute the step (above) with the run's algorithm settings; have_ref: the
 * sequences carry reference log-probs. *stats gets the loss's statistics and
 * *reward_mean the mean reward trained on. TERN_OK, or TERN_EINVAL with a
 * message (what tern_advantages and tern_policy_loss refuse). */
int tern_step_loss(const tern_run_settings *set, int have_ref, tern_step_batch *b,
                   tern_loss_stats *stats, double *reward_mean);

/* The loss's statistics again, after tern_step_loss on b, from the
 * sequences' logp and entropy as they are now (the backward pass's, where
 * the step skipped its scoring pass and its loss took logp_old for logp):
 * the advantages stay; dlogp and dentropy are overwritten. TERN_OK, or
 * TERN_EINVAL with a message. */
int tern_step_loss_figures(const tern_run_settings *set, int have_ref, tern_step_batch *b,
                           tern_loss_stats *stats);

#endif
