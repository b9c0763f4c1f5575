/* experience.c: the experience encoding, format 5: one record per group
 * with its image's path and digest, each response a trajectory of segments
 * (see experience.h); formats 3 and 4 read too. Fields are written byte by byte in little-endian
 * order; the decoder trusts nothing in the record until its length and
 * checksum agree, then checks every inner size against the bytes left before
 * reading it, and the group statistics against the responses. */
#include "experience/experience.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"
#include "experience/crc32c.h"
#include "tern/environment.h"

/* ---- little-endian fields ---------------------------------------------------- */

static void put_u16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put_f64(unsigned char *p, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    put_u64(p, u);
}

static uint16_t get_u16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }

static uint32_t get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_u64(const unsigned char *p)
{
    return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
}

static double get_f64(const unsigned char *p)
{
    uint64_t u = get_u64(p);
    double v;
    memcpy(&v, &u, sizeof v);
    return v;
}

/* ---- group statistics ---------------------------------------------------------- */

/* finish_stats and the decoder both sum through this, in response order, so
 * they get the same doubles. Each multiply is its own statement: a compiler
 * may not fuse it with the add into an FMA (which rounds once, so the figures
 * would differ between the machine that wrote a record and one reading it). */
typedef struct stats_sum {
    double reward, reward_sq, accuracy;
} stats_sum;

static void stats_add(stats_sum *s, double reward, double accuracy)
{
    double sq = reward * reward;
    s->reward += reward;
    s->reward_sq += sq;
    s->accuracy += accuracy;
}

/* out: reward mean, reward std (population), accuracy mean. */
static void stats_end(const stats_sum *s, uint32_t n, double out[3])
{
    double g = (double)n;
    double mean = s->reward / g;
    double mean_sq = mean * mean;
    double var = s->reward_sq / g;
    var -= mean_sq;
    out[0] = mean;
    /* rounding can leave var a hair below 0; inf - inf (huge rewards) is NaN:
     * both give 0, so the figures are never NaN */
    out[1] = sqrt(var > 0 ? var : 0);
    out[2] = s->accuracy / g;
}

/* A stored figure agrees with the one computed from the responses: equal
 * up to a few roundings, so that a writer built otherwise (an FMA, another
 * summation) is not refused, while a figure that is not these responses'
 * is. */
static int agrees(double stored, double computed)
{
    if (stored == computed) /* infinities of huge rewards too */
        return 1;
    double scale = fabs(computed) > 1 ? fabs(computed) : 1;
    return fabs(stored - computed) <= 1e-9 * scale;
}

void tern_experience_finish_stats(tern_experience *e)
{
    stats_sum s = {0, 0, 0};
    for (uint32_t i = 0; i < e->n; i++)
        stats_add(&s, e->resp[i].reward, e->resp[i].accuracy);
    double st[3] = {0, 0, 0};
    if (e->n > 0)
        stats_end(&s, e->n, st);
    e->reward_mean = st[0], e->reward_std = st[1], e->accuracy_mean = st[2];
}

/* ---- encoding ------------------------------------------------------------------ */

/* A response entry's fixed part: version, R, finish, failure, reward,
 * accuracy, C. */
#define RESPONSE_FIXED 34u
/* After its logp (format 5): S, K, end, environment failure. */
#define TRAJECTORY_FIXED 8u
#define SEGMENT_BYTES 16u

/* The segments a response's encoding holds: its own, or the one model
 * segment a one-answer response is. */
static uint32_t segments_of(const tern_exp_response *r)
{
    return r->n_segments ? r->n_segments : 1;
}

/* Check a trajectory's segments, turn rewards, end and failure (response i):
 * NULL when they hold, else what is wrong (a static string or buf). */
