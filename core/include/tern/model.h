/*
 * tern/model.h: the ops table of a model plugin (TERN_KIND_MODEL).
 *
 * A model is a differentiable function tokens -> per-token log-probs and knows
 * nothing of RL (docs/architecture.md §2): the core's algorithms compute dL/dlogp (and
 * dL/dentropy) per token and hand them back for the backward pass.
 *
 * Sequences: token ids are int32. For a sequence x[0..len), position i >= 1 has
 * logp[i] = log p(x[i] | x[0..i)) and entropy[i] = H(p(. | x[0..i))); arrays of
 * per-position values have `len` entries and entry 0 is unused (set to 0).
 *
 * Memory: buffers the model allocates for the caller (generate outputs,
 * tokenize, detokenize) are freed with ops->free_buffer. score() writes into
 * arrays the caller provides. An op that fails hands nothing over: it frees
 * whatever it allocated for its outputs and leaves them empty.
 *
 * Thread-safety: one instance is driven by one thread at a time (the role that
 * owns it); different instances may run concurrently. The instance's own
 * thread count is its `threads` setting.
 */
#ifndef TERN_MODEL_H
#define TERN_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "abi.h"
#include "host.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An image attached to a prompt (ABI 1.12): 8-bit RGB pixels, decoded by
 * the core from the task's PNG or PPM file. Owned by the caller, valid for
 * the call it is given to. */
typedef struct tern_image {
    size_t size;          /* sizeof(tern_image) as built by the caller */
    int32_t width;        /* pixels, >= 1 */
    int32_t height;       /* pixels, >= 1 */
    const uint8_t *rgb;   /* [height][width][3]: R, G, B of each pixel, top row first */
    const char *source;   /* the file it came from, for messages; may be NULL */
} tern_image;

/* How a model that reads images takes sizes other than its encoder's
 * (tern_image_spec.fit). */
typedef enum tern_image_fit {
    TERN_IMAGE_FIT_ANY = 0,    /* any size: the encoder takes it as it is */
    TERN_IMAGE_FIT_RESIZE = 1, /* the model resizes it to width x height */
    TERN_IMAGE_FIT_EXACT = 2   /* only width x height: a run refuses other sizes at start */
} tern_image_fit;

/* What a model needs of the images attached to prompts (ABI 1.12,
 * tern_model_ops.image_spec). */
typedef struct tern_image_spec {
    size_t size;               /* set by the caller to sizeof(tern_image_spec) */
    int32_t width, height;     /* the encoder's input in pixels; 0: any */
    uint32_t fit;              /* a tern_image_fit */
    uint32_t max_images;       /* images one prompt may carry (>= 1) */
    /* The prompt text that marks where an image goes, NUL-terminated (e.g.
     * "<image>"). tokenize() and encode_chat() turn each one into
     * tokens_per_image copies of the model's image token, whose rows the
     * model then computes from the image (the k-th marker in token order
     * from images[k]). A run puts the marker and a newline before a task's
     * prompt that has none. */
    char placeholder[32];
    int32_t tokens_per_image;  /* prompt tokens (and positions) one image takes */
} tern_image_spec;

/* One prompt to continue, n_samples times.
 *
 * Shared prompts: the n_samples continuations share the prompt, and the
 * caller asks for a GRPO group's G responses as one request with
 * n_samples = G (never as G requests), so that a model can prefill the prompt
 * once and keep one copy of its attention keys and values for all G samples
 * (the `transformer` plugin does: one prefill row per prompt token, one KV
 * block per prompt, each sample's own rows after it). A model that does not
 * share may treat the request as n_samples copies of the prompt; the samples
 * must be the same either way, up to arithmetic rounding. */
