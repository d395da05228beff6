/*
 * edgesdk_relu.h - int8 RELU, RELU6, RELU_N1_TO_1 (and RELU_0_TO_1), TFLite reference semantics
 * (ReluX): requantize from the input to the output scale, then clamp to the activation's range.
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

void edgesdk_relu_s8(const edgesdk_relu_params *p, const int8_t *input, int8_t *output);

#endif /* EDGESDK_RELU_H */
