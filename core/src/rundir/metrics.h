/* metrics.h: per-step metric accumulators. Roles and plugins observe values
 * during a step; the master writes one JSON line per step (metrics.jsonl)
 * with the mean and count of each metric, then starts the next step. */
#ifndef TERN_METRICS_H
#define TERN_METRICS_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

typedef struct tern_metrics tern_metrics;

tern_metrics *tern_metrics_new(void);
void tern_metrics_free(tern_metrics *m);
/* Add one observation. Thread-safe. Names longer than 127 bytes are cut. */
void tern_metrics_observe(tern_metrics *m, const char *name, double value);
/* Write {"step": step, "<name>": mean, "<name>.count": n, ...} as one line to
 * `f`, names in first-seen order, and reset the accumulators. TERN_EIO on a
 * write error. */
int tern_metrics_write_step(tern_metrics *m, FILE *f, int64_t step);

/* Add the same "<name>": mean, "<name>.count": n pairs to the JSON object
 * `o` and reset the accumulators (the run's per-step line). */
void tern_metrics_drain_json(tern_metrics *m, json_t *o);

/* Notes: facts about how an instance runs that can change its figures
 * between machines (host->note: a compute path chosen at run time, a
 * library's kernel). Keep value as note `key` of instance `who` (a later
 * note of the same key replaces it). Thread-safe; a note lost for lack of
 * memory is dropped silently. */
void tern_metrics_note(tern_metrics *m, const char *who, const char *key, const char *value);
/* A copy of the notes, {"<who>": {"<key>": "<value>", ...}, ...} in the
 * order noted (an empty object for none); NULL when out of memory. The
 * caller owns it. */
json_t *tern_metrics_notes(tern_metrics *m);

#endif
