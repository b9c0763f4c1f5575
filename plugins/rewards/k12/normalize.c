/* normalize.c: NFKC with utf8proc, then LaTeX markup and whitespace (see
 * normalize.h). */
#include "normalize.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "text.h"

/* NFKC would read "10⁸" as "108" and "cm²" as "cm2", so before it runs the
 * superscript digits and signs become Private Use code points, which it
 * leaves alone, and tidy() writes them back as "^8". */
#define SUP_BASE 0xE000
#define SUP_PLUS (SUP_BASE + 10)
#define SUP_MINUS (SUP_BASE + 11)

static utf8proc_int32_t keep_superscripts(utf8proc_int32_t c, void *data)
{
    (void)data;
    switch (c) {
    case 0x2070:
        return SUP_BASE;
    case 0x00B9:
        return SUP_BASE + 1;
    case 0x00B2:
        return SUP_BASE + 2;
    case 0x00B3:
        return SUP_BASE + 3;
    case 0x207A:
        return SUP_PLUS;
    case 0x207B:
        return SUP_MINUS;
    default:
        break;
    }
    if (c >= 0x2074 && c <= 0x2079)
        return SUP_BASE + (c - 0x2070);
    if (c >= SUP_BASE && c <= SUP_MINUS) /* the text's own: not ours to read back */
        return 0xFFFD;
    return c;
}

/* Step 1: valid UTF-8 with no control characters, into a new buffer. */
static char *sanitize(const char *s, size_t len, size_t *out_len)
{
    char *d = malloc(3 * len + 1);
    if (!d)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        const unsigned char *u = (const unsigned char *)s + i;
        size_t n = tern_utf8_len(u, len - i);
        if (!n) {
            memcpy(d + o, "\xef\xbf\xbd", 3);
            o += 3;
            i++;
        } else if ((n == 1 && (u[0] < 0x20 || u[0] == 0x7F)) ||
                   (n == 2 && u[0] == 0xC2 && u[1] < 0xA0)) {
            d[o++] = ' ';
            i += n;
        } else {
            memcpy(d + o, u, n);
            o += n;
            i += n;
        }
    }
    d[o] = '\0';
    *out_len = o;
    return d;
}

/* ---- Step 3: LaTeX markup and whitespace, in place ------------------------- */

/* Commands whose argument is plain text: the command and its braces go. */
static const char *const text_commands[] = {"text",   "textrm",       "textbf",     "textit",
                                            "textnormal", "mathrm",   "mathbf",     "mathit",
                                            "mbox",   "operatorname", "boldsymbol", NULL};

typedef struct replacement {
    const char *name, *with;
} replacement;

/* Every replacement is shorter than "\" + its name, and everything tidy()
 * writes is no longer than what it read, so it works in place. */
static const replacement commands[] = {
    {",", " "},       {";", " "},      {":", " "},      {"!", " "},      {" ", " "},
    {"quad", " "},    {"qquad", " "},  {"\\", " "},     {"%", "%"},      {"$", ""},
    {"times", "\xc3\x97"}, {"cdot", "\xc2\xb7"}, {"div", "\xc3\xb7"}, {"circ", "\xc2\xb0"},
    {"degree", "\xc2\xb0"}, {"checkmark", "\xe2\x9c\x93"}, {"left", ""}, {"right", ""},
    {"dfrac", "\\frac"}, {"tfrac", "\\frac"}, {NULL, NULL}};

static int name_is(const char *s, size_t n, const char *name)
{
    return strlen(name) == n && memcmp(s, name, n) == 0;
}

typedef struct tidy_state {
    char *s;
    size_t w;              /* bytes written */
    int space;             /* a space is owed before the next character */
    int in_superscript;    /* the last character written was a superscript */
    unsigned char *closes; /* per open '{': 1 when its '}' is dropped */
    size_t depth;
} tidy_state;

static void emit(tidy_state *t, const char *b, size_t n)
{
    if (!n)
        return;
    if (t->space && t->w > 0)
        t->s[t->w++] = ' ';
    t->space = 0;
    t->in_superscript = 0;
    memmove(t->s + t->w, b, n);
    t->w += n;
}

/* A backslash command at s[r]; returns the bytes it spans. */
static size_t command(tidy_state *t, const char *s, size_t n, size_t r)
{
    size_t e = r + 1;
    while (e < n && k12_is_alpha(s[e]))
        e++;
    if (e == r + 1 && e < n) /* a one-character command: "\," "\%" */
        e++;
    const char *name = s + r + 1;
    size_t name_len = e - r - 1;
    for (size_t k = 0; text_commands[k]; k++) {
        if (!name_is(name, name_len, text_commands[k]))
            continue;
        size_t b = e;
        while (b < n && s[b] == ' ')
            b++;
        if (b < n && s[b] == '{') {
            t->closes[t->depth++] = 1;
            return b + 1 - r;
        }
        return e - r; /* "\text" alone: drop it */
    }
    for (size_t k = 0; commands[k].name; k++)
        if (name_is(name, name_len, commands[k].name)) {
            const char *with = commands[k].with;
            if (with[0] == ' ')
                t->space = 1;
            else
                emit(t, with, strlen(with));
            return e - r;
        }
    emit(t, s + r, e - r);
    return e - r;
}

