/*
 * unicode.h: the little Unicode the BPE tokenizers need: UTF-8 decoding that
 * never fails, character classes of the pre-tokenizer patterns, and NFC.
 * The tables come from node (unicode_gen.mjs), the engine of the reference
 * tokenizer the tests compare against; unicode_version() names the Unicode
 * version they hold.
 *
 * Text is bytes and need not be valid UTF-8: a byte that does not start a
 * valid sequence (stray continuation, overlong form, surrogate, beyond
 * U+10FFFF, truncated) stands for itself as UNICODE_BAD | byte, has no class,
 * and is kept as it is by NFC.
 */
#ifndef TERN_UNICODE_H
#define TERN_UNICODE_H

#include <stddef.h>
#include <stdint.h>

enum {
    UNICODE_L = 1,        /* \p{L} */
    UNICODE_N = 2,        /* \p{N} */
    UNICODE_WS = 4,       /* \p{White_Space}: \s in a tokenizer.json Split regex */
    UNICODE_JS_SPACE = 8, /* JavaScript's \s (adds U+FEFF, lacks U+0085): the ByteLevel regex */
};
#define UNICODE_BAD 0x80000000u

/* The code point at s (n >= 1 bytes) in *cp; returns its length in bytes
 * (1..4). tern_utf8_decode (tern/support/utf8.h) decides what is valid. */
size_t unicode_next(const unsigned char *s, size_t n, uint32_t *cp);
/* Append cp (or the bad byte it stands for) to out as UTF-8; returns the bytes written (1..4). */
size_t unicode_put(uint32_t cp, unsigned char *out);
/* UNICODE_* bits of a code point (0 for a bad byte). */
int unicode_class(uint32_t cp);
/* NFC of len bytes: *out is malloc'd (free it; never NULL on success), *outn
 * its length. 0, or -1 with errno ENOMEM. */
int unicode_nfc(const char *s, size_t len, char **out, size_t *outn);
/* The Unicode version of the tables, e.g. "17.0". */
const char *unicode_version(void);

#endif
