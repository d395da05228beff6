/*
 * edgesdk_prelu.c - PRELU, bit-exact with TFLite's reference kernels.
 */
#include "edgesdk_prelu.h"

#include "edgesdk_arith.h"

static inline int32_t prelu_q(const edgesdk_prelu_params *p, int32_t x, int32_t alpha)
{
    const int32_t input = p->input_offset + x;
    int32_t out;
    if (input >= 0) {
        out = edgesdk_requantize(input, p->output_multiplier_1, p->output_shift_1, p->rounding);
    } else {
        out = edgesdk_requantize(input * (p->alpha_offset + alpha), p->output_multiplier_2, p->output_shift_2,
                                 p->rounding);
    }
    return edgesdk_clamp_i32(out + p->output_offset, p->act_min, p->act_max);
}

static inline int8_t prelu_s8(const edgesdk_prelu_params *p, int8_t x, int8_t alpha)
{
    return (int8_t)prelu_q(p, x, alpha);
}

static inline int16_t prelu_s16(const edgesdk_prelu_params *p, int16_t x, int8_t alpha)
{
    return (int16_t)prelu_q(p, x, alpha);
}

/* input >= 0.0 ? input : input * alpha (NaN inputs take the product). */
static inline float prelu_f32(const edgesdk_binary_params *p, float x, float alpha)
{
    (void)p;
    return x >= 0.0f ? x : edgesdk_x86_nan_f32(x * alpha, x, alpha, EDGESDK_NAN_FIRST);
}

EDGESDK_BINARY_KERNEL(edgesdk_prelu_s8, edgesdk_prelu_params, int8_t, int8_t, int8_t, prelu_s8)
EDGESDK_BINARY_KERNEL(edgesdk_prelu_s16, edgesdk_prelu_params, int16_t, int8_t, int16_t, prelu_s16)
EDGESDK_BINARY_KERNEL(edgesdk_prelu_f32, edgesdk_binary_params, float, float, float, prelu_f32)
