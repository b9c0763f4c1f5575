/* policy_loss.c: PPO / Kimi / GSPO / SFT losses with KL and entropy terms, and their
 * gradients per response token (see policy_loss.h for the maths).
 *
 * One validation pass (nothing is written on failure), then one pass that
 * computes L and the gradients. Inputs are float, every sum is double. No
 * allocation. */
#include "algo/policy_loss.h"

#include <math.h>
#include <string.h>

#include "base/errmsg.h"
#include "tern/abi.h"

#define LOG_RATIO_MAX 20.0 /* log-ratios are clamped to [-20, 20] before exp() */

tern_loss_kind tern_loss_kind_parse(const char *name)
{
    if (name == NULL)
        return 0;
    if (strcmp(name, "ppo") == 0)
        return TERN_LOSS_PPO;
    if (strcmp(name, "kimi") == 0)
        return TERN_LOSS_KIMI;
    if (strcmp(name, "sft") == 0)
        return TERN_LOSS_SFT;
    if (strcmp(name, "gspo") == 0)
        return TERN_LOSS_GSPO;
    return 0;
}

tern_loss_agg tern_loss_agg_parse(const char *name)
{
    if (name == NULL)
        return 0;
    if (strcmp(name, "token_mean") == 0)
        return TERN_AGG_TOKEN_MEAN;
    if (strcmp(name, "seq_mean") == 0)
        return TERN_AGG_SEQ_MEAN;
    if (strcmp(name, "token_sum_norm") == 0)
        return TERN_AGG_TOKEN_SUM_NORM;
    return 0;
}

int tern_off_policy_parse(const char *name)
{
    if (name == NULL)
        return -1;
    if (strcmp(name, "none") == 0)
        return TERN_OFF_POLICY_NONE;
    if (strcmp(name, "tis") == 0)
        return TERN_OFF_POLICY_TIS;
    if (strcmp(name, "decoupled") == 0)
        return TERN_OFF_POLICY_DECOUPLED;
    return -1;
}

int tern_kl_estimator_parse(const char *name)
{
    if (name == NULL)
        return -1;
    if (strcmp(name, "none") == 0)
        return TERN_KL_NONE;
    if (strcmp(name, "k1") == 0)
        return TERN_KL_K1;
    if (strcmp(name, "k2") == 0)
        return TERN_KL_K2;
    if (strcmp(name, "k3") == 0)
        return TERN_KL_K3;
    return -1;
}

static double clamp(double x, double lo, double hi)
{
    return x < lo ? lo : (x > hi ? hi : x);
}

/* exp(clamp(x, -20, 20)) and its derivative wrt x (0 outside the clamp) */
static double exp_clamped(double x, double *dx)
{
    double e = exp(clamp(x, -LOG_RATIO_MAX, LOG_RATIO_MAX));
    *dx = (x >= -LOG_RATIO_MAX && x <= LOG_RATIO_MAX) ? e : 0.0;
    return e;
}

/* x = logp - logp_ref
 *   k1 = x            dk1/dlogp = 1
 *   k2 = x^2 / 2      dk2/dlogp = x
 *   k3 = e^-c - 1 + c with c = clamp(x, -20, 20):
 *                     dk3/dlogp = 1 - e^-x inside the clamp, 0 beyond it.
 * The whole of k3 is clamped, not only exp's argument: with only e^-x
 * clamped, the gradient past x = -20 jumped from about -4.8e8 to +1 and
 * pushed the policy further from the reference. */
double tern_kl_value(tern_kl_estimator k, double logp, double logp_ref)
{
    double x = logp - logp_ref, d;
    switch (k) {
    case TERN_KL_K1: return x;
    case TERN_KL_K2: return 0.5 * x * x;
    case TERN_KL_K3: return exp_clamped(-x, &d) - 1.0 + clamp(x, -LOG_RATIO_MAX, LOG_RATIO_MAX);
    default: return 0.0;
    }
}

double tern_kl_grad(tern_kl_estimator k, double logp, double logp_ref)
{
    double x = logp - logp_ref, d;
    switch (k) {
    case TERN_KL_K1: return 1.0;
    case TERN_KL_K2: return x;
    case TERN_KL_K3: /* d/dlogp e^-x = -e^-x; nothing moves beyond the clamp */
        exp_clamped(-x, &d);
        return x >= -LOG_RATIO_MAX && x <= LOG_RATIO_MAX ? 1.0 - d : 0.0;
    default: return 0.0;
    }
}

