/* test_vision_run.c: a short vision run with the real vision-language model
 * (the `transformer` plugin's vlm-tiny preset, docs/models.md) and the
 * `vision` reward, as a user runs it: `tern run` on pictures the test draws,
 * a supervised warm-up and a few RL steps, and held-out accuracy that only a
 * policy that sees the pixels can reach (the learning check of issue 27);
 * and the LLaVA's own start refusal of an image of the wrong size under
 * image_fit = "exact", naming the task's line. Each test works in its own
 * directory. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "command.h"

#define TERN TERN_TEST_BIN
#define WORK TERN_TEST_WORK_DIR
#define SRC TERN_TEST_SOURCE_DIR

static char dir[512];

static void make_dir(void)
{
    snprintf(dir, sizeof dir, "%s/vision_run_XXXXXX", WORK);
    cr_assert_not_null(mkdtemp(dir));
    char path[700];
    snprintf(path, sizeof path, "%s/img", dir);
    cr_assert_eq(mkdir(path, 0755), 0);
}

static void remove_dir(void)
{
    result r;
    run(&r, "rm -rf '%s'", dir);
}

/* The colours asked about: names and RGB as the vision reward's palette has them. */
static const struct {
    const char *name;
    int rgb[3];
} colours[] = {{"red", {255, 0, 0}},   {"green", {0, 128, 0}},    {"blue", {0, 0, 255}},
               {"black", {0, 0, 0}},   {"yellow", {255, 255, 0}}, {"purple", {128, 0, 128}}};
#define N_COLOURS 6

/* A size x size white PPM with a filled square of colour c at (x, y), side s. */
static void write_square(const char *name, int size, int c, int x, int y, int s)
{
    char path[700];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    fprintf(f, "P6\n%d %d\n255\n", size, size);
    for (int py = 0; py < size; py++)
        for (int px = 0; px < size; px++) {
            int in = px >= x && px < x + s && py >= y && py < y + s;
            for (int k = 0; k < 3; k++)
                fputc(in ? colours[c].rgb[k] : 255, f);
        }
    cr_assert_eq(fclose(f), 0);
}

/* n tasks "what colour is the square?" over pictures the test draws (the
 * colours in turn, the squares' places and sizes from a fixed sequence);
 * the vision reward judges them as color_at at the square's centre. */
static void write_tasks(const char *file, const char *prefix, int n, unsigned seed)
{
    char path[700];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    for (int i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        int s = 10 + (int)((seed >> 16) % 12); /* side 10..21 */
        seed = seed * 1103515245u + 12345u;
        int x = (int)((seed >> 16) % (unsigned)(32 - s));
        seed = seed * 1103515245u + 12345u;
        int y = (int)((seed >> 16) % (unsigned)(32 - s));
        int c = i % N_COLOURS;
        char name[64];
        snprintf(name, sizeof name, "img/%s-%03d.ppm", prefix, i);
        write_square(name, 32, c, x, y, s);
        fprintf(f, "{\"id\": \"%s-%d\", \"domain\": \"vision\", \"type\": \"color_at\", "
                   "\"prompt\": \"What colour is the square?\", \"image\": \"%s\", "
                   "\"point\": [%d, %d], \"answer\": \"%s\"}\n",
                prefix, i, name, x + s / 2, y + s / 2, colours[c].name);
    }
    cr_assert_eq(fclose(f), 0);
}

#define CONFIG                                                                                  \
    "run = { name = \"v\"; seed = 1; out_dir = \"runs\"; };\n"                                   \
    "model = { plugin = \"transformer\"; init = { preset = \"vlm-tiny\"; seed = 1; }; "          \
    "threads = 1; };\n"                                                                          \
    "reference = { same_as = \"model\"; };\n"                                                    \
    "data = { train = \"train.jsonl\"; eval = \"eval.jsonl\"; };\n"                              \
    "explorer = { batch_tasks = 8; group_size = 4; max_tokens = 8; };\n"                         \
    "trainer = { steps = 6; lr = 3e-4; sft = { steps = 60; batch_tasks = 16; lr = 2e-3; }; };\n" \
    "algorithm = { kl = { estimator = \"k3\"; coef = 0.001; }; };\n"                             \
    "eval = { max_tokens = 8; };\n"                                                              \
    "buffer = { plugin = \"fifo\"; };\n"                                                         \
    "sync = { plugin = \"synchronous\"; };\n"                                                    \
    "rewards = ( { domain = \"vision\"; plugin = \"vision\"; } );\n"

/* Six colours in turn: a policy blind to the pixels answers one colour name
 * per prompt and is right on a sixth of them at most. */
Test(vision_run, a_short_run_learns_what_only_the_pixels_tell, .timeout = 600)
{
    make_dir();
    write_tasks("train.jsonl", "train", 96, 1);
    write_tasks("eval.jsonl", "eval", 30, 2);
    char path[700];
    snprintf(path, sizeof path, "%s/v.cfg", dir);
    write_file(path, CONFIG);
    result r;
    run(&r, "cd '%s' && %s run v.cfg", dir, TERN);
    cr_assert_eq(r.code, 0, "the run: %s", r.err);
    snprintf(path, sizeof path, "%s/runs/v/summary.json", dir);
    json_error_t jerr;
    json_t *s = json_load_file(path, 0, &jerr);
    cr_assert_not_null(s, "%s: %s", path, jerr.text);
    double before = json_number_value(json_object_get(s, "accuracy_before_rl"));
    double after = json_number_value(json_object_get(s, "accuracy_after_rl"));
    cr_expect_geq(after, 0.6, "held-out accuracy after the run %g (after the warm-up %g): a "
                  "policy blind to the pixels gets 1/6", after, before);
    cr_expect_geq(after, before - 0.1, "RL keeps what the warm-up learnt: %g -> %g", before,
                  after);
    fprintf(stderr, "vision run: held-out accuracy %.3f after the warm-up, %.3f after RL\n",
            before, after);
    json_decref(s);
    /* rollouts.jsonl names each group's picture */
    run(&r, "grep -c '\"image\":\"img/train-' '%s/runs/v/rollouts.jsonl'", dir);
    cr_expect_eq(r.code, 0, "rollouts.jsonl names the pictures: %s", r.out);
    remove_dir();
}