typedef struct tern_gen_request {
    size_t size;              /* sizeof(tern_gen_request) as built by the caller */
    const int32_t *prompt;    /* prompt token ids */
    size_t prompt_len;
    uint32_t n_samples;       /* continuations to draw (>= 1) */
    uint32_t max_new_tokens;  /* stop after this many generated tokens */
    float temperature;        /* 0: greedy; else logits / temperature */
    int32_t top_k;            /* keep the k most likely tokens; 0: off */
    float top_p;              /* keep the smallest set with mass >= top_p; 1: off */
    const int32_t *stop;      /* generation ends after any of these ids */
    size_t n_stop;
    uint64_t seed;            /* same seed, request and thread count: same output */
    /* ---- appended in ABI 1.12 (check TERN_HAS(req, n_images)) ---- */
    /* The images the prompt's image tokens stand for, in order (a model
     * without image_spec is never given any): n_images equals the prompt's
     * runs of tokens_per_image image tokens. NULL and 0: a text prompt. */
    const tern_image *images;
    size_t n_images;
    /* ---- appended in ABI 1.15 (check TERN_HAS(req, on_token)) ---- */
    /* Called on the thread that called generate(), once per drawn token, in each sample's
     * order (samples of one step interleave): `sample` in [0, n_samples) of this request,
     * the token and its log-prob as tern_gen_output will hold them. Return
     * TERN_GEN_CONTINUE to go on, TERN_GEN_STOP to end that sample now: it keeps the tokens
     * so far, this one included, and finishes TERN_FINISH_STOPPED. NULL: no calls. It
     * may call the same instance's detokenize and free_buffer (a stream's text as it
     * comes), nothing else of it. */
    int (*on_token)(void *user, uint32_t sample, int32_t token, float logprob);
    void *on_token_user; /* passed to on_token (and on_top); the caller's */
    /* ---- appended in ABI 1.16 (check TERN_HAS(req, on_top)) ---- */
    /* The most likely alternatives of each drawn token: with top_logprobs k in
     * [1, TERN_TOP_LOGPROBS_MAX] and on_top not NULL, on_top is called right
     * before on_token for the same token (same thread, same `sample`) with the
     * k most likely token ids, most likely first (ties: lower id first), and
     * their log-probs under softmax(logits / T) at the request's temperature T
     * (T = 1 when it is 0, greedy), before top_k and top_p: the model's own
     * ranking, which a truncated draw does not change. ids and logprobs are
     * the model's, valid during the call. 0 or NULL: no calls. A model that
     * cannot list alternatives fails generate() with TERN_EUNSUPPORTED when
     * asked; one built before 1.16 never sees the fields (the caller checks
     * the plugin's minor). */
    uint32_t top_logprobs;
    void (*on_top)(void *user, uint32_t sample, const int32_t *ids, const float *logprobs,
                   uint32_t k);
} tern_gen_request;

/* The most alternatives tern_gen_request.top_logprobs may ask for (OpenAI's
 * limit for top_logprobs). */
enum { TERN_TOP_LOGPROBS_MAX = 20 };

/* What tern_gen_request.on_token answers for the token it was given (ABI 1.15).
 * A token that ends its sample anyway (a stop token, the last of max_new_tokens or of
 * the context) is still reported first; the answer then changes nothing and the sample
 * finishes TERN_FINISH_STOP or TERN_FINISH_LENGTH as it would have. A model takes any
 * other value as TERN_GEN_STOP. */
typedef enum tern_gen_verdict {
    TERN_GEN_CONTINUE = 0, /* draw the sample's next token */
    TERN_GEN_STOP = 1      /* end the sample after this token (TERN_FINISH_STOPPED) */
} tern_gen_verdict;

/* Why a generated sample ended (tern_gen_output.finish). */
typedef enum tern_finish {
    TERN_FINISH_STOP = 1,   /* a stop token (kept as the last token) */
    TERN_FINISH_LENGTH = 2, /* max_new_tokens reached */
    TERN_FINISH_STOPPED = 3 /* the caller's on_token ended it (ABI 1.15) */
} tern_finish;

/* The element type of a tern_tensor (tern_tensor.dtype). */
typedef enum tern_dtype {
    TERN_DTYPE_F32 = 1,  /* IEEE float32 */
    TERN_DTYPE_BF16 = 2, /* bfloat16 (the top 16 bits of a float32) */
    TERN_DTYPE_F16 = 3   /* IEEE float16 */
} tern_dtype;

