/* vision.c: the `vision` reward plugin: descriptor, settings, and the verdict
 * on each response of a batch for the seven task types (grounding, detection,
 * counting, choice, ocr, count_regions, color_at). The parsers are in
 * boxes.c and text.c, the image decoders in the core's image_file.c (one
 * decoder for the core and this plugin: core/src/image/), the colour names in
 * palette.c, region counting in regions.c; the user's guide is the `vision`
 * section of docs/rewards.md.
 *
 * No cache and no mutable state: an instance is its settings, and score()
 * works on its own stack and heap blocks freed before it returns, so it is
 * reentrant and the descriptor says TERN_CAP_THREAD_SAFE. */
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tern/plugin.h>
#include <tern/reward.h>

#include "../common/reward_plugin.h"
#include "boxes.h"
#include "image_file.h"
#include "palette.h"
#include "regions.h"
#include "text.h"

static const tern_host *host;

enum {
    T_GROUNDING,
    T_DETECTION,
    T_COUNTING,
    T_CHOICE,
    T_OCR,
    T_COUNT_REGIONS,
    T_COLOR_AT,
    N_TYPES
};
static const char *const type_names[N_TYPES] = {"grounding", "detection",     "counting",
                                                "choice",    "ocr",           "count_regions",
                                                "color_at"};
#define TYPE_LIST "grounding, detection, counting, choice, ocr, count_regions or color_at"
#define TYPE_CHOICES "grounding|detection|counting|choice|ocr|count_regions|color_at"

enum { SCALE_PIXEL, SCALE_NORMALIZED, SCALE_QWEN };

/* Gold boxes read at most for `detection`. */
#define GOLD_BOXES_MAX 1000
/* Gold strings read at most for `ocr`. */
#define OCR_GOLD_MAX 64
/* Bytes of text quoted in a reason. */
#define EXCERPT_MAX 32

typedef struct vision_state {
    tern_ctx *ctx;
    const char *type_field, *answer_field, *image_field;
    const char *image_root; /* NULL when unset or empty */
    int default_type;       /* -1: none */
    uint64_t max_pixels;
    int box_scale;
    double iou_threshold;
    int match_labels;
    int connectivity;
    int color_tolerance;
    uint64_t min_region_pixels;
    size_t max_boxes;
    int answer_tag;
    int verify_images;
} vision_state;

/* What one verdict found. */
typedef struct verdict {
    double reward;
    int accuracy, format;
    int has_iou, has_anls;
    double iou, anls;
} verdict;

static void why(char *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void why(char *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r, TERN_REWARD_REASON_MAX, fmt, ap);
    va_end(ap);
}

/* ---- Task fields ------------------------------------------------------------ */

/* Field `key` as a jansson value (NULL when absent or out of memory). */
static json_t *task_value(const tern_task *task, const char *key)
{
    char *text = host->task_json(task, key);
    if (!text)
        return NULL;
    json_t *v = json_loads(text, JSON_DECODE_ANY, NULL);
    host->free(text);
    return v;
}

static int task_has(const tern_task *task, const char *key)
{
    char *text = host->task_json(task, key);
    host->free(text);
    return text != NULL;
}

/* s[0..len) quoted for a reason. */
static const char *quote(char *buf, const char *s, size_t len)
{
    reward_excerpt(buf, EXCERPT_MAX + 4, s, len, EXCERPT_MAX);
    return buf;
}

/* ---- Images ----------------------------------------------------------------------- */

/* A path for reasons: the last bytes of a long one, after "...". */
static void path_excerpt(char *dst, size_t cap, const char *path)
{
    size_t n = strlen(path), keep = 56;
    if (n <= keep) {
        reward_excerpt(dst, cap, path, n, keep);
        return;
    }
    const char *tail = path + n - keep;
    while (((unsigned char)*tail & 0xC0) == 0x80)
        tail++;
    char part[64];
    reward_excerpt(part, sizeof part, tail, strlen(tail), keep);
    snprintf(dst, cap, "...%s", part);
}

/* The path of a task's image: absolute as given; relative against
 * image_root, else the tasks file's directory, else the working directory.
 * NULL when out of memory. */
static char *resolve_image(const vision_state *st, const tern_task *task, const char *rel)
{
    const char *base = NULL;
    size_t base_len = 0;
    if (rel[0] != '/') {
        if (st->image_root) {
            base = st->image_root;
            base_len = strlen(base);
        } else if (TERN_HAS(host, task_origin) && host->task_origin) {
            const char *origin = host->task_origin(task);
            const char *slash = origin ? strrchr(origin, '/') : NULL;
            if (slash) {
                base = origin;
                base_len = slash == origin ? 1 : (size_t)(slash - origin);
            }
        }
    }
    size_t n = strlen(rel), total = base_len + 1 + n + 1;
    char *p = malloc(total);
    if (!p)
        return NULL;
    if (base_len)
        snprintf(p, total, "%.*s%s%s", (int)base_len, base, base[base_len - 1] == '/' ? "" : "/",
                 rel);
    else
        memcpy(p, rel, n + 1);
    return p;
}

