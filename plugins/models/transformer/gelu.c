/* gelu.c: GELU with the tanh approximation, GPT-2's "gelu_new" (and
 * torch's gelu(approximate="tanh")):
 *
 *   u = c (x + a x³),  c = sqrt(2/π),  a = 0.044715
 *   y = ½ x (1 + tanh u)
 *   dy/dx = ½ (1 + tanh u) + ½ x (1 − tanh² u) c (1 + 3 a x²)
 */
#include <math.h>

#include "layers.h"

#define GELU_C 0.7978845608028654f /* sqrt(2/π) */
#define GELU_A 0.044715f

void gelu_forward(float *act, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        act[i] = 0.5f * v * (1.0f + tanhf(GELU_C * (v + GELU_A * v * v * v)));
    }
}

void gelu_backward(float *dx, const float *dact, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float v = x[i], t = tanhf(GELU_C * (v + GELU_A * v * v * v));
        float d = 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * GELU_C * (1.0f + 3.0f * GELU_A * v * v);
        dx[i] += dact[i] * d;
    }
}
