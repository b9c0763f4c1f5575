/* test_ranks_trainers.c: data-parallel trainer ranks (ranks.trainers,
 * docs/distributed.md), launched as a user launches them:
 *   - a run with 2 trainer ranks (mpirun -np 4) trains like the same run
 *     with 1 (-np 3): every warm-up and RL step's loss, gradient norm and
 *     figures agree within float tolerance, the same batches are sampled
 *     (rewards equal), and the final checkpoint's weights agree tensor by
 *     tensor. The shares are uneven (7 warm-up pairs and 5 groups a step on
 *     2 ranks), and every checkpoint step checks the ranks hold the same
 *     weights;
 *   - the same without a KL to the reference, where an on-policy step skips
 *     its scoring pass and the figures come from the ranks' backward passes;
 *   - log.txt has the worker ranks' lines, named by rank;
 *   - stopped with SIGUSR1 at mpirun, the 2-trainer run resumes (every rank
 *     loads the checkpoint) and trains every step once.
 * Skipped, with the reason, in a build without MPI. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command.h"
#include "hf/safetensors.h"
#include "run_dir_checks.h"

#define TERN TERN_TEST_BIN
#define SRC TERN_TEST_SOURCE_DIR
#define MPIRUN test_mpirun()

/*
 * a and b agree within float rounding of sums taken in another order:
 *   |a − b| <= 1e-5 · max(|a|, |b|) + max(1e-9, 2^-24 · scale)
 * where scale is the largest |value| the figure takes in the same phase of
 * the run. The second term is for a figure that is itself rounding noise:
 * a gradient whose terms cancel (an RL step whose rewards are all 0 and whose
 * policy is still the reference) has a norm of a few 1e-9, whatever its
 * summation order, and two orders differ by as much as the figure (measured:
 * 4.0e-9 with 1 trainer, 2.6e-9 with 2 on an AVX2-only AMD EPYC, OpenBLAS's
 * Haswell kernels). Below half a float32 ulp of the figure's scale in the
 * run, a difference says nothing; 1e-9 is the floor for figures that are
 * noise all run long (mismatch_kl, about 1e-13 when explorer and trainer hold
 * the same weights).
 */
static int close_enough(double a, double b, double scale)
{
    return fabs(a - b) <= 1e-5 * fmax(fabs(a), fabs(b)) + fmax(1e-9, 0x1p-24 * scale);
}

/* A figure's phase, as "rl" or "warmup": the lines with a reward are RL's. */
static const char *phase_of(json_t *line)
{
    return json_object_get(line, "reward_mean") ? "rl" : "warmup";
}

/* For each phase and numeric figure ("rl/grad_norm"), the largest |value| in
 * either run's lines: a new object. */
static json_t *figure_scales(json_t *a, json_t *b)
{
    json_t *scales = json_object(), *runs[2] = {a, b}, *line, *v;
    for (int r = 0; r < 2; r++) {
        size_t i;
        json_array_foreach(runs[r], i, line) {
            const char *key;
            json_object_foreach(line, key, v) {
                if (!json_is_number(v))
                    continue;
                char name[128];
                snprintf(name, sizeof name, "%s/%s", phase_of(line), key);
                double m = fabs(json_number_value(v)), old = json_number_value(
                                                               json_object_get(scales, name));
                if (m > old)
                    json_object_set_new(scales, name, json_real(m));
            }
        }
    }
    return scales;
}

/* loss_noise: an absolute difference the loss (and its policy part) may
 * show beyond close_enough(); see the several-updates runs below. */
