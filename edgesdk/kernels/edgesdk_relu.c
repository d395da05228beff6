/*
 * edgesdk_relu.c - int8 RELU family, bit-exact with TFLite's reference kernel.
 */
#include "edgesdk_relu.h"

#include "edgesdk_arith.h"

void edgesdk_relu_s8(const edgesdk_relu_params *p, const int8_t *input, int8_t *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        const int32_t scaled = edgesdk_requantize((int32_t)input[i] - p->input_zero_point, p->multiplier, p->shift,
                                                  p->rounding);
        output[i] = (int8_t)edgesdk_clamp_i32(scaled + p->output_zero_point, p->act_min, p->act_max);
    }
}
