/* decode_queue.h: the requests `tern serve` has taken, decoded together on
 * the model's thread (docs/serve.md, "Batching").
 *
 * HTTP threads push jobs; the thread that owns the model runs
 * tern_serve_queue_run, which takes every queued job (up to max_samples
 * choices), encodes their prompts, and decodes them in one generate() call,
 * whose continuous batching interleaves them: a short answer frees its slot
 * for a queued prompt of the same call. Jobs that arrive meanwhile wait for
 * the next call. Tokens reach a stream as they are drawn (tern/model.h,
 * on_token), and a job whose client went away stops decoding. */
#ifndef TERN_SERVE_DECODE_QUEUE_H
#define TERN_SERVE_DECODE_QUEUE_H

#include <signal.h>
#include <stdint.h>

#include "model/model.h"
#include "serve/serve_job.h"

typedef struct tern_serve_queue tern_serve_queue;

/* A queue decoding at most
 * max_samples choices in one call; `seed` seeds requests that give none.
 * NULL when out of memory. */
tern_serve_queue *tern_serve_queue_new(const tern_serve_limits *lim, uint32_t max_samples,
                                       uint64_t seed);
/* HTTP thread: queue j (taking a reference). 0, or -1 when the server is
 * stopping (the job is then untouched). */
int tern_serve_queue_push(tern_serve_queue *q, tern_serve_job *j);
/* Model thread: serve model m (its special tokens: the end of a turn, the
 * context). TERN_OK, or the model's failure. */
int tern_serve_queue_open(tern_serve_queue *q, const tern_model *m);
/* The model's context in tokens (0: it does not say); after open. */
int32_t tern_serve_queue_context(const tern_serve_queue *q);
/* Model thread, after open: decode queued jobs until *stop is set, then fail
 * what is still queued or decoding ("the server is shutting down", 503) and
 * refuse new pushes. TERN_OK. */
int tern_serve_queue_run(tern_serve_queue *q, volatile sig_atomic_t *stop);
/* Fail what is queued (503) and refuse new pushes: run does it when it
 * returns; a server that never ran does it before its HTTP threads end. */
void tern_serve_queue_drain(tern_serve_queue *q);
/* Any thread: run returns soon, as if *stop were set. */
void tern_serve_queue_close(tern_serve_queue *q);
/* Free q (after run returned, or when it never ran: queued jobs fail 503). */
void tern_serve_queue_free(tern_serve_queue *q);

#endif
