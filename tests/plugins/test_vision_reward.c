/* test_vision_reward.c: the `vision` reward plugin through its ops table,
 * started the way a run starts it (harness.h): the corpus
 * tests/corpora/vision.jsonl over every task type with the images in
 * tests/corpora/vision/; components and reasons; every setting; images
 * missing, corrupt, cut short or too big; hostile responses (empty, a
 * megabyte of digits or brackets, invalid UTF-8, NaN and huge numbers);
 * image paths resolved against the tasks file (task_origin); batches and
 * concurrent callers. The parsers and decoders are also tested directly
 * (vision_reward_core). */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "boxes.h"
#include "corpus.h"
#include "base/errmsg.h"
#include "harness.h"
#include "reward_case.h"
#include "image_file.h"
#include "palette.h"
#include "regions.h"
#include "data/task.h"
#include "tern/reward.h"
#include "text.h"

#define IMAGES TERN_TEST_SOURCE_DIR "/tests/corpora/vision"
#define ROOT_SETTING "image_root = \"" IMAGES "\";"

/* ---- helpers ---------------------------------------------------------------- */

static const tern_reward_ops *open_vision(harness *h, const char *settings)
{
    int rc = harness_open(h, "vision", TERN_KIND_REWARD, settings);
    cr_assert_eq(rc, TERN_OK, "harness_open(\"%s\"): %s", settings, h->error);
    return harness_ops(h);
}

/* Reasons are stored in JSON by the core: ended, non-empty, printable, valid UTF-8. */
static void assert_reason_clean(const tern_reward_result *r)
{
    size_t n = strnlen(r->reason, sizeof r->reason);
    cr_assert_lt(n, sizeof r->reason, "reason is not NUL-terminated");
    cr_assert_gt(n, 0, "empty reason");
    for (size_t i = 0; i < n;) {
        const unsigned char *u = (const unsigned char *)r->reason + i;
        size_t k = tern_utf8_len(u, n - i);
        cr_assert_gt(k, 0, "reason byte %zu (0x%02x) is not UTF-8: %s", i, u[0], r->reason);
        cr_assert(k > 1 || (u[0] >= 0x20 && u[0] != 0x7F), "reason byte %zu is 0x%02x: %s", i,
                  u[0], r->reason);
        i += k;
    }
}

/* Scores response[0..len) alone, from a heap block of exactly len bytes (no
 * NUL after it), so AddressSanitizer catches a read past response_len. */
static tern_reward_result score_bytes(const harness *h, const tern_task *task,
                                      const char *response, size_t len)
{
    tern_reward_result r = reward_score_bytes(h, task, response, len);
    assert_reason_clean(&r);
    cr_assert(isfinite(r.reward) && r.reward >= 0 && r.reward <= 1, "reward %g", r.reward);
    return r;
}

static tern_reward_result score_text(const harness *h, const tern_task *task, const char *response)
{
    return score_bytes(h, task, response, strlen(response));
}

/* The reward of `response` to the task `json` under `settings`. */
static double reward_of(const char *settings, const char *json, const char *response)
{
    harness h;
    open_vision(&h, settings);
    tern_task *t = reward_task_of(json);
    tern_reward_result r = score_text(&h, t, response);
    tern_task_free(t);
    harness_close(&h);
    return r.reward;
}

static int has_component(const tern_reward_result *r, const char *name)
{
    for (uint32_t i = 0; i < r->n_components; i++)
        if (strcmp(r->components[i].name, name) == 0)
            return 1;
    return 0;
}

