/*
 * fastexp.h: e^x on 8 floats at a time (AVX2 + FMA), for the exps of the
 * elementwise layers (SwiGLU's sigmoid, attention's softmax), which libm's
 * expf, one call per element, made about a tenth of a training step.
 *
 * The build targets generic x86-64, so the vector code is compiled for
 * AVX2 + FMA with a function attribute, and the callers choose it at run
 * time (simd_avx2()) over their plain C loops with expf, which stay as the
 * portable fallback (other CPUs, other architectures, -DTERN_NO_SIMD, and
 * TERN_SIMD=none in the environment: simd.h).
 *
 * The exp, as Cephes' expf: with n = round(x / ln 2) and r = x − n ln 2
 * (|r| <= ln 2 / 2; ln 2 split in a 9-bit head and a tail, so n · head is
 * exact),
 *   e^x = 2^n · e^r,  e^r ≈ 1 + r + r² P(r),  P of degree 5.
 * Relative error below 2e-7 (2 ulp) over the whole range, measured against
 * double exp; subnormal results, 0 below x ≈ −103.97, +inf above x ≈ 88.72
 * and NaN for NaN, as expf. 2^n is applied in two halves, 2^(n>>1) and
 * 2^(n − (n>>1)), so that n from −150 to 128 needs no special case.
 */
#ifndef TERN_FASTEXP_H
#define TERN_FASTEXP_H

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(TERN_NO_SIMD)
#define TERN_SIMD_AVX2 1

#include <immintrin.h>

#include "layers/simd.h"

#define TARGET_AVX2 __attribute__((target("avx2,fma")))

/* Whether the TARGET_AVX2 paths run: this CPU has AVX2 + FMA and TERN_SIMD
 * does not turn them off (simd.h). */
static inline int simd_avx2(void) { return simd_level_in_force() >= SIMD_AVX2; }

/* e^x for each lane (see the top of the file). */
TARGET_AVX2 static inline __m256 exp8(__m256 x)
{
    /* Beyond [−104, 89] e^x is 0 or +inf in float anyway. x second, so a NaN
     * passes through max and min (they return the second operand on NaN). */
    x = _mm256_max_ps(_mm256_set1_ps(-104.0f), x);
    x = _mm256_min_ps(_mm256_set1_ps(89.0f), x);
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    /* 2^n1 · 2^n2 with n1 = n >> 1, n2 = n − n1, each in [−75, 64]: float
     * bits (k + 127) << 23 are 2^k. */
    __m256i ni = _mm256_cvtps_epi32(n);
    __m256i n1 = _mm256_srai_epi32(ni, 1), n2 = _mm256_sub_epi32(ni, n1);
    const __m256i bias = _mm256_set1_epi32(127);
    __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

/* Lanes 0 .. k−1 set (0 <= k <= 8): the mask of a partial vector, for
 * _mm256_maskload_ps / _mm256_maskstore_ps (which touch no memory in the
 * other lanes), so a row's last k elements take the same path as the rest. */
TARGET_AVX2 static inline __m256i mask8(int k)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* The sum of the 8 lanes, in a fixed order. */
TARGET_AVX2 static inline float hsum8(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* The largest of the 8 lanes. */
TARGET_AVX2 static inline float hmax8(__m256 v)
{
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

#endif

/* How the elementwise layers take e^x on this CPU: the run notes it
 * (host->note), since the two paths round differently. */
static inline const char *simd_exp_path(void)
{
#ifdef TERN_SIMD_AVX2
    if (simd_avx2())
        return "AVX2+FMA (fastexp.h, within 2 ulp of expf)";
#endif
    return "libm expf";
}

#endif
