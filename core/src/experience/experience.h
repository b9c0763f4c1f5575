/* experience.h: one rewarded response as buffers (and, later, transports
 * between processes) carry it: a compact, versioned, checksummed byte
 * encoding. A buffer plugin sees opaque bytes (tern/buffer.h);
 * docs/buffers.md documents the layout for anyone reading a buffer file.
 *
 * Layout, format 2. Every number is little-endian whatever the host, so a
 * durable buffer's file reads the same on any machine:
 *   off   0  u32 magic "TXP1"        off   4  u32 format (2)
 *   off   8  u32 record bytes        off  12  u32 CRC-32C of bytes [16, end)
 *   off  16  i64 batch               off  24  i64 weight version
 *   off  32  u32 task index          off  36  u32 group (task slot in its batch)
 *   off  40  u32 sample in group     off  44  u32 finish (1 stop token, 2 length)
 *   off  48  f64 reward              off  56  f64 accuracy (1 right, 0 wrong)
 *   off  64  f64 advantage (NaN until an algorithm sets it)
 *   off  72  u64 generated at        off  80  u64 rewarded at (ns since the Unix epoch)
 *   off  88  u32 prompt tokens P     off  92  u32 response tokens R
 *   off  96  u16 domain bytes D      off  98  u16 task id bytes T
 *   off 100  u16 reward parts C      off 102  u16 zero
 *   off 104  domain[D], task id[T] (UTF-8, no NUL)
 *            C x { u8 name bytes N (1..64), name[N], f64 value }
 *            i32 tokens[P + R] (prompt, then response), f32 behaviour logp[R]
 * A new field means a new format number; decoders refuse formats they do not
 * know, and any record whose length, checksum or inner sizes disagree, with
 * a message. Format 1 (native byte order, no checksum) was never stored. */
#ifndef TERN_EXPERIENCE_H
#define TERN_EXPERIENCE_H

#include <stddef.h>
#include <stdint.h>

#define TERN_EXPERIENCE_MAGIC 0x31505854u /* "TXP1" read as little-endian u32 */
#define TERN_EXPERIENCE_FORMAT 2u
#define TERN_EXPERIENCE_HEADER 104u       /* bytes before the domain */
#define TERN_EXPERIENCE_MAX_PARTS 16u     /* reward components kept per experience */
#define TERN_EXPERIENCE_NAME_MAX 64u      /* bytes of a component name */
#define TERN_EXPERIENCE_TEXT_MAX 1024u    /* bytes of the domain, of the task id */

/* One named reward component ("accuracy", "format", ...). */
typedef struct tern_reward_part {
    const char *name; /* 1..TERN_EXPERIENCE_NAME_MAX bytes */
    double value;
} tern_reward_part;

typedef struct tern_experience {
    int64_t batch, version; /* explorer batch, weight version that generated it */
    uint32_t task_index;    /* the task's line in the training set (0-based) */
    uint32_t group, sample; /* task slot in the batch, response in its group */
    uint32_t finish;        /* a tern_finish (tern/model.h) */
    double reward, accuracy;
    double advantage;       /* NaN: not computed (the trainer computes it per group) */
    uint64_t generated_ns;  /* wall clock when the response was generated, ns since 1970 */
    uint64_t rewarded_ns;   /* wall clock when it was scored */
    const char *domain;     /* the task's domain ("" if none) */
    const char *task_id;    /* the task's id as text ("" if none) */
    uint32_t n_parts;
    tern_reward_part parts[TERN_EXPERIENCE_MAX_PARTS];
    uint32_t prompt_len, response_len;
    int32_t *tokens; /* [prompt_len + response_len]: prompt, then response */
    float *logp;     /* [response_len]: behaviour log-probs of the response tokens */
    void *owned;     /* set by decode: the one block the pointers above point into */
} tern_experience;

/* Bytes the encoding of `e` takes, or 0 (with a message) when a field is over
 * its limit: a domain or task id over TERN_EXPERIENCE_TEXT_MAX bytes, more than
 * TERN_EXPERIENCE_MAX_PARTS parts, a part name empty or over the limit, or a
 * record over 4 GiB. NULL domain and task id count as "". */
size_t tern_experience_bytes(const tern_experience *e);
/* Encode into buf, which holds tern_experience_bytes(e) (> 0) bytes. */
void tern_experience_encode(const tern_experience *e, void *buf);
/* Decode `len` bytes into *e, which then owns copies of everything (free
 * with tern_experience_clear; the struct may be copied, the copy then owns
 * them). TERN_EINVAL with a message for bytes that are not a complete, intact
 * experience of a known format (*e is then empty), TERN_ENOMEM. */
int tern_experience_decode(const void *buf, size_t len, tern_experience *e);
/* Free what decode allocated and empty *e. An experience built by the
 * caller (owned == NULL) is only emptied. */
void tern_experience_clear(tern_experience *e);

#endif
