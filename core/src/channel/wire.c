/* wire.c: the roles' messages as bytes (wire.h), format 5.
 *
 * The encoder appends the fields to a growable buffer and refuses what the
 * decoder would refuse, where the bug is. The decoder reads through a
 * cursor that checks every size against the bytes left before it reads or
 * allocates anything (a count is first checked against the least its
 * entries can take, so a forged count cannot ask for gigabytes); it builds
 * the message in zeroed memory, so a half-built one is freed by
 * tern_msg_free like any other, and it refuses what the encoder cannot
 * write (a NUL inside a string, an unknown string tag, a role that is not
 * one of the four), so an accepted message encodes back to the same bytes,
 * JSON text aside (which is re-spelt canonically).
 *
 * The fields, in order (iN/uN: little-endian integers of N bits; f64/f32:
 * IEEE bits as u64/u32; str: u8 tag 0 NULL | 1 text, then u32 length and the
 * bytes; json: a str holding compact JSON text, NULL for no value; [n]: n
 * entries):
 *   header      "TRNW" u16 format u16 kind                               8 bytes
 *   EXPLORE     i64 batch, i64 min_version, i64 plan_batch, u32 n, u32 task_index[n],
 *               n x (str prompt (not NULL), str system, str image)
 *   SFT_BATCH   i64 step, u32 n, n x (str prompt, str answer (neither NULL), str system,
 *               str image)
 *   ROLLOUT     i64 batch, i64 version, u32 explorer, u32 n, u32 group_size,
 *               f64 gen_seconds, f64 wait_seconds, u64 gen_tokens,
 *               u64 done_unix_ns, u64 tool_calls, u64 tool_invalid, u64 tool_failed,
 *               u64 wf_calls, u64 wf_rewrites,
 *               n x (u32 task_index, u32 prompt_len, i32 prompt_tokens[prompt_len],
 *                    str image, when it is not NULL u8 image_sha256[32]),
 *               n * group_size x (u32 len, u32 finish, i32 tokens[len],
 *                                 f32 logp[len], str text (not NULL),
 *                                 u32 n_segments (0 or odd), u32 seg_len[n_segments]
 *                                 (adding up to len), u32 n_turns (0 or
 *                                 (n_segments + 1) / 2), f64 turn_reward[n_turns],
 *                                 u32 end, u32 env_failure, str env_reason,
 *                                 u32 n_restarts, u32 restart[n_restarts] (odd,
 *                                 increasing, < n_segments))
 *   the others  i64 step, i64 version, i64 batch, i64 rollout_version,
 *   (step)      u64 n_consumed, u64 consumed[n_consumed],
 *               json figures (an object), json groups (an array),
 *               i32 published, i32 in_rl, i32 rl_fresh, i64 sft_step,
 *               loss: f64 loss, pg_loss, kl, entropy, clip_frac, ratio_mean,
 *                     mismatch_kl, is_weight_mean, u64 tokens,
 *               f64 grad_norm, f64 lr, f64 reward_mean, f64 staleness,
 *               u64 stale, u64 train_tokens, f64 train_seconds,
 *               f64 wait_seconds, i32 status,
 *               eval: u8 0 (NULL) | 1, then i64 version, u64 count,
 *                     count x (str name (not NULL), u32 dtype, u32 ndim (<= 4),
 *                              i64 shape[4], u64 bytes, the bytes),
 *               str saved, str error, str role ("explorer", "trainer",
 *               "reward", "master" or NULL) */
#include "channel/wire.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/errmsg.h"
#include "channel/messages.h"

/* The fixed-size runs of fields (bytes), between the variable parts. */
#define HEADER_BYTES 8u
#define EXPLORE_FIXED 28u    /* batch, min_version, plan_batch, n */
#define SFT_FIXED 12u        /* step, n */
#define ROLLOUT_FIXED 100u   /* batch .. wf_rewrites */
#define PROMPT_FIXED 8u      /* task_index, prompt_len */
#define PROMPT_MIN (PROMPT_FIXED + NULLABLE_MIN) /* and the image's tag */
#define SHA256_BYTES 32u
#define RESPONSE_FIXED 8u    /* len, finish */
#define STEP_HEAD 40u        /* step, version, batch, rollout_version, n_consumed */
#define STEP_FIXED 160u      /* published .. status */
#define TENSOR_FIXED 48u     /* dtype, ndim, shape[4], bytes */
#define SNAPSHOT_FIXED 16u   /* version, count */
#define TRAIN_FIXED 13u      /* order, step, has a warm-up job */
#define GROUP_MIN 8u         /* a group: its length */
#define ASK_FIXED 8u         /* route, n */
#define ASK_ITEM_MIN (2 * STR_MIN + NULLABLE_MIN + 4u)
#define REPLY_FIXED 12u      /* failure, reward */
#define REPLY_MIN (REPLY_FIXED + STR_MIN + 4u)
#define COMP_MIN (STR_MIN + 8u)

/* The least bytes one entry of a counted list takes: what a count is
 * checked against before anything is allocated for it. */
#define STR_MIN 5u      /* a text string: tag and length */
#define NULLABLE_MIN 1u /* a string that may be NULL: its tag */
#define EXPLORE_TASK_MIN (4u + STR_MIN + 2 * NULLABLE_MIN)
#define SFT_PAIR_MIN (2 * STR_MIN + 2 * NULLABLE_MIN)
#define TRAJECTORY_MIN 21u /* n_segments, n_turns, end, env_failure, env_reason's tag,
                              n_restarts */
#define RESPONSE_MIN (RESPONSE_FIXED + STR_MIN + TRAJECTORY_MIN)
#define TENSOR_MIN (STR_MIN + TENSOR_FIXED)

/* The roles a step message may name; a decoded one points at these. */
static const char *const roles[] = {"explorer", "trainer", "reward", "master"};
#define N_ROLES (sizeof roles / sizeof roles[0])

static int is_step_kind(int kind) { return kind >= TERN_MSG_SFT_DONE && kind <= TERN_MSG_FAILED; }

/* ---- encoding: a growable byte buffer ----------------------------------------- */