enum { IMG_OK = 1, IMG_VERDICT = 0, IMG_NOMEM = -1 };

/* Read the task's image: its dimensions, or its pixels with
 * want == IMAGE_FILE_PIXELS (or verify_images). A task without the field is
 * fine unless `required`: then *have stays 0. IMG_OK, IMG_VERDICT (the
 * reason says why the image cannot be used) or IMG_NOMEM. */
static int task_image(const vision_state *st, const tern_task *task, int want, int required,
                      image_rgb *img, int *have, char *reason)
{
    *have = 0;
    memset(img, 0, sizeof *img);
    const char *rel = host->task_string(task, st->image_field);
    if (!rel) {
        if (task_has(task, st->image_field)) {
            why(reason, "task field '%s' is not a string (give the image's path)",
                st->image_field);
            return IMG_VERDICT;
        }
        if (!required)
            return IMG_OK;
        why(reason, "task has no '%s' field (the image's path)", st->image_field);
        return IMG_VERDICT;
    }
    if (!rel[0]) {
        why(reason, "task field '%s' is empty", st->image_field);
        return IMG_VERDICT;
    }
    char *path = resolve_image(st, task, rel);
    if (!path)
        return IMG_NOMEM;
    char msg[112], shown[72];
    image_file_status s = image_file_load(path, st->max_pixels,
                                          st->verify_images ? IMAGE_FILE_PIXELS : want, img, msg,
                                          sizeof msg);
    if (s == IMAGE_FILE_NO_MEMORY) {
        free(path);
        return IMG_NOMEM;
    }
    if (s != IMAGE_FILE_OK) {
        path_excerpt(shown, sizeof shown, path);
        /* the limit is this plugin's setting: say which */
        why(reason, "image %s: %s%s", shown, msg, s == IMAGE_FILE_TOO_BIG ? " (max_pixels)" : "");
        free(path);
        return IMG_VERDICT;
    }
    free(path);
    if (want == IMAGE_FILE_HEADER)
        image_rgb_free(img); /* decoded only to verify it */
    *have = 1;
    return IMG_OK;
}

/* ---- grounding and detection ------------------------------------------------------- */

static const char *const scale_names[] = {"pixel", "normalized", "qwen"};

/* Response coordinates to pixels. */
static void to_pixels(const vision_state *st, const image_rgb *img, vis_box *b)
{
    if (st->box_scale == SCALE_PIXEL)
        return;
    double w = img->w, h = img->h, d = st->box_scale == SCALE_QWEN ? 1000 : 1;
    b->x1 = b->x1 * w / d;
    b->x2 = b->x2 * w / d;
    b->y1 = b->y1 * h / d;
    b->y2 = b->y2 * h / d;
}

static void box_text(char *dst, size_t cap, const vis_box *b)
{
    snprintf(dst, cap, "[%.6g, %.6g, %.6g, %.6g]", b->x1, b->y1, b->x2, b->y2);
}

/* The gold box: "box" as [x1, y1, x2, y2], else answer_field as such a
 * list or a string holding a box. 1, or 0 with the reason. */
static int gold_box(const vision_state *st, const tern_task *task, vis_box *g, char *reason)
{
    const char *field = task_has(task, "box") ? "box" : st->answer_field;
    const char *s = host->task_string(task, field);
    int ok = 0;
    if (s) {
        ok = vis_parse_box(s, strlen(s), g);
    } else {
        char *text = host->task_json(task, field);
        if (!text) {
            why(reason, "task has no gold box: give \"box\": [x1, y1, x2, y2] in pixels");
            return 0;
        }
        ok = text[0] == '[' && vis_parse_box(text, strlen(text), g) && g->at == 0 &&
             g->len == strlen(text);
        host->free(text);
    }
    if (!ok) {
        why(reason, "task field '%s' is not a box [x1, y1, x2, y2]", field);
        return 0;
    }
    if (!vis_box_valid(g)) {
        char b[128];
        box_text(b, sizeof b, g);
        why(reason, "gold box %s is not valid (x1 < x2, y1 < y2)", b);
        return 0;
    }
    return 1;
}

static int needs_size(const vision_state *st) { return st->box_scale != SCALE_PIXEL; }

static int judge_grounding(const vision_state *st, const tern_task *task, const char *resp,
                           size_t len, verdict *v, char *reason)
{
    vis_box p;
    int found = vis_parse_box(resp, len, &p);
    v->format = found && vis_box_valid(&p);
    v->has_iou = 1;
    vis_box g;
    if (!gold_box(st, task, &g, reason))
        return TERN_OK;
    image_rgb img = {0};
    int have;
    int rc = task_image(st, task, IMAGE_FILE_HEADER, needs_size(st), &img, &have, reason);
    if (rc == IMG_NOMEM)
        return TERN_ENOMEM;
    if (rc == IMG_VERDICT)
        return TERN_OK;
    char pb[128], gb[128];
    box_text(gb, sizeof gb, &g);
    if (!found) {
        why(reason, "no box [x1, y1, x2, y2] in the response; gold %s", gb);
        return TERN_OK;
    }
    to_pixels(st, &img, &p);
    box_text(pb, sizeof pb, &p);
    if (!v->format) {
        why(reason, "box %s is not valid (x1 < x2, y1 < y2, finite)", pb);
        return TERN_OK;
    }
    v->iou = vis_iou(&p, &g);
    v->accuracy = v->iou >= 0.5;
    v->reward = st->iou_threshold > 0 ? (v->iou >= st->iou_threshold) : v->iou;
    why(reason, "IoU %.3f: box %s, gold %s", v->iou, pb, gb);
    return TERN_OK;
}

