/*
 * edgesdk_fixedpoint.h - the gemmlowp fixed-point functions TFLite's integer softmax/logistic/tanh use,
 * on raw int32 values. `Qm` below means gemmlowp's FixedPoint<int32_t, m> (m integer bits).
 */
#ifndef EDGESDK_FIXEDPOINT_H
#define EDGESDK_FIXEDPOINT_H

#include <stdint.h>

#include "edgesdk_arith.h"

#define EDGESDK_FP_ONE_Q0 INT32_MAX /* Q0 cannot hold 1.0 exactly: gemmlowp uses the largest value */

static inline int32_t edgesdk_fp_mul(int32_t a, int32_t b)
{
    return edgesdk_saturating_rounding_doubling_high_mul(a, b);
}

/* (a + b) / 2 rounded to nearest, halves away from zero (gemmlowp RoundingHalfSum). */
static inline int32_t edgesdk_fp_rounding_half_sum(int32_t a, int32_t b)
{
    const int64_t sum = (int64_t)a + (int64_t)b;
    return (int32_t)((sum + (sum >= 0 ? 1 : -1)) / 2);
}

/* x * 2^exponent: saturating for exponent > 0, rounding to nearest for exponent < 0. */
static inline int32_t edgesdk_fp_mul_pot(int32_t x, int exponent)
{
    if (exponent < 0) {
        return edgesdk_rounding_divide_by_pot(x, -exponent);
    }
    if (exponent == 0) {
        return x;
    }
    const int32_t threshold = (int32_t)((1u << (31 - exponent)) - 1u);
    if (x > threshold) {
        return INT32_MAX;
    }
    if (x < -threshold) {
        return INT32_MIN;
    }
    return (int32_t)((uint32_t)x << exponent);
}

/* Q(src) -> Q(dst) (gemmlowp Rescale). */
static inline int32_t edgesdk_fp_rescale(int32_t x, int src_integer_bits, int dst_integer_bits)
{
    return edgesdk_fp_mul_pot(x, src_integer_bits - dst_integer_bits);
}

/* exp(a) for a in [-1/4, 0), Q0 -> Q0: Taylor expansion around -1/8. */
static inline int32_t edgesdk_fp_exp_on_interval_neg_quarter(int32_t a)
{
    const int32_t exp_minus_one_eighth = 1895147668;
    const int32_t one_third = 715827883;
    const int32_t x = a + (1 << 28); /* a + 1/8 */
    const int32_t x2 = edgesdk_fp_mul(x, x);
    const int32_t x3 = edgesdk_fp_mul(x2, x);
    const int32_t x4 = edgesdk_fp_mul(x2, x2);
    const int32_t x4_over_4 = edgesdk_fp_mul_pot(x4, -2);
    const int32_t poly = edgesdk_fp_mul_pot(edgesdk_fp_mul(x4_over_4 + x3, one_third) + x2, -1);
    return exp_minus_one_eighth + edgesdk_fp_mul(exp_minus_one_eighth, x + poly);
}

/* exp(a) for a <= 0 given in Q(integer_bits), result Q0 (gemmlowp exp_on_negative_values). */
static inline int32_t edgesdk_fp_exp_on_negative_values(int32_t a, int integer_bits)
{
    /* exp(-2^k) for k = -2..4, Q0: applied for each set bit of the integer part of -a. */
    static const int32_t barrel_multipliers[7] = {1672461947, 1302514674, 790015084, 290630308,
                                                  39332535,   720401,     242};
    const int fractional_bits = 31 - integer_bits;
    const int32_t one_quarter = (int32_t)1 << (fractional_bits - 2);
    const int32_t mask = one_quarter - 1;
    const int32_t a_mod_quarter_minus_one_quarter = (a & mask) - one_quarter;
    int32_t result = edgesdk_fp_exp_on_interval_neg_quarter(edgesdk_fp_rescale(a_mod_quarter_minus_one_quarter, integer_bits, 0));
    const int32_t remainder = a_mod_quarter_minus_one_quarter - a;
    for (int exponent = -2; exponent <= 4; exponent++) {
        if (integer_bits > exponent && (remainder & ((int32_t)1 << (fractional_bits + exponent))) != 0) {
            result = edgesdk_fp_mul(result, barrel_multipliers[exponent + 2]);
        }
    }
    if (integer_bits > 5 && a < -((int32_t)1 << (36 - integer_bits))) { /* below -32: exp underflows */
        result = 0;
    }
    return a == 0 ? EDGESDK_FP_ONE_Q0 : result;
}

