/*
 * tern/transport.h: the ops table of a weight transport plugin
 * (TERN_KIND_TRANSPORT, ABI 1.8): a way for published weights to travel from
 * the trainer rank to the explorer ranks of a run on MPI ranks that the core
 * does not build in. The core's own transports are `memory`, `checkpoint` and
 * `mpi` (docs/sync.md); a plugin adds one under its name, chosen with
 *
 *     sync = { plugin = "synchronous"; method = "nccl"; };
 *     transport = { plugin = "nccl"; timeout_s = 300; bucket_mb = 64; };
 *
 * so the core never links what the transport needs (CUDA, NCCL). A plugin
 * transport moves a model's device tensors (tern_model_ops.device_tensors):
 * from the trainer's accelerator to the explorers' without a host copy.
 *
 * Life of an instance, on every rank of the job:
 *   create   at session start: read the settings, touch no device
 *   connect  on the trainer rank (the sender) and each explorer rank (a
 *            receiver), in the same order: join the group (a collective)
 *   sender:   publish each version, then finish (the end of the stream)
 *   receiver: a thread of the core loops on receive; explorers copy_out a
 *            received version into their model; release frees old ones
 *   cancel   from any thread, to end blocked calls when the run stops
 *   destroy
 * Every call may block; none may hang: a peer that does not answer within
 * the plugin's timeout ends the call with TERN_ETIMEDOUT and a message.
 */
#ifndef TERN_TRANSPORT_H
#define TERN_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "abi.h"
#include "host.h"
#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* tern_transport_group.role */
typedef enum tern_transport_role {
    TERN_TRANSPORT_SENDER = 1,  /* the trainer rank: publishes */
    TERN_TRANSPORT_RECEIVER = 2 /* an explorer rank: receives */
} tern_transport_role;

/* Where this rank stands in the group connect() joins. Owned by the core,
 * valid during connect() only (copy what is needed). */
typedef struct tern_transport_group {
    size_t size;      /* set by the core to sizeof(tern_transport_group) */
    uint32_t role;    /* a tern_transport_role */
    int32_t rank;     /* this rank's index in the group: the sender is 0 */
    int32_t n_ranks;  /* the sender and every receiver, >= 2 */
    int32_t device;   /* the accelerator ordinal of this rank's models, as their
                         device_tensors op reports it (CUDA: the device) */
    /* Broadcast `bytes` bytes of `buf` from the sender to every receiver over
     * the core's own channel (MPI): for the plugin's bootstrap, such as NCCL's
     * unique id. A blocking collective of the group: every member calls it in
     * the same order, from connect() only. TERN_OK, or a status with a message
     * (a peer rank is gone). */
    int (*bootstrap_bcast)(void *user, void *buf, size_t bytes);
    void *user; /* passed to bootstrap_bcast */
} tern_transport_group;

typedef struct tern_transport_ops {
    size_t size; /* sizeof(tern_transport_ops) as built */

    /* Read the settings (host->get_*) and make an instance. No device work:
     * every rank of a job creates one, ranks without an accelerator too. */
    int (*create)(tern_ctx *ctx, void **state);
    void (*destroy)(void *state);

    /* Join the group (the trainer rank and the explorer ranks, each once).
     * TERN_ETIMEDOUT when the group does not form in time; TERN_ERR with the
     * reason (no such device, two ranks on one device where the transport
     * cannot do that, a peer failed). */
    int (*connect)(void *state, const tern_transport_group *group);

    /* Sender: send the tensors t[0..n) (device tensors on group->device, a
     * model's device_tensors()) as `version` (versions only grow). Returns
     * once t may change again: the plugin has copied them into its own
     * buffers; the sending may go on after it returns, and the next publish
     * or finish waits for it. TERN_ETIMEDOUT (a receiver is gone), TERN_EINVAL
     * for a layout unlike the first publish's. */
    int (*publish)(void *state, const tern_tensor *t, size_t n, int64_t version);
    /* Sender: the last version was published; receivers' receive() returns
     * TERN_ECLOSED. Waits for sends in flight. */
    int (*finish)(void *state);

    /* Receiver: wait for the next version and keep it in the plugin's own
     * (device) memory until release(); *version is it. TERN_ECLOSED once the
     * sender finished or cancel() was called; TERN_ETIMEDOUT when a started
     * transfer stalls. Called by one thread of the core, in a loop. */
    int (*receive)(void *state, int64_t *version);
    /* Receiver: copy a received, unreleased version into the tensors t[0..n)
     * (an explorer model's device_tensors(), laid out as the sender's: same
     * count, names and sizes, else TERN_EINVAL naming the first difference).
     * The copy is complete when it returns. Safe to call while receive()
     * waits, from explorer threads (the plugin serialises as it needs).
     * TERN_EINVAL for a version not held. */
    int (*copy_out)(void *state, int64_t version, const tern_tensor *t, size_t n);
    /* Receiver: no version older than `version` will be asked for again. */
    void (*release)(void *state, int64_t version);

    /* Make blocked and later connect/publish/receive calls return
     * TERN_ECLOSED soon: the run is ending. Any thread. */
    void (*cancel)(void *state);

    /* ---- optional (NULL): gradients of data-parallel trainer ranks ---- */

    /* Join the trainer ranks' group (ranks.trainers > 1): every trainer rank
     * calls it once, at the same point; group->rank 0 is the leading
     * trainer, bootstrap_bcast broadcasts from it to the other trainer
     * ranks, group->role is TERN_TRANSPORT_SENDER on the leader and
     * TERN_TRANSPORT_RECEIVER on the others. Errors as connect(). */
    int (*join_trainers)(void *state, const tern_transport_group *group);
    /* In place, over the trainer ranks: each tensor of t[0..n) (float32
     * device tensors on group->device, a model's device_gradients) becomes
     * the sum of every rank's, the same bits on every rank. A collective:
     * every trainer rank calls it in the same order. Returns once the sums
     * are in t. TERN_ETIMEDOUT (a trainer rank is gone), TERN_ECLOSED after
     * cancel. */
    int (*sum)(void *state, const tern_tensor *t, size_t n);
} tern_transport_ops;

#ifdef __cplusplus
}
#endif

#endif
