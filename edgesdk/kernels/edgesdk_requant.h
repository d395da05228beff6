/*
 * edgesdk_requant.h - TFLite's "double" requantization in 11 RV32IM instructions, for the fast kernels.
 *
 * edgesdk_mbqm_double (edgesdk_arith.h) follows gemmlowp step by step with 64-bit arithmetic. For the case
 * the fast kernels need -- a right shift (shift in [-31, -1]) and a multiplier in [0, 2^31), checked by the
 * compiler before it chooses a fast kernel -- the same value, for every int32 acc, comes from one
 * 32x32->64 multiply (mul + mulhsu, no library call) and three shifts:
 *
 *   SaturatingRoundingDoublingHighMul(a, M) = floor((a*M + 2^30) / 2^31)            (no saturation: M >= 0)
 *     = floor(a * 2M / 2^32) + bit 31 of (a * 2M mod 2^32)                         (2M < 2^32: unsigned)
 *   RoundingDivideByPOT(v, r) = floor((v - [v < 0] + 2^(r-1)) / 2^r)               (halves away from zero)
 *     = ((( v - [a < 0]) >> (r - 1)) + 1) >> 1
 *
 * [a < 0] may replace [v < 0]: they differ only when v = 0, where both give 0. r - 1 = ~shift.
 * tests/test_kernels.py checks this against edgesdk_mbqm_double on random and boundary values.
 */
#ifndef EDGESDK_REQUANT_H
#define EDGESDK_REQUANT_H

#include <stdint.h>

/* MultiplyByQuantizedMultiplier(acc, multiplier, shift), double rounding; shift in [-31, -1]. */
static inline int32_t edgesdk_requant_right(int32_t acc, int32_t multiplier, int32_t shift)
{
    const uint32_t m2 = (uint32_t)multiplier << 1;
    const int64_t product = (int64_t)acc * (int64_t)m2;
    const int32_t high = (int32_t)(product >> 32) + (int32_t)((uint32_t)product >> 31);
    const int32_t toward = high - (int32_t)((uint32_t)acc >> 31);
    return ((toward >> ~shift) + 1) >> 1;
}

/*
 * edgesdk_requant_right without the rounding correction for negative accumulators, for outputs clamped at or
 * above the output offset (act_min >= output_offset): equal for acc >= 0; for acc < 0 both give at most 0 (the
 * doubling high multiply of a negative acc by a non-negative multiplier is <= 0, and ((t >> s) + 1) >> 1 <= 0
 * for t <= 0), so after adding the output offset the clamp to act_min gives the same output.
 */
static inline int32_t edgesdk_requant_right_relu(int32_t acc, int32_t multiplier, int32_t shift)
{
    const uint32_t m2 = (uint32_t)multiplier << 1;
    const int64_t product = (int64_t)acc * (int64_t)m2;
    const int32_t high = (int32_t)(product >> 32) + (int32_t)((uint32_t)product >> 31);
    return ((high >> ~shift) + 1) >> 1;
}

/*
 * edgesdk_requant_right(acc, multiplier, shift) + output_offset with the per-channel constants prepared once
 * (per row, or by the compiler): m2 = 2 * multiplier (as uint32), r1 = -shift - 1, k = 1 + 2 * output_offset.
 * ((t >> r1) + 1) >> 1 + offset = ((t >> r1) + 1 + 2 * offset) >> 1, since 2 * offset is even. 8 instructions.
 */
static inline int32_t edgesdk_requant_k(int32_t acc, uint32_t m2, int32_t r1, int32_t k)
{
    const int64_t product = (int64_t)acc * (int64_t)m2;
    const int32_t high = (int32_t)(product >> 32) + (int32_t)((uint32_t)product >> 31);
    const int32_t toward = high - (int32_t)((uint32_t)acc >> 31);
    return ((toward >> r1) + k) >> 1;
}

/*
 * The same with the output offset folded into one per-channel constant: with r = -shift (1..31) and
 * K = (1 + 2 * output_offset) * 2^(r - 1), ((t >> (r - 1)) + k) >> 1 = (t + K) >> r (floor divisions nest).
 * The compiler checks |K| + |acc| < 2^31 (t, SaturatingRoundingDoublingHighMul(acc, M) minus the rounding
 * correction, is at most |acc| + 1 in magnitude). 8 instructions with K and r in registers.
 */
static inline int32_t edgesdk_requant_rk(int32_t acc, uint32_t m2, int32_t r, int32_t big_k)
{
    const int64_t product = (int64_t)acc * (int64_t)m2;
    const int32_t high = (int32_t)(product >> 32) + (int32_t)((uint32_t)product >> 31);
    const int32_t toward = high - (int32_t)((uint32_t)acc >> 31);
    return (toward + big_k) >> r;
}

/*
 * edgesdk_requant_rk without the rounding correction for negative accumulators, for layers whose activation
 * clamp starts at or above the output offset (act_min >= output_offset: ReLU, ReLU6, ...). Equal to
 * edgesdk_requant_rk for acc >= 0; for acc < 0 both are at most output_offset (the doubling high multiply of a
 * negative acc by a non-negative multiplier is <= 0, and (t + k) >> r <= output_offset for t <= 0), so the
 * clamp to act_min gives the same output. 6 instructions.
 */
static inline int32_t edgesdk_requant_rk_relu(int32_t acc, uint32_t m2, int32_t r, int32_t big_k)
{
    const int64_t product = (int64_t)acc * (int64_t)m2;
    const int32_t high = (int32_t)(product >> 32) + (int32_t)((uint32_t)product >> 31);
    return (high + big_k) >> r;
}

/* Activation clamp, int8. */
static inline int8_t edgesdk_clamp_s8(int32_t value, int32_t act_min, int32_t act_max)
{
    value = value < act_min ? act_min : value;
    value = value > act_max ? act_max : value;
    return (int8_t)value;
}

/* Output offset, activation clamp, int8. */
static inline int8_t edgesdk_requant_output(int32_t value, int32_t output_offset, int32_t act_min, int32_t act_max)
{
    value += output_offset;
    value = value < act_min ? act_min : value;
    value = value > act_max ? act_max : value;
    return (int8_t)value;
}

#endif /* EDGESDK_REQUANT_H */