/* The gold boxes: "boxes", else answer_field, as a list of boxes (the same
 * forms a response may use). -1 with the reason when there are none. */
static long gold_boxes(const vision_state *st, const tern_task *task, vis_box *g, char *reason)
{
    const char *field = task_has(task, "boxes") ? "boxes" : st->answer_field;
    char *json = NULL;
    const char *s = host->task_string(task, field);
    if (!s) {
        json = host->task_json(task, field);
        if (!json) {
            why(reason, "task has no gold boxes: give \"boxes\": [[x1, y1, x2, y2], ...]");
            return -1;
        }
        s = json;
    }
    size_t total = 0;
    int empty = 0;
    vis_parse_detections(s, strlen(s), g, GOLD_BOXES_MAX, &total, &empty);
    host->free(json);
    if (total == 0 && !empty) {
        why(reason, "task field '%s' holds no boxes (give [] for none)", field);
        return -1;
    }
    if (total > GOLD_BOXES_MAX) {
        why(reason, "task field '%s' holds %zu boxes, more than %d", field, total,
            GOLD_BOXES_MAX);
        return -1;
    }
    for (size_t i = 0; i < total; i++)
        if (!vis_box_valid(&g[i])) {
            char b[128];
            box_text(b, sizeof b, &g[i]);
            why(reason, "gold box %zu %s is not valid (x1 < x2, y1 < y2)", i + 1, b);
            return -1;
        }
    return (long)total;
}

static int judge_detection(const vision_state *st, const tern_task *task, const char *resp,
                           size_t len, verdict *v, char *reason)
{
    size_t cap = st->max_boxes;
    vis_box *pred = malloc(cap * sizeof *pred);
    vis_box *gold = malloc(GOLD_BOXES_MAX * sizeof *gold);
    size_t *order = malloc(cap * sizeof *order);
    unsigned char *taken = malloc(GOLD_BOXES_MAX);
    if (!pred || !gold || !order || !taken) {
        free(pred);
        free(gold);
        free(order);
        free(taken);
        return TERN_ENOMEM;
    }
    size_t total = 0;
    int empty = 0, rc = TERN_OK;
    vis_parse_detections(resp, len, pred, cap, &total, &empty);
    v->format = total > 0 || empty;
    v->has_iou = 1;
    long ngold = gold_boxes(st, task, gold, reason);
    image_rgb img = {0};
    int have = 0, got = ngold < 0 ? IMG_VERDICT : task_image(st, task, IMAGE_FILE_HEADER,
                                                             needs_size(st), &img, &have, reason);
    if (got == IMG_NOMEM) {
        rc = TERN_ENOMEM;
    } else if (got == IMG_OK && !v->format) {
        why(reason, "no boxes in the response (answer [] to predict none); gold has %ld", ngold);
    } else if (got == IMG_OK) {
        size_t kept = total < cap ? total : cap;
        for (size_t i = 0; i < kept; i++)
            to_pixels(st, &img, &pred[i]);
        vis_match m;
        vis_match_boxes(pred, kept, gold, (size_t)ngold, 0.5, st->match_labels, order, taken,
                        &m);
        size_t denom = total > (size_t)ngold ? total : (size_t)ngold;
        v->iou = denom ? m.sum_iou / (double)denom : 1;
        v->reward = v->iou;
        v->accuracy = m.matched == (size_t)ngold && total == (size_t)ngold;
        if (denom == 0)
            why(reason, "no boxes predicted and none in the gold");
        else if (total == 0)
            why(reason, "predicted no boxes ([]); gold has %ld", ngold);
        else
            why(reason, "matched %zu of %ld gold boxes with %zu predicted%s: IoU sum %.3f / %zu "
                "= %.3f", m.matched, ngold, total, total > cap ? " (read the first max_boxes)" : "",
                m.sum_iou, denom, v->iou);
    }
    free(pred);
    free(gold);
    free(order);
    free(taken);
    return rc;
}

/* ---- counting and count_regions ------------------------------------------------------ */

/* "3" or "seven" or "2.5" as written, for a reason. */
static const char *count_text(char *buf, const char *s, const vis_count *c)
{
    return quote(buf, s + c->at, c->len);
}

/* Compare the response's count with the gold; writes the verdict and the
 * reason ("gold_text" says what the gold is, e.g. "gold 3" or "the image has
 * 3 red regions"). */
