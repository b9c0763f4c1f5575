/*
 * test_cuda_attention.c: the attention kernels of the GPU plugin
 * (plugins/models/transformer_cuda/kernels/attention_kernels.cu) against a
 * plain double-precision reference computed here, on random data (fixed
 * seed) packed as sequences of uneven lengths, so that 64-row tiles straddle
 * sequences, one sequence is a single row and N ends mid-tile:
 *   - forward out and lse, then dq, dk, dv from a random dout (delta from
 *     k_attention_delta), for the tiled path (HD 64, 128) with grouped KV
 *     heads (H 8, KV 2) and without (H = KV = 4), and the row path (HD 32);
 *   - rows past N are neither read nor written: the inputs' tail rows are
 *     NaN (a read of one would reach an output), the outputs' tails keep
 *     their fill, and every output element is written (the fill is NaN);
 *   - the backward is deterministic (no atomics): two runs, same bits.
 * Error: max |gpu − ref| / max |ref| over each output (lse: per element,
 * relative to max(|ref|, 1)), under 1e-4.
 * Without a GPU these report "skipped: no GPU".
 */
#include <criterion/criterion.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"

#define TOL 1e-4
#define TAIL 64 /* rows past N in every buffer */

static int gpu_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess)
        return 0;
    return n;
}

static void need_gpu(void)
{
    if (gpu_count() == 0) {
        /* Criterion keeps skips quiet: say which and why (the exit code,
         * support/skip_exit.c, tells ctest) */
        fprintf(stderr, "%s: skipped: no GPU\n", criterion_current_test->name);
        cr_skip_test("skipped: no GPU");
    }
}

#define CU(x)                                                                                  \
    do {                                                                                       \
        const cudaError_t e_ = (x);                                                            \
        cr_assert_eq(e_, cudaSuccess, "%s: %s", #x, cudaGetErrorString(e_));                   \
    } while (0)

/* splitmix64: the same numbers on every machine */
static uint64_t rng_state;
static double uniform(double lo, double hi)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return lo + (hi - lo) * (double)(z >> 11) / 9007199254740992.0;
}

/* One problem: n rows of nseq packed sequences, H query heads, KV kv heads.
 * Host arrays hold n + TAIL rows; rows >= n are NaN. */
typedef struct {
    int n, h, kv, hd;
    float *q, *k, *v, *dout;  /* [n+TAIL, H·HD], [n+TAIL, KV·HD] ×2, [n+TAIL, H·HD] */
    int32_t *first, *end;     /* [n] */
    double *out, *lse;        /* reference: [n, H·HD], [n, H] */
    double *dq, *dk, *dv;     /* [n, H·HD], [n, KV·HD] ×2 */
} problem;

static float *random_rows(int n, int width, double amp)
{
    float *x = malloc((size_t)(n + TAIL) * width * sizeof *x);
    cr_assert(x);
    for (size_t i = 0; i < (size_t)n * width; i++)
        x[i] = (float)uniform(-amp, amp);
    for (size_t i = (size_t)n * width; i < (size_t)(n + TAIL) * width; i++)
        x[i] = NAN;
    return x;
}

static void make_problem(problem *p, const int *lens, int nseq, int h, int kv, int hd)
{
    memset(p, 0, sizeof *p);
    p->h = h, p->kv = kv, p->hd = hd;
    for (int s = 0; s < nseq; s++)
        p->n += lens[s];
    const int n = p->n, qd = h * hd, kd = kv * hd;
    rng_state = 0x5eed + (uint64_t)(hd * 1000 + h * 10 + kv);
    /* |q|, |k| up to 2: scores of spread ~1.3, softmaxes far from flat */
    p->q = random_rows(n, qd, 2.0);
    p->k = random_rows(n, kd, 2.0);
    p->v = random_rows(n, kd, 1.0);
    p->dout = random_rows(n, qd, 1.0);
    p->first = malloc((size_t)n * sizeof *p->first);
    p->end = malloc((size_t)n * sizeof *p->end);
    cr_assert(p->first && p->end);
    for (int s = 0, r0 = 0; s < nseq; r0 += lens[s], s++)
        for (int i = r0; i < r0 + lens[s]; i++)
            p->first[i] = r0, p->end[i] = r0 + lens[s];
}

/* The reference, in double, straight from the definitions:
 *   s_ij = q_i·k_j / sqrt(HD), j = first[i] .. i;  p_ij = softmax_j(s_ij)
 *   out_i = Σ_j p_ij v_j;  lse_i = log Σ_j e^(s_ij)
 *   dp_ij = dout_i·v_j;  ds_ij = p_ij (dp_ij − Σ_j' p_ij' dp_ij')
 *   dq_i = Σ_j ds_ij k_j / sqrt(HD);  dk_j = Σ_(i,h) ds_ij q_i / sqrt(HD);
 *   dv_j = Σ_(i,h) p_ij dout_i */
