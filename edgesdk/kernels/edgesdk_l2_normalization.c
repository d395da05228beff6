/*
 * edgesdk_l2_normalization.c - L2_NORMALIZATION, bit-exact with TFLite's reference kernels.
 */
#include "edgesdk_l2_normalization.h"

#include <string.h>

#include "edgesdk_fixedpoint.h"

static int count_leading_zeros(uint32_t x)
{
    int n = 0;
    if (x == 0) {
        return 32;
    }
    while ((x & 0x80000000u) == 0) {
        x <<= 1;
        n++;
    }
    return n;
}

/* 1/sqrt(input) as a Q0.31 multiplier and a (left) shift (TFLite GetInvSqrtQuantizedMultiplierExp with
 * reverse_shift -1). */
static void inv_sqrt_multiplier(int32_t input, int32_t *multiplier, int *shift)
{
    if (input <= 1) { /* 0 is treated as 1, as TFLite does */
        *multiplier = INT32_MAX;
        *shift = 0;
        return;
    }
    int right_shift = 11;
    while (input >= (1 << 29)) {
        input /= 4;
        right_shift++;
    }
    const int left_shift_bit_pairs = (count_leading_zeros((uint32_t)input) - 1) / 2 - 1;
    right_shift -= left_shift_bit_pairs;
    input <<= 2 * left_shift_bit_pairs; /* now in [2^27, 2^29) */

    /* Newton-Raphson for 1/sqrt(x) with x in Q3 (3 integer bits), starting from 1, five iterations. */
    const int32_t half_input = edgesdk_rounding_divide_by_pot(input >> 1, 1); /* Q3 */
    const int32_t half_three = (1 << 28) + (1 << 27);                            /* 1.5 in Q3 */
    int32_t x = 1 << 28;                                                         /* 1.0 in Q3 */
    for (int i = 0; i < 5; i++) {
        const int32_t x3 = edgesdk_fp_mul_pot(edgesdk_fp_mul(edgesdk_fp_mul(x, x), x), 6); /* Q9 -> Q3 */
        const int32_t t = (int32_t)((uint32_t)edgesdk_fp_mul(half_three, x) - (uint32_t)edgesdk_fp_mul(half_input, x3));
        x = edgesdk_fp_mul_pot(t, 3); /* Q6 -> Q3 */
    }
    x = edgesdk_fp_mul(x, 1518500250); /* * sqrt(2)/2 in Q0: Q3 */
    if (right_shift < 0) {
        x = (int32_t)((uint32_t)x << -right_shift);
        right_shift = 0;
    }
    *multiplier = x;
    *shift = -right_shift;
}

void edgesdk_l2_normalization_s8(const edgesdk_l2_normalization_params *p, const int8_t *input, int8_t *output)
{
    for (int32_t r = 0; r < p->rows; r++) {
        const int8_t *in = input + r * p->depth;
        int8_t *out = output + r * p->depth;
        int32_t acc = 0;
        for (int32_t c = 0; c < p->depth; c++) {
            const int32_t v = in[c] - p->input_zero_point;
            acc += v * v;
        }
        int32_t multiplier;
        int shift;
        inv_sqrt_multiplier(acc, &multiplier, &shift);
        for (int32_t c = 0; c < p->depth; c++) {
            const int32_t v = in[c] - p->input_zero_point;
            const int32_t q = edgesdk_requantize(v, multiplier, shift + 7, p->rounding); /* output scale 1/128 */
            out[c] = (int8_t)edgesdk_clamp_i32(q, INT8_MIN, INT8_MAX);
        }
    }
}

/* sqrtf, correctly rounded (IEEE), in integer arithmetic: the target's libm is not needed. */
static float sqrt_f32(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    if (u == 0 || u >= 0x7f800000u) { /* +0, +inf, NaN, and negative values (never a sum of squares) */
        return u > 0x80000000u ? (x - x) / (x - x) : x;
    }
    int32_t e = (int32_t)(u >> 23);
    uint32_t m = u & 0x7fffffu;
    if (e == 0) { /* subnormal: normalize */
        e = 1;
        while ((m & 0x800000u) == 0) {
            m <<= 1;
            e--;
        }
    } else {
        m |= 0x800000u;
    }
    e -= 150; /* x = m * 2^e, m in [2^23, 2^24) */
    /* big = m * 2^s in [2^46, 2^48) with e - s even: sqrt(x) = sqrt(big) * 2^((e - s) / 2), sqrt(big) in
     * [2^23, 2^24), i.e. exactly the 24 significant bits of the result. */
    const int s = (e & 1) ? 23 : 24;
    const uint64_t big = (uint64_t)m << s;
    uint64_t root = 0;
    uint64_t rem = 0;
    for (int i = 46; i >= 0; i -= 2) {
        rem = (rem << 2) | ((big >> i) & 3u);
        const uint64_t trial = (root << 2) | 1u;
        root <<= 1;
        if (rem >= trial) {
            rem -= trial;
            root |= 1u;
        }
    }
    int32_t k = (e - s) / 2;
    if (rem > root) { /* big > (root + 1/2)^2: round up (a square root is never exactly half way) */
        root++;
        if (root == (1u << 24)) {
            root >>= 1;
            k++;
        }
    }
    const uint32_t bits = ((uint32_t)(k + 149) << 23) + (uint32_t)root; /* root carries the hidden bit */
    float y;
    memcpy(&y, &bits, 4);
    return y;
}

void edgesdk_l2_normalization_f32(const edgesdk_l2_normalization_params *p, const float *input, float *output)
{
    const float epsilon = 1e-6f;
    for (int32_t r = 0; r < p->rows; r++) {
        const float *in = input + r * p->depth;
        float *out = output + r * p->depth;
        float squared = 0.0f;
        for (int32_t c = 0; c < p->depth; c++) {
            const float v = in[c];
            const float sq = v * v;
            squared += sq;
        }
        float norm = sqrt_f32(squared);
        norm = norm < epsilon ? epsilon : norm; /* std::max(norm, epsilon) */
        for (int32_t c = 0; c < p->depth; c++) {
            out[c] = in[c] / norm;
        }
    }
}