static void judge_count(const char *resp, size_t len, const vis_count *gold, const char *gold_text,
                        verdict *v, char *reason)
{
    vis_count c;
    char got[EXCERPT_MAX + 4];
    vis_extract_count(resp, len, &c);
    v->format = c.found && c.whole;
    if (!c.found) {
        why(reason, "no count in the response; %s", gold_text);
        return;
    }
    if (!c.whole) {
        why(reason, "%s is not a whole number; %s", count_text(got, resp, &c), gold_text);
        return;
    }
    v->accuracy = vis_count_equal(&c, gold);
    v->reward = v->accuracy;
    why(reason, "count %s%s; %s", count_text(got, resp, &c), v->accuracy ? " is right" : " is wrong",
        gold_text);
}

static int judge_counting(const vision_state *st, const tern_task *task, const char *resp,
                          size_t len, verdict *v, char *reason)
{
    vis_count c, gold;
    vis_extract_count(resp, len, &c);
    v->format = c.found && c.whole;
    char digits[32];
    const char *s = host->task_string(task, st->answer_field);
    double x = 0;
    if (s) {
        if (!vis_extract_count(s, strlen(s), &gold) || !gold.whole || gold.negative) {
            char q[EXCERPT_MAX + 4];
            why(reason, "task field '%s' (%s) is not a count", st->answer_field,
                quote(q, s, strlen(s)));
            return TERN_OK;
        }
    } else if (host->task_number(task, st->answer_field, &x) == TERN_OK && isfinite(x) &&
               x >= 0 && x == floor(x) && x < 1e15) {
        snprintf(digits, sizeof digits, "%.0f", x);
        s = digits;
        vis_extract_count(s, strlen(s), &gold);
    } else {
        why(reason, "task field '%s' is %s; give the count (\"%s\": \"3\" or 3)",
            st->answer_field, task_has(task, st->answer_field) ? "not a count" : "missing",
            st->answer_field);
        return TERN_OK;
    }
    image_rgb img = {0};
    int have;
    int rc = task_image(st, task, IMAGE_FILE_HEADER, 0, &img, &have, reason);
    if (rc != IMG_OK)
        return rc == IMG_NOMEM ? TERN_ENOMEM : TERN_OK;
    char gq[EXCERPT_MAX + 4], gt[EXCERPT_MAX + 16];
    snprintf(gt, sizeof gt, "gold %s", count_text(gq, s, &gold));
    judge_count(resp, len, &gold, gt, v, reason);
    return TERN_OK;
}

/* The task's colour: a palette name, "#rrggbb" or [r, g, b]. 1 with rgb and
 * its name for reasons, or 0 with the reason. */
static int task_color(const tern_task *task, uint8_t rgb[3], char *name, size_t cap, char *reason)
{
    json_t *c = task_value(task, "color");
    int ok = 0;
    if (json_is_string(c)) {
        const char *s = json_string_value(c);
        size_t n = strlen(s);
        int k = vis_palette_lookup(s, n);
        if (k >= 0) {
            memcpy(rgb, vis_palette[k].rgb, 3);
            snprintf(name, cap, "%s", vis_palette[k].name);
            ok = 1;
        } else if (n == 7 && s[0] == '#' && strspn(s + 1, "0123456789abcdefABCDEF") == 6) {
            unsigned long hex = strtoul(s + 1, NULL, 16);
            rgb[0] = (uint8_t)(hex >> 16);
            rgb[1] = (uint8_t)(hex >> 8);
            rgb[2] = (uint8_t)hex;
            snprintf(name, cap, "%s", s);
            ok = 1;
        }
    } else if (json_is_array(c) && json_array_size(c) == 3) {
        ok = 1;
        for (size_t i = 0; i < 3 && ok; i++) {
            json_t *e = json_array_get(c, i);
            json_int_t x = json_is_integer(e) ? json_integer_value(e) : -1;
            ok = x >= 0 && x <= 255;
            rgb[i] = (uint8_t)x;
        }
        if (ok)
            snprintf(name, cap, "(%d,%d,%d)", rgb[0], rgb[1], rgb[2]);
    }
    if (!ok)
        why(reason, "task field 'color' is %s; give a colour name, \"#rrggbb\" or [r, g, b]",
            c ? "not a colour" : "missing");
    json_decref(c);
    return ok;
}

static int judge_count_regions(const vision_state *st, const tern_task *task, const char *resp,
                               size_t len, verdict *v, char *reason)
{
    vis_count c;
    vis_extract_count(resp, len, &c);
    v->format = c.found && c.whole;
    uint8_t rgb[3];
    char name[32];
    if (!task_color(task, rgb, name, sizeof name, reason))
        return TERN_OK;
    int conn = st->connectivity;
    double x = 0;
    if (host->task_number(task, "connectivity", &x) == TERN_OK) {
        if (x != 4 && x != 8) {
            why(reason, "task field 'connectivity' is %g; give 4 or 8", x);
            return TERN_OK;
        }
        conn = (int)x;
    }
    image_rgb img = {0};
    int have;
    int rc = task_image(st, task, IMAGE_FILE_PIXELS, 1, &img, &have, reason);
    if (rc == IMG_NOMEM)
        return TERN_ENOMEM;
    if (rc == IMG_VERDICT)
        return TERN_OK;
    uint64_t n = 0;
    int failed = vis_count_regions(&img, rgb, st->color_tolerance, conn, st->min_region_pixels, &n);
    image_rgb_free(&img);
    if (failed)
        return TERN_ENOMEM;
    char digits[32], gt[96];
    snprintf(digits, sizeof digits, "%llu", (unsigned long long)n);
    vis_count gold;
    vis_extract_count(digits, strlen(digits), &gold);
    snprintf(gt, sizeof gt, "the image has %s %s region%s", digits, name, n == 1 ? "" : "s");
    judge_count(resp, len, &gold, gt, v, reason);
    return TERN_OK;
}

