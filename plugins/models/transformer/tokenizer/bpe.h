/*
 * bpe.h: Hugging Face tokenizer.json byte-level BPE tokenizers (the GPT-2,
 * Llama 3 and Qwen2 families), giving the ids of the reference
 * implementation (tests/ref/tokenizers/). tokenizer.c puts this behind the
 * tokenizer interface; the semantics are documented in tokenizer.h.
 *
 * Supported in tokenizer.json: model BPE (vocab, merges as "a b" or
 * ["a", "b"], unk_token, byte_fallback, ignore_merges), added_tokens
 * (special or not, lstrip, rstrip, normalized), normalizer null or NFC,
 * pre_tokenizer ByteLevel or a Sequence of known Split regexes, Digits and
 * ByteLevel (pretokenize.h), post_processor null, ByteLevel or TemplateProcessing (or a
 * Sequence of them), decoder ByteLevel. Anything else is refused with a
 * message naming the key. "truncation" and "padding" are ignored: tern
 * handles lengths itself.
 */
#ifndef TERN_BPE_H
#define TERN_BPE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

typedef struct bpe bpe;

/* Build from root, the parsed tokenizer.json at path (whose bytes are
 * json[0..json_len), kept to be saved unchanged; bpe_load takes them over and
 * frees them on failure), with the tokenizer_config.json text `config`
 * (config_len bytes, malloc'd and NUL-terminated; taken over likewise) or,
 * when config is NULL, the tokenizer_config.json beside path when there is
 * one. 0, or -1 with a message in err. */
int bpe_load(const char *path, json_t *root, char *json, size_t json_len, char *config,
             size_t config_len, bpe **out, char *err, size_t errn);
/* Write tokenizer.json (and tokenizer_config.json if one was loaded) into
 * dir, atomically and byte for byte as they were read. */
int bpe_save(const bpe *b, const char *dir, char *err, size_t errn);
void bpe_free(bpe *b);
/* The largest tokenizer.json or tokenizer_config.json read (the largest
 * Hugging Face ones are some tens of MiB). */
#define BPE_FILE_MAX (256ull << 20)
/* Read a whole regular file of at most BPE_FILE_MAX bytes: *buf malloc'd
 * and NUL-terminated, *len its length. 0, or -1 with errno (ENOENT when
 * there is no such file) and the reason in why[whyn]
 * (tern/support/regular_file.h). */
int bpe_read_file(const char *path, char **buf, size_t *len, char *why, size_t whyn);

int bpe_vocab_size(const bpe *b);
int bpe_bos(const bpe *b);
int bpe_eos(const bpe *b);
int bpe_pad(const bpe *b);
int32_t bpe_token_id(const bpe *b, const char *token);
/* 1 for an added token marked "special" (decoding drops it). */
int bpe_is_special(const bpe *b, int32_t id);

/* HF encode(text, add_special_tokens=add_special). *ids malloc'd. 0, or -1
 * with errno ENOMEM. */
int bpe_encode(const bpe *b, const char *text, size_t len, int add_special, int32_t **ids,
               size_t *n);
/* The bytes of id (0 <= id < vocab size) into out (room for bpe_max_bytes). */
size_t bpe_decode_one(const bpe *b, int32_t id, char *out);
size_t bpe_max_bytes(const bpe *b);

#endif
