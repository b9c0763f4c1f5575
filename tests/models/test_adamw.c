/* test_adamw.c: the transformer plugin's AdamW (decoder/adamw.c) against
 * torch.optim.AdamW (tests/ref/adamw_ref.py, fixture
 * tests/fixtures/adamw/adamw_ref.json): four steps on a tiny Llama's flat
 * parameter array with weight decay on the matrices only, Adam's bias
 * corrections and global-norm clipping (acting at step 2). Each step's
 * parameters must equal torch's to float rounding, so dropping the decay, a
 * bias correction or the clipping fails it. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/adamw.h"
#include "decoder/llama.h"

#define FIXTURE TERN_TEST_SOURCE_DIR "/tests/fixtures/adamw/adamw_ref.json"

static json_t *load(void)
{
    json_error_t e;
    json_t *root = json_load_file(FIXTURE, 0, &e);
    cr_assert_not_null(root, "%s:%d: %s", FIXTURE, e.line, e.text);
    return root;
}

static int geti(json_t *o, const char *key) { return (int)json_integer_value(json_object_get(o, key)); }
static double getd(json_t *o, const char *key) { return json_number_value(json_object_get(o, key)); }

/* The floats of JSON array a into v[n] (its length must be n). */
static void floats(json_t *a, float *v, size_t n, const char *what)
{
    cr_assert_eq(json_array_size(a), n, "%s: %zu values, the layout has %zu", what,
                 json_array_size(a), n);
    for (size_t i = 0; i < n; i++)
        v[i] = (float)json_number_value(json_array_get(a, i));
}

Test(adamw, four_steps_match_torch_adamw)
{
    json_t *root = load(), *cfg = json_object_get(root, "config");
    llama_config c = {.vocab_size = geti(cfg, "vocab_size"), .hidden_size = geti(cfg, "hidden_size"),
                      .intermediate_size = geti(cfg, "intermediate_size"),
                      .n_layers = geti(cfg, "n_layers"), .n_heads = geti(cfg, "n_heads"),
                      .n_kv_heads = geti(cfg, "n_kv_heads"), .max_positions = 16,
                      .rms_eps = 1e-5f, .rope_theta = 10000, .eos_id = 1, .pad_id = 2};
    char err[256];
    cr_assert_eq(llama_config_check(&c, err, sizeof err), 0, "%s", err);

    /* the fixture's tensors are tern's, in tern's order */
    json_t *tensors = json_object_get(root, "tensors");
    cr_assert_eq(json_array_size(tensors), llama_tensor_count(&c), "tensor count");
    for (size_t i = 0; i < llama_tensor_count(&c); i++) {
        llama_tensor_info t;
        llama_tensor_describe(&c, i, &t);
        json_t *ft = json_array_get(tensors, i), *shape = json_object_get(ft, "shape");
        cr_assert_str_eq(t.name, json_string_value(json_object_get(ft, "name")), "tensor %zu", i);
        cr_assert_eq((size_t)t.ndim, json_array_size(shape), "%s: rank", t.name);
        for (int d = 0; d < t.ndim; d++)
            cr_assert_eq(t.shape[d], json_integer_value(json_array_get(shape, (size_t)d)),
                         "%s: dim %d", t.name, d);
    }

    json_t *hp = json_object_get(root, "hparams");
    adamw_hparams h = {.lr = getd(hp, "lr"), .beta1 = getd(hp, "beta1"),
                       .beta2 = getd(hp, "beta2"), .eps = getd(hp, "eps"),
                       .weight_decay = getd(hp, "weight_decay"),
                       .grad_clip = getd(hp, "grad_clip")};
    size_t n = llama_param_count(&c);
    float *p = malloc(n * sizeof *p), *g = malloc(n * sizeof *g), *want = malloc(n * sizeof *want);
    cr_assert(p && g && want);
    floats(json_object_get(root, "init"), p, n, "init");
    adamw o;
    cr_assert_eq(adamw_init(&o, n), 0);
    json_t *steps = json_object_get(root, "steps");
    cr_assert_eq(json_array_size(steps), 4);
    for (size_t k = 0; k < json_array_size(steps); k++) {
        json_t *s = json_array_get(steps, k);
        floats(json_object_get(s, "grads"), g, n, "grads");
        floats(json_object_get(s, "params"), want, n, "params");
        double norm = adamw_step(&o, NULL, &c, p, g, &h);
        cr_expect_float_eq(norm, getd(s, "norm"), 1e-5 * (1 + getd(s, "norm")),
                           "step %zu: gradient norm %g, torch's %g", k + 1, norm,
                           getd(s, "norm"));
        double worst = 0;
        size_t at = 0;
        for (size_t i = 0; i < n; i++) {
            double d = fabs((double)p[i] - want[i]) / (1 + fabs((double)want[i]));
            if (d > worst)
                worst = d, at = i;
        }
        /* float rounding of a different order of operations: ~1e-7; a lost
         * term of the update is 1e-4 or more here */
        cr_expect_lt(worst, 2e-6, "step %zu: parameter %zu is %.9g, torch.optim.AdamW has %.9g",
                     k + 1, at, p[at], want[at]);
    }
    adamw_free(&o);
    free(p);
    free(g);
    free(want);
    json_decref(root);
}
