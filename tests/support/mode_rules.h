/* mode_rules.h: the rules every run of an etc/modes/ config obeys, checked
 * on its trace.json and metrics.jsonl (docs/architecture.md §4, docs/sync.md),
 * in one process or on MPI ranks:
 *   - fixed schedules: batch k is generated with v(k) = I * max(0, floor((k - O) / I))
 *     and step t trains batch t;
 *   - no train step starts before its batch is in the buffer (`put`);
 *   - staleness (step - version of the batch) never exceeds O + I - 1 (fixed)
 *     or max_staleness (asynchronous);
 *   - no explorer waits for weights in the asynchronous modes (a wait for a
 *     batch measures the master's dealing, which pauses while it evaluates);
 *   - every weight sync uses the configured method;
 *   - a step's reward figures are those of its batch alone (every
 *     `reward/<name>.count` is batch_tasks x group_size). */
#ifndef TERN_TEST_MODE_RULES_H
#define TERN_TEST_MODE_RULES_H

#define MODE_STEPS 10

/* What each config in etc/modes/ claims to be. */
typedef struct mode {
    const char *name;
    int fixed;             /* 1: fixed schedule (synchronous, one_step_off) */
    long interval, offset;
    long max_staleness;    /* asynchronous bound, -1 unbounded */
    int explorers;
    const char *method;
} mode;

/* synchronous, one_step_off, fully_async, multi_explorer, interval4_offset0,
 * interval1_offset4 */
extern const mode modes[6];

/* Every RL line of run directory `dir`'s metrics.jsonl reports the reward
 * figures of exactly one batch: 16 tasks x 8 responses in etc/modes/. Returns
 * the number of RL lines. */
int check_reward_counts(const char *what, const char *dir);

/* Run etc/modes/<m->name>.cfg for MODE_STEPS steps (the test fails if it
 * does not exit 0) and check its rules. `ranks` 0: one process; else
 * under `mpirun -np ranks` (TERN_TEST_MPIRUN), where lanes carry " (rank N)"
 * and the memory transport is mpi. */
void check_mode_on(const mode *m, int ranks);

#endif
