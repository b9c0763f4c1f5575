/* rope_kernels.cu: rotary position embedding, Hugging Face rotate_half
 * layout (as ../../transformer/layers/rope.c), in place.
 *
 * x [N, nh·HD]; row r at position pos[r]; cos_t, sin_t [P, HD/2]. In head h
 * of row r, with half = HD/2 and i < half, the pair (a, b) = (x_i, x_{i+half})
 * turns by the angle of (pos[r], i):
 *   a' = a cos − b sin·sign
 *   b' = b cos + a sin·sign
 * sign = +1 forward; −1 backward (a rotation's Jacobian is its transpose, so
 * the gradient turns back by −angle).
 *
 * One thread per pair (N·nh·half of them), grid-stride, 64-bit indices;
 * each thread reads and writes only its own two elements, so in place is
 * safe.
 */
#include "kernels/kernels.h"

#define ROPE_THREADS 256
#define ROPE_MAX_BLOCKS 65536

static __global__ void __launch_bounds__(ROPE_THREADS)
    rope_kernel(float *__restrict__ x, const int32_t *__restrict__ pos,
                const float *__restrict__ cos_t, const float *__restrict__ sin_t, size_t pairs,
                int nh, int hd, float sign)
{
    const size_t half = (size_t)(hd / 2);
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t p = (size_t)blockIdx.x * blockDim.x + threadIdx.x; p < pairs; p += stride) {
        const size_t rh = p / half;            /* r·nh + h */
        const size_t i = p - rh * half;        /* index within the half head */
        const size_t r = rh / (size_t)nh;
        const size_t t = (size_t)pos[r] * half + i;
        const float c = cos_t[t], sn = sign * sin_t[t];
        float *v = x + rh * (size_t)hd;
        const float a = v[i], b = v[i + half];
        v[i] = a * c - b * sn;
        v[i + half] = b * c + a * sn;
    }
}

cudaError_t k_rope(cudaStream_t st, float *x, const int32_t *pos, const float *cos_t,
                   const float *sin_t, int n, int nh, int hd, int sign)
{
    if (n <= 0 || nh <= 0 || hd / 2 <= 0)
        return cudaSuccess;
    const size_t pairs = (size_t)n * nh * (size_t)(hd / 2);
    size_t blocks = (pairs + ROPE_THREADS - 1) / ROPE_THREADS;
    if (blocks > ROPE_MAX_BLOCKS)
        blocks = ROPE_MAX_BLOCKS;
    rope_kernel<<<(unsigned)blocks, ROPE_THREADS, 0, st>>>(x, pos, cos_t, sin_t, pairs, nh, hd,
                                                          sign < 0 ? -1.0f : 1.0f);
    return cudaGetLastError();
}
