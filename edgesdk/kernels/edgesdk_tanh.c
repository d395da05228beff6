/*
 * edgesdk_tanh.c - int8 TANH in fixed point, bit-exact with TFLite Micro's reference kernel.
 */
#include "edgesdk_fixedpoint.h"
#include "edgesdk_logistic.h"

#define INPUT_INTEGER_BITS 4

void edgesdk_tanh_s8(const edgesdk_sigmoid_params *p, const int8_t *input, int8_t *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        const int32_t x = (int32_t)input[i] - p->input_zero_point;
        if (x <= -p->input_range_radius) {
            output[i] = INT8_MIN;
        } else if (x >= p->input_range_radius) {
            output[i] = INT8_MAX;
        } else {
            const int32_t x_q4 = edgesdk_requantize(x, p->input_multiplier, p->input_left_shift, p->rounding);
            const int32_t y_q0 = edgesdk_fp_tanh(x_q4, INPUT_INTEGER_BITS);
            const int32_t y = edgesdk_rounding_divide_by_pot(y_q0, 31 - 7);
            output[i] = (int8_t)edgesdk_clamp_i32(y, INT8_MIN, INT8_MAX);
        }
    }
}
