/* test_timeline.c: `tern timeline` end to end, on synthetic traces written as
 * core/src/rundir/trace.c writes them: one explorer syncing weights in memory, two
 * explorers syncing through checkpoints; what the SVG holds, the window
 * options, -o, and every bad input (exit 2, a message naming the file, no
 * output left behind). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "command.h"
#include "svg_checks.h"

#define TERN TERN_TEST_BIN
#define WORK TERN_TEST_WORK_DIR

/* ---- synthetic traces --------------------------------------------------- */

typedef struct scenario {
    int explorers;       /* lanes "explorer 0", "explorer 1", ... */
    int batches;         /* rollouts, one batch each */
    int per_train;       /* batches per train step */
    int skip_last;       /* the last batch is skipped as stale, not trained */
    int surplus_last;    /* ... or dropped as surplus of dynamic sampling ("surplus": true) */
    const char *method;  /* sync method */
    double sync_s;       /* a sync's duration */
    /* what was written */
    int n_train, n_sync, n_put, n_publish, n_skip, n_wait;
    double train_end[64];
} scenario;

/* A Chrome trace with lanes master (1), buffer (4), trainer (5) and explorers
 * (10 + e), with the events the timeline draws and some it ignores. */
static char *make_trace(scenario *s)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_not_null(f);
    fprintf(f, "{\"traceEvents\": [\n");
    fprintf(f, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,"
               "\"args\":{\"name\":\"master\"}},\n");
    for (int e = 0; e < s->explorers; e++)
        fprintf(f, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,"
                   "\"args\":{\"name\":\"explorer %d\"}},\n", 10 + e, e);
    fprintf(f, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":4,"
               "\"args\":{\"name\":\"buffer\"}},\n");
    fprintf(f, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":5,"
               "\"args\":{\"name\":\"trainer\"}},\n");
    fprintf(f, "{\"name\":\"start_plugin\",\"ph\":\"X\",\"ts\":10.0,\"dur\":300000.0,"
               "\"pid\":1,\"tid\":1,\"args\":{\"plugin\":\"fifo\"}},\n");

    double ex_free[8] = {0}, put[64];
    cr_assert_leq(s->batches, 64);
    for (int b = 0; b < s->batches; b++) {
        int e = b % s->explorers;
        double t = ex_free[e] + 0.4 + (b < s->explorers ? 0.9 * e : 0);
        if (b >= s->explorers) {
            fprintf(f, "{\"name\":\"wait\",\"ph\":\"X\",\"ts\":%.1f,\"dur\":%.1f,\"pid\":1,"
                       "\"tid\":%d,\"args\":{\"for\":\"weights version %d\",\"explorer\":%d}},\n",
                    t * 1e6, 0.4e6, 10 + e, b / s->explorers, e);
            s->n_wait++;
            t += 0.4;
        }
        fprintf(f, "{\"name\":\"sync\",\"ph\":\"X\",\"ts\":%.1f,\"dur\":%.1f,\"pid\":1,"
                   "\"tid\":%d,\"args\":{\"method\":\"%s\",\"version\":%d}},\n",
                t * 1e6, s->sync_s * 1e6, 10 + e, s->method, b / s->explorers);
        s->n_sync++;
        t += s->sync_s;
        double dur = 4.0 + 0.3 * (b % 3);
        fprintf(f, "{\"name\":\"rollout\",\"ph\":\"X\",\"ts\":%.1f,\"dur\":%.1f,\"pid\":1,"
                   "\"tid\":%d,\"args\":{\"explorer\":%d,\"batch\":%d,\"version\":%d}},\n",
                t * 1e6, dur * 1e6, 10 + e, e, b, b / s->explorers);
        put[b] = t + dur + 0.05;
        fprintf(f, "{\"name\":\"put\",\"ph\":\"i\",\"s\":\"t\",\"ts\":%.1f,\"pid\":1,\"tid\":4,"
                   "\"args\":{\"batch\":%d}},\n", put[b] * 1e6, b);
        s->n_put++;
        fprintf(f, "{\"name\":\"reward\",\"ph\":\"X\",\"ts\":%.1f,\"dur\":%.1f,\"pid\":1,"
                   "\"tid\":1,\"args\":{\"batch\":%d}},\n", (t + dur) * 1e6, 0.03e6, b);
        ex_free[e] = t + dur;
    }

    int trained = s->skip_last ? s->batches - 1 : s->batches;
    double tr_free = 0.5;
    for (int g = 0; g * s->per_train < trained; g++) {
        int first = g * s->per_train, last = first + s->per_train - 1;
        if (last >= trained)
            last = trained - 1;
        double start = put[last] > tr_free ? put[last] : tr_free;
        if (start > tr_free) {
            fprintf(f, "{\"name\":\"wait\",\"ph\":\"X\",\"ts\":%.1f,\"dur\":%.1f,\"pid\":1,"
                       "\"tid\":5,\"args\":{\"for\":\"batch %d\"}},\n",
                    tr_free * 1e6, (start - tr_free) * 1e6, last);
            s->n_wait++;
        }
        fprintf(f, "{\"name\":\"train\",\"ph\":\"X\",\"ts\":%.1f,\"dur\":%.1f,\"pid\":1,"
                   "\"tid\":5,\"args\":{\"step\":%d,\"batches\":[", start * 1e6, 2.5e6, g);
        for (int b = first; b <= last; b++)
            fprintf(f, "%s%d", b > first ? "," : "", b);
        fprintf(f, "],\"versions\":[%d]}},\n", g);
        /* nested spans the timeline ignores */
        fprintf(f, "{\"name\":\"score\",\"ph\":\"X\",\"ts\":%.1f,\"dur\":%.1f,\"pid\":1,"
                   "\"tid\":5},\n", (start + 0.1) * 1e6, 0.5e6);
        fprintf(f, "{\"name\":\"backward\",\"ph\":\"X\",\"ts\":%.1f,\"dur\":%.1f,\"pid\":1,"
                   "\"tid\":5},\n", (start + 0.7) * 1e6, 1.2e6);
        s->train_end[s->n_train++] = start + 2.5;
        fprintf(f, "{\"name\":\"sync\",\"ph\":\"X\",\"ts\":%.1f,\"dur\":%.1f,\"pid\":1,"
                   "\"tid\":5,\"args\":{\"method\":\"%s\",\"version\":%d}},\n",
                (start + 2.5) * 1e6, s->sync_s * 1e6, s->method, g + 1);
        s->n_sync++;
        tr_free = start + 2.5 + s->sync_s;
        fprintf(f, "{\"name\":\"publish\",\"ph\":\"i\",\"s\":\"t\",\"ts\":%.1f,\"pid\":1,"
                   "\"tid\":5,\"args\":{\"version\":%d}},\n", tr_free * 1e6, g + 1);
        s->n_publish++;
    }
    if (s->skip_last) {
        fprintf(f, "{\"name\":\"skip\",\"ph\":\"i\",\"s\":\"t\",\"ts\":%.1f,\"pid\":1,"
                   "\"tid\":%d,\"args\":{\"batch\":%d,\"version\":0%s}},\n",
                (tr_free + 0.2) * 1e6, s->surplus_last ? 1 : 5, s->batches - 1,
                s->surplus_last ? ",\"group\":3,\"step\":5,\"surplus\":true" : "");
        s->n_skip++;
    }
    fprintf(f, "{\"name\":\"evaluate\",\"ph\":\"X\",\"ts\":%.1f,\"dur\":%.1f,\"pid\":1,"
               "\"tid\":1}\n], \"displayTimeUnit\":\"ms\"}\n", (tr_free + 0.5) * 1e6, 1e6);
    fclose(f);
    return text;
}