typedef struct writer {
    unsigned char *p;
    size_t len, cap;
    int rc; /* the first failure (its message set then), TERN_OK while none */
} writer;

/* Record the first failure: later appends do nothing. */
TERN_PRINTF(3, 4) static void w_fail(writer *w, int rc, const char *fmt, ...)
{
    if (w->rc != TERN_OK)
        return;
    va_list ap;
    va_start(ap, fmt);
    w->rc = tern_verrorf(rc, fmt, ap);
    va_end(ap);
}

static void w_bytes(writer *w, const void *src, size_t n)
{
    if (w->rc != TERN_OK)
        return;
    if (n > w->cap - w->len) {
        size_t cap = w->cap ? w->cap : 256;
        while (n > cap - w->len) {
            if (cap > SIZE_MAX / 2) {
                w_fail(w, TERN_ENOMEM, "a wire message of over %zu bytes cannot be encoded",
                       w->len);
                return;
            }
            cap *= 2;
        }
        unsigned char *p = realloc(w->p, cap);
        if (!p) {
            w_fail(w, TERN_ENOMEM, "out of memory encoding a wire message (%zu bytes)", cap);
            return;
        }
        w->p = p, w->cap = cap;
    }
    if (n)
        memcpy(w->p + w->len, src, n);
    w->len += n;
}

static void w_uint(writer *w, uint64_t v, int bytes)
{
    unsigned char b[8];
    for (int i = 0; i < bytes; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    w_bytes(w, b, (size_t)bytes);
}

static void w_u8(writer *w, uint8_t v) { w_uint(w, v, 1); }
static void w_u16(writer *w, uint16_t v) { w_uint(w, v, 2); }
static void w_u32(writer *w, uint32_t v) { w_uint(w, v, 4); }
static void w_u64(writer *w, uint64_t v) { w_uint(w, v, 8); }
static void w_i32(writer *w, int32_t v) { w_uint(w, (uint32_t)v, 4); }
static void w_i64(writer *w, int64_t v) { w_uint(w, (uint64_t)v, 8); }

static void w_f64(writer *w, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    w_u64(w, u);
}

static void w_f32(writer *w, float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    w_u32(w, u);
}

/* A string; NULL is refused when `required` (`what` names it). */
static void w_str(writer *w, const char *s, int required, const char *what)
{
    if (!s) {
        if (required)
            w_fail(w, TERN_EINVAL, "cannot encode %s: it is NULL", what);
        w_u8(w, 0);
        return;
    }
    size_t n = strlen(s);
    if (n > UINT32_MAX) {
        w_fail(w, TERN_EINVAL, "cannot encode %s: %zu bytes, over the 4 GiB a string holds",
               what, n);
        return;
    }
    w_u8(w, 1);
    w_u32(w, (uint32_t)n);
    w_bytes(w, s, n);
}

/* A jansson value of type `type`, or NULL, as its JSON text. Reals are
 * written with 17 significant digits, which read back as the same double. */
static void w_json(writer *w, const json_t *j, json_type type, const char *what)
{
    if (!j) {
        w_u8(w, 0);
        return;
    }
    if (json_typeof(j) != type) {
        w_fail(w, TERN_EINVAL, "cannot encode %s: it is not a JSON %s", what,
               type == JSON_OBJECT ? "object" : "array");
        return;
    }
    char *text = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(17));
    if (!text) {
        w_fail(w, TERN_ENOMEM, "cannot encode %s as JSON (out of memory, or a value that "
               "holds itself)", what);
        return;
    }
    w_str(w, text, 1, what);
    free(text);
}

/* An array of n 32-bit entries (`what` names it: NULL only when n is 0). */
static void w_i32s(writer *w, const int32_t *v, uint32_t n, const char *what, uint32_t i)
{
    if (n && !v) {
        w_fail(w, TERN_EINVAL, "cannot encode %s %u: %u entries but no array", what, i, n);
        return;
    }
    for (uint32_t k = 0; k < n; k++)
        w_i32(w, v[k]);
}

static void encode_explore(writer *w, const tern_explore_job *j)
{
    w_i64(w, j->batch);
    w_i64(w, j->min_version);
    w_i64(w, j->plan_batch);
    w_u32(w, j->n);
    if (j->n && (!j->task_index || !j->prompt || !j->system)) {
        w_fail(w, TERN_EINVAL, "cannot encode an explore job of %u tasks with a NULL array", j->n);
        return;
    }
    for (uint32_t i = 0; i < j->n; i++)
        w_u32(w, j->task_index[i]);
    for (uint32_t i = 0; i < j->n && w->rc == TERN_OK; i++) {
        w_str(w, j->prompt[i], 1, "an explore job's prompt");
        w_str(w, j->system[i], 0, "an explore job's system turn");
        w_str(w, j->image ? j->image[i] : NULL, 0, "an explore job's image");
    }
}

static void encode_sft(writer *w, const tern_sft_job *j)
{
    w_i64(w, j->step);
    w_u32(w, j->n);
    if (j->n && (!j->prompt || !j->answer || !j->system)) {
        w_fail(w, TERN_EINVAL, "cannot encode a warm-up job of %u pairs with a NULL array", j->n);
        return;
    }
    for (uint32_t i = 0; i < j->n && w->rc == TERN_OK; i++) {
        w_str(w, j->prompt[i], 1, "a warm-up job's prompt");
        w_str(w, j->answer[i], 1, "a warm-up job's answer");
        w_str(w, j->system[i], 0, "a warm-up job's system turn");
        w_str(w, j->image ? j->image[i] : NULL, 0, "a warm-up job's image");
    }
}

