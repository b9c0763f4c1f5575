/* ledger.h: which groups of a run the trainer has consumed (taken from the
 * buffer and trained on, or dropped as too stale), kept by the master
 * (docs/run.md "Exactly once"). A group's id is its place in the dealing:
 * batch * batch_tasks + slot, the same in every part of a resumed run. The
 * ledger serves three things:
 *   - a durable buffer forgets a group only once the checkpoint that
 *     includes its consumption is durable: the ids consumed since the last
 *     checkpoint are kept (pending) and written into the next one;
 *   - a resumed run deals again exactly the groups that are neither
 *     consumed by the checkpoint's steps nor held by a durable buffer: the
 *     checkpoint keeps the watermark (every batch below it consumed whole)
 *     and the ids consumed above it;
 *   - the ids a durable buffer held when the run resumed, so their groups
 *     are not put a second time. */
#ifndef TERN_LOOP_LEDGER_H
#define TERN_LOOP_LEDGER_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tern_ledger {
    uint32_t per_batch;  /* groups per batch (explorer.batch_tasks), >= 1 */
    int64_t from;        /* watermark: every group of batches < from is consumed */
    uint8_t *seen;       /* [window * per_batch]: group (from + b, s) consumed */
    size_t window;       /* batches tracked from `from` on */
    uint64_t above;      /* groups consumed in batches >= from */
    uint64_t *pending;   /* ids consumed since the last checkpoint, in order */
    size_t n_pending, cap_pending;
    uint64_t *held;      /* sorted: ids a durable buffer held at the resume */
    size_t n_held;
} tern_ledger;

/* An empty ledger for batches of `per_batch` groups. */
void tern_ledger_init(tern_ledger *l, uint32_t per_batch);
void tern_ledger_free(tern_ledger *l);

static inline uint64_t tern_group_id(int64_t batch, uint32_t slot, uint32_t per_batch)
{
    return (uint64_t)batch * per_batch + slot;
}

/* Mark n ids consumed (again is harmless) and add them to the pending list.
 * TERN_ENOMEM. */
int tern_ledger_consume(tern_ledger *l, const uint64_t *ids, size_t n);
/* The pending ids are committed (a durable buffer forgot them): clear the list. */
static inline void tern_ledger_committed(tern_ledger *l) { l->n_pending = 0; }
/* 1 when group `id` is consumed. */
int tern_ledger_consumed(const tern_ledger *l, uint64_t id);
/* 1 when a durable buffer held group `id` when the run resumed. */
int tern_ledger_held(const tern_ledger *l, uint64_t id);
/* Groups of batches >= from consumed so far. */
static inline uint64_t tern_ledger_above(const tern_ledger *l) { return l->above; }

/* The checkpoint's part: {"from": W, "consumed": [ids >= W*per_batch],
 * "uncommitted": [pending ids]}. NULL when out of memory. */
json_t *tern_ledger_to_json(const tern_ledger *l);
/* Read it back (state.json's "ledger", may be NULL: a checkpoint before any
 * of this, or one of the warm-up: then from = `step`, nothing consumed above
 * it and nothing uncommitted, as a fixed schedule has it). The uncommitted ids
 * come back as pending, for the resume to commit. TERN_EINVAL with a message
 * naming `ckpt` for a malformed one, TERN_ENOMEM. */
int tern_ledger_from_json(tern_ledger *l, const json_t *j, int64_t step, const char *ckpt);
/* Take the ids a durable buffer holds (sorted here; the ledger owns them). */
void tern_ledger_set_held(tern_ledger *l, uint64_t *ids, size_t n);

#endif
