/* shapes.c: scenes and tasks of `tern data shapes` (see shapes.h).
 *
 * Each shape is drawn by a rule that makes it one 4-connected region: a
 * rectangle fills its box; a circle of radius r centred on a pixel holds the
 * pixels within r^2 + r of the centre, and a triangle is isosceles with a
 * horizontal base and its apex on the middle column: every row of either
 * holds the middle column, so the rows join through it. */
#include "data/shapes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tern/abi.h"

/* The same names and RGB values as plugins/rewards/vision/palette.c. */
const tern_shapes_color tern_shapes_palette[TERN_SHAPES_COLORS] = {
    {"black", {0, 0, 0}},      {"white", {255, 255, 255}}, {"gray", {128, 128, 128}},
    {"red", {255, 0, 0}},      {"green", {0, 128, 0}},     {"blue", {0, 0, 255}},
    {"yellow", {255, 255, 0}}, {"orange", {255, 165, 0}},  {"purple", {128, 0, 128}},
    {"pink", {255, 192, 203}}, {"brown", {165, 42, 42}},   {"cyan", {0, 255, 255}},
    {"magenta", {255, 0, 255}},
};

static const char *const kind_names[3] = {"rectangle", "circle", "triangle"};
static const char *const kind_plurals[3] = {"rectangles", "circles", "triangles"};

/* Uniform in [0, m), m >= 1, without modulo bias. */
static uint32_t below(tern_rng *r, uint32_t m)
{
    uint64_t threshold = (0 - (uint64_t)m) % m;
    for (;;) {
        uint64_t x = tern_rng_u64(r);
        if (x >= threshold)
            return (uint32_t)(x % m);
    }
}

/* Uniform in [lo, hi]. */
static int between(tern_rng *r, int lo, int hi) { return lo + (int)below(r, (uint32_t)(hi - lo + 1)); }

void tern_shapes_begin(tern_shapes_gen *g, uint64_t seed, int size)
{
    tern_rng_seed(&g->rng, seed);
    g->size = size;
}

void tern_scene_free(tern_scene *scene)
{
    free(scene->rgb);
    scene->rgb = NULL;
}

/* Triangles point up when their box's height is even, down when odd: the
 * direction follows from the box alone. */
int tern_shape_covers(const tern_shape *s, int x, int y)
{
    if (x < s->x0 || x >= s->x1 || y < s->y0 || y >= s->y1)
        return 0;
    int w = s->x1 - s->x0, h = s->y1 - s->y0;
    if (s->kind == TERN_SHAPE_RECTANGLE)
        return 1;
    if (s->kind == TERN_SHAPE_CIRCLE) {
        int r = (w - 1) / 2, dx = x - (s->x0 + r), dy = y - (s->y0 + r);
        return dx * dx + dy * dy <= r * r + r;
    }
    int k = (w - 1) / 2, cx = s->x0 + k;
    int t = h % 2 == 0 ? y - s->y0 : s->y1 - 1 - y; /* rows from the apex */
    int half = k * t / (h - 1);
    int dx = x < cx ? cx - x : x - cx;
    return dx <= half;
}

/* Do two boxes come within `gap` pixels of each other? */
static int too_close(const tern_shape *a, const tern_shape *b, int gap)
{
    return a->x0 < b->x1 + gap && b->x0 < a->x1 + gap && a->y0 < b->y1 + gap &&
           b->y0 < a->y1 + gap;
}

static void place_shapes(tern_shapes_gen *g, tern_scene *sc)
{
    int size = g->size, want = between(&g->rng, 3, TERN_SHAPES_MAX);
    int lo = size / 8 > 6 ? size / 8 : 6, hi = size / 4 > lo ? size / 4 : lo;
    sc->n = 0;
    for (int attempt = 0; attempt < 400 && sc->n < want; attempt++) {
        tern_shape s = {.kind = (int)below(&g->rng, 3)};
        int side = between(&g->rng, lo, hi), w, h;
        if (s.kind == TERN_SHAPE_RECTANGLE) {
            w = side;
            h = between(&g->rng, lo, hi);
        } else if (s.kind == TERN_SHAPE_CIRCLE) {
            w = h = 2 * ((side - 1) / 2) + 1;
        } else {
            w = 2 * ((side - 1) / 2) + 1;
            h = between(&g->rng, lo, hi);
        }
        /* one pixel of margin to the border */
        s.x0 = between(&g->rng, 1, size - 1 - w);
        s.y0 = between(&g->rng, 1, size - 1 - h);
        s.x1 = s.x0 + w;
        s.y1 = s.y0 + h;
        int ok = 1;
        for (int i = 0; i < sc->n && ok; i++)
            ok = !too_close(&s, &sc->shapes[i], 2);
        if (ok)
            sc->shapes[sc->n++] = s;
    }
}

