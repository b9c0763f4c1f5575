/* cmd_timeline.c: `tern timeline` (tern/libtern.h): draw a run's trace.json
 * as an SVG timeline (timeline_svg.c), written whole or not at all. */
#include <errno.h>
#include <jansson.h>
#include <libconfig.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/errmsg.h"
#include "tern/support/atomic_file.h"
#include "tern/support/paths.h"
#include "cmd_io.h"
#include "commands.h"
#include "tern/libtern.h"
#include "timeline/timeline_svg.h"
#include "timeline/trace_read.h"

#define LABEL "tern timeline"
#define OUT_NAME "timeline.svg"

static int check_args(const tern_invocation *inv, const tern_timeline_args *a)
{
    if (!a->run_dir || !*a->run_dir)
        return cmd_fail(inv, LABEL, TERN_EXIT_USAGE,
                        "needs RUN_DIR, a run directory or its trace.json");
    if (a->out_path && !*a->out_path)
        return cmd_fail(inv, LABEL, TERN_EXIT_USAGE, "-o needs a file name (or - for stdout)");
    if (a->width != 0 && (a->width < TL_WIDTH_MIN || a->width > TL_WIDTH_MAX))
        return cmd_fail(inv, LABEL, TERN_EXIT_USAGE,
                        "--width must be from %d to %d pixels (got %d)", TL_WIDTH_MIN, TL_WIDTH_MAX,
                        a->width);
    if (a->steps < 0)
        return cmd_fail(inv, LABEL, TERN_EXIT_USAGE, "--steps must be 1 or more (got %lld)",
                        a->steps);
    if (a->has_from && !(isfinite(a->from_s) && a->from_s >= 0))
        return cmd_fail(inv, LABEL, TERN_EXIT_USAGE, "--from must be a number of seconds >= 0");
    if (a->has_to && !(isfinite(a->to_s) && a->to_s > 0))
        return cmd_fail(inv, LABEL, TERN_EXIT_USAGE, "--to must be a number of seconds > 0");
    if (a->has_from && a->has_to && a->from_s >= a->to_s)
        return cmd_fail(inv, LABEL, TERN_EXIT_USAGE, "--from (%g s) must be before --to (%g s)",
                        a->from_s, a->to_s);
    if (a->steps > 0 && a->has_to)
        return cmd_fail(inv, LABEL, TERN_EXIT_USAGE,
                        "--steps and --to both set where the picture ends: "
                        "give one of them");
    return TERN_EXIT_OK;
}

/* The trace file and the run directory it belongs to (both malloc'ed). */
static int find_trace(const tern_invocation *inv, const char *arg, char **trace, char **dir)
{
    struct stat st;
    *trace = *dir = NULL;
    if (stat(arg, &st) != 0)
        return cmd_fail(inv, LABEL, TERN_EXIT_USAGE,
                        "%s: %s; give the run directory `tern run` printed "
                        "(or its trace.json)",
                        arg, strerror(errno));
    if (S_ISDIR(st.st_mode)) {
        *trace = tern_path_join(arg, "trace.json");
        *dir = strdup(arg);
        if (!*trace || !*dir)
            return cmd_fail(inv, LABEL, TERN_EXIT_FAILURE, "out of memory");
        if (stat(*trace, &st) != 0 && errno == ENOENT)
            return cmd_fail(inv, LABEL, TERN_EXIT_USAGE,
                            "%s: no such file; `tern run` writes it when "
                            "the run ends (a run still going or killed has none): wait for the "
                            "end, or resume it with `tern run CONFIG --resume`",
                            *trace);
        return TERN_EXIT_OK;
    }
    char *copy = strdup(arg);
    *trace = strdup(arg);
    *dir = copy ? strdup(dirname(copy)) : NULL; /* dirname may write into copy */
    free(copy);
    if (!*trace || !*dir)
        return cmd_fail(inv, LABEL, TERN_EXIT_FAILURE, "out of memory");
    return TERN_EXIT_OK;
}

/* The sync plugin of the run, from summary.json or config.cfg when they
 * say it; "" when neither does. Best effort: nothing here is an error. */