static void encode_rollout(writer *w, const tern_rollout_msg *m)
{
    w_i64(w, m->batch);
    w_i64(w, m->version);
    w_u32(w, m->explorer);
    w_u32(w, m->n);
    w_u32(w, m->group_size);
    w_f64(w, m->gen_seconds);
    w_f64(w, m->wait_seconds);
    w_u64(w, m->gen_tokens);
    w_u64(w, m->done_unix_ns);
    w_u64(w, m->tool_calls);
    w_u64(w, m->tool_invalid);
    w_u64(w, m->tool_failed);
    w_u64(w, m->wf_calls);
    w_u64(w, m->wf_rewrites);
    size_t total = (size_t)m->n * m->group_size; /* no overflow: 64-bit size_t */
    if ((m->n && (!m->task_index || !m->prompt_tokens || !m->prompt_len)) || (total && !m->resp)) {
        w_fail(w, TERN_EINVAL, "cannot encode a rollout of %u prompts x %u responses with a "
               "NULL array", m->n, m->group_size);
        return;
    }
    for (uint32_t i = 0; i < m->n && w->rc == TERN_OK; i++) {
        w_u32(w, m->task_index[i]);
        w_u32(w, m->prompt_len[i]);
        w_i32s(w, m->prompt_tokens[i], m->prompt_len[i], "a rollout's prompt", i);
        const char *image = m->image ? m->image[i] : NULL;
        if (image && !m->image_sha256) {
            w_fail(w, TERN_EINVAL, "cannot encode prompt %u of a rollout: an image but no "
                   "digest", i);
            return;
        }
        w_str(w, image, 0, "a rollout's image");
        if (image)
            w_bytes(w, m->image_sha256 + (size_t)i * SHA256_BYTES, SHA256_BYTES);
    }
    for (size_t i = 0; i < total && w->rc == TERN_OK; i++) {
        const tern_response *r = &m->resp[i];
        w_u32(w, r->len);
        w_u32(w, r->finish);
        w_i32s(w, r->tokens, r->len, "a rollout's response", (uint32_t)i);
        if (r->len && !r->logp)
            w_fail(w, TERN_EINVAL, "cannot encode response %zu of a rollout: %u tokens but no "
                   "log-probs", i, r->len);
        for (uint32_t k = 0; k < r->len && w->rc == TERN_OK; k++)
            w_f32(w, r->logp[k]);
        w_str(w, r->text, 1, "a rollout's response text");
        const char *bad = tern_response_trajectory_problem(r);
        if (bad) {
            w_fail(w, TERN_EINVAL, "cannot encode response %zu of a rollout: %s", i, bad);
            return;
        }
        w_u32(w, r->n_segments);
        for (uint32_t k = 0; k < r->n_segments; k++)
            w_u32(w, r->seg_len[k]);
        w_u32(w, r->n_turns);
        for (uint32_t k = 0; k < r->n_turns; k++)
            w_f64(w, r->turn_reward[k]);
        w_u32(w, r->end);
        w_u32(w, r->env_failure);
        w_str(w, r->env_reason, 0, "a rollout's environment reason");
        w_u32(w, r->n_restarts);
        for (uint32_t k = 0; k < r->n_restarts; k++)
            w_u32(w, r->restart[k]);
    }
}

static void encode_snapshot(writer *w, const tern_snapshot *s)
{
    if (!s) {
        w_u8(w, 0);
        return;
    }
    const tern_tensor *t;
    size_t n;
    tern_snapshot_tensors(s, &t, &n);
    w_u8(w, 1);
    w_i64(w, tern_snapshot_version(s));
    w_u64(w, n);
    for (size_t i = 0; i < n && w->rc == TERN_OK; i++) {
        if (t[i].ndim > 4) {
            w_fail(w, TERN_EINVAL, "cannot encode tensor %zu (%s) of the weights: %u dimensions, "
                   "over the 4 a tensor has", i, t[i].name ? t[i].name : "", t[i].ndim);
            return;
        }
        if (t[i].bytes && !t[i].data) {
            w_fail(w, TERN_EINVAL, "cannot encode tensor %zu of the weights: %zu bytes but no "
                   "data", i, t[i].bytes);
            return;
        }
        w_str(w, t[i].name ? t[i].name : "", 1, "a tensor's name");
        w_u32(w, t[i].dtype);
        w_u32(w, t[i].ndim);
        for (int d = 0; d < 4; d++)
            w_i64(w, t[i].shape[d]);
        w_u64(w, t[i].bytes);
        w_bytes(w, t[i].data, t[i].bytes);
    }
}

static void encode_step(writer *w, const tern_step_msg *m)
{
    w_i64(w, m->step);
    w_i64(w, m->version);
    w_i64(w, m->batch);
    w_i64(w, m->rollout_version);
    w_u64(w, m->n_consumed);
    if (m->n_consumed && !m->consumed) {
        w_fail(w, TERN_EINVAL, "cannot encode a step message that consumed %zu groups with no "
               "ids", m->n_consumed);
        return;
    }
    for (size_t i = 0; i < m->n_consumed; i++)
        w_u64(w, m->consumed[i]);
    w_json(w, m->figures, JSON_OBJECT, "a step message's figures");
    w_json(w, m->groups, JSON_ARRAY, "a step message's groups");
    w_i32(w, m->published);
    w_i32(w, m->in_rl);
    w_i32(w, m->rl_fresh);
    w_i64(w, m->sft_step);
    w_f64(w, m->loss.loss);
    w_f64(w, m->loss.pg_loss);
    w_f64(w, m->loss.kl);
    w_f64(w, m->loss.entropy);
    w_f64(w, m->loss.clip_frac);
    w_f64(w, m->loss.ratio_mean);
    w_f64(w, m->loss.mismatch_kl);
    w_f64(w, m->loss.is_weight_mean);
    w_u64(w, m->loss.tokens);
    w_f64(w, m->grad_norm);
    w_f64(w, m->lr);
    w_f64(w, m->reward_mean);
    w_f64(w, m->staleness);
    w_u64(w, m->stale);
    w_u64(w, m->train_tokens);
    w_f64(w, m->train_seconds);
    w_f64(w, m->wait_seconds);
    w_i32(w, m->status);
    encode_snapshot(w, m->eval);
    w_str(w, m->saved, 0, "a step message's checkpoint directory");
    w_str(w, m->error, 0, "a step message's error");
    if (m->role) {
        size_t r = 0;
        while (r < N_ROLES && strcmp(m->role, roles[r]) != 0)
            r++;
        if (r == N_ROLES)
            w_fail(w, TERN_EINVAL, "cannot encode a step message from role '%s': a role is "
                   "explorer, trainer, reward or master", m->role);
    }
    w_str(w, m->role, 0, "a step message's role");
}

