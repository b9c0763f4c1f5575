/* test_gguf.c: GGUF models in the transformer plugin (plugins/models/transformer/gguf/).
 *
 *   - the container reader refuses each kind of damage with a message that
 *     names it (files built here, byte by byte);
 *   - each supported block format dequantises to hand-computed values;
 *   - the micro model of tests/ref/gguf_ref.py (every supported type, q/k in
 *     llama.cpp's order, the "smollm" pre-tokenizer) loads to the weights
 *     and logits transformers gives, and its tokenizer to the reference ids;
 *   - `tern generate` and `tern model convert` read it, the converted
 *     directory loads to the same model, and damaged copies are refused
 *     naming the tensor or key. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command.h"
#include "decoder/model.h"
#include "gguf/gguf_dequant.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_model.h"
#include "gguf/gguf_vocab.h"
#include "hf/checkpoint.h"
#include "hf/hf_config.h"
#include "tokenizer/tokenizer.h"

#define TERN TERN_TEST_BIN
#define WORK TERN_TEST_WORK_DIR
#define SRC TERN_TEST_SOURCE_DIR
#define MICRO TERN_TEST_SOURCE_DIR "/tests/fixtures/gguf_micro"

/* ---- a little GGUF writer ------------------------------------------------------ */

typedef struct buf {
    unsigned char b[4096];
    size_t n;
} buf;

static void put(buf *w, const void *p, size_t n)
{
    cr_assert_leq(w->n + n, sizeof w->b);
    memcpy(w->b + w->n, p, n);
    w->n += n;
}
static const unsigned char zeros[256];
static void u32(buf *w, uint32_t v) { put(w, &v, 4); }
static void u64(buf *w, uint64_t v) { put(w, &v, 8); }
static void str(buf *w, const char *s)
{
    u64(w, strlen(s));
    put(w, s, strlen(s));
}
static void header(buf *w, uint32_t version, uint64_t n_tensors, uint64_t n_kv)
{
    put(w, "GGUF", 4);
    u32(w, version);
    u64(w, n_tensors);
    u64(w, n_kv);
}
static void kv_u32(buf *w, const char *key, uint32_t v)
{
    str(w, key);
    u32(w, GGUF_TYPE_UINT32);
    u32(w, v);
}
static void tensor_info(buf *w, const char *name, uint64_t ne0, uint64_t ne1, uint32_t type,
                        uint64_t offset)
{
    str(w, name);
    u32(w, 2);
    u64(w, ne0);
    u64(w, ne1);
    u32(w, type);
    u64(w, offset);
}
static void pad_to(buf *w, size_t align)
{
    while (w->n % align)
        put(w, "", 1);
}

/* gguf_open_buffer's verdict; the message in err */
static int open_buf(const buf *w, char *err, size_t errn)
{
    gguf_file f;
    int rc = gguf_open_buffer(w->b, w->n, "t.gguf", &f, err, errn);
    if (rc == 0)
        gguf_close(&f);
    return rc;
}

#define REFUSED(w, needle)                                                                    \
    do {                                                                                      \
        char err_[512] = "";                                                                  \
        cr_assert_eq(open_buf(w, err_, sizeof err_), -1, "accepted; wanted '%s'", needle);   \
        cr_expect(strstr(err_, needle), "message '%s' lacks '%s'", err_, needle);             \
    } while (0)

Test(reader, a_good_file_lists_keys_and_tensors)
{
    buf w = {.n = 0};
    header(&w, 3, 1, 2);
    kv_u32(&w, "general.alignment", 64);
    str(&w, "general.name");
    u32(&w, GGUF_TYPE_STRING);
    str(&w, "tiny");
    tensor_info(&w, "t", 32, 2, GGML_TYPE_Q8_0, 0);
    pad_to(&w, 64);
    size_t data = w.n;
    for (int b = 0; b < 2; b++) {
        uint16_t d = 0x3800; /* 0.5 */
        put(&w, &d, 2);
        for (int i = 0; i < 32; i++) {
            int8_t q = (int8_t)(i - 16 + b);
            put(&w, &q, 1);
        }
    }
    gguf_file f;
    char err[256];
    cr_assert_eq(gguf_open_buffer(w.b, w.n, "t.gguf", &f, err, sizeof err), 0, "%s", err);
    cr_expect_eq(f.version, 3);
    cr_expect_eq(f.alignment, 64);
    cr_expect_eq(f.data_start, data);
    gguf_str s;
    cr_assert_eq(gguf_kv_string(gguf_find_kv(&f, "general.name"), &s), 0);
    cr_expect(s.len == 4 && memcmp(s.s, "tiny", 4) == 0);
    const gguf_tensor *t = gguf_find_tensor(&f, "t");
    cr_assert_not_null(t);
    cr_expect_eq(t->numel, 64);
    cr_expect_eq(t->nbytes, 68);
    float x[64];
    cr_assert_eq(gguf_dequantize(t->type, t->data, 64, x), 0);
    cr_expect_eq(x[0], -8.0f);
    cr_expect_eq(x[31], 7.5f);
    cr_expect_eq(x[32], -7.5f);
    gguf_close(&f);
}

