/* logprob.c: the model's output as the RL core sees it: per position the
 * log-prob of the next token and the entropy of the distribution, at a
 * temperature τ (z' = z / τ, passed as scale = 1 / τ).
 *
 * For logits z'[V] and target t:  log Z = log Σ_j e^{z'_j},  log p_j = z'_j − log Z
 *   logp = z'_t − log Z,   H = −Σ_j p_j log p_j = log Z − Σ_j p_j z'_j
 * Backward, for incoming dlogp and dH (then times scale, for z' = scale · z):
 *   ∂logp/∂z'_j = 1[j = t] − p_j
 *   ∂H/∂z'_j    = −p_j (log p_j + H)
 * Rows are independent, so they are split over the pool. exp here is libm's
 * double exp: these are the numbers the RL objective is made of.
 */
#include <math.h>

#include "layers/layers.h"

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

/* Below this many logits (N · V) one thread does it all: waking the team
 * costs about 50 us here, some 5000 of these double exps. */
#define LOGPROB_MIN_PARALLEL 16384

typedef struct logprob_job {
    float *logp, *ent, *dlogits;
    const float *logits, *scale, *dlogp, *dent;
    const int32_t *target;
    int n, v;
} logprob_job;

/* Rows are independent: each worker takes a range of them. */
static void forward_part(void *arg, int wk, int nw)
{
    const logprob_job *j = arg;
    const int v = j->v;
    int lo, hi;
    pool_share(j->n, wk, nw, &lo, &hi);
    for (int r = lo; r < hi; r++) {
        if (j->target[r] < 0) {
            j->logp[r] = 0;
            if (j->ent)
                j->ent[r] = 0;
            continue;
        }
        const float *z = j->logits + (size_t)r * v;
        float s = j->scale ? j->scale[r] : 1.0f;
        double lz = log_sum_exp(z, s, v);
        j->logp[r] = (float)(s * z[j->target[r]] - lz);
        if (j->ent)
            j->ent[r] = (float)entropy(z, s, lz, v);
    }
}

void logprob_forward(pool *tp, float *logp, float *ent, const float *logits, const float *scale,
                     const int32_t *target, int n, int v)
{
    logprob_job j = {.logp = logp, .ent = ent, .logits = logits, .scale = scale,
                     .target = target, .n = n, .v = v};
    pool_run((size_t)n * v < LOGPROB_MIN_PARALLEL ? NULL : tp, forward_part, &j);
}

static void backward_part(void *arg, int wk, int nw)
{
    const logprob_job *j = arg;
    const int v = j->v;
    int lo, hi;
    pool_share(j->n, wk, nw, &lo, &hi);
    for (int r = lo; r < hi; r++) {
        float *dz = j->dlogits + (size_t)r * v;
        const int32_t t = j->target[r];
        if (t < 0) {
            for (int i = 0; i < v; i++)
                dz[i] = 0;
            continue;
        }
        const float *z = j->logits + (size_t)r * v;
        float s = j->scale ? j->scale[r] : 1.0f;
        double lz = log_sum_exp(z, s, v);
        float de = j->dent ? j->dent[r] : 0.0f, dl = j->dlogp[r];
        double H = de != 0 ? entropy(z, s, lz, v) : 0;
        for (int i = 0; i < v; i++) {
            double lp = s * z[i] - lz, p = exp(lp);
            double g = -dl * p;
            if (de != 0)
                g += de * (-p * (lp + H));
            dz[i] = (float)(s * g);
        }
        dz[t] += s * dl;
    }
}

void logprob_backward(pool *tp, float *dlogits, const float *logits, const float *scale,
                      const int32_t *target, const float *dlogp, const float *dent, int n, int v)
{
    logprob_job j = {.dlogits = dlogits, .logits = logits, .scale = scale, .target = target,
                     .dlogp = dlogp, .dent = dent, .n = n, .v = v};
    pool_run((size_t)n * v < LOGPROB_MIN_PARALLEL ? NULL : tp, backward_part, &j);
}
