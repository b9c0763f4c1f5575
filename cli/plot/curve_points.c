/* curve_points.c: moving mean and bucket means (see curve_points.h). */
#include "plot/curve_points.h"

#include <stdlib.h>

size_t pl_curve_points(const double *x, const double *y, size_t n, int smooth,
                       size_t max_points, double *out_x, double *out_y, int *oom)
{
    *oom = 0;
    if (n == 0 || max_points == 0)
        return 0;
    double *smoothed = malloc(n * sizeof *smoothed);
    if (!smoothed) {
        *oom = 1;
        return 0;
    }
    /* a trailing window: each point is the mean of what came up to it, as
     * a reader of a live run would see it */
    size_t window = smooth > 1 ? (size_t)smooth : 1;
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        sum += y[i];
        if (i >= window)
            sum -= y[i - window];
        size_t in_window = i + 1 < window ? i + 1 : window;
        smoothed[i] = window > 1 ? sum / (double)in_window : y[i];
    }
    size_t m = n < max_points ? n : max_points;
    for (size_t b = 0; b < m; b++) {
        /* bucket b holds points [b*n/m, (b+1)*n/m): sizes differ by one at most */
        size_t lo = b * n / m, hi = (b + 1) * n / m;
        double sx = 0, sy = 0;
        for (size_t i = lo; i < hi; i++) {
            sx += x[i];
            sy += smoothed[i];
        }
        out_x[b] = sx / (double)(hi - lo);
        out_y[b] = sy / (double)(hi - lo);
    }
    free(smoothed);
    return m;
}
