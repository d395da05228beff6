/*
 * edgesdk_quantize.c - QUANTIZE, bit-exact with TFLite's reference kernel (reference_ops::AffineQuantize,
 * reference_ops::Requantize).
 */
#include "edgesdk_quantize.h"

#include "edgesdk_arith.h"

/* static_cast<int32_t>(roundf(r)) as LiteRT computes it on x86: halves away from zero; values out of
 * the int32 range (and NaN) become INT32_MIN. No libm needed: r - truncf(r) is exact in float. */
static int32_t round_f32_to_i32(float r)
{
    if (!(r > -2147483648.0f && r < 2147483648.0f)) {
        return INT32_MIN;
    }
    int64_t q = (int32_t)r;
    const float frac = r - (float)q;
    if (frac >= 0.5f) {
        q += 1;
    } else if (frac <= -0.5f) {
        q -= 1;
    }
    return q > INT32_MAX ? INT32_MIN : (int32_t)q;
}

/* zero_point + round(x / scale), with the int32 wrap-around of the zero-point addition of the reference
 * (only for |x / scale| >= 2^31). */
static inline int32_t quantize_f32(const edgesdk_quantize_f32_params *p, float x)
{
    return (int32_t)((uint32_t)round_f32_to_i32(x / p->scale) + (uint32_t)p->zero_point);
}

void edgesdk_quantize_f32_s8(const edgesdk_quantize_f32_params *p, const float *input, int8_t *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        output[i] = (int8_t)edgesdk_clamp_i32(quantize_f32(p, input[i]), INT8_MIN, INT8_MAX);
    }
}

void edgesdk_quantize_f32_s16(const edgesdk_quantize_f32_params *p, const float *input, int16_t *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        output[i] = (int16_t)edgesdk_clamp_i32(quantize_f32(p, input[i]), INT16_MIN, INT16_MAX);
    }
}

/* requantize(x - zp_in) + zp_out, clamped to the output type. The int32 subtractions and additions wrap as
 * on x86 (reachable only with int32 inputs or absurd zero points). */
static inline int32_t requantize_value(const edgesdk_requantize_params *p, int32_t x)
{
    const int32_t centered = (int32_t)((uint32_t)x - (uint32_t)p->input_zero_point);
    const int32_t scaled = edgesdk_requantize(centered, p->multiplier, p->shift, p->rounding);
    return (int32_t)((uint32_t)scaled + (uint32_t)p->output_zero_point);
}

#define EDGESDK_DEFINE_REQUANTIZE(name, in_t, out_t, lo, hi)                                                  \
    void name(const edgesdk_requantize_params *p, const in_t *input, out_t *output)                          \
    {                                                                                                      \
        for (int32_t i = 0; i < p->size; i++) {                                                            \
            output[i] = (out_t)edgesdk_clamp_i32(requantize_value(p, input[i]), (lo), (hi));                  \
        }                                                                                                  \
    }

EDGESDK_DEFINE_REQUANTIZE(edgesdk_requantize_s8, int8_t, int8_t, INT8_MIN, INT8_MAX)
EDGESDK_DEFINE_REQUANTIZE(edgesdk_requantize_s8_s16, int8_t, int16_t, INT16_MIN, INT16_MAX)
EDGESDK_DEFINE_REQUANTIZE(edgesdk_requantize_s8_s32, int8_t, int32_t, INT32_MIN, INT32_MAX)
EDGESDK_DEFINE_REQUANTIZE(edgesdk_requantize_s16_s8, int16_t, int8_t, INT8_MIN, INT8_MAX)
EDGESDK_DEFINE_REQUANTIZE(edgesdk_requantize_s16, int16_t, int16_t, INT16_MIN, INT16_MAX)
EDGESDK_DEFINE_REQUANTIZE(edgesdk_requantize_s16_s32, int16_t, int32_t, INT32_MIN, INT32_MAX)
EDGESDK_DEFINE_REQUANTIZE(edgesdk_requantize_s32_s8, int32_t, int8_t, INT8_MIN, INT8_MAX)
EDGESDK_DEFINE_REQUANTIZE(edgesdk_requantize_s32_s16, int32_t, int16_t, INT16_MIN, INT16_MAX)

void edgesdk_convert_u8_s8(int32_t size, const uint8_t *input, int8_t *output)
{
    for (int32_t i = 0; i < size; i++) {
        output[i] = (int8_t)(input[i] ^ 0x80u);
    }
}

void edgesdk_convert_s8_u8(int32_t size, const int8_t *input, uint8_t *output)
{
    for (int32_t i = 0; i < size; i++) {
        output[i] = (uint8_t)((uint8_t)input[i] ^ 0x80u);
    }
}
