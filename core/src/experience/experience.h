/* experience.h: one rewarded group -- a task, its prompt and the G responses
 * an explorer generated for it -- as buffers (and, later, transports between
 * processes) carry it: a compact, versioned, checksummed byte encoding. A
 * buffer plugin sees opaque bytes (tern/buffer.h); docs/buffers.md ("The
 * experience encoding") documents the layout byte for byte for anyone reading
 * a buffer file.
 *
 * The group is the unit because everything downstream works per group:
 * advantages compare the responses of one task, a replay buffer reuses and
 * ages a group as a whole, and a step trains whole groups. The prompt is
 * stored once.
 *
 * Layout, format 5. Every number is little-endian whatever the host, so a
 * durable buffer's file reads the same on any machine:
 *   off   0  u32 magic "TXP1"        off   4  u32 format (5)
 *   off   8  u32 record bytes        off  12  u32 CRC-32C of bytes [16, end)
 *   off  16  i64 batch               off  24  i64 weight version (the group's)
 *   off  32  u32 task index          off  36  u32 group (task slot in its batch)
 *   off  40  u32 responses G (>= 1)  off  44  u32 prompt tokens P
 *   off  48  u64 generated at        off  56  u64 rewarded at (ns since the Unix epoch)
 *   off  64  f64 reward mean         off  72  f64 reward std (population, over G)
 *   off  80  f64 accuracy mean
 *   off  88  u16 domain bytes D      off  90  u16 task id bytes T
 *   off  92  u16 image path bytes I  off  94  u16 zero
 *   off  96  domain[D], task id[T] (UTF-8, no NUL), image path[I] (no NUL)
 *            when I > 0: u8 SHA-256 of the image file's bytes[32]
 *            i32 prompt tokens[P]
 *            G x response {
 *              i64 weight version     u32 response tokens R
 *              u16 finish (a tern_finish)  u16 reward failure (0 none, else a
 *                                          tern_reward_failure)
 *              f64 reward             f64 accuracy (1 right, 0 wrong)
 *              u16 reward parts C     C x { u8 name bytes N (1..64), name[N], f64 value }
 *              i32 tokens[R]          f32 behaviour logp[R]
 *              u16 segments S (>= 1)  u16 turn rewards K (0, or S's model segments)
 *              u16 end (a tern_traj_end)  u16 environment failure (0, else a
 *                                          tern_env_failure)
 *              S x { u32 tokens, u32 kind (a tern_segment_kind), i64 weight version }
 *              K x f64 turn reward
 *            }
 * A response is a trajectory (issue 57, docs/agents.md): its R tokens are
 * segments in order, the model's own (sampled at that weight version, with
 * their behaviour log-probs) and context (an environment's observation, a
 * tool's result, the template tokens between turns: logp 0, never trained
 * on); the segments' tokens add up to R. A prompt segment (kind 3) ends the
 * sequence before it: the trainer scores what follows as a sequence that
 * begins with it, not after the group's prompt and the turns before (a
 * workflow's call that started its conversation over). A one-answer response is one model
 * segment and no turn rewards. Its reward is the trajectory's return: the
 * sum of its turn rewards, plus any `rewards` section's verdict on it.
 * The group statistics are those of the G responses' rewards and
 * accuracies as scored (before any trainer-side term such as a KL penalty);
 * the decoder checks them against the responses. There is no advantage
 * field: the trainer computes advantages per group from rewards it may
 * still adjust (KL in the reward, length penalties), so a stored one could
 * only be stale.
 * The image (format 4, issue 27) is the file of the task's "image" as the
 * explorer resolved and read it, and the SHA-256 of the bytes it decoded:
 * the trainer decodes the same file for the policy's and the reference's
 * scoring and the backward pass, and refuses one whose bytes changed since,
 * so a replayed or resumed group is trained on the pixels it was sampled
 * from. Format 3 (the same without the image: offset 92 a u32 zero) is still
 * read, as groups without an image.
 * A new field means a new format number; decoders refuse formats they do not
 * know (format 2, one record per response, with a message saying so), and any
 * record whose length, checksum, inner sizes or statistics disagree. */
#ifndef TERN_EXPERIENCE_H
#define TERN_EXPERIENCE_H

#include <stddef.h>
#include <stdint.h>

#include "tern/environment.h" /* tern_traj_end, tern_env_failure */

#define TERN_EXPERIENCE_MAGIC 0x31505854u /* "TXP1" read as little-endian u32 */
#define TERN_EXPERIENCE_FORMAT 5u
#define TERN_EXPERIENCE_FORMAT_NO_SEGMENTS 4u /* still read: one-answer responses */
#define TERN_EXPERIENCE_FORMAT_NO_IMAGE 3u /* still read: groups without an image */
#define TERN_EXPERIENCE_HEADER 96u        /* bytes before the domain */
#define TERN_EXPERIENCE_MAX_PARTS 16u     /* reward components kept per response */
#define TERN_EXPERIENCE_NAME_MAX 64u      /* bytes of a component name */
#define TERN_EXPERIENCE_TEXT_MAX 1024u    /* bytes of the domain, of the task id */
#define TERN_EXPERIENCE_PATH_MAX 4096u    /* bytes of the image path */
#define TERN_EXPERIENCE_MAX_RESPONSES 65536u /* responses in one group */
#define TERN_EXPERIENCE_MAX_SEGMENTS 65535u  /* segments of one response */

