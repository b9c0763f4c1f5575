/*
 * tern/support/utf8.h: checking and decoding UTF-8. Header-only (every
 * function static inline), so that the core, the command layer and plugins,
 * which link nothing of libtern, share one definition of valid UTF-8.
 *
 * Valid means well-formed as Unicode's Table 3-7 says: no overlong forms
 * (C0 80, E0 80 80, ...), no UTF-16 surrogates (U+D800..U+DFFF), nothing
 * past U+10FFFF, no lead byte without all its continuation bytes (a
 * sequence cut short by the end of the input is invalid). JSON writers
 * (jansson) refuse anything else, and so should text meant for a log or a
 * terminal: model outputs are arbitrary bytes.
 *
 * What an invalid byte becomes ('?', U+FFFD, a byte that stands for itself)
 * is the caller's choice: these functions only say where a valid sequence
 * is and what it holds. Thread-safe: no state.
 */
#ifndef TERN_SUPPORT_UTF8_H
#define TERN_SUPPORT_UTF8_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Decode the code point at s[0..n) into *cp. Returns its length in bytes
 * (1 for ASCII, 2 to 4 for a valid multi-byte sequence), or 0 when s does
 * not start with a valid sequence, or n is 0; *cp is then left as it was.
 * Reads at most min(n, 4) bytes; s need not be NUL-terminated (a NUL is
 * ASCII: length 1). */
static inline size_t tern_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
    if (n == 0)
        return 0;
    unsigned c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t len;
    unsigned lo = 0x80, hi = 0xBF; /* the range of the second byte */
    uint32_t v;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2, v = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3, v = c & 0x0F;
        if (c == 0xE0)
            lo = 0xA0; /* below: an overlong form */
        else if (c == 0xED)
            hi = 0x9F; /* above: a surrogate */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4, v = c & 0x07;
        if (c == 0xF0)
            lo = 0x90; /* below: an overlong form */
        else if (c == 0xF4)
            hi = 0x8F; /* above: past U+10FFFF */
    } else {
        return 0; /* a continuation byte, C0, C1 (overlong) or F5..FF */
    }
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    v = v << 6 | (s[1] & 0x3Fu);
    for (size_t i = 2; i < len; i++) {
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
        v = v << 6 | (s[i] & 0x3Fu);
    }
    *cp = v;
    return len;
}

/* The length of the valid sequence at s[0..n): 1 for ASCII, 2 to 4, or 0
 * when it is not one (tern_utf8_decode without the code point). */
static inline size_t tern_utf8_len(const unsigned char *s, size_t n)
{
    uint32_t cp;
    return tern_utf8_decode(s, n, &cp);
}

/* A copy of the NUL-terminated `text` in which every byte that is not part
 * of a valid sequence is replaced by U+FFFD (EF BF BD). malloc'd: the caller
 * frees it. NULL when out of memory. */
static inline char *tern_utf8_clean(const char *text)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t n = strlen(text);
    char *out = (char *)malloc(3 * n + 1); /* a bad byte (1) becomes U+FFFD (3) */
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t u = tern_utf8_len(s + i, n - i);
        if (u) {
            memcpy(out + o, s + i, u);
            o += u;
            i += u;
        } else {
            memcpy(out + o, "\xef\xbf\xbd", 3);
            o += 3;
            i++;
        }
    }
    out[o] = '\0';
    return out;
}

#ifdef __cplusplus
}
#endif
#endif /* TERN_SUPPORT_UTF8_H */
