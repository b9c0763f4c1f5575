/* gelu.c: GELU with the tanh approximation, GPT-2's "gelu_new" (and
 * torch's gelu(approximate="tanh")):
 *
 *   u = c (x + a x³),  c = sqrt(2/π),  a = 0.044715
 *   y = ½ x (1 + tanh u)
 *   dy/dx = ½ (1 + tanh u) + ½ x (1 − tanh² u) c (1 + 3 a x²)
 *
 * Elementwise, so the n elements are split in ranges over the pool.
 */
#include <math.h>

#include "layers/layers.h"

#define GELU_C 0.7978845608028654f /* sqrt(2/π) */
#define GELU_A 0.044715f

/* Below this many elements one thread does it all (see swiglu.c). */
#define GELU_MIN_PARALLEL (1 << 17)

typedef struct gelu_job {
    float *act, *dx;
    const float *x, *dact;
    size_t n;
} gelu_job;

/* Worker wk's elements [lo, hi), in blocks of 64 floats (whole cache lines). */
static void share(size_t n, int wk, int nw, size_t *lo, size_t *hi)
{
    int b0, b1;
    pool_share((int)((n + 63) / 64), wk, nw, &b0, &b1);
    *lo = (size_t)b0 * 64;
    *hi = (size_t)b1 * 64 < n ? (size_t)b1 * 64 : n;
}

static void forward_part(void *arg, int wk, int nw)
{
    const gelu_job *j = arg;
    size_t lo, hi;
    share(j->n, wk, nw, &lo, &hi);
    for (size_t i = lo; i < hi; i++) {
        float v = j->x[i];
        j->act[i] = 0.5f * v * (1.0f + tanhf(GELU_C * (v + GELU_A * v * v * v)));
    }
}

static void backward_part(void *arg, int wk, int nw)
{
    const gelu_job *j = arg;
    size_t lo, hi;
    share(j->n, wk, nw, &lo, &hi);
    for (size_t i = lo; i < hi; i++) {
        float v = j->x[i], t = tanhf(GELU_C * (v + GELU_A * v * v * v));
        float d = 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * GELU_C * (1.0f + 3.0f * GELU_A * v * v);
        j->dx[i] = j->dact[i] * d;
    }
}

void gelu_forward(pool *tp, float *act, const float *x, size_t n)
{
    gelu_job j = {.act = act, .x = x, .n = n};
    pool_run(n < GELU_MIN_PARALLEL ? NULL : tp, forward_part, &j);
}

void gelu_backward(pool *tp, float *dx, const float *dact, const float *x, size_t n)
{
    gelu_job j = {.dx = dx, .dact = dact, .x = x, .n = n};
    pool_run(n < GELU_MIN_PARALLEL ? NULL : tp, backward_part, &j);
}
