/* reward_text.h: what every reward plugin needs to quote a response in a
 * reason: an excerpt that is printable, valid UTF-8 whatever bytes it came
 * from (the core stores reasons in JSON and logs). What valid UTF-8 is,
 * tern/support/utf8.h says (tern_utf8_len). Header-only, included by math,
 * k12 and vision, so that each plugin stays one self-contained shared
 * object. */
#ifndef TERN_REWARD_TEXT_H
#define TERN_REWARD_TEXT_H

#include <stddef.h>
#include <string.h>

#include "tern/support/utf8.h"

/* s[0..len) quoted into dst[cap] as printable, valid UTF-8, at most `max`
 * bytes of it (max + 4 <= cap, else max shrinks to fit): ASCII control
 * bytes become '?' (ASCII whitespace a space), invalid bytes '?', and "..."
 * marks a cut. */
static inline void reward_excerpt(char *dst, size_t cap, const char *s, size_t len, size_t max)
{
    size_t o = 0, i = 0;
    if (!cap)
        return;
    if (max + 4 > cap)
        max = cap > 4 ? cap - 4 : 0;
    while (i < len) {
        const unsigned char *u = (const unsigned char *)s + i;
        size_t n = tern_utf8_len(u, len - i);
        if (o + (n ? n : 1) > max) {
            if (o + 3 < cap) {
                memcpy(dst + o, "...", 3);
                o += 3;
            }
            break;
        }
        if (n == 1 && (u[0] < 0x20 || u[0] == 0x7F))
            dst[o++] = u[0] == ' ' || (u[0] >= '\t' && u[0] <= '\r') ? ' ' : '?';
        else if (n) {
            memcpy(dst + o, u, n);
            o += n;
        } else
            dst[o++] = '?';
        i += n ? n : 1;
    }
    dst[o] = '\0';
}

/* text into dst[cap] (cap >= 1), cut at a UTF-8 character boundary when it
 * is longer, so a reason built from excerpts stays valid UTF-8. */
static inline void reward_set_reason(char *dst, size_t cap, const char *text)
{
    size_t n = strlen(text);
    if (n >= cap) {
        n = cap - 1;
        while (n > 0 && ((unsigned char)text[n] & 0xC0) == 0x80)
            n--;
    }
    memcpy(dst, text, n);
    dst[n] = '\0';
}

#endif
