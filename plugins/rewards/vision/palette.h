/* palette.h: the named colours of `color_at` and `count_regions` (the
 * table is in docs/rewards.md and mirrored by `tern data shapes`). */
#ifndef VIS_PALETTE_H
#define VIS_PALETTE_H

#include <stddef.h>
#include <stdint.h>

typedef struct vis_color {
    const char *name; /* the canonical English name */
    uint8_t rgb[3];
} vis_color;

#define VIS_PALETTE_SIZE 13
extern const vis_color vis_palette[VIS_PALETTE_SIZE];

/* The palette entry named s[0..len) (an English name or alias, any ASCII
 * case, or a Chinese name), or -1. */
int vis_palette_lookup(const char *s, size_t len);

/* The entry nearest rgb (squared RGB distance; the first of equals). */
int vis_palette_nearest(const uint8_t rgb[3]);

/* The last palette colour named in s[0..len): English names and aliases as
 * whole ASCII words in any case, Chinese names anywhere. Its index, with
 * *at and *len_out its bytes, or -1 if none. Linear in len. */
int vis_palette_find_last(const char *s, size_t len, size_t *at, size_t *len_out);

#endif