static void reference(problem *p)
{
    const int n = p->n, H = p->h, KV = p->kv, HD = p->hd, qd = H * HD, kd = KV * HD;
    const double scale = 1.0 / sqrt((double)HD);
    p->out = calloc((size_t)n * qd, sizeof(double));
    p->lse = calloc((size_t)n * H, sizeof(double));
    p->dq = calloc((size_t)n * qd, sizeof(double));
    p->dk = calloc((size_t)n * kd, sizeof(double));
    p->dv = calloc((size_t)n * kd, sizeof(double));
    double *s = malloc((size_t)n * sizeof *s), *dp = malloc((size_t)n * sizeof *dp);
    cr_assert(p->out && p->lse && p->dq && p->dk && p->dv && s && dp);
    for (int i = 0; i < n; i++)
        for (int hh = 0; hh < H; hh++) {
            const int g = hh / (H / KV), j0 = p->first[i];
            const float *qi = p->q + (size_t)i * qd + (size_t)hh * HD;
            const float *doi = p->dout + (size_t)i * qd + (size_t)hh * HD;
            double mx = -INFINITY, sum = 0, delta = 0;
            for (int j = j0; j <= i; j++) {
                const float *kj = p->k + (size_t)j * kd + (size_t)g * HD;
                const float *vj = p->v + (size_t)j * kd + (size_t)g * HD;
                double a = 0, b = 0;
                for (int d = 0; d < HD; d++) {
                    a += (double)qi[d] * kj[d];
                    b += (double)doi[d] * vj[d];
                }
                s[j] = a * scale, dp[j] = b;
                mx = fmax(mx, s[j]);
            }
            for (int j = j0; j <= i; j++)
                sum += exp(s[j] - mx);
            p->lse[(size_t)i * H + hh] = mx + log(sum);
            double *oi = p->out + (size_t)i * qd + (size_t)hh * HD;
            for (int j = j0; j <= i; j++) {
                const double pj = exp(s[j] - mx) / sum;
                const float *vj = p->v + (size_t)j * kd + (size_t)g * HD;
                for (int d = 0; d < HD; d++)
                    oi[d] += pj * vj[d];
                delta += pj * dp[j];
            }
            double *dqi = p->dq + (size_t)i * qd + (size_t)hh * HD;
            for (int j = j0; j <= i; j++) {
                const double pj = exp(s[j] - mx) / sum, ds = pj * (dp[j] - delta);
                const size_t ko = (size_t)j * kd + (size_t)g * HD;
                for (int d = 0; d < HD; d++) {
                    dqi[d] += ds * p->k[ko + d] * scale;
                    p->dk[ko + d] += ds * qi[d] * scale;
                    p->dv[ko + d] += pj * doi[d];
                }
            }
        }
    free(s);
    free(dp);
}

/* max |got − want| / max |want| over count elements; NaN in got: +inf */
static double rel_err(const float *got, const double *want, size_t count)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < count; i++) {
        const double e = fabs((double)got[i] - want[i]);
        if (isnan(e))
            return INFINITY;
        num = fmax(num, e);
        den = fmax(den, fabs(want[i]));
    }
    return den > 0 ? num / den : num;
}

/* Each outputs' device buffer is filled with 0xff bytes (NaN) before the run. */
static int tail_intact(const float *host_row_n, size_t count)
{
    const unsigned char *b = (const unsigned char *)host_row_n;
    for (size_t i = 0; i < count * sizeof(float); i++)
        if (b[i] != 0xff)
            return 0;
    return 1;
}

static float *to_device(const void *src, size_t bytes)
{
    void *d = NULL;
    CU(cudaMalloc(&d, bytes));
    CU(cudaMemcpy(d, src, bytes, cudaMemcpyHostToDevice));
    return d;
}

static float *filled(size_t bytes)
{
    void *d = NULL;
    CU(cudaMalloc(&d, bytes));
    CU(cudaMemset(d, 0xff, bytes));
    return d;
}

static float *to_host(const float *d, size_t count)
{
    float *h = malloc(count * sizeof *h);
    cr_assert(h);
    CU(cudaMemcpy(h, d, count * sizeof *h, cudaMemcpyDeviceToHost));
    return h;
}

