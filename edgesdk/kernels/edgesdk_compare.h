/*
 * edgesdk_compare.h - EQUAL, NOT_EQUAL, LESS, LESS_EQUAL, GREATER, GREATER_EQUAL with broadcasting, to a bool
 * tensor (one byte, 0 or 1), TFLite reference semantics (reference_ops::ComparisonImpl / ComparisonWithScaling /
 * BroadcastComparison4DSlow...). Quantized int8 inputs, and int16 ones for EQUAL and NOT_EQUAL, are compared in
 * real units: each input's ((x - zp) << left_shift) rescaled by its own scale (a multiplier below 1). LiteRT's
 * LESS, LESS_EQUAL, GREATER and GREATER_EQUAL compare int16 inputs as stored, whatever their quantization
 * (`_s16_stored`); float32, int32 and bool inputs compare as stored.
 */
#ifndef EDGESDK_COMPARE_H
#define EDGESDK_COMPARE_H

#include <stdint.h>

#include "edgesdk_elementwise.h"

typedef struct {
    edgesdk_broadcast_shape shape;
    int32_t input1_offset, input2_offset; /* -zero points */
    int32_t left_shift;                   /* 8 */
    int32_t input1_multiplier, input1_shift; /* the input scales; shifts <= 0 */
    int32_t input2_multiplier, input2_shift;
    int32_t rounding; /* EDGESDK_ROUNDING_DOUBLE or _SINGLE */
} edgesdk_compare_params;

#define EDGESDK_DECLARE_COMPARISON(op)                                                                          \
    void edgesdk_##op##_s8(const edgesdk_compare_params *p, const int8_t *input1, const int8_t *input2,        \
                           uint8_t *output);                                                                    \
    void edgesdk_##op##_s16(const edgesdk_compare_params *p, const int16_t *input1, const int16_t *input2,     \
                            uint8_t *output);                                                                   \
    void edgesdk_##op##_s16_stored(const edgesdk_binary_params *p, const int16_t *input1, const int16_t *input2, \
                                   uint8_t *output);                                                            \
    void edgesdk_##op##_i32(const edgesdk_binary_params *p, const int32_t *input1, const int32_t *input2,      \
                            uint8_t *output);                                                                   \
    void edgesdk_##op##_f32(const edgesdk_binary_params *p, const float *input1, const float *input2,          \
                            uint8_t *output);

EDGESDK_DECLARE_COMPARISON(equal)
EDGESDK_DECLARE_COMPARISON(not_equal)
EDGESDK_DECLARE_COMPARISON(less)
EDGESDK_DECLARE_COMPARISON(less_equal)
EDGESDK_DECLARE_COMPARISON(greater)
EDGESDK_DECLARE_COMPARISON(greater_equal)

/* bool inputs: EQUAL and NOT_EQUAL only (as TFLite). */
void edgesdk_equal_b(const edgesdk_binary_params *p, const uint8_t *input1, const uint8_t *input2, uint8_t *output);
void edgesdk_not_equal_b(const edgesdk_binary_params *p, const uint8_t *input1, const uint8_t *input2,
                         uint8_t *output);

#undef EDGESDK_DECLARE_COMPARISON

#endif /* EDGESDK_COMPARE_H */
