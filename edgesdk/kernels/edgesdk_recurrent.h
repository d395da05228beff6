/*
 * edgesdk_recurrent.h - arithmetic shared by the recurrent kernels (LSTM, SVDF): TFLite's int16 sigmoid and tanh
 * in the two forms its references use, and saturating int16 helpers.
 *
 *   gemmlowp int16 fixed point (LiteRT's LSTM: tensor_utils::ApplySigmoid / ApplyTanh): FixedPoint<int16_t, N>
 *     logistic and tanh, with gemmlowp's wrapping int16 add/sub, its int16 SaturatingRoundingDoublingHighMul and
 *     its 32-bit constants rounded to 16 bits (RescaleConstantInitializer);
 *   an interpolated table (TFLite Micro's LSTM: reference_integer_ops::Logistic / Tanh on int16): 256 samples of
 *     sigmoid(i / 24) in Q0.16, interpolated on the input's low bits; tanh(x) = 2 sigmoid(2x) - 1 reads the same
 *     table.
 */
#ifndef EDGESDK_RECURRENT_H
#define EDGESDK_RECURRENT_H

#include <stdint.h>

#include "edgesdk_arith.h"

static inline int16_t edgesdk_sat16(int32_t v)
{
    return (int16_t)(v < -32768 ? -32768 : (v > 32767 ? 32767 : v));
}

static inline int8_t edgesdk_sat8(int32_t v)
{
    return (int8_t)(v < -128 ? -128 : (v > 127 ? 127 : v));
}

/* The int16 a 32-bit value wraps to (gemmlowp's int16 Add/Sub/Neg wrap). */
static inline int16_t edgesdk_wrap16(int32_t v)
{
    const int32_t low = (int32_t)((uint32_t)v & 0xffffu);
    return (int16_t)(low >= 32768 ? low - 65536 : low);
}

/* The int32 of a 32-bit pattern (two's complement), without implementation-defined conversions. */
static inline int32_t edgesdk_from_u32(uint32_t v)
{
    return v >= 0x80000000u ? -(int32_t)(~v) - 1 : (int32_t)v;
}

/* a + b wrapping around like an int32 accumulator on TFLite's targets. */
static inline int32_t edgesdk_wrap_add32(int32_t a, int32_t b)
{
    return edgesdk_from_u32((uint32_t)a + (uint32_t)b);
}

/* -- gemmlowp FixedPoint<int16_t, N> -------------------------------------------------------------------- */

/* SaturatingRoundingDoublingHighMul for int16: a * b / 2^15, rounded to nearest (halves away from zero). */
static inline int16_t edgesdk_q16_mul(int16_t a, int16_t b)
{
    if (a == b && a == INT16_MIN) {
        return INT16_MAX;
    }
    const int32_t ab = (int32_t)a * (int32_t)b;
    const int32_t nudge = ab >= 0 ? (1 << 14) : (1 - (1 << 14));
    return (int16_t)((ab + nudge) / (1 << 15)); /* C division truncates toward zero, as gemmlowp */
}

/* x * 2^exponent, saturating for exponent > 0, rounding to nearest for exponent < 0 (int16). */
static inline int16_t edgesdk_q16_mul_pot(int16_t x, int exponent)
{
    if (exponent < 0) {
        return (int16_t)edgesdk_rounding_divide_by_pot(x, -exponent);
    }
    if (exponent == 0) {
        return x;
    }
    const int32_t threshold = (1 << (15 - exponent)) - 1;
    if (x > threshold) {
        return INT16_MAX;
    }
    if (x < -threshold) {
        return INT16_MIN;
    }
    return edgesdk_wrap16((int32_t)x * (1 << exponent));
}

/* exp(a) for a in [-1/4, 0), Q0 -> Q0 (Taylor series around -1/8). */
static inline int16_t edgesdk_q16_exp_on_interval(int16_t a)
{
    const int16_t exp_minus_one_eighth = 28918; /* 1895147668 rounded to 16 bits */
    const int16_t one_third = 10923;            /* 715827883 */
    const int16_t x = edgesdk_wrap16(a + (1 << 12)); /* a + 1/8 */
    const int16_t x2 = edgesdk_q16_mul(x, x);
    const int16_t x3 = edgesdk_q16_mul(x2, x);
    const int16_t x4 = edgesdk_q16_mul(x2, x2);
    const int16_t x4_over_4 = edgesdk_q16_mul_pot(x4, -2);
    const int16_t poly = edgesdk_q16_mul_pot(
        edgesdk_wrap16(edgesdk_q16_mul(edgesdk_wrap16(x4_over_4 + x3), one_third) + x2), -1);
    return edgesdk_sat16((int32_t)exp_minus_one_eighth +
                         edgesdk_q16_mul(exp_minus_one_eighth, edgesdk_wrap16(x + poly)));
}