/* ---- color_at ---------------------------------------------------------------------------- */

static int judge_color_at(const vision_state *st, const tern_task *task, const char *resp,
                          size_t len, verdict *v, char *reason)
{
    size_t at = 0, n = 0;
    int said = vis_palette_find_last(resp, len, &at, &n);
    v->format = said >= 0;
    json_t *pt = task_value(task, "point");
    double px = NAN, py = NAN;
    if (json_is_array(pt) && json_array_size(pt) == 2 && json_is_number(json_array_get(pt, 0)) &&
        json_is_number(json_array_get(pt, 1))) {
        px = json_number_value(json_array_get(pt, 0));
        py = json_number_value(json_array_get(pt, 1));
    }
    json_decref(pt);
    if (!isfinite(px) || !isfinite(py)) {
        why(reason, "task field 'point' is %s; give [x, y] in pixels",
            task_has(task, "point") ? "not a point" : "missing");
        return TERN_OK;
    }
    image_rgb img = {0};
    int have;
    int rc = task_image(st, task, IMAGE_FILE_PIXELS, 1, &img, &have, reason);
    if (rc == IMG_NOMEM)
        return TERN_ENOMEM;
    if (rc == IMG_VERDICT)
        return TERN_OK;
    double fx = floor(px), fy = floor(py);
    if (fx < 0 || fy < 0 || fx >= img.w || fy >= img.h) {
        why(reason, "point (%.6g, %.6g) is outside the %ux%u image", px, py, img.w, img.h);
        image_rgb_free(&img);
        return TERN_OK;
    }
    const uint8_t *p = img.rgb + 3 * ((size_t)fy * img.w + (size_t)fx);
    int gold = vis_palette_nearest(p);
    char q[EXCERPT_MAX + 4];
    if (said < 0)
        why(reason, "no colour name in the response; pixel (%.0f, %.0f) is %s (%d,%d,%d)", fx, fy,
            vis_palette[gold].name, p[0], p[1], p[2]);
    else {
        v->accuracy = said == gold;
        v->reward = v->accuracy;
        why(reason, "response %s is %s: pixel (%.0f, %.0f) is %s (%d,%d,%d)", quote(q, resp + at, n),
            v->accuracy ? "right" : "wrong", fx, fy, vis_palette[gold].name, p[0], p[1], p[2]);
    }
    image_rgb_free(&img);
    return TERN_OK;
}

/* ---- choice ---------------------------------------------------------------------------------- */

static int judge_choice(const vision_state *st, const tern_task *task, const char *resp,
                        size_t len, verdict *v, char *reason)
{
    const char *g = host->task_string(task, st->answer_field);
    char letter = 0;
    int yesno = 0;
    /* the letters the task offers: its options or choices list, else A-E */
    char last = 'E';
    json_t *opts = task_value(task, "options");
    if (!json_is_array(opts)) {
        json_decref(opts);
        opts = task_value(task, "choices");
    }
    if (json_is_array(opts) && json_array_size(opts) >= 1 && json_array_size(opts) <= 26)
        last = (char)('A' + json_array_size(opts) - 1);
    json_decref(opts);
    vis_choice c;
    int gold_ok = g && vis_gold_choice(g, strlen(g), &letter, &yesno);
    if (gold_ok && yesno)
        vis_extract_yesno(resp, len, &c);
    else
        vis_extract_letter(resp, len, last, &c);
    v->format = c.found;
    if (!gold_ok) {
        char q[EXCERPT_MAX + 4];
        if (g)
            why(reason, "task field '%s' (%s) is not an option letter or yes/no", st->answer_field,
                quote(q, g, strlen(g)));
        else
            why(reason, "task field '%s' is missing or not a string; give \"B\" or \"yes\"",
                st->answer_field);
        return TERN_OK;
    }
    image_rgb img = {0};
    int have;
    int rc = task_image(st, task, IMAGE_FILE_HEADER, 0, &img, &have, reason);
    if (rc == IMG_NOMEM)
        return TERN_ENOMEM;
    if (rc == IMG_VERDICT)
        return TERN_OK;
    const char *gold_text = yesno ? (letter == 'Y' ? "yes" : "no") : NULL;
    char gl[2] = {letter, 0};
    if (!c.found) {
        why(reason, "no %s in the response; gold %s", yesno ? "yes or no" : "option letter",
            yesno ? gold_text : gl);
        return TERN_OK;
    }
    v->accuracy = c.letter == letter;
    v->reward = v->accuracy;
    char q[EXCERPT_MAX + 4];
    why(reason, "%s %s is %s; gold %s", yesno ? "answer" : "option", quote(q, resp + c.at, c.len),
        v->accuracy ? "right" : "wrong", yesno ? gold_text : gl);
    return TERN_OK;
}

