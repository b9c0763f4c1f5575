/* unicode.c: UTF-8, character classes and NFC over the generated tables (see
 * unicode.h and unicode_gen.mjs). */
#include "tokenizer/unicode.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tern/support/utf8.h"
#include "tokenizer/unicode_tables.h"

const char *unicode_version(void) { return unicode_tables_version; }

size_t unicode_next(const unsigned char *s, size_t n, uint32_t *cp)
{
    size_t len = tern_utf8_decode(s, n, cp);
    if (len)
        return len;
    *cp = UNICODE_BAD | s[0]; /* invalid: the byte stands for itself */
    return 1;
}

size_t unicode_put(uint32_t cp, unsigned char *out)
{
    if (cp & UNICODE_BAD) {
        out[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x80) {
        out[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xc0 | cp >> 6);
        out[1] = (unsigned char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xe0 | cp >> 12);
        out[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
        out[2] = (unsigned char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (unsigned char)(0xf0 | cp >> 18);
    out[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
    out[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
    out[3] = (unsigned char)(0x80 | (cp & 0x3f));
    return 4;
}

int unicode_class(uint32_t cp)
{
    if (cp & UNICODE_BAD)
        return 0;
    if (cp < 0x80) /* the common case, without the search; the tables agree */
        return (cp | 0x20) - 'a' < 26 ? UNICODE_L
               : cp - '0' < 10        ? UNICODE_N
               : cp == ' ' || cp - '\t' < 5 ? UNICODE_WS | UNICODE_JS_SPACE
                                            : 0;
    /* the last run starting at or before cp */
    size_t lo = 0, hi = unicode_class_run_count;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (unicode_class_runs[mid].start <= cp)
            lo = mid;
        else
            hi = mid;
    }
    return unicode_class_runs[lo].bits;
}

/* ---- NFC ------------------------------------------------------------------ */

/* Hangul syllables compose and decompose by arithmetic (Unicode 3.12). */
enum { SBASE = 0xac00, LBASE = 0x1100, VBASE = 0x1161, TBASE = 0x11a7, LCOUNT = 19, VCOUNT = 21,
       TCOUNT = 28, NCOUNT = VCOUNT * TCOUNT, SCOUNT = LCOUNT * NCOUNT };

static int ccc(uint32_t cp)
{
    if (cp < 0x300 || (cp & UNICODE_BAD))
        return 0;
    size_t lo = 0, hi = unicode_ccc_run_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (unicode_ccc_runs[mid].last < cp)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < unicode_ccc_run_count && unicode_ccc_runs[lo].first <= cp)
        return unicode_ccc_runs[lo].rank;
    return 0;
}

static const unicode_decomp *decomposition(uint32_t cp)
{
    if (cp < 0xc0 || (cp & UNICODE_BAD))
        return NULL;
    size_t lo = 0, hi = unicode_decomp_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (unicode_decomps[mid].cp < cp)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < unicode_decomp_count && unicode_decomps[lo].cp == cp ? &unicode_decomps[lo] : NULL;
}

/* The primary composite of a pair, or 0. */
static uint32_t compose(uint32_t a, uint32_t b)
{
    if ((a | b) & UNICODE_BAD)
        return 0;
    if (a >= LBASE && a < LBASE + LCOUNT && b >= VBASE && b < VBASE + VCOUNT)
        return SBASE + ((a - LBASE) * VCOUNT + (b - VBASE)) * TCOUNT;
    if (a >= SBASE && a < SBASE + SCOUNT && (a - SBASE) % TCOUNT == 0 && b > TBASE &&
        b < TBASE + TCOUNT)
        return a + (b - TBASE);
    size_t lo = 0, hi = unicode_comp_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const unicode_comp *c = &unicode_comps[mid];
        if (c->first < a || (c->first == a && c->second < b))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < unicode_comp_count && unicode_comps[lo].first == a && unicode_comps[lo].second == b)
        return unicode_comps[lo].composite;
    return 0;
}

int unicode_nfc(const char *s, size_t len, char **out, size_t *outn)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < len && p[i] < 0x80) /* ASCII alone is always NFC */
        i++;
    if (i == len) {
        char *o = malloc(len + 1);
        if (!o) {
            errno = ENOMEM;
            return -1;
        }
        if (len)
            memcpy(o, s, len);
        *out = o;
        *outn = len;
        return 0;
    }
    /* decompose: count first, so that one allocation holds it all */
    size_t n = 0;
    for (size_t k = 0; k < len;) {
        uint32_t cp;
        k += unicode_next(p + k, len - k, &cp);
        const unicode_decomp *d = decomposition(cp);
        if (d)
            n += d->len;
        else if (cp >= SBASE && cp < SBASE + SCOUNT)
            n += (cp - SBASE) % TCOUNT ? 3 : 2;
        else
            n++;
    }
    uint32_t *cps = malloc((n ? n : 1) * sizeof *cps);
    char *o = malloc(4 * n + 1);
    if (!cps || !o) {
        free(cps);
        free(o);
        errno = ENOMEM;
        return -1;
    }
    size_t m = 0;
    for (size_t k = 0; k < len;) {
        uint32_t cp;
        k += unicode_next(p + k, len - k, &cp);
        const unicode_decomp *d = decomposition(cp);
        if (d) {
            memcpy(cps + m, unicode_decomp_cps + d->offset, d->len * sizeof *cps);
            m += d->len;
        } else if (cp >= SBASE && cp < SBASE + SCOUNT) {
            uint32_t si = cp - SBASE;
            cps[m++] = LBASE + si / NCOUNT;
            cps[m++] = VBASE + si % NCOUNT / TCOUNT;
            if (si % TCOUNT)
                cps[m++] = TBASE + si % TCOUNT;
        } else {
            cps[m++] = cp;
        }
    }
    /* canonical order: a stable sort of each run of non-starters by class */
    for (size_t k = 1; k < m; k++) {
        int c = ccc(cps[k]);
        if (!c)
            continue;
        for (size_t j = k; j > 0; j--) {
            int b = ccc(cps[j - 1]);
            if (b <= c)
                break;
            uint32_t t = cps[j];
            cps[j] = cps[j - 1];
            cps[j - 1] = t;
        }
    }
    /* compose: each character with the last starter unless something between
     * blocks it (a starter, or a mark of the same or a higher class) */
    size_t w = 0;
    long starter = -1;
    int last = -1; /* class of the last character kept after the starter */
    for (size_t k = 0; k < m; k++) {
        uint32_t cp = cps[k];
        int c = ccc(cp);
        if (starter >= 0 && (last < c || (last == 0 && c == 0 && (long)w - 1 == starter))) {
            uint32_t comp = compose(cps[starter], cp);
            if (comp) {
                cps[starter] = comp;
                continue;
            }
        }
        if (c == 0)
            starter = (long)w;
        last = c;
        cps[w++] = cp;
    }
    size_t k = 0;
    for (size_t j = 0; j < w; j++)
        k += unicode_put(cps[j], (unsigned char *)o + k);
    free(cps);
    o[k] = '\0';
    *out = o;
    *outn = k;
    return 0;
}