static void expect_same_metrics_within(const char *one, const char *two, double loss_noise)
{
    json_t *a = json_lines(one, NULL), *b = json_lines(two, NULL);
    cr_assert_eq(json_array_size(a), json_array_size(b), "%zu lines with 1 trainer, %zu with 2",
                 json_array_size(a), json_array_size(b));
    json_t *scales = figure_scales(a, b);
    size_t i, compared = 0;
    double best_reward = 0;
    json_t *x;
    json_array_foreach(a, i, x) {
        json_t *y = json_array_get(b, i), *v;
        const char *key;
        json_object_foreach(x, key, v) {
            if (is_timing_figure(key))
                continue;
            json_t *w = json_object_get(y, key);
            cr_assert_not_null(w, "line %zu lacks %s with 2 trainers", i + 1, key);
            if (json_is_number(v)) {
                double p = json_number_value(v), q = json_number_value(w);
                char name[128];
                snprintf(name, sizeof name, "%s/%s", phase_of(x), key);
                double scale = json_number_value(json_object_get(scales, name));
                int loss = strcmp(key, "loss") == 0 || strcmp(key, "pg_loss") == 0;
                cr_expect(close_enough(p, q, scale) || (loss && fabs(p - q) <= loss_noise),
                          "line %zu, %s: %.17g with 1 trainer, %.17g with 2 (largest in the "
                          "phase %.3g)", i + 1, key, p, q, scale);
                if (strcmp(key, "reward_mean") == 0 && p > best_reward)
                    best_reward = p;
            } else {
                cr_expect(json_equal(v, w), "line %zu, %s differs", i + 1, key);
            }
            compared++;
        }
    }
    cr_expect_gt(compared, 100, "%zu figures compared", compared);
    cr_expect_gt(best_reward, 0, "every reward was 0: the policy-gradient term went untested");
    json_decref(scales);
    json_decref(a);
    json_decref(b);
}

static void expect_same_metrics(const char *one, const char *two)
{
    expect_same_metrics_within(one, two, 0);
}

/* ‖a − b‖ / ‖a‖ of every tensor of two safetensors files */
static void expect_same_weights(const char *one, const char *two)
{
    st_file a, b;
    char err[512];
    cr_assert_eq(st_open(one, &a, err, sizeof err), 0, "%s", err);
    cr_assert_eq(st_open(two, &b, err, sizeof err), 0, "%s", err);
    cr_assert_eq(a.n_tensors, b.n_tensors);
    cr_assert_gt(a.n_tensors, 0);
    for (size_t t = 0; t < a.n_tensors; t++) {
        const st_tensor *x = &a.tensors[t], *y = st_find(&b, x->name);
        cr_assert_not_null(y, "%s missing with 2 trainers", x->name);
        cr_assert_eq(x->numel, y->numel, "%s", x->name);
        float *p = malloc(x->numel * sizeof *p), *q = malloc(x->numel * sizeof *q);
        cr_assert(p && q);
        cr_assert_eq(st_to_f32(x, p, x->numel, err, sizeof err), 0, "%s", err);
        cr_assert_eq(st_to_f32(y, q, y->numel, err, sizeof err), 0, "%s", err);
        double num = 0, den = 0;
        for (size_t k = 0; k < x->numel; k++) {
            num += ((double)p[k] - q[k]) * ((double)p[k] - q[k]);
            den += (double)p[k] * p[k];
        }
        double rel = sqrt(num / (den > 0 ? den : 1e-300));
        /* measured: about 2e-6 (AdamW turns a rounding difference in a
         * gradient near 0 into a step of up to lr) */
        cr_expect_lt(rel, 1e-4, "%s: relative difference %g between 1 and 2 trainers", x->name,
                     rel);
        free(p);
        free(q);
    }
    st_close(&a);
    st_close(&b);
}

/* From a policy warmed up in one process (rewards above 0 from the first
 * step), a few warm-up and RL steps: over many AdamW steps two runs that
 * differ in rounding drift apart as any two summation orders do, so the
 * comparison is short; the quickstart's dynamic sampling is off (a token
 * that rounding flips changes which groups it keeps, and the runs part), and
 * so is its weight decay in the 40-step warm-up, which would leave every
 * reward 0. */
#define OPTS                                                                                   \
    "-o 'run.out_dir=\"trainers_test\"' -o trainer.steps=4 -o trainer.sft.steps=3 "            \
    "-o trainer.sft.batch_tasks=7 -o explorer.batch_tasks=5 -o trainer.save_every=2 "         \
    "-o eval.every=2 -o eval.limit=20 -o model.threads=1 -o algorithm.filter_groups=false"

