/* layernorm.c: LayerNorm as torch.nn.LayerNorm computes it (GPT-2's ln_1,
 * ln_2, ln_f): per row x of length D,
 *   μ = mean(x),  r = 1 / sqrt(mean((x − μ)²) + eps)  (biased variance)
 *   x̂ = (x − μ) r,  y = x̂ ⊙ w + b
 * Backward, with g = dy ⊙ w:
 *   dw += dy ⊙ x̂,  db += dy
 *   dx += r (g − mean(g) − x̂ · mean(g ⊙ x̂))
 *
 * On the pool as rmsnorm.c: rows for y and dx, columns (over every row, in
 * order) for dw and db, so the sums do not depend on the number of threads.
 */
#include <math.h>

#include "layers/layers.h"

/* Below this many elements (N · D) one thread does it all (see rmsnorm.c). */
#define NORM_MIN_PARALLEL (1 << 18)

typedef struct ln_job {
    float *out, *mean, *rstd, *din, *dw, *db;
    const float *in, *w, *b, *dout, *cmean, *crstd;
    int n, d;
    float eps;
} ln_job;

static void forward_part(void *arg, int wk, int nw)
{
    const ln_job *j = arg;
    const int d = j->d;
    const float *w = j->w, *b = j->b;
    int lo, hi;
    pool_share(j->n, wk, nw, &lo, &hi);
    for (int r = lo; r < hi; r++) {
        const float *x = j->in + (size_t)r * d;
        float *y = j->out + (size_t)r * d;
        double s = 0; /* double: long rows lose bits in float */
        for (int i = 0; i < d; i++)
            s += x[i];
        double mu = s / d, ss = 0;
        for (int i = 0; i < d; i++)
            ss += (x[i] - mu) * (x[i] - mu);
        float m = (float)mu, k = (float)(1.0 / sqrt(ss / d + j->eps));
        j->mean[r] = m;
        j->rstd[r] = k;
        for (int i = 0; i < d; i++)
            y[i] = (x[i] - m) * k * w[i] + b[i];
    }
}

void layernorm_forward(pool *tp, float *out, float *mean, float *rstd, const float *in,
                       const float *w, const float *b, int n, int d, float eps)
{
    ln_job j = {.out = out, .mean = mean, .rstd = rstd, .in = in, .w = w, .b = b, .n = n, .d = d,
                .eps = eps};
    pool_run((size_t)n * d < NORM_MIN_PARALLEL ? NULL : tp, forward_part, &j);
}

static void backward_part(void *arg, int wk, int nw)
{
    const ln_job *j = arg;
    const int d = j->d;
    const float *w = j->w;
    int lo, hi;
    /* dx: this worker's rows */
    pool_share(j->n, wk, nw, &lo, &hi);
    for (int r = lo; r < hi; r++) {
        const float *x = j->in + (size_t)r * d, *dy = j->dout + (size_t)r * d;
        float *dx = j->din + (size_t)r * d;
        const float m = j->cmean[r], k = j->crstd[r];
        double sg = 0, sgx = 0; /* Σ g and Σ g x̂ */
        for (int i = 0; i < d; i++) {
            float xh = (x[i] - m) * k, g = dy[i] * w[i];
            sg += g;
            sgx += (double)g * xh;
        }
        const float mg = (float)(sg / d), mgx = (float)(sgx / d);
        for (int i = 0; i < d; i++) {
            float xh = (x[i] - m) * k;
            dx[i] += k * (dy[i] * w[i] - mg - xh * mgx);
        }
    }
    if (!j->dw && !j->db)
        return;
    /* dw, db: this worker's columns [c0, c1) */
    int c0, c1;
    pool_share_columns(d, wk, nw, &c0, &c1);
    for (int r = 0; r < j->n; r++) {
        const float *x = j->in + (size_t)r * d, *dy = j->dout + (size_t)r * d;
        const float m = j->cmean[r], k = j->crstd[r];
        if (j->dw)
            for (int i = c0; i < c1; i++)
                j->dw[i] += dy[i] * ((x[i] - m) * k);
        if (j->db)
            for (int i = c0; i < c1; i++)
                j->db[i] += dy[i];
    }
}

void layernorm_backward(pool *tp, float *din, float *dw, float *db, const float *dout,
                        const float *in, const float *w, const float *mean, const float *rstd,
                        int n, int d)
{
    ln_job j = {.din = din, .dw = dw, .db = db, .dout = dout, .in = in, .w = w, .cmean = mean,
                .crstd = rstd, .n = n, .d = d};
    pool_run((size_t)n * d < NORM_MIN_PARALLEL ? NULL : tp, backward_part, &j);
}
