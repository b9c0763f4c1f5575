/* trace_read.h: load a run's trace.json (Chrome trace events, core/src/rundir/trace.c)
 * into the few events `tern timeline` draws, each placed on its lane. */
#ifndef TERN_TIMELINE_TRACE_READ_H
#define TERN_TIMELINE_TRACE_READ_H

#include <stddef.h>

typedef enum tl_kind {
    TL_ROLLOUT, /* an explorer generating one batch (span) */
    TL_TRAIN,   /* the trainer's step on one or more batches (span) */
    TL_SYNC,    /* loading (explorer) or publishing (trainer) weights (span) */
    TL_WAIT,    /* a role waiting (span) */
    TL_PUT,     /* a batch is wholly in the buffer (instant) */
    TL_PUBLISH, /* the trainer published a weight version (instant) */
    TL_SKIP     /* the trainer dropped a batch as too stale (instant) */
} tl_kind;

/* The lane an event is drawn on. */
typedef enum tl_row { TL_ROW_EXPLORER, TL_ROW_BUFFER, TL_ROW_TRAINER } tl_row;

typedef enum tl_method { TL_SYNC_OTHER, TL_SYNC_MEMORY, TL_SYNC_NCCL, TL_SYNC_CHECKPOINT } tl_method;

typedef struct tl_event {
    tl_kind kind;
    tl_row row;
    int explorer;         /* TL_ROW_EXPLORER: the explorer's number ("explorer N") */
    double t0, t1;        /* seconds on the trace's clock; t1 == t0 for an instant */
    long long batch;      /* rollout, put, skip; -1 when not given */
    long long version;    /* rollout, sync, publish, skip; -1 when not given */
    long long step;       /* train; -1 when not given */
    long long *batches;   /* train: the batches it trained on (owned) */
    size_t n_batches;
    tl_method method;     /* sync */
    char what[80];        /* wait: what it waited for ("" when not given) */
    int surplus;          /* skip: a group of a stand-in batch dropped because its step was
                             full (dynamic sampling: "surplus": true), not for staleness */
    double turns;         /* rollout of trajectories (docs/agents.md): the model's turns per
                             trajectory, mean over the batch ("turns"); 0 when not given */
    long long max_turn;   /* and the most turns one had ("max_turn"); 0 when not given */
} tl_event;

typedef struct tl_trace {
    tl_event *ev;         /* the drawable events, in file order */
    size_t n_ev;
    int *explorers;       /* explorer numbers with a lane, ascending */
    size_t n_explorers;
    double t_first, t_last; /* the span of the drawable events, in seconds */
} tl_trace;

/* Read `path` into *t (zeroed first). TERN_OK; TERN_EINVAL for a file that
 * cannot be read or is not a trace (the message says what, where and how to
 * fix, starting with the path); TERN_ENOMEM. A trace with no drawable event
 * is TERN_EINVAL too. On failure *t holds nothing to free. */
int tl_trace_load(const char *path, tl_trace *t);
void tl_trace_free(tl_trace *t);

/* The slot (0..n_explorers-1) of explorer number `explorer`, or -1. */
int tl_explorer_slot(const tl_trace *t, int explorer);

#endif