Test(ranks_trainers, two_trainer_ranks_train_as_one)
{
    test_need_mpi();
    const char *work = test_work_dir();
    result r;
    run(&r, "cd %s && rm -rf trainers_test data && %s data arith data > /dev/null && "
            "cp %s/etc/quickstart.cfg q.cfg && "
            "%s run q.cfg -o 'run.out_dir=\"trainers_test\"' -o run.name='\"base\"' "
            "-o trainer.sft.steps=40 -o trainer.steps=0 -o eval.limit=4 -o model.threads=1 "
            "-o trainer.weight_decay=0 > /dev/null 2>&1 && "
            "sed 's|init = { preset = \"tiny\"; seed = 1; };|"
            "path = \"trainers_test/base/checkpoints/step-0/policy\";|' q.cfg > w.cfg && "
            "grep -q 'path = ' w.cfg",
        work, TERN, SRC, TERN);
    cr_assert_eq(r.code, 0, "the warmed-up policy: exit %d\n%s", r.code, r.err);
    run(&r, "cd %s && %s -np 3 %s run w.cfg " OPTS " -o run.name='\"one\"' > /dev/null", work,
        MPIRUN, TERN);
    cr_assert_eq(r.code, 0, "1 trainer rank: exit %d\n%s", r.code, r.err);
    run(&r, "cd %s && %s -np 4 %s run w.cfg " OPTS " -o ranks.trainers=2 "
            "-o run.name='\"two\"' -o run.log_level=debug > /dev/null",
        work, MPIRUN, TERN);
    cr_assert_eq(r.code, 0, "2 trainer ranks: exit %d\n%s", r.code, r.err);

    char one[1024], two[1024];
    snprintf(one, sizeof one, "%s/trainers_test/one/metrics.jsonl", work);
    snprintf(two, sizeof two, "%s/trainers_test/two/metrics.jsonl", work);
    expect_same_metrics(one, two);
    snprintf(one, sizeof one, "%s/trainers_test/one/checkpoints/step-4/policy/model.safetensors",
             work);
    snprintf(two, sizeof two, "%s/trainers_test/two/checkpoints/step-4/policy/model.safetensors",
             work);
    expect_same_weights(one, two);

    /* both trainer ranks' spans are in the run's trace */
    static char text[1 << 21];
    snprintf(one, sizeof one, "%s/trainers_test/two/trace.json", work);
    slurp(one, text, sizeof text);
    cr_expect(strstr(text, "\"trainer (rank 1)\"") && strstr(text, "\"trainer (rank 2)\""),
              "trace.json has a lane for each trainer rank");
    cr_expect(strstr(text, "\"explorer 0 (rank 3)\""), "the explorer rank follows the trainers");

    /* and one log.txt: the worker ranks' lines are in it (debug: their
     * models' creation), named by rank */
    snprintf(one, sizeof one, "%s/trainers_test/two/log.txt", work);
    slurp(one, text, sizeof text);
    cr_expect(strstr(text, "[rank 2: reference]"), "log.txt has trainer rank 2's lines:\n%s",
              text);
    cr_expect(strstr(text, "[rank 3: explorer 0]"), "log.txt has the explorer rank's lines");

    /* without a KL to the reference an on-policy step skips its scoring pass
     * (trainer.score_pass): each rank's figures come from its backward pass
     * and are gathered; the runs still agree */
    const char *nokl = " -o 'algorithm.kl.estimator=\"none\"' -o algorithm.kl.coef=0";
    run(&r, "cd %s && %s -np 3 %s run w.cfg " OPTS "%s -o run.name='\"one_nokl\"' > /dev/null",
        work, MPIRUN, TERN, nokl);
    cr_assert_eq(r.code, 0, "1 trainer rank, no KL: exit %d\n%s", r.code, r.err);
    run(&r, "cd %s && %s -np 4 %s run w.cfg " OPTS "%s -o ranks.trainers=2 "
            "-o run.name='\"two_nokl\"' > /dev/null", work, MPIRUN, TERN, nokl);
    cr_assert_eq(r.code, 0, "2 trainer ranks, no KL: exit %d\n%s", r.code, r.err);
    snprintf(one, sizeof one, "%s/trainers_test/one_nokl/metrics.jsonl", work);
    snprintf(two, sizeof two, "%s/trainers_test/two_nokl/metrics.jsonl", work);
    expect_same_metrics(one, two);
    snprintf(one, sizeof one, "%s/trainers_test/two_nokl/trace.json", work);
    slurp(one, text, sizeof text);
    cr_expect(!strstr(text, "\"name\": \"score\""), "an on-policy step without KL scored");

    /* several updates a step (trainer.mini_batches x epochs): each rank
     * scores and back-propagates its share of every mini-batch; the runs
     * still agree, update after update */
    /* (10 warm-up steps: with 3, these weights get no reward in 4 steps) */
    const char *mb = " -o trainer.mini_batches=2 -o trainer.epochs=2 -o trainer.sft.steps=10";
    run(&r, "cd %s && %s -np 3 %s run w.cfg " OPTS "%s%s -o run.name='\"one_mb\"' > /dev/null",
        work, MPIRUN, TERN, nokl, mb);
    cr_assert_eq(r.code, 0, "1 trainer rank, 4 updates a step: exit %d\n%s", r.code, r.err);
    run(&r, "cd %s && %s -np 4 %s run w.cfg " OPTS "%s%s -o ranks.trainers=2 "
            "-o run.name='\"two_mb\"' > /dev/null", work, MPIRUN, TERN, nokl, mb);
    cr_assert_eq(r.code, 0, "2 trainer ranks, 4 updates a step: exit %d\n%s", r.code, r.err);
    snprintf(one, sizeof one, "%s/trainers_test/one_mb/metrics.jsonl", work);
    snprintf(two, sizeof two, "%s/trainers_test/two_mb/metrics.jsonl", work);
    /* A GRPO batch's loss is the mean of -A (rho - 1) + ..., whose terms
     * cancel group by group: once updates have moved the weights, rho is 1
     * up to the rounding in which the two runs' weights differ (sums taken
     * in another order), and the loss is that rounding, a few 1e-8
     * (measured: 1.5e-8 and -1.7e-8). The gradients, the ratios and the
     * weights below are compared as before. */
    expect_same_metrics_within(one, two, 1e-6);
    snprintf(one, sizeof one, "%s/trainers_test/one_mb/checkpoints/step-4/policy/model.safetensors",
             work);
    snprintf(two, sizeof two, "%s/trainers_test/two_mb/checkpoints/step-4/policy/model.safetensors",
             work);
    expect_same_weights(one, two);
}

