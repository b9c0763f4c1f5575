/* latex.c: normalising an answer's spellings into tokens (see latex.h). */
#include "latex.h"

#include <string.h>

#include "ascii.h"
#include "tern/support/utf8.h"

/* ---- Tables ---------------------------------------------------------------- */

static const char *const greek[] = {
    "alpha",   "beta",     "gamma",  "delta",   "epsilon",  "varepsilon", "zeta",    "eta",
    "theta",   "vartheta", "iota",   "kappa",   "lambda",   "mu",         "nu",      "xi",
    "omicron", "rho",      "varrho", "sigma",   "varsigma", "tau",        "upsilon", "phi",
    "varphi",  "chi",      "psi",    "omega",   "Gamma",    "Delta",      "Theta",   "Lambda",
    "Xi",      "Pi",       "Sigma",  "Upsilon", "Phi",      "Psi",        "Omega"};
#define N_GREEK (sizeof greek / sizeof greek[0])

const char *math_greek_name(unsigned sub) { return sub < N_GREEK ? greek[sub] : "?"; }

static const char *const functions[FN_COUNT] = {
    [FN_SIN] = "sin",     [FN_COS] = "cos",   [FN_TAN] = "tan",     [FN_COT] = "cot",
    [FN_SEC] = "sec",     [FN_CSC] = "csc",   [FN_ASIN] = "arcsin", [FN_ACOS] = "arccos",
    [FN_ATAN] = "arctan", [FN_SINH] = "sinh", [FN_COSH] = "cosh",   [FN_TANH] = "tanh",
    [FN_LN] = "ln",       [FN_LOG] = "log",   [FN_EXP] = "exp",     [FN_ABS] = "abs"};

/* Unit words dropped after a number (latex.h). One-letter units need a space
 * before them ("5 m", not "5m", which is 5 times m). */
static const char *const units[] = {
    "mm",     "cm",         "km",          "m",          "meter",       "meters",    "metre",
    "metres", "centimeter", "centimeters", "millimeter", "millimeters", "kilometer", "kilometers",
    "in",     "inch",       "inches",      "ft",         "foot",        "feet",      "yd",
    "yard",   "yards",      "mi",          "mile",       "miles",       "g",         "mg",
    "kg",     "gram",       "grams",       "kilogram",   "kilograms",   "lb",        "lbs",
    "pound",  "pounds",     "oz",          "ounce",      "ounces",      "ton",       "tons",
    "s",      "sec",        "secs",        "second",     "seconds",     "min",       "mins",
    "minute", "minutes",    "h",           "hr",         "hrs",         "hour",      "hours",
    "day",    "days",       "week",        "weeks",      "month",       "months",    "year",
    "years",  "yr",         "yrs",         "L",          "ml",          "mL",        "liter",
    "liters", "litre",      "litres",      "gallon",     "gallons",     "mph",       "kph",
    "kmh",    "deg",        "degree",      "degrees",    "rad",         "radian",    "radians",
    "dollar", "dollars",    "cent",        "cents",      "USD",         "unit",      "units",
    "sq",     "square",     "cubic",       "per"};
#define N_UNITS (sizeof units / sizeof units[0])

/* Short letter runs that are words, not products of variables. Longer runs
 * are words unless they mean something. */
static const char *const short_words[] = {"no",  "yes", "odd", "not", "all", "one", "two", "six",
                                          "ten", "any", "nor", "Yes", "No",  "NO",  "YES"};

static int run_is(const char *s, size_t n, const char *w)
{
    return strlen(w) == n && memcmp(s, w, n) == 0;
}

static int find_name(const char *const *table, size_t count, const char *s, size_t n)
{
    for (size_t i = 0; i < count; i++)
        if (table[i] && run_is(s, n, table[i]))
            return (int)i;
    return -1;
}

/* ---- The lexer state ------------------------------------------------------ */

typedef struct lexer {
    const char *s;
    size_t len, i;
    math_tok *out;
    size_t n, cap;
    int space; /* whitespace since the last token */
    int after_unit; /* the last thing seen was a dropped unit or degree sign */
    int text_open; /* a \text-like command was dropped: its '{' is a text group */
    int matrix; /* inside \begin{pmatrix} (or bmatrix, matrix, Bmatrix, smallmatrix) */
    int row_break; /* a \\ in a matrix, written out before the next token */
} lexer;

