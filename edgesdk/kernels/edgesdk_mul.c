/*
 * edgesdk_mul.c - int8 MUL, bit-exact with TFLite's reference kernel.
 */
#include "edgesdk_mul.h"

#include "edgesdk_arith.h"

static inline int8_t mul_element(const edgesdk_mul_params *p, int32_t a, int32_t b)
{
    const int32_t product = (a + p->input1_offset) * (b + p->input2_offset);
    const int32_t out =
        edgesdk_requantize(product, p->output_multiplier, p->output_shift, p->rounding) + p->output_offset;
    return (int8_t)edgesdk_clamp_i32(out, p->act_min, p->act_max);
}

void edgesdk_mul_s8(const edgesdk_mul_params *p, const int8_t *input1, const int8_t *input2, int8_t *output)
{
    const edgesdk_broadcast_shape *s = &p->shape;
    if (!s->broadcast) {
        for (int32_t i = 0; i < s->size; i++) {
            output[i] = mul_element(p, input1[i], input2[i]);
        }
        return;
    }
    const int32_t inner = s->out_shape[EDGESDK_MAX_DIMS - 1];
    const int32_t step1 = s->in1_strides[EDGESDK_MAX_DIMS - 1];
    const int32_t step2 = s->in2_strides[EDGESDK_MAX_DIMS - 1];
    for (int32_t row = 0; row < s->size / inner; row++) {
        int32_t o1, o2;
        edgesdk_broadcast_row(s, row, &o1, &o2);
        for (int32_t i = 0; i < inner; i++) {
            *output++ = mul_element(p, input1[o1 + i * step1], input2[o2 + i * step2]);
        }
    }
}

static inline int16_t mul_s16(const edgesdk_mul_params *p, int16_t a, int16_t b)
{
    const int32_t product = (a + p->input1_offset) * (b + p->input2_offset);
    const int32_t out =
        edgesdk_requantize(product, p->output_multiplier, p->output_shift, p->rounding) + p->output_offset;
    return (int16_t)edgesdk_clamp_i32(out, p->act_min, p->act_max);
}

EDGESDK_BINARY_KERNEL(edgesdk_mul_s16, edgesdk_mul_params, int16_t, int16_t, int16_t, mul_s16)
