/*
 * bench_gpu.c: the transformer_cuda model on this machine's GPU. Prints
 * figures, never fails on time; without a GPU it says so and exits 77.
 *
 * Models:
 *   gpt2s   GPT-2-small-sized Llama: hidden 768, 12 layers, 12 heads,
 *           intermediate 2048 (SwiGLU's three matrices ~ GPT-2's two of
 *           3072), vocab 50257 tied, context 1024: about 124M parameters
 *   bench   the CPU bench's preset (hidden 384, 6 layers, context 256)
 *
 * Figures:
 *   peaks      bf16 and fp32 cuBLAS GEMM (8192^3) and device-to-device copy
 *              bandwidth, measured here: what MFU and the decode bound use
 *   training   batch x context tokens, forward + backward + AdamW, tokens/s
 *              and MFU = tokens/s · (6N + 12·L·D·T) / bf16 peak (llm.c's
 *              count: attention as if not causal)
 *   decode     batch 1, 64, 256 prompts of 16 tokens, 128 new tokens greedy,
 *              tokens/s against the bound bandwidth / bytes of weights read
 *              per step (4N for fp32, 2N for bf16 operands)
 *   batching   continuous against static batching (batching_work.h): 128
 *              prompts x 4 samples ending at stop tokens, 128 rows at once
 *   transport  the weights host -> device and device -> host (the memory and
 *              checkpoint transports' path) and device -> device (a `device`
 *              transport's copy), GB/s
 *
 *   bench_gpu [--model gpt2s|bench] [--compute fp32|bf16] [--batch B] [--steps K]
 *             [--part all|training|decode|batching] [--new T] [--threads N]
 * (--part and a short --new keep a profiler's run small: ncu replays every kernel)
 */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "batching_work.h"
#include "cuda_model.h"
#include "decoder/model.h"
#include "generation/generate.h"
#include "hf/hf_config.h"

static int cuda_gen(void *model, const gen_prompt *p, int n, int max_rows, gen_sample *out,
                    char *err, size_t errn)
{
    return cuda_generate(model, p, n, max_rows, out, err, errn);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

#define CK(x)                                                                                    \
    do {                                                                                       \
        if ((x) != 0) {                                                                        \
            fprintf(stderr, "bench_gpu: %s failed at line %d\n", #x, __LINE__);                \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

/* TFLOP/s of an n^3 GEMM, bf16 operands (float32 sums) or float32. */
static double gemm_peak(int bf16)
{
    const int n = 8192;
    void *a, *b, *c;
    size_t el = bf16 ? 2 : 4;
    CK(cudaMalloc(&a, (size_t)n * n * el));
    CK(cudaMalloc(&b, (size_t)n * n * el));
    CK(cudaMalloc(&c, (size_t)n * n * 4));
    CK(cudaMemset(a, 0, (size_t)n * n * el));
    CK(cudaMemset(b, 0, (size_t)n * n * el));
    cublasHandle_t h;
    CK(cublasCreate(&h));
    const float one = 1, zero = 0;
    double best = 0;
    for (int rep = 0; rep < 6; rep++) {
        CK(cudaDeviceSynchronize());
        double t0 = now();
        if (bf16)
            CK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, CUDA_R_16BF, n, b,
                            CUDA_R_16BF, n, &zero, c, CUDA_R_32F, n, CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT));
        else
            CK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n));
        CK(cudaDeviceSynchronize());
        double tf = 2.0 * n * n * n / (now() - t0) / 1e12;
        if (rep > 0 && tf > best) /* rep 0 warms up */
            best = tf;
    }
    cublasDestroy(h);
    cudaFree(a), cudaFree(b), cudaFree(c);
    return best;
}

