/*
 * fuzz_format.c: libFuzzer target for the `format` reward's template matcher
 * (plugins/rewards/format/template.c). Input: a flags byte (bit 0:
 * nonempty), the template up to the first NUL, then the response. Nothing
 * may crash or read out of bounds, and on small inputs the greedy matcher
 * must agree with an exhaustive one that tries every way each "..." and each
 * flexible whitespace run could be matched.
 *
 *   build-fuzz/tests/fuzz/fuzz_format -max_total_time=600 corpus tests/fuzz/corpus_format
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "template.h"

#define SMALL 60 /* responses up to this many bytes are checked exhaustively */

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* Every end of piece p[k..plen) matched from s[i], as bits of *mask. */
static void piece_ends(const char *p, size_t plen, size_t k, const char *s, size_t i, size_t n,
                       uint64_t *mask)
{
    if (k == plen) {
        *mask |= 1ull << i;
        return;
    }
    if (is_space(p[k])) {
        size_t k2 = k;
        while (k2 < plen && is_space(p[k2]))
            k2++;
        for (size_t j = i;; j++) { /* any number of whitespace bytes, none included */
            piece_ends(p, plen, k2, s, j, n, mask);
            if (j >= n || !is_space(s[j]))
                break;
        }
        return;
    }
    if (i >= n || s[i] != p[k])
        return;
    if (p[k] == '>' && k + 1 < plen) {
        for (size_t j = i + 1;; j++) {
            piece_ends(p, plen, k + 1, s, j, n, mask);
            if (j >= n || !is_space(s[j]))
                break;
        }
        return;
    }
    piece_ends(p, plen, k + 1, s, i + 1, n, mask);
}

static int has_text(const char *s, size_t a, size_t b)
{
    for (size_t i = a; i < b; i++)
        if (!is_space(s[i]))
            return 1;
    return 0;
}

static int exhaustive(const template_t *t, size_t k, size_t pos, const char *s, size_t hi,
                      int nonempty)
{
    uint64_t ends = 0;
    piece_ends(t->part[k], t->len[k], 0, s, pos, hi, &ends);
    for (size_t e = pos; e <= hi; e++) {
        if (!(ends >> e & 1))
            continue;
        if (k == t->n - 1) {
            if (e == hi)
                return 1;
            continue;
        }
        for (size_t q = e; q <= hi; q++)
            if ((!nonempty || has_text(s, e, q)) && exhaustive(t, k + 1, q, s, hi, nonempty))
                return 1;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    int nonempty = data[0] & 1;
    const char *rest = (const char *)data + 1;
    size_t left = size - 1;
    const char *nul = memchr(rest, '\0', left);
    if (!nul)
        return 0;
    size_t tlen = (size_t)(nul - rest);
    char *text = malloc(tlen + 1);
    if (!text)
        return 0;
    memcpy(text, rest, tlen + 1);
    const char *resp = nul + 1;
    size_t n = left - tlen - 1;
    char *copy = malloc(n ? n : 1); /* exactly n bytes: reads past them are caught */
    if (!copy) {
        free(text);
        return 0;
    }
    memcpy(copy, resp, n);
    template_t t;
    if (template_parse(&t, text) == 0) {
        int got = template_match(&t, copy, n, nonempty);
        if (n <= SMALL && t.n <= 4) {
            size_t lo = 0, hi = n;
            while (lo < hi && is_space(copy[lo]))
                lo++;
            while (hi > lo && is_space(copy[hi - 1]))
                hi--;
            if (got != exhaustive(&t, 0, lo, copy, hi, nonempty))
                abort(); /* the greedy matcher is wrong on this input */
        }
    }
    free(copy);
    free(text);
    return 0;
}
