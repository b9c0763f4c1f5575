/*
 * test_transformer_cuda.c: the GPU plugin against the CPU one, through the
 * plugin API, on the llama_micro fixture (Llama with GQA, the model the CPU
 * plugin is checked against PyTorch with):
 *   - score: per-token log-probs and entropies (fp32 < 1e-4, bf16 < 2e-2);
 *   - backward + step: the weights move the same way (AdamW with eps far
 *     above |g|, so each update is lr·g/(|g| + eps): the gradients compared);
 *   - a checkpoint saved from the GPU loads on the CPU and scores the same;
 *   - generate's log-probs equal score's on the GPU, and training learns;
 *   - device_tensors hand one instance's weights to another on the device.
 * Without a GPU these report "skipped: no GPU", except the test of the
 * message a user gets then.
 */
#include <criterion/criterion.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "model_checks.h"
#include "tern/model.h"

#define FIXTURE TERN_TEST_SOURCE_DIR "/tests/fixtures/llama_micro"
#define WORK TERN_TEST_WORK_DIR "/cuda"

static int gpu_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess)
        return 0;
    return n;
}

static void need_gpu(void)
{
    if (gpu_count() == 0) {
        /* Criterion keeps skips quiet: say which and why (the exit code,
         * support/skip_exit.c, tells ctest) */
        fprintf(stderr, "%s: skipped: no GPU\n", criterion_current_test->name);
        cr_skip_test("skipped: no GPU");
    }
}

/* Three sequences of the fixture's byte vocabulary, one at temperature 0.7. */
#define NSEQ 3
static int32_t toks[NSEQ][24];
static tern_sequence seqs[NSEQ];

static void make_batch(void)
{
    static const size_t lens[NSEQ] = {24, 9, 17};
    for (int s = 0; s < NSEQ; s++) {
        for (size_t i = 0; i < lens[s]; i++)
            toks[s][i] = (int32_t)((37 * s + 11 * i + 3) % 250);
        seqs[s] = (tern_sequence){.size = sizeof seqs[s], .tokens = toks[s], .len = lens[s],
                                  .start = s == 1 ? 4 : 1, .temperature = s == 2 ? 0.7f : 1};
    }
}

/* Max |a - b| / (|b| + 1) over the scored positions. */
static double score_diff(const tern_model_ops *oa, void *a, const tern_model_ops *ob, void *b)
{
    float la[NSEQ][24], lb[NSEQ][24], ea[NSEQ][24], eb[NSEQ][24];
    float *pla[NSEQ], *plb[NSEQ], *pea[NSEQ], *peb[NSEQ];
    for (int s = 0; s < NSEQ; s++)
        pla[s] = la[s], plb[s] = lb[s], pea[s] = ea[s], peb[s] = eb[s];
    cr_assert_eq(oa->score(a, seqs, NSEQ, pla, pea), TERN_OK);
    cr_assert_eq(ob->score(b, seqs, NSEQ, plb, peb), TERN_OK);
    double worst = 0;
    for (int s = 0; s < NSEQ; s++)
        for (size_t i = seqs[s].start; i < seqs[s].len; i++) {
            worst = fmax(worst, fabs((double)la[s][i] - lb[s][i]) / (fabs(lb[s][i]) + 1));
            worst = fmax(worst, fabs((double)ea[s][i] - eb[s][i]) / (fabs(eb[s][i]) + 1));
        }
    return worst;
}

