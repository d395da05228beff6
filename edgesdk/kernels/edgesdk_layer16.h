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
 * The kernels sum the products and the bias in int32 when the compiler proved that nothing can overflow
 * (`sum32`: 2^15 * sum|w| + |bias| < 2^31 for every output channel); the total is the same integer, and the
 * 64-bit requantization of an int32 accumulator needs only a 32x32->64 multiply (edgesdk_requantize16_small).
 * In the EDGESDK_ACC32 mode the accumulator is the exact sum taken modulo 2^32, which is what TFLite's
 * wrapping int32 additions give.
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

/* edgesdk_mbqm64 of an accumulator that fits int32: |x * reduced| < 2^46, no overflow. */
static inline int32_t edgesdk_mbqm64_small(int32_t x, int32_t multiplier, int32_t shift)
{
    const int32_t reduced = multiplier < 0x7FFF0000 ? (multiplier + (1 << 15)) >> 16 : 0x7FFF;
    const int total_shift = 15 - shift;
    const int64_t product = (int64_t)x * reduced + ((int64_t)1 << (total_shift - 1));
    return (int32_t)(uint32_t)(uint64_t)(product >> total_shift);
}

/*
 * edgesdk_mbqm64_small in 32-bit steps, with the compiler's per-channel form of the multiplier (`fast_requant`:
 * every nonzero multiplier has shift <= -1, i.e. total_shift = 15 - shift >= 16). With P = acc * reduced,
 * q = floor(P / 2^(total_shift - 1)) is one mulhsu by m = reduced << (33 - total_shift) (total_shift <= 33) or
 * by m = reduced followed by >> s = total_shift - 33; |q| < 2^31. Then floor((P + 2^(total_shift-1)) /
 * 2^total_shift) = floor((q + 1) / 2) = (q >> 1) + (q & 1).
 */
static inline int32_t edgesdk_mbqm64_fast(int32_t acc, int32_t m, int32_t s)
{
    const int32_t q = (int32_t)(((int64_t)acc * (int64_t)(uint64_t)(uint32_t)m) >> 32) >> s;
    return (q >> 1) + (q & 1);
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

/* edgesdk_requantize16 for an accumulator the compiler proved to fit int32 (`sum32`), integer roundings only. */
static inline int32_t edgesdk_requantize16_small(int32_t acc, int32_t accumulator, int32_t rounding,
                                                 int32_t multiplier, int32_t shift)
{
    if (accumulator == EDGESDK_ACC32) {
        return edgesdk_requantize(acc, multiplier, shift, rounding);
    }
    return edgesdk_mbqm64_small(acc, multiplier, shift);
}

/* sum + bias[oc] with the wrapping of TFLite's int32 accumulator (exact when the compiler proved sum32). */
static inline int32_t edgesdk_add_bias32(int32_t sum, const int64_t *bias, int32_t oc)
{
    return bias != 0 ? (int32_t)((uint32_t)sum + (uint32_t)(int32_t)bias[oc]) : sum;
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
