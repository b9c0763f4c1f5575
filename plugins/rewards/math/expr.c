/* expr.c: the answer grammar and the evaluation of its trees (see expr.h). */
#include "expr.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ascii.h"

/* ---- Parser state ------------------------------------------------------------ */

typedef struct parser {
    math_ws *ws;
    const math_tok *t;
    size_t n, i;
    int nest; /* brackets and unary signs open */
    int in_abs; /* inside |...|: a '|' closes rather than multiplies */
    const char *why;
} parser;

static const math_tok *peek_at(const parser *p, size_t k)
{
    return p->i + k < p->n ? &p->t[p->i + k] : NULL;
}
static const math_tok *peek(const parser *p) { return peek_at(p, 0); }
static int is_char(const math_tok *t, char c)
{
    return t && t->kind == TK_CHAR && t->c == (uint8_t)c;
}
static int is_cmd(const math_tok *t, math_cmd c)
{
    return t && t->kind == TK_CMD && t->c == (uint8_t)c;
}
static int is_digit(const math_tok *t)
{
    return t && t->kind == TK_CHAR && math_is_digit((char)t->c);
}
static int spaced(const math_tok *t)
{
    return t && t->kind == TK_CHAR && (t->sub & MATH_TOK_SPACED);
}
static int is_letter(const math_tok *t)
{
    return t && t->kind == TK_CHAR && math_is_alpha((char)t->c);
}

static int fail(parser *p, const char *why)
{
    if (!p->why)
        p->why = why;
    return -1;
}

/* ---- Nodes ----------------------------------------------------------------------- */

static int is_leaf(uint8_t op)
{
    return op == N_NUM || op == N_VAR || op == N_PI || op == N_E || op == N_INF;
}

static int is_collection(uint8_t op) { return op >= N_TUPLE; }

static int new_node(parser *p, uint8_t op, uint8_t sub, int a, int b)
{
    math_ws *ws = p->ws;
    if (ws->nnode >= ws->node_cap)
        return fail(p, "too complex");
    math_node nd = {.op = op, .sub = sub, .depth = 1, .a = a, .b = b, .next = -1};
    if (!is_leaf(op) && !is_collection(op)) {
        /* arithmetic: children are scalars */
        int kids[2] = {a, b};
        for (int k = 0; k < 2; k++) {
            if (kids[k] < 0)
                continue;
            const math_node *c = &ws->node[kids[k]];
            if (c->flags & F_COLL)
                return fail(p, "tuple or relation inside arithmetic");
            nd.flags |= c->flags & (F_VAR | F_PM);
            if (c->depth + 1 > nd.depth)
                nd.depth = (uint16_t)(c->depth + 1);
        }
    } else if (op == N_REL || op == N_CHAIN) {
        int kids[2] = {a, b};
        nd.flags = F_COLL;
        for (int k = 0; k < 2; k++) {
            const math_node *c = &ws->node[kids[k]];
            nd.flags |= c->flags & (F_VAR | F_PM);
            if (c->depth + 1 > nd.depth)
                nd.depth = (uint16_t)(c->depth + 1);
        }
    }
    if (op == N_VAR)
        nd.flags |= F_VAR;
    if (op == N_PM || op == N_MP || op == N_PMU || op == N_MPU)
        nd.flags |= F_PM;
    if (nd.depth > MATH_MAX_DEPTH)
        return fail(p, "too deep");
    ws->node[ws->nnode] = nd;
    return (int)ws->nnode++;
}

static int binary(parser *p, uint8_t op, int a, int b)
{
    if (a < 0 || b < 0)
        return -1;
    return new_node(p, op, 0, a, b);
}

/* A collection of the nodes linked from `first`. */
static int collection(parser *p, uint8_t op, uint8_t sub, int first, size_t count)
{
    if (count > 0xFFFF)
        return fail(p, "too many items");
    int id = new_node(p, op, sub, first, -1);
    if (id < 0)
        return -1;
    math_node *nd = &p->ws->node[id];
    nd->flags = F_COLL;
    nd->count = (uint16_t)count;
    for (int c = first; c >= 0; c = p->ws->node[c].next) {
        const math_node *k = &p->ws->node[c];
        nd->flags |= k->flags & (F_VAR | F_PM);
        if (k->depth + 1 > nd->depth)
            nd->depth = (uint16_t)(k->depth + 1);
    }
    if (nd->depth > MATH_MAX_DEPTH)
        return fail(p, "too deep");
    return id;
}

/* Appends `id` to the list first..*last. */
static void link_item(parser *p, int *first, int *last, int id)
{
    if (*last < 0)
        *first = id;
    else
        p->ws->node[*last].next = id;
    *last = id;
}

/* ---- Numbers ------------------------------------------------------------------------ */

/* The digits of a literal, without separators, as read by parse_number. */
typedef struct digits {
    char sig[48]; /* the first significant digits */
    size_t nsig;
    long dropped; /* significant digits past sig[], which scale it up */
    math_u128 mant; /* all the digits, while they fit */
    int overflow;
    size_t frac_len; /* digits after the point */
} digits;

static void add_digit(digits *d, char c)
{
    unsigned v = (unsigned)(c - '0');
    if (d->nsig == 0 && v == 0) {
        /* leading zeros carry no value */
    } else if (d->nsig < sizeof d->sig - 1) {
        d->sig[d->nsig++] = c;
    } else {
        d->dropped++;
    }
    if (!d->overflow) {
        math_u128 m = d->mant;
        if (m > ((~(math_u128)0) - v) / 10)
            d->overflow = 1;
        else
            d->mant = m * 10 + v;
    }
}

static size_t digit_run(const parser *p, size_t k)
{
    size_t j = 0;
    while (is_digit(peek_at(p, k + j)))
        j++;
    return j;
}

