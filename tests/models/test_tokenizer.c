/* test_tokenizer.c: the tokenizer interface and the byte tokenizer
 * (plugins/models/transformer/tokenizer/tokenizer.h): exact round trips of any bytes,
 * special tokens, errors, and tokenizer.json. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tokenizer/tokenizer.h"

static const char *work_dir(const char *name)
{
    static char buf[1024];
    snprintf(buf, sizeof buf, "%s/tok_%s", TERN_TEST_WORK_DIR, name);
    mkdir(buf, 0777);
    return buf;
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
}

static tokenizer *bytes_tok(void)
{
    tokenizer *t = NULL;
    cr_assert_eq(tokenizer_new_bytes(&t), 0);
    cr_assert_not_null(t);
    return t;
}

Test(tokenizer, specials_and_vocabulary)
{
    tokenizer *t = bytes_tok();
    cr_assert_eq(tokenizer_vocab_size(t), 259);
    cr_assert_eq(tokenizer_bos(t), 256);
    cr_assert_eq(tokenizer_eos(t), 257);
    cr_assert_eq(tokenizer_pad(t), 258);
    tokenizer_free(t);
    tokenizer_free(NULL);
}

Test(tokenizer, round_trip_of_any_bytes)
{
    tokenizer *t = bytes_tok();
    /* every byte value, NULs and invalid UTF-8 (lone continuation bytes,
     * an overlong NUL, a truncated sequence) included */
    char text[256 + 8];
    for (int i = 0; i < 256; i++)
        text[i] = (char)(255 - i);
    memcpy(text + 256, "\x80\xc0\x80\xe2\x82\0\xff\x00", 8);
    int32_t *ids = NULL;
    size_t n = 0;
    cr_assert_eq(tokenizer_encode(t, text, sizeof text, 0, &ids, &n), 0);
    cr_assert_eq(n, sizeof text);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(ids[i], (unsigned char)text[i], "ids[%zu] = %d", i, ids[i]);
    char *back = NULL;
    size_t len = 0;
    cr_assert_eq(tokenizer_decode(t, ids, n, &back, &len), 0);
    cr_assert_eq(len, sizeof text);
    cr_assert_eq(memcmp(back, text, len), 0);
    cr_assert_eq(back[len], '\0', "decoded text is NUL-terminated");
    free(ids);
    free(back);
    tokenizer_free(t);
}

Test(tokenizer, add_bos_and_empty_text)
{
    tokenizer *t = bytes_tok();
    int32_t *ids = NULL;
    size_t n = 99;
    cr_assert_eq(tokenizer_encode(t, "hi", 2, 1, &ids, &n), 0);
    cr_assert_eq(n, 3);
    cr_assert_eq(ids[0], 256);
    cr_assert_eq(ids[1], 'h');
    cr_assert_eq(ids[2], 'i');
    free(ids);
    cr_assert_eq(tokenizer_encode(t, "", 0, 0, &ids, &n), 0);
    cr_assert_eq(n, 0);
    cr_assert_not_null(ids, "an empty encoding is still a block to free");
    free(ids);
    cr_assert_eq(tokenizer_encode(t, NULL, 0, 1, &ids, &n), 0);
    cr_assert_eq(n, 1);
    cr_assert_eq(ids[0], 256);
    free(ids);
    tokenizer_free(t);
}

Test(tokenizer, decode_drops_specials)
{
    tokenizer *t = bytes_tok();
    const int32_t ids[] = {256, 'a', 258, 'b', 0, 257, 'c', 258, 258};
    char *text = NULL;
    size_t len = 0;
    cr_assert_eq(tokenizer_decode(t, ids, sizeof ids / sizeof ids[0], &text, &len), 0);
    cr_assert_eq(len, 4);
    cr_assert_eq(memcmp(text, "ab\0c", 4), 0);
    free(text);
    cr_assert_eq(tokenizer_decode(t, ids, 0, &text, &len), 0);
    cr_assert_eq(len, 0);
    cr_assert_str_eq(text, "");
    free(text);
    tokenizer_free(t);
}

Test(tokenizer, decode_refuses_ids_out_of_range)
{
    tokenizer *t = bytes_tok();
    const int32_t high[] = {'a', 259}, neg[] = {-1}, huge[] = {'x', 0x7fffffff};
    const int32_t *cases[3] = {high, neg, huge};
    size_t counts[3] = {2, 1, 2};
    for (int i = 0; i < 3; i++) {
        char *text = (char *)"untouched";
        size_t len = 12345;
        errno = 0;
        cr_assert_eq(tokenizer_decode(t, cases[i], counts[i], &text, &len), -1, "case %d", i);
        cr_assert_eq(errno, ERANGE);
        cr_assert_str_eq(text, "untouched", "nothing is returned on an error");
        cr_assert_eq(len, 12345);
    }
    tokenizer_free(t);
}

