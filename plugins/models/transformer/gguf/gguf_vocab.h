/*
 * gguf_vocab.h: a GGUF model's tokenizer and chat template, from its
 * tokenizer.ggml.* and tokenizer.chat_template keys, as the Hugging Face
 * tokenizer.json and tokenizer_config.json texts that tern's tokenizer and
 * chat templates read (and `tern model convert` writes out).
 *
 * Read: tokenizer.ggml.model "gpt2" (byte-level BPE; SentencePiece "llama"
 * vocabularies are refused), tokens, token_type (3 CONTROL: special added
 * tokens; 4 USER_DEFINED: added tokens that are not special), merges,
 * bos/eos/unknown/padding_token_id, add_bos_token, and the pre-tokenizer
 * that tokenizer.ggml.pre names, with llama.cpp's meaning of each name:
 *
 *   gpt-2, default (or absent)     GPT-2's regex (ByteLevel)
 *   smollm, starcoder, refact,     each digit alone, then GPT-2's regex
 *   codeshell                      (Digits individual_digits + ByteLevel)
 *   llama-bpe, llama3              Llama 3's regex
 *   qwen2                          Qwen2's regex
 *
 * Others are refused, naming the value. The texts are complete Hugging Face
 * files: transformers' AutoTokenizer loads them.
 */
#ifndef TERN_GGUF_VOCAB_H
#define TERN_GGUF_VOCAB_H

#include <stddef.h>

#include "gguf/gguf_file.h"

/* Build the two texts (malloc'd, NUL-terminated; free both) from f, opened
 * from `path` (for messages). 0, or -1 with a message naming the key. */
int gguf_vocab_texts(const gguf_file *f, const char *path, char **tokenizer_json,
                     size_t *tokenizer_len, char **config_json, size_t *config_len, char *err,
                     size_t errn);

#endif
