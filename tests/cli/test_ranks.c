/* test_ranks.c: a run across MPI ranks (docs/distributed.md), launched as a
 * user launches it, `mpirun -np N tern run CONFIG`:
 *   - a synchronous run on 3 ranks writes exactly the metrics.jsonl of the
 *     same run in one process (every figure but the timings), and so does
 *     one on 5 ranks whose 2 reward-worker ranks score the responses in
 *     their own isolated workers;
 *   - (every etc/modes/ config obeys its sync rules on ranks:
 *     test_ranks_modes.c, a test of its own so ctest runs it beside this);
 *   - a layout that does not fit the ranks launched, or a rank launched with
 *     other settings than the master's, is refused before anything is
 *     created;
 *   - a stop signal at mpirun, or a killed rank, then --resume: every step
 *     and every batch once.
 * Skipped, with the reason, in a build without MPI. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "command.h"
#include "run_dir_checks.h"

#define TERN TERN_TEST_BIN
#define SRC TERN_TEST_SOURCE_DIR
#define MPIRUN test_mpirun()

/* Every figure of two metrics.jsonl files is the same, but the timings. */
static void expect_same_metrics(const char *a_path, const char *b_path, const char *what)
{
    json_t *a = json_lines(a_path, NULL), *b = json_lines(b_path, NULL);
    cr_assert_eq(json_array_size(a), json_array_size(b), "%zu lines in one process, %zu %s",
                 json_array_size(a), json_array_size(b), what);
    cr_expect_gt(json_array_size(a), 8 + 40);
    size_t i, compared = 0;
    json_t *x;
    json_array_foreach(a, i, x) {
        json_t *y = json_array_get(b, i);
        const char *key;
        json_t *v;
        cr_expect_eq(json_object_size(x), json_object_size(y), "line %zu: keys differ", i + 1);
        json_object_foreach(x, key, v) {
            if (is_timing_figure(key))
                continue;
            json_t *w = json_object_get(y, key);
            char *vs = json_dumps(v, JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
            char *ws = w ? json_dumps(w, JSON_ENCODE_ANY | JSON_REAL_PRECISION(17)) : NULL;
            cr_expect(ws && strcmp(vs, ws) == 0, "line %zu, %s: %s in one process, %s %s",
                      i + 1, key, vs, ws ? ws : "(missing)", what);
            free(vs);
            free(ws);
            compared++;
        }
    }
    cr_expect_gt(compared, 300);
    json_decref(a);
    json_decref(b);
}

/* The same run in one process, on 3 ranks, and on 5 with 2 reward-worker
 * ranks scoring in their own isolated workers: the same figures. */
Test(ranks, synchronous_on_3_ranks_writes_the_threaded_metrics)
{
    test_need_mpi();
    const char *work = test_work_dir();
    /* the quickstart's weight decay off: after a 40-step warm-up with it every
     * answer is wrong, and dynamic sampling then draws batch after batch */
    const char *opts = "-o 'run.out_dir=\"ranks_test\"' -o trainer.steps=8 "
                       "-o trainer.sft.steps=40 -o eval.every=4 -o eval.limit=40 "
                       "-o trainer.save_every=4 -o model.threads=1 -o trainer.weight_decay=0";
    result r;
    run(&r, "cd %s && rm -rf ranks_test data && %s data arith data > /dev/null && "
            "cp %s/etc/quickstart.cfg q.cfg && "
            "%s run q.cfg %s -o run.name='\"threaded\"' > /dev/null",
        work, TERN, SRC, TERN, opts);
    cr_assert_eq(r.code, 0, "threaded: exit %d\n%s", r.code, r.err);
    run(&r, "cd %s && %s -np 3 %s run q.cfg %s -o run.name='\"ranks\"' > /dev/null", work,
        MPIRUN, TERN, opts);
    cr_assert_eq(r.code, 0, "on 3 ranks: exit %d\n%s", r.code, r.err);
    run(&r, "cd %s && sed 's|plugin = \"math\"; weight = 1.0;|plugin = \"math\"; weight = 1.0; "
            "isolate = true;|' q.cfg > qi.cfg && grep -q 'isolate = true' qi.cfg && "
            "%s -np 5 %s run qi.cfg %s -o ranks.rewards=2 -o run.name='\"rewards\"' > /dev/null",
        work, MPIRUN, TERN, opts);
    cr_assert_eq(r.code, 0, "on 5 ranks, 2 of them reward ranks: exit %d\n%s", r.code, r.err);

    char a_path[1024], b_path[1024];
    snprintf(a_path, sizeof a_path, "%s/ranks_test/threaded/metrics.jsonl", work);
    snprintf(b_path, sizeof b_path, "%s/ranks_test/ranks/metrics.jsonl", work);
    expect_same_metrics(a_path, b_path, "on ranks");
    snprintf(b_path, sizeof b_path, "%s/ranks_test/rewards/metrics.jsonl", work);
    expect_same_metrics(a_path, b_path, "with 2 reward ranks");
    json_t *a = json_lines(a_path, NULL);
    size_t i;
    json_t *x;
    /* the run learned something to compare: a reward above zero somewhere */
    double best = 0;
    json_array_foreach(a, i, x) {
        json_t *rw = json_object_get(x, "reward_mean");
        if (json_is_number(rw) && json_number_value(rw) > best)
            best = json_number_value(rw);
    }
    cr_expect_gt(best, 0, "every reward was 0: the comparison says little");
    json_decref(a);

    /* one trace with every rank's lanes */
    char path[1024];
    static char text[1 << 20];
    snprintf(path, sizeof path, "%s/ranks_test/ranks/trace.json", work);
    slurp(path, text, sizeof text);
    cr_expect(strstr(text, "\"trainer (rank 1)\""), "trace.json names the trainer's lane");
    cr_expect(strstr(text, "\"explorer 0 (rank 2)\""), "trace.json names the explorer's lane");
    snprintf(path, sizeof path, "%s/ranks_test/rewards/trace.json", work);
    slurp(path, text, sizeof text);
    cr_expect(strstr(text, "\"rewards (rank 3)\"") && strstr(text, "\"rewards (rank 4)\""),
              "trace.json has each reward rank's lane");

    /* tern timeline draws it as a run of one process: a trainer lane, and a
     * weight sync (mpi, drawn as memory) on it and the explorer's per step */
    run(&r, "cd %s && %s timeline ranks_test/ranks -o ranks.svg", work, TERN);
    cr_assert_eq(r.code, 0, "timeline: %s", r.err);
    snprintf(path, sizeof path, "%s/ranks.svg", work);
    slurp(path, text, sizeof text);
    cr_expect(strstr(text, ">Trainer</text>") && strstr(text, ">Explorer</text>"), "the lanes");
    int syncs = 0;
    for (const char *p = strstr(text, "class=\"sync-memory\""); p;
         p = strstr(p + 1, "class=\"sync-memory\""))
        syncs++;
    cr_expect_geq(syncs, 2 * 8, "%d weight syncs drawn for 8 steps", syncs);
}

/* What the config asks for and what was launched disagree: one message from
 * rank 0, exit 2, no run directory. */
static void refused(int np, const char *opts, const char *want)
{
    const char *work = test_work_dir();
    result r;
    run(&r, "cd %s && rm -rf refused_test && %s -np %d %s run %s/etc/modes/synchronous.cfg "
            "-o 'run.out_dir=\"refused_test\"' %s",
        work, MPIRUN, np, TERN, SRC, opts);
    cr_expect_eq(r.code, 2, "exit %d\n%s", r.code, r.err);
    cr_expect(strstr(r.err, want), "the message says '%s':\n%s", want, r.err);
    const char *first = strstr(r.err, want);
    cr_expect(!first || !strstr(first + 1, want), "said once, by rank 0:\n%s", r.err);
    char path[1024];
    struct stat st;
    snprintf(path, sizeof path, "%s/refused_test", work);
    cr_expect_neq(stat(path, &st), 0, "nothing is created");
}

/* Ranks launched with other settings than the master's (mpirun's MPMD form
 * gives ranks 1 and 2 an -o of their own): the run is refused before
 * anything is created, naming the first setting that differs, by the rank
 * that differs. */
Test(ranks, a_rank_launched_with_other_settings_is_refused)
{
    test_need_mpi();
    const char *work = test_work_dir();
    static const struct {
        const char *opts, *want;
    } cases[] = {
        {"-o explorer.group_size=4", "explorer.group_size is 4 here and 8 on the master"},
        {"-o 'rewards.[0].weight=2.0'", "rewards.[0].weight is 2 here and 1 on the master"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        result r;
        run(&r, "cd %s && rm -rf refused_test && %s -np 1 %s run %s/etc/modes/synchronous.cfg "
                "-o 'run.out_dir=\"refused_test\"' : -np 2 %s run "
                "%s/etc/modes/synchronous.cfg -o 'run.out_dir=\"refused_test\"' %s",
            work, MPIRUN, TERN, SRC, TERN, SRC, cases[i].opts);
        cr_expect_eq(r.code, 2, "%s: exit %d\n%s", cases[i].opts, r.code, r.err);
        cr_expect(strstr(r.err, cases[i].want) && strstr(r.err, "launched with another config "
                                                         "than the master's"),
                  "%s: the message says '%s':\n%s", cases[i].opts, cases[i].want, r.err);
        char path[1024];
        struct stat st;
        snprintf(path, sizeof path, "%s/refused_test", work);
        cr_expect_neq(stat(path, &st), 0, "%s: nothing is created", cases[i].opts);
    }
}

Test(ranks, more_explorer_ranks_asked_than_launched_is_refused)
{
    test_need_mpi();
    refused(3, "-o ranks.explorers=2", "ranks.explorers = 2 and ranks.rewards = 0 ask for 4 ranks");
}

Test(ranks, two_ranks_are_refused)
{
    test_need_mpi();
    refused(2, "", "needs at least 3");
}

Test(ranks, reward_ranks_that_leave_no_explorer_rank_are_refused)
{
    test_need_mpi();
    refused(4, "-o ranks.rewards=2", "needs at least 5: the master (rank 0), 1 trainer rank, "
            "an explorer rank and the reward ranks");
}

Test(ranks, two_trainer_ranks_on_three_ranks_are_refused)
{
    test_need_mpi();
    refused(3, "-o ranks.trainers=2", "needs at least 4: the master (rank 0), 2 trainer ranks");
}

Test(ranks, more_explorer_ranks_than_explorers_is_refused)
{
    test_need_mpi();
    refused(4, "", "2 explorer ranks but the sync plugin runs 1 explorer");
}

/* A stop signal at mpirun reaches every rank: SIGTERM (what ^C at a terminal
 * becomes; a background job of sh has SIGINT ignored, and mpirun keeps it so)
 * with a SIGKILL 1 s later, or SIGUSR1 as it is. The master stops the run
 * with a checkpoint, and the same mpirun with --resume finishes it. */
static void interrupted_then_resumed(const char *sig, const char *name)
{
    test_need_mpi();
    const char *work = test_work_dir();
    char opts[512], want[96];
    snprintf(opts, sizeof opts, "-o 'run.out_dir=\"ranks_test\"' -o run.name='\"%s\"' "
             "-o trainer.steps=20 -o trainer.sft.steps=0 -o eval.every=0 -o eval.limit=8 "
             "-o trainer.save_every=5", name);
    result r;
    run(&r, "cd %s && rm -rf ranks_test/%s && { %s -np 3 %s run %s/etc/modes/fully_async.cfg "
            "%s & pid=$!; while kill -0 $pid 2>/dev/null && ! grep -q '\"stage\":\"rl\",\"step\":8,' "
            "ranks_test/%s/metrics.jsonl 2>/dev/null; do sleep 0.02; done; "
            "kill -%s $pid; wait $pid; echo \"exit $?\"; }",
        work, name, MPIRUN, TERN, SRC, opts, name, sig);
    cr_expect(!strstr(r.out, "exit 0"), "an interrupted run does not exit 0: %s", r.out);
    snprintf(want, sizeof want, "SIG%s: stopping after the step in progress", sig);
    cr_expect(strstr(r.err, want), "%s", r.err);
    /* after SIGTERM mpirun kills the ranks 1 s later: the stop's checkpoint
     * may not be done by then (under ASan it is not), and the resume goes
     * back to the one before; SIGUSR1 comes with no kill */
    if (strcmp(sig, "USR1") == 0)
        cr_expect(strstr(r.err, "--resume` continues from"), "%s", r.err);
    run(&r, "cd %s && %s -np 3 %s run %s/etc/modes/fully_async.cfg %s --resume", work, MPIRUN,
        TERN, SRC, opts);
    cr_assert_eq(r.code, 0, "resume: %s", r.err);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/ranks_test/%s", work, name);
    check_steps_once(dir, 20);
}

Test(ranks, sigterm_at_mpirun_then_resume) { interrupted_then_resumed("TERM", "sigterm"); }
Test(ranks, sigusr1_at_mpirun_then_resume) { interrupted_then_resumed("USR1", "sigusr1"); }

/* A rank that dies ends the job (no fault tolerance in Open MPI); mpirun
 * names it, and --resume continues from the checkpoint, with a durable
 * buffer's groups trained once. */
Test(ranks, a_killed_explorer_rank_then_resume)
{
    test_need_mpi();
    const char *work = test_work_dir();
    const char *opts = "-o 'run.out_dir=\"ranks_test\"' -o run.name='\"killed\"' "
                       "-o trainer.steps=16 -o trainer.sft.steps=0 -o eval.every=0 "
                       "-o eval.limit=8 -o trainer.save_every=4 -o buffer.plugin='\"sqlite\"' "
                       "-o buffer.path='\"buffer.sqlite\"'";
    result r;
    /* the explorer rank is the one with OMPI_COMM_WORLD_RANK=2 */
    run(&r, "cd %s && rm -rf ranks_test/killed && { %s -np 3 %s run "
            "%s/etc/modes/synchronous.cfg %s & pid=$!; "
            "while kill -0 $pid 2>/dev/null && ! grep -q '\"stage\":\"rl\",\"step\":9,' "
            "ranks_test/killed/metrics.jsonl 2>/dev/null; do sleep 0.02; done; "
            "for p in $(pgrep -f 'run.name=\"killed\"'); do "
            "  grep -qz '^OMPI_COMM_WORLD_RANK=2$' /proc/$p/environ 2>/dev/null && kill -9 $p; "
            "done; wait $pid; echo \"exit $?\"; }",
        work, MPIRUN, TERN, SRC, opts);
    cr_expect(!strstr(r.out, "exit 0"), "a job with a killed rank does not exit 0: %s", r.out);
    cr_expect(strstr(r.err, "rank 2"), "mpirun names the rank:\n%s", r.err);
    /* mpirun's SIGTERM after the death, when it reaches the master before
     * the SIGKILL, promises no checkpoint that cannot come */
    const char *note = strstr(r.err, "SIGTERM: stopping");
    if (note)
        cr_expect(strstr(note, "if every rank is alive; if mpirun sent it because a rank died, "
                               "mpirun ends every rank in seconds, no checkpoint follows, and "
                               "`tern run CONFIG --resume` continues from ") &&
                  strstr(note, "checkpoints/"), "%s", r.err);
    run(&r, "cd %s && %s -np 3 %s run %s/etc/modes/synchronous.cfg %s --resume", work, MPIRUN,
        TERN, SRC, opts);
    cr_assert_eq(r.code, 0, "resume: %s", r.err);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/ranks_test/killed", work);
    check_steps_once(dir, 16);
}
