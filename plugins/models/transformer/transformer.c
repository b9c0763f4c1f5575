/*
 * transformer.c: the `transformer` model plugin: a Llama-family decoder on
 * the CPU, for the policy the explorers sample from and the trainer trains,
 * and for the frozen reference. The ops are the shared front's (front.c:
 * settings, tokenizer, checkpoints); this file is the CPU engine under it,
 * computing on the front's host copy of the weights: the model (model.c),
 * generation (generate.c) and AdamW (adamw.c) on the instance's threads.
 *
 * A LLaVA (a CLIP tower and projector before the decoder, vision/) reads
 * images: the front encodes them on this engine's threads.
 *
 * Settings (docs/models.md):
 *   path = "dir";                 load a Hugging Face-shaped directory, or
 *   init = { preset = "tiny"; seed = 1; hidden_size = ...; };  fresh weights
 *   threads = 1;                  threads of this instance
 *   compute = "fp32";             precision of the matrix products (gemm.h)
 *   chat_template = "auto";       how prompts are formatted (chat_template.h)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tern/model.h"
#include "tern/plugin.h"

#include "front.h"
#include "layers/fastexp.h"
#include "layers/gemm.h"
#include "layers/pool.h"
#include "layers/simd.h"

/* OpenBLAS's thread control and identity (openblas_config.h is not always
 * installed) */
void openblas_set_num_threads(int num_threads);
char *openblas_get_corename(void);
char *openblas_get_config(void);

/* The paths this instance computes on, chosen at run time from the CPU:
 * they decide how sums round, so the run keeps them (host->note) to tell
 * why two machines' figures differ. OpenBLAS picks its kernel by CPU too. */
static void note_paths(const tern_host *host, tern_ctx *ctx, const llama_model *m)
{
    if (!TERN_HAS(host, note))
        return;
    char text[256];
    if (m->gx.ws)
        snprintf(text, sizeof text, "bf16 products, float32 sums (AVX512-BF16, gemm.c)");
    else
        snprintf(text, sizeof text, "float32 (%s, kernel %s)", openblas_get_config(),
                 openblas_get_corename());
    host->note(ctx, "products", text);
    host->note(ctx, "exp", simd_exp_path());
}

/* The engine is the host model itself. */
static int cpu_open(const tern_host *host, tern_ctx *ctx, llama_model *m, void **eng)
{
    int64_t threads = 1;
    const char *compute = "fp32";
    int rc = host->get_int(ctx, "threads", &threads);
    if (rc != TERN_OK)
        return rc;
    rc = host->get_string(ctx, "compute", &compute);
    if (rc != TERN_OK && rc != TERN_ENOTFOUND)
        return rc;
    /* OpenBLAS's thread count is global to the process: keep it at 1 and
     * give each instance its own threads (pool.c), so an explorer and a
     * trainer in one process each get what their settings say. */
    openblas_set_num_threads(1);
    if (llama_model_set_threads(m, (int)threads) != 0)
        return host->fail(ctx, TERN_ERR, "cannot start %d threads", (int)threads);
    int64_t spin_us = 100;
    if ((rc = host->get_int(ctx, "spin_us", &spin_us)) != TERN_OK && rc != TERN_ENOTFOUND)
        return rc;
    pool_set_spin(m->gx.tp, (long)spin_us * 1000);
    char why[256];
    if (simd_env_check(why, sizeof why) != 0)
        return host->fail(ctx, TERN_EINVAL, "%s", why);
    if (strcmp(compute, "bf16") == 0) {
        if (!gemm_bf16_available() && simd_cpu_level() >= SIMD_AVX512_BF16)
            return host->setting_error(ctx, "compute", "bf16 is turned off by TERN_SIMD=%s in "
                                       "the environment: unset it, or use compute = \"fp32\"",
                                       simd_env_cap());
        if (!gemm_bf16_available())
            return host->setting_error(ctx, "compute", "bf16 needs a CPU with AVX512-BF16 "
                                       "(Intel Cooper Lake or Sapphire Rapids and later, AMD "
                                       "Zen 4 and later); this one has none: use compute = "
                                       "\"fp32\"");
        if (llama_model_set_bf16(m, 1) != 0)
            return host->fail(ctx, TERN_ENOMEM, "out of memory");
    }
    host->log(ctx, TERN_LOG_DEBUG, "%zu parameters (%d layers, hidden %d), %d threads, %s "
              "products", m->n_params, m->cfg.n_layers, m->cfg.hidden_size, (int)threads,
              m->gx.ws ? "bf16" : "fp32");
    note_paths(host, ctx, m);
    *eng = m;
    return TERN_OK;
}