/* GB/s of a device-to-device copy (bytes read + bytes written). */
static double copy_bandwidth(void)
{
    const size_t bytes = (size_t)1 << 30;
    void *a, *b;
    CK(cudaMalloc(&a, bytes));
    CK(cudaMalloc(&b, bytes));
    double best = 0;
    for (int rep = 0; rep < 5; rep++) {
        CK(cudaDeviceSynchronize());
        double t0 = now();
        CK(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
        CK(cudaDeviceSynchronize());
        double g = 2.0 * bytes / (now() - t0) / 1e9;
        if (rep > 0 && g > best)
            best = g;
    }
    cudaFree(a), cudaFree(b);
    return best;
}

int main(int argc, char **argv)
{
    const char *model = "gpt2s", *compute = "bf16";
    const char *part = "all";
    int batch = 8, steps = 10, new_tokens = 128, threads = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--model"))
            model = argv[i + 1];
        else if (!strcmp(argv[i], "--compute"))
            compute = argv[i + 1];
        else if (!strcmp(argv[i], "--batch"))
            batch = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--steps"))
            steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--part"))
            part = argv[i + 1];
        else if (!strcmp(argv[i], "--new"))
            new_tokens = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads"))
            threads = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "usage: bench_gpu [--model gpt2s|bench] [--compute fp32|bf16] "
                    "[--batch B] [--steps K] [--part all|training|decode|batching] "
                    "[--new T] [--threads N]\n");
            return 2;
        }
    }
    char err[1024];
    if (cuda_device_count(err, sizeof err) == 0) {
        printf("bench_gpu: %s: nothing to measure\n", err);
        return 77;
    }
    struct cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("device: %s, %.1f GiB, compute capability %d.%d\n", prop.name,
           prop.totalGlobalMem / 1073741824.0, prop.major, prop.minor);

    llama_config c;
    CK(llama_preset(!strcmp(model, "bench") ? "bench" : "tiny", &c, err, sizeof err));
    if (!strcmp(model, "gpt2s")) {
        c.vocab_size = 50257, c.hidden_size = 768, c.intermediate_size = 2048;
        c.n_layers = 12, c.n_heads = 12, c.n_kv_heads = 12, c.max_positions = 1024;
        c.tie_embeddings = 1;
    }
    llama_model hm;
    if (llama_model_init(&hm, &c, err, sizeof err) != 0) {
        fprintf(stderr, "bench_gpu: %s\n", err);
        return 1;
    }
    llama_init_random(&hm, 1);
    cuda_model m;
    if (cuda_model_init(&m, &hm, 0, !strcmp(compute, "bf16"), err, sizeof err) != 0) {
        fprintf(stderr, "bench_gpu: %s\n", err);
        return 1;
    }
    if (threads > 1 && !(m.sampler = pool_new(threads))) {
        fprintf(stderr, "bench_gpu: cannot start %d threads\n", threads);
        return 1;
    }
    const double N = (double)hm.n_params, T = c.max_positions;
    const int all = strcmp(part, "all") == 0, do_train = all || strcmp(part, "training") == 0,
              do_decode = all || strcmp(part, "decode") == 0,
              do_batching = all || strcmp(part, "batching") == 0;
    double bf16_peak = gemm_peak(1), fp32_peak = gemm_peak(0), bw = copy_bandwidth();
    printf("model: %s, %.1fM parameters, context %d, %s products, %d sampling threads\n",
           model, N / 1e6, c.max_positions, compute, threads);
    printf("peaks: bf16 GEMM %.1f TFLOP/s, fp32 GEMM %.1f TFLOP/s, copy %.0f GB/s\n", bf16_peak,
           fp32_peak, bw);

    /* training: batch sequences of the full context */
    const int rows = batch * c.max_positions;
    int32_t *start = malloc((size_t)(batch + 1) * sizeof *start);
    int32_t *tok = malloc((size_t)rows * sizeof *tok), *pos = malloc((size_t)rows * sizeof *pos);
    int32_t *tgt = malloc((size_t)rows * sizeof *tgt);
    float *lp = malloc((size_t)rows * sizeof *lp), *dlp = malloc((size_t)rows * sizeof *dlp);
    for (int s = 0; s <= batch; s++)
        start[s] = s * c.max_positions;
    for (int r = 0; r < rows; r++) {
        tok[r] = (int32_t)((r * 7919u) % (unsigned)c.vocab_size);
        pos[r] = r % c.max_positions;
        tgt[r] = pos[r] + 1 < c.max_positions ? (int32_t)(((r + 1) * 7919u) % (unsigned)c.vocab_size)
                                              : -1;
        dlp[r] = tgt[r] >= 0 ? -1.0f / (float)rows : 0;
    }
    llama_batch b = {.n_seqs = batch, .n_rows = rows, .seq_start = start, .tokens = tok,
                     .pos = pos, .target = tgt};
    adamw_hparams hp = {.lr = 1e-4, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8,
                        .weight_decay = 0.1, .grad_clip = 1.0};
    double norm, t_train = 0;
    for (int it = 0; do_train && it <= steps; it++) {
        double t0 = now();
        if (cuda_model_forward(&m, &b, lp, NULL, err, sizeof err) ||
            cuda_model_backward(&m, &b, dlp, NULL, err, sizeof err) ||
            cuda_model_step(&m, &hp, &norm, err, sizeof err)) {
            fprintf(stderr, "bench_gpu: training: %s\n", err);
            return 1;
        }
        if (it > 0) /* step 0 warms up (allocations, cuBLAS heuristics) */
            t_train += now() - t0;
    }
    double tps = steps * (double)rows / t_train;
    double flops_tok = 6 * N + 12.0 * c.n_layers * c.hidden_size * T;
    if (do_train)
        printf("training %d x %d: %.0f tokens/s, %.1f ms/step, MFU %.1f%% of the bf16 peak\n", batch,
           c.max_positions, tps, 1e3 * t_train / steps, 100 * tps * flops_tok / (bf16_peak * 1e12));

    /* decode */
    /* greedy at three batch sizes, then batch 256 sampled at temperature 1
     * as an RL explorer does (the host's sampler then draws from each row's
     * softmax over the vocabulary: --threads splits the rows) */
    const int sizes[] = {1, 64, 256, 256};
    for (size_t si = 0; do_decode && si < 4; si++) {
        int B = sizes[si];
        const float temp = si == 3 ? 1.0f : 0.0f;
        int32_t prompt[16];
        for (int i = 0; i < 16; i++)
            prompt[i] = (int32_t)((i * 31 + 7) % c.vocab_size);
        gen_params gp = {.temperature = temp, .top_k = 0, .top_p = 1, .max_new = new_tokens,
                         .seed = 1};
        gen_prompt pr = {.tokens = prompt, .len = 16, .n_samples = B, .params = &gp};
        gen_sample *out = calloc((size_t)B, sizeof *out);
        double t0 = now();
        if (cuda_generate(&m, &pr, 1, 0, out, err, sizeof err) != 0) {
            fprintf(stderr, "bench_gpu: decode batch %d: %s\n", B, err);
            return 1;
        }
        double dt = now() - t0;
        size_t ntok = 0;
        for (int s = 0; s < B; s++) {
            ntok += out[s].len;
            free(out[s].tokens), free(out[s].logprobs);
        }
        free(out);
        double bound = bw * 1e9 / (N * (m.bf16 ? 2 : 4)) * B; /* tokens/s if weights-bound */
        printf("decode batch %3d%s: %.0f tokens/s (%zu tokens in %.2f s); weight-read bound %.0f "
               "tokens/s, %.2fx of it\n", B, temp > 0 ? ", temperature 1" : "", ntok / dt, ntok,
               dt, bound, bound / (ntok / dt));
    }

    if (do_batching) {
        char label[64];
        snprintf(label, sizeof label, "cuda %s %s", model, compute);
        if (bw_run(cuda_gen, &m, c.vocab_size, c.bos_id, 128, 4, 128, 256, 2, label) < 0)
            return 1;
    }

    /* weight transport */
    float *host = malloc((size_t)hm.n_params * sizeof(float)), *dev2;
    CK(cudaMalloc((void **)&dev2, (size_t)hm.n_params * sizeof(float)));
    double t0 = now();
    CK(cuda_model_download(&m, host, err, sizeof err));
    double t_down = now() - t0;
    t0 = now();
    CK(cuda_model_upload(&m, host, err, sizeof err));
    double t_up = now() - t0;
    t0 = now();
    CK(cudaMemcpy(dev2, m.params, (size_t)hm.n_params * sizeof(float), cudaMemcpyDeviceToDevice));
    CK(cudaDeviceSynchronize());
    double t_d2d = now() - t0;
    double gb = N * 4 / 1e9;
    printf("weights %.2f GB: device->host %.1f ms (%.1f GB/s), host->device %.1f ms (%.1f GB/s), "
           "device->device %.2f ms\n", gb, 1e3 * t_down, gb / t_down, 1e3 * t_up, gb / t_up,
           1e3 * t_d2d);
    cudaFree(dev2);
    free(host), free(start), free(tok), free(pos), free(tgt), free(lp), free(dlp);
    cuda_model_free(&m);
    llama_model_free(&hm);
    return 0;
}
