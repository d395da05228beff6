/*
 * edgesdk_dequantize.h - DEQUANTIZE int8/int16 -> float32: (float)(x - zero_point) * scale in float32, which
 * equals TFLite's static_cast<float>(double(scale) * (x - zero_point)) exactly (the product is exact
 * in double, so both round the same real number once).
 */
#ifndef EDGESDK_DEQUANTIZE_H
#define EDGESDK_DEQUANTIZE_H

#include <stdint.h>

typedef struct {
    int32_t size;
    float scale;
    int32_t zero_point;
} edgesdk_dequantize_params;

void edgesdk_dequantize_s8_f32(const edgesdk_dequantize_params *p, const int8_t *input, float *output);
void edgesdk_dequantize_s16_f32(const edgesdk_dequantize_params *p, const int16_t *input, float *output);

#endif /* EDGESDK_DEQUANTIZE_H */
