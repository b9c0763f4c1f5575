/* image.h: the images a vision task points at, decoded to 8-bit RGB: PNG
 * through libpng (every colour type and depth, interlaced or not; alpha is
 * composited over white) and the netpbm formats P3/P6 (colour) and P2/P5
 * (grey), plain or binary, maxval up to 65535, by a parser of our own.
 *
 * The format is told by the first bytes, never by the file name. Memory is
 * bounded: the dimensions are read first and an image of more than
 * `max_pixels` pixels is refused before anything is allocated for it. Every
 * failure is a status and a short message; nothing is printed, nothing leaks,
 * and no input makes the decoders read out of bounds. Thread-safe: no state
 * is shared between calls. */
#ifndef VIS_IMAGE_H
#define VIS_IMAGE_H

#include <stddef.h>
#include <stdint.h>

typedef struct vis_image {
    uint32_t w, h;
    uint8_t *rgb; /* w * h * 3 bytes, rows top to bottom; NULL after a header-only read */
} vis_image;

typedef enum vis_image_status {
    VIS_IMG_OK = 0,
    VIS_IMG_NOT_FOUND,   /* no such file */
    VIS_IMG_UNREADABLE,  /* it exists but cannot be read (permissions, a directory, I/O) */
    VIS_IMG_UNKNOWN,     /* not a PNG or a netpbm image (or an empty file) */
    VIS_IMG_CORRUPT,     /* a PNG or netpbm image that is malformed or cut short */
    VIS_IMG_EMPTY,       /* width or height 0 */
    VIS_IMG_TOO_BIG,     /* more than max_pixels pixels */
    VIS_IMG_NO_MEMORY    /* within max_pixels, but malloc failed */
} vis_image_status;

/* What vis_image_* read. */
#define VIS_IMG_HEADER 0 /* the dimensions only (rgb stays NULL) */
#define VIS_IMG_PIXELS 1 /* the whole image */

/* Decode data[0..len). On VIS_IMG_OK *out holds the image (free it with
 * vis_image_free); on failure *out is zeroed and why[0..cap) says what is
 * wrong in a few words ("truncated pixel data", "4000x5000 is over the
 * limit of 16000000 pixels"). */
vis_image_status vis_image_decode(const uint8_t *data, size_t len, uint64_t max_pixels, int what,
                                  vis_image *out, char *why, size_t cap);

/* The same for the file at `path`, read as a stream (the file is never held
 * in memory whole). */
vis_image_status vis_image_load(const char *path, uint64_t max_pixels, int what,
                                vis_image *out, char *why, size_t cap);

void vis_image_free(vis_image *img);

#endif
