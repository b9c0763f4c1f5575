/*
 * tern/support/text_buf.h: a growing byte buffer, kept NUL-terminated, for
 * building text (config text, chat prompts, JSON headers) piece by piece.
 * Header-only (every function static inline), for the core, the command
 * layer and plugins, which link nothing of libtern.
 *
 *   tern_text_buf b = {0};
 *   tern_text_puts(&b, "model = { path = ");
 *   ...
 *   if (b.oom) { free(b.p); return out_of_memory(); }
 *   use(b.p, b.n);  then free(b.p)
 *
 * Errors: an allocation that fails sets `oom`, which stays set; later appends
 * do nothing, so a caller checks once at the end. Not thread-safe on a
 * shared buffer; otherwise no state.
 */
#ifndef TERN_SUPPORT_TEXT_BUF_H
#define TERN_SUPPORT_TEXT_BUF_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tern_text_buf {
    char *p;    /* the bytes, p[n] == '\0' once anything was appended; the caller frees it */
    size_t n;   /* bytes held, not counting the NUL */
    size_t cap; /* bytes allocated */
    int oom;    /* an allocation failed: the content is incomplete */
} tern_text_buf;

/* Append s[0..n) (any bytes, NULs included). Capacity doubles from 256. */
static inline void tern_text_put(tern_text_buf *b, const void *s, size_t n)
{
    if (b->oom)
        return;
    if (n >= SIZE_MAX - b->n) {
        b->oom = 1;
        return;
    }
    size_t need = b->n + n + 1;
    if (need > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < need && cap <= SIZE_MAX / 2)
            cap *= 2;
        if (cap < need)
            cap = need;
        char *p = (char *)realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

/* Append the NUL-terminated s. */
static inline void tern_text_puts(tern_text_buf *b, const char *s)
{
    tern_text_put(b, s, strlen(s));
}

#ifdef __cplusplus
}
#endif

#endif
