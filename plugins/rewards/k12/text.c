/* text.c: bytes, UTF-8 and reasons (see text.h). */
#include "text.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int k12_starts(const char *s, size_t len, size_t i, const char *w)
{
    size_t n = strlen(w);
    return i <= len && len - i >= n && memcmp(s + i, w, n) == 0;
}

int k12_starts_ci(const char *s, size_t len, size_t i, const char *w)
{
    size_t n = strlen(w);
    if (i > len || len - i < n)
        return 0;
    for (size_t k = 0; k < n; k++)
        if (k12_lower(s[i + k]) != w[k])
            return 0;
    return 1;
}

int k12_word_ci(const char *s, size_t len, size_t i, const char *w)
{
    size_t n = strlen(w);
    return k12_starts_ci(s, len, i, w) && (i + n == len || !k12_is_alpha(s[i + n]));
}

void k12_excerpt(char *dst, const char *s, size_t len)
{
    size_t o = 0, i = 0;
    while (i < len) {
        const unsigned char *u = (const unsigned char *)s + i;
        size_t n = tern_utf8_len(u, len - i);
        if (o + (n ? n : 1) > K12_EXCERPT_MAX) {
            memcpy(dst + o, "...", 3);
            o += 3;
            break;
        }
        /* C0 and C1 controls and the line separators would break a log line. */
        int control = (n == 1 && (u[0] < 0x20 || u[0] == 0x7F)) ||
                      (n == 2 && u[0] == 0xC2 && u[1] < 0xA0);
        int separator = n == 3 && u[0] == 0xE2 && u[1] == 0x80 && (u[2] == 0xA8 || u[2] == 0xA9);
        if (control || separator)
            dst[o++] = (n == 1 && k12_is_space((char)u[0])) || separator ? ' ' : '?';
        else if (n) {
            memcpy(dst + o, u, n);
            o += n;
        } else
            dst[o++] = '?';
        i += n ? n : 1;
    }
    dst[o] = '\0';
}

void k12_reason(char *dst, size_t cap, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (!cap)
        return;
    size_t len = n < 0 ? 0 : strlen(buf);
    if (len >= cap) {
        len = cap - 1;
        /* buf[len] is the first byte left out; a continuation byte there
         * means the character before it is cut: leave it out too. */
        while (len > 0 && ((unsigned char)buf[len] & 0xC0) == 0x80)
            len--;
    }
    memcpy(dst, buf, len);
    dst[len] = '\0';
}
