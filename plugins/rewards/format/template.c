/* template.c: see template.h. */
#include "template.h"

#include <string.h>

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

int template_parse(template_t *t, const char *text)
{
    t->n = 0;
    const char *p = text;
    for (;;) {
        const char *dots = strstr(p, "...");
        if (t->n == TEMPLATE_MAX_PARTS)
            return -1;
        t->part[t->n] = p;
        t->len[t->n] = dots ? (size_t)(dots - p) : strlen(p);
        t->n++;
        if (!dots)
            return 0;
        p = dots + 3;
    }
}

/* Match piece (p, plen) at s[i..n): the end, or -1. Whitespace runs in the
 * piece, and the place after each '>' (between tags), match any whitespace
 * run of s, or none. */
static long match_at(const char *p, size_t plen, const char *s, size_t i, size_t n)
{
    size_t k = 0;
    while (k < plen) {
        if (is_space(p[k])) {
            while (k < plen && is_space(p[k]))
                k++;
            while (i < n && is_space(s[i]))
                i++;
            continue;
        }
        if (i >= n || s[i] != p[k])
            return -1;
        i++, k++;
        if (p[k - 1] == '>' && k < plen)
            while (i < n && is_space(s[i]))
                i++;
    }
    return (long)i;
}

/* Whether s[a..b) holds a character that is not whitespace. */
static int has_text(const char *s, size_t a, size_t b)
{
    for (size_t i = a; i < b; i++)
        if (!is_space(s[i]))
            return 1;
    return 0;
}

int template_match(const template_t *t, const char *s, size_t n, int nonempty)
{
    size_t lo = 0, hi = n;
    while (lo < hi && is_space(s[lo]))
        lo++;
    while (hi > lo && is_space(s[hi - 1]))
        hi--;
    /* the first piece is anchored at the start */
    long pos = match_at(t->part[0], t->len[0], s, lo, hi);
    if (pos < 0)
        return 0;
    if (t->n == 1)
        return (size_t)pos == hi;
    /* the last piece is anchored at the end: find where it must start */
    size_t last = t->n - 1, end_start = hi + 1;
    for (size_t j = hi + 1; j-- > (size_t)pos;) {
        if (match_at(t->part[last], t->len[last], s, j, hi) == (long)hi) {
            end_start = j;
            break; /* the latest start leaves the most room before it */
        }
    }
    if (end_start > hi)
        return 0;
    /* middle pieces: each at the earliest place its wildcard allows */
    for (size_t k = 1; k < last; k++) {
        size_t from = (size_t)pos;
        if (nonempty) {
            while (from < end_start && is_space(s[from]))
                from++;
            from++; /* the wildcard holds s[from - 1] at least */
        }
        long found = -1;
        for (size_t j = from; j <= end_start && found < 0; j++) {
            long e = match_at(t->part[k], t->len[k], s, j, end_start);
            if (e >= 0)
                found = e;
        }
        if (found < 0)
            return 0;
        pos = found;
    }
    return !nonempty || has_text(s, (size_t)pos, end_start);
}
