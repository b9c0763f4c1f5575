/* text.h: bytes, UTF-8 and reasons (private to the k12 plugin).
 *
 * Responses are raw bytes that may be invalid UTF-8 or hold NULs, so the
 * scanners classify ASCII bytes themselves instead of using <ctype.h>, whose
 * answers depend on the locale and are undefined for negative chars. */
#ifndef K12_TEXT_H
#define K12_TEXT_H

#include <stddef.h>

#include "../common/reward_text.h"

static inline int k12_is_digit(char c) { return c >= '0' && c <= '9'; }
static inline int k12_is_upper(char c) { return c >= 'A' && c <= 'Z'; }
static inline int k12_is_alpha(char c) { return (c >= 'a' && c <= 'z') || k12_is_upper(c); }
static inline int k12_is_alnum(char c) { return k12_is_alpha(c) || k12_is_digit(c); }
static inline int k12_is_blank(char c) { return c == ' ' || c == '\t'; }
static inline int k12_is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
static inline char k12_lower(char c) { return k12_is_upper(c) ? (char)(c - 'A' + 'a') : c; }

/* Does s[i..len) start with the bytes of `w`? */
int k12_starts(const char *s, size_t len, size_t i, const char *w);
/* The same, ASCII case-insensitively; `w` is lower case. */
int k12_starts_ci(const char *s, size_t len, size_t i, const char *w);
/* k12_starts_ci, and the word ends there (no ASCII letter follows). */
int k12_word_ci(const char *s, size_t len, size_t i, const char *w);

/* Bytes of an excerpt quoted in a reason: two of them and the words around
 * fit TERN_REWARD_REASON_MAX (160). */
#define K12_EXCERPT_MAX 40

/* s[0..len) into dst[K12_EXCERPT_MAX + 4] as printable, valid UTF-8: control
 * characters and invalid bytes become '?', whitespace a space, and "..."
 * marks a cut, which always falls between two characters. Stricter than
 * reward_excerpt() (../common/reward_text.h): C1 controls and the Unicode
 * line and paragraph separators are replaced too. */
void k12_excerpt(char *dst, const char *s, size_t len);

/* printf into dst[cap]; a reason too long is cut between two characters, so
 * valid UTF-8 arguments give a valid UTF-8 reason. */
void k12_reason(char *dst, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
