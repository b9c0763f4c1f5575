/* lexer.c: template source to tokens (ast.h), with the whitespace control
 * transformers' environment applies: `{%-`/`-%}` markers strip all
 * whitespace on their side, trim_blocks drops the one newline after a block
 * or comment tag, lstrip_blocks drops the blanks between a line's start and
 * a block or comment tag (`{%+` keeps them). */
#include "jinja/ast.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fail.h"

typedef struct lexer {
    jinja_arena *a;
    const char *src;
    size_t len, pos;
    int line, col; /* of pos */
    jinja_token *toks;
    size_t n, cap;
    char *err;
    size_t errn;
} lexer;

/* Move pos to `to`, counting lines and columns on the way. */
static void advance(lexer *L, size_t to)
{
    for (; L->pos < to; L->pos++) {
        if (L->src[L->pos] == '\n') {
            L->line++;
            L->col = 1;
        } else if (((unsigned char)L->src[L->pos] & 0xc0) != 0x80) {
            L->col++; /* columns count characters, not bytes */
        }
    }
}

static jinja_token *push(lexer *L, jinja_tk kind)
{
    if (L->n == L->cap) {
        size_t cap = L->cap ? L->cap * 2 : 256;
        jinja_token *p = jinja_arena_alloc(L->a, cap * sizeof *p);
        if (!p)
            return NULL;
        if (L->n)
            memcpy(p, L->toks, L->n * sizeof *p);
        L->toks = p;
        L->cap = cap;
    }
    jinja_token *t = &L->toks[L->n++];
    memset(t, 0, sizeof *t);
    t->kind = kind;
    t->line = L->line;
    t->col = L->col;
    return t;
}

static int oom(lexer *L)
{
    return tf_fail(L->err, L->errn, "template: out of memory");
}

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static int is_name_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* The index of the next tag start at or after i, or len. */
static size_t next_tag(const lexer *L, size_t i)
{
    for (; i + 1 < L->len; i++)
        if (L->src[i] == '{' && (L->src[i + 1] == '{' || L->src[i + 1] == '%' || L->src[i + 1] == '#'))
            return i;
    return L->len;
}

/* A string literal at pos (its quote), decoded Python-style. */
static int lex_string(lexer *L)
{
    const char *s = L->src;
    char q = s[L->pos];
    size_t i = L->pos + 1;
    jinja_token *t = push(L, TK_STRING);
    if (!t)
        return oom(L);
    size_t end = i;
    while (end < L->len && s[end] != q) {
        if (s[end] == '\\' && end + 1 < L->len)
            end++;
        end++;
    }
    if (end >= L->len)
        return tf_fail(L->err, L->errn, "template %d:%d: a string is not closed; add the closing %c",
                       t->line, t->col, q);
    char *v = jinja_arena_alloc(L->a, end - i + 1);
    if (!v)
        return oom(L);
    size_t n = 0;
    for (; i < end; i++) {
        char c = s[i];
        if (c == '\\') {
            char d = s[++i];
            switch (d) {
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            case 'r': c = '\r'; break;
            case '\\': case '\'': case '"': c = d; break;
            case '\n': continue; /* a line continuation */
            default: v[n++] = '\\'; c = d; /* kept as written, as Python does */
            }
        }
        v[n++] = c;
    }
    v[n] = '\0';
    t->s = v;
    t->n = n;
    advance(L, end + 1);
    return 0;
}

static int lex_number(lexer *L)
{
    const char *s = L->src;
    size_t i = L->pos;
    int is_float = 0;
    while (i < L->len && (is_digit(s[i]) || s[i] == '_'))
        i++;
    if (i + 1 < L->len && s[i] == '.' && is_digit(s[i + 1])) {
        is_float = 1;
        for (i++; i < L->len && (is_digit(s[i]) || s[i] == '_');)
            i++;
    }
    if (i < L->len && (s[i] == 'e' || s[i] == 'E')) {
        size_t k = i + 1;
        if (k < L->len && (s[k] == '+' || s[k] == '-'))
            k++;
        if (k < L->len && is_digit(s[k])) {
            is_float = 1;
            for (i = k; i < L->len && is_digit(s[i]);)
                i++;
        }
    }
    char buf[64];
    size_t n = 0;
    for (size_t k = L->pos; k < i && n + 1 < sizeof buf; k++)
        if (s[k] != '_')
            buf[n++] = s[k];
    buf[n] = '\0';
    jinja_token *t = push(L, is_float ? TK_FLOAT : TK_INT);
    if (!t)
        return oom(L);
    if (i - L->pos >= sizeof buf)
        return tf_fail(L->err, L->errn, "template %d:%d: the number is too long", t->line, t->col);
    if (is_float) {
        t->f = strtod(buf, NULL);
    } else {
        char *e;
        errno = 0;
        t->i = strtoll(buf, &e, 10);
        if (errno)
            return tf_fail(L->err, L->errn,
                           "template %d:%d: the integer %s does not fit in 64 bits", t->line,
                           t->col, buf);
    }
    advance(L, i);
    return 0;
}

/* The tokens of a tag's inside, from pos up to and including its end
 * ("}}" or "%}", with an optional -/+ marker before). *strip: the end had
 * '-'; *keep_nl: it had '+'. */