static void check(const int *lens, int nseq, int h, int kv, int hd)
{
    need_gpu();
    problem p;
    make_problem(&p, lens, nseq, h, kv, hd);
    reference(&p);
    const int n = p.n, qd = h * hd, kd = kv * hd;
    const size_t QB = (size_t)(n + TAIL) * qd * sizeof(float);
    const size_t KB = (size_t)(n + TAIL) * kd * sizeof(float);
    const size_t HB = (size_t)(n + TAIL) * h * sizeof(float);

    float *q = to_device(p.q, QB), *k = to_device(p.k, KB), *v = to_device(p.v, KB);
    float *dout = to_device(p.dout, QB);
    int32_t *first = (int32_t *)to_device(p.first, (size_t)n * sizeof(int32_t));
    int32_t *end = (int32_t *)to_device(p.end, (size_t)n * sizeof(int32_t));
    float *out = filled(QB), *lse = filled(HB), *delta = filled(HB);
    float *dq = filled(QB), *dk = filled(KB), *dv = filled(KB), *dk2 = filled(KB),
          *dv2 = filled(KB);

    CU(k_attention_forward(0, out, lse, q, k, v, first, n, h, kv, hd));
    CU(k_attention_delta(0, delta, dout, out, n, h, hd));
    CU(k_attention_backward_dq(0, dq, dout, lse, delta, q, k, v, first, n, h, kv, hd));
    CU(k_attention_backward_dkdv(0, dk, dv, dout, lse, delta, q, k, v, end, n, h, kv, hd));
    CU(k_attention_backward_dkdv(0, dk2, dv2, dout, lse, delta, q, k, v, end, n, h, kv, hd));
    CU(cudaDeviceSynchronize());

    const size_t qrows = (size_t)(n + TAIL) * qd, krows = (size_t)(n + TAIL) * kd;
    float *hout = to_host(out, qrows), *hlse = to_host(lse, (size_t)(n + TAIL) * h);
    float *hdq = to_host(dq, qrows), *hdk = to_host(dk, krows), *hdv = to_host(dv, krows);
    float *hdk2 = to_host(dk2, krows), *hdv2 = to_host(dv2, krows);

    double e_lse = 0;
    for (size_t i = 0; i < (size_t)n * h; i++) {
        const double e = fabs((double)hlse[i] - p.lse[i]) / fmax(fabs(p.lse[i]), 1.0);
        e_lse = isnan(e) ? INFINITY : fmax(e_lse, e);
    }
    const double eout = rel_err(hout, p.out, (size_t)n * qd);
    const double edq = rel_err(hdq, p.dq, (size_t)n * qd);
    const double edk = rel_err(hdk, p.dk, (size_t)n * kd);
    const double edv = rel_err(hdv, p.dv, (size_t)n * kd);
    fprintf(stderr, "%s: N %d H %d KV %d HD %d: out %.2e lse %.2e dq %.2e dk %.2e dv %.2e\n",
            criterion_current_test->name, n, h, kv, hd, eout, e_lse, edq, edk, edv);
    cr_expect(eout <= TOL, "out: relative error %g", eout);
    cr_expect(e_lse <= TOL, "lse: relative error %g", e_lse);
    cr_expect(edq <= TOL, "dq: relative error %g", edq);
    cr_expect(edk <= TOL, "dk: relative error %g", edk);
    cr_expect(edv <= TOL, "dv: relative error %g", edv);

    cr_expect(tail_intact(hout + (size_t)n * qd, (size_t)TAIL * qd), "out: a row past N written");
    cr_expect(tail_intact(hlse + (size_t)n * h, (size_t)TAIL * h), "lse: a row past N written");
    cr_expect(tail_intact(hdq + (size_t)n * qd, (size_t)TAIL * qd), "dq: a row past N written");
    cr_expect(tail_intact(hdk + (size_t)n * kd, (size_t)TAIL * kd), "dk: a row past N written");
    cr_expect(tail_intact(hdv + (size_t)n * kd, (size_t)TAIL * kd), "dv: a row past N written");

    cr_expect(memcmp(hdk, hdk2, (size_t)n * kd * sizeof(float)) == 0, "dk differs between runs");
    cr_expect(memcmp(hdv, hdv2, (size_t)n * kd * sizeof(float)) == 0, "dv differs between runs");

    float *bufs[] = {q, k, v, dout, (float *)first, (float *)end, out, lse, delta,
                     dq, dk, dv, dk2, dv2};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        cudaFree(bufs[i]);
    float *hbufs[] = {hout, hlse, hdq, hdk, hdv, hdk2, hdv2, p.q, p.k, p.v, p.dout};
    for (size_t i = 0; i < sizeof hbufs / sizeof hbufs[0]; i++)
        free(hbufs[i]);
    double *rbufs[] = {p.out, p.lse, p.dq, p.dk, p.dv};
    for (size_t i = 0; i < sizeof rbufs / sizeof rbufs[0]; i++)
        free(rbufs[i]);
    free(p.first);
    free(p.end);
}

/* 670 rows: a one-row sequence, 64 and 65 (a tile and one row over), and
 * long ones that span several key tiles; no boundary falls on a multiple of 64. */
static const int uneven[] = {1, 7, 64, 65, 200, 333};
#define NUNEVEN (int)(sizeof uneven / sizeof uneven[0])

Test(cuda_attention, hd64_grouped_kv) { check(uneven, NUNEVEN, 8, 2, 64); }
Test(cuda_attention, hd64_one_kv_head_per_head) { check(uneven, NUNEVEN, 4, 4, 64); }
Test(cuda_attention, hd128_grouped_kv) { check(uneven, NUNEVEN, 8, 2, 128); }
Test(cuda_attention, hd128_one_kv_head_per_head) { check(uneven, NUNEVEN, 4, 4, 128); }
/* the row path, which every head size but 64 and 128 takes */
Test(cuda_attention, hd32_row_path) { check(uneven, NUNEVEN, 8, 2, 32); }

/* Sequences the other way round, and one long one (many key tiles for the
 * online softmax, many query tiles for dk/dv): N = 1025, one row past a tile. */
Test(cuda_attention, hd64_long_sequence)
{
    static const int lens[] = {333, 2, 1, 1, 688};
    check(lens, 5, 4, 2, 64);
}