/* exp(a) for a <= 0 in Q(integer_bits) (0 <= integer_bits <= 7), result Q0. */
static inline int16_t edgesdk_q16_exp_on_negative_values(int16_t a, int integer_bits)
{
    /* exp(-2^k), k = -2..4, in Q0.15 */
    static const int16_t barrel[7] = {25520, 19875, 12055, 4435, 600, 11, 0};
    const int fractional_bits = 15 - integer_bits;
    const int16_t one_quarter = (int16_t)(1 << (fractional_bits - 2));
    const int16_t mask = (int16_t)(one_quarter - 1);
    const int16_t a_mod_quarter_minus_one_quarter = edgesdk_wrap16((a & mask) - one_quarter);
    int16_t result = edgesdk_q16_exp_on_interval(edgesdk_q16_mul_pot(a_mod_quarter_minus_one_quarter, integer_bits));
    const int16_t remainder = edgesdk_wrap16(a_mod_quarter_minus_one_quarter - a);
    for (int exponent = -2; exponent <= 4; exponent++) {
        if (integer_bits > exponent && (remainder & (1 << (fractional_bits + exponent))) != 0) {
            result = edgesdk_q16_mul(result, barrel[exponent + 2]);
        }
    }
    if (integer_bits > 5 && a < -(1 << (20 - integer_bits))) { /* below -32 */
        result = 0;
    }
    return a == 0 ? INT16_MAX : result;
}

/* The Newton-Raphson reciprocal of gemmlowp: returns x ~ 1 / (half_denominator) in Q2. */
static inline int16_t edgesdk_q16_newton_reciprocal(int16_t half_denominator)
{
    const int16_t c48_over_17 = 23130;      /* Q2: 1515870810 rounded to 16 bits */
    const int16_t c_neg_32_over_17 = -15420; /* Q2: -1010580540 */
    const int16_t one_q2 = 1 << 13;
    int16_t x = edgesdk_wrap16(c48_over_17 + edgesdk_q16_mul(half_denominator, c_neg_32_over_17));
    for (int i = 0; i < 3; i++) {
        const int16_t one_minus = edgesdk_wrap16(one_q2 - edgesdk_q16_mul(half_denominator, x));
        x = edgesdk_wrap16(x + edgesdk_q16_mul_pot(edgesdk_q16_mul(x, one_minus), 2));
    }
    return x;
}

static inline int16_t edgesdk_q16_half_denominator(int16_t a)
{
    const int32_t sum = (int32_t)a + INT16_MAX;
    return (int16_t)((sum + (sum >= 0 ? 1 : -1)) / 2); /* RoundingHalfSum(a, One) */
}

/* logistic(a), a in Q(integer_bits), result Q0.15 (gemmlowp::logistic). */
static inline int16_t edgesdk_q16_logistic(int16_t a, int integer_bits)
{
    if (a == 0) {
        return 1 << 14;
    }
    const int16_t abs_a = a > 0 ? a : edgesdk_wrap16(-(int32_t)a);
    const int16_t e = edgesdk_q16_exp_on_negative_values(edgesdk_wrap16(-(int32_t)abs_a), integer_bits);
    const int16_t x = edgesdk_q16_newton_reciprocal(edgesdk_q16_half_denominator(e));
    const int16_t positive = edgesdk_q16_mul_pot(x, 1); /* x / 2 read as Q1, back to Q0 */
    return a > 0 ? positive : edgesdk_wrap16(INT16_MAX - positive);
}

