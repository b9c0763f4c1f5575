/*
 * steps.h: running a request's steps inside the sandbox.
 *
 * Called by the sandbox's init (pid 1 of its PID namespace, after
 * sandbox_box_enter). Each step's program is a fresh process in its own
 * session with:
 *   - standard input from a memfd holding the step's stdin, standard output
 *     and error (and descriptor 3 with SANDBOX_STEP_RESULT_FD) to pipes that
 *     init reads while it runs, no other descriptors;
 *   - rlimits: CPU, address space, processes, open files, file size, no core
 *     files, no locked memory or message queues;
 *   - no capabilities (bounding set, ambient set and securebits locked so an
 *     exec as uid 0 gains none), no_new_privs, the seccomp filter;
 *   - an environment of PATH, HOME=/box, TMPDIR=/tmp and LANG only.
 * When the main process ends (or a limit is hit) every other process of the
 * sandbox is killed: init may signal them all, being pid 1, and nothing a
 * program started survives into the next step.
 */
#ifndef TERN_SANDBOX_STEPS_H
#define TERN_SANDBOX_STEPS_H

#include <linux/filter.h>

#include "wire.h"

/* Runs req's steps into res (res->steps allocated, n_steps = req->n_steps).
 * `lifeline` is a descriptor that reads end-of-file when the helper outside
 * the sandbox is gone; init then exits, which ends the sandbox. 0, or -1
 * with res->error set when init itself failed (out of memory, no pipes). */
int sandbox_run_steps(const sandbox_request *req, const struct sock_fprog *filter, int lifeline,
                      sandbox_response *res);

#endif /* TERN_SANDBOX_STEPS_H */
