/*
 * edgesdk_dequantize.c - DEQUANTIZE int8/int16 -> float32, bit-exact with TFLite's reference kernel.
 */
#include "edgesdk_dequantize.h"

void edgesdk_dequantize_s8_f32(const edgesdk_dequantize_params *p, const int8_t *input, float *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        output[i] = (float)((int32_t)input[i] - p->zero_point) * p->scale;
    }
}

/* (x - zp) is exact in float32 (|x - zp| < 2^24), so one float32 multiplication rounds the same real
 * product that TFLite's double computation rounds once. */
void edgesdk_dequantize_s16_f32(const edgesdk_dequantize_params *p, const int16_t *input, float *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        output[i] = (float)((int32_t)input[i] - p->zero_point) * p->scale;
    }
}
