/*
 * edgesdk_dequantize.c - DEQUANTIZE int8 -> float32, bit-exact with TFLite's reference kernel.
 */
#include "edgesdk_dequantize.h"

void edgesdk_dequantize_s8_f32(const edgesdk_dequantize_params *p, const int8_t *input, float *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        output[i] = (float)((int32_t)input[i] - p->zero_point) * p->scale;
    }
}
