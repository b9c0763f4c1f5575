/*
 * fuzz_countdown.c: libFuzzer target for the `countdown` reward's expression
 * evaluator (plugins/rewards/countdown/countdown_expr.c). Input: the
 * response's expression, any bytes. Nothing may crash or read out of
 * bounds, and a value must come back in lowest terms with a positive
 * denominator, its literals within the limit.
 *
 *   build-fuzz/tests/fuzz/fuzz_countdown -max_total_time=600 corpus tests/fuzz/corpus_countdown
 */
#include <stdint.h>
#include <stdlib.h>

#include "countdown_expr.h"

static int64_t gcd(int64_t a, int64_t b)
{
    if (a < 0)
        a = -a;
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    countdown_expr e;
    countdown_expr_status st = countdown_expr_eval((const char *)data, size, &e);
    if (st != e.status || e.n_numbers > COUNTDOWN_MAX_NUMBERS)
        abort();
    if (st == COUNTDOWN_EXPR_OK && (e.den <= 0 || gcd(e.num, e.den) != 1))
        abort();
    if (st == COUNTDOWN_EXPR_SYNTAX && e.at > size)
        abort();
    return 0;
}
