/* palette.c: see palette.h. */
#include "palette.h"

#include <string.h>

const vis_color vis_palette[VIS_PALETTE_SIZE] = {
    {"black", {0, 0, 0}},        {"white", {255, 255, 255}}, {"gray", {128, 128, 128}},
    {"red", {255, 0, 0}},        {"green", {0, 128, 0}},     {"blue", {0, 0, 255}},
    {"yellow", {255, 255, 0}},   {"orange", {255, 165, 0}},  {"purple", {128, 0, 128}},
    {"pink", {255, 192, 203}},   {"brown", {165, 42, 42}},   {"cyan", {0, 255, 255}},
    {"magenta", {255, 0, 255}},
};

/* Every spelling: ASCII ones match whole words, case-insensitively. */
typedef struct alias {
    const char *text;
    int color;
} alias;

static const alias aliases[] = {
    {"black", 0},   {"white", 1},  {"gray", 2},     {"grey", 2},     {"red", 3},
    {"green", 4},   {"blue", 5},   {"yellow", 6},   {"orange", 7},   {"purple", 8},
    {"violet", 8},  {"pink", 9},   {"brown", 10},   {"cyan", 11},    {"magenta", 12},
    {"fuchsia", 12},
    /* Chinese: with 色 and without; the longer spelling is tried first */
    {"黑色", 0},    {"黑", 0},     {"白色", 1},     {"白", 1},       {"灰色", 2},
    {"灰", 2},      {"红色", 3},   {"红", 3},       {"绿色", 4},     {"绿", 4},
    {"蓝色", 5},    {"蓝", 5},     {"黄色", 6},     {"黄", 6},       {"橙色", 7},
    {"橙", 7},      {"紫色", 8},   {"紫", 8},       {"粉红色", 9},   {"粉色", 9},
    {"粉红", 9},    {"棕色", 10},  {"褐色", 10},    {"青色", 11},    {"品红色", 12},
    {"洋红色", 12}, {"品红", 12},  {"洋红", 12},
};
#define N_ALIASES (sizeof aliases / sizeof aliases[0])

static int lower(int c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }
static int is_letter(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

int vis_palette_lookup(const char *s, size_t len)
{
    for (size_t i = 0; i < N_ALIASES; i++) {
        const char *t = aliases[i].text;
        size_t n = strlen(t);
        if (n != len)
            continue;
        size_t k = 0;
        while (k < n && lower((unsigned char)s[k]) == (unsigned char)t[k])
            k++;
        if (k == n)
            return aliases[i].color;
    }
    return -1;
}

int vis_palette_nearest(const uint8_t rgb[3])
{
    int best = 0;
    long best_d = -1;
    for (int i = 0; i < VIS_PALETTE_SIZE; i++) {
        long d = 0;
        for (int c = 0; c < 3; c++) {
            long e = (long)rgb[c] - (long)vis_palette[i].rgb[c];
            d += e * e;
        }
        if (best_d < 0 || d < best_d) {
            best_d = d;
            best = i;
        }
    }
    return best;
}

int vis_palette_find_last(const char *s, size_t len, size_t *at, size_t *len_out)
{
    int found = -1;
    size_t i = 0;
    while (i < len) {
        unsigned char c = (unsigned char)s[i];
        if (is_letter(c)) {
            size_t j = i;
            while (j < len && is_letter((unsigned char)s[j]))
                j++;
            int k = j - i <= 8 ? vis_palette_lookup(s + i, j - i) : -1;
            if (k >= 0) {
                found = k;
                *at = i;
                *len_out = j - i;
            }
            i = j;
            continue;
        }
        if (c >= 0xE0) { /* a CJK character is three bytes of UTF-8 */
            size_t best = 0;
            int which = -1;
            for (size_t a = 0; a < N_ALIASES; a++) {
                const char *t = aliases[a].text;
                if ((unsigned char)t[0] < 0x80)
                    continue;
                size_t n = strlen(t);
                if (n > best && n <= len - i && memcmp(s + i, t, n) == 0) {
                    best = n;
                    which = aliases[a].color;
                }
            }
            if (which >= 0) {
                found = which;
                *at = i;
                *len_out = best;
                i += best;
                continue;
            }
        }
        i++;
    }
    return found;
}
