/* swiglu.c: the gated MLP activation, act = silu(g) · u with
 * silu(g) = g σ(g), σ(g) = 1 / (1 + e^−g).
 *
 *   d act / d u = silu(g)
 *   d act / d g = u · σ(g) (1 + g (1 − σ(g)))
 *
 * Elementwise, so the n elements are split in ranges over the pool. On CPUs
 * with AVX2 + FMA, 8 elements at a time with fastexp.h's exp (a partial
 * last vector is masked, so every element takes the same path whatever the
 * split, and the results do not depend on the number of threads); elsewhere
 * the plain loops with expf.
 */
#include <math.h>

#include "layers/fastexp.h"
#include "layers/layers.h"

/* Below this many elements one thread does it all: waking the team costs
 * about 50 us here, more than half of 65536 elements (decoding 64 rows)
 * take; two threads win from about 100000 (measured). */
#define SWIGLU_MIN_PARALLEL (1 << 17)

typedef struct swiglu_job {
    float *act, *dgate, *dup;
    const float *gate, *up, *dact;
    size_t n;
    int avx2;
} swiglu_job;

/* Worker wk's elements [lo, hi): blocks of 64 floats (a cache line is 16),
 * so no two workers write the same line. */
static void share(size_t n, int wk, int nw, size_t *lo, size_t *hi)
{
    int b0, b1;
    pool_share((int)((n + 63) / 64), wk, nw, &b0, &b1);
    *lo = (size_t)b0 * 64;
    *hi = (size_t)b1 * 64 < n ? (size_t)b1 * 64 : n;
}

static void forward_c(float *act, const float *gate, const float *up, size_t lo, size_t hi)
{
    for (size_t i = lo; i < hi; i++) {
        float g = gate[i];
        act[i] = g / (1.0f + expf(-g)) * up[i];
    }
}

static void backward_c(float *dgate, float *dup, const float *dact, const float *gate,
                       const float *up, size_t lo, size_t hi)
{
    for (size_t i = lo; i < hi; i++) {
        float g = gate[i], sg = 1.0f / (1.0f + expf(-g));
        dup[i] = dact[i] * g * sg;
        dgate[i] = dact[i] * up[i] * sg * (1.0f + g * (1.0f - sg));
    }
}

#ifdef TERN_SIMD_AVX2
/* σ(g) = 1 / (1 + e^−g); e^−g = +inf for g < −88.7 gives σ = 0, as expf. */
TARGET_AVX2 static inline __m256 sigmoid8(__m256 g)
{
    const __m256 one = _mm256_set1_ps(1.0f);
    return _mm256_div_ps(one, _mm256_add_ps(one, exp8(_mm256_sub_ps(_mm256_setzero_ps(), g))));
}

/* Full vectors with plain loads and stores; the last partial one masked
 * (masked stores are slow, so only there). */
TARGET_AVX2 static void forward_avx2(float *act, const float *gate, const float *up, size_t lo,
                                     size_t hi)
{
    size_t i = lo;
    for (; i + 8 <= hi; i += 8) {
        __m256 g = _mm256_loadu_ps(gate + i), u = _mm256_loadu_ps(up + i);
        _mm256_storeu_ps(act + i, _mm256_mul_ps(_mm256_mul_ps(g, sigmoid8(g)), u));
    }
    if (i < hi) {
        const __m256i k = mask8((int)(hi - i));
        __m256 g = _mm256_maskload_ps(gate + i, k), u = _mm256_maskload_ps(up + i, k);
        _mm256_maskstore_ps(act + i, k, _mm256_mul_ps(_mm256_mul_ps(g, sigmoid8(g)), u));
    }
}

/* dup = da g σ;  dgate = da u σ (1 + g (1 − σ)), on 8 elements */
TARGET_AVX2 static inline void backward8(__m256 *dg, __m256 *du, __m256 da, __m256 g, __m256 u)
{
    const __m256 one = _mm256_set1_ps(1.0f);
    __m256 sg = sigmoid8(g), t = _mm256_fmadd_ps(g, _mm256_sub_ps(one, sg), one);
    *du = _mm256_mul_ps(_mm256_mul_ps(da, g), sg);
    *dg = _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(da, u), sg), t);
}

TARGET_AVX2 static void backward_avx2(float *dgate, float *dup, const float *dact,
                                      const float *gate, const float *up, size_t lo, size_t hi)
{
    size_t i = lo;
    for (; i + 8 <= hi; i += 8) {
        __m256 dg, du;
        backward8(&dg, &du, _mm256_loadu_ps(dact + i), _mm256_loadu_ps(gate + i),
                  _mm256_loadu_ps(up + i));
        _mm256_storeu_ps(dgate + i, dg);
        _mm256_storeu_ps(dup + i, du);
    }
    if (i < hi) {
        const __m256i k = mask8((int)(hi - i));
        __m256 dg, du;
        backward8(&dg, &du, _mm256_maskload_ps(dact + i, k), _mm256_maskload_ps(gate + i, k),
                  _mm256_maskload_ps(up + i, k));
        _mm256_maskstore_ps(dgate + i, k, dg);
        _mm256_maskstore_ps(dup + i, k, du);
    }
}
#endif

static void forward_part(void *arg, int wk, int nw)
{
    const swiglu_job *j = arg;
    size_t lo, hi;
    share(j->n, wk, nw, &lo, &hi);
#ifdef TERN_SIMD_AVX2
    if (j->avx2) {
        forward_avx2(j->act, j->gate, j->up, lo, hi);
        return;
    }
#endif
    forward_c(j->act, j->gate, j->up, lo, hi);
}

static void backward_part(void *arg, int wk, int nw)
{
    const swiglu_job *j = arg;
    size_t lo, hi;
    share(j->n, wk, nw, &lo, &hi);
#ifdef TERN_SIMD_AVX2
    if (j->avx2) {
        backward_avx2(j->dgate, j->dup, j->dact, j->gate, j->up, lo, hi);
        return;
    }
#endif
    backward_c(j->dgate, j->dup, j->dact, j->gate, j->up, lo, hi);
}

static int use_avx2(void)
{
#ifdef TERN_SIMD_AVX2
    return simd_avx2();
#else
    return 0;
#endif
}

void swiglu_forward(pool *tp, float *act, const float *gate, const float *up, size_t n)
{
    swiglu_job j = {.act = act, .gate = gate, .up = up, .n = n, .avx2 = use_avx2()};
    pool_run(n < SWIGLU_MIN_PARALLEL ? NULL : tp, forward_part, &j);
}

void swiglu_backward(pool *tp, float *dgate, float *dup, const float *dact, const float *gate,
                     const float *up, size_t n)
{
    swiglu_job j = {.dgate = dgate, .dup = dup, .dact = dact, .gate = gate, .up = up, .n = n,
                    .avx2 = use_avx2()};
    pool_run(n < SWIGLU_MIN_PARALLEL ? NULL : tp, backward_part, &j);
}
