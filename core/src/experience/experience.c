/* experience.c: the experience encoding (see experience.h). Fields are
 * written byte by byte in little-endian order; the decoder trusts nothing in
 * the record until its length and checksum agree, then checks every inner
 * size against the bytes left before reading them. */
#include "experience/experience.h"

#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"
#include "experience/crc32c.h"

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

/* ---- encoding ------------------------------------------------------------------ */

static const char *text_or_empty(const char *s) { return s ? s : ""; }

size_t tern_experience_bytes(const tern_experience *e)
{
    size_t d = strlen(text_or_empty(e->domain)), t = strlen(text_or_empty(e->task_id));
    if (d > TERN_EXPERIENCE_TEXT_MAX || t > TERN_EXPERIENCE_TEXT_MAX) {
        tern_errorf(TERN_EINVAL, "an experience's %s is %zu bytes, over the %u an experience "
                    "keeps", d > TERN_EXPERIENCE_TEXT_MAX ? "domain" : "task id",
                    d > TERN_EXPERIENCE_TEXT_MAX ? d : t, TERN_EXPERIENCE_TEXT_MAX);
        return 0;
    }
    if (e->n_parts > TERN_EXPERIENCE_MAX_PARTS) {
        tern_errorf(TERN_EINVAL, "an experience has %u reward parts, over the %u it keeps",
                    e->n_parts, TERN_EXPERIENCE_MAX_PARTS);
        return 0;
    }
    size_t n = TERN_EXPERIENCE_HEADER + d + t;
    for (uint32_t i = 0; i < e->n_parts; i++) {
        size_t len = strlen(text_or_empty(e->parts[i].name));
        if (len == 0 || len > TERN_EXPERIENCE_NAME_MAX) {
            tern_errorf(TERN_EINVAL, "reward part %u has a name of %zu bytes: names are 1 to "
                        "%u bytes", i, len, TERN_EXPERIENCE_NAME_MAX);
            return 0;
        }
        n += 1 + len + 8;
    }
    n += 4 * ((size_t)e->prompt_len + e->response_len) + 4 * (size_t)e->response_len;
    if (n > UINT32_MAX) {
        tern_errorf(TERN_EINVAL, "an experience of %zu bytes is over the 4 GiB a record holds", n);
        return 0;
    }
    return n;
}

void tern_experience_encode(const tern_experience *e, void *buf)
{
    unsigned char *p = buf;
    size_t n = tern_experience_bytes(e);
    const char *dom = text_or_empty(e->domain), *tid = text_or_empty(e->task_id);
    size_t d = strlen(dom), t = strlen(tid);
    put_u32(p + 0, TERN_EXPERIENCE_MAGIC);
    put_u32(p + 4, TERN_EXPERIENCE_FORMAT);
    put_u32(p + 8, (uint32_t)n);
    put_u64(p + 16, (uint64_t)e->batch);
    put_u64(p + 24, (uint64_t)e->version);
    put_u32(p + 32, e->task_index);
    put_u32(p + 36, e->group);
    put_u32(p + 40, e->sample);
    put_u32(p + 44, e->finish);
    put_f64(p + 48, e->reward);
    put_f64(p + 56, e->accuracy);
    put_f64(p + 64, e->advantage);
    put_u64(p + 72, e->generated_ns);
    put_u64(p + 80, e->rewarded_ns);
    put_u32(p + 88, e->prompt_len);
    put_u32(p + 92, e->response_len);
    put_u16(p + 96, (uint16_t)d);
    put_u16(p + 98, (uint16_t)t);
    put_u16(p + 100, (uint16_t)e->n_parts);
    put_u16(p + 102, 0);
    unsigned char *q = p + TERN_EXPERIENCE_HEADER;
    memcpy(q, dom, d), q += d;
    memcpy(q, tid, t), q += t;
    for (uint32_t i = 0; i < e->n_parts; i++) {
        size_t len = strlen(e->parts[i].name);
        *q++ = (unsigned char)len;
        memcpy(q, e->parts[i].name, len), q += len;
        put_f64(q, e->parts[i].value), q += 8;
    }
    size_t nt = (size_t)e->prompt_len + e->response_len;
    for (size_t i = 0; i < nt; i++, q += 4)
        put_u32(q, (uint32_t)e->tokens[i]);
    for (size_t i = 0; i < e->response_len; i++, q += 4) {
        uint32_t u;
        memcpy(&u, &e->logp[i], sizeof u);
        put_u32(q, u);
    }
    put_u32(p + 12, tern_crc32c(0, p + 16, n - 16));
}