/* One explorer, memory syncs, a batch per step. */
static scenario one_explorer(void)
{
    return (scenario){.explorers = 1, .batches = 6, .per_train = 1, .method = "memory",
                      .sync_s = 0.05};
}

/* Two explorers, checkpoint syncs, two batches per step, the last batch skipped. */
static scenario two_explorers(void)
{
    return (scenario){.explorers = 2, .batches = 9, .per_train = 2, .skip_last = 1,
                      .method = "checkpoint", .sync_s = 0.3};
}

/* A fresh run directory WORK/dir with the scenario's trace.json. */
static void make_run(const char *dir, scenario *s)
{
    result r;
    char path[512];
    run(&r, "rm -rf %s && mkdir -p %s", dir, dir);
    cr_assert_eq(r.code, 0);
    char *text = make_trace(s);
    snprintf(path, sizeof path, "%s/%s/trace.json", WORK, dir);
    write_file(path, text);
    free(text);
}

static char svg[1 << 20];

static void read_svg(const char *rel)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", WORK, rel);
    slurp(path, svg, sizeof svg);
    cr_assert(strlen(svg) < sizeof svg - 1, "%s: too big for the test buffer", path);
}

/* Box and marker labels (class "label") whose text is exactly `text`. */
static int count_labels(const char *svg_text, const char *text)
{
    int n = 0;
    size_t len = strlen(text);
    for (const char *p = strstr(svg_text, "<text class=\"label\""); p;
         p = strstr(p + 1, "<text class=\"label\"")) {
        const char *body = strchr(p, '>');
        n += body && strncmp(body + 1, text, len) == 0 && strncmp(body + 1 + len, "</text>", 7) == 0;
    }
    return n;
}