static const char *trajectory_problem(uint32_t R, uint32_t S, const tern_exp_segment *seg,
                                      uint32_t K, const double *turn, uint32_t end,
                                      uint32_t env_failure, char *buf, size_t n)
{
    uint64_t sum = 0;
    uint32_t model = 0;
    for (uint32_t k = 0; k < S; k++) {
        if (seg[k].kind != TERN_SEGMENT_MODEL && seg[k].kind != TERN_SEGMENT_CONTEXT &&
            seg[k].kind != TERN_SEGMENT_PROMPT) {
            snprintf(buf, n, "segment %u has kind %u (1 model, 2 context, 3 prompt)", k,
                     seg[k].kind);
            return buf;
        }
        if (seg[k].kind == TERN_SEGMENT_PROMPT && (k == 0 || k + 1 == S || seg[k].len == 0)) {
            snprintf(buf, n, "segment %u is a prompt %s", k, seg[k].len == 0 ? "of no tokens" :
                     k == 0 ? "at the start (the group's prompt is the first)" :
                     "at the end (a sequence with nothing after its prompt)");
            return buf;
        }
        sum += seg[k].len;
        model += seg[k].kind == TERN_SEGMENT_MODEL;
    }
    if (sum != R) {
        snprintf(buf, n, "its segments hold %llu tokens, the response %u",
                 (unsigned long long)sum, R);
        return buf;
    }
    if (K != 0 && K != model) {
        snprintf(buf, n, "it has %u turn rewards for %u model turns (0 or one each)", K, model);
        return buf;
    }
    for (uint32_t k = 0; k < K; k++)
        if (!isfinite(turn[k])) {
            snprintf(buf, n, "turn reward %u is %g, not finite", k, turn[k]);
            return buf;
        }
    if (end > TERN_END_LAST || env_failure > TERN_ENV_START) {
        snprintf(buf, n, "its %s is %u, which names nothing", end > TERN_END_LAST ? "end" :
                 "environment failure", end > TERN_END_LAST ? end : env_failure);
        return buf;
    }
    return NULL;
}

static const char *text_or_empty(const char *s) { return s ? s : ""; }