/* tanh(a), a in Q(integer_bits) (0..6), result Q0.15 (gemmlowp::tanh). */
static inline int16_t edgesdk_q16_tanh(int16_t a, int integer_bits)
{
    if (a == 0) {
        return 0;
    }
    const int16_t n = a < 0 ? a : edgesdk_wrap16(-(int32_t)a);
    const int16_t e = edgesdk_q16_exp_on_negative_values(n, integer_bits + 1); /* exp(2n) */
    const int16_t x = edgesdk_q16_newton_reciprocal(edgesdk_q16_half_denominator(e));
    const int16_t t = edgesdk_q16_mul_pot(edgesdk_wrap16(x - (1 << 13)), 2); /* (1 - e) / (1 + e) */
    return a < 0 ? edgesdk_wrap16(-(int32_t)t) : t;
}

/* -- the interpolated table ------------------------------------------------------------------------------ */

/* sigmoid(i / 24) in Q0.16, i = 0..255: the values of TFLite's sigmoid_table_uint16 (data, not a formula: they
 * differ from round(65536 sigmoid(i / 24)) in the last bit here and there, and the outputs depend on them). */
static const uint16_t edgesdk_recurrent_sigmoid_table[256] = {
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149,
    40794, 41432, 42064, 42688, 43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369,
    47911, 48443, 48964, 49475, 49975, 50464, 50942, 51409, 51865, 52311, 52745, 53169,
    53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433,
    57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370,
    60565, 60753, 60935, 61110, 61279, 61441, 61599, 61750, 61896, 62036, 62172, 62302,
    62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186, 63279, 63368, 63454, 63536,
    63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308,
    64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786,
    64816, 64845, 64873, 64900, 64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079,
    65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208, 65221, 65234, 65246, 65258,
    65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360, 65367,
    65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433,
    65438, 65442, 65445, 65449, 65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474,
    65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491, 65493, 65495, 65497, 65498,
    65500, 65501, 65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513,
    65514, 65515, 65516, 65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522,
    65523, 65523, 65524, 65524, 65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528,
    65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530, 65530, 65530, 65531, 65531,
    65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533,
    65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534,
    65534, 65534, 65534, 65535
};

/* The input in table units: (x * multiplier + round) >> shift; multiplier 0 means 3 << shift, no shift. */
static inline int32_t edgesdk_lut16_input(int16_t x, int32_t multiplier, int32_t shift)
{
    if (multiplier == 0) {
        multiplier = 3 << shift;
        shift = 0;
    }
    const int32_t round = shift > 0 ? (1 << (shift - 1)) : 0;
    return ((int32_t)x * multiplier + round) >> shift;
}

/* logistic of a Q3.12 int16 (input multiplier 0, shift 0), Q0.15 result. */
static inline int16_t edgesdk_lut16_logistic(int16_t input)
{
    const int32_t x = edgesdk_lut16_input(input, 0, 0);
    const uint32_t magnitude = (uint32_t)(x < 0 ? -x : x);
    const uint32_t index = magnitude >> 9;
    uint32_t result;
    if (index >= 255) {
        result = 0x7fffu << 10;
    } else {
        const uint32_t a = edgesdk_recurrent_sigmoid_table[index];
        const uint32_t b = edgesdk_recurrent_sigmoid_table[index + 1];
        result = (a << 9) + (magnitude & 0x1ffu) * (b - a);
    }
    result = x >= 0 ? result + (1u << 9) : (1u << 25) - result + (1u << 9) - 1u;
    result >>= 10;
    return edgesdk_wrap16((int32_t)result);
}

/* tanh of an int16 whose table input is (x * multiplier + round) >> shift, Q0.15 result. */
static inline int16_t edgesdk_lut16_tanh(int16_t input, int32_t multiplier, int32_t shift)
{
    const int32_t x = edgesdk_lut16_input(input, multiplier, shift);
    const uint32_t magnitude = (uint32_t)(x < 0 ? -x : x);
    const uint32_t index = magnitude >> 8;
    int32_t result;
    if (index >= 255) {
        result = 0xffff << 8;
    } else {
        const uint32_t a = edgesdk_recurrent_sigmoid_table[index];
        const uint32_t b = edgesdk_recurrent_sigmoid_table[index + 1];
        result = (int32_t)((a << 8) + (magnitude & 0xffu) * (b - a));
    }
    result = x >= 0 ? result - (1 << 23) + (1 << 7) : -result + (1 << 23) + (1 << 7) - 1;
    result >>= 8; /* arithmetic shift (GCC), as the reference on its targets */
    return edgesdk_wrap16(result);
}

#endif /* EDGESDK_RECURRENT_H */
