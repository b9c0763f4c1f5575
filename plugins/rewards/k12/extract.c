/* extract.c: the answer of a response: \boxed{}, then an answer statement,
 * then the last line (see extract.h). */
#include "extract.h"

#include <string.h>

#include "../common/reward_boxed.h"
#include "text.h"

/* UTF-8 of the CJK words and punctuation the markers are made of. */
#define ZH_ANSWER "\xe7\xad\x94\xe6\xa1\x88" /* 答案 */
#define ZH_DA "\xe7\xad\x94"                 /* 答 */
#define ZH_XUAN "\xe9\x80\x89"               /* 选 */
#define ZH_XUANXIANG "\xe9\x80\x89\xe9\xa1\xb9" /* 选项 */
#define ZH_XUANZE "\xe9\x80\x89\xe6\x8b\xa9" /* 选择 */
#define ZH_BU "\xe4\xb8\x8d"                 /* 不 */
#define FW_COLON "\xef\xbc\x9a"              /* ： */
#define FW_LPAREN "\xef\xbc\x88"             /* （ */
#define ZH_LBRACKET "\xe3\x80\x90"           /* 【 */
#define ZH_STOP "\xe3\x80\x82"               /* 。 */
#define FW_BANG "\xef\xbc\x81"               /* ！ */
#define FW_QUESTION "\xef\xbc\x9f"           /* ？ */

/* Whitespace and the ASCII punctuation that decorates an answer without
 * being one: an X of these alone is empty. */
static int is_filler(char c)
{
    return k12_is_space(c) || (c && strchr("$*`_.:;,!?\"'()[]{}-~#", c) != NULL);
}

int k12_has_content(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (!is_filler(s[i]))
            return 1;
    return 0;
}

/* s[b..e) trimmed as the answer; 1 and *out set when it has content. */
static int take(const char *s, size_t b, size_t e, k12_span *out)
{
    while (b < e && k12_is_space(s[b]))
        b++;
    while (e > b && k12_is_space(s[e - 1]))
        e--;
    if (!k12_has_content(s + b, e - b))
        return 0;
    out->text = s + b;
    out->len = e - b;
    return 1;
}

/* ---- \boxed{X} ---------------------------------------------------------- */

/* Whether the '{' at s[i] is the argument of \boxed (blanks allowed between). */
static int opens_boxed(const char *s, size_t i)
{
    size_t j = i;
    while (j > 0 && k12_is_space(s[j - 1]))
        j--;
    return j >= 6 && memcmp(s + j - 6, "\\boxed", 6) == 0;
}

static int take_boxed(void *out, const char *s, size_t b, size_t e)
{
    return take(s, b, e, out);
}

/* The last balanced \boxed{X} with content (../common/reward_boxed.h). */
static int find_boxed(const char *s, size_t len, k12_span *out)
{
    return reward_find_boxed(s, len, opens_boxed, take_boxed, out);
}

/* ---- answer statements ---------------------------------------------------- */

static size_t skip_blanks(const char *s, size_t len, size_t q)
{
    while (q < len && (k12_is_blank(s[q]) || s[q] == '*'))
        q++;
    return q;
}

/* A ':' or '：' at s[q]: its length, else 0. */
static size_t colon_at(const char *s, size_t len, size_t q)
{
    if (q < len && s[q] == ':')
        return 1;
    return k12_starts(s, len, q, FW_COLON) ? 3 : 0;
}

/* "answer", "option" or "choice" (a trailing 's' allowed, any case, whole
 * word), then ':', '=', "is", "are", "should be", "would be", "must be" or
 * "will be". Returns the index after it, 0 if there is no marker at i. */
static size_t english_marker(const char *s, size_t len, size_t i, int *colon)
{
    static const char *const nouns[] = {"answer", "option", "choice"};
    static const char *const verbs[] = {"is", "are", "should be", "would be", "must be",
                                        "will be"};
    if (i > 0 && k12_is_alpha(s[i - 1]))
        return 0;
    size_t q = 0;
    for (size_t k = 0; k < 3 && !q; k++)
        if (k12_starts_ci(s, len, i, nouns[k]))
            q = i + 6;
    if (!q)
        return 0;
    if (q < len && (s[q] == 's' || s[q] == 'S'))
        q++;
    if (q < len && k12_is_alpha(s[q]))
        return 0; /* "answered", "optional" */
    q = skip_blanks(s, len, q);
    size_t c = colon_at(s, len, q);
    if (c || (q < len && s[q] == '=')) {
        *colon = c != 0;
        return q + (c ? c : 1);
    }
    for (size_t k = 0; k < sizeof verbs / sizeof verbs[0]; k++)
        if (k12_word_ci(s, len, q, verbs[k]))
            return q + strlen(verbs[k]);
    return 0;
}

/* The Chinese markers at i; returns the index after the marker, 0 if none:
 *   答案 [应该|应当|应|就|也|即] (是|为|為|选|選|:|：)      正确答案是 B
 *   答 (:|：)                                               答：面积是 24 平方厘米
 *   选项 (是|为|:|：)                                       正确选项为 C
 *   选 / 选择, not after 不, when an option letter follows   故选 B，所以选（A）
 */
