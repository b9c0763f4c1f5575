/*
 * pool.h: running many sandboxes at once.
 *
 * Each run is one tern-sandbox process (sandbox/main.c), started with
 * posix_spawn (a vfork underneath, so starting one costs the same however
 * much memory tern holds) with its request in a memfd on standard input and
 * its response to a memfd on standard output. A pool lets at most `slots`
 * of them run at a time, across every thread that calls it, so a batch
 * overlaps its runs and two batches scored at once share the same limit.
 *
 * A helper that does not finish within its request's time plus a margin is
 * killed (and its sandbox with it: its init dies with it); that run's
 * response then carries the error.
 */
#ifndef TERN_CODE_POOL_H
#define TERN_CODE_POOL_H

#include <stddef.h>

#include "sandbox/wire.h"

typedef struct sandbox_pool sandbox_pool;

/* A pool running `helper` (the path of tern-sandbox), `slots` at a time.
 * NULL out of memory. The helper is not checked here: sandbox_pool_check. */
sandbox_pool *sandbox_pool_create(const char *helper, unsigned slots);
void sandbox_pool_destroy(sandbox_pool *pool);

/* Runs reqs[0..n) into res[0..n). Every res[i] is set: the helper's
 * response, or an empty one with `error` saying why there is none (the
 * helper could not start, died, timed out or answered badly). 0, or -1 with
 * why (cap >= 120) when this process could not run anything (out of memory,
 * no memfds); res[] is then all set with that error too. Thread-safe. */
int sandbox_pool_run(sandbox_pool *pool, const sandbox_request *const *reqs,
                     sandbox_response *res, size_t n, char *why, size_t why_cap);

/* Runs `true` in a sandbox: 0 when that works, else -1 with why (cap >=
 * 256): the helper's own message, which says what to fix. */
int sandbox_pool_check(sandbox_pool *pool, char *why, size_t why_cap);

#endif /* TERN_CODE_POOL_H */
