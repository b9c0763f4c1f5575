/*
 * hf_config.h: a model's Hugging Face config.json, read into and written
 * from llama_config, and the built-in model presets. Architectures:
 * LlamaForCausalLM ("llama"), Qwen2ForCausalLM ("qwen2"), GPT2LMHeadModel
 * ("gpt2"); see llama.h.
 *
 * Reading refuses what tern's decoders do not implement (other
 * architectures, RoPE scaling other than Llama 3's, activations other than
 * SiLU / GPT-2's tanh GELU, a head_dim other than hidden_size /
 * num_attention_heads, Qwen2's sliding window, GPT-2's attention variants)
 * instead of silently computing a different model; each message names the
 * file and the key. Writing produces a file that transformers' config class
 * of the architecture (LlamaConfig, Qwen2Config, GPT2Config) loads.
 */
#ifndef TERN_HF_CONFIG_H
#define TERN_HF_CONFIG_H

#include <stddef.h>

#include "decoder/llama.h"

/* The largest config.json or model.safetensors.index.json read. */
#define HF_JSON_MAX (64ull << 20)

/* Read and check `path`. 0, or -1 with a message in err naming the file and
 * the key. */
int hf_config_read(const char *path, llama_config *c, char *err, size_t errn);
/* Write c as config.json at `path` (atomically). 0, or -1 with a message. */
int hf_config_write(const char *path, const llama_config *c, char *err, size_t errn);
/* Fill c with preset `name` ("tiny" or "bench", both for the byte
 * tokenizer). 0, or -1 with a message listing the presets. */
int llama_preset(const char *name, llama_config *c, char *err, size_t errn);

/* What a JSON value is, for messages ("an object", "a real number", "null"):
 * the config.json and safetensors header readers share the wording. */
struct json_t;
const char *hf_json_kind(const struct json_t *v);

#endif