static int is_digit_tok(const math_tok *t)
{
    return t->kind == TK_CHAR && math_is_digit((char)t->c);
}

static void emit(lexer *x, uint8_t kind, uint8_t c, uint16_t sub, size_t pos, size_t len)
{
    if (x->row_break) { /* a matrix's next row: "), (" */
        x->row_break = 0;
        static const char row[3] = {')', ',', '('};
        for (int k = 0; k < 3 && x->n < x->cap; k++)
            x->out[x->n++] = (math_tok){.kind = TK_CHAR, .c = (uint8_t)row[k],
                                        .pos = (uint32_t)pos};
    }
    if (x->n + 2 > x->cap)
        return; /* the caller sized out[] for the worst case; never truncate silently */
    if (kind == TK_CHAR && math_is_digit((char)c) && x->space && x->n &&
        is_digit_tok(&x->out[x->n - 1]))
        x->out[x->n++] = (math_tok){.kind = TK_SPACE, .pos = (uint32_t)pos};
    if (kind == TK_CHAR && x->space)
        sub |= MATH_TOK_SPACED;
    x->out[x->n++] =
        (math_tok){.kind = kind, .c = c, .sub = sub, .pos = (uint32_t)pos, .len = (uint32_t)len};
    x->space = 0;
    x->after_unit = 0;
    x->text_open = 0;
}

static void emit_char(lexer *x, char c, size_t pos) { emit(x, TK_CHAR, (uint8_t)c, 0, pos, 1); }

static void emit_cmd(lexer *x, math_cmd c, unsigned sub, size_t pos, size_t len)
{
    emit(x, TK_CMD, (uint8_t)c, (uint16_t)sub, pos, len);
}

/* The last token that is not an opening brace, or NULL. */
static const math_tok *last_solid(const lexer *x)
{
    for (size_t k = x->n; k-- > 0;)
        if (!(x->out[k].kind == TK_CHAR && x->out[k].c == '{'))
            return &x->out[k];
    return NULL;
}

static int last_is_text_brace(const lexer *x)
{
    return x->n && x->out[x->n - 1].kind == TK_CHAR && x->out[x->n - 1].c == '{' &&
           (x->out[x->n - 1].sub & MATH_TOK_TEXT);
}

/* A unit may follow a number, a closing bracket, a percent sign or another
 * unit. */
static int unit_may_follow(const lexer *x)
{
    if (x->after_unit)
        return 1;
    const math_tok *t = last_solid(x);
    if (!t)
        return 0;
    if (t->kind == TK_CHAR)
        return math_is_digit((char)t->c) || t->c == ')' || t->c == ']' || t->c == '}' ||
               t->c == '|';
    return t->kind == TK_CMD && (t->c == CMD_PERCENT || t->c == CMD_PI);
}

static size_t skip_ws(const char *s, size_t len, size_t i)
{
    while (i < len && math_is_space(s[i]))
        i++;
    return i;
}

static size_t letter_run(const char *s, size_t len, size_t i)
{
    size_t j = i;
    while (j < len && math_is_alpha(s[j]))
        j++;
    return j - i;
}

/* Is the letter run s[i..i+n) a unit that may be dropped here? */
static int droppable_unit(const lexer *x, size_t i, size_t n)
{
    const char *w = x->s + i;
    int u = find_name(units, N_UNITS, w, n);
    if (u < 0 || !unit_may_follow(x))
        return 0;
    if (run_is(w, n, "per"))
        return x->after_unit;
    if (n == 1 || run_is(w, n, "in") || run_is(w, n, "mi"))
        /* "5 m", "5\text{m}": a lone letter is a unit only when set apart */
        return x->after_unit || ((x->space || last_is_text_brace(x)) && last_solid(x) &&
                                 is_digit_tok(last_solid(x)));
    return 1;
}

/* After a dropped unit: "^2", "^{3}", "²" belong to it ("cm^2"). Returns the
 * bytes to skip at s[i], 0 if none. */
