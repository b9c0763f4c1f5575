/*
 * attention_kernels.cu: causal self-attention over packed sequences with
 * grouped KV heads, flash-style (the T×T matrix is never built).
 *
 * Shapes: q, out, dout, dq [N, QD] (QD = H·HD); k, v, dk, dv [N, KD]
 * (KD = KV·HD); lse, delta [N, H]. Query row i attends to key rows
 * j = row_first[i] .. i; query head h reads kv head g = h / (H/KV).
 *
 * Forward, per (i, h), streaming over j with an online softmax:
 *   s_j  = q_i·k_j / sqrt(HD)
 *   m'   = max(m, s_j),  c = e^(m − m'),  l ← l c + e^(s_j − m'),
 *   acc  ← acc c + e^(s_j − m') v_j,   m ← m'
 *   out_i = acc / l,  lse_i = m + log l  (= log Σ_j e^(s_j))
 * Backward, recomputing p_ij = e^(s_ij − lse_i) instead of storing P:
 *   delta_i = Σ_d dout_i ⊙ out_i          (= Σ_j p_ij dp_ij)
 *   dp_ij = dout_i·v_j,  ds_ij = p_ij (dp_ij − delta_i)
 *   dq_i = Σ_j ds_ij k_j / sqrt(HD)
 *   dk_j = Σ_{i, h in g's group} ds_ij q_i / sqrt(HD),  dv_j = Σ p_ij dout_i
 *
 * Work split: one warp per (row, head) (per (key row, kv head) for dk/dv),
 * the 32 lanes splitting HD: lane t holds elements d = t, t + 32, ... (NI =
 * ceil(HD/32) of them, in registers, coalesced loads). Each output row is
 * written by exactly one warp: no atomics, results independent of
 * scheduling. The dot products of all kernels use the same lane split and
 * the same shuffle tree, so the s recomputed in the backward matches the
 * forward's (p_ij stays consistent with lse_i).
 */
#include <math.h>

#include "kernels/kernels.h"
#include "kernels/reduce.cuh"

