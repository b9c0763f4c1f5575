/* embedding.c: token embedding lookup, out[r] = E[tokens[r]], and GPT-2's
 * learned positions added to it, out[r] += P[pos[r]]; backward scatters the
 * rows back, dE[tokens[r]] += dout[r]. */
#include <string.h>

#include "layers/layers.h"

void embedding_forward(float *out, const int32_t *tokens, const float *e, int n, int d)
{
    for (int r = 0; r < n; r++)
        memcpy(out + (size_t)r * d, e + (size_t)tokens[r] * d, (size_t)d * sizeof *out);
}

void embedding_add_forward(float *out, const int32_t *ids, const float *e, int n, int d)
{
    for (int r = 0; r < n; r++) {
        float *y = out + (size_t)r * d;
        const float *row = e + (size_t)ids[r] * d;
        for (int j = 0; j < d; j++)
            y[j] += row[j];
    }
}

void embedding_backward(float *de, const int32_t *tokens, const float *dout, int n, int d)
{
    for (int r = 0; r < n; r++) {
        float *row = de + (size_t)tokens[r] * d;
        const float *g = dout + (size_t)r * d;
        for (int j = 0; j < d; j++)
            row[j] += g[j];
    }
}