static uint8_t *slurp_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc(n > 0 ? (size_t)n : 1);
    cr_assert_not_null(p);
    cr_assert_eq(fread(p, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return p;
}

/* ---- the corpus ------------------------------------------------------------- */

Test(vision_reward, corpus_verdicts)
{
    harness h;
    open_vision(&h, ROOT_SETTING);
    corpus_result res;
    int rc = corpus_run(&h, TERN_TEST_SOURCE_DIR "/tests/corpora/vision.jsonl", &res);
    cr_assert_eq(rc, TERN_OK, "%s", h.error);
    printf("vision corpus: %zu/%zu right\n", res.right, res.cases);
    fflush(stdout);
    cr_assert_geq(res.cases, 60, "the corpus has %zu cases", res.cases);
    cr_assert_eq(res.right, res.cases, "vision corpus: %zu/%zu right; first miss: %s", res.right,
                 res.cases, res.first_wrong);
    harness_close(&h);
}

/* Every corpus case again, checking components and reasons. */
Test(vision_reward, corpus_components_and_reasons)
{
    harness h;
    open_vision(&h, ROOT_SETTING);
    FILE *f = fopen(TERN_TEST_SOURCE_DIR "/tests/corpora/vision.jsonl", "r");
    cr_assert_not_null(f);
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int cases = 0;
    while ((len = getline(&line, &cap, f)) > 1) {
        tern_task *t = reward_task_of(line);
        const char *resp = tern_task_string(t, "response");
        double expect = 0;
        cr_assert_eq(tern_task_number(t, "expect", &expect), TERN_OK);
        tern_reward_result r = score_text(&h, t, resp);
        double acc = reward_component(&r, "accuracy"), fmt = reward_component(&r, "format");
        cr_assert(acc == 0 || acc == 1, "%s", line);
        cr_assert(fmt == 0 || fmt == 1, "%s", line);
        if (expect == 1)
            cr_assert_eq(acc, 1, "a full reward is accurate: %s (%s)", line, r.reason);
        if (acc == 1)
            cr_assert_eq(fmt, 1, "accurate implies well-formed: %s", line);
        const char *type = tern_task_string(t, "type");
        int boxes = type && (!strcmp(type, "grounding") || !strcmp(type, "detection"));
        cr_assert_eq(has_component(&r, "iou"), boxes, "%s", line);
        cr_assert_eq(has_component(&r, "anls"), type && !strcmp(type, "ocr"), "%s", line);
        tern_task_free(t);
        cases++;
    }
    free(line);
    fclose(f);
    cr_assert_geq(cases, 60);
    harness_close(&h);
}

/* The corpus check can fail: a wrong expectation is reported as a miss. */
Test(vision_reward, a_wrong_expectation_is_a_miss)
{
    char path[512];
    snprintf(path, sizeof path, "%s/vision_miss_%d.jsonl", TERN_TEST_WORK_DIR, (int)getpid());
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("{\"type\":\"counting\",\"answer\":\"3\",\"response\":\"3\",\"expect\":1}\n"
          "{\"type\":\"counting\",\"answer\":\"3\",\"response\":\"4\",\"expect\":1,\"why\":\"x\"}\n",
          f);
    fclose(f);
    harness h;
    open_vision(&h, "");
    corpus_result res;
    cr_assert_eq(corpus_run(&h, path, &res), TERN_OK, "%s", h.error);
    cr_assert_eq(res.cases, 2);
    cr_assert_eq(res.right, 1);
    cr_assert(strstr(res.first_wrong, ":2: reward 0"), "%s", res.first_wrong);
    harness_close(&h);
    remove(path);
}

/* ---- components and reasons --------------------------------------------------- */

Test(vision_reward, grounding_components_and_reasons)
{
    harness h;
    open_vision(&h, "");
    tern_task *t = reward_task_of("{\"type\":\"grounding\",\"box\":[0,0,10,10]}");
    tern_reward_result r = score_text(&h, t, "[0, 0, 10, 5]");
    cr_assert_eq(r.reward, 0.5);
    cr_assert_eq(r.n_components, 3);
    cr_assert_eq(reward_component(&r, "iou"), 0.5);
    cr_assert_eq(reward_component(&r, "accuracy"), 1, "IoU >= 0.5 is accurate");
    cr_assert_eq(reward_component(&r, "format"), 1);
    cr_assert_str_eq(r.reason, "IoU 0.500: box [0, 0, 10, 5], gold [0, 0, 10, 10]");
    r = score_text(&h, t, "[0, 0, 10, 4.9]");
    cr_assert_eq(reward_component(&r, "accuracy"), 0);
    r = score_text(&h, t, "nothing");
    cr_assert_eq(reward_component(&r, "format"), 0);
    cr_assert_str_eq(r.reason, "no box [x1, y1, x2, y2] in the response; gold [0, 0, 10, 10]");
    r = score_text(&h, t, "[nan, 0, 10, 10]");
    cr_assert_eq(r.reward, 0);
    r = score_text(&h, t, "[0, 0, 1e308, 1e308]");
    cr_assert_eq(r.reward, 0, "areas past the range of a double: %s", r.reason);
    r = score_text(&h, t, "[-1e308, -1e308, 1e308, 1e308]");
    cr_assert_eq(r.reward, 0, "%s", r.reason);
    tern_task_free(t);
    harness_close(&h);
}

Test(vision_reward, other_types_components_and_reasons)
{
    harness h;
    open_vision(&h, ROOT_SETTING);
    tern_task *t = reward_task_of("{\"type\":\"counting\",\"answer\":\"3\"}");
    tern_reward_result r = score_text(&h, t, "I see 3.");
    cr_assert_eq(r.n_components, 2);
    cr_assert_str_eq(r.reason, "count 3 is right; gold 3");
    r = score_text(&h, t, "no idea");
    cr_assert_eq(reward_component(&r, "format"), 0);
    cr_assert_str_eq(r.reason, "no count in the response; gold 3");
    tern_task_free(t);

    t = reward_task_of("{\"type\":\"ocr\",\"answer\":\"stop\"}");
    r = score_text(&h, t, "stp");
    cr_assert_eq(reward_component(&r, "anls"), 0.75);
    cr_assert_eq(reward_component(&r, "accuracy"), 1);
    cr_assert_str_eq(r.reason, "ANLS 0.750: \"stp\" against gold \"stop\"");
    tern_task_free(t);

    t = reward_task_of("{\"type\":\"count_regions\",\"image\":\"blocks.png\",\"color\":\"red\"}");
    r = score_text(&h, t, "4");
    cr_assert_str_eq(r.reason, "count 4 is wrong; the image has 3 red regions");
    tern_task_free(t);

    t = reward_task_of("{\"type\":\"color_at\",\"image\":\"blocks.png\",\"point\":[18,4]}");
    r = score_text(&h, t, "blue");
    cr_assert_str_eq(r.reason, "response blue is right: pixel (18, 4) is blue (0,0,255)");
    tern_task_free(t);

    t = reward_task_of("{\"type\":\"choice\",\"answer\":\"B\"}");
    r = score_text(&h, t, "The answer is C");
    cr_assert_str_eq(r.reason, "option C is wrong; gold B");
    tern_task_free(t);
    harness_close(&h);
}

Test(vision_reward, scores_a_batch_and_refuses_missing_arrays)
{
    harness h;
    const tern_reward_ops *ops = open_vision(&h, ROOT_SETTING);
    cr_assert_eq(ops->score(h.state, NULL, NULL, 0), TERN_OK);
    cr_assert_eq(ops->score(h.state, NULL, NULL, 2), TERN_EINVAL);
    cr_assert(strstr(tern_error_message(), "vision"), "%s", tern_error_message());
    tern_task *a = reward_task_of("{\"type\":\"count_regions\",\"image\":\"blocks.png\",\"color\":\"red\"}");
    tern_task *b = reward_task_of("{\"type\":\"grounding\",\"box\":[0,0,4,4]}");
    tern_reward_item items[4] = {
        {.size = sizeof items[0], .task = a, .response = "3", .response_len = 1},
        {.size = sizeof items[0], .task = b, .response = "[0,0,4,2]", .response_len = 9},
        {.size = sizeof items[0], .task = a, .response = NULL, .response_len = 5},
        {.size = sizeof items[0], .task = NULL, .response = "3", .response_len = 1},
    };
    tern_reward_result res[4];
    memset(res, 0, sizeof res);
    cr_assert_eq(ops->score(h.state, items, res, 4), TERN_OK);
    cr_assert_eq(res[0].reward, 1);
    cr_assert_eq(res[1].reward, 0.5);
    cr_assert_eq(res[2].reward, 0, "a NULL response is empty");
    cr_assert_eq(res[3].reward, 0, "no task");
    for (int i = 0; i < 4; i++)
        assert_reason_clean(&res[i]);
    tern_task_free(a);
    tern_task_free(b);
    harness_close(&h);
}

/* ---- settings ------------------------------------------------------------------------ */

Test(vision_reward, box_scale_converts_response_coordinates)
{
    /* blocks.png is 24x16 */
    const char *task = "{\"type\":\"grounding\",\"image\":\"blocks.png\",\"box\":[6,4,12,8]}";
    cr_assert_eq(reward_of(ROOT_SETTING, task, "[6, 4, 12, 8]"), 1);
    cr_assert_eq(reward_of(ROOT_SETTING "box_scale = \"normalized\";", task,
                           "[0.25, 0.25, 0.5, 0.5]"), 1);
    cr_assert_eq(reward_of(ROOT_SETTING "box_scale = \"qwen\";", task, "[250, 250, 500, 500]"), 1);
    cr_assert_eq(reward_of(ROOT_SETTING "box_scale = \"qwen\";", task, "[6, 4, 12, 8]"), 0);
    /* a scale needs the image's size */
    harness h;
    open_vision(&h, "box_scale = \"qwen\";");
    tern_task *t = reward_task_of("{\"type\":\"grounding\",\"box\":[6,4,12,8]}");
    tern_reward_result r = score_text(&h, t, "[250, 250, 500, 500]");
    cr_assert_eq(r.reward, 0);
    cr_assert_str_eq(r.reason, "task has no 'image' field (the image's path)");
    tern_task_free(t);
    harness_close(&h);
    const char *det = "{\"type\":\"detection\",\"image\":\"blocks.png\",\"boxes\":[[6,4,12,8]]}";
    cr_assert_eq(reward_of(ROOT_SETTING "box_scale = \"normalized\";", det,
                           "[[0.25, 0.25, 0.5, 0.5, 0.9]]"), 1);
}

Test(vision_reward, iou_threshold_makes_grounding_binary)
{
    const char *task = "{\"type\":\"grounding\",\"box\":[0,0,10,10]}";
    cr_assert_eq(reward_of("", task, "[0,0,10,7]"), 0.7);
    cr_assert_eq(reward_of("iou_threshold = 0.7;", task, "[0,0,10,7]"), 1, "IoU >= threshold");
    cr_assert_eq(reward_of("iou_threshold = 0.7;", task, "[0,0,10,6.9]"), 0);
    cr_assert_eq(reward_of("iou_threshold = 0.5;", task, "[0,0,10,10]"), 1);
}

Test(vision_reward, match_labels_can_be_turned_off)
{
    const char *task = "{\"type\":\"detection\",\"boxes\":[{\"bbox_2d\":[0,0,10,10],"
                       "\"label\":\"cat\"}]}";
    const char *resp = "[{\"bbox_2d\":[0,0,10,10],\"label\":\"dog\"}]";
    cr_assert_eq(reward_of("", task, resp), 0);
    cr_assert_eq(reward_of("match_labels = false;", task, resp), 1);
}

Test(vision_reward, region_settings)
{
    const char *red = "{\"type\":\"count_regions\",\"image\":\"blocks.png\",\"color\":\"red\"}";
    const char *yellow = "{\"type\":\"count_regions\",\"image\":\"blocks.png\",\"color\":\"yellow\"}";
    cr_assert_eq(reward_of(ROOT_SETTING, red, "3"), 1);
    cr_assert_eq(reward_of(ROOT_SETTING "connectivity = 8;", red, "2"), 1);
    /* (250,10,10) is within 5 of nothing, within 10 of red */
    cr_assert_eq(reward_of(ROOT_SETTING "color_tolerance = 5;", red, "3"), 1);
    cr_assert_eq(reward_of(ROOT_SETTING "color_tolerance = 10;", red, "4"), 1);
    cr_assert_eq(reward_of(ROOT_SETTING, yellow, "2"), 1);
    cr_assert_eq(reward_of(ROOT_SETTING "min_region_pixels = 2;", yellow, "1"), 1);
    /* the task's connectivity wins over the setting */
    cr_assert_eq(reward_of(ROOT_SETTING "connectivity = 8;",
                           "{\"type\":\"count_regions\",\"image\":\"blocks.png\",\"color\":\"red\","
                           "\"connectivity\":4}", "3"), 1);
    cr_assert_eq(reward_of(ROOT_SETTING,
                           "{\"type\":\"count_regions\",\"image\":\"blocks.png\",\"color\":\"red\","
                           "\"connectivity\":6}", "3"), 0);
}

Test(vision_reward, max_pixels_refuses_large_images)
{
    harness h;
    open_vision(&h, ROOT_SETTING "max_pixels = 383;"); /* blocks.png has 384 */
    tern_task *t = reward_task_of("{\"type\":\"color_at\",\"image\":\"blocks.png\",\"point\":[0,0]}");
    tern_reward_result r = score_text(&h, t, "white");
    cr_assert_eq(r.reward, 0);
    cr_assert(strstr(r.reason, "24x16 is over the limit of 383 pixels (max_pixels)"), "%s",
              r.reason);
    tern_task_free(t);
    harness_close(&h);
    cr_assert_eq(reward_of(ROOT_SETTING "max_pixels = 384;",
                           "{\"type\":\"color_at\",\"image\":\"blocks.png\",\"point\":[0,0]}",
                           "white"), 1);
}

Test(vision_reward, answer_tag_and_fields)
{
    const char *task = "{\"type\":\"counting\",\"answer\":\"2\"}";
    cr_assert_eq(reward_of("", task, "<answer>2</answer> 3"), 1);
    cr_assert_eq(reward_of("answer_tag = false;", task, "<answer>2</answer> 3"), 0);
    cr_assert_eq(reward_of("answer_tag = false;", task, "<answer>3</answer> 2"), 1);
    cr_assert_eq(reward_of("type_field = \"kind\";", "{\"kind\":\"counting\",\"answer\":\"2\"}",
                           "2"), 1);
    cr_assert_eq(reward_of("", "{\"kind\":\"counting\",\"answer\":\"2\"}", "2"), 0);
    cr_assert_eq(reward_of("default_type = \"counting\";", "{\"answer\":\"2\"}", "2"), 1);
    cr_assert_eq(reward_of("answer_field = \"meta.n\";",
                           "{\"type\":\"counting\",\"meta\":{\"n\":5},\"answer\":\"\"}", "5"), 1);
    cr_assert_eq(reward_of(ROOT_SETTING "image_field = \"picture\";",
                           "{\"type\":\"color_at\",\"picture\":\"blocks.png\",\"point\":[2,2]}",
                           "red"), 1);
}

Test(vision_reward, verify_images_decodes_every_image)
{
    const char *task = "{\"type\":\"grounding\",\"image\":\"truncated.png\",\"box\":[0,0,4,4]}";
    cr_assert_eq(reward_of(ROOT_SETTING, task, "[0,0,4,4]"), 1, "the header is enough");
    cr_assert_eq(reward_of(ROOT_SETTING "verify_images = true;", task, "[0,0,4,4]"), 0);
    cr_assert_eq(reward_of(ROOT_SETTING,
                           "{\"type\":\"choice\",\"image\":\"notanimage.png\",\"answer\":\"B\"}",
                           "B"), 0, "an image given is checked");
    cr_assert_eq(reward_of(ROOT_SETTING, "{\"type\":\"choice\",\"answer\":\"B\"}", "B"), 1,
                 "and may be left out where it is not needed");
}

Test(vision_reward, max_boxes_caps_the_predictions_read)
{
    const char *task = "{\"type\":\"detection\",\"boxes\":[[0,0,10,10]]}";
    /* 3 predictions, the right one last: with max_boxes 2 it is not read, and
     * the denominator is still 3 */
    const char *resp = "[[20,20,30,30,0.9],[40,40,50,50,0.9],[0,0,10,10,0.9]]";
    cr_assert(fabs(reward_of("", task, resp) - 1.0 / 3) < 1e-12);
    cr_assert_eq(reward_of("max_boxes = 2;", task, resp), 0);
}

Test(vision_reward, bad_settings_are_refused_with_the_key_named)
{
    static const struct {
        const char *settings, *message;
    } bad[] = {
        {"connectivity = 6;", "connectivity"},
        {"connectivity = 9;", "connectivity"},
        {"box_scale = \"percent\";", "box_scale"},
        {"default_type = \"segmentation\";", "default_type"},
        {"type_field = \"\";", "type_field"},
        {"answer_field = \"\";", "answer_field"},
        {"image_field = \"\";", "image_field"},
        {"max_pixels = 0;", "max_pixels"},
        {"iou_threshold = 1.5;", "iou_threshold"},
        {"color_tolerance = 256;", "color_tolerance"},
        {"max_boxes = 0;", "max_boxes"},
        {"match_labels = 1;", "match_labels"},
        {"box_scal = \"qwen\";", "did you mean 'box_scale'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        harness h;
        cr_expect_neq(harness_open(&h, "vision", TERN_KIND_REWARD, bad[i].settings), TERN_OK,
                      "%s", bad[i].settings);
        cr_expect(strstr(h.error, bad[i].message), "%s: %s", bad[i].settings, h.error);
        harness_close(&h);
    }
}

Test(vision_reward, descriptor_declares_a_thread_safe_reward)
{
    harness h;
    open_vision(&h, "");
    const tern_plugin_descriptor *d = h.entry->plugin->desc;
    cr_assert_str_eq(d->name, "vision");
    cr_assert_eq(d->kind, TERN_KIND_REWARD);
    cr_assert(d->caps & TERN_CAP_THREAD_SAFE);
    cr_assert_eq(d->abi_major, TERN_ABI_MAJOR);
    harness_close(&h);
}

/* ---- image paths ------------------------------------------------------------------------ */

static void copy_file(const char *from, const char *to)
{
    size_t n;
    uint8_t *p = slurp_file(from, &n);
    FILE *f = fopen(to, "wb");
    cr_assert_not_null(f, "%s", to);
    cr_assert_eq(fwrite(p, 1, n, f), n);
    fclose(f);
    free(p);
}

Test(vision_reward, relative_images_resolve_against_the_tasks_file)
{
    char dir[512], sub[600], img[700], origin[700];
    snprintf(dir, sizeof dir, "%s/vision_origin_%d", TERN_TEST_WORK_DIR, (int)getpid());
    snprintf(sub, sizeof sub, "%s/pics", dir);
    snprintf(img, sizeof img, "%s/pics/b.png", dir);
    snprintf(origin, sizeof origin, "%s/tasks.jsonl", dir);
    mkdir(dir, 0777);
    mkdir(sub, 0777);
    copy_file(IMAGES "/blocks.png", img);
    const char *json = "{\"type\":\"color_at\",\"image\":\"pics/b.png\",\"point\":[2,2]}";

    harness h;
    open_vision(&h, "");
    tern_task *t = reward_task_of(json);
    tern_task_set_origin(t, origin);
    tern_reward_result r = score_text(&h, t, "red");
    cr_assert_eq(r.reward, 1, "%s", r.reason);
    /* without an origin: the working directory */
    tern_task_set_origin(t, NULL);
    r = score_text(&h, t, "red");
    cr_assert_eq(r.reward, 0);
    cr_assert(strstr(r.reason, "pics/b.png: not found"), "%s", r.reason);
    cr_assert_eq(chdir(dir), 0);
    r = score_text(&h, t, "red");
    cr_assert_eq(r.reward, 1, "%s", r.reason);
    /* an origin without a directory part is the working directory too */
    tern_task_set_origin(t, "tasks.jsonl");
    r = score_text(&h, t, "red");
    cr_assert_eq(r.reward, 1, "%s", r.reason);
    tern_task_free(t);
    harness_close(&h);

    /* image_root wins over the origin */
    open_vision(&h, "image_root = \"/nonexistent\";");
    t = reward_task_of(json);
    tern_task_set_origin(t, origin);
    r = score_text(&h, t, "red");
    cr_assert_eq(r.reward, 0);
    cr_assert(strstr(r.reason, "/nonexistent/pics/b.png: not found"), "%s", r.reason);
    tern_task_free(t);
    /* an absolute path is used as it is */
    char abs_json[1024];
    snprintf(abs_json, sizeof abs_json,
             "{\"type\":\"color_at\",\"image\":\"%s\",\"point\":[2,2]}", img);
    t = reward_task_of(abs_json);
    cr_assert_eq(score_text(&h, t, "red").reward, 1);
    tern_task_free(t);
    harness_close(&h);

    /* image_root with a trailing slash */
    open_vision(&h, "image_root = \"" IMAGES "/\";");
    t = reward_task_of("{\"type\":\"color_at\",\"image\":\"blocks.png\",\"point\":[2,2]}");
    cr_assert_eq(score_text(&h, t, "red").reward, 1);
    tern_task_free(t);
    harness_close(&h);
    remove(img);
    rmdir(sub);
    rmdir(dir);
}

Test(vision_reward, image_field_problems_are_verdicts)
{
    static const struct {
        const char *task, *reason;
    } cases[] = {
        {"{\"type\":\"color_at\",\"point\":[0,0]}", "task has no 'image' field (the image's path)"},
        {"{\"type\":\"color_at\",\"image\":3,\"point\":[0,0]}",
         "task field 'image' is not a string (give the image's path)"},
        {"{\"type\":\"color_at\",\"image\":\"\",\"point\":[0,0]}", "task field 'image' is empty"},
        {"{\"type\":\"color_at\",\"image\":\"blocks.png\"}",
         "task field 'point' is missing; give [x, y] in pixels"},
        {"{\"type\":\"color_at\",\"image\":\"blocks.png\",\"point\":[1]}",
         "task field 'point' is not a point; give [x, y] in pixels"},
        {"{\"type\":\"count_regions\",\"image\":\"blocks.png\"}",
         "task field 'color' is missing; give a colour name, \"#rrggbb\" or [r, g, b]"},
        {"{\"type\":\"count_regions\",\"image\":\"blocks.png\",\"color\":[1,2,300]}",
         "task field 'color' is not a colour; give a colour name, \"#rrggbb\" or [r, g, b]"},
        {"{\"type\":7}", "task field 'type' is not a string (grounding, detection, counting, "
                         "choice, ocr, count_regions or color_at)"},
    };
    harness h;
    open_vision(&h, ROOT_SETTING);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tern_task *t = reward_task_of(cases[i].task);
        tern_reward_result r = score_text(&h, t, "red");
        cr_expect_eq(r.reward, 0, "%s", cases[i].task);
        cr_expect_str_eq(r.reason, cases[i].reason);
        tern_task_free(t);
    }
    harness_close(&h);
}

/* A long path is shown by its end. */
Test(vision_reward, long_image_paths_are_cut_in_reasons)
{
    char json[2048], name[1200];
    memset(name, 'd', 1000);
    for (int i = 49; i < 1000; i += 50)
        name[i] = '/';
    strcpy(name + 1000, "/missing-picture.png");
    snprintf(json, sizeof json, "{\"type\":\"color_at\",\"image\":\"%s\",\"point\":[0,0]}", name);
    harness h;
    open_vision(&h, "");
    tern_task *t = reward_task_of(json);
    tern_reward_result r = score_text(&h, t, "red");
    cr_assert_eq(r.reward, 0);
    cr_assert(strstr(r.reason, "...ddd"), "%s", r.reason);
    cr_assert(strstr(r.reason, "/missing-picture.png: not found"), "%s", r.reason);
    tern_task_free(t);
    harness_close(&h);
}

/* ---- hostile responses ---------------------------------------------------------------------- */

#define MEGABYTE (1024u * 1024u)

static const char *const hostile_tasks[] = {
    "{\"type\":\"grounding\",\"box\":[0,0,10,10]}",
    "{\"type\":\"detection\",\"boxes\":[[0,0,10,10]]}",
    "{\"type\":\"counting\",\"answer\":\"7\"}",
    "{\"type\":\"choice\",\"answer\":\"B\"}",
    "{\"type\":\"choice\",\"answer\":\"yes\"}",
    "{\"type\":\"ocr\",\"answer\":\"stop\"}",
    "{\"type\":\"count_regions\",\"image\":\"blocks.png\",\"color\":\"red\"}",
    "{\"type\":\"color_at\",\"image\":\"blocks.png\",\"point\":[2,2]}",
};
#define N_HOSTILE_TASKS (sizeof hostile_tasks / sizeof hostile_tasks[0])

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

Test(vision_reward, megabytes_of_hostile_text_are_judged_quickly, .timeout = 120)
{
    static const struct {
        const char *unit, *tail;
    } inputs[] = {
        {"7", ""},       {"[", ""},        {"(", ""},         {"{", ""},
        {"\"", ""},      {"[1,", ""},      {"(1,2),", ""},    {"{\"box\":", ""},
        {"[1,2,3,4]", ""}, {"[1,2,3,4,0.5]", ""}, {"<answer>", "3"}, {"1,000,", ""},
        {"-", "3"},      {"A ", ""},       {"answer is ", "B"}, {"yes no ", ""},
        {"\xff\xfe", ""}, {"\xe7\xba", ""}, {"red ", ""},     {"twenty-", "one"},
        {"9999999999", "e99999"}, {" ", ""}, {"{\"Position\":[1,2,3,4],\"label\":\"", ""},
        {"\0", ""},
    };
    harness h;
    open_vision(&h, ROOT_SETTING);
    tern_task *tasks[N_HOSTILE_TASKS];
    for (size_t k = 0; k < N_HOSTILE_TASKS; k++)
        tasks[k] = reward_task_of(hostile_tasks[k]);
    for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++) {
        size_t len;
        const char *unit = inputs[i].unit[0] ? inputs[i].unit : "\0";
        char *s;
        if (inputs[i].unit[0]) {
            s = reward_repeat(unit, MEGABYTE, inputs[i].tail, &len);
        } else { /* NUL bytes */
            s = calloc(MEGABYTE, 1);
            cr_assert_not_null(s);
            len = MEGABYTE;
        }
        for (size_t k = 0; k < N_HOSTILE_TASKS; k++) {
            double t0 = now_s();
            tern_reward_result r = score_bytes(&h, tasks[k], s, len);
            double dt = now_s() - t0;
            cr_expect_lt(dt, 5.0, "%zu x '%s' on %s took %.1f s", len, unit, hostile_tasks[k], dt);
            (void)r;
        }
        free(s);
    }
    for (size_t k = 0; k < N_HOSTILE_TASKS; k++)
        tern_task_free(tasks[k]);
    harness_close(&h);
}

