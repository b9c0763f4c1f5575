/*
 * transformer_cuda.c: the `transformer_cuda` model plugin: the `transformer`
 * plugin's decoder (same settings, checkpoints, tokenizer and sampling: the
 * shared front, ../transformer/front.c) computing on one NVIDIA GPU. This
 * file is the CUDA engine under the front: the model on the device
 * (cuda_model.c), its products (cuda_linear.c), kernels (kernels.h) and
 * decoding (cuda_generate.c).
 *
 * Settings (docs/models.md):
 *   path / init / chat_template   as the `transformer` plugin
 *   device = 0;                   the CUDA device ordinal
 *   compute = "fp32";             or "bf16": bf16 operands, float32 sums
 *   threads = 0;                  host threads that sample (0: the usable cores)
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tern/model.h"
#include "tern/plugin.h"

#include "cuda_model.h"
#include "front.h"

/* The CPUs this process may run on (its affinity mask), 1 to 64. */
static int usable_cores(void)
{
    cpu_set_t set;
    int n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
    return n < 1 ? 1 : n > 64 ? 64 : n;
}

static int cu_open(const tern_host *host, tern_ctx *ctx, llama_model *hm, void **eng)
{
    int64_t device = 0, threads = 1;
    const char *compute = "fp32";
    char err[512];
    int rc = host->get_int(ctx, "device", &device);
    if (rc != TERN_OK)
        return rc;
    rc = host->get_int(ctx, "threads", &threads);
    if (rc != TERN_OK && rc != TERN_ENOTFOUND)
        return rc;
    if (threads == 0) /* the cores this process may run on: the sampler's threads only sample */
        threads = usable_cores();
    rc = host->get_string(ctx, "compute", &compute);
    if (rc != TERN_OK && rc != TERN_ENOTFOUND)
        return rc;
    int n = cuda_device_count(err, sizeof err);
    if (n == 0)
        return host->fail(ctx, TERN_ERR, "transformer_cuda: %s; it needs an NVIDIA GPU with its "
                          "driver: run on such a machine, or use plugin = \"transformer\" (the "
                          "CPU)", err);
    if (device >= n)
        return host->setting_error(ctx, "device", "there is no CUDA device %lld: this machine "
                                   "has %d (0 to %d)", (long long)device, n, n - 1);
    cuda_model *m = calloc(1, sizeof *m);
    if (!m)
        return host->fail(ctx, TERN_ENOMEM, "out of memory");
    if (cuda_model_init(m, hm, (int)device, strcmp(compute, "bf16") == 0, err, sizeof err) != 0) {
        free(m);
        return host->fail(ctx, TERN_ERR, "transformer_cuda: %s", err);
    }
    if (threads > 1 && !(m->sampler = pool_new((int)threads))) {
        cuda_model_free(m);
        free(m);
        return host->fail(ctx, TERN_ERR, "cannot start %d threads", (int)threads);
    }
    host->log(ctx, TERN_LOG_DEBUG, "%zu parameters (%d layers, hidden %d) on %s, %s products, "
              "%d sampling threads", m->n_params, m->cfg.n_layers, m->cfg.hidden_size, m->where,
              m->bf16 ? "bf16" : "fp32", (int)threads);
    if (TERN_HAS(host, note)) {
        /* the card and the precision decide how the sums round (host->note) */
        char text[256];
        snprintf(text, sizeof text, "%s products, float32 sums, on %s",
                 m->bf16 ? "bf16" : "float32", m->where);
        host->note(ctx, "products", text);
    }
    *eng = m;
    return TERN_OK;
}

static void cu_close(void *eng)
{
    cuda_model_free(eng);
    free(eng);
}

static int cu_forward(void *eng, const llama_batch *b, float *logp, float *ent, char *err,
                      size_t errn)
{
    return cuda_model_forward(eng, b, logp, ent, err, errn);
}

static int cu_backward(void *eng, const llama_batch *b, const float *dlogp, const float *dent,
                       char *err, size_t errn)
{
    return cuda_model_backward(eng, b, dlogp, dent, err, errn);
}

static int cu_step(void *eng, adamw *opt, const adamw_hparams *h, double *norm, char *err,
                   size_t errn)
{
    (void)opt; /* the AdamW state lives on the device */
    return cuda_model_step(eng, h, norm, err, errn);
}

static int cu_generate(void *eng, const gen_prompt *p, int n, int max_rows, gen_sample *out,
                       char *err, size_t errn)
{
    return cuda_generate(eng, p, n, max_rows, out, err, errn);
}

