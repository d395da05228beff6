/*
 * edgesdk_hard_swish.h - int8 HARD_SWISH, TFLite reference semantics (reference_ops::HardSwish, 16-bit
 * fixed point: x * relu6(x + 3) / 6).
 */
#ifndef EDGESDK_HARD_SWISH_H
#define EDGESDK_HARD_SWISH_H

#include <stdint.h>

typedef struct {
    int32_t size;
    int32_t input_zero_point;
    int32_t output_zero_point;
    int32_t output_multiplier_fixedpoint_int16; /* Q15 */
    int32_t output_multiplier_exponent;         /* <= 0 */
    int32_t reluish_multiplier_fixedpoint_int16; /* Q15 */
    int32_t reluish_multiplier_exponent;
} edgesdk_hard_swish_params;

void edgesdk_hard_swish_s8(const edgesdk_hard_swish_params *p, const int8_t *input, int8_t *output);

#endif /* EDGESDK_HARD_SWISH_H */