Test(reader, refuses_damage_naming_it)
{
    buf w = {.n = 0};
    put(&w, "GGML", 4);
    u32(&w, 3);
    u64(&w, 0);
    u64(&w, 0);
    REFUSED(&w, "not a GGUF file");

    w.n = 0;
    header(&w, 1, 0, 0);
    REFUSED(&w, "version 1");
    w.n = 0;
    header(&w, 0x03000000u, 0, 0);
    REFUSED(&w, "big-endian");

    w.n = 0; /* more keys than the bytes can hold */
    header(&w, 3, 0, 1000000);
    REFUSED(&w, "more than");

    w.n = 0; /* a string running past the end */
    header(&w, 3, 0, 1);
    u64(&w, 1000);
    put(&w, "general.name", 12);
    REFUSED(&w, "claims 1000 bytes");

    w.n = 0;
    header(&w, 3, 0, 2);
    kv_u32(&w, "a.b", 1);
    kv_u32(&w, "a.b", 2);
    REFUSED(&w, "key a.b appears twice");

    w.n = 0;
    header(&w, 3, 0, 1);
    str(&w, "k");
    u32(&w, 42);
    u64(&w, 0);
    REFUSED(&w, "value type 42");

    w.n = 0; /* an array of arrays */
    header(&w, 3, 0, 1);
    str(&w, "k");
    u32(&w, GGUF_TYPE_ARRAY);
    u32(&w, GGUF_TYPE_ARRAY);
    u64(&w, 1);
    REFUSED(&w, "array of array");

    w.n = 0;
    header(&w, 3, 0, 1);
    kv_u32(&w, "general.alignment", 48);
    REFUSED(&w, "power of two");

    w.n = 0; /* a tensor past the end of the data */
    header(&w, 3, 1, 0);
    tensor_info(&w, "w", 32, 4, GGML_TYPE_Q4_1, 0);
    pad_to(&w, 32);
    put(&w, "0123456789", 10);
    REFUSED(&w, "tensor w (Q4_1, 80 bytes at data offset 0) runs past the end");

    w.n = 0;
    header(&w, 3, 1, 0);
    tensor_info(&w, "w", 32, 1, GGML_TYPE_F32, 8);
    pad_to(&w, 32);
    put(&w, zeros, 200);
    REFUSED(&w, "offset 8 is not a multiple of the alignment 32");

    w.n = 0;
    header(&w, 3, 1, 0);
    tensor_info(&w, "w", 20, 1, GGML_TYPE_Q4_0, 0);
    pad_to(&w, 32);
    put(&w, zeros, 64);
    REFUSED(&w, "packs 32 weights per block, but its rows hold 20");

    w.n = 0;
    header(&w, 3, 2, 0);
    tensor_info(&w, "w", 1, 1, GGML_TYPE_F32, 0);
    tensor_info(&w, "w", 1, 1, GGML_TYPE_F32, 32);
    REFUSED(&w, "tensor w appears twice");

    w.n = 0; /* cut inside the tensor table */
    header(&w, 3, 1, 0);
    str(&w, "a_tensor_name_long_enough_to_pass_the_count_check");
    u32(&w, 2);
    REFUSED(&w, "truncated at byte");
}

/* ---- block formats ------------------------------------------------------------- */

/* Two tensors sharing bytes are refused, naming both (they were accepted,
 * their weights aliasing); and an architecture string with a NUL byte in
 * it ("llama\0xx", 8 bytes) is no llama (it read as one) (issue 47 item 11). */
