/* env_worker.h: the `python` environment's worker, one long-lived Python
 * process (env_runner.py) holding every live episode, supervised as the
 * exec reward's command is (exec_child.h: its own process group, killed
 * with tern, run in the config's directory, its stderr tern's). One request
 * is in flight at a time; each answer must come within the per-call timeout.
 * A worker that dies, hangs or answers out of step is killed; its
 * generation ends, and with it every episode it held. The next call starts
 * a new one. */
#ifndef TERN_ENV_WORKER_H
#define TERN_ENV_WORKER_H

#include <stddef.h>
#include <stdint.h>

#include "exec_child.h"
#include "tern/environment.h"

enum { ENV_WORKER_ARGS = 8 };

typedef struct env_worker {
    char *argv[ENV_WORKER_ARGS + 1]; /* owned, NULL-terminated */
    char *dir;                       /* where it runs */
    int64_t timeout_ms;              /* per call */
    exec_child child;
    uint64_t generation; /* grows each time a worker is started */
    /* close lines not sent yet: they go out with the next request */
    char *closes;
    size_t closes_len, closes_cap;
    char *tools; /* the ready line's "tools": a JSON array's compact text, or NULL */
} env_worker;

/* Keep argv and dir (copied) and start the worker: 0, or -1 with why[0..n)
 * saying what failed: *started_at_all 0 when the program could not be run
 * (the interpreter), 1 when it ran and refused (the file, the class).
 * env_worker_free() is needed whatever the result. */
int env_worker_open(env_worker *w, const char *const *argv, const char *dir, int64_t timeout_ms,
                    int *started_at_all, char *why, size_t n);

/* Start a worker if none runs: 0, or -1 with why[0..n). */
int env_worker_ensure(env_worker *w, char *why, size_t n);
int env_worker_running(const env_worker *w);

/* Send the pending closes and request[0..n), then read the answer line:
 * TERN_ENV_OK with *line, *len (valid until the next call), or the failure
 * (crash, timeout, garbage: a reply line too long) with why[0..cap) -- the
 * worker was killed and its generation is over. */
uint32_t env_worker_call(env_worker *w, const char *request, size_t n, const char **line,
                         size_t *len, char *why, size_t cap);

/* The worker answered out of step: kill it (its generation is over). */
void env_worker_kill(env_worker *w);

/* Queue the close line of episode `id` of the running generation (dropped
 * when that worker dies first). -1 without memory: the worker then keeps
 * that instance until it ends. */
int env_worker_close_later(env_worker *w, uint64_t id);

/* Ask the worker to finish, then kill it; free everything. */
void env_worker_free(env_worker *w);

#endif
