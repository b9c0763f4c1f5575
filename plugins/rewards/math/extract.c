/* extract.c: the answer forms of a response, found in priority order (see extract.h). */
#include "extract.h"

#include <string.h>

#include "../common/reward_boxed.h"
#include "ascii.h"
#include "number.h"

static void sentence_answer(math_answer *out);

/* Clean s[b..e) as an answer; 1 and *out set when something is left. */
static int take(const char *s, size_t b, size_t e, math_answer *out)
{
    const char *t = s + b;
    size_t n = e - b;
    math_answer_clean(&t, &n);
    if (!n)
        return 0;
    out->text = t;
    out->len = n;
    return 1;
}

/* ---- \boxed{X} --------------------------------------------------------------- */

/* Whether the '{' at s[i] is the argument of \boxed or \fbox (blanks allowed
 * between). */
static int opens_boxed(const char *s, size_t i)
{
    size_t j = i;
    while (j > 0 && math_is_space(s[j - 1]))
        j--;
    return (j >= 6 && memcmp(s + j - 6, "\\boxed", 6) == 0) ||
           (j >= 5 && memcmp(s + j - 5, "\\fbox", 5) == 0);
}

/* A box found: its answer, and where its argument's braces are. */
typedef struct boxed_take {
    math_answer *a;
    size_t open, close;
} boxed_take;

static int take_boxed(void *out, const char *s, size_t b, size_t e)
{
    boxed_take *t = out;
    if (!take(s, b, e, t->a))
        return 0;
    t->open = b - 1, t->close = e;
    return 1;
}

/* Where the box whose argument opens at s[open] starts: its backslash. */
static size_t box_start(const char *s, size_t open)
{
    size_t j = open;
    while (j > 0 && math_is_space(s[j - 1]))
        j--;
    return j >= 6 && memcmp(s + j - 6, "\\boxed", 6) == 0 ? j - 6 : j - 5;
}

/* The box that ends right before s[end] (only blanks, '$', ',', ';' or the
 * word "and" between): its argument's '{' in *open and '}' in *close. */
/* Whether s[b..e) is "and" as a word. */
static int is_and(const char *s, size_t b, size_t e)
{
    return e - b == 3 && math_lower(s[b]) == 'a' && math_lower(s[b + 1]) == 'n' &&
           math_lower(s[b + 2]) == 'd';
}

/* One separator between boxes that ends at s[j]: blanks, '$', ',', ';',
 * "and", a spacing command (\quad, \qquad, \, \;), a maths delimiter
 * (\( \) \[ \]), a \text{...} of nothing but "and" or a comma, or the name
 * the next box is the value of ("y_2 =", one or two letters). Returns
 * where it starts, or j when there is none. */
static size_t separator_before(const char *s, size_t j)
{
    if (j > 0 && (math_is_space(s[j - 1]) || s[j - 1] == '$' || s[j - 1] == ',' ||
                  s[j - 1] == ';'))
        return j - 1;
    if (j >= 3 && is_and(s, j - 3, j) && (j == 3 || !math_is_alpha(s[j - 4])))
        return j - 3;
    if (j >= 2 && s[j - 2] == '\\' && strchr(",;()[]", s[j - 1]))
        return j - 2;
    if (j > 0 && s[j - 1] == '=') { /* "y_2 = ": the next box's name */
        size_t k = j - 1;
        while (k > 0 && math_is_blank(s[k - 1]))
            k--;
        size_t e = k;
        if (k > 0 && s[k - 1] == '}') { /* y_{2} */
            while (k > 0 && e - k < 8 && s[k - 1] != '{')
                k--;
            k = k >= 2 && s[k - 1] == '{' && s[k - 2] == '_' ? k - 2 : e;
        } else if (k >= 2 && s[k - 2] == '_' && (math_is_digit(s[k - 1]) || math_is_alpha(s[k - 1])))
            k -= 2; /* y_2 */
        size_t n = k;
        while (n > 0 && k - n < 2 && math_is_alpha(s[n - 1]))
            n--;
        if (n < k && (n == 0 || (!math_is_alpha(s[n - 1]) && s[n - 1] != '\\')))
            return n;
    }
    size_t k = j;
    while (k > 0 && math_is_alpha(s[k - 1]))
        k--;
    if (k > 0 && s[k - 1] == '\\' && ((j - k == 4 && memcmp(s + k, "quad", 4) == 0) ||
                                       (j - k == 5 && memcmp(s + k, "qquad", 5) == 0)))
        return k - 1;
    /* \text{ and }, \text{ for part (a) and }: words inside the maths */
    if (j > 0 && s[j - 1] == '}') {
        size_t o = j - 1;
        while (o > 0 && s[o - 1] != '{' && s[o - 1] != '}' && j - o < 48)
            o--;
        if (o == 0 || s[o - 1] != '{')
            return j;
        size_t c = o - 1; /* the '{' */
        size_t n = c;
        while (n > 0 && math_is_alpha(s[n - 1]))
            n--;
        if (n > 0 && s[n - 1] == '\\' &&
            ((c - n == 4 && memcmp(s + n, "text", 4) == 0) ||
             (c - n == 4 && memcmp(s + n, "mbox", 4) == 0) ||
             (c - n == 6 && memcmp(s + n, "textrm", 6) == 0)))
            return n - 1;
    }
    return j;
}