static void sync_plugin(const char *dir, char *out, size_t n)
{
    out[0] = '\0';
    char *path = tern_path_join(dir, "summary.json");
    json_t *s = path ? json_load_file(path, 0, NULL) : NULL;
    free(path);
    const json_t *v = json_object_get(s, "sync");
    const char *name = json_is_object(v) ? json_string_value(json_object_get(v, "plugin"))
                                         : json_string_value(v);
    if (!name)
        name = json_string_value(json_object_get(s, "sync_plugin"));
    if (name)
        snprintf(out, n, "%s", name);
    json_decref(s);
    if (out[0])
        return;
    path = tern_path_join(dir, "config.cfg");
    if (!path || access(path, R_OK) != 0) {
        free(path);
        return;
    }
    config_t cfg;
    config_init(&cfg);
    if (config_read_file(&cfg, path) == CONFIG_TRUE &&
        config_lookup_string(&cfg, "sync.plugin", &name) == CONFIG_TRUE)
        snprintf(out, n, "%s", name);
    config_destroy(&cfg);
    free(path);
}

/* "NAME · sync: PLUGIN", NAME the run directory's own name. */
static void make_title(const char *dir, char *out, size_t n)
{
    char *real = realpath(dir, NULL);
    char *copy = strdup(real ? real : dir);
    const char *name = copy ? basename(copy) : dir;
    char plugin[128];
    sync_plugin(dir, plugin, sizeof plugin);
    if (plugin[0])
        snprintf(out, n, "%s \xc2\xb7 sync: %s", name, plugin);
    else
        snprintf(out, n, "%s", name);
    free(copy);
    free(real);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Train steps drawn when no --steps, --from or --to says otherwise: at the
 * default width a step of a few boxes and marks stays readable up to about
 * this many; a longer run is drawn from its start, and the picture says so. */
#define DEFAULT_STEPS 30

static size_t train_events(const tl_trace *t)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n_ev; i++)
        n += t->ev[i].kind == TL_TRAIN;
    return n;
}

/* The end of the steps-th train event (by start time); the trace's end when
 * it has fewer. -1 (after the message) when it has none. */
static double steps_end(const tern_invocation *inv, const tl_trace *t, const char *trace,
                        long long steps, int *code)
{
    size_t n = train_events(t);
    if (n == 0) {
        *code = cmd_fail(inv, LABEL, TERN_EXIT_USAGE,
                         "%s: --steps counts train events and this trace "
                         "has none; leave --steps out, or give --to SECONDS",
                         trace);
        return -1;
    }
    if ((unsigned long long)steps >= n)
        return t->t_last;
    /* pairs (start, end), sorted by start */
    double *se = malloc(2 * n * sizeof *se);
    if (!se) {
        *code = cmd_fail(inv, LABEL, TERN_EXIT_FAILURE, "out of memory");
        return -1;
    }
    size_t k = 0;
    for (size_t i = 0; i < t->n_ev; i++)
        if (t->ev[i].kind == TL_TRAIN) {
            se[2 * k] = t->ev[i].t0;
            se[2 * k + 1] = t->ev[i].t1;
            k++;
        }
    qsort(se, n, 2 * sizeof *se, cmp_double);
    double end = se[2 * (size_t)(steps - 1) + 1];
    free(se);
    return end;
}

/* The seconds shown: the whole trace, narrowed by --steps, --from, --to, or
 * by default to its first DEFAULT_STEPS train steps (*cut gets how many of
 * how many steps then, else 0). */
static int window(const tern_invocation *inv, const tern_timeline_args *a, const tl_trace *t,
                  const char *trace, double *from, double *to, size_t *cut)
{
    int code = TERN_EXIT_OK;
    long long steps = a->steps;
    *cut = 0;
    if (steps == 0 && !a->has_from && !a->has_to && train_events(t) > DEFAULT_STEPS) {
        steps = DEFAULT_STEPS;
        *cut = train_events(t);
    }
    *from = a->has_from ? a->from_s : t->t_first;
    *to = a->has_to ? a->to_s : t->t_last;
    if (steps > 0 && (*to = steps_end(inv, t, trace, steps, &code)) < 0)
        return code;
    /* a trace of one instant: give it some room */
    if (*to - *from < 1e-6 && !a->has_from && !a->has_to) {
        *from -= 0.5;
        *to += 0.5;
    }
    if (*from >= *to && a->has_from)
        return cmd_fail(inv, LABEL, TERN_EXIT_USAGE,
                        "%s: nothing to draw from %g s on: the picture "
                        "ends at %.3f s (%s); give a smaller --from",
                        trace, a->from_s, *to,
                        a->steps > 0 ? "the end of the last step --steps shows"
                                     : "the trace's last event");
    if (*from >= *to)
        return cmd_fail(inv, LABEL, TERN_EXIT_USAGE,
                        "%s: nothing to draw before %g s: the trace's "
                        "events begin at %.3f s; give a larger --to",
                        trace, *to, t->t_first);
    for (size_t i = 0; i < t->n_ev; i++)
        if (tl_event_visible(&t->ev[i], *from, *to))
            return TERN_EXIT_OK;
    return cmd_fail(inv, LABEL, TERN_EXIT_USAGE,
                    "%s: nothing to draw between %g s and %g s: the "
                    "trace's events span %.3f s to %.3f s; choose --from/--to inside that",
                    trace, *from, *to, t->t_first, t->t_last);
}

