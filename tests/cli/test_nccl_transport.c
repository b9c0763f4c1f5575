/* test_nccl_transport.c: the `nccl` weight transport plugin in a run on MPI
 * ranks (mpirun -np 3: master, trainer, explorer), the model on the GPU
 * (transformer_cuda):
 *   - with 2 GPUs or more, each rank on its own (CUDA_VISIBLE_DEVICES by
 *     local rank), the run trains and every figure equals the same run's
 *     over the `mpi` transport (the weights arrive bit for bit);
 *   - with 2 GPUs or more, 2 data-parallel trainer ranks (mpirun -np 4), whose
 *     gradients the plugin sums on their GPUs (ncclAllReduce), train as one
 *     trainer rank does, within float rounding;
 *   - with 1 GPU, NCCL cannot put two ranks of one communicator on it: the
 *     run stops with one message saying so and how to fix it, not a hang.
 * Skipped, with the reason, without MPI, without the CUDA plugins (no CUDA
 * toolkit with NCCL), or without a GPU. */
#include <criterion/criterion.h>
#include <cuda_runtime_api.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "command.h"
#include "run_dir_checks.h"

#define TERN TERN_TEST_BIN
#define SRC TERN_TEST_SOURCE_DIR
#define MPIRUN test_mpirun()

static int gpus(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess)
        return 0;
    return n;
}

static void skip(const char *why)
{
    fprintf(stderr, "%s: skipped: %s\n", criterion_current_test->name, why);
    cr_skip_test("%s", why);
}

/* MPI, both CUDA plugins and a GPU, else a skip; the number of GPUs. */
static int need_gpu_ranks(void)
{
    test_need_mpi();
    struct stat st;
    if (stat(TERN_TEST_PLUGIN_DIR "/nccl.so", &st) != 0 ||
        stat(TERN_TEST_PLUGIN_DIR "/transformer_cuda.so", &st) != 0)
        skip("the nccl and transformer_cuda plugins are not built here (no CUDA toolkit with "
             "NCCL)");
    int n = gpus();
    if (n == 0)
        skip("no GPU");
    return n;
}

/* The quickstart on the GPU, a few steps, weights by `method`; without its
 * dynamic sampling, whose choice of groups a rounding difference can flip
 * (the runs compared here sum in different orders). */
static void write_config(const char *work, const char *method)
{
    result r;
    run(&r, "cd %s && rm -rf nccl_test data && %s data arith data > /dev/null && "
            "sed -e '/threads = 2;/d' -e 's/plugin = \"transformer\";/plugin = "
            "\"transformer_cuda\";/' -e 's/plugin = \"synchronous\";/plugin = \"synchronous\"; "
            "method = \"%s\";/' -e 's/filter_groups = true;/filter_groups = false;/' "
            "%s/etc/quickstart.cfg > g_%s.cfg && "
            "echo 'transport = { plugin = \"nccl\"; timeout_s = 60; };' >> g_%s.cfg",
        work, TERN, method, SRC, method, method);
    cr_assert_eq(r.code, 0, "%s", r.err);
}

/* Every figure of runs `one` and `two` (their metrics.jsonl) within
 * relative `tol` (0: equal). */
static void expect_same_figures(const char *work, const char *one, const char *two, double tol)
{
    char a[1024], b[1024];
    snprintf(a, sizeof a, "%s/nccl_test/%s/metrics.jsonl", work, one);
    snprintf(b, sizeof b, "%s/nccl_test/%s/metrics.jsonl", work, two);
    json_t *x = json_lines(a, NULL), *y = json_lines(b, NULL);
    cr_assert_eq(json_array_size(x), json_array_size(y));
    cr_assert_gt(json_array_size(x), 6);
    size_t i, compared = 0;
    json_t *line;
    json_array_foreach(x, i, line) {
        const char *key;
        json_t *v;
        json_object_foreach(line, key, v) {
            if (is_timing_figure(key) || !json_is_number(v))
                continue;
            json_t *w = json_object_get(json_array_get(y, i), key);
            cr_assert_not_null(w, "line %zu lacks %s in %s", i + 1, key, two);
            double p = json_number_value(v), q = json_number_value(w);
            cr_expect(fabs(p - q) <= tol * fmax(fabs(p), fabs(q)) + (tol ? 1e-9 : 0),
                      "line %zu, %s: %.17g in %s, %.17g in %s", i + 1, key, p, one, q, two);
            compared++;
        }
    }
    cr_expect_gt(compared, 50);
    json_decref(x);
    json_decref(y);
}