static size_t chinese_marker(const char *s, size_t len, size_t i, int *colon)
{
    static const char *const adverbs[] = {"\xe5\xba\x94\xe8\xaf\xa5", /* 应该 */
                                          "\xe5\xba\x94\xe5\xbd\x93", /* 应当 */
                                          "\xe5\xba\x94",             /* 应 */
                                          "\xe5\xb0\xb1",             /* 就 */
                                          "\xe4\xb9\x9f",             /* 也 */
                                          "\xe5\x8d\xb3"};            /* 即 */
    static const char *const copulas[] = {"\xe6\x98\xaf", /* 是 */
                                          "\xe4\xb8\xba", /* 为 */
                                          "\xe7\x82\xba", /* 為 */
                                          ZH_XUAN,        /* 选 */
                                          "\xe9\x81\xb8"}; /* 選 */
    size_t q, c;
    if (k12_starts(s, len, i, ZH_ANSWER)) {
        q = skip_blanks(s, len, i + 6);
        for (size_t k = 0; k < sizeof adverbs / sizeof adverbs[0]; k++)
            if (k12_starts(s, len, q, adverbs[k])) {
                q += strlen(adverbs[k]);
                break;
            }
        if ((c = colon_at(s, len, q))) {
            *colon = 1;
            return q + c;
        }
        for (size_t k = 0; k < sizeof copulas / sizeof copulas[0]; k++)
            if (k12_starts(s, len, q, copulas[k]))
                return q + 3;
        return 0; /* 答案解析, 参考答案见下 */
    }
    if (k12_starts(s, len, i, ZH_DA) && (c = colon_at(s, len, i + 3))) {
        *colon = 1;
        return i + 3 + c;
    }
    if (k12_starts(s, len, i, ZH_XUANXIANG)) {
        q = skip_blanks(s, len, i + 6);
        if ((c = colon_at(s, len, q))) {
            *colon = 1;
            return q + c;
        }
        return k12_starts(s, len, q, copulas[0]) || k12_starts(s, len, q, copulas[1]) ? q + 3
                                                                                      : 0;
    }
    if (k12_starts(s, len, i, ZH_XUAN) && !(i >= 3 && k12_starts(s, len, i - 3, ZH_BU))) {
        q = i + (k12_starts(s, len, i, ZH_XUANZE) ? 6 : 3);
        size_t r = skip_blanks(s, len, q);
        r += colon_at(s, len, r);
        r = skip_blanks(s, len, r);
        if (r < len && (s[r] == '(' || s[r] == '['))
            r++;
        else if (k12_starts(s, len, r, FW_LPAREN) || k12_starts(s, len, r, ZH_LBRACKET))
            r += 3;
        /* A weak marker: only an option letter after it makes it one. */
        const unsigned char *u = (const unsigned char *)s + r;
        int letter = (r < len && s[r] >= 'A' && s[r] <= 'H') ||
                     (len - r >= 3 && u[0] == 0xEF && u[1] == 0xBC && u[2] >= 0xA1 &&
                      u[2] <= 0xA8); /* Ａ..Ｈ */
        return letter ? q : 0;
    }
    return 0;
}

/* The end of the answer that starts at q: the end of its sentence or line. */
static size_t answer_end(const char *s, size_t len, size_t q)
{
    size_t e = q;
    for (; e < len; e++) {
        char c = s[e];
        if (c == '\n')
            break;
        if ((c == '.' || c == '!' || c == '?') && (e + 1 == len || k12_is_space(s[e + 1])))
            break;
        if (k12_starts(s, len, e, ZH_STOP) || k12_starts(s, len, e, FW_BANG) ||
            k12_starts(s, len, e, FW_QUESTION))
            break;
    }
    return e;
}

/* The last marker whose answer has content. A failed try's answer holds only
 * filler, which no marker starts with, so tries never overlap: linear. */
static int find_statement(const char *s, size_t len, k12_span *out)
{
    for (size_t i = len; i-- > 0;) {
        int colon = 0;
        size_t q = english_marker(s, len, i, &colon);
        if (!q)
            q = chinese_marker(s, len, i, &colon);
        if (!q)
            continue;
        q = skip_blanks(s, len, q);
        size_t c = colon_at(s, len, q);
        if (c)
            q += c;
        /* "The answer is:" may put the answer on the next line. */
        if (c || colon)
            while (q < len && k12_is_space(s[q]))
                q++;
        if (take(s, q, answer_end(s, len, q), out))
            return 1;
    }
    return 0;
}

/* ---- the last line -------------------------------------------------------- */

static int find_last_line(const char *s, size_t len, k12_span *out)
{
    size_t e = len;
    while (e > 0) {
        size_t b = e;
        while (b > 0 && s[b - 1] != '\n')
            b--;
        if (take(s, b, e, out))
            return 1;
        e = b ? b - 1 : 0;
    }
    return 0;
}

/* ---- the places in order -------------------------------------------------- */

k12_form k12_extract(const char *s, size_t len, int last_line, k12_span *out)
{
    memset(out, 0, sizeof *out);
    if (!s)
        return K12_FORM_NONE;
    if (find_boxed(s, len, out))
        out->form = K12_FORM_BOXED;
    else if (find_statement(s, len, out))
        out->form = K12_FORM_STATED;
    else if (last_line && find_last_line(s, len, out))
        out->form = K12_FORM_LAST_LINE;
    return out->form;
}

const char *k12_form_label(k12_form form)
{
    switch (form) {
    case K12_FORM_BOXED:
        return "boxed answer";
    case K12_FORM_STATED:
        return "stated answer";
    case K12_FORM_LAST_LINE:
        return "last line";
    case K12_FORM_NONE:
        break;
    }
    return "no answer";
}
