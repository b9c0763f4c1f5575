/* cmd_plot.c: `tern plot` (commands.h): read the runs' metrics.jsonl
 * (metrics_read.c), turn each key's series into the points drawn
 * (curve_points.c), draw the panels (plot_svg.c), write the SVG whole or not
 * at all, and make the PNG with rsvg-convert when asked. */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/errmsg.h"
#include "tern/support/atomic_file.h"
#include "tern/support/paths.h"
#include "cmd_io.h"
#include "commands.h"
#include "plot/curve_points.h"
#include "plot/metrics_read.h"
#include "plot/plot_svg.h"
#include "tern/libtern.h"

#define LABEL "tern plot"
#define OUT_DEFAULT "plot.svg"
#define SMOOTH_MAX 100000

extern char **environ;

/* The panels drawn when --keys is not given, in this order; their titles
 * serve --keys too. `quiet`: a figure only some runs have (a run with an
 * environment's trajectories, or tools: docs/agents.md), not named among those left
 * out when no run has it. */
static const struct {
    const char *key, *title;
    int quiet;
} known_panels[] = {
    {"reward_mean", "Reward", 0},
    {"eval/accuracy", "Held-out accuracy", 0},
    {"solve_rate", "Solve rate (trajectories)", 1},
    {"turns", "Turns per trajectory", 1},
    {"tools/calls", "Tool calls per trajectory", 1},
    {"kl", "KL to the reference", 0},
    {"entropy", "Entropy", 0},
    {"response_length", "Response length", 0},
    {"staleness", "Staleness", 0},
    {"mismatch_kl", "Explorer-trainer mismatch", 0},
};
#define N_KNOWN (sizeof known_panels / sizeof known_panels[0])

/* Everything one call holds, freed in one place. */
typedef struct plot_job {
    char **keys;           /* the panels' keys, owned */
    size_t n_keys;
    char **paths;          /* each run's metrics.jsonl */
    char **labels;         /* each run's name in the legend */
    pl_run *runs;
    size_t n_runs;
    pl_panel *panels;      /* those drawn */
    size_t n_panels;
    pl_curve *curves;      /* n_keys * n_runs slots; panels point into it */
    double **points;       /* every array of drawn points, owned */
    size_t n_points;
    char **missing;        /* each panel's "no data: ..." note, or NULL */
    char *svg_path, *png_path, *svg;
    size_t svg_len;
    char *panels_line;     /* "panels: ...", printed once the SVG is written */
} plot_job;

static void job_free(plot_job *j)
{
    for (size_t i = 0; j->keys && i < j->n_keys; i++)
        free(j->keys[i]);
    for (size_t i = 0; i < j->n_runs; i++) {
        if (j->paths)
            free(j->paths[i]);
        if (j->labels)
            free(j->labels[i]);
        if (j->runs)
            pl_run_free(&j->runs[i]);
    }
    for (size_t i = 0; i < j->n_points; i++)
        free(j->points[i]);
    for (size_t i = 0; j->missing && i < j->n_keys; i++)
        free(j->missing[i]);
    free(j->keys);
    free(j->paths);
    free(j->labels);
    free(j->runs);
    free(j->panels);
    free(j->curves);
    free(j->points);
    free(j->missing);
    free(j->svg_path);
    free(j->png_path);
    free(j->svg);
    free(j->panels_line);
}

static int oom(const tern_invocation *inv)
{
    return cmd_fail(inv, LABEL, TERN_EXIT_FAILURE, "out of memory");
}

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && strcasecmp(s + n - m, tail) == 0;
}

