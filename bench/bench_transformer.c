/*
 * bench_transformer.c: speed of the `transformer` model on this machine, for
 * the `bench` preset (hidden 384, 6 layers, 6 heads, 2 KV heads, intermediate
 * 1024, context 256; about 10M parameters). Prints figures, never fails on
 * time. bench/torch_peer.py runs the same work in PyTorch; bench/run_transformer.sh
 * runs both side by side.
 *
 *   training:   batch 16 x 256 tokens, forward + backward + AdamW (clip 1.0)
 *   generation: 64 prompts of 16 tokens, 128 new tokens each, temperature 1
 *   sgemm peak: a 1024^3 single-precision GEMM through the same BLAS
 *   the model's GEMM peak: a 1024^3 product through the model's own
 *   gemm_product, its precision and threads; MFU = GFLOP/s over it
 *
 * FLOPs counted: 2 per multiply-add of every GEMM the implementation runs
 * (attention computes full T x T score matrices, the causal half is masked).
 *
 * --vlm: the `vlm-bench` preset instead (the same decoder, a 64 x 64 CLIP
 * encoder of width 256 and 4 layers, 64 image rows per image), each
 * sequence and prompt opening with an image of its own: the same batch
 * shapes, the first 64 rows of each the image's features; the encoder runs
 * (and, in training, is differentiated) for every image. FLOPs and MFU
 * count the decoder only; tokens/s counts every row, images/s the images.
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "decoder/adamw.h"
#include "decoder/model.h"
#include "generation/generate.h"
#include "hf/hf_config.h"
#include "tern/rng.h"
#include "vision/vlm.h"

void openblas_set_num_threads(int num_threads);

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The best of 5 products C[1024, 1024] = A B, in GFLOP/s: through OpenBLAS's
 * sgemm on its own threads (gx NULL: the machine's sgemm peak), or through
 * the model's own gemm_product on its team, in its precision (float32:
 * OpenBLAS a block per worker; bf16: tern's kernel), what MFU is measured
 * against. */
static double peak_gflops(const gemm_ctx *gx)
{
    const int n = 1024;
    float *a = malloc((size_t)n * n * sizeof *a), *b = malloc((size_t)n * n * sizeof *b),
          *c = malloc((size_t)n * n * sizeof *c);
    for (size_t i = 0; i < (size_t)n * n; i++)
        a[i] = b[i] = (float)(i % 7) * 0.1f;
    double best = 0;
    for (int rep = 0; rep <= 5; rep++) { /* rep 0 warms up */
        double t0 = now();
        if (gx)
            gemm_product(gx, 1, 0, 0, n, n, n, a, n, b, n, 0.0f, c, n);
        else
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 0, c,
                        n);
        double g = 2.0 * n * n * n / (now() - t0) / 1e9;
        best = rep > 0 && g > best ? g : best;
    }
    free(a), free(b), free(c);
    return best;
}

/* GEMM FLOPs of one forward pass over `rows` tokens in sequences of length t */
static double forward_flops(const llama_config *c, double rows, double t)
{
    double D = c->hidden_size, F = c->intermediate_size, V = c->vocab_size, L = c->n_layers;
    double HD = D / c->n_heads, QD = c->n_heads * HD, KD = c->n_kv_heads * HD;
    double per_row = 2 * (D * QD + 2 * D * KD + QD * D + 3 * D * F) * L + 2 * D * V;
    double attention = 2 * 2 * t * QD * L; /* scores and P·V, full T per row */
    return rows * (per_row + attention);
}