Test(reader, overlapping_tensors_and_a_nul_in_the_architecture)
{
    buf w = {.n = 0};
    header(&w, 3, 2, 0);
    tensor_info(&w, "a", 32, 1, 0 /* F32 */, 0);
    tensor_info(&w, "b", 32, 1, 0, 64); /* a's 128 bytes run past 64 */
    pad_to(&w, 32);
    put(&w, zeros, 192);
    REFUSED(&w, "tensors a (bytes 0 to 128 of the data) and b (from byte 64) overlap");
    w.n = 0;
    header(&w, 3, 2, 0);
    tensor_info(&w, "a", 32, 1, 0, 0);
    tensor_info(&w, "b", 32, 1, 0, 128); /* just after: fine */
    pad_to(&w, 32);
    put(&w, zeros, 256);
    char err[512] = "";
    cr_expect_eq(open_buf(&w, err, sizeof err), 0, "%s", err);

    w.n = 0;
    header(&w, 3, 0, 1);
    str(&w, "general.architecture");
    u32(&w, GGUF_TYPE_STRING);
    u64(&w, 8);
    put(&w, "llama\0xx", 8);
    gguf_file f;
    cr_assert_eq(gguf_open_buffer(w.b, w.n, "nul.gguf", &f, err, sizeof err), 0, "%s", err);
    llama_config c;
    cr_expect_eq(gguf_model_config(&f, "nul.gguf", &c, err, sizeof err), -1, "read as a llama");
    cr_expect(strstr(err, "general.architecture holds a NUL byte (8 bytes, \"llama\" before it)"),
              "%s", err);
    gguf_close(&f);
}

Test(dequant, each_format_gives_the_hand_computed_values)
{
    unsigned char blk[40];
    float x[32];
    /* Q4_0: d = 2 (0x4000), nibbles lo = i % 16, hi = 15 - i % 16 */
    blk[0] = 0x00, blk[1] = 0x40;
    for (int i = 0; i < 16; i++)
        blk[2 + i] = (unsigned char)(i | (15 - i) << 4);
    cr_assert_eq(gguf_dequantize(GGML_TYPE_Q4_0, blk, 32, x), 0);
    for (int i = 0; i < 16; i++) {
        cr_expect_eq(x[i], 2.0f * (float)(i - 8));
        cr_expect_eq(x[16 + i], 2.0f * (float)(15 - i - 8));
    }
    /* Q4_1: d = 0.5, m = -1 (0xbc00) */
    blk[0] = 0x00, blk[1] = 0x38, blk[2] = 0x00, blk[3] = 0xbc;
    for (int i = 0; i < 16; i++)
        blk[4 + i] = (unsigned char)(i | (15 - i) << 4);
    cr_assert_eq(gguf_dequantize(GGML_TYPE_Q4_1, blk, 32, x), 0);
    for (int i = 0; i < 16; i++) {
        cr_expect_eq(x[i], 0.5f * (float)i - 1.0f);
        cr_expect_eq(x[16 + i], 0.5f * (float)(15 - i) - 1.0f);
    }
    /* Q8_0: d = 0.25 (0x3400) */
    blk[0] = 0x00, blk[1] = 0x34;
    for (int i = 0; i < 32; i++)
        blk[2 + i] = (unsigned char)(int8_t)(i * 7 - 100);
    cr_assert_eq(gguf_dequantize(GGML_TYPE_Q8_0, blk, 32, x), 0);
    for (int i = 0; i < 32; i++)
        cr_expect_eq(x[i], 0.25f * (float)(int8_t)(i * 7 - 100));
    /* F16 1.5 and -2^-24 (subnormal), BF16 -3.0 */
    unsigned char h[4] = {0x00, 0x3e, 0x01, 0x80};
    cr_assert_eq(gguf_dequantize(GGML_TYPE_F16, h, 2, x), 0);
    cr_expect_eq(x[0], 1.5f);
    cr_expect_eq(x[1], -0x1p-24f);
    unsigned char bf[2] = {0x40, 0xc0};
    cr_assert_eq(gguf_dequantize(GGML_TYPE_BF16, bf, 1, x), 0);
    cr_expect_eq(x[0], -3.0f);
    /* refused: a type not read, a count off the block */
    cr_expect_eq(gguf_dequantize(14 /* Q6_K */, blk, 256, x), -1);
    cr_expect_eq(gguf_dequantize(GGML_TYPE_Q4_0, blk, 16, x), -1);
    ggml_type_info ti;
    ggml_type_describe(14, &ti);
    cr_expect_str_eq(ti.name, "Q6_K");
    cr_expect_eq(ti.supported, 0);
}

