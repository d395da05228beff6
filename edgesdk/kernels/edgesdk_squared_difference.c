/*
 * edgesdk_squared_difference.c - int8 and int16 SQUARED_DIFFERENCE, bit-exact with TFLite's reference kernels.
 */
#include "edgesdk_squared_difference.h"

#include "edgesdk_arith.h"

static inline int32_t squared_difference_q(const edgesdk_squared_difference_params *p, int32_t a, int32_t b)
{
    const int32_t scaled1 = edgesdk_requantize((a + p->input1_offset) * (1 << p->left_shift), p->input1_multiplier,
                                               p->input1_shift, p->rounding);
    const int32_t scaled2 = edgesdk_requantize((b + p->input2_offset) * (1 << p->left_shift), p->input2_multiplier,
                                               p->input2_shift, p->rounding);
    const int32_t diff = scaled1 - scaled2;
    const int32_t out = edgesdk_requantize(diff * diff, p->output_multiplier, p->output_shift, p->rounding);
    return edgesdk_clamp_i32(out + p->output_offset, p->act_min, p->act_max);
}

static inline int8_t squared_difference_s8(const edgesdk_squared_difference_params *p, int8_t a, int8_t b)
{
    return (int8_t)squared_difference_q(p, a, b);
}

static inline int16_t squared_difference_s16(const edgesdk_squared_difference_params *p, int16_t a, int16_t b)
{
    return (int16_t)squared_difference_q(p, a, b);
}

EDGESDK_BINARY_KERNEL(edgesdk_squared_difference_s8, edgesdk_squared_difference_params, int8_t, int8_t, int8_t,
                      squared_difference_s8)
EDGESDK_BINARY_KERNEL(edgesdk_squared_difference_s16, edgesdk_squared_difference_params, int16_t, int16_t, int16_t,
                      squared_difference_s16)
