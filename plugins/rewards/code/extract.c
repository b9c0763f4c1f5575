/* extract.c: the program in a response, from its fenced code blocks (see extract.h). */
#include "extract.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int code_lang_parse(const char *name, code_lang *out)
{
    if (!name)
        return -1;
    if (strcmp(name, "python") == 0)
        *out = CODE_LANG_PYTHON;
    else if (strcmp(name, "c") == 0)
        *out = CODE_LANG_C;
    else
        return -1;
    return 0;
}

const char *code_lang_name(code_lang lang)
{
    switch (lang) {
    case CODE_LANG_PYTHON:
        return "python";
    case CODE_LANG_C:
        return "c";
    }
    return "?";
}

/* Blank inside a line: '\n' never is one, lines are split at it. */
static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

static char lower(char c) { return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c; }

/* One line: text s[a..b) without its ending; the next line starts at `next`. */
typedef struct line {
    size_t a, b, next;
} line;

static line line_at(const char *s, size_t len, size_t pos)
{
    const char *nl = memchr(s + pos, '\n', len - pos);
    line l = {pos, nl ? (size_t)(nl - s) : len, nl ? (size_t)(nl - s) + 1 : len};
    if (l.b > l.a && s[l.b - 1] == '\r')
        l.b--;
    return l;
}

/* An opening fence's parts. */
typedef struct fence {
    char ch;            /* '`' or '~' */
    size_t run, indent; /* fence characters, leading spaces */
    size_t tag, tag_len; /* the info string's first word, into the response */
} fence;

/* Whether line l looks like a fence (0-3 spaces, then 3 or more backticks or
 * tildes): 0 when not, 1 when it opens a block (*f set), -1 when it looks
 * like one but is not (a backtick in a backtick fence's info string). */
static int fence_line(const char *s, line l, fence *f)
{
    size_t i = l.a;
    while (i < l.b && s[i] == ' ' && i - l.a < 4)
        i++;
    if (i - l.a > 3 || i >= l.b || (s[i] != '`' && s[i] != '~'))
        return 0;
    size_t j = i;
    while (j < l.b && s[j] == s[i])
        j++;
    if (j - i < 3)
        return 0;
    if (s[i] == '`' && memchr(s + j, '`', l.b - j))
        return -1;
    f->ch = s[i];
    f->run = j - i;
    f->indent = i - l.a;
    while (j < l.b && is_blank(s[j]))
        j++;
    f->tag = j;
    while (j < l.b && !is_blank(s[j]))
        j++;
    f->tag_len = j - f->tag;
    return 1;
}

/* Whether line l closes a block opened by f. */
static int closes(const char *s, line l, const fence *f)
{
    size_t i = l.a;
    while (i < l.b && s[i] == ' ' && i - l.a < 4)
        i++;
    if (i - l.a > 3)
        return 0;
    size_t j = i;
    while (j < l.b && s[j] == f->ch)
        j++;
    if (j - i < f->run)
        return 0;
    while (j < l.b && is_blank(s[j]))
        j++;
    return j == l.b;
}

/* Whether the tag s[t..t+n) names `lang`, ASCII case-insensitively. */
static int tag_is(const char *s, size_t t, size_t n, code_lang lang)
{
    static const char *const python[] = {"python", "python3", "py", "py3", NULL};
    static const char *const c[] = {"c", "h", NULL};
    const char *const *names = lang == CODE_LANG_PYTHON ? python : c;
    for (size_t k = 0; names[k]; k++) {
        size_t m = strlen(names[k]), i = 0;
        while (i < m && i < n && lower(s[t + i]) == names[k][i])
            i++;
        if (i == m && m == n)
            return 1;
    }
    return 0;
}

/* A block that can be the program. */
typedef struct block {
    int found;
    size_t from, to;     /* content lines: the one at `from` up to `to` (exclusive) */
    size_t indent;       /* of the opening fence */
    int closed;
    char ch;             /* fence character */
    char tag[8];         /* as written, lower-cased; "" when untagged */
    size_t index;        /* 1-based among all blocks */
    size_t count;        /* non-empty blocks of this kind */
} block;