/* ---- ocr --------------------------------------------------------------------------------------- */

static int judge_ocr(const vision_state *st, const tern_task *task, const char *resp, size_t len,
                     verdict *v, char *reason)
{
    const char *p = resp;
    size_t n = len;
    vis_trim(&p, &n);
    v->format = n > 0;
    v->has_anls = 1;
    const char *field = task_has(task, "answers") ? "answers" : st->answer_field;
    json_t *gold = task_value(task, field);
    const char *golds[OCR_GOLD_MAX];
    size_t ng = 0;
    int bad = 0;
    if (json_is_string(gold)) {
        golds[ng++] = json_string_value(gold);
    } else if (json_is_array(gold)) {
        for (size_t i = 0; i < json_array_size(gold) && !bad; i++) {
            json_t *e = json_array_get(gold, i);
            bad = !json_is_string(e);
            if (!bad && ng < OCR_GOLD_MAX)
                golds[ng++] = json_string_value(e);
        }
    }
    if (!ng || bad) {
        why(reason, "task field '%s' is %s; give the text (\"%s\": \"STOP\" or [\"STOP\", ...])",
            field, gold ? "not a string or a list of strings" : "missing", field);
        json_decref(gold);
        return TERN_OK;
    }
    image_rgb img = {0};
    int have;
    int rc = task_image(st, task, IMAGE_FILE_HEADER, 0, &img, &have, reason);
    if (rc != IMG_OK) {
        json_decref(gold);
        return rc == IMG_NOMEM ? TERN_ENOMEM : TERN_OK;
    }
    double best = 0, best_sim = -1;
    size_t which = 0;
    for (size_t i = 0; i < ng; i++) {
        double sim = 0, s = vis_anls(p, n, golds[i], strlen(golds[i]), &sim);
        if (s < 0) {
            json_decref(gold);
            return TERN_ENOMEM;
        }
        if (sim > best_sim) {
            best_sim = sim;
            best = s;
            which = i;
        }
    }
    v->anls = best;
    v->reward = best;
    v->accuracy = best >= 0.5;
    char q[EXCERPT_MAX + 4], gq[EXCERPT_MAX + 4];
    quote(gq, golds[which], strlen(golds[which]));
    if (!n)
        why(reason, "empty answer; gold \"%s\"", gq);
    else if (best > 0)
        why(reason, "ANLS %.3f: \"%s\" against gold \"%s\"", best, quote(q, p, n), gq);
    else
        why(reason, "ANLS 0 (similarity %.3f < 0.5): \"%s\" against gold \"%s\"", best_sim,
            quote(q, p, n), gq);
    json_decref(gold);
    return TERN_OK;
}

/* ---- Scoring ------------------------------------------------------------------------------------ */

typedef int (*judge_fn)(const vision_state *, const tern_task *, const char *, size_t, verdict *,
                        char *);
static const judge_fn judges[N_TYPES] = {judge_grounding,  judge_detection,     judge_counting,
                                         judge_choice,     judge_ocr,           judge_count_regions,
                                         judge_color_at};

static int type_of(const char *s)
{
    for (int i = 0; i < N_TYPES; i++)
        if (strcmp(s, type_names[i]) == 0)
            return i;
    return -1;
}

static int score_one(const void *state, const tern_reward_item *item, tern_reward_result *r)
{
    const vision_state *st = state;
    const char *resp = item->response ? item->response : "";
    size_t len = item->response ? item->response_len : 0;
    if (st->answer_tag)
        vis_answer_region(resp, len, &resp, &len);
    verdict v = {0};
    const tern_task *task = item->task;
    int type = -1, rc = TERN_OK;
    const char *name = task ? host->task_string(task, st->type_field) : NULL;
    if (!task) {
        why(r->reason, "no task");
    } else if (name) {
        type = type_of(name);
        if (type < 0) {
            char q[EXCERPT_MAX + 4];
            why(r->reason, "unknown task type '%s' (%s)", quote(q, name, strlen(name)), TYPE_LIST);
        }
    } else if (task_has(task, st->type_field)) {
        why(r->reason, "task field '%s' is not a string (" TYPE_LIST ")", st->type_field);
    } else if (st->default_type >= 0) {
        type = st->default_type;
    } else {
        why(r->reason, "task has no '%s' field (" TYPE_LIST ")", st->type_field);
    }
    if (type >= 0)
        rc = judges[type](st, task, resp, len, &v, r->reason);
    if (rc != TERN_OK)
        return rc;
    if (!isfinite(v.reward))
        v.reward = 0;
    r->reward = v.reward;
    r->n_components = 0;
    r->components[r->n_components++] = (tern_reward_component){"accuracy", v.accuracy};
    r->components[r->n_components++] = (tern_reward_component){"format", v.format};
    if (v.has_iou)
        r->components[r->n_components++] = (tern_reward_component){"iou", v.iou};
    if (v.has_anls)
        r->components[r->n_components++] = (tern_reward_component){"anls", v.anls};
    if (!r->reason[0])
        why(r->reason, "%s", "judged");
    vis_clean_reason(r->reason, sizeof r->reason);
    return TERN_OK;
}

