/* rational.h: exact rationals with 128-bit magnitudes (private to the math plugin).
 *
 * A value is sign * num / den, always reduced, den > 0, and zero is never
 * negative, so two rationals are equal exactly when their fields are. Every
 * operation detects overflow and says so instead of wrapping: the caller then
 * falls back to floating point (expr.c). 128 bits hold any product of two
 * 64-bit numbers and about 38 decimal digits. */
#ifndef MATH_RATIONAL_H
#define MATH_RATIONAL_H

#include <stdint.h>

__extension__ typedef unsigned __int128 math_u128;

typedef struct math_rat {
    int neg;
    math_u128 num, den;
} math_rat;

/* What an operation gave. */
typedef enum math_rat_status {
    RAT_OK = 0,
    RAT_OVERFLOW = 1, /* the exact result does not fit: use floating point */
    RAT_UNDEFINED = 2 /* division by zero, 0^0, 0^-n: no value at all */
} math_rat_status;

math_rat math_rat_int(int64_t v);
/* num / den reduced; den must not be 0. */
math_rat math_rat_make(int neg, math_u128 num, math_u128 den);
int math_rat_is_zero(const math_rat *a);
int math_rat_equal(const math_rat *a, const math_rat *b);
math_rat math_rat_neg(math_rat a);

int math_rat_add(const math_rat *a, const math_rat *b, math_rat *out);
int math_rat_sub(const math_rat *a, const math_rat *b, math_rat *out);
int math_rat_mul(const math_rat *a, const math_rat *b, math_rat *out);
int math_rat_div(const math_rat *a, const math_rat *b, math_rat *out);
/* a^e for an integer e; |e| past 1024 or a result past 128 bits overflows. */
int math_rat_pow(const math_rat *a, int64_t e, math_rat *out);
/* The square root when num and den are both perfect squares, else
 * RAT_OVERFLOW (not rational here); RAT_UNDEFINED below zero. */
int math_rat_sqrt(const math_rat *a, math_rat *out);
/* n! for an integer 0 <= n <= 34 (34! < 2^128), else RAT_OVERFLOW. */
int math_rat_factorial(const math_rat *a, math_rat *out);
/* The binomial coefficient C(n, k) for integers 0 <= k <= n, else
 * RAT_OVERFLOW; C(n, k) with k > n is 0. */
int math_rat_binom(const math_rat *n, const math_rat *k, math_rat *out);

double math_rat_to_double(const math_rat *a);

/* 10^e for 0 <= e <= 38, else 0. */
math_u128 math_pow10_u128(unsigned e);

#endif