/* ---- the micro model against transformers -------------------------------------- */

static json_t *reference(void)
{
    json_error_t je;
    json_t *r = json_load_file(MICRO "/reference.json", 0, &je);
    cr_assert_not_null(r, "reference.json: %s", je.text);
    return r;
}

/* The micro model as the plugin loads a GGUF path: config, tokenizer, weights. */
static void load_micro(const char *path, llama_model *m, tokenizer **tok)
{
    char err[1024];
    cr_assert_eq(gguf_model_load(path, m, tok, NULL, err, sizeof err), 0, "%s", err);
}

static double checksum(const float *w, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (double)w[i] * sin(0.001 * (double)i + 0.5);
    return s;
}

/* max |logits - reference| over the reference's sequences */
static double logits_diff(llama_model *m, json_t *ref)
{
    json_t *ids = json_object_get(ref, "ids"), *logits = json_object_get(ref, "logits");
    const int V = m->cfg.vocab_size;
    double worst = 0;
    for (size_t s = 0; s < json_array_size(ids); s++) {
        json_t *seq = json_array_get(ids, s);
        int T = (int)json_array_size(seq);
        int32_t start[2] = {0, T}, tok[64], pos[64], tgt[64];
        cr_assert_leq(T, 64);
        for (int t = 0; t < T; t++)
            tok[t] = (int32_t)json_integer_value(json_array_get(seq, (size_t)t)), pos[t] = t,
            tgt[t] = -1;
        llama_batch b = {.n_seqs = 1, .n_rows = T, .seq_start = start, .tokens = tok,
                         .pos = pos, .target = tgt};
        float lp[64];
        char err[256];
        cr_assert_eq(llama_forward(m, &b, lp, NULL, err, sizeof err), 0, "%s", err);
        for (int t = 0; t < T; t++) {
            json_t *row = json_array_get(json_array_get(logits, s), (size_t)t);
            cr_assert_eq(json_array_size(row), (size_t)V);
            for (int v = 0; v < V; v++)
                worst = fmax(worst, fabs(m->logits[(size_t)t * V + v] -
                                         json_real_value(json_array_get(row, (size_t)v))));
        }
    }
    return worst;
}

Test(micro, weights_tokens_and_logits_match_transformers)
{
    json_t *ref = reference();
    llama_model m;
    tokenizer *tok;
    load_micro(MICRO "/micro.gguf", &m, &tok);
    cr_expect_eq(m.cfg.vocab_size, json_integer_value(json_object_get(ref, "vocab_size")));
    cr_expect_eq(m.cfg.tie_embeddings, 0);

    /* every tensor, dequantised and (q, k) put back in Hugging Face's row order */
    json_t *sums = json_object_get(ref, "checksums"), *firsts = json_object_get(ref, "first_values");
    for (size_t i = 0; i < llama_tensor_count(&m.cfg); i++) {
        llama_tensor_info t;
        llama_tensor_describe(&m.cfg, i, &t);
        json_t *want = json_object_get(sums, t.name);
        cr_assert_not_null(want, "reference lacks %s", t.name);
        double got = checksum(m.params + t.offset, t.numel), w = json_real_value(want);
        cr_expect_leq(fabs(got - w), 1e-9 * (1 + fabs(w)), "%s: checksum %.12g, transformers "
                      "%.12g", t.name, got, w);
        json_t *f = json_object_get(firsts, t.name);
        for (size_t k = 0; k < json_array_size(f); k++)
            cr_expect_eq(m.params[t.offset + k], (float)json_real_value(json_array_get(f, k)),
                         "%s[%zu]", t.name, k);
    }

    /* the tokenizer the keys describe: added tokens, digits one by one, merges */
    json_t *texts = json_object_get(ref, "texts"), *ids = json_object_get(ref, "ids");
    for (size_t s = 0; s < json_array_size(texts); s++) {
        const char *text = json_string_value(json_array_get(texts, s));
        int32_t *got;
        size_t n;
        cr_assert_eq(tokenizer_encode(tok, text, strlen(text), 0, &got, &n), 0);
        json_t *want = json_array_get(ids, s);
        cr_expect_eq(n, json_array_size(want), "text %zu: %zu ids, reference %zu", s, n,
                     json_array_size(want));
        for (size_t k = 0; k < n && k < json_array_size(want); k++)
            cr_expect_eq(got[k], json_integer_value(json_array_get(want, k)), "text %zu id %zu",
                         s, k);
        free(got);
    }

    double d = logits_diff(&m, ref);
    cr_expect_lt(d, 1e-4, "max |logits - transformers| = %g", d);
    cr_log_info("gguf micro: max |logits - transformers| = %.3g", d);

    /* without undoing llama.cpp's q/k order the logits are another model's */
    for (int l = 0; l < m.cfg.n_layers; l++) {
        float *wq = m.p.layers[l].wq;
        const int HD = m.cfg.hidden_size / m.cfg.n_heads;
        for (size_t c = 0; c < (size_t)m.cfg.hidden_size; c++) { /* swap rows 1 and HD/2 */
            float a = wq[1 * m.cfg.hidden_size + c];
            wq[1 * m.cfg.hidden_size + c] = wq[(size_t)(HD / 2) * m.cfg.hidden_size + c];
            wq[(size_t)(HD / 2) * m.cfg.hidden_size + c] = a;
        }
    }
    cr_expect_gt(logits_diff(&m, ref), 1e-2, "the q row order does not matter to the check");
    tokenizer_free(tok);
    llama_model_free(&m);
    json_decref(ref);
}