/* ---- the picture -------------------------------------------------------- */

Test(timeline, one_explorer_memory)
{
    result r;
    scenario s = one_explorer();
    make_run("tl_one", &s);
    write_file(WORK "/tl_one/config.cfg", "run = { name = \"one\"; };\n"
                                          "sync = { plugin = \"synchronous\"; };\n");
    run(&r, "%s timeline tl_one", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_expect_str_eq(r.out, "tl_one/timeline.svg\n");
    cr_expect_str_eq(r.err, "");
    read_svg("tl_one/timeline.svg");
    expect_whole_svg(svg);

    cr_expect(strstr(svg, ">tl_one \xc2\xb7 sync: synchronous</text>"), "the title");
    cr_expect(strstr(svg, ">Explorer</text>"), "one explorer: no number");
    cr_expect_null(strstr(svg, ">Explorer 1</text>"));
    cr_expect(strstr(svg, ">Buffer</text>"));
    cr_expect(strstr(svg, ">Trainer</text>"));
    cr_expect(strstr(svg, ">time (s)</text>"));

    /* a yellow box per rollout, a green box per train step (and one of each
     * in the legend) */
    cr_expect_eq(svg_count(svg, "<rect class=\"rollout\""), s.batches);
    cr_expect_eq(svg_count(svg, "fill=\"#f6d55c\""), s.batches + 1);
    cr_expect_eq(svg_count(svg, "<rect class=\"train\""), s.n_train);
    cr_expect_eq(svg_count(svg, "fill=\"#7cc47c\""), s.n_train + 1);
    cr_expect_eq(svg_count(svg, "<rect class=\"sync-memory\""), s.n_sync);
    cr_expect_eq(svg_count(svg, "<rect class=\"sync-checkpoint\""), 0);
    cr_expect_eq(svg_count(svg, "fill=\"#8e6bbf\""), s.n_sync + 1);
    cr_expect_eq(svg_count(svg, "<rect class=\"put\""), s.n_put);
    cr_expect_eq(svg_count(svg, "<rect class=\"in-buffer\""), s.n_put);
    cr_expect_eq(svg_count(svg, "<path class=\"publish\""), s.n_publish);
    cr_expect_eq(svg_count(svg, "<path class=\"skip\""), 0);
    cr_expect_eq(svg_count(svg, "<rect class=\"wait\""), s.n_wait);
    cr_expect(svg_count(svg, "fill=\"#cfe8f7\"") >= 1, "the buffer lane");
    /* batch numbers: in its rollout box, its train box and its put marker */
    for (int b = 0; b < s.batches; b++) {
        char label[32];
        snprintf(label, sizeof label, "%d", b);
        cr_expect_eq(count_labels(svg, label), 3, "batch %d: %d labels", b,
                     count_labels(svg, label));
    }
    /* the ignored names are not drawn */
    cr_expect_null(strstr(svg, "score"));
    cr_expect_null(strstr(svg, "backward"));
    cr_expect_null(strstr(svg, "evaluate"));
    /* the legend */
    cr_expect(strstr(svg, ">Rollout</text>"));
    cr_expect(strstr(svg, ">Train</text>"));
    cr_expect(strstr(svg, ">Sync. weight (memory/MPI/NCCL)</text>"));
    cr_expect(strstr(svg, ">Sync. weight (checkpoint)</text>"));
    cr_expect(strstr(svg, ">Wait</text>"));
    /* no temporary file stays */
    run(&r, "ls -A tl_one");
    cr_expect_str_eq(r.out, "config.cfg\ntimeline.svg\ntrace.json\n");
    run(&r, "rm -rf tl_one");
}

/* Many lanes (a trace with thousands of threads named, most of them not
 * drawn) and a thread named twice: the first name holds, as before the
 * lanes were sorted for their look-up. */
Test(timeline, many_lanes_and_a_lane_named_twice)
{
    result r;
    run(&r, "rm -rf tl_many && mkdir tl_many");
    FILE *f = fopen(WORK "/tl_many/trace.json", "w");
    cr_assert_not_null(f);
    fprintf(f, "{\"traceEvents\": [\n");
    for (int i = 0; i < 5000; i++)
        fprintf(f, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,"
                   "\"args\":{\"name\":\"worker %d\"}},\n", 1000 + i, i);
    fprintf(f, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":7,"
               "\"args\":{\"name\":\"explorer 2\"}},\n"
               "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":7,"
               "\"args\":{\"name\":\"buffer\"}},\n"
               "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":5,"
               "\"args\":{\"name\":\"trainer\"}},\n"
               "{\"name\":\"wait\",\"ph\":\"X\",\"ts\":0,\"dur\":1e6,\"pid\":1,"
               "\"tid\":7,\"args\":{\"for\":\"weights\"}},\n"
               "{\"name\":\"train\",\"ph\":\"X\",\"ts\":1e6,\"dur\":1e6,\"pid\":1,"
               "\"tid\":5,\"args\":{\"step\":0,\"batches\":[0]}}\n]}\n");
    fclose(f);
    run(&r, "%s timeline tl_many/", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    read_svg("tl_many/timeline.svg");
    cr_expect(strstr(svg, ">Explorer</text>"), "tid 7 is explorer 2, its first name, not the "
              "buffer: the one explorer lane");
    cr_expect_eq(svg_count(svg, "<rect class=\"wait\""), 1, "its wait, on its lane");
    cr_expect_eq(svg_count(svg, "<rect class=\"train\""), 1);
    run(&r, "rm -rf tl_many");
}

/* A long run is drawn from its start, 30 train steps, and the picture says
 * so; --steps draws them all. */
Test(timeline, a_long_run_is_drawn_readably_by_default)
{
    result r;
    scenario s = one_explorer();
    s.batches = 40;
    make_run("tl_long", &s);
    run(&r, "%s timeline tl_long/", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    read_svg("tl_long/timeline.svg");
    expect_whole_svg(svg);
    cr_expect_eq(svg_count(svg, "<rect class=\"train\""), 30);
    cr_expect(strstr(svg, "the first 30 of 40 train steps (--steps N, --from S and --to S draw "
                          "others)"), "the picture says what it shows");
    run(&r, "%s timeline tl_long/ --steps 40", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    read_svg("tl_long/timeline.svg");
    cr_expect_eq(svg_count(svg, "<rect class=\"train\""), 40);
    cr_expect_null(strstr(svg, "the first 30"));
    run(&r, "rm -rf tl_long");
}

/* A group dropped as surplus (dynamic sampling in a synchronous run: the
 * master's skip with "surplus": true) has its own mark, a grey ring, not the
 * red cross of a batch too stale to train. */
Test(timeline, a_surplus_group_is_not_drawn_as_stale)
{
    result r;
    scenario s = two_explorers();
    s.surplus_last = 1;
    make_run("tl_surplus", &s);
    run(&r, "%s timeline tl_surplus/", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    read_svg("tl_surplus/timeline.svg");
    expect_whole_svg(svg);
    cr_expect_eq(svg_count(svg, "<path class=\"skip\""), 0);
    cr_expect_eq(svg_count(svg, "<circle class=\"surplus\""), 1);
    cr_expect(strstr(svg, "drop a surplus group of batch 8 (version 0): its step was full"),
              "its tooltip");
    cr_expect(strstr(svg, ">Dropped (surplus of dynamic sampling)</text>"), "the legend");
    run(&r, "rm -rf tl_surplus");
}

Test(timeline, two_explorers_checkpoint)
{
    result r;
    scenario s = two_explorers();
    make_run("tl_two", &s);
    write_file(WORK "/tl_two/summary.json", "{\"name\":\"two\",\"sync\":{\"plugin\":\"ckpt\"}}");
    run(&r, "%s timeline tl_two/", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_expect_str_eq(r.out, "tl_two/timeline.svg\n");
    read_svg("tl_two/timeline.svg");
    expect_whole_svg(svg);

    cr_expect(strstr(svg, ">tl_two \xc2\xb7 sync: ckpt</text>"), "the title");
    cr_expect(strstr(svg, ">Explorer 1</text>"));
    cr_expect(strstr(svg, ">Explorer 2</text>"));
    cr_expect_null(strstr(svg, ">Explorer</text>"));
    cr_expect(strstr(svg, ">Buffer</text>"));
    cr_expect(strstr(svg, ">Trainer</text>"));
    /* lanes top to bottom: explorers, buffer, trainer */
    cr_expect(strstr(svg, ">Explorer 1<") < strstr(svg, ">Explorer 2<"));
    cr_expect(strstr(svg, ">Explorer 2<") < strstr(svg, ">Buffer<"));
    cr_expect(strstr(svg, ">Buffer<") < strstr(svg, ">Trainer<"));

    cr_expect_eq(svg_count(svg, "<rect class=\"rollout\""), s.batches);
    cr_expect_eq(svg_count(svg, "<rect class=\"train\""), s.n_train);
    cr_expect_eq(s.n_train, 4);
    cr_expect_eq(svg_count(svg, "<rect class=\"sync-checkpoint\""), s.n_sync);
    cr_expect_eq(svg_count(svg, "fill=\"#d9534f\""), s.n_sync + 1, "red: the syncs and legend");
    cr_expect_eq(svg_count(svg, "<rect class=\"sync-memory\""), 0);
    cr_expect_eq(svg_count(svg, "<path class=\"skip\""), 1);
    cr_expect(strstr(svg, "skip batch 8 (version 0"), "the skip's tooltip");
    /* train boxes carry both batches */
    cr_expect_eq(count_labels(svg, "0,1"), 1);
    cr_expect_eq(count_labels(svg, "6,7"), 1);
    cr_expect_eq(count_labels(svg, "8"), 2, "the skipped batch: its rollout and put");
    run(&r, "rm -rf tl_two");
}

Test(timeline, steps_and_window)
{
    result r;
    scenario s = one_explorer();
    make_run("tl_win", &s);
    run(&r, "%s timeline tl_win --steps 2 -o tl_win/two.svg", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_expect_str_eq(r.out, "tl_win/two.svg\n");
    cr_expect(!work_file_exists("tl_win/timeline.svg"), "-o replaces the default");
    read_svg("tl_win/two.svg");
    expect_whole_svg(svg);
    cr_expect_eq(svg_count(svg, "<rect class=\"train\""), 2);
    int rollouts = svg_count(svg, "<rect class=\"rollout\"");
    cr_expect(rollouts >= 2 && rollouts < s.batches, "%d rollouts", rollouts);
    cr_expect_null(strstr(svg, "rollout of batch 5 "), "batch 5 is past step 1");
    cr_expect_eq(count_labels(svg, "5"), 0);

    /* more steps than the run has: all of it */
    run(&r, "%s timeline tl_win --steps=100 -o tl_win/all.svg", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    read_svg("tl_win/all.svg");
    cr_expect_eq(svg_count(svg, "<rect class=\"train\""), s.n_train);

    /* a window: only what overlaps it */
    char cmd[256];
    snprintf(cmd, sizeof cmd, "--from %.3f --to %.3f", s.train_end[1] + 0.01,
             s.train_end[3] - 0.01);
    run(&r, "%s timeline tl_win %s --width 800 -o tl_win/win.svg", TERN, cmd);
    cr_assert_eq(r.code, 0, "%s", r.err);
    read_svg("tl_win/win.svg");
    expect_whole_svg(svg);
    cr_expect(strstr(svg, "width=\"800\""));
    cr_expect_eq(svg_count(svg, "<rect class=\"train\""), 2, "steps 2 and 3");

    /* -o -: the picture on stdout, nothing written */
    run(&r, "%s timeline tl_win --steps 1 -o - | head -c 4", TERN);
    cr_expect_eq(r.code, 0, "%s", r.err);
    cr_expect_str_eq(r.out, "<svg");
    run(&r, "%s timeline tl_win -o - > tl_win/stdout.svg", TERN);
    cr_expect_eq(r.code, 0, "%s", r.err);
    read_svg("tl_win/stdout.svg");
    expect_whole_svg(svg);
    cr_expect(!work_file_exists("tl_win/timeline.svg"));

    /* RUN_DIR may be the trace itself: the picture goes beside it */
    run(&r, "%s timeline tl_win/trace.json", TERN);
    cr_expect_eq(r.code, 0, "%s", r.err);
    cr_expect_str_eq(r.out, "tl_win/timeline.svg\n");
    cr_expect(work_file_exists("tl_win/timeline.svg"));
    run(&r, "cd tl_win && %s timeline trace.json -o x.svg && ls -A", TERN);
    cr_expect_eq(r.code, 0, "%s", r.err);
    cr_expect_str_eq(r.out, "x.svg\n" /* the path printed, then ls */
                     "all.svg\nstdout.svg\ntimeline.svg\ntrace.json\ntwo.svg\nwin.svg\nx.svg\n");
    run(&r, "rm -rf tl_win");
}

/* ---- bad input ---------------------------------------------------------- */

/* Exit 2, the message names `what`, and nothing is written in tl_bad. */
static void expect_bad(const char *args, const char *what)
{
    result r;
    run(&r, "%s timeline %s", TERN, args);
    cr_expect_eq(r.code, 2, "%s: %s", args, r.err);
    cr_expect(strstr(r.err, what), "%s: expected '%s' in: %s", args, what, r.err);
    cr_expect_str_eq(r.out, "", "%s", args);
    cr_expect(!work_file_exists("tl_bad/timeline.svg"), "%s left a picture", args);
    run(&r, "ls -A tl_bad | grep -c tmp");
    cr_expect_str_eq(r.out, "0\n", "%s left a temporary file", args);
}

Test(timeline, bad_input)
{
    result r;
    run(&r, "rm -rf tl_bad && mkdir tl_bad");
    expect_bad("tl_nowhere", "tl_nowhere: No such file or directory");
    expect_bad("tl_bad", "tl_bad/trace.json: no such file; `tern run` writes it");

    write_file(WORK "/tl_bad/trace.json", "{\"traceEvents\": [ {\"name\":\"rollout\",");
    expect_bad("tl_bad", "tl_bad/trace.json:1:");
    expect_bad("tl_bad", "not valid JSON");
    write_file(WORK "/tl_bad/trace.json", "");
    expect_bad("tl_bad", "tl_bad/trace.json:");

    write_file(WORK "/tl_bad/trace.json", "{\"events\": []}");
    expect_bad("tl_bad", "tl_bad/trace.json: no \"traceEvents\" array");
    write_file(WORK "/tl_bad/trace.json", "[{\"name\":\"rollout\"}]");
    expect_bad("tl_bad", "tl_bad/trace.json: no \"traceEvents\" array");
    write_file(WORK "/tl_bad/trace.json", "{\"traceEvents\": {}}");
    expect_bad("tl_bad", "no \"traceEvents\" array");
    write_file(WORK "/tl_bad/trace.json", "{\"traceEvents\": [3]}");
    expect_bad("tl_bad", "tl_bad/trace.json: event 0 is not an object");
    write_file(WORK "/tl_bad/trace.json",
               "{\"traceEvents\": [{\"name\":\"rollout\",\"ph\":\"X\",\"ts\":\"soon\","
               "\"dur\":1,\"tid\":3}]}");
    expect_bad("tl_bad", "tl_bad/trace.json: event 0 (\"rollout\") has no numeric \"ts\"");

    /* a trace with nothing the timeline draws */
    write_file(WORK "/tl_bad/trace.json",
               "{\"traceEvents\": [{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,"
               "\"args\":{\"name\":\"master\"}},{\"name\":\"sft_step\",\"ph\":\"X\",\"ts\":5,"
               "\"dur\":10,\"pid\":1,\"tid\":5}], \"displayTimeUnit\":\"ms\"}");
    expect_bad("tl_bad", "tl_bad/trace.json: nothing to draw");
    write_file(WORK "/tl_bad/trace.json", "{\"traceEvents\": []}");
    expect_bad("tl_bad", "tl_bad/trace.json: nothing to draw");
    expect_bad("tl_bad/trace.json", "tl_bad/trace.json: nothing to draw");

    /* a good trace, bad windows */
    scenario s = one_explorer();
    char *text = make_trace(&s);
    write_file(WORK "/tl_bad/trace.json", text);
    free(text);
    expect_bad("tl_bad --from 1000", "tl_bad/trace.json: nothing to draw from 1000 s on");
    expect_bad("tl_bad --to 0.001", "tl_bad/trace.json: nothing to draw before 0.001 s");
    expect_bad("tl_bad --from 0.0001 --to 0.001", "tl_bad/trace.json: nothing to draw between");
    expect_bad("tl_bad --from 5 --to 1", "--from (5) must be less than --to (1)");
    expect_bad("tl_bad --steps 2 --to 9", "--steps and --to");

    /* bad options */
    expect_bad("tl_bad --steps 0", "--steps needs a whole number");
    expect_bad("tl_bad --steps two", "--steps needs a whole number");
    expect_bad("tl_bad --width 10", "--width needs a whole number from 400 to 20000");
    expect_bad("tl_bad --width", "--width needs a value");
    expect_bad("tl_bad --from -3", "--from needs a number of seconds >= 0");
    expect_bad("tl_bad --to x", "--to needs a number of seconds");
    expect_bad("tl_bad --colour red", "unknown option '--colour'");
    expect_bad("tl_bad other", "unexpected argument 'other'");
    expect_bad("", "timeline needs RUN_DIR");
    expect_bad("tl_bad -o", "-o needs a value");
    expect_bad("tl_bad -o ''", "-o needs a file name");

    /* the output cannot be written: exit 1, nothing left */
    run(&r, "%s timeline tl_bad -o tl_bad/no/such/dir/t.svg", TERN);
    cr_expect_eq(r.code, 1, "%s", r.err);
    cr_expect(strstr(r.err, "tl_bad/no/such/dir/t.svg: cannot write: No such file or directory"),
              "%s", r.err);
    cr_expect_str_eq(r.out, "");
    run(&r, "mkdir -p tl_bad/adir/x.svg && %s timeline tl_bad -o tl_bad/adir/x.svg; "
        "echo rc=$?; ls -A tl_bad/adir", TERN);
    cr_expect(strstr(r.out, "rc=1\nx.svg\n"), "%s", r.out);
    cr_expect(strstr(r.err, "tl_bad/adir/x.svg: cannot write:"), "%s", r.err);
    run(&r, "ls -A tl_bad");
    cr_expect_str_eq(r.out, "adir\ntrace.json\n");
    run(&r, "rm -rf tl_bad");
}

Test(timeline, help)
{
    result r;
    run(&r, "%s help timeline", TERN);
    cr_expect_eq(r.code, 0);
    cr_expect(strstr(r.out, "usage: tern timeline RUN_DIR [-o FILE] [--steps N]"), "%s", r.out);
    run(&r, "%s timeline --help", TERN);
    cr_expect_eq(r.code, 0);
    cr_expect(strstr(r.out, "--width PX"), "%s", r.out);
    run(&r, "%s help", TERN);
    cr_expect(strstr(r.out, "  tern timeline RUN_DIR"), "the overview lists it: %s", r.out);
}

/* Traces with little in them still give a whole picture. */
Test(timeline, sparse_traces)
{
    result r;
    run(&r, "rm -rf tl_sparse && mkdir tl_sparse");
    /* one instant, no explorer lane: room is made around it */
    write_file(WORK "/tl_sparse/trace.json",
               "{\"traceEvents\":[{\"name\":\"put\",\"ph\":\"i\",\"s\":\"t\",\"ts\":5,\"pid\":1,"
               "\"tid\":4,\"args\":{\"batch\":1}}]}");
    run(&r, "%s timeline tl_sparse", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    read_svg("tl_sparse/timeline.svg");
    expect_whole_svg(svg);
    cr_expect_null(strstr(svg, ">Explorer"));
    cr_expect(strstr(svg, ">Buffer</text>"));
    cr_expect_eq(svg_count(svg, "<rect class=\"put\""), 1);
    cr_expect_eq(count_labels(svg, "1"), 1);

    /* no thread names: rollouts go by their "explorer" argument, a sync of
     * an unnamed lane without one is left out */
    write_file(WORK "/tl_sparse/trace.json",
               "{\"traceEvents\":[{\"name\":\"rollout\",\"ph\":\"X\",\"ts\":0,\"dur\":1e6,"
               "\"tid\":9,\"args\":{\"batch\":2.0}},{\"name\":\"rollout\",\"ph\":\"X\","
               "\"ts\":1e6,\"dur\":1e6,\"tid\":9,\"args\":{\"explorer\":1,\"batch\":\"x\"}},"
               "{\"name\":\"train\",\"ph\":\"X\",\"ts\":2e6,\"dur\":5e5,\"tid\":9,"
               "\"args\":{\"batch\":2}},{\"name\":\"sync\",\"ph\":\"X\",\"ts\":1e6,\"dur\":10,"
               "\"tid\":1,\"args\":{}}]}");
    run(&r, "%s timeline tl_sparse/trace.json -o -", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    expect_whole_svg(r.out);
    cr_expect(strstr(r.out, ">Explorer 1</text>") && strstr(r.out, ">Explorer 2</text>"));
    cr_expect_eq(svg_count(r.out, "<rect class=\"rollout\""), 2);
    cr_expect_eq(svg_count(r.out, "<rect class=\"train\""), 1);
    cr_expect_eq(svg_count(r.out, "class=\"sync"), 0);
    cr_expect_eq(count_labels(r.out, "2"), 2, "the first rollout and the train");
    run(&r, "rm -rf tl_sparse");
}
