/*
 * bench_batching.c: continuous batching against static batching, on the
 * `transformer` model's CPU decoder, random weights: the `bench` preset
 * (9.6M parameters), or with --shape smollm2 SmolLM2-135M's sizes (hidden
 * 576, 30 layers, 9 heads, 3 KV heads, intermediate 1536, vocabulary 49152
 * tied). Prints figures, never fails on time.
 *
 * The work is batching_work.h's: static batching (calls of --rows samples),
 * continuous batching (one call, decode_rows = --rows) and one batch of all.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batching_work.h"
#include "decoder/model.h"
#include "generation/generate.h"
#include "hf/hf_config.h"

void openblas_set_num_threads(int num_threads);

static int cpu_generate(void *model, const gen_prompt *p, int n, int max_rows, gen_sample *out,
                        char *err, size_t errn)
{
    return llama_generate(model, p, n, max_rows, out, err, errn);
}

int main(int argc, char **argv)
{
    int threads = 2, bf16 = 0, R = 64, P = 64, G = 4, max_new = 256, reps = 3, smollm2 = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--rows") == 0 && i + 1 < argc)
            R = atoi(argv[++i]);
        else if (strcmp(argv[i], "--prompts") == 0 && i + 1 < argc)
            P = atoi(argv[++i]);
        else if (strcmp(argv[i], "--group") == 0 && i + 1 < argc)
            G = atoi(argv[++i]);
        else if (strcmp(argv[i], "--max-new") == 0 && i + 1 < argc)
            max_new = atoi(argv[++i]);
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--shape") == 0 && i + 1 < argc &&
                 (strcmp(argv[i + 1], "bench") == 0 || strcmp(argv[i + 1], "smollm2") == 0))
            smollm2 = strcmp(argv[++i], "smollm2") == 0;
        else if (strcmp(argv[i], "--compute") == 0 && i + 1 < argc &&
                 (strcmp(argv[i + 1], "fp32") == 0 || strcmp(argv[i + 1], "bf16") == 0))
            bf16 = strcmp(argv[++i], "bf16") == 0;
        else {
            fprintf(stderr, "usage: %s [--threads N] [--compute fp32|bf16] [--rows R] "
                    "[--prompts P] [--group G] [--max-new N] [--reps N] [--shape bench|smollm2]\n", argv[0]);
            return 2;
        }
    }
    if (threads < 1 || R < 1 || P < 1 || G < 1 || max_new < 1 || reps < 1 || R % G != 0) {
        fprintf(stderr, "bench_batching: need positive sizes and --rows a multiple of --group\n");
        return 2;
    }
    openblas_set_num_threads(1); /* as the plugin does: its own pool splits the work */
    llama_config c;
    llama_model m;
    char err[512];
    if (llama_preset("bench", &c, err, sizeof err) != 0) {
        fprintf(stderr, "bench_batching: %s\n", err);
        return 1;
    }
    if (smollm2) {
        c.vocab_size = 49152;
        c.hidden_size = 576;
        c.intermediate_size = 1536;
        c.n_layers = 30;
        c.n_heads = 9;
        c.n_kv_heads = 3;
        c.max_positions = 2048;
        c.tie_embeddings = 1;
    }
    if (llama_model_init(&m, &c, err, sizeof err) != 0) {
        fprintf(stderr, "bench_batching: %s\n", err);
        return 1;
    }
    if (llama_model_set_threads(&m, threads) != 0 || (bf16 && llama_model_set_bf16(&m, 1) != 0)) {
        fprintf(stderr, "bench_batching: cannot start %d threads%s\n", threads,
                bf16 ? " or bf16 products (AVX512-BF16)" : "");
        llama_model_free(&m);
        return 1;
    }
    llama_init_random(&m, 1);

    printf("bench_batching: %s shape (%zu parameters), %s products, %d threads\n",
           smollm2 ? "smollm2" : "bench", m.n_params, bf16 ? "bf16" : "fp32", threads);
    char label[64];
    snprintf(label, sizeof label, "cpu %s %s %d threads", smollm2 ? "smollm2" : "bench",
             bf16 ? "bf16" : "fp32", threads);
    int rc = bw_run(cpu_generate, &m, c.vocab_size, c.bos_id, P, G, R, max_new, reps, label);
    llama_model_free(&m);
    return rc == 0 ? 0 : 1;
}
