/*
 * edgesdk_l2_normalization.h - L2_NORMALIZATION over the last axis, TFLite reference semantics.
 *
 * int8 (reference_integer_ops::L2Normalization): per row the sum of squares of (x - zp) in int32, its inverse
 * square root as a multiplier and shift (GetInvSqrtQuantizedMultiplierExp: Newton-Raphson in gemmlowp fixed
 * point), then each (x - zp) requantized into the output's 1/128 scale, clamped to int8.
 * float32 (reference_ops::L2Normalization): x / max(sqrtf(sum of x*x), 1e-6f), summed in order from 0.0f.
 */
#ifndef EDGESDK_L2_NORMALIZATION_H
#define EDGESDK_L2_NORMALIZATION_H

#include <stdint.h>

typedef struct {
    int32_t rows;  /* product of all dims but the last */
    int32_t depth; /* last dim */
    int32_t input_zero_point;
    int32_t rounding; /* EDGESDK_ROUNDING_*: MultiplyByQuantizedMultiplier */
} edgesdk_l2_normalization_params;

void edgesdk_l2_normalization_s8(const edgesdk_l2_normalization_params *p, const int8_t *input, int8_t *output);
void edgesdk_l2_normalization_f32(const edgesdk_l2_normalization_params *p, const float *input, float *output);

#endif /* EDGESDK_L2_NORMALIZATION_H */
