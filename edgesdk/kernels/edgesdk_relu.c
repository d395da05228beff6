/*
 * edgesdk_relu.c - the RELU family (int8, int16, float32), bit-exact with TFLite's reference kernels.
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

void edgesdk_relu_s16(const edgesdk_relu_params *p, const int16_t *input, int16_t *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        const int32_t scaled = edgesdk_requantize((int32_t)input[i] - p->input_zero_point, p->multiplier, p->shift,
                                                  p->rounding);
        output[i] = (int16_t)edgesdk_clamp_i32(scaled + p->output_zero_point, p->act_min, p->act_max);
    }
}

void edgesdk_relu_f32(const edgesdk_relu_f32_params *p, const float *input, float *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        const float x = input[i];
        float y = x < p->lo ? p->lo : x; /* -0.0 stays -0.0; a NaN fails every comparison and passes as is */
        if (p->has_hi && y > p->hi) {
            y = p->hi;
        }
        output[i] = y;
    }
}