static void encode_train(writer *w, const tern_train_msg *m)
{
    w_u32(w, m->order);
    w_i64(w, m->step);
    w_u8(w, m->sft != NULL);
    if (m->sft)
        encode_sft(w, m->sft);
    w_u32(w, m->n);
    if (m->n && (!m->group || !m->group_len)) {
        w_fail(w, TERN_EINVAL, "cannot encode a train order of %u groups with a NULL array",
               m->n);
        return;
    }
    for (uint32_t i = 0; i < m->n && w->rc == TERN_OK; i++) {
        if (m->group_len[i] && !m->group[i]) {
            w_fail(w, TERN_EINVAL, "cannot encode a train order's group %u: NULL", i);
            return;
        }
        w_u64(w, m->group_len[i]);
        w_bytes(w, m->group[i], m->group_len[i]);
    }
}

static void encode_reward_ask(writer *w, const tern_reward_ask *a)
{
    w_u32(w, a->route);
    w_u32(w, a->n);
    if (a->n && (!a->task || !a->origin || !a->response || !a->tokens)) {
        w_fail(w, TERN_EINVAL, "cannot encode a reward ask of %u responses with a NULL array",
               a->n);
        return;
    }
    for (uint32_t i = 0; i < a->n && w->rc == TERN_OK; i++) {
        w_str(w, a->task[i], 1, "a reward ask's task");
        w_str(w, a->origin[i], 0, "a reward ask's task origin");
        w_str(w, a->response[i], 1, "a reward ask's response");
        w_u32(w, a->tokens[i]);
    }
}

static void encode_reward_answer(writer *w, const tern_reward_answer *a)
{
    w_u32(w, a->n);
    if (a->n && !a->reply) {
        w_fail(w, TERN_EINVAL, "cannot encode a reward answer of %u verdicts with no array",
               a->n);
        return;
    }
    for (uint32_t i = 0; i < a->n && w->rc == TERN_OK; i++) {
        const tern_reward_reply *r = &a->reply[i];
        if (r->n_comp > TERN_REWARD_MAX_COMPONENTS) {
            w_fail(w, TERN_EINVAL, "cannot encode a verdict of %u components (at most %d)",
                   r->n_comp, TERN_REWARD_MAX_COMPONENTS);
            return;
        }
        w_u32(w, r->failure);
        w_f64(w, r->reward);
        w_str(w, r->reason, 1, "a verdict's reason");
        w_u32(w, r->n_comp);
        for (uint32_t c = 0; c < r->n_comp; c++) {
            w_str(w, r->comp_name[c], 1, "a verdict's component name");
            w_f64(w, r->comp_value[c]);
        }
    }
}

int tern_wire_encode(const void *msg, unsigned char **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    int kind = *(const tern_msg_kind *)msg;
    if (kind < TERN_MSG_EXPLORE || kind > TERN_MSG_REWARD_ANSWER)
        return tern_errorf(TERN_EINVAL, "cannot encode a message of unknown kind %d", kind);
    writer w = {NULL, 0, 0, TERN_OK};
    w_bytes(&w, TERN_WIRE_MAGIC, 4);
    w_u16(&w, TERN_WIRE_FORMAT);
    w_u16(&w, (uint16_t)kind);
    if (kind == TERN_MSG_EXPLORE)
        encode_explore(&w, msg);
    else if (kind == TERN_MSG_SFT_BATCH)
        encode_sft(&w, msg);
    else if (kind == TERN_MSG_ROLLOUT)
        encode_rollout(&w, msg);
    else if (kind == TERN_MSG_TRAIN)
        encode_train(&w, msg);
    else if (kind == TERN_MSG_REWARD_ASK)
        encode_reward_ask(&w, msg);
    else if (kind == TERN_MSG_REWARD_ANSWER)
        encode_reward_answer(&w, msg);
    else
        encode_step(&w, msg);
    if (w.rc != TERN_OK) {
        free(w.p);
        return w.rc;
    }
    *buf = w.p;
    *len = w.len;
    return TERN_OK;
}

/* ---- decoding: a bounds-checked cursor ----------------------------------------- */

typedef struct reader {
    const unsigned char *p;
    size_t at, len;
} reader;

static uint64_t ld_uint(const unsigned char **q, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v |= (uint64_t)(*q)[i] << (8 * i);
    *q += bytes;
    return v;
}

static uint32_t ld_u32(const unsigned char **q) { return (uint32_t)ld_uint(q, 4); }
static uint64_t ld_u64(const unsigned char **q) { return ld_uint(q, 8); }
static int32_t ld_i32(const unsigned char **q) { return (int32_t)ld_u32(q); }
static int64_t ld_i64(const unsigned char **q) { return (int64_t)ld_u64(q); }

static double ld_f64(const unsigned char **q)
{
    uint64_t u = ld_u64(q);
    double v;
    memcpy(&v, &u, sizeof v);
    return v;
}

static float ld_f32(const unsigned char **q)
{
    uint32_t u = ld_u32(q);
    float v;
    memcpy(&v, &u, sizeof v);
    return v;
}

static size_t left(const reader *r) { return r->len - r->at; }

/* The next n bytes (*q points at them), or TERN_EINVAL if fewer are left. */
static int take(reader *r, uint64_t n, const char *what, const unsigned char **q)
{
    *q = r->p + r->at;
    if (n > left(r))
        return tern_errorf(TERN_EINVAL, "a wire message of %zu bytes ends inside %s (at byte "
                           "%zu: %llu bytes needed, %zu left)", r->len, what, r->at,
                           (unsigned long long)n, left(r));
    r->at += (size_t)n;
    return TERN_OK;
}

/* A list of `count` entries of at least `min` bytes each fits in what is
 * left (checked before anything is allocated for it). */
static int fits(const reader *r, uint64_t count, size_t min, const char *what)
{
    if (count > left(r) / min)
        return tern_errorf(TERN_EINVAL, "a wire message claims %llu %s at byte %zu: they take "
                           "at least %llu bytes, %zu are left", (unsigned long long)count, what,
                           r->at, (unsigned long long)count * min, left(r));
    return TERN_OK;
}

