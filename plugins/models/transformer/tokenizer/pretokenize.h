/*
 * pretokenize.h: the pre-tokenizer regexes of byte-level BPE tokenizers,
 * recognised by their exact text and matched by hand over code points, not by
 * a regex engine. Each follows the regex semantics exactly (the leftmost
 * alternative that matches wins, quantifiers are greedy and backtrack,
 * (?!\S) is a lookahead), with \s as the caller says: JavaScript's \s for the
 * ByteLevel pre-tokenizer's built-in regex, \p{White_Space} for a Split
 * regex (what the reference tokenizer makes of \s there), and the (?i:...)
 * contractions folded for ASCII letters only, as the reference does.
 */
#ifndef TERN_PRETOKENIZE_H
#define TERN_PRETOKENIZE_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    PRETOK_GPT2,   /* 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
    PRETOK_LLAMA3, /* (?i:'s|...)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ */
    PRETOK_QWEN2,  /* as Llama 3 with \p{N} for \p{N}{1,3} */
    PRETOK_DIGIT,  /* \p{N}: each digit alone (the Digits pre-tokenizer, individual_digits) */
    PRETOK_DIGITS, /* \p{N}+: runs of digits (Digits without individual_digits) */
    PRETOK_COUNT
} pretok_pattern;

/* The regex text of each pattern, exactly as tokenizer.json holds it. Matched
 * with "behavior": "Isolated", every pattern splits the whole text: the text
 * between two matches is a piece too (for the digit patterns, a run of
 * non-digits). */
extern const char *const pretok_regex[PRETOK_COUNT];

/* The pattern whose text is regex, or -1. */
int pretok_find(const char *regex);

/* The length in code points (>= 1) of the match at cp[i] of the code points
 * cp[0..n) (i < n), whose unicode_class() bits are cls[0..n); space is the
 * class bit that \s means (UNICODE_WS or UNICODE_JS_SPACE). Every code point
 * starts a match, so repeated calls split the whole text. */
size_t pretok_match(pretok_pattern p, int space, const uint32_t *cp, const uint8_t *cls, size_t n,
                    size_t i);

#endif