static int check_args(const tern_invocation *inv, const tern_plot_args *a)
{
    if (a->n_runs == 0 || !a->run_dirs)
        return cmd_fail(inv, LABEL, TERN_EXIT_USAGE,
                        "needs RUN_DIR, one or more run directories (the path `tern run` "
                        "prints at its end)");
    for (size_t i = 0; i < a->n_runs; i++)
        if (!a->run_dirs[i] || !*a->run_dirs[i])
            return cmd_fail(inv, LABEL, TERN_EXIT_USAGE, "an empty RUN_DIR: give a run directory");
    if (a->out_path && !*a->out_path)
        return cmd_fail(inv, LABEL, TERN_EXIT_USAGE, "-o needs a file name (.svg or .png)");
    if (a->out_path && strcmp(a->out_path, "-") == 0) /* stdout carries the panels line */
        return cmd_fail(inv, LABEL, TERN_EXIT_USAGE,
                        "-o - (standard output) is not supported: give a file name (.svg or "
                        ".png)");
    if (a->x && strcmp(a->x, "step") != 0 && strcmp(a->x, "time") != 0)
        return cmd_fail(inv, LABEL, TERN_EXIT_USAGE, "--x must be step or time (got '%s')", a->x);
    if (a->smooth < 0 || a->smooth > SMOOTH_MAX)
        return cmd_fail(inv, LABEL, TERN_EXIT_USAGE,
                        "--smooth must be from 1 (none) to %d points (got %d)", SMOOTH_MAX,
                        a->smooth);
    if (a->n_labels > a->n_runs)
        return cmd_fail(inv, LABEL, TERN_EXIT_USAGE,
                        "--label given %zu times for %zu run%s: give one per run, in the "
                        "order of the runs",
                        a->n_labels, a->n_runs, a->n_runs == 1 ? "" : "s");
    for (size_t i = 0; i < a->n_labels; i++)
        if (!a->labels || !a->labels[i] || !*a->labels[i])
            return cmd_fail(inv, LABEL, TERN_EXIT_USAGE, "--label needs a name");
    return TERN_EXIT_OK;
}

/* The keys of --keys ("a,b, c"), or the default panels'. */
static int take_keys(const tern_invocation *inv, const tern_plot_args *a, plot_job *j)
{
    const char *list = a->keys;
    size_t cap = N_KNOWN;
    for (const char *p = list; p && *p; p++)
        cap += *p == ',';
    j->keys = calloc(cap + 1, sizeof *j->keys);
    if (!j->keys)
        return oom(inv);
    if (!list) {
        for (size_t i = 0; i < N_KNOWN; i++)
            if (!(j->keys[j->n_keys++] = strdup(known_panels[i].key)))
                return oom(inv);
        return TERN_EXIT_OK;
    }
    const char *p = list;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        while (n > 0 && (*p == ' ' || *p == '\t')) {
            p++;
            n--;
        }
        while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
            n--;
        if (n == 0)
            return cmd_fail(inv, LABEL, TERN_EXIT_USAGE,
                            "--keys '%s' has an empty name; give keys separated by commas "
                            "(--keys reward_mean,kl)",
                            list);
        int seen = 0;
        for (size_t k = 0; k < j->n_keys; k++)
            seen |= strlen(j->keys[k]) == n && strncmp(j->keys[k], p, n) == 0;
        if (!seen && !(j->keys[j->n_keys++] = strndup(p, n)))
            return oom(inv);
        if (!end)
            break;
        p = end + 1;
    }
    return TERN_EXIT_OK;
}

/* A default panel only some runs have (known_panels' quiet). */
static int panel_quiet(const char *key)
{
    for (size_t i = 0; i < N_KNOWN; i++)
        if (strcmp(known_panels[i].key, key) == 0)
            return known_panels[i].quiet;
    return 0;
}

static const char *panel_title(const char *key)
{
    for (size_t i = 0; i < N_KNOWN; i++)
        if (strcmp(known_panels[i].key, key) == 0)
            return known_panels[i].title;
    return key;
}

/* The last `parts` components of the directory (1: "seed1", 2: "runs/seed1"). */
static char *dir_name(const char *dir, int parts)
{
    char *real = realpath(dir, NULL);
    const char *s = real ? real : dir;
    size_t n = strlen(s);
    while (n > 1 && s[n - 1] == '/')
        n--;
    size_t start = n;
    for (int found = 0; start > 0; start--)
        if (s[start - 1] == '/' && ++found == parts)
            break;
    char *out = start < n ? strndup(s + start, n - start) : strdup(s);
    free(real);
    return out;
}