Test(vision_reward, a_megabyte_of_digits_is_a_verdict)
{
    harness h;
    open_vision(&h, "");
    size_t len;
    char *digits = reward_repeat("7", MEGABYTE, "", &len);
    tern_task *t = reward_task_of("{\"type\":\"counting\",\"answer\":\"7\"}");
    tern_reward_result r = score_bytes(&h, t, digits, len);
    cr_assert_eq(r.reward, 0);
    cr_assert(strstr(r.reason, "..."), "the count is cut in the reason: %s", r.reason);
    tern_task_free(t);
    t = reward_task_of("{\"type\":\"grounding\",\"box\":[0,0,10,10]}");
    r = score_bytes(&h, t, digits, len);
    cr_assert_eq(r.reward, 0);
    tern_task_free(t);
    /* a box of four megabyte-long numbers is found but not valid */
    char *box = malloc(4 * len + 16);
    cr_assert_not_null(box);
    size_t o = 0;
    box[o++] = '[';
    for (int k = 0; k < 4; k++) {
        memcpy(box + o, digits, len);
        o += len;
        box[o++] = k < 3 ? ',' : ']';
    }
    t = reward_task_of("{\"type\":\"grounding\",\"box\":[0,0,10,10]}");
    r = score_bytes(&h, t, box, o);
    cr_assert_eq(r.reward, 0);
    cr_assert_eq(reward_component(&r, "format"), 0);
    cr_assert(strstr(r.reason, "nan"), "%s", r.reason);
    tern_task_free(t);
    free(box);
    free(digits);
    harness_close(&h);
}

