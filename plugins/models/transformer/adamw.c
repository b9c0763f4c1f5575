/* adamw.c: AdamW (Loshchilov & Hutter), as torch.optim.AdamW computes it:
 *
 *   g ← g · min(1, clip / ‖g‖)                          (global-norm clipping)
 *   θ ← θ − lr · wd · θ                                  (decoupled decay, matrices only)
 *   m ← β1 m + (1 − β1) g,   v ← β2 v + (1 − β2) g²
 *   θ ← θ − lr · (m / (1 − β1^t)) / (sqrt(v / (1 − β2^t)) + eps)
 */
#include "adamw.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int adamw_init(adamw *o, size_t n)
{
    memset(o, 0, sizeof *o);
    o->m = calloc(n, sizeof(float));
    o->v = calloc(n, sizeof(float));
    if (!o->m || !o->v) {
        adamw_free(o);
        return -1;
    }
    o->n = n;
    return 0;
}

void adamw_free(adamw *o)
{
    free(o->m);
    free(o->v);
    memset(o, 0, sizeof *o);
}

double grad_global_norm(const float *g, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (double)g[i] * g[i];
    return sqrt(s);
}

double adamw_step(adamw *o, const llama_config *c, float *params, float *grads,
                  const adamw_hparams *h)
{
    double norm = grad_global_norm(grads, o->n);
    if (h->grad_clip > 0 && norm > h->grad_clip) {
        float k = (float)(h->grad_clip / (norm + 1e-6));
        for (size_t i = 0; i < o->n; i++)
            grads[i] *= k;
    }
    o->t++;
    const float b1 = (float)h->beta1, b2 = (float)h->beta2, eps = (float)h->eps;
    const float lr = (float)h->lr;
    const float bc1 = (float)(1.0 - pow(h->beta1, (double)o->t));
    const float bc2 = (float)(1.0 - pow(h->beta2, (double)o->t));
    llama_tensor_info t;
    for (size_t ti = 0; ti < llama_tensor_count(c); ti++) {
        llama_tensor_describe(c, ti, &t);
        const float decay = t.ndim == 2 ? 1.0f - lr * (float)h->weight_decay : 1.0f;
        float *p = params + t.offset, *g = grads + t.offset;
        float *m = o->m + t.offset, *v = o->v + t.offset;
        for (size_t i = 0; i < t.numel; i++) {
            m[i] = b1 * m[i] + (1 - b1) * g[i];
            v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
            p[i] = p[i] * decay - lr * (m[i] / bc1) / (sqrtf(v[i] / bc2) + eps);
        }
    }
    return norm;
}