/* Whether s[j - 1] is the '}' closing a box's argument: its '{' in *open. */
static int box_closes_at(const char *s, size_t j, size_t *open)
{
    if (j == 0 || s[j - 1] != '}')
        return 0;
    /* its '{', within a box's length: a long run of braces is no box */
    size_t depth = 0, i = j;
    while (i-- > 0 && j - i <= MATH_JOINED_MAX) {
        if (s[i] == '}')
            depth++;
        else if (s[i] == '{' && --depth == 0)
            break;
    }
    if (i == (size_t)-1 || j - i > MATH_JOINED_MAX || s[i] != '{' || !opens_boxed(s, i))
        return 0;
    *open = i;
    return 1;
}

/* Whether the text s[b..e) between two boxes joins them: under
 * MATH_BOX_NEAR bytes of anything, or under MATH_BOX_FAR bytes holding
 * "and", "or" (as words), ',' or ';' (math-verify's rule, so that the two
 * agree on "\\boxed{1} papers and \\boxed{2} bins"). */
static int joins_boxes(const char *s, size_t b, size_t e)
{
    if (e - b < MATH_BOX_NEAR)
        return 1;
    if (e - b >= MATH_BOX_FAR)
        return 0;
    for (size_t i = b; i < e; i++) {
        if (s[i] == ',' || s[i] == ';')
            return 1;
        if (math_is_alpha(s[i]) && (i == b || !(math_is_alpha(s[i - 1]) || math_is_digit(s[i - 1])))) {
            size_t n = 0;
            while (i + n < e && (math_is_alpha(s[i + n]) || math_is_digit(s[i + n])))
                n++;
            if (is_and(s, i, i + n) ||
                (n == 2 && math_lower(s[i]) == 'o' && math_lower(s[i + 1]) == 'r'))
                return 1;
            i += n - 1;
        }
    }
    return 0;
}

/* The box written before the one that starts at s[end] and joined to it:
 * its argument's '{' in *open and '}' in *close. loose: a gold answer's
 * boxes, which join by joins_boxes as well as by separators. */
static int box_before(const char *s, size_t end, int loose, size_t *open, size_t *close)
{
    size_t j = end;
    for (size_t k; (k = separator_before(s, j)) != j;)
        j = k;
    if (box_closes_at(s, j, open)) {
        *close = j - 1;
        return 1;
    }
    /* the nearest box before, if the words between join them */
    for (j = end; loose && j > 0 && end - j < MATH_BOX_FAR; j--)
        if (box_closes_at(s, j, open)) {
            *close = j - 1;
            return joins_boxes(s, j, end);
        }
    return 0;
}

/* Whether the cleaned argument of the box at open..close is t[0..tl). */
static int box_says(const char *s, size_t open, size_t close, const char *t, size_t tl)
{
    const char *u = s + open + 1;
    size_t ul = close - open - 1;
    math_answer_clean(&u, &ul);
    return ul == tl && memcmp(u, t, tl) == 0;
}

/* The last balanced \boxed{X} or \fbox{X} with something left once cleaned
 * (../common/reward_boxed.h), with the boxes written before it and joined
 * to it (see extract.h) as one list; loose as in box_before. */
