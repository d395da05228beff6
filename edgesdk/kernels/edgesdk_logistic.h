/*
 * edgesdk_logistic.h - int8 LOGISTIC and TANH in gemmlowp fixed point, as TFLite Micro computes them
 * (reference_integer_ops::Logistic / Tanh). LiteRT's reference kernels use a table instead
 * (edgesdk_lut.h); the compiler picks per rounding mode (docs/rounding.md).
 *
 * The input is rescaled to Q4.27, the function evaluated in Q0.31, the result shifted to the int8
 * output: logistic to scale 1/256 zero point -128, tanh to scale 1/128 zero point 0 (TFLite Micro
 * assumes these output quantizations).
 */
#ifndef EDGESDK_LOGISTIC_H
#define EDGESDK_LOGISTIC_H

#include <stdint.h>

typedef struct {
    int32_t size;
    int32_t input_zero_point;
    int32_t input_range_radius; /* |x - zp| at or beyond this saturates the output */
    int32_t input_multiplier;   /* input_scale * 2^27 as multiplier ... */
    int32_t input_left_shift;   /* ... and left shift */
    int32_t rounding;           /* EDGESDK_ROUNDING_DOUBLE or _SINGLE */
} edgesdk_sigmoid_params;

void edgesdk_logistic_s8(const edgesdk_sigmoid_params *p, const int8_t *input, int8_t *output);
void edgesdk_tanh_s8(const edgesdk_sigmoid_params *p, const int8_t *input, int8_t *output);

/*
 * int16 LOGISTIC and TANH (edgesdk_sigmoid16.c), the same in LiteRT and TFLite Micro
 * (reference_integer_ops::Logistic / Tanh for int16): the input, zero point 0, is rescaled to 1/(3 * 4096)
 * units (x * multiplier, rounded, >> left_shift; multiplier 0 means a power-of-two input scale: 3 << shift),
 * then sigmoid(|x| / 24) is interpolated in a 256-entry Q0.16 table; the output has scale 2^-15, zero point 0.
 */
typedef struct {
    int32_t size;
    int32_t input_multiplier; /* 0: power-of-two input scale */
    int32_t input_left_shift;
} edgesdk_sigmoid16_params;

void edgesdk_logistic_s16(const edgesdk_sigmoid16_params *p, const int16_t *input, int16_t *output);
void edgesdk_tanh_s16(const edgesdk_sigmoid16_params *p, const int16_t *input, int16_t *output);

#endif /* EDGESDK_LOGISTIC_H */
