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
 * Two paths compute these sums. Both write each output element from exactly
 * one thread of one block: no atomics, results independent of scheduling.
 *
 * Row path (any HD <= 256): one warp per (row, head) (per (key row, kv head)
 * for dk/dv), the 32 lanes splitting HD: lane t holds elements d = t,
 * t + 32, ... (NI = ceil(HD/32) of them, in registers, coalesced loads). The
 * dot products of all kernels use the same lane split and the same shuffle
 * tree, so the s recomputed in the backward matches the forward's (p_ij
 * stays consistent with lse_i). Every key row is read from global memory
 * once per query row: no reuse across rows, which is what the tiled path is
 * for.
 *
 * Tiled path (HD = 64 or 128, fp32 SIMT): blocks of 256 threads, a 16 × 16
 * grid (ty, tx), stage tiles of 64 query rows and 64 key rows in shared
 * memory (rows LD = HD + 4 floats apart: the +4 keeps float4 reads of 16
 * consecutive rows off each other's banks) and each thread computes a
 * register micro-tile, so each k_j, v_j read from global memory serves up to
 * 64 query rows. Three micro-tile shapes:
 *   S [64 q × 64 k] = Q Kᵀ (and dP = dO Vᵀ): thread (ty, tx) holds query
 *     rows 4ty .. 4ty+3 × key columns tx, tx+16, tx+32, tx+48. Each s_ij is
 *     one thread's sum over d = 0 .. HD−1 in order (fmaf), so all three
 *     kernels compute the same s_ij bit for bit. The 16 threads of a row
 *     are one half-warp: row max and row Σ are xor shuffles over 8, 4, 2, 1.
 *   [64 q × HD] += [64 × 64] · [64 × HD] (O += P V, dQ += dS K): rows
 *     4ty .. 4ty+3 × columns 4tx .. 4tx+3 (and +64 .. +67 for HD = 128); P,
 *     dS go through shared memory ([64][68]).
 *   [64 k × HD] += [64 × 64]ᵀ · [64 × HD] (dV += Pᵀ dO, dK += dSᵀ Q): key
 *     rows 4ty .. 4ty+3 × the same columns.
 * A tile can straddle sequences: every (i, j) is masked on its own
 * (j >= row_first[i] and j <= i, or for dk/dv j <= i < row_end[j]), and a
 * row with no key yet in a tile keeps m = −inf, contributing nothing.
 *
 *   forward, block = (query tile i0 .. i0+63, head h), key tiles from
 *     j = min_i row_first[i] to i0+63:
 *       S = Q Kᵀ / sqrt(HD), masked to −inf
 *       m' = max(m, rowmax S),  P = e^(S − m'),  c = e^(m − m')
 *       l ← l c + rowsum P,  O ← O c + P V,  m ← m'
 *     out = O / l, lse = m + log l.
 *   dq, block = (query tile, head h), the same key tiles:
 *       P = e^(S − lse) (masked to 0),  dP = dO Vᵀ,  dS = P ⊙ (dP − delta)
 *       dQ += dS K;  dq = dQ / sqrt(HD)
 *   dk, dv, block = (key tile j0 .. j0+63, kv head g), for each query head h
 *     of g's group, query tiles from i0 = j0 while i0 < max_j row_end[j]:
 *       P, dS as for dq;  dV += Pᵀ dO,  dK += dSᵀ Q;  dk = dK / sqrt(HD)
 * Shared memory a block (dynamic, past the 48 KB default: the launchers ask
 * for it with cudaFuncSetAttribute, and use the row path where the device
 * cannot give it):
 *   forward  Q, K, V [64][LD] (P reuses K's room once S is done)
 *            HD 64: 52,224 B   HD 128: 101,376 B
 *   dq       Q, dO, K, V [64][LD] (dS reuses V's once dP is done)
 *            HD 64: 69,632 B   HD 128: 135,168 B
 *   dk, dv   K, V, Q, dO [64][LD], P, dS [64][68]
 *            HD 64: 104,448 B  HD 128: 169,984 B
 * plus under 1 KB of static shared memory (row bounds, lse, delta).
 */
#include <limits.h>
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

/* ---- tiled path (HD 64, 128) ------------------------------------------------ */

constexpr int TB = 64;           /* rows of a query tile and of a key tile */
constexpr int TPB = 256;         /* threads: a 16 × 16 grid, ty = tid / 16, tx = tid % 16 */
constexpr int PAD = 4;           /* row padding, floats: keeps float4 alignment, spreads banks */
constexpr int LDP = TB + PAD;    /* row stride of P, dS [TB][LDP] */
constexpr int RM = TB / 16;      /* query rows a thread: 4ty .. 4ty+3 */
constexpr int CN = TB / 16;      /* key columns a thread: tx + 16j, j < CN */
static_assert(RM == 4 && CN == 4, "the micro-tiles read float4s of 4 rows");

/* Bytes of dynamic shared memory of each tiled kernel (the layout above). */
constexpr size_t fwd_smem(int hd) { return (size_t)3 * TB * (hd + PAD) * sizeof(float); }
constexpr size_t dq_smem(int hd) { return (size_t)4 * TB * (hd + PAD) * sizeof(float); }
constexpr size_t dkdv_smem(int hd)
{
    return (size_t)4 * TB * (hd + PAD) * sizeof(float) + (size_t)2 * TB * LDP * sizeof(float);
}
constexpr size_t STATIC_SMEM_MAX = 3 * TB * sizeof(float); /* dkdv's: row_end, lse, delta */

static __device__ __forceinline__ float comp(const float4 &v, int i)
{
    return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w; /* i is constant once unrolled */
}

static __device__ __forceinline__ float half_max(float v)
{
#pragma unroll
    for (int o = 8; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(REDUCE_FULL_MASK, v, o));
    return v;
}

/* Σ over the 16 lanes of a half-warp; every lane gets the same bits (each
 * step adds the same pair, a + b = b + a). */
static __device__ __forceinline__ float half_sum(float v)
{
#pragma unroll
    for (int o = 8; o > 0; o >>= 1)
        v += __shfl_xor_sync(REDUCE_FULL_MASK, v, o);
    return v;
}

/* sm[TB][HD+PAD] ← rows 0 .. valid−1 of g (HD floats each, `stride` apart),
 * zeros from row `valid` on: rows past N are never read, and zeros keep the
 * masked products finite. Consecutive threads read consecutive float4s. */
template <int HD>
static __device__ __forceinline__ void load_tile(float *sm, const float *g, size_t stride,
                                                 int valid)
{
    constexpr int V4 = HD / 4, LD = HD + PAD;
    static_assert(TB * V4 % TPB == 0, "every thread loads the same number of float4s");
#pragma unroll
    for (int it = 0; it < TB * V4 / TPB; it++) {
        const int idx = (int)threadIdx.x + it * TPB, r = idx / V4, c = (idx % V4) * 4;
        float4 x = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (r < valid)
            x = *reinterpret_cast<const float4 *>(g + (size_t)r * stride + c);
        *reinterpret_cast<float4 *>(sm + r * LD + c) = x;
    }
}

/* acc[a][j] += Σ_d A[4ty+a][d] · B[tx+16j][d], d = 0 .. HD−1 in order.
 * A, B [TB][HD+PAD]. Per step of 4 d: 4 float4 of A (two addresses a warp,
 * 16 banks apart) and 4 of B (16 consecutive rows: conflict free) feed 64 fmaf. */
template <int HD>
static __device__ __forceinline__ void tile_dot(float (&acc)[RM][CN], const float *A,
                                                const float *B, int ty, int tx)
{
    constexpr int LD = HD + PAD;
#pragma unroll 4
    for (int d = 0; d < HD; d += 4) {
        float4 a4[RM], b4[CN];
#pragma unroll
        for (int a = 0; a < RM; a++)
            a4[a] = *reinterpret_cast<const float4 *>(A + (4 * ty + a) * LD + d);
#pragma unroll
        for (int j = 0; j < CN; j++)
            b4[j] = *reinterpret_cast<const float4 *>(B + (tx + 16 * j) * LD + d);
#pragma unroll
        for (int a = 0; a < RM; a++)
#pragma unroll
            for (int j = 0; j < CN; j++) {
                acc[a][j] = fmaf(a4[a].x, b4[j].x, acc[a][j]);
                acc[a][j] = fmaf(a4[a].y, b4[j].y, acc[a][j]);
                acc[a][j] = fmaf(a4[a].z, b4[j].z, acc[a][j]);
                acc[a][j] = fmaf(a4[a].w, b4[j].w, acc[a][j]);
            }
    }
}

/* acc[a][4f+e] += Σ_c P[4ty+a][c] · X[c][4tx+64f+e], c = 0 .. TB−1.
 * P [TB][LDP], X [TB][HD+PAD]: O += P V and dQ += dS K. */
template <int HD>
static __device__ __forceinline__ void tile_pv(float (&acc)[RM][HD / 16], const float *P,
                                               const float *X, int ty, int tx)
{
    constexpr int LD = HD + PAD, NF = HD / 64;
#pragma unroll 2
    for (int c = 0; c < TB; c += 4) {
        float4 p4[RM];
#pragma unroll
        for (int a = 0; a < RM; a++)
            p4[a] = *reinterpret_cast<const float4 *>(P + (4 * ty + a) * LDP + c);
#pragma unroll
        for (int cc = 0; cc < 4; cc++)
#pragma unroll
            for (int f = 0; f < NF; f++) {
                const float4 x4 =
                    *reinterpret_cast<const float4 *>(X + (c + cc) * LD + 4 * tx + 64 * f);
#pragma unroll
                for (int a = 0; a < RM; a++) {
                    const float p = comp(p4[a], cc);
                    acc[a][4 * f + 0] = fmaf(p, x4.x, acc[a][4 * f + 0]);
                    acc[a][4 * f + 1] = fmaf(p, x4.y, acc[a][4 * f + 1]);
                    acc[a][4 * f + 2] = fmaf(p, x4.z, acc[a][4 * f + 2]);
                    acc[a][4 * f + 3] = fmaf(p, x4.w, acc[a][4 * f + 3]);
                }
            }
    }
}

/* acc[a][4f+e] += Σ_r P[r][4ty+a] · X[r][4tx+64f+e], r = 0 .. TB−1: the
 * transposed product, key rows 4ty+a. P [TB][LDP], X [TB][HD+PAD]:
 * dV += Pᵀ dO and dK += dSᵀ Q. */
template <int HD>
static __device__ __forceinline__ void tile_ptx(float (&acc)[4][HD / 16], const float *P,
                                                const float *X, int ty, int tx)
{
    constexpr int LD = HD + PAD, NF = HD / 64;
#pragma unroll 4
    for (int r = 0; r < TB; r++) {
        const float4 p4 = *reinterpret_cast<const float4 *>(P + r * LDP + 4 * ty);
#pragma unroll
        for (int f = 0; f < NF; f++) {
            const float4 x4 = *reinterpret_cast<const float4 *>(X + r * LD + 4 * tx + 64 * f);
#pragma unroll
            for (int a = 0; a < 4; a++) {
                const float p = comp(p4, a);
                acc[a][4 * f + 0] = fmaf(p, x4.x, acc[a][4 * f + 0]);
                acc[a][4 * f + 1] = fmaf(p, x4.y, acc[a][4 * f + 1]);
                acc[a][4 * f + 2] = fmaf(p, x4.z, acc[a][4 * f + 2]);
                acc[a][4 * f + 3] = fmaf(p, x4.w, acc[a][4 * f + 3]);
            }
        }
    }
}

/* acc[RM][HD/16] (rows 4ty+a of the tile at row0, columns 4tx+64f+e) ·
 * mul → dst[row0 + r, col0 + column] (row stride `stride`) for r < valid. */
template <int HD>
static __device__ __forceinline__ void store_tile(float *dst, const float (&acc)[RM][HD / 16],
                                                  const float (&mul)[RM], size_t stride, int valid,
                                                  int ty, int tx)
{
#pragma unroll
    for (int a = 0; a < RM; a++) {
        if (4 * ty + a >= valid)
            continue;
        float *row = dst + (size_t)(4 * ty + a) * stride;
#pragma unroll
        for (int f = 0; f < HD / 64; f++)
            *reinterpret_cast<float4 *>(row + 4 * tx + 64 * f) =
                make_float4(acc[a][4 * f] * mul[a], acc[a][4 * f + 1] * mul[a],
                            acc[a][4 * f + 2] * mul[a], acc[a][4 * f + 3] * mul[a]);
    }
}

/* Grid (query tiles, H); blocks take tiles from the last one (the longest key
 * range within a sequence) so the short ones fill the tail. */
static __device__ __forceinline__ int query_tile_first_row()
{
    return (int)(gridDim.x - 1 - blockIdx.x) * TB;
}

/* out[N, QD], lse[N, H] (set). Block = (query tile, head h). */
/* (TPB, 2): for HD 128, two blocks an SM as shared memory allows (128 registers) */
template <int HD>
static __global__ void __launch_bounds__(TPB, 2)
    attention_forward_tiled(float *out, float *lse, const float *q, const float *k,
                            const float *v, const int32_t *row_first, int n, int H, int KV,
                            float scale)
{
    constexpr int LD = HD + PAD, DN = HD / 16;
    extern __shared__ float4 smem4[]; /* float4: 16-byte alignment for the float4 accesses */
    float *Qs = reinterpret_cast<float *>(smem4); /* [TB][LD] */
    float *Ks = Qs + TB * LD;                     /* [TB][LD]; P [TB][LDP] once S is done */
    float *Vs = Ks + TB * LD;                     /* [TB][LD] */
    __shared__ int rf_s[TB];

    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const int i0 = query_tile_first_row(), h = blockIdx.y, g = h / (H / KV);
    const int nq = min(TB, n - i0);
    const size_t QD = (size_t)H * HD, KD = (size_t)KV * HD;

    load_tile<HD>(Qs, q + (size_t)i0 * QD + (size_t)h * HD, QD, nq);
    if (threadIdx.x < TB)
        rf_s[threadIdx.x] = (int)threadIdx.x < nq ? row_first[i0 + threadIdx.x] : INT_MAX;
    __syncthreads();
    /* keys first .. last: every key some row of the tile attends to */
    int first = i0;
    for (int r = 0; r < nq; r++)
        first = min(first, rf_s[r]);
    first = max(first, 0);
    const int last = i0 + nq - 1;
    int rf[RM]; /* INT_MAX past N: no key passes j >= rf */
    float m[RM], l[RM], o[RM][DN];
#pragma unroll
    for (int a = 0; a < RM; a++) {
        rf[a] = rf_s[4 * ty + a];
        m[a] = -INFINITY;
        l[a] = 0.0f;
#pragma unroll
        for (int e = 0; e < DN; e++)
            o[a][e] = 0.0f;
    }

    for (int j0 = first; j0 <= last; j0 += TB) {
        const int nk = min(TB, n - j0);
        load_tile<HD>(Ks, k + (size_t)j0 * KD + (size_t)g * HD, KD, nk);
        load_tile<HD>(Vs, v + (size_t)j0 * KD + (size_t)g * HD, KD, nk);
        __syncthreads();
        float s[RM][CN] = {};
        tile_dot<HD>(s, Qs, Ks, ty, tx);
#pragma unroll
        for (int a = 0; a < RM; a++) {
            const int i = i0 + 4 * ty + a;
            float mx = -INFINITY;
#pragma unroll
            for (int j = 0; j < CN; j++) {
                const int jj = j0 + tx + 16 * j;
                s[a][j] = jj >= rf[a] && jj <= i ? s[a][j] * scale : -INFINITY;
                mx = fmaxf(mx, s[a][j]);
            }
            const float mn = fmaxf(m[a], half_max(mx));
            /* mn = −inf: no key of row i so far (a tile before its sequence,
             * or a row past N); base 0 keeps e^(−inf − base) = 0, not NaN */
            const float base = mn == -INFINITY ? 0.0f : mn;
            const float c = expf(m[a] - base);
            float sum = 0.0f;
#pragma unroll
            for (int j = 0; j < CN; j++) {
                s[a][j] = expf(s[a][j] - base);
                sum += s[a][j];
            }
            l[a] = l[a] * c + half_sum(sum);
            m[a] = mn;
#pragma unroll
            for (int e = 0; e < DN; e++)
                o[a][e] *= c;
        }
        __syncthreads(); /* every thread is done reading Ks: P takes its place */
        float *Ps = Ks;
#pragma unroll
        for (int a = 0; a < RM; a++)
#pragma unroll
            for (int j = 0; j < CN; j++)
                Ps[(4 * ty + a) * LDP + tx + 16 * j] = s[a][j];
        __syncthreads();
        tile_pv<HD>(o, Ps, Vs, ty, tx);
        __syncthreads(); /* before the next tile overwrites Ks (P) and Vs */
    }

    /* l > 0 on every row < N (key i itself); the guard keeps rows past N finite */
    float inv[RM];
#pragma unroll
    for (int a = 0; a < RM; a++)
        inv[a] = l[a] > 0.0f ? 1.0f / l[a] : 0.0f;
    store_tile<HD>(out + (size_t)i0 * QD + (size_t)h * HD, o, inv, QD, nq, ty, tx);
    if (tx == 0) {
#pragma unroll
        for (int a = 0; a < RM; a++)
            if (4 * ty + a < nq)
                lse[(size_t)(i0 + 4 * ty + a) * H + h] = m[a] + logf(l[a]);
    }
}

/* dq[N, QD] (set). Block = (query tile, head h), the forward's key tiles. */
template <int HD>
static __global__ void __launch_bounds__(TPB)
    attention_backward_dq_tiled(float *dq, const float *dout, const float *lse,
                                const float *delta, const float *q, const float *k,
                                const float *v, const int32_t *row_first, int n, int H, int KV,
                                float scale)
{
    constexpr int LD = HD + PAD, DN = HD / 16;
    extern __shared__ float4 smem4[];
    float *Qs = reinterpret_cast<float *>(smem4); /* [TB][LD] */
    float *dOs = Qs + TB * LD;                    /* [TB][LD] */
    float *Ks = dOs + TB * LD;                    /* [TB][LD] */
    float *Vs = Ks + TB * LD;                     /* [TB][LD]; dS [TB][LDP] once dP is done */
    __shared__ int rf_s[TB];

    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const int i0 = query_tile_first_row(), h = blockIdx.y, g = h / (H / KV);
    const int nq = min(TB, n - i0);
    const size_t QD = (size_t)H * HD, KD = (size_t)KV * HD;
    const size_t qoff = (size_t)i0 * QD + (size_t)h * HD;

    load_tile<HD>(Qs, q + qoff, QD, nq);
    load_tile<HD>(dOs, dout + qoff, QD, nq);
    if (threadIdx.x < TB)
        rf_s[threadIdx.x] = (int)threadIdx.x < nq ? row_first[i0 + threadIdx.x] : INT_MAX;
    __syncthreads();
    int first = i0;
    for (int r = 0; r < nq; r++)
        first = min(first, rf_s[r]);
    first = max(first, 0);
    const int last = i0 + nq - 1;
    int rf[RM];
    float lse_r[RM], delta_r[RM], acc[RM][DN];
#pragma unroll
    for (int a = 0; a < RM; a++) {
        const int r = 4 * ty + a;
        rf[a] = rf_s[r];
        lse_r[a] = r < nq ? lse[(size_t)(i0 + r) * H + h] : 0.0f;
        delta_r[a] = r < nq ? delta[(size_t)(i0 + r) * H + h] : 0.0f;
#pragma unroll
        for (int e = 0; e < DN; e++)
            acc[a][e] = 0.0f;
    }

    for (int j0 = first; j0 <= last; j0 += TB) {
        const int nk = min(TB, n - j0);
        load_tile<HD>(Ks, k + (size_t)j0 * KD + (size_t)g * HD, KD, nk);
        load_tile<HD>(Vs, v + (size_t)j0 * KD + (size_t)g * HD, KD, nk);
        __syncthreads();
        float s[RM][CN] = {}, dp[RM][CN] = {};
        tile_dot<HD>(s, Qs, Ks, ty, tx);
        tile_dot<HD>(dp, dOs, Vs, ty, tx);
        __syncthreads(); /* every thread is done reading Vs: dS takes its place */
        float *dSs = Vs;
#pragma unroll
        for (int a = 0; a < RM; a++) {
            const int i = i0 + 4 * ty + a;
#pragma unroll
            for (int j = 0; j < CN; j++) {
                const int jj = j0 + tx + 16 * j;
                float ds = 0.0f;
                if (jj >= rf[a] && jj <= i)
                    ds = expf(s[a][j] * scale - lse_r[a]) * (dp[a][j] - delta_r[a]);
                dSs[(4 * ty + a) * LDP + tx + 16 * j] = ds;
            }
        }
        __syncthreads();
        tile_pv<HD>(acc, dSs, Ks, ty, tx);
        __syncthreads(); /* before the next tile overwrites Ks and Vs (dS) */
    }
    const float mul[RM] = {scale, scale, scale, scale};
    store_tile<HD>(dq + qoff, acc, mul, QD, nq, ty, tx);
}

/* dk, dv [N, KD] (set). Block = (key tile j0 .. j0+63, kv head g), over the
 * query heads of g's group and the query tiles from j0 to the last row that
 * reads a key of the tile. */
template <int HD>
static __global__ void __launch_bounds__(TPB)
    attention_backward_dkdv_tiled(float *dk, float *dv, const float *dout, const float *lse,
                                  const float *delta, const float *q, const float *k,
                                  const float *v, const int32_t *row_end, int n, int H, int KV,
                                  float scale)
{
    constexpr int LD = HD + PAD, DN = HD / 16;
    extern __shared__ float4 smem4[];
    float *Ks = reinterpret_cast<float *>(smem4); /* [TB][LD], key tile */
    float *Vs = Ks + TB * LD;                     /* [TB][LD] */
    float *Qs = Vs + TB * LD;                     /* [TB][LD], query tile */
    float *dOs = Qs + TB * LD;                    /* [TB][LD] */
    float *Ps = dOs + TB * LD;                    /* [TB][LDP] */
    float *dSs = Ps + TB * LDP;                   /* [TB][LDP] */
    __shared__ int re_s[TB];
    __shared__ float lse_s[TB], delta_s[TB];

    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const int j0 = (int)blockIdx.x * TB, g = blockIdx.y, group = H / KV;
    const int nk = min(TB, n - j0);
    const size_t QD = (size_t)H * HD, KD = (size_t)KV * HD;
    const size_t koff = (size_t)j0 * KD + (size_t)g * HD;

    load_tile<HD>(Ks, k + koff, KD, nk);
    load_tile<HD>(Vs, v + koff, KD, nk);
    if (threadIdx.x < TB)
        re_s[threadIdx.x] = (int)threadIdx.x < nk ? row_end[j0 + threadIdx.x] : 0;
    __syncthreads();
    /* query rows j0 .. end−1 read some key of the tile (i >= j) */
    int end = 0;
    for (int c = 0; c < nk; c++)
        end = max(end, re_s[c]);
    end = min(end, n);
    int col[CN], re[CN]; /* re = 0 past N: no row passes i < re */
#pragma unroll
    for (int j = 0; j < CN; j++) {
        col[j] = j0 + tx + 16 * j;
        re[j] = re_s[tx + 16 * j];
    }
    float dka[4][DN], dva[4][DN];
#pragma unroll
    for (int a = 0; a < 4; a++)
#pragma unroll
        for (int e = 0; e < DN; e++)
            dka[a][e] = dva[a][e] = 0.0f;

    for (int h = g * group; h < (g + 1) * group; h++) {
        for (int i0 = j0; i0 < end; i0 += TB) {
            const int nq = min(TB, n - i0);
            const size_t qoff = (size_t)i0 * QD + (size_t)h * HD;
            load_tile<HD>(Qs, q + qoff, QD, nq);
            load_tile<HD>(dOs, dout + qoff, QD, nq);
            if (threadIdx.x < TB) {
                const bool in = (int)threadIdx.x < nq;
                lse_s[threadIdx.x] = in ? lse[(size_t)(i0 + threadIdx.x) * H + h] : 0.0f;
                delta_s[threadIdx.x] = in ? delta[(size_t)(i0 + threadIdx.x) * H + h] : 0.0f;
            }
            __syncthreads();
            float s[RM][CN] = {}, dp[RM][CN] = {};
            tile_dot<HD>(s, Qs, Ks, ty, tx);
            tile_dot<HD>(dp, dOs, Vs, ty, tx);
#pragma unroll
            for (int a = 0; a < RM; a++) {
                const int r = 4 * ty + a, i = i0 + r;
                const float lse_i = lse_s[r], delta_i = delta_s[r];
#pragma unroll
                for (int j = 0; j < CN; j++) {
                    float p = 0.0f, ds = 0.0f;
                    if (col[j] <= i && i < re[j]) {
                        p = expf(s[a][j] * scale - lse_i);
                        ds = p * (dp[a][j] - delta_i);
                    }
                    Ps[r * LDP + tx + 16 * j] = p;
                    dSs[r * LDP + tx + 16 * j] = ds;
                }
            }
            __syncthreads();
            tile_ptx<HD>(dva, Ps, dOs, ty, tx);
            tile_ptx<HD>(dka, dSs, Qs, ty, tx);
            __syncthreads(); /* before the next query tile overwrites Qs, dOs, P, dS */
        }
    }
    const float one[RM] = {1.0f, 1.0f, 1.0f, 1.0f}, sc[RM] = {scale, scale, scale, scale};
    store_tile<HD>(dk + koff, dka, sc, KD, nk, ty, tx);
    store_tile<HD>(dv + koff, dva, one, KD, nk, ty, tx);
}

/* The tiled path's conditions: HD 64 or 128, rows on 16-byte boundaries
 * (float4 loads), and a device that gives `kern` its `smem` bytes (set here:
 * past 48 KB a kernel must ask). false: the row path runs instead. */
static bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

template <typename Kern> static bool allow_smem(Kern *kern, size_t smem)
{
    int dev = 0, optin = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) !=
            cudaSuccess) {
        (void)cudaGetLastError(); /* the row path's launch reports what is wrong */
        return false;
    }
    if (smem + STATIC_SMEM_MAX > (size_t)optin)
        return false;
    if (cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) !=
        cudaSuccess) {
        (void)cudaGetLastError();
        return false;
    }
    return true;
}

