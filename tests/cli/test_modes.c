/* test_modes.c: every config in etc/modes/, shortened, runs, and its
 * trace.json obeys the rules of its sync mode (docs/architecture.md §4, docs/sync.md):
 *   - fixed schedules: batch k is generated with v(k) = I * max(0, floor((k - O) / I))
 *     and step t trains batch t;
 *   - no train step starts before its batch is in the buffer (`put`);
 *   - staleness (step - version of the batch) never exceeds O + I - 1 (fixed)
 *     or max_staleness (asynchronous);
 *   - no explorer waits for the trainer in the asynchronous modes, and with
 *     max_staleness none of their groups is skipped (explorers held back);
 *   - every weight sync uses the configured method;
 *   - a step's reward figures are those of its batch alone (every
 *     `reward/<name>.count` is batch_tasks x group_size).
 * The rules live in tests/support/mode_rules.c (test_ranks checks them on
 * MPI ranks). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command.h"
#include "run_dir_checks.h"
#include "mode_rules.h"

#define TERN TERN_TEST_BIN
#define SRC TERN_TEST_SOURCE_DIR
#define WORK TERN_TEST_WORK_DIR

Test(modes, synchronous) { check_mode_on(&modes[0], 0); }
Test(modes, one_step_off) { check_mode_on(&modes[1], 0); }
Test(modes, fully_async) { check_mode_on(&modes[2], 0); }
Test(modes, multi_explorer) { check_mode_on(&modes[3], 0); }
Test(modes, interval4_offset0) { check_mode_on(&modes[4], 0); }
Test(modes, interval1_offset4) { check_mode_on(&modes[5], 0); }

/* A synchronous run that saves a checkpoint every step while two busy loops
 * load the machine: the explorer's next batch is rewarded while the trainer
 * is still saving, and the step's line must not count it (issue 31 item 5:
 * a shared metrics store gave 256 for 128). */
Test(modes, saving_every_step_under_load_counts_one_batch)
{
    result r;
    run(&r, "cd %s && rm -rf modes_test/loaded && "
            "{ timeout 120 sh -c 'while :; do :; done' & a=$!; "
            "timeout 120 sh -c 'while :; do :; done' & b=$!; "
            "%s run %s/etc/modes/synchronous.cfg -o 'run.out_dir=\"modes_test\"' "
            "-o run.name='\"loaded\"' -o trainer.steps=8 -o trainer.sft.steps=0 "
            "-o eval.every=0 -o eval.limit=8 -o trainer.save_every=1; rc=$?; "
            "kill $a $b 2>/dev/null; wait $a $b 2>/dev/null; exit $rc; }",
        WORK, TERN, SRC);
    cr_assert_eq(r.code, 0, "exit %d\n%s", r.code, r.err);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/modes_test/loaded", WORK);
    cr_expect_eq(check_reward_counts("saving every step", dir), 8);
}

/* An asynchronous run stopped with ^C resumes from its checkpoint: every
 * step from 1 to the end is in metrics.jsonl exactly once, no batch is
 * trained twice, and the run directory's weights/ is started afresh. */
Test(modes, fully_async_stops_and_resumes)
{
    const char *opts = "-o 'run.out_dir=\"modes_test\"' -o run.name='\"async_resume\"' "
                       "-o trainer.steps=30 -o trainer.sft.steps=0 -o eval.every=0 "
                       "-o eval.limit=8 -o trainer.save_every=5";
    result r;
    run(&r, "cd %s && rm -rf modes_test/async_resume && { %s run %s/etc/modes/fully_async.cfg "
            "%s & pid=$!; while kill -0 $pid 2>/dev/null && ! grep -q '\"stage\":\"rl\",\"step\":8,' "
            "modes_test/async_resume/metrics.jsonl 2>/dev/null; do sleep 0.02; done; "
            "kill -INT $pid; wait $pid; echo \"exit $?\"; }",
        WORK, TERN, SRC, opts);
    cr_assert(strstr(r.out, "exit 130"), "interrupted run exits 130: %s\n%s", r.out, r.err);
    run(&r, "cd %s && %s run %s/etc/modes/fully_async.cfg %s --resume", WORK, TERN, SRC, opts);
    cr_assert_eq(r.code, 0, "resume: %s", r.err);

    char dir[1024];
    snprintf(dir, sizeof dir, "%s/modes_test/async_resume", WORK);
    check_steps_once(dir, 30);
}
