/* model.h: the model proxy, the one place in tern that calls a model plugin's
 * ops (tern/model.h). Everything else in libtern, and the command layer,
 * holds a tern_model and calls these functions.
 *
 * Every call clears the thread's error message, calls the op and, when the
 * plugin fails, returns its status (TERN_ERR for a positive one) with one
 * message: "WHAT: REASON", where WHAT is the caller's context ("trainer:
 * score (policy)", "the model cannot tokenize the prompt") and REASON the
 * plugin's own message, or "the plugin gave no reason (a bug in the plugin)".
 * Buffers the plugin hands out are either copied into memory the caller
 * frees with free() (tokenize, detokenize, prompt) or handed over with a
 * matching release function (generate's outputs). Thread safety is the
 * plugin's: one instance is used by one thread at a time. */
#ifndef TERN_MODEL_MODEL_H
#define TERN_MODEL_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "base/export.h"
#include "tern/model.h"

/* A model instance and its plugin. */
typedef struct tern_model {
    const tern_model_ops *ops;
    void *state;
    tern_ctx *ctx;  /* owned when the run made the instance (tern_model_make) */
    int made;       /* 1: tern_model_make created it and tern_model_unmake destroys it */
    /* what a crash inside one of its ops is reported as (base/op_watch.h):
     * the role or instance ("explorer 0"), the plugin's name and file; not
     * copied, NULL until tern_model_name */
    const char *who, *plugin, *path;
    /* the plugin's TERN_ABI_MINOR as built (its descriptor's); 0: the core's.
     * Arrays of requests and sequences go to it strided as it knows them. */
    uint32_t abi_minor;
} tern_model;

/* Name m for the crash report (the strings must outlive m), and say which
 * ABI minor its plugin was built against (0: the core's). */
TERN_INTERNAL void tern_model_name(tern_model *m, const char *who, const char *plugin,
                                   const char *path, uint32_t abi_minor);

/* Create an instance of `ops` on the host context `ctx` (which the model
 * then owns); on failure `ctx` is still the caller's. */
int tern_model_make(tern_model *m, const tern_model_ops *ops, tern_ctx *ctx, const char *what);
/* Destroy what tern_model_make made (the instance; the caller frees the
 * context it gave) and clear *m; a model not made here is only cleared. */
void tern_model_unmake(tern_model *m);

/* 1 when the model has the op (the plugin's table is long enough and the op set). */
TERN_INTERNAL int tern_model_has_chat(const tern_model *m);

/* Tokens of text[0..len) (with BOS when bos), as our own array of n + 1
 * entries (freed with free()). */
TERN_INTERNAL int tern_model_tokenize(const tern_model *m, const char *what, const char *text,
                                      size_t len, int bos, int32_t **ids, size_t *n);
/* A prompt as a user turn after `system` (may be NULL) through the model's
 * chat template (encode_chat, ABI 1.4), as our own array of n + 1 entries. A
 * model without the op: TERN_EUNSUPPORTED, message "WHAT: the model plugin
 * has no chat template". */
TERN_INTERNAL int tern_model_chat(const tern_model *m, const char *what, const char *system,
                                  const char *prompt, int32_t **ids, size_t *n);
/* The same for a whole conversation msgs[0..k) (roles system, user,
 * assistant), ending with the generation prompt. */
TERN_INTERNAL int tern_model_chat_turns(const tern_model *m, const char *what,
                                        const tern_chat_message *msgs, size_t k, int32_t **ids,
                                        size_t *n);
/* 1 when the model renders JSON conversations (encode_chat_json, ABI 1.14). */
TERN_INTERNAL int tern_model_has_chat_json(const tern_model *m);
/* The ids of a JSON conversation `messages` (Hugging Face's message objects)
 * with the function schemas `tools` (a JSON array, or NULL), as the model's
 * own template renders them, ending with the generation prompt: our own
 * array of *n (+1) ids. A model without the op: TERN_EUNSUPPORTED, "WHAT:
 * the model plugin renders no JSON conversations". */
TERN_INTERNAL int tern_model_chat_json(const tern_model *m, const char *what, const char *messages,
                                       const char *tools, int32_t **ids, size_t *n);
/* The text of tokens[0..n) as our own NUL-terminated string (the ABI does
 * not promise the NUL); *len its bytes when len is not NULL. */
TERN_INTERNAL int tern_model_text(const tern_model *m, const char *what, const int32_t *tokens,
                                  size_t n, char **text, size_t *len);