int main(int argc, char **argv)
{
    int threads = 1, steps = 3, gen_new = 128, quick = 0, bf16 = 0, vlm = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--train-steps") == 0 && i + 1 < argc)
            steps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--gen-new") == 0 && i + 1 < argc)
            gen_new = atoi(argv[++i]);
        else if (strcmp(argv[i], "--vlm") == 0)
            vlm = 1;
        else if (strcmp(argv[i], "--quick") == 0)
            quick = 1;
        else if (strcmp(argv[i], "--compute") == 0 && i + 1 < argc &&
                 (strcmp(argv[i + 1], "fp32") == 0 || strcmp(argv[i + 1], "bf16") == 0))
            bf16 = strcmp(argv[++i], "bf16") == 0;
        else {
            fprintf(stderr, "usage: %s [--threads N] [--compute fp32|bf16] [--train-steps N] "
                    "[--gen-new N] [--vlm] [--quick]\n",
                    argv[0]);
            return 2;
        }
    }
    if (quick)
        steps = 1, gen_new = 8;
    openblas_set_num_threads(threads); /* for the sgemm peak; the model uses its pool */
    llama_config c;
    char err[512];
    if (llama_preset(vlm ? "vlm-bench" : "bench", &c, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    llama_model m;
    if (llama_model_init(&m, &c, err, sizeof err) != 0 ||
        llama_model_set_threads(&m, threads) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    if (bf16 && llama_model_set_bf16(&m, 1) != 0) {
        fprintf(stderr, "compute bf16: this CPU has no AVX512-BF16 (or out of memory)\n");
        llama_model_free(&m);
        return 1;
    }
    llama_init_random(&m, 1);
    printf("transformer %s preset: %zu parameters, %d threads, %s products\n",
           vlm ? "vlm-bench" : "bench", m.n_params, threads, bf16 ? "bf16" : "fp32");
    double peak = peak_gflops(NULL);
    printf("sgemm 1024^3 peak: %.1f GFLOP/s\n", peak);
    openblas_set_num_threads(1); /* as the plugin does: its own pool splits the work */
    double mpeak = peak_gflops(&m.gx);
    printf("the model's GEMM 1024^3 peak (%s, %d threads): %.1f GFLOP/s\n", bf16 ? "bf16" : "fp32",
           threads, mpeak);

    /* ---- training: 16 x 256 ---- */
    const int S = quick ? 2 : 16, T = quick ? 64 : 256, N = S * T;
    int32_t *start = malloc((S + 1) * sizeof *start), *tok = malloc(N * sizeof *tok),
            *pos = malloc(N * sizeof *pos), *tgt = malloc(N * sizeof *tgt);
    float *lp = malloc(N * sizeof *lp), *ent = malloc(N * sizeof *ent),
          *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    tern_rng r;
    tern_rng_seed(&r, 2);
    for (int s = 0; s <= S; s++)
        start[s] = s * T;
    for (int i = 0; i < N; i++) {
        tok[i] = (int32_t)(tern_rng_u64(&r) % 256);
        pos[i] = i % T;
        a[i] = (float)(tern_rng_uniform(&r) - 0.5) / N;
        b[i] = (float)(tern_rng_uniform(&r) - 0.5) / N;
    }
    for (int i = 0; i < N; i++)
        tgt[i] = (i % T) + 1 < T ? tok[i + 1] : -1;
    llama_batch batch = {.n_seqs = S, .n_rows = N, .seq_start = start, .tokens = tok, .pos = pos,
                         .target = tgt};
    /* --vlm: an image per sequence, its features at the sequence's first Nv rows */
    const int NV = llama_image_rows(&c), IS = c.vision.image;
    vlm_images imgs = {0};
    uint8_t *pix = vlm ? malloc((size_t)(S > 64 ? S : 64) * IS * IS * 3) : NULL;
    tern_image *ti = vlm ? calloc(S > 64 ? S : 64, sizeof *ti) : NULL;
    const float **rows_in = vlm ? calloc((size_t)N, sizeof *rows_in) : NULL;
    for (int k = 0; vlm && k < (S > 64 ? S : 64); k++) {
        for (int i = 0; i < IS * IS * 3; i++)
            pix[(size_t)k * IS * IS * 3 + i] = (uint8_t)(tern_rng_u64(&r) % 256);
        ti[k] = (tern_image){.size = sizeof *ti, .width = IS, .height = IS,
                             .rgb = pix + (size_t)k * IS * IS * 3};
    }
    for (int sq = 0; vlm && sq < S; sq++) {
        if (vlm_images_add(&imgs, &c, &ti[sq], err, sizeof err) < 0) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        for (int j = 0; j < NV && j < T; j++)
            tok[sq * T + j] = c.vision.image_token;
    }
    for (int i = 0; vlm && i < N; i++) {
        tgt[i] = (i % T) + 1 < T ? tok[i + 1] : -1;
        rows_in[i] = i % T < NV ? imgs.features + ((size_t)(i / T) * NV + i % T) * c.hidden_size
                                : NULL;
    }
    batch.row_input = rows_in;
    adamw opt;
    adamw_init(&opt, m.n_params);
    adamw_hparams h = {.lr = 1e-4, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8,
                       .weight_decay = 0.0, .grad_clip = 1.0};
    double t_train = 0;
    /* step 0 warms up; --train-steps 0 trains not at all (to profile generation) */
    for (int step = 0; steps > 0 && step <= steps; step++) {
        double t0 = now();
        if ((vlm && vlm_images_encode(&imgs, &m, err, sizeof err) != 0) ||
            llama_forward(&m, &batch, lp, ent, err, sizeof err) != 0) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        llama_backward(&m, &batch, a, b);
        if (vlm && vlm_images_backward(&imgs, &m, N, rows_in, m.dx, 1, err, sizeof err) != 0) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        adamw_step(&opt, m.gx.tp, &c, m.params, m.grads, &h);
        llama_zero_grad(&m);
        if (step > 0)
            t_train += now() - t0;
    }
    double train_tps = (double)N * steps / t_train;
    double train_gflops = 3 * forward_flops(&c, N, T) * steps / t_train / 1e9;
    printf("training   %d x %d: %.0f tokens/s, %.1f GFLOP/s (MFU %.0f%% of the model's GEMM "
           "peak)\n", S, T, train_tps, train_gflops, 100 * train_gflops / mpeak);
    if (vlm)
        printf("           %.1f images/s (an image and %d text tokens per sequence)\n",
               (double)S * steps / t_train, T - NV);

    /* ---- generation: 64 prompts x 16 tokens, gen_new new tokens ---- */
    /* --vlm: BOS, the image's Nv rows, then 15 text tokens */
    const int P = quick ? 4 : 64, PL = vlm ? 16 + NV : 16;
    int32_t *prompts = malloc((size_t)P * PL * sizeof *prompts);
    const float **grows = vlm ? calloc((size_t)P * PL, sizeof *grows) : NULL;
    for (int i = 0; i < P * PL; i++)
        prompts[i] = i % PL == 0 ? c.bos_id : (int32_t)(tern_rng_u64(&r) % 256);
    gen_params gp = {.temperature = 1.0f, .top_p = 1.0f, .max_new = gen_new, .seed = 3};
    gen_prompt *gprompts = malloc(P * sizeof *gprompts);
    for (int i = 0; i < P; i++)
        gprompts[i] = (gen_prompt){.tokens = prompts + i * PL, .len = PL, .n_samples = 1,
                                   .params = &gp, .row_input = grows ? grows + i * PL : NULL};
    gen_sample *out = calloc(P, sizeof *out);
    double t0 = now();
    if (vlm) { /* the images are encoded within the timed call, as generate() does */
        vlm_images_clear(&imgs);
        for (int i = 0; i < P; i++) {
            if (vlm_images_add(&imgs, &c, &ti[i], err, sizeof err) < 0)
                return 1;
            for (int j = 0; j < NV; j++)
                prompts[i * PL + 1 + j] = c.vision.image_token;
        }
        if (vlm_images_encode(&imgs, &m, err, sizeof err) != 0) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        for (int i = 0; i < P; i++)
            for (int j = 0; j < NV; j++)
                grows[i * PL + 1 + j] = imgs.features + ((size_t)i * NV + j) * c.hidden_size;
    }
    if (llama_generate(&m, gprompts, P, 0, out, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    double t_gen = now() - t0;
    size_t made = 0;
    for (int i = 0; i < P; i++) {
        made += out[i].len;
        free(out[i].tokens);
        free(out[i].logprobs);
    }
    double gen_tps = (double)made / t_gen;
    /* decode FLOPs: each new token attends to its whole prefix (PL + k) */
    double gen_flops = forward_flops(&c, (double)P * PL, PL);
    for (int k = 0; k < gen_new; k++)
        gen_flops += forward_flops(&c, P, 0) + (double)P * 4 * (PL + k) * c.hidden_size * c.n_layers;
    printf("generation %d prompts x %d new tokens: %.0f tokens/s, %.1f GFLOP/s (MFU %.0f%%)\n",
           P, gen_new, gen_tps, gen_flops / t_gen / 1e9, 100 * gen_flops / t_gen / 1e9 / mpeak);

    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("peak RSS: %.0f MiB\n", ru.ru_maxrss / 1024.0);
    printf("TERN_JSON {\"model\": \"%s\", \"threads\": %d, \"compute\": \"%s\", "
           "\"sgemm_peak_gflops\": %.2f, "
           "\"gemm_peak_gflops\": %.2f, \"train_tokens_per_s\": %.1f, \"train_gflops\": %.2f, "
           "\"gen_tokens_per_s\": %.1f, \"gen_gflops\": %.2f, \"peak_rss_kib\": %ld}\n",
           vlm ? "vlm-bench" : "bench", threads, bf16 ? "bf16" : "fp32", peak, mpeak, train_tps,
           train_gflops, gen_tps,
           gen_flops / t_gen / 1e9, ru.ru_maxrss);

    free(start), free(tok), free(pos), free(tgt), free(lp), free(ent), free(a), free(b);
    free(prompts), free(gprompts), free(out), free(pix), free(ti), free(rows_in), free(grows);
    vlm_images_free(&imgs);
    adamw_free(&opt);
    llama_model_free(&m);
    return 0;
}