/* Colours: drawn from three of the palette (not white), so that colours
 * repeat; at least one shape's colour is its own (the grounding target). */
static void color_shapes(tern_shapes_gen *g, tern_scene *sc)
{
    int pool[TERN_SHAPES_COLORS], np = 0;
    for (int c = 0; c < TERN_SHAPES_COLORS; c++)
        if (c != TERN_SHAPES_BACKGROUND)
            pool[np++] = c;
    for (int i = 0; i < 3; i++) { /* a partial shuffle: the first three */
        int j = i + (int)below(&g->rng, (uint32_t)(np - i));
        int t = pool[i];
        pool[i] = pool[j];
        pool[j] = t;
    }
    for (int i = 0; i < sc->n; i++)
        sc->shapes[i].color = pool[below(&g->rng, 3)];
    int uses[TERN_SHAPES_COLORS] = {0}, unique = 0;
    for (int i = 0; i < sc->n; i++)
        uses[sc->shapes[i].color]++;
    for (int c = 0; c < TERN_SHAPES_COLORS; c++)
        unique += uses[c] == 1;
    if (!unique)
        sc->shapes[sc->n - 1].color = pool[3]; /* not among the three */
}

static void draw(tern_scene *sc)
{
    int size = sc->size;
    const uint8_t *bg = tern_shapes_palette[TERN_SHAPES_BACKGROUND].rgb;
    for (size_t i = 0; i < (size_t)size * size; i++)
        memcpy(sc->rgb + 3 * i, bg, 3);
    for (int k = 0; k < sc->n; k++) {
        const tern_shape *s = &sc->shapes[k];
        for (int y = s->y0; y < s->y1; y++)
            for (int x = s->x0; x < s->x1; x++)
                if (tern_shape_covers(s, x, y))
                    memcpy(sc->rgb + 3 * ((size_t)y * size + x),
                           tern_shapes_palette[s->color].rgb, 3);
    }
}

static int count_color(const tern_scene *sc, int color)
{
    int n = 0;
    for (int i = 0; i < sc->n; i++)
        n += sc->shapes[i].color == color;
    return n;
}

/* The shape covering (x, y), or -1 for the background. */
static int shape_at(const tern_scene *sc, int x, int y)
{
    for (int i = 0; i < sc->n; i++)
        if (tern_shape_covers(&sc->shapes[i], x, y))
            return i;
    return -1;
}

static void task_count_regions(tern_shapes_gen *g, const tern_scene *sc, tern_shape_task *t)
{
    int color;
    if (below(&g->rng, 5) < 4) {
        color = sc->shapes[below(&g->rng, (uint32_t)sc->n)].color;
    } else { /* a colour that is not there: the answer is 0 */
        do
            color = (int)below(&g->rng, TERN_SHAPES_COLORS);
        while (color == TERN_SHAPES_BACKGROUND || count_color(sc, color) > 0);
    }
    const char *name = tern_shapes_palette[color].name;
    int n = count_color(sc, color);
    t->type = "count_regions";
    snprintf(t->prompt, sizeof t->prompt,
             "How many %s shapes are in the picture? Answer with a number.", name);
    snprintf(t->fields, sizeof t->fields, "\"color\":\"%s\"", name);
    snprintf(t->correct, sizeof t->correct, "%d", n);
    snprintf(t->wrong, sizeof t->wrong, "%d", n + 1);
}

