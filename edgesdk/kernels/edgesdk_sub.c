/*
 * edgesdk_sub.c - int16 SUB, bit-exact with TFLite's reference kernels (int8 SUB runs edgesdk_add_s8 with input 2's
 * rescale table negated).
 */
#include "edgesdk_sub.h"

#include "edgesdk_arith.h"
#include "edgesdk_elementwise.h"

static inline int32_t sub_element(const edgesdk_sub_params *p, int32_t a, int32_t b)
{
    const int32_t scaled1 =
        edgesdk_requantize((a + p->input1_offset) * (1 << p->left_shift), p->input1_multiplier, p->input1_shift,
                           p->rounding);
    const int32_t scaled2 =
        edgesdk_requantize((b + p->input2_offset) * (1 << p->left_shift), p->input2_multiplier, p->input2_shift,
                           p->rounding);
    const int32_t out =
        edgesdk_requantize(scaled1 - scaled2, p->output_multiplier, p->output_shift, p->rounding) + p->output_offset;
    return edgesdk_clamp_i32(out, p->act_min, p->act_max);
}

static inline int16_t sub_s16(const edgesdk_sub_params *p, int16_t a, int16_t b)
{
    return (int16_t)sub_element(p, a, b);
}

/* LiteRT's BroadcastSub16POTSlow: each input rounded-shifted onto the output scale (in int16 arithmetic),
 * subtracted in 32 bits, clamped to the activation range. */
static inline int16_t sub_pot_s16(const edgesdk_add_pot_params *p, int16_t a, int16_t b)
{
    const int32_t scaled1 = edgesdk_rounding_divide_by_pot_s16(a, -p->input1_shift);
    const int32_t scaled2 = edgesdk_rounding_divide_by_pot_s16(b, -p->input2_shift);
    return (int16_t)edgesdk_clamp_i32(scaled1 - scaled2, p->act_min, p->act_max);
}

EDGESDK_BINARY_KERNEL(edgesdk_sub_s16, edgesdk_sub_params, int16_t, int16_t, int16_t, sub_s16)
EDGESDK_BINARY_KERNEL(edgesdk_sub_pot_s16, edgesdk_add_pot_params, int16_t, int16_t, int16_t, sub_pot_s16)
