/* checkpoint.h: a model as a Hugging Face-shaped directory: config.json,
 * model.safetensors (HF tensor names of the architecture, float32 when tern
 * writes it; F32, BF16 or F16 when it reads, also sharded: the shards of
 * model.safetensors.index.json), tokenizer.json, and optimizer.safetensors
 * (AdamW moments and step) when the optimizer is saved. */
#ifndef TERN_CHECKPOINT_H
#define TERN_CHECKPOINT_H

#include <stddef.h>

#include "decoder/adamw.h"
#include "decoder/model.h"
#include "tokenizer/tokenizer.h"

/* Write DIR (created with parents if needed). Each file is written to a
 * temporary name and renamed, so a reader never sees half a file. `opt` may
 * be NULL (no optimizer state). 0, or -1 with a message. */
int checkpoint_save(const char *dir, const llama_model *m, const tokenizer *tok,
                    const adamw *opt, char *err, size_t errn);

/* Read DIR/model.safetensors (or, when absent, the shards listed in
 * DIR/model.safetensors.index.json) into m, whose config must equal the
 * file's shapes (each missing tensor or wrong shape named). Tensors the
 * layout does not use (GPT-2's attn.bias buffers, ...) are ignored. With `opt`, also
 * DIR/optimizer.safetensors (which must exist then). 0, or -1 with a message. */
int checkpoint_load_weights(const char *dir, llama_model *m, adamw *opt, char *err, size_t errn);

#endif