/* Run i's metrics.jsonl and its directory, from RUN_DIR (a directory, or
 * the file itself). */
static int find_metrics(const tern_invocation *inv, const char *arg, char **path, char **dir)
{
    struct stat st;
    if (stat(arg, &st) != 0)
        return cmd_fail(inv, LABEL, errno == ENOENT || errno == ENOTDIR ? TERN_EXIT_USAGE
                                                                        : TERN_EXIT_FAILURE,
                        "%s: %s; give a run directory (the path `tern run` prints at its end)",
                        arg, strerror(errno));
    if (!S_ISDIR(st.st_mode)) {
        char *copy = strdup(arg);
        *path = strdup(arg);
        *dir = copy ? strdup(dirname(copy)) : NULL; /* dirname may write into copy */
        free(copy);
        return *path && *dir ? TERN_EXIT_OK : oom(inv);
    }
    *path = tern_path_join(arg, "metrics.jsonl");
    *dir = strdup(arg);
    if (!*path || !*dir)
        return oom(inv);
    if (stat(*path, &st) != 0)
        return cmd_fail(inv, LABEL, errno == ENOENT ? TERN_EXIT_USAGE : TERN_EXIT_FAILURE,
                        "%s: %s; is %s a run directory? `tern run` writes metrics.jsonl there "
                        "from its first step",
                        *path, strerror(errno), arg);
    return TERN_EXIT_OK;
}

/* Each run's file and name: --label, else its directory's name (with its
 * parent's when two runs share a name). */
static int find_runs(const tern_invocation *inv, const tern_plot_args *a, plot_job *j)
{
    size_t n = a->n_runs;
    j->paths = calloc(n, sizeof *j->paths);
    j->labels = calloc(n, sizeof *j->labels);
    j->runs = calloc(n, sizeof *j->runs);
    char **dirs = calloc(n, sizeof *dirs);
    if (!j->paths || !j->labels || !j->runs || !dirs) {
        free(dirs);
        return oom(inv);
    }
    j->n_runs = n;
    int code = TERN_EXIT_OK;
    for (size_t i = 0; i < n && code == TERN_EXIT_OK; i++) {
        code = find_metrics(inv, a->run_dirs[i], &j->paths[i], &dirs[i]);
        if (code == TERN_EXIT_OK && !(j->labels[i] = i < a->n_labels ? strdup(a->labels[i])
                                                                     : dir_name(dirs[i], 1)))
            code = oom(inv);
    }
    /* which names are shared, all found before any is changed */
    unsigned char *shared = code == TERN_EXIT_OK ? calloc(n, 1) : NULL;
    if (code == TERN_EXIT_OK && !shared)
        code = oom(inv);
    for (size_t i = a->n_labels; shared && i < n; i++)
        for (size_t k = a->n_labels; k < n; k++)
            shared[i] |= k != i && strcmp(j->labels[i], j->labels[k]) == 0;
    for (size_t i = a->n_labels; shared && i < n && code == TERN_EXIT_OK; i++) {
        char *longer = shared[i] ? dir_name(dirs[i], 2) : NULL;
        if (shared[i] && !longer)
            code = oom(inv);
        if (longer) {
            free(j->labels[i]);
            j->labels[i] = longer;
        }
    }
    free(shared);
    for (size_t i = 0; i < n; i++)
        free(dirs[i]);
    free(dirs);
    return code;
}