/* PPO per token, lr = logp - logp_old:
 *   rho = exp(clamp(lr)),  u = -A rho,  c = -A clip(rho, 1 - clip_low, 1 + clip_high)
 *   pg = max(u, c): du/dlogp = -A rho (ties take u), dc/dlogp = 0 (rho is outside the range)
 *   dual clip (c > 1, A < 0): pg = min(pg, -dual A), gradient 0 when it bounds */
static double ppo_token(const tern_loss_params *p, double lr, double A, double *dpg,
                        double *rho_out, int *clipped)
{
    double drho;
    double rho = exp_clamped(lr, &drho);
    double u = -A * rho;
    double c = -A * clamp(rho, 1.0 - p->clip_low, 1.0 + p->clip_high);
    double pg = u;
    *dpg = -A * drho;
    *clipped = c > u;
    if (*clipped) {
        pg = c;
        *dpg = 0.0;
    }
    if (p->dual_clip > 1.0 && A < 0.0 && pg > -p->dual_clip * A) {
        pg = -p->dual_clip * A;
        *dpg = 0.0;
    }
    *rho_out = rho;
    return pg;
}

/* Token t of s is the model's (it counts in the loss), not context. */
static int counts(const tern_loss_seq *s, size_t t) { return !s->mask || s->mask[t]; }

/* n_i: the tokens of s that count. */
static size_t model_tokens(const tern_loss_seq *s)
{
    if (!s->mask)
        return s->n;
    size_t k = 0;
    for (size_t t = 0; t < s->n; t++)
        k += s->mask[t] != 0;
    return k;
}

/* GSPO per response, m = (1/n) sum_t (logp - logp_old):
 *   r = exp(clamp(m)),  u = -A r,  c = -A clip(r, 1 - clip_low, 1 + clip_high)
 *   pg = max(u, c): d pg/d logp_t = -A (dr/dm) / n on u (ties take u), 0 on c */
static double gspo_seq(const tern_loss_params *p, const tern_loss_seq *s, double A, double *dpg_t,
                       double *r_out, int *clipped)
{
    double m = 0.0;
    size_t n_i = model_tokens(s);
    for (size_t t = 0; t < s->n; t++)
        if (counts(s, t))
            m += (double)s->logp[t] - (double)s->logp_old[t];
    m /= (double)n_i;
    double dr;
    double r = exp_clamped(m, &dr);
    double u = -A * r;
    double c = -A * clamp(r, 1.0 - p->clip_low, 1.0 + p->clip_high);
    *clipped = c > u;
    *dpg_t = *clipped ? 0.0 : -A * dr / (double)n_i;
    *r_out = r;
    return *clipped ? c : u;
}

/* Off-policy PPO per token, lr = logp - logp_old: w = exp(clamp(lr)), capped
 * for TIS, a constant; pg = -A w, d pg / d logp = -A w (the proximal ratio is
 * 1 at the one step, see policy_loss.h) */
static double off_policy_token(const tern_loss_params *p, double lr, double A, double *dpg,
                               double *w_out)
{
    double dw;
    double w = exp_clamped(lr, &dw);
    if (p->off_policy == TERN_OFF_POLICY_TIS && w > p->tis_cap)
        w = p->tis_cap;
    *w_out = w;
    *dpg = -A * w;
    return -A * w;
}

static int kl_in_loss(const tern_loss_params *p)
{
    return p->kl != TERN_KL_NONE && p->kl_in_loss && p->kl_coef != 0.0;
}

/* first non-finite value of x[0..n), or -1 */
static long first_nonfinite(const float *x, size_t n)
{
    for (size_t t = 0; t < n; t++)
        if (!isfinite(x[t]))
            return (long)t;
    return -1;
}

static int check_array(const float *x, size_t n, size_t i, const char *what)
{
    long t = first_nonfinite(x, n);
    if (t >= 0)
        return tern_errorf(TERN_EINVAL,
                           "response %zu, token %ld: %s is %g, not a finite number: check the "
                           "model's log-probs (a NaN usually means diverged weights)",
                           i, t, what, (double)x[t]);
    return TERN_OK;
}