static size_t tidy(char *s, size_t n, unsigned char *closes)
{
    tidy_state t = {.s = s, .closes = closes};
    size_t r = 0;
    while (r < n) {
        unsigned char c = (unsigned char)s[r];
        if (c == '\\') {
            r += command(&t, s, n, r);
        } else if (c == '$') {
            r++;
        } else if (k12_is_space((char)c) || c == '~') {
            t.space = 1;
            r++;
        } else if (c == '{') {
            t.closes[t.depth++] = 0;
            emit(&t, "{", 1);
            r++;
        } else if (c == '}') {
            if (!(t.depth > 0 && t.closes[--t.depth]))
                emit(&t, "}", 1);
            r++;
        } else if (c == '^' && k12_starts(s, n, r, "^\\circ")) {
            emit(&t, "\xc2\xb0", 2);
            r += 6;
        } else if (c == '^' && k12_starts(s, n, r, "^{\\circ}")) {
            emit(&t, "\xc2\xb0", 2);
            r += 8;
        } else if (c == 0xEE && r + 2 < n && (unsigned char)s[r + 1] == 0x80 &&
                   (unsigned char)s[r + 2] <= 0x8B) {
            /* U+E000..U+E00B: a superscript kept from NFKC */
            unsigned k = (unsigned char)s[r + 2] - 0x80;
            char out[2];
            size_t m = 0;
            int run = t.in_superscript && !t.space;
            if (!run)
                out[m++] = '^';
            out[m++] = k < 10 ? (char)('0' + k) : k == 10 ? '+' : '-';
            emit(&t, out, m);
            t.in_superscript = 1;
            r += 3;
        } else {
            emit(&t, s + r, 1);
            r++;
        }
    }
    s[t.w] = '\0';
    return t.w;
}

int k12_normalize(const char *s, size_t len, int fold, char **out, size_t *out_len)
{
    *out = NULL;
    *out_len = 0;
    if (len > K12_TEXT_MAX)
        return K12_NORM_TOO_LONG;
    size_t clean_len;
    char *clean = sanitize(s ? s : "", s ? len : 0, &clean_len);
    if (!clean)
        return K12_NORM_NOMEM;
    utf8proc_uint8_t *mapped = NULL;
    int options = UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT | UTF8PROC_LUMP |
                  UTF8PROC_IGNORE;
    if (fold)
        options |= UTF8PROC_CASEFOLD;
    utf8proc_ssize_t m = utf8proc_map_custom((const utf8proc_uint8_t *)clean,
                                             (utf8proc_ssize_t)clean_len, &mapped,
                                             (utf8proc_option_t)options, keep_superscripts, NULL);
    free(clean);
    if (m < 0) {
        /* The text is valid UTF-8 by now, so only memory can run out; should
         * utf8proc refuse anyway, the answer reads as nothing. */
        free(mapped);
        if (m == UTF8PROC_ERROR_NOMEM)
            return K12_NORM_NOMEM;
        mapped = malloc(1);
        if (!mapped)
            return K12_NORM_NOMEM;
        mapped[0] = '\0';
        m = 0;
    }
    unsigned char *closes = malloc((size_t)m + 1);
    if (!closes) {
        free(mapped);
        return K12_NORM_NOMEM;
    }
    *out_len = tidy((char *)mapped, (size_t)m, closes);
    free(closes);
    *out = (char *)mapped;
    return K12_NORM_OK;
}

/* ---- the blank key --------------------------------------------------------- */

static int dropped(const utf8proc_uint8_t *s, size_t len, size_t i, utf8proc_int32_t c)
{
    if (c < 0x80 && k12_is_space((char)c))
        return 1;
    if (c == '`')
        return 1;
    if (c == '%' || c == '/' || c == '#' || c == '&' || c == '@') /* they carry meaning */
        return 0;
    if (c == '.' && i > 0 && i + 1 < len && k12_is_digit((char)s[i - 1]) &&
        k12_is_digit((char)s[i + 1]))
        return 0;
    switch (utf8proc_category(c)) {
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
    case UTF8PROC_CATEGORY_ZS:
        return 1;
    default:
        return 0;
    }
}

int k12_blank_key(const char *s, size_t len, char **out, size_t *out_len)
{
    char *d = malloc(len + 1);
    if (!d)
        return K12_NORM_NOMEM;
    const utf8proc_uint8_t *u = (const utf8proc_uint8_t *)s;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        utf8proc_int32_t c;
        utf8proc_ssize_t n = utf8proc_iterate(u + i, (utf8proc_ssize_t)(len - i), &c);
        if (n <= 0) { /* not from k12_normalize: skip the byte */
            i++;
            continue;
        }
        if (!dropped(u, len, i, c)) {
            memcpy(d + o, u + i, (size_t)n);
            o += (size_t)n;
        }
        i += (size_t)n;
    }
    d[o] = '\0';
    *out = d;
    *out_len = o;
    return K12_NORM_OK;
}
