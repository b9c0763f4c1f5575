/* weights.h: moving weights between model instances, and the store the
 * trainer publishes versions to (a front over one transport, transport.h).
 *
 * A snapshot is a copy of every named tensor of a model (tensors() op), taken
 * from one instance and written into another of the same shape. The store
 * holds published snapshots by version: an explorer waits for the version its
 * sync plan names (or takes the newest), and versions nobody can ask for any
 * more are freed. */
#ifndef TERN_LOOP_WEIGHTS_H
#define TERN_LOOP_WEIGHTS_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "tern/model.h"
#include "rundir/trace.h"

typedef struct tern_snapshot tern_snapshot;

/* Copy the tensors t[0..n) (a model's) as weight version `version`. NULL
 * with a message on failure. */
tern_snapshot *tern_snapshot_take(const tern_tensor *t, size_t n, int64_t version);
/* Write the snapshot into the tensors t[0..n), which must match it in
 * number, names and sizes (TERN_EINVAL with a message naming the first
 * difference). */
int tern_snapshot_apply(const tern_snapshot *s, const tern_tensor *t, size_t n);
/* take and apply on a model's tensors (through the model proxy). */
tern_snapshot *tern_snapshot_of(const tern_model *m, int64_t version);
int tern_snapshot_into(const tern_snapshot *s, const tern_model *m);
/* The snapshot's tensors (valid until it is freed or retaken). */
void tern_snapshot_tensors(const tern_snapshot *s, const tern_tensor **t, size_t *n);
int64_t tern_snapshot_version(const tern_snapshot *s);
/* The snapshot's bytes: its tensors' data, one after another in their order
 * (what a broadcast sends); *bytes their count. */
unsigned char *tern_snapshot_data(const tern_snapshot *s, size_t *bytes);
void tern_snapshot_free(tern_snapshot *s);

/* Copy the tensors t[0..n) as `version` into *s, reusing its memory when the
 * layout is the same (no allocation: how publishers recycle snapshots), else
 * into a new snapshot (*s NULL: always new). On failure *s is freed and NULL
 * and the status returned with a message. */
int tern_snapshot_retake(tern_snapshot **s, const tern_tensor *t, size_t n, int64_t version);

/* Copy the weights of one instance into another (take + apply). */
int tern_weights_copy(const tern_model *from, const tern_model *to);

typedef struct tern_weight_store tern_weight_store;

/* A store over the transport `method` ("memory", or "checkpoint" with its
 * files in `dir`; transport.h). `trace` (may be NULL) gets a `publish`
 * instant on the "trainer" lane when a version becomes loadable. A
 * checkpoint store writes on a thread of its own: publish returns once the
 * weights are copied (a failed write is returned by the next publish or
 * flush). NULL with a message on failure. */
tern_weight_store *tern_weights_open(const char *method, const char *dir, tern_trace *trace);
/* A store over a transport made elsewhere (channel/transport_mpi.c): `ops`
 * with its instance `impl`, which the store now owns (destroyed by
 * tern_weights_free, or at once on failure). `writer`: publish returns once
 * the weights are copied and a thread of the store hands them to the
 * transport (for a slow publish). NULL with a message on failure. */
struct tern_store_transport;
tern_weight_store *tern_weights_open_transport(const struct tern_store_transport *ops, void *impl,
                                               int writer, tern_trace *trace);
/* Wait until every published version is loadable (a no-op for memory). */
int tern_weights_flush(tern_weight_store *w);
/* tern_weights_open("memory", NULL, NULL). */
tern_weight_store *tern_weights_new(void);
/* The store's method name. */
const char *tern_weights_method(const tern_weight_store *w);
void tern_weights_free(tern_weight_store *w);
/* Publish `model`'s weights as `version` (versions only grow). */
int tern_weights_publish(tern_weight_store *w, const tern_model *m, int64_t version);
/* Load a published version into `model`: `version` >= 0 waits until exactly
 * that version is published; -1 takes the newest (waiting for a first one).
 * *loaded gets the version loaded; *waited_ns the time spent waiting.
 * TERN_ECLOSED once the store is closed; TERN_EINVAL if `version` was
 * forgotten already. */
int tern_weights_load(tern_weight_store *w, const tern_model *m, int64_t version, int64_t *loaded,
                      uint64_t *waited_ns);
/* Free the versions older than `version` (nobody will ask for them). */
void tern_weights_forget_before(tern_weight_store *w, int64_t version);
/* The newest published version, -1 if none. */
int64_t tern_weights_newest(tern_weight_store *w);
/* Wake every waiter with TERN_ECLOSED (shutdown). */
void tern_weights_close(tern_weight_store *w);

#endif