static int load_runs(const tern_invocation *inv, pl_xaxis xaxis, plot_job *j)
{
    for (size_t i = 0; i < j->n_runs; i++) {
        int rc = pl_run_load(j->paths[i], (const char *const *)j->keys, j->n_keys, xaxis,
                             &j->runs[i]);
        if (rc != TERN_OK)
            return cmd_fail(inv, LABEL, rc == TERN_EINVAL ? TERN_EXIT_USAGE : TERN_EXIT_FAILURE,
                            "%s", tern_error_message());
        const pl_run *r = &j->runs[i];
        if (r->truncated_line > 0)
            cmd_report(inv, LABEL,
                       "warning: %s:%ld: the last line is cut short (the run was stopped "
                       "while writing it?); skipped it, plotting the lines before",
                       j->paths[i], r->truncated_line);
        if (r->n_skipped > 0)
            cmd_report(inv, LABEL,
                       "warning: %s:%ld: skipped %zu value%s that %s NaN, infinite or null "
                       "(the first on this line)",
                       j->paths[i], r->first_skipped_line, r->n_skipped,
                       r->n_skipped == 1 ? "" : "s", r->n_skipped == 1 ? "is" : "are");
    }
    return TERN_EXIT_OK;
}

/* The numeric keys of the runs' RL lines, sorted, comma-separated (for a
 * message; malloc'ed, NULL when out of memory). */
static char *known_keys(const plot_job *j)
{
    json_t *all = json_object();
    for (size_t i = 0; all && i < j->n_runs; i++)
        json_object_update(all, j->runs[i].numeric_keys);
    char *text = NULL;
    size_t len = 0;
    FILE *f = all ? open_memstream(&text, &len) : NULL;
    if (f) {
        size_t n = json_object_size(all), k = 0;
        const char **names = calloc(n ? n : 1, sizeof *names);
        const char *key;
        json_t *v;
        json_object_foreach(all, key, v) {
            if (names)
                names[k++] = key;
        }
        for (size_t a = 1; names && a < n; a++) /* insertion sort: a few dozen names */
            for (size_t b = a; b > 0 && strcmp(names[b - 1], names[b]) > 0; b--) {
                const char *t = names[b];
                names[b] = names[b - 1];
                names[b - 1] = t;
            }
        for (size_t i = 0; names && i < n; i++)
            fprintf(f, "%s%s", i ? ", " : "", names[i]);
        free(names);
        fclose(f);
    }
    json_decref(all);
    return text;
}

/* --keys: every key named is a number on some run's RL lines. */
static int check_keys(const tern_invocation *inv, const plot_job *j)
{
    for (size_t k = 0; k < j->n_keys; k++) {
        int found = 0;
        for (size_t i = 0; i < j->n_runs && !found; i++)
            found = json_object_get(j->runs[i].numeric_keys, j->keys[k]) != NULL;
        if (found)
            continue;
        char *keys = known_keys(j);
        int code = cmd_fail(inv, LABEL, TERN_EXIT_USAGE,
                            "--keys: no run has a number for '%s' on its RL lines; the keys "
                            "they have: %s",
                            j->keys[k], keys ? keys : "(out of memory)");
        free(keys);
        return code;
    }
    return TERN_EXIT_OK;
}

static double *keep(plot_job *j, size_t n)
{
    double *p = malloc((n ? n : 1) * sizeof *p);
    if (p)
        j->points[j->n_points++] = p;
    return p;
}

/* One curve: the series' points, x divided by x_unit, smoothed over
 * `smooth` points, at most PL_MAX_POINTS; with smoothing, the raw points
 * too. *bucketed is set when a curve was thinned. */
static int make_curve(plot_job *j, const pl_series *s, size_t run, int smooth, double x_unit,
                      pl_curve *c, int *bucketed)
{
    size_t m = s->n < PL_MAX_POINTS ? s->n : PL_MAX_POINTS;
    double *xs = keep(j, s->n);
    if (!xs)
        return TERN_ENOMEM;
    for (size_t i = 0; i < s->n; i++)
        xs[i] = s->x[i] / x_unit;
    *bucketed |= s->n > PL_MAX_POINTS;
    int no_mem = 0;
    for (int pass = smooth > 1 ? 0 : 1; pass < 2; pass++) {
        double *px = keep(j, m), *py = keep(j, m);
        if (!px || !py)
            return TERN_ENOMEM;
        /* pass 0: the raw points drawn faint; 1: the curve */
        size_t got = pl_curve_points(xs, s->y, s->n, pass ? smooth : 1, PL_MAX_POINTS, px, py,
                                     &no_mem);
        if (no_mem)
            return TERN_ENOMEM;
        if (pass == 0) {
            c->raw_x = px;
            c->raw_y = py;
            c->n_raw = got;
        } else {
            c->x = px;
            c->y = py;
            c->n = got;
        }
    }
    c->run = run;
    return TERN_OK;
}

