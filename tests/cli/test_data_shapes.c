/* test_data_shapes.c: `tern data shapes` end to end, as a user runs it: the
 * files it writes, the same bytes for a seed, refusing to overwrite, bad
 * arguments, cleaning up after a failed write; and that what it writes is
 * right: every PNG decodes (with the vision plugin's decoder) to the scene
 * data/shapes.h drew, and every task scores 1 with the right answer and 0
 * with a wrong one through the `vision` reward plugin, which finds the
 * images beside the tasks file (task_origin). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* shapes.h before command.h: tern/rng.h has a local named like its `result` */
#include "data/png_write.h"
#include "data/shapes.h"
#include "command.h"
#include "base/errmsg.h"
#include "harness.h"
#include "image_file.h"
#include "data/task.h"
#include "tern/reward.h"

#define TERN TERN_TEST_BIN
#define WORK TERN_TEST_WORK_DIR

Test(data_shapes, help_texts)
{
    result r;
    run(&r, "%s help data", TERN);
    cr_expect_eq(r.code, 0);
    cr_expect(strstr(r.out, "tern data shapes [--seed S] [--n N] [--size PX] [--types LIST] "
                            "OUT_DIR"), "%s", r.out);
    cr_expect(strstr(r.out, "--types LIST"), "%s", r.out);
    cr_expect(strstr(r.out, "usage: tern data arith"), "the arith usage stays first: %s", r.out);
    cr_expect(strstr(r.out, "--size PX"), "%s", r.out);
    run(&r, "%s data shapes --help", TERN);
    cr_expect_eq(r.code, 0);
    cr_expect(strstr(r.out, "tern data shapes"), "%s", r.out);
    run(&r, "%s help", TERN);
    cr_expect(strstr(r.out, "  tern data shapes"), "the overview lists it: %s", r.out);
    run(&r, "%s data", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "data needs a subcommand: arith, countdown, shapes"), "%s", r.err);
    run(&r, "%s data frob x", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "unknown subcommand 'data frob' (there are: arith, countdown, shapes)"), "%s",
              r.err);
}

Test(data_shapes, writes_tasks_and_images)
{
    result r;
    char text[65536];
    run(&r, "rm -rf sh && %s data shapes --seed 3 --n 4 --size 48 sh/a/b", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_expect_str_eq(r.err, "");
    cr_expect(strstr(r.out, "sh/a/b/shapes.jsonl: 16 tasks (4 each of count_regions, color_at, "
                            "grounding, counting)\n"), "%s", r.out);
    cr_expect(strstr(r.out, "sh/a/b/images: 4 PNG pictures of 48x48 pixels\n"), "%s", r.out);
    cr_expect(strstr(r.out, "seed 3"), "%s", r.out);
    slurp(WORK "/sh/a/b/shapes.jsonl", text, sizeof text);
    cr_expect_eq(count_lines(text), 16);
    static const char head[] = "{\"id\":\"shapes-00001-count_regions\",\"domain\":\"vision\","
                               "\"prompt\":\"How many ";
    cr_expect(strncmp(text, head, sizeof head - 1) == 0, "%s", text);
    cr_expect(strstr(text, "\"image\":\"images/shape-00004.png\",\"type\":\"counting\""), "%s",
              text);
    /* every line is a task the task file loader takes: a string answer */
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        tern_task *t = NULL;
        cr_assert_eq(tern_task_parse(p, (size_t)(nl - p), "line", &t), TERN_OK, "%.*s",
                     (int)(nl - p), p);
        cr_expect_not_null(tern_task_string(t, "answer"));
        cr_expect_not_null(tern_task_string(t, "id"));
        tern_task_free(t);
        p = nl + 1;
    }
    run(&r, "cd sh/a/b && ls -A && ls -A images && head -c 8 images/shape-00001.png | od -An -c");
    cr_expect_eq(r.code, 0);
    cr_expect(strstr(r.out, "images\nshapes.jsonl\nshape-00001.png\nshape-00002.png\n"
                            "shape-00003.png\nshape-00004.png\n"), "no temporary file: %s", r.out);
    cr_expect(strstr(r.out, "P   N   G"), "%s", r.out);

    /* an existing empty directory is fine, and so is an existing images/ */
    run(&r, "rm -rf sh2 && mkdir -p sh2/images && %s data shapes --n 1 sh2/ && ls -A sh2/images",
        TERN);
    cr_expect_eq(r.code, 0, "%s", r.err);
    cr_expect_str_eq(r.out + strlen(r.out) - strlen("shape-00001.png\n"), "shape-00001.png\n");
    run(&r, "rm -rf sh sh2");
}

