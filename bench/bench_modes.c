/* bench_modes.c: the quickstart's work under each sync mode (the configs in etc/modes/,
 * every role single-threaded: one core each), timed from each run's
 * trace.json. Prints per mode the RL phase's wall time and time per step,
 * each role's busy and idle fraction, and the speed-up over `synchronous`;
 * then the overlap check of docs/sync.md: fully_async's time per step
 * against the slower role's time alone (measured in the synchronous run,
 * where the roles take turns). Figures only, no pass/fail.
 *
 * Every mode runs on the same weight transport, so that a speed-up is the
 * mode's and not the transport's: one table with weights by memory copy,
 * one with checkpoint files (sync.method), whatever each config says
 * (--method memory or --method checkpoint: that table alone).
 *
 *   bench_modes [--tern PATH] [--source DIR] [--out DIR] [--method M] [-o key=value]...
 *
 * Busy = rollout + sync time on an explorer lane, train + sync time on the
 * trainer lane; idle = the rest of the RL phase (from the first rollout to
 * the last train step's end). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *modes[] = {"synchronous",    "one_step_off",      "fully_async",
                              "multi_explorer", "interval4_offset0", "interval1_offset4"};
#define N_MODES (sizeof modes / sizeof modes[0])

typedef struct figures {
    int ok;
    long steps;
    int explorers;
    double wall_s;                 /* RL phase */
    double explorer_busy_s[64];    /* per explorer */
    double trainer_busy_s;
    double rollout_s, train_s;     /* summed durations */
    long rollouts, skipped;
} figures;

static const char *lane_name(json_t *ev, json_int_t tid)
{
    size_t i;
    json_t *e;
    json_array_foreach(ev, i, e) {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        if (ph && strcmp(ph, "M") == 0 && json_integer_value(json_object_get(e, "tid")) == tid)
            return json_string_value(json_object_get(json_object_get(e, "args"), "name"));
    }
    return "";
}

static int read_trace(const char *path, figures *f)
{
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    if (!root) {
        fprintf(stderr, "bench_modes: %s: %s\n", path, err.text);
        return -1;
    }
    json_t *ev = json_object_get(root, "traceEvents");
    double first = -1, last = 0;
    size_t i;
    json_t *e;
    json_array_foreach(ev, i, e) {
        const char *name = json_string_value(json_object_get(e, "name"));
        const char *ph = json_string_value(json_object_get(e, "ph"));
        if (!name || !ph || strcmp(ph, "X") != 0) {
            if (name && strcmp(name, "skip") == 0)
                f->skipped++;
            continue;
        }
        double ts = json_number_value(json_object_get(e, "ts")) * 1e-6;
        double dur = json_number_value(json_object_get(e, "dur")) * 1e-6;
        const char *lane = lane_name(ev, json_integer_value(json_object_get(e, "tid")));
        int x = -1;
        if (sscanf(lane, "explorer %d", &x) == 1 && (x < 0 || x >= 64))
            x = -1;
        if (strcmp(name, "rollout") == 0 && x >= 0) {
            if (first < 0 || ts < first)
                first = ts;
            f->explorer_busy_s[x] += dur;
            f->rollout_s += dur;
            f->rollouts++;
            if (x + 1 > f->explorers)
                f->explorers = x + 1;
        } else if (strcmp(name, "sync") == 0 && x >= 0) {
            f->explorer_busy_s[x] += dur;
        } else if (strcmp(name, "train") == 0) {
            f->trainer_busy_s += dur;
            f->train_s += dur;
            f->steps++;
            if (ts + dur > last)
                last = ts + dur;
        } else if (strcmp(name, "sync") == 0 && strcmp(lane, "trainer") == 0) {
            f->trainer_busy_s += dur;
        }
    }
    json_decref(root);
    if (first < 0 || f->steps == 0) {
        fprintf(stderr, "bench_modes: %s: no rollout or train events\n", path);
        return -1;
    }
    f->wall_s = last - first;
    f->ok = 1;
    return 0;
}

