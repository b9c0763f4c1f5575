/* run_dir_checks.h: checks of a finished run's directory shared by the
 * end-to-end tests (Criterion assertions). */
#ifndef TERN_TEST_RUN_DIR_CHECKS_H
#define TERN_TEST_RUN_DIR_CHECKS_H

/* metrics.jsonl of run directory `dir` has each RL step 1..steps exactly
 * once, and no batch is trained twice (a stopped or killed run, resumed). */
void check_steps_once(const char *dir, int steps);

/* 1 for a metrics.jsonl key that measures time, not learning, and differs
 * between any two runs of one config: waits, rates per second, the
 * evaluation's seconds, and buffer_size (whether the next batch's rollout
 * reaches the master before the step's report does is a race; on MPI ranks
 * they come from two processes). */
int is_timing_figure(const char *key);

#endif