Test(data_shapes, same_seed_same_bytes)
{
    result r;
    run(&r, "rm -rf s1 s2 s3 && %s data shapes --n 6 s1 >/dev/null && "
        "%s data shapes --seed=1 --n=6 --size=64 s2 >/dev/null && diff -r s1 s2 && "
        "%s data shapes --seed 2 --n 6 s3 >/dev/null && ! diff -rq s1 s3 >/dev/null",
        TERN, TERN, TERN);
    cr_expect_eq(r.code, 0, "same seed, same bytes; another seed, other files: %s %s", r.out,
                 r.err);
    /* the first pictures of a seed do not depend on --n */
    run(&r, "rm -rf s4 && %s data shapes --n 2 s4 >/dev/null && "
        "cmp s1/images/shape-00002.png s4/images/shape-00002.png && "
        "head -8 s1/shapes.jsonl | cmp - s4/shapes.jsonl", TERN);
    cr_expect_eq(r.code, 0, "%s %s", r.out, r.err);
    run(&r, "rm -rf s1 s2 s3 s4");
}

Test(data_shapes, never_overwrites)
{
    result r;
    char before[65536], after[65536];
    run(&r, "rm -rf dw && %s data shapes --n 3 dw", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    slurp(WORK "/dw/shapes.jsonl", before, sizeof before);

    run(&r, "%s data shapes --seed 9 --n 3 dw", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "tern data shapes: dw/shapes.jsonl: exists; nothing is ever "
                            "overwritten: remove it or give another OUT_DIR"), "%s", r.err);
    cr_expect(strstr(r.err, "dw/images/shape-00001.png: exists"), "%s", r.err);
    cr_expect_str_eq(r.out, "");
    slurp(WORK "/dw/shapes.jsonl", after, sizeof after);
    cr_expect_str_eq(after, before, "untouched");

    /* one image is enough to refuse; nothing is written */
    run(&r, "rm dw/shapes.jsonl dw/images/shape-00001.png dw/images/shape-00003.png && "
        "%s data shapes --n 3 dw", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "dw/images/shape-00002.png: exists"), "%s", r.err);
    cr_expect(!path_exists(WORK "/dw/shapes.jsonl"));
    cr_expect(!path_exists(WORK "/dw/images/shape-00001.png"));
    cr_expect(!path_exists(WORK "/dw/images/shape-00003.png"));

    /* many: three are named, then a count */
    run(&r, "rm -rf dw && %s data shapes --n 8 dw >/dev/null && rm dw/shapes.jsonl && "
        "%s data shapes --n 8 dw", TERN, TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "... and 5 more images that exist in dw/images"), "%s", r.err);

    /* a dangling symbolic link is a file there too */
    run(&r, "rm -rf dw && mkdir dw && ln -s nowhere dw/shapes.jsonl && %s data shapes --n 1 dw",
        TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "dw/shapes.jsonl: exists"), "%s", r.err);
    cr_expect(!path_exists(WORK "/dw/images"), "nothing created");

    /* OUT_DIR or images/ not a directory */
    run(&r, "rm -rf dw && echo x > dw && %s data shapes dw", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "dw: exists and is not a directory"), "%s", r.err);
    run(&r, "%s data shapes dw/sub", TERN);
    cr_expect_eq(r.code, 2, "%s", r.err);
    cr_expect(strstr(r.err, "dw/sub"), "%s", r.err);
    run(&r, "rm -rf dw && mkdir dw && echo x > dw/images && %s data shapes dw", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "dw/images: exists and is not a directory"), "%s", r.err);
    cr_expect(!path_exists(WORK "/dw/shapes.jsonl"));
    run(&r, "rm -rf dw");
}

Test(data_shapes, bad_arguments_exit_2_and_write_nothing)
{
    const struct {
        const char *args;
        const char *message;
    } bad[] = {
        {"--n 0 db", "tern: --n needs a whole number from 1 to 100000 (got '0')"},
        {"--n abc db", "tern: --n needs a whole number from 1 to 100000 (got 'abc')"},
        {"--n 100001 db", "tern: --n needs a whole number from 1 to 100000 (got '100001')"},
        {"--size 31 db", "tern: --size needs a whole number from 32 to 1024 (got '31')"},
        {"--size 1025 db", "tern: --size needs a whole number from 32 to 1024 (got '1025')"},
        {"--size 6x db", "tern: --size needs a whole number from 32 to 1024"},
        {"--seed -1 db", "tern: --seed needs a whole number from 0 to"},
        {"--bogus db", "tern: unknown option '--bogus'"},
        {"db extra", "tern: unexpected argument 'extra'"},
        {"--n", "tern: --n needs a value"},
        {"", "tern: data shapes needs OUT_DIR"},
    };
    result r;
    run(&r, "rm -rf db");
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        run(&r, "%s data shapes %s", TERN, bad[i].args);
        cr_expect_eq(r.code, 2, "%s: %s", bad[i].args, r.err);
        cr_expect(strstr(r.err, bad[i].message), "%s:\n%s", bad[i].args, r.err);
        cr_expect(strstr(r.err, "usage: tern data arith"), "%s:\n%s", bad[i].args, r.err);
        cr_expect_str_eq(r.out, "", "%s", bad[i].args);
        cr_expect(!path_exists(WORK "/db"), "%s: nothing created", bad[i].args);
    }
}