namespace {

constexpr int WARP = 32;
constexpr int WARPS_PER_BLOCK = 4;
constexpr int BLOCK = WARP * WARPS_PER_BLOCK;
constexpr int MAX_HD = 256;

/* Blocks of WARPS_PER_BLOCK warps covering `warps` warps. */
unsigned blocks_for(long long warps)
{
    return (unsigned)((warps + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK);
}

/* Shape checks shared by the launchers (n == 0 is handled before). */
bool bad_shape(int n, int h, int kv, int hd)
{
    return n < 0 || h <= 0 || kv <= 0 || h % kv != 0 || hd <= 0 || hd > MAX_HD;
}

/* out[N, QD], lse[N, H] (set). Warp w = (row r, head h). */
template <int NI>
static __global__ void __launch_bounds__(BLOCK)
    attention_forward_kernel(float *out, float *lse, const float *q, const float *k,
                             const float *v, const int32_t *row_first, int n, int H, int KV,
                             int HD, float scale)
{
    const long long w = (long long)blockIdx.x * WARPS_PER_BLOCK + threadIdx.x / WARP;
    const int lane = threadIdx.x % WARP;
    if (w >= (long long)n * H)
        return; /* whole warp: w is uniform across it */
    const int r = (int)(w / H), h = (int)(w % H), g = h / (H / KV);
    const size_t QD = (size_t)H * HD, KD = (size_t)KV * HD;
    const float *qr = q + (size_t)r * QD + (size_t)h * HD;
    const float *kg = k + (size_t)g * HD; /* key row j at kg + j·KD */
    const float *vg = v + (size_t)g * HD;

    float qv[NI], acc[NI];
#pragma unroll
    for (int i = 0; i < NI; i++) {
        const int d = i * WARP + lane;
        qv[i] = d < HD ? qr[d] : 0.0f;
        acc[i] = 0.0f;
    }
    float m = -INFINITY, l = 0.0f;
    attend_keys<NI>(qv, kg, vg, KD, HD, row_first[r], r, lane, scale, acc, m, l);
    /* l > 0 whenever row_first[r] <= r; the guard only keeps an empty range finite */
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    float *o = out + (size_t)r * QD + (size_t)h * HD;
#pragma unroll
    for (int i = 0; i < NI; i++) {
        const int d = i * WARP + lane;
        if (d < HD)
            o[d] = acc[i] * inv;
    }
    if (lane == 0)
        lse[(size_t)r * H + h] = m + logf(l);
}

/* delta[N, H] (set) = Σ_d dout ⊙ out over each head. Warp w = (row r, head h). */
static __global__ void __launch_bounds__(BLOCK)
    attention_delta_kernel(float *delta, const float *dout, const float *out, int n, int H, int HD)
{
    const long long w = (long long)blockIdx.x * WARPS_PER_BLOCK + threadIdx.x / WARP;
    const int lane = threadIdx.x % WARP;
    if (w >= (long long)n * H)
        return;
    const int r = (int)(w / H), h = (int)(w % H);
    const size_t off = (size_t)r * H * HD + (size_t)h * HD;
    float part = 0.0f;
    for (int d = lane; d < HD; d += WARP)
        part += dout[off + d] * out[off + d];
    part = warp_sum(part);
    if (lane == 0)
        delta[(size_t)r * H + h] = part;
}

/* dq[N, QD] (set). Warp w = (query row i, head h), over keys j = row_first[i] .. i. */
template <int NI>
static __global__ void __launch_bounds__(BLOCK)
    attention_backward_dq_kernel(float *dq, const float *dout, const float *lse,
                                 const float *delta, const float *q, const float *k,
                                 const float *v, const int32_t *row_first, int n, int H, int KV,
                                 int HD, float scale)
{
    const long long w = (long long)blockIdx.x * WARPS_PER_BLOCK + threadIdx.x / WARP;
    const int lane = threadIdx.x % WARP;
    if (w >= (long long)n * H)
        return;
    const int r = (int)(w / H), h = (int)(w % H), g = h / (H / KV);
    const size_t QD = (size_t)H * HD, KD = (size_t)KV * HD;
    const size_t qoff = (size_t)r * QD + (size_t)h * HD;
    const float *kg = k + (size_t)g * HD, *vg = v + (size_t)g * HD;
    const float lse_i = lse[(size_t)r * H + h], delta_i = delta[(size_t)r * H + h];

    float qv[NI], dov[NI], acc[NI];
#pragma unroll
    for (int i = 0; i < NI; i++) {
        const int d = i * WARP + lane;
        qv[i] = d < HD ? q[qoff + d] : 0.0f;
        dov[i] = d < HD ? dout[qoff + d] : 0.0f;
        acc[i] = 0.0f;
    }
    for (int j = row_first[r]; j <= r; j++) {
        const float *kj = kg + (size_t)j * KD, *vj = vg + (size_t)j * KD;
        float kr[NI]; /* k_j kept for the update below */
        float ps = 0.0f, pdp = 0.0f;
#pragma unroll
        for (int i = 0; i < NI; i++) {
            const int d = i * WARP + lane;
            kr[i] = 0.0f;
            if (d < HD) {
                kr[i] = kj[d];
                ps += qv[i] * kr[i];
                pdp += dov[i] * vj[d];
            }
        }
        warp_sum2(ps, pdp);
        const float p = expf(ps * scale - lse_i);
        const float ds = p * (pdp - delta_i);
#pragma unroll
        for (int i = 0; i < NI; i++)
            acc[i] += ds * kr[i]; /* kr = 0 past HD, never stored */
    }
#pragma unroll
    for (int i = 0; i < NI; i++) {
        const int d = i * WARP + lane;
        if (d < HD)
            dq[qoff + d] = acc[i] * scale;
    }
}

/* dk, dv [N, KD] (set). Warp w = (key row j, kv head g), over query rows
 * i = j .. row_end[j]−1 and the query heads h of g's group. */
template <int NI>
static __global__ void __launch_bounds__(BLOCK)
    attention_backward_dkdv_kernel(float *dk, float *dv, const float *dout, const float *lse,
                                   const float *delta, const float *q, const float *k,
                                   const float *v, const int32_t *row_end, int n, int H, int KV,
                                   int HD, float scale)
{
    const long long w = (long long)blockIdx.x * WARPS_PER_BLOCK + threadIdx.x / WARP;
    const int lane = threadIdx.x % WARP;
    if (w >= (long long)n * KV)
        return;
    const int j = (int)(w / KV), g = (int)(w % KV), group = H / KV;
    const size_t QD = (size_t)H * HD, KD = (size_t)KV * HD;
    const size_t koff = (size_t)j * KD + (size_t)g * HD;

    float kv_[NI], vv[NI], dkacc[NI], dvacc[NI];
#pragma unroll
    for (int i = 0; i < NI; i++) {
        const int d = i * WARP + lane;
        kv_[i] = d < HD ? k[koff + d] : 0.0f;
        vv[i] = d < HD ? v[koff + d] : 0.0f;
        dkacc[i] = 0.0f;
        dvacc[i] = 0.0f;
    }
    const int end = row_end[j];
    for (int r = j; r < end; r++) {
        for (int h = g * group; h < (g + 1) * group; h++) {
            const size_t qoff = (size_t)r * QD + (size_t)h * HD;
            float qv[NI], dov[NI];
            float ps = 0.0f, pdp = 0.0f;
#pragma unroll
            for (int i = 0; i < NI; i++) {
                const int d = i * WARP + lane;
                qv[i] = d < HD ? q[qoff + d] : 0.0f;
                dov[i] = d < HD ? dout[qoff + d] : 0.0f;
                ps += qv[i] * kv_[i];
                pdp += dov[i] * vv[i];
            }
            warp_sum2(ps, pdp);
            const float p = expf(ps * scale - lse[(size_t)r * H + h]);
            const float ds = p * (pdp - delta[(size_t)r * H + h]);
#pragma unroll
            for (int i = 0; i < NI; i++) {
                dkacc[i] += ds * qv[i];
                dvacc[i] += p * dov[i];
            }
        }
    }
#pragma unroll
    for (int i = 0; i < NI; i++) {
        const int d = i * WARP + lane;
        if (d < HD) {
            dk[koff + d] = dkacc[i] * scale;
            dv[koff + d] = dvacc[i];
        }
    }
}

} // namespace

extern "C" cudaError_t k_attention_forward(cudaStream_t st, float *out, float *lse, const float *q,
                                           const float *k, const float *v,
                                           const int32_t *row_first, int n, int h, int kv, int hd)
{
    if (n == 0)
        return cudaSuccess;
    if (bad_shape(n, h, kv, hd))
        return cudaErrorInvalidValue;
    const float scale = 1.0f / sqrtf((float)hd);
    const unsigned grid = blocks_for((long long)n * h);
    LAUNCH_NI(hd, attention_forward_kernel, grid, st, out, lse, q, k, v, row_first, n, h, kv, hd,
              scale);
    return cudaGetLastError();
}

extern "C" cudaError_t k_attention_delta(cudaStream_t st, float *delta, const float *dout,
                                         const float *out, int n, int h, int hd)
{
    if (n == 0)
        return cudaSuccess;
    if (n < 0 || h <= 0 || hd <= 0)
        return cudaErrorInvalidValue;
    attention_delta_kernel<<<blocks_for((long long)n * h), BLOCK, 0, st>>>(delta, dout, out, n, h,
                                                                           hd);
    return cudaGetLastError();
}

extern "C" cudaError_t k_attention_backward_dq(cudaStream_t st, float *dq, const float *dout,
                                               const float *lse, const float *delta,
                                               const float *q, const float *k, const float *v,
                                               const int32_t *row_first, int n, int h, int kv,
                                               int hd)
{
    if (n == 0)
        return cudaSuccess;
    if (bad_shape(n, h, kv, hd))
        return cudaErrorInvalidValue;
    const float scale = 1.0f / sqrtf((float)hd);
    const unsigned grid = blocks_for((long long)n * h);
    LAUNCH_NI(hd, attention_backward_dq_kernel, grid, st, dq, dout, lse, delta, q, k, v,
              row_first, n, h, kv, hd, scale);
    return cudaGetLastError();
}

extern "C" cudaError_t k_attention_backward_dkdv(cudaStream_t st, float *dk, float *dv,
                                                 const float *dout, const float *lse,
                                                 const float *delta, const float *q,
                                                 const float *k, const float *v,
                                                 const int32_t *row_end, int n, int h, int kv,
                                                 int hd)
{
    if (n == 0)
        return cudaSuccess;
    if (bad_shape(n, h, kv, hd))
        return cudaErrorInvalidValue;
    const float scale = 1.0f / sqrtf((float)hd);
    const unsigned grid = blocks_for((long long)n * kv);
    LAUNCH_NI(hd, attention_backward_dkdv_kernel, grid, st, dk, dv, dout, lse, delta, q, k, v,
              row_end, n, h, kv, hd, scale);
    return cudaGetLastError();
}