Test(vision_reward, invalid_utf8_is_read_as_bytes_and_kept_out_of_reasons)
{
    harness h;
    open_vision(&h, "");
    tern_task *t = reward_task_of("{\"type\":\"ocr\",\"answer\":\"ab\"}");
    tern_reward_result r = score_text(&h, t, "a\xff");
    cr_assert_eq(r.reward, 0.5, "the bad byte is one code point: %s", r.reason);
    cr_assert(strstr(r.reason, "\"a?\""), "%s", r.reason);
    r = score_text(&h, t, "a\xe4\xbd"); /* a sequence cut short: two code points */
    cr_assert_eq(r.reward, 0, "%s", r.reason);
    tern_task_free(t);
    t = reward_task_of("{\"type\":\"counting\",\"answer\":\"3\"}");
    r = score_bytes(&h, t, "\x80\x00" "3\x1b", 4);
    cr_assert_eq(r.reward, 1, "NULs and control bytes are just bytes: %s", r.reason);
    tern_task_free(t);
    /* a long multi-byte answer is cut on a character boundary */
    t = reward_task_of("{\"type\":\"ocr\",\"answer\":\"x\"}");
    r = score_text(&h, t, "你好你好你好你好你好你好你好你好你好你好你好你好你好你好你好你好");
    cr_assert_eq(r.reward, 0);
    cr_assert(strstr(r.reason, "..."), "%s", r.reason);
    tern_task_free(t);
    harness_close(&h);
}