/* A write that fails (here: past the file size limit) leaves nothing behind. */
Test(data_shapes, a_failed_write_removes_what_it_made)
{
    result r;
    run(&r, "rm -rf df && (trap '' XFSZ; ulimit -f 4; %s data shapes --n 3 --size 512 df/x)",
        TERN);
    cr_expect_eq(r.code, 1, "%s", r.err);
    cr_expect(strstr(r.err, "tern data shapes: df/x/images/shape-00001.png: cannot write: "),
              "%s", r.err);
    cr_expect_str_eq(r.out, "");
    cr_expect(!path_exists(WORK "/df"), "the directories it made are gone");
    /* a directory that was there stays, empty */
    run(&r, "rm -rf df && mkdir df && (trap '' XFSZ; ulimit -f 4; "
        "%s data shapes --n 3 --size 512 df) ; ls -A df", TERN);
    cr_expect_str_eq(r.out, "", "%s", r.out);
    run(&r, "rm -rf df");
}

/* ---- what it writes is right ------------------------------------------------------ */

/* Score `response` to `task` through the plugin. */
static double score(const harness *h, const tern_task *task, const char *response,
                    char *reason, size_t cap)
{
    const tern_reward_ops *ops = harness_ops(h);
    tern_reward_item item = {.size = sizeof item, .task = task, .response = response,
                             .response_len = strlen(response)};
    tern_reward_result res;
    memset(&res, 0, sizeof res);
    res.size = sizeof res;
    cr_assert_eq(ops->score(h->state, &item, &res, 1), TERN_OK, "%s", tern_error_message());
    snprintf(reason, cap, "%s", res.reason);
    return res.reward;
}

static void check_generated(const char *dir, unsigned long long seed, int n, int size)
{
    result r;
    run(&r, "rm -rf %s && %s data shapes --seed %llu --n %d --size %d %s", dir, TERN, seed, n,
        size, dir);
    cr_assert_eq(r.code, 0, "%s", r.err);
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/shapes.jsonl", WORK, dir);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    harness h;
    int rc = harness_open(&h, "vision", TERN_KIND_REWARD, "");
    cr_assert_eq(rc, TERN_OK, "%s", h.error);
    tern_shapes_gen g;
    tern_shapes_begin(&g, seed, size);
    char *line = NULL;
    size_t cap = 0;
    int scored = 0;
    for (int i = 0; i < n; i++) {
        tern_scene sc;
        tern_shape_task tasks[TERN_SHAPES_TASKS];
        cr_assert_eq(tern_shapes_next(&g, &sc, tasks), TERN_OK);
        /* the picture decodes to what was drawn */
        char img[1100], why[128];
        snprintf(img, sizeof img, "%s/%s/images/shape-%05d.png", WORK, dir, i + 1);
        image_rgb pic;
        cr_assert_eq(image_file_load(img, 1u << 22, IMAGE_FILE_PIXELS, &pic, why, sizeof why),
                     IMAGE_FILE_OK, "%s: %s", img, why);
        cr_assert(pic.w == (uint32_t)size && pic.h == (uint32_t)size);
        cr_assert(memcmp(pic.rgb, sc.rgb, (size_t)size * size * 3) == 0, "%s", img);
        image_rgb_free(&pic);
        cr_assert(sc.n >= 1 && sc.n <= TERN_SHAPES_MAX);
        tern_scene_free(&sc);
        for (int k = 0; k < TERN_SHAPES_TASKS; k++) {
            ssize_t len = getline(&line, &cap, f);
            cr_assert_gt(len, 0, "picture %d task %d: the file ends early", i + 1, k);
            tern_task *t = NULL;
            cr_assert_eq(tern_task_parse(line, (size_t)len, "shapes", &t), TERN_OK, "%s",
                         tern_error_message());
            tern_task_set_origin(t, path);
            cr_assert_str_eq(tern_task_string(t, "type"), tasks[k].type);
            cr_assert_str_eq(tern_task_string(t, "prompt"), tasks[k].prompt);
            char reason[TERN_REWARD_REASON_MAX];
            double good = score(&h, t, tasks[k].correct, reason, sizeof reason);
            cr_assert_eq(good, 1, "%s answered \"%s\": %s", line, tasks[k].correct, reason);
            double bad = score(&h, t, tasks[k].wrong, reason, sizeof reason);
            cr_assert_eq(bad, 0, "%s answered \"%s\": %s", line, tasks[k].wrong, reason);
            tern_task_free(t);
            scored++;
        }
    }
    cr_assert_eq(getline(&line, &cap, f), -1, "more lines than tasks");
    cr_assert_eq(scored, n * TERN_SHAPES_TASKS);
    free(line);
    fclose(f);
    harness_close(&h);
    run(&r, "rm -rf %s", dir);
}

