/* curve_points.h: the points a curve is drawn with, from a series' points:
 * an optional moving mean, then at most a fixed number of points, so that a
 * run of 100000 steps gives a picture of the same size as one of 400. */
#ifndef TERN_PLOT_CURVE_POINTS_H
#define TERN_PLOT_CURVE_POINTS_H

#include <stddef.h>

/* The most points one curve is drawn with. */
#define PL_MAX_POINTS 400

/* Into out_x/out_y (room for min(n, max_points) each) the points of
 * x[0..n), y[0..n): with smooth > 1, each y is first replaced by the mean of
 * the last `smooth` values up to it (fewer at the start); then, when n is
 * above max_points, the points are cut into max_points buckets of
 * consecutive points and each bucket drawn as its mean x and mean y.
 * Returns the number of points written; 0 when n is 0 or memory runs out
 * (*oom set to 1). */
size_t pl_curve_points(const double *x, const double *y, size_t n, int smooth,
                       size_t max_points, double *out_x, double *out_y, int *oom);

#endif