/* The model belongs to the front, which frees it. */
static void cpu_close(void *eng) { (void)eng; }

static int cpu_forward(void *eng, const llama_batch *b, float *logp, float *ent, char *err,
                       size_t errn)
{
    return llama_forward(eng, b, logp, ent, err, errn);
}

static int cpu_backward(void *eng, const llama_batch *b, const float *dlogp, const float *dent,
                        char *err, size_t errn)
{
    (void)err, (void)errn;
    llama_backward(eng, b, dlogp, dent);
    return 0;
}

static int cpu_step(void *eng, adamw *opt, const adamw_hparams *h, double *norm, char *err,
                    size_t errn)
{
    (void)err, (void)errn;
    llama_model *m = eng;
    *norm = adamw_step(opt, m->gx.tp, &m->cfg, m->params, m->grads, h);
    llama_zero_grad(m);
    return 0;
}

static float *cpu_grads(void *eng) { return ((llama_model *)eng)->grads; }

static const float *cpu_input_grads(void *eng) { return ((llama_model *)eng)->dx; }

static int cpu_generate(void *eng, const gen_prompt *p, int n, int max_rows, gen_sample *out,
                        char *err, size_t errn)
{
    return llama_generate(eng, p, n, max_rows, out, err, errn);
}

static const tf_engine cpu_engine = {
    .name = "CPU",
    .host_optimizer = 1,
    .branches = 1,
    .open = cpu_open,
    .close = cpu_close,
    .forward = cpu_forward,
    .backward = cpu_backward,
    .step = cpu_step,
    .generate = cpu_generate,
    /* pull and push: none, the host copy is what it computes on */
    .grads = cpu_grads,
    .input_grads = cpu_input_grads,
};

static int tf_create(tern_ctx *ctx, void **state) { return front_create(&cpu_engine, ctx, state); }

static const tern_model_ops ops = FRONT_OPS(tf_create, front_gradients, .device_tensors = NULL);

static const tern_setting_spec settings[] = {
    FRONT_SETTINGS,
    TERN_SETTING(.name = "threads", .type = TERN_SETTING_INT, .def = "1", .min = 1, .max = 256,
                 .aka = "num_threads|n_threads",
                 .doc = "threads of this instance (its own, whatever other instances use)"),
    TERN_SETTING(.name = "spin_us", .type = TERN_SETTING_INT, .def = "100", .min = 0,
                 .max = 100000, .aka = "spin",
                 .doc = "microseconds a thread of this instance waiting for the others spins "
                        "before it sleeps, at most (less when the cores are busy); 0: never "
                        "spin"),
    TERN_SETTING(.name = "compute", .type = TERN_SETTING_STRING, .def = "\"fp32\"",
                 .choices = "fp32|bf16", .aka = "precision|matmul_precision",
                 .doc = "precision of the matrix products: fp32, or bf16 (operands rounded to "
                        "bfloat16, sums and everything else float32; needs AVX512-BF16)"),
    TERN_SETTINGS_END,
};

static const tern_plugin_descriptor descriptor = {
    .size = sizeof(tern_plugin_descriptor),
    .abi_major = TERN_ABI_MAJOR,
    .abi_minor = TERN_ABI_MINOR,
    .kind = TERN_KIND_MODEL,
    .name = "transformer",
    .version = "1.0.0",
    .summary = "Llama-family decoder and LLaVA vision-language model on the CPU (BLAS): "
               "generate, score, train; HF checkpoints",
    .caps = 0,
    .ops = &ops,
    .settings = settings,
};

TERN_PLUGIN_EXPORT const tern_plugin_descriptor *tern_plugin_entry(const tern_host *h)
{
    front_set_host(h);
    return &descriptor;
}
