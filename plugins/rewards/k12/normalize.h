/* normalize.h: answers to one canonical text (private to the k12 plugin).
 *
 * k12_normalize turns bytes into the text the question kinds read:
 *   1. bytes that are not valid UTF-8 become U+FFFD, control characters
 *      (NUL included) a space, so utf8proc never refuses the text;
 *   2. Unicode NFKC with utf8proc, which also lumps look-alikes (U+2212 minus
 *      to '-', curly quotes to ASCII, ...): full-width "Ｂ" is "B", "（" is "(",
 *      "㎝" is "cm", "℃" is "°C"; default ignorable characters (zero-width
 *      space, soft hyphen) are dropped; with `fold`, case folding too;
 *      superscripts are kept as exponents: "10⁸" is "10^8", "cm²" is "cm^2";
 *   3. LaTeX markup: $ dropped, \text{X} \mathrm{X} \textbf{X} \mathbf{X}
 *      \textrm{X} \mbox{X} \operatorname{X} are X, \, \; \: \! \quad \qquad ~
 *      spaces, \% is %, \$ is dropped, \times ×, \cdot ·, \div ÷, ^\circ
 *      ^{\circ} \circ \degree °, \checkmark ✓, \dfrac \tfrac \frac, \left and
 *      \right dropped;
 *   4. runs of whitespace become one space; leading and trailing ones go.
 *
 * k12_blank_key goes on from the folded text to the key fill-in-the-blank
 * answers are compared by: every whitespace character and every punctuation
 * character (Unicode categories Pc Ps Pe Pi Pf Po) is dropped, except
 * % / # & @, dashes (Pd), and a '.' between two digits. */
#ifndef K12_NORMALIZE_H
#define K12_NORMALIZE_H

#include <stddef.h>

/* The longest answer or gold answer read, in bytes: a school answer is far
 * shorter, and the bound keeps normalisation's memory small. */
#define K12_TEXT_MAX 65536

#define K12_NORM_OK 0
#define K12_NORM_NOMEM (-1)   /* out of memory */
#define K12_NORM_TOO_LONG 1   /* len > K12_TEXT_MAX */

/* s[0..len) normalised into *out (malloc'd, NUL-terminated, no NUL inside;
 * the caller frees it) of *out_len bytes. */
int k12_normalize(const char *s, size_t len, int fold, char **out, size_t *out_len);

/* The blank key of s[0..len) (a k12_normalize'd text, folded) into *out
 * (malloc'd, NUL-terminated). */
int k12_blank_key(const char *s, size_t len, char **out, size_t *out_len);

#endif
