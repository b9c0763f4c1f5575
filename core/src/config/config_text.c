/* config_text.c: reading a config and its @include files into one string
 * (see config_text.h). The scanner below follows libconfig's own (scanner.l)
 * only as far as it must: it tells code from strings and comments, finds
 * `@include "NAME"` where libconfig would (at the start of a line of code),
 * and finds integer literals. */
#include "config/config_text.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tern/abi.h"
#include "tern/support/regular_file.h"
#include "tern/support/text_buf.h"

typedef struct expander {
    tern_config_text *t;
    tern_text_buf out;
    unsigned out_line; /* the line of `out` being written, from 1 */
    size_t includes;   /* @include directives followed so far */
    const char *label; /* the string's name in messages (text given, not a file) */
    unsigned flags;
    tern_diag *d;
    int status; /* the first failure; then everything stops */
} expander;

static void fail(expander *x, const char *file, unsigned line, const char *fmt, ...)
    TERN_PRINTF(4, 5);
static void fail(expander *x, const char *file, unsigned line, const char *fmt, ...)
{
    if (x->status != TERN_OK)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (x->flags & TERN_CONFIG_TEXT_NO_LINES)
        tern_diag_addf(x->d, "%s: %s", file, msg);
    else
        tern_diag_addf(x->d, "%s:%u: %s", file, line, msg);
    x->status = TERN_ECONFIG;
}

static void no_memory(expander *x, const char *file)
{
    if (x->status != TERN_OK)
        return;
    tern_diag_addf(x->d, "%s: out of memory", file);
    x->status = TERN_ENOMEM;
}

static void add_span(expander *x, const char *file, unsigned line)
{
    tern_config_text *t = x->t;
    if (t->n_spans && t->spans[t->n_spans - 1].out_line == x->out_line)
        t->n_spans--; /* the earlier span covers no line */
    if (t->n_spans == t->cap_spans) {
        size_t cap = t->cap_spans ? t->cap_spans * 2 : 8;
        tern_config_span *s = realloc(t->spans, cap * sizeof *s);
        if (!s) {
            no_memory(x, file ? file : x->label);
            return;
        }
        t->spans = s;
        t->cap_spans = cap;
    }
    t->spans[t->n_spans++] = (tern_config_span){x->out_line, line, file};
}

