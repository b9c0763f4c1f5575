/* metrics_read.c: metrics.jsonl into series (see metrics_read.h).
 *
 * The file is read a line at a time. A line that does not parse is held
 * back: if another line follows, it was a malformed line in the middle (an
 * error naming it); if it was the last, a run killed mid-write cut it short
 * (skipped, for the caller to warn about). */
#include "plot/metrics_read.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"

static int push(pl_series *s, double x, double y)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        double *nx = realloc(s->x, cap * sizeof *nx);
        if (!nx)
            return TERN_ENOMEM;
        s->x = nx;
        double *ny = realloc(s->y, cap * sizeof *ny);
        if (!ny)
            return TERN_ENOMEM;
        s->y = ny;
        s->cap = cap;
    }
    s->x[s->n] = x;
    s->y[s->n] = y;
    s->n++;
    return TERN_OK;
}

static int is_word_char(char c) { return isalnum((unsigned char)c) || c == '_' || c == '.'; }

/* Python's json and C's printf write non-finite numbers as bare words that
 * JSON lacks (NaN, Infinity, -inf, ...): a copy of line[0..n) with each of
 * them outside strings turned into null, in *out (malloc'ed), or *out NULL
 * when there is none. TERN_OK or TERN_ENOMEM. */
static int nonfinite_to_null(const char *line, size_t n, char **out, size_t *out_n)
{
    *out = NULL;
    char *copy = NULL;
    size_t len = 0;
    int in_string = 0, escaped = 0;
    for (size_t i = 0; i < n; i++) {
        char c = line[i];
        if (in_string) {
            if (copy)
                copy[len++] = c;
            if (escaped)
                escaped = 0;
            else if (c == '\\')
                escaped = 1;
            else if (c == '"')
                in_string = 0;
            continue;
        }
        if (c == '"')
            in_string = 1;
        size_t w = 0;
        if (isalpha((unsigned char)c) && (i == 0 || !is_word_char(line[i - 1])))
            while (i + w < n && is_word_char(line[i + w]))
                w++;
        int nonfinite = (w == 3 && (strncasecmp(line + i, "nan", 3) == 0 ||
                                    strncasecmp(line + i, "inf", 3) == 0)) ||
                        (w == 8 && strncasecmp(line + i, "infinity", 8) == 0);
        if (nonfinite && !copy) { /* the first: start the copy with what came before */
            copy = malloc(n + 2); /* "nan" -> "null" grows by one; the rest shrink */
            if (!copy)
                return TERN_ENOMEM;
            memcpy(copy, line, i);
            len = i;
        }
        if (nonfinite) {
            if (len > 0 && (copy[len - 1] == '-' || copy[len - 1] == '+'))
                len--; /* the sign goes with the number */
            memcpy(copy + len, "null", 4);
            len += 4;
            i += w - 1;
            continue;
        }
        if (copy)
            copy[len++] = c;
    }
    if (copy)
        copy[len] = '\0';
    *out = copy;
    *out_n = len;
    return TERN_OK;
}

static const char *type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    default: return "not a number";
    }
}

/* One RL line: its x, then each key asked. */
static int take_rl_line(const char *path, long lineno, json_t *o, const char *const *keys,
                        pl_xaxis xaxis, pl_run *run)
{
    const json_t *step = json_object_get(o, "step");
    if (!json_is_number(step))
        return tern_errorf(TERN_EINVAL,
                           "%s:%ld: an RL line without a numeric \"step\"; is this the "
                           "metrics.jsonl of a tern run?",
                           path, lineno);
    double x = json_number_value(step);
    if (xaxis == PL_X_TIME) {
        const json_t *t = json_object_get(o, "wall_seconds");
        if (!json_is_number(t))
            return tern_errorf(TERN_EINVAL,
                               "%s:%ld: no \"wall_seconds\" to plot against time (runs "
                               "made by an older tern lack it); plot this run against steps "
                               "(--x step, the default)",
                               path, lineno);
        x = json_number_value(t);
    }
    run->rl_lines++;
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v) {
        if (json_is_number(v) && !json_object_get(run->numeric_keys, key) &&
            json_object_set_new(run->numeric_keys, key, json_true()) != 0)
            return tern_errorf(TERN_ENOMEM, "out of memory reading %s", path);
    }
    for (size_t k = 0; k < run->n_series; k++) {
        v = json_object_get(o, keys[k]);
        if (!v)
            continue; /* this line lacks it: an eval key between evaluations */
        double y = json_is_number(v) ? json_number_value(v) : NAN;
        if (!json_is_number(v) && !json_is_null(v))
            return tern_errorf(TERN_EINVAL,
                               "%s:%ld: \"%s\" is %s, not a number; plot numeric keys "
                               "only (--keys)",
                               path, lineno, keys[k], type_name(v));
        if (!isfinite(y) || !isfinite(x)) { /* null, or read from NaN/Infinity */
            if (run->n_skipped++ == 0)
                run->first_skipped_line = lineno;
            continue;
        }
        if (push(&run->series[k], x, y) != TERN_OK)
            return tern_errorf(TERN_ENOMEM, "out of memory reading %s", path);
    }
    return TERN_OK;
}