static size_t unit_power(const lexer *x, size_t i)
{
    const char *s = x->s;
    size_t len = x->len;
    if (i + 1 < len && (unsigned char)s[i] == 0xC2 &&
        ((unsigned char)s[i + 1] == 0xB2 || (unsigned char)s[i + 1] == 0xB3))
        return 2;
    if (s[i] != '^')
        return 0;
    size_t j = skip_ws(s, len, i + 1);
    if (j < len && (s[j] == '2' || s[j] == '3'))
        return j + 1 - i;
    if (j < len && s[j] == '{') {
        size_t k = skip_ws(s, len, j + 1);
        if (k < len && (s[k] == '2' || s[k] == '3')) {
            k = skip_ws(s, len, k + 1);
            if (k < len && s[k] == '}')
                return k + 1 - i;
        }
    }
    return 0;
}

/* "^\circ", "^{\circ}", "^{ \circ }": the bytes of a degree sign at s[i]
 * (a '^'), 0 if none. */
static size_t degree_power(const char *s, size_t len, size_t i)
{
    size_t j = skip_ws(s, len, i + 1), brace = 0;
    if (j < len && s[j] == '{') {
        brace = 1;
        j = skip_ws(s, len, j + 1);
    }
    if (j + 5 > len || memcmp(s + j, "\\circ", 5) != 0 || (j + 5 < len && math_is_alpha(s[j + 5])))
        return 0;
    j += 5;
    if (brace) {
        j = skip_ws(s, len, j);
        if (j >= len || s[j] != '}')
            return 0;
        j++;
    }
    return j - i;
}

/* ---- Letter runs: functions, constants, separators, units, words --------------- */

/* Whether the letters s[i..i+n) fill a maths group by themselves, as in
 * \frac{NO}{BO}: names of points, not the word "no" (\text{NO} still is). */
static int letters_in_group(const lexer *x, size_t i, size_t n)
{
    const math_tok *t = x->n ? &x->out[x->n - 1] : NULL;
    return t && t->kind == TK_CHAR && t->c == '{' && !(t->sub & MATH_TOK_TEXT) && !x->space &&
           i + n < x->len && x->s[i + n] == '}';
}

static void lex_letters(lexer *x, size_t i, size_t n, int after_backslash)
{
    const char *w = x->s + i;
    int f = find_name(functions, FN_COUNT, w, n), g;
    if (f >= 0 && !(f == FN_ABS && after_backslash)) {
        emit_cmd(x, CMD_FUNC, (unsigned)f, i, n);
    } else if (run_is(w, n, "sqrt")) {
        emit_cmd(x, CMD_SQRT, 0, i, n);
    } else if (run_is(w, n, "pi")) {
        emit_cmd(x, CMD_PI, 0, i, n);
    } else if (run_is(w, n, "infty") || run_is(w, n, "inf") || run_is(w, n, "infinity")) {
        emit_cmd(x, CMD_INF, 0, i, n);
    } else if (!after_backslash && (run_is(w, n, "or") || run_is(w, n, "and"))) {
        emit_cmd(x, CMD_OR, 0, i, n);
    } else if (!after_backslash && (run_is(w, n, "percent") || run_is(w, n, "percentage") ||
                                    run_is(w, n, "pct"))) {
        emit_cmd(x, CMD_PERCENT, 0, i, n);
    } else if (!after_backslash && droppable_unit(x, i, n)) {
        x->space = 0;
        x->after_unit = 1;
        x->text_open = 0;
    } else if ((g = find_name(greek, N_GREEK, w, n)) >= 0) {
        emit_cmd(x, CMD_GREEK, (unsigned)g, i, n);
    } else if (after_backslash) {
        emit(x, TK_BAD, 0, 0, i - 1, n + 1);
    } else if (/* a subscript of letters, S_{MBCN}, is a label, whatever its length */
               (n >= 4 && !(letters_in_group(x, i, n) && x->n >= 2 &&
                            x->out[x->n - 2].kind == TK_CHAR && x->out[x->n - 2].c == '_')) ||
               (find_name(short_words, sizeof short_words / sizeof short_words[0], w, n) >= 0 &&
                !letters_in_group(x, i, n))) {
        emit(x, TK_WORD, 0, 0, i, n);
    } else {
        for (size_t k = 0; k < n; k++)
            emit_char(x, w[k], i + k);
    }
}

