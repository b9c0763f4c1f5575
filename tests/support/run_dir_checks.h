/* run_dir_checks.h: checks of a finished run's directory shared by the
 * end-to-end tests (Criterion assertions). */
#ifndef TERN_TEST_RUN_DIR_CHECKS_H
#define TERN_TEST_RUN_DIR_CHECKS_H

/* metrics.jsonl of run directory `dir` has each RL step 1..steps exactly
 * once, and no batch is trained twice (a stopped or killed run, resumed). */
void check_steps_once(const char *dir, int steps);

#endif