/* Write `n` bytes to `path` through a temporary file renamed into place
 * (tern/support/atomic_file.h), so that a failure leaves no partial
 * picture. */
static int write_file(const tern_invocation *inv, const char *path, const char *data, size_t n)
{
    tern_atomic_file a;
    if (tern_atomic_file_open_unique(&a, path, 0, NULL, 0) != 0 ||
        tern_atomic_file_write(&a, data, n, NULL, 0) != 0 ||
        tern_atomic_file_commit(&a, NULL, 0) != 0)
        return cmd_fail(inv, LABEL, TERN_EXIT_FAILURE, "%s: cannot write: %s", path,
                        strerror(errno));
    return TERN_EXIT_OK;
}

int tern_cmd_timeline(const tern_invocation *inv, const tern_timeline_args *a)
{
    if (cmd_structs_too_old(inv, LABEL, a ? a->size : 0, sizeof(tern_timeline_args)))
        return TERN_EXIT_USAGE;
    int code = check_args(inv, a);
    if (code != TERN_EXIT_OK)
        return code;
    char *trace_path = NULL, *dir = NULL, *out_path = NULL, *svg = NULL;
    size_t svg_len = 0;
    tl_trace t = {0};
    code = find_trace(inv, a->run_dir, &trace_path, &dir);
    if (code == TERN_EXIT_OK) {
        int rc = tl_trace_load(trace_path, &t);
        if (rc != TERN_OK)
            code = cmd_fail(inv, LABEL, rc == TERN_ENOMEM ? TERN_EXIT_FAILURE : TERN_EXIT_USAGE,
                            "%s", tern_error_message());
    }
    double from = 0, to = 0;
    size_t cut = 0;
    if (code == TERN_EXIT_OK)
        code = window(inv, a, &t, trace_path, &from, &to, &cut);
    if (code == TERN_EXIT_OK) {
        char title[640];
        make_title(dir, title, sizeof title);
        size_t len = strlen(title);
        if (cut)
            snprintf(title + len, sizeof title - len, " \xc2\xb7 the first %d of %zu train "
                     "steps (--steps N, --from S and --to S draw others)", DEFAULT_STEPS, cut);
        tl_view v = {.from = from, .to = to, .width = a->width ? a->width : TL_WIDTH_DEFAULT,
                     .title = title};
        FILE *mem = open_memstream(&svg, &svg_len);
        int rc = mem ? tl_svg_write(mem, &t, &v) : TERN_ENOMEM;
        if (mem && fclose(mem) != 0 && rc == TERN_OK)
            rc = TERN_ENOMEM;
        if (rc != TERN_OK)
            code = cmd_fail(inv, LABEL, TERN_EXIT_FAILURE, "out of memory drawing %s", trace_path);
    }
    if (code == TERN_EXIT_OK && a->out_path && strcmp(a->out_path, "-") == 0) {
        FILE *out = cmd_out(inv);
        if (fwrite(svg, 1, svg_len, out) != svg_len || fflush(out) != 0)
            code = cmd_fail(inv, LABEL, TERN_EXIT_FAILURE, "cannot write the picture to stdout: %s",
                            strerror(errno));
    } else if (code == TERN_EXIT_OK) {
        out_path = a->out_path ? strdup(a->out_path) : tern_path_join(dir, OUT_NAME);
        if (!out_path)
            code = cmd_fail(inv, LABEL, TERN_EXIT_FAILURE, "out of memory");
        else
            code = write_file(inv, out_path, svg, svg_len);
        if (code == TERN_EXIT_OK)
            fprintf(cmd_out(inv), "%s\n", out_path);
    }
    free(svg);
    free(out_path);
    tl_trace_free(&t);
    free(trace_path);
    free(dir);
    return code;
}
