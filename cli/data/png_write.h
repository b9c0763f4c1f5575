/* png_write.h: a small PNG encoder for `tern data shapes`, so that libtern
 * writes images without depending on libpng or zlib: 8-bit RGB, not
 * interlaced, each row filtered (None, Sub or Up, whichever leaves the
 * smallest bytes) and compressed as one fixed-Huffman deflate block whose
 * only back-references repeat the previous byte (run lengths), which is what
 * flat synthetic pictures need. CRC-32 and Adler-32 are computed here. */
#ifndef TERN_DATA_PNG_WRITE_H
#define TERN_DATA_PNG_WRITE_H

#include <stddef.h>
#include <stdint.h>

/* Encode w x h pixels (rgb: w * h * 3 bytes, rows top to bottom) into a new
 * buffer *out of *out_len bytes (the caller frees it). The same pixels give
 * the same bytes. TERN_OK, TERN_EINVAL (w or h is 0 or above 2^24, or the pixels are
 * over 2^30 bytes) or
 * TERN_ENOMEM; no message is set. */
int tern_png_encode_rgb(const uint8_t *rgb, uint32_t w, uint32_t h, uint8_t **out,
                        size_t *out_len);

/* CRC-32 (ISO 3309, as PNG chunks use it) of p[0..n), continuing `crc`
 * (start with 0). */
uint32_t tern_png_crc32(uint32_t crc, const uint8_t *p, size_t n);

/* Adler-32 (RFC 1950) of p[0..n), continuing `adler` (start with 1). */
uint32_t tern_png_adler32(uint32_t adler, const uint8_t *p, size_t n);

#endif