/* Read the lines of f; *bad_line/bad (the message) hold a line that did not
 * parse until the next one shows it was not the last. */
static int read_lines(FILE *f, const char *path, const char *const *keys, pl_xaxis xaxis,
                      pl_run *run, size_t *n_lines)
{
    char *line = NULL, *fixed = NULL, bad[400] = "";
    size_t cap = 0;
    long lineno = 0, bad_line = 0;
    ssize_t got;
    int rc = TERN_OK;
    errno = 0;
    while (rc == TERN_OK && (got = getline(&line, &cap, f)) >= 0) {
        lineno++;
        size_t n = (size_t)got, fixed_n = 0;
        while (n > 0 && isspace((unsigned char)line[n - 1]))
            n--;
        size_t lead = 0;
        while (lead < n && isspace((unsigned char)line[lead]))
            lead++;
        if (lead == n)
            continue; /* blank */
        if (bad_line > 0) {
            rc = tern_errorf(TERN_EINVAL, "%s", bad);
            break;
        }
        free(fixed);
        if ((rc = nonfinite_to_null(line, n, &fixed, &fixed_n)) != TERN_OK) {
            rc = tern_errorf(TERN_ENOMEM, "out of memory reading %s", path);
            break;
        }
        json_error_t je;
        json_t *o = json_loadb(fixed ? fixed : line, fixed ? fixed_n : n, 0, &je);
        if (!o || !json_is_object(o)) {
            if (o)
                snprintf(bad, sizeof bad,
                         "%s:%ld: %s, not a JSON object; every line of metrics.jsonl is "
                         "one object (fix or delete the line)",
                         path, lineno, json_is_array(o) ? "an array" : "a value");
            else
                snprintf(bad, sizeof bad,
                         "%s:%ld: not valid JSON (%s, column %d); every line of "
                         "metrics.jsonl is one object (fix or delete the line)",
                         path, lineno, je.text, je.column);
            bad_line = lineno;
            json_decref(o);
            continue;
        }
        (*n_lines)++;
        const char *stage = json_string_value(json_object_get(o, "stage"));
        if (stage && strcmp(stage, "rl") == 0)
            rc = take_rl_line(path, lineno, o, keys, xaxis, run);
        json_decref(o);
    }
    if (rc == TERN_OK && ferror(f))
        rc = tern_errorf(TERN_EIO, "%s: cannot read: %s", path, strerror(errno));
    if (rc == TERN_OK && bad_line > 0)
        run->truncated_line = bad_line;
    free(fixed);
    free(line);
    return rc;
}

int pl_run_load(const char *path, const char *const *keys, size_t n_keys, pl_xaxis xaxis,
                pl_run *run)
{
    memset(run, 0, sizeof *run);
    FILE *f = fopen(path, "r");
    if (!f)
        return tern_errorf(errno == ENOENT ? TERN_EINVAL : TERN_EIO, "%s: cannot read: %s",
                           path, strerror(errno));
    run->series = calloc(n_keys ? n_keys : 1, sizeof *run->series);
    run->numeric_keys = json_object();
    run->n_series = n_keys;
    size_t n_lines = 0;
    int rc = run->series && run->numeric_keys
                 ? read_lines(f, path, keys, xaxis, run, &n_lines)
                 : tern_errorf(TERN_ENOMEM, "out of memory reading %s", path);
    fclose(f);
    if (rc == TERN_OK && n_lines == 0 && run->truncated_line > 0)
        rc = tern_errorf(TERN_EINVAL,
                         "%s: no whole line: line %ld is cut short (the run was stopped "
                         "while writing its first step?); plot it once steps are written",
                         path, run->truncated_line);
    else if (rc == TERN_OK && n_lines == 0)
        rc = tern_errorf(TERN_EINVAL,
                         "%s: empty: the run has written no step yet (a line per step); "
                         "plot it once steps are written",
                         path);
    else if (rc == TERN_OK && run->rl_lines == 0)
        rc = tern_errorf(TERN_EINVAL,
                         "%s: no RL step (none of its %zu line%s has \"stage\":\"rl\"): the "
                         "run has not reached RL yet; plot it once RL steps are written",
                         path, n_lines, n_lines == 1 ? "" : "s");
    if (rc != TERN_OK)
        pl_run_free(run);
    return rc;
}

void pl_run_free(pl_run *run)
{
    for (size_t k = 0; run->series && k < run->n_series; k++) {
        free(run->series[k].x);
        free(run->series[k].y);
    }
    free(run->series);
    json_decref(run->numeric_keys);
    memset(run, 0, sizeof *run);
}