/* The panels that have data, each with a curve per run that has the key;
 * `dropped` gets the keys left out. */
static int make_panels(const tern_invocation *inv, const tern_plot_args *a, plot_job *j,
                       double x_unit, FILE *dropped, int *bucketed)
{
    size_t slots = j->n_keys * j->n_runs;
    j->panels = calloc(j->n_keys, sizeof *j->panels);
    j->curves = calloc(slots, sizeof *j->curves);
    j->points = calloc(5 * slots, sizeof *j->points); /* x, then 2 a pass */
    j->missing = calloc(j->n_keys, sizeof *j->missing);
    if (!j->panels || !j->curves || !j->points || !j->missing)
        return oom(inv);
    size_t n_dropped = 0;
    for (size_t k = 0; k < j->n_keys; k++) {
        const char *key = j->keys[k];
        /* an evaluation is a few points measured apart: never averaged */
        int smooth = strncmp(key, "eval/", 5) == 0 ? 1 : a->smooth;
        pl_curve *curves = j->curves + k * j->n_runs;
        size_t n = 0, n_absent = 0;
        char *missing = NULL;
        size_t missing_len = 0;
        FILE *m = open_memstream(&missing, &missing_len);
        if (!m)
            return oom(inv);
        for (size_t r = 0; r < j->n_runs; r++) {
            const pl_series *s = &j->runs[r].series[k];
            if (s->n == 0) {
                fprintf(m, "%s%s", n_absent++ ? ", " : "no data: ", j->labels[r]);
                continue;
            }
            if (make_curve(j, s, r, smooth, x_unit, &curves[n++], bucketed) != TERN_OK) {
                fclose(m);
                free(missing);
                return oom(inv);
            }
        }
        if (fclose(m) != 0) {
            free(missing);
            return oom(inv);
        }
        if (n == 0) {
            if (!(a->keys == NULL && panel_quiet(key)))
                fprintf(dropped, "%s%s", n_dropped++ ? ", " : "", key);
            free(missing);
            continue;
        }
        size_t p = j->n_panels++;
        j->missing[p] = n_absent ? missing : NULL;
        if (!n_absent)
            free(missing);
        j->panels[p] = (pl_panel){.title = panel_title(key), .key = key, .curves = curves,
                                  .n_curves = n, .missing = j->missing[p]};
    }
    return TERN_EXIT_OK;
}

/* The SVG's and PNG's paths, from -o and --png. */
static int out_paths(const tern_invocation *inv, const tern_plot_args *a, plot_job *j)
{
    const char *out = a->out_path ? a->out_path : OUT_DEFAULT;
    size_t n = strlen(out);
    int png_named = ends_with(out, ".png");
    j->svg_path = malloc(n + 5);
    if (!j->svg_path)
        return oom(inv);
    if (png_named)
        snprintf(j->svg_path, n + 5, "%.*s.svg", (int)(n - 4), out);
    else
        snprintf(j->svg_path, n + 5, "%s", out);
    if (!png_named && !a->png)
        return TERN_EXIT_OK;
    size_t base = ends_with(j->svg_path, ".svg") ? strlen(j->svg_path) - 4 : strlen(j->svg_path);
    j->png_path = malloc(base + 5);
    if (!j->png_path)
        return oom(inv);
    if (png_named)
        snprintf(j->png_path, base + 5, "%s", out);
    else
        snprintf(j->png_path, base + 5, "%.*s.png", (int)base, j->svg_path);
    return TERN_EXIT_OK;
}

/* Write the SVG through a temporary file renamed into place
 * (tern/support/atomic_file.h): a failure leaves no partial picture. */