static void put_how(char *how, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void put_how(char *how, size_t cap, const char *fmt, ...)
{
    if (!how || !cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(how, cap, fmt, ap); /* every argument is ASCII: a cut is harmless */
    va_end(ap);
}

/* Copy lines [from, to) of s, each less up to `indent` leading spaces and
 * ending in "\n", into a new string. 0, or -1 when out of memory. */
static int copy_lines(const char *s, size_t from, size_t to, size_t indent, char **out,
                      size_t *out_len)
{
    /* each line's ending ("\n", "\r\n" or none) becomes one '\n' */
    char *p = malloc(to - from + 2);
    if (!p)
        return -1;
    size_t o = 0;
    for (size_t pos = from; pos < to;) {
        line l = line_at(s, to, pos);
        size_t a = l.a;
        while (a < l.b && a - l.a < indent && s[a] == ' ')
            a++;
        memcpy(p + o, s + a, l.b - a);
        o += l.b - a;
        p[o++] = '\n';
        pos = l.next;
    }
    p[o] = '\0';
    *out = p;
    *out_len = o;
    return 0;
}

static int blank_line(const char *s, line l)
{
    for (size_t i = l.a; i < l.b; i++)
        if (!is_blank(s[i]))
            return 0;
    return 1;
}

int code_extract(const char *response, size_t len, code_lang lang, int unfenced, char **program,
                 size_t *program_len, char *how, size_t how_cap)
{
    const char *s = response;
    block tagged = {0}, untagged = {0};
    size_t blocks = 0, empty_ours = 0;
    int fence_like = 0;
    *program = NULL;
    *program_len = 0;

    for (size_t pos = 0; pos < len;) {
        line l = line_at(s, len, pos);
        pos = l.next;
        fence f;
        int kind = fence_line(s, l, &f);
        if (kind)
            fence_like = 1;
        if (kind <= 0)
            continue;
        /* a block: its content runs to the closing fence or the end */
        blocks++;
        size_t from = pos, to = len;
        int closed = 0, empty = 1;
        while (pos < len) {
            line m = line_at(s, len, pos);
            if (closes(s, m, &f)) {
                to = pos;
                closed = 1;
                pos = m.next;
                break;
            }
            if (empty && !blank_line(s, m))
                empty = 0;
            pos = m.next;
        }
        block *b = f.tag_len == 0                       ? &untagged
                   : tag_is(s, f.tag, f.tag_len, lang) ? &tagged
                                                        : NULL;
        if (!b)
            continue;
        if (empty) {
            empty_ours++;
            continue;
        }
        b->found = 1;
        b->from = from;
        b->to = to;
        b->indent = f.indent;
        b->closed = closed;
        b->ch = f.ch;
        for (size_t k = 0; k < f.tag_len; k++) /* a matched tag is at most 7 ASCII bytes */
            b->tag[k] = lower(s[f.tag + k]);
        b->tag[f.tag_len] = '\0';
        b->index = blocks;
        b->count++;
    }

    const char *name = code_lang_name(lang);
    const block *b = tagged.found ? &tagged : untagged.found ? &untagged : NULL;
    if (b) {
        if (copy_lines(s, b->from, b->to, b->indent, program, program_len) < 0)
            return -1;
        char place[48] = "", kind[16];
        if (blocks > 1)
            snprintf(place, sizeof place, " (%zu of %zu)", b->index, blocks);
        const char *fence_text = b->ch == '`' ? "```" : "~~~";
        if (b == &untagged)
            snprintf(kind, sizeof kind, "untagged %s", fence_text);
        else
            snprintf(kind, sizeof kind, "%s%s", fence_text, b->tag);
        if (b->closed)
            put_how(how, how_cap, "the %s%s block%s", b->count > 1 ? "last " : "", kind, place);
        else
            put_how(how, how_cap, "an unclosed %s block%s", kind, place);
        return 1;
    }
    if (unfenced && !fence_like) {
        /* bare code: the lines from the first non-blank one to the last */
        size_t from = len, to = 0;
        for (size_t pos = 0; pos < len;) {
            line l = line_at(s, len, pos);
            if (!blank_line(s, l)) {
                if (from == len)
                    from = l.a;
                to = l.next;
            }
            pos = l.next;
        }
        if (from == len) {
            put_how(how, how_cap, "a blank response");
            return 0;
        }
        if (copy_lines(s, from, to, 0, program, program_len) < 0)
            return -1;
        put_how(how, how_cap, "the whole response (no code fence)");
        return 1;
    }
    if (empty_ours)
        put_how(how, how_cap, "only empty ```%s or untagged code blocks", name);
    else if (blocks)
        put_how(how, how_cap, "no ```%s or untagged code block (%zu other block%s)", name, blocks,
                blocks == 1 ? "" : "s");
    else
        put_how(how, how_cap, "no ```%s or untagged code block", name);
    return 0;
}
