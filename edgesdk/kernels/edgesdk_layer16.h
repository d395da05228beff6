/*
 * edgesdk_layer16.h - the 16x8 layer arithmetic of TFLite's reference kernels (int16 activations, int8
 * weights), shared by the int16 CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED and TRANSPOSE_CONV kernels.
 *
 * TFLite accumulates a 16x8 layer in the bias type: int64 (the converter's default; the accumulator and
 * bias are int64 and the requantization is the 64-bit MultiplyByQuantizedMultiplier overload, which
 * rounds once with the multiplier reduced to 16 bits) or int32 (quantized_bias_type INT32: an int32
 * accumulator that wraps, and the usual 32-bit requantization). LiteRT's reference FULLY_CONNECTED
 * requantizes either in IEEE double instead (EDGESDK_ROUNDING_FP64).
 *
 * The kernels sum the products in int32 when the compiler proved that no partial sum can overflow
 * (`sum32`: 2^15 * sum|w| < 2^31 for every output channel); the total is the same integer. In the
 * EDGESDK_ACC32 mode the accumulator is the exact sum taken modulo 2^32, which is what TFLite's wrapping
 * int32 additions give.
 */
#ifndef EDGESDK_LAYER16_H
#define EDGESDK_LAYER16_H

#include <stdint.h>

#include "edgesdk_arith.h"
#include "edgesdk_fp64.h"

#define EDGESDK_ACC64 0 /* int64 accumulator and bias: MultiplyByQuantizedMultiplier(int64_t x, ...) */
#define EDGESDK_ACC32 1 /* int32 accumulator (wrapping) and bias: MultiplyByQuantizedMultiplier(int32_t x, ...) */

/*
 * TFLite's MultiplyByQuantizedMultiplier(int64_t x, int32_t quantized_multiplier, int shift) (common.cc; the
 * same arithmetic in single- and double-rounding builds): the multiplier rounded to 15 fractional bits, one
 * rounding (halves up). shift in [-31, 14] (the compiler checks it; TFLite assumes [-31, 7]). The product
 * is formed in uint64 (wrapping where TFLite's would overflow, |x| >= 2^48) and the int32 conversion keeps
 * the low 32 bits, as TFLite's does on its targets.
 */
static inline int32_t edgesdk_mbqm64(int64_t x, int32_t multiplier, int32_t shift)
{
    const int32_t reduced = multiplier < 0x7FFF0000 ? (multiplier + (1 << 15)) >> 16 : 0x7FFF;
    const int total_shift = 15 - shift;
    const uint64_t product = (uint64_t)x * (uint64_t)(int64_t)reduced + ((uint64_t)1 << (total_shift - 1));
    return (int32_t)(uint32_t)(uint64_t)((int64_t)product >> total_shift);
}

/* LiteRT's double-precision requantization of an int64 accumulator: round(double(acc) * scale). */
static inline int32_t edgesdk_requantize_fp64_i64(int64_t acc, double scale, int32_t multiplier, int32_t shift)
{
    if (acc >= INT32_MIN && acc <= INT32_MAX) {
        return edgesdk_requantize_fp64_fast((int32_t)acc, scale, multiplier, shift);
    }
    return edgesdk_round_fp64((double)acc * scale);
}

/*
 * One output of a 16x8 layer: the exact sum of products plus bias (`acc`) to the requantized int32, as the
 * reference computes it in the given accumulator mode and rounding (`scale` only for EDGESDK_ROUNDING_FP64).
 */
static inline int32_t edgesdk_requantize16(int64_t acc, int32_t accumulator, int32_t rounding, int32_t multiplier,
                                           int32_t shift, double scale)
{
    if (accumulator == EDGESDK_ACC32) {
        const int32_t wrapped = (int32_t)(uint32_t)(uint64_t)acc;
        if (rounding == EDGESDK_ROUNDING_FP64) {
            return edgesdk_requantize_fp64_fast(wrapped, scale, multiplier, shift);
        }
        return edgesdk_requantize(wrapped, multiplier, shift, rounding);
    }
    if (rounding == EDGESDK_ROUNDING_FP64) {
        return edgesdk_requantize_fp64_i64(acc, scale, multiplier, shift);
    }
    return edgesdk_mbqm64(acc, multiplier, shift);
}

static inline int16_t edgesdk_clamp_s16(int32_t v, int32_t lo, int32_t hi)
{
    return (int16_t)(v < lo ? lo : (v > hi ? hi : v));
}

/* sum x[i] * w[i], i < n, in int32 (the caller proved it cannot overflow) or int64. */
static inline int32_t edgesdk_dot_s16_s8(const int16_t *x, const int8_t *w, int32_t n)
{
    int32_t acc = 0;
    for (int32_t i = 0; i < n; i++) {
        acc += (int32_t)x[i] * (int32_t)w[i];
    }
    return acc;
}

static inline int64_t edgesdk_dot_s16_s8_wide(const int16_t *x, const int8_t *w, int32_t n)
{
    int64_t acc = 0;
    for (int32_t i = 0; i < n; i++) {
        acc += (int32_t)x[i] * (int32_t)w[i];
    }
    return acc;
}

#endif /* EDGESDK_LAYER16_H */
