/*
 * edgesdk_relu.h - RELU, RELU6, RELU_N1_TO_1 (and RELU_0_TO_1), TFLite reference semantics.
 *
 * int8 and int16 (ReluX): requantize from the input to the output scale, then clamp to the activation's
 * range. float32: clamp to [lo, hi] (no upper bound for RELU), NaN passes through quieted.
 */
#ifndef EDGESDK_RELU_H
#define EDGESDK_RELU_H

#include <stdint.h>

typedef struct {
    int32_t size;
    int32_t input_zero_point;
    int32_t output_zero_point;
    int32_t multiplier, shift; /* input_scale / output_scale */
    int32_t act_min, act_max;  /* the activation's range in output units */
    int32_t rounding;          /* EDGESDK_ROUNDING_DOUBLE or _SINGLE */
} edgesdk_relu_params;

typedef struct {
    int32_t size;
    float lo, hi;
    int32_t has_hi; /* 0: RELU, no upper bound */
} edgesdk_relu_f32_params;

void edgesdk_relu_s8(const edgesdk_relu_params *p, const int8_t *input, int8_t *output);
void edgesdk_relu_s16(const edgesdk_relu_params *p, const int16_t *input, int16_t *output);
void edgesdk_relu_f32(const edgesdk_relu_f32_params *p, const float *input, float *output);

#endif /* EDGESDK_RELU_H */