/* One generated continuation. The model fills it; the caller frees tokens and
 * logprobs with ops->free_buffer. */
typedef struct tern_gen_output {
    size_t size;       /* set by the caller to sizeof(tern_gen_output) */
    int32_t *tokens;   /* the new tokens only (prompt excluded) */
    float *logprobs;   /* logprobs[i]: log-prob of tokens[i] under the distribution
                          actually sampled from (after temperature and truncation) */
    size_t len;
    uint32_t finish;   /* a tern_finish */
} tern_gen_output;

/* A sequence to score or train on; positions [start, len) count. */
typedef struct tern_sequence {
    size_t size;           /* sizeof(tern_sequence) as built by the caller */
    const int32_t *tokens;
    size_t len;
    size_t start;          /* first position whose log-prob is wanted (>= 1) */
    float temperature;     /* logits are divided by it before the softmax, as in
                              generate(), so scores match the sampling policy;
                              0 means 1 */
    /* ABI 1.11: where backward() writes the log-probs and entropies its own
     * forward pass computed, as score() would (len floats each, owned by the
     * caller; positions before start untouched); NULL: not wanted. A step
     * whose loss needs no fresh log-probs (on-policy, one update) so skips
     * the separate score() and still reports them. A model that does not
     * write them leaves the arrays as they were: the caller fills them with
     * NaN first to tell. */
    float *logp_out;
    float *entropy_out;
    /* ---- appended in ABI 1.12 (check TERN_HAS(seq, n_images)) ---- */
    /* The images of the sequence's prompt, as tern_gen_request.images: the
     * same pixels the response was generated from. NULL and 0: text only. */
    const tern_image *images;
    size_t n_images;
} tern_sequence;

/* A named parameter tensor, for weight transport and checkpoints. The data
 * stays owned by the model and valid until destroy or load. */
typedef struct tern_tensor {
    size_t size;           /* set by the caller to sizeof(tern_tensor) */
    const char *name;      /* Hugging Face name, e.g. "model.layers.0.self_attn.q_proj.weight" */
    uint32_t dtype;        /* a tern_dtype */
    uint32_t ndim;
    int64_t shape[4];
    void *data;
    size_t bytes;
} tern_tensor;

/* Optimiser step settings, chosen by the core (which owns the lr schedule). */
typedef struct tern_optim_step {
    size_t size;        /* sizeof(tern_optim_step) as built by the caller */
    double lr;          /* learning rate for this step */
    double beta1, beta2, eps, weight_decay; /* AdamW */
    double grad_clip;   /* clip the global gradient norm to this; <= 0: off */
    double grad_norm;   /* out: the global norm before clipping */
} tern_optim_step;

/* The model's special token ids (ABI 1.1); -1 where the model has none. And
 * its context length. */
typedef struct tern_special_tokens {
    size_t size;  /* set by the caller to sizeof(tern_special_tokens) */
    int32_t bos;  /* beginning of sequence: tokenize(add_bos = 1) puts it first */
    int32_t eos;  /* end of sequence: generation for training stops at it, and
                     supervised targets end with it */
    int32_t pad;  /* padding, never trained on */
    /* ---- appended in ABI 1.4 without a bump (check TERN_HAS(out, context_len)) ---- */
    int32_t context_len; /* the most tokens one sequence may hold, prompt and response
                            together; 0 when the model does not say. A run refuses a
                            task whose prompt leaves no room for a response. */
} tern_special_tokens;

/* One turn of a conversation (ABI 1.4), for encode_chat. */
typedef struct tern_chat_message {
    size_t size;         /* set by the caller to sizeof(tern_chat_message) */
    const char *role;    /* "system", "user" or "assistant" */
    const char *content; /* UTF-8 text, NUL-terminated; owned by the caller */
} tern_chat_message;