static int write_svg(const tern_invocation *inv, const plot_job *j)
{
    tern_atomic_file af;
    if (tern_atomic_file_open_unique(&af, j->svg_path, 0, NULL, 0) != 0 ||
        tern_atomic_file_write(&af, j->svg, j->svg_len, NULL, 0) != 0 ||
        tern_atomic_file_commit(&af, NULL, 0) != 0)
        return cmd_fail(inv, LABEL, TERN_EXIT_FAILURE, "%s: cannot write: %s", j->svg_path,
                        strerror(errno));
    return TERN_EXIT_OK;
}

/* Convert the SVG with `rsvg-convert` (librsvg2-bin) to a temporary name,
 * then rename it: the PNG is whole or absent. */
static int write_png(const tern_invocation *inv, const plot_job *j)
{
    size_t n = strlen(j->png_path) + 32;
    char *tmp = malloc(n);
    if (!tmp)
        return oom(inv);
    snprintf(tmp, n, "%s.tmp-%ld", j->png_path, (long)getpid());
    char *argv[] = {"rsvg-convert", "--format", "png", "--output", tmp, j->svg_path, NULL};
    fflush(cmd_out(inv));
    fflush(cmd_err(inv));
    pid_t pid;
    int e = posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ);
    int code = TERN_EXIT_OK;
    if (e == ENOENT)
        code = cmd_fail(inv, LABEL, TERN_EXIT_FAILURE,
                        "cannot make %s: rsvg-convert is not installed; install it (Debian: "
                        "apt-get install librsvg2-bin) and run again, or use the SVG, which "
                        "is written: %s",
                        j->png_path, j->svg_path);
    else if (e != 0)
        code = cmd_fail(inv, LABEL, TERN_EXIT_FAILURE,
                        "cannot make %s: cannot run rsvg-convert: %s; the SVG is written: %s",
                        j->png_path, strerror(e), j->svg_path);
    int status = 0;
    while (e == 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (e == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
        code = cmd_fail(inv, LABEL, TERN_EXIT_FAILURE,
                        "cannot make %s: rsvg-convert %s %d converting %s (its message is "
                        "above); the SVG is written",
                        j->png_path, WIFEXITED(status) ? "exited with" : "was killed by signal",
                        WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), j->svg_path);
    else if (e == 0 && rename(tmp, j->png_path) != 0)
        code = cmd_fail(inv, LABEL, TERN_EXIT_FAILURE, "%s: cannot write: %s", j->png_path,
                        strerror(errno));
    if (code != TERN_EXIT_OK)
        unlink(tmp);
    free(tmp);
    return code;
}

/* "seconds", "minutes" or "hours", as fits the longest run; *unit its size. */
static const char *time_unit(const plot_job *j, double *unit)
{
    double longest = 0;
    for (size_t i = 0; i < j->n_runs; i++)
        for (size_t k = 0; k < j->n_keys; k++) {
            const pl_series *s = &j->runs[i].series[k];
            for (size_t p = 0; p < s->n; p++)
                longest = fmax(longest, s->x[p]);
        }
    *unit = longest >= 3 * 3600 ? 3600 : longest >= 10 * 60 ? 60 : 1;
    return *unit == 3600 ? "hours since the start" : *unit == 60 ? "minutes since the start"
                                                                 : "seconds since the start";
}

