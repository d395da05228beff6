/*
 * edgesdk_add.c - int8 ADD, bit-exact with TFLite's reference kernel (also its uint8 kernel, after the
 * importer's shift to int8: the arithmetic only sees value - zero_point).
 */
#include "edgesdk_add.h"

#include "edgesdk_arith.h"

static inline int8_t add_element(const edgesdk_add_params *p, int32_t a, int32_t b)
{
    const int32_t shifted1 = (a + p->input1_offset) * (1 << p->left_shift);
    const int32_t shifted2 = (b + p->input2_offset) * (1 << p->left_shift);
    const int32_t scaled1 = edgesdk_requantize(shifted1, p->input1_multiplier, p->input1_shift, p->rounding);
    const int32_t scaled2 = edgesdk_requantize(shifted2, p->input2_multiplier, p->input2_shift, p->rounding);
    const int32_t sum = scaled1 + scaled2;
    const int32_t out = edgesdk_requantize(sum, p->output_multiplier, p->output_shift, p->rounding) + p->output_offset;
    return (int8_t)edgesdk_clamp_i32(out, p->act_min, p->act_max);
}

void edgesdk_add_s8(const edgesdk_add_params *p, const int8_t *input1, const int8_t *input2, int8_t *output)
{
    const edgesdk_broadcast_shape *s = &p->shape;
    if (!s->broadcast) {
        for (int32_t i = 0; i < s->size; i++) {
            output[i] = add_element(p, input1[i], input2[i]);
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
            *output++ = add_element(p, input1[o1 + i * step1], input2[o2 + i * step2]);
        }
    }
}
