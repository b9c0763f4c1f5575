/* experience.h: one rewarded response as the buffer carries it -- the core's
 * versioned byte encoding (a buffer plugin sees opaque bytes, buffer.h).
 *
 * Layout (native byte order; a buffer never leaves the machine it was
 * written on -- a durable buffer stores the magic and refuses another):
 *   off  0  u32 magic "TXP1"      off  4  u32 format (1)
 *   off  8  i64 batch             off 16  i64 weight version
 *   off 24  u32 task index        off 28  u32 group (task slot in the batch)
 *   off 32  u32 sample in group   off 36  u32 finish (1 stop token, 2 length)
 *   off 40  f64 reward            off 48  f64 accuracy (1 right, 0 wrong)
 *   off 56  u32 prompt tokens P   off 60  u32 response tokens R
 *   off 64  i32 tokens[P + R]     then f32 behaviour logp[R]
 * Appending fields means a new format number; decoders refuse formats they
 * do not know, with a message. */
#ifndef TERN_LOOP_EXPERIENCE_H
#define TERN_LOOP_EXPERIENCE_H

#include <stddef.h>
#include <stdint.h>

#define TERN_EXPERIENCE_MAGIC 0x31505854u /* "TXP1" read as little-endian u32 */
#define TERN_EXPERIENCE_FORMAT 1u

typedef struct tern_experience {
    int64_t batch, version;
    uint32_t task_index, group, sample, finish;
    double reward, accuracy;
    uint32_t prompt_len, response_len;
    int32_t *tokens; /* [prompt_len + response_len]: prompt, then response */
    float *logp;     /* [response_len]: behaviour log-probs of the response tokens */
} tern_experience;

/* Bytes the encoding of `e` takes. */
size_t tern_experience_bytes(const tern_experience *e);
/* Encode into buf (tern_experience_bytes(e) bytes). */
void tern_experience_encode(const tern_experience *e, void *buf);
/* Decode `len` bytes into *e, which then owns copies of tokens and logp (free
 * with tern_experience_clear). TERN_EINVAL with a message for bytes that are
 * not an experience of a known format. */
int tern_experience_decode(const void *buf, size_t len, tern_experience *e);
void tern_experience_clear(tern_experience *e);

#endif