static void task_color_at(tern_shapes_gen *g, const tern_scene *sc, tern_shape_task *t)
{
    int x, y, color;
    if (below(&g->rng, 4) < 3) { /* a pixel of a shape */
        const tern_shape *s = &sc->shapes[below(&g->rng, (uint32_t)sc->n)];
        do {
            x = between(&g->rng, s->x0, s->x1 - 1);
            y = between(&g->rng, s->y0, s->y1 - 1);
        } while (!tern_shape_covers(s, x, y));
        color = s->color;
    } else { /* the background */
        do {
            x = (int)below(&g->rng, (uint32_t)sc->size);
            y = (int)below(&g->rng, (uint32_t)sc->size);
        } while (shape_at(sc, x, y) >= 0);
        color = TERN_SHAPES_BACKGROUND;
    }
    t->type = "color_at";
    snprintf(t->prompt, sizeof t->prompt,
             "What colour is the pixel at x = %d, y = %d (in pixels from the top-left corner, "
             "starting at 0)? Answer with one colour name: black, white, gray, red, green, "
             "blue, yellow, orange, purple, pink, brown, cyan or magenta.", x, y);
    snprintf(t->fields, sizeof t->fields, "\"point\":[%d,%d]", x, y);
    snprintf(t->correct, sizeof t->correct, "%s", tern_shapes_palette[color].name);
    snprintf(t->wrong, sizeof t->wrong, "%s",
             tern_shapes_palette[color == 3 ? 5 : 3].name); /* blue for red, else red */
}

static void task_grounding(tern_shapes_gen *g, const tern_scene *sc, tern_shape_task *t)
{
    int pick[TERN_SHAPES_MAX], n = 0;
    for (int i = 0; i < sc->n; i++)
        if (count_color(sc, sc->shapes[i].color) == 1)
            pick[n++] = i;
    const tern_shape *s = &sc->shapes[pick[below(&g->rng, (uint32_t)n)]];
    t->type = "grounding";
    snprintf(t->prompt, sizeof t->prompt,
             "The picture is %dx%d pixels. Give the bounding box of the %s %s as [x1, y1, x2, "
             "y2]: x1 and y1 its left and top edges, x2 and y2 its right and bottom edges, in "
             "pixels from the top-left corner.", sc->size, sc->size,
             tern_shapes_palette[s->color].name, kind_names[s->kind]);
    snprintf(t->fields, sizeof t->fields, "\"box\":[%d,%d,%d,%d]", s->x0, s->y0, s->x1, s->y1);
    snprintf(t->correct, sizeof t->correct, "[%d, %d, %d, %d]", s->x0, s->y0, s->x1, s->y1);
    snprintf(t->wrong, sizeof t->wrong, "[0, 0, 1, 1]"); /* the margin: never overlaps */
}

static void task_counting(tern_shapes_gen *g, const tern_scene *sc, tern_shape_task *t)
{
    uint32_t k = below(&g->rng, 4);
    int n = 0;
    t->type = "counting";
    if (k == 3) {
        n = sc->n;
        snprintf(t->prompt, sizeof t->prompt,
                 "How many shapes are in the picture? Answer with a number.");
    } else {
        for (int i = 0; i < sc->n; i++)
            n += sc->shapes[i].kind == (int)k;
        snprintf(t->prompt, sizeof t->prompt,
                 "How many %s are in the picture? Answer with a number.", kind_plurals[k]);
    }
    t->fields[0] = '\0';
    snprintf(t->answer, sizeof t->answer, "%d", n);
    snprintf(t->correct, sizeof t->correct, "%d", n);
    snprintf(t->wrong, sizeof t->wrong, "%d", n + 1);
}

int tern_shapes_next(tern_shapes_gen *g, tern_scene *scene, tern_shape_task tasks[TERN_SHAPES_TASKS])
{
    memset(scene, 0, sizeof *scene);
    scene->size = g->size;
    place_shapes(g, scene);
    color_shapes(g, scene);
    scene->rgb = malloc((size_t)g->size * (size_t)g->size * 3);
    if (!scene->rgb)
        return TERN_ENOMEM;
    draw(scene);
    memset(tasks, 0, TERN_SHAPES_TASKS * sizeof *tasks);
    task_count_regions(g, scene, &tasks[0]);
    task_color_at(g, scene, &tasks[1]);
    task_grounding(g, scene, &tasks[2]);
    task_counting(g, scene, &tasks[3]);
    /* every task stores a right answer, a demonstration for a supervised
     * warm-up; the reward judges count_regions, color_at and grounding from
     * the picture and the box all the same */
    for (int k = 0; k < TERN_SHAPES_TASKS; k++)
        snprintf(tasks[k].answer, sizeof tasks[k].answer, "%s", tasks[k].correct);
    return TERN_OK;
}
