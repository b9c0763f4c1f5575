/* regions.c: flood fill with an explicit stack (see regions.h). A pixel is
 * marked when it is pushed, so each is pushed at most once. */
#include "regions.h"

#include <stddef.h>
#include <stdlib.h>

static int matches(const uint8_t *p, const uint8_t rgb[3], int tol)
{
    for (int c = 0; c < 3; c++) {
        int d = (int)p[c] - (int)rgb[c];
        if (d > tol || d < -tol)
            return 0;
    }
    return 1;
}

typedef struct stack {
    uint32_t *v;
    size_t n, cap;
} stack;

static int push(stack *s, uint32_t x)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        uint32_t *v = realloc(s->v, cap * sizeof *v);
        if (!v)
            return -1;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = x;
    return 0;
}

int vis_count_regions(const image_rgb *img, const uint8_t rgb[3], int tolerance, int connectivity,
                      uint64_t min_pixels, uint64_t *count)
{
    *count = 0;
    size_t w = img->w, h = img->h, total = w * h;
    if (!img->rgb || total == 0)
        return 0;
    if (total > UINT32_MAX)
        return -1;
    uint8_t *seen = calloc((total + 7) / 8, 1);
    if (!seen)
        return -1;
    stack st = {0};
    static const int dx[8] = {1, -1, 0, 0, 1, 1, -1, -1}, dy[8] = {0, 0, 1, -1, 1, -1, 1, -1};
    int nbr = connectivity == 8 ? 8 : 4, rc = 0;
    for (size_t start = 0; start < total && rc == 0; start++) {
        if (seen[start >> 3] & (1u << (start & 7)))
            continue;
        if (!matches(img->rgb + 3 * start, rgb, tolerance))
            continue;
        seen[start >> 3] |= (uint8_t)(1u << (start & 7));
        uint64_t size = 0;
        st.n = 0;
        if (push(&st, (uint32_t)start) != 0) {
            rc = -1;
            break;
        }
        while (st.n) {
            size_t p = st.v[--st.n];
            size++;
            size_t x = p % w, y = p / w;
            for (int k = 0; k < nbr; k++) {
                if ((dx[k] < 0 && x == 0) || (dx[k] > 0 && x + 1 == w) || (dy[k] < 0 && y == 0) ||
                    (dy[k] > 0 && y + 1 == h))
                    continue;
                size_t q = (y + (size_t)(ptrdiff_t)dy[k]) * w + x + (size_t)(ptrdiff_t)dx[k];
                if (seen[q >> 3] & (1u << (q & 7)))
                    continue;
                if (!matches(img->rgb + 3 * q, rgb, tolerance))
                    continue;
                seen[q >> 3] |= (uint8_t)(1u << (q & 7));
                if (push(&st, (uint32_t)q) != 0) {
                    rc = -1;
                    break;
                }
            }
            if (rc)
                break;
        }
        if (size >= min_pixels)
            (*count)++;
    }
    free(st.v);
    free(seen);
    return rc;
}
