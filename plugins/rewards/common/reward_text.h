/* reward_text.h: what every reward plugin needs to quote a response in a
 * reason: the length of a valid UTF-8 sequence, and an excerpt that is
 * printable, valid UTF-8 whatever bytes it came from (the core stores reasons
 * in JSON and logs). Header-only, included by math, k12 and vision, so that
 * each plugin stays one self-contained shared object. */
#ifndef TERN_REWARD_TEXT_H
#define TERN_REWARD_TEXT_H

#include <stddef.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at s[0..n), 0 if it is not one
 * (Unicode table 3-7: no overlongs, surrogates or code points past U+10FFFF). */
static inline size_t reward_utf8_length(const unsigned char *s, size_t n)
{
    unsigned c = s[0], lo = 0x80, hi = 0xBF;
    size_t len;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        lo = c == 0xE0 ? 0xA0 : 0x80;
        hi = c == 0xED ? 0x9F : 0xBF;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF;
    } else
        return 0;
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t k = 2; k < len; k++)
        if (s[k] < 0x80 || s[k] > 0xBF)
            return 0;
    return len;
}

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
        size_t n = reward_utf8_length(u, len - i);
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

#endif
