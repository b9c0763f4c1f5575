/* layernorm.c: LayerNorm as torch.nn.LayerNorm computes it (GPT-2's ln_1,
 * ln_2, ln_f): per row x of length D,
 *   μ = mean(x),  r = 1 / sqrt(mean((x − μ)²) + eps)  (biased variance)
 *   x̂ = (x − μ) r,  y = x̂ ⊙ w + b
 * Backward, with g = dy ⊙ w:
 *   dw += dy ⊙ x̂,  db += dy
 *   dx += r (g − mean(g) − x̂ · mean(g ⊙ x̂))
 */
#include <math.h>

#include "layers.h"

void layernorm_forward(float *out, float *mean, float *rstd, const float *in, const float *w,
                       const float *b, int n, int d, float eps)
{
    for (int r = 0; r < n; r++) {
        const float *x = in + (size_t)r * d;
        float *y = out + (size_t)r * d;
        double s = 0; /* double: long rows lose bits in float */
        for (int j = 0; j < d; j++)
            s += x[j];
        double mu = s / d, ss = 0;
        for (int j = 0; j < d; j++)
            ss += (x[j] - mu) * (x[j] - mu);
        float m = (float)mu, k = (float)(1.0 / sqrt(ss / d + eps));
        mean[r] = m;
        rstd[r] = k;
        for (int j = 0; j < d; j++)
            y[j] = (x[j] - m) * k * w[j] + b[j];
    }
}

void layernorm_backward(float *din, float *dw, float *db, const float *dout, const float *in,
                        const float *w, const float *mean, const float *rstd, int n, int d)
{
    for (int r = 0; r < n; r++) {
        const float *x = in + (size_t)r * d, *dy = dout + (size_t)r * d;
        float *dx = din + (size_t)r * d;
        const float m = mean[r], k = rstd[r];
        double sg = 0, sgx = 0; /* Σ g and Σ g x̂ */
        for (int j = 0; j < d; j++) {
            float xh = (x[j] - m) * k, g = dy[j] * w[j];
            sg += g;
            sgx += (double)g * xh;
            if (dw)
                dw[j] += dy[j] * xh;
            if (db)
                db[j] += dy[j];
        }
        const float mg = (float)(sg / d), mgx = (float)(sgx / d);
        for (int j = 0; j < d; j++) {
            float xh = (x[j] - m) * k;
            dx[j] += k * (dy[j] * w[j] - mg - xh * mgx);
        }
    }
}