static int check_params(const tern_loss_params *p)
{
    if (p->kind != TERN_LOSS_PPO && p->kind != TERN_LOSS_KIMI && p->kind != TERN_LOSS_SFT &&
        p->kind != TERN_LOSS_GSPO)
        return tern_errorf(TERN_EINVAL, "unknown loss %d: use ppo, kimi, gspo or sft",
                           (int)p->kind);
    if (p->agg != TERN_AGG_TOKEN_MEAN && p->agg != TERN_AGG_SEQ_MEAN &&
        p->agg != TERN_AGG_TOKEN_SUM_NORM)
        return tern_errorf(TERN_EINVAL, "unknown loss aggregation %d: use token_mean, seq_mean "
                           "or token_sum_norm", (int)p->agg);
    if (p->agg == TERN_AGG_TOKEN_SUM_NORM && !(p->norm_len >= 1.0 && isfinite(p->norm_len)))
        return tern_errorf(TERN_EINVAL, "token_sum_norm needs the constant response length "
                           "L_max >= 1 (got %g): the explorer's max_tokens", p->norm_len);
    if ((int)p->kl < TERN_KL_NONE || (int)p->kl > TERN_KL_K3)
        return tern_errorf(TERN_EINVAL, "unknown KL estimator %d: use none, k1, k2 or k3",
                           (int)p->kl);
    if (p->kind == TERN_LOSS_PPO || p->kind == TERN_LOSS_GSPO) {
        if (!(p->clip_low >= 0.0 && p->clip_low < 1.0))
            return tern_errorf(TERN_EINVAL,
                               "algorithm.clip_low must be in [0, 1) (got %g): the ratio is kept "
                               "in [1 - clip_low, 1 + clip_high]; 0.2 is usual",
                               p->clip_low);
        if (!(p->clip_high >= 0.0 && isfinite(p->clip_high)))
            return tern_errorf(TERN_EINVAL,
                               "algorithm.clip_high must be a finite number >= 0 (got %g): "
                               "0.2 is usual, 0.28 for clip-higher",
                               p->clip_high);
        if (!(p->dual_clip == 0.0 || (p->dual_clip > 1.0 && isfinite(p->dual_clip))))
            return tern_errorf(TERN_EINVAL,
                               "algorithm.dual_clip must be 0 (off) or a number > 1 (got %g): "
                               "3 is usual",
                               p->dual_clip);
    }
    if ((int)p->off_policy < TERN_OFF_POLICY_NONE || (int)p->off_policy > TERN_OFF_POLICY_DECOUPLED)
        return tern_errorf(TERN_EINVAL, "unknown off-policy correction %d: use none, tis or "
                           "decoupled", (int)p->off_policy);
    if (p->off_policy != TERN_OFF_POLICY_NONE && p->kind != TERN_LOSS_PPO)
        return tern_errorf(TERN_EINVAL, "algorithm.off_policy corrects the ppo loss only: set "
                           "loss = \"ppo\", or off_policy = \"none\"");
    if (p->off_policy == TERN_OFF_POLICY_TIS && !(p->tis_cap >= 1.0 && isfinite(p->tis_cap)))
        return tern_errorf(TERN_EINVAL, "algorithm.tis_cap must be a finite number >= 1 (got %g): "
                           "2 is usual", p->tis_cap);
    if (p->kind == TERN_LOSS_KIMI && !(p->kimi_tau >= 0.0 && isfinite(p->kimi_tau)))
        return tern_errorf(TERN_EINVAL,
                           "algorithm.kimi_tau must be a finite number >= 0 (got %g)",
                           p->kimi_tau);
    if (!(p->kl_coef >= 0.0 && isfinite(p->kl_coef)))
        return tern_errorf(TERN_EINVAL,
                           "algorithm.kl.coef must be a finite number >= 0 (got %g); 0 turns "
                           "the KL term off",
                           p->kl_coef);
    if (!isfinite(p->entropy_coef))
        return tern_errorf(TERN_EINVAL,
                           "algorithm.entropy_coef must be a finite number (got %g); 0 turns "
                           "the entropy bonus off",
                           p->entropy_coef);
    return TERN_OK;
}

