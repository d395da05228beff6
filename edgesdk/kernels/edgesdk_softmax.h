/*
 * edgesdk_softmax.h - SOFTMAX over the last axis, TFLite reference semantics (LiteRT BUILTIN_REF and TFLite
 * Micro run the same kernels):
 *   int8 (output scale 1/256, zero point -128): reference_ops::Softmax's gemmlowp fixed-point exp and
 *     reciprocal. Also serves uint8 models after legalization: the uint8 kernel computes the same values.
 *   int16 (output scale 1/32768, zero points 0): reference_ops::SoftmaxInt16, exp and 1/(1 + x) from two
 *     513-entry tables with linear interpolation (the compiler builds them as the chosen reference does).
 *   float32: reference_ops::Softmax, expf((x - max) * beta) / sum in float, with the references' expf
 *     (edgesdk_reduce_libm.h).
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

typedef struct {
    int32_t rows;
    int32_t depth;
    int32_t input_multiplier; /* input_scale * beta * 65535 / 10 as a multiplier ... */
    int32_t input_shift;      /* ... and its shift (MultiplyByQuantizedMultiplier) */
    const int16_t *exp_table;        /* [513]: exp(x) on [-10, 0] in Q0.15 */
    const int16_t *reciprocal_table; /* [513]: 1 / (1 + x) on [0, 1] in Q0.15 */
    int32_t rounding;
} edgesdk_softmax16_params;

typedef struct {
    int32_t rows;
    int32_t depth;
    float beta;
} edgesdk_softmax_f32_params;

void edgesdk_softmax_s16(const edgesdk_softmax16_params *p, const int16_t *input, int16_t *output);
void edgesdk_softmax_f32(const edgesdk_softmax_f32_params *p, const float *input, float *output);
void edgesdk_softmax_s8(const edgesdk_softmax_params *p, const int8_t *input, int8_t *output);

#endif /* EDGESDK_SOFTMAX_H */
