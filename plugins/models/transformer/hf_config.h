/*
 * hf_config.h: a Llama model's Hugging Face config.json, read into and
 * written from llama_config, and the built-in model presets.
 *
 * Reading refuses what tern's decoder does not implement (rope_scaling,
 * attention or MLP biases, activations other than SiLU, a head_dim other
 * than hidden_size / num_attention_heads) instead of silently computing a
 * different model. Writing produces a file that transformers' LlamaConfig
 * and LlamaForCausalLM load.
 */
#ifndef TERN_HF_CONFIG_H
#define TERN_HF_CONFIG_H

#include <stddef.h>

#include "llama.h"

/* Read and check `path`. 0, or -1 with a message in err naming the file and
 * the key. */
int hf_config_read(const char *path, llama_config *c, char *err, size_t errn);
/* Write c as config.json at `path` (atomically). 0, or -1 with a message. */
int hf_config_write(const char *path, const llama_config *c, char *err, size_t errn);
/* Fill c with preset `name` ("tiny" or "bench", both for the byte
 * tokenizer). 0, or -1 with a message listing the presets. */
int llama_preset(const char *name, llama_config *c, char *err, size_t errn);

#endif
