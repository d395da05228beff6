/*
 * edgesdk_arith.h - integer requantization arithmetic of TFLite, bit for bit.
 *
 * Shared by the firmware's host kernels (cross-compiled) and the NPU model (compiled for the host),
 * so the CPU and the NPU can never round differently. Two roundings exist in TFLite:
 *   double: SaturatingRoundingDoublingHighMul then RoundingDivideByPOT (gemmlowp, two roundings)
 *   single: (x * M + 2^(30 - shift)) >> (31 - shift) in 64 bits (TFLITE_SINGLE_ROUNDING)
 * docs/rounding.md says which op uses which, per reference implementation.
 */
#ifndef EDGESDK_ARITH_H
#define EDGESDK_ARITH_H

#include <stdint.h>

#define EDGESDK_ROUNDING_DOUBLE 0
#define EDGESDK_ROUNDING_SINGLE 1
/* LiteRT's reference FULLY_CONNECTED: round(acc * (double)scale), half away from zero, in IEEE double
 * (edgesdk_fp64.h; host C kernels only, the NPU has no such mode). */
#define EDGESDK_ROUNDING_FP64 2
/* ONNX Runtime (--rounding ort): round_half_even(float32(acc) * float32 scale), edgesdk_requantize_f32 below
 * (host C kernels only). */
#define EDGESDK_ROUNDING_F32 3

static inline int32_t edgesdk_saturating_rounding_doubling_high_mul(int32_t a, int32_t b)
{
    if (a == b && a == INT32_MIN) {
        return INT32_MAX;
    }
    int64_t ab = (int64_t)a * (int64_t)b;
    int32_t nudge = ab >= 0 ? (1 << 30) : (1 - (1 << 30));
    /* C division truncates toward zero, as gemmlowp requires. */
    return (int32_t)((ab + nudge) / ((int64_t)1 << 31));
}

static inline int32_t edgesdk_rounding_divide_by_pot(int32_t x, int exponent)
{
    int32_t mask = (int32_t)(((int64_t)1 << exponent) - 1);
    int32_t remainder = x & mask;
    int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

static inline int32_t edgesdk_mbqm_double(int32_t x, int32_t multiplier, int shift)
{
    int left_shift = shift > 0 ? shift : 0;
    int right_shift = shift > 0 ? 0 : -shift;
    int32_t shifted = (int32_t)((uint32_t)x << left_shift);
    return edgesdk_rounding_divide_by_pot(edgesdk_saturating_rounding_doubling_high_mul(shifted, multiplier), right_shift);
}

static inline int32_t edgesdk_mbqm_single(int32_t x, int32_t multiplier, int shift)
{
    if (shift > 30) { /* TFLite caps the left shift at 30 in single rounding */
        shift = 30;
        multiplier = INT32_MAX;
    }
    int total_shift = 31 - shift;
    int64_t round = (int64_t)1 << (total_shift - 1);
    int64_t result = ((int64_t)x * multiplier + round) >> total_shift;
    if (result > INT32_MAX) {
        result = INT32_MAX;
    } else if (result < INT32_MIN) {
        result = INT32_MIN;
    }
    return (int32_t)result;
}

/* MultiplyByQuantizedMultiplier in the rounding the compiler chose for this op. */
static inline int32_t edgesdk_requantize(int32_t x, int32_t multiplier, int shift, int rounding)
{
    return rounding == EDGESDK_ROUNDING_SINGLE ? edgesdk_mbqm_single(x, multiplier, shift)
                                               : edgesdk_mbqm_double(x, multiplier, shift);
}

/*
 * ONNX Runtime's MlasRequantizeOutput before its output offset: round_half_even(float(acc) * scale), with
 * float(acc) rounded to float32 and the product rounded to float32, as its SSE code does. Its clamp to the
 * output range before rounding equals the callers' clamp after adding the offset (the bounds are integers);
 * the clamp to +-2^22 here only keeps the rounding by the 1.5 * 2^23 magic number exact. Float operations
 * in IEEE single precision: the kernels that call it are compiled without FMA contraction (soft-float RISC-V
 * has no FMA; the host build targets baseline x86-64).
 */
static inline int32_t edgesdk_requantize_f32(int32_t acc, float scale)
{
    float v = (float)acc * scale;
    if (v > 4194304.0f) {
        v = 4194304.0f;
    } else if (v < -4194304.0f) {
        v = -4194304.0f;
    }
    return (int32_t)((v + 12582912.0f) - 12582912.0f);
}

static inline int32_t edgesdk_clamp_i32(int32_t v, int32_t lo, int32_t hi)
{
    return v < lo ? lo : (v > hi ? hi : v);
}

#endif /* EDGESDK_ARITH_H */