/* Reads the literal at p->i into a N_NUM node (see expr.h for the forms). */
static int parse_literal(parser *p, int *is_int)
{
    digits d = {0};
    size_t n_int = digit_run(p, 0), start = p->i;
    for (size_t k = 0; k < n_int; k++)
        add_digit(&d, (char)p->t[p->i + k].c);
    p->i += n_int;
    /* Strict thousands: "1,234" and "12,345,678", never "1,23" or "1,2345";
     * and not a bracket's whole content: "(12,102)" is an interval. */
    size_t end = p->i;
    while (end + 3 < p->n && is_char(&p->t[end], ',') && !spaced(&p->t[end]) &&
           is_digit(&p->t[end + 1]) && is_digit(&p->t[end + 2]) && is_digit(&p->t[end + 3]) &&
           !spaced(&p->t[end + 1]) && (end + 4 == p->n || !is_digit(&p->t[end + 4])))
        end += 4;
    int bracketed = end > p->i && start > 0 &&
                    (is_char(&p->t[start - 1], '(') || is_char(&p->t[start - 1], '[')) &&
                    end < p->n && (is_char(&p->t[end], ')') || is_char(&p->t[end], ']'));
    if (n_int >= 1 && n_int <= 3 && !bracketed) {
        /* "1, 000" (a space after the comma) is two numbers */
        while (is_char(peek(p), ',') && !spaced(peek(p)) && digit_run(p, 1) == 3 &&
               !spaced(peek_at(p, 1))) {
            for (size_t k = 1; k <= 3; k++)
                add_digit(&d, (char)p->t[p->i + k].c);
            p->i += 4;
        }
    }
    *is_int = 1;
    if (is_char(peek(p), '.') && is_digit(peek_at(p, 1))) {
        size_t n_frac = digit_run(p, 1);
        for (size_t k = 1; k <= n_frac; k++)
            add_digit(&d, (char)p->t[p->i + k].c);
        d.frac_len = n_frac;
        p->i += 1 + n_frac;
        *is_int = 0;
    }
    if (n_int == 0 && d.frac_len == 0)
        return fail(p, "a lone '.'");
    long exp10 = 0;
    const math_tok *e = peek(p);
    if ((is_char(e, 'e') || is_char(e, 'E')) && !spaced(e)) {
        size_t k = 1;
        int neg = 0;
        if ((is_char(peek_at(p, 1), '-') || is_char(peek_at(p, 1), '+')) &&
            !spaced(peek_at(p, 1))) {
            neg = is_char(peek_at(p, 1), '-');
            k = 2;
        }
        size_t n_exp = spaced(peek_at(p, k)) ? 0 : digit_run(p, k);
        if (n_exp) {
            for (size_t j = 0; j < n_exp; j++) {
                if (exp10 < 100000) /* past this every value is 0 or infinite anyway */
                    exp10 = exp10 * 10 + (p->t[p->i + k + j].c - '0');
            }
            exp10 = neg ? -exp10 : exp10;
            p->i += k + n_exp;
            *is_int = 0;
        }
    }
    math_ws *ws = p->ws;
    if (ws->nnum >= ws->num_cap)
        return fail(p, "too complex");
    math_numlit *lit = &ws->num[ws->nnum];
    /* value = mant * 10^(exp10 - frac_len) */
    long scale = exp10 - (long)d.frac_len;
    lit->exact = 0;
    if (!d.overflow && d.mant == 0) {
        lit->q = math_rat_int(0);
        lit->exact = 1;
    } else if (!d.overflow && scale <= 0 && -scale <= 38) {
        lit->q = math_rat_make(0, d.mant, math_pow10_u128((unsigned)-scale));
        lit->exact = 1;
    } else if (!d.overflow && scale > 0 && scale <= 38) {
        math_u128 p10 = math_pow10_u128((unsigned)scale);
        if (d.mant <= (~(math_u128)0) / p10) {
            lit->q = math_rat_make(0, d.mant * p10, 1);
            lit->exact = 1;
        }
    }
    /* The float from the first significant digits, written without a
     * decimal point so that strtod reads it the same in every locale. */
    char buf[80];
    if (d.nsig == 0)
        lit->v = 0;
    else {
        snprintf(buf, sizeof buf, "%.*se%ld", (int)d.nsig, d.sig, d.dropped + scale);
        lit->v = strtod(buf, NULL);
    }
    return new_node(p, N_NUM, 0, (int)ws->nnum++, -1);
}

/* ---- Variables --------------------------------------------------------------------- */

static int intern(parser *p, const char *name)
{
    math_ws *ws = p->ws;
    for (size_t k = 0; k < ws->nvars; k++)
        if (strcmp(ws->var_name[k], name) == 0)
            return (int)k;
    if (ws->nvars >= MATH_MAX_VARS)
        return fail(p, "too many variables");
    snprintf(ws->var_name[ws->nvars], MATH_VAR_NAME, "%s", name);
    return (int)ws->nvars++;
}

static int append(parser *p, char *name, size_t *len, const char *s, size_t n)
{
    if (*len + n + 1 > MATH_VAR_NAME)
        return fail(p, "variable name too long");
    memcpy(name + *len, s, n);
    *len += n;
    name[*len] = '\0';
    return 0;
}

/* A variable whose base name is `base` (the letter or Greek name is
 * consumed): optional subscript "_1", "_{n+1}" is not allowed (letters and
 * digits only), optional primes. */
static int parse_var_rest(parser *p, const char *base)
{
    char name[MATH_VAR_NAME];
    size_t len = 0;
    name[0] = '\0';
    if (append(p, name, &len, base, strlen(base)) < 0)
        return -1;
    int plain = 1;
    if (is_char(peek(p), '_')) {
        p->i++;
        plain = 0;
        if (append(p, name, &len, "_", 1) < 0)
            return -1;
        const math_tok *t = peek(p);
        if (is_char(t, '{')) {
            p->i++;
            size_t start = len;
            while ((t = peek(p)) && (is_digit(t) || is_letter(t))) {
                char c = (char)t->c;
                if (append(p, name, &len, &c, 1) < 0)
                    return -1;
                p->i++;
            }
            if (!is_char(peek(p), '}') || len == start)
                return fail(p, "unsupported subscript");
            p->i++;
        } else if (is_digit(t) || is_letter(t)) {
            char c = (char)t->c;
            if (append(p, name, &len, &c, 1) < 0)
                return -1;
            p->i++;
        } else
            return fail(p, "unsupported subscript");
    }
    while (is_char(peek(p), '\'')) {
        p->i++;
        plain = 0;
        if (append(p, name, &len, "'", 1) < 0)
            return -1;
    }
    if (plain && strcmp(name, "e") == 0)
        return new_node(p, N_E, 0, -1, -1);
    int v = intern(p, name);
    return v < 0 ? -1 : new_node(p, N_VAR, 0, v, -1);
}

/* ---- The grammar ----------------------------------------------------------------------- */

static int parse_item(parser *p);
static int interval(parser *p, int lo, int lo_closed, int hi, int hi_closed);
static int parse_expr(parser *p);
static int parse_unary(parser *p);
static int parse_power(parser *p);

static int enter(parser *p)
{
    if (++p->nest > MATH_MAX_NEST)
        return fail(p, "nested too deep");
    return 0;
}

static int expect(parser *p, char c, const char *why)
{
    if (!is_char(peek(p), c))
        return fail(p, why);
    p->i++;
    return 0;
}

/* One level deeper, past the opening token at p->i: an expression up to
 * `close` (`unclosed` says it is missing), read inside |...| when in_abs:
 * its node, or -1. */
static int parse_inner(parser *p, int in_abs, char close, const char *unclosed)
{
    if (enter(p) < 0)
        return -1;
    p->i++;
    int saved_abs = p->in_abs;
    p->in_abs = in_abs;
    int e = parse_expr(p);
    p->in_abs = saved_abs;
    if (e < 0 || expect(p, close, unclosed) < 0)
        return -1;
    p->nest--;
    return e;
}

/* Tokens that start a factor multiplied by juxtaposition ("2x", "3\pi"). */
static int starts_factor(const parser *p, const math_tok *t)
{
    if (!t)
        return 0;
    if (t->kind == TK_CHAR)
        return math_is_alpha((char)t->c) || math_is_digit((char)t->c) || t->c == '(' ||
               t->c == '{' || t->c == '.' || (t->c == '|' && !p->in_abs);
    if (t->kind == TK_CMD)
        return t->c == CMD_FRAC || t->c == CMD_SQRT || t->c == CMD_BINOM || t->c == CMD_PI ||
               t->c == CMD_INF || t->c == CMD_FUNC || t->c == CMD_GREEK;
    return t->kind == TK_WORD || t->kind == TK_BAD;
}