/* ---- Backslash commands ------------------------------------------------------ */

typedef enum action { A_SKIP, A_SPACE, A_TEXT, A_CHAR, A_CMD, A_DEGREE, A_LEFTRIGHT } action;

typedef struct command {
    const char *name;
    action act;
    int arg; /* the char or the math_cmd */
} command;

static const command commands[] = {
    {"frac", A_CMD, CMD_FRAC},
    {"dfrac", A_CMD, CMD_FRAC},
    {"tfrac", A_CMD, CMD_FRAC},
    {"cfrac", A_CMD, CMD_FRAC},
    {"sqrt", A_CMD, CMD_SQRT},
    {"binom", A_CMD, CMD_BINOM},
    {"dbinom", A_CMD, CMD_BINOM},
    {"tbinom", A_CMD, CMD_BINOM},
    {"pi", A_CMD, CMD_PI},
    {"infty", A_CMD, CMD_INF},
    {"infinity", A_CMD, CMD_INF},
    {"inf", A_CMD, CMD_INF},
    {"pm", A_CMD, CMD_PM},
    {"mp", A_CMD, CMD_MP},
    {"cup", A_CMD, CMD_CUP},
    {"le", A_CMD, CMD_LE},
    {"leq", A_CMD, CMD_LE},
    {"leqslant", A_CMD, CMD_LE},
    {"ge", A_CMD, CMD_GE},
    {"geq", A_CMD, CMD_GE},
    {"geqslant", A_CMD, CMD_GE},
    {"ne", A_CMD, CMD_NE},
    {"neq", A_CMD, CMD_NE},
    {"in", A_CMD, CMD_IN},
    {"approx", A_CMD, CMD_APPROX},
    {"emptyset", A_CMD, CMD_EMPTYSET},
    {"varnothing", A_CMD, CMD_EMPTYSET},
    {"lbrace", A_CMD, CMD_SETL},
    {"rbrace", A_CMD, CMD_SETR},
    {"lt", A_CHAR, '<'},
    {"gt", A_CHAR, '>'},
    {"cdot", A_CHAR, '*'},
    {"times", A_CHAR, '*'},
    {"ast", A_CHAR, '*'},
    {"div", A_CHAR, '/'},
    {"langle", A_CHAR, '('},
    {"rangle", A_CHAR, ')'},
    {"lvert", A_CHAR, '|'},
    {"rvert", A_CHAR, '|'},
    {"vert", A_CHAR, '|'},
    {"mid", A_CHAR, '|'},
    {"lbrack", A_CHAR, '['},
    {"rbrack", A_CHAR, ']'},
    {"left", A_LEFTRIGHT, 0},
    {"right", A_LEFTRIGHT, 0},
    {"big", A_SKIP, 0},
    {"Big", A_SKIP, 0},
    {"bigg", A_SKIP, 0},
    {"Bigg", A_SKIP, 0},
    {"bigl", A_SKIP, 0},
    {"bigr", A_SKIP, 0},
    {"Bigl", A_SKIP, 0},
    {"Bigr", A_SKIP, 0},
    {"displaystyle", A_SKIP, 0},
    {"textstyle", A_SKIP, 0},
    {"limits", A_SKIP, 0},
    {"dollar", A_SKIP, 0},
    {"quad", A_SPACE, 0},
    {"qquad", A_SPACE, 0},
    {"text", A_TEXT, 0},
    {"textrm", A_TEXT, 0},
    {"textbf", A_TEXT, 0},
    {"textit", A_TEXT, 0},
    {"textnormal", A_TEXT, 0},
    {"mathrm", A_TEXT, 0},
    {"mathbf", A_TEXT, 0},
    {"mathit", A_TEXT, 0},
    {"mathsf", A_TEXT, 0},
    {"mathtt", A_TEXT, 0},
    {"mbox", A_TEXT, 0},
    {"hbox", A_TEXT, 0},
    {"operatorname", A_TEXT, 0},
    {"boldsymbol", A_TEXT, 0},
    {"bm", A_TEXT, 0},
    {"circ", A_DEGREE, 0},
    {"degree", A_DEGREE, 0},
};

