/* master.h: `tern run`'s learning loop (docs/architecture.md §2, §4, §5): the master
 * role sets up the run (data, plugins, model instances, run directory),
 * starts the explorer and trainer threads, routes rewards, writes metrics,
 * evaluations, checkpoints and the summary, and handles SIGINT. */
#ifndef TERN_LOOP_MASTER_H
#define TERN_LOOP_MASTER_H

#include <stdio.h>

#include "config/diag.h"
#include "host/session.h"

typedef struct tern_loop_options {
    int resume;         /* continue the run directory out_dir/name from its newest checkpoint */
    FILE *out;          /* the run directory's path is printed here at the end */
    int handle_sigint;  /* install a SIGINT handler for the run's duration */
} tern_loop_options;

/* Run the started session `s`. Config problems go to `d` (TERN_ECONFIG);
 * other failures return their status with tern_error_message() set;
 * TERN_EINTR after a SIGINT (the checkpoint is written). */
int tern_loop_run(tern_session *s, const tern_loop_options *o, tern_diag *d);

#endif