/* Items separated by ',' (or ';'), none when `empty` (the closer comes next), outside
 * any |...| of the enclosing text: 0 with the first, linked, in *first (-1 for
 * none) and the count in *count, or -1. */
static int parse_list(parser *p, int empty, int *first, size_t *count)
{
    int last = -1;
    *first = -1;
    *count = 0;
    int saved_abs = p->in_abs;
    p->in_abs = 0;
    if (!empty) {
        for (;;) {
            int it = parse_item(p);
            if (it < 0)
                return -1;
            link_item(p, first, &last, it);
            (*count)++;
            if (!is_char(peek(p), ',') && !is_char(peek(p), ';')) /* "(1; 2)" */
                break;
            p->i++;
        }
    }
    p->in_abs = saved_abs;
    return 0;
}

/* A bracketed list of items up to `close1` or `close2`; the count in *count,
 * the closer in *closer. */
static int parse_items(parser *p, char close1, char close2, size_t *count, char *closer)
{
    int first;
    if (parse_list(p, is_char(peek(p), close1) || is_char(peek(p), close2), &first, count) < 0)
        return -1;
    const math_tok *t = peek(p);
    if (is_char(t, close1) || is_char(t, close2)) {
        *closer = (char)t->c;
        p->i++;
        return first;
    }
    return fail(p, t ? "unbalanced brackets" : "unclosed bracket");
}

/* The opening token at p->i and the items up to `close1` or `close2`, one
 * level deeper: the first item (the count in *count, the closer in *closer),
 * or -1, also when there is none (`empty` says so). */
static int parse_enclosed(parser *p, char close1, char close2, size_t *count, char *closer,
                          const char *empty)
{
    if (enter(p) < 0)
        return -1;
    p->i++;
    int first = parse_items(p, close1, close2, count, closer);
    p->nest--;
    if (p->why)
        return -1;
    if (*count == 0)
        return fail(p, empty);
    return first;
}

/* ( ... ) or [ ... ]: a group, a tuple or an interval. */
static int parse_bracket(parser *p)
{
    char open = (char)peek(p)->c, closer = 0;
    int matrix = (peek(p)->sub & MATH_TOK_MATRIX) != 0;
    size_t count;
    int first = parse_enclosed(p, ')', ']', &count, &closer, "empty brackets");
    if (first < 0)
        return -1;
    if (count == 1) {
        if ((open == '(') != (closer == ')'))
            return fail(p, "mismatched brackets");
        return first;
    }
    int t = collection(p, N_TUPLE, (uint8_t)((open == '[') | (closer == ']') << 1), first, count);
    if (t >= 0 && matrix)
        p->ws->node[t].flags |= F_MATRIX;
    return t;
}

/* ---- Matrix arithmetic ------------------------------------------------------------- */

/* The shape of matrix `id` (F_MATRIX): rows x cols, a column vector's rows
 * being its entries; 0 when the rows differ in length or hold collections. */
static int matrix_shape(const math_ws *ws, int id, size_t *rows, size_t *cols)
{
    const math_node *m = &ws->node[id];
    *rows = m->count;
    *cols = 0;
    for (int r = m->a; r >= 0; r = ws->node[r].next) {
        const math_node *row = &ws->node[r];
        size_t c = row->op == N_TUPLE && !(row->flags & F_MATRIX) ? row->count : 1;
        if (c == 1 && (row->flags & F_COLL))
            return 0;
        if (*cols && c != *cols)
            return 0;
        *cols = c;
        if (c > 1)
            for (int e = row->a; e >= 0; e = ws->node[e].next)
                if (ws->node[e].flags & F_COLL)
                    return 0;
    }
    return *rows > 0 && *cols > 0;
}

/* Entry (i, j) of a matrix of `cols` columns. */
static int matrix_entry(const math_ws *ws, int id, size_t i, size_t j, size_t cols)
{
    int r = ws->node[id].a;
    while (i--)
        r = ws->node[r].next;
    if (cols == 1)
        return r;
    int e = ws->node[r].a;
    while (j--)
        e = ws->node[e].next;
    return e;
}

/* A new rows x cols matrix whose entry (i, j) is entry[i * cols + j]. */
static int matrix_of(parser *p, const int *entry, size_t rows, size_t cols)
{
    int first = -1, last = -1;
    for (size_t i = 0; i < rows; i++) {
        int row = entry[i * cols];
        if (cols > 1) {
            int rf = -1, rl = -1;
            for (size_t j = 0; j < cols; j++)
                link_item(p, &rf, &rl, entry[i * cols + j]);
            if ((row = collection(p, N_TUPLE, 0, rf, cols)) < 0)
                return -1;
        }
        link_item(p, &first, &last, row);
    }
    int m = collection(p, N_TUPLE, 0, first, rows);
    if (m >= 0)
        p->ws->node[m].flags |= F_MATRIX;
    return m;
}

/* a op b when a or b is a matrix: A + B and A - B entry by entry (same
 * shape), A B the matrix product (A's columns are B's rows), k A and A k
 * each entry times the scalar k; anything else is refused. Without a
 * matrix, the plain binary node. */
#define MATH_MATRIX_ENTRIES 64
static int arith(parser *p, uint8_t op, int a, int b)
{
    if (a < 0 || b < 0)
        return -1;
    math_ws *ws = p->ws;
    int ma = (ws->node[a].flags & F_MATRIX) != 0, mb = (ws->node[b].flags & F_MATRIX) != 0;
    if (!ma && !mb)
        return binary(p, op, a, b);
    size_t ra = 0, ca = 0, rb = 0, cb = 0;
    if ((ma && !matrix_shape(ws, a, &ra, &ca)) || (mb && !matrix_shape(ws, b, &rb, &cb)))
        return fail(p, "a matrix of uneven rows in arithmetic");
    int entry[MATH_MATRIX_ENTRIES];
    if (ma && mb && (op == N_ADD || op == N_SUB)) {
        if (ra != rb || ca != cb)
            return fail(p, "matrices of different shapes added");
        if (ra * ca > MATH_MATRIX_ENTRIES)
            return fail(p, "too large a matrix");
        for (size_t i = 0; i < ra; i++)
            for (size_t j = 0; j < ca; j++)
                if ((entry[i * ca + j] = binary(p, op, matrix_entry(ws, a, i, j, ca),
                                                matrix_entry(ws, b, i, j, cb))) < 0)
                    return -1;
        return matrix_of(p, entry, ra, ca);
    }
    if (op != N_MUL)
        return fail(p, "a matrix in arithmetic other than +, - and products");
    if (ma && mb) {
        /* (A B)_ij = sum_k A_ik B_kj */
        if (ca != rb)
            return fail(p, "matrices whose shapes do not multiply");
        if (ra * cb > MATH_MATRIX_ENTRIES || ca > MATH_MATRIX_ENTRIES)
            return fail(p, "too large a matrix");
        for (size_t i = 0; i < ra; i++)
            for (size_t j = 0; j < cb; j++) {
                int sum = -1;
                for (size_t k = 0; k < ca; k++) {
                    int t = binary(p, N_MUL, matrix_entry(ws, a, i, k, ca),
                                   matrix_entry(ws, b, k, j, cb));
                    sum = sum < 0 ? t : binary(p, N_ADD, sum, t);
                    if (sum < 0)
                        return -1;
                }
                entry[i * cb + j] = sum;
            }
        return matrix_of(p, entry, ra, cb);
    }
    int m = ma ? a : b, k = ma ? b : a;
    size_t r = ma ? ra : rb, c = ma ? ca : cb;
    if (ws->node[k].flags & F_COLL)
        return fail(p, "a tuple times a matrix");
    if (r * c > MATH_MATRIX_ENTRIES)
        return fail(p, "too large a matrix");
    for (size_t i = 0; i < r; i++)
        for (size_t j = 0; j < c; j++)
            if ((entry[i * c + j] = binary(p, N_MUL, k, matrix_entry(ws, m, i, j, c))) < 0)
                return -1;
    return matrix_of(p, entry, r, c);
}