/* The vision demonstration, etc/examples/vision-shapes.cfg, cut to seconds
 * on a few pictures `tern data shapes` draws here: it checks, and its run
 * warms up, samples answers about the pictures and has the vision reward
 * judge them. (Its learning is measured in docs/rewards.md, not here: the
 * test above is CI's learning check.) */
Test(vision_run, the_shapes_example_passes_check_and_run, .timeout = 240)
{
    make_dir();
    result r;
    run(&r, "cd '%s' && %s data shapes --seed 1 --n 8 --size 32 --types counting train && "
            "%s data shapes --seed 2 --n 4 --size 32 --types counting eval",
        dir, TERN, TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    char opts[2400];
    snprintf(opts, sizeof opts,
             "-o trainer.steps=2 -o trainer.sft.steps=2 -o eval.limit=4 "
             "-o 'run.out_dir=\"%s/out\"' -o 'data.train=\"%s/train/shapes.jsonl\"' "
             "-o 'data.eval=\"%s/eval/shapes.jsonl\"'",
             dir, dir, dir);
    run(&r, "cd '%s' && %s check %s/etc/examples/vision-shapes.cfg %s", dir, TERN, SRC, opts);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "vision"), "%s", r.out);
    run(&r, "cd '%s' && %s run %s/etc/examples/vision-shapes.cfg %s", dir, TERN, SRC, opts);
    cr_expect_eq(r.code, 0, "%s", r.err);
    char path[700];
    snprintf(path, sizeof path, "%s/out/vision-shapes/summary.json", dir);
    struct stat st;
    cr_expect_eq(stat(path, &st), 0, "the run finished: %s", r.err);
    run(&r, "grep -c '\"image\":\"images/shape-' '%s/out/vision-shapes/rollouts.jsonl'",
        dir);
    cr_expect_eq(r.code, 0, "rollouts.jsonl names the pictures: %s", r.out);
    remove_dir();
}

/* image_fit = "exact": a picture of another size than the encoder's (32 x
 * 32) is refused at start, naming its task's line and the setting. */
Test(vision_run, exact_fit_refuses_another_size_at_start, .timeout = 120)
{
    make_dir();
    write_square("img/ok.ppm", 32, 0, 2, 2, 10);
    write_square("img/small.ppm", 20, 1, 2, 2, 10);
    char path[700];
    snprintf(path, sizeof path, "%s/train.jsonl", dir);
    write_file(path,
               "{\"id\": \"a\", \"domain\": \"vision\", \"type\": \"color_at\", \"prompt\": "
               "\"What colour?\", \"image\": \"img/ok.ppm\", \"point\": [5, 5], \"answer\": "
               "\"red\"}\n"
               "{\"id\": \"b\", \"domain\": \"vision\", \"type\": \"color_at\", \"prompt\": "
               "\"What colour?\", \"image\": \"img/small.ppm\", \"point\": [5, 5], \"answer\": "
               "\"green\"}\n");
    snprintf(path, sizeof path, "%s/train.jsonl", dir);
    snprintf(path, sizeof path, "%s/v.cfg", dir);
    write_file(path, "run = { name = \"v\"; out_dir = \"runs\"; };\n"
                     "model = { plugin = \"transformer\"; init = { preset = \"vlm-tiny\"; }; "
                     "image_fit = \"exact\"; };\n"
                     "reference = { same_as = \"model\"; };\n"
                     "data = { train = \"train.jsonl\"; };\n"
                     "buffer = { plugin = \"fifo\"; };\n"
                     "sync = { plugin = \"synchronous\"; };\n"
                     "rewards = ( { domain = \"vision\"; plugin = \"vision\"; } );\n");
    result r;
    run(&r, "cd '%s' && %s check v.cfg", dir, TERN);
    cr_expect_eq(r.code, 2, "exit 2: %s", r.err);
    cr_expect(strstr(r.err, "train.jsonl:2: task b"), "names the line and task: %s", r.err);
    cr_expect(strstr(r.err, "image_fit"), "names the setting: %s", r.err);
    cr_expect(!strstr(r.err, "task a"), "the right-sized picture is fine: %s", r.err);
    /* resize (the default) takes it */
    write_file(path, "run = { name = \"v\"; out_dir = \"runs\"; };\n"
                     "model = { plugin = \"transformer\"; init = { preset = \"vlm-tiny\"; }; };\n"
                     "reference = { same_as = \"model\"; };\n"
                     "data = { train = \"train.jsonl\"; };\n"
                     "buffer = { plugin = \"fifo\"; };\n"
                     "sync = { plugin = \"synchronous\"; };\n"
                     "rewards = ( { domain = \"vision\"; plugin = \"vision\"; } );\n");
    run(&r, "cd '%s' && %s check v.cfg", dir, TERN);
    cr_expect_eq(r.code, 0, "resize takes it: %s", r.err);
    remove_dir();
}
