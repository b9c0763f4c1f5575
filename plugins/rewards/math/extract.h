/* extract.h: finding the final answer in a response (private to the math plugin).
 *
 * Forms, in priority order; the first form present wins, and within a form
 * the last occurrence in the text wins (models restate and correct
 * themselves, the final statement is the answer):
 *   1. \boxed{X}           balanced braces, nesting allowed; unbalanced is no match
 *   2. #### X              X is the rest of the line
 *   3. ... answer is X     case-insensitive ("The answer is", "The final answer
 *                          is"), optional ':'; X runs to the end of the sentence
 *                          ('.', '!' or '?' before whitespace) or of the line
 *   4. the last number     (see number.h), only when asked for
 * An occurrence whose X is empty once cleaned does not count.
 *
 * Every scan reads only s[0..len) and does work linear in len, whatever the
 * bytes are (invalid UTF-8, NULs, a megabyte of digits or of braces). */
#ifndef MATH_EXTRACT_H
#define MATH_EXTRACT_H

#include <stddef.h>

/* How an answer was found; also bits of the `forms` mask of math_extract. */
typedef enum math_form {
    MATH_FORM_NONE = 0,
    MATH_FORM_BOXED = 1,
    MATH_FORM_HASHES = 2,
    MATH_FORM_ANSWER_IS = 4,
    MATH_FORM_LAST_NUMBER = 8
} math_form;

/* The forms that show the model meant to state an answer (the format component). */
#define MATH_FORMS_EXPLICIT (MATH_FORM_BOXED | MATH_FORM_HASHES | MATH_FORM_ANSWER_IS)

typedef struct math_answer {
    math_form form;
    const char *text; /* into the scanned text, cleaned (math_answer_clean) */
    size_t len;
} math_answer;

/* Look for the forms whose bits are in `forms`, in priority order. Returns the
 * form found (also in out->form), MATH_FORM_NONE when none matched. */
math_form math_extract(const char *s, size_t len, unsigned forms, math_answer *out);

/* How a reason names the form: "boxed answer", "#### answer", ... */
const char *math_form_label(math_form form);

#endif