/* { ... }: a TeX group; with commas inside, a bare list. */
static int parse_brace(parser *p)
{
    char closer = 0;
    size_t count;
    int first = parse_enclosed(p, '}', '}', &count, &closer, "empty group");
    if (first < 0)
        return -1;
    return count == 1 ? first : collection(p, N_LIST, 0, first, count);
}

/* \{ ... \} */
static int parse_set(parser *p)
{
    if (enter(p) < 0)
        return -1;
    p->i++;
    int first;
    size_t count;
    if (parse_list(p, is_cmd(peek(p), CMD_SETR), &first, &count) < 0)
        return -1;
    if (!is_cmd(peek(p), CMD_SETR))
        return fail(p, "unclosed set");
    p->i++;
    p->nest--;
    return collection(p, N_SET, 0, first, count);
}

/* A TeX argument: {group}, (group) in plain text, or one token ("\frac12",
 * "\frac 1 2"). */
static int parse_arg(parser *p)
{
    if (peek(p) && peek(p)->kind == TK_SPACE)
        p->i++;
    const math_tok *t = peek(p);
    if (is_char(t, '{'))
        return parse_inner(p, 0, '}', "unclosed group");
    if (is_char(t, '('))
        return parse_bracket(p);
    if (is_digit(t)) {
        /* one digit: \frac12 is 1/2 */
        if (p->ws->nnum >= p->ws->num_cap)
            return fail(p, "too complex");
        math_numlit *lit = &p->ws->num[p->ws->nnum];
        lit->q = math_rat_int(t->c - '0');
        lit->exact = 1;
        lit->v = t->c - '0';
        p->i++;
        return new_node(p, N_NUM, 0, (int)p->ws->nnum++, -1);
    }
    if (is_letter(t)) {
        char base[2] = {(char)t->c, 0};
        p->i++;
        return parse_var_rest(p, base);
    }
    if (is_cmd(t, CMD_PI) || is_cmd(t, CMD_GREEK) || is_cmd(t, CMD_INF)) {
        p->i++;
        if (t->c == CMD_PI)
            return new_node(p, N_PI, 0, -1, -1);
        if (t->c == CMD_INF)
            return new_node(p, N_INF, 0, -1, -1);
        return parse_var_rest(p, math_greek_name(t->sub));
    }
    return fail(p, "missing argument");
}

/* Does an integer TeX argument start at token k: "{12}" or a digit? Returns
 * the tokens it spans, 0 if not. */
static size_t int_arg_at(const parser *p, size_t k)
{
    if (is_digit(peek_at(p, k)))
        return 1;
    if (!is_char(peek_at(p, k), '{'))
        return 0;
    size_t n = digit_run(p, k + 1);
    return n && is_char(peek_at(p, k + 1 + n), '}') ? n + 2 : 0;
}

static int parse_number(parser *p)
{
    int is_int;
    int lit = parse_literal(p, &is_int);
    if (lit < 0)
        return -1;
    if (!is_int)
        goto done;
    /* 3\frac{1}{2} */
    if (is_cmd(peek(p), CMD_FRAC)) {
        size_t a = int_arg_at(p, 1), b = a ? int_arg_at(p, 1 + a) : 0;
        if (a && b) {
            p->i++;
            int num = parse_arg(p), den = num < 0 ? -1 : parse_arg(p);
            return binary(p, N_ADD, lit, binary(p, N_DIV, num, den));
        }
    }
    /* 3 1/2 */
    if (peek(p) && peek(p)->kind == TK_SPACE) {
        size_t a = digit_run(p, 1),
               b = a && is_char(peek_at(p, 1 + a), '/') ? digit_run(p, 2 + a) : 0;
        const math_tok *after = peek_at(p, 2 + a + b);
        if (a && b && !is_char(after, '.') && !is_char(after, '^') && !is_char(after, ',')) {
            p->i++;
            int is_int2;
            int num = parse_literal(p, &is_int2);
            if (num < 0 || expect(p, '/', "bad mixed number") < 0)
                return -1;
            int den = parse_literal(p, &is_int2);
            return binary(p, N_ADD, lit, binary(p, N_DIV, num, den));
        }
    }
done:
    if (peek(p) && peek(p)->kind == TK_SPACE)
        return fail(p, "numbers apart with a space");
    return lit;
}

static int parse_function(parser *p)
{
    unsigned fn = peek(p)->sub;
    p->i++;
    if (enter(p) < 0) /* \sin\sin\sin...x */
        return -1;
    int power = -1, base = -1;
    for (int round = 0; round < 2; round++) {
        if (is_char(peek(p), '^') && power < 0) {
            p->i++;
            /* \sin^{-1} is arcsin */
            size_t skip = 0;
            if (is_char(peek(p), '{') && is_char(peek_at(p, 1), '-') &&
                is_char(peek_at(p, 2), '1') && is_char(peek_at(p, 3), '}'))
                skip = 4;
            else if (is_char(peek(p), '-') && is_char(peek_at(p, 1), '1') &&
                     !is_digit(peek_at(p, 2)))
                skip = 2;
            if (skip && (fn == FN_SIN || fn == FN_COS || fn == FN_TAN)) {
                p->i += skip;
                fn = fn == FN_SIN ? FN_ASIN : fn == FN_COS ? FN_ACOS : FN_ATAN;
                continue;
            }
            power = is_char(peek(p), '{') ? parse_arg(p) : parse_unary(p);
            if (power < 0)
                return -1;
        } else if (is_char(peek(p), '_') && fn == FN_LOG && base < 0) {
            p->i++;
            base = parse_arg(p);
            if (base < 0)
                return -1;
        }
    }
    int arg;
    if (peek(p) && peek(p)->kind == TK_SPACE) /* "\log_2 8" */
        p->i++;
    if (is_char(peek(p), '(') || is_char(peek(p), '{')) {
        arg = is_char(peek(p), '(') ? parse_bracket(p) : parse_arg(p);
    } else {
        /* \sin 2x is sin(2x): the factors up to the next operator */
        arg = parse_power(p);
        while (arg >= 0 && starts_factor(p, peek(p)) && !is_cmd(peek(p), CMD_FUNC) &&
               !is_digit(peek(p)))
            arg = binary(p, N_MUL, arg, parse_power(p));
    }
    if (arg < 0)
        return -1;
    p->nest--;
    int f =
        base >= 0 ? new_node(p, N_LOGB, 0, base, arg) : new_node(p, N_FUNC, (uint8_t)fn, arg, -1);
    return power >= 0 ? binary(p, N_POW, f, power) : f;
}