Test(data_shapes, every_task_scores_right_and_wrong, .timeout = 240)
{
    check_generated("sv1", 1, 60, 64);
    check_generated("sv2", 12345, 12, 32);
    check_generated("sv3", 7, 4, 300);
}

/* ---- the PNG encoder ---------------------------------------------------------------- */

Test(data_shapes, png_checksums)
{
    cr_assert_eq(tern_png_crc32(0, (const uint8_t *)"123456789", 9), 0xCBF43926u);
    cr_assert_eq(tern_png_crc32(tern_png_crc32(0, (const uint8_t *)"1234", 4),
                                (const uint8_t *)"56789", 5), 0xCBF43926u);
    cr_assert_eq(tern_png_adler32(1, (const uint8_t *)"Wikipedia", 9), 0x11E60398u);
    uint8_t *zeros = calloc(100000, 1);
    cr_assert_not_null(zeros);
    memset(zeros, 0xff, 100000);
    /* long input: the modulo is taken often enough */
    uint32_t a = 1;
    for (int i = 0; i < 100000; i++)
        a = tern_png_adler32(a, zeros + i, 1);
    cr_assert_eq(tern_png_adler32(1, zeros, 100000), a);
    free(zeros);
}

Test(data_shapes, png_encoder_round_trips)
{
    uint64_t x = 88172645463325252ull;
    static const uint32_t dims[][2] = {{1, 1}, {1, 300}, {300, 1}, {7, 5}, {64, 64}, {200, 150}};
    for (size_t d = 0; d < sizeof dims / sizeof dims[0]; d++) {
        uint32_t w = dims[d][0], h = dims[d][1];
        for (int kind = 0; kind < 3; kind++) {
            size_t n = (size_t)w * h * 3;
            uint8_t *px = malloc(n);
            cr_assert_not_null(px);
            for (size_t i = 0; i < n; i++) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                /* noise, flat runs, and stripes */
                px[i] = kind == 0 ? (uint8_t)x : kind == 1 ? (uint8_t)(i / 999) : (uint8_t)((i / 3) % 7 * 40);
            }
            uint8_t *png = NULL;
            size_t len = 0;
            cr_assert_eq(tern_png_encode_rgb(px, w, h, &png, &len), TERN_OK);
            image_rgb img;
            char why[128];
            cr_assert_eq(image_file_decode(png, len, 1u << 20, IMAGE_FILE_PIXELS, &img, why,
                                           sizeof why), IMAGE_FILE_OK, "%ux%u kind %d: %s", w, h,
                         kind, why);
            cr_assert(img.w == w && img.h == h && memcmp(img.rgb, px, n) == 0, "%ux%u kind %d",
                      w, h, kind);
            if (kind == 1 && n > 10000)
                cr_assert_lt(len, n / 10, "flat pictures compress: %zu of %zu bytes", len, n);
            image_rgb_free(&img);
            free(png);
            free(px);
        }
    }
    uint8_t *png = NULL;
    size_t len = 0;
    uint8_t one[3] = {0};
    cr_assert_eq(tern_png_encode_rgb(one, 0, 1, &png, &len), TERN_EINVAL);
    cr_assert_null(png);
}

/* --types keeps the listed task types of the same pictures; a name that is
 * no type is exit 2, naming it, with nothing written. */
Test(data_shapes, types_keeps_some_tasks)
{
    result r;
    run(&r, "rm -rf t1 t2 && %s data shapes --n 3 t1 >/dev/null && "
        "%s data shapes --n 3 --types counting,count_regions t2", TERN, TERN);
    cr_assert_eq(r.code, 0, "%s %s", r.out, r.err);
    cr_expect(strstr(r.out, "6 tasks (3 each of count_regions, counting)"), "%s", r.out);
    run(&r, "grep -E 'count_regions|-counting' t1/shapes.jsonl | cmp - t2/shapes.jsonl && "
        "diff -r t1/images t2/images");
    cr_expect_eq(r.code, 0, "the same pictures, the chosen tasks: %s %s", r.out, r.err);
    run(&r, "%s data shapes --n 3 --types counting,colour t3", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "--types: \"colour\" is not a task type; give some of "
                            "count_regions, color_at, grounding, counting"), "%s", r.err);
    cr_expect(!path_exists(WORK "/t3"), "nothing created");
    run(&r, "rm -rf t1 t2 t3");
}