typedef struct tern_model_ops {
    size_t size; /* sizeof(tern_model_ops) as built */

    /* Make an instance: fresh from settings, or loaded from a directory. */
    int (*create)(tern_ctx *ctx, void **state);
    void (*destroy)(void *state);
    /* Free a buffer this model allocated for the caller. NULL is fine. */
    void (*free_buffer)(void *state, void *p);

    /* Text <-> token ids. Output arrays are allocated by the model. */
    int (*tokenize)(void *state, const char *text, size_t text_len, int add_bos,
                    int32_t **ids, size_t *n);
    int (*detokenize)(void *state, const int32_t *ids, size_t n, char **text, size_t *text_len);

    /* Generate: outs has n_req blocks of req[i].n_samples outputs, in order. A request's
     * on_token (ABI 1.15, where TERN_HAS and not NULL) hears each token as it is drawn and
     * may end its sample there (TERN_FINISH_STOPPED); a model that does not call it leaves
     * every sample to its stop tokens and max_new_tokens. A request's on_top (ABI 1.16)
     * hears each token's alternatives before its on_token. */
    int (*generate)(void *state, const tern_gen_request *req, size_t n_req, tern_gen_output *outs);

    /* Teacher-forced per-position log-probs and entropies into arrays the
     * CALLER provides: logprobs[i] (and entropies[i]) has seqs[i].len floats;
     * entries before seqs[i].start are set to 0. entropies may be NULL. */
    int (*score)(void *state, const tern_sequence *seqs, size_t n, float **logprobs,
                 float **entropies);

    /* Forward and backward on a batch, accumulating parameter gradients from
     * dL/dlogp (and dL/dentropy, NULL when zero) per position; the forward's
     * log-probs and entropies into seqs[i].logp_out/.entropy_out where given
     * (ABI 1.11, TERN_HAS). */
    int (*backward)(void *state, const tern_sequence *seqs, size_t n, const float *const *dlogp,
                    const float *const *dentropy);
    /* Clip, apply AdamW with step->lr, zero the gradients. */
    int (*step)(void *state, tern_optim_step *step);

    /* The named parameter tensors: *out points to an array owned by the model. */
    int (*tensors)(void *state, const tern_tensor **out, size_t *n);

    /* Save to / load from a Hugging Face-shaped directory (config.json,
     * model.safetensors, tokenizer); `with_optimizer` includes AdamW state.
     * save() creates `dir` and any missing parents (a run saves into
     * checkpoints/step-N.tmp/policy) and may replace files in it. */
    int (*save)(void *state, const char *dir, int with_optimizer);
    int (*load)(void *state, const char *dir, int with_optimizer);

    /* ---- appended in ABI 1.1 (check TERN_HAS(ops, special_tokens)) ---- */

    /* Fill *out (out->size set by the caller). Optional (NULL): then a run
     * cannot know where a response ends and refuses to train. */
    int (*special_tokens)(void *state, tern_special_tokens *out);

    /* ---- appended in ABI 1.4 (check TERN_HAS(ops, encode_chat)) ---- */

    /* The token ids of a conversation as the model's chat template formats
     * it, ending with the generation prompt (the assistant's turn opened),
     * BOS included where the model wants one. msgs[n]: the turns, in order
     * (a run passes an optional system turn, then the task's prompt as the
     * user turn). *ids (and *text, when text is not NULL: the formatted
     * text, NUL-terminated, *text_len bytes without the NUL) are allocated
     * by the model: free them with free_buffer. A model with a chat
     * template reports that template's end-of-turn token as its EOS in
     * special_tokens, so responses and supervised targets end there.
     * Optional (NULL): the core tokenizes the user turn with add_bos = 1 and
     * refuses a system turn. */
    int (*encode_chat)(void *state, const tern_chat_message *msgs, size_t n, int32_t **ids,
                       size_t *n_ids, char **text, size_t *text_len);

    /* ---- appended in ABI 1.7 (check TERN_HAS(ops, gradients)) ---- */

    /* The parameter gradients backward() accumulated since the last step(),
     * for a caller that combines them across processes before step() (the
     * data-parallel trainer ranks of a run on MPI ranks sum them with
     * MPI_Allreduce). *out points to an array owned by the model, n entries
     * in the order, names and shapes of tensors(); every entry is
     * TERN_DTYPE_F32 and its data is the model's own gradient buffer, host
     * memory, which the caller may read and overwrite: step() uses what is
     * there. The array and buffers stay valid until the model's next
     * backward(), step(), load() or destroy. Optional (NULL): such a model
     * trains on one trainer rank only, and a run with ranks.trainers > 1
     * refuses it. TERN_ENOMEM, or a plugin status with a message. */
    int (*gradients)(void *state, const tern_tensor **out, size_t *n);

    /* ---- appended in ABI 1.8 (check TERN_HAS(ops, device_tensors)) ---- */

    /* The parameter tensors where the model computes on an accelerator, for
     * a weight transport plugin (tern/transport.h) that moves them without
     * a host copy: n entries in the order, names, dtypes and shapes of
     * tensors(), whose `data` are device pointers (CUDA: on the device
     * *device). The model finishes its queued device work first, so they are
     * current, and makes them current if a caller wrote the host copy that
     * tensors() hands out. The caller may read them, or overwrite them and
     * then call device_tensors_written before the model's next op. The
     * array stays valid until the model's next op other than these two.
     * Optional (NULL): the model computes in host memory, and its weights
     * travel through tensors(). TERN_ERR with a message (a device failure). */
    int (*device_tensors)(void *state, const tern_tensor **out, size_t *n, int32_t *device);
    /* The caller wrote new weights into device_tensors(): the model refreshes
     * what it derives from them (reduced-precision copies; its host copy is
     * stale from now on). TERN_ERR with a message. */
    int (*device_tensors_written)(void *state);
    /* The gradients backward() accumulated since the last step(), on the
     * device, as gradients() hands them out on the host: n float32 tensors
     * in the order, names and shapes of tensors(), device pointers (on
     * *device), current when it returns; the caller may overwrite them
     * (data-parallel trainer ranks sum them with a transport plugin's sum)
     * and step() uses what is there. Valid until the next backward, step,
     * load or destroy. Optional (NULL). TERN_ERR with a message. */
    int (*device_gradients)(void *state, const tern_tensor **out, size_t *n, int32_t *device);

    /* ---- appended in ABI 1.12 (check TERN_HAS(ops, image_spec)) ---- */

    /* Whether this instance reads images, and how: TERN_OK with *out filled
     * (out->size set by the caller) when it does; TERN_EUNSUPPORTED when it
     * is text-only (a plugin whose models may or may not have a vision
     * tower). Optional (NULL): text-only. A run refuses image tasks for a
     * text-only policy at start, and checks every task's image against the
     * spec (readable, decodable, its size where fit is EXACT, no more
     * markers than images) before anything runs. */
    int (*image_spec)(void *state, tern_image_spec *out);

    /* ---- appended in ABI 1.14 (check TERN_HAS(ops, encode_chat_json)) ---- */

    /* As encode_chat, with the conversation as Hugging Face's
     * apply_chat_template takes it, rendered by the model's own template:
     * `messages` a JSON array of message objects (role and content; an
     * assistant's "tool_calls", a "tool" message's "name"; any role the
     * template accepts), `tools` NULL or a JSON array of function schemas
     * (tern/tool.h describe()) for the template's tool block.
     * add_generation_prompt: 1 to end with the assistant's turn opened.
     * Ownership as encode_chat. TERN_EUNSUPPORTED with a message when the
     * template cannot render them (the model has no template source to
     * interpret, only a named one), TERN_EINVAL for malformed JSON or a
     * template's own error. Optional (NULL): a run with tools refuses the
     * model. */
    int (*encode_chat_json)(void *state, const char *messages, const char *tools,
                            int add_generation_prompt, int32_t **ids, size_t *n_ids, char **text,
                            size_t *text_len);
} tern_model_ops;

#ifdef __cplusplus
}
#endif
#endif /* TERN_MODEL_H */