static void *alloc_zero(size_t n, size_t size)
{
    return calloc(n ? n : 1, size);
}

static int out_of_memory(void)
{
    return tern_errorf(TERN_ENOMEM, "out of memory decoding a wire message");
}

/* A string's bytes in the buffer: *s NULL (and *n 0) for a NULL string,
 * which is refused when `required`. */
static int r_text(reader *r, int required, const char *what, const unsigned char **s,
                  uint32_t *n)
{
    const unsigned char *q;
    int rc = take(r, 1, what, &q);
    if (rc != TERN_OK)
        return rc;
    *s = NULL, *n = 0;
    if (*q == 0)
        return required ? tern_errorf(TERN_EINVAL, "a wire message's %s is NULL (at byte %zu)",
                                      what, r->at - 1)
                        : TERN_OK;
    if (*q != 1)
        return tern_errorf(TERN_EINVAL, "a wire message's %s has string tag %u at byte %zu "
                           "(0: NULL, 1: text)", what, *q, r->at - 1);
    if ((rc = take(r, 4, what, &q)) != TERN_OK)
        return rc;
    *n = ld_u32(&q);
    return take(r, *n, what, s);
}

/* A string as a new NUL-terminated copy (*s NULL for a NULL string). */
static int r_str(reader *r, int required, const char *what, char **s)
{
    const unsigned char *t;
    uint32_t n;
    int rc = r_text(r, required, what, &t, &n);
    if (rc != TERN_OK || !t)
        return rc;
    if (memchr(t, 0, n))
        return tern_errorf(TERN_EINVAL, "a wire message's %s holds a NUL byte", what);
    if (!(*s = malloc((size_t)n + 1)))
        return out_of_memory();
    memcpy(*s, t, n);
    (*s)[n] = '\0';
    return TERN_OK;
}

/* A jansson value of type `type` from its JSON text, or NULL. */
static int r_json(reader *r, json_type type, const char *what, json_t **j)
{
    const unsigned char *t;
    uint32_t n;
    int rc = r_text(r, 0, what, &t, &n);
    if (rc != TERN_OK || !t)
        return rc;
    json_error_t err;
    *j = json_loadb((const char *)t, n, JSON_ALLOW_NUL, &err);
    if (!*j)
        return tern_errorf(TERN_EINVAL, "a wire message's %s is not JSON: %s (at character %d)",
                           what, err.text, err.position);
    if (json_typeof(*j) != type)
        return tern_errorf(TERN_EINVAL, "a wire message's %s is not a JSON %s", what,
                           type == JSON_OBJECT ? "object" : "array");
    return TERN_OK;
}

#define TRY(x)                     \
    do {                           \
        if ((rc = (x)) != TERN_OK) \
            return rc;             \
    } while (0)

static int decode_explore(reader *r, tern_explore_job *j)
{
    const unsigned char *q;
    int rc;
    TRY(take(r, EXPLORE_FIXED, "an explore job", &q));
    j->batch = ld_i64(&q);
    j->min_version = ld_i64(&q);
    j->plan_batch = ld_i64(&q);
    uint32_t n = ld_u32(&q);
    TRY(fits(r, n, EXPLORE_TASK_MIN, "explore tasks"));
    j->task_index = alloc_zero(n, sizeof *j->task_index);
    j->prompt = alloc_zero(n, sizeof *j->prompt);
    j->system = alloc_zero(n, sizeof *j->system);
    j->image = alloc_zero(n, sizeof *j->image);
    j->n = n;
    if (!j->task_index || !j->prompt || !j->system || !j->image)
        return out_of_memory();
    TRY(take(r, 4 * (uint64_t)n, "an explore job's task indices", &q));
    for (uint32_t i = 0; i < n; i++)
        j->task_index[i] = ld_u32(&q);
    for (uint32_t i = 0; i < n; i++) {
        TRY(r_str(r, 1, "explore job prompt", &j->prompt[i]));
        TRY(r_str(r, 0, "explore job system turn", &j->system[i]));
        TRY(r_str(r, 0, "explore job image", &j->image[i]));
    }
    return TERN_OK;
}

static int decode_sft(reader *r, tern_sft_job *j)
{
    const unsigned char *q;
    int rc;
    TRY(take(r, SFT_FIXED, "a warm-up job", &q));
    j->step = ld_i64(&q);
    uint32_t n = ld_u32(&q);
    TRY(fits(r, n, SFT_PAIR_MIN, "warm-up pairs"));
    j->prompt = alloc_zero(n, sizeof *j->prompt);
    j->answer = alloc_zero(n, sizeof *j->answer);
    j->system = alloc_zero(n, sizeof *j->system);
    j->image = alloc_zero(n, sizeof *j->image);
    j->n = n;
    if (!j->prompt || !j->answer || !j->system || !j->image)
        return out_of_memory();
    for (uint32_t i = 0; i < n; i++) {
        TRY(r_str(r, 1, "warm-up job prompt", &j->prompt[i]));
        TRY(r_str(r, 1, "warm-up job answer", &j->answer[i]));
        TRY(r_str(r, 0, "warm-up job system turn", &j->system[i]));
        TRY(r_str(r, 0, "warm-up job image", &j->image[i]));
    }
    return TERN_OK;
}

/* len 32-bit values: int32 tokens, or (logp) float bits. */
static int r_i32s(reader *r, uint32_t len, const char *what, int32_t **out)
{
    const unsigned char *q;
    int rc;
    TRY(take(r, 4 * (uint64_t)len, what, &q));
    if (!(*out = malloc((len ? len : 1) * sizeof **out)))
        return out_of_memory();
    for (uint32_t k = 0; k < len; k++)
        (*out)[k] = ld_i32(&q);
    return TERN_OK;
}