static void check_against_cpu(const char *fixture, const char *compute, double tol)
{
    need_gpu();
    make_batch();
    char cfg[512];
    snprintf(cfg, sizeof cfg, "path = \"%s\"; compute = \"%s\";", fixture, compute);
    harness cpu, gpu;
    cr_assert_eq(harness_open(&cpu, "transformer", TERN_KIND_MODEL, cfg), TERN_OK, "%s",
                 cpu.error);
    cr_assert_eq(harness_open(&gpu, "transformer_cuda", TERN_KIND_MODEL, cfg), TERN_OK, "%s",
                 gpu.error);
    const tern_model_ops *oc = harness_ops(&cpu), *og = harness_ops(&gpu);

    double d = score_diff(og, gpu.state, oc, cpu.state);
    cr_expect_lt(d, tol, "score, %s: GPU and CPU differ by %g", compute, d);

    /* one step with update lr·g/(|g| + eps), eps >> |g|: the weight deltas are the gradients */
    const tern_tensor *tc, *tg;
    size_t nc, ng;
    cr_assert_eq(oc->tensors(cpu.state, &tc, &nc), TERN_OK);
    size_t total = 0;
    for (size_t i = 0; i < nc; i++)
        total += tc[i].bytes / sizeof(float);
    float *before = malloc(total * sizeof(float));
    for (size_t i = 0, off = 0; i < nc; off += tc[i].bytes / sizeof(float), i++)
        memcpy(before + off, tc[i].data, tc[i].bytes);
    float *dl[NSEQ], dlbuf[NSEQ][24];
    for (int s = 0; s < NSEQ; s++) {
        dl[s] = dlbuf[s];
        for (size_t i = 0; i < seqs[s].len; i++)
            dlbuf[s][i] = i >= seqs[s].start ? -1.0f / (float)(i + 1) : 0;
    }
    const float *const *dlc = (const float *const *)dl;
    cr_assert_eq(oc->backward(cpu.state, seqs, NSEQ, dlc, NULL), TERN_OK);
    cr_assert_eq(og->backward(gpu.state, seqs, NSEQ, dlc, NULL), TERN_OK);
    tern_optim_step st = {.size = sizeof st, .lr = 1.0, .beta1 = 0, .beta2 = 0, .eps = 1e3,
                          .weight_decay = 0, .grad_clip = 0};
    tern_optim_step sg = st;
    cr_assert_eq(oc->step(cpu.state, &st), TERN_OK);
    cr_assert_eq(og->step(gpu.state, &sg), TERN_OK, "%s", gpu.error);
    cr_expect_lt(fabs(sg.grad_norm - st.grad_norm) / st.grad_norm, tol, "grad norm %g vs %g",
                 sg.grad_norm, st.grad_norm);
    cr_assert_eq(oc->tensors(cpu.state, &tc, &nc), TERN_OK);
    cr_assert_eq(og->tensors(gpu.state, &tg, &ng), TERN_OK);
    cr_assert_eq(ng, nc);
    for (size_t i = 0, off = 0; i < nc; off += tc[i].bytes / sizeof(float), i++) {
        cr_assert_str_eq(tg[i].name, tc[i].name);
        const float *a = tg[i].data, *b = tc[i].data;
        double num = 0, den = 0;
        for (size_t j = 0; j < tc[i].bytes / sizeof(float); j++) {
            double da = a[j] - before[off + j], db = b[j] - before[off + j];
            num += (da - db) * (da - db);
            den += db * db;
        }
        double e = den > 0 ? sqrt(num / den) : sqrt(num);
        cr_expect_lt(e, tol, "%s, %s: gradient relative error %g", compute, tc[i].name, e);
    }
    free(before);

    /* the GPU's checkpoint, on the CPU */
    char dir[256];
    snprintf(dir, sizeof dir, WORK "/%s", compute);
    cr_assert_eq(og->save(gpu.state, dir, 1), TERN_OK, "%s", gpu.error);
    harness back;
    snprintf(cfg, sizeof cfg, "path = \"%s\";", dir);
    cr_assert_eq(harness_open(&back, "transformer", TERN_KIND_MODEL, cfg), TERN_OK, "%s",
                 back.error);
    d = score_diff(og, gpu.state, harness_ops(&back), back.state);
    cr_expect_lt(d, tol, "saved from the GPU, scored on the CPU: differ by %g", d);
    harness_close(&back);
    harness_close(&gpu);
    harness_close(&cpu);
}

Test(cuda, fp32_matches_the_cpu_plugin) { check_against_cpu(FIXTURE, "fp32", 1e-4); }
Test(cuda, bf16_within_bf16_of_the_cpu_plugin) { check_against_cpu(FIXTURE, "bf16", 2e-2); }
/* Qwen2: q/k/v biases, whose gradients the bias kernels sum */
Test(cuda, qwen2_biases_match_the_cpu_plugin)
{
    check_against_cpu(TERN_TEST_SOURCE_DIR "/tests/fixtures/qwen2_micro", "fp32", 1e-4);
}

/* Training repeats bit for bit: every gradient sum is taken in a fixed order
 * (no atomics: the embedding's repeated tokens, RMSNorm's and the biases'
 * column sums, the gradient norm), so two instances given the same batches
 * end with the same weights, and a run's figures repeat on the same GPU. */