unsigned tiles_for(int n) { return (unsigned)((n + TB - 1) / TB); }

template <int HD>
bool forward_tiled(cudaStream_t st, float *out, float *lse, const float *q, const float *k,
                   const float *v, const int32_t *row_first, int n, int h, int kv, float scale)
{
    const size_t smem = fwd_smem(HD);
    if (!allow_smem(attention_forward_tiled<HD>, smem))
        return false;
    attention_forward_tiled<HD><<<dim3(tiles_for(n), (unsigned)h), TPB, smem, st>>>(
        out, lse, q, k, v, row_first, n, h, kv, scale);
    return true;
}

template <int HD>
bool backward_dq_tiled(cudaStream_t st, float *dq, const float *dout, const float *lse,
                       const float *delta, const float *q, const float *k, const float *v,
                       const int32_t *row_first, int n, int h, int kv, float scale)
{
    const size_t smem = dq_smem(HD);
    if (!allow_smem(attention_backward_dq_tiled<HD>, smem))
        return false;
    attention_backward_dq_tiled<HD><<<dim3(tiles_for(n), (unsigned)h), TPB, smem, st>>>(
        dq, dout, lse, delta, q, k, v, row_first, n, h, kv, scale);
    return true;
}

template <int HD>
bool backward_dkdv_tiled(cudaStream_t st, float *dk, float *dv, const float *dout,
                         const float *lse, const float *delta, const float *q, const float *k,
                         const float *v, const int32_t *row_end, int n, int h, int kv,
                         float scale)
{
    const size_t smem = dkdv_smem(HD);
    if (!allow_smem(attention_backward_dkdv_tiled<HD>, smem))
        return false;
    attention_backward_dkdv_tiled<HD><<<dim3(tiles_for(n), (unsigned)kv), TPB, smem, st>>>(
        dk, dv, dout, lse, delta, q, k, v, row_end, n, h, kv, scale);
    return true;
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
    const bool tiled = aligned16(out) && aligned16(q) && aligned16(k) && aligned16(v);
    if (tiled && hd == 64 && forward_tiled<64>(st, out, lse, q, k, v, row_first, n, h, kv, scale))
        return cudaGetLastError();
    if (tiled && hd == 128 &&
        forward_tiled<128>(st, out, lse, q, k, v, row_first, n, h, kv, scale))
        return cudaGetLastError();
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
    const bool tiled =
        aligned16(dq) && aligned16(dout) && aligned16(q) && aligned16(k) && aligned16(v);
    if (tiled && hd == 64 &&
        backward_dq_tiled<64>(st, dq, dout, lse, delta, q, k, v, row_first, n, h, kv, scale))
        return cudaGetLastError();
    if (tiled && hd == 128 &&
        backward_dq_tiled<128>(st, dq, dout, lse, delta, q, k, v, row_first, n, h, kv, scale))
        return cudaGetLastError();
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
    const bool tiled = aligned16(dk) && aligned16(dv) && aligned16(dout) && aligned16(q) &&
                       aligned16(k) && aligned16(v);
    if (tiled && hd == 64 &&
        backward_dkdv_tiled<64>(st, dk, dv, dout, lse, delta, q, k, v, row_end, n, h, kv, scale))
        return cudaGetLastError();
    if (tiled && hd == 128 &&
        backward_dkdv_tiled<128>(st, dk, dv, dout, lse, delta, q, k, v, row_end, n, h, kv, scale))
        return cudaGetLastError();
    const unsigned grid = blocks_for((long long)n * kv);
    LAUNCH_NI(hd, attention_backward_dkdv_kernel, grid, st, dk, dv, dout, lse, delta, q, k, v,
              row_end, n, h, kv, hd, scale);
    return cudaGetLastError();
}