/* Only response_len bytes are read: what follows is not part of the answer. */
Test(vision_reward, reads_only_response_len_bytes)
{
    harness h;
    const tern_reward_ops *ops = open_vision(&h, "");
    tern_task *t = reward_task_of("{\"type\":\"counting\",\"answer\":\"3\"}");
    const char *text = "3 and then 4";
    tern_reward_item item = {.size = sizeof item, .task = t, .response = text, .response_len = 1};
    tern_reward_result r = {.size = sizeof r};
    cr_assert_eq(ops->score(h.state, &item, &r, 1), TERN_OK);
    cr_assert_eq(r.reward, 1, "%s", r.reason);
    tern_task_free(t);
    harness_close(&h);
}

/* ---- threads ---------------------------------------------------------------------------------- */

typedef struct worker {
    const harness *h;
    tern_task *tasks[N_HOSTILE_TASKS];
    double rewards[N_HOSTILE_TASKS];
    int ok;
} worker;

static const char *const worker_answers[N_HOSTILE_TASKS] = {
    "[0,0,10,5]", "[[0,0,10,10,0.9]]", "seven", "(B)", "yes", "stp", "3", "red"};

static void *work(void *arg)
{
    worker *w = arg;
    const tern_reward_ops *ops = harness_ops(w->h);
    w->ok = 1;
    for (int round = 0; round < 40; round++)
        for (size_t k = 0; k < N_HOSTILE_TASKS; k++) {
            tern_reward_item item = {.size = sizeof item, .task = w->tasks[k],
                                     .response = worker_answers[k],
                                     .response_len = strlen(worker_answers[k])};
            tern_reward_result r;
            memset(&r, 0, sizeof r);
            r.size = sizeof r;
            if (ops->score(w->h->state, &item, &r, 1) != TERN_OK)
                w->ok = 0;
            if (round == 0)
                w->rewards[k] = r.reward;
            else if (w->rewards[k] != r.reward)
                w->ok = 0;
        }
    return NULL;
}

