/* batching_work.c: see batching_work.h. */
#include "batching_work.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tern/rng.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Prompts [0, n) in calls of `per_call` prompts with max_rows `rows`; out
 * gets every sample. Seconds, or -1. */
static double timed(bw_generate gen, void *model, const gen_prompt *pr, int n, int per_call,
                    int rows, gen_sample *out, int G)
{
    char err[512];
    double t0 = now();
    for (int i = 0; i < n; i += per_call) {
        int k = n - i < per_call ? n - i : per_call;
        if (gen(model, pr + i, k, rows, out + (size_t)i * G, err, sizeof err) != 0) {
            fprintf(stderr, "batching: %s\n", err);
            return -1;
        }
    }
    return now() - t0;
}

static void free_out(gen_sample *out, size_t n)
{
    for (size_t s = 0; s < n; s++) {
        free(out[s].tokens);
        free(out[s].logprobs);
    }
    memset(out, 0, n * sizeof *out);
}

int bw_run(bw_generate gen, void *model, int V, int bos, int P, int G, int R, int max_new,
           int reps, const char *label)
{
    const size_t S = (size_t)P * G, n_stop = V / 128 > 0 ? (size_t)V / 128 : 1;
    int32_t *stop = malloc(n_stop * sizeof *stop);
    int32_t *toks = malloc((size_t)P * 48 * sizeof *toks);
    gen_params *gp = malloc((size_t)P * sizeof *gp);
    gen_prompt *pr = malloc((size_t)P * sizeof *pr);
    gen_sample *out[3] = {calloc(S, sizeof(gen_sample)), calloc(S, sizeof(gen_sample)),
                          calloc(S, sizeof(gen_sample))};
    int rc = -1;
    if (!stop || !toks || !gp || !pr || !out[0] || !out[1] || !out[2]) {
        fprintf(stderr, "batching: out of memory\n");
        goto done;
    }
    for (size_t k = 0; k < n_stop; k++)
        stop[k] = (int32_t)k;
    tern_rng r;
    tern_rng_seed(&r, 7);
    for (int i = 0; i < P; i++) {
        const int len = 16 + (int)tern_rng_below(&r, 32);
        int32_t *t = toks + (size_t)i * 48;
        t[0] = bos;
        for (int k = 1; k < len; k++)
            t[k] = (int32_t)tern_rng_below(&r, 256);
        gp[i] = (gen_params){.temperature = 1.0f, .top_p = 1.0f, .max_new = max_new,
                             .stop = stop, .n_stop = n_stop, .seed = 100 + (uint64_t)i};
        pr[i] = (gen_prompt){.tokens = t, .len = (size_t)len, .n_samples = G, .params = &gp[i]};
    }
    printf("batching (%s): %d prompts x %d samples, at most %d new tokens, %zu stop tokens end "
           "a sample; %d rows at once; best of %d\n", label, P, G, max_new, n_stop, R, reps);
    static const char *names[3] = {"static", "continuous", "one batch"};
    double best[3] = {0, 0, 0};
    for (int rep = 0; rep < reps; rep++)
        for (int k = 0; k < 3; k++) {
            free_out(out[k], S);
            double t = k == 0   ? timed(gen, model, pr, P, R / G, 0, out[k], G)
                       : k == 1 ? timed(gen, model, pr, P, P, R, out[k], G)
                                : timed(gen, model, pr, P, P, 0, out[k], G);
            if (t < 0)
                goto done;
            best[k] = best[k] == 0 || t < best[k] ? t : best[k];
        }
    size_t made = 0, shortest = (size_t)max_new, longest = 0, same[3] = {S, 0, 0};
    for (size_t s = 0; s < S; s++) {
        made += out[0][s].len;
        shortest = out[0][s].len < shortest ? out[0][s].len : shortest;
        longest = out[0][s].len > longest ? out[0][s].len : longest;
        for (int k = 1; k < 3; k++)
            same[k] += out[k][s].len == out[0][s].len &&
                       memcmp(out[k][s].tokens, out[0][s].tokens, out[0][s].len * 4) == 0;
    }
    printf("responses (static's): %zu tokens, %.1f on average, %zu to %zu\n", made,
           (double)made / S, shortest, longest);
    for (int k = 0; k < 3; k++)
        printf("%-10s %8.3f s  %9.0f tokens/s  %.2fx static  %zu of %zu samples as static's%s\n",
               names[k], best[k], made / best[k], best[0] / best[k], same[k], S,
               k == 2 ? "  (all samples' cache at once)" : "");
    printf("TERN_JSON {\"engine\": \"%s\", \"rows\": %d, \"samples\": %zu, \"tokens\": %zu, "
           "\"static_s\": %.4f, \"continuous_s\": %.4f, \"one_batch_s\": %.4f, "
           "\"same_continuous\": %zu, \"same_one_batch\": %zu}\n", label, R, S, made, best[0],
           best[1], best[2], same[1], same[2]);
    rc = same[1] == S && same[2] == S ? 0 : 1;
done:
    for (int k = 0; k < 3; k++) {
        if (out[k])
            free_out(out[k], S);
        free(out[k]);
    }
    free(stop), free(toks), free(gp), free(pr);
    return rc;
}
