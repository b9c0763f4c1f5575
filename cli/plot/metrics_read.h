/* metrics_read.h: read a run's metrics.jsonl (docs/run.md, "metrics.jsonl")
 * into the series `tern plot` draws: for each key asked, the RL lines' values
 * against the step or the wall-clock time. */
#ifndef TERN_PLOT_METRICS_READ_H
#define TERN_PLOT_METRICS_READ_H

#include <jansson.h>
#include <stddef.h>

/* What the x axis counts. */
typedef enum pl_xaxis {
    PL_X_STEP, /* "step": RL steps done (0 for the evaluation before RL) */
    PL_X_TIME  /* "wall_seconds": seconds since the run started */
} pl_xaxis;

/* One key of one run: its finite values, in file order. */
typedef struct pl_series {
    double *x, *y;
    size_t n, cap;
} pl_series;

typedef struct pl_run {
    pl_series *series;       /* one per key asked, in the order asked (n may be 0) */
    size_t n_series;
    json_t *numeric_keys;    /* every key with a number on some RL line: an
                                object used as a set, for messages */
    size_t rl_lines;         /* lines with "stage":"rl" */
    long truncated_line;     /* > 0: the last line was cut short and skipped */
    size_t n_skipped;        /* values skipped as NaN, infinite or null */
    long first_skipped_line; /* the line of the first of them */
} pl_run;

/* Read `path` into *run (zeroed first), keeping the values of keys[0..n_keys)
 * on the lines whose "stage" is "rl", against x. Blank lines are passed over;
 * a last line that is not valid JSON is taken for one cut short by a run
 * killed mid-write: skipped, with run->truncated_line set (the caller warns).
 * Bare NaN, Infinity, -Infinity (and nan, inf) tokens, as other tools write
 * them, are read as null; null values are skipped and counted.
 * TERN_OK; TERN_EINVAL for a file that is empty, has a bad line before the
 * last (not JSON, not an object), a key asked holding a string or another
 * non-number, an RL line without a numeric "step" (or, for PL_X_TIME,
 * "wall_seconds"), or no RL line at all; TERN_EIO when the file cannot be
 * read; TERN_ENOMEM. The message (tern_error_message) starts with PATH or
 * PATH:LINE and says how to fix it. On failure *run holds nothing to free. */
int pl_run_load(const char *path, const char *const *keys, size_t n_keys, pl_xaxis x,
                pl_run *run);
void pl_run_free(pl_run *run);

#endif
