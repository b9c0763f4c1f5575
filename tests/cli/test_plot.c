/* test_plot.c: `tern plot` end to end: on a real short run (the default
 * panels, against steps and time, smoothing), two runs overlaid (one lacking
 * a key), long runs thinned, every bad input with its message and exit code
 * (nothing left behind), and the PNG through rsvg-convert, present, missing
 * or failing. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "command.h"
#include "svg_checks.h"

#define TERN TERN_TEST_BIN
#define SRC TERN_TEST_SOURCE_DIR
#define WORK TERN_TEST_WORK_DIR

/* The default panels, in order, as the command prints them. */
#define ALL_PANELS "reward_mean, eval/accuracy, kl, entropy, response_length, staleness, mismatch_kl"

/* ---- runs --------------------------------------------------------------- */

/* A real run, WORK/runs_plot/NAME: the tiny model on the quickstart's
 * tasks, a few warm-up steps, 4 RL steps, an evaluation before RL and
 * every 2 steps (so at steps 0, 2 and 4). About a second. */
static void real_run(const char *name)
{
    char cfg[512], text[4096];
    snprintf(cfg, sizeof cfg, "%s/%s.cfg", WORK, name);
    snprintf(text, sizeof text,
             "run = { name = \"%s\"; seed = 3; out_dir = \"runs_plot\"; };\n"
             "model = { plugin = \"transformer\"; init = { preset = \"tiny\"; seed = 1; }; "
             "threads = 1; };\n"
             "reference = { same_as = \"model\"; };\n"
             "data = { train = \"%s/etc/data/arith-train.jsonl\"; eval = "
             "\"%s/etc/data/arith-eval.jsonl\"; };\n"
             "explorer = { batch_tasks = 4; group_size = 4; max_tokens = 6; };\n"
             "trainer = { steps = 4; save_every = 0; sft = { steps = 5; batch_tasks = 8; }; };\n"
             "algorithm = { kl = { estimator = \"k3\"; coef = 0.001; }; };\n"
             "eval = { every = 2; max_tokens = 6; limit = 20; };\n"
             "buffer = { plugin = \"fifo\"; capacity = 64; };\n"
             "sync = { plugin = \"synchronous\"; };\n"
             "rewards = ( { domain = \"math\"; plugin = \"math\"; } );\n",
             name, SRC, SRC);
    write_file(cfg, text);
    result r;
    run(&r, "rm -rf runs_plot/%s && %s run %s.cfg > /dev/null", name, TERN, name);
    cr_assert_eq(r.code, 0, "tern run: %s", r.err);
}

/* A metrics.jsonl as tern writes one, at WORK/DIR/metrics.jsonl: two
 * warm-up lines, the evaluation before RL, then `steps` RL lines with the
 * default panels' keys (and an evaluation every 10 steps); with_time adds
 * wall_seconds to every line. `tail` is appended as it is. */
static void fake_run(const char *dir, int steps, int with_time, const char *tail)
{
    char path[512];
    result r;
    run(&r, "rm -rf %s && mkdir -p %s", dir, dir);
    cr_assert_eq(r.code, 0);
    snprintf(path, sizeof path, "%s/%s/metrics.jsonl", WORK, dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    char t[64] = "";
    for (int s = 1; s <= 2; s++) {
        if (with_time)
            snprintf(t, sizeof t, ",\"wall_seconds\":%.3f", 0.1 * s);
        fprintf(f, "{\"stage\":\"sft\",\"step\":%d,\"loss\":%.3f%s}\n", s, 3.0 / s, t);
    }
    if (with_time)
        snprintf(t, sizeof t, ",\"wall_seconds\":%.3f", 0.5);
    fprintf(f, "{\"stage\":\"rl\",\"step\":0,\"version\":0%s,\"eval/accuracy\":0.2}\n", t);
    for (int s = 1; s <= steps; s++) {
        if (with_time)
            snprintf(t, sizeof t, ",\"wall_seconds\":%.3f", 0.5 + 0.25 * s);
        fprintf(f, "{\"stage\":\"rl\",\"step\":%d,\"version\":%d%s,\"reward_mean\":%.4f,"
                   "\"kl\":%.5f,\"entropy\":%.4f,\"response_length\":%.2f,\"staleness\":0.0,"
                   "\"mismatch_kl\":1e-12,\"grad_norm\":%.3f",
                s, s, t, 0.2 + 0.5 * s / (steps + 1.0), 0.001 * s, 0.7 - 0.3 * s / steps,
                3.0 + s % 3, 1.0 + s % 5);
        if (s % 10 == 0 || s == steps)
            fprintf(f, ",\"eval/accuracy\":%.3f", 0.2 + 0.6 * s / steps);
        fprintf(f, "}\n");
    }
    if (tail)
        fputs(tail, f);
    fclose(f);
}

/* ---- reading the picture ------------------------------------------------ */

static char svg[1 << 20];

static void read_svg(const char *rel)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", WORK, rel);
    slurp(path, svg, sizeof svg);
    cr_assert(strlen(svg) > 0, "%s: no picture", path);
    cr_assert(strlen(svg) < sizeof svg - 1, "%s: too big for the test buffer", path);
}

