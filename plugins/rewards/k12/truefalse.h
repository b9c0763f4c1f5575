/* truefalse.h: true/false answers (private to the k12 plugin).
 *
 * Read from normalised text, after optional brackets, quotes and Markdown:
 *   true:  true yes t correct right 对 正确 是 √ ✓ ✔
 *   false: false no f incorrect wrong 错 错误 否 不对 不正确 不是 × ✗ ✘
 * English words in any case; a Chinese word may take 的 ("对的", "是的").
 * The word must end there: no letter, digit or CJK character may follow it
 * ("not", "对称" are no answers). In an answer statement whatever follows is
 * ignored ("False, because ..."); in a bare last line and in a gold answer
 * only punctuation may follow.
 *
 * An answer that does not start with such a word may end with one: a
 * sentence whose last word (before 的 and closing punctuation) is 正确, 错误,
 * 对, 错, 不对, 不正确, 没错, true, false, correct or incorrect says so
 * ("这个说法是错误的。", "So the statement is true."); after "not", "n't", 不
 * or 没 (other than in 不对, 不正确, 没错) it says nothing. */
#ifndef K12_TRUEFALSE_H
#define K12_TRUEFALSE_H

#include <stddef.h>

/* 1 and *value (1 true, 0 false) when t[0..len) starts with a true/false
 * word; `strict` for gold answers. */
int k12_tf_parse(const char *t, size_t len, int strict, int *value);

/* 1 and *value when t[0..len) ends with a true/false word as above. */
int k12_tf_parse_last(const char *t, size_t len, int *value);

#endif
