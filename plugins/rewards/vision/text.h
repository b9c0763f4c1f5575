/* text.h: reading answers out of responses for the `vision` reward: the
 * <answer> region, counts, option letters, yes/no, and the ANLS similarity
 * of OCR answers. Every function reads exactly the bytes it is given (no NUL
 * needed), accepts any bytes (invalid UTF-8 included) and is linear in the
 * length, except vis_anls, which is bounded by VIS_ANLS_MAX_CHARS. */
#ifndef VIS_TEXT_H
#define VIS_TEXT_H

#include <stddef.h>

#include "../common/reward_text.h"

/* The part of s[0..len) a verdict reads: the text inside the last
 * <answer>...</answer> (tags in any ASCII case; to the end when the last
 * <answer> is not closed), or all of it when there is no <answer>. */
void vis_answer_region(const char *s, size_t len, const char **out, size_t *out_len);

/* s[0..len) without leading and trailing whitespace. */
void vis_trim(const char **s, size_t *len);

typedef struct vis_count {
    int found;          /* 0: no count in the text */
    int whole;          /* 0: the last number has a fraction ("2.5") */
    int negative;       /* written with a minus sign */
    int from_word;      /* written as a word ("seven") */
    const char *digits; /* decimal digits without leading zeros ("0" for zero), not
                           NUL-terminated; into the text or a static string */
    size_t n_digits;
    size_t at, len;     /* where it was written */
} vis_count;

/* The count a response gives: its last number written in digits (a
 * strictly grouped "1,234" is one number; a minus sign right before it that
 * follows no letter or digit makes it negative; digits glued to a letter
 * before them, as in "x2" or "P3", are not a number), or when it has none,
 * its last number word: zero to nineteen, the tens twenty to ninety, and
 * "twenty-one" or "twenty one" to "ninety-nine" (ASCII case-insensitive,
 * whole words). Fills *out; returns out->found. */
int vis_extract_count(const char *s, size_t len, vis_count *out);

/* Digit strings as written by vis_extract_count equal? */
int vis_count_equal(const vis_count *a, const vis_count *b);

typedef struct vis_choice {
    int found;
    char letter; /* 'A'..'Z' for options; 'Y' / 'N' for yes / no */
    size_t at, len;
} vis_choice;

/* The option letter a response picks, `last` the highest letter the task
 * offers ('A' + options - 1; see docs): the whole answer being one letter
 * ("B", "(B)", "B.", "**B**", "B) a cat", "b"); else the last "answer is X",
 * "answer: X", "option X", "choice X", "答案是X", "答案为X", "答案：X", "选X";
 * else the last "(X)"; else the last capital letter standing alone as a word
 * from 'A' to `last` (an 'A' or 'I' before a space and a lower-case letter is
 * the English word, not an option). */
int vis_extract_letter(const char *s, size_t len, char last, vis_choice *out);

/* The last yes or no a response gives: the words yes, no, true, false (ASCII
 * case-insensitive, whole words), 是 (yes), 否, 不是 and 没有 (no); 是否
 * ("whether") is neither. letter is 'Y' or 'N'. */
int vis_extract_yesno(const char *s, size_t len, vis_choice *out);

/* The gold side of choice: "B", "(B)", "B.", "B) a cat", "b" -> a letter;
 * yes / no / true / false / 是 / 否 -> 'Y' / 'N'. *is_yesno says which.
 * 0 when the gold is neither. */
int vis_gold_choice(const char *s, size_t len, char *letter, int *is_yesno);

/* Code points compared at most, per string, by vis_anls. */
#define VIS_ANLS_MAX_CHARS 1000

/* ANLS similarity of a prediction and one gold answer: both are normalised
 * (ASCII letters lower-cased, runs of whitespace one space, trimmed), split
 * into code points (a byte that is not valid UTF-8 is one code point of its
 * own), and s = 1 - lev(p, g) / max(|p|, |g|), with s = 1 when both are
 * empty; the result is s when s >= 0.5, else 0. Strings longer than
 * VIS_ANLS_MAX_CHARS code points are compared on their first
 * VIS_ANLS_MAX_CHARS, unless the lengths alone already put s below 0.5.
 * *similarity gets s before the threshold. Returns -1 when out of memory. */
double vis_anls(const char *pred, size_t pred_len, const char *gold, size_t gold_len,
                double *similarity);

/* Make a finished reason printable, valid UTF-8 in place (bytes that are
 * not, and a sequence cut by truncation, become '?' or are dropped). */
void vis_clean_reason(char *r, size_t cap);

#endif