Test(tokenizer, save_and_load)
{
    tokenizer *t = bytes_tok();
    const char *dir = work_dir("save");
    char err[1024] = "";
    cr_assert_eq(tokenizer_save(t, dir, err, sizeof err), 0, "%s", err);
    tokenizer_free(t);

    char path[2048];
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    char text[1024];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    cr_assert_not_null(strstr(text, "\"tern_tokenizer\": \"bytes\""), "%s", text);
    cr_assert_not_null(strstr(text, "\"version\": 1"), "%s", text);
    cr_assert_not_null(strstr(text, "\"vocab_size\": 259"), "%s", text);
    strcat(path, ".tmp");
    struct stat st;
    cr_assert_neq(stat(path, &st), 0, "the temp file remains");

    tokenizer *back = NULL;
    cr_assert_eq(tokenizer_load(dir, &back, err, sizeof err), 0, "%s", err);
    cr_assert_eq(tokenizer_vocab_size(back), 259);
    cr_assert_eq(tokenizer_eos(back), 257);
    int32_t *ids;
    cr_assert_eq(tokenizer_encode(back, "x", 1, 1, &ids, &n), 0);
    cr_assert_eq(n, 2);
    cr_assert_eq(ids[1], 'x');
    free(ids);
    tokenizer_free(back);
}

Test(tokenizer, load_refuses_hugging_face_bpe)
{
    const char *dir = work_dir("hf");
    write_file(dir, "tokenizer.json",
               "{\"version\": \"1.0\", \"truncation\": null, \"padding\": null,\n"
               " \"added_tokens\": [{\"id\": 0, \"content\": \"<|endoftext|>\","
               " \"special\": true}],\n"
               " \"normalizer\": null, \"pre_tokenizer\": {\"type\": \"ByteLevel\"},\n"
               " \"model\": {\"type\": \"BPE\", \"dropout\": null, \"vocab\": {\"a\": 1},"
               " \"merges\": []}}\n");
    tokenizer *t = NULL;
    char err[1024] = "";
    cr_assert_eq(tokenizer_load(dir, &t, err, sizeof err), -1);
    cr_assert_null(t);
    /* Hugging Face BPE is read (test_bpe.c); this one lacks the ByteLevel decoder */
    cr_assert_not_null(strstr(err, "key \"decoder\" is null; tern supports ByteLevel only"),
                       "%s", err);
    cr_assert_not_null(strstr(err, "tok_hf/tokenizer.json"), "%s", err);
}

Test(tokenizer, load_refusals)
{
    const char *cases[][2] = {
        {"{\"tern_tokenizer\": \"bpe\", \"version\": 1}",
         "key \"tern_tokenizer\" must be \"bytes\""},
        {"{\"tern_tokenizer\": 3, \"version\": 1}", "key \"tern_tokenizer\" must be \"bytes\""},
        {"{\"tern_tokenizer\": \"bytes\", \"version\": 2}", "key \"version\" must be 1"},
        {"{\"tern_tokenizer\": \"bytes\", \"version\": 1, \"bos_token_id\": 1, "
         "\"eos_token_id\": 257, \"pad_token_id\": 258, \"vocab_size\": 259}",
         "key \"bos_token_id\" is 1 but the byte tokenizer has 256"},
        {"{\"tern_tokenizer\": \"bytes\", \"version\": 1, \"bos_token_id\": 256, "
         "\"eos_token_id\": 257, \"pad_token_id\": 258}",
         "missing key \"vocab_size\""},
        {"{\"tern_tokenizer\": \"bytes\", \"version\": 1, \"bos_token_id\": \"256\"}",
         "key \"bos_token_id\" must be an integer"},
        {"{\"vocab\": {}}", "no \"tern_tokenizer\" key"},
        {"[1, 2]", "must hold a JSON object"},
        {"{\"tern", "cannot read the tokenizer"},
    };
    const char *dir = work_dir("bad");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_file(dir, "tokenizer.json", cases[i][0]);
        tokenizer *t = NULL;
        char err[1024] = "";
        cr_assert_eq(tokenizer_load(dir, &t, err, sizeof err), -1, "case %zu accepted", i);
        cr_assert_not_null(strstr(err, cases[i][1]), "case %zu: \"%s\" lacks \"%s\"", i, err,
                           cases[i][1]);
    }
    tokenizer *t = NULL;
    char err[1024] = "";
    cr_assert_eq(tokenizer_load(work_dir("empty"), &t, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "tok_empty/tokenizer.json"), "%s", err);
    t = bytes_tok();
    char missing[1100];
    snprintf(missing, sizeof missing, "%s/tok-no-such-dir", TERN_TEST_WORK_DIR);
    cr_assert_eq(tokenizer_save(t, missing, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "cannot create"), "%s", err);
    tokenizer_free(t);
}

Test(tokenizer, refuses_a_fifo_without_blocking)
{
    alarm(20); /* a read that blocks on the FIFO ends the test here */
    const char *dir = work_dir("fifo");
    char path[1100], want[1300];
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    unlink(path);
    cr_assert_eq(mkfifo(path, 0600), 0);
    tokenizer *t = NULL;
    char err[1024] = "";
    cr_assert_eq(tokenizer_load(dir, &t, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: cannot read the tokenizer: not a regular file but a FIFO "
             "(named pipe)", path);
    cr_expect_str_eq(err, want);
    unlink(path);
}