/* ---- decoding ------------------------------------------------------------------ */

#define REFUSE(...) (memset(e, 0, sizeof *e), tern_errorf(TERN_EINVAL, __VA_ARGS__))

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
    if (format != TERN_EXPERIENCE_FORMAT)
        return REFUSE("experience format %u is not known to this tern (it reads format %u)",
                      format, TERN_EXPERIENCE_FORMAT);
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

    e->batch = (int64_t)get_u64(p + 16);
    e->version = (int64_t)get_u64(p + 24);
    e->task_index = get_u32(p + 32);
    e->group = get_u32(p + 36);
    e->sample = get_u32(p + 40);
    e->finish = get_u32(p + 44);
    e->reward = get_f64(p + 48);
    e->accuracy = get_f64(p + 56);
    e->advantage = get_f64(p + 64);
    e->generated_ns = get_u64(p + 72);
    e->rewarded_ns = get_u64(p + 80);
    uint32_t P = get_u32(p + 88), R = get_u32(p + 92);
    size_t d = get_u16(p + 96), t = get_u16(p + 98), c = get_u16(p + 100);
    if (get_u16(p + 102) != 0 || d > TERN_EXPERIENCE_TEXT_MAX || t > TERN_EXPERIENCE_TEXT_MAX ||
        c > TERN_EXPERIENCE_MAX_PARTS)
        return REFUSE("an experience record's header is inconsistent (domain %zu bytes, task "
                      "id %zu, %zu reward parts)", d, t, c);

    /* walk the variable part, checking each size against what is left */
    size_t at = TERN_EXPERIENCE_HEADER, names = 0;
    if (d + t > len - at)
        return REFUSE("an experience record ends inside its domain or task id");
    /* text holds no NUL: the encoder cannot write one (so decoding and
     * encoding again gives the same bytes) */
    if (memchr(p + at, 0, d + t))
        return REFUSE("an experience record's domain or task id holds a NUL byte");
    at += d + t;
    for (size_t i = 0; i < c; i++) {
        size_t nl = at < len ? p[at] : 0;
        if (at >= len || nl == 0 || nl > TERN_EXPERIENCE_NAME_MAX || 1 + nl + 8 > len - at ||
            memchr(p + at + 1, 0, nl))
            return REFUSE("an experience record's reward part %zu is cut short, unnamed or has "
                          "a NUL in its name", i);
        names += nl + 1;
        at += 1 + nl + 8;
    }
    /* tokens and log-probs: exactly what is left (checked in 64 bits: P + 2R words) */
    uint64_t words = (uint64_t)P + 2 * (uint64_t)R;
    if (words * 4 != (uint64_t)(len - at))
        return REFUSE("an experience record has %zu bytes for %u prompt and %u response "
                      "tokens, which need %llu", len - at, P, R,
                      (unsigned long long)(words * 4));

    /* one block: tokens, logp, then the NUL-terminated strings */
    size_t nt = (size_t)P + R;
    size_t block = 4 * nt + 4 * (size_t)R + (d + 1) + (t + 1) + names;
    unsigned char *own = malloc(block ? block : 1);
    if (!own) {
        memset(e, 0, sizeof *e);
        return tern_errorf(TERN_ENOMEM, "out of memory decoding an experience");
    }
    e->owned = own;
    e->prompt_len = P;
    e->response_len = R;
    e->tokens = (int32_t *)(void *)own;
    e->logp = (float *)(void *)(own + 4 * nt);
    char *s = (char *)own + 4 * nt + 4 * (size_t)R;
    at = TERN_EXPERIENCE_HEADER;
    memcpy(s, p + at, d), s[d] = '\0', e->domain = s, s += d + 1, at += d;
    memcpy(s, p + at, t), s[t] = '\0', e->task_id = s, s += t + 1, at += t;
    e->n_parts = (uint32_t)c;
    for (size_t i = 0; i < c; i++) {
        size_t nl = p[at++];
        memcpy(s, p + at, nl), s[nl] = '\0';
        e->parts[i].name = s;
        s += nl + 1, at += nl;
        e->parts[i].value = get_f64(p + at), at += 8;
    }
    for (size_t i = 0; i < nt; i++, at += 4)
        e->tokens[i] = (int32_t)get_u32(p + at);
    for (size_t i = 0; i < R; i++, at += 4) {
        uint32_t u = get_u32(p + at);
        memcpy(&e->logp[i], &u, sizeof u);
    }
    return TERN_OK;
}

void tern_experience_clear(tern_experience *e)
{
    free(e->owned);
    memset(e, 0, sizeof *e);
}
