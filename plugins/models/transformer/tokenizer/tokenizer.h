/*
 * tokenizer.h: text <-> token ids, behind one interface for the byte
 * tokenizer and Hugging Face byte-level BPE tokenizers.
 *
 * The byte tokenizer maps each byte to its value (0..255) and adds three
 * special tokens: BOS 256, EOS 257, PAD 258 (vocabulary 259). Any byte
 * string, NULs and invalid UTF-8 included, encodes and decodes exactly.
 * It is saved as DIR/tokenizer.json:
 *   {"tern_tokenizer": "bytes", "version": 1, "bos_token_id": 256,
 *    "eos_token_id": 257, "pad_token_id": 258, "vocab_size": 259}
 *
 * A Hugging Face tokenizer.json (the GPT-2, Llama 3 and Qwen2 families; what
 * is supported and refused is listed in bpe.h) encodes to exactly the ids of
 * the reference implementation: added and special token strings in the text
 * become their ids, and add_bos means HF's add_special_tokens (the
 * post-processor's tokens: <|begin_of_text|> for Llama 3, nothing for GPT-2
 * and Qwen2). BOS, EOS and PAD come from tokenizer_config.json beside it
 * (-1 without one, or where it names none); the vocabulary size is the
 * largest id of the vocabulary and added tokens plus one. Bytes that are not
 * valid UTF-8 encode as their byte tokens, so decoding still gives them back.
 * Saving writes tokenizer.json and tokenizer_config.json back unchanged.
 */
#ifndef TERN_TOKENIZER_H
#define TERN_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

typedef struct tokenizer tokenizer; /* opaque */

/* The byte tokenizer. 0, or -1 when out of memory. *out is NULL on failure. */
int tokenizer_new_bytes(tokenizer **out);
/* Read DIR/tokenizer.json: the byte tokenizer's, or a Hugging Face one (with
 * DIR/tokenizer_config.json when there is one). 0, or -1 with a message in
 * err naming the file and key (*out is then NULL). */
int tokenizer_load(const char *dir, tokenizer **out, char *err, size_t errn);
/* A Hugging Face tokenizer from texts rather than files (a GGUF model's,
 * gguf_vocab.h): json (json_len bytes) is tokenizer.json's text and config
 * tokenizer_config.json's, both malloc'd and NUL-terminated, taken over
 * (freed on failure too). `where` names them in messages. Saving writes the
 * two texts as files. 0, or -1 with a message. */
int tokenizer_load_text(const char *where, char *json, size_t json_len, char *config,
                        size_t config_len, tokenizer **out, char *err, size_t errn);
/* Write DIR/tokenizer.json atomically (DIR must exist); a Hugging Face
 * tokenizer writes back the bytes it read, and its tokenizer_config.json
 * too when it read one. 0, or -1 with a message. */
int tokenizer_save(const tokenizer *t, const char *dir, char *err, size_t errn);

int tokenizer_vocab_size(const tokenizer *t);
int tokenizer_bos(const tokenizer *t);
int tokenizer_eos(const tokenizer *t);
int tokenizer_pad(const tokenizer *t);

/* Encode len bytes of text (NULs allowed), BOS first when add_bos. *ids is
 * malloc'd (never NULL on success, free it), *n its length. 0, or -1 with
 * errno ENOMEM. */
int tokenizer_encode(const tokenizer *t, const char *text, size_t len, int add_bos, int32_t **ids,
                     size_t *n);
/* The id of a token string exactly as the tokenizer writes it (an added
 * token's content, or a vocabulary entry of a BPE tokenizer such as "Ġthe"),
 * or -1 when there is none (always, for the byte tokenizer). */
int32_t tokenizer_token_id(const tokenizer *t, const char *token);

/* Decode n ids; special tokens are dropped (BOS, EOS, PAD; for a BPE
 * tokenizer every added token marked special). Other ids give their bytes,
 * so a token that ends inside a UTF-8 character gives that part of it. *text is
 * malloc'd and NUL-terminated, *len its length without the NUL (the text
 * itself may hold NULs). 0, or -1 with errno ERANGE when an id is outside
 * 0..vocab_size-1 (nothing is returned then), ENOMEM when out of memory. */
int tokenizer_decode(const tokenizer *t, const int32_t *ids, size_t n, char **text, size_t *len);
void tokenizer_free(tokenizer *t);

#endif
