/* rmsnorm.c: RMSNorm, y = x · r · w with r = 1 / sqrt(mean(x²) + eps).
 *
 * Backward, per row (x, dy of length D; g = dy ⊙ w):
 *   dw += dy ⊙ x · r
 *   dx += r · g − x · r³ · (g·x) / D
 * (the second term is the derivative of r through mean(x²)).
 */
#include <math.h>

#include "layers.h"

void rmsnorm_forward(float *out, float *rstd, const float *in, const float *w, int n, int d,
                     float eps)
{
    for (int r = 0; r < n; r++) {
        const float *x = in + (size_t)r * d;
        float *y = out + (size_t)r * d;
        double ss = 0; /* double: a long row of squares loses bits in float */
        for (int j = 0; j < d; j++)
            ss += (double)x[j] * x[j];
        float s = (float)(1.0 / sqrt(ss / d + eps));
        rstd[r] = s;
        for (int j = 0; j < d; j++)
            y[j] = x[j] * s * w[j];
    }
}

void rmsnorm_backward(float *din, float *dw, const float *dout, const float *in, const float *w,
                      const float *rstd, int n, int d)
{
    for (int r = 0; r < n; r++) {
        const float *x = in + (size_t)r * d, *dy = dout + (size_t)r * d;
        float *dx = din + (size_t)r * d;
        float s = rstd[r];
        double gx = 0; /* sum_j dy_j w_j x_j */
        for (int j = 0; j < d; j++) {
            gx += (double)dy[j] * w[j] * x[j];
            if (dw)
                dw[j] += dy[j] * x[j] * s;
        }
        float k = (float)(gx / d) * s * s * s;
        for (int j = 0; j < d; j++)
            dx[j] += s * dy[j] * w[j] - k * x[j];
    }
}
