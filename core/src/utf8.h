/* utf8.h: checking UTF-8, for text that must go into JSON (jansson refuses
 * invalid UTF-8) or onto a terminal: model outputs are arbitrary bytes. */
#ifndef TERN_UTF8_H
#define TERN_UTF8_H

#include <stddef.h>

/* Length (2-4) of the valid multi-byte UTF-8 sequence at s[0..n), or 0 (an
 * ASCII byte, an overlong form, a surrogate, past U+10FFFF, cut short). */
size_t tern_utf8_len(const unsigned char *s, size_t n);

/* A copy of the NUL-terminated `s` with every byte that is not part of valid
 * UTF-8 replaced by U+FFFD; the caller frees it. NULL when out of memory. */
char *tern_utf8_clean(const char *s);

#endif
