/*
 * fuzz_gguf.c: libFuzzer target for the GGUF reader and everything built on
 * it (plugins/models/transformer/gguf/). The input is a whole file image:
 * gguf_open_buffer validates it; every tensor of a supported type it
 * accepts is dequantised; the config, the vocabulary texts and the tokenizer
 * are built from its keys, and for a small enough model the weights are
 * loaded. Nothing may crash, leak, read out of bounds or overflow.
 *
 *   build-fuzz/tests/fuzz/fuzz_gguf -max_total_time=600 corpus tests/fuzz/corpus_gguf
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/model.h"
#include "gguf/gguf_dequant.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_model.h"
#include "gguf/gguf_vocab.h"
#include "tokenizer/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a copy of exactly `size` bytes, so that AddressSanitizer catches a read past the end */
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    gguf_file f;
    char err[1024];
    if (gguf_open_buffer(copy, size, "fuzz", &f, err, sizeof err) == 0) {
        for (size_t i = 0; i < f.n_tensors; i++) {
            const gguf_tensor *t = &f.tensors[i];
            if (gguf_find_tensor(&f, t->name) != t)
                abort(); /* names are unique */
            ggml_type_info ti;
            ggml_type_describe(t->type, &ti);
            if (!ti.supported || !t->data)
                continue;
            if (t->nbytes != t->numel / ti.block_elems * ti.block_bytes)
                abort();
            float *x = malloc(t->numel * sizeof *x); /* at most 32x the input */
            if (x && gguf_dequantize(t->type, t->data, t->numel, x) != 0)
                abort();
            free(x);
        }
        llama_config c;
        char *tj = NULL, *cj = NULL;
        size_t tl = 0, cl = 0;
        tokenizer *tok = NULL;
        if (gguf_vocab_texts(&f, "fuzz", &tj, &tl, &cj, &cl, err, sizeof err) == 0 &&
            tokenizer_load_text("fuzz", tj, tl, cj, cl, &tok, err, sizeof err) == 0) {
            int32_t *ids = NULL;
            size_t n = 0;
            static const char text[] = "Hello 12 world!\n<|im_start|>";
            if (tokenizer_encode(tok, text, sizeof text - 1, 1, &ids, &n) == 0)
                free(ids);
        }
        tokenizer_free(tok);
        if (gguf_model_config(&f, "fuzz", &c, err, sizeof err) == 0 &&
            llama_param_count(&c) <= (size_t)1 << 20 && c.max_positions <= 4096) {
            llama_model m;
            if (llama_model_init(&m, &c, err, sizeof err) == 0) {
                gguf_model_load_weights(&f, "fuzz", &m, err, sizeof err);
                llama_model_free(&m);
            }
        }
        gguf_close(&f);
    }
    free(copy);
    return 0;
}