/* ---- through the tern command ---------------------------------------------------- */

static unsigned char *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*n);
    cr_assert_eq(fread(b, 1, *n, f), *n);
    fclose(f);
    return b;
}

/* A copy of micro.gguf at WORK/name with the first `from` replaced by `to`
 * (same length), or cut to `cut` bytes (cut > 0). */
static void damaged_copy(const char *name, const char *from, const char *to, size_t cut)
{
    size_t n;
    unsigned char *b = read_all(MICRO "/micro.gguf", &n);
    if (from) {
        cr_assert_eq(strlen(from), strlen(to));
        unsigned char *p = memmem(b, n, from, strlen(from));
        cr_assert_not_null(p, "micro.gguf lacks %s", from);
        memcpy(p, to, strlen(to));
    }
    char path[512];
    snprintf(path, sizeof path, "%s/%s", WORK, name);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    fwrite(b, 1, cut ? cut : n, f);
    fclose(f);
    free(b);
}

Test(cli, generate_and_convert_read_a_gguf_file)
{
    result r;
    run(&r, "%s generate %s/micro.gguf --prompt 'the the' --temperature 0 --max-tokens 8 "
        "> gen.txt", TERN, MICRO);
    cr_assert_eq(r.code, 0, "%s", r.err);
    run(&r, "rm -rf conv && %s model convert %s/micro.gguf conv", TERN, MICRO);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "tokenizer_config.json"), "%s", r.out);
    /* the converted directory is the same model: same text out */
    run(&r, "%s generate conv --prompt 'the the' --temperature 0 --max-tokens 8 > gen2.txt && "
        "cmp gen.txt gen2.txt", TERN);
    cr_expect_eq(r.code, 0, "converted model generates otherwise: %s %s", r.out, r.err);
    /* and loads to the same weights and tokenizer */
    llama_model a, b;
    tokenizer *ta, *tb;
    load_micro(MICRO "/micro.gguf", &a, &ta);
    char err[512], cfg[600];
    llama_config c;
    snprintf(cfg, sizeof cfg, "%s/conv/config.json", WORK);
    cr_assert_eq(hf_config_read(cfg, &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(llama_model_init(&b, &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(checkpoint_load_weights(WORK "/conv", &b, NULL, err, sizeof err), 0, "%s", err);
    cr_assert_eq(tokenizer_load(WORK "/conv", &tb, err, sizeof err), 0, "%s", err);
    cr_assert_eq(a.n_params, b.n_params);
    cr_expect_eq(memcmp(a.params, b.params, a.n_params * sizeof(float)), 0);
    const char *text = "<|im_start|>user\n12 + 30 = 42, the theory<|im_end|>";
    int32_t *ia, *ib;
    size_t na, nb;
    cr_assert_eq(tokenizer_encode(ta, text, strlen(text), 0, &ia, &na), 0);
    cr_assert_eq(tokenizer_encode(tb, text, strlen(text), 0, &ib, &nb), 0);
    cr_expect(na == nb && memcmp(ia, ib, na * sizeof *ia) == 0);
    free(ia), free(ib);
    tokenizer_free(ta), tokenizer_free(tb);
    llama_model_free(&a), llama_model_free(&b);
    /* nothing is overwritten */
    run(&r, "%s model convert %s/micro.gguf conv", TERN, MICRO);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "not empty"), "%s", r.err);
}

/* `tern generate` on a damaged copy: exit 2 and a message holding `want`. */
static void refused(const char *name, const char *want)
{
    result r;
    run(&r, "%s generate %s --prompt x --max-tokens 2", TERN, name);
    cr_expect_eq(r.code, 2, "%s: exit %d: %s", name, r.code, r.err);
    cr_expect(strstr(r.err, want), "%s: message '%s' lacks '%s'", name, r.err, want);
    cr_expect(strstr(r.err, name), "%s: message '%s' does not name the file", name, r.err);
}

Test(cli, damaged_files_are_refused_naming_what)
{
    damaged_copy("cut.gguf", NULL, NULL, 100000);
    refused("cut.gguf", "runs past the end of the file");
    damaged_copy("arch.gguf", "llama", "llamb", 0);
    refused("arch.gguf", "general.architecture is \"llamb\"");
    damaged_copy("pre.gguf", "smollm", "smollX", 0);
    refused("pre.gguf", "tokenizer.ggml.pre is \"smollX\"");
    /* a missing BOS id names its key (not "special token ids (bos -1, ...)
     * must be below vocab_size", issue 47 item 11) */
    damaged_copy("nobos.gguf", "tokenizer.ggml.bos_token_id", "tokenizer.ggml.bos_token_ix", 0);
    refused("nobos.gguf", "tokenizer.ggml.bos_token_id is missing or not a token id");
    /* no padding id: EOS stands in (tern never trains on padding) */
    damaged_copy("nopad.gguf", "tokenizer.ggml.padding_token_id",
                 "tokenizer.ggml.padding_token_ix", 0);
    result rp;
    run(&rp, "%s generate nopad.gguf --prompt x --max-tokens 2", TERN);
    cr_expect_eq(rp.code, 0, "no padding id: %s", rp.err);
    damaged_copy("name.gguf", "output_norm.weight", "output_nxrm.weight", 0);
    refused("name.gguf", "tensor output_norm.weight (model.norm.weight) is missing");
    /* output.weight is Q4_0 (18-byte blocks); IQ4_NL (20) has the same size */
    size_t n;
    unsigned char *b = read_all(MICRO "/micro.gguf", &n);
    unsigned char *p = memmem(b, n, "\x0d\x00\x00\x00\x00\x00\x00\x00output.weight", 21);
    cr_assert_not_null(p);
    p += 21 + 4 + 16; /* name, n_dims, ne[2]: the type */
    cr_assert_eq(p[0], GGML_TYPE_Q4_0);
    p[0] = 20;
    FILE *f = fopen(WORK "/type.gguf", "wb");
    fwrite(b, 1, n, f);
    fclose(f);
    free(b);
    refused("type.gguf", "tensor output.weight is of type IQ4_NL");
    result r;
    run(&r, "%s generate /nonexistent.gguf --prompt x", TERN);
    cr_expect_eq(r.code, 2, "%s", r.err);
}

/* The u32 value of GGUF key `key` in b[0..n) set to v (the key's string is
 * followed by its type, 4 for UINT32, and the value). */
static void set_u32_key(unsigned char *b, size_t n, const char *key, uint32_t v)
{
    unsigned char *p = memmem(b, n, key, strlen(key));
    cr_assert_not_null(p, "micro.gguf lacks %s", key);
    uint32_t type;
    memcpy(&type, p + strlen(key), 4);
    cr_assert_eq(type, 4, "%s is not a UINT32", key);
    memcpy(p + strlen(key) + 4, &v, 4);
}

/* A header whose config implies gigabytes (context_length 2^20 with
 * embedding_length 2048 and one head: 8.6 GB of RoPE tables) while its
 * tensors are those of a tiny model is refused for its tensors' shapes
 * before anything the config implies is allocated, at once. Under a 2 GB
 * address-space limit the old order (the model's memory first) failed
 * with "out of memory" instead, after allocating what it could. */
Test(cli, a_header_implying_gigabytes_is_refused_before_allocating)
{
    size_t n;
    unsigned char *b = read_all(MICRO "/micro.gguf", &n);
    set_u32_key(b, n, "llama.context_length", 1u << 20);
    set_u32_key(b, n, "llama.embedding_length", 2048);
    set_u32_key(b, n, "llama.attention.head_count", 1);
    set_u32_key(b, n, "llama.attention.head_count_kv", 1);
    set_u32_key(b, n, "llama.rope.dimension_count", 2048);
    FILE *f = fopen(WORK "/huge.gguf", "wb");
    cr_assert_not_null(f);
    fwrite(b, 1, n, f);
    fclose(f);
    free(b);
    result r;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    /* a sanitizer reserves terabytes of address space: no limit there */
    run(&r, "%s generate huge.gguf --prompt x --max-tokens 2", TERN);
#else
    run(&r, "ulimit -v 2000000 && %s generate huge.gguf --prompt x --max-tokens 2", TERN);
#endif
    cr_expect_eq(r.code, 2, "exit %d: %s", r.code, r.err);
    cr_expect(strstr(r.err, "huge.gguf: tensor") && strstr(r.err, "the config implies ne [2048"),
              "refused for a tensor's shape: %s", r.err);
    cr_expect(!strstr(r.err, "out of memory"), "%s", r.err);
}

/* A file whose weights hold a NaN is refused when the model starts (so by
 * `tern check` too), naming the tensor: it passed and failed only after the
 * first evaluation (issue 47 item 11). */
Test(cli, weights_that_are_nan_are_refused_at_start)
{
    size_t n;
    unsigned char *b = read_all(MICRO "/micro.gguf", &n);
    gguf_file f;
    char err[512];
    cr_assert_eq(gguf_open_buffer(b, n, "micro.gguf", &f, err, sizeof err), 0, "%s", err);
    const gguf_tensor *t = gguf_find_tensor(&f, "output_norm.weight");
    cr_assert(t && t->type == 0 /* F32 */ && t->data, "micro.gguf's output_norm is F32");
    size_t at = (size_t)(t->data - b) + 4 * 3; /* its fourth weight */
    gguf_close(&f);
    const uint32_t nan_bits = 0x7fc00000u;
    memcpy(b + at, &nan_bits, 4);
    FILE *o = fopen(WORK "/nan.gguf", "wb");
    cr_assert_not_null(o);
    fwrite(b, 1, n, o);
    fclose(o);
    free(b);
    refused("nan.gguf", "tensor model.norm.weight holds NaN at weight 3 of ");
}

/* A path that is no GGUF file is named for what it is, never as a model
 * directory ("X.gguf/config.json: cannot read: Not a directory" misled). */
Test(cli, a_path_that_is_no_gguf_file_says_what_it_is)
{
    write_file(WORK "/empty.gguf", "");
    refused("empty.gguf", "empty.gguf: too short to be a GGUF file (an empty or cut-short "
                          "download?), and not a model directory");
    write_file(WORK "/text.gguf", "not a model\n");
    refused("text.gguf", "text.gguf: not a GGUF file (it does not start with \"GGUF\"), and not "
                         "a model directory");
    refused("absent.gguf", "absent.gguf: no such file or directory; give the directory of a "
                           "saved model (`tern model init` writes a fresh one) or a GGUF file");
    /* in a config: the plugin's words; for the example's model, not fetched
     * yet, the script that fetches it */
    result r;
    run(&r, "%s check %s/etc/examples/smollm2-arith.cfg -o 'model.path=\"%s/absent.gguf\"'",
        TERN, SRC, WORK);
    cr_expect_eq(r.code, 2, "%s", r.err);
    cr_expect(strstr(r.err, "model.path: " WORK "/absent.gguf: no such file or directory "
                            "(model.path names a Hugging Face model directory or a GGUF file)"),
              "%s", r.err);
    run(&r, "%s check %s/etc/examples/smollm2-arith.cfg -o 'model.path=\"%s/"
        "SmolLM2-135M-Instruct.Q4_1.gguf\"'", TERN, SRC, WORK);
    cr_expect_eq(r.code, 2, "%s", r.err);
    cr_expect(strstr(r.err, "SmolLM2-135M-Instruct.Q4_1.gguf: no such file or directory "
                            "(scripts/fetch-smollm2.py --dir DIR fetches"), "%s", r.err);
    run(&r, "%s generate %s --prompt x", TERN, WORK);
    cr_expect_eq(r.code, 2, "a directory without a model: %s", r.err);
    cr_expect(strstr(r.err, "config.json: cannot read"), "%s", r.err);
}