size_t tern_experience_bytes(const tern_experience *e)
{
    size_t d = strlen(text_or_empty(e->domain)), t = strlen(text_or_empty(e->task_id));
    size_t im = strlen(text_or_empty(e->image));
    if (d > TERN_EXPERIENCE_TEXT_MAX || t > TERN_EXPERIENCE_TEXT_MAX) {
        tern_errorf(TERN_EINVAL, "an experience's %s is %zu bytes, over the %u an experience "
                    "keeps", d > TERN_EXPERIENCE_TEXT_MAX ? "domain" : "task id",
                    d > TERN_EXPERIENCE_TEXT_MAX ? d : t, TERN_EXPERIENCE_TEXT_MAX);
        return 0;
    }
    if (im > TERN_EXPERIENCE_PATH_MAX) {
        tern_errorf(TERN_EINVAL, "an experience's image path is %zu bytes, over the %u an "
                    "experience keeps", im, TERN_EXPERIENCE_PATH_MAX);
        return 0;
    }
    if (e->n == 0 || e->n > TERN_EXPERIENCE_MAX_RESPONSES) {
        tern_errorf(TERN_EINVAL, "an experience has %u responses: a group has 1 to %u", e->n,
                    TERN_EXPERIENCE_MAX_RESPONSES);
        return 0;
    }
    /* in 64 bits, no overflow: at most 65536 responses of 2^32 tokens */
    uint64_t n = TERN_EXPERIENCE_HEADER + (uint64_t)d + t + (im ? im + 32 : 0) +
                 4 * (uint64_t)e->prompt_len;
    stats_sum s = {0, 0, 0};
    for (uint32_t i = 0; i < e->n; i++) {
        const tern_exp_response *r = &e->resp[i];
        if (r->n_parts > TERN_EXPERIENCE_MAX_PARTS) {
            tern_errorf(TERN_EINVAL, "response %u of an experience has %u reward parts, over "
                        "the %u it keeps", i, r->n_parts, TERN_EXPERIENCE_MAX_PARTS);
            return 0;
        }
        if (r->finish > UINT16_MAX || r->failure > UINT16_MAX) {
            tern_errorf(TERN_EINVAL, "response %u of an experience has %s %u, over the 65535 "
                        "an experience keeps", i, r->finish > UINT16_MAX ? "finish" : "failure",
                        r->finish > UINT16_MAX ? r->finish : r->failure);
            return 0;
        }
        /* what the decoder refuses is refused here, where the bug is */
        if (!isfinite(r->reward) || !isfinite(r->accuracy)) {
            tern_errorf(TERN_EINVAL, "response %u of an experience has %s %g: an experience "
                        "keeps finite rewards and accuracies", i,
                        isfinite(r->reward) ? "accuracy" : "reward",
                        isfinite(r->reward) ? r->accuracy : r->reward);
            return 0;
        }
        uint32_t S = segments_of(r);
        if (r->n_segments > TERN_EXPERIENCE_MAX_SEGMENTS ||
            r->n_turns > TERN_EXPERIENCE_MAX_SEGMENTS) {
            tern_errorf(TERN_EINVAL, "response %u of an experience has %u %s, over the %u it "
                        "keeps", i, r->n_segments > TERN_EXPERIENCE_MAX_SEGMENTS ?
                        r->n_segments : r->n_turns, r->n_segments > TERN_EXPERIENCE_MAX_SEGMENTS
                        ? "segments" : "turn rewards", TERN_EXPERIENCE_MAX_SEGMENTS);
            return 0;
        }
        tern_exp_segment one = {.len = r->len, .kind = TERN_SEGMENT_MODEL, .version = r->version};
        char why[160];
        const char *bad = trajectory_problem(r->len, S, r->n_segments ? r->segments : &one,
                                             r->n_turns, r->turn_reward, r->end, r->env_failure,
                                             why, sizeof why);
        if (bad) {
            tern_errorf(TERN_EINVAL, "response %u of an experience is no trajectory: %s", i, bad);
            return 0;
        }
        n += RESPONSE_FIXED + 8 * (uint64_t)r->len + TRAJECTORY_FIXED +
             SEGMENT_BYTES * (uint64_t)S + 8 * (uint64_t)r->n_turns;
        for (uint32_t c = 0; c < r->n_parts; c++) {
            size_t len = strlen(text_or_empty(r->parts[c].name));
            if (len == 0 || len > TERN_EXPERIENCE_NAME_MAX) {
                tern_errorf(TERN_EINVAL, "reward part %u of response %u has a name of %zu bytes: "
                            "names are 1 to %u bytes", c, i, len, TERN_EXPERIENCE_NAME_MAX);
                return 0;
            }
            if (!isfinite(r->parts[c].value)) {
                tern_errorf(TERN_EINVAL, "reward part %u (%s) of response %u is %g: an "
                            "experience keeps finite values", c, r->parts[c].name, i,
                            r->parts[c].value);
                return 0;
            }
            n += 1 + len + 8;
        }
        stats_add(&s, r->reward, r->accuracy);
    }
    double st[3];
    stats_end(&s, e->n, st);
    if (!agrees(e->reward_mean, st[0]) || !agrees(e->reward_std, st[1]) ||
        !agrees(e->accuracy_mean, st[2])) {
        tern_errorf(TERN_EINVAL, "an experience's statistics disagree with its responses (reward "
                    "mean %.17g, std %.17g, accuracy mean %.17g; its %u responses give %.17g, "
                    "%.17g, %.17g): call tern_experience_finish_stats before encoding",
                    e->reward_mean, e->reward_std, e->accuracy_mean, e->n, st[0], st[1], st[2]);
        return 0;
    }
    if (n > UINT32_MAX) {
        tern_errorf(TERN_EINVAL, "an experience of %llu bytes is over the 4 GiB a record holds",
                    (unsigned long long)n);
        return 0;
    }
    return (size_t)n;
}

static unsigned char *put_i32s(unsigned char *q, const int32_t *v, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++, q += 4)
        put_u32(q, (uint32_t)v[i]);
    return q;
}