Test(cuda, training_repeats_bit_for_bit)
{
    need_gpu();
    make_batch();
    const char *cfgs[] = {"path = \"" TERN_TEST_SOURCE_DIR "/tests/fixtures/qwen2_micro\";",
                          "path = \"" FIXTURE "\"; compute = \"bf16\";"};
    for (int c = 0; c < 2; c++) {
        harness a, b;
        cr_assert_eq(harness_open(&a, "transformer_cuda", TERN_KIND_MODEL, cfgs[c]), TERN_OK,
                     "%s", a.error);
        cr_assert_eq(harness_open(&b, "transformer_cuda", TERN_KIND_MODEL, cfgs[c]), TERN_OK,
                     "%s", b.error);
        const tern_model_ops *o = harness_ops(&a);
        float *dl[NSEQ], dlbuf[NSEQ][24];
        for (int s = 0; s < NSEQ; s++) {
            dl[s] = dlbuf[s];
            for (size_t i = 0; i < seqs[s].len; i++)
                dlbuf[s][i] = i >= seqs[s].start ? -1.0f / (float)(i + 1) : 0;
        }
        const float *const *dlc = (const float *const *)dl;
        for (int step = 0; step < 3; step++) {
            tern_optim_step sa = {.size = sizeof sa, .lr = 1e-2, .beta1 = 0.9, .beta2 = 0.95,
                                  .eps = 1e-8, .weight_decay = 0.1, .grad_clip = 1.0};
            tern_optim_step sb = sa;
            cr_assert_eq(o->backward(a.state, seqs, NSEQ, dlc, NULL), TERN_OK, "%s", a.error);
            cr_assert_eq(o->step(a.state, &sa), TERN_OK, "%s", a.error);
            cr_assert_eq(o->backward(b.state, seqs, NSEQ, dlc, NULL), TERN_OK, "%s", b.error);
            cr_assert_eq(o->step(b.state, &sb), TERN_OK, "%s", b.error);
            cr_expect_eq(sa.grad_norm, sb.grad_norm, "%s step %d: gradient norms %.17g, %.17g",
                         cfgs[c], step, sa.grad_norm, sb.grad_norm);
        }
        const tern_tensor *ta, *tb;
        size_t n;
        cr_assert_eq(o->tensors(a.state, &ta, &n), TERN_OK);
        cr_assert_eq(o->tensors(b.state, &tb, &n), TERN_OK);
        for (size_t i = 0; i < n; i++)
            cr_expect_eq(memcmp(ta[i].data, tb[i].data, ta[i].bytes), 0,
                         "%s: %s differs between two identical trainings", cfgs[c], ta[i].name);
        harness_close(&b);
        harness_close(&a);
    }
}

Test(cuda, generate_and_score_agree)
{
    need_gpu();
    expect_generate_matches_score("transformer_cuda", "path = \"" FIXTURE "\";", 0.8f);
}

Test(cuda, continuous_batching_equals_one_batch)
{
    need_gpu();
    expect_decode_rows_change_nothing("transformer_cuda", "path = \"" FIXTURE "\";", 1e-4);
}

Test(cuda, on_token_hears_each_token_and_stops_one_sample)
{
    need_gpu();
    expect_on_token_hears_and_stops("transformer_cuda", "path = \"" FIXTURE "\";", 1e-4);
}

/* threads = 4: the sampler's team exists (the byte vocabulary's steps are
 * sampled on one thread; test_gen_driver checks parallel sampling) */
Test(cuda, continuous_batching_equals_one_batch_with_threads_4)
{
    need_gpu();
    expect_decode_rows_change_nothing("transformer_cuda", "path = \"" FIXTURE "\"; threads = 4;",
                                      1e-4);
}

/* Decode steps of more rows than the prefill before them: a one-token
 * prompt and 16 samples in bf16 (the products' bf16 scratch was sized by the
 * prefill's single row and the first step refused). */
Test(cuda, many_samples_of_a_one_token_prompt_bf16)
{
    need_gpu();
    harness h;
    int rc = harness_open(&h, "transformer_cuda", TERN_KIND_MODEL,
                          "path = \"" FIXTURE "\"; compute = \"bf16\";");
    cr_assert_eq(rc, TERN_OK, "%s", h.error);
    const tern_model_ops *ops = harness_ops(&h);
    int32_t prompt[1] = {256};
    tern_gen_request req = {.size = sizeof req, .prompt = prompt, .prompt_len = 1,
                            .n_samples = 16, .max_new_tokens = 6, .temperature = 1, .top_p = 1,
                            .seed = 3};
    tern_gen_output out[16];
    for (int i = 0; i < 16; i++)
        out[i] = (tern_gen_output){.size = sizeof out[i]};
    cr_assert_eq(ops->generate(h.state, &req, 1, out), TERN_OK, "%s", h.error);
    for (int i = 0; i < 16; i++) {
        cr_expect_gt(out[i].len, 0);
        ops->free_buffer(h.state, out[i].tokens);
        ops->free_buffer(h.state, out[i].logprobs);
    }
    harness_close(&h);
}