static int decode_rollout(reader *r, tern_rollout_msg *m)
{
    const unsigned char *q;
    int rc;
    TRY(take(r, ROLLOUT_FIXED, "a rollout", &q));
    m->batch = ld_i64(&q);
    m->version = ld_i64(&q);
    m->explorer = ld_u32(&q);
    uint32_t n = ld_u32(&q), G = ld_u32(&q);
    m->gen_seconds = ld_f64(&q);
    m->wait_seconds = ld_f64(&q);
    m->gen_tokens = ld_u64(&q);
    m->done_unix_ns = ld_u64(&q);
    m->tool_calls = ld_u64(&q);
    m->tool_invalid = ld_u64(&q);
    m->tool_failed = ld_u64(&q);
    m->wf_calls = ld_u64(&q);
    m->wf_rewrites = ld_u64(&q);
    /* n prompts, then n * G responses (in 64 bits: no overflow) */
    uint64_t total = (uint64_t)n * G;
    TRY(fits(r, n, PROMPT_MIN, "rollout prompts"));
    size_t after_prompts = left(r) - (size_t)n * PROMPT_MIN;
    if (total > after_prompts / RESPONSE_MIN)
        return tern_errorf(TERN_EINVAL, "a wire message claims a rollout of %u prompts x %u "
                           "responses at byte %zu: they take at least %llu bytes, %zu are left",
                           n, G, r->at, (unsigned long long)total * RESPONSE_MIN +
                           (unsigned long long)n * PROMPT_MIN, left(r));
    m->task_index = alloc_zero(n, sizeof *m->task_index);
    m->prompt_tokens = alloc_zero(n, sizeof *m->prompt_tokens);
    m->prompt_len = alloc_zero(n, sizeof *m->prompt_len);
    m->resp = alloc_zero((size_t)total, sizeof *m->resp);
    m->image = alloc_zero(n, sizeof *m->image);
    m->image_sha256 = alloc_zero(n, SHA256_BYTES);
    m->n = n, m->group_size = G;
    if (!m->task_index || !m->prompt_tokens || !m->prompt_len || !m->resp || !m->image ||
        !m->image_sha256)
        return out_of_memory();
    for (uint32_t i = 0; i < n; i++) {
        TRY(take(r, PROMPT_FIXED, "a rollout's prompt", &q));
        m->task_index[i] = ld_u32(&q);
        m->prompt_len[i] = ld_u32(&q);
        TRY(r_i32s(r, m->prompt_len[i], "a rollout's prompt tokens", &m->prompt_tokens[i]));
        TRY(r_str(r, 0, "rollout image", &m->image[i]));
        if (m->image[i]) {
            TRY(take(r, SHA256_BYTES, "a rollout's image digest", &q));
            memcpy(m->image_sha256 + (size_t)i * SHA256_BYTES, q, SHA256_BYTES);
        }
    }
    for (size_t i = 0; i < (size_t)total; i++) {
        tern_response *p = &m->resp[i];
        TRY(take(r, RESPONSE_FIXED, "a rollout's response", &q));
        p->len = ld_u32(&q);
        p->finish = ld_u32(&q);
        TRY(r_i32s(r, p->len, "a rollout's response tokens", &p->tokens));
        TRY(take(r, 4 * (uint64_t)p->len, "a rollout's response log-probs", &q));
        if (!(p->logp = malloc((p->len ? p->len : 1) * sizeof *p->logp)))
            return out_of_memory();
        for (uint32_t k = 0; k < p->len; k++)
            p->logp[k] = ld_f32(&q);
        TRY(r_str(r, 1, "rollout response text", &p->text));
        TRY(take(r, 4, "a rollout's response segments", &q));
        p->n_segments = ld_u32(&q);
        TRY(take(r, 4 * (uint64_t)p->n_segments, "a rollout's response segments", &q));
        if (p->n_segments && !(p->seg_len = malloc(p->n_segments * sizeof *p->seg_len)))
            return out_of_memory();
        for (uint32_t k = 0; k < p->n_segments; k++)
            p->seg_len[k] = ld_u32(&q);
        TRY(take(r, 4, "a rollout's turn rewards", &q));
        p->n_turns = ld_u32(&q);
        TRY(take(r, 8 * (uint64_t)p->n_turns, "a rollout's turn rewards", &q));
        if (p->n_turns && !(p->turn_reward = malloc(p->n_turns * sizeof *p->turn_reward)))
            return out_of_memory();
        for (uint32_t k = 0; k < p->n_turns; k++)
            p->turn_reward[k] = ld_f64(&q);
        TRY(take(r, 8, "a rollout's trajectory end", &q));
        p->end = ld_u32(&q);
        p->env_failure = ld_u32(&q);
        TRY(r_str(r, 0, "rollout environment reason", &p->env_reason));
        TRY(take(r, 4, "a rollout's restarts", &q));
        p->n_restarts = ld_u32(&q);
        TRY(take(r, 4 * (uint64_t)p->n_restarts, "a rollout's restarts", &q));
        if (p->n_restarts && !(p->restart = malloc(p->n_restarts * sizeof *p->restart)))
            return out_of_memory();
        for (uint32_t k = 0; k < p->n_restarts; k++)
            p->restart[k] = ld_u32(&q);
        const char *bad = tern_response_trajectory_problem(p);
        if (bad)
            return tern_errorf(TERN_EINVAL, "a role message is malformed: response %zu of a "
                               "rollout: %s", i, bad);
    }
    return TERN_OK;
}