static int find_boxed_in(const char *s, size_t len, int loose, math_answer *out)
{
    boxed_take last = {.a = out};
    if (!reward_find_boxed(s, len, opens_boxed, take_boxed, &last))
        return 0;
    out->end = last.close + 1;
    /* the boxes before it, last first */
    size_t open[MATH_JOINED_BOXES], close[MATH_JOINED_BOXES], n = 0;
    size_t at = box_start(s, last.open);
    while (n < MATH_JOINED_BOXES - 1) {
        size_t o, c;
        if (!box_before(s, at, loose, &o, &c))
            break;
        open[n] = o, close[n] = c, n++;
        at = box_start(s, o);
    }
    if (n == 0)
        return 1;
    /* "a, b, ..., last" in joined, while it fits; a box that restates one
     * after it adds nothing */
    size_t used = 0;
    char *j = out->joined;
    for (size_t k = n; k-- > 0;) {
        const char *t = s + open[k] + 1;
        size_t tl = close[k] - open[k] - 1;
        math_answer_clean(&t, &tl);
        int again = box_says(s, last.open, last.close, t, tl);
        for (size_t q = k; q-- > 0 && !again;)
            again = box_says(s, open[q], close[q], t, tl);
        if (!tl || again)
            continue;
        if (used + tl + 2 + out->len >= MATH_JOINED_MAX)
            return 1; /* too long to join: the last box alone */
        memcpy(j + used, t, tl);
        used += tl;
        j[used++] = ',', j[used++] = ' ';
    }
    if (used == 0)
        return 1;
    memcpy(j + used, out->text, out->len);
    used += out->len;
    out->text = j;
    out->len = used;
    return 1;
}

static int find_boxed(const char *s, size_t len, math_answer *out)
{
    return find_boxed_in(s, len, 0, out);
}

/* ---- #### X ---------------------------------------------------------------- */

static int find_hashes(const char *s, size_t len, math_answer *out)
{
    if (len < 4)
        return 0;
    for (size_t i = len - 3; i-- > 0;) {
        /* In "#####" only the last four hashes are the marker. */
        if (memcmp(s + i, "####", 4) != 0 || (i + 4 < len && s[i + 4] == '#'))
            continue;
        size_t e = i + 4;
        while (e < len && s[e] != '\n')
            e++;
        /* An empty rest holds no later marker, so failed tries never overlap. */
        if (take(s, i + 4, e, out))
            return 1;
    }
    return 0;
}

/* ---- ... answer is X ---------------------------------------------------------- */

/* Case-insensitive: does s[i..len) start with the lower-case word `w`? */
static int starts_with_word(const char *s, size_t len, size_t i, const char *w)
{
    size_t n = strlen(w);
    if (len - i < n)
        return 0;
    for (size_t k = 0; k < n; k++)
        if (math_lower(s[i + k]) != w[k])
            return 0;
    return 1;
}

/* A sentence ends at '.', '!' or '?' followed by whitespace or the end; a
 * '.' between digits ("3.5") does not end it. */
static int ends_sentence(const char *s, size_t len, size_t i)
{
    char c = s[i];
    return (c == '.' || c == '!' || c == '?') && (i + 1 == len || math_is_space(s[i + 1]));
}

/* "answer" + blanks + "is", or "answer" + optional '*' + ':', at s[i], as
 * whole words; returns the index after "is" or ':', or 0. */
static size_t answer_is_at(const char *s, size_t len, size_t i)
{
    if (!starts_with_word(s, len, i, "answer") || (i > 0 && math_is_alpha(s[i - 1])))
        return 0;
    size_t q = i + 6, blanks = q;
    while (q < len && s[q] == '*') /* "**Answer:**" */
        q++;
    if (q < len && s[q] == ':')
        return q + 1;
    q = blanks;
    while (q < len && math_is_blank(s[q]))
        q++;
    if (q == blanks || !starts_with_word(s, len, q, "is"))
        return 0;
    q += 2;
    if (q < len && (math_is_alpha(s[q]) || s[q] == '\'')) /* "isn't", "issue" */
        return 0;
    return q;
}

static int find_answer_is(const char *s, size_t len, math_answer *out)
{
    for (size_t i = len; i-- > 0;) {
        size_t q = answer_is_at(s, len, i);
        if (!q)
            continue;
        int colon = s[q - 1] == ':';
        while (q < len && (math_is_blank(s[q]) || s[q] == '*'))
            q++;
        if (q < len && s[q] == ':') {
            q++;
            colon = 1;
        }
        /* After a colon the answer may start on the next line. */
        while (colon && q < len && (math_is_space(s[q]) || s[q] == '*'))
            q++;
        size_t e = q;
        while (e < len && s[e] != '\n' && !ends_sentence(s, len, e))
            e++;
        if (take(s, q, e, out)) {
            sentence_answer(out);
            return 1;
        }
    }
    return 0;
}