static int cu_pull(void *eng, float *params, adamw *opt, char *err, size_t errn)
{
    if (params && cuda_model_download(eng, params, err, errn) != 0)
        return -1;
    return opt ? cuda_model_download_opt(eng, opt, err, errn) : 0;
}

static int cu_push(void *eng, const float *params, const adamw *opt, char *err, size_t errn)
{
    if (params && cuda_model_upload(eng, params, err, errn) != 0)
        return -1;
    return opt ? cuda_model_upload_opt(eng, opt, err, errn) : 0;
}

/* A device array of the engine (its weights or gradients), handed to a
 * caller that reads or writes it from other streams: our queued work
 * (backward's kernels, the last step) finishes first. */
static float *hand_out(cuda_model *m, float *array, int32_t *device, char *err, size_t errn)
{
    cudaError_t e = cudaSetDevice(m->device);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(m->st);
    if (e != cudaSuccess) {
        snprintf(err, errn, "%s: %s", m->where, cudaGetErrorString(e));
        return NULL;
    }
    *device = m->device;
    return array;
}

static float *cu_device_params(void *eng, int32_t *device, char *err, size_t errn)
{
    cuda_model *m = eng;
    return hand_out(m, m->params, device, err, errn);
}

static float *cu_device_grads(void *eng, int32_t *device, char *err, size_t errn)
{
    cuda_model *m = eng;
    return hand_out(m, m->grads, device, err, errn);
}

static int cu_device_written(void *eng, char *err, size_t errn)
{
    cuda_model *m = eng;
    cudaError_t e = cudaSetDevice(m->device);
    if (e != cudaSuccess) {
        snprintf(err, errn, "%s: %s", m->where, cudaGetErrorString(e));
        return -1;
    }
    return cuda_refresh_bf16(m, err, errn);
}

static const tf_engine cuda_engine = {
    .name = "CUDA",
    .host_optimizer = 0,
    .open = cu_open,
    .close = cu_close,
    .forward = cu_forward,
    .backward = cu_backward,
    .step = cu_step,
    .generate = cu_generate,
    .pull = cu_pull,
    .push = cu_push,
    .device_params = cu_device_params,
    .device_written = cu_device_written,
    .device_grads = cu_device_grads,
};

static int tc_create(tern_ctx *ctx, void **state) { return front_create(&cuda_engine, ctx, state); }

/* gradients: NULL, they live on the GPU: device_gradients hands them to a
 * transport plugin's sum (nccl) on data-parallel trainer ranks, as
 * device_tensors hands the weights to its broadcast */
static const tern_model_ops ops = FRONT_OPS(tc_create, NULL, FRONT_DEVICE_OPS);

static const tern_setting_spec settings[] = {
    FRONT_SETTINGS,
    TERN_SETTING(.name = "device", .type = TERN_SETTING_INT, .def = "0", .min = 0, .max = 1024,
                 .aka = "gpu|cuda_device", .doc = "the CUDA device ordinal to run on"),
    TERN_SETTING(.name = "threads", .type = TERN_SETTING_INT, .def = "0", .min = 0, .max = 256,
                 .aka = "num_threads|n_threads",
                 .doc = "host threads that sample generate's tokens from each step's logits, 0: "
                        "the cores this process may run on (the samples are the same for any "
                        "count)"),
    TERN_SETTING(.name = "compute", .type = TERN_SETTING_STRING, .def = "\"fp32\"",
                 .choices = "fp32|bf16", .aka = "precision|matmul_precision",
                 .doc = "precision of the linear layers' products: fp32, or bf16 (operands "
                        "rounded to bfloat16, float32 sums; weights, gradients, AdamW state "
                        "and attention stay float32); bf16 needs compute capability 8.0+"),
    TERN_SETTINGS_END,
};

static const tern_plugin_descriptor descriptor = {
    .size = sizeof(tern_plugin_descriptor),
    .abi_major = TERN_ABI_MAJOR,
    .abi_minor = TERN_ABI_MINOR,
    .kind = TERN_KIND_MODEL,
    .name = "transformer_cuda",
    .version = "0.1.0",
    .summary = "Llama/Qwen2 decoder on an NVIDIA GPU (cuBLAS + CUDA kernels): generate, score, "
               "train; HF checkpoints",
    .caps = TERN_CAP_GPU,
    .ops = &ops,
    .settings = settings,
};

TERN_PLUGIN_EXPORT const tern_plugin_descriptor *tern_plugin_entry(const tern_host *h)
{
    front_set_host(h);
    return &descriptor;
}
