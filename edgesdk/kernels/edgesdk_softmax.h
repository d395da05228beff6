/*
 * edgesdk_softmax.h - int8 SOFTMAX (output scale 1/256, zero point -128), TFLite reference semantics:
 * reference_ops::Softmax's gemmlowp fixed-point exp and reciprocal (LiteRT BUILTIN_REF and TFLite Micro
 * both run it). Also serves uint8 models after legalization: the uint8 kernel computes the same values.
 */
#ifndef EDGESDK_SOFTMAX_H
#define EDGESDK_SOFTMAX_H

#include <stdint.h>

typedef struct {
    int32_t rows;  /* product of all dims but the last */
    int32_t depth; /* last dim */
    int32_t input_multiplier; /* beta * input_scale * 2^26, as a Q31 multiplier ... */
    int32_t input_left_shift; /* ... and its left shift (PreprocessSoftmaxScaling) */
    int32_t diff_min;         /* differences below this give exp() = 0 */
    int32_t rounding;         /* EDGESDK_ROUNDING_*: MultiplyByQuantizedMultiplierGreaterThanOne */
} edgesdk_softmax_params;

void edgesdk_softmax_s8(const edgesdk_softmax_params *p, const int8_t *input, int8_t *output);

#endif /* EDGESDK_SOFTMAX_H */