/* The tensors are views into the buffer; tern_snapshot_take copies them. */
static int decode_snapshot(reader *r, tern_snapshot **s)
{
    const unsigned char *q;
    int rc;
    TRY(take(r, 1, "a step message's weights", &q));
    if (*q == 0)
        return TERN_OK;
    if (*q != 1)
        return tern_errorf(TERN_EINVAL, "a wire message's weights have tag %u at byte %zu (0: "
                           "none, 1: a snapshot)", *q, r->at - 1);
    TRY(take(r, SNAPSHOT_FIXED, "a step message's weights", &q));
    int64_t version = ld_i64(&q);
    uint64_t n = ld_u64(&q);
    TRY(fits(r, n, TENSOR_MIN, "tensors"));
    tern_tensor *t = alloc_zero((size_t)n, sizeof *t);
    if (!t)
        return out_of_memory();
    for (size_t i = 0; i < n; i++) {
        char *name = NULL;
        if ((rc = r_str(r, 1, "tensor name", &name)) != TERN_OK)
            break;
        t[i] = (tern_tensor){.size = sizeof t[i], .name = name};
        if ((rc = take(r, TENSOR_FIXED, "a tensor", &q)) != TERN_OK)
            break;
        t[i].dtype = ld_u32(&q);
        t[i].ndim = ld_u32(&q);
        for (int d = 0; d < 4; d++)
            t[i].shape[d] = ld_i64(&q);
        uint64_t bytes = ld_u64(&q);
        if (t[i].ndim > 4) {
            rc = tern_errorf(TERN_EINVAL, "a wire message's tensor %zu (%s) has %u dimensions, "
                             "over the 4 a tensor has", i, name, t[i].ndim);
            break;
        }
        if ((rc = take(r, bytes, "a tensor's data", &q)) != TERN_OK)
            break;
        t[i].bytes = (size_t)bytes;
        t[i].data = (void *)q; /* only read: tern_snapshot_take copies */
    }
    if (rc == TERN_OK && !(*s = tern_snapshot_take(t, (size_t)n, version)))
        rc = TERN_ENOMEM;
    for (size_t i = 0; i < n; i++)
        free((char *)t[i].name);
    free(t);
    return rc;
}

static int decode_step(reader *r, tern_step_msg *m)
{
    const unsigned char *q;
    int rc;
    TRY(take(r, STEP_HEAD, "a step message", &q));
    m->step = ld_i64(&q);
    m->version = ld_i64(&q);
    m->batch = ld_i64(&q);
    m->rollout_version = ld_i64(&q);
    uint64_t n = ld_u64(&q);
    TRY(fits(r, n, 8, "consumed group ids"));
    if (!(m->consumed = alloc_zero((size_t)n, sizeof *m->consumed)))
        return out_of_memory();
    m->n_consumed = (size_t)n;
    TRY(take(r, 8 * n, "a step message's consumed ids", &q));
    for (size_t i = 0; i < n; i++)
        m->consumed[i] = ld_u64(&q);
    TRY(r_json(r, JSON_OBJECT, "figures", &m->figures));
    TRY(r_json(r, JSON_ARRAY, "groups", &m->groups));
    TRY(take(r, STEP_FIXED, "a step message", &q));
    m->published = ld_i32(&q);
    m->in_rl = ld_i32(&q);
    m->rl_fresh = ld_i32(&q);
    m->sft_step = ld_i64(&q);
    m->loss.loss = ld_f64(&q);
    m->loss.pg_loss = ld_f64(&q);
    m->loss.kl = ld_f64(&q);
    m->loss.entropy = ld_f64(&q);
    m->loss.clip_frac = ld_f64(&q);
    m->loss.ratio_mean = ld_f64(&q);
    m->loss.mismatch_kl = ld_f64(&q);
    m->loss.is_weight_mean = ld_f64(&q);
    uint64_t tokens = ld_u64(&q);
#if SIZE_MAX < UINT64_MAX
    if (tokens > SIZE_MAX)
        return tern_errorf(TERN_EINVAL, "a wire message's loss counts %llu tokens, over what "
                           "this machine counts", (unsigned long long)tokens);
#endif
    m->loss.tokens = (size_t)tokens;
    m->grad_norm = ld_f64(&q);
    m->lr = ld_f64(&q);
    m->reward_mean = ld_f64(&q);
    m->staleness = ld_f64(&q);
    m->stale = ld_u64(&q);
    m->train_tokens = ld_u64(&q);
    m->train_seconds = ld_f64(&q);
    m->wait_seconds = ld_f64(&q);
    m->status = ld_i32(&q);
    TRY(decode_snapshot(r, &m->eval));
    TRY(r_str(r, 0, "checkpoint directory", &m->saved));
    TRY(r_str(r, 0, "error", &m->error));
    const unsigned char *role;
    uint32_t len;
    TRY(r_text(r, 0, "role", &role, &len));
    if (role) {
        size_t i = 0;
        while (i < N_ROLES && !(strlen(roles[i]) == len && memcmp(roles[i], role, len) == 0))
            i++;
        if (i == N_ROLES)
            return tern_errorf(TERN_EINVAL, "a wire message names role '%.*s': a role is "
                               "explorer, trainer, reward or master", len > 64 ? 64 : (int)len,
                               (const char *)role);
        m->role = roles[i];
    }
    return TERN_OK;
}

static int decode_train(reader *r, tern_train_msg *m)
{
    const unsigned char *q;
    int rc;
    TRY(take(r, TRAIN_FIXED, "a train order", &q));
    m->order = ld_u32(&q);
    m->step = ld_i64(&q);
    uint8_t has_sft = *q;
    if (m->order < TERN_TRAIN_SFT || m->order > TERN_TRAIN_END)
        return tern_errorf(TERN_EINVAL, "a wire message's train order is %u (1 to %d)",
                           m->order, TERN_TRAIN_END);
    if (has_sft > 1)
        return tern_errorf(TERN_EINVAL, "a train order's warm-up flag is %u (0 or 1)", has_sft);
    if (has_sft) {
        if (!(m->sft = calloc(1, sizeof *m->sft)))
            return out_of_memory();
        m->sft->kind = TERN_MSG_SFT_BATCH;
        TRY(decode_sft(r, m->sft));
    }
    TRY(take(r, 4, "a train order's group count", &q));
    uint32_t n = ld_u32(&q);
    TRY(fits(r, n, GROUP_MIN, "train order groups"));
    m->group = alloc_zero(n, sizeof *m->group);
    m->group_len = alloc_zero(n, sizeof *m->group_len);
    if (!m->group || !m->group_len)
        return out_of_memory();
    m->n = n;
    for (uint32_t i = 0; i < n; i++) {
        TRY(take(r, GROUP_MIN, "a train order's group length", &q));
        uint64_t glen = ld_u64(&q);
        TRY(take(r, glen, "a train order's group", &q));
        if (!(m->group[i] = malloc(glen ? (size_t)glen : 1)))
            return out_of_memory();
        memcpy(m->group[i], q, (size_t)glen);
        m->group_len[i] = (size_t)glen;
    }
    return TERN_OK;
}