static int parse_primary(parser *p)
{
    const math_tok *t = peek(p);
    if (!t)
        return fail(p, "incomplete expression");
    switch (t->kind) {
    case TK_WORD: return fail(p, "words");
    case TK_BAD: return fail(p, "unsupported syntax");
    case TK_SPACE: return fail(p, "numbers apart with a space");
    case TK_CMD:
        switch ((math_cmd)t->c) {
        case CMD_PI: p->i++; return new_node(p, N_PI, 0, -1, -1);
        case CMD_INF: p->i++; return new_node(p, N_INF, 0, -1, -1);
        case CMD_GREEK: p->i++; return parse_var_rest(p, math_greek_name(t->sub));
        case CMD_FUNC: return parse_function(p);
        case CMD_SETL: return parse_set(p);
        case CMD_EMPTYSET: p->i++; return collection(p, N_SET, 0, -1, 0);
        case CMD_REALS: p->i++; return interval(p, -1, 0, -1, 0);
        case CMD_FRAC: {
            p->i++;
            int num = parse_arg(p);
            return binary(p, N_DIV, num, num < 0 ? -1 : parse_arg(p));
        }
        case CMD_BINOM: {
            p->i++;
            int n = parse_arg(p);
            return binary(p, N_BINOM, n, n < 0 ? -1 : parse_arg(p));
        }
        case CMD_SQRT: {
            p->i++;
            int index = -1;
            if (is_char(peek(p), '[')) {
                p->i++;
                if (enter(p) < 0 || (index = parse_expr(p)) < 0 ||
                    expect(p, ']', "unclosed root index") < 0)
                    return -1;
                p->nest--;
            }
            int arg = parse_arg(p);
            if (arg < 0)
                return -1;
            return index >= 0 ? new_node(p, N_ROOT, 0, index, arg)
                              : new_node(p, N_SQRT, 0, arg, -1);
        }
        default: return fail(p, "misplaced symbol");
        }
    case TK_CHAR: break;
    default: return fail(p, "unexpected token");
    }
    char c = (char)t->c;
    if (math_is_digit(c) || c == '.')
        return parse_number(p);
    if (math_is_alpha(c)) {
        char base[2] = {c, 0};
        p->i++;
        return parse_var_rest(p, base);
    }
    if (c == '(' || c == '[')
        return parse_bracket(p);
    if (c == '{')
        return parse_brace(p);
    if (c == '|') {
        int e = parse_inner(p, 1, '|', "unclosed |");
        if (e < 0)
            return -1;
        return new_node(p, N_ABS, 0, e, -1);
    }
    return fail(p, c == ')' || c == ']' || c == '}' ? "unbalanced brackets" : "unexpected symbol");
}

static int parse_postfix(parser *p)
{
    int a = parse_primary(p);
    for (;;) {
        if (a < 0)
            return -1;
        if (is_char(peek(p), '!') && !is_char(peek_at(p, 1), '=')) { /* "x != 2" */
            p->i++;
            a = new_node(p, N_FACT, 0, a, -1);
        } else if (is_cmd(peek(p), CMD_PERCENT)) {
            p->i++;
            a = new_node(p, N_PCT, 0, a, -1);
        } else
            return a;
    }
}

static int parse_power(parser *p)
{
    int base = parse_postfix(p);
    if (base < 0 || !is_char(peek(p), '^'))
        return base;
    p->i++;
    if (enter(p) < 0) /* 2^2^2^...: right-recursive */
        return -1;
    int e = is_char(peek(p), '{') ? parse_arg(p) : parse_unary(p);
    p->nest--;
    int r = binary(p, N_POW, base, e);
    /* a percent after a power: 10^2 % */
    while (r >= 0 && is_cmd(peek(p), CMD_PERCENT)) {
        p->i++;
        r = new_node(p, N_PCT, 0, r, -1);
    }
    return r;
}

static int parse_unary(parser *p)
{
    const math_tok *t = peek(p);
    uint8_t op = is_char(t, '-')     ? N_NEG
                 : is_cmd(t, CMD_PM) ? N_PMU
                 : is_cmd(t, CMD_MP) ? N_MPU
                                     : 0;
    if (op || is_char(t, '+')) {
        if (enter(p) < 0)
            return -1;
        p->i++;
        int a = parse_unary(p);
        p->nest--;
        if (a < 0)
            return -1;
        return op ? new_node(p, op, 0, a, -1) : a;
    }
    return parse_power(p);
}

static int parse_term(parser *p)
{
    int a = parse_unary(p);
    while (a >= 0) {
        const math_tok *t = peek(p);
        if (is_char(t, '*') || is_char(t, '/')) {
            p->i++;
            a = arith(p, t->c == '*' ? N_MUL : N_DIV, a, parse_unary(p));
        } else if (starts_factor(p, t)) {
            if (is_digit(t) || is_char(t, '.'))
                return fail(p, "a number after a factor");
            int call = p->ws->node[a].op == N_VAR && is_char(t, '(');
            a = arith(p, N_MUL, a, parse_power(p));
            if (a >= 0 && call)
                p->ws->node[a].flags |= F_CALL;
        } else
            break;
    }
    return a;
}

static int parse_expr(parser *p)
{
    int a = parse_term(p);
    while (a >= 0) {
        const math_tok *t = peek(p);
        uint8_t op = is_char(t, '+')     ? N_ADD
                     : is_char(t, '-')   ? N_SUB
                     : is_cmd(t, CMD_PM) ? N_PM
                     : is_cmd(t, CMD_MP) ? N_MP
                                         : 0;
        if (!op)
            break;
        p->i++;
        a = arith(p, op, a, parse_term(p));
    }
    return a;
}

static int parse_union(parser *p)
{
    int a = parse_expr(p);
    if (a < 0 || !is_cmd(peek(p), CMD_CUP))
        return a;
    int first = -1, last = -1;
    size_t count = 0;
    link_item(p, &first, &last, a);
    count++;
    while (is_cmd(peek(p), CMD_CUP)) {
        p->i++;
        int b = parse_expr(p);
        if (b < 0)
            return -1;
        link_item(p, &first, &last, b);
        count++;
    }
    return collection(p, N_UNION, 0, first, count);
}

/* a : b, a ratio, is a / b ("7:32", "a:b = 2:3", as math-verify reads it);
 * a : b : c is refused rather than read as (a / b) / c */
static int parse_ratio(parser *p)
{
    int a = parse_union(p);
    if (a < 0 || !is_char(peek(p), ':'))
        return a;
    p->i++;
    a = binary(p, N_DIV, a, parse_union(p));
    if (a >= 0 && is_char(peek(p), ':'))
        return fail(p, "a ratio of three or more terms");
    return a;
}

/* '=', '<', '>', 'l' (<=), 'g' (>=), 'n' (!=), '~' (\approx), or 0; `<=`, `>=` in plain
 * text are two tokens. Returns the tokens it spans in *n. */
