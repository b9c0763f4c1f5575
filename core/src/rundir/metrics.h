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

#endif
