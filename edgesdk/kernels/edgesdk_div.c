/*
 * edgesdk_div.c - int8 DIV, bit-exact with TFLite's reference kernel as its x86-64 builds compute it.
 *
 * TFLite's DivElementwise leaves two cases to the compiler, and both references run them:
 * - a divisor equal to its zero point (LiteRT refuses it at run time, TFLite Micro divides): GetReciprocal(0)
 *   shifts 0 left by 32 (0) and runs gemmlowp's Newton-Raphson on -1.0, whose sums overflow int32 and wrap;
 * - RoundingDivideByPOT with an exponent of 32 or more (small numerators, large divisors, small output
 *   multipliers): its mask (1ll << e) - 1 is truncated to 32 bits (all ones) and x >> e shifts by e mod 32, as
 *   x86's SAR does.
 * Both are computed here with defined arithmetic that gives the same values.
 */
#include "edgesdk_div.h"

#include "edgesdk_arith.h"

static inline int32_t wrap_add(int32_t a, int32_t b)
{
    return (int32_t)((uint32_t)a + (uint32_t)b);
}

/* CountLeadingZeros<uint32_t>: 32 for 0. */
static inline int32_t count_leading_zeros(uint32_t x)
{
    return x == 0 ? 32 : __builtin_clz(x);
}

/* CountLeadingSignBits<int32_t> (GCC's __builtin_clrsb, 31 for 0). */
static inline int32_t count_leading_sign_bits(int32_t x)
{
    const uint32_t u = x < 0 ? ~(uint32_t)x : (uint32_t)x;
    return count_leading_zeros(u) - 1;
}

/* gemmlowp's Rescale to fewer integer bits: SaturatingRoundingMultiplyByPOT<exponent > 0>. */
static inline int32_t saturating_shift_left(int32_t x, int32_t exponent)
{
    const int32_t threshold = (int32_t)((1u << (31 - exponent)) - 1u);
    if (x > threshold) {
        return INT32_MAX;
    }
    if (x < -threshold) {
        return INT32_MIN;
    }
    return (int32_t)((uint32_t)x << exponent);
}

/* gemmlowp one_over_one_plus_x_for_x_in_0_1 (Q0 -> Q0), its FixedPoint additions wrapping in int32. */
static int32_t one_over_one_plus_x(int32_t a)
{
    const int64_t sum = (int64_t)a + INT32_MAX;
    const int32_t half_denominator = (int32_t)((sum + (sum >= 0 ? 1 : -1)) / 2); /* RoundingHalfSum(a, 1) */
    const int32_t c48_over_17 = 1515870810;                                    /* Q2 */
    const int32_t c_neg_32_over_17 = -1010580540;                              /* Q2 */
    const int32_t one_q2 = (int32_t)1 << 29;
    int32_t x = wrap_add(c48_over_17, edgesdk_saturating_rounding_doubling_high_mul(half_denominator, c_neg_32_over_17));
    for (int i = 0; i < 3; i++) {
        const int32_t one_minus = (int32_t)((uint32_t)one_q2 -
                                            (uint32_t)edgesdk_saturating_rounding_doubling_high_mul(half_denominator, x));
        x = wrap_add(x, saturating_shift_left(edgesdk_saturating_rounding_doubling_high_mul(x, one_minus), 2));
    }
    return saturating_shift_left(x, 1);
}

/* gemmlowp::RoundingDivideByPOT for an exponent in [0, 63], as TFLite's x86 builds compute it. */
static inline int32_t rounding_divide_by_pot(int32_t x, int32_t exponent)
{
    const int32_t mask = exponent >= 32 ? -1 : (int32_t)(((uint32_t)1 << exponent) - 1u);
    const int32_t remainder = x & mask;
    const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return (x >> (exponent & 31)) + (remainder > threshold ? 1 : 0);
}

static inline int8_t div_s8(const edgesdk_div_params *p, int8_t a, int8_t b)
{
    int32_t input1 = p->input1_offset + a;
    int32_t input2 = p->input2_offset + b;
    if (input2 < 0) {
        input1 = -input1;
        input2 = -input2;
    }
    /* GetReciprocal(input2, 31, &recip_shift) */
    const int32_t headroom_plus_one = count_leading_zeros((uint32_t)input2);
    const int32_t recip_shift = 31 - headroom_plus_one;
    const uint32_t normalized = headroom_plus_one >= 32 ? 0u : (uint32_t)input2 << headroom_plus_one;
    const int32_t reciprocal = one_over_one_plus_x((int32_t)(normalized - (1u << 31)));
    /* MultiplyByQuantizedMultiplierGreaterThanOne(input1, reciprocal, headroom) */
    const int32_t headroom = count_leading_sign_bits(input1);
    const int32_t unscaled =
        edgesdk_saturating_rounding_doubling_high_mul((int32_t)((uint32_t)input1 << headroom), reciprocal);
    /* MultiplyByQuantizedMultiplierSmallerThanOneExp(unscaled, multiplier, total_shift) */
    const int32_t total_shift = p->output_shift - recip_shift - headroom;
    const int32_t quotient = rounding_divide_by_pot(
        edgesdk_saturating_rounding_doubling_high_mul(unscaled, p->output_multiplier), -total_shift);
    return (int8_t)edgesdk_clamp_i32(p->output_offset + quotient, p->act_min, p->act_max);
}

EDGESDK_BINARY_KERNEL(edgesdk_div_s8, edgesdk_div_params, int8_t, int8_t, int8_t, div_s8)