static int vision_score(void *state, const tern_reward_item *items, tern_reward_result *results,
                        size_t n)
{
    const vision_state *st = state;
    size_t at;
    int rc = reward_score_each(host, st->ctx, "vision", st, score_one, items, results, n, &at);
    if (rc != TERN_OK && at < n) /* a verdict failed, not the arguments */
        return host->fail(st->ctx, rc,
                          "vision: out of memory judging response %zu of %zu (an image "
                          "within max_pixels could not be decoded); lower max_pixels or "
                          "give the process more memory", at + 1, n);
    return rc;
}

/* ---- Instance -------------------------------------------------------------------------------------- */

static int vision_create(tern_ctx *ctx, void **state)
{
    *state = NULL;
    vision_state st = {.ctx = ctx, .default_type = -1};
    const char *default_type = NULL, *scale = NULL, *root = NULL;
    int64_t max_pixels = 0, conn = 0, tol = 0, min_region = 0, max_boxes = 0;
    /* the core checked and defaulted every key; a failure here is the core's */
    int rc = host->get_string(ctx, "type_field", &st.type_field);
    if (rc == TERN_OK)
        rc = host->get_string(ctx, "answer_field", &st.answer_field);
    if (rc == TERN_OK)
        rc = host->get_string(ctx, "image_field", &st.image_field);
    if (rc == TERN_OK)
        rc = host->get_int(ctx, "max_pixels", &max_pixels);
    if (rc == TERN_OK)
        rc = host->get_string(ctx, "box_scale", &scale);
    if (rc == TERN_OK)
        rc = host->get_float(ctx, "iou_threshold", &st.iou_threshold);
    if (rc == TERN_OK)
        rc = host->get_bool(ctx, "match_labels", &st.match_labels);
    if (rc == TERN_OK)
        rc = host->get_int(ctx, "connectivity", &conn);
    if (rc == TERN_OK)
        rc = host->get_int(ctx, "color_tolerance", &tol);
    if (rc == TERN_OK)
        rc = host->get_int(ctx, "min_region_pixels", &min_region);
    if (rc == TERN_OK)
        rc = host->get_int(ctx, "max_boxes", &max_boxes);
    if (rc == TERN_OK)
        rc = host->get_bool(ctx, "answer_tag", &st.answer_tag);
    if (rc == TERN_OK)
        rc = host->get_bool(ctx, "verify_images", &st.verify_images);
    if (rc == TERN_OK) {
        rc = host->get_string(ctx, "image_root", &root);
        if (rc == TERN_ENOTFOUND)
            rc = TERN_OK, root = NULL;
    }
    if (rc == TERN_OK) {
        rc = host->get_string(ctx, "default_type", &default_type);
        if (rc == TERN_ENOTFOUND)
            rc = TERN_OK, default_type = NULL;
    }
    if (rc != TERN_OK)
        return rc;
    if (!st.type_field[0])
        return host->setting_error(ctx, "type_field", "must name the task field holding the "
                                   "task's type, e.g. \"type\"");
    if (!st.answer_field[0])
        return host->setting_error(ctx, "answer_field", "must name the task field holding the "
                                   "gold answer, e.g. \"answer\"");
    if (!st.image_field[0])
        return host->setting_error(ctx, "image_field", "must name the task field holding the "
                                   "image's path, e.g. \"image\"");
    if (conn != 4 && conn != 8)
        return host->setting_error(ctx, "connectivity", "must be 4 (pixels touch by an edge) or "
                                   "8 (by an edge or a corner), not %lld", (long long)conn);
    st.image_root = root && root[0] ? root : NULL;
    st.default_type = default_type ? type_of(default_type) : -1;
    st.max_pixels = (uint64_t)max_pixels;
    st.connectivity = (int)conn;
    st.color_tolerance = (int)tol;
    st.min_region_pixels = (uint64_t)min_region;
    st.max_boxes = (size_t)max_boxes;
    st.box_scale = SCALE_PIXEL;
    for (int i = 0; i < 3; i++)
        if (strcmp(scale, scale_names[i]) == 0)
            st.box_scale = i;
    if ((rc = reward_keep_state(host, ctx, "vision", &st, sizeof st, state)) != TERN_OK)
        return rc;
    host->log(ctx, TERN_LOG_DEBUG, "types from task field '%s', images from '%s' (%s), boxes in "
              "%s coordinates", st.type_field, st.image_field,
              st.image_root ? st.image_root : "relative to the tasks file", scale);
    return TERN_OK;
}