/* 1 / (1 + a) for a in [0, 1), Q0 -> Q0: Newton-Raphson division (gemmlowp). */
static inline int32_t edgesdk_fp_one_over_one_plus_x(int32_t a)
{
    const int32_t half_denominator = edgesdk_fp_rounding_half_sum(a, EDGESDK_FP_ONE_Q0);
    const int32_t c48_over_17 = 1515870810;      /* Q2 */
    const int32_t c_neg_32_over_17 = -1010580540; /* Q2 */
    const int32_t one_q2 = (int32_t)1 << 29;
    int32_t x = c48_over_17 + edgesdk_fp_mul(half_denominator, c_neg_32_over_17); /* Q2 */
    for (int i = 0; i < 3; i++) {
        const int32_t one_minus_half_denominator_times_x = one_q2 - edgesdk_fp_mul(half_denominator, x);
        x = x + edgesdk_fp_rescale(edgesdk_fp_mul(x, one_minus_half_denominator_times_x), 4, 2);
    }
    return edgesdk_fp_rescale(x, 1, 0); /* x / 2, read as Q1, back to Q0 */
}

/* (1 - a) / (1 + a) for a in [0, 1), Q0 -> Q0 (gemmlowp one_minus_x_over_one_plus_x_for_x_in_0_1). */
static inline int32_t edgesdk_fp_one_minus_x_over_one_plus_x(int32_t a)
{
    const int32_t half_denominator = edgesdk_fp_rounding_half_sum(a, EDGESDK_FP_ONE_Q0);
    const int32_t c48_over_17 = 1515870810;
    const int32_t c_neg_32_over_17 = -1010580540;
    const int32_t one_q2 = (int32_t)1 << 29;
    int32_t x = c48_over_17 + edgesdk_fp_mul(half_denominator, c_neg_32_over_17);
    for (int i = 0; i < 3; i++) {
        const int32_t one_minus_half_denominator_times_x = one_q2 - edgesdk_fp_mul(half_denominator, x);
        x = x + edgesdk_fp_rescale(edgesdk_fp_mul(x, one_minus_half_denominator_times_x), 4, 2);
    }
    return edgesdk_fp_rescale(x - one_q2, 2, 0);
}

/* logistic(a) for a in Q(integer_bits), result Q0 (gemmlowp logistic). */
static inline int32_t edgesdk_fp_logistic(int32_t a, int integer_bits)
{
    if (a == 0) {
        return (int32_t)1 << 30; /* 0.5 */
    }
    const int32_t abs_a = a > 0 ? a : -a;
    const int32_t positive = edgesdk_fp_one_over_one_plus_x(edgesdk_fp_exp_on_negative_values(-abs_a, integer_bits));
    return a > 0 ? positive : EDGESDK_FP_ONE_Q0 - positive;
}

/* tanh(a) for a in Q(integer_bits), result Q0 (gemmlowp tanh). */
static inline int32_t edgesdk_fp_tanh(int32_t a, int integer_bits)
{
    if (a == 0) {
        return 0;
    }
    const int32_t neg_abs = a < 0 ? a : -a;
    /* -tanh(n) for n < 0 = (1 - exp(2n)) / (1 + exp(2n)); 2n is n read with one more integer bit. */
    const int32_t t = edgesdk_fp_one_minus_x_over_one_plus_x(edgesdk_fp_exp_on_negative_values(neg_abs, integer_bits + 1));
    return a < 0 ? -t : t;
}

#endif /* EDGESDK_FIXEDPOINT_H */
