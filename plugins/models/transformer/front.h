/*
 * front.h: the tern_model_ops of a decoder plugin, over an engine that does
 * the arithmetic. The front owns what every engine shares: settings (path,
 * init, chat_template), the tokenizer and chat template, checkpoints, the
 * packing of sequences into batches, and the host copy of the weights
 * (llama_model's params: what tensors(), save() and load() read and write).
 * The `transformer` plugin's engine computes on that host copy itself
 * (transformer.c); the `transformer_cuda` plugin's keeps its own copy on the
 * GPU and moves it with pull/push.
 *
 * Host copy protocol: tensors() hands out pointers into the host copy, which
 * a caller may then write (a weight transport applying a snapshot), so after
 * tensors() the front pushes the host copy to the engine before its next
 * compute op. save() pulls first; load() pushes after.
 */
#ifndef TERN_TRANSFORMER_FRONT_H
#define TERN_TRANSFORMER_FRONT_H

#include <stddef.h>

#include "tern/model.h"
#include "tern/plugin.h"

#include "decoder/adamw.h"
#include "decoder/model.h"
#include "generation/generate.h"

typedef struct tf_engine {
    const char *name; /* for messages: "CPU", "CUDA" */
    /* 1: step() uses the front's host AdamW state (allocated before the first
     * step); 0: the engine keeps its own and fills the host one in pull(). */
    int host_optimizer;
    /* 1: forward and backward honour llama_batch.shared and .seg0, so the
     * front packs a group's responses as branches after one copy of their
     * prompt; 0: every sequence is packed whole. */
    int branches;
    /* Start the engine for m, whose config and weights are set, reading its
     * own settings from ctx. TERN_OK, or a status with the message given to
     * host (fail or setting_error). */
    int (*open)(const tern_host *host, tern_ctx *ctx, llama_model *m, void **eng);
    void (*close)(void *eng);
    /* llama_forward's contract: logp[N], ent[N] (may be NULL) on the host;
     * the activations stay for backward. 0, or -1 with a message. */
    int (*forward)(void *eng, const llama_batch *b, float *logp, float *ent, char *err,
                   size_t errn);
    /* After forward on the same batch: accumulate parameter gradients from
     * dlogp[N] and dent[N] (may be NULL), host arrays. 0, or -1. */
    int (*backward)(void *eng, const llama_batch *b, const float *dlogp, const float *dent,
                    char *err, size_t errn);
    /* Clip, AdamW, zero the gradients; *norm: the norm before clipping.
     * opt: the front's host state when host_optimizer, else NULL. 0, or -1. */
    int (*step)(void *eng, adamw *opt, const adamw_hparams *h, double *norm, char *err,
                size_t errn);
    /* llama_generate's contract (max_rows: the decode_rows setting). */
    int (*generate)(void *eng, const gen_prompt *p, int n, int max_rows, gen_sample *out,
                    char *err, size_t errn);
    /* Copy the engine's weights into params (the host copy; NULL: skip) and
     * its AdamW state into opt (allocated by the caller; NULL: skip).
     * NULL op: the engine computes on the host copy. 0, or -1. */
    int (*pull)(void *eng, float *params, adamw *opt, char *err, size_t errn);
    /* The reverse: the engine's weights from params, its AdamW state from
     * opt (either may be NULL). NULL op as for pull. 0, or -1. */
    int (*push)(void *eng, const float *params, const adamw *opt, char *err, size_t errn);
    /* The gradients backward() accumulated, in host memory in the layout of
     * params, which step() then uses: an engine that computes on the host
     * copy. NULL op: the engine cannot expose them (tern_model_ops.gradients
     * is then NULL too). */
    float *(*grads)(void *eng);
    /* The engine's weights on its accelerator, laid out as params (float32),
     * current once it returns (queued work finished); *device its ordinal.
     * NULL (and a message) on failure. NULL op: the engine computes on the
     * host copy (tern_model_ops.device_tensors is then NULL too). */
    float *(*device_params)(void *eng, int32_t *device, char *err, size_t errn);
    /* A caller overwrote the device weights: refresh what derives from them
     * (reduced-precision copies). 0, or -1 with a message. */
    int (*device_written)(void *eng, char *err, size_t errn);
    /* The gradients on the device, laid out as params, current once it
     * returns; NULL (and a message) on failure. NULL op: none on a device. */
    float *(*device_grads)(void *eng, int32_t *device, char *err, size_t errn);
    /* After backward: dJ/d each row's input vector [N, D] on the host (the
     * rows a batch gave as llama_batch.row_input: a LLaVA's image rows,
     * whose tower and projector the front then trains on the host copy).
     * NULL op: the engine cannot run a vision tower, and the front refuses
     * a LLaVA. */
    const float *(*input_grads)(void *eng);
} tf_engine;

/* Call first, from tern_plugin_entry. */
void front_set_host(const tern_host *h);

/* tern_model_ops.create for an instance computing on `engine`. */
int front_create(const tf_engine *engine, tern_ctx *ctx, void **state);
/* The other ops, the same for every engine. */
void front_destroy(void *state);
void front_free_buffer(void *state, void *p);
int front_tokenize(void *state, const char *text, size_t len, int add_bos, int32_t **ids,
                   size_t *n);
int front_detokenize(void *state, const int32_t *ids, size_t n, char **text, size_t *len);
int front_encode_chat(void *state, const tern_chat_message *msgs, size_t n, int32_t **ids,
                      size_t *n_ids, char **text, size_t *text_len);
