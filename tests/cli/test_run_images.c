/* test_run_images.c: a task's image on its way from the tasks file to the
 * model ops (issue 27, docs/data.md "Images"), end to end through `tern
 * check` and `tern run` with the test double test_vision_model
 * (tests/test_plugins/vision_model.c: an 8x8 exact encoder, placeholder
 * "<image>" of 4 tokens, an answer that is its image's top-left red value,
 * and a trace file of the pixels each op got): the start checks refuse each
 * bad image or placeholder with the task's line and exit 2, and a text-only
 * policy refuses image tasks. Each test works in its own directory. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "command.h"

#define TERN "TERN_PLUGIN_PATH=" TERN_TEST_PLUGINS_DIR " " TERN_TEST_BIN
#define SRC TERN_TEST_SOURCE_DIR
#define WORK TERN_TEST_WORK_DIR

static char dir[512]; /* this test's own directory */

/* A w x h binary PPM of one colour. */
static void write_ppm(const char *name, int w, int h, int r, int g, int b)
{
    char path[700];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    fprintf(f, "P6\n%d %d\n255\n", w, h);
    for (int i = 0; i < w * h; i++) {
        fputc(r, f);
        fputc(g, f);
        fputc(b, f);
    }
    cr_assert_eq(fclose(f), 0);
}

/* The sum of every byte of a w x h picture of one colour, as the test
 * model traces it. */
static unsigned long long pixel_sum(int w, int h, int r, int g, int b)
{
    return (unsigned long long)w * (unsigned long long)h * (unsigned long long)(r + g + b);
}