/* A "final answer is X" stated in s[from..len), X a maths span ("is
 * $10,455$", not "is 13 if we count the box"): 1 with X in *out. */
static int final_answer_after(const char *s, size_t len, size_t from, math_answer *out)
{
    for (size_t i = len; i-- > from + 6;) {
        if (!starts_with_word(s, len, i, "answer") || !starts_with_word(s, len, i - 6, "final ") ||
            (i > from + 6 && math_is_alpha(s[i - 7])))
            continue;
        size_t q = answer_is_at(s, len, i);
        while (q && q < len && (math_is_blank(s[q]) || s[q] == '*' || s[q] == ':'))
            q++;
        int span = q && q + 1 < len &&
                   (s[q] == '$' || (s[q] == '\\' && (s[q + 1] == '(' || s[q + 1] == '[')));
        return span && find_answer_is(s + i, len - i, out);
    }
    return 0;
}

/* ---- the final line ----------------------------------------------------------- */

/* Whether a line reads as maths rather than prose (see extract.h). */
static int reads_as_maths(const char *s, size_t len)
{
    if ((len >= 2 && s[0] == '$' && s[len - 1] == '$') ||
        (len >= 4 && s[0] == '\\' && (s[1] == '[' || s[1] == '(') && s[len - 2] == '\\' &&
         (s[len - 1] == ']' || s[len - 1] == ')')))
        return 1;
    int solid = 0;
    long depth = 0; /* brackets must balance: "\\boxed{42" is a cut-off line */
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '{' || s[i] == '(' || s[i] == '[')
            depth++;
        else if ((s[i] == '}' || s[i] == ')' || s[i] == ']') && --depth < 0)
            return 0;
        if (s[i] == '\\') { /* a command's name is not prose */
            while (i + 1 < len && math_is_alpha(s[i + 1]))
                i++;
            solid = 1;
        } else if (math_is_alpha(s[i]) && i + 1 < len && math_is_alpha(s[i + 1])) {
            return 0;
        } else if (math_is_digit(s[i]) || math_is_alpha(s[i])) {
            solid = 1;
        } else if (s[i] == ':' || s[i] == '?' ||
                   ((unsigned char)s[i] < 0x20 && !math_is_space(s[i]))) {
            return 0;
        }
    }
    return solid && depth == 0;
}

static int find_final_line(const char *s, size_t len, math_answer *out)
{
    size_t e = len;
    while (e > 0 && math_is_space(s[e - 1]))
        e--;
    size_t b = e;
    while (b > 0 && s[b - 1] != '\n') {
        if (e - b >= MATH_FINAL_LINE_MAX)
            return 0; /* too long to be an answer alone: stop looking */
        b--;
    }
    const char *t = s + b;
    size_t n = e - b;
    math_answer_clean(&t, &n);
    if (!n || !reads_as_maths(s + b, e - b))
        return 0;
    /* a box that was no answer ("\\boxed{}") does not make its line one */
    for (size_t i = 0; i < n; i++)
        if (t[i] == '\\' && ((n - i > 5 && memcmp(t + i + 1, "boxed", 5) == 0) ||
                             (n - i > 4 && memcmp(t + i + 1, "fbox", 4) == 0)))
            return 0;
    /* The whole line: the comparison reads "4 + 6 = 10" as 10 against a gold
     * that is no equation, and "3x - 2y + 5 = 0" as the equation it is. */
    out->text = t;
    out->len = n;
    return 1;
}

/* ---- the last number -------------------------------------------------------------- */

/* A '+' or '-' is a sign unless it follows an operand: "x = -3" is minus
 * three, "5-3" is a subtraction whose last number is 3. */
static int sign_allowed(const char *s, size_t i)
{
    if (i == 0)
        return 1;
    char p = s[i - 1];
    return !(math_is_alpha(p) || math_is_digit(p) || p == ')' || p == ']' || p == '}');
}

/* Whether the digit at s[i] is inside a word ("QX7Z", "H2O"): a letter
 * right before it that belongs to no command (\times3 is 3). */
