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

void edgesdk_quantize_f32_s8(const edgesdk_quantize_f32_params *p, const float *input, int8_t *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        /* int32 wrap-around of the zero-point addition, as in the reference (only for |x/scale| >= 2^31) */
        const int32_t q = (int32_t)((uint32_t)round_f32_to_i32(input[i] / p->scale) + (uint32_t)p->zero_point);
        output[i] = (int8_t)edgesdk_clamp_i32(q, INT8_MIN, INT8_MAX);
    }
}

void edgesdk_requantize_s8(const edgesdk_requantize_params *p, const int8_t *input, int8_t *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        const int32_t scaled =
            edgesdk_requantize((int32_t)input[i] - p->input_zero_point, p->multiplier, p->shift, p->rounding);
        output[i] = (int8_t)edgesdk_clamp_i32(scaled + p->output_zero_point, INT8_MIN, INT8_MAX);
    }
}

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
