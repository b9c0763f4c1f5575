/* master.h: `tern run`'s learning loop (docs/architecture.md §2, §4, §5): the master
 * role sets up the run (data, plugins, model instances, run directory),
 * starts the explorer and trainer threads, routes rewards, writes metrics,
 * evaluations, checkpoints and the summary, and handles the stop signals. */
#ifndef TERN_LOOP_MASTER_H
#define TERN_LOOP_MASTER_H

#include <stdio.h>

#include "config/diag.h"
#include "host/session.h"

typedef struct tern_loop_options {
    int resume;         /* continue the run directory out_dir/name from its newest checkpoint */
    FILE *out;          /* the run directory's path is printed here at the end */
    /* catch SIGINT, SIGTERM, SIGHUP and SIGUSR1 for the run's duration: the first
     * stops the run after the step in progress, with a checkpoint; a second
     * writes summary.json and trace.json and ends the process by that signal
     * (the roles cannot be waited for, so tern_loop_run cannot return) */
    int handle_signals;
    int *stop_signal;   /* out, if not NULL: the signal behind TERN_EINTR, else 0 */
    /* out, if not NULL: the run directory's lock (a descriptor, -1 for none),
     * for the caller to pass to tern_rundir_unlock once it has closed log.txt
     * and the plugins; NULL: released before tern_loop_run returns */
    int *dir_lock;
} tern_loop_options;

/* Run the started session `s`. Config problems go to `d` (TERN_ECONFIG);
 * other failures return their status with tern_error_message() set;
 * TERN_EINTR after a stop signal (the checkpoint is written). */
int tern_loop_run(tern_session *s, const tern_loop_options *o, tern_diag *d);

#endif