/* Whether s[0..n) names a command this lexer knows. */
static int known_command(const char *s, size_t n)
{
    static const char *const special[] = {"begin", "end", "mathbb", "quad", "qquad"};
    if (find_name(special, 5, s, n) >= 0)
        return 1;
    for (size_t k = 0; k < sizeof commands / sizeof commands[0]; k++)
        if (run_is(s, n, commands[k].name))
            return 1;
    return 0;
}

/* "\\frac" and "\\\\frac": a command whose backslash was escaped once or twice
 * more on its way (answers copied out of JSON or Python strings). Returns the
 * number of backslashes before the name when they end in a known command, else 0. */
static size_t escaped_command(const char *s, size_t len, size_t i)
{
    size_t r = 0;
    while (i + r < len && s[i + r] == '\\')
        r++;
    if (r < 2 || r > 4)
        return 0;
    size_t n = letter_run(s, len, i + r);
    return n && known_command(s + i + r, n) ? r : 0;
}

/* "\," between digits that go on in a strict group of three is a thousands
 * separator ("1\,000"), elsewhere a space. */
static int thousands_gap(const lexer *x, size_t j)
{
    const char *s = x->s;
    return x->n && is_digit_tok(&x->out[x->n - 1]) && j + 3 <= x->len && math_is_digit(s[j]) &&
           math_is_digit(s[j + 1]) && math_is_digit(s[j + 2]) &&
           (j + 3 == x->len || !math_is_digit(s[j + 3]));
}

