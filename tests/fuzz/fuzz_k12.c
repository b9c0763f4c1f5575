/*
 * fuzz_k12.c: libFuzzer target for the k12 reward's judging logic
 * (plugins/rewards/k12: extraction, normalisation with utf8proc, the gold
 * reader and every question kind's comparison), linked from its static
 * library. Nothing may crash, leak, read out of bounds or loop; every
 * verdict must be a reward in [0, 1] with accuracy 1 only at reward 1, and a
 * reason that is non-empty, NUL-terminated, valid UTF-8 with no control
 * characters.
 *
 * An input is two header bytes, then the gold answer, a NUL, and the
 * response (no NUL: the gold is "B" and the whole rest is the response):
 *   byte 0: bits 0-2 the kind (0 and 5-7 infer it; 1 choice, 2 true_false,
 *           3 blank, 4 numeric), bits 3-4 partial credit (3 reads as none),
 *           bit 5 the gold is JSON text, bit 6 the last-line fallback,
 *           bit 7 require_unit;
 *   byte 1: bit 0 the task has options, bits 1-7 the relative tolerance
 *           (0 to 127 x 1e-3).
 * Each input is judged twice: as laid out, and with the bytes after the
 * header as both gold and response.
 *
 *   build-fuzz/tests/fuzz/fuzz_k12 -max_len=4096 -timeout=10 corpus tests/fuzz/corpus_k12
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "judge.h"
#include "normalize.h"

static const char options[] = "[\"12 cm\", \"A. 15 cm\", \"\\u5317\\u4eac\", \"(D) yes\"]";

/* Exactly n bytes on the heap, so AddressSanitizer sees a read past them. */
static char *copy_of(const uint8_t *p, size_t n)
{
    char *c = malloc(n ? n : 1);
    if (c && n)
        memcpy(c, p, n);
    return c;
}

static size_t utf8_seq(const unsigned char *s, size_t n)
{
    if (s[0] < 0x80)
        return 1;
    size_t len = s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : s[0] >= 0xE0 && s[0] <= 0xEF ? 3
               : s[0] >= 0xC2 && s[0] <= 0xDF ? 2 : 0;
    if (!len || len > n)
        return 0;
    for (size_t k = 1; k < len; k++)
        if ((s[k] & 0xC0) != 0x80)
            return 0;
    return len;
}

static void check(const k12_verdict *v)
{
    if (!(v->reward >= 0.0 && v->reward <= 1.0) || (v->accuracy && v->reward != 1.0) ||
        (v->format != 0 && v->format != 1))
        abort();
    size_t n = strnlen(v->reason, sizeof v->reason);
    if (n == 0 || n == sizeof v->reason)
        abort();
    const unsigned char *u = (const unsigned char *)v->reason;
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq(u + i, n - i);
        if (!k || (k == 1 && (u[i] < 0x20 || u[i] == 0x7F)))
            abort();
        i += k;
    }
}

static void judge(const k12_rules *rules, const k12_question *q, const uint8_t *resp, size_t len)
{
    char *r = copy_of(resp, len);
    if (!r)
        return;
    k12_verdict v;
    if (k12_judge(rules, q, r, len, &v) == K12_OK)
        check(&v);
    free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    uint8_t f = data[0], g = data[1];
    data += 2;
    size -= 2;
    k12_rules rules = {.partial = (k12_partial)((f >> 3) & 3) == 3 ? K12_PARTIAL_NONE
                                                                    : (k12_partial)((f >> 3) & 3),
                       .rel_tol = (g >> 1) * 1e-3, .abs_tol = 1e-9,
                       .require_unit = (f >> 7) & 1, .last_line = (f >> 6) & 1};
    unsigned kind = f & 7;
    k12_question q = {.kind = kind <= 4 ? (k12_kind)kind : K12_KIND_INFER,
                      .gold_json = (f >> 5) & 1, .answer_field = "answer"};
    if (g & 1) {
        q.options = options;
        q.options_len = sizeof options - 1;
    }

    const uint8_t *nul = memchr(data, 0, size);
    size_t gold_len = nul ? (size_t)(nul - data) : 1;
    char *gold = nul ? copy_of(data, gold_len) : copy_of((const uint8_t *)"B", 1);
    if (!gold)
        return 0;
    q.gold = gold;
    q.gold_len = gold_len;
    if (nul)
        judge(&rules, &q, nul + 1, size - gold_len - 1);
    else
        judge(&rules, &q, data, size);
    free(gold);

    /* The same bytes as gold and as response. */
    gold = copy_of(data, size);
    if (!gold)
        return 0;
    q.gold = gold;
    q.gold_len = size;
    judge(&rules, &q, data, size);
    free(gold);

    /* Normalisation alone, folded or not, and the blank key. */
    char *n = NULL, *key = NULL;
    size_t nl, kl;
    if (k12_normalize((const char *)data, size, f & 1, &n, &nl) == K12_NORM_OK) {
        if (strlen(n) != nl)
            abort(); /* no NUL may survive */
        if (k12_blank_key(n, nl, &key, &kl) == K12_NORM_OK && kl > nl)
            abort();
        free(key);
    }
    free(n);
    return 0;
}