void tern_experience_encode(const tern_experience *e, void *buf)
{
    unsigned char *p = buf;
    const char *dom = text_or_empty(e->domain), *tid = text_or_empty(e->task_id);
    const char *img = text_or_empty(e->image);
    size_t d = strlen(dom), t = strlen(tid), im = strlen(img);
    put_u32(p + 0, TERN_EXPERIENCE_MAGIC);
    put_u32(p + 4, TERN_EXPERIENCE_FORMAT);
    put_u64(p + 16, (uint64_t)e->batch);
    put_u64(p + 24, (uint64_t)e->version);
    put_u32(p + 32, e->task_index);
    put_u32(p + 36, e->group);
    put_u32(p + 40, e->n);
    put_u32(p + 44, e->prompt_len);
    put_u64(p + 48, e->generated_ns);
    put_u64(p + 56, e->rewarded_ns);
    put_f64(p + 64, e->reward_mean);
    put_f64(p + 72, e->reward_std);
    put_f64(p + 80, e->accuracy_mean);
    put_u16(p + 88, (uint16_t)d);
    put_u16(p + 90, (uint16_t)t);
    put_u16(p + 92, (uint16_t)im);
    put_u16(p + 94, 0);
    unsigned char *q = p + TERN_EXPERIENCE_HEADER;
    memcpy(q, dom, d), q += d;
    memcpy(q, tid, t), q += t;
    if (im) {
        memcpy(q, img, im), q += im;
        memcpy(q, e->image_sha256, 32), q += 32;
    }
    q = put_i32s(q, e->prompt, e->prompt_len);
    for (uint32_t i = 0; i < e->n; i++) {
        const tern_exp_response *r = &e->resp[i];
        put_u64(q, (uint64_t)r->version);
        put_u32(q + 8, r->len);
        put_u16(q + 12, (uint16_t)r->finish);
        put_u16(q + 14, (uint16_t)r->failure);
        put_f64(q + 16, r->reward);
        put_f64(q + 24, r->accuracy);
        put_u16(q + 32, (uint16_t)r->n_parts);
        q += RESPONSE_FIXED;
        for (uint32_t c = 0; c < r->n_parts; c++) {
            size_t len = strlen(r->parts[c].name);
            *q++ = (unsigned char)len;
            memcpy(q, r->parts[c].name, len), q += len;
            put_f64(q, r->parts[c].value), q += 8;
        }
        q = put_i32s(q, r->tokens, r->len);
        for (uint32_t k = 0; k < r->len; k++, q += 4) {
            uint32_t u;
            memcpy(&u, &r->logp[k], sizeof u);
            put_u32(q, u);
        }
        uint32_t S = segments_of(r);
        put_u16(q, (uint16_t)S);
        put_u16(q + 2, (uint16_t)r->n_turns);
        put_u16(q + 4, (uint16_t)r->end);
        put_u16(q + 6, (uint16_t)r->env_failure);
        q += TRAJECTORY_FIXED;
        for (uint32_t k = 0; k < S; k++, q += SEGMENT_BYTES) {
            tern_exp_segment g = r->n_segments ? r->segments[k]
                                               : (tern_exp_segment){r->len, TERN_SEGMENT_MODEL,
                                                                    r->version};
            put_u32(q, g.len);
            put_u32(q + 4, g.kind);
            put_u64(q + 8, (uint64_t)g.version);
        }
        for (uint32_t k = 0; k < r->n_turns; k++, q += 8)
            put_f64(q, r->turn_reward[k]);
    }
    size_t n = (size_t)(q - p);
    put_u32(p + 8, (uint32_t)n);
    put_u32(p + 12, tern_crc32c(0, p + 16, n - 16));
}

/* ---- decoding ------------------------------------------------------------------ */

#define REFUSE(...) (memset(e, 0, sizeof *e), tern_errorf(TERN_EINVAL, __VA_ARGS__))

/* The segments and turn rewards follow the response array in the one
 * block, then the 4-byte arrays: all aligned */
_Static_assert(sizeof(tern_exp_response) % _Alignof(tern_exp_segment) == 0 &&
               sizeof(tern_exp_segment) % _Alignof(double) == 0 &&
               sizeof(tern_exp_response) % _Alignof(double) == 0 &&
               sizeof(tern_exp_response) % _Alignof(int32_t) == 0 &&
               sizeof(tern_exp_response) % _Alignof(float) == 0,
               "the arrays after the responses stay aligned");

static void get_i32s(const unsigned char *q, int32_t *v, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++, q += 4)
        v[i] = (int32_t)get_u32(q);
}

