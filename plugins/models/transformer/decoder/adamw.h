/* adamw.h: AdamW with global-norm gradient clipping over the flat parameter
 * array; weight decay applies to matrices only (not to norm weights). */
#ifndef TERN_ADAMW_H
#define TERN_ADAMW_H

#include <stddef.h>
#include <stdint.h>

#include "decoder/llama.h"
#include "layers/pool.h"

typedef struct adamw {
    float *m, *v;  /* first and second moments, [n] each */
    size_t n;
    int64_t t;     /* steps taken */
    double *sumsq; /* [ADAMW_BLOCKS(n)]: sum of g² of each block of the norm */
} adamw;

/* The gradient norm sums g² in blocks of this many floats, then the block
 * sums in order: the same value whatever the number of threads. */
#define ADAMW_BLOCK 16384
#define ADAMW_BLOCKS(n) (((n) + ADAMW_BLOCK - 1) / ADAMW_BLOCK)

/* 0, or -1 when out of memory. */
int adamw_init(adamw *o, size_t n);
void adamw_free(adamw *o);

typedef struct adamw_hparams {
    double lr, beta1, beta2, eps, weight_decay;
    double grad_clip; /* clip the global norm to this; <= 0: no clipping */
    /* 0: every tensor; else the tensors from this offset (in floats) on
     * stay as they are (a frozen vision tower: llama_tower_offset) */
    size_t frozen_from;
} adamw_hparams;

/* One step on the threads of tp (NULL: the calling thread): clip g (in
 * place, by its global norm sqrt(sum g²), accumulated in double), update the
 * moments and the parameters of every tensor of `c`'s layout, t += 1.
 * Returns the norm before clipping. */
double adamw_step(adamw *o, pool *tp, const llama_config *c, float *params, float *grads,
                  const adamw_hparams *h);

#endif
