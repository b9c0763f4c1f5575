/* bias.c: the bias of a linear layer, y[r] += b; its gradient is the sum
 * of the output gradient over rows, db += Σ_r dy[r]. */
#include "layers/layers.h"

void bias_forward(float *out, const float *b, int n, int o)
{
    for (int r = 0; r < n; r++) {
        float *y = out + (size_t)r * o;
        for (int j = 0; j < o; j++)
            y[j] += b[j];
    }
}

void bias_backward(float *db, const float *dout, int n, int o)
{
    for (int r = 0; r < n; r++) {
        const float *g = dout + (size_t)r * o;
        for (int j = 0; j < o; j++)
            db[j] += g[j];
    }
}