#define OPTS                                                                                   \
    "-o 'run.out_dir=\"nccl_test\"' -o trainer.steps=6 -o trainer.sft.steps=20 "               \
    "-o trainer.save_every=3 -o eval.every=3 -o eval.limit=20"

Test(nccl_transport, weights_go_gpu_to_gpu_as_by_mpi, .timeout = 600)
{
    int n = need_gpu_ranks();
    if (n < 2)
        skip("one GPU: NCCL needs a GPU per rank (the one-GPU refusal is the other test)");
    const char *work = test_work_dir();
    write_config(work, "nccl");
    result r;
    /* mpi: the same run without the transport section */
    run(&r, "cd %s && grep -v '^transport' g_nccl.cfg | sed 's/method = \"nccl\"/method = "
            "\"mpi\"/' > g_mpi.cfg",
        work);
    cr_assert_eq(r.code, 0);
    const char *per_rank = "sh -c 'CUDA_VISIBLE_DEVICES=$((OMPI_COMM_WORLD_LOCAL_RANK %% 2)) "
                           "exec \"$0\" \"$@\"'";
    run(&r, "cd %s && %s -np 3 %s %s run g_nccl.cfg " OPTS " -o run.name='\"nccl\"' > /dev/null",
        work, MPIRUN, per_rank, TERN);
    cr_assert_eq(r.code, 0, "the nccl run: exit %d\n%s", r.code, r.err);
    run(&r, "cd %s && %s -np 3 %s %s run g_mpi.cfg " OPTS " -o run.name='\"mpi\"' > /dev/null",
        work, MPIRUN, per_rank, TERN);
    cr_assert_eq(r.code, 0, "the mpi run: exit %d\n%s", r.code, r.err);

    char a[1024];
    expect_same_figures(work, "nccl", "mpi", 0);
    /* the trainer's sync spans name the method */
    static char text[1 << 21];
    snprintf(a, sizeof a, "%s/nccl_test/nccl/trace.json", work);
    slurp(a, text, sizeof text);
    cr_expect(strstr(text, "\"method\":\"nccl\""), "trace.json's sync spans say nccl");
}

Test(nccl_transport, two_trainer_ranks_sum_gradients_on_their_gpus, .timeout = 600)
{
    int n = need_gpu_ranks();
    if (n < 2)
        skip("one GPU: NCCL needs a GPU per rank");
    const char *work = test_work_dir();
    write_config(work, "nccl");
    /* ranks 1 and 2 train, 3 explores: the trainers' group {1, 2} and the
     * weights group {1, 3} each on two GPUs */
    const char *per_rank = "sh -c 'r=$OMPI_COMM_WORLD_LOCAL_RANK; "
                           "CUDA_VISIBLE_DEVICES=$(( r == 3 ? 0 : r %% 2 )) exec \"$0\" \"$@\"'";
    result r;
    run(&r, "cd %s && %s -np 4 %s %s run g_nccl.cfg " OPTS " -o ranks.trainers=2 "
            "-o run.name='\"dp2\"' > /dev/null",
        work, MPIRUN, per_rank, TERN);
    cr_assert_eq(r.code, 0, "2 trainer ranks: exit %d\n%s", r.code, r.err);
    run(&r, "cd %s && %s -np 3 %s %s run g_nccl.cfg " OPTS " -o run.name='\"dp1\"' > /dev/null",
        work, MPIRUN, per_rank, TERN);
    cr_assert_eq(r.code, 0, "1 trainer rank: exit %d\n%s", r.code, r.err);
    expect_same_figures(work, "dp1", "dp2", 1e-4);
}

Test(nccl_transport, two_ranks_on_one_gpu_are_refused_with_a_message, .timeout = 300)
{
    int n = need_gpu_ranks();
    if (n != 1)
        skip("more than one GPU: every rank can have its own");
    const char *work = test_work_dir();
    write_config(work, "nccl");
    result r;
    run(&r, "cd %s && %s -np 3 %s run g_nccl.cfg " OPTS " -o run.name='\"shared\"'", work, MPIRUN,
        TERN);
    cr_expect_neq(r.code, 0, "the run must stop: %s", r.out);
    cr_expect(strstr(r.err, "NCCL needs one GPU per rank"), "the message says why:\n%s", r.err);
    cr_expect(strstr(r.err, "method = \\\"mpi\\\"") || strstr(r.err, "method = \"mpi\""),
              "and names a fix:\n%s", r.err);
}
