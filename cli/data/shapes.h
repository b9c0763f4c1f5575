/* shapes.h: the synthetic pictures and vision tasks of `tern data shapes`
 * (docs/data.md): a few filled rectangles, circles and triangles in named
 * colours on a white square, and four tasks about each picture, which the
 * `vision` reward judges (docs/rewards.md).
 *
 * Pure: no I/O. Everything follows from the seed and the size, picture
 * after picture, so the same seed gives the same scenes and tasks. No two
 * shapes touch or overlap (their boxes keep at least two pixels apart), and
 * each shape is one 4-connected region, so the regions of a colour in the
 * picture are exactly its shapes of that colour. */
#ifndef TERN_DATA_SHAPES_H
#define TERN_DATA_SHAPES_H

#include <stddef.h>
#include <stdint.h>

#include "tern/rng.h"

#define TERN_SHAPES_MIN_SIZE 32
#define TERN_SHAPES_MAX_SIZE 1024
#define TERN_SHAPES_MAX 6   /* shapes in a picture at most (3 at least) */
#define TERN_SHAPES_TASKS 4 /* tasks per picture */

/* The colours, as the `vision` reward's palette names them (same RGB). */
#define TERN_SHAPES_COLORS 13
typedef struct tern_shapes_color {
    const char *name;
    uint8_t rgb[3];
} tern_shapes_color;
extern const tern_shapes_color tern_shapes_palette[TERN_SHAPES_COLORS];
#define TERN_SHAPES_BACKGROUND 1 /* white */

typedef enum tern_shape_kind {
    TERN_SHAPE_RECTANGLE = 0,
    TERN_SHAPE_CIRCLE = 1,
    TERN_SHAPE_TRIANGLE = 2
} tern_shape_kind;

typedef struct tern_shape {
    int kind;       /* tern_shape_kind */
    int color;      /* index into tern_shapes_palette, never the background */
    int x0, y0;     /* the tight box: pixels x0 <= x < x1, y0 <= y < y1 */
    int x1, y1;
} tern_shape;

typedef struct tern_scene {
    int size;                   /* width and height in pixels */
    int n;                      /* shapes */
    tern_shape shapes[TERN_SHAPES_MAX];
    uint8_t *rgb;               /* size * size * 3 bytes, owned */
} tern_scene;

/* One task about a scene. The strings are JSON-safe (ASCII, no quotes or
 * backslashes). */
typedef struct tern_shape_task {
    const char *type;   /* "count_regions", "color_at", "grounding" or "counting" */
    char prompt[320];
    char fields[96];    /* the task's extra JSON members, e.g. "color":"red" */
    char answer[48];    /* the stored "answer": a right one (the reward judges some types itself) */
    char correct[48];   /* a response the reward judges right */
    char wrong[48];     /* a response it judges wrong */
} tern_shape_task;

typedef struct tern_shapes_gen {
    tern_rng rng;
    int size;
} tern_shapes_gen;

/* Start a sequence of pictures of size x size pixels (TERN_SHAPES_MIN_SIZE
 * to TERN_SHAPES_MAX_SIZE). */
void tern_shapes_begin(tern_shapes_gen *g, uint64_t seed, int size);

/* The next picture and its tasks (count_regions, color_at, grounding,
 * counting, in that order). TERN_OK or TERN_ENOMEM; free the scene with
 * tern_scene_free. */
int tern_shapes_next(tern_shapes_gen *g, tern_scene *scene, tern_shape_task tasks[TERN_SHAPES_TASKS]);

void tern_scene_free(tern_scene *scene);

/* Whether pixel (x, y) of shape s is painted. */
int tern_shape_covers(const tern_shape *s, int x, int y);

#endif