/* Run every mode with weights by `method` and print its table. */
static void table(const char *tern, const char *src, const char *out, const char *extra,
                  const char *method)
{
    static figures fig[N_MODES];
    memset(fig, 0, sizeof fig);
    for (size_t m = 0; m < N_MODES; m++) {
        char cmd[8192];
        snprintf(cmd, sizeof cmd,
                 "rm -rf '%s/bench-%s-%s' && '%s' run '%s/etc/modes/%s.cfg' "
                 "-o 'run.out_dir=\"%s\"' -o 'run.name=\"bench-%s-%s\"' "
                 "-o 'sync.method=\"%s\"' -o eval.every=0 -o trainer.save_every=0%s "
                 ">/dev/null 2>'%s/bench-%s-%s.log'",
                 out, modes[m], method, tern, src, modes[m], out, modes[m], method, method,
                 extra, out, modes[m], method);
        char mk[4200];
        snprintf(mk, sizeof mk, "mkdir -p '%s'", out);
        if (system(mk) != 0 || system(cmd) != 0) {
            fprintf(stderr, "bench_modes: %s (%s) failed (see %s/bench-%s-%s.log)\n", modes[m],
                    method, out, modes[m], method);
            continue;
        }
        char path[4200];
        snprintf(path, sizeof path, "%s/bench-%s-%s/trace.json", out, modes[m], method);
        read_trace(path, &fig[m]);
    }

    printf("weights by %s (sync.method = \"%s\" in every mode)\n", method, method);
    printf("%-18s %7s %8s %9s %10s %10s %9s %8s\n", "mode", "steps", "wall s", "s/step",
           "explorer", "trainer", "speedup", "skipped");
    printf("%-18s %7s %8s %9s %10s %10s %9s %8s\n", "", "", "(RL)", "",
           "busy/idle", "busy/idle", "vs sync", "batches");
    double sync_step = fig[0].ok ? fig[0].wall_s / (double)fig[0].steps : 0;
    for (size_t m = 0; m < N_MODES; m++) {
        const figures *f = &fig[m];
        if (!f->ok) {
            printf("%-18s (failed)\n", modes[m]);
            continue;
        }
        double ebusy = 0;
        for (int x = 0; x < f->explorers; x++)
            ebusy += f->explorer_busy_s[x];
        ebusy /= f->wall_s * (f->explorers ? f->explorers : 1);
        double tbusy = f->trainer_busy_s / f->wall_s, step = f->wall_s / (double)f->steps;
        char eb[32], tb[32];
        snprintf(eb, sizeof eb, "%.0f%%/%.0f%%", 100 * ebusy, 100 * (1 - ebusy));
        snprintf(tb, sizeof tb, "%.0f%%/%.0f%%", 100 * tbusy, 100 * (1 - tbusy));
        printf("%-18s %7ld %8.1f %9.3f %10s %10s %8.2fx %8ld\n", modes[m], f->steps, f->wall_s,
               step, eb, tb, sync_step > 0 ? sync_step / step : 0, f->skipped);
    }
    if (fig[0].ok && fig[2].ok) {
        /* in the synchronous run the roles take turns: each duration is the role alone */
        double rollout = fig[0].rollout_s / (double)fig[0].rollouts;
        double train = fig[0].train_s / (double)fig[0].steps;
        double slower = rollout > train ? rollout : train;
        double async_step = fig[2].wall_s / (double)fig[2].steps;
        printf("\nroles alone (synchronous run): rollout %.3f s/batch, train %.3f s/step\n",
               rollout, train);
        printf("overlap limit max(rollout, train) = %.3f s/step; sum = %.3f s/step\n", slower,
               rollout + train);
        printf("fully_async: %.3f s/step = %.1f%% of the limit (goal: within 10%%)\n",
               async_step, 100 * async_step / slower);
    }
}

int main(int argc, char **argv)
{
    const char *tern = "build/bin/tern", *src = ".", *out = "bench-modes-runs", *method = NULL;
    char extra[4096] = "";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--tern") == 0 && i + 1 < argc)
            tern = argv[++i];
        else if (strcmp(argv[i], "--source") == 0 && i + 1 < argc)
            src = argv[++i];
        else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
            out = argv[++i];
        else if (strcmp(argv[i], "--method") == 0 && i + 1 < argc &&
                 (strcmp(argv[i + 1], "memory") == 0 || strcmp(argv[i + 1], "checkpoint") == 0))
            method = argv[++i];
        else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
            size_t n = strlen(extra);
            snprintf(extra + n, sizeof extra - n, " -o '%s'", argv[++i]);
        } else {
            fprintf(stderr, "usage: bench_modes [--tern PATH] [--source DIR] [--out DIR] "
                            "[--method memory|checkpoint] [-o key=value]...\n");
            return 2;
        }
    }
    if (!method || strcmp(method, "memory") == 0)
        table(tern, src, out, extra, "memory");
    if (!method)
        printf("\n");
    if (!method || strcmp(method, "checkpoint") == 0)
        table(tern, src, out, extra, "checkpoint");
    return 0;
}
