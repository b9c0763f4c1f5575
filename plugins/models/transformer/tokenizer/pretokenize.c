/* pretokenize.c: the known pre-tokenizer regexes as hand-written matchers
 * (see pretokenize.h). */
#include "tokenizer/pretokenize.h"

#include <string.h>

#include "tokenizer/unicode.h"

const char *const pretok_regex[PRETOK_COUNT] = {
    [PRETOK_GPT2] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+",
    [PRETOK_LLAMA3] = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
                      "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    [PRETOK_QWEN2] = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
                     "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    [PRETOK_DIGIT] = "\\p{N}",
    [PRETOK_DIGITS] = "\\p{N}+",
};

int pretok_find(const char *regex)
{
    for (int p = 0; p < PRETOK_COUNT; p++)
        if (strcmp(regex, pretok_regex[p]) == 0)
            return p;
    return -1;
}

static uint32_t fold(uint32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

/* 's|'t|'re|'ve|'m|'ll|'d at cp[i] (a quote): the match length, or 0 */
static size_t contraction(const uint32_t *cp, size_t n, size_t i, int icase)
{
    if (i + 1 >= n)
        return 0;
    uint32_t a = icase ? fold(cp[i + 1]) : cp[i + 1];
    if (a == 's' || a == 't' || a == 'm' || a == 'd')
        return 2;
    if (i + 2 >= n)
        return 0;
    uint32_t b = icase ? fold(cp[i + 2]) : cp[i + 2];
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
        return 3;
    return 0;
}

/* the end of the run of code points from i whose class has any of bits */
static size_t run(const uint8_t *cls, size_t n, size_t i, int bits)
{
    while (i < n && (cls[i] & bits))
        i++;
    return i;
}

/* the end of the run of code points from i that are not \p{N} */
static size_t digitless(const uint8_t *cls, size_t n, size_t i)
{
    while (i < n && !(cls[i] & UNICODE_N))
        i++;
    return i;
}

/* the end of the run of "other" code points from i: not \s, \p{L} or \p{N} */
static size_t run_other(const uint8_t *cls, size_t n, size_t i, int space)
{
    while (i < n && !(cls[i] & (space | UNICODE_L | UNICODE_N)))
        i++;
    return i;
}

/* \s+(?!\S)|\s+ at a \s: the whole run when it ends the text or is one code
 * point long, otherwise the run less its last code point (which the lookahead
 * leaves to stand before the next word) */
static size_t spaces(const uint8_t *cls, size_t n, size_t i, int space)
{
    size_t j = run(cls, n, i, space);
    if (j == n || j - i == 1)
        return j - i;
    return j - i - 1;
}

static size_t gpt2(int space, const uint32_t *cp, const uint8_t *cls, size_t n, size_t i)
{
    if (cp[i] == '\'') {
        size_t k = contraction(cp, n, i, 0);
        if (k)
            return k;
    }
    /* ' ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+': an ASCII space joins the run after it */
    size_t s = cp[i] == ' ' && i + 1 < n && !(cls[i + 1] & space) ? i + 1 : i;
    if (cls[s] & UNICODE_L)
        return run(cls, n, s, UNICODE_L) - i;
    if (cls[s] & UNICODE_N)
        return run(cls, n, s, UNICODE_N) - i;
    if (!(cls[s] & space))
        return run_other(cls, n, s, space) - i;
    return spaces(cls, n, i, space);
}

static size_t llama3(int digits, int space, const uint32_t *cp, const uint8_t *cls, size_t n,
                     size_t i)
{
    uint32_t c = cp[i];
    if (c == '\'') {
        size_t k = contraction(cp, n, i, 1);
        if (k)
            return k;
    }
    /* [^\r\n\p{L}\p{N}]?\p{L}+ */
    if (cls[i] & UNICODE_L)
        return run(cls, n, i, UNICODE_L) - i;
    if (c != '\r' && c != '\n' && !(cls[i] & UNICODE_N) && i + 1 < n && (cls[i + 1] & UNICODE_L))
        return run(cls, n, i + 1, UNICODE_L) - i;
    /* \p{N}{1,3} or \p{N} */
    if (cls[i] & UNICODE_N) {
        size_t j = i + 1;
        while (j < n && j - i < (size_t)digits && (cls[j] & UNICODE_N))
            j++;
        return j - i;
    }
    /* ' ?[^\s\p{L}\p{N}]+[\r\n]*' */
    const int word = space | UNICODE_L | UNICODE_N;
    size_t s = c == ' ' && i + 1 < n && !(cls[i + 1] & word) ? i + 1 : i;
    if (!(cls[s] & word)) {
        size_t j = run_other(cls, n, s, space);
        while (j < n && (cp[j] == '\r' || cp[j] == '\n'))
            j++;
        return j - i;
    }
    /* \s*[\r\n]+: the whitespace run up to its last line break */
    size_t j = run(cls, n, i, space);
    for (size_t k = j; k > i; k--)
        if (cp[k - 1] == '\r' || cp[k - 1] == '\n')
            return k - i;
    return spaces(cls, n, i, space);
}

size_t pretok_match(pretok_pattern p, int space, const uint32_t *cp, const uint8_t *cls, size_t n,
                    size_t i)
{
    switch (p) {
    case PRETOK_GPT2:
        return gpt2(space, cp, cls, n, i);
    case PRETOK_LLAMA3:
        return llama3(3, space, cp, cls, n, i);
    case PRETOK_QWEN2:
        return llama3(1, space, cp, cls, n, i);
    case PRETOK_DIGIT: /* a digit alone, or the run of non-digits up to the next one */
        return cls[i] & UNICODE_N ? 1 : digitless(cls, n, i) - i;
    case PRETOK_DIGITS:
        return cls[i] & UNICODE_N ? run(cls, n, i, UNICODE_N) - i : digitless(cls, n, i) - i;
    default:
        return 1;
    }
}