static int check_seq(const tern_loss_params *p, const tern_loss_seq *s, size_t i)
{
    static const char *const loss_name[] = {"", "PPO", "Kimi", "SFT", "GSPO"};
    if (s->n == 0)
        return TERN_OK;
    if (s->logp == NULL || s->dlogp == NULL)
        return tern_errorf(TERN_EINVAL,
                           "response %zu has %zu tokens but no %s array: every response with "
                           "tokens needs logp (input) and dlogp (output)",
                           i, s->n, s->logp == NULL ? "logp" : "dlogp");
    if (p->kind != TERN_LOSS_SFT && s->logp_old == NULL)
        return tern_errorf(TERN_EINVAL,
                           "the %s loss needs logp_old (the behaviour policy's log-probs) but "
                           "response %zu has none: have the explorer return log-probs with its "
                           "responses, or use algorithm.loss = \"sft\"",
                           loss_name[p->kind], i);
    if (kl_in_loss(p) && s->logp_ref == NULL)
        return tern_errorf(TERN_EINVAL,
                           "a KL loss term (algorithm.kl.coef = %g) needs reference log-probs "
                           "but response %zu has none: configure a reference model, or set "
                           "algorithm.kl.coef = 0 or algorithm.kl.estimator = \"none\"",
                           p->kl_coef, i);
    if (p->entropy_coef != 0.0 && s->entropy == NULL)
        return tern_errorf(TERN_EINVAL,
                           "algorithm.entropy_coef = %g needs per-token entropies but response "
                           "%zu has none: have the model return entropies, or set "
                           "algorithm.entropy_coef = 0",
                           p->entropy_coef, i);
    if (p->kind != TERN_LOSS_SFT && !isfinite(s->advantage))
        return tern_errorf(TERN_EINVAL,
                           "response %zu: advantage is %g, not a finite number: check the "
                           "rewards",
                           i, s->advantage);
    int rc = check_array(s->logp, s->n, i, "logp");
    if (rc == TERN_OK && p->kind != TERN_LOSS_SFT)
        rc = check_array(s->logp_old, s->n, i, "logp_old");
    if (rc == TERN_OK && s->logp_ref != NULL && p->kl != TERN_KL_NONE)
        rc = check_array(s->logp_ref, s->n, i, "logp_ref");
    if (rc == TERN_OK && s->entropy != NULL)
        rc = check_array(s->entropy, s->n, i, "entropy");
    return rc;
}