Test(vision_reward, concurrent_callers_agree)
{
    harness h;
    open_vision(&h, ROOT_SETTING);
    enum { THREADS = 4 };
    worker w[THREADS];
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i].h = &h;
        for (size_t k = 0; k < N_HOSTILE_TASKS; k++)
            w[i].tasks[k] = reward_task_of(hostile_tasks[k]);
        cr_assert_eq(pthread_create(&th[i], NULL, work, &w[i]), 0);
    }
    static const double expect[N_HOSTILE_TASKS] = {0.5, 1, 1, 1, 1, 0.75, 1, 1};
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        cr_assert(w[i].ok, "thread %d", i);
        for (size_t k = 0; k < N_HOSTILE_TASKS; k++)
            cr_assert_eq(w[i].rewards[k], expect[k], "thread %d task %zu", i, k);
        for (size_t k = 0; k < N_HOSTILE_TASKS; k++)
            tern_task_free(w[i].tasks[k]);
    }
    harness_close(&h);
}

/* ---- the parts, directly --------------------------------------------------------------------- */

Test(vision_parts, decoders_agree_on_every_format)
{
    image_rgb ref;
    char why[128];
    cr_assert_eq(image_file_load(IMAGES "/blocks.png", 1000, IMAGE_FILE_PIXELS, &ref, why,
                                 sizeof why), IMAGE_FILE_OK, "%s", why);
    cr_assert_eq(ref.w, 24);
    cr_assert_eq(ref.h, 16);
    static const char *const same[] = {"blocks.ppm", "blocks-plain.ppm", "blocks-16.ppm",
                                       "blocks-16.png", "blocks-palette.png",
                                       "blocks-interlaced.png", "blocks-alpha.png"};
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, IMAGES "/%s", same[i]);
        size_t n;
        uint8_t *data = slurp_file(path, &n);
        image_rgb img;
        /* from a file and from memory */
        cr_assert_eq(image_file_decode(data, n, 1000, IMAGE_FILE_PIXELS, &img, why, sizeof why),
                     IMAGE_FILE_OK, "%s: %s", same[i], why);
        cr_assert(img.w == 24 && img.h == 16 && memcmp(img.rgb, ref.rgb, 24 * 16 * 3) == 0,
                  "%s decodes to other pixels", same[i]);
        image_rgb_free(&img);
        cr_assert_eq(image_file_load(path, 1000, IMAGE_FILE_PIXELS, &img, why, sizeof why),
                     IMAGE_FILE_OK);
        cr_assert(memcmp(img.rgb, ref.rgb, 24 * 16 * 3) == 0, "%s", same[i]);
        image_rgb_free(&img);
        /* the header alone */
        cr_assert_eq(image_file_decode(data, n, 1000, IMAGE_FILE_HEADER, &img, why, sizeof why),
                     IMAGE_FILE_OK);
        cr_assert(img.w == 24 && img.h == 16 && img.rgb == NULL);
        free(data);
    }
    image_rgb_free(&ref);
    image_rgb g1, g2, g3;
    const int px = IMAGE_FILE_PIXELS;
    cr_assert_eq(image_file_load(IMAGES "/gray.pgm", 64, px, &g1, why, sizeof why), 0);
    cr_assert_eq(image_file_load(IMAGES "/gray.png", 64, px, &g2, why, sizeof why), 0);
    cr_assert_eq(image_file_load(IMAGES "/gray-plain.pgm", 64, px, &g3, why, sizeof why), 0);
    cr_assert(memcmp(g1.rgb, g2.rgb, 192) == 0 && memcmp(g1.rgb, g3.rgb, 192) == 0);
    cr_assert(g1.rgb[0] == 0 && g1.rgb[3 * 7] == 128 && g1.rgb[3 * 7 + 2] == 128);
    image_rgb_free(&g1);
    image_rgb_free(&g2);
    image_rgb_free(&g3);
}