static int decode_reward_ask(reader *r, tern_reward_ask *a)
{
    const unsigned char *q;
    int rc;
    TRY(take(r, ASK_FIXED, "a reward ask", &q));
    a->route = ld_u32(&q);
    uint32_t n = ld_u32(&q);
    TRY(fits(r, n, ASK_ITEM_MIN, "reward ask responses"));
    a->task = alloc_zero(n, sizeof *a->task);
    a->origin = alloc_zero(n, sizeof *a->origin);
    a->response = alloc_zero(n, sizeof *a->response);
    a->tokens = alloc_zero(n, sizeof *a->tokens);
    a->n = n;
    if (!a->task || !a->origin || !a->response || !a->tokens)
        return out_of_memory();
    for (uint32_t i = 0; i < n; i++) {
        TRY(r_str(r, 1, "reward ask task", &a->task[i]));
        TRY(r_str(r, 0, "reward ask task origin", &a->origin[i]));
        TRY(r_str(r, 1, "reward ask response", &a->response[i]));
        TRY(take(r, 4, "a reward ask's token count", &q));
        a->tokens[i] = ld_u32(&q);
    }
    return TERN_OK;
}

static int decode_reward_answer(reader *r, tern_reward_answer *a)
{
    const unsigned char *q;
    int rc;
    TRY(take(r, 4, "a reward answer", &q));
    uint32_t n = ld_u32(&q);
    TRY(fits(r, n, REPLY_MIN, "verdicts"));
    if (!(a->reply = alloc_zero(n, sizeof *a->reply)))
        return out_of_memory();
    a->n = n;
    for (uint32_t i = 0; i < n; i++) {
        tern_reward_reply *v = &a->reply[i];
        TRY(take(r, REPLY_FIXED, "a verdict", &q));
        v->failure = ld_u32(&q);
        v->reward = ld_f64(&q);
        if (v->failure > 64)
            return tern_errorf(TERN_EINVAL, "a wire message's verdict has failure code %u",
                               v->failure);
        TRY(r_str(r, 1, "verdict reason", &v->reason));
        TRY(take(r, 4, "a verdict's component count", &q));
        uint32_t c = ld_u32(&q);
        if (c > TERN_REWARD_MAX_COMPONENTS)
            return tern_errorf(TERN_EINVAL, "a wire message's verdict has %u components (at "
                               "most %d)", c, TERN_REWARD_MAX_COMPONENTS);
        TRY(fits(r, c, COMP_MIN, "verdict components"));
        for (uint32_t k = 0; k < c; k++) {
            TRY(r_str(r, 1, "verdict component name", &v->comp_name[k]));
            v->n_comp = k + 1; /* freed from here on */
            TRY(take(r, 8, "a verdict component's value", &q));
            v->comp_value[k] = ld_f64(&q);
        }
    }
    return TERN_OK;
}

int tern_wire_decode(const unsigned char *buf, size_t len, void **msg)
{
    *msg = NULL;
    static const unsigned char none[1];
    reader r = {buf ? buf : none, 0, buf ? len : 0}; /* NULL: no bytes */
    const unsigned char *q;
    int rc = take(&r, HEADER_BYTES, "its header", &q);
    if (rc != TERN_OK)
        return rc;
    if (memcmp(q, TERN_WIRE_MAGIC, 4) != 0)
        return tern_errorf(TERN_EINVAL, "a wire message does not start with \"%s\" (it starts "
                           "%02x %02x %02x %02x): not a tern message", TERN_WIRE_MAGIC, q[0],
                           q[1], q[2], q[3]);
    q += 4;
    unsigned format = (unsigned)ld_uint(&q, 2), kind = (unsigned)ld_uint(&q, 2);
    if (format != TERN_WIRE_FORMAT)
        return tern_errorf(TERN_EINVAL, "wire format %u is not known to this tern (it reads "
                           "format %u): every rank must run the same tern", format,
                           TERN_WIRE_FORMAT);
    void *m;
    if (kind == TERN_MSG_EXPLORE)
        m = calloc(1, sizeof(tern_explore_job));
    else if (kind == TERN_MSG_SFT_BATCH)
        m = calloc(1, sizeof(tern_sft_job));
    else if (kind == TERN_MSG_ROLLOUT)
        m = calloc(1, sizeof(tern_rollout_msg));
    else if (kind == TERN_MSG_TRAIN)
        m = calloc(1, sizeof(tern_train_msg));
    else if (kind == TERN_MSG_REWARD_ASK)
        m = calloc(1, sizeof(tern_reward_ask));
    else if (kind == TERN_MSG_REWARD_ANSWER)
        m = calloc(1, sizeof(tern_reward_answer));
    else if (is_step_kind((int)kind))
        m = calloc(1, sizeof(tern_step_msg));
    else
        return tern_errorf(TERN_EINVAL, "a wire message of unknown kind %u", kind);
    if (!m)
        return out_of_memory();
    *(tern_msg_kind *)m = (tern_msg_kind)kind;
    if (kind == TERN_MSG_EXPLORE)
        rc = decode_explore(&r, m);
    else if (kind == TERN_MSG_SFT_BATCH)
        rc = decode_sft(&r, m);
    else if (kind == TERN_MSG_ROLLOUT)
        rc = decode_rollout(&r, m);
    else if (kind == TERN_MSG_TRAIN)
        rc = decode_train(&r, m);
    else if (kind == TERN_MSG_REWARD_ASK)
        rc = decode_reward_ask(&r, m);
    else if (kind == TERN_MSG_REWARD_ANSWER)
        rc = decode_reward_answer(&r, m);
    else
        rc = decode_step(&r, m);
    if (rc == TERN_OK && r.at != len)
        rc = tern_errorf(TERN_EINVAL, "a wire message has %zu bytes after its last field",
                         len - r.at);
    if (rc != TERN_OK) {
        tern_msg_free(m);
        return rc;
    }
    *msg = m;
    return TERN_OK;
}
