/* transport.h: how published weights travel from the trainer to the
 * explorers (docs/architecture.md §4, the sync section's `method`). One small vtable so
 * that NCCL and MPI slot in later; the weight store (weights.h) is a thin
 * front over one of these.
 *
 *   memory      host snapshots shared by the threads of one process
 *               (transport_memory.c)
 *   checkpoint  safetensors files in a directory, written to a temporary
 *               name, fsync'd and renamed, with a version file naming the
 *               newest; readers in any process never see a partial file
 *               (transport_checkpoint.c)
 *
 * Versions are the trainer's weight versions (steps applied); they only grow.
 * Every op is thread-safe: one trainer publishes while explorers load. */
#ifndef TERN_LOOP_TRANSPORT_H
#define TERN_LOOP_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "tern/model.h"

typedef struct tern_store_transport {
    const char *method; /* "memory", "checkpoint", "mpi", or a transport plugin's name */
    /* 1: publish and load take a model's device tensors (tern_model_device_tensors,
     * a transport plugin's), and a load is followed by device_tensors_written;
     * 0: its host tensors (tensors()) */
    int device;

    /* Make `version` of the weights t[0..n) (a model's tensors, or a
     * snapshot's) available to loaders. TERN_EINVAL if version <= the newest
     * published. */
    int (*publish)(void *impl, const tern_tensor *t, size_t n, int64_t version);

    /* Write a published version into the tensors t[0..n) (a model's: same
     * names, dtypes and sizes, else TERN_EINVAL naming the first difference).
     *   version >= 0: wait until exactly that version is published;
     *   version == -1: take the newest, waiting only while none exists.
     * *loaded: the version written; *waited_ns: time spent waiting for it to
     * be published (not the copy). TERN_ECLOSED once closed; TERN_EINVAL if
     * the version was forgotten; TERN_EIO (or TERN_EINVAL for a corrupt file) for an unreadable
     * checkpoint, with the file named. */
    int (*load)(void *impl, const tern_tensor *t, size_t n, int64_t version, int64_t *loaded,
                uint64_t *waited_ns);

    /* Free the versions older than `version`; the newest is always kept. */
    void (*forget_before)(void *impl, int64_t version);

    /* The newest published version, -1 if none. */
    int64_t (*newest)(void *impl);

    /* Wake every waiting load() with TERN_ECLOSED; later loads fail the same. */
    void (*close)(void *impl);

    void (*destroy)(void *impl);
} tern_store_transport;

/* transport_memory.c */
extern const tern_store_transport tern_transport_memory;
/* NULL with a message on failure. */
void *tern_transport_memory_new(void);

/* transport_checkpoint.c: files live in `dir` (created if missing, with
 * parents); `dir` is copied. NULL with a message on failure. */
extern const tern_store_transport tern_transport_checkpoint;
void *tern_transport_checkpoint_new(const char *dir);

#endif