/* The model's special tokens into *sp (bos, eos and pad -1 where it has
 * none). TERN_EUNSUPPORTED, with *sp all -1 and no message, for a model
 * without the op (ABI 1.1); else the plugin's status. */
TERN_INTERNAL int tern_model_special(const tern_model *m, const char *what,
                                     tern_special_tokens *sp);

/* Whether the model reads images (image_spec, ABI 1.12): TERN_OK with *spec
 * filled and checked (a placeholder of 1 to 31 bytes, tokens_per_image,
 * max_images >= 1, a known fit, a width and height unless the fit is ANY);
 * TERN_EUNSUPPORTED without a message for a text-only model (no op, or the
 * op says so); else the plugin's failure, or TERN_ERR for a spec that breaks
 * those rules ("WHAT: the model plugin's image_spec gave no ..."). */
TERN_INTERNAL int tern_model_image_spec(const tern_model *m, const char *what,
                                        tern_image_spec *spec);

/* generate() over n requests; each outs[i] must have its size set. The
 * outputs' arrays are the plugin's until tern_model_release_outputs. */
TERN_INTERNAL int tern_model_generate(const tern_model *m, const char *what,
                                      const tern_gen_request *req, size_t n,
                                      tern_gen_output *outs);
/* A sample's finish as rollouts.jsonl and eval_responses.jsonl name it:
 * "stop" (TERN_FINISH_STOP), "length" (TERN_FINISH_LENGTH), "stopped"
 * (TERN_FINISH_STOPPED, ABI 1.15: a request's on_token ended it). The core's
 * own requests set no on_token, so only a faulty plugin answers them
 * "stopped"; such a response counts as ended and is kept whole, as a LENGTH
 * one is. A value this core does not know is "stop", as before 1.15. */
TERN_INTERNAL const char *tern_finish_name(uint32_t finish);
/* Give outs[0..n)'s arrays back to the plugin (NULL-safe, outs may be NULL). */
TERN_INTERNAL void tern_model_release_outputs(const tern_model *m, tern_gen_output *outs,
                                              size_t n);

/* score(), backward() and step() as tern/model.h describes them. */
TERN_INTERNAL int tern_model_score(const tern_model *m, const char *what,
                                   const tern_sequence *seqs, size_t n, float **logprobs,
                                   float **entropies);
int tern_model_backward(const tern_model *m, const char *what, const tern_sequence *seqs,
                        size_t n, const float *const *dlogp, const float *const *dentropy);
int tern_model_step(const tern_model *m, const char *what, tern_optim_step *step);

/* The model's parameter tensors (owned by the model, valid until its next
 * load or destroy). */
TERN_INTERNAL int tern_model_tensors(const tern_model *m, const char *what, const tern_tensor **t, size_t *n);

/* 1 when the model has the gradients op (ABI 1.7). */
TERN_INTERNAL int tern_model_has_gradients(const tern_model *m);
/* The gradients backward() accumulated (tern/model.h, gradients): owned by
 * the model, writable until its next backward, step or load. A model without
 * the op: TERN_EUNSUPPORTED with a message. */
TERN_INTERNAL int tern_model_gradients(const tern_model *m, const char *what,
                                       const tern_tensor **t, size_t *n);

/* 1 when the model has the device_tensors ops (ABI 1.8). */
TERN_INTERNAL int tern_model_has_device_tensors(const tern_model *m);
/* The parameters on the model's accelerator (tern/model.h, device_tensors),
 * *device its ordinal; and the note that a caller wrote them. A model
 * without the ops: TERN_EUNSUPPORTED with a message. */
TERN_INTERNAL int tern_model_device_tensors(const tern_model *m, const char *what,
                                            const tern_tensor **t, size_t *n, int32_t *device);
TERN_INTERNAL int tern_model_device_tensors_written(const tern_model *m, const char *what);
/* 1 when the model has device_gradients (ABI 1.8); the gradients on the
 * device (tern/model.h). Without the op: TERN_EUNSUPPORTED with a message. */
TERN_INTERNAL int tern_model_has_device_gradients(const tern_model *m);
TERN_INTERNAL int tern_model_device_gradients(const tern_model *m, const char *what,
                                              const tern_tensor **t, size_t *n, int32_t *device);

/* save() and load() of a model directory. */
TERN_INTERNAL int tern_model_save(const tern_model *m, const char *what, const char *dir,
                                  int with_optimizer);
int tern_model_load(const tern_model *m, const char *what, const char *dir, int with_optimizer);

#endif
