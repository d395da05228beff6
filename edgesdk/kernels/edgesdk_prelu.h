/*
 * edgesdk_prelu.h - PRELU with alpha broadcast to the input, TFLite reference semantics
 * (reference_ops::BroadcastPrelu4DSlow / Prelu): x - zp >= 0 requantizes (x - zp) by s_x / s_y, else
 * (x - zp) * (alpha - zp_alpha) by s_x s_alpha / s_y. int8 and int16 inputs, int8 alpha; float32.
 */
#ifndef EDGESDK_PRELU_H
#define EDGESDK_PRELU_H

#include <stdint.h>

#include "edgesdk_elementwise.h"

typedef struct {
    edgesdk_broadcast_shape shape; /* input 1: the input, input 2: alpha */
    int32_t input_offset, alpha_offset; /* -zero points */
    int32_t output_offset;
    int32_t output_multiplier_1, output_shift_1; /* s_x / s_y */
    int32_t output_multiplier_2, output_shift_2; /* s_x * s_alpha / s_y */
    int32_t act_min, act_max;                    /* the output type's range */
    int32_t rounding;                            /* EDGESDK_ROUNDING_DOUBLE or _SINGLE */
} edgesdk_prelu_params;

void edgesdk_prelu_s8(const edgesdk_prelu_params *p, const int8_t *input, const int8_t *alpha, int8_t *output);
void edgesdk_prelu_s16(const edgesdk_prelu_params *p, const int16_t *input, const int8_t *alpha, int16_t *output);
void edgesdk_prelu_f32(const edgesdk_binary_params *p, const float *input, const float *alpha, float *output);

#endif /* EDGESDK_PRELU_H */