int tern_experience_decode(const void *buf, size_t len, tern_experience *e)
{
    memset(e, 0, sizeof *e);
    const unsigned char *p = buf;
    if (len < 16)
        return REFUSE("an experience record of %zu bytes is too short (a header is %u)", len,
                      TERN_EXPERIENCE_HEADER);
    uint32_t magic = get_u32(p), format = get_u32(p + 4), total = get_u32(p + 8);
    if (magic != TERN_EXPERIENCE_MAGIC)
        return REFUSE("a buffer record is not a tern experience (magic %08x)", magic);
    if (format == 2)
        return REFUSE("experience format 2 (one record per response) was written by an older "
                      "tern; this tern reads formats %u to %u (one record per group) only: "
                      "finish the run that filled this buffer with the tern that started it, or "
                      "remove the buffer's file (its experiences are lost) and start again",
                      TERN_EXPERIENCE_FORMAT_NO_IMAGE, TERN_EXPERIENCE_FORMAT);
    if (format != TERN_EXPERIENCE_FORMAT && format != TERN_EXPERIENCE_FORMAT_NO_SEGMENTS &&
        format != TERN_EXPERIENCE_FORMAT_NO_IMAGE)
        return REFUSE("experience format %u is not known to this tern (it reads formats %u "
                      "to %u)", format, TERN_EXPERIENCE_FORMAT_NO_IMAGE,
                      TERN_EXPERIENCE_FORMAT);
    if (total != len)
        return REFUSE("an experience record has %zu bytes, its header says %u: truncated or "
                      "joined to another", len, total);
    if (len < TERN_EXPERIENCE_HEADER)
        return REFUSE("an experience record of %zu bytes is too short (a header is %u)", len,
                      TERN_EXPERIENCE_HEADER);
    uint32_t crc = tern_crc32c(0, p + 16, len - 16);
    if (crc != get_u32(p + 12))
        return REFUSE("an experience record is corrupt: its checksum is %08x, its bytes give "
                      "%08x", get_u32(p + 12), crc);

    uint32_t G = get_u32(p + 40), P = get_u32(p + 44);
    size_t d = get_u16(p + 88), t = get_u16(p + 90);
    /* format 3 has no image: its offset 92 is a u32 zero; format 4 no segments */
    int has_image_field = format >= TERN_EXPERIENCE_FORMAT_NO_SEGMENTS;
    int has_segments = format >= TERN_EXPERIENCE_FORMAT;
    size_t im = has_image_field ? get_u16(p + 92) : 0;
    uint32_t zero = has_image_field ? get_u16(p + 94) : get_u32(p + 92);
    if (zero != 0)
        return REFUSE("an experience record's reserved field (offset %d) is %08x, not 0",
                      has_image_field ? 94 : 92, zero);
    if (im > TERN_EXPERIENCE_PATH_MAX)
        return REFUSE("an experience record's image path is %zu bytes, over the %u an "
                      "experience keeps", im, TERN_EXPERIENCE_PATH_MAX);
    if (G == 0 || G > TERN_EXPERIENCE_MAX_RESPONSES)
        return REFUSE("an experience record has %u responses: a group has 1 to %u", G,
                      TERN_EXPERIENCE_MAX_RESPONSES);
    if (d > TERN_EXPERIENCE_TEXT_MAX || t > TERN_EXPERIENCE_TEXT_MAX)
        return REFUSE("an experience record's %s is %zu bytes, over the %u an experience keeps",
                      d > TERN_EXPERIENCE_TEXT_MAX ? "domain" : "task id",
                      d > TERN_EXPERIENCE_TEXT_MAX ? d : t, TERN_EXPERIENCE_TEXT_MAX);

    /* walk the variable part, checking each size against what is left and
     * counting what the block needs; nothing is allocated until it all holds */
    size_t at = TERN_EXPERIENCE_HEADER;
    if (d + t > len - at)
        return REFUSE("an experience record ends inside its domain or task id");
    /* text holds no NUL: the encoder cannot write one (so decoding and
     * encoding again gives the same bytes) */
    if (memchr(p + at, 0, d + t))
        return REFUSE("an experience record's domain or task id holds a NUL byte");
    at += d + t;
    size_t image_bytes = im ? im + 32 : 0; /* the path, then its file's digest */
    if (image_bytes > len - at)
        return REFUSE("an experience record ends inside its image path or digest");
    if (memchr(p + at, 0, im))
        return REFUSE("an experience record's image path holds a NUL byte");
    at += image_bytes;
    if (4 * (uint64_t)P > len - at)
        return REFUSE("an experience record ends inside its prompt: %u tokens need %llu bytes, "
                      "%zu are left", P, 4 * (unsigned long long)P, len - at);
    at += 4 * (size_t)P;
    uint64_t words = P; /* 4-byte values: the prompt, each response's tokens and logp */
    size_t names = 0;   /* bytes of the part names, NULs included */
    uint64_t segs = 0, turns = 0; /* segments and turn rewards, all responses */
    stats_sum s = {0, 0, 0};
    for (uint32_t i = 0; i < G; i++) {
        if (RESPONSE_FIXED > len - at)
            return REFUSE("an experience record ends inside response %u of its %u", i, G);
        const unsigned char *r = p + at;
        uint32_t R = get_u32(r + 8);
        double reward = get_f64(r + 16), accuracy = get_f64(r + 24);
        size_t c = get_u16(r + 32);
        if (!isfinite(reward) || !isfinite(accuracy))
            return REFUSE("response %u of an experience record has %s %g: rewards and "
                          "accuracies are finite", i, isfinite(reward) ? "accuracy" : "reward",
                          isfinite(reward) ? accuracy : reward);
        if (c > TERN_EXPERIENCE_MAX_PARTS)
            return REFUSE("response %u of an experience record has %zu reward parts, over the "
                          "%u an experience keeps", i, c, TERN_EXPERIENCE_MAX_PARTS);
        at += RESPONSE_FIXED;
        for (size_t k = 0; k < c; k++) {
            if (at >= len)
                return REFUSE("an experience record ends inside reward part %zu of response %u",
                              k, i);
            size_t nl = p[at];
            if (nl == 0 || nl > TERN_EXPERIENCE_NAME_MAX)
                return REFUSE("reward part %zu of response %u has a name of %zu bytes: names "
                              "are 1 to %u bytes", k, i, nl, TERN_EXPERIENCE_NAME_MAX);
            if (1 + nl + 8 > len - at)
                return REFUSE("an experience record ends inside reward part %zu of response %u",
                              k, i);
            if (memchr(p + at + 1, 0, nl))
                return REFUSE("reward part %zu of response %u has a NUL byte in its name", k, i);
            double v = get_f64(p + at + 1 + nl);
            if (!isfinite(v))
                return REFUSE("reward part %zu (%.*s) of response %u is %g: reward parts are "
                              "finite", k, (int)nl, (const char *)p + at + 1, i, v);
            names += nl + 1;
            at += 1 + nl + 8;
        }
        if (8 * (uint64_t)R > len - at)
            return REFUSE("an experience record ends inside response %u: its %u tokens need "
                          "%llu bytes, %zu are left", i, R, 8 * (unsigned long long)R, len - at);
        at += 8 * (size_t)R;
        words += 2 * (uint64_t)R;
        if (has_segments) {
            if (TRAJECTORY_FIXED > len - at)
                return REFUSE("an experience record ends inside the trajectory of response %u",
                              i);
            uint32_t S = get_u16(p + at), K = get_u16(p + at + 2);
            at += TRAJECTORY_FIXED;
            if (S == 0)
                return REFUSE("response %u of an experience record has no segments", i);
            if ((uint64_t)SEGMENT_BYTES * S + 8 * (uint64_t)K > len - at)
                return REFUSE("an experience record ends inside the segments of response %u", i);
            /* their rules are checked once decoded (trajectory_problem, as the
             * encoder checks them) */
            at += SEGMENT_BYTES * (size_t)S + 8 * (size_t)K;
            segs += S;
            turns += K;
        } else {
            segs += 1;
        }
        stats_add(&s, reward, accuracy);
    }
    if (at != len)
        return REFUSE("an experience record has %zu bytes after its last response", len - at);
    double st[3];
    stats_end(&s, G, st);
    double mean = get_f64(p + 64), std = get_f64(p + 72), acc = get_f64(p + 80);
    if (!agrees(mean, st[0]) || !agrees(std, st[1]) || !agrees(acc, st[2]))
        return REFUSE("an experience record's statistics disagree with its responses: reward "
                      "mean %.17g, std %.17g, accuracy mean %.17g; its %u responses give "
                      "%.17g, %.17g, %.17g", mean, std, acc, G, st[0], st[1], st[2]);

    /* one block: the response array, the 4-byte arrays (prompt, then each
     * response's tokens and logp), then the NUL-terminated strings (counted
     * in 64 bits: only a 32-bit host could overflow a size_t) */
    size_t arrays = (size_t)G * sizeof(tern_exp_response);
    uint64_t need = (uint64_t)arrays + sizeof(tern_exp_segment) * segs + 8 * turns + 4 * words +
                    (d + 1) + (t + 1) + (im + 1) + names;
    size_t block = (size_t)need;
    unsigned char *own = need <= SIZE_MAX ? malloc(block) : NULL;
    if (!own) {
        memset(e, 0, sizeof *e);
        return tern_errorf(TERN_ENOMEM, "out of memory decoding an experience (%llu bytes)",
                           (unsigned long long)need);
    }
    tern_exp_response *resp = (tern_exp_response *)(void *)own;
    memset(resp, 0, arrays);
    tern_exp_segment *seg = (tern_exp_segment *)(void *)(own + arrays);
    double *turn = (double *)(void *)(seg + segs);
    unsigned char *arr = (unsigned char *)(turn + turns);
    char *str = (char *)arr + 4 * (size_t)words;

    e->owned = own;
    e->batch = (int64_t)get_u64(p + 16);
    e->version = (int64_t)get_u64(p + 24);
    e->task_index = get_u32(p + 32);
    e->group = get_u32(p + 36);
    e->generated_ns = get_u64(p + 48);
    e->rewarded_ns = get_u64(p + 56);
    e->reward_mean = mean, e->reward_std = std, e->accuracy_mean = acc;
    at = TERN_EXPERIENCE_HEADER;
    memcpy(str, p + at, d), str[d] = '\0', e->domain = str, str += d + 1, at += d;
    memcpy(str, p + at, t), str[t] = '\0', e->task_id = str, str += t + 1, at += t;
    if (im) {
        memcpy(str, p + at, im), str[im] = '\0', e->image = str, str += im + 1, at += im;
        memcpy(e->image_sha256, p + at, 32), at += 32;
    }
    e->prompt_len = P;
    e->prompt = (int32_t *)(void *)arr;
    get_i32s(p + at, e->prompt, P);
    at += 4 * (size_t)P, arr += 4 * (size_t)P;
    e->n = G;
    e->resp = resp;
    for (uint32_t i = 0; i < G; i++) {
        tern_exp_response *r = &resp[i];
        const unsigned char *q = p + at;
        r->version = (int64_t)get_u64(q);
        r->len = get_u32(q + 8);
        r->finish = get_u16(q + 12);
        r->failure = get_u16(q + 14);
        r->reward = get_f64(q + 16);
        r->accuracy = get_f64(q + 24);
        r->n_parts = get_u16(q + 32);
        at += RESPONSE_FIXED;
        for (uint32_t c = 0; c < r->n_parts; c++) {
            size_t nl = p[at++];
            memcpy(str, p + at, nl), str[nl] = '\0';
            r->parts[c].name = str;
            str += nl + 1, at += nl;
            r->parts[c].value = get_f64(p + at), at += 8;
        }
        r->tokens = (int32_t *)(void *)arr;
        get_i32s(p + at, r->tokens, r->len);
        at += 4 * (size_t)r->len, arr += 4 * (size_t)r->len;
        r->logp = (float *)(void *)arr;
        for (uint32_t k = 0; k < r->len; k++, at += 4) {
            uint32_t u = get_u32(p + at);
            memcpy(&r->logp[k], &u, sizeof u);
        }
        arr += 4 * (size_t)r->len;
        r->segments = seg;
        if (!has_segments) { /* a one-answer response */
            r->n_segments = 1;
            *seg++ = (tern_exp_segment){r->len, TERN_SEGMENT_MODEL, r->version};
            r->turn_reward = turn;
            continue;
        }
        r->n_segments = get_u16(p + at);
        r->n_turns = get_u16(p + at + 2);
        r->end = get_u16(p + at + 4);
        r->env_failure = get_u16(p + at + 6);
        at += TRAJECTORY_FIXED;
        for (uint32_t k = 0; k < r->n_segments; k++, at += SEGMENT_BYTES)
            *seg++ = (tern_exp_segment){get_u32(p + at), get_u32(p + at + 4),
                                        (int64_t)get_u64(p + at + 8)};
        r->turn_reward = turn;
        for (uint32_t k = 0; k < r->n_turns; k++, at += 8)
            *turn++ = get_f64(p + at);
        char why[160];
        const char *bad = trajectory_problem(r->len, r->n_segments, r->segments, r->n_turns,
                                             r->turn_reward, r->end, r->env_failure, why,
                                             sizeof why);
        if (bad) {
            free(own);
            return REFUSE("response %u of an experience record is no trajectory: %s", i, bad);
        }
    }
    return TERN_OK;
}

void tern_experience_clear(tern_experience *e)
{
    free(e->owned);
    memset(e, 0, sizeof *e);
}