/* Keep a copy of `name` as long as the config lives; NULL when out of memory. */
static const char *keep_file(expander *x, const char *name)
{
    tern_config_text *t = x->t;
    char **f = realloc(t->files, (t->n_files + 1) * sizeof *f);
    if (!f)
        return NULL;
    t->files = f;
    size_t n = strlen(name) + 1;
    char *copy = malloc(n);
    if (!copy)
        return NULL;
    memcpy(copy, name, n);
    t->files[t->n_files++] = copy;
    return copy;
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_hex(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
static int is_name_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '*';
}
static int is_name_char(char c) { return is_name_start(c) || is_digit(c) || c == '-' || c == '_'; }

static size_t digits(const char *p, size_t i, size_t n)
{
    while (i < n && is_digit(p[i]))
        i++;
    return i;
}

/* The number tokens of libconfig's scanner at p[0..n): the length of the
 * longest match (0: none) and which. */
enum { NUM_INT, NUM_INT64, NUM_HEX, NUM_HEX64, NUM_FLOAT };

static size_t exponent(const char *p, size_t i, size_t n)
{
    if (i < n && (p[i] == 'e' || p[i] == 'E')) {
        size_t j = i + 1;
        if (j < n && (p[j] == '-' || p[j] == '+'))
            j++;
        if (j < n && is_digit(p[j]))
            return digits(p, j, n);
    }
    return i;
}

static size_t number_token(const char *p, size_t n, int *kind)
{
    size_t best = 0;
    size_t s = n > 0 && (p[0] == '-' || p[0] == '+') ? 1 : 0;
    /* {integer} [-+]?[0-9]+ and {integer64}, the same with L or LL */
    size_t e = digits(p, s, n);
    if (e > s) {
        best = e;
        *kind = NUM_INT;
        if (e < n && p[e] == 'L') {
            best = e + 1 + (e + 1 < n && p[e + 1] == 'L');
            *kind = NUM_INT64;
        }
        /* {float} [-+]?[0-9]+(\.[0-9]*)?[eE][-+]?[0-9]+ */
        size_t f = e < n && p[e] == '.' ? digits(p, e + 1, n) : e;
        size_t x = exponent(p, f, n);
        if (x > f && x > best) {
            best = x;
            *kind = NUM_FLOAT;
        }
    }
    /* {float} [-+]?([0-9]*)?\.[0-9]*([eE][-+]?[0-9]+)? */
    if (e < n && p[e] == '.') {
        size_t f = exponent(p, digits(p, e + 1, n), n);
        if (f > best) {
            best = f;
            *kind = NUM_FLOAT;
        }
    }
    /* {hex} 0[Xx][0-9A-Fa-f]+ and {hex64}, unsigned */
    if (n > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X') && is_hex(p[2])) {
        size_t h = 3;
        while (h < n && is_hex(p[h]))
            h++;
        int k = NUM_HEX;
        if (h < n && p[h] == 'L') {
            h += 1 + (h + 1 < n && p[h + 1] == 'L');
            k = NUM_HEX64;
        }
        if (h > best) {
            best = h;
            *kind = k;
        }
    }
    return best;
}

/* An integer token p[0..len) (NUL or a non-digit follows it): 1 when it
 * needs an L to keep its value in libconfig 1.5, 0 when not, -1 (with the
 * message) when no 64-bit integer holds it. */
static int integer_needs_l(expander *x, const char *file, unsigned line, const char *p,
                           size_t len, int kind)
{
    errno = 0;
    int wide;
    if (kind == NUM_INT || kind == NUM_INT64) {
        long long v = strtoll(p, NULL, 10);
        wide = v < INT32_MIN || v > INT32_MAX;
    } else {
        unsigned long long v = strtoull(p, NULL, 16);
        wide = v > UINT32_MAX; /* up to 32 bits: libconfig's bit pattern, as ever */
    }
    if (errno == ERANGE) {
        int shown = len > 60 ? 60 : (int)len;
        fail(x, file, line,
             "%.*s%s is out of range for an integer: give one from %lld to %lld%s", shown, p,
             len > 60 ? "..." : "", LLONG_MIN, LLONG_MAX,
             kind == NUM_HEX || kind == NUM_HEX64 ? " (0x0 to 0xFFFFFFFFFFFFFFFF in hex)" : "");
        return -1;
    }
    return wide && (kind == NUM_INT || kind == NUM_HEX);
}

/* `[ \t]*@include[ \t]+"` at p: its length, or 0. */
static size_t include_open(const char *p, size_t n)
{
    size_t i = 0;
    while (i < n && (p[i] == ' ' || p[i] == '\t'))
        i++;
    if (n - i < 8 || memcmp(p + i, "@include", 8) != 0)
        return 0;
    i += 8;
    size_t ws = i;
    while (i < n && (p[i] == ' ' || p[i] == '\t'))
        i++;
    return i > ws && i < n && p[i] == '"' ? i + 1 : 0;
}

static void scan(expander *x, const char *file, const char *span_file, const char *dir,
                 const char *p, size_t n, int depth);

/* The @include of `file`:`line` naming `name`: read it and scan it in. */
static void include(expander *x, const char *file, unsigned line, const char *dir,
                    const char *name, int depth)
{
    if (depth + 1 >= TERN_CONFIG_INCLUDE_DEPTH) {
        fail(x, file, line, "@include \"%s\": includes nest more than %d deep; does a file "
             "include itself?", name, TERN_CONFIG_INCLUDE_DEPTH);
        return;
    }
    if (++x->includes > TERN_CONFIG_INCLUDE_MAX) {
        fail(x, file, line, "@include \"%s\": more than %d @include in all; include fewer files",
             name, TERN_CONFIG_INCLUDE_MAX);
        return;
    }
    char *path = NULL;
    int relative = name[0] != '/';
    if (relative && dir &&
        asprintf(&path, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", name) < 0)
        path = NULL;
    else if ((!relative || !dir) && asprintf(&path, "%s", name) < 0)
        path = NULL;
    if (!path) {
        no_memory(x, file);
        return;
    }
    char *buf = NULL, why[TERN_REGULAR_WHY_MAX], resolved[4200] = "";
    size_t len = 0;
    if (strcmp(path, name) != 0)
        snprintf(resolved, sizeof resolved, " (%s)", path);
    if (tern_regular_read(path, TERN_CONFIG_FILE_MAX, &buf, &len, why, sizeof why) != 0) {
        int e = errno;
        const char *advice = e == ENOENT && relative
                                 ? "; an @include is taken from the folder of the file that "
                                   "holds it"
                             : e == EISDIR || e == EINVAL ? "; include a config file"
                                                          : "";
        if (e == ENOMEM)
            no_memory(x, file);
        else
            fail(x, file, line, "cannot include \"%s\"%s: %s%s", name, resolved, why, advice);
        free(path);
        return;
    }
    const char *kept = keep_file(x, path);
    if (!kept) {
        no_memory(x, file);
    } else {
        /* a relative @include inside it is taken from its folder */
        char *slash = strrchr(path, '/');
        const char *sub = NULL;
        if (slash == path)
            sub = "/";
        else if (slash) {
            *slash = '\0';
            sub = path;
        }
        scan(x, kept, kept, sub, buf, len, depth + 1);
    }
    free(buf);
    free(path);
}

static void flush(expander *x, const char *p, size_t from, size_t to)
{
    if (to > from)
        tern_text_put(&x->out, p + from, to - from);
}

/* Copy p[0..n) (the file `file`, or the string when span_file is NULL) to
 * the text, following @include from `dir` (NULL: the working directory). */
static void scan(expander *x, const char *file, const char *span_file, const char *dir,
                 const char *p, size_t n, int depth)
{
    enum { CODE, STRING, BLOCK_COMMENT, LINE_COMMENT } st = CODE;
    unsigned line = 1, opened = 1; /* opened: where the string or comment began */
    size_t line_start = 0, mark = 0, i = 0;
    int bol = 1;
    add_span(x, span_file, 1);
    while (i < n && x->status == TERN_OK) {
        char c = p[i];
        if (c != '\n' && i - line_start >= TERN_CONFIG_LINE_MAX) {
            char lim[32];
            fail(x, file, line, "the line is longer than %u bytes (%s); break it up (strings "
                 "may continue on the next line: \"ab\" \"cd\" reads as \"abcd\")",
                 TERN_CONFIG_LINE_MAX,
                 tern_regular_size_text(TERN_CONFIG_LINE_MAX, lim, sizeof lim));
            break;
        }
        if (c == '\0') {
            fail(x, file, line, "a NUL byte at column %zu; a config file is text: remove it",
                 i - line_start + 1);
            break;
        }
        if (c == '\n') {
            line++;
            x->out_line++;
            line_start = ++i;
            bol = 1;
            if (st == LINE_COMMENT)
                st = CODE;
            continue;
        }
        size_t k;
        switch (st) {
        case CODE:
            if (bol && (k = include_open(p + i, n - i)) > 0) {
                /* the name: libconfig unescapes \\ and \" only */
                tern_text_buf name = {0};
                size_t j = i + k;
                for (; j < n && p[j] != '"' && p[j] != '\n' && p[j] != '\0'; j++) {
                    if (p[j] == '\\' && j + 1 < n && (p[j + 1] == '\\' || p[j + 1] == '"'))
                        j++;
                    else if (p[j] == '\\')
                        break;
                    tern_text_put(&name, p + j, 1);
                }
                if (j >= n || p[j] != '"') {
                    fail(x, file, line, j < n && p[j] == '\\'
                         ? "in an @include name a backslash may only escape \\ or \""
                         : "the @include name has no closing \"; write @include \"FILE\"");
                } else if (name.oom) {
                    no_memory(x, file);
                } else if (!name.n || !name.p[0]) {
                    fail(x, file, line, "@include \"\": give the name of a config file");
                } else if (include_open(p + j + 1, n - j - 1)) {
                    fail(x, file, line, "a second @include on one line; give each a line of "
                         "its own");
                } else {
                    flush(x, p, mark, i);
                    include(x, file, line, dir, name.p, depth);
                    /* the rest of this line, on a line of its own */
                    if (x->out.n && x->out.p[x->out.n - 1] != '\n') {
                        tern_text_puts(&x->out, "\n");
                        x->out_line++;
                    }
                    add_span(x, span_file, line);
                    mark = i = j + 1;
                    bol = 0;
                    if (x->out.n > TERN_CONFIG_FILE_MAX) {
                        char lim[32];
                        fail(x, file, line, "with its @include files the config is over %s; "
                             "include less",
                             tern_regular_size_text(TERN_CONFIG_FILE_MAX, lim, sizeof lim));
                    }
                }
                free(name.p);
                continue;
            }
            bol = 0;
            if (c == '"') {
                st = STRING;
                opened = line;
            } else if (c == '/' && i + 1 < n && p[i + 1] == '*') {
                st = BLOCK_COMMENT;
                opened = line;
                i++;
            } else if (c == '#' || (c == '/' && i + 1 < n && p[i + 1] == '/')) {
                st = LINE_COMMENT;
            } else if (is_name_start(c)) {
                while (i + 1 < n && is_name_char(p[i + 1]))
                    i++;
            } else {
                int kind = NUM_FLOAT;
                k = number_token(p + i, n - i, &kind);
                if (k > 0 && kind != NUM_FLOAT) {
                    int l = integer_needs_l(x, file, line, p + i, k, kind);
                    if (l < 0)
                        break;
                    if (l) {
                        flush(x, p, mark, i + k);
                        tern_text_puts(&x->out, "L");
                        mark = i + k;
                    }
                }
                if (k > 0)
                    i += k - 1;
            }
            i++;
            break;
        case STRING:
            if (c == '\\' && i + 1 < n && (p[i + 1] == '\\' || p[i + 1] == '"'))
                i++;
            else if (c == '"')
                st = CODE;
            i++;
            break;
        case BLOCK_COMMENT:
            if (c == '*' && i + 1 < n && p[i + 1] == '/') {
                st = CODE;
                i++;
            }
            i++;
            break;
        case LINE_COMMENT:
            i++;
            break;
        }
    }
    if (x->status != TERN_OK)
        return;
    flush(x, p, mark, n);
    if (depth > 0 && (st == STRING || st == BLOCK_COMMENT))
        fail(x, file, opened, "the file ends inside the %s begun on this line; close it",
             st == STRING ? "string" : "/* comment");
    else if (depth > 0 && x->out.n && x->out.p[x->out.n - 1] != '\n') {
        tern_text_puts(&x->out, "\n"); /* the includer goes on on a line of its own */
        x->out_line++;
    }
    if (x->out.oom)
        no_memory(x, file);
}

int tern_config_text_load(tern_config_text *t, const char *path, const char *text,
                          const char *label, unsigned flags, tern_diag *d)
{
    memset(t, 0, sizeof *t);
    expander x = {.t = t, .out_line = 1, .label = text ? label : path, .flags = flags, .d = d};
    char *buf = NULL;
    size_t len = 0;
    const char *file = NULL, *dir = NULL;
    char *dircopy = NULL;
    if (text) {
        buf = (char *)text;
        len = strlen(text);
    } else {
        char why[TERN_REGULAR_WHY_MAX];
        if (tern_regular_read(path, TERN_CONFIG_FILE_MAX, &buf, &len, why, sizeof why) != 0) {
            int e = errno;
            if (e == ENOMEM) {
                tern_diag_addf(d, "%s: out of memory", path);
                return TERN_ENOMEM;
            }
            tern_diag_addf(d, "%s: cannot read config file: %s%s", path, why,
                           e == EISDIR || e == EINVAL ? "; give a config file"
                           : e == EFBIG               ? "; is it a config file?"
                                                      : "");
            return TERN_ECONFIG;
        }
        file = keep_file(&x, path);
        const char *slash = strrchr(path, '/');
        if (file && slash) {
            size_t dl = slash == path ? 1 : (size_t)(slash - path);
            dircopy = malloc(dl + 1);
            if (dircopy) {
                memcpy(dircopy, path, dl);
                dircopy[dl] = '\0';
            }
            dir = dircopy;
        }
        if (!file || (slash && !dircopy))
            no_memory(&x, path);
    }
    if (x.status == TERN_OK)
        scan(&x, text ? label : path, file, dir, buf, len, 0);
    if (!text)
        free(buf);
    free(dircopy);
    if (x.status == TERN_OK && x.out.n > TERN_CONFIG_FILE_MAX) {
        char lim[32];
        tern_diag_addf(d, "%s: with its @include files the config is over %s; include less",
                       x.label, tern_regular_size_text(TERN_CONFIG_FILE_MAX, lim, sizeof lim));
        x.status = TERN_ECONFIG;
    }
    if (x.status == TERN_OK && !x.out.p)
        tern_text_put(&x.out, "", 0); /* an empty config is "" */
    if (x.status == TERN_OK && x.out.oom)
        no_memory(&x, x.label);
    if (x.status != TERN_OK) {
        free(x.out.p);
        tern_config_text_free_text(t);
        tern_config_text_free_files(t->files, t->n_files);
        memset(t, 0, sizeof *t);
        return x.status;
    }
    t->text = x.out.p;
    t->len = x.out.n;
    return TERN_OK;
}

void tern_config_text_where(const tern_config_text *t, unsigned out_line, const char **file,
                            unsigned *line)
{
    *file = NULL;
    *line = out_line;
    size_t lo = 0, hi = t->n_spans;
    while (hi - lo > 1) { /* the last span starting at or before out_line */
        size_t mid = lo + (hi - lo) / 2;
        if (t->spans[mid].out_line <= out_line)
            lo = mid;
        else
            hi = mid;
    }
    if (lo < t->n_spans && t->spans[lo].out_line <= out_line) {
        *file = t->spans[lo].file;
        *line = t->spans[lo].line + (out_line - t->spans[lo].out_line);
    }
}

void tern_config_text_free_text(tern_config_text *t)
{
    free(t->text);
    free(t->spans);
    t->text = NULL;
    t->spans = NULL;
    t->len = t->n_spans = t->cap_spans = 0;
}

void tern_config_text_free_files(char **files, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(files[i]);
    free(files);
}
