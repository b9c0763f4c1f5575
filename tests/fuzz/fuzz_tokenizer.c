/*
 * fuzz_tokenizer.c: libFuzzer target for the Hugging Face BPE tokenizers
 * (plugins/models/transformer/tokenizer/bpe.c through tokenizer.h). The first byte picks
 * the GPT-2, Llama 3 or Qwen2 fixture of tests/fixtures/tokenizers, the rest
 * is the text, any bytes. Encoding must not crash, leak or read out of
 * bounds; every id is in the vocabulary; and decoding gives the text back
 * (its NFC for Qwen2) when it holds no '<', which every added token of the
 * three starts with.
 *
 *   build-fuzz/tests/fuzz/fuzz_tokenizer -max_total_time=600 corpus_tokenizer
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

static tokenizer *toks[3];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const dirs[3] = {FUZZ_FIXTURES "/gpt2", FUZZ_FIXTURES "/llama3",
                                        FUZZ_FIXTURES "/qwen2"};
    if (size < 1)
        return 0;
    int f = data[0] % 3;
    char err[1024];
    if (!toks[f] && tokenizer_load(dirs[f], &toks[f], err, sizeof err) != 0)
        abort(); /* the fixtures must load */
    const tokenizer *t = toks[f];
    size_t len = size - 1;
    char *text = malloc(len ? len : 1); /* exactly len bytes, for AddressSanitizer */
    if (!text)
        return 0;
    memcpy(text, data + 1, len);
    int32_t *ids;
    size_t n;
    if (tokenizer_encode(t, text, len, 1, &ids, &n) != 0)
        abort();
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= tokenizer_vocab_size(t))
            abort();
    char *back;
    size_t blen;
    if (tokenizer_decode(t, ids, n, &back, &blen) != 0)
        abort();
    if (!memchr(text, '<', len)) {
        char *want = text;
        size_t wlen = len;
        if (f == 2 && unicode_nfc(text, len, &want, &wlen) != 0)
            abort();
        if (blen != wlen || memcmp(back, want, wlen) != 0)
            abort();
        if (want != text)
            free(want);
    }
    free(back);
    free(ids);
    free(text);
    return 0;
}