Test(vision_parts, broken_images_give_a_status_and_a_message)
{
    static const struct {
        const char *file;
        image_file_status status;
        const char *why;
    } cases[] = {
        {"truncated.png", IMAGE_FILE_CORRUPT, "corrupt PNG"},
        {"badcrc.png", IMAGE_FILE_CORRUPT, "corrupt PNG"},
        {"signature-only.png", IMAGE_FILE_CORRUPT, "cut short"},
        {"notanimage.png", IMAGE_FILE_UNKNOWN, "not a PNG or PPM/PGM image"},
        {"empty.png", IMAGE_FILE_UNKNOWN, "the file is empty"},
        {"zero.ppm", IMAGE_FILE_EMPTY, "0x0"},
        {"huge.ppm", IMAGE_FILE_TOO_BIG, "100000x100000 is over the limit of 1000 pixels"},
        {"huge.png", IMAGE_FILE_TOO_BIG, "100000x100000 is over the limit of 1000 pixels"},
        {"truncated.ppm", IMAGE_FILE_CORRUPT, "cut short"},
        {"badsample.ppm", IMAGE_FILE_CORRUPT, "above maxval"},
        {"badheader.ppm", IMAGE_FILE_CORRUPT, "header"},
        {"nosuch.png", IMAGE_FILE_NOT_FOUND, "not found"},
        {"", IMAGE_FILE_UNREADABLE, "not a regular file"}, /* the directory */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[512], why[128];
        snprintf(path, sizeof path, IMAGES "/%s", cases[i].file);
        image_rgb img;
        image_file_status st = image_file_load(path, 1000, IMAGE_FILE_PIXELS, &img, why,
                                               sizeof why);
        cr_expect_eq(st, cases[i].status, "%s: %d (%s)", cases[i].file, st, why);
        cr_expect(strstr(why, cases[i].why), "%s: %s", cases[i].file, why);
        cr_expect_null(img.rgb);
    }
    /* every prefix of a PNG and a PPM that cuts the pixels fails cleanly (a
     * PNG without its IEND chunk still has them all, and a plain PPM cut in
     * its last number reads as one with a smaller last sample) */
    static const struct {
        const char *file;
        size_t spare; /* trailing bytes the pixels do not need */
    } files[] = {{IMAGES "/blocks.png", 12}, {IMAGES "/blocks-interlaced.png", 12},
                 {IMAGES "/blocks-16.png", 12}, {IMAGES "/blocks.ppm", 0},
                 {IMAGES "/blocks-plain.ppm", 3}, {IMAGES "/gray.pgm", 0}};
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        size_t n;
        uint8_t *data = slurp_file(files[f].file, &n);
        for (size_t k = 0; k < n - files[f].spare; k++) {
            uint8_t *part = malloc(k ? k : 1);
            memcpy(part, data, k);
            image_rgb img;
            char why[128];
            image_file_status st = image_file_decode(part, k, 1000, IMAGE_FILE_PIXELS, &img, why,
                                                     sizeof why);
            cr_expect_neq(st, IMAGE_FILE_OK, "%s cut to %zu bytes decoded", files[f].file, k);
            image_rgb_free(&img);
            free(part);
        }
        free(data);
    }
}

/* Only regular files are read: a FIFO with no writer must not block. */
Test(vision_parts, fifos_and_devices_are_not_read, .timeout = 20)
{
    char fifo[512], why[128];
    snprintf(fifo, sizeof fifo, "%s/vision_fifo_%d", TERN_TEST_WORK_DIR, (int)getpid());
    remove(fifo);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    image_rgb img;
    cr_assert_eq(image_file_load(fifo, 1000, IMAGE_FILE_PIXELS, &img, why, sizeof why),
                 IMAGE_FILE_UNREADABLE);
    cr_assert_str_eq(why, "not a regular file");
    cr_assert_eq(image_file_load("/dev/zero", 1000, IMAGE_FILE_PIXELS, &img, why, sizeof why),
                 IMAGE_FILE_UNREADABLE);
    remove(fifo);
}

Test(vision_parts, box_parser)
{
    vis_box b;
    cr_assert(vis_parse_box("[1, 2, 3, 4]", 12, &b));
    cr_assert(b.x1 == 1 && b.y1 == 2 && b.x2 == 3 && b.y2 == 4);
    cr_assert(vis_parse_box("(1,2)-(3,4)", 11, &b) && b.x2 == 3);
    cr_assert(vis_parse_box("<box>(1,2),(3,4)</box>", 22, &b) && b.y2 == 4);
    cr_assert(vis_parse_box("[-1.5e1, +2, 3., .5]", 20, &b) && b.x1 == -15 && b.x2 == 3 &&
              b.y2 == 0.5);
    cr_assert(!vis_parse_box("[1, 2, 3]", 9, &b));
    cr_assert(!vis_parse_box("[1, 2, 3, 4, 5]", 15, &b));
    cr_assert(!vis_parse_box("[1,, 2, 3, 4]", 13, &b));
    cr_assert(!vis_parse_box("[a, b, c, d]", 12, &b));
    cr_assert(vis_parse_box("say \"[1,2,3,4]\"", 15, &b), "quotes do not hide boxes");
    cr_assert(vis_parse_box("[1,2,3,4] [5,6,7,8]", 19, &b) && b.x1 == 5);
    /* reads only len bytes */
    cr_assert(!vis_parse_box("[1,2,3,4]", 8, &b));
    vis_box g = {.x1 = 0, .y1 = 0, .x2 = 10, .y2 = 10};
    vis_box p = {.x1 = 5, .y1 = 0, .x2 = 15, .y2 = 10};
    cr_assert_eq(vis_iou(&g, &p), 50.0 / 150.0);
}

Test(vision_parts, detection_parser)
{
    vis_box out[4];
    size_t total;
    int empty;
    const char *s = "<think>x</think>[{\"Position\": [1,2,3,4], \"Confidence\": 0.25, "
                    "\"label\": \" Cat \"}, {position: [5,6,7,8]}, [9,10,11,12,0.5], "
                    "{\"other\": [1,2,3,4]}, {\"box\": [1,2,3]}]";
    vis_parse_detections(s, strlen(s), out, 4, &total, &empty);
    cr_assert_eq(total, 3);
    cr_assert_eq(empty, 0);
    cr_assert(out[0].x1 == 1 && out[0].conf == 0.25 && strcmp(out[0].label, "Cat") == 0);
    cr_assert(out[1].x1 == 5 && out[1].conf == 1 && out[1].label[0] == 0);
    cr_assert(out[2].x1 == 9 && out[2].conf == 0.5);
    vis_parse_detections("[] and nothing", 14, out, 4, &total, &empty);
    cr_assert(total == 0 && empty == 1);
    vis_parse_detections("no list", 7, out, 4, &total, &empty);
    cr_assert(total == 0 && empty == 0);
    /* the cap keeps the first, the total counts all */
    vis_parse_detections("[[0,0,1,1],[0,0,1,1],[0,0,1,1],[0,0,1,1],[0,0,1,1],[0,0,1,1]]", 61, out,
                         4, &total, &empty);
    cr_assert_eq(total, 6);
}

