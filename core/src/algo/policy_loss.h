/* policy_loss.h: the training losses of a batch of responses and their
 * gradients dL/dlogp (and dL/dentropy) per response token, which the trainer
 * hands to the model's backward pass (docs/architecture.md §2: the model never sees an
 * algorithm, only these gradients).
 *
 * Per response i with n_i tokens t: logp = log pi(y_t) under the policy being
 * trained, logp_old under the policy that generated it (behaviour), logp_ref
 * under the frozen reference, H its entropy, A_i its advantage.
 *
 *   PPO (clipped):  rho = exp(logp - logp_old)
 *                   pg  = max(-A rho, -A clip(rho, 1 - clip_low, 1 + clip_high))
 *                   dual clip c > 1 and A < 0:  pg = min(pg, -c A)
 *   Kimi k1.5 (online mirror descent), a sequence term:
 *                   s_i  = sum_t (logp - logp_old)
 *                   pg_i = -A_i sum_t logp + tau / 2 * s_i^2
 *                   (d pg_i / d logp_t = -A_i + tau s_i)
 *   GSPO (sequence-level ratio), a sequence term:
 *                   r_i  = exp((1/n_i) sum_t (logp - logp_old))   (the geometric mean ratio)
 *                   pg_i = max(-A_i r_i, -A_i clip(r_i, 1 - clip_low, 1 + clip_high))
 *                   (d pg_i / d logp_t = -A_i r_i / n_i on the unclipped branch, else 0)
 *   SFT:            pg  = -logp   (cross-entropy on the given tokens)
 *
 *   Off-policy correction (PPO; off_policy != NONE). tern takes one gradient
 *   step per batch, so the policy being trained is, where the gradient is
 *   taken, the trainer's own policy of the step (AReaL's proximal policy):
 *   its ratio to itself is 1 and never clipped. What remains is the weight
 *   of the behaviour policy that sampled the token, held constant (no
 *   gradient through it):
 *                   w   = exp(logp - logp_old)             (the trainer over the explorer)
 *                   TIS:        w <- min(w, tis_cap)      (truncated importance sampling)
 *                   DECOUPLED:  w as it is                (AReaL's decoupled PPO)
 *                   pg  = -A w,  d pg / d logp = -A w
 *   Mismatch (every loss with logp_old): the trainer-vs-explorer KL per token,
 *   KL(explorer || trainer) estimated on the explorer's samples with k3:
 *                   m = exp(logp - logp_old) - 1 - (logp - logp_old)
 *
 *   KL to the reference, x = logp - logp_ref:
 *                   k1 = x,  k2 = x^2 / 2,  k3 = exp(-x) - 1 + x
 *   per-token loss  l = pg + [kl_in_loss] kl_coef * k(x) - entropy_coef * H
 *
 * Only the model's own tokens count (tern_loss_seq.mask): in a multi-turn
 * trajectory n_i is the number of tokens the model sampled, and observation
 * and template tokens between its turns are neither losses nor counted.
 *
 * Aggregation over the batch (N responses, T = sum n_i tokens):
 *   TOKEN_MEAN  L = sum_i sum_t l_it / T
 *   SEQ_MEAN    L = 1/N sum_i (1/n_i) sum_t l_it
 *               (responses with n_i == 0 add nothing and do not count in N)
 *   TOKEN_SUM_NORM (Dr. GRPO)  L = sum_i sum_t l_it / (N L_max), L_max = norm_len
 *               (a constant, the explorer's max_tokens: no response's length
 *               changes another token's weight)
 * Kimi's and GSPO's sequence terms pg_i count as one whole term of response
 * i: divided by T (TOKEN_MEAN), by N (SEQ_MEAN), or by N L_max.
 *
 * log-ratios are clamped to [-20, 20] before exp() so that a far-off-policy
 * token cannot overflow; the clamp is part of the function being
 * differentiated (zero gradient outside it). Only the argument of exp() is
 * clamped: k3 = exp(-clamp(x)) - 1 + x; Kimi's s_i (no exp) is not clamped.
 */
#ifndef TERN_ALGO_POLICY_LOSS_H
#define TERN_ALGO_POLICY_LOSS_H

#include <stddef.h>

typedef enum tern_loss_kind {
    TERN_LOSS_PPO = 1,
    TERN_LOSS_KIMI = 2,
    TERN_LOSS_SFT = 3,
    TERN_LOSS_GSPO = 4
} tern_loss_kind;

typedef enum tern_loss_agg {
    TERN_AGG_TOKEN_MEAN = 1,
    TERN_AGG_SEQ_MEAN = 2,
    TERN_AGG_TOKEN_SUM_NORM = 3
} tern_loss_agg;