/* The picture is one svg element, whole, its groups and curves closed. */
static void expect_plot_svg(const char *text)
{
    expect_whole_svg(text);
    cr_expect_eq(svg_count(text, "<g"), svg_count(text, "</g>"));
    /* a curve holds its tooltip; a faint raw curve is an empty element */
    cr_expect_eq(svg_count(text, "<polyline"),
                 svg_count(text, "</polyline>") + svg_count(text, "<polyline class=\"raw\""));
}

/* The number of points of the first curve whose tooltip names `what`
 * ("real: kl"): the pairs in its points attribute. -1 when there is none. */
static int curve_points(const char *text, const char *what)
{
    char tip[128];
    snprintf(tip, sizeof tip, "<title>%s</title></polyline>", what);
    const char *end = strstr(text, tip);
    if (!end)
        return -1;
    const char *start = end;
    while (start > text && strncmp(start, "<polyline class=\"curve\"", 23) != 0)
        start--;
    const char *pts = strstr(start, "points=\"");
    int n = 1;
    for (const char *p = pts + 8; *p != '"'; p++)
        n += *p == ' ';
    return n;
}

/* ---- the picture -------------------------------------------------------- */

Test(plot, a_real_run)
{
    result r;
    real_run("real");
    run(&r, "%s plot runs_plot/real -o real.svg", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_expect_str_eq(r.out, "panels: " ALL_PANELS "\nreal.svg\n");
    cr_expect_str_eq(r.err, "");
    read_svg("real.svg");
    expect_plot_svg(svg);
    /* a curve per panel, the run named in the legend and in each tooltip */
    cr_expect_eq(svg_count(svg, "<polyline class=\"curve\""), 7);
    cr_expect_eq(svg_count(svg, "<polyline class=\"raw\""), 0, "no smoothing: no faint curve");
    cr_expect(strstr(svg, "<g class=\"legend\">"), "the legend");
    cr_expect(strstr(svg, ">real</text>"), "the run's label");
    cr_expect_eq(svg_count(svg, "<title>real: "), 7);
    for (const char *const *t = (const char *const[]){">Reward<", ">Held-out accuracy<",
                                                       ">KL to the reference<", ">Entropy<",
                                                       ">Response length<", ">Staleness<",
                                                       ">Explorer-trainer mismatch<", NULL};
         *t; t++)
        cr_expect(strstr(svg, *t), "panel title %s", *t);
    cr_expect(strstr(svg, ">RL step</text>"));
    /* 4 RL steps; the evaluation at steps 0, 2 and 4 */
    cr_expect_eq(curve_points(svg, "real: reward_mean"), 4);
    cr_expect_eq(curve_points(svg, "real: eval/accuracy"), 3);
    cr_expect_eq(svg_count(svg, "<circle class=\"point\""), 6 * 4 + 3, "a dot per point");

    /* against time (the run wrote wall_seconds), smoothed; written to
     * plot.svg in the current directory by default */
    run(&r, "mkdir -p here && cd here && %s plot ../runs_plot/real --x time --smooth 3", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_expect_str_eq(r.out, "panels: " ALL_PANELS "\nplot.svg\n");
    read_svg("here/plot.svg");
    expect_plot_svg(svg);
    cr_expect(strstr(svg, ">seconds since the start</text>"));
    cr_expect_eq(svg_count(svg, "<polyline class=\"curve\""), 7);
    cr_expect_eq(svg_count(svg, "<polyline class=\"raw\""), 6, "eval/accuracy is never smoothed");
    cr_expect(strstr(svg, "mean of the last 3 points"));

    /* chosen keys, in the order given; a file for RUN_DIR */
    run(&r, "%s plot runs_plot/real/metrics.jsonl --keys 'grad_norm, loss,accuracy' "
            "--title 'Three <keys>' -o keys.svg", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_expect_str_eq(r.out, "panels: grad_norm, loss, accuracy\nkeys.svg\n");
    read_svg("keys.svg");
    expect_plot_svg(svg);
    cr_expect_eq(svg_count(svg, "<polyline class=\"curve\""), 3);
    cr_expect(strstr(svg, ">Three &lt;keys&gt;</text>"), "the title, escaped");
    cr_expect(strstr(svg, ">real</text>"), "named by the run directory");
    cr_expect(strstr(svg, ">grad_norm<") < strstr(svg, ">loss<"));
    cr_expect(strstr(svg, ">loss<") < strstr(svg, ">accuracy<"));
    run(&r, "ls -A . | grep -c tmp");
    cr_expect_str_eq(r.out, "0\n", "no temporary file stays");
    run(&r, "rm -rf here real.svg keys.svg");
}

/* A copy of run `from`'s metrics.jsonl at WORK/runs_plot/TO, each reward
 * raised by 0.5 and "kl" removed. */
static void changed_copy(const char *from, const char *to)
{
    char src[512], dst[512];
    snprintf(src, sizeof src, "%s/runs_plot/%s/metrics.jsonl", WORK, from);
    snprintf(dst, sizeof dst, "%s/runs_plot/%s", WORK, to);
    mkdir(dst, 0755);
    snprintf(dst, sizeof dst, "%s/runs_plot/%s/metrics.jsonl", WORK, to);
    json_t *lines = json_lines(src, NULL);
    FILE *f = fopen(dst, "w");
    cr_assert_not_null(f, "%s", dst);
    size_t i;
    json_t *o;
    json_array_foreach(lines, i, o) {
        json_t *reward = json_object_get(o, "reward_mean");
        if (reward)
            json_object_set_new(o, "reward_mean", json_real(json_number_value(reward) + 0.5));
        json_object_del(o, "kl");
        char *text = json_dumps(o, JSON_COMPACT);
        fprintf(f, "%s\n", text);
        free(text);
    }
    fclose(f);
    json_decref(lines);
}

Test(plot, two_runs_overlaid)
{
    result r;
    real_run("first");
    changed_copy("first", "second");
    run(&r, "%s plot runs_plot/first runs_plot/second -o two.svg", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_expect_str_eq(r.out, "panels: " ALL_PANELS "\ntwo.svg\n");
    cr_expect_str_eq(r.err, "", "a key one run lacks is no error");
    read_svg("two.svg");
    expect_plot_svg(svg);
    cr_expect(strstr(svg, ">first</text>") && strstr(svg, ">second</text>"), "both in the legend");
    cr_expect_eq(svg_count(svg, "<g class=\"legend\">"), 2);
    /* every panel has both runs but KL, which only the first has */
    cr_expect_eq(svg_count(svg, "<polyline class=\"curve\""), 2 * 7 - 1);
    cr_expect_eq(curve_points(svg, "first: kl"), 4);
    cr_expect_eq(curve_points(svg, "second: kl"), -1);
    cr_expect_eq(curve_points(svg, "second: reward_mean"), 4);
    cr_expect(strstr(svg, ">no data: second</text>"), "the KL panel says who is missing");
    /* each its own colour */
    cr_expect(strstr(svg, "stroke=\"#1f77b4\"") && strstr(svg, "stroke=\"#ff7f0e\""));

    /* names from --label, in the order of the runs; the rest by directory */
    run(&r, "%s plot runs_plot/first runs_plot/second --label 'seed <1>' -o two.svg", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    read_svg("two.svg");
    cr_expect(strstr(svg, ">seed &lt;1&gt;</text>") && strstr(svg, ">second</text>"));
    cr_expect_null(strstr(svg, ">first</text>"));

    /* two runs of the same name are told apart by their parents */
    run(&r, "mkdir -p runs_plot/a runs_plot/b && cp -r runs_plot/second runs_plot/a/seed && "
            "cp -r runs_plot/second runs_plot/b/seed && "
            "%s plot runs_plot/a/seed runs_plot/b/seed -o two.svg", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    read_svg("two.svg");
    cr_expect(strstr(svg, ">a/seed</text>") && strstr(svg, ">b/seed</text>"), "%.2000s", svg);
    run(&r, "rm -rf two.svg runs_plot/a runs_plot/b");
}

Test(plot, long_runs_are_thinned)
{
    result r;
    fake_run("long_run", 1000, 1, NULL);
    run(&r, "%s plot long_run -o long.svg --x time", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    read_svg("long.svg");
    expect_plot_svg(svg);
    cr_expect_eq(curve_points(svg, "long_run: reward_mean"), 400, "1000 steps, 400 points");
    cr_expect_eq(curve_points(svg, "long_run: eval/accuracy"), 101);
    cr_expect(strstr(svg, "drawn as 400 bucket means"));
    cr_expect(strstr(svg, ">seconds since the start</text>"), "250 s: seconds");
    cr_expect_eq(svg_count(svg, "<circle"), 0, "too many points for dots");
    cr_expect(strlen(svg) < 150000, "%zu bytes", strlen(svg));
    fake_run("long_run", 3000, 1, NULL);
    run(&r, "%s plot long_run -o long.svg --x time --smooth 50", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    read_svg("long.svg");
    cr_expect(strstr(svg, ">minutes since the start</text>"), "750 s: minutes");
    cr_expect_eq(curve_points(svg, "long_run: kl"), 400);
    run(&r, "rm -rf long_run long.svg");
}

/* ---- bad input ---------------------------------------------------------- */

/* Exit `code`, the message has each of `what` (NULL-ended), and no picture
 * or temporary file is left in the work directory. */
static void expect_bad(int code, const char *args, const char *const *what)
{
    result r;
    run(&r, "%s plot %s", TERN, args);
    cr_expect_eq(r.code, code, "%s: exit %d: %s", args, r.code, r.err);
    for (; *what; what++)
        cr_expect(strstr(r.err, *what), "%s: expected '%s' in: %s", args, *what, r.err);
    cr_expect_str_eq(r.out, "", "%s", args);
    cr_expect(!work_file_exists("plot.svg"), "%s left a picture", args);
    run(&r, "ls -A | grep -c tmp");
    cr_expect_str_eq(r.out, "0\n", "%s left a temporary file", args);
}
#define BAD(code, args, ...) expect_bad(code, args, (const char *const[]){__VA_ARGS__, NULL})

Test(plot, bad_input)
{
    result r;
    run(&r, "rm -rf bad_* plot.svg && mkdir bad_empty_dir");
    BAD(2, "bad_nowhere", "bad_nowhere: No such file or directory", "give a run directory");
    BAD(2, "bad_empty_dir", "bad_empty_dir/metrics.jsonl: No such file or directory",
        "is bad_empty_dir a run directory?");

    fake_run("bad_empty", 0, 0, NULL);
    write_file(WORK "/bad_empty/metrics.jsonl", "");
    BAD(2, "bad_empty", "bad_empty/metrics.jsonl: empty", "plot it once steps are written");
    write_file(WORK "/bad_empty/metrics.jsonl", "\n\n");
    BAD(2, "bad_empty", "bad_empty/metrics.jsonl: empty");
    write_file(WORK "/bad_empty/metrics.jsonl", "{\"stage\":\"sft\",\"step\":1,\"loss\":2}\n");
    BAD(2, "bad_empty", "bad_empty/metrics.jsonl: no RL step", "not reached RL");
    write_file(WORK "/bad_empty/metrics.jsonl", "{\"stage\":\"sft\",\"st");
    BAD(2, "bad_empty", "bad_empty/metrics.jsonl: no whole line: line 1 is cut short");

    /* a malformed line before the last: FILE:LINE (2 warm-up, the eval, 3 RL) */
    fake_run("bad_middle", 3, 0, "{\"stage\":\"rl\",\"step\":4 \"reward_mean\":1}\n"
                                 "{\"stage\":\"rl\",\"step\":5,\"reward_mean\":1}\n");
    BAD(2, "bad_middle", "bad_middle/metrics.jsonl:7: not valid JSON", "fix or delete the line");
    fake_run("bad_middle", 3, 0, "[1, 2]\n{\"stage\":\"rl\",\"step\":5}\n");
    BAD(2, "bad_middle", "bad_middle/metrics.jsonl:7: an array, not a JSON object");
    /* a key drawn that is not a number */
    fake_run("bad_middle", 3, 0, "{\"stage\":\"rl\",\"step\":4,\"kl\":\"small\"}\n");
    BAD(2, "bad_middle", "bad_middle/metrics.jsonl:7: \"kl\" is a string, not a number");
    BAD(2, "bad_middle --keys stage", "bad_middle/metrics.jsonl:3: \"stage\" is a string");
    fake_run("bad_middle", 3, 0, "{\"stage\":\"rl\",\"version\":4,\"kl\":1}\n");
    BAD(2, "bad_middle", "bad_middle/metrics.jsonl:7: an RL line without a numeric \"step\"");

    /* --x time on a file without wall_seconds: the file and line, the way out */
    fake_run("bad_old", 3, 0, NULL);
    BAD(2, "bad_old --x time", "bad_old/metrics.jsonl:3: no \"wall_seconds\"", "--x step");
    /* keys no run has */
    BAD(2, "bad_old --keys reward_mean,rewrd", "no run has a number for 'rewrd'",
        "the keys they have: entropy, eval/accuracy, grad_norm, kl, mismatch_kl,");
    fake_run("bad_old", 3, 0, NULL);
    write_file(WORK "/bad_old/metrics.jsonl", "{\"stage\":\"rl\",\"step\":0,\"other\":1}\n");
    BAD(2, "bad_old", "nothing to draw: no run has a number for reward_mean, eval/accuracy",
        "from those they have: other, step");

    /* bad usage */
    BAD(2, "", "plot needs RUN_DIR");
    BAD(2, "bad_old --x steps", "--x needs step or time (got 'steps')");
    BAD(2, "bad_old --smooth 0", "--smooth needs a whole number from 1 to 100000");
    BAD(2, "bad_old --label a --label b", "--label given 2 times for 1 run");
    BAD(2, "bad_old --label ''", "--label needs a name");
    BAD(2, "bad_old --keys 'kl,,entropy'", "--keys 'kl,,entropy' has an empty name");
    BAD(2, "bad_old -o ''", "-o needs a file name");
    BAD(2, "bad_old -o -", "-o - (standard output) is not supported");
    BAD(2, "bad_old --colour red", "unknown option '--colour'");

    /* the output cannot be written: exit 1, nothing left */
    fake_run("bad_ok", 3, 0, NULL);
    BAD(1, "bad_ok -o bad_ok/no/such/dir/p.svg",
        "bad_ok/no/such/dir/p.svg: cannot write: No such file or directory");
    run(&r, "rm -rf bad_*");
}

/* Lines a run killed mid-write leaves, and values that are no numbers. */
Test(plot, damaged_but_drawable)
{
    result r;
    /* the last line cut short: a warning naming it, the rest drawn */
    fake_run("cut", 4, 1, "{\"stage\":\"rl\",\"step\":5,\"wall_seconds\":2.0,\"reward_m");
    run(&r, "%s plot cut -o cut.svg", TERN);
    cr_expect_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.err, "warning: cut/metrics.jsonl:8: the last line is cut short"), "%s",
              r.err);
    cr_expect_str_eq(r.out, "panels: " ALL_PANELS "\ncut.svg\n");
    read_svg("cut.svg");
    expect_plot_svg(svg);
    cr_expect_eq(curve_points(svg, "cut: reward_mean"), 4);
    /* a blank line after it changes nothing */
    fake_run("cut", 4, 1, "{\"stage\":\"rl\",\"step\":5,\"wall_se\n\n");
    run(&r, "%s plot cut -o cut.svg", TERN);
    cr_expect_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.err, "cut/metrics.jsonl:8: the last line is cut short"), "%s", r.err);

    /* NaN and infinities (as Python writes them) and null: skipped, counted */
    fake_run("nonfinite", 4, 1,
             "{\"stage\":\"rl\",\"step\":5,\"wall_seconds\":2,\"reward_mean\":NaN,"
             "\"kl\":-Infinity,\"entropy\":null,\"note\":\"NaN stays a string\"}\n"
             "{\"stage\":\"rl\",\"step\":6,\"wall_seconds\":2.2,\"reward_mean\":0.9,\"kl\":inf}\n");
    run(&r, "%s plot nonfinite -o nonfinite.svg --x time", TERN);
    cr_expect_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.err, "warning: nonfinite/metrics.jsonl:8: skipped 4 values that are NaN, "
                            "infinite or null"), "%s", r.err);
    read_svg("nonfinite.svg");
    expect_plot_svg(svg);
    cr_expect_eq(curve_points(svg, "nonfinite: reward_mean"), 5, "steps 1-4 and 6");
    cr_expect_eq(curve_points(svg, "nonfinite: kl"), 4);
    cr_expect_null(strstr(svg, "nan"));
    cr_expect_null(strstr(svg, "inf"));
    run(&r, "rm -rf cut nonfinite cut.svg nonfinite.svg");
}

/* ---- PNG ---------------------------------------------------------------- */

static int is_png(const char *rel)
{
    char path[512], head[9] = {0};
    snprintf(path, sizeof path, "%s/%s", WORK, rel);
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    size_t n = fread(head, 1, 8, f);
    fclose(f);
    return n == 8 && memcmp(head, "\x89PNG\r\n\x1a\n", 8) == 0;
}

Test(plot, png)
{
    result r;
    fake_run("png_run", 6, 0, NULL);
    run(&r, "rm -rf png_out && mkdir png_out");

    /* rsvg-convert missing: exit 1, how to install it, the SVG kept */
    run(&r, "PATH=/nonexistent %s plot png_run --png -o png_out/a.svg", TERN);
    cr_expect_eq(r.code, 1, "%s", r.err);
    cr_expect(strstr(r.err, "cannot make png_out/a.png: rsvg-convert is not installed"), "%s",
              r.err);
    cr_expect(strstr(r.err, "apt-get install librsvg2-bin"), "%s", r.err);
    cr_expect(strstr(r.err, "the SVG, which is written: png_out/a.svg"), "%s", r.err);
    cr_expect_str_eq(r.out, "panels: " ALL_PANELS "\npng_out/a.svg\n");
    read_svg("png_out/a.svg");
    expect_plot_svg(svg);
    cr_expect(!work_file_exists("png_out/a.png"));

    /* rsvg-convert failing: exit 1, no PNG, no temporary file */
    run(&r, "mkdir -p png_bin && printf '#!/bin/sh\\necho broken >&2\\nexit 3\\n' > "
            "png_bin/rsvg-convert && chmod +x png_bin/rsvg-convert && "
            "PATH=$PWD/png_bin:$PATH %s plot png_run -o png_out/b.png", TERN);
    cr_expect_eq(r.code, 1, "%s", r.err);
    cr_expect(strstr(r.err, "broken\n"), "its own message: %s", r.err);
    cr_expect(strstr(r.err, "cannot make png_out/b.png: rsvg-convert exited with 3"), "%s",
              r.err);
    cr_expect(work_file_exists("png_out/b.svg") && !work_file_exists("png_out/b.png"));
    run(&r, "ls png_out");
    cr_expect_str_eq(r.out, "a.svg\nb.svg\n", "nothing else left");

    /* the real one, when installed: an actual PNG beside the SVG */
    run(&r, "command -v rsvg-convert");
    if (r.code != 0) {
        /* not installed here: the plain PATH gives the missing-tool message */
        run(&r, "%s plot png_run -o png_out/c.png", TERN);
        cr_expect_eq(r.code, 1, "%s", r.err);
        cr_expect(strstr(r.err, "apt-get install librsvg2-bin"), "%s", r.err);
        cr_log_warn("rsvg-convert is not installed (apt-get install librsvg2-bin): the PNG "
                    "itself was not checked");
    } else {
        run(&r, "%s plot png_run -o png_out/c.png", TERN);
        cr_assert_eq(r.code, 0, "%s", r.err);
        cr_expect_str_eq(r.out, "panels: " ALL_PANELS "\npng_out/c.svg\npng_out/c.png\n");
        cr_expect(is_png("png_out/c.png"), "the PNG signature");
        read_svg("png_out/c.svg");
        expect_plot_svg(svg);
        run(&r, "%s plot png_run --png -o png_out/d.svg", TERN);
        cr_expect_eq(r.code, 0, "%s", r.err);
        cr_expect(is_png("png_out/d.png"));
    }
    run(&r, "rm -rf png_run png_out png_bin");
}

Test(plot, help)
{
    result r;
    run(&r, "%s help plot", TERN);
    cr_expect_eq(r.code, 0);
    cr_expect(strstr(r.out, "usage: tern plot RUN_DIR... [-o FILE] [--png] [--x step|time]"),
              "%s", r.out);
    cr_expect(strstr(r.out, "librsvg2-bin"), "%s", r.out);
    run(&r, "%s plot --help", TERN);
    cr_expect_eq(r.code, 0);
    cr_expect(strstr(r.out, "--smooth N"), "%s", r.out);
    run(&r, "%s help", TERN);
    cr_expect(strstr(r.out, "  tern plot RUN_DIR"), "the overview lists it: %s", r.out);
}
