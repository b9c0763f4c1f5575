/*
 * fuzz_calculator.c: libFuzzer target for the calculator tool's expression
 * evaluator and result text (plugins/tools/calculator/expr.c,
 * value_text.c). Input: the expression, any bytes. Nothing may crash, leak,
 * overflow the stack or take long (expr.h's limits); a value must come back
 * in lowest terms within CALC_MAX_BITS, and its text NUL-terminated of the
 * length reported; a failure must say why in one line of valid UTF-8 (the
 * model reads it), a syntax error's offset within the input.
 *
 *   build-fuzz/tests/fuzz/fuzz_calculator -max_total_time=600 corpus tests/fuzz/corpus_calculator
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "expr.h"
#include "value_text.h"

/* s is well-formed UTF-8 without control characters. */
static int clean_utf8(const unsigned char *s)
{
    while (*s) {
        if (*s < 0x20 || *s == 0x7F)
            return 0;
        size_t len = *s < 0x80 ? 1 : *s >= 0xF0 ? 4 : *s >= 0xE0 ? 3 : *s >= 0xC2 ? 2 : 0;
        if (!len)
            return 0;
        for (size_t i = 1; i < len; i++)
            if ((s[i] & 0xC0) != 0x80)
                return 0;
        s += len;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mpq_t v;
    mpq_init(v);
    calc_error err;
    calc_status st = calc_eval((const char *)data, size, v, &err);
    if (st != err.status)
        abort();
    if (st == CALC_OK) {
        if (err.message[0] || mpz_sgn(mpq_denref(v)) <= 0)
            abort();
        mpz_t g;
        mpz_init(g);
        mpz_gcd(g, mpq_numref(v), mpq_denref(v));
        if (mpz_cmp_ui(g, 1) != 0)
            abort();
        mpz_clear(g);
        if ((long)(mpz_sizeinbase(mpq_numref(v), 2) + mpz_sizeinbase(mpq_denref(v), 2)) >
            CALC_MAX_BITS + 1)
            abort();
        char *text = NULL;
        size_t len = 0;
        if (calc_value_text(v, 12, &text, &len) != 0 || !text || strlen(text) != len || !len)
            abort();
        free(text);
    } else {
        size_t n = strnlen(err.message, sizeof err.message);
        if (n == 0 || n == sizeof err.message || !clean_utf8((const unsigned char *)err.message))
            abort();
        if (st == CALC_SYNTAX && err.at > size)
            abort();
    }
    mpq_clear(v);
    return 0;
}
