/* ascii.h: byte classes for the math plugin's scanners (private).
 *
 * The scanners look at raw response bytes, which may be invalid UTF-8 or hold
 * NULs, so they classify bytes themselves instead of using <ctype.h>, whose
 * answers depend on the locale and are undefined for negative chars. */
#ifndef MATH_ASCII_H
#define MATH_ASCII_H

static inline int math_is_digit(char c) { return c >= '0' && c <= '9'; }

static inline int math_is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/* Blank: space or tab, the whitespace that stays within a line. */
static inline int math_is_blank(char c) { return c == ' ' || c == '\t'; }

static inline int math_is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static inline char math_lower(char c) { return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c; }

#endif