Test(ranks_trainers, two_trainer_ranks_stop_and_resume)
{
    test_need_mpi();
    const char *work = test_work_dir();
    const char *opts = "-o 'run.out_dir=\"trainers_test\"' -o run.name='\"stopped\"' "
                       "-o trainer.steps=12 -o trainer.sft.steps=0 -o eval.every=0 "
                       "-o eval.limit=8 -o trainer.save_every=4 -o ranks.trainers=2";
    result r;
    run(&r, "cd %s && rm -rf trainers_test/stopped && { %s -np 4 %s run "
            "%s/etc/modes/synchronous.cfg %s & pid=$!; "
            "while kill -0 $pid 2>/dev/null && ! grep -q '\"stage\":\"rl\",\"step\":5,' "
            "trainers_test/stopped/metrics.jsonl 2>/dev/null; do sleep 0.02; done; "
            "kill -USR1 $pid; wait $pid; echo \"exit $?\"; }",
        work, MPIRUN, TERN, SRC, opts);
    cr_expect(!strstr(r.out, "exit 0"), "a stopped run does not exit 0: %s", r.out);
    cr_expect(strstr(r.err, "--resume` continues from"), "%s", r.err);
    run(&r, "cd %s && %s -np 4 %s run %s/etc/modes/synchronous.cfg %s --resume", work, MPIRUN,
        TERN, SRC, opts);
    cr_assert_eq(r.code, 0, "resume: %s", r.err);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/trainers_test/stopped", work);
    check_steps_once(dir, 12);
}