static char relop(const parser *p, size_t *n)
{
    const math_tok *t = peek(p);
    *n = 1;
    if (is_char(t, '<') || is_char(t, '>')) {
        if (is_char(peek_at(p, 1), '=')) {
            *n = 2;
            return t->c == '<' ? 'l' : 'g';
        }
        return (char)t->c;
    }
    if (is_char(t, '!') && is_char(peek_at(p, 1), '=')) {
        *n = 2;
        return 'n';
    }
    if (is_char(t, '=') || is_cmd(t, CMD_IN))
        return '=';
    if (is_cmd(t, CMD_LE))
        return 'l';
    if (is_cmd(t, CMD_GE))
        return 'g';
    if (is_cmd(t, CMD_NE))
        return 'n';
    if (is_cmd(t, CMD_APPROX))
        return '~';
    return 0;
}

static int lone_var(const math_ws *ws, int id)
{
    return ws->node[id].op == N_VAR ? ws->node[id].a : -1;
}

static int infinity(parser *p, int negative)
{
    int inf = new_node(p, N_INF, 0, -1, -1);
    return negative && inf >= 0 ? new_node(p, N_NEG, 0, inf, -1) : inf;
}

/* The interval lo..hi; lo or hi -1 for an infinite end. */
static int interval(parser *p, int lo, int lo_closed, int hi, int hi_closed)
{
    if (lo < 0 && (lo = infinity(p, 1)) < 0)
        return -1;
    if (hi < 0 && (hi = infinity(p, 0)) < 0)
        return -1;
    p->ws->node[lo].next = hi;
    p->ws->node[hi].next = -1;
    return collection(p, N_TUPLE, (uint8_t)(lo_closed | hi_closed << 1), lo, 2);
}

/* x op a with x a lone variable and a free of variables, as an interval. */
static int relation_interval(parser *p, char op, int a)
{
    switch (op) {
    case '<': return interval(p, -1, 0, a, 0);
    case 'l': return interval(p, -1, 0, a, 1);
    case '>': return interval(p, a, 0, -1, 0);
    case 'g': return interval(p, a, 1, -1, 0);
    }
    return -2; /* not an interval */
}

static char mirror(char op)
{
    return op == '<' ? '>' : op == '>' ? '<' : op == 'l' ? 'g' : op == 'g' ? 'l' : op;
}

/* x = A read as A, remembered (math_ws.assign_val) */
static int assigned(parser *p, int var_node, int value)
{
    math_ws *ws = p->ws;
    if (ws->nassign < MATH_MAX_ASSIGN) {
        ws->assign_val[ws->nassign] = value;
        ws->assign_var[ws->nassign++] = var_node;
    }
    return value;
}

/* Names: a lone variable, or letters side by side (PQ, AB: a product of
 * variables, as juxtaposition reads them). */
static int is_name(const math_ws *ws, int id)
{
    const math_node *n = &ws->node[id];
    if (n->op == N_VAR)
        return 1;
    return n->op == N_MUL && !(n->flags & F_CALL) && is_name(ws, n->a) && is_name(ws, n->b);
}

/* A name, or the ratio of two names (\frac{NO}{BO}, S_{MBCN} : S): what a
 * question asks for when the answer gives it a value. */
static int is_named_quantity(const math_ws *ws, int id)
{
    const math_node *n = &ws->node[id];
    return is_name(ws, id) || (n->op == N_DIV && is_name(ws, n->a) && is_name(ws, n->b));
}

/* A tuple of names given a tuple of as many values free of variables:
 * `(a, b) = (1, 4)`. */
static int names_given_values(const math_ws *ws, int names, int values)
{
    const math_node *n = &ws->node[names], *v = &ws->node[values];
    if (n->op != N_TUPLE || v->op != N_TUPLE || n->sub != 0 || v->sub != 0 ||
        n->count != v->count || (v->flags & F_VAR))
        return 0;
    for (int32_t c = n->a; c >= 0; c = ws->node[c].next)
        if (!is_name(ws, c))
            return 0;
    return 1;
}

/* k x with k a positive written number: k, else 0 (and x in *var). */
static int scaled_var(const math_ws *ws, int id, int *var)
{
    const math_node *n = &ws->node[id];
    if (n->op != N_MUL)
        return 0;
    int k = ws->node[n->a].op == N_NUM ? n->a : ws->node[n->b].op == N_NUM ? n->b : -1;
    int x = k == n->a ? n->b : n->a;
    if (k < 0 || ws->node[x].op != N_VAR)
        return 0;
    *var = x;
    return k;
}

/* x op A with the variable alone on one side, once -x or k x is divided
 * out (k > 0): `-x > -3` is x < 3; -2 when it is no such relation. */
static int linear_interval(parser *p, char op, int a, int b)
{
    math_ws *ws = p->ws;
    if (ws->node[b].flags & (F_VAR | F_COLL | F_PM))
        return -2;
    const math_node *na = &ws->node[a];
    int var = -1, k;
    if (na->op == N_NEG && ws->node[na->a].op == N_VAR) {
        int nb = new_node(p, N_NEG, 0, b, -1);
        return nb < 0 ? -1 : relation_interval(p, mirror(op), nb);
    }
    if ((k = scaled_var(ws, a, &var)) > 0) {
        int q = binary(p, N_DIV, b, k);
        return q < 0 ? -1 : relation_interval(p, op, q);
    }
    return -2;
}

/* `x = A` is A; `x > 2` and `1 < x \le 3` are intervals; other relations stay. */
static int simplify_relation(parser *p, char op, int a, int b)
{
    math_ws *ws = p->ws;
    int va = lone_var(ws, a), vb = lone_var(ws, b);
    if (op == '=') {
        if (va >= 0 && !math_mentions(ws, b, va))
            return assigned(p, a, b);
        if (vb >= 0 && !math_mentions(ws, a, vb))
            return assigned(p, b, a);
        if (names_given_values(ws, a, b) ||
            (is_named_quantity(ws, a) && !(ws->node[b].flags & F_VAR)))
            return b;
        /* f(x) = 2x + 1 names a function: its value is the answer (unless the
         * letter shows up again, as in x(x + 1) = 6) */
        if (ws->node[a].flags & F_CALL) {
            int f = ws->node[ws->node[a].a].a;
            if (!math_mentions(ws, ws->node[a].b, f) && !math_mentions(ws, b, f))
                return b;
        }
    } else if ((va >= 0 || (ws->node[a].flags & F_CALL)) && /* f(x) > 0 too */
               !(ws->node[b].flags & (F_VAR | F_COLL | F_PM))) {
        int r = relation_interval(p, op, b);
        if (r != -2)
            return r;
    } else if ((vb >= 0 || (ws->node[b].flags & F_CALL)) &&
               !(ws->node[a].flags & (F_VAR | F_COLL | F_PM))) {
        int r = relation_interval(p, mirror(op), a);
        if (r != -2)
            return r;
    } else if (op != 'n') {
        int r = linear_interval(p, op, a, b);
        if (r == -2)
            r = linear_interval(p, mirror(op), b, a);
        if (r != -2)
            return r;
    }
    return new_node(p, N_REL, (uint8_t)op, a, b);
}