/* The command at s[i] (a backslash); returns the index after it. */
static size_t lex_command(lexer *x, size_t i)
{
    const char *s = x->s;
    size_t len = x->len;
    if (i + 1 >= len) {
        emit(x, TK_BAD, 0, 0, i, 1);
        return i + 1;
    }
    char c = s[i + 1];
    if (c == '!' && x->n >= 2 && x->out[x->n - 1].kind == TK_CHAR && x->out[x->n - 1].c == ',' &&
        is_digit_tok(&x->out[x->n - 2])) {
        /* "11,\! 111": the comma of a thousands group, the space undone */
        x->space = 0;
        return skip_ws(s, len, i + 2);
    }
    if (!math_is_alpha(c)) {
        switch (c) {
        case '{': emit_cmd(x, CMD_SETL, 0, i, 2); break;
        case '}': emit_cmd(x, CMD_SETR, 0, i, 2); break;
        case '%': emit_cmd(x, CMD_PERCENT, 0, i, 2); break;
        case '|': emit_char(x, '|', i); break;
        case '$':
        case '!': break;
        case ',':
            if (thousands_gap(x, i + 2))
                emit_char(x, ',', i);
            else
                x->space = 1;
            break;
        case ';':
        case ':':
        case ' ':
        case '\t':
        case '\n': x->space = 1; break;
        case '\\':
            if (escaped_command(s, len, i)) {
                size_t r = escaped_command(s, len, i);
                /* in a matrix, "\\\\\\frac" is a row break and then \frac */
                if (x->matrix && r == 3 && x->n &&
                    !(x->out[x->n - 1].kind == TK_CHAR && x->out[x->n - 1].c == '('))
                    x->row_break = 1;
                return lex_command(x, i + r - 1);
            }
            if (x->matrix && x->n && !(x->out[x->n - 1].kind == TK_CHAR &&
                                       x->out[x->n - 1].c == '(')) {
                x->row_break = 1; /* an empty row (a last \\) adds none */
                break;
            }
            /* fall through */
        default: emit(x, TK_BAD, 0, 0, i, 2); break;
        }
        return i + 2;
    }
    size_t n = letter_run(s, len, i + 1);
    const char *name = s + i + 1;
    /* "\quadx": a space and then letters, written together */
    if (n > 4 && memcmp(name, "quad", 4) == 0) {
        x->space = 1;
        return i + 5;
    }
    if (n > 5 && memcmp(name, "qquad", 5) == 0) {
        x->space = 1;
        return i + 6;
    }
    if (run_is(name, n, "begin") || run_is(name, n, "end")) {
        size_t j = skip_ws(s, len, i + 1 + n), e = j + 1;
        while (e < len && math_is_alpha(s[e]))
            e++;
        static const char *const kinds[] = {"pmatrix", "bmatrix", "Bmatrix", "matrix",
                                            "smallmatrix", "array"};
        int kind = j < len && s[j] == '{' && e < len && s[e] == '}'
                       ? find_name(kinds, 6, s + j + 1, e - j - 1) : -1;
        int begin = name[0] == 'b';
        if (kind >= 0 && begin != x->matrix) {
            /* a matrix is a tuple of its rows: ((a, b), (c, d)) */
            x->row_break = 0;
            emit_char(x, begin ? '(' : ')', i);
            if (begin)
                x->out[x->n - 1].sub |= MATH_TOK_MATRIX;
            emit_char(x, begin ? '(' : ')', i);
            x->matrix = begin;
            size_t next = e + 1;
            if (begin && kind == 5) { /* an array's column spec, {cc} or {c|c} */
                size_t k = skip_ws(s, len, next);
                if (k < len && s[k] == '{') {
                    size_t q = k + 1;
                    while (q < len && q - k < 64 && s[q] != '}' && s[q] != '{')
                        q++;
                    if (q < len && s[q] == '}')
                        next = q + 1;
                }
            }
            return next;
        }
    }
    if (run_is(name, n, "mathbb")) { /* \mathbb{R} and \mathbb R */
        size_t j = skip_ws(s, len, i + 1 + n);
        int brace = j < len && s[j] == '{';
        size_t k = brace ? skip_ws(s, len, j + 1) : j;
        if (k < len && s[k] == 'R') {
            size_t e = brace ? skip_ws(s, len, k + 1) : k + 1;
            if (!brace || (e < len && s[e] == '}')) {
                emit_cmd(x, CMD_REALS, 0, i, 0);
                return brace ? e + 1 : e;
            }
        }
    }
    for (size_t k = 0; k < sizeof commands / sizeof commands[0]; k++) {
        const command *cm = &commands[k];
        if (!run_is(name, n, cm->name))
            continue;
        size_t next = i + 1 + n;
        switch (cm->act) {
        case A_SKIP: break;
        case A_SPACE: x->space = 1; break;
        case A_TEXT: x->text_open = 1; break;
        case A_CHAR: emit_char(x, (char)cm->arg, i); break;
        case A_CMD: emit_cmd(x, (math_cmd)cm->arg, 0, i, n + 1); break;
        case A_DEGREE: x->after_unit = 1; break;
        case A_LEFTRIGHT: {
            /* \left. and \right. are invisible delimiters */
            size_t j = skip_ws(s, len, next);
            if (j < len && s[j] == '.')
                next = j + 1;
            break;
        }
        }
        return next;
    }
    lex_letters(x, i + 1, n, 1);
    return i + 1 + n;
}

/* ---- Non-ASCII ---------------------------------------------------------------- */

