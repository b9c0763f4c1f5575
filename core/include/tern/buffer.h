/*
 * tern/buffer.h: the ops table of an experience buffer plugin (TERN_KIND_BUFFER).
 *
 * A buffer moves records between the master (producer: finished, rewarded
 * experiences) and the trainer (consumer). To a buffer a record is an opaque
 * byte string (the core's versioned experience encoding) plus a small metadata
 * struct it may use for its policy (ordering, priority, staleness). The buffer
 * copies what it is given; it never keeps the caller's pointers.
 *
 * Blocking: `timeout_ms` < 0 waits without limit, 0 never waits, > 0 waits at
 * most that many milliseconds and then returns TERN_ETIMEDOUT.
 *
 * Thread-safety: put, get, release, close and stats may be called concurrently
 * from many threads on one instance (a buffer must declare TERN_CAP_THREAD_SAFE);
 * create and destroy are called once, with no other call in flight.
 */
#ifndef TERN_BUFFER_H
#define TERN_BUFFER_H

#include <stddef.h>
#include <stdint.h>

#include "abi.h"
#include "host.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the producer says about a record, beside its bytes. */
typedef struct tern_record_meta {
    size_t size;     /* sizeof(tern_record_meta) as built by the caller */
    uint64_t id;     /* unique per run, assigned by the producer */
    int64_t version; /* weight version that generated the experience (>= 0) */
    int64_t batch;   /* explorer batch index k it belongs to (>= 0) */
} tern_record_meta;

/* One record handed out by get(). `data` is owned by the buffer until the
 * caller passes the record back to release(). */
typedef struct tern_record {
    size_t size;           /* set by the caller to sizeof(tern_record) before get() */
    tern_record_meta meta; /* as given to put() (meta.size as the buffer stores it) */
    const void *data;      /* the record's bytes */
    size_t len;            /* their count */
    uint32_t use_count;    /* times handed out before this one (replay buffers) */
} tern_record;

/* Counters for metrics and `tern check`. */
typedef struct tern_buffer_stats {
    size_t size;        /* set by the caller to sizeof(tern_buffer_stats) */
    uint64_t held;      /* records currently held */
    uint64_t capacity;  /* most records held at once (0: unbounded) */
    uint64_t put;       /* records accepted since create */
    uint64_t got;       /* records handed out since create (with repeats) */
    uint64_t dropped;   /* records discarded by the full-buffer policy */
    uint64_t skipped;   /* records discarded as too stale */
} tern_buffer_stats;

typedef struct tern_buffer_ops {
    size_t size; /* sizeof(tern_buffer_ops) as built */

    /* Make an instance from the settings in ctx (read with host->get_*).
     * On failure returns a status after host->fail(); *state is then unused. */
    int (*create)(tern_ctx *ctx, void **state);
    /* Free everything. No other call is in flight or will follow. */
    void (*destroy)(void *state);

    /* Store a copy of `len` bytes at `data` with `meta`. Blocks while the
     * buffer is full if its policy says so. TERN_OK, TERN_ETIMEDOUT,
     * TERN_ECLOSED (after close), TERN_ENOMEM, TERN_EINVAL. */
    int (*put)(void *state, const void *data, size_t len, const tern_record_meta *meta,
               int64_t timeout_ms);

    /* Hand out up to `want` records into out[0..*got). Waits until at least
     * one is available (or the timeout), then returns what is there, at most
     * `want`. After close, returns what is left, then TERN_ECLOSED with *got 0.
     * Each out[i].size must be set by the caller. */
    int (*get)(void *state, tern_record *out, size_t want, size_t *got, int64_t timeout_ms);

    /* Give back records from get() so the buffer can free (or requeue) them. */
    void (*release)(void *state, tern_record *recs, size_t n);

    /* Stop accepting puts and wake every waiter: blocked puts return
     * TERN_ECLOSED, gets drain what is held and then return TERN_ECLOSED. */
    void (*close)(void *state);

    /* Fill the counters (out->size set by the caller). */
    int (*stats)(void *state, tern_buffer_stats *out);

    /* ---- ABI minor 2 ---- */

    /* Optional (NULL: the buffer has no use for it). The consumer's weight
     * version is now `version` (the trainer calls it after each publish). A
     * buffer that skips stale records measures a record's age from the larger
     * of this and the newest meta.version put so far. */
    void (*advance)(void *state, int64_t version);

    /* ---- ABI minor 6: durable buffers, exactly-once consumption ---- */

    /* Optional (NULL: a record is gone once get() hands it out, or, for a
     * replay buffer, after its last use). A buffer that sets it keeps every
     * record get() hands out in its store -- never handed out again, to any
     * consumer, yet not gone -- until commit names it: the consumer commits
     * only once its own progress is durable (`tern run`: once the checkpoint
     * that includes the training on it is written), so a crash in between
     * loses nothing. Forget for good the records with these `n` ids
     * (meta.id), handed out or not; ids it does not hold are ignored (a
     * commit repeated after a crash is harmless). TERN_OK, or a status with
     * a message (then none of them is forgotten). */
    int (*commit)(void *state, const uint64_t *ids, size_t n);

    /* Optional, and only with commit. For the one consumer that takes over
     * from a dead one (a resumed run, which holds its run directory's lock):
     * every record handed out and never committed becomes waiting again,
     * in its original place in the hand-out order; then the ids of every
     * record held are written to ids[0 .. min(*n, cap)) in hand-out order and
     * *n is set to how many there are (call again with a larger array when
     * *n > cap; the second call finds nothing more to hand back). TERN_OK, or
     * a status with a message (nothing changed). Never call it while another
     * consumer of the same store may be working. */
    int (*recover)(void *state, uint64_t *ids, size_t cap, size_t *n);
} tern_buffer_ops;

#ifdef __cplusplus
}
#endif
#endif /* TERN_BUFFER_H */
