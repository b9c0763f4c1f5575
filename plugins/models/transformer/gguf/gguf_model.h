/*
 * gguf_model.h: a GGUF file (llama.cpp's format) as a tern decoder: its
 * config from the `ARCH.*` keys, its weights dequantised to float32 under
 * Hugging Face's tensor names, and its tokenizer and chat template
 * (gguf_vocab.h). Architectures: "llama" (LlamaForCausalLM) and "qwen2"
 * (Qwen2ForCausalLM).
 *
 * llama.cpp's names map onto Hugging Face's:
 *   token_embd.weight        model.embed_tokens.weight
 *   output_norm.weight       model.norm.weight
 *   output.weight            lm_head.weight (absent: tied embeddings)
 *   blk.i.attn_norm.weight   model.layers.i.input_layernorm.weight
 *   blk.i.attn_{q,k,v}.*     model.layers.i.self_attn.{q,k,v}_proj.*
 *   blk.i.attn_output.weight model.layers.i.self_attn.o_proj.weight
 *   blk.i.ffn_norm.weight    model.layers.i.post_attention_layernorm.weight
 *   blk.i.ffn_{gate,up,down}.weight  model.layers.i.mlp.{gate,up,down}_proj.weight
 *
 * llama.cpp's converter reorders the rows of a Llama model's q and k
 * projections within each head for its RoPE layout (pairs (2j, 2j+1)
 * rotate together instead of (j, j + HD/2)): loading undoes it,
 *   HF row h*HD + s*HD/2 + j  =  GGUF row h*HD + 2j + s   (s in {0, 1}).
 * Qwen2 files are not reordered.
 *
 * Refused, each naming the key or tensor: other architectures, mixtures of
 * experts, RoPE scaling, a RoPE dimension other than the head size, tensor
 * types other than F32, F16, BF16, Q8_0, Q4_0 and Q4_1, a tensor of the
 * wrong shape, a missing tensor, and a tensor tern's decoder would not use
 * (rope_freqs.weight, say), since ignoring one would compute another model.
 */
#ifndef TERN_GGUF_MODEL_H
#define TERN_GGUF_MODEL_H

#include <stddef.h>

#include "decoder/model.h"
#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"

/* Whether `path` is a GGUF file (a regular file starting with "GGUF"). */
int gguf_model_is_gguf(const char *path);

/* Read the config of an opened file into c (and check it). 0, or -1 with a
 * message naming the key. */
int gguf_model_config(const gguf_file *f, const char *path, llama_config *c, char *err,
                      size_t errn);

/* Whether f holds exactly the tensors config c lays out, each of the shape
 * c implies and of a type tern reads: a check that allocates nothing the
 * config implies, made before the model is (a header's context_length or
 * embedding_length alone cannot cost gigabytes). 0, or -1 with a message
 * naming the tensor. */
int gguf_model_check_tensors(const gguf_file *f, const char *path, const llama_config *c,
                             char *err, size_t errn);

/* Fill m (initialised from the config gguf_model_config gave) with the
 * file's weights. 0, or -1 with a message naming the tensor. */
int gguf_model_load_weights(const gguf_file *f, const char *path, llama_model *m, char *err,
                            size_t errn);

/* The whole model of the GGUF file at path: its config into m (initialised
 * here: llama_model_free it), its weights, its tokenizer (*tok, free with
 * tokenizer_free) and, when tokenizer_config is not NULL, the
 * tokenizer_config.json text its chat template is read from (malloc'd). The
 * file is closed again. 0, or -1 with a message; what was made is freed. */
int gguf_model_load(const char *path, llama_model *m, tokenizer **tok, char **tokenizer_config,
                    char *err, size_t errn);

#endif
