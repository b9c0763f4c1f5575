/* adamw.h: AdamW with global-norm gradient clipping over the flat parameter
 * array; weight decay applies to matrices only (not to norm weights). */
#ifndef TERN_ADAMW_H
#define TERN_ADAMW_H

#include <stddef.h>
#include <stdint.h>

#include "llama.h"

typedef struct adamw {
    float *m, *v;  /* first and second moments, [n] each */
    size_t n;
    int64_t t;     /* steps taken */
} adamw;

int adamw_init(adamw *o, size_t n);
void adamw_free(adamw *o);

typedef struct adamw_hparams {
    double lr, beta1, beta2, eps, weight_decay;
    double grad_clip; /* clip the global norm to this; <= 0: no clipping */
} adamw_hparams;

/* sqrt(sum g^2), accumulated in double. */
double grad_global_norm(const float *g, size_t n);
/* One step: clip g (in place, by global norm), update the moments and the
 * parameters of every tensor of `c`'s layout, t += 1. Returns the norm
 * before clipping. */
double adamw_step(adamw *o, const llama_config *c, float *params, float *grads,
                  const adamw_hparams *h);

#endif
