/* choice.h: option letters and multi-select credit (private to the k12
 * plugin). A set of options is a bit mask: bit 0 is A, ..., bit 7 is H.
 *
 * An answer of option letters, read from normalised text (normalize.h, so
 * full-width letters and brackets are ASCII already):
 *   - an optional "option(s)", "choice(s)", "选项", "选择" or "选" first;
 *   - one or more items separated by ',' ';' '/' '&' '+' '、' "and" "和" "与"
 *     "及" "以及" or spaces; an item is a run of distinct capital letters A-H
 *     ("B", "AC") not followed by a letter or digit, in optional brackets
 *     ( ) [ ] { } < > 【 】 〔 〕 「 」 〈 〉 and Markdown '*';
 *   - a lower-case letter a-h counts only alone, with nothing but
 *     punctuation after it ("b." yes, "a triangle" no);
 *   - the same letter twice ("A, A", "AA") is no answer.
 * What may follow the letters depends on where they were read:
 *   - an answer statement or a box: anything ("B. 12 cm", "B，因为…",
 *     "C because");
 *   - a bare last line: punctuation only, or after a label mark ('.', ':',
 *     ')', '、' or a closing bracket) anything ("B. 12 cm", "(B) 12 cm"), so
 *     "Option A is tempting, but B" is no answer;
 *   - a gold answer: punctuation only. */
#ifndef K12_CHOICE_H
#define K12_CHOICE_H

#include <stddef.h>

typedef enum k12_partial {
    K12_PARTIAL_NONE = 0,     /* all or nothing */
    K12_PARTIAL_HALF = 1,     /* a proper subset with no wrong option: 0.5 (the Gaokao rule) */
    K12_PARTIAL_FRACTION = 2  /* ... |chosen| / |gold| */
} k12_partial;

typedef enum k12_reading {
    K12_READ_STATED = 0, /* from a box or an answer statement */
    K12_READ_LINE = 1,   /* a bare last line */
    K12_READ_GOLD = 2    /* a gold answer */
} k12_reading;

/* The options of t[0..len): 1 and *mask, or 0 when it is not an answer of
 * option letters. */
int k12_choice_parse(const char *t, size_t len, k12_reading how, unsigned *mask);

/* The letters of `mask` into buf[9], "AC". */
void k12_choice_letters(unsigned mask, char buf[9]);

/* Options in `mask`. */
unsigned k12_choice_count(unsigned mask);

/* The credit of choosing `got` when `gold` is right: 1 for the same set, 0
 * when an option is wrong or none was chosen, and for a proper subset what
 * `rule` says. */
double k12_choice_credit(unsigned got, unsigned gold, k12_partial rule);

#endif