Test(cuda, continuous_batching_equals_one_batch_bf16)
{
    need_gpu();
    expect_decode_rows_change_nothing("transformer_cuda", "path = \"" FIXTURE "\"; "
                                      "compute = \"bf16\";", 1e-3);
}

Test(cuda, adamw_steps_reduce_the_loss)
{
    need_gpu();
    expect_training_halves_nll("transformer_cuda", "init = { preset = \"tiny\"; seed = 3; "
                                                   "num_hidden_layers = 2; };");
}

/* What a user sees: without a GPU, one message naming the CPU plugin; with
 * one, a device that does not exist is refused by its setting. */
Test(cuda, a_missing_device_is_one_clear_message)
{
    harness h;
    const char *cfg = gpu_count() ? "init = { preset = \"tiny\"; }; device = 99;"
                                  : "init = { preset = \"tiny\"; };";
    cr_expect_neq(harness_open(&h, "transformer_cuda", TERN_KIND_MODEL, cfg), TERN_OK);
    if (gpu_count())
        cr_expect(strstr(h.error, "device") && strstr(h.error, "99"), "%s", h.error);
    else
        cr_expect(strstr(h.error, "CUDA") && strstr(h.error, "plugin = \"transformer\""), "%s",
                  h.error);
    harness_close(&h);
}

/* The weights on the device (device_tensors, ABI 1.8), as a transport plugin
 * moves them: a fresh instance given another's device weights, then told
 * (device_tensors_written), scores as that one, in fp32 and in bf16 (whose
 * bf16 copy must follow); and its host copy (tensors) is the new weights. */
static void check_device_tensors(const char *compute)
{
    need_gpu();
    make_batch();
    char cfg[512];
    snprintf(cfg, sizeof cfg, "path = \"%s\"; compute = \"%s\";", FIXTURE, compute);
    harness a, b;
    cr_assert_eq(harness_open(&a, "transformer_cuda", TERN_KIND_MODEL, cfg), TERN_OK, "%s",
                 a.error);
    const tern_model_ops *o = harness_ops(&a);
    cr_assert(o->device_tensors && o->device_tensors_written);
    /* b: the fixture's shape from other weights (the fixture's config, fresh) */
    snprintf(cfg, sizeof cfg, "path = \"%s\"; compute = \"%s\";", FIXTURE, compute);
    cr_assert_eq(harness_open(&b, "transformer_cuda", TERN_KIND_MODEL, cfg), TERN_OK, "%s",
                 b.error);
    const tern_tensor *tb;
    size_t nb;
    int32_t dev = -1;
    cr_assert_eq(o->device_tensors(b.state, &tb, &nb, &dev), TERN_OK, "%s", b.error);
    cr_expect_eq(dev, 0);
    for (size_t i = 0; i < nb; i++) /* zero b's weights on the device */
        cr_assert_eq(cudaMemset(tb[i].data, 0, tb[i].bytes), cudaSuccess);
    cr_assert_eq(o->device_tensors_written(b.state), TERN_OK, "%s", b.error);
    cr_expect_gt(score_diff(o, b.state, o, a.state), 1e-3, "zeroed weights score otherwise");

    const tern_tensor *ta;
    size_t na;
    cr_assert_eq(o->device_tensors(a.state, &ta, &na, &dev), TERN_OK, "%s", a.error);
    cr_assert_eq(o->device_tensors(b.state, &tb, &nb, &dev), TERN_OK, "%s", b.error);
    cr_assert_eq(na, nb);
    for (size_t i = 0; i < na; i++) {
        cr_assert_str_eq(ta[i].name, tb[i].name);
        cr_assert_eq(ta[i].bytes, tb[i].bytes);
        cr_assert_eq(cudaMemcpy(tb[i].data, ta[i].data, ta[i].bytes, cudaMemcpyDeviceToDevice),
                     cudaSuccess);
    }
    cr_assert_eq(o->device_tensors_written(b.state), TERN_OK, "%s", b.error);
    double d = score_diff(o, b.state, o, a.state);
    cr_expect_lt(d, 1e-6, "%s: the copied weights score alike (differ by %g)", compute, d);
    /* the host copies agree too (tensors() pulls what the device holds) */
    const tern_tensor *ha, *hb;
    size_t n;
    cr_assert_eq(o->tensors(a.state, &ha, &n), TERN_OK);
    cr_assert_eq(o->tensors(b.state, &hb, &n), TERN_OK);
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(memcmp(ha[i].data, hb[i].data, ha[i].bytes), 0, "%s", ha[i].name);
    harness_close(&b);
    harness_close(&a);
}