static void make_dir(void)
{
    snprintf(dir, sizeof dir, "%s/images_XXXXXX", WORK);
    cr_assert_not_null(mkdtemp(dir));
    char path[700];
    snprintf(path, sizeof path, "%s/img", dir);
    cr_assert_eq(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/img/folder.png", dir); /* not a file */
    cr_assert_eq(mkdir(path, 0755), 0);
    write_ppm("img/red.ppm", 8, 8, 200, 10, 20);
    write_ppm("img/blue.ppm", 8, 8, 7, 10, 250);
    write_ppm("img/big.ppm", 10, 10, 1, 2, 3);
    result r;
    run(&r, "cp '%s/tests/corpora/vision/badcrc.png' '%s/img/bad.png'", SRC, dir);
    cr_assert_eq(r.code, 0, "%s", r.err);
}

static void remove_dir(void)
{
    result r;
    run(&r, "rm -rf '%s'", dir);
}

static void write_in_dir(const char *name, const char *text)
{
    char path[700];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    write_file(path, text);
}

/* One task line: its id, prompt, image path ("" for none) and answer. */
static void task_line(char *buf, size_t n, const char *id, const char *prompt, const char *image,
                      const char *answer)
{
    char img[300] = "";
    if (*image)
        snprintf(img, sizeof img, "\"image\": \"%s\", ", image);
    snprintf(buf, n, "{\"id\": \"%s\", \"domain\": \"math\", \"prompt\": \"%s\", %s\"answer\": "
             "\"%s\"}\n", id, prompt, img, answer);
}

#define MODEL_WITH(extra)                                                                      \
    "model = { plugin = \"test_vision_model\"; init = { preset = \"tiny\"; }; " extra " };\n"
#define MODEL MODEL_WITH("")
#define REST                                                                                   \
    "run = { name = \"v\"; out_dir = \"runs\"; };\n"                                            \
    "reference = { same_as = \"model\"; };\n"                                                    \
    "explorer = { batch_tasks = 2; group_size = 2; max_tokens = 8; };\n"                         \
    "trainer = { steps = 1; sft = { steps = 0; }; };\n"                                          \
    "algorithm = { kl = { estimator = \"k3\"; coef = 0.001; }; };\n"                             \
    "buffer = { plugin = \"fifo\"; };\n"                                                         \
    "sync = { plugin = \"synchronous\"; };\n"                                                    \
    "rewards = ( { domain = \"math\"; plugin = \"math\"; } );\n"
#define DATA "data = { train = \"tasks.jsonl\"; };\n"

/* `tern check` and `tern run` both refuse c.cfg with exit 2 and each of the
 * `want` texts in their messages, and make no run directory. */
static void expect_refused(const char *config, const char *const *want, size_t n_want)
{
    write_in_dir("c.cfg", config);
    for (int by_run = 0; by_run < 2; by_run++) {
        result r;
        run(&r, "cd '%s' && %s %s c.cfg", dir, TERN, by_run ? "run" : "check");
        cr_expect_eq(r.code, 2, "%s exits 2 (a config error): %s", by_run ? "run" : "check",
                     r.err);
        for (size_t i = 0; i < n_want; i++)
            cr_expect(strstr(r.err, want[i]), "%s says \"%s\": %s", by_run ? "run" : "check",
                      want[i], r.err);
    }
    char runs[700];
    snprintf(runs, sizeof runs, "%s/runs", dir);
    cr_expect(!path_exists(runs), "no run directory");
}

Test(run_images, each_bad_image_is_refused_at_start_naming_its_task, .timeout = 120)
{
    make_dir();
    char t[6][400], tasks[2600];
    task_line(t[0], sizeof t[0], "ok", "What is the red?", "img/red.ppm", "200");
    task_line(t[1], sizeof t[1], "missing", "What is the red?", "img/missing.png", "1");
    task_line(t[2], sizeof t[2], "folder", "What is the red?", "img/folder.png", "1");
    task_line(t[3], sizeof t[3], "corrupt", "What is the red?", "img/bad.png", "1");
    task_line(t[4], sizeof t[4], "big", "What is the red?", "img/big.ppm", "1");
    task_line(t[5], sizeof t[5], "two", "<image> and <image>?", "img/red.ppm", "1");
    snprintf(tasks, sizeof tasks, "%s%s%s%s%s%s", t[0], t[1], t[2], t[3], t[4], t[5]);
    write_in_dir("tasks.jsonl", tasks);
    /* the path as given, then as read: absolute, from the tasks file's folder */
    char missing[800];
    snprintf(missing, sizeof missing, "tasks.jsonl:2: task missing: image \"img/missing.png\" "
             "(%s/img/missing.png): cannot open: No such file or directory; check the path, "
             "which is relative to the tasks file's folder", dir);
    const char *want[] = {
        missing,
        "tasks.jsonl:3: task folder: image \"img/folder.png\" (",
        "/img/folder.png): cannot open: Is a directory",
        "tasks.jsonl:4: task corrupt: image \"img/bad.png\" (",
        "/img/bad.png): corrupt PNG: ",
        "; give a PNG or PPM/PGM image the model can read",
        "tasks.jsonl:5: task big: image \"img/big.ppm\" is 10x10, and model plugin "
        "'test_vision_model' takes 8x8 images only (its encoder's size): resize the image, or "
        "set the model's image_fit = \"resize\" to have the model resize it",
        "tasks.jsonl:6: task two: the prompt and system turn hold 2 image placeholders "
        "(\"<image>\") and the task has 1 image",
    };
    expect_refused(MODEL REST DATA, want, sizeof want / sizeof want[0]);
    /* the first task alone is fine: check passes */
    write_in_dir("tasks.jsonl", t[0]);
    result r;
    run(&r, "cd '%s' && %s check c.cfg", dir, TERN);
    cr_expect_eq(r.code, 0, "%s", r.err);
    remove_dir();
}

Test(run_images, placeholders_without_an_image_and_eval_tasks_are_checked_too, .timeout = 120)
{
    make_dir();
    char a[400], b[400], tasks[1300];
    task_line(a, sizeof a, "ok", "What is the red?", "img/red.ppm", "200");
    task_line(b, sizeof b, "none", "Look: <image>", "", "1");
    write_in_dir("tasks.jsonl", a);
    write_in_dir("eval.jsonl", b);
    const char *want_eval[] = {
        "eval.jsonl:1: task none: the prompt and system turn hold 1 image placeholder "
        "(\"<image>\") and the task has no \"image\": each placeholder stands for one image; "
        "give the image's path in \"image\", or remove the placeholder",
    };
    expect_refused(MODEL REST "data = { train = \"tasks.jsonl\"; eval = \"eval.jsonl\"; };\n",
                   want_eval, 1);
    /* the system turn's placeholders count, and a field that is no path is named */
    char line[500];
    snprintf(line, sizeof line, "{\"id\": \"num\", \"domain\": \"math\", \"prompt\": \"What?\", "
             "\"image\": 17, \"answer\": \"1\"}\n");
    snprintf(tasks, sizeof tasks, "%s%s", a, line);
    write_in_dir("tasks.jsonl", tasks);
    const char *want_sys[] = {
        "tasks.jsonl:1: task ok: the prompt and system turn hold 2 image placeholders",
        "tasks.jsonl:2: task num: the \"image\" field is an integer, not the path of a PNG or "
        "PPM file; give the image's path, relative to the tasks file's folder",
    };
    /* the test model has no chat template: a system turn is refused later,
     * at the prompts; the image checks come first */
    expect_refused(MODEL REST "data = { train = \"tasks.jsonl\"; system_prompt = \"See "
                   "<image> and <image>.\"; };\n", want_sys, 2);
    remove_dir();
}

Test(run_images, more_than_five_problems_end_in_a_count, .timeout = 120)
{
    make_dir();
    char tasks[4000] = "", line[400];
    for (int i = 0; i < 7; i++) {
        char id[16];
        snprintf(id, sizeof id, "m%d", i);
        task_line(line, sizeof line, id, "What?", "img/missing.png", "1");
        strcat(tasks, line);
    }
    write_in_dir("tasks.jsonl", tasks);
    const char *want[] = {"tasks.jsonl:5: task m4: image", "tasks.jsonl: 7 problems in all with "
                                                           "the tasks' images and placeholders"};
    expect_refused(MODEL REST DATA, want, 2);
    write_in_dir("c.cfg", MODEL REST DATA);
    result r;
    run(&r, "cd '%s' && %s check c.cfg", dir, TERN);
    cr_expect_null(strstr(r.err, "task m5"), "five are named: %s", r.err);
    remove_dir();
}

Test(run_images, a_text_only_policy_refuses_image_tasks, .timeout = 120)
{
    make_dir();
    char a[400];
    task_line(a, sizeof a, "ok", "What is the red?", "img/red.ppm", "200");
    write_in_dir("tasks.jsonl", a);
    /* no image_spec op at all */
    const char *no_op[] = {
        "tasks.jsonl:1: task ok has an image (img/red.ppm)",
        "tasks.jsonl: 1 task has an image, and model plugin 'test_uniform_model' reads text "
        "only (no image_spec op, ABI 1.12): it would answer without seeing the picture",
    };
    expect_refused("model = { plugin = \"test_uniform_model\"; init = { preset = \"tiny\"; }; "
                   "};\n" REST DATA, no_op, 2);
    /* the op, answering that this instance has no encoder */
    const char *unsupported[] = {
        "model plugin 'test_vision_model' reads text only (its image_spec op says this model "
        "has no image encoder)",
    };
    expect_refused(MODEL_WITH("reads_images = false;") REST DATA, unsupported, 1);
    /* a reference of its own plugin must read images as the policy does */
    const char *reference[] = {
        "tasks.jsonl: tasks have images, and the reference (plugin 'test_uniform_model') reads "
        "text only: the KL term scores the policy's image prompts under it",
    };
    expect_refused(MODEL "run = { name = \"v\"; out_dir = \"runs\"; };\n"
                         "reference = { plugin = \"test_uniform_model\"; init = { preset = "
                         "\"tiny\"; }; };\n"
                         "explorer = { batch_tasks = 2; group_size = 2; max_tokens = 8; };\n"
                         "trainer = { steps = 1; sft = { steps = 0; }; };\n"
                         "algorithm = { kl = { estimator = \"k3\"; coef = 0.001; }; };\n"
                         "buffer = { plugin = \"fifo\"; };\n"
                         "sync = { plugin = \"synchronous\"; };\n"
                         "rewards = ( { domain = \"math\"; plugin = \"math\"; } );\n" DATA,
                   reference, 1);
    remove_dir();
}

/* ---- a run: the images reach the ops --------------------------------------------------- */

/* The tasks of the runs below, in data/ with their images in data/img/ (a
 * relative image path starts from the tasks file's folder): two about a
 * picture (one without a placeholder, one with it first), one of text. */
static void write_run_tasks(void)
{
    char path[700];
    snprintf(path, sizeof path, "%s/data", dir);
    cr_assert_eq(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/data/img", dir);
    cr_assert_eq(mkdir(path, 0755), 0);
    write_ppm("data/img/red.ppm", 8, 8, 200, 10, 20);
    write_ppm("data/img/blue.ppm", 8, 8, 7, 10, 250);
    char r[400], b[400], t[400], tasks[1300];
    task_line(r, sizeof r, "r", "What is the red?", "img/red.ppm", "200");
    task_line(b, sizeof b, "b", "<image>\\nWhat is the red?", "img/blue.ppm", "7");
    task_line(t, sizeof t, "t", "1+1=", "", "2");
    snprintf(tasks, sizeof tasks, "%s%s%s", r, b, t);
    write_in_dir("data/tasks.jsonl", tasks);
    write_in_dir("data/eval.jsonl", r);
}

/* How many lines of `text` are `line` exactly. */
static int lines_equal(const char *text, const char *line)
{
    int n = 0;
    size_t k = strlen(line);
    for (const char *p = text; (p = strstr(p, line)); p += k)
        if ((p == text || p[-1] == '\n') && (p[k] == '\n' || p[k] == '\0'))
            n++;
    return n;
}

Test(run_images, images_reach_generate_score_and_backward_in_a_run, .timeout = 240)
{
    make_dir();
    write_run_tasks();
    char config[4000], trace[700];
    snprintf(trace, sizeof trace, "%s/ops.log", dir);
    snprintf(config, sizeof config,
             "model = { plugin = \"test_vision_model\"; init = { preset = \"tiny\"; }; "
             "trace = \"%s\"; };\n"
             "run = { name = \"v\"; out_dir = \"runs\"; };\n"
             "reference = { same_as = \"model\"; };\n"
             "data = { train = \"data/tasks.jsonl\"; eval = \"data/eval.jsonl\"; shuffle = "
             "false; };\n"
             "explorer = { batch_tasks = 3; group_size = 2; max_tokens = 8; };\n"
             "trainer = { steps = 2; sft = { steps = 1; batch_tasks = 3; }; };\n"
             "algorithm = { kl = { estimator = \"k3\"; coef = 0.001; }; };\n"
             "buffer = { plugin = \"fifo\"; };\n"
             "sync = { plugin = \"synchronous\"; };\n"
             "rewards = ( { domain = \"math\"; plugin = \"math\"; } );\n", trace);
    write_in_dir("c.cfg", config);
    result r;
    run(&r, "cd '%s' && %s run c.cfg", dir, TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);

    static char ops[1 << 16];
    slurp(trace, ops, sizeof ops);
    char red[64], blue[64];
    /* generate: the explorers (both images, each batch) and the evaluation (red) */
    snprintf(red, sizeof red, "generate images=1 sum=%llu", pixel_sum(8, 8, 200, 10, 20));
    snprintf(blue, sizeof blue, "generate images=1 sum=%llu", pixel_sum(8, 8, 7, 10, 250));
    cr_expect_geq(lines_equal(ops, red), 3, "explorers and evaluations: %s", ops);
    cr_expect_geq(lines_equal(ops, blue), 2, "%s", ops);
    cr_expect_geq(lines_equal(ops, "generate images=0 sum=0"), 2, "the text task: %s", ops);
    /* score (the warm-up's, the reference's for the KL term) and backward
     * (warm-up and RL): each image's sequences carry its pixels */
    snprintf(red, sizeof red, "score images=1 sum=%llu", pixel_sum(8, 8, 200, 10, 20));
    snprintf(blue, sizeof blue, "backward images=1 sum=%llu", pixel_sum(8, 8, 7, 10, 250));
    cr_expect_geq(lines_equal(ops, red), 1 + 2 * 2, "warm-up, and 2 responses a step: %s", ops);
    cr_expect_geq(lines_equal(ops, blue), 1 + 2 * 2, "%s", ops);
    snprintf(blue, sizeof blue, "backward images=1 sum=%llu", pixel_sum(8, 8, 200, 10, 20));
    cr_expect_geq(lines_equal(ops, blue), 1 + 2 * 2, "%s", ops);
    cr_expect_geq(lines_equal(ops, "backward images=0 sum=0"), 1 + 2 * 2, "%s", ops);

    /* rollouts.jsonl: the image as the task gives it; the pixels decided
     * the answer (red 200: right); the placeholder put once before the
     * prompt: BOS, 4 image tokens, "\n" and the 16 bytes of the question */
    char path[700];
    snprintf(path, sizeof path, "%s/runs/v/rollouts.jsonl", dir);
    json_t *lines = json_lines(path, NULL);
    cr_assert_eq(json_array_size(lines), 6, "3 groups a step, 2 steps");
    size_t seen_r = 0, seen_b = 0, seen_t = 0;
    for (size_t i = 0; i < json_array_size(lines); i++) {
        json_t *l = json_array_get(lines, i);
        const char *task = json_string_value(json_object_get(l, "task"));
        const char *image = json_string_value(json_object_get(l, "image"));
        json_int_t prompt_tokens = json_integer_value(json_object_get(l, "prompt_tokens"));
        cr_assert_not_null(task);
        if (strcmp(task, "r") == 0) {
            seen_r++;
            cr_expect_str_eq(image ? image : "(none)", "img/red.ppm");
            cr_expect_str_eq(json_string_value(json_object_get(l, "response")), "200");
            cr_expect_eq(json_real_value(json_array_get(json_object_get(l, "rewards"), 0)), 1.0);
            cr_expect_eq(prompt_tokens, 1 + 4 + 1 + 16);
        } else if (strcmp(task, "b") == 0) {
            seen_b++;
            cr_expect_str_eq(image ? image : "(none)", "img/blue.ppm");
            cr_expect_str_eq(json_string_value(json_object_get(l, "response")), "7");
            cr_expect_eq(prompt_tokens, 1 + 4 + 1 + 16, "its own placeholder, not a second");
        } else {
            seen_t++;
            cr_expect_null(json_object_get(l, "image"), "a text task has no image");
            cr_expect_eq(prompt_tokens, 1 + 4);
        }
    }
    cr_expect(seen_r == 2 && seen_b == 2 && seen_t == 2);
    json_decref(lines);
    remove_dir();
}

Test(run_images, an_image_that_changed_since_it_was_sampled_is_refused, .timeout = 240)
{
    make_dir();
    write_run_tasks();
    /* the test model changes each image file's last byte once it generated
     * from it: the trainer finds other bytes than the explorer recorded */
    write_in_dir("c.cfg",
                 "model = { plugin = \"test_vision_model\"; init = { preset = \"tiny\"; }; "
                 "touch_images = true; };\n"
                 "run = { name = \"v\"; out_dir = \"runs\"; };\n"
                 "reference = { same_as = \"model\"; };\n"
                 "data = { train = \"data/tasks.jsonl\"; shuffle = false; };\n"
                 "explorer = { batch_tasks = 3; group_size = 2; max_tokens = 8; };\n"
                 "trainer = { steps = 2; sft = { steps = 0; }; };\n"
                 "algorithm = { kl = { estimator = \"k3\"; coef = 0.001; }; };\n"
                 "buffer = { plugin = \"fifo\"; };\n"
                 "sync = { plugin = \"synchronous\"; };\n"
                 "rewards = ( { domain = \"math\"; plugin = \"math\"; } );\n");
    result r;
    run(&r, "cd '%s' && %s run c.cfg", dir, TERN);
    cr_expect_eq(r.code, 1, "a runtime failure: %s", r.err);
    char says[900];
    snprintf(says, sizeof says, "trainer: batch 0, group 0 (task r): image %s/data/img/red.ppm "
             "changed since it was sampled (its SHA-256 is ", dir);
    cr_expect(strstr(r.err, says), "%s", r.err);
    cr_expect(strstr(r.err, "restore the file, or start a new run"), "%s", r.err);
    remove_dir();
}

/* ---- tern generate --image ------------------------------------------------------------ */

Test(run_images, generate_gives_the_image_to_a_model_that_reads_images, .timeout = 120)
{
    make_dir();
    result r;
    run(&r, "cd '%s' && %s model init --preset tiny --plugin test_vision_model vm && "
        "%s model init --preset tiny --plugin test_uniform_model um", dir, TERN, TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    /* the answer is the image's top-left red: the pixels reached generate */
    run(&r, "cd '%s' && %s generate vm --plugin test_vision_model --prompt 'The red?' --image "
        "img/red.ppm --temperature 0 --stop-token 257", dir, TERN);
    cr_expect_eq(r.code, 0, "%s", r.err);
    cr_expect_str_eq(r.out, "200\n");
    run(&r, "cd '%s' && %s generate vm --plugin test_vision_model --prompt '<image> The red?' "
        "--image img/blue.ppm --temperature 0", dir, TERN);
    cr_expect_eq(r.code, 0, "%s", r.err);
    cr_expect(strncmp(r.out, "7", 1) == 0, "%s", r.out);

    /* what is refused, each with exit 2 and a line that says why */
    const struct {
        const char *args, *says;
    } bad[] = {
        {"um --plugin test_uniform_model --prompt 'x' --image img/red.ppm",
         "tern generate: model plugin 'test_uniform_model' reads text only (no image_spec op, "
         "ABI 1.12): --image needs a model that reads images"},
        {"vm --plugin test_vision_model --prompt 'x' --image img/missing.png",
         "tern generate: --image img/missing.png: cannot open: No such file or directory"},
        {"vm --plugin test_vision_model --prompt 'x' --image img/bad.png",
         "tern generate: --image img/bad.png: corrupt PNG: "},
        {"vm --plugin test_vision_model --prompt 'x' --image img/folder.png",
         "img/folder.png: cannot open: Is a directory"},
        {"vm --plugin test_vision_model --prompt 'x' --image img/big.ppm",
         "tern generate: --image img/big.ppm is 10x10, and model plugin 'test_vision_model' "
         "takes 8x8 images only"},
        {"vm --plugin test_vision_model --prompt '<image><image>' --image img/red.ppm",
         "the prompt holds 2 image placeholders (\"<image>\") and one image is given"},
        {"vm --plugin test_vision_model --prompt 'see <image>'",
         "the prompt holds the model's image placeholder \"<image>\" and no image is given"},
        {"vm --plugin test_vision_model --prompt 'x' --image ''", "--image"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        run(&r, "cd '%s' && %s generate %s", dir, TERN, bad[i].args);
        cr_expect_eq(r.code, 2, "%s: %s", bad[i].args, r.err);
        cr_expect(strstr(r.err, bad[i].says), "%s: says \"%s\": %s", bad[i].args, bad[i].says,
                  r.err);
        cr_expect_str_eq(r.out, "", "%s prints no sample", bad[i].args);
    }
    remove_dir();
}

/* ---- across MPI ranks -------------------------------------------------------------------- */

/* The explorer rank reads the images and sends each rollout's image file and
 * digest to the master (wire format 3), whose records carry them to the
 * trainer rank (experience format 4), which reads the files again. */
Test(run_images, images_cross_mpi_ranks, .timeout = 300)
{
    test_need_mpi();
    make_dir();
    write_run_tasks();
    char config[4000], trace[700];
    snprintf(trace, sizeof trace, "%s/ops.log", dir);
    snprintf(config, sizeof config,
             "model = { plugin = \"test_vision_model\"; init = { preset = \"tiny\"; }; "
             "trace = \"%s\"; };\n"
             "run = { name = \"v\"; out_dir = \"runs\"; };\n"
             "reference = { same_as = \"model\"; };\n"
             "data = { train = \"data/tasks.jsonl\"; shuffle = false; };\n"
             "explorer = { batch_tasks = 3; group_size = 2; max_tokens = 8; };\n"
             "trainer = { steps = 2; sft = { steps = 0; }; };\n"
             "algorithm = { kl = { estimator = \"k3\"; coef = 0.001; }; };\n"
             "buffer = { plugin = \"fifo\"; };\n"
             "sync = { plugin = \"synchronous\"; };\n"
             "rewards = ( { domain = \"math\"; plugin = \"math\"; } );\n", trace);
    write_in_dir("c.cfg", config);
    result r;
    run(&r, "cd '%s' && TERN_PLUGIN_PATH=" TERN_TEST_PLUGINS_DIR " %s -np 3 " TERN_TEST_BIN
        " run c.cfg", dir, test_mpirun());
    cr_assert_eq(r.code, 0, "%s", r.err);
    static char ops[1 << 16];
    slurp(trace, ops, sizeof ops);
    char line[64];
    snprintf(line, sizeof line, "generate images=1 sum=%llu", pixel_sum(8, 8, 200, 10, 20));
    cr_expect_geq(lines_equal(ops, line), 2, "the explorer rank: %s", ops);
    snprintf(line, sizeof line, "backward images=1 sum=%llu", pixel_sum(8, 8, 7, 10, 250));
    cr_expect_geq(lines_equal(ops, line), 2 * 2, "the trainer rank: %s", ops);
    char path[700];
    snprintf(path, sizeof path, "%s/runs/v/rollouts.jsonl", dir);
    json_t *lines = json_lines(path, "image");
    cr_expect_eq(json_array_size(lines), 4, "two image groups a step");
    json_decref(lines);
    remove_dir();
}
