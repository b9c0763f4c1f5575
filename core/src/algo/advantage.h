/* advantage.h: advantages from rewards, for a batch of groups (the group_size
 * responses of one task are a group). Outcome rewards: one scalar per
 * response, one advantage per response that every token of it shares.
 *
 * Layout: response j of group g is index g * group_size + j; all arrays have
 * n_groups * group_size entries.
 *
 *   GRPO        A = r - mean_g(r)                 (std_normalize: / (std_g(r) + eps))
 *   RLOO        A = r - mean of the other G-1 rewards of the group
 *                 = G / (G - 1) * (r - mean_g(r))  (G >= 2)
 *   REINFORCE++ A = (r - mean_B(r)) / (std_B(r) + eps) over the whole batch B
 *   Kimi k1.5   A = r - mean_g(r)                 (the mirror-descent loss adds the
 *                                                  regulariser, see policy_loss.h)
 *
 * std is the population standard deviation (the squares divided by n), or
 * with std_sample the sample one (divided by n - 1, as verl and TRL; a
 * group of one has std 0 either way). Kimi's length
 * penalty (k1.5 report §2.3.3) is a reward term, added before the advantage:
 *
 *   lambda_i = 0.5 - (len_i - min_len) / (max_len - min_len)   (0 if max_len == min_len)
 *   len_reward_i = lambda_i if correct_i, else min(0, lambda_i)
 *   r_i += length_coef * len_reward_i                           (min/max over the group)
 *
 * DAPO's overlong reward shaping (Yu et al. 2025, §3.4) is a reward term
 * too: a response that runs into the last L_cache tokens before the limit
 * L_max (explorer.max_tokens) loses reward in proportion, up to `penalty`
 * at the limit itself (a truncated response):
 *
 *   r_i += -penalty * min(1, max(0, len_i - (L_max - L_cache)) / L_cache)
 *
 * so 0 up to L_max - L_cache tokens, then a ramp down to -penalty.
 */
#ifndef TERN_ALGO_ADVANTAGE_H
#define TERN_ALGO_ADVANTAGE_H

#include <stddef.h>
#include <stdint.h>

typedef enum tern_adv_kind {
    TERN_ADV_GRPO = 1,
    TERN_ADV_RLOO = 2,
    TERN_ADV_REINFORCE_PP = 3,
    TERN_ADV_KIMI = 4
} tern_adv_kind;

typedef struct tern_adv_params {
    tern_adv_kind kind;
    int std_normalize;  /* GRPO only: divide by the group's std + eps */
    int std_sample;     /* the std divides by n - 1 (verl, TRL), not n */
    double eps;         /* added to a std before dividing (e.g. 1e-6) */
    double length_coef; /* weight of Kimi's length penalty; 0: off (any kind) */
    /* DAPO's overlong shaping (tern_overlong_penalty): the zone's length in
     * tokens (0: off), the reward lost at max_tokens, the response limit */
    uint32_t overlong_buffer;
    double overlong_penalty;
    uint32_t max_tokens;
} tern_adv_params;

/* Parse "grpo", "rloo", "reinforce++" (or "reinforce_pp"), "kimi"; 0 if unknown. */
tern_adv_kind tern_adv_kind_parse(const char *name);

/* Add the length penalty to rewards[] in place (no-op when p->length_coef is
 * 0). lengths[i]: response tokens; correct[i]: 1 if the answer was right. */
void tern_length_penalty(const tern_adv_params *p, double *rewards, const uint32_t *lengths,
                         const int *correct, size_t n_groups, size_t group_size);

/* Add DAPO's overlong penalty to rewards[] in place (a no-op when
 * p->overlong_buffer is 0). lengths[i]: response tokens (EOS included). */
void tern_overlong_penalty(const tern_adv_params *p, double *rewards, const uint32_t *lengths,
                           size_t n);

/* Fill adv[] from rewards[]. TERN_OK, or TERN_EINVAL with a message (RLOO
 * with group_size < 2, n_groups or group_size 0, a reward that is not finite). */
int tern_advantages(const tern_adv_params *p, const double *rewards, size_t n_groups,
                    size_t group_size, double *adv);

#endif