static int in_word(const char *s, size_t i)
{
    if (i == 0 || !math_is_alpha(s[i - 1]))
        return 0;
    size_t j = i - 1;
    while (j > 0 && math_is_alpha(s[j - 1]))
        j--;
    return !(j > 0 && s[j - 1] == '\\');
}

static int find_last_number(const char *s, size_t len, math_answer *out)
{
    int found = 0;
    size_t i = 0;
    while (i < len) {
        char c = s[i];
        if (math_is_digit(c) && in_word(s, i)) {
            while (i < len && (math_is_digit(s[i]) || math_is_alpha(s[i])))
                i++; /* the rest of the word */
            continue;
        }
        if (math_is_digit(c) || c == '.' || c == '\\' ||
            ((c == '-' || c == '+') && sign_allowed(s, i))) {
            math_number n;
            size_t k = math_number_scan(s, len, i, &n);
            /* "2,74": a decimal comma where the comma cannot group thousands
             * (math_number_parse reads it so) */
            if (k && !n.is_fraction && n.num.frac_len == 0 && n.num.int_len > 0 &&
                !memchr(n.num.int_part, ',', n.num.int_len) && i + k + 1 < len &&
                s[i + k] == ',' && math_is_digit(s[i + k + 1])) {
                size_t d = 0;
                while (i + k + 1 + d < len && math_is_digit(s[i + k + 1 + d]))
                    d++;
                int zero = n.num.int_len == 1 && n.num.int_part[0] == '0';
                if (d != 3 || zero || n.num.int_len > 3)
                    k += 1 + d;
            }
            if (k) {
                out->text = s + i;
                out->len = k;
                found = 1;
                i += k; /* a number is never rescanned from inside */
                continue;
            }
        }
        i++;
    }
    return found;
}

/* ---- the last maths span ---------------------------------------------------------- */

/* Where the closing `close` (clen bytes) of a span opened before s[from] is,
 * or len; a single '$' closes on its own line, and "\\$" is a dollar sign. */
static size_t span_close(const char *s, size_t len, size_t from, const char *close, size_t clen)
{
    for (size_t j = from; j + clen <= len; j++) {
        if (s[j] == '\\' && j + 1 < len && s[j + 1] == '$') {
            j++;
            continue;
        }
        if (clen == 1 && s[j] == '\n')
            return len;
        if (memcmp(s + j, close, clen) == 0)
            return j;
    }
    return len;
}

/* The last non-empty maths span of s[0..len): its contents [*b, *e) and the
 * index after its closing. Linear: a span that never closes ends the search
 * for its kind ($ only to its line's end). */
static int last_span(const char *s, size_t len, size_t *b, size_t *e, size_t *after)
{
    int found = 0, no_paren = 0, no_bracket = 0, no_double = 0;
    size_t i = 0;
    while (i < len) {
        const char *close = NULL;
        size_t open = 0, clen = 0;
        int *none = NULL;
        if (s[i] == '\\' && i + 1 < len && s[i + 1] == '$') {
            i += 2;
            continue;
        }
        if (s[i] == '\\' && i + 1 < len && s[i + 1] == '(' && !no_paren)
            close = "\\)", open = 2, clen = 2, none = &no_paren;
        else if (s[i] == '\\' && i + 1 < len && s[i + 1] == '[' && !no_bracket)
            close = "\\]", open = 2, clen = 2, none = &no_bracket;
        else if (s[i] == '$' && i + 1 < len && s[i + 1] == '$' && !no_double)
            close = "$$", open = 2, clen = 2, none = &no_double;
        else if (s[i] == '$')
            close = "$", open = 1, clen = 1;
        if (!close) {
            i++;
            continue;
        }
        size_t j = span_close(s, len, i + open, close, clen);
        if (j == len) {
            if (none)
                *none = 1;
            else /* an unclosed '$': nothing else opens on its line */
                while (i < len && s[i] != '\n')
                    i++;
            i += open;
            continue;
        }
        size_t k = i + open;
        while (k < j && math_is_space(s[k]))
            k++;
        if (k < j) {
            *b = i + open, *e = j, *after = j + clen;
            found = 1;
        }
        i = j + clen;
    }
    return found;
}

static int find_last_math(const char *s, size_t len, math_answer *out)
{
    size_t b, e, after;
    math_answer later;
    if (!last_span(s, len, &b, &e, &after) ||
        find_last_number(s + after, len - after, &later))
        return 0;
    return take(s, b, e, out);
}

