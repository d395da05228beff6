/*
 * edgesdk_quantize.h - QUANTIZE, TFLite reference semantics:
 *   float32 -> int8/int16: zero_point + round(x / scale) (float32 division, halves away from zero), clamped;
 *   int8/int16/int32 -> int8/int16/int32: requantize(x - zp_in) + zp_out, clamped to the output type;
 *   uint8 <-> int8 at model edges (same scale, zero points 128 apart): flip the top bit.
 */
#ifndef EDGESDK_QUANTIZE_H
#define EDGESDK_QUANTIZE_H

#include <stdint.h>

typedef struct {
    int32_t size;
    float scale;
    int32_t zero_point;
} edgesdk_quantize_f32_params;

typedef struct {
    int32_t size;
    int32_t input_zero_point;
    int32_t output_zero_point;
    int32_t multiplier, shift; /* input_scale / output_scale */
    int32_t rounding;          /* EDGESDK_ROUNDING_DOUBLE or _SINGLE */
} edgesdk_requantize_params;

void edgesdk_quantize_f32_s8(const edgesdk_quantize_f32_params *p, const float *input, int8_t *output);
void edgesdk_quantize_f32_s16(const edgesdk_quantize_f32_params *p, const float *input, int16_t *output);
void edgesdk_requantize_s8(const edgesdk_requantize_params *p, const int8_t *input, int8_t *output);
void edgesdk_requantize_s8_s16(const edgesdk_requantize_params *p, const int8_t *input, int16_t *output);
void edgesdk_requantize_s8_s32(const edgesdk_requantize_params *p, const int8_t *input, int32_t *output);
void edgesdk_requantize_s16_s8(const edgesdk_requantize_params *p, const int16_t *input, int8_t *output);
void edgesdk_requantize_s16(const edgesdk_requantize_params *p, const int16_t *input, int16_t *output);
void edgesdk_requantize_s16_s32(const edgesdk_requantize_params *p, const int16_t *input, int32_t *output);
void edgesdk_requantize_s32_s8(const edgesdk_requantize_params *p, const int32_t *input, int8_t *output);
void edgesdk_requantize_s32_s16(const edgesdk_requantize_params *p, const int32_t *input, int16_t *output);
void edgesdk_convert_u8_s8(int32_t size, const uint8_t *input, int8_t *output);
void edgesdk_convert_s8_u8(int32_t size, const int8_t *input, uint8_t *output);

#endif /* EDGESDK_QUANTIZE_H */
