/* extract.c: the answer forms of a response, found in priority order (see extract.h). */
#include "extract.h"

#include <string.h>

#include "../common/reward_boxed.h"
#include "ascii.h"
#include "number.h"

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

static int take_boxed(void *out, const char *s, size_t b, size_t e)
{
    return take(s, b, e, out);
}

/* The last balanced \boxed{X} or \fbox{X} with something left once cleaned
 * (../common/reward_boxed.h). */
static int find_boxed(const char *s, size_t len, math_answer *out)
{
    return reward_find_boxed(s, len, opens_boxed, take_boxed, out);
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
        if (take(s, q, e, out))
            return 1;
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
    /* "4 + 6 = 10": the result after the last '=', unless the left side is
     * a lone variable ("x = 10", which the comparison reads as 10 anyway). */
    size_t eq = n;
    for (size_t i = 0; i < n; i++)
        if (t[i] == '=')
            eq = i;
    if (eq < n) {
        const char *l = t;
        size_t ln = eq;
        math_answer_clean(&l, &ln);
        if (!(ln == 1 && math_is_alpha(l[0])) && take(t, eq + 1, n, out))
            return 1;
    }
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

static int find_last_number(const char *s, size_t len, math_answer *out)
{
    int found = 0;
    size_t i = 0;
    while (i < len) {
        char c = s[i];
        if (math_is_digit(c) || c == '.' || c == '\\' ||
            ((c == '-' || c == '+') && sign_allowed(s, i))) {
            math_number n;
            size_t k = math_number_scan(s, len, i, &n);
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
        case MATH_FORM_NONE: break;
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
