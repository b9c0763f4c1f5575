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
 *   SFT:            pg  = -logp   (cross-entropy on the given tokens)
 *
 *   KL to the reference, x = logp - logp_ref:
 *                   k1 = x,  k2 = x^2 / 2,  k3 = exp(-x) - 1 + x
 *   per-token loss  l = pg + [kl_in_loss] kl_coef * k(x) - entropy_coef * H
 *
 * Aggregation over the batch (N responses, T = sum n_i tokens):
 *   TOKEN_MEAN  L = sum_i sum_t l_it / T
 *   SEQ_MEAN    L = 1/N sum_i (1/n_i) sum_t l_it
 *               (responses with n_i == 0 add nothing and do not count in N)
 * Kimi's sequence term pg_i counts as one whole term of response i: it is
 * divided by T (TOKEN_MEAN) or by N (SEQ_MEAN).
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
    TERN_LOSS_SFT = 3
} tern_loss_kind;

typedef enum tern_loss_agg {
    TERN_AGG_TOKEN_MEAN = 1,
    TERN_AGG_SEQ_MEAN = 2
} tern_loss_agg;

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
} tern_loss_seq;

/* Batch statistics for the metrics (means over the batch's tokens unless said). */
typedef struct tern_loss_stats {
    double loss;       /* L */
    double pg_loss;    /* the policy part of L, aggregated the same way */
    double kl;         /* mean k(x) per token that has a logp_ref, whatever kl_coef and
                          kl_in_loss (0 without logp_ref or with TERN_KL_NONE) */
    double entropy;    /* mean H per token that has an entropy (0 without entropies) */
    double clip_frac;  /* PPO: fraction of tokens whose clipped branch was taken */
    double ratio_mean; /* mean rho per token (1 for SFT) */
    size_t tokens;     /* T */
} tern_loss_stats;

/* "ppo", "kimi", "sft"; 0 if unknown. */
tern_loss_kind tern_loss_kind_parse(const char *name);
/* "token_mean", "seq_mean"; 0 if unknown. */
tern_loss_agg tern_loss_agg_parse(const char *name);
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
