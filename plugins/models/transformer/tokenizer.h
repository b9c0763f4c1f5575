/*
 * tokenizer.h: text <-> token ids, behind one interface so that Hugging Face
 * BPE can be added beside the byte tokenizer without touching callers.
 *
 * The byte tokenizer maps each byte to its value (0..255) and adds three
 * special tokens: BOS 256, EOS 257, PAD 258 (vocabulary 259). Any byte
 * string, NULs and invalid UTF-8 included, encodes and decodes exactly.
 *
 * A tokenizer is saved as DIR/tokenizer.json; for the byte tokenizer:
 *   {"tern_tokenizer": "bytes", "version": 1, "bos_token_id": 256,
 *    "eos_token_id": 257, "pad_token_id": 258, "vocab_size": 259}
 */
#ifndef TERN_TOKENIZER_H
#define TERN_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

typedef struct tokenizer tokenizer; /* opaque */

/* The byte tokenizer. 0, or -1 when out of memory. *out is NULL on failure. */
int tokenizer_new_bytes(tokenizer **out);
/* Read DIR/tokenizer.json. 0, or -1 with a message in err (*out is then NULL). */
int tokenizer_load(const char *dir, tokenizer **out, char *err, size_t errn);
/* Write DIR/tokenizer.json atomically (DIR must exist). 0, or -1 with a message. */
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
/* Decode n ids; special tokens (BOS, EOS, PAD) are dropped. *text is
 * malloc'd and NUL-terminated, *len its length without the NUL (the text
 * itself may hold NULs). 0, or -1 with errno ERANGE when an id is outside
 * 0..vocab_size-1 (nothing is returned then), ENOMEM when out of memory. */
int tokenizer_decode(const tokenizer *t, const int32_t *ids, size_t n, char **text, size_t *len);
void tokenizer_free(tokenizer *t);

#endif