/* lo <= |x| <= hi (or <): the two intervals [-hi, -lo] and [lo, hi]. */
static int abs_bounds(parser *p, int lo, int lo_closed, int hi, int hi_closed)
{
    int nlo = new_node(p, N_NEG, 0, lo, -1), nhi = nlo < 0 ? -1 : new_node(p, N_NEG, 0, hi, -1);
    int left = nhi < 0 ? -1 : interval(p, nhi, hi_closed, nlo, lo_closed);
    int right = left < 0 ? -1 : interval(p, lo, lo_closed, hi, hi_closed);
    if (right < 0)
        return -1;
    int first = -1, last = -1;
    link_item(p, &first, &last, left);
    link_item(p, &first, &last, right);
    p->ws->node[right].next = -1;
    return collection(p, N_UNION, 0, first, 2);
}

/* The most sides one chain of relations has: x = 5 + 5 + 1 = 7 = 11. */
#define MATH_MAX_CHAIN 8

static int parse_item(parser *p)
{
    int side[MATH_MAX_CHAIN];
    char op[MATH_MAX_CHAIN];
    size_t k = 0, n1;
    side[0] = parse_ratio(p);
    if (side[0] < 0)
        return -1;
    for (char o; (o = relop(p, &n1));) {
        if (k + 1 >= MATH_MAX_CHAIN)
            return fail(p, "too many relations");
        p->i += n1;
        op[k] = o;
        if ((side[++k] = parse_ratio(p)) < 0)
            return -1;
    }
    /* Approximations: `x \approx 11` is 11; after an exact value the
     * approximation is dropped (`x = 1/3 \approx 0.33` is x = 1/3). */
    size_t from = 0;
    if (k >= 1 && op[0] == '~' && is_name(p->ws, side[0]))
        from = 1;
    for (size_t j = from; j < k; j++)
        if (op[j] == '~') {
            k = j;
            break;
        }
    if (from > k) /* nothing but names and approximations */
        return side[k];
    const int *sd = side + from;
    const char *ops = op + from;
    k -= from;
    if (k == 0)
        return sd[0];
    if (k == 1)
        return simplify_relation(p, ops[0], sd[0], sd[1]);
    /* a chain of '=': its first side is its last (x = 5 + 5 + 1 = 11 is 11) */
    int all_equal = 1;
    for (size_t j = 0; j < k; j++)
        all_equal &= ops[j] == '=';
    if (all_equal)
        return simplify_relation(p, '=', sd[0], sd[k]);
    if (k > 2)
        return fail(p, "too many relations");
    int a = sd[0], b = sd[1], c = sd[2];
    char op1 = ops[0], op2 = ops[1];
    /* lo < x < hi, or hi > x > lo; or the same bounds on f(x) */
    int x = (p->ws->node[b].flags & F_CALL) ? 0 : lone_var(p->ws, b);
    int ends_free = !(p->ws->node[a].flags & (F_VAR | F_COLL | F_PM)) &&
                    !(p->ws->node[c].flags & (F_VAR | F_COLL | F_PM));
    int up1 = op1 == '<' || op1 == 'l', up2 = op2 == '<' || op2 == 'l';
    int down1 = op1 == '>' || op1 == 'g', down2 = op2 == '>' || op2 == 'g';
    if (x >= 0 && ends_free && up1 && up2)
        return interval(p, a, op1 == 'l', c, op2 == 'l');
    if (x >= 0 && ends_free && down1 && down2)
        return interval(p, c, op2 == 'g', a, op1 == 'g');
    const math_node *nb = &p->ws->node[b];
    if (nb->op == N_ABS && lone_var(p->ws, nb->a) >= 0 && ends_free && up1 && up2)
        return abs_bounds(p, a, op1 == 'l', c, op2 == 'l');
    if (nb->op == N_ABS && lone_var(p->ws, nb->a) >= 0 && ends_free && down1 && down2)
        return abs_bounds(p, c, op2 == 'g', a, op1 == 'g');
    int r1 = new_node(p, N_REL, (uint8_t)op1, a, b);
    int r2 = r1 < 0 ? -1 : new_node(p, N_REL, (uint8_t)op2, b, c);
    return binary(p, N_CHAIN, r1, r2);
}

static int is_separator(const math_tok *t)
{
    return is_char(t, ',') || is_char(t, ';') || is_cmd(t, CMD_OR);
}

/* The variable an answer item was assigned from (`p = 5` read as 5), or -1. */
static int assigned_var(const math_ws *ws, int item)
{
    for (size_t k = 0; k < ws->nassign; k++)
        if (ws->assign_val[k] == item)
            return ws->node[ws->assign_var[k]].a;
    return -1;
}

/* A list of solutions written as assignments, `p=5,q=2;p=7,q=2`: when every
 * item is one and the names repeat in the same order with a period of two
 * or more, the list of tuples ((5, 2), (7, 2)); -2 when it is no such list. */
static int assignments_grouped(parser *p, int first)
{
    math_ws *ws = p->ws;
    int var[MATH_MAX_ASSIGN];
    size_t n = 0;
    for (int c = first; c >= 0; c = ws->node[c].next) {
        if (n == MATH_MAX_ASSIGN || (var[n] = assigned_var(ws, c)) < 0)
            return -2;
        n++;
    }
    size_t period = 1;
    while (period < n && var[period] != var[0])
        period++;
    if (period < 2 || period == n || n % period != 0)
        return -2;
    for (size_t i = 0; i < n; i++) {
        if (var[i] != var[i % period])
            return -2;
        for (size_t j = 0; j < i && i < period; j++)
            if (var[j] == var[i])
                return -2;
    }
    int tfirst = -1, tlast = -1, c = first;
    for (size_t g = 0; g < n / period; g++) {
        int ifirst = -1, ilast = -1;
        for (size_t k = 0; k < period; k++) {
            int next = ws->node[c].next;
            ws->node[c].next = -1;
            link_item(p, &ifirst, &ilast, c);
            c = next;
        }
        int t = collection(p, N_TUPLE, 0, ifirst, period);
        if (t < 0)
            return -1;
        link_item(p, &tfirst, &tlast, t);
    }
    return collection(p, N_LIST, 0, tfirst, n / period);
}

static int parse_answers(parser *p)
{
    int first = -1, last = -1;
    size_t count = 0;
    for (;;) {
        int it = parse_item(p);
        if (it < 0)
            return -1;
        link_item(p, &first, &last, it);
        count++;
        if (!is_separator(peek(p)))
            break;
        while (is_separator(peek(p))) /* "1, or 2" */
            p->i++;
    }
    if (p->i < p->n)
        return fail(p, is_char(peek(p), ')') || is_char(peek(p), ']') || is_char(peek(p), '}') ||
                               is_cmd(peek(p), CMD_SETR)
                           ? "unbalanced brackets"
                           : "unexpected symbol");
    if (count == 1)
        return first;
    int grouped = assignments_grouped(p, first);
    return grouped != -2 ? grouped : collection(p, N_LIST, 0, first, count);
}

int math_parse(math_ws *ws, const math_tok *t, size_t n, const char **why)
{
    parser p = {.ws = ws, .t = t, .n = n};
    int root = n ? parse_answers(&p) : fail(&p, "empty");
    *why = p.why ? p.why : "";
    return p.why ? -1 : root;
}

/* ---- Evaluation ---------------------------------------------------------------------- */

