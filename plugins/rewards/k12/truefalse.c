/* truefalse.c: true/false answers (see truefalse.h). */
#include "truefalse.h"

#include <string.h>

#include "text.h"

typedef struct tf_word {
    const char *text; /* lower case */
    int value;
} tf_word;

static const tf_word words[] = {
    {"true", 1},      {"yes", 1},   {"t", 1},     {"correct", 1},    {"right", 1},
    {"false", 0},     {"no", 0},    {"f", 0},     {"incorrect", 0},  {"wrong", 0},
    {"\xe5\xaf\xb9", 1},                          /* 对 */
    {"\xe6\xad\xa3\xe7\xa1\xae", 1},              /* 正确 */
    {"\xe6\x98\xaf", 1},                          /* 是 */
    {"\xe2\x88\x9a", 1},                          /* √ */
    {"\xe2\x9c\x93", 1},                          /* ✓ */
    {"\xe2\x9c\x94", 1},                          /* ✔ */
    {"\xe9\x94\x99", 0},                          /* 错 */
    {"\xe9\x94\x99\xe8\xaf\xaf", 0},              /* 错误 */
    {"\xe5\x90\xa6", 0},                          /* 否 */
    {"\xe4\xb8\x8d\xe5\xaf\xb9", 0},              /* 不对 */
    {"\xe4\xb8\x8d\xe6\xad\xa3\xe7\xa1\xae", 0},  /* 不正确 */
    {"\xe4\xb8\x8d\xe6\x98\xaf", 0},              /* 不是 */
    {"\xc3\x97", 0},                              /* × */
    {"\xe2\x9c\x97", 0},                          /* ✗ */
    {"\xe2\x9c\x98", 0},                          /* ✘ */
};

#define ZH_DE "\xe7\x9a\x84" /* 的 */

/* A CJK ideograph (U+3400..U+9FFF) starts at t[i]. */
static int cjk_at(const char *t, size_t len, size_t i)
{
    if (i > len || len - i < 3)
        return 0;
    unsigned char c = (unsigned char)t[i], d = (unsigned char)t[i + 1];
    return (c >= 0xE4 && c <= 0xE9) || (c == 0xE3 && d >= 0x90);
}

/* Where the word at t[i] ends, 0 when none ends there. */
static size_t word_at(const char *t, size_t len, size_t i, int *value)
{
    for (size_t k = 0; k < sizeof words / sizeof words[0]; k++) {
        if (!k12_starts_ci(t, len, i, words[k].text))
            continue;
        size_t e = i + strlen(words[k].text);
        if ((unsigned char)words[k].text[0] >= 0x80 && k12_starts(t, len, e, ZH_DE))
            e += 3;
        if (e < len && (k12_is_alnum(t[e]) || cjk_at(t, len, e)))
            continue;
        *value = words[k].value;
        return e;
    }
    return 0;
}

int k12_tf_parse(const char *t, size_t len, int strict, int *value)
{
    size_t i = 0;
    while (i < len && t[i] && strchr(" *_`\"'([", t[i]))
        i++;
    if (k12_starts(t, len, i, "\xe3\x80\x90")) /* 【 */
        i += 3;
    size_t e = word_at(t, len, i, value);
    if (!e)
        return 0;
    if (!strict)
        return 1;
    for (; e < len; e++)
        if (!strchr(" .,;:!?)]*\"'", t[e]) || !t[e]) {
            if (k12_starts(t, len, e, "\xe3\x80\x82") || k12_starts(t, len, e, "\xe3\x80\x91")) {
                e += 2; /* 。 】 */
                continue;
            }
            return 0;
        }
    return 1;
}

/* ---- the last word ---------------------------------------------------------- */

static const tf_word last_words[] = {
    {"\xe4\xb8\x8d\xe6\xad\xa3\xe7\xa1\xae", 0}, /* 不正确 */
    {"\xe4\xb8\x8d\xe5\xaf\xb9", 0},             /* 不对 */
    {"\xe6\xb2\xa1\xe9\x94\x99", 1},             /* 没错 */
    {"\xe9\x94\x99\xe8\xaf\xaf", 0},             /* 错误 */
    {"\xe6\xad\xa3\xe7\xa1\xae", 1},             /* 正确 */
    {"\xe9\x94\x99", 0},                         /* 错 */
    {"\xe5\xaf\xb9", 1},                         /* 对 */
    {"incorrect", 0}, {"correct", 1}, {"false", 0}, {"true", 1},
};

static int ends_with(const char *t, size_t e, const char *w)
{
    size_t n = strlen(w);
    return e >= n && k12_starts_ci(t, e, e - n, w);
}

int k12_tf_parse_last(const char *t, size_t len, int *value)
{
    size_t e = len;
    for (;;) {
        if (e > 0 && t[e - 1] && strchr(" .!*\"')", t[e - 1]))
            e--;
        else if (ends_with(t, e, "\xe3\x80\x82") || ends_with(t, e, ZH_DE)) /* 。 的 */
            e -= 3;
        else
            break;
    }
    for (size_t k = 0; k < sizeof last_words / sizeof last_words[0]; k++) {
        const char *w = last_words[k].text;
        if (!ends_with(t, e, w))
            continue;
        size_t b = e - strlen(w);
        if ((unsigned char)w[0] < 0x80) {
            if (b > 0 && k12_is_alpha(t[b - 1]))
                return 0; /* "untrue" */
            while (b > 0 && t[b - 1] == ' ')
                b--;
            if (ends_with(t, b, "not") || ends_with(t, b, "n't"))
                return 0;
        } else if (ends_with(t, b, "\xe4\xb8\x8d") || ends_with(t, b, "\xe6\xb2\xa1")) {
            return 0; /* 不错, 没对: not a plain verdict */
        }
        *value = last_words[k].value;
        return 1;
    }
    return 0;
}