Test(cuda, device_tensors_carry_weights_between_instances_fp32) { check_device_tensors("fp32"); }
Test(cuda, device_tensors_carry_weights_between_instances_bf16) { check_device_tensors("bf16"); }

/* The gradients on the device (device_gradients, ABI 1.8), as data-parallel
 * trainer ranks sum them (nccl): after the same backward they equal the CPU
 * plugin's host gradients (gradients op), and step() uses what the caller
 * leaves there: doubled gradients move the weights as a doubled batch does. */
Test(cuda, device_gradients_are_the_gradients_step_uses)
{
    need_gpu();
    make_batch();
    char cfg[512];
    snprintf(cfg, sizeof cfg, "path = \"%s\";", FIXTURE);
    harness cpu, gpu;
    cr_assert_eq(harness_open(&cpu, "transformer", TERN_KIND_MODEL, cfg), TERN_OK, "%s",
                 cpu.error);
    cr_assert_eq(harness_open(&gpu, "transformer_cuda", TERN_KIND_MODEL, cfg), TERN_OK, "%s",
                 gpu.error);
    const tern_model_ops *oc = harness_ops(&cpu), *og = harness_ops(&gpu);
    cr_assert(og->device_gradients);
    float *dl[NSEQ], dlbuf[NSEQ][24];
    for (int s = 0; s < NSEQ; s++) {
        dl[s] = dlbuf[s];
        for (size_t i = 0; i < seqs[s].len; i++)
            dlbuf[s][i] = i >= seqs[s].start ? -1.0f / (float)(i + 1) : 0;
    }
    const float *const *dlc = (const float *const *)dl;
    cr_assert_eq(oc->backward(cpu.state, seqs, NSEQ, dlc, NULL), TERN_OK);
    cr_assert_eq(og->backward(gpu.state, seqs, NSEQ, dlc, NULL), TERN_OK, "%s", gpu.error);
    const tern_tensor *gc, *gg;
    size_t nc, ng;
    int32_t dev = -1;
    cr_assert_eq(oc->gradients(cpu.state, &gc, &nc), TERN_OK);
    cr_assert_eq(og->device_gradients(gpu.state, &gg, &ng, &dev), TERN_OK, "%s", gpu.error);
    cr_assert_eq(ng, nc);
    cr_expect_eq(dev, 0);
    for (size_t i = 0; i < nc; i++) {
        cr_assert_str_eq(gg[i].name, gc[i].name);
        cr_assert_eq(gg[i].bytes, gc[i].bytes);
        size_t k = gc[i].bytes / sizeof(float);
        float *h = malloc(gc[i].bytes);
        cr_assert_eq(cudaMemcpy(h, gg[i].data, gc[i].bytes, cudaMemcpyDeviceToHost),
                     cudaSuccess);
        const float *c = gc[i].data;
        double num = 0, den = 0;
        for (size_t j = 0; j < k; j++) {
            num += ((double)h[j] - c[j]) * ((double)h[j] - c[j]);
            den += (double)c[j] * c[j];
        }
        double e = den > 0 ? sqrt(num / den) : sqrt(num);
        cr_expect_lt(e, 1e-4, "%s: device gradient relative error %g", gc[i].name, e);
        /* double both sides' gradients where the caller may write them */
        for (size_t j = 0; j < k; j++) {
            h[j] *= 2;
            ((float *)gc[i].data)[j] *= 2;
        }
        cr_assert_eq(cudaMemcpy(gg[i].data, h, gc[i].bytes, cudaMemcpyHostToDevice),
                     cudaSuccess);
        free(h);
    }
    /* SGD-like step (beta 0, eps >> |g|): the update is lr·g/eps, so the
     * doubled gradients must show on both sides alike */
    tern_optim_step st = {.size = sizeof st, .lr = 1.0, .beta1 = 0, .beta2 = 0, .eps = 1e3,
                          .weight_decay = 0, .grad_clip = 0};
    tern_optim_step sg = st;
    cr_assert_eq(oc->step(cpu.state, &st), TERN_OK);
    cr_assert_eq(og->step(gpu.state, &sg), TERN_OK, "%s", gpu.error);
    cr_expect_lt(fabs(sg.grad_norm - st.grad_norm) / st.grad_norm, 1e-4,
                 "the step saw the doubled gradients: norm %g on the GPU, %g on the CPU",
                 sg.grad_norm, st.grad_norm);
    double d = score_diff(og, gpu.state, oc, cpu.state);
    cr_expect_lt(d, 1e-4, "after the step the two score alike (differ by %g)", d);
    harness_close(&gpu);
    harness_close(&cpu);
}