static size_t lex_utf8(lexer *x, size_t i)
{
    const char *s = x->s;
    /* one valid character, or one byte of bytes that are not UTF-8 */
    size_t n = tern_utf8_len((const unsigned char *)s + i, x->len - i);
    if (!n)
        n = 1;
    unsigned a = (unsigned char)s[i], b = n > 1 ? (unsigned char)s[i + 1] : 0,
             c = n > 2 ? (unsigned char)s[i + 2] : 0;
    if (n == 2 && a == 0xC2 && b == 0xB0)
        x->after_unit = 1; /* ° */
    else if (n == 2 && a == 0xC2 && b == 0xA0)
        x->space = 1; /* no-break space */
    else if (n == 2 && a == 0xC2 && b == 0xB1)
        emit_cmd(x, CMD_PM, 0, i, 2);
    else if (n == 2 && a == 0xC2 && (b == 0xB2 || b == 0xB3)) {
        emit_char(x, '^', i);
        emit_char(x, b == 0xB2 ? '2' : '3', i);
    } else if (n == 2 && ((a == 0xC2 && b == 0xB7) || (a == 0xC3 && b == 0x97)))
        emit_char(x, '*', i);
    else if (n == 2 && a == 0xC3 && b == 0xB7)
        emit_char(x, '/', i);
    else if (n == 2 && a == 0xCF && b == 0x80)
        emit_cmd(x, CMD_PI, 0, i, 2);
    else if (n == 3 && a == 0xE2 && b == 0x88 && c == 0x9E)
        emit_cmd(x, CMD_INF, 0, i, 3);
    else if (n == 3 && a == 0xE2 && ((b == 0x88 && c == 0x92) || (b == 0x80 && c == 0x93)))
        emit_char(x, '-', i);
    else if (n == 3 && a == 0xE2 && b == 0x88 && c == 0x9A)
        emit_cmd(x, CMD_SQRT, 0, i, 3);
    else if (n == 3 && a == 0xE2 && b == 0x89 && c == 0xA4)
        emit_cmd(x, CMD_LE, 0, i, 3);
    else if (n == 3 && a == 0xE2 && b == 0x89 && c == 0xA5)
        emit_cmd(x, CMD_GE, 0, i, 3);
    else if (n == 3 && a == 0xE2 && b == 0x89 && c == 0xA0)
        emit_cmd(x, CMD_NE, 0, i, 3);
    else if (n == 3 && a == 0xE2 && b == 0x89 && c == 0x88)
        emit_cmd(x, CMD_APPROX, 0, i, 3); /* ≈ */
    else if (n == 3 && a == 0xE2 && b == 0x88 && c == 0xAA)
        emit_cmd(x, CMD_CUP, 0, i, 3);
    else if (n == 3 && a == 0xE2 && b == 0x88 && c == 0x85)
        emit_cmd(x, CMD_EMPTYSET, 0, i, 3);
    else if (n == 3 && a == 0xE2 && b == 0x88 && c == 0x88)
        emit_cmd(x, CMD_IN, 0, i, 3);
    else if (n == 3 && a == 0xE2 && b == 0x84 && c == 0x9D)
        emit_cmd(x, CMD_REALS, 0, i, 3); /* ℝ */
    else if (n == 3 && a == 0xE2 && b == 0x80 && (c == 0x89 || c == 0xAF)) {
        if (thousands_gap(x, i + 3))
            emit_char(x, ',', i); /* thin space between digit groups */
        else
            x->space = 1;
    } else
        emit(x, TK_BAD, 0, 0, i, n);
    return i + n;
}

/* ---- The loop ------------------------------------------------------------------- */