/* encode_chat_json (ABI 1.14): the conversation as JSON through the model's
 * own template (chat_template_apply_json). */
int front_encode_chat_json(void *state, const char *messages, const char *tools, int gen,
                           int32_t **ids, size_t *n_ids, char **text, size_t *text_len);
int front_generate(void *state, const tern_gen_request *req, size_t n_req, tern_gen_output *outs);
int front_score(void *state, const tern_sequence *seqs, size_t n, float **logprobs,
                float **entropies);
int front_backward(void *state, const tern_sequence *seqs, size_t n, const float *const *dlogp,
                   const float *const *dentropy);
int front_step(void *state, tern_optim_step *s);
int front_tensors(void *state, const tern_tensor **out, size_t *n);
int front_save(void *state, const char *dir, int with_optimizer);
int front_load(void *state, const char *dir, int with_optimizer);
int front_special_tokens(void *state, tern_special_tokens *out);
/* tern_model_ops.image_spec (ABI 1.12): a LLaVA's; TERN_EUNSUPPORTED for a
 * text model. */
int front_image_spec(void *state, tern_image_spec *out);
/* tern_model_ops.gradients, for an engine with the grads op. */
int front_gradients(void *state, const tern_tensor **out, size_t *n);
/* tern_model_ops.device_tensors and device_tensors_written, for an engine
 * with device_params and device_written. */
int front_device_tensors(void *state, const tern_tensor **out, size_t *n, int32_t *device);
int front_device_tensors_written(void *state);
int front_device_gradients(void *state, const tern_tensor **out, size_t *n, int32_t *device);

/* tern_model_ops with every op but create, gradients and the device ops (a
 * plugin's ops table starts from this: front_gradients for an engine with
 * host gradients, else NULL; FRONT_DEVICE_OPS for an engine on a device). */
#define FRONT_OPS(create_fn, gradients_fn, ...)                                                  \
    {.size = sizeof(tern_model_ops), .create = (create_fn), .destroy = front_destroy,          \
     .free_buffer = front_free_buffer, .tokenize = front_tokenize,                              \
     .detokenize = front_detokenize, .generate = front_generate, .score = front_score,         \
     .backward = front_backward, .step = front_step, .tensors = front_tensors,                 \
     .save = front_save, .load = front_load, .special_tokens = front_special_tokens,           \
     .encode_chat = front_encode_chat, .gradients = (gradients_fn),                            \
     .image_spec = front_image_spec, .encode_chat_json = front_encode_chat_json, __VA_ARGS__}
#define FRONT_DEVICE_OPS                                                                         \
    .device_tensors = front_device_tensors, .device_tensors_written = front_device_tensors_written, \
    .device_gradients = front_device_gradients

/* The `init` group's keys (fresh weights), shared by the plugins. */
extern const tern_setting_spec front_init_keys[];

/* The settings every engine's plugin has: path, init, chat_template. */
#define FRONT_SETTINGS                                                                           \
    TERN_SETTING(.name = "path", .type = TERN_SETTING_STRING, .aka = "dir|checkpoint|model_dir", \
                 .doc = "load this Hugging Face-shaped model directory, or this GGUF file"),     \
    TERN_SETTING(.name = "batch_tokens", .type = TERN_SETTING_INT, .def = "2048", .min = 1,      \
                 .max = 16777216, .aka = "max_batch_tokens|micro_batch_tokens",                  \
                 .doc = "score and backward run over at most this many tokens at once (whole "   \
                        "sequences; a longer one alone), accumulating the gradients, so that "   \
                        "memory is bounded whatever the batch"),                                \
    TERN_SETTING(.name = "decode_rows", .type = TERN_SETTING_INT, .def = "0", .min = 0,          \
                 .max = 1048576, .aka = "max_decode_rows|max_num_seqs",                         \
                 .doc = "generate decodes at most this many samples at once (0: all of a call's), " \
                        "which bounds the KV cache; a finished sample's slot takes the next "    \
                        "waiting prompt's samples (continuous batching)"),                       \
    TERN_SETTING(.name = "image_fit", .type = TERN_SETTING_STRING, .def = "\"resize\"",         \
                 .choices = "resize|exact", .aka = "image_size_policy",                          \
                 .doc = "a vision-language model given an image of another size than its "       \
                        "encoder's: resize it (short side, then a centre crop, as the model's "  \
                        "preprocessor_config.json says), or exact (a run refuses it at start)"), \
    TERN_SETTING(.name = "train_vision_tower", .type = TERN_SETTING_BOOL, .def = "true",         \
                 .aka = "vision_tower_trainable|train_vision",                                    \
                 .doc = "a vision-language model trains its vision encoder (true) or keeps it "  \
                        "frozen (false); the projector and the language model train either way"), \
    TERN_SETTING(.name = "init", .type = TERN_SETTING_GROUP, .children = front_init_keys,        \
                 .doc = "fresh weights from a preset and a seed, with optional sizes"),         \
    TERN_SETTING(.name = "chat_template", .type = TERN_SETTING_STRING, .def = "\"auto\"",        \
                 .choices = "auto|chatml|llama3|llama3.1|plain|none", .aka = "template|chat",   \
                 .doc = "prompt format: auto (from the model directory's tokenizer_config.json; " \
                        "none without one), a named template, or none (the prompt as it is)")

#endif
