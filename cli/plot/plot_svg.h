/* plot_svg.h: learning curves as SVG 1.1 text: a title, a legend of the
 * runs, and a grid of panels, one per key, each with its axes, ticks and one
 * curve per run that has the key. */
#ifndef TERN_PLOT_SVG_H
#define TERN_PLOT_SVG_H

#include <stddef.h>
#include <stdio.h>

/* One run's curve in one panel: the points drawn, in order. */
typedef struct pl_curve {
    size_t run;              /* index into pl_figure.labels: the colour and name */
    const double *x, *y;
    size_t n;                /* >= 1 */
    const double *raw_x, *raw_y; /* the points before smoothing, drawn faint
                                    beneath; NULL: none */
    size_t n_raw;
} pl_curve;

typedef struct pl_panel {
    const char *title;       /* "Reward" */
    const char *key;         /* "reward_mean", shown beside the title */
    const pl_curve *curves;  /* in run order; at least one */
    size_t n_curves;
    const char *missing;     /* "no data: run-b, run-c", or NULL */
} pl_panel;

typedef struct pl_figure {
    const char *title;          /* the first line */
    const char *subtitle;       /* the line under it (what the axes and curves are) */
    const char *x_label;        /* under each panel's x axis: "RL step", "minutes" */
    const char *const *labels;  /* the runs' names, for the legend */
    size_t n_runs;
    const pl_panel *panels;
    size_t n_panels;            /* >= 1 */
} pl_figure;

/* Write the picture to f. TERN_OK, or TERN_EIO when f fails (f is not
 * closed). Any bytes in the texts are escaped. */
int pl_svg_write(FILE *f, const pl_figure *fig);

#endif