int tern_policy_loss(const tern_loss_params *p, tern_loss_seq *seqs, size_t n,
                     tern_loss_stats *st)
{
    if (p == NULL || (seqs == NULL && n > 0))
        return tern_errorf(TERN_EINVAL, "policy loss: params and seqs must not be NULL");
    int rc = check_params(p);
    if (rc != TERN_OK)
        return rc;
    size_t T = 0, N = 0; /* the model's tokens, responses with any */
    for (size_t i = 0; i < n; i++) {
        if ((rc = check_seq(p, &seqs[i], i)) != TERN_OK)
            return rc;
        size_t n_i = model_tokens(&seqs[i]);
        T += n_i;
        N += n_i > 0;
    }
    if (T == 0)
        return tern_errorf(TERN_EINVAL,
                           "the batch has no response tokens (%zu responses, all empty or only "
                           "context): there is nothing to train on; check that generation "
                           "produced tokens",
                           n);

    int kl_loss = kl_in_loss(p);
    double beta = p->kl_coef, ent = p->entropy_coef;
    double L = 0.0, L_pg = 0.0, kl_sum = 0.0, h_sum = 0.0, rho_sum = 0.0, mm_sum = 0.0,
           w_sum = 0.0;
    size_t kl_tokens = 0, h_tokens = 0, clipped_tokens = 0;
    for (size_t i = 0; i < n; i++) {
        tern_loss_seq *s = &seqs[i];
        size_t n_i = model_tokens(s);
        if (n_i == 0) { /* nothing of it counts: no gradient anywhere */
            for (size_t t = 0; t < s->n; t++) {
                s->dlogp[t] = 0.0f;
                if (s->dentropy != NULL)
                    s->dentropy[t] = 0.0f;
            }
            continue;
        }
        double A = s->advantage;
        /* w: weight of one token's l_it in L; w_seq: weight of a whole-response term */
        double w_seq = p->agg == TERN_AGG_TOKEN_MEAN ? 1.0 / (double)T
                       : p->agg == TERN_AGG_SEQ_MEAN ? 1.0 / (double)N
                                                     : 1.0 / ((double)N * p->norm_len);
        double w = p->agg == TERN_AGG_SEQ_MEAN ? w_seq / (double)n_i : w_seq;
        int with_kl = s->logp_ref != NULL && p->kl != TERN_KL_NONE;

        /* Kimi: s_i = sum_t (logp - logp_old) (unclamped), pg_i = -A sum_t logp + tau/2 s_i^2,
         * d pg_i / d logp_t = -A + tau s_i, the same for every token of the response */
        double seq_grad = 0.0; /* a sequence term's d/dlogp_t (Kimi, GSPO), weighted */
        if (p->kind == TERN_LOSS_KIMI) {
            double s_i = 0.0, sum_logp = 0.0;
            for (size_t t = 0; t < s->n; t++)
                if (counts(s, t)) {
                    s_i += (double)s->logp[t] - (double)s->logp_old[t];
                    sum_logp += s->logp[t];
                }
            double pg_i = -A * sum_logp + 0.5 * p->kimi_tau * s_i * s_i;
            L_pg += w_seq * pg_i;
            L += w_seq * pg_i;
            seq_grad = w_seq * (-A + p->kimi_tau * s_i);
        }
        /* GSPO: one clipped sequence ratio; its gradient is the same for every token */
        double gspo_r = 1.0;
        int gspo_clipped = 0;
        if (p->kind == TERN_LOSS_GSPO) {
            double dpg_t;
            double pg_i = gspo_seq(p, s, A, &dpg_t, &gspo_r, &gspo_clipped);
            L_pg += w_seq * pg_i;
            L += w_seq * pg_i;
            seq_grad = w_seq * dpg_t;
        }

        for (size_t t = 0; t < s->n; t++) {
            if (!counts(s, t)) { /* context: no loss, no gradient */
                s->dlogp[t] = 0.0f;
                if (s->dentropy != NULL)
                    s->dentropy[t] = 0.0f;
                continue;
            }
            double logp = s->logp[t];
            double l = 0.0, g = 0.0; /* l_it without the Kimi sequence term; dl/dlogp */
            if (p->kind != TERN_LOSS_SFT) { /* the trainer-vs-explorer mismatch, k3 */
                double lr = logp - (double)s->logp_old[t], d;
                mm_sum += exp_clamped(lr, &d) - 1.0 - clamp(lr, -LOG_RATIO_MAX, LOG_RATIO_MAX);
            }
            if (p->kind == TERN_LOSS_PPO && p->off_policy != TERN_OFF_POLICY_NONE) {
                double dpg, wt;
                double pg = off_policy_token(p, logp - (double)s->logp_old[t], A, &dpg, &wt);
                l += pg;
                g += dpg;
                L_pg += w * pg;
                rho_sum += 1.0; /* the proximal ratio */
                w_sum += wt;
            } else if (p->kind == TERN_LOSS_PPO) {
                double dpg, rho;
                int clipped;
                double pg = ppo_token(p, logp - (double)s->logp_old[t], A, &dpg, &rho, &clipped);
                l += pg;
                g += dpg;
                L_pg += w * pg;
                rho_sum += rho;
                clipped_tokens += (size_t)clipped;
            } else if (p->kind == TERN_LOSS_KIMI) {
                double drho;
                rho_sum += exp_clamped(logp - (double)s->logp_old[t], &drho);
            } else if (p->kind == TERN_LOSS_GSPO) {
                rho_sum += gspo_r;
                clipped_tokens += (size_t)gspo_clipped;
            } else { /* SFT: pg = -logp */
                l += -logp;
                g += -1.0;
                L_pg += w * -logp;
                rho_sum += 1.0;
            }
            if (with_kl) {
                double k = tern_kl_value(p->kl, logp, s->logp_ref[t]);
                kl_sum += k;
                kl_tokens++;
                if (kl_loss) { /* + beta k(x) */
                    l += beta * k;
                    g += beta * tern_kl_grad(p->kl, logp, s->logp_ref[t]);
                }
            }
            if (s->entropy != NULL) { /* - entropy_coef H */
                h_sum += s->entropy[t];
                h_tokens++;
                l -= ent * (double)s->entropy[t];
            }
            L += w * l;
            s->dlogp[t] = (float)(w * g + seq_grad);
            if (s->dentropy != NULL)
                s->dentropy[t] = ent != 0.0 ? (float)(-ent * w) : 0.0f;
        }
    }

    if (st != NULL) {
        memset(st, 0, sizeof *st);
        st->loss = L;
        st->pg_loss = L_pg;
        st->kl = kl_tokens ? kl_sum / (double)kl_tokens : 0.0;
        st->entropy = h_tokens ? h_sum / (double)h_tokens : 0.0;
        st->clip_frac = (double)clipped_tokens / (double)T;
        st->ratio_mean = rho_sum / (double)T;
        st->mismatch_kl = mm_sum / (double)T;
        st->is_weight_mean = p->off_policy != TERN_OFF_POLICY_NONE ? w_sum / (double)T : 1.0;
        st->tokens = T;
    }
    return TERN_OK;
}
