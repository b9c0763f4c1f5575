/* timeline_svg.h: lay out the events of a trace as the timeline diagrams of
 * the Trinity-RFT paper (a lane per explorer, the buffer, the trainer; a time
 * axis; a legend) and write it as SVG 1.1 text. */
#ifndef TERN_TIMELINE_SVG_H
#define TERN_TIMELINE_SVG_H

#include <stdio.h>

#include "timeline/trace_read.h"

#define TL_WIDTH_DEFAULT 1200
#define TL_WIDTH_MIN 400
#define TL_WIDTH_MAX 20000

typedef struct tl_view {
    double from, to;   /* the seconds shown, on the trace's clock (to > from) */
    int width;         /* pixels, TL_WIDTH_MIN..TL_WIDTH_MAX */
    const char *title; /* the first line (any bytes: escaped here) */
} tl_view;

/* Whether `e` shows in [from, to] (a span overlapping it, an instant in it). */
int tl_event_visible(const tl_event *e, double from, double to);

/* Write the picture of t's events within v to f. TERN_OK, TERN_ENOMEM, or
 * TERN_EIO when f fails (f is not closed). */
int tl_svg_write(FILE *f, const tl_trace *t, const tl_view *v);

#endif