size_t math_lex(const char *s, size_t len, math_tok *out, size_t cap)
{
    lexer x = {.s = s, .len = len, .out = out, .cap = cap};
    size_t i = 0;
    while (i < len) {
        char c = s[i];
        if (math_is_space(c) || c == '~') {
            x.space = 1;
            i++;
        } else if (c == '$') {
            i++;
        } else if (c == '\\') {
            i = lex_command(&x, i);
        } else if (math_is_alpha(c)) {
            size_t n = letter_run(s, len, i);
            lex_letters(&x, i, n, 0);
            i += n;
        } else if ((unsigned char)c >= 0x80) {
            i = lex_utf8(&x, i);
        } else if (c == '%') {
            emit_cmd(&x, CMD_PERCENT, 0, i, 1);
            i++;
        } else if (x.after_unit && unit_power(&x, i)) {
            i += unit_power(&x, i); /* after_unit stays set */
        } else if (c == '^' && degree_power(s, len, i)) {
            i += degree_power(s, len, i);
            x.after_unit = 1;
        } else if (c == '{' && i + 2 < len && s[i + 1] == ',' && s[i + 2] == '}') {
            emit_char(&x, ',', i); /* 1{,}000 */
            i += 3;
        } else if (c == '{' && x.n && is_digit_tok(&x.out[x.n - 1]) &&
                   skip_ws(s, len, i + 1) < len && s[skip_ws(s, len, i + 1)] == ',' &&
                   skip_ws(s, len, skip_ws(s, len, i + 1) + 1) < len &&
                   s[skip_ws(s, len, skip_ws(s, len, i + 1) + 1)] == '}') {
            /* "14 {, }916": the same comma, spaced; the digits go on */
            x.space = 0;
            emit_char(&x, ',', i);
            i = skip_ws(s, len, skip_ws(s, len, skip_ws(s, len, i + 1) + 1) + 1);
        } else if (c == '{') {
            int text = x.text_open;
            emit_char(&x, '{', i);
            if (text)
                x.out[x.n - 1].sub |= MATH_TOK_TEXT;
            i++;
        } else if (c == '}' && x.n && x.out[x.n - 1].kind == TK_CHAR && x.out[x.n - 1].c == '{') {
            /* an emptied group ("\text{ cm}") vanishes; a unit before it stays the last thing */
            x.n--;
            i++;
        } else if (c == '}' && x.n >= 2 && x.out[x.n - 1].kind == TK_CMD &&
                   x.out[x.n - 1].c == CMD_OR && x.out[x.n - 2].kind == TK_CHAR &&
                   x.out[x.n - 2].c == '{') {
            /* "\text{ or }" is the separator alone */
            x.out[x.n - 2] = x.out[x.n - 1];
            x.n--;
            i++;
        } else if (c == '/' && x.after_unit) {
            /* "km/h": a unit over a unit */
            size_t j = skip_ws(s, len, i + 1), n = letter_run(s, len, j);
            if (n && find_name(units, N_UNITS, s + j, n) >= 0)
                i = j + n;
            else {
                emit_char(&x, '/', i);
                i++;
            }
        } else if (c == '&' && x.matrix) {
            emit_char(&x, ',', i); /* a matrix's next column */
            i++;
        } else if (math_is_digit(c) || strchr("+-*/^_=<>()[]{},;.|!':", c)) {
            emit_char(&x, c, i);
            i++;
        } else {
            emit(&x, TK_BAD, 0, 0, i, 1);
            i++;
        }
    }
    return x.n;
}

/* ---- Comparing streams ---------------------------------------------------------- */

static int same_word(const char *a, const char *b, size_t n)
{
    for (size_t k = 0; k < n; k++)
        if (math_lower(a[k]) != math_lower(b[k]))
            return 0;
    return 1;
}

static int is_e(const math_tok *t) { return t->kind == TK_CHAR && (t->c == 'e' || t->c == 'E'); }

/* Whether whitespace before token k changes its meaning: around the exponent
 * of scientific notation ("2e+1" is 20, "2e + 1" is 2e + 1) and around commas
 * ("100,200" is a number, "100, 200" two). */
static int spacing_matters(const math_tok *t, size_t k)
{
    if (t[k].kind != TK_CHAR)
        return 0;
    if (is_e(&t[k]) || (k > 0 && is_e(&t[k - 1])) || t[k].c == ',' ||
        (k > 0 && t[k - 1].kind == TK_CHAR && t[k - 1].c == ','))
        return 1;
    return k > 1 && (t[k - 1].c == '+' || t[k - 1].c == '-') && t[k - 1].kind == TK_CHAR &&
           is_e(&t[k - 2]);
}

int math_tokens_equal(const math_tok *a, size_t na, const char *sa, const math_tok *b, size_t nb,
                      const char *sb)
{
    if (na != nb)
        return 0;
    for (size_t k = 0; k < na; k++) {
        const math_tok *x = &a[k], *y = &b[k];
        if (x->kind != y->kind)
            return 0;
        if (x->kind == TK_WORD || x->kind == TK_BAD) {
            if (x->len != y->len)
                return 0;
            if (x->kind == TK_WORD ? !same_word(sa + x->pos, sb + y->pos, x->len)
                                   : memcmp(sa + x->pos, sb + y->pos, x->len) != 0)
                return 0;
        } else if (x->c != y->c || (x->kind == TK_CMD && x->sub != y->sub)) {
            return 0;
        } else if (x->kind == TK_CHAR && (spacing_matters(a, k) || spacing_matters(b, k)) &&
                   (x->sub & MATH_TOK_SPACED) != (y->sub & MATH_TOK_SPACED)) {
            return 0;
        }
    }
    return 1;
}

int math_tokens_have_word(const math_tok *t, size_t n)
{
    for (size_t k = 0; k < n; k++)
        if (t[k].kind == TK_WORD)
            return 1;
    return 0;
}
