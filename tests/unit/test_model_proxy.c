/* test_model_proxy.c: the model proxy (core/src/model/model.c) hands a
 * plugin built against an older ABI minor its arrays of requests and
 * sequences strided as that plugin knows them: each element the members of
 * its minor, `size` set to their bytes (tern/abi.h: structs grow at the
 * end, and an array of them is strided by their size). */
#include <criterion/criterion.h>
#include <stddef.h>
#include <string.h>

#include "model/model.h"
#include "tern/abi.h"

/* What the fake plugin saw: each element's size and prompt length, read at
 * the stride it was built with. */
static size_t seen_size[4], seen_len[4], stride;

static int fake_generate(void *state, const tern_gen_request *req, size_t n,
                         tern_gen_output *outs)
{
    (void)state;
    for (size_t i = 0; i < n; i++) {
        const tern_gen_request *r = (const void *)((const char *)req + i * stride);
        seen_size[i] = r->size, seen_len[i] = r->prompt_len;
        outs[i].len = 0;
    }
    return TERN_OK;
}

static int fake_score(void *state, const tern_sequence *seqs, size_t n, float **lp, float **ent)
{
    (void)state, (void)lp, (void)ent;
    for (size_t i = 0; i < n; i++) {
        const tern_sequence *s = (const void *)((const char *)seqs + i * stride);
        seen_size[i] = s->size, seen_len[i] = s->len;
    }
    return TERN_OK;
}

static void run_generate(uint32_t minor, size_t plugin_stride)
{
    tern_model_ops ops = {.size = sizeof ops, .generate = fake_generate};
    tern_model m = {.ops = &ops};
    tern_model_name(&m, "test", "fake", "fake.so", minor);
    stride = plugin_stride;
    int32_t ids[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    tern_gen_request req[3];
    tern_gen_output outs[3];
    for (size_t i = 0; i < 3; i++) {
        req[i] = (tern_gen_request){.size = sizeof req[i], .prompt = ids, .prompt_len = i + 2,
                                    .n_samples = 1, .max_new_tokens = 1};
        outs[i] = (tern_gen_output){.size = sizeof outs[i]};
    }
    memset(seen_size, 0, sizeof seen_size);
    cr_assert_eq(tern_model_generate(&m, "test", req, 3, outs), TERN_OK);
    for (size_t i = 0; i < 3; i++) {
        cr_expect_eq(seen_size[i], plugin_stride, "minor %u, request %zu: size %zu", minor, i,
                     seen_size[i]);
        cr_expect_eq(seen_len[i], i + 2, "minor %u, request %zu read at the plugin's stride",
                     minor, i);
    }
}

Test(model_proxy, requests_reach_an_older_plugin_at_its_own_stride)
{
    run_generate(TERN_ABI_MINOR, sizeof(tern_gen_request));
    run_generate(0, sizeof(tern_gen_request));
    run_generate(15, offsetof(tern_gen_request, top_logprobs));
    run_generate(14, offsetof(tern_gen_request, on_token));
    run_generate(12, offsetof(tern_gen_request, on_token));
    run_generate(11, offsetof(tern_gen_request, images));
    run_generate(4, offsetof(tern_gen_request, images));
}

static void run_score(uint32_t minor, size_t plugin_stride)
{
    tern_model_ops ops = {.size = sizeof ops, .score = fake_score};
    tern_model m = {.ops = &ops};
    tern_model_name(&m, "test", "fake", "fake.so", minor);
    stride = plugin_stride;
    int32_t ids[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    tern_sequence seqs[3];
    for (size_t i = 0; i < 3; i++)
        seqs[i] = (tern_sequence){.size = sizeof seqs[i], .tokens = ids, .len = i + 3, .start = 1};
    cr_assert_eq(tern_model_score(&m, "test", seqs, 3, NULL, NULL), TERN_OK);
    for (size_t i = 0; i < 3; i++) {
        cr_expect_eq(seen_size[i], plugin_stride, "minor %u, sequence %zu", minor, i);
        cr_expect_eq(seen_len[i], i + 3, "minor %u, sequence %zu at the plugin's stride", minor,
                     i);
    }
}

Test(model_proxy, sequences_reach_an_older_plugin_at_its_own_stride)
{
    run_score(TERN_ABI_MINOR, sizeof(tern_sequence));
    run_score(11, offsetof(tern_sequence, images));
    run_score(10, offsetof(tern_sequence, logp_out));
}
