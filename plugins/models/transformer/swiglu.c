/* swiglu.c: the gated MLP activation, act = silu(g) · u with
 * silu(g) = g σ(g), σ(g) = 1 / (1 + e^−g).
 *
 *   d act / d u = silu(g)
 *   d act / d g = u · σ(g) (1 + g (1 − σ(g)))
 */
#include <math.h>

#include "layers.h"

void swiglu_forward(float *act, const float *gate, const float *up, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float g = gate[i];
        act[i] = g / (1.0f + expf(-g)) * up[i];
    }
}

void swiglu_backward(float *dgate, float *dup, const float *dact, const float *gate,
                     const float *up, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float g = gate[i], sg = 1.0f / (1.0f + expf(-g));
        dup[i] += dact[i] * g * sg;
        dgate[i] += dact[i] * up[i] * sg * (1.0f + g * (1.0f - sg));
    }
}
