/* trace.h: a recorder of Chrome trace events (trace.json, opens in Perfetto).
 * Each thread draws on its own lane; roles name their lane ("explorer 0"). */
#ifndef TERN_TRACE_H
#define TERN_TRACE_H

#include <stdint.h>

typedef struct tern_trace tern_trace;

tern_trace *tern_trace_new(void);
void tern_trace_free(tern_trace *t);
/* Name the calling thread's lane in `t`. */
void tern_trace_name_lane(tern_trace *t, const char *lane);
/* Start a complete event ("ph": "X") on the calling thread's lane; returns a
 * token for tern_trace_end (0 if it could not be recorded). Thread-safe. */
uint64_t tern_trace_begin(tern_trace *t, const char *name);
/* End it; `args_json` is NULL or a JSON object text (anything else is kept
 * as {"invalid_args": "<text>"}, so a bad plugin cannot break the file). */
void tern_trace_end(tern_trace *t, uint64_t token, const char *args_json);
/* An instant event ("ph": "i") now, on the calling thread's lane. */
void tern_trace_instant(tern_trace *t, const char *name, const char *args_json);
/* The trace's clock: monotonic nanoseconds, for the two calls below. */
uint64_t tern_trace_clock(void);
/* A complete event that already happened, on the calling thread's lane
 * (e.g. a wait measured by the callee). */
void tern_trace_span(tern_trace *t, const char *name, uint64_t start_ns, uint64_t end_ns,
                     const char *args_json);
/* An instant event at `at_ns` on the lane named `lane` (made if new, tied to
 * no thread: e.g. "buffer", which no thread owns). */
void tern_trace_instant_on(tern_trace *t, const char *lane, const char *name, uint64_t at_ns,
                           const char *args_json);
/* The events as JSON, for the trace of another process (a run on MPI
 * ranks sends each rank's to the master): {"lanes": [[id, name], ...],
 * "events": [[name, ph, lane, start_ns, end_ns, args or null], ...]}, times
 * on this process's trace clock. NULL when out of memory. */
struct json_t;
struct json_t *tern_trace_export(tern_trace *t);
/* Add events exported by another process: each lane named "NAME (SUFFIX)"
 * (e.g. "trainer (rank 1)"), times moved onto this trace's clock by adding
 * offset_ns (ours minus theirs). TERN_EINVAL for JSON not made by
 * tern_trace_export. */
int tern_trace_import(tern_trace *t, const struct json_t *x, const char *suffix,
                      int64_t offset_ns);
/* Number of events recorded. */
uint64_t tern_trace_count(tern_trace *t);
/* Write {"traceEvents": [...]} to `path` (via a temporary file and rename, so
 * a reader never sees half a file). TERN_EIO with a message on failure. */
int tern_trace_write(tern_trace *t, const char *path);

#endif