/* What a run of a trajectory's tokens is (tern_exp_segment.kind). */
typedef enum tern_segment_kind {
    TERN_SEGMENT_MODEL = 1,   /* sampled by the policy: trained on */
    TERN_SEGMENT_CONTEXT = 2, /* an observation, a tool result, template tokens: not */
    TERN_SEGMENT_PROMPT = 3   /* a new sequence's prompt: the tokens before it are a
                                 sequence of their own, these begin the next (a
                                 workflow's call that rewrote the history); not
                                 trained on, never first or last, at least one token */
} tern_segment_kind;


/* One run of a trajectory's tokens. */
typedef struct tern_exp_segment {
    uint32_t len;    /* tokens */
    uint32_t kind;   /* a tern_segment_kind */
    int64_t version; /* the weight version that sampled a model segment (context: the same
                        as the turn before it) */
} tern_exp_segment;

/* One named reward component ("accuracy", "format", ...). */
typedef struct tern_reward_part {
    const char *name; /* 1..TERN_EXPERIENCE_NAME_MAX bytes */
    double value;
} tern_reward_part;

/* One response of a group. */
typedef struct tern_exp_response {
    int64_t version;     /* weight version that generated it */
    uint32_t finish;     /* a tern_finish (tern/model.h), < 65536 */
    uint32_t failure;    /* 0, or the tern_reward_failure that left it without a verdict */
    double reward, accuracy;
    uint32_t n_parts;
    tern_reward_part parts[TERN_EXPERIENCE_MAX_PARTS];
    uint32_t len;        /* response tokens R */
    int32_t *tokens;     /* [len] */
    float *logp;         /* [len]: behaviour log-probs of the tokens (context: 0) */
    /* the trajectory (format 5): its segments in order, their tokens adding
     * up to len; encoding 0 and NULL: one model segment at `version` (a
     * one-answer response). Decode always sets them. */
    uint32_t n_segments;
    tern_exp_segment *segments;
    uint32_t n_turns;    /* 0, or the model segments: one reward per model turn */
    double *turn_reward; /* [n_turns] */
    uint32_t end;        /* a tern_traj_end */
    uint32_t env_failure; /* 0, or the tern_env_failure that ended it */
} tern_exp_response;

/* One group: a task and its responses. */
typedef struct tern_experience {
    int64_t batch, version; /* explorer batch, weight version that generated it */
    uint32_t task_index;    /* the task's line in the training set (0-based) */
    uint32_t group;         /* task slot in the batch */
    uint64_t generated_ns;  /* wall clock when the responses were generated, ns since 1970 */
    uint64_t rewarded_ns;   /* wall clock when they were scored */
    /* over the responses: set by tern_experience_finish_stats (encode writes
     * what is here; decode refuses a record whose figures disagree) */
    double reward_mean, reward_std, accuracy_mean;
    const char *domain;     /* the task's domain ("" if none) */
    const char *task_id;    /* the task's id as text ("" if none) */
    /* the task's image file as the explorer resolved it, NULL (or "" when
     * encoding) for a task without one; and the SHA-256 of its bytes as the
     * explorer read them (format 4) */
    const char *image;
    unsigned char image_sha256[32];
    uint32_t prompt_len;
    int32_t *prompt;        /* [prompt_len] */
    uint32_t n;             /* responses G */
    tern_exp_response *resp; /* [n] */
    void *owned;            /* set by decode: the one block the pointers above point into */
} tern_experience;

/* Set e's reward_mean, reward_std and accuracy_mean from its responses (in
 * the one order the decoder checks them in, so the same doubles): mean =
 * sum / G in response order, std = sqrt(max(0, sum of squares / G - mean^2)),
 * accuracy mean = sum / G. Never NaN for finite rewards (a variance of
 * inf - inf counts as 0). All 0 when there is no response. */
void tern_experience_finish_stats(tern_experience *e);
/* Bytes the encoding of `e` takes, or 0 (with a message) when a field is over
 * its limit: segments whose tokens do not add up to the response's, of no
 * known kind, turn rewards neither 0 nor one per model segment or not finite,
 * an end or environment failure of no known name,
 * a domain or task id over TERN_EXPERIENCE_TEXT_MAX bytes, no
 * response or over TERN_EXPERIENCE_MAX_RESPONSES, more than
 * TERN_EXPERIENCE_MAX_PARTS parts, a part name empty or over the limit, a
 * finish or failure over 65535, an image path over TERN_EXPERIENCE_PATH_MAX
 * bytes, or a record over 4 GiB. Also 0 for what the
 * decoder would refuse, so that a record written can be read: a reward,
 *  accuracy or part value not finite, or statistics that disagree (beyond
 * rounding: relative 1e-9) with those
 * tern_experience_finish_stats sets. NULL domain and task id count as "". */
size_t tern_experience_bytes(const tern_experience *e);
/* Encode into buf, which holds tern_experience_bytes(e) (> 0) bytes. */
void tern_experience_encode(const tern_experience *e, void *buf);
/* Decode `len` bytes into *e, which then owns copies of everything (free
 * with tern_experience_clear; the struct may be copied, the copy then owns
 * them). Format 5; format 4 as one-answer responses (one model segment each,
 * no turn rewards); format 3 as those and without an image (e->image NULL).
 * TERN_EINVAL with a message for bytes that are not a complete, intact
 * group of a known format (*e is then empty), TERN_ENOMEM. */
int tern_experience_decode(const void *buf, size_t len, tern_experience *e);
/* Free what decode allocated and empty *e. An experience built by the
 * caller (owned == NULL) is only emptied. */
void tern_experience_clear(tern_experience *e);

#endif