int math_mentions(const math_ws *ws, int id, int var)
{
    const math_node *nd = &ws->node[id];
    if (!(nd->flags & F_VAR))
        return 0;
    if (nd->op == N_VAR)
        return nd->a == var;
    if (is_collection(nd->op) && nd->op != N_REL && nd->op != N_CHAIN) {
        for (int c = nd->a; c >= 0; c = ws->node[c].next)
            if (math_mentions(ws, c, var))
                return 1;
        return 0;
    }
    return (nd->a >= 0 && math_mentions(ws, nd->a, var)) ||
           (nd->b >= 0 && math_mentions(ws, nd->b, var));
}

/* The worse of two statuses: undefined beats not-exact. */
static int worse(int a, int b)
{
    return a == RAT_UNDEFINED || b == RAT_UNDEFINED ? RAT_UNDEFINED : a ? a : b;
}

int math_eval_exact(const math_ws *ws, int id, int pm, math_rat *out)
{
    const math_node *nd = &ws->node[id];
    math_rat x, y;
    int rx = RAT_OK, ry = RAT_OK, s = pm < 0 ? -1 : 1;
    switch (nd->op) {
    case N_NUM:
        if (!ws->num[nd->a].exact)
            return RAT_OVERFLOW;
        *out = ws->num[nd->a].q;
        return RAT_OK;
    case N_NEG:
    case N_PMU:
    case N_MPU:
    case N_SQRT:
    case N_FACT:
    case N_PCT:
    case N_ABS:
        if ((rx = math_eval_exact(ws, nd->a, pm, &x)) != RAT_OK)
            return rx;
        switch (nd->op) {
        case N_NEG: *out = math_rat_neg(x); return RAT_OK;
        case N_PMU: *out = s > 0 ? x : math_rat_neg(x); return RAT_OK;
        case N_MPU: *out = s > 0 ? math_rat_neg(x) : x; return RAT_OK;
        case N_SQRT: return math_rat_sqrt(&x, out);
        case N_FACT: return math_rat_factorial(&x, out);
        case N_ABS:
            x.neg = 0;
            *out = x;
            return RAT_OK;
        default: {
            math_rat hundred = math_rat_int(100);
            return math_rat_div(&x, &hundred, out);
        }
        }
    case N_ADD:
    case N_SUB:
    case N_MUL:
    case N_DIV:
    case N_POW:
    case N_PM:
    case N_MP:
    case N_BINOM:
        rx = math_eval_exact(ws, nd->a, pm, &x);
        ry = math_eval_exact(ws, nd->b, pm, &y);
        if (rx != RAT_OK || ry != RAT_OK)
            return worse(rx, ry);
        switch (nd->op) {
        case N_ADD: return math_rat_add(&x, &y, out);
        case N_SUB: return math_rat_sub(&x, &y, out);
        case N_PM: return s > 0 ? math_rat_add(&x, &y, out) : math_rat_sub(&x, &y, out);
        case N_MP: return s > 0 ? math_rat_sub(&x, &y, out) : math_rat_add(&x, &y, out);
        case N_MUL: return math_rat_mul(&x, &y, out);
        case N_DIV: return math_rat_div(&x, &y, out);
        case N_BINOM: return math_rat_binom(&x, &y, out);
        default:
            if (y.den == 1) {
                /* Past 2^20 only 0, 1 and -1 have exact powers; keep the parity. */
                int64_t e =
                    y.num > (1u << 20) ? (int64_t)(1 << 20) + (int64_t)(y.num & 1) : (int64_t)y.num;
                return math_rat_pow(&x, y.neg ? -e : e, out);
            }
            if (y.den == 2 && y.num == 1 && !y.neg)
                return math_rat_sqrt(&x, out);
            return RAT_OVERFLOW; /* irrational or complex: floating point */
        }
    default: return RAT_OVERFLOW; /* \pi, e, variables, functions: not rational here */
    }
}

static int is_integer(double v) { return isfinite(v) && v == floor(v); }

static double function(unsigned fn, double x)
{
    switch ((math_fn)fn) {
    case FN_SIN: return sin(x);
    case FN_COS: return cos(x);
    case FN_TAN: return tan(x);
    case FN_COT: return 1 / tan(x);
    case FN_SEC: return 1 / cos(x);
    case FN_CSC: return 1 / sin(x);
    case FN_ASIN: return asin(x);
    case FN_ACOS: return acos(x);
    case FN_ATAN: return atan(x);
    case FN_SINH: return sinh(x);
    case FN_COSH: return cosh(x);
    case FN_TANH: return tanh(x);
    case FN_LN: return x > 0 ? log(x) : NAN;
    case FN_LOG: return x > 0 ? log10(x) : NAN;
    case FN_EXP: return exp(x);
    case FN_ABS: return fabs(x);
    case FN_COUNT: break;
    }
    return NAN;
}

double math_eval_num(const math_ws *ws, int id, int pm, int point)
{
    const math_node *nd = &ws->node[id];
    double s = pm < 0 ? -1 : 1, x, y;
    switch (nd->op) {
    case N_NUM: return ws->num[nd->a].v;
    case N_VAR: return ws->var_val[nd->a][point];
    case N_PI: return 3.14159265358979323846;
    case N_E: return 2.71828182845904523536;
    case N_INF: return INFINITY;
    default: break;
    }
    if (is_collection(nd->op))
        return NAN;
    x = math_eval_num(ws, nd->a, pm, point);
    y = nd->b >= 0 ? math_eval_num(ws, nd->b, pm, point) : 0;
    switch (nd->op) {
    case N_NEG: return -x;
    case N_PMU: return s * x;
    case N_MPU: return -s * x;
    case N_ADD: return x + y;
    case N_SUB: return x - y;
    case N_PM: return x + s * y;
    case N_MP: return x - s * y;
    case N_MUL: return x * y;
    case N_DIV: return y == 0 ? NAN : x / y;
    case N_POW:
        if (x == 0 && y <= 0)
            return NAN;
        if (x < 0 && !is_integer(y)) {
            /* (-8)^{1/3}: a rational exponent with an odd denominator is real */
            math_rat q;
            if (math_eval_exact(ws, nd->b, pm, &q) == RAT_OK && (q.den & 1))
                return (q.num & 1 ? -1 : 1) * pow(-x, y);
            return NAN;
        }
        return pow(x, y);
    case N_FUNC: return function(nd->sub, x);
    case N_LOGB: return x > 0 && x != 1 && y > 0 ? log(y) / log(x) : NAN;
    case N_SQRT: return x < 0 ? NAN : sqrt(x);
    case N_ROOT:
        if (!is_integer(x) || x < 2)
            return x > 0 && y >= 0 ? pow(y, 1 / x) : NAN;
        if (y < 0) /* odd roots of negatives are real */
            return fmod(x, 2) == 1 ? -pow(-y, 1 / x) : NAN;
        return pow(y, 1 / x);
    case N_FACT: /* past 170! a double overflows: too large, not undefined */
        return is_integer(x) && x >= 0 ? (x <= 170 ? tgamma(x + 1) : INFINITY) : NAN;
    case N_PCT: return x / 100;
    case N_ABS: return fabs(x);
    case N_BINOM:
        if (!is_integer(x) || !is_integer(y) || y < 0 || x < 0)
            return NAN;
        if (y > x)
            return 0;
        return round(exp(lgamma(x + 1) - lgamma(y + 1) - lgamma(x - y + 1)));
    default: return NAN;
    }
}
