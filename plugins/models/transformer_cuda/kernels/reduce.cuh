/*
 * reduce.cuh: the sums and maxima over a warp and over a block that the
 * kernels share, and the online-softmax attention of one query over a run
 * of keys (the forward pass and decoding), with LAUNCH_NI, its launch over
 * the head size. Device code only: included by the .cu files, never by C.
 *
 * Every reduction is the same xor butterfly, so a sum computed in one kernel
 * and recomputed in another (attention's forward and backward scores) comes
 * out bit-identical.
 */
#ifndef TERN_CUDA_REDUCE_CUH
#define TERN_CUDA_REDUCE_CUH

#include <math.h>

#define REDUCE_WARP 32
#define REDUCE_FULL_MASK 0xffffffffu

/* dst[j] += Σ_y part[y·d + j] over y = 0 .. parts−1, in that order: the
 * second pass of a column sum whose first pass wrote one row of partial
 * sums per block of rows (set, never atomically added), so the result does
 * not depend on scheduling. One thread per column. */
static __global__ void column_parts_sum_kernel(float *__restrict__ dst,
                                               const float *__restrict__ part, int parts, int d)
{
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= d)
        return;
    float acc = 0;
    for (int y = 0; y < parts; y++)
        acc += part[(size_t)y * d + j];
    dst[j] += acc;
}

/* Sum over the warp; every lane gets the total. */
template <typename T> static __device__ __forceinline__ T warp_sum(T v)
{
#pragma unroll
    for (int o = REDUCE_WARP / 2; o > 0; o >>= 1)
        v += __shfl_xor_sync(REDUCE_FULL_MASK, v, o);
    return v;
}

/* Two float sums at once (independent shuffles overlap), same tree as warp_sum. */
static __device__ __forceinline__ void warp_sum2(float &a, float &b)
{
#pragma unroll
    for (int o = REDUCE_WARP / 2; o > 0; o >>= 1) {
        a += __shfl_xor_sync(REDUCE_FULL_MASK, a, o);
        b += __shfl_xor_sync(REDUCE_FULL_MASK, b, o);
    }
}

static __device__ __forceinline__ float warp_max(float v)
{
#pragma unroll
    for (int o = REDUCE_WARP / 2; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(REDUCE_FULL_MASK, v, o));
    return v;
}

/* Σ of v over the block (blockDim.x a multiple of 32, at most 1024); every
 * thread gets the same total. sh: 32 slots of shared memory. Ends with a
 * barrier, so sh may be reused and every read the threads made before the
 * call is complete (what in-place kernels rely on). */
template <typename T> static __device__ T block_sum(T v, T *sh)
{
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = warp_sum(v);
    if (lane == 0)
        sh[wid] = v;
    __syncthreads();
    v = lane < nw ? sh[lane] : T(0);
    v = warp_sum(v);
    __syncthreads();
    return v;
}

/* max of v over the block, as block_sum. */
static __device__ float block_max(float v, float *sh)
{
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = warp_max(v);
    if (lane == 0)
        sh[wid] = v;
    __syncthreads();
    v = lane < nw ? sh[lane] : -INFINITY;
    v = warp_max(v);
    __syncthreads();
    return v;
}

/* One warp attends query qv (lane t holds elements t, t + 32, ... of HD:
 * NI of them) over keys j = first .. last at kb + j·KD, values at
 * vb + j·KD, with an online softmax:
 *   s = q·k_j · scale,  m' = max(m, s),  c = e^(m − m'),
 *   l ← l c + e^(s − m'),  acc ← acc c + e^(s − m') v_j,  m ← m'
 * acc stays unnormalised (out = acc / l); m starts at −inf and l at 0 (so c
 * is 0 at the first key). */
template <int NI>
static __device__ __forceinline__ void attend_keys(const float (&qv)[NI], const float *kb,
                                                   const float *vb, size_t KD, int HD, int first,
                                                   int last, int lane, float scale,
                                                   float (&acc)[NI], float &m, float &l)
{
    for (int j = first; j <= last; j++) {
        const float *kj = kb + (size_t)j * KD, *vj = vb + (size_t)j * KD;
        float part = 0.0f;
#pragma unroll
        for (int i = 0; i < NI; i++) {
            const int d = i * REDUCE_WARP + lane;
            if (d < HD)
                part += qv[i] * kj[d];
        }
        const float s = warp_sum(part) * scale;
        const float mn = fmaxf(m, s);
        const float c = expf(m - mn);
        const float e = expf(s - mn);
        l = l * c + e;
#pragma unroll
        for (int i = 0; i < NI; i++) {
            const int d = i * REDUCE_WARP + lane;
            if (d < HD)
                acc[i] = acc[i] * c + e * vj[d];
        }
        m = mn;
    }
}

/* Launch KERNEL<NI> (attend_keys' NI) with NI = ceil(hd / 32) in 1..8 (hd
 * checked beforehand), BLOCK threads a block: BLOCK is the including file's. */
#define LAUNCH_NI(hd, KERNEL, grid, st, ...)                                                      \
    switch (((hd) + REDUCE_WARP - 1) / REDUCE_WARP) {                                              \
    case 1: KERNEL<1><<<(grid), BLOCK, 0, (st)>>>(__VA_ARGS__); break;                            \
    case 2: KERNEL<2><<<(grid), BLOCK, 0, (st)>>>(__VA_ARGS__); break;                            \
    case 3: KERNEL<3><<<(grid), BLOCK, 0, (st)>>>(__VA_ARGS__); break;                            \
    case 4: KERNEL<4><<<(grid), BLOCK, 0, (st)>>>(__VA_ARGS__); break;                            \
    case 5: KERNEL<5><<<(grid), BLOCK, 0, (st)>>>(__VA_ARGS__); break;                            \
    case 6: KERNEL<6><<<(grid), BLOCK, 0, (st)>>>(__VA_ARGS__); break;                            \
    case 7: KERNEL<7><<<(grid), BLOCK, 0, (st)>>>(__VA_ARGS__); break;                            \
    default: KERNEL<8><<<(grid), BLOCK, 0, (st)>>>(__VA_ARGS__); break;                           \
    }

#endif
