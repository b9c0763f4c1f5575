/* adamw.c: AdamW (Loshchilov & Hutter), as torch.optim.AdamW computes it:
 *
 *   g ← g · min(1, clip / ‖g‖)                          (global-norm clipping)
 *   θ ← θ − lr · wd · θ                                  (decoupled decay, matrices only)
 *   m ← β1 m + (1 − β1) g,   v ← β2 v + (1 − β2) g²
 *   θ ← θ − lr · (m / (1 − β1^t)) / (sqrt(v / (1 − β2^t)) + eps)
 *
 * Both passes over the flat array (‖g‖, then the update) run on the pool,
 * each worker on a range of blocks of ADAMW_BLOCK floats. ‖g‖² is the sum of
 * the per-block sums taken in block order, so it does not depend on the
 * number of threads; the update is elementwise.
 */
#include "decoder/adamw.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int adamw_init(adamw *o, size_t n)
{
    memset(o, 0, sizeof *o);
    o->m = calloc(n, sizeof(float));
    o->v = calloc(n, sizeof(float));
    o->sumsq = calloc(ADAMW_BLOCKS(n) ? ADAMW_BLOCKS(n) : 1, sizeof(double));
    if (!o->m || !o->v || !o->sumsq) {
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
    free(o->sumsq);
    memset(o, 0, sizeof *o);
}

typedef struct adamw_job {
    adamw *o;
    const llama_config *c;
    float *params, *grads;
    float k;                     /* clipping factor (1: none) */
    float b1, b2, eps, lr, wd;   /* wd: lr · weight_decay */
    float bc1, bc2;              /* 1 − β^t */
    size_t frozen_from;          /* tensors from this offset on are not updated */
} adamw_job;

/* Worker wk's elements [lo, hi): whole blocks. */
static void share(size_t n, int wk, int nw, size_t *lo, size_t *hi)
{
    int b0, b1;
    pool_share((int)ADAMW_BLOCKS(n), wk, nw, &b0, &b1);
    *lo = (size_t)b0 * ADAMW_BLOCK;
    *hi = (size_t)b1 * ADAMW_BLOCK < n ? (size_t)b1 * ADAMW_BLOCK : n;
}

/* sumsq[b] = Σ g² over block b, for this worker's blocks */
static void sumsq_part(void *arg, int wk, int nw)
{
    const adamw_job *j = arg;
    size_t lo, hi;
    share(j->o->n, wk, nw, &lo, &hi);
    for (size_t b0 = lo; b0 < hi; b0 += ADAMW_BLOCK) {
        size_t b1 = b0 + ADAMW_BLOCK < hi ? b0 + ADAMW_BLOCK : hi;
        double s = 0;
        for (size_t i = b0; i < b1; i++)
            s += (double)j->grads[i] * j->grads[i];
        j->o->sumsq[b0 / ADAMW_BLOCK] = s;
    }
}

/* Clip and update the elements of this worker's range, tensor by tensor
 * (the decay depends on the tensor). */
static void update_part(void *arg, int wk, int nw)
{
    const adamw_job *j = arg;
    const float k = j->k, b1 = j->b1, b2 = j->b2, eps = j->eps, lr = j->lr, bc1 = j->bc1,
                bc2 = j->bc2;
    size_t lo, hi;
    share(j->o->n, wk, nw, &lo, &hi);
    llama_tensor_info t;
    for (size_t ti = 0; ti < llama_tensor_count(j->c); ti++) {
        llama_tensor_describe(j->c, ti, &t);
        size_t a = t.offset > lo ? t.offset : lo;
        size_t e = t.offset + t.numel < hi ? t.offset + t.numel : hi;
        if (a >= e || t.offset >= j->frozen_from)
            continue; /* a frozen vision tower stays as it is */
        const float decay = t.ndim >= 2 ? 1.0f - j->wd : 1.0f;
        float *p = j->params, *g = j->grads, *m = j->o->m, *v = j->o->v;
        for (size_t i = a; i < e; i++) {
            g[i] *= k;
            m[i] = b1 * m[i] + (1 - b1) * g[i];
            v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
            p[i] = p[i] * decay - lr * (m[i] / bc1) / (sqrtf(v[i] / bc2) + eps);
        }
    }
}

double adamw_step(adamw *o, pool *tp, const llama_config *c, float *params, float *grads,
                  const adamw_hparams *h)
{
    adamw_job j = {.o = o, .c = c, .params = params, .grads = grads, .k = 1.0f,
                   .frozen_from = h->frozen_from ? h->frozen_from : (size_t)-1};
    pool_run(tp, sumsq_part, &j);
    double ss = 0;
    for (size_t b = 0; b < ADAMW_BLOCKS(o->n); b++)
        ss += o->sumsq[b];
    double norm = sqrt(ss);
    if (h->grad_clip > 0 && norm > h->grad_clip)
        j.k = (float)(h->grad_clip / (norm + 1e-6));
    o->t++;
    j.b1 = (float)h->beta1, j.b2 = (float)h->beta2, j.eps = (float)h->eps;
    j.lr = (float)h->lr, j.wd = (float)h->lr * (float)h->weight_decay;
    j.bc1 = (float)(1.0 - pow(h->beta1, (double)o->t));
    j.bc2 = (float)(1.0 - pow(h->beta2, (double)o->t));
    pool_run(tp, update_part, &j);
    return norm;
}