typedef enum tern_off_policy {
    TERN_OFF_POLICY_NONE = 0,     /* PPO's ratio to the behaviour policy, clipped */
    TERN_OFF_POLICY_TIS = 1,      /* weight min(trainer/explorer, tis_cap) */
    TERN_OFF_POLICY_DECOUPLED = 2 /* weight trainer/explorer (AReaL) */
} tern_off_policy;

typedef enum tern_kl_estimator {
    TERN_KL_NONE = 0,
    TERN_KL_K1 = 1,
    TERN_KL_K2 = 2,
    TERN_KL_K3 = 3
} tern_kl_estimator;

typedef struct tern_loss_params {
    tern_loss_kind kind;
    tern_loss_agg agg;
    double clip_low, clip_high; /* PPO: rho kept in [1 - clip_low, 1 + clip_high] */
    double dual_clip;           /* PPO: c > 1 bounds the loss of A < 0 tokens by -c A; 0: off */
    tern_kl_estimator kl;       /* estimator used for the loss term and the kl statistic */
    double kl_coef;             /* beta */
    int kl_in_loss;             /* 1: beta * k(x) is a loss term; 0: statistic only (the
                                   trainer may subtract it from rewards instead) */
    double entropy_coef;        /* entropy bonus; needs seqs[i].entropy */
    double kimi_tau;            /* Kimi: tau of the squared log-ratio regulariser */
    double norm_len;            /* TOKEN_SUM_NORM: L_max, the constant token count of one
                                   response (> 0) */
    tern_off_policy off_policy; /* PPO: off-policy correction (NONE: none) */
    double tis_cap;             /* TIS: the weight's cap C >= 1 */
} tern_loss_params;

/* One response, arrays over its n response tokens. */
typedef struct tern_loss_seq {
    size_t n;
    const float *logp;     /* [n] current policy (required) */
    const float *logp_old; /* [n] behaviour policy (PPO, Kimi) */
    const float *logp_ref; /* [n] reference, NULL if there is none (then the KL must not be
                              a loss term: kl NONE, kl_in_loss 0 or kl_coef 0) */
    const float *entropy;  /* [n] or NULL (required when entropy_coef != 0) */
    double advantage;      /* A_i (PPO, Kimi) */
    float *dlogp;          /* out [n]: dL/dlogp_t */
    float *dentropy;       /* out [n] or NULL: dL/dH_t */
    /* [n] or NULL (every token counts): 1 where the model sampled the token,
     * 0 for context inside a trajectory (an environment's observation, a
     * tool's result, the template tokens between turns), which gets no
     * loss, zero gradients and counts nowhere: not in T, not in n_i, not in
     * any statistic (docs/agents.md, "Masks") */
    const unsigned char *mask;
} tern_loss_seq;

/* Batch statistics for the metrics (means over the batch's tokens unless said). */
typedef struct tern_loss_stats {
    double loss;       /* L */
    double pg_loss;    /* the policy part of L, aggregated the same way */
    double kl;         /* mean k(x) per token that has a logp_ref, whatever kl_coef and
                          kl_in_loss (0 without logp_ref or with TERN_KL_NONE) */
    double entropy;    /* mean H per token that has an entropy (0 without entropies) */
    double clip_frac;  /* PPO, GSPO: fraction of tokens whose clipped branch was taken
                          (GSPO: every token of a clipped response) */
    double ratio_mean; /* mean rho per token (GSPO: r_i for each token of i; 1 for SFT) */
    double mismatch_kl;    /* mean k3 KL(explorer || trainer) per token (0 for SFT) */
    double is_weight_mean; /* off-policy correction: mean weight w per token (1 without) */
    size_t tokens;     /* T */
} tern_loss_stats;

/* "ppo", "kimi", "gspo", "sft"; 0 if unknown. */
tern_loss_kind tern_loss_kind_parse(const char *name);
/* "token_mean", "seq_mean", "token_sum_norm"; 0 if unknown. */
tern_loss_agg tern_loss_agg_parse(const char *name);
/* "none", "tis", "decoupled"; -1 if unknown. */
int tern_off_policy_parse(const char *name);
/* "none", "k1", "k2", "k3"; -1 if unknown. */
int tern_kl_estimator_parse(const char *name);

/* k(x) for x = logp - logp_ref, and dk/dlogp. */
double tern_kl_value(tern_kl_estimator k, double logp, double logp_ref);
double tern_kl_grad(tern_kl_estimator k, double logp, double logp_ref);

/* Compute L, fill every seqs[i].dlogp (and dentropy when not NULL) and *st.
 * TERN_OK, or TERN_EINVAL with a message: no tokens at all, a missing array
 * the parameters need, a parameter out of range, a non-finite input. */
int tern_policy_loss(const tern_loss_params *p, tern_loss_seq *seqs, size_t n,
                     tern_loss_stats *st);

#endif
