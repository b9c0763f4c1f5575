/* child_pool.h: many child programs run at once, their output gathered
 * (for workflows: an agent program per trajectory). One poll() loop on the
 * calling thread drives them all; no threads, no signal handlers. */
#ifndef TERN_AGENT_CHILD_POOL_H
#define TERN_AGENT_CHILD_POOL_H

#include <stddef.h>
#include <stdint.h>

/* What is kept of a child's output. */
enum {
    TERN_CHILD_OUT_MAX = 1 << 20, /* bytes of stdout kept; the rest is read and dropped */
    TERN_CHILD_ERR_TAIL = 4096    /* the last bytes of stderr kept */
};

/* One program to run. */
typedef struct tern_child_spec {
    const char *const *argv; /* NULL-ended; argv[0] searched in PATH (posix_spawnp) */
    const char *cwd;         /* directory it runs in (a relative argv[0] with a
                                slash is found from there); NULL: ours */
    const char *const *env;  /* "NAME=value" entries added to our environment,
                                replacing same names (the last of repeated names
                                wins); NULL-ended, or NULL: ours as it is */
    const char *input;       /* written to its stdin, then stdin closed; NULL: /dev/null */
    double timeout_s;        /* wall-clock limit from its start; <= 0: none */
} tern_child_spec;

typedef enum tern_child_outcome {
    TERN_CHILD_EXITED = 1,  /* exited on its own: see exit_code */
    TERN_CHILD_SIGNALED,    /* killed by a signal not ours: see signal */
    TERN_CHILD_TIMED_OUT,   /* we killed it at its timeout */
    TERN_CHILD_CANCELLED,   /* we killed it, or never started it: the pool was cancelled */
    TERN_CHILD_SPAWN_FAILED /* it could not be started: see spawn_errno */
} tern_child_outcome;

typedef struct tern_child_result {
    tern_child_outcome outcome; /* 0 while not ended */
    int exit_code;              /* EXITED: its status */
    int signal;                 /* SIGNALED, TIMED_OUT, CANCELLED (killed): the signal */
    int spawn_errno;            /* SPAWN_FAILED: why (ENOENT: no such program or cwd) */
    char *out;                  /* its stdout, NUL-terminated (it may hold NULs too) */
    size_t out_len;             /* at most TERN_CHILD_OUT_MAX */
    int out_truncated;          /* it wrote more than TERN_CHILD_OUT_MAX bytes */
    char *err_tail;             /* its stderr's last TERN_CHILD_ERR_TAIL bytes, NUL-terminated */
    size_t err_len;
    double seconds;             /* from its start to its end; 0 if never started */
} tern_child_result;

/* Called as soon as child i has ended and its pipes are drained, on the
 * calling thread, before a later child is started in its place. r is
 * results[i], still the caller's to free. */
typedef void (*tern_child_done_fn)(void *user, size_t i, const tern_child_result *r);

/* Run specs[0..n) with at most `concurrency` (>= 1) alive at once, started
 * in index order as places free up; on_done (NULL: none) is called once per
 * child. Each child has its own process group, which is SIGKILLed at its
 * timeout, on cancel, and once it has exited (what it left running in the
 * background goes with it; its pipes get ~100 ms after its exit to reach
 * EOF). When *cancel (NULL: never) becomes nonzero, every running child is
 * killed and those not started are reported CANCELLED without starting;
 * noticed within ~50 ms. A child that cannot be started is a result
 * (SPAWN_FAILED), not a failure.
 *
 * TERN_OK once all have ended, whatever their outcomes: every result has
 * its outcome and non-NULL out and err_tail. A failure status with a message
 * for a failure of our own (TERN_EINVAL for a bad spec, before anything
 * starts; TERN_ENOMEM; TERN_EIO when pipe() or poll() fails), after killing
 * and reaping every child started: the results whose on_done was called are
 * filled, the others zeroed. Either way, tern_child_result_free each of
 * results[0..n).
 *
 * The children inherit no signal mask or ignored signals of ours, and no
 * file descriptor beyond 0-2. The calling thread, on_done included, runs
 * with SIGPIPE blocked (a child closing its stdin early is not our death;
 * the process's disposition is left alone). SIGCHLD must not be ignored,
 * nor our children reaped by anyone else meanwhile. */
int tern_child_pool_run(const tern_child_spec *specs, size_t n, uint32_t concurrency,
                        tern_child_result *results, tern_child_done_fn on_done, void *user,
                        const _Atomic int *cancel);

/* Free r's buffers and zero it; a zeroed result is fine. */
void tern_child_result_free(tern_child_result *r);

#endif