static int lex_tag(lexer *L, char close, int *strip, int *keep_nl)
{
    static const char *ops[] = {"**", "//", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%",
                                "~", "<", ">", "(", ")", "[", "]", "{", "}", ",", ".", ":",
                                "|", "=", NULL};
    const char *s = L->src;
    int open_line = L->line, open_col = L->col - 2;
    int end_line = L->line, end_col = L->col;
    int depth = 0; /* open brackets: a '}' inside {{ {'a': 1} }} is not the end */
    *strip = *keep_nl = 0;
    for (;;) {
        while (L->pos < L->len && is_space(s[L->pos]))
            advance(L, L->pos + 1);
        size_t i = L->pos;
        end_line = L->line;
        end_col = L->col;
        if (i >= L->len)
            return tf_fail(L->err, L->errn, "template %d:%d: the tag is not closed; add %s",
                           open_line, open_col, close == '}' ? "}}" : "%}");
        if (depth == 0 && (s[i] == '-' || s[i] == '+') && i + 2 < L->len && s[i + 1] == close &&
            s[i + 2] == '}') {
            *strip = s[i] == '-';
            *keep_nl = s[i] == '+';
            advance(L, i + 3);
            break;
        }
        if (depth == 0 && s[i] == close && i + 1 < L->len && s[i + 1] == '}') {
            advance(L, i + 2);
            break;
        }
        if (s[i] == '\'' || s[i] == '"') {
            if (lex_string(L) != 0)
                return -1;
            continue;
        }
        if (is_digit(s[i])) {
            if (lex_number(L) != 0)
                return -1;
            continue;
        }
        if (is_name_start(s[i])) {
            size_t k = i;
            while (k < L->len && (is_name_start(s[k]) || is_digit(s[k])))
                k++;
            jinja_token *t = push(L, TK_NAME);
            if (!t)
                return oom(L);
            t->s = s + i;
            t->n = k - i;
            advance(L, k);
            continue;
        }
        const char *op = NULL;
        for (int k = 0; ops[k]; k++) {
            size_t ol = strlen(ops[k]);
            if (i + ol <= L->len && memcmp(s + i, ops[k], ol) == 0) {
                op = ops[k];
                break;
            }
        }
        if (!op)
            return tf_fail(L->err, L->errn,
                           "template %d:%d: unexpected character '%c' in a tag; remove it or quote it",
                           L->line, L->col, s[i]);
        if (op[0] == '(' || op[0] == '[' || op[0] == '{')
            depth++;
        else if ((op[0] == ')' || op[0] == ']' || op[0] == '}') && depth > 0)
            depth--;
        jinja_token *t = push(L, TK_OP);
        if (!t)
            return oom(L);
        t->s = op;
        t->n = strlen(op);
        advance(L, i + t->n);
    }
    jinja_token *t = push(L, close == '}' ? TK_VAR_END : TK_BLOCK_END);
    if (!t)
        return oom(L);
    t->line = end_line;
    t->col = end_col;
    return 0;
}

int jinja_lex(jinja_arena *a, const char *src, size_t len, jinja_token **toks, size_t *ntoks,
              char *err, size_t errn)
{
    lexer L = {.a = a, .src = src, .len = len, .line = 1, .col = 1, .err = err, .errn = errn};
    int after = 0; /* how the last tag ended: 0 text or {{ }}, 1 a block/comment (trim_blocks), 2 a '-' */
    for (;;) {
        size_t j = next_tag(&L, L.pos);
        size_t from = L.pos, to = j;
        if (after == 2) {
            while (from < to && is_space(src[from]))
                from++;
        } else if (after == 1) {
            if (from < to && src[from] == '\n')
                from++;
            else if (from + 1 < to && src[from] == '\r' && src[from + 1] == '\n')
                from += 2;
        }
        if (j < len) {
            char m = j + 2 < len ? src[j + 2] : 0;
            if (m == '-') {
                while (to > from && is_space(src[to - 1]))
                    to--;
            } else if (src[j + 1] != '{' && m != '+') {
                size_t k = to; /* lstrip_blocks */
                while (k > from && (src[k - 1] == ' ' || src[k - 1] == '\t'))
                    k--;
                if (k == 0 || src[k - 1] == '\n')
                    to = k;
            }
        }
        if (to > from) {
            advance(&L, from);
            jinja_token *t = push(&L, TK_TEXT);
            if (!t)
                return oom(&L);
            t->s = src + from;
            t->n = to - from;
        }
        advance(&L, j);
        if (j >= len)
            break;
        char kind = src[j + 1];
        int tag_line = L.line, tag_col = L.col;
        advance(&L, j + 2);
        if (L.pos < len && (src[L.pos] == '-' || src[L.pos] == '+'))
            advance(&L, L.pos + 1);
        if (kind == '#') {
            const char *e = NULL;
            for (size_t k = L.pos; k + 1 < len; k++)
                if (src[k] == '#' && src[k + 1] == '}') {
                    e = src + k;
                    break;
                }
            if (!e)
                return tf_fail(err, errn, "template %d:%d: the comment is not closed; add #}",
                               tag_line, tag_col);
            size_t at = (size_t)(e - src);
            after = at > L.pos && src[at - 1] == '-' ? 2 : 1;
            advance(&L, at + 2);
            continue;
        }
        jinja_token *t = push(&L, kind == '{' ? TK_VAR_BEGIN : TK_BLOCK_BEGIN);
        if (!t)
            return oom(&L);
        t->line = tag_line;
        t->col = tag_col;
        int strip, keep_nl;
        if (lex_tag(&L, kind == '{' ? '}' : '%', &strip, &keep_nl) != 0)
            return -1;
        after = strip ? 2 : (kind == '%' && !keep_nl) ? 1 : 0;
    }
    jinja_token *t = push(&L, TK_EOF);
    if (!t)
        return oom(&L);
    *toks = L.toks;
    *ntoks = L.n;
    return 0;
}
