/* image_file.h: an image file decoded to 8-bit RGB: PNG through libpng
 * (every colour type and depth, interlaced or not; alpha is composited over
 * white) and the netpbm formats P3/P6 (colour) and P2/P5 (grey), plain or
 * binary, maxval up to 65535, by a parser of our own.
 *
 * One decoder for the whole project: libtern reads a task's image with it
 * to hand the pixels to a model (image/task_image.h), and the `vision`
 * reward plugin links the same static library (tern_image_file) to judge
 * answers about the image, so both see the same pixels.
 *
 * The format is told by the first bytes, never by the file name. Memory is
 * bounded: the dimensions are read first and an image of more than
 * `max_pixels` pixels is refused before anything is allocated for it. Every
 * failure is a status and a short message; nothing is printed, nothing leaks,
 * and no input makes the decoders read out of bounds. Thread-safe: no state
 * is shared between calls. Includes only the C and POSIX headers and libpng. */
#ifndef TERN_IMAGE_FILE_H
#define TERN_IMAGE_FILE_H

#include <stddef.h>
#include <stdint.h>

/* Decoded pixels. */
typedef struct image_rgb {
    uint32_t w, h;
    uint8_t *rgb; /* w * h * 3 bytes, rows top to bottom; NULL after a header-only read */
} image_rgb;

typedef enum image_file_status {
    IMAGE_FILE_OK = 0,
    IMAGE_FILE_NOT_FOUND,   /* no such file */
    IMAGE_FILE_UNREADABLE,  /* it exists but cannot be read (permissions, a directory, I/O) */
    IMAGE_FILE_UNKNOWN,     /* not a PNG or a netpbm image (or an empty file) */
    IMAGE_FILE_CORRUPT,     /* a PNG or netpbm image that is malformed or cut short */
    IMAGE_FILE_EMPTY,       /* width or height 0 */
    IMAGE_FILE_TOO_BIG,     /* more than max_pixels pixels */
    IMAGE_FILE_NO_MEMORY    /* within max_pixels, but malloc failed */
} image_file_status;

/* What image_file_* read. */
#define IMAGE_FILE_HEADER 0 /* the dimensions only (rgb stays NULL) */
#define IMAGE_FILE_PIXELS 1 /* the whole image */

/* Decode data[0..len). On IMAGE_FILE_OK *out holds the image (free it with
 * image_rgb_free); on failure *out is zeroed and why[0..cap) says what is
 * wrong in a few words ("corrupt PNG: IDAT: CRC error", "4000x5000 is over
 * the limit of 16000000 pixels"). */
image_file_status image_file_decode(const uint8_t *data, size_t len, uint64_t max_pixels,
                                    int what, image_rgb *out, char *why, size_t cap);

/* The same for the file at `path`, read as a stream (the file is never held
 * in memory whole). Only a regular file is read (a FIFO is never waited
 * on); a file that cannot be opened says why (strerror). */
image_file_status image_file_load(const char *path, uint64_t max_pixels, int what,
                                  image_rgb *out, char *why, size_t cap);

void image_rgb_free(image_rgb *img);

#endif