/* Words in s[0..len): two letters in a row outside maths spans and command
 * names. */
static int has_words(const char *s, size_t len)
{
    int in_math = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '$') {
            in_math = !in_math;
        } else if (s[i] == '\\') {
            while (i + 1 < len && math_is_alpha(s[i + 1]))
                i++;
        } else if (!in_math && math_is_alpha(s[i]) && i + 1 < len && math_is_alpha(s[i + 1])) {
            return 1;
        }
    }
    return 0;
}

/* An answer sentence's maths: its last span or number, when it has one; a
 * number keeps a "percent" or "pct" after it ("20 percent" is 0.2). */
static void sentence_answer(math_answer *out)
{
    if (!has_words(out->text, out->len))
        return;
    math_answer in;
    if (find_last_math(out->text, out->len, &in)) {
        out->text = in.text, out->len = in.len;
    } else if (find_last_number(out->text, out->len, &in)) {
        size_t end = (size_t)(in.text - out->text) + in.len, k = end;
        while (k < out->len && math_is_blank(out->text[k]))
            k++;
        if (out->len - k >= 3 && (starts_with_word(out->text, out->len, k, "percent") ||
                                  starts_with_word(out->text, out->len, k, "pct")))
            end = k + (starts_with_word(out->text, out->len, k, "percent") ? 7 : 3);
        out->len = end - (size_t)(in.text - out->text);
        out->text = in.text;
    }
}

/* ---- the forms in order ------------------------------------------------------------ */

static const struct {
    math_form form;
    const char *name, *label;
} forms[MATH_N_FORMS] = {
    {MATH_FORM_BOXED, "boxed", "boxed answer"},
    {MATH_FORM_HASHES, "hashes", "#### answer"},
    {MATH_FORM_ANSWER_IS, "answer_is", "stated answer"},
    {MATH_FORM_FINAL_LINE, "final_line", "final line"},
    {MATH_FORM_LAST_NUMBER, "last_number", "last number"},
    {MATH_FORM_LAST_MATH, "last_math", "last maths span"},
};

math_form math_extract(const char *s, size_t len, const math_form *order, size_t n,
                       math_answer *out)
{
    memset(out, 0, sizeof *out);
    if (!s)
        return MATH_FORM_NONE;
    for (size_t k = 0; k < n; k++) {
        int found = 0;
        switch (order[k]) {
        case MATH_FORM_BOXED: found = find_boxed(s, len, out); break;
        case MATH_FORM_HASHES: found = find_hashes(s, len, out); break;
        case MATH_FORM_ANSWER_IS: found = find_answer_is(s, len, out); break;
        case MATH_FORM_FINAL_LINE: found = find_final_line(s, len, out); break;
        case MATH_FORM_LAST_NUMBER: found = find_last_number(s, len, out); break;
        case MATH_FORM_LAST_MATH: found = find_last_math(s, len, out); break;
        case MATH_FORM_NONE: break;
        }
        if (found && order[k] == MATH_FORM_BOXED) {
            for (size_t q = 0; q < n; q++) {
                math_answer f;
                memset(&f, 0, sizeof f);
                if (order[q] == MATH_FORM_ANSWER_IS && out->text != out->joined &&
                    final_answer_after(s, len, out->end, &f)) {
                    *out = f;
                    out->form = MATH_FORM_ANSWER_IS;
                    return out->form;
                }
            }
        }
        if (found) {
            out->form = order[k];
            return out->form;
        }
    }
    memset(out, 0, sizeof *out);
    return MATH_FORM_NONE;
}

math_form math_form_named(const char *name)
{
    for (size_t k = 0; k < MATH_N_FORMS; k++)
        if (strcmp(name, forms[k].name) == 0)
            return forms[k].form;
    return MATH_FORM_NONE;
}

const char *math_form_label(math_form form)
{
    for (size_t k = 0; k < MATH_N_FORMS; k++)
        if (forms[k].form == form)
            return forms[k].label;
    return "no answer";
}

math_form math_extract_gold(const char *s, size_t len, math_answer *out)
{
    memset(out, 0, sizeof *out);
    if (s && find_boxed_in(s, len, 1, out)) {
        out->form = MATH_FORM_BOXED;
        return out->form;
    }
    static const math_form rest[] = {MATH_FORM_HASHES, MATH_FORM_ANSWER_IS};
    return math_extract(s, len, rest, 2, out);
}