static void vision_destroy(void *state) { free(state); }

/* ---- Descriptor --------------------------------------------------------------------------------------- */

static const tern_setting_spec settings[] = {
    TERN_SETTING(.name = "type_field", .type = TERN_SETTING_STRING, .def = "\"type\"",
                 .aka = "task_type|kind_field",
                 .doc = "task field naming the task's type: " TYPE_LIST),
    TERN_SETTING(.name = "default_type", .type = TERN_SETTING_STRING, .choices = TYPE_CHOICES,
                 .aka = "type",
                 .doc = "the type of tasks without type_field (unset: such a task scores 0)"),
    TERN_SETTING(.name = "answer_field", .type = TERN_SETTING_STRING, .def = "\"answer\"",
                 .aka = "gold_field|answer_key",
                 .doc = "task field holding the gold answer (count, option, text; a box when "
                        "there is no \"box\", boxes when there is no \"boxes\")"),
    TERN_SETTING(.name = "image_field", .type = TERN_SETTING_STRING, .def = "\"image\"",
                 .aka = "image_key|image_path",
                 .doc = "task field holding the image's path (PNG, PPM or PGM)"),
    TERN_SETTING(.name = "image_root", .type = TERN_SETTING_STRING,
                 .aka = "image_dir|images|root",
                 .doc = "directory relative image paths start from (unset: the tasks file's "
                        "directory)"),
    TERN_SETTING(.name = "max_pixels", .type = TERN_SETTING_INT, .def = "64000000", .min = 1,
                 .max = 1e9, .aka = "pixel_limit|max_image_pixels",
                 .doc = "largest image read, in pixels (width x height); a larger one scores 0"),
    TERN_SETTING(.name = "box_scale", .type = TERN_SETTING_STRING, .def = "\"pixel\"",
                 .choices = "pixel|normalized|qwen", .aka = "coordinates|box_format|scale",
                 .doc = "coordinates of boxes in responses: pixel, normalized (0..1 of the "
                        "image's size) or qwen (0..1000); gold boxes are in pixels"),
    TERN_SETTING(.name = "iou_threshold", .type = TERN_SETTING_FLOAT, .def = "0", .min = 0,
                 .max = 1, .aka = "threshold|iou",
                 .doc = "grounding: 0 rewards the IoU itself; above 0, reward 1 when IoU >= it, "
                        "else 0"),
    TERN_SETTING(.name = "match_labels", .type = TERN_SETTING_BOOL, .def = "true",
                 .aka = "labels|require_labels",
                 .doc = "detection: a prediction and a gold box that both have a label match only "
                        "when the labels are equal (ignoring case)"),
    TERN_SETTING(.name = "connectivity", .type = TERN_SETTING_INT, .def = "4", .min = 4, .max = 8,
                 .aka = "neighbours|neighbors",
                 .doc = "count_regions: 4 (pixels join through an edge) or 8 (also a corner)"),
    TERN_SETTING(.name = "color_tolerance", .type = TERN_SETTING_INT, .def = "0", .min = 0,
                 .max = 255, .aka = "tolerance|colour_tolerance",
                 .doc = "count_regions: a pixel has the colour when no channel differs by more"),
    TERN_SETTING(.name = "min_region_pixels", .type = TERN_SETTING_INT, .def = "1", .min = 1,
                 .max = 1e9, .aka = "min_region|min_pixels",
                 .doc = "count_regions: smaller regions (specks) are not counted"),
    TERN_SETTING(.name = "max_boxes", .type = TERN_SETTING_INT, .def = "100", .min = 1,
                 .max = 10000, .aka = "max_predictions",
                 .doc = "detection: predictions matched at most (all of them count in the "
                        "denominator)"),
    TERN_SETTING(.name = "answer_tag", .type = TERN_SETTING_BOOL, .def = "true",
                 .aka = "answer_tags",
                 .doc = "read only the last <answer>...</answer> of a response that has one"),
    TERN_SETTING(.name = "verify_images", .type = TERN_SETTING_BOOL, .def = "false",
                 .aka = "decode_images|check_images",
                 .doc = "decode every image in full, also where only its size is needed, so a "
                        "corrupt one scores 0"),
    TERN_SETTINGS_END};

static const tern_reward_ops ops = {
    .size = sizeof ops,
    .create = vision_create,
    .destroy = vision_destroy,
    .score = vision_score,
};

static const tern_plugin_descriptor descriptor = {
    .size = sizeof descriptor,
    .abi_major = TERN_ABI_MAJOR,
    .abi_minor = TERN_ABI_MINOR,
    .kind = TERN_KIND_REWARD,
    .name = "vision",
    .version = "1.0.0",
    .summary = "vision tasks: grounding IoU, detection, counting, choice, OCR (ANLS), and checks "
               "computed from the image",
    .caps = TERN_CAP_THREAD_SAFE,
    .ops = &ops,
    .settings = settings,
};

TERN_PLUGIN_EXPORT const tern_plugin_descriptor *tern_plugin_entry(const tern_host *h)
{
    host = h;
    return &descriptor;
}
