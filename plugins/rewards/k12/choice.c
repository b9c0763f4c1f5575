/* choice.c: option letters and multi-select credit (see choice.h). */
#include "choice.h"

#include <string.h>

#include "text.h"

/* Markdown and quotes around an answer. */
static size_t skip_decor(const char *t, size_t len, size_t i)
{
    while (i < len && (t[i] == ' ' || t[i] == '*' || t[i] == '_' || t[i] == '`' || t[i] == '"' ||
                       t[i] == '\''))
        i++;
    return i;
}

static size_t skip_stars(const char *t, size_t len, size_t i)
{
    while (i < len && t[i] == '*')
        i++;
    return i;
}

/* "option", "choice" (plural too), "选项", "选择", "选" before the letters. */
static size_t skip_prefix(const char *t, size_t len, size_t i)
{
    static const char *const words[] = {"options", "option", "choices", "choice"};
    static const char *const zh[] = {"\xe9\x80\x89\xe9\xa1\xb9", /* 选项 */
                                     "\xe9\x80\x89\xe6\x8b\xa9", /* 选择 */
                                     "\xe9\x80\x89"};            /* 选 */
    size_t j = i;
    for (size_t k = 0; k < 4 && j == i; k++)
        if (k12_word_ci(t, len, i, words[k]))
            j = i + strlen(words[k]);
    for (size_t k = 0; k < 3 && j == i; k++)
        if (k12_starts(t, len, i, zh[k]))
            j = i + strlen(zh[k]);
    if (j == i)
        return i;
    while (j < len && (t[j] == ' ' || t[j] == ':'))
        j++;
    return skip_decor(t, len, j);
}

static const char *const opens[] = {"(", "[", "{", "<", "\xe3\x80\x90" /* 【 */,
                                    "\xe3\x80\x94" /* 〔 */, "\xe3\x80\x8c" /* 「 */,
                                    "\xe3\x80\x88" /* 〈 */, NULL};
static const char *const closes[] = {")", "]", "}", ">", "\xe3\x80\x91" /* 】 */,
                                     "\xe3\x80\x95" /* 〕 */, "\xe3\x80\x8d" /* 」 */,
                                     "\xe3\x80\x89" /* 〉 */, NULL};

static size_t bracket(const char *t, size_t len, size_t i, const char *const *set)
{
    for (size_t k = 0; set[k]; k++)
        if (k12_starts(t, len, i, set[k]))
            return strlen(set[k]);
    return 0;
}

/* One item at t[i]; returns its bytes (0: none), its letters, whether it
 * is lower case and whether it closed a bracket. */
static size_t item(const char *t, size_t len, size_t i, unsigned *mask, int *lower, int *closed)
{
    size_t p = skip_stars(t, len, i);
    p = skip_stars(t, len, p + bracket(t, len, p, opens));
    size_t r = p;
    *lower = 0;
    if (r < len && t[r] >= 'a' && t[r] <= 'h') {
        r++;
        *lower = 1;
    } else
        while (r < len && t[r] >= 'A' && t[r] <= 'H')
            r++;
    if (r == p || r - p > 8 || (r < len && k12_is_alnum(t[r])))
        return 0;
    unsigned m = 0;
    for (size_t k = p; k < r; k++) {
        unsigned bit = 1u << (k12_lower(t[k]) - 'a');
        if (m & bit)
            return 0;
        m |= bit;
    }
    r = skip_stars(t, len, r);
    size_t b = bracket(t, len, r, closes);
    *closed = b != 0;
    r = skip_stars(t, len, r + b);
    *mask = m;
    return r - i;
}

/* A separator between items at t[i], with the spaces around it; 0 if none. */
static size_t separator(const char *t, size_t len, size_t i)
{
    static const char *const words[] = {"\xe4\xbb\xa5\xe5\x8f\x8a" /* 以及 */,
                                        "\xe3\x80\x81" /* 、 */, "\xe5\x92\x8c" /* 和 */,
                                        "\xe4\xb8\x8e" /* 与 */, "\xe5\x8f\x8a" /* 及 */,
                                        NULL};
    size_t p = i;
    while (p < len && t[p] == ' ')
        p++;
    size_t s = 0;
    if (p < len && strchr(",;/&+", t[p]) && t[p])
        s = 1;
    else if (k12_word_ci(t, len, p, "and"))
        s = 3;
    else
        for (size_t k = 0; words[k] && !s; k++)
            if (k12_starts(t, len, p, words[k]))
                s = strlen(words[k]);
    p += s;
    while (p < len && t[p] == ' ')
        p++;
    return p - i;
}

/* Nothing but spaces and punctuation closing a sentence. */
static int only_punctuation(const char *t, size_t len)
{
    for (size_t i = 0; i < len;) {
        if (t[i] && strchr(" .,;:!?)]}*\"'", t[i])) {
            i++;
            continue;
        }
        if (k12_starts(t, len, i, "\xe3\x80\x82") || k12_starts(t, len, i, "\xe3\x80\x81")) {
            i += 3; /* 。 、 */
            continue;
        }
        return 0;
    }
    return 1;
}

/* After the letters of a bare line: punctuation, or a label mark first. */
static int line_rest(const char *t, size_t len, int closed)
{
    if (closed || only_punctuation(t, len))
        return 1;
    return (len && strchr(".:)", t[0]) && t[0]) || k12_starts(t, len, 0, "\xe3\x80\x81");
}

int k12_choice_parse(const char *t, size_t len, k12_reading how, unsigned *mask)
{
    size_t i = skip_prefix(t, len, skip_decor(t, len, 0));
    unsigned all, m;
    int lower, lower_next, closed, closed_next;
    size_t k = item(t, len, i, &all, &lower, &closed);
    if (!k)
        return 0;
    i += k;
    while (!lower) {
        size_t s = separator(t, len, i);
        if (!s)
            break;
        k = item(t, len, i + s, &m, &lower_next, &closed_next);
        if (!k || lower_next || (all & m))
            break; /* the list ended before the separator: "A, because" */
        all |= m;
        closed = closed_next;
        i += s + k;
    }
    const char *rest = t + i;
    size_t rest_len = len - i;
    if ((lower || how == K12_READ_GOLD) && !only_punctuation(rest, rest_len))
        return 0;
    if (how == K12_READ_LINE && !line_rest(rest, rest_len, closed))
        return 0;
    *mask = all;
    return 1;
}

void k12_choice_letters(unsigned mask, char buf[9])
{
    size_t o = 0;
    for (unsigned k = 0; k < 8; k++)
        if (mask & (1u << k))
            buf[o++] = (char)('A' + k);
    buf[o] = '\0';
}

unsigned k12_choice_count(unsigned mask)
{
    unsigned n = 0;
    for (; mask; mask &= mask - 1)
        n++;
    return n;
}

double k12_choice_credit(unsigned got, unsigned gold, k12_partial rule)
{
    if (got == gold && got)
        return 1.0;
    if (!got || (got & ~gold))
        return 0.0;
    switch (rule) {
    case K12_PARTIAL_HALF:
        return 0.5;
    case K12_PARTIAL_FRACTION:
        return (double)k12_choice_count(got) / (double)k12_choice_count(gold);
    case K12_PARTIAL_NONE:
        break;
    }
    return 0.0;
}
