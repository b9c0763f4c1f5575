/*
 * decode_kernels.cu: the KV cache of generation and attention of one new
 * token per row against it (as ../../transformer/generation/generate.c,
 * row_attention).
 *
 * Cache: kc, vc [S, L, P, KD] (KD = KV·HD); sample s, layer l, position p
 * at ((s·L + l)·P + p)·KD. Decode rows: q, out [B, QD] (QD = H·HD);
 * k, v [B, KD]; row r belongs to sample row_sample[r] at position pos[r].
 *
 * Attention of row r, query head h, kv head g = h / (H/KV), over cache
 * positions t = 0 .. pos[r] (its own k, v appended first):
 *   s_t = q_r·k_t / sqrt(HD),  out_r = Σ_t softmax(s)_t v_t
 * with the same online softmax as the training forward (attention_kernels.cu):
 *   m' = max(m, s_t),  c = e^(m − m'),  l ← l c + e^(s_t − m'),
 *   acc ← acc c + e^(s_t − m') v_t,  m ← m';   out = acc / l.
 * One warp per (row, head), lane t holding elements d = t, t + 32, ... of HD.
 */
#include <math.h>

#include "kernels/kernels.h"
#include "kernels/reduce.cuh"

namespace {

constexpr int WARP = 32;
constexpr int WARPS_PER_BLOCK = 4;
constexpr int BLOCK = WARP * WARPS_PER_BLOCK;
constexpr int COPY_BLOCK = 256;
constexpr unsigned COPY_MAX_GRID = 1u << 16; /* grid-stride beyond this */
constexpr int MAX_HD = 256;

unsigned copy_grid(size_t total)
{
    size_t g = (total + COPY_BLOCK - 1) / COPY_BLOCK;
    return g < COPY_MAX_GRID ? (unsigned)g : COPY_MAX_GRID;
}

/* Element idx of k[B, KD] (row r = idx / KD, column c) to its cache slot.
 * A position outside 0..P−1 is skipped rather than written out of bounds. */
static __global__ void kv_append_kernel(float *kc, float *vc, const float *k, const float *v,
                                 const int32_t *row_sample, const int32_t *pos, int b, int l,
                                 int L, int P, int kd)
{
    const size_t total = (size_t)b * kd;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += stride) {
        const size_t r = idx / kd, c = idx % kd;
        const int p = pos[r];
        if (p < 0 || p >= P)
            continue;
        const size_t dst = (((size_t)row_sample[r] * L + l) * P + p) * kd + c;
        kc[dst] = k[idx];
        vc[dst] = v[idx];
    }
}

/* Positions 0..len−1 of (s, l) are contiguous: one flat copy of len·KD floats. */
static __global__ void kv_fill_kernel(float *kc, float *vc, const float *k, const float *v, size_t total,
                               size_t base)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += stride) {
        kc[base + idx] = k[idx];
        vc[base + idx] = v[idx];
    }
}

/* out[B, QD] (set). Warp w = (row r, head h). NI = ceil(HD/32) elements per lane. */
template <int NI>
static __global__ void __launch_bounds__(BLOCK)
    decode_attention_kernel(float *out, const float *q, const float *kc, const float *vc,
                            const int32_t *row_sample, const int32_t *pos, int b, int l, int L,
                            int P, int H, int KV, int HD, float scale)
{
    const long long w = (long long)blockIdx.x * WARPS_PER_BLOCK + threadIdx.x / WARP;
    const int lane = threadIdx.x % WARP;
    if (w >= (long long)b * H)
        return; /* whole warp: w is uniform across it */
    const int r = (int)(w / H), h = (int)(w % H), g = h / (H / KV);
    const size_t QD = (size_t)H * HD, KD = (size_t)KV * HD;
    const size_t cache0 = ((size_t)row_sample[r] * L + l) * P * KD + (size_t)g * HD;
    const float *kb = kc + cache0, *vb = vc + cache0; /* position t at + t·KD */
    const int last = pos[r] < P ? pos[r] : P - 1;     /* never read past the cache */
    const size_t qoff = (size_t)r * QD + (size_t)h * HD;

    float qv[NI], acc[NI];
#pragma unroll
    for (int i = 0; i < NI; i++) {
        const int d = i * WARP + lane;
        qv[i] = d < HD ? q[qoff + d] : 0.0f;
        acc[i] = 0.0f;
    }
    float m = -INFINITY, lsum = 0.0f;
    attend_keys<NI>(qv, kb, vb, KD, HD, 0, last, lane, scale, acc, m, lsum);
    const float inv = lsum > 0.0f ? 1.0f / lsum : 0.0f; /* empty range (pos < 0): 0 */
#pragma unroll
    for (int i = 0; i < NI; i++) {
        const int d = i * WARP + lane;
        if (d < HD)
            out[qoff + d] = acc[i] * inv;
    }
}

} // namespace

extern "C" cudaError_t k_kv_append(cudaStream_t st, float *kc, float *vc, const float *k,
                                   const float *v, const int32_t *row_sample, const int32_t *pos,
                                   int b, int l, int n_layers, int p_max, int kd)
{
    if (b == 0)
        return cudaSuccess;
    if (b < 0 || kd <= 0 || l < 0 || l >= n_layers || p_max <= 0)
        return cudaErrorInvalidValue;
    kv_append_kernel<<<copy_grid((size_t)b * kd), COPY_BLOCK, 0, st>>>(
        kc, vc, k, v, row_sample, pos, b, l, n_layers, p_max, kd);
    return cudaGetLastError();
}

extern "C" cudaError_t k_kv_fill(cudaStream_t st, float *kc, float *vc, const float *k,
                                 const float *v, int len, int s, int l, int n_layers, int p_max,
                                 int kd)
{
    if (len == 0)
        return cudaSuccess;
    if (len < 0 || len > p_max || s < 0 || l < 0 || l >= n_layers || kd <= 0)
        return cudaErrorInvalidValue;
    const size_t total = (size_t)len * kd;
    const size_t base = ((size_t)s * n_layers + l) * p_max * kd;
    kv_fill_kernel<<<copy_grid(total), COPY_BLOCK, 0, st>>>(kc, vc, k, v, total, base);
    return cudaGetLastError();
}

extern "C" cudaError_t k_decode_attention(cudaStream_t st, float *out, const float *q,
                                          const float *kc, const float *vc,
                                          const int32_t *row_sample, const int32_t *pos, int b,
                                          int l, int n_layers, int p_max, int h, int kv, int hd)
{
    if (b == 0)
        return cudaSuccess;
    if (b < 0 || l < 0 || l >= n_layers || p_max <= 0 || h <= 0 || kv <= 0 || h % kv != 0 ||
        hd <= 0 || hd > MAX_HD)
        return cudaErrorInvalidValue;
    const float scale = 1.0f / sqrtf((float)hd);
    const unsigned grid = (unsigned)(((long long)b * h + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK);
    LAUNCH_NI(hd, decode_attention_kernel, grid, st, out, q, kc, vc, row_sample, pos, b, l,
              n_layers, p_max, h, kv, hd, scale);
    return cudaGetLastError();
}
