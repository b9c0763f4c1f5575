/* boxes.h: bounding boxes in responses and gold answers, their overlap, and
 * the greedy matching of the `detection` reward (docs/rewards.md, vision).
 *
 * The parsers are lenient (models write almost-JSON) and linear in the input
 * length; they read exactly the bytes they are given (no NUL needed). A box
 * is four numbers x1, y1, x2, y2: the left, top, right and bottom edges. */
#ifndef VIS_BOXES_H
#define VIS_BOXES_H

#include <stddef.h>

#define VIS_LABEL_MAX 48

typedef struct vis_box {
    double x1, y1, x2, y2;
    double conf;             /* detection confidence; 1 when not given */
    char label[VIS_LABEL_MAX]; /* "" when none; cut to VIS_LABEL_MAX - 1 bytes */
    size_t at, len;          /* where it was found in the text */
} vis_box;

/* Finite coordinates with x1 < x2 and y1 < y2. */
int vis_box_valid(const vis_box *b);

/* Intersection over union of two boxes (continuous coordinates: a box covers
 * the area (x2 - x1) * (y2 - y1)); 0 when either box is not valid. */
double vis_iou(const vis_box *a, const vis_box *b);

/* The last box written in s[0..len), in any of the forms
 *   [x1, y1, x2, y2]   (commas optional; so also {"bbox_2d": [...]})
 *   (x1, y1), (x2, y2) (the pairs separated by a comma, '-', "to" or nothing)
 * into *out: 1, or 0 if there is none. Numbers are decimal, optionally signed
 * or with a fraction or exponent; a number longer than 64 bytes reads as NaN
 * (so the box is found but not valid). */
int vis_parse_box(const char *s, size_t len, vis_box *out);

/* The detections in s[0..len): every object {...} holding a box under one of
 * the keys position, bbox_2d, bbox, box, bounding_box (any case; an optional
 * confidence under confidence, score or conf, and a label under label,
 * category or class), and every list [x1, y1, x2, y2] or [x1, y1, x2, y2,
 * confidence] outside such objects. The first `cap` go to out[]; *total
 * counts all of them. *empty is set when the text holds an empty list [] and
 * no box (a prediction of nothing). Linear in len. */
void vis_parse_detections(const char *s, size_t len, vis_box *out, size_t cap, size_t *total,
                          int *empty);

typedef struct vis_match {
    size_t matched; /* gold boxes matched */
    double sum_iou; /* the IoU of each match, added up */
} vis_match;

/* Visual-RFT's matching: predictions in order of confidence (highest first;
 * the text's order among equals), each taking the unmatched gold box it
 * overlaps most, if that IoU is above `threshold` (and, with match_labels,
 * their labels agree when both have one: ASCII case-insensitive). `order`
 * is scratch space for npred indices. */
void vis_match_boxes(const vis_box *pred, size_t npred, const vis_box *gold, size_t ngold,
                     double threshold, int match_labels, size_t *order, unsigned char *taken,
                     vis_match *out);

#endif
