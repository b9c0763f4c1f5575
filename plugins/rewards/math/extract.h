/* extract.h: finding the final answer in a response (private to the math plugin).
 *
 * The forms, each with its setting name; a response is searched for them in
 * a configured order (math.c), the first form present wins, and within a form
 * the last occurrence in the text wins (models restate and correct
 * themselves, the final statement is the answer):
 *   boxed        \boxed{X} or \fbox{X}, balanced braces, nesting allowed;
 *                unbalanced is no match
 *   hashes       #### X: X is the rest of the line
 *   answer_is    "... answer is X" or "answer: X", case-insensitive ("The
 *                final answer is", "**Answer:**"); X runs to the end of the
 *                sentence ('.', '!' or '?' before whitespace) or of the line
 *   final_line   the last non-blank line, when it reads as maths: at most
 *                MATH_FINAL_LINE_MAX bytes, and either wrapped in $...$, \[...\]
 *                or \(...\), or with no run of two letters outside a LaTeX
 *                command ("x = 5", "\frac{1}{2}", but not "So 5"); the whole
 *                line, which the comparison reads ("4 + 6 = 10" is 10
 *                against a gold 10, "3x - 2y + 5 = 0" stays an equation)
 *   last_math    the last maths span, $...$, $$...$$, \(...\) or \[...\]
 *                (a $...$ closes on its own line), when no number follows
 *                it: "So $y \leq 2$ holds." gives y \leq 2
 *   last_number  the last number (see number.h), not one inside a word
 *                ("QX7Z" holds none)
 * boxed joins boxes written one after the other into one list: "$\boxed{3}$
 * and $\boxed{5}$" gives "3, 5". Two boxes join when only blanks, '$',
 * commas, semicolons, "and", \quad, a short \text{...} or maths delimiters
 * stand between them ("First \boxed{1}, then \boxed{2}" is 2: a response
 * boxes its working and its corrections). A gold answer's boxes also join
 * across fewer than MATH_BOX_NEAR bytes of anything, or fewer than
 * MATH_BOX_FAR bytes holding "and", "or", ',' or ';' ("\boxed{1} papers and
 * \boxed{2} bins" is "1, 2"; "\boxed{1} no no no no no \boxed{2}" is 2),
 * math-verify's rule: an author boxes only answers. A box that restates a
 * later one adds nothing to the list. An answer_is answer that is a sentence (a word
 * of two letters or more outside maths and commands: "the area of $PQRS$ is
 * 48") is what last_math or last_number finds in it, when either does.
 * A "final answer is X" statement written after the last box is the answer
 * instead (the Minerva format's "... = \boxed{255}$ ... Final Answer: The
 * final answer is $10,455$. I hope it is correct."): the last statement wins,
 * when answer_is is among the forms tried.
 * An occurrence whose X is empty once cleaned does not count.
 *
 * Every scan reads only s[0..len) and does work linear in len, whatever the
 * bytes are (invalid UTF-8, NULs, a megabyte of digits or of braces). */
#ifndef MATH_EXTRACT_H
#define MATH_EXTRACT_H

#include <stddef.h>

/* How an answer was found. */
typedef enum math_form {
    MATH_FORM_NONE = 0,
    MATH_FORM_BOXED = 1,
    MATH_FORM_HASHES = 2,
    MATH_FORM_ANSWER_IS = 4,
    MATH_FORM_FINAL_LINE = 8,
    MATH_FORM_LAST_NUMBER = 16,
    MATH_FORM_LAST_MATH = 32
} math_form;

/* The forms that show the model meant to state an answer (the format component). */
#define MATH_FORMS_EXPLICIT (MATH_FORM_BOXED | MATH_FORM_HASHES | MATH_FORM_ANSWER_IS)
#define MATH_N_FORMS 6
#define MATH_FINAL_LINE_MAX 200
/* The most boxes joined into one answer, and the bytes they may take. */
#define MATH_JOINED_BOXES 8
#define MATH_JOINED_MAX 512
/* Boxes closer than NEAR bytes join; closer than FAR, with a separator word. */
#define MATH_BOX_NEAR 10
#define MATH_BOX_FAR 70

typedef struct math_answer {
    math_form form;
    const char *text; /* into the scanned text, cleaned (math_answer_clean),
                         or into joined */
    size_t len;
    char joined[MATH_JOINED_MAX]; /* boxes joined into a list */
    size_t end; /* boxed: the index in the scanned text after the last box */
} math_answer;

/* Look for the forms order[0..n) in that order. Returns the form found (also
 * in out->form), MATH_FORM_NONE when none matched. */
math_form math_extract(const char *s, size_t len, const math_form *order, size_t n,
                       math_answer *out);

/* A gold answer: boxed (its boxes joined loosely, see above), hashes, then
 * answer_is. Returns the form found, MATH_FORM_NONE when none matched. */
math_form math_extract_gold(const char *s, size_t len, math_answer *out);

/* The form a setting names ("boxed", "hashes", "answer_is", "final_line",
 * "last_number"), MATH_FORM_NONE for another name. */
math_form math_form_named(const char *name);

/* How a reason names the form: "boxed answer", "#### answer", ... */
const char *math_form_label(math_form form);

#endif
