/* experience.c: the experience encoding (see experience.h). */
#include "experience.h"

#include <stdlib.h>
#include <string.h>

#include "errmsg.h"

#define HEADER 64

size_t tern_experience_bytes(const tern_experience *e)
{
    return HEADER + 4 * ((size_t)e->prompt_len + e->response_len) + 4 * (size_t)e->response_len;
}

#define PUT(off, v) memcpy(p + (off), &(v), sizeof(v))
#define GET(off, v) memcpy(&(v), p + (off), sizeof(v))

void tern_experience_encode(const tern_experience *e, void *buf)
{
    unsigned char *p = buf;
    uint32_t magic = TERN_EXPERIENCE_MAGIC, format = TERN_EXPERIENCE_FORMAT;
    PUT(0, magic);
    PUT(4, format);
    PUT(8, e->batch);
    PUT(16, e->version);
    PUT(24, e->task_index);
    PUT(28, e->group);
    PUT(32, e->sample);
    PUT(36, e->finish);
    PUT(40, e->reward);
    PUT(48, e->accuracy);
    PUT(56, e->prompt_len);
    PUT(60, e->response_len);
    size_t nt = (size_t)e->prompt_len + e->response_len;
    if (nt)
        memcpy(p + HEADER, e->tokens, 4 * nt);
    if (e->response_len)
        memcpy(p + HEADER + 4 * nt, e->logp, 4 * (size_t)e->response_len);
}

int tern_experience_decode(const void *buf, size_t len, tern_experience *e)
{
    memset(e, 0, sizeof *e);
    const unsigned char *p = buf;
    uint32_t magic, format;
    if (len < HEADER)
        return tern_errorf(TERN_EINVAL, "an experience record of %zu bytes is too short", len);
    GET(0, magic);
    GET(4, format);
    if (magic != TERN_EXPERIENCE_MAGIC)
        return tern_errorf(TERN_EINVAL, "a buffer record is not a tern experience (magic %08x)",
                           magic);
    if (format != TERN_EXPERIENCE_FORMAT)
        return tern_errorf(TERN_EINVAL, "experience format %u is not known to this tern "
                           "(it reads format %u)", format, TERN_EXPERIENCE_FORMAT);
    GET(8, e->batch);
    GET(16, e->version);
    GET(24, e->task_index);
    GET(28, e->group);
    GET(32, e->sample);
    GET(36, e->finish);
    GET(40, e->reward);
    GET(48, e->accuracy);
    GET(56, e->prompt_len);
    GET(60, e->response_len);
    size_t nt = (size_t)e->prompt_len + e->response_len;
    if (len != tern_experience_bytes(e)) {
        size_t want = tern_experience_bytes(e);
        memset(e, 0, sizeof *e);
        return tern_errorf(TERN_EINVAL, "an experience record has %zu bytes, its header says %zu",
                           len, want);
    }
    e->tokens = malloc(4 * (nt ? nt : 1));
    e->logp = malloc(4 * (e->response_len ? e->response_len : 1));
    if (!e->tokens || !e->logp) {
        tern_experience_clear(e);
        return tern_errorf(TERN_ENOMEM, "out of memory decoding an experience");
    }
    memcpy(e->tokens, p + HEADER, 4 * nt);
    memcpy(e->logp, p + HEADER + 4 * nt, 4 * (size_t)e->response_len);
    return TERN_OK;
}

void tern_experience_clear(tern_experience *e)
{
    free(e->tokens);
    free(e->logp);
    memset(e, 0, sizeof *e);
}
