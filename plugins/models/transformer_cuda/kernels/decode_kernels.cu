/*
 * decode_kernels.cu: the KV cache of generation and attention of one new
 * token per row against it (as ../../transformer/generation/generate.c,
 * row_attention).
 *
 * Cache (k_kv_cache, kernels.h): the prompts' rows once, pk, pv [L, R, KD],
 * shared by their samples, and each slot's own rows, kc, vc [slots, L, Pn,
 * KD]. Decode rows: q, out [B, QD] (QD = H·HD); k, v [B, KD]; row r is slot
 * row_slot[r] at position pos[r].
 *
 * Attention of row r, query head h, kv head g = h / (H/KV), over its
 * prompt's rows t = 0 .. plen − 1 and then its own t = plen .. pos[r] (its
 * own k, v appended first):
 *   s_t = q_r·k_t / sqrt(HD),  out_r = Σ_t softmax(s)_t v_t
 * with the same online softmax as the training forward (attention_kernels.cu):
 *   m' = max(m, s_t),  c = e^(m − m'),  l ← l c + e^(s_t − m'),
 *   acc ← acc c + e^(s_t − m') v_t,  m ← m';   out = acc / l.
 * The two parts run one after the other through the same recurrence, so the
 * result is the bits of one cache holding both.
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

/* Element idx of k[B, KD] (row r = idx / KD, column c) to its slot's own
 * rows. A position outside them is skipped rather than written out of bounds. */
static __global__ void kv_append_kernel(k_kv_cache c, const float *k, const float *v,
                                        const int32_t *row_slot, const int32_t *pos, int b, int l)
{
    const size_t kd = (size_t)c.kd, total = (size_t)b * kd;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += stride) {
        const size_t r = idx / kd, col = idx % kd;
        const int slot = row_slot[r], p = pos[r] - c.plen[slot];
        if (p < 0 || p >= c.own_rows)
            continue;
        const size_t dst = (((size_t)slot * c.n_layers + l) * c.own_rows + p) * kd + col;
        c.kc[dst] = k[idx];
        c.vc[dst] = v[idx];
    }
}

/* out[B, QD] (set). Warp w = (row r, head h). NI = ceil(HD/32) elements per lane. */
template <int NI>
static __global__ void __launch_bounds__(BLOCK)
    decode_attention_kernel(float *out, const float *q, k_kv_cache c, const int32_t *row_slot,
                            const int32_t *pos, int b, int l, int H, int KV, int HD, float scale)
{
    const long long w = (long long)blockIdx.x * WARPS_PER_BLOCK + threadIdx.x / WARP;
    const int lane = threadIdx.x % WARP;
    if (w >= (long long)b * H)
        return; /* whole warp: w is uniform across it */
    const int r = (int)(w / H), h = (int)(w % H), g = h / (H / KV), slot = row_slot[r];
    const size_t QD = (size_t)H * HD, KD = (size_t)c.kd;
    const int plen = c.plen[slot];
    /* the prompt's rows, then the slot's own up to pos (never past the cache) */
    const size_t p0 = ((size_t)l * c.prompt_rows + (size_t)c.pstart[slot]) * KD + (size_t)g * HD;
    const size_t o0 = ((size_t)slot * c.n_layers + l) * c.own_rows * KD + (size_t)g * HD;
    const int last_prompt = pos[r] < plen ? pos[r] : plen - 1;
    int last_own = pos[r] - plen;
    last_own = last_own < c.own_rows ? last_own : c.own_rows - 1;
    const size_t qoff = (size_t)r * QD + (size_t)h * HD;

    float qv[NI], acc[NI];
#pragma unroll
    for (int i = 0; i < NI; i++) {
        const int d = i * WARP + lane;
        qv[i] = d < HD ? q[qoff + d] : 0.0f;
        acc[i] = 0.0f;
    }
    float m = -INFINITY, lsum = 0.0f;
    attend_keys<NI>(qv, c.pk + p0, c.pv + p0, KD, HD, 0, last_prompt, lane, scale, acc, m, lsum);
    attend_keys<NI>(qv, c.kc + o0, c.vc + o0, KD, HD, 0, last_own, lane, scale, acc, m, lsum);
    const float inv = lsum > 0.0f ? 1.0f / lsum : 0.0f; /* empty range (pos < 0): 0 */
#pragma unroll
    for (int i = 0; i < NI; i++) {
        const int d = i * WARP + lane;
        if (d < HD)
            out[qoff + d] = acc[i] * inv;
    }
}

} // namespace

static bool cache_ok(const k_kv_cache *c, int l)
{
    return c && c->kd > 0 && c->n_layers > 0 && l >= 0 && l < c->n_layers && c->own_rows > 0 &&
           c->prompt_rows > 0;
}

extern "C" cudaError_t k_kv_append(cudaStream_t st, const k_kv_cache *c, const float *k,
                                   const float *v, const int32_t *row_slot, const int32_t *pos,
                                   int b, int l)
{
    if (b == 0)
        return cudaSuccess;
    if (b < 0 || !cache_ok(c, l))
        return cudaErrorInvalidValue;
    kv_append_kernel<<<copy_grid((size_t)b * c->kd), COPY_BLOCK, 0, st>>>(*c, k, v, row_slot,
                                                                          pos, b, l);
    return cudaGetLastError();
}

extern "C" cudaError_t k_decode_attention(cudaStream_t st, float *out, const float *q,
                                          const k_kv_cache *c, const int32_t *row_slot,
                                          const int32_t *pos, int b, int l, int h, int kv, int hd)
{
    if (b == 0)
        return cudaSuccess;
    if (b < 0 || !cache_ok(c, l) || h <= 0 || kv <= 0 || h % kv != 0 || hd <= 0 ||
        hd > MAX_HD || c->kd != kv * hd)
        return cudaErrorInvalidValue;
    const float scale = 1.0f / sqrtf((float)hd);
    const unsigned grid = (unsigned)(((long long)b * h + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK);
    LAUNCH_NI(hd, decode_attention_kernel, grid, st, out, q, *c, row_slot, pos, b, l, h, kv, hd,
              scale);
    return cudaGetLastError();
}