static int draw(const tern_invocation *inv, const tern_plot_args *a, plot_job *j)
{
    int by_time = a->x && strcmp(a->x, "time") == 0;
    double x_unit = 1;
    const char *x_label = by_time ? time_unit(j, &x_unit) : "RL step";
    char *dropped = NULL;
    size_t dropped_len = 0;
    FILE *d = open_memstream(&dropped, &dropped_len);
    if (!d)
        return oom(inv);
    int bucketed = 0;
    int code = make_panels(inv, a, j, x_unit, d, &bucketed);
    if (fclose(d) != 0 && code == TERN_EXIT_OK)
        code = oom(inv);
    if (code == TERN_EXIT_OK && j->n_panels == 0) {
        char *keys = known_keys(j);
        code = cmd_fail(inv, LABEL, TERN_EXIT_USAGE,
                        "nothing to draw: no run has a number for %s; choose keys with "
                        "--keys from those they have: %s",
                        dropped, keys ? keys : "(out of memory)");
        free(keys);
    }
    char subtitle[512];
    int smooth = a->smooth > 1 ? a->smooth : 1;
    char smoothing[128] = "no smoothing";
    if (smooth > 1)
        snprintf(smoothing, sizeof smoothing,
                 "mean of the last %d points (faint: unsmoothed; eval/ keys never)", smooth);
    char thinned[96] = "";
    if (bucketed)
        snprintf(thinned, sizeof thinned,
                 " \xc2\xb7 curves over %d points drawn as %d bucket means", PL_MAX_POINTS,
                 PL_MAX_POINTS);
    snprintf(subtitle, sizeof subtitle, "%zu run%s \xc2\xb7 x: %s \xc2\xb7 %s%s", j->n_runs,
             j->n_runs == 1 ? "" : "s", by_time ? "wall-clock time" : "RL step", smoothing,
             thinned);
    if (code == TERN_EXIT_OK) {
        pl_figure fig = {.title = a->title ? a->title : "Learning curves",
                         .subtitle = subtitle, .x_label = x_label,
                         .labels = (const char *const *)j->labels, .n_runs = j->n_runs,
                         .panels = j->panels, .n_panels = j->n_panels};
        FILE *mem = open_memstream(&j->svg, &j->svg_len);
        int rc = mem ? pl_svg_write(mem, &fig) : TERN_ENOMEM;
        if (mem && fclose(mem) != 0 && rc == TERN_OK)
            rc = TERN_ENOMEM;
        if (rc != TERN_OK)
            code = cmd_fail(inv, LABEL, TERN_EXIT_FAILURE, "out of memory drawing the picture");
    }
    size_t line_len = 0;
    FILE *line = code == TERN_EXIT_OK ? open_memstream(&j->panels_line, &line_len) : NULL;
    if (code == TERN_EXIT_OK && !line)
        code = oom(inv);
    if (line) {
        fputs("panels: ", line);
        for (size_t i = 0; i < j->n_panels; i++)
            fprintf(line, "%s%s", i ? ", " : "", j->panels[i].key);
        if (dropped_len > 0)
            fprintf(line, " (left out, no run has a number for them: %s)", dropped);
        if (fclose(line) != 0)
            code = oom(inv);
    }
    free(dropped);
    return code;
}

int tern_cmd_plot(const tern_invocation *inv, const tern_plot_args *a)
{
    if (cmd_structs_too_old(inv, LABEL, a ? a->size : 0, sizeof(tern_plot_args)))
        return TERN_EXIT_USAGE;
    int code = check_args(inv, a);
    if (code != TERN_EXIT_OK)
        return code;
    plot_job j = {0};
    pl_xaxis xaxis = a->x && strcmp(a->x, "time") == 0 ? PL_X_TIME : PL_X_STEP;
    code = take_keys(inv, a, &j);
    if (code == TERN_EXIT_OK)
        code = find_runs(inv, a, &j);
    if (code == TERN_EXIT_OK)
        code = load_runs(inv, xaxis, &j);
    if (code == TERN_EXIT_OK && a->keys)
        code = check_keys(inv, &j);
    if (code == TERN_EXIT_OK)
        code = out_paths(inv, a, &j);
    if (code == TERN_EXIT_OK)
        code = draw(inv, a, &j);
    if (code == TERN_EXIT_OK)
        code = write_svg(inv, &j);
    if (code == TERN_EXIT_OK)
        fprintf(cmd_out(inv), "%s\n%s\n", j.panels_line, j.svg_path);
    if (code == TERN_EXIT_OK && j.png_path)
        code = write_png(inv, &j);
    if (code == TERN_EXIT_OK && j.png_path)
        fprintf(cmd_out(inv), "%s\n", j.png_path);
    job_free(&j);
    return code;
}
