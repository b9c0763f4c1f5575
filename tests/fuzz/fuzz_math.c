/*
 * fuzz_math.c: libFuzzer target for the math reward's verifier
 * (plugins/rewards/math/: extraction, normalisation, parsing, comparison).
 * The first byte splits the rest of the input into a response and a gold
 * answer, each copied into a block of exactly its size so that
 * AddressSanitizer catches a read past the end. The response goes through
 * extraction with every form, the gold through the gold's (math_extract_gold), and the two
 * are compared, as the plugin does; then each is compared with itself and the
 * pair in both orders. Nothing may crash, leak, hang or read out of bounds,
 * and the verdicts must be consistent:
 *   - a non-empty answer equals itself (the same text always matches);
 *   - equality is symmetric, except where the documented bounds cut the work
 *     short ("too complex") or equations are compared by their ratio, whose
 *     tolerance test depends on which side is the divisor.
 *
 *   build-fuzz/tests/fuzz/fuzz_math -max_len=4096 -timeout=10 corpus tests/fuzz/corpus_math
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "equiv.h"
#include "extract.h"
#include "number.h"

static char *copy_of(const uint8_t *p, size_t n)
{
    char *c = malloc(n ? n : 1);
    if (c && n)
        memcpy(c, p, n);
    return c;
}

static int asymmetric_ok(const math_verdict *v)
{
    return strcmp(v->note, "too complex") == 0 || strcmp(v->note, "as equations") == 0 ||
           strcmp(v->note, "arithmetic left undone") == 0;
}

static void check_pair(const char *a, size_t alen, const char *b, size_t blen, const math_opts *o)
{
    math_verdict ab, ba;
    if (math_equivalent(a, alen, b, blen, o, &ab) != 0 ||
        math_equivalent(b, blen, a, alen, o, &ba) != 0)
        return; /* out of memory: not a finding */
    if (ab.equal != ba.equal && !asymmetric_ok(&ab) && !asymmetric_ok(&ba))
        abort();
}

static void check_self(const char *a, size_t alen, const math_opts *o)
{
    math_verdict v;
    if (math_equivalent(a, alen, a, alen, o, &v) != 0)
        return;
    const char *t = a;
    size_t n = alen;
    math_answer_clean(&t, &n);
    if (n && !v.equal)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t rest = size - 1, split = (size_t)data[0] * rest / 255;
    char *resp = copy_of(data + 1, split), *gold = copy_of(data + 1 + split, rest - split);
    size_t rlen = split, glen = rest - split;
    if (!resp || !gold) {
        free(resp);
        free(gold);
        return 0;
    }
    static const math_form all[] = {MATH_FORM_BOXED,      MATH_FORM_HASHES,
                                    MATH_FORM_ANSWER_IS,  MATH_FORM_FINAL_LINE,
                                    MATH_FORM_LAST_MATH, MATH_FORM_LAST_NUMBER};
    math_opts opts = {.tolerance = 1e-6, .points = 8, .percent_either = 1};

    math_answer a, g;
    math_extract(resp, rlen, all, 6, &a);
    const char *gt = gold;
    size_t gl = glen;
    if (math_extract_gold(gold, glen, &g)) {
        gt = g.text;
        gl = g.len;
    }
    if (a.form != MATH_FORM_NONE) {
        int joined = a.text == a.joined && a.len <= sizeof a.joined;
        if (!joined && (a.text < resp || a.text + a.len > resp + rlen))
            abort(); /* an answer lies inside the response, or is boxes joined */
        check_pair(a.text, a.len, gt, gl, &opts);
        check_self(a.text, a.len, &opts);
    }
    /* the raw halves too: the verifier sees every byte, not only extracted ones */
    check_pair(resp, rlen, gold, glen, &opts);
    check_self(gold, glen, &opts);
    free(resp);
    free(gold);
    return 0;
}