Test(vision_parts, count_extractor)
{
    static const struct {
        const char *text;
        int found, whole;
        const char *as_written;
    } cases[] = {
        {"3", 1, 1, "3"},
        {"there are 12 shapes", 1, 1, "12"},
        {"1,234,567", 1, 1, "1,234,567"},
        {"1,23", 1, 1, "23"},
        {"2.5", 1, 0, "2.5"},
        {"3.0 apples", 1, 1, "3.0"},
        {"There are 3.", 1, 1, "3"},
        {"ninety-nine", 1, 1, "ninety-nine"},
        {"Twenty one", 1, 1, "Twenty one"},
        {"twenty", 1, 1, "twenty"},
        {"someone", 0, 0, NULL},
        {"x2", 0, 0, NULL},
        {"five 6", 1, 1, "6"},
        {"", 0, 0, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        vis_count c;
        vis_extract_count(cases[i].text, strlen(cases[i].text), &c);
        cr_expect_eq(c.found, cases[i].found, "%s", cases[i].text);
        if (c.found && cases[i].as_written) {
            cr_expect_eq(c.whole, cases[i].whole, "%s", cases[i].text);
            cr_expect_eq(c.len, strlen(cases[i].as_written), "%s", cases[i].text);
            cr_expect(strncmp(cases[i].text + c.at, cases[i].as_written, c.len) == 0, "%s",
                      cases[i].text);
        }
    }
    vis_count a, b;
    vis_extract_count("0001,000", 8, &a); /* 0001 then ,000: not the strict form */
    vis_extract_count("twenty-one", 10, &a);
    vis_extract_count("21", 2, &b);
    cr_assert(vis_count_equal(&a, &b));
    vis_extract_count("-0", 2, &a);
    vis_extract_count("zero", 4, &b);
    cr_assert(vis_count_equal(&a, &b));
    vis_extract_count("1,000", 5, &a);
    vis_extract_count("01000", 5, &b);
    cr_assert(vis_count_equal(&a, &b));
}

Test(vision_parts, choice_extractors)
{
    static const struct {
        const char *text;
        char last, letter;
    } letters[] = {
        {"B", 'E', 'B'},
        {"(c)", 'E', 'C'},
        {"D. a dog", 'E', 'D'},
        {"Option C", 'E', 'C'},
        {"The correct choice: (B)", 'E', 'B'},
        {"选项B", 'E', 'B'},
        {"选B", 'E', 'B'},
        {"答案：D", 'E', 'D'},
        {"It is A", 'E', 'A'},
        {"A dog", 'E', 0},
        {"I guess", 'E', 0},
        {"Z is not offered", 'E', 0},
        {"answer is Blue", 'E', 0},
    };
    for (size_t i = 0; i < sizeof letters / sizeof letters[0]; i++) {
        vis_choice c;
        vis_extract_letter(letters[i].text, strlen(letters[i].text), letters[i].last, &c);
        cr_expect_eq(c.found ? c.letter : 0, letters[i].letter, "%s: got %c", letters[i].text,
                     c.found ? c.letter : '-');
    }
    static const struct {
        const char *text;
        char yn;
    } yn[] = {{"yes", 'Y'}, {"No.", 'N'}, {"FALSE", 'N'}, {"是", 'Y'},
              {"否", 'N'},  {"是否", 0},  {"nobody knows", 0}, {"yes2", 0}};
    for (size_t i = 0; i < sizeof yn / sizeof yn[0]; i++) {
        vis_choice c;
        vis_extract_yesno(yn[i].text, strlen(yn[i].text), &c);
        cr_expect_eq(c.found ? c.letter : 0, yn[i].yn, "%s", yn[i].text);
    }
    char letter;
    int is_yn;
    cr_assert(vis_gold_choice("B) a cat", 8, &letter, &is_yn) && letter == 'B' && !is_yn);
    cr_assert(vis_gold_choice("Yes", 3, &letter, &is_yn) && letter == 'Y' && is_yn);
    cr_assert(!vis_gold_choice("maybe", 5, &letter, &is_yn));
}

Test(vision_parts, anls)
{
    double sim;
    cr_assert_eq(vis_anls("", 0, "", 0, &sim), 1);
    cr_assert_eq(vis_anls("Hello  World", 12, "hello world", 11, &sim), 1);
    cr_assert_eq(vis_anls("abcd", 4, "abce", 4, &sim), 0.75);
    cr_assert_eq(vis_anls("abcdef", 6, "ghijkl", 6, &sim), 0);
    cr_assert_eq(sim, 0);
    /* long strings: compared on their first VIS_ANLS_MAX_CHARS */
    size_t len;
    char *a = reward_repeat("x", 5000, "", &len), *b = reward_repeat("x", 4000, "", &len);
    cr_assert_eq(vis_anls(a, 5000, b, 4000, &sim), 1);
    cr_assert_eq(vis_anls(a, 5000, "x", 1, &sim), 0, "the lengths alone say < 0.5");
    free(a);
    free(b);
}

Test(vision_parts, palette_and_regions)
{
    size_t at, n;
    cr_assert_eq(vis_palette_find_last("a Red then GREY", 15, &at, &n), 2);
    cr_assert(at == 11 && n == 4);
    cr_assert_eq(vis_palette_find_last("credit", 6, &at, &n), -1, "whole words only");
    cr_assert_eq(vis_palette_find_last("是粉红色的", strlen("是粉红色的"), &at, &n), 9);
    cr_assert_eq(n, strlen("粉红色"));
    uint8_t near[3] = {120, 130, 125};
    cr_assert_eq(vis_palette_nearest(near), 2);
    /* a checkerboard: 4-connectivity sees every square, 8 sees one region */
    uint8_t px[8 * 8 * 3];
    for (int i = 0; i < 64; i++)
        memset(px + 3 * i, ((i % 8) + (i / 8)) % 2 ? 0 : 255, 3);
    image_rgb img = {.w = 8, .h = 8, .rgb = px};
    uint64_t count;
    uint8_t black[3] = {0, 0, 0};
    cr_assert_eq(vis_count_regions(&img, black, 0, 4, 1, &count), 0);
    cr_assert_eq(count, 32);
    cr_assert_eq(vis_count_regions(&img, black, 0, 8, 1, &count), 0);
    cr_assert_eq(count, 1);
    cr_assert_eq(vis_count_regions(&img, black, 0, 8, 33, &count), 0);
    cr_assert_eq(count, 0);
}
