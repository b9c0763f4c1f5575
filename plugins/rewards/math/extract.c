/* extract.c: the answer forms of a response, found in priority order (see extract.h). */
#include "extract.h"

#include <string.h>

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

/* Whether the '{' at s[i] is the argument of \boxed (blanks allowed between). */
static int opens_boxed(const char *s, size_t i)
{
    size_t j = i;
    while (j > 0 && math_is_space(s[j - 1]))
        j--;
    return j >= 6 && memcmp(s + j - 6, "\\boxed", 6) == 0;
}

/* The '}' matching the '{' at s[open]; the caller knows there is one. */
static size_t matching_brace(const char *s, size_t len, size_t open)
{
    size_t depth = 0;
    for (size_t i = open; i < len; i++) {
        if (s[i] == '{')
            depth++;
        else if (s[i] == '}' && --depth == 0)
            return i;
    }
    return len; /* not reached */
}

/* Scanning backwards, a '{' is balanced exactly when some '}' to its right is
 * still unmatched, so one counter finds the last balanced \boxed{ with no
 * stack, and only that one is then matched forwards: linear in len even for
 * a megabyte of unclosed "\boxed{". */
static int find_boxed(const char *s, size_t len, math_answer *out)
{
    size_t unmatched = 0; /* '}' to the right of i that no '{' has claimed */
    for (size_t i = len; i-- > 0;) {
        if (s[i] == '}') {
            unmatched++;
            continue;
        }
        if (s[i] != '{' || unmatched == 0)
            continue;
        unmatched--;
        /* An empty box holds no braces, so skipping it costs only its own
         * bytes. */
        if (opens_boxed(s, i) && take(s, i + 1, matching_brace(s, len, i), out))
            return 1;
    }
    return 0;
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

/* "answer" + blanks + "is" at s[i], as whole words; returns the index after
 * "is", or 0. */
static size_t answer_is_at(const char *s, size_t len, size_t i)
{
    if (!starts_with_word(s, len, i, "answer") || (i > 0 && math_is_alpha(s[i - 1])))
        return 0;
    size_t q = i + 6, blanks = q;
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
        while (q < len && math_is_blank(s[q]))
            q++;
        /* "The answer is:" may put the answer on the next line. */
        if (q < len && s[q] == ':') {
            q++;
            while (q < len && math_is_space(s[q]))
                q++;
        }
        size_t e = q;
        while (e < len && s[e] != '\n' && !ends_sentence(s, len, e))
            e++;
        if (take(s, q, e, out))
            return 1;
    }
    return 0;
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

math_form math_extract(const char *s, size_t len, unsigned forms, math_answer *out)
{
    memset(out, 0, sizeof *out);
    if (!s)
        return MATH_FORM_NONE;
    if ((forms & MATH_FORM_BOXED) && find_boxed(s, len, out))
        out->form = MATH_FORM_BOXED;
    else if ((forms & MATH_FORM_HASHES) && find_hashes(s, len, out))
        out->form = MATH_FORM_HASHES;
    else if ((forms & MATH_FORM_ANSWER_IS) && find_answer_is(s, len, out))
        out->form = MATH_FORM_ANSWER_IS;
    else if ((forms & MATH_FORM_LAST_NUMBER) && find_last_number(s, len, out))
        out->form = MATH_FORM_LAST_NUMBER;
    return out->form;
}

const char *math_form_label(math_form form)
{
    switch (form) {
    case MATH_FORM_BOXED:
        return "boxed answer";
    case MATH_FORM_HASHES:
        return "#### answer";
    case MATH_FORM_ANSWER_IS:
        return "stated answer";
    case MATH_FORM_LAST_NUMBER:
        return "last number";
    case MATH_FORM_NONE:
        break;
    }
    return "no answer";
}
