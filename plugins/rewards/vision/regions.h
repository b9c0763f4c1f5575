/* regions.h: connected regions of one colour in a decoded image, for the
 * `count_regions` reward. */
#ifndef VIS_REGIONS_H
#define VIS_REGIONS_H

#include <stdint.h>

#include "image_file.h"

/* The regions of pixels within `tolerance` of rgb (every channel differs by
 * at most that much) that hold at least min_pixels pixels, with 4- or
 * 8-connectivity (`connectivity` 4 or 8), into *count. Memory: one bit per
 * pixel and a stack that grows with the regions' shapes. 0, or -1 when out
 * of memory. */
int vis_count_regions(const image_rgb *img, const uint8_t rgb[3], int tolerance, int connectivity,
                      uint64_t min_pixels, uint64_t *count);

#endif
