/* extract.h: where the final answer is in a response (private to the k12
 * plugin). Only the final answer counts, never letters or numbers met in the
 * reasoning, so only three places are looked at, in priority order:
 *
 *   1. the last \boxed{X} whose braces balance (nesting allowed);
 *   2. the last answer statement, English or Chinese (extract.c lists the
 *      markers: "the answer is", "Answer:", "正确答案是", "答案：", "答：",
 *      "故选", ...); X runs from the marker to the end of the sentence
 *      ('.', '!' or '?' before whitespace or the end; '。', '！', '？') or of
 *      the line, and after a colon it may start on the next line;
 *   3. only when asked: the last line that holds something.
 *
 * An occurrence whose X holds nothing but whitespace and ASCII punctuation
 * does not count, and the search goes on to the one before it. X is trimmed
 * of whitespace; reading what it says is the question kind's business.
 *
 * Every scan reads only s[0..len) and does work linear in len, whatever the
 * bytes are (invalid UTF-8, NULs, a megabyte of braces or of markers). */
#ifndef K12_EXTRACT_H
#define K12_EXTRACT_H

#include <stddef.h>

typedef enum k12_form {
    K12_FORM_NONE = 0,
    K12_FORM_BOXED = 1,
    K12_FORM_STATED = 2,
    K12_FORM_LAST_LINE = 3
} k12_form;

typedef struct k12_span {
    k12_form form;
    const char *text; /* into the scanned response */
    size_t len;
} k12_span;

/* Find the answer; with last_line 0 the last-line fallback is off. Returns
 * out->form, K12_FORM_NONE when nothing was found. s may be NULL. */
k12_form k12_extract(const char *s, size_t len, int last_line, k12_span *out);

/* 1 when s[0..len) holds something besides whitespace and ASCII punctuation. */
int k12_has_content(const char *s, size_t len);

/* How a reason names the form: "boxed answer", "stated answer", "last line". */
const char *k12_form_label(k12_form form);

#endif
