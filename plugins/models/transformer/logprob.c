/* logprob.c: the model's output as the RL core sees it: per position the
 * log-prob of the next token and the entropy of the distribution, at a
 * temperature τ (z' = z / τ, passed as scale = 1 / τ).
 *
 * For logits z'[V] and target t:  log Z = log Σ_j e^{z'_j},  log p_j = z'_j − log Z
 *   logp = z'_t − log Z,   H = −Σ_j p_j log p_j = log Z − Σ_j p_j z'_j
 * Backward, for incoming dlogp and dH (then times scale, for z' = scale · z):
 *   ∂logp/∂z'_j = 1[j = t] − p_j
 *   ∂H/∂z'_j    = −p_j (log p_j + H)
 */
#include <math.h>

#include "layers.h"

/* log Σ e^{s z_j}, stable */
static double log_sum_exp(const float *z, float s, int v)
{
    float m = s * z[0];
    for (int j = 1; j < v; j++)
        m = s * z[j] > m ? s * z[j] : m;
    double sum = 0;
    for (int j = 0; j < v; j++)
        sum += exp((double)(s * z[j] - m));
    return m + log(sum);
}

/* H = log Z − Σ p_j z'_j */
static double entropy(const float *z, float s, double lz, int v)
{
    double pz = 0;
    for (int j = 0; j < v; j++)
        pz += exp(s * z[j] - lz) * (s * z[j]);
    return lz - pz;
}

void logprob_forward(float *logp, float *ent, const float *logits, const float *scale,
                     const int32_t *target, int n, int v)
{
    for (int r = 0; r < n; r++) {
        if (target[r] < 0) {
            logp[r] = 0;
            if (ent)
                ent[r] = 0;
            continue;
        }
        const float *z = logits + (size_t)r * v;
        float s = scale ? scale[r] : 1.0f;
        double lz = log_sum_exp(z, s, v);
        logp[r] = (float)(s * z[target[r]] - lz);
        if (ent)
            ent[r] = (float)entropy(z, s, lz, v);
    }
}

void logprob_backward(float *dlogits, const float *logits, const float *scale,
                      const int32_t *target, const float *dlogp, const float *dent, int n, int v)
{
    for (int r = 0; r < n; r++) {
        float *dz = dlogits + (size_t)r * v;
        if (target[r] < 0) {
            for (int j = 0; j < v; j++)
                dz[j] = 0;
            continue;
        }
        const float *z = logits + (size_t)r * v;
        float s = scale ? scale[r] : 1.0f;
        double lz = log_sum_exp(z, s, v);
        float de = dent ? dent[r] : 0.0f;
        double H = de != 0 ? entropy(z, s, lz, v) : 0;
        for (int j = 0; j < v; j++) {
            double lp = s * z[j] - lz, p = exp(lp);
            double g = -dlogp[r] * p;
            if (de != 0)
                g += de * (-p * (lp + H));
            dz[j] = (float)(s * g);
        }
        dz[target[r]] += s * dlogp[r];
    }
}
